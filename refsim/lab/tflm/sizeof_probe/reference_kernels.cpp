// OpData of TFLM's reference kernels (tensorflow/lite/micro/kernels/*.cc): the types their
// Init functions hand to AllocatePersistentBuffer, all declared in the kernels' headers.
#include "tensorflow/lite/micro/kernels/add.h"
#include "tensorflow/lite/micro/kernels/conv.h"
#include "tensorflow/lite/micro/kernels/depthwise_conv.h"
#include "tensorflow/lite/micro/kernels/fully_connected.h"
#include "tensorflow/lite/micro/kernels/pooling.h"
#include "tensorflow/lite/micro/kernels/softmax.h"
#include "tensorflow/lite/kernels/internal/types.h"

#include "probe.h"

REFSIM_PROBE(OpDataConv, tflite::OpDataConv)
REFSIM_PROBE(OpDataFullyConnected, tflite::OpDataFullyConnected)
REFSIM_PROBE(OpDataPooling, tflite::OpDataPooling)
REFSIM_PROBE(OpDataAdd, tflite::OpDataAdd)
REFSIM_PROBE(SoftmaxParams, tflite::SoftmaxParams)
