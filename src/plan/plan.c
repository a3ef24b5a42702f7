/*
 * plan.c -- the graph layer of the planner: which values live in the arena and when, zero-copy
 * aliases, in-place reuse, per-node scratch, and a memory-aware execution order (see plan.h).
 *
 * Steps are positions in the execution order of the nodes that actually run (folded nodes are
 * skipped: their outputs are constants). A value produced at step s and last read at step t lives
 * on [s, t]; at step s the node reads its inputs while writing its outputs, so both are live there.
 * Graph inputs are the caller's, constants belong to the weights account: neither is planned.
 */
#include "plan.h"

#include <inttypes.h>

ig_plan_options ig__plan_options_default(void)
{
    ig_plan_options o;
    memset(&o, 0, sizeof o);
    o.align = IG_PLAN_ALIGN_DEFAULT;
    o.reorder = 1;
    o.alias = 1;
    o.inplace = 1;
    o.effort = 1;
    return o;
}

const char *ig__plan_kind_name(ig_plan_kind k)
{
    switch (k) {
    case IG_PLAN_OWN: return "own";
    case IG_PLAN_ALIAS: return "alias";
    case IG_PLAN_INPLACE: return "in-place";
    default: return "none";
    }
}

void ig__plan_free(ig_plan *plan)
{
    if (!plan) return;
    ig__free(plan->order);
    ig__free(plan->step_of_node);
    ig__free(plan->values);
    ig__free(plan->scratch_offset);
    ig__free(plan->scratch_bytes);
    ig__free(plan->buffers);
    ig__free(plan->live);
    memset(plan, 0, sizeof *plan);
}

/* ---- what does not depend on the order ---- */

typedef struct gctx {
    const ig_graph *g;
    ig_plan_options o;
    int32_t n_exec;    /* nodes that run */
    int32_t *exec;     /* [n_exec] in g->order's order */
    uint32_t *flags;   /* [n_nodes] op flags */
    uint64_t *scratch; /* [n_nodes] scratch bytes */
    uint64_t *bytes;   /* [n_values] bytes of planned values */
    uint8_t *planned;  /* [n_values] 1 when the value goes into the arena */
    uint8_t *is_out;   /* [n_values] graph output */
    int32_t *root0;    /* [n_values] alias root, decided without regard to order */
} gctx;

