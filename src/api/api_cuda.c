/*
 * api_cuda.c -- the public API over the CUDA backend: engines and contexts built on src/cuda, the
 * device-pointer entry points of include/ingot_cuda.h, and stubs for builds without CUDA (so api.c calls
 * the same functions either way).
 *
 * The CUDA engine is built from the engine's default instance (its graph inferred at the default
 * shapes, kept for the engine's lifetime); each context hands the backend its own instance. Failures
 * of calls on a context are recorded on the context (ig__api_ctx_fail), never on the runtime.
 */
#include "api_internal.h"

#include <stdio.h>

#ifdef INGOT_HAVE_CUDA

#include "../cuda/cuda_backend.h"
#include "ingot_cuda.h"

#define MAX_IO 64

/* Support over the whole shape range: the default instance is checked when the CUDA engine is lowered
 * from it; here every input with a profile is also put at its min and then at its max (the others at
 * their default shapes) and the support table asked again, so a shape the profiles allow cannot fail
 * at its first run for a reason the build could have named. */
static ingot_status check_profiles(const ingot_engine *e, ig_err *err)
{
    bool any = false;
    for (int32_t i = 0; i < e->n_inputs; i++) any = any || e->profiles[i].rank >= 0;
    if (!any) return INGOT_OK;
    ig_shape *shapes = ig__calloc((size_t)e->n_inputs + 1, sizeof *shapes);
    if (!shapes) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    ingot_status st = INGOT_OK;
    for (int end = 0; end < 2 && st == INGOT_OK; end++) {
        for (int32_t i = 0; i < e->n_inputs; i++) {
            const ig_profile *p = &e->profiles[i];
            shapes[i] = e->default_shapes[i];
            if (p->rank < 0) continue;
            shapes[i].rank = p->rank;
            for (int32_t k = 0; k < p->rank; k++) shapes[i].d[k] = ig__dim_const(end ? p->max[k] : p->min[k]);
        }
        ig_api_instance in;
        if ((st = ig__api_instance_at(e, shapes, &in, err)) == INGOT_OK) st = ig__cuda_check_graph(&in.g, err);
        if (st != INGOT_OK) ig__err_prefix(err, "at the profiles' %s shapes", end ? "max" : "min");
        ig__api_instance_free(&in);
    }
    ig__free(shapes);
    return st;
}

ingot_status ig__api_cuda_engine_build(ingot_engine *e, ig_err *err)
{
    if (e->opts.precision != INGOT_DTYPE_FLOAT && e->opts.precision != INGOT_DTYPE_FLOAT16)
        return ig__errf(err, INGOT_ERR_INVALID_ARG, "the CUDA backend runs float32 or float16, not %s",
                        ingot_dtype_name(e->opts.precision));
    if (!e->def.inferred) return ig__errf(err, INGOT_ERR_INTERNAL, "the engine's default instance is not inferred");
    /* e->opts holds the resolved switches: the caller's options with the environment's overrides */
    const ingot_build_options *b = &e->opts;
    ig_cuda_engine_options o = {.precision = b->precision,
                                .workspace_limit = b->workspace_limit,
                                .mem_limit = b->mem_limit,
                                .deterministic = b->deterministic,
                                .device = b->device,
                                .graphs = b->cuda_graphs,
                                .tune = b->cuda_tune,
                                .sync_debug = b->cuda_sync_debug,
                                .nhwc = b->cuda_nhwc,
                                .gelu_epilogue = b->cuda_gelu_epilogue,
                                .attention = b->cuda_attention,
                                .attention_kernel = b->cuda_attention_kernel};
    ingot_status st = ig__cuda_probe(err);
    if (st == INGOT_OK) st = check_profiles(e, err);
    if (st == INGOT_OK) st = ig__cuda_engine_create(&e->def.g, &o, &e->cuda, err);
    return st;
}

void ig__api_cuda_engine_destroy(ingot_engine *e)
{
    ig__cuda_engine_destroy(e->cuda);
    e->cuda = NULL;
}

