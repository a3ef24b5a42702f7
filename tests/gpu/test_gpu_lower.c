/*
 * test_gpu_lower.c -- the CUDA backend's lowering, checked without a GPU: each model is lowered to a
 * device program (fp32 and fp16), planned into an arena, run by the host emulator (emulate.c), and
 * compared with ONNX Runtime's outputs. Runs in CI.
 *
 *   test_gpu_lower [-v] DIR...     DIR: model.onnx, input_<i>.npy, output_<j>.npy (tests/gpu/make_models.py)
 */
#include "../../src/api/api_internal.h"
#include "../../src/cuda/cuda_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int ig__emulate(const ig_graph *g, ig_cu_prog *p, void *const *inputs, void *const *outputs, char *why, size_t nwhy);

static int verbose, lower_only;

static const char *kind_name(int k)
{
    static const char *n[] = {"ew",   "conv",   "gemm", "softmax",   "layernorm", "reduce",
                              "pool", "gather", "fill", "attention", "dwconv"};
    return k >= 0 && k < IG_ST_KIND_COUNT ? n[k] : "?";
}

static void dump(const ig_cu_prog *p)
{
    char lbl[256];
    for (int32_t i = 0; i < p->n_steps; i++) {
        const ig_cu_step *s = &p->steps[i];
        printf("    %3d %-9s %s", (int)i, kind_name(s->kind), ig__cu_step_label(p, s, lbl, sizeof lbl));
        if (s->kind == IG_ST_EW) {
            const ig_ew_args *a = &s->u.ew.args;
            printf("  n=%lld rank=%d ops=%d in=%d%s", (long long)a->n, a->rank, a->n_ops, a->n_in,
                   a->int_math ? " int" : "");
        } else if (s->kind == IG_ST_GEMM) {
            const ig_cu_gemm *g = &s->u.gemm;
            printf("  m=%lld n=%lld k=%lld batch=%lld ta=%d tb=%d epi=%d bias=%d c=%d", (long long)g->m,
                   (long long)g->n, (long long)g->k, (long long)g->batch, g->a_trans, g->b_trans, g->epi, g->bias >= 0,
                   g->c >= 0);
        } else if (s->kind == IG_ST_CONV) {
            printf("  relu=%d bias=%d z=%d group=%d", s->u.conv.relu, s->u.conv.b >= 0, s->u.conv.z >= 0,
                   s->u.conv.group);
        }
        printf("\n");
    }
}

