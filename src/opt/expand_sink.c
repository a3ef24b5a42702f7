/*
 * expand_sink.c -- the `expand_sink` pass: an elementwise node over a constant broadcast by Expand to a
 * symbolic shape, with constant other operands, computes on the constant first and expands after:
 *
 *   f(Expand(c, shape), k...)   ->   Expand(f(c, k...), shape)
 *
 * so that `fold` (the next pass) computes f(c, k...) at build time. transformers builds an attention
 * mask this way even where it masks nothing (ViT: an all-true [1, 1, S, S] comparison of constants,
 * Expand-ed to [batch, 1, S, S], then Where(mask, 0, -inf) into every layer's scores): left as it is,
 * the Where runs over [batch, 1, S, S] at every inference and the attention kernel reads the result per
 * element. Sunk and folded, the mask is one small constant, and the attention and softmax passes drop a
 * mask of zeros altogether (ig__opt_mask_source).
 *
 * Exact for every shape: the other operands broadcast into c's shape (proved on dims), so f(c, k...)
 * has c's shape, and Expand of it has the shape f had; elementwise ops commute with broadcasting.
 * Taken only when c and the other operands are build-time constants or computed from them alone (what
 * fold will compute), which keeps run-time work from moving. The walk is in the graph's order, so a
 * chain of such nodes sinks the Expand step by step.
 */
#include "opt_internal.h"

#include <stdio.h>

/* Ops whose output is their inputs broadcast together, element by element (op_list.h's unary and
 * binary families; CastLike's output takes only its first input's shape, PRelu's only X's). */
static bool elementwise(const ig_node *n)
{
    if (n->op < IG_OP_sqrt || n->op > IG_OP_where || n->n_outputs != 1 || (n->domain && n->domain[0])) return false;
    return n->op != IG_OP_cast_like && n->op != IG_OP_prelu && n->op != IG_OP_dropout && n->op != IG_OP_identity;
}

typedef struct sink_state {
    bool *fixed; /* [cap] values fold will compute: constants and what is computed from them alone */
    int32_t cap;
} sink_state;

static bool fixed(const sink_state *s, int32_t v) { return v >= 0 && v < s->cap && s->fixed[v]; }

static void mark_fixed(const ig_opt_ctx *cx, sink_state *s)
{
    const ig_graph *g = cx->g;
    for (int32_t v = 0; v < g->n_values; v++) s->fixed[v] = ig__opt_is_const(cx, v);
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const ig_node *n = &g->nodes[g->order[k]];
        const ig_op_def *def = n->op >= 0 && n->op < IG_OP_COUNT ? ig__op_table[n->op] : NULL;
        if (n->dead || !def || (def->flags & IG_OP_NOFOLD) || (n->domain && n->domain[0])) continue;
        bool all = n->n_inputs > 0;
        for (int32_t i = 0; i < n->n_inputs && all; i++) all = n->inputs[i] < 0 || s->fixed[n->inputs[i]];
        for (int32_t j = 0; all && j < n->n_outputs; j++)
            if (n->outputs[j] >= 0) s->fixed[n->outputs[j]] = true;
    }
}

static ingot_status visit(ig_opt_ctx *cx, sink_state *s, int32_t id)
{
    ig_graph *g = cx->g;
    const ig_node *n = &g->nodes[id];
    if (n->dead || !elementwise(n) || n->outputs[0] < 0) return INGOT_OK;
    int32_t slot = -1, e = -1;
    for (int32_t i = 0; i < n->n_inputs; i++) {
        int32_t p = ig__opt_producer(g, n->inputs[i]);
        if (slot < 0 && ig__opt_is(g, p, IG_OP_expand) && fixed(s, g->nodes[p].inputs[0])) {
            slot = i;
            e = p;
        }
    }
    if (slot < 0) return INGOT_OK;
    int32_t c = g->nodes[e].inputs[0];
    const ig_shape *cs = &g->values[c].shape;
    for (int32_t i = 0; i < n->n_inputs; i++) {
        int32_t v = n->inputs[i];
        if (i == slot || v < 0) continue;
        if (!fixed(s, v) || !ig__opt_mask_fits(&g->values[v].shape, cs)) return INGOT_OK;
    }
    if (!ig__opt_shape_eq(&g->values[n->outputs[0]].shape, &g->values[g->nodes[e].outputs[0]].shape)) return INGOT_OK;
    /* f over c, into a new value; then an Expand of it to the shape f had, writing f's output */
    char base[300];
    snprintf(base, sizeof base, "%s_unexpanded", g->values[n->outputs[0]].name);
    int32_t y = n->outputs[0], shape = g->nodes[e].inputs[1];
    int32_t fc = ig__graph_new_value(g, base, cx->err);
    if (fc < 0 || ig__opt_copy_node(cx, id, slot, c, fc) < 0) return cx->err->status;
    int32_t x = ig__opt_add_node(cx, g->nodes[e].name, "Expand", "", 13, 2, 1, 0);
    if (x < 0) return cx->err->status;
    g->nodes[x].inputs[0] = fc;
    g->nodes[x].inputs[1] = shape;
    ingot_status st = ig__opt_replace(cx, x, &id, 1, y);
    if (st != INGOT_OK) return st;
    if (fc < s->cap) s->fixed[fc] = true; /* a node after this one may sink the new Expand further */
    return INGOT_OK;
}

ingot_status ig__opt_pass_expand_sink(ig_opt_ctx *cx)
{
    const ig_graph *g = cx->g;
    sink_state s = {.cap = 2 * g->n_values + 2 * g->n_nodes + 16};
    if (!(s.fixed = ig__calloc((size_t)s.cap, sizeof(bool))))
        return ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    mark_fixed(cx, &s);
    ingot_status st = INGOT_OK;
    int32_t n0 = g->n_nodes; /* the nodes of the order; the ones made here come after */
    for (int32_t k = 0; k < n0 && st == INGOT_OK; k++) st = visit(cx, &s, g->order[k]);
    ig__free(s.fixed);
    return st;
}
