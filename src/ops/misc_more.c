/*
 * misc_more.c -- data movement whose window depends on the data or on a target shape, not on a
 * stride pattern: ReverseSequence (opset 10: each batch entry's first sequence_lens[b] time steps
 * reversed) and CenterCropPad (opset 18: each dim cropped or zero-padded around its centre). Neither
 * fits movement.c's strided views; both copy rows of the innermost dims with memcpy, so one loop serves
 * every dtype.
 *
 * ReverseSequence: a length outside [0, time] is a run-time error naming the node and the element, as
 * ONNX Runtime fails it ("Invalid sequence length"); ONNX's reference would silently reverse a clipped
 * range. CenterCropPad: the output's dims come from the shape input's values (a build-time constant or
 * symbolic); the kernel derives each dim's crop or pad from the input and output dims alone.
 */
#include "op.h"
#include "ops_internal.h"

#include <inttypes.h>

/* ==== ReverseSequence ================================================================================ */

static ingot_status reverse_sequence_infer(ig_infer *cx)
{
    ingot_status st;
    /* the schema's T: every type, bfloat16 from opset 28 */
    uint32_t types = cx->node->opset >= 28 ? IG_TS_ALL : IG_TS_ALL & ~IG_T(BFLOAT16);
    if ((st = ig__check_dtype(cx, 0, types)) != INGOT_OK) return st;
    if ((st = ig__check_dtype(cx, 1, IG_T(INT64))) != INGOT_OK) return st;
    int64_t ba = ig__attr_int(cx->node, "batch_axis", 1), ta = ig__attr_int(cx->node, "time_axis", 0);
    if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
        return ig__unsupported(
            cx, "attributes batch_axis=%" PRId64 ", time_axis=%" PRId64 " must be 0 and 1, or 1 and 0", ba, ta);
    const ig_value *x = ig__in(cx, 0), *len = ig__in(cx, 1);
    if (x->shape.rank >= 0 && x->shape.rank < 2)
        return ig__fail_shape(cx, "input '%s' has rank %d; ReverseSequence needs rank >= 2", x->name,
                              (int)x->shape.rank);
    if (len->shape.rank >= 0 && len->shape.rank != 1)
        return ig__fail_shape(cx, "sequence_lens '%s' must have rank 1, got %d", len->name, (int)len->shape.rank);
    if (x->shape.rank >= 2 && len->shape.rank == 1) {
        ig_dim b = x->shape.d[ba], l = len->shape.d[0];
        if (ig__dim_known(b) && ig__dim_known(l) && b.n != l.n)
            return ig__fail_shape(
                cx, "sequence_lens '%s' has %" PRId64 " elements but the batch axis %" PRId64 " of '%s' is %" PRId64,
                len->name, l.n, ba, x->name, b.n);
    }
    return ig__set_out(cx, 0, x->dtype, &x->shape);
}

static ingot_status reverse_sequence_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0], *len = ex->in[1];
    ig_tensor *y = ex->out[0];
    int64_t ba = ig__attr_int(ex->node, "batch_axis", 1), ta = ba == 0 ? 1 : 0;
    if (x->rank < 2 || len->rank != 1 || len->dims[0] != x->dims[ba] || x->data == y->data)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "input [batch, time, ...] and sequence_lens [batch] expected");
    const int64_t *lens = len->data;
    int64_t n_batch = x->dims[ba], n_time = x->dims[ta];
    for (int64_t b = 0; b < n_batch; b++)
        if (lens[b] < 0 || lens[b] > n_time)
            return ig__exec_fail(ex, INGOT_ERR_INVALID_ARG,
                                 "sequence_lens[%" PRId64 "] = %" PRId64 " is out of range [0, %" PRId64 "]", b,
                                 lens[b], n_time);
    size_t row = (size_t)(x->numel ? x->numel / (n_batch * n_time) : 0) * ingot_dtype_size(x->dtype);
    /* element (b, t) is row b * time_stride(b) ... spelled per layout: [batch, time] or [time, batch] */
    int64_t bs = ba == 0 ? n_time : 1, ts = ba == 0 ? 1 : n_batch;
    for (int64_t b = 0; b < n_batch; b++)
        for (int64_t t = 0; t < n_time; t++) {
            int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
            memcpy((char *)y->data + (size_t)(b * bs + t * ts) * row,
                   (const char *)x->data + (size_t)(b * bs + from * ts) * row, row);
        }
    return INGOT_OK;
}

const ig_op_def ig__op_reverse_sequence = {
    .name = "ReverseSequence",
    .since = 10,
    .min_in = 2,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .infer = reverse_sequence_infer,
    .cpu = reverse_sequence_cpu,
    .flops = ig__flops_none,
};

/* ==== CenterCropPad ================================================================================== */

