/*
 * roi_align.c -- RoiAlign (opsets 10, 16 and 22): each ROI [x1, y1, x2, y2] of rois, scaled by
 * spatial_scale, is cut into output_height x output_width bins over image batch_indices[r] of X; a
 * bin's value is the average (or the maximum) of bilinear samples on a regular grid inside it.
 *
 * The semantics are those of ONNX's reference and ONNX Runtime, quirks included:
 *  - opset 10 knows only output_half_pixel (ROI corners as given, a ROI under 1x1 grown to 1x1);
 *    from opset 16 the default half_pixel shifts the corners by -0.5 and keeps the size as it is;
 *  - a sample more than one pixel outside the map is 0; one within that pixel reads the edge;
 *  - mode max takes the largest *weighted corner* w_i * x_i of each sample, not the interpolated value;
 *  - sampling_ratio 0 puts ceil(bin size) samples on each axis of a bin.
 * Coordinates, weights and sums are computed in X's type (float16/bfloat16 in fp32), each operation
 * rounded as those two round it, in their order, so the in-or-out tests of samples agree with theirs.
 *
 * Bounded work: with sampling_ratio 0, a huge ROI (1e30) asks for ~1e29 samples per bin axis (ONNX
 * Runtime sizes a table by that count: a ROI of 1e6 pixels fails there with bad_alloc). Here the adaptive grid is
 * capped at ROI_MAX_GRID samples per bin axis (a bin taller than 65536 map pixels -- far past any feature map -- is
 * sampled more sparsely than ONNX Runtime would), and the samples that lie off the map (each 0) are not visited at all:
 * the positions of a bin's samples are monotonic in their index, so binary searches find the ones on the map. Adaptive
 * samples are 0.5 to 1 pixel apart, so a bin axis visits at most ~2 * (map size + 2) of them whatever the ROI. A
 * positive sampling_ratio is the model's fixed cost (ratio^2 samples per bin, counted by .flops), refused above
 * ROI_MAX_RATIO.
 *
 * Run-time errors, as ONNX Runtime: a batch index outside [0, N), a ROI corner that is NaN or infinite.
 * Defined where the oracles are not: a finite ROI whose size overflows to infinity gives 0; samples off
 * the map are exactly 0 (both oracles read x[0, 0] times a weight of 0 there, which gives NaN when
 * x[0, 0] is infinite or NaN).
 */
#include "op.h"
#include "ops_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#define ROI_MAX_GRID  65536
#define ROI_MAX_RATIO 1024

typedef struct roi_attrs {
    bool max_mode, half_pixel;
    int64_t oh, ow, ratio;
    float scale;
} roi_attrs;

/* The node's attributes, checked; false with the reason in why. */
static bool read_attrs(const ig_node *n, roi_attrs *a, char *why, size_t why_n)
{
    const char *mode = ig__attr_str(n, "mode", "avg");
    const char *ctm =
        ig__attr_str(n, "coordinate_transformation_mode", n->opset >= 16 ? "half_pixel" : "output_half_pixel");
    a->oh = ig__attr_int(n, "output_height", 1);
    a->ow = ig__attr_int(n, "output_width", 1);
    a->ratio = ig__attr_int(n, "sampling_ratio", 0);
    a->scale = ig__attr_float(n, "spatial_scale", 1.0f);
    a->max_mode = !strcmp(mode, "max");
    a->half_pixel = !strcmp(ctm, "half_pixel");
    if (!a->max_mode && strcmp(mode, "avg"))
        snprintf(why, why_n, "attribute mode='%s' is not supported (avg or max)", mode);
    else if (!a->half_pixel && strcmp(ctm, "output_half_pixel"))
        snprintf(why, why_n,
                 "attribute coordinate_transformation_mode='%s' is not supported (half_pixel or output_half_pixel)",
                 ctm);
    else if (a->half_pixel && n->opset < 16)
        snprintf(why, why_n, "attribute coordinate_transformation_mode='half_pixel' needs opset 16 (the node has %d)",
                 (int)n->opset);
    else if (a->oh < 1 || a->oh > INT32_MAX || a->ow < 1 || a->ow > INT32_MAX)
        snprintf(why, why_n,
                 "attributes output_height=%" PRId64 ", output_width=%" PRId64 " are not supported (1 to %d)", a->oh,
                 a->ow, INT32_MAX);
    else if (a->ratio < 0 || a->ratio > ROI_MAX_RATIO)
        snprintf(why, why_n, "attribute sampling_ratio=%" PRId64 " is not supported (0 to %d: ratio^2 samples per bin)",
                 a->ratio, ROI_MAX_RATIO);
    else
        return true;
    return false;
}

