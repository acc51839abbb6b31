/*
 * refsim TFLM measurement harness: TensorFlow Lite Micro's own MicroInterpreter (built from source
 * with the CMSIS-NN it pins, refsim/lab/tflm/build.py) on a Cortex-M core under QEMU, over every
 * .tflite model embedded in the image, in one emulator start.
 *
 * Per model k (console lines, parsed by refsim/lab/tflm/measure.py):
 *   1. AllocateTensors with a generous arena (RS_GENEROUS_ARENA bytes, 16-byte aligned start):
 *      "rs-tflm k used <arena_used_bytes()>";
 *   2. the embedded input copied into input 0, Invoke, each output's bytes:
 *      "rs-tflm k out <i> <hex>";
 *   3. the smallest arena size for which AllocateTensors succeeds, by bisection over byte counts
 *      on the same 16-byte-aligned start (success is monotone in the size: the head is planned
 *      from the start, the tail allocated downward from the end): "rs-tflm k min <bytes>";
 *   4. at that size, Invoke again and compare every output byte with step 2:
 *      "rs-tflm k min-invoke <1 if identical, else 0>".
 * With RS_TFLM_WINDOWS (per-op Invoke instruction counts, refsim.qemu.timing's counting plugin),
 * only steps 1-2 run, and every registration's invoke is wrapped (ops.h: rs_wrap<K>) in a function
 * that closes the counting window and opens the next before and after calling the kernel's own
 * invoke (TFLM's profiler hooks are compiled out of the release build). Step 2's Invoke opens the
 * first window and closes the last: per model 2n + 1 windows for n operators (window 0: Invoke's
 * entry up to op 0; window 2i + 1: op i's invoke; window 2i + 2: TFLM's own work between op i and
 * op i + 1, or up to Invoke's return).
 *
 * The model table, inputs and RS_TFLM_ADD_OPS come from generated files (blobs.S, ops.h).
 * Exit status: 0 done; 20 + step when a step fails for a model ("rs-tflm k fail <step>" first).
 */
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"

extern "C" {
#include "semihost.h"
void rs_kernel_begin(void) __attribute__((noipa));
void rs_kernel_end(void) __attribute__((noipa));
}

void rs_kernel_begin(void) { __asm volatile("" ::: "memory"); }
void rs_kernel_end(void) { __asm volatile("" ::: "memory"); }

/* Op K's registration with its invoke wrapped between two counting-window moves. */
template <int K> struct RsWrapped
{
    static TFLMRegistration real;
    static TfLiteStatus invoke(TfLiteContext *context, TfLiteNode *node)
    {
        rs_kernel_end();
        rs_kernel_begin();
        TfLiteStatus status = real.invoke(context, node);
        rs_kernel_end();
        rs_kernel_begin();
        return status;
    }
};
template <int K> TFLMRegistration RsWrapped<K>::real;
template <int K> TFLMRegistration rs_wrap(TFLMRegistration registration)
{
    RsWrapped<K>::real = registration;
    registration.invoke = RsWrapped<K>::invoke;
    return registration;
}

#include "ops.h"

/* blobs.S: per model {model, bytes, input, input bytes}; rs_blobs_end: the end of the embedded data. */
struct RsModel
{
    const uint8_t *data;
    uint32_t size;
    const uint8_t *input;
    uint32_t input_size;
};
extern "C" const RsModel rs_models[];
extern "C" const uint32_t rs_model_count;
extern "C" const uint8_t rs_blobs_end[];
extern "C" uint8_t __bulk_end[];

#ifndef RS_GENEROUS_ARENA
#define RS_GENEROUS_ARENA (1024u * 1024u)
#endif

