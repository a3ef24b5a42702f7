/* cmd_inspect.c -- `ingot inspect`: what is inside a model, and what each node costs; with --optimized,
 * the graph a CPU engine runs after the optimizer (read through the library's internal headers, as
 * `ingot plan` does: node provenance has no public accessor beyond ingot_engine_describe_json).
 *
 * A model with ops ingot does not know fails to load at the first of them (inference stops there);
 * inspect then imports the file without inference and lists the whole graph and every node ingot
 * cannot run, so one look says everything that is missing. A model that loads gets the same list per
 * backend: the nodes without a CPU kernel and those the CUDA backend cannot lower. */
#include "cli.h"

#include "api/api_internal.h"
#ifdef INGOT_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void inspect_usage(FILE *f)
{
    fprintf(f, "usage: ingot inspect MODEL.onnx [--batch N] [--shapes NAME:DIMS[,...]] [--json]\n"
               "       ingot inspect MODEL.onnx --optimized [--batch N] [--shapes ...] [--json] [--no-optimize]\n"
               "                     [--disable-pass NAME[,NAME]]\n"
               "  --batch N          bind each input's symbolic leading dim to N; other dims stay symbolic\n"
               "                     (without --batch the text output binds the leading dims to 1 for its\n"
               "                     cost figures and says so; --json keeps them symbolic; --optimized binds\n"
               "                     1 either way)\n"
               "  --shapes N:DIMS    whole input shapes, e.g. --shapes input_ids:4x128 (repeatable)\n"
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

static int has_symbolic_inputs(const ig_cli_target *t)
{
    for (int64_t i = 0; i < ig__cli_input_count(t); i++) {
        ingot_tensor_info ti;
        ig__cli_input_info(t, i, &ti);
        for (int32_t k = 0; k < ti.rank; k++)
            if (ti.dims[k].symbol) return 1;
    }
    return 0;
}

/* Why ingot cannot take node n: NULL when it can (an op it knows, for this opset, with inference). */
static const char *node_problem(const ig_node *n, char *buf, size_t len)
{
    bool too_old = false;
    const ig_op_def *d = ig__op_find(n->domain, n->op_type, n->opset, &too_old);
    if (!d && too_old)
        snprintf(buf, len, "opset %d of this op is not supported", (int)n->opset);
    else if (!d)
        snprintf(buf, len, "op '%s%s%s' is not supported by ingot", n->domain[0] ? n->domain : "",
                 n->domain[0] ? "." : "", n->op_type);
    else if (!d->infer)
        snprintf(buf, len, "op is listed but has no shape inference yet");
    else if (!d->cpu)
        snprintf(buf, len, "no CPU kernel for this op");
    else
        return NULL;
    return buf;
}

/* The model failed to load on an unsupported op: import it without inference and show what there is,
 * then every node ingot cannot take (the loader stops at the first). Text: all of it on stdout;
 * --json: the list of problems on stderr (stdout stays empty: there is no model to describe). */
static void inspect_unloadable(const char *path, int json)
{
    ig_graph g;
    ig_err err = {0};
    ig_onnx_file *file = NULL;
    if (ig__graph_init(&g, &err) != INGOT_OK) return;
    if (ig__onnx_load_file(path, NULL, &g, &file, &err) != INGOT_OK) goto out; /* the error was printed */
    char s[256], why[256];
    int32_t bad = 0;
    for (int32_t k = 0; k < g.n_nodes; k++) bad += node_problem(&g.nodes[g.order[k]], why, sizeof why) != NULL;
    if (!json) {
        printf("model: %s (as imported: no shape inference, which stops at the first unsupported node)\n", path);
        printf("  ir_version %" PRId64 ", opset %d, producer '%s %s', graph '%s', %d nodes\n", g.ir_version,
               (int)ig__graph_opset(&g, ""), g.producer_name ? g.producer_name : "",
               g.producer_version ? g.producer_version : "", g.name ? g.name : "", (int)g.n_nodes);
        printf("inputs:\n");
        for (int32_t i = 0; i < g.n_inputs; i++) {
            const ig_value *v = &g.values[g.inputs[i]];
            printf("  %-32s %-9s %s\n", v->name, ingot_dtype_name(v->dtype), ig__shape_str(&g, &v->shape, s, sizeof s));
        }
        printf("outputs:\n");
        for (int32_t i = 0; i < g.n_outputs; i++) {
            const ig_value *v = &g.values[g.outputs[i]];
            printf("  %-32s %-9s %s\n", v->name, ingot_dtype_name(v->decl_dtype),
                   v->flags & IG_VAL_DECLARED ? ig__shape_str(&g, &v->decl_shape, s, sizeof s) : "?");
        }
        printf("\n%5s  %-36s %-24s %s\n", "#", "node", "op", "inputs -> outputs");
        for (int32_t k = 0; k < g.n_nodes; k++) {
            const ig_node *n = &g.nodes[g.order[k]];
            char op[96];
            snprintf(op, sizeof op, "%s%s%s", n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type);
            printf("%5d  %-36.36s %-24.24s ", (int)k, n->name[0] ? n->name : "-", op);
            for (int32_t i = 0; i < n->n_inputs; i++)
                printf("%s%s", i ? ", " : "", n->inputs[i] < 0 ? "(none)" : g.values[n->inputs[i]].name);
            printf(" ->");
            for (int32_t i = 0; i < n->n_outputs; i++)
                if (n->outputs[i] >= 0) printf("%s %s", i ? "," : "", g.values[n->outputs[i]].name);
            printf("%s\n", node_problem(n, why, sizeof why) ? "  UNSUPPORTED" : "");
        }
        printf("\n");
    }
    FILE *f = json ? stderr : stdout;
    fprintf(f, "unsupported: %d of %d nodes\n", (int)bad, (int)g.n_nodes);
    for (int32_t k = 0; k < g.n_nodes; k++) {
        const ig_node *n = &g.nodes[g.order[k]];
        if (node_problem(n, why, sizeof why)) fprintf(f, "  node '%s' (%s): %s\n", ig__node_label(n), n->op_type, why);
    }
out:
    ig__graph_free(&g);
    ig__onnx_close(file);
}

/* Per backend, every node of the (inferred) model graph it cannot run. */
static void print_support(const ingot_model *m)
{
    const ig_graph *g = &m->g;
    char why[256];
    int32_t bad = 0;
    for (int32_t k = 0; k < g->n_nodes; k++) bad += !g->nodes[k].folded && node_problem(&g->nodes[k], why, sizeof why);
    printf("support:\n  CPU backend: ");
    if (!bad)
        printf("every node has a kernel\n");
    else {
        printf("%d node%s cannot run:\n", (int)bad, bad == 1 ? "" : "s");
        for (int32_t k = 0; k < g->n_nodes; k++) {
            const ig_node *n = &g->nodes[g->order[k]];
            if (!n->folded && node_problem(n, why, sizeof why))
                printf("    node '%s' (%s): %s\n", ig__node_label(n), n->op_type, why);
        }
    }
#ifdef INGOT_HAVE_CUDA
    ig_err err = {0};
    if (ig__cuda_check_graph(g, &err) == INGOT_OK)
        printf("  CUDA backend: every node can be lowered (checked on the graph as imported)\n");
    else
        printf("  CUDA backend: %s\n", err.msg);
#else
    printf("  CUDA backend: not in this build\n");
#endif
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
static int inspect_optimized(ig_cli_target *t, int json, const ig_cli_opt *oo)
{
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = t->model ? INGOT_BACKEND_CPU : INGOT_BACKEND_AUTO; /* an engine file: as built */
    bo.n_threads = 1;
    ig__cli_opt_apply(oo, &bo);
    if (!ig__cli_build(t, &bo)) return 1;
    const ingot_engine *e = t->engine;
    if (json) {
        char *js = NULL;
        if (ingot_engine_describe_json(e, &js) != INGOT_OK) {
            ig__cli_print_rt_error(t, NULL);
            return 1;
        }
        fputs(js, stdout);
        ingot_free(js);
        return 0;
    }
    const ig_graph *g = ig__engine_graph(e);
    const size_t *removed = NULL;
    const ig_opt_report *rep = ig__engine_report(e, &removed);
    if (!g) {
        fprintf(stderr, "ingot inspect: the engine's graph has no concrete shapes\n");
        return 1;
    }
    char b1[32], s[256];
    int32_t before = rep->n_passes ? rep->nodes_before : g->n_nodes;
    if (t->model)
        printf("engine: %s (CPU), batch %" PRId64 ", optimizer %s%s%s\n", t->path, t->batch, bo.optimize ? "on" : "off",
               bo.disable_passes ? ", disabled: " : "", bo.disable_passes ? bo.disable_passes : "");
    else /* the graph the file holds, at its default shapes */
        printf("engine file: %s (%s engine), its default shapes\n", t->path,
               ingot_engine_backend(e) == INGOT_BACKEND_CUDA ? "CUDA" : "CPU");
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
    return 0;
}

int ig__cmd_inspect(int argc, char **argv)
{
    const char *path = NULL;
    int json = 0, optimized = 0;
    ig_cli_opt oo;
    ig__cli_opt_init(&oo);
    ig_cli_target t;
    ig__cli_target_init(&t, "ingot inspect");
    for (int i = 1; i < argc; i++) {
        int r = ig__cli_opt_arg(argc, argv, &i, &oo);
        if (r == 0) r = ig__cli_shapes_arg(t.cmd, argc, argv, &i, &t.shapes);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--optimized"))
            optimized = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
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
    if (!optimized && (!oo.optimize || oo.disable[0]) && !ig__cli_is_engine_file(path)) {
        fprintf(stderr, "ingot inspect: --no-optimize and --disable-pass go with --optimized\n");
        return 2;
    }
    int rc = 1;
    if (!ig__cli_open(&t, path)) {
        if (t.rt && ingot_runtime_errcode(t.rt) == INGOT_ERR_MODEL_UNSUPPORTED_OP) inspect_unloadable(path, json);
        goto out;
    }
    if (optimized || !t.model) { /* an engine file holds the optimized graph */
        /* the engine's graph at concrete shapes: leading dims default to 1, text needs every dim bound */
        if (ig__cli_bind(&t, IG_CLI_BIND_DEFAULT_1 | (json ? 0 : IG_CLI_BIND_CONCRETE), NULL, 0))
            rc = inspect_optimized(&t, json, &oo);
        goto out;
    }
    if (!ig__cli_bind(&t, 0, NULL, 0)) goto out;
    ingot_model *m = t.model;
    if (json) {
        char *js = NULL;
        if (ingot_model_describe_json(m, &js) != INGOT_OK) {
            ig__cli_print_rt_error(&t, NULL);
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

    /* costs need concrete shapes: without --batch, bind the symbolic leading dims to 1, and say so */
    if (!t.shapes.batch && has_symbolic_inputs(&t)) {
        if (!ig__cli_bind(&t, IG_CLI_BIND_DEFAULT_1 | IG_CLI_BIND_QUIET, NULL, 0)) goto out;
        ingot_model_get_info(m, &mi);
        if (t.bound[0]) printf("(for the figures below: %s)\n", t.bound);
    }
    printf("cost%s: %sFLOP, %sB moved (every node reads its inputs and writes its outputs once)",
           has_symbolic_inputs(&t) ? "" : " at these shapes", human(mi.flops, b1, sizeof b1),
           human(mi.bytes_moved, b2, sizeof b2));
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
        ingot_tensor_info ti;
        char s[256] = "";
        ingot_model_node_info(m, i, &ni);
        const char *out0 = ingot_model_node_output(m, i, 0);
        if (out0 && *out0 && ingot_model_tensor_info(m, out0, &ti) == INGOT_OK) ig__cli_format_shape(&ti, s, sizeof s);
        printf("%5" PRId64 "  %-36.36s %-20.20s %-26.26s %12.3f %11.1f %11.1f%s\n", i, ni.name[0] ? ni.name : "-",
               ni.op_type, s, ni.flops / 1e6, ni.bytes_read / 1e3, ni.bytes_written / 1e3,
               ni.is_folded ? "  (folded)" : "");
    }
    printf("\n");
    print_support(m);
    rc = 0;
out:
    ig__cli_close(&t);
    return rc;
}
