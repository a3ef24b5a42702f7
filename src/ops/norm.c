/*
 * norm.c -- normalisation ops: BatchNormalization (inference), InstanceNormalization,
 * LayerNormalization, Softmax and LogSoftmax.
 *
 * Every kernel works on rows: a row is the set of elements one statistic (or one softmax) covers.
 * Rows are independent, so the kernels split rows across the thread pool. Statistics use one pass
 * over the row with double accumulators and a shift by the row's first element (the "shifted data"
 * variance, which does not lose precision when the mean is large against the spread); softmax
 * subtracts the row maximum before exponentiating.
 *
 * Arithmetic is fp32 for float32/float16/bfloat16 tensors and double for float64 ones. The kernels
 * are therefore written once over a real type R and instantiated twice: the file includes itself
 * with NORM_R defined (the part between "#else" and the final "#endif" below).
 */
#ifndef NORM_R

#include "op.h"
#include "ops_internal.h"

#include <inttypes.h>
#include <math.h>

/* ---- element access: the storage type is decided at run time, the arithmetic type at compile time */

static inline float ld_f32(ingot_dtype t, const void *p, int64_t i)
{
    if (t == INGOT_DTYPE_FLOAT) return ((const float *)p)[i];
    if (t == INGOT_DTYPE_FLOAT16) return ig__f16_to_f32(((const uint16_t *)p)[i]);
    return ig__bf16_to_f32(((const uint16_t *)p)[i]);
}

static inline void st_f32(ingot_dtype t, void *p, int64_t i, float v)
{
    if (t == INGOT_DTYPE_FLOAT)
        ((float *)p)[i] = v;
    else if (t == INGOT_DTYPE_FLOAT16)
        ((uint16_t *)p)[i] = ig__f32_to_f16(v);
    else
        ((uint16_t *)p)[i] = ig__f32_to_bf16(v);
}

static inline double ld_f64(ingot_dtype t, const void *p, int64_t i)
{
    (void)t;
    return ((const double *)p)[i];
}

static inline void st_f64(ingot_dtype t, void *p, int64_t i, double v)
{
    (void)t;
    ((double *)p)[i] = v;
}

/* What a normalisation needs of a row: its mean and 1/sqrt(var + eps). */
typedef struct row_stats {
    double mean, inv_std;
} row_stats;

/* Rows per parallel chunk so that a chunk holds at least ~32K elements. */
static int64_t row_grain(int64_t row_len)
{
    int64_t g = 32768 / (row_len > 0 ? row_len : 1);
    return g < 1 ? 1 : g;
}

/* Argument blocks shared by both instantiations. */
typedef struct softmax_args {
    const void *x;
    void *y;
    ingot_dtype dt;
    int64_t n, inner, n_blocks; /* row length, stride between row elements, inner blocks per outer */
    bool log;
} softmax_args;

typedef struct layernorm_args {
    const void *x;
    void *y;
    ingot_dtype dt;
    int64_t n;                /* row length (product of the normalised dims) */
    const void *scale, *bias; /* R arrays of n elements (expanded from the broadcast inputs); bias may be NULL */
    double eps;
    void *mean, *inv_std; /* optional outputs, one element per row */
    ingot_dtype stat_dt;
} layernorm_args;

typedef struct instnorm_args {
    const void *x;
    void *y;
    ingot_dtype dt;
    int64_t n, channels;      /* row length (spatial size), C */
    const void *scale, *bias; /* R arrays of C elements */
    double eps;
} instnorm_args;

typedef struct batchnorm_args {
    const void *x;
    void *y;
    ingot_dtype dt;
    int64_t n, channels;          /* row length (spatial size), C */
    bool per_activation;          /* spatial=0 (opset < 9): parameters are [C, D1, ...], one per row element */
    const void *mean, *mul, *add; /* R arrays: y = (x - mean) * mul + add */
} batchnorm_args;

#define SM_BLOCK 64 /* inner positions handled together when the softmax axis is not the last */

#if defined(__GNUC__)
#define NORM_INLINE inline __attribute__((always_inline))
#else
#define NORM_INLINE inline
#endif

#define NORM_R   float
#define NORM_SFX f32
#define NORM_EXP expf
#include "norm.c"
#undef NORM_R
#undef NORM_SFX
#undef NORM_EXP

#define NORM_R   double
#define NORM_SFX f64
#define NORM_EXP exp
#include "norm.c"
#undef NORM_R
#undef NORM_SFX
#undef NORM_EXP

/* The fp32 row kernel of Softmax/LogSoftmax, for MaskedSoftmax and Attention (fused_attention.c). */
void ig__softmax_row_f32(const float *x, float *y, int64_t n, bool log)
{
    softmax_row_f32(INGOT_DTYPE_FLOAT, x, y, 0, n, log);
}

/* ---- shared helpers ---- */

