"""The measurement of the dispatch probe (refsim/lab/executorch/dispatch_probe.py): the programs it runs,
the per-call counting windows it gets back, the fit isa_models/cortex_m/program.py prices dispatch with,
and the data file's provenance.

    per call    = call + argument · arguments + list · list arguments + list_element · elements
    per execute = window_0 + window_n - per call(call 0)

Programs: the bundled MLPerf Tiny exports (examples/models, as they are) and synthetic ones cut
from kws_m4: chains of 1, 10 and 50 copies of each of its ops' first call (per-execute cost
independent of length), and a conv call whose int[] arguments have 0, 1, 8 or 32 elements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from refsim.lab.build import link_probe, mkdir, run, stubs_source, undefined_arm_symbols
from refsim.lab.executorch.build import (
    ET_FLAGS,
    DispatchProbeError,
    Sources,
    et_objects,
    flatbuffers_version,
    flatc_version,
)
from refsim.lab.executorch.dispatch_probe import (
    PROBE_DIR,
    arg_kind,
    blobs_source,
    build_probe,
    kernels_source,
    program_schemas,
)

# --- the programs ----------------------------------------------------------------------------------

#: The bundled programs measured as they are (examples/models/), and the one the synthetic chains
#: are cut from.
BUNDLED: tuple[str, ...] = ("kws", "kws_m4", "vww", "vww_m4", "ic", "ic_m4", "ad", "ad_m4")
SYNTHETIC_BASE = "kws_m4"
#: Chains of n copies of one call (the program's first call of each op), for the per-execute cost.
CHAIN_LENGTHS: tuple[int, ...] = (1, 10, 50)
#: Lengths given to every int[] argument of a copied conv call, for the per-element cost.
LIST_LENGTHS: tuple[int, ...] = (0, 1, 8, 32)


@dataclass(frozen=True)
class CallShape:
    """What one KernelCall unboxes: its op, and its arguments by :func:`arg_kind`; ``list_elements``
    is the total length of its int[]/float[]/bool[]/Tensor[] arguments."""

    op: str
    kinds: tuple[tuple[str, int], ...]
    list_elements: int

    @property
    def arguments(self) -> int:
        return sum(n for _, n in self.kinds)


def call_shapes(path: Path) -> list[CallShape]:
    """Per KernelCall of the program's first method, in order."""
    from refsim.ops.registry import lookup
    from refsim.pte import model as m
    from refsim.pte.reader import load_program

    plan = load_program(path).program.execution_plan[0]
    shapes = []
    for instruction in plan.chains[0].instructions:
        if not isinstance(instruction, m.KernelCall):
            raise DispatchProbeError(f"dispatch probe: {path.name} has a {type(instruction).__name__}")
        name = plan.operators[instruction.op_index].qualified_name
        schema = lookup(name).schema
        counts: dict[str, int] = {}
        elements = 0
        for arg, index in zip(schema.args, instruction.args, strict=False):
            kind = arg_kind(arg.type)
            counts[kind] = counts.get(kind, 0) + 1
            value = plan.values[index]
            if kind in ("list", "optional_list") and hasattr(value, "items"):
                elements += len(value.items)
        shapes.append(CallShape(name, tuple(sorted(counts.items())), elements))
    return shapes


