/*
 * test_engine_file.c -- the engine file (src/engine, src/api/engine_file.c, docs/ENGINE_FILE.md).
 *
 * CRC32C against its published check value, the hardware path against the table path; the bulk fp16
 * conversion of the weights at load against the scalar one; the container
 * over every truncation and every single-bit flip; CPU engines saved and loaded (from memory and from
 * a mapped file, after the model is gone) giving outputs bit-identical to the engine that was built,
 * the same optimized graph with its provenance and the same memory plan; and damaged or crafted files:
 * truncated anywhere, a bit flipped anywhere, counts and options forged with valid checksums, another
 * ingot version, an ONNX file where an engine is expected -- each a clear error, never a crash.
 */
#include "engine/efile.h"
#include "ingot.h"
#include "pbwriter.h"
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- models --------------------------------------------------------------------------------------- */

static uint64_t rng = 0x853c49e6748fea9bull;
static float frand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 11) / 9007199254740992.0) * 2.0f - 1.0f;
}

static void attr_ints(wb *n, const char *name, const int64_t *v, int k)
{
    wb a = {0};
    w_str(&a, 1, name);
    for (int i = 0; i < k; i++) w_int(&a, 8, v[i]);
    w_int(&a, 20, 7);
    w_msg(n, 5, &a);
}

static void attr_f(wb *n, const char *name, float v)
{
    wb a = {0};
    w_str(&a, 1, name);
    w_f32(&a, 2, v);
    w_int(&a, 20, 1);
    w_msg(n, 5, &a);
}

static void init_rand(wb *g, const char *name, int rank, const int64_t *dims, float lo, float hi)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    float *p = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * (frand() * 0.5f + 0.5f);
    wb t = tensor_raw(name, 1, rank, dims, p, sizeof(float) * (size_t)n);
    w_msg(g, 5, &t);
    free(p);
}

static void add_node(wb *g, wb *n) { w_msg(g, 1, n); }

static uint8_t *find_bytes(uint8_t *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(p + i, s, k)) return p + i;
    return NULL;
}

/* x [batch,3,8,8] -> Conv 3x3 -> BatchNorm -> Relu -> Conv 1x1 -> + residual -> Relu -> GlobalAveragePool
 * -> Flatten -> Gemm -> Softmax -> out [batch,5]: BN folding, conv epilogues, a GEMM, new initializers. */
static wb conv_model(void)
{
    wb g = {0}, n;
    const int64_t wd[4] = {8, 3, 3, 3}, w2d[4] = {8, 8, 1, 1}, c8[1] = {8}, gd[2] = {8, 5}, c5[1] = {5};
    init_rand(&g, "W", 4, wd, -0.5f, 0.5f);
    init_rand(&g, "B", 1, c8, -0.1f, 0.1f);
    init_rand(&g, "scale", 1, c8, 0.5f, 1.5f);
    init_rand(&g, "shift", 1, c8, -0.2f, 0.2f);
    init_rand(&g, "mean", 1, c8, -0.1f, 0.1f);
    init_rand(&g, "var", 1, c8, 0.5f, 1.0f);
    init_rand(&g, "W2", 4, w2d, -0.5f, 0.5f);
    init_rand(&g, "Wg", 2, gd, -0.5f, 0.5f);
    init_rand(&g, "Bg", 1, c5, -0.1f, 0.1f);
    const int64_t k3[2] = {3, 3}, p1[4] = {1, 1, 1, 1};
    n = node("Conv", "conv1", (const char *[]){"x", "W", "B"}, 3, (const char *[]){"c1"}, 1);
    attr_ints(&n, "kernel_shape", k3, 2);
    attr_ints(&n, "pads", p1, 4);
    add_node(&g, &n);
    n = node("BatchNormalization", "bn1", (const char *[]){"c1", "scale", "shift", "mean", "var"}, 5,
             (const char *[]){"b1"}, 1);
    attr_f(&n, "epsilon", 1e-5f);
    add_node(&g, &n);
    n = node("Relu", "relu1", (const char *[]){"b1"}, 1, (const char *[]){"r1"}, 1);
    add_node(&g, &n);
    n = node("Conv", "conv2", (const char *[]){"r1", "W2"}, 2, (const char *[]){"c2"}, 1);
    add_node(&g, &n);
    n = node("Add", "res", (const char *[]){"c2", "r1"}, 2, (const char *[]){"s"}, 1);
    add_node(&g, &n);
    n = node("Relu", "relu2", (const char *[]){"s"}, 1, (const char *[]){"r2"}, 1);
    add_node(&g, &n);
    n = node("GlobalAveragePool", "gap", (const char *[]){"r2"}, 1, (const char *[]){"p"}, 1);
    add_node(&g, &n);
    n = node("Flatten", "flat", (const char *[]){"p"}, 1, (const char *[]){"f"}, 1); /* default axis 1 */
    add_node(&g, &n);
    n = node("Gemm", "fc", (const char *[]){"f", "Wg", "Bg"}, 3, (const char *[]){"logits"}, 1);
    add_node(&g, &n);
    n = node("Softmax", "sm", (const char *[]){"logits"}, 1, (const char *[]){"out"}, 1);
    add_node(&g, &n);
    w_str(&g, 2, "convnet");
    const int64_t xd[4] = {-1, 3, 8, 8}, od[2] = {-1, 5};
    const char *xp[4] = {"batch", NULL, NULL, NULL}, *op[2] = {"batch", NULL};
    wb vi = value_info("x", 1, 4, xd, xp);
    w_msg(&g, 11, &vi);
    vi = value_info("out", 1, 2, od, op);
    w_msg(&g, 12, &vi);
    return model(&g, 17);
}

