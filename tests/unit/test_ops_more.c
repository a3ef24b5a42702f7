/*
 * test_ops_more.c -- the ops of issue 10 ("op coverage"): the new pointwise unaries (their CPU kernels
 * against the definitions in double, and bit for bit against their Pointwise translation), the new
 * reductions and ArgMin, CumSum, Trilu, ScatterND/ScatterElements/GatherND, Einsum, GroupNormalization,
 * BatchNormalization in training mode, Size, SpaceToDepth and the n-ary integer/bool ops; OneHot,
 * LpNormalization and MeanVarianceNormalization; with the errors that must name the node.
 */
#include "fused_util.h"
#include "ops/ops_internal.h"

/* ---------------------------------------------------------------------------------------------- */
/* pointwise unaries                                                                               */

static const float unary_vals[] = {NAN,   INFINITY, -INFINITY, 0.0f,   -0.0f, 1.0f,  -1.0f, 0.5f,  -0.5f, 2.5f,
                                   -2.5f, 1.5f,     0.25f,     -0.75f, 3.0f,  -3.0f, 0.9f,  -0.9f, 1e-5f, 7.25f};
#define N_UV ((int64_t)(sizeof unary_vals / sizeof unary_vals[0]))

typedef struct unary_case {
    const char *op;
    int opset;
    const char *attr; /* "name=value,name=value" (floats; detect_* ints) or NULL */
} unary_case;

static const unary_case unary_cases[] = {
    {"Sin", 7, NULL},
    {"Cos", 7, NULL},
    {"Tan", 7, NULL},
    {"Asin", 7, NULL},
    {"Acos", 7, NULL},
    {"Atan", 7, NULL},
    {"Sinh", 9, NULL},
    {"Cosh", 9, NULL},
    {"Asinh", 9, NULL},
    {"Acosh", 9, NULL},
    {"Atanh", 9, NULL},
    {"Floor", 13, NULL},
    {"Ceil", 13, NULL},
    {"Round", 11, NULL},
    {"Sign", 13, NULL},
    {"Elu", 6, "alpha=0.5"},
    {"Elu", 6, NULL},
    {"Selu", 6, NULL},
    {"Selu", 6, "alpha=2,gamma=0.5"},
    {"Celu", 12, "alpha=1.5"},
    {"Softsign", 1, NULL},
    {"ThresholdedRelu", 10, "alpha=0.3"},
    {"Shrink", 9, "bias=0.2,lambd=0.7"},
    {"IsInf", 10, NULL},
    {"IsInf", 10, "detect_negative=0"},
    {"IsInf", 10, "detect_positive=0"},
};

static void set_attrs(ig_node *n, const char *spec)
{
    static char names[16][32];
    static int k;
    if (!spec) return;
    const char *p = spec;
    while (*p) {
        char *nm = names[k++ % 16];
        int i = 0;
        while (*p && *p != '=') nm[i++] = *p++;
        nm[i] = 0;
        double v = strtod(p + 1, (char **)&p);
        if (!strncmp(nm, "detect", 6))
            a_int(n, nm, (int64_t)v);
        else
            a_float(n, nm, (float)v);
        if (*p == ',') p++;
    }
}

/* The node's kernel on x (dtype dt), then the node translated into a program and interpreted: the
 * two agree bit for bit (fp32), and both are within a few ulp of the code's definition in double. */
TEST(unary_kernels_match_definition_and_program)
{
    for (size_t c = 0; c < sizeof unary_cases / sizeof unary_cases[0]; c++) {
        const unary_case *uc = &unary_cases[c];
        for (int dt = 0; dt < 2; dt++) { /* float32, float64 */
            T t;
            t_init(&t);
            int64_t d = N_UV;
            if (dt == 0) {
                t_f32(&t, "x", 1, &d, unary_vals);
            } else {
                double xd[N_UV];
                for (int64_t i = 0; i < N_UV; i++) xd[i] = unary_vals[i];
                t_const(&t, "x", INGOT_DTYPE_DOUBLE, 1, &d, xd);
            }
            ig_node *n = t_node(&t, uc->op, uc->opset, "x", "y");
            set_attrs(n, uc->attr);
            R r;
            ingot_status st = t_run(&t, n, NULL, &r);
            if (st != INGOT_OK) fprintf(stderr, "  %s: %s\n", uc->op, t.err.msg);
            ASSERT_EQ(st, INGOT_OK);
            bool is_bool = r.out[0].dtype == INGOT_DTYPE_BOOL;
            ASSERT_EQ(is_bool, !strcmp(uc->op, "IsInf"));
            /* translate: one instruction of the code, whose k/k2 carry the attributes */
            set_op(n);
            ig_pw_prog p;
            ig__pw_init(&p, 1, false);
            int16_t in_ref[1] = {0}, res;
            ig_err e = {0};
            st = ig__pw_append_node(&t.g, n, in_ref, &p, &res, &e);
            if (st != INGOT_OK) fprintf(stderr, "  %s: %s\n", uc->op, e.msg);
            ASSERT_EQ(st, INGOT_OK);
            ASSERT_EQ(p.n_ops, 1);
            ASSERT(ig__pw_node_ok(&t.g, n, false) == (dt == 0));
            const ig_pw_inst *o = &p.op[0];
            for (int64_t i = 0; i < N_UV; i++) {
                double want = ref_code(o->code, unary_vals[i], 0, 0, o->k, o->k2);
                double got = elem(&r.out[0], i);
                double tol = dt ? 1e-13 : 4e-7;
                if (dt == 0) want = (float)want;
                if (!close_to(got, want, tol, 1e-30) && !(want == 0 && got == 0))
                    TEST_FAIL_("%s(%s) x=%g: got %.17g, want %.17g", uc->op, uc->attr ? uc->attr : "", unary_vals[i],
                               got, want);
            }
            if (dt == 0) { /* the interpreter on the same input: bit for bit */
                ig_tensor out = r.out[0];
                out.data = ig__malloc_aligned(64 + (size_t)N_UV * 4, 64);
                const ig_tensor *ins[1] = {&r.in[0]};
                ig__pw_apply(NULL, &p, ins, 1, &out);
                ASSERT(!memcmp(out.data, r.out[0].data, (size_t)N_UV * ingot_dtype_size(out.dtype)));
                ig__free_aligned(out.data);
            }
            r_free(&r);
            t_free(&t);
        }
    }
}

