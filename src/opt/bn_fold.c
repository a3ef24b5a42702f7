/*
 * bn_fold.c -- the `bn_fold` pass: BatchNormalization with constant parameters, in inference form,
 * becomes part of the Conv before it, or a Mul and an Add.
 *
 * Inference-form BN is, per channel c of axis 1, y = x * f[c] + (beta[c] - mean[c] * f[c]) with
 * f = gamma / sqrt(var + eps). Two rewrites:
 *
 *  - Conv (any group, 1-D/2-D/3-D, constant W [M, C/group, k...] and optional constant B) whose output
 *    is read by the BN alone and is not a graph output: output channel m of the Conv is scaled by
 *    f[m] by scaling filter m, so one Conv with W' = W * f[m] and B' = (B - mean) * f + beta computes
 *    both. Holds for every input shape: the channel count is W's M, fixed.
 *  - any other such BN: Mul(x, f) then Add(., shift), constants of shape [C, 1, ..., 1] (x's rank
 *    minus 1, so they broadcast along axis 1 for any batch and spatial dims) in x's dtype.
 *
 * The factors are computed in double and stored in W's (x's) dtype. BN in per-activation form
 * (spatial = 0, before opset 9) and BN whose channel count is symbolic are left alone.
 */
#include "opt_internal.h"

#include <math.h>
#include <stdio.h>

/* f and shift per channel, when n is a BN in inference form with constant parameters over C channels
 * (C known: x's dim 1): 1, with *f and *shift ig__malloc'ed [C]; 0 when n is no such BN; -1 on OOM. */
static int bn_factors(const ig_opt_ctx *cx, const ig_uses *u, const ig_node *n, int64_t *channels, double **f,
                      double **shift)
{
    const ig_graph *g = cx->g;
    if (n->dead || n->op != IG_OP_batch_normalization || n->n_inputs < 5) return 0;
    if (n->opset < 9 && ig__attr_int(n, "spatial", 1) == 0) return 0;
    if (n->opset >= 14 && ig__attr_int(n, "training_mode", 0) != 0) return 0;
    for (int32_t j = 1; j < n->n_outputs; j++) {
        int32_t v = n->outputs[j];
        if (v >= 0 && (u->is_output[v] || ig__uses_count(u, v) > 0)) return 0;
    }
    const ig_value *x = &g->values[n->inputs[0]];
    if (x->shape.rank < 2 || !ig__dim_known(x->shape.d[1]) || !ig__dtype_is_float(x->dtype)) return 0;
    int64_t c = x->shape.d[1].n;
    for (int32_t i = 1; i < 5; i++)
        if (ig__opt_const_numel(cx, n->inputs[i]) != c || !ig__dtype_is_float(g->values[n->inputs[i]].c.dtype))
            return 0;
    *f = ig__malloc(sizeof(double) * ((size_t)c + 1));
    *shift = ig__malloc(sizeof(double) * ((size_t)c + 1));
    if (!*f || !*shift) return -1;
    const ig_const *s = &g->values[n->inputs[1]].c, *b = &g->values[n->inputs[2]].c;
    const ig_const *m = &g->values[n->inputs[3]].c, *v = &g->values[n->inputs[4]].c;
    double eps = (double)ig__attr_float(n, "epsilon", 1e-5f);
    for (int64_t k = 0; k < c; k++) {
        (*f)[k] = ig__elem_f64(s->dtype, s->data, k) / sqrt(ig__elem_f64(v->dtype, v->data, k) + eps);
        (*shift)[k] = ig__elem_f64(b->dtype, b->data, k) - ig__elem_f64(m->dtype, m->data, k) * (*f)[k];
    }
    *channels = c;
    return 1;
}

static bool conv_weight_dtype(ingot_dtype t)
{
    return t == INGOT_DTYPE_FLOAT || t == INGOT_DTYPE_FLOAT16 || t == INGOT_DTYPE_BFLOAT16 || t == INGOT_DTYPE_DOUBLE;
}

