/*
 * refsim kernels_c: the MVE tier of the s8 depthwise kernels (see src/depthwise_s8.c): eight
 * channels per step in int16 lanes widened by VMULLB/VMULLT, per-lane requantize.
 */
#include "depthwise_s8_internal.h"

#if RS_HAVE_MVE
    #include "support/nn_mve.h"

/**
 * Lane-wise nn_requantize with per-lane multiplier and shift (CMSIS-NN arm_requantize_mve_32x4):
 * VSHL by max(shift, 0) wraps like the scalar pre-shift, VQRDMULH is the no-saturation doubling
 * high multiply for multipliers other than INT32_MIN, and DIV_POW2 is VRSHL by min(shift, 0)
 * after subtracting one from negative lanes that get shifted (see support/nn_mve.h).
 */
static inline int32x4_t dw_requantize_mve(int32x4_t val, int32x4_t mult, int32x4_t shift)
{
    const int32x4_t zero = vdupq_n_s32(0);
    const int32x4_t right = vminq_s32(shift, zero);
    const int32x4_t high = vqrdmulhq_s32(vshlq_s32(val, vmaxq_s32(shift, zero)), mult);
    const int32x4_t fixup = vandq_s32(vshrq_n_s32(high, 31), vshrq_n_s32(right, 31));
    return vrshlq_s32(vqaddq_s32(high, fixup), right);
}

/** Eight channels (even and odd lanes) to int8: + output offset, VQMOVN to int16, clamp, VSTRB.16. */
static inline int16x8_t dw_narrow8_mve(int32x4_t even, int32x4_t odd, int32_t out_offset, int32_t lo, int32_t hi)
{
    /* Saturating to int16 keeps the order, so the int8 clamp after it is the clamp of the int32. */
    const int16x8_t both = vqmovntq_s32(vqmovnbq_s32(vreinterpretq_s16_s32(even), vaddq_n_s32(even, out_offset)),
                                        vaddq_n_s32(odd, out_offset));
    return vminq_s16(vmaxq_s16(both, vdupq_n_s16((int16_t)lo)), vdupq_n_s16((int16_t)hi));
}

/** One tap of eight channels: (x + offset) in int16 lanes, even/odd products widened to int32. */
static inline void dw_tap_mve(const int8_t *x, const int8_t *w, int16_t offset, int32x4_t *even, int32x4_t *odd)
{
    const int16x8_t xs = vaddq_n_s16(vldrbq_s16(x), offset);
    const int16x8_t ws = vldrbq_s16(w);
    *even = vaddq_s32(*even, vmullbq_int_s16(xs, ws));
    *odd = vaddq_s32(*odd, vmulltq_int_s16(xs, ws));
}

/** ch_mult == 1, one image: eight channels per step in int16 lanes, a predicated int32 tail. */
static void dw_ch1_mve(const dw_layer *g, const int8_t *input, int8_t *restrict output)
{
    const int32_t ch = g->in_c;
    const int32_t x_row_step = g->dil_h * g->in_w * ch;
    const int32_t x_col_step = g->dil_w * ch;
    const int32_t w_row_step = g->k_w * ch;
    const int16_t offset = (int16_t)g->input_offset;
    const int32_t out_offset = g->output_offset, lo = g->act_min, hi = g->act_max;
    const int32_t *const bias = g->bias, *const mult = g->mult, *const shift = g->shift;
    for (int32_t oy = 0; oy < g->out_h; oy++)
    {
        for (int32_t ox = 0; ox < g->out_w; ox++, output += ch)
        {
            const dw_window v = dw_window_at(g, input, oy, ox);
            int32_t c = 0;
            for (; c + 8 <= ch; c += 8)
            {
                int32x4_t even = vdupq_n_s32(0);
                int32x4_t odd = vdupq_n_s32(0);
                if (bias)
                {
                    const int32x4x2_t b = vld2q_s32(bias + c);
                    even = b.val[0];
                    odd = b.val[1];
                }
                const int8_t *x = v.x + c;
                const int8_t *w = v.w + c;
                for (int32_t r = 0; r < v.rows; r++, x += x_row_step, w += w_row_step)
                {
                    /* Rows of up to three taps unrolled (all nine unrolled run out of Q registers). */
                    switch (v.cols)
                    {
                    case 3:
                        dw_tap_mve(x + 2 * x_col_step, w + 2 * ch, offset, &even, &odd);
                        /* fall through */
                    case 2:
                        dw_tap_mve(x + x_col_step, w + ch, offset, &even, &odd);
                        /* fall through */
                    case 1:
                        dw_tap_mve(x, w, offset, &even, &odd);
                        break;
                    default:
                        for (int32_t i = 0; i < v.cols; i++)
                        {
                            dw_tap_mve(x + i * x_col_step, w + i * ch, offset, &even, &odd);
                        }
                    }
                }
                const int32x4x2_t m = vld2q_s32(mult + c);
                const int32x4x2_t s = vld2q_s32(shift + c);
                even = dw_requantize_mve(even, m.val[0], s.val[0]);
                odd = dw_requantize_mve(odd, m.val[1], s.val[1]);
                vstrbq_s16(output + c, dw_narrow8_mve(even, odd, out_offset, lo, hi));
            }
            for (; c < ch; c += 4)
            {
                const mve_pred16_t p = vctp32q((uint32_t)(ch - c));
                int32x4_t acc = bias ? vldrwq_z_s32(bias + c, p) : vdupq_n_s32(0);
                const int8_t *x_row = v.x + c;
                const int8_t *w_row = v.w + c;
                for (int32_t r = 0; r < v.rows; r++, x_row += x_row_step, w_row += w_row_step)
                {
                    for (int32_t i = 0; i < v.cols; i++)
                    {
                        const int32x4_t xs = vaddq_n_s32(vldrbq_z_s32(x_row + i * x_col_step, p), g->input_offset);
                        acc = vaddq_s32(acc, vmulq_s32(xs, vldrbq_z_s32(w_row + i * ch, p)));
                    }
                }
                acc = dw_requantize_mve(acc, vldrwq_z_s32(mult + c, p), vldrwq_z_s32(shift + c, p));
                acc = nn_clamp_mve(vaddq_n_s32(acc, out_offset), lo, hi);
                vstrbq_p_s32(output + c, acc, p);
            }
        }
    }
}

