"""TFLM's arena, outputs, flash and per-op Invoke counts on a 32-bit Cortex-M core, measured on the
real TensorFlow Lite Micro + CMSIS-NN (refsim/lab/tflm/build.py) under QEMU.

    REFSIM_TFLM_REPO=/work/ext/tflite-micro CMSIS_NN_DIR=/work/ext/cmsis-nn-tflm \\
    TFLM_DOWNLOADS_DIR=/work/ext/tflm-downloads \\
        python -m refsim.lab.tflm.measure --out refsim/memory/tflm_measured.json \\
            --fixtures tests/fixtures/tflite/tflm_qemu

Per core, one image (``harness/measure.cpp``) holds every model and its input and runs in one
QEMU start: ``arena_used_bytes()`` after AllocateTensors on a generous arena
(:data:`GENEROUS_ARENA` bytes), the outputs for the input, the smallest arena AllocateTensors
accepts (bisection over byte counts), and Invoke at that size giving the same outputs. The arena
buffer starts 16-byte aligned (TFLM aligns the start up to MicroArenaBufferAlignment() = 16 and
loses the bytes before it; an aligned start loses none).

Per model and core, a firmware (``harness/app.cpp``) with a MicroMutableOpResolver holding
exactly the model's ops, the model in flash and a static arena of the measured minimum, linked
``-ffunction-sections -fdata-sections -Wl,--gc-sections``; its linker map's kept input sections
give ``sections`` (text: .text* and the vector table; rodata: .rodata* and .ARM.*; data; bss
with COMMON) and ``parts`` (flash = text + rodata + data), each section counted by the object it
comes from: ``model`` (the .tflite array), ``interpreter`` (TFLM's core objects and TFLite's
shared sources: the flatbuffer parsing of every op's options included), ``kernels`` per op (the
op's TFLM kernel sources; ``shared`` the kernel helpers kernel_util.cc / micro_tensor_utils.cc),
``cmsis_nn`` per function (the section's symbol; "<file>.c (.rodata)" for a section named
for none), ``other`` (newlib, libgcc, libstdc++, the
application, startup and semihosting). A function inlined from a header and emitted by several
objects (a COMDAT section) counts in the one the linker kept: the first in link order (the
application, the interpreter core, the kernels, CMSIS-NN). ``elf_flash_bytes`` is the ELF's
flash as ``arm-none-eabi-size`` reports it (alignment padding included);
``objects_outside_arena`` the sizeof of the MicroInterpreter and the resolver.

With ``--invoke``: per core an image whose ops' invoke functions are wrapped in counting-window
moves (measure.cpp, RS_TFLM_WINDOWS), timed by refsim.qemu.timing.time_elf: per model and op
the instructions (and instruction-timed cycles) of the op's own invoke and of TFLM's work
around it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from refsim.lab.build import LabError, Objects, link_probe, map_sections, mkdir, run, tool
from refsim.lab.tflm import build as tb

HARNESS = Path(__file__).with_name("harness")
#: The MLPerf Tiny reference models (tests/fixtures/tflite/).
MODELS: tuple[str, ...] = (
    "kws_ref_model.tflite",
    "vww_96_int8.tflite",
    "pretrainedResnet_quant.tflite",
    "ad01_int8.tflite",
)
#: The lab's memory cores (arena, outputs, flash); the M33 was added after the first run
#: (provenance.later_runs). The M85 runs the M55's build, the M7 has invoke counts only.
CORES: tuple[str, ...] = ("cortex-m3", "cortex-m4", "cortex-m55", "cortex-m33")
#: The generous arena (bytes, a multiple of 16) for ``arena_used_bytes()``; the bisection's upper end.
GENEROUS_ARENA = 1 << 20
#: numpy's default_rng seed of every model's input (uniform int8 over [-128, 127]).
SEED = 15
_LINE = re.compile(r"^rs-tflm (\d+) (\S+) (.*)$")


class TflmMeasureError(LabError):
    """A measurement run failed (names the core, model and step)."""


# --- models and generated sources --------------------------------------------------------------


def model_ops(path: Path) -> list[str]:
    """The builtin op names of ``path``'s first subgraph, sorted (refsim's .tflite reader)."""
    from refsim.tflite import load_model

    mf = load_model(path)
    return sorted({mf.model.opcode(op).name for op in mf.model.subgraphs[0].operators})


def model_input(path: Path, seed: int = SEED) -> np.ndarray:
    """The fixed input of ``path``: int8 uniform over [-128, 127] of the input tensor's shape."""
    from refsim.tflite import load_model
    from refsim.tflite.schema import TensorType

    mf = load_model(path)
    graph = mf.model.subgraphs[0]
    if len(graph.inputs) != 1:
        raise TflmMeasureError(f"TFLM lab: {path.name} has {len(graph.inputs)} inputs, the harness feeds one")
    tensor = graph.tensors[graph.inputs[0]]
    if tensor.type != TensorType.INT8:
        raise TflmMeasureError(f"TFLM lab: {path.name}'s input is {tensor.type.name}, the harness feeds int8")
    rng = np.random.default_rng(seed)
    return rng.integers(-128, 128, size=tuple(tensor.shape), dtype=np.int8)


