/*
 * refsim kernels_c: one lhs row times a transposed rhs matrix, int8 -> int8, per tier.
 *
 * The core of arm_fully_connected_per_channel_s8 and arm_batch_matmul_s8 (CMSIS-NN's
 * arm_nn_vec_mat_mult_t_per_ch_s8 / arm_nn_vec_mat_mult_t_s8), per output row r:
 *   acc[r] = bias[r] + sum_k (x_k + input_offset) * (w[r][k] + filter_offset)
 *   out[r] = clamp(requant(acc[r], multiplier[r], shift[r]) + output_offset, act_min, act_max)
 * with int32 wrap-around everywhere, as the C accumulators wrap. The filter offset is regrouped
 * out of the inner loops exactly as src/fully_connected_s8.c does it:
 *   sum_k (x_k + io)(w_k + fo) = sum_k (x_k + io) w_k + fo * sum_k (x_k + io)
 * (scalar, DSP) and, with kernel sums ks[r] = bias[r] + io * sum_k w[r][k] + K * io * fo
 * prepared ahead (arm_vector_sum_s8's formula), = ks[r] + sum_k x_k w_k + fo * sum_k x_k (MVE).
 * All forms are the same polynomial in Z / 2^32, so every tier gives the same bits.
 *
 * Requantization is per row (step 1: arrays indexed by r) or per tensor (step 0: element 0).
 * Only included by src/fully_connected_per_channel_s8.c and src/batch_matmul_s8.c.
 */
#ifndef RS_NN_VEC_MAT_H
#define RS_NN_VEC_MAT_H

#include <stdint.h>

#include "arm_nn_math_types.h"
#include "support/nn_fixedpoint.h"

#if defined(ARM_MATH_DSP)
    #include "support/nn_dsp.h"
#endif
#if defined(ARM_MATH_MVEI)
    #include "support/nn_mve.h"
#endif

/** Output stage of one lhs row: requantization (per row or per tensor), offset and clamp. */
typedef struct
{
    const int32_t *multiplier;
    const int32_t *shift;
    int32_t step; /* 1: multiplier[r], shift[r]; 0: multiplier[0], shift[0] for every row */
    int32_t output_offset;
    int32_t act_min;
    int32_t act_max;
} nn_vm_quant;

static inline int8_t nn_vm_output(int32_t acc, const nn_vm_quant *q, int32_t row)
{
    const int32_t i = row * q->step;
    return nn_clamp_s8(nn_add_wrap(nn_requantize_64(acc, q->multiplier[i], q->shift[i]), q->output_offset), q->act_min,
                       q->act_max);
}

/** filter_offset * sum_k (x_k + input_offset), wrapped; 0 when filter_offset is 0. */
static inline int32_t nn_vm_filter_offset_term(const int8_t *lhs, int32_t depth, int32_t input_offset,
                                               int32_t filter_offset)
{
    if (filter_offset == 0)
    {
        return 0;
    }
    uint32_t sum = 0;
    for (int32_t k = 0; k < depth; k++)
    {
        sum += (uint32_t)(lhs[k] + input_offset);
    }
    return (int32_t)(sum * (uint32_t)filter_offset);
}

static inline uint32_t nn_vm_bias(const int32_t *bias, int32_t row) { return bias ? (uint32_t)bias[row] : 0U; }

/* ------------------------------------------------------------------------------------------ */
/* Scalar: four rows per pass share each offset input load (LDRSB + MLA per row per column).  */

