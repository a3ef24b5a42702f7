/*
 * conv.c -- ops of the 'conv' family: Conv, ConvTranspose, MaxPool, AveragePool, GlobalAveragePool,
 * GlobalMaxPool, for any number of spatial dims (1-D, 2-D and 3-D are what models use).
 *
 * All of them share the sliding-window geometry (kernel, strides, dilations, pads, auto_pad,
 * ceil_mode), parsed once by ig__window_parse() and resolved against concrete sizes by
 * ig__window_resolve(), so shape inference, scratch sizing, FLOP counting and the kernels agree on every
 * output size. LpPool, MaxUnpool (pool_more.c) and Col2Im (col2im.c) use the same geometry (ops_internal.h).
 *
 * Conv on the CPU: per image and group, one SGEMM W_g [M/g, C/g*k] times col [C/g*k, out] (+ bias in
 * the SGEMM's epilogue) where the column matrix is never built: the SGEMM's B-panel packer reads it
 * from the input (implicit im2col); a depthwise 1-D/2-D conv (one input channel per group) runs a
 * direct loop instead. ConvTranspose is
 * the adjoint: SGEMM W_g^T X_g into a column buffer, then col2im scatter-adds into the output.
 * Math is fp32; float16/bfloat16/double tensors are converted into scratch and back.
 */
#include "op.h"
#include "ops_internal.h"
#include "../cpu/cpu.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* Fail with the node named, as ig__fail does, from either inference or a kernel. */
static ingot_status node_fail(ig_err *err, const ig_node *node, ingot_status st, const char *fmt, ...) IG_PRINTF(4, 5);
static ingot_status node_fail(ig_err *err, const ig_node *node, ingot_status st, const char *fmt, ...)
{
    char msg[IG_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ig__errf(err, st, "node '%s' (%s): %s", ig__node_label(node), node->op_type, msg);
}

/* An INTS attribute of exactly `want` values, each >= min; false (absent) leaves out untouched. */
static ingot_status attr_ints_n(ig_err *err, const ig_node *node, const char *name, int32_t want, int64_t min,
                                int64_t *out, bool *present)
{
    const ig_attr *a = ig__node_attr(node, name);
    if (present) *present = false;
    if (!a) return INGOT_OK;
    if (a->type != IG_ATTR_INTS)
        return node_fail(err, node, INGOT_ERR_MODEL_INVALID, "attribute '%s' must be a list of ints", name);
    if (a->n != want)
        return node_fail(err, node, INGOT_ERR_MODEL_SHAPE,
                         "attribute '%s' has %" PRId64 " values; %d expected "
                         "for %d spatial dims",
                         name, a->n, (int)want, (int)(want > 0 ? want : 0));
    for (int64_t i = 0; i < a->n; i++) {
        /* window geometry past 2^31 describes no real tensor; bounding it keeps the size arithmetic
         * of resolve_dim far from int64 overflow */
        if (a->ints[i] > INT32_MAX)
            return node_fail(err, node, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                             "attribute '%s' value %" PRId64 " at index %" PRId64 " is too large (at most %d)", name,
                             a->ints[i], i, INT32_MAX);
        if (a->ints[i] < min)
            return node_fail(err, node, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                             "attribute '%s' value %" PRId64 " at index %" PRId64
                             " is not supported (must be >= %" PRId64 ")",
                             name, a->ints[i], i, min);
        out[i] = a->ints[i];
    }
    if (present) *present = true;
    return INGOT_OK;
}

/* The ops whose output grows from their input, as ConvTranspose's does (MaxUnpool: dilation 1). */
static bool is_transposed(ig_win_kind kind) { return kind == IG_WIN_CONVT || kind == IG_WIN_UNPOOL; }

/*
 * Parse the window attributes of a node with nsp spatial dims, reading only the attributes its op has
 * at its opset. wk: the weight's spatial dims for Conv/ConvTranspose (NULL for pools; an entry < 0 is
 * unknown), used when kernel_shape is absent; Col2Im's block_shape (it has no kernel_shape).
 */
ingot_status ig__window_parse(ig_err *err, const ig_node *node, ig_win_kind kind, int32_t nsp, const int64_t *wk,
                              ig_window *w)
{
    ingot_status st;
    memset(w, 0, sizeof *w);
    w->kind = kind;
    w->nsp = nsp;
    w->group = 1;
    for (int32_t i = 0; i < nsp; i++) w->stride[i] = w->dil[i] = 1;

    bool has_kernel = false;
    if (kind != IG_WIN_COL2IM) IG_TRY(st, attr_ints_n(err, node, "kernel_shape", nsp, 1, w->kernel, &has_kernel), out);
    if (!has_kernel) {
        if (!wk) return node_fail(err, node, INGOT_ERR_MODEL_INVALID, "attribute 'kernel_shape' is required");
        for (int32_t i = 0; i < nsp; i++) w->kernel[i] = wk[i] > 0 ? wk[i] : 0;
    } else if (wk) {
        for (int32_t i = 0; i < nsp; i++)
            if (wk[i] > 0 && wk[i] != w->kernel[i])
                return node_fail(err, node, INGOT_ERR_MODEL_SHAPE,
                                 "attribute 'kernel_shape' (%" PRId64 " at spatial "
                                 "dim %d) disagrees with the weight's dim %" PRId64,
                                 w->kernel[i], (int)i, wk[i]);
    }
    IG_TRY(st, attr_ints_n(err, node, "strides", nsp, 1, w->stride, NULL), out);
    /* dilations: AveragePool from opset 19, LpPool from 18, MaxUnpool never */
    bool has_dil = kind == IG_WIN_AVGPOOL  ? node->opset >= 19
                   : kind == IG_WIN_LPPOOL ? node->opset >= 18
                                           : kind != IG_WIN_UNPOOL;
    if (has_dil) IG_TRY(st, attr_ints_n(err, node, "dilations", nsp, 1, w->dil, NULL), out);

    int64_t pads[2 * IG_MAX_SP] = {0};
    IG_TRY(st, attr_ints_n(err, node, "pads", 2 * nsp, 0, pads, NULL), out);
    for (int32_t i = 0; i < nsp; i++) {
        w->pad_b[i] = pads[i];
        w->pad_e[i] = pads[nsp + i];
    }

    /* MaxUnpool and Col2Im have no auto_pad */
    const char *ap =
        kind == IG_WIN_UNPOOL || kind == IG_WIN_COL2IM ? "NOTSET" : ig__attr_str(node, "auto_pad", "NOTSET");
    if (!strcmp(ap, "NOTSET") || !ap[0])
        w->autopad = IG_PAD_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER"))
        w->autopad = IG_PAD_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER"))
        w->autopad = IG_PAD_SAME_LOWER;
    else if (!strcmp(ap, "VALID"))
        w->autopad = IG_PAD_VALID;
    else
        return node_fail(err, node, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                         "attribute 'auto_pad' value '%s' is not "
                         "supported (NOTSET, SAME_UPPER, SAME_LOWER or VALID)",
                         ap);

    if (kind == IG_WIN_CONV || kind == IG_WIN_CONVT) {
        w->group = ig__attr_int(node, "group", 1);
        if (w->group < 1)
            return node_fail(err, node, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                             "attribute 'group' value %" PRId64 " is not supported (must be >= 1)", w->group);
    }
    /* as ONNX Runtime requires: a pool's pads smaller than its window (a window wholly in the pads
     * has no element: MaxPool would output -FLT_MAX) */
    for (int32_t i = 0; (kind == IG_WIN_MAXPOOL || kind == IG_WIN_AVGPOOL) && has_kernel && i < nsp; i++)
        if (w->pad_b[i] >= w->kernel[i] || w->pad_e[i] >= w->kernel[i])
            return node_fail(err, node, INGOT_ERR_MODEL_INVALID,
                             "attribute 'pads' (%" PRId64 ", %" PRId64 " at spatial dim %d) must be smaller than "
                             "the kernel (%" PRId64 ")",
                             w->pad_b[i], w->pad_e[i], (int)i, w->kernel[i]);
    if (kind == IG_WIN_CONVT) {
        IG_TRY(st, attr_ints_n(err, node, "output_padding", nsp, 0, w->out_pad, NULL), out);
        /* ONNX: each output_padding smaller than its stride or dilation (more would add rows no
         * input position reaches) */
        for (int32_t i = 0; i < nsp; i++)
            if (w->out_pad[i] >= w->stride[i] && w->out_pad[i] >= w->dil[i])
                return node_fail(err, node, INGOT_ERR_MODEL_INVALID,
                                 "attribute 'output_padding' (%" PRId64 " at spatial dim %d) must be smaller than "
                                 "the stride (%" PRId64 ") or the dilation (%" PRId64 ")",
                                 w->out_pad[i], (int)i, w->stride[i], w->dil[i]);
        /* output_shape lists the spatial dims; exporters sometimes give N and C too */
        const ig_attr *os = ig__node_attr(node, "output_shape");
        if (os) {
            if (os->type != IG_ATTR_INTS || (os->n != nsp && os->n != nsp + 2))
                return node_fail(err, node, INGOT_ERR_MODEL_SHAPE,
                                 "attribute 'output_shape' must list %d spatial "
                                 "dims",
                                 (int)nsp);
            for (int32_t i = 0; i < nsp; i++) {
                w->out_shape[i] = os->ints[os->n - nsp + i];
                if (w->out_shape[i] < 1)
                    return node_fail(err, node, INGOT_ERR_MODEL_SHAPE,
                                     "attribute 'output_shape' value %" PRId64 " is not a valid size", w->out_shape[i]);
            }
            w->has_out_shape = true;
        }
    }
    if (kind == IG_WIN_MAXPOOL || kind == IG_WIN_AVGPOOL || (kind == IG_WIN_LPPOOL && node->opset >= 18)) {
        int64_t cm = ig__attr_int(node, "ceil_mode", 0);
        if (cm != 0 && cm != 1)
            return node_fail(err, node, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                             "attribute 'ceil_mode' value %" PRId64 " is not supported (0 or 1)", cm);
        w->ceil_mode = cm == 1;
    }
    if (kind == IG_WIN_AVGPOOL) w->count_include_pad = ig__attr_int(node, "count_include_pad", 0) != 0;
    if (kind == IG_WIN_MAXPOOL) {
        w->storage_order = ig__attr_int(node, "storage_order", 0);
        if (w->storage_order != 0 && w->storage_order != 1)
            return node_fail(err, node, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                             "attribute 'storage_order' value %" PRId64 " is not supported (0 or 1)", w->storage_order);
    }
    return INGOT_OK;
out:
    return st;
}

/*
 * Resolve spatial dim i for input size `in`: the output size and the pads actually applied
 * (begin/end; for ConvTranspose the pads cropped from the full output). Fails naming the dim when
 * the window does not fit.
 */
ingot_status ig__window_resolve(ig_err *err, const ig_node *node, const ig_window *w, int32_t i, int64_t in,
                                int64_t *out, int64_t *pb, int64_t *pe)
{
    int64_t k = w->kernel[i], s = w->stride[i], d = w->dil[i];
    int64_t ek = (k - 1) * d + 1; /* the dilated window: attributes are < 2^31, so no overflow */
    if (is_transposed(w->kind)) {
        int64_t full; /* the output with nothing cropped */
        if (__builtin_mul_overflow(s, in - 1, &full) || __builtin_add_overflow(full, w->out_pad[i] + ek, &full) ||
            (w->has_out_shape && w->out_shape[i] > INT64_MAX / 2) || (!w->has_out_shape && in > INT64_MAX / s))
            return node_fail(err, node, INGOT_ERR_MODEL_SHAPE,
                             "spatial dim %d: the output size overflows (input %" PRId64 ", stride %" PRId64 ")",
                             (int)i, in, s);
        int64_t o = 0, total = 0;
        if (w->has_out_shape || w->autopad == IG_PAD_SAME_UPPER || w->autopad == IG_PAD_SAME_LOWER) {
            o = w->has_out_shape ? w->out_shape[i] : in * s;
            total = full - o;
            if (total < 0) total = 0; /* a larger output gets zeros past the end (as onnxruntime does) */
            if (w->autopad == IG_PAD_SAME_UPPER) {
                *pb = total / 2;
                *pe = total - total / 2;
            } else {
                *pb = total - total / 2;
                *pe = total / 2;
            }
        } else if (w->autopad == IG_PAD_VALID) {
            *pb = *pe = 0;
            o = full;
        } else {
            *pb = w->pad_b[i];
            *pe = w->pad_e[i];
            o = full - *pb - *pe;
        }
        if (o < 1)
            return node_fail(err, node, INGOT_ERR_MODEL_SHAPE,
                             "spatial dim %d: output size %" PRId64 " is not "
                             "positive (input %" PRId64 ", kernel %" PRId64 ", stride %" PRId64 ")",
                             (int)i, o, in, k, s);
        *out = o;
        return INGOT_OK;
    }
    if (in > INT64_MAX / 4)
        return node_fail(err, node, INGOT_ERR_MODEL_SHAPE, "spatial dim %d: input size %" PRId64 " is too large",
                         (int)i, in);
    if (w->autopad == IG_PAD_SAME_UPPER || w->autopad == IG_PAD_SAME_LOWER) {
        int64_t o = (in + s - 1) / s;
        int64_t total = (o - 1) * s + ek - in;
        if (total < 0) total = 0;
        if (w->autopad == IG_PAD_SAME_UPPER) {
            *pb = total / 2;
            *pe = total - total / 2;
        } else {
            *pb = total - total / 2;
            *pe = total / 2;
        }
    } else if (w->autopad == IG_PAD_VALID) {
        *pb = *pe = 0;
    } else {
        *pb = w->pad_b[i];
        *pe = w->pad_e[i];
    }
    int64_t span = in + *pb + *pe - ek;
    if (span < 0)
        return node_fail(err, node, INGOT_ERR_MODEL_SHAPE,
                         "spatial dim %d: the window (kernel %" PRId64 ", dilation %" PRId64
                         ") is larger than the padded input (%" PRId64 " + pads %" PRId64 " + %" PRId64 ")",
                         (int)i, k, d, in, *pb, *pe);
    int64_t o = span / s + 1;
    if (w->ceil_mode) {
        o = (span + s - 1) / s + 1;
        if ((o - 1) * s >= in + *pb) o--; /* the last window must start inside the input or its left pad */
    }
    *out = o;
    return INGOT_OK;
}

/* ---- shared inference ------------------------------------------------------------------------- */

static ingot_status check_float_input(ig_infer *cx, int i, uint32_t mask, ingot_dtype want)
{
    ig_value *v = ig__in(cx, i);
    if (!v) return INGOT_OK;
    ingot_status st = ig__check_dtype(cx, i, mask);
    if (st != INGOT_OK) return st;
    if (want != INGOT_DTYPE_UNDEFINED && v->dtype != want)
        return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "input %d '%s' has dtype %s but input 0 has %s", i, v->name,
                        ingot_dtype_name(v->dtype), ingot_dtype_name(want));
    return INGOT_OK;
}