static void gctx_free(gctx *c)
{
    ig__free(c->exec);
    ig__free(c->flags);
    ig__free(c->scratch);
    ig__free(c->bytes);
    ig__free(c->planned);
    ig__free(c->is_out);
    ig__free(c->root0);
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

/* An alias of input 0 is possible when both are in the arena, the output is not a graph output
 * (the caller reads outputs from their own bytes; an alias would make them depend on another
 * tensor's lifetime) and the byte sizes agree. */
static bool alias_ok(const gctx *c, const ig_node *n)
{
    if (!c->o.alias || !(c->flags[n - c->g->nodes] & IG_OP_ALIAS)) return false;
    if (n->n_inputs < 1 || n->n_outputs < 1) return false;
    int32_t i = n->inputs[0], o = n->outputs[0];
    return i >= 0 && o >= 0 && c->planned[i] && c->planned[o] && !c->is_out[o] && c->bytes[i] == c->bytes[o];
}

static ingot_status gctx_init(gctx *c, const ig_graph *g, const ig_plan_options *opt, ig_err *err)
{
    memset(c, 0, sizeof *c);
    c->g = g;
    c->o = opt ? *opt : ig__plan_options_default();
    if (!c->o.align) c->o.align = IG_PLAN_ALIGN_DEFAULT;
    if (c->o.align & (c->o.align - 1))
        return ig__errf(err, INGOT_ERR_INVALID_ARG, "plan alignment %" PRIu64 " is not a power of two", c->o.align);
    if (c->o.guard > UINT64_MAX / 4)
        return ig__errf(err, INGOT_ERR_INVALID_ARG, "guard of %" PRIu64 " bytes is too large", c->o.guard);
    if (g->n_nodes > 0 && !g->order)
        return ig__errf(err, INGOT_ERR_INTERNAL, "planning a graph that has no execution order (not sorted)");
    size_t nn = (size_t)g->n_nodes + 1, nv = (size_t)g->n_values + 1;
    c->exec = ig__malloc(sizeof(int32_t) * nn);
    c->flags = ig__calloc(nn, sizeof(uint32_t));
    c->scratch = ig__calloc(nn, sizeof(uint64_t));
    c->bytes = ig__calloc(nv, sizeof(uint64_t));
    c->planned = ig__calloc(nv, 1);
    c->is_out = ig__calloc(nv, 1);
    c->root0 = ig__malloc(sizeof(int32_t) * nv);
    if (!c->exec || !c->flags || !c->scratch || !c->bytes || !c->planned || !c->is_out || !c->root0)
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory planning %d nodes", (int)g->n_nodes);
    for (int32_t k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] >= 0 && g->outputs[k] < g->n_values) c->is_out[g->outputs[k]] = 1;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        int32_t id = g->order[k];
        if (id < 0 || id >= g->n_nodes)
            return ig__errf(err, INGOT_ERR_INTERNAL, "execution order holds node id %d of %d", (int)id,
                            (int)g->n_nodes);
        const ig_node *n = &g->nodes[id];
        if (n->folded) continue;
        c->exec[c->n_exec++] = id;
        const ig_op_def *d = n->op >= 0 && n->op < IG_OP_COUNT ? ig__op_table[n->op] : NULL;
        c->flags[id] = c->o.op_flags ? c->o.op_flags(c->o.user, g, n) : d ? d->flags : 0;
        c->scratch[id] = c->o.scratch ? c->o.scratch(c->o.user, g, n) : d && d->cpu_scratch ? d->cpu_scratch(g, n) : 0;
        if (c->o.workspace_limit && c->scratch[id] > c->o.workspace_limit)
            return ig__errf(err, INGOT_ERR_INVALID_ARG,
                            "node '%s' (%s) needs %" PRIu64
                            " bytes of scratch, more than the workspace limit of %" PRIu64 " bytes",
                            ig__node_label(n), n->op_type, c->scratch[id], c->o.workspace_limit);
        for (int32_t j = 0; j < n->n_outputs; j++) {
            int32_t v = n->outputs[j];
            if (v < 0) continue;
            const ig_value *val = &g->values[v];
            if (val->flags & (IG_VAL_CONST | IG_VAL_INPUT) || val->producer != id) continue;
            int64_t numel;
            size_t es = ingot_dtype_size(val->dtype);
            if (!es || !ig__shape_numel(&val->shape, &numel)) {
                char sb[256];
                return ig__errf(
                    err, INGOT_ERR_MODEL_SHAPE,
                    "tensor '%s' (output %d of node '%s' (%s)) has no concrete size: shape %s, dtype %s; bind "
                    "the input shapes and run shape inference before planning",
                    val->name, (int)j, ig__node_label(n), n->op_type, ig__shape_str(g, &val->shape, sb, sizeof sb),
                    ingot_dtype_name(val->dtype));
            }
            size_t b;
            if (!ig__mul_size((size_t)numel, es, &b) || b > UINT64_MAX / 2)
                return ig__errf(err, INGOT_ERR_MODEL_SHAPE, "tensor '%s' is too large (%" PRId64 " elements)",
                                val->name, numel);
            c->planned[v] = 1;
            c->bytes[v] = b;
        }
    }
    /* every tensor and scratch its own bytes bounds every sum the packers and the orderings make: past
     * IG_PLAN_MAX_BYTES no machine has the memory, and below it int64 arithmetic cannot overflow */
    uint64_t total = 0, cap = IG_PLAN_MAX_BYTES / 1024; /* KiB, each term rounded up: no overflow */
    for (int32_t v = 0; v < g->n_values && total <= cap; v++) total += c->planned[v] ? c->bytes[v] / 1024 + 1 : 0;
    for (int32_t k = 0; k < g->n_nodes && total <= cap; k++) total += c->scratch[k] / 1024 + (c->scratch[k] != 0);
    if (total > cap)
        return ig__errf(err, INGOT_ERR_MODEL_SHAPE,
                        "the activations and scratch of these shapes would need more than the %" PRIu64
                        " KiB ingot plans for",
                        cap);
    /* aliases depend only on flags, sizes and graph outputs, not on the order */
    for (int32_t v = 0; v < g->n_values; v++) c->root0[v] = v;
    for (int32_t k = 0; k < c->n_exec; k++) {
        const ig_node *n = &g->nodes[c->exec[k]];
        if (alias_ok(c, n)) c->root0[n->outputs[0]] = c->root0[n->inputs[0]];
    }
    return INGOT_OK;
}

