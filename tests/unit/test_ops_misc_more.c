/*
 * test_ops_misc_more.c -- Det, ReverseSequence, CenterCropPad and MaxRoiPool on the CPU, on what ONNX's
 * node tests leave out: Det against a Laplace expansion in double (pivoting needed, singular, 1x1, empty,
 * float16, a batch); ReverseSequence's lengths 0 and time, both layouts, an integer dtype, and lengths
 * out of range failing with the node and element named; CenterCropPad's odd crops and pads per axis
 * against an index formula; MaxRoiPool's negative bins, NaN, huge and non-finite ROIs and bad batch
 * indices; and the inference errors that must name the node.
 */
#include "fused_util.h"
#include "ops/ops_internal.h"

/* ---- Det ---- */

/* The determinant of the m x m matrix a by cofactor expansion along the first row (m <= 5). */
static double laplace_det(const double *a, int m)
{
    if (m == 0) return 1;
    if (m == 1) return a[0];
    double sub[25], det = 0;
    for (int c = 0; c < m; c++) {
        int k = 0;
        for (int i = 1; i < m; i++)
            for (int j = 0; j < m; j++)
                if (j != c) sub[k++] = a[i * m + j];
        det += (c & 1 ? -1 : 1) * a[c] * laplace_det(sub, m - 1);
    }
    return det;
}

/* Det of a [batch, m, m] tensor of dtype dt holding vals (rounded to dt), checked within rtol. */
static void check_det(ingot_dtype dt, int opset, int64_t batch, int m, const double *vals, double rtol)
{
    T t;
    t_init(&t);
    int64_t d[3] = {batch, m, m}, n = batch * m * m;
    void *buf = malloc(8 * (size_t)(n ? n : 1));
    double *r = malloc(8 * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        ig__elem_set_f64(dt, buf, i, vals[i]);
        r[i] = ig__elem_f64(dt, buf, i);
    }
    t_const(&t, "x", dt, 3, d, buf);
    ig_node *nd = t_node(&t, "Det", opset, "x", "y");
    R res;
    ASSERT_EQ(t_run(&t, nd, NULL, &res), INGOT_OK);
    ASSERT_EQ(res.out[0].rank, 1);
    ASSERT_EQ(res.out[0].dims[0], batch);
    for (int64_t b = 0; b < batch; b++) {
        double want = laplace_det(r + b * m * m, m), got = elem(&res.out[0], b);
        if (!close_to(got, want, rtol, 1e-12)) TEST_FAIL_("matrix %" PRId64 ": %.9g, expected %.9g", b, got, want);
    }
    r_free(&res);
    free(buf);
    free(r);
    t_free(&t);
}

TEST(det_against_laplace)
{
    double v[6 * 25];
    for (int i = 0; i < 6 * 25; i++) v[i] = urand() * 3;
    for (int m = 1; m <= 5; m++) {
        check_det(INGOT_DTYPE_DOUBLE, 11, 6, m, v, 1e-12);
        check_det(INGOT_DTYPE_FLOAT, 11, 6, m, v, 1e-6);
    }
    check_det(INGOT_DTYPE_FLOAT16, 11, 4, 3, v, 1e-3);
    check_det(INGOT_DTYPE_BFLOAT16, 22, 4, 3, v, 8e-3);
    /* a zero leading entry (pivoting needed), a singular matrix (rows dependent: exactly 0), 0 x 0 */
    const double piv[9] = {0, 2, 1, 3, 1, 4, 2, 5, 7}, sing[9] = {1, 2, 3, 2, 4, 6, 7, 1, 5};
    check_det(INGOT_DTYPE_DOUBLE, 11, 1, 3, piv, 1e-15);
    check_det(INGOT_DTYPE_FLOAT, 11, 1, 3, sing, 0);
    check_det(INGOT_DTYPE_FLOAT, 11, 3, 0, v, 0);
}

