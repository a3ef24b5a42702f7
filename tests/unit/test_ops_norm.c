/*
 * test_ops_norm.c -- the norm, reduce and resize op families (src/ops/norm.c, reduce.c, resize.c;
 * Hardmax and TopK live in reduce.c beside ArgMax):
 * CPU kernels against hand-computed values and naive references (index arithmetic in double),
 * type/shape inference with a symbolic batch, opset differences, error messages, FLOPs, and
 * threaded runs matching serial ones.
 */
#include "ops/op.h"
#include "test.h"

#include "graph_builder.h"

static double getf(const ig_tensor *te, int64_t k) { return ig__elem_f64(te->dtype, te->data, k); }
static int64_t geti(const ig_tensor *te, int64_t k) { return ig__elem_i64(te->dtype, te->data, k); }

/* deterministic pseudo-random floats in [-2, 2) */
static uint64_t rng_state = 88172645463325252ull;
static float frand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 4 - 2);
}
static void fill_rand(float *p, int64_t n)
{
    for (int64_t i = 0; i < n; i++) p[i] = frand();
}

static int64_t numel_of(int rank, const int64_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= d[i];
    return n;
}

/* ==== Softmax / LogSoftmax ==== */

TEST(softmax_hand_values)
{
    T t;
    t_init(&t);
    int64_t d[2] = {2, 3};
    float x[6] = {1, 2, 3, 1, 1, 1};
    t_f32(&t, "x", 2, d, x);
    ig_node *n = t_node(&t, "Softmax", 13, "x", "y");
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    const double want[6] = {0.09003057, 0.24472847, 0.66524096, 1.0 / 3, 1.0 / 3, 1.0 / 3};
    for (int i = 0; i < 6; i++) ASSERT_NEAR(getf(&r.out[0], i), want[i], 1e-6);
    r_free(&r);
    /* LogSoftmax of large numbers stays finite (max subtraction) */
    float big[3] = {1000, 1001, 1002};
    int64_t d3 = 3;
    t_f32(&t, "b", 1, &d3, big);
    n = t_node(&t, "LogSoftmax", 13, "b", "lb");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    const double lw[3] = {-2.40760596, -1.40760596, -0.40760596};
    for (int i = 0; i < 3; i++) ASSERT_NEAR(getf(&r.out[0], i), lw[i], 1e-5);
    r_free(&r);
    t_free(&t);
}

/* naive softmax of x over rows of length n with stride `inner` */
static void naive_softmax(const float *x, double *y, int64_t outer, int64_t n, int64_t inner, bool is_log)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double m = -INFINITY, s = 0;
            for (int64_t j = 0; j < n; j++) m = fmax(m, x[(o * n + j) * inner + i]);
            for (int64_t j = 0; j < n; j++) s += exp(x[(o * n + j) * inner + i] - m);
            for (int64_t j = 0; j < n; j++) {
                double v = x[(o * n + j) * inner + i] - m;
                y[(o * n + j) * inner + i] = is_log ? v - log(s) : exp(v) / s;
            }
        }
}

/* opset < 13 flattens to 2-D at axis; opset 13 normalises along the axis alone (strided) */
TEST(softmax_opset_semantics)
{
    static const int64_t shapes[][3] = {{2, 3, 4}, {3, 5, 70}, {2, 4, 150}};
    for (int s = 0; s < 3; s++)
        for (int opset = 11; opset <= 13; opset += 2)
            for (int lg = 0; lg < 2; lg++) {
                T t;
                t_init(&t);
                const int64_t *d = shapes[s];
                int64_t n = numel_of(3, d);
                float *x = malloc(sizeof(float) * (size_t)n);
                double *want = malloc(sizeof(double) * (size_t)n);
                fill_rand(x, n);
                t_f32(&t, "x", 3, d, x);
                ig_node *nd = t_node(&t, lg ? "LogSoftmax" : "Softmax", opset, "x", "y");
                a_int(nd, "axis", 1);
                if (opset < 13)
                    naive_softmax(x, want, d[0], d[1] * d[2], 1, lg);
                else
                    naive_softmax(x, want, d[0], d[1], d[2], lg);
                R r;
                ASSERT_EQ(t_run(&t, nd, NULL, &r), INGOT_OK);
                for (int64_t i = 0; i < n; i++) ASSERT_NEAR(getf(&r.out[0], i), want[i], 2e-6);
                r_free(&r);
                free(x);
                free(want);
                t_free(&t);
            }
}

TEST(softmax_default_axis_by_opset)
{
    /* default axis: 1 before opset 13, -1 from 13; on [2,2,2] the two differ */
    float x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int64_t d[3] = {2, 2, 2};
    double w11[8], w13[8];
    naive_softmax(x, w11, 2, 4, 1, false);
    naive_softmax(x, w13, 4, 2, 1, false);
    for (int opset = 11; opset <= 13; opset += 2) {
        T t;
        t_init(&t);
        t_f32(&t, "x", 3, d, x);
        ig_node *n = t_node(&t, "Softmax", opset, "x", "y");
        R r;
        ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
        for (int i = 0; i < 8; i++) ASSERT_NEAR(getf(&r.out[0], i), opset == 11 ? w11[i] : w13[i], 1e-6);
        r_free(&r);
        t_free(&t);
    }
}

TEST(softmax_fp16_and_double)
{
    T t;
    t_init(&t);
    int64_t d[2] = {3, 33};
    float xf[99];
    uint16_t xh[99];
    double xd[99], want[99];
    fill_rand(xf, 99);
    for (int i = 0; i < 99; i++) {
        xh[i] = ig__f32_to_f16(xf[i]);
        xf[i] = ig__f16_to_f32(xh[i]);
        xd[i] = xf[i];
    }
    naive_softmax(xf, want, 3, 33, 1, false);
    t_const(&t, "h", INGOT_DTYPE_FLOAT16, 2, d, xh);
    t_const(&t, "dd", INGOT_DTYPE_DOUBLE, 2, d, xd);
    ig_node *n = t_node(&t, "Softmax", 13, "h", "yh");
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(V(&t, "yh")->dtype, INGOT_DTYPE_FLOAT16);
    for (int i = 0; i < 99; i++) ASSERT_NEAR(getf(&r.out[0], i), want[i], 1e-3 * want[i] + 1e-6);
    r_free(&r);
    n = t_node(&t, "Softmax", 13, "dd", "yd");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    for (int i = 0; i < 99; i++) ASSERT_NEAR(getf(&r.out[0], i), want[i], 1e-14);
    r_free(&r);
    t_free(&t);
}

TEST(softmax_infer_and_errors)
{
    T t;
    t_init(&t);
    ig_dim xd[3] = {S(&t, "batch"), S(&t, "seq"), D(64)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 3, xd);
    ig_node *n = t_node(&t, "Softmax", 13, "x", "y");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[batch,seq,64]");
    n = t_node(&t, "Softmax", 13, "x", "y2");
    a_int(n, "axis", 3);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "node 'Softmax' (Softmax): attribute 'axis' 3 is out of range for rank 3");
    ig_dim id[1] = {D(4)};
    t_input(&t, "i", INGOT_DTYPE_INT32, 1, id);
    n = t_node(&t, "LogSoftmax", 13, "i", "y3");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "input 0 'i' has dtype int32, which this op does not support");
    t_free(&t);
}

/* ==== LayerNormalization ==== */

