/*
 * attention.c -- the `attention` pass: scaled dot-product attention as exporters write it becomes one
 * ingot.Attention(Q, K^T, V, mask?) with k_transposed = 1:
 *
 *   [Mul(Q, c)] [Mul(K^T, c)] -> MatMul(Q, K^T) -> [Mul or Div by a scalar constant]
 *     -> [Add(mask), either operand order] -> Softmax over the last axis
 *     -> [Where(IsNaN(p), 0, p)] -> MatMul(p, V)
 *
 * (torch's scaled_dot_product_attention scales Q and K^T by sqrt(scale) each; BERT and ViT divide the
 * scores; the NaN guard maps fully masked rows to zeros). scale is the product of the constant factors
 * (a Div by c multiplies by 1/c), nan_to_zero says whether the guard was there.
 *
 * Valid for every shape: Q, K^T, V are float of one dtype and one rank r >= 3 with batch dims proved
 * equal (ig__dim_eq: Attention does not broadcast them), Q's last dim equal to K^T's second-to-last
 * and K^T's last to V's second-to-last, so both MatMuls are plain batched products. Each scalar
 * constant has one element and rank at most r (it keeps the scores' shape); the mask broadcasts to the
 * scores' shape by numpy's rules proved on symbolic dims (each of its dims equal or 1) and the Add's
 * output is the scores' shape. The Softmax axis is the last (opset 13's default -1, or an older
 * opset's axis = r - 1, where its 2-D coercion is the same). Every intermediate is read only by the
 * next node of the pattern and is not a graph output (a pre-scaling Mul is absorbed only when the
 * MatMul alone reads it); the Attention node takes over the second MatMul's output.
 */
#include "opt_internal.h"

#define MAX_NODES 10

typedef struct att_match {
    int32_t q, kt, v, mask;
    double scale;
    bool nan_to_zero;
    int32_t n;
    int32_t nodes[MAX_NODES];
} att_match;

static void take(att_match *m, int32_t id) { m->nodes[m->n++] = id; }

/* Node id multiplies x by a scalar constant (Mul either order, or Div(x, c)): the factor. */
static bool scales(const ig_opt_ctx *cx, int32_t id, int32_t x, double *f)
{
    const ig_graph *g = cx->g;
    if (!(ig__opt_is(g, id, IG_OP_mul) || ig__opt_is(g, id, IG_OP_div)) || g->nodes[id].n_inputs != 2) return false;
    const ig_node *n = &g->nodes[id];
    int32_t c = ig__opt_other_input(n, x), rank = g->values[x].shape.rank;
    double k;
    if (c < 0 || c == x || !ig__opt_rank_scalar(cx, c, rank, &k)) return false;
    if (n->op == IG_OP_mul) {
        *f = k;
        return true;
    }
    if (n->inputs[0] != x || k == 0) return false;
    *f = 1.0 / k;
    return true;
}

