/*
 * test_gpu_budget.c -- algorithm choice under one workspace budget, --mem-limit and the deterministic
 * mode, on a GPU.
 *
 *   test_gpu_budget MODEL.onnx [--batch N] [--fp32]
 *
 * For the model (fp16 unless --fp32) at the given batch:
 *  1. the default budget: the arena holds only the workspaces the chosen algorithms use (the largest
 *     of them is reported), and the outputs are the reference for the rest;
 *  2. a 1 MiB budget: no step's workspace is larger, outputs agree with (1) (cosine >= 0.999 in fp16,
 *     relative error <= 1e-3 in fp32: other algorithms round differently);
 *  3. --mem-limit between what (2) and (1) take (weights + arena): the context is made to fit, with
 *     smaller workspaces, and its outputs agree with (1);
 *  4. --mem-limit under what the activations alone need: context creation fails with
 *     INGOT_ERR_DEVICE_OOM and a message that gives the accounts and the limit that would fit;
 *  5. deterministic builds: two engines built one after the other give bit-identical outputs and the
 *     same memory.
 * One PASS/FAIL line per check with the figures; exit status 1 on any failure.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/core.h"
#include "ingot.h"
#include "ingot_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IO 16

typedef struct result {
    int64_t n_out;
    float *out[MAX_IO]; /* outputs as float32 */
    int64_t n[MAX_IO];
    ingot_cuda_stats st;
    char msg[1024];
    ingot_status status;
} result;

static int failures;

static void verdict(int ok, const char *what, const char *fmt, const char *detail)
{
    printf("%s %s: %s%s\n", ok ? "PASS" : "FAIL", what, fmt, detail ? detail : "");
    if (!ok) failures++;
}

/* Build with bo, make one context, run the engine's default shapes on deterministic inputs. */
static void build_run(ingot_runtime *rt, const char *path, int64_t batch, const ingot_build_options *bo, result *r)
{
    memset(r, 0, sizeof *r);
    r->st.struct_size = sizeof r->st;
    ingot_model *m = NULL;
    ingot_engine *e = NULL;
    ingot_context *c = NULL;
    ingot_tensor in[MAX_IO];
    int64_t n_in = 0;
    memset(in, 0, sizeof in);
    r->status = ingot_model_load(rt, path, NULL, &m);
    if (r->status == INGOT_OK && batch > 0) r->status = ingot_model_set_batch(m, batch);
    if (r->status == INGOT_OK) r->status = ingot_engine_build(rt, m, bo, &e);
    if (r->status == INGOT_OK) r->status = ingot_context_create(e, NULL, &c);
    if (r->status != INGOT_OK) {
        snprintf(r->msg, sizeof r->msg, "%s", ingot_runtime_errmsg(rt));
        goto out;
    }
    n_in = ingot_engine_input_count(e);
    for (int64_t i = 0; i < n_in && i < MAX_IO; i++) {
        ingot_tensor_info ti;
        ingot_tensor *t = &in[i];
        if (ingot_engine_input_info(e, i, &ti) != INGOT_OK ||
            ingot_engine_input_default_shape(e, i, &t->rank, t->dims) != INGOT_OK) {
            r->status = INGOT_ERR_INTERNAL;
            snprintf(r->msg, sizeof r->msg, "input %lld: no info", (long long)i);
            goto out;
        }
        t->name = ti.name;
        t->dtype = ti.dtype;
        int64_t n = 1;
        for (int32_t k = 0; k < t->rank; k++) n *= t->dims[k];
        t->bytes = (size_t)n * ingot_dtype_size(ti.dtype);
        t->data = calloc(1, t->bytes + 8);
        /* random-looking values in [-1, 1) (never zeros: they hide wrong indexing); ids stay 0 */
        if (ti.dtype == INGOT_DTYPE_FLOAT)
            for (int64_t k = 0; k < n; k++) ((float *)t->data)[k] = (float)((k * 7919 + 13) % 2000) / 1000.0f - 1.0f;
    }
    if ((r->status = ingot_context_run(c, in, n_in)) != INGOT_OK ||
        (r->status = ingot_cuda_context_get_stats(c, &r->st)) != INGOT_OK) {
        snprintf(r->msg, sizeof r->msg, "%s", ingot_context_errmsg(c));
        goto out;
    }
    r->n_out = ingot_engine_output_count(e);
    for (int64_t j = 0; j < r->n_out && j < MAX_IO; j++) {
        ingot_tensor o;
        if ((r->status = ingot_context_get_output(c, j, &o)) != INGOT_OK) goto out;
        size_t es = ingot_dtype_size(o.dtype);
        r->n[j] = (int64_t)(o.bytes / es);
        r->out[j] = malloc(sizeof(float) * (size_t)(r->n[j] + 1));
        for (int64_t k = 0; k < r->n[j]; k++)
            r->out[j][k] = o.dtype == INGOT_DTYPE_FLOAT16 ? ig__f16_to_f32(((const uint16_t *)o.data)[k])
                           : o.dtype == INGOT_DTYPE_FLOAT ? ((const float *)o.data)[k]
                                                          : 0.f;
    }
out:
    for (int64_t i = 0; i < n_in && i < MAX_IO; i++) free(in[i].data);
    ingot_context_destroy(c);
    ingot_engine_destroy(e);
    ingot_model_destroy(m);
}

