/*
 * cmd_run.c -- `ingot run`: one inference, on the CPU backend or the CUDA backend (--device). Inputs
 * come from files (.npy or ONNX TensorProto .pb); seeded random data only when asked for
 * (--random-inputs or --seed), so a forgotten --input is an error, not a silent run on noise. Each
 * output is summarised by shape and a checksum that covers every dtype, compared with reference files
 * (--compare DIR) and written as .npy only after the whole run succeeded (no partial output).
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
#include <unistd.h>

/* --compare tolerances when --rtol / --atol are not given: |got - ref| <= atol + rtol * |ref| */
#define RTOL_F32  1e-4
#define ATOL_F32  1e-5
#define RTOL_F16  1e-3
#define ATOL_F16  1e-3
#define RTOL_BF16 1e-2
#define ATOL_BF16 1e-2

static void run_usage(FILE *f)
{
    fprintf(f, "usage: ingot run MODEL.onnx [--input NAME=FILE ...] [--random-inputs] [--seed S] [--device cpu|cuda]\n"
               "                 [--batch N] [--shapes NAME:DIMS[,...]] [--output-dir DIR] [--compare DIR]\n"
               "                 [--rtol R] [--atol A] [--threads N] [--debug-memory] [--no-memory-reuse]\n"
               "                 [--memory] [--no-optimize] [--disable-pass NAME[,NAME]]\n"
               "  --input NAME=FILE  input NAME from a .npy or TensorProto .pb file; every input needs one,\n"
               "                     unless --random-inputs or --seed is given\n"
               "  --random-inputs    fill the inputs not given with seeded random data (floats in [-1, 1),\n"
               "                     integers in [0, 10)); says on stderr which\n"
               "  --seed S           seed of the random inputs (default 0; implies --random-inputs)\n"
               "  --device D         cpu (default) or cuda\n"
               "  --batch N          shape of random inputs: bind each symbolic leading dim to N (default 1)\n"
               "  --shapes N:DIMS    shape of random inputs, whole, e.g. --shapes input_ids:4x128 (repeatable);\n"
               "                     a symbolic dim that --batch does not cover must be given here\n"
               "  --output-dir DIR   write each output as DIR/<name>.npy\n"
               "  --compare DIR      compare each output with DIR/<name>.npy, DIR/<name>.pb or DIR/output_K.pb\n"
               "                     (ONNX test data): max abs/rel error and cosine; exit 1 beyond tolerance\n"
               "  --rtol R, --atol A pass when |got - ref| <= atol + rtol * |ref| for every element (defaults:\n"
               "                     float32/64 rtol 1e-4 atol 1e-5, float16 1e-3/1e-3, bfloat16 1e-2/1e-2,\n"
               "                     integers and bool exact); given, they apply to every dtype\n"
               "  --threads N        CPU threads (default: all cores)\n"
               "  --debug-memory     guard bytes after every tensor, checked after each step; dead bytes\n"
               "                     poisoned (catches a kernel writing out of bounds where it happens; CPU)\n"
               "  --no-memory-reuse  every tensor its own bytes (a reference for the planned arena; CPU)\n"
               "  --memory           print where the context memory goes (CPU)\n" IG_CLI_OPT_USAGE);
}

