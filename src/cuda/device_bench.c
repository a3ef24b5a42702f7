/*
 * device_bench.c -- the GPU side of the diagnostics (device_bench.h): the device's measured ceilings
 * (`ingot device`), other processes' memory through NVML, and the per-step costs of a lowered program.
 *
 * Every CUDA and cuBLASLt call is checked; a measurement that fails returns its message, and whatever
 * it allocated is freed on the way out. The rates are the best of several timed repetitions (events on
 * one stream), after a warm-up.
 */
#define _GNU_SOURCE /* dlopen, dlsym */
#include "device_bench.h"

#include "cuda_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

ingot_status ig__cuda_device_identity(int device, ig_cuda_bench *out, ig_err *err)
{
    memset(out, 0, sizeof *out);
    ingot_status st = ig__cuda_probe(err);
    if (st != INGOT_OK) return st;
    struct cudaDeviceProp p;
    if ((st = IG_CU(err, NULL, cudaSetDevice(device))) != INGOT_OK ||
        (st = IG_CU(err, NULL, cudaGetDeviceProperties(&p, device))) != INGOT_OK ||
        (st = IG_CU(err, NULL, cudaDriverGetVersion(&out->driver))) != INGOT_OK ||
        (st = IG_CU(err, NULL, cudaRuntimeGetVersion(&out->runtime))) != INGOT_OK ||
        (st = IG_CU(err, NULL, cudaMemGetInfo(&out->mem_free, &out->mem_total))) != INGOT_OK)
        return st;
    snprintf(out->name, sizeof out->name, "%.127s", p.name);
    out->sm_major = p.major;
    out->sm_minor = p.minor;
    out->n_sms = p.multiProcessorCount;
    out->l2_bytes = (size_t)p.l2CacheSize;
    return INGOT_OK;
}

/* ---- the measurements ------------------------------------------------------------------------------ */

typedef struct bench {
    cudaStream_t s;
    cudaEvent_t a, b;
    ig_err *err;
} bench;

/* Milliseconds between the two events after the stream ran. */
static ingot_status elapsed(bench *B, float *ms)
{
    ingot_status st = IG_CU(B->err, NULL, cudaEventSynchronize(B->b));
    if (st == INGOT_OK) st = IG_CU(B->err, NULL, cudaEventElapsedTime(ms, B->a, B->b));
    return st;
}

static ingot_status copy_bandwidth(bench *B, double *gbs)
{
    const size_t bytes = (size_t)1 << 30; /* 1 GiB, far beyond any L2 */
    void *x = NULL, *y = NULL;
    ingot_status st = IG_CU(B->err, NULL, ig__cu_malloc(&x, bytes));
    if (st == INGOT_OK) st = IG_CU(B->err, NULL, ig__cu_malloc(&y, bytes));
    if (st == INGOT_OK) st = IG_CU(B->err, NULL, cudaMemsetAsync(x, 1, bytes, B->s));
    float best = 1e30f;
    for (int rep = 0; rep < 6 && st == INGOT_OK; rep++) {
        float ms = 0;
        if ((st = IG_CU(B->err, NULL, cudaEventRecord(B->a, B->s))) != INGOT_OK ||
            (st = IG_CU(B->err, NULL, cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, B->s))) != INGOT_OK ||
            (st = IG_CU(B->err, NULL, cudaEventRecord(B->b, B->s))) != INGOT_OK || (st = elapsed(B, &ms)) != INGOT_OK)
            break;
        if (rep > 0 && ms < best) best = ms; /* the first copy warms up */
    }
    if (st == INGOT_OK) *gbs = 2.0 * (double)bytes / (best * 1e-3) / 1e9;
    if (x) ig__cu_free(x);
    if (y) ig__cu_free(y);
    return st;
}

