/*
 * test_ops_fused.c -- the ingot-domain ops (src/ops/fused.c, fused_attention.c): FusedConv,
 * FusedMatMul, MaskedSoftmax and Attention against naive double-precision references on random data
 * and several shapes (grouped, strided, padded and dilated convs; batch broadcasting, transposes and
 * 1-D operands; broadcast masks; fp16), epilogues with residual extras and activations, inference
 * (symbolic dims kept, errors naming the node) and FLOP counts. Pointwise programs are tested in
 * test_ops_pw.c. These unit tests stand in for ONNX node tests, which the ingot domain does not have.
 */
#include "fused_util.h"

/* ---------------------------------------------------------------------------------------------- */
/* FusedConv                                                                                       */

typedef struct conv_case {
    int64_t n, c, h, w, m, kh, kw, s, pad, dil, group;
    bool bias, half;
    int epi; /* 0 none, 1 residual add + relu, 2 per-channel scale + clip(0, 6), 3 hardswish */
    struct ig_pool *pool;
} conv_case;

static double epi_ref(int epi, double v, double extra)
{
    switch (epi) {
    case 1: v += extra; return v < 0 ? 0 : v;
    case 2: v *= extra; return v < 0 ? 0 : v > 6 ? 6 : v;
    case 3: return ref_code(IG_PW_HARDSWISH, v, 0, 0, 0, 0);
    default: return v;
    }
}

static void run_conv_case(const conv_case *cc)
{
    T t;
    t_init(&t);
    int64_t cg = cc->c / cc->group;
    int64_t oh = (cc->h + 2 * cc->pad - cc->dil * (cc->kh - 1) - 1) / cc->s + 1;
    int64_t ow = (cc->w + 2 * cc->pad - cc->dil * (cc->kw - 1) - 1) / cc->s + 1;
    int64_t xd[4] = {cc->n, cc->c, cc->h, cc->w}, wd[4] = {cc->m, cg, cc->kh, cc->kw}, bd[1] = {cc->m};
    int64_t yd[4] = {cc->n, cc->m, oh, ow}, rd1[4] = {cc->n, cc->m, oh, ow}, rd2[3] = {cc->m, 1, 1};
    int64_t nx = numel_of(4, xd), nw = numel_of(4, wd), ny = numel_of(4, yd);
    float *x = rand_f32(nx, 1), *w = rand_f32(nw, 0.5), *b = rand_f32(cc->m, 1);
    int64_t nr = cc->epi == 1 ? ny : cc->m;
    float *res = rand_f32(nr, 1);
    ingot_dtype dt = cc->half ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT;
    if (cc->half) { /* the reference sees the fp16 values */
        uint16_t *hx = to_f16(x, nx, x), *hw = to_f16(w, nw, w), *hb = to_f16(b, cc->m, b), *hr = to_f16(res, nr, res);
        t_const(&t, "x", dt, 4, xd, hx);
        t_const(&t, "w", dt, 4, wd, hw);
        t_const(&t, "b", dt, 1, bd, hb);
        t_const(&t, "r", dt, cc->epi == 1 ? 4 : 3, cc->epi == 1 ? rd1 : rd2, hr);
        free(hx), free(hw), free(hb), free(hr);
    } else {
        t_f32(&t, "x", 4, xd, x);
        t_f32(&t, "w", 4, wd, w);
        t_f32(&t, "b", 1, bd, b);
        t_f32(&t, "r", cc->epi == 1 ? 4 : 3, cc->epi == 1 ? rd1 : rd2, res);
    }
    ig_pw_prog p;
    ig__pw_init(&p, cc->epi == 1 || cc->epi == 2 ? 2 : 1, false);
    if (cc->epi == 1) {
        ig__pw_emit(&p, IG_PW_ADD, 0, 1, IG_PW_NONE, 0, 0);
        ig__pw_emit(&p, IG_PW_RELU, 2, IG_PW_NONE, IG_PW_NONE, 0, 0);
    } else if (cc->epi == 2) {
        ig__pw_emit(&p, IG_PW_MUL, 0, 1, IG_PW_NONE, 0, 0);
        ig__pw_emit(&p, IG_PW_CLIP, 2, IG_PW_NONE, IG_PW_NONE, 0, 6);
    } else if (cc->epi == 3) {
        ig__pw_emit(&p, IG_PW_HARDSWISH, 0, IG_PW_NONE, IG_PW_NONE, 0, 0);
    }
    const char *ins = cc->epi == 1 || cc->epi == 2 ? (cc->bias ? "x,w,b,r" : "x,w,,r") : cc->bias ? "x,w,b" : "x,w";
    ig_node *n = f_node(&t, "FusedConv", ins, "y");
    a_ints(&t, n, "kernel_shape", 2, (int64_t[]){cc->kh, cc->kw});
    a_ints(&t, n, "strides", 2, (int64_t[]){cc->s, cc->s});
    a_ints(&t, n, "pads", 4, (int64_t[]){cc->pad, cc->pad, cc->pad, cc->pad});
    a_ints(&t, n, "dilations", 2, (int64_t[]){cc->dil, cc->dil});
    a_int(n, "group", cc->group);
    if (cc->epi) a_prog(&t, n, "epilogue_", &p);
    R r;
    ingot_status st = t_run(&t, n, cc->pool, &r);
    if (st != INGOT_OK) TEST_FAIL_("%s", t.err.msg);
    ASSERT_EQ(r.out[0].numel, ny);
    ASSERT_EQ(r.out[0].dtype, dt);
    int64_t mg = cc->m / cc->group;
    for (int64_t ni = 0; ni < cc->n; ni++)
        for (int64_t m = 0; m < cc->m; m++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    double acc = cc->bias ? b[m] : 0;
                    int64_t g = m / mg;
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t u = 0; u < cc->kh; u++)
                            for (int64_t v = 0; v < cc->kw; v++) {
                                int64_t ih = i * cc->s - cc->pad + u * cc->dil, iw = j * cc->s - cc->pad + v * cc->dil;
                                if (ih < 0 || ih >= cc->h || iw < 0 || iw >= cc->w) continue;
                                acc += (double)x[((ni * cc->c + g * cg + c) * cc->h + ih) * cc->w + iw] *
                                       w[((m * cg + c) * cc->kh + u) * cc->kw + v];
                            }
                    int64_t yi = ((ni * cc->m + m) * oh + i) * ow + j;
                    double want = epi_ref(cc->epi, acc, cc->epi == 1 ? res[yi] : res[m]);
                    double got = elem(&r.out[0], yi);
                    if (!close_to(got, want, cc->half ? 4e-3 : 1e-5, cc->half ? 4e-3 : 1e-5))
                        TEST_FAIL_("y[%lld]: got %.7g, want %.7g", (long long)yi, got, want);
                }
    r_free(&r);
    free(x), free(w), free(b), free(res);
    t_free(&t);
}

