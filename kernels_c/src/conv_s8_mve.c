/*
 * refsim kernels_c: the MVE (Helium) engine of the convolution family.
 *
 * As CMSIS-NN's arm_nn_mat_mult_nt_t_s8: int8 columns (padding taps hold -input_offset), four
 * output pixels against one output channel per pass, VMLADAVA over 16 bytes, and the offset
 * folded in through the channel's weight sum (VADDVA on the weight vector the pass loads anyway):
 *   sum_k (x_k + offset) w_k = sum_k x_k w_k + offset * sum_k w_k,
 * which holds in the padding because x = -offset there. Per 16 depth steps: one weight load,
 * four column loads, four VMLADAVA and one VADDVA for 64 MACs. The four results share the
 * channel's multiplier and shift, so they are requantized as one vector and scattered to the
 * four pixels with one VSTRB.
 *
 * Columns come from the input itself whenever a pixel's receptive field is one contiguous run
 * (1x1 filters, unpadded 1xN windows: rs_conv_direct_column), else from an im2col slot of the
 * scratch. slots says how many the caller's buffer holds: 4 for arm_convolve_s8's size (4 x
 * ceil16(KH * KW * C_IN) bytes), at least 1 for arm_convolve_1_x_n_s8's smaller MVE size (at
 * least one column), 0 for the 1x1 kernels, whose columns are all direct.
 *
 * Loops run unpredicated over whole vectors and predicate only the tail (see nn_mve.h's GCC 12
 * note in docs/kernels_c.md): no VPT block inside the main loop.
 */
#include "conv_s8_internal.h"

#if RS_HAVE_MVE
    #include "support/nn_mve.h"

/** One output pixel of group g as an int8 column; padding taps hold -offset. A filter row that lies
 * wholly inside an ungrouped input is one contiguous copy. */
static void im2col_s8(const rs_conv_shape *s, const int8_t *in_b, int32_t oy, int32_t ox, int32_t g, int32_t offset,
                      int8_t *col)
{
    const int32_t y0 = oy * s->stride_h - s->pad_h;
    const int32_t x0 = ox * s->stride_w - s->pad_w;
    const int32_t n = s->filter_c;
    const int32_t row_bytes = s->k_w * n;
    const int8_t pad = (int8_t)-offset;
    const bool contiguous = rs_conv_row_contiguous(s, x0);
    for (int32_t ky = 0; ky < s->k_h; ky++, col += row_bytes)
    {
        const int8_t *row = rs_conv_row(s, in_b, y0 + ky * s->dil_h, g);
        if (row == NULL)
        {
            nn_fill_s8_mve(col, pad, row_bytes);
        }
        else if (contiguous)
        {
            nn_copy_s8_mve(col, row + x0 * s->in_c, row_bytes);
        }
        else
        {
            for (int32_t kx = 0; kx < s->k_w; kx++)
            {
                const int8_t *px = rs_conv_row_pixel(s, row, x0 + kx * s->dil_w);
                if (px != NULL)
                {
                    nn_copy_s8_mve(col + kx * n, px, n);
                }
                else
                {
                    nn_fill_s8_mve(col + kx * n, pad, n);
                }
            }
        }
    }
}

/**
 * rows channels x n (1..4) columns; cols[n..3] must be readable (callers repeat cols[0]). The
 * outputs of column j go to out + j * out_stride.
 */