/* x [batch,4] -> Relu(x) + x * W: one pointwise chain (an ingot-domain node) */
static wb small_model(void)
{
    wb g = {0}, n;
    const float w[4] = {1, 2, 3, 4};
    const int64_t d4[1] = {4}, xd[2] = {-1, 4};
    const char *xp[2] = {"batch", NULL};
    n = node("Relu", "relu", (const char *[]){"x"}, 1, (const char *[]){"r"}, 1);
    add_node(&g, &n);
    n = node("Mul", "mul", (const char *[]){"x", "W"}, 2, (const char *[]){"m"}, 1);
    add_node(&g, &n);
    n = node("Add", "add", (const char *[]){"r", "m"}, 2, (const char *[]){"out"}, 1);
    add_node(&g, &n);
    w_str(&g, 2, "small");
    wb t = tensor_raw("W", 1, 1, d4, w, sizeof w);
    w_msg(&g, 5, &t);
    wb vi = value_info("x", 1, 2, xd, xp);
    w_msg(&g, 11, &vi);
    vi = value_info("out", 1, 2, xd, xp);
    w_msg(&g, 12, &vi);
    return model(&g, 17);
}

/* x [batch,4] -> x * 0.5 * (1 + erf(x / sqrt 2)) at opset 17: the optimizer makes ONNX's Gelu, which
 * exists from opset 20 only, so the file must say so another way (src/onnx/export.c) */
static wb gelu_model(void)
{
    wb g = {0}, n;
    const float sqrt2 = 1.41421356f, one = 1.f, half = .5f;
    const int64_t xd[2] = {-1, 4};
    const char *xp[2] = {"batch", NULL};
    n = node("Div", "div", (const char *[]){"x", "sqrt2"}, 2, (const char *[]){"d"}, 1);
    add_node(&g, &n);
    n = node("Erf", "erf", (const char *[]){"d"}, 1, (const char *[]){"e"}, 1);
    add_node(&g, &n);
    n = node("Add", "add", (const char *[]){"e", "one"}, 2, (const char *[]){"a"}, 1);
    add_node(&g, &n);
    n = node("Mul", "mul", (const char *[]){"x", "a"}, 2, (const char *[]){"m"}, 1);
    add_node(&g, &n);
    n = node("Mul", "half", (const char *[]){"m", "h"}, 2, (const char *[]){"out"}, 1);
    add_node(&g, &n);
    w_str(&g, 2, "gelu");
    wb t = tensor_raw("sqrt2", 1, 0, NULL, &sqrt2, sizeof sqrt2);
    w_msg(&g, 5, &t);
    t = tensor_raw("one", 1, 0, NULL, &one, sizeof one);
    w_msg(&g, 5, &t);
    t = tensor_raw("h", 1, 0, NULL, &half, sizeof half);
    w_msg(&g, 5, &t);
    wb vi = value_info("x", 1, 2, xd, xp);
    w_msg(&g, 11, &vi);
    vi = value_info("out", 1, 2, xd, xp);
    w_msg(&g, 12, &vi);
    return model(&g, 17);
}

