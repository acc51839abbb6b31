// refsim benchmarks/tflm_float_device: TFLM's float32 kernels and newlib's libm on a Cortex-M
// under QEMU, built with TFLM's own flags for an FPU core (-O2 -std=c++17, hard float).
//
// Command line (semihosting): "<in> <out>". <in> holds, little endian: u32 n_x, n_x float32
// values (n_x a multiple of 16); u32 rows, u32 depth, rows*depth float32 inputs, rows*depth
// float32 weights. <out> gets n_x expf, n_x tanhf, `rows` FULLY_CONNECTED outputs (row r: one
// dot product of input row r and weight row r), n_x LOGISTIC and n_x SOFTMAX (rows of 16).
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tensorflow/lite/kernels/internal/reference/fully_connected.h"
#include "tensorflow/lite/kernels/internal/reference/logistic.h"
#include "tensorflow/lite/kernels/internal/reference/softmax.h"

extern "C" {
#include "semihost.h"
int main(void);
}

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

  const uint32_t bytes = (uint32_t)((uint8_t*)out - g_out);
  h = sh_open(out_path, SH_MODE_WB);
  if (h < 0 || sh_write(h, g_out, bytes) != 0) return 2;
  sh_close(h);
  return 0;
}
