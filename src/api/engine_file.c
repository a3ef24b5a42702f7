/*
 * engine_file.c -- ingot_engine_save and ingot_engine_load: an engine written out once and loaded in
 * milliseconds (docs/ENGINE_FILE.md). The container (src/engine/efile.c) holds these sections:
 *
 *   FPRT  the build machine's fingerprint: what must match here (format, ingot version, backend, CPU
 *         architecture; for CUDA engines the GPU's SM architecture, cuDNN and cuBLASLt versions) and
 *         what is only shown (GPU name, driver, CUDA runtime)
 *   OPTS  the build options as resolved, each input's default shape and profile, the source model
 *   GRPH  the optimized graph as an ONNX ModelProto (src/onnx/export.c), read back by the importer
 *   WGHT  the initializers' bytes, 64-byte aligned, referenced in place from the mapping
 *   PROV  what each node of the optimized graph replaced, and the optimizer's report
 *   PLAN  the memory plans at the default shapes and at the profiles' max shapes
 *   ALGO  the algorithms the CUDA backend chose (CUDA engines; opaque to this file)
 *
 * Loading trusts nothing: the container checks offsets, sizes and CRCs; the graph goes through the
 * importer, the verifier and inference like any model; options go through the build's own checks;
 * every count is bounded by the bytes that hold it; the plans are re-planned and compared.
 */
#define _POSIX_C_SOURCE 200809L
#include "api_internal.h"

#include "../engine/efile.h"
#include "../plan/plan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>

#define STR_MAX 4096 /* any string of the metadata sections */

/* ---- fingerprint ----------------------------------------------------------------------------------- */

static void fp_add(ig_fp *fp, const char *key, bool must, const char *fmt, ...) IG_PRINTF(4, 5);
static void fp_add(ig_fp *fp, const char *key, bool must, const char *fmt, ...)
{
    if (fp->n >= IG_FP_MAX) return;
    ig_fp_entry *x = &fp->e[fp->n++];
    snprintf(x->key, sizeof x->key, "%s", key);
    x->must = must;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->value, sizeof x->value, fmt, ap);
    va_end(ap);
}

/* This machine's fingerprint for an engine of that backend (device: the CUDA device). */
static ingot_status fingerprint(ingot_backend backend, int device, ig_fp *fp, ig_err *err)
{
    memset(fp, 0, sizeof *fp);
    fp_add(fp, "ingot", true, "%d.%d.%d", INGOT_VERSION_MAJOR, INGOT_VERSION_MINOR, INGOT_VERSION_PATCH);
    fp_add(fp, "backend", true, "%s", backend == INGOT_BACKEND_CUDA ? "cuda" : "cpu");
    struct utsname u;
    fp_add(fp, "arch", true, "%s", uname(&u) == 0 ? u.machine : "unknown");
    if (backend == INGOT_BACKEND_CUDA) return ig__api_cuda_fingerprint(device, fp, err);
    return INGOT_OK;
}

static void fp_write(const ig_fp *fp, ig_wbuf *b)
{
    ig__wbuf_u32(b, (uint32_t)fp->n);
    for (int i = 0; i < fp->n; i++) {
        ig__wbuf_str(b, fp->e[i].key);
        ig__wbuf_str(b, fp->e[i].value);
        ig__wbuf_u32(b, fp->e[i].must);
    }
}

static ingot_status fp_read(const ig_efile_sec *s, ig_fp *fp, ig_arena *tmp, ig_err *err)
{
    memset(fp, 0, sizeof *fp);
    ig_rbuf r;
    ig__rbuf_init(&r, s->data, s->size, "FPRT", err);
    uint32_t n = ig__rbuf_count(&r, "entries", 12, IG_FP_MAX);
    for (uint32_t i = 0; i < n && !r.failed; i++) {
        ig_fp_entry *x = &fp->e[fp->n++];
        snprintf(x->key, sizeof x->key, "%s", ig__rbuf_str(&r, "key", sizeof x->key - 1, tmp));
        snprintf(x->value, sizeof x->value, "%s", ig__rbuf_str(&r, "value", sizeof x->value - 1, tmp));
        x->must = ig__rbuf_range(&r, "must", 0, 1) != 0;
    }
    return ig__rbuf_done(&r) ? INGOT_OK : err->status;
}

static const char *fp_get(const ig_fp *fp, const char *key)
{
    for (int i = 0; i < fp->n; i++)
        if (!strcmp(fp->e[i].key, key)) return fp->e[i].value;
    return NULL;
}

/* Every key the file says must match, compared with this machine; the message lists each difference. */
static ingot_status fp_check(const ig_fp *file, const ig_fp *here, ig_err *err)
{
    char diff[IG_ERRMSG_MAX] = "";
    size_t n = 0;
    for (int i = 0; i < file->n; i++) {
        const ig_fp_entry *x = &file->e[i];
        const char *mine = fp_get(here, x->key);
        if (!x->must || (mine && !strcmp(mine, x->value))) continue;
        n += (size_t)snprintf(diff + n, n < sizeof diff ? sizeof diff - n : 0, "%s%s: built with %s, this machine %s",
                              n ? "; " : "", x->key, x->value, mine ? mine : "(none)");
        if (n >= sizeof diff) break;
    }
    if (!diff[0]) return INGOT_OK;
    return ig__errf(err, INGOT_ERR_ENGINE_MISMATCH,
                    "the engine file was built for another machine or software version (%s); rebuild it from its "
                    "ONNX model (ingot build, or --rebuild-on-mismatch)",
                    diff);
}

/* ---- options, default shapes and profiles ----------------------------------------------------------- */

static void put_dims(ig_wbuf *b, int32_t rank, const int64_t *dims)
{
    ig__wbuf_u32(b, (uint32_t)(rank + 1)); /* 0: rank unknown */
    for (int32_t k = 0; k < rank; k++) ig__wbuf_i64(b, dims[k]);
}

static int32_t get_dims(ig_rbuf *r, const char *field, int64_t *dims)
{
    int32_t rank = (int32_t)ig__rbuf_range(r, field, 0, IG_MAX_RANK + 1) - 1;
    for (int32_t k = 0; k < rank && !r->failed; k++) dims[k] = ig__rbuf_i64(r, field);
    return r->failed ? -1 : rank;
}

