/*
 * opt_harness.h -- what the optimizer's tests share (test_opt.c, test_opt_fusion.c): building small
 * graphs by name, finding what a pass made, and running a graph on the CPU at given inputs to compare
 * the optimized graph with the graph as built.
 */
#ifndef INGOT_TEST_OPT_HARNESS_H
#define INGOT_TEST_OPT_HARNESS_H

#include "cpu/exec.h"
#include "opt/opt_internal.h"
#include "test.h"

#include "graph_builder.h"

#include <math.h>
#include <stdlib.h>

/* ---- building graphs ---------------------------------------------------------------------------- */

#ifndef OPT_HARNESS_SEED
#define OPT_HARNESS_SEED 0x9E3779B97F4A7C15ull
#endif
static uint64_t rng = OPT_HARNESS_SEED;
static double drand(double lo, double hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

/* Graph inputs and outputs by name (comma-separated), the default opset 17. */
static void t_io(T *t, const char *ins, const char *outs)
{
    char in[16][32], out[16][32];
    int ni = split_names(ins, in), no = split_names(outs, out);
    ig_graph *g = &t->g;
    g->opsets = ig__arena_alloc(&g->arena, sizeof(ig_opset));
    g->opsets[0] = (ig_opset){"", 17};
    g->n_opsets = 1;
    g->inputs = ig__arena_array(&g->arena, 16, sizeof(int32_t));
    g->outputs = ig__arena_array(&g->arena, 16, sizeof(int32_t));
    for (int i = 0; i < ni; i++) g->inputs[g->n_inputs++] = ig__graph_find(g, in[i]);
    for (int i = 0; i < no; i++) {
        int32_t v = ig__graph_value(g, out[i], &t->err);
        g->values[v].flags |= IG_VAL_OUTPUT;
        g->outputs[g->n_outputs++] = v;
    }
}

/* A node named `name` (opset 17 unless changed after). */
static ig_node *nd(T *t, const char *name, const char *op, const char *ins, const char *outs)
{
    ig_node *n = t_node(t, op, 17, ins, outs);
    n->name = ig__arena_strdup(&t->g.arena, name);
    return n;
}

static void scalar_f(T *t, const char *name, float v) { t_const(t, name, INGOT_DTYPE_FLOAT, 0, NULL, &v); }

/* A float initializer of random values in [lo, hi). */
static void rand_f(T *t, const char *name, int rank, const int64_t *dims, double lo, double hi)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    float *p = malloc(sizeof(float) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) p[i] = (float)drand(lo, hi);
    t_f32(t, name, rank, dims, p);
    free(p);
}

/* An input of dtype dt whose dims are given as numbers, 0 standing for the symbol "batch" and -1 for
 * the symbol "seq". */
static ig_value *in_t(T *t, const char *name, ingot_dtype dt, int rank, const int64_t *dims)
{
    ig_dim d[IG_MAX_RANK];
    for (int i = 0; i < rank; i++) d[i] = dims[i] == 0 ? S(t, "batch") : dims[i] < 0 ? S(t, "seq") : D(dims[i]);
    return t_input(t, name, dt, rank, d);
}

static ig_value *in_f(T *t, const char *name, int rank, const int64_t *dims)
{
    return in_t(t, name, INGOT_DTYPE_FLOAT, rank, dims);
}

static ingot_status prep(T *t)
{
    ig__err_clear(&t->err);
    ingot_status st = ig__graph_toposort(&t->g, &t->err);
    ig_infer_options io = {.fold_max_bytes = 64 << 10};
    if (st == INGOT_OK) st = ig__graph_infer(&t->g, &io, &t->fold, &t->err);
    return st;
}

static ingot_status reinfer(T *t)
{
    ig__arena_free(&t->fold);
    ig__arena_init(&t->fold);
    ig_infer_options io = {.fold_max_bytes = 64 << 10};
    return ig__graph_infer(&t->g, &io, &t->fold, &t->err);
}

static int32_t live_count(const ig_graph *g, const char *op)
{
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && (!op || !strcmp(g->nodes[i].op_type, op))) n++;
    return n;
}

static const ig_node *find_op(const ig_graph *g, const char *op)
{
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && !strcmp(g->nodes[i].op_type, op)) return &g->nodes[i];
    return NULL;
}

/* The k-th live node of op in g->order. */
static const ig_node *find_nth(const ig_graph *g, const char *op, int k)
{
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ig_node *n = &g->nodes[g->order[i]];
        if (!n->dead && !strcmp(n->op_type, op) && k-- == 0) return n;
    }
    return NULL;
}

static const ig_opt_pass_report *pass_rep(const ig_opt_report *r, const char *name)
{
    for (int32_t i = 0; i < r->n_passes; i++)
        if (!strcmp(r->passes[i].name, name)) return &r->passes[i];
    return NULL;
}

