/*
 * cse.c -- the `cse` pass: one value for identical small constants, one node for identical
 * computations.
 *
 * Constants: initializers of at most 4 KiB with the same dtype, dims and bytes are one value; readers
 * of the later ones read the first. Nodes: two live nodes with the same op, domain, opset, inputs
 * (value ids, in order) and attributes (every one, by type and content, in any order) compute the
 * same outputs, ops being deterministic; the later one's readers read the earlier one's outputs and
 * the later one goes, unless one of its outputs is a graph output (that output keeps its own name and
 * bytes). Merging constants first makes the masks BERT computes once per layer from equal constants
 * identical nodes. Valid for every shape: equal inputs have equal shapes whatever they are.
 *
 * One walk in topological order with hash tables: a node's inputs are already rewritten to the
 * surviving values when it is reached, so chains of duplicates collapse in the same walk.
 */
#include "opt_internal.h"

#define MAX_CONST_BYTES 4096

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t hash_str(uint64_t h, const char *s) { return s ? hash_bytes(h, s, strlen(s)) : mix(h, 1); }

static bool str_eq(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

static bool bytes_eq(const void *a, const void *b, size_t n) { return !n || (a && b && !memcmp(a, b, n)); }

static bool tensor_eq(const ig_const *a, const ig_const *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank || a->n_bytes != b->n_bytes) return false;
    for (int32_t k = 0; k < a->rank; k++)
        if (a->dims[k] != b->dims[k]) return false;
    return bytes_eq(a->data, b->data, a->n_bytes);
}

/* Same type and content; floats compared by bits (NaN equals NaN, -0 differs from 0: either way the
 * kernels computing with them give identical results). */
static bool attr_eq(const ig_attr *a, const ig_attr *b)
{
    if (a->type != b->type || !str_eq(a->name, b->name)) return false;
    size_t n = a->n > 0 ? (size_t)a->n : 0;
    switch (a->type) {
    case IG_ATTR_INT: return a->i == b->i;
    case IG_ATTR_FLOAT: return !memcmp(&a->f, &b->f, sizeof a->f);
    case IG_ATTR_STRING: return a->s_len == b->s_len && bytes_eq(a->s, b->s, a->s_len);
    case IG_ATTR_INTS: return a->n == b->n && bytes_eq(a->ints, b->ints, n * sizeof(int64_t));
    case IG_ATTR_FLOATS: return a->n == b->n && bytes_eq(a->floats, b->floats, n * sizeof(float));
    case IG_ATTR_STRINGS:
        if (a->n != b->n) return false;
        for (size_t k = 0; k < n; k++)
            if (!str_eq(a->strings[k], b->strings[k])) return false;
        return true;
    case IG_ATTR_TENSOR: return a->t && b->t && tensor_eq(a->t, b->t);
    case IG_ATTR_TENSORS:
        if (a->n != b->n) return false;
        for (size_t k = 0; k < n; k++)
            if (!tensor_eq(&a->t[k], &b->t[k])) return false;
        return true;
    default: return a->raw_len == b->raw_len && bytes_eq(a->raw, b->raw, a->raw_len);
    }
}

static bool attrs_eq(const ig_node *a, const ig_node *b)
{
    if (a->n_attrs != b->n_attrs) return false;
    for (int32_t i = 0; i < a->n_attrs; i++) {
        const ig_attr *x = &a->attrs[i], *y = i < b->n_attrs && str_eq(b->attrs[i].name, x->name) ? &b->attrs[i] : NULL;
        if (!y) y = ig__node_attr(b, x->name ? x->name : "");
        if (!y || !attr_eq(x, y)) return false;
    }
    return true;
}

static bool nodes_eq(const ig_node *a, const ig_node *b)
{
    if (a->op != b->op || a->opset != b->opset || !str_eq(a->op_type, b->op_type) || !str_eq(a->domain, b->domain))
        return false;
    if (a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs) return false;
    for (int32_t i = 0; i < a->n_inputs; i++)
        if (a->inputs[i] != b->inputs[i]) return false;
    return attrs_eq(a, b);
}

/* Attributes hash by name and scalar content only (order-independent: XOR); equality checks the rest. */
static uint64_t node_hash(const ig_node *n)
{
    uint64_t h = hash_str(hash_str(IG_FNV_SEED, n->op_type), n->domain);
    h = mix(h, (uint64_t)n->opset);
    h = mix(h, (uint64_t)n->n_outputs);
    for (int32_t i = 0; i < n->n_inputs; i++) h = mix(h, (uint64_t)(n->inputs[i] + 2));
    uint64_t ah = 0;
    for (int32_t i = 0; i < n->n_attrs; i++) {
        const ig_attr *a = &n->attrs[i];
        uint64_t x = mix(hash_str(7, a->name), (uint64_t)a->type);
        if (a->type == IG_ATTR_INT) x = mix(x, (uint64_t)a->i);
        if (a->type == IG_ATTR_INTS && a->ints) x = hash_bytes(x, a->ints, sizeof(int64_t) * (size_t)a->n);
        ah ^= x;
    }
    return mix(h, ah);
}

