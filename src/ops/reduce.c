/*
 * reduce.c -- reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceL1, ReduceL2,
 * ReduceSumSquare, ReduceLogSum, ReduceLogSumExp, ReduceProd over a set of axes; ArgMax/ArgMin, Hardmax
 * and TopK along one axis.
 *
 * Axes come from the 'axes' attribute before opset 18 (13 for ReduceSum) and from the optional second
 * input after; empty axes mean "all axes", or "no reduction" with noop_with_empty_axes=1.
 *
 * The kernel merges neighbouring dims that are all reduced or all kept, so a reduction becomes a loop
 * over output elements (split across threads), each reducing one or more strided runs of the input.
 * Float tensors accumulate in double (sums do not lose digits, max/min are exact either way). Integer
 * reductions are exact in their own type: sums wrap like the type does, ReduceMean of integers divides
 * the (wrapped) sum by the count with truncation, as numpy's astype does. NaN propagates through
 * ReduceMax/ReduceMin; an empty reduction gives 0 (sum), NaN (float mean), 0 (integer mean), and the
 * type's lowest/highest value (-inf/+inf for floats) for max/min, 1 for prod, -inf for the logarithms.
 * L1, SumSquare and Prod of integers are exact and wrap; L2, LogSum and LogSumExp of integers are
 * computed in double and truncated. LogSumExp keeps a running maximum, so no exp overflows.
 */
#include "op.h"
#include "ops_internal.h"

#include <inttypes.h>
#include <math.h>

/* RED_SUM and RED_MEAN first: kinds <= RED_MEAN accumulate a plain sum. */
enum red_kind { RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_L1, RED_L2, RED_SUMSQ, RED_LOGSUM, RED_LOGSUMEXP, RED_PROD };

static int red_kind(const ig_node *n)
{
    static const struct {
        const char *name;
        int kind;
    } names[] = {{"ReduceSum", RED_SUM},         {"ReduceMean", RED_MEAN},     {"ReduceMax", RED_MAX},
                 {"ReduceMin", RED_MIN},         {"ReduceL1", RED_L1},         {"ReduceL2", RED_L2},
                 {"ReduceSumSquare", RED_SUMSQ}, {"ReduceLogSum", RED_LOGSUM}, {"ReduceLogSumExp", RED_LOGSUMEXP},
                 {"ReduceProd", RED_PROD}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(n->op_type, names[i].name)) return names[i].kind;
    return RED_MIN;
}

/* Kinds whose integer result comes from a double computation (a root or a logarithm): truncated. */
static bool red_via_double(int kind) { return kind == RED_L2 || kind == RED_LOGSUM || kind == RED_LOGSUMEXP; }

/* The opset from which axes are an input instead of an attribute. */
static int axes_input_opset(const ig_node *n) { return red_kind(n) == RED_SUM ? 13 : 18; }

/* ---- axes ---- */

#define MAX_AXES 64

typedef struct axes_spec {
    bool known; /* values known */
    int64_t n;  /* count (when known, or when only the axes input's length is known) */
    bool n_known;
    int64_t v[MAX_AXES];
} axes_spec;

static ingot_status infer_axes(ig_infer *cx, axes_spec *ax)
{
    const ig_node *n = cx->node;
    memset(ax, 0, sizeof *ax);
    const int64_t *av;
    int64_t an;
    bool has_attr = ig__attr_ints(n, "axes", &av, &an);
    const ig_value *in = ig__in(cx, 1);
    if (n->opset < axes_input_opset(n)) {
        if (in)
            return ig__fail(cx, INGOT_ERR_MODEL_INVALID,
                            "axes as an input needs opset %d or later (the model "
                            "imports opset %d); use the 'axes' attribute",
                            axes_input_opset(n), (int)n->opset);
        ax->known = ax->n_known = true;
        if (has_attr) {
            if (an > MAX_AXES) return ig__unsupported(cx, "attribute 'axes' has %" PRId64 " entries", an);
            ax->n = an;
            memcpy(ax->v, av, sizeof(int64_t) * (size_t)an);
        }
        return INGOT_OK;
    }
    if (has_attr)
        return ig__fail(cx, INGOT_ERR_MODEL_INVALID,
                        "attribute 'axes' is not valid in opset %d: since opset %d the "
                        "axes are the second input",
                        (int)n->opset, axes_input_opset(n));
    ax->n_known = true;
    if (!in) {
        ax->known = true;
        return INGOT_OK;
    }
    if (in->dtype != INGOT_DTYPE_INT64)
        return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "input 1 '%s' (axes) has dtype %s; expected int64", in->name,
                        ingot_dtype_name(in->dtype));
    if (in->shape.rank == 1 && ig__dim_known(in->shape.d[0]))
        ax->n = in->shape.d[0].n;
    else if (in->shape.rank == 0)
        ax->n = 1;
    else
        ax->n_known = false;
    if (ax->n_known && ax->n == 0) {
        ax->known = true;
        return INGOT_OK;
    }
    if (ig__in_known(cx, 1)) {
        ingot_status st = ig__in_ints(cx, 1, ax->v, MAX_AXES, &ax->n);
        if (st != INGOT_OK) return st;
        ax->known = ax->n_known = true;
    }
    return INGOT_OK;
}

