/* describe.c -- the model and the engine as JSON (what `ingot inspect --json` and `ingot inspect
 * --optimized --json` print); the formats are documented in docs/CLI.md, and the model's is read by
 * tests/conformance/check_shapes.py. Both share the graph part: inputs, outputs, op histogram, nodes. */
#include "api_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->n + n + 1) cap *= 2;
        char *np = ig__realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_printf(sbuf *b, const char *fmt, ...) IG_PRINTF(2, 3);
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        sb_put(b, tmp, (size_t)n);
        return;
    }
    char *big = ig__malloc((size_t)n + 1);
    if (!big) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_put(b, big, (size_t)n);
    ig__free(big);
}

static void sb_str(sbuf *b, const char *s)
{
    sb_put(b, "\"", 1);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_put(b, e, 2);
        } else if (c < 0x20) {
            sb_printf(b, "\\u%04x", c);
        } else {
            sb_put(b, (const char *)&c, 1);
        }
    }
    sb_put(b, "\"", 1);
}

static void sb_shape(sbuf *b, const ig_graph *g, const ig_shape *s)
{
    if (s->rank < 0) {
        sb_put(b, "null", 4);
        return;
    }
    sb_put(b, "[", 1);
    for (int32_t k = 0; k < s->rank; k++) {
        if (k) sb_put(b, ",", 1);
        if (ig__dim_known(s->d[k])) {
            sb_printf(b, "%" PRId64, s->d[k].n);
        } else {
            char d[128];
            sb_str(b, ig__dim_str(g, s->d[k], d, sizeof d));
        }
    }
    sb_put(b, "]", 1);
}