static double value_numel(const ig_value *v)
{
    int64_t n = 0;
    return v && ig__shape_numel(&v->shape, &n) ? (double)n : 0;
}

static int64_t prod(const int64_t *d, int32_t from, int32_t to)
{
    int64_t p = 1;
    for (int32_t i = from; i < to; i++) p *= d[i];
    return p;
}

static bool is_f64(ingot_dtype t) { return t == INGOT_DTYPE_DOUBLE; }

/* Fail when input i is present with a concrete shape different from `want` (rank and known dims). */
static ingot_status check_param_shape(ig_infer *cx, int i, const char *what, const ig_shape *want)
{
    const ig_value *v = ig__in(cx, i);
    if (!v || v->shape.rank < 0 || want->rank < 0) return INGOT_OK;
    bool ok = v->shape.rank == want->rank;
    for (int32_t k = 0; ok && k < want->rank; k++) {
        ig_dim a = v->shape.d[k], b = want->d[k];
        if (ig__dim_known(a) && ig__dim_known(b) && a.n != b.n) ok = false;
    }
    if (ok) return INGOT_OK;
    char s1[256], s2[256];
    return ig__fail_shape(cx, "input %d '%s' (%s) has shape %s, expected %s", i, v->name, what,
                          ig__shape_str(cx->g, &v->shape, s1, sizeof s1), ig__shape_str(cx->g, want, s2, sizeof s2));
}

/* Copy n elements of a float-family tensor into an R array (float or double as `dbl` says). */
static void expand_real(void *dst, bool dbl, const ig_tensor *t, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double v = ig__elem_f64(t->dtype, t->data, i);
        if (dbl)
            ((double *)dst)[i] = v;
        else
            ((float *)dst)[i] = (float)v;
    }
}

/* ---- Softmax, LogSoftmax ---- */

/* opset < 13: the input is coerced to 2-D [prod(d[:axis]), prod(d[axis:])] and each row normalised;
 * opset >= 13: normalised along the single axis (default -1). */
static int64_t softmax_default_axis(const ig_node *n) { return n->opset >= 13 ? -1 : 1; }

static ingot_status softmax_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_FLOAT)) != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0);
    int64_t axis = ig__attr_int(cx->node, "axis", softmax_default_axis(cx->node));
    if (x->shape.rank >= 0) {
        int32_t a;
        if ((st = ig__norm_axis(cx, axis, x->shape.rank, "attribute 'axis'", &a)) != INGOT_OK) return st;
    }
    return ig__set_out(cx, 0, x->dtype, &x->shape);
}

static ingot_status softmax_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    int64_t axis = ig__attr_int(ex->node, "axis", softmax_default_axis(ex->node));
    if (axis < -x->rank || axis >= x->rank)
        return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE, "node '%s' (%s): axis %" PRId64 " is out of range for rank %d",
                        ig__node_label(ex->node), ex->node->op_type, axis, (int)x->rank);
    int32_t a = (int32_t)(axis < 0 ? axis + x->rank : axis);
    softmax_args sa = {.x = x->data, .y = y->data, .dt = x->dtype, .log = !strcmp(ex->node->op_type, "LogSoftmax")};
    int64_t outer = prod(x->dims, 0, a);
    if (ex->node->opset < 13) {
        sa.n = prod(x->dims, a, x->rank);
        sa.inner = 1;
    } else {
        sa.n = x->dims[a];
        sa.inner = prod(x->dims, a + 1, x->rank);
    }
    if (x->numel == 0) return INGOT_OK;
    bool dbl = is_f64(x->dtype);
    if (sa.inner == 1) {
        ig__parallel_for(ex->pool, outer, row_grain(sa.n), dbl ? softmax_rows_f64 : softmax_rows_f32, &sa);
    } else {
        sa.n_blocks = (sa.inner + SM_BLOCK - 1) / SM_BLOCK;
        int64_t block = sa.n * (sa.inner < SM_BLOCK ? sa.inner : SM_BLOCK);
        ig__parallel_for(ex->pool, outer * sa.n_blocks, row_grain(block),
                         dbl ? softmax_strided_f64 : softmax_strided_f32, &sa);
    }
    return INGOT_OK;
}

/* max, subtract, exp, sum, divide (or log): five operations per element. */
static double softmax_flops(const ig_graph *g, const ig_node *n) { return 5.0 * value_numel(ig__node_input(g, n, 0)); }

const ig_op_def ig__op_softmax = {
    .name = "Softmax",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = softmax_infer,
    .cpu = softmax_cpu,
    .flops = softmax_flops,
};

const ig_op_def ig__op_log_softmax = {
    .name = "LogSoftmax",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = softmax_infer,
    .cpu = softmax_cpu,
    .flops = softmax_flops,
};

/* ---- LayerNormalization ---- */

