"""`Method.execute_batch` gives every sample the bits of one `Method.execute` call.

Across every program the repository ships (the bundled MLPerf Tiny programs and every op-family
fixture: cortex_m convs, depthwise, transpose, linear, batch matmul, pooling, elementwise, unary,
portable and fp32 ops), hypothesis draws the sample count, the worker count and the inputs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refsim.runtime import ExecutionError, Program, TensorRef
from refsim.runtime.batch import stack_size, stacked_runners
from refsim.runtime.stack import stack_refusal

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted(
    [*(ROOT / "examples" / "models").glob("*.pte"), *(ROOT / "tests" / "fixtures" / "pte").rglob("*.pte")]
)
_METHODS: dict[Path, object] = {}


def method_of(path: Path):
    if path not in _METHODS:
        _METHODS[path] = Program.load(path).method("forward")
    return _METHODS[path]


def draw_inputs(method, count: int, seed: int) -> list:
    """Random inputs with a leading sample axis: int8 over its whole range, floats normal (with an
    occasional NaN/inf, which must travel the same way), bools, small integers."""
    rng = np.random.default_rng(seed)
    inputs = []
    for slot in method.inputs:
        if not isinstance(slot, TensorRef):
            inputs.append(slot)
            continue
        shape = (count, *slot.sizes)
        if slot.dtype.kind == "f":
            x = rng.standard_normal(shape).astype(slot.dtype)
            if x.size and seed % 3 == 0:
                x.reshape(-1)[rng.integers(0, x.size, 2)] = [np.nan, np.inf]
        elif slot.dtype == np.bool_:
            x = rng.integers(0, 2, shape).astype(bool)
        else:
            info = np.iinfo(slot.dtype)
            x = rng.integers(max(info.min, -128), min(info.max, 127), shape, endpoint=True).astype(slot.dtype)
        inputs.append(x)
    return inputs


def test_every_fixture_is_found():
    assert len(PROGRAMS) >= 60, PROGRAMS  # guards the glob: an empty list would pass every test below


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: str(p.relative_to(ROOT)))
@settings(max_examples=4)
@given(count=st.integers(0, 9), workers=st.integers(1, 3), seed=st.integers(0, 2**16), stacked=st.booleans())
def test_batch_equals_single_runs(path, count, workers, seed, stacked):
    method = method_of(path)
    inputs = draw_inputs(method, count, seed)
    batched = method.execute_batch(inputs, workers=workers, stacked=stacked)
    assert len(batched) == len(method.outputs)
    for i in range(count):
        single = method.execute([x[i] if isinstance(x, np.ndarray) else x for x in inputs])
        for k, (b, s) in enumerate(zip(batched, single, strict=True)):
            if isinstance(s, np.ndarray):
                assert b.shape == (count, *s.shape) and b.dtype == s.dtype, (k, b.shape, s.shape)
                # the same computation, so the same bits: NaN where the single run has NaN
                np.testing.assert_array_equal(b[i], s, err_msg=f"sample {i} output{k}")
            else:
                assert b[i] == s


@pytest.mark.parametrize("path", sorted((ROOT / "examples" / "models").glob("*.pte")), ids=lambda p: p.stem)
def test_bundled_programs_stack(path):
    """The stacked path is the one the bundled programs take (so the test above exercises it), with
    stacks of more than one sample and a 70-sample batch (a short last chunk) still exact."""
    method = method_of(path)
    assert stack_refusal(method) is None
    (stack,) = stacked_runners(method, 1, stack_size(method, 70, 2))
    assert stack.size > 1
    inputs = draw_inputs(method, 70, 5)
    (out,) = method.execute_batch(inputs, workers=2)
    for i in range(0, 70, 13):
        np.testing.assert_array_equal(out[i], method.execute([inputs[0][i]])[0])


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("cm_binary", "quantized_div.out (instruction 3): not among"),
        ("cm_pooling", "a broadcast or constant"),
    ],
)
def test_programs_that_do_not_stack_say_why(name, reason):
    assert reason in stack_refusal(method_of(ROOT / "tests" / "fixtures" / "pte" / f"{name}.pte"))


def test_zero_samples_give_empty_outputs():
    method = method_of(ROOT / "examples" / "models" / "kws.pte")
    (out,) = method.execute_batch([np.zeros((0, 1, 1, 49, 10), np.int8)])
    assert out.shape == (0, 1, 12) and out.dtype == np.int8


def test_batch_leaves_the_methods_own_arenas_alone():
    method = Program.load(ROOT / "examples" / "models" / "ic.pte").method()
    before = [bytes(a) for a in method.arenas]
    method.execute_batch(draw_inputs(method, 5, 1), workers=2)
    assert [bytes(a) for a in method.arenas] == before


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ([], "takes 1 inputs, got 0"),
        ([np.zeros((3, 1, 49, 10), np.int8)], "expected shape [N, 1, 1, 49, 10]"),
        ([np.zeros((3, 1, 1, 49, 10), np.float32)], "expected dtype int8"),
        ([np.zeros((1, 49, 10), np.int8)], "a leading sample axis"),
    ],
)
def test_bad_batches_are_refused(inputs, message):
    method = method_of(ROOT / "examples" / "models" / "kws.pte")
    with pytest.raises(ExecutionError, match=None) as info:
        method.execute_batch(inputs)
    assert message in str(info.value)


def test_progress_counts_every_sample():
    method = method_of(ROOT / "examples" / "models" / "ad.pte")
    seen = []
    method.execute_batch(draw_inputs(method, 37, 2), workers=2, progress=seen.append)
    assert sum(seen) == 37
