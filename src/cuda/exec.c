/*
 * exec.c -- engines, contexts and instances of the CUDA backend.
 *
 * An instance is the device program for one set of input shapes: its steps, the offset of every buffer
 * in the context's arena (the planner's packing core over the steps' lifetimes, per-step workspaces
 * included), the pointers of every tensor, tuned library algorithms, and a CUDA Graph. A context keeps
 * one arena -- ONE device allocation, sized for the largest instance -- and a few instances.
 *
 * A run of an instance: no allocation, no free, no synchronisation. The first run of an instance
 * executes the steps on the caller's stream (which also loads every kernel module) and then captures
 * them into a graph on a private stream (capture records, it does not execute); later runs launch the
 * graph. Only the input/output copy steps see the caller's pointers; when those change, their kernel
 * nodes are patched in place (cudaGraphExecKernelNodeSetParams), never re-instantiated. A capture that
 * fails leaves the instance running step by step, with the reason kept for the report.
 */
#define _POSIX_C_SOURCE 200809L
#include "cuda_internal.h"
#include "fault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INSTANCES     8
#define ARENA_ALIGN       256
#define DEFAULT_WS_BUDGET ((size_t)4 << 30)
#define MIN_WS_CAP        ((size_t)16 << 20) /* halving the cap for free memory stops here */
#define WS_FIT_TRIES      8                  /* re-choices under --mem-limit before giving up */

struct ig_cuda_engine {
    ig_cuda_engine_options o;
    ig_cu_lower_options lo;
    ig_cu_weights w;    /* uploaded at creation; read-only after */
    ig_cu_algos *algos; /* the choices of every context, by problem (thread-safe) */
};

typedef struct instance {
    int32_t n_in;
    int32_t *in_rank;                /* [n_in] the input shapes this instance was made for */
    int64_t (*in_dims)[IG_MAX_RANK]; /* [n_in] */
    uint64_t in_hash;                /* values of shape-deciding inputs */
    ig_cu_prog prog;
    void **tptr;          /* [n_tensors] device pointer of every tensor */
    int32_t *staging_in;  /* [n_inputs] arena buffers for the host path (-1) */
    int32_t *staging_out; /* [n_outputs] */
    void **host_out;      /* [n_outputs] pinned host copies of the outputs */
    size_t arena_need;
    size_t workspace_max, lower_bound, no_reuse, const_bytes;
    bool bound; /* tptr valid for the current arena */
    cudaGraphExec_t exec;
    cudaGraph_t graph;
    bool captured, capture_failed;
    size_t graph_bytes; /* device memory the executable graph took (cudaMemGetInfo around it) */
    char fallback[256];
    cudaGraphNode_t *io_node; /* [n_steps] kernel node of each io_patch step */
    const void **baked;       /* [n_tensors] pointers baked into the graph for the io tensors */
    void *consts;             /* host copy of the instance constants (offset = their arena offset) */
    double prepare_ms, tune_ms;
} instance;

struct ig_cuda_ctx {
    ig_cuda_engine *e;
    ig_cu_libs libs;
    cudaStream_t stream; /* private: tuning, host-path copies, capture */
    void *arena;
    size_t arena_bytes;
    instance *inst[MAX_INSTANCES];
    int32_t n_inst, cur;
    bool graphs;
    bool failed;
    ingot_status fail_status;
    int64_t graph_updates, graph_captures, n_prepared;
    bool sync_debug; /* synchronise after every step, naming a faulting node */
};

/* ---- engine ---------------------------------------------------------------------------------------- */

static bool shapes_concrete(const ig_graph *g)
{
    for (int32_t v = 0; v < g->n_values; v++) {
        const ig_value *x = &g->values[v];
        if (x->dtype != INGOT_DTYPE_UNDEFINED && !ig__shape_known(&x->shape)) {
            if (x->producer >= 0 && g->nodes[x->producer].folded) continue;
            if (x->producer < 0 && !(x->flags & (IG_VAL_INPUT | IG_VAL_INITIALIZER))) continue; /* a dead value */
            return false;
        }
    }
    return true;
}

static ingot_status set_device(int device, ig_err *err) { return IG_CU(err, NULL, cudaSetDevice(device)); }

size_t ig__cuda_default_workspace(int device)
{
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
        cudaGetLastError();
        return DEFAULT_WS_BUDGET / 16; /* no device to ask: a modest budget (the build fails elsewhere) */
    }
    size_t sixteenth = prop.totalGlobalMem / 16;
    return sixteenth < DEFAULT_WS_BUDGET ? sixteenth : DEFAULT_WS_BUDGET;
}

ingot_status ig__cuda_check_graph(const ig_graph *g, ig_err *err)
{
    char why[IG_ERRMSG_MAX];
    int32_t bad = ig__cu_unsupported(g, why, sizeof why);
    if (bad)
        return ig__errf(err, INGOT_ERR_MODEL_UNSUPPORTED_OP, "the CUDA backend cannot run %d node%s: %s", (int)bad,
                        bad == 1 ? "" : "s", why);
    return INGOT_OK;
}

ingot_status ig__cuda_engine_create(const ig_graph *g, const ig_cuda_engine_options *o, ig_cuda_engine **out,
                                    ig_err *err)
{
    *out = NULL;
    ingot_status st = ig__cuda_probe(err);
    if (st != INGOT_OK || (st = set_device(o->device, err)) != INGOT_OK) return st;
    if ((st = ig__cuda_check_graph(g, err)) != INGOT_OK) return st;
    if (!shapes_concrete(g))
        return ig__errf(err, INGOT_ERR_INTERNAL, "the CUDA engine is built from a graph with concrete shapes");
    ig_cuda_engine *e = ig__calloc(1, sizeof *e);
    if (!e) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    e->o = *o;
    if (!e->o.workspace_limit) e->o.workspace_limit = ig__cuda_default_workspace(o->device);
    e->lo.precision = o->precision == INGOT_DTYPE_FLOAT16 ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT;
    e->lo.nhwc = o->nhwc;
    e->lo.gelu_epilogue = o->gelu_epilogue;
    e->lo.attention = o->attention;
    e->lo.attention_kernel = o->attention_kernel;
    if ((st = ig__cu_algos_create(&e->algos, err)) != INGOT_OK) {
        ig__free(e);
        return st;
    }
    /* lowered once at the representative shapes: every node checked, the weights uploaded; a later
     * shape whose program asks for a constant the engine lacks keeps it in its own arena */
    ig_cu_prog p;
    if ((st = ig__cu_lower(g, &e->lo, &p, err)) == INGOT_OK) {
        st = ig__cu_weights_build(g, &p, &e->w, err);
        ig__cu_prog_free(&p);
    }
    if (st == INGOT_OK && e->o.mem_limit && e->w.bytes > e->o.mem_limit)
        st = ig__errf(err, INGOT_ERR_DEVICE_OOM,
                      "memory limit %zu bytes: the weights alone take %zu bytes on the device; no context fits",
                      e->o.mem_limit, e->w.bytes);
    if (st != INGOT_OK) {
        ig__cuda_engine_destroy(e);
        return st;
    }
    *out = e;
    return INGOT_OK;
}

void ig__cuda_engine_destroy(ig_cuda_engine *e)
{
    if (!e) return;
    ig__cu_weights_free(&e->w);
    ig__cu_algos_destroy(e->algos);
    ig__free(e);
}

ingot_status ig__cuda_engine_algos_save(ig_cuda_engine *e, ig_wbuf *out, ig_err *err)
{
    return ig__cu_algos_write(e->algos, out, err);
}

ingot_status ig__cuda_engine_algos_load(ig_cuda_engine *e, const void *data, size_t n, const char *what, ig_err *err)
{
    return ig__cu_algos_read(e->algos, data, n, what, err);
}

int32_t ig__cuda_engine_algos_count(ig_cuda_engine *e) { return ig__cu_algos_count(e->algos); }

/* ---- instances --------------------------------------------------------------------------------------- */

static void step_release(ig_cu_step *s)
{
    if (s->kind == IG_ST_CONV)
        ig__cu_conv_release(s);
    else if (s->kind == IG_ST_GEMM)
        ig__cu_gemm_release(s);
}

static void instance_drop_graph(instance *in)
{
    if (in->exec) cudaGraphExecDestroy(in->exec);
    if (in->graph) cudaGraphDestroy(in->graph);
    in->exec = NULL;
    in->graph = NULL;
    in->captured = false;
}

