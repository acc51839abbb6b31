/*
 * refsim kernels_c: arm_batch_matmul_s8 and its buffer sizes (CMSIS-NN API).
 *
 * CMSIS-NN Source/FullyConnectedFunctions/arm_batch_matmul_s8.c (V.1.0.0, 2024) and
 * kernels_py.fully_connected.batch_matmul_s8: lhs [N1, H1, LHS_ROWS, K], rhs [N2, H2, RHS_ROWS, K]
 * (already transposed: out = lhs . rhs^T), output [max(N), max(H), LHS_ROWS, RHS_ROWS]; N and H
 * broadcast where one side is 1. Each output row is a bias-free vector-matrix product,
 *   out[b][h][i][j] = clamp(requant(sum_k (lhs[i][k] + input_offset) * (rhs[j][k] + filter_offset),
 *                                   multiplier, shift) + output_offset, act_min, act_max)
 * with the int32 accumulator wrapping, per-tensor double-rounding requantize. adj_x / adj_y are
 * not read, as in CMSIS-NN: the caller (TFLM's batch_matmul.cc) transposes beforehand.
 *
 * Dims: input_lhs_dims {N1, H1, LHS_ROWS, K}, input_rhs_dims {N2, H2, RHS_ROWS, K}, output_dims
 * {N, H, LHS_ROWS, RHS_ROWS}. Unlike CMSIS-NN, the dims are checked (ARM_CMSIS_NN_ARG_ERROR for
 * a K mismatch, an N or H pair that does not broadcast, or output dims that disagree).
 *
 * MVE, as CMSIS-NN: ctx->buf (arm_batch_matmul_s8_get_buffer_size: RHS_ROWS int32) receives the
 * kernel sums of each rhs slice, computed inside the call (they depend on the slice), and the
 * kernel returns ARM_CMSIS_NN_ARG_ERROR without a buffer. A slice repeated by broadcasting keeps
 * its sums. Scalar and DSP read neither ctx nor a buffer.
 */
#include "support/nn_vec_mat.h"
#include "variants.h"

/** Sizes of one call, after checking that the dims are consistent. */
typedef struct
{
    int32_t batches, height, lhs_rows, rhs_rows, depth;
    int32_t lhs_n_step, lhs_h_step, rhs_n_step, rhs_h_step; /* elements per N / H index, 0 when broadcast */
} bmm_shape;

static int bmm_broadcasts(int32_t a, int32_t b, int32_t out)
{
    return a >= 1 && b >= 1 && (a == b || a == 1 || b == 1) && out == (a > b ? a : b);
}

static arm_cmsis_nn_status bmm_plan(const cmsis_nn_dims *lhs, const cmsis_nn_dims *rhs, const cmsis_nn_dims *out,
                                    bmm_shape *s)
{
    if (lhs->c != rhs->c || lhs->c < 1 || lhs->w < 1 || rhs->w < 1 || out->w != lhs->w || out->c != rhs->w ||
        !bmm_broadcasts(lhs->n, rhs->n, out->n) || !bmm_broadcasts(lhs->h, rhs->h, out->h))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    s->batches = out->n;
    s->height = out->h;
    s->lhs_rows = lhs->w;
    s->rhs_rows = rhs->w;
    s->depth = lhs->c;
    const int32_t lhs_slice = lhs->w * lhs->c;
    const int32_t rhs_slice = rhs->w * rhs->c;
    s->lhs_h_step = lhs->h > 1 ? lhs_slice : 0;
    s->lhs_n_step = lhs->n > 1 ? lhs_slice * lhs->h : 0;
    s->rhs_h_step = rhs->h > 1 ? rhs_slice : 0;
    s->rhs_n_step = rhs->n > 1 ? rhs_slice * rhs->h : 0;
    return ARM_CMSIS_NN_SUCCESS;
}

static nn_vm_quant bmm_quant(const cmsis_nn_bmm_params *bmm_params, const cmsis_nn_per_tensor_quant_params *quant)
{
    const nn_vm_quant q = {&quant->multiplier, &quant->shift, 0, bmm_params->fc_params.output_offset,
                           bmm_params->fc_params.activation.min, bmm_params->fc_params.activation.max};
    return q;
}