/* Normalise axes into a mask over [0, rank); fails on out-of-range or repeated axes. */
static ingot_status axes_mask(ig_infer *cx, const axes_spec *ax, int32_t rank, bool *mask)
{
    for (int32_t k = 0; k < rank; k++) mask[k] = false;
    for (int64_t i = 0; i < ax->n; i++) {
        int32_t a;
        ingot_status st = ig__norm_axis(cx, ax->v[i], rank, "axis in 'axes'", &a);
        if (st != INGOT_OK) return st;
        if (mask[a]) return ig__fail_shape(cx, "axis %" PRId64 " appears more than once in 'axes'", ax->v[i]);
        mask[a] = true;
    }
    return INGOT_OK;
}

static bool noop_empty(const ig_node *n)
{
    return n->opset >= axes_input_opset(n) && ig__attr_int(n, "noop_with_empty_axes", 0) != 0;
}

static ingot_status reduce_infer(ig_infer *cx)
{
    ingot_status st;
    int kind = red_kind(cx->node);
    if ((st = ig__check_dtype(cx, 0, kind == RED_MAX || kind == RED_MIN ? IG_TS_ALL : IG_TS_NUM)) != INGOT_OK)
        return st;
    axes_spec ax;
    if ((st = infer_axes(cx, &ax)) != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0);
    bool keep = ig__attr_int(cx->node, "keepdims", 1) != 0;
    ig_shape out = {.rank = -1};
    if (x->shape.rank < 0) return ig__set_out(cx, 0, x->dtype, &out);
    int32_t r = x->shape.rank;
    if (ax.known && ax.n == 0 && noop_empty(cx->node)) return ig__set_out(cx, 0, x->dtype, &x->shape);
    if (!ax.known) {
        /* Axes depend on run-time values: the rank is still known when dims are kept, or when the number
         * of axes is (onnx's inference does the same); each dim becomes unknown unless it is 1. */
        if (!keep && !ax.n_known) return ig__in_ints(cx, 1, ax.v, MAX_AXES, &ax.n); /* fails naming the input */
        out.rank = keep ? r : r - (int32_t)ax.n;
        if (out.rank < 0) return ig__fail_shape(cx, "%" PRId64 " axes for an input of rank %d", ax.n, (int)r);
        for (int32_t k = 0; k < out.rank; k++) {
            ig_dim d = keep ? x->shape.d[k] : ig__dim_const(0);
            out.d[k] = keep && ig__dim_known(d) && d.n == 1 ? d : ig__dim_fresh(cx);
        }
        return ig__set_out(cx, 0, x->dtype, &out);
    }
    bool mask[IG_MAX_RANK];
    if ((st = axes_mask(cx, &ax, r, mask)) != INGOT_OK) return st;
    out.rank = 0;
    for (int32_t k = 0; k < r; k++) {
        bool red = ax.n == 0 || mask[k];
        if (!red)
            out.d[out.rank++] = x->shape.d[k];
        else if (keep)
            out.d[out.rank++] = ig__dim_const(1);
    }
    return ig__set_out(cx, 0, x->dtype, &out);
}

/* ---- element access ---- */

static inline double ld_real(ingot_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case INGOT_DTYPE_FLOAT: return ((const float *)p)[i];
    case INGOT_DTYPE_DOUBLE: return ((const double *)p)[i];
    case INGOT_DTYPE_FLOAT16: return ig__f16_to_f32(((const uint16_t *)p)[i]);
    default: return ig__bf16_to_f32(((const uint16_t *)p)[i]);
    }
}

static inline int64_t ld_int(ingot_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case INGOT_DTYPE_INT8: return ((const int8_t *)p)[i];
    case INGOT_DTYPE_INT16: return ((const int16_t *)p)[i];
    case INGOT_DTYPE_INT32: return ((const int32_t *)p)[i];
    case INGOT_DTYPE_INT64: return ((const int64_t *)p)[i];
    case INGOT_DTYPE_UINT8:
    case INGOT_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    case INGOT_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case INGOT_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    default: return (int64_t)((const uint64_t *)p)[i];
    }
}

/* Value v reduced modulo 2^bits of t and sign-extended when t is signed (the type's wraparound). */
static int64_t wrap_int(ingot_dtype t, int64_t v)
{
    switch (t) {
    case INGOT_DTYPE_INT8: return (int8_t)(uint8_t)v;
    case INGOT_DTYPE_INT16: return (int16_t)(uint16_t)v;
    case INGOT_DTYPE_INT32: return (int32_t)(uint32_t)v;
    case INGOT_DTYPE_UINT8: return (uint8_t)v;
    case INGOT_DTYPE_UINT16: return (uint16_t)v;
    case INGOT_DTYPE_UINT32: return (uint32_t)v;
    case INGOT_DTYPE_BOOL: return v != 0;
    default: return v;
    }
}

static bool is_unsigned(ingot_dtype t)
{
    return t == INGOT_DTYPE_UINT8 || t == INGOT_DTYPE_UINT16 || t == INGOT_DTYPE_UINT32 || t == INGOT_DTYPE_UINT64 ||
           t == INGOT_DTYPE_BOOL;
}

