/*
 * edit.c -- the primitives the optimizer (src/opt) rewrites graphs with: consumer lists, rewiring,
 * removal and compaction of nodes, new values and constants, attributes set or copied into the arena.
 *
 * Edits never remove values: a value whose producer was removed stays, unreferenced, so value ids
 * (graph inputs and outputs, the optimizer's report, names) keep their meaning across passes. The
 * verifier, the inference driver, the planner and the executors all skip values no live node touches.
 * Nodes are removed in two steps: ig__graph_remove_node marks one dead (ids stay valid while a pass
 * works), ig__graph_compact drops the dead ones and sorts again.
 */
#include "ir.h"

#include <stdio.h>

/* ---- consumers -------------------------------------------------------------------------------- */

void ig__uses_free(ig_uses *u)
{
    if (!u) return;
    ig__free(u->off);
    ig__free(u->node);
    ig__free(u->is_output);
    memset(u, 0, sizeof *u);
}

/* Counts (fill == NULL) or fills the CSR; `seen` dedups a node reading one value in several slots. */
static void uses_scan(const ig_graph *g, int32_t *seen, int32_t *count, int32_t *fill, int32_t *list)
{
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ig_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int32_t j = 0; j < n->n_inputs; j++) {
            int32_t v = n->inputs[j];
            if (v < 0 || v >= g->n_values || seen[v] == i) continue;
            seen[v] = i;
            if (list)
                list[fill[v]++] = i;
            else
                count[v + 1]++;
        }
    }
}

ingot_status ig__uses_build(const ig_graph *g, ig_uses *u, ig_err *err)
{
    memset(u, 0, sizeof *u);
    size_t nv = (size_t)g->n_values;
    int32_t *seen = ig__malloc(sizeof(int32_t) * (nv + 1)), *fill = NULL;
    u->n_values = g->n_values;
    u->off = ig__calloc(nv + 1, sizeof(int32_t));
    u->is_output = ig__calloc(nv + 1, sizeof(bool));
    if (!seen || !u->off || !u->is_output) goto oom;
    memset(seen, 0xff, sizeof(int32_t) * (nv + 1));
    uses_scan(g, seen, u->off, NULL, NULL);
    for (size_t v = 0; v < nv; v++) u->off[v + 1] += u->off[v];
    u->node = ig__malloc(sizeof(int32_t) * ((size_t)u->off[nv] + 1));
    fill = ig__malloc(sizeof(int32_t) * (nv + 1));
    if (!u->node || !fill) goto oom;
    memcpy(fill, u->off, sizeof(int32_t) * (nv + 1));
    memset(seen, 0xff, sizeof(int32_t) * (nv + 1));
    uses_scan(g, seen, NULL, fill, u->node);
    for (int32_t k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] >= 0 && g->outputs[k] < g->n_values) u->is_output[g->outputs[k]] = true;
    ig__free(seen);
    ig__free(fill);
    return INGOT_OK;
oom:
    ig__free(seen);
    ig__free(fill);
    ig__uses_free(u);
    return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory listing the consumers of %d tensors", (int)nv);
}

int32_t ig__uses_sole(const ig_uses *u, int32_t v)
{
    if (v < 0 || v >= u->n_values || u->is_output[v] || ig__uses_count(u, v) != 1) return -1;
    return u->node[u->off[v]];
}

/* ---- rewiring and removal ----------------------------------------------------------------------- */

void ig__graph_replace_uses(ig_graph *g, int32_t from, int32_t to)
{
    for (int32_t i = 0; i < g->n_nodes; i++) {
        ig_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int32_t j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] == from) n->inputs[j] = to;
    }
}

void ig__graph_remove_node(ig_graph *g, int32_t node)
{
    ig_node *n = &g->nodes[node];
    n->dead = true;
    /* a pass may already have handed an output to the node replacing this one: leave that producer */
    for (int32_t j = 0; j < n->n_outputs; j++) {
        int32_t v = n->outputs[j];
        if (v >= 0 && g->values[v].producer == node) g->values[v].producer = -1;
    }
}

ingot_status ig__graph_compact(ig_graph *g, ig_err *err)
{
    int32_t *map = ig__malloc(sizeof(int32_t) * ((size_t)g->n_nodes + 1));
    if (!map) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory compacting %d nodes", (int)g->n_nodes);
    int32_t live = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) {
            map[i] = -1;
            continue;
        }
        map[i] = live;
        if (live != i) g->nodes[live] = g->nodes[i];
        live++;
    }
    for (int32_t v = 0; v < g->n_values; v++) {
        int32_t p = g->values[v].producer;
        if (p >= 0) g->values[v].producer = p < g->n_nodes ? map[p] : -1;
    }
    g->n_nodes = live;
    ig__free(map);
    /* the old order names old ids: drop it so nothing reads it if sorting fails */
    ig__free(g->order);
    g->order = NULL;
    return ig__graph_toposort(g, err);
}

