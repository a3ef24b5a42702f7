/*
 * api.c -- the public API over the pipeline stages: runtime (errors), model (import, bind, infer,
 * describe), engine (a clone of the model's graph, optimized, with its weights and options) and
 * context (an instance of the engine's graph, inferred and planned for the shapes it runs, and the
 * CPU executor over it).
 *
 * Every entry point validates its arguments, runs the stage functions with a local ig_err, and on
 * failure copies that record onto the handle that reports it: the runtime for runtime, model and
 * engine calls and ingot_context_create (ig__api_fail), the context for calls on a context
 * (ig__api_ctx_fail). A context call never writes the engine or the runtime, so contexts of one
 * engine run on several threads at once. Nothing here exits or aborts.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "api_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define DEFAULT_FOLD_MAX_BYTES (64 * 1024)
#define MAX_THREADS            1024
/* explicit thread counts above the machine's cores are honoured up to this many (tests) */
#define MAX_OVERSUBSCRIBED 64

/* ---- runtime ----------------------------------------------------------------------------------- */

ingot_status ingot_runtime_create(ingot_runtime **out)
{
    if (!out) return INGOT_ERR_INVALID_ARG;
    *out = ig__calloc(1, sizeof **out);
    if (!*out) return INGOT_ERR_OUT_OF_MEMORY;
    atomic_flag_clear(&(*out)->lock);
    return INGOT_OK;
}

void ingot_runtime_destroy(ingot_runtime *rt) { ig__free(rt); }

const char *ingot_runtime_errmsg(const ingot_runtime *rt)
{
    if (!rt) return "no runtime";
    if (rt->err.status != INGOT_OK && !rt->err.msg[0]) return ingot_status_str(rt->err.status);
    return rt->err.msg;
}

ingot_status ingot_runtime_errcode(const ingot_runtime *rt) { return rt ? rt->err.status : INGOT_ERR_INVALID_ARG; }

/* The runtime's slot is written under a spin lock held for one copy: contexts may be created from
 * several threads at once, and each creation clears or sets the slot. */
static void rt_lock(ingot_runtime *rt)
{
    while (atomic_flag_test_and_set_explicit(&rt->lock, memory_order_acquire)) {}
}

static void rt_unlock(ingot_runtime *rt) { atomic_flag_clear_explicit(&rt->lock, memory_order_release); }

ingot_status ig__api_fail(ingot_runtime *rt, const ig_err *err)
{
    if (rt && err) {
        rt_lock(rt);
        rt->err = *err;
        rt_unlock(rt);
    }
    return err ? err->status : INGOT_ERR_INTERNAL;
}

static ingot_status fail(ingot_runtime *rt, ingot_status st, const char *fmt, ...) IG_PRINTF(3, 4);
static ingot_status fail(ingot_runtime *rt, ingot_status st, const char *fmt, ...)
{
    ig_err e = {0};
    va_list ap;
    va_start(ap, fmt);
    ig__verrf(&e, st, fmt, ap);
    va_end(ap);
    return ig__api_fail(rt, &e);
}

static void clear(ingot_runtime *rt)
{
    if (!rt) return;
    rt_lock(rt);
    ig__err_clear(&rt->err);
    rt_unlock(rt);
}

void ig__api_clear(ingot_runtime *rt) { clear(rt); }

/* ---- the context's own error slot ---------------------------------------------------------------- */

ingot_status ig__api_ctx_fail(const ingot_context *c, const ig_err *err)
{
    /* the slot is the context's mutable state even through a const handle (ingot_context_get_output);
     * contexts are always heap objects, never const-defined */
    if (c && err) ((ingot_context *)c)->err = *err;
    return err ? err->status : INGOT_ERR_INTERNAL;
}

void ig__api_ctx_clear(const ingot_context *c)
{
    if (c) ig__err_clear(&((ingot_context *)c)->err);
}

ingot_status ig__api_ctx_failf(const ingot_context *c, ingot_status st, const char *fmt, ...)
{
    ig_err e = {0};
    va_list ap;
    va_start(ap, fmt);
    ig__verrf(&e, st, fmt, ap);
    va_end(ap);
    return ig__api_ctx_fail(c, &e);
}

const char *ingot_context_errmsg(const ingot_context *c)
{
    if (!c) return "no context";
    if (c->err.status != INGOT_OK && !c->err.msg[0]) return ingot_status_str(c->err.status);
    return c->err.msg;
}

ingot_status ingot_context_errcode(const ingot_context *c) { return c ? c->err.status : INGOT_ERR_INVALID_ARG; }

/* ---- model ------------------------------------------------------------------------------------- */

ingot_load_options ingot_load_options_default(void)
{
    ingot_load_options o = {
        .struct_size = sizeof o, .use_mmap = 1, .load_external_data = 1, .fold_max_bytes = DEFAULT_FOLD_MAX_BYTES};
    return o;
}

ig_graph *ig__model_graph(ingot_model *m) { return m ? &m->g : NULL; }

static ingot_status model_infer(ingot_model *m, ig_err *err)
{
    ig__arena_free(&m->fold_arena);
    ig__arena_init(&m->fold_arena);
    m->inferred = false;
    ingot_status st = ig__graph_infer(&m->g, &m->iopt, &m->fold_arena, err);
    if (st != INGOT_OK) return st;
    ig__graph_cost(&m->g);
    m->inferred = true;
    return INGOT_OK;
}

