/*
 * lower_conv.c -- Conv and ingot.FusedConv (the optimizer has folded BatchNormalization into the
 * filter and attached the pointwise nodes that follow as an epilogue program), and pooling.
 *
 * Which kernel runs a convolution, channels-last fp16 on tensor cores:
 *  - depthwise (group == C == K, 2-D): our kernel (8 channels per thread, 16-byte accesses) with bias and
 *    a Relu or Clip epilogue fused; cuDNN's channels-last depthwise path was 10-20x slower;
 *  - 1x1 stride 1: a cuBLASLt GEMM [N*H*W, C] x [C, K] with the bias, a residual (C, beta 1) and Relu in
 *    its epilogue -- faster than cuDNN at every batch measured;
 *  - otherwise cuDNN: cudnnConvolutionBiasActivationForward when the epilogue is Relu or residual + Relu
 *    (its fused call needs an activation), else the convolution alone.
 * An epilogue the library call cannot take runs as one elementwise step after it (bias included).
 *
 * ConvTranspose: cuDNN's backward data of the forward convolution whose filter is its weight
 * ([C_in, C_out/group, kH, kW] is that convolution's [K, C/group, R, S]), into a buffer whose rows the
 * output is a view of (see convt_plan); the bias in an elementwise step after it.
 */
#include "lower_internal.h"

#include <math.h>

static void conv_pads(const ig_node *n, int32_t spatial, const int64_t *in, const int64_t *out, const int64_t *k,
                      const int64_t *stride, const int64_t *dil, int64_t *pb, int64_t *pe)
{
    const char *ap = ig__attr_str(n, "auto_pad", "NOTSET");
    const int64_t *pads = NULL;
    int64_t np = 0;
    ig__attr_ints(n, "pads", &pads, &np);
    for (int32_t i = 0; i < spatial; i++) {
        pb[i] = pe[i] = 0;
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            int64_t total = (out[i] - 1) * stride[i] + (k[i] - 1) * dil[i] + 1 - in[i];
            if (total < 0) total = 0;
            pb[i] = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
            pe[i] = total - pb[i];
        } else if (!strcmp(ap, "VALID")) {
            pb[i] = pe[i] = 0;
        } else if (pads && np == 2 * spatial) {
            pb[i] = pads[i];
            pe[i] = pads[i + spatial];
        }
    }
}

/* A convolution's geometry, 1-D seen as 2-D with a height of 1. For ConvTranspose, pb/pe are the rows
 * cropped from the full output (pe < 0: zero rows appended, output_shape larger than the full output). */
typedef struct conv_geo {
    int32_t rank; /* of x: 3 or 4 */
    int64_t in[2], out[2], k[2], st[2], dl[2], pb[2], pe[2];
    int64_t group, K; /* K: output channels */
    /* a FusedConv with a max pool fused (op.h): out is the conv's own size; the node's output is pooled */
    bool pooled;
    ig_conv_pool pool;
} conv_geo;

/* ConvTranspose's crops, resolved as the CPU op does (src/ops/conv.c, resolve_dim): explicit pads, VALID,
 * or the total of SAME / output_shape split between both ends. */
static void convt_pads(const ig_node *n, int32_t sp, conv_geo *c)
{
    const char *ap = ig__attr_str(n, "auto_pad", "NOTSET");
    bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    const int64_t *pads = NULL, *opad = NULL, *os = NULL;
    int64_t np = 0, nop = 0, nos = 0;
    ig__attr_ints(n, "pads", &pads, &np);
    ig__attr_ints(n, "output_padding", &opad, &nop);
    bool has_os = ig__attr_ints(n, "output_shape", &os, &nos) && (nos == sp || nos == sp + 2);
    for (int32_t i = 0; i < sp; i++) {
        int64_t full = c->st[i] * (c->in[i] - 1) + (nop == sp ? opad[i] : 0) + (c->k[i] - 1) * c->dl[i] + 1;
        c->pb[i] = 0;
        if (has_os || same) {
            int64_t o = has_os ? os[nos - sp + i] : c->in[i] * c->st[i];
            int64_t total = full > o ? full - o : 0;
            c->pb[i] = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
        } else if (strcmp(ap, "VALID") && pads && np == 2 * sp) {
            c->pb[i] = pads[i];
        }
        c->pe[i] = full - c->pb[i] - c->out[i];
    }
}

