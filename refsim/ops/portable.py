"""ExecuTorch portable ops a cortex_m program carries: layout conversion, views, concatenation,
slicing and the ``quantized_decomposed`` quantize/dequantize kernels.

These are dtype-generic where ExecuTorch's portable kernels are. Each mirrors how its C++
kernel (``kernels/portable/cpu/op_*.cpp``, ``kernels/quantized/cpu/op_*quantize.cpp``) walks
memory, because that decides the result for a tensor whose dim order is not the default:

* ``_clone_dim_order`` / ``_to_dim_order_copy`` honour both dim orders (a logical copy; they
  exist to change the layout).
* ``view_copy``, ``clone``, ``squeeze_copy``, ``unsqueeze_copy`` are a ``memcpy`` of the bytes.
* ``permute_copy``, ``cat``, ``slice_copy`` and the per-channel quantize ops index the bytes
  as if they were contiguous in the logical shape (``getTrailingDims``), which is what
  `raw` gives; the per-tensor quantize ops run over the bytes in order.

``aten::clamp.out`` (the int8 clamp ``quantized_clamp_activation_pass`` leaves in a cortex_m
graph) is registered dtype-generic by ``portable_float``.

ExecuTorch's argument checks (``ET_KERNEL_CHECK``: ``tensors_have_same_dim_order``,
``tensor_is_default_dim_order``, dtype and size relations) become validators, so a program
its runtime would refuse is refused at load with an `OpError`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from kernels_py import quantize
from kernels_py.errors import KernelArgumentError
from refsim.ops.cortex_m_elementwise import flat, raw, require_sizes
from refsim.ops.registry import Args, register
from refsim.pte.model import ScalarType
from refsim.runtime.tensor import TensorRef

#: The dtypes these kernels handle here (ExecuTorch's REALHBBF16 minus the ones numpy lacks).
REAL_DTYPES = (
    ScalarType.UINT8,
    ScalarType.INT8,
    ScalarType.INT16,
    ScalarType.INT32,
    ScalarType.INT64,
    ScalarType.FLOAT16,
    ScalarType.FLOAT32,
    ScalarType.FLOAT64,
    ScalarType.BOOL,
)
_FLOATS = (ScalarType.FLOAT16, ScalarType.FLOAT32, ScalarType.FLOAT64)

# --- ExecuTorch's dim-order and dtype predicates -----------------------------------------------


def is_default_dim_order(t: TensorRef) -> bool:
    """``is_contiguous_dim_order``: dim_order == [0, 1, ..., rank - 1]."""
    return tuple(t.dim_order) == tuple(range(len(t.sizes)))


def is_channels_last_dim_order(t: TensorRef) -> bool:
    """``is_channels_last_dim_order``: [0, 2, 3, 1] (4-D) or [0, 2, 3, 4, 1] (5-D)."""
    rank = len(t.sizes)
    return rank in (4, 5) and tuple(t.dim_order) == (0, *range(2, rank), 1)


def have_same_dim_order(*tensors: TensorRef) -> bool:
    """``tensors_have_same_dim_order``: all default or all channels-last (not merely equal)."""
    return all(is_default_dim_order(t) for t in tensors) or all(
        is_channels_last_dim_order(t) for t in tensors
    )


def can_cast(source: ScalarType, target: ScalarType) -> bool:
    """c10 ``canCast``: no float to integral, nothing but bool to bool."""
    if source in _FLOATS and target not in _FLOATS and target is not ScalarType.BOOL:
        return False
    return not (target is ScalarType.BOOL and source is not ScalarType.BOOL)


def _require_real(a: Args, *names: str) -> None:
    for name in names:
        t = getattr(a, name)
        if t.scalar_type not in REAL_DTYPES:
            raise a.error(name, "a real or bool dtype", t.scalar_type.name.lower())


def _require_same_dtype(a: Args, name: str, other: str = "out") -> None:
    if getattr(a, name).scalar_type is not getattr(a, other).scalar_type:
        raise a.error(
            other,
            f"{getattr(a, name).scalar_type.name.lower()} like {name}",
            getattr(a, other).scalar_type.name.lower(),
        )


def _require_same_dim_order(a: Args, *names: str) -> None:
    tensors = [getattr(a, n) for n in names]
    if not have_same_dim_order(*tensors):
        found = ", ".join(f"{n} {list(t.dim_order)}" for n, t in zip(names, tensors, strict=True))
        raise a.error("/".join(names), "all default or all channels-last dim order", found)


def _normalize_dim(a: Args, name: str, dim: int, rank: int) -> int:
    """``tensor_has_dim`` with ``nonzero_dim``: a 0-D tensor accepts -1 and 0."""
    extent = max(rank, 1)
    if not -extent <= dim < extent:
        raise a.error(name, f"in [{-extent}, {extent - 1}]", dim)
    return dim % extent


def _memcpy(a: Args) -> None:
    flat(a.out)[...] = flat(a.self)


# --- dim order conversions ---------------------------------------------------------------------

_DIM_ORDER_SCHEMA = (
    "dim_order_ops::{name}.out(Tensor self, *, bool non_blocking=False, int[]? dim_order=None, "
    "Tensor(a!) out) -> Tensor(a!)"
)


def _validate_dim_order_args(a: Args) -> None:
    """``check__to_dim_order_copy_args`` (also what ``_clone_dim_order`` checks)."""
    _require_real(a, "self", "out")
    if a.non_blocking:
        raise a.error("non_blocking", "False", True)
    require_sizes(a, "out", a.self.sizes)
    if a.dim_order is None:
        if tuple(a.out.dim_order) != tuple(a.self.dim_order):
            raise a.error("out", f"dim_order {list(a.self.dim_order)} like self", list(a.out.dim_order))
        return
    order = tuple(a.dim_order)
    rank = len(a.self.sizes)
    default = tuple(range(rank))
    channels_last = (0, *range(2, rank), 1) if rank in (4, 5) else None
    if len(order) != rank or order not in (default, channels_last):
        raise a.error("dim_order", f"{list(default)} or channels-last for a {rank}-D tensor", list(order))
    if tuple(a.out.dim_order) != order:
        raise a.error("out", f"dim_order {list(order)}", list(a.out.dim_order))


@register(_DIM_ORDER_SCHEMA.format(name="_clone_dim_order"), portable_fallback=True)
def clone_dim_order(a: Args) -> None:
    """Copy element by element through both dim orders (``BroadcastIndexesRange`` with
    non-contiguous support): the layout conversion at the edges of a cortex_m graph."""
    a.out.logical[...] = a.self.logical


@clone_dim_order.validator
def _validate_clone_dim_order(a: Args) -> None:
    _require_same_dtype(a, "self")
    _validate_dim_order_args(a)


@register(_DIM_ORDER_SCHEMA.format(name="_to_dim_order_copy"), portable_fallback=True)
def to_dim_order_copy(a: Args) -> None:
    """As ``_clone_dim_order``, converting each element with C's ``static_cast`` to out's dtype."""
    np.copyto(a.out.logical, a.self.logical, casting="unsafe")


to_dim_order_copy.validator(_validate_dim_order_args)


# --- memcpy views ------------------------------------------------------------------------------


@register(
    "aten::view_copy.out(Tensor self, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)", portable_fallback=True
)
def view_copy(a: Args) -> None:
    """``memcpy`` of the bytes (``op_view_copy.cpp``); both tensors in the default dim order."""
    _memcpy(a)


@view_copy.validator
def _validate_view_copy(a: Args) -> None:
    _require_same_dtype(a, "self")
    size = tuple(a.size)
    if len(size) != len(a.out.sizes):
        raise a.error("size", f"{len(a.out.sizes)} entries (out's rank)", list(size))
    if size.count(-1) > 1 or any(s < -1 for s in size):
        raise a.error("size", "non-negative sizes with at most one -1", list(size))
    known = math.prod(s for s in size if s != -1)
    target = tuple(a.self.meta.numel // known if s == -1 and known else s for s in size)
    require_sizes(a, "out", target)
    if a.self.meta.numel != a.out.meta.numel:
        raise a.error("out", f"{a.self.meta.numel} elements like self", a.out.meta.numel)
    _require_same_dim_order(a, "self", "out")
    if not is_default_dim_order(a.self):
        raise a.error("self", "the default dim order (op_view_copy.cpp)", list(a.self.dim_order))


@register(
    "aten::clone.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
    portable_fallback=True,
)
def clone(a: Args) -> None:
    """``memcpy`` of the bytes (``op_clone.cpp``)."""
    _memcpy(a)


#: c10::MemoryFormat::Contiguous.
_CONTIGUOUS_FORMAT = 0


@clone.validator
def _validate_clone(a: Args) -> None:
    _require_same_dtype(a, "self")
    require_sizes(a, "out", a.self.sizes)
    if a.memory_format not in (None, _CONTIGUOUS_FORMAT):
        raise a.error("memory_format", "None or contiguous (0)", a.memory_format)


def _squeezed(a: Args, dims: Sequence[int]) -> list[int]:
    rank = len(a.self.sizes)
    normalized = [_normalize_dim(a, "dim", d, rank) for d in dims]
    if len(set(normalized)) != len(normalized):
        raise a.error("dim", "distinct dims", list(dims))
    if rank == 0:
        return []
    return [s for d, s in enumerate(a.self.sizes) if not (d in normalized and s == 1)]


@register(
    "aten::squeeze_copy.dims_out(Tensor self, int[] dim, *, Tensor(a!) out) -> Tensor(a!)",
    portable_fallback=True,
)
def squeeze_copy_dims(a: Args) -> None:
    """``memcpy`` of the bytes; the listed dims of size 1 disappear from ``out``'s sizes."""
    _memcpy(a)


