/*
 * test_gpu.c -- the CUDA backend on a GPU, one model directory per process (a device fault poisons the
 * whole CUDA context, so scripts/gpu_check.sh runs each case apart and re-runs a failing one with
 * INGOT_CUDA_SYNC=1 to name the node).
 *
 *   test_gpu [--no-leak] DIR        DIR: model.onnx, input_<i>.npy, output_<j>.npy (ONNX Runtime references)
 *
 * Checks, each printed as PASS/FAIL with its figures:
 *  - fp32 vs ONNX Runtime: relative error ||out - ref|| / ||ref|| <= 1e-3 (TF32 off)
 *  - fp16 vs ONNX Runtime: cosine similarity >= 0.999 (max abs error reported)
 *  - the device-pointer path (ingot_cuda_context_enqueue, CUDA Graph replay) equals the host path
 *  - new output pointers patch the graph in place: results right, graph_updates grows, one capture
 *  - graphs off gives the same result
 *  - allocation audit: 20 runs make no device allocation or free and leave free memory unchanged
 *  - leak check: after destroying everything, free device memory is back to its level before
 * A DIR whose name starts with "unsupported_" must fail to build with INGOT_ERR_MODEL_UNSUPPORTED_OP.
 */
#include "gpu_check.h"
#include "ingot.h"
#include "ingot_cuda.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool graphs_off; /* INGOT_CUDA_GRAPHS=0: the graph checks do not apply */

typedef struct cmp {
    double rel, cos, maxe;
    bool finite;
} cmp;

static cmp compare(const float *a, const float *b, size_t n)
{
    cmp c = {0, 0, 0, true};
    double d2 = 0, a2 = 0, b2 = 0, ab = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)a[i] - b[i];
        if (a[i] != a[i] || isinf(a[i])) c.finite = false;
        d2 += e * e;
        a2 += (double)a[i] * a[i];
        b2 += (double)b[i] * b[i];
        ab += (double)a[i] * b[i];
        if (fabs(e) > c.maxe) c.maxe = fabs(e);
    }
    c.rel = sqrt(d2 / (b2 > 0 ? b2 : 1));
    c.cos = (a2 > 0 && b2 > 0) ? ab / sqrt(a2 * b2) : (a2 == b2 ? 1 : 0);
    return c;
}

typedef struct io {
    int64_t n_in, n_out;
    ingot_tensor in[16], ref[16];
} io;

static ingot_model *load(ingot_runtime *rt, const char *dir, io *x)
{
    char path[1024];
    ingot_model *m = NULL;
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    if (ingot_model_load(rt, path, NULL, &m) != INGOT_OK) {
        CHECK(0, "%s: load: %s", dir, ingot_runtime_errmsg(rt));
        return NULL;
    }
    x->n_in = ingot_model_input_count(m);
    x->n_out = ingot_model_output_count(m);
    if (x->n_in > 16 || x->n_out > 16) { /* the harness's arrays: split such a case in two */
        CHECK(0, "%s: %lld inputs and %lld outputs: the harness takes at most 16 of each", dir, (long long)x->n_in,
              (long long)x->n_out);
        ingot_model_destroy(m);
        return NULL;
    }
    for (int64_t i = 0; i < x->n_in && i < 16; i++) {
        snprintf(path, sizeof path, "%s/input_%d.npy", dir, (int)i);
        if (ingot_tensor_load_file(rt, path, &x->in[i]) != INGOT_OK) {
            CHECK(0, "%s: %s", dir, ingot_runtime_errmsg(rt));
            ingot_model_destroy(m);
            return NULL;
        }
        ingot_tensor_info ti;
        ingot_model_input_info(m, i, &ti);
        x->in[i].name = ti.name;
        ingot_model_set_input_shape(m, ti.name, x->in[i].rank, x->in[i].dims);
    }
    for (int64_t j = 0; j < x->n_out && j < 16; j++) {
        snprintf(path, sizeof path, "%s/output_%d.npy", dir, (int)j);
        if (ingot_tensor_load_file(rt, path, &x->ref[j]) != INGOT_OK) x->ref[j].data = NULL;
    }
    if (ingot_model_infer(m) != INGOT_OK) {
        CHECK(0, "%s: infer: %s", dir, ingot_runtime_errmsg(rt));
        ingot_model_destroy(m);
        return NULL;
    }
    return m;
}

