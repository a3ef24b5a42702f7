/*
 * test_gpu_lower.c -- the CUDA backend's lowering, checked without a GPU: each model is lowered to a
 * device program (fp32 and fp16), planned into an arena, run by the host emulator (emulate.c), and
 * compared with ONNX Runtime's outputs. Runs in CI.
 *
 *   test_gpu_lower [-v] [--lower-only] [--coverage] [--jit ARCH] [--disable-pass NAME[,NAME]] DIR...
 *       DIR: model.onnx, input_<i>.npy, output_<j>.npy (tests/gpu/make_models.py)
 *
 * Each case is lowered twice: the engine's graph as the optimizer leaves it (fused nodes) and as
 * imported (--no-optimize), each in fp32 and fp16. --coverage fails when an op the CUDA backend has a
 * lowering for (src/cuda/lower_table.c) is lowered by none of the cases. --jit ARCH ("sm_90") compiles
 * every elementwise program the run-time generator covers (src/cuda/ew_jit.c) with NVRTC for ARCH,
 * without loading it (no GPU needed), and fails on any that does not compile. --disable-pass skips
 * optimizer passes in the optimized build (to see what one pass changes in the step listing).
 */
#include "../../src/api/api_internal.h"
#include "../../src/cuda/cuda_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int ig__emulate(const ig_graph *g, ig_cu_prog *p, void *const *inputs, void *const *outputs, char *why, size_t nwhy);

static int verbose, lower_only;
#define IG_MAX_JIT 1024
static const char *jit_arch;       /* --jit: compile the covered elementwise programs for this architecture */
static const char *disable_passes; /* --disable-pass: optimizer passes the optimized build skips */
static int64_t jit_programs, jit_covered;
static int64_t covered[IG_OP_COUNT]; /* nodes lowered per op, over every case run */

static const char *kind_name(int k) { return ig__cu_step_kind_name(k); }

