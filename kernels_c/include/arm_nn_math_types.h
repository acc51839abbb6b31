/*
 * refsim kernels_c: compiler feature mapping and basic limits (CMSIS-NN compatible subset).
 *
 * Our own header with the names CMSIS-NN's Include/arm_nn_math_types.h gives callers:
 * ARM_MATH_DSP / ARM_MATH_MVEI derived from the ACLE feature macros, the NN_Q*_MAX/MIN limits
 * and the __STATIC_FORCEINLINE helper macro. The ISA tier of a build is decided here only.
 */
#ifndef ARM_NN_MATH_TYPES_H
#define ARM_NN_MATH_TYPES_H

#include <limits.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__ARM_FEATURE_DSP) && (__ARM_FEATURE_DSP == 1)
    #ifndef ARM_MATH_DSP
        #define ARM_MATH_DSP 1
    #endif
#endif

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
    #ifndef ARM_MATH_MVEI
        #define ARM_MATH_MVEI 1
    #endif
#endif

#ifndef __STATIC_FORCEINLINE
    #define __STATIC_FORCEINLINE static inline __attribute__((always_inline))
#endif
#ifndef __STATIC_INLINE
    #define __STATIC_INLINE static inline
#endif

#define NN_Q31_MAX ((int32_t)(0x7FFFFFFFL))
#define NN_Q15_MAX ((int16_t)(0x7FFF))
#define NN_Q7_MAX ((int8_t)(0x7F))
#define NN_Q31_MIN ((int32_t)(0x80000000L))
#define NN_Q15_MIN ((int16_t)(0x8000))
#define NN_Q7_MIN ((int8_t)(0x80))

#ifdef __cplusplus
}
#endif

#endif /* ARM_NN_MATH_TYPES_H */
