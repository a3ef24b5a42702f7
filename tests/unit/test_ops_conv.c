/*
 * test_ops_conv.c -- the conv and matmul op families (src/ops/conv.c, src/ops/matmul.c) and the SGEMM
 * under them (src/cpu/gemm.c): every kernel against a naive double-precision reference on random
 * shapes (strides, pads, dilations, groups, transposes, broadcasting, odd sizes), on one thread and
 * on the pool, on every micro-kernel the CPU has; shape inference with a symbolic batch; the error
 * messages; FLOP counts (ResNet-50 must come out at ~8.2 GFLOP).
 */
#include "cpu/cpu.h"
#include "ops/op.h"
#include "test.h"

/* ---- random numbers (deterministic) ---- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}
static int64_t rint_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint32_t)(hi - lo + 1)); }
static float rfloat(void) { return (float)(rnd() % 2001) / 1000.0f - 1.0f; }

/* ---- a tiny graph builder ---- */

typedef struct T {
    ig_graph g;
    ig_arena fold;
    ig_err err;
} T;

static void t_init(T *t)
{
    memset(t, 0, sizeof *t);
    ig__graph_init(&t->g, &t->err);
    ig__arena_init(&t->fold);
}

static void t_free(T *t)
{
    ig__arena_free(&t->fold);
    ig__graph_free(&t->g);
}

static ig_value *V(T *t, const char *name)
{
    int32_t id = ig__graph_value(&t->g, name, &t->err); /* may move the value array: index after */
    return &t->g.values[id];
}

static ig_value *t_input(T *t, const char *name, ingot_dtype dt, int rank, const ig_dim *dims)
{
    ig_value *v = V(t, name);
    v->dtype = dt;
    v->shape.rank = rank;
    for (int i = 0; i < rank; i++) v->shape.d[i] = dims[i];
    v->flags |= IG_VAL_INPUT;
    return v;
}

static ig_value *t_input_c(T *t, const char *name, ingot_dtype dt, int rank, const int64_t *dims)
{
    ig_dim d[IG_MAX_RANK];
    for (int i = 0; i < rank; i++) d[i] = ig__dim_const(dims[i]);
    return t_input(t, name, dt, rank, d);
}

static ig_node *t_node(T *t, const char *op, int opset, int ni, const char *const *ins, int no, const char *const *outs)
{
    int32_t id = ig__graph_add_node(&t->g, op, op, "", ni, no, 12, &t->err);
    ig_node *n = &t->g.nodes[id];
    n->n_attrs = 0;
    n->opset = opset;
    for (int i = 0; i < ni; i++) {
        int32_t v = ins[i] ? ig__graph_value(&t->g, ins[i], &t->err) : -1;
        t->g.nodes[id].inputs[i] = v;
    }
    for (int i = 0; i < no; i++) {
        int32_t v = outs[i] ? ig__graph_value(&t->g, outs[i], &t->err) : -1;
        t->g.nodes[id].outputs[i] = v;
        if (v >= 0) t->g.values[v].producer = id;
    }
    return &t->g.nodes[id];
}

static void a_int(ig_node *n, const char *name, int64_t v)
{
    ig_attr *a = &n->attrs[n->n_attrs++];
    a->name = name;
    a->type = IG_ATTR_INT;
    a->i = v;
}

static void a_float(ig_node *n, const char *name, float v)
{
    ig_attr *a = &n->attrs[n->n_attrs++];
    a->name = name;
    a->type = IG_ATTR_FLOAT;
    a->f = v;
}

static void a_str(ig_node *n, const char *name, const char *s)
{
    ig_attr *a = &n->attrs[n->n_attrs++];
    a->name = name;
    a->type = IG_ATTR_STRING;
    a->s = s;
    a->s_len = strlen(s);
}

static void a_ints(T *t, ig_node *n, const char *name, int c, const int64_t *v)
{
    ig_attr *a = &n->attrs[n->n_attrs++];
    int64_t *p = ig__arena_alloc(&t->g.arena, sizeof(int64_t) * (size_t)(c ? c : 1));
    memcpy(p, v, sizeof(int64_t) * (size_t)c);
    a->name = name;
    a->type = IG_ATTR_INTS;
    a->ints = p;
    a->n = c;
}

static ingot_status t_infer(T *t, ig_node *n, const ig_op_def *d)
{
    ig_infer cx = {.g = &t->g, .node = n, .err = &t->err, .fold_arena = &t->fold};
    return d->infer(&cx);
}

static ig_value *OUT(T *t, ig_node *n, int i) { return &t->g.values[n->outputs[i]]; }

/* ---- tensors ---- */

static ig_tensor *tensor_new(ingot_dtype dt, int rank, const int64_t *dims)
{
    ig_tensor *t = calloc(1, sizeof *t);
    ig__tensor_set_shape(t, dt, rank, dims);
    size_t bytes = (size_t)t->numel * ingot_dtype_size(dt);
    t->data = ig__malloc_aligned(bytes ? bytes : 64, 64);
    memset(t->data, 0, bytes);
    return t;
}

static void tensor_free(ig_tensor *t)
{
    if (!t) return;
    ig__free_aligned(t->data);
    free(t);
}

static ig_tensor *tensor_rand(ingot_dtype dt, int rank, const int64_t *dims)
{
    ig_tensor *t = tensor_new(dt, rank, dims);
    for (int64_t i = 0; i < t->numel; i++) {
        float v = rfloat();
        if (ig__dtype_is_int(dt))
            ig__elem_set_i64(dt, t->data, i, (int64_t)((ig__dtype_is_signed(dt) ? v : fabsf(v)) * 20));
        else if (dt == INGOT_DTYPE_FLOAT16)
            ((uint16_t *)t->data)[i] = ig__f32_to_f16(v);
        else if (dt == INGOT_DTYPE_BFLOAT16)
            ((uint16_t *)t->data)[i] = ig__f32_to_bf16(v);
        else
            ig__elem_set_f64(dt, t->data, i, v);
    }
    return t;
}

static double tget(const ig_tensor *t, int64_t i) { return ig__elem_f64(t->dtype, t->data, i); }

/* Infer node n (inputs already declared with the tensors' shapes), allocate outputs from the inferred
 * shapes, size scratch with cpu_scratch and run the CPU kernel. Outputs land in outs[]. */
static ingot_status t_run(T *t, ig_node *n, const ig_op_def *d, const ig_tensor *const *ins, int ni, ig_tensor **outs,
                          int no, struct ig_pool *pool)
{
    ingot_status st = t_infer(t, n, d);
    if (st != INGOT_OK) return st;
    for (int i = 0; i < no; i++) {
        outs[i] = NULL;
        if (n->outputs[i] < 0) continue;
        const ig_value *v = OUT(t, n, i);
        int64_t dims[IG_MAX_RANK];
        for (int k = 0; k < v->shape.rank; k++) dims[k] = v->shape.d[k].n;
        outs[i] = tensor_new(v->dtype, v->shape.rank, dims);
    }
    size_t sb = d->cpu_scratch ? d->cpu_scratch(&t->g, n) : 0;
    void *scratch = sb ? ig__malloc_aligned(sb, 64) : NULL;
    ig_exec ex = {.g = &t->g,
                  .node = n,
                  .n_in = ni,
                  .in = ins,
                  .n_out = no,
                  .out = outs,
                  .scratch = scratch,
                  .scratch_bytes = sb,
                  .pool = pool,
                  .err = &t->err};
    st = d->cpu(&ex);
    ig__free_aligned(scratch);
    return st;
}

static struct ig_pool *pool2;

/* ---- SGEMM ---- */

static void ref_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                     const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++)
                s += (double)(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
            c[i * ldc + j] = (float)(beta == 0 ? alpha * s : alpha * s + beta * (double)c[i * ldc + j]);
        }
}

/* One random product checked against the reference; returns false (after printing) on a mismatch. */
static bool gemm_case(int64_t m, int64_t n, int64_t k, bool ta, bool tb, float alpha, float beta, int pad,
                      struct ig_pool *pool, bool with_ws)
{
    int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    int64_t an = lda * (ta ? k : m), bn = ldb * (tb ? n : k), cn = ldc * m;
    float *a = malloc(sizeof(float) * (size_t)(an + 1)), *b = malloc(sizeof(float) * (size_t)(bn + 1));
    float *c = malloc(sizeof(float) * (size_t)(cn + 1)), *r = malloc(sizeof(float) * (size_t)(cn + 1));
    for (int64_t i = 0; i < an; i++) a[i] = rfloat();
    for (int64_t i = 0; i < bn; i++) b[i] = rfloat();
    for (int64_t i = 0; i < cn; i++) c[i] = r[i] = rfloat();
    if (beta == 0)
        for (int64_t i = 0; i < cn; i++) c[i] = NAN; /* beta == 0 must ignore C entirely */
    size_t wsb = with_ws ? ig__sgemm_ws_bytes(m, n, k) : 0;
    void *ws = wsb ? malloc(wsb + 3) : NULL;
    /* an unaligned workspace is allowed */
    ig__sgemm_ws(pool, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, ws ? (char *)ws + 3 : NULL, wsb);
    ref_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, r, ldc);
    bool ok = true;
    for (int64_t i = 0; i < m && ok; i++)
        for (int64_t j = 0; j < n; j++) {
            float got = c[i * ldc + j], want = r[i * ldc + j];
            if (!(fabsf(got - want) <= 1e-4f * (1.0f + sqrtf((float)k)) * (1.0f + fabsf(want)))) {
                fprintf(stderr,
                        "  sgemm[%s] m%" PRId64 " n%" PRId64 " k%" PRId64 " ta%d tb%d alpha %g beta %g pad %d: "
                        "C[%" PRId64 ",%" PRId64 "] = %g, want %g\n",
                        ig__sgemm_isa_name(), m, n, k, ta, tb, alpha, beta, pad, i, j, got, want);
                ok = false;
                break;
            }
        }
    /* the padding between rows of C is never written */
    for (int64_t i = 0; i < m && ok && pad; i++)
        for (int64_t j = n; j < ldc; j++)
            if (!(c[i * ldc + j] == r[i * ldc + j] || (beta == 0 && isnan(c[i * ldc + j])))) ok = false;
    free(a);
    free(b);
    free(c);
    free(r);
    free(ws);
    return ok;
}

