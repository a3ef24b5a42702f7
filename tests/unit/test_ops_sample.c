/*
 * test_ops_sample.c -- the sample family (src/ops/sample.c): GridSample and AffineGrid.
 * CPU kernels against hand-computed values and against a naive reference written here from the spec
 * text (positions in double, padding by repeated reflection, taps enumerated per axis), every mode x
 * padding x align_corners on 3-, 4- and 5-D inputs, the opset 16 / 20 mode names, mixed dtypes, hostile
 * grid values (inf, NaN, 1e30), type/shape inference with symbolic dims, errors naming the node, FLOPs,
 * and threaded runs matching serial ones.
 */
#include "ops/ops_internal.h"
#include "test.h"

#include "graph_builder.h"

static double getf(const ig_tensor *te, int64_t k) { return ig__elem_f64(te->dtype, te->data, k); }

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double drand(double lo, double hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

static int64_t numel_of(int rank, const int64_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= d[i];
    return n;
}

/* A constant of dtype dt holding vals (rounded to dt); vals are overwritten with the rounded values, so
 * the naive reference sees what the kernel sees. */
static void t_vals(T *t, const char *name, ingot_dtype dt, int rank, const int64_t *dims, double *vals)
{
    int64_t n = numel_of(rank, dims);
    void *buf = malloc((size_t)(n ? n : 1) * ingot_dtype_size(dt));
    for (int64_t i = 0; i < n; i++) {
        ig__elem_set_f64(dt, buf, i, vals[i]);
        vals[i] = ig__elem_f64(dt, buf, i);
    }
    t_const(t, name, dt, rank, dims, buf);
    free(buf);
}

/* ==== a naive GridSample, from the spec ==== */

enum { LIN, NEAR, CUB };
enum { ZEROS, BORDER, REFLECT };
static const char *const mode20[] = {"linear", "nearest", "cubic"};
static const char *const mode16[] = {"bilinear", "nearest", "bicubic"};
static const char *const pads[] = {"zeros", "border", "reflection"};

/* reflected at the borders again and again until inside */
static double naive_reflect(double v, double lo, double hi)
{
    if (hi == lo) return lo;
    while (v < lo || v > hi) v = v < lo ? 2 * lo - v : 2 * hi - v;
    return v;
}

/* X's element at integer position idx (per spatial axis), or 0 outside with zero padding */
static double naive_pixel(const double *x, int r, const int64_t *len, const int64_t *idx, int pad, bool align)
{
    int64_t off = 0;
    for (int a = 0; a < r; a++) {
        int64_t i = idx[a];
        if (i < 0 || i >= len[a]) {
            if (pad == ZEROS) return 0;
            if (pad == BORDER) i = i < 0 ? 0 : len[a] - 1;
            if (pad == REFLECT)
                i = (int64_t)naive_reflect((double)i, align ? 0 : -0.5, align ? len[a] - 1.0 : len[a] - 0.5);
        }
        off = off * len[a] + i;
    }
    return x[off];
}

/* Keys' kernel, a = -0.75, in expanded powers */
static double keys(double s)
{
    const double a = -0.75;
    s = fabs(s);
    if (s <= 1) return (a + 2) * s * s * s - (a + 3) * s * s + 1;
    if (s < 2) return a * s * s * s - 5 * a * s * s + 8 * a * s - 4 * a;
    return 0;
}

/* Y [N, C, out...] of X [N, C, len...] and grid [N, out..., r]; grid_f32: positions in fp32 */
static void naive_gs(int mode, int pad, bool align, bool grid_f32, int r, int64_t nb, int64_t nc, const int64_t *len,
                     const int64_t *out, const double *x, const double *grid, double *y)
{
    int64_t in_plane = numel_of(r, len), out_plane = numel_of(r, out);
    for (int64_t n = 0; n < nb; n++)
        for (int64_t q = 0; q < out_plane; q++) {
            double pos[3];
            for (int a = 0; a < r; a++) {
                double g = grid[(n * out_plane + q) * r + (r - 1 - a)], v;
                if (grid_f32) {
                    float gf = (float)g, l = (float)len[a];
                    v = align ? (gf + 1.0f) / 2.0f * (l - 1.0f) : ((gf + 1.0f) * l - 1.0f) / 2.0f;
                } else {
                    v = align ? (g + 1) / 2 * (len[a] - 1) : ((g + 1) * len[a] - 1) / 2;
                }
                if (mode == NEAR) v = nearbyint(v);
                double lo = align ? 0 : -0.5, hi = align ? len[a] - 1.0 : len[a] - 0.5;
                if (v < lo || v > hi) {
                    if (pad == BORDER) v = v < 0 ? 0 : len[a] - 1.0;
                    if (pad == REFLECT) v = naive_reflect(v, lo, hi);
                }
                pos[a] = v;
            }
            for (int64_t c = 0; c < nc; c++) {
                const double *xp = x + (n * nc + c) * in_plane;
                double s = 0;
                int64_t idx[3];
                if (mode == NEAR) {
                    for (int a = 0; a < r; a++) idx[a] = (int64_t)pos[a];
                    s = naive_pixel(xp, r, len, idx, pad, align);
                } else {
                    int k = mode == LIN ? 2 : 4, ncomb = 1;
                    for (int a = 0; a < r; a++) ncomb *= k;
                    for (int m = 0; m < ncomb; m++) {
                        double w = 1;
                        for (int a = 0, rem = m; a < r; a++, rem /= k) {
                            int j = rem % k;
                            double b = floor(pos[a]), u = pos[a] - b;
                            idx[a] = (int64_t)b + j - (mode == CUB);
                            w *= mode == LIN ? (j ? u : 1 - u) : keys(u + 1 - j);
                        }
                        s += w * naive_pixel(xp, r, len, idx, pad, align);
                    }
                }
                y[(n * nc + c) * out_plane + q] = s;
            }
        }
}

/* one GridSample node over constants; returns the run's status */
static ingot_status run_gs(T *t, const char *name, int opset, const char *mode, const char *pad, int align,
                           ingot_dtype xt, int rank, const int64_t *xd, double *x, ingot_dtype gt, const int64_t *gd,
                           double *grid, struct ig_pool *pool, R *r)
{
    char xn[64], gn[64], yn[64];
    snprintf(xn, sizeof xn, "%s_x", name);
    snprintf(gn, sizeof gn, "%s_g", name);
    snprintf(yn, sizeof yn, "%s_y", name);
    t_vals(t, xn, xt, rank, xd, x);
    t_vals(t, gn, gt, rank, gd, grid);
    char ins[160];
    snprintf(ins, sizeof ins, "%s,%s", xn, gn);
    ig_node *n = t_node(t, "GridSample", opset, ins, yn);
    n->name = name;
    if (mode) a_str(n, "mode", mode);
    if (pad) a_str(n, "padding_mode", pad);
    if (align >= 0) a_int(n, "align_corners", align);
    return t_run(t, n, pool, r);
}

/* ==== GridSample ==== */

TEST(gridsample_hand_values)
{
    /* X = [[1, 2], [3, 4]]; grid points (x, y) */
    double x[4] = {1, 2, 3, 4};
    int64_t xd[4] = {1, 1, 2, 2}, gd[4] = {1, 1, 4, 2};
    static const struct {
        const char *pad;
        int align;
        double want[4];
    } cases[] = {
        /* centre; top-left corner; top-right corner; far outside */
        {"zeros", 0, {2.5, 0.25, 0.5, 0}}, /* positions g + 0.5: the corner (-0.5, -0.5) reads 3 padding taps */
        {"border", 0, {2.5, 1, 2, 4}},     /* -0.5 is on the border, not past it: its taps clamp */
        {"reflection", 0, {2.5, 1, 2, 1}}, /* 3.5 reflects at 1.5 to -0.5, whose taps read index 0 */
        {"zeros", 1, {2.5, 1, 2, 0}},      /* align_corners: positions (g + 1) / 2, corners at pixel centres */
        {"border", 1, {2.5, 1, 2, 4}},     /* (2, 2) clamps to (1, 1) */
        {"reflection", 1, {2.5, 1, 2, 1}}, /* 2 reflects at 1 to 0 */
    };
    for (int i = 0; i < 6; i++) {
        T t;
        t_init(&t);
        double xx[4], g[8] = {0, 0, -1, -1, 1, -1, 3, 3};
        memcpy(xx, x, sizeof xx);
        R r;
        ASSERT_EQ(run_gs(&t, "gs", 20, "linear", cases[i].pad, cases[i].align, INGOT_DTYPE_FLOAT, 4, xd, xx,
                         INGOT_DTYPE_FLOAT, gd, g, NULL, &r),
                  INGOT_OK);
        for (int k = 0; k < 4; k++) ASSERT_NEAR(getf(&r.out[0], k), cases[i].want[k], 1e-6);
        r_free(&r);
        t_free(&t);
    }
}

TEST(gridsample_nearest_ties_to_even)
{
    /* W = 4, align 0: grid -0.5, 0, 0.5 are positions 0.5, 1.5, 2.5: rounded half to even, 0, 2, 2 */
    T t;
    t_init(&t);
    double x[4] = {10, 20, 30, 40}, g[6] = {-0.5, 0, 0, 0, 0.5, 0};
    int64_t xd[4] = {1, 1, 1, 4}, gd[4] = {1, 1, 3, 2};
    R r;
    ASSERT_EQ(
        run_gs(&t, "gs", 20, "nearest", NULL, -1, INGOT_DTYPE_FLOAT, 4, xd, x, INGOT_DTYPE_FLOAT, gd, g, NULL, &r),
        INGOT_OK);
    ASSERT_EQ(getf(&r.out[0], 0), 10);
    ASSERT_EQ(getf(&r.out[0], 1), 30);
    ASSERT_EQ(getf(&r.out[0], 2), 30);
    r_free(&r);
    t_free(&t);
}

TEST(gridsample_reflection_far_out)
{
    /* W = 3, align 1: borders 0 and 2; position g + 1. -3 -> 3 -> 1; 5.5 -> -1.5 -> 1.5; 101 -> 1 */
    T t;
    t_init(&t);
    double x[3] = {1, 2, 4}, g[6] = {-4, 0, 4.5, 0, 100, 0};
    int64_t xd[4] = {1, 1, 1, 3}, gd[4] = {1, 1, 3, 2};
    R r;
    ASSERT_EQ(run_gs(&t, "gs", 20, "linear", "reflection", 1, INGOT_DTYPE_FLOAT, 4, xd, x, INGOT_DTYPE_FLOAT, gd, g,
                     NULL, &r),
              INGOT_OK);
    ASSERT_NEAR(getf(&r.out[0], 0), 2, 1e-6);
    ASSERT_NEAR(getf(&r.out[0], 1), 3, 1e-6);
    ASSERT_NEAR(getf(&r.out[0], 2), 2, 1e-6);
    r_free(&r);
    t_free(&t);
}

/* every mode x padding x align_corners, 1 to 3 spatial axes, against the naive reference */
TEST(gridsample_matches_naive)
{
    static const struct {
        int rank;
        int64_t xd[5], gd[5];
    } shapes[] = {
        {3, {2, 3, 5}, {2, 7, 1}},
        {4, {2, 3, 5, 4}, {2, 3, 6, 2}},
        {4, {1, 2, 1, 6}, {1, 4, 5, 2}}, /* a single row: align_corners' reflection span is 0 */
        {5, {2, 2, 3, 4, 5}, {2, 3, 2, 4, 3}},
    };
    for (int s = 0; s < 4; s++)
        for (int mode = 0; mode < 3; mode++)
            for (int pad = 0; pad < 3; pad++)
                for (int align = 0; align < 2; align++) {
                    T t;
                    t_init(&t);
                    int rank = shapes[s].rank, r = rank - 2;
                    const int64_t *xd = shapes[s].xd, *gd = shapes[s].gd;
                    int64_t nx = numel_of(rank, xd), ng = numel_of(rank, gd), ny = ng / r * xd[1];
                    double *x = malloc(sizeof(double) * (size_t)nx), *g = malloc(sizeof(double) * (size_t)ng);
                    double *want = malloc(sizeof(double) * (size_t)ny);
                    for (int64_t i = 0; i < nx; i++) x[i] = drand(-2, 2);
                    for (int64_t i = 0; i < ng; i++) {
                        static const double special[] = {-1, 1, 0, -0.5, 0.5, 1.25, -1.75};
                        g[i] = i % 5 == 0 ? special[(i / 5) % 7] : drand(-1.6, 1.6);
                    }
                    R res;
                    ingot_status st = run_gs(&t, "gs", 20, mode20[mode], pads[pad], align, INGOT_DTYPE_FLOAT, rank, xd,
                                             x, INGOT_DTYPE_FLOAT, gd, g, NULL, &res);
                    if (st != INGOT_OK) fprintf(stderr, "  %s\n", t.err.msg);
                    ASSERT_EQ(st, INGOT_OK);
                    naive_gs(mode, pad, align, true, r, xd[0], xd[1], xd + 2, gd + 1, x, g, want);
                    ASSERT_EQ(res.out[0].numel, ny);
                    for (int64_t i = 0; i < ny; i++) {
                        if (!(fabs(getf(&res.out[0], i) - want[i]) <= 1e-5))
                            fprintf(stderr, "  rank %d %s %s align %d: y[%" PRId64 "] = %.9g, want %.9g\n", rank,
                                    mode20[mode], pads[pad], align, i, getf(&res.out[0], i), want[i]);
                        ASSERT_NEAR(getf(&res.out[0], i), want[i], 1e-5);
                    }
                    r_free(&res);
                    free(x);
                    free(g);
                    free(want);
                    t_free(&t);
                }
}

/* opset 16 names the modes bilinear / bicubic; each opset refuses the other's names */
TEST(gridsample_opset16_names)
{
    int64_t xd[4] = {1, 2, 4, 3}, gd[4] = {1, 2, 3, 2};
    for (int mode = 0; mode < 3; mode++) {
        T t;
        t_init(&t);
        double x[24], g[12], want[12];
        for (int i = 0; i < 24; i++) x[i] = drand(-1, 1);
        for (int i = 0; i < 12; i++) g[i] = drand(-1.2, 1.2);
        R r;
        ASSERT_EQ(run_gs(&t, "gs16", 16, mode16[mode], "border", 0, INGOT_DTYPE_FLOAT, 4, xd, x, INGOT_DTYPE_FLOAT, gd,
                         g, NULL, &r),
                  INGOT_OK);
        naive_gs(mode, BORDER, false, true, 2, 1, 2, xd + 2, gd + 1, x, g, want);
        for (int i = 0; i < 12; i++) ASSERT_NEAR(getf(&r.out[0], i), want[i], 1e-5);
        r_free(&r);
        if (mode != NEAR) { /* the other opset's name */
            ASSERT_EQ(run_gs(&t, "gs16_bad", 16, mode20[mode], NULL, -1, INGOT_DTYPE_FLOAT, 4, xd, x, INGOT_DTYPE_FLOAT,
                             gd, g, NULL, &r),
                      INGOT_ERR_MODEL_UNSUPPORTED_OP);
            ASSERT_CONTAINS(t.err.msg, "gs16_bad");
            ASSERT_CONTAINS(t.err.msg, mode20[mode]);
            r_free(&r);
            ASSERT_EQ(run_gs(&t, "gs20_bad", 20, mode16[mode], NULL, -1, INGOT_DTYPE_FLOAT, 4, xd, x, INGOT_DTYPE_FLOAT,
                             gd, g, NULL, &r),
                      INGOT_ERR_MODEL_UNSUPPORTED_OP);
            ASSERT_CONTAINS(t.err.msg, "gs20_bad");
            ASSERT_CONTAINS(t.err.msg, mode16[mode]);
            r_free(&r);
        }
        t_free(&t);
    }
    /* defaults: bilinear at 16, linear at 20; the same numbers */
    T t;
    t_init(&t);
    double x[24], g[12], want[12];
    for (int i = 0; i < 24; i++) x[i] = drand(-1, 1);
    for (int i = 0; i < 12; i++) g[i] = drand(-1.2, 1.2);
    naive_gs(LIN, ZEROS, false, true, 2, 1, 2, xd + 2, gd + 1, x, g, want);
    for (int opset = 16; opset <= 20; opset += 4) {
        R r;
        ASSERT_EQ(run_gs(&t, opset == 16 ? "d16" : "d20", opset, NULL, NULL, -1, INGOT_DTYPE_FLOAT, 4, xd, x,
                         INGOT_DTYPE_FLOAT, gd, g, NULL, &r),
                  INGOT_OK);
        for (int i = 0; i < 12; i++) ASSERT_NEAR(getf(&r.out[0], i), want[i], 1e-5);
        r_free(&r);
    }
    t_free(&t);
}

/* fp16 / bf16 / double X, fp16 / double grids, mixed */
TEST(gridsample_dtypes)
{
    static const struct {
        ingot_dtype xt, gt;
        double tol;
    } cases[] = {
        {INGOT_DTYPE_FLOAT16, INGOT_DTYPE_FLOAT, 4e-3},   {INGOT_DTYPE_FLOAT, INGOT_DTYPE_FLOAT16, 1e-5},
        {INGOT_DTYPE_FLOAT16, INGOT_DTYPE_FLOAT16, 4e-3}, {INGOT_DTYPE_BFLOAT16, INGOT_DTYPE_FLOAT, 3e-2},
        {INGOT_DTYPE_DOUBLE, INGOT_DTYPE_DOUBLE, 1e-12},  {INGOT_DTYPE_DOUBLE, INGOT_DTYPE_FLOAT, 1e-12},
        {INGOT_DTYPE_FLOAT, INGOT_DTYPE_DOUBLE, 1e-5},
    };
    int64_t xd[4] = {2, 2, 5, 6}, gd[4] = {2, 4, 3, 2};
    for (int i = 0; i < 7; i++)
        for (int mode = 0; mode < 3; mode++) {
            T t;
            t_init(&t);
            double x[120], g[48], want[48];
            for (int k = 0; k < 120; k++) x[k] = drand(-3, 3);
            for (int k = 0; k < 48; k++) g[k] = drand(-1.3, 1.3);
            R r;
            ASSERT_EQ(run_gs(&t, "gs", 20, mode20[mode], "reflection", 0, cases[i].xt, 4, xd, x, cases[i].gt, gd, g,
                             NULL, &r),
                      INGOT_OK);
            ASSERT_EQ(r.out[0].dtype, cases[i].xt);
            naive_gs(mode, REFLECT, false, cases[i].gt != INGOT_DTYPE_DOUBLE, 2, 2, 2, xd + 2, gd + 1, x, g, want);
            for (int k = 0; k < 48; k++) ASSERT_NEAR(getf(&r.out[0], k), want[k], cases[i].tol * (1 + fabs(want[k])));
            r_free(&r);
            t_free(&t);
        }
}

/* inf, NaN and huge positions: no crash (ASan run), zero padding reads 0, border/reflection edge values */
TEST(gridsample_hostile_grid)
{
    const double big[] = {INFINITY, -INFINITY, NAN, 1e30, -1e30, 3e9};
    int64_t xd[4] = {1, 1, 3, 4}, gd[4] = {1, 6, 6, 2};
    for (int mode = 0; mode < 3; mode++)
        for (int pad = 0; pad < 3; pad++)
            for (int align = 0; align < 2; align++) {
                T t;
                t_init(&t);
                double x[12], g[72];
                for (int k = 0; k < 12; k++) x[k] = k + 1;
                for (int a = 0; a < 6; a++)
                    for (int b = 0; b < 6; b++) {
                        g[(a * 6 + b) * 2] = big[a];
                        g[(a * 6 + b) * 2 + 1] = b < 5 ? big[b] : 0.25;
                    }
                R r;
                ASSERT_EQ(run_gs(&t, "gs", 20, mode20[mode], pads[pad], align, INGOT_DTYPE_FLOAT, 4, xd, x,
                                 INGOT_DTYPE_FLOAT, gd, g, NULL, &r),
                          INGOT_OK);
                for (int k = 0; k < 36; k++) {
                    double v = getf(&r.out[0], k);
                    if (pad == ZEROS) {
                        ASSERT_EQ(v, 0); /* every point has a coordinate far outside (or NaN) */
                    } else {
                        if (mode == CUB) /* cubic overshoots, but stays finite */
                            ASSERT(v > -12 && v < 24);
                        else /* a convex combination of X's values */
                            ASSERT(v >= 1 - 1e-9 && v <= 12 + 1e-9);
                        if (mode == NEAR) ASSERT(v == floor(v));
                    }
                }
                r_free(&r);
                t_free(&t);
            }
}

/* threaded runs give the same bytes as serial ones */
TEST(gridsample_threads_match_serial)
{
    struct ig_pool *pool = ig__pool_create(3);
    int64_t xd[4] = {2, 5, 17, 19}, gd[4] = {2, 23, 29, 2};
    int64_t nx = numel_of(4, xd), ng = numel_of(4, gd), ny = 2 * 5 * 23 * 29;
    double *x = malloc(sizeof(double) * (size_t)nx), *g = malloc(sizeof(double) * (size_t)ng);
    for (int64_t i = 0; i < nx; i++) x[i] = drand(-2, 2);
    for (int64_t i = 0; i < ng; i++) g[i] = drand(-1.2, 1.2);
    for (int mode = 0; mode < 3; mode++) {
        T t;
        t_init(&t);
        R r1, r2;
        ASSERT_EQ(run_gs(&t, "gs", 20, mode20[mode], "zeros", 0, INGOT_DTYPE_FLOAT, 4, xd, x, INGOT_DTYPE_FLOAT, gd, g,
                         NULL, &r1),
                  INGOT_OK);
        ASSERT_EQ(run_gs(&t, "gs_p", 20, mode20[mode], "zeros", 0, INGOT_DTYPE_FLOAT, 4, xd, x, INGOT_DTYPE_FLOAT, gd,
                         g, pool, &r2),
                  INGOT_OK);
        ASSERT(!memcmp(r1.out[0].data, r2.out[0].data, sizeof(float) * (size_t)ny));
        r_free(&r1);
        r_free(&r2);
        t_free(&t);
    }
    free(x);
    free(g);
    ig__pool_destroy(pool);
}

TEST(gridsample_infer_symbolic)
{
    T t;
    t_init(&t);
    t_input(&t, "x", INGOT_DTYPE_FLOAT16, 4, (ig_dim[]){S(&t, "batch"), D(3), S(&t, "h"), D(6)});
    t_input(&t, "g", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){S(&t, "batch"), S(&t, "ho"), D(8), D(2)});
    ig_node *n = t_node(&t, "GridSample", 20, "x,g", "y");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[batch,3,ho,8]");
    ASSERT_EQ(V(&t, "y")->dtype, INGOT_DTYPE_FLOAT16);
    /* N concrete on the grid only; 5-D */
    t_input(&t, "x5", INGOT_DTYPE_FLOAT, 5, (ig_dim[]){S(&t, "n"), D(2), D(3), D(4), D(5)});
    t_input(&t, "g5", INGOT_DTYPE_DOUBLE, 5, (ig_dim[]){D(7), D(1), D(2), D(3), D(3)});
    n = t_node(&t, "GridSample", 20, "x5,g5", "y5");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y5"), "[7,2,1,2,3]");
    /* X of unknown rank: the grid decides the rank */
    t_input(&t, "xu", INGOT_DTYPE_FLOAT, -1, NULL);
    t_input(&t, "gu", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){D(2), D(5), D(6), D(2)});
    n = t_node(&t, "GridSample", 20, "xu,gu", "yu");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_EQ(V(&t, "yu")->shape.rank, 4);
    ASSERT_EQ(V(&t, "yu")->shape.d[3].n, 6);
    t_free(&t);
}

