/*
 * lower.c -- from an inferred graph (every shape concrete) to a device program: tensors and steps.
 *
 * Tensors are strided views of buffers. Ops that only reinterpret or select (Reshape, Flatten, Squeeze,
 * Unsqueeze, Transpose, Slice, Split, Expand, Identity, Dropout, Gather with a constant scalar index)
 * make a new view and no step; a consumer that needs a particular layout (cuDNN wants channels-last,
 * cuBLASLt a matrix with one leading dimension, softmax contiguous rows) gets a copy step only when the
 * view it is handed does not already fit ("materialise"). Elementwise copies handle any strides, so a
 * transpose costs exactly one read and one write, and only where a consumer needs it.
 * A Reshape that no strided view expresses (split heads of a packed QKV projection) stays lazy -- a
 * finer view, regrouped -- through further Reshapes and Transposes, and is copied only for a consumer
 * that needs it as a tensor (usually a later Reshape makes it a plain view again).
 *
 * Fusion, decided here once:
 *  - Conv [-> BatchNormalization] [-> Add(residual)] [-> Relu]: one cuDNN call (BN folded into the
 *    filter and bias at build time; the residual through cuDNN's z input; ReLU through its activation).
 *    Without a ReLU the bias (and residual) join the elementwise program that follows.
 *  - MatMul/Gemm [-> Add(bias)] [-> Add(residual)] [-> Relu | erf-GELU]: one cuBLASLt call with its
 *    bias/ReLU/GELU epilogue and the residual as C with beta = 1.
 *  - Chains of elementwise nodes of one shape whose intermediates have no other consumer: one program
 *    (GELU's five nodes, masks, casts, clip).
 *  - Q K^T -> scale -> [mask] -> Softmax -> V: the fused attention kernel where it applies, writing in the
 *    order of a Transpose that follows (so that Transpose and a Reshape after it are views).
 *
 * Every op without a lowering is reported at build time, naming node and op (ig__cu_op_unsupported).
 */
#include "cuda_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

/* ---- the lowering state --------------------------------------------------------------------------- */

/* A Reshape result that no strided view expresses (ViT's q [S,B,E] with strides (3BE, 3E, 1) reshaped to
 * [S, B*H, D]), kept without a copy: logical dim k is the row-major merge of n[k] consecutive dims of
 * `fine`, a strided view of the same memory whose row-major order is the logical order. Reshape and
 * Transpose regroup it for free (the chain above ends in [B,H,S,D], a plain view again); any other
 * consumer gets one contiguous copy through get(). */
typedef struct lazy_view {
    int32_t fine; /* tensor */
    int32_t node; /* the Reshape that made it: labels the copy */
    int32_t rank;
    int8_t n[IG_MAX_RANK]; /* fine dims per logical dim (0 for a dim of size 1) */
} lazy_view;

typedef struct lower {
    ig_cu_prog *p;
    const ig_graph *g;
    const ig_cu_lower_options *o;
    ig_err *err;
    bool *done;        /* [n_nodes] lowered or absorbed */
    int32_t *pos;      /* [n_nodes] position in g->order */
    int32_t *cons_off; /* [n_values + 1] CSR of consumer nodes (each node once per value) */
    int32_t *cons;
    bool *is_output;         /* [n_values] */
    struct attn_plan **attn; /* [n_nodes] fused attention emitted at this (second) MatMul, or NULL */
    lazy_view **lazy;        /* [n_values] the value's lazy view or NULL (its copy, once made: val_tensor) */
} lower;

static ingot_status oom(lower *L)
{
    return ig__errf(L->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory lowering the graph");
}

static ingot_status fail_node(lower *L, int32_t node, ingot_status st, const char *fmt, ...) IG_PRINTF(4, 5);
static ingot_status fail_node(lower *L, int32_t node, ingot_status st, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const ig_node *n = &L->g->nodes[node];
    return ig__errf(L->err, st, "node '%s' (%s): CUDA backend: %s", ig__node_label(n), n->op_type, msg);
}

static ingot_dtype dev_dtype(const ig_cu_prog *p, ingot_dtype t) { return t == INGOT_DTYPE_FLOAT ? p->fdt : t; }

static int32_t n_cons(const lower *L, int32_t v) { return L->cons_off[v + 1] - L->cons_off[v]; }

/* The one node consuming v (each of its uses), or -1 when v has several consumers or is a graph output. */
static int32_t sole_consumer(const lower *L, int32_t v)
{
    if (v < 0 || L->is_output[v] || n_cons(L, v) != 1) return -1;
    return L->cons[L->cons_off[v]];
}

static const ig_value *val(const lower *L, int32_t v) { return &L->g->values[v]; }
static const ig_node *node(const lower *L, int32_t id) { return &L->g->nodes[id]; }
static int32_t in_id(const lower *L, int32_t id, int i)
{
    const ig_node *n = node(L, id);
    return i < n->n_inputs ? n->inputs[i] : -1;
}
static int32_t out_id(const lower *L, int32_t id, int i)
{
    const ig_node *n = node(L, id);
    return i < n->n_outputs ? n->outputs[i] : -1;
}
static bool is_const(const lower *L, int32_t v) { return v >= 0 && (val(L, v)->flags & IG_VAL_CONST); }

static int64_t value_numel(const ig_value *v)
{
    int64_t n = 1;
    for (int32_t k = 0; k < v->shape.rank; k++) n *= v->shape.d[k].n;
    return n;
}

/* ---- buffers, tensors, steps ----------------------------------------------------------------------- */

static int32_t new_buf(lower *L, int loc, size_t bytes)
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

static void contig_strides(int32_t rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int32_t k = rank - 1; k >= 0; k--) {
        strides[k] = s;
        s *= dims[k] > 0 ? dims[k] : 1;
    }
}

static int32_t new_tensor(lower *L, int32_t buf, ingot_dtype dt, int32_t rank, const int64_t *dims,
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
        contig_strides(rank, dims, t->strides);
    }
    t->offset = offset;
    return p->n_tensors++;
}

static size_t numel_of(int32_t rank, const int64_t *dims)
{
    size_t n = 1;
    for (int32_t k = 0; k < rank; k++) n *= (size_t)(dims[k] > 0 ? dims[k] : 0);
    return n;
}

size_t ig__cu_tensor_numel(const ig_cu_tensor *t) { return numel_of(t->rank, t->dims); }

/* A fresh arena buffer holding a dense tensor; nhwc: a rank-4 tensor laid out channels-last. */
static int32_t new_dense(lower *L, ingot_dtype dt, int32_t rank, const int64_t *dims, bool nhwc)
{
    size_t bytes = numel_of(rank, dims) * ingot_dtype_size(dt);
    int32_t b = new_buf(L, IG_LOC_ARENA, bytes);
    if (b < 0) return -1;
    if (nhwc && rank == 4) {
        int64_t st[4];
        st[1] = 1;
        st[3] = dims[1];
        st[2] = dims[3] * dims[1];
        st[0] = dims[2] * dims[3] * dims[1];
        return new_tensor(L, b, dt, rank, dims, st, 0);
    }
    return new_tensor(L, b, dt, rank, dims, NULL, 0);
}

/* A fresh dense tensor whose memory order is the logical order with axis `inner` moved last (-1 or the
 * last axis: plain row-major; axis 1 of a rank-4 tensor: channels-last). */
static int32_t new_dense_inner(lower *L, ingot_dtype dt, int32_t rank, const int64_t *dims, int32_t inner)
{
    if (inner < 0 || inner >= rank - 1) return new_dense(L, dt, rank, dims, false);
    size_t bytes = numel_of(rank, dims) * ingot_dtype_size(dt);
    int32_t b = new_buf(L, IG_LOC_ARENA, bytes);
    if (b < 0) return -1;
    int64_t st[IG_MAX_RANK], s = 1;
    st[inner] = 1;
    s = dims[inner] > 0 ? dims[inner] : 1;
    for (int32_t k = rank - 1; k >= 0; k--) {
        if (k == inner) continue;
        st[k] = s;
        s *= dims[k] > 0 ? dims[k] : 1;
    }
    return new_tensor(L, b, dt, rank, dims, st, 0);
}

static ig_cu_step *new_step(lower *L, int kind, int32_t node_id, const char *what)
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

bool ig__cu_tensor_contig(const ig_cu_tensor *t)
{
    int64_t s = 1;
    for (int32_t k = t->rank - 1; k >= 0; k--) {
        if (t->dims[k] != 1 && t->strides[k] != s) return false;
        s *= t->dims[k];
    }
    return true;
}

static bool tensor_nhwc(const ig_cu_tensor *t)
{
    if (t->rank != 4) return false;
    const int64_t *d = t->dims, *s = t->strides;
    return (d[1] == 1 || s[1] == 1) && (d[3] == 1 || s[3] == d[1]) && (d[2] == 1 || s[2] == d[3] * d[1]) &&
           (d[0] == 1 || s[0] == d[2] * d[3] * d[1]);
}

static ig_cu_tensor *T(lower *L, int32_t t) { return &L->p->tensors[t]; }

/* ---- weights -------------------------------------------------------------------------------------- */

static bool initializer_only(const lower *L, int32_t v) { return v < 0 || (val(L, v)->flags & IG_VAL_INITIALIZER); }

static int32_t add_wreq(lower *L, const ig_cu_wreq *r)
{
    ig_cu_prog *p = L->p;
    for (int32_t i = 0; i < p->n_wreqs; i++)
        if (ig__cu_wreq_same(&p->wreqs[i], r)) return i;
    if (!grow((void **)&p->wreqs, &p->cap_wreqs, p->n_wreqs + 1, sizeof *p->wreqs)) return -1;
    p->wreqs[p->n_wreqs] = *r;
    return p->n_wreqs++;
}

/* A weight tensor for request r with the given view. The buffer is WEIGHT when the engine can own it
 * (every source a file initializer), else an instance constant in the arena. */
static int32_t weight_tensor(lower *L, ig_cu_wreq *r, int32_t rank, const int64_t *dims, const int64_t *strides)
{
    r->all_initializers = initializer_only(L, r->src) && initializer_only(L, r->bn[0]) &&
                          initializer_only(L, r->bn[1]) && initializer_only(L, r->bn[2]) &&
                          initializer_only(L, r->bn[3]);
    int32_t w = add_wreq(L, r);
    if (w < 0) return -1;
    for (int32_t b = 0; b < L->p->n_bufs; b++) {
        const ig_cu_buf *bb = &L->p->bufs[b];
        if (bb->wreq == w) return new_tensor(L, b, r->dtype, rank, dims, strides, 0);
    }
    int32_t b = new_buf(L, r->all_initializers ? IG_LOC_WEIGHT : IG_LOC_ARENA, r->bytes);
    if (b < 0) return -1;
    L->p->bufs[b].wreq = w;
    L->p->bufs[b].is_const = !r->all_initializers;
    return new_tensor(L, b, r->dtype, rank, dims, strides, 0);
}

/* The plain device copy of constant v, converted to dtype (UNDEFINED: its device type). */
static int32_t const_tensor(lower *L, int32_t v, ingot_dtype dtype, float scale)
{
    const ig_value *x = val(L, v);
    ig_cu_wreq r = {0};
    r.kind = IG_W_PLAIN;
    r.src = v;
    r.bn[0] = r.bn[1] = r.bn[2] = r.bn[3] = -1;
    r.scale = scale;
    r.dtype = dtype == INGOT_DTYPE_UNDEFINED ? dev_dtype(L->p, x->dtype) : dtype;
    int64_t dims[IG_MAX_RANK];
    for (int32_t k = 0; k < x->shape.rank; k++) dims[k] = x->shape.d[k].n;
    r.bytes = numel_of(x->shape.rank, dims) * ingot_dtype_size(r.dtype);
    return weight_tensor(L, &r, x->shape.rank, dims, NULL);
}

static int32_t materialize_lazy(lower *L, int32_t v);

/* The tensor of value v: its producer's output, a constant's device copy, or an input's staging. A lazy
 * value is copied here (once), so only the view ops that understand laziness (get_view) ever see one. */
static int32_t get(lower *L, int32_t v)
{
    if (v < 0) return -1;
    if (L->p->val_tensor[v] >= 0) return L->p->val_tensor[v];
    if (L->lazy[v]) return materialize_lazy(L, v);
    if (is_const(L, v)) {
        int32_t t = const_tensor(L, v, INGOT_DTYPE_UNDEFINED, 1.f);
        if (t >= 0) L->p->val_tensor[v] = t;
        return t;
    }
    return -1;
}

/* ---- elementwise programs ------------------------------------------------------------------------- */

typedef struct ew_prog {
    int32_t n_in;
    int32_t in[IG_EW_MAX_IN];     /* tensors */
    int32_t in_val[IG_EW_MAX_IN]; /* graph values loaded (-1 for internal tensors) */
    int32_t in_reg[IG_EW_MAX_IN]; /* register holding the loaded input, -1 when not (or no longer) */
    int32_t n_ops;
    ig_ew_op ops[IG_EW_MAX_OPS];
    bool reg_used[IG_EW_NREG];
    int32_t result; /* register of the current value */
    bool int_math;
} ew_prog;

static void ew_init(ew_prog *e)
{
    memset(e, 0, sizeof *e);
    for (int i = 0; i < IG_EW_MAX_IN; i++) {
        e->in_reg[i] = -1;
        e->in_val[i] = -1;
    }
    e->result = -1;
}

static int ew_alloc_reg(ew_prog *e)
{
    for (int r = 0; r < IG_EW_NREG; r++)
        if (!e->reg_used[r]) {
            e->reg_used[r] = true;
            return r;
        }
    return -1;
}

/* Register holding input tensor t (loading it on first use). -1 when out of room. */
static int ew_load(ew_prog *e, int32_t t, int32_t value)
{
    for (int i = 0; i < e->n_in; i++)
        if (e->in[i] == t && e->in_reg[i] >= 0) return e->in_reg[i];
    int slot = -1;
    for (int i = 0; i < e->n_in; i++)
        if (e->in[i] == t) slot = i;
    if (slot < 0) {
        if (e->n_in >= IG_EW_MAX_IN) return -1;
        slot = e->n_in++;
        e->in[slot] = t;
        e->in_val[slot] = value;
    }
    if (e->n_ops >= IG_EW_MAX_OPS) return -1;
    int r = ew_alloc_reg(e);
    if (r < 0) return -1;
    ig_ew_op *op = &e->ops[e->n_ops++];
    memset(op, 0, sizeof *op);
    op->code = IG_EW_LOAD;
    op->a = (uint8_t)slot;
    op->b = op->c = IG_REF_NONE;
    op->dst = (uint8_t)r;
    e->in_reg[slot] = r;
    return r;
}

static bool ew_op(ew_prog *e, int code, int a, int b, int c, double k, double k2, int dst)
{
    if (e->n_ops >= IG_EW_MAX_OPS || dst < 0) return false;
    ig_ew_op *op = &e->ops[e->n_ops++];
    memset(op, 0, sizeof *op);
    op->code = (uint8_t)code;
    op->a = (uint8_t)a;
    op->b = (uint8_t)b;
    op->c = (uint8_t)c;
    op->k = k;
    op->k2 = k2;
    op->dst = (uint8_t)dst;
    return true;
}

/* Collapse dims and write the kernel arguments of program e into out tensor `out`. */
static ingot_status ew_finish(lower *L, int32_t node_id, const char *what, const ew_prog *e, int32_t out, int io_patch)
{
    ig_cu_prog *p = L->p;
    const ig_cu_tensor *o = &p->tensors[out];
    ig_cu_step *s = new_step(L, IG_ST_EW, node_id, what);
    if (!s) return oom(L);
    s->io_patch = io_patch;
    ig_cu_ew *w = &s->u.ew;
    w->out = out;
    w->n_in = e->n_in;
    ig_ew_args *a = &w->args;
    memset(a, 0, sizeof *a);
    int32_t r = o->rank;
    int64_t dims[IG_MAX_RANK], ost[IG_MAX_RANK], ist[IG_EW_MAX_IN][IG_MAX_RANK];
    for (int32_t k = 0; k < r; k++) {
        dims[k] = o->dims[k];
        ost[k] = o->strides[k];
    }
    for (int i = 0; i < e->n_in; i++) {
        w->in[i] = e->in[i];
        const ig_cu_tensor *t = &p->tensors[e->in[i]];
        if (t->rank > r)
            return ig__errf(L->err, INGOT_ERR_INTERNAL, "elementwise input of rank %d into rank %d", (int)t->rank,
                            (int)r);
        int32_t pad = r - t->rank;
        for (int32_t k = 0; k < r; k++) {
            if (k < pad) {
                ist[i][k] = 0;
                continue;
            }
            int64_t d = t->dims[k - pad];
            if (d == dims[k])
                ist[i][k] = t->strides[k - pad];
            else if (d == 1)
                ist[i][k] = 0;
            else
                return ig__errf(L->err, INGOT_ERR_INTERNAL, "elementwise input dim %" PRId64 " against %" PRId64, d,
                                dims[k]);
        }
        a->in_dtype[i] = t->dtype;
    }
    /* iterate in the output's memory order (axes by decreasing output stride); when that leaves an
     * innermost run too short for vector accesses (an NCHW image written channels-last: runs of 3),
     * iterate in the first input's order instead (runs of H*W) -- any order is correct */
    int64_t cd[IG_MAX_RANK], co[IG_MAX_RANK], ci[IG_EW_MAX_IN][IG_MAX_RANK];
    int32_t n = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        const int64_t *key = attempt == 0 || e->n_in == 0 ? ost : ist[0];
        int32_t perm[IG_MAX_RANK];
        for (int32_t k = 0; k < r; k++) perm[k] = k;
        for (int32_t i = 1; i < r; i++)
            for (int32_t j = i; j > 0; j--) {
                int32_t x = perm[j - 1], y = perm[j];
                int64_t sx = dims[x] == 1 ? 0 : key[x], sy = dims[y] == 1 ? 0 : key[y];
                if (sx < sy) {
                    perm[j - 1] = y;
                    perm[j] = x;
                }
            }
        n = 0;
        for (int32_t q = 0; q < r; q++) {
            int32_t k = perm[q];
            if (dims[k] == 1) continue;
            if (n > 0) { /* merge with the previous dim when every operand steps through both evenly */
                bool ok = co[n - 1] == ost[k] * dims[k];
                for (int i = 0; i < e->n_in && ok; i++) ok = ci[i][n - 1] == ist[i][k] * dims[k];
                if (ok) {
                    cd[n - 1] *= dims[k];
                    co[n - 1] = ost[k];
                    for (int i = 0; i < e->n_in; i++) ci[i][n - 1] = ist[i][k];
                    continue;
                }
            }
            cd[n] = dims[k];
            co[n] = ost[k];
            for (int i = 0; i < e->n_in; i++) ci[i][n] = ist[i][k];
            n++;
        }
        if (n == 0) {
            cd[0] = 1;
            co[0] = 1;
            for (int i = 0; i < e->n_in; i++) ci[i][0] = 0;
            n = 1;
        }
        bool short_run = n > 1 && cd[n - 1] < 8 && e->n_in > 0;
        if (!short_run || attempt == 1) break;
        /* keep this order unless the input's order gives a longer innermost run */
        int64_t best_inner = 1;
        for (int32_t k = 0; k < r; k++)
            if (dims[k] > 1 && ist[0][k] == 1 && dims[k] > best_inner) best_inner = dims[k];
        if (best_inner < 8) break;
    }
    if (n > IG_EW_MAX_RANK) {
        char lbl[160];
        snprintf(lbl, sizeof lbl, "%s", what ? what : "elementwise");
        return ig__errf(L->err, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                        "%s: the strides of its operands leave %d dims (at most %d supported)", lbl, (int)n,
                        IG_EW_MAX_RANK);
    }
    int64_t total = 1;
    for (int32_t k = 0; k < n; k++) total *= cd[k];
    a->n = (int64_t)numel_of(o->rank, o->dims) == 0 ? 0 : total;
    a->rank = n;
    a->int_math = e->int_math;
    a->out_dtype = o->dtype;
    for (int32_t k = 0; k < n; k++) {
        a->dims[k] = cd[k];
        a->out_strides[k] = co[k];
    }
    int64_t sacc = 1;
    a->out_contig = 1;
    for (int32_t k = n - 1; k >= 0; k--) {
        if (co[k] != sacc) a->out_contig = 0;
        sacc *= cd[k];
    }
    a->n_in = e->n_in;
    for (int i = 0; i < e->n_in; i++) {
        bool zero = true, same = a->out_contig != 0;
        for (int32_t k = 0; k < n; k++) {
            a->in_strides[i][k] = ci[i][k];
            if (ci[i][k] != 0) zero = false;
            if (ci[i][k] != co[k]) same = false;
        }
        a->in_kind[i] = zero ? 2 : same ? 1 : 0;
    }
    a->n_ops = e->n_ops;
    memcpy(a->ops, e->ops, sizeof(ig_ew_op) * (size_t)e->n_ops);
    a->result = (uint8_t)e->result;
    return INGOT_OK;
}