@squeeze_copy_dims.validator
def _validate_squeeze_dims(a: Args) -> None:
    _require_same_dtype(a, "self")
    require_sizes(a, "out", _squeezed(a, a.dim))


@register(
    "aten::squeeze_copy.dim_out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)",
    portable_fallback=True,
)
def squeeze_copy_dim(a: Args) -> None:
    """``memcpy`` of the bytes; ``dim`` disappears from ``out``'s sizes if it has size 1."""
    _memcpy(a)


@squeeze_copy_dim.validator
def _validate_squeeze_dim(a: Args) -> None:
    _require_same_dtype(a, "self")
    require_sizes(a, "out", _squeezed(a, (a.dim,)))


@register(
    "aten::unsqueeze_copy.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)", portable_fallback=True
)
def unsqueeze_copy(a: Args) -> None:
    """``memcpy`` of the bytes; ``out`` has a new dim of size 1 at ``dim``."""
    _memcpy(a)


@unsqueeze_copy.validator
def _validate_unsqueeze(a: Args) -> None:
    _require_same_dtype(a, "self")
    rank = len(a.self.sizes) + 1
    dim = _normalize_dim(a, "dim", a.dim, rank)
    expected = list(a.self.sizes)
    expected.insert(dim, 1)
    require_sizes(a, "out", expected)


