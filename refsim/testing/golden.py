"""The golden model called the way C calls CMSIS-NN: one Python function per CMSIS-NN function,
with the same name and the same arguments in the same order, its structs as plain Python values.

    from refsim.testing import golden as g

    out = g.arm_convolve_s8(
        None,                                           # ctx: scratch never changes a result
        g.cmsis_nn_conv_params(input_offset=128, output_offset=-3, stride=g.cmsis_nn_tile(w=2, h=2)),
        g.cmsis_nn_per_channel_quant_params(multiplier=mult, shift=shift),
        g.cmsis_nn_dims(1, 8, 8, 3), input_data,
        g.cmsis_nn_dims(4, 3, 3, 3), filter_data,
        g.cmsis_nn_dims(1, 1, 1, 4), bias_data,
        None,                                           # upscale_dims (unused, as in CMSIS-NN)
        g.cmsis_nn_dims(1, 3, 3, 4),
    )                                                   # -> int8 array in output_dims' NHWC shape

A struct is the dataclass of the same name (fields as in ``arm_nn_types.h``), a ``dict`` with
those keys (nested structs as dicts), or for dims a 4-tuple ``(n, h, w, c)``. Arrays are numpy
arrays in CMSIS-NN's layout (flat or shaped). The output pointer keeps its place in C's list and
may be ``None`` (or left out when the arguments after it are passed by keyword): given, the result
is written into it; the result is always returned. ``ctx`` and unused arguments may be ``None``
too. A NULL pointer is ``None`` (``bias_data=None``: no bias). Instead of ``arm_cmsis_nn_status``, arguments CMSIS-NN would
refuse raise :class:`~kernels_py.errors.KernelArgumentError` naming the argument.

Each call is flattened into a conformance vector (shared VECTORS.md names) and run by the same
adapter ``refsim conformance`` runs (:mod:`refsim.conformance.registry`, onto kernels_py), so the
numbers are the golden model's by construction. :func:`to_case` gives that vector, to save
(:func:`refsim.conformance.vectors.write_case`) or to run under QEMU.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernels_py.types import (
    Activation,
    BmmParams,
    ConvParams,
    Dims,
    DwConvParams,
    FcParams,
    PerChannelQuantParams,
    PerTensorQuantParams,
    PoolParams,
    Tile,
    TransposeConvParams,
)
from refsim.conformance import registry
from refsim.conformance import vectors as vec
from refsim.errors import VectorError

# --- the structs of arm_nn_types.h -----------------------------------------------------------------
# Under their C names (a C programmer reads them as the same thing): kernels_py's dataclasses, whose
# fields are CMSIS-NN's own; defaults are the identity values. The two kernels_py has no use for
# (a scratch buffer, the transpose's permutation list) are here.

cmsis_nn_tile = Tile
cmsis_nn_dims = Dims
cmsis_nn_activation = Activation
cmsis_nn_conv_params = ConvParams
cmsis_nn_transpose_conv_params = TransposeConvParams
cmsis_nn_dw_conv_params = DwConvParams
cmsis_nn_pool_params = PoolParams
cmsis_nn_fc_params = FcParams
cmsis_nn_bmm_params = BmmParams
cmsis_nn_per_channel_quant_params = PerChannelQuantParams
cmsis_nn_per_tensor_quant_params = PerTensorQuantParams


@dataclass(frozen=True)
class cmsis_nn_context:
    """Scratch memory; the golden model needs none (any value, or None, is accepted)."""

    buf: Any = None
    size: int = 0


@dataclass(frozen=True)
class cmsis_nn_transpose_params:
    num_dims: int
    permutations: Sequence[int]


# --- signatures ----------------------------------------------------------------------------------
# One entry per C argument, in the order of arm_nnfunctions.h: (C name, kind, vector name).
#   ctx     context, ignored          struct  fields flattened without prefix (conv_params ...)
#   quant   per-channel quant: arrays multiplier, shift
#   dims    flattened as "<C name>.n" ...          in   an input array, stored as <vector name>
#   out     the output pointer (optional)         scalar  a plain parameter
#   unused  an argument CMSIS-NN ignores (arm_convolve_s8's upscale_dims)

Arg = tuple[str, str, str]
_CTX: Arg = ("ctx", "ctx", "")


def _conv(params: str) -> tuple[Arg, ...]:
    return (
        (params, "struct", ""), ("quant_params", "quant", ""),
        ("input_dims", "dims", ""), ("input_data", "in", "input"),
        ("filter_dims", "dims", ""), ("filter_data", "in", "filter"),
        ("bias_dims", "dims", ""), ("bias_data", "in", "bias"),
    )  # fmt: skip


def _dw() -> tuple[Arg, ...]:
    return (
        _CTX, ("dw_conv_params", "struct", ""), ("quant_params", "quant", ""),
        ("input_dims", "dims", ""), ("input", "in", "input"), ("filter_dims", "dims", ""), ("filter", "in", "filter"),
        ("bias_dims", "dims", ""), ("bias", "in", "bias"), ("output_dims", "dims", ""), ("output", "out", ""),
    )  # fmt: skip


def _fc(quant: str) -> tuple[Arg, ...]:
    return (
        _CTX, ("fc_params", "struct", ""), ("quant_params", quant, ""),
        *_conv("")[2:], ("output_dims", "dims", ""), ("output_data", "out", ""),
    )  # fmt: skip


_OUT: tuple[Arg, ...] = (("output_dims", "dims", ""), ("output_data", "out", ""))
_POOL: tuple[Arg, ...] = (
    _CTX, ("pool_params", "struct", ""), ("input_dims", "dims", ""), ("src", "in", "input"),
    ("filter_dims", "dims", ""), ("output_dims", "dims", ""), ("dst", "out", ""),
)  # fmt: skip
_MINMAX: tuple[Arg, ...] = (
    _CTX, ("input_1_data", "in", "input_1"), ("input_1_dims", "dims", ""), ("input_2_data", "in", "input_2"),
    ("input_2_dims", "dims", ""), ("output_data", "out", ""), ("output_dims", "dims", ""),
)  # fmt: skip


def _scalars(*names: str) -> tuple[Arg, ...]:
    return tuple((name, "scalar", "") for name in names)


SIGNATURES: dict[str, tuple[Arg, ...]] = {
    "arm_convolve_s8": (_CTX, *_conv("conv_params"), ("upscale_dims", "unused", ""), *_OUT),
    **{
        name: (_CTX, *_conv("conv_params"), *_OUT)
        for name in ("arm_convolve_wrapper_s8", "arm_convolve_1x1_s8_fast", "arm_convolve_1x1_s8", "arm_convolve_1_x_n_s8")
    },
    "arm_transpose_conv_s8": (_CTX, ("output_ctx", "ctx", ""), *_conv("transpose_conv_params"), *_OUT),
    "arm_transpose_conv_wrapper_s8": (_CTX, ("reverse_conv_ctx", "ctx", ""), *_conv("transpose_conv_params"), *_OUT),
    **{
        name: _dw()
        for name in ("arm_depthwise_conv_wrapper_s8", "arm_depthwise_conv_s8", "arm_depthwise_conv_3x3_s8", "arm_depthwise_conv_s8_opt")
    },
    "arm_fully_connected_s8": _fc("struct"),
    "arm_fully_connected_per_channel_s8": _fc("quant"),
    "arm_batch_matmul_s8": (
        _CTX, ("bmm_params", "struct", ""), ("quant_params", "struct", ""),
        ("input_lhs_dims", "dims", ""), ("input_lhs", "in", "input_lhs"),
        ("input_rhs_dims", "dims", ""), ("input_rhs", "in", "input_rhs"),
        ("output_dims", "dims", ""), ("output", "out", ""),
    ),
    "arm_vector_sum_s8": (
        ("vector_sum_buf", "out", ""), *_scalars("vector_cols", "vector_rows"),
        ("vector_data", "in", "vector_data"), *_scalars("lhs_offset", "rhs_offset"), ("bias_data", "in", "bias_data"),
    ),
    "arm_avgpool_s8": _POOL,
    "arm_max_pool_s8": _POOL,
    "arm_elementwise_add_s8": (
        ("input_1_vect", "in", "input_1"), ("input_2_vect", "in", "input_2"),
        *_scalars("input_1_offset", "input_1_mult", "input_1_shift", "input_2_offset", "input_2_mult",
                  "input_2_shift", "left_shift"),
        ("output", "out", ""),
        *_scalars("out_offset", "out_mult", "out_shift", "out_activation_min", "out_activation_max", "block_size"),
    ),
    "arm_elementwise_mul_s8": (
        ("input_1_vect", "in", "input_1"), ("input_2_vect", "in", "input_2"),
        *_scalars("input_1_offset", "input_2_offset"), ("output", "out", ""),
        *_scalars("out_offset", "out_mult", "out_shift", "out_activation_min", "out_activation_max", "block_size"),
    ),
    "arm_maximum_s8": _MINMAX,
    "arm_minimum_s8": _MINMAX,
    "arm_relu6_s8": (("data", "in", "input"), *_scalars("size")),
    "arm_softmax_s8": (
        ("input", "in", "input"), *_scalars("num_rows", "row_size", "mult", "shift", "diff_min"), ("output", "out", ""),
    ),
    "arm_pad_s8": (
        ("input", "in", "input"), ("output", "out", ""), *_scalars("pad_value"),
        ("input_size", "dims", ""), ("pre_pad", "dims", ""), ("post_pad", "dims", ""),
    ),
    "arm_transpose_s8": (
        ("input", "in", "input"), ("output", "out", ""), ("input_dims", "dims", ""), ("output_dims", "dims", ""),
        ("transpose_params", "struct", ""),
    ),
    "refsim_lut_s8": (("input", "in", "input"), ("lut", "in", "table"), ("output", "out", ""), *_scalars("size")),
}  # fmt: skip


def _nhwc(params: Mapping[str, Any], prefix: str) -> tuple[int, ...]:
    return tuple(int(params[f"{prefix}.{k}"]) for k in "nhwc")


#: Arrays whose vector layout (VECTORS.md) has a shape the kernel checks; others are read flat.
_LAYOUTS: dict[str, Callable[[Mapping[str, Any]], dict[str, tuple[int, ...]]]] = {
    **{
        name: lambda p: {"input": _nhwc(p, "input_dims"), "filter": _nhwc(p, "filter_dims")}
        for name in (
            "arm_convolve_s8", "arm_convolve_wrapper_s8", "arm_convolve_1x1_s8_fast", "arm_convolve_1x1_s8",
            "arm_convolve_1_x_n_s8", "arm_transpose_conv_s8", "arm_transpose_conv_wrapper_s8",
        )
    },
    "arm_pad_s8": lambda p: {"input": _nhwc(p, "input_size")},
    "arm_softmax_s8": lambda p: {"input": (int(p["num_rows"]), int(p["row_size"]))},
    "arm_transpose_s8": lambda p: {"input": _nhwc(p, "input_dims")[: int(p["num_dims"])]},
}  # fmt: skip


# --- flattening a call into a vector ---------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A struct as nested dicts (dataclass or mapping), anything else unchanged."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _flatten(value: Any, prefix: str, out: dict[str, Any], function: str, arg: str) -> None:
    value = _plain(value)
    if not isinstance(value, dict):
        raise VectorError(f"{function}: argument {arg} must be a struct (dataclass or dict), got {value!r}")
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict):
            _flatten(item, f"{name}.", out, function, arg)
        elif isinstance(item, (bool, np.bool_)):
            out[name] = bool(item)
        elif isinstance(item, (int, np.integer)):
            out[name] = int(item)
        else:
            out[name] = [int(v) for v in np.asarray(item).reshape(-1)]


def _dims(value: Any, function: str, arg: str) -> dict[str, int]:
    if isinstance(value, Sequence) and not isinstance(value, (str, Mapping)):
        if len(value) != 4:
            raise VectorError(f"{function}: {arg} as a tuple must be (n, h, w, c), got {value!r}")
        value = dict(zip("nhwc", value, strict=True))
    flat: dict[str, Any] = {}
    _flatten(value, "", flat, function, arg)
    if sorted(flat) != sorted("nhwc"):
        raise VectorError(f"{function}: {arg} must have fields n, h, w, c, got {sorted(flat)}")
    return {f"{arg}.{k}": int(flat[k]) for k in "nhwc"}


def _bind(function: str, args: tuple, kwargs: dict) -> tuple[dict[str, Any], np.ndarray | None]:
    signature = SIGNATURES[function]
    names = [name for name, _, _ in signature]
    if len(args) > len(names):
        raise TypeError(f"{function}() takes {len(names)} arguments, got {len(args)}")
    bound = dict(zip(names, args, strict=False))
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError(f"{function}() has no argument {key!r}; its arguments are {', '.join(names)}")
        if key in bound:
            raise TypeError(f"{function}() got argument {key!r} twice")
        bound[key] = value
    required = [name for name, kind, _ in signature if kind not in ("ctx", "out", "unused")]
    missing = [name for name in required if name not in bound]
    if missing:
        raise TypeError(f"{function}() lacks argument(s) {', '.join(missing)}")
    out = next((bound.get(name) for name, kind, _ in signature if kind == "out"), None)
    return bound, out


def to_case(function: str, *args: Any, **kwargs: Any) -> vec.Case:
    """The conformance vector of one call (arguments as for the function of that name), with the
    golden output: what :func:`refsim.conformance.vectors.write_case` saves."""
    arrays, params = _flat_call(function, args, kwargs)
    output = np.asarray(registry.get(function).run(arrays, params))
    return vec.Case(function, "golden", arrays, params, output)


def _flat_call(function: str, args: tuple, kwargs: dict) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    bound, _ = _bind(function, args, kwargs)
    params: dict[str, Any] = {"function": function}
    arrays: dict[str, np.ndarray] = {}
    null: list[str] = []
    for name, kind, vector in SIGNATURES[function]:
        value = bound.get(name)
        if kind == "struct":
            _flatten(value, "", params, function, name)
        elif kind == "quant":
            quant = _plain(value)
            if not isinstance(quant, dict) or set(quant) != {"multiplier", "shift"}:
                raise VectorError(f"{function}: {name} must have fields multiplier and shift (int32 arrays)")
            for key in ("multiplier", "shift"):
                arrays[key] = np.ascontiguousarray(quant[key], dtype=np.int32).reshape(-1)
        elif kind == "dims":
            params.update(_dims(value, function, name))
        elif kind == "scalar":
            params[name] = int(value)
        elif kind == "in":
            if value is None:
                null.append(vector)
            else:
                arrays[vector] = np.ascontiguousarray(value)
    _fill_null(function, arrays, params, null)
    for vector, shape in _LAYOUTS.get(function, lambda p: {})(params).items():
        if vector in arrays:
            if arrays[vector].size != int(np.prod(shape)):
                raise VectorError(
                    f"{function}: {vector} has {arrays[vector].size} elements, its dims say {shape}"
                )
            arrays[vector] = arrays[vector].reshape(shape)
    return arrays, params


def _fill_null(function: str, arrays: dict[str, np.ndarray], params: dict[str, Any], null: list[str]) -> None:
    """A NULL bias is a zero bias flagged ``bias_is_null`` (VECTORS.md); no other pointer may be NULL."""
    for vector in null:
        if vector not in ("bias", "bias_data"):
            raise VectorError(f"{function}: {vector} must not be NULL (None)")
        channels = params["output_dims.c"] if "output_dims.c" in params else params["vector_rows"]
        arrays[vector] = np.zeros(int(channels), np.int32)
        params["bias_is_null"] = True
    if "bias" in arrays and "bias_is_null" not in params:
        params["bias_is_null"] = False


def call(function: str, *args: Any, **kwargs: Any) -> np.ndarray:
    """Run ``function`` (a CMSIS-NN name) on the golden model with C's argument list."""
    if function not in SIGNATURES:
        raise VectorError(f"no golden call for {function!r}; known: {', '.join(sorted(SIGNATURES))}")
    _, out = _bind(function, args, kwargs)
    arrays, params = _flat_call(function, args, kwargs)
    result = np.asarray(registry.get(function).run(arrays, params))
    if function == "arm_relu6_s8":  # in place, as in C
        out = args[0] if args else kwargs.get("data")
    if out is not None:
        target = np.asarray(out).reshape(-1)
        if target.size != result.size or target.dtype != result.dtype:
            raise VectorError(
                f"{function}: the output buffer must hold {result.size} {result.dtype}, got "
                f"{target.size} {target.dtype}"
            )
        target[:] = result.reshape(-1)
    return result


