/*
 * refsim kernels_c: arm_transpose_conv_s8, arm_transpose_conv_wrapper_s8 and their buffer sizes
 * (CMSIS-NN v7 API: arm_transpose_conv_s8.c V.2.0.x, arm_transpose_conv_wrapper_s8.c V.1.0.0,
 * arm_transpose_conv_get_buffer_sizes_s8.c).
 *
 * Semantics (kernels_py.conv_transpose.transpose_conv_s8, TFLM reference TransposeConv): every
 * input pixel scatters (x + input_offset) * w into the outputs at in * stride - padding + k, bias
 * is added and each output requantized once. CMSIS-NN scatters into an int32 rolling row buffer; here each
 * output gathers instead: output row oy takes filter row ky exactly when oy + pad - ky is a
 * multiple of the stride, reading input row (oy + pad - ky) / stride, so an output is
 *   bias + sum over its valid taps of sum_c (x[iy][ix][c] + input_offset) * w[o][ky][kx][c],
 * a run of contiguous C_IN-long dot products with no scratch at all (so it fits any buffer the
 * size functions promise, including arm_transpose_conv_s8_get_buffer_size's MAX(filter w,
 * stride.h) width, which is narrower than CMSIS-NN's own MAX(filter w, stride.w) row buffer when
 * stride.w is the larger).
 *
 * The per-tier part is only the dot product of one input pixel against two output channels'
 * taps (scalar MLA, DSP SXTAB16 + SMLAD, MVE VMLADAVA with the offset folded through VADDVA of
 * the weights); one always-inlined loop nest is instantiated per tier with its dot function.
 *
 * The wrapper routes like kernels_py.conv_transpose.select_transpose_conv_kernel: strides <= 2
 * and more than 16 input channels run arm_convolve_s8 on the zero-upscaled input with the filter
 * reversed in reverse_conv_ctx (conv padding kernel - 1 - padding); anything else runs the kernel
 * above.
 *
 * ARM_CMSIS_NN_ARG_ERROR: the wrapper without ctx->buf (or, on the reverse route, without
 * reverse_conv_ctx->buf), as CMSIS-NN; and, where kernels_py rejects what CMSIS-NN computes
 * wrongly or not at all: dilation other than 1, padding above kernel - 1, outputs past
 * (in - 1) * stride + MAX(kernel, stride) - padding, filter depth != C_IN, input_offset outside
 * [-127, 128], non-positive extents or strides, negative padding or padding offsets.
 */
#include "conv_s8_internal.h"

#if RS_HAVE_DSP
    #include "support/nn_dsp.h"
#endif
#if RS_HAVE_MVE
    #include "support/nn_mve.h"
#endif

/** REVERSE_TCOL_EFFICIENT_THRESHOLD: the wrapper's reverse-conv route needs more input channels. */
#define RS_REVERSE_TCOL_EFFICIENT_THRESHOLD 16

typedef struct
{
    int32_t batches, in_h, in_w, in_c;
    int32_t k_h, k_w;
    int32_t out_h, out_w, out_c;
    int32_t stride_h, stride_w, pad_h, pad_w;
} tc_shape;

static bool is_reverse_conv(const cmsis_nn_transpose_conv_params *p, const cmsis_nn_dims *input_dims)
{
    return p->stride.w <= 2 && p->stride.h <= 2 && input_dims->c > RS_REVERSE_TCOL_EFFICIENT_THRESHOLD;
}

