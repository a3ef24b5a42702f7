/*
 * cmd_bench.c -- `ingot bench`: how fast a model runs, and what it costs, on the GPU (trtexec's job).
 *
 *   ingot bench MODEL.onnx [--fp16] [--batch N] [--shapes NAME:DIMS] [--iterations N | --duration S]
 *                          [--warmup N] [--no-graph] [--json] [--workspace BYTES] [--mem-limit BYTES]
 *                          [--deterministic] [--profile] [--cpu]
 *                          [--device cpu|cuda] [--no-optimize] [--disable-pass P]
 *
 * Reports throughput (back-to-back runs, one synchronisation at the end), latency min/median/mean/p90/
 * p99/max both as GPU time (CUDA events around each run) and host wall time (enqueue to completion),
 * build time (engine: lowering + weight conversion; context: plan, the one arena allocation, algorithm
 * tuning), device memory by account (weights, arena with its largest workspace, and the rest as
 * measured by cudaMemGetInfo deltas: CUDA context growth, library handles, kernels, graphs), and the
 * device allocations and frees the library made during the timed runs (must be 0). Inputs are random
 * and resident on the GPU before timing, as for the PyTorch baselines. Without a usable GPU it says so
 * and times the CPU backend instead; every option the CPU backend does not take is then named in a
 * warning. Throughput counts the batch that ran: the leading dim of the inputs as bound, whatever
 * --batch asked for (a model with a fixed batch runs its own).
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef INGOT_HAVE_CUDA
#include "ingot_cuda.h"
#endif

typedef struct bench_opts {
    const char *path;
    int64_t iterations, warmup;
    uint64_t workspace, mem_limit;
    int deterministic;
    double duration;
    int fp16, graph, json, profile, cpu, cuda;
    int given_warmup, given_workspace; /* set explicitly (the CPU backend warns about what it ignores) */
    ig_cli_opt opt;                    /* --no-optimize, --disable-pass */
    ig_cli_shapes shapes;              /* --batch, --shapes */
} bench_opts;

static void bench_usage(FILE *f)
{
    fprintf(f, "usage: ingot bench MODEL.onnx [--fp16] [--batch N] [--shapes NAME:DIMS[,...]]\n"
               "                   [--iterations N | --duration S] [--warmup N] [--no-graph] [--json]\n"
               "                   [--workspace BYTES] [--mem-limit BYTES] [--deterministic] [--profile]\n"
               "                   [--cpu | --device cpu|cuda]\n"
               "                   [--no-optimize] [--disable-pass NAME[,NAME]]\n"
               "  --fp16          fp16 storage, fp32 accumulation (default: fp32, TF32 off; CUDA only)\n"
               "  --batch N       bind each input's symbolic leading dim to N (default 1); a model whose batch\n"
               "                  is fixed runs its own, and throughput counts what ran\n"
               "  --shapes N:DIMS whole input shapes, e.g. --shapes input_ids:4x128 (repeatable); a symbolic\n"
               "                  dim --batch does not cover must be given here\n"
               "  --iterations N  timed runs (default: as many as --duration allows, at least 20)\n"
               "  --duration S    seconds of timed runs per phase (default 2)\n"
               "  --warmup N      untimed runs after the first (default 20 on the GPU, 0 on the CPU)\n"
               "  --no-graph      launch steps one by one instead of replaying a CUDA Graph (CUDA only)\n"
               "  --json          one JSON object on stdout\n"
               "  --workspace BYTES  the workspace budget of cuDNN/cuBLASLt algorithms (e.g. 1G; default 4G or\n"
               "                  1/16 of the GPU's memory; CUDA only)\n"
               "  --mem-limit BYTES  hard cap on weights + context memory (CUDA only; default none)\n"
               "  --deterministic choose algorithms without timing (CUDA only)\n"
               "  --profile       also time every step (a graph replay with an event after each step,\n"
               "                  each event's ~2 us included; `ingot profile` takes it off) and list the slowest\n"
               "                  (--profile-all: and then every step in program order; CUDA only)\n"
               "  --device D      cuda: the GPU or an error; cpu: the CPU backend (default: the GPU when\n"
               "                  one is usable, else the CPU, saying why)\n"
               "  --cpu           the same as --device cpu\n" IG_CLI_OPT_USAGE);
}

typedef struct lat {
    double min, median, mean, p90, p99, max;
} lat;

