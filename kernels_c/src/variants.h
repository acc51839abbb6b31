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

#endif /* RS_VARIANTS_H */
