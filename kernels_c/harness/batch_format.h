/*
 * refsim kernels_c harness: the batch file format (version 1), shared with refsim/qemu/batch.py.
 *
 * All integers little endian. Every record starts 4-byte aligned and its length is a multiple
 * of 4, so int32 arrays are aligned in place (the file is loaded at a 16-byte aligned address).
 *
 * Batch file (input):
 *   rs_batch_header                       magic "RSKB", version 1, num_cases, total_bytes (= file size)
 *   num_cases x case record:
 *     rs_case_header                      case_bytes (whole record), function_id, variant,
 *                                         num_params, num_arrays
 *     int32 params[num_params]            in the function's documented order (batch.py FUNCTIONS)
 *     num_arrays x { rs_array_header; data[count * size(dtype)]; zero padding to 4 bytes }
 *
 * Result file (output):
 *   rs_batch_header                       magic "RSKR", version 1, num_cases, total_bytes
 *   num_cases x result record:
 *     rs_result_header                    record_bytes, function_id, harness_status, kernel_status,
 *                                         output_bytes
 *     int8 output[output_bytes]; zero padding to 4 bytes
 *
 * The function ids and parameter orders below must match refsim/qemu/batch.py (a test checks).
 */
#ifndef RS_BATCH_FORMAT_H
#define RS_BATCH_FORMAT_H

#include <stdint.h>

#define RS_BATCH_MAGIC 0x424B5352U  /* "RSKB" */
#define RS_RESULT_MAGIC 0x524B5352U /* "RSKR" */
#define RS_BATCH_VERSION 1U

#define RS_MAX_ARRAYS 8U

typedef struct
{
    uint32_t magic;
    uint32_t version;
    uint32_t num_cases;
    uint32_t total_bytes;
} rs_batch_header;

typedef struct
{
    uint32_t case_bytes;
    uint16_t function_id;
    uint8_t variant;
    uint8_t reserved;
    uint16_t num_params;
    uint16_t num_arrays;
} rs_case_header;

typedef struct
{
    uint8_t dtype;
    uint8_t reserved[3];
    uint32_t count;
} rs_array_header;

typedef struct
{
    uint32_t record_bytes;
    uint16_t function_id;
    uint16_t harness_status;
    int32_t kernel_status;
    uint32_t output_bytes;
} rs_result_header;

/* Element types of arrays. */
enum
{
    RS_DTYPE_INT8 = 1,
    RS_DTYPE_INT32 = 3,
};

/* Which implementation a case runs: the public (dispatching) function or one tier's variant. */
enum
{
    RS_VARIANT_DEFAULT = 0,
    RS_VARIANT_SCALAR = 1,
    RS_VARIANT_DSP = 2,
    RS_VARIANT_MVE = 3,
};

