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

#ifdef __cplusplus
}
#endif

#endif /* ARM_NNFUNCTIONS_H */