/* n x n x n through cuBLASLt in dtype t (fp32 accumulation; CUBLAS_COMPUTE_32F keeps fp32 exact, no TF32). */
static ingot_status gemm_rate(bench *B, cublasLtHandle_t lt, cudaDataType_t t, size_t es, int64_t n, double *tflops)
{
    ig_err *err = B->err;
    void *a = NULL, *b = NULL, *d = NULL, *ws = NULL;
    const size_t ws_bytes = (size_t)64 << 20;
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t l = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t h;
    int found = 0;
    size_t bytes = (size_t)(n * n) * es;
    float one = 1.0f, zero = 0.0f;
    ingot_status st = IG_CU(err, NULL, ig__cu_malloc(&a, bytes));
    if (st == INGOT_OK) st = IG_CU(err, NULL, ig__cu_malloc(&b, bytes));
    if (st == INGOT_OK) st = IG_CU(err, NULL, ig__cu_malloc(&d, bytes));
    if (st == INGOT_OK) st = IG_CU(err, NULL, ig__cu_malloc(&ws, ws_bytes));
    /* small values (0x3c00-ish halves, 1.0f floats would do too): zeros might take a shortcut */
    if (st == INGOT_OK) st = IG_CU(err, NULL, cudaMemsetAsync(a, 0x3c, bytes, B->s));
    if (st == INGOT_OK) st = IG_CU(err, NULL, cudaMemsetAsync(b, 0x3c, bytes, B->s));
    if (st == INGOT_OK) st = IG_CUBLAS(err, NULL, cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    if (st == INGOT_OK) st = IG_CUBLAS(err, NULL, cublasLtMatrixLayoutCreate(&l, t, (uint64_t)n, (uint64_t)n, n));
    if (st == INGOT_OK) st = IG_CUBLAS(err, NULL, cublasLtMatmulPreferenceCreate(&pref));
    if (st == INGOT_OK)
        st = IG_CUBLAS(err, NULL,
                       cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                            sizeof ws_bytes));
    if (st == INGOT_OK)
        st = IG_CUBLAS(err, NULL, cublasLtMatmulAlgoGetHeuristic(lt, op, l, l, l, l, pref, 1, &h, &found));
    if (st == INGOT_OK && found < 1)
        st = ig__errf(err, INGOT_ERR_CUBLAS, "cuBLASLt proposes no algorithm for a %lld^3 GEMM", (long long)n);
    float best = 1e30f;
    const int inner = 10;
    for (int rep = 0; rep < 4 && st == INGOT_OK; rep++) {
        float ms = 0;
        if ((st = IG_CU(err, NULL, cudaEventRecord(B->a, B->s))) != INGOT_OK) break;
        for (int k = 0; k < inner && st == INGOT_OK; k++)
            st = IG_CUBLAS(err, NULL,
                           cublasLtMatmul(lt, op, &one, a, l, b, l, &zero, d, l, d, l, &h.algo, ws, ws_bytes, B->s));
        if (st != INGOT_OK || (st = IG_CU(err, NULL, cudaEventRecord(B->b, B->s))) != INGOT_OK ||
            (st = elapsed(B, &ms)) != INGOT_OK)
            break;
        if (rep > 0 && ms / inner < best) best = ms / inner;
    }
    if (st == INGOT_OK) *tflops = 2.0 * (double)n * (double)n * (double)n / (best * 1e-3) / 1e12;
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (l) cublasLtMatrixLayoutDestroy(l);
    if (op) cublasLtMatmulDescDestroy(op);
    ig__cu_free(a);
    ig__cu_free(b);
    ig__cu_free(d);
    ig__cu_free(ws);
    return st;
}

/* A one-element fill, back to back on a stream (launch-bound by construction), then the same kernels
 * as the nodes of one CUDA Graph. */
static ingot_status launch_latency(bench *B, double *launch_us, double *node_us)
{
    ig_err *err = B->err;
    const int n = 2000;
    void *x = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    float ms = 0;
    ingot_status st = IG_CU(err, NULL, ig__cu_malloc(&x, 256));
    for (int k = 0; k < 50 && st == INGOT_OK; k++) st = IG_CU(err, NULL, ingot_cuda_fill(x, 1, 4, 0, B->s));
    if (st == INGOT_OK) st = IG_CU(err, NULL, cudaStreamSynchronize(B->s));
    if (st == INGOT_OK) st = IG_CU(err, NULL, cudaEventRecord(B->a, B->s));
    for (int k = 0; k < n && st == INGOT_OK; k++) st = IG_CU(err, NULL, ingot_cuda_fill(x, 1, 4, 0, B->s));
    if (st == INGOT_OK) st = IG_CU(err, NULL, cudaEventRecord(B->b, B->s));
    if (st == INGOT_OK && (st = elapsed(B, &ms)) == INGOT_OK) *launch_us = ms * 1e3 / n;
    /* the graph: captured on the stream (capture records, it does not run) */
    const int nodes = 500;
    if (st == INGOT_OK) st = IG_CU(err, NULL, cudaStreamBeginCapture(B->s, cudaStreamCaptureModeThreadLocal));
    if (st == INGOT_OK) {
        ingot_status cap = INGOT_OK;
        for (int k = 0; k < nodes && cap == INGOT_OK; k++) cap = IG_CU(err, NULL, ingot_cuda_fill(x, 1, 4, 0, B->s));
        st = IG_CU(err, NULL, cudaStreamEndCapture(B->s, &g));
        if (cap != INGOT_OK) st = cap;
    }
    if (st == INGOT_OK) st = IG_CU(err, NULL, cudaGraphInstantiate(&ge, g, 0));
    if (st == INGOT_OK) st = IG_CU(err, NULL, cudaGraphLaunch(ge, B->s));
    float best = 1e30f;
    for (int rep = 0; rep < 5 && st == INGOT_OK; rep++) {
        if ((st = IG_CU(err, NULL, cudaEventRecord(B->a, B->s))) != INGOT_OK ||
            (st = IG_CU(err, NULL, cudaGraphLaunch(ge, B->s))) != INGOT_OK ||
            (st = IG_CU(err, NULL, cudaEventRecord(B->b, B->s))) != INGOT_OK || (st = elapsed(B, &ms)) != INGOT_OK)
            break;
        if (ms < best) best = ms;
    }
    if (st == INGOT_OK) *node_us = best * 1e3 / nodes;
    if (ge) cudaGraphExecDestroy(ge);
    if (g) cudaGraphDestroy(g);
    if (x) ig__cu_free(x);
    return st;
}

