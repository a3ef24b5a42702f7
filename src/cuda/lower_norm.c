/*
 * lower_norm.c -- row-wise kernels: Softmax / LogSoftmax, ingot.MaskedSoftmax (scale and additive mask
 * folded into one pass over the scores, the exporters' IsNaN guard too), ingot.Attention (the
 * flash-attention kernel where it applies -- fp16, head dims up to 64, any number of keys -- else a GEMM, the
 * masked softmax and a second GEMM), LayerNormalization, and reductions (ReduceMean/Sum/Max/Min,
 * GlobalAverage/MaxPool, ArgMax).
 */
#include "lower_internal.h"

/* ---- softmax ------------------------------------------------------------------------------------- */

/* The scores' leading dims as at most 3 row dims sd[0..2] (sd[3] the columns) and the mask's strides
 * over them ms[0..3], for scores of any rank: adjacent leading dims merge where the mask broadcasts over
 * both or is contiguous across both ([B, windows, heads, S, S] scores with a [windows, heads, S, S] bias
 * become 2 row dims). M may be NULL. false when the mask does not broadcast to the scores or the dims do
 * not merge into 3 (the caller then adds the mask first: MaxViT's [windows, 1, S, S] mask over
 * [B, windows, heads, S, S] alternates broadcast and full dims four times). */
static bool row_layout(const ig_cu_tensor *x, const ig_cu_tensor *M, int64_t *sd, int64_t *ms)
{
    int32_t r = x->rank, pad = M ? r - M->rank : r;
    if (pad < 0 || r < 1) return false;
    int64_t gd[IG_MAX_RANK], gs[IG_MAX_RANK];
    int ng = 0;
    for (int32_t q = 0; q < r; q++) {
        int64_t d = x->dims[q], md = q < pad ? 1 : M->dims[q - pad];
        if (md != d && md != 1) return false;
        int64_t st = md == 1 ? 0 : M->strides[q - pad];
        if (q == r - 1) {
            sd[3] = d;
            ms[3] = st;
        } else if (d == 1) {
            continue;
        } else if (ng > 0 && ((gs[ng - 1] == 0 && st == 0) || (st != 0 && gs[ng - 1] == st * d))) {
            gd[ng - 1] *= d;
            gs[ng - 1] = st;
        } else {
            gd[ng] = d;
            gs[ng++] = st;
        }
    }
    if (ng > 3) return false;
    for (int q = 0; q < 3; q++) {
        int k = q - (3 - ng);
        sd[q] = k >= 0 ? gd[k] : 1;
        ms[q] = k >= 0 ? gs[k] : 0;
    }
    return true;
}

/* softmax(x * scale + mask) over the last axis of the dense scores xt, into output value yv. */
static ingot_status emit_masked_softmax(ig_lower *L, int32_t id, int32_t xt, int32_t mt, float scale, bool log,
                                        bool nan_to_zero, int32_t yv)
{
    const ig_cu_tensor x = *ig__lw_T(L, xt);
    int64_t sd[4] = {1, 1, 1, 1}, ms[4] = {0, 0, 0, 0};
    if (!row_layout(&x, mt >= 0 ? ig__lw_T(L, mt) : NULL, sd, ms)) {
        /* a mask of a layout the kernel does not read: add it first */
        ig_pw_prog add = {.n_in = 2, .n_ops = 1};
        add.op[0] = (ig_pw_inst){.code = IG_PW_ADD, .a = 0, .b = 1, .c = -1};
        int32_t two[2] = {xt, mt};
        if ((xt = ig__lw_program(L, id, &add, two, x.dtype, x.dims, x.rank, -1)) < 0) return ig__lw_status(L);
        mt = -1;
        if (!row_layout(&x, NULL, sd, ms)) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "scores without a row layout");
    }
    int32_t yt = ig__lw_dense(L, x.dtype, x.rank, x.dims, false);
    ig_cu_step *step = yt >= 0 ? ig__lw_step(L, IG_ST_SOFTMAX, id, NULL) : NULL;
    if (!step) return ig__lw_oom(L);
    step->u.softmax.x = xt;
    step->u.softmax.y = yt;
    step->u.softmax.mask = mt;
    ig_softmax_args *a = &step->u.softmax.args;
    memset(a, 0, sizeof *a);
    a->dtype = x.dtype;
    a->cols = sd[3];
    a->rows = sd[0] * sd[1] * sd[2];
    a->inner = 1;
    a->log = log;
    a->scale = scale;
    a->zero_nan = nan_to_zero;
    for (int q = 0; q < 3; q++) a->row_dims[q] = sd[q];
    for (int q = 0; q < 4; q++) a->ms[q] = ms[q];
    a->mask_dtype = mt >= 0 ? ig__lw_T(L, mt)->dtype : 0;
    L->p->val_tensor[yv] = yt;
    return INGOT_OK;
}