/* ---- one candidate layout: liveness, sharing and packing for one order ---- */

typedef struct layout {
    int32_t n_steps;
    int32_t *order;        /* [n_steps] */
    int32_t *step_of;      /* [n_nodes] */
    int32_t *first, *last; /* [n_values] own live range */
    int32_t *root;         /* [n_values] */
    uint8_t *kind;         /* [n_values] */
    int32_t *glast;        /* [n_values] last step of the group rooted here */
    int32_t n_bufs;
    ig_pack_buf *bufs;     /* roots, then scratch */
    int32_t *buf_value;    /* [n_bufs] root value or -1 */
    int32_t *buf_node;     /* [n_bufs] scratch node or -1 */
    int32_t *buf_of_value; /* [n_values] */
    uint64_t *off;         /* [n_bufs] */
    ig_pack_result res;
} layout;

static void layout_free(layout *L)
{
    ig__free(L->order);
    ig__free(L->step_of);
    ig__free(L->first);
    ig__free(L->last);
    ig__free(L->root);
    ig__free(L->kind);
    ig__free(L->glast);
    ig__free(L->bufs);
    ig__free(L->buf_value);
    ig__free(L->buf_node);
    ig__free(L->buf_of_value);
    ig__free(L->off);
    memset(L, 0, sizeof *L);
}