/* A copy of tensor src into dst (a dense tensor or a view into one), converting the element type. */
static ingot_status emit_copy(lower *L, int32_t node_id, const char *what, int32_t src, int32_t dst, int io_patch)
{
    ew_prog e;
    ew_init(&e);
    e.int_math = !ig__dtype_is_float(T(L, src)->dtype) && !ig__dtype_is_float(T(L, dst)->dtype);
    int r = ew_load(&e, src, -1);
    e.result = r;
    return ew_finish(L, node_id, what, &e, dst, io_patch);
}

/* A dense copy of t (channels-last when nhwc and rank 4), made by a copy step. */
static int32_t materialize(lower *L, int32_t node_id, int32_t t, bool nhwc, const char *what)
{
    ig_cu_tensor c = *T(L, t);
    int32_t d = new_dense(L, c.dtype, c.rank, c.dims, nhwc);
    if (d < 0) return -1;
    if (emit_copy(L, node_id, what, t, d, 0) != INGOT_OK) return -2;
    return d;
}

static int32_t ensure_contig(lower *L, int32_t node_id, int32_t t)
{
    if (t < 0 || ig__cu_tensor_contig(T(L, t))) return t;
    return materialize(L, node_id, t, false, "contiguous copy");
}

/* ---- views ------------------------------------------------------------------------------------------- */

