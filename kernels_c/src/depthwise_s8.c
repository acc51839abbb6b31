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
 *  - arm_depthwise_conv_wrapper_s8: CMSIS-NN V.2.2.0's routing (kernels_py select_depthwise_kernel),
 *    per tier as that tier's CMSIS-NN build compiles it; see the wrappers below.
 * None of them needs its scratch buffer here; the sizes are CMSIS-NN's so callers size ctx alike.
 *
 * Tiers (one file each: depthwise_s8_{scalar,dsp,mve}.c; shared pieces in depthwise_s8_internal.h;
 * this file holds the wrappers' routing, the buffer sizes and the public dispatch), all computing
 * channel blocks of one output pixel over the taps inside the input, rows of up to three taps
 * unrolled (scalar and DSP: whole undilated 3x3 windows inside the input too; on MVE nine
 * unrolled taps run GCC out of Q registers and spill):
 *  - scalar: four channels per pass (MLA), x + input_offset once per tap and channel; a pixel's
 *    accumulators go to the stack (64 channels at a time) and are requantized in a pass of their own;
 *  - DSP: four channels per word; SXTAB16 adds the input offset while unpacking input bytes
 *    {0,2} and {1,3} into int16 lanes, SXTB16 unpacks the filter, SMLABB/SMLATT accumulate
 *    each channel in its own int32; the requantize pass packs four outputs (SSAT, BFI) and
 *    clamps them bytewise (SSUB8/SEL); ch_mult > 1 shares each offset input between four
 *    multipliers (SMLABB/SMLABT against the unpacked filter word);
 *  - MVE: eight channels per step in int16 lanes (x + offset lies in [-255, 255]); VMULLB/VMULLT
 *    widen the even/odd channel products to int32 lanes; per-lane requantize, VQMOVNB/VQMOVNT
 *    re-interleave (saturating, so the int16 clamp after them equals the int32 one). Channel
 *    tails use int32 lanes with a VCTP predicate. ch_mult > 1 gathers the input channel of each
 *    output lane (oc / ch_mult, by a reciprocal multiply).
 * Requantization is nn_requantize_64 (support/nn_fixedpoint.h): arm_nn_requantize bit for bit.
 */
#include "depthwise_s8_internal.h"

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

/**
 * MVE-only route: one input channel and more than CONVERT_DW_CONV_WITH_ONE_INPUT_CH_AND_OUTPUT_CH_
 * ABOVE_THRESHOLD output channels (1 as GCC builds CMSIS-NN; 8 with Arm Compiler 6) run as a regular
 * convolution (kernels_py is_depthwise_conv_to_conv_s8). Tested on dims, like CMSIS-NN.
 */
#define DW_TO_CONV_THRESHOLD 1
static inline int dw_is_to_conv(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *output_dims)
{
    return input_dims->c == 1 && output_dims->c > DW_TO_CONV_THRESHOLD;
}

static cmsis_nn_conv_params dw_conv_params_of(const cmsis_nn_dw_conv_params *p)
{
    const cmsis_nn_conv_params conv = {p->input_offset, p->output_offset, p->stride,
                                       p->padding,      p->dilation,      p->activation};
    return conv;
}

/** The to-conv route's filter: [1, KH, KW, C_OUT] read as the conv filter [C_OUT, KH, KW, 1]. */
static cmsis_nn_dims dw_conv_filter_dims(const cmsis_nn_dims *filter_dims)
{
    const cmsis_nn_dims dims = {filter_dims->c, filter_dims->h, filter_dims->w, filter_dims->n};
    return dims;
}

#if RS_HAVE_MVE
/**
 * arm_depthwise_conv_to_conv_s8: the filter transposed to OHWI (permutation {3, 1, 2, 0}) into
 * ctx->buf after the conv wrapper's own MVE scratch, then the MVE conv wrapper. CMSIS-NN does not
 * check ctx->buf here (it writes through it); a NULL buffer returns ARM_CMSIS_NN_ARG_ERROR instead.
 */
static arm_cmsis_nn_status dw_to_conv_mve(RS_DEPTHWISE_CONV_ARGS)
{
    if (ctx == NULL || ctx->buf == NULL)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const cmsis_nn_conv_params conv_params = dw_conv_params_of(dw_conv_params);
    const cmsis_nn_dims conv_filter_dims = dw_conv_filter_dims(filter_dims);
    int8_t *const conv_filter = (int8_t *)ctx->buf + arm_convolve_wrapper_s8_get_buffer_size_mve(
                                                         &conv_params, input_dims, &conv_filter_dims, output_dims);
    const int32_t taps = filter_dims->h * filter_dims->w * filter_dims->n;
    const int32_t out_ch = filter_dims->c;
    for (int32_t oc = 0; oc < out_ch; oc++)
    {
        for (int32_t t = 0; t < taps; t++)
        {
            conv_filter[oc * taps + t] = filter[t * out_ch + oc];
        }
    }
    return rs_convolve_wrapper_s8_mve(ctx, &conv_params, quant_params, input_dims, input, &conv_filter_dims,
                                      conv_filter, bias_dims, bias, output_dims, output);
}

arm_cmsis_nn_status rs_depthwise_conv_wrapper_s8_mve(RS_DEPTHWISE_CONV_ARGS)
{
    if (dw_is_to_conv(input_dims, output_dims))
    {
        return dw_to_conv_mve(DW_ARGS_FORWARD);
    }
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

/** The to-conv route's scratch: the conv wrapper's MVE buffer, then the transposed filter. */
static int32_t dw_to_conv_buffer_size_mve(const cmsis_nn_dw_conv_params *dw_conv_params,
                                          const cmsis_nn_dims *input_dims,
                                          const cmsis_nn_dims *filter_dims,
                                          const cmsis_nn_dims *output_dims)
{
    const cmsis_nn_conv_params conv_params = dw_conv_params_of(dw_conv_params);
    const cmsis_nn_dims conv_filter_dims = dw_conv_filter_dims(filter_dims);
    return arm_convolve_wrapper_s8_get_buffer_size_mve(&conv_params, input_dims, &conv_filter_dims, output_dims) +
           filter_dims->n * filter_dims->h * filter_dims->w * filter_dims->c;
}

/* The host-callable MVE size is the larger of the fast group's and the to-conv route's (the two
 * never both apply: C_IN == C_OUT and C_IN == 1 < C_OUT exclude each other). */
int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size_mve(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                          const cmsis_nn_dims *input_dims,
                                                          const cmsis_nn_dims *filter_dims,
                                                          const cmsis_nn_dims *output_dims)
{
    int32_t size = 0;
    if (dw_sizes_fast_group(dw_conv_params, input_dims, output_dims))
    {
        size = arm_depthwise_conv_s8_opt_get_buffer_size_mve(input_dims, filter_dims);
    }
    if (dw_is_to_conv(input_dims, output_dims))
    {
        size = NN_MAX(size, dw_to_conv_buffer_size_mve(dw_conv_params, input_dims, filter_dims, output_dims));
    }
    return size;
}

int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                      const cmsis_nn_dims *input_dims,
                                                      const cmsis_nn_dims *filter_dims,
                                                      const cmsis_nn_dims *output_dims)
{
#if RS_HAVE_MVE
    if (dw_is_to_conv(input_dims, output_dims))
    {
        return dw_to_conv_buffer_size_mve(dw_conv_params, input_dims, filter_dims, output_dims);
    }
    return dw_sizes_fast_group(dw_conv_params, input_dims, output_dims)
               ? arm_depthwise_conv_s8_opt_get_buffer_size_mve(input_dims, filter_dims)
               : 0;
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