/* One GridSample over inputs of the given dtypes and shapes, with one attribute (an INT when val is
 * NULL): inference must fail with status st, naming the node and saying `says`. */
static void gs_error(int opset, ingot_dtype xt, ingot_dtype gt, int xr, const int64_t *xd, int gr, const int64_t *gd,
                     const char *attr, const char *val, ingot_status st, const char *says)
{
    T t;
    t_init(&t);
    ig_dim xdim[7], gdim[7];
    for (int k = 0; k < xr; k++) xdim[k] = D(xd[k]);
    for (int k = 0; k < gr; k++) gdim[k] = D(gd[k]);
    t_input(&t, "x", xt, xr, xdim);
    t_input(&t, "g", gt, gr, gdim);
    ig_node *n = t_node(&t, "GridSample", opset, "x,g", "y");
    n->name = "gs_bad";
    if (attr && val) a_str(n, attr, val);
    if (attr && !val) a_int(n, attr, 2);
    ASSERT_EQ(t_infer(&t, n), st);
    ASSERT_CONTAINS(t.err.msg, "gs_bad");
    ASSERT_CONTAINS(t.err.msg, says);
    t_free(&t);
}

/* bad inputs fail with the node's name and the problem */
TEST(gridsample_errors)
{
    const ingot_dtype f = INGOT_DTYPE_FLOAT;
    const ingot_status unsup = INGOT_ERR_MODEL_UNSUPPORTED_OP, shape = INGOT_ERR_MODEL_SHAPE;
    const int64_t x4[4] = {1, 1, 2, 2}, g4[4] = {1, 1, 1, 2};
    gs_error(20, INGOT_DTYPE_INT32, f, 4, x4, 4, g4, NULL, NULL, unsup, "int32");
    gs_error(20, f, INGOT_DTYPE_INT64, 4, x4, 4, g4, NULL, NULL, unsup, "int64");
    gs_error(20, f, f, 4, x4, 4, (int64_t[]){1, 1, 1, 3}, NULL, NULL, shape, "grid must be");
    gs_error(20, f, f, 4, x4, 5, (int64_t[]){1, 1, 1, 1, 2}, NULL, NULL, shape, "grid must be");
    gs_error(20, f, f, 4, (int64_t[]){2, 1, 2, 2}, 4, (int64_t[]){3, 1, 1, 2}, NULL, NULL, shape, "grid must be");
    gs_error(20, f, f, 4, (int64_t[]){1, 1, 0, 2}, 4, g4, NULL, NULL, shape, "empty spatial axis");
    gs_error(20, f, f, 2, (int64_t[]){1, 1}, 2, (int64_t[]){1, 0}, NULL, NULL, shape, "at least one spatial axis");
    gs_error(16, f, f, 5, (int64_t[]){1, 1, 2, 2, 2}, 5, (int64_t[]){1, 1, 1, 1, 3}, NULL, NULL, shape,
             "GridSample-16 takes a 4-D");
    gs_error(20, f, f, 7, (int64_t[]){1, 1, 2, 2, 2, 2, 2}, 7, (int64_t[]){1, 1, 1, 1, 1, 1, 5}, "mode", "cubic", unsup,
             "at most 4");
    gs_error(20, f, f, 4, x4, 4, g4, "padding_mode", "wrap", unsup, "'wrap'");
    gs_error(20, f, f, 4, x4, 4, g4, "mode", "area", unsup, "'area'");
    gs_error(20, f, f, 4, x4, 4, g4, "align_corners", NULL, INGOT_ERR_MODEL_INVALID, "align_corners");
}