static ingot_status stash_dtype(ig_infer *cx, ingot_dtype *out)
{
    int64_t s = ig__attr_int(cx->node, "stash_type", 1);
    if (s == INGOT_DTYPE_FLOAT || s == INGOT_DTYPE_BFLOAT16) {
        *out = (ingot_dtype)s;
        return INGOT_OK;
    }
    return ig__unsupported(cx, "attribute 'stash_type' = %" PRId64 " is not supported (1 = float or 16 = bfloat16)", s);
}

static ingot_status layernorm_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_FLOAT)) != INGOT_OK) return st;
    if ((st = ig__check_dtype(cx, 1, IG_TS_FLOAT)) != INGOT_OK) return st;
    if ((st = ig__check_dtype(cx, 2, IG_TS_FLOAT)) != INGOT_OK) return st;
    ingot_dtype sdt = INGOT_DTYPE_FLOAT;
    if ((st = stash_dtype(cx, &sdt)) != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0);
    ig_shape stat = {.rank = -1};
    if (x->shape.rank >= 0) {
        int32_t r = x->shape.rank, a;
        if ((st = ig__norm_axis(cx, ig__attr_int(cx->node, "axis", -1), r, "attribute 'axis'", &a)) != INGOT_OK)
            return st;
        /* Scale and B broadcast (numpy, one way) to X's normalised dims X[axis:]. */
        for (int i = 1; i <= 2; i++) {
            const ig_value *p = ig__in(cx, i);
            if (!p || p->shape.rank < 0) continue;
            bool ok = p->shape.rank <= r - a;
            for (int32_t k = 0; ok && k < p->shape.rank; k++) {
                ig_dim pd = p->shape.d[k], xd = x->shape.d[r - p->shape.rank + k];
                if (ig__dim_known(pd) && pd.n != 1 && !ig__dim_eq(pd, xd) && !(!ig__dim_known(xd) && ig__dim_known(pd)))
                    ok = false;
            }
            if (!ok) {
                char s1[256], s2[256];
                return ig__fail_shape(cx,
                                      "input %d '%s' has shape %s, which does not broadcast to the normalised "
                                      "dims of X %s from axis %d",
                                      i, p->name, ig__shape_str(cx->g, &p->shape, s1, sizeof s1),
                                      ig__shape_str(cx->g, &x->shape, s2, sizeof s2), (int)a);
            }
        }
        stat = x->shape;
        for (int32_t k = a; k < r; k++) stat.d[k] = ig__dim_const(1);
    }
    if ((st = ig__set_out(cx, 0, x->dtype, &x->shape)) != INGOT_OK) return st;
    if ((st = ig__set_out(cx, 1, sdt, &stat)) != INGOT_OK) return st;
    return ig__set_out(cx, 2, sdt, &stat);
}

static int32_t layernorm_axis(const ig_node *n, int32_t rank)
{
    int64_t a = ig__attr_int(n, "axis", -1);
    return (int32_t)(a < 0 ? a + rank : a);
}

static size_t layernorm_scratch(const ig_graph *g, const ig_node *n)
{
    const ig_value *x = ig__node_input(g, n, 0);
    if (!x || x->shape.rank < 0) return 0;
    int32_t a = layernorm_axis(n, x->shape.rank);
    int64_t len = 1;
    for (int32_t k = a; k < x->shape.rank && k >= 0; k++) len *= x->shape.d[k].n;
    return 2 * (size_t)len * sizeof(double);
}

/* Expand a parameter broadcast to dims[a:] into a dense R array of len elements. */
static void expand_broadcast(void *dst, bool dbl, const ig_tensor *p, const int64_t *dims, int32_t a, int32_t r,
                             int64_t len)
{
    if (p->numel == len) {
        expand_real(dst, dbl, p, len);
        return;
    }
    ig_tensor sub = {.rank = r - a};
    for (int32_t k = 0; k < sub.rank; k++) sub.dims[k] = dims[a + k];
    int64_t strides[IG_MAX_RANK], idx[IG_MAX_RANK] = {0};
    ig__broadcast_strides(p, sub.rank, sub.dims, strides);
    int64_t off = 0;
    for (int64_t i = 0; i < len; i++) {
        double v = ig__elem_f64(p->dtype, p->data, off);
        if (dbl)
            ((double *)dst)[i] = v;
        else
            ((float *)dst)[i] = (float)v;
        for (int32_t k = sub.rank - 1; k >= 0; k--) { /* odometer */
            off += strides[k];
            if (++idx[k] < sub.dims[k]) break;
            off -= strides[k] * sub.dims[k];
            idx[k] = 0;
        }
    }
}

