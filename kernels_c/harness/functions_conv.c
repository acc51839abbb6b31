/*
 * refsim kernels_c harness: the convolution family's entries (function ids 0x10-0x1C), listed in
 * functions.c's table.
 *
 * Kernels (0x10-0x16) take the params of the enum below (the conformance-vector names of shared
 * VECTORS.md; the transpose convolutions add padding_offsets.h, padding_offsets.w), then
 * ctx.size, and five arrays: input, filter (int8), bias (int32, empty = NULL), multiplier, shift
 * (int32, C_OUT each). The variant picks the public function or one tier's. ctx.size -1 gives
 * ctx->buf exactly the bytes that function's get_buffer_size promises on that tier (NULL when 0),
 * ctx.size 0 a NULL ctx->buf; the transpose wrapper's reverse_conv_ctx always gets the
 * reverse-conv size. The kernels' own status is reported, so cases they reject are checked too.
 *
 * Buffer sizes (0x17-0x1C) take the same params and no arrays, and return the int32 size as
 * 4 output bytes: the public function for the default variant, the tier's size (kernels_py's
 * isa scalar / dsp / mve) otherwise, on any core (the sizes are host-callable).
 */
#include <stddef.h>

#include "arm_nnfunctions.h"
#include "functions.h"
#include "variants.h"

enum
{
    CV_INPUT_OFFSET,
    CV_OUTPUT_OFFSET,
    CV_STRIDE_H,
    CV_STRIDE_W,
    CV_PADDING_H,
    CV_PADDING_W,
    CV_DILATION_H,
    CV_DILATION_W,
    CV_ACT_MIN,
    CV_ACT_MAX,
    CV_INPUT_N,
    CV_INPUT_H,
    CV_INPUT_W,
    CV_INPUT_C,
    CV_FILTER_N,
    CV_FILTER_H,
    CV_FILTER_W,
    CV_FILTER_C,
    CV_OUTPUT_N,
    CV_OUTPUT_H,
    CV_OUTPUT_W,
    CV_OUTPUT_C,
    CV_SIZE_NUM_PARAMS, /* = RS_CONV_SIZE_NUM_PARAMS; the kernels add ctx.size */
    TC_PADDING_OFFSETS_H = CV_SIZE_NUM_PARAMS,
    TC_PADDING_OFFSETS_W,
    TC_SIZE_NUM_PARAMS, /* = RS_TRANSPOSE_CONV_SIZE_NUM_PARAMS; the kernels add ctx.size */
};

enum
{
    ARRAY_INPUT,
    ARRAY_FILTER,
    ARRAY_BIAS,
    ARRAY_MULTIPLIER,
    ARRAY_SHIFT,
};

const uint8_t rs_conv_dtypes[RS_CONV_NUM_ARRAYS] = {RS_DTYPE_INT8, RS_DTYPE_INT8, RS_DTYPE_INT32, RS_DTYPE_INT32,
                                                    RS_DTYPE_INT32};

#if RS_HAVE_DSP
    #define CONV_DSP_OR_NULL(fn) RS_TIER_FN(fn)
#else
    #define CONV_DSP_OR_NULL(fn) NULL
#endif
#if RS_HAVE_MVE
    #define CONV_MVE_OR_NULL(fn) RS_TIER_FN(fn)
#else
    #define CONV_MVE_OR_NULL(fn) NULL