static void conv_geometry(const ig_graph *g, const ig_node *n, conv_geo *c)
{
    const ig_value *x = &g->values[n->inputs[0]], *w = &g->values[n->inputs[1]], *y = &g->values[n->outputs[0]];
    bool transpose = n->op == IG_OP_conv_transpose;
    int32_t sp = x->shape.rank - 2;
    c->rank = x->shape.rank;
    for (int32_t i = 0; i < 2; i++) c->in[i] = c->out[i] = c->k[i] = c->st[i] = c->dl[i] = 1;
    for (int32_t i = 0; i < sp; i++) {
        c->in[i] = x->shape.d[2 + i].n;
        c->out[i] = y->shape.d[2 + i].n;
        c->k[i] = w->shape.d[2 + i].n;
    }
    const int64_t *a = NULL;
    int64_t na = 0;
    if (ig__attr_ints(n, "strides", &a, &na) && na == sp)
        for (int32_t i = 0; i < sp; i++) c->st[i] = a[i];
    if (ig__attr_ints(n, "dilations", &a, &na) && na == sp)
        for (int32_t i = 0; i < sp; i++) c->dl[i] = a[i];
    if (transpose)
        convt_pads(n, sp, c);
    else
        conv_pads(n, sp, c->in, c->out, c->k, c->st, c->dl, c->pb, c->pe);
    c->group = ig__attr_int(n, "group", 1);
    c->K = transpose ? w->shape.d[1].n * c->group : w->shape.d[0].n;
    /* pooled (explicit pads, 2-D: the op's inference holds it to that): the conv's own size, as the CPU
     * op works it out */
    int64_t cd[4];
    c->pooled =
        n->op == IG_OP_fused_conv && sp == 2 && ig__conv_pool_of(n, &c->pool, NULL) && ig__conv_out_dims(g, n, cd);
    for (int32_t i = 0; c->pooled && i < 2; i++) c->out[i] = cd[2 + i];
    if (sp == 1) { /* [N, C, L] as [N, C, 1, L] */
        c->in[1] = c->in[0];
        c->out[1] = c->out[0];
        c->k[1] = c->k[0];
        c->st[1] = c->st[0];
        c->dl[1] = c->dl[0];
        c->pb[1] = c->pb[0];
        c->pe[1] = c->pe[0];
        c->in[0] = c->out[0] = c->k[0] = c->st[0] = c->dl[0] = 1;
        c->pb[0] = c->pe[0] = 0;
    }
}

/* The filter as the kernel wants it (KRSC for channels-last, RSK for depthwise, KCRS otherwise) and the
 * bias (zeros when absent), converted once into the engine's weights. */
static int32_t filter_tensor(ig_lower *L, int32_t id, ingot_dtype dt, int layout)
{
    const ig_node *n = ig__lw_node(L, id);
    const ig_value *w = ig__lw_val(L, n->inputs[1]);
    ig_cu_wreq r = {0};
    r.kind = IG_W_CONV_W;
    r.src = n->inputs[1];
    r.bn[0] = r.bn[1] = r.bn[2] = r.bn[3] = -1;
    r.scale = 1;
    r.dtype = dt;
    r.nhwc = layout;
    r.n_out = (int32_t)w->shape.d[0].n;
    int64_t numel = 1;
    for (int32_t k = 0; k < w->shape.rank; k++) numel *= w->shape.d[k].n;
    r.bytes = (size_t)numel * ingot_dtype_size(dt);
    if (layout == 2) {
        int64_t d1[1] = {numel};
        return ig__lw_weight(L, &r, 1, d1, NULL);
    }
    int64_t wd[4] = {w->shape.d[0].n, w->shape.d[1].n, w->shape.rank == 4 ? w->shape.d[2].n : 1,
                     w->shape.d[w->shape.rank - 1].n};
    return ig__lw_weight(L, &r, 4, wd, NULL);
}

static int32_t bias_tensor(ig_lower *L, int32_t id, ingot_dtype dt, int64_t K)
{
    ig_cu_wreq r = {0};
    r.kind = IG_W_CONV_B;
    r.src = ig__lw_in(L, id, 2);
    r.bn[0] = r.bn[1] = r.bn[2] = r.bn[3] = -1;
    r.scale = 1;
    r.dtype = dt;
    r.n_out = (int32_t)K;
    r.bytes = (size_t)K * ingot_dtype_size(dt);
    int64_t bd[1] = {K};
    return ig__lw_weight(L, &r, 1, bd, NULL);
}

/* The bias [K] seen as [K, 1, ..., 1] of `rank - 1` dims, broadcasting over an output of that rank. */
static int32_t bias_view(ig_lower *L, int32_t bt, int32_t rank)
{
    const ig_cu_tensor *b = ig__lw_T(L, bt);
    int64_t bd[IG_MAX_RANK], bs[IG_MAX_RANK];
    bd[0] = b->dims[0];
    bs[0] = 1;
    for (int32_t q = 1; q < rank - 1; q++) {
        bd[q] = 1;
        bs[q] = 0;
    }
    return ig__lw_tensor(L, b->buf, b->dtype, rank - 1, bd, bs, b->offset);
}

/* The node's epilogue program (none for a plain Conv) and its extra inputs' values. */
static ingot_status conv_epilogue(ig_lower *L, int32_t id, ig_pw_prog *epi, int32_t *extra_v)
{
    const ig_node *n = ig__lw_node(L, id);
    memset(epi, 0, sizeof *epi);
    epi->n_in = 1;
    if (n->op != IG_OP_fused_conv) return INGOT_OK;
    int32_t n_extra = n->n_inputs > 3 ? n->n_inputs - 3 : 0;
    for (int32_t j = 0; j < n_extra; j++) extra_v[j] = n->inputs[3 + j];
    return ig__pw_decode(L->g, n, "epilogue_", 1 + n_extra, epi, L->err);
}

static ingot_status extras_of(ig_lower *L, int32_t id, const ig_pw_prog *epi, const int32_t *extra_v, int32_t *extras)
{
    for (int32_t j = 0; j + 1 < epi->n_in; j++)
        if ((extras[j] = ig__lw_get(L, extra_v[j])) < 0)
            return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "epilogue input %d has no device tensor", (int)j + 1);
    return INGOT_OK;
}

