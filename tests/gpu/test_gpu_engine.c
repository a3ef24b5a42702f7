/*
 * test_gpu_engine.c -- CUDA engine files on a GPU: build (optimize, upload, tune), save, load, run.
 *
 *   test_gpu_engine MODEL.onnx [--fp16] [--batch N]
 *
 * Checks, for the model at the given batch (symbolic dims bound to N, the rest as declared):
 *  - the engine loaded from its file gives outputs bit-identical to the engine that was built, with
 *    the algorithms it tuned (its first context times nothing: its tune_ms, checking the stored choices
 *    with one call per step, stays under a tenth of the build's, or 2 ms);
 *  - a second build with the first one's timing cache times nothing either;
 *  - a damaged copy of the file is refused with a message.
 * And measures, with wall clocks (the process's CUDA context is created before timing starts): the
 * build with no cache (engine build + first context, which tunes), the build with a warm cache, the
 * file size, and load-to-first-result (ingot_engine_load, ingot_context_create, one ingot_context_run
 * with the outputs on the host). One PASS/FAIL line with the figures; exit status 1 on any failure.
 */
#define _POSIX_C_SOURCE 200809L
#include "ingot.h"
#include "ingot_cuda.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_IO 16

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

typedef struct io {
    int64_t n_in;
    ingot_tensor in[MAX_IO];
    int64_t n_out;
    void *out[MAX_IO];
    size_t out_bytes[MAX_IO];
} io;

/* Inputs of the engine's default shapes: floats in [-1, 1), integers 0 (ids, masks of zeros are valid). */
static int make_inputs(ingot_engine *e, io *x)
{
    x->n_in = ingot_engine_input_count(e);
    if (x->n_in > MAX_IO) return 0;
    for (int64_t i = 0; i < x->n_in; i++) {
        ingot_tensor_info ti;
        ingot_tensor *t = &x->in[i];
        if (ingot_engine_input_info(e, i, &ti) != INGOT_OK ||
            ingot_engine_input_default_shape(e, i, &t->rank, t->dims) != INGOT_OK)
            return 0;
        t->name = ti.name;
        t->dtype = ti.dtype;
        int64_t n = 1;
        for (int32_t k = 0; k < t->rank; k++) n *= t->dims[k];
        t->bytes = (size_t)n * ingot_dtype_size(ti.dtype);
        t->data = calloc(1, t->bytes + 8);
        if (ti.dtype == INGOT_DTYPE_FLOAT)
            for (int64_t k = 0; k < n; k++) ((float *)t->data)[k] = (float)((k * 7919) % 2000) / 1000.0f - 1.0f;
    }
    return 1;
}

static int run(ingot_engine *e, io *x, io *keep, double *tune_ms, char *msg, size_t n)
{
    ingot_context *c = NULL;
    int ok = ingot_context_create(e, NULL, &c) == INGOT_OK && ingot_context_run(c, x->in, x->n_in) == INGOT_OK;
    if (!ok) {
        snprintf(msg, n, "run: %s", c ? ingot_context_errmsg(c) : "context creation failed");
        ingot_context_destroy(c);
        return 0;
    }
    ingot_cuda_stats st = {.struct_size = sizeof st};
    if (tune_ms) *tune_ms = ingot_cuda_context_get_stats(c, &st) == INGOT_OK ? st.tune_ms : -1;
    keep->n_out = ingot_engine_output_count(e);
    for (int64_t j = 0; j < keep->n_out && j < MAX_IO; j++) {
        ingot_tensor o;
        if (ingot_context_get_output(c, j, &o) != INGOT_OK) {
            ok = 0;
            break;
        }
        keep->out[j] = malloc(o.bytes + 1);
        memcpy(keep->out[j], o.data, o.bytes);
        keep->out_bytes[j] = o.bytes;
    }
    ingot_context_destroy(c);
    return ok;
}

static int same(const io *a, const io *b)
{
    if (a->n_out != b->n_out) return 0;
    for (int64_t j = 0; j < a->n_out; j++)
        if (a->out_bytes[j] != b->out_bytes[j] || memcmp(a->out[j], b->out[j], a->out_bytes[j])) return 0;
    return 1;
}

static ingot_engine *build(ingot_runtime *rt, const char *path, ingot_dtype prec, int64_t batch, char *msg, size_t n)
{
    ingot_model *m = NULL;
    ingot_engine *e = NULL;
    if (ingot_model_load(rt, path, NULL, &m) == INGOT_OK &&
        (batch <= 0 || ingot_model_set_batch(m, batch) == INGOT_OK)) {
        ingot_build_options bo = ingot_build_options_default();
        bo.backend = INGOT_BACKEND_CUDA;
        bo.precision = prec;
        if (ingot_engine_build(rt, m, &bo, &e) != INGOT_OK) e = NULL;
    }
    if (!e) snprintf(msg, n, "build: %s", ingot_runtime_errmsg(rt));
    ingot_model_destroy(m);
    return e;
}

