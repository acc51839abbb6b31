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

/**
 * word's bits [lsb, lsb + 8) replaced by the low byte of v: one BFI (lsb a literal 0, 8, 16 or 24).
 * Inline asm because GCC 12 turns the mask-and-or into EOR/AND/EOR.
 */
#define NN_INSERT_BYTE(word, v, lsb) __asm("bfi %0, %1, #" #lsb ", #8" : "+r"(word) : "r"(v))

/**
 * Four int8 values, each already in [-128, 127] (SSAT), as one word, clamped bytewise to [lo, hi]
 * (lo_x4 / hi_x4: the bounds in all four bytes): SSUB8 sets a GE flag per byte, SEL picks.
 */
static inline int32_t nn_pack_clamp_s8x4(uint32_t v0, uint32_t v1, uint32_t v2, uint32_t v3, int32_t lo_x4,
                                         int32_t hi_x4)
{
    uint32_t word = v0;
    NN_INSERT_BYTE(word, v1, 8);
    NN_INSERT_BYTE(word, v2, 16);
    NN_INSERT_BYTE(word, v3, 24);
    (void)__ssub8((int8x4_t)word, (int8x4_t)lo_x4); /* GE where word >= lo: keep word */
    word = __sel((uint8x4_t)word, (uint8x4_t)lo_x4);
    (void)__ssub8((int8x4_t)word, (int8x4_t)hi_x4); /* GE where word >= hi: take hi */
    return (int32_t)__sel((uint8x4_t)hi_x4, (uint8x4_t)word);
}

/** A clamp bound in all four bytes of a word. */
static inline int32_t nn_bytes_x4(int32_t v) { return (int32_t)((uint32_t)(uint8_t)v * 0x01010101U); }

#endif /* RS_NN_DSP_H */
