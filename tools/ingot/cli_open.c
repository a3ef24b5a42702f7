/*
 * cli_open.c -- what every subcommand does before its own work: open the model, bind its input shapes
 * (--batch, --shapes, the shapes of input files), build an engine, and close it all again.
 *
 * Binding works on symbols, as the model does: a dim declared `batch` in two inputs is one dim, so a
 * shape that fixes it for one input fixes it for the other. --batch N gives N to the symbols that are
 * some input's leading dim and to nothing else; a symbolic dim nothing binds stays symbolic, which the
 * commands that need concrete shapes (run, plan, bench) report as an error naming the input and the dim
 * rather than running it at some made-up size. What --batch (or the default of 1) bound is said in one
 * line, so a figure is never silently about another shape than the user thinks.
 *
 * An engine file (ingot build) opens with model == NULL and its engine loaded; binding then resolves
 * the same options over the engine's default shapes instead of the model's declared ones, and the
 * queries answer from whichever the target holds.
 */
#define _POSIX_C_SOURCE 200809L /* open flags, fstat */
#include "cli.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- options ------------------------------------------------------------------------------------- */

static int parse_dims(const char *s, const char *end, ig_cli_shape *sh)
{
    sh->rank = 0;
    if (s == end) return 1; /* "NAME:" is a scalar */
    for (;;) {
        if (s == end || *s < '0' || *s > '9') return 0;
        int64_t v = 0;
        while (s < end && *s >= '0' && *s <= '9') {
            if (v > (INT64_MAX - 9) / 10) return 0;
            v = v * 10 + (*s++ - '0');
        }
        if (sh->rank >= INGOT_MAX_RANK) return 0;
        sh->dims[sh->rank++] = v;
        if (s == end) return 1;
        if (*s != 'x' && *s != 'X') return 0;
        s++;
    }
}

int ig__cli_shapes_arg(const char *cmd, int argc, char **argv, int *i, ig_cli_shapes *s)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--batch")) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "%s: --batch expects a number\n", cmd);
            return -1;
        }
        return ig__cli_parse_i64("--batch", argv[++*i], 1, &s->batch) ? 1 : -1;
    }
    if (!strcmp(a, "--rebuild-on-mismatch")) {
        if (*i + 1 >= argc || !argv[*i + 1][0]) {
            fprintf(stderr, "%s: --rebuild-on-mismatch expects the ONNX model the engine file was built from\n", cmd);
            return -1;
        }
        s->rebuild_from = argv[++*i];
        return 1;
    }
    if (strcmp(a, "--shapes") != 0) return 0;
    if (*i + 1 >= argc || !argv[*i + 1][0]) {
        fprintf(stderr, "%s: --shapes expects NAME:DIMS[,NAME:DIMS] (e.g. input:1x3x224x224)\n", cmd);
        return -1;
    }
    const char *v = argv[++*i];
    while (*v) {
        const char *end = strchr(v, ',');
        if (!end) end = v + strlen(v);
        const char *colon = NULL; /* the last ':' of the entry: names may hold ':' ("input:0"), dims never */
        for (const char *p = v; p < end; p++)
            if (*p == ':') colon = p;
        if (s->n_shapes >= IG_CLI_MAX_SHAPES) {
            fprintf(stderr, "%s: --shapes: more than %d entries\n", cmd, IG_CLI_MAX_SHAPES);
            return -1;
        }
        ig_cli_shape *sh = &s->shapes[s->n_shapes];
        if (!colon || colon == v || !parse_dims(colon + 1, end, sh)) {
            fprintf(stderr,
                    "%s: --shapes: '%.*s' is not NAME:DIMS (dims are numbers joined by 'x', e.g. "
                    "input:1x3x224x224; at most %d)\n",
                    cmd, (int)(end - v), v, INGOT_MAX_RANK);
            return -1;
        }
        sh->name = v;
        sh->name_len = (size_t)(colon - v);
        s->n_shapes++;
        v = *end ? end + 1 : end;
    }
    return 1;
}

/* ---- open / build / close ------------------------------------------------------------------------- */

void ig__cli_target_init(ig_cli_target *t, const char *cmd)
{
    memset(t, 0, sizeof *t);
    t->cmd = cmd;
    t->batch = 1;
}

