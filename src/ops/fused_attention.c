/*
 * fused_attention.c -- the ingot-domain ops around softmax (docs/OPTIMIZER.md, "The ops"):
 *   MaskedSoftmax  softmax(X * scale + mask) over the last axis (log-softmax when `log`), NaN -> 0
 *                  when `nan_to_zero`;
 *   Attention      softmax(scale * Q K^T + mask) V per batch (all leading dims), K given as K or K^T.
 *
 * Both keep Softmax's numerics (norm.c's row kernel: row maximum subtracted, sum in double), so a
 * fused graph computes what the nodes it replaced computed. Attention runs per batch and per block of
 * query rows: S = scale * Q_blk K^T (ig__sgemm, alpha = scale), + mask, softmax rows, O_blk = P V,
 * with S in scratch (a block of rows, never the whole [Sq, Skv] of every batch). Batches run side by
 * side on the pool's threads, each slot with its own S and GEMM workspace; a single batch threads
 * inside its GEMMs instead. float16/bfloat16 tensors are converted to fp32 in scratch and the output
 * rounded once.
 */
#include "op.h"
#include "ops_internal.h"
#include "pw.h"
#include "../cpu/cpu.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#define SM_TYPES  (IG_T(FLOAT) | IG_T(FLOAT16) | IG_T(BFLOAT16))
#define MAX_SLOTS 16                 /* batches computed side by side at most (scratch slices) */
#define S_BLOCK   ((int64_t)1 << 16) /* scores per slot: rows of Q per block = S_BLOCK / Skv */
#define ROW_GRAIN 32768              /* elements per parallel chunk at least */

/* ---------------------------------------------------------------------------------------------- */
/* shared                                                                                          */

/* Mask offsets: the mask broadcast to a [rows..., cols] view; row r (over the leading dims, row-major)
 * starts at moff(r), its elements cstride apart (0 or 1). */
typedef struct mask_map {
    const float *m; /* fp32 data (converted when the mask is another type); NULL: no mask */
    int32_t lead;   /* leading dims */
    int64_t dims[IG_MAX_RANK], st[IG_MAX_RANK];
    int64_t cstride;
} mask_map;

static void mask_map_init(mask_map *mm, const ig_tensor *mask, const float *data, int32_t rank, const int64_t *dims)
{
    memset(mm, 0, sizeof *mm);
    if (!mask) return;
    int64_t st[IG_MAX_RANK];
    ig__broadcast_strides(mask, rank, dims, st);
    mm->m = data;
    mm->lead = rank - 1;
    for (int32_t d = 0; d < rank - 1; d++) mm->dims[d] = dims[d], mm->st[d] = st[d];
    mm->cstride = st[rank - 1];
}

static const float *mask_row(const mask_map *mm, int64_t r)
{
    int64_t off = 0;
    for (int32_t d = mm->lead - 1; d >= 0; d--) {
        off += (r % mm->dims[d]) * mm->st[d];
        r /= mm->dims[d];
    }
    return mm->m + off;
}

/* One row of scores: w = w * scale + mask, softmax (log), NaN -> 0. */
static void score_row(float *w, int64_t n, float scale, const float *m, int64_t ms, bool log, bool nan_to_zero)
{
    if (scale != 1.0f)
        for (int64_t j = 0; j < n; j++) w[j] *= scale;
    if (m)
        for (int64_t j = 0; j < n; j++) w[j] += m[j * ms];
    ig__softmax_row_f32(w, w, n, log);
    if (nan_to_zero)
        for (int64_t j = 0; j < n; j++)
            if (w[j] != w[j]) w[j] = 0;
}

static ingot_status mask_check(ig_exec *ex, const ig_tensor *mask, int32_t rank, const int64_t *dims)
{
    if (mask && !ig__pw_broadcasts(mask, rank, dims))
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "the mask does not broadcast to the scores");
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* MaskedSoftmax                                                                                   */

