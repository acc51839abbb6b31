/*
 * refsim kernels_c: the scalar engines of the convolution family (any Cortex-M).
 *
 * rs_conv_engine_scalar: im2col into two int16 columns holding (x + input_offset), 0 in the
 * padding (CMSIS-NN's arm_q7_to_q15_with_offset column, two at a time as in its non-DSP path),
 * then a 2 x 2 block product: two output channels by two output pixels share every load, so a
 * Cortex-M3 spends one LDRSB, one LDRSH and two MLA per two MACs. The scratch is the two columns
 * arm_convolve_s8_get_buffer_size promises: 2 * align4(KH * KW * C_IN) int16.
 *
 * rs_conv_1x1_engine_scalar: 1x1 filters without padding read the input pixels in place (no
 * scratch, as arm_nn_mat_mult_nt_t_s8 does), adding the offset as they load.
 */
#include "conv_s8_internal.h"

/** n elements of a column: (src[i] + offset), or 0 when src is NULL (padding). */
static void widen_run(int16_t *col, const int8_t *src, int32_t n, int32_t offset)
{
    int16_t *const end = col + n;
    if (src == NULL)
    {
        while (col != end)
        {
            *col++ = 0;
        }
        return;
    }
    while (col != end)
    {
        *col++ = (int16_t)(*src++ + offset);
    }
}

/** One output pixel of group g as an int16 column: (x + offset) inside the input, 0 in the padding.
 * A filter row that lies wholly inside an ungrouped input is one contiguous run. */
static void im2col_s16(const rs_conv_shape *s, const int8_t *in_b, int32_t oy, int32_t ox, int32_t g,
                       int32_t offset, int16_t *col)
{
    const int32_t y0 = oy * s->stride_h - s->pad_h;
    const int32_t x0 = ox * s->stride_w - s->pad_w;
    const int32_t n = s->filter_c;
    const int32_t row_elements = s->k_w * n;
    const bool contiguous = rs_conv_row_contiguous(s, x0);
    for (int32_t ky = 0; ky < s->k_h; ky++, col += row_elements)
    {
        const int8_t *row = rs_conv_row(s, in_b, y0 + ky * s->dil_h, g);
        if (row == NULL || contiguous)
        {
            widen_run(col, row != NULL ? row + x0 * s->in_c : NULL, row_elements, offset);
            continue;
        }
        for (int32_t kx = 0; kx < s->k_w; kx++)
        {
            widen_run(col + kx * n, rs_conv_row_pixel(s, row, x0 + kx * s->dil_w), n, offset);
        }
    }
}

/**
 * rows channels x two int16 columns: out_0[r], out_1[r] for r < rows. Written with
 * post-incremented pointers and one MAC per statement: GCC 12 then keeps the four accumulators
 * in registers (LDRSB/LDRSH with writeback, MLA), 10 instructions per 4 MACs on a Cortex-M3;
 * an unrolled or indexed form makes it use offsets and extra adds, or spill.
 */
static void mat_s16_2col(const rs_conv_quant *q, const int16_t *col_0, const int16_t *col_1, const int8_t *w,
                         int32_t rows, int32_t depth, int8_t *out_0, int8_t *out_1)
{
    int32_t r = 0;
    for (; r + 2 <= rows; r += 2)
    {
        const int8_t *w_0 = w + r * depth;
        const int8_t *w_1 = w_0 + depth;
        const int8_t *const end = w_1;
        const int16_t *x_0 = col_0;
        const int16_t *x_1 = col_1;
        int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;
        while (w_0 != end)
        {
            const int32_t x0 = *x_0++, x1 = *x_1++, v0 = *w_0++, v1 = *w_1++;
            a00 += v0 * x0;
            a01 += v0 * x1;
            a10 += v1 * x0;
            a11 += v1 * x1;
        }
        rs_conv_out_2x2(a00, a01, a10, a11, q, r, out_0, out_1);
    }
    if (r < rows)
    {
        const int8_t *w_0 = w + r * depth;
        int32_t a00 = 0, a01 = 0;
        for (int32_t k = 0; k < depth; k++)
        {
            a00 += w_0[k] * col_0[k];
            a01 += w_0[k] * col_1[k];
        }
        rs_conv_out_1x2(a00, a01, q, r, out_0, out_1);
    }
}

/** rows channels x one int16 column (the odd pixel left at the end). */
static void mat_s16_1col(const rs_conv_quant *q, const int16_t *col, const int8_t *w, int32_t rows, int32_t depth,
                         int8_t *out)
{
    for (int32_t r = 0; r < rows; r++)
    {
        const int8_t *w_r = w + r * depth;
        int32_t acc = 0;
        for (int32_t k = 0; k < depth; k++)
        {
            acc += w_r[k] * col[k];
        }
        out[r] = rs_conv_out(acc, q, r);
    }
}