static void opts_write(const ingot_engine *e, ig_wbuf *b)
{
    const ingot_build_options *o = &e->opts;
    ig__wbuf_u32(b, e->cuda ? INGOT_BACKEND_CUDA : INGOT_BACKEND_CPU);
    ig__wbuf_u32(b, (uint32_t)o->precision);
    ig__wbuf_u64(b, o->workspace_limit);
    ig__wbuf_u32(b, (uint32_t)o->n_threads);
    ig__wbuf_u32(b, (uint32_t)o->optimize);
    ig__wbuf_str(b, o->disable_passes);
    ig__wbuf_u32(b, (uint32_t)o->device);
    const int flags[7] = {o->cuda_graphs,        o->cuda_tune,      o->cuda_sync_debug,      o->cuda_nhwc,
                          o->cuda_gelu_epilogue, o->cuda_attention, o->cuda_attention_kernel};
    for (int i = 0; i < 7; i++) ig__wbuf_u32(b, (uint32_t)flags[i]);
    ig__wbuf_u64(b, o->mem_limit);
    ig__wbuf_u32(b, (uint32_t)o->deterministic);
    ig__wbuf_u64(b, e->iopt.fold_max_bytes);
    ig__wbuf_str(b, e->source);
    ig__wbuf_u32(b, (uint32_t)e->n_inputs);
    for (int32_t i = 0; i < e->n_inputs; i++) {
        ig__wbuf_str(b, e->graph.values[e->graph.inputs[i]].name);
        const ig_shape *s = &e->default_shapes[i];
        int64_t d[IG_MAX_RANK];
        for (int32_t k = 0; k < s->rank; k++) d[k] = s->d[k].n;
        put_dims(b, s->rank, d);
        const ig_profile *p = &e->profiles[i];
        ig__wbuf_u32(b, p->rank >= 0);
        if (p->rank >= 0) {
            put_dims(b, p->rank, p->min);
            put_dims(b, p->rank, p->opt);
            put_dims(b, p->rank, p->max);
        }
    }
}

/* The options record into o (checked as ingot_engine_build checks a caller's), the rest kept in r for
 * opts_read_inputs once the graph is there. */
static ingot_status opts_read(ig_rbuf *r, ingot_build_options *o, ingot_backend *backend, size_t *fold_max,
                              const char **source, ig_arena *arena, ig_err *err)
{
    *o = ingot_build_options_default();
    *backend = (ingot_backend)ig__rbuf_range(r, "backend", INGOT_BACKEND_CPU, INGOT_BACKEND_CUDA);
    o->precision = (ingot_dtype)ig__rbuf_range(r, "precision", 0, INGOT_DTYPE_COUNT);
    o->workspace_limit = (size_t)ig__rbuf_u64(r, "workspace_limit");
    o->n_threads = (int)ig__rbuf_range(r, "n_threads", 0, 1024);
    o->optimize = (int)ig__rbuf_range(r, "optimize", 0, 1);
    o->disable_passes = ig__rbuf_str(r, "disable_passes", STR_MAX, arena);
    o->device = (int)ig__rbuf_range(r, "device", 0, 1 << 20);
    int *flags[7] = {&o->cuda_graphs,        &o->cuda_tune,      &o->cuda_sync_debug,      &o->cuda_nhwc,
                     &o->cuda_gelu_epilogue, &o->cuda_attention, &o->cuda_attention_kernel};
    for (int i = 0; i < 7; i++) *flags[i] = (int)ig__rbuf_range(r, "cuda switches", 0, 3);
    o->mem_limit = (size_t)ig__rbuf_u64(r, "mem_limit");
    o->deterministic = (int)ig__rbuf_range(r, "deterministic", 0, 1);
    *fold_max = (size_t)ig__rbuf_u64(r, "fold_max_bytes");
    if (!r->failed && (*fold_max == 0 || *fold_max > ((size_t)1 << 30))) /* what inference may compute at load */
        ig__rbuf_fail(r, "fold_max_bytes", "%zu is outside [1, 1 GiB]", *fold_max);
    *source = ig__rbuf_str(r, "source", STR_MAX, arena);
    if (r->failed) return err->status;
    o->backend = *backend;
    if (ig__api_check_options(o, err) != INGOT_OK) {
        ig__err_prefix(err, "engine file, section OPTS");
        err->status = INGOT_ERR_ENGINE_FILE;
        return err->status;
    }
    return INGOT_OK;
}

/* One input's record of OPTS: its default shape and its profile (rank -1: none). */
typedef struct stored_input {
    const char *name;
    int32_t rank;
    int64_t dims[IG_MAX_RANK];
    int32_t prank;
    int64_t mn[IG_MAX_RANK], op[IG_MAX_RANK], mx[IG_MAX_RANK];
} stored_input;

static ingot_status opts_parse_inputs(ig_rbuf *r, ig_arena *tmp, stored_input **out, uint32_t *count, ig_err *err)
{
    uint32_t n = ig__rbuf_count(r, "inputs", 9, INT32_MAX);
    stored_input *in = r->failed ? NULL : ig__arena_array(tmp, (size_t)n + 1, sizeof *in);
    if (!r->failed && !in) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory reading the engine file");
    for (uint32_t i = 0; i < n && !r->failed; i++) {
        stored_input *x = &in[i];
        x->name = ig__rbuf_str(r, "input name", STR_MAX, tmp);
        x->rank = get_dims(r, "default shape", x->dims);
        for (int32_t k = 0; k < x->rank; k++)
            if (x->dims[k] < 0) ig__rbuf_fail(r, "default shape", "dim %d is %" PRId64, (int)k, x->dims[k]);
        x->prank = -1;
        if (ig__rbuf_range(r, "has profile", 0, 1)) {
            int32_t r1 = get_dims(r, "profile min", x->mn), r2 = get_dims(r, "profile opt", x->op),
                    r3 = get_dims(r, "profile max", x->mx);
            if (!r->failed && (r1 != r2 || r2 != r3 || r1 < 0))
                ig__rbuf_fail(r, "profile", "input '%s' has ranks %d/%d/%d", x->name, (int)r1, (int)r2, (int)r3);
            x->prank = r1;
        }
    }
    if (!ig__rbuf_done(r)) return err->status;
    *out = in;
    *count = n;
    return INGOT_OK;
}

