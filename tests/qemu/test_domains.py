"""Argument domains CMSIS-NN accepts, drawn by hypothesis, through kernels_c on every core and tier
and through the golden model, bit for bit.

- ``arm_avgpool_s8`` / ``arm_max_pool_s8``: every image of ``input_dims.n`` (1..3), CMSIS-NN's
  batch loop (v6.0.0 and later);
- ``arm_transpose_s8``: ``num_dims`` 1..4 with the unused trailing dims 1 or 0 (CMSIS-NN reads
  none of them; its own unit tests pass 0);
- zero sizes: ``block_size`` 0 (elementwise), ``size`` 0 (ReLU6), ``num_rows`` 0 (softmax), an
  empty batch ``input_dims.n`` 0 (fully connected): CMSIS-NN writes nothing and returns
  ARM_CMSIS_NN_SUCCESS.

One hypothesis example is a list of such calls run on one sampled core in ONE QEMU start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from refsim.conformance import registry
from refsim.conformance.registry import put_dims
from refsim.qemu import CORES
from tests.qemu.differential import assert_no_failures, golden, run_on_core

AVGPOOL, MAX_POOL, TRANSPOSE = "arm_avgpool_s8", "arm_max_pool_s8", "arm_transpose_s8"


@dataclass(frozen=True)
class Call:
    """One conformance-vector call: function, arrays, params, label."""

    function: str
    arrays: dict[str, np.ndarray]
    params: dict[str, Any]
    label: str

    def run(self, arrays: dict[str, np.ndarray] | None = None, **params: Any) -> np.ndarray:
        """The golden output (optionally with other arrays or params)."""
        return np.asarray(registry.get(self.function).run(arrays or self.arrays, {**self.params, **params}))


@st.composite
def pool_batches(draw: st.DrawFn) -> Call:
    function = draw(st.sampled_from([AVGPOOL, MAX_POOL]))
    n, c = draw(st.integers(1, 3)), draw(st.integers(1, 20))
    k_h, k_w = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    s_h, s_w = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    in_h, in_w = draw(st.integers(k_h, 9)), draw(st.integers(k_w, 9))
    out_h, out_w = (in_h - k_h) // s_h + 1, (in_w - k_w) // s_w + 1  # VALID: every window inside
    seed = draw(st.integers(0, 2**32 - 1))
    data = np.random.default_rng(seed).integers(-128, 128, (n, in_h, in_w, c)).astype(np.int8)
    lo = draw(st.integers(-128, 127))
    params = {
        "function": function,
        "stride.h": s_h,
        "stride.w": s_w,
        "padding.h": 0,
        "padding.w": 0,
        "activation.min": lo,
        "activation.max": draw(st.integers(lo, 127)),
        "filter_dims.n": 1,
        "filter_dims.h": k_h,
        "filter_dims.w": k_w,
        "filter_dims.c": 1,
    }
    put_dims(params, "input_dims", (n, in_h, in_w, c))
    put_dims(params, "output_dims", (n, out_h, out_w, c))
    return Call(function, {"input": data}, params, f"{function} n={n} {in_h}x{in_w}x{c} k={k_h}x{k_w}")


@st.composite
def transposes(draw: st.DrawFn) -> Call:
    num_dims = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=num_dims, max_size=num_dims)))
    if num_dims == 2:
        perm = [1, 0]  # CMSIS-NN's 2-D branch always transposes (docs/numerics.md)
    else:
        perm = list(draw(st.permutations(range(num_dims))))
    unused = draw(st.sampled_from([0, 1]))
    params = {"function": TRANSPOSE, "num_dims": num_dims, "permutations": perm}
    for prefix, dims in (("input_dims", shape), ("output_dims", tuple(shape[p] for p in perm))):
        for key, value in zip("nhwc", (*dims, unused, unused, unused)[:4], strict=True):
            params[f"{prefix}.{key}"] = value
    data = np.arange(int(np.prod(shape)), dtype=np.int64).astype(np.int8).reshape(shape)
    return Call(TRANSPOSE, {"input": data}, params, f"transpose {shape} {perm} unused={unused}")


#: Zero-size calls: the size params set to 0, and which arrays become empty.
ZERO_SIZES: dict[str, tuple[dict[str, int], tuple[str, ...]]] = {
    "arm_elementwise_add_s8": ({"block_size": 0}, ("input_1", "input_2")),
    "arm_elementwise_mul_s8": ({"block_size": 0}, ("input_1", "input_2")),
    "arm_relu6_s8": ({"size": 0}, ("input",)),
    "arm_softmax_s8": ({"num_rows": 0}, ("input",)),
    "arm_fully_connected_s8": ({"input_dims.n": 0, "output_dims.n": 0}, ("input",)),
    "arm_fully_connected_per_channel_s8": ({"input_dims.n": 0, "output_dims.n": 0}, ("input",)),
}


@st.composite
def zero_sizes(draw: st.DrawFn) -> Call:
    function = draw(st.sampled_from(sorted(ZERO_SIZES)))
    arrays, params = registry.get(function).generate(np.random.default_rng(draw(st.integers(0, 1000))))
    sizes, emptied = ZERO_SIZES[function]
    arrays = {k: (v[:0] if k in emptied else v) for k, v in arrays.items()}
    return Call(function, arrays, {**params, **sizes}, f"{function} {sizes}")


@settings(max_examples=12)
@given(
    core=st.sampled_from(list(CORES)),
    calls=st.lists(st.one_of(pool_batches(), transposes(), zero_sizes()), min_size=1, max_size=8),
)
def test_domains_cmsis_nn_accepts_match_on_every_tier(core: str, calls: list[Call], toolchain: None) -> None:
    goldens = [golden(c.function, c.arrays, c.params, c.label) for c in calls]
    results = run_on_core(core, goldens)
    for function in {c.function for c in calls}:
        assert_no_failures(core, results, function)


@given(pool_batches())
def test_pooling_a_batch_is_pooling_each_image(call: Call) -> None:
    """Golden layer: a batch of N images is the N single-image calls, stacked (CMSIS-NN's loop)."""
    images = call.arrays["input"]
    one = {"input_dims.n": 1, "output_dims.n": 1}
    stacked = np.concatenate([call.run({"input": images[i : i + 1]}, **one) for i in range(len(images))])
    np.testing.assert_array_equal(call.run(), stacked)


@given(transposes())
def test_transpose_ignores_the_unused_dims(call: Call) -> None:
    """Golden layer: the fill of the dims past num_dims (0 or 1) changes nothing."""
    num_dims = call.params["num_dims"]
    refill = {
        f"{prefix}.{key}": 1 - call.params[f"{prefix}.{key}"]
        for prefix in ("input_dims", "output_dims")
        for key in "nhwc"[num_dims:]
    }
    np.testing.assert_array_equal(call.run(**refill), call.run())
    np.testing.assert_array_equal(call.run(), np.transpose(call.arrays["input"], call.params["permutations"]))