TEST(det_inference)
{
    T t;
    t_init(&t);
    ig_dim sq[3] = {S(&t, "b"), D(3), D(3)}, rect[2] = {D(2), D(3)}, one[1] = {D(4)};
    t_input(&t, "sq", INGOT_DTYPE_FLOAT, 3, sq);
    t_input(&t, "rect", INGOT_DTYPE_FLOAT, 2, rect);
    t_input(&t, "v", INGOT_DTYPE_FLOAT, 1, one);
    t_input(&t, "i", INGOT_DTYPE_INT32, 3, sq);
    t_input(&t, "bf", INGOT_DTYPE_BFLOAT16, 3, sq);
    ig_node *n = t_node(&t, "Det", 11, "sq", "y");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[b]");
    const struct {
        const char *in;
        int opset;
        ingot_status st;
        const char *msg;
    } bad[] = {
        {"rect", 11, INGOT_ERR_MODEL_SHAPE, "2 x 3; Det needs square"},
        {"v", 11, INGOT_ERR_MODEL_SHAPE, "rank 1"},
        {"i", 11, INGOT_ERR_MODEL_UNSUPPORTED_OP, "int32"},
        {"bf", 11, INGOT_ERR_MODEL_UNSUPPORTED_OP, "bfloat16"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = t_node(&t, "Det", bad[i].opset, bad[i].in, "z");
        n->name = "det_bad";
        ASSERT_EQ(t_infer(&t, n), bad[i].st);
        ASSERT_CONTAINS(t.err.msg, "det_bad");
        ASSERT_CONTAINS(t.err.msg, bad[i].msg);
    }
    n = t_node(&t, "Det", 22, "bf", "w");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    t_free(&t);
}

/* ---- ReverseSequence ---- */

TEST(reverse_sequence_layouts_and_bad_lengths)
{
    T t;
    t_init(&t);
    /* [batch 3, time 4, 2] of int8, batch_axis 0: element (b, t, k) = 10 * b + 2 * t + k */
    int8_t x[24];
    for (int i = 0; i < 24; i++) x[i] = (int8_t)((i / 8) * 10 + i % 8);
    int64_t d[3] = {3, 4, 2};
    const int64_t lens[3] = {0, 4, 3}, bad[3] = {1, 5, 0}, neg[3] = {1, -1, 0};
    t_const(&t, "x", INGOT_DTYPE_INT8, 3, d, x);
    t_i64(&t, "l", 3, lens);
    t_i64(&t, "bad", 3, bad);
    t_i64(&t, "neg", 3, neg);
    ig_node *n = t_node(&t, "ReverseSequence", 10, "x,l", "y");
    a_int(n, "batch_axis", 0);
    a_int(n, "time_axis", 1);
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    for (int b = 0; b < 3; b++)
        for (int s = 0; s < 4; s++)
            for (int k = 0; k < 2; k++) {
                int from = s < lens[b] ? (int)lens[b] - 1 - s : s;
                ASSERT_EQ(elem(&r.out[0], (b * 4 + s) * 2 + k), b * 10 + from * 2 + k);
            }
    r_free(&r);
    /* time-major [time 4, batch 3] with 2 trailing values: the same data read as (t, b, k) */
    int64_t dt[3] = {4, 3, 2};
    t_const(&t, "xt", INGOT_DTYPE_INT8, 3, dt, x);
    n = t_node(&t, "ReverseSequence", 10, "xt,l", "yt");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    for (int s = 0; s < 4; s++)
        for (int b = 0; b < 3; b++)
            for (int k = 0; k < 2; k++) {
                int from = s < lens[b] ? (int)lens[b] - 1 - s : s;
                ASSERT_EQ(elem(&r.out[0], (s * 3 + b) * 2 + k), x[(from * 3 + b) * 2 + k]);
            }
    r_free(&r);
    n = t_node(&t, "ReverseSequence", 10, "x,bad", "y2");
    n->name = "rs_bad";
    a_int(n, "batch_axis", 0);
    a_int(n, "time_axis", 1);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(t.err.msg, "rs_bad");
    ASSERT_CONTAINS(t.err.msg, "sequence_lens[1] = 5 is out of range [0, 4]");
    r_free(&r);
    n = t_node(&t, "ReverseSequence", 10, "x,neg", "y3");
    a_int(n, "batch_axis", 0);
    a_int(n, "time_axis", 1);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(t.err.msg, "sequence_lens[1] = -1");
    r_free(&r);
    /* inference: equal axes, an axis of 2, a length count that is not the batch, bfloat16 before 28 */
    n = t_node(&t, "ReverseSequence", 10, "x,l", "y4");
    n->name = "rs_axes";
    a_int(n, "batch_axis", 1);
    a_int(n, "time_axis", 1);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "rs_axes");
    ASSERT_CONTAINS(t.err.msg, "batch_axis=1, time_axis=1");
    n = t_node(&t, "ReverseSequence", 10, "x,l", "y5");
    a_int(n, "time_axis", 2);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    n = t_node(&t, "ReverseSequence", 10, "x,l", "y6"); /* batch axis 1 has 4 entries, 3 lengths */
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "has 3 elements but the batch axis 1");
    ig_dim bd[2] = {D(2), D(3)};
    t_input(&t, "bf", INGOT_DTYPE_BFLOAT16, 2, bd);
    n = t_node(&t, "ReverseSequence", 10, "bf,l", "y7");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    n = t_node(&t, "ReverseSequence", 28, "bf,l", "y8");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    t_free(&t);
}

