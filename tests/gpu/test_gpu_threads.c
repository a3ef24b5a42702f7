/*
 * test_gpu_threads.c -- many contexts of one CUDA engine on many threads (TensorRT's usage pattern):
 * the engine is built, the model destroyed, then N_THREADS threads each create their own context and
 * run it RUNS times -- half through the host API, half through ingot_cuda_context_enqueue on the
 * thread's own stream (CUDA Graph replay) -- and every output must equal, bit for bit, what one
 * context on one thread computed before. scripts/gpu_check.sh runs it on a GPU.
 *
 * Algorithms are tuned (cuda_tune = 1): the reference context times them into the engine's table
 * (src/cuda/algos.c), and every later context of the engine runs the table's choices, so the threads
 * run exactly the reference's kernels and any difference left is a race. (Before the table, each
 * context timed its own and two could keep different fp32 kernels, differing in the last bits.)
 *
 *   test_gpu_threads DIR [RUNS]     DIR: model.onnx and input_<i>.npy (tests/gpu/make_models.py)
 */
#define _POSIX_C_SOURCE 200809L
#include "ingot.h"
#include "ingot_cuda.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_THREADS 4
#define MAX_IO    16

typedef struct shared {
    ingot_engine *e;
    int64_t n_in, n_out, runs;
    ingot_tensor in[MAX_IO];
    void *ref[MAX_IO]; /* outputs of the single-threaded run */
    size_t ref_bytes[MAX_IO];
} shared;

typedef struct worker {
    shared *sh;
    int id;
    int64_t mismatches, failures;
    char msg[512];
} worker;

static void *run_worker(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    ingot_context *c = NULL;
    cudaStream_t s = NULL;
    void *d_in[MAX_IO] = {0}, *d_out[MAX_IO] = {0}, *back = NULL;
    ingot_tensor din[MAX_IO], dout[MAX_IO];
    if (ingot_context_create(sh->e, NULL, &c) != INGOT_OK || cudaStreamCreate(&s) != cudaSuccess) {
        snprintf(w->msg, sizeof w->msg, "thread %d: context or stream creation failed", w->id);
        w->failures++;
        goto out;
    }
    size_t max_bytes = 0;
    for (int64_t j = 0; j < sh->n_out; j++)
        if (sh->ref_bytes[j] > max_bytes) max_bytes = sh->ref_bytes[j];
    back = malloc(max_bytes ? max_bytes : 1);
    for (int64_t r = 0; r < sh->runs && !w->failures; r++) {
        bool device = r >= sh->runs / 2;
        if (!device) {
            if (ingot_context_run(c, sh->in, sh->n_in) != INGOT_OK) {
                snprintf(w->msg, sizeof w->msg, "thread %d run %lld: %s", w->id, (long long)r, ingot_context_errmsg(c));
                w->failures++;
                break;
            }
            for (int64_t j = 0; j < sh->n_out; j++) {
                ingot_tensor o;
                ingot_context_get_output(c, j, &o);
                if (o.bytes != sh->ref_bytes[j] || memcmp(o.data, sh->ref[j], o.bytes)) w->mismatches++;
            }
            continue;
        }
        if (!d_in[0] && sh->n_in) { /* the device path: buffers made once, after the host runs */
            for (int64_t i = 0; i < sh->n_in; i++) {
                din[i] = sh->in[i];
                cudaMalloc(&d_in[i], sh->in[i].bytes ? sh->in[i].bytes : 1);
                cudaMemcpy(d_in[i], sh->in[i].data, sh->in[i].bytes, cudaMemcpyHostToDevice);
                din[i].data = d_in[i];
            }
            for (int64_t j = 0; j < sh->n_out; j++) {
                ingot_cuda_context_output_info(c, j, &dout[j]);
                cudaMalloc(&d_out[j], dout[j].bytes ? dout[j].bytes : 1);
                dout[j].data = d_out[j];
            }
        }
        for (int64_t j = 0; j < sh->n_out; j++) cudaMemsetAsync(d_out[j], 0xff, dout[j].bytes, s);
        if (ingot_cuda_context_enqueue(c, din, sh->n_in, dout, sh->n_out, s) != INGOT_OK ||
            cudaStreamSynchronize(s) != cudaSuccess) {
            snprintf(w->msg, sizeof w->msg, "thread %d enqueue %lld: %s", w->id, (long long)r, ingot_context_errmsg(c));
            w->failures++;
            break;
        }
        for (int64_t j = 0; j < sh->n_out; j++) {
            cudaMemcpy(back, d_out[j], sh->ref_bytes[j], cudaMemcpyDeviceToHost);
            if (memcmp(back, sh->ref[j], sh->ref_bytes[j])) w->mismatches++;
        }
    }
out:
    free(back);
    for (int i = 0; i < MAX_IO; i++) {
        if (d_in[i]) cudaFree(d_in[i]);
        if (d_out[i]) cudaFree(d_out[i]);
    }
    if (s) cudaStreamDestroy(s);
    ingot_context_destroy(c);
    return NULL;
}

