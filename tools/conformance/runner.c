/*
 * runner.c -- ingot-conformance: run ONNX backend tests (model.onnx + test_data_set_N/{input,output}_J.pb)
 * through ingot's CPU backend and compare every output with the expected one.
 *
 *   ingot-conformance DIR [--manifest FILE] [--filter SUBSTR] [--verbose] [-j N] [--threads N]
 *                         [--timeout S] [--min-pass N] [--no-coverage] [--op-counts] [--no-fork]
 *
 * DIR is one test folder, a folder of tests, or a folder of suites of tests (what gen_node_tests.py
 * writes: DIR/node/test_add, DIR/pytorch-converted/test_Conv2d, ...). Only the public API is used: the
 * runner is also a worked example of loading, building, running and reading outputs.
 *
 * Each test runs in a child process (unless --no-fork), so a crash or a hang in one kernel costs one
 * test, not the run: the child reports through a pipe and gets SIGALRM after --timeout seconds.
 *
 * Manifest lines (tests/conformance/manifest.txt), '#' starts a comment; NAME may be an fnmatch pattern:
 *     NAME  xfail  reason...          expected to fail; passing is a failure ("unexpected pass")
 *     NAME  skip   reason...          not run
 *     NAME  tol    RTOL ATOL reason   run with these float tolerances instead of the defaults
 *     NAME  shapes-...                 entries for tests/conformance/check_shapes.py (ignored here)
 *
 * Tolerances (a float element passes when |got - want| <= atol + rtol * |want|, NaN matches NaN, an
 * infinity must be the same infinity): float32/float64 use ONNX's backend-test values (rtol 1e-3,
 * atol 1e-7: onnx/backend/test/case/node/__init__.py); float16 2 ulp; bfloat16 2 ulp (rtol 2^-6, as
 * ONNX's runner). Integers and bools are exact. Dtype and shape must match exactly.
 *
 * Coverage: every ONNX op of src/ops/op_list.h must appear in at least one passing test of the 'node' suite
 * (the ingot-domain ops the optimizer makes are exempt: see onnx_op below)
 * (checked when the run covers the node suite without --filter). Output ends with exactly one line
 * "N passed, M failed, K skipped" (K counts skips and expected failures); the exit status is non-zero
 * when M > 0, an op is uncovered, or fewer than --min-pass tests passed.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include "ingot.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The supported op set, straight from the one list (no second copy to drift). */
static const char *const op_names[] = {
#define INGOT_OP(onnx_name, cname, family) #onnx_name,
#include "../../src/ops/op_list.h"
#undef INGOT_OP
};
#define N_OPS ((int)(sizeof op_names / sizeof op_names[0]))
static const char *const op_families[] = {
#define INGOT_OP(onnx_name, cname, family) #family,
#include "../../src/ops/op_list.h"
#undef INGOT_OP
};

/* The ops of the ingot domain (family "fused": Pointwise, FusedConv, Attention, ... made by the
 * optimizer) are not ONNX ops and have no node tests; their unit tests (tests/unit/test_ops_fused.c)
 * stand in. They are exempt from the coverage rule, and a default-domain op of the same name (ONNX's
 * Attention, opset 23) counts nothing for them. */
static bool onnx_op(int i) { return strcmp(op_families[i], "fused") != 0; }
/* Ops the importer replaces when the model loads (an If by the branch its constant condition takes): a
 * loaded model never lists them, so no node test can count for them; tests/models (if_*) compare such
 * models with ONNX Runtime and the malformed corpus checks the refusals. */
static bool replaced_at_load(int i) { return strcmp(op_names[i], "If") == 0; }

#define MSG_MAX   4096
#define PATH_MAX_ 4096

/* ---- small utilities ------------------------------------------------------------------------------ */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "ingot-conformance: out of memory\n");
        exit(2);
    }
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Append printf output to a fixed buffer (truncating). */
static void bufcat(char *buf, size_t cap, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

/* dir + "/" + leaf into out; false (and an empty out) when it does not fit. */
static bool pjoin(char *out, size_t cap, const char *dir, const char *leaf)
{
    int n = snprintf(out, cap, "%s/%s", dir, leaf);
    if (n < 0 || (size_t)n >= cap) {
        out[0] = '\0';
        return false;
    }
    return true;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted names of dir's entries (no dot files). */
static char **list_dir(const char *dir, int *n_out)
{
    int n = 0, cap = 16;
    char **v = xmalloc(sizeof *v * cap);
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            if (n == cap) {
                cap *= 2;
                char **nv = realloc(v, sizeof *v * cap);
                if (!nv) exit(2);
                v = nv;
            }
            v[n++] = xstrdup(e->d_name);
        }
        closedir(d);
    }
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    *n_out = n;
    return v;
}

