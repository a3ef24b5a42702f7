/*
 * test_ops_pw.c -- pointwise programs (src/ops/pw.c): every code through ingot.Pointwise (NaN and
 * infinities included) against its definition, int64 programs, broadcasting, loads and stores of every
 * dtype, in-place and threaded application, the translation of ONNX nodes (bit for bit what their own
 * CPU kernels compute), the rules of ig__pw_node_ok, the rejection of malformed program attributes,
 * attribute round trips and register allocation.
 */
#include "fused_util.h"

#define NV 64
static float va[NV], vb[NV], vc[NV];

static void code_values(void)
{
    static const float sa[] = {NAN,   INFINITY, -INFINITY, 0.0f,  -0.0f,  1.0f,   -1.0f, 2.0f,   0.5f,
                               -0.5f, 1.5f,     2.5f,      -2.5f, 1e30f,  -1e30f, 7.25f, -3.75f, 1e-5f,
                               20.0f, -20.0f,   3e-4f,     88.0f, -88.0f, 100.0f, 3.0f,  -6.0f};
    static const float sb[] = {2.0f, 0.0f,   -1.0f, 3.0f, NAN,   INFINITY, 0.5f, 2.0f,  -2.0f, 0.0f, 2.0f, -INFINITY,
                               1.0f, -0.75f, 1.5f,  4.0f, -4.0f, 2.0f,     1.0f, -1.0f, 0.25f, 2.0f, 0.5f, -0.5f};
    for (int i = 0; i < NV; i++) {
        va[i] = i < (int)(sizeof sa / sizeof sa[0]) ? sa[i] : (float)(urand() * 4);
        vb[i] = i < (int)(sizeof sb / sizeof sb[0]) ? sb[i] : (float)(urand() * 3);
        vc[i] = (float)(urand() * 5);
    }
}

/* One Pointwise node computing t0 = code(x0, x1, x2) (or with operand b the constant kb). */
static void check_code(int code, bool b_is_k, float k, float k2)
{
    T t;
    t_init(&t);
    int64_t d = NV;
    t_f32(&t, "a", 1, &d, va);
    t_f32(&t, "b", 1, &d, vb);
    t_f32(&t, "c", 1, &d, vc);
    int ar = ig__pw_arity(code);
    ig_pw_prog p;
    ig__pw_init(&p, b_is_k ? ar - 1 : ar, false);
    int16_t op_b = ar > 1 ? (b_is_k ? IG_PW_K : 1) : IG_PW_NONE, op_c = ar > 2 ? (b_is_k ? 1 : 2) : IG_PW_NONE;
    ig__pw_emit(&p, code, 0, op_b, op_c, b_is_k ? 1.5f : k, k2);
    const char *ins = ar == 1 || (b_is_k && ar == 2) ? "a" : b_is_k ? "a,c" : ar == 2 ? "a,b" : "a,b,c";
    ig_node *n = f_node(&t, "Pointwise", ins, "y");
    a_prog(&t, n, "", &p);
    a_int(n, "to", INGOT_DTYPE_FLOAT);
    R r;
    ingot_status st = t_run(&t, n, NULL, &r);
    if (st != INGOT_OK) fprintf(stderr, "  code %s: %s\n", ig__pw_code_name(code), t.err.msg);
    ASSERT_EQ(st, INGOT_OK);
    for (int i = 0; i < NV; i++) {
        double want = (float)ref_code(code, va[i], b_is_k ? 1.5 : vb[i], vc[i], k, k2);
        double got = ((const float *)r.out[0].data)[i];
        if (!close_to(got, want, 3e-6, 1e-6))
            TEST_FAIL_("%s%s at %d (a=%g b=%g c=%g): got %.9g, want %.9g", ig__pw_code_name(code),
                       b_is_k ? " (b = k)" : "", i, (double)va[i], (double)vb[i], (double)vc[i], got, want);
    }
    r_free(&r);
    t_free(&t);
}

