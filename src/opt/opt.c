/*
 * opt.c -- the pass manager (docs/OPTIMIZER.md): the pass table, the disable list, and after every
 * pass that changed the graph: compaction, sorting, re-inference and verification, so a pass never
 * hands a broken graph on. Also the helpers opt_internal.h declares for the passes.
 *
 * The report counts, per pass, the rewrites the pass made, the nodes it removed (net: a pass that
 * splits a node may add some) and the intermediate tensors that no longer exist: values a live node
 * computed at run time before the pass (not build-time constants) that no live node produces after
 * it and that are not graph outputs. Values are never deleted, so those ids stay valid.
 */
#include "opt_internal.h"

#include <math.h>
#include <stdio.h>

#define DEFAULT_FOLD_MAX_BYTES   ((size_t)1 << 30)
#define DEFAULT_INFER_FOLD_BYTES ((size_t)64 << 10)

#define IG_OPT_ENTRY(name) {#name, ig__opt_pass_##name},
static const ig_opt_pass pass_table[] = {IG_OPT_PASSES(IG_OPT_ENTRY)};
#undef IG_OPT_ENTRY
#define N_PASSES ((int32_t)(sizeof pass_table / sizeof pass_table[0]))

int32_t ig__opt_pass_count(void) { return N_PASSES; }
const char *ig__opt_pass_name(int32_t i) { return i >= 0 && i < N_PASSES ? pass_table[i].name : NULL; }

void ig__opt_report_free(ig_opt_report *rep)
{
    if (!rep) return;
    for (int32_t i = 0; i < rep->n_passes; i++) ig__free(rep->passes[i].removed_values);
    ig__free(rep->passes);
    memset(rep, 0, sizeof *rep);
}

/* ---- the disable list --------------------------------------------------------------------------- */

/* Mark the passes named in the comma-separated list (spaces around names allowed). An unknown name
 * fails, listing the valid ones. */
static ingot_status parse_disable(const char *list, const ig_opt_pass *passes, int32_t n, bool *skip, ig_err *err)
{
    for (const char *s = list; s && *s;) {
        while (*s == ' ' || *s == ',') s++;
        const char *e = s;
        while (*e && *e != ',') e++;
        size_t len = (size_t)(e - s);
        while (len && s[len - 1] == ' ') len--;
        if (len) {
            int32_t k = 0;
            while (k < n && !(strlen(passes[k].name) == len && !strncmp(passes[k].name, s, len))) k++;
            if (k == n) {
                char names[512];
                size_t off = 0;
                names[0] = 0;
                for (int32_t i = 0; i < n && off < sizeof names; i++)
                    off += (size_t)snprintf(names + off, sizeof names - off, "%s%s", i ? ", " : "", passes[i].name);
                return ig__errf(err, INGOT_ERR_INVALID_ARG,
                                "unknown optimizer pass '%.*s' in the disable list (the passes are: %s)", (int)len, s,
                                names);
            }
            skip[k] = true;
        }
        s = e;
    }
    return INGOT_OK;
}

/* ---- one pass ------------------------------------------------------------------------------------ */

/* Values computed from a graph input, in the order's direction. */
/* Values that are constant now only because of a graph input's bound values (a shape input bound with
 * data): computed from one. Shapes do not count: the graph is inferred at its declared shapes, so a
 * value Shape gives (and what is computed from it) holds for every shape the graph runs with. */
static void mark_varies(const ig_graph *g, bool *varies)
{
    for (int32_t v = 0; v < g->n_values; v++) {
        uint32_t f = g->values[v].flags;
        varies[v] = (f & IG_VAL_INPUT) && (f & IG_VAL_CONST);
    }
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const ig_node *n = &g->nodes[g->order[k]];
        if (n->op == IG_OP_shape) continue;
        bool any = false;
        for (int32_t i = 0; i < n->n_inputs && !any; i++) any = n->inputs[i] >= 0 && varies[n->inputs[i]];
        for (int32_t j = 0; any && j < n->n_outputs; j++)
            if (n->outputs[j] >= 0) varies[n->outputs[j]] = true;
    }
}

/* Run-time intermediates: produced by a live node, not known at build time. */
static void mark_computed(const ig_graph *g, bool *computed)
{
    for (int32_t v = 0; v < g->n_values; v++) {
        const ig_value *val = &g->values[v];
        computed[v] = val->producer >= 0 && !g->nodes[val->producer].dead && !(val->flags & IG_VAL_CONST);
    }
}

