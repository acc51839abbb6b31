/*
 * refsim kernels_c harness: how the batch loop runs one case of one function.
 */
#ifndef RS_HARNESS_FUNCTIONS_H
#define RS_HARNESS_FUNCTIONS_H

#include <stdint.h>

#include "arm_nn_types.h"
#include "batch_format.h"

/*
 * A library build (refsim --kernels-dir, -DRS_PUBLIC_API_ONLY=1) calls only the library's public
 * CMSIS-NN functions: the harness answers RS_CASE_NO_VARIANT for any explicit tier, and the variant
 * tables name no tier function (RS_TIER_FN gives NULL).
 */
#ifndef RS_PUBLIC_API_ONLY
    #define RS_PUBLIC_API_ONLY 0
#endif
#if RS_PUBLIC_API_ONLY
    #define RS_TIER_FN(fn) NULL
#else
    #define RS_TIER_FN(fn) fn
#endif

/** One parsed case: views into the loaded batch file. */
typedef struct
{
    uint32_t index;
    uint16_t function_id;
    uint8_t variant;
    uint16_t num_params;
    uint16_t num_arrays;
    const int32_t *params;
    const void *array[RS_MAX_ARRAYS];
    uint32_t count[RS_MAX_ARRAYS];
    uint8_t dtype[RS_MAX_ARRAYS];
} rs_case;

/** Where a case writes: its output and a scratch area for the kernel's ctx buffer. */
typedef struct
{
    int8_t *output;
    uint8_t *scratch;
    uint32_t scratch_bytes;
} rs_case_memory;

typedef struct
{
    uint16_t id;
    uint16_t num_params;
    uint16_t num_arrays;
    const uint8_t *dtypes; /* num_arrays entries */
    /** Checks the case's sizes; output and scratch bytes it needs. RS_CASE_OK or RS_CASE_BAD_ARGS. */
    uint16_t (*check)(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes);
    /** Runs the case (kernel call between the markers); RS_CASE_OK or RS_CASE_NO_VARIANT. */
    uint16_t (*run)(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status);
} rs_function;

/** The function with this id, or NULL. */
const rs_function *rs_find_function(uint16_t id);

/*
 * Markers around every kernel call, for instruction counting with a QEMU TCG plugin: the plugin
 * counts instructions executed between a call of rs_kernel_begin and the next rs_kernel_end.
 * noipa keeps them real calls with their own addresses, found by symbol name in the ELF.
 */
void rs_kernel_begin(void) __attribute__((noipa));
void rs_kernel_end(void) __attribute__((noipa));

/* Depthwise and pooling entries (functions_depthwise_pooling.c), listed in functions.c's table. */
#define RS_DEPTHWISE_NUM_PARAMS 24      /* ... output_dims.c, ctx.size */
#define RS_DEPTHWISE_SIZE_NUM_PARAMS 23 /* the same without ctx.size */
#define RS_DEPTHWISE_NUM_ARRAYS 5       /* input, filter, bias, multiplier, shift */
#define RS_POOL_NUM_PARAMS 17
extern const uint8_t rs_depthwise_dtypes[RS_DEPTHWISE_NUM_ARRAYS];
uint16_t rs_check_depthwise(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes);
uint16_t rs_run_depthwise(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status);
uint16_t rs_check_buffer_size_query(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes);
uint16_t rs_run_depthwise_buffer_size(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status);
uint16_t rs_check_pool(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes);
uint16_t rs_run_pool(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status);
uint16_t rs_run_avgpool_buffer_size(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status);

/* Convolution family entries (functions_conv.c), listed in functions.c's table. */
#define RS_CONV_SIZE_NUM_PARAMS 22           /* input_offset ... output_dims.c */
#define RS_TRANSPOSE_CONV_SIZE_NUM_PARAMS 24 /* the same, then padding_offsets.h, padding_offsets.w */
#define RS_CONV_NUM_PARAMS 23                /* the kernels: RS_CONV_SIZE_NUM_PARAMS, then ctx.size */
#define RS_TRANSPOSE_CONV_NUM_PARAMS 25      /* RS_TRANSPOSE_CONV_SIZE_NUM_PARAMS, then ctx.size */
#define RS_CONV_NUM_ARRAYS 5            /* input, filter, bias, multiplier, shift */
extern const uint8_t rs_conv_dtypes[RS_CONV_NUM_ARRAYS];
uint16_t rs_check_conv(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes);
uint16_t rs_run_conv(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status);
uint16_t rs_check_conv_buffer_size(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes);
uint16_t rs_run_conv_buffer_size(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status);

/* Softmax, matmul, min/max, activation and layout entries (functions_ops.c, ids 0x30-0x4F), listed
 * in functions.c's table. */
#define RS_SOFTMAX_NUM_PARAMS 5
#define RS_BATCH_MATMUL_NUM_PARAMS 22 /* ... output_dims.c, ctx.size */
#define RS_FC_PER_CHANNEL_NUM_PARAMS 9 /* ... output_dims.c, ctx.size */
#define RS_MINMAX_NUM_PARAMS 12
#define RS_PAD_NUM_PARAMS 13
#define RS_TRANSPOSE_NUM_PARAMS 13
extern const uint8_t rs_fc_per_channel_dtypes[5];
extern const uint8_t rs_vector_sum_dtypes[2];
#define RS_OPS_ENTRY(name)                                                                                         \
    uint16_t rs_check_##name(const rs_case *c, uint32_t *output_bytes, uint32_t *scratch_bytes);                   \
    uint16_t rs_run_##name(const rs_case *c, const rs_case_memory *mem, int32_t *kernel_status);
RS_OPS_ENTRY(softmax)
RS_OPS_ENTRY(batch_matmul)
RS_OPS_ENTRY(batch_matmul_buffer_size)
RS_OPS_ENTRY(fully_connected_per_channel)
RS_OPS_ENTRY(vector_sum)
RS_OPS_ENTRY(minmax)
RS_OPS_ENTRY(relu6)
RS_OPS_ENTRY(pad)
RS_OPS_ENTRY(transpose)
RS_OPS_ENTRY(lut)
#undef RS_OPS_ENTRY

#endif /* RS_HARNESS_FUNCTIONS_H */
