/*
 * patchify.c -- the `patchify` pass: a "patchify" convolution (kernel == stride, no padding: the patch
 * embedding of ViT, DeiT, CLIP and Swin, ConvNeXt's 4x4/4 stem) over few input channels becomes an
 * im2col by views and one GEMM:
 *
 *   Y = Conv(X [N, C, H, W], Wt [O, C, p, q], B [O]?)     kernel_shape = strides = [p, q], pads 0,
 *                                                          dilations 1, group 1, H % p == 0, W % q == 0
 *   X1 = Reshape(X, [0, C, H/p, p, W/q, q])
 *   X2 = Transpose(X1, perm [0, 2, 4, 1, 3, 5])            [N, H/p, W/q, C, p, q]
 *   X3 = Reshape(X2, [0, L, K])                            L = (H/p)(W/q) patches of K = C p q elements
 *   Y1 = MatMul(X3, Wk) [-> Add(., B)]                     Wk = Wt as [O, K], transposed: [K, O]
 *   Y2 = Reshape(Y1, [0, H/p, W/q, O])
 *   Y  = Transpose(Y2, perm [0, 3, 1, 2])                  [N, O, H/p, W/q], taking over the conv's value
 *
 * Why it is exact: with stride == kernel and no padding the windows tile the image without overlap,
 * output pixel (i, j) reading exactly X[n, c, i*p + a, j*q + b] for every c, a, b. X1 splits each
 * spatial dim into (patch index, offset in the patch), X2/X3 lay the patch out as one row of K in
 * (c, a, b) order -- the order of Wt's [C, p, q] flattened, so row k of Wk is filter tap k -- and the
 * MatMul computes the same sum of products per output (the same terms; only the order of the additions
 * may differ, fp32 relative error ~1e-7). The bias is added once per output either way. Every Reshape
 * keeps the batch with 0 (copy the input's dim; the nodes are opset 13, which has no allowzero), so a
 * symbolic N works; the other dims are known numbers.
 *
 * Elementwise nodes after the conv with no operand but scalar constants (a Relu) move before the output
 * views (act_chain). The pass runs before conv_epilogue and gemm_epilogue, so the MatMul, its bias Add
 * and those become one FusedMatMul. Names are derived from the conv's: the MatMul (the
 * node doing the work) keeps the conv's name, the views are "<conv>_patch_*". On the CUDA backend the
 * views cost one strided copy on the input side (the im2col, into a dense [N*L, K]) and none on the
 * output side: Y2 and Y are views of the GEMM's output, which is Y in channels-last layout.
 */
#include "opt_internal.h"

#include <stdio.h>

/*
 * Whether the rewrite pays, by the conv's input channels (and patch size, for a later measurement to
 * use). Only C % 8 != 0 for now: cuDNN's channels-last implicit-GEMM convolutions read each filter
 * tap's C channels as aligned vectors of 8 fp16 (16 bytes) and run at tensor-core rates when C % 8 ==
 * 0, writing the output channels-last directly; with C = 3 (RGB) no such algorithm exists (ViT-B/16's
 * embed at batch 64, fp16 on an H200: 0.447 ms for 15 GFLOP, ~18x off the tensor-core rate), while the
 * GEMM here reads K = C*p*q contiguous elements per row whatever C is. Widen this after a GPU
 * measurement of both paths at C % 8 == 0. A 1x1 patch is not a patch: 1x1 convolutions already run as
 * GEMMs (src/cuda/lower_conv.c), and GhostNet's 36-channel ones must not change path untimed.
 */
static bool patchify_pays(int64_t c, int64_t p, int64_t q) { return p * q > 1 && c % 8 != 0; }

static bool float_dtype(ingot_dtype t)
{
    return t == INGOT_DTYPE_FLOAT || t == INGOT_DTYPE_FLOAT16 || t == INGOT_DTYPE_BFLOAT16;
}

#define MAX_ACT 4

typedef struct pf_match {
    int32_t conv, x, w, b, y;
    int64_t c, h, wd, p, q, o;
    int32_t n_act;
    int32_t act[MAX_ACT]; /* elementwise nodes after the conv, moved before the output views */
    int32_t y_final;      /* the value the last of them computes (y when none) */
} pf_match;