static void mat_cols(const rs_conv_quant *q, const int8_t *const cols[4], int32_t n, const int8_t *w, int32_t rows,
                     int32_t depth, int8_t *out, int32_t out_stride)
{
    const int32_t depth_16 = depth & ~15;
    const int32_t tail = depth - depth_16;
    const mve_pred16_t p_tail = vctp8q((uint32_t)tail);
    const mve_pred16_t p_out = vctp32q((uint32_t)n);
    const uint32x4_t out_offsets = vmulq_n_u32(vidupq_n_u32(0U, 1), (uint32_t)out_stride);
    /* Locals, so the output stores cannot make GCC reload them every row. */
    const int32_t input_offset = q->input_offset;
    const int32_t output_offset = q->output_offset;
    const int32x4_t act_min = vdupq_n_s32(q->act_min);
    const int32x4_t act_max = vdupq_n_s32(q->act_max);
    const int32_t *const bias = q->bias;
    const int32_t *const multiplier = q->multiplier;
    const int32_t *const shift = q->shift;
    for (int32_t r = 0; r < rows; r++)
    {
        const int8_t *const w_r = w + r * depth;
        const int8_t *p_w = w_r;
        const int8_t *c0 = cols[0], *c1 = cols[1], *c2 = cols[2], *c3 = cols[3];
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, w_sum = 0;
        for (int32_t k = 0; k < depth_16; k += 16)
        {
            const int8x16_t wv = vld1q_s8(p_w);
            w_sum = vaddvaq_s8(w_sum, wv);
            a0 = vmladavaq_s8(a0, vld1q_s8(c0), wv);
            a1 = vmladavaq_s8(a1, vld1q_s8(c1), wv);
            a2 = vmladavaq_s8(a2, vld1q_s8(c2), wv);
            a3 = vmladavaq_s8(a3, vld1q_s8(c3), wv);
            p_w += 16;
            c0 += 16;
            c1 += 16;
            c2 += 16;
            c3 += 16;
        }
        if (tail != 0)
        {
            const int32_t k = depth_16;
            const int8x16_t wv = vldrbq_z_s8(w_r + k, p_tail);
            w_sum = vaddvaq_s8(w_sum, wv);
            a0 = vmladavaq_s8(a0, vldrbq_z_s8(cols[0] + k, p_tail), wv);
            a1 = vmladavaq_s8(a1, vldrbq_z_s8(cols[1] + k, p_tail), wv);
            a2 = vmladavaq_s8(a2, vldrbq_z_s8(cols[2] + k, p_tail), wv);
            a3 = vmladavaq_s8(a3, vldrbq_z_s8(cols[3] + k, p_tail), wv);
        }
        /* offset * sum(w) + bias, wrapping like the int32 adds it stands for */
        const uint32_t bias_r = (uint32_t)(bias != NULL ? bias[r] : 0);
        const int32_t add = (int32_t)((uint32_t)w_sum * (uint32_t)input_offset + bias_r);
        int32x4_t acc = {a0, a1, a2, a3};
        acc = nn_requantize_mve(vaddq_n_s32(acc, add), multiplier[r], shift[r]);
        acc = vminq_s32(vmaxq_s32(vaddq_n_s32(acc, output_offset), act_min), act_max);
        vstrbq_scatter_offset_p_s32(out + r, out_offsets, acc, p_out);
    }
}

/** Runs the n pending columns (if any), the missing ones repeating the first. */
static void flush_cols(const rs_conv_quant *q, const int8_t *cols[4], int32_t n, const int8_t *w, int32_t rows,
                       int32_t depth, int8_t *out, int32_t out_stride)
{
    if (n == 0)
    {
        return;
    }
    for (int32_t j = n; j < 4; j++)
    {
        cols[j] = cols[0];
    }
    mat_cols(q, cols, n, w, rows, depth, out, out_stride);
}

arm_cmsis_nn_status rs_conv_engine_mve(const rs_conv_shape *s, const rs_conv_quant *q, const int8_t *input,
                                       const int8_t *filter, int8_t *output, int8_t *buf, int32_t slots)
{
    const int32_t depth = s->rhs_cols;
    const int32_t rows = s->group_out_c;
    const int32_t pixels = s->out_h * s->out_w;
    for (int32_t b = 0; b < s->batches; b++)
    {
        const int8_t *in_b = input + b * s->in_h * s->in_w * s->in_c;
        int8_t *out_b = output + b * pixels * s->out_c;
        for (int32_t g = 0; g < s->groups; g++)
        {
            const rs_conv_quant qg = rs_conv_group_quant(q, g * rows);
            const int8_t *w_g = filter + g * rows * depth;
            const int8_t *cols[4];
            int32_t n = 0;    /* pending columns: consecutive pixels from first_out on */
            int32_t used = 0; /* im2col slots they occupy */
            int8_t *first_out = NULL;
            for (int32_t oy = 0; oy < s->out_h; oy++)
            {
                for (int32_t ox = 0; ox < s->out_w; ox++)
                {
                    int8_t *out = out_b + (oy * s->out_w + ox) * s->out_c + g * rows;
                    const int8_t *col = rs_conv_direct_column(s, in_b, oy, ox, g);
                    if (col == NULL && slots == 0)
                    {
                        /* Only 1x1 filters run without scratch: a pixel with no direct column lies
                         * wholly outside the input and gets the bias alone. */
                        flush_cols(&qg, cols, n, w_g, rows, depth, first_out, s->out_c);
                        n = 0;
                        for (int32_t r = 0; r < rows; r++)
                        {
                            out[r] = rs_conv_out(0, &qg, r);
                        }
                        continue;
                    }
                    if (col == NULL)
                    {
                        if (used == slots)
                        {
                            flush_cols(&qg, cols, n, w_g, rows, depth, first_out, s->out_c);
                            n = 0;
                            used = 0;
                        }
                        int8_t *slot = buf + used * depth;
                        im2col_s8(s, in_b, oy, ox, g, q->input_offset, slot);
                        used++;
                        col = slot;
                    }
                    if (n == 0)
                    {
                        first_out = out;
                    }
                    cols[n++] = col;
                    if (n == 4)
                    {
                        mat_cols(&qg, cols, 4, w_g, rows, depth, first_out, s->out_c);
                        n = 0;
                        used = 0;
                    }
                }
            }
            flush_cols(&qg, cols, n, w_g, rows, depth, first_out, s->out_c);
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_MVE */
