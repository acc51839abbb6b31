/*
 * refsim kernels_c harness: depthwise convolution and pooling entries (ids 0x20-0x2F), listed in
 * functions.c's table. Parameter orders are those of refsim/qemu/batch.py FUNCTIONS; the names are
 * the conformance-vector names of shared VECTORS.md, plus `ctx.size`: -1 gives the kernel the
 * scratch its variant's *_get_buffer_size() asks for (a runtime's normal call), 0 a NULL ctx->buf
 * (to check the kernels that reject it), n > 0 exactly n bytes.
 *
 * The *_get_buffer_size entries run no kernel: their output is the returned size as 4 bytes
 * (little-endian int32). Their variants are the build's function (default), a scalar build's
 * answer (scalar, always 0), and the host-callable _dsp / _mve functions, on every core.
 */
#include <stddef.h>

#include "arm_nnfunctions.h"
#include "functions.h"
#include "variants.h"

#if RS_HAVE_DSP
    #define DWP_DSP_OR_NULL(fn) RS_TIER_FN(fn)
#else
    #define DWP_DSP_OR_NULL(fn) NULL
#endif
#if RS_HAVE_MVE
    #define DWP_MVE_OR_NULL(fn) RS_TIER_FN(fn)
#else
    #define DWP_MVE_OR_NULL(fn) NULL