TEST(unary_fp16_and_sign_on_integers)
{
    T t;
    t_init(&t);
    int64_t d = N_UV;
    float rounded[N_UV];
    uint16_t *h = to_f16(unary_vals, N_UV, rounded);
    t_const(&t, "x", INGOT_DTYPE_FLOAT16, 1, &d, h);
    ig_node *n = t_node(&t, "Sin", 7, "x", "y");
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    for (int64_t i = 0; i < N_UV; i++) {
        double want = ig__f16_to_f32(ig__f32_to_f16(sinf(rounded[i])));
        ASSERT(close_to(elem(&r.out[0], i), want, 0, 0));
    }
    r_free(&r);
    free(h);
    static const int8_t xi[] = {-128, -3, -1, 0, 1, 5, 127};
    static const uint32_t xu[] = {0, 1, 4000000000u};
    int64_t di = 7, du = 3;
    t_const(&t, "i", INGOT_DTYPE_INT8, 1, &di, xi);
    t_const(&t, "u", INGOT_DTYPE_UINT32, 1, &du, xu);
    n = t_node(&t, "Sign", 13, "i", "si");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    static const int8_t wi[] = {-1, -1, -1, 0, 1, 1, 1};
    ASSERT(!memcmp(r.out[0].data, wi, 7));
    r_free(&r);
    n = t_node(&t, "Sign", 13, "u", "su");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    static const uint32_t wu[] = {0, 1, 1};
    ASSERT(!memcmp(r.out[0].data, wu, 12));
    r_free(&r);
    /* Sign is exact in int64 programs; the trigonometric ops are not allowed there */
    set_op(n);
    ASSERT(ig__pw_node_ok(&t.g, n, true));
    n = t_node(&t, "Sin", 7, "i", "sin_i");
    set_op(n);
    ASSERT(!ig__pw_node_ok(&t.g, n, true));
    t_free(&t);
}

TEST(unary_errors_name_the_node)
{
    T t;
    t_init(&t);
    int64_t d = 2;
    float x[2] = {1, 2};
    t_f32(&t, "x", 1, &d, x);
    ig_node *n = t_node(&t, "Celu", 12, "x", "y");
    n->name = "my_celu";
    a_float(n, "alpha", 0.0f);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "my_celu");
    ASSERT_CONTAINS(t.err.msg, "alpha");
    n = t_node(&t, "IsInf", 10, "x", "z");
    n->name = "my_isinf";
    a_int(n, "detect_positive", 2);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "my_isinf");
    int64_t xi[2] = {1, 2};
    t_const(&t, "xi", INGOT_DTYPE_INT64, 1, &d, xi);
    n = t_node(&t, "Sin", 7, "xi", "w");
    n->name = "int_sin";
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "int_sin");
    t_free(&t);
}

/* ---------------------------------------------------------------------------------------------- */
/* reductions                                                                                      */

static ig_node *reduce_node(T *t, const char *op, const char *x, int64_t axis, int keep, const char *out)
{
    char axes_name[64];
    snprintf(axes_name, sizeof axes_name, "%s_axes", out);
    char *an = ig__arena_strdup(&t->g.arena, axes_name);
    t_i64(t, an, 1, &axis);
    char ins[128];
    snprintf(ins, sizeof ins, "%s,%s", x, an);
    ig_node *n = t_node(t, op, 18, ins, out);
    a_int(n, "keepdims", keep);
    return n;
}

