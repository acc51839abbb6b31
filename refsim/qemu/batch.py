"""The kernels_c batch file format (version 1): encode cases, decode results.

Layout (little endian; ``kernels_c/harness/batch_format.h`` is its C side, docs/kernels_c.md
its description): a 16-byte header (magic ``RSKB``, version, number of cases, total bytes),
then one record per case: ``case_bytes u32, function_id u16, variant u8, 0 u8, num_params u16,
num_arrays u16``, ``int32 params[num_params]``, then per array ``dtype u8, 0 u8 x3, count u32``
and its data padded to 4 bytes. The result file mirrors it (magic ``RSKR``): per case
``record_bytes u32, function_id u16, harness_status u16, kernel_status i32, output_bytes u32``
and the int8 output padded to 4 bytes.

Parameter names are those of conformance vectors (shared VECTORS.md): CMSIS-NN's own argument
names, struct fields flattened with dots.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from refsim.qemu.errors import QemuError

BATCH_MAGIC = b"RSKB"
RESULT_MAGIC = b"RSKR"
VERSION = 1

_HEADER = struct.Struct("<4sIII")
_CASE = struct.Struct("<IHBBHH")
_ARRAY = struct.Struct("<BxxxI")
_RESULT = struct.Struct("<IHHiI")

#: Array element types: code in the file, numpy dtype.
DTYPES: dict[int, np.dtype] = {1: np.dtype(np.int8), 3: np.dtype("<i4")}
_DTYPE_CODES = {dtype: code for code, dtype in DTYPES.items()}

#: Which implementation a case runs: the public (dispatching) CMSIS-NN function, or one tier's.
VARIANTS: dict[str, int] = {"default": 0, "scalar": 1, "dsp": 2, "mve": 3}

#: Per-case harness status codes (batch_format.h RS_CASE_*).
HARNESS_STATUS: dict[int, str] = {
    0: "ok",
    1: "bad arguments (parameter/array count, dtype or length)",
    2: "unknown function id",
    3: "tier not available on this core",
    4: "kernel wrote past the end of its output",
    5: "output and scratch do not fit the bulk region",
}


@dataclass(frozen=True)
class ArraySpec:
    name: str
    dtype: np.dtype
    optional: bool = False  # may be empty (passed to the kernel as NULL)


@dataclass(frozen=True)
class FunctionSpec:
    """A function the harness can run: its id, scalar parameters in order, and input arrays."""

    name: str
    id: int
    params: tuple[str, ...]
    arrays: tuple[ArraySpec, ...] = field(default=())


_S8 = np.dtype(np.int8)
_S32 = np.dtype("<i4")

#: Depthwise parameters (``cmsis_nn_dw_conv_params`` fields and dims); the kernels also take
#: ``ctx.size``: -1 gives the variant's ``*_get_buffer_size()`` bytes, 0 a NULL ``ctx->buf``.
_DEPTHWISE_PARAMS = (
    "input_offset",
    "output_offset",
    "ch_mult",
    "stride.h",
    "stride.w",
    "padding.h",
    "padding.w",
    "dilation.h",
    "dilation.w",
    "activation.min",
    "activation.max",
    *(f"{dims}.{k}" for dims in ("input_dims", "filter_dims", "output_dims") for k in "nhwc"),
)
_DEPTHWISE_ARRAYS = (
    ArraySpec("input", _S8),
    ArraySpec("filter", _S8),
    ArraySpec("bias", _S32, optional=True),
    ArraySpec("multiplier", _S32),
    ArraySpec("shift", _S32),
)
#: Convolution parameters (``cmsis_nn_conv_params`` fields and dims, harness/functions_conv.c);
#: the transpose convolutions add ``padding_offsets.*``. The kernels also take ``ctx.size``:
#: -1 gives the variant's ``*_get_buffer_size()`` bytes, 0 a NULL ``ctx->buf``.
_CONV_PARAMS = (
    "input_offset",
    "output_offset",
    "stride.h",
    "stride.w",
    "padding.h",
    "padding.w",
    "dilation.h",
    "dilation.w",
    "activation.min",
    "activation.max",
    *(f"{dims}.{k}" for dims in ("input_dims", "filter_dims", "output_dims") for k in "nhwc"),
)
_TRANSPOSE_CONV_PARAMS = (*_CONV_PARAMS, "padding_offsets.h", "padding_offsets.w")
_CONV_ARRAYS = (
    ArraySpec("input", _S8),
    ArraySpec("filter", _S8),
    ArraySpec("bias", _S32, optional=True),
    ArraySpec("multiplier", _S32),
    ArraySpec("shift", _S32),
)
_POOL_PARAMS = (
    "stride.h",
    "stride.w",
    "padding.h",
    "padding.w",
    "activation.min",
    "activation.max",
    "filter_dims.h",
    "filter_dims.w",
    *(f"{dims}.{k}" for dims in ("input_dims", "output_dims") for k in "nhwc"),
    "ctx.size",
)

FUNCTIONS: dict[str, FunctionSpec] = {
    spec.name: spec
    for spec in (
        FunctionSpec(
            "arm_elementwise_add_s8",
            1,
            (
                "input_1_offset",
                "input_1_mult",
                "input_1_shift",
                "input_2_offset",
                "input_2_mult",
                "input_2_shift",
                "left_shift",
                "out_offset",
                "out_mult",
                "out_shift",
                "out_activation_min",
                "out_activation_max",
                "block_size",
            ),
            (ArraySpec("input_1", _S8), ArraySpec("input_2", _S8)),
        ),
        FunctionSpec(
            "arm_elementwise_mul_s8",
            2,
            (
                "input_1_offset",
                "input_2_offset",
                "out_offset",
                "out_mult",
                "out_shift",
                "out_activation_min",
                "out_activation_max",
                "block_size",
            ),
            (ArraySpec("input_1", _S8), ArraySpec("input_2", _S8)),
        ),
        FunctionSpec(
            "arm_fully_connected_s8",
            3,
            (
                "input_offset",
                "filter_offset",
                "output_offset",
                "activation.min",
                "activation.max",
                "multiplier",
                "shift",
                "input_dims.n",
                "filter_dims.n",
                "output_dims.c",
            ),
            (ArraySpec("input", _S8), ArraySpec("filter", _S8), ArraySpec("bias", _S32, optional=True)),
        ),
        # Convolution family (0x10-0x1F). The *_get_buffer_size entries run no kernel: their output
        # is the size as 4 little-endian bytes, the public function's for variant "default", else
        # the named tier's (kernels_py's isa), on any core.
        *(
            FunctionSpec(name, fid, (*params, "ctx.size"), _CONV_ARRAYS)
            for name, fid, params in (
                ("arm_convolve_s8", 0x10, _CONV_PARAMS),
                ("arm_convolve_wrapper_s8", 0x11, _CONV_PARAMS),
                ("arm_convolve_1x1_s8_fast", 0x12, _CONV_PARAMS),
                ("arm_convolve_1x1_s8", 0x13, _CONV_PARAMS),
                ("arm_convolve_1_x_n_s8", 0x14, _CONV_PARAMS),
                ("arm_transpose_conv_s8", 0x15, _TRANSPOSE_CONV_PARAMS),
                ("arm_transpose_conv_wrapper_s8", 0x16, _TRANSPOSE_CONV_PARAMS),
            )
        ),
        FunctionSpec("arm_convolve_wrapper_s8_get_buffer_size", 0x17, _CONV_PARAMS),
        FunctionSpec("arm_convolve_s8_get_buffer_size", 0x18, _CONV_PARAMS),
        FunctionSpec("arm_convolve_1_x_n_s8_get_buffer_size", 0x19, _CONV_PARAMS),
        FunctionSpec("arm_convolve_1x1_s8_fast_get_buffer_size", 0x1A, _CONV_PARAMS),
        FunctionSpec("arm_transpose_conv_s8_get_buffer_size", 0x1B, _TRANSPOSE_CONV_PARAMS),
        FunctionSpec("arm_transpose_conv_s8_get_reverse_conv_buffer_size", 0x1C, _TRANSPOSE_CONV_PARAMS),
        # Depthwise and pooling (0x20-0x2F). The *_get_buffer_size entries run no kernel: their
        # output is the size as 4 little-endian bytes; variant "scalar" is a scalar build's answer.
        *(
            FunctionSpec(name, fid, (*_DEPTHWISE_PARAMS, "ctx.size"), _DEPTHWISE_ARRAYS)
            for name, fid in (
                ("arm_depthwise_conv_wrapper_s8", 0x20),
                ("arm_depthwise_conv_s8", 0x21),
                ("arm_depthwise_conv_3x3_s8", 0x22),
                ("arm_depthwise_conv_s8_opt", 0x23),
            )
        ),
        FunctionSpec("arm_depthwise_conv_wrapper_s8_get_buffer_size", 0x24, _DEPTHWISE_PARAMS),
        FunctionSpec("arm_depthwise_conv_s8_opt_get_buffer_size", 0x25, _DEPTHWISE_PARAMS),
        FunctionSpec("arm_avgpool_s8", 0x28, _POOL_PARAMS, (ArraySpec("input", _S8),)),
        FunctionSpec("arm_max_pool_s8", 0x29, _POOL_PARAMS, (ArraySpec("input", _S8),)),
        FunctionSpec("arm_avgpool_s8_get_buffer_size", 0x2A, ("output_dims.w", "input_dims.c")),
        # Softmax, matmul, min/max, activations and layout (0x30-0x4F, harness/functions_ops.c).
        # `ctx.size` as for depthwise; `permutations[k]` is the transpose's list padded to four
        # entries; arm_vector_sum_s8's output is int32 and the buffer-size entry's the size, both as
        # little-endian bytes (view them as "<i4"). refsim_lut_s8 has no CMSIS-NN counterpart.
        FunctionSpec(
            "arm_softmax_s8",
            0x30,
            ("num_rows", "row_size", "mult", "shift", "diff_min"),
            (ArraySpec("input", _S8),),
        ),
        FunctionSpec(
            "arm_batch_matmul_s8",
            0x31,
            (
                "adj_x",
                "adj_y",
                *(f"fc_params.{k}" for k in ("input_offset", "filter_offset", "output_offset")),
                "fc_params.activation.min",
                "fc_params.activation.max",
                "multiplier",
                "shift",
                *(
                    f"{dims}.{k}"
                    for dims in ("input_lhs_dims", "input_rhs_dims", "output_dims")
                    for k in "nhwc"
                ),
                "ctx.size",
            ),
            (ArraySpec("input_lhs", _S8), ArraySpec("input_rhs", _S8)),
        ),
        FunctionSpec(
            "arm_batch_matmul_s8_get_buffer_size", 0x32, tuple(f"input_rhs_dims.{k}" for k in "nhwc")
        ),
        FunctionSpec(
            "arm_fully_connected_per_channel_s8",
            0x33,
            (
                "input_offset",
                "filter_offset",
                "output_offset",
                "activation.min",
                "activation.max",
                "input_dims.n",
                "filter_dims.n",
                "output_dims.c",
                "ctx.size",
            ),
            (
                ArraySpec("input", _S8),
                ArraySpec("filter", _S8),
                ArraySpec("bias", _S32, optional=True),
                ArraySpec("multiplier", _S32),
                ArraySpec("shift", _S32),
            ),
        ),
        FunctionSpec(
            "arm_vector_sum_s8",
            0x34,
            ("vector_cols", "vector_rows", "lhs_offset", "rhs_offset"),
            (ArraySpec("vector_data", _S8), ArraySpec("bias_data", _S32, optional=True)),
        ),
        *(
            FunctionSpec(
                name,
                fid,
                tuple(
                    f"{dims}.{k}" for dims in ("input_1_dims", "input_2_dims", "output_dims") for k in "nhwc"
                ),
                (ArraySpec("input_1", _S8), ArraySpec("input_2", _S8)),
            )
            for name, fid in (("arm_maximum_s8", 0x35), ("arm_minimum_s8", 0x36))
        ),
        FunctionSpec("arm_relu6_s8", 0x37, ("size",), (ArraySpec("input", _S8),)),
        FunctionSpec(
            "arm_pad_s8",
            0x38,
            (*(f"{dims}.{k}" for dims in ("input_size", "pre_pad", "post_pad") for k in "nhwc"), "pad_value"),
            (ArraySpec("input", _S8),),
        ),
        FunctionSpec(
            "arm_transpose_s8",
            0x39,
            (
                "num_dims",
                *(f"permutations[{k}]" for k in range(4)),
                *(f"{dims}.{k}" for dims in ("input_dims", "output_dims") for k in "nhwc"),
            ),
            (ArraySpec("input", _S8),),
        ),
        FunctionSpec("refsim_lut_s8", 0x3A, (), (ArraySpec("input", _S8), ArraySpec("table", _S8))),
        # Test-only (ids 0xFF00 and up): harness round trip, fault and timeout reporting.
        FunctionSpec("test_echo", 0xFF00, (), (ArraySpec("data", _S8),)),
        FunctionSpec("test_fault", 0xFF01, ("address",)),
        FunctionSpec("test_hang", 0xFF02, ()),
    )
}
_BY_ID = {spec.id: spec for spec in FUNCTIONS.values()}


@dataclass(frozen=True)
class Case:
    """One kernel call: the function's name, its scalar parameters and arrays by name."""

    function: str
    params: Mapping[str, int] = field(default_factory=dict)
    arrays: Mapping[str, np.ndarray] = field(default_factory=dict)
    variant: str = "default"