/* ---- tests ------------------------------------------------------------------------------------------ */

typedef struct test {
    char *name;  /* folder name: test_add */
    char *suite; /* parent folder name when DIR holds suites ("node"), "" otherwise */
    char *path;
} test;

typedef struct tests {
    test *v;
    int n, cap;
} tests;

static void add_test(tests *t, const char *name, const char *suite, const char *path)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 256;
        test *nv = realloc(t->v, sizeof *nv * t->cap);
        if (!nv) exit(2);
        t->v = nv;
    }
    t->v[t->n].name = xstrdup(name);
    t->v[t->n].suite = xstrdup(suite);
    t->v[t->n].path = xstrdup(path);
    t->n++;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s && s[1] ? s + 1 : p;
}

/* DIR itself, DIR/<test>, or DIR/<suite>/<test>. */
static void find_tests(const char *dir, tests *out)
{
    char p[PATH_MAX_];
    pjoin(p, sizeof p, dir, "model.onnx");
    if (is_file(p)) {
        char tmp[PATH_MAX_];
        snprintf(tmp, sizeof tmp, "%s", dir);
        size_t l = strlen(tmp);
        while (l > 1 && tmp[l - 1] == '/') tmp[--l] = '\0';
        add_test(out, base_name(tmp), "", tmp);
        return;
    }
    int n;
    char **names = list_dir(dir, &n);
    for (int i = 0; i < n; i++) {
        char sub[PATH_MAX_];
        pjoin(sub, sizeof sub, dir, names[i]);
        pjoin(p, sizeof p, sub, "model.onnx");
        if (is_file(p)) {
            add_test(out, names[i], "", sub);
        } else if (is_dir(sub)) {
            int m;
            char **inner = list_dir(sub, &m);
            for (int j = 0; j < m; j++) {
                char t[PATH_MAX_];
                pjoin(t, sizeof t, sub, inner[j]);
                pjoin(p, sizeof p, t, "model.onnx");
                if (is_file(p)) add_test(out, inner[j], names[i], t);
                free(inner[j]);
            }
            free(inner);
        }
        free(names[i]);
    }
    free(names);
}

/* ---- manifest ------------------------------------------------------------------------------------- */

enum entry_kind { ENTRY_XFAIL, ENTRY_SKIP, ENTRY_TOL, ENTRY_PASS };

typedef struct entry {
    char *pattern;
    enum entry_kind kind;
    double rtol, atol;
    char *reason;
    int line;
    int matched;
} entry;

typedef struct manifest {
    entry *v;
    int n;
} manifest;

static int load_manifest(const char *path, manifest *m)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "ingot-conformance: cannot open manifest '%s': %s\n", path, strerror(errno));
        return -1;
    }
    char line[2048];
    int lineno = 0, cap = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *save = NULL;
        char *name = strtok_r(line, " \t\r\n", &save);
        if (!name) continue;
        char *kind = strtok_r(NULL, " \t\r\n", &save);
        entry e = {0};
        e.line = lineno;
        if (kind && strcmp(kind, "xfail") == 0)
            e.kind = ENTRY_XFAIL;
        else if (kind && strcmp(kind, "skip") == 0)
            e.kind = ENTRY_SKIP;
        else if (kind && strcmp(kind, "pass") == 0)
            e.kind = ENTRY_PASS;
        else if (kind && strncmp(kind, "shapes-", 7) == 0)
            continue; /* check_shapes.py's entries */
        else if (kind && strcmp(kind, "tol") == 0) {
            e.kind = ENTRY_TOL;
            char *r = strtok_r(NULL, " \t\r\n", &save), *a = strtok_r(NULL, " \t\r\n", &save);
            char *end1 = NULL, *end2 = NULL;
            if (r) e.rtol = strtod(r, &end1);
            if (a) e.atol = strtod(a, &end2);
            if (!r || !a || *end1 || *end2) {
                fprintf(stderr, "%s:%d: 'tol' needs RTOL ATOL\n", path, lineno);
                bad = 1;
                continue;
            }
        } else {
            fprintf(stderr, "%s:%d: expected 'xfail', 'skip', 'tol' or 'pass' after the name, got '%s'\n", path, lineno,
                    kind ? kind : "");
            bad = 1;
            continue;
        }
        char *rest = save ? save + strspn(save, " \t") : NULL;
        if (rest) rest[strcspn(rest, "\r\n")] = '\0';
        while (rest && *rest && (rest[strlen(rest) - 1] == ' ' || rest[strlen(rest) - 1] == '\t'))
            rest[strlen(rest) - 1] = '\0';
        if ((e.kind == ENTRY_XFAIL || e.kind == ENTRY_SKIP) && (!rest || !*rest)) {
            fprintf(stderr, "%s:%d: '%s %s' needs a reason\n", path, lineno, name, kind);
            bad = 1;
            continue;
        }
        e.pattern = xstrdup(name);
        e.reason = xstrdup(rest ? rest : "");
        if (m->n == cap) {
            cap = cap ? 2 * cap : 64;
            entry *nv = realloc(m->v, sizeof *nv * cap);
            if (!nv) exit(2);
            m->v = nv;
        }
        m->v[m->n++] = e;
    }
    fclose(f);
    return bad ? -1 : 0;
}

