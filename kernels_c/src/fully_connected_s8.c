/*
 * refsim kernels_c: arm_fully_connected_s8 and its buffer-size / kernel-sum helpers (CMSIS-NN API).
 *
 * Semantics, per batch b and output row r (CMSIS-NN Source/FullyConnectedFunctions, TFLM
 * reference fully_connected with per-tensor requantize, double rounding):
 *   acc = bias[r] + sum_k (in[b][k] + input_offset) * (w[r][k] + filter_offset)
 *   out[b][r] = clamp(requant(acc, multiplier, shift) + output_offset, act_min, act_max)
 * The accumulator is int32 with wrap-around; with |x + offset| <= 255 it cannot overflow while
 * K * 255 * 255 + |bias| < 2^31, i.e. for any K below 33,000 and a TFLM-sized bias.
 *
 * The filter offset term is regrouped the same way in every tier:
 *   sum_k (x_k + io)(w_k + fo) = sum_k (x_k + io) w_k + fo * sum_k (x_k + io)
 * so the inner loops multiply offset inputs by raw weights, and the fo term costs one sum per batch.
 *
 * MVE keeps CMSIS-NN's contract: the caller prepares per-row kernel sums with arm_vector_sum_s8
 * (bias + io * sum_k w + K * io * fo) in ctx->buf, and the kernel adds them to the raw dot product
 * sum_k x_k w_k (plus fo * sum_k x_k). The scalar and DSP tiers read the bias directly.
 */
#include "support/nn_fixedpoint.h"
#include "support/nn_vec_mat.h"
#include "variants.h"

#if RS_HAVE_DSP
    #include "support/nn_dsp.h"
#endif
#if RS_HAVE_MVE
    #include "support/nn_mve.h"
#endif

typedef struct
{
    int32_t multiplier;
    int32_t shift;
    int32_t output_offset;
    int32_t act_min;
    int32_t act_max;
} fc_output_quant;

static inline fc_output_quant fc_quant(const cmsis_nn_fc_params *fc_params,
                                       const cmsis_nn_per_tensor_quant_params *quant_params)
{
    const fc_output_quant q = {quant_params->multiplier, quant_params->shift, fc_params->output_offset,
                               fc_params->activation.min, fc_params->activation.max};
    return q;
}

static inline int8_t fc_output(int32_t acc, const fc_output_quant *q)
{
    return nn_clamp_s8(nn_add_wrap(nn_requantize(acc, q->multiplier, q->shift), q->output_offset), q->act_min,
                       q->act_max);
}

/** filter_offset * sum_k (x_k + input_offset): the filter zero-point term, 0 when fo == 0. */
static int32_t fc_filter_offset_term(const int8_t *input, int32_t depth, int32_t input_offset, int32_t filter_offset)
{
    if (filter_offset == 0)
    {
        return 0;
    }
    uint32_t sum = 0;
    for (int32_t k = 0; k < depth; k++)
    {
        sum += (uint32_t)(input[k] + input_offset);
    }
    return (int32_t)(sum * (uint32_t)filter_offset);
}

/* ------------------------------------------------------------------------------------------ */
/* Scalar tier: four rows per pass share each offset input load (a 4-row pass is 3 instructions */
/* per MAC on a Cortex-M3: LDRSB + MLA per row, plus the shared LDRSB/ADD and the loop test).  */

