/*
 * test_ops_pool_more.c -- LpPool, GlobalLpPool, MaxUnpool and Col2Im: their CPU kernels against the
 * definitions written out here in double (naive loops, output sizes and auto_pad pads computed by the
 * test itself), for 1-D to 3-D windows, strides, pads, dilations and ceil_mode, in float, float16 and
 * double (Col2Im also int8 wrapping and bool); symbolic shapes; and the inputs they must refuse, with
 * messages naming the node.
 */
#include "fused_util.h"
#include "ops/ops_internal.h"

/* ---------------------------------------------------------------------------------------------- */
/* window geometry, as the test computes it                                                        */

typedef struct ref_dim {
    int64_t in, k, s, d, pb, pe, out;
} ref_dim;

/* explicit pads: floor, or ceil with the last window starting inside the input or its left pad */
static void ref_explicit(ref_dim *r, bool ceil_mode)
{
    double o = (double)(r->in + r->pb + r->pe - ((r->k - 1) * r->d + 1)) / (double)r->s + 1;
    r->out = (int64_t)(ceil_mode ? ceil(o) : floor(o));
    if (ceil_mode && (r->out - 1) * r->s >= r->in + r->pb) r->out--;
}

/* SAME_UPPER / SAME_LOWER: out = ceil(in / s), the pads' odd one at the end / the begin */
static void ref_same(ref_dim *r, bool upper)
{
    r->out = (r->in + r->s - 1) / r->s;
    int64_t total = (r->out - 1) * r->s + (r->k - 1) * r->d + 1 - r->in;
    if (total < 0) total = 0;
    r->pb = upper ? total / 2 : total - total / 2;
    r->pe = total - r->pb;
}

