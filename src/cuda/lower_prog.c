/*
 * lower_prog.c -- the device program being built: buffers, tensors (strided views of buffers), steps,
 * weight requests, and the tensor of a graph value (ig__lw_get). Also the small graph queries every
 * lowering uses.
 */
#include "lower_internal.h"

#include <stdio.h>

/* ---- growing arrays ----------------------------------------------------------------------------- */

static bool grow(void **arr, int32_t *cap, int32_t need, size_t elem)
{
    if (need <= *cap) return true;
    int32_t nc = *cap ? *cap * 2 : 64;
    while (nc < need) nc *= 2;
    void *n = ig__realloc(*arr, (size_t)nc * elem);
    if (!n) return false;
    memset((char *)n + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *arr = n;
    *cap = nc;
    return true;
}

void ig__cu_prog_free(ig_cu_prog *p)
{
    if (!p) return;
    ig__free(p->bufs);
    ig__free(p->tensors);
    ig__free(p->steps);
    ig__free(p->wreqs);
    ig__arena_free(&p->arena);
    memset(p, 0, sizeof *p);
}

/* ---- errors and graph queries ------------------------------------------------------------------- */

ingot_status ig__lw_oom(ig_lower *L)
{
    return ig__errf(L->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory lowering the graph");
}

ingot_status ig__lw_fail(ig_lower *L, int32_t node, ingot_status st, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const ig_node *n = &L->g->nodes[node];
    return ig__errf(L->err, st, "node '%s' (%s): CUDA backend: %s", ig__node_label(n), n->op_type, msg);
}

ingot_status ig__lw_status(ig_lower *L) { return L->err->status ? L->err->status : ig__lw_oom(L); }

int32_t ig__lw_n_cons(const ig_lower *L, int32_t v) { return L->cons_off[v + 1] - L->cons_off[v]; }

int32_t ig__lw_sole_consumer(const ig_lower *L, int32_t v)
{
    if (v < 0 || L->is_output[v] || ig__lw_n_cons(L, v) != 1) return -1;
    return L->cons[L->cons_off[v]];
}

int32_t ig__lw_in(const ig_lower *L, int32_t id, int i)
{
    const ig_node *n = ig__lw_node(L, id);
    return i < n->n_inputs ? n->inputs[i] : -1;
}

int32_t ig__lw_out(const ig_lower *L, int32_t id, int j)
{
    const ig_node *n = ig__lw_node(L, id);
    return j < n->n_outputs ? n->outputs[j] : -1;
}

bool ig__lw_out_used(const ig_lower *L, int32_t id, int j)
{
    int32_t v = ig__lw_out(L, id, j);
    return v >= 0 && (ig__lw_n_cons(L, v) > 0 || L->is_output[v]);
}

bool ig__lw_is_const(const ig_lower *L, int32_t v) { return v >= 0 && (ig__lw_val(L, v)->flags & IG_VAL_CONST); }

int32_t ig__lw_value_dims(const ig_lower *L, int32_t v, int64_t *dims)
{
    const ig_value *x = ig__lw_val(L, v);
    for (int32_t k = 0; k < x->shape.rank; k++) dims[k] = x->shape.d[k].n;
    return x->shape.rank;
}

bool ig__lw_same_shape(const ig_lower *L, int32_t v, int32_t w)
{
    const ig_shape *a = &ig__lw_val(L, v)->shape, *b = &ig__lw_val(L, w)->shape;
    if (a->rank != b->rank) return false;
    for (int32_t k = 0; k < a->rank; k++)
        if (a->d[k].n != b->d[k].n) return false;
    return true;
}

bool ig__lw_const_ints(const ig_lower *L, int32_t v, int64_t *out, int32_t max, int32_t *count)
{
    if (!ig__lw_is_const(L, v)) return false;
    const ig_value *x = ig__lw_val(L, v);
    size_t es = ingot_dtype_size(x->c.dtype);
    if (!es || !ig__dtype_is_int(x->c.dtype)) return false;
    int64_t n = (int64_t)(x->c.n_bytes / es);
    if (n > max) return false;
    for (int64_t i = 0; i < n; i++) out[i] = ig__elem_i64(x->c.dtype, x->c.data, i);
    *count = (int32_t)n;
    return true;
}

bool ig__lw_const_scalar(const ig_lower *L, int32_t v, double *out)
{
    if (!ig__lw_is_const(L, v)) return false;
    const ig_value *x = ig__lw_val(L, v);
    size_t es = ingot_dtype_size(x->c.dtype);
    if (!es || x->c.n_bytes != es) return false;
    *out = ig__elem_f64(x->c.dtype, x->c.data, 0);
    return true;
}

/* ---- buffers, tensors, steps ----------------------------------------------------------------------- */

int32_t ig__lw_buf(ig_lower *L, int loc, size_t bytes)
{
    ig_cu_prog *p = L->p;
    if (!grow((void **)&p->bufs, &p->cap_bufs, p->n_bufs + 1, sizeof *p->bufs)) return -1;
    ig_cu_buf *b = &p->bufs[p->n_bufs];
    memset(b, 0, sizeof *b);
    b->loc = (uint8_t)loc;
    b->bytes = bytes;
    b->io = -1;
    b->wreq = -1;
    b->first = INT32_MAX;
    b->last = -1;
    b->alias = -1;
    return p->n_bufs++;
}

void ig__lw_contig_strides(int32_t rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int32_t k = rank - 1; k >= 0; k--) {
        strides[k] = s;
        s *= dims[k] > 0 ? dims[k] : 1;
    }
}

int32_t ig__lw_tensor(ig_lower *L, int32_t buf, ingot_dtype dt, int32_t rank, const int64_t *dims,
                      const int64_t *strides, int64_t offset)
{
    ig_cu_prog *p = L->p;
    if (buf < 0) return -1;
    if (!grow((void **)&p->tensors, &p->cap_tensors, p->n_tensors + 1, sizeof *p->tensors)) return -1;
    ig_cu_tensor *t = &p->tensors[p->n_tensors];
    memset(t, 0, sizeof *t);
    t->buf = buf;
    t->dtype = dt;
    t->rank = rank;
    for (int32_t k = 0; k < rank; k++) t->dims[k] = dims[k];
    if (strides) {
        for (int32_t k = 0; k < rank; k++) t->strides[k] = strides[k];
    } else {
        ig__lw_contig_strides(rank, dims, t->strides);
    }
    t->offset = offset;
    return p->n_tensors++;
}

size_t ig__lw_numel(int32_t rank, const int64_t *dims)
{
    size_t n = 1;
    for (int32_t k = 0; k < rank; k++) n *= (size_t)(dims[k] > 0 ? dims[k] : 0);
    return n;
}

size_t ig__cu_tensor_numel(const ig_cu_tensor *t) { return ig__lw_numel(t->rank, t->dims); }

int32_t ig__lw_dense(ig_lower *L, ingot_dtype dt, int32_t rank, const int64_t *dims, bool nhwc)
{
    return ig__lw_dense_inner(L, dt, rank, dims, nhwc && rank == 4 ? 1 : -1);
}

int32_t ig__lw_dense_inner(ig_lower *L, ingot_dtype dt, int32_t rank, const int64_t *dims, int32_t inner)
{
    size_t bytes = ig__lw_numel(rank, dims) * ingot_dtype_size(dt);
    int32_t b = ig__lw_buf(L, IG_LOC_ARENA, bytes);
    if (b < 0) return -1;
    if (inner < 0 || inner >= rank - 1) return ig__lw_tensor(L, b, dt, rank, dims, NULL, 0);
    int64_t st[IG_MAX_RANK], s;
    st[inner] = 1;
    s = dims[inner] > 0 ? dims[inner] : 1;
    for (int32_t k = rank - 1; k >= 0; k--) {
        if (k == inner) continue;
        st[k] = s;
        s *= dims[k] > 0 ? dims[k] : 1;
    }
    return ig__lw_tensor(L, b, dt, rank, dims, st, 0);
}

ig_cu_step *ig__lw_step(ig_lower *L, int kind, int32_t node_id, const char *what)
{
    ig_cu_prog *p = L->p;
    if (!grow((void **)&p->steps, &p->cap_steps, p->n_steps + 1, sizeof *p->steps)) return NULL;
    ig_cu_step *s = &p->steps[p->n_steps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->node = node_id;
    s->what = what;
    return s;
}

ig_cu_step *ig__lw_kstep(ig_lower *L, int kind, int32_t node_id, int n, const int32_t *t)
{
    ig_cu_step *s = ig__lw_step(L, kind, node_id, NULL);
    if (!s) return NULL;
    for (int i = 0; i < IG_KSTEP_MAX_T; i++) s->u.k.t[i] = i < n ? t[i] : -1;
    return s;
}

bool ig__cu_tensor_contig(const ig_cu_tensor *t)
{
    int64_t s = 1;
    for (int32_t k = t->rank - 1; k >= 0; k--) {
        if (t->dims[k] != 1 && t->strides[k] != s) return false;
        s *= t->dims[k];
    }
    return true;
}

bool ig__lw_nhwc(const ig_cu_tensor *t)
{
    if (t->rank != 4) return false;
    const int64_t *d = t->dims, *s = t->strides;
    return (d[1] == 1 || s[1] == 1) && (d[3] == 1 || s[3] == d[1]) && (d[2] == 1 || s[2] == d[3] * d[1]) &&
           (d[0] == 1 || s[0] == d[2] * d[3] * d[1]);
}

/* ---- weights -------------------------------------------------------------------------------------- */

static bool initializer_only(const ig_lower *L, int32_t v)
{
    return v < 0 || (ig__lw_val(L, v)->flags & IG_VAL_INITIALIZER);
}

static int32_t add_wreq(ig_lower *L, const ig_cu_wreq *r)
{
    ig_cu_prog *p = L->p;
    for (int32_t i = 0; i < p->n_wreqs; i++)
        if (ig__cu_wreq_same(&p->wreqs[i], r)) return i;
    if (!grow((void **)&p->wreqs, &p->cap_wreqs, p->n_wreqs + 1, sizeof *p->wreqs)) return -1;
    p->wreqs[p->n_wreqs] = *r;
    return p->n_wreqs++;
}

int32_t ig__lw_weight(ig_lower *L, ig_cu_wreq *r, int32_t rank, const int64_t *dims, const int64_t *strides)
{
    r->all_initializers = initializer_only(L, r->src);
    for (int j = 0; j < 4; j++) r->all_initializers = r->all_initializers && initializer_only(L, r->bn[j]);
    int32_t w = add_wreq(L, r);
    if (w < 0) return -1;
    for (int32_t b = 0; b < L->p->n_bufs; b++)
        if (L->p->bufs[b].wreq == w) return ig__lw_tensor(L, b, r->dtype, rank, dims, strides, 0);
    int32_t b = ig__lw_buf(L, r->all_initializers ? IG_LOC_WEIGHT : IG_LOC_ARENA, r->bytes);
    if (b < 0) return -1;
    L->p->bufs[b].wreq = w;
    L->p->bufs[b].is_const = !r->all_initializers;
    return ig__lw_tensor(L, b, r->dtype, rank, dims, strides, 0);
}

int32_t ig__lw_const(ig_lower *L, int32_t v, ingot_dtype dtype, float scale)
{
    const ig_value *x = ig__lw_val(L, v);
    ig_cu_wreq r = {0};
    r.kind = IG_W_PLAIN;
    r.src = v;
    r.bn[0] = r.bn[1] = r.bn[2] = r.bn[3] = -1;
    r.scale = scale;
    r.dtype = dtype == INGOT_DTYPE_UNDEFINED ? ig__lw_dev_dtype(L->p, x->dtype) : dtype;
    int64_t dims[IG_MAX_RANK];
    int32_t rank = ig__lw_value_dims(L, v, dims);
    r.bytes = ig__lw_numel(rank, dims) * ingot_dtype_size(r.dtype);
    return ig__lw_weight(L, &r, rank, dims, NULL);
}

int32_t ig__lw_get(ig_lower *L, int32_t v)
{
    if (v < 0) return -1;
    if (L->p->val_tensor[v] >= 0) return L->p->val_tensor[v];
    if (L->lazy[v]) return ig__lw_materialize_lazy(L, v);
    if (ig__lw_is_const(L, v)) {
        int32_t t = ig__lw_const(L, v, INGOT_DTYPE_UNDEFINED, 1.f);
        if (t >= 0) L->p->val_tensor[v] = t;
        return t;
    }
    return -1;
}

int32_t ig__lw_get_view(ig_lower *L, int32_t v, ig_lazy **z)
{
    *z = v >= 0 && L->p->val_tensor[v] < 0 ? L->lazy[v] : NULL;
    return *z ? (*z)->fine : ig__lw_get(L, v);
}

bool ig__lw_produced(const ig_lower *L, int32_t v) { return L->p->val_tensor[v] >= 0 || L->lazy[v]; }

const char *ig__cu_step_label(const ig_cu_prog *p, const ig_cu_step *s, char *buf, size_t n)
{
    if (s->node >= 0) {
        const ig_node *nd = &p->g->nodes[s->node];
        snprintf(buf, n, "'%s' (%s)%s%s", ig__node_label(nd), nd->op_type, s->what ? ": " : "", s->what ? s->what : "");
    } else {
        snprintf(buf, n, "%s", s->what ? s->what : "step");
    }
    return buf;
}
