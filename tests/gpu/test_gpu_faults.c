/*
 * test_gpu_faults.c -- every device error path of one engine build, one context creation and three runs,
 * taken in turn (issue 13): the fault switch of src/cuda/fault.h fails the Nth device allocation, checked
 * CUDA runtime call, kernel launch or cuDNN/cuBLASLt call, for every N (a spread when there are more than
 * the time allows), and each time:
 *
 *  - the failing API call returns a device status (INGOT_ERR_DEVICE_OOM / _DEVICE_FATAL / _CUDA / _CUDNN /
 *    _CUBLAS) with a message naming the call (or, for an allocation, the device memory it wanted), or the
 *    library tolerates the failure (a graph capture that falls back to steps) and the outputs are right;
 *  - nothing crashes, and no real CUDA error is left behind;
 *  - nothing leaks: after the context and engine are destroyed the library's live device bytes
 *    (ingot_cuda_alloc_counts) and the device's free memory (cudaMemGetInfo) are back to their level;
 *  - a fresh engine and context work afterwards and give the first run's outputs, bit for bit (they load
 *    the first engine's timing cache, so they run the same kernels).
 *
 * First, with injection off, two passes count the sites by kind (the counts must agree: the sweep relies
 * on the same sites coming in the same order) and time one cycle, which sets how many sites fit.
 *
 *   test_gpu_faults DIR [--fp16] [--seconds S] [--kinds alloc,call,launch,lib] [-v]
 *       DIR: model.onnx and input_<i>.npy (tests/gpu/make_models.py); S: the sweep's budget (default 100)
 *   test_gpu_faults --self-test
 *       no GPU needed (CTest): the converters, the allocation wrapper and the launch check under the
 *       switch -- which calls are sites, the status and message each injected error gives
 */
#define _POSIX_C_SOURCE 200809L
#include "cuda/cuda_internal.h"
#include "cuda/fault.h"
#include "gpu_check.h"
#include "ingot.h"
#include "ingot_cuda.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_IO   16
#define N_RUNS   3
#define MAX_PICK 4096

static bool verbose;

typedef struct env {
    ingot_runtime *rt;
    ingot_model *m;
    const char *dir;
    bool fp16;
    int64_t n_in, n_out;
    ingot_tensor in[MAX_IO];
    void *ref[MAX_IO]; /* outputs of the first run */
    size_t ref_bytes[MAX_IO];
    ingot_dtype ref_dtype[MAX_IO];
    void *d_in[MAX_IO], *d_out[MAX_IO]; /* the device path's buffers, made once */
    void *back;                         /* host copy of a device output */
    cudaStream_t stream;
    char cache[256]; /* the first engine's timing cache */
} env;

/* What one cycle (build, context, N_RUNS runs) did. */
typedef struct outcome {
    ingot_status st; /* of the first failing call; INGOT_OK when every call succeeded */
    const char *step;
    char msg[1024];
    bool outputs_ok; /* every run that succeeded gave the expected outputs */
    double worst;    /* the largest relative error seen (0 when bitwise equal) */
} outcome;

static double rel_err(const float *a, const float *b, size_t n)
{
    double d2 = 0, b2 = 0;
    for (size_t i = 0; i < n; i++) {
        if (a[i] != a[i] && b[i] != b[i]) continue;
        double e = (double)a[i] - b[i];
        d2 += e * e;
        b2 += (double)b[i] * b[i];
    }
    double r = sqrt(d2 / (b2 > 0 ? b2 : 1));
    return r == r ? r : INFINITY;
}

/* Output j (host bytes) against the reference: bitwise when `exact`, else within the tolerance of another
 * tuning's kernels (float outputs; anything else bitwise). */
static bool output_ok(env *x, int64_t j, const void *data, size_t bytes, ingot_dtype dt, bool exact, double *worst)
{
    if (bytes != x->ref_bytes[j] || dt != x->ref_dtype[j]) {
        *worst = INFINITY;
        return false;
    }
    if (!memcmp(data, x->ref[j], bytes)) return true;
    if (exact || dt != INGOT_DTYPE_FLOAT) {
        *worst = INFINITY;
        return false;
    }
    double r = rel_err(data, x->ref[j], bytes / 4);
    if (r > *worst) *worst = r;
    return r <= (x->fp16 ? 1e-2 : 1e-4);
}

static void fail_at(outcome *o, const char *step, ingot_status st, const char *msg)
{
    o->st = st;
    o->step = step;
    snprintf(o->msg, sizeof o->msg, "%s", msg ? msg : "");
}

/* One cycle: build an engine (loading the timing cache when `cached`), create a context, run n_runs
 * times (host, host, then the device path on the test's stream) and check the outputs; stops at the
 * first failure. Destroys everything before returning. */