/* Output spatial dims from input dims that may be symbolic: a symbolic size passes through when the
 * window cannot change it (k=1, s=1, no pads, or SAME with s=1); otherwise it becomes a fresh symbol. */
ingot_status ig__window_infer_spatial(ig_infer *cx, const ig_window *w, const ig_shape *xs, ig_shape *os)
{
    for (int32_t i = 0; i < w->nsp; i++) {
        ig_dim in = xs->d[2 + i];
        if (ig__dim_known(in) && w->kernel[i] > 0) {
            int64_t o = 0, pb = 0, pe = 0;
            ingot_status st = ig__window_resolve(cx->err, cx->node, w, i, in.n, &o, &pb, &pe);
            if (st != INGOT_OK) return st;
            os->d[2 + i] = ig__dim_const(o);
            continue;
        }
        if (w->kind == IG_WIN_CONVT && w->has_out_shape) {
            os->d[2 + i] = ig__dim_const(w->out_shape[i]);
            continue;
        }
        bool same_size = false;
        if (!is_transposed(w->kind) && w->stride[i] == 1 && !w->ceil_mode) {
            if (w->autopad == IG_PAD_SAME_UPPER || w->autopad == IG_PAD_SAME_LOWER)
                same_size = true;
            else if (w->kernel[i] == 1 && (w->autopad == IG_PAD_VALID || (w->pad_b[i] == 0 && w->pad_e[i] == 0)))
                same_size = true;
        }
        if (is_transposed(w->kind) && w->kernel[i] == 1 && w->stride[i] == 1 && w->out_pad[i] == 0 &&
            (w->autopad != IG_PAD_NOTSET || (w->pad_b[i] == 0 && w->pad_e[i] == 0)))
            same_size = true;
        os->d[2 + i] = same_size ? in : ig__dim_fresh(cx);
    }
    return INGOT_OK;
}

/* The spatial dims of a weight value: -1 where unknown. */
static void weight_kernel(const ig_value *wv, int32_t nsp, int64_t *wk)
{
    for (int32_t i = 0; i < nsp; i++) {
        wk[i] = -1;
        if (wv && wv->shape.rank == nsp + 2 && ig__dim_known(wv->shape.d[2 + i])) wk[i] = wv->shape.d[2 + i].n;
    }
}

