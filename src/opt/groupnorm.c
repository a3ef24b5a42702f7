/*
 * groupnorm.c -- the `groupnorm` pass: GroupNorm as torch exports it before opset 18 becomes one
 * ingot.GroupNorm (per-channel scale and bias).
 *
 *   r = Reshape(x [N, C, ...], [0, G, -1])         x's elements, N first, then G groups
 *   i = InstanceNormalization(r, s [G], b [G])     torch: s = ones, b = zeros
 *   y = Reshape(i, Shape(x) | a constant)          back to x's shape
 *   [Mul(y, gamma)] [Add(., beta)]                 gamma, beta per channel: [C, 1, 1], [1, C, 1, 1], [1]
 *
 * Why it is exact for every shape: Reshape keeps the elements' order, so when r's first dim is x's N
 * (the same symbolic dim) and its second is G, InstanceNormalization's "channel" g of r holds exactly
 * channels g*C/G .. (g+1)*C/G - 1 of x with all their spatial elements, which is GroupNormalization's
 * group g (r may be [N, G, C/G*H*W] or any finer split of it such as [N, G, C/G, H, W]). The back-Reshape
 * must give x's shape (the same dims, symbolic ones included). s and b (per group) and gamma and beta
 * (per channel) compose into one affine map per channel: scale = s[g] * gamma[c], bias = b[g] * gamma[c]
 * + beta[c] (computed in double, rounded once). Every intermediate is read only by the next node of the
 * chain and is not a graph output; the Shape node goes too when only the back-Reshape reads it.
 */
#include "opt_internal.h"

#include <stdio.h>

typedef struct match {
    int32_t x, y;        /* x, and the value the chain's last node computes */
    int32_t in_node;     /* the InstanceNormalization */
    int32_t gamma, beta; /* per-channel constants, -1 when absent */
    int64_t c, groups;
    int32_t n;
    int32_t nodes[6];
} match;

static void take(match *m, int32_t id) { m->nodes[m->n++] = id; }

/* A constant of x's dtype that broadcasts against x without changing its shape and varies at most along
 * axis 1: one element, or C elements on the dim aligned with axis 1 and 1 everywhere else. */
static bool channel_param(const ig_opt_ctx *cx, int32_t p, const ig_value *x, int64_t c)
{
    int64_t numel = ig__opt_const_numel(cx, p);
    const ig_const *k = &cx->g->values[p].c;
    int32_t xr = x->shape.rank;
    if (numel < 1 || k->dtype != x->dtype || k->rank > xr || (numel != 1 && numel != c)) return false;
    for (int32_t d = 0; d < k->rank; d++) {
        int32_t axis = d + xr - k->rank;
        if (k->dims[d] != 1 && !(axis == 1 && k->dims[d] == c)) return false;
    }
    return true;
}

/* Element ch of a channel parameter (one element: the same for every channel); `none` when p < 0. */
static double channel_value(const ig_graph *g, int32_t p, int64_t ch, double none)
{
    if (p < 0) return none;
    const ig_const *k = &g->values[p].c;
    int64_t numel = 1;
    for (int32_t d = 0; d < k->rank; d++) numel *= k->dims[d];
    return ig__elem_f64(k->dtype, k->data, numel == 1 ? 0 : ch);
}

/* The optional Mul(y, gamma) or Add(y, beta) after y (operands in either order): the parameter, with
 * the node taken and m->y moved on; -1 when the next node is not one. */
static int32_t affine_step(const ig_opt_ctx *cx, const ig_uses *u, match *m, int32_t op)
{
    const ig_graph *g = cx->g;
    int32_t next = ig__uses_sole(u, m->y);
    if (!ig__opt_is(g, next, op)) return -1;
    int32_t p = ig__opt_other_input(&g->nodes[next], m->y);
    if (p < 0 || p == m->y || !channel_param(cx, p, &g->values[m->x], m->c)) return -1;
    take(m, next);
    m->y = ig__opt_out0(g, next);
    return p;
}

