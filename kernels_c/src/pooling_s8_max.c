/*
 * refsim kernels_c: s8 max pooling (CMSIS-NN API): arm_max_pool_s8.
 *
 * Semantics (kernels_py/pooling.py; CMSIS-NN Source/PoolingFunctions/arm_max_pool_s8.c V.3.1.0).
 * A filter_dims->h x w window slides over NHWC input with stride and top/left padding; the output
 * is the largest tap inside the input, clamped to the activation range; every image of
 * input_dims->n. A window with no tap inside the input is left unwritten and then clamped in place,
 * as CMSIS-NN's clamp pass does. No scratch buffer. Average pooling is pooling_s8_avg.c; both share
 * pooling_s8_internal.h.
 *
 * Tiers:
 *  - scalar: four channels per pass, maxima in registers;
 *  - DSP: four channels per word, SSUB8 + SEL (bytewise GE flags);
 *  - MVE: VMAX.S8 on sixteen channels, the tail VCTP-predicated.
 */
#include "pooling_s8_internal.h"

#if RS_HAVE_DSP
    #include "support/nn_dsp.h"
#endif
#if RS_HAVE_MVE
    #include "support/nn_mve.h"
#endif

/** An empty max-pool window: the byte stays unwritten and is clamped in place. */
static void pool_clamp_in_place(int8_t *output, const pool_layer *g)
{
    for (int32_t c = 0; c < g->ch; c++)
    {
        output[c] = nn_clamp_s8(output[c], g->act_min, g->act_max);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Scalar tier.                                                                               */

arm_cmsis_nn_status rs_max_pool_s8_scalar(RS_POOL_ARGS)
{
    (void)ctx;
    const pool_layer g = pool_unpack(pool_params, input_dims, filter_dims, output_dims);
    const int32_t row_step = g.in_w * g.ch;
    for (int32_t b = 0; b < input_dims->n; b++, src += g.in_h * row_step)
    {
        for (int32_t oy = 0; oy < g.out_h; oy++)
        {
            for (int32_t ox = 0; ox < g.out_w; ox++, dst += g.ch)
            {
                const pool_window v = pool_window_at(&g, src, oy, ox);
                if (v.rows == 0)
                {
                    pool_clamp_in_place(dst, &g);
                    continue;
                }
                int32_t c = 0;
                for (; c + 4 <= g.ch; c += 4)
                {
                    int32_t max_0 = INT8_MIN, max_1 = INT8_MIN, max_2 = INT8_MIN, max_3 = INT8_MIN;
                    const int8_t *row = v.x + c;
                    for (int32_t ky = 0; ky < v.rows; ky++, row += row_step)
                    {
                        const int8_t *x = row;
                        for (int32_t kx = 0; kx < v.cols; kx++, x += g.ch)
                        {
                            max_0 = NN_MAX(max_0, x[0]);
                            max_1 = NN_MAX(max_1, x[1]);
                            max_2 = NN_MAX(max_2, x[2]);
                            max_3 = NN_MAX(max_3, x[3]);
                        }
                    }
                    dst[c] = nn_clamp_s8(max_0, g.act_min, g.act_max);
                    dst[c + 1] = nn_clamp_s8(max_1, g.act_min, g.act_max);
                    dst[c + 2] = nn_clamp_s8(max_2, g.act_min, g.act_max);
                    dst[c + 3] = nn_clamp_s8(max_3, g.act_min, g.act_max);
                }
                for (; c < g.ch; c++)
                {
                    int32_t max = INT8_MIN;
                    const int8_t *row = v.x + c;
                    for (int32_t ky = 0; ky < v.rows; ky++, row += row_step)
                    {
                        for (int32_t kx = 0; kx < v.cols; kx++)
                        {
                            max = NN_MAX(max, row[kx * g.ch]);
                        }
                    }
                    dst[c] = nn_clamp_s8(max, g.act_min, g.act_max);
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* DSP tier.                                                                                  */

#if RS_HAVE_DSP
/** Bytewise max of two words of four int8 (SSUB8 sets a GE flag per byte where a >= b; SEL picks). */
static inline int32_t pool_max_s8x4(int32_t a, int32_t b)
{
    (void)__ssub8((int8x4_t)a, (int8x4_t)b);
    return (int32_t)__sel((uint8x4_t)a, (uint8x4_t)b);
}

arm_cmsis_nn_status rs_max_pool_s8_dsp(RS_POOL_ARGS)
{
    (void)ctx;
    const pool_layer g = pool_unpack(pool_params, input_dims, filter_dims, output_dims);
    const int32_t row_step = g.in_w * g.ch;
    const int32_t lo_x4 = nn_bytes_x4(g.act_min);
    const int32_t hi_x4 = nn_bytes_x4(g.act_max);
    for (int32_t b = 0; b < input_dims->n; b++, src += g.in_h * row_step)
    {
        for (int32_t oy = 0; oy < g.out_h; oy++)
        {
            for (int32_t ox = 0; ox < g.out_w; ox++, dst += g.ch)
            {
                const pool_window v = pool_window_at(&g, src, oy, ox);
                if (v.rows == 0)
                {
                    pool_clamp_in_place(dst, &g);
                    continue;
                }
                int32_t c = 0;
                for (; c + 4 <= g.ch; c += 4)
                {
                    int32_t max = (int32_t)0x80808080U; /* four times INT8_MIN */
                    const int8_t *row = v.x + c;
                    for (int32_t ky = 0; ky < v.rows; ky++, row += row_step)
                    {
                        const int8_t *x = row;
                        for (int32_t kx = 0; kx < v.cols; kx++, x += g.ch)
                        {
                            max = pool_max_s8x4(nn_read_s8x4(x), max);
                        }
                    }
                    /* min(max(m, lo), hi): max against lo, then SEL keeps hi where m >= hi. */
                    max = pool_max_s8x4(max, lo_x4);
                    (void)__ssub8((int8x4_t)max, (int8x4_t)hi_x4);
                    nn_write_s8x4(dst + c, (int32_t)__sel((uint8x4_t)hi_x4, (uint8x4_t)max));
                }
                for (; c < g.ch; c++)
                {
                    int32_t max = INT8_MIN;
                    const int8_t *row = v.x + c;
                    for (int32_t ky = 0; ky < v.rows; ky++, row += row_step)
                    {
                        for (int32_t kx = 0; kx < v.cols; kx++)
                        {
                            max = NN_MAX(max, row[kx * g.ch]);
                        }
                    }
                    dst[c] = nn_clamp_s8(max, g.act_min, g.act_max);
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_DSP */

/* ------------------------------------------------------------------------------------------ */
/* MVE tier.                                                                                  */

#if RS_HAVE_MVE
arm_cmsis_nn_status rs_max_pool_s8_mve(RS_POOL_ARGS)
{
    (void)ctx;
    const pool_layer g = pool_unpack(pool_params, input_dims, filter_dims, output_dims);
    const int32_t row_step = g.in_w * g.ch;
    const int8x16_t lo = vdupq_n_s8((int8_t)g.act_min);
    const int8x16_t hi = vdupq_n_s8((int8_t)g.act_max);
    for (int32_t b = 0; b < input_dims->n; b++, src += g.in_h * row_step)
    {
        for (int32_t oy = 0; oy < g.out_h; oy++)
        {
            for (int32_t ox = 0; ox < g.out_w; ox++, dst += g.ch)
            {
                const pool_window v = pool_window_at(&g, src, oy, ox);
                if (v.rows == 0)
                {
                    pool_clamp_in_place(dst, &g);
                    continue;
                }
                int32_t c = 0;
                for (; c + 16 <= g.ch; c += 16)
                {
                    int8x16_t max = vdupq_n_s8(INT8_MIN);
                    const int8_t *row = v.x + c;
                    for (int32_t ky = 0; ky < v.rows; ky++, row += row_step)
                    {
                        const int8_t *x = row;
                        for (int32_t kx = 0; kx < v.cols; kx++, x += g.ch)
                        {
                            max = vmaxq_s8(max, vld1q_s8(x));
                        }
                    }
                    vst1q_s8(dst + c, vminq_s8(vmaxq_s8(max, lo), hi));
                }
                if (c < g.ch)
                {
                    const mve_pred16_t p = vctp8q((uint32_t)(g.ch - c));
                    int8x16_t max = vdupq_n_s8(INT8_MIN);
                    const int8_t *row = v.x + c;
                    for (int32_t ky = 0; ky < v.rows; ky++, row += row_step)
                    {
                        for (int32_t kx = 0; kx < v.cols; kx++)
                        {
                            /* Off lanes load 0 and are never stored. */
                            max = vmaxq_s8(max, vldrbq_z_s8(row + kx * g.ch, p));
                        }
                    }
                    vstrbq_p_s8(dst + c, vminq_s8(vmaxq_s8(max, lo), hi), p);
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_MVE */

/* ------------------------------------------------------------------------------------------ */
/* Public API, a thin dispatch.                                                               */

arm_cmsis_nn_status arm_max_pool_s8(RS_POOL_ARGS)
{
    return POOL_TIER(rs_max_pool_s8)(ctx, pool_params, input_dims, src, filter_dims, output_dims, dst);
}