static ingot_status masked_softmax_infer(ig_infer *cx)
{
    ig_value *x = ig__in(cx, 0), *mask = ig__in(cx, 1);
    if (!x) return ig__fail_shape(cx, "input X is required");
    ingot_status st;
    if ((st = ig__check_dtype(cx, 0, SM_TYPES)) != INGOT_OK || (st = ig__check_dtype(cx, 1, SM_TYPES)) != INGOT_OK)
        return st;
    if ((st = ig__infer_float_attr(cx, "scale")) != INGOT_OK || (st = ig__infer_flag(cx, "log")) != INGOT_OK ||
        (st = ig__infer_flag(cx, "nan_to_zero")) != INGOT_OK)
        return st;
    if (x->shape.rank == 0) return ig__fail_shape(cx, "input '%s' is a scalar; the softmax axis is the last", x->name);
    if (mask && (st = ig__infer_bcast_to(cx, 1, &x->shape, "mask")) != INGOT_OK) return st;
    return ig__set_out(cx, 0, x->dtype, &x->shape);
}

/* fp32 copies: a float16/bfloat16 X (the rows are computed there), a mask that is not float32. */
typedef struct sm_bufs {
    float *x, *mask;
} sm_bufs;

static void sm_layout(ingot_dtype xt, int64_t xn, ingot_dtype mt, int64_t mn, ig_carver *cv, sm_bufs *bf)
{
    memset(bf, 0, sizeof *bf);
    if (ig__is_lowp(xt)) bf->x = ig__carve(cv, sizeof(float) * (size_t)xn);
    if (mn > 0 && mt != INGOT_DTYPE_FLOAT) bf->mask = ig__carve(cv, sizeof(float) * (size_t)mn);
}

static size_t masked_softmax_scratch(const ig_graph *g, const ig_node *n)
{
    if (n->n_inputs < 1 || n->inputs[0] < 0) return 0;
    const ig_value *x = &g->values[n->inputs[0]];
    const ig_value *m = n->n_inputs > 1 && n->inputs[1] >= 0 ? &g->values[n->inputs[1]] : NULL;
    ig_carver cv = {0};
    sm_bufs bf;
    sm_layout(x->dtype, (int64_t)ig__value_numel(g, n->inputs[0]), m ? m->dtype : INGOT_DTYPE_FLOAT,
              m ? (int64_t)ig__value_numel(g, n->inputs[1]) : 0, &cv, &bf);
    return cv.off;
}

typedef struct sm_job {
    ingot_dtype dt;
    const void *x;
    void *y;
    float *work; /* fp32 rows: y itself (float32) or scratch */
    int64_t n;
    float scale;
    bool log, nan_to_zero;
    mask_map mm;
} sm_job;

static void sm_range(void *arg, int64_t rb, int64_t re)
{
    const sm_job *j = arg;
    const size_t es = ingot_dtype_size(j->dt);
    for (int64_t r = rb; r < re; r++) {
        float *w = j->work + r * j->n;
        ig__to_f32(j->dt, (const char *)j->x + (size_t)(r * j->n) * es, j->n, w);
        score_row(w, j->n, j->scale, j->mm.m ? mask_row(&j->mm, r) : NULL, j->mm.cstride, j->log, j->nan_to_zero);
        if (ig__is_lowp(j->dt)) ig__from_f32(j->dt, w, j->n, (char *)j->y + (size_t)(r * j->n) * es);
    }
}

static ingot_status masked_softmax_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0], *mask = ex->n_in > 1 ? ex->in[1] : NULL;
    ig_tensor *y = ex->out[0];
    if (!x || !y || y->numel != x->numel) return ig__exec_fail(ex, INGOT_ERR_INTERNAL, "missing input or output");
    if (x->rank < 1) return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "input is a scalar");
    ingot_status st = mask_check(ex, mask, x->rank, x->dims);
    int64_t n = x->dims[x->rank - 1];
    if (st != INGOT_OK || x->numel == 0 || n == 0) return st;
    ig_carver cv = {0};
    sm_bufs bf;
    sm_layout(x->dtype, x->numel, mask ? mask->dtype : INGOT_DTYPE_FLOAT, mask ? mask->numel : 0, &cv, &bf);
    char *base = NULL;
    void *own;
    if ((st = ig__exec_scratch(ex, cv.off, &base, &own)) != INGOT_OK) return st;
    cv = (ig_carver){base, 0};
    sm_layout(x->dtype, x->numel, mask ? mask->dtype : INGOT_DTYPE_FLOAT, mask ? mask->numel : 0, &cv, &bf);
    const float *md = NULL;
    if (mask) {
        md = mask->data;
        if (bf.mask) {
            ig__to_f32(mask->dtype, mask->data, mask->numel, bf.mask);
            md = bf.mask;
        }
    }
    sm_job j = {.dt = x->dtype,
                .x = x->data,
                .y = y->data,
                .work = ig__is_lowp(x->dtype) ? bf.x : y->data,
                .n = n,
                .scale = ig__attr_float(ex->node, "scale", 1.0f),
                .log = ig__attr_int(ex->node, "log", 0) != 0,
                .nan_to_zero = ig__attr_int(ex->node, "nan_to_zero", 0) != 0};
    mask_map_init(&j.mm, mask, md, x->rank, x->dims);
    int64_t grain = ROW_GRAIN / n;
    ig__parallel_for(ex->pool, x->numel / n, grain < 1 ? 1 : grain, sm_range, &j);
    if (own) ig__free_aligned(own);
    return INGOT_OK;
}