static void instance_free(instance *in)
{
    if (!in) return;
    instance_drop_graph(in);
    for (int32_t i = 0; i < in->prog.n_steps; i++) step_release(&in->prog.steps[i]);
    if (in->host_out)
        for (int32_t j = 0; j < in->prog.n_outputs; j++)
            if (in->host_out[j]) cudaFreeHost(in->host_out[j]);
    ig__free(in->host_out);
    ig__free(in->tptr);
    ig__free(in->staging_in);
    ig__free(in->staging_out);
    ig__free(in->io_node);
    ig__free(in->baked);
    ig__free(in->in_rank);
    ig__free(in->in_dims);
    ig__free(in->consts);
    ig__cu_prog_free(&in->prog);
    ig__free(in);
}

/* The tensors a step reads or writes. */
int ig__cu_step_tensors(const ig_cu_step *s, int32_t *ids)
{
    int n = 0;
    switch (s->kind) {
    case IG_ST_EW:
        ids[n++] = s->u.ew.out;
        for (int i = 0; i < s->u.ew.n_in; i++) ids[n++] = s->u.ew.in[i];
        break;
    case IG_ST_CONV:
        ids[n++] = s->u.conv.x;
        ids[n++] = s->u.conv.w;
        ids[n++] = s->u.conv.y;
        if (s->u.conv.b >= 0) ids[n++] = s->u.conv.b;
        if (s->u.conv.z >= 0) ids[n++] = s->u.conv.z;
        if (s->u.conv.pool_y >= 0) ids[n++] = s->u.conv.pool_y;
        break;
    case IG_ST_GEMM:
        ids[n++] = s->u.gemm.a;
        ids[n++] = s->u.gemm.b;
        ids[n++] = s->u.gemm.d;
        if (s->u.gemm.bias >= 0) ids[n++] = s->u.gemm.bias;
        if (s->u.gemm.c >= 0) ids[n++] = s->u.gemm.c;
        break;
    case IG_ST_SOFTMAX:
        ids[n++] = s->u.softmax.x;
        ids[n++] = s->u.softmax.y;
        if (s->u.softmax.mask >= 0) ids[n++] = s->u.softmax.mask;
        break;
    case IG_ST_LAYERNORM:
        ids[n++] = s->u.ln.x;
        ids[n++] = s->u.ln.y;
        ids[n++] = s->u.ln.gamma;
        if (s->u.ln.beta >= 0) ids[n++] = s->u.ln.beta;
        break;
    case IG_ST_REDUCE:
        ids[n++] = s->u.reduce.x;
        ids[n++] = s->u.reduce.y;
        break;
    case IG_ST_POOL:
        ids[n++] = s->u.pool.x;
        ids[n++] = s->u.pool.y;
        break;
    case IG_ST_GATHER:
        ids[n++] = s->u.gather.x;
        ids[n++] = s->u.gather.idx;
        ids[n++] = s->u.gather.y;
        break;
    case IG_ST_FILL: ids[n++] = s->u.fill.y; break;
    case IG_ST_DWCONV:
        ids[n++] = s->u.dw.x;
        ids[n++] = s->u.dw.w;
        ids[n++] = s->u.dw.y;
        if (s->u.dw.b >= 0) ids[n++] = s->u.dw.b;
        break;
    case IG_ST_ATTENTION:
        ids[n++] = s->u.attn.q;
        ids[n++] = s->u.attn.k;
        ids[n++] = s->u.attn.v;
        ids[n++] = s->u.attn.o;
        if (s->u.attn.mask >= 0) ids[n++] = s->u.attn.mask;
        break;
    default: n = ig__cu_kstep_tensors(s, ids); break;
    }
    return n;
}

static int32_t step_scratch(const ig_cu_step *s)
{
    if (s->kind == IG_ST_CONV) return s->u.conv.scratch;
    if (s->kind == IG_ST_GEMM) return s->u.gemm.scratch;
    return -1;
}

static int32_t add_arena_buf(ig_cu_prog *p, size_t bytes, int32_t first, int32_t last)
{
    if (p->n_bufs + 1 > p->cap_bufs) {
        int32_t nc = p->cap_bufs ? p->cap_bufs * 2 : 64;
        ig_cu_buf *nb = ig__realloc(p->bufs, sizeof *nb * (size_t)nc);
        if (!nb) return -1;
        p->bufs = nb;
        p->cap_bufs = nc;
    }
    ig_cu_buf *b = &p->bufs[p->n_bufs];
    memset(b, 0, sizeof *b);
    b->loc = IG_LOC_ARENA;
    b->bytes = bytes;
    b->io = -1;
    b->wreq = -1;
    b->first = first;
    b->last = last;
    b->alias = -1;
    return p->n_bufs++;
}

static const char *label_of(const ig_cu_prog *p, const ig_cu_step *s, char *buf, size_t n)
{
    return ig__cu_step_label(p, s, buf, n);
}

/* Plan the arena: lifetimes from the steps, then the packing core. Device-independent (the tests'
 * host emulator plans with it too). */
ingot_status ig__cu_plan(ig_cu_prog *p, ig_cu_plan_result *r, ig_err *err)
{
    int32_t ids[16];
    memset(r, 0, sizeof *r);
    for (int32_t b = 0; b < p->n_bufs; b++)
        if (!p->bufs[b].is_scratch && p->bufs[b].loc == IG_LOC_ARENA && !p->bufs[b].is_const) {
            p->bufs[b].first = INT32_MAX;
            p->bufs[b].last = -1;
        }
    for (int32_t s = 0; s < p->n_steps; s++) {
        int n = ig__cu_step_tensors(&p->steps[s], ids);
        for (int i = 0; i < n; i++) {
            ig_cu_buf *b = &p->bufs[p->tensors[ids[i]].buf];
            if (b->loc != IG_LOC_ARENA || b->is_const || b->is_scratch) continue;
            if (s < b->first) b->first = s;
            if (s > b->last) b->last = s;
        }
    }
    int32_t last_step = p->n_steps > 0 ? p->n_steps - 1 : 0;
    for (int32_t b = 0; b < p->n_bufs; b++) {
        ig_cu_buf *x = &p->bufs[b];
        if (x->loc != IG_LOC_ARENA) continue;
        if (x->is_const) {
            x->first = 0;
            x->last = last_step;
        } else if (x->last < 0) {
            x->first = x->last = 0; /* never used */
            if (!x->is_scratch) x->bytes = 0;
        }
    }
    int32_t n = 0;
    for (int32_t b = 0; b < p->n_bufs; b++) n += p->bufs[b].loc == IG_LOC_ARENA;
    ig_pack_buf *pb = ig__calloc((size_t)n + 1, sizeof *pb);
    uint64_t *off = ig__calloc((size_t)n + 1, sizeof *off);
    int32_t *map = ig__calloc((size_t)n + 1, sizeof *map);
    if (!pb || !off || !map) {
        ig__free(pb);
        ig__free(off);
        ig__free(map);
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory planning the arena");
    }
    int32_t k = 0;
    for (int32_t b = 0; b < p->n_bufs; b++) {
        ig_cu_buf *x = &p->bufs[b];
        if (x->loc != IG_LOC_ARENA) continue;
        pb[k].size = x->bytes;
        pb[k].first = x->first;
        pb[k].last = x->last;
        map[k++] = b;
        if (x->is_const) r->const_bytes += x->bytes;
        if (x->is_scratch == 1 && x->bytes > r->workspace_max) r->workspace_max = x->bytes;
    }
    ig_pack_options po = ig__pack_options_default();
    po.align = ARENA_ALIGN;
    ig_pack_result res;
    memset(&res, 0, sizeof res);
    ingot_status st = ig__pack(pb, k, &po, off, &res, err);
    if (st == INGOT_OK) st = ig__pack_check(pb, k, off, po.align, res.arena, err);
    if (st == INGOT_OK) {
        for (int32_t i = 0; i < k; i++) p->bufs[map[i]].offset = off[i];
        r->arena = res.arena;
        r->lower_bound = res.lower_bound;
        r->no_reuse = res.no_reuse;
    }
    ig__free(pb);
    ig__free(off);
    ig__free(map);
    return st;
}

static ingot_status plan_instance(ig_cuda_ctx *c, instance *in, ig_err *err)
{
    ig_cu_plan_result r;
    (void)c;
    ingot_status st = ig__cu_plan(&in->prog, &r, err);
    if (st != INGOT_OK) return st;
    in->arena_need = r.arena;
    in->lower_bound = r.lower_bound;
    in->no_reuse = r.no_reuse;
    in->const_bytes = r.const_bytes;
    in->workspace_max = r.workspace_max;
    return INGOT_OK;
}

static void *buf_base(const ig_cuda_ctx *c, const ig_cu_prog *p, int32_t b)
{
    const ig_cu_buf *x = &p->bufs[b];
    switch (x->loc) {
    case IG_LOC_ARENA: return (char *)c->arena + x->offset;
    case IG_LOC_WEIGHT: return (char *)c->e->w.dev + x->offset;
    default: return NULL;
    }
}

