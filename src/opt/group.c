/*
 * group.c -- pointwise groups: the growth rule conv_epilogue, gemm_epilogue and pointwise share
 * (docs/OPTIMIZER.md), and two small shape helpers of the fusion passes.
 *
 * A group is a set of elementwise nodes (members) that one pointwise program computes, reading
 * external values and producing one final value. Three rules make replacing it by one node valid for
 * every shape the graph runs with:
 *
 *  - every member's output has exactly the group's shape (rank and dims equal as ig__dim_eq proves,
 *    never by accident of bound shapes), so every member input broadcasts to it and the program,
 *    evaluated per output element, computes each member's value at that element;
 *  - external inputs are build-time constants, graph inputs or outputs of nodes before the anchor in
 *    g->order. Every member depends on the anchor (it reads a group value), so no external input can
 *    depend on a member and the fused node closes no cycle;
 *  - the group is closed: every group value other than the final one is read only by members and is
 *    not a graph output, so removing the members loses nothing anyone else reads.
 *
 * Growth adds the earliest node (in g->order) that may join, rebuilds the program from scratch (the
 * inputs come first in SSA numbering, so a new external input renumbers every instruction), stops at
 * the first candidate that breaks a limit, and keeps the last closed state.
 *
 * Use lists are built once per pass: nodes a pass removed are still listed and are skipped as dead,
 * and a fused node the pass made reads only values produced before its anchor, which no later group
 * (anchors are visited in order) can hold as a group value.
 */
#include "opt_internal.h"

/* inputs of a member node a program can take (Max/Min are variadic) */
#define MAX_NODE_IN 8

bool ig__opt_shape_eq(const ig_shape *a, const ig_shape *b)
{
    if (a->rank < 0 || a->rank != b->rank) return false;
    for (int32_t k = 0; k < a->rank; k++)
        if (!ig__dim_eq(a->d[k], b->d[k])) return false;
    return true;
}

bool ig__opt_rank_scalar(const ig_opt_ctx *cx, int32_t v, int32_t max_rank, double *k)
{
    return ig__opt_const_scalar(cx, v, k) && cx->g->values[v].c.rank <= max_rank;
}

ingot_status ig__opt_order_pos(ig_opt_ctx *cx, int32_t **pos, int32_t *cap)
{
    const ig_graph *g = cx->g;
    *cap = 2 * g->n_nodes + 16;
    *pos = ig__malloc(sizeof(int32_t) * (size_t)*cap);
    if (!*pos) return ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory ordering %d nodes", (int)g->n_nodes);
    for (int32_t i = 0; i < *cap; i++) (*pos)[i] = -1;
    for (int32_t k = 0; k < g->n_nodes; k++) (*pos)[g->order[k]] = k;
    return INGOT_OK;
}

/* ---- the group's values ------------------------------------------------------------------------- */

/* Index of v among the group values of a state: 0 the seed, 1 + i member i's output; -1 if none. */
static int32_t group_value(const ig_graph *g, const ig_opt_group *gr, const int32_t *members, int32_t n, int32_t v)
{
    if (v < 0) return -1;
    if (v == gr->seed) return 0;
    for (int32_t i = 0; i < n; i++)
        if (g->nodes[members[i]].outputs[0] == v) return 1 + i;
    return -1;
}

/* The data inputs of a member (Clip's bounds are parameters folded into the instruction). */
static int32_t data_inputs(const ig_node *n) { return n->op == IG_OP_clip ? 1 : n->n_inputs; }

/* A scalar constant the program folds into an instruction's k. */
static bool foldable(const ig_opt_ctx *cx, int32_t v)
{
    double k;
    return ig__opt_is_const(cx, v) && ig__pw_scalar_const(cx->g, v, &k);
}

/* May v be read from outside the group: a constant, a graph input, produced before the anchor? */
static bool external(const ig_opt_ctx *cx, const int32_t *pos, const ig_opt_group *gr, int32_t v)
{
    const ig_graph *g = cx->g;
    int32_t p = g->values[v].producer;
    if (p < 0) return (g->values[v].flags & (IG_VAL_INPUT | IG_VAL_INITIALIZER | IG_VAL_CONST)) != 0;
    if (ig__opt_is_const(cx, v)) return true; /* computed from constants alone: depends on nothing here */
    return !g->nodes[p].dead && pos[p] >= 0 && pos[p] < pos[gr->anchor];
}

