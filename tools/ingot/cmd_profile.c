/*
 * cmd_profile.c -- `ingot profile`: the field report's bottleneck table for one model (docs/DIAGNOSE.md).
 *
 *   ingot profile MODEL.onnx [--fp16] [--batch N | --shapes NAME:DIMS] [--json] [--html FILE]
 *                            [--trace FILE] [--cpu | --device cpu|cuda] [--workspace BYTES]
 *                            [--mem-limit BYTES] [--remeasure] [--all-steps] [--no-optimize] [--disable-pass P]
 *
 * Builds the engine, runs the model (random inputs), times every step as it runs (the fused steps of the
 * optimized graph; on the GPU every kernel and library call), joins each with its FLOPs and bytes and
 * judges it against the machine's measured ceilings (`ingot device`, cached): achieved GB/s and
 * TFLOP/s, share of each roof, class and cure; then for the model the time with and without CUDA Graph
 * replay, the idle share, time by class, memory by account, capacity and a verdict in plain words.
 * The analysis is src/diag's; this file measures and prints.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include "api/api_internal.h"
#include "diag/diag.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef INGOT_HAVE_CUDA
#include "cuda/device_bench.h"
#include "ingot_cuda.h"
#endif

void ig__profile_free(ig_diag_report *r)
{
    if (!r) return;
    free(r->steps);
    r->steps = NULL;
    r->n_steps = 0;
}

static void print_ctx_err(const char *cmd, const char *what, const ingot_context *c)
{
    fprintf(stderr, "%s: %s: %s: %s\n", cmd, what, ingot_status_name(ingot_context_errcode(c)),
            ingot_context_errmsg(c));
}

static bool is_oom(ingot_status s) { return s == INGOT_ERR_DEVICE_OOM || s == INGOT_ERR_OUT_OF_MEMORY; }

/* The shared start: report header, target opened and bound. */
static int open_bound(const ig_profile_opts *o, ig_cli_target *t, ig_diag_report *r)
{
    ig__cli_target_init(t, o->cmd);
    t->shapes = o->shapes;
    if (!ig__cli_open(t, o->path) ||
        !ig__cli_bind(t, IG_CLI_BIND_DEFAULT_1 | IG_CLI_BIND_CONCRETE | (o->quiet ? IG_CLI_BIND_QUIET : 0), NULL, 0))
        return 0;
    snprintf(r->model, sizeof r->model, "%s", o->path);
    r->batch = t->batch;
    return 1;
}

/* Steps cannot outnumber the engine graph's nodes on the CPU. */
static int64_t cpu_max_steps(const ig_cli_target *t)
{
    const ig_graph *g = ig__engine_graph(t->engine);
    return g ? g->n_nodes + 1 : 4096;
}