/* Fail unless dim k of value v is `want` (where both are known); `what` names it. */
static ingot_status check_dim(ig_infer *cx, const ig_value *v, int32_t k, ig_dim want, const char *what)
{
    ig_dim d = v->shape.d[k];
    if (!ig__dim_known(d) || !ig__dim_known(want) || d.n == want.n) return INGOT_OK;
    return ig__fail_shape(cx, "'%s' has %" PRId64 " at axis %d, but %s is %" PRId64, v->name, d.n, (int)k, what,
                          want.n);
}

static ingot_status check_rank(ig_infer *cx, const ig_value *v, int32_t want, const char *what)
{
    if (v->shape.rank < 0 || v->shape.rank == want) return INGOT_OK;
    return ig__fail_shape(cx, "%s '%s' must have rank %d, got %d", what, v->name, (int)want, (int)v->shape.rank);
}

static ingot_status roi_align_infer(ig_infer *cx)
{
    ingot_status st;
    roi_attrs at;
    char why[256];
    if (!read_attrs(cx->node, &at, why, sizeof why)) return ig__unsupported(cx, "%s", why);
    IG_TRY(st, ig__infer_float_attr(cx, "spatial_scale"), out);
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_FLOAT), out);
    IG_TRY(st, ig__check_dtype(cx, 2, IG_T(INT64)), out);
    const ig_value *x = ig__in(cx, 0), *rois = ig__in(cx, 1), *bi = ig__in(cx, 2);
    if (!x || !rois || !bi) return ig__fail_shape(cx, "inputs X, rois and batch_indices are required");
    if (rois->dtype != x->dtype)
        return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "rois '%s' has dtype %s but X '%s' has %s", rois->name,
                        ingot_dtype_name(rois->dtype), x->name, ingot_dtype_name(x->dtype));
    IG_TRY(st, check_rank(cx, x, 4, "X"), out);
    IG_TRY(st, check_rank(cx, rois, 2, "rois"), out);
    IG_TRY(st, check_rank(cx, bi, 1, "batch_indices"), out);
    if (rois->shape.rank == 2)
        IG_TRY(st, check_dim(cx, rois, 1, ig__dim_const(4), "a ROI's size [x1, y1, x2, y2]"), out);
    /* ONNX takes the ROI count from batch_indices */
    ig_dim n_rois = bi->shape.rank == 1 ? bi->shape.d[0] : rois->shape.rank == 2 ? rois->shape.d[0] : ig__dim_fresh(cx);
    if (rois->shape.rank == 2) IG_TRY(st, check_dim(cx, rois, 0, n_rois, "the length of batch_indices"), out);
    ig_shape s = {.rank = 4};
    s.d[0] = n_rois;
    s.d[1] = x->shape.rank == 4 ? x->shape.d[1] : ig__dim_fresh(cx);
    s.d[2] = ig__dim_const(at.oh);
    s.d[3] = ig__dim_const(at.ow);
    st = ig__set_out(cx, 0, x->dtype, &s);
out:
    return st;
}

/* ---- the kernel ------------------------------------------------------------------------------- */

typedef struct roi_job {
    roi_attrs at;
    bool f32;       /* compute in fp32 (else double) */
    ig_float_io io; /* X [N, C, H, W] and Y [R, C, oh, ow], in fp32 or double */
    const ig_tensor *rois;
    const int64_t *batch; /* [R], checked to lie in [0, N) */
    int64_t c, h, w;
} roi_job;

