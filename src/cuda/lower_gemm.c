/*
 * lower_gemm.c -- MatMul, Gemm and ingot.FusedMatMul as cuBLASLt GEMMs. The operands are strided views
 * (a transposed operand is a column-major matrix, batch dims are strides, a weight shared by every
 * batch folds the batch into M); one copy is made only for an operand no GEMM layout reads. The
 * epilogue program runs in cuBLASLt's epilogue when it is one of what cuBLASLt computes -- bias,
 * residual (C with beta 1, also read in A's memory row order), Relu, GELU (the tanh form; fp16, when
 * allowed) -- and as one elementwise step after the GEMM otherwise.
 */
#include "lower_internal.h"

#include <inttypes.h>

typedef struct mat {
    int32_t rank;
    int64_t dims[IG_MAX_RANK], strides[IG_MAX_RANK];
} mat;

static mat mat_of(const ig_cu_tensor *t)
{
    mat m;
    m.rank = t->rank;
    for (int32_t k = 0; k < t->rank; k++) {
        m.dims[k] = t->dims[k];
        m.strides[k] = t->strides[k];
    }
    return m;
}

/* rows x cols matrix at the end of m: row-major (ld = row stride) or column-major (trans). */
static bool mat_layout(const mat *m, int64_t *ld, int32_t *trans)
{
    int64_t r = m->dims[m->rank - 2], c = m->dims[m->rank - 1];
    int64_t sr = m->strides[m->rank - 2], sc = m->strides[m->rank - 1];
    if ((c == 1 || sc == 1) && (r == 1 || sr >= c)) {
        *trans = 0;
        *ld = r == 1 ? c : sr;
        if (*ld < c) *ld = c;
        return true;
    }
    if ((r == 1 || sr == 1) && (c == 1 || sc >= r)) {
        *trans = 1;
        *ld = c == 1 ? r : sc;
        if (*ld < r) *ld = r;
        return true;
    }
    return false;
}

/* Batch dims of a, b, d (all brought to the output's batch rank nb): one stride each, or fold the batch
 * into M when b is shared. Returns 0 ok, 1: copy a, 2: copy b. */
static int gemm_batch(const mat *a, const mat *b, const mat *d, int32_t nb, ig_cu_gemm *g)
{
    int64_t bd[IG_MAX_RANK], sa[IG_MAX_RANK], sb[IG_MAX_RANK], sd[IG_MAX_RANK];
    int32_t n = 0;
    for (int32_t k = 0; k < nb; k++) {
        int64_t dd = d->dims[k];
        int32_t ka = k - (nb - (a->rank - 2)), kb = k - (nb - (b->rank - 2));
        int64_t as = ka >= 0 && a->dims[ka] != 1 ? a->strides[ka] : 0;
        int64_t bs = kb >= 0 && b->dims[kb] != 1 ? b->strides[kb] : 0;
        if (dd == 1) continue;
        if (n > 0 && sd[n - 1] == d->strides[k] * dd && sa[n - 1] == as * dd && sb[n - 1] == bs * dd) {
            bd[n - 1] *= dd;
            sa[n - 1] = as;
            sb[n - 1] = bs;
            sd[n - 1] = d->strides[k];
            continue;
        }
        bd[n] = dd;
        sa[n] = as;
        sb[n] = bs;
        sd[n] = d->strides[k];
        n++;
    }
    g->batch = 1;
    g->sa = g->sb = g->sd = 0;
    if (n == 0) return 0;
    /* b shared by every batch (a weight): fold the batch into M when a's rows run evenly through it --
     * one large GEMM instead of a batch of small ones */
    bool b_shared = true;
    for (int32_t k = 0; k < n; k++)
        if (sb[k] != 0) b_shared = false;
    if (b_shared && !g->a_trans) {
        bool ok = true;
        for (int32_t k = 0; k < n && ok; k++) {
            int64_t inner_a = k + 1 < n ? sa[k + 1] * bd[k + 1] : g->lda * g->m;
            int64_t inner_d = k + 1 < n ? sd[k + 1] * bd[k + 1] : g->ldd * g->m;
            ok = sa[k] == inner_a && sd[k] == inner_d;
        }
        if (ok) {
            for (int32_t k = 0; k < n; k++) g->m *= bd[k];
            return 0;
        }
    }
    if (n == 1) {
        g->batch = bd[0];
        g->sa = sa[0];
        g->sb = sb[0];
        g->sd = sd[0];
        return 0;
    }
    /* several batch dims not foldable into M: copy the operand whose batch dims do not run evenly (d is
     * dense: it always does) */
    bool a_even = true;
    for (int32_t k = 1; k < n; k++)
        if (sa[k - 1] != sa[k] * bd[k]) a_even = false;
    return a_even ? 2 : 1;
}