ingot_status ig__lw_softmax(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t xt = ig__lw_contig(L, id, ig__lw_get(L, n->inputs[0]));
    if (xt < 0) return ig__lw_status(L);
    if (n->op == IG_OP_masked_softmax) {
        int32_t mt = -1;
        if (ig__lw_in(L, id, 1) >= 0 && (mt = ig__lw_get(L, n->inputs[1])) < 0)
            return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "the mask has no device tensor");
        return emit_masked_softmax(L, id, xt, mt, ig__attr_float(n, "scale", 1.f), ig__attr_int(n, "log", 0) != 0,
                                   ig__attr_int(n, "nan_to_zero", 0) != 0, n->outputs[0]);
    }
    ig_cu_tensor x = *ig__lw_T(L, xt);
    int32_t rank = x.rank;
    int32_t ax = rank ? ig__lw_norm_axis(ig__attr_int(n, "axis", n->opset >= 13 ? -1 : 1), rank) : 0;
    int64_t rows = 1, cols = 1, inner = 1;
    for (int32_t k = 0; k < ax; k++) rows *= x.dims[k];
    if (n->opset < 13) { /* the old semantics: the axes from `axis` on flattened into one row */
        for (int32_t k = ax; k < rank; k++) cols *= x.dims[k];
    } else {
        cols = rank ? x.dims[ax] : 1;
        for (int32_t k = ax + 1; k < rank; k++) inner *= x.dims[k];
    }
    int32_t yt = ig__lw_dense(L, x.dtype, rank, x.dims, false);
    ig_cu_step *s = yt >= 0 ? ig__lw_step(L, IG_ST_SOFTMAX, id, NULL) : NULL;
    if (!s) return ig__lw_oom(L);
    s->u.softmax.x = xt;
    s->u.softmax.y = yt;
    s->u.softmax.mask = -1;
    ig_softmax_args *a = &s->u.softmax.args;
    a->dtype = x.dtype;
    a->rows = rows;
    a->cols = cols;
    a->inner = inner;
    a->log = n->op == IG_OP_log_softmax;
    a->scale = 1.f;
    a->row_dims[0] = a->row_dims[1] = a->row_dims[2] = 1;
    L->p->val_tensor[n->outputs[0]] = yt;
    return INGOT_OK;
}

/* ---- attention ------------------------------------------------------------------------------------ */

static bool attn_view_ok(const ig_cu_tensor *t, int inner_axis)
{
    if (t->strides[inner_axis] != 1 || t->offset % 8) return false;
    for (int32_t k = 0; k < 4; k++)
        if (k != inner_axis && t->dims[k] > 1 && t->strides[k] % 8) return false;
    return true;
}

/* The fused kernel: Q, K^T, V (and the mask) read through their strides, the output written in the order
 * of a transposing consumer when that makes the consumer a view. -1 (nothing emitted) when the kernel
 * does not take these operands. */
static ingot_status emit_flash(ig_lower *L, int32_t id, int32_t qt, int32_t ktt, int32_t vt, int32_t mt, float scale,
                               bool *done)
{
    *done = false;
    if (!attn_view_ok(ig__lw_T(L, qt), 3)) qt = ig__lw_materialize(L, id, qt, false, "attention Q copy");
    if (qt >= 0 && !attn_view_ok(ig__lw_T(L, vt), 3)) vt = ig__lw_materialize(L, id, vt, false, "attention V copy");
    if (qt < 0 || vt < 0) return ig__lw_status(L);
    if (!attn_view_ok(ig__lw_T(L, ktt), 2)) { /* K as dense [B,H,S,D], seen as K^T */
        ig_cu_tensor x = *ig__lw_T(L, ktt);
        int64_t kd[4] = {x.dims[0], x.dims[1], x.dims[3], x.dims[2]};
        int32_t dense = ig__lw_dense(L, x.dtype, 4, kd, false);
        int32_t view = dense >= 0 ? ig__lw_transpose_last2(L, dense) : -1;
        if (view < 0) return ig__lw_oom(L);
        ingot_status st = ig__lw_copy(L, id, "attention K copy", ktt, view, 0);
        if (st != INGOT_OK) return st;
        ktt = view;
    }
    const ig_cu_tensor *Q = ig__lw_T(L, qt), *K = ig__lw_T(L, ktt), *V = ig__lw_T(L, vt);
    ig_attention_args a;
    memset(&a, 0, sizeof a);
    a.dtype = INGOT_DTYPE_FLOAT16;
    a.b = Q->dims[0];
    a.h = Q->dims[1];
    a.sq = Q->dims[2];
    a.d = Q->dims[3];
    a.dv = V->dims[3];
    a.skv = K->dims[3];
    a.kernel = L->o->attention_kernel;
    for (int q = 0; q < 4; q++) {
        a.qs[q] = Q->dims[q] == 1 && q < 3 ? 0 : Q->strides[q];
        a.vs[q] = V->dims[q] == 1 && q < 3 ? 0 : V->strides[q];
    }
    a.ks[0] = K->dims[0] == 1 ? 0 : K->strides[0];
    a.ks[1] = K->dims[1] == 1 ? 0 : K->strides[1];
    a.ks[2] = K->strides[3];
    a.ks[3] = K->strides[2];
    a.scale = scale;
    if (mt >= 0) {
        const ig_cu_tensor *M = ig__lw_T(L, mt);
        int32_t pad = 4 - M->rank;
        int64_t full[4] = {a.b, a.h, a.sq, a.skv};
        for (int q = pad; q < 4; q++) a.ms[q] = M->dims[q - pad] == full[q] && full[q] > 1 ? M->strides[q - pad] : 0;
        a.mask_dtype = M->dtype;
    }
    const ig_node *n = ig__lw_node(L, id);
    int64_t od[IG_MAX_RANK];
    ig__lw_value_dims(L, n->outputs[0], od);
    /* When the sole consumer is a Transpose, write in an order that makes it cheap: its own order when
     * that keeps the batch outermost (BERT's [B,Sq,H,D]: the Transpose is then a dense view and the
     * Reshape after it free), else [B,Sq,H,D] all the same (ViT's Transpose to [Sq,B,H,D] and Reshape to
     * [Sq*B, E] stay lazy views, and the out-projection runs over the rows in this batch-major memory
     * order, which is also the residual stream's: see ig__lw_rows_in_memory_order). The output gets the
     * inverse-permuted strides of a dense buffer in that order. */
    int32_t ot = -1;
    int32_t tc = ig__lw_sole_consumer(L, n->outputs[0]);
    const int64_t *perm = NULL;
    int64_t np = 0;
    if (tc >= 0 && ig__lw_node(L, tc)->op == IG_OP_transpose && ig__attr_ints(ig__lw_node(L, tc), "perm", &perm, &np) &&
        np == 4) {
        int64_t pd[4], ds[4], os[4], ord[4] = {0, 2, 1, 3};
        int seen = 0;
        for (int q = 0; q < 4; q++) seen |= perm[q] >= 0 && perm[q] < 4 ? 1 << perm[q] : 0;
        if (seen == 15) { /* a permutation */
            if (perm[0] == 0)
                for (int q = 0; q < 4; q++) ord[q] = perm[q];
            for (int q = 0; q < 4; q++) pd[q] = od[ord[q]];
            ig__lw_contig_strides(4, pd, ds);
            for (int q = 0; q < 4; q++) os[ord[q]] = a.os[ord[q]] = ds[q];
            if (ingot_cuda_attention_supported(&a)) {
                int32_t b = ig__lw_buf(L, IG_LOC_ARENA, ig__lw_numel(4, pd) * ingot_dtype_size(INGOT_DTYPE_FLOAT16));
                if ((ot = ig__lw_tensor(L, b, INGOT_DTYPE_FLOAT16, 4, od, os, 0)) < 0) return ig__lw_oom(L);
            }
        }
    }
    if (ot < 0 && (ot = ig__lw_dense(L, INGOT_DTYPE_FLOAT16, 4, od, false)) < 0) return ig__lw_oom(L);
    for (int q = 0; q < 4; q++) a.os[q] = ig__lw_T(L, ot)->strides[q];
    if (!ingot_cuda_attention_supported(&a)) return INGOT_OK; /* the decomposed form instead */
    ig_cu_step *step = ig__lw_step(L, IG_ST_ATTENTION, id, NULL);
    if (!step) return ig__lw_oom(L);
    step->u.attn.q = qt;
    step->u.attn.k = ktt;
    step->u.attn.v = vt;
    step->u.attn.mask = mt;
    step->u.attn.o = ot;
    step->u.attn.args = a;
    L->p->val_tensor[n->outputs[0]] = ot;
    *done = true;
    return INGOT_OK;
}

