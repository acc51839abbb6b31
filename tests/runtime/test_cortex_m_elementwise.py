"""cortex_m add/sub, mul, div, maximum, minimum and the LUT activation, op by op.

Each test writes a one-op program with `ProgramBuilder` (refsim's writer), loads it with
`refsim.runtime.Program` and compares the output with kernels_py called directly on the
logical inputs, so the op module's unpacking (zero points to offsets, memory order, channel
broadcast, parameter routing) is what is checked. `ProgramBuilder` is shared with
test_cortex_m_misc.py and test_portable.py.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernels_py import activation, elementwise
from kernels_py.fixedpoint import elementwise_add_params, quantize_multiplier
from refsim.ops.cortex_m_elementwise import LayoutWarning, quantized_div, quantized_div_reference
from refsim.ops.registry import OpError
from refsim.pte import (
    Allocation,
    Bool,
    Chain,
    Double,
    ExecutionPlan,
    Int,
    IntList,
    KernelCall,
    Null,
    Operator,
    Program,
    ScalarType,
    Tensor,
    TensorList,
    write_program,
)
from refsim.runtime import Method
from refsim.runtime import Program as RuntimeProgram

NHWC = (0, 2, 3, 1)
I8 = ScalarType.INT8


# --- a tiny program builder ---------------------------------------------------------------------


@dataclass(frozen=True)
class T:
    """A tensor value of a program being built."""

    index: int
    dtype: ScalarType
    sizes: tuple[int, ...]
    dim_order: tuple[int, ...]


class ProgramBuilder:
    """Writes one-method programs: planned tensors get their own bytes in arena 1."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.constants: list[bytes] = [b""]
        self.operators: list[Operator] = []
        self.instructions: list[KernelCall] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.arena = 0

    def _add(self, value: Any) -> int:
        self.values.append(value)
        return len(self.values) - 1

    def tensor(self, dtype: ScalarType, sizes, dim_order=None) -> T:
        sizes = tuple(int(s) for s in sizes)
        dim_order = tuple(range(len(sizes))) if dim_order is None else tuple(dim_order)
        meta = Tensor(dtype, sizes, dim_order, allocation=Allocation(1, self.arena))
        self.arena += -(-max(meta.nbytes, 1) // 16) * 16
        return T(self._add(meta), dtype, sizes, dim_order)

    def input(self, dtype: ScalarType, sizes, dim_order=None) -> T:
        t = self.tensor(dtype, sizes, dim_order)
        self.inputs.append(t.index)
        return t

    def constant(self, data: np.ndarray, dtype: ScalarType, dim_order=None) -> T:
        """A constant given in logical shape, stored in ``dim_order``."""
        array = np.asarray(data).astype(dtype.numpy_dtype)
        dim_order = tuple(range(array.ndim)) if dim_order is None else tuple(dim_order)
        self.constants.append(np.ascontiguousarray(array.transpose(dim_order)).tobytes())
        meta = Tensor(dtype, array.shape, dim_order, data_buffer_idx=len(self.constants) - 1)
        return T(self._add(meta), dtype, array.shape, dim_order)

    def value(self, v: Any) -> int:
        if isinstance(v, T):
            return v.index
        if v is None:
            return self._add(Null())
        if isinstance(v, bool):
            return self._add(Bool(v))
        if isinstance(v, int):
            return self._add(Int(int(v)))
        if isinstance(v, float):
            return self._add(Double(v))
        if isinstance(v, list | tuple) and v and all(isinstance(x, T) for x in v):
            return self._add(TensorList(tuple(x.index for x in v)))
        if isinstance(v, list | tuple):
            return self._add(IntList(tuple(self._add(Int(int(x))) for x in v)))
        raise TypeError(f"no EValue for {v!r}")

    def call(self, op: str, *args: Any, out: T) -> T:
        name, overload = op.rsplit(".", 1)
        operator = Operator(name, overload)
        if operator not in self.operators:
            self.operators.append(operator)
        indices = tuple(self.value(a) for a in args)
        self.instructions.append(KernelCall(self.operators.index(operator), (*indices, out.index, out.index)))
        return out

    def output(self, *tensors: T) -> None:
        self.outputs.extend(t.index for t in tensors)

    def build(self) -> bytes:
        plan = ExecutionPlan(
            "forward",
            values=tuple(self.values),
            inputs=tuple(self.inputs),
            outputs=tuple(self.outputs),
            chains=(Chain(tuple(self.inputs), tuple(self.outputs), tuple(self.instructions)),),
            operators=tuple(self.operators),
            non_const_buffer_sizes=(0, max(self.arena, 16)),
        )
        return write_program(Program((plan,)), self.constants)

    def method(self) -> Method:
        return RuntimeProgram.load(self.build()).method("forward")


def run(builder: ProgramBuilder, *inputs: np.ndarray) -> list[np.ndarray]:
    return builder.method().execute(list(inputs))


def int8(rng: np.random.Generator, shape) -> np.ndarray:
    return rng.integers(-128, 128, shape).astype(np.int8)


def to_nhwc(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(NHWC))


def from_nhwc(x: np.ndarray) -> np.ndarray:
    return x.transpose(0, 3, 1, 2)


# --- quantized_add / sub -------------------------------------------------------------------------

ADD = "cortex_m::quantized_add.out"
MUL = "cortex_m::quantized_mul.out"


def _add_params(s1: float, s2: float, so: float, negate: bool = False) -> dict:
    """Multipliers as ExecuTorch's ``_get_add_replacement`` makes them (via kernels_py)."""
    p = elementwise_add_params(s1, s2, so)
    if negate:
        p["input_2_mult"] = -p["input_2_mult"]
    return p


def _add_program(shape_x, shape_y, dim_order_x, dim_order_y, out_shape, out_order, p, zps, act=(-128, 127)):
    b = ProgramBuilder()
    x = b.input(I8, shape_x, dim_order_x)
    y = b.input(I8, shape_y, dim_order_y)
    out = b.tensor(I8, out_shape, out_order)
    b.call(
        ADD, x, zps[0], p["input_1_mult"], p["input_1_shift"], y, zps[1], p["input_2_mult"], p["input_2_shift"],
        zps[2], p["out_mult"], p["out_shift"], act[0], act[1], out=out,
    )  # fmt: skip
    b.output(out)
    return b


def _expected_add(x, y, p, zps, act=(-128, 127)):
    return elementwise.elementwise_add_s8(
        x, y,
        input_1_offset=-zps[0], input_1_mult=p["input_1_mult"], input_1_shift=p["input_1_shift"],
        input_2_offset=-zps[1], input_2_mult=p["input_2_mult"], input_2_shift=p["input_2_shift"],
        left_shift=20, out_offset=zps[2], out_mult=p["out_mult"], out_shift=p["out_shift"],
        out_activation_min=act[0], out_activation_max=act[1],
    )  # fmt: skip


@pytest.mark.parametrize("negate", [False, True], ids=["add", "sub"])
def test_add_and_sub_channels_last(negate):
    rng = np.random.default_rng(1)
    shape = (2, 5, 3, 4)
    p = _add_params(0.02, 0.035, 0.04, negate)
    zps, act = (-3, 17, 5), (-100, 90)
    b = _add_program(shape, shape, NHWC, NHWC, shape, NHWC, p, zps, act)
    x, y = int8(rng, shape), int8(rng, shape)
    (got,) = run(b, x, y)
    np.testing.assert_array_equal(got, _expected_add(x, y, p, zps, act))
    if negate:  # sub is add with the second multiplier negated: x - y, not y - x
        swapped = _expected_add(y, x, p, (zps[1], zps[0], zps[2]), act)
        assert not np.array_equal(got, swapped)


@pytest.mark.parametrize("big_first", [True, False])
def test_add_channel_broadcast(big_first):
    """[N, C, H, W] channels-last against a [1, C, 1, 1] vector: each pixel's C bytes meet the
    vector (ExecuTorch swaps the operands and their parameters when the vector comes first)."""
    rng = np.random.default_rng(2)
    big, small = (1, 6, 3, 2), (1, 6, 1, 1)
    p = _add_params(0.05, 0.01, 0.03)
    zps = (4, -9, -2)
    shapes = (big, small) if big_first else (small, big)
    orders = (NHWC, (0, 1, 2, 3)) if big_first else ((0, 1, 2, 3), NHWC)
    b = _add_program(shapes[0], shapes[1], orders[0], orders[1], big, NHWC, p, zps)
    x, y = int8(rng, shapes[0]), int8(rng, shapes[1])
    (got,) = run(b, x, y)
    np.testing.assert_array_equal(got, _expected_add(x, y, p, zps))


def test_add_same_sizes_different_layouts_is_bytewise_and_warns():
    """The kernel adds bytes: with self NHWC and other NCHW, refsim does what the device does
    (pairs the i-th bytes) and says so with a LayoutWarning."""
    rng = np.random.default_rng(3)
    shape = (1, 3, 2, 2)
    p = _add_params(0.02, 0.02, 0.04)
    zps = (0, 0, 0)
    b = _add_program(shape, shape, NHWC, (0, 1, 2, 3), shape, NHWC, p, zps)
    with pytest.warns(LayoutWarning, match="quantized_add.out"):
        method = b.method()
    x, y = int8(rng, shape), int8(rng, shape)
    (got,) = method.execute([x, y])
    device = _expected_add(to_nhwc(x).reshape(-1), y.reshape(-1), p, zps)
    np.testing.assert_array_equal(to_nhwc(got).reshape(-1), device)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("zp1", 128, "self_zero_point must be in \\[-128, 127\\]"),
        ("mult", -(2**31), "self_multiplier must be in"),
        ("shift", 31, "self_shift must be in \\[-31, 30\\]"),
        ("act", (10, -10), "activation_min/activation_max"),
    ],
)
def test_add_validator_rejects_parameters(field, value, message):
    p = _add_params(0.02, 0.02, 0.04)
    zps, act = [0, 0, 0], (-128, 127)
    if field == "zp1":
        zps[0] = value
    elif field == "mult":
        p["input_1_mult"] = value
    elif field == "shift":
        p["input_1_shift"] = value
    else:
        act = value
    b = _add_program((1, 2, 2, 2), (1, 2, 2, 2), NHWC, NHWC, (1, 2, 2, 2), NHWC, p, zps, act)
    with pytest.raises(OpError, match=message):
        b.method()


