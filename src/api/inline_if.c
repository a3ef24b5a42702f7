/*
 * inline_if.c -- If nodes whose condition is a build-time constant are replaced by the branch they take.
 *
 * Exporters emit If over conditions computed from shapes (DeBERTa's "query length != key length" in
 * every layer), which are constants once shapes are inferred and constants folded; neither backend runs
 * control flow. Each round infers the graph partially (ig_infer_options.partial: If nodes, and what
 * reads their outputs, are left alone) and then replaces every If whose condition is now a constant by
 * its branch's nodes (ig__onnx_parse_branch: the importer's own node parser, every name the branch
 * defines made fresh) and one Identity per output. An If whose condition comes from another If's output
 * waits for a later round; one whose condition is inferred but not constant is refused, naming it. The
 * Ifs a branch holds are inlined in later rounds, their names resolved through the branch's scope.
 *
 * Every round is linear in the graph; the rounds are bounded (MAX_ROUNDS), and every If of the file is
 * inlined at most once, so the nodes added are at most those the file holds.
 */
#include "api_internal.h"

#include <inttypes.h>
#include <stdio.h>

/* Chains of Ifs whose conditions depend on each other's outputs: one round per link (DeBERTa-v3 has 12,
 * one per layer; its xxlarge variant 48). */
#define MAX_ROUNDS 256

typedef struct inliner {
    ig_graph *g;
    ig_onnx_file *file;
    int32_t n_outer;  /* the values the model itself has: what a branch may read from the main graph */
    ig_arena scratch; /* scopes and their name tables */
    /* [cap] per node: the scope of the branch it came from, NULL for the model's own nodes */
    const ig_onnx_scope **scope_of;
    int32_t cap;
} inliner;

static bool is_if(const ig_node *n)
{
    return !strcmp(n->op_type, "If") && (!n->domain[0] || !strcmp(n->domain, "ai.onnx"));
}

static ingot_status grow_scopes(inliner *in, ig_err *err)
{
    if (in->g->n_nodes <= in->cap) return INGOT_OK;
    int32_t cap = in->g->cap_nodes > in->g->n_nodes ? in->g->cap_nodes : in->g->n_nodes;
    const ig_onnx_scope **s = ig__realloc(in->scope_of, sizeof(*s) * (size_t)cap);
    if (!s) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory inlining If nodes");
    for (int32_t i = in->cap; i < cap; i++) s[i] = NULL;
    in->scope_of = s;
    in->cap = cap;
    return INGOT_OK;
}

/* The branch an If takes: its condition must be one known boolean. */
static ingot_status condition(const ig_graph *g, const ig_node *n, bool *take, ig_err *err)
{
    const ig_value *c = &g->values[n->inputs[0]];
    if (!(c->flags & IG_VAL_CONST) || (c->flags & IG_VAL_INPUT) || (!c->c.data && c->c.n_bytes))
        return ig__errf(err, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                        "node '%s' (If): condition '%s' is not a build-time constant; ingot replaces an If by the "
                        "branch it takes, which needs the condition known when the model loads (neither backend "
                        "runs control flow)",
                        ig__node_label(n), c->name);
    if (c->dtype != INGOT_DTYPE_BOOL || c->c.n_bytes != 1)
        return ig__errf(err, INGOT_ERR_MODEL_INVALID,
                        "node '%s' (If): condition '%s' is %s of %zu bytes; If needs one bool", ig__node_label(n),
                        c->name, ingot_dtype_name(c->dtype), c->c.n_bytes);
    *take = *(const uint8_t *)c->c.data != 0;
    return INGOT_OK;
}

