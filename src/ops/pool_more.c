/*
 * pool_more.c -- the rarer pools: LpPool, GlobalLpPool and MaxUnpool, on the sliding-window geometry
 * MaxPool and AveragePool use (ig__window_*, conv.c), so output sizes, auto_pad and ceil_mode agree.
 *
 * LpPool computes y = (sum over the window of |x|^p)^(1/p), padding contributing zero: |x|^p once per
 * input element into scratch (float for float32/16 and bfloat16, double for double), then each
 * window's sum in double and its root. GlobalLpPool is the same with one window over all spatial dims.
 * A ceil_mode window reaching past the pads sums its taps inside the input like any other (ONNX's
 * reference computes LpPool as an average pool times the kernel size, as PyTorch does, which scales
 * such a window up; no ONNX test has one). Pads as large as the kernel are allowed (MaxPool refuses
 * them): a window wholly in the pads gives 0.
 *
 * MaxUnpool zero-fills its output and writes each X[k] at the flat index I[k] into the whole output
 * (N x C x D1 x ...), as MaxPool's Indices give them for its input; an index outside the output fails
 * naming the element. With output_shape, the indices count in that shape (as ONNX Runtime and PyTorch
 * read them); ONNX's reference instead places them in the shape the attributes give and pads that
 * into output_shape, which only its own test case relies on (see tests/conformance/manifest.txt).
 */
#include "op.h"
#include "ops_internal.h"

#include <inttypes.h>
#include <math.h>

/* float16, float, double; bfloat16 from opset 22, where these ops' type lists gained it */
static ingot_status check_float_x(ig_infer *cx, int i)
{
    uint32_t mask = IG_T(FLOAT) | IG_T(FLOAT16) | IG_T(DOUBLE);
    if (cx->node->opset >= 22) mask |= IG_T(BFLOAT16);
    return ig__check_dtype(cx, i, mask);
}

/* X of a pool: rank >= 3 (N, C, spatial dims) unless unknown. */
static ingot_status check_pool_rank(ig_infer *cx, const ig_value *x)
{
    if (x->shape.rank >= 0 && x->shape.rank < 3)
        return ig__fail_shape(cx, "input '%s' must have rank >= 3 (N, C, spatial dims), got rank %d", x->name,
                              (int)x->shape.rank);
    return INGOT_OK;
}

/* ==== LpPool, GlobalLpPool ========================================================================== */

/* p: an int >= 1 (the norm's order; it was a float only in opset 1) */
static ingot_status check_p(ig_infer *cx)
{
    const ig_attr *a = ig__node_attr(cx->node, "p");
    if (a && a->type != IG_ATTR_INT) return ig__unsupported(cx, "attribute 'p' must be an int");
    if (a && a->i < 1)
        return ig__unsupported(cx, "attribute 'p' value %" PRId64 " is not supported (an Lp norm: p >= 1)", a->i);
    return INGOT_OK;
}

/* What LpPool and GlobalLpPool check alike: X's dtype and rank, p. */
static ingot_status check_lp_input(ig_infer *cx)
{
    ingot_status st;
    IG_TRY(st, check_float_x(cx, 0), out);
    IG_TRY(st, check_p(cx), out);
    st = check_pool_rank(cx, ig__in(cx, 0));
out:
    return st;
}

static ingot_status lp_pool_infer(ig_infer *cx)
{
    ig_value *x = ig__in(cx, 0);
    ingot_status st;
    IG_TRY(st, check_lp_input(cx), out);
    ig_shape os = x->shape;
    if (os.rank >= 0) {
        ig_window w;
        IG_TRY(st, ig__window_parse(cx->err, cx->node, IG_WIN_LPPOOL, os.rank - 2, NULL, &w), out);
        IG_TRY(st, ig__window_infer_spatial(cx, &w, &x->shape, &os), out);
    }
    st = ig__set_out(cx, 0, x->dtype, &os);
out:
    return st;
}

static ingot_status global_lp_pool_infer(ig_infer *cx)
{
    ig_value *x = ig__in(cx, 0);
    ingot_status st = check_lp_input(cx);
    if (st != INGOT_OK) return st;
    ig_shape os = x->shape;
    for (int32_t i = 2; i < os.rank; i++) os.d[i] = ig__dim_const(1);
    return ig__set_out(cx, 0, x->dtype, &os);
}

/* An Lp pool over concrete dims: per plane (image x channel), windows of kernel taps over in[] giving
 * out[]; GlobalLpPool is one window the size of the input. */
typedef struct lp_geom {
    int32_t nsp;
    int64_t planes, in_sp, out_sp;
    int64_t in[IG_MAX_SP], out[IG_MAX_SP], pb[IG_MAX_SP], pe[IG_MAX_SP];
    int64_t kernel[IG_MAX_SP], stride[IG_MAX_SP], dil[IG_MAX_SP];
    double p;
} lp_geom;