static ingot_status layout_build(const gctx *c, const int32_t *order, int32_t effort, layout *L, ig_err *err)
{
    const ig_graph *g = c->g;
    int32_t ns = c->n_exec;
    size_t nv = (size_t)g->n_values + 1, nn = (size_t)g->n_nodes + 1, nb = (size_t)g->n_values + (size_t)ns + 1;
    memset(L, 0, sizeof *L);
    L->n_steps = ns;
    L->order = ig__malloc(sizeof(int32_t) * ((size_t)ns + 1));
    L->step_of = ig__malloc(sizeof(int32_t) * nn);
    L->first = ig__malloc(sizeof(int32_t) * nv);
    L->last = ig__malloc(sizeof(int32_t) * nv);
    L->root = ig__malloc(sizeof(int32_t) * nv);
    L->kind = ig__calloc(nv, 1);
    L->glast = ig__malloc(sizeof(int32_t) * nv);
    L->bufs = ig__malloc(sizeof(ig_pack_buf) * nb);
    L->buf_value = ig__malloc(sizeof(int32_t) * nb);
    L->buf_node = ig__malloc(sizeof(int32_t) * nb);
    L->buf_of_value = ig__malloc(sizeof(int32_t) * nv);
    L->off = ig__malloc(sizeof(uint64_t) * nb);
    if (!L->order || !L->step_of || !L->first || !L->last || !L->root || !L->kind || !L->glast || !L->bufs ||
        !L->buf_value || !L->buf_node || !L->buf_of_value || !L->off)
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory planning %d nodes", (int)g->n_nodes);
    memcpy(L->order, order, sizeof(int32_t) * (size_t)ns);
    for (int32_t k = 0; k < g->n_nodes; k++) L->step_of[k] = -1;
    for (int32_t s = 0; s < ns; s++) L->step_of[order[s]] = s;
    for (int32_t v = 0; v < g->n_values; v++) {
        L->first[v] = L->last[v] = -1;
        L->root[v] = -1;
        L->buf_of_value[v] = -1;
    }
    /* liveness: produced at its node's step, live until its last reader; outputs to the end */
    for (int32_t s = 0; s < ns; s++) {
        const ig_node *n = &g->nodes[order[s]];
        for (int32_t j = 0; j < n->n_outputs; j++) {
            int32_t v = n->outputs[j];
            if (v >= 0 && c->planned[v] && g->values[v].producer == order[s]) L->first[v] = L->last[v] = s;
        }
    }
    for (int32_t s = 0; s < ns; s++) {
        const ig_node *n = &g->nodes[order[s]];
        for (int32_t j = 0; j < n->n_inputs; j++) {
            int32_t v = n->inputs[j];
            if (v < 0 || !c->planned[v]) continue;
            if (L->first[v] < 0 || L->first[v] > s)
                return ig__errf(err, INGOT_ERR_INTERNAL,
                                "node '%s' (%s) at step %d reads '%s' before it is produced (order is not topological)",
                                ig__node_label(n), n->op_type, (int)s, g->values[v].name);
            if (s > L->last[v]) L->last[v] = s;
        }
    }
    for (int32_t v = 0; v < g->n_values; v++)
        if (c->planned[v] && c->is_out[v] && ns > 0) L->last[v] = ns - 1;
    /* sharing, in step order: an alias joins its source's group; an in-place output joins its input's
     * group when nothing reads that group after this step */
    for (int32_t v = 0; v < g->n_values; v++)
        if (c->planned[v]) {
            L->root[v] = v;
            L->kind[v] = IG_PLAN_OWN;
            L->glast[v] = L->last[v];
        }
    for (int32_t s = 0; s < ns; s++) {
        const ig_node *n = &g->nodes[order[s]];
        if (n->n_inputs < 1 || n->n_outputs < 1) continue;
        int32_t i = n->inputs[0], o = n->outputs[0];
        if (alias_ok(c, n)) {
            int32_t r = L->root[i];
            L->root[o] = r;
            L->kind[o] = IG_PLAN_ALIAS;
            if (L->last[o] > L->glast[r]) L->glast[r] = L->last[o];
            continue;
        }
        if (!c->o.inplace || !(c->flags[order[s]] & IG_OP_INPLACE)) continue;
        if (i < 0 || o < 0 || !c->planned[i] || !c->planned[o] || c->is_out[o]) continue;
        int32_t r = L->root[i];
        if (c->is_out[r] || L->glast[r] != s || c->bytes[r] != c->bytes[o]) continue;
        bool shared = false; /* another input viewing the same bytes differently */
        for (int32_t j = 1; j < n->n_inputs && !shared; j++) {
            int32_t x = n->inputs[j];
            if (x >= 0 && x != i && c->planned[x] && L->root[x] == r) shared = true;
        }
        if (shared) continue;
        L->root[o] = r;
        L->kind[o] = IG_PLAN_INPLACE;
        if (L->last[o] > L->glast[r]) L->glast[r] = L->last[o];
    }
    /* buffers: one per group, one per node that needs scratch. Groups in the order their roots are
     * produced (step, then output slot), never in value-id order: ids are an accident of how the graph
     * was read (an engine file's import numbers values differently), and the packers' tie-breaks follow
     * buffer order, so this keeps the plan a function of the graph alone. */
    int32_t k = 0;
    for (int32_t s = 0; s < ns; s++) {
        const ig_node *n = &g->nodes[order[s]];
        for (int32_t j = 0; j < n->n_outputs; j++) {
            int32_t v = n->outputs[j];
            if (v < 0 || !c->planned[v] || L->root[v] != v || L->buf_of_value[v] >= 0 ||
                g->values[v].producer != order[s])
                continue;
            L->bufs[k] = (ig_pack_buf){c->bytes[v] + c->o.guard, L->first[v], L->glast[v]};
            L->buf_value[k] = v;
            L->buf_node[k] = -1;
            L->buf_of_value[v] = k;
            k++;
        }
    }
    for (int32_t s = 0; s < ns; s++) {
        uint64_t sc = c->scratch[order[s]];
        if (!sc) continue;
        L->bufs[k] = (ig_pack_buf){sc + c->o.guard, s, s};
        L->buf_value[k] = -1;
        L->buf_node[k] = order[s];
        k++;
    }
    L->n_bufs = k;
    for (int32_t v = 0; v < g->n_values; v++)
        if (c->planned[v]) L->buf_of_value[v] = L->buf_of_value[L->root[v]];
    if (effort < 0) { /* the bound alone */
        L->res.lower_bound = ig__pack_lower_bound(L->bufs, L->n_bufs, c->o.align, &L->res.peak_step);
        return INGOT_OK;
    }
    ig_pack_options po = ig__pack_options_default();
    po.align = c->o.align;
    po.effort = effort;
    return ig__pack(L->bufs, L->n_bufs, &po, L->off, &L->res, err);
}