/* The head dims the fused kernel takes: multiples of 8 up to 64 (ViT/BERT 64, PVT/Swin 32, LeViT 16). */
static bool flash_head_dim(int64_t d) { return d >= 8 && d <= 64 && d % 8 == 0; }

/* S or O of the decomposed attention: a plain batched GEMM into a fresh dense tensor. */
static int32_t attn_gemm(ig_lower *L, int32_t id, int32_t at, int32_t bt, float alpha, const int64_t *od, int32_t rank)
{
    ig_cu_gemm g;
    memset(&g, 0, sizeof g);
    g.alpha = alpha;
    g.bias = g.c = g.scratch = -1;
    return ig__lw_gemm(L, id, at, bt, &g, false, od, rank);
}

ingot_status ig__lw_attention(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    float scale = ig__attr_float(n, "scale", 1.f);
    bool kt_given = ig__attr_int(n, "k_transposed", 0) != 0, nan0 = ig__attr_int(n, "nan_to_zero", 0) != 0;
    int32_t qt = ig__lw_get(L, n->inputs[0]), kt = ig__lw_get(L, n->inputs[1]), vt = ig__lw_get(L, n->inputs[2]);
    int32_t mt = ig__lw_in(L, id, 3) >= 0 ? ig__lw_get(L, n->inputs[3]) : -1;
    if (qt < 0 || kt < 0 || vt < 0 || (ig__lw_in(L, id, 3) >= 0 && mt < 0))
        return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "attention operands have no device tensors");
    int32_t ktt = kt_given ? kt : ig__lw_transpose_last2(L, kt); /* K^T as a view */
    if (ktt < 0) return ig__lw_oom(L);
    const ig_cu_tensor *Q = ig__lw_T(L, qt), *KT = ig__lw_T(L, ktt), *V = ig__lw_T(L, vt);
    int32_t rank = Q->rank;
    /* any number of keys: the kernel streams them in tiles with an online softmax, so long sequences
     * (Whisper's 1,500) gain the most: the decomposed form writes and reads [B, H, Sq, Skv] scores */
    bool flash = L->o->attention && L->p->fdt == INGOT_DTYPE_FLOAT16 && rank == 4 && flash_head_dim(Q->dims[3]) &&
                 flash_head_dim(V->dims[3]) && Q->dtype == INGOT_DTYPE_FLOAT16;
    if (flash && mt >= 0) {
        const ig_cu_tensor *M = ig__lw_T(L, mt);
        int64_t full[4] = {Q->dims[0], Q->dims[1], Q->dims[2], KT->dims[3]};
        if (M->rank > 4 || M->dtype != INGOT_DTYPE_FLOAT16) flash = false;
        for (int32_t q = 0; flash && q < M->rank; q++) {
            int64_t d = M->dims[q], f = full[4 - M->rank + q];
            if (d != f && d != 1) flash = false;
        }
    }
    if (flash) {
        bool done;
        ingot_status st = emit_flash(L, id, qt, ktt, vt, mt, scale, &done);
        if (st != INGOT_OK || done) return st;
    }
    /* decomposed: S = scale Q K^T (alpha), P = masked softmax(S), O = P V */
    int64_t sd[IG_MAX_RANK], od[IG_MAX_RANK];
    for (int32_t k = 0; k < rank; k++) sd[k] = od[k] = Q->dims[k];
    sd[rank - 1] = KT->dims[rank - 1];
    od[rank - 1] = V->dims[rank - 1];
    int32_t s = attn_gemm(L, id, qt, ktt, scale, sd, rank);
    if (s < 0) return ig__lw_status(L);
    int32_t yv = n->outputs[0];
    ingot_status st = emit_masked_softmax(L, id, s, mt, 1.f, false, nan0, yv);
    if (st != INGOT_OK) return st;
    int32_t p = L->p->val_tensor[yv];
    int32_t o = attn_gemm(L, id, p, vt, 1.f, od, rank);
    if (o < 0) return ig__lw_status(L);
    L->p->val_tensor[yv] = o;
    return INGOT_OK;
}

