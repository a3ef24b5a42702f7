/*
 * norm_more.c -- GroupNormalization (opsets 18 and 21), LpNormalization, MeanVarianceNormalization, and
 * BatchNormalization in training mode (training_mode=1, opset 14+) for the BatchNormalization descriptor
 * of norm.c to call.
 *
 * Training-mode BatchNormalization normalises with the statistics of the batch itself (mean and
 * population variance over every axis but 1). Exporters emit it for weight standardisation (timm's
 * StdConv2d: F.batch_norm(weight, training=True)), where every input is a constant: inference then
 * folds it at build like any other constant node, and ingot computes exactly what the model says. The
 * optional outputs running_mean/running_var are input_mean * momentum + batch_mean * (1 - momentum)
 * (and the same for the variance), as the ONNX reference computes them.
 *
 * Statistics are computed in double (two passes: mean, then the centred sum of squares), the output
 * rounded once into the input's type.
 */
#include "op.h"
#include "ops_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static ingot_status check_vec(ig_infer *cx, int i, const char *what, ig_dim want)
{
    const ig_value *v = ig__in(cx, i);
    if (!v || v->shape.rank < 0) return INGOT_OK;
    int64_t n;
    if (v->shape.rank != 1)
        return ig__fail_shape(cx, "input %d '%s' (%s) has rank %d; expected 1", i, v->name, what, (int)v->shape.rank);
    if (ig__dim_known(want) && ig__shape_numel(&v->shape, &n) && n != want.n)
        return ig__fail_shape(cx, "input %d '%s' (%s) has %" PRId64 " elements; expected %" PRId64, i, v->name, what, n,
                              want.n);
    return INGOT_OK;
}

/* ==== GroupNormalization ============================================================================== */

/* Before opset 21 scale and bias have one value per group, from 21 one per channel; ingot.GroupNorm (what
 * the optimizer's groupnorm pass makes) always has one per channel, whatever its domain's version. */
static bool gn_per_group(const ig_node *n)
{
    bool ingot = n->domain && !strcmp(n->domain, "ingot");
    return !ingot && n->opset > 0 && n->opset < 21;
}

static ingot_status group_norm_infer(ig_infer *cx)
{
    ingot_status st;
    for (int i = 0; i < 3; i++)
        if ((st = ig__check_dtype(cx, i, IG_TS_FLOAT)) != INGOT_OK) return st;
    const ig_attr *ga = ig__node_attr(cx->node, "num_groups");
    if (!ga || ga->type != IG_ATTR_INT || ga->i < 1)
        return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "attribute 'num_groups' is required and must be >= 1");
    int64_t st_t = ig__attr_int(cx->node, "stash_type", 1);
    if (st_t != 1 && st_t != 11 && st_t != 16 && st_t != 10)
        return ig__unsupported(cx, "attribute stash_type=%" PRId64 " is not a float type", st_t);
    const ig_value *x = ig__in(cx, 0);
    int64_t g = ga->i;
    if (x->shape.rank >= 0 && x->shape.rank < 2)
        return ig__fail_shape(cx, "input '%s' has rank %d; expected [N, C, ...]", x->name, (int)x->shape.rank);
    ig_dim want = gn_per_group(cx->node) ? ig__dim_const(g) : x->shape.rank >= 2 ? x->shape.d[1] : ig__dim_const(0);
    if (x->shape.rank >= 2 && ig__dim_known(x->shape.d[1]) && x->shape.d[1].n % g)
        return ig__fail_shape(cx, "%" PRId64 " channels do not split into num_groups=%" PRId64, x->shape.d[1].n, g);
    if (x->shape.rank < 0) want = ig__dim_fresh(cx);
    if ((st = check_vec(cx, 1, "scale", want)) != INGOT_OK) return st;
    if ((st = check_vec(cx, 2, "bias", want)) != INGOT_OK) return st;
    return ig__set_out(cx, 0, x->dtype, &x->shape);
}

typedef struct gn_job {
    const ig_tensor *x, *scale, *bias;
    ig_tensor *y;
    int64_t groups, cg, len; /* channels per group, elements per channel */
    double eps;
    bool per_group;
} gn_job;