/* Function ids. Test-only ids (0xFF00 and up) exist to test the harness and the driver. */
enum
{
    RS_FN_ELEMENTWISE_ADD_S8 = 1, /* 13 params, arrays input_1, input_2 (int8, block_size) */
    RS_FN_ELEMENTWISE_MUL_S8 = 2, /* 8 params, arrays input_1, input_2 (int8, block_size) */
    RS_FN_FULLY_CONNECTED_S8 = 3, /* 10 params, arrays input (int8), filter (int8), bias (int32, 0 = NULL) */
    /* Convolution family (harness/functions_conv.c): 22 params (24 for the transpose convolutions),
     * arrays input, filter (int8), bias (int32, 0 = NULL), multiplier, shift (int32); the
     * *_GET_BUFFER_SIZE entries take the same params, no arrays, and return the size as 4 bytes. */
    RS_FN_CONVOLVE_S8 = 0x10,
    RS_FN_CONVOLVE_WRAPPER_S8 = 0x11,
    RS_FN_CONVOLVE_1X1_S8_FAST = 0x12,
    RS_FN_CONVOLVE_1X1_S8 = 0x13,
    RS_FN_CONVOLVE_1_X_N_S8 = 0x14,
    RS_FN_TRANSPOSE_CONV_S8 = 0x15,
    RS_FN_TRANSPOSE_CONV_WRAPPER_S8 = 0x16,
    RS_FN_CONVOLVE_WRAPPER_S8_GET_BUFFER_SIZE = 0x17,
    RS_FN_CONVOLVE_S8_GET_BUFFER_SIZE = 0x18,
    RS_FN_CONVOLVE_1_X_N_S8_GET_BUFFER_SIZE = 0x19,
    RS_FN_CONVOLVE_1X1_S8_FAST_GET_BUFFER_SIZE = 0x1A,
    RS_FN_TRANSPOSE_CONV_S8_GET_BUFFER_SIZE = 0x1B,
    RS_FN_TRANSPOSE_CONV_S8_GET_REVERSE_CONV_BUFFER_SIZE = 0x1C,
    /* Depthwise and pooling (harness/functions_depthwise_pooling.c): 24 params, arrays input, filter
     * (int8), bias (int32, 0 = NULL), multiplier, shift (int32); the sizers take 23 params and return
     * the size as 4 output bytes; pooling 17 params, array input (int8). */
    RS_FN_DEPTHWISE_CONV_WRAPPER_S8 = 0x20,
    RS_FN_DEPTHWISE_CONV_S8 = 0x21,
    RS_FN_DEPTHWISE_CONV_3X3_S8 = 0x22,
    RS_FN_DEPTHWISE_CONV_S8_OPT = 0x23,
    RS_FN_DEPTHWISE_CONV_WRAPPER_S8_GET_BUFFER_SIZE = 0x24,
    RS_FN_DEPTHWISE_CONV_S8_OPT_GET_BUFFER_SIZE = 0x25,
    RS_FN_AVGPOOL_S8 = 0x28,
    RS_FN_MAX_POOL_S8 = 0x29,
    RS_FN_AVGPOOL_S8_GET_BUFFER_SIZE = 0x2A, /* 2 params: output_dims.w, input_dims.c */
    /* Softmax, matmul, min/max, activations and layout (harness/functions_ops.c). The
     * *_GET_BUFFER_SIZE entry returns the size as 4 output bytes; VECTOR_SUM outputs int32. */
    RS_FN_SOFTMAX_S8 = 0x30,
    RS_FN_BATCH_MATMUL_S8 = 0x31,
    RS_FN_BATCH_MATMUL_S8_GET_BUFFER_SIZE = 0x32,
    RS_FN_FULLY_CONNECTED_PER_CHANNEL_S8 = 0x33,
    RS_FN_VECTOR_SUM_S8 = 0x34,
    RS_FN_MAXIMUM_S8 = 0x35,
    RS_FN_MINIMUM_S8 = 0x36,
    RS_FN_RELU6_S8 = 0x37,
    RS_FN_PAD_S8 = 0x38,
    RS_FN_TRANSPOSE_S8 = 0x39,
    RS_FN_REFSIM_LUT_S8 = 0x3A,
    RS_FN_TEST_ECHO = 0xFF00,     /* no params, one int8 array copied to the output */
    RS_FN_TEST_FAULT = 0xFF01,    /* 1 param: an address the case loads a word from */
    RS_FN_TEST_HANG = 0xFF02,     /* no params: spins forever (driver timeout test) */
};

/* Per-case harness status (the kernel's own arm_cmsis_nn_status is reported beside it). */
enum
{
    RS_CASE_OK = 0,
    RS_CASE_BAD_ARGS = 1,          /* wrong number of params/arrays, wrong dtype or length */
    RS_CASE_UNKNOWN_FUNCTION = 2,  /* no such function id in this harness */
    RS_CASE_NO_VARIANT = 3,        /* the requested tier does not exist on this core */
    RS_CASE_GUARD_OVERWRITTEN = 4, /* the kernel wrote past the end of its output */
    RS_CASE_NO_SPACE = 5,          /* output + scratch do not fit the bulk region */
    RS_CASE_SCRATCH_OVERWRITTEN = 6, /* the kernel wrote past the end of its scratch (ctx) buffer */
};

#endif /* RS_BATCH_FORMAT_H */