def test_add_validator_rejects_general_broadcast_and_wrong_out():
    p = _add_params(0.02, 0.02, 0.04)
    b = _add_program((1, 2, 3, 3), (1, 1, 3, 3), NHWC, NHWC, (1, 2, 3, 3), NHWC, p, (0, 0, 0))
    with pytest.raises(OpError, match="equal sizes, or a 4-D channel broadcast"):
        b.method()
    b = _add_program((1, 2, 3, 3), (1, 2, 1, 1), NHWC, None, (1, 2, 3, 1), None, p, (0, 0, 0))
    with pytest.raises(OpError, match=r"out must be sizes \[1, 2, 3, 3\]"):
        b.method()


# --- quantized_mul -------------------------------------------------------------------------------


def _mul_program(shape_x, shape_y, order_x, order_y, out_shape, zps, mult, shift):
    b = ProgramBuilder()
    x = b.input(I8, shape_x, order_x)
    y = b.input(I8, shape_y, order_y)
    out = b.tensor(I8, out_shape, order_x if len(out_shape) == len(shape_x) else None)
    b.call(MUL, x, zps[0], y, zps[1], zps[2], mult, shift, out=out)
    b.output(out)
    return b


@pytest.mark.parametrize(
    ("shape_x", "shape_y", "order"),
    [((2, 3, 4, 5), (2, 3, 4, 5), NHWC), ((7,), (7,), (0,)), ((1, 4, 3, 3), (1, 4, 1, 1), NHWC)],
    ids=["nhwc", "1d", "channel-broadcast"],
)
def test_mul(shape_x, shape_y, order):
    rng = np.random.default_rng(4)
    mult, shift = quantize_multiplier(0.02 * 0.03 / 0.05)
    zps = (-7, 12, 3)
    order_y = order if shape_y == shape_x else None
    b = _mul_program(shape_x, shape_y, order, order_y, shape_x, zps, mult, shift)
    x, y = int8(rng, shape_x), int8(rng, shape_y)
    (got,) = run(b, x, y)
    expected = elementwise.elementwise_mul_s8(
        x, y, input_1_offset=-zps[0], input_2_offset=-zps[1], out_offset=zps[2],
        out_mult=mult, out_shift=shift, out_activation_min=-128, out_activation_max=127,
    )  # fmt: skip
    np.testing.assert_array_equal(got, expected)


