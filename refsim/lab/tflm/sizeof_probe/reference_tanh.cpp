// OpData of TFLM's reference kernel kernels/tanh.cc: private to that file (an anonymous namespace),
// so the file itself is compiled here and its OpData sized.
#include "tensorflow/lite/micro/kernels/tanh.cc"

#include "probe.h"

REFSIM_PROBE(tanh_OpData, tflite::OpData)