@dataclass(frozen=True)
class CaseResult:
    """What the harness reported for one case."""

    function: str
    harness_status: int
    kernel_status: int
    output: np.ndarray

    @property
    def ok(self) -> bool:
        return self.harness_status == 0


def _spec(function: str) -> FunctionSpec:
    try:
        return FUNCTIONS[function]
    except KeyError:
        raise QemuError(f"kernels_c: function must be one of {sorted(FUNCTIONS)}, got {function!r}") from None


def _pad4(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)


def encode_case(case: Case) -> bytes:
    """One case record. Raises QemuError when a parameter or array is missing, extra or mistyped."""
    spec = _spec(case.function)
    if set(case.params) != set(spec.params):
        raise QemuError(f"{spec.name}: params must be {sorted(spec.params)}, got {sorted(case.params)}")
    if set(case.arrays) != {a.name for a in spec.arrays}:
        raise QemuError(
            f"{spec.name}: arrays must be {sorted(a.name for a in spec.arrays)}, got {sorted(case.arrays)}"
        )
    if case.variant not in VARIANTS:
        raise QemuError(f"{spec.name}: variant must be one of {sorted(VARIANTS)}, got {case.variant!r}")
    values = [int(case.params[name]) for name in spec.params]
    for name, value in zip(spec.params, values, strict=True):
        if not -(2**31) <= value < 2**32:
            raise QemuError(f"{spec.name}: {name} must fit 32 bits, got {value}")
    body = [struct.pack(f"<{len(values)}I", *(v & 0xFFFFFFFF for v in values))]
    for array_spec in spec.arrays:
        array = np.asarray(case.arrays[array_spec.name])
        if array.dtype != array_spec.dtype:
            raise QemuError(f"{spec.name}: {array_spec.name} must be {array_spec.dtype}, got {array.dtype}")
        # An empty array is a zero-size call (block_size 0 and the like), which CMSIS-NN accepts;
        # the harness checks every length against the params.
        data = np.ascontiguousarray(array).tobytes()
        body.append(_ARRAY.pack(_DTYPE_CODES[array_spec.dtype], array.size) + _pad4(data))
    payload = b"".join(body)
    header = _CASE.pack(
        _CASE.size + len(payload), spec.id, VARIANTS[case.variant], 0, len(values), len(spec.arrays)
    )
    return header + payload


