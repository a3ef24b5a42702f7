/*
 * sink_views.c -- the `sink_views` pass: a residual Add reached through views of a GEMM's output moves
 * before the views, so gemm_epilogue can fold it into the GEMM:
 *
 *   Add(V(Y), R)  ->  V'(Add(Y, W(R)))
 *
 * Y is the output of a MatMul or Gemm (or of the constant bias Add right after one, the GEMM's output
 * read by that Add alone), V a chain of view nodes (Reshape, Transpose, Flatten, Squeeze, Unsqueeze)
 * from Y to one operand of the Add, Y and every link read only by the next node of the chain and none
 * a graph output; R, the other operand, is not a constant and has exactly the Add's output shape, as
 * has V(Y) (no broadcasting). W is V's inverse applied to R: a Transpose by the inverse permutation
 * for a Transpose, a Reshape back to the link's input shape for the others (a new constant shape, -1
 * for its one dim that is not a known constant; two such dims and the pass gives up). V' repeats V on
 * the new Add's result, its last node taking over the old Add's output value. ViT's seq-first
 * out-projection is the case: Gemm [S*B, E] -> Reshape [S, B, E] -> Transpose(1, 0, 2) -> Add(x
 * [B, S, E]).
 *
 * Valid for every shape: views move elements without changing them, W is a bijection onto Y's shape
 * that undoes V element for element (Transpose by the inverse permutation; a Reshape to the shape V's
 * Reshape started from, which has the same row-major order), so V'(Y + W(R)) = V(Y) + V(W(R)) =
 * V(Y) + R. Nothing outside the pattern read Y or the chain, so nothing else changes.
 *
 * The nodes producing Y are made again after W's: the graph's order breaks ties by node id, so W(R)
 * then comes before the GEMM in g->order, where gemm_epilogue takes its external inputs from.
 */
#include "opt_internal.h"

#include <stdio.h>

#define MAX_CHAIN 8

static bool is_view(const ig_node *n)
{
    if (n->n_outputs != 1 || n->outputs[0] < 0 || n->n_inputs < 1 || n->inputs[0] < 0) return false;
    switch (n->op) {
    case IG_OP_reshape:
    case IG_OP_transpose:
    case IG_OP_flatten:
    case IG_OP_squeeze:
    case IG_OP_unsqueeze: return true;
    default: return false;
    }
}

static bool is_gemm(const ig_graph *g, int32_t id)
{
    return id >= 0 && (g->nodes[id].op == IG_OP_matmul || g->nodes[id].op == IG_OP_gemm) && g->nodes[id].n_outputs == 1;
}

typedef struct sv_match {
    int32_t add, r, y;
    int32_t n_chain;
    int32_t chain[MAX_CHAIN]; /* from Y's reader to the Add's operand */
    int32_t n_prod;
    int32_t prod[2]; /* the GEMM, then the bias Add */
} sv_match;

/* The nodes producing Y: a GEMM, or a GEMM's bias Add. */
static bool gemm_source(const ig_opt_ctx *cx, const ig_uses *u, int32_t y, sv_match *m)
{
    const ig_graph *g = cx->g;
    int32_t p = ig__opt_producer(g, y);
    m->n_prod = 0;
    if (p < 0) return false;
    if (is_gemm(g, p)) {
        m->prod[m->n_prod++] = p;
        return true;
    }
    const ig_node *a = &g->nodes[p];
    if (a->op != IG_OP_add || a->n_inputs != 2) return false;
    for (int k = 0; k < 2; k++) {
        int32_t mv = a->inputs[k], b = a->inputs[1 - k], mp = ig__opt_producer(g, mv);
        if (mv < 0 || !is_gemm(g, mp) || !ig__opt_is_const(cx, b) || ig__uses_sole(u, mv) != p) continue;
        if (!ig__opt_shape_eq(&g->values[mv].shape, &g->values[y].shape)) continue;
        m->prod[m->n_prod++] = mp;
        m->prod[m->n_prod++] = p;
        return true;
    }
    return false;
}