def ops_header(ops: Sequence[str]) -> str:
    """ops.h: RS_TFLM_OP_COUNT and RS_TFLM_ADD_OPS(resolver) adding exactly ``ops`` (with
    RS_TFLM_WINDOWS, each registration's invoke wrapped by measure.cpp's rs_wrap<K>)."""
    plain = " ".join(f"(r).{tb.RESOLVER_METHODS[op]}();" for op in ops)
    wrapped = " ".join(
        f"(r).{tb.RESOLVER_METHODS[op]}(rs_wrap<{k}>(tflite::Register_{op}()));" for k, op in enumerate(ops)
    )
    return (
        "// Generated by refsim/lab/tflm/measure.py: do not edit.\n#pragma once\n"
        f"#define RS_TFLM_OP_COUNT {len(ops)}\n"
        "#ifdef RS_TFLM_WINDOWS\n"
        f"#define RS_TFLM_ADD_OPS(r) do {{ {wrapped} }} while (0)\n"
        "#else\n"
        f"#define RS_TFLM_ADD_OPS(r) do {{ {plain} }} while (0)\n"
        "#endif\n"
    )


def blobs_source(models: Sequence[Path], inputs: Sequence[Path]) -> str:
    """blobs.S of the measurement image: models and inputs in the bulk region (section
    .rs_programs), the table ``rs_models`` / ``rs_model_count`` and ``rs_blobs_end``."""
    out = ['    .section .rs_programs, "a"\n']
    for k, (model, data) in enumerate(zip(models, inputs, strict=True)):
        out.append(f'    .p2align 4\nrs_m{k}:\n    .incbin "{model}"\nrs_m{k}_end:\n')
        out.append(f'    .p2align 4\nrs_i{k}:\n    .incbin "{data}"\nrs_i{k}_end:\n')
    out.append("    .p2align 4\n    .global rs_blobs_end\nrs_blobs_end:\n")
    out.append('    .section .rodata.rs_models, "a"\n    .p2align 2\n    .global rs_models\nrs_models:\n')
    for k in range(len(models)):
        out.append(f"    .word rs_m{k}, rs_m{k}_end - rs_m{k}, rs_i{k}, rs_i{k}_end - rs_i{k}\n")
    out.append(f"    .global rs_model_count\nrs_model_count:\n    .word {len(models)}\n")
    return "".join(out)


def model_blob_source(model: Path) -> str:
    """model.S of a flash firmware: the .tflite as ``rs_model`` in flash (.rodata.rs_model)."""
    return (
        f'    .section {MODEL_SECTION}, "a"\n    .p2align 4\n    .global rs_model\n'
        f'rs_model:\n    .incbin "{model}"\n'
    )


# --- the measurement image ----------------------------------------------------------------------


def _union_ops(models: Sequence[Path]) -> list[str]:
    return sorted({op for m in models for op in model_ops(m)})