TEST(layernorm_random_with_stats)
{
    static const int64_t d[3] = {2, 3, 8};
    for (int axis = -1; axis >= -2; axis--) {
        T t;
        t_init(&t);
        int a = 3 + axis;
        int64_t rows = a == 2 ? 6 : 2, len = a == 2 ? 8 : 24;
        float x[48], sc[24], b[24];
        fill_rand(x, 48);
        for (int i = 0; i < 48; i++) x[i] = x[i] * 3 + 7; /* a large mean against the spread */
        fill_rand(sc, len);
        fill_rand(b, len);
        t_f32(&t, "x", 3, d, x);
        t_f32(&t, "s", 3 - a, d + a, sc);
        t_f32(&t, "b", 3 - a, d + a, b);
        ig_node *n = t_node(&t, "LayerNormalization", 17, "x,s,b", "y,mean,inv");
        a_int(n, "axis", axis);
        a_float(n, "epsilon", 1e-3f);
        R r;
        ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
        ASSERT_STREQ(shp(&t, "mean"), a == 2 ? "[2,3,1]" : "[2,1,1]");
        for (int64_t row = 0; row < rows; row++) {
            double m = 0, v = 0;
            for (int64_t j = 0; j < len; j++) m += x[row * len + j];
            m /= (double)len;
            for (int64_t j = 0; j < len; j++) v += (x[row * len + j] - m) * (x[row * len + j] - m);
            v /= (double)len;
            double inv = 1 / sqrt(v + 1e-3);
            ASSERT_NEAR(getf(&r.out[1], row), m, 1e-5);
            ASSERT_NEAR(getf(&r.out[2], row), inv, 1e-5);
            for (int64_t j = 0; j < len; j++)
                ASSERT_NEAR(getf(&r.out[0], row * len + j), (x[row * len + j] - m) * inv * sc[j] + b[j], 2e-5);
        }
        r_free(&r);
        t_free(&t);
    }
}

TEST(layernorm_infer)
{
    T t;
    t_init(&t);
    ig_dim xd[3] = {S(&t, "batch"), S(&t, "seq"), D(16)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT16, 3, xd);
    ig_dim sd[1] = {D(16)};
    t_input(&t, "s", INGOT_DTYPE_FLOAT16, 1, sd);
    ig_node *n = t_node(&t, "LayerNormalization", 17, "x,s", "y,m,iv");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[batch,seq,16]");
    ASSERT_EQ(V(&t, "y")->dtype, INGOT_DTYPE_FLOAT16);
    ASSERT_STREQ(shp(&t, "m"), "[batch,seq,1]");
    ASSERT_EQ(V(&t, "m")->dtype, INGOT_DTYPE_FLOAT); /* stash_type 1 */
    n = t_node(&t, "LayerNormalization", 17, "x,s", "y2");
    a_int(n, "stash_type", 11);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "attribute 'stash_type' = 11 is not supported");
    ig_dim bd[1] = {D(8)};
    t_input(&t, "bad", INGOT_DTYPE_FLOAT16, 1, bd);
    n = t_node(&t, "LayerNormalization", 17, "x,bad", "y3");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "input 1 'bad' has shape [8], which does not broadcast to the normalised dims");
    t_free(&t);
}

TEST(layernorm_broadcast_scale)
{
    T t;
    t_init(&t);
    int64_t d[3] = {2, 3, 4}, sd[2] = {1, 4}, bd = 1;
    float x[24], sc[4] = {1, 2, 3, 4}, b = 0.5f;
    fill_rand(x, 24);
    t_f32(&t, "x", 3, d, x);
    t_f32(&t, "s", 2, sd, sc);
    t_f32(&t, "b", 1, &bd, &b);
    ig_node *n = t_node(&t, "LayerNormalization", 17, "x,s,b", "y");
    a_int(n, "axis", 1);
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    for (int row = 0; row < 2; row++) {
        double m = 0, v = 0;
        for (int j = 0; j < 12; j++) m += x[row * 12 + j];
        m /= 12;
        for (int j = 0; j < 12; j++) v += (x[row * 12 + j] - m) * (x[row * 12 + j] - m);
        double inv = 1 / sqrt(v / 12 + 1e-5);
        for (int j = 0; j < 12; j++)
            ASSERT_NEAR(getf(&r.out[0], row * 12 + j), (x[row * 12 + j] - m) * inv * sc[j % 4] + 0.5, 1e-5);
    }
    r_free(&r);
    t_free(&t);
}

/* ==== InstanceNormalization, BatchNormalization ==== */

TEST(instancenorm_random)
{
    T t;
    t_init(&t);
    int64_t d[4] = {2, 3, 4, 5}, c = 3;
    float x[120], sc[3] = {0.5f, -1, 2}, b[3] = {0, 1, -2};
    fill_rand(x, 120);
    t_f32(&t, "x", 4, d, x);
    t_f32(&t, "s", 1, &c, sc);
    t_f32(&t, "b", 1, &c, b);
    ig_node *n = t_node(&t, "InstanceNormalization", 6, "x,s,b", "y");
    a_float(n, "epsilon", 1e-2f);
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    for (int row = 0; row < 6; row++) {
        double m = 0, v = 0;
        for (int j = 0; j < 20; j++) m += x[row * 20 + j];
        m /= 20;
        for (int j = 0; j < 20; j++) v += (x[row * 20 + j] - m) * (x[row * 20 + j] - m);
        double inv = 1 / sqrt(v / 20 + 1e-2);
        for (int j = 0; j < 20; j++)
            ASSERT_NEAR(getf(&r.out[0], row * 20 + j), (x[row * 20 + j] - m) * inv * sc[row % 3] + b[row % 3], 1e-5);
    }
    r_free(&r);
    int64_t c4 = 4;
    t_f32(&t, "s4", 1, &c4, x);
    n = t_node(&t, "InstanceNormalization", 6, "x,s4,b", "y2");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "input 1 's4' (scale) has shape [4], expected [3]");
    t_free(&t);
}

static void bn_reference(const float *x, const float *p, int64_t n, int64_t c, int64_t len, bool per_act, double eps,
                         double *y)
{
    /* p: scale, B, mean, var, each of c (or c*len) entries */
    int64_t np = per_act ? c * len : c;
    for (int64_t i = 0; i < n * c * len; i++) {
        int64_t ch = (i / len) % c, k = per_act ? ch * len + i % len : ch;
        y[i] = (x[i] - p[2 * np + k]) / sqrt(p[3 * np + k] + eps) * p[k] + p[np + k];
    }
}

TEST(batchnorm_opsets)
{
    int64_t d[4] = {2, 3, 2, 5}, c = 3, pd[3] = {3, 2, 5};
    float x[60], p[4 * 30];
    fill_rand(x, 60);
    fill_rand(p, 4 * 30);
    for (int opset = 7; opset <= 15; opset += 8) /* 7: spatial attribute exists; 15: split T/T1/T2 */
        for (int spatial = 1; spatial >= (opset < 9 ? 0 : 1); spatial--) {
            T t;
            t_init(&t);
            int64_t np = spatial ? 3 : 30;
            float pp[4 * 30];
            memcpy(pp, p, sizeof pp);
            for (int64_t k = 0; k < np; k++) pp[3 * np + k] = fabsf(pp[3 * np + k]) + 0.1f; /* variance > 0 */
            t_f32(&t, "x", 4, d, x);
            const char *names[4] = {"s", "b", "m", "v"};
            for (int i = 0; i < 4; i++) {
                if (spatial)
                    t_f32(&t, names[i], 1, &c, pp + i * np);
                else
                    t_f32(&t, names[i], 3, pd, pp + i * np);
            }
            ig_node *n = t_node(&t, "BatchNormalization", opset, "x,s,b,m,v", "y");
            a_float(n, "epsilon", 1e-3f);
            if (opset < 9) a_int(n, "spatial", spatial);
            R r;
            ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
            double want[60];
            bn_reference(x, pp, 2, 3, 10, !spatial, 1e-3, want);
            for (int i = 0; i < 60; i++) ASSERT_NEAR(getf(&r.out[0], i), want[i], 1e-4 * fabs(want[i]) + 1e-5);
            r_free(&r);
            t_free(&t);
        }
}

