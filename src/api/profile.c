/*
 * profile.c -- the diagnostics' view of a context (docs/DIAGNOSE.md): per-step profiles joined with each
 * step's costs, and the memory accounts. The classification and the reports are src/diag's; this file
 * only measures and gathers.
 *
 * CPU: the executor's timing hook times each node's kernel during one ordinary run; the node's FLOPs
 * and bytes come from the ops' cost functions on the context's (optimized, inferred) graph. CUDA: the
 * backend's step profile (a graph replay with an event after each step) joined step by step with the
 * program the backend lowered, described by src/cuda/device_bench.c (the same lowering, so the same
 * steps in the same order): the bytes each step's device tensors move, in the engine's precision.
 */
#define _POSIX_C_SOURCE 200809L
#include "api_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#ifdef INGOT_HAVE_CUDA
#include "../cuda/cuda_backend.h"
#include "../cuda/device_bench.h"
#include "ingot_cuda.h"
#endif

static void op_name(const ig_node *n, char *buf, size_t cap)
{
    if (n->domain && n->domain[0])
        snprintf(buf, cap, "%s.%s", n->domain, n->op_type);
    else
        snprintf(buf, cap, "%s", n->op_type);
}

/* Per value, how many of the executed nodes read it (a fusion can drop an intermediate read once). */
static int32_t *consumer_counts(const ig_graph *g, const int32_t *order, int32_t n_steps)
{
    int32_t *cnt = ig__calloc((size_t)g->n_values + 1, sizeof(int32_t));
    if (!cnt) return NULL;
    for (int32_t s = 0; s < n_steps; s++) {
        const ig_node *n = &g->nodes[order[s]];
        for (int32_t i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0) cnt[n->inputs[i]]++;
    }
    return cnt;
}

/* Node a's first output is an intermediate only node b reads. */
static bool feeds_only(const ig_graph *g, const int32_t *cnt, int32_t a, int32_t b)
{
    if (a < 0 || b < 0 || a == b) return false;
    const ig_node *na = &g->nodes[a], *nb = &g->nodes[b];
    if (na->n_outputs < 1 || na->outputs[0] < 0) return false;
    int32_t v = na->outputs[0];
    if (g->values[v].flags & IG_VAL_OUTPUT || cnt[v] != 1) return false;
    for (int32_t i = 0; i < nb->n_inputs; i++)
        if (nb->inputs[i] == v) return true;
    return false;
}

static void fill_node(ingot_step_profile *p, const ig_graph *g, int32_t id)
{
    const ig_node *n = &g->nodes[id];
    snprintf(p->name, sizeof p->name, "%s", ig__node_label(n));
    op_name(n, p->op, sizeof p->op);
    p->node = id;
    p->covers = n->n_covers > 0 ? n->n_covers : 1;
}

/* ---- CPU ------------------------------------------------------------------------------------------- */

typedef struct step_times {
    double *ms;
    int32_t n, seen;
} step_times;

static void on_step(void *user, int32_t step, int32_t node, double ms)
{
    (void)node;
    step_times *t = user;
    if (step >= 0 && step < t->n) {
        t->ms[step] = ms;
        t->seen++;
    }
}