static ingot_status model_open(ingot_runtime *rt, const char *path, const void *data, size_t n_bytes,
                               const char *base_dir, const ingot_load_options *opts, ingot_model **out)
{
    if (!rt) return INGOT_ERR_INVALID_ARG;
    clear(rt);
    const char *fn = path || !data ? "ingot_model_load" : "ingot_model_load_buffer";
    if (!out) return fail(rt, INGOT_ERR_INVALID_ARG, "%s: out is NULL", fn);
    *out = NULL;
    if (!path && !data) return fail(rt, INGOT_ERR_INVALID_ARG, "ingot_model_load: path is NULL");
    ingot_load_options o = ingot_load_options_default();
    if (opts) {
        if (opts->struct_size != sizeof o)
            return fail(rt, INGOT_ERR_INVALID_ARG,
                        "ingot_load_options: struct_size %u, expected %zu (use "
                        "ingot_load_options_default())",
                        opts->struct_size, sizeof o);
        o = *opts;
        if ((o.use_mmap != 0 && o.use_mmap != 1) || (o.load_external_data != 0 && o.load_external_data != 1))
            return fail(rt, INGOT_ERR_INVALID_ARG, "ingot_load_options.%s must be 0 or 1, not %d",
                        o.use_mmap != 0 && o.use_mmap != 1 ? "use_mmap" : "load_external_data",
                        o.use_mmap != 0 && o.use_mmap != 1 ? o.use_mmap : o.load_external_data);
    }
    ig_err err = {0};
    ingot_model *m = ig__calloc(1, sizeof *m);
    if (!m) return fail(rt, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    m->rt = rt;
    if (path) { /* recorded in engine files built from it (their --rebuild-on-mismatch source) */
        char *real = realpath(path, NULL);
        snprintf(m->path, sizeof m->path, "%s", real ? real : path);
        free(real);
    }
    ig__graph_init(&m->g, &err);
    ig__arena_init(&m->fold_arena);
    m->iopt.fold_max_bytes = o.fold_max_bytes ? o.fold_max_bytes : DEFAULT_FOLD_MAX_BYTES;
    ig_onnx_options oo = {.use_mmap = o.use_mmap != 0, .load_external_data = o.load_external_data != 0};
    ingot_status st = path ? ig__onnx_load_file(path, &oo, &m->g, &m->file, &err)
                           : ig__onnx_load_buffer(data, n_bytes, base_dir, &oo, &m->g, &m->file, &err);
    if (st == INGOT_OK && !m->g.order) st = ig__graph_toposort(&m->g, &err);
    if (st == INGOT_OK) st = ig__api_inline_ifs(&m->g, m->file, m->iopt.fold_max_bytes, &m->fold_arena, &err);
    if (st == INGOT_OK) st = model_infer(m, &err);
    if (st != INGOT_OK) {
        if (path && err.msg[0] && !strstr(err.msg, path)) ig__err_prefix(&err, "%s", path);
        ingot_model_destroy(m);
        return ig__api_fail(rt, &err);
    }
    *out = m;
    return INGOT_OK;
}

ingot_status ingot_model_load(ingot_runtime *rt, const char *path, const ingot_load_options *opts, ingot_model **out)
{
    return model_open(rt, path, NULL, 0, NULL, opts, out);
}

ingot_status ingot_model_load_buffer(ingot_runtime *rt, const void *data, size_t n_bytes, const char *base_dir,
                                     const ingot_load_options *opts, ingot_model **out)
{
    if (!data && n_bytes) { /* never read n_bytes from NULL */
        if (!rt) return INGOT_ERR_INVALID_ARG;
        if (out) *out = NULL;
        clear(rt);
        return fail(rt, INGOT_ERR_INVALID_ARG, "ingot_model_load_buffer: data is NULL with n_bytes %zu", n_bytes);
    }
    static const uint8_t empty[1];
    return model_open(rt, NULL, data ? data : empty, n_bytes, base_dir, opts, out);
}

void ingot_model_destroy(ingot_model *m)
{
    if (!m) return;
    ig__graph_free(&m->g);
    ig__arena_free(&m->fold_arena);
    ig__onnx_close(m->file); /* the mapping stays while an engine built from m holds a reference */
    ig__free(m);
}

static void fill_tensor_info(const ingot_model *m, int32_t id, ingot_tensor_info *out)
{
    const ig_value *v = &m->g.values[id];
    memset(out, 0, sizeof *out);
    out->name = v->name;
    out->dtype = v->dtype;
    out->rank = v->shape.rank;
    for (int32_t k = 0; k < v->shape.rank && k < INGOT_MAX_RANK; k++) {
        out->dims[k].value = v->shape.d[k].n;
        out->dims[k].symbol = v->shape.d[k].sym == IG_NOSYM ? NULL : m->g.syms[v->shape.d[k].sym];
    }
    out->is_constant = (v->flags & IG_VAL_CONST) != 0;
    out->bytes = ig__value_bytes(v);
}

int64_t ingot_model_input_count(const ingot_model *m) { return m ? m->g.n_inputs : 0; }
int64_t ingot_model_output_count(const ingot_model *m) { return m ? m->g.n_outputs : 0; }

ingot_status ingot_model_input_info(const ingot_model *m, int64_t i, ingot_tensor_info *out)
{
    if (!m) return INGOT_ERR_INVALID_ARG;
    if (!out) return fail(m->rt, INGOT_ERR_INVALID_ARG, "ingot_model_input_info: out is NULL");
    if (i < 0 || i >= m->g.n_inputs)
        return fail(m->rt, INGOT_ERR_INVALID_ARG, "input index %" PRId64 " out of range (model has %d inputs)", i,
                    (int)m->g.n_inputs);
    fill_tensor_info(m, m->g.inputs[i], out);
    return INGOT_OK;
}

ingot_status ingot_model_output_info(const ingot_model *m, int64_t i, ingot_tensor_info *out)
{
    if (!m) return INGOT_ERR_INVALID_ARG;
    if (!out) return fail(m->rt, INGOT_ERR_INVALID_ARG, "ingot_model_output_info: out is NULL");
    if (i < 0 || i >= m->g.n_outputs)
        return fail(m->rt, INGOT_ERR_INVALID_ARG, "output index %" PRId64 " out of range (model has %d outputs)", i,
                    (int)m->g.n_outputs);
    fill_tensor_info(m, m->g.outputs[i], out);
    return INGOT_OK;
}

ingot_status ingot_model_tensor_info(const ingot_model *m, const char *name, ingot_tensor_info *out)
{
    if (!m) return INGOT_ERR_INVALID_ARG;
    if (!name || !out)
        return fail(m->rt, INGOT_ERR_INVALID_ARG, "ingot_model_tensor_info: %s is NULL", !name ? "name" : "out");
    int32_t id = ig__graph_find(&m->g, name);
    if (id < 0) return fail(m->rt, INGOT_ERR_INVALID_ARG, "no tensor named '%s'", name);
    fill_tensor_info(m, id, out);
    return INGOT_OK;
}

/* The value id of graph input `name` (not an initializer), or -1: a hash lookup. */
static int32_t input_value(const ig_graph *g, const char *name)
{
    int32_t id = ig__graph_find(g, name);
    return id >= 0 && (g->values[id].flags & IG_VAL_INPUT) ? id : -1;
}

static int32_t find_input(const ig_graph *g, const char *name)
{
    for (int32_t i = 0; i < g->n_inputs; i++)
        if (!strcmp(g->values[g->inputs[i]].name, name)) return i;
    return -1;
}

/* Does `dims` fit the input's declared shape? Writes a message naming the input otherwise. */
static ingot_status check_input_dims(const ig_graph *g, const ig_value *v, int32_t rank, const int64_t *dims,
                                     ig_err *err)
{
    char want[256], got[512];
    if (rank < 0 || rank > INGOT_MAX_RANK)
        return ig__errf(err, INGOT_ERR_INPUT, "input '%s': rank %d is not supported", v->name, (int)rank);
    ig__shape_str(g, &v->decl_shape, want, sizeof want);
    size_t off = (size_t)snprintf(got, sizeof got, "[");
    for (int32_t k = 0; k < rank && off < sizeof got; k++)
        off += (size_t)snprintf(got + off, sizeof got - off, "%s%" PRId64, k ? "," : "", dims[k]);
    if (off < sizeof got) snprintf(got + off, sizeof got - off, "]");
    if (v->decl_shape.rank >= 0 && v->decl_shape.rank != rank)
        return ig__errf(err, INGOT_ERR_INPUT, "input '%s': expected rank %d %s, given %s", v->name,
                        (int)v->decl_shape.rank, want, got);
    for (int32_t k = 0; k < rank; k++) {
        if (dims[k] < 0)
            return ig__errf(err, INGOT_ERR_INPUT, "input '%s': negative dim at axis %d in %s", v->name, (int)k, got);
        if (v->decl_shape.rank >= 0 && ig__dim_known(v->decl_shape.d[k]) && v->decl_shape.d[k].n != dims[k])
            return ig__errf(err, INGOT_ERR_INPUT, "input '%s': expected %s, given %s (axis %d must be %" PRId64 ")",
                            v->name, want, got, (int)k, v->decl_shape.d[k].n);
    }
    return INGOT_OK;
}

static void bind_shape(ig_value *v, int32_t rank, const int64_t *dims)
{
    v->shape.rank = rank;
    for (int32_t k = 0; k < rank; k++) v->shape.d[k] = ig__dim_const(dims[k]);
}

ingot_status ingot_model_set_input_shape(ingot_model *m, const char *name, int32_t rank, const int64_t *dims)
{
    if (!m) return INGOT_ERR_INVALID_ARG;
    clear(m->rt);
    if (!name) return fail(m->rt, INGOT_ERR_INVALID_ARG, "ingot_model_set_input_shape: name is NULL");
    /* the rank before the dims: never read past the caller's array (nor past ig_shape's) */
    if (rank < 0 || rank > INGOT_MAX_RANK)
        return fail(m->rt, INGOT_ERR_INVALID_ARG, "input '%s': rank %d is not supported (0 to %d)", name, (int)rank,
                    INGOT_MAX_RANK);
    if (rank > 0 && !dims)
        return fail(m->rt, INGOT_ERR_INVALID_ARG, "ingot_model_set_input_shape: dims is NULL with rank %d", (int)rank);
    int32_t id = input_value(&m->g, name);
    if (id < 0) return fail(m->rt, INGOT_ERR_INVALID_ARG, "the model has no input named '%s'", name);
    ig_value *v = &m->g.values[id];
    ig_err err = {0};
    if (check_input_dims(&m->g, v, rank, dims, &err) != INGOT_OK) {
        err.status = INGOT_ERR_INVALID_ARG;
        return ig__api_fail(m->rt, &err);
    }
    bind_shape(v, rank, dims);
    m->inferred = false;
    return INGOT_OK;
}

ingot_status ingot_model_set_batch(ingot_model *m, int64_t batch)
{
    if (!m) return INGOT_ERR_INVALID_ARG;
    clear(m->rt);
    if (batch < 1) return fail(m->rt, INGOT_ERR_INVALID_ARG, "batch must be at least 1, not %" PRId64, batch);
    /* the batch symbols: those some input has as its leading dim; nothing else is touched. A dim named
     * by one of them, in any input, is the same dim: it takes the same value. Two passes over the
     * inputs (a flag per symbol), so many inputs cost linear time. */
    ig_graph *g = &m->g;
    bool *is_batch = ig__calloc((size_t)g->n_syms + 1, sizeof(bool));
    if (!is_batch) return fail(m->rt, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const ig_value *v = &g->values[g->inputs[i]];
        if (v->decl_shape.rank >= 1 && !ig__dim_known(v->decl_shape.d[0]) && v->decl_shape.d[0].sym >= 0 &&
            v->decl_shape.d[0].sym < g->n_syms)
            is_batch[v->decl_shape.d[0].sym] = true;
    }
    /* check every dim first, then bind: a failure leaves the bindings as they were */
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t j = 0; j < g->n_inputs; j++) {
            ig_value *w = &g->values[g->inputs[j]];
            if (w->decl_shape.rank != w->shape.rank) continue;
            for (int32_t k = 0; k < w->shape.rank; k++) {
                int32_t sym = w->decl_shape.d[k].sym;
                if (ig__dim_known(w->decl_shape.d[k]) || sym < 0 || sym >= g->n_syms || !is_batch[sym]) continue;
                int64_t d;
                if (!ig__mul_i64(batch, w->decl_shape.d[k].n, &d)) {
                    ig__free(is_batch);
                    return fail(m->rt, INGOT_ERR_INVALID_ARG, "batch %" PRId64 " overflows dim %d of input '%s'", batch,
                                (int)k, w->name);
                }
                if (pass) w->shape.d[k] = ig__dim_const(d);
            }
        }
    }
    ig__free(is_batch);
    m->inferred = false;
    return INGOT_OK;
}