TEST(batchnorm_infer_and_errors)
{
    T t;
    t_init(&t);
    ig_dim xd[4] = {S(&t, "batch"), D(3), S(&t, "h"), S(&t, "w")}, pd[1] = {D(3)}, bad[1] = {D(4)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 4, xd);
    const char *names[4] = {"s", "b", "m", "v"};
    for (int i = 0; i < 4; i++) t_input(&t, names[i], INGOT_DTYPE_FLOAT, 1, pd);
    t_input(&t, "v4", INGOT_DTYPE_FLOAT, 1, bad);
    ig_node *n = t_node(&t, "BatchNormalization", 15, "x,s,b,m,v", "y");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[batch,3,h,w]");
    n = t_node(&t, "BatchNormalization", 15, "x,s,b,m,v", "y2");
    a_int(n, "training_mode", 1); /* the batch's own statistics (norm_more.c): Y keeps x's shape */
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y2"), "[batch,3,h,w]");
    n = t_node(&t, "BatchNormalization", 9, "x,s,b,m,v", "y3,rm,rv");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "output 1 'rm' (running or saved statistics) is only produced in training mode");
    n = t_node(&t, "BatchNormalization", 9, "x,s,b,m,v4", "y4");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "input 4 'v4' (var) has shape [4], expected [3]");
    /* opset 6: is_test=0 with only Y is inference too; training_mode does not exist before 14 */
    n = t_node(&t, "BatchNormalization", 6, "x,s,b,m,v", "y5");
    a_int(n, "is_test", 0);
    a_int(n, "training_mode", 1);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    t_free(&t);
}

/* ==== reductions ==== */

/* naive reduction of x (float) over mask with keepdims layout handled by the caller: out index from the
 * kept coordinates in order */
static void naive_reduce(const float *x, int rank, const int64_t *d, const bool *mask, int kind, double *out,
                         int64_t *n_out)
{
    int64_t on = 1;
    for (int k = 0; k < rank; k++)
        if (!mask[k]) on *= d[k];
    double *acc = calloc((size_t)on, sizeof(double));
    int64_t *cnt = calloc((size_t)on, sizeof(int64_t));
    for (int64_t o = 0; o < on; o++) acc[o] = kind == 2 ? -INFINITY : kind == 3 ? INFINITY : 0;
    int64_t total = numel_of(rank, d), idx[8] = {0};
    for (int64_t i = 0; i < total; i++) {
        int64_t o = 0;
        for (int k = 0; k < rank; k++)
            if (!mask[k]) o = o * d[k] + idx[k];
        double v = x[i];
        if (kind <= 1)
            acc[o] += v;
        else if (kind == 2)
            acc[o] = fmax(acc[o], v);
        else
            acc[o] = fmin(acc[o], v);
        cnt[o]++;
        for (int k = rank - 1; k >= 0; k--) {
            if (++idx[k] < d[k]) break;
            idx[k] = 0;
        }
    }
    for (int64_t o = 0; o < on; o++) out[o] = kind == 1 ? acc[o] / (double)cnt[o] : acc[o];
    *n_out = on;
    free(acc);
    free(cnt);
}

/* every subset of axes of a rank-4 tensor, every kind, both keepdims, attribute (opset 13) and input
 * (opset 18) forms */
TEST(reduce_all_axis_subsets)
{
    static const char *const ops[4] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"};
    int64_t d[4] = {3, 4, 5, 2};
    float x[120];
    fill_rand(x, 120);
    for (int kind = 0; kind < 4; kind++)
        for (int m = 0; m < 16; m++)
            for (int keep = 0; keep < 2; keep++) {
                T t;
                t_init(&t);
                t_f32(&t, "x", 4, d, x);
                int64_t axes[4];
                int na = 0;
                bool mask[4];
                for (int k = 0; k < 4; k++) {
                    mask[k] = (m >> k) & 1;
                    if (mask[k]) axes[na++] = (k % 2) ? k - 4 : k; /* mix negative axes in */
                }
                if (!na)
                    for (int k = 0; k < 4; k++) mask[k] = true; /* empty axes: all */
                int opset = (m + keep) % 2 ? 18 : 11;
                ig_node *n;
                if (opset >= 18 || (kind == 0 && opset >= 13)) {
                    if (na) t_i64(&t, "a", na, axes);
                    n = t_node(&t, ops[kind], opset, na ? "x,a" : "x", "y");
                } else {
                    n = t_node(&t, ops[kind], opset, "x", "y");
                    if (na) a_ints(&t, n, "axes", na, axes);
                }
                a_int(n, "keepdims", keep);
                R r;
                ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
                double want[120];
                int64_t on;
                naive_reduce(x, 4, d, mask, kind, want, &on);
                ASSERT_EQ(r.out[0].numel, on);
                ASSERT_EQ(r.out[0].rank, keep ? 4 : 4 - (na ? na : 4));
                for (int64_t o = 0; o < on; o++) ASSERT_NEAR(getf(&r.out[0], o), want[o], 2e-6);
                r_free(&r);
                t_free(&t);
            }
}

TEST(reduce_integers_exact)
{
    T t;
    t_init(&t);
    R r;
    /* int64 beyond double precision, and wrapping in the middle of the sum */
    int64_t big[4] = {(1ll << 60) + 1, 2, INT64_MAX, 1}, d4 = 4;
    t_const(&t, "big", INGOT_DTYPE_INT64, 1, &d4, big);
    ig_node *n = t_node(&t, "ReduceSum", 11, "big", "s");
    a_int(n, "keepdims", 0);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(r.out[0].rank, 0);
    ASSERT_EQ(geti(&r.out[0], 0), (int64_t)((1ull << 60) + 3 + (uint64_t)INT64_MAX + 1));
    r_free(&r);
    /* int32 wraps like the type: 4 * 2^30 = 2^32 -> 0 */
    int32_t w[4] = {1 << 30, 1 << 30, 1 << 30, 1 << 30};
    t_const(&t, "w", INGOT_DTYPE_INT32, 1, &d4, w);
    n = t_node(&t, "ReduceSum", 11, "w", "ws");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(geti(&r.out[0], 0), 0);
    r_free(&r);
    /* integer mean truncates toward zero: mean(-3, -4) = -3, mean(5, 6) = 5 */
    int32_t mv[4] = {-3, -4, 5, 6};
    int64_t md[2] = {2, 2};
    t_const(&t, "mv", INGOT_DTYPE_INT32, 2, md, mv);
    n = t_node(&t, "ReduceMean", 13, "mv", "mm");
    int64_t ax1 = 1;
    a_ints(&t, n, "axes", 1, &ax1);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(geti(&r.out[0], 0), -3);
    ASSERT_EQ(geti(&r.out[0], 1), 5);
    r_free(&r);
    /* uint8 max/min compare unsigned */
    uint8_t u[4] = {200, 3, 255, 0};
    t_const(&t, "u", INGOT_DTYPE_UINT8, 1, &d4, u);
    n = t_node(&t, "ReduceMax", 13, "u", "umax");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(geti(&r.out[0], 0), 255);
    r_free(&r);
    n = t_node(&t, "ReduceMin", 13, "u", "umin");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(geti(&r.out[0], 0), 0);
    r_free(&r);
    t_free(&t);
}

