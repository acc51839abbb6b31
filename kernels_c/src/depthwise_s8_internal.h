/*
 * refsim kernels_c: what the depthwise tiers share (src/depthwise_s8*.c); semantics, kernels and
 * tiers are described in src/depthwise_s8.c. Private to those files.
 */
#ifndef RS_DEPTHWISE_S8_INTERNAL_H
#define RS_DEPTHWISE_S8_INTERNAL_H

#include "support/nn_fixedpoint.h"
#include "variants.h"

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

static inline dw_layer dw_unpack(const cmsis_nn_dw_conv_params *p,
                                 const cmsis_nn_per_channel_quant_params *quant_params,
                                 const cmsis_nn_dims *input_dims,
                                 const cmsis_nn_dims *filter_dims,
                                 const int8_t *filter,
                                 const int32_t *bias,
                                 const cmsis_nn_dims *output_dims)
{
    const dw_layer g = {
        .in_h = input_dims->h,
        .in_w = input_dims->w,
        .in_c = input_dims->c,
        .ch_mult = p->ch_mult,
        .out_c = output_dims->c,
        .k_h = filter_dims->h,
        .k_w = filter_dims->w,
        .out_h = output_dims->h,
        .out_w = output_dims->w,
        .stride_h = p->stride.h,
        .stride_w = p->stride.w,
        .pad_h = p->padding.h,
        .pad_w = p->padding.w,
        .dil_h = p->dilation.h,
        .dil_w = p->dilation.w,
        .input_offset = p->input_offset,
        .output_offset = p->output_offset,
        .act_min = p->activation.min,
        .act_max = p->activation.max,
        .filter = filter,
        .bias = bias,
        .mult = quant_params->multiplier,
        .shift = quant_params->shift,
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

/** arm_depthwise_conv_3x3_s8's checks: C_IN == C_OUT, a 3x3 filter, padding.w <= 1. */
static inline arm_cmsis_nn_status dw_check_3x3(const cmsis_nn_dw_conv_params *p,
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
static inline arm_cmsis_nn_status dw_check_opt(const cmsis_nn_context *ctx,
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
static inline dw_layer dw_unpack_ch1(const cmsis_nn_dw_conv_params *p,
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

#endif /* RS_DEPTHWISE_S8_INTERNAL_H */