static int profile_cpu(const ig_profile_opts *o, ig_diag_report *r, char *oom, size_t n_oom)
{
    ig_cli_target t;
    ingot_context *c = NULL;
    ingot_tensor ins[64];
    int64_t n_in = 0;
    int rc = 1;
    memset(ins, 0, sizeof ins);
    ig_err err = {0};
    if (ig__diag_cpu_ceilings(0, o->remeasure, &r->ceil, &err) != INGOT_OK) {
        fprintf(stderr, "%s: measuring the CPU: %s\n", o->cmd, err.msg);
        return 1;
    }
    if (o->fp16) fprintf(stderr, "%s: warning: --fp16 ignored: the CPU backend computes in float32\n", o->cmd);
    snprintf(r->precision, sizeof r->precision, "fp32");
    if (!open_bound(o, &t, r)) goto out;
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    ig__cli_opt_apply(&o->opt, &bo);
    if (!ig__cli_build(&t, &bo)) {
        if (is_oom(ingot_runtime_errcode(t.rt))) rc = 4, snprintf(oom, n_oom, "%s", ingot_runtime_errmsg(t.rt));
        goto out;
    }
    if (ingot_context_create(t.engine, NULL, &c) != INGOT_OK) {
        if (is_oom(ingot_runtime_errcode(t.rt))) rc = 4, snprintf(oom, n_oom, "%s", ingot_runtime_errmsg(t.rt));
        ig__cli_print_rt_error(&t, "context");
        goto out;
    }
    uint64_t seed = 1;
    n_in = ig__cli_input_count(&t);
    if (n_in > 64) {
        fprintf(stderr, "%s: more than 64 inputs\n", o->cmd);
        n_in = 0;
        goto out;
    }
    for (int64_t i = 0; i < n_in; i++)
        if (!ig__cli_input_tensor(&t, i, &ins[i]) ||
            !(ins[i].data = ig__cli_random_bytes(ins[i].dtype, ins[i].bytes, &seed)))
            goto out;
    int64_t max = cpu_max_steps(&t), n = 0;
    ingot_step_profile *p = calloc((size_t)max, sizeof *p);
    r->steps = calloc((size_t)max, sizeof *r->steps);
    if (!p || !r->steps) {
        free(p);
        goto out;
    }
    /* three profiled runs, each step's median time: one run's timer noise is a step's whole time */
    double *ms3 = calloc((size_t)max * 3, sizeof *ms3);
    for (int rep = 0; rep < 3 && ms3; rep++) {
        ingot_status st = ingot_context_profile_steps(c, ins, n_in, p, max, &n);
        if (st != INGOT_OK) {
            if (is_oom(st)) rc = 4, snprintf(oom, n_oom, "%s", ingot_context_errmsg(c));
            print_ctx_err(o->cmd, "profile", c);
            free(ms3);
            free(p);
            goto out;
        }
        for (int64_t k = 0; k < n && k < max; k++) ms3[3 * k + rep] = p[k].ms;
    }
    if (!ms3) {
        free(p);
        goto out;
    }
    r->n_steps = n < max ? n : max;
    for (int64_t k = 0; k < r->n_steps; k++) {
        r->steps[k].p = p[k];
        r->steps[k].p.ms = ig__cli_median(&ms3[3 * k], 3);
    }
    free(ms3);
    free(p);
    /* the whole run, as a program runs it: the median of a few */
    double v[7];
    for (int k = 0; k < 7; k++) {
        double a = ig__now_ms();
        if (ingot_context_run(c, ins, n_in) != INGOT_OK) {
            print_ctx_err(o->cmd, "run", c);
            goto out;
        }
        v[k] = ig__now_ms() - a;
    }
    r->run_ms = r->run_stream_ms = ig__cli_median(v, 7);
    r->graphs = false;
    r->mem.a.struct_size = sizeof r->mem.a;
    if (ingot_context_memory_accounts(c, &r->mem.a) != INGOT_OK) {
        print_ctx_err(o->cmd, "memory accounts", c);
        goto out;
    }
    r->mem.have = true;
    r->mem.other_processes = r->mem.caller_io = r->mem.residual = -1; /* device-side figures: none on the CPU */
    rc = 0;
out:
    for (int64_t i = 0; i < n_in; i++) free(ins[i].data);
    ingot_context_destroy(c);
    ig__cli_close(&t);
    return rc;
}

#ifdef INGOT_HAVE_CUDA

#define CK(call)                                                                            \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) {                                                            \
            fprintf(stderr, "%s: %s: %s\n", o->cmd, #call, cudaGetErrorString(e_));         \
            if (e_ == cudaErrorMemoryAllocation) rc = 4, snprintf(oom, n_oom, "%s", #call); \
            goto out;                                                                       \
        }                                                                                   \
    } while (0)

static double gap(size_t before, size_t after) { return (double)before - (double)after; }