TEST(every_code_through_pointwise)
{
    code_values();
    for (int code = 1; code < IG_PW_CODE_COUNT; code++) {
        float k = 0, k2 = 0;
        if (code == IG_PW_LEAKY) k = 0.1f;
        if (code == IG_PW_CLIP) k = -0.5f, k2 = 0.75f;
        if (code == IG_PW_HARDSIGMOID) k = 0.2f, k2 = 0.5f;
        check_code(code, false, k, k2);
        if (test_failed_) return;
        if (ig__pw_arity(code) >= 2) check_code(code, true, 0, 0);
        if (test_failed_) return;
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* int64 programs                                                                                  */

static int64_t ref_pymod(int64_t x, int64_t y)
{
    if (y == 0 || y == -1) return 0;
    int64_t r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
}

TEST(int_math_programs)
{
    T t;
    t_init(&t);
    static const int64_t xs[] = {7, -7, 0, 5, INT64_MAX, INT64_MIN, 100, -3, 42, 9};
    static const int32_t ys[] = {2, 2, 0, -3, 1, -1, 7, 0, -5, 3};
    int64_t d = 10;
    t_const(&t, "x", INGOT_DTYPE_INT64, 1, &d, xs);
    t_const(&t, "y", INGOT_DTYPE_INT32, 1, &d, ys);
    /* t0 = x + y (wraps), t1 = t0 * 3, t2 = t1 / y (by 0: 0), t3 = t2 mod -4, t4 = clip(t3, -5, +inf),
     * t5 = max(t4, y), t6 = (x > y), t7 = where(t6, t5, x) */
    ig_pw_prog p;
    ig__pw_init(&p, 2, true);
    ig__pw_emit(&p, IG_PW_ADD, 0, 1, IG_PW_NONE, 0, 0);
    ig__pw_emit(&p, IG_PW_MUL, 2, IG_PW_K, IG_PW_NONE, 3, 0);
    ig__pw_emit(&p, IG_PW_DIV, 3, 1, IG_PW_NONE, 0, 0);
    ig__pw_emit(&p, IG_PW_MOD, 4, IG_PW_K, IG_PW_NONE, -4, 0);
    ig__pw_emit(&p, IG_PW_CLIP, 5, IG_PW_NONE, IG_PW_NONE, -5, INFINITY);
    ig__pw_emit(&p, IG_PW_MAX, 6, 1, IG_PW_NONE, 0, 0);
    ig__pw_emit(&p, IG_PW_GT, 0, 1, IG_PW_NONE, 0, 0);
    ig__pw_emit(&p, IG_PW_WHERE, 8, 7, 0, 0, 0);
    for (int out_t = 0; out_t < 2; out_t++) {
        ig_node *n = f_node(&t, "Pointwise", "x,y", out_t ? "y8" : "y64");
        a_prog(&t, n, "", &p);
        a_int(n, "int_math", 1);
        a_int(n, "to", out_t ? INGOT_DTYPE_INT8 : INGOT_DTYPE_INT64);
        R r;
        ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
        for (int i = 0; i < 10; i++) {
            int64_t x = xs[i], y = ys[i];
            int64_t t0 = (int64_t)((uint64_t)x + (uint64_t)y), t1 = (int64_t)((uint64_t)t0 * 3u);
            int64_t t2 = y == 0 ? 0 : y == -1 ? (int64_t)(0u - (uint64_t)t1) : t1 / y;
            int64_t t3 = ref_pymod(t2, -4), t4 = t3 < -5 ? -5 : t3, t5 = t4 > y ? t4 : y;
            int64_t want = x > y ? t5 : x;
            if (out_t)
                ASSERT_EQ(((const int8_t *)r.out[0].data)[i], (int8_t)(uint64_t)want);
            else
                ASSERT_EQ(((const int64_t *)r.out[0].data)[i], want);
        }
        r_free(&r);
    }
    /* comparisons into bool; bool inputs load as 0/1 */
    static const uint8_t bs[] = {1, 0, 1, 1, 0, 0, 1, 0, 1, 1};
    t_const(&t, "bb", INGOT_DTYPE_BOOL, 1, &d, bs);
    ig__pw_init(&p, 2, true);
    ig__pw_emit(&p, IG_PW_LE, 0, IG_PW_K, IG_PW_NONE, 5, 0);
    ig__pw_emit(&p, IG_PW_AND, 2, 1, IG_PW_NONE, 0, 0);
    ig__pw_emit(&p, IG_PW_NOT, 3, IG_PW_NONE, IG_PW_NONE, 0, 0);
    ig_node *n = f_node(&t, "Pointwise", "x,bb", "yb");
    a_prog(&t, n, "", &p);
    a_int(n, "int_math", 1);
    a_int(n, "to", INGOT_DTYPE_BOOL);
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    for (int i = 0; i < 10; i++) ASSERT_EQ(((const uint8_t *)r.out[0].data)[i], !(xs[i] <= 5 && bs[i]));
    r_free(&r);
    /* an int_math program takes integers only */
    float fv[10] = {0};
    t_f32(&t, "f", 1, &d, fv);
    n = f_node(&t, "Pointwise", "x,f", "ybad");
    a_prog(&t, n, "", &p);
    a_int(n, "int_math", 1);
    a_int(n, "to", INGOT_DTYPE_BOOL);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_INVALID);
    ASSERT_CONTAINS(t.err.msg, "int_math");
    t_free(&t);
}

/* ---------------------------------------------------------------------------------------------- */
/* broadcasting, dtypes, stores, threads and in-place application                                  */

TEST(broadcast_dtypes_and_stores)
{
    T t;
    t_init(&t);
    int64_t da[3] = {2, 3, 40}, db[2] = {3, 1}, dc[1] = {40};
    float *a = rand_f32(240, 3), *b32 = rand_f32(3, 2), bround[3];
    uint16_t *b = to_f16(b32, 3, bround);
    uint8_t c[40];
    int32_t dsc = -3;
    for (int i = 0; i < 40; i++) c[i] = (uint8_t)(i % 3 == 0);
    t_f32(&t, "a", 3, da, a);
    t_const(&t, "b", INGOT_DTYPE_FLOAT16, 2, db, b);
    t_const(&t, "c", INGOT_DTYPE_BOOL, 1, dc, c);
    t_const(&t, "d", INGOT_DTYPE_INT32, 0, NULL, &dsc);
    /* y = where(c, a * b, a + d) */
    ig_pw_prog p;
    ig__pw_init(&p, 4, false);
    ig__pw_emit(&p, IG_PW_MUL, 0, 1, IG_PW_NONE, 0, 0);
    ig__pw_emit(&p, IG_PW_ADD, 0, 3, IG_PW_NONE, 0, 0);
    ig__pw_emit(&p, IG_PW_WHERE, 2, 4, 5, 0, 0);
    static const ingot_dtype outs[] = {INGOT_DTYPE_FLOAT, INGOT_DTYPE_FLOAT16, INGOT_DTYPE_BFLOAT16,
                                       INGOT_DTYPE_INT32, INGOT_DTYPE_DOUBLE,  INGOT_DTYPE_BOOL};
    for (int o = 0; o < 6; o++) {
        char name[16];
        snprintf(name, sizeof name, "y%d", o);
        ig_node *n = f_node(&t, "Pointwise", "a,b,c,d", name);
        a_prog(&t, n, "", &p);
        a_int(n, "to", outs[o]);
        R r;
        ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
        ASSERT_STREQ(shp(&t, name), "[2,3,40]");
        for (int64_t i = 0; i < 240; i++) {
            int64_t row = (i / 40) % 3, col = i % 40;
            float v = c[col] ? a[i] * bround[row] : a[i] + (float)dsc;
            double want;
            switch (outs[o]) {
            case INGOT_DTYPE_FLOAT16: want = ig__f16_to_f32(ig__f32_to_f16(v)); break;
            case INGOT_DTYPE_BFLOAT16: want = ig__bf16_to_f32(ig__f32_to_bf16(v)); break;
            case INGOT_DTYPE_INT32: want = (double)(int32_t)v; break;
            case INGOT_DTYPE_BOOL: want = v != 0; break;
            default: want = v;
            }
            ASSERT_EQ(elem(&r.out[0], i) == want, 1);
        }
        r_free(&r);
    }
    free(a);
    free(b32);
    free(b);
    t_free(&t);
}

/* Cast's conversions at the store: NaN -> 0, saturation, wrap to the width. */
TEST(store_saturates_like_cast)
{
    T t;
    t_init(&t);
    static const float xs[] = {NAN, INFINITY, -INFINITY, 3.9f, -3.9f, 1e20f, -1e20f, 300.0f};
    int64_t d = 8;
    t_f32(&t, "x", 1, &d, xs);
    ig_pw_prog p;
    ig__pw_init(&p, 1, false);
    ig__pw_emit(&p, IG_PW_COPY, 0, IG_PW_NONE, IG_PW_NONE, 0, 0);
    ig_node *n = f_node(&t, "Pointwise", "x", "y");
    a_prog(&t, n, "", &p);
    a_int(n, "to", INGOT_DTYPE_INT64);
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    const int64_t *y = r.out[0].data;
    ASSERT_EQ(y[0], 0);
    ASSERT_EQ(y[1], INT64_MAX);
    ASSERT_EQ(y[2], INT64_MIN);
    ASSERT_EQ(y[3], 3);
    ASSERT_EQ(y[4], -3);
    ASSERT_EQ(y[5], INT64_MAX);
    ASSERT_EQ(y[6], INT64_MIN);
    ASSERT_EQ(y[7], 300);
    r_free(&r);
    n = f_node(&t, "Pointwise", "x", "y8");
    a_prog(&t, n, "", &p);
    a_int(n, "to", INGOT_DTYPE_UINT8);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(((const uint8_t *)r.out[0].data)[7], 300 & 255); /* wraps, as Cast */
    ASSERT_EQ(((const uint8_t *)r.out[0].data)[4], (uint8_t)-3);
    r_free(&r);
    t_free(&t);
}

TEST(apply_in_place_and_threaded)
{
    int64_t dims[2] = {37, 1001};
    int64_t n = dims[0] * dims[1];
    float *x = rand_f32(n, 2), *z = rand_f32(dims[1], 1);
    ig_tensor tx, tz, ty, tw;
    ig__tensor_set_shape(&tx, INGOT_DTYPE_FLOAT, 2, dims);
    ig__tensor_set_shape(&tz, INGOT_DTYPE_FLOAT, 1, dims + 1);
    tx.data = x;
    tz.data = z;
    ig_pw_prog p;
    ig__pw_init(&p, 2, false);
    ig__pw_emit(&p, IG_PW_ADD, 0, 1, IG_PW_NONE, 0, 0);
    ig__pw_emit(&p, IG_PW_GELU_TANH, 2, IG_PW_NONE, IG_PW_NONE, 0, 0);
    ig__pw_emit(&p, IG_PW_MULADD, 3, IG_PW_K, 0, 0.5f, 0);
    /* serial, into a separate output */
    ty = tx;
    ty.data = malloc(sizeof(float) * (size_t)n);
    const ig_tensor *ins[2] = {&tx, &tz};
    ig__pw_apply(NULL, &p, ins, 2, &ty);
    /* threaded, in place over input 0 */
    struct ig_pool *pool = ig__pool_create(2);
    float *w = malloc(sizeof(float) * (size_t)n);
    memcpy(w, x, sizeof(float) * (size_t)n);
    tw = tx;
    tw.data = w;
    const ig_tensor *ins2[2] = {&tw, &tz};
    ig__pw_apply(pool, &p, ins2, 2, &tw);
    ASSERT_EQ(memcmp(w, ty.data, sizeof(float) * (size_t)n), 0);
    for (int64_t i = 0; i < n; i += 997) {
        double v = (double)x[i] + z[i % dims[1]];
        double want = ref_code(IG_PW_GELU_TANH, v, 0, 0, 0, 0) * 0.5 + x[i];
        ASSERT(close_to(((float *)ty.data)[i], want, 1e-5, 1e-6));
    }
    ig__pool_destroy(pool);
    free(x);
    free(z);
    free(w);
    free(ty.data);
}

/* The planner may give output 0 input 0's bytes when the sizes agree: an int64 [4] input broadcast to
 * a float32 [2, 4] output has the output's size but not its layout, and is copied aside first. */
TEST(pointwise_alias_with_broadcast_input)
{
    T t;
    t_init(&t);
    static const int64_t xs[4] = {1, -2, 3, 40};
    int64_t d = 4;
    t_const(&t, "x", INGOT_DTYPE_INT64, 1, &d, xs);
    t_input(&t, "r", INGOT_DTYPE_FLOAT, 2, (ig_dim[]){D(2), D(1)});
    ig_pw_prog p;
    ig__pw_init(&p, 2, false);
    ig__pw_emit(&p, IG_PW_MUL, 0, 1, IG_PW_NONE, 0, 0);
    ig_node *n = f_node(&t, "Pointwise", "x,r", "y");
    a_prog(&t, n, "", &p);
    a_int(n, "to", INGOT_DTYPE_FLOAT);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[2,4]");
    const ig_op_def *def = ig__op_find("ingot", "Pointwise", 1, NULL);
    size_t sb = def->cpu_scratch(&t.g, n);
    ASSERT_EQ(sb, 32);
    int64_t buf[4];
    memcpy(buf, xs, sizeof buf);
    float rv[2] = {1.0f, -0.5f};
    ig_tensor tx, tr, ty;
    ig__tensor_set_shape(&tx, INGOT_DTYPE_INT64, 1, &d);
    ig__tensor_set_shape(&tr, INGOT_DTYPE_FLOAT, 2, (int64_t[]){2, 1});
    ig__tensor_set_shape(&ty, INGOT_DTYPE_FLOAT, 2, (int64_t[]){2, 4});
    tx.data = buf;
    tr.data = rv;
    ty.data = buf; /* the same 32 bytes */
    const ig_tensor *ins[2] = {&tx, &tr};
    ig_tensor *outs[1] = {&ty};
    void *scratch = ig__malloc_aligned(sb, 64);
    ig_exec ex = {.g = &t.g,
                  .node = n,
                  .n_in = 2,
                  .n_out = 1,
                  .in = ins,
                  .out = outs,
                  .scratch = scratch,
                  .scratch_bytes = sb,
                  .err = &t.err};
    ASSERT_EQ(def->cpu(&ex), INGOT_OK);
    const float *y = (const float *)buf;
    for (int i = 0; i < 8; i++) ASSERT_EQ(y[i] == (float)xs[i % 4] * rv[i / 4], 1);
    ig__free_aligned(scratch);
    t_free(&t);
}

/* ---------------------------------------------------------------------------------------------- */
/* translating ONNX nodes: a program of one node computes what the node's own kernel computes       */

typedef struct xcase {
    const char *op;
    const char *ins; /* of "fa,fb,fc" (float32), "ba,bb" (bool), "ia,ib" (int32), "i8a,i8b" (int8), "k2" ... */
    int attr;        /* 0: none; else a case number for extra attributes below */
    bool int_math;
    bool not_ok;      /* translates, but ig__pw_node_ok refuses it in a chain */
    unsigned unconst; /* inputs that count as run-time values for the translation (bit i: input i) */
} xcase;

static void xcase_attrs(T *t, ig_node *n, int attr)
{
    (void)t;
    switch (attr) {
    case 1: a_float(n, "alpha", 0.3f); break;
    case 2:
        a_float(n, "alpha", 0.25f);
        a_float(n, "beta", 0.6f);
        break;
    case 3: a_str(n, "approximate", "tanh"); break;
    case 4: a_int(n, "fmod", 1); break;
    case 10: a_int(n, "to", INGOT_DTYPE_FLOAT16); break;
    case 11: a_int(n, "to", INGOT_DTYPE_BOOL); break;
    case 12: a_int(n, "to", INGOT_DTYPE_INT32); break;
    case 13: a_int(n, "to", INGOT_DTYPE_FLOAT); break;
    case 14: a_int(n, "to", INGOT_DTYPE_BFLOAT16); break;
    case 15: a_int(n, "to", INGOT_DTYPE_INT8); break;
    case 16: a_int(n, "to", INGOT_DTYPE_INT64); break;
    default: break;
    }
}

/* Run node `c` unfused (its own kernel) and as a one-node program, its inputs gathered as the CUDA
 * backend does (scalar constants into k when fold_k; Clip's constant bounds always); the bytes agree. */
static void check_translation(const xcase *c, bool fold_k)
{
    T t;
    t_init(&t);
    int64_t d = NV;
    t_f32(&t, "fa", 1, &d, va);
    t_f32(&t, "fb", 1, &d, vb);
    t_f32(&t, "fc", 1, &d, vc);
    uint8_t ba[NV], bb[NV];
    int32_t ia[NV], ib[NV];
    int8_t i8a[NV], i8b[NV];
    for (int i = 0; i < NV; i++) {
        ba[i] = (uint8_t)(i % 3 == 0);
        bb[i] = (uint8_t)(i % 2 == 0);
        ia[i] = i < 4 ? (int32_t[]){INT32_MIN, INT32_MAX, 0, -1}[i] : (int32_t)(urand() * 1000);
        ib[i] = i < 8 ? (int32_t[]){-1, 2, 0, -1, 3, -2, 0, 31}[i] : (int32_t)(urand() * 6);
        i8a[i] = (int8_t)(urand() * 128);
        i8b[i] = (int8_t)(urand() * 128);
    }
    /* integer division by zero is a run error (test_ops_elementwise checks it), not a value to compare */
    if (!strcmp(c->op, "Div") || !strcmp(c->op, "Mod"))
        for (int i = 0; i < NV; i++) {
            if (!ib[i]) ib[i] = i % 2 ? -3 : 7;
            if (!i8b[i]) i8b[i] = 5;
        }
    t_const(&t, "ba", INGOT_DTYPE_BOOL, 1, &d, ba);
    t_const(&t, "bb", INGOT_DTYPE_BOOL, 1, &d, bb);
    t_const(&t, "ia", INGOT_DTYPE_INT32, 1, &d, ia);
    t_const(&t, "ib", INGOT_DTYPE_INT32, 1, &d, ib);
    t_const(&t, "i8a", INGOT_DTYPE_INT8, 1, &d, i8a);
    t_const(&t, "i8b", INGOT_DTYPE_INT8, 1, &d, i8b);
    float k2v = 2.0f, lo = -0.5f, hi = 1.25f;
    int32_t ilo = -16777217, ihi = 300, i5 = 5;
    t_const(&t, "k2", INGOT_DTYPE_FLOAT, 0, NULL, &k2v);
    t_const(&t, "lo", INGOT_DTYPE_FLOAT, 0, NULL, &lo);
    t_const(&t, "hi", INGOT_DTYPE_FLOAT, 1, (int64_t[]){1}, &hi);
    t_const(&t, "ilo", INGOT_DTYPE_INT32, 0, NULL, &ilo); /* not exact in a float k: a program input */
    t_const(&t, "ihi", INGOT_DTYPE_INT32, 0, NULL, &ihi);
    t_const(&t, "i5", INGOT_DTYPE_INT32, 0, NULL, &i5);
    ig_node *n = t_node(&t, c->op, 20, c->ins, "y");
    xcase_attrs(&t, n, c->attr);
    R r;
    ingot_status st = t_run(&t, n, NULL, &r);
    if (st != INGOT_OK) TEST_FAIL_("%s: %s", c->op, t.err.msg);
    set_op(n);
    for (int32_t i = 0; i < n->n_inputs; i++)
        if ((c->unconst >> i) & 1) t.g.values[n->inputs[i]].flags &= ~(uint32_t)IG_VAL_CONST;
    bool is_clip = !strcmp(c->op, "Clip");
    ig_pw_prog p;
    int16_t in_ref[8];
    const ig_tensor *ins[8];
    int32_t n_in = 0;
    for (int32_t i = 0; i < n->n_inputs; i++) {
        double kv;
        in_ref[i] = IG_PW_NONE;
        if (n->inputs[i] < 0) continue;
        bool scalar = ig__pw_scalar_const(&t.g, n->inputs[i], &kv);
        if (scalar && ((is_clip && i > 0) || (fold_k && t.g.values[n->inputs[i]].shape.rank == 0))) {
            in_ref[i] = IG_PW_K;
        } else {
            in_ref[i] = (int16_t)n_in;
            ins[n_in++] = r.inp[i];
        }
    }
    ig__pw_init(&p, n_in, c->int_math);
    if (ig__pw_node_ok(&t.g, n, c->int_math) == c->not_ok)
        TEST_FAIL_("%s (%s): ig__pw_node_ok says %s", c->op, c->ins, c->not_ok ? "yes" : "no");
    int16_t res = -1;
    st = ig__pw_append_node(&t.g, n, in_ref, &p, &res, &t.err);
    if (st != INGOT_OK) TEST_FAIL_("%s: %s", c->op, t.err.msg);
    ASSERT_EQ(res, ig__pw_result(&p));
    ASSERT(p.n_ops >= 1);
    ig_tensor y = r.out[0];
    size_t bytes = (size_t)y.numel * ingot_dtype_size(y.dtype);
    y.data = malloc(bytes);
    ig__pw_apply(NULL, &p, ins, n_in, &y);
    if (memcmp(y.data, r.out[0].data, bytes)) {
        for (int64_t i = 0; i < y.numel; i++)
            if (elem(&y, i) != elem(&r.out[0], i) &&
                !(elem(&y, i) != elem(&y, i) && elem(&r.out[0], i) != elem(&r.out[0], i))) {
                char buf[256];
                ig__pw_format(&p, buf, sizeof buf);
                free(y.data);
                TEST_FAIL_("%s (%s)%s: element %lld: program %.9g, kernel %.9g [%s]", c->op, c->ins,
                           fold_k ? " folded" : "", (long long)i, elem(&y, i), elem(&r.out[0], i), buf);
            }
    }
    free(y.data);
    r_free(&r);
    t_free(&t);
}

TEST(translation_matches_the_kernels)
{
    code_values();
    static const xcase cases[] = {
        {"Sqrt", "fa", 0, false, false, 0},
        {"Erf", "fa", 0, false, false, 0},
        {"Exp", "fa", 0, false, false, 0},
        {"Log", "fa", 0, false, false, 0},
        {"Neg", "fa", 0, false, false, 0},
        {"Abs", "fa", 0, false, false, 0},
        {"Reciprocal", "fa", 0, false, false, 0},
        {"Tanh", "fa", 0, false, false, 0},
        {"Sigmoid", "fa", 0, false, false, 0},
        {"Relu", "fa", 0, false, false, 0},
        {"LeakyRelu", "fa", 1, false, false, 0},
        {"Clip", "fa,lo,hi", 0, false, false, 0},
        {"Clip", "fa,,hi", 0, false, false, 0},
        {"Clip", "fa", 0, false, false, 0},
        {"Clip", "fa,lo,hi", 0, false, true, 6}, /* bounds known at run time only: MAX, MIN */
        {"Clip", "fa,lo,hi", 0, false, true, 4},
        {"HardSigmoid", "fa", 2, false, false, 0},
        {"HardSwish", "fa", 0, false, false, 0},
        {"Gelu", "fa", 0, false, false, 0},
        {"Gelu", "fa", 3, false, false, 0},
        {"Softplus", "fa", 0, false, false, 0},
        {"Mish", "fa", 0, false, false, 0},
        {"IsNaN", "fa", 0, false, false, 0},
        {"Not", "ba", 0, false, false, 0},
        {"Cast", "fa", 10, false, false, 0},
        {"Cast", "fa", 11, false, false, 0},
        {"Cast", "fa", 12, false, true, 0}, /* to an integer: only as a program's last node */
        {"Cast", "ia", 13, false, false, 0},
        {"Cast", "fa", 14, false, false, 0},
        {"Cast", "ba", 13, false, false, 0},
        {"Identity", "fa", 0, false, false, 0},
        {"Add", "fa,fb", 0, false, false, 0},
        {"Sub", "fa,k2", 0, false, false, 0},
        {"Mul", "k2,fb", 0, false, false, 0},
        {"Div", "fa,fb", 0, false, false, 0},
        {"Pow", "fa,fb", 0, false, false, 0},
        {"Pow", "fa,k2", 0, false, false, 0},
        {"Mod", "fa,fb", 0, false, false, 0},
        {"Mod", "fa,fb", 4, false, false, 0},
        {"Max", "fa,fb,fc", 0, false, false, 0},
        {"Min", "fa,k2,fb", 0, false, false, 0},
        {"Max", "fa", 0, false, false, 0},
        {"PRelu", "fa,fb", 0, false, false, 0},
        {"Equal", "fa,fb", 0, false, false, 0},
        {"Greater", "fa,k2", 0, false, false, 0},
        {"Less", "fa,fb", 0, false, false, 0},
        {"GreaterOrEqual", "fa,fb", 0, false, false, 0},
        {"LessOrEqual", "fa,fb", 0, false, false, 0},
        {"And", "ba,bb", 0, false, false, 0},
        {"Or", "ba,bb", 0, false, false, 0},
        {"Where", "ba,fa,fb", 0, false, false, 0},
        {"Where", "bb,k2,fa", 0, false, false, 0},
        {"Equal", "ba,bb", 0, false, false, 0},
        /* int64 programs */
        {"Add", "ia,ib", 0, true, false, 0},
        {"Sub", "ia,i5", 0, true, false, 0},
        {"Mul", "ia,ib", 0, true, false, 0},
        {"Div", "ia,ib", 0, true, false, 0},
        {"Mod", "ia,ib", 0, true, false, 0},
        {"Mod", "ia,ib", 4, true, false, 0},
        {"Pow", "ib,ib", 0, true, false, 0},
        {"PRelu", "ia,ib", 0, true, false, 0},
        {"Neg", "ia", 0, true, false, 0},
        {"Abs", "ia", 0, true, false, 0},
        {"Relu", "ia", 0, true, false, 0},
        {"Max", "ia,ib,i5", 0, true, false, 0},
        {"Min", "ia,ib", 0, true, false, 0},
        {"Clip", "ia,,ihi", 0, true, false, 0},
        {"Clip", "ia,ilo,ihi", 0, true, true, 0}, /* a bound no float k holds: MAX with the input */
        {"Equal", "ia,ib", 0, true, false, 0},
        {"Greater", "ia,i5", 0, true, false, 0},
        {"LessOrEqual", "ia,ib", 0, true, false, 0},
        {"Where", "ba,ia,ib", 0, true, false, 0},
        {"Not", "ba", 0, true, false, 0},
        {"And", "ba,bb", 0, true, false, 0},
        {"Or", "ba,bb", 0, true, false, 0},
        {"Cast", "ia", 16, true, false, 0},
        {"Cast", "ia", 11, true, false, 0},
        {"Cast", "ba", 12, true, false, 0},
        {"Cast", "ia", 15, true, true, 0},    /* narrowing: exact only as the last node (the store wraps) */
        {"Add", "i8a,i8b", 0, true, true, 0}, /* int8 wraps */
        {"Max", "i8a,i8b", 0, true, false, 0},
        {"Identity", "ia", 0, true, false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int fold = 0; fold < 2; fold++) {
            check_translation(&cases[i], fold);
            if (test_failed_) return;
        }
    }
}

/* Constants folded into k: at most one per instruction, the other copied into a value first. */
TEST(translation_constants_and_limits)
{
    T t;
    t_init(&t);
    float c1 = 3.0f, c2 = -1.5f, big = 16777217.0f;
    int64_t ib = 16777217, i5 = 5;
    t_const(&t, "c1", INGOT_DTYPE_FLOAT, 0, NULL, &c1);
    t_const(&t, "c2", INGOT_DTYPE_FLOAT, 1, (int64_t[]){1}, &c2);
    t_const(&t, "big", INGOT_DTYPE_FLOAT, 0, NULL, &big);
    t_const(&t, "ib", INGOT_DTYPE_INT64, 0, NULL, &ib);
    t_const(&t, "i5", INGOT_DTYPE_INT64, 0, NULL, &i5);
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 1, (ig_dim[]){D(4)});
    double k;
    ASSERT(ig__pw_scalar_const(&t.g, ig__graph_find(&t.g, "c2"), &k) && k == -1.5);
    ASSERT(ig__pw_scalar_const(&t.g, ig__graph_find(&t.g, "i5"), &k) && k == 5);
    ASSERT(!ig__pw_scalar_const(&t.g, ig__graph_find(&t.g, "ib"), &k)); /* not a float */
    ASSERT(!ig__pw_scalar_const(&t.g, ig__graph_find(&t.g, "x"), &k));
    ASSERT(ig__pw_scalar_const(&t.g, ig__graph_find(&t.g, "big"), &k)); /* a float32 is exact */
    ig_node *n = t_node(&t, "Max", 13, "c1,c2,x", "y");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    set_op(n);
    ig_pw_prog p;
    ig__pw_init(&p, 1, false);
    int16_t refs[3] = {IG_PW_K, IG_PW_K, 0}, res;
    ASSERT_EQ(ig__pw_append_node(&t.g, n, refs, &p, &res, &t.err), INGOT_OK);
    /* COPY(-1.5), MAX(3, t0), MAX(t1, x0): left to right, as the kernel */
    ASSERT_EQ(p.n_ops, 3);
    ASSERT_EQ(p.op[0].code, IG_PW_COPY);
    ASSERT_EQ(p.op[0].a, IG_PW_K);
    ASSERT_EQ(p.op[0].k == -1.5f, 1);
    ASSERT_EQ(p.op[1].code, IG_PW_MAX);
    ASSERT_EQ(p.op[1].a, IG_PW_K);
    ASSERT_EQ(p.op[1].k == 3.0f, 1);
    ASSERT_EQ(p.op[2].b, 0);
    ASSERT_EQ(res, 3);
    char buf[256];
    ig__pw_format(&p, buf, sizeof buf);
    ASSERT_STREQ(buf, "x0 -> t0=COPY(-1.5) t1=MAX(3,t0) t2=MAX(t1,x0)");
    /* a reference the program does not have, a "constant" that is not one */
    refs[0] = 5;
    ig_pw_prog q = p;
    ASSERT(ig__pw_append_node(&t.g, n, refs, &p, &res, &t.err) != INGOT_OK);
    ASSERT_CONTAINS(t.err.msg, "value 5");
    ASSERT_EQ(memcmp(&p, &q, sizeof p), 0); /* unchanged */
    ig__err_clear(&t.err);
    refs[0] = 0;
    refs[2] = IG_PW_K;
    ASSERT(ig__pw_append_node(&t.g, n, refs, &p, &res, &t.err) != INGOT_OK);
    ASSERT_CONTAINS(t.err.msg, "not a scalar constant");
    /* the instruction limit */
    ig_node *r = t_node(&t, "Relu", 13, "x", "yr");
    ASSERT_EQ(t_infer(&t, r), INGOT_OK);
    set_op(r);
    ig__pw_init(&p, 1, false);
    int16_t v = 0;
    for (int i = 0; i < IG_PW_MAX_OPS; i++) ASSERT_EQ(ig__pw_append_node(&t.g, r, &v, &p, &v, &t.err), INGOT_OK);
    ig__err_clear(&t.err);
    ASSERT_EQ(ig__pw_append_node(&t.g, r, &v, &p, &v, &t.err), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "more than 16 instructions");
    ASSERT_EQ(p.n_ops, IG_PW_MAX_OPS);
    t_free(&t);
}

