/*
 * col2im.c -- Col2Im (opset 18): column blocks [N, C * prod(block_shape), L] summed back into images
 * [N, C, image_shape...], the adjoint of im2col (PyTorch's fold). image_shape and block_shape are
 * inputs whose values decide the output's shape, so they must be known when the engine is built.
 *
 * The blocks along each dim are as many as a Conv's output positions over the image with that kernel,
 * strides, pads and dilations (ig__window_resolve, conv.c), and L must be their product. Block b at
 * kernel offset k lands at image position b * stride - pad_begin + k * dilation, dim by dim; positions
 * in the pads are dropped. Each input row is scattered once, so the work is linear in the input.
 * float32 and double add in their own type, float16 and bfloat16 into a float32 image, integers into
 * a uint64 image (wrapping as their type does), bool as a logical or (numpy's sum of bools).
 */
#include "op.h"
#include "ops_internal.h"

#include <inttypes.h>
#include <stdio.h>

typedef struct c2i_geom {
    int32_t nsp;
    int64_t planes; /* N * C */
    int64_t k, l;   /* elements per block (prod block_shape), blocks (L) */
    int64_t img_sp; /* elements per image plane */
    int64_t img[IG_MAX_SP], blocks[IG_MAX_SP], pb[IG_MAX_SP];
    int64_t block[IG_MAX_SP], stride[IG_MAX_SP], dil[IG_MAX_SP];
} c2i_geom;