static void bind_instance(ig_cuda_ctx *c, instance *in)
{
    ig_cu_prog *p = &in->prog;
    for (int32_t t = 0; t < p->n_tensors; t++) {
        const ig_cu_tensor *x = &p->tensors[t];
        char *base = buf_base(c, p, x->buf);
        in->tptr[t] = base ? base + (size_t)x->offset * ingot_dtype_size(x->dtype) : NULL;
    }
    in->bound = true;
}

/* Make the context's one allocation exactly `need` bytes (grow, or shrink once tuning has settled the
 * workspaces); instances bound to the old one lose their pointers and graphs (they re-bind lazily). */
static ingot_status resize_arena(ig_cuda_ctx *c, const instance *in, size_t need, ig_err *err)
{
    need = need ? need : ARENA_ALIGN;
    if (c->arena && c->arena_bytes == need) return INGOT_OK;
    for (int32_t i = 0; i < c->n_inst; i++) {
        instance_drop_graph(c->inst[i]);
        c->inst[i]->bound = false;
    }
    if (c->arena) {
        /* the old arena may still be in use by the caller's stream */
        ingot_status st = IG_CU(err, NULL, cudaStreamSynchronize(c->stream));
        if (st == INGOT_OK) st = IG_CU(err, NULL, cudaDeviceSynchronize());
        if (st != INGOT_OK) return st;
        ig__cu_free(c->arena);
        c->arena = NULL;
        c->arena_bytes = 0;
    }
    cudaError_t e = ig__cu_malloc(&c->arena, need);
    if (e != cudaSuccess) {
        cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) cudaGetLastError();
        if (e == cudaErrorMemoryAllocation)
            return ig__errf(err, INGOT_ERR_DEVICE_OOM,
                            "the context needs %zu bytes of device memory (activations and workspaces: %zu, of which "
                            "largest workspace %zu, constants %zu; weights already hold %zu); %zu bytes are free",
                            need, need - in->const_bytes, in->workspace_max, in->const_bytes, c->e->w.bytes, free_b);
        return ig__cu_status(err, e, "cudaMalloc(arena)", NULL, __FILE__, __LINE__); /* names the call */
    }
    c->arena_bytes = need;
    return INGOT_OK;
}

/* Grow the arena to what `in` needs (never shrink: other instances may need more). */
static ingot_status ensure_arena(ig_cuda_ctx *c, instance *in, ig_err *err)
{
    size_t need = in->arena_need ? in->arena_need : ARENA_ALIGN;
    if (c->arena && c->arena_bytes >= need) return INGOT_OK;
    return resize_arena(c, in, need, err);
}

/* The instance constants (shape-dependent folded values, requests the engine does not hold) are made
 * on the host once, at preparation, and uploaded from that copy -- again whenever the arena is
 * replaced by a larger one, since the graph they came from has moved on to other shapes by then. */
static ingot_status make_consts(instance *in, ig_err *err)
{
    ig_cu_prog *p = &in->prog;
    size_t end = 0;
    for (int32_t b = 0; b < p->n_bufs; b++) {
        const ig_cu_buf *x = &p->bufs[b];
        if (x->loc == IG_LOC_ARENA && x->is_const && x->bytes && x->offset + x->bytes > end) end = x->offset + x->bytes;
    }
    ig__free(in->consts); /* made again after a re-plan: the offsets moved */
    in->consts = NULL;
    if (!end) return INGOT_OK;
    if (!(in->consts = ig__malloc(end))) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int32_t b = 0; b < p->n_bufs; b++) {
        const ig_cu_buf *x = &p->bufs[b];
        if (x->loc != IG_LOC_ARENA || !x->is_const || !x->bytes) continue;
        ingot_status st = ig__cu_wreq_fill(p->g, &p->wreqs[x->wreq], (char *)in->consts + x->offset, err);
        if (st != INGOT_OK) return st;
    }
    return INGOT_OK;
}

static ingot_status upload_consts(ig_cuda_ctx *c, instance *in, ig_err *err)
{
    ig_cu_prog *p = &in->prog;
    for (int32_t b = 0; b < p->n_bufs && in->consts; b++) {
        const ig_cu_buf *x = &p->bufs[b];
        if (x->loc != IG_LOC_ARENA || !x->is_const || !x->bytes) continue;
        ingot_status st = IG_CU(
            err, NULL,
            cudaMemcpy((char *)c->arena + x->offset, (char *)in->consts + x->offset, x->bytes, cudaMemcpyHostToDevice));
        if (st != INGOT_OK) return st;
    }
    return INGOT_OK;
}

/* The engine's table first: a problem any context of the engine (or the engine file, or the timing
 * cache) has a checked choice for is not timed again, so contexts agree and loading skips tuning.
 * A miss is timed (unless tuning is off: the heuristic's choice, not recorded) and recorded; the
 * table's first choice for a key is what every context then runs. */
static ingot_status apply_choice(ig_cuda_ctx *c, instance *in, ig_cu_step *st, const void *choice, size_t n, bool *used,
                                 const char *label, ig_err *err)
{
    ig_cu_prog *p = &in->prog;
    int32_t sb = step_scratch(st);
    void *ws = sb >= 0 ? buf_base(c, p, sb) : NULL;
    size_t wsb = sb >= 0 ? p->bufs[sb].bytes : 0;
    return st->kind == IG_ST_CONV
               ? ig__cu_conv_apply(&c->libs, st, choice, n, in->tptr, ws, wsb, c->stream, used, label, err)
               : ig__cu_gemm_apply(&c->libs, st, choice, n, in->tptr, ws, wsb, c->stream, used, label, err);
}

static ingot_status choose_step(ig_cuda_ctx *c, instance *in, ig_cu_step *st, bool timing, ig_err *err)
{
    ig_cu_prog *p = &in->prog;
    char lbl[256];
    const char *label = label_of(p, st, lbl, sizeof lbl);
    bool conv = st->kind == IG_ST_CONV;
    const char *key = conv ? ig__cu_conv_key(st) : ig__cu_gemm_key(st);
    uint8_t stored[128], mine[128];
    bool used = false;
    ingot_status r;
    size_t n = ig__cu_algos_get(c->e->algos, key, stored, sizeof stored);
    if (n) {
        if ((r = apply_choice(c, in, st, stored, n, &used, label, err)) != INGOT_OK || used) return r;
        ig__log(INGOT_LOG_INFO, "node %s: the stored algorithm does not fit this problem; timing again", label);
    }
    if (!timing) return INGOT_OK;
    int32_t sb = step_scratch(st);
    void *ws = sb >= 0 ? buf_base(c, p, sb) : NULL;
    size_t wsb = sb >= 0 ? p->bufs[sb].bytes : 0;
    r = conv ? ig__cu_conv_tune(&c->libs, st, in->tptr, ws, wsb, c->stream, label, err)
             : ig__cu_gemm_tune(&c->libs, st, in->tptr, ws, wsb, c->stream, label, err);
    if (r != INGOT_OK) return r;
    size_t m = conv ? ig__cu_conv_choice(st, mine, sizeof mine) : ig__cu_gemm_choice(st, mine, sizeof mine);
    if (!m || (r = ig__cu_algos_put(c->e->algos, key, mine, m, err)) != INGOT_OK) return r;
    /* another context of the engine may have stored its choice first: run that one too */
    n = ig__cu_algos_get(c->e->algos, key, stored, sizeof stored);
    if (n && (n != m || memcmp(stored, mine, m) != 0)) return apply_choice(c, in, st, stored, n, &used, label, err);
    return INGOT_OK;
}

static ingot_status tune_instance(ig_cuda_ctx *c, instance *in, ig_err *err)
{
    ig_cu_prog *p = &in->prog;
    double t0 = ig__now_ms();
    bool timing = c->e->o.tune != 0; /* 0: the heuristics' first choice (sanitizer runs), or the table's */
    /* deterministic: the heuristics' first choice, whatever a table or a timing cache holds */
    if (c->e->o.deterministic) return INGOT_OK;
    /* arena contents are arbitrary here: tuning writes only outputs and workspaces */
    for (int32_t s = 0; s < p->n_steps; s++) {
        ig_cu_step *st = &p->steps[s];
        if (st->kind != IG_ST_CONV && st->kind != IG_ST_GEMM) continue;
        ingot_status r = choose_step(c, in, st, timing, err);
        if (r != INGOT_OK) return r;
    }
    in->tune_ms = ig__now_ms() - t0;
    return INGOT_OK;
}

static bool key_matches(const instance *in, const ig_graph *g);
static bool key_fill(instance *in, const ig_graph *g);

