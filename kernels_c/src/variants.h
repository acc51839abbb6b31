/*
 * refsim kernels_c: the per-tier implementations behind each public CMSIS-NN function.
 *
 * Every public kernel arm_<op>_s8() is a thin dispatch to exactly one of
 * rs_<op>_s8_scalar / _dsp / _mve, chosen by the build's ARM_MATH_* macros
 * (arm_nn_math_types.h). The variants have the public signature, so the QEMU harness can
 * also run a lower tier on a richer core (the scalar code on a Cortex-M55, say) and check
 * that no tier changes an output bit. A variant exists in a build only when the core has
 * the instructions it uses: RS_HAVE_DSP / RS_HAVE_MVE say which.
 */
#ifndef RS_VARIANTS_H
#define RS_VARIANTS_H

#include "arm_nnfunctions.h"

#if defined(ARM_MATH_DSP)
    #define RS_HAVE_DSP 1
#else
    #define RS_HAVE_DSP 0
#endif

#if defined(ARM_MATH_MVEI)
    #define RS_HAVE_MVE 1
#else
    #define RS_HAVE_MVE 0
#endif

#define RS_ELEMENTWISE_ADD_ARGS                                                                                    \
    const int8_t *input_1_vect, const int8_t *input_2_vect, const int32_t input_1_offset,                          \
        const int32_t input_1_mult, const int32_t input_1_shift, const int32_t input_2_offset,                     \
        const int32_t input_2_mult, const int32_t input_2_shift, const int32_t left_shift, int8_t *output,         \
        const int32_t out_offset, const int32_t out_mult, const int32_t out_shift,                                 \
        const int32_t out_activation_min, const int32_t out_activation_max, const int32_t block_size

#define RS_ELEMENTWISE_MUL_ARGS                                                                                    \
    const int8_t *input_1_vect, const int8_t *input_2_vect, const int32_t input_1_offset,                          \
        const int32_t input_2_offset, int8_t *output, const int32_t out_offset, const int32_t out_mult,            \
        const int32_t out_shift, const int32_t out_activation_min, const int32_t out_activation_max,               \
        const int32_t block_size

#define RS_FULLY_CONNECTED_ARGS                                                                                    \
    const cmsis_nn_context *ctx, const cmsis_nn_fc_params *fc_params,                                              \
        const cmsis_nn_per_tensor_quant_params *quant_params, const cmsis_nn_dims *input_dims,                     \
        const int8_t *input_data, const cmsis_nn_dims *filter_dims, const int8_t *filter_data,                     \
        const cmsis_nn_dims *bias_dims, const int32_t *bias_data, const cmsis_nn_dims *output_dims,                \
        int8_t *output_data

arm_cmsis_nn_status rs_elementwise_add_s8_scalar(RS_ELEMENTWISE_ADD_ARGS);
arm_cmsis_nn_status rs_elementwise_add_s8_dsp(RS_ELEMENTWISE_ADD_ARGS);
arm_cmsis_nn_status rs_elementwise_add_s8_mve(RS_ELEMENTWISE_ADD_ARGS);

arm_cmsis_nn_status rs_elementwise_mul_s8_scalar(RS_ELEMENTWISE_MUL_ARGS);
arm_cmsis_nn_status rs_elementwise_mul_s8_dsp(RS_ELEMENTWISE_MUL_ARGS);
arm_cmsis_nn_status rs_elementwise_mul_s8_mve(RS_ELEMENTWISE_MUL_ARGS);

arm_cmsis_nn_status rs_fully_connected_s8_scalar(RS_FULLY_CONNECTED_ARGS);
arm_cmsis_nn_status rs_fully_connected_s8_dsp(RS_FULLY_CONNECTED_ARGS);
arm_cmsis_nn_status rs_fully_connected_s8_mve(RS_FULLY_CONNECTED_ARGS);