static ingot_status opts_read_inputs(ig_rbuf *r, ingot_engine *e, ig_arena *tmp, ig_err *err)
{
    stored_input *in = NULL;
    uint32_t n = 0;
    ingot_status st = opts_parse_inputs(r, tmp, &in, &n, err);
    if (st != INGOT_OK) return st;
    if ((int32_t)n != e->n_inputs)
        return ig__errf(err, INGOT_ERR_ENGINE_FILE, "engine file, section OPTS: %" PRIu32 " inputs, the graph has %d",
                        n, (int)e->n_inputs);
    for (int32_t i = 0; i < e->n_inputs; i++) {
        const stored_input *x = &in[i];
        const ig_value *v = &e->graph.values[e->graph.inputs[i]];
        if (strcmp(x->name, v->name) != 0)
            return ig__errf(err, INGOT_ERR_ENGINE_FILE,
                            "engine file, section OPTS: input %d is '%s', the graph's is '%s'", (int)i, x->name,
                            v->name);
        ig_shape *s = &e->default_shapes[i];
        s->rank = x->rank;
        for (int32_t k = 0; k < x->rank; k++) s->d[k] = ig__dim_const(x->dims[k]);
        e->profiles[i].rank = -1;
        if (x->prank >= 0 && ig__api_set_profile(e, x->name, x->prank, x->mn, x->op, x->mx, err) != INGOT_OK) {
            ig__err_prefix(err, "engine file, section OPTS");
            err->status = INGOT_ERR_ENGINE_FILE;
            return err->status;
        }
    }
    return INGOT_OK;
}

/* ---- provenance and the optimizer's report ---------------------------------------------------------- */

static void prov_write(const ingot_engine *e, ig_wbuf *b)
{
    const ig_graph *g = &e->graph;
    ig__wbuf_u32(b, (uint32_t)g->n_nodes);
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ig_node *n = &g->nodes[i];
        ig__wbuf_str(b, n->pass);
        ig__wbuf_u32(b, (uint32_t)n->n_covers);
        for (int32_t k = 0; k < n->n_covers; k++) ig__wbuf_str(b, n->covers[k]);
    }
    const ig_opt_report *rep = &e->report;
    ig__wbuf_u32(b, (uint32_t)rep->n_passes);
    for (int32_t p = 0; p < rep->n_passes; p++) {
        const ig_opt_pass_report *r = &rep->passes[p];
        ig__wbuf_str(b, r->name);
        ig__wbuf_u32(b, r->skipped);
        ig__wbuf_u32(b, (uint32_t)r->n_rewrites);
        ig__wbuf_u32(b, (uint32_t)r->n_nodes_removed);
        ig__wbuf_u32(b, (uint32_t)r->n_removed_values);
        ig__wbuf_u64(b, e->removed_bytes ? e->removed_bytes[p] : 0);
        ig__wbuf_f64(b, r->ms);
    }
    ig__wbuf_u32(b, (uint32_t)rep->nodes_before);
    ig__wbuf_u32(b, (uint32_t)rep->nodes_after);
}

static ingot_status prov_read(const ig_efile_sec *s, ingot_engine *e, ig_err *err)
{
    ig_graph *g = &e->graph;
    ig_rbuf r;
    ig__rbuf_init(&r, s->data, s->size, "PROV", err);
    uint32_t n = ig__rbuf_count(&r, "nodes", 8, INT32_MAX);
    if (!r.failed && (int32_t)n != g->n_nodes)
        ig__rbuf_fail(&r, "nodes", "%" PRIu32 " nodes, the graph has %d", n, (int)g->n_nodes);
    for (int32_t i = 0; i < g->n_nodes && !r.failed; i++) {
        ig_node *nd = &g->nodes[i];
        const char *pass = ig__rbuf_str(&r, "pass", 64, &g->arena);
        nd->pass = pass[0] ? pass : NULL;
        uint32_t nc = ig__rbuf_count(&r, "covers", 4, INT32_MAX);
        if (nc && !(nd->covers = ig__arena_array(&g->arena, nc, sizeof(char *))))
            return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory reading the engine file");
        for (uint32_t k = 0; k < nc && !r.failed; k++) nd->covers[k] = ig__rbuf_str(&r, "covers", STR_MAX, &g->arena);
        nd->n_covers = r.failed ? 0 : (int32_t)nc;
    }
    ig_opt_report *rep = &e->report;
    uint32_t np = ig__rbuf_count(&r, "passes", 36, 1024);
    if (r.failed) return err->status;
    rep->passes = ig__calloc((size_t)np + 1, sizeof *rep->passes);
    e->removed_bytes = ig__calloc((size_t)np + 1, sizeof(size_t));
    if (!rep->passes || !e->removed_bytes)
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory reading the engine file");
    for (uint32_t p = 0; p < np && !r.failed; p++) {
        ig_opt_pass_report *x = &rep->passes[p];
        x->name = ig__rbuf_str(&r, "pass name", 64, &g->arena);
        x->skipped = ig__rbuf_range(&r, "skipped", 0, 1) != 0;
        x->n_rewrites = (int32_t)ig__rbuf_range(&r, "rewrites", 0, INT32_MAX);
        x->n_nodes_removed = (int32_t)ig__rbuf_u32(&r, "nodes removed");
        x->n_removed_values = (int32_t)ig__rbuf_range(&r, "tensors removed", 0, INT32_MAX);
        e->removed_bytes[p] = (size_t)ig__rbuf_u64(&r, "bytes removed");
        x->ms = ig__rbuf_f64(&r, "ms");
        rep->n_passes = (int32_t)p + 1;
    }
    rep->nodes_before = (int32_t)ig__rbuf_range(&r, "nodes before", 0, INT32_MAX);
    rep->nodes_after = (int32_t)ig__rbuf_range(&r, "nodes after", 0, INT32_MAX);
    return ig__rbuf_done(&r) ? INGOT_OK : err->status;
}

/* ---- memory plans ------------------------------------------------------------------------------------ */

/* The shapes the file keeps plans for: the default shapes, and the profiles' max shapes when any
 * input has a profile. */
static int32_t plan_shapes(const ingot_engine *e, ig_shape *shapes[2])
{
    memcpy(shapes[0], e->default_shapes, sizeof(ig_shape) * (size_t)e->n_inputs);
    bool any = false;
    for (int32_t i = 0; i < e->n_inputs; i++) {
        const ig_profile *p = &e->profiles[i];
        shapes[1][i] = e->default_shapes[i];
        if (p->rank < 0) continue;
        any = true;
        shapes[1][i].rank = p->rank;
        for (int32_t k = 0; k < p->rank; k++) shapes[1][i].d[k] = ig__dim_const(p->max[k]);
    }
    return any ? 2 : 1;
}

