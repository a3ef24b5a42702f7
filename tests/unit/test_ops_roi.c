/*
 * test_ops_roi.c -- RoiAlign and DeformConv on the CPU: their kernels against straightforward
 * definitions written here in double (every sample visited, every tap interpolated corner by corner),
 * on the cases ONNX's node tests leave out: both coordinate modes and both reductions, ROIs far off
 * and far larger than the map, a non-finite ROI, batch indices out of range, float16 and double,
 * 1-D and 3-D DeformConv, groups and offset groups, NaN and far offsets, enough channels to split the
 * output positions into chunks, a thread pool; and the inference errors that must name the node.
 */
#include "fused_util.h"
#include "ops/ops_internal.h"

/* ---------------------------------------------------------------------------------------------- */
/* RoiAlign                                                                                        */

typedef struct roi_spec {
    int oh, ow, ratio;
    double scale;
    bool half_pixel, max_mode;
} roi_spec;

/* Bin (ph, pw) of one ROI over channel plane x [h, w], per the spec: every grid sample, 0 off the map. */
static double roi_bin_ref(const double *x, int64_t h, int64_t w, const double *roi, const roi_spec *sp, int ph, int pw)
{
    double off = sp->half_pixel ? 0.5 : 0.0;
    double x1 = roi[0] * sp->scale - off, y1 = roi[1] * sp->scale - off;
    double rw = roi[2] * sp->scale - off - x1, rh = roi[3] * sp->scale - off - y1;
    if (!sp->half_pixel) {
        rw = rw < 1 ? 1 : rw;
        rh = rh < 1 ? 1 : rh;
    }
    double bh = rh / sp->oh, bw = rw / sp->ow;
    int64_t gh = sp->ratio > 0 ? sp->ratio : (int64_t)ceil(bh), gw = sp->ratio > 0 ? sp->ratio : (int64_t)ceil(bw);
    double acc = 0;
    for (int64_t iy = 0; iy < gh; iy++)
        for (int64_t ix = 0; ix < gw; ix++) {
            double y = y1 + ph * bh + (iy + 0.5) * bh / (double)gh, xx = x1 + pw * bw + (ix + 0.5) * bw / (double)gw;
            double v[4] = {0, 0, 0, 0};
            if (y >= -1 && y <= (double)h && xx >= -1 && xx <= (double)w) {
                y = y < 0 ? 0 : y;
                xx = xx < 0 ? 0 : xx;
                int64_t y0 = (int64_t)y, x0 = (int64_t)xx;
                int64_t yh = y0 + 1 < h ? y0 + 1 : h - 1, xh = x0 + 1 < w ? x0 + 1 : w - 1;
                double ly = y0 + 1 < h ? y - (double)y0 : 0, lx = x0 + 1 < w ? xx - (double)x0 : 0;
                if (y0 > h - 1) y0 = h - 1;
                if (x0 > w - 1) x0 = w - 1;
                v[0] = (1 - ly) * (1 - lx) * x[y0 * w + x0];
                v[1] = (1 - ly) * lx * x[y0 * w + xh];
                v[2] = ly * (1 - lx) * x[yh * w + x0];
                v[3] = ly * lx * x[yh * w + xh];
            }
            if (!sp->max_mode) {
                acc += v[0] + v[1] + v[2] + v[3];
                continue;
            }
            double m = fmax(fmax(v[0], v[1]), fmax(v[2], v[3]));
            acc = iy == 0 && ix == 0 ? m : fmax(acc, m);
        }
    if (sp->max_mode) return acc;
    return gh > 0 && gw > 0 ? acc / (double)(gh * gw) : 0;
}

/* A RoiAlign node over X (dtype dt, [n, c, h, w] from x) and rois [r, 4], run on pool; compared
 * element by element with roi_bin_ref within tol. */
