/*
 * infer.c -- the shape/type inference driver.
 *
 * Walks the graph in topological order. For each node: resolve its descriptor (once), check arity,
 * call the descriptor's infer, reconcile with what the file declared, and fold the node when every
 * input is a build-time constant and the outputs are small (running the CPU reference kernel, so the
 * folded value is exactly what execution would compute). Small integer vectors also carry symbolic
 * element values (ig_value.sym) so a symbolic batch survives the Shape->...->Reshape chains of exports.
 *
 * A second, backward pass marks the graph inputs whose values decide shapes (IG_VAL_SHAPE_INPUT):
 * the context binds their values before planning, like TensorRT's shape tensors.
 */
#include "op.h"

#include <inttypes.h>
#include <stdio.h>

#define FOLD_ALIGN 64

static bool is_later_onnx(const ig_node *n, const ig_op_def *d)
{
    return n->domain && !strcmp(n->domain, "ingot") && (!d->domain || !d->domain[0]);
}

static ingot_status resolve_op(ig_graph *g, ig_node *n, ig_err *err)
{
    if (n->op >= 0) return INGOT_OK;
    bool too_old = false;
    const ig_op_def *d = ig__op_find(n->domain, n->op_type, n->opset, &too_old);
    if (!d) {
        if (too_old)
            return ig__errf(err, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                            "node '%s' (%s): opset %d of this op is not supported (the model imports opset %d "
                            "of domain '%s')",
                            ig__node_label(n), n->op_type, (int)n->opset, (int)n->opset,
                            n->domain[0] ? n->domain : "ai.onnx");
        return ig__errf(err, INGOT_ERR_MODEL_UNSUPPORTED_OP, "node '%s': op '%s%s%s' is not supported by ingot",
                        ig__node_label(n), n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type);
    }
    if (is_later_onnx(n, d)) { /* ONNX's op, stored in the ingot domain (ig__op_find): as the optimizer made it */
        n->opset = IG_ONNX_MAX_OPSET; /* its newest form: Slice's starts and ends inputs, not opset 1's attributes */
        n->domain = "";
    }
    if (!d->infer)
        return ig__errf(err, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                        "node '%s' (%s): op is listed but has no shape inference yet", ig__node_label(n), n->op_type);
    /* arity: trailing omitted inputs/outputs do not count */
    int32_t nin = n->n_inputs, nout = n->n_outputs;
    while (nin > 0 && n->inputs[nin - 1] < 0) nin--;
    while (nout > 0 && n->outputs[nout - 1] < 0) nout--;
    if (nin < d->min_in || (d->max_in >= 0 && nin > d->max_in))
        return ig__errf(err, INGOT_ERR_MODEL_INVALID, "node '%s' (%s): has %d inputs, expected %d%s%d",
                        ig__node_label(n), n->op_type, (int)nin, d->min_in, d->max_in < 0 ? " or more" : " to ",
                        d->max_in < 0 ? d->min_in : d->max_in);
    if (nout < d->min_out || (d->max_out >= 0 && nout > d->max_out))
        return ig__errf(err, INGOT_ERR_MODEL_INVALID, "node '%s' (%s): has %d outputs, expected %d%s%d",
                        ig__node_label(n), n->op_type, (int)nout, d->min_out, d->max_out < 0 ? " or more" : " to ",
                        d->max_out < 0 ? d->min_out : d->max_out);
    for (int32_t i = 0; i < d->min_in && i < n->n_inputs; i++)
        if (n->inputs[i] < 0)
            return ig__errf(err, INGOT_ERR_MODEL_INVALID, "node '%s' (%s): required input %d is empty",
                            ig__node_label(n), n->op_type, (int)i);
    for (int i = 0; i < IG_OP_COUNT; i++)
        if (ig__op_table[i] == d) n->op = i;
    (void)g;
    return INGOT_OK;
}