TEST(fused_conv_vs_naive)
{
    struct ig_pool *pool = ig__pool_create(2);
    conv_case cases[] = {
        {2, 4, 7, 6, 6, 3, 3, 2, 1, 1, 2, true, false, 1, NULL},  /* grouped, strided, padded, residual */
        {1, 3, 9, 9, 4, 3, 3, 1, 2, 2, 1, false, false, 2, pool}, /* dilated, no bias, per-channel extra */
        {2, 4, 6, 5, 4, 3, 3, 1, 1, 1, 4, true, true, 3, NULL},   /* depthwise, fp16 */
        {2, 8, 5, 5, 16, 1, 1, 1, 0, 1, 1, true, true, 1, pool},  /* 1x1, fp16 residual */
        {1, 2, 5, 4, 3, 2, 2, 1, 0, 1, 1, true, false, 0, NULL},  /* no epilogue: Conv itself */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_conv_case(&cases[i]);
        if (test_failed_) {
            fprintf(stderr, "  conv case %d\n", (int)i);
            break;
        }
    }
    ig__pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------------------- */
/* FusedMatMul                                                                                     */

typedef struct mm_case {
    int ra, rb;
    int64_t ad[4], bd[4];
    bool ta, tb, half;
    float alpha;
    int bias_rank;  /* 0 none, 1 [N], 2 [1, N] */
    int extra_rank; /* 0 none, else residual of these trailing output dims (residual add + gelu) */
    int64_t ed[4];
    struct ig_pool *pool;
} mm_case;

/* Element (i, p) of op(A) in output batch bidx[nb], or (p, j) of op(B): numpy broadcasting, 1-D promotion. */
static double mm_at(const float *x, int r, const int64_t *d, bool tr, int nb, const int64_t *bidx, int64_t row,
                    int64_t col, bool is_b)
{
    if (r == 1) return x[is_b ? row : col];
    int64_t off = 0, stride = d[r - 2] * d[r - 1];
    for (int k = r - 3; k >= 0; k--) {
        int64_t idx = d[k] == 1 ? 0 : bidx[k + nb - (r - 2)];
        off += idx * stride;
        stride *= d[k];
    }
    int64_t cols = d[r - 1];
    return tr ? x[off + col * cols + row] : x[off + row * cols + col];
}

static void run_mm_case(const mm_case *mc)
{
    T t;
    t_init(&t);
    int64_t na = numel_of(mc->ra, mc->ad), nbn = numel_of(mc->rb, mc->bd);
    bool ta = mc->ta && mc->ra > 1, tb = mc->tb && mc->rb > 1;
    int64_t M = mc->ra == 1 ? 1 : ta ? mc->ad[mc->ra - 1] : mc->ad[mc->ra - 2];
    int64_t K = mc->ra == 1 ? mc->ad[0] : ta ? mc->ad[mc->ra - 2] : mc->ad[mc->ra - 1];
    int64_t N = mc->rb == 1 ? 1 : tb ? mc->bd[mc->rb - 2] : mc->bd[mc->rb - 1];
    /* output dims */
    int nba = mc->ra > 2 ? mc->ra - 2 : 0, nbb = mc->rb > 2 ? mc->rb - 2 : 0, nb = nba > nbb ? nba : nbb;
    int64_t od[6];
    int orank = 0;
    for (int k = 0; k < nb; k++) {
        int ka = k - (nb - nba), kb = k - (nb - nbb);
        int64_t da = ka >= 0 ? mc->ad[ka] : 1, db = kb >= 0 ? mc->bd[kb] : 1;
        od[orank++] = da > db ? da : db;
    }
    int64_t nbatch = numel_of(nb, od);
    if (mc->ra > 1) od[orank++] = M;
    if (mc->rb > 1) od[orank++] = N;
    ASSERT(nbatch * M * N >= 0);
    float *a = rand_f32(na, 1), *b = rand_f32(nbn, 1), *bias = rand_f32(N, 1);
    int64_t ne = mc->extra_rank ? numel_of(mc->extra_rank, mc->ed) : 1;
    float *e = rand_f32(ne, 1);
    ingot_dtype dt = mc->half ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT;
    int64_t biasd[2] = {1, N};
    if (mc->half) {
        uint16_t *h1 = to_f16(a, na, a), *h2 = to_f16(b, nbn, b), *h3 = to_f16(bias, N, bias), *h4 = to_f16(e, ne, e);
        t_const(&t, "a", dt, mc->ra, mc->ad, h1);
        t_const(&t, "b", dt, mc->rb, mc->bd, h2);
        t_const(&t, "bias", dt, mc->bias_rank, mc->bias_rank == 1 ? biasd + 1 : biasd, h3);
        t_const(&t, "e", dt, mc->extra_rank, mc->ed, h4);
        free(h1), free(h2), free(h3), free(h4);
    } else {
        t_f32(&t, "a", mc->ra, mc->ad, a);
        t_f32(&t, "b", mc->rb, mc->bd, b);
        t_f32(&t, "bias", mc->bias_rank, mc->bias_rank == 1 ? biasd + 1 : biasd, bias);
        t_f32(&t, "e", mc->extra_rank, mc->ed, e);
    }
    char ins[32];
    snprintf(ins, sizeof ins, "a,b%s%s",
             mc->bias_rank    ? ",bias"
             : mc->extra_rank ? ","
                              : "",
             mc->extra_rank ? ",e" : "");
    ig_node *n = f_node(&t, "FusedMatMul", ins, "y");
    if (mc->ta) a_int(n, "trans_a", 1);
    if (mc->tb) a_int(n, "trans_b", 1);
    if (mc->alpha != 1) a_float(n, "alpha", mc->alpha);
    if (mc->extra_rank) {
        ig_pw_prog p;
        ig__pw_init(&p, 2, false);
        ig__pw_emit(&p, IG_PW_ADD, 0, 1, IG_PW_NONE, 0, 0);
        ig__pw_emit(&p, IG_PW_GELU_ERF, 2, IG_PW_NONE, IG_PW_NONE, 0, 0);
        a_prog(&t, n, "epilogue_", &p);
    }
    R r;
    ingot_status st = t_run(&t, n, mc->pool, &r);
    if (st != INGOT_OK) TEST_FAIL_("%s", t.err.msg);
    ASSERT_EQ(r.out[0].rank, orank);
    for (int k = 0; k < orank; k++) ASSERT_EQ(r.out[0].dims[k], od[k]);
    int64_t bidx[4];
    for (int64_t bi = 0; bi < nbatch; bi++) {
        int64_t rem = bi;
        for (int k = nb - 1; k >= 0; k--) {
            bidx[k] = rem % od[k];
            rem /= od[k];
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0;
                for (int64_t q = 0; q < K; q++)
                    acc += mm_at(a, mc->ra, mc->ad, ta, nb, bidx, i, q, false) *
                           mm_at(b, mc->rb, mc->bd, tb, nb, bidx, q, j, true);
                double v = mc->alpha * acc + (mc->bias_rank ? bias[N == 1 ? 0 : j] : 0);
                int64_t yi = (bi * M + i) * N + j;
                if (mc->extra_rank) { /* the extra broadcast from the trailing dims of the output */
                    int64_t ei = 0, st_e = 1, rem2 = yi;
                    for (int k = orank - 1, ke = mc->extra_rank - 1; k >= 0; k--, ke--) {
                        int64_t idx = rem2 % od[k];
                        rem2 /= od[k];
                        if (ke < 0) continue;
                        if (mc->ed[ke] != 1) ei += idx * st_e;
                        st_e *= mc->ed[ke];
                    }
                    v = ref_code(IG_PW_GELU_ERF, v + e[ei], 0, 0, 0, 0);
                }
                double got = elem(&r.out[0], yi);
                if (!close_to(got, v, mc->half ? 4e-3 : 2e-5, mc->half ? 4e-3 : 2e-5))
                    TEST_FAIL_("y[%lld]: got %.7g, want %.7g", (long long)yi, got, v);
            }
    }
    r_free(&r);
    free(a), free(b), free(bias), free(e);
    t_free(&t);
}

TEST(fused_matmul_vs_naive)
{
    struct ig_pool *pool = ig__pool_create(2);
    mm_case cases[] = {
        /* batched A, 2-D B (one GEMM over the folded batch), bias, alpha, residual + gelu */
        {4, 2, {2, 3, 5, 4}, {4, 6}, false, false, false, 0.5f, 1, 2, {1, 6}, NULL},
        /* both transposed, batch broadcast both ways, threaded side by side */
        {4, 3, {3, 1, 4, 5}, {2, 6, 4}, true, true, false, 1.0f, 0, 0, {0}, pool},
        /* 1-D A, bias [1, N], residual over the whole output */
        {1, 3, {4}, {2, 4, 6}, false, false, false, 1.0f, 2, 2, {2, 6}, NULL},
        /* 1-D B: N = 1 */
        {2, 1, {3, 4}, {4}, false, false, false, 2.0f, 1, 0, {0}, NULL},
        /* both 1-D: a scalar (transposition means nothing on a vector) */
        {1, 1, {5}, {5}, true, true, false, 1.0f, 0, 0, {0}, NULL},
        /* fp16, B given transposed, threaded GEMM */
        {3, 2, {2, 8, 16}, {12, 16}, false, true, true, 1.0f, 1, 3, {2, 1, 12}, pool},
        /* K = 0: the bias */
        {2, 2, {3, 0}, {0, 2}, false, false, false, 1.0f, 1, 0, {0}, NULL},
        /* batched B (no fold), many small GEMMs side by side */
        {3, 3, {8, 16, 32}, {8, 32, 24}, false, false, false, 1.0f, 1, 1, {24}, pool},
        /* transposed A over a batch (no fold) */
        {3, 2, {4, 7, 3}, {7, 5}, true, false, false, 1.0f, 0, 0, {0}, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_mm_case(&cases[i]);
        if (test_failed_) {
            fprintf(stderr, "  matmul case %d\n", (int)i);
            break;
        }
    }
    ig__pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------------------- */
/* MaskedSoftmax and Attention                                                                     */

/* softmax (log-softmax) of row[n] in place, in double; NaN -> 0 when nz. */
static void softmax_ref(double *row, int64_t n, bool log_, bool nz)
{
    double m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; j++) m = row[j] > m ? row[j] : m;
    for (int64_t j = 0; j < n; j++) sum += exp(row[j] - m);
    for (int64_t j = 0; j < n; j++) {
        row[j] = log_ ? (row[j] - m) - log(sum) : exp(row[j] - m) / sum;
        if (nz && row[j] != row[j]) row[j] = 0;
    }
}

/* Offset of element (idx over dims[rank]) in t broadcast to dims. */
static int64_t bcast_off(int rank, const int64_t *dims, int trank, const int64_t *tdims, int64_t flat)
{
    int64_t off = 0, st = 1;
    for (int k = rank - 1, kt = trank - 1; k >= 0; k--, kt--) {
        int64_t idx = flat % dims[k];
        flat /= dims[k];
        if (kt < 0) continue;
        if (tdims[kt] != 1) off += idx * st;
        st *= tdims[kt];
    }
    return off;
}

typedef struct sm_case {
    int rank;
    int64_t xd[4];
    int mrank; /* 0: no mask */
    int64_t md[4];
    float scale;
    bool log_, nz, half, mask_half, masked_row;
} sm_case;

static void run_sm_case(const sm_case *sc, struct ig_pool *pool)
{
    T t;
    t_init(&t);
    int64_t nx = numel_of(sc->rank, sc->xd), nm = sc->mrank ? numel_of(sc->mrank, sc->md) : 1;
    float *x = rand_f32(nx, 3), *m = rand_f32(nm, 2);
    if (sc->masked_row) m[0] = -INFINITY; /* the mask's first row: every score of some rows -inf */
    if (sc->masked_row && sc->md[sc->mrank - 1] > 1)
        for (int64_t j = 0; j < sc->md[sc->mrank - 1]; j++) m[j] = -INFINITY;
    ingot_dtype xt = sc->half ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT;
    if (sc->half) {
        uint16_t *h = to_f16(x, nx, x);
        t_const(&t, "x", xt, sc->rank, sc->xd, h);
        free(h);
    } else {
        t_f32(&t, "x", sc->rank, sc->xd, x);
    }
    if (sc->mask_half) {
        uint16_t *h = malloc(2 * (size_t)nm);
        for (int64_t i = 0; i < nm; i++) {
            h[i] = ig__f32_to_bf16(m[i]);
            m[i] = ig__bf16_to_f32(h[i]);
        }
        t_const(&t, "m", INGOT_DTYPE_BFLOAT16, sc->mrank, sc->md, h);
        free(h);
    } else {
        t_f32(&t, "m", sc->mrank, sc->md, m);
    }
    ig_node *n = f_node(&t, "MaskedSoftmax", sc->mrank ? "x,m" : "x", "y");
    a_float(n, "scale", sc->scale);
    a_int(n, "log", sc->log_);
    a_int(n, "nan_to_zero", sc->nz);
    R r;
    ingot_status st = t_run(&t, n, pool, &r);
    if (st != INGOT_OK) TEST_FAIL_("%s", t.err.msg);
    int64_t cols = sc->xd[sc->rank - 1];
    double *row = malloc(sizeof(double) * (size_t)cols);
    for (int64_t r0 = 0; r0 < nx; r0 += cols) {
        for (int64_t j = 0; j < cols; j++) {
            double mv = sc->mrank ? m[bcast_off(sc->rank, sc->xd, sc->mrank, sc->md, r0 + j)] : 0;
            row[j] = (double)x[r0 + j] * sc->scale + mv;
        }
        softmax_ref(row, cols, sc->log_, sc->nz);
        for (int64_t j = 0; j < cols; j++) {
            double got = elem(&r.out[0], r0 + j);
            if (!close_to(got, row[j], sc->half ? 4e-3 : 1e-5, sc->half ? 2e-3 : 1e-6))
                TEST_FAIL_("y[%lld]: got %.7g, want %.7g", (long long)(r0 + j), got, row[j]);
        }
    }
    free(row);
    r_free(&r);
    free(x), free(m);
    t_free(&t);
}

TEST(masked_softmax_vs_naive)
{
    struct ig_pool *pool = ig__pool_create(2);
    sm_case cases[] = {
        {3, {2, 3, 7}, 3, {2, 1, 7}, 0.5f, false, false, false, false, false},
        {3, {2, 3, 7}, 3, {2, 1, 7}, 0.5f, true, false, false, false, false},
        {2, {4, 5}, 2, {4, 1}, 1.0f, false, true, false, false, true},  /* a fully masked row -> 0 */
        {2, {4, 5}, 2, {4, 1}, 1.0f, false, false, false, false, true}, /* ... or NaN */
        {2, {3, 9}, 1, {9}, 0.125f, false, false, true, false, false},  /* fp16 X */
        {2, {3, 9}, 1, {9}, 2.0f, true, false, true, true, false},      /* fp16 X, bf16 mask, log */
        {1, {11}, 0, {0}, 1.0f, false, false, false, false, false},     /* no mask */
        {2, {300, 200}, 1, {200}, 0.3f, false, false, false, false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_sm_case(&cases[i], i == 7 ? pool : NULL);
        if (test_failed_) {
            fprintf(stderr, "  softmax case %d\n", (int)i);
            break;
        }
    }
    ig__pool_destroy(pool);
}

typedef struct att_case {
    int rank;
    int64_t batch[2]; /* rank - 2 of them */
    int64_t sq, skv, d, dv;
    int mrank;
    int64_t md[4];
    bool kt, nz, half, masked_batch;
    struct ig_pool *pool;
} att_case;

static void run_att_case(const att_case *ac)
{
    T t;
    t_init(&t);
    int r = ac->rank, nb = r - 2;
    int64_t qd[4], kd[4], vd[4];
    for (int k = 0; k < nb; k++) qd[k] = kd[k] = vd[k] = ac->batch[k];
    qd[nb] = ac->sq, qd[nb + 1] = ac->d;
    kd[nb] = ac->kt ? ac->d : ac->skv, kd[nb + 1] = ac->kt ? ac->skv : ac->d;
    vd[nb] = ac->skv, vd[nb + 1] = ac->dv;
    int64_t nbatch = numel_of(nb, ac->batch), nq = numel_of(r, qd), nk = numel_of(r, kd), nv = numel_of(r, vd);
    int64_t nm = ac->mrank ? numel_of(ac->mrank, ac->md) : 1;
    float *q = rand_f32(nq, 1), *kk = rand_f32(nk, 1), *v = rand_f32(nv, 1), *m = rand_f32(nm, 1);
    if (ac->masked_batch) /* mask [B, 1, 1, Skv]: batch 0 sees only -inf */
        for (int64_t j = 0; j < ac->md[ac->mrank - 1]; j++) m[j] = -INFINITY;
    ingot_dtype dt = ac->half ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT;
    if (ac->half) {
        uint16_t *h1 = to_f16(q, nq, q), *h2 = to_f16(kk, nk, kk), *h3 = to_f16(v, nv, v), *h4 = to_f16(m, nm, m);
        t_const(&t, "q", dt, r, qd, h1);
        t_const(&t, "k", dt, r, kd, h2);
        t_const(&t, "v", dt, r, vd, h3);
        t_const(&t, "m", dt, ac->mrank, ac->md, h4);
        free(h1), free(h2), free(h3), free(h4);
    } else {
        t_f32(&t, "q", r, qd, q);
        t_f32(&t, "k", r, kd, kk);
        t_f32(&t, "v", r, vd, v);
        t_f32(&t, "m", ac->mrank, ac->md, m);
    }
    ig_node *n = f_node(&t, "Attention", ac->mrank ? "q,k,v,m" : "q,k,v", "o");
    float scale = 1.0f / sqrtf((float)ac->d);
    a_float(n, "scale", scale);
    if (ac->kt) a_int(n, "k_transposed", 1);
    if (ac->nz) a_int(n, "nan_to_zero", 1);
    R res;
    ingot_status st = t_run(&t, n, ac->pool, &res);
    if (st != INGOT_OK) TEST_FAIL_("%s", t.err.msg);
    int64_t sd[4];
    memcpy(sd, qd, sizeof sd);
    sd[nb + 1] = ac->skv;
    double *srow = malloc(sizeof(double) * (size_t)(ac->skv + 1));
    for (int64_t b = 0; b < nbatch; b++)
        for (int64_t i = 0; i < ac->sq; i++) {
            for (int64_t j = 0; j < ac->skv; j++) {
                double acc = 0;
                for (int64_t e = 0; e < ac->d; e++) {
                    double kv = ac->kt ? kk[(b * ac->d + e) * ac->skv + j] : kk[(b * ac->skv + j) * ac->d + e];
                    acc += (double)q[(b * ac->sq + i) * ac->d + e] * kv;
                }
                int64_t flat = (b * ac->sq + i) * ac->skv + j;
                srow[j] = scale * acc + (ac->mrank ? m[bcast_off(r, sd, ac->mrank, ac->md, flat)] : 0);
            }
            softmax_ref(srow, ac->skv, false, ac->nz);
            for (int64_t c = 0; c < ac->dv; c++) {
                double want = 0;
                for (int64_t j = 0; j < ac->skv; j++) want += srow[j] * v[(b * ac->skv + j) * ac->dv + c];
                int64_t oi = (b * ac->sq + i) * ac->dv + c;
                double got = elem(&res.out[0], oi);
                if (!close_to(got, want, ac->half ? 5e-3 : 2e-5, ac->half ? 5e-3 : 2e-5))
                    TEST_FAIL_("o[%lld]: got %.7g, want %.7g", (long long)oi, got, want);
            }
        }
    free(srow);
    r_free(&res);
    free(q), free(kk), free(v), free(m);
    t_free(&t);
}

TEST(attention_vs_naive)
{
    struct ig_pool *pool = ig__pool_create(2);
    att_case cases[] = {
        {4, {2, 3}, 4, 6, 8, 5, 4, {2, 1, 1, 6}, false, false, false, false, NULL},
        {4, {2, 3}, 4, 6, 8, 5, 4, {2, 1, 1, 6}, true, false, false, false, pool}, /* K given as K^T */
        {4, {2, 3}, 4, 6, 8, 5, 4, {2, 1, 1, 6}, false, true, false, true, NULL},  /* masked batch -> 0 */
        {4, {2, 2}, 5, 7, 16, 16, 2, {5, 7}, false, false, true, false, pool},     /* fp16, mask [Sq, Skv] */
        {2, {0, 0}, 5, 7, 4, 3, 0, {0}, false, false, false, false, NULL},         /* no batch, no mask */
        {3, {1, 0}, 40, 2000, 4, 3, 1, {2000}, false, false, false, false, pool},  /* blocks of query rows */
        {3, {20, 0}, 6, 9, 4, 4, 3, {20, 6, 9}, true, false, false, false, pool},  /* batches side by side */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_att_case(&cases[i]);
        if (test_failed_) {
            fprintf(stderr, "  attention case %d\n", (int)i);
            break;
        }
    }
    ig__pool_destroy(pool);
}

/* ---------------------------------------------------------------------------------------------- */
/* inference: shapes (symbolic dims kept), errors naming the node, FLOPs                            */

TEST(inference_shapes_and_errors)
{
    T t;
    t_init(&t);
    ig_dim b = S(&t, "batch"), s = S(&t, "seq");
    t_input(&t, "a", INGOT_DTYPE_FLOAT, 3, (ig_dim[]){b, D(5), D(4)});
    t_input(&t, "w", INGOT_DTYPE_FLOAT, 2, (ig_dim[]){D(4), D(6)});
    t_input(&t, "wt", INGOT_DTYPE_FLOAT, 2, (ig_dim[]){D(6), D(4)});
    t_input(&t, "bias", INGOT_DTYPE_FLOAT, 1, (ig_dim[]){D(6)});
    t_input(&t, "bad_bias", INGOT_DTYPE_FLOAT, 1, (ig_dim[]){D(5)});
    t_input(&t, "res", INGOT_DTYPE_FLOAT, 3, (ig_dim[]){b, D(5), D(6)});
    t_input(&t, "res_bad", INGOT_DTYPE_FLOAT, 2, (ig_dim[]){D(4), D(6)});
    t_input(&t, "h", INGOT_DTYPE_FLOAT16, 2, (ig_dim[]){D(4), D(6)});
    ig_node *n = f_node(&t, "FusedMatMul", "a,w,bias,res", "y0");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y0"), "[batch,5,6]");
    n = f_node(&t, "FusedMatMul", "a,wt", "y1");
    a_int(n, "trans_b", 1);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y1"), "[batch,5,6]");
    n = f_node(&t, "FusedMatMul", "a,wt", "y2");
    n->name = "mm_bad";
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "mm_bad");
    ASSERT_CONTAINS(t.err.msg, "inner dims differ");
    n = f_node(&t, "FusedMatMul", "a,w,bad_bias", "y3");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "bias");
    n = f_node(&t, "FusedMatMul", "a,w,,res_bad", "y4");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "does not broadcast");
    n = f_node(&t, "FusedMatMul", "a,h", "y5");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_INVALID); /* mixed dtypes */
    n = f_node(&t, "FusedMatMul", "a,w", "y6");
    a_int(n, "trans_a", 2);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_INVALID);
    ASSERT_CONTAINS(t.err.msg, "trans_a");
    /* an epilogue is an fp32 program */
    ig_pw_prog p;
    ig__pw_init(&p, 1, true);
    ig__pw_emit(&p, IG_PW_NEG, 0, IG_PW_NONE, IG_PW_NONE, 0, 0);
    n = f_node(&t, "FusedMatMul", "a,w", "y7");
    a_prog(&t, n, "epilogue_", &p);
    a_int(n, "int_math", 1);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_INVALID);
    ASSERT_CONTAINS(t.err.msg, "fp32");
    /* an epilogue referring to an extra that is not there */
    ig__pw_init(&p, 2, false);
    ig__pw_emit(&p, IG_PW_ADD, 0, 1, IG_PW_NONE, 0, 0);
    n = f_node(&t, "FusedMatMul", "a,w", "y8");
    a_prog(&t, n, "epilogue_", &p);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_INVALID);
    ASSERT_CONTAINS(t.err.msg, "epilogue_ops");

    /* FusedConv keeps Conv's inference */
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){b, D(3), D(8), D(8)});
    t_input(&t, "cw", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){D(4), D(3), D(3), D(3)});
    t_input(&t, "cres", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){b, D(4), D(8), D(8)});
    t_input(&t, "cres_bad", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){b, D(3), D(8), D(8)});
    n = f_node(&t, "FusedConv", "x,cw,,cres", "c0");
    a_ints(&t, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    a_prog(&t, n, "epilogue_", &p);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "c0"), "[batch,4,8,8]");
    n = f_node(&t, "FusedConv", "x,cw,,cres_bad", "c1");
    a_ints(&t, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    a_prog(&t, n, "epilogue_", &p);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "epilogue input 3");

    /* Pointwise broadcasts its inputs */
    t_input(&t, "p0", INGOT_DTYPE_FLOAT, 2, (ig_dim[]){b, D(1)});
    t_input(&t, "p1", INGOT_DTYPE_FLOAT16, 1, (ig_dim[]){D(7)});
    ig__pw_init(&p, 2, false);
    ig__pw_emit(&p, IG_PW_SUB, 0, 1, IG_PW_NONE, 0, 0);
    n = f_node(&t, "Pointwise", "p0,p1", "pw");
    a_prog(&t, n, "", &p);
    a_int(n, "to", INGOT_DTYPE_BFLOAT16);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "pw"), "[batch,7]");
    ASSERT_EQ(V(&t, "pw")->dtype, INGOT_DTYPE_BFLOAT16);

    /* MaskedSoftmax and Attention */
    t_input(&t, "sc", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){b, D(12), s, s});
    t_input(&t, "msk", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){b, D(1), D(1), s});
    t_input(&t, "msk_bad", INGOT_DTYPE_FLOAT, 2, (ig_dim[]){D(3), D(5)});
    n = f_node(&t, "MaskedSoftmax", "sc,msk", "sm");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "sm"), "[batch,12,seq,seq]");
    t_input(&t, "sc2", INGOT_DTYPE_FLOAT, 2, (ig_dim[]){D(4), D(6)});
    n = f_node(&t, "MaskedSoftmax", "sc2,msk_bad", "sm2");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "mask");
    n = f_node(&t, "MaskedSoftmax", "sc2", "sm3");
    a_int(n, "log", 3);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_INVALID);
    t_input(&t, "q", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){b, D(12), s, D(64)});
    t_input(&t, "k", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){b, D(12), s, D(64)});
    t_input(&t, "kt", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){b, D(12), D(64), s});
    t_input(&t, "v", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){b, D(12), s, D(32)});
    t_input(&t, "k32", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){b, D(12), s, D(32)});
    n = f_node(&t, "Attention", "q,k,v,msk", "at");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "at"), "[batch,12,seq,32]");
    n = f_node(&t, "Attention", "q,kt,v", "at2");
    a_int(n, "k_transposed", 1);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "at2"), "[batch,12,seq,32]");
    n = f_node(&t, "Attention", "q,k32,v", "at3");
    n->name = "att_bad";
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "att_bad");
    ASSERT_CONTAINS(t.err.msg, "D = 64");
    t_input(&t, "msk13", INGOT_DTYPE_FLOAT, 3, (ig_dim[]){D(13), D(1), D(1)});
    n = f_node(&t, "Attention", "q,k,v,msk_bad", "at4"); /* [3, 5] against [batch,12,seq,seq]: may fit */
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    n = f_node(&t, "Attention", "q,k,v,msk13", "at5");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "mask 3");
    t_free(&t);
}

