/*
 * matmul.c -- ops of the 'matmul' family: Gemm and MatMul.
 *
 * fp32 goes through ig__sgemm (src/cpu/gemm.c); float16/bfloat16 are converted to fp32 in scratch and
 * back; double is computed in double and integers exactly in their own width (wrapping, as numpy
 * does), with plain loops: no model we meet spends its time there.
 *
 * MatMul follows numpy: 1-D operands are promoted (and the added dim removed), batch dims broadcast.
 * When B carries no batch (the weights of a Linear layer), A's batch dims fold into M and the whole
 * product is one GEMM; otherwise each batch is a GEMM, run side by side on the pool's threads when
 * they are small (attention heads).
 */
#include "op.h"
#include "ops_internal.h"
#include "../cpu/cpu.h"

#include <inttypes.h>
#include <stdio.h>

#define MM_TYPES (IG_TS_FLOAT | IG_T(INT32) | IG_T(INT64) | IG_T(UINT32) | IG_T(UINT64))
/* Side-by-side batched GEMMs use at most this many workspace slices (threads). */
#define MAX_BATCH_SLOTS 16
/* Batched GEMMs smaller than this (multiply-adds) run one per thread rather than each threaded. */
#define SMALL_GEMM_MACS ((int64_t)1 << 21)

static ingot_status check_same_dtype(ig_infer *cx, int i, ingot_dtype want)
{
    ig_value *v = ig__in(cx, i);
    if (!v) return INGOT_OK;
    ingot_status st = ig__check_dtype(cx, i, MM_TYPES);
    if (st != INGOT_OK) return st;
    if (v->dtype != want)
        return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "input %d '%s' has dtype %s but input 0 has %s", i, v->name,
                        ingot_dtype_name(v->dtype), ingot_dtype_name(want));
    return INGOT_OK;
}

static bool is_lowp(ingot_dtype t) { return t == INGOT_DTYPE_FLOAT16 || t == INGOT_DTYPE_BFLOAT16; }

static void to_f32(ingot_dtype t, const void *src, int64_t n, float *dst)
{
    const uint16_t *h = src;
    if (t == INGOT_DTYPE_FLOAT16)
        for (int64_t i = 0; i < n; i++) dst[i] = ig__f16_to_f32(h[i]);
    else if (t == INGOT_DTYPE_BFLOAT16)
        for (int64_t i = 0; i < n; i++) dst[i] = ig__bf16_to_f32(h[i]);
    else
        memcpy(dst, src, sizeof(float) * (size_t)n);
}

static void from_f32(ingot_dtype t, const float *src, int64_t n, void *dst)
{
    uint16_t *h = dst;
    if (t == INGOT_DTYPE_FLOAT16)
        for (int64_t i = 0; i < n; i++) h[i] = ig__f32_to_f16(src[i]);
    else if (t == INGOT_DTYPE_BFLOAT16)
        for (int64_t i = 0; i < n; i++) h[i] = ig__f32_to_bf16(src[i]);
    else
        memcpy(dst, src, sizeof(float) * (size_t)n);
}

/* Scratch pieces, 64-byte aligned, carved in a fixed order (base NULL: only sizing). */
typedef struct carver {
    char *base;
    size_t off;
} carver;

static void *carve_bytes(carver *cv, size_t bytes)
{
    bytes = (bytes + 63) & ~(size_t)63;
    void *p = cv->base ? cv->base + cv->off : NULL;
    cv->off += bytes;
    return p;
}

static ingot_status get_scratch(ig_exec *ex, size_t need, char **base, void **own)
{
    *own = NULL;
    if (need == 0 || (ex->scratch && ex->scratch_bytes >= need)) {
        *base = ex->scratch;
        return INGOT_OK;
    }
    /* constant folding and callers that did not size scratch */
    *own = ig__malloc_aligned(need, 64);
    if (!*own)
        return ig__errf(ex->err, INGOT_ERR_OUT_OF_MEMORY, "node '%s' (%s): out of memory for %zu bytes of scratch",
                        ig__node_label(ex->node), ex->node->op_type, need);
    *base = *own;
    return INGOT_OK;
}