static ingot_status plan_at(const ingot_engine *e, const ig_shape *shapes, ig_api_instance *in, ig_plan *plan,
                            ig_err *err)
{
    ingot_status st = ig__api_instance_at(e, shapes, in, err);
    ig_plan_options po = ig__plan_options_default();
    if (st == INGOT_OK) st = ig__plan_graph(&in->g, &po, plan, err);
    return st;
}

/* What a plan is, in the file: the accounts, the step order, every planned tensor's kind and offset
 * (by name: value ids are the importer's), and each node's scratch. */
static void plan_write_one(const ig_graph *g, const ig_plan *p, ig_wbuf *b)
{
    ig__wbuf_u64(b, p->arena_bytes);
    ig__wbuf_u64(b, p->lower_bound);
    ig__wbuf_u64(b, p->no_reuse_bytes);
    ig__wbuf_u64(b, p->workspace_max);
    ig__wbuf_str(b, p->strategy);
    ig__wbuf_u32(b, (uint32_t)p->n_steps);
    for (int32_t s = 0; s < p->n_steps; s++) ig__wbuf_u32(b, (uint32_t)p->order[s]);
    /* tensors in the order the steps produce them (value ids differ from one import to the next) */
    uint32_t nv = 0;
    for (int32_t v = 0; v < p->n_values; v++) nv += p->values[v].kind != IG_PLAN_NONE;
    ig__wbuf_u32(b, nv);
    for (int32_t s = 0; s < p->n_steps; s++) {
        const ig_node *n = &g->nodes[p->order[s]];
        for (int32_t j = 0; j < n->n_outputs; j++) {
            int32_t v = n->outputs[j];
            if (v < 0 || p->values[v].kind == IG_PLAN_NONE) continue;
            ig__wbuf_str(b, g->values[v].name);
            ig__wbuf_u32(b, p->values[v].kind);
            ig__wbuf_u64(b, p->values[v].offset);
        }
    }
    uint32_t ns = 0;
    for (int32_t k = 0; k < p->n_nodes; k++) ns += p->scratch_bytes[k] != 0;
    ig__wbuf_u32(b, ns);
    for (int32_t k = 0; k < p->n_nodes; k++) {
        if (!p->scratch_bytes[k]) continue;
        ig__wbuf_u32(b, (uint32_t)k);
        ig__wbuf_u64(b, p->scratch_offset[k]);
        ig__wbuf_u64(b, p->scratch_bytes[k]);
    }
}

static ingot_status plans_write(const ingot_engine *e, ig_wbuf *b, ig_err *err)
{
    ig_shape *shapes[2] = {ig__calloc((size_t)e->n_inputs + 1, sizeof(ig_shape)),
                           ig__calloc((size_t)e->n_inputs + 1, sizeof(ig_shape))};
    ingot_status st = INGOT_OK;
    if (!shapes[0] || !shapes[1]) st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    int32_t n = st == INGOT_OK ? plan_shapes(e, shapes) : 0;
    /* every plan, or none: where the shapes alone do not decide the sizes (an input whose values do,
     * bound only at run time), there is nothing to plan ahead and contexts plan when they run */
    ig_wbuf all = {0};
    int32_t made = 0;
    for (int32_t j = 0; j < n && st == INGOT_OK; j++) {
        ig_api_instance in;
        ig_plan plan = {0};
        if ((st = plan_at(e, shapes[j], &in, &plan, err)) == INGOT_OK) {
            for (int32_t i = 0; i < e->n_inputs; i++) {
                int64_t d[IG_MAX_RANK];
                for (int32_t k = 0; k < shapes[j][i].rank; k++) d[k] = shapes[j][i].d[k].n;
                put_dims(&all, shapes[j][i].rank, d);
            }
            plan_write_one(&in.g, &plan, &all);
            made++;
        } else if (st == INGOT_ERR_MODEL_SHAPE) {
            ig__err_clear(err);
            st = INGOT_OK;
            made = 0;
            n = 0; /* none */
        } else {
            ig__err_prefix(err, "planning the engine file's %s shapes", j ? "max" : "default");
        }
        ig__plan_free(&plan);
        ig__api_instance_free(&in);
    }
    ig__wbuf_u32(b, (uint32_t)made);
    if (made) ig__wbuf_put(b, all.p, all.n);
    if (all.oom) b->oom = true;
    ig__wbuf_free(&all);
    ig__free(shapes[0]);
    ig__free(shapes[1]);
    return st;
}

/* Read one stored plan and compare it with what this build plans at its shapes: the layout the file
 * promises is the one every context will use, verified (ig__plan_check) and never trusted blindly. */