/* ---- new values and constants ------------------------------------------------------------------- */

int32_t ig__graph_new_value(ig_graph *g, const char *base, ig_err *err)
{
    if (!base || !base[0]) base = "t";
    if (ig__graph_find(g, base) < 0) return ig__graph_value(g, base, err);
    size_t len = strlen(base) + 24;
    char *name = ig__malloc(len);
    if (!name) {
        ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory naming a tensor after '%s'", base);
        return -1;
    }
    int32_t id = -1;
    for (long k = 1;; k++) {
        snprintf(name, len, "%s__%ld", base, k);
        if (ig__graph_find(g, name) < 0) {
            id = ig__graph_value(g, name, err);
            break;
        }
    }
    ig__free(name);
    return id;
}

int32_t ig__graph_add_const(ig_graph *g, const char *base, ingot_dtype dtype, int32_t rank, const int64_t *dims,
                            const void *data, ig_err *err)
{
    size_t es = ingot_dtype_size(dtype), bytes = es;
    if (!es || rank < 0 || rank > IG_MAX_RANK) {
        ig__errf(err, INGOT_ERR_INTERNAL, "constant '%s': dtype %s, rank %d cannot be stored", base ? base : "",
                 ingot_dtype_name(dtype), (int)rank);
        return -1;
    }
    for (int32_t k = 0; k < rank; k++)
        if (dims[k] < 0 || !ig__mul_size(bytes, (size_t)dims[k], &bytes)) {
            ig__errf(err, INGOT_ERR_INTERNAL, "constant '%s': dim %d is negative or the size overflows",
                     base ? base : "", (int)k);
            return -1;
        }
    void *copy = NULL;
    if (bytes) {
        copy = ig__arena_alloc_aligned(&g->arena, bytes, 64);
        if (!copy) {
            ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory storing constant '%s' (%zu bytes)", base ? base : "",
                     bytes);
            return -1;
        }
        memcpy(copy, data, bytes);
    }
    int32_t id = ig__graph_new_value(g, base, err);
    if (id < 0) return -1;
    ig_value *v = &g->values[id];
    v->flags |= IG_VAL_INITIALIZER | IG_VAL_CONST;
    v->dtype = dtype;
    v->shape.rank = rank;
    v->c.dtype = dtype;
    v->c.rank = rank;
    for (int32_t k = 0; k < rank; k++) {
        v->shape.d[k] = ig__dim_const(dims[k]);
        v->c.dims[k] = dims[k];
    }
    v->c.data = copy;
    v->c.n_bytes = bytes;
    v->c.name = v->name;
    g->n_initializers++;
    return id;
}

/* ---- attributes --------------------------------------------------------------------------------- */

/* Slot i of n, cleared and named; NULL (with err set) when the slot does not exist or on OOM. */
static ig_attr *attr_slot(ig_graph *g, ig_node *n, int32_t i, const char *name, ig_attr_type type, ig_err *err)
{
    if (i < 0 || i >= n->n_attrs) {
        ig__errf(err, INGOT_ERR_INTERNAL, "node '%s' (%s): attribute slot %d of %d", ig__node_label(n), n->op_type,
                 (int)i, (int)n->n_attrs);
        return NULL;
    }
    const char *nm = ig__arena_strdup(&g->arena, name);
    if (!nm) {
        ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory setting attribute '%s' of node '%s'", name,
                 ig__node_label(n));
        return NULL;
    }
    ig_attr *a = &n->attrs[i];
    memset(a, 0, sizeof *a);
    a->name = nm;
    a->type = type;
    return a;
}

static ingot_status attr_oom(const ig_node *n, const char *name, ig_err *err)
{
    return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory setting attribute '%s' of node '%s'", name,
                    ig__node_label(n));
}

/* Arena copy of n bytes (NULL for none); *ok false on OOM. */
static void *dup_bytes(ig_graph *g, const void *p, size_t n, size_t align, bool *ok)
{
    if (!n || !p) return NULL;
    void *q = ig__arena_alloc_aligned(&g->arena, n, align);
    if (!q) {
        *ok = false;
        return NULL;
    }
    memcpy(q, p, n);
    return q;
}

ingot_status ig__node_set_int(ig_graph *g, ig_node *n, int32_t i, const char *name, int64_t v, ig_err *err)
{
    ig_attr *a = attr_slot(g, n, i, name, IG_ATTR_INT, err);
    if (!a) return err ? err->status : INGOT_ERR_INTERNAL;
    a->i = v;
    return INGOT_OK;
}

