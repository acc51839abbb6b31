/*
 * refsim kernels_c: the CMSIS-NN functions refsim implements (API-compatible subset).
 *
 * Signatures, argument meaning and status codes follow CMSIS-NN's Include/arm_nnfunctions.h.
 * Arithmetic is CMSIS-NN's default build (double rounding requantize, see
 * src/support/nn_fixedpoint.h). Each function has a scalar, a DSP and an MVE implementation
 * (src/<op>_s8.c); the build's ACLE feature macros choose one, and none changes an output bit.
 */
#ifndef ARM_NNFUNCTIONS_H
#define ARM_NNFUNCTIONS_H

#include "arm_nn_math_types.h"
#include "arm_nn_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * s8 elementwise add: out = clamp(requant(requant((x1 + o1) << ls, m1, s1)
 *                                        + requant((x2 + o2) << ls, m2, s2), mo, so) + out_offset).
 *
 * Ranges (TFLM preparation): input offsets [-127, 128], left_shift 20 in practice (any value in
 * [0, 31] is computed with int32 wrap-around), shifts in [-31, 30], activation in [-128, 127].
 * Returns ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_elementwise_add_s8(const int8_t *input_1_vect,
                                           const int8_t *input_2_vect,
                                           const int32_t input_1_offset,
                                           const int32_t input_1_mult,
                                           const int32_t input_1_shift,
                                           const int32_t input_2_offset,
                                           const int32_t input_2_mult,
                                           const int32_t input_2_shift,
                                           const int32_t left_shift,
                                           int8_t *output,
                                           const int32_t out_offset,
                                           const int32_t out_mult,
                                           const int32_t out_shift,
                                           const int32_t out_activation_min,
                                           const int32_t out_activation_max,
                                           const int32_t block_size);

/**
 * s8 elementwise multiply: out = clamp(requant((x1 + o1) * (x2 + o2), out_mult, out_shift) + out_offset).
 *
 * Input offsets in [-127, 128]: the product of two values in [-255, 255] fits int32.
 * Returns ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_elementwise_mul_s8(const int8_t *input_1_vect,
                                           const int8_t *input_2_vect,
                                           const int32_t input_1_offset,
                                           const int32_t input_2_offset,
                                           int8_t *output,
                                           const int32_t out_offset,
                                           const int32_t out_mult,
                                           const int32_t out_shift,
                                           const int32_t out_activation_min,
                                           const int32_t out_activation_max,
                                           const int32_t block_size);

/**
 * s8 fully connected, per-tensor requantization.
 *
 * out[b][r] = clamp(requant(bias[r] + sum_k (in[b][k] + input_offset) * (w[r][k] + filter_offset),
 *                           multiplier, shift) + output_offset)
 *
 * input_dims->n: batches; filter_dims->n: accumulation depth K; output_dims->c: output rows.
 * filter is [output_dims->c][K] (row-major), bias may be NULL.
 *
 * ctx: on MVE builds ctx->buf must hold the kernel sums prepared by arm_vector_sum_s8()
 * (arm_fully_connected_s8_get_buffer_size() bytes); the MVE path adds them instead of the
 * bias, which it does not read. Other builds do not read ctx->buf.
 * Returns ARM_CMSIS_NN_ARG_ERROR when an MVE build gets no buffer, else ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_fully_connected_s8(const cmsis_nn_context *ctx,
                                           const cmsis_nn_fc_params *fc_params,
                                           const cmsis_nn_per_tensor_quant_params *quant_params,
                                           const cmsis_nn_dims *input_dims,
                                           const int8_t *input_data,
                                           const cmsis_nn_dims *filter_dims,
                                           const int8_t *filter_data,
                                           const cmsis_nn_dims *bias_dims,
                                           const int32_t *bias_data,
                                           const cmsis_nn_dims *output_dims,
                                           int8_t *output_data);

/** Scratch bytes arm_fully_connected_s8 needs on this build (filter_dims->c = output rows). */
int32_t arm_fully_connected_s8_get_buffer_size(const cmsis_nn_dims *filter_dims);