ingot_status ingot_context_profile_steps(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs,
                                         ingot_step_profile *steps, int64_t max, int64_t *n_steps)
{
    if (!c) return INGOT_ERR_INVALID_ARG;
    ig__api_ctx_clear(c);
    if (!n_steps || (max > 0 && !steps))
        return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG,
                                 "ingot_context_profile_steps: n_steps is NULL, or steps is with max > 0");
    *n_steps = 0;
    if (c->cuda)
        return ig__api_ctx_failf(
            c, INGOT_ERR_INVALID_ARG,
            "the context belongs to a CUDA engine: profile it with ingot_cuda_context_profile_steps");
    /* the first run binds, infers and plans; the timed run after it finds everything prepared */
    ingot_status st = ingot_context_run(c, inputs, n_inputs);
    if (st != INGOT_OK) return st;
    ig_cpu_exec *x = &c->exec;
    step_times t = {ig__calloc((size_t)x->n_steps + 1, sizeof(double)), x->n_steps, 0};
    if (!t.ms) return ig__api_ctx_failf(c, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    x->on_step = on_step;
    x->on_step_user = &t;
    st = ingot_context_run(c, inputs, n_inputs);
    c->exec.on_step = NULL; /* (a re-prepare inside the run would have cleared it already) */
    c->exec.on_step_user = NULL;
    if (st == INGOT_OK && t.seen != t.n)
        st = ig__api_ctx_failf(c, INGOT_ERR_INTERNAL, "the profiled run timed %d of its %d steps", (int)t.seen,
                               (int)t.n);
    if (st != INGOT_OK) {
        ig__free(t.ms);
        return st;
    }
    const ig_graph *g = &c->graph;
    ig__graph_cost(&c->graph);
    int32_t *cnt = consumer_counts(g, x->order, x->n_steps);
    if (!cnt) {
        ig__free(t.ms);
        return ig__api_ctx_failf(c, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    const ig_plan *plan = x->plan;
    for (int32_t s = 0; s < x->n_steps && s < max; s++) {
        ingot_step_profile *p = &steps[s];
        int32_t id = x->order[s];
        const ig_node *n = &g->nodes[id];
        memset(p, 0, sizeof *p);
        fill_node(p, g, id);
        snprintf(p->kind, sizeof p->kind, "cpu");
        p->feeds_next = s + 1 < x->n_steps && feeds_only(g, cnt, id, x->order[s + 1]);
        p->ms = t.ms[s];
        p->flops = n->flops;
        p->bytes_read = n->bytes_read;
        p->bytes_written = n->bytes_written;
        p->bytes_workspace = (double)x->scratch_bytes[id];
        p->math_dtype = INGOT_DTYPE_FLOAT;
        if (plan) {
            for (int32_t b = 0; b < plan->n_buffers; b++)
                if (plan->buffers[b].first <= s && s <= plan->buffers[b].last)
                    p->live_bytes += (size_t)plan->buffers[b].bytes;
        } else {
            p->live_bytes = x->arena_bytes;
        }
    }
    *n_steps = x->n_steps;
    ig__free(cnt);
    ig__free(t.ms);
    return INGOT_OK;
}

/* ---- memory accounts -------------------------------------------------------------------------------- */

#ifdef INGOT_HAVE_CUDA
static size_t sub0(size_t a, size_t b) { return a > b ? a - b : 0; }
#endif

ingot_status ingot_context_memory_accounts(const ingot_context *c, ingot_memory_accounts *out)
{
    if (!c) return INGOT_ERR_INVALID_ARG;
    ig__api_ctx_clear(c);
    if (!out) return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "ingot_context_memory_accounts: out is NULL");
    if (out->struct_size != sizeof *out)
        return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG,
                                 "ingot_memory_accounts: set struct_size to sizeof(ingot_memory_accounts)");
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
#ifdef INGOT_HAVE_CUDA
    if (c->cuda) {
        ig_cuda_stats s;
        ig__cuda_ctx_stats(c->cuda, &s);
        if (s.n_steps == 0 && s.arena_bytes == 0)
            return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "the CUDA context has no prepared shape yet");
        out->device = 1;
        out->weights = s.weights_bytes;
        out->arena = s.arena_bytes;
        out->workspace = s.workspace_bytes;
        out->constants = s.const_bytes;
        out->activation_lower_bound = s.activation_lb_bytes;
        out->activation_no_reuse = s.no_reuse_bytes;
        /* the host path's staging: each graph input and output once, in its device dtype */
        const ig_graph *g = &c->graph;
        size_t es_f = c->engine->opts.precision == INGOT_DTYPE_FLOAT16 ? 2 : 4;
        for (int32_t i = 0; i < g->n_inputs + g->n_outputs; i++) {
            const ig_value *v = &g->values[i < g->n_inputs ? g->inputs[i] : g->outputs[i - g->n_inputs]];
            size_t b = ig__value_bytes(v);
            if (v->dtype == INGOT_DTYPE_FLOAT) b = b / 4 * es_f;
            out->io_staging += b;
        }
        out->activations = sub0(sub0(sub0(out->arena, out->workspace), out->constants), out->io_staging);
        uint64_t nm, nf, live;
        ig__cuda_alloc_counts(&nm, &nf, &live);
        out->library_live = (size_t)live;
        size_t fr = 0, tot = 0;
        if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
            return ig__api_ctx_failf(c, INGOT_ERR_CUDA, "cudaMemGetInfo failed: the device is not usable");
        out->free_bytes = fr;
        out->total_bytes = tot;
        out->graph_objects = s.graph_bytes;
        out->unattributed = sub0(sub0(sub0(tot, fr), out->library_live), out->graph_objects);
        return INGOT_OK;
    }