static bool match(const ig_opt_ctx *cx, const ig_uses *u, int32_t add, sv_match *m)
{
    const ig_graph *g = cx->g;
    const ig_node *a = &g->nodes[add];
    if (a->n_inputs != 2 || a->n_outputs != 1 || a->inputs[0] < 0 || a->inputs[1] < 0 || a->inputs[0] == a->inputs[1])
        return false;
    const ig_shape *os = &g->values[a->outputs[0]].shape;
    for (int side = 0; side < 2; side++) {
        int32_t t = a->inputs[side], r = a->inputs[1 - side];
        if (ig__opt_is_const(cx, r) || !ig__opt_shape_eq(&g->values[r].shape, os) ||
            !ig__opt_shape_eq(&g->values[t].shape, os))
            continue;
        int32_t rev[MAX_CHAIN], n = 0, reader = add, w = t;
        for (;;) {
            int32_t p = ig__opt_producer(g, w);
            if (p < 0 || !is_view(&g->nodes[p]) || n == MAX_CHAIN || ig__uses_sole(u, w) != reader) break;
            rev[n++] = p;
            reader = p;
            w = g->nodes[p].inputs[0];
        }
        if (n == 0 || ig__uses_sole(u, w) != reader || !gemm_source(cx, u, w, m)) continue;
        m->add = add;
        m->r = r;
        m->y = w;
        m->n_chain = n;
        for (int32_t i = 0; i < n; i++) m->chain[i] = rev[n - 1 - i];
        return true;
    }
    return false;
}

/* A Transpose's permutation (the reversal when the attribute is absent). */
static bool perm_of(const ig_node *n, int32_t rank, int64_t *perm)
{
    const int64_t *p;
    int64_t cnt;
    if (!ig__attr_ints(n, "perm", &p, &cnt)) {
        for (int32_t i = 0; i < rank; i++) perm[i] = rank - 1 - i;
        return true;
    }
    if (cnt != rank) return false;
    bool seen[IG_MAX_RANK] = {0};
    for (int32_t i = 0; i < rank; i++) {
        int64_t q = p[i] < 0 ? p[i] + rank : p[i];
        if (q < 0 || q >= rank || seen[q]) return false;
        seen[q] = true;
        perm[i] = q;
    }
    return true;
}

/* The constant shape input of a Reshape to s: dims, -1 for the one that is not a known constant. */
static bool reshape_target(const ig_shape *s, int64_t *dims)
{
    int n_sym = 0;
    for (int32_t k = 0; k < s->rank; k++) {
        if (!ig__dim_known(s->d[k])) {
            dims[k] = -1;
            n_sym++;
        } else if ((dims[k] = s->d[k].n) <= 0) {
            return false; /* 0 means "copy the input's dim" to Reshape */
        }
    }
    return n_sym <= 1;
}

/* Every link of the chain invertible (checked before anything is edited). */
static bool invertible(const ig_graph *g, const sv_match *m)
{
    for (int32_t i = 0; i < m->n_chain; i++) {
        const ig_node *n = &g->nodes[m->chain[i]];
        const ig_shape *in = &g->values[n->inputs[0]].shape;
        int64_t tmp[IG_MAX_RANK];
        if (in->rank < 0) return false;
        if (n->op == IG_OP_transpose ? !perm_of(n, in->rank, tmp) : !reshape_target(in, tmp)) return false;
    }
    return true;
}

/* The inverse of `link` on x (R seen so far through W): a new node of one input (plus a constant shape
 * for a Reshape) writing a new value named "<R>_as_<link's input>". It covers the Add, which it helps
 * compute. */