/** Scratch bytes on a DSP (or scalar) target: 0. Host-callable. */
int32_t arm_fully_connected_s8_get_buffer_size_dsp(const cmsis_nn_dims *filter_dims);

/** Scratch bytes on an MVE target: one int32 kernel sum per output row. Host-callable. */
int32_t arm_fully_connected_s8_get_buffer_size_mve(const cmsis_nn_dims *filter_dims);

/**
 * Kernel sums for the MVE fully connected path, computed once ahead of inference:
 *
 * vector_sum_buf[r] = bias[r] + lhs_offset * sum_k w[r][k] + vector_cols * lhs_offset * rhs_offset
 *
 * (bias_data may be NULL). The fully connected kernel then adds rhs_offset * sum_k in[k] when
 * rhs_offset is non-zero. Returns ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_vector_sum_s8(int32_t *vector_sum_buf,
                                      const int32_t vector_cols,
                                      const int32_t vector_rows,
                                      const int8_t *vector_data,
                                      const int32_t lhs_offset,
                                      const int32_t rhs_offset,
                                      const int32_t *bias_data);

/**
 * s8 depthwise convolution wrapper: routes like CMSIS-NN V.2.2.0 to arm_depthwise_conv_3x3_s8
 * (not on MVE), arm_depthwise_conv_s8_opt or arm_depthwise_conv_s8 (see src/depthwise_s8.c).
 *
 * out[b][y][x][ic * ch_mult + m] = clamp(requant(bias[oc] + sum_taps (in[b][iy][ix][ic] + input_offset)
 *                                        * filter[0][ky][kx][oc], multiplier[oc], shift[oc]) + output_offset)
 * input [N][H][W][C_IN]; filter [1][KH][KW][C_OUT], C_OUT = C_IN * ch_mult; bias [C_OUT] or NULL.
 * ctx->buf: arm_depthwise_conv_wrapper_s8_get_buffer_size() bytes. Returns the routed kernel's status.
 */
arm_cmsis_nn_status arm_depthwise_conv_wrapper_s8(const cmsis_nn_context *ctx,
                                                  const cmsis_nn_dw_conv_params *dw_conv_params,
                                                  const cmsis_nn_per_channel_quant_params *quant_params,
                                                  const cmsis_nn_dims *input_dims,
                                                  const int8_t *input,
                                                  const cmsis_nn_dims *filter_dims,
                                                  const int8_t *filter,
                                                  const cmsis_nn_dims *bias_dims,
                                                  const int32_t *bias,
                                                  const cmsis_nn_dims *output_dims,
                                                  int8_t *output);

/** Scratch bytes arm_depthwise_conv_wrapper_s8 needs on this build (0 on scalar builds). */
int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                      const cmsis_nn_dims *input_dims,
                                                      const cmsis_nn_dims *filter_dims,
                                                      const cmsis_nn_dims *output_dims);

/** Scratch bytes on a DSP target: 0 for the 3x3 route, C_IN * KW * KH * 2 for _opt. Host-callable. */
int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size_dsp(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                          const cmsis_nn_dims *input_dims,
                                                          const cmsis_nn_dims *filter_dims,
                                                          const cmsis_nn_dims *output_dims);

/** Scratch bytes on an MVE target: 4 * 124 * KW * KH for _opt. Host-callable. */
int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size_mve(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                          const cmsis_nn_dims *input_dims,
                                                          const cmsis_nn_dims *filter_dims,
                                                          const cmsis_nn_dims *output_dims);

