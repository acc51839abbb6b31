// refsim benchmarks/tflm_reference_device: TFLM's int8 reference kernels, with the float/double
// Prepare arithmetic each kernel's Prepare does, on a Cortex-M under QEMU, built with TFLM's
// flags. Compared on the host with kernels_py/tflm (benchmarks/tflm_reference_device.py).
//
// The Prepare lines below are the expressions of TFLM 90b983c2's Prepare functions (named at
// each), calling TFLM's own helpers (QuantizeMultiplier, CalculateInputRadius,
// DownScaleInt32ToInt16Multiplier, FloatToQuantizedType); Eval calls TFLM's templates.
//
// Command line (semihosting): "<in> <out>". <in>, little endian: u32 n_sets, then per set
// float in_scale, i32 in_zp, float out_scale, i32 out_zp; u32 n_x, n_x float32 QUANTIZE inputs.
// <out>: per set 6 x 256 int8 (QUANTIZE int8->int8, RELU, RELU6, LOGISTIC, TANH, HARD_SWISH
// over the input bytes -128..127), 256 float32 DEQUANTIZE values, n_x int8 QUANTIZE
// (float32 -> int8 with the set's output quantization).
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tensorflow/lite/kernels/internal/common.h"
#include "tensorflow/lite/kernels/internal/quantization_util.h"
#include "tensorflow/lite/kernels/internal/reference/dequantize.h"
#include "tensorflow/lite/kernels/internal/reference/hard_swish.h"
#include "tensorflow/lite/kernels/internal/reference/integer_ops/logistic.h"
#include "tensorflow/lite/kernels/internal/reference/integer_ops/tanh.h"
#include "tensorflow/lite/kernels/internal/reference/quantize.h"
#include "tensorflow/lite/kernels/internal/reference/requantize.h"
#include "tensorflow/lite/micro/micro_utils.h"

extern "C" {
#include "semihost.h"
int main(void);
// Nothing here allocates; libstdc++'s operator new is linked but never called. Without a heap
// symbol in the board's linker script, newlib's sbrk cannot link: fail any allocation instead.
void* _sbrk(int) { return reinterpret_cast<void*>(-1); }
}

alignas(8) static uint8_t g_in[1 << 18];
alignas(8) static uint8_t g_out[1 << 14];  // one set's results, written out set by set

template <typename T>
static T at(const uint8_t*& p) {
  T v;
  memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}

static int8_t g_bytes[256];

