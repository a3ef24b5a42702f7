/*
 * resize.c -- resampling: Resize (opsets 10 to 19), the deprecated Upsample (7 to 9), and DepthToSpace.
 *
 * Resize follows onnx's reference implementation (onnx.reference), which generated the ONNX node tests:
 * each output coordinate is mapped to an input coordinate per axis (coordinate_transformation_mode),
 * and interpolated from a window of input taps whose weights come from the mode (nearest, linear,
 * cubic, optionally antialiased). Interpolation is separable, so the kernel first builds, for every
 * axis, a table of (input offset, weight) taps per output coordinate, then computes each output
 * element as the weighted sum over the product of its axes' taps. Axes left unchanged (scale 1, same
 * size) get a single tap of weight 1. Nearest copies element bytes (exact for every dtype); linear and
 * cubic accumulate in double and store with rounding and saturation for integer types, as the
 * reference does. Output sizes from scales are floor(in * scale) computed in double, like onnx's
 * shape inference (ONNX Runtime computes it in float and may differ by one in rare cases).
 *
 * Resize-10 and Upsample have no coordinate_transformation_mode: they behave as "asymmetric" with
 * nearest rounding "floor" when upsampling and "ceil" when downsampling, as ONNX Runtime implements
 * them.
 */
#include "op.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

enum { M_NEAREST, M_LINEAR, M_CUBIC };
enum {
    CT_HALF_PIXEL,
    CT_HALF_PIXEL_SYM,
    CT_PYTORCH_HALF_PIXEL,
    CT_ALIGN_CORNERS,
    CT_ASYMMETRIC,
    CT_TF_CROP,
    CT_TF_HALF_PIXEL_NN
};
enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE };
enum { KAR_STRETCH, KAR_NOT_LARGER, KAR_NOT_SMALLER };

typedef struct resize_cfg {
    bool upsample; /* the Upsample op */
    int mode, ct, nm, kar;
    double cubic_a, extrapolation;
    bool exclude_outside, antialias;
    int32_t n_axes; /* 0: all axes */
    int32_t axes[IG_MAX_RANK];
    int scales_in, sizes_in, roi_in; /* input positions, -1 when the op has no such input */
} resize_cfg;

/* Read and check the attributes; on failure writes a message into why and returns false. The rank is
 * needed to normalise 'axes' (pass -1 when unknown: axes are then checked later). */
static bool parse_cfg(const ig_node *n, int32_t rank, resize_cfg *c, char *why, size_t why_n)
{
    memset(c, 0, sizeof *c);
    c->upsample = !strcmp(n->op_type, "Upsample");
    bool legacy = c->upsample || n->opset < 11; /* Upsample and Resize-10 */
    c->scales_in = c->upsample ? (n->opset >= 9 ? 1 : -1) : n->opset < 11 ? 1 : 2;
    c->sizes_in = legacy ? -1 : 3;
    c->roi_in = legacy ? -1 : 1;
    const char *mode = ig__attr_str(n, "mode", "nearest");
    static const char *const modes[] = {"nearest", "linear", "cubic", "bilinear"};
    c->mode = ig__str_index(mode, modes, 4);
    if (c->mode == 3 && c->upsample) c->mode = M_LINEAR; /* Upsample-1's name for it */
    if (c->mode < 0 || c->mode == 3 || (legacy && c->mode == M_CUBIC)) {
        snprintf(why, why_n, "attribute 'mode' = '%s' is not supported (%s)", mode,
                 legacy ? "nearest or linear" : "nearest, linear or cubic");
        return false;
    }
    if (legacy) {
        c->ct = CT_ASYMMETRIC;
        c->nm = NM_SIMPLE;
        c->cubic_a = -0.75;
        return true;
    }
    static const char *const cts[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",  "align_corners",
                                      "asymmetric", "tf_crop_and_resize",   "tf_half_pixel_for_nn"};
    const char *ct = ig__attr_str(n, "coordinate_transformation_mode", "half_pixel");
    if ((c->ct = ig__str_index(ct, cts, 7)) < 0) {
        snprintf(why, why_n, "attribute 'coordinate_transformation_mode' = '%s' is not supported", ct);
        return false;
    }
    static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    const char *nm = ig__attr_str(n, "nearest_mode", "round_prefer_floor");
    if ((c->nm = ig__str_index(nm, nms, 4)) < 0) {
        snprintf(why, why_n, "attribute 'nearest_mode' = '%s' is not supported", nm);
        return false;
    }
    static const char *const kars[] = {"stretch", "not_larger", "not_smaller"};
    const char *kar = ig__attr_str(n, "keep_aspect_ratio_policy", "stretch");
    if ((c->kar = ig__str_index(kar, kars, 3)) < 0) {
        snprintf(why, why_n, "attribute 'keep_aspect_ratio_policy' = '%s' is not supported", kar);
        return false;
    }
    c->cubic_a = ig__attr_float(n, "cubic_coeff_a", -0.75f);
    c->extrapolation = ig__attr_float(n, "extrapolation_value", 0.0f);
    c->exclude_outside = ig__attr_int(n, "exclude_outside", 0) != 0;
    c->antialias = ig__attr_int(n, "antialias", 0) != 0 && c->mode != M_NEAREST; /* ignored for nearest */
    const int64_t *axes;
    int64_t na;
    if (ig__attr_ints(n, "axes", &axes, &na)) {
        if (rank < 0) return true;
        if (na < 1 || na > rank) {
            snprintf(why, why_n, "attribute 'axes' has %" PRId64 " entries for an input of rank %d", na, (int)rank);
            return false;
        }
        bool seen[IG_MAX_RANK] = {false};
        for (int64_t i = 0; i < na; i++) {
            int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
            if (a < 0 || a >= rank || seen[a]) {
                snprintf(why, why_n, "attribute 'axes' entry %" PRId64 " is out of range or repeated for rank %d",
                         axes[i], (int)rank);
                return false;
            }
            seen[a] = true;
            c->axes[i] = (int32_t)a;
        }
        c->n_axes = (int32_t)na;
    }
    return true;
}

