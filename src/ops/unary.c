/*
 * unary.c -- elementwise ops of one tensor: math (Sqrt, Exp, Gelu, ...), activations, IsNaN/Not,
 * Cast, Identity and inference-mode Dropout.
 *
 * Kernels: float32 and float64 run their own loops (the compiler vectorises the simple ones);
 * float16/bfloat16 are converted in small stack chunks to fp32, computed, and rounded back to nearest
 * even; integers compute exactly in their own type with wrap-around (through unsigned arithmetic, so
 * Neg/Abs of the most negative value wrap instead of being undefined). Every kernel reads element i
 * before writing element i, so output 0 may share input 0's bytes (IG_OP_INPLACE).
 */
#include "op.h"
#include "ops_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#define GRAIN ((int64_t)1 << 15) /* elements per thread at least: below this threading does not pay */
#define CHUNK 256                /* fp16/bf16/cast conversion chunk (elements, on the stack) */

static int opset_of(const ig_node *n) { return n->opset > 0 ? n->opset : 1000; }

/* ---------------------------------------------------------------------------------------------- */
/* conversions shared by the fp16/bf16 paths and Cast                                              */

static void f16_load(const uint16_t *s, float *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++) d[i] = ig__f16_to_f32(s[i]);
}
static void bf16_load(const uint16_t *s, float *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++) d[i] = ig__bf16_to_f32(s[i]);
}
static void f16_store(const float *s, uint16_t *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++) d[i] = ig__f32_to_f16(s[i]);
}
static void bf16_store(const float *s, uint16_t *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++) d[i] = ig__f32_to_bf16(s[i]);
}

/* ---------------------------------------------------------------------------------------------- */
/* the math ops                                                                                    */

enum ukind {
    U_SQRT,
    U_ERF,
    U_EXP,
    U_LOG,
    U_NEG,
    U_ABS,
    U_RECIP,
    U_TANH,
    U_SIGMOID,
    U_RELU,
    U_LEAKY,
    U_CLIP,
    U_HSIGMOID,
    U_HSWISH,
    U_GELU,
    U_GELU_TANH,
    U_SOFTPLUS,
    U_MISH,
    U_ISNAN,
    U_NOT,
    U_SIN,
    U_COS,
    U_TAN,
    U_ASIN,
    U_ACOS,
    U_ATAN,
    U_SINH,
    U_COSH,
    U_ASINH,
    U_ACOSH,
    U_ATANH,
    U_FLOOR,
    U_CEIL,
    U_ROUND,
    U_SIGN,
    U_ELU,
    U_SELU,
    U_CELU,
    U_SOFTSIGN,
    U_THRELU,
    U_SHRINK,
    U_ISINF,
    U_COUNT
};

#define TS_SINT (IG_T(INT8) | IG_T(INT16) | IG_T(INT32) | IG_T(INT64))
static const uint32_t ukind_types[U_COUNT] = {
    [U_SQRT] = IG_TS_FLOAT,
    [U_ERF] = IG_TS_FLOAT,
    [U_EXP] = IG_TS_FLOAT,
    [U_LOG] = IG_TS_FLOAT,
    [U_NEG] = IG_TS_FLOAT | TS_SINT,
    [U_ABS] = IG_TS_NUM,
    [U_RECIP] = IG_TS_FLOAT,
    [U_TANH] = IG_TS_FLOAT,
    [U_SIGMOID] = IG_TS_FLOAT,
    [U_RELU] = IG_TS_FLOAT | TS_SINT,
    [U_LEAKY] = IG_TS_FLOAT,
    [U_CLIP] = IG_TS_NUM,
    [U_HSIGMOID] = IG_TS_FLOAT,
    [U_HSWISH] = IG_TS_FLOAT,
    [U_GELU] = IG_TS_FLOAT,
    [U_GELU_TANH] = IG_TS_FLOAT,
    [U_SOFTPLUS] = IG_TS_FLOAT,
    [U_MISH] = IG_TS_FLOAT,
    [U_ISNAN] = IG_TS_FLOAT,
    [U_NOT] = IG_T(BOOL),
    [U_SIN] = IG_TS_FLOAT,
    [U_COS] = IG_TS_FLOAT,
    [U_TAN] = IG_TS_FLOAT,
    [U_ASIN] = IG_TS_FLOAT,
    [U_ACOS] = IG_TS_FLOAT,
    [U_ATAN] = IG_TS_FLOAT,
    [U_SINH] = IG_TS_FLOAT,
    [U_COSH] = IG_TS_FLOAT,
    [U_ASINH] = IG_TS_FLOAT,
    [U_ACOSH] = IG_TS_FLOAT,
    [U_ATANH] = IG_TS_FLOAT,
    [U_FLOOR] = IG_TS_FLOAT,
    [U_CEIL] = IG_TS_FLOAT,
    [U_ROUND] = IG_TS_FLOAT,
    [U_SIGN] = IG_TS_NUM,
    [U_ELU] = IG_TS_FLOAT,
    [U_SELU] = IG_TS_FLOAT,
    [U_CELU] = IG_TS_FLOAT,
    [U_SOFTSIGN] = IG_TS_FLOAT,
    [U_THRELU] = IG_TS_FLOAT,
    [U_SHRINK] = IG_TS_FLOAT,
    [U_ISINF] = IG_TS_FLOAT,
};

typedef struct uparams {
    int kind;
    float alpha, beta; /* LeakyRelu, HardSigmoid, Elu, Selu (alpha, gamma), Celu, ThresholdedRelu,
                        * Shrink (bias, lambd), IsInf (detect_positive, detect_negative) */
    double lo, hi;     /* Clip bounds for float types */
    int64_t ilo, ihi;  /* Clip bounds for signed ints */
    uint64_t ulo, uhi; /* Clip bounds for unsigned ints */
} uparams;

/* The float32 and float64 kernels share one body; F(fn) names the math function for the type and
 * SEL a branch-free select (see self below). */