static ingot_status pool_after(ig_lower *L, int32_t id, const conv_geo *c, int32_t yt);
static int32_t pool_output(ig_lower *L, int32_t id, int32_t xt);
static void pool_of_conv(const conv_geo *c, const ig_cu_tensor *x, const ig_cu_tensor *y, ig_pool_args *p);

/* The conv's output may go straight into a Concat's slice of the node's output (not when pooled). */
static int32_t conv_out_slot(ig_lower *L, int32_t id, const conv_geo *c, int32_t yt)
{
    return c->pooled || c->rank != 4 ? yt : ig__lw_concat_slot(L, ig__lw_node(L, id)->outputs[0], yt);
}

/* Finish: the output value gets `yt` (the library's output, when it applied everything), or the
 * epilogue step's output; a pooled node's output is the pool step's, after them. */
static ingot_status conv_finish(ig_lower *L, int32_t id, const conv_geo *c, int32_t yt, int32_t bias_left,
                                const ig_pw_prog *epi, bool epi_done, const int32_t *extra_v)
{
    int32_t yv = ig__lw_node(L, id)->outputs[0];
    if (c->rank == 3) { /* back to [N, K, L] */
        ig_cu_tensor y = *ig__lw_T(L, yt);
        int64_t d3[3] = {y.dims[0], y.dims[1], y.dims[3]}, s3[3] = {y.strides[0], y.strides[1], y.strides[3]};
        if ((yt = ig__lw_tensor(L, y.buf, y.dtype, 3, d3, s3, y.offset)) < 0) return ig__lw_oom(L);
    }
    if (!epi_done) {
        int32_t extras[IG_PW_MAX_IN];
        ingot_status st = extras_of(L, id, epi, extra_v, extras);
        if (st != INGOT_OK) return st;
        int32_t bv = bias_left >= 0 ? bias_view(L, bias_left, c->rank) : -1;
        if (bias_left >= 0 && bv < 0) return ig__lw_oom(L);
        int64_t od[IG_MAX_RANK];
        int32_t orank = ig__lw_value_dims(L, yv, od);
        if (c->pooled) { /* the epilogue is of the conv's output, the pool after it */
            orank = 4;
            memcpy(od, ig__lw_T(L, yt)->dims, sizeof(int64_t) * 4);
        }
        yt = ig__lw_epilogue(L, id, epi, yt, bv, extras, ig__lw_T(L, yt)->dtype, od, orank, c->pooled ? -1 : yv);
        if (yt < 0) return ig__lw_status(L);
    }
    if (c->pooled) return pool_after(L, id, c, yt);
    L->p->val_tensor[yv] = yt;
    return INGOT_OK;
}

static ingot_status lower_dwconv(ig_lower *L, int32_t id, int32_t xt, const conv_geo *c, const ig_pw_prog *epi,
                                 const int32_t *extra_v)
{
    ig_cu_tensor x = *ig__lw_T(L, xt);
    int kind = ig__lw_epi_kind(epi);
    int act = kind == IG_LW_EPI_RELU ? IG_ACT_RELU : kind == IG_LW_EPI_CLIP ? IG_ACT_CLIP : IG_ACT_NONE;
    bool epi_done = kind == IG_LW_EPI_NONE || act != IG_ACT_NONE;
    int32_t wt = filter_tensor(L, id, x.dtype, 2);
    int32_t bt = ig__lw_in(L, id, 2) >= 0 ? bias_tensor(L, id, x.dtype, c->K) : -1;
    int64_t od[4] = {x.dims[0], c->K, c->out[0], c->out[1]};
    int32_t yt = ig__lw_dense(L, x.dtype, 4, od, true);
    if (yt >= 0 && epi_done) yt = conv_out_slot(L, id, c, yt);
    ig_cu_step *s =
        wt >= 0 && yt >= 0 && (bt >= 0 || ig__lw_in(L, id, 2) < 0) ? ig__lw_step(L, IG_ST_DWCONV, id, NULL) : NULL;
    if (!s) return ig__lw_oom(L);
    ig_dwconv_args *a = &s->u.dw.args;
    memset(a, 0, sizeof *a);
    const ig_cu_tensor *y = ig__lw_T(L, yt);
    a->dtype = x.dtype;
    a->act = act;
    a->lo = act == IG_ACT_CLIP ? epi->op[0].k : 0.f;
    a->hi = act == IG_ACT_CLIP ? epi->op[0].k2 : 0.f;
    a->n = x.dims[0];
    a->c = x.dims[1];
    a->h = x.dims[2];
    a->w = x.dims[3];
    a->oh = od[2];
    a->ow = od[3];
    for (int q = 0; q < 4; q++) {
        a->xs[q] = x.strides[q];
        a->ys[q] = y->strides[q];
    }
    a->kh = (int32_t)c->k[0];
    a->kw = (int32_t)c->k[1];
    a->sh = (int32_t)c->st[0];
    a->sw = (int32_t)c->st[1];
    a->ph = (int32_t)c->pb[0];
    a->pw = (int32_t)c->pb[1];
    a->dh = (int32_t)c->dl[0];
    a->dw = (int32_t)c->dl[1];
    s->u.dw.x = xt;
    s->u.dw.w = wt;
    s->u.dw.b = bt;
    s->u.dw.y = yt;
    return conv_finish(L, id, c, yt, -1, epi, epi_done, extra_v);
}