/* Depthwise (src/depthwise_s8.c): the wrapper's variants route as a CMSIS-NN build of that tier. */
#define RS_DEPTHWISE_CONV_ARGS                                                                                     \
    const cmsis_nn_context *ctx, const cmsis_nn_dw_conv_params *dw_conv_params,                                    \
        const cmsis_nn_per_channel_quant_params *quant_params, const cmsis_nn_dims *input_dims,                    \
        const int8_t *input, const cmsis_nn_dims *filter_dims, const int8_t *filter,                               \
        const cmsis_nn_dims *bias_dims, const int32_t *bias, const cmsis_nn_dims *output_dims, int8_t *output

arm_cmsis_nn_status rs_depthwise_conv_wrapper_s8_scalar(RS_DEPTHWISE_CONV_ARGS);
arm_cmsis_nn_status rs_depthwise_conv_wrapper_s8_dsp(RS_DEPTHWISE_CONV_ARGS);
arm_cmsis_nn_status rs_depthwise_conv_wrapper_s8_mve(RS_DEPTHWISE_CONV_ARGS);

arm_cmsis_nn_status rs_depthwise_conv_s8_scalar(RS_DEPTHWISE_CONV_ARGS);
arm_cmsis_nn_status rs_depthwise_conv_s8_dsp(RS_DEPTHWISE_CONV_ARGS);
arm_cmsis_nn_status rs_depthwise_conv_s8_mve(RS_DEPTHWISE_CONV_ARGS);

arm_cmsis_nn_status rs_depthwise_conv_3x3_s8_scalar(RS_DEPTHWISE_CONV_ARGS);
arm_cmsis_nn_status rs_depthwise_conv_3x3_s8_dsp(RS_DEPTHWISE_CONV_ARGS);
arm_cmsis_nn_status rs_depthwise_conv_3x3_s8_mve(RS_DEPTHWISE_CONV_ARGS);

arm_cmsis_nn_status rs_depthwise_conv_s8_opt_scalar(RS_DEPTHWISE_CONV_ARGS);
arm_cmsis_nn_status rs_depthwise_conv_s8_opt_dsp(RS_DEPTHWISE_CONV_ARGS);
arm_cmsis_nn_status rs_depthwise_conv_s8_opt_mve(RS_DEPTHWISE_CONV_ARGS);

/* Pooling (src/pooling_s8_avg.c, src/pooling_s8_max.c). */
#define RS_POOL_ARGS                                                                                               \
    const cmsis_nn_context *ctx, const cmsis_nn_pool_params *pool_params, const cmsis_nn_dims *input_dims,         \
        const int8_t *src, const cmsis_nn_dims *filter_dims, const cmsis_nn_dims *output_dims, int8_t *dst

arm_cmsis_nn_status rs_avgpool_s8_scalar(RS_POOL_ARGS);
arm_cmsis_nn_status rs_avgpool_s8_dsp(RS_POOL_ARGS);
arm_cmsis_nn_status rs_avgpool_s8_mve(RS_POOL_ARGS);

arm_cmsis_nn_status rs_max_pool_s8_scalar(RS_POOL_ARGS);
arm_cmsis_nn_status rs_max_pool_s8_dsp(RS_POOL_ARGS);
arm_cmsis_nn_status rs_max_pool_s8_mve(RS_POOL_ARGS);

/* Convolution family (src/conv_s8*.c): arm_convolve_s8 takes upscale_dims (CMSIS-NN v7); the
 * 1x1, 1xN and wrapper functions share the 11-argument signature. The wrappers' variants route
 * to the same tier's kernels. */
#define RS_CONVOLVE_ARGS                                                                                           \
    const cmsis_nn_context *ctx, const cmsis_nn_conv_params *conv_params,                                          \
        const cmsis_nn_per_channel_quant_params *quant_params, const cmsis_nn_dims *input_dims,                    \
        const int8_t *input_data, const cmsis_nn_dims *filter_dims, const int8_t *filter_data,                     \
        const cmsis_nn_dims *bias_dims, const int32_t *bias_data, const cmsis_nn_dims *upscale_dims,               \
        const cmsis_nn_dims *output_dims, int8_t *output_data

