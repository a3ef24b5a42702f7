/* cmd_plan.c -- `ingot plan`: the static memory plan of a model's activations, as numbers, as a
 * per-tensor table, as JSON, as an SVG picture of the arena and as a Chrome/Perfetto trace. It plans
 * the graph a CPU engine runs (optimized unless --no-optimize) at the bound batch, read through the
 * library's internal headers (the plan itself is not public API). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "cli.h"

#include "api/api_internal.h"
#include "plan/plan.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void plan_usage(FILE *f)
{
    fprintf(f,
            "usage: ingot plan MODEL.onnx [--batch N] [--shapes NAME:DIMS[,...]] [--json] [--svg FILE]\n"
            "                  [--trace FILE] [--align N] [--workspace BYTES] [--no-reorder] [--effort 0|1|2]\n"
            "                  [--no-optimize] [--disable-pass NAME[,NAME]]\n"
            "  --batch N          bind each input's symbolic leading dim to N (default 1; other dims are\n"
            "                     left alone: a dim still symbolic is an error, bind it with --shapes)\n"
            "  --shapes N:DIMS    whole input shapes, e.g. --shapes input_ids:4x128 (repeatable)\n"
            "  --json             the plan as JSON on stdout (instead of the table)\n"
            "  --svg FILE         a picture of the arena: x = step, y = offset, a rectangle per tensor\n"
            "  --trace FILE       Chrome trace / Perfetto JSON: live bytes per step, a slice per node and tensor\n"
            "  --align N          offset alignment in bytes, a power of two (default 256)\n"
            "  --workspace BYTES  per-node scratch budget; a node needing more is an error (default: none)\n"
            "  --no-reorder       keep the model's node order (do not try the memory-aware order)\n"
            "  --effort E         packing effort: 0 one-pass strategies, 1 default, 2 long search\n" IG_CLI_OPT_USAGE);
}

static const char *mib(uint64_t b, char *buf, size_t n)
{
    if (b >= (1ull << 20))
        snprintf(buf, n, "%.2f MiB", (double)b / (double)(1ull << 20));
    else if (b >= 1024)
        snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(buf, n, "%" PRIu64 " B", b);
    return buf;
}

static int write_file(const char *path, const ig_graph *g, const ig_plan *p,
                      ingot_status (*fn)(const ig_graph *, const ig_plan *, FILE *, ig_err *))
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "ingot plan: cannot write '%s'\n", path);
        return 0;
    }
    ig_err err = {0};
    ingot_status st = fn(g, p, f, &err);
    if (fclose(f) != 0 && st == INGOT_OK) {
        fprintf(stderr, "ingot plan: writing '%s' failed\n", path);
        return 0;
    }
    if (st != INGOT_OK) {
        fprintf(stderr, "ingot plan: '%s': %s\n", path, err.msg);
        return 0;
    }
    return 1;
}

static void print_table(const ig_graph *g, const ig_plan *p)
{
    printf("\n%5s %5s  %-40s %-28s %12s %12s  %s\n", "first", "last", "tensor", "producer", "bytes", "offset", "kind");
    /* tensors in the order they appear: by first step, then id */
    for (int32_t s = 0; s < p->n_steps; s++) {
        const ig_node *n = &g->nodes[p->order[s]];
        for (int32_t j = 0; j < n->n_outputs; j++) {
            int32_t v = n->outputs[j];
            if (v < 0 || p->values[v].kind == IG_PLAN_NONE) continue;
            const ig_plan_value *pv = &p->values[v];
            char prod[64];
            snprintf(prod, sizeof prod, "%s (%s)", ig__node_label(n), n->op_type);
            printf("%5d %5d  %-40.40s %-28.28s %12" PRIu64 " %12" PRIu64 "  %s", (int)pv->first, (int)pv->last,
                   g->values[v].name, prod, pv->bytes, pv->offset, ig__plan_kind_name((ig_plan_kind)pv->kind));
            if (pv->root != v) printf(" of %s", g->values[pv->root].name);
            printf("\n");
        }
        if (p->scratch_bytes[p->order[s]])
            printf("%5d %5d  %-40.40s %-28.28s %12" PRIu64 " %12" PRIu64 "  scratch\n", (int)s, (int)s, "(scratch)",
                   ig__node_label(n), p->scratch_bytes[p->order[s]], p->scratch_offset[p->order[s]]);
    }
}