/* cudaMalloc + cudaFree of `bytes`, best of a few; -1 when there is no room for it. */
static ingot_status malloc_cost(bench *B, size_t bytes, double *us)
{
    size_t free_b = 0, total = 0;
    ingot_status st = IG_CU(B->err, NULL, cudaMemGetInfo(&free_b, &total));
    if (st != INGOT_OK) return st;
    *us = -1;
    if (free_b < bytes + ((size_t)256 << 20)) return INGOT_OK;
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        void *p = NULL;
        double t0 = ig__now_ms();
        if ((st = IG_CU(B->err, NULL, ig__cu_malloc(&p, bytes))) != INGOT_OK) return st;
        if ((st = IG_CU(B->err, NULL, ig__cu_free(p))) != INGOT_OK) return st;
        double t = (ig__now_ms() - t0) * 1e3; /* us */
        if (t < best) best = t;
    }
    *us = best;
    return INGOT_OK;
}

ingot_status ig__cuda_device_bench(int device, ig_cuda_bench *out, ig_err *err)
{
    ingot_status st = ig__cuda_device_identity(device, out, err);
    if (st != INGOT_OK) return st;
    bench B = {NULL, NULL, NULL, err};
    cublasLtHandle_t lt = NULL;
    if ((st = IG_CU(err, NULL, cudaStreamCreateWithFlags(&B.s, cudaStreamNonBlocking))) != INGOT_OK ||
        (st = IG_CU(err, NULL, cudaEventCreate(&B.a))) != INGOT_OK ||
        (st = IG_CU(err, NULL, cudaEventCreate(&B.b))) != INGOT_OK ||
        (st = IG_CUBLAS(err, NULL, cublasLtCreate(&lt))) != INGOT_OK)
        goto out;
    if ((st = copy_bandwidth(&B, &out->copy_gbs)) != INGOT_OK) goto out;
    if ((st = gemm_rate(&B, lt, CUDA_R_32F, 4, 4096, &out->fp32_tflops)) != INGOT_OK) goto out;
    if ((st = gemm_rate(&B, lt, CUDA_R_16F, 2, 8192, &out->fp16_tflops)) != INGOT_OK) goto out;
    if ((st = gemm_rate(&B, lt, CUDA_R_16BF, 2, 8192, &out->bf16_tflops)) != INGOT_OK) goto out;
    if ((st = launch_latency(&B, &out->launch_us, &out->graph_node_us)) != INGOT_OK) goto out;
    static const size_t sizes[3] = {(size_t)1 << 20, (size_t)64 << 20, (size_t)1 << 30};
    for (int k = 0; k < 3 && st == INGOT_OK; k++) st = malloc_cost(&B, sizes[k], &out->malloc_us[k]);
    if (st == INGOT_OK) st = IG_CU(err, NULL, cudaMemGetInfo(&out->mem_free, &out->mem_total));
out:
    if (lt) cublasLtDestroy(lt);
    if (B.a) cudaEventDestroy(B.a);
    if (B.b) cudaEventDestroy(B.b);
    if (B.s) cudaStreamDestroy(B.s);
    return st;
}

/* ---- other processes: NVML, loaded when present (no link dependency) --------------------------------- */

typedef struct nvml_proc {
    unsigned int pid;
    unsigned long long used;
    unsigned int gi, ci; /* nvmlProcessInfo_t (v2 layout) */
} nvml_proc;

