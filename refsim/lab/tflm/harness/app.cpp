/*
 * refsim TFLM flash firmware: the smallest application of one model, linked to be measured
 * (refsim/lab/tflm/measure.py splits its linker map), not to be run for results.
 *
 * A MicroMutableOpResolver holding exactly the model's ops (ops.h: RS_TFLM_ADD_OPS), a
 * MicroInterpreter over the model (blobs.S: rs_model, in flash) and a static 16-byte-aligned
 * arena of RS_ARENA_BYTES, AllocateTensors, the input zeroed, Invoke, the first output byte
 * stored in a volatile (so nothing is optimised away). Exit status: 0, or 1 + step on failure.
 */
#include <cstdint>
#include <cstring>

#include "ops.h"
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"

extern "C" const uint8_t rs_model[];

namespace
{
alignas(16) uint8_t tensor_arena[RS_ARENA_BYTES];
}
volatile int8_t rs_output_sink;

extern "C" int main(void)
{
    tflite::MicroMutableOpResolver<RS_TFLM_OP_COUNT> resolver;
    RS_TFLM_ADD_OPS(resolver);
    tflite::MicroInterpreter interpreter(tflite::GetModel(rs_model), resolver, tensor_arena, sizeof tensor_arena);
    if (interpreter.AllocateTensors() != kTfLiteOk)
    {
        return 1;
    }
    TfLiteTensor *input = interpreter.input(0);
    std::memset(input->data.raw, 0, input->bytes);
    if (interpreter.Invoke() != kTfLiteOk)
    {
        return 2;
    }
    rs_output_sink = interpreter.output(0)->data.int8[0];
    return 0;
}