arm_cmsis_nn_status rs_batch_matmul_s8_scalar(RS_BATCH_MATMUL_ARGS)
{
    (void)ctx;
    bmm_shape s;
    if (bmm_plan(input_lhs_dims, input_rhs_dims, output_dims, &s) != ARM_CMSIS_NN_SUCCESS)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const nn_vm_quant q = bmm_quant(bmm_params, quant_params);
    const cmsis_nn_fc_params *fc = &bmm_params->fc_params;
    for (int32_t b = 0; b < s.batches; b++)
    {
        for (int32_t h = 0; h < s.height; h++)
        {
            const int8_t *lhs = input_lhs + b * s.lhs_n_step + h * s.lhs_h_step;
            const int8_t *rhs = input_rhs + b * s.rhs_n_step + h * s.rhs_h_step;
            for (int32_t i = 0; i < s.lhs_rows; i++)
            {
                nn_vec_mat_s8_scalar(lhs + i * s.depth, rhs, NULL, s.rhs_rows, s.depth, fc->input_offset,
                                     fc->filter_offset, &q, output);
                output += s.rhs_rows;
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

#if RS_HAVE_DSP
arm_cmsis_nn_status rs_batch_matmul_s8_dsp(RS_BATCH_MATMUL_ARGS)
{
    (void)ctx;
    bmm_shape s;
    if (bmm_plan(input_lhs_dims, input_rhs_dims, output_dims, &s) != ARM_CMSIS_NN_SUCCESS)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const nn_vm_quant q = bmm_quant(bmm_params, quant_params);
    const cmsis_nn_fc_params *fc = &bmm_params->fc_params;
    for (int32_t b = 0; b < s.batches; b++)
    {
        for (int32_t h = 0; h < s.height; h++)
        {
            const int8_t *lhs = input_lhs + b * s.lhs_n_step + h * s.lhs_h_step;
            const int8_t *rhs = input_rhs + b * s.rhs_n_step + h * s.rhs_h_step;
            for (int32_t i = 0; i < s.lhs_rows; i++)
            {
                nn_vec_mat_s8_dsp(lhs + i * s.depth, rhs, NULL, s.rhs_rows, s.depth, fc->input_offset,
                                  fc->filter_offset, &q, output);
                output += s.rhs_rows;
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_DSP */

#if RS_HAVE_MVE
arm_cmsis_nn_status rs_batch_matmul_s8_mve(RS_BATCH_MATMUL_ARGS)
{
    if (ctx == NULL || ctx->buf == NULL)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    bmm_shape s;
    if (bmm_plan(input_lhs_dims, input_rhs_dims, output_dims, &s) != ARM_CMSIS_NN_SUCCESS)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    int32_t *kernel_sum = (int32_t *)ctx->buf;
    const nn_vm_quant q = bmm_quant(bmm_params, quant_params);
    const cmsis_nn_fc_params *fc = &bmm_params->fc_params;
    const int8_t *summed = NULL; /* the rhs slice whose kernel sums ctx->buf holds */
    for (int32_t b = 0; b < s.batches; b++)
    {
        for (int32_t h = 0; h < s.height; h++)
        {
            const int8_t *lhs = input_lhs + b * s.lhs_n_step + h * s.lhs_h_step;
            const int8_t *rhs = input_rhs + b * s.rhs_n_step + h * s.rhs_h_step;
            if (rhs != summed)
            {
                nn_vm_mve_kernel_sums(kernel_sum, rhs, NULL, s.rhs_rows, s.depth, fc->input_offset,
                                      fc->filter_offset);
                summed = rhs;
            }
            for (int32_t i = 0; i < s.lhs_rows; i++)
            {
                nn_vec_mat_s8_mve(lhs + i * s.depth, rhs, kernel_sum, s.rhs_rows, s.depth, fc->filter_offset, &q,
                                  output);
                output += s.rhs_rows;
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
#endif /* RS_HAVE_MVE */

/* ------------------------------------------------------------------------------------------ */
/* Buffer sizes (host-callable): one int32 kernel sum per rhs row on MVE, nothing otherwise.   */

int32_t arm_batch_matmul_s8_get_buffer_size_dsp(const cmsis_nn_dims *input_rhs_dims)
{
    (void)input_rhs_dims;
    return 0;
}

int32_t arm_batch_matmul_s8_get_buffer_size_mve(const cmsis_nn_dims *input_rhs_dims)
{
    return input_rhs_dims->w * (int32_t)sizeof(int32_t);
}

int32_t arm_batch_matmul_s8_get_buffer_size(const cmsis_nn_dims *input_rhs_dims)
{
#if RS_HAVE_MVE
    return arm_batch_matmul_s8_get_buffer_size_mve(input_rhs_dims);
#else
    return arm_batch_matmul_s8_get_buffer_size_dsp(input_rhs_dims);
#endif
}

#if RS_HAVE_MVE
    #define RS_BMM_IMPL rs_batch_matmul_s8_mve
#elif RS_HAVE_DSP
    #define RS_BMM_IMPL rs_batch_matmul_s8_dsp
#else
    #define RS_BMM_IMPL rs_batch_matmul_s8_scalar
#endif

arm_cmsis_nn_status arm_batch_matmul_s8(RS_BATCH_MATMUL_ARGS)
{
    return RS_BMM_IMPL(ctx, bmm_params, quant_params, input_lhs_dims, input_lhs, input_rhs_dims, input_rhs,
                       output_dims, output);
}
