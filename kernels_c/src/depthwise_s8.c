/*
 * refsim kernels_c: s8 depthwise convolution (CMSIS-NN API): arm_depthwise_conv_wrapper_s8,
 * arm_depthwise_conv_s8, arm_depthwise_conv_3x3_s8, arm_depthwise_conv_s8_opt and the buffer sizes.
 *
 * Semantics (kernels_py/depthwise.py; CMSIS-NN Source/ConvolutionFunctions/arm_depthwise_conv_*_s8.c,
 * TFLM reference_integer_ops::DepthwiseConvPerChannel), per image, output pixel and channel:
 *   acc[oc] = bias[oc] + sum over taps inside the input of (in[iy][ix][ic] + input_offset) * filter[ky][kx][oc]
 *   out[oc] = clamp(requant(acc[oc], multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
 * with oc = ic * ch_mult + m, iy = oy * stride.h - padding.h + ky * dilation.h (x likewise). Padded
 * taps are skipped, which equals padding the offset input with zeros. The int32 accumulator wraps
 * (SMLAxx and MLA wrap); under wrap the sum is order independent, so every tier gives the same bits.
 *
 * Kernels and what CMSIS-NN lets them assume:
 *  - arm_depthwise_conv_s8: any batch, ch_mult, stride, padding, dilation. Never fails.
 *  - arm_depthwise_conv_s8_opt: C_IN == C_OUT (else ARG_ERROR) and, where the build's
 *    arm_depthwise_conv_s8_opt_get_buffer_size() is positive (DSP, MVE), a ctx->buf (else
 *    ARG_ERROR). One image, dilation ignored, as CMSIS-NN; the scalar build runs the generic kernel.
 *  - arm_depthwise_conv_3x3_s8: C_IN == C_OUT, a 3x3 filter and padding.w <= 1 (else ARG_ERROR).
 *    One image, dilation ignored. Where CMSIS-NN reads outside the input (a window whose middle
 *    column is outside it) this code only reads the taps inside.
 *  - arm_depthwise_conv_wrapper_s8: CMSIS-NN V.2.2.0's routing (kernels_py select_depthwise_kernel);
 *    see the wrappers at the end of the file.
 * None of them needs its scratch buffer here; the sizes are CMSIS-NN's so callers size ctx alike.
 *
 * Tiers, all computing channel blocks of one output pixel over the taps inside the input:
 *  - scalar: four channels per pass (MLA), x + input_offset once per tap and channel;
 *  - DSP: four channels per word; SXTAB16 adds the input offset while unpacking input bytes
 *    {0,2} and {1,3} into int16 lanes, SXTB16 unpacks the filter, SMLABB/SMLATT accumulate
 *    each channel in its own int32;
 *  - MVE: eight channels per step in int16 lanes (x + offset lies in [-255, 255]); VMULLB/VMULLT
 *    widen the even/odd channel products to int32 lanes; VMOVNB/VMOVNT re-interleave the results.
 *    Channel tails use int32 lanes with a VCTP predicate. ch_mult > 1 gathers the input channel
 *    of each output lane (oc / ch_mult, by a reciprocal multiply).
 */
#include "support/nn_fixedpoint.h"
#include "variants.h"

#if RS_HAVE_DSP
    #include "support/nn_dsp.h"
#endif
#if RS_HAVE_MVE
    #include "support/nn_mve.h"
#endif

/** CH_IN_BLOCK_MVE (CMSIS-NN arm_nnsupportfunctions.h): channels per block of its MVE _opt kernel. */
#define DW_CH_IN_BLOCK_MVE 124

/** Channels whose accumulators one pixel's MAC pass leaves (on the stack) for the requantize pass. */
#define DW_CHUNK 64

typedef struct
{
    int32_t in_h, in_w, in_c;
    int32_t ch_mult, out_c;
    int32_t k_h, k_w;
    int32_t out_h, out_w;
    int32_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
    int32_t input_offset, output_offset, act_min, act_max;
    const int8_t *filter;
    const int32_t *bias; /* NULL: no bias */
    const int32_t *mult;
    const int32_t *shift;
} dw_layer;