/* The first entry of `kind` (any kind when kind < 0) matching name. */
static entry *manifest_find(manifest *m, const char *name, int kind)
{
    for (int i = 0; i < m->n; i++)
        if ((kind < 0 || (int)m->v[i].kind == kind) && fnmatch(m->v[i].pattern, name, 0) == 0) return &m->v[i];
    return NULL;
}

/* ---- comparing ------------------------------------------------------------------------------------ */

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v;
    if (e == 0)
        v = ldexp(man, -24);
    else if (e == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexp(man | 0x400, e - 25);
    return (h & 0x8000) ? -v : v;
}

static double bf16_to_double(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static double elem_f(const ingot_tensor *t, int64_t i)
{
    const unsigned char *p = t->data;
    switch (t->dtype) {
    case INGOT_DTYPE_FLOAT: {
        float v;
        memcpy(&v, p + 4 * i, 4);
        return v;
    }
    case INGOT_DTYPE_DOUBLE: {
        double v;
        memcpy(&v, p + 8 * i, 8);
        return v;
    }
    case INGOT_DTYPE_FLOAT16: {
        uint16_t v;
        memcpy(&v, p + 2 * i, 2);
        return half_to_double(v);
    }
    case INGOT_DTYPE_BFLOAT16: {
        uint16_t v;
        memcpy(&v, p + 2 * i, 2);
        return bf16_to_double(v);
    }
    default: return NAN;
    }
}

/* Integers compared through their bit pattern widened to 64 bits (exact for every int dtype). */
static uint64_t elem_bits(const ingot_tensor *t, int64_t i)
{
    const unsigned char *p = t->data;
    switch (ingot_dtype_size(t->dtype)) {
    case 1: return t->dtype == INGOT_DTYPE_BOOL ? (p[i] != 0) : p[i];
    case 2: {
        uint16_t v;
        memcpy(&v, p + 2 * i, 2);
        return v;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, p + 4 * i, 4);
        return v;
    }
    default: {
        uint64_t v;
        memcpy(&v, p + 8 * i, 8);
        return v;
    }
    }
}

static bool is_float(ingot_dtype t)
{
    return t == INGOT_DTYPE_FLOAT || t == INGOT_DTYPE_DOUBLE || t == INGOT_DTYPE_FLOAT16 || t == INGOT_DTYPE_BFLOAT16;
}

static void default_tol(ingot_dtype t, double *rtol, double *atol)
{
    switch (t) {
    case INGOT_DTYPE_FLOAT16:
        *rtol = 1.0 / 512;
        *atol = 1e-6;
        break; /* 2 ulp */
    case INGOT_DTYPE_BFLOAT16:
        *rtol = 1.0 / 64;
        *atol = 1e-5;
        break; /* 2 ulp, as ONNX's runner */
    default:
        *rtol = 1e-3;
        *atol = 1e-7;
        break; /* ONNX backend tests */
    }
}