/* From the InstanceNormalization `id`. */
static bool match_gn(const ig_opt_ctx *cx, const ig_uses *u, int32_t id, match *m)
{
    const ig_graph *g = cx->g;
    const ig_node *in = &g->nodes[id];
    if (in->n_inputs < 3) return false;
    int32_t r = in->inputs[0], front = ig__opt_producer(g, r);
    if (!ig__opt_is(g, front, IG_OP_reshape) || ig__uses_sole(u, r) != id) return false;
    int32_t x = g->nodes[front].inputs[0];
    const ig_value *xv = &g->values[x], *rv = &g->values[r];
    if (x < 0 || !ig__dtype_is_float(xv->dtype) || xv->shape.rank < 2 || rv->shape.rank < 3) return false;
    ig_dim cd = xv->shape.d[1], gd = rv->shape.d[1];
    if (!ig__dim_known(cd) || !ig__dim_known(gd) || gd.n < 1 || cd.n % gd.n) return false;
    if (!ig__dim_eq(rv->shape.d[0], xv->shape.d[0])) return false;
    /* the InstanceNormalization's own scale and bias: constants of G */
    if (ig__opt_const_numel(cx, in->inputs[1]) != gd.n || ig__opt_const_numel(cx, in->inputs[2]) != gd.n) return false;
    int32_t i = ig__opt_out0(g, id), back = ig__uses_sole(u, i);
    if (!ig__opt_is(g, back, IG_OP_reshape) || g->nodes[back].inputs[0] != i) return false;
    m->x = x;
    m->y = ig__opt_out0(g, back);
    if (!ig__opt_shape_eq(&g->values[m->y].shape, &xv->shape)) return false;
    m->in_node = id;
    m->c = cd.n;
    m->groups = gd.n;
    m->n = 0;
    take(m, front);
    take(m, id);
    take(m, back);
    int32_t shape_v = g->nodes[back].n_inputs > 1 ? g->nodes[back].inputs[1] : -1, sn = ig__opt_producer(g, shape_v);
    if (ig__opt_is(g, sn, IG_OP_shape) && ig__uses_sole(u, shape_v) == back) take(m, sn);
    m->gamma = affine_step(cx, u, m, IG_OP_mul);
    m->beta = affine_step(cx, u, m, IG_OP_add);
    return true;
}

/* One [C] constant of x's dtype named after the output. */
static int32_t channel_const(ig_opt_ctx *cx, const match *m, const double *v, const char *what)
{
    ig_graph *g = cx->g;
    ingot_dtype t = g->values[m->x].dtype;
    void *buf = ig__malloc(ingot_dtype_size(t) * (size_t)m->c + 1);
    if (!buf) {
        ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory making the %s of node '%s'", what,
                 ig__node_label(&g->nodes[m->in_node]));
        return -1;
    }
    for (int64_t ch = 0; ch < m->c; ch++) ig__elem_set_f64(t, buf, ch, v[ch]);
    char base[300];
    snprintf(base, sizeof base, "%s_%s", g->values[m->y].name, what);
    int32_t id = ig__graph_add_const(g, base, t, 1, &m->c, buf, cx->err);
    ig__free(buf);
    return id;
}

static ingot_status make_gn(ig_opt_ctx *cx, const match *m)
{
    ig_graph *g = cx->g;
    const ig_node *in = &g->nodes[m->in_node];
    const ig_const *s = &g->values[in->inputs[1]].c, *b = &g->values[in->inputs[2]].c;
    double *sc = ig__malloc(sizeof(double) * 2 * (size_t)m->c + 1);
    if (!sc)
        return ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory folding the parameters of node '%s'",
                        ig__node_label(in));
    double *bi = sc + m->c;
    int64_t cg = m->c / m->groups;
    for (int64_t ch = 0; ch < m->c; ch++) {
        double gm = channel_value(g, m->gamma, ch, 1.0), bt = channel_value(g, m->beta, ch, 0.0);
        sc[ch] = ig__elem_f64(s->dtype, s->data, ch / cg) * gm;
        bi[ch] = ig__elem_f64(b->dtype, b->data, ch / cg) * gm + bt;
    }
    float eps = ig__attr_float(in, "epsilon", 1e-5f);
    int32_t scale = channel_const(cx, m, sc, "scale");
    int32_t bias = scale < 0 ? -1 : channel_const(cx, m, bi, "bias");
    ig__free(sc);
    if (bias < 0) return cx->err->status;
    int32_t last = m->nodes[m->n - 1];
    int32_t id = ig__opt_add_node(cx, g->nodes[last].name, "GroupNorm", "ingot", 1, 3, 1, 2);
    if (id < 0) return cx->err->status;
    ig_node *n = &g->nodes[id];
    ingot_status st;
    if ((st = ig__node_set_int(g, n, 0, "num_groups", m->groups, cx->err)) != INGOT_OK ||
        (st = ig__node_set_float(g, n, 1, "epsilon", eps, cx->err)) != INGOT_OK)
        return st;
    n->inputs[0] = m->x;
    n->inputs[1] = scale;
    n->inputs[2] = bias;
    return ig__opt_replace(cx, id, m->nodes, m->n, m->y);
}

static ingot_status visit(ig_opt_ctx *cx, ig_opt_walk *w, int32_t id)
{
    if (!ig__opt_is(cx->g, id, IG_OP_instance_normalization)) return INGOT_OK;
    match m;
    return match_gn(cx, &w->u, id, &m) ? make_gn(cx, &m) : INGOT_OK;
}

ingot_status ig__opt_pass_groupnorm(ig_opt_ctx *cx) { return ig__opt_walk(cx, false, visit); }
