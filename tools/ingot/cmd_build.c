/*
 * cmd_build.c -- `ingot build MODEL.onnx -o MODEL.ingot`: parse, optimize, plan and (on the GPU) tune
 * once, and write the engine file every other subcommand (and ingot_engine_load) loads in milliseconds.
 * A CUDA engine creates one context before it is saved: that times the convolution and GEMM
 * algorithms at the default shapes into the engine, so the file carries them and loading skips tuning.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: ingot build MODEL.onnx -o OUT.ingot [options]\n"
               "\n"
               "Build an engine once and write it as an engine file (docs/ENGINE_FILE.md): the optimized graph, its\n"
               "weights, the memory plans, the tuned algorithms and the build machine's fingerprint.\n"
               "\n"
               "  -o, --output FILE     the engine file to write (required)\n"
               "  --cpu                 a CPU engine (default: CUDA when a GPU is usable, else CPU, said on stderr)\n"
               "  --cuda                a CUDA engine, or fail\n"
               "  --device N            CUDA device index (default 0)\n"
               "  --fp16 | --bf16       half-precision storage on the GPU (fp32 accumulation); default fp32\n"
               "  --min/--opt/--max N:DIMS  the shape range input N may run with (all three, per input); opt is\n"
               "                        the shape the engine is planned and tuned for\n"
               "  --workspace BYTES     the workspace budget: the most scratch one convolution or matrix product\n"
               "                        may use (e.g. 512M; default 4G, or 1/16 of the GPU's memory). The fastest\n"
               "                        algorithm within it wins; the arena keeps only what the chosen ones use\n"
               "  --mem-limit BYTES     hard cap on weights + context memory: smaller-workspace algorithms are\n"
               "                        chosen to fit, else the build fails with every account\n"
               "  --timing-cache FILE   reuse the algorithm timings in FILE and write the updated cache back\n"
               "  --no-tune             keep the libraries' heuristic algorithms (no timing)\n"
               "  --deterministic       no timing, cuDNN's deterministic algorithms only: the same engine from\n"
               "                        every build on this machine\n" IG_CLI_SHAPES_USAGE IG_CLI_OPT_USAGE);
}

/* --min / --opt / --max: NAME:DIMS lists, parsed as --shapes is */
static int range_arg(const char *cmd, const char *value, ig_cli_shapes *into)
{
    char *av[2] = {"--shapes", (char *)value};
    int k = 0;
    return ig__cli_shapes_arg(cmd, 2, av, &k, into) == 1;
}

static const ig_cli_shape *find_shape(const ig_cli_shapes *s, const char *name)
{
    for (int i = 0; i < s->n_shapes; i++)
        if (s->shapes[i].name_len == strlen(name) && !strncmp(s->shapes[i].name, name, s->shapes[i].name_len))
            return &s->shapes[i];
    return NULL;
}

/* The profiles from --min/--opt/--max: each named input needs all three, of one rank. */
static int make_profiles(ig_cli_target *t, const ig_cli_shapes r[3], ingot_input_profile *p, int64_t *n)
{
    static const char *which[3] = {"--min", "--opt", "--max"};
    *n = 0;
    for (int w = 0; w < 3; w++)
        for (int i = 0; i < r[w].n_shapes; i++) {
            const ig_cli_shape *s = &r[w].shapes[i];
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)s->name_len, s->name);
            if (find_shape(&r[0], name) && find_shape(&r[1], name) && find_shape(&r[2], name)) continue;
            fprintf(stderr, "%s: %s %s: the input needs --min, --opt and --max\n", t->cmd, which[w], name);
            return 0;
        }
    for (int i = 0; i < r[1].n_shapes && *n < IG_CLI_MAX_SHAPES; i++) {
        const ig_cli_shape *o = &r[1].shapes[i];
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)o->name_len, o->name);
        const ig_cli_shape *mn = find_shape(&r[0], name), *mx = find_shape(&r[2], name);
        if (mn->rank != o->rank || mx->rank != o->rank) {
            fprintf(stderr, "%s: input %s: --min, --opt and --max have different ranks\n", t->cmd, name);
            return 0;
        }
        ingot_input_profile *x = &p[(*n)++];
        memset(x, 0, sizeof *x);
        x->name = NULL;
        for (int64_t k = 0; k < ig__cli_input_count(t); k++) {
            ingot_tensor_info ti;
            if (ig__cli_input_info(t, k, &ti) == INGOT_OK && !strcmp(ti.name, name)) x->name = ti.name;
        }
        if (!x->name) {
            fprintf(stderr, "%s: --opt %s: the model has no input of that name\n", t->cmd, name);
            return 0;
        }
        x->rank = o->rank;
        memcpy(x->min, mn->dims, sizeof(int64_t) * (size_t)o->rank);
        memcpy(x->opt, o->dims, sizeof(int64_t) * (size_t)o->rank);
        memcpy(x->max, mx->dims, sizeof(int64_t) * (size_t)o->rank);
    }
    return 1;
}