static int32_t live_nodes(const ig_graph *g)
{
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) n += !g->nodes[i].dead;
    return n;
}

/* After a pass changed the graph: compact, sort, infer, verify. Failures name the pass. */
static ingot_status settle(ig_graph *g, ig_arena *fa, const ig_opt_options *o, const char *pass, ig_err *err)
{
    ig_err e = {0};
    ingot_status st = ig__graph_compact(g, &e);
    if (st == INGOT_OK) {
        /* every value pointing into the fold arena is recomputed by the inference: start it afresh so
         * the folds of six inferences do not pile up */
        ig__arena_free(fa);
        ig__arena_init(fa);
        ig_infer_options io = {.fold_max_bytes = o->infer_fold_bytes ? o->infer_fold_bytes : DEFAULT_INFER_FOLD_BYTES};
        st = ig__graph_infer(g, &io, fa, &e);
    }
    if (st == INGOT_OK) st = ig__graph_verify(g, &e);
    if (st == INGOT_OK) return INGOT_OK;
    if (st == INGOT_ERR_OUT_OF_MEMORY) return ig__errf(err, st, "optimizer pass '%s': %s", pass, e.msg);
    return ig__errf(err, INGOT_ERR_INTERNAL, "optimizer pass '%s': %s", pass, e.msg);
}

static ingot_status run_pass(ig_graph *g, ig_arena *fa, const ig_opt_options *o, const ig_opt_pass *p,
                             ig_opt_pass_report *r, ig_err *err)
{
    ingot_status st = INGOT_OK;
    double t0 = ig__now_ms();
    int32_t nv = g->n_values, before = live_nodes(g), n_gone = 0;
    bool *varies = ig__malloc((size_t)nv + 1), *computed = ig__malloc((size_t)nv + 1);
    ig_err e = {0};
    ig_opt_ctx cx = {.g = g, .fold_arena = fa, .o = o, .pass = p->name, .err = &e, .varies = varies, .n_varies = nv};
    if (!varies || !computed) {
        st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "optimizer pass '%s': out of memory", p->name);
        goto out;
    }
    mark_varies(g, varies);
    mark_computed(g, computed);
    if ((st = p->run(&cx)) != INGOT_OK) {
        st = ig__errf(err, st, "optimizer pass '%s': %s", p->name, e.msg[0] ? e.msg : ingot_status_str(st));
        goto out;
    }
    r->n_rewrites = cx.n_rewrites;
    if ((cx.n_rewrites > 0 || cx.changed) && (st = settle(g, fa, o, p->name, err)) != INGOT_OK) goto out;
    r->n_nodes_removed = before - live_nodes(g);
    for (int32_t k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] >= 0 && g->outputs[k] < nv) computed[g->outputs[k]] = false;
    for (int32_t v = 0; v < nv; v++) {
        computed[v] = computed[v] && g->values[v].producer < 0;
        n_gone += computed[v];
    }
    if (n_gone) {
        if (!(r->removed_values = ig__malloc(sizeof(int32_t) * (size_t)n_gone))) {
            st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "optimizer pass '%s': out of memory", p->name);
            goto out;
        }
        for (int32_t v = 0; v < nv; v++)
            if (computed[v]) r->removed_values[r->n_removed_values++] = v;
    }
out:
    r->ms = ig__now_ms() - t0;
    ig__free(varies);
    ig__free(computed);
    return st;
}

