/*
 * refsim kernels_c: s8 average pooling (CMSIS-NN API): arm_avgpool_s8 with its buffer sizes.
 *
 * Semantics (kernels_py/pooling.py; CMSIS-NN Source/PoolingFunctions/arm_avgpool_s8.c V.3.1.0,
 * arm_avgpool_get_buffer_sizes_s8.c V.1.0.0). A filter_dims->h x w window slides over NHWC input
 * with stride and top/left padding; only the taps inside the input count: their sum in int32, then
 * C's rounding division by their count, sum > 0 ? (sum + count / 2) / count : (sum - count / 2) /
 * count (truncating /: ties away from zero), clamped to the activation range. No offsets: input and
 * output share scale and zero point. Every image of input_dims->n (n < 1: ARM_CMSIS_NN_ARG_ERROR),
 * as CMSIS-NN since v6.0.0. A window with no tap inside the input returns ARM_CMSIS_NN_ARG_ERROR on
 * every tier (outputs before it are written); the DSP tier also returns it when ctx->buf is NULL,
 * as CMSIS-NN's DSP build (whose buffer size is C * 4) does. No tier needs the scratch buffer here.
 * Max pooling is pooling_s8_max.c; both share pooling_s8_internal.h.
 *
 * Tiers:
 *  - scalar: four channels per pass, sums in registers, SDIV per average;
 *  - DSP: four channels per word; sums in int16 lanes with SXTAB16 while a window has at most 255
 *    taps (255 * 128 < 2^15), int32 otherwise;
 *  - MVE: sums eight channels in int16 lanes (VLDRB.S16 + VADD) for windows up to 255 taps and
 *    divides by multiplying with ceil(2^32 / count) (VMULH.U32: exact while (|sum| + count/2) *
 *    count < 2^32, here below 2^23), int32 lanes and scalar division for larger windows. Channel
 *    tails are VCTP-predicated.
 */
#include "pooling_s8_internal.h"

#if RS_HAVE_DSP
    #include "support/nn_dsp.h"
#endif
#if RS_HAVE_MVE
    #include "support/nn_mve.h"
#endif

/** Windows up to this many taps sum in int16 lanes (DSP and MVE): 255 * 128 < 2^15. */
#define POOL_MAX_TAPS_S16 255

/** CMSIS-NN's average: sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count, clamped. */
static inline int8_t pool_average(int32_t sum, int32_t count, const pool_layer *g)
{
    const int32_t half = count / 2;
    const int32_t average = (sum > 0 ? sum + half : sum - half) / count;
    return nn_clamp_s8(average, g->act_min, g->act_max);
}

typedef arm_cmsis_nn_status (*pool_image_fn)(RS_POOL_ARGS);

/** Every image of input_dims->n through `image` (CMSIS-NN's batch loop: fewer than one image is an
 * argument error; the first image that fails stops the loop and returns its status). */
