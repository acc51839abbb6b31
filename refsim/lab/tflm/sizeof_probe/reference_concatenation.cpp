// OpData of TFLM's reference kernel kernels/concatenation.cc: private to that file (an anonymous namespace),
// so the file itself is compiled here and its OpData sized.
#include "tensorflow/lite/micro/kernels/concatenation.cc"

#include "probe.h"

REFSIM_PROBE(concatenation_OpData, tflite::OpData)
