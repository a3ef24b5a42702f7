/*
 * sample.c -- sampling at computed positions: GridSample (opsets 16 and 20) and AffineGrid (20), the
 * two halves of a spatial transformer (AffineGrid makes the positions, GridSample reads X there).
 *
 * GridSample follows onnx's reference implementation (onnx.reference), which follows PyTorch's
 * grid_sample: each grid vector (innermost axis first) is unnormalised per axis into an input
 * coordinate, moved inside the input by the padding mode when it falls outside, and read through taps
 * (1 nearest, 2 linear, 4 cubic per axis) whose indices are each mapped by the padding mode again.
 * Opset 16 is 4-D only, with modes bilinear / nearest / bicubic; opset 20 takes 1 to 6 spatial axes
 * (cubic: at most 4), with modes linear / nearest / cubic (N-linear and N-cubic). Coordinates are
 * computed in fp32 as the reference does (in double for a double grid, as PyTorch does), so nearest's
 * ties (rounded half to even) fall the same way; the weighted sums run in double, as Resize's do. X is a
 * float type: the schema also lists integer X ("cast to integer at the end"), which neither the
 * reference (its weights truncate to X's type) nor ONNX Runtime computes, so nothing could check it. Where the
 * reference and ONNX Runtime differ, ingot follows the reference: cubic with border padding clamps a position past the
 * border before placing its taps (ONNX Runtime and PyTorch clamp each tap of the unclamped position), and AffineGrid
 * puts a single position at -1 with align_corners (as PyTorch's linspace does; ONNX Runtime puts it at 0).
 */
#include "ops_internal.h"

#include <inttypes.h>
#include <stdio.h>

/* ==== GridSample ===================================================================================== */