/* Q, K^T, V: float, one dtype, one rank >= 3, equal batch dims, matching inner dims. */
static bool operands_fit(const ig_graph *g, const att_match *m)
{
    const ig_value *q = &g->values[m->q], *k = &g->values[m->kt], *v = &g->values[m->v];
    int32_t r = q->shape.rank;
    if (!ig__opt_float_type(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype) return false;
    if (r < 3 || k->shape.rank != r || v->shape.rank != r) return false;
    for (int32_t d = 0; d < r - 2; d++)
        if (!ig__dim_eq(q->shape.d[d], k->shape.d[d]) || !ig__dim_eq(q->shape.d[d], v->shape.d[d])) return false;
    return ig__dim_eq(q->shape.d[r - 1], k->shape.d[r - 2]) && ig__dim_eq(k->shape.d[r - 1], v->shape.d[r - 2]);
}

/* From the scores MatMul mm. */
static bool match(const ig_opt_ctx *cx, const ig_uses *u, int32_t mm, att_match *m)
{
    const ig_graph *g = cx->g;
    const ig_node *n = &g->nodes[mm];
    if (n->n_inputs != 2 || n->inputs[0] < 0 || n->inputs[1] < 0 || n->n_outputs != 1) return false;
    *m = (att_match){.q = n->inputs[0], .kt = n->inputs[1], .v = -1, .mask = -1, .scale = 1};
    double f;
    for (int side = 0; side < 2; side++) {
        int32_t *x = side ? &m->kt : &m->q, pn = ig__opt_producer(g, *x);
        if (pn < 0 || ig__uses_sole(u, *x) != mm || !ig__opt_is(g, pn, IG_OP_mul)) continue;
        for (int k = 0; k < 2; k++) {
            int32_t src = g->nodes[pn].inputs[k];
            if (src >= 0 && scales(cx, pn, src, &f)) {
                m->scale *= f;
                *x = src;
                take(m, pn);
                break;
            }
        }
    }
    take(m, mm);
    int32_t s = ig__opt_out0(g, mm), c = ig__uses_sole(u, s);
    if (c >= 0 && scales(cx, c, s, &f)) {
        m->scale *= f;
        take(m, c);
        s = ig__opt_out0(g, c);
        c = ig__uses_sole(u, s);
    }
    if (ig__opt_is(g, c, IG_OP_add) && g->nodes[c].n_inputs == 2) {
        int32_t mask = ig__opt_other_input(&g->nodes[c], s);
        const ig_shape *ss = &g->values[s].shape;
        if (mask < 0 || mask == s || !ig__opt_mask_fits(&g->values[mask].shape, ss) ||
            !ig__opt_shape_eq(&g->values[ig__opt_out0(g, c)].shape, ss) || !ig__opt_float_type(g->values[mask].dtype))
            return false;
        m->mask = ig__opt_mask_source(cx, mask, ss);
        take(m, c);
        s = ig__opt_out0(g, c);
        c = ig__uses_sole(u, s);
    }
    if (!ig__opt_is(g, c, IG_OP_softmax) || !ig__opt_softmax_last(&g->nodes[c], g->values[s].shape.rank)) return false;
    take(m, c);
    int32_t p = ig__opt_out0(g, c), guard[2];
    int32_t pg = ig__opt_nan_guard(cx, u, p, guard);
    if (pg >= 0) {
        m->nan_to_zero = true;
        take(m, guard[0]);
        take(m, guard[1]);
        p = pg;
    }
    int32_t mm2 = ig__uses_sole(u, p);
    if (!ig__opt_is(g, mm2, IG_OP_matmul) || g->nodes[mm2].n_inputs != 2 || g->nodes[mm2].inputs[0] != p ||
        g->nodes[mm2].inputs[1] == p || g->nodes[mm2].inputs[1] < 0)
        return false;
    m->v = g->nodes[mm2].inputs[1];
    take(m, mm2);
    /* V and the mask come from outside the pattern (its values are read only inside it) */
    for (int32_t i = 0; i < m->n; i++) {
        int32_t o = ig__opt_out0(g, m->nodes[i]);
        if (o == m->v || o == m->mask || o == m->q || o == m->kt) return false;
    }
    return operands_fit(g, m);
}

static ingot_status make_attention(ig_opt_ctx *cx, const att_match *m)
{
    ig_graph *g = cx->g;
    for (int32_t i = 0; i < m->n; i++)
        if (g->nodes[m->nodes[i]].dead) return INGOT_OK; /* defensive: patterns share no node */
    int32_t last = m->nodes[m->n - 1], y = ig__opt_out0(g, last);
    int32_t id = ig__opt_add_node(cx, g->nodes[last].name, "Attention", "ingot", 1, m->mask >= 0 ? 4 : 3, 1, 3);
    if (id < 0) return cx->err->status;
    ig_node *n = &g->nodes[id];
    ingot_status st;
    if ((st = ig__node_set_float(g, n, 0, "scale", (float)m->scale, cx->err)) != INGOT_OK ||
        (st = ig__node_set_int(g, n, 1, "k_transposed", 1, cx->err)) != INGOT_OK ||
        (st = ig__node_set_int(g, n, 2, "nan_to_zero", m->nan_to_zero, cx->err)) != INGOT_OK)
        return st;
    n->inputs[0] = m->q;
    n->inputs[1] = m->kt;
    n->inputs[2] = m->v;
    if (m->mask >= 0) n->inputs[3] = m->mask;
    return ig__opt_replace(cx, id, m->nodes, m->n, y);
}

static ingot_status visit(ig_opt_ctx *cx, ig_opt_walk *w, int32_t id)
{
    if (!ig__opt_is(cx->g, id, IG_OP_matmul)) return INGOT_OK;
    att_match m;
    return match(cx, &w->u, id, &m) ? make_attention(cx, &m) : INGOT_OK;
}

ingot_status ig__opt_pass_attention(ig_opt_ctx *cx) { return ig__opt_walk(cx, false, visit); }