/* Each library step's descriptors and workspace candidates under `cap` bytes; its workspace buffer
 * is sized for the largest candidate, so that tuning can time them all on the real buffers. */
static ingot_status prepare_lib_steps(ig_cuda_ctx *c, instance *in, size_t cap, ig_err *err)
{
    ig_cu_prog *p = &in->prog;
    char lbl[256];
    bool det = c->e->o.deterministic != 0;
    for (int32_t s = 0; s < p->n_steps; s++) {
        ig_cu_step *stp = &p->steps[s];
        size_t ws = 0;
        ingot_status st;
        const char *label = label_of(p, stp, lbl, sizeof lbl);
        if (stp->kind == IG_ST_CONV)
            st = ig__cu_conv_prepare(&c->libs, p, stp, cap, det, det ? NULL : c->e->algos, &ws, label, err);
        else if (stp->kind == IG_ST_GEMM)
            st = ig__cu_gemm_prepare(&c->libs, p, stp, cap, det ? NULL : c->e->algos, &ws, label, err);
        else
            continue;
        if (st != INGOT_OK) return st;
        p->bufs[step_scratch(stp)].bytes = ws;
    }
    return INGOT_OK;
}

/* Once chosen, a step's workspace is its algorithm's and no more: the arena is planned again with
 * those, so the budget costs memory only where a faster algorithm really uses it. */
static void commit_workspaces(instance *in)
{
    ig_cu_prog *p = &in->prog;
    for (int32_t s = 0; s < p->n_steps; s++) {
        ig_cu_step *stp = &p->steps[s];
        if (stp->kind == IG_ST_CONV)
            p->bufs[stp->u.conv.scratch].bytes = ig__cu_conv_commit_ws(stp);
        else if (stp->kind == IG_ST_GEMM)
            p->bufs[stp->u.gemm.scratch].bytes = ig__cu_gemm_commit_ws(stp);
    }
}

/* --mem-limit cannot be met: every account, and what would fit. */
static ingot_status limit_error(ig_cuda_ctx *c, const instance *in, size_t no_ws_arena, ig_err *err)
{
    size_t w = c->e->w.bytes, lim = c->e->o.mem_limit;
    return ig__errf(err, INGOT_ERR_DEVICE_OOM,
                    "memory limit %zu bytes cannot hold this context: weights %zu + arena %zu = %zu bytes (arena: "
                    "live bytes at least %zu, largest workspace %zu, constants %zu). With no workspace at all the "
                    "arena still needs %zu bytes, so a limit of %zu bytes or a smaller batch would fit",
                    lim, w, in->arena_need, w + in->arena_need, in->lower_bound, in->workspace_max, in->const_bytes,
                    no_ws_arena, w + no_ws_arena);
}

/* Algorithms under one workspace budget (docs/CUDA.md, "Workspace"): every step may use up to `cap`
 * bytes -- the build option, or what --mem-limit leaves beside the weights and the activations -- and
 * the fastest candidate within it is timed and kept. The arena is then planned with the workspaces the
 * chosen algorithms use, and made that size. When the result is still over --mem-limit, the cap drops
 * by the excess and the steps choose again; when tuning's arena does not fit in free memory, the cap
 * is quartered. */
static ingot_status choose_algorithms(ig_cuda_ctx *c, instance *in, ig_err *err)
{
    ingot_status st;
    size_t cap = c->e->o.workspace_limit, lim = c->e->o.mem_limit, w = c->e->w.bytes, no_ws = 0;
    if (lim) { /* the activations with no workspace at all must fit beside the weights */
        if ((st = plan_instance(c, in, err)) != INGOT_OK) return st;
        no_ws = in->arena_need;
        if (w + no_ws > lim) return limit_error(c, in, no_ws, err);
        if (lim - w - no_ws < cap) cap = lim - w - no_ws;
    }
    for (int tries = 0;; tries++) {
        if ((st = prepare_lib_steps(c, in, cap, err)) != INGOT_OK || (st = plan_instance(c, in, err)) != INGOT_OK ||
            (st = make_consts(in, err)) != INGOT_OK)
            return st;
        st = ensure_arena(c, in, err);
        if (st == INGOT_ERR_DEVICE_OOM && cap > MIN_WS_CAP && !lim) {
            ig__err_clear(err); /* the first message is kept: this one is handled */
            cap = cap / 4 > MIN_WS_CAP ? cap / 4 : MIN_WS_CAP;
            ig__log(INGOT_LOG_INFO, "tuning with the workspace budget does not fit in free memory; trying %zu bytes",
                    cap);
            continue;
        }
        if (st != INGOT_OK) return st;
        bind_instance(c, in);
        if ((st = upload_consts(c, in, err)) != INGOT_OK || (st = tune_instance(c, in, err)) != INGOT_OK) return st;
        commit_workspaces(in);
        if ((st = plan_instance(c, in, err)) != INGOT_OK) return st;
        if (!lim || w + in->arena_need <= lim) break;
        size_t over = w + in->arena_need - lim;
        if (cap == 0 || tries + 1 >= WS_FIT_TRIES) return limit_error(c, in, no_ws, err);
        size_t next = in->workspace_max > over ? in->workspace_max - over : 0;
        cap = next < cap ? next : cap / 2;
        ig__log(INGOT_LOG_INFO, "%zu bytes over the memory limit; choosing again with workspaces of at most %zu bytes",
                over, cap);
    }
    /* the arena as the chosen algorithms need it: tuning's candidates may have made it larger, but
     * never below what another prepared shape of this context needs */
    size_t need = in->arena_need;
    for (int32_t i = 0; i < c->n_inst; i++)
        if (c->inst[i]->arena_need > need) need = c->inst[i]->arena_need;
    size_t slack = c->arena_bytes / 16 > ((size_t)4 << 20) ? c->arena_bytes / 16 : ((size_t)4 << 20);
    if ((st = make_consts(in, err)) != INGOT_OK) return st;
    /* under --mem-limit the allocation itself must fit, slack or not */
    if (c->arena_bytes > need + slack || (lim && w + c->arena_bytes > lim))
        st = resize_arena(c, in, need, err);
    else
        st = ensure_arena(c, in, err);
    if (st != INGOT_OK) return st;
    bind_instance(c, in);
    return upload_consts(c, in, err);
}

/* Elementwise programs compiled into kernels of their own where the generator covers them (ew_jit.c),
 * all of an instance's in one NVRTC run. A failure leaves them to the interpreter, with a warning:
 * never an error. The input/output copies keep the interpreter too (plain copies, near the copy
 * bandwidth; the CUDA Graph patches their nodes by the interpreter's parameters). */
static void jit_programs(instance *in)
{
    if (!ig__cu_ew_jit_enabled()) return;
    ig_cu_prog *p = &in->prog;
    const ig_ew_args **progs = ig__calloc((size_t)p->n_steps + 1, sizeof *progs);
    bool *i32 = ig__calloc((size_t)p->n_steps + 1, sizeof *i32);
    void **funcs = ig__calloc((size_t)p->n_steps + 1, sizeof *funcs);
    int32_t *at = ig__calloc((size_t)p->n_steps + 1, sizeof *at);
    int n = 0;
    for (int32_t s = 0; progs && i32 && funcs && at && s < p->n_steps; s++) {
        ig_cu_step *st = &p->steps[s];
        if (st->kind != IG_ST_EW || st->io_patch || !ig__cu_ew_jit_covers(&st->u.ew.args)) continue;
        progs[n] = &st->u.ew.args;
        i32[n] = ingot_cuda_ew_fits_i32(&st->u.ew.args) != 0;
        at[n++] = s;
    }
    ig_err e = {0};
    if (n > 0 && ig__cu_ew_jit_batch(progs, i32, n, funcs, &e) == INGOT_OK) {
        for (int k = 0; k < n; k++) p->steps[at[k]].u.ew.jit = funcs[k];
    } else if (n > 0) {
        cudaGetLastError(); /* a failed compile or load is not a device fault */
        ig__log(INGOT_LOG_WARN, "%d elementwise programs run in the interpreter: %s", n, e.msg);
    }
    ig__free(progs);
    ig__free(i32);
    ig__free(funcs);
    ig__free(at);
}