static ingot_status center_crop_pad_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_ALL)) != INGOT_OK) return st;
    if ((st = ig__check_dtype(cx, 1, IG_T(INT32) | IG_T(INT64))) != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0), *sh = ig__in(cx, 1);
    if (sh->shape.rank >= 0 && sh->shape.rank != 1)
        return ig__fail_shape(cx, "shape '%s' must have rank 1, got %d", sh->name, (int)sh->shape.rank);
    if (x->shape.rank < 0) {
        ig_shape s = {.rank = -1};
        return ig__set_out(cx, 0, x->dtype, &s);
    }
    int32_t rank = x->shape.rank, n_axes = rank, axes[IG_MAX_RANK];
    const int64_t *av;
    int64_t an;
    for (int32_t a = 0; a < rank; a++) axes[a] = a;
    if (ig__attr_ints(cx->node, "axes", &av, &an)) {
        if (an > rank) return ig__fail_shape(cx, "attribute axes has %" PRId64 " values for rank %d", an, (int)rank);
        n_axes = (int32_t)an;
        for (int32_t k = 0; k < n_axes; k++) {
            if ((st = ig__norm_axis(cx, av[k], rank, "attribute axes", &axes[k])) != INGOT_OK) return st;
            for (int32_t j = 0; j < k; j++)
                if (axes[j] == axes[k]) return ig__fail_shape(cx, "attribute axes names axis %d twice", (int)axes[k]);
        }
    }
    if (sh->shape.rank == 1 && ig__dim_known(sh->shape.d[0]) && sh->shape.d[0].n != n_axes)
        return ig__fail_shape(cx, "shape '%s' has %" PRId64 " values for %d axes", sh->name, sh->shape.d[0].n,
                              (int)n_axes);
    ig_shape s = x->shape;
    ig_dim vals[IG_MAX_RANK];
    int32_t nv = 0;
    bool known = ig__in_dims(cx, 1, vals, IG_MAX_RANK, &nv);
    if (known && nv != n_axes)
        return ig__fail_shape(cx, "shape '%s' has %d values for %d axes", sh->name, (int)nv, (int)n_axes);
    for (int32_t k = 0; k < n_axes; k++) {
        if (known && ig__dim_known(vals[k]) && vals[k].n < 0)
            return ig__fail_shape(cx, "shape '%s' value %d is %" PRId64 " (negative)", sh->name, (int)k, vals[k].n);
        s.d[axes[k]] = known ? vals[k] : ig__dim_fresh(cx);
    }
    return ig__set_out(cx, 0, x->dtype, &s);
}

static ingot_status center_crop_pad_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    if (x->rank != y->rank || x->data == y->data)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "output of the input's rank expected");
    size_t es = ingot_dtype_size(x->dtype);
    if (y->numel) memset(y->data, 0, (size_t)y->numel * es);
    /* per dim: the copied count, where it starts in x (a crop) and in y (a pad) */
    int64_t cnt[IG_MAX_RANK], xo[IG_MAX_RANK], yo[IG_MAX_RANK], xs[IG_MAX_RANK], ys[IG_MAX_RANK];
    int32_t r = x->rank;
    for (int32_t a = 0; a < r; a++) {
        int64_t in = x->dims[a], out = y->dims[a];
        cnt[a] = in < out ? in : out;
        xo[a] = in > out ? (in - out) / 2 : 0; /* rounded down: half a pixel left of centre */
        yo[a] = out > in ? (out - in) / 2 : 0; /* the odd pixel of padding goes right */
        if (cnt[a] == 0) return INGOT_OK;
    }
    ig__strides(x, xs);
    ig__strides(y, ys);
    if (r == 0) {
        memcpy(y->data, x->data, es);
        return INGOT_OK;
    }
    /* rows of the last dim, the outer dims counted like an odometer */
    int64_t idx[IG_MAX_RANK] = {0};
    for (;;) {
        int64_t xe = 0, ye = 0;
        for (int32_t a = 0; a < r; a++) {
            int64_t i = a == r - 1 ? 0 : idx[a];
            xe += (xo[a] + i) * xs[a];
            ye += (yo[a] + i) * ys[a];
        }
        memcpy((char *)y->data + (size_t)ye * es, (const char *)x->data + (size_t)xe * es, (size_t)cnt[r - 1] * es);
        int32_t a = r - 2;
        while (a >= 0 && ++idx[a] == cnt[a]) idx[a--] = 0;
        if (a < 0) break;
    }
    return INGOT_OK;
}

const ig_op_def ig__op_center_crop_pad = {
    .name = "CenterCropPad",
    .since = 18,
    .min_in = 2,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = 1u << 1,
    .infer = center_crop_pad_infer,
    .cpu = center_crop_pad_cpu,
    .flops = ig__flops_none,
};