static void reset_values(ig_graph *g)
{
    for (int32_t i = 0; i < g->n_values; i++) {
        ig_value *v = &g->values[i];
        /* symbolic values live in the fold arena, which the caller has just reset */
        v->sym = NULL;
        v->n_sym = 0;
        if (v->flags & (IG_VAL_INITIALIZER | IG_VAL_INPUT)) continue; /* their type and data stay */
        v->dtype = INGOT_DTYPE_UNDEFINED;
        v->shape.rank = -1;
        v->flags &= ~(uint32_t)IG_VAL_CONST;
        memset(&v->c, 0, sizeof v->c);
    }
    for (int32_t i = 0; i < g->n_nodes; i++) g->nodes[i].folded = false;
}

/* Keep what inference says, but take a concrete declared dim where inference could only say "unknown"
 * (a fresh symbol), and reject contradictions. */
static ingot_status reconcile_declared(ig_graph *g, ig_node *n, ig_value *v, ig_err *err)
{
    if (!(v->flags & IG_VAL_DECLARED)) return INGOT_OK;
    if (v->decl_dtype != INGOT_DTYPE_UNDEFINED && v->decl_dtype != v->dtype)
        return ig__errf(err, INGOT_ERR_MODEL_INVALID,
                        "node '%s' (%s): output '%s' is declared %s but the op produces %s", ig__node_label(n),
                        n->op_type, v->name, ingot_dtype_name(v->decl_dtype), ingot_dtype_name(v->dtype));
    const ig_shape *ds = &v->decl_shape;
    if (ds->rank < 0) return INGOT_OK;
    if (v->shape.rank < 0) {
        v->shape = *ds;
        return INGOT_OK;
    }
    if (v->shape.rank != ds->rank) {
        char a[256], b[256];
        return ig__errf(err, INGOT_ERR_MODEL_SHAPE, "node '%s' (%s): output '%s' is declared %s but inferred %s",
                        ig__node_label(n), n->op_type, v->name, ig__shape_str(g, ds, a, sizeof a),
                        ig__shape_str(g, &v->shape, b, sizeof b));
    }
    for (int32_t k = 0; k < ds->rank; k++) {
        ig_dim di = v->shape.d[k], dd = ds->d[k];
        if (ig__dim_known(di) && ig__dim_known(dd) && di.n != dd.n) {
            char a[256], b[256];
            return ig__errf(err, INGOT_ERR_MODEL_SHAPE,
                            "node '%s' (%s): output '%s' is declared %s but inferred %s (axis %d)", ig__node_label(n),
                            n->op_type, v->name, ig__shape_str(g, ds, a, sizeof a),
                            ig__shape_str(g, &v->shape, b, sizeof b), (int)k);
        }
        if (!ig__dim_known(di) && ig__dim_known(dd) && !strncmp(g->syms[di.sym], "unk__", 5)) v->shape.d[k] = dd;
    }
    return INGOT_OK;
}

static void *fold_alloc(ig_arena *a, size_t n) { return ig__arena_alloc_aligned(a, n, FOLD_ALIGN); }

static void tensor_from_value(const ig_value *v, ig_tensor *t)
{
    int64_t dims[IG_MAX_RANK];
    for (int32_t k = 0; k < v->shape.rank; k++) dims[k] = v->shape.d[k].n;
    ig__tensor_set_shape(t, v->dtype, v->shape.rank, dims);
}

/* Fold node n: every input constant, every output concrete and small. Returns INGOT_OK without folding
 * when the conditions do not hold. */
