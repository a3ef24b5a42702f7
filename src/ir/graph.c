/* graph.c -- building, indexing, ordering and verifying the IR graph. */
#include "ir.h"

#include <inttypes.h>
#include <stdio.h>

ingot_status ig__graph_init(ig_graph *g, ig_err *err)
{
    memset(g, 0, sizeof *g);
    ig__arena_init(&g->arena);
    g->name = "";
    g->producer_name = g->producer_version = g->model_domain = g->doc = "";
    (void)err;
    return INGOT_OK;
}

void ig__graph_free(ig_graph *g)
{
    if (!g) return;
    if (g->base) { /* an instance owns what inference writes; the structure is its base's */
        ig__free(g->values);
        ig__free(g->nodes);
        ig__free(g->syms);
        ig__arena_free(&g->arena);
        memset(g, 0, sizeof *g);
        return;
    }
    ig__free(g->values);
    ig__free(g->nodes);
    ig__free(g->index);
    ig__free(g->order);
    ig__free(g->syms);
    ig__arena_free(&g->arena);
    memset(g, 0, sizeof *g);
}

/* FNV-1a */
static uint32_t hash_name(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static bool index_insert(int32_t *index, uint32_t cap, const ig_value *values, int32_t id)
{
    uint32_t m = cap - 1, i = hash_name(values[id].name) & m;
    while (index[i] >= 0) i = (i + 1) & m;
    index[i] = id;
    return true;
}

static bool index_grow(ig_graph *g)
{
    uint32_t cap = g->index_cap ? g->index_cap * 2 : 256;
    int32_t *idx = ig__malloc(sizeof(int32_t) * cap);
    if (!idx) return false;
    memset(idx, 0xff, sizeof(int32_t) * cap);
    for (int32_t v = 0; v < g->n_values; v++) index_insert(idx, cap, g->values, v);
    ig__free(g->index);
    g->index = idx;
    g->index_cap = cap;
    return true;
}

int32_t ig__graph_find(const ig_graph *g, const char *name)
{
    if (!g->index_cap) return -1;
    uint32_t m = g->index_cap - 1, i = hash_name(name) & m;
    for (; g->index[i] >= 0; i = (i + 1) & m)
        if (!strcmp(g->values[g->index[i]].name, name)) return g->index[i];
    return -1;
}

int32_t ig__graph_value(ig_graph *g, const char *name, ig_err *err)
{
    int32_t id = ig__graph_find(g, name);
    if (id >= 0) return id;
    if ((uint32_t)(g->n_values + 1) * 2 > g->index_cap && !index_grow(g)) goto oom;
    if (g->n_values == g->cap_values) {
        int32_t cap = g->cap_values ? g->cap_values * 2 : 64;
        ig_value *nv = ig__realloc(g->values, sizeof(ig_value) * (size_t)cap);
        if (!nv) goto oom;
        g->values = nv;
        g->cap_values = cap;
    }
    char *nm = ig__arena_strdup(&g->arena, name);
    if (!nm) goto oom;
    id = g->n_values++;
    ig_value *v = &g->values[id];
    memset(v, 0, sizeof *v);
    v->name = nm;
    v->shape.rank = -1;
    v->decl_shape.rank = -1;
    v->producer = -1;
    index_insert(g->index, g->index_cap, g->values, id);
    return id;
oom:
    ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory adding tensor '%s'", name);
    return -1;
}

int32_t ig__graph_add_node(ig_graph *g, const char *name, const char *op_type, const char *domain, int32_t n_inputs,
                           int32_t n_outputs, int32_t n_attrs, ig_err *err)
{
    if (g->n_nodes == g->cap_nodes) {
        int32_t cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
        ig_node *nn = ig__realloc(g->nodes, sizeof(ig_node) * (size_t)cap);
        if (!nn) goto oom;
        g->nodes = nn;
        g->cap_nodes = cap;
    }
    ig_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->name = ig__arena_strdup(&g->arena, name ? name : "");
    n->op_type = ig__arena_strdup(&g->arena, op_type ? op_type : "");
    n->domain = ig__arena_strdup(&g->arena, domain ? domain : "");
    n->inputs = ig__arena_array(&g->arena, (size_t)n_inputs, sizeof(int32_t));
    n->outputs = ig__arena_array(&g->arena, (size_t)n_outputs, sizeof(int32_t));
    n->attrs = ig__arena_array(&g->arena, (size_t)n_attrs, sizeof(ig_attr));
    if (!n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs || !n->attrs) goto oom;
    for (int32_t i = 0; i < n_inputs; i++) n->inputs[i] = -1;
    for (int32_t i = 0; i < n_outputs; i++) n->outputs[i] = -1;
    n->n_inputs = n_inputs;
    n->n_outputs = n_outputs;
    n->n_attrs = n_attrs;
    n->op = -1;
    return g->n_nodes++;
oom:
    ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory adding node '%s'", name ? name : "");
    return -1;
}

int32_t ig__graph_symbol(ig_graph *g, const char *name)
{
    if (name)
        for (int32_t i = 0; i < g->n_syms; i++)
            if (!strcmp(g->syms[i], name)) return i;
    if (g->n_syms == g->cap_syms) {
        int32_t cap = g->cap_syms ? g->cap_syms * 2 : 16;
        const char **ns = ig__realloc(g->syms, sizeof(char *) * (size_t)cap);
        if (!ns) return -1;
        g->syms = ns;
        g->cap_syms = cap;
    }
    const char *nm;
    if (name) {
        nm = ig__arena_strdup(&g->arena, name);
    } else { /* a fresh name no file symbol uses */
        for (int32_t k = g->n_syms;; k++) {
            char buf[32];
            snprintf(buf, sizeof buf, "unk__%d", (int)k);
            bool taken = false;
            for (int32_t i = 0; i < g->n_syms && !taken; i++) taken = !strcmp(g->syms[i], buf);
            if (!taken) {
                nm = ig__arena_strdup(&g->arena, buf);
                break;
            }
        }
    }
    if (!nm) return -1;
    g->syms[g->n_syms] = nm;
    return g->n_syms++;
}

int64_t ig__graph_opset(const ig_graph *g, const char *domain)
{
    bool def = !domain || !domain[0] || !strcmp(domain, "ai.onnx");
    for (int32_t i = 0; i < g->n_opsets; i++) {
        const char *d = g->opsets[i].domain;
        bool ddef = !d[0] || !strcmp(d, "ai.onnx");
        if (def ? ddef : !strcmp(d, domain)) return g->opsets[i].version;
    }
    return 0;
}

const ig_attr *ig__node_attr(const ig_node *n, const char *name)
{
    for (int32_t i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name && !strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}

const char *ig__node_label(const ig_node *n) { return n->name && n->name[0] ? n->name : n->op_type; }

/* Kahn's algorithm, keeping file order among ready nodes (stable, so the order a user sees in
 * `inspect` is the file's whenever the file was already sorted). */
ingot_status ig__graph_toposort(ig_graph *g, ig_err *err)
{
    ingot_status st = INGOT_OK;
    int32_t nn = g->n_nodes;
    int32_t *pending = ig__calloc((size_t)nn + 1, sizeof(int32_t));
    int32_t *order = ig__malloc(sizeof(int32_t) * ((size_t)nn + 1));
    /* consumers as CSR: for each value, the nodes reading it */
    int32_t *cstart = ig__calloc((size_t)g->n_values + 1, sizeof(int32_t));
    int32_t *clist = NULL, *heap = NULL;
    size_t n_edges = 0;
    if (!pending || !order || !cstart) goto oom;
    for (int32_t i = 0; i < nn; i++) n_edges += (size_t)g->nodes[i].n_inputs;
    clist = ig__malloc(sizeof(int32_t) * (n_edges + 1));
    heap = ig__malloc(sizeof(int32_t) * ((size_t)nn + 1));
    if (!clist || !heap) goto oom;
    for (int32_t i = 0; i < nn; i++) {
        const ig_node *n = &g->nodes[i];
        for (int32_t j = 0; j < n->n_inputs; j++) {
            int32_t v = n->inputs[j];
            if (v >= 0 && g->values[v].producer >= 0) {
                cstart[v + 1]++;
                pending[i]++;
            }
        }
    }
    for (int32_t v = 0; v < g->n_values; v++) cstart[v + 1] += cstart[v];
    {
        int32_t *fill = ig__malloc(sizeof(int32_t) * ((size_t)g->n_values + 1));
        if (!fill) goto oom;
        memcpy(fill, cstart, sizeof(int32_t) * (size_t)g->n_values);
        for (int32_t i = 0; i < nn; i++) {
            const ig_node *n = &g->nodes[i];
            for (int32_t j = 0; j < n->n_inputs; j++) {
                int32_t v = n->inputs[j];
                if (v >= 0 && g->values[v].producer >= 0) clist[fill[v]++] = i;
            }
        }
        ig__free(fill);
    }
    /* min-heap of ready node ids */
    int32_t hn = 0, done = 0;
#define HEAP_PUSH(x)                                      \
    do {                                                  \
        int32_t k_ = hn++;                                \
        heap[k_] = (x);                                   \
        while (k_ > 0 && heap[(k_ - 1) / 2] > heap[k_]) { \
            int32_t p_ = (k_ - 1) / 2, t_ = heap[p_];     \
            heap[p_] = heap[k_];                          \
            heap[k_] = t_;                                \
            k_ = p_;                                      \
        }                                                 \
    } while (0)
    for (int32_t i = 0; i < nn; i++)
        if (!pending[i]) HEAP_PUSH(i);
    while (hn > 0) {
        int32_t top = heap[0];
        heap[0] = heap[--hn];
        for (int32_t k = 0;;) {
            int32_t l = 2 * k + 1, r = l + 1, s = k;
            if (l < hn && heap[l] < heap[s]) s = l;
            if (r < hn && heap[r] < heap[s]) s = r;
            if (s == k) break;
            int32_t t = heap[s];
            heap[s] = heap[k];
            heap[k] = t;
            k = s;
        }
        order[done++] = top;
        const ig_node *n = &g->nodes[top];
        for (int32_t j = 0; j < n->n_outputs; j++) {
            int32_t v = n->outputs[j];
            if (v < 0 || g->values[v].producer != top) continue;
            for (int32_t c = cstart[v]; c < cstart[v + 1]; c++)
                if (--pending[clist[c]] == 0) HEAP_PUSH(clist[c]);
        }
    }
#undef HEAP_PUSH
    if (done != nn) {
        int32_t bad = -1;
        for (int32_t i = 0; i < nn && bad < 0; i++)
            if (pending[i]) bad = i;
        st = ig__errf(err, INGOT_ERR_MODEL_INVALID,
                      "graph has a cycle: node '%s' (%s) depends, through its inputs, on its own output",
                      ig__node_label(&g->nodes[bad]), g->nodes[bad].op_type);
        goto out;
    }
    ig__free(g->order);
    g->order = order;
    order = NULL;
    goto out;
oom:
    st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory sorting %d nodes", (int)nn);
out:
    ig__free(pending);
    ig__free(order);
    ig__free(cstart);
    ig__free(clist);
    ig__free(heap);
    return st;
}

ingot_status ig__graph_verify(const ig_graph *g, ig_err *err)
{
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ig_node *n = &g->nodes[i];
        if (!n->op_type[0])
            return ig__errf(err, INGOT_ERR_MODEL_INVALID, "node %d ('%s') has an empty op_type", (int)i, n->name);
        for (int32_t j = 0; j < n->n_inputs; j++) {
            int32_t v = n->inputs[j];
            if (v < 0) continue;
            const ig_value *val = &g->values[v];
            if (val->producer < 0 && !(val->flags & (IG_VAL_INPUT | IG_VAL_INITIALIZER)))
                return ig__errf(err, INGOT_ERR_MODEL_INVALID,
                                "node '%s' (%s): input %d '%s' is neither a graph input, an initializer nor "
                                "the output of any node",
                                ig__node_label(n), n->op_type, (int)j, val->name);
        }
        for (int32_t j = 0; j < n->n_outputs; j++) {
            int32_t v = n->outputs[j];
            if (v < 0) continue;
            for (int32_t k = 0; k < j; k++)
                if (n->outputs[k] == v)
                    return ig__errf(err, INGOT_ERR_MODEL_INVALID, "node '%s' (%s): output '%s' listed twice",
                                    ig__node_label(n), n->op_type, g->values[v].name);
        }
    }
    for (int32_t i = 0; i < g->n_outputs; i++) {
        const ig_value *v = &g->values[g->outputs[i]];
        if (v->producer < 0 && !(v->flags & (IG_VAL_INPUT | IG_VAL_INITIALIZER)))
            return ig__errf(err, INGOT_ERR_MODEL_INVALID, "graph output '%s' is produced by no node", v->name);
    }
    if (g->n_nodes && !g->order) return ig__errf(err, INGOT_ERR_INTERNAL, "graph verified before it was sorted");
    return INGOT_OK;
}

char *ig__dim_str(const ig_graph *g, ig_dim d, char *buf, size_t n)
{
    if (d.sym == IG_NOSYM)
        snprintf(buf, n, "%" PRId64, d.n);
    else if (d.n == 1)
        snprintf(buf, n, "%s", d.sym < g->n_syms ? g->syms[d.sym] : "?");
    else
        snprintf(buf, n, "%" PRId64 "*%s", d.n, d.sym < g->n_syms ? g->syms[d.sym] : "?");
    return buf;
}

char *ig__shape_str(const ig_graph *g, const ig_shape *s, char *buf, size_t n)
{
    if (s->rank < 0) {
        snprintf(buf, n, "?");
        return buf;
    }
    size_t off = 0;
    off += (size_t)snprintf(buf + off, n - off, "[");
    for (int32_t i = 0; i < s->rank && off < n; i++) {
        char d[96];
        off += (size_t)snprintf(buf + off, n - off, "%s%s", i ? "," : "", ig__dim_str(g, s->d[i], d, sizeof d));
    }
    if (off < n) snprintf(buf + off, n - off, "]");
    return buf;
}

bool ig__shape_known(const ig_shape *s)
{
    if (s->rank < 0) return false;
    for (int32_t i = 0; i < s->rank; i++)
        if (s->d[i].sym != IG_NOSYM || s->d[i].n < 0) return false;
    return true;
}

bool ig__shape_numel(const ig_shape *s, int64_t *out)
{
    if (!ig__shape_known(s)) return false;
    int64_t n = 1;
    for (int32_t i = 0; i < s->rank; i++)
        if (!ig__mul_i64(n, s->d[i].n, &n)) return false;
    *out = n;
    return true;
}

size_t ig__value_bytes(const ig_value *v)
{
    int64_t n;
    size_t b;
    if (!ig__shape_numel(&v->shape, &n)) return 0;
    if (!ig__mul_size((size_t)n, ingot_dtype_size(v->dtype), &b)) return 0;
    return b;
}