static void check_roi_align(int opset, ingot_dtype dt, const int64_t *xd, const double *x, int r, const double *rois,
                            const int64_t *bi, const roi_spec *sp, struct ig_pool *pool, double tol)
{
    T t;
    t_init(&t);
    int64_t xn = xd[0] * xd[1] * xd[2] * xd[3], rd[2] = {r, 4}, bd = r;
    void *xb = malloc(8 * (size_t)xn), *rb = malloc(8 * (size_t)r * 4);
    double *xr = malloc(8 * (size_t)xn); /* X as the kernel sees it (rounded to dt) */
    for (int64_t i = 0; i < xn; i++) {
        ig__elem_set_f64(dt, xb, i, x[i]);
        xr[i] = ig__elem_f64(dt, xb, i);
    }
    double rr[64];
    for (int i = 0; i < 4 * r; i++) {
        ig__elem_set_f64(dt, rb, i, rois[i]);
        rr[i] = ig__elem_f64(dt, rb, i);
    }
    t_const(&t, "x", dt, 4, xd, xb);
    t_const(&t, "rois", dt, 2, rd, rb);
    t_const(&t, "bi", INGOT_DTYPE_INT64, 1, &bd, bi);
    ig_node *n = t_node(&t, "RoiAlign", opset, "x,rois,bi", "y");
    a_int(n, "output_height", sp->oh);
    a_int(n, "output_width", sp->ow);
    a_int(n, "sampling_ratio", sp->ratio);
    a_float(n, "spatial_scale", (float)sp->scale);
    a_str(n, "mode", sp->max_mode ? "max" : "avg");
    if (opset >= 16) a_str(n, "coordinate_transformation_mode", sp->half_pixel ? "half_pixel" : "output_half_pixel");
    roi_spec s = *sp;
    s.scale = (float)sp->scale;
    R res;
    ingot_status st = t_run(&t, n, pool, &res);
    if (st != INGOT_OK) fprintf(stderr, "  %s\n", t.err.msg);
    ASSERT_EQ(st, INGOT_OK);
    int64_t plane = xd[2] * xd[3], k = 0;
    for (int i = 0; i < r; i++)
        for (int64_t c = 0; c < xd[1]; c++)
            for (int ph = 0; ph < sp->oh; ph++)
                for (int pw = 0; pw < sp->ow; pw++, k++) {
                    double want = roi_bin_ref(xr + (bi[i] * xd[1] + c) * plane, xd[2], xd[3], rr + 4 * i, &s, ph, pw);
                    double got = elem(&res.out[0], k);
                    if (!close_to(got, want, tol, tol))
                        TEST_FAIL_("roi %d channel %" PRId64 " bin (%d, %d): %.9g, expected %.9g", i, c, ph, pw, got,
                                   want);
                }
    r_free(&res);
    free(xb);
    free(rb);
    free(xr);
    t_free(&t);
}

static double *rand_f64(int64_t n, double scale)
{
    double *p = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) p[i] = urand() * scale;
    return p;
}

TEST(roi_align_modes_against_definition)
{
    const int64_t xd[4] = {2, 3, 7, 9};
    double *x = rand_f64(2 * 3 * 7 * 9, 2.0); /* negative values too: max mode's 0 off the map shows */
    /* inside, crossing every edge, smaller than a pixel, inverted (x2 < x1), off the map */
    const double rois[] = {1, 1, 6, 5, -3, -2, 4, 8.5, 7.2, 4.1, 7.6, 4.3, 5, 6, 2, 1, 10, 8, 14, 12};
    const int64_t bi[] = {0, 1, 1, 0, 1};
    struct ig_pool *pool = ig__pool_create(3);
    for (int k = 0; k < 16; k++) {
        roi_spec sp = {.oh = 1 + k % 3,
                       .ow = 2 + k % 2,
                       .ratio = (k / 2) % 3,
                       .scale = k % 5 == 4 ? 0.5 : 1.0,
                       .half_pixel = k & 1,
                       .max_mode = (k >> 2) & 1};
        check_roi_align(16, INGOT_DTYPE_FLOAT, xd, x, 5, rois, bi, &sp, k & 8 ? pool : NULL, 2e-6);
        check_roi_align(16, INGOT_DTYPE_DOUBLE, xd, x, 5, rois, bi, &sp, NULL, 1e-12);
        if (!sp.half_pixel) check_roi_align(10, INGOT_DTYPE_FLOAT, xd, x, 5, rois, bi, &sp, NULL, 2e-6);
        if (test_failed_) break;
    }
    ig__pool_destroy(pool);
    free(x);
}

