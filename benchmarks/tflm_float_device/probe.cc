// refsim benchmarks/tflm_float_device: TFLM's float32 kernels and newlib's libm on a Cortex-M
// under QEMU, built with TFLM's own flags for an FPU core (-O2 -std=c++17, hard float).
//
// Command line (semihosting): "<in> <out>". <in> holds, little endian: u32 n_x, n_x float32
// values (n_x a multiple of 16); u32 rows, u32 depth, rows*depth float32 inputs, rows*depth
// float32 weights. <out> gets n_x expf, n_x tanhf, `rows` FULLY_CONNECTED outputs (row r: one
// dot product of input row r and weight row r), n_x LOGISTIC and n_x SOFTMAX (rows of 16).
// Then (both files) a CONV_2D and a DEPTHWISE_CONV_2D of fixed shapes (kConv* below): <in> holds
// the conv input, the conv filter and the depthwise filter; <out> gets their outputs.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tensorflow/lite/kernels/internal/reference/conv.h"
#include "tensorflow/lite/kernels/internal/reference/depthwiseconv_float.h"
#include "tensorflow/lite/kernels/internal/reference/fully_connected.h"
#include "tensorflow/lite/kernels/internal/reference/logistic.h"
#include "tensorflow/lite/kernels/internal/reference/softmax.h"

extern "C" {
#include "semihost.h"
int main(void);
}

// CONV_2D: 1x12x12x8 input, 8x3x3x8 filter, stride 1, padding 1 (SAME), no bias.
// DEPTHWISE_CONV_2D: the same input, 1x3x3x16 filter (multiplier 2), stride 1, padding 1.
// The sizes are read through volatiles, so that GCC compiles the kernels for run-time shapes as in
// TFLM's Eval (with constant shapes it unrolls the channel loop of the inlined Conv and, on the
// M55, no longer contracts it into VFMA).
constexpr int kConvHW = 12, kConvC = 8, kConvOut = 8, kDwOut = 16, kK = 3;
static volatile int32_t g_hw = kConvHW, g_c = kConvC, g_out_c = kConvOut, g_dw_c = kDwOut, g_k = kK;

static uint8_t g_in[1 << 20];
static uint8_t g_out[1 << 20];

static uint32_t u32_at(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

int main(void) {
  char cmd[256];
  if (sh_get_cmdline(cmd, sizeof cmd) != 0) return 2;
  // QEMU's command line is "<kernel> <in> <out>": the last two words.
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

  const uint8_t* p = g_in;
  const uint32_t n = u32_at(p);
  p += 4;
  const float* x = reinterpret_cast<const float*>(p);
  p += 4 * n;
  const uint32_t rows = u32_at(p);
  const uint32_t depth = u32_at(p + 4);
  p += 8;
  const float* fc_in = reinterpret_cast<const float*>(p);
  const float* fc_w = fc_in + rows * depth;
  const float* conv_in = fc_w + rows * depth;
  const float* conv_w = conv_in + kConvHW * kConvHW * kConvC;
  const float* dw_w = conv_w + kConvOut * kK * kK * kConvC;

  float* out = reinterpret_cast<float*>(g_out);
  for (uint32_t i = 0; i < n; ++i) out[i] = expf(x[i]);
  out += n;
  for (uint32_t i = 0; i < n; ++i) out[i] = tanhf(x[i]);
  out += n;

  // FULLY_CONNECTED: `rows` independent one-output calls, each accumulated as TFLM's loop does.
  tflite::FullyConnectedParams fc{};
  fc.float_activation_min = -3.40282347e+38f;
  fc.float_activation_max = 3.40282347e+38f;
  const int32_t w_dims[2] = {1, (int32_t)depth};
  for (uint32_t r = 0; r < rows; ++r) {
    const int32_t one_in[2] = {1, (int32_t)depth};
    const int32_t one_out[2] = {1, 1};
    tflite::reference_ops::FullyConnected(
        fc, tflite::RuntimeShape(2, one_in), fc_in + r * depth, tflite::RuntimeShape(2, w_dims),
        fc_w + r * depth, tflite::RuntimeShape(), nullptr, tflite::RuntimeShape(2, one_out), out + r);
  }
  out += rows;

  const int32_t x_dims[1] = {(int32_t)n};
  tflite::reference_ops::Logistic(tflite::RuntimeShape(1, x_dims), x, tflite::RuntimeShape(1, x_dims), out);
  out += n;
  // Softmax over rows of 16 (n is a multiple of 16), beta 1.
  tflite::SoftmaxParams sm{};
  sm.beta = 1.0;
  const int32_t sm_dims[2] = {(int32_t)(n / 16), 16};
  tflite::reference_ops::Softmax(sm, tflite::RuntimeShape(2, sm_dims), x, tflite::RuntimeShape(2, sm_dims), out);
  out += n;

  const int32_t x_shape[4] = {1, g_hw, g_hw, g_c};
  const int32_t cw_shape[4] = {g_out_c, g_k, g_k, g_c};
  const int32_t co_shape[4] = {1, g_hw, g_hw, g_out_c};
  tflite::ConvParams cp{};
  cp.stride_width = cp.stride_height = 1;
  cp.dilation_width_factor = cp.dilation_height_factor = 1;
  cp.padding_values.width = cp.padding_values.height = 1;
  cp.float_activation_min = -3.40282347e+38f;
  cp.float_activation_max = 3.40282347e+38f;
  tflite::reference_ops::Conv(cp, tflite::RuntimeShape(4, x_shape), conv_in, tflite::RuntimeShape(4, cw_shape),
                              conv_w, tflite::RuntimeShape(), nullptr, tflite::RuntimeShape(4, co_shape), out,
                              tflite::RuntimeShape(), nullptr);
  out += kConvHW * kConvHW * kConvOut;
  const int32_t dw_shape[4] = {1, g_k, g_k, g_dw_c};
  const int32_t do_shape[4] = {1, g_hw, g_hw, g_dw_c};
  const int32_t bias_shape[1] = {g_dw_c};
  static float zero_bias[kDwOut];  // DepthwiseConv DCHECKs the bias size; zeros add 0.f as TFLM does
  tflite::DepthwiseParams dp{};
  dp.stride_width = dp.stride_height = 1;
  dp.dilation_width_factor = dp.dilation_height_factor = 1;
  dp.padding_values.width = dp.padding_values.height = 1;
  dp.depth_multiplier = g_dw_c / g_c;
  dp.float_activation_min = -3.40282347e+38f;
  dp.float_activation_max = 3.40282347e+38f;
  tflite::reference_ops::DepthwiseConv(dp, tflite::RuntimeShape(4, x_shape), conv_in, tflite::RuntimeShape(4, dw_shape),
                                       dw_w, tflite::RuntimeShape(1, bias_shape), zero_bias,
                                       tflite::RuntimeShape(4, do_shape), out);
  out += kConvHW * kConvHW * kDwOut;

  const uint32_t bytes = (uint32_t)((uint8_t*)out - g_out);
  h = sh_open(out_path, SH_MODE_WB);
  if (h < 0 || sh_write(h, g_out, bytes) != 0) return 2;
  sh_close(h);
  return 0;
}