/* The geometry of node n over an input of dims xd (rank >= 3); err may be NULL. */
static ingot_status lp_geom_of(ig_err *err, const ig_node *n, int32_t rank, const int64_t *xd, lp_geom *gm)
{
    memset(gm, 0, sizeof *gm);
    if (rank < 3 || rank > IG_MAX_RANK)
        return ig__errf(err, INGOT_ERR_MODEL_SHAPE, "node '%s' (%s): input must have rank >= 3, got %d",
                        ig__node_label(n), n->op_type, (int)rank);
    bool global = !strcmp(n->op_type, "GlobalLpPool");
    ig_window w;
    if (!global) {
        ingot_status st = ig__window_parse(err, n, IG_WIN_LPPOOL, rank - 2, NULL, &w);
        if (st != INGOT_OK) return st;
    }
    gm->nsp = rank - 2;
    gm->planes = xd[0] * xd[1];
    gm->in_sp = gm->out_sp = 1;
    gm->p = (double)ig__attr_int(n, "p", 2);
    for (int32_t i = 0; i < gm->nsp; i++) {
        gm->in[i] = xd[2 + i];
        gm->stride[i] = gm->dil[i] = 1;
        if (global) {
            gm->kernel[i] = gm->in[i];
            gm->out[i] = 1;
        } else {
            ingot_status st = ig__window_resolve(err, n, &w, i, gm->in[i], &gm->out[i], &gm->pb[i], &gm->pe[i]);
            if (st != INGOT_OK) return st;
            gm->kernel[i] = w.kernel[i];
            gm->stride[i] = w.stride[i];
            gm->dil[i] = w.dil[i];
        }
        gm->in_sp *= gm->in[i];
        gm->out_sp *= gm->out[i];
    }
    return INGOT_OK;
}

/* Concrete dims of value input i of node n; false when not concrete. */
static bool input_dims(const ig_graph *g, const ig_node *n, int i, int32_t *rank, int64_t *dims)
{
    const ig_value *v = ig__node_input(g, n, i);
    if (!v || v->shape.rank < 0 || !ig__shape_known(&v->shape)) return false;
    *rank = v->shape.rank;
    for (int32_t k = 0; k < v->shape.rank; k++) dims[k] = v->shape.d[k].n;
    return true;
}

/* |x|^p is kept as double for a double input, else as float */
static size_t lp_power_size(ingot_dtype t) { return t == INGOT_DTYPE_DOUBLE ? sizeof(double) : sizeof(float); }

static size_t lp_pool_scratch(const ig_graph *g, const ig_node *n)
{
    int32_t rank;
    int64_t xd[IG_MAX_RANK], numel = 1;
    if (!input_dims(g, n, 0, &rank, xd)) return 0;
    for (int32_t i = 0; i < rank; i++) numel *= xd[i]; /* a concrete shape's numel fits */
    return (size_t)numel * lp_power_size(ig__node_input(g, n, 0)->dtype);
}

/* pow(|x|, p) for every element, then one pass over the windows of every plane */
static double lp_flops(const ig_graph *g, const ig_node *n)
{
    int32_t rank;
    int64_t xd[IG_MAX_RANK];
    lp_geom gm;
    if (!input_dims(g, n, 0, &rank, xd) || lp_geom_of(NULL, n, rank, xd, &gm) != INGOT_OK) return 0;
    double kprod = 1;
    for (int32_t i = 0; i < gm.nsp; i++) kprod *= (double)gm.kernel[i];
    return (double)gm.planes * ((double)gm.in_sp + (double)gm.out_sp * (kprod + 1));
}

typedef struct lp_job {
    const lp_geom *gm;
    const ig_tensor *x;
    ig_tensor *y;
    float *pf;  /* |x|^p [numel x], float inputs */
    double *pd; /* |x|^p [numel x], double inputs */
} lp_job;

/* |x|^p of elements [b, e); p = 1 and 2 spelled out, being the common ones */
static void lp_power_range(void *arg, int64_t b, int64_t e)
{
    const lp_job *jb = arg;
    double p = jb->gm->p;
    if (jb->pd) {
        const double *x = jb->x->data;
        for (int64_t i = b; i < e; i++) {
            double a = fabs(x[i]);
            jb->pd[i] = p == 1 ? a : p == 2 ? a * a : pow(a, p);
        }
        return;
    }
    float *v = jb->pf + b, pf = (float)p;
    ig__to_f32(jb->x->dtype, (const char *)jb->x->data + (size_t)b * ingot_dtype_size(jb->x->dtype), e - b, v);
    for (int64_t i = 0; i < e - b; i++) {
        float a = fabsf(v[i]);
        v[i] = p == 1 ? a : p == 2 ? a * a : powf(a, pf);
    }
}

