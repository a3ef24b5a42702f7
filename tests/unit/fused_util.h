/*
 * fused_util.h -- what the tests of pointwise programs (test_ops_pw.c) and of the ingot-domain ops
 * (test_ops_fused.c) share: random data, ingot-domain nodes run through their descriptors, program
 * attributes, tolerant comparison, and the meaning of every program code in double.
 */
#ifndef INGOT_TEST_FUSED_UTIL_H
#define INGOT_TEST_FUSED_UTIL_H

#include "graph_builder.h"
#include "ops/pw.h"
#include "test.h"

#include <float.h>
#include <math.h>

/* ---------------------------------------------------------------------------------------------- */
/* helpers                                                                                         */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double urand(void) /* [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 4503599627370496.0 - 1.0;
}

static float *rand_f32(int64_t n, double scale)
{
    float *p = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) p[i] = (float)(urand() * scale);
    return p;
}

/* float data rounded to fp16 (returned as both the fp16 bits and their fp32 values) */
static uint16_t *to_f16(const float *x, int64_t n, float *rounded)
{
    uint16_t *h = malloc(sizeof(uint16_t) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        h[i] = ig__f32_to_f16(x[i]);
        if (rounded) rounded[i] = ig__f16_to_f32(h[i]);
    }
    return h;
}

static int64_t numel_of(int rank, const int64_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= d[i];
    return n;
}

/* A node of the ingot domain (graph_builder's t_node makes default-domain nodes). */
static ig_node *f_node(T *t, const char *op, const char *ins, const char *outs)
{
    ig_node *n = t_node(t, op, 1, ins, outs);
    n->domain = "ingot";
    return n;
}

/* Resolve n->op as the inference driver does (ig__pw_node_ok and the translation read it). */
static void set_op(ig_node *n)
{
    const ig_op_def *d = ig__op_find(n->domain, n->op_type, n->opset, NULL);
    n->op = -1;
    for (int i = 0; i < IG_OP_COUNT; i++)
        if (ig__op_table[i] == d) n->op = i;
}

/* Program attributes of a Pointwise node (ops/params from a program in memory). */
static void a_prog(T *t, ig_node *n, const char *prefix, const ig_pw_prog *p)
{
    int64_t ints[4 * IG_PW_MAX_OPS + 4];
    float fl[2 * IG_PW_MAX_OPS + 2];
    for (int j = 0; j < p->n_ops; j++) {
        ints[4 * j] = p->op[j].code;
        ints[4 * j + 1] = p->op[j].a;
        ints[4 * j + 2] = p->op[j].b;
        ints[4 * j + 3] = p->op[j].c;
        fl[2 * j] = p->op[j].k;
        fl[2 * j + 1] = p->op[j].k2;
    }
    char *on = ig__arena_printf(&t->g.arena, "%sops", prefix), *pn = ig__arena_printf(&t->g.arena, "%sparams", prefix);
    a_ints(t, n, on, 4 * p->n_ops, ints);
    a_floats(t, n, pn, 2 * p->n_ops, fl);
}