static dw_layer dw_unpack(const cmsis_nn_dw_conv_params *p,
                          const cmsis_nn_per_channel_quant_params *quant_params,
                          const cmsis_nn_dims *input_dims,
                          const cmsis_nn_dims *filter_dims,
                          const int8_t *filter,
                          const int32_t *bias,
                          const cmsis_nn_dims *output_dims)
{
    const dw_layer g = {
        input_dims->h,     input_dims->w,      input_dims->c,      p->ch_mult,         output_dims->c,
        filter_dims->h,    filter_dims->w,     output_dims->h,     output_dims->w,     p->stride.h,
        p->stride.w,       p->padding.h,       p->padding.w,       p->dilation.h,      p->dilation.w,
        p->input_offset,   p->output_offset,   p->activation.min,  p->activation.max,  filter,
        bias,              quant_params->multiplier,               quant_params->shift,
    };
    return g;
}

/** One output pixel's window: rows x cols taps inside the input, and where the first of them is. */
typedef struct
{
    int32_t rows, cols;
    const int8_t *x; /* input at the first tap inside, channel 0 */
    const int8_t *w; /* filter at that tap, output channel 0 */
} dw_window;

/** Taps [start, end) of a k-tap window at `base` (dilation `dil`) that land inside [0, size). */
static inline int32_t dw_first_tap(int32_t base, int32_t dil) { return base < 0 ? (dil - 1 - base) / dil : 0; }
static inline int32_t dw_end_tap(int32_t base, int32_t size, int32_t k, int32_t dil)
{
    const int32_t room = size - base;
    return room <= 0 ? 0 : NN_MIN(k, (room + dil - 1) / dil);
}

static inline dw_window dw_window_at(const dw_layer *g, const int8_t *input, int32_t oy, int32_t ox)
{
    const int32_t base_y = oy * g->stride_h - g->pad_h;
    const int32_t base_x = ox * g->stride_w - g->pad_w;
    const int32_t ky0 = dw_first_tap(base_y, g->dil_h);
    const int32_t kx0 = dw_first_tap(base_x, g->dil_w);
    dw_window v = {dw_end_tap(base_y, g->in_h, g->k_h, g->dil_h) - ky0,
                   dw_end_tap(base_x, g->in_w, g->k_w, g->dil_w) - kx0, input, g->filter};
    if (v.rows <= 0 || v.cols <= 0)
    {
        v.rows = 0; /* no tap inside: the output is the requantized bias */
        v.cols = 0;
        return v;
    }
    v.x = input + ((base_y + ky0 * g->dil_h) * g->in_w + base_x + kx0 * g->dil_w) * g->in_c;
    v.w = g->filter + (ky0 * g->k_w + kx0) * g->out_c;
    return v;
}

/** requant(acc) + output_offset (int32 wrap), clamped to [lo, hi]. */
static inline int32_t dw_requant_clamp(int32_t acc, int32_t mult, int32_t shift, int32_t out_offset, int32_t lo,
                                       int32_t hi)
{
    const int32_t v = nn_add_wrap(nn_requantize_64(acc, mult, shift), out_offset);
    return v < lo ? lo : (v > hi ? hi : v);
}

/* ------------------------------------------------------------------------------------------ */
/* Scalar tier.                                                                               */