#define UNARY_FLOAT_BODY(T, F, SEL)                                                                               \
    typedef T elem_t; /* for UNARY_LOOP */                                                                        \
    const T alpha = (T)p->alpha, beta = (T)p->beta;                                                               \
    switch (p->kind) {                                                                                            \
    case U_SQRT:                                                                                                  \
        for (int64_t i = 0; i < n; i++) y[i] = F(sqrt)(x[i]);                                                     \
        break;                                                                                                    \
    case U_ERF:                                                                                                   \
        for (int64_t i = 0; i < n; i++) y[i] = F(erf)(x[i]);                                                      \
        break;                                                                                                    \
    case U_EXP:                                                                                                   \
        for (int64_t i = 0; i < n; i++) y[i] = F(exp)(x[i]);                                                      \
        break;                                                                                                    \
    case U_LOG:                                                                                                   \
        for (int64_t i = 0; i < n; i++) y[i] = F(log)(x[i]);                                                      \
        break;                                                                                                    \
    case U_NEG:                                                                                                   \
        for (int64_t i = 0; i < n; i++) y[i] = -x[i];                                                             \
        break;                                                                                                    \
    case U_ABS:                                                                                                   \
        for (int64_t i = 0; i < n; i++) y[i] = F(fabs)(x[i]);                                                     \
        break;                                                                                                    \
    case U_RECIP:                                                                                                 \
        for (int64_t i = 0; i < n; i++) y[i] = (T)1 / x[i];                                                       \
        break;                                                                                                    \
    case U_TANH:                                                                                                  \
        for (int64_t i = 0; i < n; i++) y[i] = F(tanh)(x[i]);                                                     \
        break;                                                                                                    \
    case U_SIGMOID: /* 1/(1+e^-x), or e^x/(1+e^x) for x < 0: nothing overflows or cancels */                      \
        for (int64_t i = 0; i < n; i++) {                                                                         \
            T v = x[i], e = F(exp)(-F(fabs)(v));                                                                  \
            y[i] = SEL(v < 0, e, (T)1) / ((T)1 + e);                                                              \
        }                                                                                                         \
        break;                                                                                                    \
    case U_RELU:                                                                                                  \
        for (int64_t i = 0; i < n; i++) y[i] = SEL(x[i] < 0, (T)0, x[i]);                                         \
        break; /* NaN stays */                                                                                    \
    case U_LEAKY:                                                                                                 \
        for (int64_t i = 0; i < n; i++) y[i] = SEL(x[i] < 0, alpha * x[i], x[i]);                                 \
        break;                                                                                                    \
    case U_CLIP: {                                                                                                \
        const T lo = (T)p->lo, hi = (T)p->hi;                                                                     \
        for (int64_t i = 0; i < n; i++) { /* max then min, as numpy: lo > hi gives hi everywhere */               \
            T v = SEL(x[i] < lo, lo, x[i]);                                                                       \
            y[i] = SEL(v > hi, hi, v);                                                                            \
        }                                                                                                         \
        break;                                                                                                    \
    }                                                                                                             \
    case U_HSIGMOID:                                                                                              \
        for (int64_t i = 0; i < n; i++) {                                                                         \
            T v = alpha * x[i] + beta;                                                                            \
            v = SEL(v < 0, (T)0, v);                                                                              \
            y[i] = SEL(v > 1, (T)1, v);                                                                           \
        }                                                                                                         \
        break;                                                                                                    \
    case U_HSWISH:                                                                                                \
        for (int64_t i = 0; i < n; i++) {                                                                         \
            T v = x[i] * (T)(1.0 / 6.0) + (T)0.5;                                                                 \
            v = SEL(v < 0, (T)0, v);                                                                              \
            v = SEL(v > 1, (T)1, v);                                                                              \
            y[i] = x[i] * v;                                                                                      \
        }                                                                                                         \
        break;                                                                                                    \
    case U_GELU:                                                                                                  \
        for (int64_t i = 0; i < n; i++) y[i] = (T)0.5 * x[i] * ((T)1 + F(erf)(x[i] * (T)0.70710678118654752440)); \
        break;                                                                                                    \
    case U_GELU_TANH:                                                                                             \
        for (int64_t i = 0; i < n; i++) {                                                                         \
            T v = x[i];                                                                                           \
            y[i] = (T)0.5 * v * ((T)1 + F(tanh)((T)0.79788456080286535588 * (v + (T)0.044715 * v * v * v)));      \
        }                                                                                                         \
        break;                                                                                                    \
    case U_SOFTPLUS: /* log(1+e^x) = max(x,0) + log1p(e^-|x|): no overflow for large x */                         \
        for (int64_t i = 0; i < n; i++) {                                                                         \
            T v = x[i];                                                                                           \
            y[i] = SEL(v > 0, v, (T)0) + F(log1p)(F(exp)(-F(fabs)(v)));                                           \
        }                                                                                                         \
        break;                                                                                                    \
    case U_MISH:                                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                                         \
            T v = x[i];                                                                                           \
            y[i] = v * F(tanh)(SEL(v > 0, v, (T)0) + F(log1p)(F(exp)(-F(fabs)(v))));                              \
        }                                                                                                         \
        break;                                                                                                    \
    case U_SIN: UNARY_LOOP(F(sin)(v))                                                                             \
    case U_COS: UNARY_LOOP(F(cos)(v))                                                                             \
    case U_TAN: UNARY_LOOP(F(tan)(v))                                                                             \
    case U_ASIN: UNARY_LOOP(F(asin)(v))                                                                           \
    case U_ACOS: UNARY_LOOP(F(acos)(v))                                                                           \
    case U_ATAN: UNARY_LOOP(F(atan)(v))                                                                           \
    case U_SINH: UNARY_LOOP(F(sinh)(v))                                                                           \
    case U_COSH: UNARY_LOOP(F(cosh)(v))                                                                           \
    case U_ASINH: UNARY_LOOP(F(asinh)(v))                                                                         \
    case U_ACOSH: UNARY_LOOP(F(acosh)(v))                                                                         \
    case U_ATANH: UNARY_LOOP(F(atanh)(v))                                                                         \
    case U_FLOOR: UNARY_LOOP(F(floor)(v))                                                                         \
    case U_CEIL: UNARY_LOOP(F(ceil)(v))                                                                           \
    case U_ROUND: UNARY_LOOP(F(rint)(v))                      /* half to even in the default rounding mode */     \
    case U_SIGN: UNARY_LOOP(v > 0 ? (T)1 : v < 0 ? (T)-1 : v) /* 0 and NaN stay */                                \
    case U_ELU: UNARY_LOOP(SEL(v < 0, alpha * F(expm1)(v), v))                                                    \
    case U_SELU: UNARY_LOOP(SEL(v <= 0, beta * (alpha * F(expm1)(v)), beta * v))                                  \
    case U_CELU: UNARY_LOOP(SEL(v < 0, alpha * F(expm1)(v / alpha), v))                                           \
    case U_SOFTSIGN: UNARY_LOOP(v / ((T)1 + F(fabs)(v)))                                                          \
    case U_THRELU: UNARY_LOOP(SEL(v > alpha, v, (T)0))                                                            \
    case U_SHRINK: UNARY_LOOP(v<-beta ? v + alpha : v> beta ? v - alpha : (T)0)                                   \
    default: break;                                                                                               \
    }

#define UNARY_LOOP(EXPR)              \
    for (int64_t i = 0; i < n; i++) { \
        const elem_t v = x[i];        \
        y[i] = (EXPR);                \
    }                                 \
    break;

/* float32 exp/tanh/erf: branch-free versions the compiler vectorises (libm's scalar calls cost
 * ~10-20 ns an element); errors stay within a few ulp (exp ~1, tanh and erf < 4e-7 absolute and
 * relative), well inside the tolerances fp32 results are held to. float64 keeps libm. */

