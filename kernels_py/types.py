"""CMSIS-NN's parameter structs (``arm_nn_types.h``) as frozen dataclasses.

Field names are CMSIS-NN's own, so a conformance vector's flattened ``params``
(``stride.h``, ``activation.min``, ...) maps one to one onto these classes.
``Tile`` keeps CMSIS-NN's ``{w, h}`` order; ``Dims`` is ``{n, h, w, c}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kernels_py.errors import KernelArgumentError

INT8_MIN = -128
INT8_MAX = 127
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Tile:
    """``cmsis_nn_tile``: a 2-D extent (stride, padding, dilation)."""

    w: int = 1
    h: int = 1


@dataclass(frozen=True)
class Dims:
    """``cmsis_nn_dims``: ``{n, h, w, c}``."""

    n: int = 1
    h: int = 1
    w: int = 1
    c: int = 1

    @classmethod
    def of(cls, shape: tuple[int, ...]) -> Dims:
        """Dims of an NHWC shape (shorter shapes are right-aligned: ``(k,)`` is ``c=k``)."""
        padded = (1,) * (4 - len(shape)) + tuple(int(s) for s in shape)
        return cls(*padded)

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return (self.n, self.h, self.w, self.c)


@dataclass(frozen=True)
class Activation:
    """``cmsis_nn_activation``: the inclusive output clamp range (fused ReLU/ReLU6 land here)."""

    min: int = INT8_MIN
    max: int = INT8_MAX

    def check(self, function: str) -> None:
        if not (INT8_MIN <= self.min <= self.max <= INT8_MAX):
            raise KernelArgumentError(
                function, "activation", f"{INT8_MIN} <= min <= max <= {INT8_MAX}", (self.min, self.max)
            )


@dataclass(frozen=True)
class ConvParams:
    """``cmsis_nn_conv_params``."""

    input_offset: int = 0
    output_offset: int = 0
    stride: Tile = field(default_factory=Tile)
    padding: Tile = field(default_factory=lambda: Tile(0, 0))
    dilation: Tile = field(default_factory=Tile)
    activation: Activation = field(default_factory=Activation)


@dataclass(frozen=True)
class DwConvParams:
    """``cmsis_nn_dw_conv_params``: conv params plus the channel multiplier."""

    input_offset: int = 0
    output_offset: int = 0
    ch_mult: int = 1
    stride: Tile = field(default_factory=Tile)
    padding: Tile = field(default_factory=lambda: Tile(0, 0))
    dilation: Tile = field(default_factory=Tile)
    activation: Activation = field(default_factory=Activation)


@dataclass(frozen=True)
class TransposeConvParams:
    """``cmsis_nn_transpose_conv_params``."""

    input_offset: int = 0
    output_offset: int = 0
    stride: Tile = field(default_factory=Tile)
    padding: Tile = field(default_factory=lambda: Tile(0, 0))
    padding_offsets: Tile = field(default_factory=lambda: Tile(0, 0))
    dilation: Tile = field(default_factory=Tile)
    activation: Activation = field(default_factory=Activation)


@dataclass(frozen=True)
class FcParams:
    """``cmsis_nn_fc_params``."""

    input_offset: int = 0
    filter_offset: int = 0
    output_offset: int = 0
    activation: Activation = field(default_factory=Activation)


@dataclass(frozen=True)
class PoolParams:
    """``cmsis_nn_pool_params``."""

    stride: Tile = field(default_factory=Tile)
    padding: Tile = field(default_factory=lambda: Tile(0, 0))
    activation: Activation = field(default_factory=Activation)


@dataclass(frozen=True)
class BmmParams:
    """``cmsis_nn_bmm_params``: batch matmul transposition flags plus FC params."""

    adj_x: bool = False
    adj_y: bool = False
    fc_params: FcParams = field(default_factory=FcParams)


@dataclass(frozen=True)
class PerTensorQuantParams:
    """``cmsis_nn_per_tensor_quant_params``."""

    multiplier: int
    shift: int


@dataclass(frozen=True, eq=False)
class PerChannelQuantParams:
    """``cmsis_nn_per_channel_quant_params``: int32 arrays, one entry per output channel."""

    multiplier: np.ndarray
    shift: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "multiplier", np.ascontiguousarray(self.multiplier, dtype=np.int32))
        object.__setattr__(self, "shift", np.ascontiguousarray(self.shift, dtype=np.int32))

    def check(self, function: str, channels: int) -> None:
        for name, arr in (("multiplier", self.multiplier), ("shift", self.shift)):
            if arr.shape != (channels,):
                raise KernelArgumentError(function, f"quant_params.{name}", f"shape ({channels},)", arr.shape)
        check_shifts(function, "quant_params.shift", self.shift)

    @classmethod
    def per_tensor(cls, multiplier: int, shift: int, channels: int) -> PerChannelQuantParams:
        return cls(np.full(channels, multiplier, np.int32), np.full(channels, shift, np.int32))


def check_shifts(function: str, argument: str, shift: np.ndarray | int) -> None:
    """CMSIS-NN's requantize supports left shifts up to 30 and right shifts up to 31."""
    arr = np.asarray(shift)
    if arr.size and (arr.min() < -31 or arr.max() > 30):
        raise KernelArgumentError(function, argument, "in [-31, 30]", (int(arr.min()), int(arr.max())))


def check_int8(function: str, argument: str, array: np.ndarray, ndim: int | None = None) -> np.ndarray:
    """Validate an int8 array argument and return it C-contiguous."""
    if not isinstance(array, np.ndarray) or array.dtype != np.int8:
        raise KernelArgumentError(
            function, argument, "an int8 numpy array", getattr(array, "dtype", type(array))
        )
    if ndim is not None and array.ndim != ndim:
        raise KernelArgumentError(function, argument, f"{ndim}-D", f"shape {array.shape}")
    return np.ascontiguousarray(array).reshape(array.shape)  # keep 0-d arrays 0-d


def check_int32(function: str, argument: str, array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Validate an int32 array argument (bias, multipliers, shifts) of a given shape."""
    arr = np.asarray(array)
    if arr.dtype != np.int32:
        raise KernelArgumentError(function, argument, "int32", arr.dtype)
    if arr.shape != shape:
        raise KernelArgumentError(function, argument, f"shape {shape}", arr.shape)
    return np.ascontiguousarray(arr)


def check_offset(function: str, argument: str, value: int, low: int, high: int) -> None:
    if not (low <= value <= high):
        raise KernelArgumentError(function, argument, f"in [{low}, {high}]", value)
