/*
 * refsim kernels_c: arm_softmax_s8 (CMSIS-NN API; Source/SoftmaxFunctions/arm_softmax_s8.c V.2.1.1
 * and Source/NNSupportFunctions/arm_nn_softmax_common_s8.c; kernels_py.softmax.softmax_s8).
 *
 * Per row of row_size int8 values (output scale 1/256, zero point -128):
 *   max = max of the row; diff = x - max in [-255, 0]
 *   e(diff) = EXP_ON_NEG(MUL_SAT(diff * (1 << shift), mult))        (Q0.31; diff * 2^shift wraps)
 *   sum = sum over diff >= diff_min of DIV_POW2(e, 12)              (Q12.19, int32, wraps)
 *   headroom = CLZ(sum); scale = ONE_OVER1((sum << headroom) - 2^31); bits = 35 - headroom
 *   out = clamp(DIV_POW2(MUL_SAT(scale, e), bits) - 128, -128, 127), or -128 when diff < diff_min
 * MUL_SAT rounds to nearest, ties toward +inf, and saturates INT32_MIN^2 (VQRDMULH); DIV_POW2
 * rounds half away from zero. kernels_py accepts rows whose sum stays below 2^28 (bits <= 31);
 * beyond that CMSIS-NN shifts by 32 or more (undefined in C, and its tiers disagree). Here the
 * shift is capped at 31 on every tier, so such rows are defined and tier-independent, but they
 * are outside the golden model and not compared with it.
 *
 * e depends only on diff, one of 256 values, and on (mult, shift), and CMSIS-NN evaluates it
 * twice per element (once for the sum, once for the output). Here it is evaluated once: when a
 * call has more elements than there are diffs that can pass diff_min, every tier first
 * tabulates e for all of those diffs (diffs below diff_min tabulate as 0, which adds nothing to
 * the sum and yields -128, exactly the skipped case) and each element then costs one lookup per
 * pass; otherwise (so rows of at most 256) each row's exponentials are kept for its output pass.
 * Both buffers are the same 1 KiB on the stack. Every path gives CMSIS-NN's bits.
 *
 * Tiers: CMSIS-NN has no DSP softmax (arm_nn_softmax_common_s8 is plain C). The DSP variant runs
 * the scalar code and only finds row maxima four bytes at a time (SSUB8/SEL). The MVE variant
 * computes four exponentials per vector. CMSIS-NN compiles its MVE softmax out on GCC 12.2
 * (ARM_GCC_12_2_ICE): its SELECT_IF_NON_ZERO, a VCMPNE against 0 of (remainder & (1 << bit)),
 * crashes GCC 12.2.1 (internal compiler error in trunc_int_for_mode, RTL pass "combine").
 * Here every select is arithmetic instead, with no compare predicate at all: a bit of the
 * remainder moved to bit 31 and shifted back arithmetically is an all-ones or all-zeros lane
 * mask, and r ^ ((r ^ new) & mask) selects (sm_exp_mve). Predicates appear only as VCTP tails.
 */
#include "support/nn_fixedpoint.h"
#include "variants.h"

#if RS_HAVE_DSP
    #include "support/nn_dsp.h"
#endif
#if RS_HAVE_MVE
    #include "support/nn_mve.h"
#endif

#define SM_ACCUM_BITS 12
#define SM_DIFFS 256 /* diff = x - max takes the values 0, -1, .., -255: table index -diff */

/* ------------------------------------------------------------------------------------------ */
/* Scalar fixed point (arm_nnsupportfunctions.h; kernels_py/fixedpoint.py).                    */

/**
 * MUL_SAT (arm_nn_doubling_high_mult): floor((a * b + 2^30) / 2^31), INT32_MIN^2 -> INT32_MAX.
 * CMSIS-NN adds 2^30 (or 1 - 2^30 when the signs differ) and truncates; for integers
 * trunc((p + 1 - 2^30) / 2^31) = ceil((q + 1) / 2^31) - 1 = floor(q / 2^31) with q = p + 2^30,
 * so one floor with a fixed nudge is the same function (nn_doubling_high_mult, without the
 * 64-bit division).
 */
static inline int32_t sm_mul_sat(int32_t a, int32_t b)
{
    if (a == INT32_MIN && b == INT32_MIN)
    {
        return INT32_MAX;
    }
    return (int32_t)(((int64_t)a * b + ((int64_t)1 << 30)) >> 31);
}

