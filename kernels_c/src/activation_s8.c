/*
 * refsim kernels_c: standalone int8 activations (kernels_py/activation.py).
 *
 * - arm_relu6_s8 (CMSIS-NN Source/ActivationFunctions/arm_relu6_s8.c): in place,
 *   data[i] = min(max(data[i], 0), 6) on the raw int8 values, whatever the quantization.
 * - refsim_lut_s8: ExecuTorch cortex_m quantized_activation (backends/cortex_m/ops/
 *   op_quantized_activation.cpp), which has no CMSIS-NN counterpart:
 *   out[i] = lut[(uint8_t)(in[i] + 128)], a 256-entry int8 table indexed by the input biased by
 *   128 (lut[0] is the entry of -128). The table carries all the numerics (kernels_py
 *   build_activation_lut); the kernel only looks up.
 * Neither rounds.
 */
#include "support/nn_fixedpoint.h"
#include "variants.h"

#if RS_HAVE_DSP
    #include "support/nn_dsp.h"
#endif
#if RS_HAVE_MVE
    #include "support/nn_mve.h"
#endif

#define RELU6_MAX 6

/* ------------------------------------------------------------------------------------------ */
/* ReLU6                                                                                      */

void rs_relu6_s8_scalar(int8_t *data, uint16_t size)
{
    for (int32_t i = 0; i < size; i++)
    {
        data[i] = (int8_t)NN_MIN(NN_MAX(data[i], 0), RELU6_MAX);
    }
}

#if RS_HAVE_DSP
/* Four bytes per step: SSUB8 sets GE where a byte is >= 0 (SEL keeps it, else 0), then where
 * 6 - byte >= 0 (SEL keeps it, else 6). */
void rs_relu6_s8_dsp(int8_t *data, uint16_t size)
{
    const uint32_t six = 0x06060606U;
    const int32_t size_4 = size & ~3;
    int32_t i = 0;
    for (; i < size_4; i += 4)
    {
        uint32_t w = (uint32_t)nn_read_s8x4(data + i);
        (void)__ssub8((int32_t)w, 0);
        w = __sel(w, 0);
        (void)__ssub8((int32_t)six, (int32_t)w);
        w = __sel(w, six);
        nn_write_s8x4(data + i, (int32_t)w);
    }
    for (; i < size; i++)
    {
        data[i] = (int8_t)NN_MIN(NN_MAX(data[i], 0), RELU6_MAX);
    }
}
#endif /* RS_HAVE_DSP */

#if RS_HAVE_MVE
void rs_relu6_s8_mve(int8_t *data, uint16_t size)
{
    const int8x16_t zero = vdupq_n_s8(0);
    const int8x16_t six = vdupq_n_s8(RELU6_MAX);
    const int32_t size_16 = size & ~15;
    int32_t i = 0;
    for (; i < size_16; i += 16)
    {
        vst1q_s8(data + i, vminq_s8(vmaxq_s8(vld1q_s8(data + i), zero), six));
    }
    if (i < size)
    {
        const mve_pred16_t p = vctp8q((uint32_t)(size - i));
        vstrbq_p_s8(data + i, vminq_s8(vmaxq_s8(vldrbq_z_s8(data + i, p), zero), six), p);
    }
}
#endif /* RS_HAVE_MVE */

/* ------------------------------------------------------------------------------------------ */
/* LUT: the table pointer is biased by 128 so a signed byte indexes it directly.              */

arm_cmsis_nn_status rs_lut_s8_scalar(RS_LUT_ARGS)
{
    if (size < 0)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int8_t *centre = lut + 128;
    int32_t i = 0;
    for (; i + 4 <= size; i += 4)
    {
        output[i] = centre[input[i]];
        output[i + 1] = centre[input[i + 1]];
        output[i + 2] = centre[input[i + 2]];
        output[i + 3] = centre[input[i + 3]];
    }
    for (; i < size; i++)
    {
        output[i] = centre[input[i]];
    }
    return ARM_CMSIS_NN_SUCCESS;
}

#if RS_HAVE_DSP
/* One word load and one word store per four lookups; SXTB with a rotation extracts each signed
 * byte (ExecuTorch's DSP path biases the word with UADD8 instead; same index). */
static inline uint32_t lut_byte(const int8_t *centre, int32_t word, int32_t rotation)
{
    return (uint8_t)centre[(int8_t)((uint32_t)word >> rotation)];
}

arm_cmsis_nn_status rs_lut_s8_dsp(RS_LUT_ARGS)
{
    if (size < 0)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int8_t *centre = lut + 128;
    const int32_t size_4 = size & ~3;
    int32_t i = 0;
    for (; i < size_4; i += 4)
    {
        const int32_t x = nn_read_s8x4(input + i);
        const uint32_t y = lut_byte(centre, x, 0) | (lut_byte(centre, x, 8) << 8) | (lut_byte(centre, x, 16) << 16) |
                           (lut_byte(centre, x, 24) << 24);
        nn_write_s8x4(output + i, (int32_t)y);
    }
    for (; i < size; i++)
    {
        output[i] = centre[input[i]];
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_DSP */

#if RS_HAVE_MVE
/* 16 lookups per VLDRB gather with byte offsets: offset = byte ^ 0x80 = (uint8_t)(x + 128). */
arm_cmsis_nn_status rs_lut_s8_mve(RS_LUT_ARGS)
{
    if (size < 0)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const uint8x16_t bias = vdupq_n_u8(0x80);
    const int32_t size_16 = size & ~15;
    int32_t i = 0;
    for (; i < size_16; i += 16)
    {
        const uint8x16_t index = veorq_u8(vld1q_u8((const uint8_t *)input + i), bias);
        vst1q_s8(output + i, vldrbq_gather_offset_s8(lut, index));
    }
    if (i < size)
    {
        /* Off lanes load 0, whose index 0x80 is in the table; the store is predicated. */
        const mve_pred16_t p = vctp8q((uint32_t)(size - i));
        const uint8x16_t index = veorq_u8(vldrbq_z_u8((const uint8_t *)input + i, p), bias);
        vstrbq_p_s8(output + i, vldrbq_gather_offset_s8(lut, index), p);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_MVE */

/* ------------------------------------------------------------------------------------------ */

#if RS_HAVE_MVE
    #define RS_RELU6_IMPL rs_relu6_s8_mve
    #define RS_LUT_IMPL rs_lut_s8_mve
#elif RS_HAVE_DSP
    #define RS_RELU6_IMPL rs_relu6_s8_dsp
    #define RS_LUT_IMPL rs_lut_s8_dsp
#else
    #define RS_RELU6_IMPL rs_relu6_s8_scalar
    #define RS_LUT_IMPL rs_lut_s8_scalar
#endif

void arm_relu6_s8(int8_t *data, uint16_t size) { RS_RELU6_IMPL(data, size); }

arm_cmsis_nn_status refsim_lut_s8(RS_LUT_ARGS) { return RS_LUT_IMPL(input, lut, output, size); }