TEST(reduce_empty_and_noop)
{
    T t;
    t_init(&t);
    R r;
    int64_t d[3] = {2, 0, 3}, ax = 1;
    float dummy = 0;
    t_f32(&t, "e", 3, d, &dummy);
    t_i64(&t, "a1", 1, &ax);
    static const char *const ops[4] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"};
    const double want[4] = {0, NAN, -INFINITY, INFINITY};
    for (int k = 0; k < 4; k++) {
        char out[16];
        snprintf(out, sizeof out, "o%d", k);
        ig_node *n = t_node(&t, ops[k], 18, "e,a1", out);
        ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
        ASSERT_STREQ(shp(&t, out), "[2,1,3]");
        for (int i = 0; i < 6; i++) {
            double v = getf(&r.out[0], i);
            if (isnan(want[k]))
                ASSERT(isnan(v));
            else
                ASSERT_EQ(v, want[k]);
        }
        r_free(&r);
    }
    int32_t di = 0;
    t_const(&t, "ei", INGOT_DTYPE_INT32, 3, d, &di);
    ig_node *n = t_node(&t, "ReduceMax", 18, "ei,a1", "omi");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(geti(&r.out[0], 0), INT32_MIN);
    r_free(&r);
    /* noop_with_empty_axes: an empty axes input copies the input */
    int64_t xd[2] = {2, 2};
    float x[4] = {1, 2, 3, 4};
    t_f32(&t, "x", 2, xd, x);
    t_const(&t, "none", INGOT_DTYPE_INT64, 1, (int64_t[]){0}, NULL);
    n = t_node(&t, "ReduceSum", 13, "x,none", "noop");
    a_int(n, "noop_with_empty_axes", 1);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "noop"), "[2,2]");
    for (int i = 0; i < 4; i++) ASSERT_EQ(getf(&r.out[0], i), x[i]);
    r_free(&r);
    n = t_node(&t, "ReduceSum", 13, "x,none", "all");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "all"), "[1,1]");
    ASSERT_EQ(getf(&r.out[0], 0), 10);
    r_free(&r);
    t_free(&t);
}

TEST(reduce_infer_symbolic_and_errors)
{
    T t;
    t_init(&t);
    ig_dim xd[3] = {S(&t, "batch"), S(&t, "seq"), D(768)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 3, xd);
    int64_t m1 = -1, dup[2] = {1, -2}, far = 3;
    t_i64(&t, "am1", 1, &m1);
    t_i64(&t, "dup", 2, dup);
    ig_node *n = t_node(&t, "ReduceMean", 18, "x,am1", "y");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[batch,seq,1]");
    n = t_node(&t, "ReduceMean", 13, "x", "y2");
    a_ints(&t, n, "axes", 1, &m1);
    a_int(n, "keepdims", 0);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y2"), "[batch,seq]");
    /* axes only known at run time: the rank survives with keepdims, or when their count is known */
    ig_dim ad[1] = {D(1)}, aq[1] = {S(&t, "n")};
    t_input(&t, "rt", INGOT_DTYPE_INT64, 1, ad);
    t_input(&t, "rq", INGOT_DTYPE_INT64, 1, aq);
    n = t_node(&t, "ReduceSum", 13, "x,rt", "y3");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_EQ(V(&t, "y3")->shape.rank, 3);
    ASSERT(!ig__dim_known(V(&t, "y3")->shape.d[0]));
    n = t_node(&t, "ReduceSum", 13, "x,rt", "y4");
    a_int(n, "keepdims", 0);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_EQ(V(&t, "y4")->shape.rank, 2);
    n = t_node(&t, "ReduceSum", 13, "x,rq", "y5");
    a_int(n, "keepdims", 0);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "input 'rq' must be known when the engine is built");
    /* opset differences */
    n = t_node(&t, "ReduceMean", 13, "x,am1", "e1");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_INVALID);
    ASSERT_CONTAINS(t.err.msg, "axes as an input needs opset 18 or later (the model imports opset 13)");
    n = t_node(&t, "ReduceSum", 13, "x", "e2");
    a_ints(&t, n, "axes", 1, &m1);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_INVALID);
    ASSERT_CONTAINS(t.err.msg,
                    "attribute 'axes' is not valid in opset 13: since opset 13 the axes are the second input");
    n = t_node(&t, "ReduceMax", 18, "x,dup", "e3");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "axis -2 appears more than once in 'axes'");
    n = t_node(&t, "ReduceMin", 11, "x", "e4");
    a_ints(&t, n, "axes", 1, &far);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "axis in 'axes' 3 is out of range for rank 3");
    ig_dim bd[1] = {D(4)};
    t_input(&t, "bb", INGOT_DTYPE_BOOL, 1, bd);
    n = t_node(&t, "ReduceSum", 13, "bb", "e5");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "dtype bool");
    n = t_node(&t, "ReduceMax", 20, "bb", "ok");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    t_free(&t);
}

/* ==== ArgMax ==== */

TEST(argmax_ties_nan_opsets)
{
    T t;
    t_init(&t);
    R r;
    int64_t d[2] = {2, 4};
    float x[8] = {1, 3, 3, 0, 2, NAN, 5, NAN};
    t_f32(&t, "x", 2, d, x);
    for (int opset = 11; opset <= 12; opset++)
        for (int last = 0; last < 2; last++) {
            char out[16];
            snprintf(out, sizeof out, "y%d%d", opset, last);
            ig_node *n = t_node(&t, "ArgMax", opset, "x", out);
            a_int(n, "axis", -1);
            a_int(n, "select_last_index", last);
            ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
            ASSERT_EQ(V(&t, out)->dtype, INGOT_DTYPE_INT64);
            ASSERT_STREQ(shp(&t, out), "[2,1]");
            bool l = last && opset >= 12; /* select_last_index exists from opset 12 */
            ASSERT_EQ(geti(&r.out[0], 0), l ? 2 : 1);
            ASSERT_EQ(geti(&r.out[0], 1), l ? 3 : 1); /* NaN is the largest, as in numpy */
            r_free(&r);
        }
    int32_t xi[6] = {-5, 7, 7, 2, -1, 0};
    int64_t di[2] = {3, 2};
    t_const(&t, "xi", INGOT_DTYPE_INT32, 2, di, xi);
    ig_node *n = t_node(&t, "ArgMax", 13, "xi", "yi");
    a_int(n, "keepdims", 0);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "yi"), "[2]");
    ASSERT_EQ(geti(&r.out[0], 0), 1);
    ASSERT_EQ(geti(&r.out[0], 1), 0);
    r_free(&r);
    ig_dim sd[3] = {S(&t, "batch"), D(0), D(3)};
    t_input(&t, "s", INGOT_DTYPE_FLOAT, 3, sd);
    n = t_node(&t, "ArgMax", 13, "s", "ys");
    a_int(n, "axis", 2);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "ys"), "[batch,0,1]");
    n = t_node(&t, "ArgMax", 13, "s", "ye");
    a_int(n, "axis", 1);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "axis 1 of input 's' is empty; ArgMax needs at least one element");
    t_free(&t);
}

/* ==== Hardmax, TopK ==== */

TEST(hardmax_opsets_nan_and_errors)
{
    T t;
    t_init(&t);
    R r;
    int64_t d[2] = {2, 3};
    float x[6] = {1, 3, 3, NAN, 0, 2};
    t_f32(&t, "x", 2, d, x);
    /* opset 13 along the last axis: the first maximum; NaN wins as in ArgMax */
    ig_node *n = t_node(&t, "Hardmax", 13, "x", "y13");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    const float w13[6] = {0, 1, 0, 1, 0, 0};
    for (int i = 0; i < 6; i++) ASSERT_EQ(getf(&r.out[0], i), w13[i]);
    r_free(&r);
    /* opset 13 along axis 0: one 1 per column */
    n = t_node(&t, "Hardmax", 13, "x", "y13a0");
    a_int(n, "axis", 0);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    const float w13a0[6] = {0, 1, 1, 1, 0, 0};
    for (int i = 0; i < 6; i++) ASSERT_EQ(getf(&r.out[0], i), w13a0[i]);
    r_free(&r);
    /* opset 11, axis 0: X coerced to [1, 6], one 1 in all */
    n = t_node(&t, "Hardmax", 11, "x", "y11");
    a_int(n, "axis", 0);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    for (int i = 0; i < 6; i++) ASSERT_EQ(getf(&r.out[0], i), i == 3 ? 1 : 0);
    r_free(&r);
    /* opset 11 default axis 1 on [2, 3]: per row, like opset 13 here */
    n = t_node(&t, "Hardmax", 11, "x", "y11d");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    for (int i = 0; i < 6; i++) ASSERT_EQ(getf(&r.out[0], i), w13[i]);
    r_free(&r);
    n = t_node(&t, "Hardmax", 13, "x", "ybad");
    n->name = "hm_bad";
    a_int(n, "axis", 2);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "hm_bad");
    ASSERT_CONTAINS(t.err.msg, "axis");
    int32_t xi[2] = {1, 2};
    int64_t two = 2;
    t_const(&t, "xi", INGOT_DTYPE_INT32, 1, &two, xi);
    n = t_node(&t, "Hardmax", 13, "xi", "yi");
    ASSERT(t_infer(&t, n) != INGOT_OK); /* float types only */
    t_free(&t);
}