/* max, subtract, exp, sum, divide (five per element, as Softmax), plus the scale and the mask. */
static double masked_softmax_flops(const ig_graph *g, const ig_node *n)
{
    if (n->n_inputs < 1) return 0;
    double per = 5.0 + (ig__attr_float(n, "scale", 1.0f) != 1.0f) + (n->n_inputs > 1 && n->inputs[1] >= 0);
    return per * ig__value_numel(g, n->inputs[0]);
}

const ig_op_def ig__op_masked_softmax = {
    .name = "MaskedSoftmax",
    .domain = "ingot",
    .since = 1,
    .min_in = 1,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .flags = IG_OP_INPLACE,
    .infer = masked_softmax_infer,
    .cpu = masked_softmax_cpu,
    .cpu_scratch = masked_softmax_scratch,
    .flops = masked_softmax_flops,
};

/* ---------------------------------------------------------------------------------------------- */
/* Attention                                                                                       */

static ingot_status attention_infer(ig_infer *cx)
{
    ig_value *q = ig__in(cx, 0), *k = ig__in(cx, 1), *v = ig__in(cx, 2), *mask = ig__in(cx, 3);
    if (!q || !k || !v) return ig__fail_shape(cx, "inputs Q, K and V are required");
    ingot_status st;
    for (int i = 0; i < 4; i++) {
        if ((st = ig__check_dtype(cx, i, SM_TYPES)) != INGOT_OK) return st;
        ig_value *t = ig__in(cx, i);
        if (i < 3 && t->dtype != q->dtype)
            return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "input %d '%s' has dtype %s but Q has %s", i, t->name,
                            ingot_dtype_name(t->dtype), ingot_dtype_name(q->dtype));
    }
    if ((st = ig__infer_float_attr(cx, "scale")) != INGOT_OK || (st = ig__infer_flag(cx, "k_transposed")) != INGOT_OK ||
        (st = ig__infer_flag(cx, "nan_to_zero")) != INGOT_OK)
        return st;
    ig_shape os = {.rank = -1};
    if (q->shape.rank >= 0 && k->shape.rank >= 0 && v->shape.rank >= 0) {
        int32_t r = q->shape.rank;
        if (r < 2) return ig__fail_shape(cx, "Q '%s' must have rank >= 2 ([*, Sq, D]), got %d", q->name, (int)r);
        if (k->shape.rank != r || v->shape.rank != r)
            return ig__fail_shape(cx, "Q, K and V must have the same rank (%d, %d, %d)", (int)r, (int)k->shape.rank,
                                  (int)v->shape.rank);
        const ig_dim *qd = q->shape.d, *kd = k->shape.d, *vd = v->shape.d;
        for (int32_t d = 0; d < r - 2; d++)
            for (int t = 0; t < 2; t++) {
                ig_dim o = t ? vd[d] : kd[d];
                if (ig__dim_known(o) && ig__dim_known(qd[d]) && o.n != qd[d].n)
                    return ig__fail_shape(cx, "batch dim %d of %s is %" PRId64 " but Q's is %" PRId64, (int)d,
                                          t ? "V" : "K", o.n, qd[d].n);
            }
        bool kt = ig__attr_int(cx->node, "k_transposed", 0) != 0;
        ig_dim kdim = kt ? kd[r - 2] : kd[r - 1], skv = kt ? kd[r - 1] : kd[r - 2];
        if (ig__dim_known(kdim) && ig__dim_known(qd[r - 1]) && kdim.n != qd[r - 1].n)
            return ig__fail_shape(cx, "Q has D = %" PRId64 " but K has %" PRId64 " (k_transposed=%d)", qd[r - 1].n,
                                  kdim.n, (int)kt);
        if (ig__dim_known(skv) && ig__dim_known(vd[r - 2]) && skv.n != vd[r - 2].n)
            return ig__fail_shape(cx, "K has %" PRId64 " keys but V has %" PRId64 " values", skv.n, vd[r - 2].n);
        ig_shape scores = q->shape;
        scores.d[r - 1] = ig__dim_known(skv) ? skv : vd[r - 2];
        if (mask && (st = ig__infer_bcast_to(cx, 3, &scores, "mask")) != INGOT_OK) return st;
        os = q->shape;
        os.d[r - 1] = vd[r - 1];
    }
    return ig__set_out(cx, 0, q->dtype, &os);
}

