/*
 * main.c -- the `ingot` command: dispatches to one subcommand per pipeline view. Every subcommand uses
 * the public API (include/ingot.h); what it needs, a user of the library can do too.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: ingot <command> [options]\n"
               "\n"
               "commands:\n"
               "  inspect MODEL.onnx [--batch N | --shapes NAME:DIMS] [--json]\n"
               "                                              inputs, outputs, op histogram, parameters,\n"
               "                                              per-node shapes, FLOPs and bytes; every\n"
               "                                              unsupported node\n"
               "  inspect MODEL.onnx --optimized [--batch N] [--json]\n"
               "                                              the engine's graph after the optimizer: what\n"
               "                                              each pass made and removed\n"
               "  run MODEL.onnx [--input NAME=FILE ...] [--device cpu|cuda] [--compare DIR]\n"
               "                 [--random-inputs] [--seed S] [--output-dir DIR]\n"
               "                                              one inference; inputs from .npy/.pb files\n"
               "                                              (or seeded random when asked); outputs as\n"
               "                                              .npy, compared with references\n"
               "  plan MODEL.onnx [--batch N] [--json] [--svg FILE] [--trace FILE]\n"
               "                                              the static memory plan of the activations\n"
               "  bench MODEL.onnx [--fp16] [--batch N] [--duration S] [--device cpu|cuda] [--json]\n"
               "                                              throughput, latency, memory on the GPU\n"
               "  build MODEL.onnx -o OUT.ingot [--cpu] [--fp16] [--shapes ...] [--min/--opt/--max N:DIMS]\n"
               "                                              optimize, plan and tune once; write an engine\n"
               "                                              file that loads in milliseconds\n"
               "  profile MODEL.onnx [--fp16] [--batch N] [--json] [--html FILE] [--trace FILE] [--cpu]\n"
               "                                              every step on the roofline: its class, the\n"
               "                                              cure, the model's bottleneck and memory\n"
               "  device [--cpu] [--json]                     this machine's measured ceilings (cached)\n"
               "  sweep MODEL.onnx --batch 1,8,16 [--workspace 0,64M]\n"
               "                                              throughput, latency, memory, class per batch\n"
               "  version                                     print the version\n"
               "\n"
               "inspect, run, plan and bench take --batch N (the symbolic leading dims) and --shapes\n"
               "NAME:DIMS[,NAME:DIMS] (whole input shapes, e.g. input_ids:4x128).\n"
               "run, bench, plan and inspect --optimized also take --no-optimize and --disable-pass NAME[,NAME].\n"
               "Run `ingot <command> --help` for a command's options.\n");
}

int ig__cli_parse_i64(const char *opt, const char *s, int64_t min, int64_t *out)
{
    char *end = NULL;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (!s || !*s || *end || v < min) {
        fprintf(stderr, "ingot: %s expects an integer >= %" PRId64 ", got '%s'\n", opt, min, s ? s : "");
        return 0;
    }
    *out = (int64_t)v;
    return 1;
}

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Random contents for an input (bench, profile, sweep): floats in [-1, 1), integers in [0, 100) (valid
 * token ids), bools, halves in [0.5, 1). */
