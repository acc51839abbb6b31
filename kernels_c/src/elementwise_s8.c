/*
 * refsim kernels_c: arm_elementwise_add_s8 and arm_elementwise_mul_s8 (CMSIS-NN API).
 *
 * Semantics (CMSIS-NN Source/BasicMathFunctions, TFLM reference add/mul), per element:
 *   add: a = requant((x1 + o1) << left_shift, m1, s1); b = requant((x2 + o2) << left_shift, m2, s2);
 *        out = clamp(requant(a + b, out_mult, out_shift) + out_offset, act_min, act_max)
 *   mul: out = clamp(requant((x1 + o1) * (x2 + o2), out_mult, out_shift) + out_offset, act_min, act_max)
 * With offsets in [-127, 128] every (x + o) lies in [-255, 255]: it fits the int16 lanes the DSP
 * variant computes in, and a product of two of them fits int32. Sums and shifts wrap like int32.
 *
 * One function per tier; the public functions at the end only dispatch (STYLE rule 10).
 */
#include "support/nn_fixedpoint.h"
#include "variants.h"

#if RS_HAVE_DSP
    #include "support/nn_dsp.h"
#endif
#if RS_HAVE_MVE
    #include "support/nn_mve.h"
#endif

/* ------------------------------------------------------------------------------------------ */
/* Per-element arithmetic shared by the scalar variant and the DSP variant's tails.            */

typedef struct
{
    int32_t input_1_mult;
    int32_t input_1_shift;
    int32_t input_2_mult;
    int32_t input_2_shift;
    int32_t left_shift;
    int32_t out_offset;
    int32_t out_mult;
    int32_t out_shift;
    int32_t act_min;
    int32_t act_max;
} add_quant;

/** One output of the add from the two offset inputs (x + offset). */
static inline int8_t add_one(int32_t in_1, int32_t in_2, const add_quant *q)
{
    const int32_t a = nn_requantize(nn_shl_wrap(in_1, q->left_shift), q->input_1_mult, q->input_1_shift);
    const int32_t b = nn_requantize(nn_shl_wrap(in_2, q->left_shift), q->input_2_mult, q->input_2_shift);
    const int32_t sum = nn_requantize(nn_add_wrap(a, b), q->out_mult, q->out_shift);
    return nn_clamp_s8(nn_add_wrap(sum, q->out_offset), q->act_min, q->act_max);
}

/** One output of the multiply from the two offset inputs (x + offset). */
static inline int8_t mul_one(int32_t in_1, int32_t in_2, int32_t out_offset, int32_t out_mult, int32_t out_shift,
                             int32_t act_min, int32_t act_max)
{
    const int32_t product = nn_requantize(in_1 * in_2, out_mult, out_shift);
    return nn_clamp_s8(nn_add_wrap(product, out_offset), act_min, act_max);
}

#define ADD_QUANT_FROM_ARGS                                                                                        \
    {                                                                                                              \
        input_1_mult, input_1_shift, input_2_mult, input_2_shift, left_shift, out_offset, out_mult, out_shift,     \
            out_activation_min, out_activation_max                                                                 \
    }

/* ------------------------------------------------------------------------------------------ */
/* Scalar tier: plain loops, the readable definition.                                          */

arm_cmsis_nn_status rs_elementwise_add_s8_scalar(RS_ELEMENTWISE_ADD_ARGS)
{
    const add_quant q = ADD_QUANT_FROM_ARGS;
    for (int32_t i = 0; i < block_size; i++)
    {
        output[i] = add_one(input_1_vect[i] + input_1_offset, input_2_vect[i] + input_2_offset, &q);
    }
    return ARM_CMSIS_NN_SUCCESS;
}