#endif
    if (!c->prepared)
        return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "the context has not run yet: nothing is planned");
    const ig_cpu_exec *x = &c->exec;
    out->weights = c->engine->weights.bytes;
    out->arena = x->arena_bytes;
    out->io_staging = x->inputs_bytes;
    if (x->plan) {
        out->workspace = (size_t)c->plan.workspace_max;
        out->activation_lower_bound = (size_t)c->plan.lower_bound;
        out->activation_no_reuse = (size_t)c->plan.no_reuse_bytes;
    } else {
        out->activation_lower_bound = out->activation_no_reuse = x->arena_bytes;
    }
    /* the CPU plan packs every step's scratch among the activations by lifetime: no region of its own */
    out->activations = out->arena;
    out->library_live = out->weights + (c->opts.memory ? 0 : out->arena) + out->io_staging;
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psz > 0) out->total_bytes = (size_t)pages * (size_t)psz;
    if (avail > 0 && psz > 0) out->free_bytes = (size_t)avail * (size_t)psz;
    return INGOT_OK;
}

/* ---- CUDA ------------------------------------------------------------------------------------------- */

#ifdef INGOT_HAVE_CUDA

static bool gemm_kind(const char *k)
{
    return !strcmp(k, "gemm") || !strcmp(k, "conv") || !strcmp(k, "attention") || !strcmp(k, "dwconv");
}