/* Replace If node `id` by the nodes of the branch it takes and an Identity per output. */
static ingot_status inline_one(inliner *in, int32_t id, bool then, ig_err *err)
{
    ig_graph *g = in->g;
    const char *branch = then ? "then_branch" : "else_branch";
    char what[300], label[220];
    snprintf(label, sizeof label, "%.200s", ig__node_label(&g->nodes[id]));
    snprintf(what, sizeof what, "node '%s' (If): %s", label, branch);
    const ig_attr *a = ig__node_attr(&g->nodes[id], branch);
    if (!a || a->type != IG_ATTR_GRAPH || !a->n)
        return ig__errf(err, INGOT_ERR_MODEL_INVALID, "%s: the attribute is missing", what);
    int32_t n_outs = g->nodes[id].n_outputs;
    int32_t *outs = ig__arena_array(&in->scratch, (size_t)n_outs + 1, sizeof(int32_t));
    ig_onnx_scope *sc = ig__arena_alloc(&in->scratch, sizeof *sc);
    if (!outs || !sc) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    memset(sc, 0, sizeof *sc);
    sc->parent = in->scope_of[id];
    sc->n_outer = in->n_outer;
    sc->arena = &in->scratch;
    int32_t first = g->n_nodes;
    ingot_status st = ig__onnx_parse_branch(in->file, g, a->raw, a->raw_len, what, sc, outs, n_outs, err);
    if (st != INGOT_OK) return st;
    if ((st = grow_scopes(in, err)) != INGOT_OK) return st;
    for (int32_t k = first; k < g->n_nodes; k++) in->scope_of[k] = sc;

    ig__graph_remove_node(g, id);
    for (int32_t j = 0; j < n_outs; j++) {
        int32_t y = g->nodes[id].outputs[j];
        if (y < 0) continue;
        char name[300];
        snprintf(name, sizeof name, "%s/%s/%d", label, branch, (int)j);
        int32_t k = ig__graph_add_node(g, name, "Identity", "", 1, 1, 0, err);
        if (k < 0) return INGOT_ERR_OUT_OF_MEMORY;
        g->nodes[k].opset = g->nodes[id].opset;
        g->nodes[k].inputs[0] = outs[j];
        g->nodes[k].outputs[0] = y;
        g->values[y].producer = k;
    }
    return grow_scopes(in, err);
}

/* Drop the dead nodes; the scopes follow their nodes' new ids (as ig__graph_compact numbers them). */
static ingot_status compact(inliner *in, ig_err *err)
{
    int32_t live = 0;
    for (int32_t i = 0; i < in->g->n_nodes; i++)
        if (!in->g->nodes[i].dead) in->scope_of[live++] = in->scope_of[i];
    for (int32_t i = live; i < in->cap; i++) in->scope_of[i] = NULL;
    return ig__graph_compact(in->g, err);
}

ingot_status ig__api_inline_ifs(ig_graph *g, ig_onnx_file *file, size_t fold_max_bytes, ig_arena *fold_arena,
                                ig_err *err)
{
    bool any = false;
    for (int32_t k = 0; k < g->n_nodes && !any; k++) any = is_if(&g->nodes[k]);
    if (!any) return INGOT_OK;
    inliner in = {.g = g, .file = file, .n_outer = g->n_values};
    ig__arena_init(&in.scratch);
    ig_infer_options io = {.fold_max_bytes = fold_max_bytes, .partial = true};
    ingot_status st = grow_scopes(&in, err);
    for (int32_t round = 0; st == INGOT_OK; round++) {
        /* what the last round folded is recomputed: start the arena afresh */
        ig__arena_free(fold_arena);
        ig__arena_init(fold_arena);
        if ((st = ig__graph_infer(g, &io, fold_arena, err)) != INGOT_OK) break;
        int32_t n0 = g->n_nodes, n_if = 0, n_done = 0, waiting = -1;
        for (int32_t k = 0; k < n0 && st == INGOT_OK; k++) {
            int32_t id = g->order[k];
            const ig_node *n = &g->nodes[id];
            if (n->op != IG_OP_if) continue;
            n_if++;
            bool take = false;
            if (g->values[n->inputs[0]].dtype == INGOT_DTYPE_UNDEFINED) { /* computed from another If's output */
                if (waiting < 0) waiting = id;
                continue;
            }
            if ((st = condition(g, n, &take, err)) == INGOT_OK && (st = inline_one(&in, id, take, err)) == INGOT_OK)
                n_done++;
        }
        if (st != INGOT_OK || n_if == 0) break;
        if (n_done == 0) { /* cannot happen: the first If in order reads nothing another If computes */
            st = ig__errf(err, INGOT_ERR_INTERNAL, "node '%s' (If): its condition could not be inferred",
                          ig__node_label(&g->nodes[waiting]));
            break;
        }
        if (round + 1 >= MAX_ROUNDS) {
            int32_t left = 0;
            while (left < g->n_nodes - 1 && (g->nodes[left].dead || !is_if(&g->nodes[left]))) left++;
            st = ig__errf(err, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                          "If nodes are still left after %d rounds of inlining (node '%s' among them): chains of If "
                          "nodes whose conditions depend on each other's outputs are supported up to %d long",
                          MAX_ROUNDS, ig__node_label(&g->nodes[left]), MAX_ROUNDS);
            break;
        }
        st = compact(&in, err);
    }
    ig__free(in.scope_of);
    ig__arena_free(&in.scratch);
    return st;
}