static ingot_status plan_verify_one(ig_rbuf *r, const ingot_engine *e, const ig_shape *shapes, ig_arena *tmp,
                                    ig_err *err)
{
    /* the plan must be for the shapes the options say (so a forged shape cannot steer the planner) */
    for (int32_t i = 0; i < e->n_inputs && !r->failed; i++) {
        int64_t d[IG_MAX_RANK];
        int32_t rank = get_dims(r, "shape", d);
        bool same = rank == shapes[i].rank;
        for (int32_t k = 0; k < rank && same; k++) same = d[k] == shapes[i].d[k].n;
        if (!r->failed && !same) ig__rbuf_fail(r, "shape", "input %d: not the shape the options plan for", (int)i);
    }
    if (r->failed) return err->status;
    ig_api_instance in;
    ig_plan p = {0};
    ingot_status st = plan_at(e, shapes, &in, &p, err);
    if (st == INGOT_OK) st = ig__plan_check(&in.g, &p, err);
    if (st != INGOT_OK) {
        ig__err_prefix(err, "engine file, section PLAN: planning at the stored shapes");
        goto out;
    }
    const ig_graph *g = &in.g;
    uint64_t acc[4] = {ig__rbuf_u64(r, "arena bytes"), ig__rbuf_u64(r, "lower bound"),
                       ig__rbuf_u64(r, "no-reuse bytes"), ig__rbuf_u64(r, "workspace")};
    const char *strategy = ig__rbuf_str(r, "strategy", 64, tmp);
    const uint64_t mine[4] = {p.arena_bytes, p.lower_bound, p.no_reuse_bytes, p.workspace_max};
    static const char *what[4] = {"arena bytes", "lower bound", "no-reuse bytes", "workspace"};
    for (int k = 0; k < 4 && !r->failed; k++)
        if (acc[k] != mine[k]) ig__rbuf_fail(r, what[k], "%" PRIu64 ", this build plans %" PRIu64, acc[k], mine[k]);
    if (!r->failed && strcmp(strategy, p.strategy ? p.strategy : "") != 0)
        ig__rbuf_fail(r, "strategy", "'%s', this build plans '%s'", strategy, p.strategy ? p.strategy : "");
    uint32_t ns = ig__rbuf_count(r, "steps", 4, INT32_MAX);
    if (!r->failed && (int32_t)ns != p.n_steps)
        ig__rbuf_fail(r, "steps", "%" PRIu32 ", this build plans %d", ns, (int)p.n_steps);
    for (uint32_t s = 0; s < ns && !r->failed; s++)
        if (ig__rbuf_u32(r, "order") != (uint32_t)p.order[s]) ig__rbuf_fail(r, "order", "differs at step %u", s);
    uint32_t nv = ig__rbuf_count(r, "tensors", 16, INT32_MAX), planned = 0;
    for (int32_t v = 0; v < p.n_values; v++) planned += p.values[v].kind != IG_PLAN_NONE;
    if (!r->failed && nv != planned)
        ig__rbuf_fail(r, "tensors", "%" PRIu32 " planned tensors, this build plans %" PRIu32, nv, planned);
    for (uint32_t k = 0; k < nv && !r->failed; k++) {
        const char *name = ig__rbuf_str(r, "tensor name", STR_MAX, tmp);
        uint32_t kind = ig__rbuf_u32(r, "kind");
        uint64_t off = ig__rbuf_u64(r, "offset");
        int32_t v = r->failed ? -1 : ig__graph_find(g, name);
        if (!r->failed && (v < 0 || p.values[v].kind != kind || p.values[v].offset != off))
            ig__rbuf_fail(r, "tensor", "'%s' at offset %" PRIu64 " (%s): this build plans %s", name, off,
                          kind <= IG_PLAN_INPLACE ? ig__plan_kind_name((ig_plan_kind)kind) : "?",
                          v < 0 ? "no such tensor" : "another place");
    }
    uint32_t nsc = ig__rbuf_count(r, "scratch", 20, INT32_MAX);
    for (uint32_t k = 0; k < nsc && !r->failed; k++) {
        uint32_t node = ig__rbuf_u32(r, "scratch node");
        uint64_t off = ig__rbuf_u64(r, "scratch offset"), bytes = ig__rbuf_u64(r, "scratch bytes");
        if (!r->failed &&
            (node >= (uint32_t)p.n_nodes || p.scratch_offset[node] != off || p.scratch_bytes[node] != bytes))
            ig__rbuf_fail(r, "scratch",
                          "node %" PRIu32 ": %" PRIu64 " bytes at %" PRIu64 " differ from this build's plan", node,
                          bytes, off);
    }
    st = r->failed ? err->status : INGOT_OK;
out:
    ig__plan_free(&p);
    ig__api_instance_free(&in);
    return st;
}

static ingot_status plans_verify(const ig_efile_sec *s, const ingot_engine *e, ig_arena *tmp, ig_err *err)
{
    ig_rbuf r;
    ig__rbuf_init(&r, s->data, s->size, "PLAN", err);
    ig_shape *shapes[2] = {ig__calloc((size_t)e->n_inputs + 1, sizeof(ig_shape)),
                           ig__calloc((size_t)e->n_inputs + 1, sizeof(ig_shape))};
    ingot_status st = INGOT_OK;
    if (!shapes[0] || !shapes[1]) st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    uint32_t want = st == INGOT_OK ? (uint32_t)plan_shapes(e, shapes) : 0;
    uint32_t n = ig__rbuf_range(&r, "plans", 0, want); /* all, or none (sizes decided only at run time) */
    if (!r.failed && n && n != want)
        ig__rbuf_fail(&r, "plans", "%" PRIu32 " plans, the options call for %" PRIu32, n, want);
    for (uint32_t j = 0; j < n && !r.failed && st == INGOT_OK; j++) st = plan_verify_one(&r, e, shapes[j], tmp, err);
    ig__free(shapes[0]);
    ig__free(shapes[1]);
    if (st != INGOT_OK) return st;
    return ig__rbuf_done(&r) ? INGOT_OK : err->status;
}

/* ---- save ---------------------------------------------------------------------------------------------- */

/* The sections of e's file, each in its own buffer (the weights are copied once, into theirs). */
typedef struct parts {
    ig_wbuf fp, opts, graph, weights, prov, plans, algos;
    ig_efile_sec sec[7];
} parts;

static void parts_free(parts *p)
{
    ig_wbuf *all[] = {&p->fp, &p->opts, &p->graph, &p->weights, &p->prov, &p->plans, &p->algos};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ig__wbuf_free(all[i]);
}

static ingot_status make_parts(ingot_engine *e, parts *p, ig_err *err)
{
    memset(p, 0, sizeof *p);
    ig_fp f;
    ingot_backend backend = e->cuda ? INGOT_BACKEND_CUDA : INGOT_BACKEND_CPU;
    ingot_status st = fingerprint(backend, e->opts.device, &f, err);
    if (st == INGOT_OK) {
        fp_write(&f, &p->fp);
        opts_write(e, &p->opts);
        prov_write(e, &p->prov);
        ig_onnx_export_options xo = {.weights = &p->weights, .inline_max = 64};
        st = ig__onnx_export(&e->graph, &xo, &p->graph, err);
    }
    if (st == INGOT_OK) st = plans_write(e, &p->plans, err);
    if (st == INGOT_OK && e->cuda) st = ig__api_cuda_algos_save(e, &p->algos, err);
    if (st == INGOT_OK && (p->fp.oom || p->opts.oom || p->weights.oom || p->prov.oom || p->plans.oom || p->algos.oom))
        st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory writing the engine file");
    if (st != INGOT_OK) {
        parts_free(p);
        return st;
    }
    const ig_efile_sec secs[7] = {{IG_SEC_FINGERPRINT, 8, p->fp.p, p->fp.n},
                                  {IG_SEC_OPTIONS, 8, p->opts.p, p->opts.n},
                                  {IG_SEC_GRAPH, 8, p->graph.p, p->graph.n},
                                  {IG_SEC_PROVENANCE, 8, p->prov.p, p->prov.n},
                                  {IG_SEC_PLANS, 8, p->plans.p, p->plans.n},
                                  {IG_SEC_ALGORITHMS, 8, p->algos.p, p->algos.n},
                                  /* last and page-aligned: mapped in place, and a truncated copy fails early */
                                  {IG_SEC_WEIGHTS, 4096, p->weights.p, p->weights.n}};
    memcpy(p->sec, secs, sizeof secs);
    return INGOT_OK;
}