ingot_status ingot_model_infer(ingot_model *m)
{
    if (!m) return INGOT_ERR_INVALID_ARG;
    clear(m->rt);
    ig_err err = {0};
    if (model_infer(m, &err) != INGOT_OK) return ig__api_fail(m->rt, &err);
    return INGOT_OK;
}

ingot_status ingot_model_get_info(const ingot_model *m, ingot_model_info *out)
{
    if (!m) return INGOT_ERR_INVALID_ARG;
    if (!out) return fail(m->rt, INGOT_ERR_INVALID_ARG, "ingot_model_get_info: out is NULL");
    const ig_graph *g = &m->g;
    memset(out, 0, sizeof *out);
    out->ir_version = g->ir_version;
    out->opset = ig__graph_opset(g, "");
    out->producer_name = g->producer_name;
    out->producer_version = g->producer_version;
    out->graph_name = g->name;
    out->n_nodes = g->n_nodes;
    out->all_shapes_known = 1;
    for (int32_t i = 0; i < g->n_values; i++) {
        const ig_value *v = &g->values[i];
        if (v->flags & IG_VAL_INITIALIZER) {
            out->n_initializers++;
            size_t es = ingot_dtype_size(v->c.dtype);
            out->n_params += es ? (int64_t)(v->c.n_bytes / es) : 0;
            out->param_bytes += v->c.n_bytes;
        }
        if (v->dtype != INGOT_DTYPE_UNDEFINED && !ig__shape_known(&v->shape)) out->all_shapes_known = 0;
    }
    for (int32_t k = 0; k < g->n_nodes; k++) {
        out->flops += g->nodes[k].flops;
        out->bytes_moved += g->nodes[k].bytes_read + g->nodes[k].bytes_written;
    }
    return INGOT_OK;
}

int64_t ingot_model_node_count(const ingot_model *m) { return m ? m->g.n_nodes : 0; }

ingot_status ingot_model_node_info(const ingot_model *m, int64_t i, ingot_node_info *out)
{
    if (!m) return INGOT_ERR_INVALID_ARG;
    if (!out) return fail(m->rt, INGOT_ERR_INVALID_ARG, "ingot_model_node_info: out is NULL");
    if (i < 0 || i >= m->g.n_nodes) return fail(m->rt, INGOT_ERR_INVALID_ARG, "node index %" PRId64 " out of range", i);
    const ig_node *n = &m->g.nodes[m->g.order[i]];
    out->name = n->name;
    out->op_type = n->op_type;
    out->domain = n->domain;
    out->n_inputs = n->n_inputs;
    out->n_outputs = n->n_outputs;
    out->is_folded = n->folded;
    out->flops = n->flops;
    out->bytes_read = n->bytes_read;
    out->bytes_written = n->bytes_written;
    return INGOT_OK;
}

const char *ingot_model_node_input(const ingot_model *m, int64_t i, int32_t j)
{
    if (!m || i < 0 || i >= m->g.n_nodes) return NULL;
    const ig_node *n = &m->g.nodes[m->g.order[i]];
    if (j < 0 || j >= n->n_inputs) return NULL;
    return n->inputs[j] < 0 ? "" : m->g.values[n->inputs[j]].name;
}

const char *ingot_model_node_output(const ingot_model *m, int64_t i, int32_t j)
{
    if (!m || i < 0 || i >= m->g.n_nodes) return NULL;
    const ig_node *n = &m->g.nodes[m->g.order[i]];
    if (j < 0 || j >= n->n_outputs) return NULL;
    return n->outputs[j] < 0 ? "" : m->g.values[n->outputs[j]].name;
}

void ingot_free(void *p) { ig__free(p); }

void ingot_host_alloc_counts(uint64_t *n_alloc, int64_t *n_live) { ig__alloc_counts(n_alloc, n_live); }

/* ---- engine: options ---------------------------------------------------------------------------- */

ingot_build_options ingot_build_options_default(void)
{
    ingot_build_options o = {.struct_size = sizeof o,
                             .backend = INGOT_BACKEND_AUTO,
                             .precision = INGOT_DTYPE_FLOAT,
                             .workspace_limit = 0,
                             .n_threads = 0,
                             .optimize = 1,
                             .disable_passes = NULL,
                             .profiles = NULL,
                             .n_profiles = 0,
                             .device = 0,
                             .cuda_graphs = 1,
                             .cuda_tune = 1,
                             .cuda_sync_debug = 0,
                             .cuda_nhwc = 1,
                             .cuda_gelu_epilogue = 1,
                             .cuda_attention = 1,
                             .cuda_attention_kernel = 0,
                             .mem_limit = 0,
                             .deterministic = 0};
    return o;
}

