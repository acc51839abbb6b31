"""TFLM's flash for a ``.tflite`` on a Cortex-M core, and its RAM outside the tensor arena.

The image TFLM's own Makefile build links for one model (``TARGET=cortex_m_generic
OPTIMIZED_KERNEL_DIR=cmsis_nn BUILD_TYPE=release``, TFLM 90b983c2 + CMSIS-NN 4ab83cc3, -Os core,
-O2 kernels and CMSIS-NN, ``--gc-sections``; an application holding a MicroMutableOpResolver with
exactly the model's ops, a MicroInterpreter, AllocateTensors and Invoke) is predicted from the
model's op set alone, with the per-op data of ``tflm_flash.json`` (refsim/lab/tflm/flash_probe.py):

- **model**: the ``.tflite`` bytes, linked as one array aligned to 16 bytes;
- per core, the **base** image (no op: the interpreter core, the application, startup, libc)
  and per builtin op the sections its firmware holds beyond it; the model's image is the base
  plus the union of its ops' sections (a section two ops reach, a shared kernel source or a
  CMSIS-NN function, is counted once; a base section an op grows, such as ``main``, grows by each
  op's growth). The parts: **interpreter** (TFLM's core objects: its flatbuffer parsing of each
  op's options included), **kernels** per TFLM kernel source, **CMSIS-NN** per function, **other**
  (newlib, libgcc, libm, startup, semihosting, the application's main).

Held against TFLM's firmwares measured per model and core (tflm_measured.json, refsim/lab/tflm/
measure.py): within 2% of the linked ELF (tests/memory/test_tflm_flash.py; docs/memory.md has the
table). :func:`tflm_runtime_ram` is the RAM outside the arena: sizeof(MicroInterpreter), sizeof
the resolver, and the runtime's own .data/.bss, measured.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from refsim.errors import RefsimError, UnsupportedError

DATA = Path(__file__).with_name("tflm_flash.json")
MEASURED = Path(__file__).with_name("tflm_measured.json")
#: The model array's alignment (the firmware's ``.p2align 4``; TFLM needs a 16-byte-aligned model
#: when its buffers are read in place).
MODEL_ALIGN = 16


class TflmFlashError(RefsimError):
    """The flash data file is missing or lacks what a prediction needs."""


@functools.cache
def _data(path: Path = DATA) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise TflmFlashError(f"TFLM flash: cannot read {path}: {exc}") from exc


@functools.cache
def _measured(path: Path = MEASURED) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise TflmFlashError(f"TFLM flash: cannot read {path}: {exc}") from exc


def cores() -> tuple[str, ...]:
    return tuple(_data()["cores"])


def _key(origin: str, section: str) -> tuple[str, str]:
    """A C++ COMDAT (an inline or template function, mangled outside an anonymous namespace) is
    linked once whichever object emits it; every other section is its object's own."""
    if "_Z" in section and "_GLOBAL__N_" not in section:
        return ("", section)
    return (origin, section)


def predict_sections(ops: list[str], cpu: str) -> dict[tuple[str, str], tuple[str, int]]:
    """``(origin, section) -> (component, bytes)`` of the image holding ``ops`` on ``cpu``."""
    data = _data()
    if cpu not in data["cores"]:
        raise UnsupportedError(
            f"TFLM flash: no data for --cpu {cpu}; measured for {', '.join(data['cores'])} "
            "(refsim/lab/tflm/flash_probe.py)"
        )
    entry = data["cores"][cpu]
    missing = [op for op in ops if op not in entry["ops"]]
    if missing:
        raise UnsupportedError(
            f"TFLM flash: op {', '.join(missing)} not probed on {cpu} "
            "(refsim/lab/tflm/flash_probe.py; build.py OP_SOURCES lists its kernel sources)"
        )
    out: dict[tuple[str, str], tuple[str, int]] = {}
    base: dict[tuple[str, str], int] = {}
    for component, origin, section, size in entry["base"]:
        key = _key(origin, section)
        base[key] = size
        out[key] = (component, size)
    for op in ops:
        for component, origin, section, size in entry["ops"][op]:
            key = _key(origin, section)
            if key in base:  # a base section the op grows (main: the resolver's Add call inlined)
                have = out[key]
                out[key] = (have[0], have[1] + size - base[key])
            elif key not in out or out[key][1] < size:
                out[key] = (component, size)
    return out