/* Length of a 1-D operand (scales, sizes, roi): -1 when absent... -2 when unknown. */
#define LEN_ABSENT  (-1)
#define LEN_UNKNOWN (-2)

static int64_t operand_len(const ig_value *v)
{
    if (!v) return LEN_ABSENT;
    if (v->shape.rank == 1 && ig__dim_known(v->shape.d[0])) return v->shape.d[0].n;
    if (v->shape.rank == 0) return 1;
    return LEN_UNKNOWN;
}

/* Output dims and the per-axis scale used for coordinates, from concrete inputs. scales/sizes/roi are
 * per listed axis (all axes when cfg has none); exactly one of scales and sizes is non-NULL.
 * roi_full receives [start_0..start_{r-1}, end_0..end_{r-1}]. */
/* A size computed in double as an int64: -1 (no valid size: callers compare it with the inferred one)
 * when it is NaN, negative or past int64, whose conversion would be undefined. Scales can be run-time
 * inputs. */
static int64_t to_dim(double v) { return v >= 0 && v < 9.0e18 ? (int64_t)v : -1; }

static void plan_dims(const resize_cfg *c, int32_t r, const int64_t *in, const double *scales, const int64_t *sizes,
                      const double *roi, int64_t *out, double *scale, double *roi_full)
{
    int32_t axes[IG_MAX_RANK], na = c->n_axes ? c->n_axes : r;
    bool listed[IG_MAX_RANK] = {false};
    for (int32_t i = 0; i < na; i++) {
        axes[i] = c->n_axes ? c->axes[i] : i;
        listed[axes[i]] = true;
    }
    for (int32_t d = 0; d < r; d++) {
        out[d] = in[d];
        scale[d] = 1.0;
        roi_full[d] = 0.0;
        roi_full[r + d] = 1.0;
    }
    for (int32_t i = 0; roi && i < na; i++) {
        roi_full[axes[i]] = roi[i];
        roi_full[r + axes[i]] = roi[na + i];
    }
    if (scales) {
        for (int32_t i = 0; i < na; i++) {
            int32_t d = axes[i];
            scale[d] = scales[i];
            out[d] = to_dim(floor((double)in[d] * scales[i]));
        }
        return;
    }
    for (int32_t i = 0; i < na; i++) {
        int32_t d = axes[i];
        out[d] = sizes[i];
        scale[d] = in[d] ? (double)sizes[i] / (double)in[d] : 1.0;
    }
    if (c->kar == KAR_STRETCH) return;
    double s = c->kar == KAR_NOT_LARGER ? INFINITY : -INFINITY;
    for (int32_t i = 0; i < na; i++) {
        double v = scale[axes[i]];
        s = c->kar == KAR_NOT_LARGER ? (v < s ? v : s) : (v > s ? v : s);
    }
    for (int32_t d = 0; d < r; d++)
        if (listed[d]) {
            scale[d] = s;
            out[d] = to_dim(s * (double)in[d] + 0.5); /* round half up, as the reference does */
        }
}

/* ---- inference ---- */