static ingot_status check_flag(const char *field, int v, ig_err *err)
{
    if (v == 0 || v == 1) return INGOT_OK;
    return ig__errf(err, INGOT_ERR_INVALID_ARG, "ingot_build_options.%s must be 0 or 1, not %d", field, v);
}

/* Every field of the caller's options in range; the message names the field. */
ingot_status ig__api_check_options(const ingot_build_options *o, ig_err *err)
{
    if ((int)o->backend < 0 || o->backend >= INGOT_BACKEND_COUNT)
        return ig__errf(err, INGOT_ERR_INVALID_ARG,
                        "ingot_build_options.backend %d is not an ingot_backend (AUTO 0, CPU 1, CUDA 2)",
                        (int)o->backend);
    if (o->precision != INGOT_DTYPE_FLOAT && o->precision != INGOT_DTYPE_FLOAT16 &&
        o->precision != INGOT_DTYPE_BFLOAT16)
        return ig__errf(err, INGOT_ERR_INVALID_ARG,
                        "ingot_build_options.precision must be float32, float16 or bfloat16, not %s (%d)",
                        ingot_dtype_name(o->precision), (int)o->precision);
    if (o->n_threads < 0 || o->n_threads > MAX_THREADS)
        return ig__errf(err, INGOT_ERR_INVALID_ARG,
                        "ingot_build_options.n_threads must be in [0, %d] (0: one per core), not %d", MAX_THREADS,
                        o->n_threads);
    if (o->device < 0)
        return ig__errf(err, INGOT_ERR_INVALID_ARG, "ingot_build_options.device must be >= 0, not %d", o->device);
    if (o->n_profiles < 0 || (o->n_profiles > 0 && !o->profiles))
        return ig__errf(err, INGOT_ERR_INVALID_ARG,
                        "ingot_build_options.profiles is NULL with n_profiles %" PRId64 " (or n_profiles < 0)",
                        o->n_profiles);
    if (o->cuda_attention_kernel < 0 || o->cuda_attention_kernel > 3)
        return ig__errf(err, INGOT_ERR_INVALID_ARG,
                        "ingot_build_options.cuda_attention_kernel must be 0 (auto), 1 (wide), 2 (narrow) or 3 "
                        "(split), not %d",
                        o->cuda_attention_kernel);
    const struct {
        const char *name;
        int v;
    } flags[] = {{"optimize", o->optimize},
                 {"cuda_graphs", o->cuda_graphs},
                 {"cuda_tune", o->cuda_tune},
                 {"cuda_sync_debug", o->cuda_sync_debug},
                 {"cuda_nhwc", o->cuda_nhwc},
                 {"cuda_gelu_epilogue", o->cuda_gelu_epilogue},
                 {"cuda_attention", o->cuda_attention},
                 {"deterministic", o->deterministic}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (check_flag(flags[i].name, flags[i].v, err) != INGOT_OK) return err->status;
    return INGOT_OK;
}

/* One debugging override from the environment: "0" or "1" (inverted: "1" sets the field to 0). */
static void env_flag(const char *var, const char *field, int *v, bool inverted)
{
    const char *s = getenv(var);
    if (!s) return;
    if (strcmp(s, "0") != 0 && strcmp(s, "1") != 0) {
        ig__log(INGOT_LOG_WARN, "%s=%s ignored: expected 0 or 1", var, s);
        return;
    }
    int want = (s[0] == '1') != inverted;
    ig__log(INGOT_LOG_INFO, "%s=%s overrides ingot_build_options.%s (%d -> %d)", var, s, field, *v, want);
    *v = want;
}

/* The environment's debugging switches over the options: read here, at build, and nowhere else in
 * the library's API layer (docs/CLI.md lists them). Each override is logged at INFO. */
static void apply_env_overrides(ingot_build_options *o)
{
    env_flag("INGOT_CUDA_SYNC", "cuda_sync_debug", &o->cuda_sync_debug, false);
    env_flag("INGOT_CUDA_GRAPHS", "cuda_graphs", &o->cuda_graphs, false);
    env_flag("INGOT_CUDA_TUNE", "cuda_tune", &o->cuda_tune, false);
    env_flag("INGOT_CUDA_ATTENTION", "cuda_attention", &o->cuda_attention, false);
    env_flag("INGOT_CUDA_NCHW", "cuda_nhwc", &o->cuda_nhwc, true);
    env_flag("INGOT_CUDA_GELU_EPILOGUE", "cuda_gelu_epilogue", &o->cuda_gelu_epilogue, false);
    const char *s = getenv("INGOT_CUDA_ATTENTION_KERNEL");
    if (s) {
        static const char *names[] = {"auto", "wide", "narrow", "split"};
        int k = -1;
        for (int i = 0; i < 4; i++)
            if (!strcmp(s, names[i]) || (s[0] == '0' + i && !s[1])) k = i;
        if (k < 0) {
            ig__log(INGOT_LOG_WARN, "INGOT_CUDA_ATTENTION_KERNEL=%s ignored: expected auto, wide, narrow or split", s);
        } else {
            ig__log(INGOT_LOG_INFO,
                    "INGOT_CUDA_ATTENTION_KERNEL=%s overrides ingot_build_options.cuda_attention_kernel "
                    "(%d -> %d)",
                    s, o->cuda_attention_kernel, k);
            o->cuda_attention_kernel = k;
        }
    }
}

/* Threads the CPU backend starts: 0 is one per core; more than the cores are honoured up to
 * MAX_OVERSUBSCRIBED (a pool of several threads for tests on small machines), beyond that capped at
 * the cores. */
static int resolve_threads(int n)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    if (n == 0) return (int)(cores < MAX_THREADS ? cores : MAX_THREADS);
    if (n > MAX_OVERSUBSCRIBED && n > cores) return (int)(cores > MAX_OVERSUBSCRIBED ? cores : MAX_OVERSUBSCRIBED);
    return n;
}

/* ---- engine: instances --------------------------------------------------------------------------- */

void ig__api_instance_free(ig_api_instance *in)
{
    if (in->made) ig__graph_free(&in->g);
    ig__arena_free(&in->fold);
    memset(in, 0, sizeof *in);
}

/* An instance of e's graph with input i at shapes[i] (rank < 0: as declared), inferred. */
ingot_status ig__api_instance_at(const ingot_engine *e, const ig_shape *shapes, ig_api_instance *in, ig_err *err)
{
    memset(in, 0, sizeof *in);
    ig__arena_init(&in->fold);
    ingot_status st = ig__graph_instance(&e->graph, &in->g, err);
    if (st != INGOT_OK) return st;
    in->made = true;
    for (int32_t i = 0; i < in->g.n_inputs; i++)
        if (shapes[i].rank >= 0) in->g.values[in->g.inputs[i]].shape = shapes[i];
    if ((st = ig__graph_infer(&in->g, &e->iopt, &in->fold, err)) != INGOT_OK) return st;
    ig__graph_cost(&in->g);
    in->inferred = true;
    return INGOT_OK;
}

const ig_graph *ig__engine_graph(const ingot_engine *e) { return e && e->def.inferred ? &e->def.g : NULL; }

const ig_opt_report *ig__engine_report(const ingot_engine *e, const size_t **removed_bytes)
{
    if (removed_bytes) *removed_bytes = e ? e->removed_bytes : NULL;
    return e ? &e->report : NULL;
}

/* ---- engine: profiles ------------------------------------------------------------------------------ */

