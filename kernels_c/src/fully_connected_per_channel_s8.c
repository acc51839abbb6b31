/*
 * refsim kernels_c: arm_fully_connected_per_channel_s8 (CMSIS-NN API).
 *
 * As arm_fully_connected_s8 (src/fully_connected_s8.c) with one multiplier and shift per output
 * row (CMSIS-NN Source/FullyConnectedFunctions/arm_fully_connected_per_channel_s8.c, through
 * arm_nn_vec_mat_mult_t_per_ch_s8; kernels_py.fully_connected.fully_connected_per_channel_s8):
 *   acc = bias[r] + sum_k (in[b][k] + input_offset) * (w[r][k] + filter_offset)
 *   out[b][r] = clamp(requant(acc, multiplier[r], shift[r]) + output_offset, act_min, act_max)
 * CMSIS-NN applies filter_offset here as well (TFLM's reference kernel assumes it is 0).
 *
 * Scratch: CMSIS-NN has no per-channel buffer-size function; its callers (TFLM, ExecuTorch's
 * cortex_m quantized_linear, CMSIS-NN's own unit tests) size ctx->buf with
 * arm_fully_connected_s8_get_buffer_size() and, on MVE, fill it with arm_vector_sum_s8(). The MVE
 * tier reads those kernel sums instead of the bias and returns ARM_CMSIS_NN_ARG_ERROR without
 * them; the scalar and DSP tiers read the bias and not ctx.
 */
#include "support/nn_vec_mat.h"
#include "variants.h"

static nn_vm_quant fc_pc_quant(const cmsis_nn_fc_params *fc_params, const cmsis_nn_per_channel_quant_params *quant)
{
    const nn_vm_quant q = {quant->multiplier, quant->shift, 1, fc_params->output_offset, fc_params->activation.min,
                           fc_params->activation.max};
    return q;
}

arm_cmsis_nn_status rs_fully_connected_per_channel_s8_scalar(RS_FULLY_CONNECTED_PER_CHANNEL_ARGS)
{
    (void)ctx;
    (void)bias_dims;
    const nn_vm_quant q = fc_pc_quant(fc_params, quant_params);
    const int32_t depth = filter_dims->n;
    const int32_t rows = output_dims->c;
    for (int32_t b = 0; b < input_dims->n; b++)
    {
        nn_vec_mat_s8_scalar(input_data + b * depth, filter_data, bias_data, rows, depth, fc_params->input_offset,
                             fc_params->filter_offset, &q, output_data + b * rows);
    }
    return ARM_CMSIS_NN_SUCCESS;
}

#if RS_HAVE_DSP
arm_cmsis_nn_status rs_fully_connected_per_channel_s8_dsp(RS_FULLY_CONNECTED_PER_CHANNEL_ARGS)
{
    (void)ctx;
    (void)bias_dims;
    const nn_vm_quant q = fc_pc_quant(fc_params, quant_params);
    const int32_t depth = filter_dims->n;
    const int32_t rows = output_dims->c;
    for (int32_t b = 0; b < input_dims->n; b++)
    {
        nn_vec_mat_s8_dsp(input_data + b * depth, filter_data, bias_data, rows, depth, fc_params->input_offset,
                          fc_params->filter_offset, &q, output_data + b * rows);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_DSP */

#if RS_HAVE_MVE
arm_cmsis_nn_status rs_fully_connected_per_channel_s8_mve(RS_FULLY_CONNECTED_PER_CHANNEL_ARGS)
{
    (void)bias_dims;
    (void)bias_data; /* folded into the kernel sums by arm_vector_sum_s8 */
    if (ctx == NULL || ctx->buf == NULL)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const nn_vm_quant q = fc_pc_quant(fc_params, quant_params);
    const int32_t depth = filter_dims->n;
    const int32_t rows = output_dims->c;
    for (int32_t b = 0; b < input_dims->n; b++)
    {
        nn_vec_mat_s8_mve(input_data + b * depth, filter_data, (const int32_t *)ctx->buf, rows, depth,
                          fc_params->filter_offset, &q, output_data + b * rows);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_MVE */

#if RS_HAVE_MVE
    #define RS_FC_PER_CHANNEL_IMPL rs_fully_connected_per_channel_s8_mve
#elif RS_HAVE_DSP
    #define RS_FC_PER_CHANNEL_IMPL rs_fully_connected_per_channel_s8_dsp
#else
    #define RS_FC_PER_CHANNEL_IMPL rs_fully_connected_per_channel_s8_scalar
#endif

arm_cmsis_nn_status arm_fully_connected_per_channel_s8(RS_FULLY_CONNECTED_PER_CHANNEL_ARGS)
{
    return RS_FC_PER_CHANNEL_IMPL(ctx, fc_params, quant_params, input_dims, input_data, filter_dims, filter_data,
                                  bias_dims, bias_data, output_dims, output_data);
}