static int profile_gpu(const ig_profile_opts *o, ig_diag_report *r, char *oom, size_t n_oom)
{
    ig_cli_target t;
    ig__cli_target_init(&t, o->cmd);
    ingot_context *c = NULL;
    ingot_tensor ins[64], outs[64];
    int64_t n_in = 0, n_out = 0;
    memset(ins, 0, sizeof ins);
    memset(outs, 0, sizeof outs);
    cudaStream_t stream = NULL;
    cudaEvent_t ev0 = NULL, ev1 = NULL;
    ingot_step_profile *p = NULL;
    int rc = 1;
    size_t f0 = 0, f1 = 0, f2 = 0, f3 = 0, f4 = 0, total = 0;
    if (!ig__cli_gpu_ceilings(o->cmd, o->remeasure, &r->ceil)) return 1;
    snprintf(r->precision, sizeof r->precision, "%s", o->fp16 ? "fp16" : "fp32");
    CK(cudaSetDevice(0));
    CK(cudaFree(0)); /* the CUDA context exists from here: its memory is measured, not billed to the model */
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CK(cudaEventCreate(&ev0));
    CK(cudaEventCreate(&ev1));
    CK(cudaMemGetInfo(&f0, &total));
    r->mem.other_processes = ig__cuda_other_process_bytes(0);
    if (!open_bound(o, &t, r)) goto out;
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CUDA;
    bo.precision = o->fp16 ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT;
    if (o->workspace >= 0) bo.workspace_limit = (size_t)o->workspace;
    ig__cli_opt_apply(&o->opt, &bo);
    if (!ig__cli_build(&t, &bo)) {
        if (is_oom(ingot_runtime_errcode(t.rt))) rc = 4, snprintf(oom, n_oom, "%s", ingot_runtime_errmsg(t.rt));
        goto out;
    }
    CK(cudaMemGetInfo(&f1, &total));
    if (ingot_context_create(t.engine, NULL, &c) != INGOT_OK) {
        if (is_oom(ingot_runtime_errcode(t.rt))) rc = 4, snprintf(oom, n_oom, "%s", ingot_runtime_errmsg(t.rt));
        ig__cli_print_rt_error(&t, "context");
        goto out;
    }
    CK(cudaMemGetInfo(&f2, &total));
    uint64_t n_m = 0, n_f = 0, live2 = 0; /* the library's own device bytes once the context exists */
    ingot_cuda_alloc_counts(&n_m, &n_f, &live2);
    uint64_t seed = 1;
    n_in = ig__cli_input_count(&t);
    n_out = ig__cli_output_count(&t);
    if (n_in > 64 || n_out > 64) {
        fprintf(stderr, "%s: more than 64 inputs or outputs\n", o->cmd);
        n_in = n_out = 0;
        goto out;
    }
    for (int64_t i = 0; i < n_in; i++) {
        if (!ig__cli_input_tensor(&t, i, &ins[i])) goto out;
        void *h = ig__cli_random_bytes(ins[i].dtype, ins[i].bytes, &seed);
        if (!h) goto out;
        cudaError_t ce = cudaMalloc(&ins[i].data, ins[i].bytes ? ins[i].bytes : 1);
        if (ce == cudaSuccess) ce = cudaMemcpy(ins[i].data, h, ins[i].bytes, cudaMemcpyHostToDevice);
        free(h);
        CK(ce);
    }
    for (int64_t j = 0; j < n_out; j++) {
        if (ingot_cuda_context_output_info(c, j, &outs[j]) != INGOT_OK) {
            print_ctx_err(o->cmd, "output info", c);
            goto out;
        }
        CK(cudaMalloc(&outs[j].data, outs[j].bytes ? outs[j].bytes : 1));
    }
    CK(cudaMemGetInfo(&f3, &total)); /* the caller's inputs and outputs are not the model's */
    /* the first run captures and instantiates the CUDA Graph: what that takes is the graph's */
    if (ingot_cuda_context_enqueue(c, ins, n_in, outs, n_out, stream) != INGOT_OK) {
        if (is_oom(ingot_context_errcode(c))) rc = 4, snprintf(oom, n_oom, "%s", ingot_context_errmsg(c));
        print_ctx_err(o->cmd, "first run", c);
        goto out;
    }
    CK(cudaStreamSynchronize(stream));
    CK(cudaMemGetInfo(&f4, &total));
    /* the whole run with graph replay, then step by step, back to back. A GPU idle before the profile
     * runs at its lowest clocks for a while: 25 runs measured ResNet-50 at batch 1 at 0.61 ms where a
     * second of runs gives 0.40. So runs first for 200 ms untimed, then for at least 50 ms timed. */
    for (int graphs = 1; graphs >= 0; graphs--) {
        if (ingot_cuda_context_set_graphs(c, graphs) != INGOT_OK) {
            print_ctx_err(o->cmd, "graphs", c);
            goto out;
        }
        double t0 = ig__now_ms();
        int64_t warm = 0;
        while (warm < 5 || (ig__now_ms() - t0 < 200 && warm < 100000)) {
            if (ingot_cuda_context_enqueue(c, ins, n_in, outs, n_out, stream) != INGOT_OK) {
                print_ctx_err(o->cmd, "run", c);
                goto out;
            }
            if (++warm % 16 == 0) CK(cudaStreamSynchronize(stream)); /* the host waits on the GPU's pace */
        }
        CK(cudaStreamSynchronize(stream));
        double per = (ig__now_ms() - t0) / (double)warm;
        int64_t runs = per > 0 ? (int64_t)(50.0 / per) + 1 : 20;
        if (runs < 20) runs = 20;
        if (runs > 20000) runs = 20000;
        float ms = 0;
        CK(cudaEventRecord(ev0, stream));
        for (int64_t k = 0; k < runs; k++)
            if (ingot_cuda_context_enqueue(c, ins, n_in, outs, n_out, stream) != INGOT_OK) {
                print_ctx_err(o->cmd, "run", c);
                goto out;
            }
        CK(cudaEventRecord(ev1, stream));
        CK(cudaEventSynchronize(ev1));
        CK(cudaEventElapsedTime(&ms, ev0, ev1));
        if (graphs)
            r->run_ms = ms / (double)runs;
        else
            r->run_stream_ms = ms / (double)runs;
    }
    if (ingot_cuda_context_set_graphs(c, 1) != INGOT_OK) goto out;
    ingot_cuda_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    if (ingot_cuda_context_get_stats(c, &s) != INGOT_OK) {
        print_ctx_err(o->cmd, "stats", c);
        goto out;
    }
    r->graphs = s.graph_enabled && s.graph_captures > 0;
    if (!r->graphs) r->run_ms = r->run_stream_ms;
    int64_t max = s.n_steps + 1, n = 0;
    p = calloc((size_t)max, sizeof *p);
    r->steps = calloc((size_t)max, sizeof *r->steps);
    if (!p || !r->steps) goto out;
    if (ingot_cuda_context_profile_steps(c, ins, n_in, outs, n_out, stream, p, max, &n) != INGOT_OK) {
        print_ctx_err(o->cmd, "profile", c);
        goto out;
    }
    r->n_steps = n < max ? n : max;
    for (int64_t k = 0; k < r->n_steps; k++) r->steps[k].p = p[k];
    r->mem.a.struct_size = sizeof r->mem.a;
    if (ingot_context_memory_accounts(c, &r->mem.a) != INGOT_OK) {
        print_ctx_err(o->cmd, "memory accounts", c);
        goto out;
    }
    /* what cudaMemGetInfo saw around each stage, beyond the library's own allocations */
    r->mem.have = true;
    double other = r->mem.other_processes > 0 ? r->mem.other_processes : 0;
    r->mem.cuda_context = (double)total - (double)f0 - other;
    if (r->mem.cuda_context < 0) r->mem.cuda_context = 0; /* NVML counted us among the others (containers) */
    r->mem.library_handles = gap(f0, f2) - (double)live2;
    if (r->mem.library_handles < 0) r->mem.library_handles = 0;
    /* the library measured its graph at instantiation; the first run's gap is the fallback */
    r->mem.graph_reserved = r->mem.a.graph_objects > 0 ? (double)r->mem.a.graph_objects : gap(f3, f4);
    r->mem.caller_io = gap(f2, f3);
    /* the accounts against cudaMemGetInfo now, after the graph and every timed run: a growth the
     * accounts do not explain (a leak, a lazily allocated library buffer) shows up here */
    r->mem.residual = (double)(r->mem.a.total_bytes - r->mem.a.free_bytes) - r->mem.cuda_context - other -
                      (double)r->mem.a.library_live - r->mem.library_handles - r->mem.graph_reserved - r->mem.caller_io;
    (void)f1;
    rc = 0;
out:
    free(p);
    for (int64_t i = 0; i < n_in; i++) cudaFree(ins[i].data);
    for (int64_t j = 0; j < n_out; j++) cudaFree(outs[j].data);
    ingot_context_destroy(c);
    ig__cli_close(&t);
    if (ev0) cudaEventDestroy(ev0);
    if (ev1) cudaEventDestroy(ev1);
    if (stream) cudaStreamDestroy(stream);
    return rc;
}
#endif