static void gn_range(void *arg, int64_t b, int64_t e)
{
    const gn_job *j = arg;
    const ingot_dtype t = j->x->dtype;
    const int64_t m = j->cg * j->len;
    for (int64_t r = b; r < e; r++) { /* r = n * groups + g: one contiguous run of m elements */
        int64_t off = r * m, g = r % j->groups;
        double s = 0, q = 0;
        for (int64_t i = 0; i < m; i++) s += ig__elem_f64(t, j->x->data, off + i);
        double mean = m ? s / (double)m : 0;
        for (int64_t i = 0; i < m; i++) {
            double d = ig__elem_f64(t, j->x->data, off + i) - mean;
            q += d * d;
        }
        double inv = 1.0 / sqrt((m ? q / (double)m : 0) + j->eps);
        for (int64_t c = 0; c < j->cg; c++) {
            int64_t k = j->per_group ? g : g * j->cg + c;
            double sc = ig__elem_f64(j->scale->dtype, j->scale->data, k) * inv;
            double bi = ig__elem_f64(j->bias->dtype, j->bias->data, k);
            for (int64_t i = 0; i < j->len; i++) {
                int64_t o = off + c * j->len + i;
                ig__elem_set_f64(t, j->y->data, o, (ig__elem_f64(t, j->x->data, o) - mean) * sc + bi);
            }
        }
    }
}

static ingot_status group_norm_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    int64_t g = ig__attr_int(ex->node, "num_groups", 1), C = x->rank >= 2 ? x->dims[1] : 0, len = 1;
    if (x->rank < 2 || g < 1 || C % g)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "%" PRId64 " channels do not split into %" PRId64 " groups", C,
                             g);
    for (int32_t a = 2; a < x->rank; a++) len *= x->dims[a];
    bool per_group = gn_per_group(ex->node);
    int64_t np = per_group ? g : C;
    for (int i = 1; i < 3; i++)
        if (ex->in[i]->numel != np)
            return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "input %d has %" PRId64 " elements, expected %" PRId64, i,
                                 ex->in[i]->numel, np);
    gn_job j = {.x = x,
                .scale = ex->in[1],
                .bias = ex->in[2],
                .y = ex->out[0],
                .groups = g,
                .cg = C / g,
                .len = len,
                .eps = ig__attr_float(ex->node, "epsilon", 1e-5f),
                .per_group = per_group};
    int64_t m = j.cg * len;
    ig__parallel_for(ex->pool, x->dims[0] * g, 1 + (1 << 15) / (m > 0 ? m : 1), gn_range, &j);
    return INGOT_OK;
}

/* Mean, variance, normalise, scale and shift: about 8 operations an element. */
static double group_norm_flops(const ig_graph *g, const ig_node *n) { return 8.0 * ig__value_numel(g, n->inputs[0]); }

const ig_op_def ig__op_group_normalization = {
    .name = "GroupNormalization",
    .since = 18,
    .min_in = 3,
    .max_in = 3,
    .min_out = 1,
    .max_out = 1,
    .flags = IG_OP_INPLACE,
    .infer = group_norm_infer,
    .cpu = group_norm_cpu,
    .flops = group_norm_flops,
};

/* ingot.GroupNorm: GroupNormalization of opset 21 (scale and bias per channel) in the ingot domain, so
 * that an engine file's graph says so unambiguously (a later ONNX op stored there is read back at the
 * ingot domain's version). Attributes num_groups (required) and epsilon (1e-5). */
const ig_op_def ig__op_group_norm = {
    .name = "GroupNorm",
    .domain = "ingot",
    .since = 1,
    .min_in = 3,
    .max_in = 3,
    .min_out = 1,
    .max_out = 1,
    .flags = IG_OP_INPLACE,
    .infer = group_norm_infer,
    .cpu = group_norm_cpu,
    .flops = group_norm_flops,
};

/* ==== LpNormalization ================================================================================= */

/* Y = X / ||X||_p along one axis (default -1), p 1 or 2; a line whose norm is 0 gives 0 (the reference's
 * choice, and ONNX Runtime's), not NaN. */