/* A new constant of n elements of dtype t from doubles, shaped dims. */
static int32_t const_from(ig_opt_ctx *cx, const char *base, ingot_dtype t, int32_t rank, const int64_t *dims,
                          const double *vals, int64_t n)
{
    void *buf = ig__malloc(ingot_dtype_size(t) * (size_t)n + 1);
    if (!buf) {
        ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory making constant '%s'", base);
        return -1;
    }
    for (int64_t i = 0; i < n; i++) ig__elem_set_f64(t, buf, i, vals[i]);
    int32_t id = ig__graph_add_const(cx->g, base, t, rank, dims, buf, cx->err);
    ig__free(buf);
    return id;
}

/* Conv `ci` -> BN `bi`: one Conv with scaled filters. */
static ingot_status fold_into_conv(ig_opt_ctx *cx, int32_t ci, int32_t bi, int64_t c, const double *f,
                                   const double *shift)
{
    ig_graph *g = cx->g;
    ingot_status st;
    const ig_node *conv = &g->nodes[ci];
    int32_t wv = conv->inputs[1], bv = conv->n_inputs > 2 ? conv->inputs[2] : -1;
    const ig_const w = g->values[wv].c;
    int64_t numel = ig__opt_const_numel(cx, wv), per = numel / c;
    double *wd = ig__malloc(sizeof(double) * ((size_t)numel + 1)), *bd = ig__malloc(sizeof(double) * ((size_t)c + 1));
    if (!wd || !bd) {
        st = ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory folding '%s'", ig__node_label(conv));
        goto out;
    }
    for (int64_t m = 0; m < c; m++) {
        for (int64_t k = 0; k < per; k++) wd[m * per + k] = ig__elem_f64(w.dtype, w.data, m * per + k) * f[m];
        /* (B - mean) * f + beta = B * f + shift */
        double b = bv >= 0 ? ig__elem_f64(g->values[bv].c.dtype, g->values[bv].c.data, m) : 0.0;
        bd[m] = b * f[m] + shift[m];
    }
    char base[300];
    snprintf(base, sizeof base, "%s_bnfold", g->values[wv].name);
    int32_t nw = const_from(cx, base, w.dtype, w.rank, w.dims, wd, numel);
    snprintf(base, sizeof base, "%s_bnfold_bias", g->values[wv].name);
    int32_t nb = nw < 0 ? -1 : const_from(cx, base, w.dtype, 1, &c, bd, c);
    if (nb < 0) {
        st = cx->err->status;
        goto out;
    }
    conv = &g->nodes[ci];
    int32_t id = ig__opt_add_node(cx, conv->name, "Conv", "", conv->opset, 3, 1, conv->n_attrs);
    if (id < 0) {
        st = cx->err->status;
        goto out;
    }
    ig_node *nn = &g->nodes[id];
    conv = &g->nodes[ci];
    for (int32_t i = 0; i < conv->n_attrs; i++)
        if ((st = ig__node_copy_attr(g, nn, i, &conv->attrs[i], cx->err)) != INGOT_OK) goto out;
    nn->inputs[0] = conv->inputs[0];
    nn->inputs[1] = nw;
    nn->inputs[2] = nb;
    int32_t pair[2] = {ci, bi};
    if ((st = ig__opt_set_covers(cx, id, pair, 2)) != INGOT_OK) goto out;
    int32_t y = g->nodes[bi].outputs[0];
    ig__graph_remove_node(g, ci);
    ig__graph_remove_node(g, bi);
    ig__opt_set_output(g, id, 0, y);
    cx->n_rewrites++;
out:
    ig__free(wd);
    ig__free(bd);
    return st;
}

