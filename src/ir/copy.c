/*
 * copy.c -- copies of a graph: a deep clone (the engine's own graph, which outlives the model it came
 * from) and instances (a context's graph: what inference writes is the instance's, the structure is
 * shared with the graph it was made of).
 *
 * A clone copies every string, array and attribute into its own arena, and constant data that lies
 * in the source's arena (decoded initializers, tensors of attributes, constants the optimizer made).
 * Data anywhere else -- the mapped model file, external data -- is referenced: the caller keeps that
 * memory alive (the engine holds a reference on the ig_onnx_file). Values that are constant only
 * because inference folded them point into the source's fold arena, which the clone does not own:
 * they are reset to "not inferred", and the clone is inferred before use.
 */
#include "ir.h"

typedef struct cloner {
    const ig_graph *src;
    ig_graph *dst;
    bool oom;
} cloner;

static char *dup_str(cloner *k, const char *s)
{
    if (!s || k->oom) return NULL;
    char *p = ig__arena_strdup(&k->dst->arena, s);
    if (!p) k->oom = true;
    return p;
}

/* n bytes copied into dst's arena (aligned to `align`), or NULL when n is 0. */
static void *dup_bytes(cloner *k, const void *p, size_t n, size_t align)
{
    if (!p || !n || k->oom) return NULL;
    void *q = ig__arena_alloc_aligned(&k->dst->arena, n, align);
    if (!q) {
        k->oom = true;
        return NULL;
    }
    memcpy(q, p, n);
    return q;
}

/* An array copied into dst's arena; an empty one that was not NULL stays not NULL (readers may
 * hand it to memcpy). */
static void *dup_array(cloner *k, const void *p, size_t n, size_t size)
{
    size_t bytes;
    if (!p || k->oom) return NULL;
    if (!ig__mul_size(n, size, &bytes)) {
        k->oom = true;
        return NULL;
    }
    if (!bytes) {
        void *q = ig__arena_alloc(&k->dst->arena, 16);
        if (!q) k->oom = true;
        return q;
    }
    return dup_bytes(k, p, bytes, 16);
}

/* Constant data: a copy when it lies in the source's arena, else the same pointer. 64-byte aligned
 * like the fold arena's values, so kernels read the copies in place. */
static const void *dup_data(cloner *k, const void *p, size_t n)
{
    if (!p || !n) return p;
    if (!ig__arena_contains(&k->src->arena, p)) return p;
    return dup_bytes(k, p, n, 64);
}

static const char **dup_strs(cloner *k, const char *const *v, int64_t n)
{
    if (!v || k->oom) return NULL;
    const char **out = ig__arena_array(&k->dst->arena, n > 0 ? (size_t)n : 1, sizeof(char *));
    if (!out) {
        k->oom = true;
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) out[i] = v[i] ? dup_str(k, v[i]) : NULL;
    return out;
}

static void clone_const(cloner *k, const ig_const *from, ig_const *to)
{
    *to = *from;
    to->data = dup_data(k, from->data, from->n_bytes);
    to->name = from->name ? dup_str(k, from->name) : NULL;
}

static void clone_attr(cloner *k, const ig_attr *from, ig_attr *to)
{
    *to = *from;
    to->name = dup_str(k, from->name);
    if (from->s) {
        /* s_len bytes plus the NUL: strings may hold zeros */
        char *s = dup_bytes(k, from->s, from->s_len + 1, 1);
        to->s = s;
    }
    if (from->ints) to->ints = dup_array(k, from->ints, (size_t)from->n, sizeof(int64_t));
    if (from->floats) to->floats = dup_array(k, from->floats, (size_t)from->n, sizeof(float));
    if (from->strings) to->strings = dup_strs(k, from->strings, from->n);
    if (from->raw) to->raw = dup_data(k, from->raw, from->raw_len);
    if (from->t) {
        size_t n = from->type == IG_ATTR_TENSORS ? (size_t)from->n : 1;
        ig_const *t = ig__arena_array(&k->dst->arena, n ? n : 1, sizeof(ig_const));
        if (!t) {
            k->oom = true;
            return;
        }
        for (size_t i = 0; i < n; i++) clone_const(k, &from->t[i], &t[i]);
        to->t = t;
    }
}