/* TopK of x along `axis` with K = k: values (as double) and indices against the expected ones. */
static void check_topk(T *t, const char *x, int opset, int64_t axis, int64_t k, int largest, const double *wv,
                       const int64_t *wi, int64_t count)
{
    static int id;
    char kn[16], vn[16], in[16], ins[40];
    snprintf(kn, sizeof kn, "k%d", id);
    snprintf(vn, sizeof vn, "v%d", id);
    snprintf(in, sizeof in, "i%d", id++);
    t_i64(t, kn, 1, &k);
    snprintf(ins, sizeof ins, "%s,%s", x, kn);
    char outs[40];
    snprintf(outs, sizeof outs, "%s,%s", vn, in);
    ig_node *n = t_node(t, "TopK", opset, ins, outs);
    a_int(n, "axis", axis);
    a_int(n, "largest", largest);
    R r;
    ASSERT_EQ(t_run(t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(r.out[0].numel, count);
    ASSERT_EQ(r.out[1].dtype, INGOT_DTYPE_INT64);
    for (int64_t i = 0; i < count; i++) {
        double got = getf(&r.out[0], i);
        if (!(isnan(wv[i]) ? isnan(got) : got == wv[i]) || geti(&r.out[1], i) != wi[i])
            TEST_FAIL_("TopK(%s, axis %d, k %d, largest %d) [%d]: got %g at %d, want %g at %d", x, (int)axis, (int)k,
                       largest, (int)i, got, (int)geti(&r.out[1], i), wv[i], (int)wi[i]);
    }
    r_free(&r);
}

TEST(topk_ties_nan_axes)
{
    T t;
    t_init(&t);
    int64_t d[2] = {2, 5};
    float x[10] = {3, 1, 3, NAN, 2, -0.0f, 0, 5, 5, -1};
    t_f32(&t, "x", 2, d, x);
    /* largest: NaN first, equal values by index, -0 and +0 tie */
    const double v1[6] = {NAN, 3, 3, 5, 5, -0.0}, v0[6] = {1, 2, 3, -1, -0.0, 0};
    const int64_t i1[6] = {3, 0, 2, 2, 3, 0}, i0[6] = {1, 4, 0, 4, 0, 1};
    check_topk(&t, "x", 11, -1, 3, 1, v1, i1, 6);
    check_topk(&t, "x", 11, 1, 3, 0, v0, i0, 6); /* smallest: NaN last */
    const double vall[10] = {1, 2, 3, 3, NAN, -1, -0.0, 0, 5, 5};
    const int64_t iall[10] = {1, 4, 0, 2, 3, 4, 0, 1, 2, 3};
    check_topk(&t, "x", 11, -1, 5, 0, vall, iall, 10);
    /* along axis 0 of an integer tensor: lines strided by the inner size */
    int64_t di[2] = {3, 2};
    int32_t xi[6] = {5, -7, 5, 9, 1, 9};
    t_const(&t, "xi", INGOT_DTYPE_INT32, 2, di, xi);
    const double vi1[4] = {5, 9, 5, 9}, vi0[4] = {1, -7, 5, 9};
    const int64_t ii1[4] = {0, 1, 1, 2}, ii0[4] = {2, 0, 0, 1};
    check_topk(&t, "xi", 11, 0, 2, 1, vi1, ii1, 4);
    check_topk(&t, "xi", 11, -2, 2, 0, vi0, ii0, 4);
    /* uint64 above INT64_MAX ranks above smaller values (compared unsigned) */
    int64_t three = 3;
    uint64_t xu[3] = {1, UINT64_MAX, 1ull << 63};
    t_const(&t, "xu", INGOT_DTYPE_UINT64, 1, &three, xu);
    ig_node *n = t_node(&t, "TopK", 11, "xu,k0", "vu,iu");
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(((uint64_t *)r.out[0].data)[0], UINT64_MAX);
    ASSERT_EQ(((uint64_t *)r.out[0].data)[1], 1ull << 63);
    ASSERT_EQ(geti(&r.out[1], 2), 0);
    r_free(&r);
    t_free(&t);
}

TEST(topk_infer_and_errors)
{
    T t;
    t_init(&t);
    ig_dim sd[2] = {S(&t, "batch"), D(6)};
    t_input(&t, "s", INGOT_DTYPE_FLOAT, 2, sd);
    int64_t k2 = 2, k9 = 9, km = -1;
    t_i64(&t, "k2", 1, &k2);
    t_i64(&t, "k9", 1, &k9);
    t_i64(&t, "km", 1, &km);
    ig_node *n = t_node(&t, "TopK", 11, "s,k2", "v,i");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "v"), "[batch,2]");
    ASSERT_STREQ(shp(&t, "i"), "[batch,2]");
    ASSERT_EQ(V(&t, "i")->dtype, INGOT_DTYPE_INT64);
    /* K decided at run time: the dim is unknown, the rest kept */
    ig_dim kd[1] = {D(1)};
    t_input(&t, "kin", INGOT_DTYPE_INT64, 1, kd);
    n = t_node(&t, "TopK", 11, "s,kin", "v2,i2");
    a_int(n, "axis", 0);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT(!ig__dim_known(V(&t, "v2")->shape.d[0]));
    ASSERT_EQ(V(&t, "v2")->shape.d[1].n, 6);
    /* opset 1: k is an attribute */
    n = t_node(&t, "TopK", 1, "s", "v3,i3");
    a_int(n, "k", 4);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "v3"), "[batch,4]");
    n = t_node(&t, "TopK", 11, "s,k9", "v4,i4");
    n->name = "topk_big";
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "topk_big");
    ASSERT_CONTAINS(t.err.msg, "k = 9 is larger than axis 1");
    n = t_node(&t, "TopK", 11, "s,km", "v5,i5");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "k = -1 is negative");
    n = t_node(&t, "TopK", 11, "s,k2", "v6,i6");
    a_int(n, "largest", 2);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_INVALID);
    ASSERT_CONTAINS(t.err.msg, "'largest'");
    n = t_node(&t, "TopK", 11, "s,k2", "v7,i7");
    a_int(n, "axis", -3);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    n = t_node(&t, "TopK", 1, "s", "v8,i8");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_INVALID); /* no 'k' */
    ASSERT_CONTAINS(t.err.msg, "'k'");
    t_free(&t);
}

/* more lines than scratch slots, split across threads: the same bytes as a serial run, and each line
 * sorted best first with its indices pointing at its values */