/* An INTS attribute equal to want[0 .. n) (absent: each entry `def`). */
static bool ints_are(const ig_node *n, const char *name, const int64_t *want, int32_t cnt, int64_t def)
{
    const int64_t *v;
    int64_t k;
    if (!ig__attr_ints(n, name, &v, &k)) {
        for (int32_t i = 0; i < cnt; i++)
            if (want[i] != def) return false;
        return true;
    }
    if (k != cnt) return false;
    for (int32_t i = 0; i < cnt; i++)
        if (v[i] != want[i]) return false;
    return true;
}

/* The elementwise chain after the conv that can run on the tokens instead: each node the sole reader of
 * the value before it (not a graph output), one the pointwise programs hold, of y's shape and dtype,
 * every other input a one-element constant of rank <= 3 (so it broadcasts over [N, L, O] as over y). An
 * elementwise node commutes with the views (it maps each element alone), so applying it before them
 * computes the same; gemm_epilogue then fuses it into the GEMM (a Relu after a patchify conv). */
static void act_chain(const ig_opt_ctx *cx, const ig_uses *u, pf_match *m)
{
    const ig_graph *g = cx->g;
    const ig_value *y = &g->values[m->y];
    m->n_act = 0;
    m->y_final = m->y;
    while (m->n_act < MAX_ACT) {
        int32_t r = ig__uses_sole(u, m->y_final);
        if (r < 0) return;
        const ig_node *n = &g->nodes[r];
        if (n->dead || (n->domain && n->domain[0]) || n->n_outputs != 1 || n->outputs[0] < 0) return;
        const ig_value *out = &g->values[n->outputs[0]];
        if (out->dtype != y->dtype || !ig__opt_shape_eq(&out->shape, &y->shape) || !ig__pw_node_ok(g, n, false)) return;
        double k;
        for (int32_t i = 0; i < n->n_inputs; i++) {
            int32_t v = n->inputs[i];
            if (v != m->y_final && !(v < 0 && n->op == IG_OP_clip) && !ig__opt_rank_scalar(cx, v, 3, &k)) return;
        }
        m->act[m->n_act++] = r;
        m->y_final = n->outputs[0];
    }
}

static bool match(const ig_opt_ctx *cx, const ig_uses *u, int32_t id, pf_match *m)
{
    const ig_graph *g = cx->g;
    const ig_node *n = &g->nodes[id];
    if (n->dead || n->op != IG_OP_conv || (n->domain && n->domain[0])) return false;
    if (n->n_inputs < 2 || n->n_outputs != 1 || n->inputs[0] < 0 || n->inputs[1] < 0 || n->outputs[0] < 0) return false;
    m->conv = id;
    m->x = n->inputs[0];
    m->w = n->inputs[1];
    m->b = n->n_inputs > 2 ? n->inputs[2] : -1;
    m->y = n->outputs[0];
    const ig_value *x = &g->values[m->x], *y = &g->values[m->y];
    if (!float_dtype(x->dtype) || y->dtype != x->dtype || x->shape.rank != 4 || y->shape.rank != 4) return false;
    for (int32_t k = 1; k < 4; k++)
        if (!ig__dim_known(x->shape.d[k])) return false;
    m->c = x->shape.d[1].n;
    m->h = x->shape.d[2].n;
    m->wd = x->shape.d[3].n;
    /* the filter and bias: constants of x's dtype, W [O, C, p, q], B [O] */
    if (!ig__opt_is_const(cx, m->w) || (m->b >= 0 && !ig__opt_is_const(cx, m->b))) return false;
    const ig_const *w = &g->values[m->w].c;
    if (w->dtype != x->dtype || w->rank != 4 || w->dims[1] != m->c) return false;
    m->o = w->dims[0];
    m->p = w->dims[2];
    m->q = w->dims[3];
    if (m->o < 1 || m->p < 1 || m->q < 1 || m->c < 1) return false;
    if (m->b >= 0 && (g->values[m->b].c.dtype != x->dtype || ig__opt_const_numel(cx, m->b) != m->o)) return false;
    /* the window: kernel == stride, no padding, no dilation, one group */
    int64_t k2[2] = {m->p, m->q}, zeros[4] = {0, 0, 0, 0}, ones[2] = {1, 1};
    if (ig__node_attr(n, "kernel_shape") && !ints_are(n, "kernel_shape", k2, 2, 0)) return false;
    if (!ints_are(n, "strides", k2, 2, 1) || !ints_are(n, "dilations", ones, 2, 1)) return false;
    if (!ints_are(n, "pads", zeros, 4, 0) || ig__attr_int(n, "group", 1) != 1) return false;
    /* SAME_* pads k - s = 0 in total when the stride is the kernel and divides the size: every auto_pad
     * means no padding here */
    if (m->h % m->p || m->wd % m->q) return false;
    /* the conv's own output agrees (its batch is x's) */
    if (!ig__dim_eq(y->shape.d[0], x->shape.d[0]) || !ig__dim_known(y->shape.d[1]) || y->shape.d[1].n != m->o ||
        !ig__dim_known(y->shape.d[2]) || y->shape.d[2].n != m->h / m->p || !ig__dim_known(y->shape.d[3]) ||
        y->shape.d[3].n != m->wd / m->q)
        return false;
    if (!patchify_pays(m->c, m->p, m->q)) return false;
    act_chain(cx, u, m);
    return true;
}

