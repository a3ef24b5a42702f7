/*
 * layernorm.c -- the `layernorm` pass: the decomposed LayerNorm of PyTorch / Hugging Face exports
 * over the last axis becomes one LayerNormalization (opset 17, axis -1).
 *
 *   m = ReduceMean(x, [-1], keepdims 1)      d = Sub(x, m)
 *   v = ReduceMean(Pow(d, 2) | Mul(d, d), [-1], keepdims 1)
 *   n = Div(d, Sqrt(Add(v, eps)))  or  Mul(d, Reciprocal(Sqrt(Add(v, eps))))
 *   [Mul(n, gamma)] [Add(., beta)]            gamma, beta constants of x's last dim E
 *
 * (axes as the attribute before opset 18 and as the constant second input from 18, -1 or rank-1;
 * operands of Add and Mul in either order). Valid for every shape: both means are over the last axis
 * with kept dims, so d, n and the output have x's shape, and this is LayerNormalization's definition
 * with the population variance. eps is a one-element constant of rank at most x's; gamma and beta are
 * constants of E elements shaped [..., 1, E] with rank at most x's and E = x's last dim, proved equal
 * (a concrete dim), so they broadcast as LayerNormalization's scale and bias do. Intermediates are
 * read only inside the pattern (d by exactly the two nodes above) and are not graph outputs.
 */
#include "opt_internal.h"

#include <stdio.h>

#define TOL 1e-3

/* ReduceMean of `in` over the last of `rank` axes only, keeping dims. */
static bool mean_last(const ig_opt_ctx *cx, int32_t id, int32_t in, int32_t rank)
{
    const ig_graph *g = cx->g;
    if (!ig__opt_is(g, id, IG_OP_reduce_mean)) return false;
    const ig_node *n = &g->nodes[id];
    if (n->inputs[0] != in || ig__attr_int(n, "keepdims", 1) != 1) return false;
    int64_t axis;
    if (n->opset < 18) {
        const int64_t *ax;
        int64_t count;
        if (!ig__attr_ints(n, "axes", &ax, &count) || count != 1) return false;
        axis = ax[0];
    } else {
        int32_t av = n->n_inputs > 1 ? n->inputs[1] : -1;
        if (ig__opt_const_numel(cx, av) != 1 || !ig__dtype_is_int(g->values[av].c.dtype)) return false;
        axis = ig__elem_i64(g->values[av].c.dtype, g->values[av].c.data, 0);
    }
    return axis == -1 || axis == rank - 1;
}

/* A constant of E elements, every dim 1 but the last (E), rank within x's, x's dtype. */
static bool param_of(const ig_opt_ctx *cx, int32_t v, const ig_value *x)
{
    const ig_graph *g = cx->g;
    int32_t r = x->shape.rank;
    ig_dim e = x->shape.d[r - 1];
    if (!ig__dim_known(e) || ig__opt_const_numel(cx, v) != e.n) return false;
    const ig_const *c = &g->values[v].c;
    if (c->dtype != x->dtype || c->rank < 1 || c->rank > r || c->dims[c->rank - 1] != e.n) return false;
    for (int32_t k = 0; k + 1 < c->rank; k++)
        if (c->dims[k] != 1) return false;
    return true;
}

typedef struct match {
    int32_t x, y, gamma, beta;
    double eps;
    int32_t n;
    int32_t nodes[12];
} match;

static void take(match *m, int32_t id) { m->nodes[m->n++] = id; }

/* The squaring of d: Pow(d, 2) or Mul(d, d). */
static bool squares(const ig_opt_ctx *cx, int32_t id, int32_t d, int32_t rank)
{
    const ig_graph *g = cx->g;
    if (ig__opt_is(g, id, IG_OP_pow))
        return g->nodes[id].inputs[0] == d && ig__opt_scalar_near(cx, g->nodes[id].inputs[1], rank, 2.0, TOL);
    return ig__opt_is(g, id, IG_OP_mul) && g->nodes[id].inputs[0] == d && g->nodes[id].inputs[1] == d;
}

/* The normalisation n = d / s: Div(d, s) or Mul(d, Reciprocal(s)). */
static bool divides(const ig_opt_ctx *cx, const ig_uses *u, int32_t id, int32_t d, int32_t s, match *m)
{
    const ig_graph *g = cx->g;
    if (ig__opt_is(g, id, IG_OP_div)) {
        if (g->nodes[id].inputs[0] != d || g->nodes[id].inputs[1] != s || ig__uses_sole(u, s) != id) return false;
        take(m, id);
        return true;
    }
    if (!ig__opt_is(g, id, IG_OP_mul)) return false;
    int32_t r = ig__opt_other_input(&g->nodes[id], d), rn = ig__opt_producer(g, r);
    if (r == d || !ig__opt_is(g, rn, IG_OP_reciprocal) || g->nodes[rn].inputs[0] != s) return false;
    if (ig__uses_sole(u, s) != rn || ig__uses_sole(u, r) != id) return false;
    take(m, rn);
    take(m, id);
    return true;
}