TEST(sgemm_random_all_isas)
{
    for (int isa = 0; isa <= 2; isa++) {
        int old = ig__sgemm_force_isa(isa);
        for (int it = 0; it < 60; it++) {
            int64_t m = rint_in(1, 40), n = rint_in(1, 70), k = rint_in(0, 90);
            if (it % 7 == 0) { /* larger: several K slices and panels */
                m = rint_in(30, 150);
                n = rint_in(30, 150);
                k = rint_in(200, 700);
            }
            bool ta = rnd() & 1, tb = rnd() & 1;
            float alpha = it % 3 == 0 ? 1.0f : rfloat();
            float beta = it % 4 == 0 ? 0.0f : it % 4 == 1 ? 1.0f : rfloat();
            bool ok = gemm_case(m, n, k, ta, tb, alpha, beta, (int)rint_in(0, 3), it & 1 ? pool2 : NULL, it % 5 != 0);
            ig__sgemm_force_isa(old);
            ASSERT(ok);
            ig__sgemm_force_isa(isa);
        }
        ig__sgemm_force_isa(old);
    }
}

TEST(sgemm_vectors_and_edges)
{
    /* matrix-vector both ways, all transposes, strided */
    for (int tr = 0; tr < 4; tr++) {
        ASSERT(gemm_case(1, 300, 77, tr & 1, tr & 2, 1.0f, 0.0f, 2, NULL, true));
        ASSERT(gemm_case(300, 1, 77, tr & 1, tr & 2, 0.5f, 1.0f, 2, pool2, true));
        ASSERT(gemm_case(1, 1, 5, tr & 1, tr & 2, 2.0f, -1.0f, 0, NULL, true));
        ASSERT(gemm_case(257, 3, 1, tr & 1, tr & 2, 1.0f, 0.0f, 1, pool2, true));
    }
    /* k == 0 and alpha == 0: C = beta * C */
    ASSERT(gemm_case(5, 6, 0, false, false, 1.0f, 0.5f, 1, NULL, true));
    ASSERT(gemm_case(5, 6, 0, false, false, 1.0f, 0.0f, 1, NULL, true));
    ASSERT(gemm_case(5, 6, 9, false, true, 0.0f, 2.0f, 1, NULL, true));
}

TEST(sgemm_chunked_paths)
{
    /* a tiny packing cap forces K chunks and row chunks; both loop orders */
    int64_t old = ig__sgemm_set_pack_cap(4096);
    bool ok = gemm_case(100, 130, 300, false, false, 1.0f, 0.5f, 1, pool2, true) && /* B-stationary */
              gemm_case(300, 40, 250, true, true, -1.0f, 0.0f, 2, pool2, true) &&   /* A-stationary */
              gemm_case(90, 90, 1000, true, false, 1.0f, 1.0f, 0, NULL, false);
    ig__sgemm_set_pack_cap(old);
    ASSERT(ok);
    /* more rows than one chunk of packed A */
    ASSERT(gemm_case(1100, 1200, 9, false, false, 1.0f, 0.0f, 0, pool2, true));
}

TEST(sgemm_without_memory)
{
    /* no workspace and no memory for one: the stack-buffer path still computes the product */
    ig__alloc_fail_after(1);
    bool ok = gemm_case(100, 130, 300, false, true, 1.0f, 0.5f, 1, pool2, false) &&
              gemm_case(300, 20, 70, true, false, 2.0f, 0.0f, 0, NULL, false);
    ig__alloc_fail_after(0);
    ASSERT(ok);
}

/* ---- Conv ---- */

typedef struct conv_cfg {
    int nsp;
    int64_t n, c, m, group;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
    const char *auto_pad; /* NULL: explicit pads */
    bool bias;
    ingot_dtype dt;
} conv_cfg;