static ingot_status prepare_instance(ig_cuda_ctx *c, const ig_graph *g, instance **out, ig_err *err)
{
    double t0 = ig__now_ms();
    ingot_status st;
    instance *in = ig__calloc(1, sizeof *in);
    if (!in) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    if (!key_fill(in, g)) goto oom;
    if ((st = ig__cu_lower(g, &c->e->lo, &in->prog, err)) != INGOT_OK) goto fail;
    ig_cu_prog *p = &in->prog;
    /* weights the engine holds; anything else becomes an instance constant in the arena */
    for (int32_t b = 0; b < p->n_bufs; b++) {
        ig_cu_buf *x = &p->bufs[b];
        if (x->loc != IG_LOC_WEIGHT) continue;
        uint64_t off = ig__cu_weights_find(&c->e->w, &p->wreqs[x->wreq]);
        if (off == UINT64_MAX) {
            x->loc = IG_LOC_ARENA;
            x->is_const = 1;
        } else {
            x->offset = off;
        }
    }
    /* one workspace buffer per library step, sized by the choice below */
    for (int32_t s = 0; s < p->n_steps; s++) {
        ig_cu_step *stp = &p->steps[s];
        if (stp->kind != IG_ST_CONV && stp->kind != IG_ST_GEMM) continue;
        int32_t b = add_arena_buf(p, 0, s, s);
        if (b < 0) goto oom;
        p->bufs[b].is_scratch = 1;
        if (stp->kind == IG_ST_CONV)
            stp->u.conv.scratch = b;
        else
            stp->u.gemm.scratch = b;
    }
    /* staging for the host path: inputs live until their copy step, outputs from theirs */
    in->staging_in = ig__calloc((size_t)p->n_inputs + 1, sizeof(int32_t));
    in->staging_out = ig__calloc((size_t)p->n_outputs + 1, sizeof(int32_t));
    in->host_out = ig__calloc((size_t)p->n_outputs + 1, sizeof(void *));
    if (!in->staging_in || !in->staging_out || !in->host_out) goto oom;
    for (int32_t i = 0; i < p->n_inputs; i++) {
        in->staging_in[i] = -1;
        if (p->in_tensor[i] < 0) continue;
        int32_t use = 0;
        for (int32_t s = 0; s < p->n_steps; s++)
            if (p->steps[s].kind == IG_ST_EW && p->steps[s].io_patch && p->steps[s].u.ew.in[0] == p->in_tensor[i])
                use = s;
        in->staging_in[i] = add_arena_buf(p, p->bufs[p->tensors[p->in_tensor[i]].buf].bytes, 0, use);
        if (in->staging_in[i] < 0) goto oom;
        p->bufs[in->staging_in[i]].is_scratch = 2; /* staging: a fixed lifetime, not a workspace */
    }
    for (int32_t j = 0; j < p->n_outputs; j++) {
        int32_t use = p->n_steps ? p->n_steps - 1 : 0;
        for (int32_t s = 0; s < p->n_steps; s++)
            if (p->steps[s].kind == IG_ST_EW && p->steps[s].io_patch && p->steps[s].u.ew.out == p->out_tensor[j])
                use = s;
        size_t bytes = p->bufs[p->tensors[p->out_tensor[j]].buf].bytes;
        in->staging_out[j] = add_arena_buf(p, bytes, use, p->n_steps ? p->n_steps - 1 : 0);
        if (in->staging_out[j] < 0) goto oom;
        p->bufs[in->staging_out[j]].is_scratch = 2;
        if ((st = IG_CU(err, NULL, cudaMallocHost(&in->host_out[j], bytes ? bytes : 16))) != INGOT_OK) goto fail;
    }
    in->tptr = ig__calloc((size_t)p->n_tensors + 1, sizeof(void *));
    in->io_node = ig__calloc((size_t)p->n_steps + 1, sizeof(cudaGraphNode_t));
    in->baked = ig__calloc((size_t)p->n_tensors + 1, sizeof(void *));
    if (!in->tptr || !in->io_node || !in->baked) goto oom;
    if ((st = choose_algorithms(c, in, err)) != INGOT_OK) goto fail;
    jit_programs(in);
    in->prepare_ms = ig__now_ms() - t0;
    c->n_prepared++;
    *out = in;
    return INGOT_OK;
oom:
    st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory preparing the CUDA instance");
fail:
    instance_free(in);
    return st;
}

static uint64_t shape_input_hash(const ig_graph *g)
{
    uint64_t h = IG_FNV_SEED;
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const ig_value *v = &g->values[g->inputs[i]];
        if (v->flags & IG_VAL_CONST) h = ig__fnv1a(h, v->c.data, v->c.n_bytes);
    }
    return h;
}

static bool key_fill(instance *in, const ig_graph *g)
{
    in->n_in = g->n_inputs;
    in->in_rank = ig__calloc((size_t)g->n_inputs + 1, sizeof *in->in_rank);
    in->in_dims = ig__calloc((size_t)g->n_inputs + 1, sizeof *in->in_dims);
    if (!in->in_rank || !in->in_dims) return false;
    for (int32_t i = 0; i < in->n_in; i++) {
        const ig_value *v = &g->values[g->inputs[i]];
        in->in_rank[i] = v->shape.rank;
        for (int32_t k = 0; k < v->shape.rank; k++) in->in_dims[i][k] = v->shape.d[k].n;
    }
    in->in_hash = shape_input_hash(g);
    return true;
}

static bool key_matches(const instance *in, const ig_graph *g)
{
    if (in->n_in != g->n_inputs) return false;
    for (int32_t i = 0; i < in->n_in; i++) {
        const ig_value *v = &g->values[g->inputs[i]];
        if (in->in_rank[i] != v->shape.rank) return false;
        for (int32_t k = 0; k < v->shape.rank; k++)
            if (in->in_dims[i][k] != v->shape.d[k].n) return false;
    }
    return in->in_hash == shape_input_hash(g);
}

bool ig__cuda_ctx_matches(const ig_cuda_ctx *c, const int32_t *ranks, const int64_t *const *dims, int32_t n)
{
    if (c->cur < 0) return false;
    const instance *in = c->inst[c->cur];
    if (n != in->n_in) return false;
    for (int32_t i = 0; i < n; i++) {
        if (ranks[i] != in->in_rank[i]) return false;
        for (int32_t k = 0; k < ranks[i]; k++)
            if (dims[i][k] != in->in_dims[i][k]) return false;
    }
    return true;
}

/* ---- context ------------------------------------------------------------------------------------------ */

ingot_status ig__cuda_ctx_create(ig_cuda_engine *e, const ig_graph *g, ig_cuda_ctx **out, ig_err *err)
{
    *out = NULL;
    ingot_status st;
    ig_cuda_ctx *c = ig__calloc(1, sizeof *c);
    if (!c) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    c->e = e;
    c->cur = -1;
    c->graphs = e->o.graphs != 0;
    c->sync_debug = e->o.sync_debug != 0;
    if ((st = set_device(e->o.device, err)) != INGOT_OK) goto fail;
    if ((st = IG_CU(err, NULL, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking))) != INGOT_OK) goto fail;
    if ((st = IG_CUDNN(err, NULL, cudnnCreate(&c->libs.cudnn))) != INGOT_OK) goto fail;
    if ((st = IG_CUBLAS(err, NULL, cublasLtCreate(&c->libs.lt))) != INGOT_OK) goto fail;
    if (shapes_concrete(g) && (st = ig__cuda_ctx_select(c, g, err)) != INGOT_OK) goto fail;
    *out = c;
    return INGOT_OK;
fail:
    ig__cuda_ctx_destroy(c);
    return st;
}

void ig__cuda_ctx_destroy(ig_cuda_ctx *c)
{
    if (!c) return;
    if (c->stream) cudaStreamSynchronize(c->stream);
    cudaDeviceSynchronize(); /* the caller's stream may still be running our graph */
    for (int32_t i = 0; i < c->n_inst; i++) instance_free(c->inst[i]);
    if (c->arena) ig__cu_free(c->arena);
    if (c->libs.cudnn) cudnnDestroy(c->libs.cudnn);
    if (c->libs.lt) cublasLtDestroy(c->libs.lt);
    if (c->stream) cudaStreamDestroy(c->stream);
    ig__free(c);
}

ingot_status ig__cuda_ctx_select(ig_cuda_ctx *c, const ig_graph *g, ig_err *err)
{
    ingot_status dst = set_device(c->e->o.device, err); /* the calling thread may be a new one */
    if (dst != INGOT_OK) return dst;
    if (c->failed)
        return ig__errf(err, c->fail_status ? c->fail_status : INGOT_ERR_DEVICE_FATAL,
                        "the context failed in an earlier run and cannot be used; destroy it");
    for (int32_t i = 0; i < c->n_inst; i++)
        if (key_matches(c->inst[i], g)) {
            c->cur = i;
            if (!c->inst[i]->bound) {
                ingot_status st = ensure_arena(c, c->inst[i], err);
                if (st != INGOT_OK) return st;
                bind_instance(c, c->inst[i]);
                if ((st = upload_consts(c, c->inst[i], err)) != INGOT_OK) return st;
            }
            return INGOT_OK;
        }
    instance *in = NULL;
    ingot_status st = prepare_instance(c, g, &in, err);
    if (st != INGOT_OK) return st;
    if (c->n_inst == MAX_INSTANCES) { /* evict the oldest (never the one in use: it is replaced) */
        instance_free(c->inst[0]);
        memmove(c->inst, c->inst + 1, sizeof(c->inst[0]) * (MAX_INSTANCES - 1));
        c->n_inst--;
    }
    c->inst[c->n_inst] = in;
    c->cur = c->n_inst++;
    return INGOT_OK;
}