/* index -> multi-index over dims[n] (row-major) */
static void unflat(int64_t i, int n, const int64_t *dims, int64_t *m)
{
    for (int k = n - 1; k >= 0; k--) {
        m[k] = i % dims[k];
        i /= dims[k];
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* LpPool                                                                                          */

typedef struct lp_case {
    int opset, nsp, p; /* p 0: attribute absent (2) */
    int64_t in[3], k[3], s[3], d[3], pads[6];
    const char *auto_pad;
    int ceil_mode;
} lp_case;

static const lp_case lp_cases[] = {
    {11, 1, 2, {9}, {3}, {2}, {0}, {1, 1}, NULL, 0},
    {11, 2, 3, {6, 7}, {3, 2}, {1, 2}, {0}, {1, 0, 2, 1}, NULL, 0},
    {18, 2, 1, {7, 7}, {3, 3}, {2, 2}, {2, 1}, {1, 1, 0, 0}, NULL, 1},
    {18, 3, 0, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {0}, {0}, "SAME_UPPER", 0},
    {11, 2, 4, {5, 6}, {2, 3}, {2, 2}, {0}, {0}, "SAME_LOWER", 0},
    {18, 2, 2, {6, 6}, {3, 3}, {3, 3}, {0}, {0}, "VALID", 0},
    {18, 2, 2, {3, 3}, {2, 2}, {1, 1}, {0}, {2, 2, 2, 2}, NULL, 0}, /* windows wholly in the pads: 0 */
    {18, 1, 3, {8}, {3}, {3}, {1}, {0, 1}, NULL, 1},
};

/* The case's output dims per spatial dim, and its Lp pool of x [2, 3, in...] in double. */
static void lp_reference(const lp_case *c, const double *x, ref_dim *rd, double *y)
{
    int n = c->nsp;
    int64_t in_sp = 1, out_sp = 1, kprod = 1, odims[3], kdims[3];
    for (int i = 0; i < n; i++) {
        ref_dim *r = &rd[i];
        *r = (ref_dim){c->in[i], c->k[i], c->s[i] ? c->s[i] : 1, c->d[i] ? c->d[i] : 1, c->pads[i], c->pads[n + i], 0};
        if (c->auto_pad && !strcmp(c->auto_pad, "VALID")) r->pb = r->pe = 0;
        if (c->auto_pad && strncmp(c->auto_pad, "SAME", 4) == 0)
            ref_same(r, !strcmp(c->auto_pad, "SAME_UPPER"));
        else
            ref_explicit(r, c->ceil_mode);
        in_sp *= r->in;
        out_sp *= r->out;
        kprod *= r->k;
        odims[i] = r->out;
        kdims[i] = r->k;
    }
    double p = c->p ? c->p : 2;
    for (int64_t pl = 0; pl < 6; pl++)
        for (int64_t q = 0; q < out_sp; q++) {
            int64_t o[3], t[3];
            unflat(q, n, odims, o);
            double acc = 0;
            for (int64_t kq = 0; kq < kprod; kq++) {
                unflat(kq, n, kdims, t);
                int64_t off = 0;
                bool inside = true;
                for (int i = 0; i < n; i++) {
                    int64_t pos = o[i] * rd[i].s - rd[i].pb + t[i] * rd[i].d;
                    inside &= pos >= 0 && pos < rd[i].in;
                    off = off * rd[i].in + pos;
                }
                if (inside) acc += pow(fabs(x[pl * in_sp + off]), p);
            }
            y[pl * out_sp + q] = pow(acc, 1.0 / p);
        }
}

static ig_node *lp_node(T *t, const lp_case *c, const char *x)
{
    ig_node *n = t_node(t, "LpPool", c->opset, x, "y");
    a_ints(t, n, "kernel_shape", c->nsp, c->k);
    if (c->s[0]) a_ints(t, n, "strides", c->nsp, c->s);
    if (c->d[0]) a_ints(t, n, "dilations", c->nsp, c->d);
    if (!c->auto_pad) a_ints(t, n, "pads", 2 * c->nsp, c->pads);
    if (c->auto_pad) a_str(n, "auto_pad", c->auto_pad);
    if (c->ceil_mode) a_int(n, "ceil_mode", 1);
    if (c->p) a_int(n, "p", c->p);
    return n;
}

/* Every case in float (serially and on two threads), float16 and double. */
TEST(lp_pool_matches_definition)
{
    struct ig_pool *pool = ig__pool_create(2);
    for (size_t ci = 0; ci < sizeof lp_cases / sizeof lp_cases[0]; ci++) {
        const lp_case *c = &lp_cases[ci];
        int64_t xd[5] = {2, 3}, nx = 6;
        for (int i = 0; i < c->nsp; i++) nx *= xd[2 + i] = c->in[i];
        float *xf = rand_f32(nx, 2.0);
        float *xr = malloc(sizeof(float) * (size_t)nx);
        uint16_t *xh = to_f16(xf, nx, xr);
        double *xdbl = malloc(sizeof(double) * (size_t)nx), *xrd = malloc(sizeof(double) * (size_t)nx);
        for (int64_t i = 0; i < nx; i++) {
            xdbl[i] = xf[i];
            xrd[i] = xr[i];
        }
        ref_dim rd[3];
        double *want = malloc(sizeof(double) * (size_t)nx * 64), *want_h = malloc(sizeof(double) * (size_t)nx * 64);
        lp_reference(c, xdbl, rd, want);
        lp_reference(c, xrd, rd, want_h);
        int64_t ny = 6;
        for (int i = 0; i < c->nsp; i++) ny *= rd[i].out;
        for (int v = 0; v < 4; v++) { /* float serial, float threaded, float16, double */
            T t;
            t_init(&t);
            ingot_dtype dt = v == 2 ? INGOT_DTYPE_FLOAT16 : v == 3 ? INGOT_DTYPE_DOUBLE : INGOT_DTYPE_FLOAT;
            t_const(&t, "x", dt, 2 + c->nsp, xd, v == 2 ? (const void *)xh : v == 3 ? (const void *)xdbl : xf);
            ig_node *n = lp_node(&t, c, "x");
            R r;
            ingot_status st = t_run(&t, n, v == 1 ? pool : NULL, &r);
            if (st != INGOT_OK) fprintf(stderr, "  case %zu: %s\n", ci, t.err.msg);
            ASSERT_EQ(st, INGOT_OK);
            ASSERT_EQ(r.out[0].numel, ny);
            for (int i = 0; i < c->nsp; i++) ASSERT_EQ(r.out[0].dims[2 + i], rd[i].out);
            double rtol = v == 2 ? 2e-3 : v == 3 ? 1e-12 : 2e-6;
            for (int64_t i = 0; i < ny; i++) {
                double w = v == 2 ? want_h[i] : want[i];
                if (!close_to(elem(&r.out[0], i), w, rtol, 1e-6))
                    TEST_FAIL_("case %zu variant %d: y[%" PRId64 "] = %.9g, want %.9g", ci, v, i, elem(&r.out[0], i),
                               w);
            }
            r_free(&r);
            t_free(&t);
        }
        free(xf);
        free(xr);
        free(xh);
        free(xdbl);
        free(xrd);
        free(want);
        free(want_h);
    }
    ig__pool_destroy(pool);
}

TEST(global_lp_pool_matches_definition)
{
    const int64_t xd[4] = {2, 3, 4, 5};
    const int64_t nx = 120;
    float *xf = rand_f32(nx, 3.0);
    for (int p = 1; p <= 3; p++)
        for (int v = 0; v < 2; v++) { /* float, double */
            T t;
            t_init(&t);
            double xdbl[120];
            for (int64_t i = 0; i < nx; i++) xdbl[i] = xf[i];
            t_const(&t, "x", v ? INGOT_DTYPE_DOUBLE : INGOT_DTYPE_FLOAT, 4, xd, v ? (const void *)xdbl : xf);
            ig_node *n = t_node(&t, "GlobalLpPool", 2, "x", "y");
            if (p != 2) a_int(n, "p", p);
            R r;
            ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
            ASSERT_STREQ(shp(&t, "y"), "[2,3,1,1]");
            for (int64_t pl = 0; pl < 6; pl++) {
                double s = 0;
                for (int64_t i = 0; i < 20; i++) s += pow(fabs(xdbl[pl * 20 + i]), p);
                ASSERT(close_to(elem(&r.out[0], pl), pow(s, 1.0 / p), v ? 1e-12 : 2e-6, 0));
            }
            r_free(&r);
            t_free(&t);
        }
    free(xf);
}

/* Symbolic dims stay where the window cannot change them; GlobalLpPool keeps N and C. */
TEST(lp_pool_symbolic_shapes)
{
    T t;
    t_init(&t);
    ig_dim xd[4] = {S(&t, "batch"), D(3), S(&t, "h"), S(&t, "w")};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 4, xd);
    ig_node *n = t_node(&t, "LpPool", 18, "x", "same");
    a_ints(&t, n, "kernel_shape", 2, (const int64_t[]){3, 3});
    a_str(n, "auto_pad", "SAME_UPPER");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "same"), "[batch,3,h,w]");
    n = t_node(&t, "LpPool", 18, "x", "strided");
    a_ints(&t, n, "kernel_shape", 2, (const int64_t[]){2, 2});
    a_ints(&t, n, "strides", 2, (const int64_t[]){2, 2});
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    const ig_value *y = V(&t, "strided");
    ASSERT_EQ(y->shape.rank, 4);
    ASSERT_EQ(y->shape.d[0].sym, xd[0].sym);
    ASSERT(!ig__dim_known(y->shape.d[2]) && y->shape.d[2].sym != xd[2].sym);
    n = t_node(&t, "GlobalLpPool", 2, "x", "g");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "g"), "[batch,3,1,1]");
    t_free(&t);
}

