"""The planner on the bundled ExecuTorch 1.5.1 exports (examples/models/*.pte).

Our comparison planners reproduce ExecuTorch's own arena (and TFLM's, REFERENCE.md §6); our
best plan meets the live-bytes bound of the given order on every program; refsim's runtime
accepts every plan written back into the file, and the program computes the same bits in it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from compiler.planner import (
    ALGORITHMS,
    Plan,
    apply_plan,
    lifetimes,
    lower_bound,
    plan,
    plan_all,
    read_program,
    reorder,
    verify,
)
from refsim.errors import RefsimError
from refsim.runtime import Program

MODELS_DIR = Path(__file__).resolve().parents[2] / "examples" / "models"
MODELS = ("kws", "vww", "ic", "ad", "kws_m4")
SUMMARY = json.loads((MODELS_DIR / "models.json").read_text())
#: REFERENCE.md §6: TFLM's greedy planner, activations only (its reference kernels take no scratch)
TFLM_ACTIVATION_BYTES = {"kws": 16000, "kws_m4": 16000, "vww": 73728, "ic": 49152, "ad": 768}


def pte(name: str) -> Path:
    return MODELS_DIR / f"{name}.pte"


@pytest.fixture(scope="module")
def problems():
    return {name: read_program(pte(name)) for name in MODELS}


@pytest.mark.parametrize("name", MODELS)
def test_the_files_own_plan_reads_back_and_verifies(name, problems):
    pb = problems[name]
    original = pb.original_plan()
    verify(pb.buffers, original)
    assert original.arena_bytes == SUMMARY[name]["arena_bytes"][0]
    assert original.lower_bound == SUMMARY[name]["live_bytes_bound"]
    activations = [b for b in pb.buffers if b.name not in pb.scratch]
    assert lower_bound(activations) == SUMMARY[name]["activation_bytes_bound"]
    assert pb.constant_bytes == SUMMARY[name]["constant_bytes"]


@pytest.mark.parametrize("name", MODELS)
def test_comparison_planners_reproduce_executorch_and_tflm(name, problems):
    pb = problems[name]
    plans = plan_all(pb.buffers, time_limit_s=1.0)
    # ExecuTorch's greedy on the same buffers gives the arena ExecuTorch wrote into the file
    assert plans["executorch_greedy"].arena_bytes == pb.original_plan().arena_bytes
    activations = [b for b in pb.buffers if b.name not in pb.scratch]
    tflm = plan(activations, algorithm="greedy_by_size")
    assert tflm.arena_bytes == TFLM_ACTIVATION_BYTES[name]


@pytest.mark.parametrize("name", MODELS)
def test_best_meets_the_live_bytes_bound(name, problems):
    pb = problems[name]
    best = plan(pb.buffers, time_limit_s=1.0)
    assert best.arena_bytes == best.lower_bound == lower_bound(pb.buffers)
    assert best.arena_bytes <= pb.original_plan().arena_bytes
    if name == "vww":  # 25% under both anchors
        assert best.arena_bytes == 55296 and 4 * best.arena_bytes == 3 * 73728
    activations = [b for b in pb.buffers if b.name not in pb.scratch]
    assert plan(activations, time_limit_s=1.0).arena_bytes == lower_bound(activations)


@pytest.mark.parametrize("name", MODELS)
def test_reordering_the_bundled_chains_never_raises_their_bound(name, problems):
    pb = problems[name]
    io = {"graph_inputs": pb.graph_inputs, "graph_outputs": pb.graph_outputs, "mem_ids": pb.mem_ids}
    order = reorder(pb.steps, pb.sizes, **io)
    assert lower_bound(lifetimes(order, pb.sizes, **io)) <= lower_bound(pb.buffers)


def run(data, x: np.ndarray) -> np.ndarray:
    (out,) = Program.load(data).method("forward").execute([x])
    return np.array(out)


@pytest.mark.parametrize("name", MODELS)
def test_the_runtime_accepts_every_plan_and_computes_the_same_bits(name, problems):
    pb = problems[name]
    with np.load(MODELS_DIR / f"{name}.io.npz") as io:
        x = io["input0"]
    rng = np.random.default_rng(0)
    inputs = [x, rng.integers(-128, 128, size=x.shape, dtype=np.int8)]
    reference = [run(pte(name), xi) for xi in inputs]
    plans = dict(plan_all(pb.buffers, time_limit_s=1.0))
    plans["best"] = plan(pb.buffers, time_limit_s=1.0)
    assert set(plans) == {*ALGORITHMS, "best"}
    for algorithm, p in plans.items():
        data = apply_plan(pte(name), p)
        method = Program.load(data).method("forward")
        assert method.plan.non_const_buffer_sizes[1] == p.arena_bytes, algorithm
        for xi, expected in zip(inputs, reference, strict=True):
            (got,) = method.execute([xi])
            np.testing.assert_array_equal(np.array(got), expected, err_msg=f"{name} {algorithm}")


def test_the_runtime_rejects_a_plan_that_overlaps_live_buffers(problems):
    pb = problems["ic"]
    best = plan(pb.buffers)
    # put every buffer at offset 0: the runtime's verifier must refuse the file
    broken = Plan(
        {b: 0 for b in best.offsets}, best.arena_bytes, "all-at-zero", best.lower_bound, best.arenas
    )
    data = apply_plan(pte("ic"), broken)
    with pytest.raises(RefsimError, match="overlaps"):
        Program.load(data).method("forward")


def test_a_view_shares_its_base_buffer(problems):
    # IC's flatten before the FC: values[225] views values[211], no instruction of its own
    pb = problems["ic"]
    shared = [group for group in pb.members.values() if len(group) > 1]
    assert shared == [(211, 225)]
    (view_buffer,) = [b for b in pb.buffers if b.name == "v211"]
    assert (view_buffer.first, view_buffer.last) == (12, 13)  # pool writes it, the FC reads the view


FIXTURES = sorted((MODELS_DIR.parents[1] / "tests" / "fixtures" / "pte").rglob("*.pte"))


def random_inputs(method, rng):
    out = []
    for slot in method.inputs:
        if not hasattr(slot, "storage"):
            out.append(slot)
            continue
        dtype = slot.storage.dtype
        if dtype.kind == "f":
            out.append(rng.standard_normal(slot.sizes).astype(dtype))
        elif dtype.kind == "b":
            out.append(rng.integers(0, 2, slot.sizes).astype(dtype))
        else:
            out.append(rng.integers(-100, 100, slot.sizes).astype(dtype))
    return out


@pytest.mark.filterwarnings("ignore::Warning")
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_fixture_program_computes_the_same_in_the_best_plan(path):
    from refsim.pte import load_program

    pf = load_program(path)
    methods = [p.name for p in pf.program.execution_plan if p.chains and p.chains[0].instructions]
    for name in methods:
        try:
            reference = Program.load(path).method(name)
        except RefsimError as exc:  # an op refsim does not run: nothing to compare
            pytest.skip(f"{path.name}:{name}: {exc}")
        x = random_inputs(reference, np.random.default_rng(1))
        want = reference.execute(x)
        pb = read_program(pf, name)
        best = plan(pb.buffers, time_limit_s=0.5)
        assert best.arena_bytes <= pb.original_plan().arena_bytes
        got = Program.load(apply_plan(pf, best, name)).method(name).execute(x)
        for a, b in zip(want, got, strict=True):
            np.testing.assert_array_equal(np.asarray(b), np.asarray(a))