bool ig__cuda_ctx_failed(const ig_cuda_ctx *c) { return c->failed; }
void ig__cuda_ctx_set_graphs(ig_cuda_ctx *c, int enabled) { c->graphs = enabled != 0; }

/* ---- running ------------------------------------------------------------------------------------------- */

static ingot_status step_fail(ig_cuda_ctx *c, instance *in, const ig_cu_step *s, ingot_status st, ig_err *err)
{
    (void)in;
    (void)s;
    if (st == INGOT_ERR_DEVICE_FATAL || st == INGOT_ERR_CUDA || st == INGOT_ERR_CUDNN || st == INGOT_ERR_CUBLAS) {
        c->failed = true;
        c->fail_status = st;
    }
    return st;
}

static ingot_status launch_step(ig_cuda_ctx *c, instance *in, const ig_cu_step *s, cudaStream_t stream, ig_err *err)
{
    void **P = in->tptr;
    const ig_cu_prog *p = &in->prog;
    char lbl[256];
    cudaError_t e = cudaSuccess;
    switch (s->kind) {
    case IG_ST_EW: {
        ig_ew_args a = s->u.ew.args;
        a.out = P[s->u.ew.out];
        for (int i = 0; i < s->u.ew.n_in; i++) a.in[i] = P[s->u.ew.in[i]];
        e = s->u.ew.jit ? ingot_cuda_ew_jit_launch(s->u.ew.jit, &a, stream) : ingot_cuda_ew(&a, stream);
        break;
    }
    case IG_ST_CONV: {
        int32_t sb = s->u.conv.scratch;
        return ig__cu_conv_run(&c->libs, s, P, sb >= 0 ? buf_base(c, p, sb) : NULL, stream,
                               label_of(p, s, lbl, sizeof lbl), err);
    }
    case IG_ST_GEMM: {
        int32_t sb = s->u.gemm.scratch;
        return ig__cu_gemm_run(&c->libs, s, P, sb >= 0 ? buf_base(c, p, sb) : NULL, stream,
                               label_of(p, s, lbl, sizeof lbl), err);
    }
    case IG_ST_SOFTMAX: {
        ig_softmax_args a = s->u.softmax.args;
        a.x = P[s->u.softmax.x];
        a.y = P[s->u.softmax.y];
        a.mask = s->u.softmax.mask >= 0 ? P[s->u.softmax.mask] : NULL;
        e = ingot_cuda_softmax(&a, stream);
        break;
    }
    case IG_ST_LAYERNORM: {
        ig_layernorm_args a = s->u.ln.args;
        a.x = P[s->u.ln.x];
        a.y = P[s->u.ln.y];
        a.gamma = P[s->u.ln.gamma];
        a.beta = s->u.ln.beta >= 0 ? P[s->u.ln.beta] : NULL;
        e = ingot_cuda_layernorm(&a, stream);
        break;
    }
    case IG_ST_REDUCE: {
        ig_reduce_args a = s->u.reduce.args;
        a.x = P[s->u.reduce.x];
        a.y = P[s->u.reduce.y];
        e = ingot_cuda_reduce(&a, stream);
        break;
    }
    case IG_ST_POOL: {
        ig_pool_args a = s->u.pool.args;
        a.x = P[s->u.pool.x];
        a.y = P[s->u.pool.y];
        e = ingot_cuda_pool(&a, stream);
        break;
    }
    case IG_ST_GATHER: {
        ig_gather_args a = s->u.gather.args;
        a.x = P[s->u.gather.x];
        a.idx = P[s->u.gather.idx];
        a.y = P[s->u.gather.y];
        e = ingot_cuda_gather(&a, stream);
        break;
    }
    case IG_ST_FILL: {
        const ig_cu_tensor *t = &p->tensors[s->u.fill.y];
        e = ingot_cuda_fill(P[s->u.fill.y], (int64_t)ig__cu_tensor_numel(t), (int32_t)ingot_dtype_size(t->dtype),
                            s->u.fill.bits, stream);
        break;
    }
    case IG_ST_DWCONV: {
        ig_dwconv_args a = s->u.dw.args;
        a.x = P[s->u.dw.x];
        a.filt = P[s->u.dw.w];
        a.b = s->u.dw.b >= 0 ? P[s->u.dw.b] : NULL;
        a.y = P[s->u.dw.y];
        e = ingot_cuda_dwconv(&a, stream);
        break;
    }
    case IG_ST_ATTENTION: {
        ig_attention_args a = s->u.attn.args;
        a.q = P[s->u.attn.q];
        a.k = P[s->u.attn.k];
        a.v = P[s->u.attn.v];
        a.o = P[s->u.attn.o];
        a.mask = s->u.attn.mask >= 0 ? P[s->u.attn.mask] : NULL;
        e = ingot_cuda_attention(&a, stream);
        break;
    }
    default:
        if (!ig__cu_is_kstep(s->kind)) return ig__errf(err, INGOT_ERR_INTERNAL, "unknown step kind %d", s->kind);
        e = ig__cu_kstep_launch(s, (void *const *)P, stream);
        break;
    }
    e = ig__cu_fault_launch(e, __FILE__, __LINE__); /* tests: INGOT_CUDA_FAULT=launch:N (fault.h) */
    if (e != cudaSuccess)
        return ig__cu_status(err, e, "kernel launch", label_of(p, s, lbl, sizeof lbl), __FILE__, __LINE__);
    return INGOT_OK;
}

/* Every step on `stream`; when capturing, remember the kernel node of each input/output copy. */
static ingot_status launch_all(ig_cuda_ctx *c, instance *in, cudaStream_t stream, bool capturing, ig_err *err)
{
    ig_cu_prog *p = &in->prog;
    char lbl[256];
    for (int32_t s = 0; s < p->n_steps; s++) {
        const ig_cu_step *st = &p->steps[s];
        ingot_status r = launch_step(c, in, st, stream, err);
        if (r != INGOT_OK) return r;
        if (capturing && st->io_patch) {
            in->io_node[s] = NULL;
            if (st->u.ew.args.n > 0) {
                enum cudaStreamCaptureStatus cs;
                const cudaGraphNode_t *deps = NULL;
                size_t nd = 0;
                cudaError_t e = cudaStreamGetCaptureInfo(stream, &cs, NULL, NULL, &deps, NULL, &nd);
                if (e != cudaSuccess || cs != cudaStreamCaptureStatusActive || nd != 1)
                    return ig__errf(err, INGOT_ERR_CUDA, "cannot locate the captured node of %s",
                                    label_of(p, st, lbl, sizeof lbl));
                in->io_node[s] = deps[0];
            }
        }
        if (c->sync_debug && !capturing) {
            ingot_status q = IG_CU(err, label_of(p, st, lbl, sizeof lbl), cudaStreamSynchronize(stream));
            if (q != INGOT_OK) return q;
        }
    }
    return INGOT_OK;
}

static bool io_tensor(const ig_cu_prog *p, int32_t t)
{
    int loc = p->bufs[p->tensors[t].buf].loc;
    return loc == IG_LOC_INPUT || loc == IG_LOC_OUTPUT;
}