static ingot_status layernorm_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0], *scale = ex->in[1], *bias = ex->n_in > 2 ? ex->in[2] : NULL;
    int32_t a = layernorm_axis(ex->node, x->rank);
    if (a < 0 || a >= x->rank)
        return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE, "node '%s' (%s): axis is out of range for rank %d",
                        ig__node_label(ex->node), ex->node->op_type, (int)x->rank);
    int64_t rows = prod(x->dims, 0, a), len = prod(x->dims, a, x->rank);
    bool dbl = is_f64(x->dtype);
    size_t es = dbl ? sizeof(double) : sizeof(float);
    if (ex->scratch_bytes < 2 * (size_t)len * es)
        return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s' (%s): scratch too small", ig__node_label(ex->node),
                        ex->node->op_type);
    unsigned char *buf = ex->scratch;
    expand_broadcast(buf, dbl, scale, x->dims, a, x->rank, len);
    if (bias) expand_broadcast(buf + (size_t)len * es, dbl, bias, x->dims, a, x->rank, len);
    ig_tensor *mean = ex->n_out > 1 ? ex->out[1] : NULL, *inv = ex->n_out > 2 ? ex->out[2] : NULL;
    layernorm_args la = {
        .x = x->data,
        .y = ex->out[0]->data,
        .dt = x->dtype,
        .n = len,
        .scale = buf,
        .bias = bias ? buf + (size_t)len * es : NULL,
        .eps = ig__attr_float(ex->node, "epsilon", 1e-5f),
        .mean = mean ? mean->data : NULL,
        .inv_std = inv ? inv->data : NULL,
        .stat_dt = mean  ? mean->dtype
                   : inv ? inv->dtype
                         : INGOT_DTYPE_FLOAT,
    };
    ig__parallel_for(ex->pool, rows, row_grain(len), dbl ? layernorm_rows_f64 : layernorm_rows_f32, &la);
    return INGOT_OK;
}

/* mean (1 add), variance (subtract, square, add), normalise (subtract, multiply), scale and bias
 * (multiply, add): eight operations per element. */
static double norm8_flops(const ig_graph *g, const ig_node *n) { return 8.0 * value_numel(ig__node_input(g, n, 0)); }

const ig_op_def ig__op_layer_normalization = {
    .name = "LayerNormalization",
    .since = 17,
    .min_in = 2,
    .max_in = 3,
    .min_out = 1,
    .max_out = 3,
    .infer = layernorm_infer,
    .cpu = layernorm_cpu,
    .cpu_scratch = layernorm_scratch,
    .flops = norm8_flops,
};

/* ---- InstanceNormalization ---- */

static ingot_status instnorm_infer(ig_infer *cx)
{
    ingot_status st;
    for (int i = 0; i < 3; i++)
        if ((st = ig__check_dtype(cx, i, IG_TS_FLOAT)) != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0);
    if (x->shape.rank >= 0) {
        if (x->shape.rank < 2) {
            char s[256];
            return ig__fail_shape(cx, "input '%s' has shape %s; expected [N, C, ...] (rank >= 2)", x->name,
                                  ig__shape_str(cx->g, &x->shape, s, sizeof s));
        }
        ig_shape c = {.rank = 1, .d = {x->shape.d[1]}};
        if ((st = check_param_shape(cx, 1, "scale", &c)) != INGOT_OK) return st;
        if ((st = check_param_shape(cx, 2, "B", &c)) != INGOT_OK) return st;
    }
    return ig__set_out(cx, 0, x->dtype, &x->shape);
}

static size_t params_scratch(const ig_graph *g, const ig_node *n, int n_arrays, bool per_activation)
{
    const ig_value *x = ig__node_input(g, n, 0);
    if (!x || x->shape.rank < 1) return 0;
    int64_t c = x->shape.rank >= 2 ? x->shape.d[1].n : 1;
    if (per_activation)
        for (int32_t k = 2; k < x->shape.rank; k++) c *= x->shape.d[k].n;
    return (size_t)n_arrays * (size_t)c * sizeof(double);
}

static size_t instnorm_scratch(const ig_graph *g, const ig_node *n) { return params_scratch(g, n, 2, false); }

static ingot_status instnorm_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    if (x->rank < 2)
        return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE, "node '%s' (%s): input must be [N, C, ...]",
                        ig__node_label(ex->node), ex->node->op_type);
    int64_t c = x->dims[1], rows = x->dims[0] * c, len = prod(x->dims, 2, x->rank);
    bool dbl = is_f64(x->dtype);
    size_t es = dbl ? sizeof(double) : sizeof(float);
    if (ex->in[1]->numel != c || ex->in[2]->numel != c)
        return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE,
                        "node '%s' (%s): scale and B must have C = %" PRId64 " elements", ig__node_label(ex->node),
                        ex->node->op_type, c);
    if (ex->scratch_bytes < 2 * (size_t)c * es)
        return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s' (%s): scratch too small", ig__node_label(ex->node),
                        ex->node->op_type);
    unsigned char *buf = ex->scratch;
    expand_real(buf, dbl, ex->in[1], c);
    expand_real(buf + (size_t)c * es, dbl, ex->in[2], c);
    instnorm_args ia = {.x = x->data,
                        .y = ex->out[0]->data,
                        .dt = x->dtype,
                        .n = len,
                        .channels = c,
                        .scale = buf,
                        .bias = buf + (size_t)c * es,
                        .eps = ig__attr_float(ex->node, "epsilon", 1e-5f)};
    ig__parallel_for(ex->pool, rows, row_grain(len), dbl ? instnorm_rows_f64 : instnorm_rows_f32, &ia);
    return INGOT_OK;
}