static void result_free(result *r)
{
    for (int64_t j = 0; j < r->n_out && j < MAX_IO; j++) free(r->out[j]);
}

/* The worst agreement over the outputs: cosine (fp16) or relative L2 error (fp32). */
static int agree(const result *a, const result *b, int fp32, double *worst)
{
    *worst = fp32 ? 0.0 : 1.0;
    if (a->n_out != b->n_out) return 0;
    for (int64_t j = 0; j < a->n_out; j++) {
        if (a->n[j] != b->n[j]) return 0;
        double dot = 0, na = 0, nb = 0, d2 = 0;
        for (int64_t k = 0; k < a->n[j]; k++) {
            double x = a->out[j][k], y = b->out[j][k];
            if (isnan(x) || isnan(y)) return 0;
            dot += x * y;
            na += x * x;
            nb += y * y;
            d2 += (x - y) * (x - y);
        }
        if (na == 0) return 0; /* a degenerate reference proves nothing */
        double v = fp32 ? sqrt(d2 / na) : dot / (sqrt(na) * sqrt(nb) + 1e-30);
        if (fp32 ? v > *worst : v < *worst) *worst = v;
    }
    return fp32 ? *worst <= 1e-3 : *worst >= 0.999;
}

static int bitwise(const result *a, const result *b)
{
    if (a->n_out != b->n_out) return 0;
    for (int64_t j = 0; j < a->n_out; j++)
        if (a->n[j] != b->n[j] || memcmp(a->out[j], b->out[j], sizeof(float) * (size_t)a->n[j])) return 0;
    return 1;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    int64_t batch = 0;
    int fp32 = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            batch = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--fp32"))
            fp32 = 1;
        else
            path = argv[i];
    }
    if (!path) {
        fprintf(stderr, "usage: test_gpu_budget MODEL.onnx [--batch N] [--fp32]\n");
        return 2;
    }
    ingot_runtime *rt = NULL;
    if (ingot_runtime_create(&rt) != INGOT_OK) {
        printf("FAIL runtime\n");
        return 1;
    }
    char buf[2048], what[256];
    snprintf(what, sizeof what, "%s %s batch %lld", path, fp32 ? "fp32" : "fp16", (long long)batch);
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CUDA;
    bo.precision = fp32 ? INGOT_DTYPE_FLOAT : INGOT_DTYPE_FLOAT16;

    /* 1. the default budget */
    result ref;
    build_run(rt, path, batch, &bo, &ref);
    size_t w = ref.st.weights_bytes, a0 = ref.st.arena_bytes, ws0 = ref.st.workspace_bytes;
    snprintf(buf, sizeof buf,
             "weights %.1f MB, arena %.1f MB (largest workspace %.1f MB, activations lower bound %.1f MB)%s%s", w / 1e6,
             a0 / 1e6, ws0 / 1e6, ref.st.activation_lower_bound_bytes / 1e6, ref.status ? ": " : "",
             ref.status ? ref.msg : "");
    verdict(ref.status == INGOT_OK, what, "default budget: ", buf);
    if (ref.status != INGOT_OK) goto done;

    /* 2. a 1 MiB budget */
    result small;
    ingot_build_options b2 = bo;
    b2.workspace_limit = (size_t)1 << 20;
    build_run(rt, path, batch, &b2, &small);
    size_t a1 = small.st.arena_bytes;
    double q = 0;
    int ok =
        small.status == INGOT_OK && small.st.workspace_bytes <= b2.workspace_limit && agree(&ref, &small, fp32, &q);
    snprintf(buf, sizeof buf, "largest workspace %.3f MB, arena %.1f MB, %s %.6f%s%s", small.st.workspace_bytes / 1e6,
             small.st.arena_bytes / 1e6, fp32 ? "rel err" : "cosine", q, small.status ? ": " : "",
             small.status ? small.msg : "");
    verdict(ok, what, "1 MiB workspace budget: ", buf);
    result_free(&small);
    if (small.status != INGOT_OK) goto done;

    /* 3. a memory limit between the 1 MiB budget's memory and the default's: it fits, with smaller
     *    workspaces (the 1 MiB run shows what the activations need with almost no workspace) */
    if (a0 > a1 + ((size_t)1 << 20)) {
        result fit;
        ingot_build_options b3 = bo;
        b3.mem_limit = w + (a0 + a1) / 2;
        build_run(rt, path, batch, &b3, &fit);
        ok = fit.status == INGOT_OK && w + fit.st.arena_bytes <= b3.mem_limit && agree(&ref, &fit, fp32, &q);
        snprintf(buf, sizeof buf, "limit %.1f MB: weights + arena %.1f MB, largest workspace %.1f MB, %s %.6f%s%s",
                 b3.mem_limit / 1e6, (w + fit.st.arena_bytes) / 1e6, fit.st.workspace_bytes / 1e6,
                 fp32 ? "rel err" : "cosine", q, fit.status ? ": " : "", fit.status ? fit.msg : "");
        verdict(ok, what, "--mem-limit between the two: ", buf);
        result_free(&fit);
    } else {
        printf("SKIP %s: --mem-limit fit: the default's arena (%zu bytes) is no larger than the 1 MiB budget's "
               "(%zu): nothing to trade\n",
               what, a0, a1);
    }

    /* 4. a memory limit the activations alone exceed: a clear error with the accounts */
    result over;
    ingot_build_options b4 = bo;
    b4.mem_limit = w + a1 / 2;
    build_run(rt, path, batch, &b4, &over);
    ok = over.status == INGOT_ERR_DEVICE_OOM && strstr(over.msg, "memory limit") && strstr(over.msg, "would fit");
    snprintf(buf, sizeof buf, "status %s: %s", ingot_status_name(over.status), over.msg);
    verdict(ok, what, "--mem-limit too small: ", buf);
    result_free(&over);

    /* 5. deterministic builds agree bit for bit */
    result d1, d2;
    ingot_build_options b5 = bo;
    b5.deterministic = 1;
    build_run(rt, path, batch, &b5, &d1);
    build_run(rt, path, batch, &b5, &d2);
    ok = d1.status == INGOT_OK && d2.status == INGOT_OK && bitwise(&d1, &d2) && agree(&ref, &d1, fp32, &q) &&
         d1.st.arena_bytes == d2.st.arena_bytes;
    snprintf(buf, sizeof buf, "bit-identical: %s, arena %.1f / %.1f MB, %s vs tuned %.6f%s%s",
             bitwise(&d1, &d2) ? "yes" : "no", d1.st.arena_bytes / 1e6, d2.st.arena_bytes / 1e6,
             fp32 ? "rel err" : "cosine", q, d1.status ? ": " : "", d1.status ? d1.msg : "");
    verdict(ok, what, "deterministic builds: ", buf);
    result_free(&d1);
    result_free(&d2);
done:
    result_free(&ref);
    ingot_runtime_destroy(rt);
    return failures ? 1 : 0;
}