void ig__cli_print_rt_error(const ig_cli_target *t, const char *what)
{
    fprintf(stderr, "%s: %s%s%s: %s\n", t->cmd, what ? what : "", what ? ": " : "",
            ingot_status_name(ingot_runtime_errcode(t->rt)), ingot_runtime_errmsg(t->rt));
}

int ig__cli_is_engine_file(const char *path)
{
    /* a regular file only, opened without blocking (a FIFO would wait for a writer); anything else is
     * left to the loader, which says what is wrong with it */
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) return 0;
    struct stat sb;
    char magic[8] = {0};
    int yes = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && read(fd, magic, 8) == 8 && !memcmp(magic, "INGOTENG", 8);
    close(fd);
    return yes;
}

/* A stale engine file rebuilt from its ONNX model with the options it records, and written back. */
static int rebuild(ig_cli_target *t, const char *path)
{
    fprintf(stderr, "%s: %s\n%s: rebuilding it from %s\n", t->cmd, ingot_runtime_errmsg(t->rt), t->cmd,
            t->shapes.rebuild_from);
    if (ingot_engine_rebuild(t->rt, path, t->shapes.rebuild_from, &t->engine) == INGOT_OK) return 1;
    ig__cli_print_rt_error(t, "rebuild");
    return 0;
}

int ig__cli_open(ig_cli_target *t, const char *path)
{
    t->path = path;
    if (ingot_runtime_create(&t->rt) != INGOT_OK) {
        fprintf(stderr, "%s: out of memory\n", t->cmd);
        return 0;
    }
    if (ig__cli_is_engine_file(path)) {
        if (ingot_engine_load(t->rt, path, NULL, &t->engine) != INGOT_OK) {
            if (!(ingot_runtime_errcode(t->rt) == INGOT_ERR_ENGINE_MISMATCH && t->shapes.rebuild_from &&
                  rebuild(t, path))) {
                ig__cli_print_rt_error(t, NULL);
                return 0;
            }
        }
        t->n_inputs = ingot_engine_input_count(t->engine);
    } else {
        if (ingot_model_load(t->rt, path, NULL, &t->model) != INGOT_OK) {
            ig__cli_print_rt_error(t, NULL);
            return 0;
        }
        t->n_inputs = ingot_model_input_count(t->model);
    }
    t->decl = calloc((size_t)t->n_inputs + 1, sizeof *t->decl);
    t->eng_rank = calloc((size_t)t->n_inputs + 1, sizeof *t->eng_rank);
    t->eng_dims = calloc((size_t)t->n_inputs + 1, sizeof *t->eng_dims);
    if (!t->decl || !t->eng_rank || !t->eng_dims) {
        fprintf(stderr, "%s: out of memory\n", t->cmd);
        return 0;
    }
    for (int64_t i = 0; i < t->n_inputs; i++) {
        t->eng_rank[i] = -1;
        if (t->model)
            ingot_model_input_info(t->model, i, &t->decl[i]);
        else
            ingot_engine_input_info(t->engine, i, &t->decl[i]);
    }
    return 1;
}

int ig__cli_build(ig_cli_target *t, const ingot_build_options *bo)
{
    if (!t->model) { /* an engine file: built already, with the options it was built with */
        ingot_backend have = ingot_engine_backend(t->engine);
        if (bo->backend != INGOT_BACKEND_AUTO && bo->backend != have) {
            fprintf(stderr, "%s: %s is a %s engine; running it on the %s needs the ONNX model (or ingot build %s)\n",
                    t->cmd, t->path, have == INGOT_BACKEND_CUDA ? "CUDA" : "CPU",
                    bo->backend == INGOT_BACKEND_CUDA ? "GPU" : "CPU",
                    bo->backend == INGOT_BACKEND_CUDA ? "without --cpu" : "--cpu");
            return 0;
        }
        return 1;
    }
    if (ingot_engine_build(t->rt, t->model, bo, &t->engine) != INGOT_OK) {
        ig__cli_print_rt_error(t, "build");
        return 0;
    }
    return 1;
}

