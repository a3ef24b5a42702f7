/*
 * gemm_siblings.c -- the `gemm_siblings` pass: products that read the same input A with constant
 * weights become one product over the weights side by side, and a Split gives each its columns back.
 *
 *   Y_1 = A W_1 + b_1, ..., Y_n = A W_n + b_n   ->   [Y_1 | ... | Y_n] = A [W_1 | ... | W_n] + [b_1 | ... | b_n]
 *
 * BERT's, ViT's and Whisper's query, key and value projections are three GEMMs of [tokens, E] by
 * [E, E]; as one of [E, 3E] they are one launch instead of three, and at batch 1 -- where each of the
 * three fills a fraction of the GPU -- one wave instead of three. The Split's outputs are column slices
 * of the product: the backends make them views (strided rows), which the head-splitting Reshape and
 * Transpose after them read as they read the separate outputs.
 *
 * A sibling is a MatMul, a Gemm (transA = 0) or an ingot.FusedMatMul (trans_a = 0, no epilogue
 * program, no extras: gemm_epilogue's product with only a bias or a scale) of input A (rank >= 2), a
 * constant 2-D weight of A's K rows and a constant bias of its N columns or none, all of one dtype.
 * alpha is folded into the weights (alpha W), Gemm's beta into the bias (beta C); a sibling without a
 * bias gets zeros when another has one. The weights are laid out [K, N_1 + ... + N_n] whatever each
 * sibling's trans_b was. Run after gemm_epilogue (whose biases and scalar Muls it needs absorbed) and
 * before pointwise. Siblings with an epilogue (BERT's intermediate GELU) are left alone: a program
 * over a column slice is not what the epilogue kernels run.
 */
#include "opt_internal.h"

#include <stdio.h>

#define MAX_SIBS 32

typedef struct sib {
    int32_t node, w, bias; /* the weight and the bias values (bias -1: none) */
    bool trans_b;
    double alpha, beta;
    int64_t k, n; /* rows and columns of the weight as the product reads it */
    int32_t pos;  /* position in the graph's order */
} sib;

/* A FusedMatMul's epilogue is empty (and it has no extras). */
static bool no_epilogue(const ig_opt_ctx *cx, const ig_node *n)
{
    if (n->n_inputs > 3) return false;
    ig_pw_prog p;
    ig_err e = {0};
    return ig__pw_decode(cx->g, n, "epilogue_", 1, &p, &e) == INGOT_OK && p.n_ops == 0;
}

/* Node id as a sibling over input a of dtype t whose weight has k rows (k < 0: any): true with s filled. */
static bool sibling_of(const ig_opt_ctx *cx, int32_t id, int32_t a, int64_t k, ingot_dtype t, sib *s)
{
    const ig_graph *g = cx->g;
    const ig_node *n = &g->nodes[id];
    if (n->dead || n->n_outputs != 1 || n->outputs[0] < 0 || n->n_inputs < 2 || n->inputs[0] != a) return false;
    bool def = !n->domain || !n->domain[0];
    bool fused = !def && !strcmp(n->domain, "ingot") && !strcmp(n->op_type, "FusedMatMul");
    if (!fused && !(def && (n->op == IG_OP_matmul || n->op == IG_OP_gemm))) return false;
    memset(s, 0, sizeof *s);
    s->node = id;
    s->w = n->inputs[1];
    s->bias = -1;
    s->alpha = s->beta = 1;
    if (s->w < 0 || !ig__opt_is_const(cx, s->w)) return false;
    const ig_value *wv = &g->values[s->w], *yv = &g->values[n->outputs[0]];
    if (wv->c.rank != 2 || wv->dtype != t || yv->dtype != t) return false;
    if (fused) {
        if (ig__attr_int(n, "trans_a", 0) || !no_epilogue(cx, n)) return false;
        s->trans_b = ig__attr_int(n, "trans_b", 0) != 0;
        s->alpha = ig__attr_float(n, "alpha", 1.0f);
        s->bias = n->n_inputs > 2 ? n->inputs[2] : -1;
    } else if (n->op == IG_OP_gemm) {
        if (ig__attr_int(n, "transA", 0) || g->values[a].shape.rank != 2) return false;
        s->trans_b = ig__attr_int(n, "transB", 0) != 0;
        s->alpha = ig__attr_float(n, "alpha", 1.0f);
        s->beta = ig__attr_float(n, "beta", 1.0f);
        s->bias = n->n_inputs > 2 && s->beta != 0 ? n->inputs[2] : -1;
    } else if (n->n_inputs != 2) {
        return false;
    }
    const int64_t *wd = wv->c.dims;
    s->k = s->trans_b ? wd[1] : wd[0];
    s->n = s->trans_b ? wd[0] : wd[1];
    if (k >= 0 && s->k != k) return false;
    if (s->n < 1) return false;
    /* the bias as FusedMatMul and Gemm both accept it for fusion: a constant of N elements, [N] or [1, N] */
    if (s->bias >= 0) {
        const ig_const *c = &g->values[s->bias].c;
        if (!ig__opt_is_const(cx, s->bias) || c->dtype != t || ig__opt_const_numel(cx, s->bias) != s->n ||
            c->rank < 1 || c->rank > 2 || c->dims[c->rank - 1] != s->n)
            return false;
    }
    return true;
}