/* Lowest and highest value of an integer type, as the int64 bit pattern ld_int returns. */
static void int_limits(ingot_dtype t, int64_t *lo, int64_t *hi)
{
    switch (t) {
    case INGOT_DTYPE_INT8: *lo = INT8_MIN, *hi = INT8_MAX; return;
    case INGOT_DTYPE_INT16: *lo = INT16_MIN, *hi = INT16_MAX; return;
    case INGOT_DTYPE_INT32: *lo = INT32_MIN, *hi = INT32_MAX; return;
    case INGOT_DTYPE_INT64: *lo = INT64_MIN, *hi = INT64_MAX; return;
    case INGOT_DTYPE_BOOL: *lo = 0, *hi = 1; return;
    case INGOT_DTYPE_UINT8: *lo = 0, *hi = UINT8_MAX; return;
    case INGOT_DTYPE_UINT16: *lo = 0, *hi = UINT16_MAX; return;
    case INGOT_DTYPE_UINT32: *lo = 0, *hi = UINT32_MAX; return;
    default: *lo = 0, *hi = -1; return; /* uint64: all ones */
    }
}

/* ---- the reduction kernel ---- */

typedef struct reduce_args {
    const void *x;
    void *y;
    ingot_dtype dt;
    int kind;
    int cat;               /* 0 float, 1 signed int, 2 unsigned int / bool */
    int64_t count;         /* elements reduced into each output */
    int32_t n_keep, n_red; /* merged groups */
    int64_t keep_size[IG_MAX_RANK], keep_stride[IG_MAX_RANK];
    int64_t red_size[IG_MAX_RANK], red_stride[IG_MAX_RANK]; /* the last one is the innermost run */
} reduce_args;

typedef struct acc {
    double f;  /* the sum (of |x|, x^2, ...), product, max or min; LogSumExp: the running maximum */
    double s;  /* LogSumExp: sum of exp(x - f) */
    int64_t i; /* signed: value; unsigned: bit pattern of the uint64 */
} acc;

static void acc_init(const reduce_args *a, acc *c)
{
    int64_t lo, hi;
    c->f = 0;
    c->s = 0;
    c->i = 0;
    if (a->kind == RED_PROD) c->f = 1, c->i = 1;
    if (a->kind == RED_LOGSUMEXP) c->f = -INFINITY;
    if (a->kind == RED_MAX || a->kind == RED_MIN) {
        c->f = a->kind == RED_MAX ? -INFINITY : INFINITY;
        if (a->cat) {
            int_limits(a->dt, &lo, &hi);
            c->i = a->kind == RED_MAX ? lo : hi;
        }
    }
}

/* Fold a strided run of len elements starting at off into the accumulator. */
/* The kinds after RED_MIN, in double (floats, and integers for L2/LogSum/LogSumExp). */
static void acc_run_more(const reduce_args *a, acc *c, int64_t off, int64_t len, int64_t stride)
{
    const ingot_dtype dt = a->dt;
    double v = c->f;
    for (int64_t j = 0; j < len; j++) {
        double e = a->cat == 0   ? ld_real(dt, a->x, off + j * stride)
                   : a->cat == 1 ? (double)ld_int(dt, a->x, off + j * stride)
                                 : (double)(uint64_t)ld_int(dt, a->x, off + j * stride);
        switch (a->kind) {
        case RED_L1: v += fabs(e); break;
        case RED_L2:
        case RED_SUMSQ: v += e * e; break;
        case RED_LOGSUM: v += e; break;
        case RED_PROD: v *= e; break;
        default: /* LogSumExp, as a running maximum v and sum c->s of exp(x - v): nothing overflows */
            if (isnan(e) || isnan(v)) {
                v = NAN;
            } else if (e > v) {
                c->s = c->s * exp(v - e) + 1; /* exp(-inf) = 0 when v is still -inf */
                v = e;
            } else if (e != -INFINITY) {
                c->s += exp(e - v);
            }
            break;
        }
    }
    c->f = v;
}

/* Integer L1, SumSquare and Prod: exact, wrapping like the type. */
static void acc_run_int_more(const reduce_args *a, acc *c, int64_t off, int64_t len, int64_t stride)
{
    uint64_t v = (uint64_t)c->i;
    for (int64_t j = 0; j < len; j++) {
        int64_t e = ld_int(a->dt, a->x, off + j * stride);
        uint64_t u = (uint64_t)e;
        if (a->kind == RED_L1)
            v += a->cat == 1 && e < 0 ? 0u - u : u;
        else if (a->kind == RED_SUMSQ)
            v += u * u;
        else
            v *= u;
    }
    c->i = (int64_t)v;
}

static void acc_run(const reduce_args *a, acc *c, int64_t off, int64_t len, int64_t stride)
{
    const ingot_dtype dt = a->dt;
    if (a->kind > RED_MIN) {
        if (a->cat == 0 || red_via_double(a->kind))
            acc_run_more(a, c, off, len, stride);
        else
            acc_run_int_more(a, c, off, len, stride);
        return;
    }
    if (a->cat == 0) {
        double v = c->f;
        if (a->kind <= RED_MEAN) {
            for (int64_t j = 0; j < len; j++) v += ld_real(dt, a->x, off + j * stride);
        } else if (a->kind == RED_MAX) {
            for (int64_t j = 0; j < len; j++) {
                double e = ld_real(dt, a->x, off + j * stride);
                if (e > v || isnan(e)) v = e;
            }
        } else {
            for (int64_t j = 0; j < len; j++) {
                double e = ld_real(dt, a->x, off + j * stride);
                if (e < v || isnan(e)) v = e;
            }
        }
        c->f = v;
    } else if (a->kind <= RED_MEAN) {
        uint64_t s = (uint64_t)c->i; /* wraps instead of overflowing */
        for (int64_t j = 0; j < len; j++) s += (uint64_t)ld_int(dt, a->x, off + j * stride);
        c->i = (int64_t)s;
    } else if (a->cat == 1) {
        int64_t v = c->i;
        for (int64_t j = 0; j < len; j++) {
            int64_t e = ld_int(dt, a->x, off + j * stride);
            if (a->kind == RED_MAX ? e > v : e < v) v = e;
        }
        c->i = v;
    } else {
        uint64_t v = (uint64_t)c->i;
        for (int64_t j = 0; j < len; j++) {
            uint64_t e = (uint64_t)ld_int(dt, a->x, off + j * stride);
            if (a->kind == RED_MAX ? e > v : e < v) v = e;
        }
        c->i = (int64_t)v;
    }
}