void ig__cli_close(ig_cli_target *t)
{
    ingot_engine_destroy(t->engine);
    ingot_model_destroy(t->model);
    ingot_runtime_destroy(t->rt);
    free(t->decl);
    free(t->eng_rank);
    free(t->eng_dims);
    t->eng_rank = NULL;
    t->eng_dims = NULL;
    t->engine = NULL;
    t->model = NULL;
    t->rt = NULL;
    t->decl = NULL;
}

int64_t ig__cli_input_count(const ig_cli_target *t)
{
    return t->model ? ingot_model_input_count(t->model) : t->engine ? ingot_engine_input_count(t->engine) : 0;
}
int64_t ig__cli_output_count(const ig_cli_target *t)
{
    return t->model ? ingot_model_output_count(t->model) : t->engine ? ingot_engine_output_count(t->engine) : 0;
}

ingot_status ig__cli_input_info(const ig_cli_target *t, int64_t i, ingot_tensor_info *out)
{
    if (t->model) return ingot_model_input_info(t->model, i, out);
    if (!t->engine) return INGOT_ERR_INVALID_ARG;
    ingot_status st = ingot_engine_input_info(t->engine, i, out);
    if (st != INGOT_OK || !t->eng_rank || t->eng_rank[i] < 0) return st;
    out->rank = t->eng_rank[i]; /* as bound */
    out->bytes = ingot_dtype_size(out->dtype);
    for (int32_t k = 0; k < out->rank; k++) {
        out->dims[k].value = t->eng_dims[i][k];
        out->dims[k].symbol = NULL;
        /* 0 when the size overflows, as ingot_tensor_info says for sizes it cannot give */
        if (t->eng_dims[i][k] < 0 || __builtin_mul_overflow(out->bytes, (size_t)t->eng_dims[i][k], &out->bytes))
            out->bytes = 0;
    }
    return INGOT_OK;
}

ingot_status ig__cli_output_info(const ig_cli_target *t, int64_t i, ingot_tensor_info *out)
{
    if (t->model) return ingot_model_output_info(t->model, i, out);
    return t->engine ? ingot_engine_output_info(t->engine, i, out) : INGOT_ERR_INVALID_ARG;
}

int ig__cli_input_tensor(const ig_cli_target *t, int64_t i, ingot_tensor *out)
{
    ingot_tensor_info ti;
    memset(out, 0, sizeof *out);
    if (ig__cli_input_info(t, i, &ti) != INGOT_OK || ti.rank < 0) return 0;
    out->name = ti.name;
    out->dtype = ti.dtype;
    out->rank = ti.rank;
    size_t bytes = ingot_dtype_size(ti.dtype);
    for (int32_t k = 0; k < ti.rank; k++) {
        if (ti.dims[k].symbol || ti.dims[k].value < 0) return 0;
        out->dims[k] = ti.dims[k].value;
        if (__builtin_mul_overflow(bytes, (size_t)ti.dims[k].value, &bytes)) return 0; /* never a wrapped size */
    }
    out->bytes = bytes;
    return 1;
}

/* ---- binding -------------------------------------------------------------------------------------- */

enum { SRC_GIVEN = 1, SRC_SHAPES, SRC_BATCH, SRC_DEFAULT, SRC_ENGINE };

typedef struct sym_val {
    const char *sym; /* owned by the model */
    int64_t value;
    int src;
    int64_t input; /* the input whose dim fixed it */
    int32_t axis;
} sym_val;

typedef struct bind_state {
    ig_cli_target *t;
    sym_val *syms; /* [n_syms] */
    int64_t n_syms;
} bind_state;

static sym_val *sym_find(bind_state *b, const char *sym)
{
    for (int64_t k = 0; k < b->n_syms; k++)
        if (!strcmp(b->syms[k].sym, sym)) return &b->syms[k];
    return NULL;
}

static const char *src_name(int src)
{
    switch (src) {
    case SRC_GIVEN: return "an input file";
    case SRC_SHAPES: return "--shapes";
    case SRC_BATCH: return "--batch";
    case SRC_ENGINE: return "the engine file's default shapes";
    default: return "the default batch 1";
    }
}

