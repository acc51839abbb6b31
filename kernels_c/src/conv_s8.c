/*
 * refsim kernels_c: arm_convolve_s8, arm_convolve_wrapper_s8, arm_convolve_1x1_s8_fast,
 * arm_convolve_1x1_s8, arm_convolve_1_x_n_s8 and their buffer sizes (CMSIS-NN v7 API).
 *
 * Semantics and routing are kernels_py.conv's (CMSIS-NN v7: arm_convolve_s8.c V.4.0.0 with
 * groups and upscale_dims, arm_convolve_wrapper_s8.c, arm_convolve_get_buffer_sizes_s8.c
 * V.2.2.1). This file validates arguments, picks the route and the promised scratch, and hands
 * a validated rs_conv_shape to one tier's engine (conv_s8_scalar.c, conv_s8_dsp.c,
 * conv_s8_mve.c). Each CMSIS-NN function has rs_<op>_s8_scalar / _dsp / _mve variants (the
 * harness runs every tier a core has) and the public function is a thin dispatch to the build's
 * best tier (STYLE rule 10).
 *
 * Status codes: ARM_CMSIS_NN_ARG_ERROR where CMSIS-NN returns it (no scratch where one is
 * needed, groups not dividing C_OUT, padding / stride the 1x1 kernels do not take, 1xN shapes
 * with input height != 1, dilation.w != 1 or stride.w * C_IN % 4 != 0) and where kernels_py
 * rejects a shape CMSIS-NN would silently mis-compute (C_IN not a multiple of the filter depth,
 * a specialised kernel called grouped or with a non-1x1 / non-1-row filter, outputs the 1x1
 * kernels cannot reach, input_offset outside [-127, 128], non-positive extents, strides or
 * dilations, negative padding).
 *
 * The wrapper computes every shape within the bytes arm_convolve_wrapper_s8_get_buffer_size
 * promised. That size routing skips the wrapper's C_IN == filter C test, so a grouped conv of
 * 1x1 shape is promised 0 bytes and a grouped 1xN-shaped conv the (smaller, on MVE) 1xN size,
 * although the wrapper sends both to arm_convolve_s8 (kernels_py mirrors the sizes). CMSIS-NN
 * then returns ARG_ERROR (no buffer) or overruns the 1xN buffer; here the 1x1 shape runs on
 * the scratch-free direct-column engines and the 1xN shape uses as many im2col columns as fit,
 * so the result is kernels_py's.
 */
#include "conv_s8_internal.h"

#if RS_HAVE_MVE
    #define RS_CONV_BUILD_TIER RS_CONV_TIER_MVE
#elif RS_HAVE_DSP
    #define RS_CONV_BUILD_TIER RS_CONV_TIER_DSP
#else
    #define RS_CONV_BUILD_TIER RS_CONV_TIER_SCALAR
#endif

/* ------------------------------------------------------------------------------------------ */
/* Shape predicates (kernels_py.conv's, which mirror arm_nn_is_convolve_1x1 and friends).      */

/** 1x1 filter, no padding, unit dilation (stride and groups not considered). */
static bool is_1x1_shape(const cmsis_nn_conv_params *p, const cmsis_nn_dims *filter_dims)
{
    return p->padding.w == 0 && p->padding.h == 0 && p->dilation.w == 1 && p->dilation.h == 1 &&
           filter_dims->w == 1 && filter_dims->h == 1;
}

/** Input and filter one row high, unit horizontal dilation, stride.w * C_IN a multiple of 4. */
static bool is_1_x_n_shape(const cmsis_nn_conv_params *p, const cmsis_nn_dims *input_dims,
                           const cmsis_nn_dims *filter_dims)
{
    return input_dims->h == 1 && p->dilation.w == 1 && filter_dims->h == 1 && (p->stride.w * input_dims->c) % 4 == 0;
}