/* x zero-padded into a fresh tensor (cuDNN pads symmetrically; the exporters' asymmetric pads do not). */
static int32_t pad_input(ig_lower *L, int32_t id, int32_t xt, conv_geo *c, bool nhwc)
{
    ig_cu_tensor x = *ig__lw_T(L, xt);
    int64_t pd[4] = {x.dims[0], x.dims[1], x.dims[2] + c->pb[0] + c->pe[0], x.dims[3] + c->pb[1] + c->pe[1]};
    int32_t padded = ig__lw_dense(L, x.dtype, 4, pd, nhwc);
    ig_cu_step *fs = padded >= 0 ? ig__lw_step(L, IG_ST_FILL, id, "zero padding") : NULL;
    if (!fs) return -1;
    fs->u.fill.y = padded;
    fs->u.fill.bits = 0;
    ig_cu_tensor in = *ig__lw_T(L, padded);
    in.dims[2] = x.dims[2];
    in.dims[3] = x.dims[3];
    in.offset += c->pb[0] * in.strides[2] + c->pb[1] * in.strides[3];
    int32_t inner = ig__lw_tensor(L, in.buf, in.dtype, 4, in.dims, in.strides, in.offset);
    if (inner < 0 || ig__lw_copy(L, id, "asymmetric padding", xt, inner, 0) != INGOT_OK) return -1;
    for (int i = 0; i < 2; i++) c->pb[i] = c->pe[i] = 0;
    return padded;
}

/* Tensor t of value v in the layout the convolution wants (channels-last, or dense), copied once per
 * value (the channels-last copy is remembered for the value's other consumers). */
static int32_t conv_layout(ig_lower *L, int32_t id, int32_t v, int32_t t, bool nhwc, const char *what)
{
    const ig_cu_tensor *x = ig__lw_T(L, t);
    if (nhwc ? ig__lw_nhwc(x) : ig__cu_tensor_contig(x)) return t;
    if (!nhwc) return ig__lw_contig(L, id, t);
    bool cache = v >= 0 && x->rank == 4 && t == L->p->val_tensor[v];
    if (cache && L->p->val_nhwc[v] >= 0) return L->p->val_nhwc[v];
    int32_t m = ig__lw_materialize(L, id, t, true, what);
    if (m >= 0 && cache) L->p->val_nhwc[v] = m;
    return m;
}

/* [N, C, L] seen as [N, C, 1, L]; a 4-D tensor as it is. */
static int32_t as_4d(ig_lower *L, int32_t xt)
{
    ig_cu_tensor x = *ig__lw_T(L, xt);
    if (x.rank != 3) return xt;
    int64_t d4[4] = {x.dims[0], x.dims[1], 1, x.dims[2]}, s4[4] = {x.strides[0], x.strides[1], 0, x.strides[2]};
    return ig__lw_tensor(L, x.buf, x.dtype, 4, d4, s4, x.offset);
}

/*
 * How cuDNN computes a ConvTranspose. Backward data with symmetric pads p writes rows [p, p + H) of the
 * full output for any H whose forward convolution has the input's size: full0 - 2p <= H < full0 - 2p + s
 * (full0 = s (in - 1) + (k - 1) d + 1, the rows the filter reaches; rows past it are zeros). The node
 * wants rows [pb, pb + out): with p = min(pb, rows of full0 past the output), at least 0, a buffer of
 * H = max(full0 - 2p, pb - p + out) rows holds them at row pb - p. Asymmetric pads and output_padding
 * (up to s - 1 zero rows past full0) cost no copy, only a few extra rows. More zero rows than that cannot
 * be had this way; ONNX Runtime refuses such models too (its forward convolution of the output must give
 * the input's size).
 */
typedef struct convt_plan {
    int32_t pad[2];
    int64_t rows[2], crop[2];
} convt_plan;

static const char *convt_plan_of(const conv_geo *c, convt_plan *t)
{
    for (int i = 0; i < 2; i++) {
        int64_t full0 = c->st[i] * (c->in[i] - 1) + (c->k[i] - 1) * c->dl[i] + 1;
        int64_t end = full0 - c->pb[i] - c->out[i]; /* rows of full0 cropped at the end (< 0: zeros added) */
        int64_t p = c->pb[i] < end ? c->pb[i] : end;
        if (p < 0) p = 0;
        int64_t lo = full0 - 2 * p, need = c->pb[i] - p + c->out[i];
        if (need > lo + c->st[i] - 1)
            return "output_padding or output_shape adds a stride or more of zero rows past the filter's reach "
                   "(cuDNN's backward data cannot write them)";
        if (p > INT32_MAX || c->st[i] > INT32_MAX || c->dl[i] > INT32_MAX)
            return "pads, strides or dilations too large";
        t->pad[i] = (int32_t)p;
        t->rows[i] = need > lo ? need : lo;
        t->crop[i] = c->pb[i] - p;
    }
    return NULL;
}