static void shape_str(const ingot_tensor *t, char *buf, size_t n)
{
    buf[0] = '\0';
    bufcat(buf, n, "[");
    for (int i = 0; i < t->rank; i++) bufcat(buf, n, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    bufcat(buf, n, "]");
}

static void index_str(const ingot_tensor *t, int64_t flat, char *buf, size_t n)
{
    int64_t idx[INGOT_MAX_RANK];
    for (int i = t->rank - 1; i >= 0; i--) {
        idx[i] = t->dims[i] ? flat % t->dims[i] : 0;
        flat = t->dims[i] ? flat / t->dims[i] : 0;
    }
    buf[0] = '\0';
    bufcat(buf, n, "[");
    for (int i = 0; i < t->rank; i++) bufcat(buf, n, "%s%lld", i ? "," : "", (long long)idx[i]);
    bufcat(buf, n, "]");
}

/* Compare got with want; on mismatch describe it in msg and return false. */
static bool compare(const ingot_tensor *got, const ingot_tensor *want, double rtol_over, double atol_over, char *msg,
                    size_t cap)
{
    char gs[256], ws[256];
    if (got->dtype != want->dtype) {
        bufcat(msg, cap, "dtype %s, expected %s", ingot_dtype_name(got->dtype), ingot_dtype_name(want->dtype));
        return false;
    }
    bool same_shape = got->rank == want->rank;
    for (int i = 0; same_shape && i < got->rank; i++) same_shape = got->dims[i] == want->dims[i];
    if (!same_shape) {
        shape_str(got, gs, sizeof gs);
        shape_str(want, ws, sizeof ws);
        bufcat(msg, cap, "shape %s, expected %s", gs, ws);
        return false;
    }
    size_t es = ingot_dtype_size(want->dtype);
    if (es == 0 || got->bytes != want->bytes) {
        bufcat(msg, cap, "%zu bytes, expected %zu", got->bytes, want->bytes);
        return false;
    }
    int64_t n = (int64_t)(want->bytes / es), n_bad = 0, first = -1, worst = -1;
    if (n > 0 && (!got->data || !want->data)) {
        bufcat(msg, cap, "output has no data");
        return false;
    }
    if (is_float(want->dtype)) {
        double rtol, atol;
        default_tol(want->dtype, &rtol, &atol);
        if (rtol_over >= 0) rtol = rtol_over;
        if (atol_over >= 0) atol = atol_over;
        double max_abs = 0, max_rel = 0, worst_excess = -1;
        for (int64_t i = 0; i < n; i++) {
            double a = elem_f(got, i), b = elem_f(want, i);
            bool ok;
            if (isnan(b) || isnan(a))
                ok = isnan(a) && isnan(b);
            else if (isinf(b) || isinf(a))
                ok = a == b;
            else {
                double d = fabs(a - b);
                if (d > max_abs) max_abs = d;
                if (b != 0 && d / fabs(b) > max_rel) max_rel = d / fabs(b);
                ok = d <= atol + rtol * fabs(b);
                if (!ok && d - (atol + rtol * fabs(b)) > worst_excess) {
                    worst_excess = d - (atol + rtol * fabs(b));
                    worst = i;
                }
            }
            if (!ok) {
                if (first < 0) first = i;
                if (worst < 0) worst = i;
                n_bad++;
            }
        }
        if (n_bad == 0) return true;
        index_str(want, first, gs, sizeof gs);
        index_str(want, worst, ws, sizeof ws);
        bufcat(msg, cap,
               "%lld of %lld elements differ (rtol %g, atol %g): max abs err %.4g, max rel err %.4g; first at %s "
               "(index %lld): got %.9g expected %.9g; worst at %s: got %.9g expected %.9g",
               (long long)n_bad, (long long)n, rtol, atol, max_abs, max_rel, gs, (long long)first, elem_f(got, first),
               elem_f(want, first), ws, elem_f(got, worst), elem_f(want, worst));
        return false;
    }
    bool is_signed = want->dtype == INGOT_DTYPE_INT8 || want->dtype == INGOT_DTYPE_INT16 ||
                     want->dtype == INGOT_DTYPE_INT32 || want->dtype == INGOT_DTYPE_INT64;
    for (int64_t i = 0; i < n; i++) {
        if (elem_bits(got, i) != elem_bits(want, i)) {
            if (first < 0) first = i;
            n_bad++;
        }
    }
    if (n_bad == 0) return true;
    index_str(want, first, gs, sizeof gs);
    uint64_t a = elem_bits(got, first), b = elem_bits(want, first);
    int sh = 64 - 8 * (int)es;
    if (is_signed)
        bufcat(msg, cap, "%lld of %lld elements differ (exact); first at %s (index %lld): got %lld expected %lld",
               (long long)n_bad, (long long)n, gs, (long long)first, (long long)((int64_t)(a << sh) >> sh),
               (long long)((int64_t)(b << sh) >> sh));
    else
        bufcat(msg, cap, "%lld of %lld elements differ (exact); first at %s (index %lld): got %llu expected %llu",
               (long long)n_bad, (long long)n, gs, (long long)first, (unsigned long long)a, (unsigned long long)b);
    return false;
}

/* ---- running one test ----------------------------------------------------------------------------- */

typedef struct options {
    const char *dir, *manifest, *filter;
    bool verbose, fork, coverage, op_counts;
    int jobs, threads, timeout_s, min_pass;
} options;

typedef struct result {
    bool pass;
    char msg[MSG_MAX];
    char ops[2048]; /* space-separated op types of the model, for coverage */
} result;

/* Load every tensor file PREFIX_J.pb (J = 0, 1, ...) of a data set; returns the count. */
static int load_set(ingot_runtime *rt, const char *ds, const char *prefix, ingot_tensor **out, char *msg, size_t cap)
{
    int n = 0;
    for (;; n++) {
        char p[PATH_MAX_];
        snprintf(p, sizeof p, "%s/%s_%d.pb", ds, prefix, n);
        if (!is_file(p)) break;
    }
    *out = calloc((size_t)n + 1, sizeof **out);
    if (!*out) exit(2);
    for (int j = 0; j < n; j++) {
        char p[PATH_MAX_];
        snprintf(p, sizeof p, "%s/%s_%d.pb", ds, prefix, j);
        if (ingot_tensor_load_file(rt, p, &(*out)[j]) != INGOT_OK) {
            bufcat(msg, cap, "loading %s_%d.pb: %s", prefix, j, ingot_runtime_errmsg(rt));
            for (int k = 0; k < j; k++) ingot_tensor_free(&(*out)[k]);
            free(*out);
            *out = NULL;
            return -1;
        }
    }
    return n;
}

static void free_set(ingot_tensor *v, int n)
{
    for (int i = 0; i < n; i++) ingot_tensor_free(&v[i]);
    free(v);
}

static void run_test(const test *t, const options *o, manifest *m, result *r)
{
    memset(r, 0, sizeof *r);
    ingot_runtime *rt = NULL;
    ingot_model *model = NULL;
    ingot_engine *eng = NULL;
    ingot_context *ctx = NULL;
    char p[PATH_MAX_];
    double rtol = -1, atol = -1;
    entry *tol = manifest_find(m, t->name, ENTRY_TOL);
    if (tol) {
        rtol = tol->rtol;
        atol = tol->atol;
    }

    if (ingot_runtime_create(&rt) != INGOT_OK) {
        bufcat(r->msg, sizeof r->msg, "ingot_runtime_create failed");
        return;
    }
    pjoin(p, sizeof p, t->path, "model.onnx");
    ingot_load_options lo = ingot_load_options_default();
    if (ingot_model_load(rt, p, &lo, &model) != INGOT_OK) {
        bufcat(r->msg, sizeof r->msg, "load: %s: %s", ingot_status_name(ingot_runtime_errcode(rt)),
               ingot_runtime_errmsg(rt));
        goto out;
    }
    for (int64_t i = 0; i < ingot_model_node_count(model); i++) {
        ingot_node_info ni;
        if (ingot_model_node_info(model, i, &ni) == INGOT_OK && ni.op_type && (!ni.domain || !ni.domain[0]))
            bufcat(r->ops, sizeof r->ops, " %s", ni.op_type);
    }
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    bo.n_threads = o->threads;
    if (ingot_engine_build(rt, model, &bo, &eng) != INGOT_OK) {
        bufcat(r->msg, sizeof r->msg, "build: %s: %s", ingot_status_name(ingot_runtime_errcode(rt)),
               ingot_runtime_errmsg(rt));
        goto out;
    }
    ingot_context_options co = ingot_context_options_default();
    if (ingot_context_create(eng, &co, &ctx) != INGOT_OK) {
        bufcat(r->msg, sizeof r->msg, "context: %s: %s", ingot_status_name(ingot_runtime_errcode(rt)),
               ingot_runtime_errmsg(rt));
        goto out;
    }

    int64_t n_in = ingot_model_input_count(model), n_out = ingot_model_output_count(model);
    int n_sets;
    char **sets = list_dir(t->path, &n_sets);
    int ran = 0;
    bool ok = true;
    for (int s = 0; s < n_sets && ok; s++) {
        if (strncmp(sets[s], "test_data_set_", 14) != 0) continue;
        char ds[PATH_MAX_];
        pjoin(ds, sizeof ds, t->path, sets[s]);
        ingot_tensor *ins = NULL, *want = NULL;
        int ni = load_set(rt, ds, "input", &ins, r->msg, sizeof r->msg);
        if (ni < 0) {
            ok = false;
            break;
        }
        int nw = load_set(rt, ds, "output", &want, r->msg, sizeof r->msg);
        if (nw < 0) {
            free_set(ins, ni);
            ok = false;
            break;
        }
        ran++;
        /* input_J names the graph input it is for; else it is the J-th graph input. */
        for (int j = 0; j < ni && ok; j++) {
            bool named = false;
            if (ins[j].name && ins[j].name[0]) {
                for (int64_t k = 0; k < n_in && !named; k++) {
                    ingot_tensor_info ii;
                    named = ingot_model_input_info(model, k, &ii) == INGOT_OK && strcmp(ii.name, ins[j].name) == 0;
                }
            }
            if (named) continue;
            ingot_tensor_info ii;
            if (j >= n_in || ingot_model_input_info(model, j, &ii) != INGOT_OK) {
                bufcat(r->msg, sizeof r->msg, "%s: input_%d.pb has no graph input (the model has %lld)", sets[s], j,
                       (long long)n_in);
                ok = false;
            } else {
                ins[j].name = ii.name; /* owned by the model, which outlives this use */
            }
        }
        if (ok && ingot_context_run(ctx, ins, ni) != INGOT_OK) {
            bufcat(r->msg, sizeof r->msg, "%s: run: %s: %s", sets[s], ingot_status_name(ingot_context_errcode(ctx)),
                   ingot_context_errmsg(ctx));
            ok = false;
        }
        if (ok && nw != n_out) {
            bufcat(r->msg, sizeof r->msg, "%s: the model has %lld outputs, the test data %d", sets[s], (long long)n_out,
                   nw);
            ok = false;
        }
        for (int j = 0; ok && j < nw; j++) {
            /* output_J names the graph output it is for; else it is the J-th. */
            int64_t k = j;
            if (want[j].name && want[j].name[0]) {
                for (int64_t q = 0; q < n_out; q++) {
                    ingot_tensor_info oi;
                    if (ingot_model_output_info(model, q, &oi) == INGOT_OK && strcmp(oi.name, want[j].name) == 0) {
                        k = q;
                        break;
                    }
                }
            }
            ingot_tensor got;
            if (ingot_context_get_output(ctx, k, &got) != INGOT_OK) {
                bufcat(r->msg, sizeof r->msg, "%s: output %lld: %s", sets[s], (long long)k, ingot_context_errmsg(ctx));
                ok = false;
                break;
            }
            char why[MSG_MAX / 2] = "";
            if (!compare(&got, &want[j], rtol, atol, why, sizeof why)) {
                bufcat(r->msg, sizeof r->msg, "%s: output '%s': %s", sets[s], got.name ? got.name : "?", why);
                ok = false;
            }
        }
        free_set(ins, ni);
        free_set(want, nw);
    }
    for (int s = 0; s < n_sets; s++) free(sets[s]);
    free(sets);
    if (ok && ran == 0) {
        bufcat(r->msg, sizeof r->msg, "no test_data_set_* folder");
        ok = false;
    }
    r->pass = ok;
out:
    ingot_context_destroy(ctx);
    ingot_engine_destroy(eng);
    ingot_model_destroy(model);
    ingot_runtime_destroy(rt);
}

/* ---- process pool ------------------------------------------------------------------------------- */

typedef struct slot {
    pid_t pid;
    int fd;
    int test;
    double start;
    result r;
    size_t got; /* bytes of r read so far */
} slot;

static void start_child(slot *s, int ti, const test *t, const options *o, manifest *m)
{
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(2);
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        close(fds[0]);
        if (o->timeout_s > 0) alarm((unsigned)o->timeout_s);
        result *r = xmalloc(sizeof *r);
        run_test(t, o, m, r);
        const char *p = (const char *)r;
        size_t left = sizeof *r;
        while (left) {
            ssize_t w = write(fds[1], p, left);
            if (w <= 0) _exit(3);
            p += w;
            left -= (size_t)w;
        }
        free(r);
        /* exit, not _exit: under LeakSanitizer the leak check runs now and turns a leak into a
         * non-zero status, which the parent reports against this test */
        exit(0);
    }
    close(fds[1]);
    memset(s, 0, sizeof *s);
    s->pid = pid;
    s->fd = fds[0];
    s->test = ti;
    s->start = now_s();
}