/* Check and record input `name`'s profile; opt becomes its default shape. */
ingot_status ig__api_set_profile(ingot_engine *e, const char *name, int32_t rank, const int64_t *min,
                                 const int64_t *opt, const int64_t *max, ig_err *err)
{
    const ig_graph *g = &e->graph;
    int32_t i = find_input(g, name);
    if (i < 0) return ig__errf(err, INGOT_ERR_INVALID_ARG, "the model has no input named '%s'", name);
    const ig_value *v = &g->values[g->inputs[i]];
    const int64_t *three[3] = {min, opt, max};
    for (int j = 0; j < 3; j++)
        if (check_input_dims(g, v, rank, three[j], err) != INGOT_OK) {
            err->status = INGOT_ERR_INVALID_ARG;
            return err->status;
        }
    for (int32_t k = 0; k < rank; k++)
        if (!(min[k] <= opt[k] && opt[k] <= max[k]))
            return ig__errf(err, INGOT_ERR_INVALID_ARG,
                            "profile of input '%s': axis %d needs min <= opt <= max, got %" PRId64 " / %" PRId64
                            " / %" PRId64,
                            name, (int)k, min[k], opt[k], max[k]);
    ig_profile *p = &e->profiles[i];
    p->rank = rank;
    memcpy(p->min, min, sizeof(int64_t) * (size_t)rank);
    memcpy(p->opt, opt, sizeof(int64_t) * (size_t)rank);
    memcpy(p->max, max, sizeof(int64_t) * (size_t)rank);
    ig_shape *d = &e->default_shapes[i];
    d->rank = rank;
    for (int32_t k = 0; k < rank; k++) d->d[k] = ig__dim_const(opt[k]);
    return INGOT_OK;
}

ingot_status ingot_engine_set_input_profile(ingot_engine *e, const char *name, int32_t rank, const int64_t *min,
                                            const int64_t *opt, const int64_t *max)
{
    if (!e) return INGOT_ERR_INVALID_ARG;
    clear(e->rt);
    if (!name || !min || !opt || !max)
        return fail(e->rt, INGOT_ERR_INVALID_ARG, "ingot_engine_set_input_profile: NULL argument");
    ig_err err = {0};
    if (ig__api_set_profile(e, name, rank, min, opt, max, &err) != INGOT_OK) return ig__api_fail(e->rt, &err);
    return INGOT_OK;
}

/* ---- engine: build ----------------------------------------------------------------------------------- */

/* Bytes of the tensors each pass removed, from the model's inferred graph (the report's value ids are
 * the model's: the clone keeps ids); 0 for symbolic shapes and for values the optimizer made. */
static ingot_status removed_bytes(ingot_engine *e, const ig_graph *mg, ig_err *err)
{
    e->removed_bytes = ig__calloc((size_t)e->report.n_passes + 1, sizeof(size_t));
    if (!e->removed_bytes) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    for (int32_t p = 0; p < e->report.n_passes; p++) {
        const ig_opt_pass_report *r = &e->report.passes[p];
        for (int32_t k = 0; k < r->n_removed_values; k++) {
            int32_t id = r->removed_values[k];
            if (id >= 0 && id < mg->n_values) e->removed_bytes[p] += ig__value_bytes(&mg->values[id]);
        }
    }
    return INGOT_OK;
}

/* The model's bound input shapes, concrete: a dim still symbolic counts as its coefficient (batch 1). */
static void record_default_shapes(ingot_engine *e, const ig_graph *mg)
{
    for (int32_t i = 0; i < e->n_inputs; i++) {
        ig_shape s = mg->values[mg->inputs[i]].shape;
        for (int32_t k = 0; k < s.rank; k++)
            if (!ig__dim_known(s.d[k])) s.d[k] = ig__dim_const(s.d[k].n);
        e->default_shapes[i] = s;
        e->profiles[i].rank = -1;
    }
}

static ingot_status build_cpu(ingot_engine *e, ig_err *err)
{
    if (e->opts.precision != INGOT_DTYPE_FLOAT)
        return ig__errf(err, INGOT_ERR_INVALID_ARG,
                        "the CPU backend computes in float32; precision %s is not available",
                        ingot_dtype_name(e->opts.precision));
    for (int32_t k = 0; k < e->graph.n_nodes; k++) {
        const ig_node *n = &e->graph.nodes[k];
        if (n->op < 0 || !ig__op_table[n->op]->cpu)
            return ig__errf(err, INGOT_ERR_MODEL_UNSUPPORTED_OP, "node '%s' (%s): no CPU kernel for this op",
                            ig__node_label(n), n->op_type);
    }
    e->opts.n_threads = resolve_threads(e->opts.n_threads);
    e->pool = ig__pool_create(e->opts.n_threads); /* NULL for one thread, or if threads cannot start: serial */
    if (!e->pool) e->opts.n_threads = 1;
    return ig__cpu_weights_make(&e->weights, &e->graph, err);
}

/* Everything ingot_engine_build does after checking the options; e is destroyed on failure. */
static ingot_status engine_setup(ingot_engine *e, ingot_model *m, const ingot_build_options *o, ig_err *err)
{
    ingot_status st;
    if (!m->inferred && (st = model_infer(m, err)) != INGOT_OK) return st;
    e->iopt = m->iopt;
    e->opts = *o;
    e->opts.profiles = NULL; /* the caller's array: copied into e->profiles below */
    e->opts.n_profiles = 0;
    e->opts.disable_passes = NULL;
    if (o->disable_passes && o->disable_passes[0]) {
        size_t n = strlen(o->disable_passes);
        if (!(e->own_disable = ig__malloc(n + 1))) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
        memcpy(e->own_disable, o->disable_passes, n + 1);
        e->opts.disable_passes = e->own_disable;
    }
    /* the engine's own graph, at the declared shapes: every rewrite then holds for every shape run */
    if ((st = ig__graph_clone(&m->g, &e->graph, err)) != INGOT_OK) return st;
    e->file = ig__onnx_retain(m->file);
    snprintf(e->source, sizeof e->source, "%s", m->path);
    e->n_inputs = e->graph.n_inputs;
    for (int32_t i = 0; i < e->n_inputs; i++) {
        ig_value *v = &e->graph.values[e->graph.inputs[i]];
        if (v->flags & IG_VAL_DECLARED) v->shape = v->decl_shape;
    }
    if ((st = ig__graph_infer(&e->graph, &e->iopt, &e->fold_arena, err)) != INGOT_OK) return st;
    ig_opt_options oo = {.enabled = e->opts.optimize != 0,
                         .disable = e->opts.disable_passes,
                         .fold_max_bytes = 0,
                         .infer_fold_bytes = e->iopt.fold_max_bytes};
    if ((st = ig__optimize(&e->graph, &e->fold_arena, &oo, &e->report, err)) != INGOT_OK) return st;
    if ((st = removed_bytes(e, &m->g, err)) != INGOT_OK) return st;

    e->default_shapes = ig__calloc((size_t)e->n_inputs + 1, sizeof(ig_shape));
    e->profiles = ig__calloc((size_t)e->n_inputs + 1, sizeof(ig_profile));
    if (!e->default_shapes || !e->profiles) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    record_default_shapes(e, &m->g);
    for (int64_t j = 0; j < o->n_profiles; j++) {
        const ingot_input_profile *p = &o->profiles[j];
        if (!p->name)
            return ig__errf(err, INGOT_ERR_INVALID_ARG, "ingot_build_options.profiles[%" PRId64 "]: name is NULL", j);
        if (ig__api_set_profile(e, p->name, p->rank, p->min, p->opt, p->max, err) != INGOT_OK) {
            ig__err_prefix(err, "ingot_build_options.profiles[%" PRId64 "]", j);
            return err->status;
        }
    }
    return ig__api_engine_finish(e, o->backend, err);
}

