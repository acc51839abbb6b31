/*
 * refsim kernels_c: the DSP tier of the s8 depthwise kernels (see src/depthwise_s8.c): SXTAB16 /
 * SXTB16 / SMLABB / SMLATT on four channels per word, a packed requantize pass.
 */
#include "depthwise_s8_internal.h"

#if RS_HAVE_DSP
    #include "support/nn_dsp.h"

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
        const uint32_t v0 = dw_ssat8_dsp(acc[c], mult[c], shift[c], out_offset);
        const uint32_t v1 = dw_ssat8_dsp(acc[c + 1], mult[c + 1], shift[c + 1], out_offset);
        const uint32_t v2 = dw_ssat8_dsp(acc[c + 2], mult[c + 2], shift[c + 2], out_offset);
        const uint32_t v3 = dw_ssat8_dsp(acc[c + 3], mult[c + 3], shift[c + 3], out_offset);
        nn_write_s8x4(out + c, nn_pack_clamp_s8x4(v0, v1, v2, v3, lo_x4, hi_x4));
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
    const int32_t lo_x4 = nn_bytes_x4(g->act_min);
    const int32_t hi_x4 = nn_bytes_x4(g->act_max);
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

/**
 * ch_mult > 1, one image: output channels in chunks on the stack; within a chunk, each input
 * channel's multipliers four per word share each offset input (SMLABB/SMLABT against the
 * SXTB16-unpacked filter: x sits in the bottom halfword); then the packed requantize pass.
 */
static void dw_multi_dsp(const dw_layer *g, const int8_t *input, int8_t *restrict output)
{
    const int32_t out_ch = g->out_c;
    const int32_t ch_mult = g->ch_mult;
    const int32_t x_row_step = g->dil_h * g->in_w * g->in_c;
    const int32_t x_col_step = g->dil_w * g->in_c;
    const int32_t w_row_step = g->k_w * out_ch;
    const int32_t offset = g->input_offset;
    const int32_t lo_x4 = nn_bytes_x4(g->act_min);
    const int32_t hi_x4 = nn_bytes_x4(g->act_max);
    const int32_t *const bias = g->bias;
    int32_t acc_chunk[DW_CHUNK];
    for (int32_t oy = 0; oy < g->out_h; oy++)
    {
        for (int32_t ox = 0; ox < g->out_w; ox++, output += out_ch)
        {
            const dw_window v = dw_window_at(g, input, oy, ox);
            for (int32_t c0 = 0; c0 < out_ch; c0 += DW_CHUNK)
            {
                const int32_t c_end = NN_MIN(c0 + DW_CHUNK, out_ch);
                for (int32_t oc = c0; oc < c_end;)
                {
                    const int32_t ic = oc / ch_mult;
                    const int32_t run_end = NN_MIN((ic + 1) * ch_mult, c_end); /* ic's outputs in the chunk */
                    for (; oc + 4 <= run_end; oc += 4)
                    {
                        dw_acc4 acc = {0, 0, 0, 0};
                        if (bias)
                        {
                            acc.c0 = bias[oc];
                            acc.c1 = bias[oc + 1];
                            acc.c2 = bias[oc + 2];
                            acc.c3 = bias[oc + 3];
                        }
                        const int8_t *x_row = v.x + ic;
                        const int8_t *w_row = v.w + oc;
                        for (int32_t r = 0; r < v.rows; r++, x_row += x_row_step, w_row += w_row_step)
                        {
                            const int8_t *w = w_row;
                            for (int32_t i = 0; i < v.cols; i++, w += out_ch)
                            {
                                const int32_t x = x_row[i * x_col_step] + offset;
                                const int32_t w_word = nn_read_s8x4(w);
                                const int32_t w_even = __sxtb16(w_word);
                                const int32_t w_odd = nn_sxtb16_ror8(w_word);
                                acc.c0 = __smlabb(x, w_even, acc.c0);
                                acc.c2 = __smlabt(x, w_even, acc.c2);
                                acc.c1 = __smlabb(x, w_odd, acc.c1);
                                acc.c3 = __smlabt(x, w_odd, acc.c3);
                            }
                        }
                        acc_chunk[oc - c0] = acc.c0;
                        acc_chunk[oc - c0 + 1] = acc.c1;
                        acc_chunk[oc - c0 + 2] = acc.c2;
                        acc_chunk[oc - c0 + 3] = acc.c3;
                    }
                    for (; oc < run_end; oc++)
                    {
                        int32_t acc = bias ? bias[oc] : 0;
                        const int8_t *x_row = v.x + ic;
                        const int8_t *w_row = v.w + oc;
                        for (int32_t r = 0; r < v.rows; r++, x_row += x_row_step, w_row += w_row_step)
                        {
                            for (int32_t i = 0; i < v.cols; i++)
                            {
                                acc = __smlabb(x_row[i * x_col_step] + offset, w_row[i * out_ch], acc);
                            }
                        }
                        acc_chunk[oc - c0] = acc;
                    }
                }
                const int32_t n_4 = (c_end - c0) & ~3;
                dw_requant_dsp(output + c0, acc_chunk, n_4, g->mult + c0, g->shift + c0, g->output_offset, lo_x4,
                               hi_x4);
                for (int32_t oc = c0 + n_4; oc < c_end; oc++)
                {
                    output[oc] = (int8_t)dw_requant_clamp(acc_chunk[oc - c0], g->mult[oc], g->shift[oc],
                                                          g->output_offset, g->act_min, g->act_max);
                }
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
            dw_multi_dsp(&g, in, out);
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}


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