/* Names: "<conv>_<what>" for nodes (the conv's output's name when it has none), "<y>_<what>" for
 * values. */
static const char *conv_base(const ig_graph *g, const pf_match *m)
{
    const char *nm = g->nodes[m->conv].name;
    return nm && nm[0] ? nm : g->values[m->y].name;
}

/* An int64 shape constant "<y>_<what>_shape". */
static int32_t shape_const(ig_opt_ctx *cx, const pf_match *m, const char *what, int64_t len, const int64_t *v)
{
    char base[300];
    snprintf(base, sizeof base, "%.250s_%s_shape", cx->g->values[m->y].name, what);
    return ig__graph_add_const(cx->g, base, INGOT_DTYPE_INT64, 1, &len, v, cx->err);
}

/* A new value "<y>_<what>". */
static int32_t new_value(ig_opt_ctx *cx, const pf_match *m, const char *what)
{
    char base[300];
    snprintf(base, sizeof base, "%.250s_%s", cx->g->values[m->y].name, what);
    return ig__graph_new_value(cx->g, base, cx->err);
}

/* A node op(in0[, in1]) -> out, named "<conv>_<what>" (what NULL: the conv's own name), covering the
 * conv; perm: a Transpose's permutation (rank 6 or 4). -1 on failure. */
static int32_t add(ig_opt_ctx *cx, const pf_match *m, const char *what, const char *op, int32_t opset, int32_t in0,
                   int32_t in1, int32_t out, const int64_t *perm, int32_t perm_n)
{
    ig_graph *g = cx->g;
    char name[300];
    if (what)
        snprintf(name, sizeof name, "%.250s_%s", conv_base(g, m), what);
    else
        snprintf(name, sizeof name, "%.250s", conv_base(g, m));
    int32_t id = ig__opt_add_node(cx, name, op, "", opset, in1 >= 0 ? 2 : 1, 1, perm ? 1 : 0);
    if (id < 0) return -1;
    ig_node *n = &g->nodes[id];
    if (perm && ig__node_set_ints(g, n, 0, "perm", perm, perm_n, cx->err) != INGOT_OK) return -1;
    n->inputs[0] = in0;
    if (in1 >= 0) n->inputs[1] = in1;
    if (out >= 0) ig__opt_set_output(g, id, 0, out);
    if (ig__opt_set_covers(cx, id, &m->conv, 1) != INGOT_OK) return -1;
    return id;
}

/* Elementwise node `src` again, reading `in` where it read `prev` (the value before it in the chain),
 * writing a new value "<its output>_tokens"; `src` is removed. The new value, -1 on failure. */
static int32_t move_act(ig_opt_ctx *cx, int32_t src, int32_t prev, int32_t in)
{
    ig_graph *g = cx->g;
    char base[300];
    snprintf(base, sizeof base, "%.250s_tokens", g->values[g->nodes[src].outputs[0]].name);
    int32_t out = ig__graph_new_value(g, base, cx->err);
    if (out < 0) return -1;
    const ig_node *s = &g->nodes[src];
    int32_t id = ig__opt_add_node(cx, s->name, s->op_type, "", s->opset, s->n_inputs, 1, s->n_attrs);
    if (id < 0) return -1;
    s = &g->nodes[src];
    ig_node *n = &g->nodes[id];
    for (int32_t i = 0; i < s->n_attrs; i++)
        if (ig__node_copy_attr(g, n, i, &s->attrs[i], cx->err) != INGOT_OK) return -1;
    for (int32_t i = 0; i < s->n_inputs; i++) n->inputs[i] = s->inputs[i] == prev ? in : s->inputs[i];
    if (ig__opt_set_covers(cx, id, &src, 1) != INGOT_OK) return -1;
    ig__graph_remove_node(g, src);
    ig__opt_set_output(g, id, 0, out);
    return out;
}