/* ---- layer normalisation ------------------------------------------------------------------------- */

ingot_status ig__lw_layernorm(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    if (ig__lw_out_used(L, id, 1) || ig__lw_out_used(L, id, 2))
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "the Mean/InvStdDev outputs are not supported");
    int32_t xt = ig__lw_contig(L, id, ig__lw_get(L, n->inputs[0]));
    if (xt < 0) return ig__lw_status(L);
    ig_cu_tensor x = *ig__lw_T(L, xt);
    int32_t ax = ig__lw_norm_axis(ig__attr_int(n, "axis", -1), x.rank);
    int64_t rows = 1, cols = 1;
    for (int32_t k = 0; k < ax; k++) rows *= x.dims[k];
    for (int32_t k = ax; k < x.rank; k++) cols *= x.dims[k];
    int32_t sv = ig__lw_in(L, id, 1), bv = ig__lw_in(L, id, 2);
    int32_t gt =
        ig__lw_is_const(L, sv) ? ig__lw_const(L, sv, INGOT_DTYPE_FLOAT, 1.f) : ig__lw_contig(L, id, ig__lw_get(L, sv));
    int32_t bt = bv < 0                   ? -1
                 : ig__lw_is_const(L, bv) ? ig__lw_const(L, bv, INGOT_DTYPE_FLOAT, 1.f)
                                          : ig__lw_contig(L, id, ig__lw_get(L, bv));
    if (gt < 0 || (bv >= 0 && bt < 0)) return ig__lw_status(L);
    if ((int64_t)ig__cu_tensor_numel(ig__lw_T(L, gt)) != cols ||
        (bt >= 0 && (int64_t)ig__cu_tensor_numel(ig__lw_T(L, bt)) != cols))
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "scale/bias must cover the normalised dims exactly");
    int32_t yt = ig__lw_dense(L, x.dtype, x.rank, x.dims, false);
    ig_cu_step *s = yt >= 0 ? ig__lw_step(L, IG_ST_LAYERNORM, id, NULL) : NULL;
    if (!s) return ig__lw_oom(L);
    s->u.ln.x = xt;
    s->u.ln.y = yt;
    s->u.ln.gamma = gt;
    s->u.ln.beta = bt;
    ig_layernorm_args *a = &s->u.ln.args;
    a->dtype = x.dtype;
    a->wdtype = ig__lw_T(L, gt)->dtype;
    a->rows = rows;
    a->cols = cols;
    a->eps = ig__attr_float(n, "epsilon", 1e-5f);
    L->p->val_tensor[n->outputs[0]] = yt;
    return INGOT_OK;
}

/* ---- reductions ------------------------------------------------------------------------------------ */

/* The reduction kernel's kind for node n (enum ig_rdx_kind), -1 for ops it does not compute (ArgMax).
 * By name, so that the Reduce* ops that op_list.h does not have yet map too once they arrive. */
static int rdx_kind(const ig_node *n)
{
    static const struct {
        const char *op;
        int kind;
    } map[] = {
        {"ReduceSum", IG_RDX_SUM},         {"ReduceMean", IG_RDX_MEAN},     {"GlobalAveragePool", IG_RDX_MEAN},
        {"ReduceMax", IG_RDX_MAX},         {"GlobalMaxPool", IG_RDX_MAX},   {"ReduceMin", IG_RDX_MIN},
        {"ReduceProd", IG_RDX_PROD},       {"ReduceL1", IG_RDX_L1},         {"ReduceL2", IG_RDX_L2},
        {"ReduceSumSquare", IG_RDX_SUMSQ}, {"ReduceLogSum", IG_RDX_LOGSUM}, {"ReduceLogSumExp", IG_RDX_LOGSUMEXP},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(n->op_type, map[i].op)) return map[i].kind;
    return -1;
}

typedef struct rdx_dim {
    int64_t n, xs, ys; /* size, stride in x, stride in y (0: reduced) */
    bool red;
} rdx_dim;

/* The canonical problem of reducing x over red[] into the dense yt (see ig_reduction_args): x's dims of
 * size > 1 by decreasing stride, neighbours of one class merged where both strides nest, the innermost
 * (stride 1) run split off. False when x's strides do not give one (a broadcast or strided innermost
 * dim) or too many dims remain. */