def build_measure_image(
    core: str, sources: tb.Sources, models: Sequence[Path], build: Path, *, windows: bool = False
) -> tuple[Path, list[str]]:
    """The measurement ELF of ``core`` over ``models`` and the ops its resolver holds."""
    ops = _union_ops(models)
    objs = tb.tflm_objects(core, sources, build, ops)
    work = mkdir(build / f"{'invoke' if windows else 'measure'}-{core}")
    inputs = []
    for k, model in enumerate(models):
        data = work / f"input{k}.bin"
        data.write_bytes(model_input(model).tobytes())
        inputs.append(data)
    (work / "ops.h").write_text(ops_header(ops))
    (work / "blobs.S").write_text(blobs_source([m.resolve() for m in models], inputs))
    defines = [f"-DRS_GENEROUS_ARENA={GENEROUS_ARENA}u", *(["-DRS_TFLM_WINDOWS"] if windows else [])]
    objects = objs.with_includes(f"-I{work}", *defines)
    elf = link_probe(objects, work, [HARNESS / "measure.cpp", work / "blobs.S"], bulk_section=".rs_programs")
    _check_no_constructors(work / "probe.map")
    return elf, ops


def _check_no_constructors(map_file: Path) -> None:
    """The boards' linker script discards .init_array: no linked object may need a constructor."""
    text = map_file.read_text()
    found = re.findall(r"^ \.init_array\S*\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S+)", text, flags=re.M)
    needed = [origin for size, origin in found if int(size, 16) > 0]
    if needed:
        raise TflmMeasureError(f"TFLM lab: static constructors would be discarded: {needed[:5]}")