static void fp_put(ig_fp *fp, const char *key, bool must, const char *value)
{
    if (fp->n >= IG_FP_MAX) return;
    ig_fp_entry *x = &fp->e[fp->n++];
    snprintf(x->key, sizeof x->key, "%s", key);
    snprintf(x->value, sizeof x->value, "%s", value);
    x->must = must;
}

ingot_status ig__api_cuda_fingerprint(int device, ig_fp *fp, ig_err *err)
{
    ig_cuda_fingerprint f;
    ingot_status st = ig__cuda_fingerprint(device, &f, err);
    if (st != INGOT_OK) return st;
    char v[64];
    /* algorithms and kernels are chosen for the SM architecture and the library versions; the GPU's
     * name, the driver and the runtime are recorded to be shown */
    snprintf(v, sizeof v, "%d.%d", f.sm_major, f.sm_minor);
    fp_put(fp, "sm", true, v);
    snprintf(v, sizeof v, "%zu", f.cudnn);
    fp_put(fp, "cudnn", true, v);
    snprintf(v, sizeof v, "%zu", f.cublaslt);
    fp_put(fp, "cublaslt", true, v);
    fp_put(fp, "gpu", false, f.device_name);
    snprintf(v, sizeof v, "%d.%d", f.driver / 1000, (f.driver % 1000) / 10);
    fp_put(fp, "driver", false, v);
    snprintf(v, sizeof v, "%d.%d", f.runtime / 1000, (f.runtime % 1000) / 10);
    fp_put(fp, "cuda_runtime", false, v);
    return INGOT_OK;
}

ingot_status ig__api_cuda_algos_save(const ingot_engine *e, ig_wbuf *out, ig_err *err)
{
    return e->cuda ? ig__cuda_engine_algos_save(e->cuda, out, err) : INGOT_OK;
}

ingot_status ig__api_cuda_algos_load(ingot_engine *e, const void *data, size_t n, ig_err *err)
{
    return e->cuda ? ig__cuda_engine_algos_load(e->cuda, data, n, "engine file, section ALGO", err) : INGOT_OK;
}

ingot_status ig__api_cuda_context_create(ingot_context *c, ig_err *err)
{
    return ig__cuda_ctx_create(c->engine->cuda, &c->graph, &c->cuda, err);
}

void ig__api_cuda_context_destroy(ingot_context *c)
{
    ig__cuda_ctx_destroy(c->cuda);
    c->cuda = NULL;
}

static const ingot_tensor *given(const ingot_tensor *ts, int64_t n, const char *name, int64_t pos)
{
    for (int64_t i = 0; i < n; i++)
        if (ts[i].name && !strcmp(ts[i].name, name)) return &ts[i];
    if (pos < n && !ts[pos].name) return &ts[pos];
    return NULL;
}

ingot_status ig__api_cuda_context_run(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs, ig_err *err)
{
    const ig_graph *g = &c->graph;
    ingot_status st = ig__cuda_ctx_select(c->cuda, g, err);
    if (st != INGOT_OK) return st;
    const void *ptrs[MAX_IO] = {0};
    if (g->n_inputs > MAX_IO) return ig__errf(err, INGOT_ERR_MODEL_UNSUPPORTED_OP, "more than %d graph inputs", MAX_IO);
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const ingot_tensor *t = given(inputs, n_inputs, g->values[g->inputs[i]].name, i);
        ptrs[i] = t ? t->data : NULL;
    }
    return ig__cuda_ctx_run_host(c->cuda, ptrs, err);
}

ingot_status ig__api_cuda_get_output(const ingot_context *c, int64_t i, ingot_tensor *out, ig_err *err)
{
    const ig_graph *g = &c->graph;
    memset(out, 0, sizeof *out);
    int32_t rank = 0;
    ingot_dtype dt;
    size_t bytes;
    const void *d = ig__cuda_ctx_host_output(c->cuda, (int32_t)i, &rank, out->dims, &dt, &bytes);
    if (!d)
        return ig__errf(err, INGOT_ERR_INVALID_ARG,
                        "no output: the context has not run with host tensors (ingot_context_run)");
    out->name = g->values[g->outputs[i]].name;
    out->dtype = dt;
    out->rank = rank;
    out->data = (void *)d;
    out->bytes = bytes;
    return INGOT_OK;
}