static ingot_status conv_like_infer(ig_infer *cx, bool transpose)
{
    ig_value *x = ig__in(cx, 0), *wv = ig__in(cx, 1), *b = ig__in(cx, 2);
    if (!x || !wv) return ig__fail_shape(cx, "inputs X and W are required");
    ingot_status st;
    if ((st = check_float_input(cx, 0, IG_TS_FLOAT, INGOT_DTYPE_UNDEFINED)) != INGOT_OK) return st;
    if ((st = check_float_input(cx, 1, IG_TS_FLOAT, x->dtype)) != INGOT_OK) return st;
    if ((st = check_float_input(cx, 2, IG_TS_FLOAT, x->dtype)) != INGOT_OK) return st;

    int32_t rank = x->shape.rank >= 0 ? x->shape.rank : wv->shape.rank;
    if (rank < 0) {
        ig_shape unk = {.rank = -1};
        return ig__set_out(cx, 0, x->dtype, &unk);
    }
    if (rank < 3)
        return ig__fail_shape(cx, "input '%s' must have rank >= 3 (N, C, spatial dims), got rank %d",
                              x->shape.rank >= 0 ? x->name : wv->name, (int)rank);
    if (x->shape.rank >= 0 && wv->shape.rank >= 0 && wv->shape.rank != x->shape.rank)
        return ig__fail_shape(cx, "weight '%s' has rank %d but input '%s' has rank %d", wv->name, (int)wv->shape.rank,
                              x->name, (int)x->shape.rank);
    int32_t nsp = rank - 2;
    int64_t wk[IG_MAX_SP];
    weight_kernel(wv, nsp, wk);
    ig_window w;
    if ((st = ig__window_parse(cx->err, cx->node, transpose ? IG_WIN_CONVT : IG_WIN_CONV, nsp, wk, &w)) != INGOT_OK)
        return st;

    ig_dim wd0 = wv->shape.rank >= 0 ? wv->shape.d[0] : ig__dim_fresh(cx);
    ig_dim wd1 = wv->shape.rank >= 0 ? wv->shape.d[1] : ig__dim_fresh(cx);
    ig_dim xc = x->shape.rank >= 0 ? x->shape.d[1] : ig__dim_fresh(cx);
    ig_dim m; /* output channels */
    if (!transpose) {
        /* W is [M, C/group, k...] */
        if (ig__dim_known(xc) && ig__dim_known(wd1) && xc.n != wd1.n * w.group)
            return ig__fail_shape(cx,
                                  "input '%s' has %" PRId64 " channels but weight '%s' expects %" PRId64
                                  " (weight dim 1 = %" PRId64 " x group %" PRId64 ")",
                                  x->name, xc.n, wv->name, wd1.n * w.group, wd1.n, w.group);
        if (ig__dim_known(wd0) && wd0.n % w.group != 0)
            return ig__fail_shape(cx, "weight '%s' has %" PRId64 " output channels, not a multiple of group %" PRId64,
                                  wv->name, wd0.n, w.group);
        m = wd0;
    } else {
        /* W is [C, M/group, k...] */
        if (ig__dim_known(xc) && ig__dim_known(wd0) && xc.n != wd0.n)
            return ig__fail_shape(
                cx, "input '%s' has %" PRId64 " channels but weight '%s' expects %" PRId64 " (weight dim 0)", x->name,
                xc.n, wv->name, wd0.n);
        if (ig__dim_known(xc) && xc.n % w.group != 0)
            return ig__fail_shape(cx, "input '%s' has %" PRId64 " channels, not a multiple of group %" PRId64, x->name,
                                  xc.n, w.group);
        if (!ig__dim_mul(wd1, ig__dim_const(w.group), &m)) m = ig__dim_fresh(cx);
    }
    if (b && b->shape.rank >= 0) {
        if (b->shape.rank != 1)
            return ig__fail_shape(cx, "bias '%s' must be 1-D, got rank %d", b->name, (int)b->shape.rank);
        if (ig__dim_known(b->shape.d[0]) && ig__dim_known(m) && b->shape.d[0].n != m.n)
            return ig__fail_shape(cx, "bias '%s' has %" PRId64 " values but the output has %" PRId64 " channels",
                                  b->name, b->shape.d[0].n, m.n);
    }
    ig_shape xs = x->shape;
    if (xs.rank < 0) {
        xs.rank = rank;
        for (int32_t i = 0; i < rank; i++) xs.d[i] = ig__dim_fresh(cx);
    }
    ig_shape os = {.rank = rank};
    os.d[0] = xs.d[0];
    os.d[1] = m;
    if ((st = ig__window_infer_spatial(cx, &w, &xs, &os)) != INGOT_OK) return st;
    return ig__set_out(cx, 0, x->dtype, &os);
}

static ingot_status conv_infer(ig_infer *cx) { return conv_like_infer(cx, false); }
static ingot_status conv_transpose_infer(ig_infer *cx) { return conv_like_infer(cx, true); }

static ingot_status pool_infer_common(ig_infer *cx, ig_win_kind kind)
{
    ig_value *x = ig__in(cx, 0);
    if (!x) return ig__fail_shape(cx, "input X is required");
    uint32_t mask = IG_TS_FLOAT;
    if (kind == IG_WIN_MAXPOOL && cx->node->opset >= 12) mask |= IG_T(INT8) | IG_T(UINT8);
    ingot_status st = ig__check_dtype(cx, 0, mask);
    if (st != INGOT_OK) return st;
    if (x->shape.rank < 0) {
        ig_shape unk = {.rank = -1};
        if ((st = ig__set_out(cx, 0, x->dtype, &unk)) != INGOT_OK) return st;
        return ig__set_out(cx, 1, INGOT_DTYPE_INT64, &unk);
    }
    if (x->shape.rank < 3)
        return ig__fail_shape(cx, "input '%s' must have rank >= 3 (N, C, spatial dims), got rank %d", x->name,
                              (int)x->shape.rank);
    ig_window w;
    if ((st = ig__window_parse(cx->err, cx->node, kind, x->shape.rank - 2, NULL, &w)) != INGOT_OK) return st;
    ig_shape os = x->shape;
    if ((st = ig__window_infer_spatial(cx, &w, &x->shape, &os)) != INGOT_OK) return st;
    if ((st = ig__set_out(cx, 0, x->dtype, &os)) != INGOT_OK) return st;
    return ig__set_out(cx, 1, INGOT_DTYPE_INT64, &os); /* MaxPool's Indices, when asked for */
}

static ingot_status max_pool_infer(ig_infer *cx) { return pool_infer_common(cx, IG_WIN_MAXPOOL); }
static ingot_status average_pool_infer(ig_infer *cx) { return pool_infer_common(cx, IG_WIN_AVGPOOL); }

static ingot_status global_pool_infer(ig_infer *cx)
{
    ig_value *x = ig__in(cx, 0);
    if (!x) return ig__fail_shape(cx, "input X is required");
    ingot_status st = ig__check_dtype(cx, 0, IG_TS_FLOAT);
    if (st != INGOT_OK) return st;
    ig_shape os = x->shape;
    if (os.rank >= 0 && os.rank < 3)
        return ig__fail_shape(cx, "input '%s' must have rank >= 3 (N, C, spatial dims), got rank %d", x->name,
                              (int)os.rank);
    for (int32_t i = 2; i < os.rank; i++) os.d[i] = ig__dim_const(1);
    return ig__set_out(cx, 0, x->dtype, &os);
}

/* ---- concrete geometry (kernels, scratch, FLOPs) ------------------------------------------------ */

typedef struct geom {
    ig_window w;
    int32_t nsp;
    int64_t n, c, m, cg, mg; /* batch, in channels, out channels, per group */
    int64_t in[IG_MAX_SP], out[IG_MAX_SP], pb[IG_MAX_SP], pe[IG_MAX_SP];
    int64_t in_sp, out_sp, kprod; /* products over spatial dims */
} geom;

/* Geometry from concrete dims. xd: input dims [rank]; wd: weight dims (NULL for pools). */
static ingot_status make_geom(ig_err *err, const ig_node *node, ig_win_kind kind, int32_t rank, const int64_t *xd,
                              const int64_t *wd, geom *gm)
{
    memset(gm, 0, sizeof *gm);
    if (rank < 3 || rank > IG_MAX_RANK)
        return node_fail(err, node, INGOT_ERR_MODEL_SHAPE, "input must have rank >= 3, got %d", (int)rank);
    int32_t nsp = rank - 2;
    ingot_status st = ig__window_parse(err, node, kind, nsp, wd ? wd + 2 : NULL, &gm->w);
    if (st != INGOT_OK) return st;
    gm->nsp = nsp;
    gm->n = xd[0];
    gm->c = xd[1];
    int64_t g = gm->w.group;
    if (kind == IG_WIN_CONV) {
        gm->m = wd[0];
        gm->cg = wd[1];
        if (gm->cg * g != gm->c || gm->m % g != 0)
            return node_fail(err, node, INGOT_ERR_MODEL_SHAPE,
                             "input has %" PRId64 " channels but the weight expects %" PRId64
                             " (weight dim 1 = %" PRId64 " x group %" PRId64 ")",
                             gm->c, gm->cg * g, gm->cg, g);
        gm->mg = gm->m / g;
    } else if (kind == IG_WIN_CONVT) {
        if (wd[0] != gm->c || gm->c % g != 0)
            return node_fail(err, node, INGOT_ERR_MODEL_SHAPE,
                             "input has %" PRId64 " channels but the weight expects %" PRId64, gm->c, wd[0]);
        gm->cg = gm->c / g;
        gm->mg = wd[1];
        gm->m = gm->mg * g;
    } else {
        gm->m = gm->c;
        gm->cg = gm->mg = 1;
    }
    gm->in_sp = gm->out_sp = gm->kprod = 1;
    for (int32_t i = 0; i < nsp; i++) {
        gm->in[i] = xd[2 + i];
        if ((st = ig__window_resolve(err, node, &gm->w, i, gm->in[i], &gm->out[i], &gm->pb[i], &gm->pe[i])) != INGOT_OK)
            return st;
        gm->in_sp *= gm->in[i];
        gm->out_sp *= gm->out[i];
        gm->kprod *= gm->w.kernel[i];
    }
    return INGOT_OK;
}

/* Concrete dims of value input i of node n in graph g; false when not concrete. */
static bool value_dims(const ig_graph *g, const ig_node *n, int i, int32_t *rank, int64_t *dims)
{
    if (i >= n->n_inputs || n->inputs[i] < 0) return false;
    const ig_value *v = &g->values[n->inputs[i]];
    if (v->shape.rank < 0 || !ig__shape_known(&v->shape)) return false;
    *rank = v->shape.rank;
    for (int32_t k = 0; k < v->shape.rank; k++) dims[k] = v->shape.d[k].n;
    return true;
}

static bool graph_geom(const ig_graph *g, const ig_node *n, ig_win_kind kind, geom *gm)
{
    int32_t rx, rw;
    int64_t xd[IG_MAX_RANK], wd[IG_MAX_RANK];
    if (!value_dims(g, n, 0, &rx, xd)) return false;
    bool has_w = kind == IG_WIN_CONV || kind == IG_WIN_CONVT;
    if (has_w && (!value_dims(g, n, 1, &rw, wd) || rw != rx)) return false;
    return make_geom(NULL, n, kind, rx, xd, has_w ? wd : NULL, gm) == INGOT_OK;
}

static bool node_has_input(const ig_node *n, int i) { return i < n->n_inputs && n->inputs[i] >= 0; }

/* ---- dtype conversion --------------------------------------------------------------------------- */