static ingot_status exec_fail(ig_exec *ex, ingot_status st, const char *msg, int64_t a, int64_t b)
{
    return ig__errf(ex->err, st, "node '%s' (%s): %s (%" PRId64 " vs %" PRId64 ")", ig__node_label(ex->node),
                    ex->node->op_type, msg, a, b);
}

/* ---- exact and double-precision loops --------------------------------------------------------- */

/* Element (i) of an integer tensor as the uint64 bit pattern of its value (sign-extended). */
static uint64_t load_u64(ingot_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case INGOT_DTYPE_INT32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
    case INGOT_DTYPE_INT64: return (uint64_t)((const int64_t *)p)[i];
    case INGOT_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    case INGOT_DTYPE_UINT64: return ((const uint64_t *)p)[i];
    default: return 0;
    }
}

static void store_u64(ingot_dtype t, void *p, int64_t i, uint64_t v)
{
    switch (t) {
    case INGOT_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case INGOT_DTYPE_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case INGOT_DTYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case INGOT_DTYPE_UINT64: ((uint64_t *)p)[i] = v; break;
    default: break;
    }
}

/* One product of double or integer matrices, general strides: C[i*ldc + j] = alpha*sum + beta*Cin. */
typedef struct slow_mm {
    ingot_dtype t;
    int64_t m, n, k;
    const void *a, *b;
    int64_t a_off, b_off, c_off;
    int64_t ars, acs, brs, bcs; /* element (i, p) of A at a_off + i*ars + p*acs, likewise B (p, j) */
    void *c;
    int64_t ldc;
    double alpha, beta;
    const void *cin; /* Gemm's C, broadcast: element (i, j) at cin_off + i*cirs + j*cics; NULL: none */
    int64_t cin_off, cirs, cics;
} slow_mm;

static void slow_matmul(const slow_mm *s)
{
    bool exact = s->alpha == 1.0 && (s->cin == NULL || s->beta == 1.0);
    for (int64_t i = 0; i < s->m; i++)
        for (int64_t j = 0; j < s->n; j++) {
            int64_t ci = s->c_off + i * s->ldc + j;
            if (s->t == INGOT_DTYPE_DOUBLE) {
                const double *a = s->a, *b = s->b;
                double acc = 0;
                for (int64_t p = 0; p < s->k; p++)
                    acc += a[s->a_off + i * s->ars + p * s->acs] * b[s->b_off + p * s->brs + j * s->bcs];
                acc *= s->alpha;
                if (s->cin && s->beta != 0)
                    acc += s->beta * ((const double *)s->cin)[s->cin_off + i * s->cirs + j * s->cics];
                ((double *)s->c)[ci] = acc;
            } else {
                uint64_t acc = 0; /* wraps like the integer types do */
                for (int64_t p = 0; p < s->k; p++)
                    acc += load_u64(s->t, s->a, s->a_off + i * s->ars + p * s->acs) *
                           load_u64(s->t, s->b, s->b_off + p * s->brs + j * s->bcs);
                if (exact) {
                    if (s->cin) acc += load_u64(s->t, s->cin, s->cin_off + i * s->cirs + j * s->cics);
                    store_u64(s->t, s->c, ci, acc);
                } else {
                    bool sgn = s->t == INGOT_DTYPE_INT32 || s->t == INGOT_DTYPE_INT64;
                    double v = s->alpha * (sgn ? (double)(int64_t)acc : (double)acc);
                    if (s->cin && s->beta != 0) {
                        uint64_t cv = load_u64(s->t, s->cin, s->cin_off + i * s->cirs + j * s->cics);
                        v += s->beta * (sgn ? (double)(int64_t)cv : (double)cv);
                    }
                    store_u64(s->t, s->c, ci, sgn ? (uint64_t)(int64_t)v : (uint64_t)v);
                }
            }
        }
}

/* ---- Gemm --------------------------------------------------------------------------------------- */

