/*
 * pointwise.c -- the `pointwise` pass: chains of two or more elementwise nodes left after the other
 * fusions become one ingot.Pointwise(inputs...) with the program in `ops`/`params`, `int_math` and
 * `to` (the final value's dtype): GELU's leftovers, Cast -> Sub -> Mul masks, the Mul + Add of a
 * standalone BatchNormalization, Sigmoid + Mul (SiLU) not after a conv.
 *
 * Groups start at the earliest elementwise node in g->order not yet taken and grow by group.c's rule
 * (members of the first node's output shape or of a larger one it broadcasts to -- the group's shape
 * grows to it, and the smaller members are computed per element of it --, external inputs from before
 * it, closed; at most
 * IG_PW_MAX_IN inputs and IG_PW_MAX_OPS instructions within the registers). The math type is the
 * first node's: int64 when every one of its inputs and outputs is an integer or bool, else fp32; each
 * member must be exact in it (ig__pw_node_ok). The inputs broadcast to the last member's output shape
 * (each member's output broadcasts to it), which is therefore Pointwise's output shape, and the program
 * computes each member's value per element, for every shape. A lone elementwise node stays the ONNX
 * op it is: its own kernel computes it as well, and its node tests stay meaningful.
 */
#include "opt_internal.h"

/* Every input and the output of n integer or bool. */
static bool all_int(const ig_graph *g, const ig_node *n)
{
    for (int32_t i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] < 0) continue;
        ingot_dtype t = g->values[n->inputs[i]].dtype;
        if (!ig__dtype_is_int(t) && t != INGOT_DTYPE_BOOL) return false;
    }
    ingot_dtype t = g->values[n->outputs[0]].dtype;
    return ig__dtype_is_int(t) || t == INGOT_DTYPE_BOOL;
}

static ingot_status make_pointwise(ig_opt_ctx *cx, ig_opt_group *gr, int32_t *pos, int32_t cap)
{
    ig_graph *g = cx->g;
    int32_t last = gr->members[gr->n_members - 1];
    int32_t id = ig__opt_add_node(cx, g->nodes[last].name, "Pointwise", "ingot", 1, gr->n_in, 1, 4);
    if (id < 0) return cx->err->status;
    ig_node *n = &g->nodes[id];
    ingot_status st;
    if ((st = ig__pw_encode(g, n, 0, "", &gr->prog, cx->err)) != INGOT_OK ||
        (st = ig__node_set_int(g, n, 2, "int_math", gr->int_math, cx->err)) != INGOT_OK ||
        (st = ig__node_set_int(g, n, 3, "to", g->values[gr->final].dtype, cx->err)) != INGOT_OK ||
        (st = ig__opt_set_covers(cx, id, gr->members, gr->n_members)) != INGOT_OK)
        return st;
    for (int32_t i = 0; i < gr->n_in; i++) g->nodes[id].inputs[i] = gr->in[i];
    ig__opt_group_finish(cx, gr, id, pos, cap);
    cx->n_rewrites++;
    return INGOT_OK;
}

static ingot_status visit(ig_opt_ctx *cx, ig_opt_walk *w, int32_t id)
{
    const ig_graph *g = cx->g;
    const ig_node *n = &g->nodes[id];
    if (n->dead || n->n_outputs < 1 || n->outputs[0] < 0 || n->folded) return INGOT_OK;
    bool int_math = all_int(g, n);
    if (!ig__pw_node_ok(g, n, int_math)) return INGOT_OK;
    const ig_value *y = &g->values[n->outputs[0]];
    if (y->shape.rank < 0 || y->n_sym > 0) return INGOT_OK; /* shape arithmetic: see group.c */
    ig_opt_group gr = {.anchor = id,
                       .int_math = int_math,
                       .max_in = IG_PW_MAX_IN,
                       .max_ops = IG_PW_MAX_OPS,
                       .dtype = INGOT_DTYPE_UNDEFINED,
                       .shape = y->shape,
                       .widen = true,
                       .seed = -1,
                       .n_members = 1};
    gr.members[0] = id;
    return ig__opt_group_grow(cx, &w->u, w->pos, &gr) >= 2 ? make_pointwise(cx, &gr, w->pos, w->cap) : INGOT_OK;
}

ingot_status ig__opt_pass_pointwise(ig_opt_ctx *cx) { return ig__opt_walk(cx, true, visit); }