static void to_f32(const ig_tensor *t, float *dst)
{
    int64_t n = t->numel;
    switch (t->dtype) {
    case INGOT_DTYPE_FLOAT: memcpy(dst, t->data, sizeof(float) * (size_t)n); break;
    case INGOT_DTYPE_FLOAT16:
        for (int64_t i = 0; i < n; i++) dst[i] = ig__f16_to_f32(((const uint16_t *)t->data)[i]);
        break;
    case INGOT_DTYPE_BFLOAT16:
        for (int64_t i = 0; i < n; i++) dst[i] = ig__bf16_to_f32(((const uint16_t *)t->data)[i]);
        break;
    case INGOT_DTYPE_DOUBLE:
        for (int64_t i = 0; i < n; i++) dst[i] = (float)((const double *)t->data)[i];
        break;
    case INGOT_DTYPE_INT8:
        for (int64_t i = 0; i < n; i++) dst[i] = (float)((const int8_t *)t->data)[i];
        break;
    case INGOT_DTYPE_UINT8:
        for (int64_t i = 0; i < n; i++) dst[i] = (float)((const uint8_t *)t->data)[i];
        break;
    default: break;
    }
}

static void from_f32(const float *src, ig_tensor *t)
{
    int64_t n = t->numel;
    switch (t->dtype) {
    case INGOT_DTYPE_FLOAT: memcpy(t->data, src, sizeof(float) * (size_t)n); break;
    case INGOT_DTYPE_FLOAT16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)t->data)[i] = ig__f32_to_f16(src[i]);
        break;
    case INGOT_DTYPE_BFLOAT16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)t->data)[i] = ig__f32_to_bf16(src[i]);
        break;
    case INGOT_DTYPE_DOUBLE:
        for (int64_t i = 0; i < n; i++) ((double *)t->data)[i] = src[i];
        break;
    case INGOT_DTYPE_INT8: /* max of int8 values: exact */
        for (int64_t i = 0; i < n; i++) ((int8_t *)t->data)[i] = (int8_t)src[i];
        break;
    case INGOT_DTYPE_UINT8:
        for (int64_t i = 0; i < n; i++) ((uint8_t *)t->data)[i] = (uint8_t)src[i];
        break;
    default: break;
    }
}

/* ---- scratch layout ----------------------------------------------------------------------------- */

/* Scratch is carved into 64-byte aligned pieces in a fixed order; the same walk sizes it. */
typedef struct carver {
    char *base; /* NULL while sizing */
    size_t off;
} carver;

static float *carve(carver *cv, int64_t floats)
{
    size_t bytes = ((size_t)(floats > 0 ? floats : 0) * sizeof(float) + 63) & ~(size_t)63;
    float *p = cv->base ? (float *)(cv->base + cv->off) : NULL;
    cv->off += bytes;
    return p;
}

/* Where a kernel's temporaries live: the executor's scratch when large enough, else (constant
 * folding, callers that did not size scratch) a heap block freed by release_scratch. */
static ingot_status get_scratch(ig_exec *ex, size_t need, char **base, void **own)
{
    *own = NULL;
    if (need == 0 || (ex->scratch && ex->scratch_bytes >= need)) {
        *base = ex->scratch;
        return INGOT_OK;
    }
    *own = ig__malloc_aligned(need, 64);
    if (!*own)
        return ig__errf(ex->err, INGOT_ERR_OUT_OF_MEMORY, "node '%s' (%s): out of memory for %zu bytes of scratch",
                        ig__node_label(ex->node), ex->node->op_type, need);
    *base = *own;
    return INGOT_OK;
}

/* ---- Conv --------------------------------------------------------------------------------------- */

typedef enum conv_path { PATH_GEMM, PATH_DEPTHWISE } conv_path;

static conv_path conv_choose(const geom *gm)
{
    return gm->cg == 1 && gm->nsp <= 2 && gm->w.group > 1 ? PATH_DEPTHWISE : PATH_GEMM;
}

typedef struct conv_buffers {
    float *x, *w, *b, *y; /* fp32 views (the tensors themselves when fp32) */
    float *col;           /* ConvTranspose's column buffer */
    void *ws;
    size_t ws_bytes;
} conv_buffers;

/* fp32 copies of x, w, b and y when the tensors are another float type (the same counts for Conv and
 * ConvTranspose: both weights hold group * mg * cg * kprod values). */
static void carve_f32_copies(const geom *gm, ingot_dtype dt, bool has_bias, carver *cv, conv_buffers *bf)
{
    memset(bf, 0, sizeof *bf);
    if (dt == INGOT_DTYPE_FLOAT) return;
    bf->x = carve(cv, gm->n * gm->c * gm->in_sp);
    bf->w = carve(cv, gm->m * gm->cg * gm->kprod);
    if (has_bias) bf->b = carve(cv, gm->m);
    bf->y = carve(cv, gm->n * gm->m * gm->out_sp);
}

typedef void (*layout_fn)(const geom *gm, ingot_dtype dt, bool has_bias, carver *cv, conv_buffers *bf);

/* Scratch bytes of a Conv/ConvTranspose node: its layout carved over no memory. */
static size_t layout_scratch(const ig_graph *g, const ig_node *n, ig_win_kind kind, layout_fn layout)
{
    geom gm;
    if (!graph_geom(g, n, kind, &gm)) return 0;
    carver cv = {0};
    conv_buffers bf;
    layout(&gm, g->values[n->inputs[0]].dtype, node_has_input(n, 2), &cv, &bf);
    return cv.off;
}

/* Lay out (or size, when cv->base is NULL) Conv's scratch. */
static void conv_layout(const geom *gm, ingot_dtype dt, bool has_bias, carver *cv, conv_buffers *bf)
{
    carve_f32_copies(gm, dt, has_bias, cv, bf);
    conv_path path = conv_choose(gm);
    int64_t kdim = gm->cg * gm->kprod;
    if (path != PATH_DEPTHWISE) {
        bf->ws_bytes = ig__sgemm_pack_b_ws_bytes(gm->mg, gm->out_sp, kdim);
        bf->ws = carve(cv, (int64_t)(bf->ws_bytes / sizeof(float)) + 1);
    }
}

static size_t conv_scratch(const ig_graph *g, const ig_node *n)
{
    return layout_scratch(g, n, IG_WIN_CONV, conv_layout);
}

/*
 * Implicit im2col: the SGEMM asks for panels of B = col[C/g * k, out] and this packer builds them
 * straight from the input, so the column matrix never exists in memory (on small VMs its write and
 * re-read cost more than the multiply). B(p, j) = x[c, o_j * s - pb + kk_p * d] (0 in the padding),
 * with p = c * kprod + kernel offset and j an output position. A panel's columns are consecutive
 * output positions: runs along the last spatial dim, each copied (or strided) from one input row.
 */
#define PACK_MAX_NR 64

typedef struct conv_pack_ctx {
    const geom *gm;
    const float *x; /* this image and group: [cg, in_sp] */
} conv_pack_ctx;

static void conv_pack_b(void *ctx, int64_t p0, int64_t kc, int64_t j0, int64_t cols, float *dst, int nr)
{
    const conv_pack_ctx *cp = ctx;
    const geom *gm = cp->gm;
    const int32_t nsp = gm->nsp, last = nsp - 1;
    const int64_t ow_n = gm->out[last], iw_n = gm->in[last], sw = gm->w.stride[last];
    IG_ASSERT(nr <= PACK_MAX_NR && cols <= nr);
    struct run {
        int64_t q0, len, ow0;
        int64_t base[IG_MAX_SP]; /* input coords of the outer dims for kernel offset 0 */
    } runs[PACK_MAX_NR];
    int n_runs = 0;
    int64_t o[IG_MAX_SP], rem = j0;
    for (int32_t i = last; i >= 0; i--) {
        o[i] = rem % gm->out[i];
        rem /= gm->out[i];
    }
    for (int64_t q = 0; q < cols;) {
        struct run *r = &runs[n_runs++];
        r->q0 = q;
        r->ow0 = o[last];
        r->len = cols - q < ow_n - o[last] ? cols - q : ow_n - o[last];
        for (int32_t i = 0; i < last; i++) r->base[i] = o[i] * gm->w.stride[i] - gm->pb[i];
        q += r->len;
        o[last] += r->len;
        if (o[last] == ow_n) {
            o[last] = 0;
            for (int32_t i = last - 1; i >= 0; i--) {
                if (++o[i] < gm->out[i]) break;
                o[i] = 0;
            }
        }
    }
    for (int64_t p = p0; p < p0 + kc; p++) {
        float *row = dst + (p - p0) * nr;
        int64_t c = p / gm->kprod, kidx = p % gm->kprod, kk[IG_MAX_SP];
        for (int32_t i = last; i >= 0; i--) {
            kk[i] = kidx % gm->w.kernel[i];
            kidx /= gm->w.kernel[i];
        }
        const float *xc = cp->x + c * gm->in_sp;
        /* along the last dim, iw = ow * sw + off is inside the input for ow in [lo, hi) */
        int64_t off = kk[last] * gm->w.dil[last] - gm->pb[last];
        int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
        int64_t hi = iw_n - 1 - off < 0 ? 0 : (iw_n - 1 - off) / sw + 1;
        for (int k = 0; k < n_runs; k++) {
            const struct run *r = &runs[k];
            float *d = row + r->q0;
            int64_t src = 0;
            bool inside = true;
            for (int32_t i = 0; i < last; i++) {
                int64_t ii = r->base[i] + kk[i] * gm->w.dil[i];
                if (ii < 0 || ii >= gm->in[i]) {
                    inside = false;
                    break;
                }
                src = src * gm->in[i] + ii;
            }
            int64_t a = r->ow0, b = r->ow0 + r->len; /* the run's output range along the last dim */
            /* the valid part [va, vb) of [a, b), empty (va == vb) when no tap of this run lands inside */
            int64_t va = inside ? (lo > a ? lo : a) : b, vb = inside ? (hi < b ? hi : b) : b;
            if (va > b) va = b;
            if (vb < va) vb = va;
            const float *xr = xc + src * iw_n; /* xr[ow * sw + off] */
            for (int64_t ow = a; ow < va; ow++) d[ow - a] = 0;
            if (sw == 1) {
                if (vb > va) memcpy(d + (va - a), xr + va + off, sizeof(float) * (size_t)(vb - va));
            } else {
                for (int64_t ow = va; ow < vb; ow++) d[ow - a] = xr[ow * sw + off];
            }
            for (int64_t ow = vb; ow < b; ow++) d[ow - a] = 0;
        }
        for (int64_t q = cols; q < nr; q++) row[q] = 0;
    }
}