def run_image(core: str, elf: Path, timeout: float = 600.0) -> tuple[int, str]:
    """QEMU's exit status and the guest's console (semihosting) for ``elf`` on ``core``'s board."""
    from refsim.qemu.cores import get_core
    from refsim.qemu.run import qemu_command

    with tempfile.TemporaryDirectory(prefix="refsim-tflm-") as tmp:
        try:
            done = subprocess.run(
                qemu_command(get_core(core), elf, ""),
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise TflmMeasureError(
                f"TFLM lab on {core}: {elf.name} did not finish within {timeout} s"
            ) from None
    return done.returncode, done.stderr


def parse_console(console: str, count: int) -> list[dict]:
    """Per model index the harness's lines: used, min, min-invoke, outputs (bytes)."""
    out: list[dict] = [{"outputs": {}} for _ in range(count)]
    for line in console.splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        k, what, rest = int(m.group(1)), m.group(2), m.group(3)
        if what == "out":
            index, hexed = rest.split(" ", 1) if " " in rest else (rest, "")
            out[k]["outputs"][int(index)] = bytes.fromhex(hexed)
        else:
            out[k][what] = int(rest)
    return out


def measure_core(core: str, sources: tb.Sources, models: Sequence[Path], build: Path) -> list[dict]:
    """Per model: arena_used_bytes, arena_min_bytes, outputs (int8 arrays), min_invoke_same."""
    elf, _ = build_measure_image(core, sources, models, build)
    status, console = run_image(core, elf)
    results = parse_console(console, len(models))
    if status != 0:
        failed = [(models[k].name, r["fail"]) for k, r in enumerate(results) if "fail" in r]
        raise TflmMeasureError(
            f"TFLM lab on {core}: harness exit {status}, failed {failed}: {console[-500:]}"
        )
    out = []
    for model, r in zip(models, results, strict=True):
        if not {"used", "min", "min-invoke"} <= r.keys():
            raise TflmMeasureError(f"TFLM lab on {core}: {model.name} incomplete: {console[-500:]}")
        outputs = [np.frombuffer(r["outputs"][i], dtype=np.int8) for i in sorted(r["outputs"])]
        out.append(
            {
                "arena_used_bytes": r["used"],
                "arena_min_bytes": r["min"],
                "min_invoke_same": bool(r["min-invoke"]),
                "outputs": outputs,
            }
        )
    return out


# --- flash ---------------------------------------------------------------------------------------

_KIND = (
    ("text", (".text", ".vectors")),
    ("rodata", (".rodata", ".ARM.exidx", ".ARM.extab")),
    ("data", (".data",)),
    ("bss", (".bss", "COMMON")),
)


def _kind(name: str) -> str:
    for kind, prefixes in _KIND:
        if name.startswith(prefixes):
            return kind
    raise TflmMeasureError(f"TFLM lab: unexpected section {name}")


def _symbol(section: str) -> str:
    """The function or object a -ffunction-sections/-fdata-sections section is named for."""
    for prefix in (".text.", ".rodata.", ".data.", ".bss."):
        if section.startswith(prefix):
            return section[len(prefix) :]
    return section


#: The section holding the .tflite of a flash firmware (model_blob_source).
MODEL_SECTION = ".rodata.rs_model"


def flash_split(map_file: Path, objs: tb.TflmObjects, ops: Sequence[str]) -> dict:
    """``sections`` and ``parts`` (module docstring) of a firmware from its linker map."""
    by_kernel_object: dict[str, str] = {}
    for obj, unit in zip(objs.kernels, objs.kernel_units, strict=True):
        name = unit.rsplit("/", 1)[-1]
        owners = [op for op in ops if name in tb.OP_SOURCES.get(op, ())]
        by_kernel_object[obj] = "+".join(owners) if owners else "shared"
    core, cmsis = set(objs.core), set(objs.cmsis_nn)
    sections = {kind: 0 for kind, _ in _KIND}
    parts: dict = {"model": 0, "interpreter": 0, "kernels": {}, "cmsis_nn": {}, "other": 0}
    other: dict[str, int] = {}
    prefixes = tuple(p for _, group in _KIND for p in group)
    for s in map_sections(map_file, prefixes):
        kind = _kind(s.name)
        sections[kind] += s.size
        if kind == "bss":
            continue
        if s.name == MODEL_SECTION:
            parts["model"] += s.size
        elif s.origin in core:
            parts["interpreter"] += s.size
        elif s.origin in by_kernel_object:
            op = by_kernel_object[s.origin]
            parts["kernels"][op] = parts["kernels"].get(op, 0) + s.size
        elif s.origin in cmsis:
            fn = _symbol(s.name)
            if fn == s.name:  # a section named for no symbol (an MVE object's constant pool)
                fn = f"{Path(s.origin).name.rsplit('__', 1)[-1].removesuffix('.o')} ({s.name})"
            parts["cmsis_nn"][fn] = parts["cmsis_nn"].get(fn, 0) + s.size
        else:
            parts["other"] += s.size
            where = re.sub(r"\(.*\)$", "", re.sub(r"^.*/", "", s.origin))
            if re.fullmatch(r"cc\w+\.o", where):  # link_probe compiles the application in the link
                where = "application"
            other[where] = other.get(where, 0) + s.size
    parts["kernels"] = dict(sorted(parts["kernels"].items()))
    parts["cmsis_nn"] = dict(sorted(parts["cmsis_nn"].items()))
    return {
        "sections": sections,
        "parts": parts,
        "other_by_origin": dict(sorted(other.items(), key=lambda kv: -kv[1])),
    }


def elf_flash_bytes(elf: Path) -> int:
    """Flash of ``elf``: its allocated sections that are loaded from flash (size -A)."""
    listing = run([tool("arm-none-eabi-size"), "-A", str(elf)], "size -A")
    total = 0
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] in (".text", ".ARM.exidx", ".data"):
            total += int(parts[1])
    return total