static bool rdx_canonical(const ig_cu_tensor *x, const bool *red, ig_reduction_args *a)
{
    rdx_dim d[IG_MAX_RANK];
    int32_t n = 0;
    int64_t ys = 1, yst[IG_MAX_RANK];
    for (int32_t k = x->rank - 1; k >= 0; k--) { /* y is dense over the kept dims in logical order */
        yst[k] = red[k] ? 0 : ys;
        if (!red[k]) ys *= x->dims[k];
    }
    for (int32_t k = 0; k < x->rank; k++) {
        if (x->dims[k] == 1) continue;
        if (x->strides[k] <= 0) return false;
        d[n++] = (rdx_dim){.n = x->dims[k], .xs = x->strides[k], .ys = yst[k], .red = red[k]};
    }
    for (int32_t i = 1; i < n; i++) /* by decreasing stride (insertion sort: rank <= 8) */
        for (int32_t j = i; j > 0 && d[j - 1].xs < d[j].xs; j--) {
            rdx_dim t = d[j - 1];
            d[j - 1] = d[j];
            d[j] = t;
        }
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        rdx_dim *o = m ? &d[m - 1] : NULL;
        if (o && o->red == d[i].red && o->xs == d[i].xs * d[i].n && (o->red || o->ys == d[i].ys * d[i].n)) {
            o->n *= d[i].n;
            o->xs = d[i].xs;
            o->ys = d[i].ys;
            continue;
        }
        d[m++] = d[i];
    }
    memset(a, 0, sizeof *a);
    a->n_out = 1;
    a->n_red_total = 1;
    a->inner = 1;
    if (m == 0) return true; /* a single element */
    const rdx_dim *in = &d[m - 1];
    if (in->xs != 1) return false;
    a->cols = !in->red;
    a->inner = in->n;
    a->inner_ys = in->ys;
    if (in->red)
        a->n_red_total = in->n;
    else
        a->n_out = in->n;
    for (int32_t i = 0; i < m - 1; i++) {
        if (d[i].red) {
            if (a->n_red >= IG_RDX_MAX_DIMS) return false;
            a->red[a->n_red] = d[i].n;
            a->red_xs[a->n_red++] = d[i].xs;
            a->n_red_total *= d[i].n;
        } else {
            if (a->n_keep >= IG_RDX_MAX_DIMS) return false;
            a->keep[a->n_keep] = d[i].n;
            a->keep_xs[a->n_keep] = d[i].xs;
            a->keep_ys[a->n_keep++] = d[i].ys;
            a->n_out *= d[i].n;
        }
    }
    return true;
}

/* The bandwidth kernel (reduce.cu) over xt into a fresh dense tensor of x's type and the given dims (those
 * of the kept dims in order, any rank); *yt -1 (nothing emitted) when the kernel does not take them. */
static ingot_status reduction_into(ig_lower *L, int32_t id, int32_t xt, const bool *red, int kind, int32_t orank,
                                   const int64_t *od, int32_t *yt)
{
    *yt = -1;
    ig_cu_tensor x = *ig__lw_T(L, xt);
    if (!ingot_cuda_reduction_supported(x.dtype, kind)) return INGOT_OK;
    ig_reduction_args a;
    if (!rdx_canonical(&x, red, &a)) { /* a broadcast or strided innermost dim: read a dense copy */
        if ((xt = ig__lw_contig(L, id, xt)) < 0) return ig__lw_status(L);
        x = *ig__lw_T(L, xt);
        if (!rdx_canonical(&x, red, &a)) return INGOT_OK;
    }
    if (a.n_red_total == 0 && kind != IG_RDX_SUM)
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "reduction over an empty axis");
    a.kind = kind;
    a.x_dtype = a.y_dtype = x.dtype;
    size_t part = ingot_cuda_reduction_plan(&a);
    int32_t y = ig__lw_dense(L, x.dtype, orank, od, false), pt = -1;
    if (y >= 0 && part) {
        int64_t pn = (int64_t)(part / sizeof(float));
        pt = ig__lw_tensor(L, ig__lw_buf(L, IG_LOC_ARENA, part), INGOT_DTYPE_FLOAT, 1, &pn, NULL, 0);
    }
    ig_cu_step *s =
        y >= 0 && (pt >= 0 || !part) ? ig__lw_kstep(L, IG_ST_REDUCTION, id, 3, (int32_t[]){xt, y, pt}) : NULL;
    if (!s) return ig__lw_oom(L);
    s->u.k.a.red = a;
    *yt = y;
    return INGOT_OK;
}

/* The bandwidth kernel into output value yv; *done false (nothing emitted) when it does not take x. */
static ingot_status emit_reduction(ig_lower *L, int32_t id, int32_t xt, const bool *red, int kind, int32_t yv,
                                   bool *done)
{
    *done = false;
    if (ig__lw_T(L, xt)->dtype != ig__lw_dev_dtype(L->p, ig__lw_val(L, yv)->dtype)) return INGOT_OK;
    int64_t od[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, yv, od), yt;
    ingot_status st = reduction_into(L, id, xt, red, kind, orank, od, &yt);
    if (st != INGOT_OK || yt < 0) return st;
    L->p->val_tensor[yv] = yt;
    *done = true;
    return INGOT_OK;
}

/* x reduced over red[] into a dense tensor of x's type and x's dims with the reduced ones 1 (keepdims),
 * for the lowerings that compose reductions and programs; -1 on failure (L->err set). */
static int32_t reduce_keep(ig_lower *L, int32_t id, int32_t xt, const bool *red, int kind)
{
    ig_cu_tensor x = *ig__lw_T(L, xt);
    int64_t od[IG_MAX_RANK];
    for (int32_t k = 0; k < x.rank; k++) od[k] = red[k] ? 1 : x.dims[k];
    int32_t yt;
    if (reduction_into(L, id, xt, red, kind, x.rank, od, &yt) != INGOT_OK) return -1;
    if (yt < 0)
        ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "the reduction kernel does not take this %s tensor",
                    ingot_dtype_name(x.dtype));
    return yt;
}

/* Reduce x over the axes in `red` (bool per axis) into a dense output of the value's shape: the
 * bandwidth kernel where it applies, else the general one (ArgMax, double). */
