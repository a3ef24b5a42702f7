/*
 * gelu.c -- the `gelu` pass: the two decomposed forms of GELU exporters emit become one Gelu node
 * (opset 20, approximate "none" / "tanh") that takes over the pattern's final output value.
 *
 *   erf form:  x * 0.5 * (1 + erf(x / sqrt 2)), the scaling as Div(x, sqrt 2) or Mul(x, 1/sqrt 2);
 *   tanh form: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), x^3 as Pow(x, 3),
 *              Mul(Mul(x, x), x) or Mul(x, Mul(x, x));
 *
 * and for both the halving in any of the orders exports use: (x * p) * 0.5, (x * 0.5) * p,
 * x * (p * 0.5), with "* 0.5" also as "/ 2", operands of Mul and Add in either order.
 *
 * Valid for every shape: each constant is a one-element float tensor (compared within 1e-3 relative)
 * of rank at most x's, so every intermediate, and the final output, has x's shape and dtype. Every
 * intermediate is read only by the next node of the pattern and is not a graph output (so removing
 * the pattern's nodes changes nothing else); x itself may be read anywhere.
 */
#include "opt_internal.h"

#define TOL 1e-3

#define MAX_NODES 10

typedef struct match {
    int32_t x, y;
    int32_t n;
    int32_t nodes[MAX_NODES];
} match;

/* Node id is Mul(v, k) (either order) with k within TOL of want; *other gets v's partner if v < 0. */
static bool mul_const(const ig_opt_ctx *cx, int32_t id, int32_t v, double want, int32_t rank, int32_t *other)
{
    const ig_graph *g = cx->g;
    if (!ig__opt_is(g, id, IG_OP_mul)) return false;
    const ig_node *n = &g->nodes[id];
    for (int s = 0; s < 2; s++) {
        int32_t a = n->inputs[s], k = n->inputs[1 - s];
        if ((v < 0 || a == v) && ig__opt_scalar_near(cx, k, rank, want, TOL)) {
            if (other) *other = a;
            return true;
        }
    }
    return false;
}

/* Node id halves v: Mul(v, 0.5) either order, or Div(v, 2). */
static bool halves(const ig_opt_ctx *cx, int32_t id, int32_t v, int32_t rank)
{
    const ig_graph *g = cx->g;
    if (ig__opt_is(g, id, IG_OP_div))
        return g->nodes[id].inputs[0] == v && ig__opt_scalar_near(cx, g->nodes[id].inputs[1], rank, 2.0, TOL);
    return mul_const(cx, id, v, 0.5, rank, NULL);
}

/* Node id is Mul of a and b, in either order. */
static bool mul_of(const ig_graph *g, int32_t id, int32_t a, int32_t b)
{
    if (!ig__opt_is(g, id, IG_OP_mul)) return false;
    const ig_node *n = &g->nodes[id];
    return (n->inputs[0] == a && n->inputs[1] == b) || (n->inputs[0] == b && n->inputs[1] == a);
}

static void take(match *m, int32_t id) { m->nodes[m->n++] = id; }

/* From p = 1 + f(x) to y = 0.5 * x * p. */
static bool match_tail(const ig_opt_ctx *cx, const ig_uses *u, int32_t x, int32_t p, int32_t rank, match *m)
{
    const ig_graph *g = cx->g;
    int32_t n1 = ig__uses_sole(u, p);
    if (n1 < 0) return false;
    if (mul_of(g, n1, x, p)) { /* (x * p) * 0.5 */
        int32_t n2 = ig__uses_sole(u, ig__opt_out0(g, n1));
        if (!halves(cx, n2, ig__opt_out0(g, n1), rank)) return false;
        take(m, n1);
        take(m, n2);
        m->y = ig__opt_out0(g, n2);
        return true;
    }
    if (halves(cx, n1, p, rank)) { /* x * (p * 0.5) */
        int32_t n2 = ig__uses_sole(u, ig__opt_out0(g, n1));
        if (!mul_of(g, n2, x, ig__opt_out0(g, n1))) return false;
        take(m, n1);
        take(m, n2);
        m->y = ig__opt_out0(g, n2);
        return true;
    }
    /* (x * 0.5) * p */
    int32_t h = ig__opt_other_input(&g->nodes[n1], p), hn = ig__opt_producer(g, h);
    if (!ig__opt_is(g, n1, IG_OP_mul) || h == x || hn < 0 || ig__uses_sole(u, h) != n1 || !halves(cx, hn, x, rank))
        return false;
    take(m, hn);
    take(m, n1);
    m->y = ig__opt_out0(g, n1);
    return true;
}

/* f's output fv -> Add(fv, 1) -> tail. */
static bool match_one_plus(const ig_opt_ctx *cx, const ig_uses *u, int32_t fv, int32_t rank, match *m)
{
    const ig_graph *g = cx->g;
    int32_t a = ig__uses_sole(u, fv);
    if (!ig__opt_is(g, a, IG_OP_add) || !ig__opt_scalar_near(cx, ig__opt_other_input(&g->nodes[a], fv), rank, 1.0, TOL))
        return false;
    take(m, a);
    return match_tail(cx, u, m->x, ig__opt_out0(g, a), rank, m);
}

static bool float_x(const ig_graph *g, int32_t x)
{
    return x >= 0 && ig__dtype_is_float(g->values[x].dtype) && g->values[x].shape.rank >= 0;
}