static ingot_status capture(ig_cuda_ctx *c, instance *in, ig_err *err)
{
    ig_err cerr = {0};
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal);
    ingot_status st = IG_CU(&cerr, NULL, e);
    if (st == INGOT_OK) {
        st = launch_all(c, in, c->stream, true, &cerr);
        cudaError_t e2 = cudaStreamEndCapture(c->stream, &graph);
        if (st == INGOT_OK) st = IG_CU(&cerr, NULL, e2);
    }
    /* The executable graph's device memory is the CUDA driver's, not an ingot allocation: measured as
     * the free memory it takes at instantiation and upload (another thread allocating meanwhile would
     * blur the figure; the capture happens once per shape). */
    size_t free0 = 0, free1 = 0, total = 0;
    bool measured = st == INGOT_OK && cudaMemGetInfo(&free0, &total) == cudaSuccess;
    if (st == INGOT_OK) st = IG_CU(&cerr, NULL, cudaGraphInstantiate(&in->exec, graph, 0));
    if (st == INGOT_OK) st = IG_CU(&cerr, NULL, cudaGraphUpload(in->exec, c->stream));
    if (st == INGOT_OK && measured) st = IG_CU(&cerr, NULL, cudaStreamSynchronize(c->stream));
    if (st == INGOT_OK && measured && cudaMemGetInfo(&free1, &total) == cudaSuccess)
        in->graph_bytes = free0 > free1 ? free0 - free1 : 0;
    if (st != INGOT_OK) {
        if (graph) cudaGraphDestroy(graph);
        in->exec = NULL;
        in->capture_failed = true;
        snprintf(in->fallback, sizeof in->fallback, "%.250s", cerr.msg);
        cudaGetLastError(); /* a failed capture is not a device fault: clear it */
        ig__log(INGOT_LOG_WARN, "CUDA graph capture failed, running step by step: %s", cerr.msg);
        (void)err;
        return INGOT_OK;
    }
    in->graph = graph;
    in->captured = true;
    c->graph_captures++;
    for (int32_t t = 0; t < in->prog.n_tensors; t++)
        if (io_tensor(&in->prog, t)) in->baked[t] = in->tptr[t];
    return INGOT_OK;
}

/* Point the graph's input/output copies at the current pointers. */
static ingot_status patch_io(ig_cuda_ctx *c, instance *in, ig_err *err)
{
    ig_cu_prog *p = &in->prog;
    bool changed = false;
    for (int32_t t = 0; t < p->n_tensors && !changed; t++)
        if (io_tensor(p, t) && in->baked[t] != in->tptr[t]) changed = true;
    if (!changed) return INGOT_OK;
    for (int32_t s = 0; s < p->n_steps; s++) {
        const ig_cu_step *st = &p->steps[s];
        if (!st->io_patch || !in->io_node[s]) continue;
        ig_ew_args a = st->u.ew.args;
        a.out = in->tptr[st->u.ew.out];
        for (int i = 0; i < st->u.ew.n_in; i++) a.in[i] = in->tptr[st->u.ew.in[i]];
        struct cudaKernelNodeParams kp;
        struct {
            ig_ew_args a;
            char extra[16];
        } storage;
        void *argp[2];
        ingot_cuda_ew_node_params(&a, &kp, &storage, argp);
        char lbl[256];
        ingot_status r = IG_CU(err, label_of(p, st, lbl, sizeof lbl),
                               cudaGraphExecKernelNodeSetParams(in->exec, in->io_node[s], &kp));
        if (r != INGOT_OK) return r;
        c->graph_updates++;
    }
    for (int32_t t = 0; t < p->n_tensors; t++)
        if (io_tensor(p, t)) in->baked[t] = in->tptr[t];
    return INGOT_OK;
}

static ingot_status run_instance(ig_cuda_ctx *c, instance *in, cudaStream_t stream, ig_err *err)
{
    ingot_status st;
    if (!c->graphs || in->capture_failed || c->sync_debug) {
        st = launch_all(c, in, stream, false, err);
    } else if (!in->captured) {
        /* first run of this shape: run it (loading every module), then capture it for the next runs */
        st = launch_all(c, in, stream, false, err);
        if (st == INGOT_OK) st = capture(c, in, err);
    } else {
        st = patch_io(c, in, err);
        if (st == INGOT_OK) st = IG_CU(err, NULL, cudaGraphLaunch(in->exec, stream));
    }
    if (st != INGOT_OK) step_fail(c, in, NULL, st, err);
    return st;
}

static instance *current(ig_cuda_ctx *c, ig_err *err)
{
    if (c->failed) {
        ig__errf(err, c->fail_status ? c->fail_status : INGOT_ERR_DEVICE_FATAL,
                 "the context failed in an earlier run and cannot be used; destroy it");
        return NULL;
    }
    if (c->cur < 0) {
        ig__errf(err, INGOT_ERR_INVALID_ARG, "the context has no prepared shape: bind the inputs' shapes first");
        return NULL;
    }
    return c->inst[c->cur];
}

ingot_status ig__cuda_ctx_enqueue(ig_cuda_ctx *c, const void *const *inputs, void *const *outputs, void *stream,
                                  ig_err *err)
{
    /* a device that cannot even be selected (a sticky fault) leaves the context unusable, as a fault in
     * a step does: later calls say so instead of trying again */
    if (set_device(c->e->o.device, err) != INGOT_OK) return step_fail(c, NULL, NULL, err->status, err);
    instance *in = current(c, err);
    if (!in) return err->status;
    ig_cu_prog *p = &in->prog;
    for (int32_t i = 0; i < p->n_inputs; i++)
        if (p->in_tensor[i] >= 0) in->tptr[p->in_tensor[i]] = (void *)inputs[i];
    for (int32_t j = 0; j < p->n_outputs; j++) in->tptr[p->out_tensor[j]] = outputs[j];
    return run_instance(c, in, (cudaStream_t)stream, err);
}

ingot_status ig__cuda_ctx_run_host(ig_cuda_ctx *c, const void *const *inputs, ig_err *err)
{
    if (set_device(c->e->o.device, err) != INGOT_OK) return step_fail(c, NULL, NULL, err->status, err);
    instance *in = current(c, err);
    if (!in) return err->status;
    ig_cu_prog *p = &in->prog;
    ingot_status st;
    for (int32_t i = 0; i < p->n_inputs; i++) {
        if (p->in_tensor[i] < 0) continue;
        void *dst = buf_base(c, p, in->staging_in[i]);
        size_t bytes = p->bufs[in->staging_in[i]].bytes;
        if (bytes &&
            (st = IG_CU(err, NULL, cudaMemcpyAsync(dst, inputs[i], bytes, cudaMemcpyHostToDevice, c->stream))) !=
                INGOT_OK)
            return st == INGOT_ERR_DEVICE_FATAL ? step_fail(c, in, NULL, st, err) : st; /* sticky: unusable */
        in->tptr[p->in_tensor[i]] = dst;
    }
    for (int32_t j = 0; j < p->n_outputs; j++) in->tptr[p->out_tensor[j]] = buf_base(c, p, in->staging_out[j]);
    if ((st = run_instance(c, in, c->stream, err)) != INGOT_OK) return st;
    for (int32_t j = 0; j < p->n_outputs; j++) {
        size_t bytes = p->bufs[in->staging_out[j]].bytes;
        if (bytes && (st = IG_CU(err, NULL,
                                 cudaMemcpyAsync(in->host_out[j], buf_base(c, p, in->staging_out[j]), bytes,
                                                 cudaMemcpyDeviceToHost, c->stream))) != INGOT_OK)
            return st == INGOT_ERR_DEVICE_FATAL ? step_fail(c, in, NULL, st, err) : st;
    }
    st = IG_CU(err, NULL, cudaStreamSynchronize(c->stream));
    if (st != INGOT_OK) {
        c->failed = true;
        c->fail_status = st;
        ig__err_prefix(err, "a fault during the run, detected at the stream synchronisation (build with "
                            "cuda_sync_debug = 1, or set INGOT_CUDA_SYNC=1, to name the node)");
    }
    return st;
}

ingot_status ig__cuda_ctx_output_shape(const ig_cuda_ctx *c, int32_t j, int32_t *rank, int64_t *dims,
                                       ingot_dtype *dtype, size_t *bytes)
{
    if (c->cur < 0) return INGOT_ERR_INVALID_ARG;
    const instance *in = c->inst[c->cur];
    if (j < 0 || j >= in->prog.n_outputs) return INGOT_ERR_INVALID_ARG;
    const ig_cu_tensor *t = &in->prog.tensors[in->prog.out_tensor[j]];
    *rank = t->rank;
    for (int32_t k = 0; k < t->rank; k++) dims[k] = t->dims[k];
    *dtype = t->dtype;
    *bytes = ig__cu_tensor_numel(t) * ingot_dtype_size(t->dtype);
    return INGOT_OK;
}

const void *ig__cuda_ctx_host_output(const ig_cuda_ctx *c, int32_t j, int32_t *rank, int64_t *dims, ingot_dtype *dtype,
                                     size_t *bytes)
{
    if (ig__cuda_ctx_output_shape(c, j, rank, dims, dtype, bytes) != INGOT_OK) return NULL;
    return c->inst[c->cur]->host_out[j];
}