/* splitmix64: a small, well-mixed generator so random inputs are the same on every machine */
static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Fill t (name, dtype and shape set) with seeded random data. */
static int random_fill(ingot_tensor *t, uint64_t *seed)
{
    size_t es = ingot_dtype_size(t->dtype);
    size_t numel = es ? t->bytes / es : 0;
    t->data = malloc(t->bytes ? t->bytes : 1);
    if (!t->data) return 0;
    for (size_t i = 0; i < numel; i++) {
        uint64_t r = next_rand(seed);
        double u = (double)(r >> 11) / 9007199254740992.0; /* [0,1) */
        unsigned char *p = (unsigned char *)t->data + i * es;
        switch (t->dtype) {
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
            uint16_t h = t->dtype == INGOT_DTYPE_BFLOAT16
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

static double half_to_double(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp((double)man, -24); /* zero and subnormals */
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexp((double)(man | 0x400), exp - 25);
    return sign ? -v : v;
}

/* Element i of t as a double, for every dtype a tensor can have (0 for those without numbers). */
static double elem(const ingot_tensor *t, size_t i)
{
    const unsigned char *p = (const unsigned char *)t->data + i * ingot_dtype_size(t->dtype);
    switch (t->dtype) {
    case INGOT_DTYPE_FLOAT: {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    case INGOT_DTYPE_DOUBLE: {
        double d;
        memcpy(&d, p, 8);
        return d;
    }
    case INGOT_DTYPE_FLOAT16: {
        uint16_t h;
        memcpy(&h, p, 2);
        return half_to_double(h);
    }
    case INGOT_DTYPE_BFLOAT16: {
        uint16_t h;
        memcpy(&h, p, 2);
        uint32_t x = (uint32_t)h << 16;
        float f;
        memcpy(&f, &x, 4);
        return f;
    }
    case INGOT_DTYPE_BOOL:
    case INGOT_DTYPE_UINT8: return *p;
    case INGOT_DTYPE_INT8: return (int8_t)*p;
    case INGOT_DTYPE_INT16: {
        int16_t x;
        memcpy(&x, p, 2);
        return x;
    }
    case INGOT_DTYPE_UINT16: {
        uint16_t x;
        memcpy(&x, p, 2);
        return x;
    }
    case INGOT_DTYPE_INT32: {
        int32_t x;
        memcpy(&x, p, 4);
        return x;
    }
    case INGOT_DTYPE_UINT32: {
        uint32_t x;
        memcpy(&x, p, 4);
        return x;
    }
    case INGOT_DTYPE_INT64: {
        int64_t x;
        memcpy(&x, p, 8);
        return (double)x;
    }
    case INGOT_DTYPE_UINT64: {
        uint64_t x;
        memcpy(&x, p, 8);
        return (double)x;
    }
    default: return 0;
    }
}

static size_t numel(const ingot_tensor *t)
{
    size_t es = ingot_dtype_size(t->dtype);
    return es ? t->bytes / es : 0;
}

static void checksum(const ingot_tensor *t, double *sum, double *abs_sum)
{
    *sum = *abs_sum = 0;
    for (size_t i = 0, n = numel(t); i < n; i++) {
        double v = elem(t, i);
        *sum += v;
        *abs_sum += fabs(v);
    }
}

static int is_float(ingot_dtype t)
{
    return t == INGOT_DTYPE_FLOAT || t == INGOT_DTYPE_DOUBLE || t == INGOT_DTYPE_FLOAT16 || t == INGOT_DTYPE_BFLOAT16;
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

static void shape_str(const ingot_tensor *t, char *buf, size_t n)
{
    size_t off = (size_t)snprintf(buf, n, "[");
    for (int32_t k = 0; k < t->rank && off < n; k++)
        off += (size_t)snprintf(buf + off, n - off, "%s%" PRId64, k ? "," : "", t->dims[k]);
    if (off < n) snprintf(buf + off, n - off, "]");
}

typedef struct run_opts {
    const char *path, *out_dir, *compare_dir;
    int64_t seed, threads;
    double rtol, atol; /* < 0: per-dtype defaults */
    int random, debug_memory, no_reuse, show_memory, cuda;
    int given_threads;
    ig_cli_opt opt;
} run_opts;

/* Compare output `got` (index i) with its reference in o->compare_dir; prints one line. 1 when within
 * tolerance, 0 when not (or no reference could be read). */
static int compare_output(ingot_runtime *rt, const run_opts *o, int64_t i, const ingot_tensor *got)
{
    char fn[256], path[4400];
    file_name(got->name, fn, sizeof fn);
    const char *tried[3] = {"%s/%s.npy", "%s/%s.pb", NULL};
    struct stat sb;
    int found = 0;
    for (int k = 0; k < 2 && !found; k++) {
        snprintf(path, sizeof path, tried[k], o->compare_dir, fn);
        found = stat(path, &sb) == 0;
    }
    if (!found) {
        snprintf(path, sizeof path, "%s/output_%" PRId64 ".pb", o->compare_dir, i);
        found = stat(path, &sb) == 0;
    }
    if (!found) {
        printf("  compare: FAIL: no reference in %s (looked for %s.npy, %s.pb, output_%" PRId64 ".pb)\n",
               o->compare_dir, fn, fn, i);
        return 0;
    }
    ingot_tensor ref;
    if (ingot_tensor_load_file(rt, path, &ref) != INGOT_OK) {
        printf("  compare: FAIL: %s\n", ingot_runtime_errmsg(rt));
        return 0;
    }
    int ok = 0;
    char gs[256], rs[256];
    shape_str(got, gs, sizeof gs);
    shape_str(&ref, rs, sizeof rs);
    int same_shape = got->rank == ref.rank;
    for (int32_t k = 0; same_shape && k < got->rank; k++) same_shape = got->dims[k] == ref.dims[k];
    if (got->dtype != ref.dtype) {
        printf("  vs %s: FAIL: dtype %s, the reference is %s\n", path, ingot_dtype_name(got->dtype),
               ingot_dtype_name(ref.dtype));
        goto out;
    }
    if (!same_shape) {
        printf("  vs %s: FAIL: shape %s, the reference is %s\n", path, gs, rs);
        goto out;
    }
    double rtol = o->rtol, atol = o->atol;
    if (rtol < 0)
        rtol = got->dtype == INGOT_DTYPE_FLOAT16    ? RTOL_F16
               : got->dtype == INGOT_DTYPE_BFLOAT16 ? RTOL_BF16
               : is_float(got->dtype)               ? RTOL_F32
                                                    : 0;
    if (atol < 0)
        atol = got->dtype == INGOT_DTYPE_FLOAT16    ? ATOL_F16
               : got->dtype == INGOT_DTYPE_BFLOAT16 ? ATOL_BF16
               : is_float(got->dtype)               ? ATOL_F32
                                                    : 0;
    double max_abs = 0, max_rel = 0, dot = 0, ng = 0, nr = 0, worst_excess = -1;
    size_t n = numel(got), n_bad = 0, worst = 0, n_nonfinite = 0;
    for (size_t k = 0; k < n; k++) {
        double a = elem(got, k), b = elem(&ref, k);
        double err;
        n_nonfinite += !isfinite(a) || !isfinite(b);
        if (isnan(a) || isnan(b))
            err = isnan(a) && isnan(b) ? 0 : INFINITY; /* NaN matches NaN only */
        else if (isinf(a) || isinf(b))
            err = a == b ? 0 : INFINITY;
        else
            err = fabs(a - b);
        if (err > max_abs) max_abs = err;
        if (!isnan(b) && fabs(b) > 0 && err / fabs(b) > max_rel) max_rel = err / fabs(b);
        double excess = err - (atol + rtol * (isfinite(b) ? fabs(b) : 0));
        if (excess > 0) {
            n_bad++;
            if (excess > worst_excess) {
                worst_excess = excess;
                worst = k;
            }
        }
        if (isfinite(a) && isfinite(b)) {
            dot += a * b;
            ng += a * a;
            nr += b * b;
        }
    }
    double cosine = ng == 0 && nr == 0 ? 1.0 : ng == 0 || nr == 0 ? 0.0 : dot / (sqrt(ng) * sqrt(nr));
    ok = n_bad == 0;
    printf("  vs %s: max abs err %.3g, max rel err %.3g, cosine %.9f", path, max_abs, max_rel, cosine);
    if (n_nonfinite) /* the figures cover the finite pairs; say how many are not */
        printf(" (%zu of %zu element pairs NaN or infinite, not in the cosine)", n_nonfinite, n);
    printf(": %s", ok ? "ok" : "FAIL");
    if (!ok)
        printf(" (%zu of %zu elements beyond atol %g + rtol %g * |ref|; worst at flat index %zu: got %.9g, ref %.9g)",
               n_bad, n, atol, rtol, worst, elem(got, worst), elem(&ref, worst));
    printf("\n");
out:
    ingot_tensor_free(&ref);
    return ok;
}

static int parse_tol(const char *opt, const char *s, double *out)
{
    char *end = NULL;
    double v = s ? strtod(s, &end) : -1;
    if (!s || !*s || *end || !(v >= 0) || !isfinite(v)) {
        fprintf(stderr, "ingot run: %s expects a number >= 0, got '%s'\n", opt, s ? s : "");
        return 0;
    }
    *out = v;
    return 1;
}

static int parse_args(int argc, char **argv, run_opts *o, ig_cli_target *t, char **file_args, int *n_files)
{
    for (int i = 1; i < argc; i++) {
        int r = ig__cli_opt_arg(argc, argv, &i, &o->opt);
        if (r == 0) r = ig__cli_shapes_arg(t->cmd, argc, argv, &i, &t->shapes);
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(a, "--input") && has_value)
            file_args[(*n_files)++] = argv[++i];
        else if (!strcmp(a, "--random-inputs"))
            o->random = 1;
        else if (!strcmp(a, "--debug-memory"))
            o->debug_memory = 1;
        else if (!strcmp(a, "--no-memory-reuse"))
            o->no_reuse = 1;
        else if (!strcmp(a, "--memory"))
            o->show_memory = 1;
        else if (!strcmp(a, "--seed") && has_value) {
            if (!ig__cli_parse_i64("--seed", argv[++i], 0, &o->seed)) return 2;
            o->random = 1;
        } else if (!strcmp(a, "--threads") && has_value) {
            if (!ig__cli_parse_i64("--threads", argv[++i], 1, &o->threads)) return 2;
            if (o->threads > 1024) { /* the library's range; an int cast would wrap larger values */
                fprintf(stderr, "ingot run: --threads expects 1 to 1024, got %" PRId64 "\n", o->threads);
                return 2;
            }
            o->given_threads = 1;
        } else if (!strcmp(a, "--device") && has_value) {
            const char *d = argv[++i];
            if (strcmp(d, "cpu") != 0 && strcmp(d, "cuda") != 0) {
                fprintf(stderr, "ingot run: --device expects cpu or cuda, got '%s'\n", d);
                return 2;
            }
            o->cuda = !strcmp(d, "cuda");
        } else if (!strcmp(a, "--rtol") && has_value) {
            if (!parse_tol("--rtol", argv[++i], &o->rtol)) return 2;
        } else if (!strcmp(a, "--atol") && has_value) {
            if (!parse_tol("--atol", argv[++i], &o->atol)) return 2;
        } else if (!strcmp(a, "--output-dir") && has_value)
            o->out_dir = argv[++i];
        else if (!strcmp(a, "--compare") && has_value)
            o->compare_dir = argv[++i];
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            run_usage(stdout);
            return 1;
        } else if (a[0] == '-' || o->path) {
            fprintf(stderr, "ingot run: unexpected argument '%s'\n", a);
            run_usage(stderr);
            return 2;
        } else
            o->path = a;
    }
    if (!o->path) {
        run_usage(stderr);
        return 2;
    }
    if ((o->rtol >= 0 || o->atol >= 0) && !o->compare_dir)
        fprintf(stderr, "ingot run: warning: --rtol/--atol only matter with --compare\n");
    return 0;
}

/* The options the CUDA backend does not take: each one given gets a warning. */
static void warn_cuda_ignored(const run_opts *o)
{
    if (o->given_threads) fprintf(stderr, "ingot run: warning: --threads ignored: it sets CPU threads\n");
    if (o->debug_memory) fprintf(stderr, "ingot run: warning: --debug-memory ignored: CPU contexts only\n");
    if (o->no_reuse) fprintf(stderr, "ingot run: warning: --no-memory-reuse ignored: CPU contexts only\n");
    if (o->show_memory)
        fprintf(stderr, "ingot run: warning: --memory ignored: CPU contexts only (ingot bench shows the CUDA "
                        "context's memory)\n");
}

/* An output's file name and index: sorted by name, then index, duplicates end up next to each other. */
typedef struct out_file {
    char name[256];
    int64_t i;
} out_file;

static int cmp_out_file(const void *a, const void *b)
{
    const out_file *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* Every output's file name, checked before anything is written: two outputs that would land in one
 * file with different names (names that differ only in characters file_name replaces) fail the run
 * with nothing written; a graph output listed twice is one tensor, written once (skip[i] marks the
 * later listings). Sorted, so many outputs cost n log n. */
static int check_file_names(ingot_context *c, int64_t n_out, char *skip)
{
    out_file *f = calloc((size_t)n_out + 1, sizeof *f);
    if (!f) {
        fprintf(stderr, "ingot run: out of memory\n");
        return 0;
    }
    int ok = 1;
    for (int64_t i = 0; ok && i < n_out; i++) {
        ingot_tensor t;
        if (ingot_context_get_output(c, i, &t) != INGOT_OK) {
            fprintf(stderr, "ingot run: output %" PRId64 ": %s\n", i, ingot_context_errmsg(c));
            ok = 0;
        }
        file_name(t.name, f[i].name, sizeof f[i].name);
        f[i].i = i;
    }
    if (ok) qsort(f, (size_t)n_out, sizeof *f, cmp_out_file);
    for (int64_t k = 1; ok && k < n_out; k++) {
        if (strcmp(f[k - 1].name, f[k].name) != 0) continue;
        ingot_tensor ta, tb;
        ingot_context_get_output(c, f[k - 1].i, &ta);
        ingot_context_get_output(c, f[k].i, &tb);
        if (!strcmp(ta.name, tb.name)) {
            skip[f[k].i] = 1; /* the same tensor again: one file */
            continue;
        }
        fprintf(stderr,
                "ingot run: outputs %" PRId64 " '%s' and %" PRId64 " '%s' would both be written to %s.npy; nothing "
                "was written\n",
                f[k - 1].i, ta.name, f[k].i, tb.name, f[k].name);
        ok = 0;
    }
    free(f);
    return ok;
}

/* The files themselves: temporary names first, then renamed (skip[i]: output i is written already). */
static int write_files(ingot_runtime *rt, ingot_context *c, const run_opts *o, int64_t n_out, const char *skip)
{
    if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "ingot run: cannot create '%s': %s\n", o->out_dir, strerror(errno));
        return 0;
    }
    char fn[256], full[4096], tmp[4200];
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t i = 0; i < n_out; i++) {
            ingot_tensor t;
            if (skip[i]) continue;
            if (ingot_context_get_output(c, i, &t) != INGOT_OK) {
                fprintf(stderr, "ingot run: output %" PRId64 ": %s\n", i, ingot_context_errmsg(c));
                return 0;
            }
            file_name(t.name, fn, sizeof fn);
            snprintf(full, sizeof full, "%s/%s.npy", o->out_dir, fn);
            snprintf(tmp, sizeof tmp, "%s.tmp", full);
            if (pass == 0 && ingot_tensor_save_npy(rt, tmp, &t) != INGOT_OK) {
                fprintf(stderr, "ingot run: %s\n", ingot_runtime_errmsg(rt));
                for (int64_t j = 0; j <= i; j++) {
                    ingot_tensor u;
                    ingot_context_get_output(c, j, &u);
                    file_name(u.name, fn, sizeof fn);
                    snprintf(full, sizeof full, "%s/%s.npy.tmp", o->out_dir, fn);
                    remove(full);
                }
                return 0;
            }
            if (pass == 1 && rename(tmp, full) != 0) {
                fprintf(stderr, "ingot run: cannot write '%s': %s\n", full, strerror(errno));
                return 0;
            }
        }
    }
    return 1;
}