static lat summarize(double *v, int64_t n)
{
    lat l = {0};
    if (n <= 0) return l;
    l.median = ig__cli_median(v, n); /* v sorted from here */
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += v[i];
    l.min = v[0];
    l.max = v[n - 1];
    l.mean = s / (double)n;
    l.p90 = v[(int64_t)floor(0.90 * (double)(n - 1))];
    l.p99 = v[(int64_t)floor(0.99 * (double)(n - 1))];
    return l;
}

static void print_lat(const char *what, lat l)
{
    printf("  %-22s min %8.4f  median %8.4f  mean %8.4f  p90 %8.4f  p99 %8.4f  max %8.4f ms\n", what, l.min, l.median,
           l.mean, l.p90, l.p99, l.max);
}

static void json_lat(const char *key, lat l, int last)
{
    printf(
        "  \"%s\": {\"min\": %.5f, \"median\": %.5f, \"mean\": %.5f, \"p90\": %.5f, \"p99\": %.5f, \"max\": %.5f}%s\n",
        key, l.min, l.median, l.mean, l.p90, l.p99, l.max, last ? "" : ",");
}

static int parse_args(int argc, char **argv, bench_opts *o)
{
    memset(o, 0, sizeof *o);
    o->warmup = 20;
    o->duration = 2.0;
    o->graph = 1;
    ig__cli_opt_init(&o->opt);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = ig__cli_opt_arg(argc, argv, &i, &o->opt);
        if (r == 0) r = ig__cli_shapes_arg("ingot bench", argc, argv, &i, &o->shapes);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(a, "--fp16"))
            o->fp16 = 1;
        else if (!strcmp(a, "--no-graph"))
            o->graph = 0;
        else if (!strcmp(a, "--json"))
            o->json = 1;
        else if (!strcmp(a, "--profile"))
            o->profile = 1;
        else if (!strcmp(a, "--profile-all"))
            o->profile = 2;
        else if (!strcmp(a, "--cpu"))
            o->cpu = 1;
        else if (!strcmp(a, "--device") && i + 1 < argc) {
            const char *d = argv[++i];
            if (strcmp(d, "cpu") != 0 && strcmp(d, "cuda") != 0) {
                fprintf(stderr, "ingot bench: --device expects cpu or cuda, got '%s'\n", d);
                return 2;
            }
            o->cpu = !strcmp(d, "cpu");
            o->cuda = !o->cpu;
        } else if (!strcmp(a, "--iterations") && i + 1 < argc) {
            if (!ig__cli_parse_i64("--iterations", argv[++i], 1, &o->iterations)) return 2;
        } else if (!strcmp(a, "--warmup") && i + 1 < argc) {
            if (!ig__cli_parse_i64("--warmup", argv[++i], 0, &o->warmup)) return 2;
            o->given_warmup = 1;
        } else if (!strcmp(a, "--workspace") && i + 1 < argc) {
            if (!ig__cli_parse_bytes("--workspace", argv[++i], &o->workspace) || !o->workspace) return 2;
            o->given_workspace = 1;
        } else if (!strcmp(a, "--mem-limit") && i + 1 < argc) {
            if (!ig__cli_parse_bytes("--mem-limit", argv[++i], &o->mem_limit) || !o->mem_limit) return 2;
            o->given_workspace = 1;
        } else if (!strcmp(a, "--deterministic")) {
            o->deterministic = 1;
            o->given_workspace = 1;
        } else if (!strcmp(a, "--duration") && i + 1 < argc) {
            char *end = NULL;
            o->duration = strtod(argv[++i], &end);
            if (!end || *end || o->duration <= 0) {
                fprintf(stderr, "ingot bench: --duration expects seconds > 0, got '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            bench_usage(stdout);
            return 1;
        } else if (a[0] == '-' || o->path) {
            fprintf(stderr, "ingot bench: unexpected argument '%s'\n", a);
            bench_usage(stderr);
            return 2;
        } else {
            o->path = a;
        }
    }
    if (!o->path) {
        bench_usage(stderr);
        return 2;
    }
    if (o->cpu && o->cuda) {
        fprintf(stderr, "ingot bench: --cpu and --device cuda contradict each other\n");
        return 2;
    }
    return 0;
}