TEST(flops)
{
    T t;
    t_init(&t);
    t_input(&t, "a", INGOT_DTYPE_FLOAT, 3, (ig_dim[]){D(2), D(5), D(4)});
    t_input(&t, "w", INGOT_DTYPE_FLOAT, 2, (ig_dim[]){D(4), D(6)});
    t_input(&t, "bias", INGOT_DTYPE_FLOAT, 1, (ig_dim[]){D(6)});
    ig_pw_prog p;
    ig__pw_init(&p, 1, false);
    ig__pw_emit(&p, IG_PW_RELU, 0, IG_PW_NONE, IG_PW_NONE, 0, 0);
    ig__pw_emit(&p, IG_PW_NEG, 1, IG_PW_NONE, IG_PW_NONE, 0, 0);
    ig_node *n = f_node(&t, "FusedMatMul", "a,w,bias", "y");
    a_prog(&t, n, "epilogue_", &p);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    const ig_op_def *d = ig__op_find("ingot", "FusedMatMul", 1, NULL);
    ASSERT_EQ(d->flops(&t.g, n), 2 * 2 * 5 * 6 * 4 + 60 + 2 * 60);
    n = f_node(&t, "Pointwise", "a", "pw");
    a_prog(&t, n, "", &p);
    a_int(n, "to", INGOT_DTYPE_FLOAT);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_EQ(ig__op_find("ingot", "Pointwise", 1, NULL)->flops(&t.g, n), 2 * 40);
    t_input(&t, "q", INGOT_DTYPE_FLOAT, 3, (ig_dim[]){D(3), D(4), D(8)});
    t_input(&t, "k", INGOT_DTYPE_FLOAT, 3, (ig_dim[]){D(3), D(6), D(8)});
    t_input(&t, "v", INGOT_DTYPE_FLOAT, 3, (ig_dim[]){D(3), D(6), D(8)});
    n = f_node(&t, "Attention", "q,k,v", "o");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_EQ(ig__op_find("ingot", "Attention", 1, NULL)->flops(&t.g, n), 4.0 * 3 * 4 * 6 * 8 + 5.0 * 3 * 4 * 6);
    n = f_node(&t, "MaskedSoftmax", "q", "sm");
    a_float(n, "scale", 0.5f);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_EQ(ig__op_find("ingot", "MaskedSoftmax", 1, NULL)->flops(&t.g, n), 6.0 * 96);
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){D(1), D(3), D(8), D(8)});
    t_input(&t, "cw", INGOT_DTYPE_FLOAT, 4, (ig_dim[]){D(4), D(3), D(3), D(3)});
    n = f_node(&t, "FusedConv", "x,cw", "c");
    a_prog(&t, n, "epilogue_", &p);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_EQ(ig__op_find("ingot", "FusedConv", 1, NULL)->flops(&t.g, n), 2.0 * 4 * 36 * 27 + 2.0 * 4 * 36);
    t_free(&t);
}

