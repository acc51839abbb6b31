/*
 * refsim fp32 probe: ExecuTorch's portable fp32 kernels (kernels/portable/cpu, built from source
 * by refsim/lab/executorch/float_probe.py) called directly on 1-D float tensors of several lengths, each
 * call inside one counting window (rs_kernel_begin .. rs_kernel_end), so the per-element cost of
 * an op is the slope of its windows over the lengths and its fixed cost (dtype checks, broadcast
 * resolution, the dispatch into the element loop) the intercept.
 *
 * Then the same arithmetic as plain C loops (loop_*: what an application's own loop or a tight
 * kernel pays), one window per call, after the kernels.
 *
 * Windows, in order: for every op of kOps, for every length of kLengths, one call. aten::mm runs
 * [length / 16, 16] x [16, 16] (16 multiply-accumulates per output element, 16 x length in all).
 * Inputs repeat with period 16, so every length sees the same values (libgcc's soft-float and
 * newlib's expf take data-dependent paths): a in [0.5, 1.5), b in [1, 2) (no denormals, no
 * division by zero, exp in range).
 */
#include <cstddef>
#include <cmath>
#include <cstdint>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/core/portable_type/tensor_impl.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>
#include <executorch/runtime/platform/runtime.h>

extern "C" {
#include "semihost.h"
void rs_kernel_begin(void) __attribute__((noipa));
void rs_kernel_end(void) __attribute__((noipa));
}

void rs_kernel_begin(void) { __asm volatile("" ::: "memory"); }
void rs_kernel_end(void) { __asm volatile("" ::: "memory"); }

using executorch::aten::MemoryFormat;
using executorch::aten::Scalar;
using executorch::aten::ScalarType;
using executorch::aten::Tensor;
using executorch::runtime::KernelRuntimeContext;
using executorch::runtime::etensor::TensorImpl;

namespace torch::executor::native
{
Tensor &add_out(KernelRuntimeContext &, const Tensor &, const Tensor &, const Scalar &, Tensor &);
Tensor &sub_out(KernelRuntimeContext &, const Tensor &, const Tensor &, const Scalar &, Tensor &);
Tensor &mul_out(KernelRuntimeContext &, const Tensor &, const Tensor &, Tensor &);
Tensor &div_out(KernelRuntimeContext &, const Tensor &, const Tensor &, Tensor &);
Tensor &exp_out(KernelRuntimeContext &, const Tensor &, Tensor &);
Tensor &tanh_out(KernelRuntimeContext &, const Tensor &, Tensor &);
Tensor &sigmoid_out(KernelRuntimeContext &, const Tensor &, Tensor &);
Tensor &sqrt_out(KernelRuntimeContext &, const Tensor &, Tensor &);
Tensor &neg_out(KernelRuntimeContext &, const Tensor &, Tensor &);
Tensor &clone_out(KernelRuntimeContext &, const Tensor &, std::optional<MemoryFormat>, Tensor &);
Tensor &mm_out(KernelRuntimeContext &, const Tensor &, const Tensor &, Tensor &);
} // namespace torch::executor::native