static int32_t inverse_link(ig_opt_ctx *cx, const sv_match *m, int32_t link, int32_t x, int32_t *out)
{
    ig_graph *g = cx->g;
    const ig_node *n = &g->nodes[link];
    const ig_shape in = g->values[n->inputs[0]].shape;
    int32_t rank = in.rank;
    bool tr = n->op == IG_OP_transpose;
    int64_t v[IG_MAX_RANK], inv[IG_MAX_RANK];
    char base[300], name[300];
    snprintf(base, sizeof base, "%s_as_%s", g->values[m->r].name, g->values[n->inputs[0]].name);
    snprintf(name, sizeof name, "%s_inverse", ig__node_label(n));
    if (tr) {
        perm_of(n, rank, v);
        for (int32_t i = 0; i < rank; i++) inv[v[i]] = i;
    } else {
        reshape_target(&in, v);
    }
    int32_t shape_v = -1;
    if (!tr) {
        int64_t len = rank;
        char sb[320];
        snprintf(sb, sizeof sb, "%.300s_shape", base);
        if ((shape_v = ig__graph_add_const(g, sb, INGOT_DTYPE_INT64, 1, &len, v, cx->err)) < 0) return -1;
    }
    if ((*out = ig__graph_new_value(g, base, cx->err)) < 0) return -1;
    int32_t id = ig__opt_add_node(cx, name, tr ? "Transpose" : "Reshape", "", 13, tr ? 1 : 2, 1, tr ? 1 : 0);
    if (id < 0) return -1;
    ig_node *nn = &g->nodes[id];
    if (tr && ig__node_set_ints(g, nn, 0, "perm", inv, rank, cx->err) != INGOT_OK) return -1;
    nn->inputs[0] = x;
    if (!tr) nn->inputs[1] = shape_v;
    if (ig__opt_set_covers(cx, id, &m->add, 1) != INGOT_OK) return -1;
    ig__opt_set_output(g, id, 0, *out);
    return id;
}

static ingot_status rewrite(ig_opt_ctx *cx, const sv_match *m)
{
    ig_graph *g = cx->g;
    /* W(R): the chain undone from the Add's side */
    int32_t w = m->r;
    for (int32_t i = m->n_chain - 1; i >= 0; i--)
        if (inverse_link(cx, m, m->chain[i], w, &w) < 0) return cx->err->status;
    /* Y's producers again, after W's nodes (see the head comment) */
    for (int32_t i = 0; i < m->n_prod; i++) {
        int32_t old = m->prod[i];
        if (ig__opt_copy_node(cx, old, 0, -1, g->nodes[old].outputs[0]) < 0) return cx->err->status;
        ig__graph_remove_node(g, old); /* its output keeps its new producer */
    }
    /* Add(Y, W(R)), then V' on it */
    const ig_node *a = &g->nodes[m->add];
    int32_t out = a->outputs[0];
    char base[300];
    snprintf(base, sizeof base, "%s_sunk", g->values[m->y].name);
    int32_t sum = ig__graph_new_value(g, base, cx->err);
    if (sum < 0) return cx->err->status;
    int32_t add = ig__opt_copy_node(cx, m->add, 0, -1, sum);
    if (add < 0) return cx->err->status;
    g->nodes[add].inputs[0] = m->y;
    g->nodes[add].inputs[1] = w;
    int32_t cur = sum;
    for (int32_t i = 0; i < m->n_chain; i++) {
        int32_t link = m->chain[i], v = out;
        if (i + 1 < m->n_chain) {
            snprintf(base, sizeof base, "%s_sunk", g->values[g->nodes[link].outputs[0]].name);
            if ((v = ig__graph_new_value(g, base, cx->err)) < 0) return cx->err->status;
        }
        if (ig__opt_copy_node(cx, link, 0, cur, v) < 0) return cx->err->status;
        cur = v;
    }
    for (int32_t i = 0; i < m->n_chain; i++) ig__graph_remove_node(g, m->chain[i]);
    ig__graph_remove_node(g, m->add); /* its output keeps its new producer, the last link */
    cx->n_rewrites++;
    return INGOT_OK;
}

static ingot_status visit(ig_opt_ctx *cx, ig_opt_walk *w, int32_t id)
{
    const ig_graph *g = cx->g;
    const ig_node *n = &g->nodes[id];
    if (n->dead || n->op != IG_OP_add) return INGOT_OK;
    sv_match m;
    if (!match(cx, &w->u, id, &m) || !invertible(g, &m)) return INGOT_OK;
    bool fresh = true; /* defensive: nothing of the match was rewritten already */
    for (int32_t i = 0; i < m.n_chain; i++) fresh = fresh && !g->nodes[m.chain[i]].dead;
    for (int32_t i = 0; i < m.n_prod; i++) fresh = fresh && !g->nodes[m.prod[i]].dead;
    return fresh ? rewrite(cx, &m) : INGOT_OK;
}

ingot_status ig__opt_pass_sink_views(ig_opt_ctx *cx) { return ig__opt_walk(cx, false, visit); }