/* Open the model and bind its inputs: concrete shapes, leading dims 1 unless --batch says otherwise. */
static int open_target(const bench_opts *o, ig_cli_target *t)
{
    ig__cli_target_init(t, "ingot bench");
    t->shapes = o->shapes;
    return ig__cli_open(t, o->path) && ig__cli_bind(t, IG_CLI_BIND_DEFAULT_1 | IG_CLI_BIND_CONCRETE, NULL, 0);
}

/* s as a JSON string body (quotes and control characters escaped). */
static void json_str(const char *s)
{
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
}

static void print_err(const char *what, ingot_runtime *rt)
{
    fprintf(stderr, "ingot bench: %s: %s: %s\n", what, ingot_status_name(ingot_runtime_errcode(rt)),
            ingot_runtime_errmsg(rt));
}

/* A failed call on a context: its message is on the context, not the runtime. */
static void print_ctx_err(const char *what, const ingot_context *c)
{
    fprintf(stderr, "ingot bench: %s: %s: %s\n", what, ingot_status_name(ingot_context_errcode(c)),
            ingot_context_errmsg(c));
}

/* ---- CPU ------------------------------------------------------------------------------------------ */

/* Say, for each option given that the CPU backend does not take, that it is ignored. */
static void warn_cpu_ignored(const bench_opts *o)
{
    if (o->fp16) fprintf(stderr, "ingot bench: warning: --fp16 ignored: the CPU backend computes in float32\n");
    if (o->profile)
        fprintf(stderr, "ingot bench: warning: --profile%s ignored: per-step profiles are CUDA only\n",
                o->profile == 2 ? "-all" : "");
    if (!o->graph) fprintf(stderr, "ingot bench: warning: --no-graph ignored: CUDA Graphs are CUDA only\n");
    if (o->given_workspace)
        fprintf(stderr, "ingot bench: warning: --workspace, --mem-limit and --deterministic are ignored: they "
                        "choose cuDNN/cuBLASLt algorithms\n");
}

static int bench_cpu(const bench_opts *o, const char *why)
{
    ig_cli_target t;
    int rc = 1;
    ingot_context *c = NULL;
    ingot_tensor ins[64];
    int64_t n_in = 0;
    memset(ins, 0, sizeof ins);
    double *lat_h = NULL;
    if (!o->json)
        printf("ingot bench: %s; timing the CPU backend%s\n", why,
               o->cpu ? "" : " (--device cpu or --cpu chooses it without looking for a GPU)");
    warn_cpu_ignored(o);
    if (!open_target(o, &t)) goto out;
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    ig__cli_opt_apply(&o->opt, &bo);
    double t0 = ig__now_ms();
    if (!ig__cli_build(&t, &bo)) goto out;
    if (ingot_context_create(t.engine, NULL, &c) != INGOT_OK) {
        print_err("context", t.rt);
        goto out;
    }
    double build_ms = ig__now_ms() - t0;
    uint64_t seed = 1;
    n_in = ig__cli_input_count(&t);
    if (n_in > 64) {
        fprintf(stderr, "ingot bench: more than 64 inputs\n");
        n_in = 0;
        goto out;
    }
    for (int64_t i = 0; i < n_in; i++) {
        if (!ig__cli_input_tensor(&t, i, &ins[i])) goto out; /* bound concrete above */
        if (!(ins[i].data = ig__cli_random_bytes(ins[i].dtype, ins[i].bytes, &seed))) goto out;
    }
    double f0 = ig__now_ms();
    if (ingot_context_run(c, ins, n_in) != INGOT_OK) {
        print_ctx_err("run", c);
        goto out;
    }
    double first_ms = ig__now_ms() - f0;
    int64_t warmup = o->given_warmup ? o->warmup : 0; /* the CPU has no caches to fill beyond the first run */
    for (int64_t i = 0; i < warmup; i++)
        if (ingot_context_run(c, ins, n_in) != INGOT_OK) {
            print_ctx_err("warm-up", c);
            goto out;
        }
    int64_t iters = o->iterations ? o->iterations : 0;
    if (!iters) iters = first_ms > 0 ? (int64_t)(o->duration * 1e3 / first_ms) : 10;
    if (iters < 3) iters = 3;
    if (iters > 10000) iters = 10000;
    lat_h = calloc((size_t)iters, sizeof *lat_h);
    if (!lat_h) goto out;
    for (int64_t i = 0; i < iters; i++) {
        double a = ig__now_ms();
        if (ingot_context_run(c, ins, n_in) != INGOT_OK) {
            print_ctx_err("run", c);
            goto out;
        }
        lat_h[i] = ig__now_ms() - a;
    }
    lat l = summarize(lat_h, iters);
    double per_s = l.mean > 0 ? (double)t.batch * 1e3 / l.mean : 0;
    if (o->json) {
        printf("{\n  \"model\": \"");
        json_str(o->path);
        printf("\",\n  \"backend\": \"cpu\",\n  \"reason\": \"");
        json_str(why);
        printf("\",\n  \"batch\": %" PRId64 ",\n  \"iterations\": %" PRId64 ",\n  \"warmup\": %" PRId64
               ",\n  \"build_ms\": %.3f,\n  \"first_run_ms\": %.3f,\n  \"throughput_per_s\": %.2f,\n",
               t.batch, iters, warmup, build_ms, first_ms, per_s);
        json_lat("latency_host_ms", l, 1);
        printf("}\n");
    } else {
        printf("model %s, batch %" PRId64 ", CPU backend, %" PRId64 " iterations\n", o->path, t.batch, iters);
        printf("  build %.1f ms, first run %.1f ms\n", build_ms, first_ms);
        printf("  throughput %.2f per s (batch %" PRId64 " per run)\n", per_s, t.batch);
        print_lat("latency (host)", l);
    }
    rc = 0;
out:
    for (int64_t i = 0; i < n_in; i++) free(ins[i].data);
    free(lat_h);
    ingot_context_destroy(c);
    ig__cli_close(&t);
    return rc;
}

