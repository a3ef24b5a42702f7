/* cmd_inspect.c -- `ingot inspect`: what is inside a model, and what each node costs; with --optimized,
 * the graph a CPU engine runs after the optimizer (read through the library's internal headers, as
 * `ingot plan` does: node provenance has no public accessor beyond ingot_engine_describe_json). */
#include "cli.h"

#include "api/api_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void inspect_usage(FILE *f)
{
    fprintf(f, "usage: ingot inspect MODEL.onnx [--batch N] [--json]\n"
               "       ingot inspect MODEL.onnx --optimized [--batch N] [--json] [--no-optimize]\n"
               "                     [--disable-pass NAME[,NAME]]\n"
               "  --batch N          bind every symbolic leading input dim to N (text output binds 1 by default\n"
               "                     so that costs are concrete; --json without --batch keeps dims symbolic;\n"
               "                     --optimized binds 1 by default either way)\n"
               "  --json             machine-readable output (format: docs/CLI.md)\n"
               "  --optimized        the engine's graph: per node the pass that made it and the model's nodes\n"
               "                     it covers; per pass the rewrites, nodes and bytes removed\n" IG_CLI_OPT_USAGE);
}

static int cmp_count(const void *a, const void *b)
{
    const struct {
        const char *op;
        int n;
    } *x = a, *y = b;
    if (x->n != y->n) return y->n - x->n;
    return strcmp(x->op, y->op);
}

static const char *human(double v, char *buf, size_t n)
{
    const char *units[] = {"", "K", "M", "G", "T", "P"};
    int u = 0;
    while (v >= 1000 && u < 5) {
        v /= 1000;
        u++;
    }
    snprintf(buf, n, u ? "%.2f %s" : "%.0f %s", v, units[u]);
    return buf;
}

static int has_symbolic_inputs(const ingot_model *m)
{
    for (int64_t i = 0; i < ingot_model_input_count(m); i++) {
        ingot_tensor_info t;
        ingot_model_input_info(m, i, &t);
        for (int32_t k = 0; k < t.rank; k++)
            if (t.dims[k].symbol) return 1;
    }
    return 0;
}

static void print_io(const char *title, const ingot_model *m, int64_t n,
                     ingot_status (*get)(const ingot_model *, int64_t, ingot_tensor_info *))
{
    printf("%s:\n", title);
    for (int64_t i = 0; i < n; i++) {
        ingot_tensor_info t;
        char s[512];
        get(m, i, &t);
        ig__cli_format_shape(&t, s, sizeof s);
        printf("  %-32s %-9s %s\n", t.name, ingot_dtype_name(t.dtype), s);
    }
}

static const char *shape_of(const ig_graph *g, int32_t v, char *buf, size_t n)
{
    if (v < 0) return "";
    return ig__shape_str(g, &g->values[v].shape, buf, n);
}