static ingot_status emit_reduce(ig_lower *L, int32_t id, int32_t xt, const bool *red, int kind, int32_t yv,
                                int select_last)
{
    int rk = kind >= IG_RED_ARGMAX ? -1 : rdx_kind(ig__lw_node(L, id));
    if (rk >= 0) {
        bool done;
        ingot_status st = emit_reduction(L, id, xt, red, rk, yv, &done);
        if (st != INGOT_OK || done) return st;
        if (rk >= IG_RDX_PROD) /* no general kernel for these */
            return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "%s tensors are not supported",
                               ingot_dtype_name(ig__lw_T(L, xt)->dtype));
    }
    ig_cu_tensor x = *ig__lw_T(L, xt);
    ig_cu_step *s = ig__lw_step(L, IG_ST_REDUCE, id, NULL);
    if (!s) return ig__lw_oom(L);
    ig_reduce_args *a = &s->u.reduce.args;
    memset(a, 0, sizeof *a);
    a->kind = kind;
    a->select_last = select_last;
    a->x_dtype = x.dtype;
    a->n_out = 1;
    a->n_red = 1;
    for (int32_t k = 0; k < x.rank; k++) {
        if (x.dims[k] == 1 && !(kind >= IG_RED_ARGMAX && red[k])) continue;
        if (red[k]) {
            if (a->red_rank >= IG_EW_MAX_RANK)
                return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "too many reduced dims");
            a->red_dims[a->red_rank] = x.dims[k];
            a->red_xstrides[a->red_rank++] = x.strides[k];
            a->n_red *= x.dims[k];
        } else {
            if (a->out_rank >= IG_EW_MAX_RANK)
                return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "too many kept dims");
            a->out_dims[a->out_rank] = x.dims[k];
            a->out_xstrides[a->out_rank++] = x.strides[k];
            a->n_out *= x.dims[k];
        }
    }
    if (a->n_red == 0 && kind != IG_RED_SUM && kind != IG_RED_MEAN)
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "reduction over an empty axis");
    int64_t od[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, yv, od);
    ingot_dtype ydt = ig__lw_dev_dtype(L->p, ig__lw_val(L, yv)->dtype);
    int32_t yt = ig__lw_dense(L, ydt, orank, od, false);
    if (yt < 0) return ig__lw_oom(L);
    a->y_dtype = ydt;
    s->u.reduce.x = xt;
    s->u.reduce.y = yt;
    L->p->val_tensor[yv] = yt;
    return INGOT_OK;
}

const char *ig__lw_supports_reduce(const ig_graph *g, const ig_node *n)
{
    bool arg = n->op == IG_OP_arg_max || n->op == IG_OP_arg_min;
    if (!arg && n->n_inputs > 1 && n->inputs[1] >= 0 && !(g->values[n->inputs[1]].flags & IG_VAL_CONST))
        return "axes must be a constant";
    int k = rdx_kind(n);
    ingot_dtype t = g->values[n->inputs[0]].dtype;
    if (k > IG_RDX_MIN && !ingot_cuda_reduction_supported(t == INGOT_DTYPE_FLOAT ? INGOT_DTYPE_FLOAT16 : t, k))
        return "this reduction of this element type"; /* no general kernel for the kinds after Min */
    return NULL;
}

ingot_status ig__lw_reduce(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t xt = ig__lw_get(L, n->inputs[0]);
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    int32_t rank = ig__lw_T(L, xt)->rank;
    bool red[IG_MAX_RANK] = {false};
    int kind;
    switch (n->op) {
    case IG_OP_global_average_pool:
    case IG_OP_global_max_pool:
        for (int32_t k = 2; k < rank; k++) red[k] = true;
        return emit_reduce(L, id, xt, red, n->op == IG_OP_global_max_pool ? IG_RED_MAX : IG_RED_MEAN, n->outputs[0], 0);
    case IG_OP_arg_max:
    case IG_OP_arg_min:
        red[ig__lw_norm_axis(ig__attr_int(n, "axis", 0), rank)] = true;
        return emit_reduce(L, id, xt, red, n->op == IG_OP_arg_max ? IG_RED_ARGMAX : IG_RED_ARGMIN, n->outputs[0],
                           (int)ig__attr_int(n, "select_last_index", 0));
    case IG_OP_reduce_mean: kind = IG_RED_MEAN; break;
    case IG_OP_reduce_sum: kind = IG_RED_SUM; break;
    case IG_OP_reduce_max: kind = IG_RED_MAX; break;
    default: kind = IG_RED_MIN; break;
    }
    int64_t axes[IG_MAX_RANK];
    int32_t na = 0;
    const int64_t *aa = NULL;
    int64_t naa = 0;
    bool axes_as_input = (n->op == IG_OP_reduce_sum && n->opset >= 13) || n->opset >= 18;
    if (axes_as_input) {
        int32_t av = ig__lw_in(L, id, 1);
        if (av >= 0 && !ig__lw_const_ints(L, av, axes, IG_MAX_RANK, &na))
            return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "axes must be a constant");
    } else if (ig__attr_ints(n, "axes", &aa, &naa)) {
        for (int64_t i = 0; i < naa && i < IG_MAX_RANK; i++) axes[na++] = aa[i];
    }
    if (na == 0) {
        if (ig__attr_int(n, "noop_with_empty_axes", 0)) {
            L->p->val_tensor[n->outputs[0]] = xt;
            return INGOT_OK;
        }
        for (int32_t k = 0; k < rank; k++) red[k] = true;
    }
    for (int32_t i = 0; i < na; i++) red[ig__lw_norm_axis(axes[i], rank)] = true;
    return emit_reduce(L, id, xt, red, kind, n->outputs[0], 0);
}

/* ---- instance and group normalisation --------------------------------------------------------------- */

/* A parameter vector as the kernel reads it: a constant in fp32, else the tensor's dense device copy. */
static int32_t norm_param(ig_lower *L, int32_t id, int32_t v)
{
    if (v < 0) return -1;
    return ig__lw_is_const(L, v) ? ig__lw_const(L, v, INGOT_DTYPE_FLOAT, 1.f) : ig__lw_contig(L, id, ig__lw_get(L, v));
}