int ig__cmd_build(int argc, char **argv)
{
    const char *model = NULL, *out = NULL, *cache = NULL;
    ig_cli_target t;
    ig__cli_target_init(&t, "ingot build");
    ig_cli_opt opt;
    ig__cli_opt_init(&opt);
    ingot_build_options bo = ingot_build_options_default();
    static ig_cli_shapes range[3]; /* --min, --opt, --max */
    memset(range, 0, sizeof range);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if ((r = ig__cli_shapes_arg(t.cmd, argc, argv, &i, &t.shapes)) != 0) {
            if (r < 0) return 2;
        } else if ((r = ig__cli_opt_arg(argc, argv, &i, &opt)) != 0) {
            if (r < 0) return 2;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(a, "--cpu")) {
            bo.backend = INGOT_BACKEND_CPU;
        } else if (!strcmp(a, "--cuda")) {
            bo.backend = INGOT_BACKEND_CUDA;
        } else if (!strcmp(a, "--fp16")) {
            bo.precision = INGOT_DTYPE_FLOAT16;
        } else if (!strcmp(a, "--bf16")) {
            bo.precision = INGOT_DTYPE_BFLOAT16;
        } else if (!strcmp(a, "--no-tune")) {
            bo.cuda_tune = 0;
        } else if (!strcmp(a, "--deterministic")) {
            bo.deterministic = 1;
        } else if (!strcmp(a, "--mem-limit") && i + 1 < argc) {
            uint64_t v;
            if (!ig__cli_parse_bytes("--mem-limit", argv[++i], &v) || !v) return 2;
            bo.mem_limit = (size_t)v;
        } else if (!strcmp(a, "--device") && i + 1 < argc) {
            int64_t d;
            if (!ig__cli_parse_i64("--device", argv[++i], 0, &d) || d > 1024) return 2;
            bo.device = (int)d;
        } else if (!strcmp(a, "--workspace") && i + 1 < argc) {
            uint64_t w;
            if (!ig__cli_parse_bytes("--workspace", argv[++i], &w) || !w) return 2;
            bo.workspace_limit = (size_t)w;
        } else if (!strcmp(a, "--timing-cache") && i + 1 < argc) {
            cache = argv[++i];
        } else if ((!strcmp(a, "--min") || !strcmp(a, "--opt") || !strcmp(a, "--max")) && i + 1 < argc) {
            int w = !strcmp(a, "--min") ? 0 : !strcmp(a, "--opt") ? 1 : 2;
            if (!range_arg(t.cmd, argv[++i], &range[w])) return 2;
        } else if (a[0] == '-') {
            fprintf(stderr, "ingot build: unknown option '%s' (or missing value)\n\n", a);
            usage(stderr);
            return 2;
        } else if (!model) {
            model = a;
        } else {
            fprintf(stderr, "ingot build: more than one model given ('%s', '%s')\n", model, a);
            return 2;
        }
    }
    if (!model || !out) {
        fprintf(stderr, "ingot build: %s\n\n", !model ? "no model given" : "no output file given (-o FILE)");
        usage(stderr);
        return 2;
    }
    double t0 = ig__now_ms();
    int rc = 1;
    static ingot_input_profile profiles[IG_CLI_MAX_SHAPES];
    if (!ig__cli_open(&t, model)) goto done;
    if (!ig__cli_bind(&t, IG_CLI_BIND_DEFAULT_1, NULL, 0)) goto done;
    int64_t n_prof = 0;
    if (!make_profiles(&t, range, profiles, &n_prof)) goto done;
    bo.profiles = n_prof ? profiles : NULL;
    bo.n_profiles = n_prof;
    ig__cli_opt_apply(&opt, &bo);
    if (!ig__cli_build(&t, &bo)) goto done;
    ingot_backend backend = ingot_engine_backend(t.engine);
    if (bo.backend == INGOT_BACKEND_AUTO && backend == INGOT_BACKEND_CPU)
        fprintf(stderr, "ingot build: a CPU engine (%s)\n", ingot_engine_fallback_reason(t.engine));
    if (cache) {
        struct stat sb;
        if (stat(cache, &sb) == 0 && ingot_engine_load_timing_cache(t.engine, cache) != INGOT_OK)
            fprintf(stderr, "ingot build: warning: not using the timing cache: %s\n", ingot_runtime_errmsg(t.rt));
    }
    double t_build = (ig__now_ms() - t0) * 1e-3;
    /* one context at the default shapes: a CUDA engine times its algorithms into the engine now */
    ingot_context *c = NULL;
    if (backend == INGOT_BACKEND_CUDA && ingot_context_create(t.engine, NULL, &c) != INGOT_OK) {
        ig__cli_print_rt_error(&t, "tuning");
        goto done;
    }
    ingot_context_destroy(c);
    double t_tune = (ig__now_ms() - t0) * 1e-3 - t_build;
    if (ingot_engine_save(t.engine, out) != INGOT_OK) {
        ig__cli_print_rt_error(&t, "save");
        goto done;
    }
    if (cache && ingot_engine_save_timing_cache(t.engine, cache) != INGOT_OK) {
        ig__cli_print_rt_error(&t, "timing cache");
        goto done;
    }
    struct stat sb;
    double mb = stat(out, &sb) == 0 ? (double)sb.st_size / 1e6 : 0;
    printf("%s: %s engine, %.1f MB, built in %.2f s (optimize and plan %.2f s, tune %.2f s)\n", out,
           backend == INGOT_BACKEND_CUDA ? "CUDA" : "CPU", mb, (ig__now_ms() - t0) * 1e-3, t_build, t_tune);
    rc = 0;
done:
    ig__cli_close(&t);
    return rc;
}