static void dump(const ig_cu_prog *p)
{
    char lbl[256];
    for (int32_t i = 0; i < p->n_steps; i++) {
        const ig_cu_step *s = &p->steps[i];
        printf("    %3d %-9s %s", (int)i, kind_name(s->kind), ig__cu_step_label(p, s, lbl, sizeof lbl));
        if (s->kind == IG_ST_EW) {
            const ig_ew_args *a = &s->u.ew.args;
            const char *tr = ingot_cuda_ew_transpose_form(a);
            printf("  n=%lld rank=%d ops=%d in=%d%s%s%s%s", (long long)a->n, a->rank, a->n_ops, a->n_in,
                   a->int_math ? " int" : "", tr ? " (transposing copy: " : "", tr ? tr : "", tr ? ")" : "");
        } else if (s->kind == IG_ST_GEMM) {
            const ig_cu_gemm *g = &s->u.gemm;
            printf("  m=%lld n=%lld k=%lld batch=%lld ta=%d tb=%d epi=%d bias=%d c=%d", (long long)g->m,
                   (long long)g->n, (long long)g->k, (long long)g->batch, g->a_trans, g->b_trans, g->epi, g->bias >= 0,
                   g->c >= 0);
        } else if (s->kind == IG_ST_POOL || s->kind == IG_ST_DWCONV) {
            /* strides and the kernel the launcher picks, pointers at the tensors' offsets in their buffers
             * (buffers are 256-byte aligned): what sets the vector width */
            bool pool = s->kind == IG_ST_POOL;
            const ig_cu_tensor *x = &p->tensors[pool ? s->u.pool.x : s->u.dw.x];
            const ig_cu_tensor *y = &p->tensors[pool ? s->u.pool.y : s->u.dw.y];
            size_t es = x->dtype == INGOT_DTYPE_FLOAT ? 4 : 2;
            void *xp = (void *)(uintptr_t)(256 + x->offset * es), *yp = (void *)(uintptr_t)(256 + y->offset * es);
            char how[64];
            const int64_t *xs, *ys;
            if (pool) {
                ig_pool_args a = s->u.pool.args;
                a.x = xp;
                a.y = yp;
                ingot_cuda_pool_describe(&a, how, sizeof how);
                xs = s->u.pool.args.xs;
                ys = s->u.pool.args.ys;
                printf("  %s [%lld,%lld,%lld,%lld] k%dx%d s%d", a.is_max ? "max" : "avg", (long long)a.n,
                       (long long)a.c, (long long)a.h, (long long)a.w, a.kh, a.kw, a.sh);
            } else {
                ig_dwconv_args a = s->u.dw.args;
                a.x = xp;
                a.y = yp;
                a.filt = (const void *)(uintptr_t)(256 + p->tensors[s->u.dw.w].offset * es);
                a.b = s->u.dw.b >= 0 ? (const void *)(uintptr_t)(256 + p->tensors[s->u.dw.b].offset * es) : NULL;
                ingot_cuda_dwconv_describe(&a, how, sizeof how);
                xs = s->u.dw.args.xs;
                ys = s->u.dw.args.ys;
                printf("  [%lld,%lld,%lld,%lld] k%dx%d s%d", (long long)a.n, (long long)a.c, (long long)a.h,
                       (long long)a.w, a.kh, a.kw, a.sh);
            }
            printf(" xs=[%lld,%lld,%lld,%lld]+%lld ys=[%lld,%lld,%lld,%lld]+%lld %s: %s", (long long)xs[0],
                   (long long)xs[1], (long long)xs[2], (long long)xs[3], (long long)x->offset, (long long)ys[0],
                   (long long)ys[1], (long long)ys[2], (long long)ys[3], (long long)y->offset,
                   ingot_dtype_name(x->dtype), how);
        } else if (s->kind == IG_ST_CONV) {
            printf("  relu=%d bias=%d z=%d group=%d%s%s", s->u.conv.relu, s->u.conv.b >= 0, s->u.conv.z >= 0,
                   s->u.conv.group, s->u.conv.transpose ? " transpose" : "", s->u.conv.pool_y >= 0 ? " max pool" : "");
        } else if (s->kind == IG_ST_REDUCTION) { /* the canonical form and the planned launch geometry */
            const ig_reduction_args *r = &s->u.k.a.red;
            printf("  %s outputs=%lld reduced=%lld inner=%lld keep=%d red=%d vec=%d lanes=%d split=%d chunk=%lld",
                   r->cols ? "columns" : "rows", (long long)r->n_out, (long long)r->n_red_total, (long long)r->inner,
                   r->n_keep, r->n_red, r->vec, r->lanes, r->split, (long long)r->chunk);
        }
        printf("\n");
    }
}