enum { GS_LINEAR, GS_NEAREST, GS_CUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

#define GS_MAX_COMBOS 256 /* tap combinations per output point: cubic over at most 4 spatial axes */

typedef struct gs_cfg {
    int mode, pad;
    bool align;
} gs_cfg;

/* Read the attributes; the mode names changed at opset 20. On failure writes why and returns false. */
static bool gs_parse(const ig_node *n, gs_cfg *c, char *why, size_t why_n)
{
    static const char *const modes16[] = {"bilinear", "nearest", "bicubic"};
    static const char *const modes20[] = {"linear", "nearest", "cubic"};
    static const char *const pads[] = {"zeros", "border", "reflection"};
    bool v20 = n->opset >= 20;
    const char *mode = ig__attr_str(n, "mode", v20 ? "linear" : "bilinear");
    const char *pad = ig__attr_str(n, "padding_mode", "zeros");
    c->mode = ig__str_index(mode, v20 ? modes20 : modes16, 3);
    c->pad = ig__str_index(pad, pads, 3);
    c->align = ig__attr_int(n, "align_corners", 0) != 0; /* 0 or 1: checked by inference */
    if (c->mode < 0)
        snprintf(why, why_n, "attribute 'mode' = '%s' is not supported (opset %d: %s)", mode, (int)n->opset,
                 v20 ? "linear, nearest or cubic" : "bilinear, nearest or bicubic");
    else if (c->pad < 0)
        snprintf(why, why_n, "attribute 'padding_mode' = '%s' is not supported (zeros, border or reflection)", pad);
    return c->mode >= 0 && c->pad >= 0;
}

/* Whether X of rank `rank` can be sampled with cfg c: INGOT_OK, or the failure's status with why
 * written. Opset 16 is 4-D only; cubic's 4^r taps per output point are kept to 4 spatial axes. */
static ingot_status gs_check_rank(const ig_node *n, const gs_cfg *c, int32_t rank, char *why, size_t why_n)
{
    if (n->opset < 20 && rank != 4) {
        snprintf(why, why_n, "input X has rank %d; GridSample-16 takes a 4-D [N, C, H, W] input", (int)rank);
        return INGOT_ERR_MODEL_SHAPE;
    }
    if (rank < 3) {
        snprintf(why, why_n, "input X has rank %d; it needs N, C and at least one spatial axis", (int)rank);
        return INGOT_ERR_MODEL_SHAPE;
    }
    if (c->mode == GS_CUBIC && rank > 6) {
        snprintf(why, why_n, "mode 'cubic' over %d spatial axes is not supported (at most 4)", (int)rank - 2);
        return INGOT_ERR_MODEL_UNSUPPORTED_OP;
    }
    return INGOT_OK;
}

static ingot_status gs_infer(ig_infer *cx)
{
    ingot_status st;
    gs_cfg c;
    char why[256];
    if (!gs_parse(cx->node, &c, why, sizeof why)) return ig__unsupported(cx, "%s", why);
    if ((st = ig__infer_flag(cx, "align_corners")) != INGOT_OK) return st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_FLOAT)) != INGOT_OK) return st;
    if ((st = ig__check_dtype(cx, 1, IG_TS_FLOAT)) != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0), *grid = ig__in(cx, 1);
    int32_t rank = x->shape.rank >= 0 ? x->shape.rank : grid->shape.rank;
    ig_shape out = {.rank = -1};
    if (rank < 0) return ig__set_out(cx, 0, x->dtype, &out);
    if ((st = gs_check_rank(cx->node, &c, rank, why, sizeof why)) != INGOT_OK) return ig__fail(cx, st, "%s", why);
    char s1[256], s2[256];
    if (grid->shape.rank >= 0) {
        bool bad = grid->shape.rank != rank;
        if (!bad) {
            ig_dim last = grid->shape.d[rank - 1], nx = x->shape.d[0], ng = grid->shape.d[0];
            bad = (ig__dim_known(last) && last.n != rank - 2) ||
                  (x->shape.rank >= 0 && ig__dim_known(nx) && ig__dim_known(ng) && nx.n != ng.n);
        }
        if (bad)
            return ig__fail_shape(cx, "input X has shape %s and grid %s; grid must be [N, out spatial dims..., %d]",
                                  ig__shape_str(cx->g, &x->shape, s1, sizeof s1),
                                  ig__shape_str(cx->g, &grid->shape, s2, sizeof s2), (int)rank - 2);
    }
    for (int32_t k = 2; k < x->shape.rank; k++)
        if (ig__dim_known(x->shape.d[k]) && x->shape.d[k].n == 0)
            return ig__fail_shape(cx, "input X has shape %s: an empty spatial axis has nothing to sample",
                                  ig__shape_str(cx->g, &x->shape, s1, sizeof s1));
    out.rank = rank;
    /* N and C from X, the spatial dims from the grid; N from the grid where only it is concrete */
    out.d[0] = x->shape.rank >= 0 ? x->shape.d[0] : grid->shape.d[0];
    if (!ig__dim_known(out.d[0]) && grid->shape.rank >= 0 && ig__dim_known(grid->shape.d[0]))
        out.d[0] = grid->shape.d[0];
    out.d[1] = x->shape.rank >= 0 ? x->shape.d[1] : ig__dim_fresh(cx);
    for (int32_t k = 2; k < rank; k++) out.d[k] = grid->shape.rank >= 0 ? grid->shape.d[k - 1] : ig__dim_fresh(cx);
    return ig__set_out(cx, 0, x->dtype, &out);
}

typedef struct gs_args {
    const gs_cfg *c;
    int32_t r;                   /* spatial axes */
    int64_t n_ch;                /* C */
    int64_t len[IG_MAX_RANK];    /* input spatial dims */
    int64_t stride[IG_MAX_RANK]; /* their strides in one input plane */
    int64_t in_plane, out_plane; /* elements per (n, c) plane */
    const void *x, *grid;
    void *y;
    ingot_dtype xt, gt;
} gs_args;

/* The taps one output point reads along one axis: offsets (index * stride) and weights. Taps that read
 * zero padding are left out. */
typedef struct gs_axis_taps {
    int n;
    int64_t off[4];
    double w[4];
} gs_axis_taps;

/* Element i of X as a double: fp32 inline (the common case), the others through the dtype helper. */
static inline double x_at(const gs_args *a, int64_t i)
{
    return a->xt == INGOT_DTYPE_FLOAT ? ((const float *)a->x)[i] : ig__elem_f64(a->xt, a->x, i);
}

static inline void st_f64(ingot_dtype t, void *p, int64_t i, double v)
{
    switch (t) {
    case INGOT_DTYPE_FLOAT: ((float *)p)[i] = (float)v; return;
    case INGOT_DTYPE_DOUBLE: ((double *)p)[i] = v; return;
    case INGOT_DTYPE_FLOAT16: ((uint16_t *)p)[i] = ig__f32_to_f16(ig__f64_to_f32_odd(v)); return;
    default: ((uint16_t *)p)[i] = ig__f32_to_bf16(ig__f64_to_f32_odd(v)); return;
    }
}