/* symbolic N that differ at run time: the kernel refuses instead of reading past X */
TEST(gridsample_run_shape_mismatch)
{
    T t;
    t_init(&t);
    double x[8] = {0}, g[4] = {0};
    int64_t xd[4] = {2, 1, 2, 2}, gd[4] = {1, 1, 2, 2};
    t_vals(&t, "x", INGOT_DTYPE_FLOAT, 4, xd, x);
    t_vals(&t, "g", INGOT_DTYPE_FLOAT, 4, gd, g);
    ig_node *n = t_node(&t, "GridSample", 20, "x,g", "y");
    n->name = "gs_run";
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE); /* caught at build when concrete */
    /* the kernel alone, with shapes as if inference had not known them */
    ig_tensor tx, tg, ty;
    ig__tensor_set_shape(&tx, INGOT_DTYPE_FLOAT, 4, xd);
    ig__tensor_set_shape(&tg, INGOT_DTYPE_FLOAT, 4, gd);
    ig__tensor_set_shape(&ty, INGOT_DTYPE_FLOAT, 4, (int64_t[]){2, 1, 1, 2});
    float bx[8] = {0}, bg[4] = {0}, by[4];
    tx.data = bx, tg.data = bg, ty.data = by;
    const ig_tensor *in[2] = {&tx, &tg};
    ig_tensor *out[1] = {&ty};
    ig_exec ex = {.g = &t.g, .node = n, .n_in = 2, .n_out = 1, .in = in, .out = out, .err = &t.err};
    ASSERT_EQ(def_of(n)->cpu(&ex), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "gs_run");
    t_free(&t);
}