static ingot_status resize_infer(ig_infer *cx)
{
    ingot_status st;
    const ig_value *x = ig__in(cx, 0);
    int32_t r = x->shape.rank;
    resize_cfg c;
    char why[256];
    if (!parse_cfg(cx->node, r, &c, why, sizeof why)) return ig__unsupported(cx, "%s", why);
    if ((st = ig__check_dtype(cx, 0, IG_TS_ALL)) != INGOT_OK) return st;
    if (c.mode != M_NEAREST && x->dtype == INGOT_DTYPE_BOOL)
        return ig__unsupported(cx, "mode '%s' on a bool tensor is not supported",
                               c.mode == M_LINEAR ? "linear" : "cubic");
    if (c.scales_in >= 0 && (st = ig__check_dtype(cx, c.scales_in, IG_TS_FLOAT)) != INGOT_OK) return st;
    if (c.roi_in >= 0 && (st = ig__check_dtype(cx, c.roi_in, IG_TS_FLOAT)) != INGOT_OK) return st;
    if (c.sizes_in >= 0 && (st = ig__check_dtype(cx, c.sizes_in, IG_T(INT64))) != INGOT_OK) return st;
    ig_shape out = {.rank = -1};
    if (r < 0) return ig__set_out(cx, 0, x->dtype, &out);
    int32_t na = c.n_axes ? c.n_axes : r;

    /* which of scales / sizes: an empty tensor counts as absent (opset 11 needs an empty scales with sizes) */
    const ig_value *vsc = c.scales_in >= 0 ? ig__in(cx, c.scales_in) : NULL;
    const ig_value *vsz = c.sizes_in >= 0 ? ig__in(cx, c.sizes_in) : NULL;
    int64_t lsc = operand_len(vsc), lsz = operand_len(vsz);
    bool use_sizes = lsz != LEN_ABSENT && lsz != 0, use_scales = lsc != LEN_ABSENT && lsc != 0;
    double scales[IG_MAX_RANK];
    bool scales_known = false;
    if (c.scales_in < 0) { /* Upsample-7: the 'scales' attribute */
        const float *f;
        int64_t nf;
        if (!ig__attr_floats(cx->node, "scales", &f, &nf))
            return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "attribute 'scales' is required");
        if (nf != r)
            return ig__fail_shape(cx, "attribute 'scales' has %" PRId64 " values for an input of rank %d", nf, (int)r);
        for (int64_t i = 0; i < nf; i++) scales[i] = f[i];
        use_scales = scales_known = true;
    }
    if (use_sizes && use_scales) {
        if (lsc != LEN_UNKNOWN)
            return ig__fail(cx, INGOT_ERR_MODEL_INVALID,
                            "only one of 'scales' and 'sizes' may be given (the other "
                            "must be omitted or empty)");
        use_scales = false;
    }
    if (!use_sizes && !use_scales)
        return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "needs 'scales' or 'sizes' (both are omitted or empty)");
    int64_t len = use_sizes ? lsz : lsc;
    if (c.scales_in >= 0 && len != LEN_UNKNOWN && len != na)
        return ig__fail_shape(cx, "input '%s' has %" PRId64 " values; expected %d (%s)",
                              use_sizes ? vsz->name : vsc->name, len, (int)na,
                              c.n_axes ? "one per entry of 'axes'" : "one per input axis");
    if (c.ct == CT_TF_CROP) {
        int64_t lroi = operand_len(ig__in(cx, c.roi_in));
        if (lroi == LEN_ABSENT || lroi == 0)
            return ig__fail(cx, INGOT_ERR_MODEL_INVALID,
                            "coordinate_transformation_mode 'tf_crop_and_resize' needs "
                            "the 'roi' input");
        if (lroi != LEN_UNKNOWN && lroi != 2 * na)
            return ig__fail_shape(cx, "input 'roi' has %" PRId64 " values; expected %d", lroi, (int)(2 * na));
    }

    out = x->shape;
    int32_t axes[IG_MAX_RANK];
    for (int32_t i = 0; i < na; i++) axes[i] = c.n_axes ? c.axes[i] : i;
    if (use_scales && !scales_known && (vsc->flags & IG_VAL_CONST)) {
        for (int32_t i = 0; i < na; i++) scales[i] = ig__elem_f64(vsc->c.dtype, vsc->c.data, i);
        scales_known = true;
    }
    if (use_scales && scales_known) {
        for (int32_t i = 0; i < na; i++) {
            double s = scales[i];
            ig_dim d = x->shape.d[axes[i]];
            if (!(s > 0)) return ig__fail_shape(cx, "scale %g for axis %d must be positive", s, (int)axes[i]);
            if (ig__dim_known(d)) {
                double o = floor((double)d.n * s);
                if (!(o < 9.0e18))
                    return ig__fail_shape(cx, "scale %g makes axis %d %g long, beyond what ingot can address", s,
                                          (int)axes[i], o);
                out.d[axes[i]] = ig__dim_const((int64_t)o);
            } else if (s == floor(s) && s < 1e9 && ig__dim_mul(d, ig__dim_const((int64_t)s), &out.d[axes[i]]))
                continue;
            else
                out.d[axes[i]] = ig__dim_fresh(cx);
        }
    } else if (use_sizes) {
        ig_dim sz[IG_MAX_SYMVAL];
        int32_t nsz = 0;
        bool have = ig__in_dims(cx, c.sizes_in, sz, IG_MAX_SYMVAL, &nsz) && nsz == na;
        bool concrete = have;
        for (int32_t i = 0; concrete && i < na; i++)
            concrete = ig__dim_known(sz[i]) && ig__dim_known(x->shape.d[axes[i]]);
        for (int32_t i = 0; have && i < na; i++)
            if (ig__dim_known(sz[i]) && sz[i].n < 0)
                return ig__fail_shape(cx, "sizes[%d] = %" PRId64 " is negative", (int)i, sz[i].n);
        if (c.kar != KAR_STRETCH && concrete) {
            int64_t in[IG_MAX_RANK], o[IG_MAX_RANK], szv[IG_MAX_RANK] = {0};
            double sc[IG_MAX_RANK], roi[2 * IG_MAX_RANK];
            for (int32_t d = 0; d < r; d++) in[d] = x->shape.d[d].n; /* unlisted dims are copied, never read */
            for (int32_t i = 0; i < na; i++) szv[i] = sz[i].n;
            plan_dims(&c, r, in, NULL, szv, NULL, o, sc, roi);
            for (int32_t i = 0; i < na; i++) out.d[axes[i]] = ig__dim_const(o[axes[i]]);
        } else {
            for (int32_t i = 0; i < na; i++) out.d[axes[i]] = have && c.kar == KAR_STRETCH ? sz[i] : ig__dim_fresh(cx);
        }
    } else {
        for (int32_t i = 0; i < na; i++) out.d[axes[i]] = ig__dim_fresh(cx);
    }
    return ig__set_out(cx, 0, x->dtype, &out);
}

/* ---- tap tables ---- */

/* Taps per output coordinate along one axis. Antialiasing widens the filter by 1/scale when
 * downsampling (onnx's _linear_coeffs_antialias / _cubic_coeffs_antialias). */