/* x reflected by the borders lo and hi until inside. Whole round trips (2 * span) change nothing, so
 * fmod takes them off at once: no loop, and no int conversion of a huge quotient. A span of 0 (one
 * pixel, align_corners) leaves only lo. NaN stays NaN. */
static double reflect(double x, double lo, double hi)
{
    double span = hi - lo;
    if (!(span > 0)) return lo;
    if (x >= lo && x <= hi) return x;
    double m = fmod(x < lo ? lo - x : x - hi, 2 * span);
    bool back = m >= span; /* an odd number of reflections */
    double r = back ? m - span : m;
    return (x < lo) != back ? lo + r : hi - r;
}

/* The element an integer tap position reads along an axis of length len, -1 for zero padding. */
static int64_t tap_index(int pad, int64_t i, int64_t len, double lo, double hi)
{
    if (i >= 0 && i < len) return i;
    if (pad == GS_ZEROS) return -1;
    if (pad == GS_BORDER) return i < 0 ? 0 : len - 1;
    int64_t k = (int64_t)reflect((double)i, lo, hi); /* an integer: borders are integers or halves */
    return k < 0 ? 0 : k >= len ? len - 1 : k;
}

/* Keys' cubic convolution kernel with a = -0.75, as the spec fixes it. */
static double cubic_kernel(double s)
{
    const double a = -0.75;
    s = fabs(s);
    if (s <= 1) return ((a + 2) * s - (a + 3)) * s * s + 1;
    if (s < 2) return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
    return 0;
}

/* Grid value gi unnormalised to a coordinate along an axis of length len, in the grid's precision. */
static double unnormalize(const gs_args *a, int64_t gi, int64_t len)
{
    if (a->gt == INGOT_DTYPE_DOUBLE) {
        double g = ((const double *)a->grid)[gi];
        return a->c->align ? (g + 1) / 2 * (double)(len - 1) : ((g + 1) * (double)len - 1) / 2;
    }
    float g = (float)ig__elem_f64(a->gt, a->grid, gi), l = (float)len;
    return a->c->align ? (g + 1.0f) / 2.0f * (l - 1.0f) : ((g + 1.0f) * l - 1.0f) / 2.0f;
}

static void axis_taps(const gs_args *a, double x, int32_t axis, gs_axis_taps *t)
{
    const gs_cfg *c = a->c;
    const int64_t len = a->len[axis];
    const double lo = c->align ? 0 : -0.5, hi = c->align ? (double)(len - 1) : (double)len - 0.5;
    if (c->mode == GS_NEAREST) x = nearbyint(x);
    if (x < lo || x > hi) {
        if (c->pad == GS_BORDER) x = x < 0 ? 0 : (double)(len - 1);
        if (c->pad == GS_REFLECTION) x = reflect(x, lo, hi);
    }
    /* NaN, or far outside (zero padding): every tap reads padding or the edge either way, and x stays
     * where int64 conversions are defined */
    const double lim = (double)len + 4;
    if (!(x >= -lim)) x = -lim;
    if (x > lim) x = lim;
    double f = floor(x), u = x - f, w[4];
    int64_t first = (int64_t)f, k = 1;
    if (c->mode == GS_NEAREST) {
        w[0] = 1;
    } else if (c->mode == GS_LINEAR) {
        w[0] = 1 - u, w[1] = u, k = 2;
    } else {
        for (int j = 0; j < 4; j++) w[j] = cubic_kernel(u + 1 - j);
        first -= 1, k = 4;
    }
    t->n = 0;
    for (int64_t j = 0; j < k; j++) {
        int64_t i = tap_index(c->pad, first + j, len, lo, hi);
        if (i < 0) continue;
        t->off[t->n] = i * a->stride[axis];
        t->w[t->n++] = w[j];
    }
}

/* The tap combinations of output point p (n * out_plane + q): offsets into an input plane and weights;
 * returns their count (0: every combination reads zero padding). */