/**
 * s8 depthwise convolution, any batch, ch_mult, stride, padding and dilation (semantics as the
 * wrapper). Does not read ctx. Returns ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_depthwise_conv_s8(const cmsis_nn_context *ctx,
                                          const cmsis_nn_dw_conv_params *dw_conv_params,
                                          const cmsis_nn_per_channel_quant_params *quant_params,
                                          const cmsis_nn_dims *input_dims,
                                          const int8_t *input,
                                          const cmsis_nn_dims *filter_dims,
                                          const int8_t *filter,
                                          const cmsis_nn_dims *bias_dims,
                                          const int32_t *bias,
                                          const cmsis_nn_dims *output_dims,
                                          int8_t *output);

/**
 * s8 depthwise convolution for C_IN == C_OUT, a 3x3 filter and padding.w <= 1 (else
 * ARM_CMSIS_NN_ARG_ERROR). One image; dilation is not read. Does not read ctx.
 */
arm_cmsis_nn_status arm_depthwise_conv_3x3_s8(const cmsis_nn_context *ctx,
                                              const cmsis_nn_dw_conv_params *dw_conv_params,
                                              const cmsis_nn_per_channel_quant_params *quant_params,
                                              const cmsis_nn_dims *input_dims,
                                              const int8_t *input,
                                              const cmsis_nn_dims *filter_dims,
                                              const int8_t *filter,
                                              const cmsis_nn_dims *bias_dims,
                                              const int32_t *bias,
                                              const cmsis_nn_dims *output_dims,
                                              int8_t *output);

/**
 * s8 depthwise convolution for C_IN == C_OUT (else ARM_CMSIS_NN_ARG_ERROR). DSP and MVE builds:
 * one image, dilation not read, and ARM_CMSIS_NN_ARG_ERROR when ctx->buf is NULL (their
 * arm_depthwise_conv_s8_opt_get_buffer_size() is positive); scalar builds run arm_depthwise_conv_s8.
 */
arm_cmsis_nn_status arm_depthwise_conv_s8_opt(const cmsis_nn_context *ctx,
                                              const cmsis_nn_dw_conv_params *dw_conv_params,
                                              const cmsis_nn_per_channel_quant_params *quant_params,
                                              const cmsis_nn_dims *input_dims,
                                              const int8_t *input,
                                              const cmsis_nn_dims *filter_dims,
                                              const int8_t *filter,
                                              const cmsis_nn_dims *bias_dims,
                                              const int32_t *bias,
                                              const cmsis_nn_dims *output_dims,
                                              int8_t *output);

/** Scratch bytes arm_depthwise_conv_s8_opt needs on this build: 0 scalar, else as _dsp / _mve. */
int32_t arm_depthwise_conv_s8_opt_get_buffer_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims);

/** DSP: C_IN * KW * KH * 2 bytes. Host-callable (CMSIS-NN declares it in arm_nnsupportfunctions.h). */
int32_t arm_depthwise_conv_s8_opt_get_buffer_size_dsp(const cmsis_nn_dims *input_dims,
                                                      const cmsis_nn_dims *filter_dims);

/** MVE: 4 * 124 * KW * KH bytes. Host-callable (CMSIS-NN declares it in arm_nnsupportfunctions.h). */
int32_t arm_depthwise_conv_s8_opt_get_buffer_size_mve(const cmsis_nn_dims *input_dims,
                                                      const cmsis_nn_dims *filter_dims);

/**
 * s8 average pooling of one image: per window, the sum of the taps inside the input divided by
 * their count (ties away from zero), clamped to the activation range. ARM_CMSIS_NN_ARG_ERROR for
 * a window with no tap inside the input, and on DSP builds for a NULL ctx->buf.
 */
arm_cmsis_nn_status arm_avgpool_s8(const cmsis_nn_context *ctx,
                                   const cmsis_nn_pool_params *pool_params,
                                   const cmsis_nn_dims *input_dims,
                                   const int8_t *src,
                                   const cmsis_nn_dims *filter_dims,
                                   const cmsis_nn_dims *output_dims,
                                   int8_t *dst);

/** Scratch bytes arm_avgpool_s8 needs on this build (output_x unused). */
int32_t arm_avgpool_s8_get_buffer_size(const int output_x, const int ch_src);

