/*
 * refsim kernels_c harness: one entry per function id, mapping a batch case onto the CMSIS-NN call.
 *
 * Parameter order per function is the one documented in refsim/qemu/batch.py (FUNCTIONS); the
 * names are the conformance-vector names of shared VECTORS.md. Each run() selects the variant
 * the case asks for (RS_VARIANT_*: the public dispatching function, or one tier), prepares what
 * a runtime prepares ahead of inference (the MVE kernel sums of the fully connected layer), and
 * calls the kernel between rs_kernel_begin() and rs_kernel_end().
 */
#include <stddef.h>

#include "arm_nnfunctions.h"
#include "board.h"
#include "functions.h"
#include "variants.h"

void rs_kernel_begin(void) { __asm volatile("" ::: "memory"); }
void rs_kernel_end(void) { __asm volatile("" ::: "memory"); }

#if RS_HAVE_DSP
    #define RS_DSP_OR_NULL(fn) RS_TIER_FN(fn)
#else
    #define RS_DSP_OR_NULL(fn) NULL
#endif
#if RS_HAVE_MVE
    #define RS_MVE_OR_NULL(fn) RS_TIER_FN(fn)
#else
    #define RS_MVE_OR_NULL(fn) NULL
#endif

/** The variant table of a kernel, indexed by RS_VARIANT_*; NULL when the core lacks the tier. */
#define RS_VARIANTS(public_fn, stem) {public_fn, RS_TIER_FN(stem##_scalar), RS_DSP_OR_NULL(stem##_dsp), RS_MVE_OR_NULL(stem##_mve)}

static const uint8_t dtypes_two_s8[] = {RS_DTYPE_INT8, RS_DTYPE_INT8};

/* ------------------------------------------------------------------------------------------ */
/* arm_elementwise_add_s8: input_1_offset, input_1_mult, input_1_shift, input_2_offset,         */
/* input_2_mult, input_2_shift, left_shift, out_offset, out_mult, out_shift,                    */
/* out_activation_min, out_activation_max, block_size                                           */

typedef arm_cmsis_nn_status (*add_fn)(RS_ELEMENTWISE_ADD_ARGS);
static const add_fn add_variants[4] = RS_VARIANTS(arm_elementwise_add_s8, rs_elementwise_add_s8);

/* Both elementwise functions end their params with block_size and take two block_size arrays. */
static uint16_t check_elementwise(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    const int32_t block_size = c->params[c->num_params - 1];
    if (block_size < 0 || c->count[0] != (uint32_t)block_size || c->count[1] != (uint32_t)block_size)
    {
        return RS_CASE_BAD_ARGS;
    }
    *output_bytes = (uint32_t)block_size;
    *scratch_bytes = 0;
    return RS_CASE_OK;
}