/* ---- memory-aware order ---- */

typedef struct sched {
    const gctx *c;
    int32_t *pending; /* [n_values] reads left of each group */
    uint8_t *done;    /* [n_nodes] */
} sched;

/* bytes a node allocates (outputs that own a buffer) */
static int64_t node_alloc(const sched *S, int32_t id)
{
    const gctx *c = S->c;
    const ig_node *n = &c->g->nodes[id];
    int64_t a = 0;
    for (int32_t j = 0; j < n->n_outputs; j++) {
        int32_t v = n->outputs[j];
        if (v >= 0 && c->planned[v] && c->root0[v] == v && c->g->values[v].producer == id) a += (int64_t)c->bytes[v];
    }
    return a;
}

/* bytes freed when node id runs: groups whose last pending reads are this node's */
static int64_t node_frees(const sched *S, int32_t id)
{
    const gctx *c = S->c;
    const ig_node *n = &c->g->nodes[id];
    int64_t f = 0;
    for (int32_t j = 0; j < n->n_inputs; j++) {
        int32_t v = n->inputs[j];
        if (v < 0 || !c->planned[v]) continue;
        int32_t gr = c->root0[v], uses = 0;
        bool first_pos = true;
        for (int32_t q = 0; q < n->n_inputs; q++) {
            int32_t u = n->inputs[q];
            if (u < 0 || !c->planned[u] || c->root0[u] != gr) continue;
            uses++;
            if (q < j) first_pos = false;
        }
        if (first_pos && S->pending[gr] == uses && !c->is_out[gr]) f += (int64_t)c->bytes[gr];
    }
    return f;
}

static void node_run(sched *S, int32_t id)
{
    const gctx *c = S->c;
    const ig_node *n = &c->g->nodes[id];
    for (int32_t j = 0; j < n->n_inputs; j++) {
        int32_t v = n->inputs[j];
        if (v >= 0 && c->planned[v]) S->pending[c->root0[v]]--;
    }
    S->done[id] = 1;
}

/* List scheduling: among the nodes whose inputs are ready, run the one that frees the most bytes net
 * of what it allocates (aliases allocate nothing; a buffer is freed when the last reader of any
 * value sharing it has run), ties to the earlier node of the original order. This runs a branch of
 * an Inception block or a DenseNet layer to completion before the next starts, instead of holding
 * every branch's intermediate tensors at once. Source nodes (no computed inputs: weights made by
 * ConstantOfShape, a Shape of a graph input) are not scheduled on their own: each is pulled in just
 * before its first consumer, so their outputs do not sit in the arena from the start. */