void ig__cuda_ctx_stats(const ig_cuda_ctx *c, ig_cuda_stats *out)
{
    memset(out, 0, sizeof *out);
    out->weights_bytes = c->e->w.bytes;
    out->arena_bytes = c->arena_bytes;
    out->graph_enabled = c->graphs;
    out->graph_updates = c->graph_updates;
    out->graph_captures = c->graph_captures;
    out->n_instances = c->n_inst;
    if (c->cur < 0) return;
    const instance *in = c->inst[c->cur];
    out->workspace_bytes = in->workspace_max;
    out->activation_lb_bytes = in->lower_bound;
    out->no_reuse_bytes = in->no_reuse;
    out->const_bytes = in->const_bytes;
    out->n_steps = in->prog.n_steps;
    out->n_nodes_fused = in->prog.n_fused;
    out->graph_captured = in->captured;
    out->graph_bytes = in->captured ? in->graph_bytes : 0;
    snprintf(out->graph_fallback, sizeof out->graph_fallback, "%s", in->fallback);
    out->prepare_ms = in->prepare_ms;
    out->tune_ms = in->tune_ms;
}

const char *ig__cu_step_kind_name(int kind)
{
    static const char *const names[] = {
#define IG_CU_X_(name, label) label,
        IG_CU_STEP_KINDS(IG_CU_X_)
#undef IG_CU_X_
    };
    return kind >= 0 && kind < IG_ST_KIND_COUNT ? names[kind] : "?";
}

int64_t ig__cuda_ctx_step_algos(ig_cuda_ctx *c, char (*algo)[IG_CU_ALGO_DESC], int64_t max, ig_err *err)
{
    instance *in = current(c, err);
    if (!in) return -1;
    const ig_cu_prog *p = &in->prog;
    int64_t n = p->n_steps < max ? p->n_steps : max;
    for (int64_t k = 0; k < n; k++) {
        const ig_cu_step *s = &p->steps[k];
        const char *tr = s->kind == IG_ST_EW ? ingot_cuda_ew_transpose_form(&s->u.ew.args) : NULL;
        algo[k][0] = '\0';
        if (s->kind == IG_ST_EW && s->u.ew.jit)
            snprintf(algo[k], IG_CU_ALGO_DESC, "generated kernel (NVRTC)");
        else if (tr)
            snprintf(algo[k], IG_CU_ALGO_DESC, "transposing copy (%s)", tr);
        else if (s->kind == IG_ST_CONV)
            ig__cu_conv_describe(s, algo[k], IG_CU_ALGO_DESC);
        else if (s->kind == IG_ST_GEMM)
            ig__cu_gemm_describe(s, algo[k], IG_CU_ALGO_DESC);
    }
    return n;
}

/* The steps with an event recorded after each, captured as one CUDA Graph (event record nodes): replayed,
 * ev[k] to ev[k + 1] is step k's device time with no host work inside it. Timed on the stream instead,
 * a step's interval held the library's host work before its kernel (cuDNN's legacy calls: tens of
 * microseconds), so ResNet-50's steps summed to 34% more than the step-by-step run at batch 32.
 * NULL when the steps do not capture: the stream passes time them then. */
static cudaGraphExec_t profile_graph(ig_cuda_ctx *c, instance *in, int64_t n, cudaEvent_t *ev, cudaStream_t s)
{
    if (!c->graphs || in->capture_failed) return NULL;
    ig_cu_prog *p = &in->prog;
    ig_err quiet = {0};
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    /* External: a plain record inside a capture only orders streams within the graph and is never
     * recorded at replay (the pass then found the events unrecorded and fell back to the stream). */
    bool ok = cudaEventRecordWithFlags(ev[0], s, cudaEventRecordExternal) == cudaSuccess;
    for (int64_t k = 0; k < n && ok; k++)
        ok = launch_step(c, in, &p->steps[k], s, &quiet) == INGOT_OK &&
             cudaEventRecordWithFlags(ev[k + 1], s, cudaEventRecordExternal) == cudaSuccess;
    ok = cudaStreamEndCapture(s, &g) == cudaSuccess && ok && g;
    if (ok && cudaGraphInstantiate(&x, g, 0) != cudaSuccess) x = NULL;
    if (g) cudaGraphDestroy(g);
    cudaGetLastError(); /* a refused capture is not a device fault */
    return x;
}

/* One pass over the steps, as graph x's replay or (x NULL) on the stream with an event after each step:
 * ev[k] to ev[k + 1] is step k. */
static ingot_status profile_pass(ig_cuda_ctx *c, instance *in, cudaGraphExec_t x, int64_t n, cudaEvent_t *ev,
                                 cudaStream_t s, float *ms, ig_err *err)
{
    ig_cu_prog *p = &in->prog;
    ingot_status st = INGOT_OK;
    if (x) {
        st = IG_CU(err, NULL, cudaGraphLaunch(x, s));
    } else {
        st = IG_CU(err, NULL, cudaEventRecord(ev[0], s));
        for (int64_t k = 0; k < n && st == INGOT_OK; k++) {
            st = launch_step(c, in, &p->steps[k], s, err);
            if (st == INGOT_OK) st = IG_CU(err, NULL, cudaEventRecord(ev[k + 1], s));
        }
    }
    ingot_status sync = IG_CU(st == INGOT_OK ? err : &(ig_err){0}, NULL, cudaStreamSynchronize(s));
    if (st == INGOT_OK) st = sync;
    for (int64_t k = 0; k < n && st == INGOT_OK; k++)
        st = IG_CU(err, NULL, cudaEventElapsedTime(&ms[k], ev[k], ev[k + 1]));
    return st;
}

static int by_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Untimed passes for at least PROFILE_WARM_MS (an idle GPU runs its first passes at low clocks: one cold
 * pass of ResNet-50 at batch 1 took 3.3 ms against 0.4), then the median of PROFILE_PASSES per step. */
#define PROFILE_WARM_MS 20.0
#define PROFILE_PASSES  5

int64_t ig__cuda_ctx_profile(ig_cuda_ctx *c, const void *const *inputs, void *const *outputs, void *stream, int64_t max,
                             char (*labels)[96], double *ms, ig_err *err)
{
    instance *in = current(c, err);
    if (!in) return -1;
    ig_cu_prog *p = &in->prog;
    cudaStream_t s = (cudaStream_t)stream;
    for (int32_t i = 0; i < p->n_inputs; i++)
        if (p->in_tensor[i] >= 0) in->tptr[p->in_tensor[i]] = (void *)inputs[i];
    for (int32_t j = 0; j < p->n_outputs; j++) in->tptr[p->out_tensor[j]] = outputs[j];
    int64_t n = p->n_steps < max ? p->n_steps : max;
    cudaEvent_t *ev = ig__calloc((size_t)n + 1, sizeof(cudaEvent_t));
    float *t = ig__calloc((size_t)(n + 1) * PROFILE_PASSES, sizeof(float)), one[PROFILE_PASSES];
    if (!ev || !t) {
        ig__free(ev);
        ig__free(t);
        ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
        return -1;
    }
    int64_t made = 0;
    ingot_status st = INGOT_OK;
    for (; made <= n && st == INGOT_OK; made++) st = IG_CU(err, NULL, cudaEventCreate(&ev[made]));
    cudaGraphExec_t x = st == INGOT_OK ? profile_graph(c, in, n, ev, s) : NULL;
    if (x && profile_pass(c, in, x, n, ev, s, t, &(ig_err){0}) != INGOT_OK) { /* events in a graph not timed */
        cudaGraphExecDestroy(x);
        x = NULL;
        cudaGetLastError();
    }
    if (!x && st == INGOT_OK && c->graphs && !in->capture_failed)
        ig__log(INGOT_LOG_WARN,
                "profile: the steps did not replay as a graph; timed on the stream, host work included");
    double t0 = ig__now_ms();
    do
        if (st == INGOT_OK) st = profile_pass(c, in, x, n, ev, s, t, err);
    while (st == INGOT_OK && ig__now_ms() - t0 < PROFILE_WARM_MS);
    for (int r = 0; r < PROFILE_PASSES && st == INGOT_OK; r++)
        st = profile_pass(c, in, x, n, ev, s, t + r * (n + 1), err);
    if (x) cudaGraphExecDestroy(x);
    char lbl[256];
    for (int64_t k = 0; k < n && st == INGOT_OK; k++) {
        for (int r = 0; r < PROFILE_PASSES; r++) one[r] = t[r * (n + 1) + k];
        qsort(one, PROFILE_PASSES, sizeof one[0], by_float);
        ms[k] = one[PROFILE_PASSES / 2];
        const ig_cu_step *step = &p->steps[k];
        snprintf(labels[k], 96, "%-9s %.80s", ig__cu_step_kind_name(step->kind), label_of(p, step, lbl, sizeof lbl));
    }
    for (int64_t i = 0; i < made; i++) cudaEventDestroy(ev[i]);
    ig__free(ev);
    ig__free(t);
    return st == INGOT_OK ? n : -1;
}