static ingot_status lp_norm_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_FLOAT)) != INGOT_OK) return st;
    int64_t p = ig__attr_int(cx->node, "p", 2);
    if (p != 1 && p != 2) return ig__unsupported(cx, "attribute 'p' = %" PRId64 " is not supported (1 or 2)", p);
    const ig_value *x = ig__in(cx, 0);
    int32_t a;
    if (x->shape.rank >= 0 &&
        (st = ig__norm_axis(cx, ig__attr_int(cx->node, "axis", -1), x->shape.rank, "attribute 'axis'", &a)) != INGOT_OK)
        return st;
    return ig__set_out(cx, 0, x->dtype, &x->shape);
}

typedef struct lp_job {
    const ig_tensor *x;
    ig_tensor *y;
    int64_t n, inner; /* line length, stride of its elements */
    bool l1;
} lp_job;

/* Lines are read whole before they are written, and do not overlap: Y may be X's bytes. */
static void lp_range(void *arg, int64_t b, int64_t e)
{
    const lp_job *j = arg;
    const ingot_dtype t = j->x->dtype;
    for (int64_t o = b; o < e; o++) {
        const int64_t off = (o / j->inner) * j->n * j->inner + o % j->inner;
        double s = 0;
        for (int64_t i = 0; i < j->n; i++) {
            double v = ig__elem_f64(t, j->x->data, off + i * j->inner);
            s += j->l1 ? fabs(v) : v * v;
        }
        double norm = j->l1 ? s : sqrt(s);
        for (int64_t i = 0; i < j->n; i++) {
            int64_t k = off + i * j->inner;
            ig__elem_set_f64(t, j->y->data, k, norm == 0 ? 0.0 : ig__elem_f64(t, j->x->data, k) / norm);
        }
    }
}

static ingot_status lp_norm_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    int64_t axis = ig__attr_int(ex->node, "axis", -1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis >= x->rank)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "axis %" PRId64 " is out of range for rank %d",
                             ig__attr_int(ex->node, "axis", -1), (int)x->rank);
    lp_job j = {.x = x, .y = ex->out[0], .n = x->dims[axis], .inner = 1, .l1 = ig__attr_int(ex->node, "p", 2) == 1};
    for (int32_t k = (int32_t)axis + 1; k < x->rank; k++) j.inner *= x->dims[k];
    if (x->numel == 0) return INGOT_OK;
    ig__parallel_for(ex->pool, x->numel / j.n, 1 + (1 << 15) / j.n, lp_range, &j);
    return INGOT_OK;
}

/* |x| or x^2, a sum, a division: about 3 operations an element. */
static double norm3_flops(const ig_graph *g, const ig_node *n) { return 3.0 * ig__value_numel(g, n->inputs[0]); }

const ig_op_def ig__op_lp_normalization = {
    .name = "LpNormalization",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .flags = IG_OP_INPLACE,
    .infer = lp_norm_infer,
    .cpu = lp_norm_cpu,
    .flops = norm3_flops,
};

/* ==== MeanVarianceNormalization ======================================================================= */

/* Y = (X - mean) / (sqrt(var) + 1e-9) over the axes of attribute 'axes' (default [0, 2, 3]), as the
 * spec's function body computes it (var = E[X^2] - E[X]^2 there). Here var is the mean of the squared
 * deviations, computed in double after the mean: the same quantity, without the cancellation that can
 * make the body's difference negative (and its square root NaN) for a constant group. */

/* The node's axes: attribute 'axes', or the default [0, 2, 3] (the spatial statistics of an NCHW
 * tensor, per channel). */
static void mvn_axes_attr(const ig_node *node, const int64_t **v, int64_t *n)
{
    static const int64_t def[3] = {0, 2, 3};
    if (!ig__attr_ints(node, "axes", v, n)) *v = def, *n = 3;
}

static ingot_status mvn_axes(ig_infer *cx, int32_t rank, bool *mask)
{
    const int64_t *v;
    int64_t n;
    mvn_axes_attr(cx->node, &v, &n);
    for (int32_t k = 0; k < rank; k++) mask[k] = false;
    for (int64_t i = 0; i < n; i++) {
        int32_t a;
        ingot_status st = ig__norm_axis(cx, v[i], rank, "axis in 'axes'", &a);
        if (st != INGOT_OK) return st;
        if (mask[a]) return ig__fail_shape(cx, "axis %" PRId64 " appears more than once in 'axes'", v[i]);
        mask[a] = true;
    }
    return INGOT_OK;
}