# --- permute, cat, slice -----------------------------------------------------------------------


@register(
    "aten::permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out) -> Tensor(a!)", portable_fallback=True
)
def permute_copy(a: Args) -> None:
    """Output element ``i`` in logical row-major order takes the input element at the permuted
    coordinate; both indexed as contiguous (``coordinateToIndex``), as ``op_permute_copy.cpp``."""
    rank = len(a.self.sizes)
    raw(a.out)[...] = raw(a.self).transpose([d % max(rank, 1) for d in a.dims])


@permute_copy.validator
def _validate_permute(a: Args) -> None:
    _require_same_dtype(a, "self")
    rank = len(a.self.sizes)
    if len(a.dims) != rank:
        raise a.error("dims", f"{rank} entries (self's rank)", list(a.dims))
    dims = [_normalize_dim(a, "dims", d, rank) for d in a.dims]
    if len(set(dims)) != len(dims):
        raise a.error("dims", "no repeated dim", list(a.dims))
    _require_same_dim_order(a, "self", "out")
    require_sizes(a, "out", [a.self.sizes[d] for d in dims] if rank else [])


@register(
    "aten::cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)", portable_fallback=True
)
def cat(a: Args) -> None:
    """Concatenate along ``dim`` (``op_cat.cpp``: blocks of ``size(dim) * trailing`` elements per
    leading index, cast with ``static_cast``); every tensor in the default dim order."""
    dim = a.dim % len(a.out.sizes)
    parts = [raw(t) for t in a.tensors if t.meta.numel]
    if parts:
        np.copyto(raw(a.out), np.concatenate(parts, axis=dim), casting="unsafe")