ingot_status ig__api_engine_finish(ingot_engine *e, ingot_backend backend, ig_err *err)
{
    /* the default instance: what the CUDA engine is lowered from, `ingot plan` plans and
     * ingot_engine_describe_json shows */
    ingot_status st;
    if ((st = ig__api_instance_at(e, e->default_shapes, &e->def, err)) != INGOT_OK) {
        ig__err_prefix(err, "at the engine's default input shapes");
        return st;
    }

    if (backend == INGOT_BACKEND_CUDA || backend == INGOT_BACKEND_AUTO) { /* CUDA dispatch: api_cuda.c */
        ingot_status cst = ig__api_cuda_engine_build(e, err);
        if (cst == INGOT_OK) return INGOT_OK;
        /* AUTO falls back to the CPU when there is no GPU or the GPU cannot run the model: decided
         * here, at build, with the list of the nodes the GPU cannot run */
        if (backend == INGOT_BACKEND_CUDA || (cst != INGOT_ERR_NO_DEVICE && cst != INGOT_ERR_MODEL_UNSUPPORTED_OP))
            return cst;
        snprintf(e->fallback, sizeof e->fallback, "%s", err->msg);
        ig__log(cst == INGOT_ERR_MODEL_UNSUPPORTED_OP ? INGOT_LOG_WARN : INGOT_LOG_DEBUG,
                "backend AUTO: running on the CPU: %s", err->msg);
        ig__err_clear(err);
    }
    return build_cpu(e, err);
}