TEST(topk_threads_match_serial)
{
    struct ig_pool *pool = ig__pool_create(3);
    int64_t d[3] = {5, 40, 7}, n = numel_of(3, d), k = 9;
    float *x = malloc(sizeof(float) * (size_t)n);
    fill_rand(x, n);
    for (int64_t i = 0; i < n; i += 5) x[i] = x[i / 2]; /* ties */
    T t;
    t_init(&t);
    t_f32(&t, "x", 3, d, x);
    t_i64(&t, "k", 1, &k);
    ig_node *nd = t_node(&t, "TopK", 11, "x,k", "v,i");
    a_int(nd, "axis", 1);
    R r1, r2;
    ASSERT_EQ(t_run(&t, nd, NULL, &r1), INGOT_OK);
    ASSERT_EQ(t_run(&t, nd, pool, &r2), INGOT_OK);
    ASSERT(!memcmp(r1.out[0].data, r2.out[0].data, sizeof(float) * 5 * 9 * 7));
    ASSERT(!memcmp(r1.out[1].data, r2.out[1].data, sizeof(int64_t) * 5 * 9 * 7));
    for (int64_t a = 0; a < 5; a++)
        for (int64_t c = 0; c < 7; c++) {
            int64_t above = 0; /* elements of the line that rank above the k-th */
            double kth = getf(&r1.out[0], (a * 9 + 8) * 7 + c);
            for (int64_t j = 0; j < 40; j++) above += x[(a * 40 + j) * 7 + c] > kth;
            ASSERT(above < 9);
            for (int64_t j = 0; j < 9; j++) {
                int64_t o = (a * 9 + j) * 7 + c, src = geti(&r1.out[1], o);
                ASSERT_EQ(getf(&r1.out[0], o), x[(a * 40 + src) * 7 + c]);
                if (j) {
                    double prev = getf(&r1.out[0], o - 7);
                    ASSERT(prev > getf(&r1.out[0], o) ||
                           (prev == getf(&r1.out[0], o) && geti(&r1.out[1], o - 7) < src));
                }
            }
        }
    r_free(&r1);
    r_free(&r2);
    t_free(&t);
    free(x);
    ig__pool_destroy(pool);
}

/* ==== Resize, Upsample ==== */

static const float roi_none = 0;

/* y = Resize(x) with given scales (or sizes when scales is NULL) on 1-D data */
static ingot_status resize_1d(T *t, const char *mode, const char *ct, const float *x, int64_t n, const float *scale,
                              const int64_t *size, R *r)
{
    t_f32(t, "x", 1, &n, x);
    int64_t one = 1, zero = 0;
    t_const(t, "roi", INGOT_DTYPE_FLOAT, 1, &zero, &roi_none);
    ig_node *nd;
    if (scale) {
        t_f32(t, "sc", 1, &one, scale);
        nd = t_node(t, "Resize", 13, "x,roi,sc", "y");
    } else {
        t_i64(t, "sz", 1, size);
        nd = t_node(t, "Resize", 13, "x,roi,,sz", "y");
    }
    a_str(nd, "mode", mode);
    if (ct) a_str(nd, "coordinate_transformation_mode", ct);
    return t_run(t, nd, NULL, r);
}

TEST(resize_hand_values)
{
    const float x[4] = {1, 2, 3, 4};
    R r;
    {
        T t;
        t_init(&t);
        int64_t sz = 8;
        ASSERT_EQ(resize_1d(&t, "linear", NULL, x, 4, NULL, &sz, &r), INGOT_OK); /* half_pixel */
        const float want[8] = {1, 1.25f, 1.75f, 2.25f, 2.75f, 3.25f, 3.75f, 4};
        for (int i = 0; i < 8; i++) ASSERT_NEAR(getf(&r.out[0], i), want[i], 1e-6);
        r_free(&r);
        t_free(&t);
    }
    {
        T t;
        t_init(&t);
        int64_t sz = 7;
        ASSERT_EQ(resize_1d(&t, "linear", "align_corners", x, 4, NULL, &sz, &r), INGOT_OK);
        for (int i = 0; i < 7; i++) ASSERT_NEAR(getf(&r.out[0], i), 1 + 0.5 * i, 1e-6);
        r_free(&r);
        t_free(&t);
    }
    {
        T t;
        t_init(&t);
        float s = 2;
        ASSERT_EQ(resize_1d(&t, "nearest", NULL, x, 4, &s, NULL, &r), INGOT_OK); /* round_prefer_floor */
        const float want[8] = {1, 1, 2, 2, 3, 3, 4, 4};
        for (int i = 0; i < 8; i++) ASSERT_EQ(getf(&r.out[0], i), want[i]);
        r_free(&r);
        t_free(&t);
    }
    {
        T t;
        t_init(&t);
        float s = 0.6f; /* floor(4 * 0.6) = 2 */
        ASSERT_EQ(resize_1d(&t, "linear", "asymmetric", x, 4, &s, NULL, &r), INGOT_OK);
        ASSERT_STREQ(shp(&t, "y"), "[2]");
        ASSERT_NEAR(getf(&r.out[0], 0), 1, 1e-6);
        ASSERT_NEAR(getf(&r.out[0], 1), 1 + 1 / 0.6, 1e-5); /* x = 1 / 0.6 */
        r_free(&r);
        t_free(&t);
    }
    {
        /* cubic, A = -0.75, half_pixel, 2x on [0,0,1,1]: the known Keys weights at 1/4 and 3/4 */
        T t;
        t_init(&t);
        const float step[4] = {0, 0, 1, 1};
        float s = 2;
        ASSERT_EQ(resize_1d(&t, "cubic", NULL, step, 4, &s, NULL, &r), INGOT_OK);
        /* output 3 sits at x = 1.25: taps 0..3 with weights w(1.25), w(0.25), w(0.75), w(1.75) */
        double a = -0.75, w2 = ((a + 2) * 0.75 - (a + 3)) * 0.75 * 0.75 + 1;
        double w3 = ((a * 1.75 - 5 * a) * 1.75 + 8 * a) * 1.75 - 4 * a;
        ASSERT_NEAR(getf(&r.out[0], 3), w2 + w3, 1e-6);
        r_free(&r);
        t_free(&t);
    }
}

TEST(resize_legacy_opsets)
{
    /* Resize-10 and Upsample: asymmetric; nearest floors when upsampling, ceils when downsampling */
    int64_t d[4] = {1, 1, 1, 6};
    float x[6] = {0, 1, 2, 3, 4, 5};
    R r;
    T t;
    t_init(&t);
    t_f32(&t, "x", 4, d, x);
    int64_t four = 4;
    float down[4] = {1, 1, 1, 0.4f}, up[4] = {1, 1, 1, 1.5f};
    t_f32(&t, "down", 1, &four, down);
    t_f32(&t, "up", 1, &four, up);
    ig_node *n = t_node(&t, "Resize", 10, "x,down", "yd");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "yd"), "[1,1,1,2]"); /* floor(6 * 0.4) */
    ASSERT_EQ(getf(&r.out[0], 0), 0);
    ASSERT_EQ(getf(&r.out[0], 1), 3); /* x = 1 / 0.4 = 2.5: ceil when downsampling */
    r_free(&r);
    n = t_node(&t, "Resize", 10, "x,up", "yu");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "yu"), "[1,1,1,9]");
    for (int i = 0; i < 9; i++) ASSERT_EQ(getf(&r.out[0], i), floor(i / 1.5 + 1e-9));
    r_free(&r);
    /* Upsample-7 takes scales as an attribute, Upsample-9 as an input: same result */
    float s2[4] = {1, 1, 2, 2};
    t_f32(&t, "s2", 1, &four, s2);
    ig_node *n7 = t_node(&t, "Upsample", 7, "x", "u7");
    a_floats(&t, n7, "scales", 4, s2);
    a_str(n7, "mode", "linear");
    R r7;
    ASSERT_EQ(t_run(&t, n7, NULL, &r7), INGOT_OK);
    ig_node *n9 = t_node(&t, "Upsample", 9, "x,s2", "u9");
    a_str(n9, "mode", "linear");
    ASSERT_EQ(t_run(&t, n9, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "u9"), "[1,1,2,12]");
    for (int i = 0; i < 24; i++) ASSERT_EQ(getf(&r.out[0], i), getf(&r7.out[0], i));
    ASSERT_NEAR(getf(&r.out[0], 1), 0.5, 1e-6); /* asymmetric linear: x = 1/2 */
    ASSERT_NEAR(getf(&r.out[0], 11), 5, 1e-6);  /* clamped at the edge */
    r_free(&r);
    r_free(&r7);
    n = t_node(&t, "Resize", 10, "x,up", "ycubic");
    a_str(n, "mode", "cubic");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "attribute 'mode' = 'cubic' is not supported (nearest or linear)");
    t_free(&t);
}