/* |got - want| within atol + rtol * |want|, NaN matching NaN, infinities equal. */
static bool close_to(double got, double want, double rtol, double atol)
{
    if (want != want) return got != got;
    if (isinf(want)) return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

static double elem(const ig_tensor *t, int64_t i) { return ig__elem_f64(t->dtype, t->data, i); }

/* ---------------------------------------------------------------------------------------------- */
/* every code through Pointwise                                                                    */

static double py_mod(double x, double y)
{
    double m = fmod(x, y);
    if (y == 0 || m != m) return m;
    if (m != 0) {
        if ((y < 0) != (m < 0)) m += y;
    } else {
        m = copysign(0.0, y);
    }
    return m;
}

static double softplus_d(double a) { return (a > 0 ? a : 0) + log1p(exp(-fabs(a))); }

/* The meaning of each code, in double, from the definitions of the ONNX ops (pw.h). */
static double ref_code(int code, double a, double b, double c, double k, double k2)
{
    switch (code) {
    case IG_PW_COPY: return a;
    case IG_PW_NEG: return -a;
    case IG_PW_ABS: return fabs(a);
    case IG_PW_RECIP: return 1.0 / a;
    case IG_PW_SQRT: return sqrt(a);
    case IG_PW_EXP: return exp(a);
    case IG_PW_LOG: return log(a);
    case IG_PW_ERF: return erf(a);
    case IG_PW_TANH: return tanh(a);
    case IG_PW_SIGMOID: return 1.0 / (1.0 + exp(-a));
    case IG_PW_RELU: return a < 0 ? 0 : a;
    case IG_PW_LEAKY: return a < 0 ? k * a : a;
    case IG_PW_CLIP: {
        double v = a < k ? k : a;
        return v > k2 ? k2 : v;
    }
    case IG_PW_HARDSIGMOID: {
        double v = k * a + k2;
        v = v < 0 ? 0 : v;
        return v > 1 ? 1 : v;
    }
    case IG_PW_HARDSWISH: {
        double v = a / 6 + 0.5;
        v = v < 0 ? 0 : v > 1 ? 1 : v;
        return a * v;
    }
    case IG_PW_GELU_ERF: return 0.5 * a * (1 + erf(a / sqrt(2.0)));
    case IG_PW_GELU_TANH: return 0.5 * a * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (a + 0.044715 * a * a * a)));
    case IG_PW_SOFTPLUS: return softplus_d(a);
    case IG_PW_MISH: return a * tanh(softplus_d(a));
    case IG_PW_ISNAN: return a != a;
    case IG_PW_NOT: return a == 0;
    case IG_PW_FLOOR: return floor(a);
    case IG_PW_CEIL: return ceil(a);
    case IG_PW_ROUND: return nearbyint(a);
    case IG_PW_TO_F16: return ig__f16_to_f32(ig__f32_to_f16((float)a));
    case IG_PW_TO_BF16: return ig__bf16_to_f32(ig__f32_to_bf16((float)a));
    case IG_PW_TO_INT:
        if (a != a) return 0;
        if (a >= 9223372036854775808.0) return 9223372036854775808.0;
        if (a <= -9223372036854775808.0) return -9223372036854775808.0;
        return trunc(a);
    case IG_PW_TO_BOOL: return a != 0;
    case IG_PW_ADD: return a + b;
    case IG_PW_SUB: return a - b;
    case IG_PW_MUL: return a * b;
    case IG_PW_DIV: return a / b;
    case IG_PW_POW: return pow(a, b);
    case IG_PW_MOD: return py_mod(a, b);
    case IG_PW_FMOD: return fmod(a, b);
    case IG_PW_MAX: return (a > b || a != a) ? a : b;
    case IG_PW_MIN: return (a < b || a != a) ? a : b;
    case IG_PW_PRELU: return a < 0 ? a * b : a;
    case IG_PW_EQ: return a == b;
    case IG_PW_GT: return a > b;
    case IG_PW_LT: return a < b;
    case IG_PW_GE: return a >= b;
    case IG_PW_LE: return a <= b;
    case IG_PW_AND: return a != 0 && b != 0;
    case IG_PW_OR: return a != 0 || b != 0;
    case IG_PW_WHERE: return a != 0 ? b : c;
    case IG_PW_MULADD: return a * b + c;
    case IG_PW_SIN: return sin(a);
    case IG_PW_COS: return cos(a);
    case IG_PW_TAN: return tan(a);
    case IG_PW_ASIN: return asin(a);
    case IG_PW_ACOS: return acos(a);
    case IG_PW_ATAN: return atan(a);
    case IG_PW_SINH: return sinh(a);
    case IG_PW_COSH: return cosh(a);
    case IG_PW_ASINH: return asinh(a);
    case IG_PW_ACOSH: return acosh(a);
    case IG_PW_ATANH: return atanh(a);
    case IG_PW_SIGN: return a > 0 ? 1 : a < 0 ? -1 : a;
    case IG_PW_ELU: return a < 0 ? k * (exp(a) - 1) : a;
    case IG_PW_SELU: return a <= 0 ? k2 * (k * exp(a) - k) : k2 * a;
    case IG_PW_CELU: return (a > 0 ? a : 0) + (a < 0 ? k * (exp(a / k) - 1) : a != a ? a : 0);
    case IG_PW_SOFTSIGN: return a / (1 + fabs(a));
    case IG_PW_THRELU: return a > k ? a : 0;
    case IG_PW_SHRINK: return a < -k2 ? a + k : a > k2 ? a - k : 0;
    case IG_PW_ISINF: return (k != 0 && a == INFINITY) || (k2 != 0 && a == -INFINITY);
    default: return NAN;
    }
}

#endif