def model_ops(model_file: Path) -> list[str]:
    """The builtin ops of the model's first subgraph, sorted; a custom op is an error naming it."""
    from refsim.tflite import load_model

    mf = load_model(model_file)
    names = set()
    for k, op in enumerate(mf.model.subgraphs[0].operators):
        code = mf.model.opcode(op)
        if code.name == "CUSTOM":
            raise UnsupportedError(
                f"TFLM flash: operator {k} is a custom op; TFLM's flash data holds builtins"
            )
        names.add(code.name)
    return sorted(names)


def _symbol(origin: str, section: str) -> str:
    """A CMSIS-NN section's function (``.text.arm_convolve_s8``), or ``<file>.c (<section>)`` for a
    section named for none (an MVE object's constant pool), as the measured split names them."""
    for prefix in (".text.", ".rodata.", ".data."):
        if section.startswith(prefix):
            return section[len(prefix) :]
    return f"{origin.rsplit('__', 1)[-1].removesuffix('.o')} ({section})"


def predict(model_bytes: int, ops: list[str], cpu: str) -> dict:
    """The parts of the image (bytes): model, interpreter, kernels per source, CMSIS-NN per
    function, other, and the total."""
    sections = predict_sections(ops, cpu)
    parts: dict = {"model": model_bytes, "interpreter": 0, "kernels": {}, "cmsis_nn": {}, "other": 0}
    for (origin, section), (component, size) in sections.items():
        if component == "interpreter":
            parts["interpreter"] += size
        elif component.startswith("kernel:"):
            name = component.removeprefix("kernel:")
            parts["kernels"][name] = parts["kernels"].get(name, 0) + size
        elif component == "cmsis_nn":
            fn = _symbol(origin, section)
            parts["cmsis_nn"][fn] = parts["cmsis_nn"].get(fn, 0) + size
        else:
            parts["other"] += size
    parts["kernels"] = dict(sorted(parts["kernels"].items()))
    parts["cmsis_nn"] = dict(sorted(parts["cmsis_nn"].items()))
    parts["total"] = (
        model_bytes
        + parts["interpreter"]
        + sum(parts["kernels"].values())
        + sum(parts["cmsis_nn"].values())
        + parts["other"]
    )
    return parts


def _basis() -> str:
    p = _data()["provenance"]
    tflm, cmsis = (p["sources"].get(k, "? ?").split(" ") for k in ("tflm", "cmsis_nn"))
    return f"TFLM {tflm[1][:8]} + CMSIS-NN {cmsis[1][:8]}, gcc {p['compiler'].split(' ')[-2]}"


def tflm_flash_report(model_file: Path | str, cpu: str) -> dict:
    """TFLM's flash for ``model_file`` on ``cpu``: ``lines`` (``name``, ``bytes``, ``source``,
    ``part_of``) and ``flash_bytes``."""
    path = Path(model_file)
    ops = model_ops(path)
    parts = predict(path.stat().st_size, ops, cpu)
    src = f"tflm_flash.json ({_basis()}, TFLM Makefile release flags, --gc-sections)"
    lines = [
        {
            "name": "model (.tflite)",
            "bytes": parts["model"],
            "source": f"file size; linked as one array aligned to {MODEL_ALIGN} B and read in place",
            "part_of": None,
        },
        {
            "name": "TFLM interpreter core",
            "bytes": parts["interpreter"],
            "source": f"{src}: MicroInterpreter, allocator, planner, flatbuffer parsing of the ops' options (-Os)",
            "part_of": None,
        },
        {
            "name": "TFLM kernels",
            "bytes": sum(parts["kernels"].values()),
            "source": f"{src}: the kernel sources of {', '.join(ops)} (-O2), shared code once",
            "part_of": None,
        },
    ]
    lines += [
        {
            "name": f"kernels/{k}",
            "bytes": v,
            "source": "its sections in the op probes",
            "part_of": "TFLM kernels",
        }
        for k, v in parts["kernels"].items()
    ]
    lines.append(
        {
            "name": "CMSIS-NN",
            "bytes": sum(parts["cmsis_nn"].values()),
            "source": f"{src}: {len(parts['cmsis_nn'])} functions the default registrations reach (-O2; int8, "
            "int16 and int4 paths of each op)",
            "part_of": None,
        }
    )
    lines += [
        {"name": fn, "bytes": v, "source": "linked size (map)", "part_of": "CMSIS-NN"}
        for fn, v in sorted(parts["cmsis_nn"].items(), key=lambda kv: -kv[1])
    ]
    lines.append(
        {
            "name": "other (libc, libgcc, libm, startup, main)",
            "bytes": parts["other"],
            "source": f"{src}: newlib/libgcc members reached, the boards' startup and semihosting, the application",
            "part_of": None,
        }
    )
    return {
        "cpu": cpu,
        "ops": ops,
        "lines": lines,
        "flash_bytes": parts["total"],
        "note": "the sum of the linked sections; the ELF adds under 100 B of alignment padding",
    }