int main(void) {
  char cmd[256];
  if (sh_get_cmdline(cmd, sizeof cmd) != 0) return 2;
  char* last = strrchr(cmd, ' ');
  if (last == nullptr) return 2;
  *last = 0;
  char* out_path = last + 1;
  char* before = strrchr(cmd, ' ');
  char* in_path = before == nullptr ? cmd : before + 1;
  int32_t h = sh_open(in_path, SH_MODE_RB);
  if (h < 0) return 2;
  int32_t len = sh_flen(h);
  if (len <= 0 || len > (int32_t)sizeof g_in || sh_read(h, g_in, (uint32_t)len) != 0) return 3;
  sh_close(h);
  for (int i = 0; i < 256; ++i) g_bytes[i] = (int8_t)(i - 128);

  const uint8_t* p = g_in;
  const uint32_t n_sets = at<uint32_t>(p);
  const uint8_t* sets = p;
  p += n_sets * 16;
  const uint32_t n_x = at<uint32_t>(p);
  const float* x = reinterpret_cast<const float*>(p);

  const int32_t out_handle = sh_open(out_path, SH_MODE_WB);
  if (out_handle < 0) return 4;
  if (6 * 256 + 1024 + n_x > sizeof g_out) return 6;
  const int32_t dims[1] = {256};
  const tflite::RuntimeShape shape(1, dims);
  for (uint32_t s = 0; s < n_sets; ++s) {
    const uint8_t* q = sets + 16 * s;
    const float in_scale = at<float>(q);
    const int32_t in_zp = at<int32_t>(q);
    const float out_scale = at<float>(q);
    const int32_t out_zp = at<int32_t>(q);
    int8_t* out = reinterpret_cast<int8_t*>(g_out);
    memset(g_out, 0, sizeof g_out);

    // QUANTIZE int8 -> int8: PrepareQuantizeReference
    int32_t mult;
    int shift;
    tflite::QuantizeMultiplier(static_cast<double>(in_scale) / static_cast<double>(out_scale), &mult, &shift);
    if (shift <= 30) tflite::reference_ops::Requantize(g_bytes, 256, mult, shift, in_zp, out_zp, out);
    out += 256;

    // RELU: CalculateReluOpData<int8_t> + ReluQuantized
    tflite::QuantizeMultiplier(static_cast<double>(in_scale / out_scale), &mult, &shift);
    const int32_t act_min = std::max(static_cast<int32_t>(-128), out_zp + static_cast<int32_t>(roundf(0.0f / out_scale)));
    for (int i = 0; i < 256 && shift <= 30; ++i) {
      int32_t v = out_zp + tflite::MultiplyByQuantizedMultiplier(g_bytes[i] - in_zp, mult, shift);
      v = std::max(act_min, v);
      v = std::min(static_cast<int32_t>(127), v);
      out[i] = static_cast<int8_t>(v);
    }
    out += 256;

    // RELU6: Relu6Prepare + Relu6Quantized
    const int32_t six = tflite::FloatToQuantizedType<int8_t>(6.0f, in_scale, in_zp);
    const int8_t lower = static_cast<int8_t>(in_zp), upper = static_cast<int8_t>(six);
    for (int i = 0; i < 256; ++i) {
      const int8_t v = g_bytes[i];
      out[i] = v > upper ? upper : v < lower ? lower : v;
    }
    out += 256;

    // LOGISTIC and TANH: CalculateArithmeticOpDataLogistic / tanh.cc CalculateArithmeticOpData
    const double real = static_cast<double>(in_scale) * static_cast<double>(1 << (31 - 4));
    int left_shift;
    const double qd = std::frexp(real, &left_shift);
    const int32_t sig_mult = static_cast<int32_t>(tflite::TfLiteRound(qd * (1ll << 31)));
    const bool radius_defined = left_shift >= 0 && left_shift <= 62;
    const int32_t radius = radius_defined ? tflite::CalculateInputRadius(4, left_shift, 31) : 0;
    if (radius_defined) {
      tflite::reference_integer_ops::Logistic(in_zp, radius, sig_mult, left_shift, 256, g_bytes, out);
      tflite::reference_integer_ops::Tanh(in_zp, radius, sig_mult, left_shift, shape, g_bytes, shape, out + 256);
    }
    out += 512;

    // HARD_SWISH: HardSwishPrepare
    tflite::HardSwishParams hs;
    hs.input_zero_point = in_zp;
    hs.output_zero_point = out_zp;
    const float hires_input_scale = (1.0f / 128.0f) * in_scale;
    const float reluish_scale = 3.0f / 32768.0f;
    int32_t m32;
    tflite::QuantizeMultiplier(static_cast<double>(hires_input_scale / out_scale), &m32, &hs.output_multiplier_exponent);
    tflite::DownScaleInt32ToInt16Multiplier(m32, &hs.output_multiplier_fixedpoint_int16);
    tflite::QuantizeMultiplier(static_cast<double>(hires_input_scale / reluish_scale), &m32, &hs.reluish_multiplier_exponent);
    tflite::DownScaleInt32ToInt16Multiplier(m32, &hs.reluish_multiplier_fixedpoint_int16);
    if (hs.output_multiplier_exponent <= 0 && hs.reluish_multiplier_exponent <= 31) {
      tflite::reference_ops::HardSwish<int8_t>(hs, shape, g_bytes, shape, out);
    }
    out += 256;

    // DEQUANTIZE: DequantizePrepare + Dequantize
    tflite::DequantizationParams dq;
    dq.zero_point = in_zp;
    dq.scale = static_cast<double>(in_scale);
    float* fout = reinterpret_cast<float*>(out);
    tflite::reference_ops::Dequantize(dq, shape, g_bytes, shape, fout);
    out += 1024;

    // QUANTIZE float32 -> int8: AffineQuantize with the output quantization
    tflite::QuantizationParams qp;
    qp.zero_point = out_zp;
    qp.scale = static_cast<double>(out_scale);
    const int32_t xdims[1] = {(int32_t)n_x};
    const tflite::RuntimeShape xs(1, xdims);
    tflite::reference_ops::AffineQuantize(qp, xs, x, xs, out);
    out += n_x;
    if (sh_write(out_handle, g_out, (uint32_t)(out - reinterpret_cast<int8_t*>(g_out))) != 0) return 5;
  }
  sh_close(out_handle);
  return 0;
}