#ifdef INGOT_HAVE_CUDA

#define CK(call)                                                                     \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            fprintf(stderr, "ingot bench: %s: %s\n", #call, cudaGetErrorString(e_)); \
            goto out;                                                                \
        }                                                                            \
    } while (0)

typedef struct {
    double ms;
    int64_t step; /* a step's index, or its kind's step count */
    char kind[16];
} prof_row;

static int by_ms_desc(const void *a, const void *b)
{
    double x = ((const prof_row *)a)->ms, y = ((const prof_row *)b)->ms;
    return (x < y) - (x > y);
}

static int by_kind(const void *a, const void *b)
{
    return strcmp(((const prof_row *)a)->kind, ((const prof_row *)b)->kind);
}

/* The profile's slowest steps and time by step kind (a label's first word), sorted, O(n log n). */
static void print_profile(FILE *f, const bench_opts *o, int64_t batch, char (*labels)[96], const double *pms, int64_t n)
{
    prof_row *v = calloc((size_t)n, sizeof *v), *kd = calloc((size_t)n, sizeof *kd);
    if (!v || !kd) {
        fprintf(stderr, "ingot bench: out of memory for the profile of %" PRId64 " steps\n", n);
        goto out;
    }
    double tot = 0;
    for (int64_t k = 0; k < n; k++) {
        tot += pms[k];
        v[k] = (prof_row){.ms = pms[k], .step = k};
        kd[k] = (prof_row){.ms = pms[k], .step = 1};
        snprintf(kd[k].kind, sizeof kd[k].kind, "%.*s", (int)strcspn(labels[k], " "), labels[k]);
    }
    qsort(v, (size_t)n, sizeof *v, by_ms_desc);
    fprintf(f, "  profile of %s batch %" PRId64 " (an event after each step, %.3f ms in %" PRId64 " steps), slowest:\n",
            o->path, batch, tot, n);
    for (int64_t k = 0; k < n && k < 25; k++)
        fprintf(f, "    %4" PRId64 "  %8.4f ms  %5.1f%%  %s\n", v[k].step, v[k].ms, 100 * v[k].ms / tot,
                labels[v[k].step]);
    qsort(kd, (size_t)n, sizeof *kd, by_kind);
    int64_t m = 0;
    for (int64_t k = 0; k < n; k++)
        if (m && !strcmp(kd[m - 1].kind, kd[k].kind)) {
            kd[m - 1].ms += kd[k].ms;
            kd[m - 1].step++;
        } else
            kd[m++] = kd[k];
    qsort(kd, (size_t)m, sizeof *kd, by_ms_desc);
    for (int64_t k = 0; k < m; k++)
        fprintf(f, "    %-10s %4" PRId64 " steps %9.4f ms %5.1f%%\n", kd[k].kind, kd[k].step, kd[k].ms,
                100 * kd[k].ms / tot);
    if (o->profile == 2)
        for (int64_t k = 0; k < n; k++) fprintf(f, "    step %4" PRId64 "  %8.4f ms  %s\n", k, pms[k], labels[k]);
out:
    free(v);
    free(kd);
}