/* Sum of |x|^p over the taps [t0, t1) of one window, from element `base` of the power buffer: dim by
 * dim over all but the last, then the last's taps in one strided run. */
static double window_sum(const lp_job *jb, int64_t base, const int64_t *start, const int64_t *t0, const int64_t *t1)
{
    const lp_geom *gm = jb->gm;
    const int32_t last = gm->nsp - 1;
    int64_t t[IG_MAX_SP], istride[IG_MAX_SP], s = 1;
    for (int32_t i = last; i >= 0; i--) {
        t[i] = t0[i];
        istride[i] = s;
        s *= gm->in[i];
    }
    const int64_t n = t1[last] - t0[last], dl = gm->dil[last];
    double sum = 0;
    for (;;) {
        int64_t off = base + start[last] + t0[last] * dl;
        for (int32_t i = 0; i < last; i++) off += (start[i] + t[i] * gm->dil[i]) * istride[i];
        if (jb->pd)
            for (int64_t j = 0; j < n; j++) sum += jb->pd[off + j * dl];
        else
            for (int64_t j = 0; j < n; j++) sum += jb->pf[off + j * dl];
        int32_t i = last - 1;
        for (; i >= 0; i--) {
            if (++t[i] < t1[i]) break;
            t[i] = t0[i];
        }
        if (i < 0) return sum;
    }
}

/* Planes [pb, pe): each output position's window clipped to the input, its sum, the sum's root. */
static void lp_pool_range(void *arg, int64_t pb_, int64_t pe_)
{
    const lp_job *jb = arg;
    const lp_geom *gm = jb->gm;
    const double p = gm->p;
    for (int64_t pl = pb_; pl < pe_; pl++) {
        int64_t o[IG_MAX_SP] = {0};
        for (int64_t q = 0; q < gm->out_sp; q++) {
            int64_t start[IG_MAX_SP], t0[IG_MAX_SP], t1[IG_MAX_SP];
            bool empty = false;
            for (int32_t i = 0; i < gm->nsp; i++) {
                start[i] = o[i] * gm->stride[i] - gm->pb[i];
                ig__window_taps(start[i], gm->kernel[i], gm->dil[i], gm->in[i], gm->pe[i], &t0[i], &t1[i]);
                empty |= t1[i] <= t0[i];
            }
            double sum = empty ? 0 : window_sum(jb, pl * gm->in_sp, start, t0, t1);
            double r = p == 1 ? sum : p == 2 ? sqrt(sum) : pow(sum, 1.0 / p);
            ig__elem_set_f64(jb->y->dtype, jb->y->data, pl * gm->out_sp + q, r);
            for (int32_t i = gm->nsp - 1; i >= 0; i--) {
                if (++o[i] < gm->out[i]) break;
                o[i] = 0;
            }
        }
    }
}

static ingot_status lp_pool_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    lp_geom gm;
    ingot_status st = lp_geom_of(ex->err, ex->node, x->rank, x->dims, &gm);
    if (st != INGOT_OK) return st;
    if (y->numel == 0) return INGOT_OK;
    char *base;
    void *own;
    if ((st = ig__exec_scratch(ex, (size_t)x->numel * lp_power_size(x->dtype), &base, &own)) != INGOT_OK) return st;
    bool dbl = x->dtype == INGOT_DTYPE_DOUBLE;
    lp_job jb = {&gm, x, y, dbl ? NULL : (float *)base, dbl ? (double *)base : NULL};
    ig__parallel_for(ex->pool, x->numel, 1 << 14, lp_power_range, &jb);
    double kprod = 1;
    for (int32_t i = 0; i < gm.nsp; i++) kprod *= (double)gm.kernel[i];
    double per_plane = (double)gm.out_sp * (kprod + 1);
    ig__parallel_for(ex->pool, gm.planes, 1 + (int64_t)((1 << 14) / per_plane), lp_pool_range, &jb);
    if (own) ig__free_aligned(own);
    return INGOT_OK;
}

/* ==== MaxUnpool ====================================================================================== */

