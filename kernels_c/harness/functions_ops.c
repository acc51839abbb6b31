/*
 * refsim kernels_c harness: softmax, batch matmul, per-channel fully connected, kernel sums,
 * maximum / minimum, ReLU6, pad, transpose and the LUT activation (ids 0x30-0x4F), listed in
 * functions.c's table. Parameter orders are those of refsim/qemu/batch.py FUNCTIONS; the names are
 * the conformance-vector names of shared VECTORS.md, plus:
 *   - `ctx.size` (batch matmul, per-channel FC): -1 gives the kernel the scratch its variant's
 *     buffer-size function asks for (a runtime's normal call), 0 a NULL ctx->buf, n > 0 n bytes;
 *   - `permutations[0..3]` (transpose): the permutation list, padded to four entries.
 * Sizes and shapes in the params are checked against the arrays only as far as the harness needs
 * to size the output; consistency between dims is the kernel's to check (and report).
 */
#include <stddef.h>
#include <string.h>

#include "arm_nnfunctions.h"
#include "functions.h"
#include "variants.h"

#if RS_HAVE_DSP
    #define OPS_DSP_OR_NULL(fn) RS_TIER_FN(fn)
#else
    #define OPS_DSP_OR_NULL(fn) NULL
#endif
#if RS_HAVE_MVE
    #define OPS_MVE_OR_NULL(fn) RS_TIER_FN(fn)
#else
    #define OPS_MVE_OR_NULL(fn) NULL