static void free_io(io *x)
{
    for (int i = 0; i < 16; i++) {
        x->in[i].name = NULL;
        ingot_tensor_free(&x->in[i]);
        ingot_tensor_free(&x->ref[i]);
    }
}

/* One precision: build, host run vs reference, device path, pointer updates, no-graph, audit. */
static void run_precision(ingot_runtime *rt, ingot_model *m, const char *dir, io *x, bool fp16)
{
    const char *pn = fp16 ? "fp16" : "fp32";
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CUDA;
    bo.precision = fp16 ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT;
    ingot_engine *e = NULL;
    ingot_context *c = NULL;
    void *d_in[16] = {0}, *d_out[2][16] = {{0}};
    float *h_out = NULL;
    cudaStream_t s = NULL;
    if (ingot_engine_build(rt, m, &bo, &e) != INGOT_OK) {
        CHECK(0, "%s %s: build: %s: %s", dir, pn, ingot_status_name(ingot_runtime_errcode(rt)),
              ingot_runtime_errmsg(rt));
        return;
    }
    uint64_t nm0, nf0, nm1, nf1;
    ingot_cuda_alloc_counts(&nm0, &nf0, NULL);
    if (ingot_context_create(e, NULL, &c) != INGOT_OK) {
        CHECK(0, "%s %s: context: %s: %s", dir, pn, ingot_status_name(ingot_runtime_errcode(rt)),
              ingot_runtime_errmsg(rt));
        goto out;
    }
    ingot_cuda_alloc_counts(&nm1, &nf1, NULL);
    /* one allocation kept; the context that tunes may first hold a larger one for the candidates'
     * workspaces and give it back once the choice is made (docs/CUDA.md, "Workspace") */
    CHECK(nm1 - nm0 - (nf1 - nf0) == 1 && nf1 - nf0 <= 1,
          "%s %s: context creation made %llu device allocation(s), %llu free(s) (want 1 kept: 1, 0 or 2, 1)", dir, pn,
          (unsigned long long)(nm1 - nm0), (unsigned long long)(nf1 - nf0));
    {
        /* a second context finds every choice in the engine's table: one allocation, tight */
        ingot_context *c2 = NULL;
        uint64_t a0, f0, a1, f1;
        ingot_cuda_alloc_counts(&a0, &f0, NULL);
        ingot_status s2 = ingot_context_create(e, NULL, &c2);
        ingot_cuda_alloc_counts(&a1, &f1, NULL);
        CHECK(s2 == INGOT_OK && a1 - a0 == 1 && f1 == f0,
              "%s %s: a second context made %llu device allocation(s), %llu free(s) (want 1, 0)%s%s", dir, pn,
              (unsigned long long)(a1 - a0), (unsigned long long)(f1 - f0), s2 ? ": " : "",
              s2 ? ingot_runtime_errmsg(rt) : "");
        ingot_context_destroy(c2);
    }
    /* host path */
    if (ingot_context_run(c, x->in, x->n_in) != INGOT_OK) {
        CHECK(0, "%s %s: run: %s: %s", dir, pn, ingot_status_name(ingot_context_errcode(c)), ingot_context_errmsg(c));
        goto out;
    }
    ingot_cuda_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    ingot_cuda_context_get_stats(c, &st);
    ingot_tensor o0;
    ingot_context_get_output(c, 0, &o0);
    size_t n0 = o0.bytes / 4;
    h_out = malloc(o0.bytes ? o0.bytes : 4);
    memcpy(h_out, o0.data, o0.bytes);
    for (int64_t j = 0; j < x->n_out; j++) {
        ingot_tensor o;
        ingot_context_get_output(c, j, &o);
        if (!x->ref[j].data || o.dtype != INGOT_DTYPE_FLOAT) continue;
        if (x->ref[j].bytes != o.bytes) {
            CHECK(0, "%s %s: output %d has %zu bytes, the reference %zu", dir, pn, (int)j, o.bytes, x->ref[j].bytes);
            continue;
        }
        cmp r = compare(o.data, x->ref[j].data, o.bytes / 4);
        /* references below fp16's resolution (random-weight MobileNetV2 ends near 1e-9) are checked by
         * their absolute error instead */
        double rms = 0;
        for (size_t k = 0; k < o.bytes / 4; k++)
            rms += (double)((float *)x->ref[j].data)[k] * ((float *)x->ref[j].data)[k];
        rms = sqrt(rms / (double)(o.bytes / 4 ? o.bytes / 4 : 1));
        bool degenerate = fp16 && rms < 1e-4;
        bool ok = r.finite && (degenerate ? r.maxe <= 1e-4 : fp16 ? r.cos >= 0.999 : r.rel <= 1e-3);
        if (degenerate) printf("note: reference rms %.3g is below fp16 resolution; absolute error checked\n", rms);
        CHECK(ok,
              "%s %s: output %d vs ONNX Runtime: rel err %.3g, cosine %.7f, max abs err %.3g (%lld steps, %lld "
              "fused nodes, arena %.2f MB, weights %.2f MB)",
              dir, pn, (int)j, r.rel, r.cos, r.maxe, (long long)st.n_steps, (long long)st.n_nodes_fused,
              st.arena_bytes / 1e6, st.weights_bytes / 1e6);
    }
    /* device path: graphs on (first run captures, later ones replay) */
    if (cudaStreamCreate(&s) != cudaSuccess) goto out;
    ingot_tensor din[16], dout[2][16];
    memset(din, 0, sizeof din);
    memset(dout, 0, sizeof dout);
    for (int64_t i = 0; i < x->n_in; i++) {
        din[i] = x->in[i];
        cudaMalloc(&d_in[i], x->in[i].bytes ? x->in[i].bytes : 1);
        cudaMemcpy(d_in[i], x->in[i].data, x->in[i].bytes, cudaMemcpyHostToDevice);
        din[i].data = d_in[i];
    }
    for (int k = 0; k < 2; k++)
        for (int64_t j = 0; j < x->n_out; j++) {
            ingot_cuda_context_output_info(c, j, &dout[k][j]);
            cudaMalloc(&d_out[k][j], dout[k][j].bytes ? dout[k][j].bytes : 1);
            cudaMemset(d_out[k][j], 0xff, dout[k][j].bytes);
            dout[k][j].data = d_out[k][j];
        }
    float *back = malloc(o0.bytes ? o0.bytes : 4);
    bool ok_all = true;
    for (int r = 0; r < 3; r++) {
        ingot_status q = ingot_cuda_context_enqueue(c, din, x->n_in, dout[0], x->n_out, s);
        if (q != INGOT_OK) {
            CHECK(0, "%s %s: enqueue: %s: %s", dir, pn, ingot_status_name(q), ingot_context_errmsg(c));
            ok_all = false;
            break;
        }
    }
    cudaError_t ce = cudaStreamSynchronize(s);
    if (ok_all) {
        cudaMemcpy(back, d_out[0][0], o0.bytes, cudaMemcpyDeviceToHost);
        cmp r = compare(back, h_out, n0);
        CHECK(ce == cudaSuccess && r.maxe <= 1e-6 * (1 + fabs(r.maxe)),
              "%s %s: device path (graph replay) equals host path: "
              "max abs diff %.3g (%s)",
              dir, pn, r.maxe, cudaGetErrorString(ce));
        ingot_cuda_context_get_stats(c, &st);
        int64_t upd0 = st.graph_updates;
        /* new output buffers: the graph's output copies are patched, not re-captured */
        ingot_status q = ingot_cuda_context_enqueue(c, din, x->n_in, dout[1], x->n_out, s);
        ce = cudaStreamSynchronize(s);
        cudaMemcpy(back, d_out[1][0], o0.bytes, cudaMemcpyDeviceToHost);
        r = compare(back, h_out, n0);
        ingot_cuda_context_get_stats(c, &st);
        CHECK(
            q == INGOT_OK && ce == cudaSuccess && r.maxe <= 1e-6 &&
                (graphs_off || (st.graph_captured && st.graph_captures == 1 && st.graph_updates > upd0)),
            "%s %s: new output pointer: max abs diff %.3g, graph captured %d, captures %lld, updates %lld -> %lld%s%s",
            dir, pn, r.maxe, st.graph_captured, (long long)st.graph_captures, (long long)upd0,
            (long long)st.graph_updates, st.graph_fallback[0] ? ", fallback: " : "", st.graph_fallback);
        /* allocation audit over 20 runs */
        size_t f0 = 0, f1 = 0, tot = 0;
        cudaMemGetInfo(&f0, &tot);
        ingot_cuda_alloc_counts(&nm0, &nf0, NULL);
        for (int k = 0; k < 20; k++) ingot_cuda_context_enqueue(c, din, x->n_in, dout[k & 1], x->n_out, s);
        cudaStreamSynchronize(s);
        ingot_cuda_alloc_counts(&nm1, &nf1, NULL);
        cudaMemGetInfo(&f1, &tot);
        CHECK(nm1 == nm0 && nf1 == nf0 && f0 == f1,
              "%s %s: 20 runs: %llu allocations, %llu frees, free memory changed "
              "by %lld bytes",
              dir, pn, (unsigned long long)(nm1 - nm0), (unsigned long long)(nf1 - nf0), (long long)f0 - (long long)f1);
        /* graphs off: the same numbers */
        ingot_cuda_context_set_graphs(c, 0);
        cudaMemset(d_out[0][0], 0xff, o0.bytes);
        q = ingot_cuda_context_enqueue(c, din, x->n_in, dout[0], x->n_out, s);
        ce = cudaStreamSynchronize(s);
        cudaMemcpy(back, d_out[0][0], o0.bytes, cudaMemcpyDeviceToHost);
        r = compare(back, h_out, n0);
        CHECK(q == INGOT_OK && ce == cudaSuccess && r.maxe <= 1e-6,
              "%s %s: graphs off equals graphs on: max abs diff %.3g", dir, pn, r.maxe);
    }
    free(back);
out:
    free(h_out);
    for (int i = 0; i < 16; i++) {
        if (d_in[i]) cudaFree(d_in[i]);
        for (int k = 0; k < 2; k++)
            if (d_out[k][i]) cudaFree(d_out[k][i]);
    }
    if (s) cudaStreamDestroy(s);
    ingot_context_destroy(c);
    ingot_engine_destroy(e);
}

