/*
 * refsim kernels_c: what the convolution family's files share (conv_s8*.c only).
 *
 * A convolution is validated once into an rs_conv_shape (conv_s8.c), then one tier's engine
 * runs it (conv_s8_scalar.c, conv_s8_dsp.c, conv_s8_mve.c); transpose convolution has its own
 * engines (conv_s8_transpose.c). The arithmetic is CMSIS-NN's default build, as kernels_py.conv
 * states it:
 *   acc = bias + sum over the taps inside the input of (x + input_offset) * w
 *   out = clamp(requant(acc, multiplier[c], shift[c]) + output_offset, act_min, act_max)
 * Padding taps contribute nothing, not even the offset: int16 columns hold 0 there, int8
 * columns hold -input_offset (which the offset brings back to 0), as CMSIS-NN fills them. The
 * products are summed in int32 from zero (|sum| <= depth * 255 * 128, no overflow below depth
 * 65,793) and the bias is added last with two's-complement wrap, which equals kernels_py's
 * wrap_int32(sum + bias).
 */
#ifndef RS_CONV_S8_INTERNAL_H
#define RS_CONV_S8_INTERNAL_H

#include "support/nn_fixedpoint.h"
#include "variants.h"

/** Tiers as the tier-indexed size helpers take them (same numbers as the harness variants). */
enum
{
    RS_CONV_TIER_SCALAR = 1,
    RS_CONV_TIER_DSP = 2,
    RS_CONV_TIER_MVE = 3,
};

/** A validated convolution: extents, geometry and groups. */
typedef struct
{
    int32_t batches;
    int32_t in_h, in_w, in_c;     /* the input tensor as stored */
    int32_t up_h, up_w;           /* log2 of the zero-upscaling (0 or 1); taps index in_h << up_h rows */
    int32_t k_h, k_w, filter_c;   /* filter_c = in_c / groups */
    int32_t groups, group_out_c;  /* group_out_c = out_c / groups */
    int32_t out_h, out_w, out_c;
    int32_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
    int32_t rhs_cols;             /* k_h * k_w * filter_c: one im2col column */
} rs_conv_shape;

/** Requantization and output range, per output channel arrays. */
typedef struct
{
    int32_t input_offset;
    int32_t output_offset;
    int32_t act_min;
    int32_t act_max;
    const int32_t *multiplier;
    const int32_t *shift;
    const int32_t *bias; /* may be NULL */
} rs_conv_quant;

static inline rs_conv_quant rs_conv_quant_of(const cmsis_nn_conv_params *p,
                                             const cmsis_nn_per_channel_quant_params *quant,
                                             const int32_t *bias)
{
    const rs_conv_quant q = {p->input_offset, p->output_offset, p->activation.min, p->activation.max,
                             quant->multiplier,  quant->shift,     bias};
    return q;
}

/** A group's view of the per-channel arrays, starting at first_channel (a NULL bias stays NULL). */
static inline rs_conv_quant rs_conv_group_quant(const rs_conv_quant *q, int32_t first_channel)
{
    rs_conv_quant g = *q;
    g.multiplier += first_channel;
    g.shift += first_channel;
    if (g.bias != NULL)
    {
        g.bias += first_channel;
    }
    return g;
}

/** One output from a raw sum of products (bias not yet added), channel c. */
static inline int8_t rs_conv_out(int32_t sum, const rs_conv_quant *q, int32_t c)
{
    const int32_t acc = nn_add_wrap(sum, q->bias ? q->bias[c] : 0);
    return nn_clamp_s8(nn_add_wrap(nn_requantize(acc, q->multiplier[c], q->shift[c]), q->output_offset), q->act_min,
                       q->act_max);
}

/**
 * The outputs of channels c (and c + 1) for two pixels, all computed before any is stored: an
 * int8 store may alias the quantization arrays, so interleaving stores and requantizations makes
 * GCC reload a channel's parameters for every output; computed together, the two pixels of a
 * channel share them.
 */
static inline void rs_conv_out_2x2(int32_t a00, int32_t a01, int32_t a10, int32_t a11, const rs_conv_quant *q,
                                   int32_t c, int8_t *out_0, int8_t *out_1)
{
    const int8_t o00 = rs_conv_out(a00, q, c), o01 = rs_conv_out(a01, q, c);
    const int8_t o10 = rs_conv_out(a10, q, c + 1), o11 = rs_conv_out(a11, q, c + 1);
    out_0[c] = o00;
    out_1[c] = o01;
    out_0[c + 1] = o10;
    out_1[c + 1] = o11;
}

static inline void rs_conv_out_1x2(int32_t a00, int32_t a01, const rs_conv_quant *q, int32_t c, int8_t *out_0,
                                   int8_t *out_1)
{
    const int8_t o00 = rs_conv_out(a00, q, c), o01 = rs_conv_out(a01, q, c);
    out_0[c] = o00;
    out_1[c] = o01;
}

/**
 * The input pixel a tap reads (its first channel of group g), or NULL when the tap falls in the
 * padding or, for an upscaled input, on an inserted zero row or column. y and x are in the
 * upscaled coordinates (in_h << up_h rows).
 */