/* ==== AffineGrid ==== */

/* the spec's grid: theta [N, r, r+1] times (x, y, (z), 1) over positions evenly spaced in [-1, 1] */
static double naive_pos(int64_t i, int64_t n, bool align)
{
    if (n == 1) return align ? -1 : 0;
    double step = align ? 2.0 / (n - 1) : 2.0 / n;
    return (align ? -1 : -1 + step / 2) + i * step;
}

static ingot_status run_ag(T *t, const char *name, ingot_dtype dt, int r, int64_t nb, const int64_t *sp, double *theta,
                           int align, R *res)
{
    char tn[64], sn[64], yn[64];
    snprintf(tn, sizeof tn, "%s_t", name);
    snprintf(sn, sizeof sn, "%s_s", name);
    snprintf(yn, sizeof yn, "%s_y", name);
    int64_t td[3] = {nb, r, r + 1}, size[5] = {nb, 3, 0, 0, 0};
    for (int k = 0; k < r; k++) size[2 + k] = sp[k];
    t_vals(t, tn, dt, 3, td, theta);
    t_i64(t, sn, r + 2, size);
    char ins[160];
    snprintf(ins, sizeof ins, "%s,%s", tn, sn);
    ig_node *n = t_node(t, "AffineGrid", 20, ins, yn);
    n->name = name;
    if (align >= 0) a_int(n, "align_corners", align);
    return t_run(t, n, NULL, res);
}