/* ---- include/ingot_cuda.h ----------------------------------------------------------------------------- */

int ingot_cuda_available(char *why, size_t n)
{
    ig_err err = {0};
    if (ig__cuda_probe(&err) == INGOT_OK) return 1;
    if (why && n) snprintf(why, n, "%s", err.msg);
    return 0;
}

static ingot_status not_cuda(const ingot_context *c)
{
    return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "the context does not belong to a CUDA engine");
}

ingot_status ingot_cuda_context_enqueue(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs,
                                        ingot_tensor *outputs, int64_t n_outputs, cudaStream_t stream)
{
    if (!c) return INGOT_ERR_INVALID_ARG;
    ig__api_ctx_clear(c);
    if (!c->cuda) return not_cuda(c);
    c->ran = false;
    const ig_graph *g = &c->graph;
    ig_err err = {0};
    if (g->n_inputs > MAX_IO || g->n_outputs > MAX_IO)
        return ig__api_ctx_failf(c, INGOT_ERR_MODEL_UNSUPPORTED_OP, "more than 64 inputs or outputs");
    if (n_inputs < 0 || n_outputs < 0 || (n_inputs > 0 && !inputs) || (n_outputs > 0 && !outputs))
        return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "ingot_cuda_context_enqueue: NULL array or negative count");
    /* the common case first: the shapes of the current instance, no host work beyond pointer checks */
    const void *in_ptr[MAX_IO] = {0};
    int32_t ranks[MAX_IO];
    const int64_t *dims[MAX_IO];
    bool have_all = true;
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const ig_value *v = &g->values[g->inputs[i]];
        const ingot_tensor *t = given(inputs, n_inputs, v->name, i);
        if (!t) {
            have_all = false;
            break;
        }
        if (t->dtype != v->dtype) {
            ig__errf(&err, INGOT_ERR_INPUT, "input '%s': expected dtype %s, given %s", v->name,
                     ingot_dtype_name(v->dtype), ingot_dtype_name(t->dtype));
            return ig__api_ctx_fail(c, &err);
        }
        in_ptr[i] = t->data;
        ranks[i] = t->rank;
        dims[i] = t->dims;
    }
    if (!have_all || !ig__cuda_ctx_matches(c->cuda, ranks, dims, g->n_inputs)) {
        /* a new shape: bind, infer, prepare (plans, may grow the arena, tunes, synchronises) */
        for (int32_t i = 0; i < g->n_inputs; i++)
            if (g->values[g->inputs[i]].flags & IG_VAL_SHAPE_INPUT)
                return ig__api_ctx_failf(
                    c, INGOT_ERR_INPUT,
                    "the model has inputs whose values decide shapes; run it with ingot_context_run");
        ingot_status st = ig__api_ctx_bind_infer(c, inputs, n_inputs, &err);
        if (st == INGOT_OK) st = ig__cuda_ctx_select(c->cuda, g, &err);
        if (st != INGOT_OK) return ig__api_ctx_fail(c, &err);
    }
    void *out_ptr[MAX_IO] = {0};
    for (int32_t j = 0; j < g->n_outputs; j++) {
        const char *name = g->values[g->outputs[j]].name;
        ingot_tensor *o = NULL;
        for (int64_t q = 0; q < n_outputs; q++)
            if (outputs[q].name && !strcmp(outputs[q].name, name)) o = &outputs[q];
        if (!o && j < n_outputs && !outputs[j].name) o = &outputs[j];
        if (!o) continue;
        int32_t rank;
        ingot_dtype dt;
        size_t bytes;
        int64_t od[INGOT_MAX_RANK];
        ig__cuda_ctx_output_shape(c->cuda, j, &rank, od, &dt, &bytes);
        if (o->bytes < bytes || (!o->data && bytes)) {
            ig__errf(&err, INGOT_ERR_INVALID_ARG, "output '%s' needs %zu bytes, the buffer has %zu", name, bytes,
                     o->bytes);
            return ig__api_ctx_fail(c, &err);
        }
        o->dtype = dt;
        o->rank = rank;
        memcpy(o->dims, od, sizeof(int64_t) * (size_t)rank);
        o->bytes = bytes;
        out_ptr[j] = o->data;
    }
    /* outputs nobody asked for still need somewhere to go: the staging of the host path is not
     * planned for that, so every output must be given */
    for (int32_t j = 0; j < g->n_outputs; j++)
        if (!out_ptr[j]) {
            size_t bytes;
            int32_t rank;
            ingot_dtype dt;
            int64_t od[INGOT_MAX_RANK];
            ig__cuda_ctx_output_shape(c->cuda, j, &rank, od, &dt, &bytes);
            if (bytes) {
                ig__errf(&err, INGOT_ERR_INVALID_ARG, "output '%s' was not given a buffer",
                         g->values[g->outputs[j]].name);
                return ig__api_ctx_fail(c, &err);
            }
        }
    if (ig__cuda_ctx_enqueue(c->cuda, in_ptr, out_ptr, (void *)stream, &err) != INGOT_OK)
        return ig__api_ctx_fail(c, &err);
    c->ran = true;
    return INGOT_OK;
}