def measure_flash(
    core: str, sources: tb.Sources, model: Path, arena_bytes: int, build: Path, ops_all: Sequence[str]
) -> dict:
    """The flash firmware of ``model`` on ``core``: linked, run once (it must exit 0), split
    from its map."""
    ops = model_ops(model)
    objs = tb.tflm_objects(core, sources, build, ops_all)
    work = mkdir(build / f"flash-{core}-{model.stem}")
    (work / "ops.h").write_text(ops_header(ops))
    (work / "model.S").write_text(model_blob_source(model.resolve()))
    arena = (arena_bytes + 15) // 16 * 16
    objects = objs.with_includes(f"-I{work}", f"-DRS_ARENA_BYTES={arena}u")
    elf = link_probe(objects, work, [HARNESS / "app.cpp", work / "model.S"])
    _check_no_constructors(work / "probe.map")
    status, console = run_image(core, elf, timeout=300.0)
    if status != 0:
        raise TflmMeasureError(
            f"TFLM lab on {core}: the flash firmware of {model.name} exits {status}: {console}"
        )
    split = flash_split(work / "probe.map", objs, ops)
    split["objects_outside_arena"] = object_sizes(objects, work)
    split["elf_flash_bytes"] = elf_flash_bytes(elf)
    split["arena_bytes"] = arena
    return split


def object_sizes(objects: Objects, work: Path) -> dict[str, int]:
    """sizeof of the application's TFLM objects outside the arena (app.cpp keeps them on the
    stack; an application may make them static), from an object compiled with the same flags:
    the interpreter and the resolver of ops.h's op count."""
    (work / "sizes.cpp").write_text(
        "// Generated by refsim/lab/tflm/measure.py: do not edit.\n"
        '#include "ops.h"\n#include "tensorflow/lite/micro/micro_interpreter.h"\n'
        '#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"\n'
        "char rs_sizeof_MicroInterpreter[sizeof(tflite::MicroInterpreter)];\n"
        "char rs_sizeof_MicroMutableOpResolver[sizeof(tflite::MicroMutableOpResolver<RS_TFLM_OP_COUNT>)];\n"
    )
    obj = work / "sizes.o"
    run([tool("arm-none-eabi-g++"), *objects.flags, *objects.includes, "-c", str(work / "sizes.cpp"), "-o", str(obj)],
        "compiling sizes.cpp")  # fmt: skip
    out = {}
    for line in run([tool("arm-none-eabi-nm"), "-S", "--defined-only", str(obj)], "nm sizes.o").splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3].startswith("rs_sizeof_"):
            out[parts[3].removeprefix("rs_sizeof_")] = int(parts[1], 16)
    return dict(sorted(out.items()))


# --- per-op Invoke counts ------------------------------------------------------------------------


def measure_invoke(core: str, sources: tb.Sources, models: Sequence[Path], build: Path) -> dict:
    """Per model: per operator (in order) its builtin op, the instructions and instruction-timed
    cycles of its invoke, and of TFLM's own work after it; ``invoke_entry`` the work before op 0."""
    from refsim.qemu.timing import time_elf
    from refsim.tflite import load_model

    elf, _ = build_measure_image(core, sources, models, build, windows=True)
    windows = time_elf(core, elf, timeout=600.0)
    out, at = {}, 0
    for model in models:
        mf = load_model(model)
        names = [mf.model.opcode(op).name for op in mf.model.subgraphs[0].operators]
        runs = windows[at : at + 2 * len(names) + 1]
        at += 2 * len(names) + 1
        if len(runs) != 2 * len(names) + 1:
            raise TflmMeasureError(
                f"TFLM lab on {core}: {len(windows)} counting windows, too few for {model.name}"
            )
        out[model.name] = {
            "invoke_entry": {"instructions": runs[0]["instructions"], "cycles": runs[0]["cycles"]},
            "ops": [
                {
                    "op": name,
                    "instructions": runs[2 * i + 1]["instructions"],
                    "cycles": runs[2 * i + 1]["cycles"],
                    "after_instructions": runs[2 * i + 2]["instructions"],
                    "after_cycles": runs[2 * i + 2]["cycles"],
                }
                for i, name in enumerate(names)
            ],
        }
    if at != len(windows):
        raise TflmMeasureError(f"TFLM lab on {core}: {len(windows)} counting windows, {at} expected")
    return out


# --- all of it -----------------------------------------------------------------------------------