def synthetic_programs(models: Path, out: Path) -> list[Path]:
    """Programs cut from :data:`SYNTHETIC_BASE`: per op of it, chains of :data:`CHAIN_LENGTHS`
    copies of its first call; and 10 copies of its first conv call whose int[] arguments all
    have each of :data:`LIST_LENGTHS` elements."""
    import dataclasses

    from refsim.pte import model as m
    from refsim.pte.reader import load_program
    from refsim.pte.writer import write_program

    pf = load_program(models / f"{SYNTHETIC_BASE}.pte")
    plan = pf.program.execution_plan[0]
    chain = plan.chains[0]
    first: dict[str, m.KernelCall] = {}
    for instruction in chain.instructions:
        first.setdefault(plan.operators[instruction.op_index].qualified_name, instruction)

    def write(name: str, values: tuple, calls: list) -> Path:
        new_chain = dataclasses.replace(chain, instructions=tuple(calls), stacktrace=None)
        new_plan = dataclasses.replace(plan, values=values, chains=(new_chain,))
        program = dataclasses.replace(pf.program, execution_plan=(new_plan,))
        path = out / f"{name}.pte"
        write_program(program, pf.constants(), path)
        return path

    paths = []
    for op, call in sorted(first.items()):
        short = op.split("::")[1].split(".")[0]
        for n in CHAIN_LENGTHS:
            paths.append(write(f"chain_{short}_x{n}", plan.values, [call] * n))
    conv = first["cortex_m::quantized_conv2d.out"]
    for length in LIST_LENGTHS:
        values = list(plan.values)
        zero = len(values)
        values.append(m.Int(1))
        values.append(m.IntList(items=(zero,) * length))
        listed = len(values) - 1
        args = tuple(listed if isinstance(plan.values[a], m.IntList) else a for a in conv.args)
        paths.append(
            write(f"lists_conv_len{length}", tuple(values), [dataclasses.replace(conv, args=args)] * 10)
        )
    return paths


# --- measuring and fitting -------------------------------------------------------------------------


def measure(model_name: str, sources: Sources, models: Path, build: Path) -> dict:
    """Build the probe for ``model_name`` with the bundled and synthetic programs, run it once
    under QEMU and return per program its calls' shapes and windows (instructions, cycles)."""
    from refsim.qemu.timing import time_elf

    synthetic = synthetic_programs(models, mkdir(build / "programs"))
    programs = [models / f"{name}.pte" for name in BUNDLED] + synthetic
    elf = build_probe(model_name, sources, programs, build)
    windows = time_elf(model_name, elf, timeout=300.0)
    shapes = [call_shapes(p) for p in programs]
    expected = sum(len(s) + 1 for s in shapes)
    if len(windows) != expected:
        raise DispatchProbeError(
            f"dispatch probe on {model_name}: {expected} counting windows expected, the plugin saw {len(windows)}"
        )
    out, at = {}, 0
    for path, calls in zip(programs, shapes, strict=True):
        runs = windows[at : at + len(calls) + 1]
        at += len(calls) + 1
        out[path.stem] = {
            "calls": [{"op": c.op, "kinds": dict(c.kinds), "list_elements": c.list_elements} for c in calls],
            "instructions": [w["instructions"] for w in runs],
            "cycles": [w["cycles"] for w in runs],
        }
    return out


#: Features of the per-call fit: every schema argument (out included), the list arguments among
#: them (a BoxedEvalueList to build) and their elements (each unboxed from its own EValue).
FEATURES: tuple[str, ...] = ("argument", "list", "list_element")


def _features(call: dict) -> list[float]:
    kinds = call["kinds"]
    lists = kinds.get("list", 0) + kinds.get("optional_list", 0)
    return [1.0, float(sum(kinds.values())), float(lists), float(call["list_elements"])]


def fit(raw: dict) -> dict:
    """Least-squares coefficients of window k >= 1 (one call's dispatch) on :data:`FEATURES` plus
    a constant ``call``, for instructions and cycles; ``execute``: the mean over every program of
    window 0 + window n minus the model of call 0 (Method::execute's own entry and exit), with its
    spread; the worst relative error of the per-call model over every measured call."""
    rows, ins, cyc, fixed_i, fixed_c = [], [], [], [], []
    for prog in raw.values():
        for k, call in enumerate(prog["calls"][1:], start=1):
            rows.append(_features(call))
            ins.append(prog["instructions"][k])
            cyc.append(prog["cycles"][k])
    a = np.array(rows)
    coef_i = np.linalg.lstsq(a, np.array(ins, dtype=float), rcond=None)[0]
    coef_c = np.linalg.lstsq(a, np.array(cyc, dtype=float), rcond=None)[0]
    for prog in raw.values():
        f0 = np.array(_features(prog["calls"][0]))
        fixed_i.append(prog["instructions"][0] + prog["instructions"][-1] - f0 @ coef_i)
        fixed_c.append(prog["cycles"][0] + prog["cycles"][-1] - f0 @ coef_c)
    err_i = np.abs(a @ coef_i - ins) / np.array(ins)
    err_c = np.abs(a @ coef_c - cyc) / np.array(cyc)
    names = ("call", *FEATURES)
    return {
        "instructions": {n: round(float(v), 3) for n, v in zip(names, coef_i, strict=True)}
        | {"execute": round(float(np.mean(fixed_i)), 1)},
        "cycles": {n: round(float(v), 3) for n, v in zip(names, coef_c, strict=True)}
        | {"execute": round(float(np.mean(fixed_c)), 1)},
        "execute_range": {
            "instructions": [round(float(min(fixed_i)), 1), round(float(max(fixed_i)), 1)],
            "cycles": [round(float(min(fixed_c)), 1), round(float(max(fixed_c)), 1)],
        },
        "max_call_error": {
            "instructions": round(float(err_i.max()), 4),
            "cycles": round(float(err_c.max()), 4),
        },
        "calls_fitted": len(rows),
    }