static int64_t point_taps(const gs_args *a, int64_t p, int64_t *off, double *w)
{
    gs_axis_taps t[IG_MAX_RANK];
    int64_t n_comb = 1;
    for (int32_t k = 0; k < a->r; k++) { /* grid vectors list the innermost axis first */
        int32_t axis = a->r - 1 - k;
        axis_taps(a, unnormalize(a, p * a->r + k, a->len[axis]), axis, &t[axis]);
        n_comb *= t[axis].n;
    }
    if (n_comb == 0) return 0;
    off[0] = 0, w[0] = 1;
    int64_t m = 1;
    for (int32_t axis = 0; axis < a->r; axis++) { /* the product, one axis at a time, in place */
        for (int64_t e = m - 1; e >= 0; e--)
            for (int j = t[axis].n - 1; j >= 0; j--) {
                off[e * t[axis].n + j] = off[e] + t[axis].off[j];
                w[e * t[axis].n + j] = w[e] * t[axis].w[j];
            }
        m *= t[axis].n;
    }
    return m;
}

static void gs_points(void *arg, int64_t begin, int64_t end)
{
    const gs_args *a = arg;
    int64_t off[GS_MAX_COMBOS];
    double w[GS_MAX_COMBOS];
    for (int64_t p = begin; p < end; p++) {
        const int64_t n = p / a->out_plane, q = p % a->out_plane, nc = point_taps(a, p, off, w);
        for (int64_t ch = 0; ch < a->n_ch; ch++) {
            const int64_t plane = n * a->n_ch + ch, xb = plane * a->in_plane;
            /* started from the first product, not from 0: nearest keeps a -0.0 */
            double acc = nc ? w[0] * x_at(a, xb + off[0]) : 0;
            for (int64_t j = 1; j < nc; j++) acc += w[j] * x_at(a, xb + off[j]);
            st_f64(a->xt, a->y, plane * a->out_plane + q, acc);
        }
    }
}

static int64_t gs_taps_per_point(const gs_cfg *c, int32_t r)
{
    int64_t k = c->mode == GS_NEAREST ? 1 : c->mode == GS_LINEAR ? 2 : 4, m = 1;
    for (int32_t i = 0; i < r; i++) m *= k;
    return m;
}

static ingot_status gs_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0], *grid = ex->in[1];
    ig_tensor *y = ex->out[0];
    gs_cfg c;
    char why[256];
    if (!gs_parse(ex->node, &c, why, sizeof why)) return ig__exec_fail(ex, INGOT_ERR_MODEL_UNSUPPORTED_OP, "%s", why);
    ingot_status st = gs_check_rank(ex->node, &c, x->rank, why, sizeof why);
    if (st != INGOT_OK) return ig__exec_fail(ex, st, "%s", why);
    const int32_t rank = x->rank, r = rank - 2;
    bool ok = grid->rank == rank && y->rank == rank && grid->dims[rank - 1] == r && grid->dims[0] == x->dims[0] &&
              y->dims[0] == x->dims[0] && y->dims[1] == x->dims[1];
    for (int32_t k = 2; ok && k < rank; k++) ok = y->dims[k] == grid->dims[k - 1] && (x->dims[k] > 0 || !y->numel);
    if (!ok)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE,
                             "input X of rank %d, grid of rank %d and output of rank %d do not fit together (grid "
                             "must be [N, out spatial dims..., %d] and X's spatial dims non-empty)",
                             (int)rank, (int)grid->rank, (int)y->rank, (int)r);
    if (!y->numel) return INGOT_OK;
    gs_args a = {.c = &c,
                 .r = r,
                 .n_ch = x->dims[1],
                 .in_plane = 1,
                 .out_plane = 1,
                 .x = x->data,
                 .grid = grid->data,
                 .y = y->data,
                 .xt = x->dtype,
                 .gt = grid->dtype};
    for (int32_t k = r - 1; k >= 0; k--) {
        a.len[k] = x->dims[k + 2];
        a.stride[k] = a.in_plane;
        a.in_plane *= x->dims[k + 2];
        a.out_plane *= y->dims[k + 2];
    }
    int64_t per_point = a.n_ch * gs_taps_per_point(&c, r), grain = 16384 / (per_point > 0 ? per_point : 1);
    ig__parallel_for(ex->pool, x->dims[0] * a.out_plane, grain < 1 ? 1 : grain, gs_points, &a);
    return INGOT_OK;
}