TEST(reduce_more_float)
{
    T t;
    t_init(&t);
    int64_t d[2] = {2, 3};
    const float x[6] = {1, -2, 3, 100, 101, 99}; /* row 1: LogSumExp of large values must not overflow */
    t_f32(&t, "x", 2, d, x);
    struct {
        const char *op;
        double want[2];
    } cases[] = {
        {"ReduceL1", {6, 300}},
        {"ReduceL2", {sqrt(14.0), sqrt(100.0 * 100 + 101.0 * 101 + 99.0 * 99)}},
        {"ReduceSumSquare", {14, 100.0 * 100 + 101.0 * 101 + 99.0 * 99}},
        {"ReduceLogSum", {log(2.0), log(300.0)}},
        {"ReduceLogSumExp", {log(exp(1.0) + exp(-2.0) + exp(3.0)), 101 + log(exp(-1.0) + 1 + exp(-2.0))}},
        {"ReduceProd", {-6, 100.0 * 101 * 99}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ig_node *n = reduce_node(&t, cases[c].op, "x", -1, 0, cases[c].op);
        R r;
        ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
        ASSERT_STREQ(shp(&t, cases[c].op), "[2]");
        for (int i = 0; i < 2; i++)
            if (!close_to(elem(&r.out[0], i), (float)cases[c].want[i], 1e-6, 0))
                TEST_FAIL_("%s row %d: got %.9g want %.9g", cases[c].op, i, elem(&r.out[0], i), cases[c].want[i]);
        r_free(&r);
    }
    /* an empty reduction: the identity of each (0, 0, -inf, -inf, 1) */
    int64_t de[2] = {2, 0};
    t_f32(&t, "e", 2, de, NULL);
    const char *ops[] = {"ReduceL1", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ReduceProd"};
    const double ids[] = {0, 0, -INFINITY, -INFINITY, 1};
    for (int k = 0; k < 5; k++) {
        char out[64];
        snprintf(out, sizeof out, "e_%s", ops[k]);
        ig_node *n = reduce_node(&t, ops[k], "e", 1, 1, ig__arena_strdup(&t.g.arena, out));
        R r;
        ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
        ASSERT(close_to(elem(&r.out[0], 0), ids[k], 0, 0));
        r_free(&r);
    }
    t_free(&t);
}

TEST(reduce_more_int_and_argmin)
{
    T t;
    t_init(&t);
    int64_t d[2] = {2, 3};
    const int32_t x[6] = {-3, 4, 2, 5, 5, -1};
    t_const(&t, "x", INGOT_DTYPE_INT32, 2, d, x);
    ig_node *n = reduce_node(&t, "ReduceL1", "x", 1, 0, "l1");
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(((int32_t *)r.out[0].data)[0], 9);
    ASSERT_EQ(((int32_t *)r.out[0].data)[1], 11);
    r_free(&r);
    n = reduce_node(&t, "ReduceProd", "x", 0, 1, "prod");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "prod"), "[1,3]");
    ASSERT_EQ(((int32_t *)r.out[0].data)[0], -15);
    ASSERT_EQ(((int32_t *)r.out[0].data)[2], -2);
    r_free(&r);
    n = reduce_node(&t, "ReduceL2", "x", 1, 0, "l2");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(((int32_t *)r.out[0].data)[0], 5); /* sqrt(29) truncated */
    r_free(&r);
    /* ArgMin: ties to the first, or the last with select_last_index; NaN wins */
    n = t_node(&t, "ArgMin", 13, "x", "am");
    a_int(n, "axis", 1);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(((int64_t *)r.out[0].data)[0], 0);
    ASSERT_EQ(((int64_t *)r.out[0].data)[1], 2);
    r_free(&r);
    const float f[6] = {2, 1, 1, 3, NAN, -5};
    t_f32(&t, "f", 2, d, f);
    n = t_node(&t, "ArgMin", 13, "f", "amf");
    a_int(n, "axis", 1);
    a_int(n, "select_last_index", 1);
    a_int(n, "keepdims", 0);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "amf"), "[2]");
    ASSERT_EQ(((int64_t *)r.out[0].data)[0], 2);
    ASSERT_EQ(((int64_t *)r.out[0].data)[1], 1);
    r_free(&r);
    t_free(&t);
}

/* ---------------------------------------------------------------------------------------------- */
/* CumSum, Trilu                                                                                   */

TEST(cumsum_modes)
{
    T t;
    t_init(&t);
    int64_t d[2] = {2, 3};
    const float x[6] = {1, 2, 3, 4, 5, 6};
    t_f32(&t, "x", 2, d, x);
    int32_t ax = -1;
    t_const(&t, "ax", INGOT_DTYPE_INT32, 0, NULL, &ax);
    static const float want[4][6] = {
        {1, 3, 6, 4, 9, 15}, {0, 1, 3, 0, 4, 9}, {6, 5, 3, 15, 11, 6}, {5, 3, 0, 11, 6, 0}};
    for (int m = 0; m < 4; m++) {
        char out[8];
        snprintf(out, sizeof out, "y%d", m);
        ig_node *n = t_node(&t, "CumSum", 14, "x,ax", ig__arena_strdup(&t.g.arena, out));
        a_int(n, "exclusive", m & 1);
        a_int(n, "reverse", m >> 1);
        R r;
        ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
        ASSERT(!memcmp(r.out[0].data, want[m], sizeof want[m]));
        r_free(&r);
    }
    /* int64 along axis 0 (RoBERTa's position ids: cumsum of a mask) */
    const int64_t xi[6] = {1, 1, 0, 1, 0, 1};
    t_const(&t, "xi", INGOT_DTYPE_INT64, 2, d, xi);
    int64_t a0 = 0;
    t_const(&t, "a0", INGOT_DTYPE_INT64, 1, (int64_t[]){1}, &a0);
    ig_node *n = t_node(&t, "CumSum", 14, "xi,a0", "yi");
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    static const int64_t wi[6] = {1, 1, 0, 2, 1, 1};
    ASSERT(!memcmp(r.out[0].data, wi, sizeof wi));
    r_free(&r);
    /* an axis out of range fails naming the node */
    int64_t bad = 2;
    t_const(&t, "bad", INGOT_DTYPE_INT64, 0, NULL, &bad);
    n = t_node(&t, "CumSum", 14, "x,bad", "yb");
    n->name = "cs_bad";
    ASSERT(t_infer(&t, n) != INGOT_OK);
    ASSERT_CONTAINS(t.err.msg, "cs_bad");
    t_free(&t);
}

