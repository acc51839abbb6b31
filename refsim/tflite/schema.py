"""The parts of TFLite's schema 3 that refsim reads: enums with their schema numbers and the
vtable slot of every field the reader and writer touch.

Source: tensorflow/compiler/mlir/lite/schema/schema.fbs in tensorflow/tflite-micro at commit
90b983c2b3f1480642e040bbd2ddb37b998f3424 (file identifier "TFL3", schema version 3). A table
stores field ``i`` (in schema order, deprecated fields included) at vtable slot ``i``; a union
field takes two slots, ``<name>_type`` then ``<name>``. tests/tflite/test_schema.py checks these
numbers against the schema file when a copy of it is at hand.
"""

from __future__ import annotations

from enum import IntEnum

FILE_IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3
#: OperatorCode.deprecated_builtin_code holds codes below this; larger ones only in builtin_code.
PLACEHOLDER_FOR_GREATER_OP_CODES = 127


class TensorType(IntEnum):
    FLOAT32 = 0
    FLOAT16 = 1
    INT32 = 2
    UINT8 = 3
    INT64 = 4
    STRING = 5
    BOOL = 6
    INT16 = 7
    COMPLEX64 = 8
    INT8 = 9
    FLOAT64 = 10
    COMPLEX128 = 11
    UINT64 = 12
    RESOURCE = 13
    VARIANT = 14
    UINT32 = 15
    UINT16 = 16
    INT4 = 17
    BFLOAT16 = 18
    INT2 = 19
    UINT4 = 20
    FLOAT8_E4M3FN = 21
    FLOAT8_E5M2 = 22

    @property
    def bits(self) -> int | None:
        """Bits per element as stored in a buffer (sub-byte types packed); None: no fixed size."""
        return _BITS.get(self)

    @property
    def numpy_dtype(self) -> str | None:
        return _NUMPY.get(self)


_BITS = {
    TensorType.FLOAT32: 32,
    TensorType.FLOAT16: 16,
    TensorType.INT32: 32,
    TensorType.UINT8: 8,
    TensorType.INT64: 64,
    TensorType.BOOL: 8,
    TensorType.INT16: 16,
    TensorType.COMPLEX64: 64,
    TensorType.INT8: 8,
    TensorType.FLOAT64: 64,
    TensorType.COMPLEX128: 128,
    TensorType.UINT64: 64,
    TensorType.UINT32: 32,
    TensorType.UINT16: 16,
    TensorType.INT4: 4,
    TensorType.BFLOAT16: 16,
    TensorType.INT2: 2,
    TensorType.UINT4: 4,
    TensorType.FLOAT8_E4M3FN: 8,
    TensorType.FLOAT8_E5M2: 8,
}
_NUMPY = {
    TensorType.FLOAT32: "<f4",
    TensorType.FLOAT16: "<f2",
    TensorType.INT32: "<i4",
    TensorType.UINT8: "u1",
    TensorType.INT64: "<i8",
    TensorType.BOOL: "?",
    TensorType.INT16: "<i2",
    TensorType.COMPLEX64: "<c8",
    TensorType.INT8: "i1",
    TensorType.FLOAT64: "<f8",
    TensorType.COMPLEX128: "<c16",
    TensorType.UINT64: "<u8",
    TensorType.UINT32: "<u4",
    TensorType.UINT16: "<u2",
}