/* Depthwise (one input channel per group), 1-D or 2-D: planes [pb, pe) of the output, direct loops. */
typedef struct depthwise_job {
    const geom *gm;
    const float *x, *w, *b;
    float *y;
} depthwise_job;

/*
 * Depthwise planes are first copied into a zero-padded buffer split into stride phases, so every tap
 * of every output is a plain contiguous load: row ih, phase r holds padded positions r, r + sw, ...
 * of input row ih (padded position u is input column u - pad_left). Output ow's tap kw then reads
 * phase (kw * dw) % sw at index ow + (kw * dw) / sw, and DW_VEC outputs accumulate in one vector
 * register through all the taps. Planes whose buffer would exceed DW_PLANE_MAX floats take a simple
 * row-by-row loop instead.
 */
#define DW_PLANE_MAX 16384
#define DW_VEC       16
#define DW_MAX_KW    64

/* Compiled for AVX-512 and AVX2 as well as the baseline, picked at load time (the rest of the
 * library is built for the baseline ISA). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define IG_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default"), optimize("fp-contract=fast")))
#else
#define IG_CLONES
#endif

IG_CLONES static void depthwise_range(void *arg, int64_t pb_, int64_t pe_)
{
    typedef float vec __attribute__((vector_size(DW_VEC * 4)));
    typedef float vecu __attribute__((vector_size(DW_VEC * 4), aligned(4), may_alias));
    const depthwise_job *jb = arg;
    const geom *gm = jb->gm;
    bool two = gm->nsp == 2;
    int64_t ih_n = two ? gm->in[0] : 1, iw_n = gm->in[gm->nsp - 1];
    int64_t oh_n = two ? gm->out[0] : 1, ow_n = gm->out[gm->nsp - 1];
    int64_t kh_n = two ? gm->w.kernel[0] : 1, kw_n = gm->w.kernel[gm->nsp - 1];
    int64_t sh = two ? gm->w.stride[0] : 1, sw = gm->w.stride[gm->nsp - 1];
    int64_t dh = two ? gm->w.dil[0] : 1, dw = gm->w.dil[gm->nsp - 1];
    int64_t ph = two ? gm->pb[0] : 0, pw = gm->pb[gm->nsp - 1];
    /* padded row length covering every lane of every vector of outputs, and floats per phase */
    int64_t ow_r = (ow_n + DW_VEC - 1) / DW_VEC * DW_VEC;
    int64_t lp = (ow_r - 1) * sw + (kw_n - 1) * dw + 1;
    int64_t plen = (lp + sw - 1) / sw;
    bool padded = ih_n * sw * plen <= DW_PLANE_MAX && kw_n <= DW_MAX_KW;
    float buf[DW_PLANE_MAX];
    int64_t koff[DW_MAX_KW]; /* where tap kw starts within a row's phases */
    for (int64_t kw = 0; padded && kw < kw_n; kw++) koff[kw] = (kw * dw) % sw * plen + (kw * dw) / sw;
    for (int64_t p = pb_; p < pe_; p++) {
        int64_t nimg = p / gm->m, mch = p % gm->m;
        int64_t gch = mch / gm->mg; /* the group = the input channel */
        const float *xp = jb->x + (nimg * gm->c + gch) * gm->in_sp;
        const float *wp = jb->w + mch * gm->kprod;
        float *yp = jb->y + (nimg * gm->m + mch) * gm->out_sp;
        float bias = jb->b ? jb->b[mch] : 0.0f;
        if (!padded) {
            for (int64_t q = 0; q < gm->out_sp; q++) yp[q] = bias;
            for (int64_t oh = 0; oh < oh_n; oh++)
                for (int64_t kh = 0; kh < kh_n; kh++) {
                    int64_t ih = oh * sh - ph + kh * dh;
                    if (ih < 0 || ih >= ih_n) continue;
                    const float *xr = xp + ih * iw_n;
                    for (int64_t kw = 0; kw < kw_n; kw++) {
                        float wv = wp[kh * kw_n + kw];
                        int64_t off = kw * dw - pw; /* iw = ow * sw + off */
                        int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                        int64_t hi = iw_n - 1 - off < 0 ? 0 : (iw_n - 1 - off) / sw + 1;
                        if (hi > ow_n) hi = ow_n;
                        for (int64_t ow = lo; ow < hi; ow++) yp[oh * ow_n + ow] += wv * xr[ow * sw + off];
                    }
                }
            continue;
        }
        /* a plane shared by consecutive output channels (channel multiplier) is copied once */
        if (p == pb_ || (p - 1) / gm->m != nimg || (p - 1) % gm->m / gm->mg != gch)
            for (int64_t ih = 0; ih < ih_n; ih++) {
                const float *xr = xp + ih * iw_n;
                if (sw == 2) {
                    /* input column iw lands at padded u = iw + pw: phase u & 1, index u >> 1; even and
                     * odd columns go to the two phases, a deinterleave the vectoriser handles */
                    float *ph0 = buf + ih * 2 * plen, *ph1 = ph0 + plen;
                    for (int64_t i = 0; i < 2 * plen; i++) ph0[i] = 0.0f;
                    int64_t e0 = (pw & 1) ? (pw - 1) / 2 : pw / 2, o0 = (pw & 1) ? (pw + 1) / 2 : pw / 2;
                    float *ev = ((pw & 1) ? ph1 : ph0) + e0; /* where xr[0], xr[2], ... go */
                    float *od = ((pw & 1) ? ph0 : ph1) + o0; /* where xr[1], xr[3], ... go */
                    /* columns past the phase rows are never read by any tap: drop them */
                    int64_t n_ev = (iw_n + 1) / 2, n_od = iw_n / 2;
                    if (n_ev > plen - e0) n_ev = plen - e0 > 0 ? plen - e0 : 0;
                    if (n_od > plen - o0) n_od = plen - o0 > 0 ? plen - o0 : 0;
                    int64_t both = n_ev < n_od ? n_ev : n_od, j = 0;
                    for (; j < both; j++) {
                        ev[j] = xr[2 * j];
                        od[j] = xr[2 * j + 1];
                    }
                    for (int64_t q = j; q < n_ev; q++) ev[q] = xr[2 * q];
                    for (int64_t q = j; q < n_od; q++) od[q] = xr[2 * q + 1];
                    continue;
                }
                for (int64_t r = 0; r < sw; r++) {
                    /* dst[i] = xr[i * sw + r - pw] for i in [lo, hi), zeros around */
                    float *dst = buf + (ih * sw + r) * plen;
                    int64_t off = r - pw;
                    int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                    int64_t hi = iw_n - 1 - off < 0 ? 0 : (iw_n - 1 - off) / sw + 1;
                    if (hi > plen) hi = plen;
                    if (lo > hi) lo = hi;
                    for (int64_t i = 0; i < lo; i++) dst[i] = 0.0f;
                    if (sw == 1) {
                        if (hi > lo) memcpy(dst + lo, xr + lo + off, sizeof(float) * (size_t)(hi - lo));
                    } else {
                        const float *src = xr + lo * sw + off;
                        for (int64_t i = 0; i < hi - lo; i++) dst[lo + i] = src[i * sw];
                    }
                    for (int64_t i = hi; i < plen; i++) dst[i] = 0.0f;
                }
            }
        for (int64_t oh = 0; oh < oh_n; oh++) {
            float *yr = yp + oh * ow_n;
            for (int64_t ow0 = 0; ow0 < ow_n; ow0 += DW_VEC) {
                vec acc = (vec){0} + bias;
                for (int64_t kh = 0; kh < kh_n; kh++) {
                    int64_t ih = oh * sh - ph + kh * dh;
                    if (ih < 0 || ih >= ih_n) continue;
                    const float *row = buf + ih * sw * plen + ow0;
                    const float *wk = wp + kh * kw_n;
                    for (int64_t kw = 0; kw < kw_n; kw++) acc += *(const vecu *)(row + koff[kw]) * wk[kw];
                }
                int64_t cnt = ow_n - ow0 < DW_VEC ? ow_n - ow0 : DW_VEC;
                if (cnt == DW_VEC) {
                    *(vecu *)(yr + ow0) = acc;
                } else {
                    float res[DW_VEC];
                    memcpy(res, &acc, sizeof res);
                    for (int64_t t = 0; t < cnt; t++) yr[ow0 + t] = res[t];
                }
            }
        }
    }
}

/* What Conv and ConvTranspose do before their arithmetic: check weights and bias against the input,
 * carve the scratch (fp32 copies of non-fp32 tensors, the GEMM workspace), and give fp32 views. */
typedef struct conv_io {
    geom gm;
    conv_buffers bf;
    const float *x, *w, *b;
    float *y;
    void *own; /* scratch allocated here when the executor gave none: free after */
    bool empty;
} conv_io;