/* The number in file DIR/name (make_models.py writes a case's expectations so), -1 when there is none. */
static long read_limit(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    long v = -1;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1) v = -1;
        fclose(f);
    }
    return v;
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
    if (n_in > 16 || n_out > 16) { /* the harness's arrays: split such a case in two */
        printf("FAIL %s: %lld inputs and %lld outputs: the harness takes at most 16 of each\n", dir, (long long)n_in,
               (long long)n_out);
        fails++;
        goto out;
    }
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
    const char *base = strrchr(dir, '/');
    base = base ? base + 1 : dir;
    /* the graph the CUDA backend is handed: the engine's (optimized, or as imported) at these shapes */
    for (int optimize = 1; optimize >= 0; optimize--) {
        ingot_build_options bo = ingot_build_options_default();
        bo.backend = INGOT_BACKEND_CPU;
        bo.optimize = optimize;
        bo.disable_passes = disable_passes;
        ingot_engine *e = NULL;
        if (ingot_engine_build(rt, m, &bo, &e) != INGOT_OK) {
            printf("FAIL %s: build (optimize %d): %s\n", dir, optimize, ingot_runtime_errmsg(rt));
            fails++;
            continue;
        }
        const ig_graph *g = ig__engine_graph(e);
        const char *on = optimize ? "opt" : "no-opt";
        for (int prec = 0; prec < 2 && g; prec++) {
            const char *pn = prec ? "fp16" : "fp32";
            ig_cu_lower_options lo = {.precision = prec ? INGOT_DTYPE_FLOAT16 : INGOT_DTYPE_FLOAT,
                                      .nhwc = 1,
                                      .gelu_epilogue = 1,
                                      .attention = prec};
            ig_cu_prog p;
            ig_err err = {0};
            if (!strncmp(base, "unsupported_", 12)) {
                ingot_status q = ig__cu_lower(g, &lo, &p, &err);
                if (q == INGOT_OK) ig__cu_prog_free(&p);
                bool ok = q == INGOT_ERR_MODEL_UNSUPPORTED_OP && strstr(err.msg, "node '");
                printf("%s %s %s %s: unsupported op reported: %s\n", ok ? "PASS" : "FAIL", dir, on, pn, err.msg);
                fails += !ok;
                continue;
            }
            if (ig__cu_lower(g, &lo, &p, &err) != INGOT_OK) {
                printf("FAIL %s %s %s: lower: %s\n", dir, on, pn, err.msg);
                fails++;
                continue;
            }
            for (int k = 0; k < IG_OP_COUNT; k++) covered[k] += p.n_lowered[k];
            int counts[IG_ST_KIND_COUNT] = {0};
            for (int32_t i = 0; i < p.n_steps; i++) counts[p.steps[i].kind]++;
            if (verbose) dump(&p);
            char kinds[512];
            size_t off = (size_t)snprintf(kinds, sizeof kinds, "%d steps (", (int)p.n_steps);
            for (int k = 0; k < IG_ST_KIND_COUNT && off < sizeof kinds; k++)
                if (counts[k])
                    off += (size_t)snprintf(kinds + off, sizeof kinds - off, " %s %d", kind_name(k), counts[k]);
            if (off < sizeof kinds)
                snprintf(kinds + off, sizeof kinds - off, " ; %lld model nodes fused)", (long long)p.n_fused);
            long max_ew = read_limit(dir, "max_ew_steps");
            if (optimize && max_ew >= 0) { /* the case says how many elementwise steps its lowering needs */
                bool ok = counts[IG_ST_EW] <= max_ew;
                printf("%s %s %s %s: %d elementwise steps (at most %ld: more means a copy came back)\n",
                       ok ? "PASS" : "FAIL", dir, on, pn, counts[IG_ST_EW], max_ew);
                fails += !ok;
            }
            if (jit_arch) { /* the instance's covered programs as one unit, as the backend compiles them */
                const ig_ew_args *progs[IG_MAX_JIT];
                bool i32[IG_MAX_JIT];
                int n_ew = 0, n_cov = 0;
                for (int32_t i = 0; i < p.n_steps; i++) {
                    const ig_cu_step *s = &p.steps[i];
                    if (s->kind != IG_ST_EW || s->u.ew.args.n <= 0) continue;
                    n_ew++;
                    if (!ig__cu_ew_jit_covers(&s->u.ew.args) || n_cov >= IG_MAX_JIT) continue;
                    progs[n_cov] = &s->u.ew.args;
                    i32[n_cov++] = ingot_cuda_ew_fits_i32(&s->u.ew.args) != 0;
                }
                ig_err je = {0};
                bool ok = ig__cu_ew_jit_check(progs, i32, n_cov, jit_arch, &je) == INGOT_OK;
                jit_programs += n_ew;
                jit_covered += n_cov;
                printf("%s %s %s %s: %d of %d elementwise programs generated and compiled for %s%s%.500s\n",
                       ok ? "PASS" : "FAIL", dir, on, pn, n_cov, n_ew, jit_arch, ok ? "" : ": ", ok ? "" : je.msg);
                fails += !ok;
            }
            if (lower_only) {
                printf("PASS %s %s %s: lowered into %s\n", dir, on, pn, kinds);
                ig__cu_prog_free(&p);
                continue;
            }
            void *outs[16] = {0};
            void *inp[16] = {0};
            for (int64_t i = 0; i < n_in; i++) inp[i] = ins[i].data;
            for (int64_t j = 0; j < n_out; j++) outs[j] = calloc(refs[j].bytes ? refs[j].bytes : 1, 1);
            char why[512] = "";
            if (ig__emulate(g, &p, inp, outs, why, sizeof why)) {
                printf("FAIL %s %s %s: emulate: %s\n", dir, on, pn, why);
                fails++;
            } else {
                for (int64_t j = 0; j < n_out; j++) {
                    size_t n = refs[j].bytes / 4;
                    const float *a = outs[j], *b = refs[j].data;
                    double d2 = 0, b2 = 0, a2 = 0, ab = 0, maxe = 0;
                    for (size_t k = 0; k < n; k++) {
                        double e2 = (double)a[k] - b[k];
                        d2 += e2 * e2;
                        b2 += (double)b[k] * b[k];
                        a2 += (double)a[k] * a[k];
                        ab += (double)a[k] * b[k];
                        if (fabs(e2) > maxe || e2 != e2) maxe = fabs(e2);
                    }
                    double rel = sqrt(d2 / (b2 > 0 ? b2 : 1)), cos = ab / sqrt(a2 * b2 > 0 ? a2 * b2 : 1);
                    bool ok = prec ? cos >= 0.999 && rel == rel : rel <= 1e-4;
                    printf("%s %s %s %s: %s output %d rel err %.3g, cosine %.6f, max abs err %.3g\n",
                           ok ? "PASS" : "FAIL", dir, on, pn, kinds, (int)j, rel, cos, maxe);
                    if (!ok) fails++;
                }
            }
            for (int64_t j = 0; j < n_out; j++) free(outs[j]);
            ig__cu_prog_free(&p);
        }
        ingot_engine_destroy(e);
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
    int fails = 0, n = 0, coverage = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) {
            verbose = 1;
            continue;
        }
        if (!strcmp(argv[i], "--lower-only")) {
            lower_only = 1;
            continue;
        }
        if (!strcmp(argv[i], "--coverage")) {
            coverage = 1;
            continue;
        }
        if (!strcmp(argv[i], "--disable-pass") && i + 1 < argc) {
            disable_passes = argv[++i];
            continue;
        }
        if (!strcmp(argv[i], "--jit") && i + 1 < argc) {
            jit_arch = argv[++i];
            continue;
        }
        fails += check_case(argv[i]);
        n++;
    }
    if (coverage) { /* every op the CUDA backend lowers is lowered by some case (with or without the optimizer) */
        int missing = 0;
        for (int k = 0; k < IG_OP_COUNT; k++)
            if (ig__cu_op_lowered(k) && !covered[k]) {
                printf("FAIL coverage: op %s has a CUDA lowering but no case lowers it (tests/gpu/make_models.py)\n",
                       ig__op_table[k]->name);
                missing++;
            }
        if (!missing) printf("PASS coverage: every op with a CUDA lowering is lowered by a case\n");
        fails += missing;
        n++;
    }
    if (jit_arch) {
        int64_t compiled = 0, cached = 0;
        ig__cu_ew_jit_stats(&compiled, &cached);
        printf("jit: %lld of %lld elementwise programs covered by the generator; %lld units compiled, %lld read "
               "from the cache\n",
               (long long)jit_covered, (long long)jit_programs, (long long)compiled, (long long)cached);
    }
    printf("%d passed, %d failed\n", n - (fails > n ? n : fails), fails);
    return fails ? 1 : 0;
}