@cat.validator
def _validate_cat(a: Args) -> None:
    tensors: list[TensorRef] = a.tensors
    _require_real(a, "out")
    if not tensors:
        raise a.error("tensors", "at least one tensor", 0)
    rank = len(a.out.sizes)
    if not -rank <= a.dim < rank:
        raise a.error("dim", f"in [{-rank}, {rank - 1}]", a.dim)
    dim = a.dim % rank
    reference = next((t for t in tensors if t.meta.numel), tensors[0])
    total = 0
    for k, t in enumerate(tensors):
        if t.scalar_type not in REAL_DTYPES or not can_cast(t.scalar_type, a.out.scalar_type):
            raise a.error(
                f"tensors[{k}]", f"castable to {a.out.scalar_type.name.lower()}", t.scalar_type.name.lower()
            )
        if not have_same_dim_order(t, a.out) or not is_default_dim_order(a.out):
            raise a.error(
                f"tensors[{k}]/out",
                "the default dim order (op_cat.cpp)",
                (list(t.dim_order), list(a.out.dim_order)),
            )
        if not t.meta.numel:
            continue
        same = len(t.sizes) == len(reference.sizes) and all(
            s == r for d, (s, r) in enumerate(zip(t.sizes, reference.sizes, strict=True)) if d != dim
        )
        if not same:
            raise a.error(
                f"tensors[{k}]", f"sizes {list(reference.sizes)} except along dim {dim}", list(t.sizes)
            )
        if dim >= len(t.sizes):
            raise a.error("dim", f"a dim of tensors[{k}] {list(t.sizes)}", a.dim)
        total += t.sizes[dim]
    if reference.meta.numel:  # else every input is empty and out keeps its sizes
        expected = list(reference.sizes)
        expected[dim] = total
        require_sizes(a, "out", expected)


def slice_indices(length: int, start: int | None, end: int | None, step: int) -> tuple[int, int]:
    """``adjust_slice_indices`` of ``slice_util.cpp``: (start, number of values)."""
    start = 0 if start is None else start
    end = length if end is None else end
    start = start + length if start < 0 else start
    end = end + length if end < 0 else end
    start, end = min(max(start, 0), length), min(max(end, 0), length)
    if start >= length or end <= 0 or start >= end:
        return start, 0
    return start, (end - 1 - start) // step + 1


@register(
    "aten::slice_copy.Tensor_out(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, "
    "SymInt step=1, *, Tensor(a!) out) -> Tensor(a!)",
    portable_fallback=True,
)
def slice_copy(a: Args) -> None:
    """Every ``step``-th block of ``trailing`` elements from ``start`` (``op_slice_copy.cpp``'s
    ``memcpy`` loop, indexing the bytes as contiguous)."""
    rank = len(a.self.sizes)
    dim = a.dim % rank
    start, count = slice_indices(a.self.sizes[dim], a.start, a.end, a.step)
    index = [slice(None)] * rank
    index[dim] = slice(start, start + count * a.step, a.step) if count else slice(0, 0)
    raw(a.out)[...] = raw(a.self)[tuple(index)]


@slice_copy.validator
def _validate_slice(a: Args) -> None:
    _require_same_dtype(a, "self")
    rank = len(a.self.sizes)
    if rank == 0:
        raise a.error("self", "at least 1-D", list(a.self.sizes))
    dim = _normalize_dim(a, "dim", a.dim, rank)
    if a.step <= 0:
        raise a.error("step", "greater than zero", a.step)
    _, count = slice_indices(a.self.sizes[dim], a.start, a.end, a.step)
    expected = list(a.self.sizes)
    expected[dim] = count
    require_sizes(a, "out", expected)