/** MUL_POW2 (arm_nn_mult_by_power_of_two): saturating val * 2^exp, exp in [1, 30]. */
static inline int32_t sm_mul_pow2(int32_t val, int32_t exp)
{
    const int32_t thresh = (int32_t)((1U << (31 - exp)) - 1U);
    if (val > thresh)
    {
        return INT32_MAX;
    }
    if (val < -thresh)
    {
        return INT32_MIN;
    }
    return (int32_t)((uint32_t)val << exp);
}

/**
 * MUL_SAT where the operands are never both INT32_MIN, so it cannot saturate: inside EXP_ON_NEG
 * (below) and for scale * e, since e is always in [0, INT32_MAX]. For every int32 input the
 * polynomial's result lies in [1672462419, 2147483124] (it depends only on the low 24 bits, all
 * 2^24 of which were evaluated), and the reconstruction multiplies it by positive factors.
 */
static inline int32_t sm_mul_sat_bounded(int32_t a, int32_t b)
{
    return (int32_t)(((int64_t)a * b + ((int64_t)1 << 30)) >> 31);
}

/** DIV_POW2(v, n) for v >= 0 and n in [1, 31]: round half up, in 32 unsigned bits (no overflow). */
static inline int32_t sm_div_pow2_nonnegative(int32_t v, int32_t n)
{
    return (int32_t)(((uint32_t)v + (1U << (n - 1))) >> n);
}

/** One step of EXP_ON_NEG's reconstruction: result * exp(-2^(bit - 26)) when the bit is set. */
static inline int32_t sm_select_if_bit(int32_t remainder, int32_t bit, int32_t result, int32_t factor)
{
    return (remainder & (1 << bit)) ? sm_mul_sat_bounded(result, factor) : result;
}

/**
 * EXP_ON_NEG (arm_nn_exp_on_negative_values): exp(val) for Q5.26 val <= 0, in Q0.31 (gemmlowp).
 * A fourth-order polynomial on [-1/4, 0), then one multiply per set bit of the remainder.
 * x is in [-2^28, 2^28), so no product here can saturate.
 */
static int32_t sm_exp_on_negative_values(int32_t val)
{
    const int32_t val_mod_minus_quarter = (val & ((1 << 24) - 1)) - (1 << 24);
    const int32_t remainder = nn_add_wrap(val_mod_minus_quarter, -val);
    const int32_t x = nn_add_wrap(nn_shl_wrap(val_mod_minus_quarter, 5), 1 << 28);
    const int32_t x2 = sm_mul_sat_bounded(x, x);
    const int32_t op_1 =
        nn_add_wrap(sm_div_pow2_nonnegative(sm_mul_sat_bounded(x2, x2), 2), sm_mul_sat_bounded(x2, x));
    const int32_t op_2 =
        nn_add_wrap(x, nn_divide_by_power_of_two(nn_add_wrap(sm_mul_sat_bounded(op_1, 715827883), x2), 1));
    int32_t result = nn_add_wrap(1895147668, sm_mul_sat_bounded(1895147668, op_2));
    result = sm_select_if_bit(remainder, 24, result, 1672461947);
    result = sm_select_if_bit(remainder, 25, result, 1302514674);
    result = sm_select_if_bit(remainder, 26, result, 790015084);
    result = sm_select_if_bit(remainder, 27, result, 290630308);
    result = sm_select_if_bit(remainder, 28, result, 39332535);
    result = sm_select_if_bit(remainder, 29, result, 720401);
    result = sm_select_if_bit(remainder, 30, result, 242);
    return val == 0 ? INT32_MAX : result;
}

/**
 * ONE_OVER1 (arm_nn_one_over_one_plus_x_for_x_in_0_1): 1 / (1 + x) for Q0.31 x in [0, 1),
 * three Newton-Raphson steps; half_denominator = (x + INT32_MAX) / 2 rounded half away from 0.
 */
