/*
 * refsim kernels_c: helpers for the MVE (Helium) tier, integer MVE (ACLE arm_mve.h).
 *
 * Only included by translation units that define MVE variants, inside #if ARM_MATH_MVEI.
 * The vector requantize is lane-for-lane identical to nn_requantize() (nn_fixedpoint.h):
 *  - VSHL by a register amount wraps like the scalar pre-shift;
 *  - VQRDMULH is (2ab + 2^31) >> 32 = (ab + 2^30) >> 31, the no-saturation doubling high
 *    multiply, except for INT32_MIN * INT32_MIN, which a requantize never meets;
 *  - the rounding divide subtracts one from negative lanes (saturating, so INT32_MIN stays
 *    put) and then uses VRSHL's round-half-up, which together round half away from zero,
 *    exactly DIV_POW2's threshold rule.
 */
#ifndef RS_NN_MVE_H
#define RS_NN_MVE_H

#include <arm_mve.h>
#include <stdint.h>

/** Lane-wise DIV_POW2 (arm_divide_by_power_of_two_mve), exponent in [0, 31], uniform. */
static inline int32x4_t nn_divide_by_power_of_two_mve(int32x4_t dividend, int32_t exponent)
{
    /* -1 in lanes where dividend < 0 and there is something to round (exponent > 0). The mask is
     * arithmetic, not a conditional, so GCC keeps the loops that call this free of branches. */
    const int32_t rounding_mask = (-exponent) >> 31; /* -1 when exponent > 0, else 0 */
    const int32x4_t negative_fixup = vandq_s32(vshrq_n_s32(dividend, 31), vdupq_n_s32(rounding_mask));
    return vrshlq_n_s32(vqaddq_s32(dividend, negative_fixup), -exponent);
}

/** Lane-wise nn_requantize (arm_requantize_mve), default double-rounding build. */
static inline int32x4_t nn_requantize_mve(int32x4_t val, int32_t multiplier, int32_t shift)
{
    const int32x4_t shifted = vshlq_r_s32(val, shift > 0 ? shift : 0);
    return nn_divide_by_power_of_two_mve(vqrdmulhq_n_s32(shifted, multiplier), shift > 0 ? 0 : -shift);
}

/** Clamp lanes to [lo, hi]. */
static inline int32x4_t nn_clamp_mve(int32x4_t v, int32_t lo, int32_t hi)
{
    return vminq_s32(vmaxq_s32(v, vdupq_n_s32(lo)), vdupq_n_s32(hi));
}

/* Fill and copy as tail-predicated low-overhead loops: WLSTP.8 loads LR with the byte count (and
 * skips the loop when it is 0), each pass stores min(16, remaining) bytes, LETP loops while bytes
 * remain: two instructions per 16 bytes for a fill, three for a copy, no scalar tail. */
static inline void nn_fill_s8_mve(int8_t *dst, int8_t value, int32_t count)
{
    __asm volatile("   vdup.8      q0, %[value]          \n"
                   "   wlstp.8     lr, %[count], 1f      \n"
                   "2: vstrb.8     q0, [%[dst]], #16     \n"
                   "   letp        lr, 2b                \n"
                   "1:                                   \n"
                   : [dst] "+r"(dst)
                   : [value] "r"((int32_t)value), [count] "r"(count)
                   : "q0", "lr", "memory");
}

static inline void nn_copy_s8_mve(int8_t *dst, const int8_t *src, int32_t count)
{
    __asm volatile("   wlstp.8     lr, %[count], 1f      \n"
                   "2: vldrb.8     q0, [%[src]], #16     \n"
                   "   vstrb.8     q0, [%[dst]], #16     \n"
                   "   letp        lr, 2b                \n"
                   "1:                                   \n"
                   : [dst] "+r"(dst), [src] "+r"(src)
                   : [count] "r"(count)
                   : "q0", "lr", "memory");
}

#endif /* RS_NN_MVE_H */