/* Strides for viewing (dims, strides) as new_dims without moving data, or false (PyTorch's rule). */
static bool view_strides(int32_t rank, const int64_t *dims, const int64_t *strides, int32_t nrank, const int64_t *ndims,
                         int64_t *nstrides)
{
    size_t numel = numel_of(rank, dims);
    if (numel == 0 || rank == 0) {
        contig_strides(nrank, ndims, nstrides);
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

/* The value's shape as plain dims. */
static int32_t value_dims(const lower *L, int32_t v, int64_t *dims)
{
    const ig_value *x = val(L, v);
    for (int32_t k = 0; k < x->shape.rank; k++) dims[k] = x->shape.d[k].n;
    return x->shape.rank;
}

/* The tensor of v for the ops that take a lazy value as it is (Reshape, Transpose, Identity): a plain
 * tensor (*z NULL; a lazy value already copied gives its copy) or the fine view of a lazy value (*z). */
static int32_t get_view(lower *L, int32_t v, lazy_view **z)
{
    *z = v >= 0 && L->p->val_tensor[v] < 0 ? L->lazy[v] : NULL;
    return *z ? (*z)->fine : get(L, v);
}

/* Value v made by a producer, possibly lazy (get() will copy it). */
static bool produced(const lower *L, int32_t v) { return L->p->val_tensor[v] >= 0 || L->lazy[v]; }

/* The one contiguous copy of lazy value v: the fine view copied into a dense buffer seen with the fine
 * dims (same row-major order, so it is the logical tensor's dense layout). */
static int32_t materialize_lazy(lower *L, int32_t v)
{
    const lazy_view *z = L->lazy[v];
    const ig_cu_tensor f = *T(L, z->fine);
    int64_t dims[IG_MAX_RANK];
    int32_t rank = value_dims(L, v, dims);
    int32_t d = new_dense(L, f.dtype, rank, dims, false);
    int32_t fd = d >= 0 ? new_tensor(L, T(L, d)->buf, f.dtype, f.rank, f.dims, NULL, 0) : -1;
    if (fd < 0 || emit_copy(L, z->node, "contiguous copy", z->fine, fd, 0) != INGOT_OK) return -1;
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
static ingot_status set_grouped(lower *L, int32_t node_id, int32_t ov, const ig_cu_tensor *f, const int8_t *n,
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
        int32_t t = new_tensor(L, f->buf, f->dtype, nr, nd, ns, f->offset);
        if (t < 0) return oom(L);
        L->p->val_tensor[ov] = t;
        return INGOT_OK;
    }
    lazy_view *z = ig__arena_alloc(&L->p->arena, sizeof *z);
    if (!z) return oom(L);
    z->fine = new_tensor(L, f->buf, f->dtype, f->rank, f->dims, f->strides, f->offset);
    if (z->fine < 0) return oom(L);
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

/* Output value `ov` as a reshape of value iv (plain, or lazy: its fine view is reshaped, having the
 * logical order): a strided view, else a lazy regrouping of a finer view, else a copy. */
static ingot_status reshape_view(lower *L, int32_t node_id, int32_t iv, int32_t ov)
{
    lazy_view *z;
    int32_t t = get_view(L, iv, &z);
    if (t < 0) return fail_node(L, node_id, INGOT_ERR_INTERNAL, "input has no device tensor");
    int64_t nd[IG_MAX_RANK], ns[IG_MAX_RANK];
    int32_t nr = value_dims(L, ov, nd);
    ig_cu_tensor x = *T(L, t), f;
    int8_t n[IG_MAX_RANK];
    if (!view_strides(x.rank, x.dims, x.strides, nr, nd, ns)) {
        if (split_fine(&x, nr, nd, &f, n)) return set_grouped(L, node_id, ov, &f, n, nr);
        /* no grouping either: a copy (for a lazy input, its one copy) */
        int32_t c = z ? get(L, iv) : materialize(L, node_id, t, false, "contiguous copy");
        if (c < 0) return L->err->status ? L->err->status : oom(L);
        x = *T(L, c);
        contig_strides(nr, nd, ns);
    }
    int32_t r = new_tensor(L, x.buf, x.dtype, nr, nd, ns, x.offset);
    if (r < 0) return oom(L);
    L->p->val_tensor[ov] = r;
    return INGOT_OK;
}

static ingot_status alias_value(lower *L, int32_t ov, int32_t t)
{
    L->p->val_tensor[ov] = t;
    return INGOT_OK;
}

/* Integer list of a constant input (Slice's starts, Reshape's shape...). */
static bool const_ints(const lower *L, int32_t v, int64_t *out, int32_t max, int32_t *count)
{
    if (!is_const(L, v)) return false;
    const ig_value *x = val(L, v);
    size_t es = ingot_dtype_size(x->c.dtype);
    if (!es || !ig__dtype_is_int(x->c.dtype)) return false;
    int64_t n = (int64_t)(x->c.n_bytes / es);
    if (n > max) return false;
    for (int64_t i = 0; i < n; i++) out[i] = ig__elem_i64(x->c.dtype, x->c.data, i);
    *count = (int32_t)n;
    return true;
}

static bool const_scalar(const lower *L, int32_t v, double *out)
{
    if (!is_const(L, v)) return false;
    const ig_value *x = val(L, v);
    size_t es = ingot_dtype_size(x->c.dtype);
    if (!es || x->c.n_bytes != es) return false;
    *out = ig__elem_f64(x->c.dtype, x->c.data, 0);
    return true;
}

static int32_t norm_axis(int64_t a, int32_t rank) { return (int32_t)(a < 0 ? a + rank : a); }

/* ---- elementwise nodes ------------------------------------------------------------------------------ */

static bool is_ew_op(int32_t op)
{
    switch (op) {
    case IG_OP_sqrt:
    case IG_OP_erf:
    case IG_OP_exp:
    case IG_OP_log:
    case IG_OP_neg:
    case IG_OP_abs:
    case IG_OP_reciprocal:
    case IG_OP_tanh:
    case IG_OP_sigmoid:
    case IG_OP_relu:
    case IG_OP_leaky_relu:
    case IG_OP_clip:
    case IG_OP_hard_sigmoid:
    case IG_OP_hard_swish:
    case IG_OP_gelu:
    case IG_OP_softplus:
    case IG_OP_mish:
    case IG_OP_is_nan:
    case IG_OP_not:
    case IG_OP_cast:
    case IG_OP_add:
    case IG_OP_sub:
    case IG_OP_mul:
    case IG_OP_div:
    case IG_OP_pow:
    case IG_OP_mod:
    case IG_OP_max:
    case IG_OP_min:
    case IG_OP_prelu:
    case IG_OP_equal:
    case IG_OP_greater:
    case IG_OP_less:
    case IG_OP_greater_or_equal:
    case IG_OP_less_or_equal:
    case IG_OP_and:
    case IG_OP_or:
    case IG_OP_where:
    case IG_OP_batch_normalization: return true;
    default: return false;
    }
}

static int unary_code(const ig_node *n)
{
    switch (n->op) {
    case IG_OP_sqrt: return IG_EW_SQRT;
    case IG_OP_erf: return IG_EW_ERF;
    case IG_OP_exp: return IG_EW_EXP;
    case IG_OP_log: return IG_EW_LOG;
    case IG_OP_neg: return IG_EW_NEG;
    case IG_OP_abs: return IG_EW_ABS;
    case IG_OP_reciprocal: return IG_EW_RECIP;
    case IG_OP_tanh: return IG_EW_TANH;
    case IG_OP_sigmoid: return IG_EW_SIGMOID;
    case IG_OP_relu: return IG_EW_RELU;
    case IG_OP_leaky_relu: return IG_EW_LEAKY;
    case IG_OP_hard_sigmoid: return IG_EW_HARDSIGMOID;
    case IG_OP_hard_swish: return IG_EW_HARDSWISH;
    case IG_OP_softplus: return IG_EW_SOFTPLUS;
    case IG_OP_mish: return IG_EW_MISH;
    case IG_OP_is_nan: return IG_EW_ISNAN;
    case IG_OP_not: return IG_EW_NOT;
    case IG_OP_gelu: return strcmp(ig__attr_str(n, "approximate", "none"), "tanh") ? IG_EW_GELU_ERF : IG_EW_GELU_TANH;
    default: return -1;
    }
}

static int binary_code(const ig_node *n)
{
    switch (n->op) {
    case IG_OP_add: return IG_EW_ADD;
    case IG_OP_sub: return IG_EW_SUB;
    case IG_OP_mul: return IG_EW_MUL;
    case IG_OP_div: return IG_EW_DIV;
    case IG_OP_pow: return IG_EW_POW;
    case IG_OP_mod: return ig__attr_int(n, "fmod", 0) ? IG_EW_FMOD : IG_EW_MOD;
    case IG_OP_max: return IG_EW_MAX;
    case IG_OP_min: return IG_EW_MIN;
    case IG_OP_prelu: return IG_EW_PRELU;
    case IG_OP_equal: return IG_EW_EQ;
    case IG_OP_greater: return IG_EW_GT;
    case IG_OP_less: return IG_EW_LT;
    case IG_OP_greater_or_equal: return IG_EW_GE;
    case IG_OP_less_or_equal: return IG_EW_LE;
    case IG_OP_and: return IG_EW_AND;
    case IG_OP_or: return IG_EW_OR;
    default: return -1;
    }
}

/* Is value v needed by a node that is neither done nor in the group being built (`members`)? */
static bool needed_later(const lower *L, int32_t v, const int32_t *members, int32_t n_members)
{
    if (v < 0) return false;
    if (L->is_output[v]) return true;
    for (int32_t i = L->cons_off[v]; i < L->cons_off[v + 1]; i++) {
        int32_t c = L->cons[i];
        if (L->done[c]) continue;
        bool in = false;
        for (int32_t m = 0; m < n_members; m++)
            if (members[m] == c) in = true;
        if (!in) return true;
    }
    return false;
}

/* The group-building state: program, registers of group-internal values. */
typedef struct group {
    ew_prog e;
    int32_t members[IG_EW_MAX_OPS];
    int32_t n_members;
    int32_t cur_value;     /* the value the program's result holds */
    int32_t reg_of_val[4]; /* up to 4 group-internal values still in registers */
    int32_t val_of_reg[4];
    int32_t n_internal;
} group;

/* Operand for value v inside group G: a register (internal or loaded input), the constant slot K (when
 * k_free and v is a scalar constant), or -1 (no room). */
static int group_operand(lower *L, group *G, int32_t v, bool *k_used, double *k)
{
    for (int i = 0; i < G->n_internal; i++)
        if (G->val_of_reg[i] == v) return G->reg_of_val[i];
    double c;
    if (!*k_used && const_scalar(L, v, &c)) {
        *k_used = true;
        *k = c;
        return IG_REF_K;
    }
    int32_t t = get(L, v);
    if (t < 0) return -1;
    return ew_load(&G->e, t, v);
}

/* Release registers no longer needed after a member consumed them. */
static void group_release(lower *L, group *G, const int32_t *vals, int n)
{
    for (int j = 0; j < n; j++) {
        int32_t v = vals[j];
        if (v < 0) continue;
        /* internal values: single consumer, gone after use */
        for (int i = 0; i < G->n_internal; i++)
            if (G->val_of_reg[i] == v) {
                G->e.reg_used[G->reg_of_val[i]] = false;
                G->val_of_reg[i] = G->val_of_reg[G->n_internal - 1];
                G->reg_of_val[i] = G->reg_of_val[G->n_internal - 1];
                G->n_internal--;
                break;
            }
        /* loaded inputs: free when nothing outside the group still wants them */
        for (int i = 0; i < G->e.n_in; i++)
            if (G->e.in_val[i] == v && G->e.in_reg[i] >= 0 && !needed_later(L, v, G->members, G->n_members)) {
                G->e.reg_used[G->e.in_reg[i]] = false;
                G->e.in_reg[i] = -1;
            }
    }
}

/* Append node `id` to the group: its ops, reading its inputs, result in a new register. False (group
 * unchanged) when it does not fit. */
static bool group_add(lower *L, group *G, int32_t id)
{
    group save = *G;
    const ig_node *n = node(L, id);
    G->members[G->n_members++] = id;
    bool k_used = false;
    double k = 0, k2 = 0;
    int a = IG_REF_NONE, b = IG_REF_NONE, c = IG_REF_NONE, code = -1;
    int32_t used[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    int n_used = 0;
    int dst_reg;
#define OPND(var, v)                                   \
    do {                                               \
        used[n_used++] = (v);                          \
        (var) = group_operand(L, G, (v), &k_used, &k); \
        if ((var) < 0) goto no_room;                   \
    } while (0)
    if (G->n_members > IG_EW_MAX_OPS) goto no_room;
    switch (n->op) {
    case IG_OP_cast: {
        ingot_dtype to = (ingot_dtype)ig__attr_int(n, "to", 0);
        OPND(a, n->inputs[0]);
        if (to == INGOT_DTYPE_FLOAT16)
            code = IG_EW_TO_F16;
        else if (to == INGOT_DTYPE_BFLOAT16)
            code = IG_EW_TO_BF16;
        else if (to == INGOT_DTYPE_BOOL)
            code = IG_EW_TO_BOOL;
        else if (ig__dtype_is_int(to))
            code = IG_EW_TO_INT;
        else
            code = IG_EW_COPY;
        break;
    }
    case IG_OP_clip: {
        OPND(a, n->inputs[0]);
        double lo = -INFINITY, hi = INFINITY;
        if (n->opset < 11) {
            lo = ig__attr_float(n, "min", -INFINITY);
            hi = ig__attr_float(n, "max", INFINITY);
        } else {
            int32_t vmin = in_id(L, id, 1), vmax = in_id(L, id, 2);
            if ((vmin >= 0 && !const_scalar(L, vmin, &lo)) || (vmax >= 0 && !const_scalar(L, vmax, &hi))) {
                /* tensor bounds: max then min through operands */
                int r0 = a, r1;
                if (vmin >= 0) {
                    OPND(b, vmin);
                    dst_reg = ew_alloc_reg(&G->e);
                    if (dst_reg < 0 || !ew_op(&G->e, IG_EW_MAX, r0, b, IG_REF_NONE, k, 0, dst_reg)) goto no_room;
                    r0 = dst_reg;
                }
                if (vmax >= 0) {
                    k_used = false;
                    OPND(r1, vmax);
                    dst_reg = ew_alloc_reg(&G->e);
                    if (dst_reg < 0 || !ew_op(&G->e, IG_EW_MIN, r0, r1, IG_REF_NONE, k, 0, dst_reg)) goto no_room;
                    r0 = dst_reg;
                }
                group_release(L, G, used, n_used);
                goto set_result_reg;
            set_result_reg:
                G->reg_of_val[G->n_internal] = r0;
                G->val_of_reg[G->n_internal++] = n->outputs[0];
                G->e.result = r0;
                G->cur_value = n->outputs[0];
                return true;
            }
        }
        code = IG_EW_CLIP;
        k = lo;
        k2 = hi;
        break;
    }
    case IG_OP_leaky_relu:
        OPND(a, n->inputs[0]);
        code = IG_EW_LEAKY;
        k = ig__attr_float(n, "alpha", 0.01f);
        break;
    case IG_OP_hard_sigmoid:
        OPND(a, n->inputs[0]);
        code = IG_EW_HARDSIGMOID;
        k = ig__attr_float(n, "alpha", 0.2f);
        k2 = ig__attr_float(n, "beta", 0.5f);
        break;
    case IG_OP_where:
        OPND(a, n->inputs[0]);
        OPND(b, n->inputs[1]);
        OPND(c, n->inputs[2]);
        code = IG_EW_WHERE;
        break;
    case IG_OP_max:
    case IG_OP_min: {
        if (n->n_inputs < 1) goto no_room;
        OPND(a, n->inputs[0]);
        int r0 = a;
        code = binary_code(n);
        for (int32_t i = 1; i < n->n_inputs; i++) {
            int rb;
            k_used = r0 == IG_REF_K;
            OPND(rb, n->inputs[i]);
            dst_reg = ew_alloc_reg(&G->e);
            if (dst_reg < 0 || !ew_op(&G->e, code, r0, rb, IG_REF_NONE, k, 0, dst_reg)) goto no_room;
            r0 = dst_reg;
        }
        if (n->n_inputs == 1) {
            dst_reg = ew_alloc_reg(&G->e);
            if (dst_reg < 0 || !ew_op(&G->e, IG_EW_COPY, r0, IG_REF_NONE, IG_REF_NONE, k, 0, dst_reg)) goto no_room;
            r0 = dst_reg;
        }
        group_release(L, G, used, n_used);
        G->reg_of_val[G->n_internal] = r0;
        G->val_of_reg[G->n_internal++] = n->outputs[0];
        G->e.result = r0;
        G->cur_value = n->outputs[0];
        return true;
    }
    case IG_OP_batch_normalization: {
        /* y = x * scale[c] + shift[c], the two vectors folded at build time */
        const ig_value *x = val(L, n->inputs[0]);
        int32_t rank = x->shape.rank;
        if (rank < 2) goto no_room;
        int64_t C = x->shape.d[1].n, dims[IG_MAX_RANK], st[IG_MAX_RANK];
        dims[0] = C;
        st[0] = 1;
        for (int32_t q = 1; q < rank - 1; q++) {
            dims[q] = 1;
            st[q] = 0;
        }
        OPND(a, n->inputs[0]);
        int32_t tw[2];
        for (int q = 0; q < 2; q++) {
            ig_cu_wreq r = {0};
            r.kind = q == 0 ? IG_W_BN_SCALE : IG_W_BN_SHIFT;
            r.src = -1;
            for (int j = 0; j < 4; j++) r.bn[j] = n->inputs[1 + j];
            r.eps = ig__attr_float(n, "epsilon", 1e-5f);
            r.scale = 1;
            r.dtype = INGOT_DTYPE_FLOAT;
            r.n_out = (int32_t)C;
            r.bytes = (size_t)C * 4;
            tw[q] = weight_tensor(L, &r, rank - 1, dims, st);
            if (tw[q] < 0) goto no_room;
        }
        b = ew_load(&G->e, tw[0], -1);
        c = ew_load(&G->e, tw[1], -1);
        if (b < 0 || c < 0) goto no_room;
        code = IG_EW_MULADD;
        /* the two vectors are used once: free their registers right after */
        dst_reg = ew_alloc_reg(&G->e);
        if (dst_reg < 0 || !ew_op(&G->e, code, a, b, c, 0, 0, dst_reg)) goto no_room;
        for (int i = 0; i < G->e.n_in; i++)
            if (G->e.in[i] == tw[0] || G->e.in[i] == tw[1]) {
                if (G->e.in_reg[i] >= 0) G->e.reg_used[G->e.in_reg[i]] = false;
                G->e.in_reg[i] = -1;
            }
        group_release(L, G, used, n_used);
        G->reg_of_val[G->n_internal] = dst_reg;
        G->val_of_reg[G->n_internal++] = n->outputs[0];
        G->e.result = dst_reg;
        G->cur_value = n->outputs[0];
        return true;
    }
    default:
        if ((code = unary_code(n)) >= 0) {
            OPND(a, n->inputs[0]);
        } else if ((code = binary_code(n)) >= 0) {
            OPND(a, n->inputs[0]);
            OPND(b, n->inputs[1]);
        } else {
            goto no_room;
        }
    }
    group_release(L, G, used, n_used);
    dst_reg = ew_alloc_reg(&G->e);
    if (dst_reg < 0 || !ew_op(&G->e, code, a, b, c, k, k2, dst_reg)) goto no_room;
    if (G->n_internal >= 4) goto no_room;
    G->reg_of_val[G->n_internal] = dst_reg;
    G->val_of_reg[G->n_internal++] = n->outputs[0];
    G->e.result = dst_reg;
    G->cur_value = n->outputs[0];
    return true;
#undef OPND
no_room:
    *G = save;
    return false;
}

static bool same_shape(const lower *L, int32_t v, int32_t w)
{
    const ig_shape *a = &val(L, v)->shape, *b = &val(L, w)->shape;
    if (a->rank != b->rank) return false;
    for (int32_t k = 0; k < a->rank; k++)
        if (a->d[k].n != b->d[k].n) return false;
    return true;
}

static bool value_is_int(const lower *L, int32_t v)
{
    ingot_dtype t = val(L, v)->dtype;
    return !ig__dtype_is_float(t);
}

/* Extend group G forward along single consumers of its current value; then emit it. */
static ingot_status group_extend_emit(lower *L, group *G, int32_t anchor_node)
{
    for (;;) {
        int32_t v = G->cur_value;
        int32_t c = sole_consumer(L, v);
        if (c < 0 || L->done[c] || !is_ew_op(node(L, c)->op) || node(L, c)->folded) break;
        const ig_node *cn = node(L, c);
        if (cn->n_outputs < 1 || cn->outputs[0] < 0 || !same_shape(L, cn->outputs[0], v)) break;
        bool ready = true;
        for (int32_t i = 0; i < cn->n_inputs && ready; i++) {
            int32_t u = cn->inputs[i];
            if (u < 0 || u == v) continue;
            if (is_const(L, u)) continue;
            if (!produced(L, u)) ready = false;
        }
        if (cn->op == IG_OP_batch_normalization) {
            for (int32_t i = 1; i < 5; i++)
                if (!is_const(L, in_id(L, c, i))) ready = false;
            if (cn->n_outputs > 1)
                for (int32_t j = 1; j < cn->n_outputs; j++)
                    if (cn->outputs[j] >= 0 && n_cons(L, cn->outputs[j]) > 0) ready = false;
        }
        if (!ready) break;
        if (!group_add(L, G, c)) break;
        L->done[c] = true;
        L->p->n_fused++;
    }
    /* The output keeps the innermost (contiguous) axis of its main input -- the first input of the
     * output's full shape: channels-last stays channels-last, and a transposed operand (K^T) is written
     * transposed, so the copy streams along one axis and a GEMM downstream takes the transpose for free.
     * Otherwise the output is dense in logical order. */
    int32_t ov = G->cur_value;
    int32_t inner_axis = -1;
    for (int i = 0; i < G->e.n_in && inner_axis < 0; i++) {
        const ig_cu_tensor *t = T(L, G->e.in[i]);
        if (t->rank != val(L, ov)->shape.rank || t->rank < 2) continue;
        bool full = true;
        for (int32_t k = 0; k < t->rank; k++)
            if (t->dims[k] != val(L, ov)->shape.d[k].n) full = false;
        if (!full) continue;
        for (int32_t k = 0; k < t->rank; k++)
            if (t->strides[k] == 1 && t->dims[k] > 1) inner_axis = k;
        if (inner_axis < 0) inner_axis = t->rank - 1;
    }
    int64_t dims[IG_MAX_RANK];
    int32_t rank = value_dims(L, ov, dims);
    G->e.int_math = true;
    for (int32_t m = 0; m < G->n_members; m++) {
        const ig_node *mn = node(L, G->members[m]);
        for (int32_t i = 0; i < mn->n_inputs; i++)
            if (mn->inputs[i] >= 0 && !value_is_int(L, mn->inputs[i])) G->e.int_math = false;
        if (!value_is_int(L, mn->outputs[0])) G->e.int_math = false;
    }
    for (int i = 0; i < G->e.n_in; i++)
        if (ig__dtype_is_float(T(L, G->e.in[i])->dtype)) G->e.int_math = false;
    /* int programs read scalar constants as integers */
    int32_t out = new_dense_inner(L, dev_dtype(L->p, val(L, ov)->dtype), rank, dims, inner_axis);
    if (out < 0) return oom(L);
    L->p->val_tensor[ov] = out;
    return ew_finish(L, anchor_node, NULL, &G->e, out, 0);
}

static bool try_mask_softmax(lower *L, int32_t id, ingot_status *st);
static bool try_residual_into_gemm(lower *L, int32_t id, ingot_status *st);

static ingot_status lower_ew(lower *L, int32_t id)
{
    ingot_status mst;
    if (try_mask_softmax(L, id, &mst) || try_residual_into_gemm(L, id, &mst)) return mst;
    group G;
    memset(&G, 0, sizeof G);
    ew_init(&G.e);
    for (int32_t i = 0; i < node(L, id)->n_inputs; i++) {
        int32_t u = node(L, id)->inputs[i];
        if (u >= 0 && !is_const(L, u) && !produced(L, u))
            return fail_node(L, id, INGOT_ERR_INTERNAL, "input '%s' has no device tensor", val(L, u)->name);
    }
    if (!group_add(L, &G, id))
        return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "does not fit one elementwise program");
    L->done[id] = true;
    return group_extend_emit(L, &G, id);
}

/* ---- convolution --------------------------------------------------------------------------------- */

static void conv_pads(const ig_node *n, int32_t spatial, const int64_t *in, const int64_t *out, const int64_t *k,
                      const int64_t *stride, const int64_t *dil, int64_t *pb, int64_t *pe)
{
    const char *ap = ig__attr_str(n, "auto_pad", "NOTSET");
    const int64_t *pads = NULL;
    int64_t np = 0;
    ig__attr_ints(n, "pads", &pads, &np);
    for (int32_t i = 0; i < spatial; i++) {
        pb[i] = pe[i] = 0;
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            int64_t total = (out[i] - 1) * stride[i] + (k[i] - 1) * dil[i] + 1 - in[i];
            if (total < 0) total = 0;
            pb[i] = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
            pe[i] = total - pb[i];
        } else if (!strcmp(ap, "VALID")) {
            pb[i] = pe[i] = 0;
        } else if (pads && np == 2 * spatial) {
            pb[i] = pads[i];
            pe[i] = pads[i + spatial];
        }
    }
}

/* Does BatchNormalization node bn (inference form) take constant parameters? */
static bool bn_foldable(const lower *L, int32_t bn)
{
    const ig_node *n = node(L, bn);
    if (n->op != IG_OP_batch_normalization || n->n_inputs < 5) return false;
    for (int i = 1; i < 5; i++)
        if (!is_const(L, n->inputs[i])) return false;
    for (int32_t j = 1; j < n->n_outputs; j++)
        if (n->outputs[j] >= 0 && n_cons(L, n->outputs[j]) > 0) return false;
    return !ig__attr_int(n, "training_mode", 0);
}

/* Depthwise convolution (group == C == K, one input channel per group) in channels-last: our own
 * kernel, with BatchNormalization folded and a following Relu or constant Clip fused; cuDNN's
 * channels-last depthwise path is slow. */
static ingot_status lower_dwconv(lower *L, int32_t id, int32_t xt, const int64_t *pb, const int64_t *st,
                                 const int64_t *dl, const int64_t *kk)
{
    const ig_node *n = node(L, id);
    int32_t wv = n->inputs[1], bv = in_id(L, id, 2);
    const ig_value *w = val(L, wv);
    int32_t cur = n->outputs[0], bn = -1, act_node = -1, act = IG_ACT_NONE;
    double lo = 0, hi = 0;
    int32_t c = sole_consumer(L, cur);
    if (c >= 0 && !L->done[c] && bn_foldable(L, c)) {
        bn = c;
        cur = node(L, c)->outputs[0];
        c = sole_consumer(L, cur);
    }
    if (c >= 0 && !L->done[c] && node(L, c)->op == IG_OP_relu) {
        act = IG_ACT_RELU;
        act_node = c;
    } else if (c >= 0 && !L->done[c] && node(L, c)->op == IG_OP_clip) {
        const ig_node *cn = node(L, c);
        lo = -INFINITY;
        hi = INFINITY;
        bool ok = true;
        if (cn->opset < 11) {
            lo = ig__attr_float(cn, "min", -INFINITY);
            hi = ig__attr_float(cn, "max", INFINITY);
        } else {
            if (in_id(L, c, 1) >= 0) ok = ok && const_scalar(L, in_id(L, c, 1), &lo);
            if (in_id(L, c, 2) >= 0) ok = ok && const_scalar(L, in_id(L, c, 2), &hi);
        }
        if (ok) {
            act = IG_ACT_CLIP;
            act_node = c;
        }
    }
    if (act_node >= 0) cur = node(L, act_node)->outputs[0];
    ig_cu_tensor x = *T(L, xt);
    int64_t K = w->shape.d[0].n;
    ig_cu_wreq rw = {0};
    rw.kind = IG_W_CONV_W;
    rw.src = wv;
    rw.bn[0] = rw.bn[1] = rw.bn[2] = rw.bn[3] = -1;
    if (bn >= 0)
        for (int j = 0; j < 4; j++) rw.bn[j] = node(L, bn)->inputs[1 + j];
    rw.eps = bn >= 0 ? ig__attr_float(node(L, bn), "epsilon", 1e-5f) : 0.f;
    rw.scale = 1;
    rw.dtype = x.dtype;
    rw.nhwc = 2;
    rw.n_out = (int32_t)K;
    rw.bytes = (size_t)value_numel(w) * ingot_dtype_size(rw.dtype);
    int64_t wd[1] = {(int64_t)value_numel(w)};
    int32_t wt = weight_tensor(L, &rw, 1, wd, NULL);
    int32_t bt = -1;
    if (bv >= 0 || bn >= 0) {
        ig_cu_wreq rb = rw;
        rb.kind = IG_W_CONV_B;
        rb.src = bv;
        rb.nhwc = 0;
        rb.bytes = (size_t)K * ingot_dtype_size(rb.dtype);
        int64_t bd[1] = {K};
        bt = weight_tensor(L, &rb, 1, bd, NULL);
        if (bt < 0) return oom(L);
    }
    int64_t od[4];
    value_dims(L, n->outputs[0], od);
    int32_t yt = new_dense(L, x.dtype, 4, od, true);
    ig_cu_step *s = wt >= 0 && yt >= 0 ? new_step(L, IG_ST_DWCONV, id, NULL) : NULL;
    if (!s) return oom(L);
    ig_dwconv_args *a = &s->u.dw.args;
    memset(a, 0, sizeof *a);
    const ig_cu_tensor *y = T(L, yt);
    a->dtype = x.dtype;
    a->act = act;
    a->lo = (float)lo;
    a->hi = (float)hi;
    a->n = x.dims[0];
    a->c = x.dims[1];
    a->h = x.dims[2];
    a->w = x.dims[3];
    a->oh = od[2];
    a->ow = od[3];
    for (int q = 0; q < 4; q++) {
        a->xs[q] = x.strides[q];
        a->ys[q] = y->strides[q];
    }
    a->kh = (int32_t)kk[0];
    a->kw = (int32_t)kk[1];
    a->sh = (int32_t)st[0];
    a->sw = (int32_t)st[1];
    a->ph = (int32_t)pb[0];
    a->pw = (int32_t)pb[1];
    a->dh = (int32_t)dl[0];
    a->dw = (int32_t)dl[1];
    s->u.dw.x = xt;
    s->u.dw.w = wt;
    s->u.dw.b = bt;
    s->u.dw.y = yt;
    L->done[id] = true;
    if (bn >= 0) {
        L->done[bn] = true;
        L->p->n_fused++;
    }
    if (act_node >= 0) {
        L->done[act_node] = true;
        L->p->n_fused++;
    }
    L->p->val_tensor[cur] = yt;
    return INGOT_OK;
}

static ingot_status lower_conv(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    int32_t xv = n->inputs[0], wv = in_id(L, id, 1), bv = in_id(L, id, 2), yv = n->outputs[0];
    if (!is_const(L, wv)) return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "the filter must be a constant");
    if (bv >= 0 && !is_const(L, bv))
        return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "the bias must be a constant");
    const ig_value *w = val(L, wv);
    int32_t rank = val(L, xv)->shape.rank;
    if (rank != 4 && rank != 3)
        return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "only 1-D and 2-D convolutions are supported (rank %d)",
                         (int)rank);
    int32_t sp = rank - 2;
    int64_t xin[2], yout[2], kk[2], st[2] = {1, 1}, dl[2] = {1, 1}, pb[2], pe[2];
    for (int32_t i = 0; i < sp; i++) {
        xin[i] = val(L, xv)->shape.d[2 + i].n;
        yout[i] = val(L, yv)->shape.d[2 + i].n;
        kk[i] = w->shape.d[2 + i].n;
    }
    const int64_t *a = NULL;
    int64_t na = 0;
    if (ig__attr_ints(n, "strides", &a, &na) && na == sp)
        for (int32_t i = 0; i < sp; i++) st[i] = a[i];
    if (ig__attr_ints(n, "dilations", &a, &na) && na == sp)
        for (int32_t i = 0; i < sp; i++) dl[i] = a[i];
    conv_pads(n, sp, xin, yout, kk, st, dl, pb, pe);
    int64_t group_n = ig__attr_int(n, "group", 1);

    /* depthwise, channels-last, 2-D: our own kernel */
    if (L->o->nhwc && val(L, xv)->shape.rank == 4 && group_n > 1 && w->shape.d[1].n == 1 &&
        group_n == w->shape.d[0].n && group_n == val(L, xv)->shape.d[1].n &&
        (val(L, xv)->dtype == INGOT_DTYPE_FLOAT || val(L, xv)->dtype == INGOT_DTYPE_FLOAT16)) {
        int32_t dxt = get(L, xv);
        if (dxt < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
        return lower_dwconv(L, id, dxt, pb, st, dl, kk);
    }

    /* the pattern: [BatchNormalization] [Add(residual)] [Relu] */
    int32_t cur = yv, bn = -1, zv = -1, relu_node = -1, add_node = -1;
    int32_t c = sole_consumer(L, cur);
    if (c >= 0 && !L->done[c] && bn_foldable(L, c)) {
        bn = c;
        cur = node(L, c)->outputs[0];
        c = sole_consumer(L, cur);
    }
    if (c >= 0 && !L->done[c] && node(L, c)->op == IG_OP_add && !node(L, c)->folded) {
        const ig_node *an = node(L, c);
        int32_t other = an->inputs[0] == cur ? an->inputs[1] : an->inputs[0];
        int32_t ot = other >= 0 && !is_const(L, other) ? get(L, other) : -1;
        if (an->inputs[0] != an->inputs[1] && ot >= 0 && same_shape(L, other, cur) &&
            same_shape(L, an->outputs[0], cur)) {
            int32_t r = sole_consumer(L, an->outputs[0]);
            /* the residual goes through cuDNN only together with a ReLU (the fused call needs one) */
            if (r >= 0 && !L->done[r] && node(L, r)->op == IG_OP_relu) {
                add_node = c;
                zv = other;
                relu_node = r;
                cur = node(L, r)->outputs[0];
            }
        }
    }
    if (relu_node < 0 && add_node < 0 && c >= 0 && !L->done[c] && node(L, c)->op == IG_OP_relu) {
        relu_node = c;
        cur = node(L, c)->outputs[0];
    }
    bool relu = relu_node >= 0;

    /* the input, channels-last (and padded when the padding is asymmetric: cuDNN pads symmetrically) */
    int32_t xt = get(L, xv);
    if (xt < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    ig_cu_tensor x = *T(L, xt);
    if (rank == 3) { /* [N, C, L] as [N, C, 1, L] */
        int64_t d4[4] = {x.dims[0], x.dims[1], 1, x.dims[2]}, s4[4] = {x.strides[0], x.strides[1], 0, x.strides[2]};
        xt = new_tensor(L, x.buf, x.dtype, 4, d4, s4, x.offset);
        if (xt < 0) return oom(L);
        x = *T(L, xt);
        xin[1] = xin[0];
        yout[1] = yout[0];
        kk[1] = kk[0];
        st[1] = st[0];
        dl[1] = dl[0];
        pb[1] = pb[0];
        pe[1] = pe[0];
        xin[0] = yout[0] = kk[0] = st[0] = dl[0] = 1;
        pb[0] = pe[0] = 0;
    }
    bool want_nhwc = L->o->nhwc != 0;
    if (pb[0] != pe[0] || pb[1] != pe[1]) {
        int64_t pd[4] = {x.dims[0], x.dims[1], x.dims[2] + pb[0] + pe[0], x.dims[3] + pb[1] + pe[1]};
        int32_t padded = new_dense(L, x.dtype, 4, pd, want_nhwc);
        if (padded < 0) return oom(L);
        ig_cu_step *fs = new_step(L, IG_ST_FILL, id, "zero padding");
        if (!fs) return oom(L);
        fs->u.fill.y = padded;
        fs->u.fill.bits = 0;
        ig_cu_tensor in = *T(L, padded);
        in.dims[2] = x.dims[2];
        in.dims[3] = x.dims[3];
        in.offset += pb[0] * in.strides[2] + pb[1] * in.strides[3];
        int32_t inner = new_tensor(L, in.buf, in.dtype, 4, in.dims, in.strides, in.offset);
        if (inner < 0) return oom(L);
        ingot_status s2 = emit_copy(L, id, "asymmetric padding", xt, inner, 0);
        if (s2 != INGOT_OK) return s2;
        xt = padded;
        x = *T(L, xt);
        pb[0] = pe[0] = pb[1] = pe[1] = 0;
    }
    if (want_nhwc && !tensor_nhwc(&x)) {
        if (xv >= 0 && L->p->val_nhwc[xv] >= 0 && rank == 4 && xt == L->p->val_tensor[xv]) {
            xt = L->p->val_nhwc[xv];
        } else {
            bool cache = rank == 4 && xt == L->p->val_tensor[xv];
            xt = materialize(L, id, xt, true, "to channels-last");
            if (xt < 0) return xt == -2 ? L->err->status : oom(L);
            if (cache) L->p->val_nhwc[xv] = xt;
        }
    } else if (!want_nhwc && !ig__cu_tensor_contig(&x)) {
        xt = ensure_contig(L, id, xt);
        if (xt < 0) return xt == -2 ? L->err->status : oom(L);
    }

    /* filter and bias with BatchNormalization folded in */
    ig_cu_wreq rw = {0}, rb = {0};
    rw.kind = IG_W_CONV_W;
    rw.src = wv;
    rw.bn[0] = rw.bn[1] = rw.bn[2] = rw.bn[3] = -1;
    if (bn >= 0)
        for (int j = 0; j < 4; j++) rw.bn[j] = node(L, bn)->inputs[1 + j];
    rw.eps = bn >= 0 ? ig__attr_float(node(L, bn), "epsilon", 1e-5f) : 0.f;
    rw.scale = 1;
    rw.dtype = dev_dtype(L->p, w->dtype);
    rw.nhwc = want_nhwc;
    int64_t K = w->shape.d[0].n;
    rw.n_out = (int32_t)K;
    rw.bytes = (size_t)value_numel(w) * ingot_dtype_size(rw.dtype);
    int64_t wd[4] = {K, w->shape.d[1].n, rank == 4 ? w->shape.d[2].n : 1,
                     rank == 4 ? w->shape.d[3].n : w->shape.d[2].n};
    int32_t wt = weight_tensor(L, &rw, 4, wd, NULL);
    if (wt < 0) return oom(L);
    rb = rw;
    rb.kind = IG_W_CONV_B;
    rb.src = bv;
    rb.nhwc = 0;
    rb.bytes = (size_t)K * ingot_dtype_size(rb.dtype);
    bool has_bias = bv >= 0 || bn >= 0;
    int32_t bt = -1;
    if (has_bias || relu) {
        int64_t bd[1] = {K};
        bt = weight_tensor(L, &rb, 1, bd, NULL);
        if (bt < 0) return oom(L);
    }

    /* the output (the conv's own output when bias/residual follow in an elementwise program) */
    int64_t yd[4] = {x.dims[0], K, yout[0], yout[1]};
    int32_t yt = new_dense(L, x.dtype, 4, yd, want_nhwc);
    if (yt < 0) return oom(L);

    /* 1x1, stride 1, channels-last: a GEMM [N*H*W, C] x [C, K] through cuBLASLt, with bias, residual
     * (as C, beta 1) and ReLU in its epilogue -- cuBLASLt's kernels beat cuDNN's here at every batch */
    int32_t zt0 = zv >= 0 ? L->p->val_tensor[zv] : -1;
    if (want_nhwc && kk[0] == 1 && kk[1] == 1 && st[0] == 1 && st[1] == 1 && pb[0] == 0 && pb[1] == 0 && pe[0] == 0 &&
        pe[1] == 0 && group_n == 1 && tensor_nhwc(T(L, xt)) && (zt0 < 0 || tensor_nhwc(T(L, zt0)))) {
        ig_cu_tensor xx = *T(L, xt);
        int64_t M = yd[0] * yd[2] * yd[3], C = xx.dims[1];
        int64_t ad[2] = {M, C}, as[2] = {C, 1}, bd2[2] = {C, K}, bs2[2] = {1, C}, dd[2] = {M, K}, ds[2] = {K, 1};
        ig_cu_gemm g;
        memset(&g, 0, sizeof g);
        g.a = new_tensor(L, xx.buf, xx.dtype, 2, ad, as, xx.offset);
        g.b = new_tensor(L, T(L, wt)->buf, T(L, wt)->dtype, 2, bd2, bs2, 0);
        g.d = new_tensor(L, T(L, yt)->buf, T(L, yt)->dtype, 2, dd, ds, 0);
        g.c = zt0 >= 0 ? new_tensor(L, T(L, zt0)->buf, T(L, zt0)->dtype, 2, dd, ds, T(L, zt0)->offset) : -1;
        if (g.a < 0 || g.b < 0 || g.d < 0 || (zt0 >= 0 && g.c < 0)) return oom(L);
        g.bias = has_bias ? bt : -1;
        g.alpha = 1.f;
        g.beta = zt0 >= 0 ? 1.f : 0.f;
        g.epi = relu ? IG_EPI_RELU : IG_EPI_NONE;
        g.m = M;
        g.n = K;
        g.k = C;
        g.batch = 1;
        g.a_trans = 0;
        g.lda = C;
        g.b_trans = 1;
        g.ldb = C;
        g.ldc = g.ldd = K;
        g.scratch = -1;
        ig_cu_step *gs = new_step(L, IG_ST_GEMM, id, NULL);
        if (!gs) return oom(L);
        gs->u.gemm = g;
        L->done[id] = true;
        if (bn >= 0) {
            L->done[bn] = true;
            L->p->n_fused++;
        }
        if (add_node >= 0) {
            L->done[add_node] = true;
            L->p->n_fused++;
        }
        if (relu_node >= 0) {
            L->done[relu_node] = true;
            L->p->n_fused++;
        }
        L->p->val_tensor[cur] = yt;
        return INGOT_OK;
    }

    ig_cu_step *s = new_step(L, IG_ST_CONV, id, NULL);
    if (!s) return oom(L);
    ig_cu_conv *cv = &s->u.conv;
    cv->x = xt;
    cv->w = wt;
    cv->y = yt;
    cv->b = relu ? bt : -1;
    cv->z = -1;
    cv->relu = relu;
    cv->pad[0] = (int32_t)pb[0];
    cv->pad[1] = (int32_t)pb[1];
    cv->stride[0] = (int32_t)st[0];
    cv->stride[1] = (int32_t)st[1];
    cv->dil[0] = (int32_t)dl[0];
    cv->dil[1] = (int32_t)dl[1];
    cv->group = (int32_t)group_n;
    cv->scratch = -1;
    if (zv >= 0) {
        int32_t zt = L->p->val_tensor[zv];
        ig_cu_tensor z = *T(L, zt);
        bool ok = want_nhwc ? tensor_nhwc(&z) : ig__cu_tensor_contig(&z);
        if (!ok) {
            if (want_nhwc && L->p->val_nhwc[zv] >= 0)
                zt = L->p->val_nhwc[zv];
            else {
                /* materialise after the conv step was created: move the conv step behind the copy */
                ig_cu_step conv_copy = *s;
                L->p->n_steps--;
                int32_t m = materialize(L, id, zt, want_nhwc, "residual to channels-last");
                if (m < 0) return m == -2 ? L->err->status : oom(L);
                zt = m;
                ig_cu_step *s2 = new_step(L, IG_ST_CONV, id, NULL);
                if (!s2) return oom(L);
                *s2 = conv_copy;
                s = s2;
                cv = &s->u.conv;
            }
        }
        cv->z = zt;
    }
    L->done[id] = true;
    if (bn >= 0) {
        L->done[bn] = true;
        L->p->n_fused++;
    }
    if (add_node >= 0) {
        L->done[add_node] = true;
        L->p->n_fused++;
    }
    if (relu_node >= 0) {
        L->done[relu_node] = true;
        L->p->n_fused++;
    }

    /* ReLU fused: the conv's output is the chain's output */
    int32_t out_t = yt;
    if (rank == 3) {
        ig_cu_tensor y = *T(L, yt);
        int64_t d3[3] = {y.dims[0], y.dims[1], y.dims[3]}, s3[3] = {y.strides[0], y.strides[1], y.strides[3]};
        out_t = new_tensor(L, y.buf, y.dtype, 3, d3, s3, y.offset);
        if (out_t < 0) return oom(L);
    }
    if (relu || !has_bias) {
        L->p->val_tensor[cur] = out_t;
        if (!relu && has_bias) return INGOT_OK; /* unreachable */
        return INGOT_OK;
    }
    /* No ReLU: bias (+ what follows elementwise) as one program over the conv's output */
    group G;
    memset(&G, 0, sizeof G);
    ew_init(&G.e);
    G.members[G.n_members++] = id; /* the conv's output is read once, here */
    int ry = ew_load(&G.e, out_t, -1);
    int64_t bd[IG_MAX_RANK], bs[IG_MAX_RANK];
    int32_t brank = rank - 1;
    bd[0] = K;
    bs[0] = 1;
    for (int32_t q = 1; q < brank; q++) {
        bd[q] = 1;
        bs[q] = 0;
    }
    int32_t bview = new_tensor(L, T(L, bt)->buf, T(L, bt)->dtype, brank, bd, bs, 0);
    if (bview < 0) return oom(L);
    int rbias = ew_load(&G.e, bview, -1);
    int dst = ry;
    if (ry < 0 || rbias < 0 || !ew_op(&G.e, IG_EW_ADD, ry, rbias, IG_REF_NONE, 0, 0, dst)) return oom(L);
    G.e.reg_used[rbias] = false;
    for (int i = 0; i < G.e.n_in; i++) G.e.in_reg[i] = -1;
    G.e.result = dst;
    G.reg_of_val[0] = dst;
    G.val_of_reg[0] = cur;
    G.n_internal = 1;
    G.cur_value = cur;
    return group_extend_emit(L, &G, id);
}

/* ---- matrix products ------------------------------------------------------------------------------- */

/* Fill the GEMM's matrix description from the operand views; false when a view does not fit
 * (the caller copies that operand and retries). */
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
    /* several batch dims (not foldable into M, tried above): copy the operand whose batch dims do not run evenly (d is
     * dense: it always does) */
    bool a_even = true;
    for (int32_t k = 1; k < n; k++)
        if (sa[k - 1] != sa[k] * bd[k]) a_even = false;
    return a_even ? 2 : 1;
}