typedef struct att_geom {
    int32_t rank;
    int64_t nbatch, sq, d, skv, dv, blk; /* blk: query rows per block */
    bool kt;
} att_geom;

static bool att_geom_of(const ig_node *node, int32_t r, const int64_t *qd, const int64_t *kd, const int64_t *vd,
                        att_geom *gm)
{
    memset(gm, 0, sizeof *gm);
    if (r < 2) return false;
    gm->rank = r;
    gm->kt = ig__attr_int(node, "k_transposed", 0) != 0;
    gm->nbatch = 1;
    for (int32_t i = 0; i < r - 2; i++) {
        if (kd[i] != qd[i] || vd[i] != qd[i]) return false;
        gm->nbatch *= qd[i];
    }
    gm->sq = qd[r - 2];
    gm->d = qd[r - 1];
    gm->skv = gm->kt ? kd[r - 1] : kd[r - 2];
    gm->dv = vd[r - 1];
    if ((gm->kt ? kd[r - 2] : kd[r - 1]) != gm->d || vd[r - 2] != gm->skv) return false;
    int64_t blk = gm->skv > 0 ? S_BLOCK / gm->skv : gm->sq;
    gm->blk = blk < 1 ? 1 : blk > gm->sq ? gm->sq : blk;
    if (gm->blk < 1) gm->blk = 1;
    return true;
}

typedef struct att_bufs {
    float *q, *k, *v, *o, *mask; /* fp32 copies (float16/bfloat16 tensors; a mask not in float32) */
    char *slot;                  /* slots x (scores block + GEMM workspace) */
    size_t slot_bytes, s_bytes, ws_bytes;
    int64_t slots;
} att_bufs;

static void att_layout(const att_geom *gm, ingot_dtype t, ingot_dtype mt, int64_t mn, ig_carver *cv, att_bufs *bf)
{
    memset(bf, 0, sizeof *bf);
    if (ig__is_lowp(t)) {
        bf->q = ig__carve(cv, sizeof(float) * (size_t)(gm->nbatch * gm->sq * gm->d));
        bf->k = ig__carve(cv, sizeof(float) * (size_t)(gm->nbatch * gm->skv * gm->d));
        bf->v = ig__carve(cv, sizeof(float) * (size_t)(gm->nbatch * gm->skv * gm->dv));
        bf->o = ig__carve(cv, sizeof(float) * (size_t)(gm->nbatch * gm->sq * gm->dv));
    }
    if (mn > 0 && mt != INGOT_DTYPE_FLOAT) bf->mask = ig__carve(cv, sizeof(float) * (size_t)mn);
    size_t w1 = ig__sgemm_ws_bytes(gm->blk, gm->skv, gm->d), w2 = ig__sgemm_ws_bytes(gm->blk, gm->dv, gm->skv);
    bf->ws_bytes = ((w1 > w2 ? w1 : w2) + 63) & ~(size_t)63;
    bf->s_bytes = (sizeof(float) * (size_t)(gm->blk * gm->skv) + 63) & ~(size_t)63;
    bf->slot_bytes = bf->s_bytes + bf->ws_bytes;
    bf->slots = gm->nbatch < MAX_SLOTS ? gm->nbatch : MAX_SLOTS;
    if (bf->slots < 1) bf->slots = 1;
    bf->slot = ig__carve(cv, bf->slot_bytes * (size_t)bf->slots);
}

static bool dims_of(const ig_graph *g, const ig_node *n, int i, int32_t *rank, int64_t *d)
{
    if (i >= n->n_inputs || n->inputs[i] < 0) return false;
    const ig_value *v = &g->values[n->inputs[i]];
    if (v->shape.rank < 0 || !ig__shape_known(&v->shape)) return false;
    *rank = v->shape.rank;
    for (int32_t k = 0; k < v->shape.rank; k++) d[k] = v->shape.d[k].n;
    return true;
}

