/*
 * gemm_epilogue.c -- the `gemm_epilogue` pass: a MatMul or Gemm and what follows it become one
 * ingot.FusedMatMul(A, B, bias or omitted, extras...) = epilogue(alpha * op(A) op(B) + bias, extras).
 *
 *   MatMul: [Mul or Div by a scalar constant] (alpha) -> [Add(constant [N] or [1, ..., 1, N])] (the
 *           bias; N the output's last dim, a known constant) -> pointwise group;
 *   Gemm:   alpha, transA, transB carried (trans_a, trans_b: Gemm's operands are 2-D, so transposing
 *           the last two dims is Gemm's transpose); C becomes the bias when it is a constant of N
 *           elements shaped [N] or [1, N] (scaled by beta into a new constant when beta != 1), else an
 *           extra the epilogue adds first as acc + beta * C (C broadcasts to [M, N] as Gemm's does);
 *           beta = 0 drops C; then the pointwise group.
 *
 * Each absorbed Mul/Add is the only reader of the value before it, which is not a graph output; the
 * scalar has rank at most the output's and the bias rank at most the output's, so neither changes
 * the shape, and B has rank >= 2 so the output's last dim is N. The group grows from the value after
 * them by group.c's rule, with conv_epilogue's limits (one input and one instruction left for the
 * CUDA backend's bias). Batched MatMuls (both operands computed: attention's leftovers) fuse the same
 * way; the bias then broadcasts over the batch dims as the Add did. Operands are fp32/fp16/bf16 of one
 * dtype. A MatMul or Gemm with nothing to fuse stays as it is.
 */
#include "opt_internal.h"

#include <stdio.h>

typedef struct mm_match {
    int32_t node, a, b;
    bool is_gemm, trans_a, trans_b;
    double alpha;
    int32_t bias;      /* the bias value as it is in the graph (-1: none) */
    double bias_scale; /* Gemm's beta, applied to a new constant */
    int32_t c_extra;   /* Gemm's C as an extra (-1: none) */
    double beta;
    int32_t n_absorbed;
    int32_t absorbed[2]; /* the scalar Mul and the bias Add */
    int32_t y;           /* the value the group starts from */
} mm_match;

/* A constant of N elements shaped [N] or [1, ..., 1, N], rank at most max_rank, of dtype t. */
static bool bias_shaped(const ig_opt_ctx *cx, int32_t v, ig_dim n_dim, int32_t max_rank, ingot_dtype t)
{
    if (!ig__dim_known(n_dim) || ig__opt_const_numel(cx, v) != n_dim.n) return false;
    const ig_const *c = &cx->g->values[v].c;
    if (c->dtype != t || c->rank < 1 || c->rank > max_rank || c->dims[c->rank - 1] != n_dim.n) return false;
    for (int32_t k = 0; k + 1 < c->rank; k++)
        if (c->dims[k] != 1) return false;
    return true;
}

/* The node, when it is MatMul/Gemm the pass can take; its operands and attributes into m. */
static bool anchor_of(const ig_opt_ctx *cx, int32_t id, mm_match *m)
{
    const ig_graph *g = cx->g;
    const ig_node *n = &g->nodes[id];
    if (n->dead || (n->op != IG_OP_matmul && n->op != IG_OP_gemm) || (n->domain && n->domain[0])) return false;
    if (n->n_inputs < 2 || n->n_outputs != 1 || n->outputs[0] < 0 || n->inputs[0] < 0 || n->inputs[1] < 0) return false;
    const ig_value *a = &g->values[n->inputs[0]], *b = &g->values[n->inputs[1]], *y = &g->values[n->outputs[0]];
    if (!ig__opt_float_type(a->dtype) || b->dtype != a->dtype || y->dtype != a->dtype || y->shape.rank < 0)
        return false;
    if (a->shape.rank < 1 || b->shape.rank < 1) return false;
    memset(m, 0, sizeof *m);
    m->node = id;
    m->a = n->inputs[0];
    m->b = n->inputs[1];
    m->alpha = 1;
    m->bias = m->c_extra = -1;
    m->bias_scale = m->beta = 1;
    m->y = n->outputs[0];
    if (n->op == IG_OP_matmul) return true;
    if (a->shape.rank != 2 || b->shape.rank != 2) return false;
    m->is_gemm = true;
    m->trans_a = ig__attr_int(n, "transA", 0) != 0;
    m->trans_b = ig__attr_int(n, "transB", 0) != 0;
    m->alpha = ig__attr_float(n, "alpha", 1.0f);
    double beta = ig__attr_float(n, "beta", 1.0f);
    int32_t c = n->n_inputs > 2 ? n->inputs[2] : -1;
    if (c < 0 || beta == 0) return true;
    if (bias_shaped(cx, c, y->shape.d[1], 2, a->dtype)) {
        m->bias = c;
        m->bias_scale = beta;
    } else {
        m->c_extra = c;
        m->beta = beta;
    }
    return true;
}