/* One axis (y or x) of one ROI. */
typedef struct roi_axis {
    double start, bin; /* the first bin's start and the bin size, in map pixels */
    int64_t grid;      /* samples per bin on this axis; 0: none */
    int64_t size;      /* the map's size on this axis */
} roi_axis;

static roi_axis make_axis(const roi_job *jb, double lo, double hi, int64_t n_bins, int64_t size)
{
    bool f = jb->f32;
    double off = jb->at.half_pixel ? 0.5 : 0.0;
    roi_axis a = {.size = size};
    a.start = ig__round_to(f, ig__round_to(f, lo * jb->at.scale) - off);
    double len = ig__round_to(f, ig__round_to(f, ig__round_to(f, hi * jb->at.scale) - off) - a.start);
    if (!jb->at.half_pixel && len < 1.0) len = 1.0; /* grown to 1 pixel (NaN stays NaN) */
    a.bin = ig__round_to(f, len / ig__round_to(f, (double)n_bins));
    double g = jb->at.ratio > 0 ? (double)jb->at.ratio : ceil(a.bin);
    a.grid = !(g >= 1.0) ? 0 : g > ROI_MAX_GRID ? ROI_MAX_GRID : (int64_t)g;
    if (!isfinite(a.start) || !isfinite(a.bin)) a.grid = 0;
    return a;
}

/* Sample i of bin b: start + b * bin + (i + 0.5) * bin / grid, rounded step by step, left to right. */
static double sample_at(const roi_axis *a, bool f, int64_t b, int64_t i)
{
    double base = ig__round_to(f, a->start + ig__round_to(f, ig__round_to(f, (double)b) * a->bin));
    return ig__round_to(
        f, base + ig__round_to(f, ig__round_to(f, ig__round_to(f, (double)i + 0.5) * a->bin) / (double)a->grid));
}

static bool on_map(double v, int64_t size) { return v >= -1.0 && v <= (double)size; }

/* The first i in [lo, hi) where sample i of bin b has passed `edge` going in the samples' direction
 * (hi if none): sample positions only move one way as i grows (each rounding step is monotonic). */