static ingot_status conv_begin(ig_exec *ex, ig_win_kind kind, layout_fn layout, conv_io *io)
{
    const ig_tensor *xt = ex->in[0], *wt = ex->in[1];
    const ig_tensor *bt = ex->n_in > 2 ? ex->in[2] : NULL;
    ig_tensor *yt = ex->out[0];
    memset(io, 0, sizeof *io);
    if (wt->rank != xt->rank)
        return node_fail(ex->err, ex->node, INGOT_ERR_MODEL_SHAPE, "weight rank %d differs from input rank %d",
                         (int)wt->rank, (int)xt->rank);
    ingot_status st = make_geom(ex->err, ex->node, kind, xt->rank, xt->dims, wt->dims, &io->gm);
    if (st != INGOT_OK) return st;
    if (bt && bt->numel != io->gm.m)
        return node_fail(ex->err, ex->node, INGOT_ERR_MODEL_SHAPE,
                         "bias has %" PRId64 " values for %" PRId64 " output channels", bt->numel, io->gm.m);
    if (yt->numel == 0) {
        io->empty = true;
        return INGOT_OK;
    }
    carver cv = {0};
    layout(&io->gm, xt->dtype, bt != NULL, &cv, &io->bf);
    char *base = NULL;
    if ((st = get_scratch(ex, cv.off, &base, &io->own)) != INGOT_OK) return st;
    cv = (carver){base, 0};
    layout(&io->gm, xt->dtype, bt != NULL, &cv, &io->bf);
    if (xt->dtype == INGOT_DTYPE_FLOAT) {
        io->x = xt->data;
        io->w = wt->data;
        io->b = bt ? bt->data : NULL;
        io->y = yt->data;
    } else {
        to_f32(xt, io->bf.x);
        to_f32(wt, io->bf.w);
        if (bt) to_f32(bt, io->bf.b);
        io->x = io->bf.x;
        io->w = io->bf.w;
        io->b = bt ? io->bf.b : NULL;
        io->y = io->bf.y;
    }
    return INGOT_OK;
}

ingot_status ig__conv_cpu_run(ig_exec *ex, ig_conv_epilogue epi, void *epi_ctx)
{
    ig_tensor *yt = ex->out[0];
    conv_io io;
    ingot_status st = conv_begin(ex, IG_WIN_CONV, conv_layout, &io);
    if (st != INGOT_OK || io.empty) return st;
    const geom gm = io.gm;
    const conv_buffers bf = io.bf;
    const float *x = io.x, *w = io.w, *b = io.b;
    float *y = io.y;
    void *own = io.own;

    conv_path path = conv_choose(&gm);
    if (path == PATH_DEPTHWISE) {
        depthwise_job jb = {&gm, x, w, b, y};
        int64_t grain = 1 + (1 << 15) / (gm.out_sp * gm.kprod + 1);
        ig__parallel_for(ex->pool, gm.n * gm.m, grain, depthwise_range, &jb);
    } else {
        int64_t kdim = gm.cg * gm.kprod;
        for (int64_t ni = 0; ni < gm.n; ni++)
            for (int64_t gi = 0; gi < gm.w.group; gi++) {
                const float *xg = x + (ni * gm.c + gi * gm.cg) * gm.in_sp;
                const float *wg = w + gi * gm.mg * kdim;
                float *yg = y + (ni * gm.m + gi * gm.mg) * gm.out_sp;
                conv_pack_ctx pc = {&gm, xg};
                ig__sgemm_pack_b(ex->pool, false, gm.mg, gm.out_sp, kdim, 1.0f, wg, kdim, conv_pack_b, &pc, 0.0f, yg,
                                 gm.out_sp, b ? b + gi * gm.mg : NULL, bf.ws, bf.ws_bytes);
            }
    }
    if (epi) epi(epi_ctx, y);
    if (ex->in[0]->dtype != INGOT_DTYPE_FLOAT) from_f32(y, yt);
    if (own) ig__free_aligned(own);
    return INGOT_OK;
}

static ingot_status conv_cpu(ig_exec *ex) { return ig__conv_cpu_run(ex, NULL, NULL); }

static double conv_flops(const ig_graph *g, const ig_node *n)
{
    geom gm;
    if (!graph_geom(g, n, IG_WIN_CONV, &gm)) return 0;
    double outs = (double)gm.n * (double)gm.m * (double)gm.out_sp;
    double f = 2.0 * outs * (double)gm.cg * (double)gm.kprod;
    if (node_has_input(n, 2)) f += outs;
    return f;
}

/* ---- ConvTranspose ------------------------------------------------------------------------------ */

static void convt_layout(const geom *gm, ingot_dtype dt, bool has_bias, carver *cv, conv_buffers *bf)
{
    carve_f32_copies(gm, dt, has_bias, cv, bf);
    bf->col = carve(cv, gm->mg * gm->kprod * gm->in_sp);
    bf->ws_bytes = ig__sgemm_ws_bytes(gm->mg * gm->kprod, gm->in_sp, gm->cg);
    bf->ws = carve(cv, (int64_t)(bf->ws_bytes / sizeof(float)) + 1);
}

static size_t conv_transpose_scratch(const ig_graph *g, const ig_node *n)
{
    return layout_scratch(g, n, IG_WIN_CONVT, convt_layout);
}

/* col2im for output channels [mb, me) of one image and group: y[o] += col[(m * kprod + kidx) * in_sp + i]
 * where o = i * s - pb + kidx * d along every spatial dim. */
typedef struct col2im_job {
    const geom *gm;
    const float *col;
    float *y; /* [mg, out_sp] */
} col2im_job;

static void col2im_range(void *arg, int64_t mb, int64_t me)
{
    const col2im_job *jb = arg;
    const geom *gm = jb->gm;
    const int32_t nsp = gm->nsp, last = nsp - 1;
    const int64_t iw_n = gm->in[last], ow_n = gm->out[last], sw = gm->w.stride[last];
    for (int64_t mch = mb; mch < me; mch++) {
        float *yc = jb->y + mch * gm->out_sp;
        for (int64_t kidx0 = 0; kidx0 < gm->kprod; kidx0++) {
            int64_t kk[IG_MAX_SP], kidx = kidx0;
            for (int32_t i = nsp - 1; i >= 0; i--) {
                kk[i] = kidx % gm->w.kernel[i];
                kidx /= gm->w.kernel[i];
            }
            const float *src = jb->col + (mch * gm->kprod + kidx0) * gm->in_sp;
            int64_t off = kk[last] * gm->w.dil[last] - gm->pb[last]; /* ow = iw * sw + off */
            int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
            int64_t hi = ow_n - 1 - off < 0 ? 0 : (ow_n - 1 - off) / sw + 1;
            if (hi > iw_n) hi = iw_n;
            int64_t it[IG_MAX_SP] = {0};
            int64_t rows = gm->in_sp / iw_n;
            for (int64_t row = 0; row < rows; row++) {
                int64_t dst = 0;
                bool inside = true;
                for (int32_t i = 0; i < last; i++) {
                    int64_t oi = it[i] * gm->w.stride[i] - gm->pb[i] + kk[i] * gm->w.dil[i];
                    if (oi < 0 || oi >= gm->out[i]) {
                        inside = false;
                        break;
                    }
                    dst = dst * gm->out[i] + oi;
                }
                if (inside) {
                    float *yr = yc + dst * ow_n; /* yr[q * sw + off] for q in [lo, hi) */
                    const float *sr = src + row * iw_n;
                    for (int64_t q = lo; q < hi; q++) yr[q * sw + off] += sr[q];
                }
                for (int32_t i = last - 1; i >= 0; i--) {
                    if (++it[i] < gm->in[i]) break;
                    it[i] = 0;
                }
            }
        }
    }
}

static ingot_status conv_transpose_cpu(ig_exec *ex)
{
    ig_tensor *yt = ex->out[0];
    conv_io io;
    ingot_status st = conv_begin(ex, IG_WIN_CONVT, convt_layout, &io);
    if (st != INGOT_OK || io.empty) return st;
    const geom gm = io.gm;
    const conv_buffers bf = io.bf;
    const float *x = io.x, *w = io.w, *b = io.b;
    float *y = io.y;
    void *own = io.own;
    int64_t rows = gm.mg * gm.kprod;
    for (int64_t ni = 0; ni < gm.n; ni++)
        for (int64_t gi = 0; gi < gm.w.group; gi++) {
            const float *xg = x + (ni * gm.c + gi * gm.cg) * gm.in_sp;
            const float *wg = w + gi * gm.cg * rows; /* [cg, mg * kprod] */
            float *yg = y + (ni * gm.m + gi * gm.mg) * gm.out_sp;
            for (int64_t mi = 0; mi < gm.mg; mi++) {
                float bv = b ? b[gi * gm.mg + mi] : 0.0f;
                float *row = yg + mi * gm.out_sp;
                for (int64_t q = 0; q < gm.out_sp; q++) row[q] = bv;
            }
            ig__sgemm_ws(ex->pool, true, false, rows, gm.in_sp, gm.cg, 1.0f, wg, rows, xg, gm.in_sp, 0.0f, bf.col,
                         gm.in_sp, bf.ws, bf.ws_bytes);
            col2im_job jb = {&gm, bf.col, yg};
            ig__parallel_for(ex->pool, gm.mg, 1 + (1 << 14) / (gm.kprod * gm.in_sp + 1), col2im_range, &jb);
        }
    if (ex->in[0]->dtype != INGOT_DTYPE_FLOAT) from_f32(y, yt);
    if (own) ig__free_aligned(own);
    return INGOT_OK;
}

static double conv_transpose_flops(const ig_graph *g, const ig_node *n)
{
    geom gm;
    if (!graph_geom(g, n, IG_WIN_CONVT, &gm)) return 0;
    double f = 2.0 * (double)gm.n * (double)gm.c * (double)gm.in_sp * (double)gm.mg * (double)gm.kprod;
    if (node_has_input(n, 2)) f += (double)gm.n * (double)gm.m * (double)gm.out_sp;
    return f;
}

/* ---- MaxPool, AveragePool ----------------------------------------------------------------------- */

typedef struct pool_job {
    const geom *gm;
    const float *x;
    float *y;
    int64_t *idx; /* MaxPool Indices, or NULL */
    bool is_max;
} pool_job;