/* The inputs LpPool and GlobalLpPool refuse, each naming the node and the problem. */
TEST(lp_pool_rejects_bad_nodes)
{
    static const struct {
        const char *what, *attr;
        int64_t val;
        int opset;
        ingot_dtype dt;
        int rank;
        ingot_status st;
        const char *msg;
    } bad[] = {
        {"p 0", "p", 0, 18, INGOT_DTYPE_FLOAT, 4, INGOT_ERR_MODEL_UNSUPPORTED_OP, "attribute 'p' value 0"},
        {"p -2", "p", -2, 11, INGOT_DTYPE_FLOAT, 4, INGOT_ERR_MODEL_UNSUPPORTED_OP, "p >= 1"},
        {"ceil_mode 2", "ceil_mode", 2, 18, INGOT_DTYPE_FLOAT, 4, INGOT_ERR_MODEL_UNSUPPORTED_OP, "'ceil_mode'"},
        {"bfloat16 before 22", NULL, 0, 18, INGOT_DTYPE_BFLOAT16, 4, INGOT_ERR_MODEL_UNSUPPORTED_OP, "bfloat16"},
        {"int32", NULL, 0, 18, INGOT_DTYPE_INT32, 4, INGOT_ERR_MODEL_UNSUPPORTED_OP, "int32"},
        {"rank 2", NULL, 0, 18, INGOT_DTYPE_FLOAT, 2, INGOT_ERR_MODEL_SHAPE, "rank >= 3"},
        {"no kernel", "kernel_shape", -1, 18, INGOT_DTYPE_FLOAT, 4, INGOT_ERR_MODEL_INVALID, "'kernel_shape'"},
        {"kernel 0", "kernel_shape", 0, 18, INGOT_DTYPE_FLOAT, 4, INGOT_ERR_MODEL_UNSUPPORTED_OP, "'kernel_shape'"},
        {"stride 0", "strides", 0, 18, INGOT_DTYPE_FLOAT, 4, INGOT_ERR_MODEL_UNSUPPORTED_OP, "'strides'"},
        {"window > input", "kernel_shape", 9, 18, INGOT_DTYPE_FLOAT, 4, INGOT_ERR_MODEL_SHAPE, "larger than"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        T t;
        t_init(&t);
        ig_dim xd[4] = {D(1), D(2), D(5), D(5)};
        t_input(&t, "x", bad[i].dt, bad[i].rank, xd);
        ig_node *n = t_node(&t, "LpPool", bad[i].opset, "x", "y");
        bool kernel_attr = bad[i].attr && !strcmp(bad[i].attr, "kernel_shape");
        if (!kernel_attr) a_ints(&t, n, "kernel_shape", 2, (const int64_t[]){2, 2});
        if (kernel_attr && bad[i].val >= 0) a_ints(&t, n, "kernel_shape", 2, (const int64_t[]){bad[i].val, 2});
        if (bad[i].attr && !strcmp(bad[i].attr, "strides")) a_ints(&t, n, "strides", 2, (const int64_t[]){1, 0});
        if (bad[i].attr && (!strcmp(bad[i].attr, "p") || !strcmp(bad[i].attr, "ceil_mode")))
            a_int(n, bad[i].attr, bad[i].val);
        ingot_status st = t_infer(&t, n);
        if (st != bad[i].st) fprintf(stderr, "  %s: %s\n", bad[i].what, t.err.msg);
        ASSERT_EQ(st, bad[i].st);
        ASSERT_CONTAINS(t.err.msg, "node 'LpPool' (LpPool)");
        ASSERT_CONTAINS(t.err.msg, bad[i].msg);
        t_free(&t);
    }
    /* bfloat16 from opset 22; GlobalLpPool refuses the same p */
    T t;
    t_init(&t);
    ig_dim xd[4] = {D(1), D(2), D(5), D(5)};
    t_input(&t, "x", INGOT_DTYPE_BFLOAT16, 4, xd);
    ig_node *n = t_node(&t, "LpPool", 22, "x", "y");
    a_ints(&t, n, "kernel_shape", 2, (const int64_t[]){2, 2});
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    n = t_node(&t, "GlobalLpPool", 2, "x", "g");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP); /* bfloat16 at opset 2 */
    n = t_node(&t, "GlobalLpPool", 22, "x", "g2");
    a_int(n, "p", 0);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "node 'GlobalLpPool' (GlobalLpPool): attribute 'p' value 0");
    t_free(&t);
}