static ingot_status lower_convt(ig_lower *L, int32_t id, int32_t xt, const conv_geo *c, const ig_pw_prog *epi)
{
    const ig_node *n = ig__lw_node(L, id);
    convt_plan t;
    const char *why = convt_plan_of(c, &t);
    if (why) return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "%s", why);
    bool nhwc = L->o->nhwc != 0;
    if ((xt = as_4d(L, xt)) < 0) return ig__lw_oom(L);
    if ((xt = conv_layout(L, id, c->rank == 4 ? n->inputs[0] : -1, xt, nhwc, "to channels-last")) < 0)
        return ig__lw_status(L);
    ig_cu_tensor x = *ig__lw_T(L, xt);
    ingot_dtype dt = ig__lw_dev_dtype(L->p, ig__lw_val(L, n->inputs[1])->dtype);
    bool has_b = ig__lw_in(L, id, 2) >= 0;
    int32_t wt = filter_tensor(L, id, dt, nhwc);
    int32_t bt = has_b ? bias_tensor(L, id, dt, c->K) : -1;
    int64_t bd[4] = {x.dims[0], c->K, t.rows[0], t.rows[1]};
    int32_t buf = ig__lw_dense(L, x.dtype, 4, bd, nhwc);
    ig_cu_step *s = wt >= 0 && (bt >= 0 || !has_b) && buf >= 0 ? ig__lw_step(L, IG_ST_CONV, id, NULL) : NULL;
    if (!s) return ig__lw_oom(L);
    ig_cu_conv *cv = &s->u.conv;
    cv->x = xt;
    cv->w = wt;
    cv->y = buf;
    cv->b = cv->z = -1;
    cv->relu = 0;
    cv->transpose = 1;
    for (int i = 0; i < 2; i++) {
        cv->pad[i] = t.pad[i];
        cv->stride[i] = (int32_t)c->st[i];
        cv->dil[i] = (int32_t)c->dl[i];
    }
    cv->group = (int32_t)c->group;
    cv->scratch = -1;
    cv->pool_y = -1;
    /* the output: rows [crop, crop + out) of the buffer */
    ig_cu_tensor y = *ig__lw_T(L, buf);
    y.dims[2] = c->out[0];
    y.dims[3] = c->out[1];
    y.offset += t.crop[0] * y.strides[2] + t.crop[1] * y.strides[3];
    int32_t yt = ig__lw_tensor(L, y.buf, y.dtype, 4, y.dims, y.strides, y.offset);
    if (yt < 0) return ig__lw_oom(L);
    return conv_finish(L, id, c, yt, bt, epi, bt < 0, NULL); /* epi: empty (no fused ConvTranspose) */
}

/* A 4-D tensor whose channels are contiguous and whose pixels (n, h, w) are rows of one stride: the
 * [N*H*W, C] matrix of a 1x1 convolution with leading dim *ld. A dense channels-last tensor is one (ld
 * C); so is a channel slice of one (a Split's part, a Concat's slot), with ld the whole tensor's C. */
static bool pixel_rows(const ig_cu_tensor *t, int64_t *ld)
{
    if (t->rank != 4 || (t->dims[1] > 1 && t->strides[1] != 1)) return false;
    const int64_t *d = t->dims, *s = t->strides;
    int64_t row = d[3] > 1 ? s[3] : d[2] > 1 ? s[2] : d[0] > 1 ? s[0] : d[1];
    if (row < d[1] || (d[3] > 1 && s[3] != row) || (d[2] > 1 && s[2] != row * d[3]) ||
        (d[0] > 1 && s[0] != row * d[3] * d[2]))
        return false;
    *ld = row;
    return true;
}