arm_cmsis_nn_status rs_conv_engine_scalar(const rs_conv_shape *s, const rs_conv_quant *q, const int8_t *input,
                                          const int8_t *filter, int8_t *output, int16_t *buf)
{
    const int32_t depth = s->rhs_cols;
    int16_t *col_0 = buf;
    int16_t *col_1 = buf + ((depth + 3) & ~3);
    const int32_t pixels = s->out_h * s->out_w;
    for (int32_t b = 0; b < s->batches; b++)
    {
        const int8_t *in_b = input + b * s->in_h * s->in_w * s->in_c;
        int8_t *out_b = output + b * pixels * s->out_c;
        for (int32_t g = 0; g < s->groups; g++)
        {
            const rs_conv_quant qg = rs_conv_group_quant(q, g * s->group_out_c);
            const int8_t *w_g = filter + g * s->group_out_c * depth;
            int8_t *out_g = out_b + g * s->group_out_c;
            int32_t p = 0;
            for (int32_t oy = 0; oy < s->out_h; oy++)
            {
                for (int32_t ox = 0; ox < s->out_w; ox++, p++)
                {
                    if ((p & 1) == 0)
                    {
                        im2col_s16(s, in_b, oy, ox, g, q->input_offset, col_0);
                        continue;
                    }
                    im2col_s16(s, in_b, oy, ox, g, q->input_offset, col_1);
                    int8_t *out = out_g + (p - 1) * s->out_c;
                    mat_s16_2col(&qg, col_0, col_1, w_g, s->group_out_c, depth, out, out + s->out_c);
                }
            }
            if (p & 1)
            {
                mat_s16_1col(&qg, col_0, w_g, s->group_out_c, depth, out_g + (p - 1) * s->out_c);
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* 1x1 filters, no padding: the columns are input pixels, read in place.                      */

/** rows channels x two int8 columns, adding the input offset as they load (same loop form). */
static void mat_s8_2col(const rs_conv_quant *q, const int8_t *col_0, const int8_t *col_1, const int8_t *w,
                        int32_t rows, int32_t depth, int8_t *out_0, int8_t *out_1)
{
    const int32_t offset = q->input_offset;
    int32_t r = 0;
    for (; r + 2 <= rows; r += 2)
    {
        const int8_t *w_0 = w + r * depth;
        const int8_t *w_1 = w_0 + depth;
        const int8_t *const end = w_1;
        const int8_t *x_0 = col_0;
        const int8_t *x_1 = col_1;
        int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;
        while (w_0 != end)
        {
            const int32_t x0 = *x_0++ + offset, x1 = *x_1++ + offset, v0 = *w_0++, v1 = *w_1++;
            a00 += v0 * x0;
            a01 += v0 * x1;
            a10 += v1 * x0;
            a11 += v1 * x1;
        }
        rs_conv_out_2x2(a00, a01, a10, a11, q, r, out_0, out_1);
    }
    for (; r < rows; r++)
    {
        const int8_t *w_0 = w + r * depth;
        int32_t a00 = 0, a01 = 0;
        for (int32_t k = 0; k < depth; k++)
        {
            a00 += w_0[k] * (col_0[k] + offset);
            a01 += w_0[k] * (col_1[k] + offset);
        }
        rs_conv_out_1x2(a00, a01, q, r, out_0, out_1);
    }
}

/** rows channels x one int8 column; col NULL is a pixel outside the input (bias only). */
static void mat_s8_1col(const rs_conv_quant *q, const int8_t *col, const int8_t *w, int32_t rows, int32_t depth,
                        int8_t *out)
{
    for (int32_t r = 0; r < rows; r++)
    {
        const int8_t *w_r = w + r * depth;
        int32_t acc = 0;
        for (int32_t k = 0; col != NULL && k < depth; k++)
        {
            acc += w_r[k] * (col[k] + q->input_offset);
        }
        out[r] = rs_conv_out(acc, q, r);
    }
}

arm_cmsis_nn_status rs_conv_1x1_engine_scalar(const rs_conv_shape *s, const rs_conv_quant *q, const int8_t *input,
                                              const int8_t *filter, int8_t *output)
{
    const int32_t depth = s->filter_c;
    const int32_t pixels = s->out_h * s->out_w;
    for (int32_t b = 0; b < s->batches; b++)
    {
        const int8_t *in_b = input + b * s->in_h * s->in_w * s->in_c;
        int8_t *out_b = output + b * pixels * s->out_c;
        for (int32_t g = 0; g < s->groups; g++)
        {
            const rs_conv_quant qg = rs_conv_group_quant(q, g * s->group_out_c);
            const int8_t *w_g = filter + g * s->group_out_c * depth;
            int8_t *out_g = out_b + g * s->group_out_c;
            const int8_t *pending = NULL;
            int8_t *pending_out = NULL;
            for (int32_t oy = 0; oy < s->out_h; oy++)
            {
                for (int32_t ox = 0; ox < s->out_w; ox++)
                {
                    const int8_t *col = rs_conv_tap(s, in_b, oy * s->stride_h, ox * s->stride_w, g);
                    int8_t *out = out_g + (oy * s->out_w + ox) * s->out_c;
                    if (col == NULL)
                    {
                        mat_s8_1col(&qg, NULL, w_g, s->group_out_c, depth, out);
                    }
                    else if (pending == NULL)
                    {
                        pending = col;
                        pending_out = out;
                    }
                    else
                    {
                        mat_s8_2col(&qg, pending, col, w_g, s->group_out_c, depth, pending_out, out);
                        pending = NULL;
                    }
                }
            }
            if (pending != NULL)
            {
                mat_s8_1col(&qg, pending, w_g, s->group_out_c, depth, pending_out);
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