class BuiltinOperator(IntEnum):
    """Every builtin of the schema, numbered as there (0..209, REDUCE_WINDOW deprecated)."""

    ADD = 0
    AVERAGE_POOL_2D = 1
    CONCATENATION = 2
    CONV_2D = 3
    DEPTHWISE_CONV_2D = 4
    DEPTH_TO_SPACE = 5
    DEQUANTIZE = 6
    EMBEDDING_LOOKUP = 7
    FLOOR = 8
    FULLY_CONNECTED = 9
    HASHTABLE_LOOKUP = 10
    L2_NORMALIZATION = 11
    L2_POOL_2D = 12
    LOCAL_RESPONSE_NORMALIZATION = 13
    LOGISTIC = 14
    LSH_PROJECTION = 15
    LSTM = 16
    MAX_POOL_2D = 17
    MUL = 18
    RELU = 19
    RELU_N1_TO_1 = 20
    RELU6 = 21
    RESHAPE = 22
    RESIZE_BILINEAR = 23
    RNN = 24
    SOFTMAX = 25
    SPACE_TO_DEPTH = 26
    SVDF = 27
    TANH = 28
    CONCAT_EMBEDDINGS = 29
    SKIP_GRAM = 30
    CALL = 31
    CUSTOM = 32
    EMBEDDING_LOOKUP_SPARSE = 33
    PAD = 34
    UNIDIRECTIONAL_SEQUENCE_RNN = 35
    GATHER = 36
    BATCH_TO_SPACE_ND = 37
    SPACE_TO_BATCH_ND = 38
    TRANSPOSE = 39
    MEAN = 40
    SUB = 41
    DIV = 42
    SQUEEZE = 43
    UNIDIRECTIONAL_SEQUENCE_LSTM = 44
    STRIDED_SLICE = 45
    BIDIRECTIONAL_SEQUENCE_RNN = 46
    EXP = 47
    TOPK_V2 = 48
    SPLIT = 49
    LOG_SOFTMAX = 50
    DELEGATE = 51
    BIDIRECTIONAL_SEQUENCE_LSTM = 52
    CAST = 53
    PRELU = 54
    MAXIMUM = 55
    ARG_MAX = 56
    MINIMUM = 57
    LESS = 58
    NEG = 59
    PADV2 = 60
    GREATER = 61
    GREATER_EQUAL = 62
    LESS_EQUAL = 63
    SELECT = 64
    SLICE = 65
    SIN = 66
    TRANSPOSE_CONV = 67
    SPARSE_TO_DENSE = 68
    TILE = 69
    EXPAND_DIMS = 70
    EQUAL = 71
    NOT_EQUAL = 72
    LOG = 73
    SUM = 74
    SQRT = 75
    RSQRT = 76
    SHAPE = 77
    POW = 78
    ARG_MIN = 79
    FAKE_QUANT = 80
    REDUCE_PROD = 81
    REDUCE_MAX = 82
    PACK = 83
    LOGICAL_OR = 84
    ONE_HOT = 85
    LOGICAL_AND = 86
    LOGICAL_NOT = 87
    UNPACK = 88
    REDUCE_MIN = 89
    FLOOR_DIV = 90
    REDUCE_ANY = 91
    SQUARE = 92
    ZEROS_LIKE = 93
    FILL = 94
    FLOOR_MOD = 95
    RANGE = 96
    RESIZE_NEAREST_NEIGHBOR = 97
    LEAKY_RELU = 98
    SQUARED_DIFFERENCE = 99
    MIRROR_PAD = 100
    ABS = 101
    SPLIT_V = 102
    UNIQUE = 103
    CEIL = 104
    REVERSE_V2 = 105
    ADD_N = 106
    GATHER_ND = 107
    COS = 108
    WHERE = 109
    RANK = 110
    ELU = 111
    REVERSE_SEQUENCE = 112
    MATRIX_DIAG = 113
    QUANTIZE = 114
    MATRIX_SET_DIAG = 115
    ROUND = 116
    HARD_SWISH = 117
    IF = 118
    WHILE = 119
    NON_MAX_SUPPRESSION_V4 = 120
    NON_MAX_SUPPRESSION_V5 = 121
    SCATTER_ND = 122
    SELECT_V2 = 123
    DENSIFY = 124
    SEGMENT_SUM = 125
    BATCH_MATMUL = 126
    PLACEHOLDER_FOR_GREATER_OP_CODES = 127
    CUMSUM = 128
    CALL_ONCE = 129
    BROADCAST_TO = 130
    RFFT2D = 131
    CONV_3D = 132
    IMAG = 133
    REAL = 134
    COMPLEX_ABS = 135
    HASHTABLE = 136
    HASHTABLE_FIND = 137
    HASHTABLE_IMPORT = 138
    HASHTABLE_SIZE = 139
    REDUCE_ALL = 140
    CONV_3D_TRANSPOSE = 141
    VAR_HANDLE = 142
    READ_VARIABLE = 143
    ASSIGN_VARIABLE = 144
    BROADCAST_ARGS = 145
    RANDOM_STANDARD_NORMAL = 146
    BUCKETIZE = 147
    RANDOM_UNIFORM = 148
    MULTINOMIAL = 149
    GELU = 150
    DYNAMIC_UPDATE_SLICE = 151
    RELU_0_TO_1 = 152
    UNSORTED_SEGMENT_PROD = 153
    UNSORTED_SEGMENT_MAX = 154
    UNSORTED_SEGMENT_SUM = 155
    ATAN2 = 156
    UNSORTED_SEGMENT_MIN = 157
    SIGN = 158
    BITCAST = 159
    BITWISE_XOR = 160
    RIGHT_SHIFT = 161
    STABLEHLO_LOGISTIC = 162
    STABLEHLO_ADD = 163
    STABLEHLO_DIVIDE = 164
    STABLEHLO_MULTIPLY = 165
    STABLEHLO_MAXIMUM = 166
    STABLEHLO_RESHAPE = 167
    STABLEHLO_CLAMP = 168
    STABLEHLO_CONCATENATE = 169
    STABLEHLO_BROADCAST_IN_DIM = 170
    STABLEHLO_CONVOLUTION = 171
    STABLEHLO_SLICE = 172
    STABLEHLO_CUSTOM_CALL = 173
    STABLEHLO_REDUCE = 174
    STABLEHLO_ABS = 175
    STABLEHLO_AND = 176
    STABLEHLO_COSINE = 177
    STABLEHLO_EXPONENTIAL = 178
    STABLEHLO_FLOOR = 179
    STABLEHLO_LOG = 180
    STABLEHLO_MINIMUM = 181
    STABLEHLO_NEGATE = 182
    STABLEHLO_OR = 183
    STABLEHLO_POWER = 184
    STABLEHLO_REMAINDER = 185
    STABLEHLO_RSQRT = 186
    STABLEHLO_SELECT = 187
    STABLEHLO_SUBTRACT = 188
    STABLEHLO_TANH = 189
    STABLEHLO_SCATTER = 190
    STABLEHLO_COMPARE = 191
    STABLEHLO_CONVERT = 192
    STABLEHLO_DYNAMIC_SLICE = 193
    STABLEHLO_DYNAMIC_UPDATE_SLICE = 194
    STABLEHLO_PAD = 195
    STABLEHLO_IOTA = 196
    STABLEHLO_DOT_GENERAL = 197
    STABLEHLO_REDUCE_WINDOW = 198
    STABLEHLO_SORT = 199
    STABLEHLO_WHILE = 200
    STABLEHLO_GATHER = 201
    STABLEHLO_TRANSPOSE = 202
    DILATE = 203
    STABLEHLO_RNG_BIT_GENERATOR = 204
    REDUCE_WINDOW = 205
    STABLEHLO_COMPOSITE = 206
    STABLEHLO_SHIFT_LEFT = 207
    STABLEHLO_CBRT = 208
    STABLEHLO_CASE = 209


