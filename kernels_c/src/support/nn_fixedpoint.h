/*
 * refsim kernels_c: scalar fixed-point helpers, CMSIS-NN default (double rounding) build.
 *
 * Each helper names the CMSIS-NN helper it mirrors (Include/arm_nnsupportfunctions.h) and its
 * rounding; kernels_py/fixedpoint.py is the Python twin. Where C would have signed-overflow
 * undefined behaviour (the pre-shift, the add of two requantized terms) we compute in uint32_t
 * so the two's-complement wrap CMSIS-NN gets in practice is what the code says.
 */
#ifndef RS_NN_FIXEDPOINT_H
#define RS_NN_FIXEDPOINT_H

#include <stdint.h>

#define NN_MAX(a, b) ((a) > (b) ? (a) : (b))
#define NN_MIN(a, b) ((a) < (b) ? (a) : (b))

/** CMSIS-NN LEFT_SHIFT(shift) / RIGHT_SHIFT(shift): the two halves of a signed shift. */
static inline int32_t nn_left_shift(int32_t shift) { return shift > 0 ? shift : 0; }
static inline int32_t nn_right_shift(int32_t shift) { return shift > 0 ? 0 : -shift; }

/** a + b with two's-complement wrap (C int32 overflow made explicit). */
static inline int32_t nn_add_wrap(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }

/** a << s with two's-complement wrap, s in [0, 31] (CMSIS-NN writes a * (1 << s)). */
static inline int32_t nn_shl_wrap(int32_t a, int32_t s) { return (int32_t)((uint32_t)a << s); }

/**
 * arm_nn_doubling_high_mult_no_sat: (m1 * m2 + 2^30) >> 31 in 64 bits, narrowed to int32.
 * The shift floors, so a negative midpoint rounds toward +inf. INT32_MIN * INT32_MIN wraps
 * (never met: multipliers are positive, or negated for subtraction, never INT32_MIN).
 */
static inline int32_t nn_doubling_high_mult_no_sat(int32_t m1, int32_t m2)
{
    const int64_t product = (int64_t)m1 * (int64_t)m2 + ((int64_t)1 << 30);
    return (int32_t)(product >> 31);
}

/**
 * arm_nn_doubling_high_mult (MUL_SAT, VQRDMULH): as above but the rounding nudge is 1 - 2^30
 * when exactly one operand is negative and the division truncates toward zero, so the
 * midpoint rounds away from zero; INT32_MIN * INT32_MIN saturates to INT32_MAX.
 */
static inline int32_t nn_doubling_high_mult(int32_t m1, int32_t m2)
{
    if (m1 == INT32_MIN && m2 == INT32_MIN)
    {
        return INT32_MAX;
    }
    const int64_t nudge = ((m1 < 0) != (m2 < 0)) ? (1 - ((int64_t)1 << 30)) : ((int64_t)1 << 30);
    return (int32_t)(((int64_t)m1 * (int64_t)m2 + nudge) / ((int64_t)1 << 31));
}

/**
 * arm_nn_divide_by_power_of_two (DIV_POW2): rounding arithmetic shift right, exponent in
 * [0, 31]. The low bits are compared against (mask >> 1), plus one when the floored quotient
 * is negative: the midpoint rounds away from zero.
 */
static inline int32_t nn_divide_by_power_of_two(int32_t dividend, int32_t exponent)
{
    const uint32_t remainder_mask = (uint32_t)(((uint64_t)1 << exponent) - 1U);
    const int32_t remainder = (int32_t)((uint32_t)dividend & remainder_mask);
    int32_t result = dividend >> exponent; /* arithmetic shift on GCC/Arm */
    int32_t threshold = (int32_t)(remainder_mask >> 1);
    if (result < 0)
    {
        threshold++;
    }
    if (remainder > threshold)
    {
        result++;
    }
    return result;
}

/**
 * arm_nn_requantize, default build: DIV_POW2(doubling_high_mult_no_sat(val << max(shift, 0),
 * multiplier), max(-shift, 0)). shift in [-31, 30]. Equals TFLM's MultiplyByQuantizedMultiplier
 * with TFLITE_SINGLE_ROUNDING=0.
 */
static inline int32_t nn_requantize(int32_t val, int32_t multiplier, int32_t shift)
{
    return nn_divide_by_power_of_two(
        nn_doubling_high_mult_no_sat(nn_shl_wrap(val, nn_left_shift(shift)), multiplier), nn_right_shift(shift));
}

/** CLAMP(x, hi, lo) = MAX(MIN(x, hi), lo), narrowed to int8 (the range lies inside int8). */
static inline int8_t nn_clamp_s8(int32_t x, int32_t lo, int32_t hi) { return (int8_t)NN_MAX(NN_MIN(x, hi), lo); }

/**
 * nn_requantize (arm_nn_requantize, default double-rounding build) in fewer instructions: bit for
 * bit the same for every val and shift in [-31, 30] and every multiplier except INT32_MIN.
 * With q = val * multiplier + 2^30 (64-bit, SMLAL) and r = -shift > 0, the high multiply is
 * h = floor(q / 2^31), and DIV_POW2(h, r) = floor((h + 2^(r-1) - [h < 0]) / 2^r) (ties away from
 * zero; h < 0 exactly when q < 0). Nested floors merge: floor((floor(q / 2^31) + k) / 2^r) =
 * floor((q + k * 2^31) / 2^(31 + r)), so one 64-bit add and the high word shifted by r - 1 give the
 * result (12 Thumb-2 instructions where nn_requantize takes 22). |q + k * 2^31| < 2^63: no overflow.
 */
static inline int32_t nn_requantize_64(int32_t val, int32_t multiplier, int32_t shift)
{
    if (shift >= 0)
    {
        const int64_t q = (int64_t)nn_shl_wrap(val, shift) * multiplier + ((int64_t)1 << 30);
        return (int32_t)(q >> 31);
    }
    const int32_t right = -shift;
    const int64_t q = (int64_t)val * multiplier + ((int64_t)1 << 30);
    const uint32_t negative = (uint32_t)(int32_t)(q >> 63); /* all ones when q < 0 */
    const uint64_t k = (uint32_t)((1U << (right - 1)) + negative);  /* 2^(r-1) - [q < 0], >= 0 */
    const int64_t t = q + (int64_t)(k << 31);
    return (int32_t)(t >> 32) >> (right - 1);
}

#endif /* RS_NN_FIXEDPOINT_H */
