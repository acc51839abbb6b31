/*
 * refsim kernels_c: arm_maximum_s8 and arm_minimum_s8 (CMSIS-NN API, Source/BasicMathFunctions
 * arm_maximum_s8.c / arm_minimum_s8.c V.1.0.0, 8 Oct 2024).
 *
 * out = max (or min) of two int8 NHWC tensors, broadcasting N, H, W and C where one side is 1
 * (numpy's rule; kernels_py.elementwise.maximum_s8 / minimum_s8). No arithmetic, no rounding.
 *
 * CMSIS-NN walks its pointers per row with broadcast-specific branches, and for an input with
 * H >= 2 and W = C = 1 against one with W >= 2 it reads the wrong element from the second row on
 * (kernels_py.elementwise.cmsis_minmax_broadcast_is_exact). Here the broadcast is planned instead:
 * each input gets an element stride per output axis (0 where it broadcasts), adjacent axes that
 * are contiguous in both inputs merge, and the innermost merged run is one of three loops:
 * vector-vector, scalar-vector or vector-scalar. Every broadcastable pair is exact.
 *
 * Unlike CMSIS-NN, dims that do not broadcast to output_dims return ARM_CMSIS_NN_ARG_ERROR.
 */
#include "support/nn_fixedpoint.h"
#include "variants.h"

#if RS_HAVE_DSP
    #include "support/nn_dsp.h"
#endif
#if RS_HAVE_MVE
    #include "support/nn_mve.h"
#endif

#define MM_AXES 4
#define MM_INLINE static inline __attribute__((always_inline))

/** The output walk: outer axes (outermost first) with each input's element stride, then a run. */
typedef struct
{
    int32_t outer; /* number of outer axes used, 0..3 */
    int32_t extent[MM_AXES - 1];
    int32_t stride_1[MM_AXES - 1];
    int32_t stride_2[MM_AXES - 1];
    int32_t run;               /* elements in the innermost merged run */
    int32_t run_1, run_2;      /* each input's stride along the run: 1, or 0 (one value repeated) */
} mm_plan;