TEST(trilu_upper_lower)
{
    T t;
    t_init(&t);
    int64_t d[3] = {2, 3, 4};
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = (float)(i + 1);
    t_f32(&t, "x", 3, d, x);
    for (int up = 0; up < 2; up++)
        for (int64_t k = -1; k <= 2; k++) {
            char kn[16], out[16];
            snprintf(kn, sizeof kn, "k%d%d", up, (int)k + 1);
            snprintf(out, sizeof out, "y%d%d", up, (int)k + 1);
            t_scalar_i64(&t, ig__arena_strdup(&t.g.arena, kn), k);
            char ins[40];
            snprintf(ins, sizeof ins, "x,%s", kn);
            ig_node *n = t_node(&t, "Trilu", 14, ins, ig__arena_strdup(&t.g.arena, out));
            a_int(n, "upper", up);
            R r;
            ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
            for (int b = 0; b < 2; b++)
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 4; j++) {
                        int e = (b * 3 + i) * 4 + j;
                        bool keep = up ? j - i >= k : j - i <= k;
                        ASSERT_EQ(((float *)r.out[0].data)[e], keep ? x[e] : 0.0f);
                    }
            r_free(&r);
        }
    t_free(&t);
}

/* ---------------------------------------------------------------------------------------------- */
/* scatter and gather                                                                              */

TEST(scatter_nd_reductions_and_bounds)
{
    T t;
    t_init(&t);
    int64_t d[2] = {4, 2}, di[2] = {3, 1}, du[2] = {3, 2};
    const float x[8] = {1, 1, 1, 1, 1, 1, 1, 1}, u[6] = {2, 3, 4, 5, 6, 7};
    const int64_t idx[3] = {1, -1, 1}; /* row 1 twice, and row 3 (counted from the end) */
    t_f32(&t, "x", 2, d, x);
    t_const(&t, "i", INGOT_DTYPE_INT64, 2, di, idx);
    t_f32(&t, "u", 2, du, u);
    const char *red[] = {"none", "add", "mul"};
    static const float want[3][8] = {{1, 1, 6, 7, 1, 1, 4, 5}, {1, 1, 9, 11, 1, 1, 5, 6}, {1, 1, 12, 21, 1, 1, 4, 5}};
    for (int k = 0; k < 3; k++) {
        char out[8];
        snprintf(out, sizeof out, "y%d", k);
        ig_node *n = t_node(&t, "ScatterND", 18, "x,i,u", ig__arena_strdup(&t.g.arena, out));
        a_str(n, "reduction", red[k]);
        R r;
        ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
        for (int e = 0; e < 8; e++) ASSERT_EQ(((float *)r.out[0].data)[e], want[k][e]);
        r_free(&r);
    }
    const int64_t oob[3] = {0, 4, 1};
    t_const(&t, "oob", INGOT_DTYPE_INT64, 2, di, oob);
    ig_node *n = t_node(&t, "ScatterND", 18, "x,oob,u", "yo");
    n->name = "sc_oob";
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(t.err.msg, "sc_oob");
    ASSERT_CONTAINS(t.err.msg, "index 4");
    r_free(&r);
    /* reduction max needs opset 18 */
    n = t_node(&t, "ScatterND", 16, "x,i,u", "ym");
    a_str(n, "reduction", "max");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    t_free(&t);
}

TEST(scatter_elements_and_gather_nd)
{
    T t;
    t_init(&t);
    int64_t d[2] = {2, 3}, di[2] = {2, 2};
    const float x[6] = {1, 2, 3, 4, 5, 6}, u[4] = {10, 20, 30, 40};
    const int32_t idx[4] = {2, 0, -1, 2};
    t_f32(&t, "x", 2, d, x);
    t_const(&t, "i", INGOT_DTYPE_INT32, 2, di, idx);
    t_f32(&t, "u", 2, di, u);
    ig_node *n = t_node(&t, "ScatterElements", 18, "x,i,u", "y");
    a_int(n, "axis", 1);
    a_str(n, "reduction", "mul");
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    static const float want[6] = {20, 2, 30, 4, 5, 6 * 30 * 40};
    ASSERT(!memcmp(r.out[0].data, want, sizeof want));
    r_free(&r);
    /* GatherND with batch_dims 1: data [2, 3, 2], indices [2, 2, 1] -> [2, 2, 2] */
    int64_t dd[3] = {2, 3, 2}, dj[3] = {2, 2, 1};
    float data[12];
    for (int i = 0; i < 12; i++) data[i] = (float)i;
    const int64_t j[4] = {2, 0, 1, -1};
    t_f32(&t, "data", 3, dd, data);
    t_const(&t, "j", INGOT_DTYPE_INT64, 3, dj, j);
    n = t_node(&t, "GatherND", 13, "data,j", "g");
    a_int(n, "batch_dims", 1);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "g"), "[2,2,2]");
    static const float wg[8] = {4, 5, 0, 1, 8, 9, 10, 11};
    ASSERT(!memcmp(r.out[0].data, wg, sizeof wg));
    r_free(&r);
    /* symbolic leading dims survive inference */
    ig_dim sd[3] = {S(&t, "batch"), D(7), D(2)};
    t_input(&t, "xs", INGOT_DTYPE_FLOAT, 3, sd);
    int64_t dk[2] = {5, 2};
    const int64_t k0[10] = {0};
    t_const(&t, "k", INGOT_DTYPE_INT64, 2, dk, k0);
    n = t_node(&t, "GatherND", 13, "xs,k", "gs");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "gs"), "[5,2]");
    t_free(&t);
}