static int bench_gpu(const bench_opts *o)
{
    ig_cli_target t;
    ig__cli_target_init(&t, "ingot bench");
    int rc = 1;
    ingot_context *c = NULL;
    ingot_tensor ins[64], outs[64];
    int64_t n_in = 0, n_out = 0;
    memset(ins, 0, sizeof ins);
    memset(outs, 0, sizeof outs);
    double *lat_g = NULL, *lat_h = NULL;
    cudaStream_t stream = NULL;
    cudaEvent_t *ev = NULL;
    int64_t n_ev = 0;
    char(*labels)[96] = NULL;
    double *pms = NULL;

    struct cudaDeviceProp prop;
    CK(cudaSetDevice(0));
    CK(cudaFree(0)); /* create the CUDA context now, so its memory is not billed to the model */
    CK(cudaGetDeviceProperties(&prop, 0));
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    size_t free0 = 0, free1 = 0, free2 = 0, free3 = 0, free4 = 0, total = 0;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CK(cudaMemGetInfo(&free0, &total));

    if (!open_target(o, &t)) goto out;
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CUDA;
    bo.precision = o->fp16 ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT;
    bo.workspace_limit = (size_t)o->workspace;
    bo.mem_limit = (size_t)o->mem_limit;
    bo.deterministic = o->deterministic;
    ig__cli_opt_apply(&o->opt, &bo);
    double t0 = ig__now_ms();
    if (!ig__cli_build(&t, &bo)) goto out;
    double build_ms = ig__now_ms() - t0;
    CK(cudaMemGetInfo(&free1, &total));
    t0 = ig__now_ms();
    if (ingot_context_create(t.engine, NULL, &c) != INGOT_OK) {
        print_err("context", t.rt);
        goto out;
    }
    double ctx_ms = ig__now_ms() - t0;
    CK(cudaMemGetInfo(&free2, &total));
    if (!o->graph) ingot_cuda_context_set_graphs(c, 0);

    /* inputs (random, on the device) and outputs */
    uint64_t seed = 1;
    n_in = ig__cli_input_count(&t);
    n_out = ig__cli_output_count(&t);
    if (n_in > 64 || n_out > 64) {
        fprintf(stderr, "ingot bench: more than 64 inputs or outputs\n");
        n_in = n_out = 0;
        goto out;
    }
    for (int64_t i = 0; i < n_in; i++) {
        if (!ig__cli_input_tensor(&t, i, &ins[i])) goto out; /* bound concrete above */
        void *h = ig__cli_random_bytes(ins[i].dtype, ins[i].bytes, &seed);
        if (!h) goto out;
        CK(cudaMalloc(&ins[i].data, ins[i].bytes ? ins[i].bytes : 1));
        cudaError_t ce = cudaMemcpy(ins[i].data, h, ins[i].bytes, cudaMemcpyHostToDevice);
        free(h);
        CK(ce);
    }
    /* the first run prepares the instance if the context could not (symbolic shapes at creation) */
    for (int64_t j = 0; j < n_out; j++) {
        if (ingot_cuda_context_output_info(c, j, &outs[j]) != INGOT_OK) {
            /* shapes not prepared yet: one run with generous buffers is not possible; bind via a host run */
            print_ctx_err("output info", c);
            goto out;
        }
        CK(cudaMalloc(&outs[j].data, outs[j].bytes ? outs[j].bytes : 1));
    }
    double f0 = ig__now_ms();
    if (ingot_cuda_context_enqueue(c, ins, n_in, outs, n_out, stream) != INGOT_OK) {
        print_ctx_err("first run", c);
        goto out;
    }
    CK(cudaStreamSynchronize(stream));
    double first_ms = ig__now_ms() - f0;
    for (int64_t i = 0; i < o->warmup; i++)
        if (ingot_cuda_context_enqueue(c, ins, n_in, outs, n_out, stream) != INGOT_OK) {
            print_ctx_err("warm-up", c);
            goto out;
        }
    CK(cudaStreamSynchronize(stream));

    /* how many iterations fit the duration: time a few */
    int64_t iters = o->iterations;
    if (!iters) {
        double a = ig__now_ms();
        for (int k = 0; k < 5; k++)
            if (ingot_cuda_context_enqueue(c, ins, n_in, outs, n_out, stream) != INGOT_OK) {
                print_ctx_err("run", c);
                goto out;
            }
        CK(cudaStreamSynchronize(stream));
        double per = (ig__now_ms() - a) / 5;
        iters = per > 0 ? (int64_t)(o->duration * 1e3 / per) : 1000;
        if (iters < 20) iters = 20;
        if (iters > 20000) iters = 20000;
    }
    lat_g = calloc((size_t)iters, sizeof *lat_g);
    lat_h = calloc((size_t)iters, sizeof *lat_h);
    n_ev = 2 * iters + 2;
    ev = calloc((size_t)n_ev, sizeof *ev);
    if (!lat_g || !lat_h || !ev) goto out;
    for (int64_t k = 0; k < n_ev; k++) CK(cudaEventCreate(&ev[k]));

    uint64_t nm0, nf0, nm1, nf1, live;
    ingot_cuda_alloc_counts(&nm0, &nf0, &live);
    CK(cudaMemGetInfo(&free3, &total));
    /* latency: one run at a time */
    for (int64_t i = 0; i < iters; i++) {
        double a = ig__now_ms();
        cudaEventRecord(ev[2 * i], stream);
        if (ingot_cuda_context_enqueue(c, ins, n_in, outs, n_out, stream) != INGOT_OK) {
            print_ctx_err("run", c);
            goto out;
        }
        cudaEventRecord(ev[2 * i + 1], stream);
        CK(cudaEventSynchronize(ev[2 * i + 1]));
        lat_h[i] = ig__now_ms() - a;
    }
    for (int64_t i = 0; i < iters; i++) {
        float ms = 0;
        cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]);
        lat_g[i] = ms;
    }
    /* throughput: back to back, one synchronisation */
    cudaEventRecord(ev[n_ev - 2], stream);
    for (int64_t i = 0; i < iters; i++)
        if (ingot_cuda_context_enqueue(c, ins, n_in, outs, n_out, stream) != INGOT_OK) {
            print_ctx_err("run", c);
            goto out;
        }
    cudaEventRecord(ev[n_ev - 1], stream);
    CK(cudaEventSynchronize(ev[n_ev - 1]));
    float total_ms = 0;
    cudaEventElapsedTime(&total_ms, ev[n_ev - 2], ev[n_ev - 1]);
    CK(cudaMemGetInfo(&free4, &total));
    ingot_cuda_alloc_counts(&nm1, &nf1, &live);
    double per_s = total_ms > 0 ? (double)t.batch * (double)iters * 1e3 / total_ms : 0;

    ingot_cuda_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    ingot_cuda_context_get_stats(c, &st);
    lat lg = summarize(lat_g, iters), lh = summarize(lat_h, iters);
    long long mem_model = (long long)free0 - (long long)free2;
    long long rest = mem_model - (long long)st.weights_bytes - (long long)st.arena_bytes;
    long long during = (long long)free3 - (long long)free4;

    int64_t n_prof = 0;
    if (o->profile) {
        int64_t max = st.n_steps + 1;
        labels = calloc((size_t)max, sizeof *labels);
        pms = calloc((size_t)max, sizeof *pms);
        if (labels && pms) n_prof = ingot_cuda_context_profile(c, ins, n_in, outs, n_out, stream, max, labels, pms);
    }

    const char *prec = o->fp16 ? "fp16" : "fp32";
    if (o->json) {
        printf("{\n  \"model\": \"");
        json_str(o->path);
        printf("\",\n  \"backend\": \"cuda\",\n  \"device\": \"");
        json_str(prop.name);
        printf("\",\n  \"driver\": %d,\n  \"runtime\": %d,\n  \"precision\": \"%s\",\n  \"batch\": %" PRId64 ",\n"
               "  \"graph\": %d,\n  \"graph_captured\": %d,\n  \"graph_fallback\": \"",
               driver, runtime, prec, t.batch, o->graph, st.graph_captured);
        json_str(st.graph_fallback);
        printf("\",\n  \"iterations\": %" PRId64 ",\n", iters);
        printf("  \"build_ms\": %.3f,\n  \"context_ms\": %.3f,\n  \"tune_ms\": %.3f,\n  \"first_run_ms\": %.3f,\n",
               build_ms, ctx_ms, st.tune_ms, first_ms);
        printf("  \"throughput_per_s\": %.2f,\n", per_s);
        json_lat("latency_gpu_ms", lg, 0);
        json_lat("latency_host_ms", lh, 0);
        printf("  \"memory_bytes\": {\"weights\": %zu, \"arena\": %zu, \"workspace_max\": %zu, "
               "\"activation_lower_bound\": %zu, "
               "\"no_reuse\": %zu, \"constants\": %zu, \"rest\": %lld, \"total\": %lld},\n",
               st.weights_bytes, st.arena_bytes, st.workspace_bytes, st.activation_lower_bound_bytes, st.no_reuse_bytes,
               st.constant_bytes, rest, mem_model);
        printf("  \"timed_runs\": {\"device_mallocs\": %" PRIu64 ", \"device_frees\": %" PRIu64
               ", \"free_memory_delta\": %lld},\n",
               nm1 - nm0, nf1 - nf0, during);
        printf("  \"steps\": %" PRId64 ",\n  \"nodes_fused\": %" PRId64 ",\n  \"graph_updates\": %" PRId64 "\n}\n",
               st.n_steps, st.n_nodes_fused, st.graph_updates);
    } else {
        printf("model %s on %s (driver %d, runtime %d), %s, batch %" PRId64 ", CUDA graph %s\n", o->path, prop.name,
               driver, runtime, prec, t.batch,
               !o->graph           ? "off"
               : st.graph_captured ? "on"
                                   : "FAILED (step by step)");
        if (o->graph && !st.graph_captured && st.graph_fallback[0]) printf("  graph fallback: %s\n", st.graph_fallback);
        printf("  build: engine %.1f ms, context %.1f ms (algorithm tuning %.1f ms), first run %.2f ms\n", build_ms,
               ctx_ms, st.tune_ms, first_ms);
        printf("  %" PRId64 " steps per inference (%" PRId64 " graph nodes fused into others)\n", st.n_steps,
               st.n_nodes_fused);
        printf("  throughput            %.1f per s (%" PRId64 " back-to-back runs)\n", per_s, iters);
        print_lat("latency (GPU, events)", lg);
        print_lat("latency (host wall)", lh);
        printf("  memory: weights %.1f MB, arena %.1f MB (largest workspace %.1f MB, live lower bound %.1f MB, "
               "no reuse %.1f MB), rest %.1f MB, total %.1f MB\n",
               st.weights_bytes / 1e6, st.arena_bytes / 1e6, st.workspace_bytes / 1e6,
               st.activation_lower_bound_bytes / 1e6, st.no_reuse_bytes / 1e6, rest / 1e6, mem_model / 1e6);
        printf("  timed runs: %" PRIu64 " device allocations, %" PRIu64 " frees, free memory changed by %lld bytes\n",
               nm1 - nm0, nf1 - nf0, during);
    }
    if (n_prof > 0) print_profile(o->json ? stderr : stdout, o, t.batch, labels, pms, n_prof);
    rc = (nm1 != nm0 || nf1 != nf0) ? 3 : 0;
    if (rc) fprintf(stderr, "ingot bench: the library allocated or freed device memory during the timed runs\n");