static inline double seld(bool c, double a, double b) { return c ? a : b; }

#define fast_expf   ig__fast_expf
#define fast_tanhf  ig__fast_tanhf
#define fast_erff   ig__fast_erff
#define fast_sqrtf  sqrtf
#define fast_logf   logf
#define fast_fabsf  fabsf
#define fast_log1pf log1pf
/* the rest as libm computes them, which pw.c calls too (a fused chain computes what the node does) */
#define fast_sinf   sinf
#define fast_cosf   cosf
#define fast_tanf   tanf
#define fast_asinf  asinf
#define fast_acosf  acosf
#define fast_atanf  atanf
#define fast_sinhf  sinhf
#define fast_coshf  coshf
#define fast_asinhf asinhf
#define fast_acoshf acoshf
#define fast_atanhf atanhf
#define fast_floorf floorf
#define fast_ceilf  ceilf
#define fast_rintf  rintf
#define fast_expm1f expm1f
#define FN_F32(fn)  fast_##fn##f
#define FN_F64(fn)  fn
static void unary_f32(const uparams *p, const float *x, float *y, int64_t n)
{
    UNARY_FLOAT_BODY(float, FN_F32, ig__self)
}
static void unary_f64(const uparams *p, const double *x, double *y, int64_t n){UNARY_FLOAT_BODY(double, FN_F64, seld)}

/* Integer kernels: Neg, Abs, Relu, Clip. WU is the unsigned type the arithmetic wraps in. */
#define UNARY_SINT(name, T, WU)                                                          \
    static void name(const uparams *p, const T *x, T *y, int64_t n)                      \
    {                                                                                    \
        switch (p->kind) {                                                               \
        case U_NEG:                                                                      \
            for (int64_t i = 0; i < n; i++) y[i] = (T)(0u - (WU)x[i]);                   \
            break;                                                                       \
        case U_ABS:                                                                      \
            for (int64_t i = 0; i < n; i++) y[i] = x[i] < 0 ? (T)(0u - (WU)x[i]) : x[i]; \
            break;                                                                       \
        case U_RELU:                                                                     \
            for (int64_t i = 0; i < n; i++) y[i] = x[i] < 0 ? 0 : x[i];                  \
            break;                                                                       \
        case U_SIGN:                                                                     \
            for (int64_t i = 0; i < n; i++) y[i] = (T)((x[i] > 0) - (x[i] < 0));         \
            break;                                                                       \
        case U_CLIP: {                                                                   \
            const int64_t lo = p->ilo, hi = p->ihi;                                      \
            for (int64_t i = 0; i < n; i++) {                                            \
                int64_t v = x[i] < lo ? lo : x[i];                                       \
                y[i] = (T)(v > hi ? hi : v);                                             \
            }                                                                            \
            break;                                                                       \
        }                                                                                \
        default: break;                                                                  \
        }                                                                                \
    }
#define UNARY_UINT(name, T)                                         \
    static void name(const uparams *p, const T *x, T *y, int64_t n) \
    {                                                               \
        switch (p->kind) {                                          \
        case U_ABS:                                                 \
        case U_RELU:                                                \
            if (x != y) memmove(y, x, (size_t)n * sizeof(T));       \
            break;                                                  \
        case U_SIGN:                                                \
            for (int64_t i = 0; i < n; i++) y[i] = x[i] != 0;       \
            break;                                                  \
        case U_CLIP: {                                              \
            const uint64_t lo = p->ulo, hi = p->uhi;                \
            for (int64_t i = 0; i < n; i++) {                       \
                uint64_t v = x[i] < lo ? lo : x[i];                 \
                y[i] = (T)(v > hi ? hi : v);                        \
            }                                                       \
            break;                                                  \
        }                                                           \
        default: break;                                             \
        }                                                           \
    }
UNARY_SINT(unary_i8, int8_t, uint32_t) UNARY_SINT(unary_i16, int16_t, uint32_t) UNARY_SINT(unary_i32, int32_t, uint32_t)
    UNARY_SINT(unary_i64, int64_t, uint64_t) UNARY_UINT(unary_u8, uint8_t) UNARY_UINT(unary_u16, uint16_t)
        UNARY_UINT(unary_u32, uint32_t) UNARY_UINT(unary_u64, uint64_t)

            typedef struct ujob {
    uparams p;
    ingot_dtype t;
    const void *x;
    void *y;
} ujob;

static void unary_range(void *arg, int64_t b, int64_t e)
{
    const ujob *j = arg;
    const uparams *p = &j->p;
    int64_t n = e - b;
    switch (j->t) {
    case INGOT_DTYPE_FLOAT: unary_f32(p, (const float *)j->x + b, (float *)j->y + b, n); return;
    case INGOT_DTYPE_DOUBLE: unary_f64(p, (const double *)j->x + b, (double *)j->y + b, n); return;
    case INGOT_DTYPE_FLOAT16:
    case INGOT_DTYPE_BFLOAT16: {
        float buf[CHUNK];
        const uint16_t *x = (const uint16_t *)j->x + b;
        uint16_t *y = (uint16_t *)j->y + b;
        bool h = j->t == INGOT_DTYPE_FLOAT16;
        for (int64_t i = 0; i < n; i += CHUNK) {
            int64_t m = n - i < CHUNK ? n - i : CHUNK;
            if (h)
                f16_load(x + i, buf, m);
            else
                bf16_load(x + i, buf, m);
            unary_f32(p, buf, buf, m);
            if (h)
                f16_store(buf, y + i, m);
            else
                bf16_store(buf, y + i, m);
        }
        return;
    }
    case INGOT_DTYPE_INT8: unary_i8(p, (const int8_t *)j->x + b, (int8_t *)j->y + b, n); return;
    case INGOT_DTYPE_INT16: unary_i16(p, (const int16_t *)j->x + b, (int16_t *)j->y + b, n); return;
    case INGOT_DTYPE_INT32: unary_i32(p, (const int32_t *)j->x + b, (int32_t *)j->y + b, n); return;
    case INGOT_DTYPE_INT64: unary_i64(p, (const int64_t *)j->x + b, (int64_t *)j->y + b, n); return;
    case INGOT_DTYPE_UINT8: unary_u8(p, (const uint8_t *)j->x + b, (uint8_t *)j->y + b, n); return;
    case INGOT_DTYPE_UINT16: unary_u16(p, (const uint16_t *)j->x + b, (uint16_t *)j->y + b, n); return;
    case INGOT_DTYPE_UINT32: unary_u32(p, (const uint32_t *)j->x + b, (uint32_t *)j->y + b, n); return;
    case INGOT_DTYPE_UINT64: unary_u64(p, (const uint64_t *)j->x + b, (uint64_t *)j->y + b, n); return;
    default: return;
    }
}