int ig__profile_run(const ig_profile_opts *o, ig_diag_report *r, char *oom, size_t n_oom)
{
    memset(r, 0, sizeof *r);
    oom[0] = '\0';
    int rc;
    if (o->cpu) {
        rc = profile_cpu(o, r, oom, n_oom);
    } else {
#ifdef INGOT_HAVE_CUDA
        char why[512] = "";
        if (ingot_cuda_available(why, sizeof why)) {
            rc = profile_gpu(o, r, oom, n_oom);
        } else if (o->cuda) {
            fprintf(stderr, "%s: --device cuda: %s (--cpu profiles the CPU backend)\n", o->cmd, why);
            return 1;
        } else {
            if (!o->quiet)
                fprintf(stderr, "%s: no usable GPU (%s): profiling the CPU backend (--cpu chooses it)\n", o->cmd, why);
            rc = profile_cpu(o, r, oom, n_oom);
        }
#else
        if (o->cuda) {
            fprintf(stderr, "%s: --device cuda: this build of ingot has no CUDA backend\n", o->cmd);
            return 1;
        }
        rc = profile_cpu(o, r, oom, n_oom);
#endif
    }
    if (rc != 0) {
        ig__profile_free(r);
        return rc;
    }
    r->mem_limit = (double)o->mem_limit;
    ig__diag_analyze(r); /* a batch that does not fit is the verdict's business (capacity-bound) */
    return 0;
}

