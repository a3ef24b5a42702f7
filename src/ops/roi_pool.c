/*
 * roi_pool.c -- MaxRoiPool (opsets 1 and 22, bfloat16 from 22): each ROI [batch, x1, y1, x2, y2] of
 * rois, scaled by spatial_scale and rounded to whole pixels, is cut into pooled_shape bins over image
 * `batch` of X; a bin's value is the maximum of the pixels it covers, 0 when it covers none.
 *
 * The geometry is ONNX Runtime's CPU kernel's (the only oracle: ONNX's reference has none): corners
 * round(c * scale) (half away from zero), ROI size end - start + 1 (at least 1), bin size size / pooled
 * in X's type, bin k covering [floor(k * bin), ceil((k + 1) * bin)) shifted by the start and clipped to
 * the map. Float16/bfloat16 compute in fp32, float in float, double in double.
 * Defined where ONNX Runtime is not: a NaN pixel makes its bin NaN (std::max there keeps or drops it by
 * position). Run-time errors: a batch index (truncated) outside [0, N) (ONNX Runtime fails it too), a
 * non-finite ROI value (an undefined float-to-int conversion there). Corners are clamped to +-2^31 before any integer
 * conversion. Work: bins overlap by at most one pixel and are clipped to the map, so a ROI row of bins reads at most H
 * + pooled_h rows, whatever the ROI's size.
 */
#include "op.h"
#include "ops_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

typedef struct pool_attrs {
    int64_t ph, pw;
    float scale;
} pool_attrs;

/* The node's attributes, checked; false with the reason in why. */
static bool read_attrs(const ig_node *n, pool_attrs *a, char *why, size_t why_n)
{
    const int64_t *v;
    int64_t c;
    a->scale = ig__attr_float(n, "spatial_scale", 1.0f);
    if (!ig__attr_ints(n, "pooled_shape", &v, &c) || c != 2) {
        snprintf(why, why_n, "attribute pooled_shape (2 ints) is required");
        return false;
    }
    a->ph = v[0];
    a->pw = v[1];
    if (a->ph < 1 || a->ph > INT32_MAX || a->pw < 1 || a->pw > INT32_MAX)
        snprintf(why, why_n, "attribute pooled_shape=[%" PRId64 ", %" PRId64 "] is not supported (1 to %d)", a->ph,
                 a->pw, INT32_MAX);
    else if (!(a->scale > 0) || !isfinite(a->scale))
        snprintf(why, why_n, "attribute spatial_scale=%g is not supported (finite and > 0)", (double)a->scale);
    else
        return true;
    return false;
}

static ingot_status max_roi_pool_infer(ig_infer *cx)
{
    ingot_status st;
    pool_attrs at;
    char why[160];
    if (!read_attrs(cx->node, &at, why, sizeof why)) return ig__unsupported(cx, "%s", why);
    uint32_t types = IG_T(FLOAT) | IG_T(FLOAT16) | IG_T(DOUBLE) | (cx->node->opset >= 22 ? IG_T(BFLOAT16) : 0);
    if ((st = ig__check_dtype(cx, 0, types)) != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0), *rois = ig__in(cx, 1);
    if (rois->dtype != x->dtype)
        return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "rois '%s' has dtype %s but X '%s' has %s", rois->name,
                        ingot_dtype_name(rois->dtype), x->name, ingot_dtype_name(x->dtype));
    if (x->shape.rank >= 0 && x->shape.rank != 4)
        return ig__fail_shape(cx, "X '%s' must have rank 4, got %d", x->name, (int)x->shape.rank);
    if (rois->shape.rank >= 0 && rois->shape.rank != 2)
        return ig__fail_shape(cx, "rois '%s' must have rank 2, got %d", rois->name, (int)rois->shape.rank);
    if (rois->shape.rank == 2 && ig__dim_known(rois->shape.d[1]) && rois->shape.d[1].n != 5)
        return ig__fail_shape(cx, "rois '%s' has %" PRId64 " values per ROI; 5 expected [batch, x1, y1, x2, y2]",
                              rois->name, rois->shape.d[1].n);
    ig_shape s = {.rank = 4};
    s.d[0] = rois->shape.rank == 2 ? rois->shape.d[0] : ig__dim_fresh(cx);
    s.d[1] = x->shape.rank == 4 ? x->shape.d[1] : ig__dim_fresh(cx);
    s.d[2] = ig__dim_const(at.ph);
    s.d[3] = ig__dim_const(at.pw);
    return ig__set_out(cx, 0, x->dtype, &s);
}

