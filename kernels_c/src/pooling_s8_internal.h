/*
 * refsim kernels_c: what the s8 pooling files share (pooling_s8_avg.c, pooling_s8_max.c only):
 * the layer unpacked from CMSIS-NN's structs and the window of taps inside the input.
 */
#ifndef RS_POOLING_S8_INTERNAL_H
#define RS_POOLING_S8_INTERNAL_H

#include "support/nn_fixedpoint.h"
#include "variants.h"

typedef struct
{
    int32_t in_h, in_w, ch;
    int32_t out_h, out_w;
    int32_t k_h, k_w;
    int32_t stride_h, stride_w, pad_h, pad_w;
    int32_t act_min, act_max;
} pool_layer;

static inline pool_layer pool_unpack(const cmsis_nn_pool_params *p,
                                     const cmsis_nn_dims *input_dims,
                                     const cmsis_nn_dims *filter_dims,
                                     const cmsis_nn_dims *output_dims)
{
    const pool_layer g = {input_dims->h, input_dims->w,   input_dims->c,     output_dims->h,    output_dims->w,
                          filter_dims->h, filter_dims->w, p->stride.h,       p->stride.w,       p->padding.h,
                          p->padding.w,  p->activation.min, p->activation.max};
    return g;
}

/** One output pixel's window: rows x cols taps inside the input, the first at x (channel 0). */
typedef struct
{
    int32_t rows, cols;
    const int8_t *x;
} pool_window;

static inline pool_window pool_window_at(const pool_layer *g, const int8_t *input, int32_t oy, int32_t ox)
{
    const int32_t base_y = oy * g->stride_h - g->pad_h;
    const int32_t base_x = ox * g->stride_w - g->pad_w;
    const int32_t ky0 = NN_MAX(0, -base_y);
    const int32_t kx0 = NN_MAX(0, -base_x);
    pool_window v = {NN_MIN(g->k_h, g->in_h - base_y) - ky0, NN_MIN(g->k_w, g->in_w - base_x) - kx0, input};
    if (v.rows <= 0 || v.cols <= 0)
    {
        v.rows = 0;
        v.cols = 0;
        return v;
    }
    v.x = input + ((base_y + ky0) * g->in_w + base_x + kx0) * g->ch;
    return v;
}

/** The public function's tier variant: each file's public API is a thin dispatch to stem_<tier>. */
#if RS_HAVE_MVE
    #define POOL_TIER(stem) stem##_mve
#elif RS_HAVE_DSP
    #define POOL_TIER(stem) stem##_dsp
#else
    #define POOL_TIER(stem) stem##_scalar
#endif

#endif /* RS_POOLING_S8_INTERNAL_H */