#endif
#define CONV_VARIANTS(public_fn, stem)                                                                             \
    {                                                                                                              \
        public_fn, RS_TIER_FN(stem##_scalar), CONV_DSP_OR_NULL(stem##_dsp), CONV_MVE_OR_NULL(stem##_mve)                       \
    }

#if RS_HAVE_MVE
    #define CONV_BUILD_TIER RS_VARIANT_MVE
#elif RS_HAVE_DSP
    #define CONV_BUILD_TIER RS_VARIANT_DSP
#else
    #define CONV_BUILD_TIER RS_VARIANT_SCALAR
#endif

typedef arm_cmsis_nn_status (*convolve_fn)(RS_CONVOLVE_ARGS);
typedef arm_cmsis_nn_status (*convolve_wrapper_fn)(RS_CONVOLVE_WRAPPER_ARGS);
typedef arm_cmsis_nn_status (*transpose_conv_fn)(RS_TRANSPOSE_CONV_ARGS);

static const convolve_fn convolve_variants[4] = CONV_VARIANTS(arm_convolve_s8, rs_convolve_s8);
static const convolve_wrapper_fn wrapper_variants[4] = CONV_VARIANTS(arm_convolve_wrapper_s8, rs_convolve_wrapper_s8);
static const convolve_wrapper_fn conv_1x1_fast_variants[4] =
    CONV_VARIANTS(arm_convolve_1x1_s8_fast, rs_convolve_1x1_s8_fast);
static const convolve_wrapper_fn conv_1x1_variants[4] = CONV_VARIANTS(arm_convolve_1x1_s8, rs_convolve_1x1_s8);
static const convolve_wrapper_fn conv_1_x_n_variants[4] = CONV_VARIANTS(arm_convolve_1_x_n_s8, rs_convolve_1_x_n_s8);
static const transpose_conv_fn transpose_variants[4] = CONV_VARIANTS(arm_transpose_conv_s8, rs_transpose_conv_s8);
static const transpose_conv_fn transpose_wrapper_variants[4] =
    CONV_VARIANTS(arm_transpose_conv_wrapper_s8, rs_transpose_conv_wrapper_s8);

static bool is_transpose(uint16_t id)
{
    return id == RS_FN_TRANSPOSE_CONV_S8 || id == RS_FN_TRANSPOSE_CONV_WRAPPER_S8 ||
           id == RS_FN_TRANSPOSE_CONV_S8_GET_BUFFER_SIZE || id == RS_FN_TRANSPOSE_CONV_S8_GET_REVERSE_CONV_BUFFER_SIZE;
}

/** The CMSIS-NN argument structs of one case. */
typedef struct
{
    cmsis_nn_conv_params conv;
    cmsis_nn_transpose_conv_params transpose;
    cmsis_nn_per_channel_quant_params quant;
    cmsis_nn_dims input, filter, bias, output;
} conv_args;

static conv_args conv_args_of(const rs_case *c)
{
    const int32_t *p = c->params;
    const cmsis_nn_activation act = {p[CV_ACT_MIN], p[CV_ACT_MAX]};
    const cmsis_nn_tile stride = {p[CV_STRIDE_W], p[CV_STRIDE_H]};
    const cmsis_nn_tile padding = {p[CV_PADDING_W], p[CV_PADDING_H]};
    const cmsis_nn_tile dilation = {p[CV_DILATION_W], p[CV_DILATION_H]};
    conv_args a;
    a.conv = (cmsis_nn_conv_params){p[CV_INPUT_OFFSET], p[CV_OUTPUT_OFFSET], stride, padding, dilation, act};
    const cmsis_nn_tile offsets = is_transpose(c->function_id)
                                      ? (cmsis_nn_tile){p[TC_PADDING_OFFSETS_W], p[TC_PADDING_OFFSETS_H]}
                                      : (cmsis_nn_tile){0, 0};
    a.transpose = (cmsis_nn_transpose_conv_params){
        p[CV_INPUT_OFFSET], p[CV_OUTPUT_OFFSET], stride, padding, offsets, dilation, act};
    a.quant = (cmsis_nn_per_channel_quant_params){NULL, NULL};
    if (c->num_arrays == RS_CONV_NUM_ARRAYS)
    {
        a.quant.multiplier = (int32_t *)c->array[ARRAY_MULTIPLIER];
        a.quant.shift = (int32_t *)c->array[ARRAY_SHIFT];
    }
    a.input = (cmsis_nn_dims){p[CV_INPUT_N], p[CV_INPUT_H], p[CV_INPUT_W], p[CV_INPUT_C]};
    a.filter = (cmsis_nn_dims){p[CV_FILTER_N], p[CV_FILTER_H], p[CV_FILTER_W], p[CV_FILTER_C]};
    a.bias = (cmsis_nn_dims){1, 1, 1, p[CV_OUTPUT_C]};
    a.output = (cmsis_nn_dims){p[CV_OUTPUT_N], p[CV_OUTPUT_H], p[CV_OUTPUT_W], p[CV_OUTPUT_C]};
    return a;
}

/** n * h * w * c when every extent is in [1, 2^16) and the product below 2^24, else 0. */
static uint32_t volume(const int32_t *nhwc)
{
    uint32_t v = 1;
    for (int i = 0; i < 4; i++)
    {
        if (nhwc[i] < 1 || nhwc[i] > 0xFFFF)
        {
            return 0;
        }
        v *= (uint32_t)nhwc[i];
        if (v >= (1U << 24))
        {
            return 0;
        }
    }
    return v;
}

/* ------------------------------------------------------------------------------------------ */
/* Scratch bytes of the function and tier a case runs.                                         */

static int32_t tier_of(const rs_case *c) { return c->variant == RS_VARIANT_DEFAULT ? CONV_BUILD_TIER : c->variant; }

#if RS_PUBLIC_API_ONLY
    #define CONV_TIER_SIZE(call) 0 /* a library build runs public functions only */
#else
    #define CONV_TIER_SIZE(call) call
#endif

/** ctx bytes (and *reverse_bytes for the transpose wrapper) the case's function promises. */
static int32_t scratch_of(const rs_case *c, const conv_args *a, int32_t *reverse_bytes)
{
    const int32_t tier = tier_of(c);
    const bool public_fn = c->variant == RS_VARIANT_DEFAULT;
    (void)tier;
    *reverse_bytes = 0;
    switch (c->function_id)
    {
    case RS_FN_CONVOLVE_S8:
        return public_fn ? arm_convolve_s8_get_buffer_size(&a->input, &a->filter)
                         : CONV_TIER_SIZE(rs_convolve_s8_buffer_size_tier(tier, &a->input, &a->filter));
    case RS_FN_CONVOLVE_WRAPPER_S8:
        return public_fn ? arm_convolve_wrapper_s8_get_buffer_size(&a->conv, &a->input, &a->filter, &a->output)
                         : CONV_TIER_SIZE(rs_convolve_wrapper_s8_buffer_size_tier(tier, &a->conv, &a->input, &a->filter,
                                                                                  &a->output));
    case RS_FN_CONVOLVE_1X1_S8_FAST:
        return public_fn ? arm_convolve_1x1_s8_fast_get_buffer_size(&a->input)
                         : CONV_TIER_SIZE(rs_convolve_1x1_s8_fast_buffer_size_tier(tier, &a->input));
    case RS_FN_CONVOLVE_1_X_N_S8:
        return public_fn ? arm_convolve_1_x_n_s8_get_buffer_size(&a->conv, &a->input, &a->filter, &a->output)
                         : CONV_TIER_SIZE(rs_convolve_1_x_n_s8_buffer_size_tier(tier, &a->conv, &a->input, &a->filter,
                                                                                &a->output));
    case RS_FN_TRANSPOSE_CONV_WRAPPER_S8:
        *reverse_bytes = arm_transpose_conv_s8_get_reverse_conv_buffer_size(&a->transpose, &a->input, &a->filter);
        /* fall through */
    case RS_FN_TRANSPOSE_CONV_S8:
        return public_fn ? arm_transpose_conv_s8_get_buffer_size(&a->transpose, &a->input, &a->filter, &a->output)
                         : CONV_TIER_SIZE(rs_transpose_conv_s8_buffer_size_tier(tier, &a->transpose, &a->input,
                                                                                &a->filter, &a->output));
    default: /* arm_convolve_1x1_s8: no scratch */
        return 0;
    }
}

static uint32_t align4(int32_t n) { return n > 0 ? ((uint32_t)n + 3U) & ~3U : 0U; }

uint16_t rs_check_conv(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    const int32_t *p = c->params;
    const uint32_t input = volume(p + CV_INPUT_N);
    const uint32_t filter = volume(p + CV_FILTER_N);
    const uint32_t output = volume(p + CV_OUTPUT_N);
    const int32_t out_c = p[CV_OUTPUT_C];
    if (input == 0 || filter == 0 || output == 0 || c->count[ARRAY_INPUT] != input ||
        c->count[ARRAY_FILTER] != filter || (c->count[ARRAY_BIAS] != 0 && c->count[ARRAY_BIAS] != (uint32_t)out_c) ||
        c->count[ARRAY_MULTIPLIER] != (uint32_t)out_c || c->count[ARRAY_SHIFT] != (uint32_t)out_c ||
        p[CV_FILTER_N] != out_c || p[CV_OUTPUT_N] != p[CV_INPUT_N])
    {
        return RS_CASE_BAD_ARGS;
    }
    const conv_args a = conv_args_of(c);
    int32_t reverse_bytes;
    const int32_t bytes = scratch_of(c, &a, &reverse_bytes);
    *output_bytes = output;
    *scratch_bytes = align4(bytes) + align4(reverse_bytes);
    return RS_CASE_OK;
}

uint16_t rs_run_conv(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const conv_args a = conv_args_of(c);
    const int8_t *input = c->array[ARRAY_INPUT];
    const int8_t *filter = c->array[ARRAY_FILTER];
    const int32_t *bias = c->count[ARRAY_BIAS] != 0 ? c->array[ARRAY_BIAS] : NULL;
    int32_t reverse_bytes;
    const int32_t bytes = scratch_of(c, &a, &reverse_bytes);
    const bool no_buffer = c->params[c->num_params - 1] == 0; /* ctx.size: 0 = NULL, -1 = promised */
    const cmsis_nn_context ctx = {bytes > 0 && !no_buffer ? mem->scratch : NULL, bytes > 0 && !no_buffer ? bytes : 0};
    const cmsis_nn_context reverse_ctx = {reverse_bytes > 0 ? mem->scratch + align4(bytes) : NULL,
                                          reverse_bytes > 0 ? reverse_bytes : 0};
    const uint8_t v = c->variant;
    arm_cmsis_nn_status status;
    switch (c->function_id)
    {
    case RS_FN_CONVOLVE_S8:
        if (convolve_variants[v] == NULL)
        {
            return RS_CASE_NO_VARIANT;
        }
        rs_kernel_begin();
        status = convolve_variants[v](&ctx, &a.conv, &a.quant, &a.input, input, &a.filter, filter, &a.bias, bias, NULL,
                                      &a.output, mem->output);
        rs_kernel_end();
        break;
    case RS_FN_TRANSPOSE_CONV_S8:
    case RS_FN_TRANSPOSE_CONV_WRAPPER_S8:
    {
        const transpose_conv_fn fn = c->function_id == RS_FN_TRANSPOSE_CONV_S8 ? transpose_variants[v]
                                                                               : transpose_wrapper_variants[v];
        if (fn == NULL)
        {
            return RS_CASE_NO_VARIANT;
        }
        rs_kernel_begin();
        status = fn(&ctx, &reverse_ctx, &a.transpose, &a.quant, &a.input, input, &a.filter, filter, &a.bias, bias,
                    &a.output, mem->output);
        rs_kernel_end();
        break;
    }
    default:
    {
        const convolve_wrapper_fn *table = c->function_id == RS_FN_CONVOLVE_WRAPPER_S8     ? wrapper_variants
                                           : c->function_id == RS_FN_CONVOLVE_1X1_S8_FAST ? conv_1x1_fast_variants
                                           : c->function_id == RS_FN_CONVOLVE_1X1_S8      ? conv_1x1_variants
                                                                                          : conv_1_x_n_variants;
        if (table[v] == NULL)
        {
            return RS_CASE_NO_VARIANT;
        }
        rs_kernel_begin();
        status = table[v](&ctx, &a.conv, &a.quant, &a.input, input, &a.filter, filter, &a.bias, bias, &a.output,
                          mem->output);
        rs_kernel_end();
        break;
    }
    }
    *kernel_status = status;
    return RS_CASE_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Buffer-size queries.                                                                        */

uint16_t rs_check_conv_buffer_size(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    (void)c;
    *output_bytes = sizeof(int32_t);
    *scratch_bytes = 0;
    return RS_CASE_OK;
}

/** A size query's answer from its public CMSIS-NN function. */
static int32_t conv_size_public(uint16_t id, const conv_args *a)
{
    switch (id)
    {
    case RS_FN_CONVOLVE_WRAPPER_S8_GET_BUFFER_SIZE:
        return arm_convolve_wrapper_s8_get_buffer_size(&a->conv, &a->input, &a->filter, &a->output);
    case RS_FN_CONVOLVE_S8_GET_BUFFER_SIZE:
        return arm_convolve_s8_get_buffer_size(&a->input, &a->filter);
    case RS_FN_CONVOLVE_1_X_N_S8_GET_BUFFER_SIZE:
        return arm_convolve_1_x_n_s8_get_buffer_size(&a->conv, &a->input, &a->filter, &a->output);
    case RS_FN_CONVOLVE_1X1_S8_FAST_GET_BUFFER_SIZE:
        return arm_convolve_1x1_s8_fast_get_buffer_size(&a->input);
    case RS_FN_TRANSPOSE_CONV_S8_GET_BUFFER_SIZE:
        return arm_transpose_conv_s8_get_buffer_size(&a->transpose, &a->input, &a->filter, &a->output);
    default: /* RS_FN_TRANSPOSE_CONV_S8_GET_REVERSE_CONV_BUFFER_SIZE: tier-independent */
        return arm_transpose_conv_s8_get_reverse_conv_buffer_size(&a->transpose, &a->input, &a->filter);
    }
}

#if RS_PUBLIC_API_ONLY
/* A library build asks public functions only (harness.c answers RS_CASE_NO_VARIANT for a tier). */
static int32_t conv_size_tier(uint16_t id, int32_t tier, const conv_args *a)
{
    (void)id;
    (void)tier;
    (void)a;
    return 0;
}
#else
/** A size query's answer for one tier: CMSIS-NN's host-callable tier function where it has one. */
static int32_t conv_size_tier(uint16_t id, int32_t tier, const conv_args *a)
{
    switch (id)
    {
    case RS_FN_CONVOLVE_WRAPPER_S8_GET_BUFFER_SIZE:
        return tier == RS_VARIANT_MVE   ? arm_convolve_wrapper_s8_get_buffer_size_mve(&a->conv, &a->input, &a->filter,
                                                                                      &a->output)
               : tier == RS_VARIANT_DSP ? arm_convolve_wrapper_s8_get_buffer_size_dsp(&a->conv, &a->input, &a->filter,
                                                                                      &a->output)
                                        : rs_convolve_wrapper_s8_buffer_size_tier(tier, &a->conv, &a->input, &a->filter,
                                                                                  &a->output);
    case RS_FN_CONVOLVE_S8_GET_BUFFER_SIZE:
        return tier == RS_VARIANT_MVE ? arm_convolve_s8_get_buffer_size_mve(&a->input, &a->filter)
                                      : rs_convolve_s8_buffer_size_tier(tier, &a->input, &a->filter);
    case RS_FN_CONVOLVE_1_X_N_S8_GET_BUFFER_SIZE:
        return rs_convolve_1_x_n_s8_buffer_size_tier(tier, &a->conv, &a->input, &a->filter, &a->output);
    case RS_FN_CONVOLVE_1X1_S8_FAST_GET_BUFFER_SIZE:
        return rs_convolve_1x1_s8_fast_buffer_size_tier(tier, &a->input);
    case RS_FN_TRANSPOSE_CONV_S8_GET_BUFFER_SIZE:
        return tier == RS_VARIANT_MVE
                   ? arm_transpose_conv_s8_get_buffer_size_mve(&a->transpose, &a->input, &a->filter, &a->output)
                   : rs_transpose_conv_s8_buffer_size_tier(tier, &a->transpose, &a->input, &a->filter, &a->output);
    default:
        return conv_size_public(id, a);
    }
}
#endif

uint16_t rs_run_conv_buffer_size(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const conv_args a = conv_args_of(c);
    const int32_t size = c->variant == RS_VARIANT_DEFAULT ? conv_size_public(c->function_id, &a)
                                                          : conv_size_tier(c->function_id, tier_of(c), &a);
    rs_kernel_begin();
    memcpy(mem->output, &size, sizeof(size));
    rs_kernel_end();
    *kernel_status = ARM_CMSIS_NN_SUCCESS;
    return RS_CASE_OK;
}