def provenance(sources: tb.Sources, command: str) -> dict:
    from refsim.qemu.toolchain import find_toolchain

    tc = find_toolchain()
    return {
        "sources": sources.revisions(),
        "compiler": tc.gcc_version,
        "qemu": run([str(tc.qemu), "--version"], "qemu --version").splitlines()[0],
        "tflm_build": "TARGET=cortex_m_generic OPTIMIZED_KERNEL_DIR=cmsis_nn BUILD_TYPE=release TOOLCHAIN=gcc "
        "(OPTIMIZE_KERNELS_FOR=KERNELS_OPTIMIZED_FOR_SPEED)",
        "flags": {
            "cxx_common": [*tb.CXX_FLAGS, *tb.COMMON_FLAGS],
            "c_common": [*tb.C_FLAGS, *tb.COMMON_FLAGS],
            "per_core": {
                core: {"target_arch": t.target_arch, "platform": list(t.platform_flags)}
                for core, t in tb.TARGETS.items()
            },
            "optimization": {
                "core (CORE_OPTIMIZATION_LEVEL)": tb.OPT_CORE,
                "kernels (KERNEL_OPTIMIZATION_LEVEL)": tb.OPT_KERNEL,
                "cmsis_nn (THIRD_PARTY_KERNEL_OPTIMIZATION_LEVEL)": tb.OPT_THIRD_PARTY,
            },
            "from": tb.FLAG_SOURCES,
            "left_out": "-DCMSIS_DEVICE_ARM_CORTEX_M_XX_HEADER_FILE (Cortex_DFP device header: micro_time.cc's "
            "cycle counter, compiled out by TF_LITE_STRIP_ERROR_STRINGS), -MD",
            "link": "--specs=nosys.specs -nostartfiles -Wl,--gc-sections, kernels_c's board startup, semihosting "
            "and linker script (refsim/lab/build.py link_probe)",
        },
        "arena": f"16-byte-aligned arena start; arena_used_bytes() after AllocateTensors with {GENEROUS_ARENA} "
        "bytes; arena_min_bytes: the smallest size (bytes) for which AllocateTensors returns kTfLiteOk, by "
        "bisection, Invoke at that size giving the same outputs",
        "invoke": "per model, an image whose ops' invoke functions are wrapped in counting-window moves "
        "(harness/measure.cpp, RS_TFLM_WINDOWS); instructions from QEMU's counting plugin, cycles "
        "instruction-timed by refsim.qemu.timing.time_elf on the core's ideal system (no wait states); an op's "
        "window holds its invoke plus the wrapper's call (about 4 instructions), 'after' TFLM's own loop "
        "(ResetTempAllocations, the next node) up to the next op or Invoke's return; invoke_entry: Invoke's entry "
        "up to op 0",
        "input_seed": f"numpy.random.default_rng({SEED}).integers(-128, 128, input shape, int8) per model",
        "date": datetime.date.today().isoformat(),
        "command": command,
        "method": "refsim/lab/tflm/measure.py (harness/measure.cpp under QEMU; harness/app.cpp linked per model "
        "and split from its map)",
    }