static arm_cmsis_nn_status tc_validate(const cmsis_nn_transpose_conv_params *p, const cmsis_nn_dims *i,
                                       const cmsis_nn_dims *f, const cmsis_nn_dims *o, tc_shape *s)
{
    if (i->n < 1 || i->h < 1 || i->w < 1 || i->c < 1 || f->h < 1 || f->w < 1 || f->c != i->c || o->h < 1 ||
        o->w < 1 || o->c < 1)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    if (p->stride.h < 1 || p->stride.w < 1 || p->dilation.h != 1 || p->dilation.w != 1 || p->padding.h < 0 ||
        p->padding.w < 0 || p->padding_offsets.h < 0 || p->padding_offsets.w < 0 || p->input_offset < -127 ||
        p->input_offset > 128)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    if (p->padding.h > f->h - 1 || p->padding.w > f->w - 1 ||
        o->h > (i->h - 1) * p->stride.h + NN_MAX(f->h, p->stride.h) - p->padding.h ||
        o->w > (i->w - 1) * p->stride.w + NN_MAX(f->w, p->stride.w) - p->padding.w)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const tc_shape shape = {i->n,   i->h,   i->w,   i->c,        f->h,        f->w,        o->h,
                            o->w,   o->c,   p->stride.h, p->stride.w, p->padding.h, p->padding.w};
    *s = shape;
    return ARM_CMSIS_NN_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* Dot products: acc_r += sum_c (x[c] + offset) * w_r[c] for two channels (or one).            */

typedef void (*tc_dot2_fn)(const int8_t *x, const int8_t *w_0, const int8_t *w_1, int32_t n, int32_t offset,
                           int32_t *acc_0, int32_t *acc_1);
typedef int32_t (*tc_dot1_fn)(const int8_t *x, const int8_t *w, int32_t n, int32_t offset);

static inline void tc_dot2_scalar(const int8_t *x, const int8_t *w_0, const int8_t *w_1, int32_t n, int32_t offset,
                                  int32_t *acc_0, int32_t *acc_1)
{
    int32_t a0 = *acc_0, a1 = *acc_1;
    for (int32_t c = 0; c < n; c++)
    {
        const int32_t v = x[c] + offset;
        a0 += v * w_0[c];
        a1 += v * w_1[c];
    }
    *acc_0 = a0;
    *acc_1 = a1;
}

static inline int32_t tc_dot1_scalar(const int8_t *x, const int8_t *w, int32_t n, int32_t offset)
{
    int32_t acc = 0;
    for (int32_t c = 0; c < n; c++)
    {
        acc += (x[c] + offset) * w[c];
    }
    return acc;
}

#if RS_HAVE_DSP
static inline void tc_dot2_dsp(const int8_t *x, const int8_t *w_0, const int8_t *w_1, int32_t n, int32_t offset,
                               int32_t *acc_0, int32_t *acc_1)
{
    const int32_t offset_x2 = nn_pack_s16x2(offset);
    int32_t a0 = *acc_0, a1 = *acc_1;
    int32_t c = 0;
    for (; c + 4 <= n; c += 4)
    {
        const int32_t xw = nn_read_s8x4(x + c);
        const int32_t x_e = nn_sxtab16_even(offset_x2, xw), x_o = nn_sxtab16_odd(offset_x2, xw);
        const int32_t wa = nn_read_s8x4(w_0 + c);
        a0 = __smlad(__sxtb16(wa), x_e, a0);
        a0 = __smlad(nn_sxtb16_ror8(wa), x_o, a0);
        const int32_t wb = nn_read_s8x4(w_1 + c);
        a1 = __smlad(__sxtb16(wb), x_e, a1);
        a1 = __smlad(nn_sxtb16_ror8(wb), x_o, a1);
    }
    for (; c < n; c++)
    {
        const int32_t v = x[c] + offset;
        a0 += v * w_0[c];
        a1 += v * w_1[c];
    }
    *acc_0 = a0;
    *acc_1 = a1;
}

static inline int32_t tc_dot1_dsp(const int8_t *x, const int8_t *w, int32_t n, int32_t offset)
{
    const int32_t offset_x2 = nn_pack_s16x2(offset);
    int32_t acc = 0;
    int32_t c = 0;
    for (; c + 4 <= n; c += 4)
    {
        const int32_t xw = nn_read_s8x4(x + c), wa = nn_read_s8x4(w + c);
        acc = __smlad(__sxtb16(wa), nn_sxtab16_even(offset_x2, xw), acc);
        acc = __smlad(nn_sxtb16_ror8(wa), nn_sxtab16_odd(offset_x2, xw), acc);
    }
    for (; c < n; c++)
    {
        acc += (x[c] + offset) * w[c];
    }
    return acc;
}
#endif /* RS_HAVE_DSP */

#if RS_HAVE_MVE
/* Full 16-byte steps unpredicated, one VCTP-predicated tail (zeroed lanes add nothing). */
static inline void tc_dot2_mve(const int8_t *x, const int8_t *w_0, const int8_t *w_1, int32_t n, int32_t offset,
                               int32_t *acc_0, int32_t *acc_1)
{
    int32_t a0 = 0, a1 = 0, s0 = 0, s1 = 0;
    int32_t c = 0;
    for (; c + 16 <= n; c += 16)
    {
        const int8x16_t xv = vld1q_s8(x + c);
        const int8x16_t v0 = vld1q_s8(w_0 + c), v1 = vld1q_s8(w_1 + c);
        a0 = vmladavaq_s8(a0, xv, v0);
        s0 = vaddvaq_s8(s0, v0);
        a1 = vmladavaq_s8(a1, xv, v1);
        s1 = vaddvaq_s8(s1, v1);
    }
    if (c < n)
    {
        const mve_pred16_t p = vctp8q((uint32_t)(n - c));
        const int8x16_t xv = vldrbq_z_s8(x + c, p);
        const int8x16_t v0 = vldrbq_z_s8(w_0 + c, p), v1 = vldrbq_z_s8(w_1 + c, p);
        a0 = vmladavaq_s8(a0, xv, v0);
        s0 = vaddvaq_s8(s0, v0);
        a1 = vmladavaq_s8(a1, xv, v1);
        s1 = vaddvaq_s8(s1, v1);
    }
    *acc_0 += a0 + s0 * offset;
    *acc_1 += a1 + s1 * offset;
}

static inline int32_t tc_dot1_mve(const int8_t *x, const int8_t *w, int32_t n, int32_t offset)
{
    int32_t acc = 0, sum = 0;
    int32_t c = 0;
    for (; c + 16 <= n; c += 16)
    {
        const int8x16_t v = vld1q_s8(w + c);
        acc = vmladavaq_s8(acc, vld1q_s8(x + c), v);
        sum = vaddvaq_s8(sum, v);
    }
    if (c < n)
    {
        const mve_pred16_t p = vctp8q((uint32_t)(n - c));
        const int8x16_t v = vldrbq_z_s8(w + c, p);
        acc = vmladavaq_s8(acc, vldrbq_z_s8(x + c, p), v);
        sum = vaddvaq_s8(sum, v);
    }
    return acc + sum * offset;
}
#endif /* RS_HAVE_MVE */

/* ------------------------------------------------------------------------------------------ */
/* The gather loop nest, instantiated once per tier.                                           */

/** The filter taps k in [0, kernel) that reach output position `out`: lo, lo + stride, ... up to hi. */
static inline void tc_tap_range(int32_t out, int32_t pad, int32_t stride, int32_t in, int32_t kernel, int32_t *lo,
                                int32_t *hi)
{
    const int32_t t = out + pad; /* k reads input (t - k) / stride: needs t - k >= 0, a multiple of stride, < in */
    *lo = NN_MAX(t % stride, t - (in - 1) * stride);
    *hi = NN_MIN(kernel - 1, t);
}

static inline __attribute__((always_inline)) void tc_run(const tc_shape *s, const rs_conv_quant *q,
                                                         const int8_t *input, const int8_t *filter, int8_t *output,
                                                         tc_dot2_fn dot2, tc_dot1_fn dot1)
{
    const int32_t c_in = s->in_c;
    const int32_t channel_stride = s->k_h * s->k_w * c_in;
    for (int32_t b = 0; b < s->batches; b++)
    {
        const int8_t *in_b = input + b * s->in_h * s->in_w * c_in;
        for (int32_t oy = 0; oy < s->out_h; oy++)
        {
            int32_t ky_lo, ky_hi;
            tc_tap_range(oy, s->pad_h, s->stride_h, s->in_h, s->k_h, &ky_lo, &ky_hi);
            for (int32_t ox = 0; ox < s->out_w; ox++)
            {
                int32_t kx_lo, kx_hi;
                tc_tap_range(ox, s->pad_w, s->stride_w, s->in_w, s->k_w, &kx_lo, &kx_hi);
                int8_t *out = output + ((b * s->out_h + oy) * s->out_w + ox) * s->out_c;
                int32_t o = 0;
                for (; o + 2 <= s->out_c; o += 2)
                {
                    int32_t acc_0 = 0, acc_1 = 0;
                    for (int32_t ky = ky_lo; ky <= ky_hi; ky += s->stride_h)
                    {
                        const int8_t *x_row = in_b + ((oy + s->pad_h - ky) / s->stride_h) * s->in_w * c_in;
                        for (int32_t kx = kx_lo; kx <= kx_hi; kx += s->stride_w)
                        {
                            const int8_t *x = x_row + ((ox + s->pad_w - kx) / s->stride_w) * c_in;
                            const int8_t *w_0 = filter + o * channel_stride + (ky * s->k_w + kx) * c_in;
                            dot2(x, w_0, w_0 + channel_stride, c_in, q->input_offset, &acc_0, &acc_1);
                        }
                    }
                    out[o] = rs_conv_out(acc_0, q, o);
                    out[o + 1] = rs_conv_out(acc_1, q, o + 1);
                }
                if (o < s->out_c)
                {
                    int32_t acc = 0;
                    for (int32_t ky = ky_lo; ky <= ky_hi; ky += s->stride_h)
                    {
                        const int8_t *x_row = in_b + ((oy + s->pad_h - ky) / s->stride_h) * s->in_w * c_in;
                        for (int32_t kx = kx_lo; kx <= kx_hi; kx += s->stride_w)
                        {
                            const int8_t *x = x_row + ((ox + s->pad_w - kx) / s->stride_w) * c_in;
                            acc += dot1(x, filter + o * channel_stride + (ky * s->k_w + kx) * c_in, c_in,
                                        q->input_offset);
                        }
                    }
                    out[o] = rs_conv_out(acc, q, o);
                }
            }
        }
    }
}

static rs_conv_quant tc_quant(const cmsis_nn_transpose_conv_params *p,
                              const cmsis_nn_per_channel_quant_params *quant_params, const int32_t *bias)
{
    const rs_conv_quant q = {p->input_offset, p->output_offset, p->activation.min, p->activation.max,
                             quant_params->multiplier, quant_params->shift, bias};
    return q;
}

/* ------------------------------------------------------------------------------------------ */
/* arm_transpose_conv_s8 per tier (no scratch needed; ctx and output_ctx are not read).        */

#define RS_TRANSPOSE_CONV_TIER(suffix)                                                                             \
    arm_cmsis_nn_status rs_transpose_conv_s8_##suffix(RS_TRANSPOSE_CONV_ARGS)                                       \
    {                                                                                                              \
        (void)ctx;                                                                                                 \
        (void)output_ctx;                                                                                          \
        (void)bias_dims;                                                                                           \
        tc_shape s;                                                                                                \
        const arm_cmsis_nn_status status =                                                                         \
            tc_validate(transpose_conv_params, input_dims, filter_dims, output_dims, &s);                          \
        if (status != ARM_CMSIS_NN_SUCCESS)                                                                        \
        {                                                                                                          \
            return status;                                                                                         \
        }                                                                                                          \
        const rs_conv_quant q = tc_quant(transpose_conv_params, quant_params, bias_data);                          \
        tc_run(&s, &q, input_data, filter_data, output_data, tc_dot2_##suffix, tc_dot1_##suffix);                  \
        return ARM_CMSIS_NN_SUCCESS;                                                                               \
    }

RS_TRANSPOSE_CONV_TIER(scalar)
#if RS_HAVE_DSP
RS_TRANSPOSE_CONV_TIER(dsp)
#endif
#if RS_HAVE_MVE
RS_TRANSPOSE_CONV_TIER(mve)
#endif

/* ------------------------------------------------------------------------------------------ */
/* arm_transpose_conv_wrapper_s8 per tier.                                                     */

typedef arm_cmsis_nn_status (*rs_convolve_fn)(RS_CONVOLVE_ARGS);
typedef arm_cmsis_nn_status (*rs_transpose_conv_fn)(RS_TRANSPOSE_CONV_ARGS);

static arm_cmsis_nn_status tc_wrapper(rs_convolve_fn convolve, rs_transpose_conv_fn transpose_conv,
                                      RS_TRANSPOSE_CONV_WRAPPER_ARGS)
{
    if (ctx == NULL || ctx->buf == NULL)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const cmsis_nn_transpose_conv_params *p = transpose_conv_params;
    if (!is_reverse_conv(p, input_dims))
    {
        return transpose_conv(ctx, reverse_conv_ctx, p, quant_params, input_dims, input_data, filter_dims,
                              filter_data, bias_dims, bias_data, output_dims, output_data);
    }
    tc_shape s;
    const arm_cmsis_nn_status status = tc_validate(p, input_dims, filter_dims, output_dims, &s);
    if (status != ARM_CMSIS_NN_SUCCESS)
    {
        return status;
    }
    if (reverse_conv_ctx == NULL || reverse_conv_ctx->buf == NULL)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    /* The filter reversed in y and x: reversed[o][KH-1-ky][KW-1-kx][:] = filter[o][ky][kx][:]. */
    int8_t *reversed = reverse_conv_ctx->buf;
    const int32_t c_in = s.in_c;
    for (int32_t o = 0; o < s.out_c; o++)
    {
        for (int32_t ky = 0; ky < s.k_h; ky++)
        {
            for (int32_t kx = 0; kx < s.k_w; kx++)
            {
                const int32_t from = ((o * s.k_h + ky) * s.k_w + kx) * c_in;
                const int32_t to = ((o * s.k_h + (s.k_h - 1 - ky)) * s.k_w + (s.k_w - 1 - kx)) * c_in;
                memcpy(reversed + to, filter_data + from, (size_t)c_in);
            }
        }
    }
    const cmsis_nn_conv_params conv_params = {p->input_offset,
                                              p->output_offset,
                                              {1, 1},
                                              {s.k_w - 1 - s.pad_w, s.k_h - 1 - s.pad_h},
                                              {1, 1},
                                              p->activation};
    const cmsis_nn_dims upscaled_dims = {s.batches, s.in_h * p->stride.h, s.in_w * p->stride.w, c_in};
    const cmsis_nn_dims upscale_dims = {0, p->stride.h, p->stride.w, 0};
    return convolve(ctx, &conv_params, quant_params, &upscaled_dims, input_data, filter_dims, reversed, bias_dims,
                    bias_data, &upscale_dims, output_dims, output_data);
}

arm_cmsis_nn_status rs_transpose_conv_wrapper_s8_scalar(RS_TRANSPOSE_CONV_WRAPPER_ARGS)
{
    return tc_wrapper(rs_convolve_s8_scalar, rs_transpose_conv_s8_scalar, ctx, reverse_conv_ctx,
                      transpose_conv_params, quant_params, input_dims, input_data, filter_dims, filter_data,
                      bias_dims, bias_data, output_dims, output_data);
}

#if RS_HAVE_DSP
arm_cmsis_nn_status rs_transpose_conv_wrapper_s8_dsp(RS_TRANSPOSE_CONV_WRAPPER_ARGS)
{
    return tc_wrapper(rs_convolve_s8_dsp, rs_transpose_conv_s8_dsp, ctx, reverse_conv_ctx, transpose_conv_params,
                      quant_params, input_dims, input_data, filter_dims, filter_data, bias_dims, bias_data,
                      output_dims, output_data);
}
#endif

#if RS_HAVE_MVE
arm_cmsis_nn_status rs_transpose_conv_wrapper_s8_mve(RS_TRANSPOSE_CONV_WRAPPER_ARGS)
{
    return tc_wrapper(rs_convolve_s8_mve, rs_transpose_conv_s8_mve, ctx, reverse_conv_ctx, transpose_conv_params,
                      quant_params, input_dims, input_data, filter_dims, filter_data, bias_dims, bias_data,
                      output_dims, output_data);
}
#endif

/* ------------------------------------------------------------------------------------------ */
/* Buffer sizes (kernels_py.conv_transpose.transpose_conv_s8_get_buffer_size, reverse size). */

int32_t rs_transpose_conv_s8_buffer_size_tier(int32_t tier, const cmsis_nn_transpose_conv_params *p,
                                              const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims,
                                              const cmsis_nn_dims *out_dims)
{
    if (is_reverse_conv(p, input_dims))
    {
        /* arm_convolve_s8's size on the upscaled input: it depends on C_IN and the filter only. */
        return rs_convolve_s8_buffer_size_tier(tier, input_dims, filter_dims);
    }
    /* CMSIS-NN sizes the row buffer with MAX(filter w, stride.h) (mirrored; the gather here
     * needs none of it). */
    const int32_t buf_x = ((input_dims->w - 1) * p->stride.w + NN_MAX(filter_dims->w, p->stride.h)) * out_dims->c;
    const int32_t buf_y = NN_MAX(filter_dims->h, p->stride.h);
    return buf_x * buf_y * (int32_t)sizeof(int32_t);
}

#if RS_HAVE_MVE
    #define RS_TC_BUILD_TIER RS_CONV_TIER_MVE
#elif RS_HAVE_DSP
    #define RS_TC_BUILD_TIER RS_CONV_TIER_DSP
#else
    #define RS_TC_BUILD_TIER RS_CONV_TIER_SCALAR
#endif

int32_t arm_transpose_conv_s8_get_buffer_size(const cmsis_nn_transpose_conv_params *transpose_conv_params,
                                              const cmsis_nn_dims *input_dims,
                                              const cmsis_nn_dims *filter_dims,
                                              const cmsis_nn_dims *out_dims)
{
    return rs_transpose_conv_s8_buffer_size_tier(RS_TC_BUILD_TIER, transpose_conv_params, input_dims, filter_dims,
                                                 out_dims);
}

int32_t arm_transpose_conv_s8_get_buffer_size_mve(const cmsis_nn_transpose_conv_params *transpose_conv_params,
                                                  const cmsis_nn_dims *input_dims,
                                                  const cmsis_nn_dims *filter_dims,
                                                  const cmsis_nn_dims *out_dims)
{
    return rs_transpose_conv_s8_buffer_size_tier(RS_CONV_TIER_MVE, transpose_conv_params, input_dims, filter_dims,
                                                 out_dims);
}

int32_t arm_transpose_conv_s8_get_reverse_conv_buffer_size(const cmsis_nn_transpose_conv_params *transpose_conv_params,
                                                           const cmsis_nn_dims *input_dims,
                                                           const cmsis_nn_dims *filter_dims)
{
    if (!is_reverse_conv(transpose_conv_params, input_dims))
    {
        return 0;
    }
    return input_dims->c * filter_dims->w * filter_dims->h * filter_dims->n;
}

/* ------------------------------------------------------------------------------------------ */
/* Public API: thin dispatch to the richest tier this build has.                              */

#if RS_HAVE_MVE
    #define RS_TC_IMPL(stem) stem##_mve
#elif RS_HAVE_DSP
    #define RS_TC_IMPL(stem) stem##_dsp
#else
    #define RS_TC_IMPL(stem) stem##_scalar
#endif

arm_cmsis_nn_status arm_transpose_conv_s8(RS_TRANSPOSE_CONV_ARGS)
{
    return RS_TC_IMPL(rs_transpose_conv_s8)(ctx, output_ctx, transpose_conv_params, quant_params, input_dims,
                                            input_data, filter_dims, filter_data, bias_dims, bias_data, output_dims,
                                            output_data);
}

arm_cmsis_nn_status arm_transpose_conv_wrapper_s8(RS_TRANSPOSE_CONV_WRAPPER_ARGS)
{
    return RS_TC_IMPL(rs_transpose_conv_wrapper_s8)(ctx, reverse_conv_ctx, transpose_conv_params, quant_params,
                                                    input_dims, input_data, filter_dims, filter_data, bias_dims,
                                                    bias_data, output_dims, output_data);
}
