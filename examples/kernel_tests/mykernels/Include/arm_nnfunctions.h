/* my_kernels: the one CMSIS-NN function this library implements, with CMSIS-NN's prototype.
 * arm_nn_types.h (cmsis_nn_dims, arm_cmsis_nn_status ...) is not ours: when Include/ lacks it,
 * refsim's build takes refsim's copy of the CMSIS-NN types (docs/testing.md). */
#ifndef MY_ARM_NNFUNCTIONS_H
#define MY_ARM_NNFUNCTIONS_H

#include <stdint.h>

#include "arm_nn_types.h"

arm_cmsis_nn_status arm_elementwise_mul_s8(const int8_t *input_1_vect, const int8_t *input_2_vect,
                                           const int32_t input_1_offset, const int32_t input_2_offset,
                                           int8_t *output, const int32_t out_offset, const int32_t out_mult,
                                           const int32_t out_shift, const int32_t out_activation_min,
                                           const int32_t out_activation_max, const int32_t block_size);

#endif