double ig__cuda_other_process_bytes(int device)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return -1;
    typedef int (*init_fn)(void);
    typedef int (*handle_fn)(const char *, void **);
    typedef int (*procs_fn)(void *, unsigned int *, nvml_proc *);
    init_fn init = (init_fn)dlsym(lib, "nvmlInit_v2");
    init_fn shutdown = (init_fn)dlsym(lib, "nvmlShutdown");
    handle_fn by_bus = (handle_fn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    procs_fn procs = (procs_fn)dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v2");
    double total = -1;
    char bus[32];
    void *h = NULL;
    /* NVML numbers devices its own way; the PCI bus id names the same one as CUDA's index */
    if (init && shutdown && by_bus && procs && cudaDeviceGetPCIBusId(bus, sizeof bus, device) == cudaSuccess &&
        init() == 0) {
        nvml_proc p[64];
        unsigned int n = 64;
        if (by_bus(bus, &h) == 0 && procs(h, &n, p) == 0) {
            total = 0;
            unsigned int me = (unsigned int)getpid();
            for (unsigned int i = 0; i < n && i < 64; i++)
                if (p[i].pid != me && p[i].used != ~0ull) total += (double)p[i].used;
        }
        shutdown();
    }
    dlclose(lib);
    return total;
}

/* ---- per-step costs of a lowered program ------------------------------------------------------------ */

/* Bytes of the distinct elements a (strided, possibly broadcast) view touches. */
static double view_bytes(const ig_cu_tensor *t)
{
    double n = 1;
    for (int32_t k = 0; k < t->rank; k++)
        if (t->strides[k] != 0) n *= (double)t->dims[k];
    return n * (double)ingot_dtype_size(t->dtype);
}

static int32_t step_output(const ig_cu_step *s)
{
    switch (s->kind) {
    case IG_ST_EW: return s->u.ew.out;
    case IG_ST_CONV: return s->u.conv.pool_y >= 0 ? s->u.conv.pool_y : s->u.conv.y;
    case IG_ST_GEMM: return s->u.gemm.d;
    case IG_ST_SOFTMAX: return s->u.softmax.y;
    case IG_ST_LAYERNORM: return s->u.ln.y;
    case IG_ST_REDUCE: return s->u.reduce.y;
    case IG_ST_POOL: return s->u.pool.y;
    case IG_ST_GATHER: return s->u.gather.y;
    case IG_ST_FILL: return s->u.fill.y;
    case IG_ST_ATTENTION: return s->u.attn.o;
    case IG_ST_DWCONV: return s->u.dw.y;
    default: return -1;
    }
}

ingot_status ig__cuda_step_costs(const ig_graph *g, ingot_dtype precision, int nhwc, int gelu_epilogue, int attention,
                                 int attention_kernel, ig_cuda_step_cost **out, int64_t *n, ig_err *err)
{
    *out = NULL;
    *n = 0;
    ig_cu_lower_options o = {.precision = precision,
                             .nhwc = nhwc,
                             .gelu_epilogue = gelu_epilogue,
                             .attention = attention,
                             .attention_kernel = attention_kernel};
    ig_cu_prog p;
    memset(&p, 0, sizeof p);
    ingot_status st = ig__cu_lower(g, &o, &p, err);
    ig_cu_plan_result pr;
    if (st == INGOT_OK) st = ig__cu_plan(&p, &pr, err);
    if (st != INGOT_OK) {
        ig__cu_prog_free(&p);
        return st;
    }
    ig_cuda_step_cost *c = ig__calloc((size_t)p.n_steps + 1, sizeof *c);
    if (!c) {
        ig__cu_prog_free(&p);
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    int32_t ids[16];
    for (int32_t s = 0; s < p.n_steps; s++) {
        const ig_cu_step *stp = &p.steps[s];
        ig_cuda_step_cost *x = &c[s];
        x->node = stp->node;
        snprintf(x->kind, sizeof x->kind, "%s", ig__cu_step_kind_name(stp->kind));
        snprintf(x->what, sizeof x->what, "%s", stp->what ? stp->what : "");
        int32_t o_t = step_output(stp);
        int m = ig__cu_step_tensors(stp, ids);
        for (int i = 0; i < m; i++) {
            if (ids[i] < 0) continue;
            double b = view_bytes(&p.tensors[ids[i]]);
            if (ids[i] == o_t)
                x->bytes_written += b;
            else
                x->bytes_read += b;
        }
        for (int32_t b = 0; b < p.n_bufs; b++) {
            const ig_cu_buf *buf = &p.bufs[b];
            if (buf->loc == IG_LOC_ARENA && !buf->is_const && !buf->is_scratch && buf->alias < 0 && buf->first <= s &&
                s <= buf->last)
                x->live_bytes += buf->bytes;
        }
    }
    *out = c;
    *n = p.n_steps;
    ig__cu_prog_free(&p);
    return INGOT_OK;
}