static inline const int8_t *rs_conv_tap(const rs_conv_shape *s, const int8_t *input_batch, int32_t y, int32_t x,
                                        int32_t g)
{
    if (y < 0 || x < 0 || (y >> s->up_h) >= s->in_h || (x >> s->up_w) >= s->in_w)
    {
        return NULL;
    }
    if (((y & s->up_h) | (x & s->up_w)) != 0) /* up_* is 0 or 1: odd rows/columns are zeros */
    {
        return NULL;
    }
    return input_batch + ((y >> s->up_h) * s->in_w + (x >> s->up_w)) * s->in_c + g * s->filter_c;
}

/** Row y of the input (upscaled coordinates) at group g's first channel, or NULL when y is padding
 * or an inserted zero row. */
static inline const int8_t *rs_conv_row(const rs_conv_shape *s, const int8_t *input_batch, int32_t y, int32_t g)
{
    if (y < 0 || (y >> s->up_h) >= s->in_h || (y & s->up_h) != 0)
    {
        return NULL;
    }
    return input_batch + (y >> s->up_h) * s->in_w * s->in_c + g * s->filter_c;
}

/** Pixel x of a row from rs_conv_row, or NULL when the row is NULL or x is padding / a zero column. */
static inline const int8_t *rs_conv_row_pixel(const rs_conv_shape *s, const int8_t *row, int32_t x)
{
    if (row == NULL || x < 0 || (x >> s->up_w) >= s->in_w || (x & s->up_w) != 0)
    {
        return NULL;
    }
    return row + (x >> s->up_w) * s->in_c;
}

/** Whether taps kx = 0 .. k_w - 1 of a row, starting at x, are one contiguous run of input bytes. */
static inline bool rs_conv_row_contiguous(const rs_conv_shape *s, int32_t x)
{
    return s->groups == 1 && s->dil_w == 1 && s->up_w == 0 && x >= 0 && x + s->k_w <= s->in_w;
}

/**
 * The start of a pixel's receptive field for group g when it is one contiguous run of input
 * bytes, else NULL: a one-row filter inside the input, not upscaled, whose taps are adjacent
 * (unit horizontal dilation, or a single tap) and, when grouped, a single tap (a group's channels
 * are contiguous only within one pixel). 1x1 and 1xN convolutions then need no im2col copy.
 */
static inline const int8_t *rs_conv_direct_column(const rs_conv_shape *s, const int8_t *input_batch, int32_t oy,
                                                  int32_t ox, int32_t g)
{
    const int32_t y = oy * s->stride_h - s->pad_h;
    const int32_t x = ox * s->stride_w - s->pad_w;
    if (s->k_h != 1 || (s->up_h | s->up_w) != 0 || (s->k_w != 1 && (s->dil_w != 1 || s->groups != 1)) || y < 0 ||
        y >= s->in_h || x < 0 || x + s->k_w > s->in_w)
    {
        return NULL;
    }
    return input_batch + (y * s->in_w + x) * s->in_c + g * s->filter_c;
}

/* Engines, one per tier: run a validated convolution. buf is the tier's scratch (rs_*_tier sizes). */
arm_cmsis_nn_status rs_conv_engine_scalar(const rs_conv_shape *s, const rs_conv_quant *q, const int8_t *input,
                                          const int8_t *filter, int8_t *output, int16_t *buf);
arm_cmsis_nn_status rs_conv_1x1_engine_scalar(const rs_conv_shape *s, const rs_conv_quant *q, const int8_t *input,
                                              const int8_t *filter, int8_t *output);
arm_cmsis_nn_status rs_conv_engine_dsp(const rs_conv_shape *s, const rs_conv_quant *q, const int8_t *input,
                                       const int8_t *filter, int8_t *output, int16_t *buf);
arm_cmsis_nn_status rs_conv_1x1_engine_dsp(const rs_conv_shape *s, const rs_conv_quant *q, const int8_t *input,
                                           const int8_t *filter, int8_t *output);
/** slots: im2col columns of rhs_cols bytes buf holds (0 when every column is direct). */
arm_cmsis_nn_status rs_conv_engine_mve(const rs_conv_shape *s, const rs_conv_quant *q, const int8_t *input,
                                       const int8_t *filter, int8_t *output, int8_t *buf, int32_t slots);

/** Which argument checks a kernel applies (rs_conv_validate). */
typedef enum
{
    RS_CONV_GENERAL,   /* arm_convolve_s8 */
    RS_CONV_1X1_FAST,  /* arm_convolve_1x1_s8_fast */
    RS_CONV_1X1,       /* arm_convolve_1x1_s8 */
    RS_CONV_1_X_N,     /* arm_convolve_1_x_n_s8 */
} rs_conv_kind;

/** Fills *s from the CMSIS-NN arguments; ARM_CMSIS_NN_ARG_ERROR for shapes `kind` rejects. */
arm_cmsis_nn_status rs_conv_validate(rs_conv_kind kind, const cmsis_nn_conv_params *conv_params,
                                     const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims,
                                     const cmsis_nn_dims *upscale_dims, const cmsis_nn_dims *output_dims,
                                     rs_conv_shape *s);

#endif /* RS_CONV_S8_INTERNAL_H */