/* ---- the command ---------------------------------------------------------------------------------- */

typedef struct profile_args {
    ig_profile_opts p;
    int json, all_steps;
    const char *html, *trace;
} profile_args;

static void usage(FILE *f)
{
    fprintf(f, "usage: ingot profile MODEL.onnx [--fp16] [--batch N | --shapes NAME:DIMS] [--json] [--html FILE]\n"
               "                     [--trace FILE] [--cpu | --device cpu|cuda] [--workspace BYTES]\n"
               "                     [--mem-limit BYTES] [--remeasure] [--all-steps]\n"
               "  --fp16            fp16 storage, fp32 accumulation (CUDA only)\n"
               "  --json            the whole report as one JSON object on stdout\n"
               "  --html FILE       one self-contained HTML report (roofline, classes, memory)\n"
               "  --trace FILE      Chrome/Perfetto trace: steps coloured by class, live activation bytes\n"
               "  --cpu             profile the CPU backend against the CPU's ceilings (same as --device cpu)\n"
               "  --device D        cuda: the GPU or an error; cpu: the CPU backend (default: the GPU when\n"
               "                    one is usable, else the CPU)\n"
               "  --workspace B     workspace limit for cuDNN/cuBLASLt (B, or with K/M/G; CUDA only)\n"
               "  --mem-limit B     judge capacity against B bytes instead of the free memory\n"
               "  --remeasure       measure the machine's ceilings again instead of using the cache\n"
               "  --all-steps       list every step (default: the 25 slowest)\n" IG_CLI_SHAPES_USAGE IG_CLI_OPT_USAGE);
}

/* A byte count into a signed option (ig__cli_parse_bytes, bounded so it stays positive). */
static int parse_bytes(const char *opt, const char *s, int64_t *out)
{
    uint64_t v = 0;
    if (!ig__cli_parse_bytes(opt, s, &v)) return 0;
    if (v > (uint64_t)INT64_MAX) {
        fprintf(stderr, "ingot: %s: %s is too large\n", opt, s);
        return 0;
    }
    *out = (int64_t)v;
    return 1;
}