static arm_cmsis_nn_status mm_make_plan(const cmsis_nn_dims *d1, const cmsis_nn_dims *d2, const cmsis_nn_dims *dout,
                                        mm_plan *plan)
{
    const int32_t a[MM_AXES] = {d1->n, d1->h, d1->w, d1->c};
    const int32_t b[MM_AXES] = {d2->n, d2->h, d2->w, d2->c};
    const int32_t o[MM_AXES] = {dout->n, dout->h, dout->w, dout->c};
    int32_t contiguous_1 = 1, contiguous_2 = 1;
    int32_t extent[MM_AXES], s1[MM_AXES], s2[MM_AXES];
    int32_t axes = 0; /* non-trivial axes, innermost first */
    for (int32_t k = MM_AXES - 1; k >= 0; k--)
    {
        if (a[k] < 1 || b[k] < 1 || (a[k] != b[k] && a[k] != 1 && b[k] != 1) || o[k] != NN_MAX(a[k], b[k]))
        {
            return ARM_CMSIS_NN_ARG_ERROR;
        }
        if (o[k] > 1)
        {
            extent[axes] = o[k];
            s1[axes] = a[k] > 1 ? contiguous_1 : 0;
            s2[axes] = b[k] > 1 ? contiguous_2 : 0;
            axes++;
        }
        contiguous_1 *= a[k];
        contiguous_2 *= b[k];
    }
    /* Merge axis i into the run below it when both inputs continue linearly across it. */
    int32_t run = 1, run_1 = 1, run_2 = 1;
    int32_t i = 0;
    if (axes > 0)
    {
        run = extent[0];
        run_1 = s1[0];
        run_2 = s2[0];
        for (i = 1; i < axes && s1[i] == run_1 * run && s2[i] == run_2 * run; i++)
        {
            run *= extent[i];
        }
    }
    plan->run = run;
    plan->run_1 = run_1;
    plan->run_2 = run_2;
    plan->outer = axes - i > 0 ? axes - i : 0;
    for (int32_t j = 0; j < plan->outer; j++)
    {
        /* outer axes outermost first */
        const int32_t src = axes - 1 - j;
        plan->extent[j] = extent[src];
        plan->stride_1[j] = s1[src];
        plan->stride_2[j] = s2[src];
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/** One innermost run: out[i] = op(a[i * sa], b[i * sb]) for i < len, with sa, sb in {0, 1}. */
typedef void (*mm_run_fn)(const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *out, int32_t len);

/* The walk is shared by every tier; only the run function differs (inlined per tier). The run's
 * strides are constants in each of the three walks, so its stride tests fold away. */
MM_INLINE void mm_walk_strides(const mm_plan *p, const int8_t *in_1, const int8_t *in_2, int8_t *out, mm_run_fn run,
                               int32_t run_1, int32_t run_2)
{
    int32_t extent[MM_AXES - 1] = {1, 1, 1};
    int32_t s1[MM_AXES - 1] = {0, 0, 0};
    int32_t s2[MM_AXES - 1] = {0, 0, 0};
    for (int32_t j = 0; j < p->outer; j++)
    {
        /* right-align the outer axes so the loops below always nest three deep */
        const int32_t k = MM_AXES - 1 - p->outer + j;
        extent[k] = p->extent[j];
        s1[k] = p->stride_1[j];
        s2[k] = p->stride_2[j];
    }
    const int32_t len = p->run;
    for (int32_t i0 = 0; i0 < extent[0]; i0++)
    {
        for (int32_t i1 = 0; i1 < extent[1]; i1++)
        {
            const int8_t *a = in_1 + i0 * s1[0] + i1 * s1[1];
            const int8_t *b = in_2 + i0 * s2[0] + i1 * s2[1];
            for (int32_t i2 = 0; i2 < extent[2]; i2++)
            {
                run(a, run_1, b, run_2, out, len);
                a += s1[2];
                b += s2[2];
                out += len;
            }
        }
    }
}

MM_INLINE void mm_walk(const mm_plan *p, const int8_t *in_1, const int8_t *in_2, int8_t *out, mm_run_fn run)
{
    if (p->run_1 == 0)
    {
        mm_walk_strides(p, in_1, in_2, out, run, 0, 1);
    }
    else if (p->run_2 == 0)
    {
        mm_walk_strides(p, in_1, in_2, out, run, 1, 0);
    }
    else
    {
        mm_walk_strides(p, in_1, in_2, out, run, 1, 1);
    }
}

MM_INLINE arm_cmsis_nn_status mm_apply(const cmsis_nn_dims *d1, const int8_t *in_1, const cmsis_nn_dims *d2,
                                       const int8_t *in_2, const cmsis_nn_dims *dout, int8_t *out, mm_run_fn run)
{
    mm_plan plan;
    if (mm_make_plan(d1, d2, dout, &plan) != ARM_CMSIS_NN_SUCCESS)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    mm_walk(&plan, in_1, in_2, out, run);
    return ARM_CMSIS_NN_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* Scalar runs.                                                                               */

static inline int8_t mm_max(int8_t x, int8_t y) { return x >= y ? x : y; }
static inline int8_t mm_min(int8_t x, int8_t y) { return x <= y ? x : y; }

#define MM_SCALAR_RUN(name, op)                                                                                     \
    MM_INLINE void name(const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *out, int32_t len)         \
    {                                                                                                               \
        if (sa == 0)                                                                                                \
        {                                                                                                           \
            const int8_t x = a[0];                                                                                  \
            for (int32_t i = 0; i < len; i++)                                                                       \
            {                                                                                                       \
                out[i] = op(x, b[i]);                                                                               \
            }                                                                                                       \
        }                                                                                                           \
        else if (sb == 0)                                                                                           \
        {                                                                                                           \
            const int8_t y = b[0];                                                                                  \
            for (int32_t i = 0; i < len; i++)                                                                       \
            {                                                                                                       \
                out[i] = op(a[i], y);                                                                               \
            }                                                                                                       \
        }                                                                                                           \
        else                                                                                                        \
        {                                                                                                           \
            for (int32_t i = 0; i < len; i++)                                                                       \
            {                                                                                                       \
                out[i] = op(a[i], b[i]);                                                                            \
            }                                                                                                       \
        }                                                                                                           \
    }

MM_SCALAR_RUN(mm_run_max_scalar, mm_max)
MM_SCALAR_RUN(mm_run_min_scalar, mm_min)

arm_cmsis_nn_status rs_maximum_s8_scalar(RS_MINMAX_ARGS)
{
    (void)ctx;
    return mm_apply(input_1_dims, input_1_data, input_2_dims, input_2_data, output_dims, output_data,
                    mm_run_max_scalar);
}

arm_cmsis_nn_status rs_minimum_s8_scalar(RS_MINMAX_ARGS)
{
    (void)ctx;
    return mm_apply(input_1_dims, input_1_data, input_2_dims, input_2_data, output_dims, output_data,
                    mm_run_min_scalar);
}

/* ------------------------------------------------------------------------------------------ */
/* DSP runs: four bytes per step. SSUB8 sets GE per byte where x - y >= 0, so SEL(x, y) is the  */
/* bytewise maximum and SEL(y, x) the minimum.                                                 */

#if RS_HAVE_DSP
static inline int32_t mm_max4(int32_t x, int32_t y)
{
    (void)__ssub8(x, y);
    return (int32_t)__sel((uint32_t)x, (uint32_t)y);
}

static inline int32_t mm_min4(int32_t x, int32_t y)
{
    (void)__ssub8(x, y);
    return (int32_t)__sel((uint32_t)y, (uint32_t)x);
}

    #define MM_DSP_RUN(name, op4, op)                                                                               \
        MM_INLINE void name(const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *out, int32_t len)     \
        {                                                                                                           \
            if (sb == 0)                                                                                            \
            {                                                                                                       \
                /* op is symmetric: make the repeated value the first operand */                                    \
                const int8_t *t = a;                                                                                \
                a = b;                                                                                              \
                b = t;                                                                                              \
                sa = 0;                                                                                             \
            }                                                                                                       \
            const int32_t len_4 = len & ~3;                                                                         \
            int32_t i = 0;                                                                                          \
            if (sa == 0)                                                                                            \
            {                                                                                                       \
                const int32_t x = nn_pack_s16x2((int32_t)(uint8_t)a[0] * 0x0101);                                   \
                for (; i < len_4; i += 4)                                                                           \
                {                                                                                                   \
                    nn_write_s8x4(out + i, op4(x, nn_read_s8x4(b + i)));                                            \
                }                                                                                                   \
                for (; i < len; i++)                                                                                \
                {                                                                                                   \
                    out[i] = op(a[0], b[i]);                                                                        \
                }                                                                                                   \
            }                                                                                                       \
            else                                                                                                    \
            {                                                                                                       \
                for (; i < len_4; i += 4)                                                                           \
                {                                                                                                   \
                    nn_write_s8x4(out + i, op4(nn_read_s8x4(a + i), nn_read_s8x4(b + i)));                          \
                }                                                                                                   \
                for (; i < len; i++)                                                                                \
                {                                                                                                   \
                    out[i] = op(a[i], b[i]);                                                                        \
                }                                                                                                   \
            }                                                                                                       \
        }

MM_DSP_RUN(mm_run_max_dsp, mm_max4, mm_max)
MM_DSP_RUN(mm_run_min_dsp, mm_min4, mm_min)

arm_cmsis_nn_status rs_maximum_s8_dsp(RS_MINMAX_ARGS)
{
    (void)ctx;
    return mm_apply(input_1_dims, input_1_data, input_2_dims, input_2_data, output_dims, output_data,
                    mm_run_max_dsp);
}

arm_cmsis_nn_status rs_minimum_s8_dsp(RS_MINMAX_ARGS)
{
    (void)ctx;
    return mm_apply(input_1_dims, input_1_data, input_2_dims, input_2_data, output_dims, output_data,
                    mm_run_min_dsp);
}
#endif /* RS_HAVE_DSP */

/* ------------------------------------------------------------------------------------------ */
/* MVE runs: 16 bytes per VMAX/VMIN, full vectors unpredicated, the tail VCTP-predicated.      */

#if RS_HAVE_MVE
    #define MM_MVE_RUN(name, vop)                                                                                   \
        MM_INLINE void name(const int8_t *a, int32_t sa, const int8_t *b, int32_t sb, int8_t *out, int32_t len)     \
        {                                                                                                           \
            if (sb == 0)                                                                                            \
            {                                                                                                       \
                const int8_t *t = a;                                                                                \
                a = b;                                                                                              \
                b = t;                                                                                              \
                sa = 0;                                                                                             \
            }                                                                                                       \
            const int32_t len_16 = len & ~15;                                                                       \
            int32_t i = 0;                                                                                          \
            if (sa == 0)                                                                                            \
            {                                                                                                       \
                const int8x16_t x = vdupq_n_s8(a[0]);                                                               \
                for (; i < len_16; i += 16)                                                                         \
                {                                                                                                   \
                    vst1q_s8(out + i, vop(x, vld1q_s8(b + i)));                                                     \
                }                                                                                                   \
                if (i < len)                                                                                        \
                {                                                                                                   \
                    const mve_pred16_t p = vctp8q((uint32_t)(len - i));                                             \
                    vstrbq_p_s8(out + i, vop(x, vldrbq_z_s8(b + i, p)), p);                                         \
                }                                                                                                   \
            }                                                                                                       \
            else                                                                                                    \
            {                                                                                                       \
                for (; i < len_16; i += 16)                                                                         \
                {                                                                                                   \
                    vst1q_s8(out + i, vop(vld1q_s8(a + i), vld1q_s8(b + i)));                                       \
                }                                                                                                   \
                if (i < len)                                                                                        \
                {                                                                                                   \
                    const mve_pred16_t p = vctp8q((uint32_t)(len - i));                                             \
                    vstrbq_p_s8(out + i, vop(vldrbq_z_s8(a + i, p), vldrbq_z_s8(b + i, p)), p);                     \
                }                                                                                                   \
            }                                                                                                       \
        }

MM_MVE_RUN(mm_run_max_mve, vmaxq_s8)
MM_MVE_RUN(mm_run_min_mve, vminq_s8)

arm_cmsis_nn_status rs_maximum_s8_mve(RS_MINMAX_ARGS)
{
    (void)ctx;
    return mm_apply(input_1_dims, input_1_data, input_2_dims, input_2_data, output_dims, output_data,
                    mm_run_max_mve);
}

arm_cmsis_nn_status rs_minimum_s8_mve(RS_MINMAX_ARGS)
{
    (void)ctx;
    return mm_apply(input_1_dims, input_1_data, input_2_dims, input_2_data, output_dims, output_data,
                    mm_run_min_mve);
}
#endif /* RS_HAVE_MVE */

/* ------------------------------------------------------------------------------------------ */

#if RS_HAVE_MVE
    #define RS_MAXIMUM_IMPL rs_maximum_s8_mve
    #define RS_MINIMUM_IMPL rs_minimum_s8_mve
#elif RS_HAVE_DSP
    #define RS_MAXIMUM_IMPL rs_maximum_s8_dsp
    #define RS_MINIMUM_IMPL rs_minimum_s8_dsp
#else
    #define RS_MAXIMUM_IMPL rs_maximum_s8_scalar
    #define RS_MINIMUM_IMPL rs_minimum_s8_scalar
#endif

arm_cmsis_nn_status arm_maximum_s8(RS_MINMAX_ARGS)
{
    return RS_MAXIMUM_IMPL(ctx, input_1_data, input_1_dims, input_2_data, input_2_dims, output_data, output_dims);
}

arm_cmsis_nn_status arm_minimum_s8(RS_MINMAX_ARGS)
{
    return RS_MINIMUM_IMPL(ctx, input_1_data, input_1_dims, input_2_data, input_2_dims, output_data, output_dims);
}
