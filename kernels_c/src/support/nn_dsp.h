/*
 * refsim kernels_c: helpers for the DSP tier (Armv7E-M / Armv8-M DSP extension, ACLE SIMD32).
 *
 * Only included by translation units that define DSP variants, inside #if ARM_MATH_DSP.
 * Packed int8 data is read four bytes at a time with memcpy (the cores used here allow
 * unaligned LDR; memcpy of 4 bytes compiles to one). SXTB16 sign-extends bytes 0 and 2 of a
 * word into two int16 lanes; with the word rotated by 8 it gives bytes 1 and 3.
 */
#ifndef RS_NN_DSP_H
#define RS_NN_DSP_H

#include <arm_acle.h>
#include <stdint.h>
#include <string.h>

/** Four int8 values as one word (little endian: byte 0 in bits 0..7). */
static inline int32_t nn_read_s8x4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline void nn_write_s8x4(int8_t *p, int32_t v) { memcpy(p, &v, sizeof(v)); }

/*
 * SXTB16 / SXTAB16 with the "ROR #8" operand. GCC 12's ACLE builtins take a plain register and
 * it does not fold a preceding rotate into them (it emits a separate MOV ..., ROR #8), so these
 * two are inline asm. Not volatile: the compiler may still schedule, hoist and CSE them.
 */
static inline int32_t nn_sxtb16_ror8(int32_t v)
{
    int32_t r;
    __asm("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
    return r;
}

static inline int32_t nn_sxtab16_ror8(int32_t a, int32_t v)
{
    int32_t r;
    __asm("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(v));
    return r;
}

/** A 16-bit value in both halves of a word, the operand of SXTAB16 / SADD16. */
static inline int32_t nn_pack_s16x2(int32_t v) { return (int32_t)(((uint32_t)v << 16) | ((uint32_t)v & 0xFFFFU)); }

/** Bytes {0, 2} of w plus the packed offset, as two int16 lanes (SXTAB16). */
static inline int16x2_t nn_sxtab16_even(int32_t offset_x2, int32_t w) { return __sxtab16(offset_x2, w); }

/** Bytes {1, 3} of w plus the packed offset, as two int16 lanes (SXTAB16 with ROR #8). */
static inline int16x2_t nn_sxtab16_odd(int32_t offset_x2, int32_t w) { return nn_sxtab16_ror8(offset_x2, w); }

/** Low / high int16 lane of a packed word. */
static inline int32_t nn_lane_lo(int32_t v) { return (int16_t)(v & 0xFFFF); }
static inline int32_t nn_lane_hi(int32_t v) { return v >> 16; }

/** Four int8 results packed into a word in memory order. */
static inline int32_t nn_pack_s8x4(int8_t b0, int8_t b1, int8_t b2, int8_t b3)
{
    return (int32_t)(((uint32_t)(uint8_t)b0) | ((uint32_t)(uint8_t)b1 << 8) | ((uint32_t)(uint8_t)b2 << 16) |
                     ((uint32_t)(uint8_t)b3 << 24));
}

#endif /* RS_NN_DSP_H */
