/*
 * cmd_run.c -- `ingot run`: one inference on the CPU backend. Inputs come from files (.npy or ONNX
 * TensorProto .pb) or are seeded random; outputs are written as .npy only after the whole run
 * succeeded (no partial output), and each is summarised by shape and checksum.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void run_usage(FILE *f)
{
    fprintf(f, "usage: ingot run MODEL.onnx [--input NAME=FILE ...] [--batch N] [--seed S] [--output-dir DIR]\n"
               "                 [--threads N] [--debug-memory] [--no-memory-reuse] [--memory]\n"
               "                 [--no-optimize] [--disable-pass NAME[,NAME]]\n"
               "  --input NAME=FILE  input from a .npy or TensorProto .pb file (others: seeded random)\n"
               "  --batch N          bind symbolic leading dims of random inputs to N (default 1)\n"
               "  --seed S           seed of the random inputs (default 0)\n"
               "  --output-dir DIR   write each output as DIR/<name>.npy\n"
               "  --threads N        CPU threads (default: all cores)\n"
               "  --debug-memory     guard bytes after every tensor, checked after each step; dead bytes\n"
               "                     poisoned (catches a kernel writing out of bounds where it happens)\n"
               "  --no-memory-reuse  every tensor its own bytes (a reference for the planned arena)\n"
               "  --memory           print where the context memory goes\n" IG_CLI_OPT_USAGE);
}

/* splitmix64: a small, well-mixed generator so random inputs are the same on every machine */
static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int random_input(const ingot_tensor_info *ti, int64_t batch, uint64_t *seed, ingot_tensor *t)
{
    memset(t, 0, sizeof *t);
    t->name = ti->name;
    t->dtype = ti->dtype;
    t->rank = ti->rank;
    int64_t numel = 1;
    for (int32_t k = 0; k < ti->rank; k++) {
        int64_t d = ti->dims[k].value;
        if (ti->dims[k].symbol) {
            if (k != 0) {
                fprintf(stderr, "ingot run: input '%s' has symbolic dim '%s' at axis %d; give it with --input\n",
                        ti->name, ti->dims[k].symbol, (int)k);
                return 0;
            }
            d *= batch;
        }
        t->dims[k] = d;
        numel *= d;
    }
    size_t es = ingot_dtype_size(ti->dtype);
    t->bytes = (size_t)numel * es;
    t->data = malloc(t->bytes ? t->bytes : 1);
    if (!t->data) return 0;
    for (int64_t i = 0; i < numel; i++) {
        uint64_t r = next_rand(seed);
        double u = (double)(r >> 11) / 9007199254740992.0; /* [0,1) */
        unsigned char *p = (unsigned char *)t->data + (size_t)i * es;
        switch (ti->dtype) {
        case INGOT_DTYPE_FLOAT: {
            float f = (float)(2 * u - 1);
            memcpy(p, &f, 4);
            break;
        }
        case INGOT_DTYPE_DOUBLE: {
            double f = 2 * u - 1;
            memcpy(p, &f, 8);
            break;
        }
        case INGOT_DTYPE_BOOL: *p = (unsigned char)(r & 1); break;
        case INGOT_DTYPE_FLOAT16:
        case INGOT_DTYPE_BFLOAT16: {
            /* small integers are exact in both half formats */
            float f = (float)((int)(u * 9) - 4);
            uint32_t x;
            memcpy(&x, &f, 4);
            uint16_t h = ti->dtype == INGOT_DTYPE_BFLOAT16
                             ? (uint16_t)(x >> 16)
                             : (uint16_t)(f == 0 ? 0
                                                 : ((x >> 16) & 0x8000) | ((((x >> 23) & 0xff) - 112) << 10) |
                                                       ((x >> 13) & 0x3ff));
            memcpy(p, &h, 2);
            break;
        }
        default: { /* integers: small non-negative values, valid as indices or token ids */
            int64_t v = (int64_t)(u * 10);
            memcpy(p, &v, es); /* little-endian: the low bytes of v */
            break;
        }
        }
    }
    return 1;
}