TEST(affinegrid_hand_values)
{
    /* identity theta, H = 2, W = 3: x in {-2/3, 0, 2/3} (align 0) or {-1, 0, 1}, y in {-1/2, 1/2} or {-1, 1} */
    for (int align = 0; align < 2; align++) {
        T t;
        t_init(&t);
        double theta[6] = {1, 0, 0, 0, 1, 0};
        int64_t sp[2] = {2, 3};
        R r;
        ASSERT_EQ(run_ag(&t, "ag", INGOT_DTYPE_FLOAT, 2, 1, sp, theta, align, &r), INGOT_OK);
        ASSERT_EQ(r.out[0].rank, 4);
        ASSERT_EQ(r.out[0].dims[1], 2);
        ASSERT_EQ(r.out[0].dims[2], 3);
        ASSERT_EQ(r.out[0].dims[3], 2);
        const double xs[2][3] = {{-2.0 / 3, 0, 2.0 / 3}, {-1, 0, 1}}, ys[2][2] = {{-0.5, 0.5}, {-1, 1}};
        for (int h = 0; h < 2; h++)
            for (int w = 0; w < 3; w++) {
                ASSERT_NEAR(getf(&r.out[0], (h * 3 + w) * 2), xs[align][w], 1e-7);
                ASSERT_NEAR(getf(&r.out[0], (h * 3 + w) * 2 + 1), ys[align][h], 1e-7);
            }
        r_free(&r);
        t_free(&t);
    }
    /* a translation and a swap: x' = y + 0.5, y' = 2x */
    T t;
    t_init(&t);
    double theta[6] = {0, 1, 0.5, 2, 0, 0};
    int64_t sp[2] = {1, 2};
    R r;
    ASSERT_EQ(run_ag(&t, "ag", INGOT_DTYPE_FLOAT, 2, 1, sp, theta, 1, &r), INGOT_OK);
    const double want[4] = {-0.5, -2, -0.5, 2}; /* H = 1 with align_corners: y = -1 */
    for (int k = 0; k < 4; k++) ASSERT_NEAR(getf(&r.out[0], k), want[k], 1e-7);
    r_free(&r);
    t_free(&t);
}