#define RS_CONVOLVE_WRAPPER_ARGS                                                                                   \
    const cmsis_nn_context *ctx, const cmsis_nn_conv_params *conv_params,                                          \
        const cmsis_nn_per_channel_quant_params *quant_params, const cmsis_nn_dims *input_dims,                    \
        const int8_t *input_data, const cmsis_nn_dims *filter_dims, const int8_t *filter_data,                     \
        const cmsis_nn_dims *bias_dims, const int32_t *bias_data, const cmsis_nn_dims *output_dims,                \
        int8_t *output_data

#define RS_TRANSPOSE_CONV_ARGS                                                                                     \
    const cmsis_nn_context *ctx, const cmsis_nn_context *output_ctx,                                               \
        const cmsis_nn_transpose_conv_params *transpose_conv_params,                                               \
        const cmsis_nn_per_channel_quant_params *quant_params, const cmsis_nn_dims *input_dims,                    \
        const int8_t *input_data, const cmsis_nn_dims *filter_dims, const int8_t *filter_data,                     \
        const cmsis_nn_dims *bias_dims, const int32_t *bias_data, const cmsis_nn_dims *output_dims,                \
        int8_t *output_data

#define RS_TRANSPOSE_CONV_WRAPPER_ARGS                                                                             \
    const cmsis_nn_context *ctx, const cmsis_nn_context *reverse_conv_ctx,                                         \
        const cmsis_nn_transpose_conv_params *transpose_conv_params,                                               \
        const cmsis_nn_per_channel_quant_params *quant_params, const cmsis_nn_dims *input_dims,                    \
        const int8_t *input_data, const cmsis_nn_dims *filter_dims, const int8_t *filter_data,                     \
        const cmsis_nn_dims *bias_dims, const int32_t *bias_data, const cmsis_nn_dims *output_dims,                \
        int8_t *output_data

arm_cmsis_nn_status rs_convolve_s8_scalar(RS_CONVOLVE_ARGS);
arm_cmsis_nn_status rs_convolve_s8_dsp(RS_CONVOLVE_ARGS);
arm_cmsis_nn_status rs_convolve_s8_mve(RS_CONVOLVE_ARGS);

arm_cmsis_nn_status rs_convolve_wrapper_s8_scalar(RS_CONVOLVE_WRAPPER_ARGS);
arm_cmsis_nn_status rs_convolve_wrapper_s8_dsp(RS_CONVOLVE_WRAPPER_ARGS);
arm_cmsis_nn_status rs_convolve_wrapper_s8_mve(RS_CONVOLVE_WRAPPER_ARGS);

arm_cmsis_nn_status rs_convolve_1x1_s8_fast_scalar(RS_CONVOLVE_WRAPPER_ARGS);
arm_cmsis_nn_status rs_convolve_1x1_s8_fast_dsp(RS_CONVOLVE_WRAPPER_ARGS);
arm_cmsis_nn_status rs_convolve_1x1_s8_fast_mve(RS_CONVOLVE_WRAPPER_ARGS);

arm_cmsis_nn_status rs_convolve_1x1_s8_scalar(RS_CONVOLVE_WRAPPER_ARGS);
arm_cmsis_nn_status rs_convolve_1x1_s8_dsp(RS_CONVOLVE_WRAPPER_ARGS);
arm_cmsis_nn_status rs_convolve_1x1_s8_mve(RS_CONVOLVE_WRAPPER_ARGS);

arm_cmsis_nn_status rs_convolve_1_x_n_s8_scalar(RS_CONVOLVE_WRAPPER_ARGS);
arm_cmsis_nn_status rs_convolve_1_x_n_s8_dsp(RS_CONVOLVE_WRAPPER_ARGS);
arm_cmsis_nn_status rs_convolve_1_x_n_s8_mve(RS_CONVOLVE_WRAPPER_ARGS);