/* x [batch,3,16,16] -> Conv 3x3/2 -> Relu -> MaxPool 3x3/2 (conv_pool) -> y [batch,8,4,4]; then a
 * bottleneck's end: conv3 1x1 of Relu(y) plus a stride-2 1x1 shortcut of y, Relu (shortcut_merge) at
 * opset 9: the merged conv reads Slice(y, steps 2), an ONNX op of opset 10 or later in this form, which
 * the file stores in the ingot domain and must read back as it was made (src/onnx/export.c) */
static wb shortcut_model(void)
{
    wb g = {0}, n;
    const int64_t wd[4] = {8, 3, 3, 3}, w3d[4] = {6, 8, 1, 1}, wsd[4] = {6, 8, 1, 1}, c8[1] = {8}, c6[1] = {6};
    init_rand(&g, "W", 4, wd, -0.5f, 0.5f);
    init_rand(&g, "B", 1, c8, -0.1f, 0.1f);
    init_rand(&g, "W3", 4, w3d, -0.5f, 0.5f);
    init_rand(&g, "B3", 1, c6, -0.1f, 0.1f);
    init_rand(&g, "Ws", 4, wsd, -0.5f, 0.5f);
    init_rand(&g, "Bs", 1, c6, -0.1f, 0.1f);
    const int64_t k3[2] = {3, 3}, k1[2] = {1, 1}, p1[4] = {1, 1, 1, 1}, s2[2] = {2, 2};
    n = node("Conv", "stem", (const char *[]){"x", "W", "B"}, 3, (const char *[]){"c"}, 1);
    attr_ints(&n, "kernel_shape", k3, 2);
    attr_ints(&n, "pads", p1, 4);
    attr_ints(&n, "strides", s2, 2);
    add_node(&g, &n);
    n = node("Relu", "stem_relu", (const char *[]){"c"}, 1, (const char *[]){"r"}, 1);
    add_node(&g, &n);
    n = node("MaxPool", "pool", (const char *[]){"r"}, 1, (const char *[]){"y"}, 1);
    attr_ints(&n, "kernel_shape", k3, 2);
    attr_ints(&n, "pads", p1, 4);
    attr_ints(&n, "strides", s2, 2);
    add_node(&g, &n);
    n = node("Relu", "relu_y", (const char *[]){"y"}, 1, (const char *[]){"ry"}, 1);
    add_node(&g, &n);
    n = node("Conv", "conv3", (const char *[]){"ry", "W3", "B3"}, 3, (const char *[]){"c3"}, 1);
    attr_ints(&n, "kernel_shape", k1, 2);
    attr_ints(&n, "strides", s2, 2);
    add_node(&g, &n);
    n = node("Conv", "down", (const char *[]){"y", "Ws", "Bs"}, 3, (const char *[]){"cd"}, 1);
    attr_ints(&n, "kernel_shape", k1, 2);
    attr_ints(&n, "strides", s2, 2);
    add_node(&g, &n);
    n = node("Add", "add", (const char *[]){"c3", "cd"}, 2, (const char *[]){"a"}, 1);
    add_node(&g, &n);
    n = node("Relu", "relu", (const char *[]){"a"}, 1, (const char *[]){"out"}, 1);
    add_node(&g, &n);
    w_str(&g, 2, "shortcut");
    const int64_t xd[4] = {-1, 3, 16, 16}, od[4] = {-1, 6, 2, 2};
    const char *xp[4] = {"batch", NULL, NULL, NULL};
    wb vi = value_info("x", 1, 4, xd, xp);
    w_msg(&g, 11, &vi);
    vi = value_info("out", 1, 4, od, xp);
    w_msg(&g, 12, &vi);
    return model(&g, 9);
}

/* ---- helpers ---------------------------------------------------------------------------------------- */