/** Scratch bytes on a DSP target: ch_src * 4. Host-callable. */
int32_t arm_avgpool_s8_get_buffer_size_dsp(const int output_x, const int ch_src);

/** Scratch bytes on an MVE target: 0. Host-callable. */
int32_t arm_avgpool_s8_get_buffer_size_mve(const int output_x, const int ch_src);

/**
 * s8 max pooling of input_dims->n images: the largest tap inside the input, clamped. Does not read
 * ctx. Returns ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_max_pool_s8(const cmsis_nn_context *ctx,
                                    const cmsis_nn_pool_params *pool_params,
                                    const cmsis_nn_dims *input_dims,
                                    const int8_t *src,
                                    const cmsis_nn_dims *filter_dims,
                                    const cmsis_nn_dims *output_dims,
                                    int8_t *dst);

/*
 * Convolution family (CMSIS-NN v7 signatures; src/conv_s8*.c). For every kernel:
 *   out[n][y][x][c] = clamp(requant(bias[c] + sum over the taps inside the input of
 *                     (in + input_offset) * w[c][ky][kx][ci], multiplier[c], shift[c]) + output_offset)
 * input [N, H, W, C_IN], filter [C_OUT, KH, KW, C_IN / groups] (OHWI), bias [C_OUT] or NULL,
 * per-channel multiplier / shift [C_OUT]. input_offset in [-127, 128], output_offset in
 * [-128, 127]. Padding is top/left; bottom/right is whatever output_dims implies.
 * ctx->buf must hold the function's *_get_buffer_size() bytes (the caller's scratch; CMSIS-NN's
 * sizes for the build's tier). Status codes: see src/conv_s8.c.
 */

/**
 * s8 convolution, grouped when filter_dims->c < input_dims->c (groups = C_IN / filter_dims->c,
 * each group reads C_IN / groups channels and writes C_OUT / groups). upscale_dims (may be NULL)
 * with h or w == 2 reads input_dims as the input zero-upscaled by 2 in that dimension (input_dims
 * then gives the upscaled extent), as arm_transpose_conv_wrapper_s8 uses it.
 * Returns ARM_CMSIS_NN_ARG_ERROR without ctx->buf or for groups not dividing C_IN and C_OUT.
 */
arm_cmsis_nn_status arm_convolve_s8(const cmsis_nn_context *ctx,
                                    const cmsis_nn_conv_params *conv_params,
                                    const cmsis_nn_per_channel_quant_params *quant_params,
                                    const cmsis_nn_dims *input_dims,
                                    const int8_t *input_data,
                                    const cmsis_nn_dims *filter_dims,
                                    const int8_t *filter_data,
                                    const cmsis_nn_dims *bias_dims,
                                    const int32_t *bias_data,
                                    const cmsis_nn_dims *upscale_dims,
                                    const cmsis_nn_dims *output_dims,
                                    int8_t *output_data);

/** Scratch bytes of arm_convolve_s8: two int16 im2col columns (scalar, DSP), four int8 ones (MVE). */
int32_t arm_convolve_s8_get_buffer_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims);

/** arm_convolve_s8's scratch bytes on an MVE target: 4 * ceil16(KH * KW * C_IN). Host-callable. */
int32_t arm_convolve_s8_get_buffer_size_mve(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims);

/**
 * s8 convolution through the kernel that suits the shape: arm_convolve_1x1_s8_fast (1x1 filter, no
 * padding, unit stride and dilation, not grouped), arm_convolve_1x1_s8 (the same with other
 * strides), arm_convolve_1_x_n_s8 (input and filter one row high, dilation.w 1, stride.w * C_IN a
 * multiple of 4, not grouped), else arm_convolve_s8. ctx->buf: arm_convolve_wrapper_s8_get_buffer_size().
 */