/* IsNaN: float types -> bool. Not: bool -> bool. */
static void isnan_range(void *arg, int64_t b, int64_t e)
{
    const ujob *j = arg;
    uint8_t *y = (uint8_t *)j->y + b;
    int64_t n = e - b;
    switch (j->t) {
    case INGOT_DTYPE_FLOAT: {
        const float *x = (const float *)j->x + b;
        for (int64_t i = 0; i < n; i++) y[i] = x[i] != x[i];
        return;
    }
    case INGOT_DTYPE_DOUBLE: {
        const double *x = (const double *)j->x + b;
        for (int64_t i = 0; i < n; i++) y[i] = x[i] != x[i];
        return;
    }
    case INGOT_DTYPE_FLOAT16: { /* exponent all ones, mantissa nonzero */
        const uint16_t *x = (const uint16_t *)j->x + b;
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] & 0x7fff) > 0x7c00;
        return;
    }
    case INGOT_DTYPE_BFLOAT16: {
        const uint16_t *x = (const uint16_t *)j->x + b;
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] & 0x7fff) > 0x7f80;
        return;
    }
    default: return;
    }
}

/* IsInf: float types -> bool; alpha/beta say whether +inf / -inf count. */
static void isinf_range(void *arg, int64_t b, int64_t e)
{
    const ujob *j = arg;
    uint8_t *y = (uint8_t *)j->y + b;
    const bool pos = j->p.alpha != 0, neg = j->p.beta != 0;
    for (int64_t i = 0; i < e - b; i++) {
        double v;
        switch (j->t) {
        case INGOT_DTYPE_FLOAT: v = ((const float *)j->x)[b + i]; break;
        case INGOT_DTYPE_DOUBLE: v = ((const double *)j->x)[b + i]; break;
        case INGOT_DTYPE_FLOAT16: v = ig__f16_to_f32(((const uint16_t *)j->x)[b + i]); break;
        case INGOT_DTYPE_BFLOAT16: v = ig__bf16_to_f32(((const uint16_t *)j->x)[b + i]); break;
        default: v = 0; break;
        }
        y[i] = (pos && v == INFINITY) || (neg && v == -INFINITY);
    }
}

static void not_range(void *arg, int64_t b, int64_t e)
{
    const ujob *j = arg;
    const uint8_t *x = (const uint8_t *)j->x + b;
    uint8_t *y = (uint8_t *)j->y + b;
    for (int64_t i = 0; i < e - b; i++) y[i] = !x[i];
}

/* Clip's bounds: attributes min/max before opset 11, optional scalar inputs 1 and 2 after; absent
 * bounds are the type's range (-inf/+inf for floats). */
static void clip_bounds(const ig_exec *ex, uparams *p)
{
    ingot_dtype t = ex->in[0]->dtype;
    p->lo = -INFINITY;
    p->hi = INFINITY;
    switch (t) {
    case INGOT_DTYPE_INT8:
        p->ilo = INT8_MIN;
        p->ihi = INT8_MAX;
        break;
    case INGOT_DTYPE_INT16:
        p->ilo = INT16_MIN;
        p->ihi = INT16_MAX;
        break;
    case INGOT_DTYPE_INT32:
        p->ilo = INT32_MIN;
        p->ihi = INT32_MAX;
        break;
    default:
        p->ilo = INT64_MIN;
        p->ihi = INT64_MAX;
        break;
    }
    p->ulo = 0;
    p->uhi = UINT64_MAX;
    if (opset_of(ex->node) < 11) {
        p->lo = ig__attr_float(ex->node, "min", -INFINITY);
        p->hi = ig__attr_float(ex->node, "max", INFINITY);
        return;
    }
    for (int k = 0; k < 2; k++) {
        const ig_tensor *b = ex->n_in > 1 + k ? ex->in[1 + k] : NULL;
        if (!b || b->numel < 1) continue;
        if (ig__dtype_is_float(t)) {
            double v = ig__elem_f64(b->dtype, b->data, 0);
            if (k == 0)
                p->lo = v;
            else
                p->hi = v;
        } else if (t == INGOT_DTYPE_UINT64 || t == INGOT_DTYPE_UINT32 || t == INGOT_DTYPE_UINT16 ||
                   t == INGOT_DTYPE_UINT8) {
            uint64_t v = (uint64_t)ig__elem_i64(b->dtype, b->data, 0);
            if (k == 0)
                p->ulo = v;
            else
                p->uhi = v;
        } else {
            int64_t v = ig__elem_i64(b->dtype, b->data, 0);
            if (k == 0)
                p->ilo = v;
            else
                p->ihi = v;
        }
    }
}

static ingot_status unary_exec(ig_exec *ex, int kind)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    if (!x || !y)
        return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s': missing input or output", ig__node_label(ex->node));
    if ((unsigned)x->dtype >= 32 || !(ukind_types[kind] & (1u << x->dtype)))
        return ig__errf(ex->err, INGOT_ERR_MODEL_UNSUPPORTED_OP, "node '%s' (%s): dtype %s is not supported",
                        ig__node_label(ex->node), ex->node->op_type, ingot_dtype_name(x->dtype));
    if (y->numel != x->numel)
        return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s' (%s): output has %" PRId64 " elements, input %" PRId64,
                        ig__node_label(ex->node), ex->node->op_type, y->numel, x->numel);
    ujob j = {.p = {.kind = kind}, .t = x->dtype, .x = x->data, .y = y->data};
    const ig_node *n = ex->node;
    switch (kind) {
    case U_LEAKY: j.p.alpha = ig__attr_float(n, "alpha", 0.01f); break;
    case U_HSIGMOID:
        j.p.alpha = ig__attr_float(n, "alpha", 0.2f);
        j.p.beta = ig__attr_float(n, "beta", 0.5f);
        break;
    case U_GELU:
        if (!strcmp(ig__attr_str(n, "approximate", "none"), "tanh")) j.p.kind = U_GELU_TANH;
        break;
    case U_CLIP: clip_bounds(ex, &j.p); break;
    case U_ELU:
    case U_CELU:
    case U_THRELU: j.p.alpha = ig__attr_float(n, "alpha", 1.0f); break;
    case U_SELU:
        j.p.alpha = ig__attr_float(n, "alpha", 1.67326319217681884765625f);
        j.p.beta = ig__attr_float(n, "gamma", 1.05070102214813232421875f);
        break;
    case U_SHRINK:
        j.p.alpha = ig__attr_float(n, "bias", 0.0f);
        j.p.beta = ig__attr_float(n, "lambd", 0.5f);
        break;
    case U_ISINF:
        j.p.alpha = (float)ig__attr_int(n, "detect_positive", 1);
        j.p.beta = (float)ig__attr_int(n, "detect_negative", 1);
        break;
    default: break;
    }
    ig_range_fn fn = kind == U_ISNAN   ? isnan_range
                     : kind == U_ISINF ? isinf_range
                     : kind == U_NOT   ? not_range
                                       : unary_range;
    ig__parallel_for(ex->pool, x->numel, GRAIN, fn, &j);
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* inference                                                                                        */