/** The kernel arm_convolve_wrapper_s8 calls (kernels_py.conv.select_convolve_kernel). */
static rs_conv_kind wrapper_route(const cmsis_nn_conv_params *p, const cmsis_nn_dims *input_dims,
                                  const cmsis_nn_dims *filter_dims)
{
    const bool grouped = input_dims->c != filter_dims->c;
    if (!grouped && is_1x1_shape(p, filter_dims))
    {
        return (p->stride.w == 1 && p->stride.h == 1) ? RS_CONV_1X1_FAST : RS_CONV_1X1;
    }
    if (!grouped && is_1_x_n_shape(p, input_dims, filter_dims))
    {
        return RS_CONV_1_X_N;
    }
    return RS_CONV_GENERAL;
}

/* ------------------------------------------------------------------------------------------ */
/* Validation.                                                                                 */

arm_cmsis_nn_status rs_conv_validate(rs_conv_kind kind, const cmsis_nn_conv_params *conv_params,
                                     const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims,
                                     const cmsis_nn_dims *upscale_dims, const cmsis_nn_dims *output_dims,
                                     rs_conv_shape *s)
{
    const cmsis_nn_conv_params *p = conv_params;
    const cmsis_nn_dims *i = input_dims;
    const cmsis_nn_dims *f = filter_dims;
    const cmsis_nn_dims *o = output_dims;
    const int32_t up_h = (upscale_dims != NULL && upscale_dims->h == 2) ? 1 : 0;
    const int32_t up_w = (upscale_dims != NULL && upscale_dims->w == 2) ? 1 : 0;

    if (i->n < 1 || (i->h >> up_h) < 1 || (i->w >> up_w) < 1 || i->c < 1 || f->h < 1 || f->w < 1 || f->c < 1 ||
        o->h < 1 || o->w < 1 || o->c < 1)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    if (p->stride.h < 1 || p->stride.w < 1 || p->dilation.h < 1 || p->dilation.w < 1 || p->padding.h < 0 ||
        p->padding.w < 0 || p->input_offset < -127 || p->input_offset > 128)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    if (i->c % f->c != 0 || o->c % (i->c / f->c) != 0)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    if (kind != RS_CONV_GENERAL && (f->c != i->c || up_h != 0 || up_w != 0))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    switch (kind)
    {
    case RS_CONV_1X1_FAST:
        if (f->h != 1 || f->w != 1 || p->padding.h != 0 || p->padding.w != 0 || p->stride.h != 1 ||
            p->stride.w != 1 || o->h != i->h || o->w != i->w)
        {
            return ARM_CMSIS_NN_ARG_ERROR;
        }
        break;
    case RS_CONV_1X1:
        if (f->h != 1 || f->w != 1 || p->padding.h != 0 || p->padding.w != 0 ||
            o->h > (i->h - 1) / p->stride.h + 1 || o->w > (i->w - 1) / p->stride.w + 1)
        {
            return ARM_CMSIS_NN_ARG_ERROR;
        }
        break;
    case RS_CONV_1_X_N:
        if (i->h != 1 || f->h != 1 || p->dilation.w != 1 || (p->stride.w * i->c) % 4 != 0)
        {
            return ARM_CMSIS_NN_ARG_ERROR;
        }
        break;
    case RS_CONV_GENERAL:
        break;
    }

    s->batches = i->n;
    s->up_h = up_h;
    s->up_w = up_w;
    s->in_h = i->h >> up_h;
    s->in_w = i->w >> up_w;
    s->in_c = i->c;
    s->k_h = f->h;
    s->k_w = f->w;
    s->filter_c = f->c;
    s->groups = i->c / f->c;
    s->out_h = o->h;
    s->out_w = o->w;
    s->out_c = o->c;
    s->group_out_c = o->c / s->groups;
    s->stride_h = p->stride.h;
    s->stride_w = p->stride.w;
    s->pad_h = p->padding.h;
    s->pad_w = p->padding.w;
    s->dil_h = p->dilation.h;
    s->dil_w = p->dilation.w;
    s->rhs_cols = f->h * f->w * f->c;
    return ARM_CMSIS_NN_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* Buffer sizes per tier (kernels_py.conv's *_get_buffer_size with isa = scalar / dsp / mve).  */

int32_t rs_convolve_s8_buffer_size_tier(int32_t tier, const cmsis_nn_dims *input_dims,
                                        const cmsis_nn_dims *filter_dims)
{
    const int32_t rhs_cols = input_dims->c * filter_dims->w * filter_dims->h;
    if (tier == RS_CONV_TIER_MVE)
    {
        return 4 * ((rhs_cols + 15) / 16) * 16; /* four int8 columns in whole Q registers */
    }
    return 2 * ((rhs_cols + 3) & ~3) * (int32_t)sizeof(int16_t); /* two int16 columns */
}

int32_t rs_convolve_1x1_s8_fast_buffer_size_tier(int32_t tier, const cmsis_nn_dims *input_dims)
{
    /* CMSIS-NN asks 2 * C_IN int16 on DSP targets only when built with Arm Compiler 6; GCC: 0. */
    (void)tier;
    (void)input_dims;
    return 0;
}

int32_t rs_convolve_1_x_n_s8_buffer_size_tier(int32_t tier, const cmsis_nn_conv_params *conv_params,
                                              const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims,
                                              const cmsis_nn_dims *output_dims)
{
    if (tier != RS_CONV_TIER_MVE)
    {
        return rs_convolve_s8_buffer_size_tier(tier, input_dims, filter_dims);
    }
    /* The MVE kernel stages only the padded edge columns; C's / and % truncate toward zero. */
    const int32_t pad_x = conv_params->padding.w;
    const int32_t stride_x = conv_params->stride.w;
    const int32_t kernel_x = filter_dims->w;
    const int32_t c = input_dims->c;
    const int32_t total_pad = (output_dims->w - 1) * stride_x + kernel_x - input_dims->w;
    const int32_t asym_pad = total_pad % 2;
    const int32_t right_num = (pad_x + asym_pad != 0) ? NN_MAX(1, (pad_x + asym_pad + stride_x - 1) / stride_x) : 0;
    const int32_t left_num = pad_x != 0 ? NN_MAX(1, (pad_x + stride_x - 1) / stride_x) : 0;
    const int32_t no_pad_num = NN_MAX(output_dims->w - (right_num + left_num), 0);
    if (right_num + no_pad_num + left_num != output_dims->w)
    {
        return rs_convolve_s8_buffer_size_tier(tier, input_dims, filter_dims);
    }
    const int32_t pad_left = pad_x * c;
    const int32_t pad_right = asym_pad ? right_num * c : pad_left;
    return NN_MAX(kernel_x * c + pad_left, (kernel_x - 1) * c + pad_right);
}

int32_t rs_convolve_wrapper_s8_buffer_size_tier(int32_t tier, const cmsis_nn_conv_params *conv_params,
                                                const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims,
                                                const cmsis_nn_dims *output_dims)
{
    /* CMSIS-NN's size routing: the wrapper's predicates without its C_IN == filter C test. */
    if (is_1x1_shape(conv_params, filter_dims))
    {
        const bool unit_stride = conv_params->stride.w == 1 && conv_params->stride.h == 1;
        return unit_stride ? rs_convolve_1x1_s8_fast_buffer_size_tier(tier, input_dims) : 0;
    }
    if (is_1_x_n_shape(conv_params, input_dims, filter_dims))
    {
        return rs_convolve_1_x_n_s8_buffer_size_tier(tier, conv_params, input_dims, filter_dims, output_dims);
    }
    return rs_convolve_s8_buffer_size_tier(tier, input_dims, filter_dims);
}

int32_t arm_convolve_s8_get_buffer_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
    return rs_convolve_s8_buffer_size_tier(RS_CONV_BUILD_TIER, input_dims, filter_dims);
}

int32_t arm_convolve_s8_get_buffer_size_mve(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
    return rs_convolve_s8_buffer_size_tier(RS_CONV_TIER_MVE, input_dims, filter_dims);
}

int32_t arm_convolve_1x1_s8_fast_get_buffer_size(const cmsis_nn_dims *input_dims)
{
    return rs_convolve_1x1_s8_fast_buffer_size_tier(RS_CONV_BUILD_TIER, input_dims);
}

int32_t arm_convolve_1_x_n_s8_get_buffer_size(const cmsis_nn_conv_params *conv_params,
                                              const cmsis_nn_dims *input_dims,
                                              const cmsis_nn_dims *filter_dims,
                                              const cmsis_nn_dims *output_dims)
{
    return rs_convolve_1_x_n_s8_buffer_size_tier(RS_CONV_BUILD_TIER, conv_params, input_dims, filter_dims,
                                                 output_dims);
}

int32_t arm_convolve_wrapper_s8_get_buffer_size(const cmsis_nn_conv_params *conv_params,
                                                const cmsis_nn_dims *input_dims,
                                                const cmsis_nn_dims *filter_dims,
                                                const cmsis_nn_dims *output_dims)
{
    return rs_convolve_wrapper_s8_buffer_size_tier(RS_CONV_BUILD_TIER, conv_params, input_dims, filter_dims,
                                                   output_dims);
}

int32_t arm_convolve_wrapper_s8_get_buffer_size_dsp(const cmsis_nn_conv_params *conv_params,
                                                    const cmsis_nn_dims *input_dims,
                                                    const cmsis_nn_dims *filter_dims,
                                                    const cmsis_nn_dims *output_dims)
{
    return rs_convolve_wrapper_s8_buffer_size_tier(RS_CONV_TIER_DSP, conv_params, input_dims, filter_dims,
                                                   output_dims);
}

int32_t arm_convolve_wrapper_s8_get_buffer_size_mve(const cmsis_nn_conv_params *conv_params,
                                                    const cmsis_nn_dims *input_dims,
                                                    const cmsis_nn_dims *filter_dims,
                                                    const cmsis_nn_dims *output_dims)
{
    return rs_convolve_wrapper_s8_buffer_size_tier(RS_CONV_TIER_MVE, conv_params, input_dims, filter_dims,
                                                   output_dims);
}

/* ------------------------------------------------------------------------------------------ */
/* Running a validated shape on one tier.                                                      */

/** Runs s on `tier` with `bytes` of scratch at buf (what the called function's size promised). */
static arm_cmsis_nn_status conv_compute(int32_t tier, const rs_conv_shape *s, const rs_conv_quant *q,
                                        const int8_t *input, const int8_t *filter, int8_t *output, void *buf,
                                        int32_t bytes)
{
    /* Without scratch only 1x1 filters run (their columns are input pixels); the sizes above
     * promise 0 bytes for nothing else. */
    const bool scratch_free = s->k_h == 1 && s->k_w == 1 && s->pad_h == 0 && s->pad_w == 0 && s->up_h == 0 &&
                              s->up_w == 0;
    const int32_t im2col_bytes = 2 * ((s->rhs_cols + 3) & ~3) * (int32_t)sizeof(int16_t);
    switch (tier)
    {
#if RS_HAVE_MVE
    case RS_CONV_TIER_MVE:
        if (bytes < s->rhs_cols && !scratch_free)
        {
            return ARM_CMSIS_NN_ARG_ERROR;
        }
        return rs_conv_engine_mve(s, q, input, filter, output, buf, NN_MIN(4, bytes / s->rhs_cols));
#endif
#if RS_HAVE_DSP
    case RS_CONV_TIER_DSP:
        if (scratch_free && bytes < im2col_bytes)
        {
            return rs_conv_1x1_engine_dsp(s, q, input, filter, output);
        }
        return bytes < im2col_bytes ? ARM_CMSIS_NN_ARG_ERROR : rs_conv_engine_dsp(s, q, input, filter, output, buf);
#endif
    case RS_CONV_TIER_SCALAR:
        if (scratch_free && bytes < im2col_bytes)
        {
            return rs_conv_1x1_engine_scalar(s, q, input, filter, output);
        }
        return bytes < im2col_bytes ? ARM_CMSIS_NN_ARG_ERROR
                                    : rs_conv_engine_scalar(s, q, input, filter, output, buf);
    default:
        return ARM_CMSIS_NN_NO_IMPL_ERROR;
    }
}

/** Validates as `kind`, checks the scratch `bytes` promised is there, and runs on `tier`. */
static arm_cmsis_nn_status conv_entry(int32_t tier, rs_conv_kind kind, int32_t bytes, const cmsis_nn_context *ctx,
                                      const cmsis_nn_conv_params *conv_params,
                                      const cmsis_nn_per_channel_quant_params *quant_params,
                                      const cmsis_nn_dims *input_dims, const int8_t *input_data,
                                      const cmsis_nn_dims *filter_dims, const int8_t *filter_data,
                                      const int32_t *bias_data, const cmsis_nn_dims *upscale_dims,
                                      const cmsis_nn_dims *output_dims, int8_t *output_data)
{
    rs_conv_shape s;
    const arm_cmsis_nn_status status =
        rs_conv_validate(kind, conv_params, input_dims, filter_dims, upscale_dims, output_dims, &s);
    if (status != ARM_CMSIS_NN_SUCCESS)
    {
        return status;
    }
    void *buf = ctx != NULL ? ctx->buf : NULL;
    if (bytes > 0 && buf == NULL)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const rs_conv_quant q = rs_conv_quant_of(conv_params, quant_params, bias_data);
    return conv_compute(tier, &s, &q, input_data, filter_data, output_data, buf, bytes);
}

/*
 * The five convolution functions of one tier. Each validates as its kernel, expects the scratch
 * its own get_buffer_size promises on that tier, and runs the tier's engines; the wrapper routes
 * like kernels_py.conv.select_convolve_kernel and expects the wrapper's size.
 */
#define RS_CONV_TIER_FUNCTIONS(suffix, tier)                                                                       \
    arm_cmsis_nn_status rs_convolve_s8_##suffix(RS_CONVOLVE_ARGS)                                                   \
    {                                                                                                              \
        (void)bias_dims;                                                                                           \
        return conv_entry(tier, RS_CONV_GENERAL, rs_convolve_s8_buffer_size_tier(tier, input_dims, filter_dims),   \
                          ctx, conv_params, quant_params, input_dims, input_data, filter_dims, filter_data,        \
                          bias_data, upscale_dims, output_dims, output_data);                                      \
    }                                                                                                              \
    arm_cmsis_nn_status rs_convolve_1x1_s8_fast_##suffix(RS_CONVOLVE_WRAPPER_ARGS)                                  \
    {                                                                                                              \
        (void)bias_dims;                                                                                           \
        return conv_entry(tier, RS_CONV_1X1_FAST, rs_convolve_1x1_s8_fast_buffer_size_tier(tier, input_dims), ctx, \
                          conv_params, quant_params, input_dims, input_data, filter_dims, filter_data, bias_data,  \
                          NULL, output_dims, output_data);                                                         \
    }                                                                                                              \
    arm_cmsis_nn_status rs_convolve_1x1_s8_##suffix(RS_CONVOLVE_WRAPPER_ARGS)                                       \
    {                                                                                                              \
        (void)bias_dims;                                                                                           \
        return conv_entry(tier, RS_CONV_1X1, 0, ctx, conv_params, quant_params, input_dims, input_data,            \
                          filter_dims, filter_data, bias_data, NULL, output_dims, output_data);                    \
    }                                                                                                              \
    arm_cmsis_nn_status rs_convolve_1_x_n_s8_##suffix(RS_CONVOLVE_WRAPPER_ARGS)                                     \
    {                                                                                                              \
        (void)bias_dims;                                                                                           \
        const int32_t bytes =                                                                                      \
            rs_convolve_1_x_n_s8_buffer_size_tier(tier, conv_params, input_dims, filter_dims, output_dims);       \
        return conv_entry(tier, RS_CONV_1_X_N, bytes, ctx, conv_params, quant_params, input_dims, input_data,      \
                          filter_dims, filter_data, bias_data, NULL, output_dims, output_data);                    \
    }                                                                                                              \
    arm_cmsis_nn_status rs_convolve_wrapper_s8_##suffix(RS_CONVOLVE_WRAPPER_ARGS)                                   \
    {                                                                                                              \
        (void)bias_dims;                                                                                           \
        const int32_t bytes =                                                                                      \
            rs_convolve_wrapper_s8_buffer_size_tier(tier, conv_params, input_dims, filter_dims, output_dims);     \
        return conv_entry(tier, wrapper_route(conv_params, input_dims, filter_dims), bytes, ctx, conv_params,      \
                          quant_params, input_dims, input_data, filter_dims, filter_data, bias_data, NULL,         \
                          output_dims, output_data);                                                               \
    }

RS_CONV_TIER_FUNCTIONS(scalar, RS_CONV_TIER_SCALAR)
#if RS_HAVE_DSP
RS_CONV_TIER_FUNCTIONS(dsp, RS_CONV_TIER_DSP)
#endif
#if RS_HAVE_MVE
RS_CONV_TIER_FUNCTIONS(mve, RS_CONV_TIER_MVE)
#endif

/* ------------------------------------------------------------------------------------------ */
/* Public API: thin dispatch to the richest tier this build has.                              */

#if RS_HAVE_MVE
    #define RS_CONV_IMPL(stem) stem##_mve
#elif RS_HAVE_DSP
    #define RS_CONV_IMPL(stem) stem##_dsp
#else
    #define RS_CONV_IMPL(stem) stem##_scalar
#endif

arm_cmsis_nn_status arm_convolve_s8(RS_CONVOLVE_ARGS)
{
    return RS_CONV_IMPL(rs_convolve_s8)(ctx, conv_params, quant_params, input_dims, input_data, filter_dims,
                                        filter_data, bias_dims, bias_data, upscale_dims, output_dims, output_data);
}

arm_cmsis_nn_status arm_convolve_1x1_s8_fast(RS_CONVOLVE_WRAPPER_ARGS)
{
    return RS_CONV_IMPL(rs_convolve_1x1_s8_fast)(ctx, conv_params, quant_params, input_dims, input_data, filter_dims,
                                                 filter_data, bias_dims, bias_data, output_dims, output_data);
}

arm_cmsis_nn_status arm_convolve_1x1_s8(RS_CONVOLVE_WRAPPER_ARGS)
{
    return RS_CONV_IMPL(rs_convolve_1x1_s8)(ctx, conv_params, quant_params, input_dims, input_data, filter_dims,
                                            filter_data, bias_dims, bias_data, output_dims, output_data);
}

arm_cmsis_nn_status arm_convolve_1_x_n_s8(RS_CONVOLVE_WRAPPER_ARGS)
{
    return RS_CONV_IMPL(rs_convolve_1_x_n_s8)(ctx, conv_params, quant_params, input_dims, input_data, filter_dims,
                                              filter_data, bias_dims, bias_data, output_dims, output_data);
}

arm_cmsis_nn_status arm_convolve_wrapper_s8(RS_CONVOLVE_WRAPPER_ARGS)
{
    return RS_CONV_IMPL(rs_convolve_wrapper_s8)(ctx, conv_params, quant_params, input_dims, input_data, filter_dims,
                                                filter_data, bias_dims, bias_data, output_dims, output_data);
}
