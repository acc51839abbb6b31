/*
 * refsim kernels_c: the scalar tier of the s8 depthwise kernels (see src/depthwise_s8.c): MLA on
 * four channels per pass, accumulators requantized in a pass of their own.
 */
#include "depthwise_s8_internal.h"

/** One tap of four channels: (x + input_offset) * w per channel, MLA. */
static inline void dw_tap_scalar(const int8_t *x, const int8_t *w, int32_t offset, uint32_t acc[4])
{
    acc[0] += (uint32_t)((x[0] + offset) * w[0]);
    acc[1] += (uint32_t)((x[1] + offset) * w[1]);
    acc[2] += (uint32_t)((x[2] + offset) * w[2]);
    acc[3] += (uint32_t)((x[3] + offset) * w[3]);
}

/**
 * A 3x3 window wholly inside the input (undilated columns): nine taps, straight-line. The filter
 * taps are ch apart throughout; the input's are ch apart within a row, then `x_next_row` on.
 */
static inline void dw_taps_3x3_scalar(const int8_t *x, const int8_t *w, int32_t ch, int32_t x_next_row,
                                      int32_t offset, uint32_t acc[4])
{
    dw_tap_scalar(x, w, offset, acc);
    dw_tap_scalar(x + ch, w + ch, offset, acc);
    dw_tap_scalar(x + 2 * ch, w + 2 * ch, offset, acc);
    x += 2 * ch + x_next_row;
    w += 3 * ch;
    dw_tap_scalar(x, w, offset, acc);
    dw_tap_scalar(x + ch, w + ch, offset, acc);
    dw_tap_scalar(x + 2 * ch, w + 2 * ch, offset, acc);
    x += 2 * ch + x_next_row;
    w += 3 * ch;
    dw_tap_scalar(x, w, offset, acc);
    dw_tap_scalar(x + ch, w + ch, offset, acc);
    dw_tap_scalar(x + 2 * ch, w + 2 * ch, offset, acc);
}

/** Requantizes n accumulators into n output bytes; a pass of its own (noinline: its own registers). */
static __attribute__((noinline)) void dw_requant_scalar(int8_t *out, const uint32_t *acc, int32_t n,
                                                        const int32_t *mult, const int32_t *shift,
                                                        int32_t out_offset, int32_t lo, int32_t hi)
{
    for (int32_t c = 0; c < n; c++)
    {
        out[c] = (int8_t)dw_requant_clamp((int32_t)acc[c], mult[c], shift[c], out_offset, lo, hi);
    }
}

/**
 * ch_mult == 1, one image: four channels per pass (the weights of a tap are 4 adjacent bytes); a
 * pixel's accumulators go to the stack a chunk at a time and are requantized in a pass of their own.
 */
static void dw_ch1_scalar(const dw_layer *g, const int8_t *input, int8_t *restrict output)
{
    const int32_t ch = g->in_c;
    const int32_t ch_4 = ch & ~3;
    const int32_t x_row_step = g->dil_h * g->in_w * ch;
    const int32_t x_col_step = g->dil_w * ch;
    const int32_t w_row_step = g->k_w * ch;
    const int32_t offset = g->input_offset;
    const int32_t *const bias = g->bias;
    uint32_t acc_chunk[DW_CHUNK];
    for (int32_t oy = 0; oy < g->out_h; oy++)
    {
        for (int32_t ox = 0; ox < g->out_w; ox++, output += ch)
        {
            const dw_window v = dw_window_at(g, input, oy, ox);
            const int full_3x3 = v.rows == 3 && v.cols == 3 && g->k_w == 3 && x_col_step == ch;
            for (int32_t c0 = 0; c0 < ch; c0 += DW_CHUNK)
            {
                const int32_t n = NN_MIN(DW_CHUNK, ch - c0);
                for (int32_t j = 0; j < n; j++)
                {
                    acc_chunk[j] = bias ? (uint32_t)bias[c0 + j] : 0U;
                }
                const int32_t n_4 = NN_MIN(n, ch_4 - c0);
                for (int32_t j = 0; j < n_4; j += 4)
                {
                    uint32_t acc[4] = {acc_chunk[j], acc_chunk[j + 1], acc_chunk[j + 2], acc_chunk[j + 3]};
                    const int8_t *x = v.x + c0 + j;
                    const int8_t *w = v.w + c0 + j;
                    if (full_3x3)
                    {
                        dw_taps_3x3_scalar(x, w, ch, x_row_step - 2 * ch, offset, acc);
                    }
                    for (int32_t r = 0; r < v.rows && !full_3x3; r++, x += x_row_step, w += w_row_step)
                    {
                        switch (v.cols)
                        {
                        case 3:
                            dw_tap_scalar(x + 2 * x_col_step, w + 2 * ch, offset, acc);
                            /* fall through */
                        case 2:
                            dw_tap_scalar(x + x_col_step, w + ch, offset, acc);
                            /* fall through */
                        case 1:
                            dw_tap_scalar(x, w, offset, acc);
                            break;
                        default:
                            for (int32_t i = 0; i < v.cols; i++)
                            {
                                dw_tap_scalar(x + i * x_col_step, w + i * ch, offset, acc);
                            }
                        }
                    }
                    acc_chunk[j] = acc[0];
                    acc_chunk[j + 1] = acc[1];
                    acc_chunk[j + 2] = acc[2];
                    acc_chunk[j + 3] = acc[3];
                }
                for (int32_t j = NN_MAX(n_4, 0); j < n; j++)
                {
                    const int8_t *x = v.x + c0 + j;
                    const int8_t *w = v.w + c0 + j;
                    for (int32_t r = 0; r < v.rows; r++, x += x_row_step, w += w_row_step)
                    {
                        for (int32_t i = 0; i < v.cols; i++)
                        {
                            acc_chunk[j] += (uint32_t)((x[i * x_col_step] + offset) * w[i * ch]);
                        }
                    }
                }
                dw_requant_scalar(output + c0, acc_chunk, n, g->mult + c0, g->shift + c0, g->output_offset,
                                  g->act_min, g->act_max);
            }
        }
    }
}

/**
 * ch_mult > 1, one image: output channels in chunks on the stack; within a chunk, each input
 * channel's multipliers four per pass share each offset input; then the requantize pass.
 */
static void dw_multi_scalar(const dw_layer *g, const int8_t *input, int8_t *restrict output)
{
    const int32_t out_ch = g->out_c;
    const int32_t ch_mult = g->ch_mult;
    const int32_t x_row_step = g->dil_h * g->in_w * g->in_c;
    const int32_t x_col_step = g->dil_w * g->in_c;
    const int32_t w_row_step = g->k_w * out_ch;
    const int32_t offset = g->input_offset;
    const int32_t *const bias = g->bias;
    uint32_t acc_chunk[DW_CHUNK];
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
                        uint32_t acc[4] = {0, 0, 0, 0};
                        if (bias)
                        {
                            acc[0] = (uint32_t)bias[oc];
                            acc[1] = (uint32_t)bias[oc + 1];
                            acc[2] = (uint32_t)bias[oc + 2];
                            acc[3] = (uint32_t)bias[oc + 3];
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
                            acc_chunk[oc - c0 + j] = acc[j];
                        }
                    }
                    for (; oc < run_end; oc++)
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
                        acc_chunk[oc - c0] = acc;
                    }
                }
                dw_requant_scalar(output + c0, acc_chunk, c_end - c0, g->mult + c0, g->shift + c0, g->output_offset,
                                  g->act_min, g->act_max);
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

