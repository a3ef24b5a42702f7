/*
 * api.c -- the public API over the pipeline stages: runtime (errors), model (import, bind, infer,
 * describe), engine and context (CPU executor for now).
 *
 * Every entry point validates its arguments, runs the stage functions with a local ig_err, and on
 * failure copies that record onto the runtime (ig__api_fail), so ingot_runtime_errmsg() explains the
 * last failure. Nothing here exits or aborts.
 */
#define _POSIX_C_SOURCE 200809L
#include "api_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define DEFAULT_FOLD_MAX_BYTES (64 * 1024)

/* ---- runtime ----------------------------------------------------------------------------------- */

ingot_status ingot_runtime_create(ingot_runtime **out)
{
    if (!out) return INGOT_ERR_INVALID_ARG;
    *out = ig__calloc(1, sizeof **out);
    return *out ? INGOT_OK : INGOT_ERR_OUT_OF_MEMORY;
}

void ingot_runtime_destroy(ingot_runtime *rt) { ig__free(rt); }

const char *ingot_runtime_errmsg(const ingot_runtime *rt)
{
    if (!rt) return "no runtime";
    if (rt->err.status != INGOT_OK && !rt->err.msg[0]) return ingot_status_str(rt->err.status);
    return rt->err.msg;
}

ingot_status ingot_runtime_errcode(const ingot_runtime *rt) { return rt ? rt->err.status : INGOT_ERR_INVALID_ARG; }