/* MatMul only: the scalar Mul/Div into alpha, then the bias Add. */
static void absorb(const ig_opt_ctx *cx, const ig_uses *u, mm_match *m)
{
    const ig_graph *g = cx->g;
    if (m->is_gemm) return;
    int32_t rank = g->values[m->y].shape.rank;
    int32_t c = ig__uses_sole(u, m->y);
    double k;
    if (c >= 0 && (g->nodes[c].op == IG_OP_mul || g->nodes[c].op == IG_OP_div) && g->nodes[c].n_inputs == 2) {
        const ig_node *s = &g->nodes[c];
        int32_t other = ig__opt_other_input(s, m->y);
        bool ok =
            other != m->y && ig__opt_rank_scalar(cx, other, rank, &k) && (s->op == IG_OP_mul || s->inputs[1] == other);
        if (ok && s->op == IG_OP_div && k == 0) ok = false;
        if (ok) {
            m->alpha = s->op == IG_OP_mul ? k : 1.0 / k;
            m->absorbed[m->n_absorbed++] = c;
            m->y = s->outputs[0];
            c = ig__uses_sole(u, m->y);
        }
    }
    if (c >= 0 && g->nodes[c].op == IG_OP_add && g->nodes[c].n_inputs == 2 && rank >= 1 &&
        g->values[m->b].shape.rank >= 2) {
        const ig_node *s = &g->nodes[c];
        int32_t other = ig__opt_other_input(s, m->y);
        ig_dim n_dim = g->values[m->y].shape.d[rank - 1];
        if (other != m->y && bias_shaped(cx, other, n_dim, rank, g->values[m->a].dtype) &&
            ig__opt_shape_eq(&g->values[s->outputs[0]].shape, &g->values[m->y].shape)) {
            m->bias = other;
            m->absorbed[m->n_absorbed++] = c;
            m->y = s->outputs[0];
        }
    }
}

/* The bias as FusedMatMul takes it: [N] scaled by bias_scale (the bias itself when it is [N] or [1, N] and
 * the scale 1). */
static int32_t bias_input(ig_opt_ctx *cx, const mm_match *m)
{
    ig_graph *g = cx->g;
    const ig_const c = g->values[m->bias].c;
    if (c.rank <= 2 && m->bias_scale == 1) return m->bias;
    int64_t n = c.dims[c.rank - 1];
    size_t es = ingot_dtype_size(c.dtype);
    void *buf = ig__malloc(es * (size_t)n + 1);
    if (!buf) {
        ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory making a bias for node '%s'",
                 ig__node_label(&g->nodes[m->node]));
        return -1;
    }
    for (int64_t i = 0; i < n; i++) ig__elem_set_f64(c.dtype, buf, i, ig__elem_f64(c.dtype, c.data, i) * m->bias_scale);
    char base[300];
    snprintf(base, sizeof base, "%s_bias", g->values[m->bias].name);
    int32_t id = ig__graph_add_const(g, base, c.dtype, 1, &n, buf, cx->err);
    ig__free(buf);
    return id;
}