TEST(resize_integer_rounding)
{
    T t;
    t_init(&t);
    R r;
    int64_t d = 4, sz = 8, zero = 0;
    uint8_t x[4] = {0, 0, 255, 255};
    t_const(&t, "x", INGOT_DTYPE_UINT8, 1, &d, x);
    t_const(&t, "roi", INGOT_DTYPE_FLOAT, 1, &zero, &roi_none);
    t_i64(&t, "sz", 1, &sz);
    ig_node *n = t_node(&t, "Resize", 13, "x,roi,,sz", "y");
    a_str(n, "mode", "cubic");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    /* cubic overshoots below 0 and above 255: saturated, not wrapped (values from onnx.reference) */
    const int64_t want[8] = {0, 0, 0, 58, 197, 255, 255, 255};
    for (int i = 0; i < 8; i++) ASSERT_EQ(geti(&r.out[0], i), want[i]);
    r_free(&r);
    n = t_node(&t, "Resize", 13, "x,roi,,sz", "yl");
    a_str(n, "mode", "linear");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(geti(&r.out[0], 3), 64);  /* 63.75 rounds to nearest */
    ASSERT_EQ(geti(&r.out[0], 4), 191); /* 191.25 */
    r_free(&r);
    t_free(&t);
}

TEST(resize_infer_symbolic)
{
    T t;
    t_init(&t);
    ig_dim xd[4] = {S(&t, "batch"), D(3), S(&t, "h"), D(32)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 4, xd);
    int64_t four = 4, zero = 0;
    float s2[4] = {1, 1, 2, 2}, s15[4] = {1, 1, 1.5f, 0.7f};
    t_f32(&t, "s2", 1, &four, s2);
    t_f32(&t, "s15", 1, &four, s15);
    t_const(&t, "roi", INGOT_DTYPE_FLOAT, 1, &zero, &roi_none);
    ig_node *n = t_node(&t, "Resize", 13, "x,roi,s2", "y");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[batch,3,2*h,64]");
    n = t_node(&t, "Resize", 11, "x,roi,s15", "y2");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ig_value *y2 = V(&t, "y2");
    ASSERT_EQ(y2->shape.rank, 4);
    ASSERT(ig__dim_eq(y2->shape.d[0], V(&t, "x")->shape.d[0]));
    ASSERT(!ig__dim_known(y2->shape.d[2])); /* floor(1.5 * h): a fresh symbol */
    ASSERT_EQ(y2->shape.d[3].n, 22);        /* floor(32 * 0.7) */
    /* sizes computed from shapes keep their symbols (Shape -> ... -> Concat chains) */
    ig_value *sz = t_input(&t, "sizes", INGOT_DTYPE_INT64, 1, (ig_dim[]){D(4)});
    ig_dim sv[4] = {S(&t, "batch"), D(3), D(64), D(48)};
    sz->sym = sv;
    sz->n_sym = 4;
    n = t_node(&t, "Resize", 13, "x,,,sizes", "y3");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y3"), "[batch,3,64,48]");
    /* scales only known at run time: rank kept, dims unknown */
    t_input(&t, "rs", INGOT_DTYPE_FLOAT, 1, (ig_dim[]){D(4)});
    n = t_node(&t, "Resize", 13, "x,,rs", "y4");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_EQ(V(&t, "y4")->shape.rank, 4);
    /* opset 18 axes */
    float s3[2] = {3, 2};
    int64_t two = 2, ax[2] = {-1, 2};
    t_f32(&t, "s3", 1, &two, s3);
    n = t_node(&t, "Resize", 18, "x,,s3", "y5");
    a_ints(&t, n, "axes", 2, ax);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y5"), "[batch,3,2*h,96]");
    t_free(&t);
}

TEST(resize_errors)
{
    T t;
    t_init(&t);
    ig_dim xd[4] = {D(1), D(3), D(8), D(8)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 4, xd);
    int64_t four = 4, three = 3, zero = 0, sz[4] = {1, 3, 4, 4};
    float s4[4] = {1, 1, 2, 2}, s3[3] = {1, 2, 2}, neg[4] = {1, 1, -2, 2};
    t_f32(&t, "s4", 1, &four, s4);
    t_f32(&t, "s3", 1, &three, s3);
    t_f32(&t, "neg", 1, &four, neg);
    t_i64(&t, "sz", 4, sz);
    t_const(&t, "empty", INGOT_DTYPE_FLOAT, 1, &zero, &roi_none);
    struct {
        const char *ins, *attr, *val;
        ingot_status st;
        const char *msg;
    } cases[] = {
        {"x,,s4,sz", NULL, NULL, INGOT_ERR_MODEL_INVALID, "only one of 'scales' and 'sizes' may be given"},
        {"x,,empty", NULL, NULL, INGOT_ERR_MODEL_INVALID, "needs 'scales' or 'sizes' (both are omitted or empty)"},
        {"x,,s3", NULL, NULL, INGOT_ERR_MODEL_SHAPE, "input 's3' has 3 values; expected 4 (one per input axis)"},
        {"x,,neg", NULL, NULL, INGOT_ERR_MODEL_SHAPE, "scale -2 for axis 2 must be positive"},
        {"x,,s4", "mode", "area", INGOT_ERR_MODEL_UNSUPPORTED_OP, "attribute 'mode' = 'area' is not supported"},
        {"x,,s4", "coordinate_transformation_mode", "tf_crop_and_resize", INGOT_ERR_MODEL_INVALID,
         "'tf_crop_and_resize' needs the 'roi' input"},
        {"x,,s4", "coordinate_transformation_mode", "corners", INGOT_ERR_MODEL_UNSUPPORTED_OP,
         "attribute 'coordinate_transformation_mode' = 'corners' is not supported"},
        {"x,,s4", "nearest_mode", "round", INGOT_ERR_MODEL_UNSUPPORTED_OP,
         "attribute 'nearest_mode' = 'round' is not supported"},
        {"x,,,sz", "keep_aspect_ratio_policy", "fit", INGOT_ERR_MODEL_UNSUPPORTED_OP,
         "attribute 'keep_aspect_ratio_policy' = 'fit' is not supported"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[16];
        snprintf(out, sizeof out, "y%d", (int)i);
        ig_node *n = t_node(&t, "Resize", 19, cases[i].ins, out);
        if (cases[i].attr) a_str(n, cases[i].attr, cases[i].val);
        ASSERT_EQ(t_infer(&t, n), cases[i].st);
        ASSERT_CONTAINS(t.err.msg, cases[i].msg);
        ASSERT_CONTAINS(t.err.msg, "node 'Resize' (Resize): ");
    }
    ig_node *n = t_node(&t, "Upsample", 7, "x", "u");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_INVALID);
    ASSERT_CONTAINS(t.err.msg, "attribute 'scales' is required");
    t_free(&t);
}