static arm_cmsis_nn_status pool_every_image(pool_image_fn image, RS_POOL_ARGS)
{
    if (input_dims->n < 1)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t in_step = input_dims->h * input_dims->w * input_dims->c;
    const int32_t out_step = output_dims->h * output_dims->w * output_dims->c;
    for (int32_t b = 0; b < input_dims->n; b++, src += in_step, dst += out_step)
    {
        const arm_cmsis_nn_status status = image(ctx, pool_params, input_dims, src, filter_dims, output_dims, dst);
        if (status != ARM_CMSIS_NN_SUCCESS)
        {
            return status;
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* Scalar tier.                                                                               */

/** One image of arm_avgpool_s8 (scalar); pool_every_image() loops over input_dims->n. */
static arm_cmsis_nn_status avgpool_image_scalar(RS_POOL_ARGS)
{
    (void)ctx;
    const pool_layer g = pool_unpack(pool_params, input_dims, filter_dims, output_dims);
    const int32_t row_step = g.in_w * g.ch;
    for (int32_t oy = 0; oy < g.out_h; oy++)
    {
        for (int32_t ox = 0; ox < g.out_w; ox++, dst += g.ch)
        {
            const pool_window v = pool_window_at(&g, src, oy, ox);
            const int32_t count = v.rows * v.cols;
            if (count == 0)
            {
                return ARM_CMSIS_NN_ARG_ERROR;
            }
            int32_t c = 0;
            for (; c + 4 <= g.ch; c += 4)
            {
                int32_t sum_0 = 0, sum_1 = 0, sum_2 = 0, sum_3 = 0;
                const int8_t *row = v.x + c;
                for (int32_t ky = 0; ky < v.rows; ky++, row += row_step)
                {
                    const int8_t *x = row;
                    for (int32_t kx = 0; kx < v.cols; kx++, x += g.ch)
                    {
                        sum_0 += x[0];
                        sum_1 += x[1];
                        sum_2 += x[2];
                        sum_3 += x[3];
                    }
                }
                dst[c] = pool_average(sum_0, count, &g);
                dst[c + 1] = pool_average(sum_1, count, &g);
                dst[c + 2] = pool_average(sum_2, count, &g);
                dst[c + 3] = pool_average(sum_3, count, &g);
            }
            for (; c < g.ch; c++)
            {
                int32_t sum = 0;
                const int8_t *row = v.x + c;
                for (int32_t ky = 0; ky < v.rows; ky++, row += row_step)
                {
                    for (int32_t kx = 0; kx < v.cols; kx++)
                    {
                        sum += row[kx * g.ch];
                    }
                }
                dst[c] = pool_average(sum, count, &g);
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

arm_cmsis_nn_status rs_avgpool_s8_scalar(RS_POOL_ARGS)
{
    return pool_every_image(avgpool_image_scalar, ctx, pool_params, input_dims, src, filter_dims, output_dims, dst);
}

/* ------------------------------------------------------------------------------------------ */
/* DSP tier.                                                                                  */

#if RS_HAVE_DSP
/** Sums of four channels over a window: int16 lanes (SXTAB16) for small windows, else int32. */
static inline void pool_sum4_dsp(const pool_window *v, int32_t ch, int32_t row_step, int32_t sum[4])
{
    if (v->rows * v->cols <= POOL_MAX_TAPS_S16)
    {
        int32_t even = 0; /* channels 0, 2 in int16 lanes */
        int32_t odd = 0;  /* channels 1, 3 */
        const int8_t *row = v->x;
        for (int32_t ky = 0; ky < v->rows; ky++, row += row_step)
        {
            const int8_t *x = row;
            for (int32_t kx = 0; kx < v->cols; kx++, x += ch)
            {
                const int32_t word = nn_read_s8x4(x);
                even = __sxtab16(even, word);
                odd = nn_sxtab16_ror8(odd, word);
            }
        }
        sum[0] = nn_lane_lo(even);
        sum[1] = nn_lane_lo(odd);
        sum[2] = nn_lane_hi(even);
        sum[3] = nn_lane_hi(odd);
        return;
    }
    sum[0] = sum[1] = sum[2] = sum[3] = 0;
    const int8_t *row = v->x;
    for (int32_t ky = 0; ky < v->rows; ky++, row += row_step)
    {
        const int8_t *x = row;
        for (int32_t kx = 0; kx < v->cols; kx++, x += ch)
        {
            sum[0] += x[0];
            sum[1] += x[1];
            sum[2] += x[2];
            sum[3] += x[3];
        }
    }
}

/** CMSIS-NN's average saturated to int8 (SSAT; the activation clamp follows bytewise). */
static inline uint32_t pool_average_ssat8(int32_t sum, int32_t half, int32_t count)
{
    return (uint32_t)__ssat((sum > 0 ? sum + half : sum - half) / count, 8);
}

/** One image of arm_avgpool_s8 (dsp); pool_every_image() loops over input_dims->n. */
static arm_cmsis_nn_status avgpool_image_dsp(RS_POOL_ARGS)
{
    if ((ctx == NULL || ctx->buf == NULL) && arm_avgpool_s8_get_buffer_size_dsp(output_dims->w, input_dims->c) > 0)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const pool_layer g = pool_unpack(pool_params, input_dims, filter_dims, output_dims);
    const int32_t row_step = g.in_w * g.ch;
    const int32_t lo_x4 = nn_bytes_x4(g.act_min);
    const int32_t hi_x4 = nn_bytes_x4(g.act_max);
    for (int32_t oy = 0; oy < g.out_h; oy++)
    {
        for (int32_t ox = 0; ox < g.out_w; ox++, dst += g.ch)
        {
            pool_window v = pool_window_at(&g, src, oy, ox);
            const int32_t count = v.rows * v.cols;
            if (count == 0)
            {
                return ARM_CMSIS_NN_ARG_ERROR;
            }
            const int8_t *first = v.x;
            const int32_t half = count / 2;
            int32_t c = 0;
            for (; c + 4 <= g.ch; c += 4)
            {
                int32_t sum[4];
                v.x = first + c;
                pool_sum4_dsp(&v, g.ch, row_step, sum);
                nn_write_s8x4(dst + c, nn_pack_clamp_s8x4(pool_average_ssat8(sum[0], half, count),
                                                          pool_average_ssat8(sum[1], half, count),
                                                          pool_average_ssat8(sum[2], half, count),
                                                          pool_average_ssat8(sum[3], half, count), lo_x4, hi_x4));
            }
            for (; c < g.ch; c++)
            {
                int32_t sum = 0;
                const int8_t *row = first + c;
                for (int32_t ky = 0; ky < v.rows; ky++, row += row_step)
                {
                    for (int32_t kx = 0; kx < v.cols; kx++)
                    {
                        sum += row[kx * g.ch];
                    }
                }
                dst[c] = pool_average(sum, count, &g);
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

arm_cmsis_nn_status rs_avgpool_s8_dsp(RS_POOL_ARGS)
{
    return pool_every_image(avgpool_image_dsp, ctx, pool_params, input_dims, src, filter_dims, output_dims, dst);
}
#endif /* RS_HAVE_DSP */

/* ------------------------------------------------------------------------------------------ */
/* MVE tier.                                                                                  */

#if RS_HAVE_MVE
/**
 * Lane-wise CMSIS-NN average of int32 sums, count in [2, 255]: sign(sum) * floor((|sum| + count/2) /
 * count), the floor by VMULH.U32 with reciprocal = ceil(2^32 / count). With n = |sum| + count/2 <
 * 2^15 and e = reciprocal * count - 2^32 < count, n * e < 2^32 keeps floor(n * reciprocal / 2^32) =
 * floor(n / count). sum == 0 gives 0 on both sides.
 */
static inline int32x4_t pool_average_mve(int32x4_t sum, int32_t half, uint32x4_t reciprocal, const pool_layer *g)
{
    const int32x4_t sign = vshrq_n_s32(sum, 31);
    const uint32x4_t n = vreinterpretq_u32_s32(vaddq_n_s32(vabsq_s32(sum), half));
    const int32x4_t q = vreinterpretq_s32_u32(vmulhq_u32(n, reciprocal));
    return nn_clamp_mve(vsubq_s32(veorq_s32(q, sign), sign), g->act_min, g->act_max);
}

/** Eight channels' averages from int16 lane sums, as int16 lanes ready for VSTRB.16. */
static inline int16x8_t pool_average8_mve(int16x8_t sum, int32_t count, uint32x4_t reciprocal, const pool_layer *g)
{
    int32x4_t even = vmovlbq_s16(sum);
    int32x4_t odd = vmovltq_s16(sum);
    if (count > 1)
    {
        even = pool_average_mve(even, count / 2, reciprocal, g);
        odd = pool_average_mve(odd, count / 2, reciprocal, g);
    }
    else
    {
        even = nn_clamp_mve(even, g->act_min, g->act_max);
        odd = nn_clamp_mve(odd, g->act_min, g->act_max);
    }
    return vmovntq_s32(vmovnbq_s32(vdupq_n_s16(0), even), odd);
}

/** One image of arm_avgpool_s8 (mve); pool_every_image() loops over input_dims->n. */
static arm_cmsis_nn_status avgpool_image_mve(RS_POOL_ARGS)
{
    (void)ctx;
    const pool_layer g = pool_unpack(pool_params, input_dims, filter_dims, output_dims);
    const int32_t row_step = g.in_w * g.ch;
    for (int32_t oy = 0; oy < g.out_h; oy++)
    {
        for (int32_t ox = 0; ox < g.out_w; ox++, dst += g.ch)
        {
            const pool_window v = pool_window_at(&g, src, oy, ox);
            const int32_t count = v.rows * v.cols;
            if (count == 0)
            {
                return ARM_CMSIS_NN_ARG_ERROR;
            }
            if (count > POOL_MAX_TAPS_S16)
            {
                /* Large windows: int32 lane sums, one division per channel (the taps dominate). */
                for (int32_t c = 0; c < g.ch; c += 4)
                {
                    const mve_pred16_t p = vctp32q((uint32_t)(g.ch - c));
                    int32x4_t sum = vdupq_n_s32(0);
                    const int8_t *row = v.x + c;
                    for (int32_t ky = 0; ky < v.rows; ky++, row += row_step)
                    {
                        for (int32_t kx = 0; kx < v.cols; kx++)
                        {
                            sum = vaddq_s32(sum, vldrbq_z_s32(row + kx * g.ch, p));
                        }
                    }
                    int32_t sums[4];
                    vst1q_s32(sums, sum);
                    for (int32_t i = 0; i < 4 && c + i < g.ch; i++)
                    {
                        dst[c + i] = pool_average(sums[i], count, &g);
                    }
                }
                continue;
            }
            const uint32x4_t reciprocal = vdupq_n_u32(count > 1 ? 0xFFFFFFFFU / (uint32_t)count + 1U : 0U);
            int32_t c = 0;
            for (; c + 8 <= g.ch; c += 8)
            {
                int16x8_t sum = vdupq_n_s16(0);
                const int8_t *row = v.x + c;
                for (int32_t ky = 0; ky < v.rows; ky++, row += row_step)
                {
                    const int8_t *x = row;
                    for (int32_t kx = 0; kx < v.cols; kx++, x += g.ch)
                    {
                        sum = vaddq_s16(sum, vldrbq_s16(x));
                    }
                }
                vstrbq_s16(dst + c, pool_average8_mve(sum, count, reciprocal, &g));
            }
            if (c < g.ch)
            {
                const mve_pred16_t p = vctp16q((uint32_t)(g.ch - c));
                int16x8_t sum = vdupq_n_s16(0);
                const int8_t *row = v.x + c;
                for (int32_t ky = 0; ky < v.rows; ky++, row += row_step)
                {
                    for (int32_t kx = 0; kx < v.cols; kx++)
                    {
                        sum = vaddq_s16(sum, vldrbq_z_s16(row + kx * g.ch, p));
                    }
                }
                vstrbq_p_s16(dst + c, pool_average8_mve(sum, count, reciprocal, &g), p);
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

arm_cmsis_nn_status rs_avgpool_s8_mve(RS_POOL_ARGS)
{
    return pool_every_image(avgpool_image_mve, ctx, pool_params, input_dims, src, filter_dims, output_dims, dst);
}

#endif /* RS_HAVE_MVE */

/* ------------------------------------------------------------------------------------------ */
/* Buffer sizes (host-callable _dsp/_mve) and the public API, a thin dispatch.                */

int32_t arm_avgpool_s8_get_buffer_size_dsp(const int output_x, const int ch_src)
{
    (void)output_x;
    return ch_src * (int32_t)sizeof(int32_t);
}

int32_t arm_avgpool_s8_get_buffer_size_mve(const int output_x, const int ch_src)
{
    (void)output_x;
    (void)ch_src;
    return 0;
}

int32_t arm_avgpool_s8_get_buffer_size(const int output_x, const int ch_src)
{
#if RS_HAVE_MVE
    return arm_avgpool_s8_get_buffer_size_mve(output_x, ch_src);
#elif RS_HAVE_DSP
    return arm_avgpool_s8_get_buffer_size_dsp(output_x, ch_src);
#else
    (void)output_x;
    (void)ch_src;
    return 0;
#endif
}

arm_cmsis_nn_status arm_avgpool_s8(RS_POOL_ARGS)
{
    return POOL_TIER(rs_avgpool_s8)(ctx, pool_params, input_dims, src, filter_dims, output_dims, dst);
}