def _make(function: str) -> Callable[..., np.ndarray]:
    def golden_call(*args: Any, **kwargs: Any) -> np.ndarray:
        return call(function, *args, **kwargs)

    # C's order; Python shows a default (None) only on the optional arguments at the end.
    signature = SIGNATURES[function]
    optional_tail = len(signature)
    while optional_tail and signature[optional_tail - 1][1] in ("ctx", "out", "unused"):
        optional_tail -= 1
    parameters = [
        inspect.Parameter(
            name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=None if i >= optional_tail else inspect.Parameter.empty,
        )
        for i, (name, _, _) in enumerate(signature)
    ]
    golden_call.__name__ = golden_call.__qualname__ = function
    golden_call.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    golden_call.__doc__ = (
        f"The golden {function}: arguments as in arm_nnfunctions.h ({', '.join(n for n, _, _ in SIGNATURES[function])}); "
        "returns the output array (and writes it into the output pointer when one is given)."
    )
    return golden_call


for _function in SIGNATURES:
    globals()[_function] = _make(_function)


def __dir__() -> list[str]:
    return sorted([*globals(), *SIGNATURES])


__all__ = [
    "SIGNATURES",
    "call",
    "cmsis_nn_activation",
    "cmsis_nn_bmm_params",
    "cmsis_nn_context",
    "cmsis_nn_conv_params",
    "cmsis_nn_dims",
    "cmsis_nn_dw_conv_params",
    "cmsis_nn_fc_params",
    "cmsis_nn_per_channel_quant_params",
    "cmsis_nn_per_tensor_quant_params",
    "cmsis_nn_pool_params",
    "cmsis_nn_tile",
    "cmsis_nn_transpose_conv_params",
    "cmsis_nn_transpose_params",
    "to_case",
    *SIGNATURES,
]