/* The program of a state: fixed inputs, then external values in order of first use. False when a
 * limit is broken or a member does not translate. */
static bool build(const ig_opt_ctx *cx, const ig_opt_group *gr, const int32_t *members, int32_t n, int32_t *in,
                  int32_t *n_in, ig_pw_prog *p)
{
    const ig_graph *g = cx->g;
    int32_t ni = gr->n_fixed;
    for (int32_t i = 0; i < ni; i++) in[i] = gr->in[i];
    for (int32_t m = 0; m < n; m++) {
        const ig_node *nd = &g->nodes[members[m]];
        for (int32_t i = 0; i < data_inputs(nd); i++) {
            int32_t v = nd->inputs[i];
            if (v < 0 || group_value(g, gr, members, m, v) >= 0 || foldable(cx, v)) continue;
            int32_t k = 0;
            while (k < ni && in[k] != v) k++;
            if (k < ni) continue;
            if (ni >= gr->max_in) return false;
            in[ni++] = v;
        }
    }
    ig__pw_init(p, ni, gr->int_math);
    int16_t ref[IG_PW_MAX_OPS + 1];
    ref[0] = 0;
    if (gr->has_pre) {
        const ig_pw_inst *q = &gr->pre;
        if ((ref[0] = ig__pw_emit(p, q->code, q->a, q->b, q->c, q->k, q->k2)) < 0) return false;
    }
    for (int32_t m = 0; m < n; m++) {
        const ig_node *nd = &g->nodes[members[m]];
        int16_t in_ref[MAX_NODE_IN];
        if (nd->n_inputs > MAX_NODE_IN) return false;
        for (int32_t i = 0; i < nd->n_inputs; i++) {
            int32_t v = nd->inputs[i], gv = group_value(g, gr, members, m, v);
            in_ref[i] = IG_PW_NONE;
            if (v < 0 || i >= data_inputs(nd)) continue;
            if (gv >= 0) {
                in_ref[i] = ref[gv];
            } else if (foldable(cx, v)) {
                in_ref[i] = IG_PW_K;
            } else {
                int32_t k = 0;
                while (in[k] != v) k++;
                in_ref[i] = (int16_t)k;
            }
        }
        ig_err e = {0};
        if (ig__pw_append_node(g, nd, in_ref, p, &ref[1 + m], &e) != INGOT_OK) return false;
    }
    *n_in = ni;
    return p->n_ops <= gr->max_ops && ig__pw_regs_ok(p);
}

/* Shape a broadcasts to shape b (aligned from the right: each dim of a equal to b's or 1). */
static bool broadcasts_to(const ig_shape *a, const ig_shape *b)
{
    if (a->rank < 0 || b->rank < a->rank) return false;
    for (int32_t k = 0; k < a->rank; k++) {
        ig_dim x = a->d[a->rank - 1 - k], y = b->d[b->rank - 1 - k];
        if (!ig__dim_eq(x, y) && !(x.sym == IG_NOSYM && x.n == 1)) return false;
    }
    return true;
}

/* Can node c join a group whose members are members[0..n)? */
static bool may_join(const ig_opt_ctx *cx, const int32_t *pos, const ig_opt_group *gr, const int32_t *members,
                     int32_t n, int32_t c)
{
    const ig_graph *g = cx->g;
    const ig_node *nd = &g->nodes[c];
    /* shape arithmetic keeps its symbolic element values only through the ONNX ops */
    if (nd->folded || !ig__pw_node_ok(g, nd, gr->int_math) || g->values[nd->outputs[0]].n_sym > 0) return false;
    const ig_shape *cs = &g->values[nd->outputs[0]].shape;
    if (!ig__opt_shape_eq(cs, &gr->shape) && !(gr->widen && broadcasts_to(&gr->shape, cs))) return false;
    for (int32_t i = 0; i < nd->n_inputs; i++) {
        int32_t v = nd->inputs[i];
        if (v < 0) continue;
        if (i >= data_inputs(nd)) { /* Clip's bounds: constants for every run */
            if (!ig__opt_is_const(cx, v)) return false;
            continue;
        }
        if (group_value(g, gr, members, n, v) < 0 && !foldable(cx, v) && !external(cx, pos, gr, v)) return false;
    }
    return true;
}