static ingot_status rewrite(ig_opt_ctx *cx, const pf_match *m)
{
    ig_graph *g = cx->g;
    const int64_t hp = m->h / m->p, wq = m->wd / m->q, L = hp * wq, K = m->c * m->p * m->q;
    /* Wk [K, O]: Wk[k][o] = Wt[o][k], elements moved bytewise (no conversion) */
    const ig_const *w = &g->values[m->w].c;
    size_t es = ingot_dtype_size(w->dtype);
    unsigned char *buf = ig__malloc(es * (size_t)(K * m->o) + 1);
    if (!buf)
        return ig__errf(cx->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory transposing the filter of node '%s'",
                        ig__node_label(&g->nodes[m->conv]));
    const unsigned char *src = w->data;
    for (int64_t o = 0; o < m->o; o++)
        for (int64_t k = 0; k < K; k++) memcpy(buf + es * (size_t)(k * m->o + o), src + es * (size_t)(o * K + k), es);
    char base[300];
    snprintf(base, sizeof base, "%.250s_patchify", g->values[m->w].name);
    int64_t wk_dims[2] = {K, m->o};
    int32_t wk = ig__graph_add_const(g, base, w->dtype, 2, wk_dims, buf, cx->err);
    ig__free(buf);
    if (wk < 0) return cx->err->status;

    int64_t s1[6] = {0, m->c, hp, m->p, wq, m->q}, s3[3] = {0, L, K}, s5[4] = {0, hp, wq, m->o};
    static const int64_t perm_in[6] = {0, 2, 4, 1, 3, 5}, perm_out[4] = {0, 3, 1, 2};
    int32_t c1 = shape_const(cx, m, "patch_split", 6, s1);
    int32_t c3 = c1 < 0 ? -1 : shape_const(cx, m, "patches", 3, s3);
    int32_t c5 = c3 < 0 ? -1 : shape_const(cx, m, "patch_grid", 4, s5);
    if (c5 < 0) return cx->err->status;
    int32_t x1 = new_value(cx, m, "patch_split");
    int32_t x2 = x1 < 0 ? -1 : new_value(cx, m, "patch_perm");
    int32_t x3 = x2 < 0 ? -1 : new_value(cx, m, "patches");
    int32_t y1 = x3 < 0 ? -1 : new_value(cx, m, "tokens");
    int32_t y1b = y1 < 0 || m->b < 0 ? y1 : new_value(cx, m, "tokens_bias");
    int32_t y2 = y1b < 0 ? -1 : new_value(cx, m, "patch_grid");
    if (y2 < 0) return cx->err->status;

    if (add(cx, m, "patch_split", "Reshape", 13, m->x, c1, x1, NULL, 0) < 0 ||
        add(cx, m, "patch_perm", "Transpose", 13, x1, -1, x2, perm_in, 6) < 0 ||
        add(cx, m, "patches", "Reshape", 13, x2, c3, x3, NULL, 0) < 0 ||
        add(cx, m, NULL, "MatMul", 13, x3, wk, y1, NULL, 0) < 0 ||
        (m->b >= 0 && add(cx, m, "bias", "Add", 14, y1, m->b, y1b, NULL, 0) < 0))
        return cx->err->status;
    /* the elementwise chain, on the tokens */
    int32_t cur = y1b;
    for (int32_t i = 0; i < m->n_act; i++) {
        int32_t prev = i ? g->nodes[m->act[i - 1]].outputs[0] : m->y;
        if ((cur = move_act(cx, m->act[i], prev, cur)) < 0) return cx->err->status;
    }
    if (add(cx, m, "patch_grid", "Reshape", 13, cur, c5, y2, NULL, 0) < 0) return cx->err->status;
    /* the last one takes over the conv's value, or the chain's (its producer is set by ig__opt_replace,
     * after the conv is removed) */
    int32_t last = add(cx, m, "patch_nchw", "Transpose", 13, y2, -1, -1, perm_out, 4);
    if (last < 0) return cx->err->status;
    return ig__opt_replace(cx, last, &m->conv, 1, m->y_final);
}

static ingot_status visit(ig_opt_ctx *cx, ig_opt_walk *w, int32_t id)
{
    pf_match m;
    return match(cx, &w->u, id, &m) ? rewrite(cx, &m) : INGOT_OK;
}

ingot_status ig__opt_pass_patchify(ig_opt_ctx *cx) { return ig__opt_walk(cx, false, visit); }