static ingot_status mvn_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_FLOAT)) != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0);
    bool mask[IG_MAX_RANK];
    if (x->shape.rank >= 0 && (st = mvn_axes(cx, x->shape.rank, mask)) != INGOT_OK) return st;
    return ig__set_out(cx, 0, x->dtype, &x->shape);
}

typedef struct mvn_job {
    const ig_tensor *x;
    ig_tensor *y;
    int32_t nk, nr; /* kept and reduced dims */
    int64_t ksize[IG_MAX_RANK], kstride[IG_MAX_RANK], rsize[IG_MAX_RANK], rstride[IG_MAX_RANK];
    int64_t count; /* elements in a group */
} mvn_job;

/* Offset of element i of a row-major walk over n dims of the given sizes and strides. */
static int64_t walk_offset(int64_t i, int32_t n, const int64_t *size, const int64_t *stride)
{
    int64_t off = 0;
    for (int32_t k = n - 1; k >= 0; k--) {
        off += (i % size[k]) * stride[k];
        i /= size[k];
    }
    return off;
}

static void mvn_range(void *arg, int64_t b, int64_t e)
{
    const mvn_job *j = arg;
    const ingot_dtype t = j->x->dtype;
    for (int64_t g = b; g < e; g++) { /* one group: the elements that share the kept coordinates */
        const int64_t base = walk_offset(g, j->nk, j->ksize, j->kstride);
        double s = 0, q = 0;
        for (int64_t m = 0; m < j->count; m++)
            s += ig__elem_f64(t, j->x->data, base + walk_offset(m, j->nr, j->rsize, j->rstride));
        const double mean = s / (double)j->count;
        for (int64_t m = 0; m < j->count; m++) {
            double d = ig__elem_f64(t, j->x->data, base + walk_offset(m, j->nr, j->rsize, j->rstride)) - mean;
            q += d * d;
        }
        const double den = sqrt(q / (double)j->count) + 1e-9;
        for (int64_t m = 0; m < j->count; m++) {
            int64_t o = base + walk_offset(m, j->nr, j->rsize, j->rstride);
            ig__elem_set_f64(t, j->y->data, o, (ig__elem_f64(t, j->x->data, o) - mean) / den);
        }
    }
}

static ingot_status mvn_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    const int64_t *v;
    int64_t n;
    mvn_axes_attr(ex->node, &v, &n);
    bool mask[IG_MAX_RANK] = {false};
    for (int64_t i = 0; i < n; i++) {
        int64_t a = v[i] < 0 ? v[i] + x->rank : v[i];
        if (a < 0 || a >= x->rank)
            return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "axis %" PRId64 " is out of range for rank %d", v[i],
                                 (int)x->rank);
        mask[a] = true;
    }
    mvn_job j = {.x = x, .y = ex->out[0], .count = 1};
    int64_t stride[IG_MAX_RANK], groups = 1, s = 1;
    for (int32_t k = x->rank - 1; k >= 0; k--) stride[k] = s, s *= x->dims[k];
    for (int32_t k = 0; k < x->rank; k++) { /* outermost first: the order walk_offset counts in */
        if (mask[k]) {
            j.rsize[j.nr] = x->dims[k], j.rstride[j.nr++] = stride[k];
            j.count *= x->dims[k];
        } else {
            j.ksize[j.nk] = x->dims[k], j.kstride[j.nk++] = stride[k];
            groups *= x->dims[k];
        }
    }
    if (x->numel == 0) return INGOT_OK;
    ig__parallel_for(ex->pool, groups, 1 + (1 << 15) / j.count, mvn_range, &j);
    return INGOT_OK;
}

const ig_op_def ig__op_mean_variance_normalization = {
    .name = "MeanVarianceNormalization",
    .since = 9,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .flags = IG_OP_INPLACE,
    .infer = mvn_infer,
    .cpu = mvn_cpu,
    .flops = group_norm_flops,
};