/* ---------------------------------------------------------------------------------------------- */
/* MaxUnpool                                                                                       */

static ig_node *unpool_node(T *t, const char *ins, const char *out)
{
    ig_node *n = t_node(t, "MaxUnpool", 11, ins, out);
    a_ints(t, n, "kernel_shape", 2, (const int64_t[]){2, 2});
    a_ints(t, n, "strides", 2, (const int64_t[]){2, 2});
    return n;
}

/* The values land at their flat indices of the whole output; the rest is zero. */
TEST(max_unpool_scatters_at_flat_indices)
{
    const int64_t xd[4] = {1, 1, 2, 2};
    const float x[4] = {1, 2, 3, 4};
    struct {
        int64_t idx[4];
        const int64_t *shape; /* output_shape, or NULL */
        int64_t side;         /* the output is side x side */
    } cases[] = {
        {{5, 7, 13, 15}, NULL, 4},                           /* the attributes' (2-1)*2+2 = 4 */
        {{6, 8, 16, 18}, (const int64_t[]){1, 1, 5, 5}, 5},  /* MaxPool's indices over a 5x5 input */
        {{0, 24, 12, 12}, (const int64_t[]){1, 1, 5, 5}, 5}, /* a repeated index: the last write wins */
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        T t;
        t_init(&t);
        t_f32(&t, "x", 4, xd, x);
        t_const(&t, "i", INGOT_DTYPE_INT64, 4, xd, cases[ci].idx);
        if (cases[ci].shape) t_i64(&t, "s", 4, cases[ci].shape);
        ig_node *n = unpool_node(&t, cases[ci].shape ? "x,i,s" : "x,i", "y");
        R r;
        ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
        int64_t side = cases[ci].side;
        ASSERT_EQ(r.out[0].numel, side * side);
        ASSERT_EQ(r.out[0].dims[2], side);
        float want[25] = {0};
        for (int k = 0; k < 4; k++) want[cases[ci].idx[k]] = x[k];
        for (int64_t i = 0; i < side * side; i++) ASSERT(((float *)r.out[0].data)[i] == want[i]);
        r_free(&r);
        t_free(&t);
    }
}