static ingot_status try_fold(ig_graph *g, ig_node *n, const ig_op_def *d, const ig_infer_options *opt, ig_arena *fa,
                             ig_err *err)
{
    if (!d->cpu || (d->flags & IG_OP_NOFOLD)) return INGOT_OK;
    for (int32_t i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] < 0) continue;
        const ig_value *v = &g->values[n->inputs[i]];
        if (!(v->flags & IG_VAL_CONST) || !ig__shape_known(&v->shape)) return INGOT_OK;
    }
    for (int32_t i = 0; i < n->n_outputs; i++) {
        if (n->outputs[i] < 0) continue;
        const ig_value *v = &g->values[n->outputs[i]];
        if (!ig__shape_known(&v->shape) || ingot_dtype_size(v->dtype) == 0) return INGOT_OK;
        int64_t numel;
        if (!ig__shape_numel(&v->shape, &numel)) return INGOT_OK;
        if (ig__value_bytes(v) > opt->fold_max_bytes && numel > 0) return INGOT_OK;
    }
    ig_tensor tin[16], tout[16];
    const ig_tensor *pin[16];
    ig_tensor *pout[16];
    if (n->n_inputs > 16 || n->n_outputs > 16) return INGOT_OK;
    for (int32_t i = 0; i < n->n_inputs; i++) {
        pin[i] = NULL;
        if (n->inputs[i] < 0) continue;
        const ig_value *v = &g->values[n->inputs[i]];
        tensor_from_value(v, &tin[i]);
        size_t bytes = ig__value_bytes(v);
        if (bytes != v->c.n_bytes)
            return ig__errf(err, INGOT_ERR_INTERNAL, "node '%s' (%s): constant '%s' has %zu bytes, shape says %zu",
                            ig__node_label(n), n->op_type, v->name, v->c.n_bytes, bytes);
        if (bytes && (uintptr_t)v->c.data % FOLD_ALIGN) {
            void *p = fold_alloc(fa, bytes);
            if (!p) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory folding node '%s'", ig__node_label(n));
            memcpy(p, v->c.data, bytes);
            tin[i].data = p;
        } else {
            tin[i].data = (void *)v->c.data;
        }
        pin[i] = &tin[i];
    }
    for (int32_t i = 0; i < n->n_outputs; i++) {
        pout[i] = NULL;
        if (n->outputs[i] < 0) continue;
        const ig_value *v = &g->values[n->outputs[i]];
        tensor_from_value(v, &tout[i]);
        tout[i].data = fold_alloc(fa, ig__value_bytes(v));
        if (!tout[i].data)
            return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory folding node '%s'", ig__node_label(n));
        pout[i] = &tout[i];
    }
    void *scratch = NULL;
    size_t scratch_bytes = d->cpu_scratch ? d->cpu_scratch(g, n) : 0;
    if (scratch_bytes) {
        scratch = fold_alloc(fa, scratch_bytes);
        if (!scratch)
            return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory folding node '%s'", ig__node_label(n));
    }
    ig_exec ex = {.g = g,
                  .node = n,
                  .n_in = n->n_inputs,
                  .n_out = n->n_outputs,
                  .in = pin,
                  .out = pout,
                  .scratch = scratch,
                  .scratch_bytes = scratch_bytes,
                  .pool = NULL,
                  .err = err};
    ingot_status st = d->cpu(&ex);
    if (st != INGOT_OK) {
        if (err && err->status == INGOT_OK)
            ig__errf(err, st, "node '%s' (%s): folding failed", ig__node_label(n), n->op_type);
        return st;
    }
    for (int32_t i = 0; i < n->n_outputs; i++) {
        if (n->outputs[i] < 0) continue;
        ig_value *v = &g->values[n->outputs[i]];
        v->flags |= IG_VAL_CONST;
        v->c.dtype = v->dtype;
        v->c.rank = v->shape.rank;
        memcpy(v->c.dims, tout[i].dims, sizeof v->c.dims);
        v->c.data = tout[i].data;
        v->c.n_bytes = ig__value_bytes(v);
        v->c.name = v->name;
    }
    n->folded = true;
    return INGOT_OK;
}

/* Outputs an op marked constant itself may point at attribute bytes in the file (any alignment):
 * copy those into the fold arena, 64-byte aligned like every other folded value. */
static ingot_status align_consts(ig_graph *g, ig_node *n, ig_arena *fa, ig_err *err)
{
    for (int32_t j = 0; j < n->n_outputs; j++) {
        if (n->outputs[j] < 0) continue;
        ig_value *v = &g->values[n->outputs[j]];
        if (!v->c.n_bytes || (uintptr_t)v->c.data % FOLD_ALIGN == 0) continue;
        void *p = fold_alloc(fa, v->c.n_bytes);
        if (!p) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory folding node '%s'", ig__node_label(n));
        memcpy(p, v->c.data, v->c.n_bytes);
        v->c.data = p;
    }
    return INGOT_OK;
}

/* Constant small integer vectors also expose their values as dims, so later shape ops see them
 * uniformly whether they came from a file, a fold or a symbolic chain. */