static void cycle(env *x, bool cached, int n_runs, bool exact, outcome *o)
{
    memset(o, 0, sizeof *o);
    o->outputs_ok = true;
    o->step = "";
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CUDA;
    bo.precision = x->fp16 ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT;
    ingot_engine *e = NULL;
    ingot_context *c = NULL;
    ingot_status st = ingot_engine_build(x->rt, x->m, &bo, &e);
    if (st != INGOT_OK) {
        fail_at(o, "engine build", st, ingot_runtime_errmsg(x->rt));
        goto out;
    }
    if (cached && (st = ingot_engine_load_timing_cache(e, x->cache)) != INGOT_OK) {
        fail_at(o, "timing cache load", st, ingot_runtime_errmsg(x->rt));
        goto out;
    }
    if ((st = ingot_context_create(e, NULL, &c)) != INGOT_OK) {
        fail_at(o, "context create", st, ingot_runtime_errmsg(x->rt));
        goto out;
    }
    for (int r = 0; r < n_runs; r++) {
        if (r < 2) {
            if ((st = ingot_context_run(c, x->in, x->n_in)) != INGOT_OK) {
                fail_at(o, r == 0 ? "run 1 (host)" : "run 2 (host)", st, ingot_context_errmsg(c));
                goto out;
            }
            for (int64_t j = 0; j < x->n_out; j++) {
                ingot_tensor t;
                if (ingot_context_get_output(c, j, &t) != INGOT_OK ||
                    !output_ok(x, j, t.data, t.bytes, t.dtype, exact, &o->worst))
                    o->outputs_ok = false;
            }
            continue;
        }
        ingot_tensor din[MAX_IO], dout[MAX_IO];
        for (int64_t i = 0; i < x->n_in; i++) {
            din[i] = x->in[i];
            din[i].data = x->d_in[i];
        }
        for (int64_t j = 0; j < x->n_out; j++) {
            memset(&dout[j], 0, sizeof dout[j]);
            dout[j].data = x->d_out[j];
            dout[j].bytes = x->ref_bytes[j];
            cudaMemsetAsync(x->d_out[j], 0xff, x->ref_bytes[j], x->stream);
        }
        st = ingot_cuda_context_enqueue(c, din, x->n_in, dout, x->n_out, x->stream);
        cudaError_t ce = cudaStreamSynchronize(x->stream);
        if (st != INGOT_OK) {
            fail_at(o, "run 3 (enqueue)", st, ingot_context_errmsg(c));
            goto out;
        }
        if (ce != cudaSuccess) {
            fail_at(o, "run 3 (enqueue)", INGOT_ERR_CUDA, cudaGetErrorString(ce));
            goto out;
        }
        for (int64_t j = 0; j < x->n_out; j++) {
            if (cudaMemcpy(x->back, x->d_out[j], x->ref_bytes[j], cudaMemcpyDeviceToHost) != cudaSuccess ||
                !output_ok(x, j, x->back, x->ref_bytes[j], x->ref_dtype[j], exact, &o->worst))
                o->outputs_ok = false;
        }
    }
out:
    cudaStreamSynchronize(x->stream);
    ingot_context_destroy(c);
    ingot_engine_destroy(e);
}

static void mem_now(size_t *free_b, uint64_t *live)
{
    size_t tot = 0;
    cudaDeviceSynchronize();
    *free_b = 0;
    cudaMemGetInfo(free_b, &tot);
    ingot_cuda_alloc_counts(NULL, NULL, live);
}

/* The first run: the reference outputs, the timing cache, the device path's buffers. */
static bool setup(env *x)
{
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CUDA;
    bo.precision = x->fp16 ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT;
    ingot_engine *e = NULL;
    ingot_context *c = NULL;
    bool ok = false;
    if (ingot_engine_build(x->rt, x->m, &bo, &e) != INGOT_OK || ingot_context_create(e, NULL, &c) != INGOT_OK) {
        CHECK(0, "%s: reference engine/context: %s", x->dir, ingot_runtime_errmsg(x->rt));
        goto out;
    }
    if (ingot_context_run(c, x->in, x->n_in) != INGOT_OK) {
        CHECK(0, "%s: reference run: %s", x->dir, ingot_context_errmsg(c));
        goto out;
    }
    size_t max_bytes = 1;
    for (int64_t j = 0; j < x->n_out; j++) {
        ingot_tensor t;
        ingot_context_get_output(c, j, &t);
        x->ref[j] = malloc(t.bytes ? t.bytes : 1);
        memcpy(x->ref[j], t.data, t.bytes);
        x->ref_bytes[j] = t.bytes;
        x->ref_dtype[j] = t.dtype;
        if (t.bytes > max_bytes) max_bytes = t.bytes;
        if (cudaMalloc(&x->d_out[j], t.bytes ? t.bytes : 1) != cudaSuccess) goto out;
    }
    x->back = malloc(max_bytes);
    for (int64_t i = 0; i < x->n_in; i++) {
        if (cudaMalloc(&x->d_in[i], x->in[i].bytes ? x->in[i].bytes : 1) != cudaSuccess ||
            cudaMemcpy(x->d_in[i], x->in[i].data, x->in[i].bytes, cudaMemcpyHostToDevice) != cudaSuccess)
            goto out;
    }
    snprintf(x->cache, sizeof x->cache, "/tmp/ingot_faults_%d.cache", (int)getpid());
    if (ingot_engine_save_timing_cache(e, x->cache) != INGOT_OK) {
        CHECK(0, "%s: timing cache: %s", x->dir, ingot_runtime_errmsg(x->rt));
        goto out;
    }
    ok = cudaStreamCreateWithFlags(&x->stream, cudaStreamNonBlocking) == cudaSuccess;
out:
    ingot_context_destroy(c);
    ingot_engine_destroy(e);
    return ok;
}