static int check_case(const char *dir)
{
    char path[1024];
    int fails = 0;
    ingot_runtime *rt = NULL;
    ingot_model *m = NULL;
    ingot_runtime_create(&rt);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    if (ingot_model_load(rt, path, NULL, &m) != INGOT_OK) {
        printf("FAIL %s: load: %s\n", dir, ingot_runtime_errmsg(rt));
        ingot_runtime_destroy(rt);
        return 1;
    }
    int64_t n_in = ingot_model_input_count(m), n_out = ingot_model_output_count(m);
    ingot_tensor ins[16], refs[16];
    memset(ins, 0, sizeof ins);
    memset(refs, 0, sizeof refs);
    for (int64_t i = 0; i < n_in && i < 16; i++) {
        snprintf(path, sizeof path, "%s/input_%d.npy", dir, (int)i);
        if (ingot_tensor_load_file(rt, path, &ins[i]) != INGOT_OK) {
            printf("FAIL %s: %s\n", dir, ingot_runtime_errmsg(rt));
            fails++;
            goto out;
        }
        ingot_tensor_info ti;
        ingot_model_input_info(m, i, &ti);
        ins[i].name = ti.name;
        ingot_model_set_input_shape(m, ti.name, ins[i].rank, ins[i].dims);
    }
    for (int64_t j = 0; j < n_out && j < 16; j++) {
        snprintf(path, sizeof path, "%s/output_%d.npy", dir, (int)j);
        if (ingot_tensor_load_file(rt, path, &refs[j]) != INGOT_OK) {
            printf("FAIL %s: %s\n", dir, ingot_runtime_errmsg(rt));
            fails++;
            goto out;
        }
    }
    if (ingot_model_infer(m) != INGOT_OK) {
        printf("FAIL %s: infer: %s\n", dir, ingot_runtime_errmsg(rt));
        fails++;
        goto out;
    }
    const ig_graph *g = ig__model_graph(m);
    for (int prec = 0; prec < 2; prec++) {
        ig_cu_lower_options lo = {.precision = prec ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT,
                                  .nhwc = 1,
                                  .gelu_epilogue = 1,
                                  .attention = prec};
        ig_cu_prog p;
        ig_err err = {0};
        const char *base = strrchr(dir, '/');
        base = base ? base + 1 : dir;
        if (!strncmp(base, "unsupported_", 12)) {
            ingot_status q = ig__cu_lower(g, &lo, &p, &err);
            if (q == INGOT_OK) ig__cu_prog_free(&p);
            bool ok = q == INGOT_ERR_MODEL_UNSUPPORTED_OP && strstr(err.msg, "node '");
            printf("%s %s %s: unsupported op reported: %s\n", ok ? "PASS" : "FAIL", dir, prec ? "fp16" : "fp32",
                   err.msg);
            fails += !ok;
            continue;
        }
        if (ig__cu_lower(g, &lo, &p, &err) != INGOT_OK) {
            printf("FAIL %s %s: lower: %s\n", dir, prec ? "fp16" : "fp32", err.msg);
            fails++;
            continue;
        }
        int counts[IG_ST_KIND_COUNT] = {0};
        for (int32_t i = 0; i < p.n_steps; i++) counts[p.steps[i].kind]++;
        if (verbose) dump(&p);
        if (lower_only) {
            printf("PASS %s %s: lowered into %d steps (", dir, prec ? "fp16" : "fp32", (int)p.n_steps);
            for (int k = 0; k < IG_ST_KIND_COUNT; k++)
                if (counts[k]) printf(" %s %d", kind_name(k), counts[k]);
            printf(" ; %lld nodes fused)\n", (long long)p.n_fused);
            ig__cu_prog_free(&p);
            continue;
        }
        void *outs[16] = {0};
        void *inp[16] = {0};
        for (int64_t i = 0; i < n_in; i++) inp[i] = ins[i].data;
        for (int64_t j = 0; j < n_out; j++) outs[j] = calloc(refs[j].bytes ? refs[j].bytes : 1, 1);
        char why[512] = "";
        if (ig__emulate(g, &p, inp, outs, why, sizeof why)) {
            printf("FAIL %s %s: emulate: %s\n", dir, prec ? "fp16" : "fp32", why);
            fails++;
        } else {
            for (int64_t j = 0; j < n_out; j++) {
                size_t n = refs[j].bytes / 4;
                const float *a = outs[j], *b = refs[j].data;
                double d2 = 0, b2 = 0, a2 = 0, ab = 0, maxe = 0;
                for (size_t k = 0; k < n; k++) {
                    double e = (double)a[k] - b[k];
                    d2 += e * e;
                    b2 += (double)b[k] * b[k];
                    a2 += (double)a[k] * a[k];
                    ab += (double)a[k] * b[k];
                    if (fabs(e) > maxe || e != e) maxe = fabs(e);
                }
                double rel = sqrt(d2 / (b2 > 0 ? b2 : 1)), cos = ab / sqrt(a2 * b2 > 0 ? a2 * b2 : 1);
                bool ok = prec ? cos >= 0.999 && rel == rel : rel <= 1e-4;
                printf("%s %s %s: %d steps (", ok ? "PASS" : "FAIL", dir, prec ? "fp16" : "fp32", (int)p.n_steps);
                for (int k = 0; k < IG_ST_KIND_COUNT; k++)
                    if (counts[k]) printf(" %s %d", kind_name(k), counts[k]);
                printf(" ; %lld nodes fused) rel err %.3g, cosine %.6f, max abs err %.3g\n", (long long)p.n_fused, rel,
                       cos, maxe);
                if (!ok) fails++;
            }
        }
        for (int64_t j = 0; j < n_out; j++) free(outs[j]);
        ig__cu_prog_free(&p);
    }
out:
    for (int64_t i = 0; i < 16; i++) {
        ins[i].name = NULL; /* the model's, not ours */
        ingot_tensor_free(&ins[i]);
        ingot_tensor_free(&refs[i]);
    }
    ingot_model_destroy(m);
    ingot_runtime_destroy(rt);
    return fails;
}

int main(int argc, char **argv)
{
    int fails = 0, n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) {
            verbose = 1;
            continue;
        }
        if (!strcmp(argv[i], "--lower-only")) {
            lower_only = 1;
            continue;
        }
        fails += check_case(argv[i]);
        n++;
    }
    printf("%d passed, %d failed\n", n - (fails > n ? n : fails), fails);
    return fails ? 1 : 0;
}