static ingot_status same_shape_infer(ig_infer *cx, uint32_t types, ingot_dtype out_t)
{
    ig_value *x = ig__in(cx, 0);
    if (!x) return ig__fail_shape(cx, "input 0 is missing");
    ingot_status st = ig__check_dtype(cx, 0, types);
    if (st != INGOT_OK) return st;
    return ig__set_out(cx, 0, out_t == INGOT_DTYPE_UNDEFINED ? x->dtype : out_t, &x->shape);
}

static ingot_status unary_infer(ig_infer *cx, int kind)
{
    return same_shape_infer(cx, ukind_types[kind],
                            kind == U_ISNAN || kind == U_ISINF ? INGOT_DTYPE_BOOL : INGOT_DTYPE_UNDEFINED);
}

static ingot_status gelu_infer(ig_infer *cx)
{
    const char *a = ig__attr_str(cx->node, "approximate", "none");
    if (strcmp(a, "none") && strcmp(a, "tanh"))
        return ig__unsupported(cx, "attribute approximate='%s' is not supported (expected 'none' or 'tanh')", a);
    return unary_infer(cx, U_GELU);
}

static ingot_status clip_infer(ig_infer *cx)
{
    ingot_status st = unary_infer(cx, U_CLIP);
    if (st != INGOT_OK) return st;
    if (opset_of(cx->node) < 11) {
        if (!ig__dtype_is_float(ig__in(cx, 0)->dtype))
            return ig__unsupported(cx, "Clip before opset 11 takes float inputs only, got %s",
                                   ingot_dtype_name(ig__in(cx, 0)->dtype));
        return INGOT_OK;
    }
    for (int k = 1; k < 3; k++) {
        ig_value *b = ig__in(cx, k);
        if (!b) continue;
        if (b->dtype != ig__in(cx, 0)->dtype)
            return ig__fail_shape(cx, "input %d '%s' (%s) has dtype %s, but the input is %s", k, b->name,
                                  k == 1 ? "min" : "max", ingot_dtype_name(b->dtype),
                                  ingot_dtype_name(ig__in(cx, 0)->dtype));
        int64_t numel;
        if (ig__shape_numel(&b->shape, &numel) && numel != 1)
            return ig__fail_shape(cx, "input %d '%s' (%s) must be a scalar, has %" PRId64 " elements", k, b->name,
                                  k == 1 ? "min" : "max", numel);
    }
    return INGOT_OK;
}

/* Not of a small known bool vector (a mask computed from shapes) keeps its values. */
static ingot_status not_infer(ig_infer *cx)
{
    ingot_status st = same_shape_infer(cx, IG_T(BOOL), INGOT_DTYPE_BOOL);
    ig_value *x = ig__in(cx, 0);
    if (st != INGOT_OK || x->n_sym <= 0 || x->n_sym > IG_MAX_SYMVAL) return st;
    ig_dim v[IG_MAX_SYMVAL];
    for (int32_t k = 0; k < x->n_sym; k++) {
        if (!ig__dim_known(x->sym[k])) return INGOT_OK;
        v[k] = ig__dim_const(x->sym[k].n == 0);
    }
    return ig__set_out_sym(cx, 0, v, x->n_sym);
}

#define UNARY_OP(cname, Name, since_, kind)                                           \
    static ingot_status cname##_infer(ig_infer *cx) { return unary_infer(cx, kind); } \
    static ingot_status cname##_cpu(ig_exec *ex) { return unary_exec(ex, kind); }     \
    const ig_op_def ig__op_##cname = {.name = Name,                                   \
                                      .since = since_,                                \
                                      .min_in = 1,                                    \
                                      .max_in = 1,                                    \
                                      .min_out = 1,                                   \
                                      .max_out = 1,                                   \
                                      .flags = IG_OP_INPLACE,                         \
                                      .infer = cname##_infer,                         \
                                      .cpu = cname##_cpu};

UNARY_OP(sqrt, "Sqrt", 1, U_SQRT)
UNARY_OP(erf, "Erf", 9, U_ERF)
UNARY_OP(exp, "Exp", 1, U_EXP)
UNARY_OP(log, "Log", 1, U_LOG)
UNARY_OP(neg, "Neg", 1, U_NEG)
UNARY_OP(abs, "Abs", 1, U_ABS)
UNARY_OP(reciprocal, "Reciprocal", 1, U_RECIP)
UNARY_OP(tanh, "Tanh", 1, U_TANH)
UNARY_OP(sigmoid, "Sigmoid", 1, U_SIGMOID)
UNARY_OP(relu, "Relu", 1, U_RELU)
UNARY_OP(leaky_relu, "LeakyRelu", 1, U_LEAKY)
UNARY_OP(hard_sigmoid, "HardSigmoid", 1, U_HSIGMOID)
UNARY_OP(hard_swish, "HardSwish", 14, U_HSWISH)
UNARY_OP(softplus, "Softplus", 1, U_SOFTPLUS)
UNARY_OP(mish, "Mish", 18, U_MISH)
UNARY_OP(sin, "Sin", 7, U_SIN)
UNARY_OP(cos, "Cos", 7, U_COS)
UNARY_OP(tan, "Tan", 7, U_TAN)
UNARY_OP(asin, "Asin", 7, U_ASIN)
UNARY_OP(acos, "Acos", 7, U_ACOS)
UNARY_OP(atan, "Atan", 7, U_ATAN)
UNARY_OP(sinh, "Sinh", 9, U_SINH)
UNARY_OP(cosh, "Cosh", 9, U_COSH)
UNARY_OP(asinh, "Asinh", 9, U_ASINH)
UNARY_OP(acosh, "Acosh", 9, U_ACOSH)
UNARY_OP(atanh, "Atanh", 9, U_ATANH)
UNARY_OP(floor, "Floor", 1, U_FLOOR)
UNARY_OP(ceil, "Ceil", 1, U_CEIL)
UNARY_OP(round, "Round", 11, U_ROUND)
UNARY_OP(sign, "Sign", 9, U_SIGN)
UNARY_OP(elu, "Elu", 1, U_ELU)
UNARY_OP(selu, "Selu", 1, U_SELU)
UNARY_OP(softsign, "Softsign", 1, U_SOFTSIGN)
UNARY_OP(thresholded_relu, "ThresholdedRelu", 10, U_THRELU)
UNARY_OP(shrink, "Shrink", 9, U_SHRINK)