static bool load(env *x)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/model.onnx", x->dir);
    if (ingot_model_load(x->rt, path, NULL, &x->m) != INGOT_OK) {
        CHECK(0, "%s: load: %s", x->dir, ingot_runtime_errmsg(x->rt));
        return false;
    }
    x->n_in = ingot_model_input_count(x->m);
    x->n_out = ingot_model_output_count(x->m);
    if (x->n_in > MAX_IO || x->n_out > MAX_IO) {
        CHECK(0, "%s: more than %d inputs or outputs", x->dir, MAX_IO);
        return false;
    }
    for (int64_t i = 0; i < x->n_in; i++) {
        snprintf(path, sizeof path, "%s/input_%d.npy", x->dir, (int)i);
        ingot_tensor_info ti;
        if (ingot_tensor_load_file(x->rt, path, &x->in[i]) != INGOT_OK ||
            ingot_model_input_info(x->m, i, &ti) != INGOT_OK) {
            CHECK(0, "%s: %s", x->dir, ingot_runtime_errmsg(x->rt));
            return false;
        }
        x->in[i].name = ti.name;
        ingot_model_set_input_shape(x->m, ti.name, x->in[i].rank, x->in[i].dims);
    }
    if (ingot_model_infer(x->m) != INGOT_OK) {
        CHECK(0, "%s: infer: %s", x->dir, ingot_runtime_errmsg(x->rt));
        return false;
    }
    return true;
}

static bool is_device_status(ingot_status s)
{
    return s == INGOT_ERR_DEVICE_OOM || s == INGOT_ERR_DEVICE_FATAL || s == INGOT_ERR_CUDA || s == INGOT_ERR_CUDNN ||
           s == INGOT_ERR_CUBLAS;
}

/* The status an injected error class should surface as (a hint: wrappers may keep another class). */
static bool status_matches(int err, int kind, ingot_status s)
{
    if (err == IG_FAULT_OOM) return s == INGOT_ERR_DEVICE_OOM;
    if (err == IG_FAULT_FATAL) return s == INGOT_ERR_DEVICE_FATAL;
    return kind == IG_FAULT_LIB ? (s == INGOT_ERR_CUDNN || s == INGOT_ERR_CUBLAS) : s == INGOT_ERR_CUDA;
}

/* The call name in a fault description "call #12 (fatal): cudaStreamSynchronize at src/...:1033". */
static void site_call(const char *what, char *out, size_t n)
{
    const char *p = strstr(what, "): ");
    p = p ? p + 3 : what;
    size_t k = 0;
    while (p[k] && strncmp(p + k, " at ", 4) && k + 1 < n) k++;
    memcpy(out, p, k);
    out[k] = '\0';
}

static bool message_names_site(int kind, const char *msg, const char *call)
{
    if (!msg[0]) return false;
    if (kind == IG_FAULT_ALLOC) return strstr(msg, "device memory") || strstr(msg, "cudaMalloc");
    return call[0] && strstr(msg, call);
}

typedef struct tally {
    int64_t tried, clean, tolerated, unreached, bad_status, bad_msg, leaks, bad_outputs, fresh_fail, other_class;
} tally;

/* N values for a kind with `count` sites, `want` of them: all, or evenly spread with the first and last. */
static int64_t pick(int64_t count, int64_t want, int64_t *out)
{
    if (want >= count) {
        for (int64_t i = 0; i < count; i++) out[i] = i + 1;
        return count;
    }
    if (want < 2) want = 2;
    int64_t n = 0;
    for (int64_t i = 0; i < want; i++) {
        int64_t v = 1 + (int64_t)((double)i * (double)(count - 1) / (double)(want - 1) + 0.5);
        if (n == 0 || v != out[n - 1]) out[n++] = v;
    }
    return n;
}

static int fresh_failures_in_a_row;