static void clone_value(cloner *k, const ig_value *from, ig_value *to)
{
    *to = *from;
    to->name = dup_str(k, from->name);
    for (int32_t d = 0; d < IG_MAX_RANK; d++)
        if (from->decl_dim_names[d]) to->decl_dim_names[d] = dup_str(k, from->decl_dim_names[d]);
    /* symbolic element values live in the source's fold arena: inference recomputes them */
    to->sym = NULL;
    to->n_sym = 0;
    if (from->flags & IG_VAL_INITIALIZER) {
        clone_const(k, &from->c, &to->c);
        if (from->c.name == from->name) to->c.name = to->name;
        return;
    }
    /* constant by inference (folded, Constant, a bound shape input): reset, as inference would */
    to->flags &= ~(uint32_t)IG_VAL_CONST;
    memset(&to->c, 0, sizeof to->c);
    if (!(from->flags & IG_VAL_INPUT)) {
        to->dtype = INGOT_DTYPE_UNDEFINED;
        to->shape.rank = -1;
    }
}

static void clone_node(cloner *k, const ig_node *from, ig_node *to)
{
    *to = *from;
    to->name = dup_str(k, from->name);
    to->op_type = dup_str(k, from->op_type);
    to->domain = dup_str(k, from->domain);
    to->inputs = dup_array(k, from->inputs, (size_t)from->n_inputs, sizeof(int32_t));
    to->outputs = dup_array(k, from->outputs, (size_t)from->n_outputs, sizeof(int32_t));
    to->attrs = NULL;
    if (from->n_attrs > 0) {
        to->attrs = ig__arena_array(&k->dst->arena, (size_t)from->n_attrs, sizeof(ig_attr));
        if (!to->attrs) {
            k->oom = true;
            return;
        }
        for (int32_t i = 0; i < from->n_attrs; i++) clone_attr(k, &from->attrs[i], &to->attrs[i]);
    }
    to->folded = false;
    to->flops = to->bytes_read = to->bytes_written = 0;
    to->pass = from->pass ? dup_str(k, from->pass) : NULL;
    to->covers = dup_strs(k, from->covers, from->n_covers);
}

/* malloc'd copy of n elements of size bytes (graph arrays that grow with realloc live outside the arena) */
static void *heap_copy(cloner *k, const void *p, size_t n, size_t size)
{
    if (k->oom || !p || !n) return NULL;
    size_t bytes;
    void *q = ig__mul_size(n, size, &bytes) ? ig__malloc(bytes) : NULL;
    if (!q) {
        k->oom = true;
        return NULL;
    }
    memcpy(q, p, bytes);
    return q;
}