ingot_status ingot_engine_serialize(ingot_engine *e, void **data, size_t *n_bytes)
{
    if (!e) return INGOT_ERR_INVALID_ARG;
    ig__api_clear(e->rt);
    ig_err err = {0};
    if (!data || !n_bytes)
        return ig__api_fail(e->rt, &(ig_err){INGOT_ERR_INVALID_ARG, "ingot_engine_serialize: NULL argument"});
    *data = NULL;
    *n_bytes = 0;
    parts p;
    ig_wbuf b = {0};
    ingot_status st = make_parts(e, &p, &err);
    if (st == INGOT_OK) {
        st = ig__efile_write(p.sec, 7, &b, &err);
        parts_free(&p);
    }
    if (st != INGOT_OK) return ig__api_fail(e->rt, &err);
    *data = b.p;
    *n_bytes = b.n;
    return INGOT_OK;
}

static ingot_status to_file(void *user, const void *data, size_t n, ig_err *err)
{
    return fwrite(data, 1, n, (FILE *)user) == n ? INGOT_OK : ig__errf(err, INGOT_ERR_IO, "%s", strerror(errno));
}

/* Sections streamed to path through a temporary next to it, renamed over it: a reader never sees half
 * a file, and the weights are not copied a second time. */
static ingot_status emit_file(const char *path, const ig_efile_sec *secs, int32_t n, const char *what, ig_err *err)
{
    char tmp[4096];
    int len = snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = len > 0 && (size_t)len < sizeof tmp ? fopen(tmp, "wb") : NULL;
    if (!f) return ig__errf(err, INGOT_ERR_IO, "cannot write %s '%s': %s", what, path, strerror(errno));
    ingot_status st = ig__efile_emit(secs, n, to_file, f, err);
    bool closed = fclose(f) == 0;
    if (st == INGOT_OK && (!closed || rename(tmp, path) != 0)) st = ig__errf(err, INGOT_ERR_IO, "%s", strerror(errno));
    if (st != INGOT_OK) {
        remove(tmp);
        ig__err_prefix(err, "cannot write %s '%s'", what, path);
    }
    return st;
}

ingot_status ingot_engine_save(ingot_engine *e, const char *path)
{
    if (!e) return INGOT_ERR_INVALID_ARG;
    ig__api_clear(e->rt);
    ig_err err = {0};
    if (!path) return ig__api_fail(e->rt, &(ig_err){INGOT_ERR_INVALID_ARG, "ingot_engine_save: NULL path"});
    parts p;
    ingot_status st = make_parts(e, &p, &err);
    if (st == INGOT_OK) {
        st = emit_file(path, p.sec, 7, "engine file", &err);
        parts_free(&p);
    }
    return st == INGOT_OK ? INGOT_OK : ig__api_fail(e->rt, &err);
}

/* ---- timing caches: FPRT and ALGO sections only ---- */

ingot_status ingot_engine_save_timing_cache(ingot_engine *e, const char *path)
{
    if (!e) return INGOT_ERR_INVALID_ARG;
    ig__api_clear(e->rt);
    ig_err err = {0};
    if (!path)
        return ig__api_fail(e->rt, &(ig_err){INGOT_ERR_INVALID_ARG, "ingot_engine_save_timing_cache: NULL path"});
    ig_wbuf fp = {0}, algos = {0};
    ig_fp f;
    ingot_status st = fingerprint(e->cuda ? INGOT_BACKEND_CUDA : INGOT_BACKEND_CPU, e->opts.device, &f, &err);
    if (st == INGOT_OK) {
        fp_write(&f, &fp);
        if (e->cuda)
            st = ig__api_cuda_algos_save(e, &algos, &err);
        else
            ig__wbuf_u32(&algos, 0);
    }
    if (st == INGOT_OK && (fp.oom || algos.oom)) st = ig__errf(&err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == INGOT_OK) {
        ig_efile_sec secs[] = {{IG_SEC_FINGERPRINT, 8, fp.p, fp.n}, {IG_SEC_ALGORITHMS, 8, algos.p, algos.n}};
        st = emit_file(path, secs, 2, "timing cache", &err);
    }
    ig__wbuf_free(&fp);
    ig__wbuf_free(&algos);
    return st == INGOT_OK ? INGOT_OK : ig__api_fail(e->rt, &err);
}

ingot_status ingot_engine_load_timing_cache(ingot_engine *e, const char *path)
{
    if (!e) return INGOT_ERR_INVALID_ARG;
    ig__api_clear(e->rt);
    ig_err err = {0};
    if (!path)
        return ig__api_fail(e->rt, &(ig_err){INGOT_ERR_INVALID_ARG, "ingot_engine_load_timing_cache: NULL path"});
    ig_onnx_file *file = NULL;
    const uint8_t *data;
    size_t size;
    ig_arena tmp;
    ig__arena_init(&tmp);
    ingot_status st = ig__onnx_open_container(path, NULL, 0, true, &file, &data, &size, &err);
    ig_efile ef;
    const ig_efile_sec *fps = NULL, *as = NULL;
    if (st == INGOT_OK && (st = ig__efile_open(data, size, NULL, 0, &ef, &err)) == INGOT_OK &&
        (st = ig__efile_require(&ef, IG_SEC_FINGERPRINT, &fps, &err)) == INGOT_OK)
        st = ig__efile_require(&ef, IG_SEC_ALGORITHMS, &as, &err);
    ig_fp file_fp, here_fp;
    if (st == INGOT_OK) st = fp_read(fps, &file_fp, &tmp, &err);
    if (st == INGOT_OK)
        st = fingerprint(e->cuda ? INGOT_BACKEND_CUDA : INGOT_BACKEND_CPU, e->opts.device, &here_fp, &err);
    if (st == INGOT_OK) st = fp_check(&file_fp, &here_fp, &err);
    if (st == INGOT_OK && e->cuda) st = ig__api_cuda_algos_load(e, as->data, as->size, &err);
    ig__onnx_close(file);
    ig__arena_free(&tmp);
    if (st != INGOT_OK) {
        ig__err_prefix(&err, "timing cache '%s'", path);
        return ig__api_fail(e->rt, &err);
    }
    return INGOT_OK;
}

