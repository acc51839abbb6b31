"""refsim.testing.strategies: HypothesisRng answers like numpy's Generator (bounds, shapes,
dtypes, weights), and every function's strategy draws calls its golden adapter accepts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refsim.conformance import registry
from refsim.testing import strategies as rst


@given(st.data())
def test_integers_bounds_shapes_and_dtypes(data):
    rng = rst.HypothesisRng(data.draw)
    v = rng.integers(-3, 5)
    assert isinstance(v, np.int64) and -3 <= v < 5
    assert -3 <= rng.integers(-3, 5, endpoint=True) <= 5
    assert 0 <= rng.integers(7) < 7
    small = rng.integers(1, 4, 2)
    assert small.shape == (2,) and ((small >= 1) & (small < 4)).all()
    bulk = rng.integers(-128, 128, size=(3, 5), dtype=np.int16)
    assert bulk.shape == (3, 5) and bulk.dtype == np.int16
    assert 0.0 <= rng.random() < 1.0 and 2.0 <= rng.uniform(2.0, 3.0) < 3.0
    assert sorted(rng.permutation(4)) == [0, 1, 2, 3]


@given(st.data())
def test_weighted_choice_never_picks_a_zero_weight(data):
    rng = rst.HypothesisRng(data.draw)
    assert rng.choice(["a", "b", "c"], p=[0.0, 1.0, 0.0]) == "b"
    assert rng.choice(["a", "b", "c"], p=[0.5, 0.0, 0.5]) in ("a", "c")
    picks = rng.choice([1, 2, 3], 2, p=[0.2, 0.0, 0.8])
    assert picks.shape == (2,) and set(picks.tolist()) <= {1, 3}
    assert rng.choice([(1, 1), (2, 3)]).shape == (2,)  # rows, as numpy picks them


def test_the_budget_hands_long_rejection_loops_to_numpy():
    @settings(max_examples=5)
    @given(st.data())
    def loop(data):
        rng = rst.HypothesisRng(data.draw)
        while rng.integers(0, 1000) != 999:  # the simplest draw (0) alone would never end
            pass

    loop()


@settings(max_examples=3)
@pytest.mark.parametrize("function", rst.functions())
@given(data=st.data())
def test_every_strategy_draws_cases_with_golden_outputs(function, data):
    case = data.draw(rst.cases(function))
    assert case.params["function"] == function
    assert set(registry.get(function).arrays) <= set(case.arrays)
    np.testing.assert_array_equal(registry.get(function).run(case.arrays, case.params), case.output)


def test_limits_name_each_function():
    assert "50k MACs" in rst.limits("arm_convolve_wrapper_s8")
    assert rst.functions("elementwise") == ["arm_elementwise_add_s8", "arm_elementwise_mul_s8",
                                            "arm_maximum_s8", "arm_minimum_s8"]  # fmt: skip