/* MaskedSoftmax may overwrite its input (IG_OP_INPLACE). */
TEST(masked_softmax_in_place)
{
    T t;
    t_init(&t);
    int64_t d[2] = {3, 50};
    float *x = rand_f32(150, 4), m[50];
    for (int i = 0; i < 50; i++) m[i] = (float)(urand());
    t_f32(&t, "x", 2, d, x);
    t_f32(&t, "m", 1, d + 1, m);
    ig_node *n = f_node(&t, "MaskedSoftmax", "x,m", "y");
    a_float(n, "scale", 0.7f);
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    const ig_op_def *def = ig__op_find("ingot", "MaskedSoftmax", 1, NULL);
    ASSERT(def->flags & IG_OP_INPLACE);
    ig_tensor io = r.in[0];
    ig_tensor *outs[1] = {&io};
    ig_exec ex = {.g = &t.g, .node = n, .n_in = 2, .n_out = 1, .in = r.inp, .out = outs, .err = &t.err};
    ASSERT_EQ(def->cpu(&ex), INGOT_OK); /* output = input 0's bytes */
    ASSERT_EQ(memcmp(io.data, r.out[0].data, sizeof(float) * 150), 0);
    r_free(&r);
    free(x);
    t_free(&t);
}

TEST_MAIN(RUN(fused_conv_vs_naive); RUN(fused_matmul_vs_naive); RUN(masked_softmax_vs_naive); RUN(attention_vs_naive);
          RUN(inference_shapes_and_errors); RUN(flops); RUN(masked_softmax_in_place))