ingot_status ig__opt_run(ig_graph *g, ig_arena *fold_arena, const ig_opt_options *o, const ig_opt_pass *passes,
                         int32_t n_passes, ig_opt_report *rep, ig_err *err)
{
    static const ig_opt_options defaults = {.enabled = true};
    if (!o) o = &defaults;
    if (rep) memset(rep, 0, sizeof *rep);
    ingot_status st = INGOT_OK;
    bool *skip = ig__calloc((size_t)n_passes + 1, sizeof(bool));
    ig_opt_pass_report *pr = ig__calloc((size_t)n_passes + 1, sizeof *pr);
    if (!skip || !pr) {
        st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory starting the optimizer");
        goto out;
    }
    if ((st = parse_disable(o->disable, passes, n_passes, skip, err)) != INGOT_OK) goto out;
    if (g->n_nodes && !g->order) {
        st = ig__errf(err, INGOT_ERR_INTERNAL, "optimizer: the graph is not sorted");
        goto out;
    }
    int32_t nodes_before = live_nodes(g);
    for (int32_t i = 0; i < n_passes; i++) {
        pr[i].name = passes[i].name;
        pr[i].skipped = skip[i] || !o->enabled;
        if (pr[i].skipped) continue;
        if ((st = run_pass(g, fold_arena, o, &passes[i], &pr[i], err)) != INGOT_OK) break;
    }
    if (rep && st == INGOT_OK) { /* a failed run reports nothing: the graph is not one to describe */
        rep->n_passes = n_passes;
        rep->passes = pr;
        rep->nodes_before = nodes_before;
        rep->nodes_after = live_nodes(g);
        pr = NULL;
    }
out:
    if (pr)
        for (int32_t i = 0; i < n_passes; i++) ig__free(pr[i].removed_values);
    ig__free(pr);
    ig__free(skip);
    return st;
}

ingot_status ig__optimize(ig_graph *g, ig_arena *fold_arena, const ig_opt_options *o, ig_opt_report *rep, ig_err *err)
{
    return ig__opt_run(g, fold_arena, o, pass_table, N_PASSES, rep, err);
}

/* ---- helpers for the passes ------------------------------------------------------------------------ */

bool ig__opt_is_const(const ig_opt_ctx *cx, int32_t v)
{
    if (v < 0 || v >= cx->g->n_values) return false;
    const ig_value *val = &cx->g->values[v];
    if (!(val->flags & IG_VAL_CONST) || (val->flags & IG_VAL_INPUT)) return false;
    if (v < cx->n_varies && cx->varies[v]) return false;
    return val->c.data || !val->c.n_bytes;
}

int64_t ig__opt_const_numel(const ig_opt_ctx *cx, int32_t v)
{
    if (!ig__opt_is_const(cx, v)) return -1;
    const ig_const *c = &cx->g->values[v].c;
    int64_t n = 1;
    for (int32_t k = 0; k < c->rank; k++) n *= c->dims[k];
    return n;
}

bool ig__opt_const_scalar(const ig_opt_ctx *cx, int32_t v, double *out)
{
    if (ig__opt_const_numel(cx, v) != 1) return false;
    const ig_const *c = &cx->g->values[v].c;
    if (c->n_bytes != ingot_dtype_size(c->dtype)) return false;
    *out = ig__elem_f64(c->dtype, c->data, 0);
    return true;
}

bool ig__opt_scalar_near(const ig_opt_ctx *cx, int32_t v, int32_t max_rank, double want, double rel)
{
    double k;
    if (!ig__opt_const_scalar(cx, v, &k) || cx->g->values[v].c.rank > max_rank) return false;
    return fabs(k - want) <= rel * fabs(want);
}

int32_t ig__opt_other_input(const ig_node *n, int32_t v)
{
    if (n->n_inputs != 2) return -1;
    if (n->inputs[0] == v) return n->inputs[1];
    if (n->inputs[1] == v) return n->inputs[0];
    return -1;
}

/* Import domain (version 1) into g unless it is imported already. */
static bool import_domain(ig_graph *g, const char *domain)
{
    if (ig__graph_opset(g, domain) > 0) return true;
    ig_opset *ops = ig__arena_array(&g->arena, (size_t)g->n_opsets + 1, sizeof(ig_opset));
    const char *d = ig__arena_strdup(&g->arena, domain);
    if (!ops || !d) return false;
    if (g->n_opsets) memcpy(ops, g->opsets, sizeof(ig_opset) * (size_t)g->n_opsets);
    ops[g->n_opsets] = (ig_opset){d, 1};
    g->opsets = ops;
    g->n_opsets++;
    return true;
}

int32_t ig__opt_add_node(ig_opt_ctx *cx, const char *name, const char *op_type, const char *domain, int32_t opset,
                         int32_t n_inputs, int32_t n_outputs, int32_t n_attrs)
{
    ig_graph *g = cx->g;
    bool def = !domain || !domain[0] || !strcmp(domain, "ai.onnx");
    if (!def && !import_domain(g, domain)) {
        ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory importing domain '%s'", domain);
        return -1;
    }
    int32_t id = ig__graph_add_node(g, name, op_type, domain, n_inputs, n_outputs, n_attrs, cx->err);
    if (id < 0) return -1;
    g->nodes[id].pass = cx->pass;
    g->nodes[id].opset = opset;
    return id;
}