/* Inject at site n of `kind` with error class err; check everything the header promises. */
static void one(env *x, int kind, int64_t n, int err, size_t *free_base, uint64_t live0, tally *t)
{
    size_t free0 = *free_base;
    ig_fault_spec s = {kind, n, false, err};
    char label[64];
    snprintf(label, sizeof label, "%s:%lld:%s", ig__fault_kind_name(kind), (long long)n, ig__fault_err_name(err));
    if (verbose) {
        printf("... %s\n", label);
        fflush(stdout);
    }
    t->tried++;
    outcome o;
    ig__cu_fault_set(&s);
    cycle(x, false, N_RUNS, false, &o);
    int64_t fired = 0;
    ig__cu_fault_counts(NULL, &fired);
    char what[256], call[128];
    ig__cu_fault_last(what, sizeof what);
    ig__cu_fault_set(NULL);
    site_call(what, call, sizeof call);
    cudaError_t left = cudaDeviceSynchronize();
    if (left == cudaSuccess) left = cudaGetLastError();
    size_t free1;
    uint64_t live1;
    mem_now(&free1, &live1);
    bool problem = false;
    if (left != cudaSuccess) {
        CHECK(0, "%s: a real CUDA error is left behind: %s", label, cudaGetErrorString(left));
        problem = true;
    }
    if (!fired) {
        t->unreached++;
        printf("note %s: the site was not reached (the cycle %s)\n", label,
               o.st == INGOT_OK ? "succeeded" : "failed anyway");
    } else if (o.st == INGOT_OK) {
        t->tolerated++;
        if (!o.outputs_ok) {
            t->bad_outputs++;
            problem = true;
            CHECK(0, "%s (%s): tolerated, but the outputs are wrong (relative error %.3g)", label, what, o.worst);
        } else if (verbose) {
            printf("tolerated %s (%s): outputs right\n", label, what);
        }
    } else {
        bool st_ok = is_device_status(o.st);
        bool msg_ok = message_names_site(kind, o.msg, call);
        if (!status_matches(err, kind, o.st)) t->other_class++;
        if (!st_ok) t->bad_status++;
        if (!msg_ok) t->bad_msg++;
        if (st_ok && msg_ok && o.outputs_ok) {
            t->clean++;
            if (verbose) printf("clean %s at %s: %s: %s\n", label, o.step, ingot_status_name(o.st), o.msg);
        } else {
            problem = true;
            CHECK(0, "%s (%s) at %s: %s%s%s: %s", label, what, o.step, ingot_status_name(o.st),
                  st_ok ? "" : " (not a device status)", msg_ok ? "" : " (the message does not name the call)", o.msg);
        }
    }
    if (live1 == live0 && free1 < free0 && free0 - free1 <= ((size_t)64 << 20)) {
        /* the library's own allocations balance, yet the device has less free memory: the failure sent
         * cuDNN/cuBLASLt down a path the clean cycles never took, which loads kernel modules (kept for the
         * process's life) and library caches. A leak grows on each repeat; a one-time load does not: the
         * same fault once more must leave free memory where it is now, which becomes the baseline. */
        ig__cu_fault_set(&s);
        outcome o2;
        cycle(x, false, N_RUNS, false, &o2);
        ig__cu_fault_set(NULL);
        (void)cudaDeviceSynchronize();
        (void)cudaGetLastError();
        size_t free2;
        uint64_t live2;
        mem_now(&free2, &live2);
        if (free2 == free1 && live2 == live0) {
            printf("note %s: free device memory %+lld bytes once, not again on a repeat (a one-time library or "
                   "module load): new baseline\n",
                   label, (long long)free1 - (long long)free0);
            *free_base = free0 = free1;
        }
    }
    if (free1 != free0 || live1 != live0) {
        t->leaks++;
        problem = true;
        CHECK(0, "%s (%s, at %s): leak: free device memory %+lld bytes, library live bytes %+lld", label, what, o.step,
              (long long)free1 - (long long)free0, (long long)live1 - (long long)live0);
    }
    outcome f;
    cycle(x, true, 1, true, &f);
    if (f.st != INGOT_OK || !f.outputs_ok) {
        t->fresh_fail++;
        fresh_failures_in_a_row++;
        problem = true;
        CHECK(0, "%s: a fresh engine and context afterwards: %s%s%s%s", label, f.step, f.st ? ": " : "",
              f.st ? f.msg : "", f.outputs_ok ? "" : " (outputs differ from the first run)");
    } else {
        fresh_failures_in_a_row = 0;
    }
    if (!problem) n_pass++;
}

static void counts_now(int64_t *seen) { ig__cu_fault_counts(seen, NULL); }

/* ---- --self-test: the device side of the switch, without a device ------------------------------------ */

static void arm(int kind, int64_t n, int err)
{
    ig_fault_spec s = {kind, n, false, err};
    ig__cu_fault_set(&s);
}

static ingot_status cu_ok(ig_err *e, const char *call)
{
    return ig__cu_status(e, cudaSuccess, call, NULL, "src/x.c", 7);
}