# --- quantized_decomposed quantize / dequantize ------------------------------------------------


def _numpy_dtype(a: Args, name: str) -> np.dtype:
    value = getattr(a, name)
    try:
        dtype = ScalarType(value).numpy_dtype
    except ValueError:
        dtype = None
    if dtype is None:
        raise a.error(name, "a ScalarType numpy can represent", value)
    return dtype


def _probe(a: Args, call) -> None:
    """Run the kernel on a one-element input so its own argument checks apply at load."""
    try:
        call()
    except KernelArgumentError as exc:
        raise a.error(exc.argument, exc.expected, exc.found) from None


def _validate_quantize_common(a: Args) -> np.dtype:
    if a.input.scalar_type not in (ScalarType.FLOAT32, ScalarType.FLOAT64):
        raise a.error("input", "float32 or float64", a.input.scalar_type.name.lower())
    dtype = _numpy_dtype(a, "dtype")
    if a.out.dtype != dtype:
        raise a.error("out", f"{dtype.name} (the dtype argument)", a.out.dtype.name)
    require_sizes(a, "out", a.input.sizes)
    return dtype


def _validate_dequantize_common(a: Args) -> np.dtype:
    if a.input.scalar_type not in (ScalarType.UINT8, ScalarType.INT8, ScalarType.INT16, ScalarType.INT32):
        raise a.error("input", "uint8, int8, int16 or int32", a.input.scalar_type.name.lower())
    if a.input.dtype != _numpy_dtype(a, "dtype"):
        raise a.error("dtype", f"{a.input.dtype.name} (input's dtype)", a.dtype)
    if a.out.scalar_type not in (ScalarType.FLOAT32, ScalarType.FLOAT64):
        raise a.error("out", "float32 or float64", a.out.scalar_type.name.lower())
    if a.out_dtype is not None and a.out.dtype != _numpy_dtype(a, "out_dtype"):
        raise a.error("out_dtype", f"{a.out.dtype.name} (out's dtype)", a.out_dtype)
    require_sizes(a, "out", a.input.sizes)
    return a.out.dtype


_QUANTIZE_PER_TENSOR = (
    "quantized_decomposed::quantize_per_tensor.out(Tensor input, float scale, int zero_point, int quant_min, "
    "int quant_max, ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)"
)
_DEQUANTIZE_PER_TENSOR = (
    "quantized_decomposed::dequantize_per_tensor.out(Tensor input, float scale, int zero_point, int quant_min, "
    "int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None, Tensor(a!) out) -> Tensor(a!)"
)
_QUANTIZE_PER_CHANNEL = (
    "quantized_decomposed::quantize_per_channel.out(Tensor input, Tensor scales, Tensor zero_points, int axis, "
    "int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)"
)
_DEQUANTIZE_PER_CHANNEL = (
    "quantized_decomposed::dequantize_per_channel.out(Tensor input, Tensor scales, Tensor? zero_points, "
    "int axis, int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None, "
    "Tensor(a!) out) -> Tensor(a!)"
)


@register(_QUANTIZE_PER_TENSOR, portable_fallback=True)
def quantize_per_tensor(a: Args) -> None:
    """``op_quantize.cpp``: float32 ``inv_scale * x``, round half to even, clamp (kernels_py)."""
    flat(a.out)[...] = quantize.quantize_per_tensor(
        flat(a.input), a.scale, a.zero_point, a.quant_min, a.quant_max, a.out.dtype
    )


@quantize_per_tensor.validator
def _validate_quantize_per_tensor(a: Args) -> None:
    dtype = _validate_quantize_common(a)
    sample = np.zeros(1, a.input.dtype)
    _probe(
        a,
        lambda: quantize.quantize_per_tensor(sample, a.scale, a.zero_point, a.quant_min, a.quant_max, dtype),
    )