static int64_t conv_out_dim(const conv_cfg *c, int i, int64_t *pb)
{
    int64_t ek = (c->k[i] - 1) * c->d[i] + 1;
    if (c->auto_pad && strncmp(c->auto_pad, "SAME", 4) == 0) {
        int64_t o = (c->in[i] + c->s[i] - 1) / c->s[i];
        int64_t tot = (o - 1) * c->s[i] + ek - c->in[i];
        if (tot < 0) tot = 0;
        *pb = !strcmp(c->auto_pad, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
        return o;
    }
    if (c->auto_pad && !strcmp(c->auto_pad, "VALID")) {
        *pb = 0;
        return (c->in[i] - ek) / c->s[i] + 1;
    }
    *pb = c->pb[i];
    return (c->in[i] + c->pb[i] + c->pe[i] - ek) / c->s[i] + 1;
}

/* Build and run a Conv node; compare with the naive reference. */
static bool conv_check(const conv_cfg *c, struct ig_pool *pool)
{
    T t;
    t_init(&t);
    int rank = c->nsp + 2;
    int64_t xd[5] = {c->n, c->c}, wd[5] = {c->m, c->c / c->group}, bd[1] = {c->m};
    for (int i = 0; i < c->nsp; i++) {
        xd[2 + i] = c->in[i];
        wd[2 + i] = c->k[i];
    }
    ig_tensor *x = tensor_rand(c->dt, rank, xd), *w = tensor_rand(c->dt, rank, wd);
    ig_tensor *b = c->bias ? tensor_rand(c->dt, 1, bd) : NULL;
    t_input_c(&t, "X", c->dt, rank, xd);
    t_input_c(&t, "W", c->dt, rank, wd);
    if (b) t_input_c(&t, "B", c->dt, 1, bd);
    const char *ins[3] = {"X", "W", "B"}, *outs[1] = {"Y"};
    ig_node *n = t_node(&t, "Conv", 13, c->bias ? 3 : 2, ins, 1, outs);
    a_int(n, "group", c->group);
    a_ints(&t, n, "strides", c->nsp, c->s);
    a_ints(&t, n, "dilations", c->nsp, c->d);
    if (rnd() & 1) a_ints(&t, n, "kernel_shape", c->nsp, c->k);
    if (c->auto_pad) {
        a_str(n, "auto_pad", c->auto_pad);
    } else {
        int64_t pads[6];
        for (int i = 0; i < c->nsp; i++) {
            pads[i] = c->pb[i];
            pads[c->nsp + i] = c->pe[i];
        }
        a_ints(&t, n, "pads", 2 * c->nsp, pads);
    }
    const ig_tensor *in[3] = {x, w, b};
    ig_tensor *out[1];
    ingot_status st = t_run(&t, n, &ig__op_conv, in, c->bias ? 3 : 2, out, 1, pool);
    bool ok = st == INGOT_OK;
    if (!ok) fprintf(stderr, "  conv failed: %s\n", t.err.msg);
    int64_t od[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, osp = 1;
    for (int i = 0; i < c->nsp; i++) {
        od[i] = conv_out_dim(c, i, &pb[i]);
        osp *= od[i];
    }
    ig_tensor *y = ok ? out[0] : NULL;
    if (ok && (y->rank != rank || y->dims[0] != c->n || y->dims[1] != c->m)) ok = false;
    for (int i = 0; ok && i < c->nsp; i++)
        if (y->dims[2 + i] != od[i]) {
            fprintf(stderr, "  conv out dim %d: %" PRId64 " want %" PRId64 "\n", i, y->dims[2 + i], od[i]);
            ok = false;
        }
    int64_t cg = c->c / c->group, mg = c->m / c->group;
    int64_t kd[3] = {1, 1, 1}, ind[3] = {1, 1, 1};
    for (int i = 0; i < c->nsp; i++) {
        kd[i] = c->k[i];
        ind[i] = c->in[i];
    }
    double tol = c->dt == INGOT_DTYPE_FLOAT ? 1e-4 : c->dt == INGOT_DTYPE_DOUBLE ? 1e-5 : 2e-2;
    for (int64_t ni = 0; ok && ni < c->n; ni++)
        for (int64_t mi = 0; ok && mi < c->m; mi++)
            for (int64_t o = 0; ok && o < osp; o++) {
                int64_t oc[3] = {o / (od[1] * od[2]), (o / od[2]) % od[1], o % od[2]};
                double acc = b ? tget(b, mi) : 0, mag = fabs(acc);
                int64_t g = mi / mg;
                for (int64_t ci = 0; ci < cg; ci++)
                    for (int64_t k0 = 0; k0 < kd[0]; k0++)
                        for (int64_t k1 = 0; k1 < kd[1]; k1++)
                            for (int64_t k2 = 0; k2 < kd[2]; k2++) {
                                int64_t kk[3] = {k0, k1, k2}, ip[3] = {0, 0, 0};
                                bool inside = true;
                                for (int i = 0; i < c->nsp; i++) {
                                    ip[i] = oc[i] * c->s[i] - pb[i] + kk[i] * c->d[i];
                                    if (ip[i] < 0 || ip[i] >= ind[i]) inside = false;
                                }
                                if (!inside) continue;
                                int64_t xi = ((ni * c->c + g * cg + ci) * ind[0] + ip[0]) * ind[1] * ind[2] +
                                             ip[1] * ind[2] + ip[2];
                                int64_t wi = ((mi * cg + ci) * kd[0] + k0) * kd[1] * kd[2] + k1 * kd[2] + k2;
                                double p = tget(x, xi) * tget(w, wi);
                                acc += p;
                                mag += fabs(p);
                            }
                double got = tget(y, (ni * c->m + mi) * osp + o);
                if (!(fabs(got - acc) <= tol * (1 + mag))) {
                    fprintf(stderr,
                            "  conv nsp%d n%" PRId64 " c%" PRId64 " m%" PRId64 " g%" PRId64 " pad %s: y[%" PRId64
                            ",%" PRId64 ",%" PRId64 "] = %g, want %g\n",
                            c->nsp, c->n, c->c, c->m, c->group, c->auto_pad ? c->auto_pad : "explicit", ni, mi, o, got,
                            acc);
                    ok = false;
                }
            }
    tensor_free(x);
    tensor_free(w);
    tensor_free(b);
    if (st == INGOT_OK) tensor_free(out[0]);
    t_free(&t);
    return ok;
}

static void random_conv(conv_cfg *c, int nsp)
{
    memset(c, 0, sizeof *c);
    c->nsp = nsp;
    c->n = rint_in(1, 2);
    c->group = rnd() % 3 == 0 ? rint_in(2, 3) : 1;
    c->c = c->group * rint_in(1, 4);
    c->m = c->group * rint_in(1, 4);
    if (rnd() % 4 == 0) { /* depthwise, possibly with a channel multiplier */
        c->group = c->c = rint_in(2, 6);
        c->m = c->c * rint_in(1, 2);
    }
    int64_t max_in = nsp == 3 ? 6 : nsp == 2 ? 11 : 25;
    for (int i = 0; i < nsp; i++) {
        c->k[i] = rint_in(1, 3);
        c->s[i] = rint_in(1, 3);
        c->d[i] = rint_in(1, 2);
        c->pb[i] = rint_in(0, 2);
        c->pe[i] = rint_in(0, 2);
        int64_t ek = (c->k[i] - 1) * c->d[i] + 1;
        c->in[i] = rint_in(ek, max_in);
    }
    static const char *const modes[] = {"SAME_UPPER", "SAME_LOWER", "VALID"};
    c->auto_pad = rnd() % 4 == 0 ? modes[rnd() % 3] : NULL;
    c->bias = rnd() & 1;
    c->dt = INGOT_DTYPE_FLOAT;
}

TEST(conv_random_vs_reference)
{
    for (int it = 0; it < 90; it++) {
        conv_cfg c;
        random_conv(&c, 1 + it % 3);
        ASSERT(conv_check(&c, it & 1 ? pool2 : NULL));
    }
}

TEST(conv_common_shapes)
{
    /* 1x1 (pointwise, in place), 3x3 pad 1, 7x7 stride 2 stem, depthwise 3x3 stride 1 and 2 */
    conv_cfg c = {.nsp = 2,
                  .n = 2,
                  .c = 8,
                  .m = 16,
                  .group = 1,
                  .in = {9, 7},
                  .k = {1, 1},
                  .s = {1, 1},
                  .d = {1, 1},
                  .bias = true,
                  .dt = INGOT_DTYPE_FLOAT};
    ASSERT(conv_check(&c, pool2));
    conv_cfg c3 = {.nsp = 2,
                   .n = 1,
                   .c = 16,
                   .m = 24,
                   .group = 1,
                   .in = {14, 14},
                   .k = {3, 3},
                   .s = {1, 1},
                   .d = {1, 1},
                   .pb = {1, 1},
                   .pe = {1, 1},
                   .bias = true,
                   .dt = INGOT_DTYPE_FLOAT};
    ASSERT(conv_check(&c3, pool2));
    conv_cfg c7 = {.nsp = 2,
                   .n = 1,
                   .c = 3,
                   .m = 8,
                   .group = 1,
                   .in = {32, 30},
                   .k = {7, 7},
                   .s = {2, 2},
                   .d = {1, 1},
                   .pb = {3, 3},
                   .pe = {3, 3},
                   .dt = INGOT_DTYPE_FLOAT};
    ASSERT(conv_check(&c7, NULL));
    for (int s = 1; s <= 2; s++) {
        conv_cfg dw = {.nsp = 2,
                       .n = 2,
                       .c = 12,
                       .m = 12,
                       .group = 12,
                       .in = {15, 16},
                       .k = {3, 3},
                       .s = {s, s},
                       .d = {1, 1},
                       .pb = {1, 1},
                       .pe = {1, 1},
                       .bias = true,
                       .dt = INGOT_DTYPE_FLOAT};
        ASSERT(conv_check(&dw, pool2));
    }
    /* depthwise edge cases: widths at a multiple of the vector, unused input columns, odd widths,
     * stride 3, dilation, a channel multiplier, 1-D, and a plane too large for the padded buffer */
    static const int64_t dwc[][8] = {
        /* in_h, in_w, k, s, d, pad, mult, nsp */
        {5, 33, 3, 2, 1, 0, 1, 2}, {4, 34, 3, 2, 1, 0, 1, 2}, {6, 35, 5, 2, 1, 2, 2, 2},    {7, 50, 3, 3, 2, 1, 1, 2},
        {3, 32, 3, 1, 1, 1, 3, 2}, {1, 77, 5, 2, 1, 2, 1, 1}, {131, 130, 3, 1, 1, 1, 1, 2}, {9, 40, 2, 2, 1, 1, 1, 2},
    };
    for (size_t i = 0; i < sizeof dwc / sizeof dwc[0]; i++) {
        const int64_t *v = dwc[i];
        int nsp = (int)v[7];
        conv_cfg dw = {.nsp = nsp, .n = 1, .c = 3, .m = 3 * v[6], .group = 3, .bias = i & 1, .dt = INGOT_DTYPE_FLOAT};
        for (int d = 0; d < nsp; d++) {
            dw.in[d] = nsp == 2 ? v[d] : v[1];
            dw.k[d] = v[2];
            dw.s[d] = v[3];
            dw.d[d] = v[4];
            dw.pb[d] = dw.pe[d] = v[5];
        }
        ASSERT(conv_check(&dw, i & 1 ? pool2 : NULL));
    }
    /* 5x5 pad 2 on odd widths (Inception v1's 5x5 branches): a packing panel that ends inside an
     * output row while the kernel tap's valid range ends before the run starts once wrote one float
     * before the panel row (regression) */
    for (int64_t w = 7; w <= 29; w += 2) {
        conv_cfg c5 = {.nsp = 2,
                       .n = 1,
                       .c = 2,
                       .m = 3,
                       .group = 1,
                       .in = {w, w},
                       .k = {5, 5},
                       .s = {1, 1},
                       .d = {1, 1},
                       .pb = {2, 2},
                       .pe = {2, 2},
                       .bias = true,
                       .dt = INGOT_DTYPE_FLOAT};
        ASSERT(conv_check(&c5, w % 4 == 1 ? pool2 : NULL));
    }
    /* 1-D with a large dilation, and 3-D */
    conv_cfg c1 = {.nsp = 1,
                   .n = 1,
                   .c = 4,
                   .m = 5,
                   .group = 1,
                   .in = {40},
                   .k = {3},
                   .s = {2},
                   .d = {4},
                   .pb = {2},
                   .pe = {1},
                   .bias = true,
                   .dt = INGOT_DTYPE_FLOAT};
    ASSERT(conv_check(&c1, NULL));
    conv_cfg c33 = {.nsp = 3,
                    .n = 1,
                    .c = 2,
                    .m = 4,
                    .group = 2,
                    .in = {5, 6, 7},
                    .k = {3, 2, 3},
                    .s = {1, 2, 1},
                    .d = {1, 1, 2},
                    .pb = {1, 0, 2},
                    .pe = {1, 1, 0},
                    .dt = INGOT_DTYPE_FLOAT};
    ASSERT(conv_check(&c33, pool2));
}

TEST(conv_other_dtypes)
{
    ingot_dtype dts[3] = {INGOT_DTYPE_FLOAT16, INGOT_DTYPE_BFLOAT16, INGOT_DTYPE_DOUBLE};
    for (int i = 0; i < 3; i++) {
        conv_cfg c = {.nsp = 2,
                      .n = 1,
                      .c = 4,
                      .m = 6,
                      .group = 2,
                      .in = {7, 6},
                      .k = {3, 3},
                      .s = {1, 2},
                      .d = {1, 1},
                      .pb = {1, 1},
                      .pe = {1, 0},
                      .bias = true,
                      .dt = dts[i]};
        ASSERT(conv_check(&c, NULL));
    }
}

TEST(conv_infer_symbolic_batch)
{
    T t;
    t_init(&t);
    ig_dim xd[4] = {{1, ig__graph_symbol(&t.g, "batch")}, ig__dim_const(3), ig__dim_const(224), ig__dim_const(224)};
    int64_t wd[4] = {64, 3, 7, 7};
    t_input(&t, "X", INGOT_DTYPE_FLOAT, 4, xd);
    t_input_c(&t, "W", INGOT_DTYPE_FLOAT, 4, wd);
    const char *ins[2] = {"X", "W"}, *outs[1] = {"Y"};
    ig_node *n = t_node(&t, "Conv", 11, 2, ins, 1, outs);
    int64_t s[2] = {2, 2}, p[4] = {3, 3, 3, 3};
    a_ints(&t, n, "strides", 2, s);
    a_ints(&t, n, "pads", 4, p);
    ASSERT_EQ(t_infer(&t, n, &ig__op_conv), INGOT_OK);
    char buf[128];
    ASSERT_STREQ(ig__shape_str(&t.g, &OUT(&t, n, 0)->shape, buf, sizeof buf), "[batch,64,112,112]");
    ASSERT_EQ(OUT(&t, n, 0)->dtype, INGOT_DTYPE_FLOAT);

    /* symbolic spatial dims: kept through SAME stride 1, fresh otherwise */
    ig_dim hd[4] = {{1, ig__graph_symbol(&t.g, "N")},
                    ig__dim_const(8),
                    {1, ig__graph_symbol(&t.g, "H")},
                    {1, ig__graph_symbol(&t.g, "W")}};
    int64_t w3[4] = {16, 8, 3, 3};
    t_input(&t, "X2", INGOT_DTYPE_FLOAT, 4, hd);
    t_input_c(&t, "W2", INGOT_DTYPE_FLOAT, 4, w3);
    const char *ins2[2] = {"X2", "W2"}, *outs2[1] = {"Y2"};
    n = t_node(&t, "Conv", 11, 2, ins2, 1, outs2);
    a_str(n, "auto_pad", "SAME_UPPER");
    ASSERT_EQ(t_infer(&t, n, &ig__op_conv), INGOT_OK);
    ASSERT_STREQ(ig__shape_str(&t.g, &OUT(&t, n, 0)->shape, buf, sizeof buf), "[N,16,H,W]");
    const char *outs3[1] = {"Y3"};
    n = t_node(&t, "Conv", 11, 2, ins2, 1, outs3);
    a_ints(&t, n, "strides", 2, s);
    ASSERT_EQ(t_infer(&t, n, &ig__op_conv), INGOT_OK);
    ig_shape ys = OUT(&t, n, 0)->shape;
    ASSERT_EQ(ys.rank, 4);
    ASSERT(ig__dim_eq(ys.d[0], hd[0]));
    ASSERT(!ig__dim_known(ys.d[2]) && ys.d[2].sym != hd[2].sym);
    t_free(&t);
}

TEST(conv_errors)
{
    T t;
    t_init(&t);
    int64_t xd[4] = {1, 3, 8, 8}, wd[4] = {4, 2, 3, 3}, bd[1] = {5};
    t_input_c(&t, "X", INGOT_DTYPE_FLOAT, 4, xd);
    t_input_c(&t, "W", INGOT_DTYPE_FLOAT, 4, wd);
    t_input_c(&t, "B", INGOT_DTYPE_FLOAT, 1, bd);
    const char *ins[3] = {"X", "W", "B"}, *outs[1] = {"Y"};
    /* channel mismatch names both numbers */
    ig_node *n = t_node(&t, "Conv", 11, 2, ins, 1, outs);
    n->name = "conv1";
    ASSERT_EQ(t_infer(&t, n, &ig__op_conv), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "node 'conv1' (Conv)");
    ASSERT_CONTAINS(t.err.msg, "'X' has 3 channels");
    ASSERT_CONTAINS(t.err.msg, "'W' expects 2");
    ig__err_clear(&t.err);
    /* with group 2 it is 3 vs 4 */
    n = t_node(&t, "Conv", 11, 2, ins, 1, outs);
    a_int(n, "group", 2);
    ASSERT_EQ(t_infer(&t, n, &ig__op_conv), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "3 channels");
    ASSERT_CONTAINS(t.err.msg, "expects 4");
    ig__err_clear(&t.err);

    int64_t wd2[4] = {4, 3, 3, 3};
    t_input_c(&t, "W2", INGOT_DTYPE_FLOAT, 4, wd2);
    const char *ins2[3] = {"X", "W2", "B"};
    /* unsupported auto_pad value */
    n = t_node(&t, "Conv", 11, 2, ins2, 1, outs);
    a_str(n, "auto_pad", "SAME_MIDDLE");
    ASSERT_EQ(t_infer(&t, n, &ig__op_conv), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "auto_pad");
    ASSERT_CONTAINS(t.err.msg, "SAME_MIDDLE");
    ig__err_clear(&t.err);
    /* bias of the wrong size */
    n = t_node(&t, "Conv", 11, 3, ins2, 1, outs);
    ASSERT_EQ(t_infer(&t, n, &ig__op_conv), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "'B' has 5 values");
    ig__err_clear(&t.err);
    /* kernel larger than the padded input */
    int64_t wd3[4] = {4, 3, 9, 9};
    t_input_c(&t, "W3", INGOT_DTYPE_FLOAT, 4, wd3);
    const char *ins3[2] = {"X", "W3"};
    n = t_node(&t, "Conv", 11, 2, ins3, 1, outs);
    ASSERT_EQ(t_infer(&t, n, &ig__op_conv), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "larger than the padded input");
    ig__err_clear(&t.err);
    /* wrong attribute length, and kernel_shape disagreeing with W */
    n = t_node(&t, "Conv", 11, 2, ins2, 1, outs);
    int64_t s3[3] = {1, 1, 1};
    a_ints(&t, n, "strides", 3, s3);
    ASSERT_EQ(t_infer(&t, n, &ig__op_conv), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "'strides' has 3 values");
    ig__err_clear(&t.err);
    n = t_node(&t, "Conv", 11, 2, ins2, 1, outs);
    int64_t ks[2] = {5, 5};
    a_ints(&t, n, "kernel_shape", 2, ks);
    ASSERT_EQ(t_infer(&t, n, &ig__op_conv), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "kernel_shape");
    ig__err_clear(&t.err);
    /* integer input */
    int64_t xi[4] = {1, 3, 8, 8};
    t_input_c(&t, "XI", INGOT_DTYPE_INT32, 4, xi);
    const char *ins4[2] = {"XI", "W2"};
    n = t_node(&t, "Conv", 11, 2, ins4, 1, outs);
    ASSERT_EQ(t_infer(&t, n, &ig__op_conv), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "int32");
    t_free(&t);
}

TEST(conv_scratch_missing)
{
    /* a caller that gives no scratch gets a heap block, or, when that fails, an error naming the node */
    T t;
    t_init(&t);
    int64_t xd[4] = {1, 4, 9, 9}, wd[4] = {8, 4, 3, 3}, yd[4] = {1, 8, 7, 7};
    ig_tensor *x = tensor_rand(INGOT_DTYPE_FLOAT16, 4, xd), *w = tensor_rand(INGOT_DTYPE_FLOAT16, 4, wd);
    ig_tensor *y = tensor_new(INGOT_DTYPE_FLOAT16, 4, yd);
    t_input_c(&t, "X", INGOT_DTYPE_FLOAT16, 4, xd);
    t_input_c(&t, "W", INGOT_DTYPE_FLOAT16, 4, wd);
    const char *ins[2] = {"X", "W"}, *outs[1] = {"Y"};
    ig_node *n = t_node(&t, "Conv", 11, 2, ins, 1, outs);
    n->name = "c7";
    ASSERT_EQ(t_infer(&t, n, &ig__op_conv), INGOT_OK);
    ASSERT(ig__op_conv.cpu_scratch(&t.g, n) > 0);
    const ig_tensor *in[2] = {x, w};
    ig_tensor *out[1] = {y};
    ig_exec ex = {.g = &t.g, .node = n, .n_in = 2, .in = in, .n_out = 1, .out = out, .err = &t.err};
    ASSERT_EQ(ig__op_conv.cpu(&ex), INGOT_OK);
    ig__alloc_fail_after(1);
    ingot_status st = ig__op_conv.cpu(&ex);
    ig__alloc_fail_after(0);
    ASSERT_EQ(st, INGOT_ERR_OUT_OF_MEMORY);
    ASSERT_CONTAINS(t.err.msg, "node 'c7' (Conv): out of memory");
    tensor_free(x);
    tensor_free(w);
    tensor_free(y);
    t_free(&t);
}

/* ---- ConvTranspose ---- */

typedef struct convt_cfg {
    int nsp;
    int64_t n, c, m, group;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], op[3];
    int64_t out_shape[3]; /* > 0: use output_shape */
    const char *auto_pad;
    bool bias;
} convt_cfg;

static bool convt_check(const convt_cfg *c, struct ig_pool *pool)
{
    T t;
    t_init(&t);
    int rank = c->nsp + 2;
    int64_t mg = c->m / c->group, cg = c->c / c->group;
    int64_t xd[5] = {c->n, c->c}, wd[5] = {c->c, mg}, bd[1] = {c->m};
    int64_t od[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, ind[3] = {1, 1, 1}, kd[3] = {1, 1, 1};
    int64_t osp = 1, isp = 1;
    for (int i = 0; i < c->nsp; i++) {
        xd[2 + i] = ind[i] = c->in[i];
        wd[2 + i] = kd[i] = c->k[i];
        int64_t full = c->s[i] * (c->in[i] - 1) + c->op[i] + (c->k[i] - 1) * c->d[i] + 1;
        if (c->out_shape[0] > 0 || (c->auto_pad && !strncmp(c->auto_pad, "SAME", 4))) {
            od[i] = c->out_shape[0] > 0 ? c->out_shape[i] : c->in[i] * c->s[i];
            int64_t tot = full - od[i];
            if (tot < 0) tot = 0; /* a larger output gets zeros at the end, as onnxruntime does */
            pb[i] = c->auto_pad && !strcmp(c->auto_pad, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
        } else {
            pb[i] = c->pb[i];
            od[i] = full - c->pb[i] - c->pe[i];
        }
        osp *= od[i];
        isp *= c->in[i];
    }
    ig_tensor *x = tensor_rand(INGOT_DTYPE_FLOAT, rank, xd), *w = tensor_rand(INGOT_DTYPE_FLOAT, rank, wd);
    ig_tensor *b = c->bias ? tensor_rand(INGOT_DTYPE_FLOAT, 1, bd) : NULL;
    t_input_c(&t, "X", INGOT_DTYPE_FLOAT, rank, xd);
    t_input_c(&t, "W", INGOT_DTYPE_FLOAT, rank, wd);
    if (b) t_input_c(&t, "B", INGOT_DTYPE_FLOAT, 1, bd);
    const char *ins[3] = {"X", "W", "B"}, *outs[1] = {"Y"};
    ig_node *n = t_node(&t, "ConvTranspose", 13, c->bias ? 3 : 2, ins, 1, outs);
    a_int(n, "group", c->group);
    a_ints(&t, n, "strides", c->nsp, c->s);
    a_ints(&t, n, "dilations", c->nsp, c->d);
    a_ints(&t, n, "output_padding", c->nsp, c->op);
    if (c->out_shape[0] > 0) a_ints(&t, n, "output_shape", c->nsp, c->out_shape);
    if (c->auto_pad) {
        a_str(n, "auto_pad", c->auto_pad);
    } else if (c->out_shape[0] <= 0) {
        int64_t pads[6];
        for (int i = 0; i < c->nsp; i++) {
            pads[i] = c->pb[i];
            pads[c->nsp + i] = c->pe[i];
        }
        a_ints(&t, n, "pads", 2 * c->nsp, pads);
    }
    const ig_tensor *in[3] = {x, w, b};
    ig_tensor *out[1];
    ingot_status st = t_run(&t, n, &ig__op_conv_transpose, in, c->bias ? 3 : 2, out, 1, pool);
    bool ok = st == INGOT_OK;
    if (!ok) fprintf(stderr, "  convtranspose failed: %s\n", t.err.msg);
    for (int i = 0; ok && i < c->nsp; i++)
        if (out[0]->dims[2 + i] != od[i]) {
            fprintf(stderr, "  convtranspose out dim %d: %" PRId64 " want %" PRId64 "\n", i, out[0]->dims[2 + i],
                    od[i]);
            ok = false;
        }
    if (ok) {
        double *ref = calloc((size_t)(c->n * c->m * osp), sizeof(double));
        for (int64_t ni = 0; ni < c->n; ni++)
            for (int64_t mi = 0; mi < c->m; mi++)
                for (int64_t o = 0; o < osp; o++) ref[(ni * c->m + mi) * osp + o] = b ? tget(b, mi) : 0;
        for (int64_t ni = 0; ni < c->n; ni++)
            for (int64_t ci = 0; ci < c->c; ci++)
                for (int64_t ii = 0; ii < isp; ii++) {
                    int64_t ic[3] = {ii / (ind[1] * ind[2]), (ii / ind[2]) % ind[1], ii % ind[2]};
                    int64_t g = ci / cg;
                    for (int64_t mj = 0; mj < mg; mj++)
                        for (int64_t k0 = 0; k0 < kd[0]; k0++)
                            for (int64_t k1 = 0; k1 < kd[1]; k1++)
                                for (int64_t k2 = 0; k2 < kd[2]; k2++) {
                                    int64_t kk[3] = {k0, k1, k2}, oc[3] = {0, 0, 0};
                                    bool inside = true;
                                    for (int i = 0; i < c->nsp; i++) {
                                        oc[i] = ic[i] * c->s[i] - pb[i] + kk[i] * c->d[i];
                                        if (oc[i] < 0 || oc[i] >= od[i]) inside = false;
                                    }
                                    if (!inside) continue;
                                    int64_t oi = (oc[0] * od[1] + oc[1]) * od[2] + oc[2];
                                    int64_t wi = ((ci * mg + mj) * kd[0] + k0) * kd[1] * kd[2] + k1 * kd[2] + k2;
                                    ref[(ni * c->m + g * mg + mj) * osp + oi] +=
                                        tget(x, (ni * c->c + ci) * isp + ii) * tget(w, wi);
                                }
                }
        for (int64_t i = 0; ok && i < c->n * c->m * osp; i++)
            if (!(fabs(tget(out[0], i) - ref[i]) <= 1e-4 * (1 + fabs(ref[i])) * 4)) {
                fprintf(stderr, "  convtranspose nsp%d g%" PRId64 ": y[%" PRId64 "] = %g, want %g\n", c->nsp, c->group,
                        i, tget(out[0], i), ref[i]);
                ok = false;
            }
        free(ref);
    }
    tensor_free(x);
    tensor_free(w);
    tensor_free(b);
    if (st == INGOT_OK) tensor_free(out[0]);
    t_free(&t);
    return ok;
}

TEST(conv_transpose_random_vs_reference)
{
    for (int it = 0; it < 40; it++) {
        convt_cfg c;
        memset(&c, 0, sizeof c);
        c.nsp = 1 + it % 3;
        c.n = rint_in(1, 2);
        c.group = rnd() % 3 == 0 ? 2 : 1;
        c.c = c.group * rint_in(1, 3);
        c.m = c.group * rint_in(1, 3);
        c.bias = rnd() & 1;
        for (int i = 0; i < c.nsp; i++) {
            c.in[i] = rint_in(1, c.nsp == 3 ? 4 : 7);
            c.k[i] = rint_in(1, 3);
            c.s[i] = rint_in(1, 3);
            c.d[i] = rint_in(1, 2);
            c.op[i] = rint_in(0, c.s[i] - 1);
            c.pb[i] = rint_in(0, c.k[i] - 1);
            c.pe[i] = rint_in(0, c.k[i] - 1);
        }
        int mode = (int)(rnd() % 5);
        if (mode == 0) c.auto_pad = "SAME_UPPER";
        if (mode == 1) c.auto_pad = "SAME_LOWER";
        if (mode == 2)
            for (int i = 0; i < c.nsp; i++)
                c.out_shape[i] = c.s[i] * (c.in[i] - 1) + c.op[i] + (c.k[i] - 1) * c.d[i] + 1 - rint_in(0, 1);
        ASSERT(convt_check(&c, it & 1 ? pool2 : NULL));
    }
}

/* ---- pooling ---- */

typedef struct pool_cfg {
    int nsp;
    int64_t n, c;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
    const char *auto_pad;
    bool ceil_mode, count_include_pad, is_max, indices;
    int64_t storage_order;
    ingot_dtype dt;
} pool_cfg;

static bool pool_check(const pool_cfg *c, struct ig_pool *pool)
{
    T t;
    t_init(&t);
    int rank = c->nsp + 2;
    int64_t xd[5] = {c->n, c->c}, ind[3] = {1, 1, 1}, kd[3] = {1, 1, 1}, od[3] = {1, 1, 1}, pb[3] = {0}, pe[3] = {0};
    int64_t osp = 1, isp = 1;
    for (int i = 0; i < c->nsp; i++) {
        xd[2 + i] = ind[i] = c->in[i];
        kd[i] = c->k[i];
        int64_t ek = (c->k[i] - 1) * c->d[i] + 1;
        if (c->auto_pad) {
            od[i] = (c->in[i] + c->s[i] - 1) / c->s[i];
            int64_t tot = (od[i] - 1) * c->s[i] + ek - c->in[i];
            if (tot < 0) tot = 0;
            pb[i] = !strcmp(c->auto_pad, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
            pe[i] = tot - pb[i];
        } else {
            pb[i] = c->pb[i];
            pe[i] = c->pe[i];
            int64_t span = c->in[i] + pb[i] + pe[i] - ek;
            od[i] = span / c->s[i] + 1;
            if (c->ceil_mode) {
                od[i] = (span + c->s[i] - 1) / c->s[i] + 1;
                if ((od[i] - 1) * c->s[i] >= c->in[i] + pb[i]) od[i]--;
            }
        }
        osp *= od[i];
        isp *= c->in[i];
    }
    ig_tensor *x = tensor_rand(c->dt, rank, xd);
    t_input_c(&t, "X", c->dt, rank, xd);
    const char *ins[1] = {"X"}, *outs[2] = {"Y", "I"};
    ig_node *n = t_node(&t, c->is_max ? "MaxPool" : "AveragePool", 19, 1, ins, c->indices ? 2 : 1, outs);
    a_ints(&t, n, "kernel_shape", c->nsp, c->k);
    a_ints(&t, n, "strides", c->nsp, c->s);
    a_ints(&t, n, "dilations", c->nsp, c->d);
    if (c->ceil_mode) a_int(n, "ceil_mode", 1);
    if (c->count_include_pad) a_int(n, "count_include_pad", 1);
    if (c->storage_order) a_int(n, "storage_order", c->storage_order);
    if (c->auto_pad) {
        a_str(n, "auto_pad", c->auto_pad);
    } else {
        int64_t pads[6];
        for (int i = 0; i < c->nsp; i++) {
            pads[i] = c->pb[i];
            pads[c->nsp + i] = c->pe[i];
        }
        a_ints(&t, n, "pads", 2 * c->nsp, pads);
    }
    const ig_tensor *in[1] = {x};
    ig_tensor *out[2] = {NULL, NULL};
    ingot_status st =
        t_run(&t, n, c->is_max ? &ig__op_max_pool : &ig__op_average_pool, in, 1, out, c->indices ? 2 : 1, pool);
    bool ok = st == INGOT_OK;
    if (!ok) fprintf(stderr, "  pool failed: %s\n", t.err.msg);
    for (int i = 0; ok && i < c->nsp; i++)
        if (out[0]->dims[2 + i] != od[i]) {
            fprintf(stderr, "  pool out dim %d: %" PRId64 " want %" PRId64 "\n", i, out[0]->dims[2 + i], od[i]);
            ok = false;
        }
    for (int64_t pl = 0; ok && pl < c->n * c->c; pl++)
        for (int64_t o = 0; ok && o < osp; o++) {
            int64_t oc[3] = {o / (od[1] * od[2]), (o / od[2]) % od[1], o % od[2]};
            double acc = c->is_max ? -INFINITY : 0;
            int64_t cnt = 0, pcnt = 1, best = -1;
            for (int i = 0; i < c->nsp; i++) {
                int64_t pc = 0;
                for (int64_t kk = 0; kk < c->k[i]; kk++) {
                    int64_t p = oc[i] * c->s[i] - pb[i] + kk * c->d[i];
                    if (p < ind[i] + pe[i]) pc++;
                }
                pcnt *= pc;
            }
            for (int64_t k0 = 0; k0 < kd[0]; k0++)
                for (int64_t k1 = 0; k1 < kd[1]; k1++)
                    for (int64_t k2 = 0; k2 < kd[2]; k2++) {
                        int64_t kk[3] = {k0, k1, k2}, ip[3] = {0, 0, 0};
                        bool inside = true;
                        for (int i = 0; i < c->nsp; i++) {
                            ip[i] = oc[i] * c->s[i] - pb[i] + kk[i] * c->d[i];
                            if (ip[i] < 0 || ip[i] >= ind[i]) inside = false;
                        }
                        if (!inside) continue;
                        int64_t xi = (ip[0] * ind[1] + ip[1]) * ind[2] + ip[2];
                        double v = tget(x, pl * isp + xi);
                        if (c->is_max) {
                            if (v > acc) {
                                acc = v;
                                /* column-major (storage_order 1) flattens the spatial dims first-fastest */
                                best = !c->storage_order ? xi : c->nsp == 2 ? ip[1] * ind[0] + ip[0] : ip[0];
                            }
                        } else {
                            acc += v;
                        }
                        cnt++;
                    }
            if (!c->is_max) acc /= (double)(c->count_include_pad ? pcnt : cnt);
            double got = tget(out[0], pl * osp + o);
            double tol = c->dt == INGOT_DTYPE_FLOAT ? 1e-5 : 1e-2;
            if (!(fabs(got - acc) <= tol * (1 + fabs(acc)))) {
                fprintf(stderr, "  %s nsp%d: y[%" PRId64 ",%" PRId64 "] = %g, want %g\n",
                        c->is_max ? "maxpool" : "avgpool", c->nsp, pl, o, got, acc);
                ok = false;
            }
            if (ok && c->indices) {
                int64_t gi = ((int64_t *)out[1]->data)[pl * osp + o];
                if (gi != pl * isp + best) {
                    fprintf(stderr, "  maxpool indices[%" PRId64 ",%" PRId64 "] = %" PRId64 ", want %" PRId64 "\n", pl,
                            o, gi, pl * isp + best);
                    ok = false;
                }
            }
        }
    tensor_free(x);
    tensor_free(out[0]);
    tensor_free(out[1]);
    t_free(&t);
    return ok;
}

TEST(pool_random_vs_reference)
{
    for (int it = 0; it < 120; it++) {
        pool_cfg c;
        memset(&c, 0, sizeof c);
        c.nsp = 1 + it % 3;
        c.n = rint_in(1, 2);
        c.c = rint_in(1, 3);
        c.is_max = it % 2 == 0;
        c.dt = INGOT_DTYPE_FLOAT;
        for (int i = 0; i < c.nsp; i++) {
            c.k[i] = rint_in(1, 3);
            c.s[i] = rint_in(1, 3);
            c.d[i] = rnd() % 3 == 0 ? 2 : 1;
            c.pb[i] = rint_in(0, c.k[i] - 1);
            c.pe[i] = rint_in(0, c.k[i] - 1);
            c.in[i] = rint_in((c.k[i] - 1) * c.d[i] + 1, c.nsp == 3 ? 6 : 12);
        }
        if (rnd() % 5 == 0)
            c.auto_pad = rnd() & 1 ? "SAME_UPPER" : "SAME_LOWER";
        else
            c.ceil_mode = rnd() & 1;
        c.count_include_pad = !c.is_max && (rnd() & 1);
        c.indices = c.is_max && (rnd() & 1) && c.nsp <= 2;
        if (c.indices && c.nsp == 2 && (rnd() & 1)) c.storage_order = 1;
        if (c.is_max && it % 8 == 0) c.dt = rnd() & 1 ? INGOT_DTYPE_UINT8 : INGOT_DTYPE_FLOAT16;
        ASSERT(pool_check(&c, it & 2 ? pool2 : NULL));
    }
}

TEST(pool_infer_and_errors)
{
    T t;
    t_init(&t);
    ig_dim xd[4] = {{1, ig__graph_symbol(&t.g, "batch")}, ig__dim_const(64), ig__dim_const(112), ig__dim_const(112)};
    t_input(&t, "X", INGOT_DTYPE_FLOAT, 4, xd);
    const char *ins[1] = {"X"}, *outs[2] = {"Y", "I"};
    ig_node *n = t_node(&t, "MaxPool", 12, 1, ins, 2, outs);
    int64_t k[2] = {3, 3}, s[2] = {2, 2}, p[4] = {1, 1, 1, 1};
    a_ints(&t, n, "kernel_shape", 2, k);
    a_ints(&t, n, "strides", 2, s);
    a_ints(&t, n, "pads", 4, p);
    ASSERT_EQ(t_infer(&t, n, &ig__op_max_pool), INGOT_OK);
    char buf[128];
    ASSERT_STREQ(ig__shape_str(&t.g, &OUT(&t, n, 0)->shape, buf, sizeof buf), "[batch,64,56,56]");
    ASSERT_EQ(OUT(&t, n, 1)->dtype, INGOT_DTYPE_INT64);

    const char *outs2[1] = {"G"};
    n = t_node(&t, "GlobalAveragePool", 1, 1, ins, 1, outs2);
    ASSERT_EQ(t_infer(&t, n, &ig__op_global_average_pool), INGOT_OK);
    ASSERT_STREQ(ig__shape_str(&t.g, &OUT(&t, n, 0)->shape, buf, sizeof buf), "[batch,64,1,1]");

    /* kernel_shape is required */
    n = t_node(&t, "AveragePool", 11, 1, ins, 1, outs2);
    ASSERT_EQ(t_infer(&t, n, &ig__op_average_pool), INGOT_ERR_MODEL_INVALID);
    ASSERT_CONTAINS(t.err.msg, "'kernel_shape' is required");
    ig__err_clear(&t.err);
    n = t_node(&t, "AveragePool", 11, 1, ins, 1, outs2);
    a_ints(&t, n, "kernel_shape", 2, k);
    a_str(n, "auto_pad", "bogus");
    ASSERT_EQ(t_infer(&t, n, &ig__op_average_pool), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "'auto_pad' value 'bogus'");
    ig__err_clear(&t.err);
    n = t_node(&t, "MaxPool", 12, 1, ins, 1, outs2);
    a_ints(&t, n, "kernel_shape", 2, k);
    a_int(n, "storage_order", 3);
    ASSERT_EQ(t_infer(&t, n, &ig__op_max_pool), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "storage_order");
    t_free(&t);
}

TEST(global_pools)
{
    for (int mx = 0; mx < 2; mx++)
        for (int dti = 0; dti < 2; dti++) {
            ingot_dtype dt = dti ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT;
            T t;
            t_init(&t);
            int64_t xd[4] = {2, 3, 5, 7};
            ig_tensor *x = tensor_rand(dt, 4, xd);
            t_input_c(&t, "X", dt, 4, xd);
            const char *ins[1] = {"X"}, *outs[1] = {"Y"};
            ig_node *n = t_node(&t, mx ? "GlobalMaxPool" : "GlobalAveragePool", 1, 1, ins, 1, outs);
            const ig_tensor *in[1] = {x};
            ig_tensor *out[1];
            const ig_op_def *d = mx ? &ig__op_global_max_pool : &ig__op_global_average_pool;
            ASSERT_EQ(t_run(&t, n, d, in, 1, out, 1, pool2), INGOT_OK);
            ASSERT_EQ(out[0]->numel, 6);
            for (int64_t p = 0; p < 6; p++) {
                double acc = mx ? -INFINITY : 0;
                for (int64_t i = 0; i < 35; i++) {
                    double v = tget(x, p * 35 + i);
                    acc = mx ? (v > acc ? v : acc) : acc + v / 35;
                }
                ASSERT_NEAR(tget(out[0], p), acc, dti ? 2e-3 : 1e-5);
            }
            tensor_free(x);
            tensor_free(out[0]);
            t_free(&t);
        }
}

/* ---- Gemm, MatMul ---- */

TEST(gemm_op_vs_reference)
{
    ingot_dtype dts[5] = {INGOT_DTYPE_FLOAT, INGOT_DTYPE_FLOAT16, INGOT_DTYPE_DOUBLE, INGOT_DTYPE_INT32,
                          INGOT_DTYPE_INT64};
    for (int it = 0; it < 40; it++) {
        ingot_dtype dt = dts[it % 5];
        bool isint = ig__dtype_is_int(dt);
        int64_t m = rint_in(1, 33), n = rint_in(1, 40), k = rint_in(1, 50);
        bool ta = rnd() & 1, tb = rnd() & 1;
        float alpha = isint ? 1.0f : (it % 3 ? rfloat() : 1.0f), beta = isint ? 1.0f : (it % 4 ? rfloat() : 1.0f);
        int cmode = (int)(rnd() % 5); /* none, [M,N], [N], [M,1], scalar */
        T t;
        t_init(&t);
        int64_t ad[2] = {ta ? k : m, ta ? m : k}, bd[2] = {tb ? n : k, tb ? k : n};
        int64_t cd[2] = {m, n};
        int crank = 2;
        if (cmode == 2) {
            cd[0] = n;
            crank = 1;
        } else if (cmode == 3) {
            cd[1] = 1;
        } else if (cmode == 4) {
            crank = 0;
        }
        ig_tensor *a = tensor_rand(dt, 2, ad), *b = tensor_rand(dt, 2, bd);
        ig_tensor *c = cmode ? tensor_rand(dt, crank, cd) : NULL;
        t_input_c(&t, "A", dt, 2, ad);
        t_input_c(&t, "B", dt, 2, bd);
        if (c) t_input_c(&t, "C", dt, crank, cd);
        const char *ins[3] = {"A", "B", "C"}, *outs[1] = {"Y"};
        ig_node *nd = t_node(&t, "Gemm", 13, c ? 3 : 2, ins, 1, outs);
        a_int(nd, "transA", ta);
        a_int(nd, "transB", tb);
        a_float(nd, "alpha", alpha);
        a_float(nd, "beta", beta);
        const ig_tensor *in[3] = {a, b, c};
        ig_tensor *out[1];
        ASSERT_EQ(t_run(&t, nd, &ig__op_gemm, in, c ? 3 : 2, out, 1, it & 1 ? pool2 : NULL), INGOT_OK);
        ASSERT_EQ(out[0]->dims[0], m);
        ASSERT_EQ(out[0]->dims[1], n);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++)
                    s += tget(a, ta ? p * m + i : i * k + p) * tget(b, tb ? j * k + p : p * n + j);
                s *= alpha;
                if (c) {
                    int64_t ci = cmode == 1 ? i * n + j : cmode == 2 ? j : cmode == 3 ? i : 0;
                    s += beta * tget(c, ci);
                }
                double tol = isint ? 0 : dt == INGOT_DTYPE_FLOAT16 ? 2e-2 * (1 + fabs(s)) : 1e-4 * (1 + fabs(s));
                ASSERT_NEAR(tget(out[0], i * n + j), s, tol);
            }
        tensor_free(a);
        tensor_free(b);
        tensor_free(c);
        tensor_free(out[0]);
        t_free(&t);
    }
}

/* Run MatMul on shapes ad x bd; check the output shape and values. */
static bool matmul_check(int ra, const int64_t *ad, int rb, const int64_t *bd, ingot_dtype dt, struct ig_pool *pool)
{
    T t;
    t_init(&t);
    ig_tensor *a = tensor_rand(dt, ra, ad), *b = tensor_rand(dt, rb, bd);
    t_input_c(&t, "A", dt, ra, ad);
    t_input_c(&t, "B", dt, rb, bd);
    const char *ins[2] = {"A", "B"}, *outs[1] = {"Y"};
    ig_node *nd = t_node(&t, "MatMul", 13, 2, ins, 1, outs);
    const ig_tensor *in[2] = {a, b};
    ig_tensor *out[1];
    ingot_status st = t_run(&t, nd, &ig__op_matmul, in, 2, out, 1, pool);
    bool ok = st == INGOT_OK;
    if (!ok) fprintf(stderr, "  matmul failed: %s\n", t.err.msg);
    /* numpy semantics by hand */
    int64_t k = ad[ra - 1], m = ra > 1 ? ad[ra - 2] : 1, n = rb > 1 ? bd[rb - 1] : 1;
    int na = ra > 2 ? ra - 2 : 0, nb = rb > 2 ? rb - 2 : 0, nbat = na > nb ? na : nb;
    int64_t bdims[8], nbatch = 1;
    for (int i = 0; i < nbat; i++) {
        int ia = i - (nbat - na), ib = i - (nbat - nb);
        int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1;
        bdims[i] = da > db ? da : db;
        nbatch *= bdims[i];
    }
    int want_rank = nbat + (ra > 1) + (rb > 1);
    if (ok && out[0]->rank != want_rank) ok = false;
    for (int64_t bi = 0; ok && bi < nbatch; bi++) {
        int64_t aoff = 0, boff = 0, sa = m * k, sb = k * n, rem = bi;
        for (int i = nbat - 1; i >= 0; i--) {
            int64_t idx = rem % bdims[i];
            rem /= bdims[i];
            int ia = i - (nbat - na), ib = i - (nbat - nb);
            int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1;
            if (da != 1) aoff += idx * sa;
            if (db != 1) boff += idx * sb;
            sa *= da;
            sb *= db;
        }
        for (int64_t i = 0; ok && i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++) s += tget(a, aoff + i * k + p) * tget(b, boff + p * n + j);
                double got = tget(out[0], (bi * m + i) * n + j);
                double tol = ig__dtype_is_int(dt)      ? 0
                             : dt == INGOT_DTYPE_FLOAT ? 1e-4 * (1 + fabs(s))
                                                       : 3e-2 * (1 + fabs(s));
                if (!(fabs(got - s) <= tol)) {
                    fprintf(stderr, "  matmul ra%d rb%d: y[%" PRId64 ",%" PRId64 ",%" PRId64 "] = %g, want %g\n", ra,
                            rb, bi, i, j, got, s);
                    ok = false;
                    break;
                }
            }
    }
    tensor_free(a);
    tensor_free(b);
    if (st == INGOT_OK) tensor_free(out[0]);
    t_free(&t);
    return ok;
}

TEST(matmul_op_vs_reference)
{
    /* the node-test shapes, then random broadcasting */
    int64_t a1[1] = {7}, b1[1] = {7};
    ASSERT(matmul_check(1, a1, 1, b1, INGOT_DTYPE_FLOAT, NULL));
    int64_t b3[3] = {2, 7, 5};
    ASSERT(matmul_check(1, a1, 3, b3, INGOT_DTYPE_FLOAT, pool2));
    int64_t a4[4] = {2, 3, 4, 7};
    ASSERT(matmul_check(4, a4, 1, b1, INGOT_DTYPE_FLOAT, NULL));
    int64_t a3[3] = {4, 33, 64}, w2[2] = {64, 96};
    ASSERT(matmul_check(3, a3, 2, w2, INGOT_DTYPE_FLOAT, pool2)); /* folded into one GEMM */
    int64_t q[4] = {2, 4, 20, 16}, kt[4] = {2, 4, 16, 20};
    ASSERT(matmul_check(4, q, 4, kt, INGOT_DTYPE_FLOAT, pool2)); /* attention: batched side by side */
    int64_t bb[4] = {1, 4, 16, 9};
    ASSERT(matmul_check(3, (int64_t[]){4, 5, 16}, 4, bb, INGOT_DTYPE_FLOAT, pool2));
    ASSERT(matmul_check(3, (int64_t[]){1, 5, 16}, 3, (int64_t[]){3, 16, 9}, INGOT_DTYPE_FLOAT, NULL));
    ingot_dtype dts[6] = {INGOT_DTYPE_FLOAT,  INGOT_DTYPE_FLOAT16, INGOT_DTYPE_BFLOAT16,
                          INGOT_DTYPE_DOUBLE, INGOT_DTYPE_INT32,   INGOT_DTYPE_UINT64};
    for (int it = 0; it < 40; it++) {
        int ra = (int)rint_in(1, 4), rb = (int)rint_in(1, 4);
        int64_t k = rint_in(1, 20), ad[4], bd[4];
        int nbat = (ra > rb ? ra : rb) - 2;
        int64_t bat[2] = {rint_in(1, 3), rint_in(1, 3)};
        for (int i = 0; i < ra - 2; i++) ad[i] = rnd() % 3 == 0 ? 1 : bat[i + (nbat - (ra - 2))];
        for (int i = 0; i < rb - 2; i++) bd[i] = rnd() % 3 == 0 ? 1 : bat[i + (nbat - (rb - 2))];
        ad[ra - 1] = k;
        if (ra > 1) ad[ra - 2] = rint_in(1, 25);
        if (rb > 1) {
            bd[rb - 2] = k;
            bd[rb - 1] = rint_in(1, 25);
        } else {
            bd[0] = k;
        }
        ASSERT(matmul_check(ra, ad, rb, bd, dts[it % 6], it & 1 ? pool2 : NULL));
    }
}

TEST(matmul_gemm_infer)
{
    T t;
    t_init(&t);
    ig_dim batch = {1, ig__graph_symbol(&t.g, "batch")}, seq = {1, ig__graph_symbol(&t.g, "seq")};
    ig_dim xd[3] = {batch, seq, ig__dim_const(768)};
    int64_t wd[2] = {768, 3072};
    t_input(&t, "X", INGOT_DTYPE_FLOAT, 3, xd);
    t_input_c(&t, "W", INGOT_DTYPE_FLOAT, 2, wd);
    const char *ins[2] = {"X", "W"}, *outs[1] = {"Y"};
    ig_node *n = t_node(&t, "MatMul", 13, 2, ins, 1, outs);
    ASSERT_EQ(t_infer(&t, n, &ig__op_matmul), INGOT_OK);
    char buf[128];
    ASSERT_STREQ(ig__shape_str(&t.g, &OUT(&t, n, 0)->shape, buf, sizeof buf), "[batch,seq,3072]");
    /* attention scores: [batch, heads, seq, 64] x [batch, heads, 64, seq] */
    ig_dim qd[4] = {batch, ig__dim_const(12), seq, ig__dim_const(64)},
           kd[4] = {batch, ig__dim_const(12), ig__dim_const(64), seq};
    t_input(&t, "Q", INGOT_DTYPE_FLOAT, 4, qd);
    t_input(&t, "K", INGOT_DTYPE_FLOAT, 4, kd);
    const char *ins2[2] = {"Q", "K"}, *outs2[1] = {"S"};
    n = t_node(&t, "MatMul", 13, 2, ins2, 1, outs2);
    ASSERT_EQ(t_infer(&t, n, &ig__op_matmul), INGOT_OK);
    ASSERT_STREQ(ig__shape_str(&t.g, &OUT(&t, n, 0)->shape, buf, sizeof buf), "[batch,12,seq,seq]");
    /* inner-dim mismatch names both */
    int64_t wbad[2] = {512, 10};
    t_input_c(&t, "Wbad", INGOT_DTYPE_FLOAT, 2, wbad);
    const char *ins3[2] = {"X", "Wbad"};
    n = t_node(&t, "MatMul", 13, 2, ins3, 1, outs);
    ASSERT_EQ(t_infer(&t, n, &ig__op_matmul), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "K = 768");
    ASSERT_CONTAINS(t.err.msg, "K = 512");
    ig__err_clear(&t.err);
    /* Gemm: transB, symbolic M, C optional at opset 11 but not before */
    ig_dim ad[2] = {batch, ig__dim_const(2048)};
    int64_t fc[2] = {1000, 2048}, cb[1] = {1000};
    t_input(&t, "A", INGOT_DTYPE_FLOAT, 2, ad);
    t_input_c(&t, "FC", INGOT_DTYPE_FLOAT, 2, fc);
    t_input_c(&t, "CB", INGOT_DTYPE_FLOAT, 1, cb);
    const char *ins4[3] = {"A", "FC", "CB"}, *outs4[1] = {"Z"};
    n = t_node(&t, "Gemm", 11, 3, ins4, 1, outs4);
    a_int(n, "transB", 1);
    ASSERT_EQ(t_infer(&t, n, &ig__op_gemm), INGOT_OK);
    ASSERT_STREQ(ig__shape_str(&t.g, &OUT(&t, n, 0)->shape, buf, sizeof buf), "[batch,1000]");
    n = t_node(&t, "Gemm", 9, 2, ins4, 1, outs4);
    a_int(n, "transB", 1);
    ASSERT_EQ(t_infer(&t, n, &ig__op_gemm), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "input C is required");
    ig__err_clear(&t.err);
    n = t_node(&t, "Gemm", 13, 3, ins4, 1, outs4); /* without transB: K 2048 vs 1000 */
    ASSERT_EQ(t_infer(&t, n, &ig__op_gemm), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "K = 2048");
    ASSERT_CONTAINS(t.err.msg, "K = 1000");
    ig__err_clear(&t.err);
    int64_t cbad[1] = {7};
    t_input_c(&t, "Cbad", INGOT_DTYPE_FLOAT, 1, cbad);
    const char *ins5[3] = {"A", "FC", "Cbad"};
    n = t_node(&t, "Gemm", 13, 3, ins5, 1, outs4);
    a_int(n, "transB", 1);
    ASSERT_EQ(t_infer(&t, n, &ig__op_gemm), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "does not broadcast");
    t_free(&t);
}

/* ---- FLOPs ---- */

/* Add a Conv node with concrete shapes; returns its FLOPs. */
static double conv_node_flops(T *t, int *id, int64_t cin, int64_t hw, int64_t cout, int64_t k, int64_t s)
{
    char xn[32], wn[32], bn[32], yn[32];
    snprintf(xn, sizeof xn, "x%d", *id);
    snprintf(wn, sizeof wn, "w%d", *id);
    snprintf(bn, sizeof bn, "b%d", *id);
    snprintf(yn, sizeof yn, "y%d", *id);
    (*id)++;
    int64_t xd[4] = {1, cin, hw, hw}, wd[4] = {cout, cin, k, k}, bd[1] = {cout};
    t_input_c(t, xn, INGOT_DTYPE_FLOAT, 4, xd);
    t_input_c(t, wn, INGOT_DTYPE_FLOAT, 4, wd);
    t_input_c(t, bn, INGOT_DTYPE_FLOAT, 1, bd);
    const char *ins[3] = {xn, wn, bn}, *outs[1] = {yn};
    ig_node *n = t_node(t, "Conv", 11, 3, ins, 1, outs);
    int64_t st[2] = {s, s}, p[4] = {k / 2, k / 2, k / 2, k / 2};
    a_ints(t, n, "strides", 2, st);
    a_ints(t, n, "pads", 4, p);
    if (t_infer(t, n, &ig__op_conv) != INGOT_OK) return -1;
    return ig__op_conv.flops(&t->g, n);
}

TEST(flops_resnet50)
{
    T t;
    t_init(&t);
    int id = 0;
    double total = conv_node_flops(&t, &id, 3, 224, 64, 7, 2);
    ASSERT_NEAR(total, 2.0 * 64 * 112 * 112 * 3 * 49 + 64 * 112 * 112, 0.5);
    /* torchvision ResNet-50 (v1.5: stride on the 3x3), BN folded into conv biases */
    int64_t blocks[4] = {3, 4, 6, 3}, width[4] = {64, 128, 256, 512};
    int64_t cin = 64, hw = 56;
    for (int sgi = 0; sgi < 4; sgi++)
        for (int64_t bi = 0; bi < blocks[sgi]; bi++) {
            int64_t w = width[sgi], s = (sgi > 0 && bi == 0) ? 2 : 1;
            total += conv_node_flops(&t, &id, cin, hw, w, 1, 1);
            total += conv_node_flops(&t, &id, w, hw, w, 3, s);
            int64_t ohw = hw / s;
            total += conv_node_flops(&t, &id, w, ohw, 4 * w, 1, 1);
            if (bi == 0) total += conv_node_flops(&t, &id, cin, hw, 4 * w, 1, s);
            cin = 4 * w;
            hw = ohw;
        }
    /* the pools and the classifier */
    int64_t pd[4] = {1, 64, 112, 112};
    t_input_c(&t, "p_in", INGOT_DTYPE_FLOAT, 4, pd);
    const char *pin[1] = {"p_in"}, *pout[1] = {"p_out"};
    ig_node *mp = t_node(&t, "MaxPool", 11, 1, pin, 1, pout);
    int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
    a_ints(&t, mp, "kernel_shape", 2, k3);
    a_ints(&t, mp, "strides", 2, s2);
    a_ints(&t, mp, "pads", 4, p1);
    ASSERT_EQ(t_infer(&t, mp, &ig__op_max_pool), INGOT_OK);
    ASSERT_NEAR(ig__op_max_pool.flops(&t.g, mp), 64.0 * 56 * 56 * 9, 0.5);
    total += ig__op_max_pool.flops(&t.g, mp);
    int64_t fa[2] = {1, 2048}, fw[2] = {1000, 2048}, fb[1] = {1000};
    t_input_c(&t, "fa", INGOT_DTYPE_FLOAT, 2, fa);
    t_input_c(&t, "fw", INGOT_DTYPE_FLOAT, 2, fw);
    t_input_c(&t, "fb", INGOT_DTYPE_FLOAT, 1, fb);
    const char *fin[3] = {"fa", "fw", "fb"}, *fout[1] = {"fy"};
    ig_node *fc = t_node(&t, "Gemm", 11, 3, fin, 1, fout);
    a_int(fc, "transB", 1);
    ASSERT_EQ(t_infer(&t, fc, &ig__op_gemm), INGOT_OK);
    ASSERT_NEAR(ig__op_gemm.flops(&t.g, fc), 2.0 * 2048 * 1000 + 1000, 0.5);
    total += ig__op_gemm.flops(&t.g, fc);
    fprintf(stderr, "  ResNet-50 (convs, max pool, fc): %.4f GFLOP\n", total / 1e9);
    ASSERT(fabs(total / 8.2e9 - 1.0) < 0.02);
    t_free(&t);
}

TEST_MAIN(pool2 = ig__pool_create(2); RUN(sgemm_random_all_isas); RUN(sgemm_vectors_and_edges);
          RUN(sgemm_chunked_paths); RUN(sgemm_without_memory); RUN(conv_random_vs_reference); RUN(conv_common_shapes);
          RUN(conv_other_dtypes); RUN(conv_infer_symbolic_batch); RUN(conv_errors); RUN(conv_scratch_missing);
          RUN(conv_transpose_random_vs_reference); RUN(pool_random_vs_reference); RUN(pool_infer_and_errors);
          RUN(global_pools); RUN(gemm_op_vs_reference); RUN(matmul_op_vs_reference); RUN(matmul_gemm_infer);
          RUN(flops_resnet50); ig__pool_destroy(pool2))