static void acc_store(const reduce_args *a, const acc *c, int64_t o)
{
    if (a->cat == 0 || red_via_double(a->kind)) {
        double v = c->f;
        if (a->kind == RED_MEAN) v /= (double)a->count; /* 0/0: NaN for an empty reduction */
        if (a->kind == RED_L2) v = sqrt(v);
        if (a->kind == RED_LOGSUM) v = log(v); /* empty: log(0) = -inf */
        if (a->kind == RED_LOGSUMEXP && !isnan(v) && v != -INFINITY) v += log(c->s);
        if (a->cat == 0) {
            ig__elem_set_f64(a->dt, a->y, o, v);
        } else { /* integer L2 / LogSum / LogSumExp: truncated toward zero, as numpy's astype */
            ig__elem_set_i64(a->dt, a->y, o,
                             isnan(v)       ? 0
                             : v >= 9.2e18  ? INT64_MAX
                             : v <= -9.2e18 ? INT64_MIN
                                            : (int64_t)v);
        }
        return;
    }
    int64_t v = wrap_int(a->dt, c->i);
    if (a->kind == RED_MEAN) {
        if (a->count == 0)
            v = 0;
        else if (a->cat == 2)
            v = (int64_t)((uint64_t)v / (uint64_t)a->count);
        else
            v = v / a->count;
    }
    ig__elem_set_i64(a->dt, a->y, o, v);
}

static void reduce_range(void *arg, int64_t begin, int64_t end)
{
    const reduce_args *a = arg;
    const int32_t nr = a->n_red;
    const int64_t run = nr ? a->red_size[nr - 1] : 1, run_stride = nr ? a->red_stride[nr - 1] : 1;
    int64_t outer_count = 1; /* combinations of all reduced groups but the innermost */
    for (int32_t k = 0; k + 1 < nr; k++) outer_count *= a->red_size[k];
    for (int64_t o = begin; o < end; o++) {
        int64_t base = 0, rem = o;
        for (int32_t k = a->n_keep - 1; k >= 0; k--) {
            base += (rem % a->keep_size[k]) * a->keep_stride[k];
            rem /= a->keep_size[k];
        }
        acc c;
        acc_init(a, &c);
        if (a->count > 0) {
            int64_t idx[IG_MAX_RANK] = {0}, off = 0;
            for (int64_t t = 0; t < outer_count; t++) {
                acc_run(a, &c, base + off, run, run_stride);
                for (int32_t k = nr - 2; k >= 0; k--) { /* odometer over the outer reduced groups */
                    off += a->red_stride[k];
                    if (++idx[k] < a->red_size[k]) break;
                    off -= a->red_stride[k] * a->red_size[k];
                    idx[k] = 0;
                }
            }
        }
        acc_store(a, &c, o);
    }
}

/* The axes a node reduces at run time, from the attribute or the axes input. */
static ingot_status exec_axes(ig_exec *ex, int64_t *v, int64_t *n)
{
    const ig_node *node = ex->node;
    *n = 0;
    if (node->opset < axes_input_opset(node)) {
        const int64_t *av;
        int64_t an;
        if (ig__attr_ints(node, "axes", &av, &an)) {
            if (an > MAX_AXES) goto bad;
            memcpy(v, av, sizeof(int64_t) * (size_t)an);
            *n = an;
        }
        return INGOT_OK;
    }
    const ig_tensor *t = ex->n_in > 1 ? ex->in[1] : NULL;
    if (!t) return INGOT_OK;
    if (t->numel > MAX_AXES || t->dtype != INGOT_DTYPE_INT64) goto bad;
    if (t->numel) memcpy(v, t->data, sizeof(int64_t) * (size_t)t->numel);
    *n = t->numel;
    return INGOT_OK;
bad:
    return ig__errf(ex->err, INGOT_ERR_MODEL_INVALID, "node '%s' (%s): invalid axes", ig__node_label(ex->node),
                    node->op_type);
}