ingot_status ingot_engine_build(ingot_runtime *rt, ingot_model *m, const ingot_build_options *opts, ingot_engine **out)
{
    if (!rt) return INGOT_ERR_INVALID_ARG;
    clear(rt);
    if (!m || !out) return fail(rt, INGOT_ERR_INVALID_ARG, "ingot_engine_build: NULL argument");
    *out = NULL;
    ingot_build_options o = ingot_build_options_default();
    if (opts) {
        if (opts->struct_size != sizeof o)
            return fail(rt, INGOT_ERR_INVALID_ARG,
                        "ingot_build_options: struct_size %u, expected %zu (use ingot_build_options_default())",
                        opts->struct_size, sizeof o);
        o = *opts;
    }
    ig_err err = {0};
    if (ig__api_check_options(&o, &err) != INGOT_OK) return ig__api_fail(rt, &err);
    apply_env_overrides(&o);
    ingot_engine *e = ig__calloc(1, sizeof *e);
    if (!e) return fail(rt, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    e->rt = rt;
    ig__arena_init(&e->fold_arena);
    if (engine_setup(e, m, &o, &err) != INGOT_OK) {
        ingot_engine_destroy(e);
        return ig__api_fail(rt, &err);
    }
    *out = e;
    return INGOT_OK;
}

ingot_backend ingot_engine_backend(const ingot_engine *e)
{
    return !e ? INGOT_BACKEND_AUTO : e->cuda ? INGOT_BACKEND_CUDA : INGOT_BACKEND_CPU;
}

const char *ingot_engine_fallback_reason(const ingot_engine *e) { return e ? e->fallback : ""; }

void ingot_engine_destroy(ingot_engine *e)
{
    if (!e) return;
    ig__api_cuda_engine_destroy(e); /* first: it points at the default instance */
    ig__pool_destroy(e->pool);
    ig__cpu_weights_free(&e->weights);
    ig__api_instance_free(&e->def); /* an instance of e->graph: before it */
    ig__graph_free(&e->graph);
    ig__arena_free(&e->fold_arena);
    ig__opt_report_free(&e->report);
    ig__free(e->removed_bytes);
    ig__free(e->default_shapes);
    ig__free(e->profiles);
    ig__free(e->own_disable);
    ig__onnx_close(e->file);
    ig__free(e);
}

/* ---- engine: memory sizes ------------------------------------------------------------------------ */

static ig_plan_options plan_options(const ingot_engine *e, const ingot_context_options *co)
{
    ig_plan_options po = ig__plan_options_default();
    po.workspace_limit = e->opts.workspace_limit;
    if (co && co->debug_canaries) po.guard = 64;
    return po;
}

/* Plan a temporary instance at these shapes and report its arena size: nothing shared is written. */
static ingot_status plan_size(const ingot_engine *e, const ig_shape *shapes, size_t *bytes, ig_err *err)
{
    ig_api_instance in;
    ig_plan plan = {0};
    ig_plan_options po = plan_options(e, NULL);
    ingot_status st = ig__api_instance_at(e, shapes, &in, err);
    if (st == INGOT_OK) st = ig__plan_graph(&in.g, &po, &plan, err);
    if (st == INGOT_OK) *bytes = ig__cpu_arena_bytes(&in.g, &plan);
    ig__plan_free(&plan);
    ig__api_instance_free(&in);
    return st;
}

ingot_status ingot_engine_memory_size(ingot_engine *e, size_t *bytes)
{
    if (!e) return INGOT_ERR_INVALID_ARG;
    clear(e->rt);
    if (!bytes) return fail(e->rt, INGOT_ERR_INVALID_ARG, "ingot_engine_memory_size: bytes is NULL");
    ig_err err = {0};
    if (plan_size(e, e->default_shapes, bytes, &err) != INGOT_OK) return ig__api_fail(e->rt, &err);
    return INGOT_OK;
}

ingot_status ingot_engine_max_memory_size(ingot_engine *e, size_t *bytes)
{
    if (!e) return INGOT_ERR_INVALID_ARG;
    clear(e->rt);
    if (!bytes) return fail(e->rt, INGOT_ERR_INVALID_ARG, "ingot_engine_max_memory_size: bytes is NULL");
    ig_shape *shapes = ig__malloc(sizeof(ig_shape) * ((size_t)e->n_inputs + 1));
    if (!shapes) return fail(e->rt, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    for (int32_t i = 0; i < e->n_inputs; i++) {
        const ig_profile *p = &e->profiles[i];
        shapes[i] = e->default_shapes[i];
        if (p->rank < 0) continue;
        shapes[i].rank = p->rank;
        for (int32_t k = 0; k < p->rank; k++) shapes[i].d[k] = ig__dim_const(p->max[k]);
    }
    ig_err err = {0};
    ingot_status st = plan_size(e, shapes, bytes, &err);
    ig__free(shapes);
    return st == INGOT_OK ? INGOT_OK : ig__api_fail(e->rt, &err);
}

/* ---- context ----------------------------------------------------------------------------------- */

ingot_context_options ingot_context_options_default(void)
{
    ingot_context_options o = {.struct_size = sizeof o, .debug_canaries = 0, .memory_reuse = 1};
    return o;
}

/* Infer the context's instance for its bound shapes, in a fresh fold arena. */
static ingot_status context_infer(ingot_context *c, ig_err *err)
{
    ig__arena_free(&c->fold_arena);
    ig__arena_init(&c->fold_arena);
    c->inferred = false;
    c->generation++;
    ingot_status st = ig__graph_infer(&c->graph, &c->engine->iopt, &c->fold_arena, err);
    if (st == INGOT_OK) c->inferred = true;
    return st;
}

ingot_status ingot_context_create(ingot_engine *e, const ingot_context_options *opts, ingot_context **out)
{
    if (!e) return INGOT_ERR_INVALID_ARG;
    clear(e->rt);
    if (!out) return fail(e->rt, INGOT_ERR_INVALID_ARG, "ingot_context_create: NULL argument");
    *out = NULL;
    ingot_context_options o = ingot_context_options_default();
    if (opts) {
        if (opts->struct_size != sizeof o)
            return fail(e->rt, INGOT_ERR_INVALID_ARG, "ingot_context_options: struct_size %u, expected %zu",
                        opts->struct_size, sizeof o);
        o = *opts;
    }
    if ((o.debug_canaries != 0 && o.debug_canaries != 1) || (o.memory_reuse != 0 && o.memory_reuse != 1))
        return fail(e->rt, INGOT_ERR_INVALID_ARG, "ingot_context_options.%s must be 0 or 1, not %d",
                    o.debug_canaries != 0 && o.debug_canaries != 1 ? "debug_canaries" : "memory_reuse",
                    o.debug_canaries != 0 && o.debug_canaries != 1 ? o.debug_canaries : o.memory_reuse);
    if (!o.memory && o.memory_bytes)
        return fail(e->rt, INGOT_ERR_INVALID_ARG,
                    "ingot_context_options.memory_bytes is %zu but memory is NULL (set both, or neither)",
                    o.memory_bytes);
    if (o.memory && (uintptr_t)o.memory % INGOT_MEMORY_ALIGNMENT)
        return fail(e->rt, INGOT_ERR_INVALID_ARG, "context memory at %p is not aligned to %d bytes", o.memory,
                    INGOT_MEMORY_ALIGNMENT);
    ingot_context *c = ig__calloc(1, sizeof *c);
    if (!c) return fail(e->rt, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    c->engine = e;
    c->opts = o;
    ig__arena_init(&c->fold_arena);
    ig_err err = {0};
    ingot_status st = ig__graph_instance(&e->graph, &c->graph, &err);
    if (st == INGOT_OK && (!(c->bound_values = ig__calloc((size_t)e->n_inputs + 1, sizeof(void *))) ||
                           !(c->given = ig__calloc((size_t)e->n_inputs + 1, sizeof *c->given)) ||
                           !(c->input_pos = ig__malloc(sizeof(int32_t) * ((size_t)c->graph.n_values + 1))) ||
                           !(c->sym_val = ig__calloc((size_t)c->graph.n_syms + 1, sizeof(int64_t)))))
        st = ig__errf(&err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == INGOT_OK) {
        c->sym_cap = c->graph.n_syms + 1;
        for (int32_t v = 0; v < c->graph.n_values; v++) c->input_pos[v] = -1;
        for (int32_t i = 0; i < c->graph.n_inputs; i++) c->input_pos[c->graph.inputs[i]] = i;
    }
    if (st == INGOT_OK && e->cuda) {
        /* a CUDA context prepares its first instance at creation, for the default shapes */
        bool concrete = true;
        for (int32_t i = 0; i < e->n_inputs; i++) {
            const ig_shape *d = &e->default_shapes[i];
            if (d->rank < 0) {
                concrete = false;
                continue;
            }
            c->graph.values[c->graph.inputs[i]].shape = *d;
        }
        if (concrete) st = context_infer(c, &err);
        if (st == INGOT_OK) st = ig__api_cuda_context_create(c, &err);
    }
    if (st != INGOT_OK) {
        ingot_context_destroy(c);
        return ig__api_fail(e->rt, &err);
    }
    *out = c;
    return INGOT_OK;
}

void ingot_context_destroy(ingot_context *c)
{
    if (!c) return;
    ig__api_cuda_context_destroy(c);
    ig__cpu_release(&c->exec);
    ig__plan_free(&c->plan);
    for (int32_t i = 0; c->bound_values && i < c->graph.n_inputs; i++) ig__free_aligned(c->bound_values[i]);
    ig__free(c->bound_values);
    ig__free(c->given);
    ig__free(c->input_pos);
    ig__free(c->sym_val);
    ig__graph_free(&c->graph);
    ig__arena_free(&c->fold_arena);
    ig__free(c);
}

/* Check the given inputs against the graph and bind their shapes (and the values of shape inputs) on
 * the context's instance. Sets *changed when the instance must be re-inferred. Leaves c->given[i]
 * pointing at the tensor given for input i. Each name is found through the graph's hash index and
 * c->input_pos, so the cost is linear in the number of inputs however many there are. */
static ingot_status bind_inputs(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs, bool *changed,
                                ig_err *err)
{
    ig_graph *g = &c->graph;
    const ig_profile *profiles = c->engine->profiles;
    char want[256];
    for (int32_t i = 0; i < g->n_inputs; i++) c->given[i] = NULL;
    for (int64_t i = 0; i < n_inputs; i++) {
        const char *name = inputs[i].name;
        if (!name) return ig__errf(err, INGOT_ERR_INPUT, "input %" PRId64 " has no name", i);
        int32_t id = ig__graph_find(g, name), pos = id >= 0 ? c->input_pos[id] : -1;
        if (pos < 0) return ig__errf(err, INGOT_ERR_INPUT, "the model has no input named '%s'", name);
        if (c->given[pos])
            return ig__errf(err, INGOT_ERR_INPUT,
                            "input '%s' is given twice (inputs[%" PRId64 "] and inputs[%" PRId64 "])", name,
                            (int64_t)(c->given[pos] - inputs), i);
        c->given[pos] = &inputs[i];
    }
    /* symbol -> value seen, so that two inputs sharing "batch" agree: the context's own array, so a run
     * allocates nothing; it grows only when inference at a new shape named new symbols */
    if (g->n_syms + 1 > c->sym_cap) {
        int64_t *grown = ig__realloc(c->sym_val, sizeof(int64_t) * ((size_t)g->n_syms + 1));
        if (!grown) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
        c->sym_val = grown;
        c->sym_cap = g->n_syms + 1;
    }
    int64_t *sym_val = c->sym_val;
    memset(sym_val, 0, sizeof(int64_t) * (size_t)(g->n_syms + 1));
    ingot_status st = INGOT_OK;
    for (int32_t i = 0; i < g->n_inputs && st == INGOT_OK; i++) {
        ig_value *v = &g->values[g->inputs[i]];
        ig__shape_str(g, &v->decl_shape, want, sizeof want);
        const ingot_tensor *t = c->given[i];
        if (!t) {
            st = ig__errf(err, INGOT_ERR_INPUT, "input '%s' (%s %s) was not given", v->name, ingot_dtype_name(v->dtype),
                          want);
            break;
        }
        if (t->dtype != v->dtype) {
            st = ig__errf(err, INGOT_ERR_INPUT, "input '%s': expected dtype %s, given %s", v->name,
                          ingot_dtype_name(v->dtype), ingot_dtype_name(t->dtype));
            break;
        }
        if ((st = check_input_dims(g, v, t->rank, t->dims, err)) != INGOT_OK) break;
        const ig_profile *pr = &profiles[i];
        for (int32_t k = 0; pr->rank == t->rank && k < t->rank; k++)
            if (t->dims[k] < pr->min[k] || t->dims[k] > pr->max[k]) {
                st = ig__errf(err, INGOT_ERR_INPUT,
                              "input '%s': axis %d is %" PRId64 ", outside the profile's range [%" PRId64 ", %" PRId64
                              "]",
                              v->name, (int)k, t->dims[k], pr->min[k], pr->max[k]);
                break;
            }
        if (st != INGOT_OK) break;
        int64_t numel = 1;
        size_t need = 0;
        bool fits = true;
        for (int32_t k = 0; k < t->rank && fits; k++) fits = ig__mul_i64(numel, t->dims[k], &numel);
        if (fits) fits = ig__mul_size((size_t)numel, ingot_dtype_size(t->dtype), &need);
        if (!fits || need != t->bytes || (!t->data && t->bytes)) {
            if (fits)
                st = ig__errf(err, INGOT_ERR_INPUT, "input '%s': %zu bytes given, its shape needs %zu", v->name,
                              t->bytes, need);
            else
                st = ig__errf(err, INGOT_ERR_INPUT, "input '%s': its shape's byte size overflows", v->name);
            break;
        }
        for (int32_t k = 0; k < t->rank && v->decl_shape.rank == t->rank; k++) {
            ig_dim d = v->decl_shape.d[k];
            if (ig__dim_known(d)) continue;
            if (t->dims[k] % d.n != 0) continue;
            int64_t s = t->dims[k] / d.n;
            if (sym_val[d.sym] && sym_val[d.sym] != s + 1) {
                st = ig__errf(err, INGOT_ERR_INPUT,
                              "input '%s': dim '%s' is %" PRId64 " here but %" PRId64 " in another input", v->name,
                              g->syms[d.sym], s, sym_val[d.sym] - 1);
                break;
            }
            sym_val[d.sym] = s + 1;
        }
        if (st != INGOT_OK) break;
        bool same = v->shape.rank == t->rank;
        for (int32_t k = 0; same && k < t->rank; k++)
            same = ig__dim_known(v->shape.d[k]) && v->shape.d[k].n == t->dims[k];
        if (!same) {
            bind_shape(v, t->rank, t->dims);
            *changed = true;
        }
        if (v->flags & IG_VAL_SHAPE_INPUT) {
            bool same_vals = (v->flags & IG_VAL_CONST) && v->c.n_bytes == t->bytes &&
                             (!t->bytes || !memcmp(v->c.data, t->data, t->bytes));
            if (!same_vals) {
                /* one buffer per shape input, replaced when the values change: bounded however often */
                void *copy = ig__malloc_aligned(t->bytes ? t->bytes : 1, IG_CPU_ALIGN);
                if (!copy) {
                    st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
                    break;
                }
                if (t->bytes) memcpy(copy, t->data, t->bytes);
                ig__free_aligned(c->bound_values[i]);
                c->bound_values[i] = copy;
                v->flags |= IG_VAL_CONST;
                v->c.dtype = t->dtype;
                v->c.rank = t->rank;
                memcpy(v->c.dims, t->dims, sizeof v->c.dims);
                v->c.data = copy;
                v->c.n_bytes = t->bytes;
                v->c.name = v->name;
                *changed = true;
            }
        }
    }
    return st;
}

ingot_status ig__api_ctx_bind_infer(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs, ig_err *err)
{
    bool changed = !c->inferred;
    ingot_status st = bind_inputs(c, inputs, n_inputs, &changed, err);
    if (st == INGOT_OK && changed) st = context_infer(c, err);
    return st;
}

/* Plan the arena for the instance's current shapes and lay the executor out in it. */
static ingot_status context_prepare(ingot_context *c, ig_err *err)
{
    ingot_engine *e = c->engine;
    const ig_graph *g = &c->graph;
    ingot_status st;
    c->prepared = 0;
    ig__cpu_release(&c->exec);
    ig__plan_free(&c->plan);
    const ig_plan *plan = NULL;
    if (c->opts.memory_reuse) {
        ig_plan_options po = plan_options(e, &c->opts);
        if ((st = ig__plan_graph(g, &po, &c->plan, err)) != INGOT_OK) return st;
        if (c->opts.debug_canaries && (st = ig__plan_check(g, &c->plan, err)) != INGOT_OK) return st;
        plan = &c->plan;
    }
    size_t need = ig__cpu_arena_bytes(g, plan);
    if (c->opts.memory && need > c->opts.memory_bytes)
        return ig__errf(err, INGOT_ERR_INVALID_ARG,
                        "the context memory handed in holds %zu bytes; these shapes need %zu bytes, aligned to %d",
                        c->opts.memory_bytes, need, INGOT_MEMORY_ALIGNMENT);
    if ((st = ig__cpu_prepare(&c->exec, g, plan, &e->weights, c->opts.memory, c->opts.debug_canaries, e->pool, err)) !=
        INGOT_OK)
        return st;
    c->prepared = c->generation;
    return INGOT_OK;
}

ingot_status ingot_context_run(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs)
{
    if (!c) return INGOT_ERR_INVALID_ARG;
    ig__api_ctx_clear(c);
    c->ran = false;
    if (n_inputs < 0)
        return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "ingot_context_run: n_inputs is %" PRId64, n_inputs);
    if (n_inputs > 0 && !inputs)
        return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "ingot_context_run: inputs is NULL with n_inputs %" PRId64,
                                 n_inputs);
    ig_err err = {0};
    ingot_status st = ig__api_ctx_bind_infer(c, inputs, n_inputs, &err);
    if (st != INGOT_OK) return ig__api_ctx_fail(c, &err);
    if (c->cuda) {
        if ((st = ig__api_cuda_context_run(c, inputs, n_inputs, &err)) != INGOT_OK) return ig__api_ctx_fail(c, &err);
        c->ran = true;
        return INGOT_OK;
    }
    if (c->prepared != c->generation && (st = context_prepare(c, &err)) != INGOT_OK) return ig__api_ctx_fail(c, &err);
    const ig_graph *g = &c->graph;
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const ig_value *v = &g->values[g->inputs[i]];
        if (v->flags & IG_VAL_CONST) continue; /* a bound shape input: its values are folded in */
        const ingot_tensor *t = c->given[i];
        ig__cpu_set_input(&c->exec, i, t->data, t->bytes);
    }
    if ((st = ig__cpu_run(&c->exec, &err)) != INGOT_OK) return ig__api_ctx_fail(c, &err);
    c->ran = true;
    return INGOT_OK;
}