static ingot_status attach_const_sym(ig_value *v, ig_arena *fa, ig_err *err)
{
    if (!(v->flags & IG_VAL_CONST) || v->n_sym > 0 || v->shape.rank > 1) return INGOT_OK;
    if (!ig__dtype_is_int(v->dtype) && v->dtype != INGOT_DTYPE_BOOL) return INGOT_OK;
    size_t es = ingot_dtype_size(v->dtype);
    int64_t n = (int64_t)(v->c.n_bytes / es);
    if (n <= 0 || n > IG_MAX_SYMVAL) return INGOT_OK;
    ig_dim *s = ig__arena_array(fa, (size_t)n, sizeof(ig_dim));
    if (!s) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    for (int64_t k = 0; k < n; k++) s[k] = ig__dim_const(ig__elem_i64(v->dtype, v->c.data, k));
    v->sym = s;
    v->n_sym = (int32_t)n;
    return INGOT_OK;
}

/* A small integer vector whose symbolic element values all came out concrete -- Shape(x)[-1] of an x
 * with a symbolic batch, say -- is a constant: the symbolic algebra proved it is this value for every
 * shape, so what is computed from it folds too (torch's scale 1/sqrt(head dim) of attention). */
static ingot_status const_from_sym(ig_value *v, ig_arena *fa, ig_err *err)
{
    if ((v->flags & IG_VAL_CONST) || v->n_sym <= 0 || v->shape.rank > 1) return INGOT_OK;
    if (v->dtype != INGOT_DTYPE_INT64 && v->dtype != INGOT_DTYPE_INT32) return INGOT_OK;
    int64_t numel;
    if (!ig__shape_numel(&v->shape, &numel) || numel != v->n_sym) return INGOT_OK;
    for (int32_t k = 0; k < v->n_sym; k++)
        if (!ig__dim_known(v->sym[k])) return INGOT_OK;
    size_t es = ingot_dtype_size(v->dtype);
    unsigned char *d = fold_alloc(fa, (size_t)numel * es);
    if (!d) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    for (int32_t k = 0; k < v->n_sym; k++) ig__elem_set_i64(v->dtype, d, k, v->sym[k].n);
    v->flags |= IG_VAL_CONST;
    v->c.dtype = v->dtype;
    v->c.rank = v->shape.rank;
    for (int32_t k = 0; k < v->shape.rank; k++) v->c.dims[k] = v->shape.d[k].n;
    v->c.data = d;
    v->c.n_bytes = (size_t)numel * es;
    v->c.name = v->name;
    return INGOT_OK;
}

static bool inputs_typed(const ig_graph *g, const ig_node *n)
{
    for (int32_t i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0 && g->values[n->inputs[i]].dtype == INGOT_DTYPE_UNDEFINED) return false;
    return true;
}

static void mark_shape_inputs(ig_graph *g)
{
    bool *need = ig__calloc((size_t)g->n_values + 1, 1);
    if (!need) return; /* only a hint for the context; without it inputs are simply not specialised */
    for (int32_t k = g->n_nodes - 1; k >= 0; k--) {
        const ig_node *n = &g->nodes[g->order[k]];
        if (n->op < 0) continue;
        const ig_op_def *d = ig__op_table[n->op];
        bool out_needed = false;
        for (int32_t j = 0; j < n->n_outputs; j++)
            if (n->outputs[j] >= 0 && need[n->outputs[j]]) out_needed = true;
        for (int32_t i = 0; i < n->n_inputs; i++) {
            if (n->inputs[i] < 0) continue;
            bool shape_slot = i < 32 && (d->shape_inputs & (1u << i));
            if (shape_slot || (out_needed && d != &ig__op_shape)) need[n->inputs[i]] = true;
        }
    }
    for (int32_t i = 0; i < g->n_inputs; i++) {
        ig_value *v = &g->values[g->inputs[i]];
        if (need[g->inputs[i]])
            v->flags |= IG_VAL_SHAPE_INPUT;
        else
            v->flags &= ~(uint32_t)IG_VAL_SHAPE_INPUT;
    }
    ig__free(need);
}

