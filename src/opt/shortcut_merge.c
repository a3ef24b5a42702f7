/*
 * shortcut_merge.c -- the `shortcut_merge` pass: ResNet's projection shortcut. A bottleneck block that
 * changes its width adds two 1x1 convolutions of the same pixels: conv3(y) (the block's last conv) and
 * downsample(x) (the shortcut's), then Relu. conv_epilogue makes that FusedConv(x, Wd, bd, r) with the
 * epilogue ADD(conv, r) -> RELU, r = Conv(y, W3, b3), and each of the two writes and reads back a tensor
 * of the block's full width (ResNet-50's layer1.0 at batch 256: 411 MB written and read again, 0.38 ms
 * for the pair on the H200). Both are sums over input channels, so they are one convolution over the two
 * inputs side by side:
 *
 *     FusedConv(Concat(y, x, axis 1), [W3 | Wd], b3 + bd) -> RELU
 *
 * which reads y and x once and writes the output once. The Concat may cost a copy of each input where a
 * backend cannot make its producers write into their slices (the CUDA lowering's Concat views).
 *
 * The shortcut of a block that also halves the resolution is a 1x1 conv of stride 2: it reads every other
 * pixel of x, so its input in the Concat is Slice(x, steps 2) (ResNet-50's layer2.0-4.0; the CUDA
 * lowering makes the Slice a strided view, which the Concat copies).
 *
 * Taken: both convolutions 2-D, 1x1, no pads, dilation 1, group 1, constant filters (and biases) of one
 * float type, the Conv's output read only by the FusedConv's epilogue, whose program is ADD(conv, r)
 * alone or followed by RELU; y and x of one dtype and batch, each conv's output of the other's size.
 * Numerics: one fp32 accumulation of both sums instead of two roundings (the result is as close or
 * closer to exact).
 */
#include "opt_internal.h"

#include <stdio.h>
#include <string.h>