const ig_op_def ig__op_instance_normalization = {
    .name = "InstanceNormalization",
    .since = 1,
    .min_in = 3,
    .max_in = 3,
    .min_out = 1,
    .max_out = 1,
    .infer = instnorm_infer,
    .cpu = instnorm_cpu,
    .cpu_scratch = instnorm_scratch,
    .flops = norm8_flops,
};

/* ---- LRN: local response normalisation across channels (AlexNet, Inception v1, ZFNet) ---- */

static ingot_status lrn_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_FLOAT)) != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0);
    int64_t size = ig__attr_int(cx->node, "size", 0);
    if (size < 1) return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "attribute 'size' must be a positive integer");
    /* as ONNX Runtime: a window centred on the channel, so an odd size; and one a real channel count
     * can have (the window sums and alpha / size stay exact) */
    if (size % 2 == 0) return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "attribute 'size' must be odd, not %" PRId64, size);
    if (size > INT32_MAX)
        return ig__fail(cx, INGOT_ERR_MODEL_UNSUPPORTED_OP, "attribute 'size' %" PRId64 " is too large (at most %d)",
                        size, INT32_MAX);
    if (x->shape.rank >= 0 && x->shape.rank < 3) {
        char sh[256];
        return ig__fail_shape(cx, "input '%s' has shape %s; expected [N, C, D1, ...]", x->name,
                              ig__shape_str(cx->g, &x->shape, sh, sizeof sh));
    }
    return ig__set_out(cx, 0, x->dtype, &x->shape);
}

typedef struct lrn_args {
    const void *x;
    void *y;
    ingot_dtype dt;
    int64_t channels, spatial, lo, hi; /* window [c - lo, c + hi] */
    double alpha_over_size, beta, bias;
} lrn_args;

/* One (n, spatial position) column per index: sum of squares over the channel window. */
static void lrn_cols(void *arg, int64_t b, int64_t e)
{
    const lrn_args *a = arg;
    for (int64_t col = b; col < e; col++) {
        int64_t n = col / a->spatial, p = col % a->spatial, base = n * a->channels * a->spatial + p;
        for (int64_t c = 0; c < a->channels; c++) {
            double sq = 0;
            int64_t c0 = c - a->lo < 0 ? 0 : c - a->lo, c1 = c + a->hi >= a->channels ? a->channels - 1 : c + a->hi;
            for (int64_t k = c0; k <= c1; k++) {
                double v = a->dt == INGOT_DTYPE_DOUBLE ? ld_f64(a->dt, a->x, base + k * a->spatial)
                                                       : ld_f32(a->dt, a->x, base + k * a->spatial);
                sq += v * v;
            }
            int64_t i = base + c * a->spatial;
            double xv = a->dt == INGOT_DTYPE_DOUBLE ? ld_f64(a->dt, a->x, i) : ld_f32(a->dt, a->x, i);
            double y = xv / pow(a->bias + a->alpha_over_size * sq, a->beta);
            if (a->dt == INGOT_DTYPE_DOUBLE)
                st_f64(a->dt, a->y, i, y);
            else
                st_f32(a->dt, a->y, i, (float)y);
        }
    }
}

static ingot_status lrn_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    int64_t size = ig__attr_int(ex->node, "size", 1);
    lrn_args a = {.x = x->data,
                  .y = ex->out[0]->data,
                  .dt = x->dtype,
                  .channels = x->dims[1],
                  .spatial = prod(x->dims, 2, x->rank),
                  .lo = (size - 1) / 2,
                  .hi = size / 2,
                  .alpha_over_size = ig__attr_float(ex->node, "alpha", 1e-4f) / (double)size,
                  .beta = ig__attr_float(ex->node, "beta", 0.75f),
                  .bias = ig__attr_float(ex->node, "bias", 1.0f)};
    int64_t cols = x->dims[0] * a.spatial;
    ig__parallel_for(ex->pool, cols, 64, lrn_cols, &a);
    return INGOT_OK;
}

/* per element: size multiply-adds for the window, then a power and a division */
static double lrn_flops(const ig_graph *g, const ig_node *n)
{
    return (2.0 * (double)ig__attr_int(n, "size", 1) + 3) * value_numel(ig__node_input(g, n, 0));
}

const ig_op_def ig__op_lrn = {
    .name = "LRN",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = lrn_infer,
    .cpu = lrn_cpu,
    .flops = lrn_flops,
};

/* ---- BatchNormalization (inference only) ---- */

/* spatial=0 exists before opset 9 only: then scale/B/mean/var are [C, D1, ..., Dn]. */
static bool bn_per_activation(const ig_node *n) { return n->opset < 9 && ig__attr_int(n, "spatial", 1) == 0; }