/* BN `bi` -> Mul(x, f) -> Add(., shift). */
static ingot_status split_affine(ig_opt_ctx *cx, int32_t bi, int64_t c, const double *f, const double *shift)
{
    ig_graph *g = cx->g;
    const ig_node *bn = &g->nodes[bi];
    const ig_value *x = &g->values[bn->inputs[0]];
    int32_t xv = bn->inputs[0], y = bn->outputs[0], r = x->shape.rank, opset = bn->opset;
    ingot_dtype t = x->dtype;
    int64_t dims[IG_MAX_RANK];
    dims[0] = c;
    for (int32_t k = 1; k < r - 1; k++) dims[k] = 1;
    char base[300], name[300];
    snprintf(base, sizeof base, "%s_scale", g->values[y].name);
    int32_t sv = const_from(cx, base, t, r - 1, dims, f, c);
    snprintf(base, sizeof base, "%s_shift", g->values[y].name);
    int32_t hv = sv < 0 ? -1 : const_from(cx, base, t, r - 1, dims, shift, c);
    snprintf(base, sizeof base, "%s_scaled", g->values[y].name);
    int32_t mv = hv < 0 ? -1 : ig__graph_new_value(g, base, cx->err);
    if (mv < 0) return cx->err->status;
    snprintf(name, sizeof name, "%s_mul", g->nodes[bi].name);
    int32_t mul = ig__opt_add_node(cx, name, "Mul", "", opset, 2, 1, 0);
    int32_t add = mul < 0 ? -1 : ig__opt_add_node(cx, g->nodes[bi].name, "Add", "", opset, 2, 1, 0);
    if (add < 0) return cx->err->status;
    ingot_status st;
    if ((st = ig__opt_set_covers(cx, mul, &bi, 1)) != INGOT_OK ||
        (st = ig__opt_set_covers(cx, add, &bi, 1)) != INGOT_OK)
        return st;
    g->nodes[mul].inputs[0] = xv;
    g->nodes[mul].inputs[1] = sv;
    ig__opt_set_output(g, mul, 0, mv);
    g->nodes[add].inputs[0] = mv;
    g->nodes[add].inputs[1] = hv;
    ig__graph_remove_node(g, bi);
    ig__opt_set_output(g, add, 0, y);
    cx->n_rewrites++;
    return INGOT_OK;
}

ingot_status ig__opt_pass_bn_fold(ig_opt_ctx *cx)
{
    ig_graph *g = cx->g;
    ig_uses u;
    ingot_status st = ig__uses_build(g, &u, cx->err);
    if (st != INGOT_OK) return st;
    int32_t n0 = g->n_nodes;
    /* conv first, so a BN that can join its conv is never split */
    for (int pass = 0; pass < 2 && st == INGOT_OK; pass++) {
        for (int32_t id = 0; id < n0 && st == INGOT_OK; id++) {
            const ig_node *n = &g->nodes[id];
            int32_t bi = id, ci = -1;
            if (pass == 0) {
                if (n->dead || n->op != IG_OP_conv || n->n_outputs < 1 || n->outputs[0] < 0) continue;
                if ((bi = ig__uses_sole(&u, n->outputs[0])) < 0 || g->nodes[bi].inputs[0] != n->outputs[0]) continue;
                int32_t wv = n->inputs[1], bv = n->n_inputs > 2 ? n->inputs[2] : -1;
                if (!ig__opt_is_const(cx, wv) || (bv >= 0 && !ig__opt_is_const(cx, bv))) continue;
                const ig_const *w = &g->values[wv].c;
                if (!conv_weight_dtype(w->dtype) || w->rank < 3 || w->rank > 5) continue;
                if (bv >= 0 && (g->values[bv].c.dtype != w->dtype || ig__opt_const_numel(cx, bv) != w->dims[0]))
                    continue;
                ci = id;
            }
            int64_t c = 0;
            double *f = NULL, *shift = NULL;
            int found = bn_factors(cx, &u, &g->nodes[bi], &c, &f, &shift);
            if (found < 0)
                st = ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
            else if (found && ci >= 0 && c == g->values[g->nodes[ci].inputs[1]].c.dims[0])
                st = fold_into_conv(cx, ci, bi, c, f, shift);
            else if (found && ci < 0)
                st = split_affine(cx, bi, c, f, shift);
            ig__free(f);
            ig__free(shift);
        }
    }
    ig__uses_free(&u);
    return st;
}
