/*
 * refsim kernels_c: the DSP engines of the convolution family (Armv7E-M / Armv8-M DSP extension).
 *
 * rs_conv_engine_dsp, as CMSIS-NN's DSP path (arm_s8_to_s16_unordered_with_offset +
 * arm_nn_mat_mult_kernel_s8_s16): im2col into int16 holding (x + input_offset), 0 in the padding,
 * each group of four depth elements stored "unordered" as {x0, x2}, {x1, x3}: exactly the lanes
 * SXTB16 and SXTB16 ROR #8 give for the matching weight word, so the product needs no re-packing.
 * Two output pixels by two output channels per pass. Unlike CMSIS-NN, the two columns are
 * interleaved by blocks of four elements (8 int16: column 0's four, then column 1's), so one
 * pointer walks both and GCC 12 keeps the loop nearly spill-free: per block two LDR + four SXTB16
 * for the weights, four LDR for the columns, eight SMLAD; unrolled by two blocks, 40 instructions
 * per 32 MACs on a Cortex-M4 (dot_pair_blocks). Same bytes as CMSIS-NN's two columns:
 * 8 * ceil(depth / 4) int16 = 2 * align4(depth). im2col widens runs of input bytes (a whole
 * filter row when it lies inside an ungrouped input, else a tap) four at a time with SXTAB16
 * once they reach a block boundary, the ragged ends element by element.
 *
 * rs_conv_1x1_engine_dsp: 1x1 filters without padding read the input pixels in place, adding the
 * offset with SXTAB16 as they load (arm_nn_mat_mult_nt_t_s8's DSP path); no scratch.
 */
#include "conv_s8_internal.h"

#if RS_HAVE_DSP
    #include "support/nn_dsp.h"

