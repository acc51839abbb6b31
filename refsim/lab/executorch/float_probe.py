"""Measure ExecuTorch's portable fp32 kernels per element on a Cortex-M core, instruction-timed
under QEMU, for the fp32 rates isa_models/cortex_m/program.py prices portable float ops with.

    EXECUTORCH_DIR=/tmp/et FLATBUFFERS_DIR=/tmp/fb python benchmarks/dispatch.py --write

``dispatch_probe/float_ops.cpp`` calls the portable kernels (kernels/portable/cpu/op_*.cpp, built
from EXECUTORCH_DIR with ExecuTorch's Release flags: refsim/lab/executorch/build.py) directly on
1-D float tensors of :data:`LENGTHS` elements, one counting window per call. Per op, a line through
its windows gives cycles per element (slope) and per call (intercept). The FPU cores (M4, M7, M33,
M55, M85) run FPv4/FPv5 code; the M0+ and M3 are built ``-mfloat-abi=soft``, so their float
arithmetic is libgcc's ``__aeabi_f*`` and newlib's libm, as on the device.

After the kernels the same arithmetic runs as plain C loops (``loop_*``, what an application's
own loop pays). The table (:func:`float_table`), per core, in FloatWork's terms::

    element          = slope(loop_copy)               one load and one store
    add | mul | div  = slope(loop_<op>) - element      the arithmetic, in a tight loop
    transcendental   = slope(loop_exp) - element       newlib's expf
    mac              = slope(loop_mac)                 a dot product's multiply-accumulate
    portable_element = mean over add, mul, div, exp of slope(portable op) - its loop's slope
                       (elementwise_util's per-element loads, dtype conversions and stores)
    portable_mac     = slope(mm) / 16                  aten::mm, [L/16, 16] x [16, 16]
    call             = mean intercept of add, mul, div, exp  (the op's checks and set-up)

so a portable op of n elements costs ``call + n · (arithmetic + element + portable_element)``
and an application loop (FloatWork(portable=False): the I/O quantize steps) ``n · (arithmetic +
element)``. The checks: every measured portable op (sub, neg, sqrt, tanh, sigmoid too, with
refsim/ops/cost.py's counts) predicted per element against its measured slope.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

from refsim.lab.build import link_probe, mkdir
from refsim.lab.executorch.build import DispatchProbeError, Sources, et_objects
from refsim.lab.executorch.dispatch_measure import provenance
from refsim.lab.executorch.dispatch_probe import PROBE_DIR

#: Ops of float_ops.cpp, in its order (keep in step with its enum Op), and the lengths of its kLengths.
OPS: tuple[str, ...] = ("add", "sub", "mul", "div", "exp", "tanh", "sigmoid", "sqrt", "neg", "clone", "mm")
#: The plain C loops of float_ops.cpp, in its order (enum Loop), after the kernels.
LOOPS: tuple[str, ...] = ("copy", "add", "mul", "div", "exp", "mac")
#: aten::mm's reduction length in float_ops.cpp: a call of length L makes 16 · L multiply-accumulates.
MM_INNER = 16
LENGTHS: tuple[int, ...] = (16, 64, 256)

#: The portable sources the ops need (relative to EXECUTORCH_DIR).
FLOAT_UNITS: tuple[str, ...] = (
    *(f"kernels/portable/cpu/op_{op}.cpp" for op in OPS),
    "kernels/portable/cpu/pattern/unary_ufunc_realhbbf16_to_floathbf16.cpp",
    "kernels/portable/cpu/util/broadcast_util.cpp",
    "kernels/portable/cpu/util/delinearize_index.cpp",
    "kernels/portable/cpu/util/dtype_util.cpp",
    "kernels/portable/cpu/util/kernel_ops_util.cpp",
    "kernels/portable/cpu/util/matmul_ops_util.cpp",
)

#: Ops not used to derive the table, with refsim/ops/cost.py's per-element counts
#: (adds, muls, divs, transcendentals) of aten::<op>.out.
CHECKS: dict[str, tuple[int, int, int, int]] = {
    "sub": (1, 0, 0, 0),
    "neg": (1, 0, 0, 0),
    "sqrt": (0, 0, 1, 0),
    "tanh": (0, 0, 0, 1),
    "sigmoid": (1, 0, 1, 1),
}


def build_float_probe(model_name: str, sources: Sources, build: Path) -> Path:
    objects = et_objects(model_name, sources, build, FLOAT_UNITS)
    return link_probe(objects, mkdir(build / f"float-{model_name}"), [PROBE_DIR / "float_ops.cpp"])


def measure_float(model_name: str, sources: Sources, build: Path) -> dict:
    """Per op: the instructions and cycles of one call at each of :data:`LENGTHS`."""
    from refsim.qemu.timing import time_elf

    windows = time_elf(model_name, build_float_probe(model_name, sources, build), timeout=300.0)
    names = [*OPS, *(f"loop_{name}" for name in LOOPS)]
    if len(windows) != len(names) * len(LENGTHS):
        raise DispatchProbeError(
            f"fp32 probe on {model_name}: {len(names) * len(LENGTHS)} windows expected, got {len(windows)}"
        )
    out = {}
    for k, op in enumerate(names):
        runs = windows[k * len(LENGTHS) : (k + 1) * len(LENGTHS)]
        out[op] = {
            "instructions": [w["instructions"] for w in runs],
            "cycles": [w["cycles"] for w in runs],
            "unparsed_cycles": [w["unparsed"] for w in runs],  # instructions llvm-mca could not time
        }
    return out


def _line(values: list[int]) -> tuple[Fraction, Fraction]:
    """The least-squares line through ``(LENGTHS[i], values[i])``, slope and intercept, exactly.

    In rationals, not ``np.polyfit``: the measurements are integers, so the slopes are dyadic
    fractions such as 148.5625 that the table rounds to 3 decimals, and a float fit lands a
    BLAS-dependent ulp either side of the tie (148.562 on one machine, 148.563 on another)."""
    xs, ys = [Fraction(x) for x in LENGTHS], [Fraction(int(y)) for y in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    return slope, my - slope * mx


def _rounded(value: Fraction, digits: int) -> float:
    """``value`` rounded to ``digits`` decimals, ties to even (Python's ``round`` on a Fraction is
    exact), as a float."""
    return float(round(value, digits))


def float_table(raw: dict) -> dict:
    """The module docstring's table from :func:`measure_float`'s windows (cycles, and
    instructions alike), and the portable ops' table-predicted vs measured cycles per element.
    Computed in exact rationals from the integer windows and rounded once, so the same windows
    give the same table on every machine."""
    out: dict = {"per_element": {}, "per_call": {}}
    for unit in ("cycles", "instructions"):
        lines = {op: _line(w[unit]) for op, w in raw.items()}
        element = lines["loop_copy"][0]
        arith = {
            "add": lines["loop_add"][0] - element,
            "mul": lines["loop_mul"][0] - element,
            "div": lines["loop_div"][0] - element,
            "transcendental": lines["loop_exp"][0] - element,
        }
        pairs = {"add": "add", "mul": "mul", "div": "div", "exp": "transcendental"}
        overhead = sum(lines[op][0] - arith[a] - element for op, a in pairs.items()) / len(pairs)
        table = {
            "element": element,
            **arith,
            "mac": lines["loop_mac"][0],
            "portable_element": overhead,
            "portable_mac": lines["mm"][0] / MM_INNER,
            "call": sum(lines[op][1] for op in pairs) / len(pairs),
        }
        out[unit] = {k: _rounded(v, 3) for k, v in table.items()}
        out["per_element"][unit] = {op: _rounded(line[0], 3) for op, line in lines.items()}
        out["per_call"][unit] = {op: _rounded(line[1], 1) for op, line in lines.items()}
    c = out["cycles"]
    counts = {"add": (1, 0, 0, 0), "mul": (0, 1, 0, 0), "div": (0, 0, 1, 0), "exp": (0, 0, 0, 1), **CHECKS}
    out["checks"] = {
        op: {
            "predicted": round(adds * c["add"] + muls * c["mul"] + divs * c["div"] + tr * c["transcendental"]
                               + c["element"] + c["portable_element"], 3),
            "measured": out["per_element"]["cycles"][op],
        }
        for op, (adds, muls, divs, tr) in counts.items()
    }  # fmt: skip
    return out


def measure_float_all(sources: Sources, build: Path, cores: Sequence[str], command: str = "") -> dict:
    """The data file's content (isa_models/cortex_m/float_ops.json): provenance, per core the windows and
    the table (:func:`float_table`)."""
    per_core = {}
    for core in cores:
        raw = measure_float(core, sources, build)
        per_core[core] = {"table": float_table(raw), "windows": raw}
    prov = provenance(sources, command)
    prov["method"] = (
        "refsim/lab/executorch/float_probe.py: ExecuTorch's portable kernels (kernels/portable/cpu) built from "
        "source, called on 1-D float tensors, one counting window per call, timed by refsim.qemu.timing"
    )
    prov.pop("windows_include", None)
    return {
        "provenance": prov,
        "ops": list(OPS),
        "lengths": list(LENGTHS),
        "mm_inner": MM_INNER,
        "cores": per_core,
    }