/**
 * ch_mult > 1, one image: four output channels per vector; each lane gathers the input channel
 * oc / ch_mult, computed as the high word of oc * ceil(2^32 / ch_mult) (exact for oc * ch_mult < 2^32).
 */
static void dw_multi_mve(const dw_layer *g, const int8_t *input, int8_t *restrict output)
{
    const int32_t in_ch = g->in_c;
    const int32_t out_ch = g->out_c;
    const uint32x4_t reciprocal = vdupq_n_u32(0xFFFFFFFFU / (uint32_t)g->ch_mult + 1U);
    const int32_t x_row_step = g->dil_h * g->in_w * in_ch;
    const int32_t x_col_step = g->dil_w * in_ch;
    const int32_t w_row_step = g->k_w * out_ch;
    const int32_t offset = g->input_offset;
    const int32_t out_offset = g->output_offset, lo = g->act_min, hi = g->act_max;
    const int32_t *const bias = g->bias, *const mult = g->mult, *const shift = g->shift;
    for (int32_t oy = 0; oy < g->out_h; oy++)
    {
        for (int32_t ox = 0; ox < g->out_w; ox++, output += out_ch)
        {
            const dw_window v = dw_window_at(g, input, oy, ox);
            int32_t oc = 0;
            for (; oc + 4 <= out_ch; oc += 4)
            {
                const uint32x4_t ic = vmulhq_u32(vidupq_n_u32((uint32_t)oc, 1), reciprocal);
                int32x4_t acc = bias ? vldrwq_s32(bias + oc) : vdupq_n_s32(0);
                const int8_t *x_row = v.x;
                const int8_t *w_row = v.w + oc;
                for (int32_t r = 0; r < v.rows; r++, x_row += x_row_step, w_row += w_row_step)
                {
                    for (int32_t i = 0; i < v.cols; i++)
                    {
                        const int32x4_t xs = vaddq_n_s32(vldrbq_gather_offset_s32(x_row + i * x_col_step, ic), offset);
                        acc = vaddq_s32(acc, vmulq_s32(xs, vldrbq_s32(w_row + i * out_ch)));
                    }
                }
                acc = dw_requantize_mve(acc, vldrwq_s32(mult + oc), vldrwq_s32(shift + oc));
                vstrbq_s32(output + oc, nn_clamp_mve(vaddq_n_s32(acc, out_offset), lo, hi));
            }
            if (oc < out_ch)
            {
                const mve_pred16_t p = vctp32q((uint32_t)(out_ch - oc));
                const uint32x4_t ic = vmulhq_u32(vidupq_n_u32((uint32_t)oc, 1), reciprocal);
                int32x4_t acc = bias ? vldrwq_z_s32(bias + oc, p) : vdupq_n_s32(0);
                const int8_t *x_row = v.x;
                const int8_t *w_row = v.w + oc;
                for (int32_t r = 0; r < v.rows; r++, x_row += x_row_step, w_row += w_row_step)
                {
                    for (int32_t i = 0; i < v.cols; i++)
                    {
                        const int32x4_t xs =
                            vaddq_n_s32(vldrbq_gather_offset_z_s32(x_row + i * x_col_step, ic, p), offset);
                        acc = vaddq_s32(acc, vmulq_s32(xs, vldrbq_z_s32(w_row + i * out_ch, p)));
                    }
                }
                acc = dw_requantize_mve(acc, vldrwq_z_s32(mult + oc, p), vldrwq_z_s32(shift + oc, p));
                vstrbq_p_s32(output + oc, nn_clamp_mve(vaddq_n_s32(acc, out_offset), lo, hi), p);
            }
        }
    }
}

arm_cmsis_nn_status rs_depthwise_conv_s8_mve(RS_DEPTHWISE_CONV_ARGS)
{
    (void)ctx;
    (void)bias_dims;
    const dw_layer g = dw_unpack(dw_conv_params, quant_params, input_dims, filter_dims, filter, bias, output_dims);
    for (int32_t b = 0; b < input_dims->n; b++)
    {
        const int8_t *in = input + b * g.in_h * g.in_w * g.in_c;
        int8_t *out = output + b * g.out_h * g.out_w * g.out_c;
        if (g.ch_mult == 1)
        {
            dw_ch1_mve(&g, in, out);
        }
        else
        {
            dw_multi_mve(&g, in, out);
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}


arm_cmsis_nn_status rs_depthwise_conv_3x3_s8_mve(RS_DEPTHWISE_CONV_ARGS)
{
    (void)ctx;
    (void)bias_dims;
    return dw_run_ch1(dw_check_3x3(dw_conv_params, input_dims, filter_dims, output_dims), dw_ch1_mve,
                      DW_CH1_FORWARD);
}

arm_cmsis_nn_status rs_depthwise_conv_s8_opt_mve(RS_DEPTHWISE_CONV_ARGS)
{
    (void)bias_dims;
    const int32_t buffer_size = arm_depthwise_conv_s8_opt_get_buffer_size_mve(input_dims, filter_dims);
    return dw_run_ch1(dw_check_opt(ctx, input_dims, output_dims, buffer_size), dw_ch1_mve, DW_CH1_FORWARD);
}

#endif /* RS_HAVE_MVE */