/* "[a, b, c]" */
static const char *list_str(const int64_t *v, int32_t n, char *buf, size_t size)
{
    size_t at = (size_t)snprintf(buf, size, "[");
    for (int32_t i = 0; i < n && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%" PRId64, i ? ", " : "", v[i]);
    if (at < size) snprintf(buf + at, size - at, "]");
    return buf;
}

/* The geometry of node n for image_shape img and block_shape blk (nsp values each); err may be NULL. */
static ingot_status c2i_geom_of(ig_err *err, const ig_node *n, int32_t nsp, const int64_t *img, const int64_t *blk,
                                c2i_geom *gm)
{
    memset(gm, 0, sizeof *gm);
    const char *who = ig__node_label(n);
    if (nsp < 1 || nsp > IG_MAX_SP)
        return ig__errf(err, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                        "node '%s' (Col2Im): image_shape has %d values; 1 to %d are supported", who, (int)nsp,
                        IG_MAX_SP);
    /* sizes past 2^31 describe no real image; bounding them keeps the window arithmetic exact */
    for (int32_t i = 0; i < nsp; i++) {
        if (blk[i] < 1 || blk[i] > INT32_MAX)
            return ig__errf(err, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                            "node '%s' (Col2Im): block_shape value %" PRId64 " at index %d is not supported "
                            "(1 to 2^31-1)",
                            who, blk[i], (int)i);
        if (img[i] < 0 || img[i] > INT32_MAX)
            return ig__errf(err, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                            "node '%s' (Col2Im): image_shape value %" PRId64 " at index %d is not supported "
                            "(0 to 2^31-1)",
                            who, img[i], (int)i);
    }
    ig_window w;
    ingot_status st = ig__window_parse(err, n, IG_WIN_COL2IM, nsp, blk, &w);
    if (st != INGOT_OK) return st;
    gm->nsp = nsp;
    gm->k = gm->l = gm->img_sp = 1;
    for (int32_t i = 0; i < nsp; i++) {
        int64_t pe;
        if ((st = ig__window_resolve(err, n, &w, i, img[i], &gm->blocks[i], &gm->pb[i], &pe)) != INGOT_OK) return st;
        gm->img[i] = img[i];
        gm->block[i] = blk[i];
        gm->stride[i] = w.stride[i];
        gm->dil[i] = w.dil[i];
        if (!ig__mul_i64(gm->k, blk[i], &gm->k) || !ig__mul_i64(gm->l, gm->blocks[i], &gm->l) ||
            !ig__mul_i64(gm->img_sp, img[i], &gm->img_sp))
            return ig__errf(err, INGOT_ERR_MODEL_SHAPE, "node '%s' (Col2Im): the image or its blocks are too large",
                            who);
    }
    return INGOT_OK;
}

/* The L (blocks) an input must have, and why, for messages. */
static ingot_status wrong_l(ig_err *err, const ig_node *n, const char *x_name, int64_t l, const c2i_geom *gm)
{
    char a[160], b[160], c[160];
    return ig__errf(err, INGOT_ERR_MODEL_SHAPE,
                    "node '%s' (Col2Im): input '%s' has %" PRId64 " blocks (dim 2), but image_shape %s and "
                    "block_shape %s give %" PRId64 " (blocks per dim %s)",
                    ig__node_label(n), x_name, l, list_str(gm->img, gm->nsp, a, sizeof a),
                    list_str(gm->block, gm->nsp, b, sizeof b), gm->l, list_str(gm->blocks, gm->nsp, c, sizeof c));
}

/* image_shape or block_shape a graph input, bound when the context runs (its values then decide the
 * shapes): until then the output has N, the image_shape values when known, and fresh dims, its rank
 * from the length of either input. */
static ingot_status col2im_infer_unbound(ig_infer *cx)
{
    const ig_value *x = ig__in(cx, 0), *iv = ig__in(cx, 1), *bv = ig__in(cx, 2);
    const ig_value *sized = iv->shape.rank == 1 && ig__dim_known(iv->shape.d[0]) ? iv : bv;
    if (sized->shape.rank != 1 || !ig__dim_known(sized->shape.d[0]))
        return ig__unsupported(cx, "the length of image_shape or block_shape must be known when the engine is built");
    int64_t nsp = sized->shape.d[0].n;
    if (nsp < 1 || nsp > IG_MAX_SP)
        return ig__unsupported(cx, "input '%s' has %" PRId64 " values; 1 to %d are supported", sized->name, nsp,
                               IG_MAX_SP);
    int64_t img[IG_MAX_SP], ni = 0;
    if (ig__in_known(cx, 1)) {
        ingot_status st = ig__in_ints(cx, 1, img, IG_MAX_SP, &ni);
        if (st != INGOT_OK) return st;
    }
    ig_shape os = {.rank = (int32_t)nsp + 2};
    os.d[0] = x->shape.rank == 3 ? x->shape.d[0] : ig__dim_fresh(cx);
    for (int32_t i = 1; i < os.rank; i++) os.d[i] = i >= 2 && ni == nsp ? ig__dim_const(img[i - 2]) : ig__dim_fresh(cx);
    return ig__set_out(cx, 0, x->dtype, &os);
}

static ingot_status col2im_infer(ig_infer *cx)
{
    ig_value *x = ig__in(cx, 0);
    ingot_status st;
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    IG_TRY(st, ig__check_dtype(cx, 1, IG_T(INT64)), out);
    IG_TRY(st, ig__check_dtype(cx, 2, IG_T(INT64)), out);
    for (int i = 1; i <= 2; i++) {
        const ig_value *v = ig__in(cx, i);
        if (v->shape.rank >= 0 && v->shape.rank != 1)
            return ig__fail_shape(cx, "input '%s' must be 1-D, got rank %d", v->name, (int)v->shape.rank);
    }
    if (x->shape.rank >= 0 && x->shape.rank != 3)
        return ig__fail_shape(cx, "input '%s' must have rank 3 (N, C * block size, blocks), got rank %d", x->name,
                              (int)x->shape.rank);
    if (!ig__in_known(cx, 1) || !ig__in_known(cx, 2)) return col2im_infer_unbound(cx);
    int64_t img[IG_MAX_SP], blk[IG_MAX_SP], ni, nb;
    IG_TRY(st, ig__in_ints(cx, 1, img, IG_MAX_SP, &ni), out);
    IG_TRY(st, ig__in_ints(cx, 2, blk, IG_MAX_SP, &nb), out);
    if (ni != nb) return ig__fail_shape(cx, "image_shape has %" PRId64 " values but block_shape has %" PRId64, ni, nb);
    c2i_geom gm;
    IG_TRY(st, c2i_geom_of(cx->err, cx->node, (int32_t)ni, img, blk, &gm), out);

    ig_shape os = {.rank = gm.nsp + 2};
    ig_dim n = x->shape.rank == 3 ? x->shape.d[0] : ig__dim_fresh(cx);
    ig_dim ck = x->shape.rank == 3 ? x->shape.d[1] : ig__dim_fresh(cx), c;
    if (ig__dim_known(ck) && ck.n % gm.k != 0)
        return ig__fail_shape(cx,
                              "input '%s' has %" PRId64 " channels (dim 1), not a multiple of the block size %" PRId64
                              " (the product of block_shape)",
                              x->name, ck.n, gm.k);
    if (!ig__dim_div(ck, ig__dim_const(gm.k), &c)) c = ig__dim_fresh(cx);
    if (x->shape.rank == 3 && ig__dim_known(x->shape.d[2]) && x->shape.d[2].n != gm.l)
        return wrong_l(cx->err, cx->node, x->name, x->shape.d[2].n, &gm);
    os.d[0] = n;
    os.d[1] = c;
    for (int32_t i = 0; i < gm.nsp; i++) os.d[2 + i] = ig__dim_const(gm.img[i]);
    st = ig__set_out(cx, 0, x->dtype, &os);
out:
    return st;
}

/* How an output type sums: in place (float32, double), or in a scratch image converted at the end. */
typedef enum acc_kind { ACC_F32, ACC_LOWP, ACC_F64, ACC_U64 } acc_kind;

static acc_kind acc_of(ingot_dtype t)
{
    switch (t) {
    case INGOT_DTYPE_FLOAT: return ACC_F32;
    case INGOT_DTYPE_FLOAT16:
    case INGOT_DTYPE_BFLOAT16: return ACC_LOWP;
    case INGOT_DTYPE_DOUBLE: return ACC_F64;
    default: return ACC_U64;
    }
}

static size_t acc_size(acc_kind k) { return k == ACC_F32 || k == ACC_LOWP ? 4 : 8; }

static size_t col2im_scratch(const ig_graph *g, const ig_node *n)
{
    const ig_value *y = n->n_outputs > 0 && n->outputs[0] >= 0 ? &g->values[n->outputs[0]] : NULL;
    int64_t numel;
    if (!y || !ig__shape_numel(&y->shape, &numel)) return 0;
    acc_kind k = acc_of(y->dtype);
    return k == ACC_F32 || k == ACC_F64 ? 0 : (size_t)numel * acc_size(k);
}

typedef struct c2i_job {
    const c2i_geom *gm;
    const ig_tensor *x;
    void *acc; /* [planes, img_sp] of kind */
    acc_kind kind;
} c2i_job;

/* acc[at + j * step] += x[from + j] for j in [0, n) */
static void add_run(const c2i_job *jb, int64_t at, int64_t step, int64_t from, int64_t n)
{
    const ig_tensor *x = jb->x;
    switch (jb->kind) {
    case ACC_F32: {
        float *a = (float *)jb->acc + at;
        const float *s = (const float *)x->data + from;
        for (int64_t j = 0; j < n; j++) a[j * step] += s[j];
        break;
    }
    case ACC_LOWP: {
        float *a = (float *)jb->acc + at;
        const uint16_t *s = (const uint16_t *)x->data + from;
        if (x->dtype == INGOT_DTYPE_BFLOAT16)
            for (int64_t j = 0; j < n; j++) a[j * step] += ig__bf16_to_f32(s[j]);
        else
            for (int64_t j = 0; j < n; j++) a[j * step] += ig__f16_to_f32(s[j]);
        break;
    }
    case ACC_F64: {
        double *a = (double *)jb->acc + at;
        const double *s = (const double *)x->data + from;
        for (int64_t j = 0; j < n; j++) a[j * step] += s[j];
        break;
    }
    case ACC_U64: {
        uint64_t *a = (uint64_t *)jb->acc + at;
        for (int64_t j = 0; j < n; j++) a[j * step] += (uint64_t)ig__elem_i64(x->dtype, x->data, from + j);
        break;
    }
    }
}

/* Planes [pb, pe) (image x channel): zeroed, then for each kernel offset, each row of blocks (all dims
 * but the last) that lands inside the image is added along the last dim as one strided run. */
static void c2i_range(void *arg, int64_t pb, int64_t pe)
{
    const c2i_job *jb = arg;
    const c2i_geom *gm = jb->gm;
    const int32_t last = gm->nsp - 1;
    const int64_t nbl = gm->blocks[last], sl = gm->stride[last], rows = nbl ? gm->l / nbl : 0;
    size_t es = acc_size(jb->kind);
    memset((char *)jb->acc + (size_t)(pb * gm->img_sp) * es, 0, (size_t)((pe - pb) * gm->img_sp) * es);
    for (int64_t pl = pb; pl < pe; pl++) {
        for (int64_t kidx = 0; kidx < gm->k; kidx++) {
            int64_t kk[IG_MAX_SP], r = kidx;
            for (int32_t i = last; i >= 0; i--) {
                kk[i] = r % gm->block[i];
                r /= gm->block[i];
            }
            /* along the last dim block q lands at q * sl + off: inside the image for q in [lo, hi) */
            int64_t off = kk[last] * gm->dil[last] - gm->pb[last];
            int64_t lo = off >= 0 ? 0 : (-off + sl - 1) / sl;
            int64_t hi = gm->img[last] - 1 - off < 0 ? 0 : (gm->img[last] - 1 - off) / sl + 1;
            if (hi > nbl) hi = nbl;
            if (lo >= hi) continue;
            int64_t src = (pl * gm->k + kidx) * gm->l; /* this offset's L blocks */
            int64_t b[IG_MAX_SP] = {0};
            for (int64_t row = 0; row < rows; row++) {
                int64_t dst = 0;
                bool inside = true;
                for (int32_t i = 0; inside && i < last; i++) {
                    int64_t p = b[i] * gm->stride[i] - gm->pb[i] + kk[i] * gm->dil[i];
                    inside = p >= 0 && p < gm->img[i];
                    dst = dst * gm->img[i] + p;
                }
                if (inside)
                    add_run(jb, pl * gm->img_sp + dst * gm->img[last] + lo * sl + off, sl, src + row * nbl + lo,
                            hi - lo);
                for (int32_t i = last - 1; i >= 0; i--) {
                    if (++b[i] < gm->blocks[i]) break;
                    b[i] = 0;
                }
            }
        }
    }
}

/* Up to IG_MAX_SP int64 values of a 1-D tensor; -1 when it has more. */
static int32_t tensor_vals(const ig_tensor *t, int64_t *v)
{
    if (t->dtype != INGOT_DTYPE_INT64 || t->numel > IG_MAX_SP) return -1;
    memcpy(v, t->data, sizeof(int64_t) * (size_t)t->numel);
    return (int32_t)t->numel;
}

static ingot_status col2im_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    int64_t img[IG_MAX_SP], blk[IG_MAX_SP];
    int32_t ni = tensor_vals(ex->in[1], img), nb = tensor_vals(ex->in[2], blk);
    if (ni < 0 || ni != nb)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "image_shape and block_shape must hold as many values");
    c2i_geom gm;
    ingot_status st = c2i_geom_of(ex->err, ex->node, ni, img, blk, &gm);
    if (st != INGOT_OK) return st;
    int64_t ck;
    bool fits = x->rank == 3 && y->rank == ni + 2 && y->dims[0] == x->dims[0] && ig__mul_i64(y->dims[1], gm.k, &ck) &&
                x->dims[1] == ck;
    for (int32_t i = 0; fits && i < ni; i++) fits = y->dims[2 + i] == img[i];
    if (!fits) return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "input and output shapes do not match the blocks");
    if (x->dims[2] != gm.l)
        return wrong_l(ex->err, ex->node, ex->g ? ex->g->values[ex->node->inputs[0]].name : "input", x->dims[2], &gm);
    if (y->numel == 0) return INGOT_OK;
    gm.planes = y->dims[0] * y->dims[1];
    c2i_job jb = {&gm, x, y->data, acc_of(y->dtype)};
    void *own = NULL;
    if (jb.kind == ACC_LOWP || jb.kind == ACC_U64) {
        char *base;
        if ((st = ig__exec_scratch(ex, (size_t)y->numel * acc_size(jb.kind), &base, &own)) != INGOT_OK) return st;
        jb.acc = base;
    }
    ig__parallel_for(ex->pool, gm.planes, 1 + (int64_t)((1 << 14) / ((double)gm.k * (double)gm.l + 1)), c2i_range, &jb);
    if (jb.kind == ACC_LOWP) ig__from_f32(y->dtype, jb.acc, y->numel, y->data);
    if (jb.kind == ACC_U64)
        for (int64_t i = 0; i < y->numel; i++) ig__elem_set_i64(y->dtype, y->data, i, (int64_t)((uint64_t *)jb.acc)[i]);
    if (own) ig__free_aligned(own);
    return INGOT_OK;
}

const ig_op_def ig__op_col2im = {
    .name = "Col2Im",
    .since = 18,
    .min_in = 3,
    .max_in = 3,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = (1u << 1) | (1u << 2),
    .infer = col2im_infer,
    .cpu = col2im_cpu,
    .cpu_scratch = col2im_scratch,
    .flops = ig__flops_per_input,
};
