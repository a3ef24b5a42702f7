/*
 * binary.c -- elementwise ops over broadcast inputs: arithmetic (Add Sub Mul Div Pow Mod), variadic
 * Max/Min, PRelu, comparisons (output bool), And/Or, and Where.
 *
 * Kernels walk the output with one broadcast iterator: input strides come from ig__broadcast_strides,
 * size-1 dims are dropped and adjacent dims merged wherever every input stays contiguous (or broadcast)
 * across them. After that the innermost dim has stride 1 or 0 in every input, so the typed inner loops
 * only know four cases (both contiguous, either operand one value, both one value) and vectorise; the
 * fast paths fall out of the collapse: same shapes -> one flat loop, scalar operand -> stride 0,
 * per-channel [N,C,H,W] x [C,1,1] -> rows of H*W against one value. Work is split over the output's
 * flat index range, so a single huge row threads as well as many small ones.
 *
 * Numerics: float32/float64 in their own type; float16/bfloat16 through fp32 in stack chunks; integers
 * exactly in their own type with two's-complement wrap-around. Integer Div truncates toward zero (as
 * C, ONNX Runtime and the onnx reference); an integer divisor of 0 in Div or Mod fails the run, naming
 * the element (the kernels still guard against it), and INT_MIN / -1 wraps to INT_MIN instead of trapping.
 */
#include "op.h"
#include "ops_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#define GRAIN ((int64_t)1 << 15) /* output elements per thread at least */
#define CHUNK 256                /* fp16/bf16 conversion chunk (elements, on the stack) */
#define MAXIN 3

static int opset_of(const ig_node *n) { return n->opset > 0 ? n->opset : 1000; }

enum bkind {
    B_ADD,
    B_SUB,
    B_MUL,
    B_DIV,
    B_POW,
    B_MOD,
    B_FMOD,
    B_MAX,
    B_MIN,
    B_PRELU,
    B_EQ,
    B_GT,
    B_LT,
    B_GE,
    B_LE,
    B_AND,
    B_OR,
    B_COUNT
};

static bool kind_is_cmp(int k) { return k >= B_EQ && k <= B_LE; }

/* ---------------------------------------------------------------------------------------------- */
/* typed inner loops: o[i] = f(a[i * sa], b[i * sb]) with sa, sb in {0, 1}                           */

typedef void (*bin_fn)(const void *a, const void *b, void *o, int64_t n, int sa, int sb);

#define LOOP2(TA, TB, TO, EXPR)                       \
    {                                                 \
        const TA *A = a;                              \
        const TB *B = b;                              \
        TO *O = o;                                    \
        if (sa && sb) {                               \
            for (int64_t i = 0; i < n; i++) {         \
                const TA x = A[i];                    \
                const TB y = B[i];                    \
                O[i] = (TO)(EXPR);                    \
            }                                         \
        } else if (sa) {                              \
            const TB y = B[0];                        \
            for (int64_t i = 0; i < n; i++) {         \
                const TA x = A[i];                    \
                O[i] = (TO)(EXPR);                    \
            }                                         \
        } else if (sb) {                              \
            const TA x = A[0];                        \
            for (int64_t i = 0; i < n; i++) {         \
                const TB y = B[i];                    \
                O[i] = (TO)(EXPR);                    \
            }                                         \
        } else {                                      \
            const TA x = A[0];                        \
            const TB y = B[0];                        \
            const TO r = (TO)(EXPR);                  \
            for (int64_t i = 0; i < n; i++) O[i] = r; \
        }                                             \
    }

#define BIN_FN(name, T, TO, EXPR) \
    static void name(const void *a, const void *b, void *o, int64_t n, int sa, int sb) LOOP2(T, T, TO, EXPR)

/* Mod with fmod=0 on floats: ig__mod_f32 / ig__mod_f64 (ops_internal.h). */
#define mod_f32_1 ig__mod_f32
#define mod_f64_1 ig__mod_f64

/* Integer powers by squaring (ig__ipow_s, ops_internal.h; the unsigned one here). */
#define ipow_s ig__ipow_s
static uint64_t ipow_u(uint64_t b, uint64_t u)
{
    uint64_t r = 1;
    while (u) {
        if (u & 1) r *= b;
        b *= b;
        u >>= 1;
    }
    return r;
}