/* Indices over N x C planes (flat over the whole output), in float16 and double. */
TEST(max_unpool_batches_and_dtypes)
{
    const int64_t xd[4] = {2, 2, 1, 2};
    const int64_t idx[8] = {0, 3, 9, 14, 20, 17, 24, 31}; /* flat over the [2,2,2,4] output, across planes */
    for (int v = 0; v < 2; v++) {
        T t;
        t_init(&t);
        float xf[8];
        double xdbl[8];
        for (int k = 0; k < 8; k++) xdbl[k] = xf[k] = (float)(k + 1) * 0.5f;
        uint16_t *xh = to_f16(xf, 8, NULL);
        t_const(&t, "x", v ? INGOT_DTYPE_DOUBLE : INGOT_DTYPE_FLOAT16, 4, xd, v ? (const void *)xdbl : xh);
        t_const(&t, "i", INGOT_DTYPE_INT64, 4, xd, idx);
        ig_node *n = t_node(&t, "MaxUnpool", 11, "x,i", "y");
        a_ints(&t, n, "kernel_shape", 2, (const int64_t[]){2, 2});
        a_ints(&t, n, "strides", 2, (const int64_t[]){1, 2});
        R r;
        ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
        ASSERT_STREQ(shp(&t, "y"), "[2,2,2,4]");
        double want[32] = {0};
        for (int k = 0; k < 8; k++) want[idx[k]] = xf[k];
        for (int64_t i = 0; i < 32; i++) ASSERT(elem(&r.out[0], i) == want[i]);
        free(xh);
        r_free(&r);
        t_free(&t);
    }
}

/* An index outside the output (or negative) fails at run time naming the element; nothing is
 * written out of bounds (ASan builds check that too). */
TEST(max_unpool_rejects_bad_indices)
{
    const int64_t xd[4] = {1, 1, 2, 2};
    const float x[4] = {1, 2, 3, 4};
    const int64_t bad[2][4] = {{0, 1, 2, 16}, {0, -1, 2, 3}};
    for (int b = 0; b < 2; b++) {
        T t;
        t_init(&t);
        t_f32(&t, "x", 4, xd, x);
        t_const(&t, "i", INGOT_DTYPE_INT64, 4, xd, bad[b]);
        ig_node *n = unpool_node(&t, "x,i", "y");
        R r;
        ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_ERR_INVALID_ARG);
        ASSERT_CONTAINS(t.err.msg, "node 'MaxUnpool' (MaxUnpool)");
        ASSERT_CONTAINS(t.err.msg, b ? "index -1 (element 1 of input 1 'i')" : "index 16 (element 3 of input 1 'i')");
        ASSERT_CONTAINS(t.err.msg, "output of 16 elements");
        r_free(&r);
        t_free(&t);
    }
}