/* From the first ReduceMean `r1` of x. */
static bool match_ln(const ig_opt_ctx *cx, const ig_uses *u, int32_t r1, match *m)
{
    const ig_graph *g = cx->g;
    int32_t x = g->nodes[r1].inputs[0];
    const ig_value *xv = &g->values[x];
    int32_t rank = xv->shape.rank;
    if (rank < 1 || !ig__dtype_is_float(xv->dtype) || !mean_last(cx, r1, x, rank)) return false;
    int32_t mean = ig__opt_out0(g, r1), sub = ig__uses_sole(u, mean);
    if (!ig__opt_is(g, sub, IG_OP_sub) || g->nodes[sub].inputs[0] != x || g->nodes[sub].inputs[1] != mean) return false;
    int32_t d = ig__opt_out0(g, sub);
    if (u->is_output[d] || ig__uses_count(u, d) != 2) return false;
    int32_t c0 = u->node[u->off[d]], c1 = u->node[u->off[d] + 1];
    int32_t sq = squares(cx, c0, d, rank) ? c0 : squares(cx, c1, d, rank) ? c1 : -1;
    if (sq < 0) return false;
    int32_t nrm = sq == c0 ? c1 : c0;
    int32_t r2 = ig__uses_sole(u, ig__opt_out0(g, sq));
    if (!mean_last(cx, r2, ig__opt_out0(g, sq), rank)) return false;
    int32_t add = ig__uses_sole(u, ig__opt_out0(g, r2));
    if (!ig__opt_is(g, add, IG_OP_add)) return false;
    int32_t epsv = ig__opt_other_input(&g->nodes[add], ig__opt_out0(g, r2));
    if (epsv == ig__opt_out0(g, r2) || !ig__opt_const_scalar(cx, epsv, &m->eps) || g->values[epsv].c.rank > rank ||
        !(m->eps >= 0))
        return false;
    int32_t sqrt_n = ig__uses_sole(u, ig__opt_out0(g, add));
    if (!ig__opt_is(g, sqrt_n, IG_OP_sqrt)) return false;
    m->n = 0;
    take(m, r1);
    take(m, sub);
    take(m, sq);
    take(m, r2);
    take(m, add);
    take(m, sqrt_n);
    if (!divides(cx, u, nrm, d, ig__opt_out0(g, sqrt_n), m)) return false;
    m->x = x;
    m->y = ig__opt_out0(g, nrm);
    m->gamma = m->beta = -1;
    int32_t next = ig__uses_sole(u, m->y);
    if (ig__opt_is(g, next, IG_OP_mul)) {
        int32_t p = ig__opt_other_input(&g->nodes[next], m->y);
        if (p != m->y && param_of(cx, p, xv)) {
            m->gamma = p;
            take(m, next);
            m->y = ig__opt_out0(g, next);
            next = ig__uses_sole(u, m->y);
        }
    }
    if (ig__opt_is(g, next, IG_OP_add)) {
        int32_t p = ig__opt_other_input(&g->nodes[next], m->y);
        if (p != m->y && param_of(cx, p, xv)) {
            m->beta = p;
            take(m, next);
            m->y = ig__opt_out0(g, next);
        }
    }
    return true;
}

/* A rank-1 [E] constant with p's data (p itself when it is one); ones when p < 0. */
static int32_t vector_param(ig_opt_ctx *cx, int32_t p, const match *m, const char *what)
{
    ig_graph *g = cx->g;
    const ig_value *x = &g->values[m->x];
    ig_dim e = x->shape.d[x->shape.rank - 1];
    if (p >= 0 && g->values[p].c.rank == 1) return p;
    int64_t n = ig__dim_known(e) ? e.n : 1;
    ingot_dtype t = x->dtype;
    char base[300];
    snprintf(base, sizeof base, "%s_%s", g->values[m->y].name, what);
    if (p >= 0) {
        const ig_const c = g->values[p].c;
        return ig__graph_add_const(g, base, c.dtype, 1, &n, c.data, cx->err);
    }
    void *ones = ig__malloc(ingot_dtype_size(t) * (size_t)n + 1);
    if (!ones) {
        ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
        return -1;
    }
    for (int64_t i = 0; i < n; i++) ig__elem_set_f64(t, ones, i, 1.0);
    int32_t id = ig__graph_add_const(g, base, t, 1, &n, ones, cx->err);
    ig__free(ones);
    return id;
}

static ingot_status make_ln(ig_opt_ctx *cx, const match *m)
{
    ig_graph *g = cx->g;
    ingot_status st;
    int32_t scale = vector_param(cx, m->gamma, m, "scale");
    int32_t bias = scale < 0 || m->beta < 0 ? -1 : vector_param(cx, m->beta, m, "bias");
    if (scale < 0 || (m->beta >= 0 && bias < 0)) return cx->err->status;
    int32_t last = m->nodes[m->n - 1];
    int32_t id = ig__opt_add_node(cx, g->nodes[last].name, "LayerNormalization", "", 17, bias >= 0 ? 3 : 2, 1, 2);
    if (id < 0) return cx->err->status;
    ig_node *n = &g->nodes[id];
    if ((st = ig__node_set_int(g, n, 0, "axis", -1, cx->err)) != INGOT_OK ||
        (st = ig__node_set_float(g, n, 1, "epsilon", (float)m->eps, cx->err)) != INGOT_OK)
        return st;
    n->inputs[0] = m->x;
    n->inputs[1] = scale;
    if (bias >= 0) n->inputs[2] = bias;
    return ig__opt_replace(cx, id, m->nodes, m->n, m->y);
}

static ingot_status visit(ig_opt_ctx *cx, ig_opt_walk *w, int32_t id)
{
    if (!ig__opt_is(cx->g, id, IG_OP_reduce_mean) || cx->g->nodes[id].inputs[0] < 0) return INGOT_OK;
    match m;
    return match_ln(cx, &w->u, id, &m) ? make_ln(cx, &m) : INGOT_OK;
}

ingot_status ig__opt_pass_layernorm(ig_opt_ctx *cx) { return ig__opt_walk(cx, false, visit); }