ingot_status ig__node_set_float(ig_graph *g, ig_node *n, int32_t i, const char *name, float v, ig_err *err)
{
    ig_attr *a = attr_slot(g, n, i, name, IG_ATTR_FLOAT, err);
    if (!a) return err ? err->status : INGOT_ERR_INTERNAL;
    a->f = v;
    return INGOT_OK;
}

ingot_status ig__node_set_string(ig_graph *g, ig_node *n, int32_t i, const char *name, const char *v, ig_err *err)
{
    ig_attr *a = attr_slot(g, n, i, name, IG_ATTR_STRING, err);
    if (!a) return err ? err->status : INGOT_ERR_INTERNAL;
    a->s = ig__arena_strdup(&g->arena, v);
    a->s_len = strlen(v);
    return a->s ? INGOT_OK : attr_oom(n, name, err);
}

ingot_status ig__node_set_ints(ig_graph *g, ig_node *n, int32_t i, const char *name, const int64_t *v, int64_t count,
                               ig_err *err)
{
    ig_attr *a = attr_slot(g, n, i, name, IG_ATTR_INTS, err);
    if (!a) return err ? err->status : INGOT_ERR_INTERNAL;
    bool ok = true;
    a->n = count;
    a->ints = dup_bytes(g, v, sizeof(int64_t) * (size_t)count, 16, &ok);
    return ok ? INGOT_OK : attr_oom(n, name, err);
}

ingot_status ig__node_set_floats(ig_graph *g, ig_node *n, int32_t i, const char *name, const float *v, int64_t count,
                                 ig_err *err)
{
    ig_attr *a = attr_slot(g, n, i, name, IG_ATTR_FLOATS, err);
    if (!a) return err ? err->status : INGOT_ERR_INTERNAL;
    bool ok = true;
    a->n = count;
    a->floats = dup_bytes(g, v, sizeof(float) * (size_t)count, 16, &ok);
    return ok ? INGOT_OK : attr_oom(n, name, err);
}

/* A deep copy of one tensor attribute: struct, name and data (64-byte aligned, as kernels read it). */
static bool copy_tensor(ig_graph *g, ig_const *dst, const ig_const *src)
{
    bool ok = true;
    *dst = *src;
    dst->name = src->name ? ig__arena_strdup(&g->arena, src->name) : NULL;
    dst->data = dup_bytes(g, src->data, src->n_bytes, 64, &ok);
    return ok && (dst->name || !src->name);
}

ingot_status ig__node_copy_attr(ig_graph *g, ig_node *n, int32_t i, const ig_attr *src, ig_err *err)
{
    /* src may live in this node's own slot: read it whole before the slot is cleared */
    ig_attr s = *src;
    ig_attr *a = attr_slot(g, n, i, s.name ? s.name : "", s.type, err);
    if (!a) return err ? err->status : INGOT_ERR_INTERNAL;
    bool ok = true;
    a->i = s.i;
    a->f = s.f;
    a->n = s.n;
    size_t cnt = s.n > 0 ? (size_t)s.n : 0;
    if (s.s) {
        char *p = ig__arena_alloc(&g->arena, s.s_len + 1);
        if (p) {
            memcpy(p, s.s, s.s_len);
            a->s = p;
            a->s_len = s.s_len;
        } else {
            ok = false;
        }
    }
    if (s.ints) a->ints = dup_bytes(g, s.ints, sizeof(int64_t) * cnt, 16, &ok);
    if (s.floats) a->floats = dup_bytes(g, s.floats, sizeof(float) * cnt, 16, &ok);
    if (s.strings && cnt) {
        const char **st = ig__arena_array(&g->arena, cnt, sizeof(char *));
        ok = ok && st;
        for (size_t k = 0; st && k < cnt; k++) {
            st[k] = s.strings[k] ? ig__arena_strdup(&g->arena, s.strings[k]) : NULL;
            ok = ok && (st[k] || !s.strings[k]);
        }
        a->strings = st;
    }
    if (s.t) {
        size_t nt = s.type == IG_ATTR_TENSORS ? cnt : 1;
        ig_const *t = nt ? ig__arena_array(&g->arena, nt, sizeof(ig_const)) : NULL;
        ok = ok && (t || !nt);
        for (size_t k = 0; t && k < nt; k++) ok = copy_tensor(g, &t[k], &s.t[k]) && ok;
        a->t = t;
    }
    if (s.raw) {
        a->raw = dup_bytes(g, s.raw, s.raw_len, 16, &ok);
        a->raw_len = s.raw_len;
    }
    return ok ? INGOT_OK : attr_oom(n, a->name, err);
}