def measure_all(
    sources: tb.Sources,
    models: Sequence[Path],
    build: Path,
    cores: Sequence[str] = CORES,
    *,
    arena: bool = True,
    flash: bool = True,
    invoke: bool = False,
    command: str = "",
) -> tuple[dict, dict]:
    """The data file's content and per model the fixture arrays (input, per core output);
    ``flash`` needs ``arena`` (each firmware's arena is the measured minimum)."""
    ops_all = _union_ops(models)
    data: dict = {"provenance": provenance(sources, command), "arena": {}, "flash": {}}
    fixtures: dict = {m.name: {"input": model_input(m), "seed": np.int64(SEED)} for m in models}
    checks: dict = {}
    if flash and not arena:
        raise TflmMeasureError("TFLM lab: the flash firmware needs the arena measurement")
    for core in cores:
        print(f"[tflm] {core}: measure image", file=sys.stderr, flush=True)
        measured = measure_core(core, sources, models, build) if arena else []
        for model, r in zip(models, measured, strict=False):
            data["arena"].setdefault(model.name, {})[core] = {
                "arena_used_bytes": r["arena_used_bytes"],
                "arena_min_bytes": r["arena_min_bytes"],
            }
            checks.setdefault(model.name, {})[core] = {"invoke_at_min_same_outputs": r["min_invoke_same"]}
            for i, o in enumerate(r["outputs"]):
                fixtures[model.name][f"output{i}_{core.replace('-', '_')}"] = o
        if flash:
            for model in models:
                print(f"[tflm] {core}: flash firmware of {model.name}", file=sys.stderr, flush=True)
                arena = data["arena"][model.name][core]["arena_min_bytes"]
                data["flash"].setdefault(model.name, {})[core] = measure_flash(
                    core, sources, model, arena, build, ops_all
                )
        if invoke:
            print(f"[tflm] {core}: invoke counts", file=sys.stderr, flush=True)
            for name, entry in measure_invoke(core, sources, models, build).items():
                data.setdefault("invoke", {}).setdefault(name, {})[core] = entry
    if checks:
        data["checks"] = checks
    if not arena:
        del data["arena"], data["flash"]
        fixtures = {}
    return data, fixtures


#: The data file's per-model, per-core tables (``{model: {core: entry}}``).
PER_CORE_TABLES: tuple[str, ...] = ("arena", "flash", "invoke", "checks")


def merge(old: dict, new: dict) -> dict:
    """``old`` with what ``new`` measured in place of its own: every per-core table
    (:data:`PER_CORE_TABLES`) merged per model and core, so a run on some cores keeps every other
    core's records of every kind; the new cores' flags join ``provenance.flags.per_core`` and the
    run is listed in the provenance's ``later_runs``."""
    out = {**old, **{k: v for k, v in new.items() if k != "provenance" and k not in PER_CORE_TABLES}}
    for table in PER_CORE_TABLES:
        if table not in new:
            continue
        merged = {model: dict(cores) for model, cores in old.get(table, {}).items()}
        for model, cores in new[table].items():
            merged.setdefault(model, {}).update(cores)
        out[table] = merged
    prov = dict(old["provenance"])
    later = new["provenance"]
    measured_cores = sorted({c for t in PER_CORE_TABLES for cores in new.get(t, {}).values() for c in cores})
    if "flags" in prov and "flags" in later:
        per_core = dict(prov["flags"].get("per_core", {}))
        per_core.update(
            {c: later["flags"]["per_core"][c] for c in measured_cores if c in later["flags"]["per_core"]}
        )
        prov["flags"] = {**prov["flags"], "per_core": per_core}
    runs = list(prov.get("later_runs", []))
    runs.append({"date": later["date"], "command": later["command"], "sources": later["sources"],
                 "compiler": later["compiler"], "measured": sorted(k for k in new if k != "provenance"),
                 "cores": measured_cores})  # fmt: skip
    prov["later_runs"] = runs
    out["provenance"] = prov
    return out