/* ---- CenterCropPad ---- */

TEST(center_crop_pad_odd_sizes)
{
    T t;
    t_init(&t);
    /* [5, 4, 3] float16 to [2, 7, 3]: crop 5 -> 2 (start 1), pad 4 -> 7 (1 before, 2 after), keep 3 */
    float xf[60];
    for (int i = 0; i < 60; i++) xf[i] = (float)i;
    uint16_t *xh = to_f16(xf, 60, NULL);
    int64_t d[3] = {5, 4, 3};
    const int64_t shape[3] = {2, 7, 3}, shape2[2] = {7, 2};
    t_const(&t, "x", INGOT_DTYPE_FLOAT16, 3, d, xh);
    t_i64(&t, "s", 3, shape);
    t_i64(&t, "s2", 2, shape2);
    ig_node *n = t_node(&t, "CenterCropPad", 18, "x,s", "y");
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[2,7,3]");
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 7; j++)
            for (int k = 0; k < 3; k++) {
                int sj = j - 1; /* input column of output column j */
                double want = sj >= 0 && sj < 4 ? (double)(((i + 1) * 4 + sj) * 3 + k) : 0.0;
                ASSERT_EQ(elem(&r.out[0], (i * 7 + j) * 3 + k), want);
            }
    r_free(&r);
    /* axes [-1, 0]: dim 2 padded 3 -> 7 (2 before, 2 after), dim 0 cropped 5 -> 2; dim 1 kept */
    n = t_node(&t, "CenterCropPad", 18, "x,s2", "y2");
    const int64_t axes[2] = {-1, 0};
    a_ints(&t, n, "axes", 2, axes);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y2"), "[2,4,7]");
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 7; k++) {
                int sk = k - 2;
                double want = sk >= 0 && sk < 3 ? (double)(((i + 1) * 4 + j) * 3 + sk) : 0.0;
                ASSERT_EQ(elem(&r.out[0], (i * 4 + j) * 7 + k), want);
            }
    r_free(&r);
    free(xh);
    /* inference: a symbolic dim left alone stays symbolic; bad shapes and axes name the node */
    ig_dim sd[2] = {S(&t, "n"), D(6)};
    t_input(&t, "xs", INGOT_DTYPE_INT32, 2, sd);
    const int64_t one[1] = {4}, neg[1] = {-2}, ax1[1] = {1}, dup[2] = {1, -1};
    t_i64(&t, "s1", 1, one);
    t_i64(&t, "sneg", 1, neg);
    n = t_node(&t, "CenterCropPad", 18, "xs,s1", "y3");
    a_ints(&t, n, "axes", 1, ax1);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y3"), "[n,4]");
    n = t_node(&t, "CenterCropPad", 18, "xs,sneg", "y4");
    n->name = "ccp_neg";
    a_ints(&t, n, "axes", 1, ax1);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "ccp_neg");
    ASSERT_CONTAINS(t.err.msg, "is -2 (negative)");
    n = t_node(&t, "CenterCropPad", 18, "xs,s1", "y5");
    n->name = "ccp_count";
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "has 1 values for 2 axes");
    n = t_node(&t, "CenterCropPad", 18, "xs,s2", "y6");
    a_ints(&t, n, "axes", 2, dup);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "names axis 1 twice");
    t_free(&t);
}

/* ---- MaxRoiPool ---- */

/* A MaxRoiPool node over constants x [n, c, h, w] and rois [r, 5] (float), run and returned in res. */
static ingot_status run_roi_pool(T *t, const char *name, const int64_t *xd, const float *x, int64_t nr,
                                 const float *rois, int64_t ph, int64_t pw, float scale, R *res)
{
    char xn[40], rn[40], ins[90];
    snprintf(xn, sizeof xn, "%s_x", name);
    snprintf(rn, sizeof rn, "%s_r", name);
    snprintf(ins, sizeof ins, "%s,%s", xn, rn);
    int64_t rd[2] = {nr, 5};
    t_f32(t, ig__arena_strdup(&t->g.arena, xn), 4, xd, x);
    t_f32(t, ig__arena_strdup(&t->g.arena, rn), 2, rd, rois);
    ig_node *n = t_node(t, "MaxRoiPool", 1, ins, name);
    n->name = name;
    const int64_t ps[2] = {ph, pw};
    a_ints(t, n, "pooled_shape", 2, ps);
    a_float(n, "spatial_scale", scale);
    return t_run(t, n, NULL, res);
}