namespace
{
namespace native = torch::executor::native;

/* The plain loops (noipa: compiled as a separate function would be; the optimiser may
 * unroll or pipeline them as it would an application's). */
__attribute__((noipa)) void loop_copy(const float *a, float *out, int32_t n)
{
    for (int32_t i = 0; i < n; ++i) out[i] = a[i];
}
__attribute__((noipa)) void loop_add(const float *a, const float *b, float *out, int32_t n)
{
    for (int32_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
__attribute__((noipa)) void loop_mul(const float *a, const float *b, float *out, int32_t n)
{
    for (int32_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}
__attribute__((noipa)) void loop_div(const float *a, const float *b, float *out, int32_t n)
{
    for (int32_t i = 0; i < n; ++i) out[i] = a[i] / b[i];
}
__attribute__((noipa)) void loop_exp(const float *a, float *out, int32_t n)
{
    for (int32_t i = 0; i < n; ++i) out[i] = expf(a[i]);
}
__attribute__((noipa)) float loop_mac(const float *a, const float *b, int32_t n)
{
    float sum = 0.0f;
    for (int32_t i = 0; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

enum Loop
{
    kLoopCopy,
    kLoopAdd,
    kLoopMul,
    kLoopDiv,
    kLoopExp,
    kLoopMac,
    kLoops
};

/* Keep in step with float_probe.OPS and float_probe.LENGTHS. */
enum Op
{
    kAdd,
    kSub,
    kMul,
    kDiv,
    kExp,
    kTanh,
    kSigmoid,
    kSqrt,
    kNeg,
    kClone,
    kMm,
    kOps
};
constexpr int32_t kLengths[] = {16, 64, 256};
constexpr int32_t kMaxLength = 256;
constexpr int32_t kInner = 16; /* aten::mm: the reduction and output width */

alignas(16) float a_data[kMaxLength];
alignas(16) float b_data[kMaxLength];
alignas(16) float out_data[kMaxLength];

void run(Op op, int32_t length)
{
    const bool mm = op == kMm;
    const ssize_t dim = mm ? 2 : 1;
    TensorImpl::SizesType sizes[2] = {length, 1};
    TensorImpl::SizesType a_sizes[2] = {length / kInner, kInner};
    TensorImpl::SizesType b_sizes[2] = {kInner, kInner};
    TensorImpl::DimOrderType dim_order[2] = {0, 1};
    TensorImpl::StridesType strides[2] = {1, 1};
    TensorImpl::StridesType mm_strides[2] = {kInner, 1};
    TensorImpl a_impl(ScalarType::Float, dim, mm ? a_sizes : sizes, a_data, dim_order, mm ? mm_strides : strides);
    TensorImpl b_impl(ScalarType::Float, dim, mm ? b_sizes : sizes, b_data, dim_order, mm ? mm_strides : strides);
    TensorImpl out_impl(ScalarType::Float, dim, mm ? a_sizes : sizes, out_data, dim_order, mm ? mm_strides : strides);
    Tensor a(&a_impl), b(&b_impl), out(&out_impl);
    KernelRuntimeContext context;
    Scalar alpha(1.0);
    rs_kernel_begin();
    switch (op)
    {
    case kAdd: native::add_out(context, a, b, alpha, out); break;
    case kSub: native::sub_out(context, a, b, alpha, out); break;
    case kMul: native::mul_out(context, a, b, out); break;
    case kDiv: native::div_out(context, a, b, out); break;
    case kExp: native::exp_out(context, a, out); break;
    case kTanh: native::tanh_out(context, a, out); break;
    case kSigmoid: native::sigmoid_out(context, a, out); break;
    case kSqrt: native::sqrt_out(context, a, out); break;
    case kNeg: native::neg_out(context, a, out); break;
    case kClone: native::clone_out(context, a, std::nullopt, out); break;
    case kMm: native::mm_out(context, a, b, out); break;
    case kOps: break;
    }
    rs_kernel_end();
    if (context.failure_state() != executorch::runtime::Error::Ok)
    {
        sh_puts("float-probe: a kernel failed\n");
        sh_exit(20 + (int32_t)op);
    }
}

volatile float sink;

void run_loop(Loop loop, int32_t n)
{
    rs_kernel_begin();
    switch (loop)
    {
    case kLoopCopy: loop_copy(a_data, out_data, n); break;
    case kLoopAdd: loop_add(a_data, b_data, out_data, n); break;
    case kLoopMul: loop_mul(a_data, b_data, out_data, n); break;
    case kLoopDiv: loop_div(a_data, b_data, out_data, n); break;
    case kLoopExp: loop_exp(a_data, out_data, n); break;
    case kLoopMac: sink = loop_mac(a_data, b_data, n); break;
    case kLoops: break;
    }
    rs_kernel_end();
}
} // namespace

extern "C" int main(void)
{
    executorch::runtime::runtime_init();
    for (int32_t i = 0; i < kMaxLength; ++i)
    {
        a_data[i] = 0.5f + (float)(i % 16) / 16.0f;
        b_data[i] = 1.0f + (float)((i * 7) % 16) / 16.0f;
    }
    for (int op = 0; op < kOps; ++op)
    {
        for (int32_t length : kLengths)
        {
            run((Op)op, length);
        }
    }
    for (int loop = 0; loop < kLoops; ++loop)
    {
        for (int32_t length : kLengths)
        {
            run_loop((Loop)loop, length);
        }
    }
    return 0;
}