@register(_DEQUANTIZE_PER_TENSOR, portable_fallback=True)
def dequantize_per_tensor(a: Args) -> None:
    """``op_dequantize.cpp``: ``((int32)q - zero_point) * (float)scale`` in float32."""
    flat(a.out)[...] = quantize.dequantize_per_tensor(
        flat(a.input), a.scale, a.zero_point, a.quant_min, a.quant_max, a.out.dtype
    )


@dequantize_per_tensor.validator
def _validate_dequantize_per_tensor(a: Args) -> None:
    out_dtype = _validate_dequantize_common(a)
    sample = np.zeros(1, a.input.dtype)
    _probe(
        a,
        lambda: quantize.dequantize_per_tensor(
            sample, a.scale, a.zero_point, a.quant_min, a.quant_max, out_dtype
        ),
    )


def _channel_params(a: Args) -> tuple[np.ndarray, np.ndarray | None]:
    scales = flat(a.scales)
    zero_points = None if a.zero_points is None else flat(a.zero_points)
    return scales, zero_points


def _validate_channel_tensors(a: Args) -> None:
    """One scale (float32 or float64: ExecuTorch's releases have checked either, 1.5.1 runs
    float32 scales as its exporter writes them) and one int64/int32 zero point per channel."""
    rank = len(a.input.sizes)
    axis = _normalize_dim(a, "axis", a.axis, rank)
    channels = a.input.sizes[axis] if rank else 1
    if (
        a.scales.scalar_type not in (ScalarType.FLOAT32, ScalarType.FLOAT64)
        or a.scales.meta.numel != channels
    ):
        found = (a.scales.scalar_type.name.lower(), a.scales.meta.numel)
        raise a.error("scales", f"float32 or float64 with {channels} elements", found)
    zp = a.zero_points
    if zp is not None and (
        zp.scalar_type not in (ScalarType.INT64, ScalarType.INT32) or zp.meta.numel != channels
    ):
        raise a.error(
            "zero_points",
            f"int64 or int32 with {channels} elements",
            (zp.scalar_type.name.lower(), zp.meta.numel),
        )


@register(_QUANTIZE_PER_CHANNEL, portable_fallback=True)
def quantize_per_channel(a: Args) -> None:
    """``op_quantize.cpp`` per channel along ``axis`` (bytes indexed as contiguous)."""
    scales, zero_points = _channel_params(a)
    raw(a.out)[...] = quantize.quantize_per_channel(
        raw(a.input), scales, zero_points, a.axis, a.quant_min, a.quant_max, a.out.dtype
    )


@quantize_per_channel.validator
def _validate_quantize_per_channel(a: Args) -> None:
    dtype = _validate_quantize_common(a)
    _validate_channel_tensors(a)
    scales, zero_points = _channel_params(a)
    sample = np.zeros(len(scales), a.input.dtype)
    _probe(
        a,
        lambda: quantize.quantize_per_channel(
            sample, scales, zero_points, 0, a.quant_min, a.quant_max, dtype
        ),
    )


@register(_DEQUANTIZE_PER_CHANNEL, portable_fallback=True)
def dequantize_per_channel(a: Args) -> None:
    """``op_dequantize.cpp`` per channel along ``axis`` (int8 -> float32 in float64, see kernels_py)."""
    scales, zero_points = _channel_params(a)
    raw(a.out)[...] = quantize.dequantize_per_channel(
        raw(a.input), scales, zero_points, a.axis, a.quant_min, a.quant_max, a.out.dtype
    )


@dequantize_per_channel.validator
def _validate_dequantize_per_channel(a: Args) -> None:
    out_dtype = _validate_dequantize_common(a)
    _validate_channel_tensors(a)
    scales, zero_points = _channel_params(a)
    rank = len(a.input.sizes)
    axis = a.axis % max(rank, 1)
    # the channel-wise zero-point check depends on the path kernels_py takes for this rank
    shape = tuple(len(scales) if d == axis else 1 for d in range(max(rank, 1)))
    sample = np.zeros(shape, a.input.dtype)
    _probe(
        a,
        lambda: quantize.dequantize_per_channel(
            sample, scales, zero_points, axis, a.quant_min, a.quant_max, out_dtype
        ),
    )