# --- quantized_div -------------------------------------------------------------------------------

DIV = "cortex_m::quantized_div.out"


def _div_program(shape, dtype, zps, scale, order=None):
    b = ProgramBuilder()
    x = b.input(dtype, shape, order)
    y = b.input(dtype, shape, order)
    out = b.tensor(dtype, shape, order)
    b.call(DIV, x, zps[0], y, zps[1], zps[2], float(scale), out=out)
    b.output(out)
    return b


@pytest.mark.parametrize("dtype", [ScalarType.INT8, ScalarType.INT16])
def test_div_matches_the_plain_loop_definition(dtype):
    rng = np.random.default_rng(5)
    info = np.iinfo(dtype.numpy_dtype)
    shape = (1, 3, 4, 2)
    zps = (3, -5, 1) if dtype is ScalarType.INT8 else (30, -500, 10)
    scale = 0.73 if dtype is ScalarType.INT8 else 1.9
    b = _div_program(shape, dtype, zps, scale, NHWC)
    x = rng.integers(info.min, info.max + 1, shape).astype(dtype.numpy_dtype)
    y = rng.integers(info.min, info.max + 1, shape).astype(dtype.numpy_dtype)
    y.reshape(-1)[:3] = zps[1]  # zero denominators give the output zero point
    (got,) = run(b, x, y)
    expected = quantized_div_reference(
        x,
        y,
        input_1_zero_point=zps[0],
        input_2_zero_point=zps[1],
        output_zero_point=zps[2],
        output_scale=scale,
    )
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got.reshape(-1)[:3], zps[2])