static int64_t axis_taps(const resize_cfg *c, double scale)
{
    if (c->mode == M_NEAREST) return 1;
    if (!c->antialias) return c->mode == M_LINEAR ? 2 : 4;
    double s = scale < 1 ? scale : 1;
    double start = floor((c->mode == M_LINEAR ? -1.0 : -2.0) / s) + 1, taps = 2 - 2 * start;
    /* a run-time scale may be tiny: saturate (the tables then never fit the scratch, an error) */
    return taps < 1e15 ? (int64_t)taps : (int64_t)1e15;
}

/* An upper bound of axis_taps from the dims alone (for scratch sizing before scales are read). */
static int64_t axis_taps_bound(const resize_cfg *c, int64_t in, int64_t out)
{
    if (c->mode == M_NEAREST) return 1;
    if (!c->antialias || out <= 0) return c->mode == M_LINEAR ? 2 : 4;
    /* out = floor(in * scale), out = sizes (scale = out / in), or out = round(in * scale) with a kept aspect
     * ratio: in every case 1 / scale <= 2 * in / out. */
    int64_t q = (2 * in + out - 1) / out;
    return (c->mode == M_LINEAR ? 2 : 4) * q + 4;
}

static bool axis_identity(const resize_cfg *c, int64_t in, int64_t out, double scale, const double *roi_se)
{
    if (scale != 1.0 || in != out) return false;
    return c->ct != CT_TF_CROP || (roi_se[0] == 0.0 && roi_se[1] == 1.0);
}

static double cubic_w(double x, double a)
{
    x = fabs(x);
    if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0;
}

typedef struct axis_tab {
    int64_t k;    /* taps per output coordinate */
    int64_t *off; /* [out * k] input offsets (index * stride), clamped into the input */
    double *w;    /* [out * k] weights */
    uint8_t *ext; /* [out] 1: the coordinate falls outside the crop (tf_crop_and_resize) */
} axis_tab;

