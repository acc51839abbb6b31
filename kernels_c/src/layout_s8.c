/*
 * refsim kernels_c: data movement on int8 tensors (kernels_py/layout.py). No arithmetic, no rounding.
 *
 * - arm_pad_s8 (CMSIS-NN Source/PadFunctions/arm_pad_s8.c, V.1.0.0): output dims are
 *   pre_pad + input_size + post_pad per NHWC axis, new elements are pad_value. Unlike CMSIS-NN,
 *   a non-positive input dim or a negative pad returns ARM_CMSIS_NN_ARG_ERROR.
 * - arm_transpose_s8 (Source/TransposeFunctions/arm_transpose_s8.c, V.1.0.0): 1- to 4-D,
 *   output axis k is input axis permutations[k]; input_dims and output_dims are left-aligned
 *   (a [rows, cols] matrix is {n = rows, h = cols}). CMSIS-NN returns ARM_CMSIS_NN_ARG_ERROR
 *   for a permutation entry past num_dims - 1 (3- and 4-D); so do we, for every rank, and also
 *   for a repeated axis, num_dims outside 1..4 and output_dims that are not the permuted input
 *   dims. One deliberate difference (kernels_py's too): CMSIS-NN's 2-D branch ignores the
 *   permutation and always transposes; here a 2-D identity (0, 1) copies.
 *
 * Transpose is planned, not branched per case: size-1 axes drop out, output axes that stay
 * adjacent in the input merge, and the output is written in order, its innermost run gathered
 * from the input with one stride (a plain copy when that stride is 1).
 *
 * Neither kernel has anything for the DSP extension to do (newlib's memcpy/memset already move
 * words, a strided byte gather has no SIMD32 form): the DSP variants run the scalar code.
 * MVE copies and fills 16 bytes per instruction and gathers 8 (VLDRB with 16-bit offsets).
 */
#include <string.h>

#include "support/nn_fixedpoint.h"
#include "variants.h"

#if RS_HAVE_MVE
    #include "support/nn_mve.h"
#endif

/* ------------------------------------------------------------------------------------------ */
/* Contiguous fill / copy per tier.                                                           */

typedef void (*lay_fill_fn)(int8_t *dst, int8_t value, int32_t count);
typedef void (*lay_copy_fn)(int8_t *dst, const int8_t *src, int32_t count);
/** dst[j] = src[j * stride] for j < count (stride > 1). */
typedef void (*lay_gather_fn)(int8_t *dst, const int8_t *src, int32_t stride, int32_t count);

static void lay_fill_scalar(int8_t *dst, int8_t value, int32_t count)
{
    if (count > 0)
    {
        memset(dst, value, (size_t)count);
    }
}

static void lay_copy_scalar(int8_t *dst, const int8_t *src, int32_t count)
{
    if (count > 0)
    {
        memcpy(dst, src, (size_t)count);
    }
}

static void lay_gather_scalar(int8_t *dst, const int8_t *src, int32_t stride, int32_t count)
{
    int32_t j = 0;
    for (; j + 4 <= count; j += 4)
    {
        dst[j] = src[0];
        dst[j + 1] = src[stride];
        dst[j + 2] = src[2 * stride];
        dst[j + 3] = src[3 * stride];
        src += 4 * stride;
    }
    for (; j < count; j++)
    {
        dst[j] = *src;
        src += stride;
    }
}

#if RS_HAVE_MVE
static void lay_fill_mve(int8_t *dst, int8_t value, int32_t count) { nn_fill_s8_mve(dst, value, count); }

static void lay_copy_mve(int8_t *dst, const int8_t *src, int32_t count) { nn_copy_s8_mve(dst, src, count); }

static void lay_gather_mve(int8_t *dst, const int8_t *src, int32_t stride, int32_t count)
{
    int32_t j = 0;
    if (stride <= 0xFFFF / 7)
    {
        /* eight bytes per gather, 16-bit offsets 0, s, .., 7s */
        const uint16x8_t offsets = vmulq_n_u16(vidupq_n_u16(0U, 1), (uint16_t)stride);
        for (; j + 8 <= count; j += 8)
        {
            vstrbq_u16((uint8_t *)dst + j, vldrbq_gather_offset_u16((const uint8_t *)src, offsets));
            src += 8 * stride;
        }
        if (j < count)
        {
            const mve_pred16_t p = vctp16q((uint32_t)(count - j));
            vstrbq_p_u16((uint8_t *)dst + j, vldrbq_gather_offset_z_u16((const uint8_t *)src, offsets, p), p);
        }
        return;
    }
    /* four bytes per gather, 32-bit offsets */
    const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0U, 1), (uint32_t)stride);
    for (; j + 4 <= count; j += 4)
    {
        vstrbq_u32((uint8_t *)dst + j, vldrbq_gather_offset_u32((const uint8_t *)src, offsets));
        src += 4 * stride;
    }
    if (j < count)
    {
        const mve_pred16_t p = vctp32q((uint32_t)(count - j));
        vstrbq_p_u32((uint8_t *)dst + j, vldrbq_gather_offset_z_u32((const uint8_t *)src, offsets, p), p);
    }
}
#endif /* RS_HAVE_MVE */