/* Record sym = value (from input i, axis k); 0 after printing a contradiction. */
static int sym_set(bind_state *b, const char *sym, int64_t value, int src, int64_t i, int32_t k)
{
    sym_val *s = sym_find(b, sym);
    if (s) {
        if (s->value == value) return 1;
        fprintf(stderr,
                "%s: '%s' is one dim of the model, but %s makes it %" PRId64 " (%s[%d]) and %s makes it %" PRId64
                " (%s[%d])\n",
                b->t->cmd, sym, src_name(s->src), s->value, b->t->decl[s->input].name, (int)s->axis, src_name(src),
                value, b->t->decl[i].name, (int)k);
        return 0;
    }
    s = &b->syms[b->n_syms++];
    s->sym = sym;
    s->value = value;
    s->src = src;
    s->input = i;
    s->axis = k;
    return 1;
}

static void dim_str(const ingot_dim *d, char *buf, size_t n)
{
    if (!d->symbol)
        snprintf(buf, n, "%" PRId64, d->value);
    else if (d->value == 1)
        snprintf(buf, n, "%s", d->symbol);
    else
        snprintf(buf, n, "%" PRId64 "*%s", d->value, d->symbol);
}

/* Append "NAME[k] (sym) = V" entries of one source to the message. */
static void add_bound(char *buf, size_t n, size_t *off, int *first_of_src, const char *name, int32_t k,
                      const ingot_dim *d, int64_t v)
{
    char ds[128];
    dim_str(d, ds, sizeof ds);
    if (*off < n)
        *off += (size_t)snprintf(buf + *off, n - *off, "%s%s[%d] (%s) = %" PRId64, *first_of_src ? "" : ", ", name,
                                 (int)k, ds, v);
    *first_of_src = 0;
}

/* The given shape of input i: from a file tensor or a --shapes entry (both: they must agree). */
static int explicit_shape(ig_cli_target *t, int64_t i, const ingot_tensor *given, int64_t n_given, int32_t *rank,
                          int64_t *dims, int *src)
{
    const char *name = t->decl[i].name;
    const ingot_tensor *gt = NULL;
    const ig_cli_shape *sh = NULL;
    for (int64_t j = 0; given && j < n_given; j++)
        if (given[j].name && !strcmp(given[j].name, name)) gt = &given[j];
    for (int j = 0; j < t->shapes.n_shapes; j++) {
        const ig_cli_shape *s = &t->shapes.shapes[j];
        if (s->name_len == strlen(name) && !strncmp(s->name, name, s->name_len)) {
            if (sh) {
                fprintf(stderr, "%s: --shapes gives input '%s' twice\n", t->cmd, name);
                return -1;
            }
            sh = s;
        }
    }
    if (gt && sh) {
        int same = gt->rank == sh->rank;
        for (int32_t k = 0; same && k < sh->rank; k++) same = gt->dims[k] == sh->dims[k];
        if (!same) {
            char fs[256];
            size_t off = (size_t)snprintf(fs, sizeof fs, "[");
            for (int32_t k = 0; k < gt->rank && off < sizeof fs; k++)
                off += (size_t)snprintf(fs + off, sizeof fs - off, "%s%" PRId64, k ? "," : "", gt->dims[k]);
            if (off < sizeof fs) snprintf(fs + off, sizeof fs - off, "]");
            fprintf(stderr, "%s: input '%s': --shapes gives %.*s, its input file holds %s\n", t->cmd, name,
                    (int)strcspn(sh->name + sh->name_len + 1, ","), sh->name + sh->name_len + 1, fs);
            return -1;
        }
    }
    if (gt) {
        *rank = gt->rank;
        memcpy(dims, gt->dims, sizeof(int64_t) * (size_t)gt->rank);
        *src = SRC_GIVEN;
        return 1;
    }
    if (sh) {
        *rank = sh->rank;
        memcpy(dims, sh->dims, sizeof(int64_t) * (size_t)sh->rank);
        *src = SRC_SHAPES;
        return 1;
    }
    return 0;
}