arm_cmsis_nn_status rs_transpose_conv_s8_scalar(RS_TRANSPOSE_CONV_ARGS);
arm_cmsis_nn_status rs_transpose_conv_s8_dsp(RS_TRANSPOSE_CONV_ARGS);
arm_cmsis_nn_status rs_transpose_conv_s8_mve(RS_TRANSPOSE_CONV_ARGS);

arm_cmsis_nn_status rs_transpose_conv_wrapper_s8_scalar(RS_TRANSPOSE_CONV_WRAPPER_ARGS);
arm_cmsis_nn_status rs_transpose_conv_wrapper_s8_dsp(RS_TRANSPOSE_CONV_WRAPPER_ARGS);
arm_cmsis_nn_status rs_transpose_conv_wrapper_s8_mve(RS_TRANSPOSE_CONV_WRAPPER_ARGS);

/* Scratch bytes of one convolution-family function on one tier (1 scalar, 2 DSP, 3 MVE, the
 * RS_VARIANT_* numbers): kernels_py.conv's and conv_transpose's sizes for isa scalar / dsp / mve.
 * The public get_buffer_size functions are these at the build's tier; the harness sizes ctx->buf
 * with them. */
int32_t rs_convolve_s8_buffer_size_tier(int32_t tier, const cmsis_nn_dims *input_dims,
                                        const cmsis_nn_dims *filter_dims);
int32_t rs_convolve_1x1_s8_fast_buffer_size_tier(int32_t tier, const cmsis_nn_dims *input_dims);
int32_t rs_convolve_1_x_n_s8_buffer_size_tier(int32_t tier, const cmsis_nn_conv_params *conv_params,
                                              const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims,
                                              const cmsis_nn_dims *output_dims);
int32_t rs_convolve_wrapper_s8_buffer_size_tier(int32_t tier, const cmsis_nn_conv_params *conv_params,
                                                const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims,
                                                const cmsis_nn_dims *output_dims);
int32_t rs_transpose_conv_s8_buffer_size_tier(int32_t tier, const cmsis_nn_transpose_conv_params *p,
                                              const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims,
                                              const cmsis_nn_dims *out_dims);

/* Softmax, matmul, min/max, activations and layout (src/{softmax,batch_matmul,
 * fully_connected_per_channel,minmax,activation,layout}_s8.c). */
#define RS_SOFTMAX_ARGS                                                                                            \
    const int8_t *input, const int32_t num_rows, const int32_t row_size, const int32_t mult, const int32_t shift,  \
        const int32_t diff_min, int8_t *output

#define RS_FULLY_CONNECTED_PER_CHANNEL_ARGS                                                                        \
    const cmsis_nn_context *ctx, const cmsis_nn_fc_params *fc_params,                                              \
        const cmsis_nn_per_channel_quant_params *quant_params, const cmsis_nn_dims *input_dims,                    \
        const int8_t *input_data, const cmsis_nn_dims *filter_dims, const int8_t *filter_data,                     \
        const cmsis_nn_dims *bias_dims, const int32_t *bias_data, const cmsis_nn_dims *output_dims,                \
        int8_t *output_data

#define RS_BATCH_MATMUL_ARGS                                                                                       \
    const cmsis_nn_context *ctx, const cmsis_nn_bmm_params *bmm_params,                                            \
        const cmsis_nn_per_tensor_quant_params *quant_params, const cmsis_nn_dims *input_lhs_dims,                 \
        const int8_t *input_lhs, const cmsis_nn_dims *input_rhs_dims, const int8_t *input_rhs,                     \
        const cmsis_nn_dims *output_dims, int8_t *output

#define RS_MINMAX_ARGS                                                                                             \
    const cmsis_nn_context *ctx, const int8_t *input_1_data, const cmsis_nn_dims *input_1_dims,                    \
        const int8_t *input_2_data, const cmsis_nn_dims *input_2_dims, int8_t *output_data,                        \
        const cmsis_nn_dims *output_dims

#define RS_PAD_ARGS                                                                                                \
    const int8_t *input, int8_t *output, const int8_t pad_value, const cmsis_nn_dims *input_size,                  \
        const cmsis_nn_dims *pre_pad, const cmsis_nn_dims *post_pad