TEST(max_unpool_shapes_and_refusals)
{
    T t;
    t_init(&t);
    ig_dim xd[4] = {S(&t, "batch"), D(3), S(&t, "h"), S(&t, "w")};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 4, xd);
    t_input(&t, "i", INGOT_DTYPE_INT64, 4, xd);
    ig_node *n = t_node(&t, "MaxUnpool", 11, "x,i", "same");
    a_ints(&t, n, "kernel_shape", 2, (const int64_t[]){1, 1});
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "same"), "[batch,3,h,w]");
    ig_dim known[4] = {D(1), D(3), D(4), D(6)};
    t_input(&t, "xk", INGOT_DTYPE_FLOAT, 4, known);
    t_input(&t, "ik", INGOT_DTYPE_INT64, 4, known);
    n = t_node(&t, "MaxUnpool", 11, "xk,ik", "grown");
    a_ints(&t, n, "kernel_shape", 2, (const int64_t[]){3, 2});
    a_ints(&t, n, "strides", 2, (const int64_t[]){2, 2});
    a_ints(&t, n, "pads", 4, (const int64_t[]){1, 0, 0, 1});
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "grown"), "[1,3,8,11]"); /* (4-1)*2-1+3, (6-1)*2-1+2 */
    t_i64(&t, "os", 4, (const int64_t[]){1, 3, 9, 12});
    n = t_node(&t, "MaxUnpool", 11, "xk,ik,os", "given");
    a_ints(&t, n, "kernel_shape", 2, (const int64_t[]){3, 2});
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "given"), "[1,3,9,12]");
    ig_dim four = D(4);
    t_input(&t, "os_in", INGOT_DTYPE_INT64, 1, &four); /* bound when the context runs */
    n = t_node(&t, "MaxUnpool", 11, "xk,ik,os_in", "later");
    a_ints(&t, n, "kernel_shape", 2, (const int64_t[]){3, 2});
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_EQ(V(&t, "later")->shape.rank, 4);

    /* refusals */
    ig_dim other[4] = {D(1), D(3), D(4), D(5)};
    t_input(&t, "ibad", INGOT_DTYPE_INT64, 4, other);
    n = t_node(&t, "MaxUnpool", 11, "xk,ibad", "y1");
    a_ints(&t, n, "kernel_shape", 2, (const int64_t[]){2, 2});
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "node 'MaxUnpool' (MaxUnpool): indices 'ibad' [1,3,4,5] must have the shape of input");
    t_i64(&t, "os3", 3, (const int64_t[]){1, 3, 9});
    n = t_node(&t, "MaxUnpool", 11, "xk,ik,os3", "y2");
    a_ints(&t, n, "kernel_shape", 2, (const int64_t[]){2, 2});
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "'output_shape' has 3 values but input 'xk' has rank 4");
    t_i64(&t, "osneg", 4, (const int64_t[]){1, 3, -9, 4});
    n = t_node(&t, "MaxUnpool", 11, "xk,ik,osneg", "y3");
    a_ints(&t, n, "kernel_shape", 2, (const int64_t[]){2, 2});
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "value -9 at index 2 is negative");
    n = t_node(&t, "MaxUnpool", 11, "xk,ik", "y4");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_INVALID);
    ASSERT_CONTAINS(t.err.msg, "'kernel_shape' is required");
    t_input(&t, "i32", INGOT_DTYPE_INT32, 4, known);
    n = t_node(&t, "MaxUnpool", 11, "xk,i32", "y5");
    a_ints(&t, n, "kernel_shape", 2, (const int64_t[]){2, 2});
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "int32");
    n = t_node(&t, "MaxUnpool", 11, "xk,ik", "y6");
    a_ints(&t, n, "kernel_shape", 2, (const int64_t[]){5, 5});
    a_ints(&t, n, "pads", 4, (const int64_t[]){5, 5, 5, 5});
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE); /* (4-1)*1-10+5 < 1 */
    ASSERT_CONTAINS(t.err.msg, "is not positive");
    t_free(&t);
}

/* ---------------------------------------------------------------------------------------------- */
/* Col2Im                                                                                          */

typedef struct c2i_case {
    int nsp;
    int64_t img[3], blk[3], s[3], d[3], pads[6]; /* s[0] == 0 / d[0] == 0: attribute absent */
} c2i_case;

static const c2i_case c2i_cases[] = {
    {2, {5, 6}, {2, 3}, {1, 2}, {0}, {1, 0, 0, 1}},
    {1, {9}, {3}, {2}, {2}, {1, 2}},
    {3, {3, 4, 5}, {2, 1, 2}, {1, 2, 2}, {1, 1, 2}, {0, 1, 0, 1, 0, 1}},
    {2, {5, 5}, {1, 5}, {0}, {0}, {0}}, /* ONNX's test_col2im */
};

/* blocks per dim: a Conv's output sizes over the image */
static int64_t c2i_blocks(const c2i_case *c, int i)
{
    int64_t s = c->s[0] ? c->s[i] : 1, d = c->d[0] ? c->d[i] : 1;
    return (c->img[i] + c->pads[i] + c->pads[c->nsp + i] - (d * (c->blk[i] - 1) + 1)) / s + 1;
}

/* The image in double, gathered: position p takes, for every kernel offset k, the block b with
 * b * s - pad + k * d == p along every dim, when there is one. */
static void c2i_reference(const c2i_case *c, int64_t planes, int64_t k_sz, int64_t l, const double *x, double *y)
{
    int n = c->nsp;
    int64_t img_sp = 1, nb[3];
    for (int i = 0; i < n; i++) {
        img_sp *= c->img[i];
        nb[i] = c2i_blocks(c, i);
    }
    for (int64_t pl = 0; pl < planes; pl++)
        for (int64_t q = 0; q < img_sp; q++) {
            int64_t p[3], kk[3];
            unflat(q, n, c->img, p);
            double acc = 0;
            for (int64_t ki = 0; ki < k_sz; ki++) {
                unflat(ki, n, c->blk, kk);
                int64_t li = 0;
                bool hit = true;
                for (int i = 0; i < n; i++) {
                    int64_t s = c->s[0] ? c->s[i] : 1, d = c->d[0] ? c->d[i] : 1;
                    int64_t num = p[i] + c->pads[i] - kk[i] * d;
                    hit &= num >= 0 && num % s == 0 && num / s < nb[i];
                    li = li * nb[i] + (hit ? num / s : 0);
                }
                if (hit) acc += x[(pl * k_sz + ki) * l + li];
            }
            y[pl * img_sp + q] = acc;
        }
}