ingot_status ingot_context_get_output(const ingot_context *c, int64_t i, ingot_tensor *out)
{
    if (!c) return INGOT_ERR_INVALID_ARG;
    ig__api_ctx_clear(c);
    if (!out) return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "ingot_context_get_output: out is NULL");
    const ig_graph *g = &c->graph;
    if (i < 0 || i >= g->n_outputs)
        return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG,
                                 "output index %" PRId64 " out of range (the model has %d outputs)", i,
                                 (int)g->n_outputs);
    if (!c->ran)
        return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG,
                                 "the context has no outputs: it has not run, or its last run failed");
    if (c->cuda) {
        ig_err err = {0};
        if (ig__api_cuda_get_output(c, i, out, &err) != INGOT_OK) return ig__api_ctx_fail(c, &err);
        return INGOT_OK;
    }
    int32_t v = g->outputs[i];
    const ig_tensor *t = &c->exec.t[v];
    memset(out, 0, sizeof *out);
    out->name = g->values[v].name;
    out->dtype = t->dtype;
    out->rank = t->rank;
    memcpy(out->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
    out->data = t->data;
    out->bytes = (size_t)t->numel * ingot_dtype_size(t->dtype);
    return INGOT_OK;
}

ingot_status ingot_context_memory_info(const ingot_context *c, ingot_memory_info *out)
{
    if (!c) return INGOT_ERR_INVALID_ARG;
    ig__api_ctx_clear(c);
    if (!out) return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "ingot_context_memory_info: out is NULL");
    memset(out, 0, sizeof *out);
    if (!c->prepared || c->cuda)
        return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "the context has not run on the CPU yet");
    out->arena_bytes = c->exec.arena_bytes;
    out->weights_bytes = c->engine->weights.bytes;
    out->io_bytes = c->exec.inputs_bytes;
    if (c->exec.plan) {
        out->lower_bound_bytes = (size_t)c->plan.lower_bound;
        out->no_reuse_bytes = (size_t)c->plan.no_reuse_bytes;
        out->workspace_bytes = (size_t)c->plan.workspace_max;
        out->strategy = c->plan.strategy;
    } else {
        out->lower_bound_bytes = out->no_reuse_bytes = c->exec.arena_bytes;
        out->strategy = "no reuse";
    }
    return INGOT_OK;
}