static int self_test(void)
{
    ig_err e = {0};
    int64_t seen[IG_FAULT_KINDS], fired = 0;
    char last[256];
    /* counting: which calls are sites */
    arm(IG_FAULT_COUNT, 0, IG_FAULT_NONE);
    bool ok = cu_ok(&e, "cudaStreamSynchronize(s)") == INGOT_OK && cu_ok(&e, "cudaEventCreate(&ev)") == INGOT_OK &&
              cu_ok(&e, "cudaMallocHost(&p, n)") == INGOT_OK &&
              cu_ok(&e, "cudaGraphInstantiate(&x, g, 0)") == INGOT_OK &&
              cu_ok(&e, "cudaStreamBeginCapture(s, m)") == INGOT_OK && cu_ok(&e, "e") == INGOT_OK &&
              cu_ok(&e, "ig__cu_malloc(&p, n)") == INGOT_OK && cu_ok(&e, "cudaMemcpy(d, h, n, k)") == INGOT_OK;
    ok = ok && IG_CUDNN(&e, NULL, CUDNN_STATUS_SUCCESS) == INGOT_OK; /* a bare status: not a site */
    ok = ok && ig__cudnn_status(&e, CUDNN_STATUS_SUCCESS, "cudnnSetStream(h, s)", "n (Conv)", "f.c", 1) == INGOT_OK;
    ok = ok && ig__cudnn_status(&e, CUDNN_STATUS_SUCCESS, "cudnnCreate(&h)", NULL, "f.c", 1) == INGOT_OK;
    ok = ok && ig__cublas_status(&e, CUBLAS_STATUS_SUCCESS, "gemm_call(L, s)", NULL, "f.c", 1) == INGOT_OK;
    ok = ok && ig__cublas_status(&e, CUBLAS_STATUS_SUCCESS, "cublasLtMatmulDescCreate(&d)", NULL, "f.c", 1) == INGOT_OK;
    ok = ok && ig__cu_fault_launch(cudaSuccess, "f.c", 1) == cudaSuccess;
    ok = ok && ig__cu_fault_launch(cudaErrorInvalidValue, "f.c", 1) == cudaErrorInvalidValue; /* real: no site */
    ig__cu_fault_counts(seen, &fired);
    CHECK(ok && seen[IG_FAULT_ALLOC] == 0 && seen[IG_FAULT_CALL] == 2 && seen[IG_FAULT_LAUNCH] == 1 &&
              seen[IG_FAULT_LIB] == 2 && fired == 0 && e.status == INGOT_OK,
          "self-test: sites counted: %lld alloc, %lld call (want 2: not Create/MallocHost/Instantiate/BeginCapture/a "
          "bare status/ig__cu_malloc), %lld launch (1), %lld lib (2), %lld failures made",
          (long long)seen[0], (long long)seen[1], (long long)seen[2], (long long)seen[3], (long long)fired);
    /* call:2 fails the second call site only, after it, with a message naming it */
    arm(IG_FAULT_CALL, 2, IG_FAULT_NONE);
    ingot_status a = cu_ok(&e, "cudaStreamSynchronize(s)");
    ingot_status b = cu_ok(&e, "cudaMemcpy(d, h, n, k)");
    ig_err e2 = {0};
    ingot_status c = cu_ok(&e2, "cudaGraphLaunch(x, s)");
    ig__cu_fault_counts(NULL, &fired);
    ig__cu_fault_last(last, sizeof last);
    CHECK(a == INGOT_OK && b == INGOT_ERR_DEVICE_FATAL && c == INGOT_OK && fired == 1 &&
              strstr(e.msg, "cudaMemcpy: cudaErrorLaunchFailure") && strstr(e.msg, "[injected fault: call #2]") &&
              strstr(last, "call #2 (fatal): cudaMemcpy at src/x.c:7"),
          "self-test: call:2 -> %s: %s (last: %s)", ingot_status_name(b), e.msg, last);
    struct {
        int kind, err;
        ingot_status want;
    } classes[] = {
        {IG_FAULT_CALL, IG_FAULT_OOM, INGOT_ERR_DEVICE_OOM},    {IG_FAULT_CALL, IG_FAULT_FAIL, INGOT_ERR_CUDA},
        {IG_FAULT_LIB, IG_FAULT_NONE, INGOT_ERR_CUDNN},         {IG_FAULT_LIB, IG_FAULT_OOM, INGOT_ERR_DEVICE_OOM},
        {IG_FAULT_LIB, IG_FAULT_FATAL, INGOT_ERR_DEVICE_FATAL},
    };
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
        ig_err x = {0}, y = {0};
        arm(classes[i].kind, 1, classes[i].err);
        ingot_status got =
            classes[i].kind == IG_FAULT_CALL
                ? cu_ok(&x, "cudaStreamSynchronize(s)")
                : ig__cudnn_status(&x, CUDNN_STATUS_SUCCESS, "cudnnSetStream(h, s)", "n (Conv)", "f.c", 3);
        ingot_status blas = INGOT_OK;
        if (classes[i].kind == IG_FAULT_LIB) { /* the same class from cuBLASLt */
            arm(IG_FAULT_LIB, 1, classes[i].err);
            blas = ig__cublas_status(&y, CUBLAS_STATUS_SUCCESS, "gemm_call(L, s)", "n (MatMul)", "g.c", 4);
        }
        ingot_status want_blas = classes[i].want == INGOT_ERR_CUDNN ? INGOT_ERR_CUBLAS : classes[i].want;
        CHECK(got == classes[i].want && (classes[i].kind != IG_FAULT_LIB || blas == want_blas) &&
                  strstr(x.msg,
                         classes[i].kind == IG_FAULT_CALL ? "cudaStreamSynchronize" : "node n (Conv): cudnnSetStream"),
              "self-test: %s:1:%s -> %s (want %s)%s%s: %s", ig__fault_kind_name(classes[i].kind),
              ig__fault_err_name(
                  ig__fault_err_for(&(ig_fault_spec){classes[i].kind, 1, false, classes[i].err}, classes[i].kind)),
              ingot_status_name(got), ingot_status_name(classes[i].want),
              classes[i].kind == IG_FAULT_LIB ? ", cuBLASLt " : "",
              classes[i].kind == IG_FAULT_LIB ? ingot_status_name(blas) : "", x.msg);
    }
    /* launch:2 */
    arm(IG_FAULT_LAUNCH, 2, IG_FAULT_NONE);
    cudaError_t l1 = ig__cu_fault_launch(cudaSuccess, "f.c", 1), l2 = ig__cu_fault_launch(cudaSuccess, "f.c", 2);
    cudaError_t l3 = ig__cu_fault_launch(cudaSuccess, "f.c", 3);
    CHECK(l1 == cudaSuccess && l2 == cudaErrorLaunchOutOfResources && l3 == cudaSuccess,
          "self-test: launch:2 fails the second launch check only (%s, %s, %s)", cudaGetErrorName(l1),
          cudaGetErrorName(l2), cudaGetErrorName(l3));
    /* alloc:1 fails before cudaMalloc (here, with no driver, a real call would say so instead) */
    uint64_t nm0, nm1, live0, live1;
    ingot_cuda_alloc_counts(&nm0, NULL, &live0);
    arm(IG_FAULT_ALLOC, 1, IG_FAULT_NONE);
    void *p = (void *)&e;
    cudaError_t m1 = ig__cu_malloc(&p, 1 << 20);
    ig__cu_fault_last(last, sizeof last);
    ingot_cuda_alloc_counts(&nm1, NULL, &live1);
    CHECK(m1 == cudaErrorMemoryAllocation && p == NULL && nm1 == nm0 && live1 == live0 &&
              strstr(last, "alloc #1 (oom): cudaMalloc of 1048576 bytes"),
          "self-test: alloc:1 -> %s before any allocation, pointer NULL (last: %s)", cudaGetErrorName(m1), last);
    /* any:3 counts across kinds; N+ fails from N on */
    arm(IG_FAULT_ANY, 3, IG_FAULT_NONE);
    ingot_status s1 = cu_ok(&e2, "cudaStreamSynchronize(s)");
    cudaError_t s2 = ig__cu_fault_launch(cudaSuccess, "f.c", 1);
    ig_err e3 = {0};
    ingot_status s3 = ig__cudnn_status(&e3, CUDNN_STATUS_SUCCESS, "cudnnSetStream(h, s)", NULL, "f.c", 1);
    ig_fault_spec from = {IG_FAULT_CALL, 2, true, IG_FAULT_NONE};
    ig__cu_fault_set(&from);
    ig_err e4 = {0}, e5 = {0};
    ingot_status f1 = cu_ok(&e4, "cudaStreamSynchronize(s)"), f2 = cu_ok(&e4, "cudaStreamSynchronize(s)");
    ingot_status f3 = cu_ok(&e5, "cudaStreamSynchronize(s)");
    CHECK(s1 == INGOT_OK && s2 == cudaSuccess && s3 == INGOT_ERR_CUDNN && f1 == INGOT_OK &&
              f2 == INGOT_ERR_DEVICE_FATAL && f3 == INGOT_ERR_DEVICE_FATAL,
          "self-test: any:3 fails the third site of any kind (%s), call:2+ the second and every later call",
          ingot_status_name(s3));
    /* off: nothing counted, nothing failed */
    ig__cu_fault_set(NULL);
    ig_err e6 = {0};
    ingot_status o1 = cu_ok(&e6, "cudaStreamSynchronize(s)");
    ig__cu_fault_counts(seen, &fired);
    CHECK(o1 == INGOT_OK && seen[IG_FAULT_CALL] == 0 && fired == 0, "self-test: switched off, no site is counted");
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}

