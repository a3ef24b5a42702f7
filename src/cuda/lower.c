/*
 * lower.c -- from an inferred graph (every shape concrete, optimized by src/opt) to a device program:
 * tensors (strided views of buffers) and steps. The driver: consumers of every value, the graph inputs'
 * staging copies, one lowering per node in execution order (the table of lower_table.c), the outputs'
 * copies into the caller's buffers. What each op becomes is in the family files (lower_internal.h).
 */
#include "lower_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ingot_status build_consumers(ig_lower *L)
{
    const ig_graph *g = L->g;
    int32_t nv = g->n_values;
    L->cons_off = ig__calloc((size_t)nv + 1, sizeof(int32_t));
    L->is_output = ig__calloc((size_t)nv + 1, sizeof(bool));
    if (!L->cons_off || !L->is_output) return ig__lw_oom(L);
    for (int32_t i = 0; i < g->n_outputs; i++) L->is_output[g->outputs[i]] = true;
    int32_t *fill = NULL;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            for (int32_t v = 0; v < nv; v++) L->cons_off[v + 1] += L->cons_off[v];
            L->cons = ig__calloc((size_t)L->cons_off[nv] + 1, sizeof(int32_t));
            fill = ig__calloc((size_t)nv + 1, sizeof(int32_t));
            if (!L->cons || !fill) break;
        }
        for (int32_t k = 0; k < g->n_nodes; k++) {
            int32_t id = g->order[k];
            const ig_node *n = &g->nodes[id];
            if (n->folded) continue;
            for (int32_t i = 0; i < n->n_inputs; i++) {
                int32_t v = n->inputs[i], j = 0;
                while (j < i && n->inputs[j] != v) j++;
                if (v < 0 || j < i) continue; /* each node once per value */
                if (pass == 0)
                    L->cons_off[v + 1]++;
                else
                    L->cons[L->cons_off[v] + fill[v]++] = id;
            }
        }
    }
    bool ok = L->cons && fill;
    ig__free(fill);
    return ok ? INGOT_OK : ig__lw_oom(L);
}

/* Graph inputs consumed only by convolutions start out channels-last (the input copy transposes). */
static bool feeds_only_convs(const ig_lower *L, int32_t v)
{
    if (L->is_output[v] || ig__lw_n_cons(L, v) == 0) return false;
    for (int32_t i = L->cons_off[v]; i < L->cons_off[v + 1]; i++) {
        const ig_node *c = ig__lw_node(L, L->cons[i]);
        if ((c->op != IG_OP_conv && c->op != IG_OP_fused_conv) || c->inputs[0] != v) return false;
    }
    return true;
}

/* Every value the lowering walks over has a concrete shape, and every node a lowering that takes it. */
static ingot_status check_graph(ig_lower *L)
{
    const ig_graph *g = L->g;
    char why[IG_ERRMSG_MAX];
    int32_t bad = ig__cu_unsupported(g, why, sizeof why);
    if (bad)
        return ig__errf(L->err, INGOT_ERR_MODEL_UNSUPPORTED_OP, "the CUDA backend cannot run %d node%s: %s", (int)bad,
                        bad == 1 ? "" : "s", why);
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const ig_node *n = &g->nodes[g->order[k]];
        if (n->folded) continue;
        for (int32_t j = 0; j < n->n_outputs; j++) {
            if (n->outputs[j] < 0) continue;
            const ig_value *v = &g->values[n->outputs[j]];
            if (!ig__shape_known(&v->shape)) {
                char s[256];
                return ig__errf(L->err, INGOT_ERR_MODEL_SHAPE,
                                "node '%s' (%s): output '%s' has shape %s; bind the inputs' shapes before building "
                                "for the GPU",
                                ig__node_label(n), n->op_type, v->name, ig__shape_str(g, &v->shape, s, sizeof s));
            }
        }
    }
    return INGOT_OK;
}

static ingot_status lower_inputs(ig_lower *L)
{
    const ig_graph *g = L->g;
    ig_cu_prog *p = L->p;
    for (int32_t i = 0; i < g->n_inputs; i++) {
        int32_t v = g->inputs[i];
        const ig_value *x = &g->values[v];
        p->in_tensor[i] = -1;
        if (x->flags & IG_VAL_CONST) continue; /* a bound shape input, folded into constants */
        int64_t dims[IG_MAX_RANK];
        int32_t rank = ig__lw_value_dims(L, v, dims);
        int32_t b = ig__lw_buf(L, IG_LOC_INPUT, ig__lw_numel(rank, dims) * ingot_dtype_size(x->dtype));
        if (b < 0) return ig__lw_oom(L);
        p->bufs[b].io = i;
        int32_t src = ig__lw_tensor(L, b, x->dtype, rank, dims, NULL, 0);
        bool nhwc = L->o->nhwc && rank == 4 && feeds_only_convs(L, v);
        int32_t dst = ig__lw_dense(L, ig__lw_dev_dtype(p, x->dtype), rank, dims, nhwc);
        if (src < 0 || dst < 0) return ig__lw_oom(L);
        p->in_tensor[i] = src;
        ingot_status st = ig__lw_copy(L, -1, "input copy", src, dst, 1);
        if (st != INGOT_OK) return st;
        p->val_tensor[v] = dst;
    }
    return INGOT_OK;
}