static void run_case(const char *dir, bool unsupported)
{
    ingot_runtime *rt = NULL;
    ingot_runtime_create(&rt);
    io x;
    memset(&x, 0, sizeof x);
    ingot_model *m = load(rt, dir, &x);
    if (m && unsupported) {
        ingot_build_options bo = ingot_build_options_default();
        bo.backend = INGOT_BACKEND_CUDA;
        ingot_engine *e = NULL;
        ingot_status q = ingot_engine_build(rt, m, &bo, &e);
        CHECK(q == INGOT_ERR_MODEL_UNSUPPORTED_OP && strstr(ingot_runtime_errmsg(rt), "node '"),
              "%s: unsupported op reported at build: %s: %s", dir, ingot_status_name(q), ingot_runtime_errmsg(rt));
        ingot_engine_destroy(e);
    } else if (m) {
        run_precision(rt, m, dir, &x, false);
        run_precision(rt, m, dir, &x, true);
    }
    ingot_model_destroy(m);
    free_io(&x);
    ingot_runtime_destroy(rt);
}

int main(int argc, char **argv)
{
    bool leak = true;
    int first = 1;
    if (argc > 1 && !strcmp(argv[1], "--no-leak")) {
        leak = false;
        first = 2;
    }
    char why[512];
    if (!ingot_cuda_available(why, sizeof why)) {
        printf("no usable GPU (%s): nothing to test\n0 passed, 0 failed\n", why);
        return 0;
    }
    cudaFree(0);
    const char *g = getenv("INGOT_CUDA_GRAPHS");
    graphs_off = g && g[0] == '0';
    for (int i = first; i < argc; i++) {
        const char *base = strrchr(argv[i], '/');
        base = base ? base + 1 : argv[i];
        bool unsupported = !strncmp(base, "unsupported_", 12);
        if (!leak) {
            run_case(argv[i], unsupported);
            continue;
        }
        /* leak check: the first pass loads modules and library state for good; later passes must give
         * back every byte they take */
        run_case(argv[i], unsupported);
        cudaDeviceSynchronize();
        size_t f0 = 0, f1 = 0, tot = 0;
        cudaMemGetInfo(&f0, &tot);
        int before = n_fail;
        run_case(argv[i], unsupported);
        cudaDeviceSynchronize();
        cudaMemGetInfo(&f1, &tot);
        long long d = (long long)f0 - (long long)f1;
        (void)before;
        CHECK(d == 0, "%s: after destroy, free device memory is back to its level before (difference %lld bytes)",
              argv[i], d);
    }
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