def write_fixtures(fixtures: dict, out: Path, provenance: dict) -> list[Path]:
    """Per model ``<stem>.npz`` (``input``, ``seed``, ``output<i>_<core>``) and a README.md
    naming where they come from. An existing file of the same input keeps the outputs of the
    cores this run did not measure."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    rows = []
    for name, arrays in fixtures.items():
        path = out / f"{Path(name).stem}.npz"
        if path.is_file():
            with np.load(path) as f:
                old = dict(f)
            same_input = np.array_equal(old.get("input"), arrays["input"])
            if same_input and int(old.get("seed", -1)) == int(arrays["seed"]):
                arrays = {**old, **arrays}
        np.savez_compressed(path, **arrays)
        written.append(path)
        outputs = ", ".join(f"`{k}` {v.shape}" for k, v in arrays.items() if k.startswith("output"))
        rows.append(f"| `{path.name}` | `{name}` | `input` {arrays['input'].shape} | {outputs} |")
    flags = provenance["flags"]
    (out / "README.md").write_text(
        "# TFLM + CMSIS-NN on Cortex-M under QEMU: outputs for a fixed input\n\n"
        "Generated by `refsim/lab/tflm/measure.py` (do not edit): TensorFlow Lite Micro's own\n"
        "MicroInterpreter, built from source with the CMSIS-NN it pins, run under QEMU on each core's\n"
        "board, Invoke on the seeded input of each MLPerf Tiny reference model (`../`). For checking\n"
        "refsim's execution of a `.tflite` bit-exactly against the real TFLM on Cortex-M.\n\n"
        "| file | model | input | outputs (int8, flattened, per core) |\n|---|---|---|---|\n"
        + "\n".join(rows)
        + "\n\n## Provenance\n\n"
        f"- input: {provenance['input_seed']}; the seed is stored as `seed`\n"
        + "".join(f"- {k}: {v}\n" for k, v in provenance["sources"].items())
        + f"- compiler: {provenance['compiler']}\n- QEMU: {provenance['qemu']}\n"
        f"- build: {provenance['tflm_build']}; optimisation {flags['optimization']}\n"
        f"- flags per core: see `provenance.flags` of refsim/memory/tflm_measured.json\n"
        f"- date: {provenance['date']}\n- command: `{provenance['command']}`\n"
        + "".join(
            f"- later run ({', '.join([r['date'], *r.get('cores', [])])}): `{r['command']}`\n"
            for r in provenance.get("later_runs", [])
            if isinstance(r, dict)
        )
    )
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m refsim.lab.tflm.measure", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--tflm-dir", help="tflite-micro tree (default: $REFSIM_TFLM_REPO)")
    parser.add_argument("--cmsis-nn-dir", help="CMSIS-NN tree at TFLM's pin (default: $CMSIS_NN_DIR)")
    parser.add_argument("--downloads-dir", help="TFLM's third-party downloads (default: $TFLM_DOWNLOADS_DIR)")
    parser.add_argument("--models-dir", default="tests/fixtures/tflite", help="where the .tflite models are")
    parser.add_argument("--models", nargs="*", default=list(MODELS))
    parser.add_argument("--cores", nargs="*", default=list(CORES))
    parser.add_argument("--build", default=None, help="build directory (default: a temporary one)")
    parser.add_argument("--out", required=True, help="the JSON data file to write")
    parser.add_argument("--fixtures", help="directory for the .npz input/output fixtures")
    parser.add_argument("--no-arena", action="store_true", help="skip the arena (and flash) measurement")
    parser.add_argument("--no-flash", action="store_true")
    parser.add_argument(
        "--merge", action="store_true", help="update --out in place with what this run measures"
    )
    parser.add_argument("--invoke", action="store_true", help="also per-op Invoke instruction counts")
    args = parser.parse_args(argv)
    import os

    for flag, env in (
        (args.tflm_dir, "REFSIM_TFLM_REPO"),
        (args.cmsis_nn_dir, "CMSIS_NN_DIR"),
        (args.downloads_dir, "TFLM_DOWNLOADS_DIR"),
    ):
        if flag:
            os.environ[env] = flag
    try:
        sources = tb.Sources.from_environment()
        models = [Path(args.models_dir) / m for m in args.models]
        for m in models:
            if not m.is_file():
                raise TflmMeasureError(f"TFLM lab: no model {m}")
        build = Path(args.build) if args.build else Path(tempfile.mkdtemp(prefix="refsim-tflm-build-"))
        command = "python -m refsim.lab.tflm.measure " + " ".join(argv if argv is not None else sys.argv[1:])
        data, fixtures = measure_all(
            sources, models, build, args.cores, arena=not args.no_arena,
            flash=not (args.no_flash or args.no_arena), invoke=args.invoke, command=command,
        )  # fmt: skip
    except LabError as error:
        print(f"refsim: error: {error}", file=sys.stderr)
        return 2
    out = Path(args.out)
    if args.merge and out.is_file():
        data = merge(json.loads(out.read_text()), data)
    out.write_text(json.dumps(data, indent=1) + "\n")
    if args.fixtures and fixtures:
        write_fixtures(fixtures, Path(args.fixtures), data["provenance"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