/* ---------------------------------------------------------------------------------------------- */
/* Einsum                                                                                          */

TEST(einsum_forms)
{
    T t;
    t_init(&t);
    int64_t da[4] = {2, 3, 4, 5}, db[4] = {2, 3, 6, 5};
    float *a = rand_f32(120, 1), *b = rand_f32(180, 1);
    t_f32(&t, "a", 4, da, a);
    t_f32(&t, "b", 4, db, b);
    ig_node *n = t_node(&t, "Einsum", 12, "a,b", "s");
    a_str(n, "equation", "bhqd, bhkd -> bhqk");
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "s"), "[2,3,4,6]");
    for (int bh = 0; bh < 6; bh++)
        for (int q = 0; q < 4; q++)
            for (int k = 0; k < 6; k++) {
                double s = 0;
                for (int d = 0; d < 5; d++) s += (double)a[(bh * 4 + q) * 5 + d] * b[(bh * 6 + k) * 5 + d];
                ASSERT_NEAR(((float *)r.out[0].data)[(bh * 4 + q) * 6 + k], s, 1e-5);
            }
    r_free(&r);
    /* ellipsis matmul with broadcast batch, implicit output of a transpose, trace, sum of everything */
    int64_t dm[3] = {1, 4, 5}, dn[3] = {3, 5, 2};
    t_f32(&t, "m", 3, dm, a);
    t_f32(&t, "n", 3, dn, b);
    n = t_node(&t, "Einsum", 12, "m,n", "mm");
    a_str(n, "equation", "...ij,...jk");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "mm"), "[3,4,2]");
    for (int bb = 0; bb < 3; bb++)
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 2; k++) {
                double s = 0;
                for (int j = 0; j < 5; j++) s += (double)a[i * 5 + j] * b[(bb * 5 + j) * 2 + k];
                ASSERT_NEAR(((float *)r.out[0].data)[(bb * 4 + i) * 2 + k], s, 1e-5);
            }
    r_free(&r);
    int64_t dsq[2] = {3, 3};
    t_f32(&t, "sq", 2, dsq, a);
    n = t_node(&t, "Einsum", 12, "sq", "tr");
    a_str(n, "equation", "ii->");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "tr"), "[]");
    ASSERT_NEAR(((float *)r.out[0].data)[0], (double)a[0] + a[4] + a[8], 1e-6);
    r_free(&r);
    n = t_node(&t, "Einsum", 12, "sq", "tp");
    a_str(n, "equation", "ji"); /* implicit: "ij" in ASCII order, a transpose */
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) ASSERT_EQ(((float *)r.out[0].data)[i * 3 + j], a[j * 3 + i]);
    r_free(&r);
    /* errors name the node */
    n = t_node(&t, "Einsum", 12, "a,b", "bad");
    n->name = "es_bad";
    a_str(n, "equation", "bhqd,bhkd->bhqz");
    ASSERT(t_infer(&t, n) != INGOT_OK);
    ASSERT_CONTAINS(t.err.msg, "es_bad");
    n = t_node(&t, "Einsum", 12, "a,b", "bad2");
    a_str(n, "equation", "bhq,bhkd->bhqk");
    ASSERT(t_infer(&t, n) != INGOT_OK);
    ASSERT_CONTAINS(t.err.msg, "rank");
    free(a);
    free(b);
    t_free(&t);
}

/* ---------------------------------------------------------------------------------------------- */
/* normalisation                                                                                   */

TEST(group_normalization_21_and_18)
{
    for (int opset = 18; opset <= 21; opset += 3) {
        T t;
        t_init(&t);
        int64_t d[4] = {2, 4, 3, 2}, G = 2, C = 4, np = opset == 21 ? C : G;
        float *x = rand_f32(48, 3), sc[4] = {0.5f, 2, -1, 1.5f}, bi[4] = {0.1f, -0.2f, 0.3f, 0};
        t_f32(&t, "x", 4, d, x);
        t_f32(&t, "s", 1, &np, sc);
        t_f32(&t, "b", 1, &np, bi);
        ig_node *n = t_node(&t, "GroupNormalization", opset, "x,s,b", "y");
        a_int(n, "num_groups", G);
        a_float(n, "epsilon", 1e-3f);
        R r;
        ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
        for (int b = 0; b < 2; b++)
            for (int g = 0; g < G; g++) {
                const float *p = x + (b * C + g * 2) * 6;
                double m = 0, v = 0;
                for (int i = 0; i < 12; i++) m += p[i] / 12.0;
                for (int i = 0; i < 12; i++) v += (p[i] - m) * (p[i] - m) / 12.0;
                for (int i = 0; i < 12; i++) {
                    int c = g * 2 + i / 6, k = opset == 21 ? c : g;
                    double want = (p[i] - m) / sqrt(v + 1e-3) * sc[k] + bi[k];
                    ASSERT_NEAR(((float *)r.out[0].data)[(b * C + g * 2) * 6 + i], want, 1e-5);
                }
            }
        r_free(&r);
        n = t_node(&t, "GroupNormalization", opset, "x,s,b", "z");
        n->name = "gn_bad";
        a_int(n, "num_groups", 3);
        ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
        ASSERT_CONTAINS(t.err.msg, "gn_bad");
        free(x);
        t_free(&t);
    }
}

