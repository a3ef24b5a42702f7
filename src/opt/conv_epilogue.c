/*
 * conv_epilogue.c -- the `conv_epilogue` pass: a Conv and the elementwise nodes after it become one
 * ingot.FusedConv(X, W, B or omitted, extras...) whose epilogue program computes them on the conv's
 * result while it is still in registers (Relu; Add(residual) -> Relu in ResNet; Clip(0, 6) in
 * MobileNet, depthwise convs included; Sigmoid and Mul(conv, Sigmoid(conv)) for SiLU; HardSwish).
 *
 * The Conv: filters and bias are build-time constants (bn_fold has folded a BatchNormalization into
 * them), one output of fp32/fp16/bf16. The group grows from the conv's output by group.c's rule: every
 * member has exactly the conv's output shape, reads only group values, scalar constants (folded into
 * the instruction) and values that exist before the Conv in g->order (so a residual computed by a
 * later branch is taken by that branch's conv instead, and the graph stays acyclic), and every value
 * but the final one is read only inside the group. So FusedConv computes, element by element, what
 * the nodes it replaces computed, for every shape. Program input 0 is conv + bias, inputs 1.. the
 * extras; the CUDA backend adds the bias inside the same program, which is why the group leaves one
 * input and one instruction of the program's limits free. The final value keeps the conv's dtype (the
 * fused op's output type) and every Conv attribute is copied. A Conv with nothing to fuse stays.
 */
#include "opt_internal.h"

static bool conv_dtype(ingot_dtype t)
{
    return t == INGOT_DTYPE_FLOAT || t == INGOT_DTYPE_FLOAT16 || t == INGOT_DTYPE_BFLOAT16;
}

/* A Conv the pass can take: constant filter and bias, one float output of known rank. */
static bool conv_ok(const ig_opt_ctx *cx, const ig_node *n)
{
    const ig_graph *g = cx->g;
    if (n->dead || n->op != IG_OP_conv || n->n_inputs < 2 || n->n_outputs != 1 || n->outputs[0] < 0) return false;
    if (n->domain && n->domain[0]) return false;
    int32_t b = n->n_inputs > 2 ? n->inputs[2] : -1;
    if (!ig__opt_is_const(cx, n->inputs[1]) || (b >= 0 && !ig__opt_is_const(cx, b))) return false;
    const ig_value *y = &g->values[n->outputs[0]];
    return conv_dtype(y->dtype) && y->shape.rank >= 3 && n->inputs[0] >= 0;
}

static ingot_status make_fused(ig_opt_ctx *cx, int32_t ci, ig_opt_group *gr, int32_t *pos, int32_t cap)
{
    ig_graph *g = cx->g;
    const ig_node *c = &g->nodes[ci];
    int32_t n_extra = gr->n_in - 1, n_attrs = c->n_attrs + 2;
    int32_t id = ig__opt_add_node(cx, c->name, "FusedConv", "ingot", 1, 3 + n_extra, 1, n_attrs);
    if (id < 0) return cx->err->status;
    c = &g->nodes[ci];
    ig_node *n = &g->nodes[id];
    ingot_status st;
    for (int32_t i = 0; i < c->n_attrs; i++)
        if ((st = ig__node_copy_attr(g, n, i, &c->attrs[i], cx->err)) != INGOT_OK) return st;
    if ((st = ig__pw_encode(g, n, c->n_attrs, "epilogue_", &gr->prog, cx->err)) != INGOT_OK) return st;
    n->inputs[0] = c->inputs[0];
    n->inputs[1] = c->inputs[1];
    n->inputs[2] = c->n_inputs > 2 ? c->inputs[2] : -1;
    for (int32_t i = 0; i < n_extra; i++) n->inputs[3 + i] = gr->in[1 + i];
    int32_t covered[1 + IG_PW_MAX_OPS];
    covered[0] = ci;
    for (int32_t i = 0; i < gr->n_members; i++) covered[1 + i] = gr->members[i];
    if ((st = ig__opt_set_covers(cx, id, covered, 1 + gr->n_members)) != INGOT_OK) return st;
    ig__graph_remove_node(g, ci);
    ig__opt_group_finish(cx, gr, id, pos, cap);
    cx->n_rewrites++;
    return INGOT_OK;
}

static ingot_status visit(ig_opt_ctx *cx, ig_opt_walk *w, int32_t ci)
{
    const ig_graph *g = cx->g;
    if (!conv_ok(cx, &g->nodes[ci])) return INGOT_OK;
    int32_t y = g->nodes[ci].outputs[0];
    ig_opt_group gr = {.anchor = ci,
                       .int_math = false,
                       .max_in = IG_PW_MAX_IN - 1,
                       .max_ops = IG_PW_MAX_OPS - 1,
                       .dtype = g->values[y].dtype,
                       .shape = g->values[y].shape,
                       .n_fixed = 1,
                       .seed = y};
    gr.in[0] = y;
    return ig__opt_group_grow(cx, &w->u, w->pos, &gr) > 0 ? make_fused(cx, ci, &gr, w->pos, w->cap) : INGOT_OK;
}

ingot_status ig__opt_pass_conv_epilogue(ig_opt_ctx *cx) { return ig__opt_walk(cx, true, visit); }