static ig_node *ok_node(T *t, const char *op, int opset, const char *ins, const char *out)
{
    ig_node *n = t_node(t, op, opset, ins, out);
    if (strcmp(op, "Cast") && t_infer(t, n) != INGOT_OK) fprintf(stderr, "  %s: %s\n", op, t->err.msg);
    set_op(n);
    return n;
}

TEST(node_ok_rules)
{
    T t;
    t_init(&t);
    ig_dim d4[1] = {D(4)};
    t_input(&t, "f", INGOT_DTYPE_FLOAT, 1, d4);
    t_input(&t, "h", INGOT_DTYPE_FLOAT16, 1, d4);
    t_input(&t, "dd", INGOT_DTYPE_DOUBLE, 1, d4);
    t_input(&t, "i64", INGOT_DTYPE_INT64, 1, d4);
    t_input(&t, "i32", INGOT_DTYPE_INT32, 1, d4);
    t_input(&t, "i8", INGOT_DTYPE_INT8, 1, d4);
    t_input(&t, "u64", INGOT_DTYPE_UINT64, 1, d4);
    t_input(&t, "b", INGOT_DTYPE_BOOL, 1, d4);
    t_input(&t, "lo", INGOT_DTYPE_FLOAT, 0, NULL);
    ig_node *n;
    n = ok_node(&t, "Add", 14, "f,f", "y0");
    ASSERT(ig__pw_node_ok(&t.g, n, false) && !ig__pw_node_ok(&t.g, n, true));
    n = ok_node(&t, "Add", 14, "dd,dd", "y1"); /* double is never fused */
    ASSERT(!ig__pw_node_ok(&t.g, n, false) && !ig__pw_node_ok(&t.g, n, true));
    n = ok_node(&t, "Add", 14, "i64,i64", "y2");
    ASSERT(!ig__pw_node_ok(&t.g, n, false) && ig__pw_node_ok(&t.g, n, true));
    n = ok_node(&t, "Add", 14, "i8,i8", "y3"); /* int8 wraps where int64 does not */
    ASSERT(!ig__pw_node_ok(&t.g, n, true));
    n = ok_node(&t, "Max", 13, "i8,i8", "y4");
    ASSERT(ig__pw_node_ok(&t.g, n, true));
    n = ok_node(&t, "Add", 14, "u64,u64", "y5");
    ASSERT(!ig__pw_node_ok(&t.g, n, true));
    n = ok_node(&t, "Cast", 19, "i32", "y6");
    a_int(n, "to", INGOT_DTYPE_FLOAT);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    /* both: an int64 program may end in a Cast to float (the store converts) */
    ASSERT(ig__pw_node_ok(&t.g, n, false) && ig__pw_node_ok(&t.g, n, true));
    n = ok_node(&t, "Cast", 19, "i64", "y7");
    a_int(n, "to", INGOT_DTYPE_INT32);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT(!ig__pw_node_ok(&t.g, n, true)); /* narrowing */
    n = ok_node(&t, "Cast", 19, "i32", "y8");
    a_int(n, "to", INGOT_DTYPE_INT64);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT(ig__pw_node_ok(&t.g, n, true));
    n = ok_node(&t, "Exp", 13, "f", "y9");
    ASSERT(ig__pw_node_ok(&t.g, n, false) && !ig__pw_node_ok(&t.g, n, true));
    n = ok_node(&t, "Clip", 13, "f,lo", "y10"); /* a bound known only at run time */
    ASSERT(!ig__pw_node_ok(&t.g, n, false));
    n = ok_node(&t, "Where", 16, "b,f,f", "y11");
    ASSERT(ig__pw_node_ok(&t.g, n, false));
    n = ok_node(&t, "Where", 16, "b,i64,i64", "y12");
    ASSERT(ig__pw_node_ok(&t.g, n, true) && !ig__pw_node_ok(&t.g, n, false));
    n = ok_node(&t, "Equal", 13, "b,b", "y13");
    ASSERT(ig__pw_node_ok(&t.g, n, false) && ig__pw_node_ok(&t.g, n, true));
    n = ok_node(&t, "IsNaN", 13, "h", "y14");
    ASSERT(ig__pw_node_ok(&t.g, n, false));
    n = ok_node(&t, "Add", 6, "f,f", "y15"); /* legacy broadcasting */
    a_int(n, "broadcast", 1);
    a_int(n, "axis", 0);
    ASSERT(!ig__pw_node_ok(&t.g, n, false));
    n = ok_node(&t, "Dropout", 13, "f", "y16");
    ASSERT(!ig__pw_node_ok(&t.g, n, false));
    n = ok_node(&t, "Pow", 15, "f,i32", "y17"); /* an integer exponent in an fp32 program */
    ASSERT(!ig__pw_node_ok(&t.g, n, false));
    t_free(&t);
}