static bool is_gelu_chain(lower *L, int32_t x, int32_t *nodes, int32_t *out)
{
    /* x -> Div(x, sqrt2) | Mul(x, 1/sqrt2) -> Erf -> Add(1) -> Mul(x, .) -> Mul(., 0.5) (either order) */
    if (L->is_output[x] || n_cons(L, x) != 2) return false;
    int32_t c0 = L->cons[L->cons_off[x]], c1 = L->cons[L->cons_off[x] + 1];
    for (int swap = 0; swap < 2; swap++) {
        int32_t d = swap ? c1 : c0, m = swap ? c0 : c1;
        const ig_node *dn = node(L, d), *mn = node(L, m);
        double k;
        bool scale_ok = false;
        if (dn->op == IG_OP_div && dn->inputs[0] == x && const_scalar(L, dn->inputs[1], &k))
            scale_ok = fabs(k - 1.4142135623730951) < 1e-3;
        else if (dn->op == IG_OP_mul && const_scalar(L, dn->inputs[dn->inputs[0] == x ? 1 : 0], &k))
            scale_ok = fabs(k - 0.7071067811865476) < 1e-3;
        if (!scale_ok) continue;
        int32_t e = sole_consumer(L, dn->outputs[0]);
        if (e < 0 || node(L, e)->op != IG_OP_erf) continue;
        int32_t a = sole_consumer(L, node(L, e)->outputs[0]);
        if (a < 0 || node(L, a)->op != IG_OP_add) continue;
        const ig_node *an = node(L, a);
        int32_t one = an->inputs[0] == node(L, e)->outputs[0] ? an->inputs[1] : an->inputs[0];
        if (!const_scalar(L, one, &k) || k != 1.0) continue;
        int32_t mm = sole_consumer(L, an->outputs[0]);
        /* (x * 0.5) * (1 + erf) or x * (1 + erf) then * 0.5 */
        if (mm == m && mn->op == IG_OP_mul) {
            int32_t h = sole_consumer(L, mn->outputs[0]);
            if (h < 0 || node(L, h)->op != IG_OP_mul) continue;
            const ig_node *hn = node(L, h);
            int32_t half = hn->inputs[0] == mn->outputs[0] ? hn->inputs[1] : hn->inputs[0];
            if (!const_scalar(L, half, &k) || k != 0.5) continue;
            nodes[0] = d;
            nodes[1] = e;
            nodes[2] = a;
            nodes[3] = m;
            nodes[4] = h;
            *out = hn->outputs[0];
            return true;
        }
        if (mn->op == IG_OP_mul && mm >= 0 && node(L, mm)->op == IG_OP_mul) {
            int32_t half = mn->inputs[0] == x ? mn->inputs[1] : mn->inputs[0];
            if (!const_scalar(L, half, &k) || k != 0.5) continue;
            const ig_node *fn = node(L, mm);
            if (!((fn->inputs[0] == mn->outputs[0] && fn->inputs[1] == an->outputs[0]) ||
                  (fn->inputs[1] == mn->outputs[0] && fn->inputs[0] == an->outputs[0])))
                continue;
            nodes[0] = d;
            nodes[1] = e;
            nodes[2] = a;
            nodes[3] = m;
            nodes[4] = mm;
            *out = fn->outputs[0];
            return true;
        }
    }
    return false;
}

static int32_t transpose_last2(lower *L, int32_t t)
{
    ig_cu_tensor x = *T(L, t);
    int32_t r = x.rank;
    int64_t d = x.dims[r - 1], s = x.strides[r - 1];
    x.dims[r - 1] = x.dims[r - 2];
    x.strides[r - 1] = x.strides[r - 2];
    x.dims[r - 2] = d;
    x.strides[r - 2] = s;
    return new_tensor(L, x.buf, x.dtype, r, x.dims, x.strides, x.offset);
}

static int32_t unsqueeze_view(lower *L, int32_t t, int32_t at)
{
    ig_cu_tensor x = *T(L, t);
    for (int32_t k = x.rank; k > at; k--) {
        x.dims[k] = x.dims[k - 1];
        x.strides[k] = x.strides[k - 1];
    }
    x.dims[at] = 1;
    x.strides[at] = 0;
    x.rank++;
    return new_tensor(L, x.buf, x.dtype, x.rank, x.dims, x.strides, x.offset);
}

/* A dense copy of GEMM operand t that keeps its contiguous axis: row-major when its last dim is the
 * contiguous one, else column-major (a dense buffer of the transposed dims, seen through a transposed
 * view), so the copy reads and writes along the same axis and cuBLASLt takes the transpose. */
static int32_t materialize_matrix(lower *L, int32_t node_id, int32_t t)
{
    ig_cu_tensor x = *T(L, t);
    int32_t r = x.rank;
    if (r < 2 || x.strides[r - 1] == 1 || x.strides[r - 2] != 1)
        return materialize(L, node_id, t, false, "GEMM operand copy");
    int64_t dd[IG_MAX_RANK];
    for (int32_t k = 0; k < r; k++) dd[k] = x.dims[k];
    dd[r - 1] = x.dims[r - 2];
    dd[r - 2] = x.dims[r - 1];
    int32_t d = new_dense(L, x.dtype, r, dd, false);
    if (d < 0) return -1;
    int32_t v = transpose_last2(L, d);
    if (v < 0) return -1;
    if (emit_copy(L, node_id, "GEMM operand copy", t, v, 0) != INGOT_OK) return -2;
    return v;
}

/* ---- GEMMs over rows in memory order ----
 * A lazy A whose rows are a permutation of one dense run of memory rows (ViT's attention output read as
 * [S*B, E] while it lies in [B, S] order) multiplies as it lies: the GEMM runs over the rows in memory
 * order, and its output is the same permutation of a dense [M, N] -- lazy too, so that the Reshape and
 * Transpose after it (ViT's way back to [B, S, E]) are plain views and neither side is copied. */