static ingot_status batchnorm_infer(ig_infer *cx)
{
    ingot_status st;
    for (int i = 0; i < 5; i++)
        if ((st = ig__check_dtype(cx, i, IG_TS_FLOAT)) != INGOT_OK) return st;
    /* training mode normalises with the batch's own statistics (norm_more.c): on a constant (weight
     * standardisation) it folds at build */
    if (cx->node->opset >= 14 && ig__attr_int(cx->node, "training_mode", 0) != 0) return ig__bn_training_infer(cx);
    for (int i = 1; i < cx->node->n_outputs; i++)
        if (ig__out(cx, i))
            return ig__unsupported(cx,
                                   "output %d '%s' (running or saved statistics) is only produced in training "
                                   "mode, which ingot does not support; only output 0 (Y) may be used",
                                   i, ig__out(cx, i)->name);
    const ig_value *x = ig__in(cx, 0);
    if (x->shape.rank == 0) return ig__fail_shape(cx, "input '%s' is a scalar; expected [N, C, ...]", x->name);
    if (x->shape.rank > 0) {
        ig_shape p = {.rank = 1, .d = {x->shape.rank >= 2 ? x->shape.d[1] : ig__dim_const(1)}};
        if (bn_per_activation(cx->node)) { /* [C, D1, ..., Dn] */
            p.rank = x->shape.rank > 1 ? x->shape.rank - 1 : 1;
            for (int32_t k = 1; k < x->shape.rank; k++) p.d[k - 1] = x->shape.d[k];
        }
        static const char *const names[] = {"", "scale", "B", "mean", "var"};
        for (int i = 1; i < 5; i++)
            if ((st = check_param_shape(cx, i, names[i], &p)) != INGOT_OK) return st;
    }
    return ig__set_out(cx, 0, x->dtype, &x->shape);
}

static size_t batchnorm_scratch(const ig_graph *g, const ig_node *n)
{
    return params_scratch(g, n, 3, bn_per_activation(n));
}

static ingot_status batchnorm_cpu(ig_exec *ex)
{
    if (ex->node->opset >= 14 && ig__attr_int(ex->node, "training_mode", 0) != 0) return ig__bn_training_cpu(ex);
    const ig_tensor *x = ex->in[0];
    int64_t c = x->rank >= 2 ? x->dims[1] : 1, len = prod(x->dims, 2, x->rank);
    int64_t rows = x->dims[0] * c;
    bool per_act = bn_per_activation(ex->node);
    int64_t np = per_act ? c * len : c;
    for (int i = 1; i < 5; i++)
        if (ex->in[i]->numel != np)
            return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE,
                            "node '%s' (%s): input %d has %" PRId64 " elements, expected %" PRId64,
                            ig__node_label(ex->node), ex->node->op_type, i, ex->in[i]->numel, np);
    bool dbl = is_f64(x->dtype);
    size_t es = dbl ? sizeof(double) : sizeof(float);
    if (ex->scratch_bytes < 3 * (size_t)np * es)
        return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s' (%s): scratch too small", ig__node_label(ex->node),
                        ex->node->op_type);
    unsigned char *mean = ex->scratch, *mul = mean + (size_t)np * es, *add = mul + (size_t)np * es;
    double eps = ig__attr_float(ex->node, "epsilon", 1e-5f);
    for (int64_t k = 0; k < np; k++) {
        double s = ig__elem_f64(ex->in[1]->dtype, ex->in[1]->data, k);
        double b = ig__elem_f64(ex->in[2]->dtype, ex->in[2]->data, k);
        double m = ig__elem_f64(ex->in[3]->dtype, ex->in[3]->data, k);
        double v = ig__elem_f64(ex->in[4]->dtype, ex->in[4]->data, k);
        double f = s / sqrt(v + eps);
        if (dbl) {
            ((double *)mean)[k] = m, ((double *)mul)[k] = f, ((double *)add)[k] = b;
        } else {
            ((float *)mean)[k] = (float)m, ((float *)mul)[k] = (float)f, ((float *)add)[k] = (float)b;
        }
    }
    batchnorm_args ba = {.x = x->data,
                         .y = ex->out[0]->data,
                         .dt = x->dtype,
                         .n = len,
                         .channels = c,
                         .per_activation = per_act,
                         .mean = mean,
                         .mul = mul,
                         .add = add};
    ig__parallel_for(ex->pool, rows, row_grain(len), dbl ? batchnorm_rows_f64 : batchnorm_rows_f32, &ba);
    return INGOT_OK;
}

/* One multiply-add per element once the per-channel factors are folded (the usual convention). */
static double batchnorm_flops(const ig_graph *g, const ig_node *n)
{
    return 2.0 * value_numel(ig__node_input(g, n, 0));
}