int main(int argc, char **argv)
{
    env x;
    memset(&x, 0, sizeof x);
    double budget = 100;
    bool kinds_on[IG_FAULT_KINDS] = {true, true, true, true};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--self-test")) return self_test();
        if (!strcmp(argv[i], "--fp16"))
            x.fp16 = true;
        else if (!strcmp(argv[i], "-v"))
            verbose = true;
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            budget = atof(argv[++i]);
        else if (!strcmp(argv[i], "--kinds") && i + 1 < argc) {
            const char *k = argv[++i];
            for (int j = 0; j < IG_FAULT_KINDS; j++) kinds_on[j] = strstr(k, ig__fault_kind_name(j)) != NULL;
        } else if (argv[i][0] != '-' && !x.dir)
            x.dir = argv[i];
        else {
            fprintf(stderr, "usage: test_gpu_faults DIR [--fp16] [--seconds S] [--kinds alloc,call,launch,lib] [-v]\n");
            return 2;
        }
    }
    if (!x.dir) {
        fprintf(stderr, "usage: test_gpu_faults DIR [--fp16] [--seconds S] [--kinds alloc,call,launch,lib] [-v]\n");
        return 2;
    }
    char why[512];
    if (!ingot_cuda_available(why, sizeof why)) {
        printf("no usable GPU (%s): nothing to test\n0 passed, 0 failed\n", why);
        return 0;
    }
    if (!verbose) ingot_log_set(NULL, NULL); /* the capture fallbacks' warnings would drown the report */
    cudaFree(0);
    const char *pn = x.fp16 ? "fp16" : "fp32";
    ingot_runtime_create(&x.rt);
    if (!load(&x) || !setup(&x)) goto done;

    /* count: two clean passes must see the same sites; the second also times a cycle */
    int64_t seen1[IG_FAULT_KINDS], seen2[IG_FAULT_KINDS];
    ig_fault_spec count = {IG_FAULT_COUNT, 0, false, IG_FAULT_NONE};
    outcome o;
    ig__cu_fault_set(&count);
    cycle(&x, false, N_RUNS, false, &o);
    counts_now(seen1);
    bool ok1 = o.st == INGOT_OK && o.outputs_ok;
    ig__cu_fault_set(&count);
    double t0 = now_s();
    cycle(&x, false, N_RUNS, false, &o);
    double t_cycle = now_s() - t0;
    counts_now(seen2);
    ig__cu_fault_set(NULL);
    bool ok2 = o.st == INGOT_OK && o.outputs_ok;
    CHECK(ok1 && ok2, "%s %s: clean cycles (build, context, %d runs) succeed with the first run's outputs%s%s", x.dir,
          pn, N_RUNS, o.st ? ": " : "", o.msg);
    /* tuning times candidates and may keep a different set from one build to the next (a candidate that
     * fails its first call returns early): the counts can differ a little; the sweep takes the smaller */
    bool same = true;
    int64_t total = 0;
    for (int k = 0; k < IG_FAULT_KINDS; k++) {
        same = same && seen1[k] == seen2[k];
        if (seen1[k] < seen2[k]) seen2[k] = seen1[k];
        total += seen2[k];
    }
    printf("%s %s: sites in one cycle: %lld alloc, %lld call, %lld launch, %lld lib (%lld in all)%s\n", x.dir, pn,
           (long long)seen2[0], (long long)seen2[1], (long long)seen2[2], (long long)seen2[3], (long long)total,
           same ? "; the same in both counting passes" : "; the two counting passes differed: the smaller counts");
    t0 = now_s();
    cycle(&x, true, 1, true, &o);
    double t_fresh = now_s() - t0;
    CHECK(o.st == INGOT_OK && o.outputs_ok,
          "%s %s: an engine with the timing cache gives the first run's outputs "
          "bit for bit%s%s",
          x.dir, pn, o.st ? ": " : "", o.msg);
    if (!ok1 || !ok2 || o.st != INGOT_OK) goto done;
    size_t free0;
    uint64_t live0;
    mem_now(&free0, &live0);

    /* the plan: every site when they fit in the budget, else a spread over each kind */
    double per = t_cycle + t_fresh + 0.01;
    int64_t fit = (int64_t)(budget / per);
    int64_t want_total = 0;
    for (int k = 0; k < IG_FAULT_KINDS; k++)
        if (kinds_on[k]) want_total += seen2[k];
    int64_t *picks[IG_FAULT_KINDS] = {0};
    int64_t n_pick[IG_FAULT_KINDS] = {0};
    for (int k = 0; k < IG_FAULT_KINDS; k++) {
        if (!kinds_on[k] || !seen2[k]) continue;
        int64_t want = want_total <= fit ? seen2[k] : (int64_t)((double)fit * (double)seen2[k] / (double)want_total);
        if (want < 4) want = 4;
        if (want > MAX_PICK) want = MAX_PICK;
        picks[k] = calloc((size_t)(want < seen2[k] ? want : seen2[k]) + 1, sizeof(int64_t));
        n_pick[k] = pick(seen2[k], want, picks[k]);
    }
    printf("%s %s: one cycle %.3f s, a fresh one %.3f s: %lld of %lld sites fit in %.0f s; sweeping %lld, %lld, "
           "%lld, %lld (alloc, call, launch, lib)\n",
           x.dir, pn, t_cycle, t_fresh, (long long)(fit < want_total ? fit : want_total), (long long)want_total, budget,
           (long long)n_pick[0], (long long)n_pick[1], (long long)n_pick[2], (long long)n_pick[3]);
    fflush(stdout);

    tally t[IG_FAULT_KINDS];
    memset(t, 0, sizeof t);
    double t_sweep = now_s();
    bool stopped = false;
    for (int k = 0; k < IG_FAULT_KINDS && !stopped; k++) {
        int err = ig__fault_err_for(&(ig_fault_spec){k, 1, false, IG_FAULT_NONE}, k);
        for (int64_t i = 0; i < n_pick[k]; i++) {
            one(&x, k, picks[k][i], err, &free0, live0, &t[k]);
            if (fresh_failures_in_a_row >= 3) {
                printf("FAIL three fresh engines in a row failed: the device is unusable; the sweep stops\n");
                n_fail++;
                stopped = true;
                break;
            }
            if (now_s() - t_sweep > 2 * budget + 30) {
                printf("note: past twice the budget; the sweep stops at %s:%lld\n", ig__fault_kind_name(k),
                       (long long)picks[k][i]);
                stopped = true;
                break;
            }
        }
    }
    /* the other error classes, as far as the budget goes: a spread of each kind */
    static const int other[IG_FAULT_KINDS] = {IG_FAULT_FATAL, IG_FAULT_OOM, IG_FAULT_FATAL, IG_FAULT_FATAL};
    double left = budget - (now_s() - t_sweep);
    int64_t extra = stopped ? 0 : (int64_t)(left / per);
    tally tx[IG_FAULT_KINDS];
    memset(tx, 0, sizeof tx);
    if (extra >= 8) {
        int64_t buf[MAX_PICK];
        int64_t each = extra / 4 < MAX_PICK ? extra / 4 : MAX_PICK;
        printf("%s %s: %.0f s left: other error classes on a spread of up to %lld sites per kind\n", x.dir, pn, left,
               (long long)each);
        for (int k = 0; k < IG_FAULT_KINDS && !stopped; k++) {
            if (!kinds_on[k] || !seen2[k]) continue;
            int64_t np = pick(seen2[k], each, buf);
            for (int64_t i = 0; i < np; i++) {
                one(&x, k, buf[i], other[k], &free0, live0, &tx[k]);
                if (fresh_failures_in_a_row >= 3) {
                    printf("FAIL three fresh engines in a row failed: the device is unusable; the sweep stops\n");
                    n_fail++;
                    stopped = true;
                    break;
                }
            }
        }
    }
    double t_total = now_s() - t_sweep;

    /* the summary */
    printf("\n%s %s: fault sweep in %.1f s\n", x.dir, pn, t_total);
    printf("  %-7s %-6s %6s %6s %6s %9s %9s %10s %6s %8s %6s %11s\n", "kind", "error", "sites", "tried", "clean",
           "tolerated", "unreached", "bad status", "bad msg", "outputs", "leaks", "fresh fails");
    int64_t leaks = 0, bad = 0, other_class = 0, unreached = 0, tried = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < IG_FAULT_KINDS; k++) {
            tally *q = pass ? &tx[k] : &t[k];
            if (!q->tried) continue;
            int err = pass ? other[k] : ig__fault_err_for(&(ig_fault_spec){k, 1, false, IG_FAULT_NONE}, k);
            printf("  %-7s %-6s %6lld %6lld %6lld %9lld %9lld %10lld %6lld %8lld %6lld %11lld\n",
                   ig__fault_kind_name(k), ig__fault_err_name(err), (long long)seen2[k], (long long)q->tried,
                   (long long)q->clean, (long long)q->tolerated, (long long)q->unreached, (long long)q->bad_status,
                   (long long)q->bad_msg, (long long)q->bad_outputs, (long long)q->leaks, (long long)q->fresh_fail);
            leaks += q->leaks;
            bad += q->bad_status + q->bad_msg + q->bad_outputs + q->fresh_fail;
            other_class += q->other_class;
            unreached += q->unreached;
            tried += q->tried;
        }
    if (other_class)
        printf("note: %lld failures surfaced with another status class than the injected error's\n",
               (long long)other_class);
    size_t free_end;
    uint64_t live_end;
    mem_now(&free_end, &live_end);
    CHECK(leaks == 0 && free_end == free0 && live_end == live0,
          "%s %s: no leak over %lld injected faults: free device memory %+lld bytes, library live bytes %+lld at the "
          "end (%lld sites leaked)",
          x.dir, pn, (long long)tried, (long long)free_end - (long long)free0, (long long)live_end - (long long)live0,
          (long long)leaks);
    CHECK(bad == 0 && unreached * 10 <= tried,
          "%s %s: every injected fault gave a clean error naming the call, or was tolerated with right outputs, and "
          "a fresh engine worked after it (%lld problems, %lld sites not reached)",
          x.dir, pn, (long long)bad, (long long)unreached);
    for (int k = 0; k < IG_FAULT_KINDS; k++) free(picks[k]);
done:
    if (x.cache[0]) unlink(x.cache);
    for (int i = 0; i < MAX_IO; i++) {
        x.in[i].name = NULL;
        ingot_tensor_free(&x.in[i]);
        free(x.ref[i]);
        if (x.d_in[i]) cudaFree(x.d_in[i]);
        if (x.d_out[i]) cudaFree(x.d_out[i]);
    }
    free(x.back);
    if (x.stream) cudaStreamDestroy(x.stream);
    ingot_model_destroy(x.m);
    ingot_runtime_destroy(x.rt);
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