static ingot_engine *build(ingot_runtime *rt, const wb *m, int64_t batch)
{
    ingot_model *md = NULL;
    ingot_engine *e = NULL;
    if (ingot_model_load_buffer(rt, m->p, m->n, NULL, NULL, &md) != INGOT_OK) return NULL;
    if (batch > 0) ingot_model_set_batch(md, batch);
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    bo.n_threads = 1;
    if (ingot_engine_build(rt, md, &bo, &e) != INGOT_OK) e = NULL;
    ingot_model_destroy(md); /* the engine keeps what it needs */
    return e;
}

typedef struct outs {
    int n;
    size_t bytes[4];
    void *data[4];
} outs;

static void outs_free(outs *o)
{
    for (int i = 0; i < o->n; i++) free(o->data[i]);
    memset(o, 0, sizeof *o);
}

/* Run e once on a fixed input of the given batch; the outputs copied into *o. */
static ingot_status run(ingot_engine *e, const char *input, int32_t rank, const int64_t *dims, outs *o)
{
    memset(o, 0, sizeof *o);
    ingot_context *c = NULL;
    ingot_status st = ingot_context_create(e, NULL, &c);
    if (st != INGOT_OK) return st;
    int64_t n = 1;
    for (int32_t k = 0; k < rank; k++) n *= dims[k];
    float *x = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
    ingot_tensor in = {
        .name = input, .dtype = INGOT_DTYPE_FLOAT, .rank = rank, .data = x, .bytes = sizeof(float) * (size_t)n};
    memcpy(in.dims, dims, sizeof(int64_t) * (size_t)rank);
    if ((st = ingot_context_run(c, &in, 1)) == INGOT_OK) {
        for (int64_t i = 0; i < 4; i++) {
            ingot_tensor t;
            if (ingot_context_get_output(c, i, &t) != INGOT_OK) break;
            o->data[o->n] = malloc(t.bytes + 1);
            memcpy(o->data[o->n], t.data, t.bytes);
            o->bytes[o->n++] = t.bytes;
        }
    } else {
        fprintf(stderr, "  run: %s\n", ingot_context_errmsg(c));
    }
    free(x);
    ingot_context_destroy(c);
    return st;
}

static bool outs_equal(const outs *a, const outs *b)
{
    if (a->n != b->n || a->n == 0) return false;
    for (int i = 0; i < a->n; i++)
        if (a->bytes[i] != b->bytes[i] || memcmp(a->data[i], b->data[i], a->bytes[i]) != 0) return false;
    return true;
}

static char *describe(ingot_engine *e)
{
    char *j = NULL;
    if (ingot_engine_describe_json(e, &j) != INGOT_OK) return NULL;
    /* the optimizer's timings are the only figures that may differ: cut them out ("ms": x) */
    for (char *p = j; (p = strstr(p, "\"ms\":")) != NULL;) {
        char *q = p + 5;
        while (*q && *q != ',' && *q != '}') *q++ = '0';
        p = q;
    }
    return j;
}

/* Rewrite the bytes of one section of an engine file (the CRCs recomputed, so only the loader's own
 * checks of that section's contents stand between the forgery and the engine). */
static bool forge(const void *file, size_t n, uint32_t kind, const void *data, size_t size, ig_wbuf *out)
{
    ig_efile ef;
    ig_err err = {0};
    if (ig__efile_open(file, n, NULL, 0, &ef, &err) != INGOT_OK) return false;
    ig_efile_sec secs[IG_EFILE_MAX_SECTION];
    for (int32_t i = 0; i < ef.n_sections; i++) {
        secs[i] = ef.sec[i];
        if (secs[i].kind == kind) {
            secs[i].data = data;
            secs[i].size = size;
        }
    }
    return ig__efile_write(secs, ef.n_sections, out, &err) == INGOT_OK;
}

static const ig_efile_sec *section(const void *file, size_t n, uint32_t kind, ig_efile *ef)
{
    ig_err err = {0};
    if (ig__efile_open(file, n, NULL, 0, ef, &err) != INGOT_OK) return NULL;
    return ig__efile_find(ef, kind);
}

/* ---- tests ------------------------------------------------------------------------------------------- */