/* A 2-D 1x1 conv, no pads, dilation 1, group 1, constant float filter and bias (if any); its strides. */
static bool pointwise_conv(const ig_opt_ctx *cx, const ig_node *n, int64_t *st)
{
    const ig_graph *g = cx->g;
    if (n->n_inputs < 2 || n->inputs[0] < 0 || n->inputs[1] < 0 || n->n_outputs != 1 || n->outputs[0] < 0) return false;
    if (!ig__opt_is_const(cx, n->inputs[1]) ||
        (n->n_inputs > 2 && n->inputs[2] >= 0 && !ig__opt_is_const(cx, n->inputs[2])))
        return false;
    const ig_value *w = &g->values[n->inputs[1]];
    if (w->shape.rank != 4 || !ig__opt_float_type(w->c.dtype) || !ig__shape_known(&w->shape) || w->shape.d[2].n != 1 ||
        w->shape.d[3].n != 1)
        return false;
    if (ig__attr_int(n, "group", 1) != 1) return false;
    const char *ap = ig__attr_str(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID") && ap[0]) return false;
    const int64_t *a;
    int64_t na;
    if (ig__attr_ints(n, "dilations", &a, &na))
        for (int64_t i = 0; i < na; i++)
            if (a[i] != 1) return false;
    st[0] = st[1] = 1;
    if (ig__attr_ints(n, "strides", &a, &na)) {
        if (na != 2 || a[0] < 1 || a[1] < 1) return false;
        st[0] = a[0], st[1] = a[1];
    }
    if (ig__attr_ints(n, "pads", &a, &na))
        for (int64_t i = 0; i < na; i++)
            if (a[i] != 0) return false;
    return true;
}

/* The epilogue is ADD(conv, r) [-> RELU]: relu says which. */
static bool add_then_relu(const ig_opt_ctx *cx, const ig_node *f, bool *relu)
{
    ig_pw_prog p;
    ig_err e = {0};
    if (ig__pw_decode(cx->g, f, "epilogue_", 2, &p, &e) != INGOT_OK || p.int_math || p.n_in != 2) return false;
    const ig_pw_inst *a = &p.op[0];
    if (p.n_ops < 1 || p.n_ops > 2 || a->code != IG_PW_ADD || !((a->a == 0 && a->b == 1) || (a->a == 1 && a->b == 0)))
        return false;
    *relu = p.n_ops == 2;
    return !*relu || (p.op[1].code == IG_PW_RELU && p.op[1].a == 2);
}

static bool same_dims(const ig_shape *a, const ig_shape *b, int skip)
{
    if (a->rank != b->rank) return false;
    for (int32_t k = 0; k < a->rank; k++)
        if (k != skip && !ig__dim_eq(a->d[k], b->d[k])) return false;
    return true;
}

/* [W3 | Wd] along input channels, and b3 + bd (-1: neither has one). */
static ingot_status merged_weights(ig_opt_ctx *cx, const ig_node *c3, const ig_node *f, int32_t *w_out, int32_t *b_out)
{
    ig_graph *g = cx->g;
    const ig_value *w3 = &g->values[c3->inputs[1]], *wd = &g->values[f->inputs[1]];
    const int64_t K = w3->shape.d[0].n, C3 = w3->shape.d[1].n, Cd = wd->shape.d[1].n;
    const ingot_dtype t = w3->c.dtype;
    const size_t es = ingot_dtype_size(t);
    char *w = ig__malloc(es * (size_t)(K * (C3 + Cd)) + 1);
    if (!w) return ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory merging '%s'", f->name);
    for (int64_t k = 0; k < K; k++) {
        memcpy(w + es * (size_t)(k * (C3 + Cd)), (const char *)w3->c.data + es * (size_t)(k * C3), es * (size_t)C3);
        memcpy(w + es * (size_t)(k * (C3 + Cd) + C3), (const char *)wd->c.data + es * (size_t)(k * Cd),
               es * (size_t)Cd);
    }
    char name[256];
    snprintf(name, sizeof name, "%s_merged_w", f->name ? f->name : "shortcut");
    const int64_t wdims[4] = {K, C3 + Cd, 1, 1};
    *w_out = ig__graph_add_const(g, name, t, 4, wdims, w, cx->err);
    ig__free(w);
    if (*w_out < 0) return cx->err->status;
    int32_t b3 = c3->n_inputs > 2 ? c3->inputs[2] : -1, bd = f->n_inputs > 2 ? f->inputs[2] : -1;
    *b_out = -1;
    if (b3 < 0 && bd < 0) return INGOT_OK;
    const ingot_dtype bt = b3 >= 0 ? g->values[b3].c.dtype : g->values[bd].c.dtype;
    char *b = ig__malloc(ingot_dtype_size(bt) * (size_t)K + 1);
    if (!b) return ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory merging '%s'", f->name);
    for (int64_t k = 0; k < K; k++) {
        double v = 0;
        if (b3 >= 0) v += ig__elem_f64(g->values[b3].c.dtype, g->values[b3].c.data, k);
        if (bd >= 0) v += ig__elem_f64(g->values[bd].c.dtype, g->values[bd].c.data, k);
        ig__elem_set_f64(bt, b, k, v);
    }
    snprintf(name, sizeof name, "%s_merged_b", f->name ? f->name : "shortcut");
    const int64_t bdims[1] = {K};
    *b_out = ig__graph_add_const(g, name, bt, 1, bdims, b, cx->err);
    ig__free(b);
    return *b_out < 0 ? cx->err->status : INGOT_OK;
}

static bool keep_attr(const char *name) { return strncmp(name, "epilogue_", 9) && strcmp(name, "strides"); }

/* *v becomes Slice(*v, starts 0, ends max, axes 2 and 3, steps s): the pixels a 1x1 conv of strides s
 * reads. */
static ingot_status subsample(ig_opt_ctx *cx, int32_t *v, const int64_t *s)
{
    ig_graph *g = cx->g;
    char name[256];
    snprintf(name, sizeof name, "%s_every_%lldx%lld", g->values[*v].name ? g->values[*v].name : "x", (long long)s[0],
             (long long)s[1]);
    const int64_t two[1] = {2}, zeros[2] = {0, 0}, ends[2] = {INT64_MAX, INT64_MAX}, axes[2] = {2, 3};
    const int64_t *data[4] = {zeros, ends, axes, s};
    int32_t in[4];
    for (int k = 0; k < 4; k++)
        if ((in[k] = ig__graph_add_const(g, name, INGOT_DTYPE_INT64, 1, two, data[k], cx->err)) < 0)
            return cx->err->status;
    const int32_t out = ig__graph_new_value(g, name, cx->err);
    if (out < 0) return cx->err->status;
    const int32_t sl = ig__opt_add_node(cx, name, "Slice", "", 13, 5, 1, 0);
    if (sl < 0) return cx->err->status;
    g->nodes[sl].inputs[0] = *v;
    for (int k = 0; k < 4; k++) g->nodes[sl].inputs[1 + k] = in[k];
    ig__opt_set_output(g, sl, 0, out);
    *v = out;
    return INGOT_OK;
}

static ingot_status visit(ig_opt_ctx *cx, ig_opt_walk *w, int32_t fi)
{
    ig_graph *g = cx->g;
    const ig_node *f = &g->nodes[fi];
    bool relu;
    int64_t sf[2], s3[2];
    if (f->dead || f->op != IG_OP_fused_conv || f->n_inputs != 4 || ig__node_attr(f, "pool") ||
        !pointwise_conv(cx, f, sf) || !add_then_relu(cx, f, &relu))
        return INGOT_OK;
    const int32_t r = f->inputs[3], ci = ig__opt_producer(g, r);
    if (!ig__opt_is(g, ci, IG_OP_conv) || ig__uses_sole(&w->u, r) != fi || !pointwise_conv(cx, &g->nodes[ci], s3))
        return INGOT_OK;
    const ig_node *c3 = &g->nodes[ci];
    const ig_value *y = &g->values[c3->inputs[0]], *x = &g->values[f->inputs[0]];
    const ig_value *w3 = &g->values[c3->inputs[1]], *wd = &g->values[f->inputs[1]];
    /* one dtype and batch; each conv's output pixels the other's (r has the output's shape); the same
     * output channels and filter type */
    if (y->dtype != x->dtype || y->shape.rank != 4 || x->shape.rank != 4 || !ig__dim_eq(y->shape.d[0], x->shape.d[0]) ||
        w3->c.dtype != wd->c.dtype || w3->shape.d[0].n != wd->shape.d[0].n ||
        !same_dims(&g->values[r].shape, &g->values[f->outputs[0]].shape, -1) || !ig__dim_known(y->shape.d[1]) ||
        !ig__dim_known(x->shape.d[1]))
        return INGOT_OK;
    for (int i = 0; i < 2; i++) {
        const ig_dim hy = y->shape.d[2 + i], hx = x->shape.d[2 + i];
        const bool unit = s3[i] == 1 && sf[i] == 1;
        if (unit ? !ig__dim_eq(hy, hx)
                 : !ig__dim_known(hy) || !ig__dim_known(hx) || (hy.n - 1) / s3[i] != (hx.n - 1) / sf[i])
            return INGOT_OK;
    }
    int32_t b3 = c3->n_inputs > 2 ? c3->inputs[2] : -1, bd = f->n_inputs > 2 ? f->inputs[2] : -1;
    if (b3 >= 0 && bd >= 0 && g->values[b3].c.dtype != g->values[bd].c.dtype) return INGOT_OK;
    int32_t wm = -1, bm = -1;
    ingot_status st = merged_weights(cx, c3, f, &wm, &bm);
    if (st != INGOT_OK) return st;
    /* each input as its conv reads it (every s-th pixel), then the Concat of the two */
    int32_t ins[2] = {g->nodes[ci].inputs[0], g->nodes[fi].inputs[0]};
    const int64_t *strides[2] = {s3, sf};
    for (int k = 0; k < 2; k++)
        if ((strides[k][0] > 1 || strides[k][1] > 1) && (st = subsample(cx, &ins[k], strides[k])) != INGOT_OK)
            return st;
    f = &g->nodes[fi]; /* the node arrays may have moved */
    char name[256];
    snprintf(name, sizeof name, "%s_inputs", f->name ? f->name : "shortcut");
    const int32_t cat = ig__graph_new_value(g, name, cx->err);
    if (cat < 0) return cx->err->status;
    const int32_t cn = ig__opt_add_node(cx, name, "Concat", "", 13, 2, 1, 1);
    if (cn < 0) return cx->err->status;
    f = &g->nodes[fi];
    g->nodes[cn].inputs[0] = ins[0];
    g->nodes[cn].inputs[1] = ins[1];
    if ((st = ig__node_set_int(g, &g->nodes[cn], 0, "axis", 1, cx->err)) != INGOT_OK) return st;
    ig__opt_set_output(g, cn, 0, cat);
    /* the merged conv: the FusedConv's attributes, its epilogue without the residual */
    const int32_t out = f->outputs[0];
    /* the merged conv runs at stride 1 over the subsampled inputs: strides go with the epilogue */
    int32_t n_conv_attrs = 0;
    for (int32_t i = 0; i < f->n_attrs; i++) n_conv_attrs += keep_attr(f->attrs[i].name);
    const int32_t id = ig__opt_add_node(cx, f->name, "FusedConv", "ingot", 1, 3, 1, n_conv_attrs + 2);
    if (id < 0) return cx->err->status;
    f = &g->nodes[fi];
    ig_node *n = &g->nodes[id];
    for (int32_t i = 0, j = 0; i < f->n_attrs; i++)
        if (keep_attr(f->attrs[i].name) && (st = ig__node_copy_attr(g, n, j++, &f->attrs[i], cx->err)) != INGOT_OK)
            return st;
    ig_pw_prog p = {.n_in = 1, .n_ops = relu ? 1 : 0};
    p.op[0] = (ig_pw_inst){.code = IG_PW_RELU, .a = 0, .b = IG_PW_NONE, .c = IG_PW_NONE};
    if ((st = ig__pw_encode(g, n, n_conv_attrs, "epilogue_", &p, cx->err)) != INGOT_OK) return st;
    n->inputs[0] = cat;
    n->inputs[1] = wm;
    n->inputs[2] = bm;
    const int32_t replaced[2] = {ci, fi};
    return ig__opt_replace(cx, id, replaced, 2, out);
}

ingot_status ig__opt_pass_shortcut_merge(ig_opt_ctx *cx) { return ig__opt_walk(cx, false, visit); }