#endif
#define OPS_VARIANTS(public_fn, stem)                                                                              \
    {public_fn, RS_TIER_FN(stem##_scalar), OPS_DSP_OR_NULL(stem##_dsp), OPS_MVE_OR_NULL(stem##_mve)}

/** Largest tensor a case may describe (bytes); every dimension is also at most 0xFFFF. */
#define OPS_MAX_ELEMENTS (8U << 20)

/** Product of four dims if each is in [1, 0xFFFF] and the product at most OPS_MAX_ELEMENTS, else 0. */
static uint32_t ops_elements(const int32_t *dims)
{
    uint64_t product = 1;
    for (int i = 0; i < 4; i++)
    {
        if (dims[i] < 1 || dims[i] > 0xFFFF)
        {
            return 0;
        }
        product *= (uint64_t)dims[i];
    }
    return product <= OPS_MAX_ELEMENTS ? (uint32_t)product : 0;
}

static cmsis_nn_dims ops_dims(const int32_t *p)
{
    const cmsis_nn_dims d = {p[0], p[1], p[2], p[3]};
    return d;
}

/** The ctx a case asks for: `requested` < 0 the variant's own size, 0 NULL, n > 0 n bytes. */
static int32_t ops_ctx_bytes(int32_t requested, int32_t variant_size)
{
    return requested < 0 ? variant_size : requested;
}

static cmsis_nn_context ops_context(int32_t bytes, const rs_case_memory *mem)
{
    const cmsis_nn_context ctx = {bytes > 0 ? mem->scratch : NULL, bytes};
    return ctx;
}

/* ------------------------------------------------------------------------------------------ */
/* arm_softmax_s8: num_rows, row_size, mult, shift, diff_min; array input int8 [num_rows*row_size] */

typedef void (*softmax_fn)(RS_SOFTMAX_ARGS);
static const softmax_fn softmax_variants[4] = OPS_VARIANTS(arm_softmax_s8, rs_softmax_s8);

uint16_t rs_check_softmax(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    const int32_t rows = c->params[0];
    const int32_t size = c->params[1];
    /* num_rows 0 is a call CMSIS-NN accepts (it runs no row). */
    if (rows < 0 || size < 1 || rows > 0xFFFF || size > 0xFFFF || c->count[0] != (uint32_t)rows * (uint32_t)size)
    {
        return RS_CASE_BAD_ARGS;
    }
    *output_bytes = c->count[0];
    *scratch_bytes = 0;
    return RS_CASE_OK;
}

uint16_t rs_run_softmax(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const softmax_fn fn = softmax_variants[c->variant];
    if (fn == NULL)
    {
        return RS_CASE_NO_VARIANT;
    }
    const int32_t *p = c->params;
    rs_kernel_begin();
    fn(c->array[0], p[0], p[1], p[2], p[3], p[4], mem->output);
    rs_kernel_end();
    *kernel_status = ARM_CMSIS_NN_SUCCESS;
    return RS_CASE_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* arm_batch_matmul_s8: adj_x, adj_y, fc_params.{input_offset, filter_offset, output_offset,    */
/* activation.min, activation.max}, multiplier, shift, input_lhs_dims.{n,h,w,c},               */
/* input_rhs_dims.{n,h,w,c}, output_dims.{n,h,w,c}, ctx.size; arrays input_lhs, input_rhs int8 */

enum
{
    BMM_ADJ_X,
    BMM_ADJ_Y,
    BMM_INPUT_OFFSET,
    BMM_FILTER_OFFSET,
    BMM_OUTPUT_OFFSET,
    BMM_ACT_MIN,
    BMM_ACT_MAX,
    BMM_MULTIPLIER,
    BMM_SHIFT,
    BMM_LHS_DIMS,
    BMM_RHS_DIMS = BMM_LHS_DIMS + 4,
    BMM_OUTPUT_DIMS = BMM_RHS_DIMS + 4,
    BMM_CTX_SIZE = BMM_OUTPUT_DIMS + 4,
    BMM_NUM_PARAMS_
};

typedef arm_cmsis_nn_status (*bmm_fn)(RS_BATCH_MATMUL_ARGS);
static const bmm_fn bmm_variants[4] = OPS_VARIANTS(arm_batch_matmul_s8, rs_batch_matmul_s8);
typedef int32_t (*bmm_size_fn)(const cmsis_nn_dims *input_rhs_dims);
/* a scalar build's answer is the DSP one (0); the MVE one is host-callable on every core */
static const bmm_size_fn bmm_size_variants[4] = {arm_batch_matmul_s8_get_buffer_size,
                                                 arm_batch_matmul_s8_get_buffer_size_dsp,
                                                 arm_batch_matmul_s8_get_buffer_size_dsp,
                                                 arm_batch_matmul_s8_get_buffer_size_mve};

/* The public function's scratch is asked as CMSIS-NN's header documents it (it has no batch matmul
 * size query): arm_fully_connected_s8_get_buffer_size() of a filter with the rhs rows as outputs. */
static int32_t bmm_scratch_bytes(uint8_t variant, const cmsis_nn_dims *rhs_dims)
{
    if (variant != RS_VARIANT_DEFAULT)
    {
        return bmm_size_variants[variant](rhs_dims);
    }
    const cmsis_nn_dims filter_dims = {rhs_dims->c, 1, 1, rhs_dims->w};
    return arm_fully_connected_s8_get_buffer_size(&filter_dims);
}

uint16_t rs_check_batch_matmul(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    const int32_t *p = c->params;
    const uint32_t lhs = ops_elements(p + BMM_LHS_DIMS);
    const uint32_t rhs = ops_elements(p + BMM_RHS_DIMS);
    const uint32_t out = ops_elements(p + BMM_OUTPUT_DIMS);
    if (lhs == 0 || rhs == 0 || out == 0 || c->count[0] != lhs || c->count[1] != rhs)
    {
        return RS_CASE_BAD_ARGS;
    }
    const cmsis_nn_dims rhs_dims = ops_dims(p + BMM_RHS_DIMS);
    const int32_t bytes = ops_ctx_bytes(p[BMM_CTX_SIZE], bmm_scratch_bytes(c->variant, &rhs_dims));
    *output_bytes = out;
    *scratch_bytes = bytes > 0 ? (uint32_t)bytes : 0U;
    return RS_CASE_OK;
}

uint16_t rs_run_batch_matmul(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const bmm_fn fn = bmm_variants[c->variant];
    if (fn == NULL)
    {
        return RS_CASE_NO_VARIANT;
    }
    const int32_t *p = c->params;
    const cmsis_nn_bmm_params bmm_params = {p[BMM_ADJ_X] != 0,
                                            p[BMM_ADJ_Y] != 0,
                                            {p[BMM_INPUT_OFFSET],
                                             p[BMM_FILTER_OFFSET],
                                             p[BMM_OUTPUT_OFFSET],
                                             {p[BMM_ACT_MIN], p[BMM_ACT_MAX]}}};
    const cmsis_nn_per_tensor_quant_params quant = {p[BMM_MULTIPLIER], p[BMM_SHIFT]};
    const cmsis_nn_dims lhs_dims = ops_dims(p + BMM_LHS_DIMS);
    const cmsis_nn_dims rhs_dims = ops_dims(p + BMM_RHS_DIMS);
    const cmsis_nn_dims out_dims = ops_dims(p + BMM_OUTPUT_DIMS);
    const cmsis_nn_context ctx = ops_context((int32_t)mem->scratch_bytes, mem);
    rs_kernel_begin();
    *kernel_status =
        fn(&ctx, &bmm_params, &quant, &lhs_dims, c->array[0], &rhs_dims, c->array[1], &out_dims, mem->output);
    rs_kernel_end();
    return RS_CASE_OK;
}

/* arm_batch_matmul_s8_get_buffer_size: input_rhs_dims.{n,h,w,c}; output the size, 4 bytes. */
uint16_t rs_check_batch_matmul_buffer_size(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    (void)c;
    *output_bytes = sizeof(int32_t);
    *scratch_bytes = 0;
    return RS_CASE_OK;
}

uint16_t rs_run_batch_matmul_buffer_size(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const cmsis_nn_dims rhs_dims = ops_dims(c->params);
    const int32_t size = bmm_size_variants[c->variant](&rhs_dims);
    memcpy(mem->output, &size, sizeof(size));
    *kernel_status = ARM_CMSIS_NN_SUCCESS;
    return RS_CASE_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* arm_fully_connected_per_channel_s8: input_offset, filter_offset, output_offset,              */
/* activation.min, activation.max, input_dims.n (batches), filter_dims.n (depth K),             */
/* output_dims.c (rows), ctx.size; arrays input [N*K] int8, filter [rows*K] int8, bias [rows or */
/* 0] int32, multiplier [rows] int32, shift [rows] int32                                        */

enum
{
    FCPC_INPUT_OFFSET,
    FCPC_FILTER_OFFSET,
    FCPC_OUTPUT_OFFSET,
    FCPC_ACT_MIN,
    FCPC_ACT_MAX,
    FCPC_BATCHES,
    FCPC_DEPTH,
    FCPC_ROWS,
    FCPC_CTX_SIZE,
    FCPC_NUM_PARAMS_
};

typedef arm_cmsis_nn_status (*fcpc_fn)(RS_FULLY_CONNECTED_PER_CHANNEL_ARGS);
static const fcpc_fn fcpc_variants[4] = OPS_VARIANTS(arm_fully_connected_per_channel_s8,
                                                     rs_fully_connected_per_channel_s8);
typedef int32_t (*fc_size_fn)(const cmsis_nn_dims *filter_dims);
static const fc_size_fn fc_size_variants[4] = {arm_fully_connected_s8_get_buffer_size,
                                               arm_fully_connected_s8_get_buffer_size_dsp,
                                               arm_fully_connected_s8_get_buffer_size_dsp,
                                               arm_fully_connected_s8_get_buffer_size_mve};

static cmsis_nn_dims fcpc_filter_dims(const int32_t *p)
{
    const cmsis_nn_dims dims = {p[FCPC_DEPTH], 1, 1, p[FCPC_ROWS]};
    return dims;
}

uint16_t rs_check_fully_connected_per_channel(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    const int32_t *p = c->params;
    const int32_t batches = p[FCPC_BATCHES];
    const int32_t depth = p[FCPC_DEPTH];
    const int32_t rows = p[FCPC_ROWS];
    if (batches < 0 || depth < 1 || rows < 1 || batches > 0xFFFF || depth > 0xFFFF || rows > 0xFFFF)
    {
        return RS_CASE_BAD_ARGS;
    }
    if (c->count[0] != (uint32_t)(batches * depth) || c->count[1] != (uint32_t)(rows * depth) ||
        (c->count[2] != 0 && c->count[2] != (uint32_t)rows) || c->count[3] != (uint32_t)rows ||
        c->count[4] != (uint32_t)rows)
    {
        return RS_CASE_BAD_ARGS;
    }
    const cmsis_nn_dims filter_dims = fcpc_filter_dims(p);
    const int32_t bytes = ops_ctx_bytes(p[FCPC_CTX_SIZE], fc_size_variants[c->variant](&filter_dims));
    *output_bytes = (uint32_t)(batches * rows);
    *scratch_bytes = bytes > 0 ? (uint32_t)bytes : 0U;
    return RS_CASE_OK;
}

uint16_t rs_run_fully_connected_per_channel(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const fcpc_fn fn = fcpc_variants[c->variant];
    if (fn == NULL)
    {
        return RS_CASE_NO_VARIANT;
    }
    const int32_t *p = c->params;
    const int8_t *filter = c->array[1];
    const int32_t *bias = c->count[2] != 0 ? c->array[2] : NULL;
    const cmsis_nn_fc_params fc_params = {
        p[FCPC_INPUT_OFFSET], p[FCPC_FILTER_OFFSET], p[FCPC_OUTPUT_OFFSET], {p[FCPC_ACT_MIN], p[FCPC_ACT_MAX]}};
    /* CMSIS-NN's struct has non-const pointers; the kernels only read them */
    const cmsis_nn_per_channel_quant_params quant = {(int32_t *)(uintptr_t)c->array[3],
                                                     (int32_t *)(uintptr_t)c->array[4]};
    const cmsis_nn_dims input_dims = {p[FCPC_BATCHES], 1, 1, p[FCPC_DEPTH]};
    const cmsis_nn_dims filter_dims = fcpc_filter_dims(p);
    const cmsis_nn_dims bias_dims = {1, 1, 1, p[FCPC_ROWS]};
    const cmsis_nn_dims output_dims = {p[FCPC_BATCHES], 1, 1, p[FCPC_ROWS]};
    const cmsis_nn_context ctx = ops_context((int32_t)mem->scratch_bytes, mem);
    if (c->variant == RS_VARIANT_MVE || (c->variant == RS_VARIANT_DEFAULT && RS_HAVE_MVE))
    {
        if (ctx.buf != NULL && ctx.size >= p[FCPC_ROWS] * (int32_t)sizeof(int32_t))
        {
            /* What a runtime does once ahead of inference (ExecuTorch's AOT pass, TFLM's Prepare). */
            arm_vector_sum_s8(ctx.buf, p[FCPC_DEPTH], p[FCPC_ROWS], filter, p[FCPC_INPUT_OFFSET],
                              p[FCPC_FILTER_OFFSET], bias);
        }
    }
    rs_kernel_begin();
    *kernel_status = fn(&ctx, &fc_params, &quant, &input_dims, c->array[0], &filter_dims, filter, &bias_dims, bias,
                        &output_dims, mem->output);
    rs_kernel_end();
    return RS_CASE_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* arm_vector_sum_s8: vector_cols, vector_rows, lhs_offset, rhs_offset; arrays vector_data int8 */
/* [rows*cols], bias_data int32 [rows or 0]. Output: int32 [rows] (4 bytes each).              */

typedef arm_cmsis_nn_status (*vector_sum_fn)(RS_VECTOR_SUM_ARGS);
static const vector_sum_fn vector_sum_variants[4] = OPS_VARIANTS(arm_vector_sum_s8, rs_vector_sum_s8);

uint16_t rs_check_vector_sum(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    const int32_t cols = c->params[0];
    const int32_t rows = c->params[1];
    if (cols < 1 || rows < 1 || cols > 0xFFFF || rows > 0xFFFF || c->count[0] != (uint32_t)(cols * rows) ||
        (c->count[1] != 0 && c->count[1] != (uint32_t)rows))
    {
        return RS_CASE_BAD_ARGS;
    }
    *output_bytes = (uint32_t)rows * sizeof(int32_t);
    *scratch_bytes = 0;
    return RS_CASE_OK;
}

uint16_t rs_run_vector_sum(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const vector_sum_fn fn = vector_sum_variants[c->variant];
    if (fn == NULL)
    {
        return RS_CASE_NO_VARIANT;
    }
    const int32_t *p = c->params;
    const int32_t *bias = c->count[1] != 0 ? c->array[1] : NULL;
    rs_kernel_begin();
    *kernel_status = fn((int32_t *)(void *)mem->output, p[0], p[1], c->array[0], p[2], p[3], bias);
    rs_kernel_end();
    return RS_CASE_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* arm_maximum_s8 / arm_minimum_s8: input_1_dims.{n,h,w,c}, input_2_dims.{n,h,w,c},             */
/* output_dims.{n,h,w,c}; arrays input_1, input_2 int8                                          */

typedef arm_cmsis_nn_status (*minmax_fn)(RS_MINMAX_ARGS);
static const minmax_fn maximum_variants[4] = OPS_VARIANTS(arm_maximum_s8, rs_maximum_s8);
static const minmax_fn minimum_variants[4] = OPS_VARIANTS(arm_minimum_s8, rs_minimum_s8);

uint16_t rs_check_minmax(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    const uint32_t in_1 = ops_elements(c->params);
    const uint32_t in_2 = ops_elements(c->params + 4);
    const uint32_t out = ops_elements(c->params + 8);
    if (in_1 == 0 || in_2 == 0 || out == 0 || c->count[0] != in_1 || c->count[1] != in_2)
    {
        return RS_CASE_BAD_ARGS;
    }
    *output_bytes = out;
    *scratch_bytes = 0;
    return RS_CASE_OK;
}

uint16_t rs_run_minmax(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const minmax_fn fn =
        (c->function_id == RS_FN_MAXIMUM_S8 ? maximum_variants : minimum_variants)[c->variant];
    if (fn == NULL)
    {
        return RS_CASE_NO_VARIANT;
    }
    const cmsis_nn_dims d1 = ops_dims(c->params);
    const cmsis_nn_dims d2 = ops_dims(c->params + 4);
    const cmsis_nn_dims dout = ops_dims(c->params + 8);
    const cmsis_nn_context ctx = {NULL, 0};
    rs_kernel_begin();
    *kernel_status = fn(&ctx, c->array[0], &d1, c->array[1], &d2, mem->output, &dout);
    rs_kernel_end();
    return RS_CASE_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* arm_relu6_s8: size; array input int8 [size], copied to the output, which the kernel then    */
/* rewrites in place                                                                           */

typedef void (*relu6_fn)(int8_t *data, uint16_t size);
static const relu6_fn relu6_variants[4] = OPS_VARIANTS(arm_relu6_s8, rs_relu6_s8);

uint16_t rs_check_relu6(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    const int32_t size = c->params[0];
    if (size < 0 || size > 0xFFFF || c->count[0] != (uint32_t)size)
    {
        return RS_CASE_BAD_ARGS;
    }
    *output_bytes = (uint32_t)size;
    *scratch_bytes = 0;
    return RS_CASE_OK;
}

uint16_t rs_run_relu6(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const relu6_fn fn = relu6_variants[c->variant];
    if (fn == NULL)
    {
        return RS_CASE_NO_VARIANT;
    }
    memcpy(mem->output, c->array[0], c->count[0]);
    rs_kernel_begin();
    fn(mem->output, (uint16_t)c->params[0]);
    rs_kernel_end();
    *kernel_status = ARM_CMSIS_NN_SUCCESS;
    return RS_CASE_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* arm_pad_s8: input_size.{n,h,w,c}, pre_pad.{n,h,w,c}, post_pad.{n,h,w,c}, pad_value; array    */
/* input int8. Negative pads are passed through (the kernel rejects them).                     */

typedef arm_cmsis_nn_status (*pad_fn)(RS_PAD_ARGS);
static const pad_fn pad_variants[4] = OPS_VARIANTS(arm_pad_s8, rs_pad_s8);

uint16_t rs_check_pad(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    const int32_t *p = c->params;
    const uint32_t in = ops_elements(p);
    int32_t out_dims[4];
    uint64_t out = 1;
    for (int i = 0; i < 4; i++)
    {
        out_dims[i] = p[4 + i] + p[i] + p[8 + i];
        if (p[4 + i] > 0xFFFF || p[8 + i] > 0xFFFF || p[4 + i] < -0xFFFF || p[8 + i] < -0xFFFF)
        {
            return RS_CASE_BAD_ARGS;
        }
        out *= out_dims[i] > 0 ? (uint64_t)out_dims[i] : 0U;
    }
    if (in == 0 || c->count[0] != in || out > OPS_MAX_ELEMENTS)
    {
        return RS_CASE_BAD_ARGS;
    }
    *output_bytes = (uint32_t)out;
    *scratch_bytes = 0;
    return RS_CASE_OK;
}

uint16_t rs_run_pad(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const pad_fn fn = pad_variants[c->variant];
    if (fn == NULL)
    {
        return RS_CASE_NO_VARIANT;
    }
    const int32_t *p = c->params;
    const cmsis_nn_dims input_size = ops_dims(p);
    const cmsis_nn_dims pre_pad = ops_dims(p + 4);
    const cmsis_nn_dims post_pad = ops_dims(p + 8);
    rs_kernel_begin();
    *kernel_status = fn(c->array[0], mem->output, (int8_t)p[12], &input_size, &pre_pad, &post_pad);
    rs_kernel_end();
    return RS_CASE_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* arm_transpose_s8: num_dims, permutations[0..3], input_dims.{n,h,w,c}, output_dims.{n,h,w,c}  */
/* (left-aligned, 1 past num_dims); array input int8                                           */

typedef arm_cmsis_nn_status (*transpose_fn)(RS_TRANSPOSE_ARGS);
static const transpose_fn transpose_variants[4] = OPS_VARIANTS(arm_transpose_s8, rs_transpose_s8);

/** Elements of a transpose tensor: the product of its first num_dims dims, which are all CMSIS-NN
 * reads (its unit tests pass the unused trailing ones as 0); all four when num_dims is not 1..4. */
static uint32_t tr_elements(const int32_t *dims, int32_t num_dims)
{
    int32_t used[4] = {1, 1, 1, 1};
    const int32_t rank = num_dims >= 1 && num_dims <= 4 ? num_dims : 4;
    for (int32_t i = 0; i < rank; i++)
    {
        used[i] = dims[i];
    }
    return ops_elements(used);
}

uint16_t rs_check_transpose(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    const uint32_t in = tr_elements(c->params + 5, c->params[0]);
    const uint32_t out = tr_elements(c->params + 9, c->params[0]);
    if (in == 0 || out == 0 || c->count[0] != in)
    {
        return RS_CASE_BAD_ARGS;
    }
    *output_bytes = out;
    *scratch_bytes = 0;
    return RS_CASE_OK;
}

uint16_t rs_run_transpose(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const transpose_fn fn = transpose_variants[c->variant];
    if (fn == NULL)
    {
        return RS_CASE_NO_VARIANT;
    }
    const int32_t *p = c->params;
    const uint32_t permutations[4] = {(uint32_t)p[1], (uint32_t)p[2], (uint32_t)p[3], (uint32_t)p[4]};
    const cmsis_nn_transpose_params params = {p[0], permutations};
    const cmsis_nn_dims input_dims = ops_dims(p + 5);
    const cmsis_nn_dims output_dims = ops_dims(p + 9);
    rs_kernel_begin();
    *kernel_status = fn(c->array[0], mem->output, &input_dims, &output_dims, &params);
    rs_kernel_end();
    return RS_CASE_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* refsim_lut_s8: no params (size = the input's length); arrays input int8, table int8 [256]    */

typedef arm_cmsis_nn_status (*lut_fn)(RS_LUT_ARGS);
static const lut_fn lut_variants[4] = OPS_VARIANTS(refsim_lut_s8, rs_lut_s8);

uint16_t rs_check_lut(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    if (c->count[1] != 256U)
    {
        return RS_CASE_BAD_ARGS;
    }
    *output_bytes = c->count[0];
    *scratch_bytes = 0;
    return RS_CASE_OK;
}

uint16_t rs_run_lut(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const lut_fn fn = lut_variants[c->variant];
    if (fn == NULL)
    {
        return RS_CASE_NO_VARIANT;
    }
    rs_kernel_begin();
    *kernel_status = fn(c->array[0], c->array[1], mem->output, (int32_t)c->count[0]);
    rs_kernel_end();
    return RS_CASE_OK;
}

const uint8_t rs_fc_per_channel_dtypes[5] = {RS_DTYPE_INT8, RS_DTYPE_INT8, RS_DTYPE_INT32, RS_DTYPE_INT32,
                                             RS_DTYPE_INT32};
const uint8_t rs_vector_sum_dtypes[2] = {RS_DTYPE_INT8, RS_DTYPE_INT32};