static void sb_tensor(sbuf *b, const ig_graph *g, int32_t id)
{
    const ig_value *v = &g->values[id];
    sb_put(b, "{\"name\":", 8);
    sb_str(b, v->name);
    sb_put(b, ",\"dtype\":", 9);
    sb_str(b, ingot_dtype_name(v->dtype));
    sb_put(b, ",\"shape\":", 9);
    sb_shape(b, g, &v->shape);
    sb_put(b, "}", 1);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* "inputs", "outputs", "ops" and "nodes" of g; with provenance, each node also names the optimizer
 * pass that made it (null for the model's own) and the model's nodes it covers. */
static void sb_graph(sbuf *b, const ig_graph *g, bool provenance)
{
    sb_put(b, "\"inputs\":[", 10);
    for (int32_t i = 0; i < g->n_inputs; i++) {
        if (i) sb_put(b, ",", 1);
        sb_tensor(b, g, g->inputs[i]);
    }
    sb_put(b, "],\n\"outputs\":[", 14);
    for (int32_t i = 0; i < g->n_outputs; i++) {
        if (i) sb_put(b, ",", 1);
        sb_tensor(b, g, g->outputs[i]);
    }
    /* op histogram, sorted by op name */
    sb_put(b, "],\n\"ops\":{", 10);
    const char **ops = ig__malloc(sizeof(char *) * ((size_t)g->n_nodes + 1));
    if (!ops)
        b->oom = true;
    else {
        for (int32_t k = 0; k < g->n_nodes; k++) ops[k] = g->nodes[k].op_type;
        qsort(ops, (size_t)g->n_nodes, sizeof(char *), cmp_str);
        bool first = true;
        for (int32_t k = 0; k < g->n_nodes;) {
            int32_t j = k;
            while (j < g->n_nodes && !strcmp(ops[j], ops[k])) j++;
            if (!first) sb_put(b, ",", 1);
            first = false;
            sb_str(b, ops[k]);
            sb_printf(b, ":%d", (int)(j - k));
            k = j;
        }
        ig__free(ops);
    }
    sb_put(b, "},\n\"nodes\":[\n", 13);
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const ig_node *n = &g->nodes[g->order[k]];
        if (k) sb_put(b, ",\n", 2);
        sb_put(b, "{\"name\":", 8);
        sb_str(b, n->name);
        sb_put(b, ",\"op\":", 6);
        sb_str(b, n->op_type);
        sb_put(b, ",\"domain\":", 10);
        sb_str(b, n->domain);
        sb_put(b, ",\"inputs\":[", 11);
        for (int32_t i = 0; i < n->n_inputs; i++) {
            if (i) sb_put(b, ",", 1);
            sb_str(b, n->inputs[i] < 0 ? "" : g->values[n->inputs[i]].name);
        }
        sb_put(b, "],\"outputs\":[", 13);
        bool first = true;
        for (int32_t i = 0; i < n->n_outputs; i++) {
            if (n->outputs[i] < 0) continue;
            if (!first) sb_put(b, ",", 1);
            first = false;
            sb_tensor(b, g, n->outputs[i]);
        }
        sb_printf(b, "],\"flops\":%.17g,\"bytes_read\":%.17g,\"bytes_written\":%.17g,\"folded\":%s", n->flops,
                  n->bytes_read, n->bytes_written, n->folded ? "true" : "false");
        if (provenance) {
            sb_put(b, ",\"pass\":", 8);
            if (n->pass)
                sb_str(b, n->pass);
            else
                sb_put(b, "null", 4);
            sb_put(b, ",\"covers\":[", 11);
            for (int32_t i = 0; i < n->n_covers; i++) {
                if (i) sb_put(b, ",", 1);
                sb_str(b, n->covers[i]);
            }
            sb_put(b, "]", 1);
        }
        sb_put(b, "}", 1);
    }
    sb_put(b, "\n]", 2);
}

static ingot_status finish(sbuf *b, ingot_runtime *rt, const char *what, char **out)
{
    if (b->oom) {
        ig__free(b->p);
        ig_err e = {0};
        ig__errf(&e, INGOT_ERR_OUT_OF_MEMORY, "out of memory writing the %s description", what);
        return ig__api_fail(rt, &e);
    }
    *out = b->p;
    return INGOT_OK;
}

/* out NULL: INGOT_ERR_INVALID_ARG with a message on the runtime */
static ingot_status null_out(ingot_runtime *rt, const char *call)
{
    ig_err err = {0};
    ig__errf(&err, INGOT_ERR_INVALID_ARG, "%s: out is NULL", call);
    return ig__api_fail(rt, &err);
}

ingot_status ingot_model_describe_json(const ingot_model *m, char **out)
{
    if (!m) return INGOT_ERR_INVALID_ARG;
    if (!out) return null_out(m->rt, "ingot_model_describe_json");
    *out = NULL;
    const ig_graph *g = &m->g;
    ingot_model_info mi;
    ingot_model_get_info(m, &mi);
    sbuf b = {0};
    sb_printf(&b, "{\"model\":{\"ir_version\":%" PRId64 ",\"opset\":%" PRId64 ",\"producer\":", mi.ir_version,
              mi.opset);
    sb_str(&b, g->producer_name);
    sb_put(&b, ",\"graph\":", 9);
    sb_str(&b, g->name);
    sb_printf(&b,
              ",\"nodes\":%" PRId64 ",\"params\":%" PRId64 ",\"param_bytes\":%zu,\"flops\":%.17g,\"bytes\":%.17g,"
              "\"all_shapes_known\":%s},\n",
              mi.n_nodes, mi.n_params, mi.param_bytes, mi.flops, mi.bytes_moved,
              mi.all_shapes_known ? "true" : "false");
    sb_graph(&b, g, false);
    sb_put(&b, "}\n", 2);
    return finish(&b, m->rt, "model", out);
}

ingot_status ingot_engine_describe_json(const ingot_engine *e, char **out)
{
    if (!e) return INGOT_ERR_INVALID_ARG;
    if (!out) return null_out(e->rt, "ingot_engine_describe_json");
    *out = NULL;
    const ig_graph *g = ig__engine_graph(e);
    if (!g) g = &e->graph; /* not inferred at concrete shapes: the declared ones */
    const size_t *removed = NULL;
    const ig_opt_report *rep = ig__engine_report(e, &removed);
    double flops = 0, bytes = 0;
    bool known = true;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        flops += g->nodes[k].flops;
        bytes += g->nodes[k].bytes_read + g->nodes[k].bytes_written;
    }
    for (int32_t i = 0; i < g->n_values; i++)
        if (g->values[i].dtype != INGOT_DTYPE_UNDEFINED && !ig__shape_known(&g->values[i].shape)) known = false;
    /* a report of no passes (the optimizer off, or none in this build): the counts are the graph's */
    int32_t before = rep->n_passes ? rep->nodes_before : g->n_nodes,
            after = rep->n_passes ? rep->nodes_after : g->n_nodes;
    sbuf b = {0};
    sb_put(&b, "{\"engine\":{\"backend\":", 21);
    sb_str(&b, e->cuda ? "cuda" : "cpu");
    sb_printf(&b, ",\"optimize\":%s,\"disable_passes\":", e->opts.optimize ? "true" : "false");
    sb_str(&b, e->opts.disable_passes ? e->opts.disable_passes : "");
    sb_printf(&b, ",\"nodes_before\":%d,\"nodes\":%d,\"flops\":%.17g,\"bytes\":%.17g,\"all_shapes_known\":%s},\n",
              (int)before, (int)after, flops, bytes, known ? "true" : "false");
    sb_graph(&b, g, true);
    sb_put(&b, ",\n\"passes\":[", 12);
    for (int32_t p = 0; p < rep->n_passes; p++) {
        const ig_opt_pass_report *r = &rep->passes[p];
        if (p) sb_put(&b, ",\n", 2);
        sb_put(&b, "{\"name\":", 8);
        sb_str(&b, r->name);
        sb_printf(&b,
                  ",\"skipped\":%s,\"rewrites\":%d,\"nodes_removed\":%d,\"tensors_removed\":%d,"
                  "\"bytes_removed\":%zu,\"ms\":%.3f}",
                  r->skipped ? "true" : "false", (int)r->n_rewrites, (int)r->n_nodes_removed, (int)r->n_removed_values,
                  removed ? removed[p] : (size_t)0, r->ms);
    }
    sb_put(&b, "]}\n", 3);
    return finish(&b, e->rt, "engine", out);
}