/* The engine's graph as text: nodes with inputs, outputs and their shapes, provenance; then passes. */
static int inspect_optimized(ingot_runtime *rt, ingot_model *m, const char *path, int64_t batch, int json,
                             const ig_cli_opt *oo)
{
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    bo.n_threads = 1;
    ig__cli_opt_apply(oo, &bo);
    ingot_engine *e = NULL;
    if (ingot_engine_build(rt, m, &bo, &e) != INGOT_OK) {
        fprintf(stderr, "ingot: %s: %s\n", ingot_status_name(ingot_runtime_errcode(rt)), ingot_runtime_errmsg(rt));
        return 1;
    }
    int rc = 1;
    if (json) {
        char *js = NULL;
        if (ingot_engine_describe_json(e, &js) != INGOT_OK) {
            fprintf(stderr, "ingot: %s\n", ingot_runtime_errmsg(rt));
            goto out;
        }
        fputs(js, stdout);
        ingot_free(js);
        rc = 0;
        goto out;
    }
    const ig_graph *g = ig__engine_graph(e);
    const size_t *removed = NULL;
    const ig_opt_report *rep = ig__engine_report(e, &removed);
    if (!g) {
        fprintf(stderr, "ingot inspect: the engine's graph has no concrete shapes\n");
        goto out;
    }
    char b1[32], s[256];
    int32_t before = rep->n_passes ? rep->nodes_before : g->n_nodes;
    printf("engine: %s (CPU), batch %" PRId64 ", optimizer %s%s%s\n", path, batch ? batch : 1,
           bo.optimize ? "on" : "off", bo.disable_passes ? ", disabled: " : "",
           bo.disable_passes ? bo.disable_passes : "");
    printf("  %d nodes (the model has %d)\n", (int)g->n_nodes, (int)before);
    for (int32_t i = 0; i < g->n_inputs; i++)
        printf("  input   %-32s %-9s %s\n", g->values[g->inputs[i]].name,
               ingot_dtype_name(g->values[g->inputs[i]].dtype), shape_of(g, g->inputs[i], s, sizeof s));
    for (int32_t i = 0; i < g->n_outputs; i++)
        printf("  output  %-32s %-9s %s\n", g->values[g->outputs[i]].name,
               ingot_dtype_name(g->values[g->outputs[i]].dtype), shape_of(g, g->outputs[i], s, sizeof s));
    printf("\n%5s  %-28s %-20s %-14s %s\n", "#", "node", "op", "pass", "inputs -> outputs [shapes]; covers");
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const ig_node *n = &g->nodes[g->order[k]];
        char op[64];
        snprintf(op, sizeof op, "%s%s%s", n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type);
        printf("%5d  %-28.28s %-20.20s %-14.14s ", (int)k, n->name[0] ? n->name : "-", op, n->pass ? n->pass : "-");
        for (int32_t i = 0; i < n->n_inputs; i++)
            printf("%s%s", i ? ", " : "", n->inputs[i] < 0 ? "(none)" : g->values[n->inputs[i]].name);
        printf(" ->");
        for (int32_t i = 0; i < n->n_outputs; i++) {
            if (n->outputs[i] < 0) continue;
            printf(" %s %s", g->values[n->outputs[i]].name, shape_of(g, n->outputs[i], s, sizeof s));
        }
        if (n->folded) printf("  (folded)");
        if (n->n_covers) {
            printf("; covers");
            for (int32_t i = 0; i < n->n_covers; i++) printf("%s %s", i ? "," : "", n->covers[i]);
        }
        printf("\n");
    }
    if (rep->n_passes) {
        printf("\n%-16s %8s %8s %14s %14s %9s\n", "pass", "rewrites", "removed", "tensors gone", "bytes gone", "ms");
        for (int32_t p = 0; p < rep->n_passes; p++) {
            const ig_opt_pass_report *r = &rep->passes[p];
            if (r->skipped) {
                printf("%-16s %8s\n", r->name, "skipped");
                continue;
            }
            printf("%-16s %8d %8d %14d %13sB %9.3f\n", r->name, (int)r->n_rewrites, (int)r->n_nodes_removed,
                   (int)r->n_removed_values, human((double)(removed ? removed[p] : 0), b1, sizeof b1), r->ms);
        }
    }
    rc = 0;
out:
    ingot_engine_destroy(e);
    return rc;
}