static ingot_status memory_order(const gctx *c, int32_t *out, ig_err *err)
{
    const ig_graph *g = c->g;
    int32_t ne = c->n_exec;
    size_t nn = (size_t)g->n_nodes + 1, nv = (size_t)g->n_values + 1;
    ingot_status st = INGOT_OK;
    sched S = {c, ig__calloc(nv, sizeof(int32_t)), ig__calloc(nn, 1)};
    int32_t *pos = ig__malloc(sizeof(int32_t) * nn);  /* position in the original order */
    int32_t *indeg = ig__calloc(nn, sizeof(int32_t)); /* unfinished non-source producers */
    uint8_t *src = ig__calloc(nn, 1);
    int32_t *cstart = ig__calloc(nv + 1, sizeof(int32_t)); /* consumers of each value */
    int32_t *clist = NULL, *ready = ig__malloc(sizeof(int32_t) * nn);
    if (!S.pending || !S.done || !pos || !indeg || !src || !cstart || !ready) goto oom;
    for (int32_t k = 0; k < g->n_nodes; k++) pos[k] = -1;
    for (int32_t k = 0; k < ne; k++) pos[c->exec[k]] = k;
    size_t n_edges = 0;
    for (int32_t k = 0; k < ne; k++) {
        int32_t id = c->exec[k];
        const ig_node *n = &g->nodes[id];
        src[id] = 1;
        for (int32_t j = 0; j < n->n_inputs; j++) {
            int32_t v = n->inputs[j];
            if (v < 0) continue;
            if (c->planned[v]) S.pending[c->root0[v]]++;
            int32_t p = g->values[v].producer;
            if (p >= 0 && pos[p] >= 0) {
                cstart[v + 1]++;
                n_edges++;
                src[id] = 0;
            }
        }
    }
    for (int32_t v = 0; v < g->n_values; v++) cstart[v + 1] += cstart[v];
    clist = ig__malloc(sizeof(int32_t) * (n_edges + 1));
    if (!clist) goto oom;
    {
        int32_t *fill = ig__malloc(sizeof(int32_t) * nv);
        if (!fill) goto oom;
        memcpy(fill, cstart, sizeof(int32_t) * (size_t)g->n_values);
        for (int32_t k = 0; k < ne; k++) {
            int32_t id = c->exec[k];
            const ig_node *n = &g->nodes[id];
            for (int32_t j = 0; j < n->n_inputs; j++) {
                int32_t v = n->inputs[j];
                if (v < 0) continue;
                int32_t p = g->values[v].producer;
                if (p >= 0 && pos[p] >= 0) {
                    clist[fill[v]++] = id;
                    if (!src[p]) indeg[id]++;
                }
            }
        }
        ig__free(fill);
    }
    int32_t nr = 0, done = 0;
    for (int32_t k = 0; k < ne; k++)
        if (!src[c->exec[k]] && !indeg[c->exec[k]]) ready[nr++] = c->exec[k];
    while (nr > 0) {
        int32_t bi = 0;
        int64_t best_delta = INT64_MAX;
        for (int32_t r = 0; r < nr; r++) {
            const ig_node *n = &g->nodes[ready[r]];
            int64_t delta = node_alloc(&S, ready[r]) - node_frees(&S, ready[r]);
            for (int32_t j = 0; j < n->n_inputs; j++) { /* sources it would pull in */
                int32_t v = n->inputs[j], p = v >= 0 ? g->values[v].producer : -1;
                if (p >= 0 && pos[p] >= 0 && src[p] && !S.done[p]) delta += node_alloc(&S, p);
            }
            if (delta < best_delta || (delta == best_delta && pos[ready[r]] < pos[ready[bi]])) {
                best_delta = delta;
                bi = r;
            }
        }
        int32_t id = ready[bi];
        ready[bi] = ready[--nr];
        const ig_node *n = &g->nodes[id];
        for (int32_t j = 0; j < n->n_inputs; j++) {
            int32_t v = n->inputs[j], p = v >= 0 ? g->values[v].producer : -1;
            if (p >= 0 && pos[p] >= 0 && src[p] && !S.done[p]) {
                node_run(&S, p);
                out[done++] = p;
            }
        }
        node_run(&S, id);
        out[done++] = id;
        for (int32_t j = 0; j < n->n_outputs; j++) {
            int32_t v = n->outputs[j];
            if (v < 0 || g->values[v].producer != id) continue;
            for (int32_t q = cstart[v]; q < cstart[v + 1]; q++)
                if (--indeg[clist[q]] == 0) ready[nr++] = clist[q];
        }
    }
    /* sources nobody reads (their outputs are graph outputs or unused) last: shortest lives */
    for (int32_t k = 0; k < ne; k++)
        if (!S.done[c->exec[k]]) {
            node_run(&S, c->exec[k]);
            out[done++] = c->exec[k];
        }
    if (done != ne)
        st = ig__errf(err, INGOT_ERR_INTERNAL, "memory-aware order scheduled %d of %d nodes (dependency cycle?)",
                      (int)done, (int)ne);
    goto out;
oom:
    st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory ordering %d nodes", (int)g->n_nodes);
out:
    ig__free(S.pending);
    ig__free(S.done);
    ig__free(pos);
    ig__free(indeg);
    ig__free(src);
    ig__free(cstart);
    ig__free(clist);
    ig__free(ready);
    return st;
}