int32_t ig__opt_copy_node(ig_opt_ctx *cx, int32_t src, int32_t slot, int32_t in, int32_t out)
{
    ig_graph *g = cx->g;
    const ig_node *s = &g->nodes[src];
    int32_t id = ig__opt_add_node(cx, s->name, s->op_type, s->domain, s->opset, s->n_inputs, s->n_outputs, s->n_attrs);
    if (id < 0) return -1;
    s = &g->nodes[src];
    ig_node *n = &g->nodes[id];
    for (int32_t i = 0; i < s->n_attrs; i++)
        if (ig__node_copy_attr(g, n, i, &s->attrs[i], cx->err) != INGOT_OK) return -1;
    for (int32_t i = 0; i < s->n_inputs; i++) n->inputs[i] = s->inputs[i];
    if (in >= 0) n->inputs[slot] = in;
    for (int32_t j = 0; j < s->n_outputs; j++) n->outputs[j] = -1;
    if (ig__opt_set_covers(cx, id, &src, 1) != INGOT_OK) return -1;
    ig__opt_set_output(g, id, 0, out);
    return id;
}

ingot_status ig__opt_set_covers(ig_opt_ctx *cx, int32_t made, const int32_t *replaced, int32_t n_replaced)
{
    ig_graph *g = cx->g;
    int32_t total = 0;
    for (int32_t i = 0; i < n_replaced; i++) {
        const ig_node *r = &g->nodes[replaced[i]];
        total += r->n_covers > 0 ? r->n_covers : 1;
    }
    const char **cov = ig__arena_array(&g->arena, (size_t)total + 1, sizeof(char *));
    if (!cov) goto oom;
    int32_t k = 0;
    for (int32_t i = 0; i < n_replaced; i++) {
        const ig_node *r = &g->nodes[replaced[i]];
        if (r->n_covers > 0) {
            /* a node made of two that both covered the same one (patchify's MatMul and bias Add both
             * replace the Conv) lists it once */
            for (int32_t j = 0; j < r->n_covers; j++)
                if (k == 0 || strcmp(cov[k - 1], r->covers[j]) != 0) cov[k++] = r->covers[j];
        } else if (!(cov[k++] = ig__arena_printf(&g->arena, "%s (%s)", ig__node_label(r), r->op_type))) {
            goto oom;
        }
    }
    g->nodes[made].covers = cov;
    g->nodes[made].n_covers = k;
    return INGOT_OK;
oom:
    return ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory recording what node '%s' replaces",
                    ig__node_label(&g->nodes[made]));
}

void ig__opt_set_output(ig_graph *g, int32_t node, int32_t j, int32_t v)
{
    g->nodes[node].outputs[j] = v;
    g->values[v].producer = node;
}

ingot_status ig__opt_replace(ig_opt_ctx *cx, int32_t made, const int32_t *replaced, int32_t n, int32_t y)
{
    ingot_status st = ig__opt_set_covers(cx, made, replaced, n);
    if (st != INGOT_OK) return st;
    for (int32_t i = 0; i < n; i++) ig__graph_remove_node(cx->g, replaced[i]);
    ig__opt_set_output(cx->g, made, 0, y);
    cx->n_rewrites++;
    return INGOT_OK;
}

ingot_status ig__opt_walk(ig_opt_ctx *cx, bool in_order, ig_opt_visit_fn visit)
{
    ig_graph *g = cx->g;
    ig_opt_walk w = {.pos = NULL, .cap = 0};
    ingot_status st = ig__uses_build(g, &w.u, cx->err);
    if (st != INGOT_OK) return st;
    if (in_order) st = ig__opt_order_pos(cx, &w.pos, &w.cap);
    int32_t n0 = g->n_nodes;
    for (int32_t k = 0; k < n0 && st == INGOT_OK; k++) st = visit(cx, &w, in_order ? g->order[k] : k);
    ig__free(w.pos);
    ig__uses_free(&w.u);
    return st;
}
