/*
 * conv_pool.c -- the `conv_pool` pass: an ingot.FusedConv whose output only a 2-D MaxPool reads takes
 * the pool in (attribute "pool": its window, strides, pads and ceil_mode; op.h). A network's stem is
 * Conv -> BatchNorm -> Relu -> MaxPool, and on the GPU the conv's output is the largest tensor of the run
 * (ResNet-50 at batch 256: 411 MB written by the conv and read back by the pool). With the pool inside
 * the node a backend may compute both without that round trip (the CUDA stem kernel's pooled form);
 * one that cannot runs the conv into scratch and pools it, which is what the two nodes did.
 *
 * Taken: the FusedConv has no epilogue inputs (its epilogue is of the conv's output alone) and explicit
 * pads; the MaxPool is 2-D with dilation 1, explicit pads, and no Indices output in use. The fused node
 * keeps the FusedConv's attributes and inputs and takes the MaxPool's output.
 */
#include "opt_internal.h"

#include <string.h>

static bool explicit_pads(const ig_node *n)
{
    const char *ap = ig__attr_str(n, "auto_pad", "NOTSET");
    return !strcmp(ap, "NOTSET") || !ap[0];
}

/* MaxPool m as the 9 ints of FusedConv's "pool" attribute; false when the pass does not take it. */
static bool pool_attr(const ig_graph *g, const ig_node *m, int64_t *v)
{
    const int64_t *a;
    int64_t na;
    if (m->n_outputs > 1 && m->outputs[1] >= 0) return false; /* Indices */
    if (!explicit_pads(m) || m->n_inputs != 1 || g->values[m->outputs[0]].shape.rank != 4) return false;
    if (!ig__attr_ints(m, "kernel_shape", &a, &na) || na != 2) return false;
    v[0] = a[0], v[1] = a[1];
    v[2] = v[3] = 1;
    if (ig__attr_ints(m, "strides", &a, &na)) {
        if (na != 2) return false;
        v[2] = a[0], v[3] = a[1];
    }
    if (ig__attr_ints(m, "dilations", &a, &na) && (na != 2 || a[0] != 1 || a[1] != 1)) return false;
    v[4] = v[5] = v[6] = v[7] = 0;
    if (ig__attr_ints(m, "pads", &a, &na)) {
        if (na != 4) return false;
        memcpy(v + 4, a, 4 * sizeof *v);
    }
    v[8] = ig__attr_int(m, "ceil_mode", 0);
    ig_conv_pool p;
    return ig__conv_pool_read(v, 9, &p); /* the checks the fused op makes of the attribute */
}

static ingot_status visit(ig_opt_ctx *cx, ig_opt_walk *w, int32_t id)
{
    ig_graph *g = cx->g;
    const ig_node *c = &g->nodes[id];
    if (c->dead || c->op != IG_OP_fused_conv || c->n_inputs > 3 || c->n_outputs != 1 || !explicit_pads(c) ||
        ig__node_attr(c, "pool"))
        return INGOT_OK;
    const int32_t y = c->outputs[0], mp = ig__uses_sole(&w->u, y);
    if (y < 0 || g->values[y].shape.rank != 4 || !ig__opt_is(g, mp, IG_OP_max_pool)) return INGOT_OK;
    int64_t v[9];
    if (g->nodes[mp].inputs[0] != y || !pool_attr(g, &g->nodes[mp], v)) return INGOT_OK;
    const int32_t out = g->nodes[mp].outputs[0];
    int32_t made = ig__opt_copy_node(cx, id, -1, -1, out);
    if (made < 0) return cx->err->status;
    /* the copy has the conv's attributes; the pool goes into a slot of its own */
    ig_node *n = &g->nodes[made];
    ig_attr *attrs = ig__arena_array(&g->arena, (size_t)n->n_attrs + 1, sizeof(ig_attr));
    if (!attrs) return ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(attrs, n->attrs, sizeof(ig_attr) * (size_t)n->n_attrs);
    n->attrs = attrs;
    ingot_status st = ig__node_set_ints(g, n, n->n_attrs++, "pool", v, 9, cx->err);
    if (st != INGOT_OK) return st;
    const int32_t replaced[2] = {id, mp};
    return ig__opt_replace(cx, made, replaced, 2, out);
}

ingot_status ig__opt_pass_conv_pool(ig_opt_ctx *cx) { return ig__opt_walk(cx, false, visit); }