arm_cmsis_nn_status arm_convolve_wrapper_s8(const cmsis_nn_context *ctx,
                                            const cmsis_nn_conv_params *conv_params,
                                            const cmsis_nn_per_channel_quant_params *quant_params,
                                            const cmsis_nn_dims *input_dims,
                                            const int8_t *input_data,
                                            const cmsis_nn_dims *filter_dims,
                                            const int8_t *filter_data,
                                            const cmsis_nn_dims *bias_dims,
                                            const int32_t *bias_data,
                                            const cmsis_nn_dims *output_dims,
                                            int8_t *output_data);

/** Scratch bytes of arm_convolve_wrapper_s8 on this build. */
int32_t arm_convolve_wrapper_s8_get_buffer_size(const cmsis_nn_conv_params *conv_params,
                                                const cmsis_nn_dims *input_dims,
                                                const cmsis_nn_dims *filter_dims,
                                                const cmsis_nn_dims *output_dims);

/** Scratch bytes of arm_convolve_wrapper_s8 on a DSP (or scalar) target. Host-callable. */
int32_t arm_convolve_wrapper_s8_get_buffer_size_dsp(const cmsis_nn_conv_params *conv_params,
                                                    const cmsis_nn_dims *input_dims,
                                                    const cmsis_nn_dims *filter_dims,
                                                    const cmsis_nn_dims *output_dims);

/** Scratch bytes of arm_convolve_wrapper_s8 on an MVE target. Host-callable. */
int32_t arm_convolve_wrapper_s8_get_buffer_size_mve(const cmsis_nn_conv_params *conv_params,
                                                    const cmsis_nn_dims *input_dims,
                                                    const cmsis_nn_dims *filter_dims,
                                                    const cmsis_nn_dims *output_dims);

/**
 * 1x1 convolution, unit stride: a [N*H*W, C_IN] x [C_OUT, C_IN]^T product. Needs padding 0, stride
 * 1, a 1x1 filter of depth C_IN and output H, W equal to the input's; else ARM_CMSIS_NN_ARG_ERROR.
 */
arm_cmsis_nn_status arm_convolve_1x1_s8_fast(const cmsis_nn_context *ctx,
                                             const cmsis_nn_conv_params *conv_params,
                                             const cmsis_nn_per_channel_quant_params *quant_params,
                                             const cmsis_nn_dims *input_dims,
                                             const int8_t *input_data,
                                             const cmsis_nn_dims *filter_dims,
                                             const int8_t *filter_data,
                                             const cmsis_nn_dims *bias_dims,
                                             const int32_t *bias_data,
                                             const cmsis_nn_dims *output_dims,
                                             int8_t *output_data);

/** Scratch bytes of arm_convolve_1x1_s8_fast: 0 (CMSIS-NN asks 2 * C_IN int16 only under Arm Compiler 6). */
int32_t arm_convolve_1x1_s8_fast_get_buffer_size(const cmsis_nn_dims *input_dims);

/**
 * 1x1 convolution with any stride. Needs padding 0 and a 1x1 filter of depth C_IN, and outputs
 * within ((H - 1) / stride.h + 1, (W - 1) / stride.w + 1); else ARM_CMSIS_NN_ARG_ERROR. No scratch.
 */
arm_cmsis_nn_status arm_convolve_1x1_s8(const cmsis_nn_context *ctx,
                                        const cmsis_nn_conv_params *conv_params,
                                        const cmsis_nn_per_channel_quant_params *quant_params,
                                        const cmsis_nn_dims *input_dims,
                                        const int8_t *input_data,
                                        const cmsis_nn_dims *filter_dims,
                                        const int8_t *filter_data,
                                        const cmsis_nn_dims *bias_dims,
                                        const int32_t *bias_data,
                                        const cmsis_nn_dims *output_dims,
                                        int8_t *output_data);

/**
 * 1xN convolution. Needs input and filter height 1, dilation.w 1, stride.w * C_IN a multiple of
 * 4 and a filter of depth C_IN; else ARM_CMSIS_NN_ARG_ERROR. ctx->buf: arm_convolve_1_x_n_s8_get_buffer_size().
 */