int ig__cmd_inspect(int argc, char **argv)
{
    const char *path = NULL;
    int64_t batch = 0;
    int json = 0, optimized = 0;
    ig_cli_opt oo;
    ig__cli_opt_init(&oo);
    for (int i = 1; i < argc; i++) {
        int r = ig__cli_opt_arg(argc, argv, &i, &oo);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--optimized"))
            optimized = 1;
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
            if (!ig__cli_parse_i64("--batch", argv[++i], 1, &batch)) return 2;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            inspect_usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' || path) {
            fprintf(stderr, "ingot inspect: unexpected argument '%s'\n", argv[i]);
            inspect_usage(stderr);
            return 2;
        } else
            path = argv[i];
    }
    if (!path) {
        inspect_usage(stderr);
        return 2;
    }
    if (!optimized && (!oo.optimize || oo.disable[0])) {
        fprintf(stderr, "ingot inspect: --no-optimize and --disable-pass go with --optimized\n");
        return 2;
    }
    ingot_runtime *rt = NULL;
    if (ingot_runtime_create(&rt) != INGOT_OK) {
        fprintf(stderr, "ingot: out of memory\n");
        return 1;
    }
    int rc = 1;
    ingot_model *m = ig__cli_load_model(rt, path, batch);
    if (!m) goto out;
    if (optimized) {
        rc = inspect_optimized(rt, m, path, batch, json, &oo);
        goto out;
    }
    if (json) {
        char *js = NULL;
        if (ingot_model_describe_json(m, &js) != INGOT_OK) {
            fprintf(stderr, "ingot: %s\n", ingot_runtime_errmsg(rt));
            goto out;
        }
        fputs(js, stdout);
        ingot_free(js);
        rc = 0;
        goto out;
    }
    ingot_model_info mi;
    ingot_model_get_info(m, &mi);
    printf("model: %s\n", path);
    printf("  ir_version %" PRId64 ", opset %" PRId64 ", producer '%s %s', graph '%s'\n", mi.ir_version, mi.opset,
           mi.producer_name, mi.producer_version, mi.graph_name);
    print_io("inputs", m, ingot_model_input_count(m), ingot_model_input_info);
    print_io("outputs", m, ingot_model_output_count(m), ingot_model_output_info);
    char b1[32], b2[32];
    printf("parameters: %" PRId64 " (%sB as stored) in %" PRId64 " initializers\n", mi.n_params,
           human((double)mi.param_bytes, b1, sizeof b1), mi.n_initializers);

    /* costs need concrete shapes: bind a symbolic batch to 1 unless the user chose one */
    if (!batch && has_symbolic_inputs(m)) {
        batch = 1;
        if (ingot_model_set_batch(m, 1) != INGOT_OK || ingot_model_infer(m) != INGOT_OK) {
            fprintf(stderr, "ingot: %s\n", ingot_runtime_errmsg(rt));
            goto out;
        }
        ingot_model_get_info(m, &mi);
        printf("(symbolic leading dims bound to 1 for the figures below; use --batch N)\n");
    }
    printf("cost%s: %sFLOP, %sB moved (every node reads its inputs and writes its outputs once)",
           batch ? " at this batch" : "", human(mi.flops, b1, sizeof b1), human(mi.bytes_moved, b2, sizeof b2));
    if (mi.bytes_moved > 0) printf(", %.1f FLOP/byte", mi.flops / mi.bytes_moved);
    printf("\n");
    if (!mi.all_shapes_known) printf("note: some shapes stay symbolic; their nodes count 0 above\n");

    int64_t nn = ingot_model_node_count(m);
    struct {
        const char *op;
        int n;
    } *hist = calloc((size_t)nn + 1, sizeof *hist);
    int nh = 0;
    if (!hist) goto out;
    for (int64_t i = 0; i < nn; i++) {
        ingot_node_info ni;
        ingot_model_node_info(m, i, &ni);
        int j = 0;
        while (j < nh && strcmp(hist[j].op, ni.op_type)) j++;
        if (j == nh) hist[nh++].op = ni.op_type;
        hist[j].n++;
    }
    qsort(hist, (size_t)nh, sizeof *hist, cmp_count);
    printf("ops (%" PRId64 " nodes):", nn);
    for (int j = 0; j < nh; j++) printf("%s %s %d", j ? "," : "", hist[j].op, hist[j].n);
    printf("\n");
    free(hist);

    printf("\n%5s  %-36s %-20s %-26s %12s %11s %11s\n", "#", "node", "op", "output shape", "MFLOP", "KB read",
           "KB written");
    for (int64_t i = 0; i < nn; i++) {
        ingot_node_info ni;
        ingot_tensor_info t;
        char s[256] = "";
        ingot_model_node_info(m, i, &ni);
        const char *out0 = ingot_model_node_output(m, i, 0);
        if (out0 && *out0 && ingot_model_tensor_info(m, out0, &t) == INGOT_OK) ig__cli_format_shape(&t, s, sizeof s);
        printf("%5" PRId64 "  %-36.36s %-20.20s %-26.26s %12.3f %11.1f %11.1f%s\n", i, ni.name[0] ? ni.name : "-",
               ni.op_type, s, ni.flops / 1e6, ni.bytes_read / 1e3, ni.bytes_written / 1e3,
               ni.is_folded ? "  (folded)" : "");
    }
    rc = 0;
out:
    ingot_model_destroy(m);
    ingot_runtime_destroy(rt);
    return rc;
}