static ingot_status reduce_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    int64_t axes[MAX_AXES], n_axes;
    ingot_status st = exec_axes(ex, axes, &n_axes);
    if (st != INGOT_OK) return st;
    if (n_axes == 0 && noop_empty(ex->node)) {
        if (x->numel && y->data != x->data) memcpy(y->data, x->data, (size_t)x->numel * ingot_dtype_size(x->dtype));
        return INGOT_OK;
    }
    bool mask[IG_MAX_RANK];
    for (int32_t k = 0; k < x->rank; k++) mask[k] = n_axes == 0;
    for (int64_t i = 0; i < n_axes; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i];
        if (a < 0 || a >= x->rank)
            return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE,
                            "node '%s' (%s): axis %" PRId64 " is out of range for rank %d", ig__node_label(ex->node),
                            ex->node->op_type, axes[i], (int)x->rank);
        mask[a] = true;
    }
    reduce_args ra = {.x = x->data, .y = y->data, .dt = x->dtype, .kind = red_kind(ex->node), .count = 1};
    ra.cat = ig__dtype_is_float(x->dtype) ? 0 : is_unsigned(x->dtype) ? 2 : 1;
    /* merge neighbouring dims of the same kind; dims of size 1 change nothing */
    int64_t stride = 1;
    int32_t last = -1; /* 0 kept, 1 reduced */
    int64_t ks[IG_MAX_RANK], kst[IG_MAX_RANK], rs[IG_MAX_RANK], rst[IG_MAX_RANK];
    int32_t nk = 0, nr = 0;
    for (int32_t k = x->rank - 1; k >= 0; k--) { /* innermost first */
        int64_t d = x->dims[k];
        if (mask[k]) ra.count *= d;
        if (d != 1) {
            int32_t kind = mask[k] ? 1 : 0;
            if (kind == last) {
                if (kind)
                    rs[nr - 1] *= d;
                else
                    ks[nk - 1] *= d;
            } else if (kind) {
                rs[nr] = d, rst[nr++] = stride;
            } else {
                ks[nk] = d, kst[nk++] = stride;
            }
            last = kind;
        }
        stride *= d;
    }
    for (int32_t k = 0; k < nk; k++) ra.keep_size[k] = ks[nk - 1 - k], ra.keep_stride[k] = kst[nk - 1 - k];
    for (int32_t k = 0; k < nr; k++) ra.red_size[k] = rs[nr - 1 - k], ra.red_stride[k] = rst[nr - 1 - k];
    ra.n_keep = nk;
    ra.n_red = nr;
    if (y->numel == 0) return INGOT_OK;
    int64_t grain = 32768 / (ra.count > 0 ? ra.count : 1);
    ig__parallel_for(ex->pool, y->numel, grain < 1 ? 1 : grain, reduce_range, &ra);
    return INGOT_OK;
}

#define REDUCE_DEF(cname, oname)       \
    const ig_op_def ig__op_##cname = { \
        .name = oname,                 \
        .since = 1,                    \
        .min_in = 1,                   \
        .max_in = 2,                   \
        .min_out = 1,                  \
        .max_out = 1,                  \
        .shape_inputs = 1u << 1,       \
        .infer = reduce_infer,         \
        .cpu = reduce_cpu,             \
        .flops = ig__flops_per_input,  \
    }

REDUCE_DEF(reduce_sum, "ReduceSum");
REDUCE_DEF(reduce_mean, "ReduceMean");
REDUCE_DEF(reduce_max, "ReduceMax");
REDUCE_DEF(reduce_min, "ReduceMin");
REDUCE_DEF(reduce_l1, "ReduceL1");
REDUCE_DEF(reduce_l2, "ReduceL2");
REDUCE_DEF(reduce_sum_square, "ReduceSumSquare");
REDUCE_DEF(reduce_log_sum, "ReduceLogSum");
REDUCE_DEF(reduce_log_sum_exp, "ReduceLogSumExp");
REDUCE_DEF(reduce_prod, "ReduceProd");

/* ---- ArgMax ---- */

static ingot_status argmax_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_NUM)) != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0);
    ig_shape out = {.rank = -1};
    if (x->shape.rank >= 0) {
        int32_t a;
        if ((st = ig__norm_axis(cx, ig__attr_int(cx->node, "axis", 0), x->shape.rank, "attribute 'axis'", &a)) !=
            INGOT_OK)
            return st;
        if (ig__dim_known(x->shape.d[a]) && x->shape.d[a].n == 0)
            return ig__fail_shape(cx, "axis %d of input '%s' is empty; %s needs at least one element", (int)a, x->name,
                                  cx->node->op_type);
        bool keep = ig__attr_int(cx->node, "keepdims", 1) != 0;
        out.rank = 0;
        for (int32_t k = 0; k < x->shape.rank; k++) {
            if (k != a)
                out.d[out.rank++] = x->shape.d[k];
            else if (keep)
                out.d[out.rank++] = ig__dim_const(1);
        }
    }
    return ig__set_out(cx, 0, INGOT_DTYPE_INT64, &out);
}

typedef struct argmax_args {
    const void *x;
    int64_t *y;
    ingot_dtype dt;
    int cat;
    int64_t n, inner;
    bool last;
    bool min; /* ArgMin: the same walk with the comparisons reversed */
} argmax_args;