/** ch_mult == 1, one image: four channels per pass (the weights of a tap are 4 adjacent bytes). */
static void dw_ch1_scalar(const dw_layer *g, const int8_t *input, int8_t *restrict output)
{
    const int32_t ch = g->in_c;
    const int32_t x_row_step = g->dil_h * g->in_w * ch;
    const int32_t x_col_step = g->dil_w * ch;
    const int32_t w_row_step = g->k_w * ch;
    const int32_t offset = g->input_offset;
    const int32_t out_offset = g->output_offset, lo = g->act_min, hi = g->act_max;
    const int32_t *const bias = g->bias, *const mult = g->mult, *const shift = g->shift;
    for (int32_t oy = 0; oy < g->out_h; oy++)
    {
        for (int32_t ox = 0; ox < g->out_w; ox++, output += ch)
        {
            const dw_window v = dw_window_at(g, input, oy, ox);
            int32_t c = 0;
            for (; c + 4 <= ch; c += 4)
            {
                uint32_t acc[4] = {0, 0, 0, 0};
                if (bias)
                {
                    for (int32_t j = 0; j < 4; j++)
                    {
                        acc[j] = (uint32_t)bias[c + j];
                    }
                }
                const int8_t *x_row = v.x + c;
                const int8_t *w_row = v.w + c;
                for (int32_t r = 0; r < v.rows; r++, x_row += x_row_step, w_row += w_row_step)
                {
                    const int8_t *x = x_row;
                    const int8_t *w = w_row;
                    for (int32_t i = 0; i < v.cols; i++, x += x_col_step, w += ch)
                    {
                        acc[0] += (uint32_t)((x[0] + offset) * w[0]);
                        acc[1] += (uint32_t)((x[1] + offset) * w[1]);
                        acc[2] += (uint32_t)((x[2] + offset) * w[2]);
                        acc[3] += (uint32_t)((x[3] + offset) * w[3]);
                    }
                }
                for (int32_t j = 0; j < 4; j++)
                {
                    output[c + j] =
                        (int8_t)dw_requant_clamp((int32_t)acc[j], mult[c + j], shift[c + j], out_offset, lo, hi);
                }
            }
            for (; c < ch; c++)
            {
                uint32_t acc = bias ? (uint32_t)bias[c] : 0U;
                const int8_t *x_row = v.x + c;
                const int8_t *w_row = v.w + c;
                for (int32_t r = 0; r < v.rows; r++, x_row += x_row_step, w_row += w_row_step)
                {
                    for (int32_t i = 0; i < v.cols; i++)
                    {
                        acc += (uint32_t)((x_row[i * x_col_step] + offset) * w_row[i * ch]);
                    }
                }
                output[c] = (int8_t)dw_requant_clamp((int32_t)acc, mult[c], shift[c], out_offset, lo, hi);
            }
        }
    }
}

/** ch_mult > 1, one image: per input channel, four multipliers per pass share each offset input. */
static void dw_multi_scalar(const dw_layer *g, const int8_t *input, int8_t *restrict output)
{
    const int32_t in_ch = g->in_c;
    const int32_t out_ch = g->out_c;
    const int32_t ch_mult = g->ch_mult;
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
            for (int32_t ic = 0; ic < in_ch; ic++)
            {
                int32_t oc = ic * ch_mult;
                const int32_t oc_end = oc + ch_mult;
                for (; oc + 4 <= oc_end; oc += 4)
                {
                    uint32_t acc[4] = {0, 0, 0, 0};
                    if (bias)
                    {
                        for (int32_t j = 0; j < 4; j++)
                        {
                            acc[j] = (uint32_t)bias[oc + j];
                        }
                    }
                    const int8_t *x_row = v.x + ic;
                    const int8_t *w_row = v.w + oc;
                    for (int32_t r = 0; r < v.rows; r++, x_row += x_row_step, w_row += w_row_step)
                    {
                        const int8_t *w = w_row;
                        for (int32_t i = 0; i < v.cols; i++, w += out_ch)
                        {
                            const int32_t x = x_row[i * x_col_step] + offset;
                            acc[0] += (uint32_t)(x * w[0]);
                            acc[1] += (uint32_t)(x * w[1]);
                            acc[2] += (uint32_t)(x * w[2]);
                            acc[3] += (uint32_t)(x * w[3]);
                        }
                    }
                    for (int32_t j = 0; j < 4; j++)
                    {
                        output[oc + j] = (int8_t)dw_requant_clamp((int32_t)acc[j], mult[oc + j], shift[oc + j],
                                                                  out_offset, lo, hi);
                    }
                }
                for (; oc < oc_end; oc++)
                {
                    uint32_t acc = bias ? (uint32_t)bias[oc] : 0U;
                    const int8_t *x_row = v.x + ic;
                    const int8_t *w_row = v.w + oc;
                    for (int32_t r = 0; r < v.rows; r++, x_row += x_row_step, w_row += w_row_step)
                    {
                        for (int32_t i = 0; i < v.cols; i++)
                        {
                            acc += (uint32_t)((x_row[i * x_col_step] + offset) * w_row[i * out_ch]);
                        }
                    }
                    output[oc] = (int8_t)dw_requant_clamp((int32_t)acc, mult[oc], shift[oc], out_offset, lo, hi);
                }
            }
        }
    }
}