static ingot_status gemm_infer(ig_infer *cx)
{
    ig_value *a = ig__in(cx, 0), *b = ig__in(cx, 1), *c = ig__in(cx, 2);
    if (!a || !b) return ig__fail_shape(cx, "inputs A and B are required");
    if (!c && cx->node->opset < 11) return ig__fail_shape(cx, "input C is required before opset 11");
    ingot_status st = ig__check_dtype(cx, 0, MM_TYPES);
    if (st != INGOT_OK) return st;
    if ((st = check_same_dtype(cx, 1, a->dtype)) != INGOT_OK) return st;
    if ((st = check_same_dtype(cx, 2, a->dtype)) != INGOT_OK) return st;
    int64_t ta = ig__attr_int(cx->node, "transA", 0), tb = ig__attr_int(cx->node, "transB", 0);
    ig_dim am, ak, bk, bn;
    if (a->shape.rank >= 0) {
        if (a->shape.rank != 2)
            return ig__fail_shape(cx, "input A '%s' must be 2-D, got rank %d", a->name, (int)a->shape.rank);
        am = a->shape.d[ta ? 1 : 0];
        ak = a->shape.d[ta ? 0 : 1];
    } else {
        am = ig__dim_fresh(cx);
        ak = ig__dim_fresh(cx);
    }
    if (b->shape.rank >= 0) {
        if (b->shape.rank != 2)
            return ig__fail_shape(cx, "input B '%s' must be 2-D, got rank %d", b->name, (int)b->shape.rank);
        bk = b->shape.d[tb ? 1 : 0];
        bn = b->shape.d[tb ? 0 : 1];
    } else {
        bk = ig__dim_fresh(cx);
        bn = ig__dim_fresh(cx);
    }
    if (ig__dim_known(ak) && ig__dim_known(bk) && ak.n != bk.n)
        return ig__fail_shape(cx,
                              "inner dims differ: A '%s' has K = %" PRId64 " (transA=%" PRId64
                              "), B '%s' has K = %" PRId64 " (transB=%" PRId64 ")",
                              a->name, ak.n, ta, b->name, bk.n, tb);
    ig_shape os = {.rank = 2, .d = {am, bn}};
    if (c && c->shape.rank >= 0 && cx->node->opset < 7 && ig__attr_int(cx->node, "broadcast", 0) == 0) {
        /* before opset 7, C broadcasts only with broadcast=1 */
        bool same = c->shape.rank == 2;
        for (int32_t i = 0; same && i < 2; i++)
            if (ig__dim_known(c->shape.d[i]) && ig__dim_known(os.d[i]) && c->shape.d[i].n != os.d[i].n) same = false;
        if (!same)
            return ig__fail_shape(cx, "input C '%s' must be [M, N] when attribute 'broadcast' is 0 (opset %d)", c->name,
                                  (int)cx->node->opset);
    }
    if (c && c->shape.rank >= 0) {
        if (c->shape.rank > 2)
            return ig__fail_shape(cx, "input C '%s' has rank %d; it must broadcast to [M, N]", c->name,
                                  (int)c->shape.rank);
        for (int32_t i = 0; i < c->shape.rank; i++) {
            ig_dim cd = c->shape.d[i], od = os.d[2 - c->shape.rank + i];
            if (ig__dim_known(cd) && cd.n != 1 && ig__dim_known(od) && cd.n != od.n) {
                char s1[128], s2[128];
                return ig__fail_shape(cx, "input C '%s' of shape %s does not broadcast to the output %s", c->name,
                                      ig__shape_str(cx->g, &c->shape, s1, sizeof s1),
                                      ig__shape_str(cx->g, &os, s2, sizeof s2));
            }
        }
    }
    return ig__set_out(cx, 0, a->dtype, &os);
}

typedef struct gemm_dims {
    int64_t m, n, k;
    bool ta, tb;
    float alpha, beta;
} gemm_dims;

static bool gemm_dims_of(const ig_node *node, const int64_t *ad, const int64_t *bd, gemm_dims *d)
{
    d->ta = ig__attr_int(node, "transA", 0) != 0;
    d->tb = ig__attr_int(node, "transB", 0) != 0;
    d->alpha = ig__attr_float(node, "alpha", 1.0f);
    d->beta = ig__attr_float(node, "beta", 1.0f);
    d->m = d->ta ? ad[1] : ad[0];
    d->k = d->ta ? ad[0] : ad[1];
    d->n = d->tb ? bd[0] : bd[1];
    return (d->tb ? bd[1] : bd[0]) == d->k;
}