ingot_status ig__graph_clone(const ig_graph *src, ig_graph *dst, ig_err *err)
{
    ig__graph_init(dst, err);
    cloner k = {.src = src, .dst = dst};
    ig_graph *g = dst;
    g->name = dup_str(&k, src->name ? src->name : "");
    g->ir_version = src->ir_version;
    g->producer_name = dup_str(&k, src->producer_name ? src->producer_name : "");
    g->producer_version = dup_str(&k, src->producer_version ? src->producer_version : "");
    g->model_domain = dup_str(&k, src->model_domain ? src->model_domain : "");
    g->doc = dup_str(&k, src->doc ? src->doc : "");
    g->model_version = src->model_version;
    if (src->n_opsets > 0) {
        g->opsets = ig__arena_array(&g->arena, (size_t)src->n_opsets, sizeof(ig_opset));
        if (!g->opsets) goto oom;
        for (int32_t i = 0; i < src->n_opsets; i++) {
            g->opsets[i].domain = dup_str(&k, src->opsets[i].domain);
            g->opsets[i].version = src->opsets[i].version;
        }
        g->n_opsets = src->n_opsets;
    }
    if (src->n_meta > 0) {
        g->meta_keys = dup_strs(&k, src->meta_keys, src->n_meta);
        g->meta_values = dup_strs(&k, src->meta_values, src->n_meta);
        g->n_meta = src->n_meta;
    }
    if (k.oom) goto oom;

    /* values, nodes, symbols and the order grow with realloc (edits, fresh symbols): heap, like the source */
    if (src->n_values > 0) {
        if (!(g->values = ig__malloc(sizeof(ig_value) * (size_t)src->n_values))) goto oom;
        g->n_values = g->cap_values = src->n_values;
        for (int32_t i = 0; i < src->n_values; i++) clone_value(&k, &src->values[i], &g->values[i]);
    }
    if (src->n_nodes > 0) {
        if (!(g->nodes = ig__malloc(sizeof(ig_node) * (size_t)src->n_nodes))) goto oom;
        g->n_nodes = g->cap_nodes = src->n_nodes;
        for (int32_t i = 0; i < src->n_nodes; i++) clone_node(&k, &src->nodes[i], &g->nodes[i]);
    }
    if (src->n_syms > 0) {
        if (!(g->syms = ig__malloc(sizeof(char *) * (size_t)src->n_syms))) goto oom;
        g->n_syms = g->cap_syms = src->n_syms;
        for (int32_t i = 0; i < src->n_syms; i++) g->syms[i] = dup_str(&k, src->syms[i]);
    }
    g->n_inputs = src->n_inputs;
    g->n_outputs = src->n_outputs;
    g->n_initializers = src->n_initializers;
    g->inputs = dup_array(&k, src->inputs, (size_t)src->n_inputs, sizeof(int32_t));
    g->outputs = dup_array(&k, src->outputs, (size_t)src->n_outputs, sizeof(int32_t));
    if (src->order) g->order = heap_copy(&k, src->order, (size_t)src->n_nodes, sizeof(int32_t));
    /* the index maps names to ids; the clone keeps every id and name, so the same table serves */
    if (src->index_cap) {
        g->index = heap_copy(&k, src->index, src->index_cap, sizeof(int32_t));
        g->index_cap = g->index ? src->index_cap : 0;
    }
    if (k.oom) goto oom;
    return INGOT_OK;
oom:
    ig__graph_free(dst);
    return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory copying graph '%s' (%d nodes)",
                    src->name ? src->name : "", (int)src->n_nodes);
}

ingot_status ig__graph_instance(const ig_graph *g, ig_graph *inst, ig_err *err)
{
    /* the structure (names, opsets, inputs/outputs, order, index, node arrays) stays g's */
    *inst = *g;
    ig__arena_init(&inst->arena);
    inst->values = NULL;
    inst->nodes = NULL;
    inst->syms = NULL;
    inst->cap_values = inst->cap_nodes = inst->cap_syms = 0;
    inst->base = g;
    if (g->n_values > 0 && !(inst->values = ig__malloc(sizeof(ig_value) * (size_t)g->n_values))) goto oom;
    if (g->n_nodes > 0 && !(inst->nodes = ig__malloc(sizeof(ig_node) * (size_t)g->n_nodes))) goto oom;
    /* room for the fresh "unk__K" symbols inference adds */
    int32_t cap_syms = g->n_syms + 16;
    if (!(inst->syms = ig__malloc(sizeof(char *) * (size_t)cap_syms))) goto oom;
    if (g->n_values > 0) memcpy(inst->values, g->values, sizeof(ig_value) * (size_t)g->n_values);
    if (g->n_nodes > 0) memcpy(inst->nodes, g->nodes, sizeof(ig_node) * (size_t)g->n_nodes);
    if (g->n_syms > 0) memcpy(inst->syms, g->syms, sizeof(char *) * (size_t)g->n_syms);
    inst->cap_values = g->n_values;
    inst->cap_nodes = g->n_nodes;
    inst->cap_syms = cap_syms;
    return INGOT_OK;
oom:
    ig__graph_free(inst);
    return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory making an instance of graph '%s'",
                    g->name ? g->name : "");
}
