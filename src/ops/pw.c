/*
 * pw.c -- pointwise programs (pw.h): building and validating them, their attributes, the translation
 * of ONNX elementwise nodes into instructions, register allocation for the CUDA kernel, printing, and
 * the CPU interpreter.
 *
 * The interpreter walks the output in runs of the innermost dim (after merging dims that every input
 * keeps contiguous or broadcast, as binary.c does): each input's run is gathered into a small fp32 (or
 * int64) array, the program runs instruction by instruction over whole arrays (one switch per
 * instruction per run, loops the compiler vectorises), and the result array is stored in the output's
 * dtype. Every run reads all its inputs before it stores, so the output may share an input's bytes
 * when that input has the output's shape. The math of each code is the formula of the CPU kernel of
 * the ONNX op it comes from (unary.c, binary.c: ops_internal.h holds the shared fp32 approximations),
 * so a fused chain agrees with the unfused nodes up to the roundings the fusion removes.
 */
#include "pw.h"
#include "ops_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#define RUN   128                /* elements per interpreted run (arrays on the stack) */
#define GRAIN ((int64_t)1 << 14) /* output elements per thread at least */
#define NVAL  (IG_PW_MAX_IN + IG_PW_MAX_OPS)

/* ---------------------------------------------------------------------------------------------- */
/* building and checking                                                                           */

void ig__pw_init(ig_pw_prog *p, int32_t n_in, bool int_math)
{
    memset(p, 0, sizeof *p);
    p->n_in = n_in;
    p->int_math = int_math;
}

int16_t ig__pw_emit(ig_pw_prog *p, int code, int16_t a, int16_t b, int16_t c, float k, float k2)
{
    if (p->n_ops >= IG_PW_MAX_OPS) return -1;
    p->op[p->n_ops] = (ig_pw_inst){(uint8_t)code, a, b, c, k, k2};
    return (int16_t)(p->n_in + p->n_ops++);
}

int16_t ig__pw_result(const ig_pw_prog *p) { return (int16_t)(p->n_ops > 0 ? p->n_in + p->n_ops - 1 : 0); }

bool ig__pw_code_int_ok(int code)
{
    switch (code) {
    case IG_PW_COPY:
    case IG_PW_NEG:
    case IG_PW_ABS:
    case IG_PW_RELU:
    case IG_PW_CLIP:
    case IG_PW_NOT:
    case IG_PW_FLOOR:
    case IG_PW_CEIL:
    case IG_PW_ROUND:
    case IG_PW_TO_INT:
    case IG_PW_TO_BOOL:
    case IG_PW_ADD:
    case IG_PW_SUB:
    case IG_PW_MUL:
    case IG_PW_DIV:
    case IG_PW_POW:
    case IG_PW_MOD:
    case IG_PW_FMOD:
    case IG_PW_MAX:
    case IG_PW_MIN:
    case IG_PW_PRELU:
    case IG_PW_EQ:
    case IG_PW_GT:
    case IG_PW_LT:
    case IG_PW_GE:
    case IG_PW_LE:
    case IG_PW_AND:
    case IG_PW_OR:
    case IG_PW_WHERE:
    case IG_PW_MULADD:
    case IG_PW_SIGN: return true;
    default: return false;
    }
}