typedef struct gemm_bufs {
    float *a, *b, *c, *y;
    void *ws;
    size_t ws_bytes;
} gemm_bufs;

static void gemm_layout(const gemm_dims *d, ingot_dtype t, int64_t c_numel, carver *cv, gemm_bufs *bf)
{
    memset(bf, 0, sizeof *bf);
    if (is_lowp(t)) {
        bf->a = carve_bytes(cv, sizeof(float) * (size_t)(d->m * d->k));
        bf->b = carve_bytes(cv, sizeof(float) * (size_t)(d->k * d->n));
        if (c_numel > 0) bf->c = carve_bytes(cv, sizeof(float) * (size_t)c_numel);
        bf->y = carve_bytes(cv, sizeof(float) * (size_t)(d->m * d->n));
    }
    if (t == INGOT_DTYPE_FLOAT || is_lowp(t)) {
        bf->ws_bytes = ig__sgemm_ws_bytes(d->m, d->n, d->k);
        bf->ws = carve_bytes(cv, bf->ws_bytes);
    }
}

static bool in_dims2(const ig_graph *g, const ig_node *n, int i, int64_t *d)
{
    if (i >= n->n_inputs || n->inputs[i] < 0) return false;
    const ig_value *v = &g->values[n->inputs[i]];
    if (v->shape.rank != 2 || !ig__shape_known(&v->shape)) return false;
    d[0] = v->shape.d[0].n;
    d[1] = v->shape.d[1].n;
    return true;
}

static size_t gemm_scratch(const ig_graph *g, const ig_node *n)
{
    int64_t ad[2], bd[2], cn = 0;
    gemm_dims d;
    if (!in_dims2(g, n, 0, ad) || !in_dims2(g, n, 1, bd) || !gemm_dims_of(n, ad, bd, &d)) return 0;
    if (n->n_inputs > 2 && n->inputs[2] >= 0 && !ig__shape_numel(&g->values[n->inputs[2]].shape, &cn)) return 0;
    carver cv = {0};
    gemm_bufs bf;
    gemm_layout(&d, g->values[n->inputs[0]].dtype, cn, &cv, &bf);
    return cv.off;
}

/* Strides of Gemm's C broadcast to [M, N] (0 along broadcast dims); false when it does not broadcast. */
static bool c_strides(const ig_tensor *ct, int64_t m, int64_t n, int64_t *rs, int64_t *cs)
{
    int64_t cm = 1, cn = 1;
    if (ct->rank == 2) {
        cm = ct->dims[0];
        cn = ct->dims[1];
    } else if (ct->rank == 1) {
        cn = ct->dims[0];
    }
    *cs = cn == n && n != 1 ? 1 : 0;
    *rs = cm == m && m != 1 ? cn : 0;
    return ct->rank <= 2 && ct->numel > 0 && (cm == m || cm == 1) && (cn == n || cn == 1);
}