/* ---- the plan ---- */

static ingot_status plan_fill(const gctx *c, const layout *L, ig_plan *p, ig_err *err)
{
    const ig_graph *g = c->g;
    int32_t ns = L->n_steps;
    p->arena_bytes = L->res.arena;
    p->lower_bound = L->res.lower_bound;
    p->align = c->o.align;
    p->guard = c->o.guard;
    p->strategy = L->res.strategy;
    p->peak_step = L->res.peak_step;
    p->n_steps = ns;
    p->n_values = g->n_values;
    p->n_nodes = g->n_nodes;
    p->n_buffers = L->n_bufs;
    p->order = ig__malloc(sizeof(int32_t) * ((size_t)ns + 1));
    p->step_of_node = ig__malloc(sizeof(int32_t) * ((size_t)g->n_nodes + 1));
    p->values = ig__calloc((size_t)g->n_values + 1, sizeof(ig_plan_value));
    p->scratch_offset = ig__calloc((size_t)g->n_nodes + 1, sizeof(uint64_t));
    p->scratch_bytes = ig__calloc((size_t)g->n_nodes + 1, sizeof(uint64_t));
    p->buffers = ig__malloc(sizeof(ig_plan_buffer) * ((size_t)L->n_bufs + 1));
    p->live = ig__calloc((size_t)ns + 1, sizeof(uint64_t));
    if (!p->order || !p->step_of_node || !p->values || !p->scratch_offset || !p->scratch_bytes || !p->buffers ||
        !p->live)
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory writing the plan of %d nodes", (int)g->n_nodes);
    memcpy(p->order, L->order, sizeof(int32_t) * (size_t)ns);
    memcpy(p->step_of_node, L->step_of, sizeof(int32_t) * (size_t)g->n_nodes);
    uint64_t no_reuse = 0;
    for (int32_t b = 0; b < L->n_bufs; b++) {
        ig_plan_buffer *pb = &p->buffers[b];
        pb->offset = L->off[b];
        pb->bytes = L->bufs[b].size - c->o.guard; /* what the tensor or scratch uses; the guard follows */
        pb->first = L->bufs[b].first;
        pb->last = L->bufs[b].last;
        pb->value = L->buf_value[b];
        pb->node = L->buf_node[b];
        if (pb->node >= 0) {
            p->scratch_offset[pb->node] = pb->offset;
            p->scratch_bytes[pb->node] = pb->bytes;
            if (pb->bytes > p->workspace_max) p->workspace_max = pb->bytes;
            no_reuse += align_up(pb->bytes + c->o.guard, c->o.align);
        }
        /* the memory curve as a difference array: aligned bytes added at first, removed after last */
        uint64_t a = align_up(pb->bytes + c->o.guard, c->o.align);
        p->live[pb->first] += a;
        if (pb->last + 1 < ns) p->live[pb->last + 1] -= a; /* wraps; the prefix sum undoes it */
    }
    for (int32_t s = 1; s < ns; s++) p->live[s] += p->live[s - 1];
    for (int32_t v = 0; v < g->n_values; v++) {
        ig_plan_value *pv = &p->values[v];
        pv->root = -1;
        pv->buffer = -1;
        pv->first = pv->last = -1;
        if (!c->planned[v]) continue;
        pv->kind = L->kind[v];
        pv->root = L->root[v];
        pv->buffer = L->buf_of_value[v];
        pv->bytes = c->bytes[v];
        pv->offset = L->off[pv->buffer];
        pv->first = L->first[v];
        pv->last = L->last[v];
        no_reuse += align_up(c->bytes[v] + c->o.guard, c->o.align);
    }
    p->no_reuse_bytes = no_reuse;
    return INGOT_OK;
}