/* ---- load ---------------------------------------------------------------------------------------------- */

ingot_engine_load_options ingot_engine_load_options_default(void)
{
    ingot_engine_load_options o = {
        .struct_size = sizeof o, .use_mmap = 1, .n_threads = -1, .device = -1, .verify_weights = 1};
    return o;
}

static ingot_status check_load_options(const ingot_engine_load_options *o, ig_err *err)
{
    if (o->struct_size != sizeof *o)
        return ig__errf(err, INGOT_ERR_INVALID_ARG,
                        "ingot_engine_load_options: struct_size %u, expected %zu (use "
                        "ingot_engine_load_options_default())",
                        o->struct_size, sizeof *o);
    if ((o->use_mmap != 0 && o->use_mmap != 1) || (o->verify_weights != 0 && o->verify_weights != 1))
        return ig__errf(err, INGOT_ERR_INVALID_ARG,
                        "ingot_engine_load_options: use_mmap and verify_weights are 0 or 1");
    if (o->n_threads < -1 || o->n_threads > 1024)
        return ig__errf(err, INGOT_ERR_INVALID_ARG, "ingot_engine_load_options.n_threads must be in [-1, 1024], not %d",
                        o->n_threads);
    if (o->device < -1)
        return ig__errf(err, INGOT_ERR_INVALID_ARG, "ingot_engine_load_options.device must be >= -1, not %d",
                        o->device);
    return INGOT_OK;
}