static uint64_t const_hash(const ig_value *v)
{
    uint64_t h = mix(IG_FNV_SEED, (uint64_t)v->c.dtype);
    h = mix(h, (uint64_t)v->c.rank);
    for (int32_t k = 0; k < v->c.rank; k++) h = mix(h, (uint64_t)v->c.dims[k]);
    return hash_bytes(h, v->c.data, v->c.data ? v->c.n_bytes : 0);
}

/* Open addressing over ids; cap a power of two at least twice the entries. */
typedef struct table {
    int32_t *slot;
    uint64_t *hash;
    uint32_t cap;
} table;

static bool table_init(table *t, int32_t n)
{
    t->cap = 16;
    while (t->cap < 2u * (uint32_t)n + 2) t->cap *= 2;
    t->slot = ig__malloc(sizeof(int32_t) * t->cap);
    t->hash = ig__malloc(sizeof(uint64_t) * t->cap);
    if (t->slot) memset(t->slot, 0xff, sizeof(int32_t) * t->cap);
    return t->slot && t->hash;
}

static void table_free(table *t)
{
    ig__free(t->slot);
    ig__free(t->hash);
}

/* The first entry with hash h that eq() accepts, or -1 after inserting id. */
static int32_t table_find_or_add(table *t, uint64_t h, int32_t id, bool (*eq)(const void *, int32_t, int32_t),
                                 const void *ctx)
{
    uint32_t m = t->cap - 1, i = (uint32_t)h & m;
    for (; t->slot[i] >= 0; i = (i + 1) & m)
        if (t->hash[i] == h && eq(ctx, t->slot[i], id)) return t->slot[i];
    t->slot[i] = id;
    t->hash[i] = h;
    return -1;
}

static bool const_entry_eq(const void *ctx, int32_t a, int32_t b)
{
    const ig_graph *g = ctx;
    return tensor_eq(&g->values[a].c, &g->values[b].c);
}

static bool node_entry_eq(const void *ctx, int32_t a, int32_t b)
{
    const ig_graph *g = ctx;
    return nodes_eq(&g->nodes[a], &g->nodes[b]);
}

/* repl[v] for every small constant equal to an earlier one that some node reads. */
static ingot_status merge_constants(ig_opt_ctx *cx, const ig_uses *u, int32_t *repl)
{
    ig_graph *g = cx->g;
    table t;
    if (!table_init(&t, g->n_values)) {
        table_free(&t);
        return ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int32_t v = 0; v < g->n_values; v++) {
        const ig_value *val = &g->values[v];
        if (!(val->flags & IG_VAL_INITIALIZER) || !ig__opt_is_const(cx, v) || val->c.n_bytes > MAX_CONST_BYTES)
            continue;
        if (ig__uses_count(u, v) == 0) continue;
        int32_t first = table_find_or_add(&t, const_hash(val), v, const_entry_eq, g);
        if (first >= 0) {
            repl[v] = first;
            cx->n_rewrites++;
        }
    }
    table_free(&t);
    return INGOT_OK;
}

ingot_status ig__opt_pass_cse(ig_opt_ctx *cx)
{
    ig_graph *g = cx->g;
    ig_uses u;
    table t = {0};
    ingot_status st = ig__uses_build(g, &u, cx->err);
    if (st != INGOT_OK) return st;
    int32_t *repl = ig__malloc(sizeof(int32_t) * ((size_t)g->n_values + 1));
    if (!repl || !table_init(&t, g->n_nodes)) {
        st = ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    for (int32_t v = 0; v < g->n_values; v++) repl[v] = v;
    if ((st = merge_constants(cx, &u, repl)) != INGOT_OK) goto out;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        int32_t id = g->order[k];
        ig_node *n = &g->nodes[id];
        if (n->dead) continue;
        for (int32_t i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0) n->inputs[i] = repl[n->inputs[i]];
        int32_t first = table_find_or_add(&t, node_hash(n), id, node_entry_eq, g);
        if (first < 0) continue;
        const ig_node *e = &g->nodes[first];
        bool ok = true;
        for (int32_t j = 0; j < n->n_outputs && ok; j++) {
            int32_t v = n->outputs[j];
            ok = v < 0 || (!u.is_output[v] && e->outputs[j] >= 0);
        }
        if (!ok) continue;
        for (int32_t j = 0; j < n->n_outputs; j++)
            if (n->outputs[j] >= 0) repl[n->outputs[j]] = e->outputs[j];
        ig__graph_remove_node(g, id);
        cx->n_rewrites++;
    }
out:
    table_free(&t);
    ig__free(repl);
    ig__uses_free(&u);
    return st;
}