/* The training-mode kernel BatchNormalization calls: batch statistics, running statistics. */
TEST(batchnorm_training_kernel)
{
    T t;
    t_init(&t);
    int64_t d[3] = {2, 3, 4}, c = 3;
    float *x = rand_f32(24, 2), sc[3] = {1, 2, 0.5f}, bi[3] = {0, 1, -1}, mean[3] = {0.5f, 0, 1}, var[3] = {1, 2, 3};
    t_f32(&t, "x", 3, d, x);
    t_f32(&t, "s", 1, &c, sc);
    t_f32(&t, "b", 1, &c, bi);
    t_f32(&t, "m", 1, &c, mean);
    t_f32(&t, "v", 1, &c, var);
    ig_node *n = t_node(&t, "BatchNormalization", 15, "x,s,b,m,v", "y,rm,rv");
    n->name = "bn_train";
    a_int(n, "training_mode", 1);
    a_float(n, "momentum", 0.8f);
    ig_infer cx = {&t.g, n, &t.err, &t.fold};
    ASSERT_EQ(ig__bn_training_infer(&cx), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[2,3,4]");
    ASSERT_STREQ(shp(&t, "rm"), "[3]");
    R r;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < 5; i++) {
        tensor_from_value(&r.in[i], &t.g.values[n->inputs[i]]);
        memcpy(r.in[i].data, t.g.values[n->inputs[i]].c.data, t.g.values[n->inputs[i]].c.n_bytes);
        r.inp[i] = &r.in[i];
    }
    for (int i = 0; i < 3; i++) {
        tensor_from_value(&r.out[i], &t.g.values[n->outputs[i]]);
        r.outp[i] = &r.out[i];
    }
    ig_exec ex = {.g = &t.g, .node = n, .n_in = 5, .n_out = 3, .in = r.inp, .out = r.outp, .err = &t.err};
    ASSERT_EQ(ig__bn_training_cpu(&ex), INGOT_OK);
    for (int ch = 0; ch < 3; ch++) {
        double m = 0, v = 0;
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 4; i++) m += x[(b * 3 + ch) * 4 + i] / 8.0;
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 4; i++) v += (x[(b * 3 + ch) * 4 + i] - m) * (x[(b * 3 + ch) * 4 + i] - m) / 8.0;
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 4; i++) {
                int e = (b * 3 + ch) * 4 + i;
                ASSERT_NEAR(((float *)r.out[0].data)[e], (x[e] - m) / sqrt(v + 1e-5) * sc[ch] + bi[ch], 1e-5);
            }
        ASSERT_NEAR(((float *)r.out[1].data)[ch], mean[ch] * 0.8 + m * 0.2, 1e-6);
        ASSERT_NEAR(((float *)r.out[2].data)[ch], var[ch] * 0.8 + v * 0.2, 1e-6);
    }
    r_free(&r);
    free(x);
    t_free(&t);
}

/* ---------------------------------------------------------------------------------------------- */
/* Size, SpaceToDepth, Mean, Xor, bitwise ops, CastLike                                            */