/* Along one spatial dim: the taps [*t0, *t1) of the window starting at `start` that fall inside the
 * input, and how many fall inside the padded input (count_include_pad's divisor). */
int64_t ig__window_taps(int64_t start, int64_t k, int64_t d, int64_t in, int64_t pad_end, int64_t *t0, int64_t *t1)
{
    int64_t a = start >= 0 ? 0 : (-start + d - 1) / d;
    int64_t b = in - 1 - start < 0 ? 0 : (in - 1 - start) / d + 1;
    int64_t pb = in + pad_end - 1 - start < 0 ? 0 : (in + pad_end - 1 - start) / d + 1;
    if (b > k) b = k;
    if (pb > k) pb = k;
    if (a > b) a = b;
    *t0 = a;
    *t1 = b;
    return pb;
}

/* 1-D and 2-D pools (1-D as height 1): planes [pb, pe), direct loops. */
static void pool2d_range(void *arg, int64_t pb_, int64_t pe_)
{
    const pool_job *jb = arg;
    const geom *gm = jb->gm;
    const ig_window *w = &gm->w;
    bool two = gm->nsp == 2;
    int64_t ih_n = two ? gm->in[0] : 1, iw_n = gm->in[gm->nsp - 1];
    int64_t oh_n = two ? gm->out[0] : 1, ow_n = gm->out[gm->nsp - 1];
    int64_t kh = two ? w->kernel[0] : 1, kw = w->kernel[gm->nsp - 1];
    int64_t sh = two ? w->stride[0] : 1, sw = w->stride[gm->nsp - 1];
    int64_t dh = two ? w->dil[0] : 1, dw = w->dil[gm->nsp - 1];
    int64_t ph = two ? gm->pb[0] : 0, pw = gm->pb[gm->nsp - 1];
    int64_t peh = two ? gm->pe[0] : 0, pew = gm->pe[gm->nsp - 1];
    for (int64_t p = pb_; p < pe_; p++) {
        const float *xp = jb->x + p * gm->in_sp;
        float *yp = jb->y + p * gm->out_sp;
        int64_t *ip = jb->idx ? jb->idx + p * gm->out_sp : NULL;
        for (int64_t oh = 0; oh < oh_n; oh++) {
            int64_t hs = oh * sh - ph, h0, h1;
            int64_t hp = ig__window_taps(hs, kh, dh, ih_n, peh, &h0, &h1);
            for (int64_t ow = 0; ow < ow_n; ow++) {
                int64_t ws = ow * sw - pw, w0, w1;
                int64_t wp = ig__window_taps(ws, kw, dw, iw_n, pew, &w0, &w1);
                int64_t q = oh * ow_n + ow;
                if (jb->is_max) {
                    float m = -FLT_MAX;
                    int64_t best = -1;
                    for (int64_t th = h0; th < h1; th++) {
                        const float *row = xp + (hs + th * dh) * iw_n + ws;
                        for (int64_t tw = w0; tw < w1; tw++) {
                            float v = row[tw * dw];
                            if (v > m || best < 0) {
                                m = v;
                                best = (hs + th * dh) * iw_n + ws + tw * dw;
                            }
                        }
                    }
                    yp[q] = m;
                    if (ip) {
                        int64_t flat = best < 0 ? 0 : best;
                        if (w->storage_order == 1 && two) flat = (flat % iw_n) * ih_n + flat / iw_n;
                        ip[q] = p * gm->in_sp + flat;
                    }
                } else {
                    float acc = 0;
                    for (int64_t th = h0; th < h1; th++) {
                        const float *row = xp + (hs + th * dh) * iw_n + ws;
                        for (int64_t tw = w0; tw < w1; tw++) acc += row[tw * dw];
                    }
                    int64_t div = w->count_include_pad ? hp * wp : (h1 - h0) * (w1 - w0);
                    yp[q] = div > 0 ? acc / (float)div : 0.0f;
                }
            }
        }
    }
}

/* Planes [pb, pe) (image x channel). Each output position visits its window dim by dim: along each
 * dim, the taps inside the input, and (for count_include_pad) how many fall inside the padded input. */
static void pool_range(void *arg, int64_t pb_, int64_t pe_)
{
    const pool_job *jb = arg;
    const geom *gm = jb->gm;
    const ig_window *w = &gm->w;
    const int32_t nsp = gm->nsp;
    int64_t istride[IG_MAX_SP], cstride[IG_MAX_SP]; /* row-major input strides; column-major (storage_order 1) */
    int64_t s = 1;
    for (int32_t i = nsp - 1; i >= 0; i--) {
        istride[i] = s;
        s *= gm->in[i];
    }
    s = 1;
    for (int32_t i = 0; i < nsp; i++) {
        cstride[i] = s;
        s *= gm->in[i];
    }
    for (int64_t p = pb_; p < pe_; p++) {
        const float *xp = jb->x + p * gm->in_sp;
        float *yp = jb->y + p * gm->out_sp;
        int64_t o[IG_MAX_SP] = {0};
        for (int64_t q = 0; q < gm->out_sp; q++) {
            /* per dim: first tap, tap count inside the input [t0, t1), padded-window count */
            int64_t start[IG_MAX_SP], t0[IG_MAX_SP], t1[IG_MAX_SP];
            double padded_count = 1;
            for (int32_t i = 0; i < nsp; i++) {
                int64_t k = w->kernel[i], d = w->dil[i];
                start[i] = o[i] * w->stride[i] - gm->pb[i];
                int64_t a = 0, b = k, pa = 0, pbk = k;
                while (a < b && start[i] + a * d < 0) a++;
                while (b > a && start[i] + (b - 1) * d >= gm->in[i]) b--;
                /* taps within the pads (not the ceil_mode overhang past them) */
                int64_t pad_end = gm->in[i] + gm->pe[i];
                while (pbk > pa && start[i] + (pbk - 1) * d >= pad_end) pbk--;
                t0[i] = a;
                t1[i] = b;
                padded_count *= (double)(pbk - pa);
            }
            float acc = jb->is_max ? -INFINITY : 0.0f;
            int64_t best = -1, count = 1;
            bool empty = false;
            for (int32_t i = 0; i < nsp; i++) {
                if (t1[i] <= t0[i]) empty = true;
                count *= t1[i] - t0[i];
            }
            if (!empty) {
                int64_t t[IG_MAX_SP];
                for (int32_t i = 0; i < nsp; i++) t[i] = t0[i];
                for (;;) {
                    int64_t off = 0;
                    for (int32_t i = 0; i < nsp; i++) off += (start[i] + t[i] * w->dil[i]) * istride[i];
                    float v = xp[off];
                    if (jb->is_max) {
                        if (v > acc || best < 0) {
                            acc = v;
                            best = off;
                        }
                    } else {
                        acc += v;
                    }
                    int32_t i = nsp - 1;
                    for (; i >= 0; i--) {
                        if (++t[i] < t1[i]) break;
                        t[i] = t0[i];
                    }
                    if (i < 0) break;
                }
            }
            if (jb->is_max) {
                yp[q] = empty ? -FLT_MAX : acc;
                if (jb->idx) {
                    int64_t flat = 0;
                    if (best >= 0) {
                        int64_t rem = best;
                        for (int32_t i = 0; i < nsp; i++) {
                            int64_t coord = rem / istride[i];
                            rem %= istride[i];
                            flat += coord * (w->storage_order == 1 ? cstride[i] : istride[i]);
                        }
                    }
                    jb->idx[p * gm->out_sp + q] = p * gm->in_sp + flat;
                }
            } else {
                double div = w->count_include_pad ? padded_count : (double)count;
                yp[q] = empty || div <= 0 ? 0.0f : (float)(acc / div);
            }
            for (int32_t i = nsp - 1; i >= 0; i--) {
                if (++o[i] < gm->out[i]) break;
                o[i] = 0;
            }
        }
    }
}

static ingot_status pool_cpu(ig_exec *ex, ig_win_kind kind)
{
    const ig_tensor *xt = ex->in[0];
    ig_tensor *yt = ex->out[0];
    ig_tensor *it = kind == IG_WIN_MAXPOOL && ex->n_out > 1 ? ex->out[1] : NULL;
    geom gm;
    ingot_status st = make_geom(ex->err, ex->node, kind, xt->rank, xt->dims, NULL, &gm);
    if (st != INGOT_OK) return st;
    if (yt->numel == 0) return INGOT_OK;
    bool f32 = xt->dtype == INGOT_DTYPE_FLOAT;
    carver cv = {0};
    if (!f32) {
        carve(&cv, xt->numel);
        carve(&cv, yt->numel);
    }
    char *base = NULL;
    void *own;
    if ((st = get_scratch(ex, cv.off, &base, &own)) != INGOT_OK) return st;
    cv = (carver){base, 0};
    const float *x = xt->data;
    float *y = yt->data;
    if (!f32) {
        float *xb = carve(&cv, xt->numel);
        to_f32(xt, xb);
        x = xb;
        y = carve(&cv, yt->numel);
    }
    pool_job jb = {&gm, x, y, it ? it->data : NULL, kind == IG_WIN_MAXPOOL};
    int64_t per_plane = gm.out_sp * gm.kprod + 1;
    ig__parallel_for(ex->pool, gm.n * gm.c, 1 + (1 << 14) / per_plane, gm.nsp <= 2 ? pool2d_range : pool_range, &jb);
    if (!f32) from_f32(y, yt);
    if (own) ig__free_aligned(own);
    return INGOT_OK;
}

static ingot_status max_pool_cpu(ig_exec *ex) { return pool_cpu(ex, IG_WIN_MAXPOOL); }

/* ---- ingot.FusedConv's fused max pool (op.h), through MaxPool's window code ---------------------- */