int main(int argc, char **argv)
{
    const char *model = NULL;
    ingot_dtype prec = INGOT_DTYPE_FLOAT;
    int64_t batch = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--fp16"))
            prec = INGOT_DTYPE_FLOAT16;
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            batch = atoll(argv[++i]);
        else
            model = argv[i];
    }
    if (!model) {
        fprintf(stderr, "usage: test_gpu_engine MODEL.onnx [--fp16] [--batch N]\n");
        return 2;
    }
    cudaFree(NULL); /* the process's CUDA context first: not part of any figure */
    char msg[1024] = "", file[256], cache[256];
    snprintf(file, sizeof file, "/tmp/ingot_gpu_engine_%d.ingot", (int)getpid());
    snprintf(cache, sizeof cache, "/tmp/ingot_gpu_engine_%d.cache", (int)getpid());
    ingot_runtime *rt = NULL;
    ingot_runtime_create(&rt);
    io a = {0}, b = {0}, c3 = {0};
    double tune_a = -1, tune_b = -1, tune_c = -1;
    int ok = 0;
    ingot_engine *e = NULL, *l = NULL, *w = NULL;

    double t0 = now_ms();
    if (!(e = build(rt, model, prec, batch, msg, sizeof msg)) || !make_inputs(e, &a)) goto out;
    if (!run(e, &a, &a, &tune_a, msg, sizeof msg)) goto out;
    double build_ms = now_ms() - t0;
    if (ingot_engine_save(e, file) != INGOT_OK || ingot_engine_save_timing_cache(e, cache) != INGOT_OK) {
        snprintf(msg, sizeof msg, "save: %s", ingot_runtime_errmsg(rt));
        goto out;
    }
    struct stat sb;
    double mb = stat(file, &sb) == 0 ? (double)sb.st_size / 1e6 : 0;

    /* load to first result */
    double t1 = now_ms();
    if (ingot_engine_load(rt, file, NULL, &l) != INGOT_OK) {
        snprintf(msg, sizeof msg, "load: %s", ingot_runtime_errmsg(rt));
        goto out;
    }
    double load_ms = now_ms() - t1;
    if (!make_inputs(l, &b) || !run(l, &b, &b, &tune_b, msg, sizeof msg)) goto out;
    double first_ms = now_ms() - t1;

    /* a warm timing cache */
    double t2 = now_ms();
    if (!(w = build(rt, model, prec, batch, msg, sizeof msg))) goto out;
    if (ingot_engine_load_timing_cache(w, cache) != INGOT_OK) {
        snprintf(msg, sizeof msg, "timing cache: %s", ingot_runtime_errmsg(rt));
        goto out;
    }
    if (!make_inputs(w, &c3) || !run(w, &c3, &c3, &tune_c, msg, sizeof msg)) goto out;
    double warm_ms = now_ms() - t2;

    /* a damaged file is refused */
    FILE *f = fopen(file, "r+b");
    if (f) {
        fseek(f, 100, SEEK_SET);
        int ch = fgetc(f);
        fseek(f, 100, SEEK_SET);
        fputc(ch ^ 0x40, f);
        fclose(f);
    }
    ingot_engine *bad = NULL;
    int refused = ingot_engine_load(rt, file, NULL, &bad) != INGOT_OK && ingot_runtime_errmsg(rt)[0];
    ingot_engine_destroy(bad);

    int bitwise = same(&a, &b) && same(&a, &c3);
    /* what is left of tuning after a load is checking the stored choices: one call per step, no timing */
    double tune_max = tune_a * 0.1 > 2.0 ? tune_a * 0.1 : 2.0;
    ok = bitwise && refused && tune_b >= 0 && tune_b < tune_max && tune_c >= 0 && tune_c < tune_max;
    snprintf(msg, sizeof msg,
             "%s batch %lld: build+tune %.0f ms (tuning %.0f ms), file %.1f MB, load %.1f ms, load-to-first-result "
             "%.1f ms, warm-cache build %.0f ms; loaded/cached engines tune %.2f/%.2f ms; outputs bit-identical: %s; "
             "damaged file refused: %s",
             prec == INGOT_DTYPE_FLOAT16 ? "fp16" : "fp32", (long long)batch, build_ms, tune_a, mb, load_ms, first_ms,
             warm_ms, tune_b, tune_c, bitwise ? "yes" : "NO", refused ? "yes" : "NO");
out:
    printf("%s %s: %s\n", ok ? "PASS" : "FAIL", model, msg);
    io *all[3] = {&a, &b, &c3};
    for (int k = 0; k < 3; k++) {
        for (int64_t i = 0; i < all[k]->n_in; i++) free(all[k]->in[i].data);
        for (int64_t j = 0; j < all[k]->n_out && j < MAX_IO; j++) free(all[k]->out[j]);
    }
    ingot_engine_destroy(w);
    ingot_engine_destroy(l);
    ingot_engine_destroy(e);
    ingot_runtime_destroy(rt);
    unlink(file);
    unlink(cache);
    return ok ? 0 : 1;
}