static void checksum(const ingot_tensor *t, double *sum, double *abs_sum)
{
    size_t es = ingot_dtype_size(t->dtype);
    size_t n = es ? t->bytes / es : 0;
    *sum = *abs_sum = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)t->data + i * es;
        double v = 0;
        switch (t->dtype) {
        case INGOT_DTYPE_FLOAT: {
            float f;
            memcpy(&f, p, 4);
            v = f;
            break;
        }
        case INGOT_DTYPE_DOUBLE: memcpy(&v, p, 8); break;
        case INGOT_DTYPE_INT64: {
            int64_t x;
            memcpy(&x, p, 8);
            v = (double)x;
            break;
        }
        case INGOT_DTYPE_INT32: {
            int32_t x;
            memcpy(&x, p, 4);
            v = x;
            break;
        }
        case INGOT_DTYPE_BOOL:
        case INGOT_DTYPE_UINT8: v = *p; break;
        case INGOT_DTYPE_INT8: v = (int8_t)*p; break;
        default: v = 0; break;
        }
        *sum += v;
        *abs_sum += fabs(v);
    }
}

/* An output name as a file name: anything but [A-Za-z0-9._-] becomes '_'. */
static void file_name(const char *name, char *buf, size_t n)
{
    size_t i = 0;
    for (; name[i] && i + 1 < n; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                 c == '-';
        buf[i] = ok ? c : '_';
    }
    buf[i] = '\0';
    if (!strcmp(buf, ".") || !strcmp(buf, "..") || !buf[0]) snprintf(buf, n, "output");
}