static ig_node *c2i_node(T *t, const c2i_case *c, const char *x, const char *y)
{
    ig_node *n = t_node(t, "Col2Im", 18, x, y);
    if (c->s[0]) a_ints(t, n, "strides", c->nsp, c->s);
    if (c->d[0]) a_ints(t, n, "dilations", c->nsp, c->d);
    a_ints(t, n, "pads", 2 * c->nsp, c->pads);
    return n;
}

TEST(col2im_matches_definition)
{
    struct ig_pool *pool = ig__pool_create(2);
    const ingot_dtype types[] = {INGOT_DTYPE_FLOAT,    INGOT_DTYPE_FLOAT, INGOT_DTYPE_DOUBLE, INGOT_DTYPE_FLOAT16,
                                 INGOT_DTYPE_BFLOAT16, INGOT_DTYPE_INT8,  INGOT_DTYPE_INT64,  INGOT_DTYPE_BOOL};
    for (size_t ci = 0; ci < sizeof c2i_cases / sizeof c2i_cases[0]; ci++) {
        const c2i_case *c = &c2i_cases[ci];
        int64_t k_sz = 1, l = 1, img_sp = 1;
        for (int i = 0; i < c->nsp; i++) {
            k_sz *= c->blk[i];
            l *= c2i_blocks(c, i);
            img_sp *= c->img[i];
        }
        const int64_t xd[3] = {2, 3 * k_sz, l}, nx = 2 * 3 * k_sz * l, planes = 6;
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            ingot_dtype dt = types[ti];
            bool is_int = ig__dtype_is_int(dt) || dt == INGOT_DTYPE_BOOL;
            char *xb = malloc((size_t)nx * 8);
            double *xv = malloc(sizeof(double) * (size_t)nx), *want = malloc(sizeof(double) * (size_t)planes * img_sp);
            for (int64_t i = 0; i < nx; i++) {
                double v = dt == INGOT_DTYPE_INT8   ? 60 + 70 * urand()
                           : dt == INGOT_DTYPE_BOOL ? urand() > 0.6
                                                    : urand() * 4;
                if (dt == INGOT_DTYPE_INT64) v = floor(v * 1e6);
                ig__elem_set_f64(dt, xb, i, v);
                xv[i] = is_int ? (double)ig__elem_i64(dt, xb, i) : ig__elem_f64(dt, xb, i); /* as stored */
            }
            c2i_reference(c, planes, k_sz, l, xv, want);
            T t;
            t_init(&t);
            t_const(&t, "x", dt, 3, xd, xb);
            t_i64(&t, "img", c->nsp, c->img);
            t_i64(&t, "blk", c->nsp, c->blk);
            ig_node *n = c2i_node(&t, c, "x,img,blk", "y");
            R r;
            ingot_status st = t_run(&t, n, ti == 1 ? pool : NULL, &r);
            if (st != INGOT_OK) fprintf(stderr, "  case %zu %s: %s\n", ci, ingot_dtype_name(dt), t.err.msg);
            ASSERT_EQ(st, INGOT_OK);
            ASSERT_EQ(r.out[0].numel, planes * img_sp);
            ASSERT_EQ(r.out[0].dims[1], 3);
            for (int64_t i = 0; i < planes * img_sp; i++) {
                double w = want[i], got;
                if (dt == INGOT_DTYPE_BOOL) {
                    w = w != 0; /* a sum of bools is their or */
                    got = (double)ig__elem_i64(dt, r.out[0].data, i);
                } else if (is_int) {
                    if (dt == INGOT_DTYPE_INT8) { /* int8 sums wrap */
                        int64_t m = (((int64_t)w % 256) + 256) % 256;
                        w = (double)(m > 127 ? m - 256 : m);
                    }
                    got = (double)ig__elem_i64(dt, r.out[0].data, i);
                } else {
                    got = elem(&r.out[0], i);
                }
                double rtol = dt == INGOT_DTYPE_DOUBLE     ? 1e-14
                              : dt == INGOT_DTYPE_FLOAT    ? 1e-6
                              : dt == INGOT_DTYPE_FLOAT16  ? 1e-3
                              : dt == INGOT_DTYPE_BFLOAT16 ? 8e-3
                                                           : 0;
                if (!close_to(got, w, rtol, rtol ? 1e-6 : 0))
                    TEST_FAIL_("case %zu %s: y[%" PRId64 "] = %.17g, want %.17g", ci, ingot_dtype_name(dt), i, got, w);
            }
            r_free(&r);
            t_free(&t);
            free(xb);
            free(xv);
            free(want);
        }
    }
    ig__pool_destroy(pool);
}