#endif
#define DWP_VARIANTS(public_fn, stem)                                                                              \
    {public_fn, RS_TIER_FN(stem##_scalar), DWP_DSP_OR_NULL(stem##_dsp), DWP_MVE_OR_NULL(stem##_mve)}

/** Largest tensor a case may describe (bytes); every dimension is also at most 0xFFFF. */
#define DWP_MAX_ELEMENTS (8U << 20)

/** n0 * n1 * n2 * n3 if every factor is in [1, 0xFFFF] and the product at most DWP_MAX_ELEMENTS, else 0. */
static uint32_t dwp_elements(int32_t n0, int32_t n1, int32_t n2, int32_t n3)
{
    const int32_t dims[4] = {n0, n1, n2, n3};
    uint64_t product = 1;
    for (int i = 0; i < 4; i++)
    {
        if (dims[i] < 1 || dims[i] > 0xFFFF)
        {
            return 0;
        }
        product *= (uint64_t)dims[i];
    }
    return product <= DWP_MAX_ELEMENTS ? (uint32_t)product : 0;
}

/** The ctx a case asks for: `requested` < 0 the variant's own size, 0 NULL, n > 0 n bytes. */
static cmsis_nn_context dwp_context(int32_t requested, int32_t variant_size, const rs_case_memory *mem)
{
    const int32_t size = requested < 0 ? variant_size : requested;
    const cmsis_nn_context ctx = {size > 0 ? mem->scratch : NULL, size};
    return ctx;
}

static uint16_t dwp_output_size(int32_t size, const rs_case_memory *mem, int32_t *kernel_status)
{
    const uint32_t value = (uint32_t)size;
    for (int i = 0; i < 4; i++)
    {
        mem->output[i] = (int8_t)(uint8_t)(value >> (8 * i));
    }
    *kernel_status = ARM_CMSIS_NN_SUCCESS;
    return RS_CASE_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Depthwise: input_offset, output_offset, ch_mult, stride.h, stride.w, padding.h, padding.w,  */
/* dilation.h, dilation.w, activation.min, activation.max, input_dims.{n,h,w,c},               */
/* filter_dims.{n,h,w,c}, output_dims.{n,h,w,c}, ctx.size; arrays input, filter (int8),        */
/* bias (int32, empty = NULL), multiplier, shift (int32 [output_dims.c]).                      */

enum
{
    DW_INPUT_OFFSET,
    DW_OUTPUT_OFFSET,
    DW_CH_MULT,
    DW_STRIDE_H,
    DW_STRIDE_W,
    DW_PAD_H,
    DW_PAD_W,
    DW_DIL_H,
    DW_DIL_W,
    DW_ACT_MIN,
    DW_ACT_MAX,
    DW_IN_N,
    DW_IN_H,
    DW_IN_W,
    DW_IN_C,
    DW_FILTER_N,
    DW_FILTER_H,
    DW_FILTER_W,
    DW_FILTER_C,
    DW_OUT_N,
    DW_OUT_H,
    DW_OUT_W,
    DW_OUT_C,
    DW_CTX_SIZE,
};

const uint8_t rs_depthwise_dtypes[RS_DEPTHWISE_NUM_ARRAYS] = {RS_DTYPE_INT8, RS_DTYPE_INT8, RS_DTYPE_INT32,
                                                              RS_DTYPE_INT32, RS_DTYPE_INT32};

typedef struct
{
    cmsis_nn_dw_conv_params params;
    cmsis_nn_dims input_dims, filter_dims, bias_dims, output_dims;
} dwp_depthwise;

static dwp_depthwise dwp_depthwise_unpack(const int32_t *p)
{
    const dwp_depthwise d = {
        {p[DW_INPUT_OFFSET],
         p[DW_OUTPUT_OFFSET],
         p[DW_CH_MULT],
         {p[DW_STRIDE_W], p[DW_STRIDE_H]},
         {p[DW_PAD_W], p[DW_PAD_H]},
         {p[DW_DIL_W], p[DW_DIL_H]},
         {p[DW_ACT_MIN], p[DW_ACT_MAX]}},
        {p[DW_IN_N], p[DW_IN_H], p[DW_IN_W], p[DW_IN_C]},
        {p[DW_FILTER_N], p[DW_FILTER_H], p[DW_FILTER_W], p[DW_FILTER_C]},
        {1, 1, 1, p[DW_OUT_C]},
        {p[DW_OUT_N], p[DW_OUT_H], p[DW_OUT_W], p[DW_OUT_C]},
    };
    return d;
}

/** Shapes every depthwise entry accepts: consistent dims (the kernels then stay inside the arrays). */
static int dwp_depthwise_shapes_ok(const int32_t *p)
{
    const int32_t out_c = p[DW_OUT_C];
    return dwp_elements(p[DW_IN_N], p[DW_IN_H], p[DW_IN_W], p[DW_IN_C]) != 0 &&
           dwp_elements(p[DW_FILTER_N], p[DW_FILTER_H], p[DW_FILTER_W], p[DW_FILTER_C]) != 0 &&
           dwp_elements(p[DW_OUT_N], p[DW_OUT_H], p[DW_OUT_W], p[DW_OUT_C]) != 0 && p[DW_FILTER_N] == 1 &&
           p[DW_CH_MULT] >= 1 && p[DW_FILTER_C] == out_c && p[DW_IN_C] * p[DW_CH_MULT] == out_c &&
           p[DW_OUT_N] == p[DW_IN_N] && p[DW_STRIDE_H] >= 1 && p[DW_STRIDE_W] >= 1 && p[DW_DIL_H] >= 1 &&
           p[DW_DIL_W] >= 1 && p[DW_PAD_H] >= 0 && p[DW_PAD_W] >= 0 && p[DW_PAD_H] <= 0x7FFF &&
           p[DW_PAD_W] <= 0x7FFF && p[DW_STRIDE_H] <= 0xFFFF && p[DW_STRIDE_W] <= 0xFFFF &&
           p[DW_DIL_H] <= 0xFFFF && p[DW_DIL_W] <= 0xFFFF;
}

/** Scratch bytes of a depthwise case's variant (RS_VARIANT_*), by the entry's sizer. */
typedef int32_t (*dwp_depthwise_sizer)(const dwp_depthwise *d, uint8_t variant);

static int32_t dwp_size_none(const dwp_depthwise *d, uint8_t variant)
{
    (void)d;
    (void)variant;
    return 0;
}

static int32_t dwp_size_wrapper(const dwp_depthwise *d, uint8_t variant)
{
    switch (variant)
    {
    case RS_VARIANT_DEFAULT:
        return arm_depthwise_conv_wrapper_s8_get_buffer_size(&d->params, &d->input_dims, &d->filter_dims,
                                                             &d->output_dims);
    case RS_VARIANT_DSP:
        return arm_depthwise_conv_wrapper_s8_get_buffer_size_dsp(&d->params, &d->input_dims, &d->filter_dims,
                                                                 &d->output_dims);
    case RS_VARIANT_MVE:
        return arm_depthwise_conv_wrapper_s8_get_buffer_size_mve(&d->params, &d->input_dims, &d->filter_dims,
                                                                 &d->output_dims);
    default:
        return 0; /* a scalar CMSIS-NN build */
    }
}

static int32_t dwp_size_opt(const dwp_depthwise *d, uint8_t variant)
{
    switch (variant)
    {
    case RS_VARIANT_DEFAULT:
        return arm_depthwise_conv_s8_opt_get_buffer_size(&d->input_dims, &d->filter_dims);
#if !RS_PUBLIC_API_ONLY /* kernels_c's own tier queries (CMSIS-NN has only the public one) */
    case RS_VARIANT_DSP:
        return arm_depthwise_conv_s8_opt_get_buffer_size_dsp(&d->input_dims, &d->filter_dims);
    case RS_VARIANT_MVE:
        return arm_depthwise_conv_s8_opt_get_buffer_size_mve(&d->input_dims, &d->filter_dims);
#endif
    default:
        return 0;
    }
}

static dwp_depthwise_sizer dwp_depthwise_sizer_of(uint16_t id)
{
    switch (id)
    {
    case RS_FN_DEPTHWISE_CONV_WRAPPER_S8:
        return dwp_size_wrapper;
    case RS_FN_DEPTHWISE_CONV_S8_OPT:
        return dwp_size_opt;
    default:
        return dwp_size_none;
    }
}

uint16_t rs_check_depthwise(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    const int32_t *p = c->params;
    if (!dwp_depthwise_shapes_ok(p))
    {
        return RS_CASE_BAD_ARGS;
    }
    const uint32_t out_c = (uint32_t)p[DW_OUT_C];
    if (c->count[0] != dwp_elements(p[DW_IN_N], p[DW_IN_H], p[DW_IN_W], p[DW_IN_C]) ||
        c->count[1] != dwp_elements(1, p[DW_FILTER_H], p[DW_FILTER_W], p[DW_FILTER_C]) ||
        (c->count[2] != 0 && c->count[2] != out_c) || c->count[3] != out_c || c->count[4] != out_c)
    {
        return RS_CASE_BAD_ARGS;
    }
    const dwp_depthwise d = dwp_depthwise_unpack(p);
    const int32_t scratch = p[DW_CTX_SIZE] < 0 ? dwp_depthwise_sizer_of(c->function_id)(&d, c->variant)
                                               : p[DW_CTX_SIZE];
    *output_bytes = dwp_elements(p[DW_OUT_N], p[DW_OUT_H], p[DW_OUT_W], p[DW_OUT_C]);
    *scratch_bytes = (uint32_t)(scratch > 0 ? scratch : 0);
    return RS_CASE_OK;
}

typedef arm_cmsis_nn_status (*dwp_depthwise_fn)(RS_DEPTHWISE_CONV_ARGS);

static const dwp_depthwise_fn dwp_wrapper_variants[4] =
    DWP_VARIANTS(arm_depthwise_conv_wrapper_s8, rs_depthwise_conv_wrapper_s8);
static const dwp_depthwise_fn dwp_generic_variants[4] = DWP_VARIANTS(arm_depthwise_conv_s8, rs_depthwise_conv_s8);
static const dwp_depthwise_fn dwp_3x3_variants[4] = DWP_VARIANTS(arm_depthwise_conv_3x3_s8, rs_depthwise_conv_3x3_s8);
static const dwp_depthwise_fn dwp_opt_variants[4] = DWP_VARIANTS(arm_depthwise_conv_s8_opt, rs_depthwise_conv_s8_opt);

static const dwp_depthwise_fn *dwp_depthwise_variants_of(uint16_t id)
{
    switch (id)
    {
    case RS_FN_DEPTHWISE_CONV_WRAPPER_S8:
        return dwp_wrapper_variants;
    case RS_FN_DEPTHWISE_CONV_3X3_S8:
        return dwp_3x3_variants;
    case RS_FN_DEPTHWISE_CONV_S8_OPT:
        return dwp_opt_variants;
    default:
        return dwp_generic_variants;
    }
}

uint16_t rs_run_depthwise(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const dwp_depthwise_fn fn = dwp_depthwise_variants_of(c->function_id)[c->variant];
    if (fn == NULL)
    {
        return RS_CASE_NO_VARIANT;
    }
    const dwp_depthwise d = dwp_depthwise_unpack(c->params);
    const cmsis_nn_context ctx = dwp_context(c->params[DW_CTX_SIZE], (int32_t)mem->scratch_bytes, mem);
    const cmsis_nn_per_channel_quant_params quant = {(int32_t *)c->array[3], (int32_t *)c->array[4]};
    const int32_t *bias = c->count[2] != 0 ? c->array[2] : NULL;
    rs_kernel_begin();
    *kernel_status = fn(&ctx, &d.params, &quant, &d.input_dims, c->array[0], &d.filter_dims, c->array[1],
                        &d.bias_dims, bias, &d.output_dims, mem->output);
    rs_kernel_end();
    return RS_CASE_OK;
}

/* The sizer entries take the depthwise parameters without ctx.size, and no arrays. */

uint16_t rs_check_buffer_size_query(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    (void)c;
    *output_bytes = 4;
    *scratch_bytes = 0;
    return RS_CASE_OK;
}

uint16_t rs_run_depthwise_buffer_size(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const dwp_depthwise d = dwp_depthwise_unpack(c->params);
    const dwp_depthwise_sizer sizer =
        c->function_id == RS_FN_DEPTHWISE_CONV_WRAPPER_S8_GET_BUFFER_SIZE ? dwp_size_wrapper : dwp_size_opt;
    return dwp_output_size(sizer(&d, c->variant), mem, kernel_status);
}

/* ------------------------------------------------------------------------------------------ */
/* Pooling: stride.h, stride.w, padding.h, padding.w, activation.min, activation.max,         */
/* filter_dims.h, filter_dims.w, input_dims.{n,h,w,c}, output_dims.{n,h,w,c}, ctx.size;        */
/* array input (int8). arm_avgpool_s8 reads one image: input_dims.n must be 1.                 */

enum
{
    POOL_STRIDE_H,
    POOL_STRIDE_W,
    POOL_PAD_H,
    POOL_PAD_W,
    POOL_ACT_MIN,
    POOL_ACT_MAX,
    POOL_FILTER_H,
    POOL_FILTER_W,
    POOL_IN_N,
    POOL_IN_H,
    POOL_IN_W,
    POOL_IN_C,
    POOL_OUT_N,
    POOL_OUT_H,
    POOL_OUT_W,
    POOL_OUT_C,
    POOL_CTX_SIZE,
};

typedef struct
{
    cmsis_nn_pool_params params;
    cmsis_nn_dims input_dims, filter_dims, output_dims;
} dwp_pool;

static dwp_pool dwp_pool_unpack(const int32_t *p)
{
    const dwp_pool d = {
        {{p[POOL_STRIDE_W], p[POOL_STRIDE_H]}, {p[POOL_PAD_W], p[POOL_PAD_H]}, {p[POOL_ACT_MIN], p[POOL_ACT_MAX]}},
        {p[POOL_IN_N], p[POOL_IN_H], p[POOL_IN_W], p[POOL_IN_C]},
        {1, p[POOL_FILTER_H], p[POOL_FILTER_W], 1},
        {p[POOL_OUT_N], p[POOL_OUT_H], p[POOL_OUT_W], p[POOL_OUT_C]},
    };
    return d;
}

static int32_t dwp_pool_size(uint16_t id, const int32_t *p, uint8_t variant)
{
    if (id != RS_FN_AVGPOOL_S8)
    {
        return 0;
    }
    switch (variant)
    {
    case RS_VARIANT_DEFAULT:
        return arm_avgpool_s8_get_buffer_size(p[POOL_OUT_W], p[POOL_IN_C]);
    case RS_VARIANT_DSP:
        return arm_avgpool_s8_get_buffer_size_dsp(p[POOL_OUT_W], p[POOL_IN_C]);
    case RS_VARIANT_MVE:
        return arm_avgpool_s8_get_buffer_size_mve(p[POOL_OUT_W], p[POOL_IN_C]);
    default:
        return 0;
    }
}

uint16_t rs_check_pool(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    const int32_t *p = c->params;
    const uint32_t input = dwp_elements(p[POOL_IN_N], p[POOL_IN_H], p[POOL_IN_W], p[POOL_IN_C]);
    const uint32_t output = dwp_elements(p[POOL_OUT_N], p[POOL_OUT_H], p[POOL_OUT_W], p[POOL_OUT_C]);
    if (input == 0 || output == 0 || dwp_elements(1, p[POOL_FILTER_H], p[POOL_FILTER_W], 1) == 0 ||
        p[POOL_OUT_N] != p[POOL_IN_N] || p[POOL_OUT_C] != p[POOL_IN_C] || p[POOL_STRIDE_H] < 1 ||
        p[POOL_STRIDE_W] < 1 || p[POOL_STRIDE_H] > 0xFFFF || p[POOL_STRIDE_W] > 0xFFFF || p[POOL_PAD_H] < 0 ||
        p[POOL_PAD_W] < 0 || p[POOL_PAD_H] > 0x7FFF || p[POOL_PAD_W] > 0x7FFF || c->count[0] != input)
    {
        return RS_CASE_BAD_ARGS;
    }
    const int32_t scratch = p[POOL_CTX_SIZE] < 0 ? dwp_pool_size(c->function_id, p, c->variant) : p[POOL_CTX_SIZE];
    *output_bytes = output;
    *scratch_bytes = (uint32_t)(scratch > 0 ? scratch : 0);
    return RS_CASE_OK;
}

typedef arm_cmsis_nn_status (*dwp_pool_fn)(RS_POOL_ARGS);
static const dwp_pool_fn dwp_avgpool_variants[4] = DWP_VARIANTS(arm_avgpool_s8, rs_avgpool_s8);
static const dwp_pool_fn dwp_max_pool_variants[4] = DWP_VARIANTS(arm_max_pool_s8, rs_max_pool_s8);

uint16_t rs_run_pool(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const dwp_pool_fn fn =
        (c->function_id == RS_FN_AVGPOOL_S8 ? dwp_avgpool_variants : dwp_max_pool_variants)[c->variant];
    if (fn == NULL)
    {
        return RS_CASE_NO_VARIANT;
    }
    const dwp_pool d = dwp_pool_unpack(c->params);
    const cmsis_nn_context ctx = dwp_context(c->params[POOL_CTX_SIZE], (int32_t)mem->scratch_bytes, mem);
    rs_kernel_begin();
    *kernel_status = fn(&ctx, &d.params, &d.input_dims, c->array[0], &d.filter_dims, &d.output_dims, mem->output);
    rs_kernel_end();
    return RS_CASE_OK;
}

/* arm_avgpool_s8_get_buffer_size: output_dims.w, input_dims.c; no arrays. */

uint16_t rs_run_avgpool_buffer_size(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const int32_t *p = c->params;
    int32_t size = 0;
    switch (c->variant)
    {
    case RS_VARIANT_DEFAULT:
        size = arm_avgpool_s8_get_buffer_size(p[0], p[1]);
        break;
    case RS_VARIANT_DSP:
        size = arm_avgpool_s8_get_buffer_size_dsp(p[0], p[1]);
        break;
    case RS_VARIANT_MVE:
        size = arm_avgpool_s8_get_buffer_size_mve(p[0], p[1]);
        break;
    default:
        break;
    }
    return dwp_output_size(size, mem, kernel_status);
}