/* The index of the winning element of the line of n elements starting at off (stride inner). */
static int64_t argmax_line(const argmax_args *a, int64_t off)
{
    const int64_t n = a->n, inner = a->inner;
    int64_t best = 0;
    /* "v beats m": v > m for ArgMax, v < m for ArgMin; ties go to the last index with select_last_index */
#define BEATS(v, m) (a->min ? (a->last ? (v) <= (m) : (v) < (m)) : (a->last ? (v) >= (m) : (v) > (m)))
    if (a->cat == 0) { /* NaN wins (numpy: the first NaN, or the last with select_last_index) */
        double m = ld_real(a->dt, a->x, off);
        for (int64_t j = 1; j < n; j++) {
            double v = ld_real(a->dt, a->x, off + j * inner);
            bool take = a->last ? (isnan(v) || (!isnan(m) && BEATS(v, m))) : (!isnan(m) && (BEATS(v, m) || isnan(v)));
            if (take) m = v, best = j;
        }
    } else if (a->cat == 1) {
        int64_t m = ld_int(a->dt, a->x, off);
        for (int64_t j = 1; j < n; j++) {
            int64_t v = ld_int(a->dt, a->x, off + j * inner);
            if (BEATS(v, m)) m = v, best = j;
        }
    } else {
        uint64_t m = (uint64_t)ld_int(a->dt, a->x, off);
        for (int64_t j = 1; j < n; j++) {
            uint64_t v = (uint64_t)ld_int(a->dt, a->x, off + j * inner);
            if (BEATS(v, m)) m = v, best = j;
        }
    }
#undef BEATS
    return best;
}

/* Offset of the first element of line o of n elements at stride inner (lines are numbered outer-major,
 * inner-minor). */
static int64_t line_offset(int64_t o, int64_t n, int64_t inner) { return (o / inner) * n * inner + o % inner; }

static void argmax_range(void *arg, int64_t begin, int64_t end)
{
    const argmax_args *a = arg;
    for (int64_t o = begin; o < end; o++) a->y[o] = argmax_line(a, line_offset(o, a->n, a->inner));
}

static ingot_status argmax_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    int64_t axis = ig__attr_int(ex->node, "axis", 0);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis >= x->rank || x->dims[axis] == 0)
        return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE, "node '%s' (%s): axis %" PRId64 " is out of range or empty",
                        ig__node_label(ex->node), ex->node->op_type, ig__attr_int(ex->node, "axis", 0));
    argmax_args aa = {.x = x->data,
                      .y = ex->out[0]->data,
                      .dt = x->dtype,
                      .n = x->dims[axis],
                      .inner = 1,
                      .last = ex->node->opset >= 12 && ig__attr_int(ex->node, "select_last_index", 0) != 0,
                      .min = !strcmp(ex->node->op_type, "ArgMin")};
    aa.cat = ig__dtype_is_float(x->dtype) ? 0 : is_unsigned(x->dtype) ? 2 : 1;
    for (int64_t k = axis + 1; k < x->rank; k++) aa.inner *= x->dims[k];
    int64_t outs = ex->out[0]->numel, grain = 32768 / aa.n;
    ig__parallel_for(ex->pool, outs, grain < 1 ? 1 : grain, argmax_range, &aa);
    return INGOT_OK;
}

const ig_op_def ig__op_arg_max = {
    .name = "ArgMax",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = argmax_infer,
    .cpu = argmax_cpu,
    .flops = ig__flops_per_input,
};

const ig_op_def ig__op_arg_min = {
    .name = "ArgMin",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = argmax_infer,
    .cpu = argmax_cpu,
    .flops = ig__flops_per_input,
};

/* ---- Hardmax ---- */

/* opset < 13: the input is coerced to 2-D [prod(d[:axis]), prod(d[axis:])] (axis default 1) and each
 * row gets its one 1; opset >= 13: one 1 along the single axis (default -1). */
static int64_t hardmax_default_axis(const ig_node *n) { return n->opset >= 13 ? -1 : 1; }

static ingot_status hardmax_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_FLOAT)) != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0);
    if (x->shape.rank >= 0) {
        int32_t a;
        int64_t axis = ig__attr_int(cx->node, "axis", hardmax_default_axis(cx->node));
        if ((st = ig__norm_axis(cx, axis, x->shape.rank, "attribute 'axis'", &a)) != INGOT_OK) return st;
    }
    return ig__set_out(cx, 0, x->dtype, &x->shape);
}

typedef struct hardmax_args {
    argmax_args a; /* the lines and their winner, as ArgMax finds it (the first maximum; NaN wins) */
    void *y;
} hardmax_args;

/* Each line is read before any of it is written, and lines do not overlap: Y may be X's bytes. */
static void hardmax_range(void *arg, int64_t begin, int64_t end)
{
    const hardmax_args *h = arg;
    const argmax_args *a = &h->a;
    for (int64_t o = begin; o < end; o++) {
        int64_t off = line_offset(o, a->n, a->inner), best = argmax_line(a, off);
        for (int64_t j = 0; j < a->n; j++) ig__elem_set_f64(a->dt, h->y, off + j * a->inner, j == best ? 1.0 : 0.0);
    }
}

static ingot_status hardmax_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    int64_t axis = ig__attr_int(ex->node, "axis", hardmax_default_axis(ex->node));
    if (axis < -x->rank || axis >= x->rank)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "axis %" PRId64 " is out of range for rank %d", axis,
                             (int)x->rank);
    int32_t a = (int32_t)(axis < 0 ? axis + x->rank : axis);
    hardmax_args h = {.a = {.x = x->data, .dt = x->dtype, .cat = 0 /* float */, .n = 1, .inner = 1},
                      .y = ex->out[0]->data};
    for (int32_t k = a; k < x->rank; k++) {
        if (ex->node->opset < 13 || k == a)
            h.a.n *= x->dims[k];
        else
            h.a.inner *= x->dims[k];
    }
    if (x->numel == 0) return INGOT_OK;
    int64_t lines = x->numel / h.a.n, grain = 32768 / h.a.n;
    ig__parallel_for(ex->pool, lines, grain < 1 ? 1 : grain, hardmax_range, &h);
    return INGOT_OK;
}