ingot_status ig__graph_infer(ig_graph *g, const ig_infer_options *opt, ig_arena *fold_arena, ig_err *err)
{
    ingot_status st;
    if (!g->order && g->n_nodes) return ig__errf(err, INGOT_ERR_INTERNAL, "graph inferred before it was sorted");
    reset_values(g);
    for (int32_t i = 0; i < g->n_values; i++) {
        ig_value *v = &g->values[i];
        if ((v->flags & IG_VAL_CONST) && (st = attach_const_sym(v, fold_arena, err)) != INGOT_OK) return st;
    }
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const ig_value *v = &g->values[g->inputs[i]];
        if (v->dtype == INGOT_DTYPE_UNDEFINED)
            return ig__errf(err, INGOT_ERR_MODEL_INVALID, "graph input '%s' has no tensor type", v->name);
    }
    for (int32_t k = 0; k < g->n_nodes; k++) {
        ig_node *n = &g->nodes[g->order[k]];
        if ((st = resolve_op(g, n, err)) != INGOT_OK) return st;
    }
    mark_shape_inputs(g);
    for (int32_t k = 0; k < g->n_nodes; k++) {
        ig_node *n = &g->nodes[g->order[k]];
        const ig_op_def *d = ig__op_table[n->op];
        if (opt->partial && (n->op == IG_OP_if || !inputs_typed(g, n))) continue;
        for (int32_t i = 0; i < n->n_inputs; i++) {
            if (n->inputs[i] < 0) continue;
            const ig_value *v = &g->values[n->inputs[i]];
            if (v->dtype == INGOT_DTYPE_UNDEFINED)
                return ig__errf(err, INGOT_ERR_MODEL_SHAPE, "node '%s' (%s): input %d '%s' has no known type",
                                ig__node_label(n), n->op_type, (int)i, v->name);
        }
        ig_infer cx = {.g = g, .node = n, .err = err, .fold_arena = fold_arena};
        if ((st = d->infer(&cx)) != INGOT_OK) {
            if (err && err->status == INGOT_OK)
                ig__errf(err, st, "node '%s' (%s): inference failed", ig__node_label(n), n->op_type);
            return st;
        }
        for (int32_t j = 0; j < n->n_outputs; j++) {
            if (n->outputs[j] < 0) continue;
            ig_value *v = &g->values[n->outputs[j]];
            if (v->dtype == INGOT_DTYPE_UNDEFINED)
                return ig__errf(err, INGOT_ERR_INTERNAL, "node '%s' (%s): inference left output '%s' untyped",
                                ig__node_label(n), n->op_type, v->name);
            if ((st = reconcile_declared(g, n, v, err)) != INGOT_OK) return st;
        }
        for (int32_t j = 0; j < n->n_outputs; j++)
            if (n->outputs[j] >= 0 && (st = const_from_sym(&g->values[n->outputs[j]], fold_arena, err)) != INGOT_OK)
                return st;
        bool all_const = n->n_outputs > 0;
        for (int32_t j = 0; j < n->n_outputs; j++)
            if (n->outputs[j] >= 0 && !(g->values[n->outputs[j]].flags & IG_VAL_CONST)) all_const = false;
        if (all_const) { /* Constant, or an op that folded itself: keep its data aligned for the kernels */
            n->folded = true;
            if ((st = align_consts(g, n, fold_arena, err)) != INGOT_OK) return st;
        } else if ((st = try_fold(g, n, d, opt, fold_arena, err)) != INGOT_OK)
            return st;
        for (int32_t j = 0; j < n->n_outputs; j++)
            if (n->outputs[j] >= 0 && (st = attach_const_sym(&g->values[n->outputs[j]], fold_arena, err)) != INGOT_OK)
                return st;
    }
    for (int32_t i = 0; i < g->n_outputs; i++) {
        ig_value *v = &g->values[g->outputs[i]];
        if (v->producer < 0 && (v->flags & IG_VAL_DECLARED) && v->dtype == INGOT_DTYPE_UNDEFINED) {
            v->dtype = v->decl_dtype;
            v->shape = v->decl_shape;
        }
    }
    return INGOT_OK;
}