def test_div_rounds_half_away_from_zero():
    """std::round, not torch.round: 1/2 -> 1 and -1/2 -> -1 (ExecuTorch's Python reference
    gives 0 for both)."""
    x = np.array([1, -1, 3, -3, 5], np.int8)
    y = np.array([2, 2, 2, 2, 2], np.int8)
    (got,) = run(_div_program((5,), ScalarType.INT8, (0, 0, 0), 1.0), x, y)
    np.testing.assert_array_equal(got, [1, -1, 2, -2, 3])


@given(
    st.lists(st.integers(-128, 127), min_size=1, max_size=40),
    st.integers(-128, 127),
    st.integers(-128, 127),
    st.integers(-128, 127),
    st.floats(1e-4, 100.0),
)
def test_div_fast_path_equals_reference(values, zp1, zp2, zp_out, scale):
    x = np.array(values, np.int8)
    y = np.roll(x, 1)
    kwargs = dict(
        input_1_zero_point=zp1, input_2_zero_point=zp2, output_zero_point=zp_out, output_scale=scale
    )
    np.testing.assert_array_equal(quantized_div(x, y, **kwargs), quantized_div_reference(x, y, **kwargs))


def test_div_validator():
    with pytest.raises(OpError, match="output_scale must be finite and small enough"):
        _div_program((4,), ScalarType.INT8, (0, 0, 0), 2.0**25).method()
    with pytest.raises(OpError, match="out must be int8 or int16"):
        b = ProgramBuilder()
        x, y, out = (b.input(ScalarType.INT32, (4,)) for _ in range(3))
        b.call(DIV, x, 0, y, 0, 0, 1.0, out=out)
        b.method()
    with pytest.raises(OpError, match="output_zero_point must be in \\[-128, 127\\]"):
        _div_program((4,), ScalarType.INT8, (0, 0, 300), 1.0).method()


# --- maximum / minimum ---------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize(
    ("shape_x", "shape_y", "order"),
    [
        ((2, 3, 4, 5), (2, 3, 4, 5), NHWC),
        ((2, 1, 2), (1, 2, 1), None),
        ((1, 2, 3, 1), (4, 1, 1, 3), None),
        ((1, 4, 3, 3), (), NHWC),
    ],
    ids=["same-nhwc", "broadcast-3d", "broadcast-4d", "scalar-nhwc"],
)
def test_extremum(op, shape_x, shape_y, order):
    rng = np.random.default_rng(6)
    out_shape = np.broadcast_shapes(shape_x, shape_y)
    b = ProgramBuilder()
    x = b.input(I8, shape_x, order)
    y = b.input(I8, shape_y, order if shape_y == shape_x else None)
    out = b.tensor(I8, out_shape, order if out_shape == shape_x else None)
    b.call(f"cortex_m::{op}.out", x, y, out=out)
    b.output(out)
    xs, ys = int8(rng, shape_x), int8(rng, shape_y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LayoutWarning)
        (got,) = run(b, xs, ys)
    np.testing.assert_array_equal(got, getattr(np, op)(xs, ys))