static inline void nn_vec_mat_s8_scalar(const int8_t *lhs, const int8_t *rhs, const int32_t *bias, int32_t rows,
                                        int32_t depth, int32_t input_offset, int32_t filter_offset,
                                        const nn_vm_quant *q, int8_t *out)
{
    const uint32_t fo_term = (uint32_t)nn_vm_filter_offset_term(lhs, depth, input_offset, filter_offset);
    int32_t r = 0;
    for (; r + 4 <= rows; r += 4)
    {
        const int8_t *w_0 = rhs + r * depth;
        const int8_t *w_1 = w_0 + depth;
        const int8_t *w_2 = w_1 + depth;
        const int8_t *w_3 = w_2 + depth;
        uint32_t acc_0 = fo_term + nn_vm_bias(bias, r);
        uint32_t acc_1 = fo_term + nn_vm_bias(bias, r + 1);
        uint32_t acc_2 = fo_term + nn_vm_bias(bias, r + 2);
        uint32_t acc_3 = fo_term + nn_vm_bias(bias, r + 3);
        const int8_t *x_ptr = lhs;
        /* post-incremented pointers and a count-down: LDRSB with writeback, one loop test */
        for (int32_t k = depth; k > 0; k--)
        {
            const int32_t x = *x_ptr++ + input_offset;
            acc_0 += (uint32_t)(x * *w_0++);
            acc_1 += (uint32_t)(x * *w_1++);
            acc_2 += (uint32_t)(x * *w_2++);
            acc_3 += (uint32_t)(x * *w_3++);
        }
        out[r] = nn_vm_output((int32_t)acc_0, q, r);
        out[r + 1] = nn_vm_output((int32_t)acc_1, q, r + 1);
        out[r + 2] = nn_vm_output((int32_t)acc_2, q, r + 2);
        out[r + 3] = nn_vm_output((int32_t)acc_3, q, r + 3);
    }
    for (; r < rows; r++)
    {
        const int8_t *w = rhs + r * depth;
        uint32_t acc = fo_term + nn_vm_bias(bias, r);
        for (int32_t k = 0; k < depth; k++)
        {
            acc += (uint32_t)((lhs[k] + input_offset) * w[k]);
        }
        out[r] = nn_vm_output((int32_t)acc, q, r);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* DSP: two rows per pass, four columns per step; SXTAB16 adds the input offset while         */
/* unpacking, SXTB16 unpacks weights, SMLAD does two 16x16 MACs.                              */

#if defined(ARM_MATH_DSP)
static inline int32_t nn_vm_dsp_step(int32_t acc, int32_t x_even, int32_t x_odd, const int8_t *w)
{
    const int32_t word = nn_read_s8x4(w);
    acc = __smlad(__sxtb16(word), x_even, acc);
    return __smlad(nn_sxtb16_ror8(word), x_odd, acc);
}

static inline void nn_vec_mat_s8_dsp(const int8_t *lhs, const int8_t *rhs, const int32_t *bias, int32_t rows,
                                     int32_t depth, int32_t input_offset, int32_t filter_offset,
                                     const nn_vm_quant *q, int8_t *out)
{
    const uint32_t fo_term = (uint32_t)nn_vm_filter_offset_term(lhs, depth, input_offset, filter_offset);
    const int32_t offset_x2 = nn_pack_s16x2(input_offset);
    const int32_t depth_8 = depth & ~7;
    const int32_t depth_4 = depth & ~3;
    int32_t r = 0;
    for (; r + 2 <= rows; r += 2)
    {
        const int8_t *w_0 = rhs + r * depth;
        const int8_t *w_1 = w_0 + depth;
        int32_t acc_0 = (int32_t)(fo_term + nn_vm_bias(bias, r));
        int32_t acc_1 = (int32_t)(fo_term + nn_vm_bias(bias, r + 1));
        int32_t k = 0;
        for (; k < depth_8; k += 8) /* two steps per iteration: the loop test costs half as much */
        {
            const int32_t x = nn_read_s8x4(lhs + k);
            const int32_t x_even = nn_sxtab16_even(offset_x2, x);
            const int32_t x_odd = nn_sxtab16_odd(offset_x2, x);
            acc_0 = nn_vm_dsp_step(acc_0, x_even, x_odd, w_0 + k);
            acc_1 = nn_vm_dsp_step(acc_1, x_even, x_odd, w_1 + k);
            const int32_t y = nn_read_s8x4(lhs + k + 4);
            const int32_t y_even = nn_sxtab16_even(offset_x2, y);
            const int32_t y_odd = nn_sxtab16_odd(offset_x2, y);
            acc_0 = nn_vm_dsp_step(acc_0, y_even, y_odd, w_0 + k + 4);
            acc_1 = nn_vm_dsp_step(acc_1, y_even, y_odd, w_1 + k + 4);
        }
        for (; k < depth_4; k += 4)
        {
            const int32_t x = nn_read_s8x4(lhs + k);
            const int32_t x_even = nn_sxtab16_even(offset_x2, x);
            const int32_t x_odd = nn_sxtab16_odd(offset_x2, x);
            acc_0 = nn_vm_dsp_step(acc_0, x_even, x_odd, w_0 + k);
            acc_1 = nn_vm_dsp_step(acc_1, x_even, x_odd, w_1 + k);
        }
        for (; k < depth; k++)
        {
            const int32_t x = lhs[k] + input_offset;
            acc_0 += x * w_0[k];
            acc_1 += x * w_1[k];
        }
        out[r] = nn_vm_output(acc_0, q, r);
        out[r + 1] = nn_vm_output(acc_1, q, r + 1);
    }
    if (r < rows)
    {
        const int8_t *w = rhs + r * depth;
        int32_t acc = (int32_t)(fo_term + nn_vm_bias(bias, r));
        int32_t k = 0;
        for (; k < depth_4; k += 4)
        {
            const int32_t x = nn_read_s8x4(lhs + k);
            acc = nn_vm_dsp_step(acc, nn_sxtab16_even(offset_x2, x), nn_sxtab16_odd(offset_x2, x), w + k);
        }
        for (; k < depth; k++)
        {
            acc += (lhs[k] + input_offset) * w[k];
        }
        out[r] = nn_vm_output(acc, q, r);
    }
}
#endif /* ARM_MATH_DSP */

/* ------------------------------------------------------------------------------------------ */
/* MVE: four rows per pass, 16 columns per VMLADAVA. Full vectors run unpredicated and only   */
/* the tail is VCTP-predicated (GCC 12 turns a predicate inside the loop into a VMRS/SXTH/VMSR */
/* round trip and a VPST per load). The kernel sums replace bias and input-offset terms.      */

#if defined(ARM_MATH_MVEI)
/** sum_k x_k (only needed for a non-zero filter offset). */
static inline int32_t nn_vm_mve_sum(const int8_t *x, int32_t depth)
{
    const int32_t depth_16 = depth & ~15;
    int32_t sum = 0;
    for (int32_t k = 0; k < depth_16; k += 16)
    {
        sum = vaddvaq_s8(sum, vld1q_s8(x + k));
    }
    if (depth_16 < depth)
    {
        sum = vaddvaq_s8(sum, vldrbq_z_s8(x + depth_16, vctp8q((uint32_t)(depth - depth_16))));
    }
    return sum;
}

/** Raw dot product sum_k x_k * w_k of one row. */
static inline int32_t nn_vm_mve_dot(const int8_t *x, const int8_t *w, int32_t depth)
{
    const int32_t depth_16 = depth & ~15;
    int32_t acc = 0;
    for (int32_t k = 0; k < depth_16; k += 16)
    {
        acc = vmladavaq_s8(acc, vld1q_s8(x + k), vld1q_s8(w + k));
    }
    if (depth_16 < depth)
    {
        const mve_pred16_t p = vctp8q((uint32_t)(depth - depth_16));
        acc = vmladavaq_s8(acc, vldrbq_z_s8(x + depth_16, p), vldrbq_z_s8(w + depth_16, p));
    }
    return acc;
}

/** Four consecutive rows' raw dot products, sharing each lhs load. */
static inline int32x4_t nn_vm_mve_dot_4(const int8_t *x, const int8_t *w, int32_t depth)
{
    const int8_t *w_0 = w;
    const int8_t *w_1 = w_0 + depth;
    const int8_t *w_2 = w_1 + depth;
    const int8_t *w_3 = w_2 + depth;
    const int32_t depth_16 = depth & ~15;
    int32_t acc_0 = 0, acc_1 = 0, acc_2 = 0, acc_3 = 0;
    for (int32_t k = 0; k < depth_16; k += 16)
    {
        const int8x16_t v = vld1q_s8(x + k);
        acc_0 = vmladavaq_s8(acc_0, v, vld1q_s8(w_0 + k));
        acc_1 = vmladavaq_s8(acc_1, v, vld1q_s8(w_1 + k));
        acc_2 = vmladavaq_s8(acc_2, v, vld1q_s8(w_2 + k));
        acc_3 = vmladavaq_s8(acc_3, v, vld1q_s8(w_3 + k));
    }
    if (depth_16 < depth)
    {
        const int32_t k = depth_16;
        const mve_pred16_t p = vctp8q((uint32_t)(depth - k));
        const int8x16_t v = vldrbq_z_s8(x + k, p);
        acc_0 = vmladavaq_s8(acc_0, v, vldrbq_z_s8(w_0 + k, p));
        acc_1 = vmladavaq_s8(acc_1, v, vldrbq_z_s8(w_1 + k, p));
        acc_2 = vmladavaq_s8(acc_2, v, vldrbq_z_s8(w_2 + k, p));
        acc_3 = vmladavaq_s8(acc_3, v, vldrbq_z_s8(w_3 + k, p));
    }
    const int32x4_t acc = {acc_0, acc_1, acc_2, acc_3};
    return acc;
}

/**
 * Lane-wise nn_requantize with a multiplier and shift per lane (arm_requantize_mve_32x4):
 * VSHL by the left part, VQRDMULH, then DIV_POW2 by the right part as in nn_mve.h (subtract one
 * from negative lanes that will be shifted, then VRSHL's round-half-up).
 */
static inline int32x4_t nn_vm_requantize_mve_lanes(int32x4_t val, int32x4_t multiplier, int32x4_t shift)
{
    const int32x4_t zero = vdupq_n_s32(0);
    const int32x4_t left = vmaxq_s32(shift, zero);
    const int32x4_t minus_right = vminq_s32(shift, zero);
    const int32x4_t v = vqrdmulhq_s32(vshlq_s32(val, left), multiplier);
    const int32x4_t negative_fixup = vandq_s32(vshrq_n_s32(v, 31), vshrq_n_s32(minus_right, 31));
    return vrshlq_s32(vqaddq_s32(v, negative_fixup), minus_right);
}

static inline int32x4_t nn_vm_requantize_mve(int32x4_t acc, const nn_vm_quant *q, int32_t row)
{
    if (q->step == 0)
    {
        return nn_requantize_mve(acc, q->multiplier[0], q->shift[0]);
    }
    return nn_vm_requantize_mve_lanes(acc, vldrwq_s32(q->multiplier + row), vldrwq_s32(q->shift + row));
}

/**
 * One lhs row against `rows` rhs rows in the kernel-sum form: out[r] from
 * kernel_sum[r] + sum_k x_k w[r][k] + filter_offset * sum_k x_k.
 */
static inline void nn_vec_mat_s8_mve(const int8_t *lhs, const int8_t *rhs, const int32_t *kernel_sum, int32_t rows,
                                     int32_t depth, int32_t filter_offset, const nn_vm_quant *q, int8_t *out)
{
    const int32_t fo_term =
        filter_offset != 0 ? (int32_t)((uint32_t)nn_vm_mve_sum(lhs, depth) * (uint32_t)filter_offset) : 0;
    int32_t r = 0;
    for (; r + 4 <= rows; r += 4)
    {
        int32x4_t acc = vaddq_s32(nn_vm_mve_dot_4(lhs, rhs + r * depth, depth), vldrwq_s32(kernel_sum + r));
        acc = nn_vm_requantize_mve(vaddq_n_s32(acc, fo_term), q, r);
        acc = nn_clamp_mve(vaddq_n_s32(acc, q->output_offset), q->act_min, q->act_max);
        vstrbq_s32(out + r, acc);
    }
    for (; r < rows; r++)
    {
        const int32_t acc = (int32_t)((uint32_t)nn_vm_mve_dot(lhs, rhs + r * depth, depth) + (uint32_t)kernel_sum[r] +
                                      (uint32_t)fo_term);
        out[r] = nn_vm_output(acc, q, r);
    }
}

/**
 * Kernel sums of `rows` rhs rows, as arm_vector_sum_s8 computes them:
 * ks[r] = bias[r] + input_offset * sum_k w[r][k] + depth * input_offset * filter_offset (bias may be NULL).
 */
static inline void nn_vm_mve_kernel_sums(int32_t *kernel_sum, const int8_t *rhs, const int32_t *bias, int32_t rows,
                                         int32_t depth, int32_t input_offset, int32_t filter_offset)
{
    const uint32_t offsets_term = (uint32_t)depth * (uint32_t)input_offset * (uint32_t)filter_offset;
    for (int32_t r = 0; r < rows; r++)
    {
        const uint32_t row_sum = (uint32_t)nn_vm_mve_sum(rhs + r * depth, depth);
        kernel_sum[r] = (int32_t)(nn_vm_bias(bias, r) + row_sum * (uint32_t)input_offset + offsets_term);
    }
}
#endif /* ARM_MATH_MVEI */

#endif /* RS_NN_VEC_MAT_H */