class Padding(IntEnum):
    SAME = 0
    VALID = 1


class ActivationFunctionType(IntEnum):
    NONE = 0
    RELU = 1
    RELU_N1_TO_1 = 2
    RELU6 = 3
    TANH = 4
    SIGN_BIT = 5


class FullyConnectedOptionsWeightsFormat(IntEnum):
    DEFAULT = 0
    SHUFFLED4x16INT8 = 1


#: The BuiltinOptions union's members by type number (0 is NONE).
BUILTIN_OPTIONS: tuple[str, ...] = (
    "NONE",
    *"""
    Conv2DOptions DepthwiseConv2DOptions ConcatEmbeddingsOptions LSHProjectionOptions
    Pool2DOptions SVDFOptions RNNOptions FullyConnectedOptions SoftmaxOptions
    ConcatenationOptions AddOptions L2NormOptions LocalResponseNormalizationOptions LSTMOptions
    ResizeBilinearOptions CallOptions ReshapeOptions SkipGramOptions SpaceToDepthOptions
    EmbeddingLookupSparseOptions MulOptions PadOptions GatherOptions BatchToSpaceNDOptions
    SpaceToBatchNDOptions TransposeOptions ReducerOptions SubOptions DivOptions SqueezeOptions
    SequenceRNNOptions StridedSliceOptions ExpOptions TopKV2Options SplitOptions
    LogSoftmaxOptions CastOptions DequantizeOptions MaximumMinimumOptions ArgMaxOptions
    LessOptions NegOptions PadV2Options GreaterOptions GreaterEqualOptions LessEqualOptions
    SelectOptions SliceOptions TransposeConvOptions SparseToDenseOptions TileOptions
    ExpandDimsOptions EqualOptions NotEqualOptions ShapeOptions PowOptions ArgMinOptions
    FakeQuantOptions PackOptions LogicalOrOptions OneHotOptions LogicalAndOptions
    LogicalNotOptions UnpackOptions FloorDivOptions SquareOptions ZerosLikeOptions FillOptions
    BidirectionalSequenceLSTMOptions BidirectionalSequenceRNNOptions
    UnidirectionalSequenceLSTMOptions FloorModOptions RangeOptions ResizeNearestNeighborOptions
    LeakyReluOptions SquaredDifferenceOptions MirrorPadOptions AbsOptions SplitVOptions
    UniqueOptions ReverseV2Options AddNOptions GatherNdOptions CosOptions WhereOptions
    RankOptions ReverseSequenceOptions MatrixDiagOptions QuantizeOptions MatrixSetDiagOptions
    HardSwishOptions IfOptions WhileOptions DepthToSpaceOptions NonMaxSuppressionV4Options
    NonMaxSuppressionV5Options ScatterNdOptions SelectV2Options DensifyOptions SegmentSumOptions
    BatchMatMulOptions CumsumOptions CallOnceOptions BroadcastToOptions Rfft2dOptions
    Conv3DOptions HashtableOptions HashtableFindOptions HashtableImportOptions
    HashtableSizeOptions VarHandleOptions ReadVariableOptions AssignVariableOptions
    RandomOptions BucketizeOptions GeluOptions DynamicUpdateSliceOptions
    UnsortedSegmentProdOptions UnsortedSegmentMaxOptions UnsortedSegmentMinOptions
    UnsortedSegmentSumOptions ATan2Options SignOptions BitcastOptions BitwiseXorOptions
    RightShiftOptions
    """.split(),  # noqa: SIM905  (126 names in 27 lines, not 126)
)