TEST(affinegrid_matches_naive)
{
    static const ingot_dtype dts[] = {INGOT_DTYPE_FLOAT, INGOT_DTYPE_DOUBLE, INGOT_DTYPE_FLOAT16, INGOT_DTYPE_BFLOAT16};
    static const double tols[] = {1e-6, 1e-13, 2e-3, 1e-2};
    for (int di = 0; di < 4; di++)
        for (int r = 2; r <= 3; r++)
            for (int align = 0; align < 2; align++) {
                T t;
                t_init(&t);
                const int64_t nb = 2, sp[3] = {3, 1, 4};
                double theta[24];
                for (int k = 0; k < nb * r * (r + 1); k++) theta[k] = drand(-2, 2);
                R res;
                ASSERT_EQ(run_ag(&t, "ag", dts[di], r, nb, sp, theta, align, &res), INGOT_OK);
                ASSERT_EQ(res.out[0].dtype, dts[di]);
                int64_t pts = numel_of(r, sp);
                ASSERT_EQ(res.out[0].numel, nb * pts * r);
                for (int64_t n = 0; n < nb; n++)
                    for (int64_t p = 0; p < pts; p++) {
                        double v[4] = {0, 0, 0, 1};
                        int64_t rem = p;
                        for (int a = r - 1; a >= 0; a--) { /* v[0] is the innermost axis */
                            v[r - 1 - a] = naive_pos(rem % sp[a], sp[a], align);
                            rem /= sp[a];
                        }
                        v[r] = 1;
                        for (int o = 0; o < r; o++) {
                            double s = 0;
                            for (int j = 0; j <= r; j++) s += theta[(n * r + o) * (r + 1) + j] * v[j];
                            ASSERT_NEAR(getf(&res.out[0], (n * pts + p) * r + o), s, tols[di] * (1 + fabs(s)));
                        }
                    }
                r_free(&res);
                t_free(&t);
            }
}