static ingot_status gemm_cpu(ig_exec *ex)
{
    const ig_tensor *at = ex->in[0], *bt = ex->in[1];
    const ig_tensor *ct = ex->n_in > 2 ? ex->in[2] : NULL;
    ig_tensor *yt = ex->out[0];
    if (at->rank != 2 || bt->rank != 2)
        return exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "A and B must be 2-D", at->rank, bt->rank);
    gemm_dims d;
    if (!gemm_dims_of(ex->node, at->dims, bt->dims, &d))
        return exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "inner dims of A and B differ", d.k,
                         d.tb ? bt->dims[1] : bt->dims[0]);
    if (yt->numel == 0) return INGOT_OK;
    int64_t crs = 0, ccs = 0;
    if (ct) {
        if (!c_strides(ct, d.m, d.n, &crs, &ccs))
            return exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "C does not broadcast to [M, N]", d.m, d.n);
    }
    ingot_dtype t = at->dtype;
    if (t != INGOT_DTYPE_FLOAT && !is_lowp(t)) {
        slow_mm s = {.t = t,
                     .m = d.m,
                     .n = d.n,
                     .k = d.k,
                     .a = at->data,
                     .b = bt->data,
                     .c = yt->data,
                     .ldc = d.n,
                     .ars = d.ta ? 1 : d.k,
                     .acs = d.ta ? d.m : 1,
                     .brs = d.tb ? 1 : d.n,
                     .bcs = d.tb ? d.k : 1,
                     .alpha = d.alpha,
                     .beta = d.beta,
                     .cin = ct ? ct->data : NULL,
                     .cirs = crs,
                     .cics = ccs};
        slow_matmul(&s);
        return INGOT_OK;
    }
    carver cv = {0};
    gemm_bufs bf;
    gemm_layout(&d, t, ct ? ct->numel : 0, &cv, &bf);
    char *base = NULL;
    void *own;
    ingot_status st = get_scratch(ex, cv.off, &base, &own);
    if (st != INGOT_OK) return st;
    cv = (carver){base, 0};
    gemm_layout(&d, t, ct ? ct->numel : 0, &cv, &bf);
    const float *a = at->data, *b = bt->data, *c = ct ? ct->data : NULL;
    float *y = yt->data;
    if (is_lowp(t)) {
        to_f32(t, at->data, at->numel, bf.a);
        to_f32(t, bt->data, bt->numel, bf.b);
        if (ct) to_f32(t, ct->data, ct->numel, bf.c);
        a = bf.a;
        b = bf.b;
        c = ct ? bf.c : NULL;
        y = bf.y;
    }
    float beta = 0.0f;
    if (c && d.beta != 0) {
        for (int64_t i = 0; i < d.m; i++)
            for (int64_t j = 0; j < d.n; j++) y[i * d.n + j] = c[i * crs + j * ccs];
        beta = d.beta;
    }
    ig__sgemm_ws(ex->pool, d.ta, d.tb, d.m, d.n, d.k, d.alpha, a, d.ta ? d.m : d.k, b, d.tb ? d.k : d.n, beta, y, d.n,
                 bf.ws, bf.ws_bytes);
    if (is_lowp(t)) from_f32(t, y, yt->numel, yt->data);
    if (own) ig__free_aligned(own);
    return INGOT_OK;
}

static double gemm_flops(const ig_graph *g, const ig_node *n)
{
    int64_t ad[2], bd[2];
    gemm_dims d;
    if (!in_dims2(g, n, 0, ad) || !in_dims2(g, n, 1, bd) || !gemm_dims_of(n, ad, bd, &d)) return 0;
    double f = 2.0 * (double)d.m * (double)d.n * (double)d.k;
    if (n->n_inputs > 2 && n->inputs[2] >= 0) f += (double)d.m * (double)d.n;
    return f;
}

/* ---- MatMul ------------------------------------------------------------------------------------- */

static ingot_status matmul_infer(ig_infer *cx)
{
    ig_value *a = ig__in(cx, 0), *b = ig__in(cx, 1);
    if (!a || !b) return ig__fail_shape(cx, "inputs A and B are required");
    ingot_status st = ig__check_dtype(cx, 0, MM_TYPES);
    if (st != INGOT_OK) return st;
    if ((st = check_same_dtype(cx, 1, a->dtype)) != INGOT_OK) return st;
    if (a->shape.rank < 0 || b->shape.rank < 0) {
        ig_shape unk = {.rank = -1};
        return ig__set_out(cx, 0, a->dtype, &unk);
    }
    int32_t ra = a->shape.rank, rb = b->shape.rank;
    if (ra == 0 || rb == 0)
        return ig__fail_shape(cx, "MatMul operands must have rank >= 1 ('%s' has rank %d, '%s' rank %d)", a->name,
                              (int)ra, b->name, (int)rb);
    ig_dim ak = a->shape.d[ra - 1], bk = b->shape.d[rb == 1 ? 0 : rb - 2];
    if (ig__dim_known(ak) && ig__dim_known(bk) && ak.n != bk.n)
        return ig__fail_shape(
            cx, "inner dims differ: '%s' has K = %" PRId64 " (its last dim), '%s' has K = %" PRId64 " (its %s dim)",
            a->name, ak.n, b->name, bk.n, rb == 1 ? "only" : "second-to-last");
    ig_shape ba = {.rank = ra > 2 ? ra - 2 : 0}, bb = {.rank = rb > 2 ? rb - 2 : 0}, batch;
    for (int32_t i = 0; i < ba.rank; i++) ba.d[i] = a->shape.d[i];
    for (int32_t i = 0; i < bb.rank; i++) bb.d[i] = b->shape.d[i];
    if ((st = ig__broadcast(cx, &ba, &bb, &batch)) != INGOT_OK) return st;
    ig_shape os = batch;
    if (ra > 1) os.d[os.rank++] = a->shape.d[ra - 2];
    if (rb > 1) os.d[os.rank++] = b->shape.d[rb - 1];
    return ig__set_out(cx, 0, a->dtype, &os);
}