/* The siblings' weights side by side, [K, N_total], each scaled by its alpha; their biases likewise
 * (beta-scaled, zeros where a sibling has none). *w_out, *b_out: new constants (b_out -1: no sibling
 * has a bias). */
static ingot_status concat_params(ig_opt_ctx *cx, const sib *s, int32_t n_s, int64_t k, ingot_dtype t, int32_t *w_out,
                                  int32_t *b_out)
{
    ig_graph *g = cx->g;
    int64_t nt = 0;
    bool any_bias = false;
    for (int32_t i = 0; i < n_s; i++) {
        nt += s[i].n;
        any_bias |= s[i].bias >= 0;
    }
    size_t es = ingot_dtype_size(t);
    void *w = ig__malloc(es * (size_t)(k * nt) + 1), *b = ig__malloc(es * (size_t)nt + 1);
    if (!w || !b) {
        ig__free(w);
        ig__free(b);
        return ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory concatenating the weights of node '%s'",
                        ig__node_label(&g->nodes[s[0].node]));
    }
    int64_t col = 0;
    for (int32_t i = 0; i < n_s; i++) {
        const ig_const *c = &g->values[s[i].w].c;
        for (int64_t r = 0; r < k; r++)
            for (int64_t j = 0; j < s[i].n; j++) {
                double x = ig__elem_f64(t, c->data, s[i].trans_b ? j * k + r : r * s[i].n + j);
                ig__elem_set_f64(t, w, r * nt + col + j, s[i].alpha == 1 ? x : x * s[i].alpha);
            }
        for (int64_t j = 0; j < s[i].n; j++) {
            double x = s[i].bias >= 0 ? ig__elem_f64(t, g->values[s[i].bias].c.data, j) * s[i].beta : 0;
            ig__elem_set_f64(t, b, col + j, x);
        }
        col += s[i].n;
    }
    char base[300];
    snprintf(base, sizeof base, "%s_siblings", g->values[s[0].w].name ? g->values[s[0].w].name : "weight");
    int64_t wd[2] = {k, nt};
    *w_out = ig__graph_add_const(g, base, t, 2, wd, w, cx->err);
    *b_out = -1;
    if (*w_out >= 0 && any_bias) {
        snprintf(base, sizeof base, "%s_siblings_bias", g->values[s[0].w].name ? g->values[s[0].w].name : "weight");
        *b_out = ig__graph_add_const(g, base, t, 1, &nt, b, cx->err);
    }
    ig__free(w);
    ig__free(b);
    return *w_out < 0 || (any_bias && *b_out < 0) ? cx->err->status : INGOT_OK;
}

/* One FusedMatMul over the concatenated weights, then a Split of its last axis into the siblings'
 * outputs. */