int ig__cmd_plan(int argc, char **argv)
{
    const char *path = NULL, *svg = NULL, *trace = NULL;
    int64_t align = IG_PLAN_ALIGN_DEFAULT, workspace = 0, effort = 1;
    int json = 0, reorder = 1;
    ig_cli_opt oo;
    ig__cli_opt_init(&oo);
    ig_cli_target t;
    ig__cli_target_init(&t, "ingot plan");
    for (int i = 1; i < argc; i++) {
        int r = ig__cli_opt_arg(argc, argv, &i, &oo);
        if (r == 0) r = ig__cli_shapes_arg(t.cmd, argc, argv, &i, &t.shapes);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--no-reorder"))
            reorder = 0;
        else if (!strcmp(argv[i], "--align") && i + 1 < argc) {
            if (!ig__cli_parse_i64("--align", argv[++i], 1, &align)) return 2;
            if (align & (align - 1)) {
                fprintf(stderr, "ingot plan: --align expects a power of two, got %" PRId64 "\n", align);
                return 2;
            }
        } else if (!strcmp(argv[i], "--workspace") && i + 1 < argc) {
            if (!ig__cli_parse_i64("--workspace", argv[++i], 0, &workspace)) return 2;
        } else if (!strcmp(argv[i], "--effort") && i + 1 < argc) {
            if (!ig__cli_parse_i64("--effort", argv[++i], 0, &effort)) return 2;
        } else if (!strcmp(argv[i], "--svg") && i + 1 < argc)
            svg = argv[++i];
        else if (!strcmp(argv[i], "--trace") && i + 1 < argc)
            trace = argv[++i];
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            plan_usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' || path) {
            fprintf(stderr, "ingot plan: unexpected argument '%s'\n", argv[i]);
            plan_usage(stderr);
            return 2;
        } else
            path = argv[i];
    }
    if (!path) {
        plan_usage(stderr);
        return 2;
    }
    int rc = 1;
    ig_plan p;
    memset(&p, 0, sizeof p);
    /* a plan needs concrete sizes: symbolic leading dims default to 1, any other must be bound */
    if (!ig__cli_open(&t, path) || !ig__cli_bind(&t, IG_CLI_BIND_DEFAULT_1 | IG_CLI_BIND_CONCRETE, NULL, 0)) goto out;
    /* the graph an engine runs: optimized, inferred at the shapes bound on the model */
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = t.model ? INGOT_BACKEND_CPU : INGOT_BACKEND_AUTO; /* an engine file: as built */
    bo.n_threads = 1;
    ig__cli_opt_apply(&oo, &bo);
    if (!ig__cli_build(&t, &bo)) goto out;
    ingot_engine *e = t.engine;
    const ig_graph *g = ig__engine_graph(e);
    if (!g) {
        fprintf(stderr, "ingot plan: the engine's graph has no concrete shapes\n");
        goto out;
    }
    ig_plan_options o = ig__plan_options_default();
    o.align = (uint64_t)align;
    o.workspace_limit = (uint64_t)workspace;
    o.reorder = reorder;
    o.effort = (int32_t)effort;
    ig_err err = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ingot_status st = ig__plan_graph(g, &o, &p, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    if (st != INGOT_OK) {
        fprintf(stderr, "ingot plan: %s: %s\n", ingot_status_name(st), err.msg);
        goto out;
    }
    if (ig__plan_check(g, &p, &err) != INGOT_OK) { /* a planner bug, never the model's fault */
        fprintf(stderr, "ingot plan: %s\n", err.msg);
        goto out;
    }
    if (svg && !write_file(svg, g, &p, ig__plan_write_svg)) goto out;
    if (trace && !write_file(trace, g, &p, ig__plan_write_trace)) goto out;
    if (json) {
        ig_err werr = {0};
        if (ig__plan_write_json(g, &p, stdout, &werr) != INGOT_OK) {
            fprintf(stderr, "ingot plan: %s\n", werr.msg);
            goto out;
        }
        rc = 0;
        goto out;
    }
    int32_t n_t = 0, n_alias = 0, n_inplace = 0, n_scratch = 0, worst = -1;
    for (int32_t v = 0; v < p.n_values; v++) {
        n_t += p.values[v].kind != IG_PLAN_NONE;
        n_alias += p.values[v].kind == IG_PLAN_ALIAS;
        n_inplace += p.values[v].kind == IG_PLAN_INPLACE;
    }
    for (int32_t k = 0; k < p.n_nodes; k++)
        if (p.scratch_bytes[k]) {
            n_scratch++;
            if (worst < 0 || p.scratch_bytes[k] > p.scratch_bytes[worst]) worst = k;
        }
    char b1[32], b2[32];
    double ratio = p.lower_bound ? (double)p.arena_bytes / (double)p.lower_bound : 1.0;
    printf("model: %s", path);
    if (t.n_inputs) printf(" (batch %" PRId64 ")", t.batch);
    printf("\nplan: %d steps, %d tensors in the arena (%d zero-copy aliases, %d in place), %d nodes with scratch\n",
           (int)p.n_steps, (int)n_t, (int)n_alias, (int)n_inplace, (int)n_scratch);
    printf("  arena          %-12s (%" PRIu64 " bytes, alignment %" PRIu64 ")\n", mib(p.arena_bytes, b1, sizeof b1),
           p.arena_bytes, p.align);
    printf("  lower bound    %-12s (%" PRIu64 " bytes): ratio %.4f\n", mib(p.lower_bound, b1, sizeof b1), p.lower_bound,
           ratio);
    printf("  no reuse       %-12s (%" PRIu64 " bytes): %.1fx the arena\n", mib(p.no_reuse_bytes, b1, sizeof b1),
           p.no_reuse_bytes, p.arena_bytes ? (double)p.no_reuse_bytes / (double)p.arena_bytes : 0.0);
    printf("  strategy       %s\n", p.strategy);
    printf("  order          %s (original: arena %s", p.reordered ? "memory-aware" : "original",
           mib(p.arena_original, b1, sizeof b1));
    if (p.arena_reordered)
        printf(", memory-aware: arena %s", mib(p.arena_reordered, b2, sizeof b2));
    else if (p.lb_reordered)
        printf(", memory-aware: lower bound %s, no better", mib(p.lb_reordered, b2, sizeof b2));
    else if (reorder)
        printf(", memory-aware: same order");
    printf(")\n");
    if (p.peak_step >= 0)
        printf("  peak           step %d (node '%s'), %s live\n", (int)p.peak_step,
               ig__node_label(&g->nodes[p.order[p.peak_step]]), mib(p.lower_bound, b1, sizeof b1));
    if (worst >= 0)
        printf("  scratch        largest %s (node '%s')\n", mib(p.scratch_bytes[worst], b1, sizeof b1),
               ig__node_label(&g->nodes[worst]));
    printf("  planned in %.2f ms; plan verified (no live tensors overlap)\n", ms);
    if (svg) printf("  picture: %s\n", svg);
    if (trace) printf("  trace: %s (open in https://ui.perfetto.dev or chrome://tracing)\n", trace);
    print_table(g, &p);
    rc = 0;
out:
    ig__plan_free(&p);
    ig__cli_close(&t);
    return rc;
}