bool ig__bmm_plan(int32_t ra, const int64_t *ad, int32_t rb, const int64_t *bd, bool ta, bool tb, ig_bmm_plan *p)
{
    memset(p, 0, sizeof *p);
    if (ra < 1 || rb < 1) return false;
    p->ta = ra > 1 && ta;
    p->tb = rb > 1 && tb;
    p->alpha = 1.0f;
    p->m = ra == 1 ? 1 : p->ta ? ad[ra - 1] : ad[ra - 2];
    p->k = ra == 1 ? ad[0] : p->ta ? ad[ra - 2] : ad[ra - 1];
    p->n = rb == 1 ? 1 : p->tb ? bd[rb - 2] : bd[rb - 1];
    int64_t bk = rb == 1 ? bd[0] : p->tb ? bd[rb - 1] : bd[rb - 2];
    if (bk != p->k) return false;
    p->lda = p->ta ? p->m : p->k;
    p->ldb = p->tb ? p->k : p->n;
    int32_t na = ra > 2 ? ra - 2 : 0, nbb = rb > 2 ? rb - 2 : 0;
    p->nb = na > nbb ? na : nbb;
    int64_t sa = p->m * p->k, sb = p->k * p->n;
    p->nbatch = 1;
    bool b_batched = false, a_full = true; /* A's batch is contiguous when none of its dims is broadcast */
    for (int32_t i = p->nb - 1; i >= 0; i--) {
        int32_t ia = i - (p->nb - na), ib = i - (p->nb - nbb);
        int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1;
        if (da != db && da != 1 && db != 1) return false;
        p->bdims[i] = da == 0 || db == 0 ? 0 : da > db ? da : db;
        p->astr[i] = da == 1 ? 0 : sa;
        p->bstr[i] = db == 1 ? 0 : sb;
        if (db != 1) b_batched = true;
        if (da == 1 && p->bdims[i] != 1) a_full = false;
        sa *= da;
        sb *= db;
        p->nbatch *= p->bdims[i];
    }
    p->fold = !b_batched && a_full && !p->ta;
    return true;
}

void ig__bmm_workspace(const ig_bmm_plan *p, size_t *slice_bytes, int64_t *slots)
{
    if (p->fold) {
        *slice_bytes = ig__sgemm_ws_bytes(p->nbatch * p->m, p->n, p->k);
        *slots = 1;
        return;
    }
    *slice_bytes = (ig__sgemm_ws_bytes(p->m, p->n, p->k) + 63) & ~(size_t)63;
    bool small = p->m * p->n * p->k < SMALL_GEMM_MACS;
    *slots = small ? (p->nbatch < MAX_BATCH_SLOTS ? p->nbatch : MAX_BATCH_SLOTS) : 1;
    if (*slots < 1) *slots = 1;
}

void ig__bmm_offsets(const ig_bmm_plan *p, int64_t bi, int64_t *ao, int64_t *bo)
{
    *ao = *bo = 0;
    for (int32_t i = p->nb - 1; i >= 0; i--) {
        int64_t idx = bi % p->bdims[i];
        bi /= p->bdims[i];
        *ao += idx * p->astr[i];
        *bo += idx * p->bstr[i];
    }
}

