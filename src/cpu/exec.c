/* exec.c -- the CPU executor: one arena, then every non-folded node in order. */
#include "exec.h"

#include <stdint.h>

#define ALIGN 64

static size_t align_up(size_t n) { return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

void ig__cpu_release(ig_cpu_exec *x)
{
    if (!x) return;
    ig__free(x->t);
    ig__free_aligned(x->arena);
    ig__free_aligned(x->consts);
    ig__free_aligned(x->inputs);
    ig__free(x->scratch_offset);
    ig__free(x->scratch_bytes);
    memset(x, 0, sizeof *x);
}

static bool in_arena(const ig_value *v) { return !(v->flags & (IG_VAL_CONST | IG_VAL_INPUT)); }

ingot_status ig__cpu_prepare(ig_cpu_exec *x, const ig_graph *g, const ig_cpu_layout *layout,
                             struct ig_pool *pool, ig_err *err)
{
    ig__cpu_release(x);
    x->g = g;
    x->pool = pool;
    x->t = ig__calloc((size_t)g->n_values, sizeof(ig_tensor));
    x->scratch_offset = ig__calloc((size_t)g->n_nodes, sizeof(size_t));
    x->scratch_bytes = ig__calloc((size_t)g->n_nodes, sizeof(size_t));
    if (!x->t || !x->scratch_offset || !x->scratch_bytes) goto oom;

    /* shapes, and which values need bytes where */
    size_t consts = 0, inputs = 0, arena = 0;
    for (int32_t i = 0; i < g->n_values; i++) {
        const ig_value *v = &g->values[i];
        if (v->dtype == INGOT_DTYPE_UNDEFINED) continue; /* a name no node uses */
        if (!ig__shape_known(&v->shape)) {
            if (v->producer >= 0 && g->nodes[v->producer].folded) continue;
            char s[256];
            return ig__errf(err, INGOT_ERR_MODEL_SHAPE,
                            "tensor '%s' has shape %s, which is not concrete; bind the inputs' shapes first", v->name,
                            ig__shape_str(g, &v->shape, s, sizeof s));
        }
        int64_t dims[IG_MAX_RANK];
        for (int32_t k = 0; k < v->shape.rank; k++) dims[k] = v->shape.d[k].n;
        ig__tensor_set_shape(&x->t[i], v->dtype, v->shape.rank, dims);
        size_t bytes = align_up(ig__value_bytes(v));
        if (v->flags & IG_VAL_CONST) {
            if ((uintptr_t)v->c.data % ALIGN) consts += bytes;
        } else if (v->flags & IG_VAL_INPUT) {
            inputs += bytes;
        } else if (!layout) {
            arena += bytes;
        }
    }
    if (!layout) {
        for (int32_t k = 0; k < g->n_nodes; k++) {
            const ig_node *n = &g->nodes[k];
            const ig_op_def *d = n->op >= 0 ? ig__op_table[n->op] : NULL;
            if (n->folded || !d || !d->cpu_scratch) continue;
            x->scratch_bytes[k] = d->cpu_scratch(g, n);
            x->scratch_offset[k] = arena;
            arena += align_up(x->scratch_bytes[k]);
        }
    } else {
        arena = layout->arena_bytes;
        memcpy(x->scratch_offset, layout->scratch_offset, sizeof(size_t) * (size_t)g->n_nodes);
        memcpy(x->scratch_bytes, layout->scratch_bytes, sizeof(size_t) * (size_t)g->n_nodes);
    }
    x->arena_bytes = arena;
    x->consts_bytes = consts;
    x->inputs_bytes = inputs;
    x->arena = ig__malloc_aligned(arena ? arena : ALIGN, ALIGN);
    x->consts = ig__malloc_aligned(consts ? consts : ALIGN, ALIGN);
    x->inputs = ig__malloc_aligned(inputs ? inputs : ALIGN, ALIGN);
    if (!x->arena || !x->consts || !x->inputs) goto oom;

    size_t c_off = 0, i_off = 0, a_off = 0;
    for (int32_t i = 0; i < g->n_values; i++) {
        const ig_value *v = &g->values[i];
        if (v->dtype == INGOT_DTYPE_UNDEFINED || !ig__shape_known(&v->shape)) continue;
        size_t bytes = ig__value_bytes(v);
        if (v->flags & IG_VAL_CONST) {
            if ((uintptr_t)v->c.data % ALIGN) {
                x->t[i].data = x->consts + c_off;
                if (bytes) memcpy(x->t[i].data, v->c.data, bytes);
                c_off += align_up(bytes);
            } else {
                x->t[i].data = (void *)v->c.data;
            }
        } else if (v->flags & IG_VAL_INPUT) {
            x->t[i].data = x->inputs + i_off;
            i_off += align_up(bytes);
        } else if (layout) {
            if (layout->offset[i] == SIZE_MAX)
                return ig__errf(err, INGOT_ERR_INTERNAL, "tensor '%s' has no place in the memory plan", v->name);
            x->t[i].data = x->arena + layout->offset[i];
        } else {
            x->t[i].data = x->arena + a_off;
            a_off += align_up(bytes);
        }
    }
    (void)in_arena;
    return INGOT_OK;
oom:
    ig__cpu_release(x);
    return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory preparing the CPU executor");
}

ingot_status ig__cpu_set_input(ig_cpu_exec *x, int32_t input_index, const void *data, size_t bytes)
{
    int32_t v = x->g->inputs[input_index];
    if (bytes) memcpy(x->t[v].data, data, bytes);
    return INGOT_OK;
}

ingot_status ig__cpu_run(ig_cpu_exec *x, ig_err *err)
{
    const ig_graph *g = x->g;
    const ig_tensor *in[64];
    ig_tensor *out[64];
    for (int32_t k = 0; k < g->n_nodes; k++) {
        int32_t id = g->order[k];
        const ig_node *n = &g->nodes[id];
        if (n->folded) continue;
        const ig_op_def *d = ig__op_table[n->op];
        if (n->n_inputs > 64 || n->n_outputs > 64)
            return ig__errf(err, INGOT_ERR_MODEL_UNSUPPORTED_OP, "node '%s' (%s): more than 64 inputs or outputs",
                            ig__node_label(n), n->op_type);
        for (int32_t i = 0; i < n->n_inputs; i++) in[i] = n->inputs[i] >= 0 ? &x->t[n->inputs[i]] : NULL;
        for (int32_t i = 0; i < n->n_outputs; i++) out[i] = n->outputs[i] >= 0 ? &x->t[n->outputs[i]] : NULL;
        ig_exec ex = {.g = g, .node = n, .n_in = n->n_inputs, .n_out = n->n_outputs, .in = in, .out = out,
                      .scratch = x->arena + x->scratch_offset[id], .scratch_bytes = x->scratch_bytes[id],
                      .pool = x->pool, .err = err};
        ingot_status st = d->cpu(&ex);
        if (st != INGOT_OK) {
            if (err && err->status == INGOT_OK)
                ig__errf(err, st, "node '%s' (%s): kernel failed", ig__node_label(n), n->op_type);
            return st;
        }
    }
    return INGOT_OK;
}