/* ---------------------------------------------------------------------------------------------- */
/* attributes: malformed programs are rejected with a message, round trips                        */

/* A Pointwise node over two float inputs with raw ops/params attributes; infer's status. */
static ingot_status decode_raw(T *t, const int64_t *ops, int n_ops_ints, const float *params, int n_params,
                               int int_math)
{
    static int k;
    char out[32];
    snprintf(out, sizeof out, "y%d", k++);
    ig_node *n = f_node(t, "Pointwise", "a,b", out);
    n->name = "pw_node";
    if (ops) a_ints(t, n, "ops", n_ops_ints, ops);
    if (params) a_floats(t, n, "params", n_params, params);
    if (int_math >= 0) a_int(n, "int_math", int_math);
    a_int(n, "to", INGOT_DTYPE_FLOAT);
    return t_infer(t, n);
}

TEST(decode_rejects_malformed_programs)
{
    T t;
    t_init(&t);
    t_input(&t, "a", INGOT_DTYPE_FLOAT, 1, (ig_dim[]){D(4)});
    t_input(&t, "b", INGOT_DTYPE_FLOAT, 1, (ig_dim[]){D(4)});
    float pr[2 * (IG_PW_MAX_OPS + 1)] = {0};
    /* a good one first */
    int64_t good[] = {IG_PW_ADD, 0, 1, -1, IG_PW_RELU, 2, -1, -1};
    ASSERT_EQ(decode_raw(&t, good, 8, pr, 4, -1), INGOT_OK);
    ASSERT_EQ(decode_raw(&t, NULL, 0, NULL, 0, -1), INGOT_OK); /* no instructions: input 0 */
    struct {
        int64_t ops[8];
        int n_ints, n_params, int_math;
        const char *msg;
    } bad[] = {
        {{99, 0, 1, -1}, 4, 2, -1, "code 99"},
        {{IG_PW_LOAD, 0, -1, -1}, 4, 2, -1, "not an instruction"},
        {{-1, 0, -1, -1}, 4, 2, -1, "code -1"},
        {{IG_PW_ADD, 0, 2, -1}, 4, 2, -1, "operand 1 is 2"},                        /* itself: forward */
        {{IG_PW_NEG, 3, -1, -1, IG_PW_NEG, 0, -1, -1}, 8, 4, -1, "operand 0 is 3"}, /* the next one */
        {{IG_PW_ADD, 0, -3, -1}, 4, 2, -1, "out of range"},
        {{IG_PW_ADD, 0, 70000, -1}, 4, 2, -1, "out of range"},
        {{IG_PW_NEG, 0, 1, -1}, 4, 2, -1, "must be -1"}, /* beyond the arity */
        {{IG_PW_ADD, 0, 1, -1}, 4, 3, -1, "'params' has 3 values"},
        {{IG_PW_ADD, 0, 1, -1}, 4, 0, -1, "'params' has 0 values"},
        {{IG_PW_ADD, 0, 1}, 3, 2, -1, "not 4"},
        {{IG_PW_EXP, 0, -1, -1}, 4, 2, 1, "does not compute on integers"},
        {{IG_PW_ADD, 0, 1, -1}, 4, 2, 2, "'int_math' must be"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ingot_status st = decode_raw(&t, bad[i].ops, bad[i].n_ints, pr, bad[i].n_params, bad[i].int_math);
        if (st != INGOT_ERR_MODEL_INVALID) TEST_FAIL_("case %d: status %d (%s)", (int)i, (int)st, t.err.msg);
        ASSERT_CONTAINS(t.err.msg, "pw_node");
        ASSERT_CONTAINS(t.err.msg, bad[i].msg);
    }
    /* too many instructions */
    int64_t many[4 * (IG_PW_MAX_OPS + 1)];
    for (int j = 0; j <= IG_PW_MAX_OPS; j++) {
        many[4 * j] = IG_PW_NEG;
        many[4 * j + 1] = j + 1;
        many[4 * j + 2] = many[4 * j + 3] = -1;
    }
    ASSERT_EQ(decode_raw(&t, many, 4 * (IG_PW_MAX_OPS + 1), pr, 2 * (IG_PW_MAX_OPS + 1), -1), INGOT_ERR_MODEL_INVALID);
    ASSERT_CONTAINS(t.err.msg, "at most 16");
    ASSERT_EQ(decode_raw(&t, many, 4 * IG_PW_MAX_OPS, pr, 2 * IG_PW_MAX_OPS, -1), INGOT_OK);
    /* attributes of the wrong type */
    ig_node *n = f_node(&t, "Pointwise", "a", "yt");
    a_floats(&t, n, "ops", 2, pr);
    a_int(n, "to", INGOT_DTYPE_FLOAT);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_INVALID);
    ASSERT_CONTAINS(t.err.msg, "list of integers");
    n = f_node(&t, "Pointwise", "a", "yto");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_INVALID);
    ASSERT_CONTAINS(t.err.msg, "'to'");
    /* an epilogue is fp32 */
    t_free(&t);
}