void *ig__cli_random_bytes(ingot_dtype t, size_t bytes, uint64_t *seed)
{
    unsigned char *p = malloc(bytes ? bytes : 1);
    if (!p) return NULL;
    size_t es = ingot_dtype_size(t), n = es ? bytes / es : 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rng(seed);
        double u = (double)(r >> 11) / 9007199254740992.0;
        if (t == INGOT_DTYPE_FLOAT) {
            float f = (float)(2 * u - 1);
            memcpy(p + 4 * i, &f, 4);
        } else if (t == INGOT_DTYPE_DOUBLE) {
            double f = 2 * u - 1;
            memcpy(p + 8 * i, &f, 8);
        } else if (t == INGOT_DTYPE_BOOL) {
            p[i] = (unsigned char)(r & 1);
        } else if (t == INGOT_DTYPE_FLOAT16 || t == INGOT_DTYPE_BFLOAT16) {
            uint16_t h = (uint16_t)(t == INGOT_DTYPE_FLOAT16 ? 0x3800 | (r & 0x3ff) : 0x3f00 | (r & 0x7f));
            memcpy(p + 2 * i, &h, 2);
        } else {
            int64_t v = (int64_t)(u * 100);
            memcpy(p + es * i, &v, es); /* little-endian: the low bytes of v */
        }
    }
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double ig__cli_median(double *v, int64_t n)
{
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int ig__cli_parse_bytes(const char *opt, const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = s && *s && *s != '-' ? strtoull(s, &end, 10) : 0;
    int shift = 0;
    if (end && *end) {
        const char *u = end;
        shift = (*u == 'k' || *u == 'K') ? 10 : (*u == 'm' || *u == 'M') ? 20 : (*u == 'g' || *u == 'G') ? 30 : -1;
        if (shift > 0) u++;
        if (shift > 0 && (!strcmp(u, "iB") || !strcmp(u, "B"))) u += strlen(u);
        if (*u) shift = -1;
    }
    if (!s || !end || end == s || errno || shift < 0 || (shift && v > (UINT64_MAX >> shift))) {
        fprintf(stderr, "ingot: %s expects a byte count (e.g. 1048576, 64M, 2GiB), got '%s'\n", opt, s ? s : "");
        return 0;
    }
    *out = (uint64_t)v << shift;
    return 1;
}

void ig__cli_format_shape(const ingot_tensor_info *t, char *buf, size_t n)
{
    if (t->rank < 0) {
        snprintf(buf, n, "?");
        return;
    }
    size_t off = (size_t)snprintf(buf, n, "[");
    for (int32_t k = 0; k < t->rank && off < n; k++) {
        const ingot_dim *d = &t->dims[k];
        if (!d->symbol)
            off += (size_t)snprintf(buf + off, n - off, "%s%" PRId64, k ? "," : "", d->value);
        else if (d->value == 1)
            off += (size_t)snprintf(buf + off, n - off, "%s%s", k ? "," : "", d->symbol);
        else
            off += (size_t)snprintf(buf + off, n - off, "%s%" PRId64 "*%s", k ? "," : "", d->value, d->symbol);
    }
    if (off < n) snprintf(buf + off, n - off, "]");
}

void ig__cli_opt_init(ig_cli_opt *o)
{
    o->optimize = 1;
    o->disable[0] = '\0';
}

int ig__cli_opt_arg(int argc, char **argv, int *i, ig_cli_opt *o)
{
    if (!strcmp(argv[*i], "--no-optimize")) {
        o->optimize = 0;
        return 1;
    }
    if (strcmp(argv[*i], "--disable-pass") != 0) return 0;
    if (*i + 1 >= argc || !argv[*i + 1][0]) {
        fprintf(stderr, "ingot: --disable-pass expects pass names (NAME[,NAME])\n");
        return -1;
    }
    const char *names = argv[++*i];
    size_t used = strlen(o->disable);
    if (used + strlen(names) + 2 > sizeof o->disable) {
        fprintf(stderr, "ingot: --disable-pass: too many pass names\n");
        return -1;
    }
    snprintf(o->disable + used, sizeof o->disable - used, "%s%s", used ? "," : "", names);
    return 1;
}

void ig__cli_opt_apply(const ig_cli_opt *o, ingot_build_options *bo)
{
    bo->optimize = o->optimize;
    bo->disable_passes = o->disable[0] ? o->disable : NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "inspect")) return ig__cmd_inspect(argc - 1, argv + 1);
    if (!strcmp(cmd, "run")) return ig__cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return ig__cmd_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "build")) return ig__cmd_build(argc - 1, argv + 1);
    if (!strcmp(cmd, "profile")) return ig__cmd_profile(argc - 1, argv + 1);
    if (!strcmp(cmd, "device")) return ig__cmd_device(argc - 1, argv + 1);
    if (!strcmp(cmd, "sweep")) return ig__cmd_sweep(argc - 1, argv + 1);
#ifndef INGOT_NO_CMD_PLAN
    if (!strcmp(cmd, "plan")) return ig__cmd_plan(argc - 1, argv + 1);
#endif
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("ingot %d.%d.%d\n", INGOT_VERSION_MAJOR, INGOT_VERSION_MINOR, INGOT_VERSION_PATCH);
        return 0;
    }
    fprintf(stderr, "ingot: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