static void test_crc32c(void)
{
    ASSERT_EQ(ig__crc32c(0, "123456789", 9), 0xE3069283u); /* the CRC-32C check value */
    ASSERT_EQ(ig__crc32c_portable(0, "123456789", 9), 0xE3069283u);
    ASSERT_EQ(ig__crc32c(0, "", 0), 0u);
    uint8_t buf[4099];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(frand() * 127 + 128);
    for (size_t off = 0; off < 9; off++)
        for (size_t len = 0; len + off <= sizeof buf; len += 97)
            ASSERT_EQ(ig__crc32c(0, buf + off, len), ig__crc32c_portable(0, buf + off, len));
    /* chaining: crc(a || b) = crc(crc(a), b) */
    ASSERT_EQ(ig__crc32c(ig__crc32c(0, buf, 1000), buf + 1000, 3099), ig__crc32c(0, buf, 4099));
}

/* The bulk fp16 conversion a CUDA engine's load runs (F16C where the CPU has it) against the scalar one,
 * on random bit patterns (NaNs, infinities, subnormals, out-of-range values among them). */
static void test_f16_bulk(void)
{
    enum { N = 4099 };
    static float v[N];
    static uint16_t got[N], want[N];
    for (int i = 0; i < N; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t u = (uint32_t)(rng >> 32);
        memcpy(&v[i], &u, 4);
    }
    const float special[] = {INFINITY, -INFINITY, NAN, 70000.f, -70000.f, 65519.f, 65520.f, 1e-8f, 6e-5f, -0.0f};
    memcpy(v, special, sizeof special);
    for (int sat = 0; sat < 2; sat++) {
        ig__f32_to_f16_n((const char *)v + 0, got, N, sat);
        int bad = 0;
        for (int i = 0; i < N; i++) {
            float f = v[i];
            if (sat && !isinf(f)) f = f > 65504.f ? 65504.f : f < -65504.f ? -65504.f : f;
            want[i] = ig__f32_to_f16(f);
            bad += got[i] != want[i];
        }
        ASSERT_EQ(bad, 0);
    }
    /* unaligned source */
    static unsigned char raw[4 * 64 + 1];
    memcpy(raw + 1, v, 4 * 64);
    ig__f32_to_f16_n(raw + 1, got, 64, true);
    ig__f32_to_f16_n(v, want, 64, true);
    ASSERT(!memcmp(got, want, sizeof(uint16_t) * 64));
}