out:
    if (ev)
        for (int64_t k = 0; k < n_ev; k++)
            if (ev[k]) cudaEventDestroy(ev[k]);
    free(ev);
    free(lat_g);
    free(lat_h);
    free(labels);
    free(pms);
    for (int64_t i = 0; i < n_in; i++) cudaFree(ins[i].data);
    for (int64_t j = 0; j < n_out; j++) cudaFree(outs[j].data);
    ingot_context_destroy(c);
    ig__cli_close(&t);
    if (stream) cudaStreamDestroy(stream);
    return rc;
}
#endif

int ig__cmd_bench(int argc, char **argv)
{
    bench_opts o;
    int r = parse_args(argc, argv, &o);
    if (r) return r == 1 ? 0 : r;
    if (o.cpu) return bench_cpu(&o, "--device cpu given");
#ifdef INGOT_HAVE_CUDA
    char why[512] = "";
    if (ingot_cuda_available(why, sizeof why)) return bench_gpu(&o);
#else
    const char *why = "this build of ingot has no CUDA backend";
#endif
    if (o.cuda) {
        fprintf(stderr, "ingot bench: --device cuda: %s (--device cpu times the CPU backend)\n",
                why[0] ? why : "no usable GPU");
        return 1;
    }
    return bench_cpu(&o, why[0] ? why : "no usable NVIDIA GPU or driver found");
}