def _op_count(kernels: dict) -> int:
    """The ops of a measured firmware (its kernel keys: op names, "A+B" for a shared source)."""
    return sum(len(k.split("+")) for k in kernels if k != "shared")


def tflm_runtime_ram(cpu: str, ops: list[str] | None = None) -> dict:
    """RAM outside the arena on ``cpu``: sizeof(MicroInterpreter), sizeof the resolver of
    ``len(ops)`` slots (a line fitted through the measured op counts: fixed + per slot), the
    runtime's .data (the predicted image's .data sections for ``ops``, else the largest
    measured) and .bss beside the arena (measured: a firmware's .bss minus its static arena)."""
    flash = _measured()["flash"]
    entries = [e[cpu] for e in flash.values() if cpu in e]
    if not entries:
        raise UnsupportedError(f"TFLM RAM: no measured firmware for --cpu {cpu} (tflm_measured.json)")
    interp = {e["objects_outside_arena"]["MicroInterpreter"] for e in entries}
    if len(interp) != 1:
        raise TflmFlashError(
            f"TFLM RAM: sizeof(MicroInterpreter) differs between firmwares on {cpu}: {interp}"
        )
    points = {
        _op_count(e["parts"]["kernels"]): e["objects_outside_arena"]["MicroMutableOpResolver"]
        for e in entries
    }
    if len(points) < 2:
        raise TflmFlashError(f"TFLM RAM: the resolver's sizeof is measured at one op count only on {cpu}")
    (n1, s1), (n2, s2) = sorted(points.items())[0], sorted(points.items())[-1]
    per_op, fixed = (s2 - s1) // (n2 - n1), s1 - (s2 - s1) // (n2 - n1) * n1
    n = len(ops) if ops is not None else max(points)
    if ops is not None:
        data_bytes = sum(
            size for (_, sec), (_, size) in predict_sections(ops, cpu).items() if sec.startswith(".data")
        )
        data_src = f"the predicted image's .data sections ({_data_file_name()})"
    else:
        data_bytes = max(e["sections"]["data"] for e in entries)
        data_src = "the largest measured firmware's .data (tflm_measured.json)"
    bss = {e["sections"]["bss"] - e["arena_bytes"] for e in entries}
    lines = [
        {"name": "MicroInterpreter", "bytes": interp.pop(),
         "source": "sizeof, compiled with TFLM's flags (tflm_measured.json objects_outside_arena)"},
        {"name": f"MicroMutableOpResolver<{n}>", "bytes": fixed + per_op * n,
         "source": f"sizeof = {fixed} + {per_op} per op slot (measured at {', '.join(map(str, sorted(points)))} ops)"},
        {"name": "runtime .data", "bytes": data_bytes, "source": data_src + "; also in flash (its load image)"},
        {"name": "runtime .bss (arena excluded)", "bytes": max(bss),
         "source": "the measured firmwares' .bss minus the static arena (tflm_measured.json)"},
    ]  # fmt: skip
    return {"cpu": cpu, "lines": lines, "ram_bytes": sum(ln["bytes"] for ln in lines)}


def _data_file_name() -> str:
    return DATA.name