/* e is new (zeroed, runtime and fold arena set); on failure the caller destroys it. */
static ingot_status load(ingot_engine *e, const char *path, const void *buf, size_t n,
                         const ingot_engine_load_options *lo, ig_err *err)
{
    const uint8_t *data;
    size_t size;
    ingot_status st = ig__onnx_open_container(path, buf, n, lo->use_mmap != 0, &e->file, &data, &size, err);
    if (st != INGOT_OK) return st;
    ig_arena tmp;
    ig__arena_init(&tmp);
    ig_efile ef;
    const uint32_t skip[] = {IG_SEC_WEIGHTS};
    if ((st = ig__efile_open(data, size, skip, 1, &ef, err)) != INGOT_OK) goto out;
    const ig_efile_sec *fps, *ops, *grs, *ws, *prs, *pls;
    if ((st = ig__efile_require(&ef, IG_SEC_FINGERPRINT, &fps, err)) ||
        (st = ig__efile_require(&ef, IG_SEC_OPTIONS, &ops, err)) ||
        (st = ig__efile_require(&ef, IG_SEC_GRAPH, &grs, err)) ||
        (st = ig__efile_require(&ef, IG_SEC_WEIGHTS, &ws, err)) ||
        (st = ig__efile_require(&ef, IG_SEC_PROVENANCE, &prs, err)) ||
        (st = ig__efile_require(&ef, IG_SEC_PLANS, &pls, err)))
        goto out;
    if (lo->verify_weights && (st = ig__efile_verify(&ef, ws, err)) != INGOT_OK) goto out;

    /* options first: the fingerprint to compare with depends on the backend and device */
    ig_rbuf orb;
    ig__rbuf_init(&orb, ops->data, ops->size, "OPTS", err);
    ingot_build_options o;
    ingot_backend backend;
    size_t fold_max;
    const char *source;
    if ((st = opts_read(&orb, &o, &backend, &fold_max, &source, &tmp, err)) != INGOT_OK) goto out;
    if (lo->n_threads >= 0) o.n_threads = lo->n_threads;
    if (lo->device >= 0) o.device = lo->device;
    snprintf(e->source, sizeof e->source, "%s", source);
    ig_fp file_fp, here_fp;
    if ((st = fp_read(fps, &file_fp, &tmp, err)) != INGOT_OK) goto out;
    const char *fb = fp_get(&file_fp, "backend");
    if (!fb || strcmp(fb, backend == INGOT_BACKEND_CUDA ? "cuda" : "cpu") != 0) {
        st = ig__errf(err, INGOT_ERR_ENGINE_FILE,
                      "engine file: the fingerprint's backend '%s' contradicts the options'", fb ? fb : "(none)");
        goto out;
    }
    if ((st = fingerprint(backend, o.device, &here_fp, err)) != INGOT_OK) goto out;
    if ((st = fp_check(&file_fp, &here_fp, err)) != INGOT_OK) goto out;

    e->opts = o;
    e->opts.profiles = NULL;
    e->opts.n_profiles = 0;
    e->opts.disable_passes = NULL;
    if (o.disable_passes[0]) {
        size_t dl = strlen(o.disable_passes);
        if (!(e->own_disable = ig__malloc(dl + 1))) {
            st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
            goto out;
        }
        memcpy(e->own_disable, o.disable_passes, dl + 1);
        e->opts.disable_passes = e->own_disable;
    }
    e->iopt.fold_max_bytes = fold_max;

    /* the graph, as any model: parsed, sorted, verified, inferred at its declared shapes */
    if ((st = ig__graph_init(&e->graph, err)) != INGOT_OK) goto out;
    if ((st = ig__onnx_import_embedded(e->file, grs->data, grs->size, ws->data, ws->size, &e->graph, err)) != INGOT_OK)
        goto out;
    if ((st = ig__graph_infer(&e->graph, &e->iopt, &e->fold_arena, err)) != INGOT_OK) {
        ig__err_prefix(err, "engine file: the stored graph");
        goto out;
    }
    if ((st = prov_read(prs, e, err)) != INGOT_OK) goto out;
    e->n_inputs = e->graph.n_inputs;
    e->default_shapes = ig__calloc((size_t)e->n_inputs + 1, sizeof(ig_shape));
    e->profiles = ig__calloc((size_t)e->n_inputs + 1, sizeof(ig_profile));
    if (!e->default_shapes || !e->profiles) {
        st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    if ((st = opts_read_inputs(&orb, e, &tmp, err)) != INGOT_OK) goto out;
    if ((st = plans_verify(pls, e, &tmp, err)) != INGOT_OK) goto out;
    if ((st = ig__api_engine_finish(e, backend, err)) != INGOT_OK) goto out;
    const ig_efile_sec *as = ig__efile_find(&ef, IG_SEC_ALGORITHMS);
    if (e->cuda && as && (st = ig__api_cuda_algos_load(e, as->data, as->size, err)) != INGOT_OK) goto out;
out:
    ig__arena_free(&tmp);
    return st;
}

static ingot_status load_api(ingot_runtime *rt, const char *path, const void *buf, size_t n,
                             const ingot_engine_load_options *opts, ingot_engine **out)
{
    if (!rt) return INGOT_ERR_INVALID_ARG;
    ig__api_clear(rt);
    ig_err err = {0};
    if (!out || (!path && !buf && n)) {
        ig__errf(&err, INGOT_ERR_INVALID_ARG, "ingot_engine_load: NULL argument");
        return ig__api_fail(rt, &err);
    }
    *out = NULL;
    ingot_engine_load_options lo = ingot_engine_load_options_default();
    if (opts) lo = *opts;
    if (check_load_options(&lo, &err) != INGOT_OK) return ig__api_fail(rt, &err);
    ingot_engine *e = ig__calloc(1, sizeof *e);
    if (!e) {
        ig__errf(&err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
        return ig__api_fail(rt, &err);
    }
    e->rt = rt;
    ig__arena_init(&e->fold_arena);
    if (load(e, path, buf, n, &lo, &err) != INGOT_OK) {
        if (path) ig__err_prefix(&err, "%s", path);
        ingot_engine_destroy(e);
        return ig__api_fail(rt, &err);
    }
    *out = e;
    return INGOT_OK;
}

ingot_status ingot_engine_load(ingot_runtime *rt, const char *path, const ingot_engine_load_options *opts,
                               ingot_engine **out)
{
    if (rt && !path) {
        ig__api_clear(rt);
        return ig__api_fail(rt, &(ig_err){INGOT_ERR_INVALID_ARG, "ingot_engine_load: NULL path"});
    }
    return load_api(rt, path, NULL, 0, opts, out);
}

ingot_status ingot_engine_load_buffer(ingot_runtime *rt, const void *data, size_t n_bytes,
                                      const ingot_engine_load_options *opts, ingot_engine **out)
{
    if (rt && !data && n_bytes) {
        ig__api_clear(rt);
        return ig__api_fail(rt,
                            &(ig_err){INGOT_ERR_INVALID_ARG, "ingot_engine_load_buffer: NULL data with n_bytes > 0"});
    }
    return load_api(rt, NULL, data, n_bytes, opts, out);
}

/* ---- rebuild ------------------------------------------------------------------------------------------- */

static ingot_status rebuild(ingot_runtime *rt, const char *engine_path, const char *onnx_path, ingot_engine **out,
                            ig_err *err)
{
    ig_onnx_file *file = NULL;
    const uint8_t *data;
    size_t size;
    ig_arena tmp;
    ig__arena_init(&tmp);
    ingot_model *m = NULL;
    ingot_status st = ig__onnx_open_container(engine_path, NULL, 0, true, &file, &data, &size, err);
    ig_efile ef;
    const ig_efile_sec *ops = NULL;
    const uint32_t skip[] = {IG_SEC_WEIGHTS};
    if (st == INGOT_OK && (st = ig__efile_open(data, size, skip, 1, &ef, err)) == INGOT_OK)
        st = ig__efile_require(&ef, IG_SEC_OPTIONS, &ops, err);
    ig_rbuf r;
    ingot_build_options o = ingot_build_options_default();
    ingot_backend backend = INGOT_BACKEND_AUTO;
    size_t fold_max = 0;
    const char *source = "";
    stored_input *in = NULL;
    uint32_t n = 0;
    if (st == INGOT_OK) {
        ig__rbuf_init(&r, ops->data, ops->size, "OPTS", err);
        if ((st = opts_read(&r, &o, &backend, &fold_max, &source, &tmp, err)) == INGOT_OK)
            st = opts_parse_inputs(&r, &tmp, &in, &n, err);
    }
    ingot_input_profile *prof = st == INGOT_OK ? ig__arena_array(&tmp, (size_t)n + 1, sizeof *prof) : NULL;
    if (st == INGOT_OK && !prof) st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    ingot_load_options mo = ingot_load_options_default();
    mo.fold_max_bytes = fold_max;
    if (st == INGOT_OK && (st = ingot_model_load(rt, onnx_path, &mo, &m)) != INGOT_OK) *err = rt->err;
    int64_t np = 0;
    for (uint32_t i = 0; i < n && st == INGOT_OK; i++) {
        const stored_input *x = &in[i];
        if (x->rank >= 0 && (st = ingot_model_set_input_shape(m, x->name, x->rank, x->dims)) != INGOT_OK)
            *err = rt->err;
        if (x->prank < 0) continue;
        ingot_input_profile *p = &prof[np++];
        p->name = x->name;
        p->rank = x->prank;
        memcpy(p->min, x->mn, sizeof p->min);
        memcpy(p->opt, x->op, sizeof p->opt);
        memcpy(p->max, x->mx, sizeof p->max);
    }
    o.profiles = np ? prof : NULL;
    o.n_profiles = np;
    ingot_engine *e = NULL;
    if (st == INGOT_OK && (st = ingot_engine_build(rt, m, &o, &e)) != INGOT_OK) *err = rt->err;
    ingot_context *c = NULL; /* a CUDA engine times its algorithms into itself, as ingot build does */
    if (st == INGOT_OK && e->cuda && (st = ingot_context_create(e, NULL, &c)) != INGOT_OK) *err = rt->err;
    ingot_context_destroy(c);
    if (st == INGOT_OK && (st = ingot_engine_save(e, engine_path)) != INGOT_OK) *err = rt->err;
    ingot_model_destroy(m);
    ig__onnx_close(file);
    ig__arena_free(&tmp);
    if (st != INGOT_OK) {
        ingot_engine_destroy(e);
        return st;
    }
    *out = e;
    return INGOT_OK;
}

ingot_status ingot_engine_rebuild(ingot_runtime *rt, const char *engine_path, const char *onnx_path, ingot_engine **out)
{
    if (!rt) return INGOT_ERR_INVALID_ARG;
    ig__api_clear(rt);
    ig_err err = {0};
    if (!engine_path || !onnx_path || !out)
        return ig__api_fail(rt, &(ig_err){INGOT_ERR_INVALID_ARG, "ingot_engine_rebuild: NULL argument"});
    *out = NULL;
    if (rebuild(rt, engine_path, onnx_path, out, &err) != INGOT_OK) {
        ig__err_prefix(&err, "rebuilding %s from %s", engine_path, onnx_path);
        return ig__api_fail(rt, &err);
    }
    return INGOT_OK;
}