/* A dense copy of GEMM operand t that keeps its contiguous axis: row-major when its last dim is the
 * contiguous one, else column-major (a dense buffer of the transposed dims, seen through a transposed
 * view), so the copy reads and writes along the same axis and cuBLASLt takes the transpose. */
static int32_t materialize_matrix(ig_lower *L, int32_t node_id, int32_t t)
{
    ig_cu_tensor x = *ig__lw_T(L, t);
    int32_t r = x.rank;
    if (r < 2 || x.strides[r - 1] == 1 || x.strides[r - 2] != 1)
        return ig__lw_materialize(L, node_id, t, false, "GEMM operand copy");
    int64_t dd[IG_MAX_RANK];
    for (int32_t k = 0; k < r; k++) dd[k] = x.dims[k];
    dd[r - 1] = x.dims[r - 2];
    dd[r - 2] = x.dims[r - 1];
    int32_t d = ig__lw_dense(L, x.dtype, r, dd, false);
    int32_t v = d >= 0 ? ig__lw_transpose_last2(L, d) : -1;
    if (v < 0) return -1;
    if (ig__lw_copy(L, node_id, "GEMM operand copy", t, v, 0) != INGOT_OK) return -2;
    return v;
}

/* What a GEMM node asks for, whichever op it is. */
typedef struct gemm_node {
    int32_t av, bv;
    bool trans_a, trans_b;
    float alpha;
    int32_t bias_v;   /* constant bias vector [N] (or -1) ... */
    float bias_scale; /* ... times this (Gemm's beta) */
    int32_t bias_t;   /* or a bias tensor the epilogue step adds (-1) */
    ig_pw_prog epi;
    int32_t extra_v[IG_PW_MAX_IN];
} gemm_node;

static bool is_bias_vector(ig_lower *L, int32_t v, int64_t N)
{
    const ig_value *x = ig__lw_val(L, v);
    int64_t numel = 1;
    for (int32_t k = 0; k < x->shape.rank; k++) numel *= x->shape.d[k].n;
    return ig__lw_is_const(L, v) && x->shape.rank >= 1 && x->shape.d[x->shape.rank - 1].n == N && numel == N;
}

static ingot_status read_node(ig_lower *L, int32_t id, gemm_node *q)
{
    const ig_node *n = ig__lw_node(L, id);
    const ig_value *y = ig__lw_val(L, n->outputs[0]);
    int64_t N = y->shape.rank ? y->shape.d[y->shape.rank - 1].n : 1;
    memset(q, 0, sizeof *q);
    q->av = n->inputs[0];
    q->bv = n->inputs[1];
    q->alpha = 1.f;
    q->bias_v = q->bias_t = -1;
    q->bias_scale = 1.f;
    q->epi.n_in = 1;
    int32_t cv = ig__lw_in(L, id, 2);
    if (n->op == IG_OP_gemm) {
        q->trans_a = ig__attr_int(n, "transA", 0) != 0;
        q->trans_b = ig__attr_int(n, "transB", 0) != 0;
        q->alpha = ig__attr_float(n, "alpha", 1.f);
        float beta = ig__attr_float(n, "beta", 1.f);
        if (cv >= 0 && is_bias_vector(L, cv, N)) {
            q->bias_v = cv;
            q->bias_scale = beta;
        } else if (cv >= 0) { /* C of the output's shape (or broadcasting to it): beta * C in the epilogue */
            q->epi.n_in = 2;
            q->extra_v[0] = cv;
            q->epi.op[q->epi.n_ops++] = (ig_pw_inst){.code = IG_PW_MUL, .a = 1, .b = -2, .c = -1, .k = beta};
            q->epi.op[q->epi.n_ops++] = (ig_pw_inst){.code = IG_PW_ADD, .a = 0, .b = 2, .c = -1};
            if (beta == 1.f) {
                q->epi.n_ops = 1;
                q->epi.op[0] = (ig_pw_inst){.code = IG_PW_ADD, .a = 0, .b = 1, .c = -1};
            }
        }
        return INGOT_OK;
    }
    if (n->op == IG_OP_fused_matmul) {
        q->trans_a = ig__attr_int(n, "trans_a", 0) != 0;
        q->trans_b = ig__attr_int(n, "trans_b", 0) != 0;
        q->alpha = ig__attr_float(n, "alpha", 1.f);
        if (cv >= 0 && is_bias_vector(L, cv, N)) {
            q->bias_v = cv;
        } else if (cv >= 0) {
            if ((q->bias_t = ig__lw_get(L, cv)) < 0)
                return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "the bias has no device tensor");
        }
        int32_t n_extra = n->n_inputs > 3 ? n->n_inputs - 3 : 0;
        for (int32_t j = 0; j < n_extra; j++) q->extra_v[j] = n->inputs[3 + j];
        return ig__pw_decode(L->g, n, "epilogue_", 1 + n_extra, &q->epi, L->err);
    }
    return INGOT_OK;
}