const ig_op_def ig__op_hardmax = {
    .name = "Hardmax",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .flags = IG_OP_INPLACE,
    .infer = hardmax_infer,
    .cpu = hardmax_cpu,
    .flops = ig__flops_per_input,
};

/* ---- TopK ----
 *
 * The k best elements of each line along the axis, best first, ties to the smaller index (ONNX
 * Runtime's order, and the reference's). NaN ranks above +inf, as numpy sorts it (the reference sorts
 * with numpy; ONNX Runtime's comparisons leave NaN's place undefined): first for largest=1, last for
 * largest=0. -0 and +0 tie. sorted=0 leaves the order to the implementation: the output is sorted
 * anyway, which the spec allows. Opset 1 takes k from an attribute, later opsets from input K. */

#define TOPK_SLOTS 16 /* lines selected side by side at most (scratch slices) */

static ingot_status topk_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_NUM)) != INGOT_OK) return st;
    if ((st = ig__infer_flag(cx, "largest")) != INGOT_OK || (st = ig__infer_flag(cx, "sorted")) != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0);
    int64_t k = 0;
    bool k_known = true; /* false: K is decided at run time */
    if (cx->node->opset < 10) {
        const ig_attr *ka = ig__node_attr(cx->node, "k");
        if (!ka || ka->type != IG_ATTR_INT)
            return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "attribute 'k' is required before opset 10");
        k = ka->i;
    } else {
        const ig_value *kv = ig__in(cx, 1);
        if (!kv) return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "input 1 (K) is required from opset 10");
        int64_t numel;
        if (kv->dtype != INGOT_DTYPE_INT64)
            return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "input 1 '%s' (K) has dtype %s; expected int64", kv->name,
                            ingot_dtype_name(kv->dtype));
        if (kv->shape.rank > 1 || (ig__shape_numel(&kv->shape, &numel) && numel != 1))
            return ig__fail_shape(cx, "input 1 '%s' (K) must hold exactly one value", kv->name);
        k_known = ig__in_known(cx, 1);
        if (k_known && (st = ig__in_ints(cx, 1, &k, 1, &numel)) != INGOT_OK) return st;
    }
    if (k_known && k < 0) return ig__fail_shape(cx, "k = %" PRId64 " is negative", k);
    ig_shape out = {.rank = -1};
    if (x->shape.rank >= 0) {
        int32_t a;
        if ((st = ig__norm_axis(cx, ig__attr_int(cx->node, "axis", -1), x->shape.rank, "attribute 'axis'", &a)) !=
            INGOT_OK)
            return st;
        ig_dim d = x->shape.d[a];
        if (k_known && ig__dim_known(d) && k > d.n)
            return ig__fail_shape(cx, "k = %" PRId64 " is larger than axis %d of input '%s' (%" PRId64 " elements)", k,
                                  (int)a, x->name, d.n);
        out = x->shape;
        out.d[a] = k_known ? ig__dim_const(k) : ig__dim_fresh(cx);
    }
    if ((st = ig__set_out(cx, 0, x->dtype, &out)) != INGOT_OK) return st;
    return ig__set_out(cx, 1, INGOT_DTYPE_INT64, &out);
}

typedef struct topk_args {
    const void *x;
    void *values;
    int64_t *indices;
    ingot_dtype dt;
    int cat; /* 0 float, 1 signed int, 2 unsigned int */
    bool largest;
    int64_t n, inner, k, lines, slots;
    char *scratch; /* slots slices of slice bytes: n keys, then the heap (k <= n entries) */
    size_t slice;
} topk_args;

/* An unsigned key whose order is the element order (larger key: larger element; NaN the largest). */
static uint64_t topk_key(const topk_args *a, int64_t i)
{
    if (a->cat == 0) {
        double v = ld_real(a->dt, a->x, i);
        if (isnan(v)) return UINT64_MAX;
        if (v == 0) v = 0; /* -0 ties with +0 */
        uint64_t b;
        memcpy(&b, &v, 8);
        return b >> 63 ? ~b : b | (1ull << 63);
    }
    uint64_t u = (uint64_t)ld_int(a->dt, a->x, i);
    return a->cat == 1 ? u ^ (1ull << 63) : u;
}

/* Element a of the line ranks below element b: a smaller key, or the same key at a later index. */
static inline bool topk_below(const uint64_t *key, int64_t a, int64_t b)
{
    return key[a] < key[b] || (key[a] == key[b] && a > b);
}

/* Restore the heap h[0..m) (the lowest-ranked entry at the root) below position i. */
static void topk_sift(const uint64_t *key, int64_t *h, int64_t i, int64_t m)
{
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= m) return;
        if (c + 1 < m && topk_below(key, h[c + 1], h[c])) c++;
        if (!topk_below(key, h[c], h[i])) return;
        int64_t tmp = h[i];
        h[i] = h[c];
        h[c] = tmp;
        i = c;
    }
}

/* Slot s selects lines [s * lines / slots, (s + 1) * lines / slots): a heap of the k best seen so far
 * (O(n log k) a line), then sorted in place, best first. */
