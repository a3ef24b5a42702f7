/*
 * dce.c -- the `dce` pass: Identity and inference-mode Dropout become edges, then every node no graph
 * output needs is removed.
 *
 * Edges: the consumers of an Identity's (Dropout's) output read its input instead. Valid for every
 * shape and type, since the output is the input unchanged: Identity by definition, Dropout when it
 * cannot be in training mode (no training_mode input, or a constant false one; ingot runs inference
 * only, where Dropout is a copy) and its mask output is absent or unread. A node whose output is a
 * graph output stays: the output keeps its name and its own bytes.
 *
 * Removal: a node is needed when one of its outputs is a graph output or is read by a needed node;
 * one walk backwards over the order decides it for all (ops have no side effects).
 */
#include "opt_internal.h"

/* The value the node's output 0 equals, when the node is a removable copy; -1 otherwise. */
static int32_t copy_source(const ig_opt_ctx *cx, const ig_uses *u, const ig_node *n)
{
    if (n->n_outputs < 1 || n->outputs[0] < 0 || u->is_output[n->outputs[0]]) return -1;
    if (n->op == IG_OP_identity) return n->inputs[0];
    if (n->op != IG_OP_dropout) return -1;
    if (n->n_outputs > 1 && n->outputs[1] >= 0) {
        int32_t m = n->outputs[1];
        if (u->is_output[m] || ig__uses_count(u, m) > 0) return -1;
    }
    if (n->opset >= 12 && n->n_inputs > 2 && n->inputs[2] >= 0) {
        double train;
        if (!ig__opt_const_scalar(cx, n->inputs[2], &train) || train != 0) return -1;
    }
    return n->inputs[0];
}

ingot_status ig__opt_pass_dce(ig_opt_ctx *cx)
{
    ig_graph *g = cx->g;
    ig_uses u;
    ingot_status st = ig__uses_build(g, &u, cx->err);
    if (st != INGOT_OK) return st;
    int32_t *repl = ig__malloc(sizeof(int32_t) * ((size_t)g->n_values + 1));
    bool *need = ig__calloc((size_t)g->n_values + 1, sizeof(bool));
    if (!repl || !need) {
        st = ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    for (int32_t v = 0; v < g->n_values; v++) repl[v] = v;
    /* forward: copies become edges; in order, so a node's inputs are final when it is reached */
    for (int32_t k = 0; k < g->n_nodes; k++) {
        int32_t id = g->order[k];
        ig_node *n = &g->nodes[id];
        if (n->dead) continue;
        for (int32_t i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0) n->inputs[i] = repl[n->inputs[i]];
        int32_t src = copy_source(cx, &u, n);
        if (src < 0) continue;
        repl[n->outputs[0]] = src;
        ig__graph_remove_node(g, id);
        cx->n_rewrites++;
    }
    /* backward: what the outputs need */
    for (int32_t k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] >= 0) need[g->outputs[k]] = true;
    for (int32_t k = g->n_nodes - 1; k >= 0; k--) {
        int32_t id = g->order[k];
        ig_node *n = &g->nodes[id];
        if (n->dead) continue;
        bool needed = false;
        for (int32_t j = 0; j < n->n_outputs && !needed; j++) needed = n->outputs[j] >= 0 && need[n->outputs[j]];
        if (!needed) {
            ig__graph_remove_node(g, id);
            cx->n_rewrites++;
            continue;
        }
        for (int32_t i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0) need[n->inputs[i]] = true;
    }
out:
    ig__free(repl);
    ig__free(need);
    ig__uses_free(&u);
    return st;
}

/* `cleanup`, the last pass: dce again, for what the fusions left unread (the Expand of a mask that the
 * fused attention reads unexpanded, or not at all). */
ingot_status ig__opt_pass_cleanup(ig_opt_ctx *cx) { return ig__opt_pass_dce(cx); }