static int32_t vid(T *t, const char *name) { return ig__graph_find(&t->g, name); }

/* The program of a fused node, formatted ("x0,x1 -> t0=ADD(x0,x1) t1=RELU(t0)"). */
static const char *prog_str(T *t, const ig_node *n)
{
    static char buf[4][512];
    static int k;
    char *b = buf[k++ % 4];
    bool pw = !strcmp(n->op_type, "Pointwise");
    int32_t n_in = pw ? n->n_inputs : 1 + (n->n_inputs > 3 ? n->n_inputs - 3 : 0);
    ig_pw_prog p;
    ig_err e = {0};
    if (ig__pw_decode(&t->g, n, pw ? "" : "epilogue_", n_in, &p, &e) != INGOT_OK) {
        snprintf(b, 512, "decode failed: %.400s", e.msg);
        return b;
    }
    ig__pw_format(&p, b, 512);
    return b;
}

/* The disable list naming every pass but those in keep (comma-separated). */
static const char *only(const char *keep)
{
    static char buf[512];
    size_t off = 0;
    buf[0] = 0;
    for (int32_t i = 0; i < ig__opt_pass_count(); i++) {
        const char *nm = ig__opt_pass_name(i);
        char pat[64];
        snprintf(pat, sizeof pat, ",%s,", nm);
        char kk[256];
        snprintf(kk, sizeof kk, ",%s,", keep);
        if (strstr(kk, pat)) continue;
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s", off ? "," : "", nm);
    }
    return buf;
}

/* ---- running graphs ------------------------------------------------------------------------------ */

typedef struct outs_t {
    int n;
    double *v[8];
    int64_t numel[8];
} outs_t;

static void outs_free(outs_t *o)
{
    for (int i = 0; i < o->n; i++) free(o->v[i]);
    memset(o, 0, sizeof *o);
}

/* Plan, check the plan, run on the CPU with inputs drawn from seed; outputs as doubles. */
static ingot_status run_graph(T *t, uint64_t seed, outs_t *o)
{
    ig_graph *g = &t->g;
    memset(o, 0, sizeof *o);
    ig_plan plan = {0};
    ig_plan_options po = ig__plan_options_default();
    ig_cpu_weights w = {0};
    ig_cpu_exec x = {0};
    ig__err_clear(&t->err);
    ingot_status st = ig__plan_graph(g, &po, &plan, &t->err);
    if (!st) st = ig__plan_check(g, &plan, &t->err);
    if (!st) st = ig__cpu_weights_make(&w, g, &t->err);
    if (!st) st = ig__cpu_prepare(&x, g, &plan, &w, NULL, false, NULL, &t->err);
    uint64_t saved = rng;
    rng = seed;
    for (int32_t i = 0; !st && i < g->n_inputs; i++) {
        if (g->values[g->inputs[i]].flags & IG_VAL_CONST) continue;
        const ig_tensor *te = &x.t[g->inputs[i]];
        size_t bytes = (size_t)te->numel * ingot_dtype_size(te->dtype);
        void *buf = malloc(bytes + 8);
        for (int64_t k = 0; k < te->numel; k++) ig__elem_set_f64(te->dtype, buf, k, drand(-3, 3));
        ig__cpu_set_input(&x, i, buf, bytes);
        free(buf);
    }
    rng = saved;
    if (!st) st = ig__cpu_run(&x, &t->err);
    for (int32_t k = 0; !st && k < g->n_outputs; k++) {
        const ig_tensor *te = &x.t[g->outputs[k]];
        o->numel[k] = te->numel;
        o->v[k] = malloc(sizeof(double) * (size_t)(te->numel + 1));
        for (int64_t i = 0; i < te->numel; i++) o->v[k][i] = ig__elem_f64(te->dtype, te->data, i);
        o->n++;
    }
    if (st) fprintf(stderr, "  run: %s\n", t->err.msg);
    ig__cpu_release(&x);
    ig__cpu_weights_free(&w);
    ig__plan_free(&plan);
    return st;
}

/* Max over outputs of |a - b| / max(1, |b|) (NaN equal to NaN); -1 when the shapes differ. */
static double max_rel(const outs_t *a, const outs_t *b)
{
    if (a->n != b->n) return -1;
    double m = 0;
    for (int k = 0; k < a->n; k++) {
        if (a->numel[k] != b->numel[k]) return -1;
        for (int64_t i = 0; i < a->numel[k]; i++) {
            double x = a->v[k][i], y = b->v[k][i];
            if (isnan(x) && isnan(y)) continue;
            double d = fabs(x - y) / fmax(1.0, fabs(y));
            if (!(d <= m)) m = isnan(d) ? 1e30 : d;
        }
    }
    return m;
}

#endif /* INGOT_TEST_OPT_HARNESS_H */