/* A multiply-add per tap combination of each output element; nearest only copies. */
static double gs_flops(const ig_graph *g, const ig_node *n)
{
    const ig_value *x = ig__node_input(g, n, 0);
    gs_cfg c;
    char why[8];
    if (!x || x->shape.rank < 3 || !gs_parse(n, &c, why, sizeof why) || c.mode == GS_NEAREST) return 0;
    return 2.0 * (double)gs_taps_per_point(&c, x->shape.rank - 2) * ig__value_numel(g, n->outputs[0]);
}

const ig_op_def ig__op_grid_sample = {
    .name = "GridSample",
    .since = 16,
    .min_in = 2,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .infer = gs_infer,
    .cpu = gs_cpu,
    .flops = gs_flops,
};

/* ==== AffineGrid ====================================================================================== */

/* theta [N, r, r+1] (r = 2 or 3) maps the positions of a regular grid over [-1, 1]^r, sized by the
 * values of `size` ([N, C, H, W] or [N, C, D, H, W]), to output [N, (D,) H, W, r]. Positions list
 * the innermost axis first (x, y, z), as GridSample reads them. */

static ingot_status ag_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = ig__infer_flag(cx, "align_corners")) != INGOT_OK) return st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_FLOAT)) != INGOT_OK) return st;
    if ((st = ig__check_dtype(cx, 1, IG_T(INT64))) != INGOT_OK) return st;
    const ig_value *theta = ig__in(cx, 0), *size = ig__in(cx, 1);
    char s1[256];
    /* r from theta's shape, or from the length of size */
    int32_t r = -1;
    if (theta->shape.rank >= 0) {
        const ig_dim *d = theta->shape.d;
        bool ok = theta->shape.rank == 3;
        if (ok && ig__dim_known(d[1])) {
            ok = d[1].n == 2 || d[1].n == 3;
            r = (int32_t)d[1].n;
        }
        if (ok && ig__dim_known(d[2])) {
            ok = r < 0 ? d[2].n == 3 || d[2].n == 4 : d[2].n == r + 1;
            r = (int32_t)d[2].n - 1;
        }
        if (!ok)
            return ig__fail_shape(cx, "input theta has shape %s; it must be [N, 2, 3] (2-D) or [N, 3, 4] (3-D)",
                                  ig__shape_str(cx->g, &theta->shape, s1, sizeof s1));
    }
    if (size->shape.rank >= 0) {
        const ig_dim *d = size->shape.d;
        if (size->shape.rank != 1 || (ig__dim_known(d[0]) && d[0].n != 4 && d[0].n != 5) ||
            (ig__dim_known(d[0]) && r >= 0 && d[0].n != r + 2))
            return ig__fail_shape(cx, "input size has shape %s; theta needs %s values",
                                  ig__shape_str(cx->g, &size->shape, s1, sizeof s1),
                                  r == 3   ? "5 (N, C, D, H, W)"
                                  : r == 2 ? "4 (N, C, H, W)"
                                           : "4 or 5");
        if (ig__dim_known(d[0])) r = (int32_t)d[0].n - 2;
    }
    ig_shape out = {.rank = r < 0 ? -1 : r + 2};
    ig_dim v[IG_MAX_RANK];
    int32_t nv;
    ig_dim n_theta = theta->shape.rank >= 0 ? theta->shape.d[0] : ig__dim_fresh(cx);
    if (r >= 0 && ig__in_vals(cx, 1, v, IG_MAX_RANK, &nv) && nv == r + 2) {
        for (int32_t k = 0; k < nv; k++)
            if (ig__dim_known(v[k]) && v[k].n < 0)
                return ig__fail_shape(cx, "size[%d] = %" PRId64 " is negative", (int)k, v[k].n);
        if (ig__dim_known(v[0]) && ig__dim_known(n_theta) && v[0].n != n_theta.n)
            return ig__fail_shape(cx, "size[0] = %" PRId64 " but theta holds %" PRId64 " matrices", v[0].n, n_theta.n);
        out.d[0] = ig__dim_known(v[0]) || !ig__dim_known(n_theta) ? v[0] : n_theta;
        for (int32_t k = 0; k < r; k++) out.d[k + 1] = v[k + 2];
    } else if (r >= 0) {
        out.d[0] = n_theta;
        for (int32_t k = 0; k < r; k++) out.d[k + 1] = ig__dim_fresh(cx);
    }
    if (r >= 0) out.d[r + 1] = ig__dim_const(r);
    return ig__set_out(cx, 0, theta->dtype, &out);
}