/* Celu divides by alpha: 0 would make every negative input NaN, which the spec does not intend. */
static ingot_status celu_infer(ig_infer *cx)
{
    if (ig__attr_float(cx->node, "alpha", 1.0f) == 0.0f) return ig__unsupported(cx, "attribute alpha=0 is not valid");
    return unary_infer(cx, U_CELU);
}
static ingot_status celu_cpu(ig_exec *ex) { return unary_exec(ex, U_CELU); }
const ig_op_def ig__op_celu = {.name = "Celu",
                               .since = 12,
                               .min_in = 1,
                               .max_in = 1,
                               .min_out = 1,
                               .max_out = 1,
                               .flags = IG_OP_INPLACE,
                               .infer = celu_infer,
                               .cpu = celu_cpu};

static ingot_status is_inf_infer(ig_infer *cx)
{
    for (int k = 0; k < 2; k++) {
        const char *a = k ? "detect_negative" : "detect_positive";
        int64_t v = ig__attr_int(cx->node, a, 1);
        if (v != 0 && v != 1) return ig__unsupported(cx, "attribute %s=%" PRId64 " is not 0 or 1", a, v);
    }
    return unary_infer(cx, U_ISINF);
}
static ingot_status is_inf_cpu(ig_exec *ex) { return unary_exec(ex, U_ISINF); }
const ig_op_def ig__op_is_inf = {.name = "IsInf",
                                 .since = 10,
                                 .min_in = 1,
                                 .max_in = 1,
                                 .min_out = 1,
                                 .max_out = 1,
                                 .infer = is_inf_infer,
                                 .cpu = is_inf_cpu};

static ingot_status gelu_cpu(ig_exec *ex) { return unary_exec(ex, U_GELU); }
const ig_op_def ig__op_gelu = {.name = "Gelu",
                               .since = 20,
                               .min_in = 1,
                               .max_in = 1,
                               .min_out = 1,
                               .max_out = 1,
                               .flags = IG_OP_INPLACE,
                               .infer = gelu_infer,
                               .cpu = gelu_cpu};

static ingot_status clip_cpu(ig_exec *ex) { return unary_exec(ex, U_CLIP); }
const ig_op_def ig__op_clip = {.name = "Clip",
                               .since = 1,
                               .min_in = 1,
                               .max_in = 3,
                               .min_out = 1,
                               .max_out = 1,
                               .flags = IG_OP_INPLACE,
                               .infer = clip_infer,
                               .cpu = clip_cpu};

static ingot_status is_nan_infer(ig_infer *cx) { return unary_infer(cx, U_ISNAN); }
static ingot_status is_nan_cpu(ig_exec *ex) { return unary_exec(ex, U_ISNAN); }
const ig_op_def ig__op_is_nan = {.name = "IsNaN",
                                 .since = 9,
                                 .min_in = 1,
                                 .max_in = 1,
                                 .min_out = 1,
                                 .max_out = 1,
                                 .infer = is_nan_infer,
                                 .cpu = is_nan_cpu};

static ingot_status not_cpu(ig_exec *ex) { return unary_exec(ex, U_NOT); }
const ig_op_def ig__op_not = {.name = "Not",
                              .since = 1,
                              .min_in = 1,
                              .max_in = 1,
                              .min_out = 1,
                              .max_out = 1,
                              .flags = IG_OP_INPLACE,
                              .infer = not_infer,
                              .cpu = not_cpu};

/* ---------------------------------------------------------------------------------------------- */
/* Identity and Dropout (inference: a copy, and an all-true mask)                                   */

typedef struct copy_job {
    const unsigned char *x;
    unsigned char *y;
} copy_job;

static void copy_range(void *arg, int64_t b, int64_t e)
{
    const copy_job *j = arg;
    memmove(j->y + b, j->x + b, (size_t)(e - b));
}

/* Copy t's bytes into out, unless the executor made them the same buffer (IG_OP_ALIAS). */
static void copy_tensor(ig_exec *ex, const ig_tensor *x, ig_tensor *y)
{
    size_t bytes = (size_t)x->numel * ingot_dtype_size(x->dtype);
    if (x->data == y->data || bytes == 0) return;
    copy_job j = {x->data, y->data};
    ig__parallel_for(ex->pool, (int64_t)bytes, GRAIN * 8, copy_range, &j);
}

static ingot_status identity_infer(ig_infer *cx)
{
    ingot_status st = same_shape_infer(cx, IG_TS_ALL, INGOT_DTYPE_UNDEFINED);
    if (st != INGOT_OK) return st;
    ig_value *x = ig__in(cx, 0);
    if (x->n_sym > 0) return ig__set_out_sym(cx, 0, x->sym, x->n_sym);
    return INGOT_OK;
}

static ingot_status identity_cpu(ig_exec *ex)
{
    if (!ex->in[0] || !ex->out[0])
        return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s': missing input or output", ig__node_label(ex->node));
    copy_tensor(ex, ex->in[0], ex->out[0]);
    return INGOT_OK;
}

const ig_op_def ig__op_identity = {.name = "Identity",
                                   .since = 1,
                                   .min_in = 1,
                                   .max_in = 1,
                                   .min_out = 1,
                                   .max_out = 1,
                                   .flags = IG_OP_ALIAS,
                                   .infer = identity_infer,
                                   .cpu = identity_cpu,
                                   .flops = ig__flops_none};

/* Dropout's mask dtype: the input's type in opsets 7..9 (and before), bool from opset 10. */
static ingot_dtype dropout_mask_dtype(const ig_node *n, ingot_dtype x)
{
    return opset_of(n) < 10 ? x : INGOT_DTYPE_BOOL;
}

static ingot_status dropout_infer(ig_infer *cx)
{
    ingot_status st = same_shape_infer(cx, IG_TS_FLOAT, INGOT_DTYPE_UNDEFINED);
    if (st != INGOT_OK) return st;
    ig_value *x = ig__in(cx, 0);
    if (opset_of(cx->node) >= 12) {
        ig_value *r = ig__in(cx, 1), *t = ig__in(cx, 2);
        if (r && (st = ig__check_dtype(cx, 1, IG_TS_FLOAT)) != INGOT_OK) return st;
        if (t && (st = ig__check_dtype(cx, 2, IG_T(BOOL))) != INGOT_OK) return st;
        double train = 0, ratio = 0.5;
        bool ratio_known = !r || ig__in_scalar_f64(cx, 1, &ratio);
        /* Training mode with a nonzero ratio drops at random: not an inference computation. When
         * training_mode is only known at run time, the kernel checks it. */
        if (t && ig__in_scalar_f64(cx, 2, &train) && train != 0 && !(ratio_known && ratio == 0))
            return ig__unsupported(cx, "training_mode=true (random dropout) is not supported; ingot runs "
                                       "inference only");
    }
    ig_value *m = ig__out(cx, 1);
    if (m) return ig__set_out(cx, 1, dropout_mask_dtype(cx->node, x->dtype), &x->shape);
    return INGOT_OK;
}