typedef struct row_order {
    int32_t v;  /* A's value */
    int32_t nr; /* A's fine row dims, in logical order: */
    int64_t dims[IG_MAX_RANK];
    int32_t pos[IG_MAX_RANK]; /* each one's place in memory order (0: outermost) */
    int32_t rank;             /* A's logical rank, and the fine dims of each of its dims: */
    int8_t n[IG_MAX_RANK];
} row_order;

/* The [M, K] memory-order matrix of lazy value v and its row order, or -1 when v is not such a value. */
static int32_t rows_in_memory_order(lower *L, int32_t v, row_order *ro)
{
    if (v < 0 || L->p->val_tensor[v] >= 0 || !L->lazy[v]) return -1;
    const lazy_view *z = L->lazy[v];
    const ig_cu_tensor *f = T(L, z->fine);
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
    return new_tensor(L, f->buf, f->dtype, 2, d2, s2, f->offset);
}

/* Output value v of a GEMM run over rows in the order ro: dense D [M, N] seen in A's row order. */
static ingot_status set_rows_permuted(lower *L, int32_t node_id, int32_t v, int32_t d, const row_order *ro)
{
    const ig_cu_tensor D = *T(L, d);
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

static ingot_status lower_gemm_common(lower *L, int32_t id, int32_t at, int32_t bt, int32_t cv_gemm, float alpha,
                                      float beta, bool no_epi, const row_order *ro)
{
    const ig_node *n = node(L, id);
    int32_t yv = n->outputs[0];
    const ig_value *y = val(L, yv);
    int32_t cur = yv, bias_t = -1, c_t = -1, epi = IG_EPI_NONE;
    int32_t claimed[8], n_claimed = 0;
    float cbeta = 0.f;
    int64_t N = y->shape.rank ? y->shape.d[y->shape.rank - 1].n : 1;
    ingot_dtype dt = T(L, at)->dtype;

    /* Gemm's own C */
    if (cv_gemm >= 0) {
        const ig_value *cval = val(L, cv_gemm);
        bool vec = cval->shape.rank >= 1 && cval->shape.d[cval->shape.rank - 1].n == N && value_numel(cval) == N;
        if (vec && is_const(L, cv_gemm)) {
            int32_t w = const_tensor(L, cv_gemm, dt, beta);
            if (w < 0) return oom(L);
            bias_t = w;
        } else {
            /* [M, N] (or anything broadcasting to it): a dense copy as C */
            int64_t dd[IG_MAX_RANK];
            int32_t rr = value_dims(L, yv, dd);
            int32_t ct = get(L, cv_gemm);
            if (ct < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "C has no device tensor");
            int32_t dense = new_dense(L, dt, rr, dd, false);
            if (dense < 0) return oom(L);
            ingot_status s2 = emit_copy(L, id, "Gemm C broadcast", ct, dense, 0);
            if (s2 != INGOT_OK) return s2;
            c_t = dense;
            cbeta = beta;
            if (ro) { /* C lies in the logical row order: A must too */
                at = get(L, ro->v);
                if (at < 0) return L->err->status ? L->err->status : oom(L);
                ro = NULL;
            }
        }
    }
    /* [Add(bias)] */
    int32_t c = no_epi ? -1 : sole_consumer(L, cur);
    if (bias_t < 0 && c_t < 0 && c >= 0 && !L->done[c] && node(L, c)->op == IG_OP_add) {
        const ig_node *an = node(L, c);
        int32_t other = an->inputs[0] == cur ? an->inputs[1] : an->inputs[0];
        if (other >= 0 && is_const(L, other) && value_numel(val(L, other)) == N && val(L, other)->shape.rank >= 1 &&
            val(L, other)->shape.d[val(L, other)->shape.rank - 1].n == N && same_shape(L, an->outputs[0], cur)) {
            bias_t = const_tensor(L, other, dt, 1.f);
            if (bias_t < 0) return oom(L);
            claimed[n_claimed++] = c;
            cur = an->outputs[0];
            c = sole_consumer(L, cur);
        }
    }
    /* [Add(residual)] (in the logical row order: not for rows in memory order) */
    if (!ro && c_t < 0 && c >= 0 && !L->done[c] && node(L, c)->op == IG_OP_add) {
        const ig_node *an = node(L, c);
        int32_t other = an->inputs[0] == cur ? an->inputs[1] : an->inputs[0];
        int32_t ot = other >= 0 && !is_const(L, other) ? get(L, other) : -1;
        if (an->inputs[0] != an->inputs[1] && ot >= 0 && same_shape(L, other, cur) && ig__cu_tensor_contig(T(L, ot)) &&
            T(L, ot)->dtype == dt) {
            c_t = ot;
            cbeta = 1.f;
            claimed[n_claimed++] = c;
            cur = an->outputs[0];
            c = sole_consumer(L, cur);
        }
    }
    /* [Relu | GELU] */
    int32_t gelu_nodes[5], gelu_out;
    if (c >= 0 && !L->done[c] && node(L, c)->op == IG_OP_relu) {
        epi = IG_EPI_RELU;
        claimed[n_claimed++] = c;
        cur = node(L, c)->outputs[0];
    } else if (L->o->gelu_epilogue && L->p->fdt == INGOT_DTYPE_FLOAT16 &&
               is_gelu_chain(L, cur, gelu_nodes, &gelu_out)) {
        epi = IG_EPI_GELU;
        for (int i = 0; i < 5; i++) claimed[n_claimed++] = gelu_nodes[i];
        cur = gelu_out;
    } else if (c >= 0 && !L->done[c] && node(L, c)->op == IG_OP_gelu && L->o->gelu_epilogue &&
               L->p->fdt == INGOT_DTYPE_FLOAT16) {
        epi = IG_EPI_GELU;
        claimed[n_claimed++] = c;
        cur = node(L, c)->outputs[0];
    }

    /* operands: 1-D promotion, batch broadcast, layouts */
    ig_cu_gemm g;
    memset(&g, 0, sizeof g);
    g.alpha = alpha;
    g.beta = cbeta;
    g.epi = epi;
    g.scratch = -1;
    bool found = false;
    for (int attempt = 0; attempt < 3 && !found; attempt++) {
        int32_t a2 = at, b2 = bt;
        if (T(L, a2)->rank == 1) a2 = unsqueeze_view(L, a2, 0);
        if (T(L, b2)->rank == 1) b2 = unsqueeze_view(L, b2, 1);
        if (a2 < 0 || b2 < 0) return oom(L);
        mat A = mat_of(T(L, a2)), B = mat_of(T(L, b2));
        g.m = A.dims[A.rank - 2];
        g.k = A.dims[A.rank - 1];
        g.n = B.dims[B.rank - 1];
        if (B.dims[B.rank - 2] != g.k)
            return fail_node(L, id, INGOT_ERR_INTERNAL, "inner dims %" PRId64 " and %" PRId64 " differ", g.k,
                             B.dims[B.rank - 2]);
        bool oka = mat_layout(&A, &g.lda, &g.a_trans), okb = mat_layout(&B, &g.ldb, &g.b_trans);
        if (!oka || !okb) {
            if (!oka) at = materialize_matrix(L, id, at);
            if (!okb) bt = materialize_matrix(L, id, bt);
            if (at < 0 || bt < 0) return L->err->status ? L->err->status : oom(L);
            continue;
        }
        /* D: dense [batch..., M, N] */
        int32_t nb = A.rank - 2 > B.rank - 2 ? A.rank - 2 : B.rank - 2;
        int64_t dd[IG_MAX_RANK];
        for (int32_t k = 0; k < nb; k++) {
            int32_t ka = k - (nb - (A.rank - 2)), kb = k - (nb - (B.rank - 2));
            int64_t da = ka >= 0 ? A.dims[ka] : 1, db = kb >= 0 ? B.dims[kb] : 1;
            dd[k] = da > db ? da : db;
        }
        dd[nb] = g.m;
        dd[nb + 1] = g.n;
        mat D;
        D.rank = nb + 2;
        for (int32_t k = 0; k < D.rank; k++) D.dims[k] = dd[k];
        contig_strides(D.rank, D.dims, D.strides);
        g.ldd = g.n;
        int r = gemm_batch(&A, &B, &D, nb, &g);
        if (r == 1) {
            at = materialize_matrix(L, id, at);
            if (at < 0) return L->err->status ? L->err->status : oom(L);
            continue;
        }
        if (r == 2) {
            bt = materialize_matrix(L, id, bt);
            if (bt < 0) return L->err->status ? L->err->status : oom(L);
            continue;
        }
        g.a = a2;
        g.b = b2;
        found = true;
    }
    if (!found) return fail_node(L, id, INGOT_ERR_INTERNAL, "no GEMM layout found for the operands' strides");
    g.ldc = g.ldd;
    g.sc = g.sd;
    int64_t od[IG_MAX_RANK];
    int32_t orank = ro ? 2 : value_dims(L, cur, od);
    if (ro) {
        od[0] = g.m;
        od[1] = g.n;
    }
    int32_t dt_out = new_dense(L, dt, orank, od, false);
    if (dt_out < 0) return oom(L);
    g.d = dt_out;
    g.bias = bias_t;
    g.c = c_t;
    if (c_t >= 0 && cbeta == 0.f) g.c = -1;
    ig_cu_step *s = new_step(L, IG_ST_GEMM, id, NULL);
    if (!s) return oom(L);
    s->u.gemm = g;
    L->done[id] = true;
    for (int i = 0; i < n_claimed; i++) {
        L->done[claimed[i]] = true;
        L->p->n_fused++;
    }
    if (ro) return set_rows_permuted(L, id, cur, dt_out, ro);
    L->p->val_tensor[cur] = dt_out;
    return INGOT_OK;
}

/* A GEMM's A operand: rows in memory order when A is such a lazy value and B a plain matrix. */
static int32_t gemm_a(lower *L, int32_t av, int32_t bt, bool trans_a, row_order *ro, const row_order **use)
{
    *use = NULL;
    if (!trans_a && bt >= 0 && T(L, bt)->rank == 2) {
        int32_t at = rows_in_memory_order(L, av, ro);
        if (at >= 0) {
            *use = ro;
            return at;
        }
    }
    return get(L, av);
}

static bool is_view_node(const ig_node *n)
{
    switch (n->op) {
    case IG_OP_reshape:
    case IG_OP_flatten:
    case IG_OP_squeeze:
    case IG_OP_unsqueeze:
    case IG_OP_transpose:
    case IG_OP_identity: return true;
    default: return false;
    }
}

/* Does step k read or write a tensor of buffer buf? */
static bool step_touches(const lower *L, int32_t k, int32_t buf)
{
    int32_t ids[8], m = ig__cu_step_tensors(&L->p->steps[k], ids);
    for (int i = 0; i < m; i++)
        if (L->p->tensors[ids[i]].buf == buf) return true;
    return false;
}

/* Add(x, y) where y is a GEMM's whole output seen through views in the GEMM's own order (ViT: the out-
 * projection run over its rows' memory order, then Reshape and Transpose back to [B, S, E]) and read by
 * nothing else: x joins the GEMM's epilogue as C with beta 1, as a residual that consumes the GEMM
 * directly does in lower_gemm_common. The GEMM is the last step touching y's buffer, and no step after
 * it touches x's, so x is complete when the GEMM runs. */
static bool try_residual_into_gemm(lower *L, int32_t id, ingot_status *st)
{
    const ig_node *n = node(L, id);
    if (n->op != IG_OP_add || n->n_inputs != 2 || n->inputs[0] == n->inputs[1]) return false;
    for (int side = 0; side < 2; side++) {
        int32_t yv = n->inputs[side], xv = n->inputs[1 - side];
        if (is_const(L, xv) || is_const(L, yv) || !same_shape(L, xv, yv) || !same_shape(L, n->outputs[0], yv)) continue;
        if (L->p->val_tensor[xv] < 0 || L->p->val_tensor[yv] < 0) continue;
        bool only_views = true; /* every value from the GEMM to y read once, by a view or this Add */
        for (int32_t w = yv;;) {
            if (L->is_output[w] || n_cons(L, w) != 1) {
                only_views = false;
                break;
            }
            int32_t pn = val(L, w)->producer;
            if (pn < 0 || !is_view_node(node(L, pn))) break;
            w = node(L, pn)->inputs[0];
        }
        if (!only_views) continue;
        const ig_cu_tensor *X = T(L, L->p->val_tensor[xv]), *Y = T(L, L->p->val_tensor[yv]);
        if (!ig__cu_tensor_contig(X) || !ig__cu_tensor_contig(Y) || X->dtype != Y->dtype || X->buf == Y->buf) continue;
        int32_t last = L->p->n_steps - 1; /* the last step touching y's buffer */
        while (last >= 0 && !step_touches(L, last, Y->buf)) last--;
        if (last < 0 || L->p->steps[last].kind != IG_ST_GEMM) continue;
        ig_cu_gemm *g = &L->p->steps[last].u.gemm;
        const ig_cu_tensor *D = T(L, g->d);
        if (D->buf != Y->buf || D->offset != Y->offset || g->c >= 0 || g->epi != IG_EPI_NONE || g->batch > 1 ||
            g->ldd != g->n || (int64_t)numel_of(Y->rank, Y->dims) != g->m * g->n)
            continue;
        bool x_done = true; /* no step after the GEMM touches x's buffer */
        for (int32_t k = last + 1; k < L->p->n_steps && x_done; k++) x_done = !step_touches(L, k, X->buf);
        if (!x_done) continue;
        g->c = L->p->val_tensor[xv];
        g->beta = 1.f;
        g->ldc = g->ldd;
        g->sc = g->sd;
        L->p->val_tensor[n->outputs[0]] = L->p->val_tensor[yv];
        L->done[id] = true;
        L->p->n_fused++;
        *st = INGOT_OK;
        return true;
    }
    return false;
}

static ingot_status lower_matmul(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    row_order ro;
    const row_order *use;
    int32_t bt = get(L, n->inputs[1]), at = gemm_a(L, n->inputs[0], bt, false, &ro, &use);
    if (at < 0 || bt < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "operands have no device tensors");
    if (T(L, at)->dtype != T(L, bt)->dtype || !ig__dtype_is_float(T(L, at)->dtype) ||
        T(L, at)->dtype == INGOT_DTYPE_DOUBLE)
        return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "operands of types %s and %s",
                         ingot_dtype_name(T(L, at)->dtype), ingot_dtype_name(T(L, bt)->dtype));
    return lower_gemm_common(L, id, at, bt, -1, 1.f, 0.f, false, use);
}

static ingot_status lower_gemm(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    row_order ro;
    const row_order *use;
    const bool ta = ig__attr_int(n, "transA", 0) != 0;
    int32_t bt = get(L, n->inputs[1]), at = gemm_a(L, n->inputs[0], bt, ta, &ro, &use);
    if (at < 0 || bt < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "operands have no device tensors");
    if (T(L, at)->dtype != T(L, bt)->dtype || !ig__dtype_is_float(T(L, at)->dtype) ||
        T(L, at)->dtype == INGOT_DTYPE_DOUBLE)
        return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "operands of types %s and %s",
                         ingot_dtype_name(T(L, at)->dtype), ingot_dtype_name(T(L, bt)->dtype));
    if (ta) at = transpose_last2(L, at);
    if (ig__attr_int(n, "transB", 0)) bt = transpose_last2(L, bt);
    if (at < 0 || bt < 0) return oom(L);
    float alpha = ig__attr_float(n, "alpha", 1.f), beta = ig__attr_float(n, "beta", 1.f);
    int32_t cv = in_id(L, id, 2);
    return lower_gemm_common(L, id, at, bt, cv, alpha, beta, false, use);
}

/* ---- other ops ----------------------------------------------------------------------------------------- */

/* Softmax followed by Where(IsNaN(y), 0, y) (exporters guard fully masked rows so): fold the guard
 * into the softmax step. */
static void softmax_nan_fold(lower *L, ig_cu_step *step, int32_t sm_out, int32_t yt)
{
    if (L->is_output[sm_out] || n_cons(L, sm_out) != 2) return;
    int32_t c0 = L->cons[L->cons_off[sm_out]], c1 = L->cons[L->cons_off[sm_out] + 1];
    for (int sw = 0; sw < 2; sw++) {
        int32_t isn = sw ? c1 : c0, wh = sw ? c0 : c1;
        const ig_node *in = node(L, isn), *w = node(L, wh);
        if (in->op != IG_OP_is_nan || w->op != IG_OP_where || L->done[isn] || L->done[wh]) continue;
        if (sole_consumer(L, in->outputs[0]) != wh || w->inputs[0] != in->outputs[0] || w->inputs[2] != sm_out)
            continue;
        double z;
        if (!const_scalar(L, w->inputs[1], &z) || z != 0.0) continue;
        step->u.softmax.args.zero_nan = 1;
        L->done[isn] = L->done[wh] = true;
        L->p->n_fused += 2;
        L->p->val_tensor[w->outputs[0]] = yt;
        return;
    }
}

static ingot_status lower_softmax(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    int32_t xt = ensure_contig(L, id, get(L, n->inputs[0]));
    if (xt < 0) return xt == -2 ? L->err->status : oom(L);
    ig_cu_tensor x = *T(L, xt);
    int32_t rank = x.rank;
    int64_t axis = ig__attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
    int32_t ax = norm_axis(axis, rank);
    if (rank == 0) ax = 0;
    int64_t rows = 1, cols = 1, inner = 1;
    if (n->opset < 13) {
        for (int32_t k = 0; k < ax; k++) rows *= x.dims[k];
        for (int32_t k = ax; k < rank; k++) cols *= x.dims[k];
    } else {
        for (int32_t k = 0; k < ax; k++) rows *= x.dims[k];
        cols = rank ? x.dims[ax] : 1;
        for (int32_t k = ax + 1; k < rank; k++) inner *= x.dims[k];
    }
    int32_t yt = new_dense(L, x.dtype, rank, x.dims, false);
    if (yt < 0) return oom(L);
    ig_cu_step *s = new_step(L, IG_ST_SOFTMAX, id, NULL);
    if (!s) return oom(L);
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
    L->done[id] = true;
    softmax_nan_fold(L, s, n->outputs[0], yt);
    return INGOT_OK;
}