/* Fill the taps of one axis. */
static void build_axis(const resize_cfg *c, int64_t in, int64_t out, double scale, const double *roi_se, int64_t stride,
                       axis_tab *t)
{
    const int64_t k = t->k;
    if (k == 1 && axis_identity(c, in, out, scale, roi_se)) {
        for (int64_t o = 0; o < out; o++) t->off[o] = o * stride, t->w[o] = 1.0, t->ext[o] = 0;
        return;
    }
    const double out_w = scale * (double)in; /* the reference's "output_width", a real number */
    for (int64_t o = 0; o < out; o++) {
        const double y = (double)o;
        double x;
        t->ext[o] = 0;
        switch (c->ct) {
        case CT_ALIGN_CORNERS: x = out_w == 1 ? 0.0 : y * (double)(in - 1) / (out_w - 1); break;
        case CT_ASYMMETRIC: x = y / scale; break;
        case CT_TF_HALF_PIXEL_NN: x = (y + 0.5) / scale; break;
        case CT_PYTORCH_HALF_PIXEL: x = out_w == 1 ? -0.5 : (y + 0.5) / scale - 0.5; break;
        case CT_HALF_PIXEL_SYM: {
            double adj = (double)out / out_w, center = (double)in / 2;
            x = center * (1 - adj) + (y + 0.5) / scale - 0.5;
            break;
        }
        case CT_TF_CROP: {
            double s0 = roi_se[0], s1 = roi_se[1];
            x = out_w == 1 ? (s1 - s0) * (double)(in - 1) / 2 : y * (s1 - s0) * (double)(in - 1) / (out_w - 1);
            x += s0 * (double)(in - 1);
            t->ext[o] = !(x >= 0 && x <= (double)(in - 1)); /* NaN too */
            break;
        }
        default: x = (y + 0.5) / scale - 0.5; break;
        }
        /* The roi and the scales may be run-time inputs: x may be huge, infinite or NaN, and converting
         * such a double to int64 is undefined. Past the input by more than the window, every tap is
         * clamped to the edge (or excluded, or the point is extrapolated), so clamping x there changes
         * no result and keeps the conversions below in range. */
        const double lim = (double)in + (double)k + 4;
        if (!(x >= -lim)) x = isnan(x) ? 0 : -lim;
        if (x > lim) x = lim;
        int64_t *off = t->off + o * k;
        double *w = t->w + o * k;
        if (c->mode == M_NEAREST) {
            double f = floor(x), frac = x - f;
            int64_t i;
            if (c->nm == NM_SIMPLE)
                i = scale < 1 ? (int64_t)ceil(x) : (int64_t)f;
            else if (frac == 0)
                i = (int64_t)f;
            else if (c->nm == NM_FLOOR)
                i = (int64_t)f;
            else if (c->nm == NM_CEIL)
                i = (int64_t)f + 1;
            else if (c->nm == NM_ROUND_PREFER_FLOOR)
                i = (int64_t)f + (frac > 0.5);
            else
                i = (int64_t)f + (frac >= 0.5);
            i = i < 0 ? 0 : i >= in ? in - 1 : i;
            off[0] = i * stride;
            w[0] = 1.0;
            continue;
        }
        /* The window: k taps around x, the left neighbour preferred (ratio in (0, 1]). */
        double fb = floor(x);
        int64_t base = (int64_t)fb;
        if (x == fb) base -= 1;
        const double ratio = x - (double)base;
        const int64_t first = base - k / 2 + 1;
        double sum = 0;
        if (!c->antialias) {
            if (c->mode == M_LINEAR) {
                w[0] = 1 - ratio;
                w[1] = ratio;
            } else {
                const double a = c->cubic_a, r1 = ratio + 1, q = 1 - ratio, q1 = q + 1;
                w[0] = ((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a;
                w[1] = ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1;
                w[2] = ((a + 2) * q - (a + 3)) * q * q + 1;
                w[3] = ((a * q1 - 5 * a) * q1 + 8 * a) * q1 - 4 * a;
            }
        } else {
            const double s = scale < 1 ? scale : 1;
            for (int64_t j = 0; j < k; j++) {
                double arg = ((double)(first + j) - x) * s;
                double v = c->mode == M_LINEAR ? 1 - fabs(arg) : cubic_w(arg, c->cubic_a);
                if (c->mode == M_LINEAR) v = v < 0 ? 0 : v > 1 ? 1 : v;
                w[j] = v;
                sum += v;
            }
            for (int64_t j = 0; j < k; j++) w[j] /= sum;
        }
        if (c->exclude_outside) {
            sum = 0;
            for (int64_t j = 0; j < k; j++) {
                int64_t m = first + j;
                if (m < 0 || m >= in) w[j] = 0;
                sum += w[j];
            }
            if (sum != 0)
                for (int64_t j = 0; j < k; j++) w[j] /= sum;
        }
        for (int64_t j = 0; j < k; j++) {
            int64_t m = first + j;
            m = m < 0 ? 0 : m >= in ? in - 1 : m;
            off[j] = m * stride;
        }
    }
}

/* ---- the kernel ---- */

typedef struct resize_args {
    const resize_cfg *c;
    const unsigned char *x;
    unsigned char *y;
    ingot_dtype dt;
    size_t es;
    int32_t r;
    int64_t out[IG_MAX_RANK];
    axis_tab tab[IG_MAX_RANK];
    int64_t n_rows;             /* output rows (all dims but the last) */
    unsigned char ext_bytes[8]; /* extrapolation_value in the output dtype */
} resize_args;

static inline double ld_any(ingot_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case INGOT_DTYPE_FLOAT: return ((const float *)p)[i];
    case INGOT_DTYPE_DOUBLE: return ((const double *)p)[i];
    case INGOT_DTYPE_FLOAT16: return ig__f16_to_f32(((const uint16_t *)p)[i]);
    case INGOT_DTYPE_BFLOAT16: return ig__bf16_to_f32(((const uint16_t *)p)[i]);
    case INGOT_DTYPE_INT8: return ((const int8_t *)p)[i];
    case INGOT_DTYPE_INT16: return ((const int16_t *)p)[i];
    case INGOT_DTYPE_INT32: return ((const int32_t *)p)[i];
    case INGOT_DTYPE_INT64: return (double)((const int64_t *)p)[i];
    case INGOT_DTYPE_UINT8:
    case INGOT_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    case INGOT_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case INGOT_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    default: return (double)((const uint64_t *)p)[i];
    }
}

/* Store v into element i of dtype t: floats convert, integers round half to even and saturate. */
static void st_sat(ingot_dtype t, void *p, int64_t i, double v)
{
    if (ig__dtype_is_float(t) || isnan(v)) {
        ig__elem_set_f64(t, p, i, v);
        return;
    }
    v = nearbyint(v);
    double lo, hi;
    switch (t) {
    case INGOT_DTYPE_INT8: lo = INT8_MIN, hi = INT8_MAX; break;
    case INGOT_DTYPE_INT16: lo = INT16_MIN, hi = INT16_MAX; break;
    case INGOT_DTYPE_INT32: lo = INT32_MIN, hi = INT32_MAX; break;
    case INGOT_DTYPE_UINT8:
    case INGOT_DTYPE_BOOL: lo = 0, hi = UINT8_MAX; break;
    case INGOT_DTYPE_UINT16: lo = 0, hi = UINT16_MAX; break;
    case INGOT_DTYPE_UINT32: lo = 0, hi = UINT32_MAX; break;
    case INGOT_DTYPE_UINT64:
        if (v <= 0) v = 0;
        if (v >= 18446744073709551615.0)
            ((uint64_t *)p)[i] = UINT64_MAX;
        else
            ((uint64_t *)p)[i] = (uint64_t)v;
        return;
    default: lo = -9.2233720368547758e18, hi = 9.2233720368547758e18; break;
    }
    v = v < lo ? lo : v > hi ? hi : v;
    ig__elem_set_i64(t, p, i, v >= 9.2233720368547758e18 ? INT64_MAX : (int64_t)v);
}

#define MAX_COMBOS 256 /* leading-axis tap combinations precomputed per output row */

/* Copy the element at input offset `off` to output element j (nearest: exact for every dtype). */
static inline void copy_elem(unsigned char *yrow, int64_t j, const unsigned char *x, int64_t off, size_t es)
{
    switch (es) {
    case 1: yrow[j] = x[off]; return;
    case 2: ((uint16_t *)yrow)[j] = ((const uint16_t *)x)[off]; return;
    case 4: ((uint32_t *)yrow)[j] = ((const uint32_t *)x)[off]; return;
    case 8: ((uint64_t *)yrow)[j] = ((const uint64_t *)x)[off]; return;
    default: memcpy(yrow + (size_t)j * es, x + (size_t)off * es, es); return;
    }
}

static void resize_rows(void *arg, int64_t begin, int64_t end)
{
    const resize_args *a = arg;
    const int32_t r = a->r, last = r - 1;
    const axis_tab *lt = &a->tab[last];
    const int64_t wout = a->out[last], kl = lt->k;
    const bool nearest = a->c->mode == M_NEAREST, crop = a->c->ct == CT_TF_CROP;
    const size_t es = a->es;
    int64_t coff[MAX_COMBOS];
    double cw[MAX_COMBOS];
    for (int64_t row = begin; row < end; row++) {
        /* coordinates of the row over the leading axes */
        int64_t c[IG_MAX_RANK], rem = row;
        for (int32_t d = last - 1; d >= 0; d--) {
            c[d] = rem % a->out[d];
            rem /= a->out[d];
        }
        /* leading axes with one tap fold into a base offset; the others are enumerated */
        int64_t base = 0, n_comb = 1;
        double wbase = 1;
        bool ext = false;
        int32_t act[IG_MAX_RANK], na = 0;
        for (int32_t d = 0; d < last; d++) {
            const axis_tab *t = &a->tab[d];
            ext |= t->ext[c[d]] != 0;
            if (t->k == 1) {
                base += t->off[c[d]];
                wbase *= t->w[c[d]];
            } else {
                act[na++] = d;
                n_comb *= t->k;
            }
        }
        unsigned char *yrow = a->y + (size_t)(row * wout) * es;
        if (ext) {
            for (int64_t j = 0; j < wout; j++) memcpy(yrow + (size_t)j * es, a->ext_bytes, es);
            continue;
        }
        if (nearest) { /* every axis has one tap of weight 1 */
            for (int64_t j = 0; j < wout; j++) {
                if (crop && lt->ext[j])
                    memcpy(yrow + (size_t)j * es, a->ext_bytes, es);
                else
                    copy_elem(yrow, j, a->x, base + lt->off[j], es);
            }
            continue;
        }
        /* the combinations of the leading taps do not depend on the position along the last axis */
        const bool precomputed = n_comb <= MAX_COMBOS;
        if (precomputed) {
            int64_t tix[IG_MAX_RANK] = {0};
            for (int64_t q = 0; q < n_comb; q++) {
                int64_t off = base;
                double w = wbase;
                for (int32_t i = 0; i < na; i++) {
                    const axis_tab *t = &a->tab[act[i]];
                    int64_t e = c[act[i]] * t->k + tix[i];
                    off += t->off[e];
                    w *= t->w[e];
                }
                coff[q] = off, cw[q] = w;
                for (int32_t i = na - 1; i >= 0 && ++tix[i] == a->tab[act[i]].k; i--) tix[i] = 0;
            }
        }
        for (int64_t j = 0; j < wout; j++) {
            if (crop && lt->ext[j]) {
                memcpy(yrow + (size_t)j * es, a->ext_bytes, es);
                continue;
            }
            const int64_t *loff = lt->off + j * kl;
            const double *lw = lt->w + j * kl;
            double acc = 0;
            int64_t tix[IG_MAX_RANK] = {0};
            for (int64_t q = 0; q < n_comb; q++) {
                int64_t off;
                double w;
                if (precomputed) {
                    off = coff[q], w = cw[q];
                } else { /* wide antialiasing windows over several axes: walk the taps */
                    off = base, w = wbase;
                    for (int32_t i = 0; i < na; i++) {
                        const axis_tab *t = &a->tab[act[i]];
                        int64_t e = c[act[i]] * t->k + tix[i];
                        off += t->off[e];
                        w *= t->w[e];
                    }
                    for (int32_t i = na - 1; i >= 0 && ++tix[i] == a->tab[act[i]].k; i--) tix[i] = 0;
                }
                double s = 0;
                if (a->dt == INGOT_DTYPE_FLOAT)
                    for (int64_t k = 0; k < kl; k++) s += lw[k] * ((const float *)a->x)[off + loff[k]];
                else
                    for (int64_t k = 0; k < kl; k++) s += lw[k] * ld_any(a->dt, a->x, off + loff[k]);
                acc += w * s;
            }
            if (a->dt == INGOT_DTYPE_FLOAT)
                ((float *)yrow)[j] = (float)acc;
            else
                st_sat(a->dt, a->y, row * wout + j, acc);
        }
    }
}

/* The concrete plan of a node: scales/sizes/roi read from the input tensors. */
static ingot_status exec_plan(ig_exec *ex, const resize_cfg *c, int64_t *out, double *scale, double *roi_full)
{
    const ig_tensor *x = ex->in[0];
    const int32_t r = x->rank, na = c->n_axes ? c->n_axes : r;
    const ig_tensor *tsc = c->scales_in >= 0 && c->scales_in < ex->n_in ? ex->in[c->scales_in] : NULL;
    const ig_tensor *tsz = c->sizes_in >= 0 && c->sizes_in < ex->n_in ? ex->in[c->sizes_in] : NULL;
    const ig_tensor *troi = c->roi_in >= 0 && c->roi_in < ex->n_in ? ex->in[c->roi_in] : NULL;
    double sc[IG_MAX_RANK], roi[2 * IG_MAX_RANK];
    int64_t sz[IG_MAX_RANK];
    bool use_sizes = tsz && tsz->numel > 0;
    const char *bad = NULL;
    if (c->scales_in < 0) {
        const float *f;
        int64_t nf = 0;
        if (!ig__attr_floats(ex->node, "scales", &f, &nf) || nf != r) bad = "attribute 'scales'";
        for (int64_t i = 0; !bad && i < nf; i++) sc[i] = f[i];
    } else if (use_sizes) {
        if (tsz->numel != na) bad = "input 'sizes'";
        for (int32_t i = 0; !bad && i < na; i++) sz[i] = ((const int64_t *)tsz->data)[i];
    } else {
        if (!tsc || tsc->numel != na) bad = "input 'scales'";
        for (int32_t i = 0; !bad && i < na; i++) sc[i] = ld_any(tsc->dtype, tsc->data, i);
    }
    bool use_roi = c->ct == CT_TF_CROP;
    if (use_roi && (!troi || troi->numel != 2 * na)) bad = "input 'roi'";
    for (int32_t i = 0; !bad && use_roi && i < 2 * na; i++) roi[i] = ld_any(troi->dtype, troi->data, i);
    if (bad)
        return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE, "node '%s' (%s): %s has the wrong number of values",
                        ig__node_label(ex->node), ex->node->op_type, bad);
    plan_dims(c, r, x->dims, use_sizes ? NULL : sc, use_sizes ? sz : NULL, use_roi ? roi : NULL, out, scale, roi_full);
    for (int32_t d = 0; d < r; d++)
        if (out[d] != ex->out[0]->dims[d] || !(scale[d] > 0))
            return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE,
                            "node '%s' (%s): axis %d resizes %" PRId64 " to %" PRId64
                            " (scale %g), but the output was planned with %" PRId64,
                            ig__node_label(ex->node), ex->node->op_type, (int)d, x->dims[d], out[d], scale[d],
                            ex->out[0]->dims[d]);
    return INGOT_OK;
}