def test_extremum_with_contiguous_out_from_channels_last_inputs_is_bytewise():
    """ExecuTorch 1.5.1 plans cortex_m::maximum's output contiguous while its inputs are
    channels-last (cm_binary.pte): the device writes NHWC bytes under an NCHW dim order."""
    rng = np.random.default_rng(7)
    shape = (1, 4, 3, 3)
    b = ProgramBuilder()
    x, y = b.input(I8, shape, NHWC), b.input(I8, shape, NHWC)
    out = b.tensor(I8, shape)
    b.call("cortex_m::maximum.out", x, y, out=out)
    b.output(out)
    with pytest.warns(LayoutWarning, match="maximum.out"):
        method = b.method()
    xs, ys = int8(rng, shape), int8(rng, shape)
    (got,) = method.execute([xs, ys])
    np.testing.assert_array_equal(got.reshape(-1), np.maximum(to_nhwc(xs), to_nhwc(ys)).reshape(-1))


def test_extremum_validator():
    def program(shape_x, shape_y, out_shape, dtype=I8):
        b = ProgramBuilder()
        x, y = b.input(dtype, shape_x), b.input(dtype, shape_y)
        b.call("cortex_m::minimum.out", x, y, out=b.tensor(dtype, out_shape))
        return b

    with pytest.raises(OpError, match=r"int8 \(ExecuTorch 1\.5\.1's cortex_m kernel"):
        program((2, 2), (2, 2), (2, 2), ScalarType.INT32).method()
    with pytest.raises(OpError, match="broadcastable with self"):
        program((2, 3), (2, 2), (2, 3)).method()
    with pytest.raises(OpError, match=r"out must be sizes \[2, 3\]"):
        program((2, 3), (1, 3), (1, 3)).method()
    with pytest.raises(OpError, match="at most 4-D"):
        program((2, 1, 1, 1, 3), (2, 1, 1, 1, 3), (2, 1, 1, 1, 3)).method()
    # one element per row with H >= 2 against W >= 2: CMSIS-NN's walk reads the wrong bytes
    with pytest.raises(OpError, match="broadcast walk"):
        program((1, 3, 1, 1), (1, 1, 2, 1), (1, 3, 2, 1)).method()


# --- quantized_activation (LUT) ------------------------------------------------------------------


@pytest.mark.parametrize("fn", ["sigmoid", "tanh"])
def test_lut_activation(fn):
    rng = np.random.default_rng(8)
    table = activation.build_activation_lut(
        fn, 0.05, -3, 1 / 256 if fn == "sigmoid" else 1 / 128, -128 if fn == "sigmoid" else 0
    )
    shape = (1, 3, 5, 2)
    b = ProgramBuilder()
    x = b.input(I8, shape, NHWC)
    lut = b.constant(table, I8)
    out = b.tensor(I8, shape, NHWC)
    b.call("cortex_m::quantized_activation.out", x, lut, out=out)
    b.output(out)
    xs = int8(rng, shape)
    xs.reshape(-1)[:2] = (-128, 127)
    (got,) = run(b, xs)
    np.testing.assert_array_equal(got, table[xs.astype(np.int32) + 128])
    y = math.tanh(0.05 * (xs.reshape(-1)[5] + 3)) if fn == "tanh" else None
    if y is not None:  # the table is the function, rounded once
        assert abs(int(got.reshape(-1)[5]) - y * 128) <= 0.5 + 1e-9 or abs(y * 128) > 127


def test_lut_validator():
    b = ProgramBuilder()
    x = b.input(I8, (4,))
    lut = b.constant(np.zeros(128), I8)
    b.call("cortex_m::quantized_activation.out", x, lut, out=b.tensor(I8, (4,)))
    with pytest.raises(OpError, match="lut must be 256 entries"):
        b.method()