#define DEF_CMP_OPS(sfx, T)              \
    BIN_FN(eq_##sfx, T, uint8_t, x == y) \
    BIN_FN(gt_##sfx, T, uint8_t, x > y)  \
    BIN_FN(lt_##sfx, T, uint8_t, x < y)  \
    BIN_FN(ge_##sfx, T, uint8_t, x >= y) \
    BIN_FN(le_##sfx, T, uint8_t, x <= y)

/* Max/Min propagate NaN (as numpy's maximum/minimum and the onnx reference). */
#define DEF_FLOAT_OPS(sfx, T, F)                                                                \
    BIN_FN(add_##sfx, T, T, x + y)                                                              \
    BIN_FN(sub_##sfx, T, T, x - y)                                                              \
    BIN_FN(mul_##sfx, T, T, x *y)                                                               \
    BIN_FN(div_##sfx, T, T, x / y)                                                              \
    BIN_FN(mod_##sfx, T, T, mod_##sfx##_1(x, y))                                                \
    BIN_FN(fmod_##sfx, T, T, F(fmod)(x, y))                                                     \
    BIN_FN(max_##sfx, T, T, (x > y || x != x) ? x : y)                                          \
    BIN_FN(min_##sfx, T, T, (x < y || x != x) ? x : y)                                          \
    BIN_FN(prelu_##sfx, T, T, x < 0 ? x * y : x)                                                \
    BIN_FN(powg_##sfx, T, T, F(pow)(x, y))                                                      \
    DEF_CMP_OPS(sfx, T)                                                                         \
    static void pow_##sfx(const void *a, const void *b, void *o, int64_t n, int sa, int sb)     \
    {                                                                                           \
        if (!sb && *(const T *)b == 2) { /* x^2, common in decomposed norms: exact and cheap */ \
            BIN_FN_BODY_SQUARE(T)                                                               \
            return;                                                                             \
        }                                                                                       \
        powg_##sfx(a, b, o, n, sa, sb);                                                         \
    }

#define BIN_FN_BODY_SQUARE(T)                                   \
    {                                                           \
        const T *A = a;                                         \
        T *O = o;                                               \
        if (sa)                                                 \
            for (int64_t i = 0; i < n; i++) O[i] = A[i] * A[i]; \
        else                                                    \
            for (int64_t i = 0; i < n; i++) O[i] = A[0] * A[0]; \
    }

#define FN_F32(fn) fn##f
#define FN_F64(fn) fn
DEF_FLOAT_OPS(f32, float, FN_F32)
DEF_FLOAT_OPS(f64, double, FN_F64)

/* WU: the unsigned type wide enough that the arithmetic wraps instead of overflowing a signed int. */
#define DEF_INT_COMMON(sfx, T, WU)         \
    BIN_FN(add_##sfx, T, T, (WU)x + (WU)y) \
    BIN_FN(sub_##sfx, T, T, (WU)x - (WU)y) \
    BIN_FN(mul_##sfx, T, T, (WU)x *(WU)y)  \
    BIN_FN(max_##sfx, T, T, x > y ? x : y) \
    BIN_FN(min_##sfx, T, T, x < y ? x : y) \
    DEF_CMP_OPS(sfx, T)

#define DEF_SINT_OPS(sfx, T, WU)                                                    \
    DEF_INT_COMMON(sfx, T, WU)                                                      \
    static inline T smod_##sfx(T x, T y)                                            \
    {                                                                               \
        if (y == 0 || y == -1) return 0;                                            \
        T r = (T)(x % y);                                                           \
        if (r != 0 && ((r < 0) != (y < 0))) r = (T)(r + y);                         \
        return r;                                                                   \
    }                                                                               \
    BIN_FN(div_##sfx, T, T, y == 0 ? (T)0 : y == -1 ? (T)(0u - (WU)x) : (T)(x / y)) \
    BIN_FN(mod_##sfx, T, T, smod_##sfx(x, y))                                       \
    BIN_FN(fmod_##sfx, T, T, (y == 0 || y == -1) ? (T)0 : (T)(x % y))               \
    BIN_FN(prelu_##sfx, T, T, x < 0 ? (T)((WU)x * (WU)y) : x)                       \
    BIN_FN(pow_##sfx, T, T, ipow_s(x, y))

#define DEF_UINT_OPS(sfx, T, WU)                        \
    DEF_INT_COMMON(sfx, T, WU)                          \
    BIN_FN(div_##sfx, T, T, y == 0 ? (T)0 : (T)(x / y)) \
    BIN_FN(mod_##sfx, T, T, y == 0 ? (T)0 : (T)(x % y)) \
    BIN_FN(prelu_##sfx, T, T, ((void)y, x))             \
    BIN_FN(pow_##sfx, T, T, ipow_u(x, y))

DEF_SINT_OPS(i8, int8_t, uint32_t)
DEF_SINT_OPS(i16, int16_t, uint32_t)
DEF_SINT_OPS(i32, int32_t, uint32_t)
DEF_SINT_OPS(i64, int64_t, uint64_t)
DEF_UINT_OPS(u8, uint8_t, uint32_t)
DEF_UINT_OPS(u16, uint16_t, uint32_t)
DEF_UINT_OPS(u32, uint32_t, uint32_t)
DEF_UINT_OPS(u64, uint64_t, uint64_t)

BIN_FN(eq_b, uint8_t, uint8_t, (x != 0) == (y != 0))
BIN_FN(and_b, uint8_t, uint8_t, x &&y)
BIN_FN(or_b, uint8_t, uint8_t, x || y)

#define ROW_FLOAT(sfx)                                                                                                 \
    {                                                                                                                  \
        [B_ADD] = add_##sfx, [B_SUB] = sub_##sfx, [B_MUL] = mul_##sfx, [B_DIV] = div_##sfx, [B_POW] = pow_##sfx,       \
        [B_MOD] = mod_##sfx, [B_FMOD] = fmod_##sfx, [B_MAX] = max_##sfx, [B_MIN] = min_##sfx, [B_PRELU] = prelu_##sfx, \
        [B_EQ] = eq_##sfx, [B_GT] = gt_##sfx, [B_LT] = lt_##sfx, [B_GE] = ge_##sfx, [B_LE] = le_##sfx                  \
    }
#define ROW_SINT(sfx) ROW_FLOAT(sfx)
#define ROW_UINT(sfx)                                                                                                 \
    {                                                                                                                 \
        [B_ADD] = add_##sfx, [B_SUB] = sub_##sfx, [B_MUL] = mul_##sfx, [B_DIV] = div_##sfx, [B_POW] = pow_##sfx,      \
        [B_MOD] = mod_##sfx, [B_FMOD] = mod_##sfx, [B_MAX] = max_##sfx, [B_MIN] = min_##sfx, [B_PRELU] = prelu_##sfx, \
        [B_EQ] = eq_##sfx, [B_GT] = gt_##sfx, [B_LT] = lt_##sfx, [B_GE] = ge_##sfx, [B_LE] = le_##sfx                 \
    }

/* float16/bfloat16 rows are NULL: they run the float32 loops through half_seg. */
static const bin_fn bin_table[INGOT_DTYPE_COUNT][B_COUNT] = {
    [INGOT_DTYPE_FLOAT] = ROW_FLOAT(f32),
    [INGOT_DTYPE_DOUBLE] = ROW_FLOAT(f64),
    [INGOT_DTYPE_INT8] = ROW_SINT(i8),
    [INGOT_DTYPE_INT16] = ROW_SINT(i16),
    [INGOT_DTYPE_INT32] = ROW_SINT(i32),
    [INGOT_DTYPE_INT64] = ROW_SINT(i64),
    [INGOT_DTYPE_UINT8] = ROW_UINT(u8),
    [INGOT_DTYPE_UINT16] = ROW_UINT(u16),
    [INGOT_DTYPE_UINT32] = ROW_UINT(u32),
    [INGOT_DTYPE_UINT64] = ROW_UINT(u64),
    [INGOT_DTYPE_BOOL] = {[B_EQ] = eq_b, [B_AND] = and_b, [B_OR] = or_b},
};

static bool is_half(ingot_dtype t) { return t == INGOT_DTYPE_FLOAT16 || t == INGOT_DTYPE_BFLOAT16; }

/* ---------------------------------------------------------------------------------------------- */
/* the broadcast iterator                                                                          */

typedef void (*seg_fn)(const void *ctx, const void *const *in, const int *st, void *out, int64_t n);

typedef struct ew_iter {
    int32_t rank; /* >= 1 after collapsing */
    int n_in;
    int64_t dims[IG_MAX_RANK];
    int64_t st[MAXIN][IG_MAX_RANK]; /* element strides per input, 0 where broadcast */
    size_t esz[MAXIN], osz;
    const unsigned char *in[MAXIN];
    unsigned char *out;
    seg_fn fn;
    const void *ctx;
} ew_iter;

/* false when an input does not broadcast to the output's shape (inference and execution disagree). */
static bool ew_setup(ew_iter *it, ig_tensor *out, const ig_tensor *const *ins, int n_in, seg_fn fn, const void *ctx)
{
    int64_t st[MAXIN][IG_MAX_RANK];
    memset(it, 0, sizeof *it);
    it->n_in = n_in;
    for (int k = 0; k < n_in; k++) {
        const ig_tensor *t = ins[k];
        if (t->rank > out->rank) return false;
        for (int32_t d = 0; d < t->rank; d++) {
            int64_t od = out->dims[out->rank - t->rank + d];
            if (t->dims[d] != od && t->dims[d] != 1) return false;
        }
        ig__broadcast_strides(t, out->rank, out->dims, st[k]);
        it->esz[k] = ingot_dtype_size(t->dtype);
        it->in[k] = t->data;
    }
    int32_t r = 0;
    for (int32_t d = 0; d < out->rank; d++) {
        int64_t D = out->dims[d];
        if (D == 1) continue;
        if (r > 0) {
            bool merge = true;
            for (int k = 0; k < n_in; k++)
                if (it->st[k][r - 1] != st[k][d] * D) merge = false;
            if (merge) {
                it->dims[r - 1] *= D;
                for (int k = 0; k < n_in; k++) it->st[k][r - 1] = st[k][d];
                continue;
            }
        }
        it->dims[r] = D;
        for (int k = 0; k < n_in; k++) it->st[k][r] = st[k][d];
        r++;
    }
    if (r == 0) {
        it->dims[0] = 1;
        for (int k = 0; k < n_in; k++) it->st[k][0] = 0;
        r = 1;
    }
    it->rank = r;
    it->osz = ingot_dtype_size(out->dtype);
    it->out = out->data;
    it->fn = fn;
    it->ctx = ctx;
    return true;
}

static void ew_range(void *arg, int64_t b, int64_t e)
{
    const ew_iter *it = arg;
    int32_t r = it->rank;
    int64_t inner = it->dims[r - 1], row = b / inner, col = b % inner;
    int64_t coord[IG_MAX_RANK], off[MAXIN] = {0};
    int st_in[MAXIN];
    for (int32_t d = r - 2; d >= 0; d--) {
        coord[d] = row % it->dims[d];
        row /= it->dims[d];
        for (int k = 0; k < it->n_in; k++) off[k] += coord[d] * it->st[k][d];
    }
    for (int k = 0; k < it->n_in; k++) st_in[k] = it->st[k][r - 1] != 0;
    const void *ptr[MAXIN];
    while (b < e) {
        int64_t len = inner - col;
        if (len > e - b) len = e - b;
        for (int k = 0; k < it->n_in; k++) ptr[k] = it->in[k] + (size_t)(off[k] + col * st_in[k]) * it->esz[k];
        it->fn(it->ctx, ptr, st_in, it->out + (size_t)b * it->osz, len);
        b += len;
        col = 0;
        for (int32_t d = r - 2; d >= 0; d--) {
            coord[d]++;
            for (int k = 0; k < it->n_in; k++) off[k] += it->st[k][d];
            if (coord[d] < it->dims[d]) break;
            for (int k = 0; k < it->n_in; k++) off[k] -= it->st[k][d] * it->dims[d];
            coord[d] = 0;
        }
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* segment functions                                                                               */

typedef struct bctx {
    bin_fn fn;
    ingot_dtype ta, tb;
    bool cmp;
} bctx;

static void bin_seg(const void *ctx, const void *const *in, const int *st, void *out, int64_t n)
{
    const bctx *c = ctx;
    c->fn(in[0], in[1], out, n, st[0], st[1]);
}

static void half_load(ingot_dtype t, const uint16_t *s, float *d, int64_t n)
{
    if (t == INGOT_DTYPE_FLOAT16)
        for (int64_t i = 0; i < n; i++) d[i] = ig__f16_to_f32(s[i]);
    else
        for (int64_t i = 0; i < n; i++) d[i] = ig__bf16_to_f32(s[i]);
}

static void half_store(ingot_dtype t, const float *s, uint16_t *d, int64_t n)
{
    if (t == INGOT_DTYPE_FLOAT16)
        for (int64_t i = 0; i < n; i++) d[i] = ig__f32_to_f16(s[i]);
    else
        for (int64_t i = 0; i < n; i++) d[i] = ig__f32_to_bf16(s[i]);
}

/* float16/bfloat16: convert chunks to fp32, run the fp32 loop, round back (comparisons write bools). */
static void half_seg(const void *ctx, const void *const *in, const int *st, void *out, int64_t n)
{
    const bctx *c = ctx;
    float ba[CHUNK], bb[CHUNK], bo[CHUNK];
    if (!st[0]) half_load(c->ta, in[0], ba, 1);
    if (!st[1]) half_load(c->ta, in[1], bb, 1);
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        if (st[0]) half_load(c->ta, (const uint16_t *)in[0] + i, ba, m);
        if (st[1]) half_load(c->ta, (const uint16_t *)in[1] + i, bb, m);
        if (c->cmp) {
            c->fn(ba, bb, (uint8_t *)out + i, m, st[0], st[1]);
        } else {
            c->fn(ba, bb, bo, m, st[0], st[1]);
            half_store(c->ta, bo, (uint16_t *)out + i, m);
        }
    }
}

/* Pow with an exponent of another dtype (opset 12+): element by element through double (integer
 * base and exponent: exactly, by squaring). Rare enough not to need a fast path. */
static void pow_mixed_seg(const void *ctx, const void *const *in, const int *st, void *out, int64_t n)
{
    const bctx *c = ctx;
    bool ints = ig__dtype_is_int(c->ta) && ig__dtype_is_int(c->tb);
    for (int64_t i = 0; i < n; i++) {
        if (ints) {
            int64_t x = ig__elem_i64(c->ta, in[0], i * st[0]), e = ig__elem_i64(c->tb, in[1], i * st[1]);
            ig__elem_set_i64(c->ta, out, i, ipow_s(x, e));
        } else {
            double x = ig__elem_f64(c->ta, in[0], i * st[0]), e = ig__elem_f64(c->tb, in[1], i * st[1]);
            ig__elem_set_f64(c->ta, out, i, pow(x, e));
        }
    }
}

#define WHERE_LOOP(T)                                                                          \
    {                                                                                          \
        const T *X = in[1], *Y = in[2];                                                        \
        T *O = out;                                                                            \
        if (st[0] && st[1] && st[2])                                                           \
            for (int64_t i = 0; i < n; i++) O[i] = C[i] ? X[i] : Y[i];                         \
        else                                                                                   \
            for (int64_t i = 0; i < n; i++) O[i] = C[i * st[0]] ? X[i * st[1]] : Y[i * st[2]]; \
        return;                                                                                \
    }

static void where_seg(const void *ctx, const void *const *in, const int *st, void *out, int64_t n)
{
    size_t es = *(const size_t *)ctx;
    const uint8_t *C = in[0];
    switch (es) {
    case 1: WHERE_LOOP(uint8_t)
    case 2: WHERE_LOOP(uint16_t)
    case 4: WHERE_LOOP(uint32_t)
    case 8: WHERE_LOOP(uint64_t)
    default: break;
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* legacy broadcasting (opsets before 7)                                                           */

/* Before opset 7, B broadcast onto A only with broadcast=1, its dims starting at A's `axis` when
 * given (suffix matching otherwise). Returns how many trailing 1s align B that way; -1 when B does not
 * fit. */
static int32_t legacy_pad(const ig_node *n, int32_t rank_a, int32_t rank_b)
{
    if (opset_of(n) >= 7 || ig__attr_int(n, "broadcast", 0) != 1) return 0;
    const ig_attr *ax = ig__node_attr(n, "axis");
    if (!ax || ax->type != IG_ATTR_INT) return 0;
    int64_t axis = ax->i < 0 ? ax->i + rank_a : ax->i;
    int64_t pad = rank_a - axis - rank_b;
    if (axis < 0 || pad < 0) return -1;
    return (int32_t)pad;
}

/* PRelu before opset 7 took a slope of shape [C] per channel of X [N, C, ...]. */
static int32_t prelu_legacy_pad(const ig_node *n, int32_t rank_x, int64_t x_c, int32_t rank_s, int64_t s0)
{
    if (opset_of(n) >= 7 || rank_s != 1 || s0 <= 1 || rank_x < 3 || x_c != s0) return 0;
    return rank_x - 2;
}

static void pad_tensor(ig_tensor *t, int32_t pad)
{
    for (int32_t i = 0; i < pad && t->rank < IG_MAX_RANK; i++) t->dims[t->rank++] = 1;
}

/* ---------------------------------------------------------------------------------------------- */
/* execution                                                                                       */

static ingot_status run_pair(ig_exec *ex, int kind, const ig_tensor *a, const ig_tensor *b, ig_tensor *o)
{
    bctx c = {.ta = a->dtype, .tb = b->dtype, .cmp = kind_is_cmp(kind)};
    seg_fn seg = bin_seg;
    if (kind == B_POW && a->dtype != b->dtype) {
        seg = pow_mixed_seg;
    } else if (is_half(a->dtype)) {
        c.fn = bin_table[INGOT_DTYPE_FLOAT][kind];
        seg = half_seg;
    } else if ((unsigned)a->dtype < INGOT_DTYPE_COUNT) {
        c.fn = bin_table[a->dtype][kind];
    }
    if (seg != pow_mixed_seg && !c.fn)
        return ig__errf(ex->err, INGOT_ERR_MODEL_UNSUPPORTED_OP, "node '%s' (%s): dtype %s is not supported",
                        ig__node_label(ex->node), ex->node->op_type, ingot_dtype_name(a->dtype));
    const ig_tensor *ins[2] = {a, b};
    ew_iter it;
    if (!ew_setup(&it, o, ins, 2, seg, &c))
        return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s' (%s): input shapes do not broadcast to the output",
                        ig__node_label(ex->node), ex->node->op_type);
    ig__parallel_for(ex->pool, o->numel, GRAIN, ew_range, &it);
    return INGOT_OK;
}

static ingot_status binary_exec(ig_exec *ex, int kind)
{
    if (ex->n_in < 2 || !ex->in[0] || !ex->in[1] || !ex->out[0])
        return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s': missing input or output", ig__node_label(ex->node));
    const ig_tensor *a = ex->in[0];
    ig_tensor b = *ex->in[1];
    if (kind == B_PRELU) {
        pad_tensor(
            &b, prelu_legacy_pad(ex->node, a->rank, a->rank > 1 ? a->dims[1] : 0, b.rank, b.rank > 0 ? b.dims[0] : 0));
    } else {
        int32_t pad = legacy_pad(ex->node, a->rank, b.rank);
        if (pad > 0) pad_tensor(&b, pad);
    }
    if (kind == B_MOD && ig__attr_int(ex->node, "fmod", 0) == 1) kind = B_FMOD;
    if ((kind == B_DIV || kind == B_MOD || kind == B_FMOD) && ig__dtype_is_int(b.dtype)) {
        /* integer division by zero has no value: a run error naming the element, as in ONNX Runtime,
         * never a made-up result (the kernels' guard only keeps the division itself from trapping) */
        for (int64_t k = 0; k < b.numel; k++)
            if (ig__elem_i64(b.dtype, b.data, k) == 0)
                return ig__errf(ex->err, INGOT_ERR_INPUT,
                                "node '%s' (%s): integer division by zero (element %" PRId64 " of divisor '%s' is 0)",
                                ig__node_label(ex->node), ex->node->op_type, k,
                                ex->g && ex->node->n_inputs > 1 && ex->node->inputs[1] >= 0
                                    ? ex->g->values[ex->node->inputs[1]].name
                                    : "");
    }
    return run_pair(ex, kind, a, &b, ex->out[0]);
}

/* Max/Min: out = op(in0, in1), then out = op(out, in_k) for each further input. */
static ingot_status minmax_exec(ig_exec *ex, int kind)
{
    ig_tensor *o = ex->out[0];
    if (ex->n_in < 1 || !ex->in[0] || !o)
        return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s': missing input or output", ig__node_label(ex->node));
    for (int32_t k = 0; k < ex->n_in; k++)
        if (!ex->in[k])
            return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s': input %d is empty", ig__node_label(ex->node),
                            (int)k);
    if (ex->n_in == 1) {
        const ig_tensor *x = ex->in[0];
        if (x->numel != o->numel)
            return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s': output size differs from the input",
                            ig__node_label(ex->node));
        if (x->data != o->data) memmove(o->data, x->data, (size_t)x->numel * ingot_dtype_size(x->dtype));
        return INGOT_OK;
    }
    ingot_status st = run_pair(ex, kind, ex->in[0], ex->in[1], o);
    for (int32_t k = 2; k < ex->n_in && st == INGOT_OK; k++) st = run_pair(ex, kind, o, ex->in[k], o);
    return st;
}

static ingot_status where_exec(ig_exec *ex)
{
    if (ex->n_in < 3 || !ex->in[0] || !ex->in[1] || !ex->in[2] || !ex->out[0])
        return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s': missing input or output", ig__node_label(ex->node));
    size_t es = ingot_dtype_size(ex->in[1]->dtype);
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return ig__errf(ex->err, INGOT_ERR_MODEL_UNSUPPORTED_OP, "node '%s' (Where): dtype %s is not supported",
                        ig__node_label(ex->node), ingot_dtype_name(ex->in[1]->dtype));
    const ig_tensor *ins[3] = {ex->in[0], ex->in[1], ex->in[2]};
    ew_iter it;
    if (!ew_setup(&it, ex->out[0], ins, 3, where_seg, &es))
        return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s' (Where): input shapes do not broadcast to the output",
                        ig__node_label(ex->node));
    ig__parallel_for(ex->pool, ex->out[0]->numel, GRAIN, ew_range, &it);
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* inference                                                                                        */

static ingot_status need_inputs(ig_infer *cx, int n)
{
    for (int i = 0; i < n; i++)
        if (!ig__in(cx, i)) return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "input %d is missing", i);
    return INGOT_OK;
}

static ingot_status same_dtype(ig_infer *cx, int i, int j)
{
    ig_value *a = ig__in(cx, i), *b = ig__in(cx, j);
    if (a->dtype == b->dtype) return INGOT_OK;
    return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "inputs %d '%s' (%s) and %d '%s' (%s) must have the same dtype", i,
                    a->name, ingot_dtype_name(a->dtype), j, b->name, ingot_dtype_name(b->dtype));
}

/* Output numel when the output is a 0-D or 1-D tensor of at most IG_MAX_SYMVAL elements, else -1. */
static int32_t small_vector_len(ig_infer *cx)
{
    ig_value *o = ig__out(cx, 0);
    int64_t n;
    if (!o || o->shape.rank > 1 || !ig__shape_numel(&o->shape, &n) || n < 1 || n > IG_MAX_SYMVAL) return -1;
    return (int32_t)n;
}

/* Element values of input i broadcast to len elements (constants or symbolic dims). */
static bool in_vals(ig_infer *cx, int i, int32_t len, ig_dim *out)
{
    ig_dim v[IG_MAX_SYMVAL];
    int32_t n;
    if (!ig__in_dims(cx, i, v, IG_MAX_SYMVAL, &n) || (n != 1 && n != len)) return false;
    for (int32_t k = 0; k < len; k++) out[k] = v[n == 1 ? 0 : k];
    return true;
}

/* Bounds of a dim's value: n*s with s >= 1 lies in [n, inf). */
static int64_t dim_lo(ig_dim d) { return d.n; }
static int64_t dim_hi(ig_dim d) { return ig__dim_known(d) ? d.n : INT64_MAX; }

/* One element of a shape-vector op, symbolic where possible (batch*128/128 = batch). Comparisons use
 * that a symbolic dim n*s (n >= 1) is at least n: Equal(n*s, c) is false for c < n, which keeps
 * the Where(Equal(shape, -1), ones, shape) exporters emit before Expand known. false: not expressible. */
static bool sym_elem(int kind, ig_dim x, ig_dim y, ig_dim *r)
{
    bool both = ig__dim_known(x) && ig__dim_known(y), same = x.sym == y.sym;
    int t = -1; /* comparison result: -1 unknown */
    switch (kind) {
    case B_ADD: return ig__dim_add(x, y, r);
    case B_SUB: return ig__dim_sub(x, y, r);
    case B_MUL: return ig__dim_mul(x, y, r);
    case B_DIV:
        if (both) { /* truncating, as the kernel */
            if (y.n == 0 || (x.n == INT64_MIN && y.n == -1)) return false;
            *r = ig__dim_const(x.n / y.n);
            return true;
        }
        return ig__dim_div(x, y, r);
    case B_MAX:
    case B_MIN: {
        bool x_ge; /* x >= y known? */
        if (same)
            x_ge = x.n >= y.n;
        else if (dim_lo(x) >= dim_hi(y))
            x_ge = true;
        else if (dim_hi(x) <= dim_lo(y))
            x_ge = false;
        else
            return false;
        *r = (kind == B_MAX) == x_ge ? x : y;
        return true;
    }
    case B_EQ:
        if (same)
            t = x.n == y.n;
        else if (dim_hi(x) < dim_lo(y) || dim_hi(y) < dim_lo(x))
            t = 0;
        break;
    case B_GT:
    case B_LT:
    case B_GE:
    case B_LE: {
        ig_dim a = kind == B_GT || kind == B_GE ? x : y, b = kind == B_GT || kind == B_GE ? y : x;
        bool strict = kind == B_GT || kind == B_LT; /* a > b, or a >= b */
        if (same)
            t = strict ? a.n > b.n : a.n >= b.n;
        else if (strict ? dim_lo(a) > dim_hi(b) : dim_lo(a) >= dim_hi(b))
            t = 1;
        else if (strict ? dim_hi(a) <= dim_lo(b) : dim_hi(a) < dim_lo(b))
            t = 0;
        break;
    }
    case B_AND:
        if (both) t = x.n && y.n;
        break;
    case B_OR:
        if (both) t = x.n || y.n;
        break;
    default: break;
    }
    if (t < 0) return false;
    *r = ig__dim_const(t);
    return true;
}

/* Element values of a small 0-D/1-D output computed from its inputs' values (constants or symbolic
 * dims). Any element that cannot be expressed leaves the output without values. */
static ingot_status vector_sym(ig_infer *cx, int kind)
{
    ig_value *o = ig__out(cx, 0);
    if (!o) return INGOT_OK;
    bool int_out = o->dtype == INGOT_DTYPE_INT64 || o->dtype == INGOT_DTYPE_INT32;
    if (!int_out && o->dtype != INGOT_DTYPE_BOOL) return INGOT_OK;
    int32_t len = small_vector_len(cx);
    ig_dim acc[IG_MAX_SYMVAL], v[IG_MAX_SYMVAL];
    if (len < 0 || !in_vals(cx, 0, len, acc)) return INGOT_OK;
    int n = ig__n_in(cx);
    if (kind != B_MAX && kind != B_MIN && kind != B_ADD && n > 2) n = 2; /* Sum folds like Add */
    for (int i = 1; i < n; i++) {
        if (!in_vals(cx, i, len, v)) return INGOT_OK;
        for (int32_t k = 0; k < len; k++)
            if (!sym_elem(kind, acc[k], v[k], &acc[k])) return INGOT_OK;
    }
    for (int32_t k = 0; k < len; k++)
        if (o->dtype == INGOT_DTYPE_INT32 && ig__dim_known(acc[k]) && (acc[k].n < INT32_MIN || acc[k].n > INT32_MAX))
            return INGOT_OK;
    return ig__set_out_sym(cx, 0, acc, len);
}

static ingot_status where_sym(ig_infer *cx)
{
    ig_value *o = ig__out(cx, 0);
    if (!o || !(ig__dtype_is_int(o->dtype) || o->dtype == INGOT_DTYPE_BOOL)) return INGOT_OK;
    int32_t len = small_vector_len(cx);
    ig_dim c[IG_MAX_SYMVAL], x[IG_MAX_SYMVAL], y[IG_MAX_SYMVAL], r[IG_MAX_SYMVAL];
    if (len < 0 || !in_vals(cx, 0, len, c)) return INGOT_OK;
    bool have_x = in_vals(cx, 1, len, x), have_y = in_vals(cx, 2, len, y);
    for (int32_t k = 0; k < len; k++) {
        if (!ig__dim_known(c[k])) return INGOT_OK;
        if (c[k].n ? !have_x : !have_y) return INGOT_OK;
        r[k] = c[k].n ? x[k] : y[k];
    }
    return ig__set_out_sym(cx, 0, r, len);
}

/* The common part: dtypes, legacy alignment, broadcast shape, output dtype. */
static ingot_status broadcast_infer(ig_infer *cx, uint32_t types, ingot_dtype out_t, bool same_types)
{
    ingot_status st;
    if ((st = need_inputs(cx, 2)) != INGOT_OK) return st;
    if ((st = ig__check_dtype(cx, 0, types)) != INGOT_OK) return st;
    if ((st = ig__check_dtype(cx, 1, types)) != INGOT_OK) return st;
    if (same_types && (st = same_dtype(cx, 0, 1)) != INGOT_OK) return st;
    ig_value *a = ig__in(cx, 0), *b = ig__in(cx, 1);
    ig_shape bs = b->shape, out;
    if (a->shape.rank >= 0 && bs.rank >= 0) {
        int32_t pad = legacy_pad(cx->node, a->shape.rank, bs.rank);
        if (pad < 0)
            return ig__fail_shape(cx,
                                  "attribute axis=%" PRId64 " does not fit input 1 (rank %d) into input 0 "
                                  "(rank %d)",
                                  ig__attr_int(cx->node, "axis", 0), (int)bs.rank, (int)a->shape.rank);
        for (int32_t i = 0; i < pad && bs.rank < IG_MAX_RANK; i++) bs.d[bs.rank++] = ig__dim_const(1);
    }
    if ((st = ig__broadcast(cx, &a->shape, &bs, &out)) != INGOT_OK) return st;
    return ig__set_out(cx, 0, out_t == INGOT_DTYPE_UNDEFINED ? a->dtype : out_t, &out);
}

static ingot_status arith_infer(ig_infer *cx, int kind)
{
    ingot_status st = broadcast_infer(cx, IG_TS_NUM, INGOT_DTYPE_UNDEFINED, true);
    if (st != INGOT_OK) return st;
    return vector_sym(cx, kind);
}

static ingot_status pow_infer(ig_infer *cx) { return broadcast_infer(cx, IG_TS_NUM, INGOT_DTYPE_UNDEFINED, false); }

static ingot_status mod_infer(ig_infer *cx)
{
    int64_t f = ig__attr_int(cx->node, "fmod", 0);
    if (f != 0 && f != 1) return ig__unsupported(cx, "attribute fmod=%" PRId64 " is not supported (0 or 1)", f);
    return broadcast_infer(cx, IG_TS_NUM, INGOT_DTYPE_UNDEFINED, true);
}

static ingot_status compare_infer(ig_infer *cx, int kind)
{
    ingot_status st = broadcast_infer(cx, kind == B_EQ ? IG_TS_ALL : IG_TS_NUM, INGOT_DTYPE_BOOL, true);
    if (st != INGOT_OK) return st;
    return vector_sym(cx, kind);
}

static ingot_status logic_infer(ig_infer *cx, int kind)
{
    ingot_status st = broadcast_infer(cx, IG_T(BOOL), INGOT_DTYPE_BOOL, true);
    if (st != INGOT_OK) return st;
    return vector_sym(cx, kind);
}

static ingot_status minmax_infer(ig_infer *cx, int kind)
{
    ingot_status st;
    int n = ig__n_in(cx);
    if (n < 1) return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "needs at least one input");
    if ((st = need_inputs(cx, n)) != INGOT_OK) return st;
    ig_shape out = ig__in(cx, 0)->shape;
    for (int i = 0; i < n; i++) {
        if ((st = ig__check_dtype(cx, i, IG_TS_NUM)) != INGOT_OK) return st;
        if (i == 0) continue;
        if ((st = same_dtype(cx, 0, i)) != INGOT_OK) return st;
        ig_shape prev = out;
        if ((st = ig__broadcast(cx, &prev, &ig__in(cx, i)->shape, &out)) != INGOT_OK) return st;
    }
    if ((st = ig__set_out(cx, 0, ig__in(cx, 0)->dtype, &out)) != INGOT_OK) return st;
    return vector_sym(cx, kind);
}

/* PRelu: the slope broadcasts to X (unidirectionally); the output has X's shape. */
static ingot_status prelu_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = need_inputs(cx, 2)) != INGOT_OK) return st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_NUM)) != INGOT_OK) return st;
    if ((st = same_dtype(cx, 0, 1)) != INGOT_OK) return st;
    ig_value *x = ig__in(cx, 0), *s = ig__in(cx, 1);
    if (x->shape.rank >= 0 && s->shape.rank >= 0) {
        ig_shape ss = s->shape;
        int64_t xc = x->shape.rank > 1 && ig__dim_known(x->shape.d[1]) ? x->shape.d[1].n : 0;
        if (x->shape.rank > 1 && !ig__dim_known(x->shape.d[1]) && ss.rank == 1) xc = ss.d[0].n;
        int32_t pad = prelu_legacy_pad(cx->node, x->shape.rank, xc, ss.rank,
                                       ss.rank == 1 && ig__dim_known(ss.d[0]) ? ss.d[0].n : 0);
        for (int32_t i = 0; i < pad && ss.rank < IG_MAX_RANK; i++) ss.d[ss.rank++] = ig__dim_const(1);
        bool ok = ss.rank <= x->shape.rank;
        for (int32_t i = 0; ok && i < ss.rank; i++) {
            ig_dim sd = ss.d[i], xd = x->shape.d[x->shape.rank - ss.rank + i];
            if (ig__dim_known(sd) && sd.n == 1) continue;
            if (ig__dim_eq(sd, xd) || !ig__dim_known(sd) || !ig__dim_known(xd)) continue;
            ok = false;
        }
        if (!ok) {
            char a[256], b[256];
            return ig__fail_shape(cx, "slope %s does not broadcast to input %s",
                                  ig__shape_str(cx->g, &s->shape, b, sizeof b),
                                  ig__shape_str(cx->g, &x->shape, a, sizeof a));
        }
    }
    return ig__set_out(cx, 0, x->dtype, &x->shape);
}

static ingot_status where_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = need_inputs(cx, 3)) != INGOT_OK) return st;
    if ((st = ig__check_dtype(cx, 0, IG_T(BOOL))) != INGOT_OK) return st;
    if ((st = ig__check_dtype(cx, 1, IG_TS_ALL)) != INGOT_OK) return st;
    if ((st = same_dtype(cx, 1, 2)) != INGOT_OK) return st;
    ig_shape t, out;
    if ((st = ig__broadcast(cx, &ig__in(cx, 0)->shape, &ig__in(cx, 1)->shape, &t)) != INGOT_OK) return st;
    if ((st = ig__broadcast(cx, &t, &ig__in(cx, 2)->shape, &out)) != INGOT_OK) return st;
    if ((st = ig__set_out(cx, 0, ig__in(cx, 1)->dtype, &out)) != INGOT_OK) return st;
    return where_sym(cx);
}

/* Max/Min: one comparison per output element for each input after the first. */
static double minmax_flops(const ig_graph *g, const ig_node *n)
{
    if (n->n_outputs < 1 || n->outputs[0] < 0) return 0;
    int64_t numel;
    if (!ig__shape_numel(&g->values[n->outputs[0]].shape, &numel)) return 0;
    int32_t nin = 0;
    for (int32_t i = 0; i < n->n_inputs; i++) nin += n->inputs[i] >= 0;
    return nin > 1 ? (double)numel * (nin - 1) : 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* descriptors                                                                                      */

#define BIN_DEF(cname, Name, since_, flags_, infer_fn, kind)                       \
    static ingot_status cname##_cpu(ig_exec *ex) { return binary_exec(ex, kind); } \
    const ig_op_def ig__op_##cname = {.name = Name,                                \
                                      .since = since_,                             \
                                      .min_in = 2,                                 \
                                      .max_in = 2,                                 \
                                      .min_out = 1,                                \
                                      .max_out = 1,                                \
                                      .flags = flags_,                             \
                                      .infer = infer_fn,                           \
                                      .cpu = cname##_cpu};

#define ARITH_DEF(cname, Name, kind)                                                  \
    static ingot_status cname##_infer(ig_infer *cx) { return arith_infer(cx, kind); } \
    BIN_DEF(cname, Name, 1, IG_OP_INPLACE, cname##_infer, kind)

ARITH_DEF(add, "Add", B_ADD)
ARITH_DEF(sub, "Sub", B_SUB)
ARITH_DEF(mul, "Mul", B_MUL)
ARITH_DEF(div, "Div", B_DIV)
BIN_DEF(pow, "Pow", 1, IG_OP_INPLACE, pow_infer, B_POW)
BIN_DEF(mod, "Mod", 10, IG_OP_INPLACE, mod_infer, B_MOD)
BIN_DEF(prelu, "PRelu", 1, IG_OP_INPLACE, prelu_infer, B_PRELU)
#define CMP_DEF(cname, Name, since_, flags_, infer_fn, kind)                       \
    static ingot_status cname##_infer(ig_infer *cx) { return infer_fn(cx, kind); } \
    BIN_DEF(cname, Name, since_, flags_, cname##_infer, kind)

CMP_DEF(equal, "Equal", 1, 0, compare_infer, B_EQ)
CMP_DEF(greater, "Greater", 1, 0, compare_infer, B_GT)
CMP_DEF(less, "Less", 1, 0, compare_infer, B_LT)
CMP_DEF(greater_or_equal, "GreaterOrEqual", 12, 0, compare_infer, B_GE)
CMP_DEF(less_or_equal, "LessOrEqual", 12, 0, compare_infer, B_LE)
CMP_DEF(and, "And", 1, IG_OP_INPLACE, logic_infer, B_AND)
CMP_DEF(or, "Or", 1, IG_OP_INPLACE, logic_infer, B_OR)

static ingot_status max_infer(ig_infer *cx) { return minmax_infer(cx, B_MAX); }
static ingot_status min_infer(ig_infer *cx) { return minmax_infer(cx, B_MIN); }
static ingot_status max_cpu(ig_exec *ex) { return minmax_exec(ex, B_MAX); }
static ingot_status min_cpu(ig_exec *ex) { return minmax_exec(ex, B_MIN); }
const ig_op_def ig__op_max = {.name = "Max",
                              .since = 1,
                              .min_in = 1,
                              .max_in = -1,
                              .min_out = 1,
                              .max_out = 1,
                              .flags = IG_OP_INPLACE,
                              .infer = max_infer,
                              .cpu = max_cpu,
                              .flops = minmax_flops};
const ig_op_def ig__op_min = {.name = "Min",
                              .since = 1,
                              .min_in = 1,
                              .max_in = -1,
                              .min_out = 1,
                              .max_out = 1,
                              .flags = IG_OP_INPLACE,
                              .infer = min_infer,
                              .cpu = min_cpu,
                              .flops = minmax_flops};

/* Sum: variadic Add over broadcast inputs (ResNet and ShuffleNet exports of opset <= 7 use it). */
static ingot_status sum_infer(ig_infer *cx) { return minmax_infer(cx, B_ADD); }
static ingot_status sum_cpu(ig_exec *ex) { return minmax_exec(ex, B_ADD); }
const ig_op_def ig__op_sum = {.name = "Sum",
                              .since = 1,
                              .min_in = 1,
                              .max_in = -1,
                              .min_out = 1,
                              .max_out = 1,
                              .flags = IG_OP_INPLACE,
                              .infer = sum_infer,
                              .cpu = sum_cpu,
                              .flops = minmax_flops};

static ingot_status where_cpu(ig_exec *ex) { return where_exec(ex); }
const ig_op_def ig__op_where = {.name = "Where",
                                .since = 9,
                                .min_in = 3,
                                .max_in = 3,
                                .min_out = 1,
                                .max_out = 1,
                                .infer = where_infer,
                                .cpu = where_cpu};