/* ==== BatchNormalization, training mode =============================================================== */

ingot_status ig__bn_training_infer(ig_infer *cx)
{
    ingot_status st;
    for (int i = 0; i < 5; i++)
        if ((st = ig__check_dtype(cx, i, IG_TS_FLOAT)) != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0);
    if (x->shape.rank >= 0 && x->shape.rank < 2)
        return ig__fail_shape(cx, "input '%s' has rank %d; training mode needs [N, C, ...]", x->name,
                              (int)x->shape.rank);
    ig_dim c = x->shape.rank >= 2 ? x->shape.d[1] : ig__dim_fresh(cx);
    static const char *const names[] = {"", "scale", "B", "input_mean", "input_var"};
    for (int i = 1; i < 5; i++)
        if ((st = check_vec(cx, i, names[i], c)) != INGOT_OK) return st;
    if (cx->node->n_outputs > 3)
        return ig__unsupported(cx, "training mode has at most 3 outputs (Y, running_mean, running_var), not %d",
                               (int)cx->node->n_outputs);
    if ((st = ig__set_out(cx, 0, x->dtype, &x->shape)) != INGOT_OK) return st;
    ig_shape p = {.rank = 1, .d = {c}};
    for (int i = 1; i < 3; i++)
        if (ig__out(cx, i) && (st = ig__set_out(cx, i, ig__in(cx, 3 + i - 1)->dtype, &p)) != INGOT_OK) return st;
    return INGOT_OK;
}

ingot_status ig__bn_training_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    if (x->rank < 2) return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "training mode needs an input of rank >= 2");
    const ingot_dtype t = x->dtype;
    int64_t N = x->dims[0], C = x->dims[1], len = 1;
    for (int32_t a = 2; a < x->rank; a++) len *= x->dims[a];
    for (int i = 1; i < 5; i++)
        if (!ex->in[i] || ex->in[i]->numel != C)
            return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "input %d has %" PRId64 " elements, expected %" PRId64, i,
                                 ex->in[i] ? ex->in[i]->numel : 0, C);
    char *base;
    void *own;
    ingot_status st = ig__exec_scratch(ex, 2 * sizeof(double) * (size_t)(C > 0 ? C : 1), &base, &own);
    if (st != INGOT_OK) return st;
    double *mean = (double *)(void *)base, *var = mean + C;
    double eps = ig__attr_float(ex->node, "epsilon", 1e-5f), mom = ig__attr_float(ex->node, "momentum", 0.9f);
    int64_t cnt = N * len;
    for (int64_t c = 0; c < C; c++) { /* statistics first: Y may share X's bytes */
        double s = 0, q = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < len; i++) s += ig__elem_f64(t, x->data, (n * C + c) * len + i);
        mean[c] = cnt ? s / (double)cnt : 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < len; i++) {
                double d = ig__elem_f64(t, x->data, (n * C + c) * len + i) - mean[c];
                q += d * d;
            }
        var[c] = cnt ? q / (double)cnt : 0;
    }
    for (int64_t c = 0; c < C; c++) {
        double f = ig__elem_f64(ex->in[1]->dtype, ex->in[1]->data, c) / sqrt(var[c] + eps);
        double b = ig__elem_f64(ex->in[2]->dtype, ex->in[2]->data, c);
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < len; i++) {
                int64_t o = (n * C + c) * len + i;
                ig__elem_set_f64(t, ex->out[0]->data, o, (ig__elem_f64(t, x->data, o) - mean[c]) * f + b);
            }
    }
    for (int k = 1; k < 3 && k < ex->n_out; k++) {
        ig_tensor *r = ex->out[k];
        if (!r) continue;
        const ig_tensor *prev = ex->in[2 + k]; /* input_mean, input_var */
        const double *cur = k == 1 ? mean : var;
        for (int64_t c = 0; c < C; c++)
            ig__elem_set_f64(r->dtype, r->data, c,
                             ig__elem_f64(prev->dtype, prev->data, c) * mom + cur[c] * (1.0 - mom));
    }
    if (own) ig__free_aligned(own);
    return INGOT_OK;
}