arm_cmsis_nn_status rs_depthwise_conv_s8_scalar(RS_DEPTHWISE_CONV_ARGS)
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
            dw_ch1_scalar(&g, in, out);
        }
        else
        {
            dw_multi_scalar(&g, in, out);
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* DSP tier.                                                                                  */

#if RS_HAVE_DSP
/** Four accumulators, one per channel of a word. */
typedef struct
{
    int32_t c0, c1, c2, c3;
} dw_acc4;

/** One tap of four channels: SXTAB16 adds the offset to input bytes {0,2} / {1,3}, SMLABB/SMLATT. */
static inline void dw_tap_dsp(const int8_t *x, const int8_t *w, int32_t offset_x2, dw_acc4 *acc)
{
    const int32_t x_word = nn_read_s8x4(x);
    const int32_t w_word = nn_read_s8x4(w);
    const int32_t x_even = nn_sxtab16_even(offset_x2, x_word);
    const int32_t x_odd = nn_sxtab16_odd(offset_x2, x_word);
    const int32_t w_even = __sxtb16(w_word);
    const int32_t w_odd = nn_sxtb16_ror8(w_word);
    acc->c0 = __smlabb(x_even, w_even, acc->c0);
    acc->c2 = __smlatt(x_even, w_even, acc->c2);
    acc->c1 = __smlabb(x_odd, w_odd, acc->c1);
    acc->c3 = __smlatt(x_odd, w_odd, acc->c3);
}

/** requant(acc) + output offset, saturated to int8 (SSAT). */
static inline uint32_t dw_ssat8_dsp(int32_t acc, int32_t mult, int32_t shift, int32_t out_offset)
{
    return (uint32_t)__ssat(nn_add_wrap(nn_requantize_64(acc, mult, shift), out_offset), 8);
}

/**
 * `word` with bits [lsb, lsb + 8) replaced by the low byte of v: one BFI. Inline asm because GCC 12
 * turns the mask-and-or into EOR/AND/EOR.
 */
#define DW_INSERT_BYTE(word, v, lsb) __asm("bfi %0, %1, #" #lsb ", #8" : "+r"(word) : "r"(v))

/**
 * Requantizes n accumulators (n a multiple of 4) into n output bytes: four at a time packed into a
 * word, clamped bytewise (SSUB8 sets a GE flag per byte, SEL picks) and stored at once. A pass of
 * its own (noinline, so its registers are its own) after the MAC pass over a chunk of channels.
 */
static __attribute__((noinline)) void dw_requant_dsp(int8_t *out, const int32_t *acc, int32_t n,
                                                     const int32_t *mult, const int32_t *shift, int32_t out_offset,
                                                     int32_t lo_x4, int32_t hi_x4)
{
    for (int32_t c = 0; c < n; c += 4)
    {
        uint32_t word = dw_ssat8_dsp(acc[c], mult[c], shift[c], out_offset);
        DW_INSERT_BYTE(word, dw_ssat8_dsp(acc[c + 1], mult[c + 1], shift[c + 1], out_offset), 8);
        DW_INSERT_BYTE(word, dw_ssat8_dsp(acc[c + 2], mult[c + 2], shift[c + 2], out_offset), 16);
        DW_INSERT_BYTE(word, dw_ssat8_dsp(acc[c + 3], mult[c + 3], shift[c + 3], out_offset), 24);
        (void)__ssub8((int8x4_t)word, (int8x4_t)lo_x4); /* GE where word >= lo: keep word */
        word = __sel((uint8x4_t)word, (uint8x4_t)lo_x4);
        (void)__ssub8((int8x4_t)word, (int8x4_t)hi_x4); /* GE where word >= hi: take hi */
        nn_write_s8x4(out + c, (int32_t)__sel((uint8x4_t)hi_x4, (uint8x4_t)word));
    }
}

/**
 * A 3x3 window wholly inside the input (undilated columns): nine taps, straight-line. The filter
 * taps are ch apart throughout; the input's are ch apart within a row, then `x_next_row` on.
 */
static inline void dw_taps_3x3_dsp(const int8_t *x, const int8_t *w, int32_t ch, int32_t x_next_row,
                                   int32_t offset_x2, dw_acc4 *acc)
{
    dw_tap_dsp(x, w, offset_x2, acc);
    dw_tap_dsp(x + ch, w + ch, offset_x2, acc);
    dw_tap_dsp(x + 2 * ch, w + 2 * ch, offset_x2, acc);
    x += 2 * ch + x_next_row;
    w += 3 * ch;
    dw_tap_dsp(x, w, offset_x2, acc);
    dw_tap_dsp(x + ch, w + ch, offset_x2, acc);
    dw_tap_dsp(x + 2 * ch, w + 2 * ch, offset_x2, acc);
    x += 2 * ch + x_next_row;
    w += 3 * ch;
    dw_tap_dsp(x, w, offset_x2, acc);
    dw_tap_dsp(x + ch, w + ch, offset_x2, acc);
    dw_tap_dsp(x + 2 * ch, w + 2 * ch, offset_x2, acc);
}

/** ch_mult == 1, one image: four channels per word; whole undilated 3x3 windows unrolled. */
static void dw_ch1_dsp(const dw_layer *g, const int8_t *input, int8_t *restrict output)
{
    const int32_t ch = g->in_c;
    const int32_t x_row_step = g->dil_h * g->in_w * ch;
    const int32_t x_col_step = g->dil_w * ch;
    const int32_t w_row_step = g->k_w * ch;
    const int32_t offset_x2 = nn_pack_s16x2(g->input_offset);
    const int32_t out_offset = g->output_offset;
    const int32_t lo_x4 = (int32_t)((uint32_t)(uint8_t)g->act_min * 0x01010101U);
    const int32_t hi_x4 = (int32_t)((uint32_t)(uint8_t)g->act_max * 0x01010101U);
    const int32_t *const bias = g->bias, *const mult = g->mult, *const shift = g->shift;
    const int32_t ch_4 = ch & ~3;
    for (int32_t oy = 0; oy < g->out_h; oy++)
    {
        for (int32_t ox = 0; ox < g->out_w; ox++, output += ch)
        {
            const dw_window v = dw_window_at(g, input, oy, ox);
            const int full_3x3 = v.rows == 3 && v.cols == 3 && g->k_w == 3 && x_col_step == ch;
            int32_t acc_chunk[DW_CHUNK];
            for (int32_t c0 = 0; c0 < ch_4; c0 += DW_CHUNK)
            {
                const int32_t n = NN_MIN(DW_CHUNK, ch_4 - c0);
                for (int32_t j = 0; j < n; j += 4)
                {
                    const int32_t c = c0 + j;
                    dw_acc4 acc = {0, 0, 0, 0};
                    if (bias)
                    {
                        acc.c0 = bias[c];
                        acc.c1 = bias[c + 1];
                        acc.c2 = bias[c + 2];
                        acc.c3 = bias[c + 3];
                    }
                    if (full_3x3)
                    {
                        dw_taps_3x3_dsp(v.x + c, v.w + c, ch, x_row_step - 2 * ch, offset_x2, &acc);
                    }
                    else
                    {
                        const int8_t *x = v.x + c;
                        const int8_t *w = v.w + c;
                        for (int32_t r = 0; r < v.rows; r++, x += x_row_step, w += w_row_step)
                        {
                            /* Windows cut by the edge: rows of up to three taps unrolled. */
                            switch (v.cols)
                            {
                            case 3:
                                dw_tap_dsp(x + 2 * x_col_step, w + 2 * ch, offset_x2, &acc);
                                /* fall through */
                            case 2:
                                dw_tap_dsp(x + x_col_step, w + ch, offset_x2, &acc);
                                /* fall through */
                            case 1:
                                dw_tap_dsp(x, w, offset_x2, &acc);
                                break;
                            default:
                                for (int32_t i = 0; i < v.cols; i++)
                                {
                                    dw_tap_dsp(x + i * x_col_step, w + i * ch, offset_x2, &acc);
                                }
                            }
                        }
                    }
                    acc_chunk[j] = acc.c0;
                    acc_chunk[j + 1] = acc.c1;
                    acc_chunk[j + 2] = acc.c2;
                    acc_chunk[j + 3] = acc.c3;
                }
                dw_requant_dsp(output + c0, acc_chunk, n, mult + c0, shift + c0, out_offset, lo_x4, hi_x4);
            }
            for (int32_t c = ch_4; c < ch; c++)
            {
                int32_t acc = bias ? bias[c] : 0;
                const int8_t *x_row = v.x + c;
                const int8_t *w_row = v.w + c;
                for (int32_t r = 0; r < v.rows; r++, x_row += x_row_step, w_row += w_row_step)
                {
                    for (int32_t i = 0; i < v.cols; i++)
                    {
                        acc = __smlabb(x_row[i * x_col_step] + g->input_offset, w_row[i * ch], acc);
                    }
                }
                output[c] = (int8_t)dw_requant_clamp(acc, mult[c], shift[c], out_offset, g->act_min, g->act_max);
            }
        }
    }
}

arm_cmsis_nn_status rs_depthwise_conv_s8_dsp(RS_DEPTHWISE_CONV_ARGS)
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
            dw_ch1_dsp(&g, in, out);
        }
        else
        {
            /* Every multiplier of a channel shares its input: SIMD32 has nothing to pair here (CMSIS-NN's
             * generic kernel has no DSP path either), so the scalar loop it is. */
            dw_multi_scalar(&g, in, out);
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_DSP */

/* ------------------------------------------------------------------------------------------ */
/* MVE tier.                                                                                  */

#if RS_HAVE_MVE
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
#endif /* RS_HAVE_MVE */

/* ------------------------------------------------------------------------------------------ */
/* The ch_mult == 1 kernels: CMSIS-NN's argument checks, then the tier's channel-block core.   */

/** arm_depthwise_conv_3x3_s8's checks: C_IN == C_OUT, a 3x3 filter, padding.w <= 1. */
static arm_cmsis_nn_status dw_check_3x3(const cmsis_nn_dw_conv_params *p,
                                        const cmsis_nn_dims *input_dims,
                                        const cmsis_nn_dims *filter_dims,
                                        const cmsis_nn_dims *output_dims)
{
    if (input_dims->c != output_dims->c || p->padding.w > 1 || filter_dims->w != 3 || filter_dims->h != 3)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/** arm_depthwise_conv_s8_opt's checks: C_IN == C_OUT, and a buffer when the tier sizes one. */
static arm_cmsis_nn_status dw_check_opt(const cmsis_nn_context *ctx,
                                        const cmsis_nn_dims *input_dims,
                                        const cmsis_nn_dims *output_dims,
                                        int32_t buffer_size)
{
    if (input_dims->c != output_dims->c || ((ctx == NULL || ctx->buf == NULL) && buffer_size > 0))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/** What _3x3 and _opt compute: one image, no dilation (CMSIS-NN reads neither n nor dilation). */
static dw_layer dw_unpack_ch1(const cmsis_nn_dw_conv_params *p,
                              const cmsis_nn_per_channel_quant_params *quant_params,
                              const cmsis_nn_dims *input_dims,
                              const cmsis_nn_dims *filter_dims,
                              const int8_t *filter,
                              const int32_t *bias,
                              const cmsis_nn_dims *output_dims)
{
    dw_layer g = dw_unpack(p, quant_params, input_dims, filter_dims, filter, bias, output_dims);
    g.ch_mult = 1;
    g.dil_h = 1;
    g.dil_w = 1;
    return g;
}

typedef void (*dw_core)(const dw_layer *g, const int8_t *input, int8_t *output);

/** Runs a ch_mult == 1 core on one image when CMSIS-NN's checks passed. */
static inline arm_cmsis_nn_status dw_run_ch1(arm_cmsis_nn_status checked,
                                             dw_core core,
                                             const cmsis_nn_dw_conv_params *dw_conv_params,
                                             const cmsis_nn_per_channel_quant_params *quant_params,
                                             const cmsis_nn_dims *input_dims,
                                             const int8_t *input,
                                             const cmsis_nn_dims *filter_dims,
                                             const int8_t *filter,
                                             const int32_t *bias,
                                             const cmsis_nn_dims *output_dims,
                                             int8_t *output)
{
    if (checked != ARM_CMSIS_NN_SUCCESS)
    {
        return checked;
    }
    const dw_layer g = dw_unpack_ch1(dw_conv_params, quant_params, input_dims, filter_dims, filter, bias, output_dims);
    core(&g, input, output);
    return ARM_CMSIS_NN_SUCCESS;
}

#define DW_CH1_FORWARD dw_conv_params, quant_params, input_dims, input, filter_dims, filter, bias, output_dims, output

arm_cmsis_nn_status rs_depthwise_conv_3x3_s8_scalar(RS_DEPTHWISE_CONV_ARGS)
{
    (void)ctx;
    (void)bias_dims;
    return dw_run_ch1(dw_check_3x3(dw_conv_params, input_dims, filter_dims, output_dims), dw_ch1_scalar,
                      DW_CH1_FORWARD);
}

/* A scalar CMSIS-NN build runs arm_depthwise_conv_s8 here, batch and dilation included. */
arm_cmsis_nn_status rs_depthwise_conv_s8_opt_scalar(RS_DEPTHWISE_CONV_ARGS)
{
    const arm_cmsis_nn_status status = dw_check_opt(ctx, input_dims, output_dims, 0);
    if (status != ARM_CMSIS_NN_SUCCESS)
    {
        return status;
    }
    return rs_depthwise_conv_s8_scalar(ctx, dw_conv_params, quant_params, input_dims, input, filter_dims, filter,
                                       bias_dims, bias, output_dims, output);
}

#if RS_HAVE_DSP
arm_cmsis_nn_status rs_depthwise_conv_3x3_s8_dsp(RS_DEPTHWISE_CONV_ARGS)
{
    (void)ctx;
    (void)bias_dims;
    return dw_run_ch1(dw_check_3x3(dw_conv_params, input_dims, filter_dims, output_dims), dw_ch1_dsp,
                      DW_CH1_FORWARD);
}

arm_cmsis_nn_status rs_depthwise_conv_s8_opt_dsp(RS_DEPTHWISE_CONV_ARGS)
{
    (void)bias_dims;
    const int32_t buffer_size = arm_depthwise_conv_s8_opt_get_buffer_size_dsp(input_dims, filter_dims);
    return dw_run_ch1(dw_check_opt(ctx, input_dims, output_dims, buffer_size), dw_ch1_dsp, DW_CH1_FORWARD);
}
#endif /* RS_HAVE_DSP */

#if RS_HAVE_MVE
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

/* ------------------------------------------------------------------------------------------ */
/* The wrapper's routes (arm_depthwise_conv_wrapper_s8.c V.2.2.0, kernels_py                  */
/* select_depthwise_kernel): per tier, the routing a CMSIS-NN build of that tier compiles.    */

/** The fast group: ch_mult 1, one image, no dilation (kernels_py is_depthwise_conv_s8_opt). */
static inline int dw_is_fast_group(const cmsis_nn_dw_conv_params *p, const cmsis_nn_dims *input_dims)
{
    return p->ch_mult == 1 && input_dims->n == 1 && p->dilation.w == 1 && p->dilation.h == 1;
}

/** Scalar/DSP route to _3x3: a 3x3 filter and padding <= 1 (kernels_py is_depthwise_conv_3x3_s8). */
static inline int dw_is_3x3(const cmsis_nn_dw_conv_params *p, const cmsis_nn_dims *filter_dims)
{
    return filter_dims->w == 3 && filter_dims->h == 3 && p->padding.h <= 1 && p->padding.w <= 1;
}

#define DW_ARGS_FORWARD                                                                                            \
    ctx, dw_conv_params, quant_params, input_dims, input, filter_dims, filter, bias_dims, bias, output_dims, output

arm_cmsis_nn_status rs_depthwise_conv_wrapper_s8_scalar(RS_DEPTHWISE_CONV_ARGS)
{
    if (dw_is_fast_group(dw_conv_params, input_dims))
    {
        return dw_is_3x3(dw_conv_params, filter_dims) ? rs_depthwise_conv_3x3_s8_scalar(DW_ARGS_FORWARD)
                                                      : rs_depthwise_conv_s8_opt_scalar(DW_ARGS_FORWARD);
    }
    return rs_depthwise_conv_s8_scalar(DW_ARGS_FORWARD);
}

#if RS_HAVE_DSP
arm_cmsis_nn_status rs_depthwise_conv_wrapper_s8_dsp(RS_DEPTHWISE_CONV_ARGS)
{
    if (dw_is_fast_group(dw_conv_params, input_dims))
    {
        return dw_is_3x3(dw_conv_params, filter_dims) ? rs_depthwise_conv_3x3_s8_dsp(DW_ARGS_FORWARD)
                                                      : rs_depthwise_conv_s8_opt_dsp(DW_ARGS_FORWARD);
    }
    return rs_depthwise_conv_s8_dsp(DW_ARGS_FORWARD);
}
#endif /* RS_HAVE_DSP */

#if RS_HAVE_MVE
arm_cmsis_nn_status rs_depthwise_conv_wrapper_s8_mve(RS_DEPTHWISE_CONV_ARGS)
{
    if (dw_is_fast_group(dw_conv_params, input_dims))
    {
        return rs_depthwise_conv_s8_opt_mve(DW_ARGS_FORWARD);
    }
    return rs_depthwise_conv_s8_mve(DW_ARGS_FORWARD);
}
#endif /* RS_HAVE_MVE */

/* ------------------------------------------------------------------------------------------ */
/* Buffer sizes (arm_depthwise_conv_get_buffer_sizes_s8.c V.1.3.0; host-callable _dsp/_mve).   */

int32_t arm_depthwise_conv_s8_opt_get_buffer_size_dsp(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
    return input_dims->c * filter_dims->w * filter_dims->h * (int32_t)sizeof(int16_t);
}

int32_t arm_depthwise_conv_s8_opt_get_buffer_size_mve(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
    (void)input_dims;
    return 4 * DW_CH_IN_BLOCK_MVE * filter_dims->w * filter_dims->h * (int32_t)sizeof(int8_t);
}

int32_t arm_depthwise_conv_s8_opt_get_buffer_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
#if RS_HAVE_MVE
    return arm_depthwise_conv_s8_opt_get_buffer_size_mve(input_dims, filter_dims);
#elif RS_HAVE_DSP
    return arm_depthwise_conv_s8_opt_get_buffer_size_dsp(input_dims, filter_dims);
#else
    (void)input_dims;
    (void)filter_dims;
    return 0;
#endif
}

/** The sizers' fast group: CMSIS-NN tests C_IN == C_OUT here where the wrapper tests ch_mult == 1. */
static inline int dw_sizes_fast_group(const cmsis_nn_dw_conv_params *p,
                                      const cmsis_nn_dims *input_dims,
                                      const cmsis_nn_dims *output_dims)
{
    return input_dims->c == output_dims->c && input_dims->n == 1 && p->dilation.w == 1 && p->dilation.h == 1;
}

int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size_dsp(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                          const cmsis_nn_dims *input_dims,
                                                          const cmsis_nn_dims *filter_dims,
                                                          const cmsis_nn_dims *output_dims)
{
    if (!dw_sizes_fast_group(dw_conv_params, input_dims, output_dims) || dw_is_3x3(dw_conv_params, filter_dims))
    {
        return 0;
    }
    return arm_depthwise_conv_s8_opt_get_buffer_size_dsp(input_dims, filter_dims);
}

int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size_mve(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                          const cmsis_nn_dims *input_dims,
                                                          const cmsis_nn_dims *filter_dims,
                                                          const cmsis_nn_dims *output_dims)
{
    if (!dw_sizes_fast_group(dw_conv_params, input_dims, output_dims))
    {
        return 0;
    }
    return arm_depthwise_conv_s8_opt_get_buffer_size_mve(input_dims, filter_dims);
}

int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                      const cmsis_nn_dims *input_dims,
                                                      const cmsis_nn_dims *filter_dims,
                                                      const cmsis_nn_dims *output_dims)
{
#if RS_HAVE_MVE
    return arm_depthwise_conv_wrapper_s8_get_buffer_size_mve(dw_conv_params, input_dims, filter_dims, output_dims);
#elif RS_HAVE_DSP
    return arm_depthwise_conv_wrapper_s8_get_buffer_size_dsp(dw_conv_params, input_dims, filter_dims, output_dims);
#else
    (void)dw_conv_params;
    (void)input_dims;
    (void)filter_dims;
    (void)output_dims;
    return 0;
#endif
}

/* ------------------------------------------------------------------------------------------ */
/* Public API: thin dispatch to the richest tier this build has.                              */

#if RS_HAVE_MVE
    #define DW_TIER(stem) stem##_mve
#elif RS_HAVE_DSP
    #define DW_TIER(stem) stem##_dsp
#else
    #define DW_TIER(stem) stem##_scalar
#endif

arm_cmsis_nn_status arm_depthwise_conv_wrapper_s8(RS_DEPTHWISE_CONV_ARGS)
{
    return DW_TIER(rs_depthwise_conv_wrapper_s8)(DW_ARGS_FORWARD);
}

arm_cmsis_nn_status arm_depthwise_conv_s8(RS_DEPTHWISE_CONV_ARGS)
{
    return DW_TIER(rs_depthwise_conv_s8)(DW_ARGS_FORWARD);
}

arm_cmsis_nn_status arm_depthwise_conv_3x3_s8(RS_DEPTHWISE_CONV_ARGS)
{
    return DW_TIER(rs_depthwise_conv_3x3_s8)(DW_ARGS_FORWARD);
}

arm_cmsis_nn_status arm_depthwise_conv_s8_opt(RS_DEPTHWISE_CONV_ARGS)
{
    return DW_TIER(rs_depthwise_conv_s8_opt)(DW_ARGS_FORWARD);
}