arm_cmsis_nn_status rs_elementwise_mul_s8_scalar(RS_ELEMENTWISE_MUL_ARGS)
{
    for (int32_t i = 0; i < block_size; i++)
    {
        output[i] = mul_one(input_1_vect[i] + input_1_offset, input_2_vect[i] + input_2_offset, out_offset, out_mult,
                            out_shift, out_activation_min, out_activation_max);
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* DSP tier: four elements per iteration, offsets added by SXTAB16 in two int16 lanes.         */

#if RS_HAVE_DSP
arm_cmsis_nn_status rs_elementwise_add_s8_dsp(RS_ELEMENTWISE_ADD_ARGS)
{
    const add_quant q = ADD_QUANT_FROM_ARGS;
    const int32_t offset_1 = nn_pack_s16x2(input_1_offset);
    const int32_t offset_2 = nn_pack_s16x2(input_2_offset);
    int32_t i = 0;
    for (; i + 4 <= block_size; i += 4)
    {
        const int32_t word_1 = nn_read_s8x4(input_1_vect + i);
        const int32_t word_2 = nn_read_s8x4(input_2_vect + i);
        const int32_t even_1 = nn_sxtab16_even(offset_1, word_1); /* elements 0 and 2 */
        const int32_t odd_1 = nn_sxtab16_odd(offset_1, word_1);   /* elements 1 and 3 */
        const int32_t even_2 = nn_sxtab16_even(offset_2, word_2);
        const int32_t odd_2 = nn_sxtab16_odd(offset_2, word_2);
        const int8_t r0 = add_one(nn_lane_lo(even_1), nn_lane_lo(even_2), &q);
        const int8_t r1 = add_one(nn_lane_lo(odd_1), nn_lane_lo(odd_2), &q);
        const int8_t r2 = add_one(nn_lane_hi(even_1), nn_lane_hi(even_2), &q);
        const int8_t r3 = add_one(nn_lane_hi(odd_1), nn_lane_hi(odd_2), &q);
        nn_write_s8x4(output + i, nn_pack_s8x4(r0, r1, r2, r3));
    }
    for (; i < block_size; i++)
    {
        output[i] = add_one(input_1_vect[i] + input_1_offset, input_2_vect[i] + input_2_offset, &q);
    }
    return ARM_CMSIS_NN_SUCCESS;
}

arm_cmsis_nn_status rs_elementwise_mul_s8_dsp(RS_ELEMENTWISE_MUL_ARGS)
{
    const int32_t offset_1 = nn_pack_s16x2(input_1_offset);
    const int32_t offset_2 = nn_pack_s16x2(input_2_offset);
    int32_t i = 0;
    for (; i + 4 <= block_size; i += 4)
    {
        const int32_t word_1 = nn_read_s8x4(input_1_vect + i);
        const int32_t word_2 = nn_read_s8x4(input_2_vect + i);
        const int32_t even_1 = nn_sxtab16_even(offset_1, word_1);
        const int32_t odd_1 = nn_sxtab16_odd(offset_1, word_1);
        const int32_t even_2 = nn_sxtab16_even(offset_2, word_2);
        const int32_t odd_2 = nn_sxtab16_odd(offset_2, word_2);
        /* lane products: SMULBB for the low lanes, SMULTT for the high lanes */
        const int8_t r0 = mul_one(nn_lane_lo(even_1), nn_lane_lo(even_2), out_offset, out_mult, out_shift,
                                  out_activation_min, out_activation_max);
        const int8_t r1 = mul_one(nn_lane_lo(odd_1), nn_lane_lo(odd_2), out_offset, out_mult, out_shift,
                                  out_activation_min, out_activation_max);
        const int8_t r2 = mul_one(nn_lane_hi(even_1), nn_lane_hi(even_2), out_offset, out_mult, out_shift,
                                  out_activation_min, out_activation_max);
        const int8_t r3 = mul_one(nn_lane_hi(odd_1), nn_lane_hi(odd_2), out_offset, out_mult, out_shift,
                                  out_activation_min, out_activation_max);
        nn_write_s8x4(output + i, nn_pack_s8x4(r0, r1, r2, r3));
    }
    for (; i < block_size; i++)
    {
        output[i] = mul_one(input_1_vect[i] + input_1_offset, input_2_vect[i] + input_2_offset, out_offset, out_mult,
                            out_shift, out_activation_min, out_activation_max);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_DSP */

/* ------------------------------------------------------------------------------------------ */
/* MVE tier: four int32 lanes per step, widening loads and narrowing stores.                    */

#if RS_HAVE_MVE
/*
 * Full groups of four run unpredicated; the last 1-3 elements use one VCTP-predicated step
 * (GCC 12 turns a predicate inside the main loop into a VMRS/SXTH/VMSR round trip per iteration).
 */

static inline int32x4_t add_4_mve(int32x4_t x_1, int32x4_t x_2, const add_quant *q, int32_t offset_1,
                                  int32_t offset_2)
{
    const int32x4_t a = vshlq_r_s32(vaddq_n_s32(x_1, offset_1), q->left_shift);
    const int32x4_t b = vshlq_r_s32(vaddq_n_s32(x_2, offset_2), q->left_shift);
    const int32x4_t sum = vaddq_s32(nn_requantize_mve(a, q->input_1_mult, q->input_1_shift),
                                    nn_requantize_mve(b, q->input_2_mult, q->input_2_shift));
    const int32x4_t out = vaddq_n_s32(nn_requantize_mve(sum, q->out_mult, q->out_shift), q->out_offset);
    return nn_clamp_mve(out, q->act_min, q->act_max);
}

arm_cmsis_nn_status rs_elementwise_add_s8_mve(RS_ELEMENTWISE_ADD_ARGS)
{
    const add_quant q = ADD_QUANT_FROM_ARGS;
    const int32_t full = block_size & ~3;
    for (int32_t i = 0; i < full; i += 4)
    {
        const int32x4_t out = add_4_mve(vldrbq_s32(input_1_vect + i), vldrbq_s32(input_2_vect + i), &q,
                                        input_1_offset, input_2_offset);
        vstrbq_s32(output + i, out);
    }
    if (full < block_size)
    {
        const mve_pred16_t p = vctp32q((uint32_t)(block_size - full));
        const int32x4_t out = add_4_mve(vldrbq_z_s32(input_1_vect + full, p), vldrbq_z_s32(input_2_vect + full, p),
                                        &q, input_1_offset, input_2_offset);
        vstrbq_p_s32(output + full, out, p);
    }
    return ARM_CMSIS_NN_SUCCESS;
}

static inline int32x4_t mul_4_mve(int32x4_t x_1, int32x4_t x_2, int32_t offset_1, int32_t offset_2,
                                  int32_t out_offset, int32_t out_mult, int32_t out_shift, int32_t act_min,
                                  int32_t act_max)
{
    const int32x4_t product = vmulq_s32(vaddq_n_s32(x_1, offset_1), vaddq_n_s32(x_2, offset_2));
    return nn_clamp_mve(vaddq_n_s32(nn_requantize_mve(product, out_mult, out_shift), out_offset), act_min, act_max);
}

arm_cmsis_nn_status rs_elementwise_mul_s8_mve(RS_ELEMENTWISE_MUL_ARGS)
{
    const int32_t full = block_size & ~3;
    for (int32_t i = 0; i < full; i += 4)
    {
        const int32x4_t out = mul_4_mve(vldrbq_s32(input_1_vect + i), vldrbq_s32(input_2_vect + i), input_1_offset,
                                        input_2_offset, out_offset, out_mult, out_shift, out_activation_min,
                                        out_activation_max);
        vstrbq_s32(output + i, out);
    }
    if (full < block_size)
    {
        const mve_pred16_t p = vctp32q((uint32_t)(block_size - full));
        const int32x4_t out = mul_4_mve(vldrbq_z_s32(input_1_vect + full, p), vldrbq_z_s32(input_2_vect + full, p),
                                        input_1_offset, input_2_offset, out_offset, out_mult, out_shift,
                                        out_activation_min, out_activation_max);
        vstrbq_p_s32(output + full, out, p);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_MVE */

/* ------------------------------------------------------------------------------------------ */
/* Public API: thin dispatch to the richest tier this build has.                               */

#if RS_HAVE_MVE
    #define RS_ADD_IMPL rs_elementwise_add_s8_mve
    #define RS_MUL_IMPL rs_elementwise_mul_s8_mve
#elif RS_HAVE_DSP
    #define RS_ADD_IMPL rs_elementwise_add_s8_dsp
    #define RS_MUL_IMPL rs_elementwise_mul_s8_dsp
#else
    #define RS_ADD_IMPL rs_elementwise_add_s8_scalar
    #define RS_MUL_IMPL rs_elementwise_mul_s8_scalar
#endif

arm_cmsis_nn_status arm_elementwise_add_s8(RS_ELEMENTWISE_ADD_ARGS)
{
    return RS_ADD_IMPL(input_1_vect, input_2_vect, input_1_offset, input_1_mult, input_1_shift, input_2_offset,
                       input_2_mult, input_2_shift, left_shift, output, out_offset, out_mult, out_shift,
                       out_activation_min, out_activation_max, block_size);
}

arm_cmsis_nn_status arm_elementwise_mul_s8(RS_ELEMENTWISE_MUL_ARGS)
{
    return RS_MUL_IMPL(input_1_vect, input_2_vect, input_1_offset, input_2_offset, output, out_offset, out_mult,
                       out_shift, out_activation_min, out_activation_max, block_size);
}