static int run_precision(const char *dir, ingot_dtype precision, int64_t runs)
{
    const char *pn = precision == INGOT_DTYPE_FLOAT16 ? "fp16" : "fp32";
    ingot_runtime *rt = NULL;
    ingot_model *m = NULL;
    shared sh;
    memset(&sh, 0, sizeof sh);
    sh.runs = runs;
    int fails = 1;
    char path[1024];
    ingot_runtime_create(&rt);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    if (ingot_model_load(rt, path, NULL, &m) != INGOT_OK) {
        printf("FAIL %s: load: %s\n", dir, ingot_runtime_errmsg(rt));
        goto out;
    }
    sh.n_in = ingot_model_input_count(m);
    sh.n_out = ingot_model_output_count(m);
    if (sh.n_in > MAX_IO || sh.n_out > MAX_IO) {
        printf("FAIL %s: more than %d inputs or outputs\n", dir, MAX_IO);
        goto out;
    }
    for (int64_t i = 0; i < sh.n_in; i++) {
        snprintf(path, sizeof path, "%s/input_%d.npy", dir, (int)i);
        ingot_tensor_info ti;
        if (ingot_tensor_load_file(rt, path, &sh.in[i]) != INGOT_OK || ingot_model_input_info(m, i, &ti) != INGOT_OK) {
            printf("FAIL %s: %s\n", dir, ingot_runtime_errmsg(rt));
            goto out;
        }
        sh.in[i].name = strdup(ti.name); /* the model goes away after the build */
        ingot_model_set_input_shape(m, ti.name, sh.in[i].rank, sh.in[i].dims);
    }
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CUDA;
    bo.precision = precision;
    bo.cuda_tune = 1;
    if (ingot_engine_build(rt, m, &bo, &sh.e) != INGOT_OK) {
        printf("FAIL %s %s: build: %s\n", dir, pn, ingot_runtime_errmsg(rt));
        goto out;
    }
    ingot_model_destroy(m); /* the engine owns its graph: nothing may need the model from here on */
    m = NULL;
    { /* the reference: one context, one thread */
        ingot_context *c = NULL;
        if (ingot_context_create(sh.e, NULL, &c) != INGOT_OK || ingot_context_run(c, sh.in, sh.n_in) != INGOT_OK) {
            printf("FAIL %s %s: reference run: %s\n", dir, pn, c ? ingot_context_errmsg(c) : ingot_runtime_errmsg(rt));
            ingot_context_destroy(c);
            goto out;
        }
        for (int64_t j = 0; j < sh.n_out; j++) {
            ingot_tensor o;
            ingot_context_get_output(c, j, &o);
            sh.ref[j] = malloc(o.bytes ? o.bytes : 1);
            memcpy(sh.ref[j], o.data, o.bytes);
            sh.ref_bytes[j] = o.bytes;
        }
        ingot_context_destroy(c);
    }
    worker w[N_THREADS];
    pthread_t t[N_THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < N_THREADS; i++) {
        w[i].sh = &sh;
        w[i].id = i;
        pthread_create(&t[i], NULL, run_worker, &w[i]);
    }
    int64_t mism = 0, fail = 0;
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(t[i], NULL);
        mism += w[i].mismatches;
        fail += w[i].failures;
        if (w[i].msg[0]) printf("  %s\n", w[i].msg);
    }
    fails = mism || fail;
    printf("%s %s %s: %d contexts on %d threads, %lld runs each (host API, then enqueue on the thread's stream): "
           "%lld outputs differ from the single-threaded run, %lld failures\n",
           fails ? "FAIL" : "PASS", dir, pn, N_THREADS, N_THREADS, (long long)runs, (long long)mism, (long long)fail);
out:
    for (int64_t i = 0; i < MAX_IO; i++) {
        free((void *)sh.in[i].name);
        sh.in[i].name = NULL;
        ingot_tensor_free(&sh.in[i]);
        free(sh.ref[i]);
    }
    ingot_engine_destroy(sh.e);
    ingot_model_destroy(m);
    ingot_runtime_destroy(rt);
    return fails;
}

int main(int argc, char **argv)
{
    char why[512];
    if (argc < 2) {
        fprintf(stderr, "usage: test_gpu_threads DIR [RUNS]\n");
        return 2;
    }
    if (!ingot_cuda_available(why, sizeof why)) {
        printf("no usable GPU (%s): nothing to test\n0 passed, 0 failed\n", why);
        return 0;
    }
    int64_t runs = argc > 2 ? atoll(argv[2]) : 200;
    int fails = run_precision(argv[1], INGOT_DTYPE_FLOAT, runs) + run_precision(argv[1], INGOT_DTYPE_FLOAT16, runs);
    printf("%d passed, %d failed\n", 2 - fails, fails);
    return fails ? 1 : 0;
}
