/*
 * softmax.c -- the `softmax` pass: what attention left around a softmax becomes one
 * ingot.MaskedSoftmax(X, mask?) = softmax(X * scale + mask) over the last axis:
 *
 *   [Mul or Div by a scalar constant] -> [Add(mask), either operand order]
 *     -> Softmax | LogSoftmax over the last axis -> [Where(IsNaN(p), 0, p)]
 *
 * with at least one of the three optional parts (a bare Softmax stays). `log` says LogSoftmax,
 * `nan_to_zero` the guard. Valid for every shape: the scalar has one element and rank at most X's (X
 * keeps its shape), the Add's output has exactly X's shape and the mask broadcasts into it by numpy's
 * rules proved on symbolic dims, the axis is the last; X and the mask are fp32/fp16/bf16. Every
 * intermediate is read only by the next node of the pattern and is not a graph output; the new node
 * takes over the pattern's final output. Also the softmax helpers attention.c shares.
 */
#include "opt_internal.h"

bool ig__opt_softmax_last(const ig_node *n, int32_t r)
{
    if (n->n_inputs != 1 || n->n_outputs != 1 || n->outputs[0] < 0 || r < 1) return false;
    int64_t axis = ig__attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
    return axis == -1 || axis == r - 1;
}

bool ig__opt_mask_fits(const ig_shape *mask, const ig_shape *s)
{
    if (mask->rank < 0 || s->rank < 0 || mask->rank > s->rank) return false;
    for (int32_t k = 0; k < mask->rank; k++) {
        ig_dim a = mask->d[k], b = s->d[s->rank - mask->rank + k];
        if (!ig__dim_eq(a, b) && !(ig__dim_known(a) && a.n == 1)) return false;
    }
    return true;
}

/* Every element of constant v is zero. */
static bool all_zero(const ig_opt_ctx *cx, int32_t v)
{
    int64_t n = ig__opt_const_numel(cx, v);
    const ig_const *c = &cx->g->values[v].c;
    if (n < 0 || (n > 0 && !c->data)) return false;
    for (int64_t i = 0; i < n; i++)
        if (ig__elem_f64(c->dtype, c->data, i) != 0) return false;
    return true;
}

int32_t ig__opt_mask_source(const ig_opt_ctx *cx, int32_t mask, const ig_shape *s)
{
    const ig_graph *g = cx->g;
    for (int32_t hops = 0; hops < IG_MAX_RANK; hops++) {
        int32_t e = ig__opt_producer(g, mask);
        if (!ig__opt_is(g, e, IG_OP_expand)) break;
        int32_t x = g->nodes[e].inputs[0];
        if (x < 0 || g->values[x].dtype != g->values[mask].dtype || !ig__opt_mask_fits(&g->values[x].shape, s)) break;
        mask = x;
    }
    return ig__opt_is_const(cx, mask) && all_zero(cx, mask) ? -1 : mask;
}

int32_t ig__opt_nan_guard(const ig_opt_ctx *cx, const ig_uses *u, int32_t p, int32_t nodes[2])
{
    const ig_graph *g = cx->g;
    if (u->is_output[p] || ig__uses_count(u, p) != 2) return -1;
    int32_t rank = g->values[p].shape.rank;
    for (int sw = 0; sw < 2; sw++) {
        int32_t isn = u->node[u->off[p] + sw], wh = u->node[u->off[p] + 1 - sw];
        if (!ig__opt_is(g, isn, IG_OP_is_nan) || !ig__opt_is(g, wh, IG_OP_where) || g->nodes[wh].n_inputs != 3)
            continue;
        const ig_node *w = &g->nodes[wh];
        double z;
        if (g->nodes[isn].inputs[0] != p || ig__uses_sole(u, ig__opt_out0(g, isn)) != wh ||
            w->inputs[0] != ig__opt_out0(g, isn) || w->inputs[2] != p ||
            !ig__opt_rank_scalar(cx, w->inputs[1], rank, &z) || z != 0)
            continue;
        if (!ig__opt_shape_eq(&g->values[ig__opt_out0(g, wh)].shape, &g->values[p].shape)) continue;
        nodes[0] = isn;
        nodes[1] = wh;
        return ig__opt_out0(g, wh);
    }
    return -1;
}

/* Node id scales a tensor by a scalar constant (Mul either order, Div(x, c)): *src and the factor. */
static bool scale_of(const ig_opt_ctx *cx, int32_t id, int32_t *src, double *f)
{
    const ig_graph *g = cx->g;
    if (!(ig__opt_is(g, id, IG_OP_mul) || ig__opt_is(g, id, IG_OP_div)) || g->nodes[id].n_inputs != 2) return false;
    const ig_node *n = &g->nodes[id];
    for (int k = 0; k < (n->op == IG_OP_mul ? 2 : 1); k++) {
        int32_t x = n->inputs[k], c = n->inputs[1 - k];
        double v;
        if (x < 0 || c < 0 || x == c || !ig__opt_rank_scalar(cx, c, g->values[x].shape.rank, &v)) continue;
        if (n->op == IG_OP_div && v == 0) return false;
        *src = x;
        *f = n->op == IG_OP_mul ? v : 1.0 / v;
        return true;
    }
    return false;
}

