"""ExecuTorch's measured dispatch (isa_models/cortex_m/dispatch.json): the shipped fit equals its refit
from the shipped windows, the measurement's own invariants hold (a chain's per-execute cost does
not depend on its length, list elements cost a constant each, an op's set-up is the same on
every call), and isa_models.cortex_m.program prices calls and the estimate with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from isa_models.cortex_m.cores import CORE_MODELS
from isa_models.cortex_m.program import (
    DISPATCH_DATA,
    READING_BASED,
    dispatch_cost,
    execute_cost,
    measured_dispatch,
)
from refsim.lab.executorch.dispatch_measure import (
    BUNDLED,
    CHAIN_LENGTHS,
    LIST_LENGTHS,
    call_shapes,
    fit,
    raw_of,
)
from refsim.lab.executorch.dispatch_probe import arg_kind, kernels_source

DATA = json.loads(DISPATCH_DATA.read_text())
CORES = sorted(DATA["cores"])
MODELS_DIR = Path(__file__).resolve().parents[2] / "examples" / "models"


def test_every_core_model_is_measured() -> None:
    assert set(CORES) == set(CORE_MODELS)


def test_provenance_names_sources_tools_flags_and_command() -> None:
    prov = DATA["provenance"]
    for key in ("executorch", "flatbuffers", "compiler", "flags", "qemu", "llvm_mca", "date", "command"):
        assert prov[key], key
    assert "-mthumb" in prov["flags"]


@pytest.mark.parametrize("core", CORES)
def test_shipped_fit_equals_its_refit(core: str) -> None:
    from tests.stored_digits import assert_equal_to_stored_digits, dispatch_fit_unit

    # lstsq's last bits follow the machine's BLAS kernels: a refit may round to the neighbouring
    # stored digit (tests/stored_digits.py), never further
    assert_equal_to_stored_digits(fit(raw_of(DATA, core)), DATA["cores"][core]["fit"], dispatch_fit_unit)


@pytest.mark.parametrize("core", CORES)
def test_per_call_model_is_within_10_percent_of_every_measured_call(core: str) -> None:
    errors = DATA["cores"][core]["fit"]["max_call_error"]
    assert errors["instructions"] < 0.10 and errors["cycles"] < 0.10, errors


@pytest.mark.parametrize("core", CORES)
def test_a_chain_costs_its_length_times_one_call_plus_one_execute(core: str) -> None:
    windows = DATA["cores"][core]["windows"]
    ops = {name.rsplit("_x", 1)[0] for name in windows if name.startswith("chain_")}
    assert len(ops) >= 5
    for op in ops:
        for unit in ("instructions", "cycles"):
            runs = {n: windows[f"{op}_x{n}"][unit] for n in CHAIN_LENGTHS}
            longest = runs[max(CHAIN_LENGTHS)]
            call = longest[1]
            assert set(longest[1:-1]) == {call}, (op, unit)  # every call in the chain costs the same
            for n, run in runs.items():
                assert (run[0], run[-1]) == (longest[0], longest[-1]), (op, unit, n)
                assert sum(run) == run[0] + run[-1] + (n - 1) * call


@pytest.mark.parametrize("core", CORES)
def test_each_list_element_costs_the_same(core: str) -> None:
    windows = DATA["cores"][core]["windows"]
    per_call = {n: windows[f"lists_conv_len{n}"]["instructions"][1] for n in LIST_LENGTHS}
    lists = 3  # the conv's stride, padding and dilation
    short, mid, long = sorted(n for n in LIST_LENGTHS if n)[:3]  # the empty list is a special case
    slope = (per_call[long] - per_call[mid]) / (lists * (long - mid))
    assert (per_call[mid] - per_call[short]) / (lists * (mid - short)) == pytest.approx(slope, rel=0.02)
    assert slope == pytest.approx(DATA["cores"][core]["fit"]["instructions"]["list_element"], rel=0.1)


def test_shipped_call_shapes_are_the_programs_calls() -> None:
    for name in BUNDLED:
        shapes = call_shapes(MODELS_DIR / f"{name}.pte")
        assert [dict(s.kinds) for s in shapes] == [c["kinds"] for c in DATA["programs"][name]]
        assert [s.list_elements for s in shapes] == [c["list_elements"] for c in DATA["programs"][name]]


def _formula(f: dict, args: int, lists: int, elements: int) -> float:
    return f["call"] + f["argument"] * args + f["list"] * lists + f["list_element"] * elements


@pytest.mark.parametrize("core", CORES)
def test_dispatch_cost_is_the_measured_formula_plus_the_ops_measured_set_up(core: str) -> None:
    entry = DATA["cores"][core]
    args, lists, elements = 15, 3, 6  # a quantized_conv2d.out call
    conv = "cortex_m::quantized_conv2d.out"
    cost = dispatch_cost(args, cortex_m=True, core=core, lists=lists, list_elements=elements, op=conv)
    for unit in ("instructions", "cycles"):
        expected = _formula(entry["fit"][unit], args, lists, elements) + entry["setup"][conv][unit]
        assert getattr(cost, unit) == pytest.approx(expected)
    assert any("measured" in s for s in cost.sources)
    assert execute_cost(core).cycles == entry["fit"]["cycles"]["execute"]
    # a cortex_m op without its own measurement: the mean of the measured ones
    other = dispatch_cost(14, cortex_m=True, core=core, op="cortex_m::quantized_add.out")
    mean = sum(v["cycles"] for v in entry["setup"].values()) / len(entry["setup"])
    assert other.cycles == pytest.approx(_formula(entry["fit"]["cycles"], 14, 0, 0) + mean)
    # a portable op: the measured dispatch plus the reading-based set-up
    view = dispatch_cost(3, cortex_m=False, core=core, lists=1, list_elements=4)
    reading = READING_BASED.portable_setup * READING_BASED.cpi
    assert view.cycles == pytest.approx(_formula(entry["fit"]["cycles"], 3, 1, 4) + reading)


@pytest.mark.parametrize("core", CORES)
def test_every_measured_op_set_up_is_the_same_on_every_call(core: str) -> None:
    setup = DATA["cores"][core]["setup"]
    assert len(setup) >= 6
    for op, v in setup.items():
        for unit in ("instructions", "cycles"):
            low, high = v["spread"][unit]
            assert 0 < low <= v[unit] <= high <= low * 1.05, (op, unit)


def test_without_a_measured_core_dispatch_is_the_reading_based_model() -> None:
    cost = dispatch_cost(10, cortex_m=False)
    assert (
        cost.instructions
        == READING_BASED.loop + 10 * READING_BASED.per_argument + READING_BASED.portable_setup
    )
    assert execute_cost("cortex-m99").cycles == 0
    assert set(measured_dispatch()) == set(CORES)


def test_estimate_adds_each_calls_measured_dispatch_and_one_execute() -> None:
    from refsim.runtime import Program
    from refsim.runtime.estimate import estimate_method

    program = Program.load(MODELS_DIR / "kws.pte")
    method = program.method("forward")
    est = estimate_method(program, method, cpu="cortex-m55")
    shapes = call_shapes(MODELS_DIR / "kws.pte")
    entry = DATA["cores"]["cortex-m55"]
    f = entry["fit"]["cycles"]
    expected = f["execute"] + sum(
        _formula(f, s.arguments, dict(s.kinds).get("list", 0), s.list_elements)
        + entry["setup"][s.op]["cycles"]
        for s in shapes
    )
    assert est.dispatch.cycles == pytest.approx(expected)
    measured = sum(entry["windows"]["kws"]["cycles"])
    setup = sum(entry["setup"][s.op]["cycles"] for s in shapes)
    assert est.dispatch.cycles - setup == pytest.approx(measured, rel=0.05)


def test_every_registered_op_gets_an_unboxing_wrapper() -> None:
    from refsim.ops.registry import all_ops

    schemas = [op.schema.text for op in all_ops().values()]
    source = kernels_source(schemas)
    assert source.count('    Kernel("') == len(schemas)
    assert "toOptional<executorch::aten::ArrayRef<int64_t>>" in source  # int[]? arguments
    with pytest.raises(Exception, match="not supported"):
        arg_kind("Dict(str, Tensor)")