arm_cmsis_nn_status arm_convolve_1_x_n_s8(const cmsis_nn_context *ctx,
                                          const cmsis_nn_conv_params *conv_params,
                                          const cmsis_nn_per_channel_quant_params *quant_params,
                                          const cmsis_nn_dims *input_dims,
                                          const int8_t *input_data,
                                          const cmsis_nn_dims *filter_dims,
                                          const int8_t *filter_data,
                                          const cmsis_nn_dims *bias_dims,
                                          const int32_t *bias_data,
                                          const cmsis_nn_dims *output_dims,
                                          int8_t *output_data);

/** Scratch bytes of arm_convolve_1_x_n_s8: arm_convolve_s8's, or on MVE room for the padded edge columns. */
int32_t arm_convolve_1_x_n_s8_get_buffer_size(const cmsis_nn_conv_params *conv_params,
                                              const cmsis_nn_dims *input_dims,
                                              const cmsis_nn_dims *filter_dims,
                                              const cmsis_nn_dims *output_dims);

/**
 * s8 transpose convolution: each input pixel scatters (x + input_offset) * w[c][ky][kx][:] into
 * output (y * stride.h - padding.h + ky, x * stride.w - padding.w + kx); filter [C_OUT, KH, KW, C_IN].
 * output_dims gives the output extent (padding_offsets is not used by the arithmetic). Reads
 * neither ctx nor output_ctx. ARM_CMSIS_NN_ARG_ERROR for dilation != 1, padding > kernel - 1 or
 * outputs past (in - 1) * stride + MAX(kernel, stride) - padding.
 */
arm_cmsis_nn_status arm_transpose_conv_s8(const cmsis_nn_context *ctx,
                                          const cmsis_nn_context *output_ctx,
                                          const cmsis_nn_transpose_conv_params *transpose_conv_params,
                                          const cmsis_nn_per_channel_quant_params *quant_params,
                                          const cmsis_nn_dims *input_dims,
                                          const int8_t *input_data,
                                          const cmsis_nn_dims *filter_dims,
                                          const int8_t *filter_data,
                                          const cmsis_nn_dims *bias_dims,
                                          const int32_t *bias_data,
                                          const cmsis_nn_dims *output_dims,
                                          int8_t *output_data);

/**
 * arm_transpose_conv_s8's arithmetic; strides <= 2 with more than 16 input channels run
 * arm_convolve_s8 on the zero-upscaled input with the filter reversed into reverse_conv_ctx->buf
 * (arm_transpose_conv_s8_get_reverse_conv_buffer_size() bytes). ctx->buf:
 * arm_transpose_conv_s8_get_buffer_size() bytes. ARM_CMSIS_NN_ARG_ERROR without those buffers.
 */
arm_cmsis_nn_status arm_transpose_conv_wrapper_s8(const cmsis_nn_context *ctx,
                                                  const cmsis_nn_context *reverse_conv_ctx,
                                                  const cmsis_nn_transpose_conv_params *transpose_conv_params,
                                                  const cmsis_nn_per_channel_quant_params *quant_params,
                                                  const cmsis_nn_dims *input_dims,
                                                  const int8_t *input_data,
                                                  const cmsis_nn_dims *filter_dims,
                                                  const int8_t *filter_data,
                                                  const cmsis_nn_dims *bias_dims,
                                                  const int32_t *bias_data,
                                                  const cmsis_nn_dims *output_dims,
                                                  int8_t *output_data);

/** Scratch bytes (ctx) of the transpose convolution on this build: arm_convolve_s8's on the
 * reverse-conv route, else CMSIS-NN's int32 row buffer. */
int32_t arm_transpose_conv_s8_get_buffer_size(const cmsis_nn_transpose_conv_params *transpose_conv_params,
                                              const cmsis_nn_dims *input_dims,
                                              const cmsis_nn_dims *filter_dims,
                                              const cmsis_nn_dims *out_dims);