static bool graph_att_geom(const ig_graph *g, const ig_node *n, att_geom *gm)
{
    int32_t rq, rk, rv;
    int64_t qd[IG_MAX_RANK], kd[IG_MAX_RANK], vd[IG_MAX_RANK];
    if (!dims_of(g, n, 0, &rq, qd) || !dims_of(g, n, 1, &rk, kd) || !dims_of(g, n, 2, &rv, vd)) return false;
    return rk == rq && rv == rq && att_geom_of(n, rq, qd, kd, vd, gm);
}

static size_t attention_scratch(const ig_graph *g, const ig_node *n)
{
    att_geom gm;
    if (!graph_att_geom(g, n, &gm)) return 0;
    bool has_mask = n->n_inputs > 3 && n->inputs[3] >= 0;
    ig_carver cv = {0};
    att_bufs bf;
    att_layout(&gm, g->values[n->inputs[0]].dtype, has_mask ? g->values[n->inputs[3]].dtype : INGOT_DTYPE_FLOAT,
               has_mask ? (int64_t)ig__value_numel(g, n->inputs[3]) : 0, &cv, &bf);
    return cv.off;
}

typedef struct att_job {
    const att_geom *gm;
    const float *q, *k, *v;
    float *o;
    float scale;
    bool nan_to_zero;
    mask_map mm;
    const att_bufs *bf;
    int64_t per_slot;
    float *s; /* the rows job's scores block */
    int64_t row0;
} att_job;

/* Rows [rb, re) of the current scores block (row0: its first row over batch x Sq). */
static void att_rows(void *arg, int64_t rb, int64_t re)
{
    const att_job *j = arg;
    for (int64_t i = rb; i < re; i++)
        score_row(j->s + i * j->gm->skv, j->gm->skv, 1.0f, j->mm.m ? mask_row(&j->mm, j->row0 + i) : NULL,
                  j->mm.cstride, false, j->nan_to_zero);
}

/* Batch b in one slot's scores block and workspace; pool threads the GEMMs and rows (or NULL). */
static void att_batch(att_job *j, int64_t b, char *slot, struct ig_pool *pool)
{
    const att_geom *gm = j->gm;
    float *s = (float *)slot;
    char *ws = slot + j->bf->s_bytes;
    const float *qb = j->q + b * gm->sq * gm->d, *kb = j->k + b * gm->skv * gm->d, *vb = j->v + b * gm->skv * gm->dv;
    float *ob = j->o + b * gm->sq * gm->dv;
    for (int64_t i0 = 0; i0 < gm->sq; i0 += gm->blk) {
        int64_t rows = gm->sq - i0 < gm->blk ? gm->sq - i0 : gm->blk;
        /* S = scale * Q_blk K^T: K [Skv, D] read transposed, or K^T [D, Skv] as it is */
        ig__sgemm_ws(pool, false, !gm->kt, rows, gm->skv, gm->d, j->scale, qb + i0 * gm->d, gm->d, kb,
                     gm->kt ? gm->skv : gm->d, 0.0f, s, gm->skv, ws, j->bf->ws_bytes);
        att_job rj = *j;
        rj.s = s;
        rj.row0 = b * gm->sq + i0;
        int64_t grain = ROW_GRAIN / (gm->skv + 1);
        ig__parallel_for(pool, rows, grain < 1 ? 1 : grain, att_rows, &rj);
        ig__sgemm_ws(pool, false, false, rows, gm->dv, gm->skv, 1.0f, s, gm->skv, vb, gm->dv, 0.0f, ob + i0 * gm->dv,
                     gm->dv, ws, j->bf->ws_bytes);
    }
}

static void att_slot_range(void *arg, int64_t sb, int64_t se)
{
    att_job *j = arg;
    for (int64_t s = sb; s < se; s++) {
        int64_t b0 = s * j->per_slot, b1 = b0 + j->per_slot;
        if (b1 > j->gm->nbatch) b1 = j->gm->nbatch;
        for (int64_t b = b0; b < b1; b++) att_batch(j, b, j->bf->slot + s * j->bf->slot_bytes, NULL);
    }
}