#define RS_TRANSPOSE_ARGS                                                                                          \
    const int8_t *input, int8_t *const output, const cmsis_nn_dims *const input_dims,                              \
        const cmsis_nn_dims *const output_dims, const cmsis_nn_transpose_params *const transpose_params

#define RS_LUT_ARGS const int8_t *input, const int8_t *lut, int8_t *output, const int32_t size

#define RS_VECTOR_SUM_ARGS                                                                                         \
    int32_t *vector_sum_buf, const int32_t vector_cols, const int32_t vector_rows, const int8_t *vector_data,      \
        const int32_t lhs_offset, const int32_t rhs_offset, const int32_t *bias_data

void rs_softmax_s8_scalar(RS_SOFTMAX_ARGS);
void rs_softmax_s8_dsp(RS_SOFTMAX_ARGS);
void rs_softmax_s8_mve(RS_SOFTMAX_ARGS);

arm_cmsis_nn_status rs_fully_connected_per_channel_s8_scalar(RS_FULLY_CONNECTED_PER_CHANNEL_ARGS);
arm_cmsis_nn_status rs_fully_connected_per_channel_s8_dsp(RS_FULLY_CONNECTED_PER_CHANNEL_ARGS);
arm_cmsis_nn_status rs_fully_connected_per_channel_s8_mve(RS_FULLY_CONNECTED_PER_CHANNEL_ARGS);

arm_cmsis_nn_status rs_batch_matmul_s8_scalar(RS_BATCH_MATMUL_ARGS);
arm_cmsis_nn_status rs_batch_matmul_s8_dsp(RS_BATCH_MATMUL_ARGS);
arm_cmsis_nn_status rs_batch_matmul_s8_mve(RS_BATCH_MATMUL_ARGS);

arm_cmsis_nn_status rs_maximum_s8_scalar(RS_MINMAX_ARGS);
arm_cmsis_nn_status rs_maximum_s8_dsp(RS_MINMAX_ARGS);
arm_cmsis_nn_status rs_maximum_s8_mve(RS_MINMAX_ARGS);

arm_cmsis_nn_status rs_minimum_s8_scalar(RS_MINMAX_ARGS);
arm_cmsis_nn_status rs_minimum_s8_dsp(RS_MINMAX_ARGS);
arm_cmsis_nn_status rs_minimum_s8_mve(RS_MINMAX_ARGS);

void rs_relu6_s8_scalar(int8_t *data, uint16_t size);
void rs_relu6_s8_dsp(int8_t *data, uint16_t size);
void rs_relu6_s8_mve(int8_t *data, uint16_t size);

arm_cmsis_nn_status rs_pad_s8_scalar(RS_PAD_ARGS);
arm_cmsis_nn_status rs_pad_s8_dsp(RS_PAD_ARGS);
arm_cmsis_nn_status rs_pad_s8_mve(RS_PAD_ARGS);

arm_cmsis_nn_status rs_transpose_s8_scalar(RS_TRANSPOSE_ARGS);
arm_cmsis_nn_status rs_transpose_s8_dsp(RS_TRANSPOSE_ARGS);
arm_cmsis_nn_status rs_transpose_s8_mve(RS_TRANSPOSE_ARGS);

arm_cmsis_nn_status rs_lut_s8_scalar(RS_LUT_ARGS);
arm_cmsis_nn_status rs_lut_s8_dsp(RS_LUT_ARGS);
arm_cmsis_nn_status rs_lut_s8_mve(RS_LUT_ARGS);

arm_cmsis_nn_status rs_vector_sum_s8_scalar(RS_VECTOR_SUM_ARGS);
arm_cmsis_nn_status rs_vector_sum_s8_dsp(RS_VECTOR_SUM_ARGS);
arm_cmsis_nn_status rs_vector_sum_s8_mve(RS_VECTOR_SUM_ARGS);

#endif /* RS_VARIANTS_H */