/** Two int16 lanes from memory (LDR, which allows an unaligned scratch). */
static inline int32_t read_s16x2(const int16_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline void write_s16x2(int16_t *p, int32_t v) { memcpy(p, &v, sizeof(v)); }

/** Where element e of a block-of-four lies in its column's four int16: {x0, x2, x1, x3}. */
static const uint8_t unordered_lane[4] = {0, 2, 1, 3};

/** Index of depth element e of column col (0, 1) in the interleaved pair buffer. */
static inline int32_t pair_index(int32_t e, int32_t col) { return 8 * (e >> 2) + 4 * col + unordered_lane[e & 3]; }

/**
 * Depth elements [e, e + n) of column col: (src[i] + offset), or 0 when src is NULL (padding).
 * Elements up to the next block boundary go one by one, whole blocks four at a time (SXTAB16 on
 * a word read from src, aligned or not), the rest one by one.
 */
static void widen_run(int16_t *pair, int32_t col, int32_t e, const int8_t *src, int32_t n, int32_t offset)
{
    const int32_t end = e + n;
    for (; (e & 3) != 0 && e < end; e++)
    {
        pair[pair_index(e, col)] = (int16_t)(src != NULL ? *src++ + offset : 0);
    }
    int16_t *dst = pair + 2 * e + 4 * col; /* block e / 4 starts at int16 8 * (e / 4) */
    int16_t *const blocks_end = pair + 2 * (end & ~3) + 4 * col;
    if (src == NULL)
    {
        for (; dst < blocks_end; dst += 8)
        {
            write_s16x2(dst, 0);
            write_s16x2(dst + 2, 0);
        }
    }
    else
    {
        const int32_t offset_x2 = nn_pack_s16x2(offset);
        for (; dst < blocks_end; dst += 8, src += 4)
        {
            const int32_t x = nn_read_s8x4(src);
            write_s16x2(dst, nn_sxtab16_even(offset_x2, x));
            write_s16x2(dst + 2, nn_sxtab16_odd(offset_x2, x));
        }
    }
    for (e = NN_MAX(e, end & ~3); e < end; e++)
    {
        pair[pair_index(e, col)] = (int16_t)(src != NULL ? *src++ + offset : 0);
    }
}

/** One output pixel of group g into column col of the pair buffer (see the file comment). */
static void im2col_pair(const rs_conv_shape *s, const int8_t *in_b, int32_t oy, int32_t ox, int32_t g,
                        int32_t offset, int16_t *pair, int32_t col)
{
    const int32_t y0 = oy * s->stride_h - s->pad_h;
    const int32_t x0 = ox * s->stride_w - s->pad_w;
    const int32_t n = s->filter_c;
    const int32_t row_elements = s->k_w * n;
    const bool contiguous = rs_conv_row_contiguous(s, x0);
    int32_t e = 0;
    for (int32_t ky = 0; ky < s->k_h; ky++)
    {
        const int8_t *row = rs_conv_row(s, in_b, y0 + ky * s->dil_h, g);
        if (row == NULL || contiguous)
        {
            widen_run(pair, col, e, row != NULL ? row + x0 * s->in_c : NULL, row_elements, offset);
            e += row_elements;
            continue;
        }
        for (int32_t kx = 0; kx < s->k_w; kx++, e += n)
        {
            widen_run(pair, col, e, rs_conv_row_pixel(s, row, x0 + kx * s->dil_w), n, offset);
        }
    }
}

/** Four depth elements (block o / 4) of both columns against weight rows w_0 and w_0 + depth. */
    #define PAIR_BLOCK(o)                                                                                          \
        {                                                                                                          \
            const int32_t wa = nn_read_s8x4(w_0 + (o));                                                            \
            const int32_t wa_e = __sxtb16(wa), wa_o = nn_sxtb16_ror8(wa);                                          \
            const int32_t x0e = read_s16x2(x + 2 * (o)), x0o = read_s16x2(x + 2 * (o) + 2);                        \
            const int32_t x1e = read_s16x2(x + 2 * (o) + 4), x1o = read_s16x2(x + 2 * (o) + 6);                    \
            a00 = __smlad(wa_e, x0e, a00);                                                                         \
            a00 = __smlad(wa_o, x0o, a00);                                                                         \
            a01 = __smlad(wa_e, x1e, a01);                                                                         \
            a01 = __smlad(wa_o, x1o, a01);                                                                         \
            const int32_t wb = nn_read_s8x4(w_0 + (o) + depth);                                                    \
            const int32_t wb_e = __sxtb16(wb), wb_o = nn_sxtb16_ror8(wb);                                          \
            a10 = __smlad(wb_e, x0e, a10);                                                                         \
            a10 = __smlad(wb_o, x0o, a10);                                                                         \
            a11 = __smlad(wb_e, x1e, a11);                                                                         \
            a11 = __smlad(wb_o, x1o, a11);                                                                         \
        }

/**
 * The whole blocks of both columns against weight rows w_0 and w_0 + depth: acc = {row 0 x col 0,
 * row 0 x col 1, row 1 x col 0, row 1 x col 1}. A function of its own, unrolled by two blocks:
 * GCC 12 then keeps everything in registers, 40 instructions per 32 MACs on a Cortex-M4 (inlined
 * into the engine it spills, 47).
 */
__attribute__((noinline)) static void dot_pair_blocks(const int16_t *x, const int8_t *w_0, int32_t depth,
                                                      int32_t acc[4])
{
    const int8_t *const end = w_0 + (depth & ~7);
    int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;
    while (w_0 != end)
    {
        PAIR_BLOCK(0)
        PAIR_BLOCK(4)
        w_0 += 8;
        x += 16;
    }
    if (depth & 4)
    {
        PAIR_BLOCK(0)
    }
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}

/** rows channels x both columns of the pair buffer. */
static void mat_pair_2col(const rs_conv_quant *q, const int16_t *pair, const int8_t *w, int32_t rows, int32_t depth,
                          int8_t *out_0, int8_t *out_1)
{
    const int32_t depth_4 = depth & ~3;
    int32_t r = 0;
    for (; r + 2 <= rows; r += 2)
    {
        const int8_t *w_0 = w + r * depth;
        int32_t acc[4];
        dot_pair_blocks(pair, w_0, depth, acc);
        int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
        w_0 += depth_4;
        for (int32_t e = depth_4; e < depth; e++)
        {
            const int32_t x0 = pair[pair_index(e, 0)], x1 = pair[pair_index(e, 1)];
            const int32_t v0 = w_0[e - depth_4], v1 = w_0[e - depth_4 + depth];
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
        for (int32_t e = 0; e < depth_4; e += 4)
        {
            const int32_t wa = nn_read_s8x4(w_0 + e);
            const int32_t wa_e = __sxtb16(wa), wa_o = nn_sxtb16_ror8(wa);
            a00 = __smlad(wa_e, read_s16x2(pair + 2 * e), a00);
            a00 = __smlad(wa_o, read_s16x2(pair + 2 * e + 2), a00);
            a01 = __smlad(wa_e, read_s16x2(pair + 2 * e + 4), a01);
            a01 = __smlad(wa_o, read_s16x2(pair + 2 * e + 6), a01);
        }
        for (int32_t e = depth_4; e < depth; e++)
        {
            a00 += w_0[e] * pair[pair_index(e, 0)];
            a01 += w_0[e] * pair[pair_index(e, 1)];
        }
        rs_conv_out_1x2(a00, a01, q, r, out_0, out_1);
    }
}

/** rows channels x column 0 of the pair buffer (the odd pixel left at the end). */
static void mat_pair_1col(const rs_conv_quant *q, const int16_t *pair, const int8_t *w, int32_t rows, int32_t depth,
                          int8_t *out)
{
    const int32_t depth_4 = depth & ~3;
    for (int32_t r = 0; r < rows; r++)
    {
        const int8_t *w_r = w + r * depth;
        int32_t acc = 0;
        for (int32_t e = 0; e < depth_4; e += 4)
        {
            const int32_t wa = nn_read_s8x4(w_r + e);
            acc = __smlad(__sxtb16(wa), read_s16x2(pair + 2 * e), acc);
            acc = __smlad(nn_sxtb16_ror8(wa), read_s16x2(pair + 2 * e + 2), acc);
        }
        for (int32_t e = depth_4; e < depth; e++)
        {
            acc += w_r[e] * pair[pair_index(e, 0)];
        }
        out[r] = rs_conv_out(acc, q, r);
    }
}

arm_cmsis_nn_status rs_conv_engine_dsp(const rs_conv_shape *s, const rs_conv_quant *q, const int8_t *input,
                                       const int8_t *filter, int8_t *output, int16_t *buf)
{
    const int32_t depth = s->rhs_cols;
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
                    im2col_pair(s, in_b, oy, ox, g, q->input_offset, buf, p & 1);
                    if (p & 1)
                    {
                        int8_t *out = out_g + (p - 1) * s->out_c;
                        mat_pair_2col(&qg, buf, w_g, s->group_out_c, depth, out, out + s->out_c);
                    }
                }
            }
            if (p & 1)
            {
                mat_pair_1col(&qg, buf, w_g, s->group_out_c, depth, out_g + (p - 1) * s->out_c);
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* 1x1 filters, no padding: the columns are input pixels, read in place.                      */

/** rows channels x two int8 columns, SXTAB16 adding the input offset while unpacking. */
static void mat_s8_2col(const rs_conv_quant *q, const int8_t *col_0, const int8_t *col_1, const int8_t *w,
                        int32_t rows, int32_t depth, int8_t *out_0, int8_t *out_1)
{
    const int32_t offset = q->input_offset;
    const int32_t offset_x2 = nn_pack_s16x2(offset);
    const int32_t depth_4 = depth & ~3;
    int32_t r = 0;
    for (; r + 2 <= rows; r += 2)
    {
        const int8_t *w_0 = w + r * depth;
        const int8_t *w_1 = w_0 + depth;
        int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;
        int32_t k = 0;
        for (; k < depth_4; k += 4)
        {
            const int32_t x0 = nn_read_s8x4(col_0 + k), x1 = nn_read_s8x4(col_1 + k);
            const int32_t x0e = nn_sxtab16_even(offset_x2, x0), x0o = nn_sxtab16_odd(offset_x2, x0);
            const int32_t x1e = nn_sxtab16_even(offset_x2, x1), x1o = nn_sxtab16_odd(offset_x2, x1);
            const int32_t wa = nn_read_s8x4(w_0 + k);
            const int32_t wa_e = __sxtb16(wa), wa_o = nn_sxtb16_ror8(wa);
            a00 = __smlad(wa_e, x0e, a00);
            a00 = __smlad(wa_o, x0o, a00);
            a01 = __smlad(wa_e, x1e, a01);
            a01 = __smlad(wa_o, x1o, a01);
            const int32_t wb = nn_read_s8x4(w_1 + k);
            const int32_t wb_e = __sxtb16(wb), wb_o = nn_sxtb16_ror8(wb);
            a10 = __smlad(wb_e, x0e, a10);
            a10 = __smlad(wb_o, x0o, a10);
            a11 = __smlad(wb_e, x1e, a11);
            a11 = __smlad(wb_o, x1o, a11);
        }
        for (; k < depth; k++)
        {
            const int32_t x0 = col_0[k] + offset, x1 = col_1[k] + offset;
            a00 += w_0[k] * x0;
            a01 += w_0[k] * x1;
            a10 += w_1[k] * x0;
            a11 += w_1[k] * x1;
        }
        rs_conv_out_2x2(a00, a01, a10, a11, q, r, out_0, out_1);
    }
    if (r < rows)
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
    const int32_t offset_x2 = nn_pack_s16x2(q->input_offset);
    const int32_t depth_4 = col != NULL ? depth & ~3 : 0;
    const int32_t end = col != NULL ? depth : 0;
    for (int32_t r = 0; r < rows; r++)
    {
        const int8_t *w_r = w + r * depth;
        int32_t acc = 0;
        int32_t k = 0;
        for (; k < depth_4; k += 4)
        {
            const int32_t x = nn_read_s8x4(col + k), wa = nn_read_s8x4(w_r + k);
            acc = __smlad(__sxtb16(wa), nn_sxtab16_even(offset_x2, x), acc);
            acc = __smlad(nn_sxtb16_ror8(wa), nn_sxtab16_odd(offset_x2, x), acc);
        }
        for (; k < end; k++)
        {
            acc += w_r[k] * (col[k] + q->input_offset);
        }
        out[r] = rs_conv_out(acc, q, r);
    }
}

arm_cmsis_nn_status rs_conv_1x1_engine_dsp(const rs_conv_shape *s, const rs_conv_quant *q, const int8_t *input,
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
#endif /* RS_HAVE_DSP */