#: Cores measured: every core model (cortex-m85 runs the M55 build, cortex-m0plus an ARMv6-M
#: build on the M3 board, each timed with its own model, as for the kernels).
CORES: tuple[str, ...] = (
    "cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55", "cortex-m85",
)  # fmt: skip


def provenance(sources: Sources, command: str) -> dict:
    """Where the numbers come from: the ExecuTorch tree, tools, flags, date, command."""
    import datetime

    from refsim.qemu.mca import llvm_version
    from refsim.qemu.toolchain import find_toolchain

    tc = find_toolchain()
    stamp = sources.executorch / "EXECUTORCH_REVISION"
    return {
        "executorch": stamp.read_text().strip()
        if stamp.is_file()
        else f"unrecorded tree at {sources.executorch}",
        "flatbuffers": f"headers {flatbuffers_version(sources)}; {flatc_version()} (generated headers' "
        "version static_assert removed)",
        "compiler": tc.gcc_version,
        "flags": list(ET_FLAGS),
        "qemu": run([str(tc.qemu), "--version"], "qemu --version").splitlines()[0],
        "llvm_mca": llvm_version(),
        "date": datetime.date.today().isoformat(),
        "command": command,
        "method": "refsim/lab/executorch/dispatch_probe.py: ExecuTorch runtime/ built from source, generated "
        "codegen-shaped unboxing wrappers over empty kernels, per-call counting windows timed by "
        "refsim.qemu.timing (llvm-mca + TRM rules, ideal system)",
        "windows_include": "the kernel's call and return and 2 marker instructions (push, bl) per call",
    }


def measure_all(
    sources: Sources,
    models: Path,
    build: Path,
    cores: Sequence[str] = CORES,
    command: str = "",
    cmsis_include: Path | None = None,
) -> dict:
    """The data file's content (isa_models/cortex_m/dispatch.json): provenance, every program's calls
    (shapes), per core the fit and the windows (instructions and cycles) of every program, and
    with ``cmsis_include`` (CMSIS-NN's Include/, for the cortex_m ops' headers) each cortex_m
    op's own set-up (:func:`measure_setup`)."""
    programs: dict = {}
    per_core = {}
    for core in cores:
        raw = measure(core, sources, models, build)
        programs = {name: prog["calls"] for name, prog in raw.items()}
        windows = {
            name: {"instructions": p["instructions"], "cycles": p["cycles"]} for name, p in raw.items()
        }
        per_core[core] = {"fit": fit(raw), "windows": windows}
        if cmsis_include is not None:
            per_core[core]["setup"] = measure_setup(core, sources, cmsis_include, models, build)
    prov = provenance(sources, command)
    if cmsis_include is not None:
        prov["cmsis_nn_headers"] = str(cmsis_include)
    return {
        "provenance": prov,
        "features": ["call", *FEATURES],
        "programs": programs,
        "cores": per_core,
    }


def raw_of(data: dict, core: str) -> dict:
    """:func:`measure`'s result for ``core`` back from the data file (for :func:`fit`)."""
    return {
        name: {"calls": calls, **data["cores"][core]["windows"][name]}
        for name, calls in data["programs"].items()
    }