/* Write the outputs to o->out_dir: every file name checked first, then temporary names, then rename,
 * so a failure leaves no partial set. */
static int write_outputs(ingot_runtime *rt, ingot_context *c, const run_opts *o, int64_t n_out)
{
    char *skip = calloc((size_t)n_out + 1, 1);
    if (!skip || !check_file_names(c, n_out, skip)) {
        if (!skip) fprintf(stderr, "ingot run: out of memory\n");
        free(skip);
        return 0;
    }
    int ok = write_files(rt, c, o, n_out, skip);
    free(skip);
    return ok;
}

int ig__cmd_run(int argc, char **argv)
{
    run_opts o;
    memset(&o, 0, sizeof o);
    o.rtol = o.atol = -1;
    ig__cli_opt_init(&o.opt);
    ig_cli_target t;
    ig__cli_target_init(&t, "ingot run");
    int n_files = 0;
    char **file_args = calloc((size_t)argc + 1, sizeof(char *));
    if (!file_args) return 1;
    int r = parse_args(argc, argv, &o, &t, file_args, &n_files);
    if (r) {
        free(file_args);
        return r == 1 ? 0 : r;
    }
    int rc = 1;
    ingot_context *c = NULL;
    ingot_tensor *in = NULL;
    char *from_file = NULL;
    int64_t n_in = 0;
    if (!ig__cli_open(&t, o.path)) goto out;
    n_in = ig__cli_input_count(&t);
    in = calloc((size_t)n_in + 1, sizeof *in);
    from_file = calloc((size_t)n_in + 1, 1);
    if (!in || !from_file) goto out;

    /* inputs from files; every --input must name an input */
    for (int f = 0; f < n_files; f++) {
        const char *eq = strchr(file_args[f], '=');
        int known = 0;
        for (int64_t i = 0; eq && i < n_in; i++) {
            ingot_tensor_info ti;
            ig__cli_input_info(&t, i, &ti);
            known |= (size_t)(eq - file_args[f]) == strlen(ti.name) &&
                     !strncmp(file_args[f], ti.name, (size_t)(eq - file_args[f]));
        }
        if (!known) {
            fprintf(stderr, "ingot run: --input '%s' does not name a model input (NAME=FILE)\n", file_args[f]);
            rc = 2;
            goto out;
        }
    }
    int n_missing = 0;
    for (int64_t i = 0; i < n_in; i++) {
        ingot_tensor_info ti;
        ig__cli_input_info(&t, i, &ti);
        const char *file = NULL;
        size_t len = strlen(ti.name);
        for (int f = 0; f < n_files; f++)
            if (!strncmp(file_args[f], ti.name, len) && file_args[f][len] == '=') file = file_args[f] + len + 1;
        if (file) {
            if (ingot_tensor_load_file(t.rt, file, &in[i]) != INGOT_OK) {
                fprintf(stderr, "ingot run: input '%s': %s\n", ti.name, ingot_runtime_errmsg(t.rt));
                goto out;
            }
            in[i].name = ti.name;
            from_file[i] = 1;
        } else if (!o.random) {
            char s[512];
            ig__cli_format_shape(&ti, s, sizeof s);
            fprintf(stderr,
                    "ingot run: input '%s' (%s %s) is not given: use --input %s=FILE (.npy or TensorProto .pb), or "
                    "--random-inputs (or --seed S) for seeded random data\n",
                    ti.name, ingot_dtype_name(ti.dtype), s, ti.name);
            n_missing++;
        }
    }
    if (n_missing) {
        rc = 2;
        goto out;
    }

    /* shapes: the files', then --shapes / --batch (default 1) for the random ones; all concrete */
    {
        ingot_tensor *given = calloc((size_t)n_in + 1, sizeof *given);
        int64_t n_given = 0;
        if (!given) goto out;
        for (int64_t i = 0; i < n_in; i++)
            if (from_file[i]) given[n_given++] = in[i];
        int ok = ig__cli_bind(&t, IG_CLI_BIND_DEFAULT_1 | IG_CLI_BIND_CONCRETE, given, n_given);
        free(given);
        if (!ok) goto out;
    }
    uint64_t rng = (uint64_t)o.seed;
    char listed[2048];
    size_t off = 0;
    listed[0] = '\0';
    for (int64_t i = 0; i < n_in; i++) {
        if (from_file[i]) continue;
        ingot_tensor_info ti;
        ig__cli_input_info(&t, i, &ti);
        if (!ig__cli_input_tensor(&t, i, &in[i])) {
            char s[512];
            ig__cli_format_shape(&ti, s, sizeof s);
            fprintf(stderr, "ingot run: cannot make random input '%s' of shape %s: its byte size overflows\n", ti.name,
                    s);
            goto out;
        }
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0 && in[i].bytes / (size_t)page > (size_t)pages) {
            fprintf(stderr, "ingot run: random input '%s' would be %zu bytes, more than the machine's memory (%zu)\n",
                    ti.name, in[i].bytes, (size_t)pages * (size_t)page);
            in[i].data = NULL;
            goto out;
        }
        if (!random_fill(&in[i], &rng)) {
            fprintf(stderr, "ingot run: out of memory making random input '%s' (%zu bytes)\n", ti.name, in[i].bytes);
            goto out;
        }
        char s[256];
        shape_str(&in[i], s, sizeof s);
        if (off < sizeof listed)
            off += (size_t)snprintf(listed + off, sizeof listed - off, "%s%s %s %s", off ? ", " : "", in[i].name,
                                    ingot_dtype_name(in[i].dtype), s);
    }
    if (listed[0]) fprintf(stderr, "ingot run: random inputs (seed %" PRId64 "): %s\n", o.seed, listed);

    ingot_build_options bo = ingot_build_options_default();
    bo.backend = o.cuda ? INGOT_BACKEND_CUDA : INGOT_BACKEND_CPU;
    bo.n_threads = (int)o.threads;
    ig__cli_opt_apply(&o.opt, &bo);
    ingot_context_options co = ingot_context_options_default();
    if (o.cuda)
        warn_cuda_ignored(&o);
    else {
        co.debug_canaries = o.debug_memory;
        co.memory_reuse = !o.no_reuse;
    }
    if (!ig__cli_build(&t, &bo)) {
        if (ingot_runtime_errcode(t.rt) == INGOT_ERR_NO_DEVICE)
            fprintf(stderr, "ingot run: --device cpu runs on the CPU\n");
        goto out;
    }
    if (ingot_context_create(t.engine, &co, &c) != INGOT_OK) {
        ig__cli_print_rt_error(&t, "context");
        goto out;
    }
    if (ingot_context_run(c, in, n_in) != INGOT_OK) { /* a context call: the message is on the context */
        fprintf(stderr, "ingot run: %s: %s\n", ingot_status_name(ingot_context_errcode(c)), ingot_context_errmsg(c));
        goto out;
    }
    if (o.show_memory && !o.cuda) {
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
    int64_t n_out = ig__cli_output_count(&t), n_differ = 0;
    for (int64_t i = 0; i < n_out; i++) {
        ingot_tensor ot;
        if (ingot_context_get_output(c, i, &ot) != INGOT_OK) {
            fprintf(stderr, "ingot run: output %" PRId64 ": %s\n", i, ingot_context_errmsg(c));
            goto out;
        }
        double s, a;
        char sh[256];
        checksum(&ot, &s, &a);
        shape_str(&ot, sh, sizeof sh);
        printf("%-32s %-8s %s  sum %.9g  abs-sum %.9g\n", ot.name, ingot_dtype_name(ot.dtype), sh, s, a);
        if (o.compare_dir && !compare_output(t.rt, &o, i, &ot)) n_differ++;
    }
    fflush(stdout);
    if (o.out_dir && !write_outputs(t.rt, c, &o, n_out)) goto out;
    if (n_differ) {
        fprintf(stderr, "ingot run: %" PRId64 " of %" PRId64 " outputs differ from the references in %s\n", n_differ,
                n_out, o.compare_dir);
        goto out;
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
    ig__cli_close(&t);
    return rc;
}