int ig__cli_bind(ig_cli_target *t, int flags, const ingot_tensor *given, int64_t n_given)
{
    t->bound[0] = '\0';
    t->batch = 1;
    const int64_t n = t->n_inputs;
    int ok = 0;
    bind_state b = {.t = t};
    int32_t *erank = calloc((size_t)n + 1, sizeof *erank);                  /* -2: no explicit shape */
    int64_t(*edims)[INGOT_MAX_RANK] = calloc((size_t)n + 1, sizeof *edims); /* explicit dims */
    int64_t(*rdims)[INGOT_MAX_RANK] = calloc((size_t)n + 1, sizeof *rdims); /* resolved dims */
    char *full = calloc((size_t)n + 1, 1);                                  /* all dims resolved */
    b.syms = calloc((size_t)n * INGOT_MAX_RANK + 1, sizeof *b.syms);
    const char **missing = calloc((size_t)n * INGOT_MAX_RANK + 1, sizeof *missing); /* symbols reported unbound */
    if (!erank || !edims || !rdims || !full || !b.syms || !missing) {
        fprintf(stderr, "%s: out of memory\n", t->cmd);
        goto out;
    }

    /* --shapes names must be inputs */
    for (int j = 0; j < t->shapes.n_shapes; j++) {
        const ig_cli_shape *s = &t->shapes.shapes[j];
        int64_t i = 0;
        while (i < n && !(s->name_len == strlen(t->decl[i].name) && !strncmp(s->name, t->decl[i].name, s->name_len)))
            i++;
        if (i == n) {
            fprintf(stderr, "%s: --shapes: the model has no input '%.*s' (inputs:", t->cmd, (int)s->name_len, s->name);
            for (int64_t k = 0; k < n; k++) fprintf(stderr, "%s %s", k ? "," : "", t->decl[k].name);
            fprintf(stderr, ")\n");
            goto out;
        }
    }

    /* 1. the shapes given: checked against the declaration by the library, then their symbols recorded */
    for (int64_t i = 0; i < n; i++) {
        int src = 0;
        int r = explicit_shape(t, i, given, n_given, &erank[i], edims[i], &src);
        if (r < 0) goto out;
        if (r == 0) {
            erank[i] = -2;
            continue;
        }
        if (t->model && ingot_model_set_input_shape(t->model, t->decl[i].name, erank[i], edims[i]) != INGOT_OK) {
            fprintf(stderr, "%s: %s: %s\n", t->cmd, src == SRC_SHAPES ? "--shapes" : "the input file's shape",
                    ingot_runtime_errmsg(t->rt));
            goto out;
        }
        const ingot_tensor_info *d = &t->decl[i];
        for (int32_t k = 0; k < d->rank && k < erank[i]; k++) {
            if (!d->dims[k].symbol) continue;
            int64_t c = d->dims[k].value > 0 ? d->dims[k].value : 1;
            if (edims[i][k] % c) {
                fprintf(stderr,
                        "%s: input '%s': dim %d is %" PRId64 "*%s, and %" PRId64 " is not a multiple of %" PRId64 "\n",
                        t->cmd, d->name, (int)k, c, d->dims[k].symbol, edims[i][k], c);
                goto out;
            }
            if (!sym_set(&b, d->dims[k].symbol, edims[i][k] / c, src, i, k)) goto out;
        }
    }

    /* 2. --batch: the symbolic leading dims, and nothing else */
    int64_t n_leading = 0;
    for (int64_t i = 0; i < n; i++) n_leading += t->decl[i].rank >= 1 && t->decl[i].dims[0].symbol != NULL;
    if (t->shapes.batch) {
        for (int64_t i = 0; i < n; i++) {
            const ingot_tensor_info *d = &t->decl[i];
            if (d->rank < 1 || !d->dims[0].symbol) continue;
            if (!sym_set(&b, d->dims[0].symbol, t->shapes.batch, SRC_BATCH, i, 0)) goto out;
        }
        if (!n_leading) {
            char s[512] = "";
            if (n) ig__cli_format_shape(&t->decl[0], s, sizeof s);
            fprintf(stderr,
                    "%s: warning: --batch %" PRId64 " binds nothing: no input has a symbolic leading dim (the model's "
                    "batch is fixed%s%s%s%s)\n",
                    t->cmd, t->shapes.batch, n ? ": " : "", n ? t->decl[0].name : "", n ? " is " : "", s);
        }
    }
    if (!t->model) { /* an engine file: what nothing else binds comes from its default shapes */
        for (int64_t i = 0; i < n; i++) {
            const ingot_tensor_info *d = &t->decl[i];
            int32_t rank;
            int64_t dd[INGOT_MAX_RANK];
            if (erank[i] != -2 || ingot_engine_input_default_shape(t->engine, i, &rank, dd) != INGOT_OK ||
                rank != d->rank)
                continue;
            for (int32_t k = 0; k < rank; k++) {
                int64_t c = d->dims[k].value > 0 ? d->dims[k].value : 1;
                if (d->dims[k].symbol && !sym_find(&b, d->dims[k].symbol) &&
                    !sym_set(&b, d->dims[k].symbol, dd[k] / c, SRC_ENGINE, i, k))
                    goto out;
            }
        }
    } else if (flags & IG_CLI_BIND_DEFAULT_1) {
        for (int64_t i = 0; i < n; i++) {
            const ingot_tensor_info *d = &t->decl[i];
            if (erank[i] != -2 || d->rank < 1 || !d->dims[0].symbol || sym_find(&b, d->dims[0].symbol)) continue;
            if (!sym_set(&b, d->dims[0].symbol, 1, SRC_DEFAULT, i, 0)) goto out;
        }
    }

    /* 3. resolve every input; report what was bound beyond the shapes given; missing dims */
    size_t off = 0;
    int n_missing = 0;
    for (int src = SRC_GIVEN; src <= SRC_ENGINE; src++) {
        int first = 1;
        if (off && off < sizeof t->bound) off += (size_t)snprintf(t->bound + off, sizeof t->bound - off, "; ");
        size_t mark = off;
        for (int64_t i = 0; i < n; i++) {
            const ingot_tensor_info *d = &t->decl[i];
            if (erank[i] != -2 || d->rank < 0) continue;
            for (int32_t k = 0; k < d->rank; k++) {
                if (!d->dims[k].symbol) continue;
                const sym_val *s = sym_find(&b, d->dims[k].symbol);
                if (!s || s->src != src) continue;
                add_bound(t->bound, sizeof t->bound, &off, &first, d->name, k, &d->dims[k],
                          s->value * (d->dims[k].value > 0 ? d->dims[k].value : 1));
            }
        }
        if (first) { /* nothing from this source: take the separator back */
            off = mark >= 2 ? mark - 2 : mark;
            if (off < sizeof t->bound) t->bound[off] = '\0';
            continue;
        }
        if (off >= sizeof t->bound) continue;
        if (src == SRC_GIVEN)
            off += (size_t)snprintf(t->bound + off, sizeof t->bound - off, " (the same dims as in the input files)");
        else if (src == SRC_SHAPES)
            off += (size_t)snprintf(t->bound + off, sizeof t->bound - off, " (the same dims as in --shapes)");
        else if (src == SRC_BATCH)
            off += (size_t)snprintf(t->bound + off, sizeof t->bound - off, " (--batch %" PRId64 ")", t->shapes.batch);
        else if (src == SRC_ENGINE)
            off += (size_t)snprintf(t->bound + off, sizeof t->bound - off,
                                    " (the engine file's default shapes; --batch N or --shapes change them)");
        else
            off += (size_t)snprintf(t->bound + off, sizeof t->bound - off,
                                    " (no --batch given: symbolic leading dims default to 1; use --batch N or "
                                    "--shapes)");
    }
    if (off >= sizeof t->bound) snprintf(t->bound + sizeof t->bound - 5, 5, "...");
    for (int64_t i = 0; i < n; i++) {
        const ingot_tensor_info *d = &t->decl[i];
        if (erank[i] != -2) {
            full[i] = 1;
            memcpy(rdims[i], edims[i], sizeof rdims[i]);
            continue;
        }
        full[i] = d->rank >= 0;
        for (int32_t k = 0; k < d->rank; k++) {
            rdims[i][k] = d->dims[k].value;
            if (!d->dims[k].symbol) continue;
            const sym_val *s = sym_find(&b, d->dims[k].symbol);
            if (s)
                rdims[i][k] = s->value * (d->dims[k].value > 0 ? d->dims[k].value : 1);
            else
                full[i] = 0;
        }
        if (full[i] || !(flags & IG_CLI_BIND_CONCRETE)) continue;
        char s[512], eg[512];
        ig__cli_format_shape(d, s, sizeof s);
        if (d->rank < 0) {
            fprintf(stderr, "%s: input '%s' has no declared shape; give it with --shapes %s:DIMS\n", t->cmd, d->name,
                    d->name);
            missing[n_missing++] = "";
            continue;
        }
        size_t eo = 0;
        for (int32_t k = 0; k < d->rank && eo < sizeof eg; k++) {
            const sym_val *v = d->dims[k].symbol ? sym_find(&b, d->dims[k].symbol) : NULL;
            if (!d->dims[k].symbol || v)
                eo += (size_t)snprintf(eg + eo, sizeof eg - eo, "%s%" PRId64, k ? "x" : "", rdims[i][k]);
            else
                eo += (size_t)snprintf(eg + eo, sizeof eg - eo, "%s<%s>", k ? "x" : "", d->dims[k].symbol);
        }
        for (int32_t k = 0; k < d->rank; k++) {
            if (!d->dims[k].symbol || sym_find(&b, d->dims[k].symbol)) continue;
            int seen = 0; /* one message per symbol: binding it for one input binds it everywhere */
            for (int q = 0; q < n_missing && !seen; q++) seen = !strcmp(missing[q], d->dims[k].symbol);
            if (seen) continue;
            fprintf(stderr,
                    "%s: input '%s' %s: dim %d (%s) is symbolic and nothing binds it (--batch binds only leading "
                    "dims); give the input's shape with --shapes %s:%s\n",
                    t->cmd, d->name, s, (int)k, d->dims[k].symbol, d->name, eg);
            missing[n_missing++] = d->dims[k].symbol;
        }
    }
    if (n_missing) goto out;

    /* 4. apply: an engine file keeps the resolved shapes for its runs; a model gets the leading symbols
     * through the library's batch binding when that says exactly what the table says (so inputs left
     * partly symbolic still get their batch), then every resolved input */
    if (!t->model) {
        for (int64_t i = 0; i < n; i++) {
            t->eng_rank[i] = full[i] ? (erank[i] != -2 ? erank[i] : t->decl[i].rank) : -1;
            memcpy(t->eng_dims[i], rdims[i], sizeof t->eng_dims[i]);
        }
    } else {
        int64_t v = -1;
        int same = 1, any_partial = 0;
        for (int64_t i = 0; i < n; i++) {
            const ingot_tensor_info *d = &t->decl[i];
            if (d->rank < 1 || !d->dims[0].symbol) continue;
            const sym_val *s = sym_find(&b, d->dims[0].symbol);
            any_partial |= !full[i];
            if (!s || (v >= 0 && s->value != v) || d->dims[0].value != 1)
                same = 0;
            else
                v = s->value;
        }
        if (any_partial && same && v > 0 && ingot_model_set_batch(t->model, v) != INGOT_OK) {
            ig__cli_print_rt_error(t, NULL);
            goto out;
        }
        for (int64_t i = 0; i < n; i++) {
            if (!full[i]) continue;
            int32_t rank = erank[i] != -2 ? erank[i] : t->decl[i].rank;
            if (ingot_model_set_input_shape(t->model, t->decl[i].name, rank, rdims[i]) != INGOT_OK) {
                ig__cli_print_rt_error(t, NULL);
                goto out;
            }
        }
        if (ingot_model_infer(t->model) != INGOT_OK) {
            ig__cli_print_rt_error(t, NULL);
            goto out;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        ingot_tensor_info ti;
        if (ig__cli_input_info(t, i, &ti) != INGOT_OK || ti.rank < 1) continue;
        if (!ti.dims[0].symbol) t->batch = ti.dims[0].value;
        break;
    }
    if (t->bound[0] && !(flags & IG_CLI_BIND_QUIET)) fprintf(stderr, "%s: bound %s\n", t->cmd, t->bound);
    ok = 1;
out:
    free(erank);
    free(edims);
    free(rdims);
    free(full);
    free(b.syms);
    free(missing);
    return ok;
}