# -- vtable slots ------------------------------------------------------------------------------


class Model:
    version, operator_codes, subgraphs, description, buffers = 0, 1, 2, 3, 4
    metadata_buffer, metadata, signature_defs, external_buffer_groups, external_buffers = 5, 6, 7, 8, 9
    n_fields = 10


class OperatorCode:
    deprecated_builtin_code, custom_code, version, builtin_code = 0, 1, 2, 3
    n_fields = 4


class SubGraph:
    tensors, inputs, outputs, operators, name, debug_metadata_index = 0, 1, 2, 3, 4, 5
    n_fields = 6


class Tensor:
    shape, type, buffer, name, quantization, is_variable, sparsity, shape_signature = 0, 1, 2, 3, 4, 5, 6, 7
    has_rank, variant_tensors, external_buffer = 8, 9, 10
    n_fields = 11


class QuantizationParameters:
    min, max, scale, zero_point, details_type, details, quantized_dimension = 0, 1, 2, 3, 4, 5, 6
    n_fields = 7


class Operator:
    opcode_index, inputs, outputs, builtin_options_type, builtin_options = 0, 1, 2, 3, 4
    custom_options, custom_options_format, mutating_variable_inputs, intermediates = 5, 6, 7, 8
    large_custom_options_offset, large_custom_options_size = 9, 10
    builtin_options_2_type, builtin_options_2, debug_metadata_index = 11, 12, 13
    n_fields = 14


class Buffer:
    data, offset, size = 0, 1, 2
    n_fields = 3


class Metadata:
    name, buffer = 0, 1
    n_fields = 2


class TensorMap:
    name, tensor_index = 0, 1
    n_fields = 2


class SignatureDef:
    inputs, outputs, signature_key, deprecated_tag, subgraph_index = 0, 1, 2, 3, 4
    n_fields = 5
