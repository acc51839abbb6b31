// OpData of TFLM's CMSIS-NN kernel kernels/cmsis_nn/fully_connected.cc: private to that file (an anonymous
// namespace), so the file itself is compiled here and its OpData sized.
#include "tensorflow/lite/micro/kernels/cmsis_nn/fully_connected.cc"

#include "probe.h"

REFSIM_PROBE(cmsis_nn_fully_connected_OpData, tflite::OpData)