TEST(size_space_to_depth_nary)
{
    T t;
    t_init(&t);
    ig_dim sd[3] = {S(&t, "batch"), D(3), D(4)};
    t_input(&t, "xs", INGOT_DTYPE_FLOAT, 3, sd);
    ig_node *n = t_node(&t, "Size", 13, "xs", "sz");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ig_value *sz = V(&t, "sz");
    ASSERT_EQ(sz->shape.rank, 0);
    ASSERT_EQ(sz->n_sym, 1);
    ASSERT_EQ(sz->sym[0].n, 12); /* 12 * batch */
    ASSERT(!ig__dim_known(sz->sym[0]));
    /* SpaceToDepth then DepthToSpace (DCR) is the identity */
    int64_t d[4] = {1, 2, 4, 6};
    float x[48];
    for (int i = 0; i < 48; i++) x[i] = (float)i;
    t_f32(&t, "x", 4, d, x);
    n = t_node(&t, "SpaceToDepth", 13, "x", "s2d");
    a_int(n, "blocksize", 2);
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "s2d"), "[1,8,2,3]");
    ASSERT_EQ(((float *)r.out[0].data)[1], 2.0f);     /* y[0,0,0,1] = x[0,0,0,2] */
    ASSERT_EQ(((float *)r.out[0].data)[2 * 6], 1.0f); /* channel 2 = (bh 0, bw 1), c 0 */
    ASSERT_EQ(((float *)r.out[0].data)[4 * 6], 6.0f); /* channel 4 = (bh 1, bw 0), c 0 */
    r_free(&r);
    /* Mean broadcasts; Xor; signed BitShift (opset 28 semantics) */
    int64_t d2[2] = {2, 2}, d1 = 2;
    const float a[4] = {1, 2, 3, 4}, b[2] = {10, 20};
    t_f32(&t, "a", 2, d2, a);
    t_f32(&t, "b", 1, &d1, b);
    n = t_node(&t, "Mean", 13, "a,b,a", "mean");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    static const float wm[4] = {4, 8, 16.0f / 3, 28.0f / 3};
    for (int i = 0; i < 4; i++) ASSERT_NEAR(((float *)r.out[0].data)[i], wm[i], 1e-6);
    r_free(&r);
    const uint8_t p[4] = {0, 1, 1, 0}, q[2] = {1, 0};
    t_const(&t, "p", INGOT_DTYPE_BOOL, 2, d2, p);
    t_const(&t, "q", INGOT_DTYPE_BOOL, 1, &d1, q);
    n = t_node(&t, "Xor", 7, "p,q", "xor");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    static const uint8_t wx[4] = {1, 1, 0, 0};
    ASSERT(!memcmp(r.out[0].data, wx, 4));
    r_free(&r);
    const int8_t sx[4] = {-16, 16, -1, 64}, sy[4] = {2, 2, 9, -1};
    t_const(&t, "sx", INGOT_DTYPE_INT8, 1, (int64_t[]){4}, sx);
    t_const(&t, "sy", INGOT_DTYPE_INT8, 1, (int64_t[]){4}, sy);
    n = t_node(&t, "BitShift", 28, "sx,sy", "shr");
    a_str(n, "direction", "RIGHT");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    static const int8_t wr[4] = {-4, 4, -1, 0};
    ASSERT(!memcmp(r.out[0].data, wr, 4));
    r_free(&r);
    n = t_node(&t, "BitShift", 11, "sx,sy", "sh_old");
    n->name = "old_shift";
    a_str(n, "direction", "LEFT");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "old_shift");
    /* CastLike takes the second input's dtype */
    n = t_node(&t, "CastLike", 15, "a,sx", "cl");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(r.out[0].dtype, INGOT_DTYPE_INT8);
    ASSERT_EQ(((int8_t *)r.out[0].data)[3], 4);
    r_free(&r);
    t_free(&t);
}

/* ---------------------------------------------------------------------------------------------- */
/* OneHot, LpNormalization, MeanVarianceNormalization                                              */

TEST(onehot_axes_negative_and_out_of_range)
{
    T t;
    t_init(&t);
    int64_t di[2] = {2, 2}, two = 2;
    int64_t ind[4] = {0, -1, 3, 5};
    int32_t vals[2] = {2, 7}; /* off, on */
    float depth = 4.0f;
    t_const(&t, "ind", INGOT_DTYPE_INT64, 2, di, ind);
    t_const(&t, "depth", INGOT_DTYPE_FLOAT, 0, NULL, &depth);
    t_const(&t, "vals", INGOT_DTYPE_INT32, 1, &two, vals);
    R r;
    ig_node *n = t_node(&t, "OneHot", 11, "ind,depth,vals", "y");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[2,2,4]");
    ASSERT_EQ(r.out[0].dtype, INGOT_DTYPE_INT32);
    /* 0 -> first, -1 -> last (counted from the end of depth), 3 -> last, 5 -> all off */
    const int32_t w[16] = {7, 2, 2, 2, 2, 2, 2, 7, 2, 2, 2, 7, 2, 2, 2, 2};
    ASSERT(!memcmp(r.out[0].data, w, sizeof w));
    r_free(&r);
    /* the new axis first: y[d, i, j] */
    n = t_node(&t, "OneHot", 11, "ind,depth,vals", "y0");
    a_int(n, "axis", -3);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y0"), "[4,2,2]");
    for (int d = 0; d < 4; d++)
        for (int i = 0; i < 4; i++) ASSERT_EQ(((int32_t *)r.out[0].data)[d * 4 + i], w[i * 4 + d]);
    r_free(&r);
    /* opset 9: negative indices are out of range */
    n = t_node(&t, "OneHot", 9, "ind,depth,vals", "y9");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    for (int k = 4; k < 8; k++) ASSERT_EQ(((int32_t *)r.out[0].data)[k], 2);
    r_free(&r);
    /* a symbolic batch of indices keeps its name; a run-time depth gives an unknown dim */
    ig_dim bd[1] = {S(&t, "batch")};
    t_input(&t, "sind", INGOT_DTYPE_INT32, 1, bd);
    n = t_node(&t, "OneHot", 11, "sind,depth,vals", "ys");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "ys"), "[batch,4]");
    ig_dim one[1] = {D(1)};
    t_input(&t, "din", INGOT_DTYPE_INT64, 1, one);
    n = t_node(&t, "OneHot", 11, "sind,din,vals", "yd");
    a_int(n, "axis", 0);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT(!ig__dim_known(V(&t, "yd")->shape.d[0]));
    /* errors */
    int64_t three = 3;
    int32_t v3[3] = {0, 1, 2};
    t_const(&t, "v3", INGOT_DTYPE_INT32, 1, &three, v3);
    n = t_node(&t, "OneHot", 11, "ind,depth,v3", "ye");
    n->name = "oh_bad";
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "oh_bad");
    ASSERT_CONTAINS(t.err.msg, "[off_value, on_value]");
    float neg = -2;
    t_const(&t, "dneg", INGOT_DTYPE_FLOAT, 0, NULL, &neg);
    n = t_node(&t, "OneHot", 11, "ind,dneg,vals", "ye2");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "depth = -2");
    n = t_node(&t, "OneHot", 11, "ind,depth,vals", "ye3");
    a_int(n, "axis", 3);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    t_free(&t);
}