typedef struct mm_bufs {
    float *a, *b, *y;
    char *ws;
    size_t ws_bytes; /* per slice */
    int64_t slots;   /* workspace slices (batched GEMMs side by side) */
} mm_bufs;

static void mm_layout(const ig_bmm_plan *p, ingot_dtype t, int64_t an, int64_t bn, int64_t yn, carver *cv, mm_bufs *bf)
{
    memset(bf, 0, sizeof *bf);
    if (t != INGOT_DTYPE_FLOAT && !is_lowp(t)) return;
    if (is_lowp(t)) {
        bf->a = carve_bytes(cv, sizeof(float) * (size_t)an);
        bf->b = carve_bytes(cv, sizeof(float) * (size_t)bn);
        bf->y = carve_bytes(cv, sizeof(float) * (size_t)yn);
    }
    ig__bmm_workspace(p, &bf->ws_bytes, &bf->slots);
    bf->ws = carve_bytes(cv, bf->ws_bytes * (size_t)bf->slots);
}

static bool in_dims_any(const ig_graph *g, const ig_node *n, int i, int32_t *rank, int64_t *d)
{
    if (i >= n->n_inputs || n->inputs[i] < 0) return false;
    const ig_value *v = &g->values[n->inputs[i]];
    if (v->shape.rank < 0 || !ig__shape_known(&v->shape)) return false;
    *rank = v->shape.rank;
    for (int32_t k = 0; k < v->shape.rank; k++) d[k] = v->shape.d[k].n;
    return true;
}

static size_t matmul_scratch(const ig_graph *g, const ig_node *n)
{
    int32_t ra, rb;
    int64_t ad[IG_MAX_RANK], bd[IG_MAX_RANK];
    ig_bmm_plan p;
    if (!in_dims_any(g, n, 0, &ra, ad) || !in_dims_any(g, n, 1, &rb, bd) ||
        !ig__bmm_plan(ra, ad, rb, bd, false, false, &p))
        return 0;
    int64_t an = 1, bn = 1;
    for (int32_t i = 0; i < ra; i++) an *= ad[i];
    for (int32_t i = 0; i < rb; i++) bn *= bd[i];
    carver cv = {0};
    mm_bufs bf;
    mm_layout(&p, g->values[n->inputs[0]].dtype, an, bn, p.nbatch * p.m * p.n, &cv, &bf);
    return cv.off;
}

typedef struct mm_job {
    const ig_bmm_plan *p;
    const float *a, *b;
    float *y;
    const mm_bufs *bf;
    int64_t per_slot;
} mm_job;

/* Slots [sb, se): slot s runs batches [s * per_slot, ...) one after another, single-threaded. */
static void mm_slot_range(void *arg, int64_t sb, int64_t se)
{
    const mm_job *j = arg;
    const ig_bmm_plan *p = j->p;
    for (int64_t s = sb; s < se; s++) {
        int64_t b0 = s * j->per_slot, b1 = b0 + j->per_slot;
        if (b1 > p->nbatch) b1 = p->nbatch;
        for (int64_t bi = b0; bi < b1; bi++) {
            int64_t ao, bo;
            ig__bmm_offsets(p, bi, &ao, &bo);
            ig__sgemm_ws(NULL, false, false, p->m, p->n, p->k, 1.0f, j->a + ao, p->k, j->b + bo, p->n, 0.0f,
                         j->y + bi * p->m * p->n, p->n, j->bf->ws + s * j->bf->ws_bytes, j->bf->ws_bytes);
        }
    }
}