static ingot_status attention_cpu(ig_exec *ex)
{
    const ig_tensor *q = ex->in[0], *k = ex->in[1], *v = ex->in[2], *mask = ex->n_in > 3 ? ex->in[3] : NULL;
    ig_tensor *o = ex->out[0];
    if (!q || !k || !v || !o) return ig__exec_fail(ex, INGOT_ERR_INTERNAL, "missing input or output");
    att_geom gm;
    if (k->rank != q->rank || v->rank != q->rank || !att_geom_of(ex->node, q->rank, q->dims, k->dims, v->dims, &gm))
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "Q, K and V do not fit [*, Sq, D], [*, Skv, D], [*, Skv, Dv]");
    if (o->numel != gm.nbatch * gm.sq * gm.dv)
        return ig__exec_fail(ex, INGOT_ERR_INTERNAL, "output has %" PRId64 " elements, expected %" PRId64, o->numel,
                             gm.nbatch * gm.sq * gm.dv);
    int64_t sdims[IG_MAX_RANK];
    memcpy(sdims, q->dims, sizeof(int64_t) * (size_t)q->rank);
    sdims[q->rank - 1] = gm.skv;
    ingot_status st = mask_check(ex, mask, q->rank, sdims);
    if (st != INGOT_OK || o->numel == 0) return st;
    ingot_dtype t = q->dtype;
    ig_carver cv = {0};
    att_bufs bf;
    att_layout(&gm, t, mask ? mask->dtype : INGOT_DTYPE_FLOAT, mask ? mask->numel : 0, &cv, &bf);
    char *base = NULL;
    void *own;
    if ((st = ig__exec_scratch(ex, cv.off, &base, &own)) != INGOT_OK) return st;
    cv = (ig_carver){base, 0};
    att_layout(&gm, t, mask ? mask->dtype : INGOT_DTYPE_FLOAT, mask ? mask->numel : 0, &cv, &bf);
    att_job j = {.gm = &gm,
                 .q = q->data,
                 .k = k->data,
                 .v = v->data,
                 .o = o->data,
                 .scale = ig__attr_float(ex->node, "scale", 1.0f),
                 .nan_to_zero = ig__attr_int(ex->node, "nan_to_zero", 0) != 0,
                 .bf = &bf};
    if (ig__is_lowp(t)) {
        ig__to_f32(t, q->data, q->numel, bf.q);
        ig__to_f32(t, k->data, k->numel, bf.k);
        ig__to_f32(t, v->data, v->numel, bf.v);
        j.q = bf.q, j.k = bf.k, j.v = bf.v, j.o = bf.o;
    }
    const float *md = mask ? mask->data : NULL;
    if (mask && bf.mask) {
        ig__to_f32(mask->dtype, mask->data, mask->numel, bf.mask);
        md = bf.mask;
    }
    mask_map_init(&j.mm, mask, md, q->rank, sdims);
    int64_t threads = ig__pool_threads(ex->pool), slots = threads < bf.slots ? threads : bf.slots;
    if (slots > 1) {
        j.per_slot = (gm.nbatch + slots - 1) / slots;
        ig__parallel_for(ex->pool, slots, 1, att_slot_range, &j);
    } else {
        for (int64_t b = 0; b < gm.nbatch; b++) att_batch(&j, b, bf.slot, ex->pool);
    }
    if (ig__is_lowp(t)) ig__from_f32(t, j.o, o->numel, o->data);
    if (own) ig__free_aligned(own);
    return INGOT_OK;
}

/* Q K^T and P V (2 * Sq * Skv * (D + Dv) per batch), the softmax (5 per score) and the mask. */
static double attention_flops(const ig_graph *g, const ig_node *n)
{
    att_geom gm;
    if (!graph_att_geom(g, n, &gm)) return 0;
    double scores = (double)gm.nbatch * (double)gm.sq * (double)gm.skv;
    double f = 2.0 * scores * (double)(gm.d + gm.dv) + 5.0 * scores;
    if (n->n_inputs > 3 && n->inputs[3] >= 0) f += scores;
    return f;
}

const ig_op_def ig__op_attention = {
    .name = "Attention",
    .domain = "ingot",
    .since = 1,
    .min_in = 3,
    .max_in = 4,
    .min_out = 1,
    .max_out = 1,
    .infer = attention_infer,
    .cpu = attention_cpu,
    .cpu_scratch = attention_scratch,
    .flops = attention_flops,
};