static int parse(int argc, char **argv, profile_args *a)
{
    memset(a, 0, sizeof *a);
    a->p.cmd = "ingot profile";
    a->p.workspace = -1;
    ig__cli_opt_init(&a->p.opt);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int r = ig__cli_opt_arg(argc, argv, &i, &a->p.opt);
        if (r == 0) r = ig__cli_shapes_arg("ingot profile", argc, argv, &i, &a->p.shapes);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(s, "--fp16"))
            a->p.fp16 = 1;
        else if (!strcmp(s, "--json"))
            a->json = 1;
        else if (!strcmp(s, "--all-steps"))
            a->all_steps = 1;
        else if (!strcmp(s, "--remeasure"))
            a->p.remeasure = 1;
        else if (!strcmp(s, "--cpu"))
            a->p.cpu = 1;
        else if (!strcmp(s, "--device") && i + 1 < argc) {
            const char *d = argv[++i];
            if (strcmp(d, "cpu") != 0 && strcmp(d, "cuda") != 0) {
                fprintf(stderr, "ingot profile: --device expects cpu or cuda, got '%s'\n", d);
                return 2;
            }
            a->p.cpu = !strcmp(d, "cpu");
            a->p.cuda = !a->p.cpu;
        } else if (!strcmp(s, "--html") && i + 1 < argc)
            a->html = argv[++i];
        else if (!strcmp(s, "--trace") && i + 1 < argc)
            a->trace = argv[++i];
        else if (!strcmp(s, "--workspace") && i + 1 < argc) {
            if (!parse_bytes("--workspace", argv[++i], &a->p.workspace)) return 2;
        } else if (!strcmp(s, "--mem-limit") && i + 1 < argc) {
            if (!parse_bytes("--mem-limit", argv[++i], &a->p.mem_limit)) return 2;
        } else if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            return 1;
        } else if (s[0] == '-' || a->p.path) {
            fprintf(stderr, "ingot profile: unexpected argument '%s'\n", s);
            usage(stderr);
            return 2;
        } else {
            a->p.path = s;
        }
    }
    if (!a->p.path) {
        usage(stderr);
        return 2;
    }
    if (a->p.cpu && a->p.cuda) {
        fprintf(stderr, "ingot profile: --cpu and --device cuda contradict each other\n");
        return 2;
    }
    a->p.quiet = a->json;
    return 0;
}

static void print_mb(const char *what, double bytes)
{
    if (bytes >= 0) printf("    %-26s %12.3f MB\n", what, bytes / 1e6);
}

