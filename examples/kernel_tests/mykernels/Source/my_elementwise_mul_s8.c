/* my_kernels: an elementwise int8 multiply written from CMSIS-NN's documented arithmetic
 * (arm_elementwise_mul_s8: out = clamp(requantize((x1 + o1) * (x2 + o2)) + out_offset)),
 * the requantization in the default double-rounding form of arm_nn_requantize. */
#include "arm_nnfunctions.h"

/* (a * b + 2^30) >> 31 in 64 bits: round half up, as arm_nn_doubling_high_mult_no_sat. */
static int32_t high_mult(int32_t a, int32_t b)
{
    const int64_t rounding = (int64_t)1 << 30;
    return (int32_t)(((int64_t)a * b + rounding) >> 31);
}

/* x / 2^exponent rounded to nearest, ties away from zero, as arm_nn_divide_by_power_of_two. */
static int32_t divide_pow2(int32_t x, int32_t exponent)
{
    const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

static int32_t requantize(int32_t x, int32_t mult, int32_t shift)
{
    const int32_t left = shift > 0 ? shift : 0;
    return divide_pow2(high_mult((int32_t)((uint32_t)x << left), mult), shift > 0 ? 0 : -shift);
}

arm_cmsis_nn_status arm_elementwise_mul_s8(const int8_t *input_1_vect, const int8_t *input_2_vect,
                                           const int32_t input_1_offset, const int32_t input_2_offset,
                                           int8_t *output, const int32_t out_offset, const int32_t out_mult,
                                           const int32_t out_shift, const int32_t out_activation_min,
                                           const int32_t out_activation_max, const int32_t block_size)
{
    for (int32_t i = 0; i < block_size; i++)
    {
        const int32_t product = (input_1_vect[i] + input_1_offset) * (input_2_vect[i] + input_2_offset);
        int32_t out = requantize(product, out_mult, out_shift) + out_offset;
        out = out < out_activation_min ? out_activation_min : out;
        output[i] = (int8_t)(out > out_activation_max ? out_activation_max : out);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