/* The residual as cuBLASLt's C: the output's shape, its dtype, dense in the GEMM's row order (ro: A's
 * rows in memory order, which C must share). -1 when it cannot be read so. */
static int32_t residual_c(ig_lower *L, int32_t cv, int32_t yv, ingot_dtype dt, const ig_row_order *ro)
{
    if (ig__lw_is_const(L, cv) || !ig__lw_same_shape(L, cv, yv)) return -1;
    if (ro) {
        ig_row_order rc;
        int32_t c = ig__lw_rows_in_memory_order(L, cv, &rc);
        if (c < 0 || !ig__lw_same_row_order(ro, &rc) || ig__lw_T(L, c)->dtype != dt ||
            ig__lw_T(L, c)->strides[0] != ig__lw_T(L, c)->dims[1])
            return -1;
        return c;
    }
    int32_t c = ig__lw_get(L, cv);
    if (c < 0 || !ig__cu_tensor_contig(ig__lw_T(L, c)) || ig__lw_T(L, c)->dtype != dt) return -1;
    return c;
}

int32_t ig__lw_gemm(ig_lower *L, int32_t id, int32_t at, int32_t bt, ig_cu_gemm *gp, bool mem_order,
                    const int64_t *out_dims, int32_t out_rank)
{
    ig_cu_gemm g = *gp;
    ingot_dtype dt = ig__lw_T(L, bt)->dtype;
    /* operands: 1-D promotion, batch broadcast, layouts */
    bool found = false;
    for (int attempt = 0; attempt < 3 && !found; attempt++) {
        int32_t a2 = at, b2 = bt;
        if (ig__lw_T(L, a2)->rank == 1) a2 = ig__lw_unsqueeze_view(L, a2, 0);
        if (ig__lw_T(L, b2)->rank == 1) b2 = ig__lw_unsqueeze_view(L, b2, 1);
        if (a2 < 0 || b2 < 0) return -1;
        mat A = mat_of(ig__lw_T(L, a2)), B = mat_of(ig__lw_T(L, b2));
        g.m = A.dims[A.rank - 2];
        g.k = A.dims[A.rank - 1];
        g.n = B.dims[B.rank - 1];
        if (B.dims[B.rank - 2] != g.k) {
            ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "inner dims %" PRId64 " and %" PRId64 " differ", g.k,
                        B.dims[B.rank - 2]);
            return -1;
        }
        bool oka = mat_layout(&A, &g.lda, &g.a_trans), okb = mat_layout(&B, &g.ldb, &g.b_trans);
        if (!oka || !okb) {
            if (!oka) at = materialize_matrix(L, id, at);
            if (!okb) bt = materialize_matrix(L, id, bt);
            if (at < 0 || bt < 0) return -1;
            continue;
        }
        /* D: dense [batch..., M, N] */
        int32_t nb = A.rank - 2 > B.rank - 2 ? A.rank - 2 : B.rank - 2;
        mat D;
        D.rank = nb + 2;
        for (int32_t k = 0; k < nb; k++) {
            int32_t ka = k - (nb - (A.rank - 2)), kb = k - (nb - (B.rank - 2));
            int64_t da = ka >= 0 ? A.dims[ka] : 1, db = kb >= 0 ? B.dims[kb] : 1;
            D.dims[k] = da > db ? da : db;
        }
        D.dims[nb] = g.m;
        D.dims[nb + 1] = g.n;
        ig__lw_contig_strides(D.rank, D.dims, D.strides);
        g.ldd = g.n;
        int r = gemm_batch(&A, &B, &D, nb, &g);
        if (r == 1 && (at = materialize_matrix(L, id, at)) < 0) return -1;
        if (r == 2 && (bt = materialize_matrix(L, id, bt)) < 0) return -1;
        if (r) continue;
        g.a = a2;
        g.b = b2;
        found = true;
    }
    if (!found) {
        ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "no GEMM layout found for the operands' strides");
        return -1;
    }
    g.ldc = g.ldd;
    g.sc = g.sd;
    int64_t md[2] = {g.m, g.n};
    int32_t d = mem_order ? ig__lw_dense(L, dt, 2, md, false) : ig__lw_dense(L, dt, out_rank, out_dims, false);
    if (d < 0) return -1;
    g.d = d;
    ig_cu_step *s = ig__lw_step(L, IG_ST_GEMM, id, NULL);
    if (!s) return -1;
    s->u.gemm = g;
    return d;
}

