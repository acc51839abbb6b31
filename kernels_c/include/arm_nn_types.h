/*
 * refsim kernels_c: CMSIS-NN parameter structs and status codes (API-compatible subset).
 *
 * Field names, order and types follow CMSIS-NN's Include/arm_nn_types.h so code written
 * against CMSIS-NN compiles against these headers unchanged; refsim's conformance vectors
 * (shared VECTORS.md) flatten exactly these field names ("stride.h", "activation.min").
 */
#ifndef ARM_NN_TYPES_H
#define ARM_NN_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Status returned by every kernel. */
typedef enum
{
    ARM_CMSIS_NN_SUCCESS = 0,        /**< No error. */
    ARM_CMSIS_NN_ARG_ERROR = -1,     /**< One or more arguments are incorrect. */
    ARM_CMSIS_NN_NO_IMPL_ERROR = -2, /**< No implementation available. */
    ARM_CMSIS_NN_FAILURE = -3,       /**< Logical error. */
} arm_cmsis_nn_status;

/** A 2-D extent: stride, padding, dilation. Note the {w, h} order. */
typedef struct
{
    int32_t w;
    int32_t h;
} cmsis_nn_tile;

/** Scratch buffer handed to a kernel; sized by the kernel's *_get_buffer_size(). */
typedef struct
{
    void *buf;
    int32_t size;
} cmsis_nn_context;

/** Tensor dimensions {n, h, w, c}; n is the batch or, for filters, the output channels. */
typedef struct
{
    int32_t n;
    int32_t h;
    int32_t w;
    int32_t c;
} cmsis_nn_dims;

/** Per-output-channel requantization: arrays of multiplier and shift (positive = left). */
typedef struct
{
    int32_t *multiplier;
    int32_t *shift;
} cmsis_nn_per_channel_quant_params;

/** Per-tensor requantization. */
typedef struct
{
    int32_t multiplier;
    int32_t shift;
} cmsis_nn_per_tensor_quant_params;

/** Inclusive output clamp range (fused ReLU / ReLU6 land here). */
typedef struct
{
    int32_t min;
    int32_t max;
} cmsis_nn_activation;

/** Convolution parameters; input_offset = -input_zero_point, output_offset = output_zero_point. */
typedef struct
{
    int32_t input_offset;
    int32_t output_offset;
    cmsis_nn_tile stride;
    cmsis_nn_tile padding;
    cmsis_nn_tile dilation;
    cmsis_nn_activation activation;
} cmsis_nn_conv_params;

/** Transpose convolution parameters; padding is top/left, padding_offsets the bottom/right extra. */
typedef struct
{
    int32_t input_offset;
    int32_t output_offset;
    cmsis_nn_tile stride;
    cmsis_nn_tile padding;
    cmsis_nn_tile padding_offsets;
    cmsis_nn_tile dilation;
    cmsis_nn_activation activation;
} cmsis_nn_transpose_conv_params;

/** Depthwise convolution parameters; ch_mult * in_ch = out_ch. */
typedef struct
{
    int32_t input_offset;
    int32_t output_offset;
    int32_t ch_mult;
    cmsis_nn_tile stride;
    cmsis_nn_tile padding;
    cmsis_nn_tile dilation;
    cmsis_nn_activation activation;
} cmsis_nn_dw_conv_params;

/** Pooling parameters. */
typedef struct
{
    cmsis_nn_tile stride;
    cmsis_nn_tile padding;
    cmsis_nn_activation activation;
} cmsis_nn_pool_params;

/** Fully connected parameters; filter_offset = -filter_zero_point (0 for symmetric weights). */
typedef struct
{
    int32_t input_offset;
    int32_t filter_offset;
    int32_t output_offset;
    cmsis_nn_activation activation;
} cmsis_nn_fc_params;

/** Batch matmul parameters. arm_batch_matmul_s8 reads only fc_params (filter_offset = -rhs zero
 *  point); adj_x / adj_y describe transposes the caller has already done. */
typedef struct
{
    const bool adj_x;
    const bool adj_y;
    cmsis_nn_fc_params fc_params;
} cmsis_nn_bmm_params;

/** Transpose parameters: output axis k is input axis permutations[k] (num_dims entries). */
typedef struct
{
    const int32_t num_dims;
    const uint32_t *permutations;
} cmsis_nn_transpose_params;

#ifdef __cplusplus
}
#endif

#endif /* ARM_NN_TYPES_H */