typedef struct ag_args {
    int32_t r;
    int64_t len[3], n_rows; /* spatial dims of the output; rows: all its dims but the last two */
    bool align;
    const void *theta;
    void *y;
    ingot_dtype t;
} ag_args;

/* Position i of n evenly spaced over [-1, 1]: at the corner pixels' centres (align_corners) or edges. */
static double ag_pos(int64_t i, int64_t n, bool align)
{
    if (align) return n > 1 ? -1 + 2 * (double)i / (double)(n - 1) : -1;
    return (2 * (double)i + 1) / (double)n - 1;
}

/* One output row (all but the innermost spatial axis fixed) per task. */
static void ag_rows(void *arg, int64_t begin, int64_t end)
{
    const ag_args *a = arg;
    const int32_t r = a->r, h = r + 1;
    const int64_t w_len = a->len[r - 1];
    for (int64_t row = begin; row < end; row++) {
        double v[4]; /* homogeneous position: x (innermost), y, (z), 1 */
        int64_t rem = row;
        for (int32_t k = r - 2; k >= 0; k--) {
            v[r - 1 - k] = ag_pos(rem % a->len[k], a->len[k], a->align);
            rem /= a->len[k];
        }
        const int64_t n = rem;
        v[r] = 1;
        double th[12];
        for (int32_t j = 0; j < r * h; j++) th[j] = ig__elem_f64(a->t, a->theta, n * r * h + j);
        for (int64_t i = 0; i < w_len; i++) {
            v[0] = ag_pos(i, w_len, a->align);
            for (int32_t o = 0; o < r; o++) {
                double s = 0;
                for (int32_t j = 0; j < h; j++) s += th[o * h + j] * v[j];
                st_f64(a->t, a->y, (row * w_len + i) * r + o, s);
            }
        }
    }
}

static ingot_status ag_cpu(ig_exec *ex)
{
    const ig_tensor *theta = ex->in[0], *size = ex->in[1];
    ig_tensor *y = ex->out[0];
    const int32_t r = y->rank - 2;
    bool ok = (r == 2 || r == 3) && theta->rank == 3 && theta->dims[1] == r && theta->dims[2] == r + 1 &&
              theta->dims[0] == y->dims[0] && y->dims[r + 1] == r && size->rank == 1 && size->dims[0] == r + 2;
    const int64_t *sv = size->data;
    ok = ok && sv[0] == y->dims[0];
    for (int32_t k = 0; ok && k < r; k++) ok = sv[k + 2] == y->dims[k + 1];
    if (!ok)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE,
                             "theta [N, r, r+1], size [N, C, spatial...] and the output planned do not agree");
    if (!y->numel) return INGOT_OK;
    ag_args a = {.r = r,
                 .n_rows = y->dims[0],
                 .align = ig__attr_int(ex->node, "align_corners", 0) != 0,
                 .theta = theta->data,
                 .y = y->data,
                 .t = theta->dtype};
    for (int32_t k = 0; k < r; k++) a.len[k] = y->dims[k + 1];
    for (int32_t k = 0; k < r - 1; k++) a.n_rows *= a.len[k];
    int64_t per_row = a.len[r - 1] * r * (r + 1), grain = 16384 / (per_row > 0 ? per_row : 1);
    ig__parallel_for(ex->pool, a.n_rows, grain < 1 ? 1 : grain, ag_rows, &a);
    return INGOT_OK;
}

/* r multiply-adds per output element (the dot product with the homogeneous position). */
static double ag_flops(const ig_graph *g, const ig_node *n)
{
    const ig_value *y = &g->values[n->outputs[0]];
    int32_t r = y->shape.rank - 2;
    return r == 2 || r == 3 ? 2.0 * r * ig__value_numel(g, n->outputs[0]) : 0;
}

const ig_op_def ig__op_affine_grid = {
    .name = "AffineGrid",
    .since = 20,
    .min_in = 2,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = 1u << 1, /* size */
    .infer = ag_infer,
    .cpu = ag_cpu,
    .flops = ag_flops,
};