static int64_t first_past(const roi_axis *a, bool f, int64_t b, int64_t lo, int64_t hi, double edge, bool inclusive)
{
    bool up = a->bin >= 0;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        double v = sample_at(a, f, b, mid);
        bool past = up ? (inclusive ? v >= edge : v > edge) : (inclusive ? v <= edge : v < edge);
        if (past)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The samples of bin b on the map (within one pixel of it): [*i0, *i1). */
static void bin_range(const roi_axis *a, bool f, int64_t b, int64_t *i0, int64_t *i1)
{
    bool up = a->bin >= 0;
    double near = up ? -1.0 : (double)a->size, far = up ? (double)a->size : -1.0;
    *i0 = first_past(a, f, b, 0, a->grid, near, true);
    *i1 = first_past(a, f, b, *i0, a->grid, far, false);
}

/* A sample's two neighbours on one axis and their weights (the one at lo weighs h). */
typedef struct roi_tap {
    int64_t lo, hi;
    double l, h;
} roi_tap;

static roi_tap tap_at(double v, int64_t size, bool f)
{
    roi_tap t;
    if (v <= 0) v = 0;
    t.lo = (int64_t)v;
    if (t.lo >= size - 1) {
        t.lo = t.hi = size - 1;
        v = (double)t.lo;
    } else {
        t.hi = t.lo + 1;
    }
    t.l = ig__round_to(f, v - (double)t.lo);
    t.h = ig__round_to(f, 1.0 - t.l);
    return t;
}

/* Accumulate the samples [iy0, iy1) x [ix0, ix1) of bin (ph, pw) of ROI r into every channel's output
 * (which holds 0); returns how many were on the map. */
static int64_t bin_samples(const roi_job *jb, const roi_axis *ay, const roi_axis *ax, int64_t r, int64_t ph, int64_t pw,
                           const int64_t *iy, const int64_t *ix)
{
    bool f = jb->f32;
    int64_t plane = jb->h * jb->w, out_plane = jb->at.oh * jb->at.ow, n_on = 0;
    const int64_t x0 = jb->batch[r] * jb->c * plane, y0 = r * jb->c * out_plane + ph * jb->at.ow + pw;
    for (int64_t i = iy[0]; i < iy[1]; i++) {
        double sy = sample_at(ay, f, ph, i);
        if (!on_map(sy, jb->h)) continue; /* cannot happen (bin_range); keeps (int64_t) casts defined */
        roi_tap ty = tap_at(sy, jb->h, f);
        for (int64_t j = ix[0]; j < ix[1]; j++) {
            double sx = sample_at(ax, f, pw, j);
            if (!on_map(sx, jb->w)) continue;
            roi_tap tx = tap_at(sx, jb->w, f);
            double w1 = ig__round_to(f, ty.h * tx.h), w2 = ig__round_to(f, ty.h * tx.l),
                   w3 = ig__round_to(f, ty.l * tx.h), w4 = ig__round_to(f, ty.l * tx.l);
            int64_t p1 = ty.lo * jb->w + tx.lo, p2 = ty.lo * jb->w + tx.hi;
            int64_t p3 = ty.hi * jb->w + tx.lo, p4 = ty.hi * jb->w + tx.hi;
            bool first = i == 0 && j == 0; /* the grid's first sample starts the maximum */
            n_on++;
            for (int64_t c = 0; c < jb->c; c++) {
                int64_t xo = x0 + c * plane, yo = y0 + c * out_plane;
                double v1 = ig__round_to(f, w1 * ig__float_io_x(&jb->io, xo + p1)),
                       v2 = ig__round_to(f, w2 * ig__float_io_x(&jb->io, xo + p2));
                double v3 = ig__round_to(f, w3 * ig__float_io_x(&jb->io, xo + p3)),
                       v4 = ig__round_to(f, w4 * ig__float_io_x(&jb->io, xo + p4));
                double acc = ig__float_io_y(&jb->io, yo);
                if (!jb->at.max_mode) {
                    ig__float_io_set_y(
                        &jb->io, yo,
                        ig__round_to(f, acc + ig__round_to(f, ig__round_to(f, ig__round_to(f, v1 + v2) + v3) + v4)));
                    continue;
                }
                /* max(a, b) keeps a unless b > a, as both oracles do */
                double v = v1;
                if (v < v2) v = v2;
                if (v < v3) v = v3;
                if (v < v4) v = v4;
                if (first || acc < v) ig__float_io_set_y(&jb->io, yo, v);
            }
        }
    }
    return n_on;
}

static void roi_rows(void *arg, int64_t begin, int64_t end)
{
    const roi_job *jb = arg;
    bool f = jb->f32;
    int64_t out_plane = jb->at.oh * jb->at.ow;
    double corner[4];
    for (int64_t it = begin; it < end; it++) {
        int64_t r = it / jb->at.oh, ph = it % jb->at.oh;
        for (int k = 0; k < 4; k++) corner[k] = ig__elem_f64(jb->rois->dtype, jb->rois->data, r * 4 + k);
        roi_axis ax = make_axis(jb, corner[0], corner[2], jb->at.ow, jb->w);
        roi_axis ay = make_axis(jb, corner[1], corner[3], jb->at.oh, jb->h);
        int64_t iy[2] = {0, 0}, ix[2] = {0, 0};
        if (jb->h > 0 && jb->w > 0 && ax.grid > 0) bin_range(&ay, f, ph, &iy[0], &iy[1]);
        for (int64_t pw = 0; pw < jb->at.ow; pw++) {
            int64_t y0 = r * jb->c * out_plane + ph * jb->at.ow + pw;
            for (int64_t c = 0; c < jb->c; c++) ig__float_io_set_y(&jb->io, y0 + c * out_plane, 0.0);
            if (iy[1] <= iy[0]) continue;
            bin_range(&ax, f, pw, &ix[0], &ix[1]);
            int64_t n_on = bin_samples(jb, &ay, &ax, r, ph, pw, iy, ix);
            int64_t count = ay.grid * ax.grid; /* grids <= 2^16: no overflow */
            for (int64_t c = 0; c < jb->c; c++) {
                int64_t yo = y0 + c * out_plane;
                double v = ig__float_io_y(&jb->io, yo);
                if (!jb->at.max_mode)
                    v = ig__round_to(f, v / ig__round_to(f, (double)count));
                else if (n_on < count && v < 0) /* a sample off the map counts as 0 */
                    v = 0;
                ig__float_io_set_y(&jb->io, yo, v);
            }
        }
    }
}

static ingot_status roi_align_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0], *rois = ex->in[1], *bi = ex->in[2];
    ig_tensor *y = ex->out[0];
    roi_job jb = {.rois = rois, .batch = bi->data, .f32 = x->dtype != INGOT_DTYPE_DOUBLE};
    char why[256];
    if (!read_attrs(ex->node, &jb.at, why, sizeof why))
        return ig__exec_fail(ex, INGOT_ERR_MODEL_UNSUPPORTED_OP, "%s", why);
    if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 4 || bi->rank != 1 || bi->dims[0] != rois->dims[0] ||
        y->rank != 4 || y->dims[0] != rois->dims[0] || y->dims[1] != x->dims[1] || y->dims[2] != jb.at.oh ||
        y->dims[3] != jb.at.ow)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE,
                             "inputs X [N, C, H, W], rois [R, 4], batch_indices [R] expected");
    int64_t n_rois = rois->dims[0];
    for (int64_t r = 0; r < n_rois; r++)
        if (jb.batch[r] < 0 || jb.batch[r] >= x->dims[0])
            return ig__exec_fail(ex, INGOT_ERR_INVALID_ARG,
                                 "batch_indices[%" PRId64 "] = %" PRId64 " is out of range [0, %" PRId64 ")", r,
                                 jb.batch[r], x->dims[0]);
    for (int64_t k = 0; k < n_rois * 4; k++)
        if (!isfinite(ig__elem_f64(rois->dtype, rois->data, k)))
            return ig__exec_fail(ex, INGOT_ERR_INVALID_ARG, "rois[%" PRId64 "][%d] = %g is not finite", k / 4,
                                 (int)(k % 4), ig__elem_f64(rois->dtype, rois->data, k));
    jb.c = x->dims[1];
    jb.h = x->dims[2];
    jb.w = x->dims[3];
    ingot_status st = ig__float_io_begin(ex, x, y, &jb.io);
    if (st != INGOT_OK) return st;
    int64_t per_row = jb.c * jb.at.ow * 16 + 1; /* a few samples per bin and channel */
    ig__parallel_for(ex->pool, n_rois * jb.at.oh, 1 + (1 << 14) / per_row, roi_rows, &jb);
    ig__float_io_end(&jb.io, y);
    return INGOT_OK;
}