static ingot_status dropout_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    if (!x || !ex->out[0])
        return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s': missing input or output", ig__node_label(ex->node));
    if (opset_of(ex->node) >= 12 && ex->n_in > 2 && ex->in[2] && ex->in[2]->numel > 0 &&
        ((const uint8_t *)ex->in[2]->data)[0]) {
        double ratio = 0.5;
        if (ex->n_in > 1 && ex->in[1] && ex->in[1]->numel > 0)
            ratio = ig__elem_f64(ex->in[1]->dtype, ex->in[1]->data, 0);
        if (ratio != 0)
            return ig__errf(ex->err, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                            "node '%s' (Dropout): training_mode=true with ratio %g (random dropout) is not "
                            "supported; ingot runs inference only",
                            ig__node_label(ex->node), ratio);
    }
    copy_tensor(ex, x, ex->out[0]);
    ig_tensor *m = ex->n_out > 1 ? ex->out[1] : NULL;
    if (m) {
        if (m->dtype == INGOT_DTYPE_BOOL) {
            memset(m->data, 1, (size_t)m->numel);
        } else {
            for (int64_t i = 0; i < m->numel; i++) ig__elem_set_f64(m->dtype, m->data, i, 1.0);
        }
    }
    return INGOT_OK;
}

const ig_op_def ig__op_dropout = {.name = "Dropout",
                                  .since = 1,
                                  .min_in = 1,
                                  .max_in = 3,
                                  .min_out = 1,
                                  .max_out = 2,
                                  .flags = IG_OP_ALIAS,
                                  .infer = dropout_infer,
                                  .cpu = dropout_cpu,
                                  .flops = ig__flops_none};

/* ---------------------------------------------------------------------------------------------- */
/* Cast                                                                                             */

static bool cast_dtype_ok(int64_t t) { return ig__dtype_supported(t); }

/* TensorProto.DataType names, for the opset-1 string form of "to" and for messages. */
static const char *const onnx_type_names[] = {
    "UNDEFINED",  "FLOAT",        "UINT8",          "INT8",       "UINT16",         "INT16",  "INT32",     "INT64",
    "STRING",     "BOOL",         "FLOAT16",        "DOUBLE",     "UINT32",         "UINT64", "COMPLEX64", "COMPLEX128",
    "BFLOAT16",   "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",  "INT4",      "FLOAT4E2M1",
    "FLOAT8E8M0", "UINT2",        "INT2",           "FLOAT6E2M3", "FLOAT6E3M2",
};
#define N_ONNX_TYPES ((int64_t)(sizeof onnx_type_names / sizeof onnx_type_names[0]))

/* The "to" attribute: an int (opset 6+) or a type name (opset 1). -1 when absent or unknown. */
static int64_t cast_to(const ig_node *n)
{
    const ig_attr *a = ig__node_attr(n, "to");
    if (!a) return -1;
    if (a->type == IG_ATTR_INT) return a->i;
    if (a->type == IG_ATTR_STRING && a->s) {
        const char *s = a->s;
        if (!strncmp(s, "TensorProto.", 12)) s += 12;
        for (int64_t k = 0; k < N_ONNX_TYPES; k++)
            if (!strcmp(onnx_type_names[k], s)) return k;
        if (!strcmp(s, "FLOAT32")) return INGOT_DTYPE_FLOAT;
        if (!strcmp(s, "FLOAT64")) return INGOT_DTYPE_DOUBLE;
    }
    return -1;
}

static ingot_status cast_infer(ig_infer *cx)
{
    const ig_attr *a = ig__node_attr(cx->node, "to");
    if (!a) return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "required attribute 'to' is missing");
    int64_t to = cast_to(cx->node);
    if (to < 0 && a->type == IG_ATTR_STRING)
        return ig__unsupported(cx, "attribute to='%s' is not a known tensor type", a->s ? a->s : "");
    if (!cast_dtype_ok(to))
        return ig__unsupported(cx,
                               "attribute to=%" PRId64 " (%s) is not supported; ingot casts between float32, "
                               "float16, bfloat16, float64, int8/16/32/64, uint8/16/32/64 and bool",
                               to, to >= 0 && to < N_ONNX_TYPES ? onnx_type_names[to] : "unknown type");
    ingot_status st = same_shape_infer(cx, IG_TS_ALL, (ingot_dtype)to);
    if (st != INGOT_OK) return st;
    /* Shape vectors cast between integer types keep their (symbolic) values. */
    ig_value *x = ig__in(cx, 0);
    if (x->n_sym > 0 && (ig__dtype_is_int(x->dtype) || x->dtype == INGOT_DTYPE_BOOL) &&
        (to == INGOT_DTYPE_INT64 || to == INGOT_DTYPE_INT32)) {
        for (int32_t k = 0; k < x->n_sym; k++)
            if (ig__dim_known(x->sym[k]) && to == INGOT_DTYPE_INT32 &&
                (x->sym[k].n < INT32_MIN || x->sym[k].n > INT32_MAX))
                return INGOT_OK; /* wraps: not the same value any more */
        return ig__set_out_sym(cx, 0, x->sym, x->n_sym);
    }
    return INGOT_OK;
}

/* Stores of a chunk of computed values into the destination type: one case per type, each a plain
 * loop the compiler vectorises. */
#define STORE_CASE(DT, CT, EXPR)                           \
    case DT: {                                             \
        CT *d = (CT *)dst + off;                           \
        for (int64_t i = 0; i < n; i++) d[i] = (CT)(EXPR); \
        return;                                            \
    }
#define STORE_CASES(SRC, CONV_INT, CONV_U64, TO_F32, TO_HALF_SRC)                        \
    switch (t) {                                                                         \
        STORE_CASE(INGOT_DTYPE_FLOAT, float, TO_F32(SRC[i]))                             \
        STORE_CASE(INGOT_DTYPE_DOUBLE, double, SRC[i])                                   \
        STORE_CASE(INGOT_DTYPE_FLOAT16, uint16_t, ig__f32_to_f16(TO_HALF_SRC(SRC[i])))   \
        STORE_CASE(INGOT_DTYPE_BFLOAT16, uint16_t, ig__f32_to_bf16(TO_HALF_SRC(SRC[i]))) \
        STORE_CASE(INGOT_DTYPE_BOOL, uint8_t, SRC[i] != 0)                               \
        STORE_CASE(INGOT_DTYPE_INT8, int8_t, CONV_INT(SRC[i]))                           \
        STORE_CASE(INGOT_DTYPE_INT16, int16_t, CONV_INT(SRC[i]))                         \
        STORE_CASE(INGOT_DTYPE_INT32, int32_t, CONV_INT(SRC[i]))                         \
        STORE_CASE(INGOT_DTYPE_INT64, int64_t, CONV_INT(SRC[i]))                         \
        STORE_CASE(INGOT_DTYPE_UINT8, uint8_t, CONV_INT(SRC[i]))                         \
        STORE_CASE(INGOT_DTYPE_UINT16, uint16_t, CONV_INT(SRC[i]))                       \
        STORE_CASE(INGOT_DTYPE_UINT32, uint32_t, CONV_INT(SRC[i]))                       \
        STORE_CASE(INGOT_DTYPE_UINT64, uint64_t, CONV_U64(SRC[i]))                       \
    default: return;                                                                     \
    }