TEST(affinegrid_infer_symbolic)
{
    T t;
    t_init(&t);
    /* size unknown at build: N from theta, spatial dims fresh, rank from theta */
    t_input(&t, "th", INGOT_DTYPE_FLOAT, 3, (ig_dim[]){S(&t, "batch"), D(3), D(4)});
    t_input(&t, "sz", INGOT_DTYPE_INT64, 1, (ig_dim[]){D(5)});
    ig_node *n = t_node(&t, "AffineGrid", 20, "th,sz", "y");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    const ig_value *y = V(&t, "y");
    ASSERT_EQ(y->shape.rank, 5);
    ASSERT_CONTAINS(shp(&t, "y"), "[batch,");
    ASSERT_EQ(y->shape.d[4].n, 3);
    ASSERT(!ig__dim_known(y->shape.d[1]));
    /* size constant: its values decide */
    int64_t sv[4] = {4, 1, 5, 6};
    t_i64(&t, "szc", 4, sv);
    t_input(&t, "th2", INGOT_DTYPE_FLOAT16, 3, (ig_dim[]){S(&t, "batch"), D(2), D(3)});
    n = t_node(&t, "AffineGrid", 20, "th2,szc", "y2");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y2"), "[4,5,6,2]");
    ASSERT_EQ(V(&t, "y2")->dtype, INGOT_DTYPE_FLOAT16);
    t_free(&t);
}