/* Per output element: samples x (4 products, 4 sums), then a division. A fixed sampling_ratio gives
 * ratio^2 samples per bin; an adaptive grid depends on the ROIs: counted as for a ROI spanning the map. */
static double roi_align_flops(const ig_graph *g, const ig_node *n)
{
    roi_attrs at;
    char why[256];
    const ig_value *x = ig__node_input(g, n, 0);
    if (!read_attrs(n, &at, why, sizeof why) || !x || x->shape.rank != 4) return 0;
    double gy = (double)at.ratio, gx = (double)at.ratio;
    if (at.ratio == 0) {
        if (!ig__dim_known(x->shape.d[2]) || !ig__dim_known(x->shape.d[3])) return 0;
        gy = ceil((double)x->shape.d[2].n / (double)at.oh);
        gx = ceil((double)x->shape.d[3].n / (double)at.ow);
    }
    return ig__value_numel(g, n->outputs[0]) * (gy * gx * 8 + 1);
}

const ig_op_def ig__op_roi_align = {
    .name = "RoiAlign",
    .since = 10,
    .min_in = 3,
    .max_in = 3,
    .min_out = 1,
    .max_out = 1,
    .infer = roi_align_infer,
    .cpu = roi_align_cpu,
    .cpu_scratch = ig__float_io_scratch,
    .flops = roi_align_flops,
};