/* threaded runs give the same bytes as serial ones */
TEST(threads_match_serial)
{
    struct ig_pool *pool = ig__pool_create(3);
    int64_t d[4] = {2, 3, 37, 41}, four = 4, zero = 0, c = 3;
    int64_t n = numel_of(4, d);
    float *x = malloc(sizeof(float) * (size_t)n), s[4] = {1, 1, 1.7f, 0.45f}, p[3] = {0.5f, 1, 2};
    fill_rand(x, n);
    static const char *const modes[3] = {"nearest", "linear", "cubic"};
    for (int k = 0; k < 8; k++) {
        T t;
        t_init(&t);
        t_f32(&t, "x", 4, d, x);
        t_f32(&t, "s", 1, &four, s);
        t_f32(&t, "p", 1, &c, p);
        t_const(&t, "roi", INGOT_DTYPE_FLOAT, 1, &zero, &roi_none);
        ig_node *nd;
        if (k < 3) {
            nd = t_node(&t, "Resize", 18, "x,roi,s", "y");
            a_str(nd, "mode", modes[k]);
            a_int(nd, "antialias", 1);
        } else if (k == 3) {
            nd = t_node(&t, "Softmax", 13, "x", "y");
            a_int(nd, "axis", 1);
        } else if (k == 4) {
            nd = t_node(&t, "LayerNormalization", 17, "x,x", "y"); /* scale: x itself, all dims normalised */
            a_int(nd, "axis", 0);
        } else if (k == 5) {
            nd = t_node(&t, "InstanceNormalization", 6, "x,p,p", "y");
        } else if (k == 6) {
            int64_t ax[2] = {0, 2};
            nd = t_node(&t, "ReduceSum", 11, "x", "y");
            a_ints(&t, nd, "axes", 2, ax);
        } else {
            nd = t_node(&t, "ArgMax", 13, "x", "y");
            a_int(nd, "axis", 2);
        }
        R r1, r2;
        ASSERT_EQ(t_run(&t, nd, NULL, &r1), INGOT_OK);
        ASSERT_EQ(t_run(&t, nd, pool, &r2), INGOT_OK);
        size_t bytes = (size_t)r1.out[0].numel * ingot_dtype_size(r1.out[0].dtype);
        ASSERT(r1.out[0].numel > 0);
        ASSERT(memcmp(r1.out[0].data, r2.out[0].data, bytes) == 0);
        r_free(&r1);
        r_free(&r2);
        t_free(&t);
    }
    free(x);
    ig__pool_destroy(pool);
}

/* ==== DepthToSpace ==== */

TEST(depth_to_space_modes)
{
    int64_t d[4] = {2, 8, 2, 3};
    float x[96];
    for (int i = 0; i < 96; i++) x[i] = (float)i;
    for (int crd = 0; crd < 2; crd++) {
        T t;
        t_init(&t);
        t_f32(&t, "x", 4, d, x);
        ig_node *n = t_node(&t, "DepthToSpace", crd ? 11 : 1, "x", "y");
        a_int(n, "blocksize", 2);
        if (crd) a_str(n, "mode", "CRD");
        R r;
        ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
        ASSERT_STREQ(shp(&t, "y"), "[2,2,4,6]");
        /* the spec's reshape + transpose, as index arithmetic */
        for (int64_t b = 0; b < 2; b++)
            for (int64_t c = 0; c < 2; c++)
                for (int64_t h = 0; h < 4; h++)
                    for (int64_t w = 0; w < 6; w++) {
                        int64_t i = h % 2, j = w % 2;
                        int64_t ci = crd ? c * 4 + i * 2 + j : (i * 2 + j) * 2 + c;
                        double want = x[((b * 8 + ci) * 2 + h / 2) * 3 + w / 2];
                        ASSERT_EQ(getf(&r.out[0], ((b * 2 + c) * 4 + h) * 6 + w), want);
                    }
        r_free(&r);
        t_free(&t);
    }
    T t;
    t_init(&t);
    ig_dim sd[4] = {S(&t, "batch"), D(12), S(&t, "h"), D(5)};
    t_input(&t, "s", INGOT_DTYPE_FLOAT16, 4, sd);
    ig_node *n = t_node(&t, "DepthToSpace", 13, "s", "ys");
    a_int(n, "blocksize", 2);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "ys"), "[batch,3,2*h,10]");
    n = t_node(&t, "DepthToSpace", 13, "s", "ye");
    a_int(n, "blocksize", 5);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "channels 12 are not divisible by blocksize^2 = 25");
    n = t_node(&t, "DepthToSpace", 13, "s", "ym");
    a_int(n, "blocksize", 2);
    a_str(n, "mode", "DRC");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "attribute 'mode' = 'DRC' is not supported (DCR or CRD)");
    n = t_node(&t, "DepthToSpace", 13, "s", "yb");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_INVALID);
    ASSERT_CONTAINS(t.err.msg, "attribute 'blocksize' (an integer) is required");
    t_free(&t);
}

/* ==== FLOPs ==== */

TEST(flops_conventions)
{
    T t;
    t_init(&t);
    ig_dim xd[4] = {D(2), D(3), D(8), D(8)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 4, xd);
    int64_t four = 4, c = 3, zero = 0, eight = 8;
    float s[4] = {1, 1, 2, 2}, p[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    t_f32(&t, "s", 1, &four, s);
    t_f32(&t, "p", 1, &c, p);
    t_f32(&t, "p8", 1, &eight, p);
    t_const(&t, "roi", INGOT_DTYPE_FLOAT, 1, &zero, &roi_none);
    const double n = 2 * 3 * 8 * 8;
    struct {
        const char *op;
        int opset;
        const char *ins, *mode;
        double want;
    } cases[] = {
        {"Softmax", 13, "x", NULL, 5 * n},
        {"LogSoftmax", 13, "x", NULL, 5 * n},
        {"LayerNormalization", 17, "x,p8", NULL, 8 * n},
        {"InstanceNormalization", 6, "x,p,p", NULL, 8 * n},
        {"BatchNormalization", 15, "x,p,p,p,p", NULL, 2 * n},
        {"ReduceMean", 13, "x", NULL, n},
        {"ArgMax", 13, "x", NULL, n},
        {"Resize", 13, "x,roi,s", "linear", 2 * 4 * 4 * n}, /* 4 taps per output, 4x the outputs */
        {"Resize", 13, "x,roi,s", "cubic", 2 * 16 * 4 * n},
        {"Resize", 13, "x,roi,s", "nearest", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[16];
        snprintf(out, sizeof out, "y%d", (int)i);
        ig_node *nd = t_node(&t, cases[i].op, cases[i].opset, cases[i].ins, out);
        if (cases[i].mode) a_str(nd, "mode", cases[i].mode);
        ASSERT_EQ(t_infer(&t, nd), INGOT_OK);
        ASSERT_NEAR(def_of(nd)->flops(&t.g, nd), cases[i].want, 0.5);
    }
    t_free(&t);
}

TEST_MAIN(RUN(softmax_hand_values); RUN(softmax_opset_semantics); RUN(softmax_default_axis_by_opset);
          RUN(softmax_fp16_and_double); RUN(softmax_infer_and_errors); RUN(layernorm_random_with_stats);
          RUN(layernorm_infer); RUN(layernorm_broadcast_scale); RUN(instancenorm_random); RUN(batchnorm_opsets);
          RUN(batchnorm_infer_and_errors); RUN(reduce_all_axis_subsets); RUN(reduce_integers_exact);
          RUN(reduce_empty_and_noop); RUN(reduce_infer_symbolic_and_errors); RUN(argmax_ties_nan_opsets);
          RUN(hardmax_opsets_nan_and_errors); RUN(topk_ties_nan_axes); RUN(topk_infer_and_errors);
          RUN(topk_threads_match_serial); RUN(resize_hand_values); RUN(resize_legacy_opsets);
          RUN(resize_integer_rounding); RUN(resize_infer_symbolic); RUN(resize_errors); RUN(threads_match_serial);
          RUN(depth_to_space_modes); RUN(flops_conventions))