ingot_status ig__pw_check(const ig_pw_prog *p, const char *what, ig_err *err)
{
    if (p->n_in < 1 || p->n_in > IG_PW_MAX_IN)
        return ig__errf(err, INGOT_ERR_MODEL_INVALID, "%s: a program has 1 to %d inputs, this one has %d", what,
                        IG_PW_MAX_IN, (int)p->n_in);
    if (p->n_ops < 0 || p->n_ops > IG_PW_MAX_OPS)
        return ig__errf(err, INGOT_ERR_MODEL_INVALID, "%s: %d instructions, at most %d are allowed", what,
                        (int)p->n_ops, IG_PW_MAX_OPS);
    for (int32_t j = 0; j < p->n_ops; j++) {
        const ig_pw_inst *o = &p->op[j];
        if (o->code <= IG_PW_LOAD || o->code >= IG_PW_CODE_COUNT)
            return ig__errf(err, INGOT_ERR_MODEL_INVALID,
                            "%s: instruction %d has code %d, which is not an instruction (1 to %d; LOAD is "
                            "implicit: operands name inputs)",
                            what, (int)j, (int)o->code, IG_PW_CODE_COUNT - 1);
        if (p->int_math && !ig__pw_code_int_ok(o->code))
            return ig__errf(err, INGOT_ERR_MODEL_INVALID,
                            "%s: instruction %d (%s) does not compute on integers; an int_math program cannot hold it",
                            what, (int)j, ig__pw_code_name(o->code));
        int ar = ig__pw_arity(o->code);
        const int16_t r[3] = {o->a, o->b, o->c};
        for (int s = 0; s < 3; s++) {
            bool ok = s < ar ? r[s] == IG_PW_K || (r[s] >= 0 && r[s] < p->n_in + j) : r[s] == IG_PW_NONE;
            if (ok) continue;
            if (s >= ar)
                return ig__errf(err, INGOT_ERR_MODEL_INVALID,
                                "%s: instruction %d (%s) takes %d operand%s, but operand %d is %d (must be -1)", what,
                                (int)j, ig__pw_code_name(o->code), ar, ar == 1 ? "" : "s", s, (int)r[s]);
            return ig__errf(err, INGOT_ERR_MODEL_INVALID,
                            "%s: instruction %d (%s): operand %d is %d, which is neither an input (0 to %d), an "
                            "earlier instruction (%d to %d) nor the constant (-2)",
                            what, (int)j, ig__pw_code_name(o->code), s, (int)r[s], (int)p->n_in - 1, (int)p->n_in,
                            (int)(p->n_in + j - 1));
        }
    }
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* attributes                                                                                      */

ingot_status ig__pw_decode(const ig_graph *g, const ig_node *n, const char *prefix, int32_t n_in, ig_pw_prog *p,
                           ig_err *err)
{
    (void)g;
    char what[256], ops_name[64], params_name[64];
    snprintf(ops_name, sizeof ops_name, "%sops", prefix);
    snprintf(params_name, sizeof params_name, "%sparams", prefix);
    snprintf(what, sizeof what, "node '%s' (%s): attribute '%s'", ig__node_label(n), n->op_type, ops_name);
    const ig_attr *ops = ig__node_attr(n, ops_name), *params = ig__node_attr(n, params_name);
    const ig_attr *im = ig__node_attr(n, "int_math");
    if (im && (im->type != IG_ATTR_INT || (im->i != 0 && im->i != 1)))
        return ig__errf(err, INGOT_ERR_MODEL_INVALID, "node '%s' (%s): attribute 'int_math' must be the integer 0 or 1",
                        ig__node_label(n), n->op_type);
    ig__pw_init(p, n_in, im && im->i == 1);
    if (ops && ops->type != IG_ATTR_INTS)
        return ig__errf(err, INGOT_ERR_MODEL_INVALID, "%s must be a list of integers", what);
    if (params && params->type != IG_ATTR_FLOATS)
        return ig__errf(err, INGOT_ERR_MODEL_INVALID, "node '%s' (%s): attribute '%s' must be a list of floats",
                        ig__node_label(n), n->op_type, params_name);
    int64_t n_ints = ops ? ops->n : 0, n_floats = params ? params->n : 0;
    if (n_ints < 0 || n_ints % 4 != 0)
        return ig__errf(err, INGOT_ERR_MODEL_INVALID, "%s has %" PRId64 " values, not 4 (code a b c) per instruction",
                        what, n_ints);
    if (n_ints / 4 > IG_PW_MAX_OPS)
        return ig__errf(err, INGOT_ERR_MODEL_INVALID, "%s holds %" PRId64 " instructions, at most %d are allowed", what,
                        n_ints / 4, IG_PW_MAX_OPS);
    if (n_floats != n_ints / 2)
        return ig__errf(err, INGOT_ERR_MODEL_INVALID,
                        "node '%s' (%s): attribute '%s' has %" PRId64 " values for %" PRId64
                        " instructions (2, k and k2, per instruction)",
                        ig__node_label(n), n->op_type, params_name, n_floats, n_ints / 4);
    if ((n_ints && !ops->ints) || (n_floats && !params->floats))
        return ig__errf(err, INGOT_ERR_MODEL_INVALID, "%s: values missing", what);
    for (int64_t j = 0; j < n_ints / 4; j++) {
        const int64_t *v = ops->ints + 4 * j;
        if (v[0] < 0 || v[0] > 255)
            return ig__errf(err, INGOT_ERR_MODEL_INVALID,
                            "%s: instruction %" PRId64 " has code %" PRId64 ", outside 1 to %d", what, j, v[0],
                            IG_PW_CODE_COUNT - 1);
        for (int s = 1; s < 4; s++)
            if (v[s] < -2 || v[s] > INT16_MAX)
                return ig__errf(err, INGOT_ERR_MODEL_INVALID,
                                "%s: instruction %" PRId64 ": operand %d is %" PRId64 ", out of range", what, j, s - 1,
                                v[s]);
        p->op[j] = (ig_pw_inst){(uint8_t)v[0], (int16_t)v[1],         (int16_t)v[2],
                                (int16_t)v[3], params->floats[2 * j], params->floats[2 * j + 1]};
    }
    p->n_ops = (int32_t)(n_ints / 4);
    return ig__pw_check(p, what, err);
}

ingot_status ig__pw_encode(ig_graph *g, ig_node *n, int32_t slot, const char *prefix, const ig_pw_prog *p, ig_err *err)
{
    int64_t ints[4 * IG_PW_MAX_OPS + 1];
    float floats[2 * IG_PW_MAX_OPS + 1];
    char ops_name[64], params_name[64];
    if (p->n_ops < 0 || p->n_ops > IG_PW_MAX_OPS)
        return ig__errf(err, INGOT_ERR_INTERNAL, "node '%s': program of %d instructions", ig__node_label(n),
                        (int)p->n_ops);
    for (int32_t j = 0; j < p->n_ops; j++) {
        const ig_pw_inst *o = &p->op[j];
        ints[4 * j] = o->code;
        ints[4 * j + 1] = o->a;
        ints[4 * j + 2] = o->b;
        ints[4 * j + 3] = o->c;
        floats[2 * j] = o->k;
        floats[2 * j + 1] = o->k2;
    }
    snprintf(ops_name, sizeof ops_name, "%sops", prefix);
    snprintf(params_name, sizeof params_name, "%sparams", prefix);
    ingot_status st = ig__node_set_ints(g, n, slot, ops_name, ints, 4 * p->n_ops, err);
    if (st != INGOT_OK) return st;
    return ig__node_set_floats(g, n, slot + 1, params_name, floats, 2 * p->n_ops, err);
}

/* ---------------------------------------------------------------------------------------------- */
/* printing                                                                                        */

static const char *const code_names[] = {
#define IG_PW_X_(name, arity) #name,
    IG_PW_CODES(IG_PW_X_)
#undef IG_PW_X_
};

const char *ig__pw_code_name(int code) { return code >= 0 && code < IG_PW_CODE_COUNT ? code_names[code] : "?"; }

typedef struct sbuf {
    char *p;
    size_t cap;
    int len;
} sbuf;

static void sb_printf(sbuf *s, const char *fmt, ...) IG_PRINTF(2, 3);
static void sb_printf(sbuf *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t at = (size_t)s->len < s->cap ? (size_t)s->len : s->cap;
    int w = vsnprintf(s->p ? s->p + at : NULL, s->p ? s->cap - at : 0, fmt, ap);
    va_end(ap);
    if (w > 0) s->len += w;
}

static void sb_ref(sbuf *s, const ig_pw_prog *p, const ig_pw_inst *o, int16_t r)
{
    if (r == IG_PW_K)
        sb_printf(s, "%g", (double)o->k);
    else if (r < p->n_in)
        sb_printf(s, "x%d", (int)r);
    else
        sb_printf(s, "t%d", (int)(r - p->n_in));
}

int ig__pw_format(const ig_pw_prog *p, char *buf, size_t n)
{
    sbuf s = {buf, n, 0};
    if (buf && n) buf[0] = 0;
    if (p->int_math) sb_printf(&s, "[int] ");
    for (int32_t i = 0; i < p->n_in; i++) sb_printf(&s, "%sx%d", i ? "," : "", (int)i);
    sb_printf(&s, " ->");
    if (p->n_ops == 0) sb_printf(&s, " x0");
    for (int32_t j = 0; j < p->n_ops; j++) {
        const ig_pw_inst *o = &p->op[j];
        int ar = ig__pw_arity(o->code);
        sb_printf(&s, " t%d=%s(", (int)j, ig__pw_code_name(o->code));
        const int16_t r[3] = {o->a, o->b, o->c};
        for (int k = 0; k < ar && k < 3; k++) {
            if (k) sb_printf(&s, ",");
            sb_ref(&s, p, o, r[k]);
        }
        if (o->code == IG_PW_LEAKY || o->code == IG_PW_ELU || o->code == IG_PW_CELU || o->code == IG_PW_THRELU)
            sb_printf(&s, ";%g", (double)o->k);
        if (o->code == IG_PW_CLIP || o->code == IG_PW_HARDSIGMOID || o->code == IG_PW_SELU || o->code == IG_PW_SHRINK ||
            o->code == IG_PW_ISINF)
            sb_printf(&s, ";%g,%g", (double)o->k, (double)o->k2);
        sb_printf(&s, ")");
    }
    return s.len;
}

/* ---------------------------------------------------------------------------------------------- */
/* register allocation                                                                             */

int ig__pw_to_regs(const ig_pw_prog *p, ig_pw_reg_op *ops, int max_ops, int *result_reg)
{
    const int nv = p->n_in + p->n_ops, res = ig__pw_result(p);
    if (p->n_in < 1 || p->n_in > IG_PW_MAX_IN || p->n_ops < 0 || p->n_ops > IG_PW_MAX_OPS) return -1;
    bool needed[NVAL] = {false};
    int last[NVAL], reg[NVAL];
    for (int v = 0; v < nv; v++) last[v] = -1, reg[v] = -1;
    /* backward: which instructions the result depends on */
    needed[res] = true;
    for (int j = p->n_ops - 1; j >= 0; j--) {
        const ig_pw_inst *o = &p->op[j];
        if (!needed[p->n_in + j]) continue;
        const int16_t r[3] = {o->a, o->b, o->c};
        for (int s = 0; s < 3; s++)
            if (r[s] >= 0 && r[s] < nv) needed[r[s]] = true;
    }
    for (int j = 0; j < p->n_ops; j++) {
        const ig_pw_inst *o = &p->op[j];
        if (!needed[p->n_in + j]) continue;
        const int16_t r[3] = {o->a, o->b, o->c};
        for (int s = 0; s < 3; s++)
            if (r[s] >= 0 && r[s] < nv) last[r[s]] = j;
    }
    last[res] = p->n_ops; /* the result lives to the end */
    bool busy[IG_PW_NREG] = {false};
    int n = 0;
#define ALLOC(dst)                                           \
    do {                                                     \
        (dst) = -1;                                          \
        for (int q_ = 0; q_ < IG_PW_NREG && (dst) < 0; q_++) \
            if (!busy[q_]) (dst) = q_;                       \
        if ((dst) < 0) return -1;                            \
        busy[dst] = true;                                    \
    } while (0)
#define PUT(op_)                     \
    do {                             \
        if (n >= max_ops) return -1; \
        ops[n++] = (op_);            \
    } while (0)
    if (p->n_ops == 0) {
        int d;
        ALLOC(d);
        PUT(((ig_pw_reg_op){IG_PW_LOAD, 0, IG_PW_REF_NONE, IG_PW_REF_NONE, (uint8_t)d, 0, 0}));
        *result_reg = d;
        return n;
    }
    for (int j = 0; j < p->n_ops; j++) {
        const ig_pw_inst *o = &p->op[j];
        if (!needed[p->n_in + j]) continue;
        const int16_t r[3] = {o->a, o->b, o->c};
        uint8_t ref[3];
        for (int s = 0; s < 3; s++) {
            if (r[s] >= 0 && r[s] < p->n_in && reg[r[s]] < 0) { /* first use of an input: load it */
                int d;
                ALLOC(d);
                reg[r[s]] = d;
                PUT(((ig_pw_reg_op){IG_PW_LOAD, (uint8_t)r[s], IG_PW_REF_NONE, IG_PW_REF_NONE, (uint8_t)d, 0, 0}));
            }
            ref[s] = r[s] >= 0 && r[s] < nv ? (uint8_t)reg[r[s]] : r[s] == IG_PW_K ? IG_PW_REF_K : IG_PW_REF_NONE;
        }
        for (int s = 0; s < 3; s++) /* operands at their last use: free before the destination is chosen */
            if (r[s] >= 0 && r[s] < nv && last[r[s]] == j && reg[r[s]] >= 0) busy[reg[r[s]]] = false;
        int d;
        ALLOC(d);
        reg[p->n_in + j] = d;
        PUT(((ig_pw_reg_op){o->code, ref[0], ref[1], ref[2], (uint8_t)d, o->k, o->k2}));
    }
#undef ALLOC
#undef PUT
    *result_reg = reg[res];
    return n;
}

bool ig__pw_regs_ok(const ig_pw_prog *p)
{
    ig_pw_reg_op ops[IG_PW_MAX_OPS + IG_PW_MAX_IN];
    int r;
    return ig__pw_to_regs(p, ops, IG_PW_MAX_OPS + IG_PW_MAX_IN, &r) >= 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* translating ONNX elementwise nodes                                                              */

bool ig__pw_scalar_const(const ig_graph *g, int32_t v, double *k)
{
    if (v < 0 || v >= g->n_values) return false;
    const ig_value *x = &g->values[v];
    if (!(x->flags & IG_VAL_CONST) || !ig__dtype_supported(x->c.dtype)) return false;
    size_t es = ingot_dtype_size(x->c.dtype);
    if (!es || x->c.n_bytes != es || !x->c.data) return false;
    double d = ig__elem_f64(x->c.dtype, x->c.data, 0);
    if (ig__dtype_is_int(x->c.dtype) && fabs(d) > 9007199254740992.0) return false; /* 2^53: may be rounded */
    if (d == d && (double)(float)d != d) return false;
    *k = d;
    return true;
}

static bool type_ok(ingot_dtype t, bool int_math)
{
    if (int_math) return t == INGOT_DTYPE_BOOL || (ig__dtype_is_int(t) && t != INGOT_DTYPE_UINT64);
    return t == INGOT_DTYPE_FLOAT || t == INGOT_DTYPE_FLOAT16 || t == INGOT_DTYPE_BFLOAT16 || t == INGOT_DTYPE_BOOL;
}

/* The range of an integer (or bool) type, for widening casts. */
static void int_range(ingot_dtype t, double *lo, double *hi)
{
    switch (t) {
    case INGOT_DTYPE_BOOL: *lo = 0, *hi = 1; return;
    case INGOT_DTYPE_INT8: *lo = INT8_MIN, *hi = INT8_MAX; return;
    case INGOT_DTYPE_UINT8: *lo = 0, *hi = UINT8_MAX; return;
    case INGOT_DTYPE_INT16: *lo = INT16_MIN, *hi = INT16_MAX; return;
    case INGOT_DTYPE_UINT16: *lo = 0, *hi = UINT16_MAX; return;
    case INGOT_DTYPE_INT32: *lo = INT32_MIN, *hi = INT32_MAX; return;
    case INGOT_DTYPE_UINT32: *lo = 0, *hi = UINT32_MAX; return;
    case INGOT_DTYPE_UINT64: *lo = 0, *hi = 18446744073709551615.0; return;
    default: *lo = -9223372036854775808.0, *hi = 9223372036854775807.0; return;
    }
}

static int binary_code(const ig_node *n);

/* Ops a program can hold at all, and the ones that compute on integers in int64 programs. */
static bool op_translatable(int32_t op, bool int_math)
{
    switch (op) {
    case IG_OP_neg:
    case IG_OP_abs:
    case IG_OP_relu:
    case IG_OP_clip:
    case IG_OP_not:
    case IG_OP_cast:
    case IG_OP_identity:
    case IG_OP_sum:
    case IG_OP_add:
    case IG_OP_sub:
    case IG_OP_mul:
    case IG_OP_div:
    case IG_OP_mod:
    case IG_OP_max:
    case IG_OP_min:
    case IG_OP_equal:
    case IG_OP_greater:
    case IG_OP_less:
    case IG_OP_greater_or_equal:
    case IG_OP_less_or_equal:
    case IG_OP_and:
    case IG_OP_or:
    case IG_OP_where:
    case IG_OP_sign: return true;
    case IG_OP_sin:
    case IG_OP_cos:
    case IG_OP_tan:
    case IG_OP_asin:
    case IG_OP_acos:
    case IG_OP_atan:
    case IG_OP_sinh:
    case IG_OP_cosh:
    case IG_OP_asinh:
    case IG_OP_acosh:
    case IG_OP_atanh:
    case IG_OP_floor:
    case IG_OP_ceil:
    case IG_OP_round:
    case IG_OP_elu:
    case IG_OP_selu:
    case IG_OP_celu:
    case IG_OP_softsign:
    case IG_OP_thresholded_relu:
    case IG_OP_shrink:
    case IG_OP_is_inf:
    case IG_OP_sqrt:
    case IG_OP_erf:
    case IG_OP_exp:
    case IG_OP_log:
    case IG_OP_reciprocal:
    case IG_OP_tanh:
    case IG_OP_sigmoid:
    case IG_OP_leaky_relu:
    case IG_OP_hard_sigmoid:
    case IG_OP_hard_swish:
    case IG_OP_gelu:
    case IG_OP_softplus:
    case IG_OP_mish:
    case IG_OP_is_nan: return !int_math;
    case IG_OP_pow: /* integer powers and slopes wrap like repeated multiplication: exact in int64 */
    case IG_OP_prelu: return true;
    default: return false;
    }
}

/* Attributes and operands a translation needs: legal attribute values, no legacy (pre-opset-7)
 * broadcasting. Dtypes are not looked at. */
static bool node_translatable(const ig_graph *g, const ig_node *n, bool int_math)
{
    if (!n || n->dead || n->op < 0 || n->op >= IG_OP_COUNT) return false;
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx")) return false;
    if (!op_translatable(n->op, int_math)) return false;
    if (n->n_outputs < 1 || n->outputs[0] < 0) return false;
    for (int32_t i = 1; i < n->n_outputs; i++)
        if (n->outputs[i] >= 0) return false;
    int32_t n_data; /* inputs that are data (Clip's bounds are parameters) */
    switch (n->op) {
    case IG_OP_where: n_data = 3; break;
    case IG_OP_max:
    case IG_OP_min:
    case IG_OP_sum: n_data = n->n_inputs; break;
    default: n_data = binary_code(n) >= 0 ? 2 : 1;
    }
    if (n_data < 1 || n->n_inputs < n_data || (n_data > 1 && n->n_inputs != n_data)) return false;
    for (int32_t i = 0; i < n_data; i++)
        if (n->inputs[i] < 0 || n->inputs[i] >= g->n_values) return false;
    /* before opset 7, binary ops broadcast their own way (axis, per-channel PRelu slopes) */
    if (n->opset > 0 && n->opset < 7 && n_data == 2 && (ig__node_attr(n, "axis") || n->op == IG_OP_prelu)) return false;
    switch (n->op) {
    case IG_OP_gelu: {
        const char *a = ig__attr_str(n, "approximate", "none");
        return !strcmp(a, "none") || !strcmp(a, "tanh");
    }
    case IG_OP_mod: {
        int64_t f = ig__attr_int(n, "fmod", 0);
        return f == 0 || f == 1;
    }
    case IG_OP_cast: {
        const ig_attr *a = ig__node_attr(n, "to");
        return a && a->type == IG_ATTR_INT && ig__dtype_supported(a->i);
    }
    case IG_OP_clip: return n->n_inputs <= 3;
    case IG_OP_celu: return ig__attr_float(n, "alpha", 1.0f) != 0.0f;
    case IG_OP_is_inf: {
        int64_t p = ig__attr_int(n, "detect_positive", 1), q = ig__attr_int(n, "detect_negative", 1);
        return (p == 0 || p == 1) && (q == 0 || q == 1);
    }
    default: return true;
    }
}

/* Clip's bounds are constants (absent before opset 11): one CLIP, no bound inputs to carry. */
static bool clip_bounds_const(const ig_graph *g, const ig_node *n)
{
    if (n->opset > 0 && n->opset < 11) return true;
    double k;
    for (int32_t i = 1; i < 3 && i < n->n_inputs; i++)
        if (n->inputs[i] >= 0 && !ig__pw_scalar_const(g, n->inputs[i], &k)) return false;
    return true;
}

bool ig__pw_node_ok(const ig_graph *g, const ig_node *n, bool int_math)
{
    if (!node_translatable(g, n, int_math)) return false;
    if (n->op == IG_OP_clip && !clip_bounds_const(g, n)) return false;
    ingot_dtype out = g->values[n->outputs[0]].dtype;
    /* An int64 program may end in a Cast of an integer or bool to a float type (a mask's Equal -> Not ->
     * Cast): the value is exact in int64 and the store converts it as Cast does. No instruction of an
     * int64 program can read the float it makes, so the Cast is always the last one. */
    if (int_math && n->op == IG_OP_cast &&
        (out == INGOT_DTYPE_FLOAT || out == INGOT_DTYPE_FLOAT16 || out == INGOT_DTYPE_BFLOAT16))
        return n->inputs[0] >= 0 && type_ok(g->values[n->inputs[0]].dtype, true);
    if (!type_ok(out, int_math)) return false;
    int32_t n_data = n->op == IG_OP_clip ? 1 : n->n_inputs;
    for (int32_t i = 0; i < n_data; i++) {
        if (n->inputs[i] < 0) return false;
        ingot_dtype t = g->values[n->inputs[i]].dtype;
        if (n->op == IG_OP_cast && !int_math) {
            if (!type_ok(t, false) && !ig__dtype_is_int(t)) return false;
        } else if (!type_ok(t, int_math)) {
            return false;
        }
    }
    if (!int_math) return true;
    /* int64 arithmetic equals the node's own (wrapping) arithmetic only where the node's type cannot
     * overflow, or where overflowing int32 is the model's bug anyway */
    switch (n->op) {
    case IG_OP_add:
    case IG_OP_sum:
    case IG_OP_sub:
    case IG_OP_mul:
    case IG_OP_neg:
    case IG_OP_abs:
    case IG_OP_div:
    case IG_OP_pow:
    case IG_OP_prelu: return out == INGOT_DTYPE_INT64 || out == INGOT_DTYPE_INT32;
    case IG_OP_cast: { /* widening (or to bool) only: a narrowing cast changes values mid-program */
        double lo, hi, tlo, thi;
        int_range(g->values[n->inputs[0]].dtype, &lo, &hi);
        int_range(out, &tlo, &thi);
        return out == INGOT_DTYPE_BOOL || (tlo <= lo && hi <= thi);
    }
    default: return true;
    }
}

/* An operand of a node being translated: a value of the program, or a constant for k. */
typedef struct opnd {
    int16_t ref;
    bool is_k;
    float k;
} opnd;

typedef struct xlate {
    const ig_graph *g;
    const ig_node *n;
    const int16_t *in_ref;
    ig_pw_prog q; /* the program being extended (committed on success) */
    ig_err *err;
} xlate;

static ingot_status x_fail(xlate *x, ingot_status st, const char *fmt, ...) IG_PRINTF(3, 4);
static ingot_status x_fail(xlate *x, ingot_status st, const char *fmt, ...)
{
    char msg[IG_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ig__errf(x->err, st, "node '%s' (%s): pointwise program: %s", ig__node_label(x->n), x->n->op_type, msg);
}

static ingot_status x_opnd(xlate *x, int32_t i, opnd *o)
{
    const ig_node *n = x->n;
    if (i >= n->n_inputs || n->inputs[i] < 0) return x_fail(x, INGOT_ERR_INTERNAL, "input %d is missing", (int)i);
    int16_t r = x->in_ref[i];
    *o = (opnd){r, false, 0};
    if (r == IG_PW_K) {
        double d;
        if (!ig__pw_scalar_const(x->g, n->inputs[i], &d))
            return x_fail(x, INGOT_ERR_INTERNAL, "input %d '%s' is not a scalar constant", (int)i,
                          x->g->values[n->inputs[i]].name);
        o->is_k = true;
        o->k = (float)d;
        return INGOT_OK;
    }
    if (r < 0 || r >= x->q.n_in + x->q.n_ops)
        return x_fail(x, INGOT_ERR_INTERNAL, "input %d is given as value %d, which the program does not have", (int)i,
                      (int)r);
    return INGOT_OK;
}

static bool same_float(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Emit code over operands o[0..n_o); with_params: k/k2 are the code's parameters (LEAKY, CLIP,
 * HARDSIGMOID), so every constant operand is first copied into a value; otherwise one constant (or
 * several equal ones) becomes k and any other is copied. */
static ingot_status x_emit(xlate *x, int code, const opnd *o, int n_o, bool with_params, float k, float k2, opnd *res)
{
    int16_t r[3] = {IG_PW_NONE, IG_PW_NONE, IG_PW_NONE};
    bool k_taken = with_params;
    float kv = with_params ? k : 0;
    for (int s = 0; s < n_o; s++) {
        if (!o[s].is_k) {
            r[s] = o[s].ref;
        } else if (!k_taken || (!with_params && same_float(kv, o[s].k))) {
            k_taken = true;
            kv = o[s].k;
            r[s] = IG_PW_K;
        } else if ((r[s] = ig__pw_emit(&x->q, IG_PW_COPY, IG_PW_K, IG_PW_NONE, IG_PW_NONE, o[s].k, 0)) < 0) {
            goto full;
        }
    }
    int16_t v = ig__pw_emit(&x->q, code, r[0], r[1], r[2], kv, with_params ? k2 : 0);
    if (v < 0) goto full;
    *res = (opnd){v, false, 0};
    return INGOT_OK;
full:
    return x_fail(x, INGOT_ERR_MODEL_UNSUPPORTED_OP, "more than %d instructions", IG_PW_MAX_OPS);
}

/* Clip: max with the lower bound, then min with the upper one (as the kernel: lo > hi gives hi). Constant
 * bounds become one CLIP's k/k2; a bound known only at run time (a program value) a MAX or MIN. */
static ingot_status x_clip(xlate *x, opnd *r)
{
    const ig_node *n = x->n;
    ingot_status st = x_opnd(x, 0, r);
    if (st != INGOT_OK) return st;
    double b[2] = {-INFINITY, INFINITY};
    bool tensor[2] = {false, false};
    if (n->opset > 0 && n->opset < 11) {
        b[0] = ig__attr_float(n, "min", -INFINITY);
        b[1] = ig__attr_float(n, "max", INFINITY);
    } else {
        for (int i = 0; i < 2; i++)
            if (n->n_inputs > 1 + i && n->inputs[1 + i] >= 0 && !ig__pw_scalar_const(x->g, n->inputs[1 + i], &b[i]))
                tensor[i] = true;
    }
    if (!tensor[0] && !tensor[1]) return x_emit(x, IG_PW_CLIP, r, 1, true, (float)b[0], (float)b[1], r);
    for (int i = 0; i < 2; i++) {
        opnd o[2] = {*r};
        if (tensor[i]) {
            if ((st = x_opnd(x, 1 + i, &o[1])) != INGOT_OK) return st;
            st = x_emit(x, i ? IG_PW_MIN : IG_PW_MAX, o, 2, false, 0, 0, r);
        } else if (b[i] == (i ? INFINITY : -INFINITY)) {
            continue;
        } else {
            st = x_emit(x, IG_PW_CLIP, o, 1, true, i ? -INFINITY : (float)b[0], i ? (float)b[1] : INFINITY, r);
        }
        if (st != INGOT_OK) return st;
    }
    return INGOT_OK;
}

static int unary_code(const ig_node *n)
{
    switch (n->op) {
    case IG_OP_sqrt: return IG_PW_SQRT;
    case IG_OP_erf: return IG_PW_ERF;
    case IG_OP_exp: return IG_PW_EXP;
    case IG_OP_log: return IG_PW_LOG;
    case IG_OP_neg: return IG_PW_NEG;
    case IG_OP_abs: return IG_PW_ABS;
    case IG_OP_reciprocal: return IG_PW_RECIP;
    case IG_OP_tanh: return IG_PW_TANH;
    case IG_OP_sigmoid: return IG_PW_SIGMOID;
    case IG_OP_relu: return IG_PW_RELU;
    case IG_OP_hard_swish: return IG_PW_HARDSWISH;
    case IG_OP_softplus: return IG_PW_SOFTPLUS;
    case IG_OP_mish: return IG_PW_MISH;
    case IG_OP_is_nan: return IG_PW_ISNAN;
    case IG_OP_not: return IG_PW_NOT;
    case IG_OP_identity: return IG_PW_COPY;
    case IG_OP_sin: return IG_PW_SIN;
    case IG_OP_cos: return IG_PW_COS;
    case IG_OP_tan: return IG_PW_TAN;
    case IG_OP_asin: return IG_PW_ASIN;
    case IG_OP_acos: return IG_PW_ACOS;
    case IG_OP_atan: return IG_PW_ATAN;
    case IG_OP_sinh: return IG_PW_SINH;
    case IG_OP_cosh: return IG_PW_COSH;
    case IG_OP_asinh: return IG_PW_ASINH;
    case IG_OP_acosh: return IG_PW_ACOSH;
    case IG_OP_atanh: return IG_PW_ATANH;
    case IG_OP_floor: return IG_PW_FLOOR;
    case IG_OP_ceil: return IG_PW_CEIL;
    case IG_OP_round: return IG_PW_ROUND;
    case IG_OP_sign: return IG_PW_SIGN;
    case IG_OP_softsign: return IG_PW_SOFTSIGN;
    case IG_OP_gelu: return strcmp(ig__attr_str(n, "approximate", "none"), "tanh") ? IG_PW_GELU_ERF : IG_PW_GELU_TANH;
    default: return -1;
    }
}

static int binary_code(const ig_node *n)
{
    switch (n->op) {
    case IG_OP_add: return IG_PW_ADD;
    case IG_OP_sub: return IG_PW_SUB;
    case IG_OP_mul: return IG_PW_MUL;
    case IG_OP_div: return IG_PW_DIV;
    case IG_OP_pow: return IG_PW_POW;
    case IG_OP_mod: return ig__attr_int(n, "fmod", 0) ? IG_PW_FMOD : IG_PW_MOD;
    case IG_OP_max: return IG_PW_MAX;
    case IG_OP_min: return IG_PW_MIN;
    case IG_OP_sum: return IG_PW_ADD;
    case IG_OP_prelu: return IG_PW_PRELU;
    case IG_OP_equal: return IG_PW_EQ;
    case IG_OP_greater: return IG_PW_GT;
    case IG_OP_less: return IG_PW_LT;
    case IG_OP_greater_or_equal: return IG_PW_GE;
    case IG_OP_less_or_equal: return IG_PW_LE;
    case IG_OP_and: return IG_PW_AND;
    case IG_OP_or: return IG_PW_OR;
    default: return -1;
    }
}

/* Cast inside a program: what the value becomes in the program's math type. */
static int cast_code(const xlate *x)
{
    const ig_node *n = x->n;
    ingot_dtype to = (ingot_dtype)ig__attr_int(n, "to", 0), from = x->g->values[n->inputs[0]].dtype;
    if (to == INGOT_DTYPE_BOOL) return IG_PW_TO_BOOL;
    if (x->q.int_math) return IG_PW_COPY; /* to an integer type: the store (or a widening) keeps the value */
    if (to == INGOT_DTYPE_FLOAT16) return from == INGOT_DTYPE_FLOAT16 ? IG_PW_COPY : IG_PW_TO_F16;
    if (to == INGOT_DTYPE_BFLOAT16) return from == INGOT_DTYPE_BFLOAT16 ? IG_PW_COPY : IG_PW_TO_BF16;
    if (ig__dtype_is_int(to)) return IG_PW_TO_INT;
    return IG_PW_COPY;
}

ingot_status ig__pw_append_node(const ig_graph *g, const ig_node *n, const int16_t *in_ref, ig_pw_prog *p,
                                int16_t *result, ig_err *err)
{
    xlate x = {g, n, in_ref, *p, err};
    if (!node_translatable(g, n, p->int_math))
        return x_fail(&x, INGOT_ERR_MODEL_UNSUPPORTED_OP, "the node cannot be part of an %s program",
                      p->int_math ? "int64" : "fp32");
    opnd o[3], r;
    ingot_status st;
    int code;
    switch (n->op) {
    case IG_OP_leaky_relu:
    case IG_OP_hard_sigmoid: {
        if ((st = x_opnd(&x, 0, &o[0])) != INGOT_OK) return st;
        bool leaky = n->op == IG_OP_leaky_relu;
        float a = ig__attr_float(n, "alpha", leaky ? 0.01f : 0.2f), b = ig__attr_float(n, "beta", 0.5f);
        st = x_emit(&x, leaky ? IG_PW_LEAKY : IG_PW_HARDSIGMOID, o, 1, true, a, leaky ? 0 : b, &r);
        break;
    }
    case IG_OP_elu:
    case IG_OP_celu:
    case IG_OP_thresholded_relu:
    case IG_OP_selu:
    case IG_OP_shrink:
    case IG_OP_is_inf: {
        if ((st = x_opnd(&x, 0, &o[0])) != INGOT_OK) return st;
        float a, b = 0;
        switch (n->op) {
        case IG_OP_elu:
        case IG_OP_celu:
        case IG_OP_thresholded_relu:
            code = n->op == IG_OP_elu ? IG_PW_ELU : n->op == IG_OP_celu ? IG_PW_CELU : IG_PW_THRELU;
            a = ig__attr_float(n, "alpha", 1.0f);
            break;
        case IG_OP_selu:
            code = IG_PW_SELU;
            a = ig__attr_float(n, "alpha", 1.67326319217681884765625f);
            b = ig__attr_float(n, "gamma", 1.05070102214813232421875f);
            break;
        case IG_OP_shrink:
            code = IG_PW_SHRINK;
            a = ig__attr_float(n, "bias", 0.0f);
            b = ig__attr_float(n, "lambd", 0.5f);
            break;
        default:
            code = IG_PW_ISINF;
            a = (float)ig__attr_int(n, "detect_positive", 1);
            b = (float)ig__attr_int(n, "detect_negative", 1);
            break;
        }
        st = x_emit(&x, code, o, 1, true, a, b, &r);
        break;
    }
    case IG_OP_clip: st = x_clip(&x, &r); break;
    case IG_OP_cast:
        if ((st = x_opnd(&x, 0, &o[0])) != INGOT_OK) return st;
        st = x_emit(&x, cast_code(&x), o, 1, false, 0, 0, &r);
        break;
    case IG_OP_where:
        for (int i = 0; i < 3; i++)
            if ((st = x_opnd(&x, i, &o[i])) != INGOT_OK) return st;
        st = x_emit(&x, IG_PW_WHERE, o, 3, false, 0, 0, &r);
        break;
    case IG_OP_max:
    case IG_OP_min:
    case IG_OP_sum: /* left to right, as the kernel: op(op(in0, in1), in2) ... */
        if ((st = x_opnd(&x, 0, &r)) != INGOT_OK) return st;
        if (n->n_inputs == 1) {
            st = x_emit(&x, IG_PW_COPY, &r, 1, false, 0, 0, &r);
            break;
        }
        for (int32_t i = 1; i < n->n_inputs && st == INGOT_OK; i++) {
            o[0] = r;
            if ((st = x_opnd(&x, i, &o[1])) != INGOT_OK) return st;
            st = x_emit(&x, binary_code(n), o, 2, false, 0, 0, &r);
        }
        break;
    default:
        if ((code = unary_code(n)) >= 0) {
            if ((st = x_opnd(&x, 0, &o[0])) != INGOT_OK) return st;
            st = x_emit(&x, code, o, 1, false, 0, 0, &r);
        } else if ((code = binary_code(n)) >= 0) {
            for (int i = 0; i < 2; i++)
                if ((st = x_opnd(&x, i, &o[i])) != INGOT_OK) return st;
            st = x_emit(&x, code, o, 2, false, 0, 0, &r);
        } else {
            return x_fail(&x, INGOT_ERR_MODEL_UNSUPPORTED_OP, "the op has no pointwise code");
        }
    }
    if (st != INGOT_OK) return st;
    char what[160];
    snprintf(what, sizeof what, "node '%s' (%s): pointwise program", ig__node_label(n), n->op_type);
    if ((st = ig__pw_check(&x.q, what, err)) != INGOT_OK) return st;
    *p = x.q;
    *result = r.ref;
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* the interpreter                                                                                 */

bool ig__pw_broadcasts(const ig_tensor *t, int32_t rank, const int64_t *dims)
{
    if (t->rank > rank) return false;
    for (int32_t d = 0; d < t->rank; d++) {
        int64_t od = dims[rank - t->rank + d];
        if (t->dims[d] != od && t->dims[d] != 1) return false;
    }
    return true;
}

typedef struct pw_job {
    const ig_pw_prog *p;
    int32_t rank; /* >= 1 after merging */
    int64_t dims[IG_MAX_RANK];
    int64_t st[IG_PW_MAX_IN][IG_MAX_RANK]; /* element strides per input, 0 where broadcast */
    const unsigned char *in[IG_PW_MAX_IN];
    ingot_dtype dt[IG_PW_MAX_IN];
    size_t esz[IG_PW_MAX_IN];
    unsigned char *out;
    ingot_dtype out_dt;
    size_t osz;
} pw_job;

/* ---- loads: n elements at stride 0 (one value repeated) or 1 ---- */

#define LOAD_CASES(CONV_FLOAT, CONV_INT)                                                   \
    switch (t) {                                                                           \
    case INGOT_DTYPE_FLOAT: LOAD_LOOP(float, CONV_FLOAT(x[i * st]))                        \
    case INGOT_DTYPE_FLOAT16: LOAD_LOOP(uint16_t, CONV_FLOAT(ig__f16_to_f32(x[i * st])))   \
    case INGOT_DTYPE_BFLOAT16: LOAD_LOOP(uint16_t, CONV_FLOAT(ig__bf16_to_f32(x[i * st]))) \
    case INGOT_DTYPE_DOUBLE: LOAD_LOOP(double, CONV_FLOAT(x[i * st]))                      \
    case INGOT_DTYPE_BOOL: LOAD_LOOP(uint8_t, x[i * st] != 0)                              \
    case INGOT_DTYPE_INT8: LOAD_LOOP(int8_t, CONV_INT(x[i * st]))                          \
    case INGOT_DTYPE_UINT8: LOAD_LOOP(uint8_t, CONV_INT(x[i * st]))                        \
    case INGOT_DTYPE_INT16: LOAD_LOOP(int16_t, CONV_INT(x[i * st]))                        \
    case INGOT_DTYPE_UINT16: LOAD_LOOP(uint16_t, CONV_INT(x[i * st]))                      \
    case INGOT_DTYPE_INT32: LOAD_LOOP(int32_t, CONV_INT(x[i * st]))                        \
    case INGOT_DTYPE_UINT32: LOAD_LOOP(uint32_t, CONV_INT(x[i * st]))                      \
    case INGOT_DTYPE_INT64: LOAD_LOOP(int64_t, CONV_INT(x[i * st]))                        \
    case INGOT_DTYPE_UINT64: LOAD_LOOP(uint64_t, CONV_INT(x[i * st]))                      \
    default:                                                                               \
        for (int i = 0; i < n; i++) d[i] = 0;                                              \
        return;                                                                            \
    }
#define LOAD_LOOP(CT, EXPR)                        \
    {                                              \
        const CT *x = src;                         \
        for (int i = 0; i < n; i++) d[i] = (EXPR); \
        return;                                    \
    }

#define F_FROM_F(v) ((float)(v))
#define F_FROM_I(v) ((float)(v))
static void load_f32(ingot_dtype t, const void *src, int st, float *d, int n) { LOAD_CASES(F_FROM_F, F_FROM_I) }

#define I_FROM_F(v) ig__f2i64((double)(v))
#define I_FROM_I(v) ((int64_t)(v))
static void load_i64(ingot_dtype t, const void *src, int st, int64_t *d, int n) { LOAD_CASES(I_FROM_F, I_FROM_I) }

/* ---- stores into the output dtype, as Cast converts ---- */

#define STORE_CASES(CONV_INT, CONV_U64, TO_HALF)                                   \
    switch (t) {                                                                   \
        STORE_CASE(INGOT_DTYPE_FLOAT, float, (float)s[i])                          \
        STORE_CASE(INGOT_DTYPE_DOUBLE, double, (double)s[i])                       \
        STORE_CASE(INGOT_DTYPE_FLOAT16, uint16_t, ig__f32_to_f16(TO_HALF(s[i])))   \
        STORE_CASE(INGOT_DTYPE_BFLOAT16, uint16_t, ig__f32_to_bf16(TO_HALF(s[i]))) \
        STORE_CASE(INGOT_DTYPE_BOOL, uint8_t, s[i] != 0)                           \
        STORE_CASE(INGOT_DTYPE_INT8, int8_t, CONV_INT(s[i]))                       \
        STORE_CASE(INGOT_DTYPE_INT16, int16_t, CONV_INT(s[i]))                     \
        STORE_CASE(INGOT_DTYPE_INT32, int32_t, CONV_INT(s[i]))                     \
        STORE_CASE(INGOT_DTYPE_INT64, int64_t, CONV_INT(s[i]))                     \
        STORE_CASE(INGOT_DTYPE_UINT8, uint8_t, CONV_INT(s[i]))                     \
        STORE_CASE(INGOT_DTYPE_UINT16, uint16_t, CONV_INT(s[i]))                   \
        STORE_CASE(INGOT_DTYPE_UINT32, uint32_t, CONV_INT(s[i]))                   \
        STORE_CASE(INGOT_DTYPE_UINT64, uint64_t, CONV_U64(s[i]))                   \
    default: return;                                                               \
    }
#define STORE_CASE(DT, CT, EXPR)                       \
    case DT: {                                         \
        CT *d = dst;                                   \
        for (int i = 0; i < n; i++) d[i] = (CT)(EXPR); \
        return;                                        \
    }

#define F2I(v)    ig__f2i64((double)(v))
#define F2U(v)    ig__f2u64((double)(v))
#define ID(v)     (v)
#define I2U(v)    ((uint64_t)(v)) /* integers wrap to the target width */
#define I2HALF(v) ig__f64_to_f32_odd((double)(v))
static void store_f32(ingot_dtype t, const float *s, void *dst, int n) { STORE_CASES(F2I, F2U, ID) }
static void store_i64(ingot_dtype t, const int64_t *s, void *dst, int n) { STORE_CASES(I2U, I2U, I2HALF) }

/* ---- fp32 instructions over arrays: the formulas of unary.c / binary.c ---- */

#define SEL ig__self
static void op_f32(int code, const float *restrict A, const float *restrict B, const float *restrict C, float k,
                   float k2, float *restrict Y, int n)
{
#define L1(EXPR)                  \
    for (int i = 0; i < n; i++) { \
        const float x = A[i];     \
        Y[i] = (EXPR);            \
    }                             \
    return;
#define L2(EXPR)                        \
    for (int i = 0; i < n; i++) {       \
        const float x = A[i], y = B[i]; \
        Y[i] = (EXPR);                  \
    }                                   \
    return;
    switch (code) {
    case IG_PW_COPY: L1(x)
    case IG_PW_NEG: L1(-x)
    case IG_PW_ABS: L1(fabsf(x))
    case IG_PW_RECIP: L1(1.0f / x)
    case IG_PW_SQRT: L1(sqrtf(x))
    case IG_PW_EXP: L1(ig__fast_expf(x))
    case IG_PW_LOG: L1(logf(x))
    case IG_PW_ERF: L1(ig__fast_erff(x))
    case IG_PW_TANH: L1(ig__fast_tanhf(x))
    case IG_PW_SIGMOID: /* 1/(1+e^-x), or e^x/(1+e^x) for x < 0 */
        for (int i = 0; i < n; i++) {
            float v = A[i], e = ig__fast_expf(-fabsf(v));
            Y[i] = SEL(v < 0, e, 1.0f) / (1.0f + e);
        }
        return;
    case IG_PW_RELU: L1(SEL(x < 0, 0.0f, x))
    case IG_PW_LEAKY: L1(SEL(x < 0, k * x, x))
    case IG_PW_CLIP: /* max then min, as numpy: lo > hi gives hi; NaN stays */
        for (int i = 0; i < n; i++) {
            float v = SEL(A[i] < k, k, A[i]);
            Y[i] = SEL(v > k2, k2, v);
        }
        return;
    case IG_PW_HARDSIGMOID:
        for (int i = 0; i < n; i++) {
            float v = k * A[i] + k2;
            v = SEL(v < 0, 0.0f, v);
            Y[i] = SEL(v > 1, 1.0f, v);
        }
        return;
    case IG_PW_HARDSWISH:
        for (int i = 0; i < n; i++) {
            float v = A[i] * (float)(1.0 / 6.0) + 0.5f;
            v = SEL(v < 0, 0.0f, v);
            v = SEL(v > 1, 1.0f, v);
            Y[i] = A[i] * v;
        }
        return;
    case IG_PW_GELU_ERF: L1(0.5f * x * (1.0f + ig__fast_erff(x * 0.70710678118654752440f)))
    case IG_PW_GELU_TANH: L1(0.5f * x * (1.0f + ig__fast_tanhf(0.79788456080286535588f * (x + 0.044715f * x * x * x))))
    case IG_PW_SOFTPLUS: /* max(x,0) + log1p(e^-|x|): no overflow for large x */
        L1(SEL(x > 0, x, 0.0f) + log1pf(ig__fast_expf(-fabsf(x))))
    case IG_PW_MISH: L1(x * ig__fast_tanhf(SEL(x > 0, x, 0.0f) + log1pf(ig__fast_expf(-fabsf(x)))))
    case IG_PW_ISNAN: L1(x != x ? 1.0f : 0.0f)
    case IG_PW_NOT: L1(x == 0 ? 1.0f : 0.0f)
    case IG_PW_FLOOR: L1(floorf(x))
    case IG_PW_CEIL: L1(ceilf(x))
    case IG_PW_ROUND: L1(rintf(x)) /* half to even in the default rounding mode */
    case IG_PW_TO_F16: L1(ig__f16_to_f32(ig__f32_to_f16(x)))
    case IG_PW_TO_BF16: L1(ig__bf16_to_f32(ig__f32_to_bf16(x)))
    case IG_PW_TO_INT: L1((float)ig__f2i64((double)x))
    case IG_PW_TO_BOOL: L1(x != 0 ? 1.0f : 0.0f)
    case IG_PW_ADD: L2(x + y)
    case IG_PW_SUB: L2(x - y)
    case IG_PW_MUL: L2(x * y)
    case IG_PW_DIV: L2(x / y)
    case IG_PW_POW: L2(y == 2.0f ? x * x : powf(x, y))
    case IG_PW_MOD: L2(ig__mod_f32(x, y))
    case IG_PW_FMOD: L2(fmodf(x, y))
    case IG_PW_MAX: L2((x > y || x != x) ? x : y) /* NaN propagates */
    case IG_PW_MIN: L2((x < y || x != x) ? x : y)
    case IG_PW_PRELU: L2(x < 0 ? x * y : x)
    case IG_PW_EQ: L2(x == y ? 1.0f : 0.0f)
    case IG_PW_GT: L2(x > y ? 1.0f : 0.0f)
    case IG_PW_LT: L2(x < y ? 1.0f : 0.0f)
    case IG_PW_GE: L2(x >= y ? 1.0f : 0.0f)
    case IG_PW_LE: L2(x <= y ? 1.0f : 0.0f)
    case IG_PW_AND: L2((x != 0 && y != 0) ? 1.0f : 0.0f)
    case IG_PW_OR: L2((x != 0 || y != 0) ? 1.0f : 0.0f)
    case IG_PW_WHERE:
        for (int i = 0; i < n; i++) Y[i] = A[i] != 0 ? B[i] : C[i];
        return;
    case IG_PW_MULADD: /* two roundings, as the Mul and the Add it replaces */
        for (int i = 0; i < n; i++) Y[i] = A[i] * B[i] + C[i];
        return;
    case IG_PW_SIN: L1(sinf(x))
    case IG_PW_COS: L1(cosf(x))
    case IG_PW_TAN: L1(tanf(x))
    case IG_PW_ASIN: L1(asinf(x))
    case IG_PW_ACOS: L1(acosf(x))
    case IG_PW_ATAN: L1(atanf(x))
    case IG_PW_SINH: L1(sinhf(x))
    case IG_PW_COSH: L1(coshf(x))
    case IG_PW_ASINH: L1(asinhf(x))
    case IG_PW_ACOSH: L1(acoshf(x))
    case IG_PW_ATANH: L1(atanhf(x))
    case IG_PW_SIGN: L1(x > 0 ? 1.0f : x < 0 ? -1.0f : x)
    case IG_PW_ELU: L1(SEL(x < 0, k * expm1f(x), x))
    case IG_PW_SELU: L1(SEL(x <= 0, k2 * (k * expm1f(x)), k2 * x))
    case IG_PW_CELU: L1(SEL(x < 0, k * expm1f(x / k), x))
    case IG_PW_SOFTSIGN: L1(x / (1.0f + fabsf(x)))
    case IG_PW_THRELU: L1(SEL(x > k, x, 0.0f))
    case IG_PW_SHRINK: L1(x < -k2 ? x + k : x > k2 ? x - k : 0.0f)
    case IG_PW_ISINF: L1(((k != 0 && x == INFINITY) || (k2 != 0 && x == -INFINITY)) ? 1.0f : 0.0f)
    default:
        for (int i = 0; i < n; i++) Y[i] = 0;
        return;
    }
#undef L1
#undef L2
}

/* ---- int64 instructions: wrapping arithmetic, division and Mod by 0 give 0 (binary.c) ---- */

static inline int64_t op_i64_1(int code, int64_t x, int64_t y, int64_t z, int64_t k, int64_t k2)
{
    switch (code) {
    case IG_PW_COPY:
    case IG_PW_TO_INT:
    case IG_PW_FLOOR:
    case IG_PW_CEIL:
    case IG_PW_ROUND: return x;
    case IG_PW_NEG: return (int64_t)(0u - (uint64_t)x);
    case IG_PW_SIGN: return (x > 0) - (x < 0);
    case IG_PW_ABS: return x < 0 ? (int64_t)(0u - (uint64_t)x) : x;
    case IG_PW_RELU: return x < 0 ? 0 : x;
    case IG_PW_CLIP: {
        int64_t v = x < k ? k : x;
        return v > k2 ? k2 : v;
    }
    case IG_PW_NOT: return x == 0;
    case IG_PW_TO_BOOL: return x != 0;
    case IG_PW_ADD: return (int64_t)((uint64_t)x + (uint64_t)y);
    case IG_PW_SUB: return (int64_t)((uint64_t)x - (uint64_t)y);
    case IG_PW_MUL: return (int64_t)((uint64_t)x * (uint64_t)y);
    case IG_PW_DIV: return y == 0 ? 0 : y == -1 ? (int64_t)(0u - (uint64_t)x) : x / y;
    case IG_PW_MOD: {
        if (y == 0 || y == -1) return 0;
        int64_t r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return r;
    }
    case IG_PW_FMOD: return (y == 0 || y == -1) ? 0 : x % y;
    case IG_PW_POW: return ig__ipow_s(x, y);
    case IG_PW_MAX: return x > y ? x : y;
    case IG_PW_MIN: return x < y ? x : y;
    case IG_PW_PRELU: return x < 0 ? (int64_t)((uint64_t)x * (uint64_t)y) : x;
    case IG_PW_EQ: return x == y;
    case IG_PW_GT: return x > y;
    case IG_PW_LT: return x < y;
    case IG_PW_GE: return x >= y;
    case IG_PW_LE: return x <= y;
    case IG_PW_AND: return x != 0 && y != 0;
    case IG_PW_OR: return x != 0 || y != 0;
    case IG_PW_WHERE: return x != 0 ? y : z;
    case IG_PW_MULADD: return (int64_t)((uint64_t)x * (uint64_t)y + (uint64_t)z);
    default: return 0;
    }
}

static void op_i64(int code, const int64_t *A, const int64_t *B, const int64_t *C, float k, float k2, int64_t *Y, int n)
{
    const int64_t ik = ig__f2i64(k), ik2 = ig__f2i64(k2);
    switch (code) { /* the common ones as plain loops, the rest element by element */
    case IG_PW_ADD:
        for (int i = 0; i < n; i++) Y[i] = (int64_t)((uint64_t)A[i] + (uint64_t)B[i]);
        return;
    case IG_PW_SUB:
        for (int i = 0; i < n; i++) Y[i] = (int64_t)((uint64_t)A[i] - (uint64_t)B[i]);
        return;
    case IG_PW_MUL:
        for (int i = 0; i < n; i++) Y[i] = (int64_t)((uint64_t)A[i] * (uint64_t)B[i]);
        return;
    default: break;
    }
    int ar = ig__pw_arity(code);
    for (int i = 0; i < n; i++) Y[i] = op_i64_1(code, A[i], ar > 1 ? B[i] : 0, ar > 2 ? C[i] : 0, ik, ik2);
}

/* ---- runs ---- */

/* Value arrays of one run: the inputs, one per instruction, and a spare filled with the current
 * instruction's k when an operand reads it. */
#define KSLOT NVAL
typedef union pw_vals {
    float f[NVAL + 1][RUN];
    int64_t i[NVAL + 1][RUN];
} pw_vals;

static void run_program(const ig_pw_prog *p, pw_vals *v, int n)
{
    for (int32_t j = 0; j < p->n_ops; j++) {
        const ig_pw_inst *o = &p->op[j];
        const int16_t r[3] = {o->a, o->b, o->c};
        int src[3];
        bool uses_k = false;
        for (int s = 0; s < 3; s++) {
            src[s] = r[s] >= 0 ? r[s] : r[s] == IG_PW_K ? KSLOT : 0; /* IG_PW_NONE: never read */
            uses_k |= r[s] == IG_PW_K;
        }
        const int dst = p->n_in + j;
        if (p->int_math) {
            if (uses_k) {
                int64_t kv = ig__f2i64(o->k);
                for (int i = 0; i < n; i++) v->i[KSLOT][i] = kv;
            }
            op_i64(o->code, v->i[src[0]], v->i[src[1]], v->i[src[2]], o->k, o->k2, v->i[dst], n);
        } else {
            if (uses_k)
                for (int i = 0; i < n; i++) v->f[KSLOT][i] = o->k;
            op_f32(o->code, v->f[src[0]], v->f[src[1]], v->f[src[2]], o->k, o->k2, v->f[dst], n);
        }
    }
}

static void pw_range(void *arg, int64_t b, int64_t e)
{
    const pw_job *j = arg;
    const ig_pw_prog *p = j->p;
    const int32_t r = j->rank;
    const int64_t inner = j->dims[r - 1];
    int64_t row = b / inner, col = b % inner;
    int64_t coord[IG_MAX_RANK] = {0}, off[IG_PW_MAX_IN] = {0};
    int st_in[IG_PW_MAX_IN];
    for (int32_t d = r - 2; d >= 0; d--) {
        coord[d] = row % j->dims[d];
        row /= j->dims[d];
        for (int k = 0; k < p->n_in; k++) off[k] += coord[d] * j->st[k][d];
    }
    for (int k = 0; k < p->n_in; k++) st_in[k] = j->st[k][r - 1] != 0; /* 1 or 0 after merging */
    pw_vals v;
    const int res = ig__pw_result(p);
    while (b < e) {
        int64_t len = inner - col;
        if (len > e - b) len = e - b;
        if (len > RUN) len = RUN;
        const int m = (int)len;
        for (int k = 0; k < p->n_in; k++) {
            const void *src = j->in[k] + (size_t)(off[k] + col * st_in[k]) * j->esz[k];
            if (p->int_math)
                load_i64(j->dt[k], src, st_in[k], v.i[k], m);
            else
                load_f32(j->dt[k], src, st_in[k], v.f[k], m);
        }
        run_program(p, &v, m);
        void *dst = j->out + (size_t)b * j->osz;
        if (p->int_math)
            store_i64(j->out_dt, v.i[res], dst, m);
        else
            store_f32(j->out_dt, v.f[res], dst, m);
        b += len;
        col += len;
        if (col < inner) continue;
        col = 0;
        for (int32_t d = r - 2; d >= 0; d--) {
            coord[d]++;
            for (int k = 0; k < p->n_in; k++) off[k] += j->st[k][d];
            if (coord[d] < j->dims[d]) break;
            for (int k = 0; k < p->n_in; k++) off[k] -= j->st[k][d] * j->dims[d];
            coord[d] = 0;
        }
    }
}

void ig__pw_apply(struct ig_pool *pool, const ig_pw_prog *p, const ig_tensor *const *in, int32_t n_in, ig_tensor *out)
{
    IG_ASSERT(p->n_in >= 1 && p->n_in <= IG_PW_MAX_IN && n_in >= p->n_in);
    if (out->numel <= 0) return;
    pw_job j;
    memset(&j, 0, sizeof j);
    j.p = p;
    int64_t st[IG_PW_MAX_IN][IG_MAX_RANK];
    for (int k = 0; k < p->n_in; k++) {
        IG_ASSERT(ig__pw_broadcasts(in[k], out->rank, out->dims));
        ig__broadcast_strides(in[k], out->rank, out->dims, st[k]);
        j.in[k] = in[k]->data;
        j.dt[k] = in[k]->dtype;
        j.esz[k] = ingot_dtype_size(in[k]->dtype);
    }
    /* drop size-1 dims and merge neighbours every input keeps contiguous (or broadcast) across */
    int32_t r = 0;
    for (int32_t d = 0; d < out->rank; d++) {
        int64_t D = out->dims[d];
        if (D == 1) continue;
        if (r > 0) {
            bool merge = true;
            for (int k = 0; k < p->n_in; k++)
                if (j.st[k][r - 1] != st[k][d] * D) merge = false;
            if (merge) {
                j.dims[r - 1] *= D;
                for (int k = 0; k < p->n_in; k++) j.st[k][r - 1] = st[k][d];
                continue;
            }
        }
        j.dims[r] = D;
        for (int k = 0; k < p->n_in; k++) j.st[k][r] = st[k][d];
        r++;
    }
    if (r == 0) {
        j.dims[0] = 1;
        r = 1;
    }
    j.rank = r;
    j.out = out->data;
    j.out_dt = out->dtype;
    j.osz = ingot_dtype_size(out->dtype);
    ig__parallel_for(pool, out->numel, GRAIN, pw_range, &j);
}