TEST(encode_decode_round_trip)
{
    T t;
    t_init(&t);
    t_input(&t, "a", INGOT_DTYPE_FLOAT, 1, (ig_dim[]){D(4)});
    ig_pw_prog p, q;
    ig__pw_init(&p, 1, false);
    ig__pw_emit(&p, IG_PW_CLIP, 0, IG_PW_NONE, IG_PW_NONE, 0.0f, 6.0f);
    ig__pw_emit(&p, IG_PW_MUL, 1, IG_PW_K, IG_PW_NONE, 0.25f, 0);
    ig__pw_emit(&p, IG_PW_WHERE, 0, 2, 1, 0, 0);
    ig_node *n = f_node(&t, "FusedMatMul", "a", "y");
    n->n_attrs = 2;
    ASSERT_EQ(ig__pw_encode(&t.g, n, 0, "epilogue_", &p, &t.err), INGOT_OK);
    ASSERT_STREQ(n->attrs[0].name, "epilogue_ops");
    ASSERT_STREQ(n->attrs[1].name, "epilogue_params");
    ASSERT_EQ(n->attrs[0].n, 12);
    ASSERT_EQ(ig__pw_decode(&t.g, n, "epilogue_", 1, &q, &t.err), INGOT_OK);
    ASSERT_EQ(q.n_ops, 3);
    ASSERT_EQ(memcmp(q.op, p.op, sizeof(ig_pw_inst) * 3), 0);
    /* with the wrong input count the same attributes refer outside the program */
    ig_pw_prog r;
    ig__pw_init(&r, 1, false);
    ig__pw_emit(&r, IG_PW_ADD, 0, 1, IG_PW_NONE, 0, 0);
    ASSERT_EQ(ig__pw_encode(&t.g, n, 0, "epilogue_", &r, &t.err), INGOT_OK);
    ASSERT_EQ(ig__pw_decode(&t.g, n, "epilogue_", 1, &q, &t.err), INGOT_ERR_MODEL_INVALID);
    ig__err_clear(&t.err);
    ASSERT_EQ(ig__pw_decode(&t.g, n, "epilogue_", 2, &q, &t.err), INGOT_OK);
    /* printing */
    char buf[160];
    int len = ig__pw_format(&p, buf, sizeof buf);
    ASSERT_STREQ(buf, "x0 -> t0=CLIP(x0;0,6) t1=MUL(t0,0.25) t2=WHERE(x0,t1,t0)");
    ASSERT_EQ(len, (int)strlen(buf));
    char small[8];
    ASSERT_EQ(ig__pw_format(&p, small, sizeof small), len); /* truncated, length as snprintf */
    ASSERT_EQ(strlen(small), 7);
    ASSERT_STREQ(ig__pw_code_name(IG_PW_GELU_TANH), "GELU_TANH");
    ASSERT_STREQ(ig__pw_code_name(IG_PW_CODE_COUNT), "?");
    ig__pw_init(&p, 2, true);
    ig__pw_format(&p, buf, sizeof buf);
    ASSERT_STREQ(buf, "[int] x0,x1 -> x0");
    t_free(&t);
}

