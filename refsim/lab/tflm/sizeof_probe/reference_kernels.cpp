// OpData of TFLM's reference kernels (tensorflow/lite/micro/kernels/*.cc): the types their
// Init functions hand to AllocatePersistentBuffer, all declared in the kernels' headers.
#include "tensorflow/lite/micro/kernels/add.h"
#include "tensorflow/lite/micro/kernels/conv.h"
#include "tensorflow/lite/micro/kernels/depthwise_conv.h"
#include "tensorflow/lite/micro/kernels/fully_connected.h"
#include "tensorflow/lite/micro/kernels/pooling.h"
#include "tensorflow/lite/micro/kernels/softmax.h"
#include "tensorflow/lite/micro/kernels/activations.h"
#include "tensorflow/lite/micro/kernels/dequantize.h"
#include "tensorflow/lite/micro/kernels/logistic.h"
#include "tensorflow/lite/micro/kernels/mul.h"
#include "tensorflow/lite/micro/kernels/pad.h"
#include "tensorflow/lite/micro/kernels/quantize.h"
#include "tensorflow/lite/micro/kernels/reduce.h"
#include "tensorflow/lite/kernels/internal/types.h"

#include "probe.h"

REFSIM_PROBE(OpDataConv, tflite::OpDataConv)
REFSIM_PROBE(OpDataFullyConnected, tflite::OpDataFullyConnected)
REFSIM_PROBE(OpDataPooling, tflite::OpDataPooling)
REFSIM_PROBE(OpDataAdd, tflite::OpDataAdd)
REFSIM_PROBE(SoftmaxParams, tflite::SoftmaxParams)
REFSIM_PROBE(OpDataQuantizeReference, tflite::OpDataQuantizeReference)
REFSIM_PROBE(DequantizeOpData, tflite::DequantizeOpData)
REFSIM_PROBE(OpDataMul, tflite::OpDataMul)
REFSIM_PROBE(pad_OpData, tflite::OpData)
REFSIM_PROBE(ReluOpData, tflite::ReluOpData)
REFSIM_PROBE(Relu6OpData, tflite::Relu6OpData)
REFSIM_PROBE(OpDataLogistic, tflite::OpDataLogistic)
REFSIM_PROBE(HardSwishParams, tflite::HardSwishParams)
REFSIM_PROBE(StridedSliceParams, tflite::StridedSliceParams)
REFSIM_PROBE(OpDataReduce, tflite::OpDataReduce)