static void print_text(const ig_diag_report *r, int all_steps)
{
    const ig_diag_ceilings *c = &r->ceil;
    printf("model %s, %s backend on %s, %s, batch %lld: %lld steps\n", r->model, c->backend, c->device, r->precision,
           (long long)r->batch, (long long)r->n_steps);
    printf("  ceilings: copy %.1f GB/s, fp32 %.3f TFLOP/s", c->copy_gbs, c->fp32_tflops);
    if (c->fp16_tflops > 0) printf(", fp16 %.1f TFLOP/s", c->fp16_tflops);
    printf(", launch %.2f us (`ingot device` measured them)\n", c->launch_us);
    printf("  time per inference %.4f ms%s; step by step %.4f ms; sum of steps %.4f ms; idle %.0f%%\n", r->run_ms,
           r->graphs ? " (CUDA Graph replay)" : "", r->run_stream_ms, r->steps_ms, 100 * r->idle_share);
    if (r->probe_ms > 0)
        printf("  the steps were timed with an event after each; its cost, %.2f us a step, is taken off each\n",
               1e3 * r->probe_ms);
    if (r->graphs) printf("  CUDA Graph replay saves %.0f%% of the step-by-step time\n", 100 * r->graph_gain);
    printf("  bottleneck: %s\n  verdict: %s\n", r->bottleneck, r->verdict);
    printf("  time by class:\n");
    for (int k = 0; k < IG_DIAG_N_CLASSES; k++)
        printf("    %-10s %5.1f%%  %4lld steps  %10.4f ms\n", ig__diag_class_name((ig_diag_class)k),
               100 * r->class_share[k], (long long)r->class_n[k], r->class_ms[k]);
    const ig_diag_memory *m = &r->mem;
    if (m->have) {
        printf("  memory (%s):\n", m->a.device ? "device" : "host");
        print_mb("weights", (double)m->a.weights);
        print_mb("activation arena", (double)m->a.arena);
        print_mb("  activations", (double)m->a.activations);
        print_mb("  lower bound", (double)m->a.activation_lower_bound);
        print_mb("  no reuse", (double)m->a.activation_no_reuse);
        print_mb("  workspace", (double)m->a.workspace);
        print_mb("  constants", (double)m->a.constants);
        print_mb("I/O staging", (double)m->a.io_staging);
        if (m->a.device) {
            print_mb("CUDA context", m->cuda_context);
            print_mb("library handles, modules", m->library_handles);
            print_mb("CUDA Graph objects", m->graph_reserved);
            print_mb("other processes", m->other_processes);
            print_mb("caller's inputs, outputs", m->caller_io);
            print_mb("not explained", m->residual);
        }
        print_mb("free", (double)m->a.free_bytes);
        print_mb("total", (double)m->a.total_bytes);
        printf("    needs %.1f MB of %.1f MB available; largest batch that fits: %lld\n", r->need_bytes / 1e6,
               r->avail_bytes / 1e6, (long long)r->max_batch);
    }
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(r->n_steps + 1));
    if (!idx) return;
    for (int64_t k = 0; k < r->n_steps; k++) idx[k] = k;
    if (!all_steps) /* slowest first */
        for (int64_t a = 1; a < r->n_steps; a++)
            for (int64_t b = a; b > 0 && r->steps[idx[b]].p.ms > r->steps[idx[b - 1]].p.ms; b--) {
                int64_t tmp = idx[b];
                idx[b] = idx[b - 1];
                idx[b - 1] = tmp;
            }
    int64_t shown = all_steps ? r->n_steps : (r->n_steps < 25 ? r->n_steps : 25);
    printf("  steps (%s):\n", all_steps ? "in order" : "slowest first; --all-steps for every one");
    printf("    %4s %10s %6s %9s %6s %9s %6s  %-9s %s\n", "#", "ms", "share", "GB/s", "%BW", "TFLOP/s", "%FLOP",
           "class", "step (op): cure");
    for (int64_t q = 0; q < shown; q++) {
        const ig_diag_step *s = &r->steps[idx[q]];
        printf("    %4lld %10.4f %5.1f%% %9.2f %5.1f%% %9.4f %5.1f%%  %-9s %s (%s): %s\n", (long long)idx[q], s->p.ms,
               r->steps_ms > 0 ? 100 * s->p.ms / r->steps_ms : 0, s->gbs, 100 * s->pct_bw, s->tflops,
               100 * s->pct_flops, ig__diag_class_name(s->cls), s->p.name, s->p.op[0] ? s->p.op : s->p.kind, s->cure);
    }
    free(idx);
}

static int write_file(const char *cmd, const char *path, const ig_diag_report *r,
                      bool (*fn)(const ig_diag_report *, FILE *))
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot write %s\n", cmd, path);
        return 0;
    }
    bool ok = fn(r, f);
    ok = fclose(f) == 0 && ok;
    if (!ok) fprintf(stderr, "%s: writing %s failed\n", cmd, path);
    return ok;
}

int ig__cmd_profile(int argc, char **argv)
{
    profile_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    ig_diag_report r;
    char oom[512];
    rc = ig__profile_run(&a.p, &r, oom, sizeof oom);
    if (rc == 4) fprintf(stderr, "ingot profile: out of memory: %s\n", oom);
    if (rc) return 1;
    if (a.json)
        ig__diag_write_json(&r, stdout);
    else
        print_text(&r, a.all_steps);
    if (a.html && !write_file(a.p.cmd, a.html, &r, ig__diag_write_html)) rc = 1;
    if (a.trace && !write_file(a.p.cmd, a.trace, &r, ig__diag_write_trace)) rc = 1;
    ig__profile_free(&r);
    return rc;
}