namespace
{
constexpr uint32_t kLowest = 1024; /* an arena this small must fail (checked) */
constexpr uint32_t kMaxOutput = 4096;

alignas(tflite::MicroInterpreter) uint8_t interpreter_storage[sizeof(tflite::MicroInterpreter)];
uint8_t reference_output[kMaxOutput];
char line[2 * kMaxOutput + 64];

void emit(uint32_t model, const char *what, int32_t value)
{
    char *p = sh_fmt_str(line, "rs-tflm ");
    p = sh_fmt_dec(p, (int32_t)model);
    p = sh_fmt_str(p, " ");
    p = sh_fmt_str(p, what);
    p = sh_fmt_str(p, " ");
    p = sh_fmt_dec(p, value);
    sh_fmt_str(p, "\n");
    sh_puts(line);
}

[[noreturn]] void fail(uint32_t model, int step)
{
    emit(model, "fail", step);
    sh_exit(20 + step);
}

uint8_t *arena_start()
{
    uintptr_t at = ((uintptr_t)rs_blobs_end + 15u) & ~(uintptr_t)15u;
    return (uint8_t *)at;
}

/* A fresh interpreter on [arena, arena + size): AllocateTensors' status. */
tflite::MicroInterpreter *allocate(const tflite::Model *model, const tflite::MicroOpResolver &resolver,
                                   uint32_t size, bool *ok)
{
    auto *interpreter = new (interpreter_storage) tflite::MicroInterpreter(model, resolver, arena_start(), size);
    *ok = interpreter->AllocateTensors() == kTfLiteOk;
    return interpreter;
}

uint32_t run_and_read(uint32_t k, tflite::MicroInterpreter *interpreter, uint8_t *out)
{
    TfLiteTensor *input = interpreter->input(0);
    if (input == nullptr || input->bytes != rs_models[k].input_size)
    {
        fail(k, 2);
    }
    std::memcpy(input->data.raw, rs_models[k].input, input->bytes);
#ifdef RS_TFLM_WINDOWS
    rs_kernel_begin();
#endif
    TfLiteStatus status = interpreter->Invoke();
#ifdef RS_TFLM_WINDOWS
    rs_kernel_end();
#endif
    if (status != kTfLiteOk)
    {
        fail(k, 3);
    }
    uint32_t total = 0;
    for (size_t i = 0; i < interpreter->outputs_size(); ++i)
    {
        const TfLiteTensor *output = interpreter->output(i);
        if (total + output->bytes > kMaxOutput)
        {
            fail(k, 4);
        }
        std::memcpy(out + total, output->data.raw, output->bytes);
        total += output->bytes;
    }
    return total;
}

void print_outputs(uint32_t k, tflite::MicroInterpreter *interpreter)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < interpreter->outputs_size(); ++i)
    {
        const TfLiteTensor *output = interpreter->output(i);
        char *p = sh_fmt_str(line, "rs-tflm ");
        p = sh_fmt_dec(p, (int32_t)k);
        p = sh_fmt_str(p, " out ");
        p = sh_fmt_dec(p, (int32_t)i);
        p = sh_fmt_str(p, " ");
        const uint8_t *bytes = (const uint8_t *)output->data.raw;
        for (size_t b = 0; b < output->bytes; ++b)
        {
            *p++ = hex[bytes[b] >> 4];
            *p++ = hex[bytes[b] & 15];
        }
        sh_fmt_str(p, "\n");
        sh_puts(line);
    }
}

void measure(uint32_t k, const tflite::MicroOpResolver &resolver)
{
    static uint8_t output[kMaxOutput];
    const tflite::Model *model = tflite::GetModel(rs_models[k].data);
    if ((uintptr_t)(__bulk_end - arena_start()) < RS_GENEROUS_ARENA)
    {
        fail(k, 1);
    }
    bool ok = false;
    tflite::MicroInterpreter *interpreter = allocate(model, resolver, RS_GENEROUS_ARENA, &ok);
    if (!ok)
    {
        fail(k, 1);
    }
    emit(k, "used", (int32_t)interpreter->arena_used_bytes());
    uint32_t produced = run_and_read(k, interpreter, reference_output);
    print_outputs(k, interpreter);
    interpreter->~MicroInterpreter();
#ifdef RS_TFLM_WINDOWS
    return;
#endif

    uint32_t lo = kLowest, hi = RS_GENEROUS_ARENA; /* lo fails, hi succeeds */
    interpreter = allocate(model, resolver, lo, &ok);
    interpreter->~MicroInterpreter();
    if (ok)
    {
        fail(k, 5);
    }
    while (hi - lo > 1)
    {
        uint32_t mid = lo + (hi - lo) / 2;
        interpreter = allocate(model, resolver, mid, &ok);
        interpreter->~MicroInterpreter();
        (ok ? hi : lo) = mid;
    }
    emit(k, "min", (int32_t)hi);
    interpreter = allocate(model, resolver, hi, &ok);
    if (!ok)
    {
        fail(k, 6);
    }
    uint32_t again = run_and_read(k, interpreter, output);
    interpreter->~MicroInterpreter();
    emit(k, "min-invoke", again == produced && std::memcmp(output, reference_output, produced) == 0);
}
} // namespace

extern "C" int main(void)
{
    tflite::MicroMutableOpResolver<RS_TFLM_OP_COUNT> resolver;
    RS_TFLM_ADD_OPS(resolver);
    for (uint32_t k = 0; k < rs_model_count; ++k)
    {
        measure(k, resolver);
    }
    return 0;
}
