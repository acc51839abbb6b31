// The builtin parameter structs the flatbuffer parsers (tensorflow/lite/core/api/
// flatbuffer_conversions.cc) allocate with AllocatePOD<T>() for each operator.
#include "tensorflow/lite/core/c/builtin_op_data.h"

#include "probe.h"

REFSIM_PROBE(TfLiteConvParams, TfLiteConvParams)
REFSIM_PROBE(TfLiteDepthwiseConvParams, TfLiteDepthwiseConvParams)
REFSIM_PROBE(TfLiteFullyConnectedParams, TfLiteFullyConnectedParams)
REFSIM_PROBE(TfLitePoolParams, TfLitePoolParams)
REFSIM_PROBE(TfLiteReshapeParams, TfLiteReshapeParams)
REFSIM_PROBE(TfLiteSoftmaxParams, TfLiteSoftmaxParams)
REFSIM_PROBE(TfLiteAddParams, TfLiteAddParams)
REFSIM_PROBE(TfLiteMulParams, TfLiteMulParams)
REFSIM_PROBE(TfLiteReducerParams, TfLiteReducerParams)
REFSIM_PROBE(TfLiteConcatenationParams, TfLiteConcatenationParams)
REFSIM_PROBE(TfLiteStridedSliceParams, TfLiteStridedSliceParams)
REFSIM_PROBE(TfLiteSqueezeParams, TfLiteSqueezeParams)