const char *ig__lw_supports_groupnorm(const ig_graph *g, const ig_node *n)
{
    ingot_dtype t = g->values[n->inputs[0]].dtype;
    if (t != INGOT_DTYPE_FLOAT && t != INGOT_DTYPE_FLOAT16 && t != INGOT_DTYPE_BFLOAT16)
        return "only fp32/fp16/bf16 inputs";
    if (g->values[n->inputs[0]].shape.rank < 2) return "input of rank < 2";
    for (int i = 1; i < n->n_inputs && i < 3; i++)
        if (n->inputs[i] >= 0 && g->values[n->inputs[i]].dtype != t && !(g->values[n->inputs[i]].flags & IG_VAL_CONST))
            return "scale and bias of another type than the input";
    return NULL;
}

/* InstanceNormalization (groups = channels), GroupNormalization (attribute num_groups; scale and bias
 * per group before opset 21, per channel from 21) and ingot.GroupNorm (per channel). */
ingot_status ig__lw_groupnorm(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    const char *why = ig__lw_supports_groupnorm(L->g, n);
    if (why) return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "%s", why);
    int32_t xt = ig__lw_get(L, n->inputs[0]);
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    bool cl = ig__lw_nhwc(ig__lw_T(L, xt)) && !ig__cu_tensor_contig(ig__lw_T(L, xt));
    if (!cl && (xt = ig__lw_contig(L, id, xt)) < 0) return ig__lw_status(L);
    ig_cu_tensor x = *ig__lw_T(L, xt);
    ig_groupnorm_args a;
    memset(&a, 0, sizeof a);
    a.dtype = x.dtype;
    a.cl = cl;
    a.n = x.dims[0];
    a.c = x.dims[1];
    a.s = 1;
    for (int32_t k = 2; k < x.rank; k++) a.s *= x.dims[k];
    bool grouped = n->op == IG_OP_group_normalization || n->op == IG_OP_group_norm;
    a.groups = grouped ? ig__attr_int(n, "num_groups", 1) : a.c;
    a.eps = ig__attr_float(n, "epsilon", 1e-5f);
    if (a.groups <= 0 || a.c % a.groups)
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_INVALID, "%lld channels in %lld groups", (long long)a.c,
                           (long long)a.groups);
    int32_t st = norm_param(L, id, ig__lw_in(L, id, 1)), bt = norm_param(L, id, ig__lw_in(L, id, 2));
    if ((ig__lw_in(L, id, 1) >= 0 && st < 0) || (ig__lw_in(L, id, 2) >= 0 && bt < 0)) return ig__lw_status(L);
    a.per_group = n->op == IG_OP_group_normalization && n->opset < 21;
    int32_t pv[2] = {st, bt};
    for (int i = 0; i < 2; i++)
        if (pv[i] >= 0 && (int64_t)ig__cu_tensor_numel(ig__lw_T(L, pv[i])) != (a.per_group ? a.groups : a.c))
            return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "scale and bias must have one value per %s",
                               a.per_group ? "group" : "channel");
    a.wdtype = st >= 0 ? ig__lw_T(L, st)->dtype : bt >= 0 ? ig__lw_T(L, bt)->dtype : INGOT_DTYPE_FLOAT;
    if (st >= 0 && bt >= 0 && ig__lw_T(L, st)->dtype != ig__lw_T(L, bt)->dtype)
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "scale and bias of different types");
    int64_t pn = (int64_t)((ingot_cuda_groupnorm_plan(&a) + 3) / 4);
    int32_t yt = ig__lw_dense(L, x.dtype, x.rank, x.dims, cl);
    int32_t pt = yt >= 0
                     ? ig__lw_tensor(L, ig__lw_buf(L, IG_LOC_ARENA, (size_t)pn * 4), INGOT_DTYPE_FLOAT, 1, &pn, NULL, 0)
                     : -1;
    ig_cu_step *s = pt >= 0 ? ig__lw_kstep(L, IG_ST_GROUPNORM, id, 5, (int32_t[]){xt, yt, pt, st, bt}) : NULL;
    if (!s) return ig__lw_oom(L);
    s->u.k.a.gn = a;
    L->p->val_tensor[n->outputs[0]] = yt;
    return INGOT_OK;
}

/* ---- LpNormalization, MeanVarianceNormalization: reductions and programs ----------------------------- */

static const char *sup_float_storage(const ig_graph *g, const ig_node *n)
{
    ingot_dtype t = g->values[n->inputs[0]].dtype;
    if (t != INGOT_DTYPE_FLOAT && t != INGOT_DTYPE_FLOAT16 && t != INGOT_DTYPE_BFLOAT16)
        return "only fp32/fp16/bf16 inputs";
    return NULL;
}

const char *ig__lw_supports_lp_norm(const ig_graph *g, const ig_node *n)
{
    int64_t p = ig__attr_int(n, "p", 2);
    if (p != 1 && p != 2) return "p other than 1 or 2";
    return sup_float_storage(g, n);
}

/* An empty input: the output is an empty copy (the reductions refuse empty axes). */
static ingot_status empty_copy(ig_lower *L, int32_t id, int32_t xt)
{
    int32_t yt = ig__lw_materialize(L, id, xt, false, "empty");
    if (yt < 0) return ig__lw_status(L);
    L->p->val_tensor[ig__lw_node(L, id)->outputs[0]] = yt;
    return INGOT_OK;
}

static int32_t out_program(ig_lower *L, int32_t id, const ig_pw_prog *prog, const int32_t *in)
{
    int32_t yv = ig__lw_node(L, id)->outputs[0];
    int64_t od[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, yv, od);
    return ig__lw_program(L, id, prog, in, ig__lw_dev_dtype(L->p, ig__lw_val(L, yv)->dtype), od, orank, -1);
}