/* ------------------------------------------------------------------------------------------ */
/* Pad                                                                                        */

static inline __attribute__((always_inline)) arm_cmsis_nn_status
lay_pad(const int8_t *input, int8_t *output, int8_t pad_value, const cmsis_nn_dims *in, const cmsis_nn_dims *pre,
        const cmsis_nn_dims *post, lay_fill_fn fill, lay_copy_fn copy)
{
    if (in->n < 1 || in->h < 1 || in->w < 1 || in->c < 1 || pre->n < 0 || pre->h < 0 || pre->w < 0 || pre->c < 0 ||
        post->n < 0 || post->h < 0 || post->w < 0 || post->c < 0)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t out_h = pre->h + in->h + post->h;
    const int32_t out_w = pre->w + in->w + post->w;
    const int32_t out_c = pre->c + in->c + post->c;
    const int32_t batch_block = out_h * out_w * out_c;
    const int32_t row_block = out_w * out_c;

    fill(output, pad_value, pre->n * batch_block);
    output += pre->n * batch_block;
    for (int32_t b = 0; b < in->n; b++)
    {
        fill(output, pad_value, pre->h * row_block);
        output += pre->h * row_block;
        for (int32_t y = 0; y < in->h; y++)
        {
            fill(output, pad_value, pre->w * out_c);
            output += pre->w * out_c;
            if (pre->c == 0 && post->c == 0)
            {
                /* whole rows of the input are contiguous in the output */
                copy(output, input, in->w * in->c);
                output += in->w * in->c;
                input += in->w * in->c;
            }
            else
            {
                for (int32_t x = 0; x < in->w; x++)
                {
                    fill(output, pad_value, pre->c);
                    output += pre->c;
                    copy(output, input, in->c);
                    output += in->c;
                    input += in->c;
                    fill(output, pad_value, post->c);
                    output += post->c;
                }
            }
            fill(output, pad_value, post->w * out_c);
            output += post->w * out_c;
        }
        fill(output, pad_value, post->h * row_block);
        output += post->h * row_block;
    }
    fill(output, pad_value, post->n * batch_block);
    return ARM_CMSIS_NN_SUCCESS;
}

arm_cmsis_nn_status rs_pad_s8_scalar(RS_PAD_ARGS)
{
    return lay_pad(input, output, pad_value, input_size, pre_pad, post_pad, lay_fill_scalar, lay_copy_scalar);
}

#if RS_HAVE_DSP
arm_cmsis_nn_status rs_pad_s8_dsp(RS_PAD_ARGS)
{
    return rs_pad_s8_scalar(input, output, pad_value, input_size, pre_pad, post_pad);
}
#endif

#if RS_HAVE_MVE
arm_cmsis_nn_status rs_pad_s8_mve(RS_PAD_ARGS)
{
    return lay_pad(input, output, pad_value, input_size, pre_pad, post_pad, lay_fill_mve, lay_copy_mve);
}
#endif

/* ------------------------------------------------------------------------------------------ */
/* Transpose                                                                                  */

#define TR_AXES 4

/** The output walk: output axes outermost first, each with its extent and input stride. */
typedef struct
{
    int32_t axes; /* 1..4 after dropping size-1 axes and merging */
    int32_t extent[TR_AXES];
    int32_t in_stride[TR_AXES];
} tr_plan;