ingot_status ingot_cuda_context_profile_steps(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs,
                                              ingot_tensor *outputs, int64_t n_outputs, cudaStream_t stream,
                                              ingot_step_profile *steps, int64_t max, int64_t *n_steps)
{
    if (!c) return INGOT_ERR_INVALID_ARG;
    ig__api_ctx_clear(c);
    if (!n_steps || (max > 0 && !steps))
        return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG,
                                 "ingot_cuda_context_profile_steps: n_steps is NULL, or steps is with max > 0");
    *n_steps = 0;
    if (!c->cuda) return ig__api_ctx_failf(c, INGOT_ERR_INVALID_ARG, "the context does not belong to a CUDA engine");
    /* enough room for every step: the program's size, from the stats after a run prepared it */
    if (ingot_cuda_context_enqueue(c, inputs, n_inputs, outputs, n_outputs, stream) != INGOT_OK)
        return ingot_context_errcode(c);
    ig_cuda_stats s;
    ig__cuda_ctx_stats(c->cuda, &s);
    int64_t cap = s.n_steps + 1;
    char(*labels)[96] = ig__calloc((size_t)cap, sizeof *labels);
    char(*algos)[IG_CU_ALGO_DESC] = ig__calloc((size_t)cap, sizeof *algos);
    double *ms = ig__calloc((size_t)cap, sizeof *ms);
    ig_cuda_step_cost *costs = NULL;
    int64_t n_costs = 0;
    int32_t *cnt = NULL;
    ingot_status st = INGOT_OK;
    if (!labels || !ms || !algos) {
        st = ig__api_ctx_failf(c, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    ig_err aerr = {0};
    if (ig__cuda_ctx_step_algos(c->cuda, algos, cap, &aerr) < 0) {
        ig__api_ctx_fail(c, &aerr);
        st = aerr.status;
        goto out;
    }
    int64_t n = ingot_cuda_context_profile(c, inputs, n_inputs, outputs, n_outputs, stream, cap, labels, ms);
    if (n < 0) {
        st = ingot_context_errcode(c) != INGOT_OK ? ingot_context_errcode(c) : INGOT_ERR_CUDA;
        goto out;
    }
    const ingot_build_options *o = &c->engine->opts;
    ig_err err = {0};
    ig__graph_cost(&c->graph);
    if ((st = ig__cuda_step_costs(&c->graph, o->precision, o->cuda_nhwc, o->cuda_gelu_epilogue, o->cuda_attention,
                                  o->cuda_attention_kernel, &costs, &n_costs, &err)) != INGOT_OK) {
        ig__api_ctx_fail(c, &err);
        goto out;
    }
    if (n_costs != n) {
        st = ig__api_ctx_failf(c, INGOT_ERR_INTERNAL,
                               "the profile has %" PRId64 " steps, the program described %" PRId64, n, n_costs);
        goto out;
    }
    const ig_graph *g = &c->graph;
    /* consumers over the nodes in program order (a node appears once however many steps it has) */
    int32_t *order = ig__calloc((size_t)n + 1, sizeof(int32_t));
    int32_t n_order = 0;
    if (!order) {
        st = ig__api_ctx_failf(c, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    for (int64_t k = 0; k < n; k++)
        if (costs[k].node >= 0 && (n_order == 0 || order[n_order - 1] != costs[k].node))
            order[n_order++] = costs[k].node;
    cnt = consumer_counts(g, order, n_order);
    ig__free(order);
    if (!cnt) {
        st = ig__api_ctx_failf(c, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    bool fp16 = o->precision == INGOT_DTYPE_FLOAT16;
    for (int64_t k = 0; k < n && k < max; k++) {
        ingot_step_profile *p = &steps[k];
        const ig_cuda_step_cost *x = &costs[k];
        memset(p, 0, sizeof *p);
        p->node = -1;
        p->covers = 1;
        if (x->node >= 0) {
            fill_node(p, g, x->node);
            if (x->what[0]) {
                size_t used = strlen(p->name);
                snprintf(p->name + used, sizeof p->name - used, ": %s", x->what);
            }
            /* the node's arithmetic belongs to its first own step (a GEMM before its epilogue kernel),
             * not to the copies the lowering added */
            bool first = true;
            for (int64_t q = k - 1; q >= 0 && costs[q].node == x->node; q--) first = first && costs[q].what[0];
            if (!x->what[0] && first) p->flops = g->nodes[x->node].flops;
        } else {
            snprintf(p->name, sizeof p->name, "%s", x->what[0] ? x->what : "step");
        }
        snprintf(p->kind, sizeof p->kind, "%s", x->kind);
        int32_t next = k + 1 < n ? costs[k + 1].node : -1;
        p->feeds_next = x->node >= 0 && next != x->node && feeds_only(g, cnt, x->node, next);
        p->ms = ms[k];
        p->bytes_read = x->bytes_read;
        p->bytes_written = x->bytes_written;
        p->math_dtype = fp16 && gemm_kind(x->kind) ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT;
        p->live_bytes = x->live_bytes;
        snprintf(p->algo, sizeof p->algo, "%s", algos[k]);
    }
    *n_steps = n;
out:
    ig__free(cnt);
    ig__free(costs);
    ig__free(algos);
    ig__free(labels);
    ig__free(ms);
    return st;
}

#endif