static uint16_t run_add(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const add_fn fn = add_variants[c->variant];
    if (fn == NULL)
    {
        return RS_CASE_NO_VARIANT;
    }
    const int32_t *p = c->params;
    rs_kernel_begin();
    *kernel_status = fn(c->array[0], c->array[1], p[0], p[1], p[2], p[3], p[4], p[5], p[6], mem->output, p[7], p[8],
                        p[9], p[10], p[11], p[12]);
    rs_kernel_end();
    return RS_CASE_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* arm_elementwise_mul_s8: input_1_offset, input_2_offset, out_offset, out_mult, out_shift,     */
/* out_activation_min, out_activation_max, block_size                                           */

typedef arm_cmsis_nn_status (*mul_fn)(RS_ELEMENTWISE_MUL_ARGS);
static const mul_fn mul_variants[4] = RS_VARIANTS(arm_elementwise_mul_s8, rs_elementwise_mul_s8);

static uint16_t run_mul(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const mul_fn fn = mul_variants[c->variant];
    if (fn == NULL)
    {
        return RS_CASE_NO_VARIANT;
    }
    const int32_t *p = c->params;
    rs_kernel_begin();
    *kernel_status = fn(c->array[0], c->array[1], p[0], p[1], mem->output, p[2], p[3], p[4], p[5], p[6], p[7]);
    rs_kernel_end();
    return RS_CASE_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* arm_fully_connected_s8: input_offset, filter_offset, output_offset, activation.min,          */
/* activation.max, multiplier, shift, input_dims.n (batches), filter_dims.n (depth K),          */
/* output_dims.c (rows); arrays input [N*K] int8, filter [rows*K] int8, bias [rows or 0] int32  */

enum
{
    FC_INPUT_OFFSET,
    FC_FILTER_OFFSET,
    FC_OUTPUT_OFFSET,
    FC_ACT_MIN,
    FC_ACT_MAX,
    FC_MULTIPLIER,
    FC_SHIFT,
    FC_BATCHES,
    FC_DEPTH,
    FC_ROWS,
    FC_NUM_PARAMS
};

typedef arm_cmsis_nn_status (*fc_fn)(RS_FULLY_CONNECTED_ARGS);
static const fc_fn fc_variants[4] = RS_VARIANTS(arm_fully_connected_s8, rs_fully_connected_s8);
static const uint8_t fc_dtypes[] = {RS_DTYPE_INT8, RS_DTYPE_INT8, RS_DTYPE_INT32};

static cmsis_nn_dims fc_filter_dims(const rs_case *c)
{
    const cmsis_nn_dims dims = {c->params[FC_DEPTH], 1, 1, c->params[FC_ROWS]};
    return dims;
}

/** Scratch bytes of the variant a case runs (the MVE kernel sums, or none). */
static int32_t fc_buffer_size(const rs_case *c)
{
    const cmsis_nn_dims filter_dims = fc_filter_dims(c);
    switch (c->variant)
    {
    case RS_VARIANT_DEFAULT:
        return arm_fully_connected_s8_get_buffer_size(&filter_dims);
    case RS_VARIANT_MVE:
        return arm_fully_connected_s8_get_buffer_size_mve(&filter_dims);
    default:
        return arm_fully_connected_s8_get_buffer_size_dsp(&filter_dims);
    }
}

static uint16_t check_fc(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    const int32_t *p = c->params;
    const int32_t batches = p[FC_BATCHES];
    const int32_t depth = p[FC_DEPTH];
    const int32_t rows = p[FC_ROWS];
    /* batches 0 (an empty batch) is a call CMSIS-NN accepts: it runs no row. */
    if (batches < 0 || depth < 1 || rows < 1 || batches > 0xFFFF || depth > 0xFFFF || rows > 0xFFFF)
    {
        return RS_CASE_BAD_ARGS;
    }
    if (c->count[0] != (uint32_t)(batches * depth) || c->count[1] != (uint32_t)(rows * depth) ||
        (c->count[2] != 0 && c->count[2] != (uint32_t)rows))
    {
        return RS_CASE_BAD_ARGS;
    }
    *output_bytes = (uint32_t)(batches * rows);
    *scratch_bytes = (uint32_t)fc_buffer_size(c);
    return RS_CASE_OK;
}

static uint16_t run_fc(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const fc_fn fn = fc_variants[c->variant];
    if (fn == NULL)
    {
        return RS_CASE_NO_VARIANT;
    }
    const int32_t *p = c->params;
    const int8_t *input = c->array[0];
    const int8_t *filter = c->array[1];
    const int32_t *bias = c->count[2] != 0 ? c->array[2] : NULL;
    const cmsis_nn_fc_params fc_params = {
        p[FC_INPUT_OFFSET], p[FC_FILTER_OFFSET], p[FC_OUTPUT_OFFSET], {p[FC_ACT_MIN], p[FC_ACT_MAX]}};
    const cmsis_nn_per_tensor_quant_params quant = {p[FC_MULTIPLIER], p[FC_SHIFT]};
    const cmsis_nn_dims input_dims = {p[FC_BATCHES], 1, 1, p[FC_DEPTH]};
    const cmsis_nn_dims filter_dims = fc_filter_dims(c);
    const cmsis_nn_dims bias_dims = {1, 1, 1, p[FC_ROWS]};
    const cmsis_nn_dims output_dims = {p[FC_BATCHES], 1, 1, p[FC_ROWS]};
    const int32_t buffer_size = fc_buffer_size(c);
    cmsis_nn_context ctx = {NULL, 0};
    if (buffer_size > 0)
    {
        /* What a runtime does once ahead of inference (ExecuTorch's AOT pass, TFLM's Prepare). */
        ctx.buf = mem->scratch;
        ctx.size = buffer_size;
        arm_vector_sum_s8(ctx.buf, p[FC_DEPTH], p[FC_ROWS], filter, p[FC_INPUT_OFFSET], p[FC_FILTER_OFFSET], bias);
    }
    rs_kernel_begin();
    *kernel_status = fn(&ctx, &fc_params, &quant, &input_dims, input, &filter_dims, filter, &bias_dims, bias,
                        &output_dims, mem->output);
    rs_kernel_end();
    return RS_CASE_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Test-only functions.                                                                        */

static const uint8_t dtypes_one_s8[] = {RS_DTYPE_INT8};

static uint16_t check_echo(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    *output_bytes = c->count[0];
    *scratch_bytes = 0;
    return RS_CASE_OK;
}

static uint16_t run_echo(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    const int8_t *src = c->array[0];
    rs_kernel_begin();
    for (uint32_t i = 0; i < c->count[0]; i++)
    {
        mem->output[i] = src[i];
    }
    rs_kernel_end();
    *kernel_status = ARM_CMSIS_NN_SUCCESS;
    return RS_CASE_OK;
}

static uint16_t check_nothing(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes)
{
    (void)c;
    *output_bytes = 0;
    *scratch_bytes = 0;
    return RS_CASE_OK;
}

static uint16_t run_fault(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    (void)mem;
    const volatile uint32_t *address = (const volatile uint32_t *)(uintptr_t)(uint32_t)c->params[0];
    *kernel_status = (int32_t)*address;
    return RS_CASE_OK;
}

static uint16_t run_hang(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status)
{
    (void)c;
    (void)mem;
    (void)kernel_status;
    while (rs_current_case >= 0) /* always true while a case runs: spins until QEMU is killed */
    {
    }
    return RS_CASE_OK;
}

/* ------------------------------------------------------------------------------------------ */

static const rs_function functions[] = {
    {RS_FN_ELEMENTWISE_ADD_S8, 13, 2, dtypes_two_s8, check_elementwise, run_add},
    {RS_FN_ELEMENTWISE_MUL_S8, 8, 2, dtypes_two_s8, check_elementwise, run_mul},
    {RS_FN_FULLY_CONNECTED_S8, FC_NUM_PARAMS, 3, fc_dtypes, check_fc, run_fc},
    {RS_FN_CONVOLVE_S8, RS_CONV_NUM_PARAMS, RS_CONV_NUM_ARRAYS, rs_conv_dtypes, rs_check_conv, rs_run_conv},
    {RS_FN_CONVOLVE_WRAPPER_S8, RS_CONV_NUM_PARAMS, RS_CONV_NUM_ARRAYS, rs_conv_dtypes, rs_check_conv, rs_run_conv},
    {RS_FN_CONVOLVE_1X1_S8_FAST, RS_CONV_NUM_PARAMS, RS_CONV_NUM_ARRAYS, rs_conv_dtypes, rs_check_conv, rs_run_conv},
    {RS_FN_CONVOLVE_1X1_S8, RS_CONV_NUM_PARAMS, RS_CONV_NUM_ARRAYS, rs_conv_dtypes, rs_check_conv, rs_run_conv},
    {RS_FN_CONVOLVE_1_X_N_S8, RS_CONV_NUM_PARAMS, RS_CONV_NUM_ARRAYS, rs_conv_dtypes, rs_check_conv, rs_run_conv},
    {RS_FN_TRANSPOSE_CONV_S8, RS_TRANSPOSE_CONV_NUM_PARAMS, RS_CONV_NUM_ARRAYS, rs_conv_dtypes, rs_check_conv,
     rs_run_conv},
    {RS_FN_TRANSPOSE_CONV_WRAPPER_S8, RS_TRANSPOSE_CONV_NUM_PARAMS, RS_CONV_NUM_ARRAYS, rs_conv_dtypes,
     rs_check_conv, rs_run_conv},
    {RS_FN_CONVOLVE_WRAPPER_S8_GET_BUFFER_SIZE, RS_CONV_SIZE_NUM_PARAMS, 0, NULL, rs_check_conv_buffer_size,
     rs_run_conv_buffer_size},
    {RS_FN_CONVOLVE_S8_GET_BUFFER_SIZE, RS_CONV_SIZE_NUM_PARAMS, 0, NULL, rs_check_conv_buffer_size,
     rs_run_conv_buffer_size},
    {RS_FN_CONVOLVE_1_X_N_S8_GET_BUFFER_SIZE, RS_CONV_SIZE_NUM_PARAMS, 0, NULL, rs_check_conv_buffer_size,
     rs_run_conv_buffer_size},
    {RS_FN_CONVOLVE_1X1_S8_FAST_GET_BUFFER_SIZE, RS_CONV_SIZE_NUM_PARAMS, 0, NULL, rs_check_conv_buffer_size,
     rs_run_conv_buffer_size},
    {RS_FN_TRANSPOSE_CONV_S8_GET_BUFFER_SIZE, RS_TRANSPOSE_CONV_SIZE_NUM_PARAMS, 0, NULL, rs_check_conv_buffer_size,
     rs_run_conv_buffer_size},
    {RS_FN_TRANSPOSE_CONV_S8_GET_REVERSE_CONV_BUFFER_SIZE, RS_TRANSPOSE_CONV_SIZE_NUM_PARAMS, 0, NULL,
     rs_check_conv_buffer_size, rs_run_conv_buffer_size},
    {RS_FN_DEPTHWISE_CONV_WRAPPER_S8, RS_DEPTHWISE_NUM_PARAMS, RS_DEPTHWISE_NUM_ARRAYS, rs_depthwise_dtypes,
     rs_check_depthwise, rs_run_depthwise},
    {RS_FN_DEPTHWISE_CONV_S8, RS_DEPTHWISE_NUM_PARAMS, RS_DEPTHWISE_NUM_ARRAYS, rs_depthwise_dtypes,
     rs_check_depthwise, rs_run_depthwise},
    {RS_FN_DEPTHWISE_CONV_3X3_S8, RS_DEPTHWISE_NUM_PARAMS, RS_DEPTHWISE_NUM_ARRAYS, rs_depthwise_dtypes,
     rs_check_depthwise, rs_run_depthwise},
    {RS_FN_DEPTHWISE_CONV_S8_OPT, RS_DEPTHWISE_NUM_PARAMS, RS_DEPTHWISE_NUM_ARRAYS, rs_depthwise_dtypes,
     rs_check_depthwise, rs_run_depthwise},
    {RS_FN_DEPTHWISE_CONV_WRAPPER_S8_GET_BUFFER_SIZE, RS_DEPTHWISE_SIZE_NUM_PARAMS, 0, NULL,
     rs_check_buffer_size_query, rs_run_depthwise_buffer_size},
    {RS_FN_DEPTHWISE_CONV_S8_OPT_GET_BUFFER_SIZE, RS_DEPTHWISE_SIZE_NUM_PARAMS, 0, NULL, rs_check_buffer_size_query,
     rs_run_depthwise_buffer_size},
    {RS_FN_AVGPOOL_S8, RS_POOL_NUM_PARAMS, 1, dtypes_one_s8, rs_check_pool, rs_run_pool},
    {RS_FN_MAX_POOL_S8, RS_POOL_NUM_PARAMS, 1, dtypes_one_s8, rs_check_pool, rs_run_pool},
    {RS_FN_AVGPOOL_S8_GET_BUFFER_SIZE, 2, 0, NULL, rs_check_buffer_size_query, rs_run_avgpool_buffer_size},
    {RS_FN_SOFTMAX_S8, RS_SOFTMAX_NUM_PARAMS, 1, dtypes_one_s8, rs_check_softmax, rs_run_softmax},
    {RS_FN_BATCH_MATMUL_S8, RS_BATCH_MATMUL_NUM_PARAMS, 2, dtypes_two_s8, rs_check_batch_matmul,
     rs_run_batch_matmul},
    {RS_FN_BATCH_MATMUL_S8_GET_BUFFER_SIZE, 4, 0, NULL, rs_check_batch_matmul_buffer_size,
     rs_run_batch_matmul_buffer_size},
    {RS_FN_FULLY_CONNECTED_PER_CHANNEL_S8, RS_FC_PER_CHANNEL_NUM_PARAMS, 5, rs_fc_per_channel_dtypes,
     rs_check_fully_connected_per_channel, rs_run_fully_connected_per_channel},
    {RS_FN_VECTOR_SUM_S8, 4, 2, rs_vector_sum_dtypes, rs_check_vector_sum, rs_run_vector_sum},
    {RS_FN_MAXIMUM_S8, RS_MINMAX_NUM_PARAMS, 2, dtypes_two_s8, rs_check_minmax, rs_run_minmax},
    {RS_FN_MINIMUM_S8, RS_MINMAX_NUM_PARAMS, 2, dtypes_two_s8, rs_check_minmax, rs_run_minmax},
    {RS_FN_RELU6_S8, 1, 1, dtypes_one_s8, rs_check_relu6, rs_run_relu6},
    {RS_FN_PAD_S8, RS_PAD_NUM_PARAMS, 1, dtypes_one_s8, rs_check_pad, rs_run_pad},
    {RS_FN_TRANSPOSE_S8, RS_TRANSPOSE_NUM_PARAMS, 1, dtypes_one_s8, rs_check_transpose, rs_run_transpose},
    {RS_FN_REFSIM_LUT_S8, 0, 2, dtypes_two_s8, rs_check_lut, rs_run_lut},
    {RS_FN_TEST_ECHO, 0, 1, dtypes_one_s8, check_echo, run_echo},
    {RS_FN_TEST_FAULT, 1, 0, NULL, check_nothing, run_fault},
    {RS_FN_TEST_HANG, 0, 0, NULL, check_nothing, run_hang},
};

const rs_function *rs_find_function(uint16_t id)
{
    for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++)
    {
        if (functions[i].id == id)
        {
            return &functions[i];
        }
    }
    return NULL;
}