static ingot_status max_unpool_infer(ig_infer *cx)
{
    ig_value *x = ig__in(cx, 0), *ix = ig__in(cx, 1);
    ingot_status st;
    IG_TRY(st, check_float_x(cx, 0), out);
    IG_TRY(st, ig__check_dtype(cx, 1, IG_T(INT64)), out);
    IG_TRY(st, ig__check_dtype(cx, 2, IG_T(INT64)), out);
    IG_TRY(st, check_pool_rank(cx, x), out);
    IG_TRY(st, check_pool_rank(cx, ix), out);
    const ig_shape *xs = &x->shape, *is = &ix->shape;
    if (xs->rank >= 0 && is->rank >= 0) {
        bool same = is->rank == xs->rank;
        for (int32_t i = 0; same && i < xs->rank; i++)
            same = !ig__dim_known(xs->d[i]) || !ig__dim_known(is->d[i]) || xs->d[i].n == is->d[i].n;
        if (!same) {
            char a[256], b[256];
            return ig__fail_shape(cx, "indices '%s' %s must have the shape of input '%s' %s", ix->name,
                                  ig__shape_str(cx->g, is, b, sizeof b), x->name,
                                  ig__shape_str(cx->g, xs, a, sizeof a));
        }
    }
    ig_shape os = {.rank = -1};
    int32_t rank = xs->rank >= 0 ? xs->rank : is->rank;
    ig_window w;
    if (rank >= 3) IG_TRY(st, ig__window_parse(cx->err, cx->node, IG_WIN_UNPOOL, rank - 2, NULL, &w), out);
    const ig_value *sv = ig__in(cx, 2);
    if (sv) {
        /* output_shape's values are the output's dims (symbolic ones, from a Shape, kept); a graph input
         * is bound when the context runs, until then its length gives the rank */
        if (sv->shape.rank >= 0 && sv->shape.rank != 1)
            return ig__fail_shape(cx, "input 'output_shape' must be 1-D, got rank %d", (int)sv->shape.rank);
        int32_t n = 0;
        if (ig__in_dims(cx, 2, os.d, IG_MAX_RANK, &n)) {
            os.rank = n;
        } else if (sv->shape.rank == 1 && ig__dim_known(sv->shape.d[0])) {
            if (sv->shape.d[0].n > IG_MAX_RANK)
                return ig__unsupported(cx, "input 'output_shape' has %" PRId64 " values; ingot supports rank <= %d",
                                       sv->shape.d[0].n, IG_MAX_RANK);
            os.rank = (int32_t)sv->shape.d[0].n;
            for (int32_t i = 0; i < os.rank; i++) os.d[i] = ig__dim_fresh(cx);
        } else if (rank >= 0) {
            os.rank = rank;
            for (int32_t i = 0; i < os.rank; i++) os.d[i] = ig__dim_fresh(cx);
        }
        if (rank >= 0 && os.rank >= 0 && os.rank != rank)
            return ig__fail_shape(cx, "input 'output_shape' has %d values but input '%s' has rank %d", (int)os.rank,
                                  x->name, (int)rank);
        for (int32_t i = 0; i < os.rank; i++)
            if (ig__dim_known(os.d[i]) && os.d[i].n < 0)
                return ig__fail_shape(cx, "input 'output_shape' value %" PRId64 " at index %d is negative", os.d[i].n,
                                      (int)i);
    } else if (xs->rank >= 0) {
        os = *xs;
        IG_TRY(st, ig__window_infer_spatial(cx, &w, xs, &os), out);
    }
    st = ig__set_out(cx, 0, x->dtype, &os);
out:
    return st;
}

static ingot_status max_unpool_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0], *ix = ex->in[1];
    ig_tensor *y = ex->out[0];
    if (ix->numel != x->numel || ix->dtype != INGOT_DTYPE_INT64)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "indices have %" PRId64 " elements, X has %" PRId64, ix->numel,
                             x->numel);
    size_t es = ingot_dtype_size(x->dtype);
    if (y->numel) memset(y->data, 0, (size_t)y->numel * es); /* +0.0 in every float type */
    const int64_t *idx = ix->data;
    for (int64_t k = 0; k < x->numel; k++) {
        int64_t i = idx[k];
        if (i < 0 || i >= y->numel)
            return ig__exec_fail(ex, INGOT_ERR_INVALID_ARG,
                                 "index %" PRId64 " (element %" PRId64 " of input 1 '%s') is out of range for the "
                                 "output of %" PRId64 " elements",
                                 i, k, ex->g ? ex->g->values[ex->node->inputs[1]].name : "I", y->numel);
        memcpy((char *)y->data + (size_t)i * es, (const char *)x->data + (size_t)k * es, es);
    }
    return INGOT_OK;
}

/* ==== descriptors ==================================================================================== */

const ig_op_def ig__op_lp_pool = {
    .name = "LpPool",
    .since = 11,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = lp_pool_infer,
    .cpu = lp_pool_cpu,
    .cpu_scratch = lp_pool_scratch,
    .flops = lp_flops,
};
const ig_op_def ig__op_global_lp_pool = {
    .name = "GlobalLpPool",
    .since = 2,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = global_lp_pool_infer,
    .cpu = lp_pool_cpu,
    .cpu_scratch = lp_pool_scratch,
    .flops = lp_flops,
};
const ig_op_def ig__op_max_unpool = {
    .name = "MaxUnpool",
    .since = 11,
    .min_in = 2,
    .max_in = 3,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = 1u << 2,
    .infer = max_unpool_infer,
    .cpu = max_unpool_cpu,
    .flops = ig__flops_none,
};
