// OpData of TFLM's CMSIS-NN kernel kernels/cmsis_nn/add.cc: private to that file (an anonymous
// namespace), so the file itself is compiled here and its OpData sized.
#include "tensorflow/lite/micro/kernels/cmsis_nn/add.cc"

#include "probe.h"

REFSIM_PROBE(cmsis_nn_add_OpData, tflite::OpData)