/* ---- the kernel ------------------------------------------------------------------------------- */

typedef struct pool_job {
    pool_attrs at;
    bool f32;       /* compute in fp32 (else double) */
    ig_float_io io; /* X [N, C, H, W] and Y [R, C, ph, pw], in fp32 or double */
    const ig_tensor *rois;
    int64_t c, h, w;
} pool_job;

static int64_t clamp_i(double v, int64_t lo, int64_t hi)
{
    return v < (double)lo ? lo : v > (double)hi ? hi : (int64_t)v;
}

/* One axis of one ROI: bin k covers [lo, hi) of the map (lo >= hi: empty). */
typedef struct pool_axis {
    int64_t start;
    double bin;
    int64_t size;
} pool_axis;

static pool_axis make_axis(const pool_job *jb, double c0, double c1, int64_t n_bins, int64_t size)
{
    bool f = jb->f32;
    const int64_t big = (int64_t)1 << 31;
    int64_t s = clamp_i(round(ig__round_to(f, c0 * jb->at.scale)), -big, big);
    int64_t e = clamp_i(round(ig__round_to(f, c1 * jb->at.scale)), -big, big);
    int64_t len = e - s + 1 > 1 ? e - s + 1 : 1;
    return (pool_axis){.start = s,
                       .bin = ig__round_to(f, ig__round_to(f, (double)len) / ig__round_to(f, (double)n_bins)),
                       .size = size};
}

static void bin_span(const pool_axis *a, bool f, int64_t k, int64_t *lo, int64_t *hi)
{
    const int64_t big = (int64_t)1 << 40;
    int64_t l = clamp_i(floor(ig__round_to(f, (double)k * a->bin)), -big, big) + a->start;
    int64_t h = clamp_i(ceil(ig__round_to(f, (double)(k + 1) * a->bin)), -big, big) + a->start;
    *lo = l < 0 ? 0 : l > a->size ? a->size : l;
    *hi = h < 0 ? 0 : h > a->size ? a->size : h;
}

/* Rows of the output: one (ROI, channel) pair each. */
static void pool_rows(void *arg, int64_t begin, int64_t end)
{
    const pool_job *jb = arg;
    bool f = jb->f32;
    for (int64_t it = begin; it < end; it++) {
        int64_t r = it / jb->c, c = it % jb->c;
        double roi[5];
        for (int k = 0; k < 5; k++) roi[k] = ig__elem_f64(jb->rois->dtype, jb->rois->data, r * 5 + k);
        pool_axis ax = make_axis(jb, roi[1], roi[3], jb->at.pw, jb->w);
        pool_axis ay = make_axis(jb, roi[2], roi[4], jb->at.ph, jb->h);
        const int64_t x0 = (((int64_t)roi[0]) * jb->c + c) * jb->h * jb->w, y0 = it * jb->at.ph * jb->at.pw;
        for (int64_t ph = 0; ph < jb->at.ph; ph++) {
            int64_t h0, h1;
            bin_span(&ay, f, ph, &h0, &h1);
            for (int64_t pw = 0; pw < jb->at.pw; pw++) {
                int64_t w0, w1;
                bin_span(&ax, f, pw, &w0, &w1);
                double m = 0;
                if (h1 > h0 && w1 > w0) {
                    m = ig__float_io_x(&jb->io, x0 + h0 * jb->w + w0);
                    for (int64_t i = h0; i < h1; i++)
                        for (int64_t j = w0; j < w1; j++) {
                            double v = ig__float_io_x(&jb->io, x0 + i * jb->w + j);
                            if (v > m || v != v) m = v; /* NaN sticks: nothing compares greater */
                        }
                }
                ig__float_io_set_y(&jb->io, y0 + ph * jb->at.pw + pw, m);
            }
        }
    }
}