ingot_status ingot_cuda_context_output_info(const ingot_context *c, int64_t i, ingot_tensor *out)
{
    if (!c) return INGOT_ERR_INVALID_ARG;
    ig__api_ctx_clear(c);
    if (!out) return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "ingot_cuda_context_output_info: out is NULL");
    if (!c->cuda) return not_cuda(c);
    const ig_graph *g = &c->graph;
    if (i < 0 || i >= g->n_outputs) return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "output index out of range");
    memset(out, 0, sizeof *out);
    int32_t rank = 0;
    ingot_dtype dt = INGOT_DTYPE_UNDEFINED;
    size_t bytes = 0;
    if (ig__cuda_ctx_output_shape(c->cuda, (int32_t)i, &rank, out->dims, &dt, &bytes) != INGOT_OK)
        return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "the context has no prepared shape yet");
    out->name = g->values[g->outputs[i]].name;
    out->rank = rank;
    out->dtype = dt;
    out->bytes = bytes;
    return INGOT_OK;
}

ingot_status ingot_cuda_context_set_graphs(ingot_context *c, int enabled)
{
    if (!c) return INGOT_ERR_INVALID_ARG;
    ig__api_ctx_clear(c);
    if (!c->cuda) return not_cuda(c);
    ig__cuda_ctx_set_graphs(c->cuda, enabled);
    return INGOT_OK;
}

ingot_status ingot_cuda_context_get_stats(const ingot_context *c, ingot_cuda_stats *out)
{
    if (!c) return INGOT_ERR_INVALID_ARG;
    ig__api_ctx_clear(c);
    if (!out) return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "ingot_cuda_context_get_stats: out is NULL");
    if (!c->cuda) return not_cuda(c);
    if (out->struct_size != sizeof *out)
        return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "ingot_cuda_stats: set struct_size");
    ig_cuda_stats s;
    ig__cuda_ctx_stats(c->cuda, &s);
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->weights_bytes = s.weights_bytes;
    out->arena_bytes = s.arena_bytes;
    out->workspace_bytes = s.workspace_bytes;
    out->activation_lower_bound_bytes = s.activation_lb_bytes;
    out->no_reuse_bytes = s.no_reuse_bytes;
    out->constant_bytes = s.const_bytes;
    out->n_steps = s.n_steps;
    out->n_nodes_fused = s.n_nodes_fused;
    out->n_instances = s.n_instances;
    out->graph_enabled = s.graph_enabled;
    out->graph_captured = s.graph_captured;
    out->graph_updates = s.graph_updates;
    out->graph_captures = s.graph_captures;
    out->graph_bytes = s.graph_bytes;
    memcpy(out->graph_fallback, s.graph_fallback, sizeof out->graph_fallback);
    out->prepare_ms = s.prepare_ms;
    out->tune_ms = s.tune_ms;
    return INGOT_OK;
}