/* The pool's window, as a MaxPool node with those attributes parses to (ig__conv_pool_of checked them). */
static void fused_pool_window(const ig_conv_pool *p, ig_window *w)
{
    memset(w, 0, sizeof *w);
    w->kind = IG_WIN_MAXPOOL;
    w->nsp = 2;
    w->group = 1;
    w->autopad = IG_PAD_NOTSET;
    w->ceil_mode = p->ceil_mode;
    for (int i = 0; i < 2; i++) {
        w->kernel[i] = p->k[i];
        w->stride[i] = p->s[i];
        w->dil[i] = 1;
        w->pad_b[i] = p->pb[i];
        w->pad_e[i] = p->pe[i];
    }
}

/* Its geometry over a conv output of dims xd. */
static bool fused_pool_geom(const ig_node *n, const ig_conv_pool *p, const int64_t *xd, geom *gm)
{
    memset(gm, 0, sizeof *gm);
    fused_pool_window(p, &gm->w);
    gm->nsp = 2;
    gm->n = xd[0];
    gm->c = gm->m = xd[1];
    gm->cg = gm->mg = 1;
    gm->in_sp = gm->out_sp = gm->kprod = 1;
    for (int i = 0; i < 2; i++) {
        gm->in[i] = xd[2 + i];
        if (ig__window_resolve(NULL, n, &gm->w, i, gm->in[i], &gm->out[i], &gm->pb[i], &gm->pe[i]) != INGOT_OK)
            return false;
        gm->in_sp *= gm->in[i];
        gm->out_sp *= gm->out[i];
        gm->kprod *= gm->w.kernel[i];
    }
    return true;
}

int64_t ig__conv_pool_size(const ig_node *n, const ig_conv_pool *p, int i, int64_t in)
{
    ig_window w;
    fused_pool_window(p, &w);
    int64_t out = 0, pb, pe;
    return ig__window_resolve(NULL, n, &w, i, in, &out, &pb, &pe) == INGOT_OK ? out : 0;
}

bool ig__conv_out_dims(const ig_graph *g, const ig_node *n, int64_t *dims)
{
    geom gm;
    if (!graph_geom(g, n, IG_WIN_CONV, &gm) || gm.nsp != 2) return false;
    const int64_t d[4] = {gm.n, gm.m, gm.out[0], gm.out[1]};
    memcpy(dims, d, sizeof d);
    return true;
}

void ig__conv_pool_f32(struct ig_pool *pool, const ig_node *n, const ig_conv_pool *p, const float *x, const int64_t *xd,
                       float *y)
{
    geom gm;
    if (!fused_pool_geom(n, p, xd, &gm)) return; /* the caller checked the output's shape against it */
    pool_job jb = {&gm, x, y, NULL, true};
    ig__parallel_for(pool, gm.n * gm.c, 1 + (1 << 14) / (gm.out_sp * gm.kprod + 1), pool2d_range, &jb);
}

static ingot_status average_pool_cpu(ig_exec *ex) { return pool_cpu(ex, IG_WIN_AVGPOOL); }

static size_t pool_scratch_common(const ig_graph *g, const ig_node *n)
{
    if (n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs < 1 || n->outputs[0] < 0) return 0;
    const ig_value *x = &g->values[n->inputs[0]], *y = &g->values[n->outputs[0]];
    if (x->dtype == INGOT_DTYPE_FLOAT) return 0;
    int64_t nx, ny;
    if (!ig__shape_numel(&x->shape, &nx) || !ig__shape_numel(&y->shape, &ny)) return 0;
    carver cv = {0};
    carve(&cv, nx);
    carve(&cv, ny);
    return cv.off;
}

static double pool_flops_kind(const ig_graph *g, const ig_node *n, ig_win_kind kind)
{
    geom gm;
    if (!graph_geom(g, n, kind, &gm)) return 0;
    return (double)gm.n * (double)gm.c * (double)gm.out_sp * (double)gm.kprod;
}

static double max_pool_flops(const ig_graph *g, const ig_node *n) { return pool_flops_kind(g, n, IG_WIN_MAXPOOL); }
static double average_pool_flops(const ig_graph *g, const ig_node *n) { return pool_flops_kind(g, n, IG_WIN_AVGPOOL); }

/* ---- GlobalAveragePool, GlobalMaxPool ----------------------------------------------------------- */

typedef struct global_job {
    const ig_tensor *x;
    ig_tensor *y;
    int64_t plane;
    bool is_max;
} global_job;

static float load_f(const ig_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case INGOT_DTYPE_FLOAT: return ((const float *)t->data)[i];
    case INGOT_DTYPE_FLOAT16: return ig__f16_to_f32(((const uint16_t *)t->data)[i]);
    case INGOT_DTYPE_BFLOAT16: return ig__bf16_to_f32(((const uint16_t *)t->data)[i]);
    case INGOT_DTYPE_DOUBLE: return (float)((const double *)t->data)[i];
    default: return 0.0f;
    }
}

static void store_f(ig_tensor *t, int64_t i, double v)
{
    switch (t->dtype) {
    case INGOT_DTYPE_FLOAT: ((float *)t->data)[i] = (float)v; break;
    case INGOT_DTYPE_FLOAT16: ((uint16_t *)t->data)[i] = ig__f32_to_f16((float)v); break;
    case INGOT_DTYPE_BFLOAT16: ((uint16_t *)t->data)[i] = ig__f32_to_bf16((float)v); break;
    case INGOT_DTYPE_DOUBLE: ((double *)t->data)[i] = v; break;
    default: break;
    }
}

static void global_range(void *arg, int64_t pb_, int64_t pe_)
{
    const global_job *jb = arg;
    for (int64_t p = pb_; p < pe_; p++) {
        int64_t base = p * jb->plane;
        if (jb->x->dtype == INGOT_DTYPE_FLOAT) {
            const float *xp = (const float *)jb->x->data + base;
            if (jb->is_max) {
                float m = jb->plane > 0 ? xp[0] : -INFINITY;
                for (int64_t i = 1; i < jb->plane; i++)
                    if (xp[i] > m) m = xp[i];
                store_f(jb->y, p, m);
            } else {
                /* 8 partial sums: vectorises, and loses less precision than one running sum */
                float part[8] = {0};
                int64_t i = 0;
                for (; i + 8 <= jb->plane; i += 8)
                    for (int l = 0; l < 8; l++) part[l] += xp[i + l];
                double s = 0;
                for (; i < jb->plane; i++) s += xp[i];
                for (int l = 0; l < 8; l++) s += part[l];
                store_f(jb->y, p, jb->plane > 0 ? s / (double)jb->plane : 0.0);
            }
        } else {
            double acc = jb->is_max ? -INFINITY : 0.0;
            for (int64_t i = 0; i < jb->plane; i++) {
                double v = load_f(jb->x, base + i);
                if (jb->is_max) {
                    if (v > acc || i == 0) acc = v;
                } else {
                    acc += v;
                }
            }
            store_f(jb->y, p, jb->is_max ? acc : (jb->plane > 0 ? acc / (double)jb->plane : 0.0));
        }
    }
}

static ingot_status global_pool_cpu(ig_exec *ex, bool is_max)
{
    const ig_tensor *xt = ex->in[0];
    ig_tensor *yt = ex->out[0];
    if (xt->rank < 3)
        return node_fail(ex->err, ex->node, INGOT_ERR_MODEL_SHAPE, "input must have rank >= 3, got %d", (int)xt->rank);
    int64_t planes = xt->dims[0] * xt->dims[1];
    if (planes == 0) return INGOT_OK;
    global_job jb = {xt, yt, xt->numel / planes, is_max};
    ig__parallel_for(ex->pool, planes, 1 + (1 << 14) / (jb.plane + 1), global_range, &jb);
    return INGOT_OK;
}

static ingot_status global_average_pool_cpu(ig_exec *ex) { return global_pool_cpu(ex, false); }
static ingot_status global_max_pool_cpu(ig_exec *ex) { return global_pool_cpu(ex, true); }

static double global_pool_flops(const ig_graph *g, const ig_node *n)
{
    if (n->n_inputs < 1 || n->inputs[0] < 0) return 0;
    int64_t numel;
    if (!ig__shape_numel(&g->values[n->inputs[0]].shape, &numel)) return 0;
    return (double)numel;
}

/* ---- descriptors -------------------------------------------------------------------------------- */

const ig_op_def ig__op_conv = {
    .name = "Conv",
    .since = 1,
    .min_in = 2,
    .max_in = 3,
    .min_out = 1,
    .max_out = 1,
    .infer = conv_infer,
    .cpu = conv_cpu,
    .cpu_scratch = conv_scratch,
    .flops = conv_flops,
};
const ig_op_def ig__op_conv_transpose = {
    .name = "ConvTranspose",
    .since = 1,
    .min_in = 2,
    .max_in = 3,
    .min_out = 1,
    .max_out = 1,
    .infer = conv_transpose_infer,
    .cpu = conv_transpose_cpu,
    .cpu_scratch = conv_transpose_scratch,
    .flops = conv_transpose_flops,
};
const ig_op_def ig__op_max_pool = {
    .name = "MaxPool",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 2,
    .infer = max_pool_infer,
    .cpu = max_pool_cpu,
    .cpu_scratch = pool_scratch_common,
    .flops = max_pool_flops,
};
const ig_op_def ig__op_average_pool = {
    .name = "AveragePool",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = average_pool_infer,
    .cpu = average_pool_cpu,
    .cpu_scratch = pool_scratch_common,
    .flops = average_pool_flops,
};
const ig_op_def ig__op_global_average_pool = {
    .name = "GlobalAveragePool",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = global_pool_infer,
    .cpu = global_average_pool_cpu,
    .flops = global_pool_flops,
};
const ig_op_def ig__op_global_max_pool = {
    .name = "GlobalMaxPool",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = global_pool_infer,
    .cpu = global_max_pool_cpu,
    .flops = global_pool_flops,
};