#define ID(v)          (v)
#define TO_F32_CAST(v) ((float)(v))
#define F2I(v)         ig__f2i64((double)(v))
#define F2U(v)         ig__f2u64((double)(v))
#define I2HALF(v)      ig__f64_to_f32_odd((double)(v))

static void store_from_f32(ingot_dtype t, const float *s, void *dst, int64_t off, int64_t n)
{
    STORE_CASES(s, F2I, F2U, ID, ID)
}
static void store_from_f64(ingot_dtype t, const double *s, void *dst, int64_t off, int64_t n)
{
    STORE_CASES(s, F2I, F2U, TO_F32_CAST, ig__f64_to_f32_odd)
}
/* Integers wrap to the target width (two's complement, as C compilers and numpy do). */
static void store_from_i64(ingot_dtype t, const int64_t *s, void *dst, int64_t off, int64_t n)
{
    STORE_CASES(s, (uint64_t), (uint64_t), TO_F32_CAST, I2HALF)
}
static void store_from_u64(ingot_dtype t, const uint64_t *s, void *dst, int64_t off, int64_t n)
{
    STORE_CASES(s, ID, ID, TO_F32_CAST, I2HALF)
}

typedef struct cast_job {
    ingot_dtype from, to;
    const void *x;
    void *y;
} cast_job;

static void cast_range(void *arg, int64_t b, int64_t e)
{
    const cast_job *j = arg;
    for (int64_t i = b; i < e; i += CHUNK) {
        int64_t m = e - i < CHUNK ? e - i : CHUNK;
        switch (j->from) {
        case INGOT_DTYPE_FLOAT: store_from_f32(j->to, (const float *)j->x + i, j->y, i, m); break;
        case INGOT_DTYPE_DOUBLE: store_from_f64(j->to, (const double *)j->x + i, j->y, i, m); break;
        case INGOT_DTYPE_UINT64: store_from_u64(j->to, (const uint64_t *)j->x + i, j->y, i, m); break;
        case INGOT_DTYPE_FLOAT16:
        case INGOT_DTYPE_BFLOAT16: {
            float buf[CHUNK];
            if (j->from == INGOT_DTYPE_FLOAT16)
                f16_load((const uint16_t *)j->x + i, buf, m);
            else
                bf16_load((const uint16_t *)j->x + i, buf, m);
            store_from_f32(j->to, buf, j->y, i, m);
            break;
        }
        default: { /* signed integers, small unsigned ones and bool, exactly as int64 */
            int64_t buf[CHUNK];
            const unsigned char *x = j->x;
            switch (j->from) {
            case INGOT_DTYPE_BOOL:
                for (int64_t k = 0; k < m; k++) buf[k] = x[i + k] != 0;
                break;
            case INGOT_DTYPE_INT8:
                for (int64_t k = 0; k < m; k++) buf[k] = ((const int8_t *)x)[i + k];
                break;
            case INGOT_DTYPE_UINT8:
                for (int64_t k = 0; k < m; k++) buf[k] = x[i + k];
                break;
            case INGOT_DTYPE_INT16:
                for (int64_t k = 0; k < m; k++) buf[k] = ((const int16_t *)x)[i + k];
                break;
            case INGOT_DTYPE_UINT16:
                for (int64_t k = 0; k < m; k++) buf[k] = ((const uint16_t *)x)[i + k];
                break;
            case INGOT_DTYPE_INT32:
                for (int64_t k = 0; k < m; k++) buf[k] = ((const int32_t *)x)[i + k];
                break;
            case INGOT_DTYPE_UINT32:
                for (int64_t k = 0; k < m; k++) buf[k] = ((const uint32_t *)x)[i + k];
                break;
            case INGOT_DTYPE_INT64:
                for (int64_t k = 0; k < m; k++) buf[k] = ((const int64_t *)x)[i + k];
                break;
            default: return;
            }
            store_from_i64(j->to, buf, j->y, i, m);
            break;
        }
        }
    }
}

static ingot_status cast_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    if (!x || !y)
        return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s': missing input or output", ig__node_label(ex->node));
    if (!cast_dtype_ok(x->dtype) || !cast_dtype_ok(y->dtype))
        return ig__errf(ex->err, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                        "node '%s' (Cast): cast from %s to %s is not "
                        "supported",
                        ig__node_label(ex->node), ingot_dtype_name(x->dtype), ingot_dtype_name(y->dtype));
    if (x->dtype == y->dtype) {
        copy_tensor(ex, x, y);
        return INGOT_OK;
    }
    cast_job j = {x->dtype, y->dtype, x->data, y->data};
    ig__parallel_for(ex->pool, x->numel, GRAIN, cast_range, &j);
    return INGOT_OK;
}

const ig_op_def ig__op_cast = {.name = "Cast",
                               .since = 1,
                               .min_in = 1,
                               .max_in = 1,
                               .min_out = 1,
                               .max_out = 1,
                               .infer = cast_infer,
                               .cpu = cast_cpu,
                               .flops = ig__flops_none};

/* CastLike: Cast to the dtype of input 1 (whose values are not read). The saturate attribute (opset 19)
 * only concerns float8 targets, which ingot does not have. */
static ingot_status cast_like_infer(ig_infer *cx)
{
    ig_value *t = ig__in(cx, 1);
    if (!t) return ig__fail_shape(cx, "input 1 (target_type) is missing");
    if (!cast_dtype_ok(t->dtype))
        return ig__unsupported(cx, "target type %s of input 1 '%s' is not supported", ingot_dtype_name(t->dtype),
                               t->name);
    ingot_status st = same_shape_infer(cx, IG_TS_ALL, t->dtype);
    if (st != INGOT_OK) return st;
    ig_value *x = ig__in(cx, 0);
    if (x->n_sym > 0 && (ig__dtype_is_int(x->dtype) || x->dtype == INGOT_DTYPE_BOOL) && t->dtype == INGOT_DTYPE_INT64)
        return ig__set_out_sym(cx, 0, x->sym, x->n_sym);
    return INGOT_OK;
}

const ig_op_def ig__op_cast_like = {.name = "CastLike",
                                    .since = 15,
                                    .min_in = 2,
                                    .max_in = 2,
                                    .min_out = 1,
                                    .max_out = 1,
                                    .infer = cast_like_infer,
                                    .cpu = cast_cpu,
                                    .flops = ig__flops_none};