arm_cmsis_nn_status rs_fully_connected_s8_scalar(RS_FULLY_CONNECTED_ARGS)
{
    (void)ctx;
    (void)bias_dims;
    const fc_output_quant q = fc_quant(fc_params, quant_params);
    const int32_t input_offset = fc_params->input_offset;
    const int32_t depth = filter_dims->n;
    const int32_t rows = output_dims->c;

    for (int32_t b = 0; b < input_dims->n; b++)
    {
        const int8_t *in = input_data + b * depth;
        int8_t *out = output_data + b * rows;
        const uint32_t fo_term = (uint32_t)fc_filter_offset_term(in, depth, input_offset, fc_params->filter_offset);
        int32_t r = 0;
        for (; r + 4 <= rows; r += 4)
        {
            const int8_t *w_0 = filter_data + r * depth;
            const int8_t *w_1 = w_0 + depth;
            const int8_t *w_2 = w_1 + depth;
            const int8_t *w_3 = w_2 + depth;
            uint32_t acc[4];
            for (int32_t i = 0; i < 4; i++)
            {
                acc[i] = fo_term + (uint32_t)(bias_data ? bias_data[r + i] : 0);
            }
            for (int32_t k = 0; k < depth; k++)
            {
                const int32_t x = in[k] + input_offset;
                acc[0] += (uint32_t)(x * w_0[k]);
                acc[1] += (uint32_t)(x * w_1[k]);
                acc[2] += (uint32_t)(x * w_2[k]);
                acc[3] += (uint32_t)(x * w_3[k]);
            }
            for (int32_t i = 0; i < 4; i++)
            {
                out[r + i] = fc_output((int32_t)acc[i], &q);
            }
        }
        for (; r < rows; r++)
        {
            const int8_t *w = filter_data + r * depth;
            uint32_t acc = fo_term + (uint32_t)(bias_data ? bias_data[r] : 0);
            for (int32_t k = 0; k < depth; k++)
            {
                acc += (uint32_t)((in[k] + input_offset) * w[k]);
            }
            out[r] = fc_output((int32_t)acc, &q);
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* DSP tier: two rows per pass, four columns per step; SXTAB16 adds the input offset while     */
/* unpacking, SXTB16 unpacks weights, SMLAD does two 16x16 MACs.                              */

#if RS_HAVE_DSP

arm_cmsis_nn_status rs_fully_connected_s8_dsp(RS_FULLY_CONNECTED_ARGS)
{
    (void)ctx;
    (void)bias_dims;
    const fc_output_quant q = fc_quant(fc_params, quant_params);
    const int32_t input_offset = fc_params->input_offset;
    const int32_t offset_x2 = nn_pack_s16x2(input_offset);
    const int32_t depth = filter_dims->n;
    const int32_t depth_4 = depth & ~3;
    const int32_t rows = output_dims->c;

    for (int32_t b = 0; b < input_dims->n; b++)
    {
        const int8_t *in = input_data + b * depth;
        int8_t *out = output_data + b * rows;
        const uint32_t fo_term = (uint32_t)fc_filter_offset_term(in, depth, input_offset, fc_params->filter_offset);
        int32_t r = 0;
        for (; r + 2 <= rows; r += 2)
        {
            const int8_t *w_0 = filter_data + r * depth;
            const int8_t *w_1 = w_0 + depth;
            int32_t acc_0 = (int32_t)(fo_term + (uint32_t)(bias_data ? bias_data[r] : 0));
            int32_t acc_1 = (int32_t)(fo_term + (uint32_t)(bias_data ? bias_data[r + 1] : 0));
            int32_t k = 0;
            for (; k < depth_4; k += 4)
            {
                const int32_t x = nn_read_s8x4(in + k);
                const int32_t x_even = nn_sxtab16_even(offset_x2, x);
                const int32_t x_odd = nn_sxtab16_odd(offset_x2, x);
                acc_0 = nn_vm_dsp_step(acc_0, x_even, x_odd, w_0 + k);
                acc_1 = nn_vm_dsp_step(acc_1, x_even, x_odd, w_1 + k);
            }
            for (; k < depth; k++)
            {
                const int32_t x = in[k] + input_offset;
                acc_0 += x * w_0[k];
                acc_1 += x * w_1[k];
            }
            out[r] = fc_output(acc_0, &q);
            out[r + 1] = fc_output(acc_1, &q);
        }
        if (r < rows)
        {
            const int8_t *w = filter_data + r * depth;
            int32_t acc = (int32_t)(fo_term + (uint32_t)(bias_data ? bias_data[r] : 0));
            int32_t k = 0;
            for (; k < depth_4; k += 4)
            {
                const int32_t x = nn_read_s8x4(in + k);
                acc = nn_vm_dsp_step(acc, nn_sxtab16_even(offset_x2, x), nn_sxtab16_odd(offset_x2, x), w + k);
            }
            for (; k < depth; k++)
            {
                acc += (in[k] + input_offset) * w[k];
            }
            out[r] = fc_output(acc, &q);
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_DSP */

/* ------------------------------------------------------------------------------------------ */
/* MVE tier: four rows per pass, 16 columns per VMLADAVA, tail-predicated; kernel sums from    */
/* ctx->buf replace the bias and input-offset terms.                                          */

#if RS_HAVE_MVE
/*
 * Columns run in full 16-byte steps without predication, then one tail step predicated with
 * VCTP (off lanes load as zero and add nothing). GCC 12 turns a predicate inside the main loop
 * into a VMRS/SXTH/VMSR round trip and one VPST per load, more than doubling the loop.
 */

arm_cmsis_nn_status rs_fully_connected_s8_mve(RS_FULLY_CONNECTED_ARGS)
{
    (void)bias_dims;
    (void)bias_data; /* folded into the kernel sums by arm_vector_sum_s8 */
    if (ctx == NULL || ctx->buf == NULL)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t *kernel_sum = (const int32_t *)ctx->buf;
    const fc_output_quant q = fc_quant(fc_params, quant_params);
    const int32_t filter_offset = fc_params->filter_offset;
    const int32_t depth = filter_dims->n;
    const int32_t rows = output_dims->c;

    for (int32_t b = 0; b < input_dims->n; b++)
    {
        const int8_t *in = input_data + b * depth;
        int8_t *out = output_data + b * rows;
        const int32_t fo_term = filter_offset != 0 ? nn_vm_mve_sum(in, depth) * filter_offset : 0;
        int32_t r = 0;
        for (; r + 4 <= rows; r += 4)
        {
            int32x4_t acc = vaddq_s32(nn_vm_mve_dot_4(in, filter_data + r * depth, depth), vldrwq_s32(kernel_sum + r));
            acc = nn_requantize_mve(vaddq_n_s32(acc, fo_term), q.multiplier, q.shift);
            acc = nn_clamp_mve(vaddq_n_s32(acc, q.output_offset), q.act_min, q.act_max);
            vstrbq_s32(out + r, acc);
        }
        for (; r < rows; r++)
        {
            const int32_t acc = nn_vm_mve_dot(in, filter_data + r * depth, depth) + kernel_sum[r] + fo_term;
            out[r] = fc_output(acc, &q);
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_MVE */

/* ------------------------------------------------------------------------------------------ */
/* Buffer sizes (host-callable, tier-independent).                                            */

int32_t arm_fully_connected_s8_get_buffer_size_dsp(const cmsis_nn_dims *filter_dims)
{
    (void)filter_dims;
    return 0;
}

int32_t arm_fully_connected_s8_get_buffer_size_mve(const cmsis_nn_dims *filter_dims)
{
    return filter_dims->c * (int32_t)sizeof(int32_t);
}

int32_t arm_fully_connected_s8_get_buffer_size(const cmsis_nn_dims *filter_dims)
{
#if RS_HAVE_MVE
    return arm_fully_connected_s8_get_buffer_size_mve(filter_dims);
#else
    return arm_fully_connected_s8_get_buffer_size_dsp(filter_dims);
#endif
}

/* ------------------------------------------------------------------------------------------ */
/* Kernel sums, one tier each: vector_sum_buf[r] = bias[r] + lhs_offset * sum_k w[r][k]       */
/* + vector_cols * lhs_offset * rhs_offset, int32 with wrap; the public function dispatches.  */

static inline int32_t fc_kernel_sum(uint32_t row_sum, int32_t row, int32_t lhs_offset, uint32_t offsets_term,
                                    const int32_t *bias_data)
{
    const uint32_t bias = (uint32_t)(bias_data ? bias_data[row] : 0);
    return (int32_t)(bias + row_sum * (uint32_t)lhs_offset + offsets_term);
}

arm_cmsis_nn_status rs_vector_sum_s8_scalar(RS_VECTOR_SUM_ARGS)
{
    const uint32_t offsets_term = (uint32_t)vector_cols * (uint32_t)lhs_offset * (uint32_t)rhs_offset;
    for (int32_t r = 0; r < vector_rows; r++)
    {
        const int8_t *w = vector_data + r * vector_cols;
        int32_t row_sum = 0;
        for (int32_t k = 0; k < vector_cols; k++)
        {
            row_sum += w[k];
        }
        vector_sum_buf[r] = fc_kernel_sum((uint32_t)row_sum, r, lhs_offset, offsets_term, bias_data);
    }
    return ARM_CMSIS_NN_SUCCESS;
}

#if RS_HAVE_DSP
/* Four bytes per SXTAB16 pair into two int16 lanes (two bytes per lane per word), folded with
 * SMLAD every 128 words: a lane then holds at most 256 bytes, -32768 .. 32512, inside int16. */
arm_cmsis_nn_status rs_vector_sum_s8_dsp(RS_VECTOR_SUM_ARGS)
{
    const uint32_t offsets_term = (uint32_t)vector_cols * (uint32_t)lhs_offset * (uint32_t)rhs_offset;
    const int32_t cols_4 = vector_cols & ~3;
    const int32_t ones = 0x00010001;
    for (int32_t r = 0; r < vector_rows; r++)
    {
        const int8_t *w = vector_data + r * vector_cols;
        int32_t row_sum = 0;
        int32_t k = 0;
        while (k < cols_4)
        {
            const int32_t chunk_end = NN_MIN(cols_4, k + 4 * 128);
            int32_t lanes = 0;
            for (; k < chunk_end; k += 4)
            {
                const int32_t word = nn_read_s8x4(w + k);
                lanes = __sxtab16(lanes, word);
                lanes = nn_sxtab16_ror8(lanes, word);
            }
            row_sum = __smlad(lanes, ones, row_sum);
        }
        for (; k < vector_cols; k++)
        {
            row_sum += w[k];
        }
        vector_sum_buf[r] = fc_kernel_sum((uint32_t)row_sum, r, lhs_offset, offsets_term, bias_data);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_DSP */

#if RS_HAVE_MVE
/* Sixteen bytes per VADDVA; the tail predicated. */
arm_cmsis_nn_status rs_vector_sum_s8_mve(RS_VECTOR_SUM_ARGS)
{
    const uint32_t offsets_term = (uint32_t)vector_cols * (uint32_t)lhs_offset * (uint32_t)rhs_offset;
    const int32_t cols_16 = vector_cols & ~15;
    for (int32_t r = 0; r < vector_rows; r++)
    {
        const int8_t *w = vector_data + r * vector_cols;
        int32_t row_sum = 0;
        for (int32_t k = 0; k < cols_16; k += 16)
        {
            row_sum = vaddvaq_s8(row_sum, vld1q_s8(w + k));
        }
        if (cols_16 < vector_cols)
        {
            row_sum = vaddvaq_s8(row_sum, vldrbq_z_s8(w + cols_16, vctp8q((uint32_t)(vector_cols - cols_16))));
        }
        vector_sum_buf[r] = fc_kernel_sum((uint32_t)row_sum, r, lhs_offset, offsets_term, bias_data);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_MVE */

/* ------------------------------------------------------------------------------------------ */
/* Public API: thin dispatch to the richest tier this build has.                              */

#if RS_HAVE_MVE
    #define RS_FC_IMPL rs_fully_connected_s8_mve
    #define RS_VECTOR_SUM_IMPL rs_vector_sum_s8_mve
#elif RS_HAVE_DSP
    #define RS_FC_IMPL rs_fully_connected_s8_dsp
    #define RS_VECTOR_SUM_IMPL rs_vector_sum_s8_dsp
#else
    #define RS_FC_IMPL rs_fully_connected_s8_scalar
    #define RS_VECTOR_SUM_IMPL rs_vector_sum_s8_scalar
#endif

arm_cmsis_nn_status arm_fully_connected_s8(RS_FULLY_CONNECTED_ARGS)
{
    return RS_FC_IMPL(ctx, fc_params, quant_params, input_dims, input_data, filter_dims, filter_data, bias_dims,
                      bias_data, output_dims, output_data);
}

arm_cmsis_nn_status arm_vector_sum_s8(RS_VECTOR_SUM_ARGS)
{
    return RS_VECTOR_SUM_IMPL(vector_sum_buf, vector_cols, vector_rows, vector_data, lhs_offset, rhs_offset,
                              bias_data);
}