ingot_status ig__api_fail(ingot_runtime *rt, const ig_err *err)
{
    if (rt && err) rt->err = *err;
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
    if (rt) ig__err_clear(&rt->err);
}

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
    m->generation++;
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
    if (!out || (!path && !data)) return fail(rt, INGOT_ERR_INVALID_ARG, "ingot_model_load: NULL argument");
    *out = NULL;
    ingot_load_options o = ingot_load_options_default();
    if (opts) {
        if (opts->struct_size != sizeof o)
            return fail(rt, INGOT_ERR_INVALID_ARG,
                        "ingot_load_options: struct_size %u, expected %zu (use "
                        "ingot_load_options_default())",
                        opts->struct_size, sizeof o);
        o = *opts;
    }
    ig_err err = {0};
    ingot_model *m = ig__calloc(1, sizeof *m);
    if (!m) return fail(rt, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    m->rt = rt;
    ig__graph_init(&m->g, &err);
    ig__arena_init(&m->fold_arena);
    m->iopt.fold_max_bytes = o.fold_max_bytes ? o.fold_max_bytes : DEFAULT_FOLD_MAX_BYTES;
    ig_onnx_options oo = {.use_mmap = o.use_mmap != 0, .load_external_data = o.load_external_data != 0};
    ingot_status st = path ? ig__onnx_load_file(path, &oo, &m->g, &m->file, &err)
                           : ig__onnx_load_buffer(data, n_bytes, base_dir, &oo, &m->g, &m->file, &err);
    if (st == INGOT_OK && !m->g.order) st = ig__graph_toposort(&m->g, &err);
    if (st == INGOT_OK && !(m->bound_values = ig__calloc((size_t)m->g.n_inputs + 1, sizeof(void *))))
        st = ig__errf(&err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
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
    return model_open(rt, NULL, data ? data : "", n_bytes, base_dir, opts, out);
}

void ingot_model_destroy(ingot_model *m)
{
    if (!m) return;
    for (int32_t i = 0; m->bound_values && i < m->g.n_inputs; i++) ig__free_aligned(m->bound_values[i]);
    ig__free(m->bound_values);
    ig__graph_free(&m->g);
    ig__arena_free(&m->fold_arena);
    ig__onnx_close(m->file);
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
    if (!m || !out) return INGOT_ERR_INVALID_ARG;
    if (i < 0 || i >= m->g.n_inputs)
        return fail(m->rt, INGOT_ERR_INVALID_ARG, "input index %" PRId64 " out of range (model has %d inputs)", i,
                    (int)m->g.n_inputs);
    fill_tensor_info(m, m->g.inputs[i], out);
    return INGOT_OK;
}

ingot_status ingot_model_output_info(const ingot_model *m, int64_t i, ingot_tensor_info *out)
{
    if (!m || !out) return INGOT_ERR_INVALID_ARG;
    if (i < 0 || i >= m->g.n_outputs)
        return fail(m->rt, INGOT_ERR_INVALID_ARG, "output index %" PRId64 " out of range (model has %d outputs)", i,
                    (int)m->g.n_outputs);
    fill_tensor_info(m, m->g.outputs[i], out);
    return INGOT_OK;
}

ingot_status ingot_model_tensor_info(const ingot_model *m, const char *name, ingot_tensor_info *out)
{
    if (!m || !name || !out) return INGOT_ERR_INVALID_ARG;
    int32_t id = ig__graph_find(&m->g, name);
    if (id < 0) return fail(m->rt, INGOT_ERR_INVALID_ARG, "no tensor named '%s'", name);
    fill_tensor_info(m, id, out);
    return INGOT_OK;
}

static int32_t find_input(const ingot_model *m, const char *name)
{
    for (int32_t i = 0; i < m->g.n_inputs; i++)
        if (!strcmp(m->g.values[m->g.inputs[i]].name, name)) return i;
    return -1;
}

/* Does `dims` fit the input's declared shape? Writes a message naming the input otherwise. */
static ingot_status check_input_dims(const ingot_model *m, const ig_value *v, int32_t rank, const int64_t *dims,
                                     ig_err *err)
{
    char want[256], got[512];
    ig__shape_str(&m->g, &v->decl_shape, want, sizeof want);
    size_t off = (size_t)snprintf(got, sizeof got, "[");
    for (int32_t k = 0; k < rank && off < sizeof got; k++)
        off += (size_t)snprintf(got + off, sizeof got - off, "%s%" PRId64, k ? "," : "", dims[k]);
    if (off < sizeof got) snprintf(got + off, sizeof got - off, "]");
    if (rank < 0 || rank > INGOT_MAX_RANK)
        return ig__errf(err, INGOT_ERR_INPUT, "input '%s': rank %d is not supported", v->name, (int)rank);
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
    if (!m || !name || (rank > 0 && !dims)) return INGOT_ERR_INVALID_ARG;
    clear(m->rt);
    int32_t i = find_input(m, name);
    if (i < 0) return fail(m->rt, INGOT_ERR_INVALID_ARG, "the model has no input named '%s'", name);
    ig_value *v = &m->g.values[m->g.inputs[i]];
    ig_err err = {0};
    if (check_input_dims(m, v, rank, dims, &err) != INGOT_OK) {
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
    for (int32_t i = 0; i < m->g.n_inputs; i++) {
        ig_value *v = &m->g.values[m->g.inputs[i]];
        if (v->decl_shape.rank < 1 || ig__dim_known(v->decl_shape.d[0])) continue;
        int32_t sym = v->decl_shape.d[0].sym;
        v->shape.d[0] = ig__dim_const(batch);
        /* the same symbol elsewhere in the inputs is the same batch */
        for (int32_t j = 0; j < m->g.n_inputs; j++) {
            ig_value *w = &m->g.values[m->g.inputs[j]];
            for (int32_t k = 0; k < w->shape.rank; k++)
                if (w->decl_shape.rank == w->shape.rank && w->decl_shape.d[k].sym == sym)
                    w->shape.d[k] = ig__dim_const(batch * w->decl_shape.d[k].n);
        }
    }
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
    if (!m || !out) return INGOT_ERR_INVALID_ARG;
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
    if (!m || !out) return INGOT_ERR_INVALID_ARG;
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

/* ---- engine ------------------------------------------------------------------------------------ */

ingot_build_options ingot_build_options_default(void)
{
    ingot_build_options o = {.struct_size = sizeof o,
                             .backend = INGOT_BACKEND_AUTO,
                             .precision = INGOT_DTYPE_FLOAT,
                             .workspace_limit = 0,
                             .n_threads = 0};
    return o;
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
            return fail(rt, INGOT_ERR_INVALID_ARG, "ingot_build_options: struct_size %u, expected %zu",
                        opts->struct_size, sizeof o);
        o = *opts;
    }
    ingot_engine *e = ig__calloc(1, sizeof *e);
    if (!e) return fail(rt, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    e->rt = rt;
    e->model = m;
    e->opts = o;
    e->profiles = ig__calloc((size_t)m->g.n_inputs + 1, sizeof(ig_profile));
    if (!e->profiles) {
        ingot_engine_destroy(e);
        return fail(rt, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int32_t i = 0; i < m->g.n_inputs; i++) e->profiles[i].rank = -1;
    ig_err err = {0};
    if (o.backend == INGOT_BACKEND_CUDA || o.backend == INGOT_BACKEND_AUTO) { /* CUDA dispatch: api_cuda.c */
        ingot_status cst = ig__api_cuda_engine_build(e, &err);
        if (cst == INGOT_OK) {
            *out = e;
            return INGOT_OK;
        }
        /* AUTO falls back to the CPU when there is no GPU or the GPU cannot run the model */
        if (o.backend == INGOT_BACKEND_CUDA || (cst != INGOT_ERR_NO_DEVICE && cst != INGOT_ERR_MODEL_UNSUPPORTED_OP)) {
            ingot_engine_destroy(e);
            return ig__api_fail(rt, &err);
        }
        ig__err_clear(&err);
    }
    if (o.precision != INGOT_DTYPE_FLOAT) {
        ingot_engine_destroy(e);
        return fail(rt, INGOT_ERR_INVALID_ARG, "the CPU backend computes in float32; precision %s is not available",
                    ingot_dtype_name(o.precision));
    }
    for (int32_t k = 0; k < m->g.n_nodes; k++) {
        const ig_node *n = &m->g.nodes[k];
        if (n->op < 0 || !ig__op_table[n->op]->cpu) {
            ingot_engine_destroy(e);
            return fail(rt, INGOT_ERR_MODEL_UNSUPPORTED_OP, "node '%s' (%s): no CPU kernel for this op",
                        ig__node_label(n), n->op_type);
        }
    }
    int threads = o.n_threads;
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    e->pool = ig__pool_create(threads); /* NULL for one thread, or if threads cannot start: serial */
    if (ig__cpu_weights_make(&e->weights, &m->g, &err) != INGOT_OK) {
        ingot_engine_destroy(e);
        return ig__api_fail(rt, &err);
    }
    *out = e;
    return INGOT_OK;
}

void ingot_engine_destroy(ingot_engine *e)
{
    if (!e) return;
    ig__api_cuda_engine_destroy(e);
    ig__pool_destroy(e->pool);
    ig__cpu_weights_free(&e->weights);
    ig__free(e->profiles);
    ig__free(e);
}

ingot_status ingot_engine_set_input_profile(ingot_engine *e, const char *name, int32_t rank, const int64_t *min,
                                            const int64_t *opt, const int64_t *max)
{
    if (!e) return INGOT_ERR_INVALID_ARG;
    clear(e->rt);
    ingot_model *m = e->model;
    if (!name || !min || !opt || !max)
        return fail(e->rt, INGOT_ERR_INVALID_ARG, "ingot_engine_set_input_profile: NULL argument");
    int32_t i = find_input(m, name);
    if (i < 0) return fail(e->rt, INGOT_ERR_INVALID_ARG, "the model has no input named '%s'", name);
    const ig_value *v = &m->g.values[m->g.inputs[i]];
    ig_err err = {0};
    const int64_t *three[3] = {min, opt, max};
    for (int j = 0; j < 3; j++)
        if (check_input_dims(m, v, rank, three[j], &err) != INGOT_OK) {
            err.status = INGOT_ERR_INVALID_ARG;
            return ig__api_fail(e->rt, &err);
        }
    for (int32_t k = 0; k < rank; k++)
        if (!(min[k] <= opt[k] && opt[k] <= max[k]))
            return fail(e->rt, INGOT_ERR_INVALID_ARG,
                        "profile of input '%s': axis %d needs min <= opt <= max, got %" PRId64 " / %" PRId64
                        " / %" PRId64,
                        name, (int)k, min[k], opt[k], max[k]);
    ig_profile *p = &e->profiles[i];
    p->rank = rank;
    memcpy(p->min, min, sizeof(int64_t) * (size_t)rank);
    memcpy(p->opt, opt, sizeof(int64_t) * (size_t)rank);
    memcpy(p->max, max, sizeof(int64_t) * (size_t)rank);
    return INGOT_OK;
}

static ig_plan_options plan_options(const ingot_engine *e, const ingot_context_options *co)
{
    ig_plan_options po = ig__plan_options_default();
    po.workspace_limit = e->opts.workspace_limit;
    if (co && co->debug_canaries) po.guard = 64;
    return po;
}

/* Plan the model's current shapes (inferring first if needed) and report the arena size. */
static ingot_status plan_size(ingot_engine *e, size_t *bytes, ig_err *err)
{
    ingot_model *m = e->model;
    ingot_status st;
    if (!m->inferred && (st = model_infer(m, err)) != INGOT_OK) return st;
    ig_plan plan = {0};
    ig_plan_options po = plan_options(e, NULL);
    if ((st = ig__plan_graph(&m->g, &po, &plan, err)) != INGOT_OK) return st;
    *bytes = ig__cpu_arena_bytes(&m->g, &plan);
    ig__plan_free(&plan);
    return INGOT_OK;
}

ingot_status ingot_engine_memory_size(ingot_engine *e, size_t *bytes)
{
    if (!e || !bytes) return INGOT_ERR_INVALID_ARG;
    clear(e->rt);
    ig_err err = {0};
    if (plan_size(e, bytes, &err) != INGOT_OK) return ig__api_fail(e->rt, &err);
    return INGOT_OK;
}

ingot_status ingot_engine_max_memory_size(ingot_engine *e, size_t *bytes)
{
    if (!e || !bytes) return INGOT_ERR_INVALID_ARG;
    clear(e->rt);
    ingot_model *m = e->model;
    ig_shape *saved = ig__malloc(sizeof(ig_shape) * ((size_t)m->g.n_inputs + 1));
    if (!saved) return fail(e->rt, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    for (int32_t i = 0; i < m->g.n_inputs; i++) {
        ig_value *v = &m->g.values[m->g.inputs[i]];
        saved[i] = v->shape;
        if (e->profiles[i].rank >= 0) bind_shape(v, e->profiles[i].rank, e->profiles[i].max);
    }
    m->inferred = false;
    ig_err err = {0};
    ingot_status st = plan_size(e, bytes, &err);
    for (int32_t i = 0; i < m->g.n_inputs; i++) m->g.values[m->g.inputs[i]].shape = saved[i];
    m->inferred = false;
    ig__free(saved);
    return st == INGOT_OK ? INGOT_OK : ig__api_fail(e->rt, &err);
}

/* ---- context ----------------------------------------------------------------------------------- */

ingot_context_options ingot_context_options_default(void)
{
    ingot_context_options o = {.struct_size = sizeof o, .debug_canaries = 0, .memory_reuse = 1};
    return o;
}

ingot_status ingot_context_create(ingot_engine *e, const ingot_context_options *opts, ingot_context **out)
{
    if (!e) return INGOT_ERR_INVALID_ARG;
    clear(e->rt);
    if (!out) return fail(e->rt, INGOT_ERR_INVALID_ARG, "ingot_context_create: NULL argument");
    ingot_context_options o = ingot_context_options_default();
    if (opts) {
        if (opts->struct_size != sizeof o)
            return fail(e->rt, INGOT_ERR_INVALID_ARG, "ingot_context_options: struct_size %u, expected %zu",
                        opts->struct_size, sizeof o);
        o = *opts;
    }
    if (o.memory && (uintptr_t)o.memory % INGOT_MEMORY_ALIGNMENT)
        return fail(e->rt, INGOT_ERR_INVALID_ARG, "context memory at %p is not aligned to %d bytes", o.memory,
                    INGOT_MEMORY_ALIGNMENT);
    ingot_context *c = ig__calloc(1, sizeof *c);
    if (!c) return fail(e->rt, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    c->engine = e;
    c->opts = o;
    if (e->cuda) {
        ig_err cerr = {0};
        if (ig__api_cuda_context_create(c, &cerr) != INGOT_OK) {
            ig__free(c);
            return ig__api_fail(e->rt, &cerr);
        }
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
    ig__free(c);
}

static const ingot_tensor *find_given(const ingot_tensor *inputs, int64_t n, const char *name)
{
    for (int64_t i = 0; i < n; i++)
        if (inputs[i].name && !strcmp(inputs[i].name, name)) return &inputs[i];
    return NULL;
}

/* Check the given inputs against the model and bind their shapes (and the values of shape inputs).
 * Sets *changed when the model must be re-inferred. */
static ingot_status bind_inputs(ingot_model *m, const ig_profile *profiles, const ingot_tensor *inputs,
                                int64_t n_inputs, bool *changed, ig_err *err)
{
    ig_graph *g = &m->g;
    char want[256];
    for (int64_t i = 0; i < n_inputs; i++) {
        if (!inputs[i].name) return ig__errf(err, INGOT_ERR_INPUT, "input %" PRId64 " has no name", i);
        if (find_input(m, inputs[i].name) < 0)
            return ig__errf(err, INGOT_ERR_INPUT, "the model has no input named '%s'", inputs[i].name);
    }
    /* symbol -> value seen, so that two inputs sharing "batch" agree */
    int64_t *sym_val = ig__calloc((size_t)g->n_syms + 1, sizeof(int64_t));
    if (!sym_val) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    ingot_status st = INGOT_OK;
    for (int32_t i = 0; i < g->n_inputs && st == INGOT_OK; i++) {
        ig_value *v = &g->values[g->inputs[i]];
        ig__shape_str(g, &v->decl_shape, want, sizeof want);
        const ingot_tensor *t = find_given(inputs, n_inputs, v->name);
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
        if ((st = check_input_dims(m, v, t->rank, t->dims, err)) != INGOT_OK) break;
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
        for (int32_t k = 0; k < t->rank; k++) numel *= t->dims[k];
        if ((size_t)numel * ingot_dtype_size(t->dtype) != t->bytes || (!t->data && t->bytes)) {
            st = ig__errf(err, INGOT_ERR_INPUT, "input '%s': %zu bytes given, its shape needs %zu", v->name, t->bytes,
                          (size_t)numel * ingot_dtype_size(t->dtype));
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
                memcpy(copy, t->data, t->bytes);
                ig__free_aligned(m->bound_values[i]);
                m->bound_values[i] = copy;
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
    ig__free(sym_val);
    return st;
}

/* Plan the arena for the model's current shapes and lay the executor out in it. */
static ingot_status context_prepare(ingot_context *c, ig_err *err)
{
    ingot_engine *e = c->engine;
    ingot_model *m = e->model;
    ingot_status st;
    c->generation = 0;
    ig__cpu_release(&c->exec);
    const ig_plan *plan = NULL;
    if (c->opts.memory_reuse) {
        ig_plan_options po = plan_options(e, &c->opts);
        if ((st = ig__plan_graph(&m->g, &po, &c->plan, err)) != INGOT_OK) return st;
        if (c->opts.debug_canaries && (st = ig__plan_check(&m->g, &c->plan, err)) != INGOT_OK) return st;
        plan = &c->plan;
    }
    size_t need = ig__cpu_arena_bytes(&m->g, plan);
    if (c->opts.memory && need > c->opts.memory_bytes)
        return ig__errf(err, INGOT_ERR_INVALID_ARG,
                        "the context memory handed in holds %zu bytes; these shapes need %zu bytes, aligned to %d",
                        c->opts.memory_bytes, need, INGOT_MEMORY_ALIGNMENT);
    if ((st = ig__cpu_prepare(&c->exec, &m->g, plan, &e->weights, c->opts.memory, c->opts.debug_canaries, e->pool,
                              err)) != INGOT_OK)
        return st;
    c->generation = m->generation;
    return INGOT_OK;
}

ingot_status ingot_context_run(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs)
{
    if (!c) return INGOT_ERR_INVALID_ARG;
    ingot_engine *e = c->engine;
    ingot_model *m = e->model;
    clear(e->rt);
    if (n_inputs > 0 && !inputs) return fail(e->rt, INGOT_ERR_INVALID_ARG, "ingot_context_run: inputs is NULL");
    ig_err err = {0};
    bool changed = !m->inferred;
    ingot_status st = bind_inputs(m, e->profiles, inputs, n_inputs, &changed, &err);
    if (st != INGOT_OK) return ig__api_fail(e->rt, &err);
    if (changed && (st = model_infer(m, &err)) != INGOT_OK) return ig__api_fail(e->rt, &err);
    if (c->cuda) {
        if ((st = ig__api_cuda_context_run(c, inputs, n_inputs, &err)) != INGOT_OK) return ig__api_fail(e->rt, &err);
        c->generation = m->generation;
        return INGOT_OK;
    }
    if (c->generation != m->generation && (st = context_prepare(c, &err)) != INGOT_OK) return ig__api_fail(e->rt, &err);
    for (int32_t i = 0; i < m->g.n_inputs; i++) {
        const ig_value *v = &m->g.values[m->g.inputs[i]];
        if (v->flags & IG_VAL_CONST) continue; /* a bound shape input: its values are folded in */
        const ingot_tensor *t = find_given(inputs, n_inputs, v->name);
        ig__cpu_set_input(&c->exec, i, t->data, t->bytes);
    }
    if ((st = ig__cpu_run(&c->exec, &err)) != INGOT_OK) return ig__api_fail(e->rt, &err);
    return INGOT_OK;
}

ingot_status ingot_context_get_output(const ingot_context *c, int64_t i, ingot_tensor *out)
{
    if (!c || !out) return INGOT_ERR_INVALID_ARG;
    const ingot_model *m = c->engine->model;
    if (i < 0 || i >= m->g.n_outputs)
        return fail(c->engine->rt, INGOT_ERR_INVALID_ARG, "output index %" PRId64 " out of range", i);
    if (!c->generation) return fail(c->engine->rt, INGOT_ERR_INVALID_ARG, "the context has not run yet");
    if (c->cuda) return ig__api_cuda_get_output(c, i, out);
    int32_t v = m->g.outputs[i];
    const ig_tensor *t = &c->exec.t[v];
    memset(out, 0, sizeof *out);
    out->name = m->g.values[v].name;
    out->dtype = t->dtype;
    out->rank = t->rank;
    memcpy(out->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
    out->data = t->data;
    out->bytes = (size_t)t->numel * ingot_dtype_size(t->dtype);
    return INGOT_OK;
}

ingot_status ig__api_bind_infer(ingot_engine *e, const ingot_tensor *inputs, int64_t n_inputs, ig_err *err)
{
    ingot_model *m = e->model;
    bool changed = !m->inferred;
    ingot_status st = bind_inputs(m, e->profiles, inputs, n_inputs, &changed, err);
    if (st == INGOT_OK && changed) st = model_infer(m, err);
    return st;
}

ingot_status ingot_context_memory_info(const ingot_context *c, ingot_memory_info *out)
{
    if (!c || !out) return INGOT_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!c->generation || c->cuda)
        return fail(c->engine->rt, INGOT_ERR_INVALID_ARG, "the context has not run on the CPU yet");
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