# --- the cortex_m ops' own set-up ---------------------------------------------------------------------

#: Portable utilities the cortex_m ops link against.
CORTEX_M_UTILS: tuple[str, ...] = (
    "kernels/portable/cpu/util/broadcast_util.cpp",
    "kernels/portable/cpu/util/delinearize_index.cpp",
    "kernels/portable/cpu/util/dtype_util.cpp",
    "kernels/portable/cpu/util/kernel_ops_util.cpp",
)


def cortex_m_sources(sources: Sources, schemas: Sequence[str]) -> dict[str, str]:
    """op name -> its ExecuTorch source (backends/cortex_m/ops/op_<name>.cpp) where the tree has one."""
    out = {}
    for text in schemas:
        name = text.split("(", 1)[0]
        if not name.startswith("cortex_m::"):
            continue
        rel = f"backends/cortex_m/ops/op_{name.split('::', 1)[1].split('.', 1)[0]}.cpp"
        if (sources.executorch / rel).is_file():
            out[name] = rel
    return out


def build_setup_probe(
    model_name: str, sources: Sources, cmsis_include: Path, programs: Sequence[Path], build: Path
) -> tuple[Path, list[str]]:
    """The dispatch probe with ExecuTorch's own cortex_m kernels (CMSIS-NN stubbed) for every op
    the tree has; its ELF and the ops it runs for real."""
    schemas = program_schemas(programs)
    real = cortex_m_sources(sources, schemas)
    units = [*real.values(), *CORTEX_M_UTILS]
    objects = et_objects(model_name, sources, build, units, [f"-I{cmsis_include}"])
    ops = [o for o in objects.objects if "backends__cortex_m" in o]
    work = mkdir(build / f"setup-{model_name}")
    (work / "kernels.cpp").write_text(kernels_source(schemas, real=list(real)))
    (work / "stubs.cpp").write_text(stubs_source(undefined_arm_symbols(ops)))
    (work / "blobs.S").write_text(blobs_source([p.resolve() for p in programs]))
    inputs = [PROBE_DIR / "main.cpp", work / "kernels.cpp", work / "stubs.cpp", work / "blobs.S"]
    return link_probe(objects, work, inputs, bulk_section=".rs_programs"), sorted(real)


def measure_setup(model_name: str, sources: Sources, cmsis_include: Path, models: Path, build: Path) -> dict:
    """Per cortex_m op the tree has: instructions and cycles of its own code around its CMSIS-NN
    call (set-up before, teardown after; the stub's own 3-4 instructions included), from the
    chains of :func:`synthetic_programs`: window k of the real-kernel probe minus window k of the
    empty-kernel probe, for every call but the first."""
    from refsim.qemu.timing import time_elf

    synthetic = synthetic_programs(models, mkdir(build / "programs"))
    chains = [
        p for p in synthetic if p.stem.startswith("chain_") and p.stem.endswith(f"_x{max(CHAIN_LENGTHS)}")
    ]
    elf, real = build_setup_probe(model_name, sources, cmsis_include, chains, build)
    with_ops = time_elf(model_name, elf, timeout=300.0)
    empty = time_elf(model_name, build_probe(model_name, sources, chains, build), timeout=300.0)
    if len(with_ops) != len(empty):
        raise DispatchProbeError(
            f"set-up probe on {model_name}: {len(with_ops)} windows with ExecuTorch's kernels, {len(empty)} "
            "without (an op made other than one CMSIS-NN call)"
        )
    out, at = {}, 0
    for path in chains:
        calls = call_shapes(path)
        n = len(calls) + 1
        if calls[0].op in real:
            diffs = {
                unit: [with_ops[at + k][unit] - empty[at + k][unit] for k in range(1, n - 1)]
                for unit in ("instructions", "cycles")
            }
            out[calls[0].op] = {unit: round(float(np.mean(d)), 1) for unit, d in diffs.items()} | {
                "spread": {unit: [min(d), max(d)] for unit, d in diffs.items()}
            }
        at += n
    return out