def encode_batch(cases: Sequence[Case]) -> bytes:
    records = b"".join(encode_case(case) for case in cases)
    return _HEADER.pack(BATCH_MAGIC, VERSION, len(cases), _HEADER.size + len(records)) + records


def decode_results(data: bytes, expected_cases: int) -> list[CaseResult]:
    """Parse a result file written by the harness."""
    if len(data) < _HEADER.size:
        raise QemuError(
            f"kernels_c: result file must hold at least a {_HEADER.size}-byte header, got {len(data)} bytes"
        )
    magic, version, num_cases, total = _HEADER.unpack_from(data)
    if (magic, version, num_cases, total) != (RESULT_MAGIC, VERSION, expected_cases, len(data)):
        raise QemuError(
            f"kernels_c: result header must be {RESULT_MAGIC!r} v{VERSION} with {expected_cases} cases in "
            f"{len(data)} bytes, got {magic!r} v{version} with {num_cases} cases in {total} bytes"
        )
    results = []
    offset = _HEADER.size
    for _ in range(num_cases):
        record_bytes, function_id, harness_status, kernel_status, output_bytes = _RESULT.unpack_from(
            data, offset
        )
        start = offset + _RESULT.size
        output = np.frombuffer(data, dtype=np.int8, count=output_bytes, offset=start).copy()
        spec = _BY_ID.get(function_id)
        results.append(
            CaseResult(spec.name if spec else f"id {function_id:#x}", harness_status, kernel_status, output)
        )
        offset += record_bytes
    return results