static size_t tab_bytes(int64_t out, int64_t k)
{
    size_t n;
    if (out < 0 || k < 0 || !ig__mul_size((size_t)out, (size_t)k, &n) ||
        !ig__mul_size(n, sizeof(int64_t) + sizeof(double), &n) || !ig__add_size(n, (size_t)out + 63, &n))
        return SIZE_MAX; /* never fits: the caller reports it */
    return n & ~(size_t)63;
}

static size_t resize_scratch(const ig_graph *g, const ig_node *n)
{
    const ig_value *x = ig__node_input(g, n, 0), *y = &g->values[n->outputs[0]];
    resize_cfg c;
    char why[8];
    if (!x || x->shape.rank < 0 || !parse_cfg(n, x->shape.rank, &c, why, sizeof why)) return 0;
    size_t total = 0;
    for (int32_t d = 0; d < x->shape.rank; d++) {
        int64_t in = x->shape.d[d].n, out = y->shape.d[d].n;
        size_t b = tab_bytes(out, axis_taps_bound(&c, in, out));
        if (!ig__add_size(total, b, &total)) return SIZE_MAX;
    }
    return total;
}

static ingot_status resize_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    resize_cfg c;
    char why[256];
    if (!parse_cfg(ex->node, x->rank, &c, why, sizeof why))
        return ig__errf(ex->err, INGOT_ERR_MODEL_UNSUPPORTED_OP, "node '%s' (%s): %s", ig__node_label(ex->node),
                        ex->node->op_type, why);
    resize_args ra = {
        .c = &c, .x = x->data, .y = y->data, .dt = x->dtype, .es = ingot_dtype_size(x->dtype), .r = x->rank};
    double scale[IG_MAX_RANK], roi[2 * IG_MAX_RANK];
    ingot_status st = exec_plan(ex, &c, ra.out, scale, roi);
    if (st != INGOT_OK) return st;
    if (y->numel == 0) return INGOT_OK;
    if (x->rank == 0) {
        memcpy(y->data, x->data, ra.es);
        return INGOT_OK;
    }
    if (x->numel == 0)
        return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE,
                        "node '%s' (%s): cannot resize an empty tensor to a "
                        "non-empty one",
                        ig__node_label(ex->node), ex->node->op_type);
    /* tables in scratch */
    unsigned char *p = ex->scratch, *pend = p + ex->scratch_bytes;
    int64_t stride = 1;
    for (int32_t d = x->rank - 1; d >= 0; d--) {
        axis_tab *t = &ra.tab[d];
        t->k = axis_identity(&c, x->dims[d], ra.out[d], scale[d], (double[]){roi[d], roi[x->rank + d]})
                   ? 1
                   : axis_taps(&c, scale[d]);
        size_t need = tab_bytes(ra.out[d], t->k);
        if (!p || (size_t)(pend - p) < need)
            return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s' (%s): scratch too small for the resize tables",
                            ig__node_label(ex->node), ex->node->op_type);
        t->off = (int64_t *)p;
        t->w = (double *)(p + (size_t)(ra.out[d] * t->k) * sizeof(int64_t));
        t->ext = p + (size_t)(ra.out[d] * t->k) * (sizeof(int64_t) + sizeof(double));
        p += need;
        build_axis(&c, x->dims[d], ra.out[d], scale[d], (double[]){roi[d], roi[x->rank + d]}, stride, t);
        stride *= x->dims[d];
    }
    st_sat(x->dtype, ra.ext_bytes, 0, c.extrapolation);
    ra.n_rows = y->numel / ra.out[x->rank - 1];
    int64_t per_row = ra.out[x->rank - 1] * (c.mode == M_NEAREST ? 1 : 8);
    int64_t grain = 32768 / (per_row > 0 ? per_row : 1);
    ig__parallel_for(ex->pool, ra.n_rows, grain < 1 ? 1 : grain, resize_rows, &ra);
    return INGOT_OK;
}