static ingot_status lower_layernorm(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    for (int32_t j = 1; j < n->n_outputs; j++)
        if (n->outputs[j] >= 0 && n_cons(L, n->outputs[j]) + L->is_output[n->outputs[j]] > 0)
            return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "the Mean/InvStdDev outputs are not supported");
    int32_t xt = ensure_contig(L, id, get(L, n->inputs[0]));
    if (xt < 0) return xt == -2 ? L->err->status : oom(L);
    ig_cu_tensor x = *T(L, xt);
    int32_t ax = norm_axis(ig__attr_int(n, "axis", -1), x.rank);
    int64_t rows = 1, cols = 1;
    for (int32_t k = 0; k < ax; k++) rows *= x.dims[k];
    for (int32_t k = ax; k < x.rank; k++) cols *= x.dims[k];
    int32_t sv = in_id(L, id, 1), bv = in_id(L, id, 2);
    int32_t gt, bt = -1;
    if (is_const(L, sv))
        gt = const_tensor(L, sv, INGOT_DTYPE_FLOAT, 1.f);
    else
        gt = ensure_contig(L, id, get(L, sv));
    if (bv >= 0) {
        if (is_const(L, bv))
            bt = const_tensor(L, bv, INGOT_DTYPE_FLOAT, 1.f);
        else
            bt = ensure_contig(L, id, get(L, bv));
    }
    if (gt < 0 || (bv >= 0 && bt < 0)) return L->err->status ? L->err->status : oom(L);
    if ((int64_t)ig__cu_tensor_numel(T(L, gt)) != cols || (bt >= 0 && (int64_t)ig__cu_tensor_numel(T(L, bt)) != cols))
        return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "scale/bias must cover the normalised dims exactly");
    int32_t yt = new_dense(L, x.dtype, x.rank, x.dims, false);
    if (yt < 0) return oom(L);
    ig_cu_step *s = new_step(L, IG_ST_LAYERNORM, id, NULL);
    if (!s) return oom(L);
    s->u.ln.x = xt;
    s->u.ln.y = yt;
    s->u.ln.gamma = gt;
    s->u.ln.beta = bt;
    ig_layernorm_args *a = &s->u.ln.args;
    a->dtype = x.dtype;
    a->wdtype = T(L, gt)->dtype;
    a->rows = rows;
    a->cols = cols;
    a->eps = ig__attr_float(n, "epsilon", 1e-5f);
    L->p->val_tensor[n->outputs[0]] = yt;
    L->done[id] = true;
    return INGOT_OK;
}

/* Reduce x over the axes in `red` (bool per axis) into a dense output of the value's shape. */
static ingot_status emit_reduce(lower *L, int32_t id, int32_t xt, const bool *red, int kind, int32_t yv,
                                int select_last)
{
    ig_cu_tensor x = *T(L, xt);
    ig_cu_step *s = new_step(L, IG_ST_REDUCE, id, NULL);
    if (!s) return oom(L);
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
                return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "too many reduced dims");
            a->red_dims[a->red_rank] = x.dims[k];
            a->red_xstrides[a->red_rank++] = x.strides[k];
            a->n_red *= x.dims[k];
        } else {
            if (a->out_rank >= IG_EW_MAX_RANK)
                return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "too many kept dims");
            a->out_dims[a->out_rank] = x.dims[k];
            a->out_xstrides[a->out_rank++] = x.strides[k];
            a->n_out *= x.dims[k];
        }
    }
    if (a->n_red == 0 && kind != IG_RED_SUM && kind != IG_RED_MEAN)
        return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "reduction over an empty axis");
    int64_t od[IG_MAX_RANK];
    int32_t orank = value_dims(L, yv, od);
    ingot_dtype ydt = dev_dtype(L->p, val(L, yv)->dtype);
    int32_t yt = new_dense(L, ydt, orank, od, false);
    if (yt < 0) return oom(L);
    a->y_dtype = ydt;
    s->u.reduce.x = xt;
    s->u.reduce.y = yt;
    L->p->val_tensor[yv] = yt;
    L->done[id] = true;
    return INGOT_OK;
}

static ingot_status lower_reduce(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    int32_t xt = get(L, n->inputs[0]);
    if (xt < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    int32_t rank = T(L, xt)->rank;
    bool red[IG_MAX_RANK] = {false};
    int kind;
    int select_last = 0;
    switch (n->op) {
    case IG_OP_global_average_pool:
    case IG_OP_global_max_pool:
        for (int32_t k = 2; k < rank; k++) red[k] = true;
        return emit_reduce(L, id, xt, red, n->op == IG_OP_global_max_pool ? IG_RED_MAX : IG_RED_MEAN, n->outputs[0], 0);
    case IG_OP_arg_max: {
        int32_t ax = norm_axis(ig__attr_int(n, "axis", 0), rank);
        red[ax] = true;
        select_last = (int)ig__attr_int(n, "select_last_index", 0);
        return emit_reduce(L, id, xt, red, IG_RED_ARGMAX, n->outputs[0], select_last);
    }
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
        int32_t av = in_id(L, id, 1);
        if (av >= 0 && !const_ints(L, av, axes, IG_MAX_RANK, &na))
            return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "axes must be a constant");
    } else if (ig__attr_ints(n, "axes", &aa, &naa)) {
        for (int64_t i = 0; i < naa && i < IG_MAX_RANK; i++) axes[na++] = aa[i];
    }
    if (na == 0) {
        if (ig__attr_int(n, "noop_with_empty_axes", 0)) return alias_value(L, n->outputs[0], xt);
        for (int32_t k = 0; k < rank; k++) red[k] = true;
    }
    for (int32_t i = 0; i < na; i++) red[norm_axis(axes[i], rank)] = true;
    return emit_reduce(L, id, xt, red, kind, n->outputs[0], 0);
}

static ingot_status lower_pool(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    if (n->n_outputs > 1 && n->outputs[1] >= 0 && n_cons(L, n->outputs[1]) + L->is_output[n->outputs[1]] > 0)
        return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "the Indices output is not supported");
    int32_t xt = get(L, n->inputs[0]);
    if (xt < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    ig_cu_tensor x = *T(L, xt);
    if (x.rank != 4 && x.rank != 3)
        return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "only 1-D and 2-D pooling (rank %d)", (int)x.rank);
    int32_t sp = x.rank - 2;
    const ig_value *y = val(L, n->outputs[0]);
    int64_t xin[2], yout[2], kk[2] = {1, 1}, st[2] = {1, 1}, dl[2] = {1, 1}, pb[2], pe[2];
    const int64_t *a = NULL;
    int64_t na = 0;
    if (!ig__attr_ints(n, "kernel_shape", &a, &na) || na != sp)
        return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "kernel_shape missing");
    for (int32_t i = 0; i < sp; i++) {
        kk[i] = a[i];
        xin[i] = x.dims[2 + i];
        yout[i] = y->shape.d[2 + i].n;
    }
    if (ig__attr_ints(n, "strides", &a, &na) && na == sp)
        for (int32_t i = 0; i < sp; i++) st[i] = a[i];
    if (ig__attr_ints(n, "dilations", &a, &na) && na == sp)
        for (int32_t i = 0; i < sp; i++) dl[i] = a[i];
    conv_pads(n, sp, xin, yout, kk, st, dl, pb, pe);
    bool nhwc = tensor_nhwc(&x) && !ig__cu_tensor_contig(&x);
    int64_t od[4];
    int32_t orank = value_dims(L, n->outputs[0], od);
    int32_t yt = new_dense(L, x.dtype, orank, od, nhwc);
    if (yt < 0) return oom(L);
    ig_cu_step *s = new_step(L, IG_ST_POOL, id, NULL);
    if (!s) return oom(L);
    ig_pool_args *p = &s->u.pool.args;
    memset(p, 0, sizeof *p);
    ig_cu_tensor yv = *T(L, yt);
    p->dtype = x.dtype;
    p->is_max = n->op == IG_OP_max_pool;
    p->count_include_pad = (int32_t)ig__attr_int(n, "count_include_pad", 0);
    p->n = x.dims[0];
    p->c = x.dims[1];
    if (sp == 2) {
        p->h = x.dims[2];
        p->w = x.dims[3];
        p->oh = od[2];
        p->ow = od[3];
        for (int k = 0; k < 4; k++) {
            p->xs[k] = x.strides[k];
            p->ys[k] = yv.strides[k];
        }
        p->kh = (int32_t)kk[0];
        p->kw = (int32_t)kk[1];
        p->sh = (int32_t)st[0];
        p->sw = (int32_t)st[1];
        p->ph = (int32_t)pb[0];
        p->pw = (int32_t)pb[1];
        p->dh = (int32_t)dl[0];
        p->dw = (int32_t)dl[1];
    } else {
        p->h = 1;
        p->w = x.dims[2];
        p->oh = 1;
        p->ow = od[2];
        p->xs[0] = x.strides[0];
        p->xs[1] = x.strides[1];
        p->xs[2] = 0;
        p->xs[3] = x.strides[2];
        p->ys[0] = yv.strides[0];
        p->ys[1] = yv.strides[1];
        p->ys[2] = 0;
        p->ys[3] = yv.strides[2];
        p->kh = 1;
        p->kw = (int32_t)kk[0];
        p->sh = 1;
        p->sw = (int32_t)st[0];
        p->ph = 0;
        p->pw = (int32_t)pb[0];
        p->dh = 1;
        p->dw = (int32_t)dl[0];
    }
    s->u.pool.x = xt;
    s->u.pool.y = yt;
    L->p->val_tensor[n->outputs[0]] = yt;
    L->done[id] = true;
    return INGOT_OK;
}

static ingot_status lower_gather(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    int32_t xt = get(L, n->inputs[0]), iv = n->inputs[1];
    if (xt < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "data has no device tensor");
    ig_cu_tensor x = *T(L, xt);
    int32_t ax = norm_axis(ig__attr_int(n, "axis", 0), x.rank);
    const ig_value *idx = val(L, iv);
    double k;
    if (idx->shape.rank == 0 && const_scalar(L, iv, &k)) { /* a constant scalar index: a view */
        int64_t i = (int64_t)k;
        if (i < 0) i += x.dims[ax];
        if (i < 0 || i >= x.dims[ax])
            return fail_node(L, id, INGOT_ERR_MODEL_INVALID, "index %" PRId64 " out of range [0, %" PRId64 ")", i,
                             x.dims[ax]);
        ig_cu_tensor v = x;
        v.offset += i * x.strides[ax];
        for (int32_t q = ax; q < x.rank - 1; q++) {
            v.dims[q] = x.dims[q + 1];
            v.strides[q] = x.strides[q + 1];
        }
        v.rank--;
        int32_t t = new_tensor(L, v.buf, v.dtype, v.rank, v.dims, v.strides, v.offset);
        if (t < 0) return oom(L);
        L->p->val_tensor[n->outputs[0]] = t;
        L->done[id] = true;
        return INGOT_OK;
    }
    xt = ensure_contig(L, id, xt);
    int32_t it = ensure_contig(L, id, get(L, iv));
    if (xt < 0 || it < 0) return L->err->status ? L->err->status : oom(L);
    if (T(L, it)->dtype != INGOT_DTYPE_INT64 && T(L, it)->dtype != INGOT_DTYPE_INT32)
        return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "indices of type %s",
                         ingot_dtype_name(T(L, it)->dtype));
    x = *T(L, xt);
    int64_t od[IG_MAX_RANK];
    int32_t orank = value_dims(L, n->outputs[0], od);
    int32_t yt = new_dense(L, x.dtype, orank, od, false);
    if (yt < 0) return oom(L);
    ig_cu_step *s = new_step(L, IG_ST_GATHER, id, NULL);
    if (!s) return oom(L);
    ig_gather_args *a = &s->u.gather.args;
    a->idx_dtype = T(L, it)->dtype;
    a->esize = (int32_t)ingot_dtype_size(x.dtype);
    a->outer = 1;
    for (int32_t q = 0; q < ax; q++) a->outer *= x.dims[q];
    a->axis_dim = x.dims[ax];
    a->inner = 1;
    for (int32_t q = ax + 1; q < x.rank; q++) a->inner *= x.dims[q];
    a->n_idx = (int64_t)ig__cu_tensor_numel(T(L, it));
    s->u.gather.x = xt;
    s->u.gather.idx = it;
    s->u.gather.y = yt;
    L->p->val_tensor[n->outputs[0]] = yt;
    L->done[id] = true;
    return INGOT_OK;
}

static ingot_status lower_slice(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    int32_t xt = get(L, n->inputs[0]);
    if (xt < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    ig_cu_tensor x = *T(L, xt);
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
        if (!const_ints(L, in_id(L, id, 1), starts, IG_MAX_RANK, &ns) ||
            !const_ints(L, in_id(L, id, 2), ends, IG_MAX_RANK, &ne))
            return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "starts/ends must be constants");
        if (in_id(L, id, 3) >= 0 && !const_ints(L, in_id(L, id, 3), axes, IG_MAX_RANK, &nax))
            return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "axes must be a constant");
        if (in_id(L, id, 4) >= 0 && !const_ints(L, in_id(L, id, 4), steps, IG_MAX_RANK, &nst))
            return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "steps must be a constant");
    }
    if (nax == 0)
        for (int32_t i = 0; i < ns; i++) axes[nax++] = i;
    const ig_value *y = val(L, n->outputs[0]);
    ig_cu_tensor v = x;
    for (int32_t i = 0; i < ns && i < nax; i++) {
        int32_t ax = norm_axis(axes[i], x.rank);
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
    int32_t t = new_tensor(L, v.buf, v.dtype, v.rank, v.dims, v.strides, v.offset);
    if (t < 0) return oom(L);
    L->p->val_tensor[n->outputs[0]] = t;
    L->done[id] = true;
    return INGOT_OK;
}

static ingot_status lower_split(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    int32_t xt = get(L, n->inputs[0]);
    if (xt < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    ig_cu_tensor x = *T(L, xt);
    int32_t ax = norm_axis(ig__attr_int(n, "axis", 0), x.rank);
    int64_t off = 0;
    for (int32_t j = 0; j < n->n_outputs; j++) {
        int32_t ov = n->outputs[j];
        if (ov < 0) continue;
        ig_cu_tensor v = x;
        v.dims[ax] = val(L, ov)->shape.d[ax].n;
        v.offset += off * x.strides[ax];
        off += v.dims[ax];
        int32_t t = new_tensor(L, v.buf, v.dtype, v.rank, v.dims, v.strides, v.offset);
        if (t < 0) return oom(L);
        L->p->val_tensor[ov] = t;
    }
    L->done[id] = true;
    return INGOT_OK;
}

static ingot_status lower_concat(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    int32_t yv = n->outputs[0];
    int64_t od[IG_MAX_RANK];
    int32_t orank = value_dims(L, yv, od);
    int32_t ax = norm_axis(ig__attr_int(n, "axis", 0), orank);
    int32_t yt = new_dense(L, dev_dtype(L->p, val(L, yv)->dtype), orank, od, false);
    if (yt < 0) return oom(L);
    ig_cu_tensor y = *T(L, yt);
    int64_t off = 0;
    for (int32_t i = 0; i < n->n_inputs; i++) {
        int32_t u = n->inputs[i];
        if (u < 0) continue;
        int32_t ut = get(L, u);
        if (ut < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "input %d has no device tensor", (int)i);
        int64_t len = T(L, ut)->rank == orank ? T(L, ut)->dims[ax] : 0;
        if (len == 0) continue;
        ig_cu_tensor part = y;
        part.dims[ax] = len;
        part.offset += off * y.strides[ax];
        off += len;
        int32_t pt = new_tensor(L, part.buf, part.dtype, part.rank, part.dims, part.strides, part.offset);
        if (pt < 0) return oom(L);
        ingot_status st = emit_copy(L, id, NULL, ut, pt, 0);
        if (st != INGOT_OK) return st;
    }
    L->p->val_tensor[yv] = yt;
    L->done[id] = true;
    return INGOT_OK;
}

static ingot_status lower_expand(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    int32_t xt = get(L, n->inputs[0]);
    if (xt < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    ig_cu_tensor x = *T(L, xt);
    int64_t od[IG_MAX_RANK], os[IG_MAX_RANK];
    int32_t orank = value_dims(L, n->outputs[0], od);
    int32_t pad = orank - x.rank;
    for (int32_t k = 0; k < orank; k++) {
        if (k < pad) {
            os[k] = 0;
            continue;
        }
        os[k] = x.dims[k - pad] == od[k] ? x.strides[k - pad] : 0;
    }
    int32_t t = new_tensor(L, x.buf, x.dtype, orank, od, os, x.offset);
    if (t < 0) return oom(L);
    L->p->val_tensor[n->outputs[0]] = t;
    L->done[id] = true;
    return INGOT_OK;
}

static ingot_status lower_transpose(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    lazy_view *z;
    int32_t xt = get_view(L, n->inputs[0], &z);
    if (xt < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    ig_cu_tensor x = *T(L, xt), v = x;
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
        xt = get(L, n->inputs[0]); /* permuted too finely to copy later: the input's copy, transposed */
        if (xt < 0) return L->err->status ? L->err->status : oom(L);
        x = v = *T(L, xt);
    }
    for (int32_t k = 0; k < x.rank; k++) {
        int32_t src = have ? (int32_t)perm[k] : x.rank - 1 - k;
        v.dims[k] = x.dims[src];
        v.strides[k] = x.strides[src];
    }
    int32_t t = new_tensor(L, v.buf, v.dtype, v.rank, v.dims, v.strides, v.offset);
    if (t < 0) return oom(L);
    L->p->val_tensor[n->outputs[0]] = t;
    L->done[id] = true;
    return INGOT_OK;
}

static ingot_status lower_pad(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    const char *mode = ig__attr_str(n, "mode", "constant");
    if (strcmp(mode, "constant"))
        return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "mode '%s' (only 'constant')", mode);
    int32_t xt = get(L, n->inputs[0]);
    if (xt < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    ig_cu_tensor x = *T(L, xt);
    int64_t pads[2 * IG_MAX_RANK], axes[IG_MAX_RANK];
    int32_t np = 0, nax = 0;
    double value = 0;
    if (n->opset < 11) {
        const int64_t *a = NULL;
        int64_t na = 0;
        if (ig__attr_ints(n, "pads", &a, &na))
            for (int64_t i = 0; i < na && i < 2 * IG_MAX_RANK; i++) pads[np++] = a[i];
        value = ig__attr_float(n, "value", 0.f);
    } else {
        if (!const_ints(L, in_id(L, id, 1), pads, 2 * IG_MAX_RANK, &np))
            return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "pads must be a constant");
        if (in_id(L, id, 2) >= 0 && !const_scalar(L, in_id(L, id, 2), &value))
            return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "constant_value must be a constant");
        if (in_id(L, id, 3) >= 0 && !const_ints(L, in_id(L, id, 3), axes, IG_MAX_RANK, &nax))
            return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "axes must be a constant");
    }
    int64_t pb[IG_MAX_RANK] = {0}, pe[IG_MAX_RANK] = {0};
    if (nax == 0) {
        for (int32_t k = 0; k < x.rank && k < np / 2; k++) {
            pb[k] = pads[k];
            pe[k] = pads[k + np / 2];
        }
    } else {
        for (int32_t i = 0; i < nax; i++) {
            int32_t ax = norm_axis(axes[i], x.rank);
            pb[ax] = pads[i];
            pe[ax] = pads[i + nax];
        }
    }
    for (int32_t k = 0; k < x.rank; k++)
        if (pb[k] < 0 || pe[k] < 0)
            return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "negative pads are not supported");
    int64_t od[IG_MAX_RANK];
    int32_t orank = value_dims(L, n->outputs[0], od);
    int32_t yt = new_dense(L, x.dtype, orank, od, tensor_nhwc(&x) && !ig__cu_tensor_contig(&x));
    if (yt < 0) return oom(L);
    ig_cu_step *fs = new_step(L, IG_ST_FILL, id, "pad fill");
    if (!fs) return oom(L);
    fs->u.fill.y = yt;
    uint64_t bits = 0;
    switch (x.dtype) {
    case INGOT_DTYPE_FLOAT: {
        float f = (float)value;
        memcpy(&bits, &f, 4);
        break;
    }
    case INGOT_DTYPE_FLOAT16: bits = ig__f32_to_f16((float)value); break;
    case INGOT_DTYPE_BFLOAT16: bits = ig__f32_to_bf16((float)value); break;
    case INGOT_DTYPE_DOUBLE: memcpy(&bits, &value, 8); break;
    default: {
        int64_t i = (int64_t)value;
        memcpy(&bits, &i, 8);
        break;
    }
    }
    fs->u.fill.bits = bits;
    ig_cu_tensor in = *T(L, yt);
    for (int32_t k = 0; k < orank; k++) {
        in.offset += pb[k] * in.strides[k];
        in.dims[k] = x.dims[k];
    }
    int32_t inner = new_tensor(L, in.buf, in.dtype, in.rank, in.dims, in.strides, in.offset);
    if (inner < 0) return oom(L);
    ingot_status st = emit_copy(L, id, NULL, xt, inner, 0);
    if (st != INGOT_OK) return st;
    L->p->val_tensor[n->outputs[0]] = yt;
    L->done[id] = true;
    return INGOT_OK;
}