TEST(affinegrid_errors)
{
    static const struct {
        ingot_dtype tt;
        int64_t td[3];
        int n_size;
        int64_t size[6];
        int align;
        ingot_status st;
        const char *says;
    } cases[] = {
        {INGOT_DTYPE_INT32, {1, 2, 3}, 4, {1, 1, 2, 2}, 0, INGOT_ERR_MODEL_UNSUPPORTED_OP, "int32"},
        {INGOT_DTYPE_FLOAT, {1, 2, 4}, 4, {1, 1, 2, 2}, 0, INGOT_ERR_MODEL_SHAPE, "[N, 2, 3]"},
        {INGOT_DTYPE_FLOAT, {1, 4, 5}, 6, {1, 1, 2, 2, 2, 2}, 0, INGOT_ERR_MODEL_SHAPE, "[N, 3, 4]"},
        {INGOT_DTYPE_FLOAT, {1, 2, 3}, 5, {1, 1, 2, 2, 2}, 0, INGOT_ERR_MODEL_SHAPE, "4 (N, C, H, W)"},
        {INGOT_DTYPE_FLOAT, {1, 3, 4}, 4, {1, 1, 2, 2}, 0, INGOT_ERR_MODEL_SHAPE, "5 (N, C, D, H, W)"},
        {INGOT_DTYPE_FLOAT, {1, 2, 3}, 4, {1, 1, -2, 2}, 0, INGOT_ERR_MODEL_SHAPE, "negative"},
        {INGOT_DTYPE_FLOAT, {2, 2, 3}, 4, {3, 1, 2, 2}, 0, INGOT_ERR_MODEL_SHAPE, "theta holds 2"},
        {INGOT_DTYPE_FLOAT, {1, 2, 3}, 4, {1, 1, 2, 2}, 3, INGOT_ERR_MODEL_INVALID, "align_corners"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        T t;
        t_init(&t);
        t_input(&t, "th", cases[i].tt, 3, (ig_dim[]){D(cases[i].td[0]), D(cases[i].td[1]), D(cases[i].td[2])});
        t_i64(&t, "sz", cases[i].n_size, cases[i].size);
        ig_node *n = t_node(&t, "AffineGrid", 20, "th,sz", "y");
        n->name = "ag_bad";
        if (cases[i].align) a_int(n, "align_corners", cases[i].align);
        ingot_status st = t_infer(&t, n);
        if (st != cases[i].st) fprintf(stderr, "  case %zu: %s\n", i, t.err.msg);
        ASSERT_EQ(st, cases[i].st);
        ASSERT_CONTAINS(t.err.msg, "ag_bad");
        ASSERT_CONTAINS(t.err.msg, cases[i].says);
        t_free(&t);
    }
}

TEST(sample_flops)
{
    T t;
    t_init(&t);
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){D(2), D(3), D(8), D(8)});
    t_input(&t, "g", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){D(2), D(4), D(5), D(2)});
    const char *modes[3] = {"linear", "nearest", "cubic"};
    const double want[3] = {2.0 * 4 * 120, 0, 2.0 * 16 * 120}; /* 120 outputs; 2 per tap */
    for (int m = 0; m < 3; m++) {
        char yn[8];
        snprintf(yn, sizeof yn, "y%d", m);
        ig_node *n = t_node(&t, "GridSample", 20, "x,g", yn);
        a_str(n, "mode", modes[m]);
        ASSERT_EQ(t_infer(&t, n), INGOT_OK);
        ASSERT_NEAR(def_of(n)->flops(&t.g, n), want[m], 0.5);
    }
    int64_t sv[5] = {2, 1, 3, 4, 5};
    t_input(&t, "th", INGOT_DTYPE_FLOAT, 3, (ig_dim[]){D(2), D(3), D(4)});
    t_i64(&t, "sz", 5, sv);
    ig_node *n = t_node(&t, "AffineGrid", 20, "th,sz", "ya");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_NEAR(def_of(n)->flops(&t.g, n), 2.0 * 3 * (2 * 60 * 3), 0.5);
    t_free(&t);
}

TEST_MAIN(RUN(gridsample_hand_values); RUN(gridsample_nearest_ties_to_even); RUN(gridsample_reflection_far_out);
          RUN(gridsample_matches_naive); RUN(gridsample_opset16_names); RUN(gridsample_dtypes);
          RUN(gridsample_hostile_grid); RUN(gridsample_threads_match_serial); RUN(gridsample_infer_symbolic);
          RUN(gridsample_errors); RUN(gridsample_run_shape_mismatch); RUN(affinegrid_hand_values);
          RUN(affinegrid_matches_naive); RUN(affinegrid_infer_symbolic); RUN(affinegrid_errors); RUN(sample_flops))