/* Every ROI's batch index and corners, checked before any output is written. */
static ingot_status check_rois(ig_exec *ex, const ig_tensor *rois, int64_t n_batch)
{
    for (int64_t k = 0; k < rois->numel; k++) {
        double v = ig__elem_f64(rois->dtype, rois->data, k);
        if (!isfinite(v))
            return ig__exec_fail(ex, INGOT_ERR_INVALID_ARG, "rois[%" PRId64 "][%d] = %g is not finite", k / 5,
                                 (int)(k % 5), v);
        if (k % 5 == 0 && !(v > -1.0 && v < (double)n_batch)) /* truncated toward zero, as ONNX Runtime */
            return ig__exec_fail(ex, INGOT_ERR_INVALID_ARG,
                                 "rois[%" PRId64 "][0] = %g: batch index out of range [0, %" PRId64 ")", k / 5, v,
                                 n_batch);
    }
    return INGOT_OK;
}

static ingot_status max_roi_pool_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0], *rois = ex->in[1];
    ig_tensor *y = ex->out[0];
    pool_job jb = {.rois = rois, .f32 = x->dtype != INGOT_DTYPE_DOUBLE};
    char why[160];
    if (!read_attrs(ex->node, &jb.at, why, sizeof why))
        return ig__exec_fail(ex, INGOT_ERR_MODEL_UNSUPPORTED_OP, "%s", why);
    if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 5 || y->rank != 4 || y->dims[0] != rois->dims[0] ||
        y->dims[1] != x->dims[1] || y->dims[2] != jb.at.ph || y->dims[3] != jb.at.pw)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "inputs X [N, C, H, W] and rois [R, 5] expected");
    ingot_status st = check_rois(ex, rois, x->dims[0]);
    if (st != INGOT_OK || y->numel == 0) return st;
    jb.c = x->dims[1];
    jb.h = x->dims[2];
    jb.w = x->dims[3];
    if ((st = ig__float_io_begin(ex, x, y, &jb.io)) != INGOT_OK) return st;
    int64_t per_row = jb.at.ph * jb.at.pw * 4 + 1;
    ig__parallel_for(ex->pool, rois->dims[0] * jb.c, 1 + (1 << 14) / per_row, pool_rows, &jb);
    ig__float_io_end(&jb.io, y);
    return INGOT_OK;
}

/* One compare per pixel a bin covers, counted for ROIs spanning the map (bins overlap by a pixel). */
static double max_roi_pool_flops(const ig_graph *g, const ig_node *n)
{
    pool_attrs at;
    char why[160];
    const ig_value *x = ig__node_input(g, n, 0);
    if (!read_attrs(n, &at, why, sizeof why) || !x || x->shape.rank != 4 || !ig__dim_known(x->shape.d[2]) ||
        !ig__dim_known(x->shape.d[3]))
        return 0;
    double bh = ceil((double)x->shape.d[2].n / (double)at.ph) + 1,
           bw = ceil((double)x->shape.d[3].n / (double)at.pw) + 1;
    return ig__value_numel(g, n->outputs[0]) * bh * bw;
}

const ig_op_def ig__op_max_roi_pool = {
    .name = "MaxRoiPool",
    .since = 1,
    .min_in = 2,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .infer = max_roi_pool_infer,
    .cpu = max_roi_pool_cpu,
    .cpu_scratch = ig__float_io_scratch,
    .flops = max_roi_pool_flops,
};