static ingot_status lower_constant_of_shape(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    int32_t yv = n->outputs[0];
    int64_t od[IG_MAX_RANK];
    int32_t orank = value_dims(L, yv, od);
    ingot_dtype dt = dev_dtype(L->p, val(L, yv)->dtype);
    int32_t yt = new_dense(L, dt, orank, od, false);
    if (yt < 0) return oom(L);
    const ig_attr *va = ig__node_attr(n, "value");
    double v = 0;
    if (va && va->type == IG_ATTR_TENSOR && va->t && va->t->n_bytes) v = ig__elem_f64(va->t->dtype, va->t->data, 0);
    ig_cu_step *s = new_step(L, IG_ST_FILL, id, NULL);
    if (!s) return oom(L);
    s->u.fill.y = yt;
    uint64_t bits = 0;
    switch (dt) {
    case INGOT_DTYPE_FLOAT: {
        float f = (float)v;
        memcpy(&bits, &f, 4);
        break;
    }
    case INGOT_DTYPE_FLOAT16: bits = ig__f32_to_f16((float)v); break;
    case INGOT_DTYPE_BFLOAT16: bits = ig__f32_to_bf16((float)v); break;
    case INGOT_DTYPE_DOUBLE: memcpy(&bits, &v, 8); break;
    case INGOT_DTYPE_BOOL: bits = v != 0; break;
    default: {
        int64_t i = (int64_t)v;
        memcpy(&bits, &i, 8);
        break;
    }
    }
    s->u.fill.bits = bits;
    L->p->val_tensor[yv] = yt;
    L->done[id] = true;
    return INGOT_OK;
}

/* ---- fused attention ----------------------------------------------------------------------------------
 *
 * The exporters' scaled-dot-product attention: [Mul(Q, c)] [Mul(K^T, c)] -> MatMul -> [Mul/Div by a
 * scalar] -> [Add(mask)] -> Softmax(last axis) -> [Where(IsNaN(p), 0, p)] -> MatMul(., V), every
 * intermediate with one consumer, head dim 64, at most 256 keys, fp16. A pre-pass finds these chains
 * (the mask is often computed between the two MatMuls, so the step is emitted at the second MatMul, when
 * Q, K, V and the mask all exist); the fused kernel reads Q, K, V through their strides. */

typedef struct attn_plan {
    int32_t q, kt, v, mask; /* values: Q [B,H,Sq,64], K^T [B,H,64,Skv], V [B,H,Skv,64], mask (-1) */
    float scale;
} attn_plan;

static bool scalar_mul_input(lower *L, int32_t x, int32_t consumer, int32_t *src, double *k, int32_t *node_out)
{
    const ig_value *xv = val(L, x);
    if (xv->producer < 0 || sole_consumer(L, x) != consumer) return false;
    const ig_node *pn = node(L, xv->producer);
    if (pn->folded || L->done[xv->producer] || pn->op != IG_OP_mul || pn->inputs[0] == pn->inputs[1]) return false;
    for (int i = 0; i < 2; i++)
        if (const_scalar(L, pn->inputs[1 - i], k) && !is_const(L, pn->inputs[i])) {
            *src = pn->inputs[i];
            *node_out = xv->producer;
            return true;
        }
    return false;
}

static bool dims_are(const lower *L, int32_t v, int32_t rank)
{
    return val(L, v)->shape.rank == rank && ig__shape_known(&val(L, v)->shape);
}

/* Match the chain starting at the scores MatMul m; on success fill *pl, the nodes it absorbs (skip),
 * and the second MatMul (*pv). */
static bool match_attention(lower *L, int32_t m, attn_plan *pl, int32_t *skip, int *n_skip, int32_t *pv)
{
    const ig_node *n = node(L, m);
    if (n->op != IG_OP_matmul || n->folded || L->done[m]) return false;
    *n_skip = 0;
    double k;
    float scale = 1.f;
    int32_t qv = n->inputs[0], ktv = n->inputs[1], src, pn;
    if (scalar_mul_input(L, qv, m, &src, &k, &pn)) {
        scale *= (float)k;
        qv = src;
        skip[(*n_skip)++] = pn;
    }
    if (scalar_mul_input(L, ktv, m, &src, &k, &pn)) {
        scale *= (float)k;
        ktv = src;
        skip[(*n_skip)++] = pn;
    }
    skip[(*n_skip)++] = m;
    int32_t s = n->outputs[0], mask = -1;
    int32_t c = sole_consumer(L, s);
    if (c >= 0 && (node(L, c)->op == IG_OP_mul || node(L, c)->op == IG_OP_div)) {
        const ig_node *mn = node(L, c);
        int32_t other = mn->inputs[0] == s ? mn->inputs[1] : mn->inputs[0];
        if (!const_scalar(L, other, &k) || mn->inputs[0] == mn->inputs[1] ||
            (mn->op == IG_OP_div && mn->inputs[1] != other))
            return false;
        scale *= mn->op == IG_OP_mul ? (float)k : (float)(1.0 / k);
        skip[(*n_skip)++] = c;
        s = mn->outputs[0];
        c = sole_consumer(L, s);
    }
    if (c >= 0 && node(L, c)->op == IG_OP_add) {
        const ig_node *an = node(L, c);
        if (an->inputs[0] == an->inputs[1] || !same_shape(L, an->outputs[0], s)) return false;
        mask = an->inputs[0] == s ? an->inputs[1] : an->inputs[0];
        skip[(*n_skip)++] = c;
        s = an->outputs[0];
        c = sole_consumer(L, s);
    }
    if (c < 0 || node(L, c)->op != IG_OP_softmax) return false;
    const ig_node *sm = node(L, c);
    if (!dims_are(L, s, 4) || norm_axis(ig__attr_int(sm, "axis", sm->opset >= 13 ? -1 : 1), 4) != 3) return false;
    skip[(*n_skip)++] = c;
    int32_t p = sm->outputs[0];
    /* the IsNaN guard */
    if (!L->is_output[p] && n_cons(L, p) == 2) {
        int32_t c0 = L->cons[L->cons_off[p]], c1 = L->cons[L->cons_off[p] + 1];
        for (int sw = 0; sw < 2; sw++) {
            int32_t isn = sw ? c1 : c0, wh = sw ? c0 : c1;
            const ig_node *in = node(L, isn), *w = node(L, wh);
            double z;
            if (in->op == IG_OP_is_nan && w->op == IG_OP_where && sole_consumer(L, in->outputs[0]) == wh &&
                w->inputs[0] == in->outputs[0] && w->inputs[2] == p && const_scalar(L, w->inputs[1], &z) && z == 0.0) {
                skip[(*n_skip)++] = isn;
                skip[(*n_skip)++] = wh;
                p = w->outputs[0];
                break;
            }
        }
    }
    int32_t pm = sole_consumer(L, p);
    if (pm < 0 || node(L, pm)->op != IG_OP_matmul || node(L, pm)->inputs[0] != p) return false;
    int32_t vv = node(L, pm)->inputs[1];
    if (!dims_are(L, qv, 4) || !dims_are(L, ktv, 4) || !dims_are(L, vv, 4)) return false;
    const ig_shape *Q = &val(L, qv)->shape, *K = &val(L, ktv)->shape, *V = &val(L, vv)->shape;
    if (Q->d[3].n != 64 || K->d[2].n != 64 || V->d[3].n != 64 || K->d[3].n != V->d[2].n || V->d[2].n > 256)
        return false;
    for (int q = 0; q < 2; q++)
        if (K->d[q].n != Q->d[q].n || V->d[q].n != Q->d[q].n) return false;
    if (val(L, qv)->dtype != INGOT_DTYPE_FLOAT || val(L, ktv)->dtype != INGOT_DTYPE_FLOAT ||
        val(L, vv)->dtype != INGOT_DTYPE_FLOAT)
        return false;
    if (mask >= 0) {
        const ig_shape *M = &val(L, mask)->shape;
        int64_t full[4] = {Q->d[0].n, Q->d[1].n, Q->d[2].n, K->d[3].n};
        if (M->rank > 4 || M->rank < 0) return false;
        for (int32_t q = 0; q < M->rank; q++) {
            int64_t d = M->d[q].n, f = full[4 - M->rank + q];
            if (d != f && d != 1) return false;
        }
        if (val(L, mask)->dtype != INGOT_DTYPE_FLOAT) return false;
    }
    pl->q = qv;
    pl->kt = ktv;
    pl->v = vv;
    pl->mask = mask;
    pl->scale = scale;
    *pv = pm;
    return true;
}

static bool attn_view_ok(const ig_cu_tensor *t, int inner_axis)
{
    if (t->strides[inner_axis] != 1 || t->offset % 8) return false;
    for (int32_t k = 0; k < 4; k++)
        if (k != inner_axis && t->dims[k] > 1 && t->strides[k] % 8) return false;
    return true;
}

static ingot_status emit_attention(lower *L, int32_t id, const attn_plan *pl)
{
    int32_t qt = get(L, pl->q), ktt = get(L, pl->kt), vt = get(L, pl->v);
    if (qt < 0 || ktt < 0 || vt < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "attention operands have no tensors");
    if (!attn_view_ok(T(L, qt), 3)) qt = materialize(L, id, qt, false, "attention Q copy");
    if (qt >= 0 && !attn_view_ok(T(L, vt), 3)) vt = materialize(L, id, vt, false, "attention V copy");
    if (qt < 0 || vt < 0) return L->err->status ? L->err->status : oom(L);
    if (!attn_view_ok(T(L, ktt), 2)) { /* K as dense [B,H,S,D], seen as K^T */
        ig_cu_tensor x = *T(L, ktt);
        int64_t kd[4] = {x.dims[0], x.dims[1], x.dims[3], x.dims[2]};
        int32_t dense = new_dense(L, x.dtype, 4, kd, false);
        int32_t view = dense >= 0 ? transpose_last2(L, dense) : -1;
        if (view < 0) return oom(L);
        ingot_status st = emit_copy(L, id, "attention K copy", ktt, view, 0);
        if (st != INGOT_OK) return st;
        ktt = view;
    }
    const ig_cu_tensor *Q = T(L, qt), *K = T(L, ktt), *V = T(L, vt);
    ig_attention_args a;
    memset(&a, 0, sizeof a);
    a.dtype = INGOT_DTYPE_FLOAT16;
    a.b = Q->dims[0];
    a.h = Q->dims[1];
    a.sq = Q->dims[2];
    a.d = 64;
    a.skv = K->dims[3];
    for (int q = 0; q < 4; q++) {
        a.qs[q] = Q->dims[q] == 1 && q < 3 ? 0 : Q->strides[q];
        a.vs[q] = V->dims[q] == 1 && q < 3 ? 0 : V->strides[q];
    }
    a.ks[0] = K->dims[0] == 1 ? 0 : K->strides[0];
    a.ks[1] = K->dims[1] == 1 ? 0 : K->strides[1];
    a.ks[2] = K->strides[3];
    a.ks[3] = K->strides[2];
    a.scale = pl->scale;
    int32_t mt = -1;
    if (pl->mask >= 0) {
        mt = get(L, pl->mask);
        if (mt < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "attention mask has no tensor");
        const ig_cu_tensor *M = T(L, mt);
        int32_t pad = 4 - M->rank;
        int64_t full[4] = {a.b, a.h, a.sq, a.skv};
        for (int q = 0; q < 4; q++) {
            if (q < pad) continue;
            a.ms[q] = M->dims[q - pad] == full[q] && full[q] > 1 ? M->strides[q - pad] : 0;
        }
        a.mask_dtype = M->dtype;
    }
    const ig_node *n = node(L, id);
    int64_t od[IG_MAX_RANK];
    value_dims(L, n->outputs[0], od);
    /* When the sole consumer is a Transpose, write in an order that makes it cheap: its own order when
     * that keeps the batch outermost (BERT's [B,Sq,H,D]: the Transpose is then a dense view and the
     * Reshape after it free), else [B,Sq,H,D] all the same (ViT's Transpose to [Sq,B,H,D] and Reshape to
     * [Sq*B, E] stay lazy views, and the out-projection runs over the rows in this batch-major memory
     * order, which is also the residual stream's: see rows_in_memory_order). The output gets the
     * inverse-permuted strides of a dense buffer in that order. */
    int32_t ot = -1;
    int32_t tc = sole_consumer(L, n->outputs[0]);
    const int64_t *perm = NULL;
    int64_t np = 0;
    if (tc >= 0 && node(L, tc)->op == IG_OP_transpose && ig__attr_ints(node(L, tc), "perm", &perm, &np) && np == 4) {
        int64_t pd[4], ds[4], os[4], ord[4] = {0, 2, 1, 3};
        int seen = 0;
        for (int q = 0; q < 4; q++) seen |= perm[q] >= 0 && perm[q] < 4 ? 1 << perm[q] : 0;
        if (seen == 15) { /* a permutation */
            if (perm[0] == 0)
                for (int q = 0; q < 4; q++) ord[q] = perm[q];
            for (int q = 0; q < 4; q++) pd[q] = od[ord[q]];
            contig_strides(4, pd, ds);
            for (int q = 0; q < 4; q++) os[ord[q]] = a.os[ord[q]] = ds[q];
            if (ingot_cuda_attention_supported(&a)) {
                int32_t b = new_buf(L, IG_LOC_ARENA, numel_of(4, pd) * ingot_dtype_size(INGOT_DTYPE_FLOAT16));
                ot = new_tensor(L, b, INGOT_DTYPE_FLOAT16, 4, od, os, 0);
                if (ot < 0) return oom(L);
            }
        }
    }
    if (ot < 0) ot = new_dense(L, INGOT_DTYPE_FLOAT16, 4, od, false);
    if (ot < 0) return oom(L);
    for (int q = 0; q < 4; q++) a.os[q] = T(L, ot)->strides[q];
    if (!ingot_cuda_attention_supported(&a))
        return fail_node(L, id, INGOT_ERR_INTERNAL, "the fused attention does not take these strides");
    ig_cu_step *step = new_step(L, IG_ST_ATTENTION, id, NULL);
    if (!step) return oom(L);
    step->u.attn.q = qt;
    step->u.attn.k = ktt;
    step->u.attn.v = vt;
    step->u.attn.mask = mt;
    step->u.attn.o = ot;
    step->u.attn.args = a;
    L->done[id] = true;
    L->p->val_tensor[n->outputs[0]] = ot;
    return INGOT_OK;
}

/* ---- the op table: support check and lowering share it ------------------------------------------- */

typedef ingot_status (*lower_fn)(lower *L, int32_t id);

static ingot_status lower_view_reshape(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    L->done[id] = true;
    return reshape_view(L, id, n->inputs[0], n->outputs[0]);
}