/* y = x / ||x||_p along the axis, 0 where the norm is 0 (src/ops/norm_more.c): the norms by the reduction
 * kernel (fp32 sums), then one program. */
ingot_status ig__lw_lp_norm(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t xt = ig__lw_get(L, n->inputs[0]);
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    const ig_cu_tensor x = *ig__lw_T(L, xt);
    if (ig__cu_tensor_numel(&x) == 0) return empty_copy(L, id, xt);
    int32_t ax = ig__lw_norm_axis(ig__attr_int(n, "axis", -1), x.rank);
    if (ax < 0 || ax >= x.rank) return ig__lw_fail(L, id, INGOT_ERR_MODEL_INVALID, "axis out of range");
    bool red[IG_MAX_RANK] = {false};
    red[ax] = true;
    int32_t in[2] = {xt, reduce_keep(L, id, xt, red, ig__attr_int(n, "p", 2) == 1 ? IG_RDX_L1 : IG_RDX_L2)};
    if (in[1] < 0) return ig__lw_status(L);
    ig_pw_prog prog = {.n_in = 2, .n_ops = 3};
    prog.op[0] = (ig_pw_inst){.code = IG_PW_DIV, .a = 0, .b = 1, .c = IG_PW_NONE};              /* 2: x / norm */
    prog.op[1] = (ig_pw_inst){.code = IG_PW_EQ, .a = 1, .b = IG_PW_K, .c = IG_PW_NONE, .k = 0}; /* 3: norm == 0 */
    prog.op[2] = (ig_pw_inst){.code = IG_PW_WHERE, .a = 3, .b = IG_PW_K, .c = 2, .k = 0};
    int32_t yt = out_program(L, id, &prog, in);
    if (yt < 0) return ig__lw_status(L);
    L->p->val_tensor[n->outputs[0]] = yt;
    return INGOT_OK;
}

const char *ig__lw_supports_mvn(const ig_graph *g, const ig_node *n) { return sup_float_storage(g, n); }

/* y = (x - mean) / (sqrt(var) + 1e-9) over the groups of attribute 'axes' (default [0, 2, 3]), var the mean
 * of the squared deviations, as src/ops/norm_more.c. The statistics are of x shifted by each group's first
 * element (a view, no copy) in fp32, so a constant group gives exactly 0 as on the CPU: s = x - x0, the
 * mean m of s, d = s - m, q = sum of d^2, y = d / (sqrt(q / count) + 1e-9). */
ingot_status ig__lw_mvn(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t xt = ig__lw_get(L, n->inputs[0]);
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    const ig_cu_tensor x = *ig__lw_T(L, xt);
    if (ig__cu_tensor_numel(&x) == 0) return empty_copy(L, id, xt);
    static const int64_t def[3] = {0, 2, 3};
    const int64_t *axes = def;
    int64_t na = 3;
    if (!ig__attr_ints(n, "axes", &axes, &na)) axes = def, na = 3;
    bool red[IG_MAX_RANK] = {false};
    for (int64_t i = 0; i < na; i++) {
        int32_t a = ig__lw_norm_axis(axes[i], x.rank);
        if (a < 0 || a >= x.rank)
            return ig__lw_fail(L, id, INGOT_ERR_MODEL_INVALID, "axis %lld is out of range for rank %d",
                               (long long)axes[i], (int)x.rank);
        red[a] = true;
    }
    int64_t d0[IG_MAX_RANK], count = 1;
    for (int32_t k = 0; k < x.rank; k++) {
        d0[k] = red[k] ? 1 : x.dims[k];
        count *= red[k] ? x.dims[k] : 1;
    }
    int32_t x0 = ig__lw_tensor(L, x.buf, x.dtype, x.rank, d0, x.strides, x.offset);
    if (x0 < 0) return ig__lw_oom(L);
    ig_pw_prog sub = {.n_in = 2, .n_ops = 1};
    sub.op[0] = (ig_pw_inst){.code = IG_PW_SUB, .a = 0, .b = 1, .c = IG_PW_NONE};
    int32_t in[2] = {xt, x0};
    int32_t sh = ig__lw_program(L, id, &sub, in, INGOT_DTYPE_FLOAT, x.dims, x.rank, -1);
    int32_t mt = sh >= 0 ? reduce_keep(L, id, sh, red, IG_RDX_MEAN) : -1;
    in[0] = sh, in[1] = mt;
    int32_t dt = mt >= 0 ? ig__lw_program(L, id, &sub, in, INGOT_DTYPE_FLOAT, x.dims, x.rank, -1) : -1;
    int32_t qt = dt >= 0 ? reduce_keep(L, id, dt, red, IG_RDX_SUMSQ) : -1;
    if (qt < 0) return ig__lw_status(L);
    ig_pw_prog prog = {.n_in = 2, .n_ops = 4};
    prog.op[0] = (ig_pw_inst){.code = IG_PW_DIV, .a = 1, .b = IG_PW_K, .c = IG_PW_NONE, .k = (float)count}; /* 2 */
    prog.op[1] = (ig_pw_inst){.code = IG_PW_SQRT, .a = 2, .b = IG_PW_NONE, .c = IG_PW_NONE};                /* 3 */
    prog.op[2] = (ig_pw_inst){.code = IG_PW_ADD, .a = 3, .b = IG_PW_K, .c = IG_PW_NONE, .k = 1e-9f};        /* 4 */
    prog.op[3] = (ig_pw_inst){.code = IG_PW_DIV, .a = 0, .b = 4, .c = IG_PW_NONE};
    in[0] = dt, in[1] = qt;
    int32_t yt = out_program(L, id, &prog, in);
    if (yt < 0) return ig__lw_status(L);
    L->p->val_tensor[n->outputs[0]] = yt;
    return INGOT_OK;
}