TEST(max_roi_pool_edges)
{
    T t;
    t_init(&t);
    /* a 4x4 map of negative values -1 - i: the maximum of a bin is its top-left pixel */
    float neg[16];
    for (int i = 0; i < 16; i++) neg[i] = -1.0f - (float)i;
    const int64_t d44[4] = {1, 1, 4, 4};
    /* ROI [0,0]-[3,3] in 2x2 bins: bins of 2x2 pixels; ROI beyond the map: its off-map bins are 0 */
    const float rois[10] = {0, 0, 0, 3, 3, 0, 2, 2, 9, 9};
    R r;
    ASSERT_EQ(run_roi_pool(&t, "rp", d44, neg, 2, rois, 2, 2, 1.0f, &r), INGOT_OK);
    const double want[8] = {-1, -3, -9, -11, -11, 0, 0, 0};
    for (int i = 0; i < 8; i++) ASSERT_EQ(elem(&r.out[0], i), want[i]);
    r_free(&r);
    /* a NaN pixel makes its bin NaN wherever it lies in the bin */
    neg[5] = NAN;
    const float one[5] = {0, 0, 0, 3, 3};
    ASSERT_EQ(run_roi_pool(&t, "rp_nan", d44, neg, 1, one, 1, 1, 1.0f, &r), INGOT_OK);
    ASSERT(isnan(elem(&r.out[0], 0)));
    r_free(&r);
    neg[5] = -6;
    /* corners of 1e30: clamped, a finite maximum over the whole map, no huge loops */
    const float huge[5] = {0, -1e30f, -1e30f, 1e30f, 1e30f};
    ASSERT_EQ(run_roi_pool(&t, "rp_huge", d44, neg, 1, huge, 3, 3, 1.0f, &r), INGOT_OK);
    for (int i = 0; i < 9; i++) ASSERT(elem(&r.out[0], i) == 0 || elem(&r.out[0], i) == -1);
    r_free(&r);
    /* run-time errors naming the node: a batch index out of range, a non-finite corner */
    const float b1[5] = {1, 0, 0, 1, 1}, bm[5] = {-1, 0, 0, 1, 1}, inf[5] = {0, 0, INFINITY, 1, 1};
    ASSERT_EQ(run_roi_pool(&t, "rp_b1", d44, neg, 1, b1, 1, 1, 1.0f, &r), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(t.err.msg, "rp_b1");
    ASSERT_CONTAINS(t.err.msg, "rois[0][0] = 1: batch index out of range [0, 1)");
    r_free(&r);
    ASSERT_EQ(run_roi_pool(&t, "rp_bm", d44, neg, 1, bm, 1, 1, 1.0f, &r), INGOT_ERR_INVALID_ARG);
    r_free(&r);
    ASSERT_EQ(run_roi_pool(&t, "rp_inf", d44, neg, 1, inf, 1, 1, 1.0f, &r), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(t.err.msg, "rois[0][2] = inf is not finite");
    r_free(&r);
    /* attributes refused at inference */
    ASSERT_EQ(run_roi_pool(&t, "rp_ps", d44, neg, 1, one, 0, 1, 1.0f, &r), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "rp_ps");
    ASSERT_CONTAINS(t.err.msg, "pooled_shape=[0, 1]");
    ASSERT_EQ(run_roi_pool(&t, "rp_sc", d44, neg, 1, one, 1, 1, -1.0f, &r), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "spatial_scale=-1");
    const int64_t r4[2] = {1, 4};
    t_f32(&t, "r4", 2, r4, one);
    ig_node *n = t_node(&t, "MaxRoiPool", 1, "rp_x,r4", "rp4");
    n->name = "rp4";
    const int64_t ps[2] = {1, 1};
    a_ints(&t, n, "pooled_shape", 2, ps);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "5 expected");
    t_free(&t);
}

TEST_MAIN(RUN(det_against_laplace); RUN(det_inference); RUN(reverse_sequence_layouts_and_bad_lengths);
          RUN(center_crop_pad_odd_sizes); RUN(max_roi_pool_edges))