int ig__cmd_run(int argc, char **argv)
{
    const char *path = NULL, *out_dir = NULL;
    int64_t batch = 0, seed = 0, threads = 0;
    int n_files = 0, debug_memory = 0, no_reuse = 0, show_memory = 0;
    ig_cli_opt oo;
    ig__cli_opt_init(&oo);
    char **file_args = calloc((size_t)argc + 1, sizeof(char *));
    if (!file_args) return 1;
    for (int i = 1; i < argc; i++) {
        int r = ig__cli_opt_arg(argc, argv, &i, &oo);
        if (r < 0) {
            free(file_args);
            return 2;
        }
        if (r > 0) continue;
        if (!strcmp(argv[i], "--input") && i + 1 < argc)
            file_args[n_files++] = argv[++i];
        else if (!strcmp(argv[i], "--debug-memory"))
            debug_memory = 1;
        else if (!strcmp(argv[i], "--no-memory-reuse"))
            no_reuse = 1;
        else if (!strcmp(argv[i], "--memory"))
            show_memory = 1;
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
            if (!ig__cli_parse_i64("--batch", argv[++i], 1, &batch)) return 2;
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            if (!ig__cli_parse_i64("--seed", argv[++i], 0, &seed)) return 2;
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            if (!ig__cli_parse_i64("--threads", argv[++i], 1, &threads)) return 2;
        } else if (!strcmp(argv[i], "--output-dir") && i + 1 < argc)
            out_dir = argv[++i];
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            run_usage(stdout);
            free(file_args);
            return 0;
        } else if (argv[i][0] == '-' || path) {
            fprintf(stderr, "ingot run: unexpected argument '%s'\n", argv[i]);
            run_usage(stderr);
            free(file_args);
            return 2;
        } else
            path = argv[i];
    }
    if (!path) {
        run_usage(stderr);
        free(file_args);
        return 2;
    }
    int rc = 1;
    ingot_runtime *rt = NULL;
    ingot_model *m = NULL;
    ingot_engine *e = NULL;
    ingot_context *c = NULL;
    ingot_tensor *in = NULL;
    char *from_file = NULL;
    int64_t n_in = 0;
    if (ingot_runtime_create(&rt) != INGOT_OK) goto out;
    if (!(m = ig__cli_load_model(rt, path, 0))) goto out;
    n_in = ingot_model_input_count(m);
    in = calloc((size_t)n_in + 1, sizeof *in);
    from_file = calloc((size_t)n_in + 1, 1);
    if (!in || !from_file) goto out;
    uint64_t rng = (uint64_t)seed;
    for (int64_t i = 0; i < n_in; i++) {
        ingot_tensor_info ti;
        ingot_model_input_info(m, i, &ti);
        const char *file = NULL;
        size_t len = strlen(ti.name);
        for (int f = 0; f < n_files; f++)
            if (!strncmp(file_args[f], ti.name, len) && file_args[f][len] == '=') file = file_args[f] + len + 1;
        if (file) {
            if (ingot_tensor_load_file(rt, file, &in[i]) != INGOT_OK) {
                fprintf(stderr, "ingot run: input '%s': %s\n", ti.name, ingot_runtime_errmsg(rt));
                goto out;
            }
            in[i].name = ti.name;
            from_file[i] = 1;
        } else if (!random_input(&ti, batch ? batch : 1, &rng, &in[i])) {
            goto out;
        }
    }
    for (int f = 0; f < n_files; f++) {
        const char *eq = strchr(file_args[f], '=');
        int known = 0;
        for (int64_t i = 0; eq && i < n_in; i++)
            known |= (size_t)(eq - file_args[f]) == strlen(in[i].name) &&
                     !strncmp(file_args[f], in[i].name, (size_t)(eq - file_args[f]));
        if (!known) {
            fprintf(stderr, "ingot run: --input '%s' does not name a model input (NAME=FILE)\n", file_args[f]);
            goto out;
        }
    }
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    bo.n_threads = (int)threads;
    ig__cli_opt_apply(&oo, &bo);
    ingot_context_options co = ingot_context_options_default();
    co.debug_canaries = debug_memory;
    co.memory_reuse = !no_reuse;
    if (ingot_engine_build(rt, m, &bo, &e) != INGOT_OK || ingot_context_create(e, &co, &c) != INGOT_OK) {
        fprintf(stderr, "ingot run: %s: %s\n", ingot_status_name(ingot_runtime_errcode(rt)), ingot_runtime_errmsg(rt));
        goto out;
    }
    if (ingot_context_run(c, in, n_in) != INGOT_OK) { /* a context call: the message is on the context */
        fprintf(stderr, "ingot run: %s: %s\n", ingot_status_name(ingot_context_errcode(c)), ingot_context_errmsg(c));
        goto out;
    }
    if (show_memory) {
        ingot_memory_info mi;
        if (ingot_context_memory_info(c, &mi) != INGOT_OK)
            fprintf(stderr, "ingot run: memory info: %s\n", ingot_context_errmsg(c));
        else
            printf("memory: arena %zu bytes (lower bound %zu, ratio %.4f; no reuse %zu; strategy %s), largest "
                   "scratch %zu, weight copies %zu, input staging %zu\n",
                   mi.arena_bytes, mi.lower_bound_bytes,
                   mi.lower_bound_bytes ? (double)mi.arena_bytes / (double)mi.lower_bound_bytes : 1.0,
                   mi.no_reuse_bytes, mi.strategy, mi.workspace_bytes, mi.weights_bytes, mi.io_bytes);
    }
    if (out_dir && mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "ingot run: cannot create '%s': %s\n", out_dir, strerror(errno));
        goto out;
    }
    int64_t n_out = ingot_model_output_count(m);
    /* write to temporary names first, then rename: a failure leaves no partial set of outputs */
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t i = 0; i < n_out; i++) {
            ingot_tensor t;
            if (ingot_context_get_output(c, i, &t) != INGOT_OK) {
                fprintf(stderr, "ingot run: output %" PRId64 ": %s\n", i, ingot_context_errmsg(c));
                goto out;
            }
            if (pass == 0) {
                double s, a;
                checksum(&t, &s, &a);
                printf("%-32s %-8s [", t.name, ingot_dtype_name(t.dtype));
                for (int32_t k = 0; k < t.rank; k++) printf("%s%" PRId64, k ? "," : "", t.dims[k]);
                printf("]  sum %.9g  abs-sum %.9g\n", s, a);
            }
            if (!out_dir) continue;
            char fn[256], full[4096], tmp[4200];
            file_name(t.name, fn, sizeof fn);
            snprintf(full, sizeof full, "%s/%s.npy", out_dir, fn);
            snprintf(tmp, sizeof tmp, "%s.tmp", full);
            if (pass == 0 && ingot_tensor_save_npy(rt, tmp, &t) != INGOT_OK) {
                fprintf(stderr, "ingot run: %s\n", ingot_runtime_errmsg(rt));
                for (int64_t j = 0; j <= i; j++) {
                    ingot_tensor u;
                    ingot_context_get_output(c, j, &u);
                    file_name(u.name, fn, sizeof fn);
                    snprintf(full, sizeof full, "%s/%s.npy.tmp", out_dir, fn);
                    remove(full);
                }
                goto out;
            }
            if (pass == 1 && rename(tmp, full) != 0) {
                fprintf(stderr, "ingot run: cannot write '%s': %s\n", full, strerror(errno));
                goto out;
            }
        }
    }
    rc = 0;
out:
    for (int64_t i = 0; in && i < n_in; i++) {
        if (from_file[i])
            ingot_tensor_free(&in[i]);
        else
            free(in[i].data);
    }
    free(in);
    free(from_file);
    free(file_args);
    ingot_context_destroy(c);
    ingot_engine_destroy(e);
    ingot_model_destroy(m);
    ingot_runtime_destroy(rt);
    return rc;
}