static ingot_status lower_identity(lower *L, int32_t id)
{
    const ig_node *n = node(L, id);
    for (int32_t j = 1; j < n->n_outputs; j++)
        if (n->outputs[j] >= 0 && n_cons(L, n->outputs[j]) + L->is_output[n->outputs[j]] > 0)
            return fail_node(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "the mask output is not supported");
    lazy_view *z;
    int32_t xt = get_view(L, n->inputs[0], &z);
    if (xt < 0) return fail_node(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    L->done[id] = true;
    if (z) {
        L->lazy[n->outputs[0]] = z;
        return INGOT_OK;
    }
    return alias_value(L, n->outputs[0], xt);
}

/* The softmax step over the last axis of the dense scores xt ([sd0, sd1, sd2] rows of sd3) of Softmax
 * node sm (consumer c), adding mask mt (-1: none) through its strides ms; the IsNaN guard folds in. */
static ingot_status emit_masked_softmax(lower *L, int32_t c, const ig_node *sm, int32_t xt, const int64_t *sd,
                                        const int64_t *ms, int32_t mt)
{
    const ig_cu_tensor x = *T(L, xt);
    int32_t yt = new_dense(L, x.dtype, x.rank, x.dims, false);
    ig_cu_step *step = yt >= 0 ? new_step(L, IG_ST_SOFTMAX, c, NULL) : NULL;
    if (!step) return oom(L);
    step->u.softmax.x = xt;
    step->u.softmax.y = yt;
    step->u.softmax.mask = mt;
    ig_softmax_args *a = &step->u.softmax.args;
    memset(a, 0, sizeof *a);
    a->dtype = x.dtype;
    a->cols = sd[3];
    a->rows = sd[0] * sd[1] * sd[2];
    a->inner = 1;
    a->log = sm->op == IG_OP_log_softmax;
    a->scale = 1.f; /* a scale is the GEMM's alpha */
    for (int q = 0; q < 3; q++) a->row_dims[q] = sd[q];
    for (int q = 0; q < 4; q++) a->ms[q] = ms[q];
    a->mask_dtype = mt >= 0 ? T(L, mt)->dtype : 0;
    L->done[c] = true;
    L->p->n_fused++;
    L->p->val_tensor[sm->outputs[0]] = yt;
    softmax_nan_fold(L, step, sm->outputs[0], yt);
    return INGOT_OK;
}

/* MatMul [-> Mul/Div by a scalar] [-> Add(mask)] -> Softmax over the last axis: the scale goes into the
 * GEMM's alpha and the mask into the softmax kernel, so the scores are written once and read once. */
static bool try_scores_softmax(lower *L, int32_t id, ingot_status *st)
{
    *st = INGOT_OK;
    const ig_node *n = node(L, id);
    int32_t s = n->outputs[0], scale_node = -1, mask_node = -1, mask_v = -1;
    float scale = 1.f;
    double k;
    int32_t c = sole_consumer(L, s);
    if (c >= 0 && (node(L, c)->op == IG_OP_mul || node(L, c)->op == IG_OP_div)) {
        const ig_node *m = node(L, c);
        int32_t other = m->inputs[0] == s ? m->inputs[1] : m->inputs[0];
        if (!const_scalar(L, other, &k) || (m->op == IG_OP_div && m->inputs[1] != other) ||
            m->inputs[0] == m->inputs[1])
            return false;
        scale = m->op == IG_OP_mul ? (float)k : (float)(1.0 / k);
        scale_node = c;
        s = m->outputs[0];
        c = sole_consumer(L, s);
    }
    bool scale_only = false;
    if (c >= 0 && node(L, c)->op == IG_OP_add) {
        const ig_node *m = node(L, c);
        int32_t other = m->inputs[0] == s ? m->inputs[1] : m->inputs[0];
        if (m->inputs[0] == m->inputs[1] || !same_shape(L, m->outputs[0], s)) return false;
        if (!is_const(L, other) && !produced(L, other)) {
            /* the mask is computed later in the order: fold the scale now, the mask at the Add */
            if (scale_node < 0) return false;
            scale_only = true;
        } else {
            mask_node = c;
            mask_v = other;
            s = m->outputs[0];
            c = sole_consumer(L, s);
        }
    }
    if (scale_only) {
        int32_t at0 = get(L, n->inputs[0]), bt0 = get(L, n->inputs[1]);
        if (at0 < 0 || bt0 < 0 || T(L, at0)->dtype != T(L, bt0)->dtype || !ig__dtype_is_float(T(L, at0)->dtype) ||
            T(L, at0)->dtype == INGOT_DTYPE_DOUBLE)
            return false;
        if ((*st = lower_gemm_common(L, id, at0, bt0, -1, scale, 0.f, true, NULL)) != INGOT_OK) return true;
        L->done[scale_node] = true;
        L->p->n_fused++;
        L->p->val_tensor[node(L, scale_node)->outputs[0]] = L->p->val_tensor[n->outputs[0]];
        return true;
    }
    if (c < 0 || (scale_node < 0 && mask_node < 0)) return false;
    const ig_node *sm = node(L, c);
    if (sm->op != IG_OP_softmax && sm->op != IG_OP_log_softmax) return false;
    int32_t rank = val(L, s)->shape.rank;
    int64_t axis = ig__attr_int(sm, "axis", sm->opset >= 13 ? -1 : 1);
    if (rank < 1 || rank > 4 || norm_axis(axis, rank) != rank - 1) return false;
    int64_t sd[4] = {1, 1, 1, 1};
    for (int32_t q = 0; q < rank; q++) sd[4 - rank + q] = val(L, s)->shape.d[q].n;
    int64_t ms[4] = {0, 0, 0, 0};
    int32_t mt = -1;
    if (mask_v >= 0) {
        mt = get(L, mask_v);
        if (mt < 0) return false;
        const ig_cu_tensor *M = T(L, mt);
        int32_t pad = 4 - M->rank;
        if (pad < 0) return false;
        for (int q = 0; q < 4; q++) {
            if (q < pad) continue;
            int64_t d = M->dims[q - pad];
            if (d == sd[q])
                ms[q] = d == 1 ? 0 : M->strides[q - pad];
            else if (d != 1)
                return false;
        }
    }
    /* the GEMM (scale as alpha), then the softmax reading the mask */
    int32_t at = get(L, n->inputs[0]), bt = get(L, n->inputs[1]);
    if (at < 0 || bt < 0 || T(L, at)->dtype != T(L, bt)->dtype || !ig__dtype_is_float(T(L, at)->dtype) ||
        T(L, at)->dtype == INGOT_DTYPE_DOUBLE)
        return false;
    if ((*st = lower_gemm_common(L, id, at, bt, -1, scale, 0.f, true, NULL)) != INGOT_OK) return true;
    if ((*st = emit_masked_softmax(L, c, sm, L->p->val_tensor[n->outputs[0]], sd, ms, mt)) != INGOT_OK) return true;
    if (scale_node >= 0) {
        L->done[scale_node] = true;
        L->p->n_fused++;
    }
    if (mask_node >= 0) {
        L->done[mask_node] = true;
        L->p->n_fused++;
    }
    return true;
}

/* Add(x, mask) -> Softmax over the last axis, x dense rows (a GEMM's output): the mask goes into the
 * softmax kernel, so the scores are read once. */
static bool try_mask_softmax(lower *L, int32_t id, ingot_status *st)
{
    *st = INGOT_OK;
    const ig_node *n = node(L, id);
    if (n->op != IG_OP_add || n->inputs[0] == n->inputs[1]) return false;
    int32_t c = sole_consumer(L, n->outputs[0]);
    if (c < 0 || L->done[c]) return false;
    const ig_node *sm = node(L, c);
    if (sm->op != IG_OP_softmax && sm->op != IG_OP_log_softmax) return false;
    int32_t rank = val(L, n->outputs[0])->shape.rank;
    int64_t axis = ig__attr_int(sm, "axis", sm->opset >= 13 ? -1 : 1);
    if (rank < 1 || rank > 4 || norm_axis(axis, rank) != rank - 1) return false;
    for (int side = 0; side < 2; side++) {
        int32_t xv = n->inputs[side], mv = n->inputs[1 - side];
        if (is_const(L, xv) || !produced(L, xv) || !same_shape(L, xv, n->outputs[0])) continue;
        int32_t xt = get(L, xv);
        if (xt < 0) continue;
        if (!ig__cu_tensor_contig(T(L, xt))) continue;
        int32_t mt = get(L, mv);
        if (mt < 0) continue;
        int64_t sd[4] = {1, 1, 1, 1}, ms[4] = {0, 0, 0, 0};
        for (int32_t q = 0; q < rank; q++) sd[4 - rank + q] = val(L, xv)->shape.d[q].n;
        const ig_cu_tensor *M = T(L, mt);
        int32_t pad = 4 - M->rank;
        bool ok = pad >= 0;
        for (int q = 0; q < 4 && ok; q++) {
            if (q < pad) continue;
            int64_t d = M->dims[q - pad];
            if (d == sd[q])
                ms[q] = d == 1 ? 0 : M->strides[q - pad];
            else if (d != 1)
                ok = false;
        }
        if (!ok) continue;
        if ((*st = emit_masked_softmax(L, c, sm, xt, sd, ms, mt)) == INGOT_OK) L->done[id] = true;
        return true;
    }
    return false;
}

static ingot_status lower_matmul_or_attention(lower *L, int32_t id)
{
    ingot_status st;
    if (L->attn && L->attn[id]) return emit_attention(L, id, L->attn[id]);
    if (try_scores_softmax(L, id, &st)) return st;
    return lower_matmul(L, id);
}

static lower_fn lowering_of(int32_t op)
{
    if (is_ew_op(op) && op != IG_OP_batch_normalization) return lower_ew;
    switch (op) {
    case IG_OP_batch_normalization: return lower_ew;
    case IG_OP_identity:
    case IG_OP_dropout: return lower_identity;
    case IG_OP_reshape:
    case IG_OP_flatten:
    case IG_OP_squeeze:
    case IG_OP_unsqueeze: return lower_view_reshape;
    case IG_OP_transpose: return lower_transpose;
    case IG_OP_slice: return lower_slice;
    case IG_OP_split: return lower_split;
    case IG_OP_concat: return lower_concat;
    case IG_OP_expand: return lower_expand;
    case IG_OP_gather: return lower_gather;
    case IG_OP_pad: return lower_pad;
    case IG_OP_constant_of_shape: return lower_constant_of_shape;
    case IG_OP_conv: return lower_conv;
    case IG_OP_max_pool:
    case IG_OP_average_pool: return lower_pool;
    case IG_OP_global_average_pool:
    case IG_OP_global_max_pool:
    case IG_OP_reduce_mean:
    case IG_OP_reduce_sum:
    case IG_OP_reduce_max:
    case IG_OP_reduce_min:
    case IG_OP_arg_max: return lower_reduce;
    case IG_OP_gemm: return lower_gemm;
    case IG_OP_matmul: return lower_matmul_or_attention;
    case IG_OP_softmax:
    case IG_OP_log_softmax: return lower_softmax;
    case IG_OP_layer_normalization: return lower_layernorm;
    default: return NULL;
    }
}

const char *ig__cu_op_unsupported(const ig_graph *g, const ig_node *n)
{
    if (n->op < 0) return "unknown op";
    if (!lowering_of(n->op)) return "no CUDA kernel for this op";
    if (n->op == IG_OP_pad && strcmp(ig__attr_str(n, "mode", "constant"), "constant"))
        return "only mode 'constant' is supported";
    if (n->op == IG_OP_conv && n->n_inputs > 1 && n->inputs[1] >= 0) {
        const ig_value *w = &g->values[n->inputs[1]];
        if (!(w->flags & IG_VAL_CONST)) return "the filter must be a constant";
        if (w->shape.rank != 4 && w->shape.rank != 3) return "only 1-D and 2-D convolutions are supported";
    }
    return NULL;
}

/* ---- the driver ------------------------------------------------------------------------------------ */

static ingot_status build_consumers(lower *L)
{
    const ig_graph *g = L->g;
    int32_t nv = g->n_values;
    L->cons_off = ig__calloc((size_t)nv + 1, sizeof(int32_t));
    L->is_output = ig__calloc((size_t)nv + 1, sizeof(bool));
    if (!L->cons_off || !L->is_output) return oom(L);
    for (int32_t i = 0; i < g->n_outputs; i++) L->is_output[g->outputs[i]] = true;
    for (int pass = 0; pass < 2; pass++) {
        int32_t *fill = NULL;
        if (pass == 1) {
            for (int32_t v = 0; v < nv; v++) L->cons_off[v + 1] += L->cons_off[v];
            L->cons = ig__calloc((size_t)L->cons_off[nv] + 1, sizeof(int32_t));
            fill = ig__calloc((size_t)nv + 1, sizeof(int32_t));
            if (!L->cons || !fill) {
                ig__free(fill);
                return oom(L);
            }
        }
        for (int32_t k = 0; k < g->n_nodes; k++) {
            int32_t id = g->order[k];
            const ig_node *n = &g->nodes[id];
            if (n->folded) continue;
            for (int32_t i = 0; i < n->n_inputs; i++) {
                int32_t v = n->inputs[i];
                if (v < 0) continue;
                bool dup = false;
                for (int32_t j = 0; j < i; j++)
                    if (n->inputs[j] == v) dup = true;
                if (dup) continue;
                if (pass == 0)
                    L->cons_off[v + 1]++;
                else
                    L->cons[L->cons_off[v] + fill[v]++] = id;
            }
        }
        ig__free(fill);
    }
    return INGOT_OK;
}

/* Graph inputs consumed only by convolutions start out channels-last (the input copy transposes). */
static bool feeds_only_convs(const lower *L, int32_t v)
{
    if (L->is_output[v] || n_cons(L, v) == 0) return false;
    for (int32_t i = L->cons_off[v]; i < L->cons_off[v + 1]; i++) {
        const ig_node *c = node(L, L->cons[i]);
        if (c->op != IG_OP_conv || c->inputs[0] != v) return false;
    }
    return true;
}

ingot_status ig__cu_lower(const ig_graph *g, const ig_cu_lower_options *o, ig_cu_prog *p, ig_err *err)
{
    memset(p, 0, sizeof *p);
    ig__arena_init(&p->arena);
    p->g = g;
    p->fdt = o->precision == INGOT_DTYPE_FLOAT16 ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT;
    lower L = {.p = p, .g = g, .o = o, .err = err};
    ingot_status st = INGOT_OK;
    L.done = ig__calloc((size_t)g->n_nodes + 1, sizeof(bool));
    L.pos = ig__calloc((size_t)g->n_nodes + 1, sizeof(int32_t));
    L.lazy = ig__calloc((size_t)g->n_values + 1, sizeof(lazy_view *));
    p->val_tensor = ig__arena_array(&p->arena, (size_t)g->n_values + 1, sizeof(int32_t));
    p->val_nhwc = ig__arena_array(&p->arena, (size_t)g->n_values + 1, sizeof(int32_t));
    p->n_inputs = g->n_inputs;
    p->n_outputs = g->n_outputs;
    p->in_tensor = ig__arena_array(&p->arena, (size_t)g->n_inputs + 1, sizeof(int32_t));
    p->out_tensor = ig__arena_array(&p->arena, (size_t)g->n_outputs + 1, sizeof(int32_t));
    if (!L.done || !L.pos || !L.lazy || !p->val_tensor || !p->val_nhwc || !p->in_tensor || !p->out_tensor) {
        st = oom(&L);
        goto out;
    }
    for (int32_t v = 0; v < g->n_values; v++) p->val_tensor[v] = p->val_nhwc[v] = -1;
    for (int32_t k = 0; k < g->n_nodes; k++) L.pos[g->order[k]] = k;
    if ((st = build_consumers(&L)) != INGOT_OK) goto out;

    /* every value with a concrete shape, every op with a lowering */
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const ig_node *n = &g->nodes[g->order[k]];
        if (n->folded) continue;
        const char *why = ig__cu_op_unsupported(g, n);
        if (why) {
            st = ig__errf(err, INGOT_ERR_MODEL_UNSUPPORTED_OP, "node '%s' (%s): CUDA backend: %s", ig__node_label(n),
                          n->op_type, why);
            goto out;
        }
        for (int32_t j = 0; j < n->n_outputs; j++) {
            if (n->outputs[j] < 0) continue;
            const ig_value *v = &g->values[n->outputs[j]];
            if (!ig__shape_known(&v->shape)) {
                char s[256];
                st = ig__errf(err, INGOT_ERR_MODEL_SHAPE,
                              "node '%s' (%s): output '%s' has shape %s; bind the inputs' "
                              "shapes before building for the GPU",
                              ig__node_label(n), n->op_type, v->name, ig__shape_str(g, &v->shape, s, sizeof s));
                goto out;
            }
        }
    }

    /* fused attention: find the chains first (their nodes are absorbed before the main walk) */
    if (o->attention && p->fdt == INGOT_DTYPE_FLOAT16) {
        L.attn = ig__arena_array(&p->arena, (size_t)g->n_nodes + 1, sizeof(attn_plan *));
        if (!L.attn) {
            st = oom(&L);
            goto out;
        }
        for (int32_t k = 0; k < g->n_nodes; k++) {
            int32_t id = g->order[k], skip[16], n_skip = 0, pv = -1;
            attn_plan pl;
            if (g->nodes[id].folded || L.done[id] || !match_attention(&L, id, &pl, skip, &n_skip, &pv)) continue;
            attn_plan *keep = ig__arena_alloc(&p->arena, sizeof *keep);
            if (!keep) {
                st = oom(&L);
                goto out;
            }
            *keep = pl;
            L.attn[pv] = keep;
            for (int i = 0; i < n_skip; i++) L.done[skip[i]] = true;
            p->n_fused += n_skip;
        }
    }

    /* graph inputs: the caller's bytes (model dtype), copied/converted into the arena */
    for (int32_t i = 0; i < g->n_inputs; i++) {
        int32_t v = g->inputs[i];
        const ig_value *x = &g->values[v];
        p->in_tensor[i] = -1;
        if (x->flags & IG_VAL_CONST) continue; /* bound shape input, folded into constants */
        int64_t dims[IG_MAX_RANK];
        int32_t rank = value_dims(&L, v, dims);
        int32_t b = new_buf(&L, IG_LOC_INPUT, numel_of(rank, dims) * ingot_dtype_size(x->dtype));
        if (b < 0) {
            st = oom(&L);
            goto out;
        }
        p->bufs[b].io = i;
        int32_t src = new_tensor(&L, b, x->dtype, rank, dims, NULL, 0);
        bool nhwc = o->nhwc && rank == 4 && feeds_only_convs(&L, v);
        int32_t dst = new_dense(&L, dev_dtype(p, x->dtype), rank, dims, nhwc);
        if (src < 0 || dst < 0) {
            st = oom(&L);
            goto out;
        }
        p->in_tensor[i] = src;
        if ((st = emit_copy(&L, -1, "input copy", src, dst, 1)) != INGOT_OK) goto out;
        p->val_tensor[v] = dst;
    }

    for (int32_t k = 0; k < g->n_nodes; k++) {
        int32_t id = g->order[k];
        const ig_node *n = &g->nodes[id];
        if (n->folded || L.done[id]) continue;
        lower_fn fn = lowering_of(n->op);
        if ((st = fn(&L, id)) != INGOT_OK) {
            if (err && err->status == INGOT_OK) fail_node(&L, id, st, "lowering failed");
            goto out;
        }
        L.done[id] = true;
        for (int32_t j = 0; j < n->n_outputs; j++) {
            int32_t v = n->outputs[j];
            if (v >= 0 && !produced(&L, v) && needed_later(&L, v, NULL, 0) && !is_const(&L, v)) {
                st = fail_node(&L, id, INGOT_ERR_INTERNAL, "output '%s' was not produced", g->values[v].name);
                goto out;
            }
        }
    }

    /* graph outputs: converted to the model's dtype into the caller's buffers */
    for (int32_t j = 0; j < g->n_outputs; j++) {
        int32_t v = g->outputs[j];
        const ig_value *x = &g->values[v];
        int32_t src = get(&L, v);
        if (src < 0) {
            st = ig__errf(err, INGOT_ERR_INTERNAL, "graph output '%s' has no device tensor", x->name);
            goto out;
        }
        int64_t dims[IG_MAX_RANK];
        int32_t rank = value_dims(&L, v, dims);
        int32_t b = new_buf(&L, IG_LOC_OUTPUT, numel_of(rank, dims) * ingot_dtype_size(x->dtype));
        if (b < 0) {
            st = oom(&L);
            goto out;
        }
        p->bufs[b].io = j;
        int32_t dst = new_tensor(&L, b, x->dtype, rank, dims, NULL, 0);
        if (dst < 0) {
            st = oom(&L);
            goto out;
        }
        p->out_tensor[j] = dst;
        if ((st = emit_copy(&L, -1, "output copy", src, dst, 1)) != INGOT_OK) goto out;
    }
out:
    ig__free(L.done);
    ig__free(L.pos);
    ig__free(L.lazy);
    ig__free(L.cons_off);
    ig__free(L.cons);
    ig__free(L.is_output);
    if (st != INGOT_OK) ig__cu_prog_free(p);
    return st;
}

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