static int32_t sm_one_over_one_plus_x(int32_t val)
{
    const int64_t sum = (int64_t)val + INT32_MAX;
    const int32_t half_denominator = (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
    int32_t x = nn_add_wrap(1515870810, sm_mul_sat(half_denominator, -1010580540));
    for (int32_t i = 0; i < 3; i++)
    {
        const int32_t one_minus_half_denominator_times_x = nn_add_wrap(1 << 29, -sm_mul_sat(half_denominator, x));
        x = nn_add_wrap(x, sm_mul_pow2(sm_mul_sat(x, one_minus_half_denominator_times_x), 2));
    }
    return sm_mul_pow2(x, 1);
}

/** The exponential of one diff: EXP_ON_NEG(MUL_SAT(diff * (1 << shift), mult)). */
static inline int32_t sm_exp_of_diff(int32_t diff, int32_t mult, int32_t shift)
{
    return sm_exp_on_negative_values(sm_mul_sat(nn_shl_wrap(diff, shift), mult));
}

/** 1/sum and the output shift of one row, from its Q12.19 sum (wrapped to 32 bits). */
typedef struct
{
    int32_t scale;
    int32_t bits; /* bits_over_unit, capped at 31 (only rows outside kernels_py's domain reach 32..35) */
} sm_row_scale;

static inline sm_row_scale sm_scale_of(uint32_t sum)
{
    const int32_t headroom = sum == 0U ? 32 : __builtin_clz(sum);
    const uint32_t normalised = (int32_t)sum > 0 ? sum << headroom : 0U;
    const int32_t bits = SM_ACCUM_BITS - headroom + 23; /* >= 3 */
    const sm_row_scale s = {sm_one_over_one_plus_x((int32_t)(normalised - 0x80000000U)), bits > 31 ? 31 : bits};
    return s;
}

/** DIV_POW2(e, 12), e >= 0: the Q12.19 term of the row sum. */
static inline uint32_t sm_sum_term(int32_t e) { return (uint32_t)sm_div_pow2_nonnegative(e, SM_ACCUM_BITS); }

static inline int8_t sm_output(int32_t e, sm_row_scale s)
{
    const int32_t p = sm_mul_sat_bounded(s.scale, e);
    /* the scale is positive for every row in kernels_py's domain, so p >= 0 takes the short form */
    const int32_t r = p >= 0 ? sm_div_pow2_nonnegative(p, s.bits) : nn_divide_by_power_of_two(p, s.bits);
    return nn_clamp_s8(r + INT8_MIN, INT8_MIN, INT8_MAX);
}

/** Number of table entries (diffs 0, -1, .., -span + 1) that pass diff_min, 0..256. */
static inline int32_t sm_table_span(int32_t diff_min)
{
    const int32_t dm = NN_MIN(NN_MAX(diff_min, 1 - SM_DIFFS), 1); /* diffs are >= -255 */
    return 1 - dm;
}

/** Tabulate when the call has more elements (one exponential each) than the table has entries to
 * compute; a row longer than the table always has. */
static inline int sm_use_table(int32_t num_rows, int32_t row_size, int32_t diff_min)
{
    return (int64_t)num_rows * row_size > sm_table_span(diff_min);
}

/* ------------------------------------------------------------------------------------------ */
/* Scalar and DSP (shared; the tiers differ in how they find a row's maximum).                */

typedef int32_t (*sm_row_max_fn)(const int8_t *row, int32_t size);

static int32_t sm_row_max_scalar(const int8_t *row, int32_t size)
{
    int32_t max = row[0];
    for (int32_t i = 1; i < size; i++)
    {
        max = NN_MAX(max, row[i]);
    }
    return max;
}

/** One row's output from its exponentials (0 where diff < diff_min). */
static inline void sm_row_from_exps(const int32_t *e, int32_t row_size, int8_t *output)
{
    uint32_t sum = 0;
    for (int32_t c = 0; c < row_size; c++)
    {
        sum += sm_sum_term(e[c]);
    }
    const sm_row_scale s = sm_scale_of(sum);
    for (int32_t c = 0; c < row_size; c++)
    {
        output[c] = sm_output(e[c], s);
    }
}

static inline __attribute__((always_inline)) void sm_softmax_scalar(const int8_t *input, int32_t num_rows,
                                                                    int32_t row_size, int32_t mult, int32_t shift,
                                                                    int32_t diff_min, int8_t *output,
                                                                    sm_row_max_fn row_max)
{
    if (row_size < 1)
    {
        return;
    }
    int32_t exps[SM_DIFFS]; /* e by -diff (the table), or one row's e by column */
    if (!sm_use_table(num_rows, row_size, diff_min))
    {
        for (int32_t r = 0; r < num_rows; r++)
        {
            const int32_t max = row_max(input, row_size);
            for (int32_t c = 0; c < row_size; c++)
            {
                const int32_t diff = input[c] - max;
                exps[c] = diff >= diff_min ? sm_exp_of_diff(diff, mult, shift) : 0;
            }
            sm_row_from_exps(exps, row_size, output);
            input += row_size;
            output += row_size;
        }
        return;
    }
    const int32_t span = sm_table_span(diff_min);
    for (int32_t d = 0; d < span; d++)
    {
        exps[d] = sm_exp_of_diff(-d, mult, shift);
    }
    for (int32_t d = span; d < SM_DIFFS; d++)
    {
        exps[d] = 0;
    }
    for (int32_t r = 0; r < num_rows; r++)
    {
        const int32_t max = row_max(input, row_size);
        uint32_t sum = 0;
        for (int32_t c = 0; c < row_size; c++)
        {
            sum += sm_sum_term(exps[max - input[c]]);
        }
        const sm_row_scale s = sm_scale_of(sum);
        for (int32_t c = 0; c < row_size; c++)
        {
            output[c] = sm_output(exps[max - input[c]], s);
        }
        input += row_size;
        output += row_size;
    }
}

void rs_softmax_s8_scalar(RS_SOFTMAX_ARGS)
{
    sm_softmax_scalar(input, num_rows, row_size, mult, shift, diff_min, output, sm_row_max_scalar);
}

#if RS_HAVE_DSP
/** Row maximum four bytes at a time: SSUB8 sets GE where acc >= w per byte, SEL keeps those. */
static int32_t sm_row_max_dsp(const int8_t *row, int32_t size)
{
    int32_t max = row[0];
    int32_t i = 0;
    if (size >= 8)
    {
        uint32_t acc = (uint32_t)nn_read_s8x4(row);
        for (i = 4; i + 4 <= size; i += 4)
        {
            const uint32_t w = (uint32_t)nn_read_s8x4(row + i);
            (void)__ssub8((int32_t)acc, (int32_t)w);
            acc = __sel(acc, w);
        }
        max = NN_MAX(NN_MAX((int8_t)acc, (int8_t)(acc >> 8)), NN_MAX((int8_t)(acc >> 16), (int8_t)(acc >> 24)));
    }
    for (; i < size; i++)
    {
        max = NN_MAX(max, row[i]);
    }
    return max;
}

void rs_softmax_s8_dsp(RS_SOFTMAX_ARGS)
{
    sm_softmax_scalar(input, num_rows, row_size, mult, shift, diff_min, output, sm_row_max_dsp);
}
#endif /* RS_HAVE_DSP */

/* ------------------------------------------------------------------------------------------ */
/* MVE: four exponentials per vector, arithmetic lane masks instead of compare predicates.    */

#if RS_HAVE_MVE
/** Lanes where bit `bit` of v is set: all ones, else zero (no compare, no predicate). */
    #define SM_BIT_MASK(v, bit) vshrq_n_s32(vshlq_n_s32((v), 31 - (bit)), 31)

/** r where mask is zero, t where it is all ones. */
static inline int32x4_t sm_select(int32x4_t mask, int32x4_t t, int32x4_t r)
{
    return veorq_s32(r, vandq_s32(veorq_s32(r, t), mask));
}

/** EXP_ON_NEG lane-wise, the scalar sm_exp_on_negative_values step for step: MUL_SAT is VQRDMULH,
 * DIV_POW2 of a non-negative lane is VRSHR (round half up, without intermediate overflow). */
static inline int32x4_t sm_exp_mve(int32x4_t val)
{
    const int32x4_t val_mod_minus_quarter = vsubq_s32(vandq_s32(val, vdupq_n_s32((1 << 24) - 1)), vdupq_n_s32(1 << 24));
    const int32x4_t remainder = vsubq_s32(val_mod_minus_quarter, val);
    const int32x4_t x = vaddq_n_s32(vshlq_n_s32(val_mod_minus_quarter, 5), 1 << 28);
    const int32x4_t x2 = vqrdmulhq_s32(x, x);
    const int32x4_t op_1 =
        vaddq_s32(vrshrq_n_s32(vqrdmulhq_s32(x2, x2), 2), vqrdmulhq_s32(x2, x));
    const int32x4_t op_2 =
        vaddq_s32(x, nn_divide_by_power_of_two_mve(vaddq_s32(vqrdmulhq_n_s32(op_1, 715827883), x2), 1));
    int32x4_t result = vaddq_n_s32(vqrdmulhq_n_s32(op_2, 1895147668), 1895147668);
    result = sm_select(SM_BIT_MASK(remainder, 24), vqrdmulhq_n_s32(result, 1672461947), result);
    result = sm_select(SM_BIT_MASK(remainder, 25), vqrdmulhq_n_s32(result, 1302514674), result);
    result = sm_select(SM_BIT_MASK(remainder, 26), vqrdmulhq_n_s32(result, 790015084), result);
    result = sm_select(SM_BIT_MASK(remainder, 27), vqrdmulhq_n_s32(result, 290630308), result);
    result = sm_select(SM_BIT_MASK(remainder, 28), vqrdmulhq_n_s32(result, 39332535), result);
    result = sm_select(SM_BIT_MASK(remainder, 29), vqrdmulhq_n_s32(result, 720401), result);
    result = sm_select(SM_BIT_MASK(remainder, 30), vqrdmulhq_n_s32(result, 242), result);
    /* val == 0 exactly when neither val nor -val has the sign bit set */
    const int32x4_t is_zero = vmvnq_s32(vshrq_n_s32(vorrq_s32(val, vnegq_s32(val)), 31));
    return sm_select(is_zero, vdupq_n_s32(INT32_MAX), result);
}

/** e for four diffs, zero in lanes where diff < diff_min (dm = diff_min clamped to [-255, 1]). */
static inline int32x4_t sm_exp_of_diff_mve(int32x4_t diff, int32_t dm, int32_t mult, int32_t shift)
{
    const int32x4_t keep = vmvnq_s32(vshrq_n_s32(vsubq_n_s32(diff, dm), 31));
    return vandq_s32(sm_exp_mve(vqrdmulhq_n_s32(vshlq_r_s32(diff, shift), mult)), keep);
}

static inline int32x4_t sm_output_mve(int32x4_t e, sm_row_scale s)
{
    int32x4_t p = vqrdmulhq_n_s32(e, s.scale);
    if (s.scale < 0)
    {
        /* never in kernels_py's domain: negative lanes need DIV_POW2's fixup (nn_mve.h) */
        p = vqaddq_s32(p, vshrq_n_s32(p, 31));
    }
    return nn_clamp_mve(vaddq_n_s32(vrshlq_n_s32(p, -s.bits), INT8_MIN), INT8_MIN, INT8_MAX);
}

static int32_t sm_row_max_mve(const int8_t *row, int32_t size)
{
    int8_t max = INT8_MIN;
    int32_t i = 0;
    for (; i + 16 <= size; i += 16)
    {
        max = vmaxvq_s8(max, vld1q_s8(row + i));
    }
    if (i < size)
    {
        const mve_pred16_t p = vctp8q((uint32_t)(size - i));
        max = vmaxvq_p_s8(max, vldrbq_z_s8(row + i, p), p);
    }
    return max;
}

/** The table of e by -diff, four entries per vector; entries past the span are zero. */
static void sm_fill_table_mve(int32_t *table, int32_t diff_min, int32_t mult, int32_t shift)
{
    const int32_t span = sm_table_span(diff_min);
    const int32_t dm = 1 - span;
    int32_t d = 0;
    for (; d < span; d += 4)
    {
        const int32x4_t diff = vnegq_s32(vreinterpretq_s32_u32(vidupq_n_u32((uint32_t)d, 1)));
        vst1q_s32(table + d, sm_exp_of_diff_mve(diff, dm, mult, shift));
    }
    for (; d < SM_DIFFS; d += 4)
    {
        vst1q_s32(table + d, vdupq_n_s32(0));
    }
}

void rs_softmax_s8_mve(RS_SOFTMAX_ARGS)
{
    if (row_size < 1)
    {
        return;
    }
    const int32_t row_4 = row_size & ~3;
    const int32_t tail = row_size - row_4;
    const mve_pred16_t tail_p = vctp32q((uint32_t)tail);
    int32_t exps[SM_DIFFS]; /* e by -diff (the table), or one row's e by column */
    if (sm_use_table(num_rows, row_size, diff_min))
    {
        int32_t *table = exps;
        sm_fill_table_mve(table, diff_min, mult, shift);
        for (int32_t r = 0; r < num_rows; r++)
        {
            const int32x4_t max = vdupq_n_s32(sm_row_max_mve(input, row_size));
            int32x4_t acc = vdupq_n_s32(0);
            for (int32_t c = 0; c < row_4; c += 4)
            {
                const uint32x4_t index = vreinterpretq_u32_s32(vsubq_s32(max, vldrbq_s32(input + c)));
                const int32x4_t e = vldrwq_gather_shifted_offset_s32(table, index);
                acc = vaddq_s32(acc, vrshrq_n_s32(e, SM_ACCUM_BITS));
            }
            if (tail)
            {
                /* off lanes neither load nor gather: their e is 0 */
                const uint32x4_t index =
                    vreinterpretq_u32_s32(vsubq_s32(max, vldrbq_z_s32(input + row_4, tail_p)));
                const int32x4_t e = vldrwq_gather_shifted_offset_z_s32(table, index, tail_p);
                acc = vaddq_s32(acc, vrshrq_n_s32(e, SM_ACCUM_BITS));
            }
            const sm_row_scale s = sm_scale_of((uint32_t)vaddvq_s32(acc));
            for (int32_t c = 0; c < row_4; c += 4)
            {
                const uint32x4_t index = vreinterpretq_u32_s32(vsubq_s32(max, vldrbq_s32(input + c)));
                vstrbq_s32(output + c, sm_output_mve(vldrwq_gather_shifted_offset_s32(table, index), s));
            }
            if (tail)
            {
                const uint32x4_t index =
                    vreinterpretq_u32_s32(vsubq_s32(max, vldrbq_z_s32(input + row_4, tail_p)));
                const int32x4_t e = vldrwq_gather_shifted_offset_z_s32(table, index, tail_p);
                vstrbq_p_s32(output + row_4, sm_output_mve(e, s), tail_p);
            }
            input += row_size;
            output += row_size;
        }
        return;
    }
    /* Rows of at most 256 (the table would cost more): keep each row's exponentials. */
    const int32_t dm = 1 - sm_table_span(diff_min);
    for (int32_t r = 0; r < num_rows; r++)
    {
        const int32_t max = sm_row_max_mve(input, row_size);
        int32x4_t acc = vdupq_n_s32(0);
        for (int32_t c = 0; c < row_4; c += 4)
        {
            const int32x4_t e = sm_exp_of_diff_mve(vsubq_n_s32(vldrbq_s32(input + c), max), dm, mult, shift);
            vst1q_s32(exps + c, e);
            acc = vaddq_s32(acc, vrshrq_n_s32(e, SM_ACCUM_BITS));
        }
        if (tail)
        {
            /* off lanes load 0 and may pass diff_min: the predicated adds and stores skip them */
            const int32x4_t e =
                sm_exp_of_diff_mve(vsubq_n_s32(vldrbq_z_s32(input + row_4, tail_p), max), dm, mult, shift);
            vstrwq_p_s32(exps + row_4, e, tail_p);
            acc = vaddq_m_s32(acc, acc, vrshrq_n_s32(e, SM_ACCUM_BITS), tail_p);
        }
        const sm_row_scale s = sm_scale_of((uint32_t)vaddvq_s32(acc));
        for (int32_t c = 0; c < row_4; c += 4)
        {
            vstrbq_s32(output + c, sm_output_mve(vld1q_s32(exps + c), s));
        }
        if (tail)
        {
            vstrbq_p_s32(output + row_4, sm_output_mve(vldrwq_z_s32(exps + row_4, tail_p), s), tail_p);
        }
        input += row_size;
        output += row_size;
    }
}
#endif /* RS_HAVE_MVE */

/* ------------------------------------------------------------------------------------------ */

#if RS_HAVE_MVE
    #define RS_SOFTMAX_IMPL rs_softmax_s8_mve
#elif RS_HAVE_DSP
    #define RS_SOFTMAX_IMPL rs_softmax_s8_dsp
#else
    #define RS_SOFTMAX_IMPL rs_softmax_s8_scalar
#endif

void arm_softmax_s8(RS_SOFTMAX_ARGS) { RS_SOFTMAX_IMPL(input, num_rows, row_size, mult, shift, diff_min, output); }