const ig_op_def ig__op_batch_normalization = {
    .name = "BatchNormalization",
    .since = 1,
    .min_in = 5,
    .max_in = 5,
    .min_out = 1,
    .max_out = 5,
    .flags = IG_OP_INPLACE,
    .infer = batchnorm_infer,
    .cpu = batchnorm_cpu,
    .cpu_scratch = batchnorm_scratch,
    .flops = batchnorm_flops,
};

#else /* NORM_R: the kernels, instantiated for R = float and R = double */

#define R           NORM_R
#define NCAT_(a, b) a##_##b
#define NCAT(a, b)  NCAT_(a, b)
#define FN(name)    NCAT(name, NORM_SFX)
#define LD          NCAT(ld, NORM_SFX)
#define ST          NCAT(st, NORM_SFX)

/* The row functions take the storage dtype as a parameter and are always inlined: each range
 * function calls them once with the native dtype as a constant (the loads fold into plain array
 * accesses the compiler can vectorise) and once with the run-time dtype for the half types.
 * Every pass reads x[j] before it writes y[j], so y may alias x. */
#define NATIVE_DT   (sizeof(R) == sizeof(double) ? INGOT_DTYPE_DOUBLE : INGOT_DTYPE_FLOAT)
#define DISPATCH(call_native, call_any)       \
    do {                                      \
        if (a->dt == NATIVE_DT) {             \
            const ingot_dtype dt = NATIVE_DT; \
            call_native;                      \
        } else {                              \
            const ingot_dtype dt = a->dt;     \
            call_any;                         \
        }                                     \
    } while (0)

/* One softmax over the contiguous row [off, off + n). */
static NORM_INLINE void FN(softmax_row)(ingot_dtype dt, const void *x, void *y, int64_t off, int64_t n, bool is_log)
{
    R m = -INFINITY;
    for (int64_t j = 0; j < n; j++) {
        R v = LD(dt, x, off + j);
        m = v > m ? v : m;
    }
    double sum = 0;
    if (is_log) {
        for (int64_t j = 0; j < n; j++) sum += NORM_EXP(LD(dt, x, off + j) - m);
        const R ls = (R)log(sum);
        for (int64_t j = 0; j < n; j++) ST(dt, y, off + j, (LD(dt, x, off + j) - m) - ls);
    } else if (dt == NATIVE_DT) { /* keep exp() in y and rescale it in place */
        R *yr = (R *)y + off;
        for (int64_t j = 0; j < n; j++) {
            R e = NORM_EXP(LD(dt, x, off + j) - m);
            yr[j] = e;
            sum += e;
        }
        const R inv = (R)(1.0 / sum);
        for (int64_t j = 0; j < n; j++) yr[j] *= inv;
    } else { /* y holds a narrower type: recompute exp() rather than round twice */
        for (int64_t j = 0; j < n; j++) sum += NORM_EXP(LD(dt, x, off + j) - m);
        const R inv = (R)(1.0 / sum);
        for (int64_t j = 0; j < n; j++) ST(dt, y, off + j, NORM_EXP(LD(dt, x, off + j) - m) * inv);
    }
}

static void FN(softmax_rows)(void *arg, int64_t begin, int64_t end)
{
    const softmax_args *a = arg;
    for (int64_t r = begin; r < end; r++)
        DISPATCH(FN(softmax_row)(dt, a->x, a->y, r * a->n, a->n, a->log),
                 FN(softmax_row)(dt, a->x, a->y, r * a->n, a->n, a->log));
}

/* Softmax along an axis with inner stride > 1: blocks of up to SM_BLOCK inner positions are
 * processed together so that every access runs along contiguous memory. */
static void FN(softmax_strided)(void *arg, int64_t begin, int64_t end)
{
    const softmax_args *a = arg;
    const int64_t n = a->n, inner = a->inner;
    const ingot_dtype dt = a->dt;
    const bool store = dt == NATIVE_DT;
    R mx[SM_BLOCK], fin[SM_BLOCK];
    double sum[SM_BLOCK];
    for (int64_t t = begin; t < end; t++) {
        const int64_t o = t / a->n_blocks, i0 = (t % a->n_blocks) * SM_BLOCK;
        const int64_t nb = inner - i0 < SM_BLOCK ? inner - i0 : SM_BLOCK;
        const int64_t base = o * n * inner + i0;
        for (int64_t k = 0; k < nb; k++) mx[k] = -INFINITY, sum[k] = 0;
        for (int64_t j = 0; j < n; j++)
            for (int64_t k = 0; k < nb; k++) {
                R v = LD(dt, a->x, base + j * inner + k);
                mx[k] = v > mx[k] ? v : mx[k];
            }
        for (int64_t j = 0; j < n; j++)
            for (int64_t k = 0; k < nb; k++) {
                int64_t i = base + j * inner + k;
                R e = NORM_EXP(LD(dt, a->x, i) - mx[k]);
                sum[k] += e;
                if (store && !a->log) ((R *)a->y)[i] = e;
            }
        for (int64_t k = 0; k < nb; k++) fin[k] = a->log ? (R)log(sum[k]) : (R)(1.0 / sum[k]);
        for (int64_t j = 0; j < n; j++)
            for (int64_t k = 0; k < nb; k++) {
                int64_t i = base + j * inner + k;
                if (a->log)
                    ST(dt, a->y, i, (LD(dt, a->x, i) - mx[k]) - fin[k]);
                else if (store)
                    ((R *)a->y)[i] *= fin[k];
                else
                    ST(dt, a->y, i, NORM_EXP(LD(dt, a->x, i) - mx[k]) * fin[k]);
            }
    }
}