static ingot_status lower_outputs(ig_lower *L)
{
    const ig_graph *g = L->g;
    ig_cu_prog *p = L->p;
    for (int32_t j = 0; j < g->n_outputs; j++) {
        int32_t v = g->outputs[j];
        const ig_value *x = &g->values[v];
        int32_t src = ig__lw_get(L, v);
        if (src < 0) return ig__errf(L->err, INGOT_ERR_INTERNAL, "graph output '%s' has no device tensor", x->name);
        int64_t dims[IG_MAX_RANK];
        int32_t rank = ig__lw_value_dims(L, v, dims);
        int32_t b = ig__lw_buf(L, IG_LOC_OUTPUT, ig__lw_numel(rank, dims) * ingot_dtype_size(x->dtype));
        if (b < 0) return ig__lw_oom(L);
        p->bufs[b].io = j;
        int32_t dst = ig__lw_tensor(L, b, x->dtype, rank, dims, NULL, 0);
        if (dst < 0) return ig__lw_oom(L);
        p->out_tensor[j] = dst;
        ingot_status st = ig__lw_copy(L, -1, "output copy", src, dst, 1);
        if (st != INGOT_OK) return st;
    }
    return INGOT_OK;
}

ingot_status ig__cu_lower(const ig_graph *g, const ig_cu_lower_options *o, ig_cu_prog *p, ig_err *err)
{
    memset(p, 0, sizeof *p);
    ig__arena_init(&p->arena);
    p->g = g;
    p->fdt = o->precision == INGOT_DTYPE_FLOAT16 ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT;
    ig_lower L = {.p = p, .g = g, .o = o, .err = err};
    ingot_status st = INGOT_OK;
    L.lazy = ig__calloc((size_t)g->n_values + 1, sizeof(ig_lazy *));
    p->val_tensor = ig__arena_array(&p->arena, (size_t)g->n_values + 1, sizeof(int32_t));
    p->val_nhwc = ig__arena_array(&p->arena, (size_t)g->n_values + 1, sizeof(int32_t));
    p->n_inputs = g->n_inputs;
    p->n_outputs = g->n_outputs;
    p->in_tensor = ig__arena_array(&p->arena, (size_t)g->n_inputs + 1, sizeof(int32_t));
    p->out_tensor = ig__arena_array(&p->arena, (size_t)g->n_outputs + 1, sizeof(int32_t));
    if (!L.lazy || !p->val_tensor || !p->val_nhwc || !p->in_tensor || !p->out_tensor) {
        st = ig__lw_oom(&L);
        goto out;
    }
    for (int32_t v = 0; v < g->n_values; v++) p->val_tensor[v] = p->val_nhwc[v] = -1;
    const char *slots = getenv("INGOT_CUDA_CONCAT_SLOTS"); /* "0": every Concat copies its inputs */
    if (!slots || strcmp(slots, "0")) {
        L.concat_y = ig__calloc((size_t)g->n_nodes + 1, sizeof(int32_t));
        L.concat_layout = ig__calloc((size_t)g->n_nodes + 1, 1);
        if (!L.concat_y || !L.concat_layout) {
            st = ig__lw_oom(&L);
            goto out;
        }
        for (int32_t k = 0; k < g->n_nodes; k++) L.concat_y[k] = -1;
    }
    if ((st = build_consumers(&L)) != INGOT_OK || (st = check_graph(&L)) != INGOT_OK ||
        (st = lower_inputs(&L)) != INGOT_OK)
        goto out;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        int32_t id = g->order[k];
        const ig_node *n = &g->nodes[id];
        if (n->folded) continue;
        if ((st = ig__lw_entry(n->op)->lower(&L, id)) != INGOT_OK) {
            if (err && err->status == INGOT_OK) ig__lw_fail(&L, id, st, "lowering failed");
            goto out;
        }
        p->n_lowered[n->op]++;
        if (n->n_covers > 1) p->n_fused += n->n_covers - 1;
        for (int32_t j = 0; j < n->n_outputs; j++) {
            int32_t v = n->outputs[j];
            if (v >= 0 && !ig__lw_produced(&L, v) && ig__lw_out_used(&L, id, j) && !ig__lw_is_const(&L, v)) {
                st = ig__lw_fail(&L, id, INGOT_ERR_INTERNAL, "output '%s' was not produced", g->values[v].name);
                goto out;
            }
        }
    }
    st = lower_outputs(&L);
out:
    ig__free(L.lazy);
    ig__free(L.concat_y);
    ig__free(L.concat_layout);
    ig__free(L.cons_off);
    ig__free(L.cons);
    ig__free(L.is_output);
    if (st != INGOT_OK) ig__cu_prog_free(p);
    return st;
}