/** The same on an MVE target. Host-callable. */
int32_t arm_transpose_conv_s8_get_buffer_size_mve(const cmsis_nn_transpose_conv_params *transpose_conv_params,
                                                  const cmsis_nn_dims *input_dims,
                                                  const cmsis_nn_dims *filter_dims,
                                                  const cmsis_nn_dims *out_dims);

/** Bytes of reverse_conv_ctx: the reversed filter on the reverse-conv route, else 0. Host-callable. */
int32_t arm_transpose_conv_s8_get_reverse_conv_buffer_size(const cmsis_nn_transpose_conv_params *transpose_conv_params,
                                                           const cmsis_nn_dims *input_dims,
                                                           const cmsis_nn_dims *filter_dims);

/**
 * s8 softmax along the last axis (src/softmax_s8.c): input and output [num_rows][row_size], output
 * scale 1/256 and zero point -128. mult / shift (shift in [0, 31], a left shift) scale the
 * difference to the row maximum into Q5.26, and differences below diff_min give -128 (TFLM's
 * PreprocessSoftmaxScaling / CalculateInputRadius with 5 integer bits prepare all three).
 * Row sums of exponentials must stay below 2^28 in Q12.19 (fewer than 512 elements near the
 * row maximum), as kernels_py.softmax requires.
 */
void arm_softmax_s8(const int8_t *input,
                    const int32_t num_rows,
                    const int32_t row_size,
                    const int32_t mult,
                    const int32_t shift,
                    const int32_t diff_min,
                    int8_t *output);

/**
 * s8 fully connected with one multiplier / shift per output row (src/fully_connected_per_channel_s8.c):
 * as arm_fully_connected_s8 with quant_params->multiplier[r], quant_params->shift[r]; filter_offset
 * is applied. Scratch as arm_fully_connected_s8 (CMSIS-NN has no per-channel size function): on
 * MVE builds ctx->buf holds arm_vector_sum_s8() kernel sums (arm_fully_connected_s8_get_buffer_size()
 * bytes) and no buffer returns ARM_CMSIS_NN_ARG_ERROR. Else ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_fully_connected_per_channel_s8(const cmsis_nn_context *ctx,
                                                       const cmsis_nn_fc_params *fc_params,
                                                       const cmsis_nn_per_channel_quant_params *quant_params,
                                                       const cmsis_nn_dims *input_dims,
                                                       const int8_t *input_data,
                                                       const cmsis_nn_dims *filter_dims,
                                                       const int8_t *filter_data,
                                                       const cmsis_nn_dims *bias_dims,
                                                       const int32_t *bias_data,
                                                       const cmsis_nn_dims *output_dims,
                                                       int8_t *output_data);

/**
 * s8 batch matmul (src/batch_matmul_s8.c): out[b][h] = lhs[b][h] . rhs[b][h]^T with N and H
 * broadcast, bias-free, per-tensor requantization, bmm_params->fc_params offsets and clamp.
 * input_lhs_dims {N1, H1, LHS_ROWS, K}, input_rhs_dims {N2, H2, RHS_ROWS, K} (rhs already
 * transposed), output_dims {max N, max H, LHS_ROWS, RHS_ROWS}; adj_x / adj_y are not read.
 * On MVE builds ctx->buf (arm_batch_matmul_s8_get_buffer_size() bytes) receives per-slice kernel
 * sums. Returns ARM_CMSIS_NN_ARG_ERROR for inconsistent dims or (MVE) no buffer.
 */
arm_cmsis_nn_status arm_batch_matmul_s8(const cmsis_nn_context *ctx,
                                        const cmsis_nn_bmm_params *bmm_params,
                                        const cmsis_nn_per_tensor_quant_params *quant_params,
                                        const cmsis_nn_dims *input_lhs_dims,
                                        const int8_t *input_lhs,
                                        const cmsis_nn_dims *input_rhs_dims,
                                        const int8_t *input_rhs,
                                        const cmsis_nn_dims *output_dims,
                                        int8_t *output);