static void topk_slots(void *arg, int64_t begin, int64_t end)
{
    const topk_args *a = arg;
    const size_t es = ingot_dtype_size(a->dt);
    const int64_t n = a->n, inner = a->inner, k = a->k;
    for (int64_t s = begin; s < end; s++) {
        uint64_t *key = (uint64_t *)(void *)(a->scratch + (size_t)s * a->slice);
        int64_t *h = (int64_t *)(void *)(key + n);
        for (int64_t o = s * a->lines / a->slots; o < (s + 1) * a->lines / a->slots; o++) {
            const int64_t off = line_offset(o, n, inner), yoff = line_offset(o, k, inner);
            for (int64_t j = 0; j < n; j++)
                key[j] = a->largest ? topk_key(a, off + j * inner) : ~topk_key(a, off + j * inner);
            for (int64_t j = 0; j < k; j++) h[j] = j;
            for (int64_t j = k / 2 - 1; j >= 0; j--) topk_sift(key, h, j, k);
            for (int64_t j = k; j < n; j++)
                if (topk_below(key, h[0], j)) {
                    h[0] = j;
                    topk_sift(key, h, 0, k);
                }
            for (int64_t m = k - 1; m > 0; m--) { /* the lowest-ranked goes last */
                int64_t tmp = h[0];
                h[0] = h[m];
                h[m] = tmp;
                topk_sift(key, h, 0, m);
            }
            for (int64_t j = 0; j < k; j++) {
                if (a->values)
                    memcpy((char *)a->values + (size_t)(yoff + j * inner) * es,
                           (const char *)a->x + (size_t)(off + h[j] * inner) * es, es);
                if (a->indices) a->indices[yoff + j * inner] = h[j];
            }
        }
    }
}

/* The lines of a TopK node: their count and length, the stride of their elements, the slots. */
static void topk_geometry(int32_t rank, const int64_t *dims, int32_t axis, topk_args *a)
{
    int64_t outer = 1;
    a->n = dims[axis];
    a->inner = 1;
    for (int32_t k = 0; k < axis; k++) outer *= dims[k];
    for (int32_t k = axis + 1; k < rank; k++) a->inner *= dims[k];
    a->lines = outer * a->inner;
    a->slots = a->lines < TOPK_SLOTS ? a->lines : TOPK_SLOTS;
    a->slice = ((size_t)a->n * 16 + 63) & ~(size_t)63; /* n keys and at most n heap entries */
}

static int32_t topk_axis(const ig_node *n, int32_t rank)
{
    int64_t a = ig__attr_int(n, "axis", -1);
    return (int32_t)(a < 0 ? a + rank : a);
}

static size_t topk_scratch(const ig_graph *g, const ig_node *n)
{
    const ig_value *x = ig__node_input(g, n, 0);
    if (!x || x->shape.rank <= 0) return 0;
    int64_t dims[IG_MAX_RANK];
    for (int32_t k = 0; k < x->shape.rank; k++) dims[k] = x->shape.d[k].n;
    int32_t axis = topk_axis(n, x->shape.rank);
    if (axis < 0 || axis >= x->shape.rank) return 0;
    topk_args a;
    topk_geometry(x->shape.rank, dims, axis, &a);
    return (size_t)a.slots * a.slice;
}

static ingot_status topk_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0], *kt = ex->n_in > 1 ? ex->in[1] : NULL;
    ig_tensor *v = ex->out[0], *ix = ex->n_out > 1 ? ex->out[1] : NULL;
    int32_t axis = topk_axis(ex->node, x->rank);
    if (axis < 0 || axis >= x->rank)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "axis is out of range for rank %d", (int)x->rank);
    int64_t k = ex->node->opset < 10   ? ig__attr_int(ex->node, "k", -1)
                : kt && kt->numel == 1 ? ig__elem_i64(kt->dtype, kt->data, 0)
                                       : -1;
    ig_tensor *shaped = v ? v : ix;
    if (k < 0 || k > x->dims[axis] || (shaped && shaped->dims[axis] != k))
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE,
                             "k = %" PRId64 " is not in [0, %" PRId64 "] (axis %d of the input), or K is not one value",
                             k, x->dims[axis], (int)axis);
    topk_args a = {.x = x->data,
                   .values = v ? v->data : NULL,
                   .indices = ix ? ix->data : NULL,
                   .dt = x->dtype,
                   .cat = ig__dtype_is_float(x->dtype) ? 0
                          : is_unsigned(x->dtype)      ? 2
                                                       : 1,
                   .largest = ig__attr_int(ex->node, "largest", 1) != 0,
                   .k = k};
    topk_geometry(x->rank, x->dims, axis, &a);
    if (k == 0 || a.lines == 0) return INGOT_OK;
    void *own;
    ingot_status st = ig__exec_scratch(ex, (size_t)a.slots * a.slice, &a.scratch, &own);
    if (st != INGOT_OK) return st;
    ig__parallel_for(ex->pool, a.slots, 1, topk_slots, &a);
    if (own) ig__free_aligned(own);
    return INGOT_OK;
}

const ig_op_def ig__op_top_k = {
    .name = "TopK",
    .since = 1,
    .min_in = 1,
    .max_in = 2,
    .min_out = 2,
    .max_out = 2,
    .shape_inputs = 1u << 1,
    .infer = topk_infer,
    .cpu = topk_cpu,
    .cpu_scratch = topk_scratch,
    .flops = ig__flops_per_input,
};
