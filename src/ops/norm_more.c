/*
 * norm_more.c -- GroupNormalization (opsets 18 and 21), and BatchNormalization in training mode
 * (training_mode=1, opset 14+) for the BatchNormalization descriptor of norm.c to call.
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

/* Before opset 21 scale and bias have one value per group, from 21 one per channel. */
static bool gn_per_group(const ig_node *n) { return n->opset > 0 && n->opset < 21; }

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