/* A multiply-add (2 operations) per tap: 2^d * 2 per output for linear over d resized axes, 4^d * 2 for
 * cubic (wider with antialiasing). Nearest only copies. */
static double resize_flops(const ig_graph *g, const ig_node *n)
{
    const ig_value *x = ig__node_input(g, n, 0), *y = &g->values[n->outputs[0]];
    resize_cfg c;
    char why[8];
    int64_t numel;
    if (!x || x->shape.rank < 0 || !parse_cfg(n, x->shape.rank, &c, why, sizeof why) ||
        !ig__shape_numel(&y->shape, &numel) || c.mode == M_NEAREST)
        return 0;
    double taps = 1;
    for (int32_t d = 0; d < x->shape.rank; d++) {
        int64_t in = x->shape.d[d].n, out = y->shape.d[d].n;
        if (in == out) continue;
        double k = c.mode == M_LINEAR ? 2 : 4;
        if (c.antialias && out > 0 && out < in) k *= ceil((double)in / (double)out); /* filter widened by 1/scale */
        taps *= k;
    }
    return 2.0 * taps * (double)numel;
}

const ig_op_def ig__op_resize = {
    .name = "Resize",
    .since = 10,
    .min_in = 1,
    .max_in = 4,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = (1u << 1) | (1u << 2) | (1u << 3), /* scales (input 1 in opset 10), scales, sizes */
    .infer = resize_infer,
    .cpu = resize_cpu,
    .cpu_scratch = resize_scratch,
    .flops = resize_flops,
};