typedef struct sm_match {
    int32_t x, mask, y;
    double scale;
    bool log, nan_to_zero;
    int32_t n;
    int32_t nodes[5];
} sm_match;

/* From the Softmax / LogSoftmax node sm. */
static bool match(const ig_opt_ctx *cx, const ig_uses *u, int32_t sm, sm_match *m)
{
    const ig_graph *g = cx->g;
    const ig_node *s = &g->nodes[sm];
    int32_t cur = s->inputs[0];
    if (cur < 0 || !ig__opt_softmax_last(s, g->values[cur].shape.rank) || !ig__opt_float_type(g->values[cur].dtype))
        return false;
    *m = (sm_match){.x = cur, .mask = -1, .scale = 1, .log = s->op == IG_OP_log_softmax};
    int32_t pre[2], n_pre = 0, reader = sm, src;
    double f;
    int32_t an = ig__opt_producer(g, cur);
    if (ig__opt_is(g, an, IG_OP_add) && g->nodes[an].n_inputs == 2 && ig__uses_sole(u, cur) == sm) {
        const ig_node *a = &g->nodes[an];
        const ig_shape *os = &g->values[cur].shape;
        int pick = -1;
        for (int k = 0; k < 2; k++) {
            int32_t xv = a->inputs[k], mv = a->inputs[1 - k];
            if (xv < 0 || mv < 0 || xv == mv || !ig__opt_shape_eq(&g->values[xv].shape, os)) continue;
            if (!ig__opt_mask_fits(&g->values[mv].shape, os) || !ig__opt_float_type(g->values[mv].dtype)) continue;
            /* prefer the operand a scalar scaled: both parts fuse */
            bool scaled = ig__uses_sole(u, xv) == an && scale_of(cx, ig__opt_producer(g, xv), &src, &f);
            if (pick < 0 || scaled) pick = k;
        }
        if (pick >= 0) {
            m->mask = ig__opt_mask_source(cx, a->inputs[1 - pick], os);
            cur = a->inputs[pick];
            pre[n_pre++] = an;
            reader = an;
        }
    }
    int32_t sn = ig__opt_producer(g, cur);
    if (ig__uses_sole(u, cur) == reader && scale_of(cx, sn, &src, &f)) {
        m->scale = f;
        pre[n_pre++] = sn;
        cur = src;
    }
    m->x = cur;
    for (int32_t i = n_pre - 1; i >= 0; i--) m->nodes[m->n++] = pre[i];
    m->nodes[m->n++] = sm;
    m->y = ig__opt_out0(g, sm);
    int32_t guard[2], pg = ig__opt_nan_guard(cx, u, m->y, guard);
    if (pg >= 0) {
        m->nan_to_zero = true;
        m->nodes[m->n++] = guard[0];
        m->nodes[m->n++] = guard[1];
        m->y = pg;
    }
    return m->n > 1 && ig__opt_float_type(g->values[m->x].dtype);
}

static ingot_status make_masked(ig_opt_ctx *cx, const sm_match *m)
{
    ig_graph *g = cx->g;
    int32_t last = m->nodes[m->n - 1];
    int32_t id = ig__opt_add_node(cx, g->nodes[last].name, "MaskedSoftmax", "ingot", 1, m->mask >= 0 ? 2 : 1, 1, 3);
    if (id < 0) return cx->err->status;
    ig_node *n = &g->nodes[id];
    ingot_status st;
    if ((st = ig__node_set_float(g, n, 0, "scale", (float)m->scale, cx->err)) != INGOT_OK ||
        (st = ig__node_set_int(g, n, 1, "log", m->log, cx->err)) != INGOT_OK ||
        (st = ig__node_set_int(g, n, 2, "nan_to_zero", m->nan_to_zero, cx->err)) != INGOT_OK)
        return st;
    n->inputs[0] = m->x;
    if (m->mask >= 0) n->inputs[1] = m->mask;
    return ig__opt_replace(cx, id, m->nodes, m->n, m->y);
}

static ingot_status visit(ig_opt_ctx *cx, ig_opt_walk *w, int32_t id)
{
    if (!ig__opt_is(cx->g, id, IG_OP_softmax) && !ig__opt_is(cx->g, id, IG_OP_log_softmax)) return INGOT_OK;
    sm_match m;
    return match(cx, &w->u, id, &m) ? make_masked(cx, &m) : INGOT_OK;
}

ingot_status ig__opt_pass_softmax(ig_opt_ctx *cx) { return ig__opt_walk(cx, false, visit); }
