/*
 * lower_views.c -- ops that only reinterpret or select (Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
 * Slice, Split, Expand, Identity, Dropout) make a new strided view of their input and no step. A consumer
 * that needs a particular layout gets a copy only when the view it is handed does not fit.
 *
 * A Reshape that no strided view expresses (split heads of a packed QKV projection) stays lazy -- a
 * finer view, regrouped -- through further Reshapes and Transposes, and is copied only for a consumer
 * that needs it as a tensor (usually a later Reshape makes it a plain view again). A GEMM whose A (and
 * C) are lazy with the same rows permuted over one dense run of memory runs over those rows in memory
 * order (ig__lw_rows_in_memory_order), so ViT's way from [S*B, E] back to [B, S, E] costs nothing.
 */
#include "lower_internal.h"

/* Strides for viewing (dims, strides) as new_dims without moving data, or false (PyTorch's rule). */
static bool view_strides(int32_t rank, const int64_t *dims, const int64_t *strides, int32_t nrank, const int64_t *ndims,
                         int64_t *nstrides)
{
    size_t numel = ig__lw_numel(rank, dims);
    if (numel == 0 || rank == 0) {
        ig__lw_contig_strides(nrank, ndims, nstrides);
        return true;
    }
    int32_t view_d = nrank - 1;
    int64_t chunk_base = strides[rank - 1];
    int64_t tensor_numel = 1, view_numel = 1;
    for (int32_t td = rank - 1; td >= 0; td--) {
        tensor_numel *= dims[td];
        if (td == 0 || (dims[td - 1] != 1 && strides[td - 1] != tensor_numel * chunk_base)) {
            while (view_d >= 0 && (view_numel < tensor_numel || ndims[view_d] == 1)) {
                nstrides[view_d] = view_numel * chunk_base;
                view_numel *= ndims[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (td > 0) {
                chunk_base = strides[td - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

/* The one contiguous copy of lazy value v: the fine view copied into a dense buffer seen with the fine
 * dims (same row-major order, so it is the logical tensor's dense layout). */
int32_t ig__lw_materialize_lazy(ig_lower *L, int32_t v)
{
    const ig_lazy *z = L->lazy[v];
    const ig_cu_tensor f = *ig__lw_T(L, z->fine);
    int64_t dims[IG_MAX_RANK];
    int32_t rank = ig__lw_value_dims(L, v, dims);
    int32_t d = ig__lw_dense(L, f.dtype, rank, dims, false);
    int32_t fd = d >= 0 ? ig__lw_tensor(L, ig__lw_T(L, d)->buf, f.dtype, f.rank, f.dims, NULL, 0) : -1;
    if (fd < 0 || ig__lw_copy(L, z->node, "contiguous copy", z->fine, fd, 0) != INGOT_OK) return -1;
    L->p->val_tensor[v] = d;
    return d;
}

/* Can get() copy the fine view f: at most IG_EW_MAX_RANK runs of dims that merge? */
static bool copyable(const ig_cu_tensor *f)
{
    int32_t runs = f->rank > 0;
    for (int32_t q = 1; q < f->rank; q++) runs += f->strides[q - 1] != f->strides[q] * f->dims[q];
    return runs <= IG_EW_MAX_RANK;
}

/* Value ov (nr dims) as the row-major grouping n[] of the fine view f: a plain view when every group
 * merges into one strided dim, else a lazy value. */
static ingot_status set_grouped(ig_lower *L, int32_t node_id, int32_t ov, const ig_cu_tensor *f, const int8_t *n,
                                int32_t nr)
{
    int64_t nd[IG_MAX_RANK], ns[IG_MAX_RANK];
    bool plain = true;
    for (int32_t j = nr - 1, q = f->rank - 1; j >= 0; j--) {
        nd[j] = 1;
        ns[j] = j == nr - 1 ? 1 : ns[j + 1] * nd[j + 1]; /* a dim of size 1: any stride does */
        for (int c = 0; c < n[j]; c++, q--) {
            if (c == 0)
                ns[j] = f->strides[q];
            else if (f->strides[q] != ns[j] * nd[j])
                plain = false;
            nd[j] *= f->dims[q];
        }
    }
    if (plain) {
        int32_t t = ig__lw_tensor(L, f->buf, f->dtype, nr, nd, ns, f->offset);
        if (t < 0) return ig__lw_oom(L);
        L->p->val_tensor[ov] = t;
        return INGOT_OK;
    }
    ig_lazy *z = ig__arena_alloc(&L->p->arena, sizeof *z);
    if (!z) return ig__lw_oom(L);
    z->fine = ig__lw_tensor(L, f->buf, f->dtype, f->rank, f->dims, f->strides, f->offset);
    if (z->fine < 0) return ig__lw_oom(L);
    z->node = node_id;
    z->rank = nr;
    memcpy(z->n, n, (size_t)nr);
    L->lazy[ov] = z;
    return INGOT_OK;
}

/* The coarsest fine view *f of x of which both x's dims and nd[] are row-major groups (a dim of size a*b
 * and stride s splits into (a, b*s), (b, s)), with the group sizes of nd in n[]. False when the two
 * shapes' boundaries do not nest (6 = 2*3 against 3*2), or the fine view is too fine to copy. */
static bool split_fine(const ig_cu_tensor *x, int32_t nr, const int64_t *nd, ig_cu_tensor *f, int8_t *n)
{
    int64_t fd[IG_MAX_RANK], fs[IG_MAX_RANK]; /* innermost first */
    int32_t nf = 0, i = x->rank - 1;
    int64_t rs = 1, cs = 0; /* what is left of source dim i, and its stride */
    for (int32_t j = nr - 1; j >= 0; j--) {
        n[j] = 0;
        for (int64_t rt = nd[j]; rt > 1;) {
            while (rs == 1 && i >= 0) {
                rs = x->dims[i];
                cs = x->strides[i--];
            }
            int64_t take = rs < rt ? rs : rt;
            if (rs == 1 || (rs < rt ? rt % rs : rs % rt) || nf == IG_MAX_RANK) return false;
            fd[nf] = take;
            fs[nf++] = cs;
            n[j]++;
            cs *= take;
            rs /= take;
            rt /= take;
        }
    }
    *f = *x;
    f->rank = nf;
    for (int32_t q = 0; q < nf; q++) {
        f->dims[q] = fd[nf - 1 - q];
        f->strides[q] = fs[nf - 1 - q];
    }
    return copyable(f);
}

ingot_status ig__lw_reshape_view(ig_lower *L, int32_t node_id, int32_t iv, int32_t ov)
{
    ig_lazy *z;
    int32_t t = ig__lw_get_view(L, iv, &z);
    if (t < 0) return ig__lw_fail(L, node_id, INGOT_ERR_INTERNAL, "input has no device tensor");
    int64_t nd[IG_MAX_RANK], ns[IG_MAX_RANK];
    int32_t nr = ig__lw_value_dims(L, ov, nd);
    ig_cu_tensor x = *ig__lw_T(L, t), f;
    int8_t n[IG_MAX_RANK];
    if (!view_strides(x.rank, x.dims, x.strides, nr, nd, ns)) {
        if (split_fine(&x, nr, nd, &f, n)) return set_grouped(L, node_id, ov, &f, n, nr);
        /* no grouping either: a copy (for a lazy input, its one copy) */
        int32_t c = z ? ig__lw_get(L, iv) : ig__lw_materialize(L, node_id, t, false, "contiguous copy");
        if (c < 0) return ig__lw_status(L);
        x = *ig__lw_T(L, c);
        ig__lw_contig_strides(nr, nd, ns);
    }
    int32_t r = ig__lw_tensor(L, x.buf, x.dtype, nr, nd, ns, x.offset);
    if (r < 0) return ig__lw_oom(L);
    L->p->val_tensor[ov] = r;
    return INGOT_OK;
}

ingot_status ig__lw_reshape(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    return ig__lw_reshape_view(L, id, n->inputs[0], n->outputs[0]);
}

ingot_status ig__lw_identity(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    ig_lazy *z;
    int32_t xt = ig__lw_get_view(L, n->inputs[0], &z);
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    if (z)
        L->lazy[n->outputs[0]] = z;
    else
        L->p->val_tensor[n->outputs[0]] = xt;
    return INGOT_OK;
}

int32_t ig__lw_transpose_last2(ig_lower *L, int32_t t)
{
    ig_cu_tensor x = *ig__lw_T(L, t);
    int32_t r = x.rank;
    int64_t d = x.dims[r - 1], s = x.strides[r - 1];
    x.dims[r - 1] = x.dims[r - 2];
    x.strides[r - 1] = x.strides[r - 2];
    x.dims[r - 2] = d;
    x.strides[r - 2] = s;
    return ig__lw_tensor(L, x.buf, x.dtype, r, x.dims, x.strides, x.offset);
}

int32_t ig__lw_unsqueeze_view(ig_lower *L, int32_t t, int32_t at)
{
    ig_cu_tensor x = *ig__lw_T(L, t);
    for (int32_t k = x.rank; k > at; k--) {
        x.dims[k] = x.dims[k - 1];
        x.strides[k] = x.strides[k - 1];
    }
    x.dims[at] = 1;
    x.strides[at] = 0;
    x.rank++;
    return ig__lw_tensor(L, x.buf, x.dtype, x.rank, x.dims, x.strides, x.offset);
}

ingot_status ig__lw_transpose(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    ig_lazy *z;
    int32_t xt = ig__lw_get_view(L, n->inputs[0], &z);
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    ig_cu_tensor x = *ig__lw_T(L, xt), v = x;
    int32_t rank = z ? z->rank : x.rank;
    const int64_t *perm = NULL;
    int64_t np = 0;
    bool have = ig__attr_ints(n, "perm", &perm, &np) && np == rank;
    if (z) { /* a lazy value: its groups of fine dims permuted */
        int32_t first[IG_MAX_RANK], q = 0;
        int8_t gn[IG_MAX_RANK];
        for (int32_t k = 0, f = 0; k < rank; f += z->n[k++]) first[k] = f;
        for (int32_t k = 0; k < rank; k++) {
            int32_t src = have ? (int32_t)perm[k] : rank - 1 - k;
            gn[k] = z->n[src];
            for (int32_t c = 0; c < z->n[src]; c++, q++) {
                v.dims[q] = x.dims[first[src] + c];
                v.strides[q] = x.strides[first[src] + c];
            }
        }
        if (copyable(&v)) return set_grouped(L, z->node, n->outputs[0], &v, gn, rank);
        xt = ig__lw_get(L, n->inputs[0]); /* permuted too finely to copy later: the input's copy, transposed */
        if (xt < 0) return ig__lw_status(L);
        x = v = *ig__lw_T(L, xt);
    }
    for (int32_t k = 0; k < x.rank; k++) {
        int32_t src = have ? (int32_t)perm[k] : x.rank - 1 - k;
        v.dims[k] = x.dims[src];
        v.strides[k] = x.strides[src];
    }
    int32_t t = ig__lw_tensor(L, v.buf, v.dtype, v.rank, v.dims, v.strides, v.offset);
    if (t < 0) return ig__lw_oom(L);
    L->p->val_tensor[n->outputs[0]] = t;
    return INGOT_OK;
}

ingot_status ig__lw_slice(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t xt = ig__lw_get(L, n->inputs[0]);
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    ig_cu_tensor x = *ig__lw_T(L, xt);
    int64_t starts[IG_MAX_RANK], ends[IG_MAX_RANK], axes[IG_MAX_RANK], steps[IG_MAX_RANK];
    int32_t ns = 0, ne = 0, nax = 0, nst = 0;
    if (n->opset < 10) {
        const int64_t *a = NULL;
        int64_t na = 0;
        if (ig__attr_ints(n, "starts", &a, &na))
            for (int64_t i = 0; i < na && i < IG_MAX_RANK; i++) starts[ns++] = a[i];
        if (ig__attr_ints(n, "ends", &a, &na))
            for (int64_t i = 0; i < na && i < IG_MAX_RANK; i++) ends[ne++] = a[i];
        if (ig__attr_ints(n, "axes", &a, &na))
            for (int64_t i = 0; i < na && i < IG_MAX_RANK; i++) axes[nax++] = a[i];
    } else {
        if (!ig__lw_const_ints(L, ig__lw_in(L, id, 1), starts, IG_MAX_RANK, &ns) ||
            !ig__lw_const_ints(L, ig__lw_in(L, id, 2), ends, IG_MAX_RANK, &ne))
            return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "starts/ends must be constants");
        if (ig__lw_in(L, id, 3) >= 0 && !ig__lw_const_ints(L, ig__lw_in(L, id, 3), axes, IG_MAX_RANK, &nax))
            return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "axes must be a constant");
        if (ig__lw_in(L, id, 4) >= 0 && !ig__lw_const_ints(L, ig__lw_in(L, id, 4), steps, IG_MAX_RANK, &nst))
            return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "steps must be a constant");
    }
    if (nax == 0)
        for (int32_t i = 0; i < ns; i++) axes[nax++] = i;
    const ig_value *y = ig__lw_val(L, n->outputs[0]);
    ig_cu_tensor v = x;
    for (int32_t i = 0; i < ns && i < nax; i++) {
        int32_t ax = ig__lw_norm_axis(axes[i], x.rank);
        int64_t step = nst ? steps[i] : 1, dim = x.dims[ax], s = starts[i];
        if (s < 0) s += dim;
        if (step > 0)
            s = s < 0 ? 0 : s > dim ? dim : s;
        else
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
        v.dims[ax] = y->shape.d[ax].n;
        if (v.dims[ax] > 0) v.offset += s * x.strides[ax];
        v.strides[ax] = x.strides[ax] * step;
    }
    int32_t t = ig__lw_tensor(L, v.buf, v.dtype, v.rank, v.dims, v.strides, v.offset);
    if (t < 0) return ig__lw_oom(L);
    L->p->val_tensor[n->outputs[0]] = t;
    return INGOT_OK;
}

ingot_status ig__lw_split(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t xt = ig__lw_get(L, n->inputs[0]);
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    ig_cu_tensor x = *ig__lw_T(L, xt);
    int32_t ax = ig__lw_norm_axis(ig__attr_int(n, "axis", 0), x.rank);
    int64_t off = 0;
    for (int32_t j = 0; j < n->n_outputs; j++) {
        int32_t ov = n->outputs[j];
        if (ov < 0) continue;
        ig_cu_tensor v = x;
        v.dims[ax] = ig__lw_val(L, ov)->shape.d[ax].n;
        v.offset += off * x.strides[ax];
        off += v.dims[ax];
        int32_t t = ig__lw_tensor(L, v.buf, v.dtype, v.rank, v.dims, v.strides, v.offset);
        if (t < 0) return ig__lw_oom(L);
        L->p->val_tensor[ov] = t;
    }
    return INGOT_OK;
}

ingot_status ig__lw_expand(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t xt = ig__lw_get(L, n->inputs[0]);
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    ig_cu_tensor x = *ig__lw_T(L, xt);
    int64_t od[IG_MAX_RANK], os[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, n->outputs[0], od);
    int32_t pad = orank - x.rank;
    for (int32_t k = 0; k < orank; k++) os[k] = k < pad ? 0 : x.dims[k - pad] == od[k] ? x.strides[k - pad] : 0;
    int32_t t = ig__lw_tensor(L, x.buf, x.dtype, orank, od, os, x.offset);
    if (t < 0) return ig__lw_oom(L);
    L->p->val_tensor[n->outputs[0]] = t;
    return INGOT_OK;
}

/* ---- GEMMs over rows in memory order ----
 * A lazy A whose rows are a permutation of one dense run of memory rows (ViT's attention output read as
 * [S*B, E] while it lies in [B, S] order) multiplies as it lies: the GEMM runs over the rows in memory
 * order, and its output is the same permutation of a dense [M, N] -- lazy too, so that the Reshape and
 * Transpose after it (ViT's way back to [B, S, E]) are plain views and neither side is copied. A C
 * operand (a residual) lazy with the same row order is read in that order too. */
int32_t ig__lw_rows_in_memory_order(ig_lower *L, int32_t v, ig_row_order *ro)
{
    if (v < 0 || L->p->val_tensor[v] >= 0 || !L->lazy[v]) return -1;
    const ig_lazy *z = L->lazy[v];
    const ig_cu_tensor *f = ig__lw_T(L, z->fine);
    if (z->rank < 2) return -1;
    int32_t nr = f->rank - z->n[z->rank - 1];
    int64_t K = 1, M = 1;
    for (int32_t q = f->rank - 1; q >= nr; q--) { /* K: one run of dims ending in stride 1 */
        if (f->strides[q] != K) return -1;
        K *= f->dims[q];
    }
    if (nr < 1) return -1;
    int32_t ord[IG_MAX_RANK]; /* the row dims, outermost in memory first */
    for (int32_t q = 0; q < nr; q++) {
        int32_t i = q;
        for (; i > 0 && f->strides[ord[i - 1]] < f->strides[q]; i--) ord[i] = ord[i - 1];
        ord[i] = q;
    }
    const int64_t lda = f->strides[ord[nr - 1]];
    if (lda < K) return -1;
    for (int32_t i = nr - 1; i >= 0; i--) { /* they must tile one dense run of rows of stride lda */
        if (f->strides[ord[i]] != (i == nr - 1 ? lda : f->strides[ord[i + 1]] * f->dims[ord[i + 1]])) return -1;
        M *= f->dims[ord[i]];
    }
    ro->v = v;
    ro->nr = nr;
    for (int32_t i = 0; i < nr; i++) {
        ro->pos[ord[i]] = i;
        ro->dims[i] = f->dims[i];
    }
    ro->rank = z->rank;
    memcpy(ro->n, z->n, (size_t)z->rank);
    int64_t d2[2] = {M, K}, s2[2] = {lda, 1};
    return ig__lw_tensor(L, f->buf, f->dtype, 2, d2, s2, f->offset);
}

bool ig__lw_same_row_order(const ig_row_order *a, const ig_row_order *b)
{
    if (a->nr != b->nr || a->rank != b->rank) return false;
    for (int32_t i = 0; i < a->nr; i++)
        if (a->dims[i] != b->dims[i] || a->pos[i] != b->pos[i]) return false;
    for (int32_t i = 0; i < a->rank - 1; i++)
        if (a->n[i] != b->n[i]) return false;
    return true;
}

ingot_status ig__lw_set_rows_permuted(ig_lower *L, int32_t node_id, int32_t v, int32_t d, const ig_row_order *ro)
{
    const ig_cu_tensor D = *ig__lw_T(L, d);
    const int64_t N = D.dims[1];
    ig_cu_tensor f = D;
    int8_t n[IG_MAX_RANK];
    f.rank = ro->nr + 1;
    for (int32_t q = 0; q < ro->nr; q++) {
        f.dims[q] = ro->dims[q];
        f.strides[q] = N;
        for (int32_t r = 0; r < ro->nr; r++)
            if (ro->pos[r] > ro->pos[q]) f.strides[q] *= ro->dims[r];
    }
    f.dims[ro->nr] = N;
    f.strides[ro->nr] = 1;
    memcpy(n, ro->n, (size_t)ro->rank);
    n[ro->rank - 1] = 1;
    return set_grouped(L, node_id, v, &f, n, ro->rank);
}