/* Mean and 1/sqrt(var + eps) of a contiguous row in one pass: sums of (x - K) and (x - K)^2 in
 * double, K the first element. */
static NORM_INLINE row_stats FN(row_stats)(ingot_dtype dt, const void *x, int64_t off, int64_t n, double eps)
{
    row_stats s = {NAN, NAN};
    if (n <= 0) return s;
    const double k = LD(dt, x, off);
    double s1 = 0, s2 = 0;
    for (int64_t j = 0; j < n; j++) {
        double d = (double)LD(dt, x, off + j) - k;
        s1 += d;
        s2 += d * d;
    }
    double m = s1 / (double)n, var = s2 / (double)n - m * m;
    if (var < 0) var = 0;
    s.mean = k + m;
    s.inv_std = 1.0 / sqrt(var + eps);
    return s;
}

static NORM_INLINE void FN(layernorm_row)(ingot_dtype dt, const layernorm_args *a, int64_t r)
{
    const int64_t n = a->n, off = r * n;
    const R *scale = a->scale, *bias = a->bias;
    row_stats s = FN(row_stats)(dt, a->x, off, n, a->eps);
    const R m = (R)s.mean, inv = (R)s.inv_std;
    if (bias)
        for (int64_t j = 0; j < n; j++) ST(dt, a->y, off + j, (LD(dt, a->x, off + j) - m) * inv * scale[j] + bias[j]);
    else
        for (int64_t j = 0; j < n; j++) ST(dt, a->y, off + j, (LD(dt, a->x, off + j) - m) * inv * scale[j]);
    if (a->mean) ig__elem_set_f64(a->stat_dt, a->mean, r, s.mean);
    if (a->inv_std) ig__elem_set_f64(a->stat_dt, a->inv_std, r, s.inv_std);
}

static void FN(layernorm_rows)(void *arg, int64_t begin, int64_t end)
{
    const layernorm_args *a = arg;
    for (int64_t r = begin; r < end; r++) DISPATCH(FN(layernorm_row)(dt, a, r), FN(layernorm_row)(dt, a, r));
}

static NORM_INLINE void FN(instnorm_row)(ingot_dtype dt, const instnorm_args *a, int64_t r)
{
    const int64_t n = a->n, off = r * n, c = r % a->channels;
    const R *scale = a->scale, *bias = a->bias;
    row_stats s = FN(row_stats)(dt, a->x, off, n, a->eps);
    const R m = (R)s.mean, f = (R)(s.inv_std * (double)scale[c]), b = bias[c];
    for (int64_t j = 0; j < n; j++) ST(dt, a->y, off + j, (LD(dt, a->x, off + j) - m) * f + b);
}

static void FN(instnorm_rows)(void *arg, int64_t begin, int64_t end)
{
    const instnorm_args *a = arg;
    for (int64_t r = begin; r < end; r++) DISPATCH(FN(instnorm_row)(dt, a, r), FN(instnorm_row)(dt, a, r));
}

static NORM_INLINE void FN(batchnorm_row)(ingot_dtype dt, const batchnorm_args *a, int64_t r)
{
    const int64_t n = a->n, off = r * n, c = r % a->channels;
    const R *mean = a->mean, *mul = a->mul, *add = a->add;
    if (a->per_activation) {
        const int64_t p = c * n;
        for (int64_t j = 0; j < n; j++)
            ST(dt, a->y, off + j, (LD(dt, a->x, off + j) - mean[p + j]) * mul[p + j] + add[p + j]);
    } else {
        const R m = mean[c], f = mul[c], b = add[c];
        for (int64_t j = 0; j < n; j++) ST(dt, a->y, off + j, (LD(dt, a->x, off + j) - m) * f + b);
    }
}

static void FN(batchnorm_rows)(void *arg, int64_t begin, int64_t end)
{
    const batchnorm_args *a = arg;
    for (int64_t r = begin; r < end; r++) DISPATCH(FN(batchnorm_row)(dt, a, r), FN(batchnorm_row)(dt, a, r));
}

#undef NATIVE_DT
#undef DISPATCH
#undef R
#undef NCAT_
#undef NCAT
#undef FN
#undef LD
#undef ST

#endif /* NORM_R */
