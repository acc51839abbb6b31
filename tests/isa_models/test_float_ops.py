"""ExecuTorch's portable fp32 kernels measured per core (isa_models/cortex_m/float_ops.json): the shipped
table equals its refit from the shipped windows, the windows are linear in the length, and
isa_models.cortex_m.program prices FloatWork with the measured table."""

from __future__ import annotations

import json

import pytest

from isa_models.cortex_m.cores import CORE_MODELS, get_core_model
from isa_models.cortex_m.program import (
    FLOAT_CYCLES,
    FLOAT_DATA,
    FloatWork,
    cost_of,
    float_table,
    measured_float,
)
from refsim.lab.executorch.float_probe import LENGTHS, MM_INNER, OPS
from refsim.lab.executorch.float_probe import float_table as refit

DATA = json.loads(FLOAT_DATA.read_text())
CORES = sorted(DATA["cores"])


def test_every_core_model_is_measured_with_provenance() -> None:
    assert set(CORES) == set(CORE_MODELS)
    assert DATA["ops"] == list(OPS) and DATA["lengths"] == list(LENGTHS)
    for key in ("executorch", "compiler", "flags", "qemu", "llvm_mca", "date", "command", "method"):
        assert DATA["provenance"][key], key


@pytest.mark.parametrize("core", CORES)
def test_shipped_table_equals_its_refit(core: str) -> None:
    """Exactly: float_table fits its lines in rationals from the integer windows and rounds once,
    so no machine's BLAS enters (a float fit put ties such as 148.5625 an ulp either side)."""
    entry = DATA["cores"][core]
    assert refit(entry["windows"]) == entry["table"]


def test_refit_rounds_an_exact_tie_the_same_everywhere_and_sees_one_cycle() -> None:
    """The test of the test: a slope that is a tie at the stored digit (1/16 cycle per element)
    rounds half to even, and one cycle more in one window changes the table."""
    entry = DATA["cores"]["cortex-m3"]
    windows = json.loads(json.dumps(entry["windows"]))
    copy = [100 + 7 * (n - LENGTHS[0]) for n in LENGTHS]  # 7 cycles per element
    windows["loop_copy"]["cycles"] = copy
    windows["loop_div"]["cycles"] = [
        c + int(148.5625 * (n - LENGTHS[0])) for c, n in zip(copy, LENGTHS, strict=True)
    ]
    assert refit(windows)["cycles"]["div"] == 148.562  # 148.5625 exactly: half to even
    bumped = json.loads(json.dumps(entry["windows"]))
    bumped["loop_div"]["cycles"][-1] += 1
    assert refit(bumped) != entry["table"]


@pytest.mark.parametrize("core", CORES)
def test_every_op_costs_a_constant_per_element(core: str) -> None:
    n0, n1, n2 = LENGTHS
    for op, w in DATA["cores"][core]["windows"].items():
        c = w["cycles"]
        first, second = (c[1] - c[0]) / (n1 - n0), (c[2] - c[1]) / (n2 - n1)
        assert first == pytest.approx(second, rel=0.05), (op, first, second)


def _slope(values: list[int]) -> float:
    n0, _, n2 = LENGTHS
    return (values[2] - values[0]) / (n2 - n0)


@pytest.mark.parametrize("core", CORES)
def test_an_application_loop_costs_the_plain_loops_slope(core: str) -> None:
    windows, n = DATA["cores"][core]["windows"], 256
    works = {
        "loop_copy": FloatWork(elements=n, portable=False),
        "loop_add": FloatWork(adds=n, elements=n, portable=False),
        "loop_mul": FloatWork(muls=n, elements=n, portable=False),
        "loop_div": FloatWork(divs=n, elements=n, portable=False),
        "loop_exp": FloatWork(transcendentals=n, elements=n, portable=False),
        "loop_mac": FloatWork(adds=n, muls=n, macs=n, portable=False),
    }
    for loop, work in works.items():
        assert cost_of([work], core).cycles == pytest.approx(n * _slope(windows[loop]["cycles"]), rel=0.02), (
            loop
        )


@pytest.mark.parametrize("core", CORES)
def test_a_portable_op_is_within_30_percent_of_its_measured_call(core: str) -> None:
    """The composed rates (for portable ops not measured whole): mul, div, exp and mm come within
    30% of their own measurement at 256 elements."""
    windows, n = DATA["cores"][core]["windows"], LENGTHS[-1]
    works = {
        "mul": FloatWork(muls=n, elements=n),
        "div": FloatWork(divs=n, elements=n),
        "exp": FloatWork(transcendentals=n, elements=n),
        "mm": FloatWork(adds=n * MM_INNER, muls=n * MM_INNER, macs=n * MM_INNER, elements=n),
    }
    for op, work in works.items():
        assert cost_of([work], core).cycles == pytest.approx(windows[op]["cycles"][-1], rel=0.30), op
    assert measured_float()[core].source.startswith("fp32 portable kernels measured")


def test_soft_float_cores_pay_for_arithmetic_in_software() -> None:
    for soft in ("cortex-m0plus", "cortex-m3"):
        assert get_core_model(soft).fpu == "none"
        for hard in ("cortex-m4", "cortex-m33", "cortex-m55"):
            assert float_table(soft).add > 2 * float_table(hard).add
            assert float_table(soft).transcendental > 2 * float_table(hard).transcendental


def test_a_core_without_a_measurement_keeps_the_rule_of_thumb(monkeypatch) -> None:
    import isa_models.cortex_m.program as program

    monkeypatch.setattr(program, "measured_float", lambda: {})
    assert program.float_table("cortex-m4") is FLOAT_CYCLES["sp"]
    work = FloatWork(adds=10, muls=10, macs=10, elements=5)
    t = FLOAT_CYCLES["sp"]
    assert cost_of([work], "cortex-m4").cycles == 10 * (t.add + t.mul) + 5 * t.element


@pytest.mark.parametrize("core", CORES)
def test_a_measured_portable_kernel_costs_its_own_windows(core: str) -> None:
    """An op whose portable kernel was measured whole (tanh, neg, sqrt, add, ...) costs that
    kernel's own windows at every measured length, not the composed rates."""
    windows = DATA["cores"][core]["windows"]
    for kernel in ("add", "sub", "neg", "sqrt", "tanh", "sigmoid"):
        for n, measured in zip(LENGTHS, windows[kernel]["cycles"], strict=True):
            got = cost_of([FloatWork(adds=n, elements=n, kernel=kernel)], core)
            assert got.cycles == pytest.approx(measured, rel=0.03), (kernel, n)
            assert got.instructions < got.cycles or core in (
                "cortex-m7",
                "cortex-m85",
            )  # CPI > 1 off dual issue


def test_the_registry_names_the_measured_kernels() -> None:
    from types import SimpleNamespace

    from refsim.ops.cost import _FLOAT

    out = SimpleNamespace(out=SimpleNamespace(meta=SimpleNamespace(numel=8)))
    named = {}
    for name, hook in _FLOAT.items():
        (work,) = hook(out, "mve")
        if work.kernel:
            named[work.kernel] = name
    assert set(named) == {op for op in OPS if op not in ("clone", "mm")}  # clone is a copy, mm per MAC
    assert all(name == f"aten::{kernel}.out" for kernel, name in named.items())