/* ---- main ------------------------------------------------------------------------------------------ */

static void usage(void)
{
    fprintf(stderr,
            "usage: ingot-conformance DIR [--manifest FILE] [--filter SUBSTR] [--verbose] [-j N]\n"
            "                         [--threads N] [--timeout S] [--min-pass N] [--no-coverage] [--op-counts]\n"
            "                         [--no-fork]\n"
            "  -j N         run N tests at once (each in its own process)\n"
            "  --threads N  CPU backend threads per test (default 1)\n"
            "  --timeout S  seconds before a test is killed (default 60)\n"
            "  --min-pass N fail the run when fewer than N tests pass\n"
            "  --op-counts  print the number of passing node tests of every op\n"
            "  --no-fork    run tests in this process (for a debugger; a crash ends the run)\n");
}

typedef struct counts {
    int passed, failed, skipped, xfailed;
    int *op_pass; /* [N_OPS] passing node tests per op */
} counts;

/* Record one finished test: manifest verdict, printing, counts and coverage. */
static void record(const test *t, const result *r, manifest *m, const options *o, counts *c, double secs)
{
    entry *xf = manifest_find(m, t->name, ENTRY_XFAIL);
    if (r->pass) {
        if (xf) {
            c->failed++;
            printf("FAIL %s: unexpected pass (manifest line %d says xfail: %s)\n", t->name, xf->line, xf->reason);
        } else {
            c->passed++;
            if (o->verbose) printf("PASS %s (%.2f s)\n", t->name, secs);
        }
        if (strcmp(t->suite, "node") == 0) {
            /* count each op of the passing node test */
            char ops[sizeof r->ops];
            memcpy(ops, r->ops, sizeof ops);
            char *save = NULL;
            for (char *op = strtok_r(ops, " ", &save); op; op = strtok_r(NULL, " ", &save))
                for (int i = 0; i < N_OPS; i++)
                    if (onnx_op(i) && strcmp(op, op_names[i]) == 0) c->op_pass[i]++;
        }
    } else if (xf) {
        c->xfailed++;
        if (o->verbose) printf("XFAIL %s: %s [%s]\n", t->name, xf->reason, r->msg);
    } else {
        c->failed++;
        printf("FAIL %s: %s\n", t->name, r->msg);
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    options o = {.fork = true, .coverage = true, .jobs = 1, .threads = 1, .timeout_s = 60};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (strcmp(a, "--manifest") == 0 && has_val)
            o.manifest = argv[++i];
        else if (strcmp(a, "--filter") == 0 && has_val)
            o.filter = argv[++i];
        else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0)
            o.verbose = true;
        else if (strcmp(a, "-j") == 0 && has_val)
            o.jobs = atoi(argv[++i]);
        else if (strncmp(a, "-j", 2) == 0 && a[2] >= '0' && a[2] <= '9')
            o.jobs = atoi(a + 2);
        else if (strcmp(a, "--threads") == 0 && has_val)
            o.threads = atoi(argv[++i]);
        else if (strcmp(a, "--timeout") == 0 && has_val)
            o.timeout_s = atoi(argv[++i]);
        else if (strcmp(a, "--min-pass") == 0 && has_val)
            o.min_pass = atoi(argv[++i]);
        else if (strcmp(a, "--no-coverage") == 0)
            o.coverage = false;
        else if (strcmp(a, "--op-counts") == 0)
            o.op_counts = true;
        else if (strcmp(a, "--no-fork") == 0)
            o.fork = false;
        else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage();
            return 0;
        } else if (a[0] != '-' && !o.dir)
            o.dir = a;
        else {
            usage();
            return 2;
        }
    }
    if (!o.dir) {
        usage();
        return 2;
    }
    if (o.jobs < 1) o.jobs = 1;
    if (!o.fork) o.jobs = 1;

    manifest m = {0};
    if (o.manifest && load_manifest(o.manifest, &m) != 0) return 2;
    ingot_log_set(NULL, NULL); /* the failure lines carry the messages */

    tests all = {0};
    find_tests(o.dir, &all);
    if (all.n == 0) {
        fprintf(stderr, "ingot-conformance: no tests (folders with model.onnx) under '%s'\n", o.dir);
        return 2;
    }
    counts c = {0};
    c.op_pass = calloc(N_OPS, sizeof *c.op_pass);
    bool saw_node = false;
    double t0 = now_s();

    /* the tests to run: filtered, minus manifest skips */
    int *todo = xmalloc(sizeof *todo * (size_t)all.n), n_todo = 0;
    for (int i = 0; i < all.n; i++) {
        test *t = &all.v[i];
        if (o.filter && !strstr(t->name, o.filter)) continue;
        if (strcmp(t->suite, "node") == 0) saw_node = true;
        entry *sk = manifest_find(&m, t->name, ENTRY_SKIP);
        if (sk) {
            c.skipped++;
            if (o.verbose) printf("SKIP %s: %s\n", t->name, sk->reason);
            continue;
        }
        todo[n_todo++] = i;
    }

    if (!o.fork) {
        result *r = xmalloc(sizeof *r);
        for (int k = 0; k < n_todo; k++) {
            double ts = now_s();
            run_test(&all.v[todo[k]], &o, &m, r);
            record(&all.v[todo[k]], r, &m, &o, &c, now_s() - ts);
        }
        free(r);
    } else {
        slot *slots = calloc((size_t)o.jobs, sizeof *slots);
        int next = 0, running = 0;
        while (next < n_todo || running > 0) {
            for (int s = 0; s < o.jobs && next < n_todo; s++) {
                if (slots[s].pid) continue;
                start_child(&slots[s], todo[next], &all.v[todo[next]], &o, &m);
                next++;
                running++;
            }
            /* drain pipes (a result is bigger than nothing, smaller than a pipe buffer is not assumed) */
            struct pollfd pf[64];
            int map[64], np = 0;
            for (int s = 0; s < o.jobs && np < 64; s++)
                if (slots[s].pid && slots[s].fd >= 0) {
                    pf[np].fd = slots[s].fd;
                    pf[np].events = POLLIN;
                    map[np++] = s;
                }
            if (np > 0 && poll(pf, (nfds_t)np, 1000) < 0 && errno != EINTR) {
                perror("poll");
                return 2;
            }
            for (int q = 0; q < np; q++) {
                if (!(pf[q].revents & (POLLIN | POLLHUP | POLLERR))) continue;
                slot *sl = &slots[map[q]];
                ssize_t rd = read(sl->fd, (char *)&sl->r + sl->got, sizeof sl->r - sl->got);
                if (rd > 0) {
                    sl->got += (size_t)rd;
                    continue;
                }
                /* EOF: the child is done (or died); reap it */
                close(sl->fd);
                sl->fd = -1;
                int wst = 0;
                waitpid(sl->pid, &wst, 0);
                test *t = &all.v[sl->test];
                if (sl->got != sizeof sl->r) {
                    memset(&sl->r, 0, sizeof sl->r);
                    if (WIFSIGNALED(wst) && WTERMSIG(wst) == SIGALRM)
                        snprintf(sl->r.msg, sizeof sl->r.msg, "timed out after %d s", o.timeout_s);
                    else if (WIFSIGNALED(wst))
                        snprintf(sl->r.msg, sizeof sl->r.msg, "crashed with signal %d (%s)", WTERMSIG(wst),
                                 strsignal(WTERMSIG(wst)));
                    else
                        snprintf(sl->r.msg, sizeof sl->r.msg, "child exited with status %d without a result",
                                 WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
                } else if (!(WIFEXITED(wst) && WEXITSTATUS(wst) == 0) && sl->r.pass) {
                    sl->r.pass = false;
                    snprintf(sl->r.msg, sizeof sl->r.msg,
                             "outputs matched, but the test process then %s %d (a sanitizer report on stderr?)",
                             WIFSIGNALED(wst) ? "died with signal" : "exited with status",
                             WIFSIGNALED(wst) ? WTERMSIG(wst) : WEXITSTATUS(wst));
                }
                sl->r.msg[sizeof sl->r.msg - 1] = '\0';
                sl->r.ops[sizeof sl->r.ops - 1] = '\0';
                record(t, &sl->r, &m, &o, &c, now_s() - sl->start);
                sl->pid = 0;
                running--;
            }
        }
        free(slots);
    }

    int rc = c.failed > 0;
    if (o.manifest && !o.filter) {
        for (int i = 0; i < m.n; i++) {
            bool any = false;
            for (int k = 0; k < all.n && !any; k++) any = fnmatch(m.v[i].pattern, all.v[k].name, 0) == 0;
            if (!any) printf("warning: manifest line %d (%s) matches no test\n", m.v[i].line, m.v[i].pattern);
        }
    }
    if (o.op_counts) {
        printf("passing node tests per op:\n");
        for (int i = 0; i < N_OPS; i++)
            if (onnx_op(i)) printf("  %-24s %d\n", op_names[i], c.op_pass[i]);
    }
    if (o.coverage && saw_node && !o.filter) {
        int n_unc = 0, n_onnx = 0;
        for (int i = 0; i < N_OPS; i++) {
            n_onnx += onnx_op(i);
            n_unc += onnx_op(i) && c.op_pass[i] == 0 && !replaced_at_load(i);
        }
        if (n_unc) {
            printf("coverage: %d of %d ONNX ops have no passing node test:", n_unc, n_onnx);
            for (int i = 0; i < N_OPS; i++)
                if (onnx_op(i) && c.op_pass[i] == 0 && !replaced_at_load(i)) printf(" %s", op_names[i]);
            printf("\n");
            rc = 1;
        } else {
            printf("coverage: all %d ONNX ops have a passing node test (the %d ingot-domain ops have unit tests)\n",
                   n_onnx, N_OPS - n_onnx);
        }
    }
    if (o.min_pass > 0 && c.passed < o.min_pass) {
        printf("only %d tests passed, at least %d required\n", c.passed, o.min_pass);
        rc = 1;
    }
    printf("(%d expected failures, %d skipped by the manifest; %.1f s)\n", c.xfailed, c.skipped, now_s() - t0);
    printf("%d passed, %d failed, %d skipped\n", c.passed, c.failed, c.skipped + c.xfailed);
    fflush(stdout);
    for (int i = 0; i < all.n; i++) {
        free(all.v[i].name);
        free(all.v[i].suite);
        free(all.v[i].path);
    }
    free(all.v);
    for (int i = 0; i < m.n; i++) {
        free(m.v[i].pattern);
        free(m.v[i].reason);
    }
    free(m.v);
    free(todo);
    free(c.op_pass);
    return rc;
}