static ingot_status merge(ig_opt_ctx *cx, const sib *s, int32_t n_s, int32_t a, int64_t k, ingot_dtype t)
{
    ig_graph *g = cx->g;
    int32_t w = -1, b = -1;
    ingot_status st = concat_params(cx, s, n_s, k, t, &w, &b);
    if (st != INGOT_OK) return st;
    int64_t split[MAX_SIBS];
    int32_t nodes[MAX_SIBS];
    for (int32_t i = 0; i < n_s; i++) {
        split[i] = s[i].n;
        nodes[i] = s[i].node;
    }
    int32_t sv = ig__graph_add_const(g, "gemm_siblings_split", INGOT_DTYPE_INT64, 1, &(int64_t){n_s}, split, cx->err);
    char name[300];
    snprintf(name, sizeof name, "%s_siblings", ig__node_label(&g->nodes[s[0].node]));
    int32_t y = sv >= 0 ? ig__graph_new_value(g, name, cx->err) : -1;
    int32_t mm = y >= 0 ? ig__opt_add_node(cx, name, "FusedMatMul", "ingot", 1, 3, 1, 5) : -1;
    if (mm < 0) return cx->err->status;
    ig_pw_prog empty;
    ig__pw_init(&empty, 1, false);
    ig_node *n = &g->nodes[mm];
    if ((st = ig__node_set_float(g, n, 0, "alpha", 1.0f, cx->err)) != INGOT_OK ||
        (st = ig__node_set_int(g, n, 1, "trans_a", 0, cx->err)) != INGOT_OK ||
        (st = ig__node_set_int(g, n, 2, "trans_b", 0, cx->err)) != INGOT_OK ||
        (st = ig__pw_encode(g, n, 3, "epilogue_", &empty, cx->err)) != INGOT_OK)
        return st;
    n->inputs[0] = a;
    n->inputs[1] = w;
    n->inputs[2] = b;
    ig__opt_set_output(g, mm, 0, y);
    if ((st = ig__opt_set_covers(cx, mm, nodes, n_s)) != INGOT_OK) return st;
    int32_t rank = g->values[g->nodes[s[0].node].outputs[0]].shape.rank;
    snprintf(name, sizeof name, "%s_split", ig__node_label(&g->nodes[s[0].node]));
    int32_t sp = ig__opt_add_node(cx, name, "Split", "", 13, 2, n_s, 1);
    if (sp < 0) return cx->err->status;
    n = &g->nodes[sp];
    if ((st = ig__node_set_int(g, n, 0, "axis", rank - 1, cx->err)) != INGOT_OK) return st;
    n->inputs[0] = y;
    n->inputs[1] = sv;
    for (int32_t i = 0; i < n_s; i++) {
        int32_t out = g->nodes[s[i].node].outputs[0];
        ig__graph_remove_node(g, s[i].node);
        ig__opt_set_output(g, sp, i, out);
    }
    cx->n_rewrites++;
    return INGOT_OK;
}

static ingot_status visit(ig_opt_ctx *cx, ig_opt_walk *w, int32_t id)
{
    const ig_graph *g = cx->g;
    const ig_node *n = &g->nodes[id];
    if (n->dead || n->n_inputs < 2 || n->inputs[0] < 0 || n->inputs[1] < 0) return INGOT_OK;
    int32_t a = n->inputs[0];
    const ig_value *av = &g->values[a], *wv = &g->values[n->inputs[1]];
    if (!ig__opt_float_type(av->dtype) || av->shape.rank < 2 || !ig__opt_is_const(cx, n->inputs[1]) || wv->c.rank != 2)
        return INGOT_OK;
    /* K from A's last dim when known, else from this node's weight (the siblings must agree with it) */
    const ig_dim kd = av->shape.d[av->shape.rank - 1];
    sib s[MAX_SIBS];
    int32_t n_s = 0;
    /* this node first: a walk in order meets the earliest sibling first, so a group forms once */
    if (!sibling_of(cx, id, a, ig__dim_known(kd) ? kd.n : -1, av->dtype, &s[0])) return INGOT_OK;
    int64_t k = s[0].k;
    s[n_s++].pos = w->pos[id];
    for (int32_t u = w->u.off[a]; u < w->u.off[a + 1] && n_s < MAX_SIBS; u++) {
        int32_t o = w->u.node[u];
        if (o == id || o >= w->cap || w->pos[o] < 0) continue;
        bool dup = false;
        for (int32_t i = 0; i < n_s; i++) dup |= s[i].node == o;
        if (!dup && sibling_of(cx, o, a, k, av->dtype, &s[n_s])) s[n_s++].pos = w->pos[o];
    }
    if (n_s < 2) return INGOT_OK;
    /* in the graph's order, so the columns follow the order of the nodes they came from */
    for (int32_t i = 1; i < n_s; i++)
        for (int32_t j = i; j > 0 && s[j].pos < s[j - 1].pos; j--) {
            sib t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
    return merge(cx, s, n_s, a, k, av->dtype);
}

ingot_status ig__opt_pass_gemm_siblings(ig_opt_ctx *cx) { return ig__opt_walk(cx, true, visit); }