static arm_cmsis_nn_status tr_make_plan(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *output_dims,
                                        const cmsis_nn_transpose_params *params, tr_plan *plan)
{
    const int32_t rank = params->num_dims;
    if (rank < 1 || rank > TR_AXES)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t in_dims[TR_AXES] = {input_dims->n, input_dims->h, input_dims->w, input_dims->c};
    const int32_t out_dims[TR_AXES] = {output_dims->n, output_dims->h, output_dims->w, output_dims->c};
    uint32_t perm[TR_AXES] = {0, 1, 2, 3};
    uint32_t seen = 0;
    for (int32_t k = 0; k < rank; k++)
    {
        /* A 1-D "transpose" is a copy whose permutation CMSIS-NN does not read. */
        perm[k] = rank == 1 ? 0U : params->permutations[k];
        if (perm[k] >= (uint32_t)rank || (seen & (1U << perm[k])) != 0 || in_dims[k] < 1 ||
            out_dims[k] != in_dims[perm[k]])
        {
            return ARM_CMSIS_NN_ARG_ERROR;
        }
        seen |= 1U << perm[k];
    }
    int32_t in_stride[TR_AXES];
    int32_t stride = 1;
    for (int32_t k = rank - 1; k >= 0; k--)
    {
        in_stride[k] = stride;
        stride *= in_dims[k];
    }
    /* Output axes innermost first, dropping extent-1 axes and merging an axis into the one
     * inside it when the input continues linearly across both. */
    int32_t extent[TR_AXES], strides[TR_AXES];
    int32_t n = 0;
    for (int32_t k = rank - 1; k >= 0; k--)
    {
        const int32_t e = in_dims[perm[k]];
        const int32_t s = in_stride[perm[k]];
        if (e == 1)
        {
            continue;
        }
        if (n > 0 && s == strides[n - 1] * extent[n - 1])
        {
            extent[n - 1] *= e;
            continue;
        }
        extent[n] = e;
        strides[n] = s;
        n++;
    }
    if (n == 0)
    {
        extent[0] = 1;
        strides[0] = 1;
        n = 1;
    }
    plan->axes = n;
    for (int32_t j = 0; j < n; j++)
    {
        plan->extent[j] = extent[n - 1 - j];
        plan->in_stride[j] = strides[n - 1 - j];
    }
    return ARM_CMSIS_NN_SUCCESS;
}

static inline __attribute__((always_inline)) arm_cmsis_nn_status
lay_transpose(const int8_t *input, int8_t *output, const cmsis_nn_dims *input_dims, const cmsis_nn_dims *output_dims,
              const cmsis_nn_transpose_params *params, lay_copy_fn copy, lay_gather_fn gather)
{
    tr_plan p;
    if (tr_make_plan(input_dims, output_dims, params, &p) != ARM_CMSIS_NN_SUCCESS)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    /* right-align to four axes so the loops always nest the same way */
    int32_t e[TR_AXES] = {1, 1, 1, 1};
    int32_t s[TR_AXES] = {0, 0, 0, 0};
    for (int32_t j = 0; j < p.axes; j++)
    {
        e[TR_AXES - p.axes + j] = p.extent[j];
        s[TR_AXES - p.axes + j] = p.in_stride[j];
    }
    for (int32_t i0 = 0; i0 < e[0]; i0++)
    {
        for (int32_t i1 = 0; i1 < e[1]; i1++)
        {
            const int8_t *src = input + i0 * s[0] + i1 * s[1];
            for (int32_t i2 = 0; i2 < e[2]; i2++)
            {
                if (s[3] == 1)
                {
                    copy(output, src, e[3]);
                }
                else
                {
                    gather(output, src, s[3], e[3]);
                }
                output += e[3];
                src += s[2];
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

arm_cmsis_nn_status rs_transpose_s8_scalar(RS_TRANSPOSE_ARGS)
{
    return lay_transpose(input, output, input_dims, output_dims, transpose_params, lay_copy_scalar,
                         lay_gather_scalar);
}

#if RS_HAVE_DSP
arm_cmsis_nn_status rs_transpose_s8_dsp(RS_TRANSPOSE_ARGS)
{
    return rs_transpose_s8_scalar(input, output, input_dims, output_dims, transpose_params);
}
#endif

#if RS_HAVE_MVE
arm_cmsis_nn_status rs_transpose_s8_mve(RS_TRANSPOSE_ARGS)
{
    return lay_transpose(input, output, input_dims, output_dims, transpose_params, lay_copy_mve, lay_gather_mve);
}
#endif

/* ------------------------------------------------------------------------------------------ */

#if RS_HAVE_MVE
    #define RS_PAD_IMPL rs_pad_s8_mve
    #define RS_TRANSPOSE_IMPL rs_transpose_s8_mve
#elif RS_HAVE_DSP
    #define RS_PAD_IMPL rs_pad_s8_dsp
    #define RS_TRANSPOSE_IMPL rs_transpose_s8_dsp
#else
    #define RS_PAD_IMPL rs_pad_s8_scalar
    #define RS_TRANSPOSE_IMPL rs_transpose_s8_scalar
#endif

arm_cmsis_nn_status arm_pad_s8(RS_PAD_ARGS)
{
    return RS_PAD_IMPL(input, output, pad_value, input_size, pre_pad, post_pad);
}

arm_cmsis_nn_status arm_transpose_s8(RS_TRANSPOSE_ARGS)
{
    return RS_TRANSPOSE_IMPL(input, output, input_dims, output_dims, transpose_params);
}
