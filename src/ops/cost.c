/*
 * cost.c -- per-node arithmetic and the minimum bytes a node must move: every non-omitted input read
 * once and every output written once. Folded nodes cost nothing at run time; zero-copy aliases
 * (Reshape, Squeeze, ...) move no bytes. These figures feed the roofline diagnostics.
 */
#include "op.h"

void ig__graph_cost(ig_graph *g)
{
    for (int32_t k = 0; k < g->n_nodes; k++) {
        ig_node *n = &g->nodes[k];
        n->flops = n->bytes_read = n->bytes_written = 0;
        if (n->folded || n->op < 0) continue;
        const ig_op_def *d = ig__op_table[n->op];
        bool concrete = true;
        double out_elems = 0, rd = 0, wr = 0;
        for (int32_t i = 0; i < n->n_inputs; i++) {
            if (n->inputs[i] < 0) continue;
            const ig_value *v = &g->values[n->inputs[i]];
            if (!ig__shape_known(&v->shape)) concrete = false;
            rd += (double)ig__value_bytes(v);
        }
        for (int32_t i = 0; i < n->n_outputs; i++) {
            if (n->outputs[i] < 0) continue;
            const ig_value *v = &g->values[n->outputs[i]];
            int64_t numel;
            if (!ig__shape_numel(&v->shape, &numel)) {
                concrete = false;
                continue;
            }
            out_elems += (double)numel;
            wr += (double)ig__value_bytes(v);
        }
        if (!concrete) continue;
        n->flops = d->flops ? d->flops(g, n) : out_elems;
        if (d->flags & IG_OP_ALIAS) continue;
        n->bytes_read = rd;
        n->bytes_written = wr;
    }
}

double ig__flops_none(const ig_graph *g, const ig_node *n)
{
    (void)g;
    (void)n;
    return 0;
}

const ig_value *ig__node_input(const ig_graph *g, const ig_node *n, int i)
{
    return i >= 0 && i < n->n_inputs && n->inputs[i] >= 0 ? &g->values[n->inputs[i]] : NULL;
}

double ig__flops_per_input(const ig_graph *g, const ig_node *n)
{
    int64_t k = 0;
    const ig_value *x = ig__node_input(g, n, 0);
    return x && ig__shape_numel(&x->shape, &k) ? (double)k : 0;
}