/* Erf node e: Erf(x / sqrt 2) -> 1 + . -> tail. */
static bool match_erf(const ig_opt_ctx *cx, const ig_uses *u, int32_t e, match *m)
{
    const ig_graph *g = cx->g;
    int32_t a = g->nodes[e].inputs[0], an = ig__opt_producer(g, a), x = -1;
    if (an < 0 || ig__uses_sole(u, a) != e || g->nodes[an].n_inputs != 2) return false;
    const ig_node *s = &g->nodes[an];
    for (int k = 0; k < 2 && x < 0; k++) {
        int32_t xi = s->inputs[k], ki = s->inputs[1 - k];
        if (!float_x(g, xi)) continue;
        int32_t rank = g->values[xi].shape.rank;
        if (k == 0 && s->op == IG_OP_div && ig__opt_scalar_near(cx, ki, rank, 1.4142135623730951, TOL)) x = xi;
        if (s->op == IG_OP_mul && ig__opt_scalar_near(cx, ki, rank, 0.7071067811865476, TOL)) x = xi;
    }
    if (x < 0) return false;
    m->x = x;
    m->n = 0;
    take(m, an);
    take(m, e);
    return match_one_plus(cx, u, ig__opt_out0(g, e), g->values[x].shape.rank, m);
}

/* c3 = x^3: Pow(x, 3), Mul(Mul(x, x), x) in either order. */
static bool match_cube(const ig_opt_ctx *cx, const ig_uses *u, int32_t c3, int32_t x, int32_t rank, match *m)
{
    const ig_graph *g = cx->g;
    int32_t cn = ig__opt_producer(g, c3);
    if (cn < 0) return false;
    const ig_node *n = &g->nodes[cn];
    if (ig__opt_is(g, cn, IG_OP_pow) && n->inputs[0] == x && ig__opt_scalar_near(cx, n->inputs[1], rank, 3.0, TOL)) {
        take(m, cn);
        return true;
    }
    int32_t sq = ig__opt_other_input(n, x), sn = ig__opt_producer(g, sq);
    if (!ig__opt_is(g, cn, IG_OP_mul) || sq == x || sn < 0 || ig__uses_sole(u, sq) != cn || !mul_of(g, sn, x, x))
        return false;
    take(m, sn);
    take(m, cn);
    return true;
}

/* Tanh node t: Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)) -> 1 + . -> tail. */
static bool match_tanh(const ig_opt_ctx *cx, const ig_uses *u, int32_t t, match *m)
{
    const ig_graph *g = cx->g;
    int32_t uv = g->nodes[t].inputs[0], un = ig__opt_producer(g, uv), s = -1;
    if (un < 0 || ig__uses_sole(u, uv) != t || !mul_const(cx, un, -1, 0.7978845608028654, IG_MAX_RANK, &s))
        return false;
    int32_t sn = ig__opt_producer(g, s);
    if (!ig__opt_is(g, sn, IG_OP_add) || ig__uses_sole(u, s) != un) return false;
    for (int k = 0; k < 2; k++) {
        int32_t x = g->nodes[sn].inputs[k], q = g->nodes[sn].inputs[1 - k], qn = ig__opt_producer(g, q), c3 = -1;
        if (!float_x(g, x) || qn < 0 || ig__uses_sole(u, q) != sn) continue;
        int32_t rank = g->values[x].shape.rank;
        if (!ig__opt_scalar_near(cx, ig__opt_other_input(&g->nodes[un], s), rank, 0.7978845608028654, TOL)) continue;
        if (!mul_const(cx, qn, -1, 0.044715, rank, &c3) || ig__uses_sole(u, c3) != qn) continue;
        m->x = x;
        m->n = 0;
        if (!match_cube(cx, u, c3, x, rank, m)) continue;
        take(m, qn);
        take(m, sn);
        take(m, un);
        take(m, t);
        if (match_one_plus(cx, u, ig__opt_out0(g, t), rank, m)) return true;
    }
    return false;
}

static ingot_status make_gelu(ig_opt_ctx *cx, const match *m, const char *approximate)
{
    ig_graph *g = cx->g;
    for (int32_t i = 0; i < m->n; i++)
        if (g->nodes[m->nodes[i]].dead) return INGOT_OK; /* defensive: patterns share no node */
    int32_t last = m->nodes[m->n - 1];
    int32_t id = ig__opt_add_node(cx, g->nodes[last].name, "Gelu", "", 20, 1, 1, 1);
    if (id < 0) return cx->err->status;
    ingot_status st;
    if ((st = ig__node_set_string(g, &g->nodes[id], 0, "approximate", approximate, cx->err)) != INGOT_OK) return st;
    g->nodes[id].inputs[0] = m->x;
    return ig__opt_replace(cx, id, m->nodes, m->n, m->y);
}

static ingot_status visit(ig_opt_ctx *cx, ig_opt_walk *w, int32_t id)
{
    const ig_node *n = &cx->g->nodes[id];
    if (n->dead || n->n_inputs < 1 || n->inputs[0] < 0) return INGOT_OK;
    match m = {.x = -1, .y = -1};
    if (n->op == IG_OP_erf && match_erf(cx, &w->u, id, &m)) return make_gelu(cx, &m, "none");
    if (n->op == IG_OP_tanh && match_tanh(cx, &w->u, id, &m)) return make_gelu(cx, &m, "tanh");
    return INGOT_OK;
}

ingot_status ig__opt_pass_gelu(ig_opt_ctx *cx) { return ig__opt_walk(cx, false, visit); }
