/*
 * canonical.c -- the `canonical` pass: an op that another op of the default domain computes exactly
 * becomes that op, so a backend lowers one form and the later passes match one form.
 *
 * CastLike(x, like) -> Cast(x, to = like's dtype): CastLike reads only its second input's type, which
 * is known at build, and its other attributes (saturate, round_mode) are Cast's too. Exporters of
 * torch's dynamo path (onnxscript's torchlib) emit it where TorchScript's exporter emitted Cast. The
 * second input loses a reader; what computed it alone goes with the next dce.
 *
 * GlobalLpPool(x, p = 2 | 1) -> ReduceL2 | ReduceL1(x, axes = the spatial axes, keepdims 1): the same
 * (sum of |x|^p)^(1/p) per (n, c), by the reduction kernels every backend has. Other p stay as they are
 * (CPU only): a Pow chain would round twice.
 */
#include "opt_internal.h"

#include <stdio.h>

static ingot_status cast_like(ig_opt_ctx *cx, int32_t id)
{
    ig_graph *g = cx->g;
    const ig_node *n = &g->nodes[id];
    if (n->n_inputs != 2 || n->inputs[0] < 0 || n->inputs[1] < 0 || n->n_outputs != 1 || n->outputs[0] < 0)
        return INGOT_OK;
    const ingot_dtype to = g->values[n->inputs[1]].dtype;
    if (to == INGOT_DTYPE_UNDEFINED) return INGOT_OK;
    const int32_t x = n->inputs[0], y = n->outputs[0], n_attrs = n->n_attrs;
    int32_t made = ig__opt_add_node(cx, n->name, "Cast", "", n->opset, 1, 1, n_attrs + 1);
    if (made < 0) return cx->err->status;
    n = &g->nodes[id]; /* g->nodes may have moved */
    ig_node *c = &g->nodes[made];
    c->inputs[0] = x;
    ingot_status st = ig__node_set_int(g, c, 0, "to", (int64_t)to, cx->err);
    for (int32_t i = 0; i < n_attrs && st == INGOT_OK; i++) st = ig__node_copy_attr(g, c, i + 1, &n->attrs[i], cx->err);
    if (st != INGOT_OK) return st;
    return ig__opt_replace(cx, made, &id, 1, y);
}

static ingot_status global_lp_pool(ig_opt_ctx *cx, int32_t id)
{
    ig_graph *g = cx->g;
    const ig_node *n = &g->nodes[id];
    if (n->n_inputs != 1 || n->inputs[0] < 0 || n->n_outputs != 1 || n->outputs[0] < 0) return INGOT_OK;
    const int32_t x = n->inputs[0], y = n->outputs[0], rank = g->values[x].shape.rank;
    const int64_t p = ig__attr_int(n, "p", 2);
    if ((p != 1 && p != 2) || rank < 3) return INGOT_OK;
    int64_t axes[IG_MAX_RANK], n_axes = rank - 2;
    for (int32_t i = 2; i < rank; i++) axes[i - 2] = i;
    char base[128];
    snprintf(base, sizeof base, "%s_axes", n->name);
    const int32_t av = ig__graph_add_const(g, base, INGOT_DTYPE_INT64, 1, &n_axes, axes, cx->err);
    if (av < 0) return cx->err->status;
    /* opset 18: axes is an input of every reduction */
    int32_t made = ig__opt_add_node(cx, g->nodes[id].name, p == 2 ? "ReduceL2" : "ReduceL1", "", 18, 2, 1, 1);
    if (made < 0) return cx->err->status;
    ig_node *r = &g->nodes[made];
    r->inputs[0] = x;
    r->inputs[1] = av;
    ingot_status st = ig__node_set_int(g, r, 0, "keepdims", 1, cx->err);
    if (st != INGOT_OK) return st;
    return ig__opt_replace(cx, made, &id, 1, y);
}

static ingot_status visit(ig_opt_ctx *cx, ig_opt_walk *w, int32_t id)
{
    (void)w;
    const ig_node *n = &cx->g->nodes[id];
    if (n->dead) return INGOT_OK;
    if (n->op == IG_OP_cast_like) return cast_like(cx, id);
    if (n->op == IG_OP_global_lp_pool) return global_lp_pool(cx, id);
    return INGOT_OK;
}

ingot_status ig__opt_pass_canonical(ig_opt_ctx *cx) { return ig__opt_walk(cx, false, visit); }
