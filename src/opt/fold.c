/*
 * fold.c -- the `fold` pass: every node whose inputs are all build-time constants is computed now and
 * replaced by the constants it computes.
 *
 * The inference driver already folds such nodes when their outputs are small (64 KiB by default); this
 * pass re-infers with a limit of o->fold_max_bytes (1 GiB) so that filters computed from initializers
 * (transposed, cast, reshaped weights) and constant masks are folded too, by the same CPU kernels
 * execution would run. Each folded node is then removed and its outputs become initializers the graph
 * owns (data copied into g->arena, 64-byte aligned), keeping their value ids, so names, graph outputs
 * (which become constant outputs: the planner, the executors and get_output read constants where they
 * lie) and every consumer stay as they were.
 *
 * Valid for every shape: a node folds only when every input's data and shape are known, which never
 * holds for anything computed from a graph input's symbolic shape. A value computed from a graph input
 * that happens to be bound (a shape input with values) folds for those values only: such nodes are
 * kept, since the graph must work for every binding.
 */
#include "opt_internal.h"

#define DEFAULT_FOLD_MAX_BYTES ((size_t)1 << 30)

static ingot_status own_constant(ig_graph *g, ig_value *v, ig_err *err)
{
    void *copy = NULL;
    if (v->c.n_bytes) {
        if (!(copy = ig__arena_alloc_aligned(&g->arena, v->c.n_bytes, 64)))
            return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory keeping folded tensor '%s' (%zu bytes)",
                            v->name, v->c.n_bytes);
        memcpy(copy, v->c.data, v->c.n_bytes);
    }
    v->c.data = copy;
    v->c.name = v->name;
    v->flags |= IG_VAL_INITIALIZER | IG_VAL_CONST;
    g->n_initializers++;
    return INGOT_OK;
}

ingot_status ig__opt_pass_fold(ig_opt_ctx *cx)
{
    ig_graph *g = cx->g;
    ingot_status st;
    ig_infer_options io = {.fold_max_bytes = cx->o->fold_max_bytes ? cx->o->fold_max_bytes : DEFAULT_FOLD_MAX_BYTES};
    /* the inference recomputes every value that points into the fold arena: start it afresh */
    ig__arena_free(cx->fold_arena);
    ig__arena_init(cx->fold_arena);
    cx->changed = true;
    if ((st = ig__graph_infer(g, &io, cx->fold_arena, cx->err)) != INGOT_OK) return st;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        int32_t id = g->order[k];
        ig_node *n = &g->nodes[id];
        if (!n->folded || n->dead) continue;
        bool keep = false;
        for (int32_t j = 0; j < n->n_outputs; j++) {
            int32_t v = n->outputs[j];
            if (v >= 0 && ((v < cx->n_varies && cx->varies[v]) || !(g->values[v].flags & IG_VAL_CONST))) keep = true;
        }
        if (keep) continue;
        for (int32_t j = 0; j < n->n_outputs; j++)
            if (n->outputs[j] >= 0 && (st = own_constant(g, &g->values[n->outputs[j]], cx->err)) != INGOT_OK) return st;
        ig__graph_remove_node(g, id);
        cx->n_rewrites++;
    }
    return INGOT_OK;
}