/** Scratch bytes arm_batch_matmul_s8 needs on this build (input_rhs_dims->w = rhs rows). */
int32_t arm_batch_matmul_s8_get_buffer_size(const cmsis_nn_dims *input_rhs_dims);

/** Scratch bytes on a DSP (or scalar) target: 0. Host-callable. */
int32_t arm_batch_matmul_s8_get_buffer_size_dsp(const cmsis_nn_dims *input_rhs_dims);

/** Scratch bytes on an MVE target: one int32 kernel sum per rhs row. Host-callable. */
int32_t arm_batch_matmul_s8_get_buffer_size_mve(const cmsis_nn_dims *input_rhs_dims);

/**
 * s8 elementwise maximum / minimum with broadcasting (src/minmax_s8.c): each of N, H, W, C equal
 * or 1 on one side, output_dims the broadcast shape (else ARM_CMSIS_NN_ARG_ERROR). ctx is unused.
 */
arm_cmsis_nn_status arm_maximum_s8(const cmsis_nn_context *ctx,
                                   const int8_t *input_1_data,
                                   const cmsis_nn_dims *input_1_dims,
                                   const int8_t *input_2_data,
                                   const cmsis_nn_dims *input_2_dims,
                                   int8_t *output_data,
                                   const cmsis_nn_dims *output_dims);

arm_cmsis_nn_status arm_minimum_s8(const cmsis_nn_context *ctx,
                                   const int8_t *input_1_data,
                                   const cmsis_nn_dims *input_1_dims,
                                   const int8_t *input_2_data,
                                   const cmsis_nn_dims *input_2_dims,
                                   int8_t *output_data,
                                   const cmsis_nn_dims *output_dims);

/** s8 ReLU6 in place (src/activation_s8.c): data[i] = min(max(data[i], 0), 6) on the raw values. */
void arm_relu6_s8(int8_t *data, uint16_t size);

/**
 * s8 constant padding (src/layout_s8.c): output dims pre_pad + input_size + post_pad per NHWC axis,
 * new elements pad_value. ARM_CMSIS_NN_ARG_ERROR for an input dim below 1 or a negative pad.
 */
arm_cmsis_nn_status arm_pad_s8(const int8_t *input,
                               int8_t *output,
                               const int8_t pad_value,
                               const cmsis_nn_dims *input_size,
                               const cmsis_nn_dims *pre_pad,
                               const cmsis_nn_dims *post_pad);

/**
 * s8 transpose of 1 to 4 dims (src/layout_s8.c): output axis k is input axis permutations[k];
 * input_dims / output_dims left-aligned ({n = rows, h = cols} for a matrix). Returns
 * ARM_CMSIS_NN_ARG_ERROR for num_dims outside 1..4, a permutation entry past num_dims - 1 or
 * repeated, or output_dims other than the permuted input dims. A 2-D identity copies (CMSIS-NN
 * always transposes 2-D).
 */
arm_cmsis_nn_status arm_transpose_s8(const int8_t *input,
                                     int8_t *const output,
                                     const cmsis_nn_dims *const input_dims,
                                     const cmsis_nn_dims *const output_dims,
                                     const cmsis_nn_transpose_params *const transpose_params);

/* ------------------------------------------------------------------------------------------ */
/* refsim extensions: kernels with no CMSIS-NN counterpart, in CMSIS-NN's calling style.       */

/**
 * s8 lookup-table activation, ExecuTorch cortex_m quantized_activation (src/activation_s8.c):
 * output[i] = lut[(uint8_t)(input[i] + 128)] for i < size; lut has 256 entries, lut[0] being the
 * result for -128. Returns ARM_CMSIS_NN_ARG_ERROR for a negative size.
 */
arm_cmsis_nn_status refsim_lut_s8(const int8_t *input, const int8_t *lut, int8_t *output, const int32_t size);

#ifdef __cplusplus
}
#endif

#endif /* ARM_NNFUNCTIONS_H */