static ingot_status matmul_cpu(ig_exec *ex)
{
    const ig_tensor *at = ex->in[0], *bt = ex->in[1];
    ig_tensor *yt = ex->out[0];
    ig_bmm_plan p;
    if (!ig__bmm_plan(at->rank, at->dims, bt->rank, bt->dims, false, false, &p))
        return exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "operand shapes do not match (ranks)", at->rank, bt->rank);
    if (p.nbatch * p.m * p.n != yt->numel)
        return exec_fail(ex, INGOT_ERR_INTERNAL, "output size disagrees with the operands", yt->numel,
                         p.nbatch * p.m * p.n);
    if (yt->numel == 0) return INGOT_OK;
    ingot_dtype t = at->dtype;
    if (t != INGOT_DTYPE_FLOAT && !is_lowp(t)) {
        for (int64_t bi = 0; bi < p.nbatch; bi++) {
            int64_t ao, bo;
            ig__bmm_offsets(&p, bi, &ao, &bo);
            slow_mm s = {.t = t,
                         .m = p.m,
                         .n = p.n,
                         .k = p.k,
                         .a = at->data,
                         .b = bt->data,
                         .c = yt->data,
                         .a_off = ao,
                         .b_off = bo,
                         .c_off = bi * p.m * p.n,
                         .ldc = p.n,
                         .ars = p.k,
                         .acs = 1,
                         .brs = p.n,
                         .bcs = 1,
                         .alpha = 1.0};
            slow_matmul(&s);
        }
        return INGOT_OK;
    }
    carver cv = {0};
    mm_bufs bf;
    mm_layout(&p, t, at->numel, bt->numel, yt->numel, &cv, &bf);
    char *base = NULL;
    void *own;
    ingot_status st = get_scratch(ex, cv.off, &base, &own);
    if (st != INGOT_OK) return st;
    cv = (carver){base, 0};
    mm_layout(&p, t, at->numel, bt->numel, yt->numel, &cv, &bf);
    const float *a = at->data, *b = bt->data;
    float *y = yt->data;
    if (is_lowp(t)) {
        to_f32(t, at->data, at->numel, bf.a);
        to_f32(t, bt->data, bt->numel, bf.b);
        a = bf.a;
        b = bf.b;
        y = bf.y;
    }
    if (p.fold) {
        ig__sgemm_ws(ex->pool, false, false, p.nbatch * p.m, p.n, p.k, 1.0f, a, p.k, b, p.n, 0.0f, y, p.n, bf.ws,
                     bf.ws_bytes);
    } else {
        int64_t threads = ig__pool_threads(ex->pool);
        int64_t slots = threads < bf.slots ? threads : bf.slots;
        if (slots > 1) {
            mm_job j = {&p, a, b, y, &bf, (p.nbatch + slots - 1) / slots};
            ig__parallel_for(ex->pool, slots, 1, mm_slot_range, &j);
        } else {
            for (int64_t bi = 0; bi < p.nbatch; bi++) {
                int64_t ao, bo;
                ig__bmm_offsets(&p, bi, &ao, &bo);
                ig__sgemm_ws(ex->pool, false, false, p.m, p.n, p.k, 1.0f, a + ao, p.k, b + bo, p.n, 0.0f,
                             y + bi * p.m * p.n, p.n, bf.ws, bf.ws_bytes);
            }
        }
    }
    if (is_lowp(t)) from_f32(t, y, yt->numel, yt->data);
    if (own) ig__free_aligned(own);
    return INGOT_OK;
}

static double matmul_flops(const ig_graph *g, const ig_node *n)
{
    int32_t ra, rb;
    int64_t ad[IG_MAX_RANK], bd[IG_MAX_RANK];
    ig_bmm_plan p;
    if (!in_dims_any(g, n, 0, &ra, ad) || !in_dims_any(g, n, 1, &rb, bd) ||
        !ig__bmm_plan(ra, ad, rb, bd, false, false, &p))
        return 0;
    return 2.0 * (double)p.nbatch * (double)p.m * (double)p.n * (double)p.k;
}

/* ---- descriptors -------------------------------------------------------------------------------- */

const ig_op_def ig__op_gemm = {
    .name = "Gemm",
    .since = 1,
    .min_in = 2,
    .max_in = 3,
    .min_out = 1,
    .max_out = 1,
    .infer = gemm_infer,
    .cpu = gemm_cpu,
    .cpu_scratch = gemm_scratch,
    .flops = gemm_flops,
};
const ig_op_def ig__op_matmul = {
    .name = "MatMul",
    .since = 1,
    .min_in = 2,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .infer = matmul_infer,
    .cpu = matmul_cpu,
    .cpu_scratch = matmul_scratch,
    .flops = matmul_flops,
};