static void test_container(void)
{
    const char a[] = "first section", b[] = "a second, longer section of bytes";
    ig_efile_sec secs[2] = {{IG_FOURCC('A', 'A', 'A', 'A'), 8, a, sizeof a},
                            {IG_FOURCC('B', 'B', 'B', 'B'), 64, b, sizeof b}};
    ig_wbuf f = {0};
    ig_err err = {0};
    ASSERT_EQ(ig__efile_write(secs, 2, &f, &err), INGOT_OK);
    ig_efile ef;
    ASSERT_EQ(ig__efile_open(f.p, f.n, NULL, 0, &ef, &err), INGOT_OK);
    const ig_efile_sec *s = ig__efile_find(&ef, IG_FOURCC('B', 'B', 'B', 'B'));
    ASSERT(s && s->size == sizeof b && !memcmp(s->data, b, sizeof b));
    ASSERT_EQ(((const uint8_t *)s->data - f.p) % 64, 0);
    ASSERT(ig__efile_find(&ef, IG_FOURCC('C', 'C', 'C', 'C')) == NULL);
    /* every truncation and every single-bit flip is rejected, with a message */
    int rejected = 0, total = 0;
    for (size_t n = 0; n < f.n; n++, total++) {
        ig_err e2 = {0};
        if (ig__efile_open(f.p, n, NULL, 0, &ef, &e2) == INGOT_ERR_ENGINE_FILE && e2.msg[0]) rejected++;
    }
    for (size_t i = 0; i < f.n * 8; i++, total++) {
        f.p[i / 8] ^= (uint8_t)(1u << (i % 8));
        ig_err e2 = {0};
        ingot_status st = ig__efile_open(f.p, f.n, NULL, 0, &ef, &e2);
        if (st != INGOT_OK && e2.msg[0]) rejected++;
        f.p[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
    ASSERT_EQ(rejected, total);
    ASSERT_EQ(ig__efile_open(f.p, f.n, NULL, 0, &ef, &err), INGOT_OK); /* restored */
    /* a section twice */
    secs[1].kind = secs[0].kind;
    ig_wbuf d = {0};
    ASSERT_EQ(ig__efile_write(secs, 2, &d, &err), INGOT_OK);
    ASSERT_EQ(ig__efile_open(d.p, d.n, NULL, 0, &ef, &err), INGOT_ERR_ENGINE_FILE);
    ASSERT(strstr(err.msg, "twice") != NULL);
    ig__wbuf_free(&d);
    ig__wbuf_free(&f);
}

typedef struct rt_case {
    const char *what;
    wb (*make)(void);
    const char *input;
    int32_t rank;
    int64_t dims[4];
} rt_case;

static const rt_case cases[] = {
    {"small", small_model, "x", 2, {3, 4}},
    {"conv", conv_model, "x", 4, {2, 3, 8, 8}},
    {"gelu at opset 17", gelu_model, "x", 2, {3, 4}},
    {"pooled stem and merged shortcut at opset 9", shortcut_model, "x", 4, {2, 3, 16, 16}},
};

static void test_roundtrip(void)
{
    ingot_runtime *rt = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const rt_case *k = &cases[c];
        wb m = k->make();
        ingot_engine *e = build(rt, &m, 2);
        if (!e) fprintf(stderr, "  %s: %s\n", k->what, ingot_runtime_errmsg(rt));
        ASSERT(e != NULL);
        if (!e) {
            free(m.p);
            continue;
        }
        outs built, loaded, mapped, other;
        ASSERT_EQ(run(e, k->input, k->rank, k->dims, &built), INGOT_OK);
        void *bytes = NULL;
        size_t n = 0;
        ASSERT_EQ(ingot_engine_serialize(e, &bytes, &n), INGOT_OK);
        ingot_engine *e2 = NULL;
        ASSERT_EQ(ingot_engine_load_buffer(rt, bytes, n, NULL, &e2), INGOT_OK);
        if (!e2) fprintf(stderr, "  %s: %s\n", k->what, ingot_runtime_errmsg(rt));
        if (e2) {
            ASSERT_EQ(run(e2, k->input, k->rank, k->dims, &loaded), INGOT_OK);
            ASSERT(outs_equal(&built, &loaded)); /* bit for bit */
            /* the same graph, provenance and report */
            char *j1 = describe(e), *j2 = describe(e2);
            ASSERT(j1 && j2 && !strcmp(j1, j2));
            if (j1 && j2 && strcmp(j1, j2)) fprintf(stderr, "  built:  %.300s\n  loaded: %.300s\n", j1, j2);
            ingot_free(j1);
            ingot_free(j2);
            size_t m1 = 0, m2 = 0;
            ASSERT_EQ(ingot_engine_memory_size(e, &m1), INGOT_OK);
            ASSERT_EQ(ingot_engine_memory_size(e2, &m2), INGOT_OK);
            ASSERT_EQ(m1, m2);
            /* saving the loaded engine gives the same file */
            void *again = NULL;
            size_t n2 = 0;
            ASSERT_EQ(ingot_engine_serialize(e2, &again, &n2), INGOT_OK);
            if (getenv("ENGINE_DUMP")) {
                FILE *d1 = fopen("/tmp/ef1.bin", "wb"), *d2 = fopen("/tmp/ef2.bin", "wb");
                fwrite(bytes, 1, n, d1);
                fwrite(again, 1, n2, d2);
                fclose(d1);
                fclose(d2);
            }
            ASSERT(n2 == n && !memcmp(again, bytes, n));
            ingot_free(again);
            /* another batch than the one built for: re-inferred and re-planned as usual */
            int64_t d5[4];
            memcpy(d5, k->dims, sizeof d5);
            d5[0] = 5;
            outs a5, b5;
            ASSERT_EQ(run(e, k->input, k->rank, d5, &a5), INGOT_OK);
            ASSERT_EQ(run(e2, k->input, k->rank, d5, &b5), INGOT_OK);
            ASSERT(outs_equal(&a5, &b5));
            outs_free(&a5);
            outs_free(&b5);
            outs_free(&loaded);
        }
        /* through a file, mapped, with the building engine gone */
        char path[64];
        snprintf(path, sizeof path, "/tmp/ingot_test_engine_%d.ingot", (int)getpid());
        ASSERT_EQ(ingot_engine_save(e, path), INGOT_OK);
        ingot_engine_destroy(e);
        ingot_engine *e3 = NULL;
        ASSERT_EQ(ingot_engine_load(rt, path, NULL, &e3), INGOT_OK);
        if (e3) {
            ASSERT_EQ(run(e3, k->input, k->rank, k->dims, &mapped), INGOT_OK);
            ASSERT(outs_equal(&built, &mapped));
            outs_free(&mapped);
            ASSERT_EQ(ingot_engine_backend(e3), INGOT_BACKEND_CPU);
        }
        /* read into memory instead of mapped, threads overridden */
        ingot_engine_load_options lo = ingot_engine_load_options_default();
        lo.use_mmap = 0;
        lo.n_threads = 2;
        ingot_engine *e4 = NULL;
        ASSERT_EQ(ingot_engine_load(rt, path, &lo, &e4), INGOT_OK);
        if (e4) {
            ASSERT_EQ(run(e4, k->input, k->rank, k->dims, &other), INGOT_OK);
            ASSERT(outs_equal(&built, &other));
            outs_free(&other);
        }
        ingot_engine_destroy(e3);
        ingot_engine_destroy(e4);
        ingot_engine_destroy(e2);
        unlink(path);
        ingot_free(bytes);
        outs_free(&built);
        free(m.p);
    }
    ingot_runtime_destroy(rt);
}

/* A load that must fail: a status other than OK, a message, nothing returned. */
static bool rejects(ingot_runtime *rt, const void *p, size_t n, ingot_status want)
{
    ingot_engine *e = (ingot_engine *)(uintptr_t)1;
    ingot_status st = ingot_engine_load_buffer(rt, p, n, NULL, &e);
    bool ok = st != INGOT_OK && e == NULL && ingot_runtime_errmsg(rt)[0] && (want == INGOT_OK || st == want);
    if (!ok)
        fprintf(stderr, "  expected a failure (%s), got %s: %s\n", ingot_status_name(want), ingot_status_name(st),
                ingot_runtime_errmsg(rt));
    if (st == INGOT_OK) ingot_engine_destroy(e);
    return ok;
}

static void test_hostile(void)
{
    ingot_runtime *rt = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    wb m = conv_model();
    ingot_engine *e = build(rt, &m, 1);
    ASSERT(e != NULL);
    if (!e) {
        free(m.p);
        ingot_runtime_destroy(rt);
        return;
    }
    void *file = NULL;
    size_t n = 0;
    ASSERT_EQ(ingot_engine_serialize(e, &file, &n), INGOT_OK);
    uint8_t *f = file;
    /* truncated anywhere */
    int bad = 0, tried = 0;
    for (size_t k = 0; k < n; k += (k < 4096 ? 7 : 997), tried++) bad += !rejects(rt, f, k, INGOT_ERR_ENGINE_FILE);
    /* a bit flipped anywhere: the checksums and the zero padding leave no byte unwatched */
    for (size_t k = 0; k < n * 8; k += 61, tried++) {
        f[k / 8] ^= (uint8_t)(1u << (k % 8));
        bad += !rejects(rt, f, n, INGOT_OK);
        f[k / 8] ^= (uint8_t)(1u << (k % 8));
    }
    ASSERT_EQ(bad, 0);
    ASSERT(tried > 1000);
    /* an ONNX model where an engine file is expected */
    ASSERT(rejects(rt, m.p, m.n, INGOT_ERR_ENGINE_FILE));
    ASSERT(strstr(ingot_runtime_errmsg(rt), "ONNX model") != NULL);

    ig_efile ef;
    ig_wbuf forged = {0};
    /* another ingot version: a mismatch that says what differs */
    const ig_efile_sec *fp = section(f, n, IG_SEC_FINGERPRINT, &ef);
    ASSERT(fp != NULL);
    if (fp) {
        uint8_t *copy = malloc(fp->size);
        memcpy(copy, fp->data, fp->size);
        uint8_t *v = find_bytes(copy, fp->size, "0.1.0");
        ASSERT(v != NULL);
        if (v) memcpy(v, "9.9.9", 5);
        ASSERT(forge(f, n, IG_SEC_FINGERPRINT, copy, fp->size, &forged));
        ASSERT(rejects(rt, forged.p, forged.n, INGOT_ERR_ENGINE_MISMATCH));
        ASSERT(strstr(ingot_runtime_errmsg(rt), "ingot: built with 9.9.9") != NULL);
        ig__wbuf_free(&forged);
        free(copy);
    }
    /* every metadata section replaced by garbage, by nothing, or by a huge count, checksums valid */
    const uint32_t kinds[] = {IG_SEC_FINGERPRINT, IG_SEC_OPTIONS, IG_SEC_GRAPH,
                              IG_SEC_PROVENANCE,  IG_SEC_PLANS,   IG_SEC_WEIGHTS};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const ig_efile_sec *s = section(f, n, kinds[i], &ef);
        ASSERT(s != NULL);
        if (!s) continue;
        uint8_t *copy = malloc(s->size + 16);
        memcpy(copy, s->data, s->size);
        ASSERT(forge(f, n, kinds[i], copy, 0, &forged)); /* empty */
        ASSERT(rejects(rt, forged.p, forged.n, INGOT_OK));
        ig__wbuf_free(&forged);
        for (size_t at = 0; at + 4 <= s->size; at += (s->size / 40 + 1)) { /* a count or length: 2^31 - 1 */
            memcpy(copy, s->data, s->size);
            const uint32_t big = 0x7fffffffu;
            memcpy(copy + at, &big, 4);
            ASSERT(forge(f, n, kinds[i], copy, s->size, &forged));
            ingot_engine *x = NULL;
            ingot_status st = ingot_engine_load_buffer(rt, forged.p, forged.n, NULL, &x);
            /* some positions hold values a forger may change harmlessly (a float, a name's letters):
             * loading may succeed, but never crash or hang, and a failure always says why */
            ASSERT(st == INGOT_OK || ingot_runtime_errmsg(rt)[0]);
            ingot_engine_destroy(x);
            ig__wbuf_free(&forged);
        }
        for (size_t k = 0; k < s->size; k++) copy[k] = (uint8_t)(frand() * 127 + 128); /* garbage */
        ASSERT(forge(f, n, kinds[i], copy, s->size, &forged));
        if (kinds[i] != IG_SEC_WEIGHTS) ASSERT(rejects(rt, forged.p, forged.n, INGOT_OK));
        ig__wbuf_free(&forged);
        free(copy);
    }
    /* the weights are checked unless the caller opts out */
    const ig_efile_sec *ws = section(f, n, IG_SEC_WEIGHTS, &ef);
    ASSERT(ws && ws->size > 64);
    if (ws) {
        size_t at = (size_t)((const uint8_t *)ws->data - f) + 40;
        f[at] ^= 0x10;
        ASSERT(rejects(rt, f, n, INGOT_ERR_ENGINE_FILE));
        ASSERT(strstr(ingot_runtime_errmsg(rt), "WGHT") != NULL);
        ingot_engine_load_options lo = ingot_engine_load_options_default();
        lo.verify_weights = 0;
        ingot_engine *x = NULL;
        ASSERT_EQ(ingot_engine_load_buffer(rt, f, n, &lo, &x), INGOT_OK);
        ingot_engine_destroy(x);
        f[at] ^= 0x10;
    }
    /* bad arguments */
    ingot_engine *x = NULL;
    ingot_engine_load_options lo = ingot_engine_load_options_default();
    lo.struct_size = 3;
    ASSERT_EQ(ingot_engine_load_buffer(rt, f, n, &lo, &x), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_engine_load_buffer(rt, NULL, 10, NULL, &x), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_engine_load(rt, NULL, NULL, &x), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_engine_load(rt, "/nonexistent/x.ingot", NULL, &x), INGOT_ERR_IO);
    ASSERT(strstr(ingot_runtime_errmsg(rt), "/nonexistent/x.ingot") != NULL);
    ASSERT_EQ(ingot_engine_save(e, "/nonexistent/dir/x.ingot"), INGOT_ERR_IO);
    ASSERT_EQ(ingot_engine_load_buffer(rt, f, n, NULL, &x), INGOT_OK); /* the original still loads */
    ingot_engine_destroy(x);
    ingot_free(file);
    ingot_engine_destroy(e);
    free(m.p);
    ingot_runtime_destroy(rt);
}

TEST_MAIN(RUN(test_crc32c); RUN(test_f16_bulk); RUN(test_container); RUN(test_roundtrip); RUN(test_hostile))