/* ---------------------------------------------------------------------------------------------- */
/* register allocation                                                                             */

TEST(register_allocation)
{
    ig_pw_reg_op ops[32];
    int res;
    ig_pw_prog p;
    /* a chain reuses one register: LOAD r0; NEG r0 <- r0; EXP r0 <- r0 */
    ig__pw_init(&p, 1, false);
    ig__pw_emit(&p, IG_PW_NEG, 0, IG_PW_NONE, IG_PW_NONE, 0, 0);
    ig__pw_emit(&p, IG_PW_EXP, 1, IG_PW_NONE, IG_PW_NONE, 0, 0);
    ASSERT_EQ(ig__pw_to_regs(&p, ops, 32, &res), 3);
    ASSERT_EQ(ops[0].code, IG_PW_LOAD);
    ASSERT_EQ(ops[0].a, 0);
    ASSERT_EQ(ops[0].dst, 0);
    ASSERT_EQ(ops[1].code, IG_PW_NEG);
    ASSERT_EQ(ops[1].a, 0);
    ASSERT_EQ(ops[1].b, IG_PW_REF_NONE);
    ASSERT_EQ(ops[1].dst, 0);
    ASSERT_EQ(ops[2].dst, 0);
    ASSERT_EQ(res, 0);
    ASSERT(ig__pw_regs_ok(&p));
    ASSERT_EQ(ig__pw_to_regs(&p, ops, 2, &res), -1); /* not enough room for the ops */
    /* x0 stays live across the chain; k maps to IG_PW_REF_K; a dead instruction is dropped */
    ig__pw_init(&p, 2, false);
    ig__pw_emit(&p, IG_PW_MUL, 0, IG_PW_K, IG_PW_NONE, 0.5f, 0); /* t0 = x0 * 0.5 */
    ig__pw_emit(&p, IG_PW_EXP, 1, IG_PW_NONE, IG_PW_NONE, 0, 0); /* dead */
    ig__pw_emit(&p, IG_PW_ADD, 2, 1, IG_PW_NONE, 0, 0);          /* t2 = t0 + x1 */
    ig__pw_emit(&p, IG_PW_MUL, 4, 0, IG_PW_NONE, 0, 0);          /* t3 = t2 * x0 */
    ASSERT_EQ(ig__pw_to_regs(&p, ops, 32, &res), 5);
    /* LOAD r0 <- x0; MUL r1 <- r0, K; LOAD r2 <- x1; ADD r1 <- r1, r2; MUL r0 <- r1, r0 */
    ASSERT_EQ(ops[0].code, IG_PW_LOAD);
    ASSERT_EQ(ops[1].code, IG_PW_MUL);
    ASSERT_EQ(ops[1].a, 0);
    ASSERT_EQ(ops[1].b, IG_PW_REF_K);
    ASSERT_EQ(ops[1].k == 0.5f, 1);
    ASSERT_EQ(ops[1].dst, 1);
    ASSERT_EQ(ops[2].code, IG_PW_LOAD);
    ASSERT_EQ(ops[2].a, 1);
    ASSERT_EQ(ops[2].dst, 2);
    ASSERT_EQ(ops[3].code, IG_PW_ADD);
    ASSERT_EQ(ops[3].dst, 1); /* t0's register, free after this use */
    ASSERT_EQ(ops[4].code, IG_PW_MUL);
    ASSERT_EQ(ops[4].a, 1);
    ASSERT_EQ(ops[4].b, 0);
    ASSERT_EQ(ops[4].dst, 0);
    ASSERT_EQ(res, 0);
    /* six inputs summed left to right fit in two registers */
    ig__pw_init(&p, 6, false);
    int16_t acc = 0;
    for (int16_t i = 1; i < 6; i++) acc = ig__pw_emit(&p, IG_PW_ADD, acc, i, IG_PW_NONE, 0, 0);
    int n = ig__pw_to_regs(&p, ops, 32, &res);
    ASSERT_EQ(n, 11);
    for (int i = 0; i < n; i++) ASSERT(ops[i].dst < 2);
    /* all six inputs live while three partial sums are made: 8 values at once do not fit */
    ig__pw_init(&p, 6, false);
    int16_t s0 = ig__pw_emit(&p, IG_PW_ADD, 0, 1, IG_PW_NONE, 0, 0);
    int16_t s1 = ig__pw_emit(&p, IG_PW_ADD, 2, 3, IG_PW_NONE, 0, 0);
    int16_t s2 = ig__pw_emit(&p, IG_PW_ADD, 4, 5, IG_PW_NONE, 0, 0);
    acc = ig__pw_emit(&p, IG_PW_ADD, s0, s1, IG_PW_NONE, 0, 0);
    acc = ig__pw_emit(&p, IG_PW_ADD, acc, s2, IG_PW_NONE, 0, 0);
    for (int16_t i = 0; i < 6; i++) acc = ig__pw_emit(&p, IG_PW_MUL, acc, i, IG_PW_NONE, 0, 0);
    ASSERT_EQ(ig__pw_to_regs(&p, ops, 32, &res), -1);
    ASSERT(!ig__pw_regs_ok(&p));
    /* a program of no instructions is a load of input 0 */
    ig__pw_init(&p, 3, false);
    ASSERT_EQ(ig__pw_to_regs(&p, ops, 32, &res), 1);
    ASSERT_EQ(ops[0].code, IG_PW_LOAD);
    ASSERT_EQ(res, ops[0].dst);
    /* WHERE reads three registers */
    ig__pw_init(&p, 3, false);
    ig__pw_emit(&p, IG_PW_WHERE, 0, 1, 2, 0, 0);
    ASSERT_EQ(ig__pw_to_regs(&p, ops, 32, &res), 4);
    ASSERT_EQ(ops[3].a, 0);
    ASSERT_EQ(ops[3].b, 1);
    ASSERT_EQ(ops[3].c, 2);
    ASSERT_EQ(ops[3].dst, 0);
}

TEST_MAIN(RUN(every_code_through_pointwise); RUN(int_math_programs); RUN(broadcast_dtypes_and_stores);
          RUN(store_saturates_like_cast); RUN(apply_in_place_and_threaded); RUN(pointwise_alias_with_broadcast_input);
          RUN(translation_matches_the_kernels); RUN(translation_constants_and_limits); RUN(node_ok_rules);
          RUN(decode_rejects_malformed_programs); RUN(encode_decode_round_trip); RUN(register_allocation))