ingot_status ig__plan_graph(const ig_graph *g, const ig_plan_options *opt, ig_plan *plan, ig_err *err)
{
    ig__plan_free(plan);
    gctx c;
    layout a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    int32_t *mo = NULL;
    ingot_status st = gctx_init(&c, g, opt, err);
    if (st != INGOT_OK) goto out;
    IG_TRY(st, layout_build(&c, c.exec, c.o.effort, &a, err), out);
    plan->arena_original = a.res.arena;
    plan->lb_original = a.res.lower_bound;
    const layout *use = &a;
    /* the memory-aware order, kept only when its arena is smaller */
    if (c.o.reorder && c.n_exec > 2 && a.res.arena > 0) {
        mo = ig__malloc(sizeof(int32_t) * ((size_t)c.n_exec + 1));
        if (!mo) {
            st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory ordering %d nodes", (int)g->n_nodes);
            goto out;
        }
        IG_TRY(st, memory_order(&c, mo, err), out);
        if (memcmp(mo, c.exec, sizeof(int32_t) * (size_t)c.n_exec) != 0) {
            /* its lower bound first: when that is not below the original arena, this order cannot
             * win and is not packed (arena_reordered stays 0) */
            IG_TRY(st, layout_build(&c, mo, -1, &b, err), out);
            plan->lb_reordered = b.res.lower_bound;
            if (b.res.lower_bound < a.res.arena) {
                layout_free(&b);
                IG_TRY(st, layout_build(&c, mo, c.o.effort, &b, err), out);
                plan->arena_reordered = b.res.arena;
                if (b.res.arena < a.res.arena) use = &b;
            }
        } else {
            plan->arena_reordered = a.res.arena;
            plan->lb_reordered = a.res.lower_bound;
        }
    }
    uint64_t ao = plan->arena_original, lo = plan->lb_original, ar = plan->arena_reordered, lr = plan->lb_reordered;
    st = plan_fill(&c, use, plan, err);
    plan->reordered = use == &b;
    plan->arena_original = ao;
    plan->lb_original = lo;
    plan->arena_reordered = ar;
    plan->lb_reordered = lr;
out:
    if (st != INGOT_OK) ig__plan_free(plan);
    ig__free(mo);
    layout_free(&a);
    layout_free(&b);
    gctx_free(&c);
    return st;
}