static ingot_status make_fused(ig_opt_ctx *cx, const mm_match *m, ig_opt_group *gr, int32_t *pos, int32_t cap)
{
    ig_graph *g = cx->g;
    int32_t bias = m->bias >= 0 ? bias_input(cx, m) : -1;
    if (m->bias >= 0 && bias < 0) return cx->err->status;
    int32_t n_extra = gr->n_in - 1;
    int32_t id = ig__opt_add_node(cx, g->nodes[m->node].name, "FusedMatMul", "ingot", 1, 3 + n_extra, 1, 5);
    if (id < 0) return cx->err->status;
    ig_node *n = &g->nodes[id];
    ingot_status st;
    if ((st = ig__node_set_float(g, n, 0, "alpha", (float)m->alpha, cx->err)) != INGOT_OK ||
        (st = ig__node_set_int(g, n, 1, "trans_a", m->trans_a, cx->err)) != INGOT_OK ||
        (st = ig__node_set_int(g, n, 2, "trans_b", m->trans_b, cx->err)) != INGOT_OK ||
        (st = ig__pw_encode(g, n, 3, "epilogue_", &gr->prog, cx->err)) != INGOT_OK)
        return st;
    n->inputs[0] = m->a;
    n->inputs[1] = m->b;
    n->inputs[2] = bias;
    for (int32_t i = 0; i < n_extra; i++) n->inputs[3 + i] = gr->in[1 + i];
    int32_t covered[3 + IG_PW_MAX_OPS], nc = 0;
    covered[nc++] = m->node;
    for (int32_t i = 0; i < m->n_absorbed; i++) covered[nc++] = m->absorbed[i];
    for (int32_t i = 0; i < gr->n_members; i++) covered[nc++] = gr->members[i];
    if ((st = ig__opt_set_covers(cx, id, covered, nc)) != INGOT_OK) return st;
    ig__graph_remove_node(g, m->node);
    for (int32_t i = 0; i < m->n_absorbed; i++) ig__graph_remove_node(g, m->absorbed[i]);
    if (gr->n_members) {
        ig__opt_group_finish(cx, gr, id, pos, cap);
    } else {
        if (id < cap) pos[id] = pos[m->n_absorbed ? m->absorbed[m->n_absorbed - 1] : m->node];
        ig__opt_set_output(g, id, 0, m->y);
    }
    cx->n_rewrites++;
    return INGOT_OK;
}

static ingot_status visit(ig_opt_ctx *cx, ig_opt_walk *w, int32_t id)
{
    mm_match m;
    if (!anchor_of(cx, id, &m)) return INGOT_OK;
    absorb(cx, &w->u, &m);
    const ig_value *y = &cx->g->values[m.y];
    ig_opt_group gr = {.anchor = m.node,
                       .int_math = false,
                       .max_in = IG_PW_MAX_IN - 1,
                       .max_ops = IG_PW_MAX_OPS - 1,
                       .dtype = y->dtype,
                       .shape = y->shape,
                       .n_fixed = 1,
                       .seed = m.y};
    gr.in[0] = m.y;
    if (m.c_extra >= 0) { /* acc + beta * C first */
        gr.n_fixed = 2;
        gr.in[1] = m.c_extra;
        gr.has_pre = true;
        if (m.beta == 1)
            gr.pre = (ig_pw_inst){IG_PW_ADD, 0, 1, IG_PW_NONE, 0, 0};
        else
            gr.pre = (ig_pw_inst){IG_PW_MULADD, 1, IG_PW_K, 0, (float)m.beta, 0};
    }
    /* a Gemm or MatMul with nothing after it gains nothing from the rewrite */
    int32_t n = ig__opt_group_grow(cx, &w->u, w->pos, &gr);
    return n > 0 || (n == 0 && m.n_absorbed > 0) ? make_fused(cx, &m, &gr, w->pos, w->cap) : INGOT_OK;
}

ingot_status ig__opt_pass_gemm_epilogue(ig_opt_ctx *cx) { return ig__opt_walk(cx, true, visit); }