TEST(col2im_shapes_and_refusals)
{
    T t;
    t_init(&t);
    ig_dim xd[3] = {S(&t, "batch"), D(12), D(16)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 3, xd);
    t_i64(&t, "img", 2, (const int64_t[]){5, 5});
    t_i64(&t, "blk", 2, (const int64_t[]){2, 2});
    ig_node *n = t_node(&t, "Col2Im", 18, "x,img,blk", "y");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[batch,3,5,5]");
    ig_dim two = D(2);
    t_input(&t, "img_in", INGOT_DTYPE_INT64, 1, &two); /* bound when the context runs */
    n = t_node(&t, "Col2Im", 18, "x,img_in,blk", "later");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_EQ(V(&t, "later")->shape.rank, 4);
    ASSERT_EQ(V(&t, "later")->shape.d[0].sym, xd[0].sym);

    static const struct {
        int64_t x1, x2;
        int n_img, n_blk;
        int64_t img[3], blk[3];
        const char *attr; /* "strides" (one value) or NULL */
        ingot_status st;
        const char *msg;
    } bad[] = {
        {12,
         15,
         2,
         2,
         {5, 5},
         {2, 2},
         NULL,
         INGOT_ERR_MODEL_SHAPE,
         "input 'xb' has 15 blocks (dim 2), but image_shape [5, 5] and block_shape [2, 2] give 16 (blocks per dim [4, "
         "4])"},
        {10,
         16,
         2,
         2,
         {5, 5},
         {2, 2},
         NULL,
         INGOT_ERR_MODEL_SHAPE,
         "10 channels (dim 1), not a multiple of the block size 4"},
        {12, 16, 2, 1, {5, 5}, {2}, NULL, INGOT_ERR_MODEL_SHAPE, "image_shape has 2 values but block_shape has 1"},
        {12, 16, 2, 2, {5, 5}, {0, 2}, NULL, INGOT_ERR_MODEL_UNSUPPORTED_OP, "block_shape value 0 at index 0"},
        {12, 16, 2, 2, {-5, 5}, {2, 2}, NULL, INGOT_ERR_MODEL_UNSUPPORTED_OP, "image_shape value -5 at index 0"},
        {12,
         16,
         2,
         2,
         {5, 5},
         {2, 2},
         "strides",
         INGOT_ERR_MODEL_SHAPE,
         "attribute 'strides' has 1 values; 2 expected"},
        {12, 16, 2, 2, {2, 2}, {3, 3}, NULL, INGOT_ERR_MODEL_SHAPE, "larger than the padded input"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        T tb;
        t_init(&tb);
        ig_dim bd[3] = {D(1), D(bad[i].x1), D(bad[i].x2)};
        t_input(&tb, "xb", INGOT_DTYPE_FLOAT, 3, bd);
        t_i64(&tb, "img", bad[i].n_img, bad[i].img);
        t_i64(&tb, "blk", bad[i].n_blk, bad[i].blk);
        n = t_node(&tb, "Col2Im", 18, "xb,img,blk", "y");
        if (bad[i].attr) a_ints(&tb, n, bad[i].attr, 1, (const int64_t[]){2});
        ingot_status st = t_infer(&tb, n);
        if (st != bad[i].st) fprintf(stderr, "  case %zu: %s\n", i, tb.err.msg);
        ASSERT_EQ(st, bad[i].st);
        ASSERT_CONTAINS(tb.err.msg, "node 'Col2Im' (Col2Im)");
        ASSERT_CONTAINS(tb.err.msg, bad[i].msg);
        t_free(&tb);
    }
    t_free(&t);
}

TEST_MAIN(RUN(lp_pool_matches_definition); RUN(global_lp_pool_matches_definition); RUN(lp_pool_symbolic_shapes);
          RUN(lp_pool_rejects_bad_nodes); RUN(max_unpool_scatters_at_flat_indices); RUN(max_unpool_batches_and_dtypes);
          RUN(max_unpool_rejects_bad_indices); RUN(max_unpool_shapes_and_refusals); RUN(col2im_matches_definition);
          RUN(col2im_shapes_and_refusals))