ingot_status ig__lw_matmul(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t yv = n->outputs[0];
    gemm_node q;
    ingot_status st = read_node(L, id, &q);
    if (st != INGOT_OK) return st;
    int32_t bt = ig__lw_get(L, q.bv);
    if (bt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "operand B has no device tensor");
    ingot_dtype dt = ig__lw_T(L, bt)->dtype;
    int kind = ig__lw_epi_kind(&q.epi);
    bool gelu_ok = L->o->gelu_epilogue && L->p->fdt == INGOT_DTYPE_FLOAT16;
    bool lib_epi = kind == IG_LW_EPI_NONE || kind == IG_LW_EPI_RELU || (kind == IG_LW_EPI_GELU && gelu_ok) ||
                   kind == IG_LW_EPI_RES || kind == IG_LW_EPI_RES_RELU;
    lib_epi = lib_epi && q.bias_t < 0;

    /* A: rows in memory order when it is such a lazy value, B a plain matrix, and the epilogue (if any)
     * runs inside the GEMM */
    ig_row_order ro_s;
    const ig_row_order *ro = NULL;
    int32_t at = -1;
    if (!q.trans_a && ig__lw_T(L, bt)->rank == 2 && lib_epi) {
        at = ig__lw_rows_in_memory_order(L, q.av, &ro_s);
        if (at >= 0) ro = &ro_s;
    }
    if (at < 0) at = ig__lw_get(L, q.av);
    if (at < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "operand A has no device tensor");
    if (ig__lw_T(L, at)->dtype != dt || !ig__dtype_is_float(dt) || dt == INGOT_DTYPE_DOUBLE)
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "operands of types %s and %s",
                           ingot_dtype_name(ig__lw_T(L, at)->dtype), ingot_dtype_name(dt));
    int32_t ct = -1;
    if (lib_epi && (kind == IG_LW_EPI_RES || kind == IG_LW_EPI_RES_RELU)) {
        ct = residual_c(L, q.extra_v[0], yv, dt, ro);
        if (ct < 0 && L->err->status) return L->err->status;
        if (ct < 0) {
            lib_epi = false;
            if (ro) { /* the epilogue step reads the output in logical order: A too */
                ro = NULL;
                if ((at = ig__lw_get(L, q.av)) < 0) return ig__lw_status(L);
            }
        }
    }
    if (q.trans_a && (at = ig__lw_transpose_last2(L, at)) < 0) return ig__lw_oom(L);
    if (q.trans_b && (bt = ig__lw_transpose_last2(L, bt)) < 0) return ig__lw_oom(L);

    ig_cu_gemm g;
    memset(&g, 0, sizeof g);
    g.alpha = q.alpha;
    g.scratch = -1;
    g.bias = -1;
    g.c = -1;
    if (q.bias_v >= 0 && (g.bias = ig__lw_const(L, q.bias_v, dt, q.bias_scale)) < 0) return ig__lw_oom(L);
    if (lib_epi) {
        g.epi = kind == IG_LW_EPI_RELU || kind == IG_LW_EPI_RES_RELU ? IG_EPI_RELU
                : kind == IG_LW_EPI_GELU                             ? IG_EPI_GELU
                                                                     : IG_EPI_NONE;
        g.c = ct;
        g.beta = ct >= 0 ? 1.f : 0.f;
    }

    int64_t od[IG_MAX_RANK];
    int32_t orank = ro ? 2 : ig__lw_value_dims(L, yv, od);
    int32_t d = ig__lw_gemm(L, id, at, bt, &g, ro != NULL, od, orank);
    if (d < 0) return ig__lw_status(L);
    if (ro) return ig__lw_set_rows_permuted(L, id, yv, d, ro);
    if (!lib_epi) {
        int32_t extras[IG_PW_MAX_IN];
        for (int32_t j = 0; j + 1 < q.epi.n_in; j++)
            if ((extras[j] = ig__lw_get(L, q.extra_v[j])) < 0)
                return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "epilogue input %d has no device tensor", (int)j + 1);
        if ((d = ig__lw_epilogue(L, id, &q.epi, d, q.bias_t, extras, dt, od, orank, yv)) < 0) return ig__lw_status(L);
    }
    L->p->val_tensor[yv] = d;
    return INGOT_OK;
}

const char *ig__lw_supports_matmul(const ig_graph *g, const ig_node *n)
{
    ingot_dtype a = g->values[n->inputs[0]].dtype, b = g->values[n->inputs[1]].dtype;
    if (a != b || !ig__dtype_is_float(a) || a == INGOT_DTYPE_DOUBLE) return "only fp32/fp16 matrix products";
    return NULL;
}