void ingot_cuda_alloc_counts(uint64_t *n_malloc, uint64_t *n_free, uint64_t *live_bytes)
{
    ig__cuda_alloc_counts(n_malloc, n_free, live_bytes);
}

int64_t ingot_cuda_context_profile(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs,
                                   ingot_tensor *outputs, int64_t n_outputs, cudaStream_t stream, int64_t max,
                                   char (*labels)[96], double *ms)
{
    if (!c || !c->cuda) return -1;
    /* bind and select exactly as a run does, by running once */
    if (ingot_cuda_context_enqueue(c, inputs, n_inputs, outputs, n_outputs, stream) != INGOT_OK) return -1;
    const ig_graph *g = &c->graph;
    const void *in_ptr[MAX_IO] = {0};
    void *out_ptr[MAX_IO] = {0};
    for (int32_t i = 0; i < g->n_inputs && i < MAX_IO; i++) {
        const ingot_tensor *t = given(inputs, n_inputs, g->values[g->inputs[i]].name, i);
        in_ptr[i] = t ? t->data : NULL;
    }
    for (int32_t j = 0; j < g->n_outputs && j < MAX_IO; j++) {
        const ingot_tensor *t = given(outputs, n_outputs, g->values[g->outputs[j]].name, j);
        out_ptr[j] = t ? t->data : NULL;
    }
    ig_err err = {0};
    int64_t n = ig__cuda_ctx_profile(c->cuda, in_ptr, out_ptr, (void *)stream, max, labels, ms, &err);
    if (n < 0) ig__api_ctx_fail(c, &err);
    return n;
}

#else /* no CUDA backend in this build */

ingot_status ig__api_cuda_fingerprint(int device, ig_fp *fp, ig_err *err)
{
    (void)device;
    (void)fp;
    return ig__errf(err, INGOT_ERR_NO_DEVICE, "this ingot was built without the CUDA backend");
}
ingot_status ig__api_cuda_algos_save(const ingot_engine *e, ig_wbuf *out, ig_err *err)
{
    (void)e;
    (void)out;
    return ig__errf(err, INGOT_ERR_NO_DEVICE, "this ingot was built without the CUDA backend");
}
ingot_status ig__api_cuda_algos_load(ingot_engine *e, const void *data, size_t n, ig_err *err)
{
    (void)e;
    (void)data;
    (void)n;
    return ig__errf(err, INGOT_ERR_NO_DEVICE, "this ingot was built without the CUDA backend");
}
ingot_status ig__api_cuda_engine_build(ingot_engine *e, ig_err *err)
{
    (void)e;
    return ig__errf(err, INGOT_ERR_NO_DEVICE, "this build of ingot has no CUDA backend; use the CPU backend");
}
void ig__api_cuda_engine_destroy(ingot_engine *e) { (void)e; }
ingot_status ig__api_cuda_context_create(ingot_context *c, ig_err *err)
{
    (void)c;
    return ig__errf(err, INGOT_ERR_NO_DEVICE, "this build of ingot has no CUDA backend");
}
void ig__api_cuda_context_destroy(ingot_context *c) { (void)c; }
ingot_status ig__api_cuda_context_run(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs, ig_err *err)
{
    (void)c;
    (void)inputs;
    (void)n_inputs;
    return ig__errf(err, INGOT_ERR_NO_DEVICE, "this build of ingot has no CUDA backend");
}
ingot_status ig__api_cuda_get_output(const ingot_context *c, int64_t i, ingot_tensor *out, ig_err *err)
{
    (void)c;
    (void)i;
    (void)out;
    return ig__errf(err, INGOT_ERR_NO_DEVICE, "this build of ingot has no CUDA backend");
}

#endif