ingot_status ig__lw_conv(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t xv = n->inputs[0], extra_v[IG_PW_MAX_IN];
    ig_pw_prog epi;
    ingot_status st = conv_epilogue(L, id, &epi, extra_v);
    if (st != INGOT_OK) return st;
    conv_geo c;
    conv_geometry(L->g, n, &c);
    const ig_value *xval = ig__lw_val(L, xv), *w = ig__lw_val(L, n->inputs[1]);
    bool want_nhwc = L->o->nhwc != 0;
    int32_t xt = ig__lw_get(L, xv);
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    if (n->op == IG_OP_conv_transpose) return lower_convt(L, id, xt, &c, &epi);

    if (want_nhwc && c.rank == 4 && c.group > 1 && w->shape.d[1].n == 1 && c.group == c.K &&
        c.group == xval->shape.d[1].n && (xval->dtype == INGOT_DTYPE_FLOAT || xval->dtype == INGOT_DTYPE_FLOAT16))
        return lower_dwconv(L, id, xt, &c, &epi, extra_v);

    if ((xt = as_4d(L, xt)) < 0) return ig__lw_oom(L);
    /* 1x1, stride 1, channels-last: a GEMM [N*H*W, C] x [C, K] through cuBLASLt, with bias, residual
     * (as C, beta 1) and ReLU in its epilogue; it reads a channel slice in place */
    bool pointwise = want_nhwc && c.k[0] == 1 && c.k[1] == 1 && c.st[0] == 1 && c.st[1] == 1 && c.pb[0] == 0 &&
                     c.pb[1] == 0 && c.pe[0] == 0 && c.pe[1] == 0 && c.group == 1;
    int64_t lda = 0;
    if (c.pb[0] != c.pe[0] || c.pb[1] != c.pe[1]) {
        if ((xt = pad_input(L, id, xt, &c, want_nhwc)) < 0) return ig__lw_status(L);
    } else if (!(pointwise && pixel_rows(ig__lw_T(L, xt), &lda)) &&
               (xt = conv_layout(L, id, c.rank == 4 ? xv : -1, xt, want_nhwc, "to channels-last")) < 0) {
        return ig__lw_status(L);
    }
    ig_cu_tensor x = *ig__lw_T(L, xt);
    ingot_dtype dt = ig__lw_dev_dtype(L->p, w->dtype);
    int32_t wt = filter_tensor(L, id, dt, want_nhwc);
    int32_t bt = ig__lw_in(L, id, 2) >= 0 ? bias_tensor(L, id, dt, c.K) : -1;
    if (wt < 0 || (ig__lw_in(L, id, 2) >= 0 && bt < 0)) return ig__lw_oom(L);
    int64_t yd[4] = {x.dims[0], c.K, c.out[0], c.out[1]};
    int32_t yt = ig__lw_dense(L, x.dtype, 4, yd, want_nhwc);
    if (yt < 0) return ig__lw_oom(L);
    int kind = ig__lw_epi_kind(&epi);
    bool res = kind == IG_LW_EPI_RES || kind == IG_LW_EPI_RES_RELU;
    bool relu = kind == IG_LW_EPI_RELU || kind == IG_LW_EPI_RES_RELU;
    int32_t zt = -1;
    if (res) {
        int32_t zv = extra_v[0];
        const ig_value *z = ig__lw_val(L, zv);
        if (!ig__lw_is_const(L, zv) && ig__lw_same_shape(L, zv, n->outputs[0]) && z->dtype == w->dtype &&
            (zt = ig__lw_get(L, zv)) >= 0 && c.rank == 4)
            zt = conv_layout(L, id, zv, zt, want_nhwc, "residual to channels-last");
        else
            zt = -1;
        if (zt < 0 && L->err->status) return L->err->status;
        if (zt < 0) res = relu = false; /* a residual the library cannot read: the epilogue step adds it */
    }

    if (pointwise && pixel_rows(&x, &lda)) {
        bool epi_done = kind == IG_LW_EPI_NONE || kind == IG_LW_EPI_RELU || (res && zt >= 0);
        /* the GEMM's output is the value's: it may go straight into a Concat's slice */
        if (epi_done && (yt = conv_out_slot(L, id, &c, yt)) < 0) return ig__lw_oom(L);
        const ig_cu_tensor *y = ig__lw_T(L, yt);
        int64_t ldd = 0;
        if (!pixel_rows(y, &ldd)) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "output is not a pixel matrix");
        int64_t M = yd[0] * yd[2] * yd[3], C = x.dims[1], K = c.K;
        int64_t ad[2] = {M, C}, as[2] = {lda, 1}, bd2[2] = {C, K}, bs2[2] = {1, C}, dd[2] = {M, K}, ds[2] = {ldd, 1},
                zs[2] = {K, 1};
        ig_cu_gemm g;
        memset(&g, 0, sizeof g);
        g.a = ig__lw_tensor(L, x.buf, x.dtype, 2, ad, as, x.offset);
        g.b = ig__lw_tensor(L, ig__lw_T(L, wt)->buf, ig__lw_T(L, wt)->dtype, 2, bd2, bs2, 0);
        g.d = ig__lw_tensor(L, y->buf, y->dtype, 2, dd, ds, y->offset);
        g.c = epi_done && res
                  ? ig__lw_tensor(L, ig__lw_T(L, zt)->buf, ig__lw_T(L, zt)->dtype, 2, dd, zs, ig__lw_T(L, zt)->offset)
                  : -1;
        if (g.a < 0 || g.b < 0 || g.d < 0 || (epi_done && res && g.c < 0)) return ig__lw_oom(L);
        g.bias = bt;
        g.alpha = 1.f;
        g.beta = g.c >= 0 ? 1.f : 0.f;
        g.epi = epi_done && relu ? IG_EPI_RELU : IG_EPI_NONE;
        g.m = M;
        g.n = K;
        g.k = C;
        g.batch = 1;
        g.lda = lda;
        g.b_trans = 1;
        g.ldb = C;
        g.ldd = ldd;
        g.ldc = g.c >= 0 ? K : ldd; /* without C the library reads D's layout (C and D one pointer) */
        g.scratch = -1;
        ig_cu_step *gs = ig__lw_step(L, IG_ST_GEMM, id, NULL);
        if (!gs) return ig__lw_oom(L);
        gs->u.gemm = g;
        return conv_finish(L, id, &c, yt, -1, &epi, epi_done, extra_v);
    }

    /* cuDNN: with a ReLU, bias and residual go into its fused call; without, the epilogue step adds them */
    bool fused = relu;
    bool epi_done = fused || kind == IG_LW_EPI_NONE, whole = epi_done && (fused || bt < 0);
    /* pooled, and the step computes all of the node: the pool goes into it (conv.c) */
    int32_t pt = c.pooled && whole ? pool_output(L, id, yt) : -1;
    if (c.pooled && whole && pt < 0) return ig__lw_oom(L);
    /* not into a Concat's slice: cuDNN 9.19 offers no algorithm for a strided channels-last output (H200,
     * 2026-12-02: every conv of tests/gpu's Concat cases refused), so the Concat copies it */
    ig_cu_step *s = ig__lw_step(L, IG_ST_CONV, id, NULL);
    if (!s) return ig__lw_oom(L);
    ig_cu_conv *cv = &s->u.conv;
    cv->x = xt;
    cv->w = wt;
    cv->y = yt;
    cv->b = fused ? (bt >= 0 ? bt : bias_tensor(L, id, dt, c.K)) : -1;
    cv->z = fused && res ? zt : -1;
    cv->relu = fused;
    if (fused && cv->b < 0) return ig__lw_oom(L);
    cv->pad[0] = (int32_t)c.pb[0];
    cv->pad[1] = (int32_t)c.pb[1];
    cv->stride[0] = (int32_t)c.st[0];
    cv->stride[1] = (int32_t)c.st[1];
    cv->dil[0] = (int32_t)c.dl[0];
    cv->dil[1] = (int32_t)c.dl[1];
    cv->group = (int32_t)c.group;
    cv->scratch = -1;
    cv->pool_y = pt;
    if (pt >= 0) {
        pool_of_conv(&c, ig__lw_T(L, yt), ig__lw_T(L, pt), &cv->pool);
        L->p->val_tensor[n->outputs[0]] = pt;
        return INGOT_OK;
    }
    return conv_finish(L, id, &c, yt, fused ? -1 : bt, &epi, whole, extra_v);
}