const ig_op_def ig__op_upsample = {
    .name = "Upsample",
    .since = 7,
    .min_in = 1,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = 1u << 1,
    .infer = resize_infer,
    .cpu = resize_cpu,
    .cpu_scratch = resize_scratch,
    .flops = resize_flops,
};

/* ---- DepthToSpace ---- */

static ingot_status d2s_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_ALL)) != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0);
    const ig_attr *ab = ig__node_attr(cx->node, "blocksize");
    if (!ab || ab->type != IG_ATTR_INT)
        return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "attribute 'blocksize' (an integer) is required");
    int64_t b = ab->i;
    if (b < 1 || b > (1 << 20)) return ig__fail_shape(cx, "attribute 'blocksize' = %" PRId64 " must be >= 1", b);
    const char *mode = ig__attr_str(cx->node, "mode", "DCR");
    if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
        return ig__unsupported(cx, "attribute 'mode' = '%s' is not supported (DCR or CRD)", mode);
    ig_shape out = {.rank = -1};
    if (x->shape.rank >= 0) {
        if (x->shape.rank != 4) {
            char s[256];
            return ig__fail_shape(cx, "input '%s' has shape %s; DepthToSpace needs a 4-D [N, C, H, W] tensor", x->name,
                                  ig__shape_str(cx->g, &x->shape, s, sizeof s));
        }
        out = x->shape;
        ig_dim c = x->shape.d[1];
        if (ig__dim_known(c) && c.n % (b * b) != 0)
            return ig__fail_shape(cx, "channels %" PRId64 " are not divisible by blocksize^2 = %" PRId64, c.n, b * b);
        if (!ig__dim_div(c, ig__dim_const(b * b), &out.d[1])) out.d[1] = ig__dim_fresh(cx);
        for (int k = 2; k < 4; k++)
            if (!ig__dim_mul(x->shape.d[k], ig__dim_const(b), &out.d[k])) out.d[k] = ig__dim_fresh(cx);
    }
    return ig__set_out(cx, 0, x->dtype, &out);
}

typedef struct d2s_args {
    const unsigned char *x;
    unsigned char *y;
    size_t es;
    int64_t b, c_out, h, w;
    bool crd;
} d2s_args;

/* One output row (n, c', h*b + i) per task: its W*b elements come from b input channels. */
static void d2s_rows(void *arg, int64_t begin, int64_t end)
{
    const d2s_args *a = arg;
    const int64_t b = a->b, h = a->h, w = a->w, hb = h * b, wb = w * b;
    const size_t es = a->es;
    for (int64_t row = begin; row < end; row++) {
        int64_t oh = row % hb, nc = row / hb, co = nc % a->c_out, n = nc / a->c_out;
        int64_t ih = oh / b, i = oh % b;
        unsigned char *y = a->y + (size_t)(row * wb) * es;
        for (int64_t j = 0; j < b; j++) {
            int64_t ci = a->crd ? co * b * b + i * b + j : (i * b + j) * a->c_out + co;
            const unsigned char *x = a->x + (size_t)(((n * a->c_out * b * b + ci) * h + ih) * w) * es;
            for (int64_t iw = 0; iw < w; iw++) memcpy(y + (size_t)(iw * b + j) * es, x + (size_t)iw * es, es);
        }
    }
}

static ingot_status d2s_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    d2s_args da = {.x = x->data,
                   .y = ex->out[0]->data,
                   .es = ingot_dtype_size(x->dtype),
                   .b = ig__attr_int(ex->node, "blocksize", 1),
                   .h = x->dims[2],
                   .w = x->dims[3],
                   .crd = !strcmp(ig__attr_str(ex->node, "mode", "DCR"), "CRD")};
    da.c_out = x->dims[1] / (da.b * da.b);
    int64_t rows = x->dims[0] * da.c_out * da.h * da.b;
    int64_t per_row = da.w * da.b, grain = 65536 / (per_row > 0 ? per_row : 1);
    if (ex->out[0]->numel) ig__parallel_for(ex->pool, rows, grain < 1 ? 1 : grain, d2s_rows, &da);
    return INGOT_OK;
}

const ig_op_def ig__op_depth_to_space = {
    .name = "DepthToSpace",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = d2s_infer,
    .cpu = d2s_cpu,
    .flops = ig__flops_none,
};