TEST(roi_align_fp16_and_huge_rois)
{
    const int64_t xd[4] = {1, 2, 5, 6};
    double *x = rand_f64(60, 3.0);
    const int64_t bi[3] = {0, 0, 0};
    /* float16 computes in fp32: within fp16's rounding of the output */
    const double rois[12] = {0.5, 0.25, 4.5, 3.75, -1, -1, 7, 6, 2, 1, 3, 4};
    roi_spec sp = {.oh = 2, .ow = 3, .ratio = 0, .scale = 1.0, .half_pixel = true};
    check_roi_align(16, INGOT_DTYPE_FLOAT16, xd, x, 3, rois, bi, &sp, NULL, 4e-3);
    sp.max_mode = true;
    check_roi_align(16, INGOT_DTYPE_BFLOAT16, xd, x, 3, rois, bi, &sp, NULL, 3e-2);
    /* ROIs hundreds of times the map, adaptive grid: 1e5+ samples per bin axis, most of them off the
     * map (the kernel skips those); the definition here visits them all */
    const double big[12] = {-300, -200, 500, 700, -1000, 3, 2000, 4, 2, -2500, 3, 900};
    sp = (roi_spec){.oh = 2, .ow = 2, .ratio = 0, .scale = 1.0, .half_pixel = false};
    check_roi_align(16, INGOT_DTYPE_DOUBLE, xd, x, 3, big, bi, &sp, NULL, 1e-9);
    sp.max_mode = true;
    check_roi_align(16, INGOT_DTYPE_FLOAT, xd, x, 3, big, bi, &sp, NULL, 2e-6);
    free(x);

    /* max mode over a map of negative values: a bin whose first samples are inside the map (no corner
     * weighs 0) and whose last are off it is 0 (the off-map samples' 0 is the largest) */
    double neg[16];
    for (int i = 0; i < 16; i++) neg[i] = -1.0 - i;
    const int64_t d44[4] = {1, 1, 4, 4};
    const double edge[4] = {0.3, 1.3, 9, 2.3};
    sp = (roi_spec){.oh = 1, .ow = 1, .ratio = 2, .scale = 1.0, .max_mode = true};
    check_roi_align(16, INGOT_DTYPE_FLOAT, d44, neg, 1, edge, bi, &sp, NULL, 0);

    /* 1e30 corners: bounded work (the adaptive grid is capped), a finite result; a NaN corner fails */
    T t;
    t_init(&t);
    int64_t d4[4] = {1, 1, 3, 3}, rd[2] = {1, 4}, one = 1;
    const float xs[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, huge[4] = {-1e30f, -1e30f, 1e30f, 1e30f}, nan[4] = {0, 1, NAN, 2};
    const int64_t b1 = 0;
    t_f32(&t, "x", 4, d4, xs);
    t_f32(&t, "huge", 2, rd, huge);
    t_f32(&t, "nan", 2, rd, nan);
    t_const(&t, "b", INGOT_DTYPE_INT64, 1, &one, &b1);
    ig_node *n = t_node(&t, "RoiAlign", 16, "x,huge,b", "y");
    a_int(n, "output_height", 2);
    a_int(n, "output_width", 2);
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    for (int i = 0; i < 4; i++) ASSERT(isfinite(elem(&r.out[0], i)) && fabs(elem(&r.out[0], i)) <= 9);
    r_free(&r);
    n = t_node(&t, "RoiAlign", 16, "x,nan,b", "y2");
    n->name = "roi_nan";
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(t.err.msg, "roi_nan");
    ASSERT_CONTAINS(t.err.msg, "rois[0][2] = nan is not finite");
    r_free(&r);
    t_free(&t);
}

TEST(roi_align_bad_batch_index_and_empty_map)
{
    T t;
    t_init(&t);
    int64_t d4[4] = {2, 1, 2, 2}, rd[2] = {2, 4}, two = 2;
    const float xs[8] = {1, 2, 3, 4, 5, 6, 7, 8}, rs[8] = {0, 0, 1, 1, 0, 0, 1, 1};
    const int64_t bad[2] = {1, 2}, neg[2] = {-1, 0};
    t_f32(&t, "x", 4, d4, xs);
    t_f32(&t, "r", 2, rd, rs);
    t_const(&t, "bad", INGOT_DTYPE_INT64, 1, &two, bad);
    t_const(&t, "neg", INGOT_DTYPE_INT64, 1, &two, neg);
    ig_node *n = t_node(&t, "RoiAlign", 16, "x,r,bad", "y");
    n->name = "roi_oob";
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(t.err.msg, "roi_oob");
    ASSERT_CONTAINS(t.err.msg, "batch_indices[1] = 2 is out of range [0, 2)");
    r_free(&r);
    n = t_node(&t, "RoiAlign", 16, "x,r,neg", "y2");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(t.err.msg, "batch_indices[0] = -1");
    r_free(&r);
    /* a map of width 0 (nothing to sample: 0) and no ROIs at all (an empty output) */
    int64_t d0[4] = {1, 2, 3, 0}, r0[2] = {0, 4}, zero = 0;
    t_f32(&t, "x0", 4, d0, NULL);
    t_f32(&t, "rz", 2, r0, NULL);
    t_const(&t, "bz", INGOT_DTYPE_INT64, 1, &zero, NULL);
    int64_t one = 1;
    const int64_t b0 = 0;
    t_const(&t, "b1", INGOT_DTYPE_INT64, 1, &one, &b0);
    int64_t r1[2] = {1, 4};
    t_f32(&t, "r1", 2, r1, rs);
    n = t_node(&t, "RoiAlign", 16, "x0,r1,b1", "y3");
    a_int(n, "output_height", 2);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y3"), "[1,2,2,1]");
    for (int i = 0; i < 4; i++) ASSERT_EQ(elem(&r.out[0], i), 0);
    r_free(&r);
    n = t_node(&t, "RoiAlign", 16, "x,rz,bz", "y4");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y4"), "[0,1,1,1]");
    r_free(&r);
    t_free(&t);
}

/* Inference on (X, rois, batch_indices) of the given dtypes and dims; attributes from a few keys. */
static ingot_status roi_infer(T *t, const char *name, int opset, ingot_dtype xt, int xr, const ig_dim *xd,
                              ingot_dtype rt_, int rr, const ig_dim *rd, ingot_dtype bt, int br, const ig_dim *bd,
                              const char *attr, const char *val)
{
    char xn[40], rn[40], bn[40], ins[130];
    snprintf(xn, sizeof xn, "%s_x", name);
    snprintf(rn, sizeof rn, "%s_r", name);
    snprintf(bn, sizeof bn, "%s_b", name);
    snprintf(ins, sizeof ins, "%s,%s,%s", xn, rn, bn);
    t_input(t, ig__arena_strdup(&t->g.arena, xn), xt, xr, xd);
    t_input(t, ig__arena_strdup(&t->g.arena, rn), rt_, rr, rd);
    t_input(t, ig__arena_strdup(&t->g.arena, bn), bt, br, bd);
    ig_node *n = t_node(t, "RoiAlign", opset, ins, name);
    n->name = name;
    if (attr && val[0] >= 'a')
        a_str(n, attr, val);
    else if (attr)
        a_int(n, attr, atoi(val));
    return t_infer(t, n);
}

TEST(roi_align_inference)
{
    T t;
    t_init(&t);
    const ig_dim xd[4] = {S(&t, "batch"), D(8), S(&t, "h"), S(&t, "w")}, rd[2] = {S(&t, "n"), D(4)},
                 bd[1] = {S(&t, "n")};
    const ingot_dtype F = INGOT_DTYPE_FLOAT, I = INGOT_DTYPE_INT64;
    ASSERT_EQ(roi_infer(&t, "ok", 16, F, 4, xd, F, 2, rd, I, 1, bd, "output_height", "7"), INGOT_OK);
    ASSERT_STREQ(shp(&t, "ok"), "[n,8,7,1]");
    /* ONNX takes the ROI count from batch_indices */
    const ig_dim r3[2] = {D(3), D(4)}, b3[1] = {D(3)}, r5[2] = {D(3), D(5)}, b4[1] = {D(4)};
    ASSERT_EQ(roi_infer(&t, "ok2", 10, INGOT_DTYPE_FLOAT16, 4, xd, INGOT_DTYPE_FLOAT16, 2, r3, I, 1, bd, NULL, NULL),
              INGOT_OK);
    ASSERT_STREQ(shp(&t, "ok2"), "[n,8,1,1]");
    struct {
        const char *name, *attr, *val, *msg;
        int opset;
        ingot_status st;
    } bad[] = {
        {"m_sum", "mode", "sum", "mode='sum'", 16, INGOT_ERR_MODEL_UNSUPPORTED_OP},
        {"ctm10", "coordinate_transformation_mode", "half_pixel", "needs opset 16", 10, INGOT_ERR_MODEL_UNSUPPORTED_OP},
        {"ctm_ac", "coordinate_transformation_mode", "align_corners", "'align_corners'", 16,
         INGOT_ERR_MODEL_UNSUPPORTED_OP},
        {"sr_neg", "sampling_ratio", "-1", "sampling_ratio=-1", 16, INGOT_ERR_MODEL_UNSUPPORTED_OP},
        {"sr_big", "sampling_ratio", "5000", "sampling_ratio=5000", 16, INGOT_ERR_MODEL_UNSUPPORTED_OP},
        {"oh_0", "output_height", "0", "output_height=0", 16, INGOT_ERR_MODEL_UNSUPPORTED_OP},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_EQ(roi_infer(&t, bad[i].name, bad[i].opset, F, 4, xd, F, 2, rd, I, 1, bd, bad[i].attr, bad[i].val),
                  bad[i].st);
        ASSERT_CONTAINS(t.err.msg, bad[i].name);
        ASSERT_CONTAINS(t.err.msg, bad[i].msg);
    }
    ASSERT_EQ(roi_infer(&t, "r5", 16, F, 4, xd, F, 2, r5, I, 1, b3, NULL, NULL), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "r5");
    ASSERT_EQ(roi_infer(&t, "r_vs_b", 16, F, 4, xd, F, 2, r3, I, 1, b4, NULL, NULL), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "batch_indices");
    ASSERT_EQ(roi_infer(&t, "x3", 16, F, 3, xd, F, 2, rd, I, 1, bd, NULL, NULL), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "rank 4");
    ASSERT_EQ(roi_infer(&t, "rdt", 16, F, 4, xd, INGOT_DTYPE_DOUBLE, 2, rd, I, 1, bd, NULL, NULL),
              INGOT_ERR_MODEL_INVALID);
    ASSERT_CONTAINS(t.err.msg, "rdt");
    ASSERT_EQ(roi_infer(&t, "b32", 16, F, 4, xd, F, 2, rd, INGOT_DTYPE_INT32, 1, bd, NULL, NULL),
              INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "int32");
    ASSERT_EQ(roi_infer(&t, "xint", 16, INGOT_DTYPE_INT32, 4, xd, INGOT_DTYPE_INT32, 2, rd, I, 1, bd, NULL, NULL),
              INGOT_ERR_MODEL_UNSUPPORTED_OP);
    t_free(&t);
}

/* ---------------------------------------------------------------------------------------------- */
/* DeformConv                                                                                      */

typedef struct dc_spec {
    int nsp;
    int64_t n, c, m, group, og;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
    bool bias, mask;
} dc_spec;

static int64_t dc_out(const dc_spec *sp, int i)
{
    return (sp->in[i] + sp->pb[i] + sp->pe[i] - (sp->k[i] - 1) * sp->d[i] - 1) / sp->s[i] + 1;
}

/* x [in...] at a real position, interpolated between the 2^nsp corners of its cell, 0 outside; a NaN
 * position reads 0. */
static double interp(const double *x, const dc_spec *sp, const double *p)
{
    for (int i = 0; i < sp->nsp; i++)
        if (p[i] != p[i]) return 0;
    double v = 0;
    for (int cn = 0; cn < (1 << sp->nsp); cn++) {
        double wt = 1;
        int64_t idx = 0;
        bool in = true;
        for (int i = 0; i < sp->nsp; i++) {
            double f = floor(p[i]);
            int up = (cn >> i) & 1;
            double at = f + up;
            in = in && at >= 0 && at < (double)sp->in[i];
            idx = idx * sp->in[i] + (in ? (int64_t)at : 0);
            wt *= up ? p[i] - f : 1 - (p[i] - f);
        }
        if (in) v += wt * x[idx];
    }
    return v;
}

/* Output element (img, oc, out position o) by the definition. */
static double dc_ref(const dc_spec *sp, const double *x, const double *w, const double *off, const double *b,
                     const double *mask, int64_t img, int64_t oc, const int64_t *o)
{
    int64_t cg = sp->c / sp->group, mg = sp->m / sp->group, kp = 1, osp = 1, isp = 1, opos = 0;
    for (int i = 0; i < sp->nsp; i++) {
        kp *= sp->k[i];
        osp *= dc_out(sp, i);
        isp *= sp->in[i];
        opos = opos * dc_out(sp, i) + o[i];
    }
    double acc = b ? b[oc] : 0;
    for (int64_t ci = 0; ci < cg; ci++) {
        int64_t ch = oc / mg * cg + ci, ogi = ch / (sp->c / sp->og);
        for (int64_t tap = 0; tap < kp; tap++) {
            int64_t kk[3], rem = tap;
            for (int i = sp->nsp - 1; i >= 0; i--) {
                kk[i] = rem % sp->k[i];
                rem /= sp->k[i];
            }
            double p[3];
            for (int i = 0; i < sp->nsp; i++) {
                int64_t chan = (ogi * kp + tap) * sp->nsp + i;
                p[i] = (double)(o[i] * sp->s[i] - sp->pb[i] + kk[i] * sp->d[i]) +
                       off[(img * sp->og * kp * sp->nsp + chan) * osp + opos];
            }
            double v = interp(x + (img * sp->c + ch) * isp, sp, p);
            double mk = mask ? mask[(img * sp->og * kp + ogi * kp + tap) * osp + opos] : 1;
            acc += w[(oc * cg + ci) * kp + tap] * v * mk;
        }
    }
    return acc;
}

/* A DeformConv node of spec sp in dtype dt with random inputs (offsets of scale off_scale, plus NaN
 * and far-off entries when `odd`), run on pool and compared with dc_ref within tol. */
static void check_deform_conv(const dc_spec *sp, ingot_dtype dt, double off_scale, bool odd, struct ig_pool *pool,
                              double tol)
{
    T t;
    t_init(&t);
    int r = sp->nsp + 2;
    int64_t kp = 1, osp = 1, xd[5] = {sp->n, sp->c}, wd[5] = {sp->m, sp->c / sp->group}, od[5] = {sp->n, 0},
            md[5] = {sp->n, 0};
    for (int i = 0; i < sp->nsp; i++) {
        kp *= sp->k[i];
        osp *= dc_out(sp, i);
        xd[2 + i] = sp->in[i];
        wd[2 + i] = sp->k[i];
        od[2 + i] = md[2 + i] = dc_out(sp, i);
    }
    od[1] = sp->og * sp->nsp * kp;
    md[1] = sp->og * kp;
    const int64_t *dims[5] = {xd, wd, od, &sp->m, md};
    static const char *const names[5] = {"x", "w", "off", "b", "mask"};
    double *vals[5] = {0};
    for (int v = 0; v < 5; v++) {
        if ((v == 3 && !sp->bias) || (v == 4 && !sp->mask)) continue;
        int rank = v == 3 ? 1 : r;
        int64_t cnt = numel_of(rank, dims[v]);
        vals[v] = rand_f64(cnt, v == 2 ? off_scale : 1.0);
        for (int64_t i = 0; v == 4 && i < cnt; i++) vals[v][i] = fabs(vals[v][i]); /* a mask in [0, 1) */
        if (v == 2 && odd) {
            vals[2][0] = NAN;
            vals[2][cnt - 1] = 1e9;
        }
        void *buf = malloc(8 * (size_t)cnt);
        for (int64_t i = 0; i < cnt; i++) {
            ig__elem_set_f64(dt, buf, i, vals[v][i]);
            vals[v][i] = ig__elem_f64(dt, buf, i); /* what the kernel sees */
        }
        t_const(&t, names[v], dt, rank, dims[v], buf);
        free(buf);
    }
    char ins[32];
    snprintf(ins, sizeof ins, "x,w,off%s%s", sp->bias ? ",b" : sp->mask ? "," : "", sp->mask ? ",mask" : "");
    ig_node *n = t_node(&t, "DeformConv", 19, ins, "y");
    a_ints(&t, n, "kernel_shape", sp->nsp, sp->k);
    a_ints(&t, n, "strides", sp->nsp, sp->s);
    a_ints(&t, n, "dilations", sp->nsp, sp->d);
    int64_t pads[6];
    for (int i = 0; i < sp->nsp; i++) {
        pads[i] = sp->pb[i];
        pads[sp->nsp + i] = sp->pe[i];
    }
    a_ints(&t, n, "pads", 2 * sp->nsp, pads);
    a_int(n, "group", sp->group);
    a_int(n, "offset_group", sp->og);
    R res;
    ingot_status st = t_run(&t, n, pool, &res);
    if (st != INGOT_OK) fprintf(stderr, "  %s\n", t.err.msg);
    ASSERT_EQ(st, INGOT_OK);
    int64_t k = 0;
    for (int64_t img = 0; img < sp->n; img++)
        for (int64_t oc = 0; oc < sp->m; oc++)
            for (int64_t pos = 0; pos < osp; pos++, k++) {
                int64_t o[3], rem = pos;
                for (int i = sp->nsp - 1; i >= 0; i--) {
                    o[i] = rem % dc_out(sp, i);
                    rem /= dc_out(sp, i);
                }
                double want = dc_ref(sp, vals[0], vals[1], vals[2], vals[3], vals[4], img, oc, o);
                double got = elem(&res.out[0], k);
                if (!close_to(got, want, tol, tol))
                    TEST_FAIL_("image %" PRId64 " channel %" PRId64 " position %" PRId64 ": %.9g, expected %.9g", img,
                               oc, pos, got, want);
            }
    r_free(&res);
    for (int v = 0; v < 5; v++) free(vals[v]);
    t_free(&t);
}

typedef struct dc_case {
    ingot_dtype dt;
    double off_scale, tol;
    bool odd, pooled; /* NaN and far offsets; run on a thread pool */
    dc_spec sp;
} dc_case;

#define F16 INGOT_DTYPE_FLOAT16
#define F32 INGOT_DTYPE_FLOAT
#define F64 INGOT_DTYPE_DOUBLE

/* specs: nsp, n, c, m, group, offset_group, in, k, strides, dilations, pads begin and end, B, mask */
static const dc_case dc_cases[] = {
    /* 2-D, groups and offset groups, mask and B; zero offsets (a plain Conv); float16 in fp32 */
    {F32, 1.5, 1e-5, 1, 0, {2, 2, 4, 6, 2, 2, {5, 6}, {3, 2}, {1, 2}, {1, 2}, {1, 0}, {2, 1}, 1, 1}},
    {F32, 4.0, 1e-5, 0, 1, {2, 2, 4, 6, 2, 2, {5, 6}, {3, 2}, {1, 2}, {1, 2}, {1, 0}, {2, 1}, 1, 1}},
    {F64, 1.5, 1e-5, 1, 0, {2, 2, 4, 6, 2, 2, {5, 6}, {3, 2}, {1, 2}, {1, 2}, {1, 0}, {2, 1}, 1, 1}},
    {F32, 1.0, 1e-5, 0, 0, {2, 2, 4, 6, 2, 4, {5, 6}, {3, 2}, {1, 2}, {1, 2}, {1, 0}, {2, 1}, 0, 1}},
    {F32, 0.0, 1e-5, 0, 0, {2, 2, 4, 6, 1, 1, {5, 6}, {3, 2}, {1, 2}, {1, 2}, {1, 0}, {2, 1}, 0, 0}},
    {F16, 1.0, 2e-2, 0, 0, {2, 2, 4, 6, 1, 1, {5, 6}, {3, 2}, {1, 2}, {1, 2}, {1, 0}, {2, 1}, 1, 0}},
    /* 1-D and 3-D */
    {F32, 2.0, 1e-5, 1, 0, {1, 2, 3, 2, 1, 3, {9}, {3}, {2}, {2}, {2}, {1}, 1, 1}},
    {F64, 1.0, 1e-5, 1, 0, {3, 1, 2, 2, 2, 1, {3, 4, 3}, {2, 2, 1}, {1, 1, 2}, {1, 2, 1}, {0, 1, 0}, {1, 0, 0}, 0, 1}},
    /* 2048 channels x 3x3 taps: ~74 KB per output position, so the 64 positions go in two chunks */
    {F32, 1.0, 1e-4, 0, 1, {2, 1, 2048, 2, 1, 2, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 1, 0}},
};

TEST(deform_conv_against_definition)
{
    struct ig_pool *pool = ig__pool_create(2);
    for (size_t i = 0; i < sizeof dc_cases / sizeof dc_cases[0] && !test_failed_; i++) {
        const dc_case *k = &dc_cases[i];
        check_deform_conv(&k->sp, k->dt, k->off_scale, k->odd, k->pooled ? pool : NULL, k->tol);
        if (test_failed_) fprintf(stderr, "  (case %zu)\n", i);
    }
    ig__pool_destroy(pool);
}

TEST(deform_conv_inference)
{
    T t;
    t_init(&t);
    const ig_dim xd[4] = {S(&t, "batch"), D(4), S(&t, "h"), S(&t, "w")}, wd[4] = {D(6), D(2), D(3), D(3)};
    const ig_dim od[4] = {S(&t, "batch"), D(18), S(&t, "oh"), S(&t, "ow")};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 4, xd);
    t_input(&t, "w", INGOT_DTYPE_FLOAT, 4, wd);
    t_input(&t, "off", INGOT_DTYPE_FLOAT, 4, od);
    ig_node *n = t_node(&t, "DeformConv", 19, "x,w,off", "y");
    a_int(n, "group", 2);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[batch,6,oh,ow]"); /* the output's size is the offsets' */
    /* concrete X: the output size comes from the window, and the offsets must agree */
    static const struct {
        const char *name;
        ingot_dtype dt;
        int rank;
        int64_t d[4];
    } ins[] = {
        {"xc", INGOT_DTYPE_FLOAT, 4, {1, 4, 7, 7}},  {"oc", INGOT_DTYPE_FLOAT, 4, {1, 18, 5, 5}},
        {"ob", INGOT_DTYPE_FLOAT, 4, {1, 18, 5, 4}}, {"o2", INGOT_DTYPE_FLOAT, 4, {1, 36, 5, 5}},
        {"mk", INGOT_DTYPE_FLOAT, 4, {1, 10, 5, 5}}, {"b5", INGOT_DTYPE_FLOAT, 1, {5}},
        {"xd", INGOT_DTYPE_DOUBLE, 4, {1, 4, 7, 7}},
    };
    for (size_t i = 0; i < sizeof ins / sizeof ins[0]; i++) {
        ig_dim d[4];
        for (int k = 0; k < ins[i].rank; k++) d[k] = D(ins[i].d[k]);
        t_input(&t, ins[i].name, ins[i].dt, ins[i].rank, d);
    }
    n = t_node(&t, "DeformConv", 19, "xc,w,oc", "yc");
    a_int(n, "group", 2);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "yc"), "[1,6,5,5]");
    struct {
        const char *name, *ins, *attr, *msg;
        int64_t val;
        ingot_status st;
    } bad[] = {
        {"dc_osp", "xc,w,ob", "group", "axis 3, expected 5", 2, INGOT_ERR_MODEL_SHAPE},
        {"dc_och", "xc,w,oc", "offset_group", "offset_group x dims x kernel size", 2, INGOT_ERR_MODEL_SHAPE},
        {"dc_mask", "xc,w,o2,,mk", "offset_group", "offset_group x kernel size", 2, INGOT_ERR_MODEL_SHAPE},
        {"dc_chan", "xc,w,oc", "group", "channels", 1, INGOT_ERR_MODEL_SHAPE},
        {"dc_ogdiv", "xc,w,oc", "offset_group", "not a multiple of offset_group", 3, INGOT_ERR_MODEL_SHAPE},
        {"dc_grp0", "xc,w,oc", "group", "group=0", 0, INGOT_ERR_MODEL_UNSUPPORTED_OP},
        {"dc_bias", "xc,w,oc,b5", "group", "output channels", 2, INGOT_ERR_MODEL_SHAPE},
        {"dc_dt", "xd,w,oc", "group", "dtype", 2, INGOT_ERR_MODEL_INVALID},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = t_node(&t, "DeformConv", 19, bad[i].ins, bad[i].name);
        n->name = bad[i].name;
        a_int(n, bad[i].attr, bad[i].val);
        if (strcmp(bad[i].attr, "group")) a_int(n, "group", 2);
        ASSERT_EQ(t_infer(&t, n), bad[i].st);
        ASSERT_CONTAINS(t.err.msg, bad[i].name);
        ASSERT_CONTAINS(t.err.msg, bad[i].msg);
    }
    /* window attributes */
    n = t_node(&t, "DeformConv", 19, "xc,w,oc", "dc_k");
    n->name = "dc_k";
    a_int(n, "group", 2);
    const int64_t k5[2] = {5, 5}, negp[4] = {0, -1, 0, 0}, s3[1] = {2};
    a_ints(&t, n, "kernel_shape", 2, k5);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "disagrees with W");
    n = t_node(&t, "DeformConv", 19, "xc,w,oc", "dc_p");
    a_int(n, "group", 2);
    a_ints(&t, n, "pads", 4, negp);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "'pads' value -1");
    n = t_node(&t, "DeformConv", 19, "xc,w,oc", "dc_s");
    a_int(n, "group", 2);
    a_ints(&t, n, "strides", 1, s3);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "'strides' has 1 values; 2 expected");
    t_free(&t);
}

TEST_MAIN(RUN(roi_align_modes_against_definition); RUN(roi_align_fp16_and_huge_rois);
          RUN(roi_align_bad_batch_index_and_empty_map); RUN(roi_align_inference); RUN(deform_conv_against_definition);
          RUN(deform_conv_inference))