bool ig__lw_conv_reads_rows(const ig_lower *L, int32_t id, int32_t v)
{
    const ig_node *n = ig__lw_node(L, id);
    if ((n->op != IG_OP_conv && n->op != IG_OP_fused_conv) || n->n_inputs < 2 || n->inputs[0] != v || !L->o->nhwc)
        return false;
    for (int32_t i = 1; i < n->n_inputs; i++)
        if (n->inputs[i] == v) return false; /* v read as something else too */
    const ig_value *x = ig__lw_val(L, v), *w = ig__lw_val(L, n->inputs[1]);
    if (x->shape.rank != 4 || w->shape.rank != 4) return false;
    conv_geo c;
    conv_geometry(L->g, n, &c);
    return !c.pooled && c.k[0] == 1 && c.k[1] == 1 && c.st[0] == 1 && c.st[1] == 1 && c.pb[0] == 0 && c.pb[1] == 0 &&
           c.pe[0] == 0 && c.pe[1] == 0 && c.group == 1;
}

const char *ig__lw_supports_conv(const ig_graph *g, const ig_node *n)
{
    if (n->n_inputs < 2 || n->inputs[1] < 0) return "no filter";
    const ig_value *w = &g->values[n->inputs[1]];
    if (!(w->flags & IG_VAL_CONST)) return "the filter must be a constant";
    if (n->n_inputs > 2 && n->inputs[2] >= 0 && !(g->values[n->inputs[2]].flags & IG_VAL_CONST))
        return "the bias must be a constant";
    if (w->shape.rank != 4 && w->shape.rank != 3)
        return n->op == IG_OP_conv_transpose ? "only 1-D and 2-D ConvTranspose (3-D is not lowered yet)"
                                             : "only 1-D and 2-D convolutions are supported";
    const ig_value *x = &g->values[n->inputs[0]];
    if (!ig__dtype_is_float(x->dtype) || x->dtype == INGOT_DTYPE_DOUBLE) return "only fp32/fp16 convolutions";
    if (n->op != IG_OP_conv_transpose) return NULL;
    conv_geo c;
    convt_plan t;
    conv_geometry(g, n, &c);
    return convt_plan_of(&c, &t);
}

/* ---- pooling ------------------------------------------------------------------------------------ */

/* The arguments of a 2-D pool of x into y (4-D views; a 1-D pool as height 1, strides 0 there). */
static void pool_args_2d(const int64_t *xd, const int64_t *xs, const int64_t *yd, const int64_t *ys, const int64_t *k,
                         const int64_t *st, const int64_t *dl, const int64_t *pb, const int64_t *pe, ig_pool_args *p)
{
    p->n = xd[0];
    p->c = xd[1];
    p->h = xd[2];
    p->w = xd[3];
    p->oh = yd[2];
    p->ow = yd[3];
    memcpy(p->xs, xs, sizeof p->xs);
    memcpy(p->ys, ys, sizeof p->ys);
    p->kh = (int32_t)k[0];
    p->kw = (int32_t)k[1];
    p->sh = (int32_t)st[0];
    p->sw = (int32_t)st[1];
    p->dh = (int32_t)dl[0];
    p->dw = (int32_t)dl[1];
    p->ph = (int32_t)pb[0];
    p->pw = (int32_t)pb[1];
    p->eh = (int32_t)pe[0];
    p->ew = (int32_t)pe[1];
}