/* Every group value but the final one read only by members and not a graph output. */
static bool closed(const ig_opt_ctx *cx, const ig_uses *u, const ig_opt_group *gr, const int32_t *members, int32_t n)
{
    const ig_graph *g = cx->g;
    int32_t final = n ? g->nodes[members[n - 1]].outputs[0] : gr->seed;
    if (gr->dtype != INGOT_DTYPE_UNDEFINED && g->values[final].dtype != gr->dtype) return false;
    for (int32_t i = -1; i < n; i++) {
        int32_t v = i < 0 ? gr->seed : g->nodes[members[i]].outputs[0];
        if (v < 0 || v == final) continue;
        if (u->is_output[v]) return false;
        for (int32_t k = u->off[v]; k < u->off[v + 1]; k++) {
            int32_t c = u->node[k];
            if (g->nodes[c].dead) continue;
            int32_t m = 0;
            while (m < n && members[m] != c) m++;
            if (m == n) return false;
        }
    }
    return true;
}

int32_t ig__opt_group_grow(const ig_opt_ctx *cx, const ig_uses *u, const int32_t *pos, ig_opt_group *gr)
{
    const ig_graph *g = cx->g;
    int32_t members[IG_PW_MAX_OPS], n = gr->n_members;
    for (int32_t i = 0; i < n; i++) members[i] = gr->members[i];
    int32_t in[IG_PW_MAX_IN], n_in = 0;
    ig_pw_prog p;
    /* the caller's state: the seed alone (nothing fused yet) or its first member */
    gr->final = n ? g->nodes[members[n - 1]].outputs[0] : gr->seed;
    int32_t best_n = 0;
    ig_shape best_shape = gr->shape; /* with widen, the shape of the group at best_n */
    if (build(cx, gr, members, n, in, &n_in, &p) && closed(cx, u, gr, members, n)) {
        best_n = n;
        gr->prog = p;
        gr->n_in = n_in;
        for (int32_t i = 0; i < n_in; i++) gr->in[i] = in[i];
    } else {
        return -1;
    }
    while (n < IG_PW_MAX_OPS) {
        int32_t best = -1;
        for (int32_t i = -1; i < n; i++) {
            int32_t v = i < 0 ? gr->seed : g->nodes[members[i]].outputs[0];
            if (v < 0) continue;
            for (int32_t k = u->off[v]; k < u->off[v + 1]; k++) {
                int32_t c = u->node[k];
                if (g->nodes[c].dead || c == gr->anchor || pos[c] < 0) continue;
                if (best >= 0 && pos[c] >= pos[best]) continue;
                int32_t m = 0;
                while (m < n && members[m] != c) m++;
                if (m < n || !may_join(cx, pos, gr, members, n, c)) continue;
                best = c;
            }
        }
        if (best < 0) break;
        members[n] = best;
        if (!build(cx, gr, members, n + 1, in, &n_in, &p)) break;
        n++;
        gr->shape = g->values[g->nodes[best].outputs[0]].shape; /* the same, or wider (widen) */
        if (closed(cx, u, gr, members, n)) {
            best_n = n;
            best_shape = gr->shape;
            gr->prog = p;
            gr->n_in = n_in;
            for (int32_t i = 0; i < n_in; i++) gr->in[i] = in[i];
        }
    }
    gr->n_members = best_n;
    gr->shape = best_shape;
    for (int32_t i = 0; i < best_n; i++) gr->members[i] = members[i];
    gr->final = best_n ? g->nodes[members[best_n - 1]].outputs[0] : gr->seed;
    return best_n;
}

void ig__opt_group_finish(ig_opt_ctx *cx, const ig_opt_group *gr, int32_t made, int32_t *pos, int32_t cap)
{
    ig_graph *g = cx->g;
    int32_t last = gr->n_members ? gr->members[gr->n_members - 1] : gr->anchor;
    if (made < cap) pos[made] = pos[last];
    for (int32_t i = 0; i < gr->n_members; i++) ig__graph_remove_node(g, gr->members[i]);
    ig__opt_set_output(g, made, 0, gr->final);
}