TEST(lp_normalization_p1_p2_zero)
{
    T t;
    t_init(&t);
    int64_t d[2] = {2, 2};
    float x[4] = {3, -4, 0, 0};
    t_f32(&t, "x", 2, d, x);
    R r;
    ig_node *n = t_node(&t, "LpNormalization", 1, "x", "y2");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    const float w2[4] = {0.6f, -0.8f, 0, 0}; /* a zero norm gives 0, not NaN */
    for (int i = 0; i < 4; i++) ASSERT_NEAR(elem(&r.out[0], i), w2[i], 1e-7);
    r_free(&r);
    n = t_node(&t, "LpNormalization", 1, "x", "y1");
    a_int(n, "p", 1);
    a_int(n, "axis", 0);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    const float w1[4] = {1, -1, 0, 0};
    for (int i = 0; i < 4; i++) ASSERT_EQ(elem(&r.out[0], i), w1[i]);
    r_free(&r);
    double xd[4] = {1, 2, 2, 4};
    t_const(&t, "xd", INGOT_DTYPE_DOUBLE, 2, d, xd);
    n = t_node(&t, "LpNormalization", 1, "xd", "yd");
    a_int(n, "p", 1);
    a_int(n, "axis", -1);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(elem(&r.out[0], 0), 1.0 / 3);
    ASSERT_EQ(elem(&r.out[0], 3), 4.0 / 6);
    r_free(&r);
    n = t_node(&t, "LpNormalization", 1, "x", "y3");
    n->name = "lp_bad";
    a_int(n, "p", 3);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "lp_bad");
    ASSERT_CONTAINS(t.err.msg, "'p' = 3");
    n = t_node(&t, "LpNormalization", 1, "x", "y4");
    a_int(n, "axis", 2);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    t_free(&t);
}

TEST(mvn_default_axes_and_errors)
{
    T t;
    t_init(&t);
    /* default axes [0, 2, 3]: statistics per channel over N, H, W */
    int64_t d[4] = {2, 2, 1, 2};
    float x[8] = {1, 3, 5, 5, 5, 7, 1, 1}; /* channel 0: 1 3 5 7; channel 1: 5 5 1 1 */
    t_f32(&t, "x", 4, d, x);
    R r;
    ig_node *n = t_node(&t, "MeanVarianceNormalization", 13, "x", "y");
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    double s0 = sqrt(5.0) + 1e-9, s1 = 2.0 + 1e-9;
    const double w[8] = {-3 / s0, -1 / s0, 2 / s1, 2 / s1, 1 / s0, 3 / s0, -2 / s1, -2 / s1};
    for (int i = 0; i < 8; i++) ASSERT_NEAR(elem(&r.out[0], i), w[i], 1e-6);
    r_free(&r);
    /* axes [-1] on [2, 3]: per row; a constant row gives 0 (divided by 1e-9), not NaN */
    int64_t d2[2] = {2, 3};
    float x2[6] = {1, 2, 3, 4, 4, 4};
    t_f32(&t, "x2", 2, d2, x2);
    n = t_node(&t, "MeanVarianceNormalization", 13, "x2", "y2");
    int64_t ax[1] = {-1};
    a_ints(&t, n, "axes", 1, ax);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    double s = sqrt(2.0 / 3) + 1e-9;
    const double w2[6] = {-1 / s, 0, 1 / s, 0, 0, 0};
    for (int i = 0; i < 6; i++) ASSERT_NEAR(elem(&r.out[0], i), w2[i], 1e-6);
    r_free(&r);
    /* the default axes need rank 4 */
    n = t_node(&t, "MeanVarianceNormalization", 13, "x2", "y3");
    n->name = "mvn_bad";
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "mvn_bad");
    n = t_node(&t, "MeanVarianceNormalization", 13, "x", "y4");
    int64_t dup[2] = {1, -3};
    a_ints(&t, n, "axes", 2, dup);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "more than once");
    t_free(&t);
}

TEST_MAIN(RUN(unary_kernels_match_definition_and_program); RUN(unary_fp16_and_sign_on_integers);
          RUN(unary_errors_name_the_node); RUN(reduce_more_float); RUN(reduce_more_int_and_argmin); RUN(cumsum_modes);
          RUN(trilu_upper_lower); RUN(scatter_nd_reductions_and_bounds); RUN(scatter_elements_and_gather_nd);
          RUN(einsum_forms); RUN(group_normalization_21_and_18); RUN(batchnorm_training_kernel);
          RUN(size_space_to_depth_nary); RUN(onehot_axes_negative_and_out_of_range); RUN(lp_normalization_p1_p2_zero);
          RUN(mvn_default_axes_and_errors))