/* The max pool of a pooled FusedConv, from its conv output x into y. */
static void pool_of_conv(const conv_geo *c, const ig_cu_tensor *x, const ig_cu_tensor *y, ig_pool_args *p)
{
    memset(p, 0, sizeof *p);
    p->dtype = x->dtype;
    p->is_max = 1;
    const int64_t dl[2] = {1, 1};
    pool_args_2d(x->dims, x->strides, y->dims, y->strides, c->pool.k, c->pool.s, dl, c->pool.pb, c->pool.pe, p);
}

/* The pooled node's output tensor: laid out like the conv's output xt, or the node's Concat slice. */
static int32_t pool_output(ig_lower *L, int32_t id, int32_t xt)
{
    const ig_cu_tensor *x = ig__lw_T(L, xt);
    int64_t od[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, ig__lw_node(L, id)->outputs[0], od);
    int32_t yt = ig__lw_dense(L, x->dtype, orank, od, ig__lw_nhwc(x) && !ig__cu_tensor_contig(x));
    return yt >= 0 ? ig__lw_concat_slot(L, ig__lw_node(L, id)->outputs[0], yt) : -1;
}

/* The pool of a pooled FusedConv as a step of its own, after the conv's (and its epilogue's). */
static ingot_status pool_after(ig_lower *L, int32_t id, const conv_geo *c, int32_t yt)
{
    int32_t pt = pool_output(L, id, yt);
    ig_cu_step *s = pt >= 0 ? ig__lw_step(L, IG_ST_POOL, id, "its max pool") : NULL;
    if (!s) return ig__lw_oom(L);
    pool_of_conv(c, ig__lw_T(L, yt), ig__lw_T(L, pt), &s->u.pool.args);
    s->u.pool.x = yt;
    s->u.pool.y = pt;
    L->p->val_tensor[ig__lw_node(L, id)->outputs[0]] = pt;
    return INGOT_OK;
}

ingot_status ig__lw_pool(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    if (ig__lw_out_used(L, id, 1))
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "the Indices output is not supported");
    int32_t xt = ig__lw_get(L, n->inputs[0]);
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    ig_cu_tensor x = *ig__lw_T(L, xt);
    if (x.rank != 4 && x.rank != 3)
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "only 1-D and 2-D pooling (rank %d)", (int)x.rank);
    int32_t sp = x.rank - 2;
    const ig_value *y = ig__lw_val(L, n->outputs[0]);
    int64_t xin[2], yout[2], kk[2] = {1, 1}, st[2] = {1, 1}, dl[2] = {1, 1}, pb[2], pe[2];
    const int64_t *a = NULL;
    int64_t na = 0;
    if (!ig__attr_ints(n, "kernel_shape", &a, &na) || na != sp)
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "kernel_shape missing");
    for (int32_t i = 0; i < sp; i++) {
        kk[i] = a[i];
        xin[i] = x.dims[2 + i];
        yout[i] = y->shape.d[2 + i].n;
    }
    if (ig__attr_ints(n, "strides", &a, &na) && na == sp)
        for (int32_t i = 0; i < sp; i++) st[i] = a[i];
    if (ig__attr_ints(n, "dilations", &a, &na) && na == sp)
        for (int32_t i = 0; i < sp; i++) dl[i] = a[i];
    conv_pads(n, sp, xin, yout, kk, st, dl, pb, pe);
    bool nhwc = ig__lw_nhwc(&x) && !ig__cu_tensor_contig(&x);
    int64_t od[4];
    int32_t orank = ig__lw_value_dims(L, n->outputs[0], od);
    int32_t yt = ig__lw_dense(L, x.dtype, orank, od, nhwc);
    if (yt >= 0) yt = ig__lw_concat_slot(L, n->outputs[0], yt);
    ig_cu_step *s = yt >= 0 ? ig__lw_step(L, IG_ST_POOL, id, NULL) : NULL;
    if (!s) return ig__lw_oom(L);
    ig_pool_args *p = &s->u.pool.args;
    memset(p, 0, sizeof *p);
    ig_cu_tensor yv = *ig__lw_T(L, yt);
    p->dtype = x.dtype;
    p->is_max = n->op == IG_OP_max_pool;
    p->count_include_pad = (int32_t)ig__attr_int(n, "count_include_pad", 0);
    if (sp == 2) {
        pool_args_2d(x.dims, x.strides, yv.dims, yv.strides, kk, st, dl, pb, pe, p);
    } else { /* 1-D pooling as 2-D with a height of 1 */
        const int64_t xd[4] = {x.dims[0], x.dims[1], 1, x.dims[2]},
                      xs[4] = {x.strides[0], x.strides[1], 0, x.strides[2]};
        const int64_t yd[4] = {yv.dims[0], yv.dims[1], 1, yv.dims[2]},
                      ys[4] = {yv.strides[0], yv.strides[1], 0, yv.strides[2]};
        const int64_t k2[2] = {1, kk[0]}, st2[2] = {1, st[0]}, dl2[2] = {1, dl[0]}, pb2[2] = {0, pb[0]},
                      pe2[2] = {0, pe[0]};
        pool_args_2d(xd, xs, yd, ys, k2, st2, dl2, pb2, pe2, p);
    }
    s->u.pool.x = xt;
    s->u.pool.y = yt;
    L->p->val_tensor[n->outputs[0]] = yt;
    return INGOT_OK;
}
