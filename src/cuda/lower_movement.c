/*
 * lower_movement.c -- ops that move data into a new tensor: Concat (one strided copy per input into its
 * slice of the output), Pad (a fill, then the input copied into the interior), Gather (a view for a
 * constant scalar index, else the gather kernel), ConstantOfShape (a fill).
 */
#include "lower_internal.h"

#include <inttypes.h>

ingot_status ig__lw_concat(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t yv = n->outputs[0];
    int64_t od[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, yv, od);
    int32_t ax = ig__lw_norm_axis(ig__attr_int(n, "axis", 0), orank);
    int32_t yt = ig__lw_dense(L, ig__lw_dev_dtype(L->p, ig__lw_val(L, yv)->dtype), orank, od, false);
    if (yt < 0) return ig__lw_oom(L);
    ig_cu_tensor y = *ig__lw_T(L, yt);
    int64_t off = 0;
    for (int32_t i = 0; i < n->n_inputs; i++) {
        int32_t u = n->inputs[i];
        if (u < 0) continue;
        int32_t ut = ig__lw_get(L, u);
        if (ut < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input %d has no device tensor", (int)i);
        int64_t len = ig__lw_T(L, ut)->rank == orank ? ig__lw_T(L, ut)->dims[ax] : 0;
        if (len == 0) continue;
        ig_cu_tensor part = y;
        part.dims[ax] = len;
        part.offset += off * y.strides[ax];
        off += len;
        int32_t pt = ig__lw_tensor(L, part.buf, part.dtype, part.rank, part.dims, part.strides, part.offset);
        if (pt < 0) return ig__lw_oom(L);
        ingot_status st = ig__lw_copy(L, id, NULL, ut, pt, 0);
        if (st != INGOT_OK) return st;
    }
    L->p->val_tensor[yv] = yt;
    return INGOT_OK;
}

/* The bit pattern of v as an element of dtype dt. */
static uint64_t fill_bits(ingot_dtype dt, double v)
{
    uint64_t bits = 0;
    switch (dt) {
    case INGOT_DTYPE_FLOAT: {
        float f = (float)v;
        memcpy(&bits, &f, 4);
        break;
    }
    case INGOT_DTYPE_FLOAT16: bits = ig__f32_to_f16((float)v); break;
    case INGOT_DTYPE_BFLOAT16: bits = ig__f32_to_bf16((float)v); break;
    case INGOT_DTYPE_DOUBLE: memcpy(&bits, &v, 8); break;
    case INGOT_DTYPE_BOOL: bits = v != 0; break;
    default: {
        int64_t i = (int64_t)v;
        memcpy(&bits, &i, 8);
        break;
    }
    }
    return bits;
}

static bool pad_const_only(const ig_node *n) { return !strcmp(ig__attr_str(n, "mode", "constant"), "constant"); }

const char *ig__lw_supports_pad(const ig_graph *g, const ig_node *n)
{
    (void)g;
    return pad_const_only(n) ? NULL : "only mode 'constant' is supported";
}

ingot_status ig__lw_pad(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    if (!pad_const_only(n))
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "mode '%s' (only 'constant')",
                           ig__attr_str(n, "mode", "constant"));
    int32_t xt = ig__lw_get(L, n->inputs[0]);
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    ig_cu_tensor x = *ig__lw_T(L, xt);
    int64_t pads[2 * IG_MAX_RANK], axes[IG_MAX_RANK];
    int32_t np = 0, nax = 0;
    double value = 0;
    if (n->opset < 11) {
        const int64_t *a = NULL;
        int64_t na = 0;
        if (ig__attr_ints(n, "pads", &a, &na))
            for (int64_t i = 0; i < na && i < 2 * IG_MAX_RANK; i++) pads[np++] = a[i];
        value = ig__attr_float(n, "value", 0.f);
    } else {
        if (!ig__lw_const_ints(L, ig__lw_in(L, id, 1), pads, 2 * IG_MAX_RANK, &np))
            return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "pads must be a constant");
        if (ig__lw_in(L, id, 2) >= 0 && !ig__lw_const_scalar(L, ig__lw_in(L, id, 2), &value))
            return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "constant_value must be a constant");
        if (ig__lw_in(L, id, 3) >= 0 && !ig__lw_const_ints(L, ig__lw_in(L, id, 3), axes, IG_MAX_RANK, &nax))
            return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "axes must be a constant");
    }
    int64_t pb[IG_MAX_RANK] = {0};
    if (nax == 0) {
        for (int32_t k = 0; k < x.rank && k < np / 2; k++) pb[k] = pads[k];
    } else {
        for (int32_t i = 0; i < nax; i++) pb[ig__lw_norm_axis(axes[i], x.rank)] = pads[i];
    }
    for (int32_t k = 0; k < np; k++)
        if (pads[k] < 0) return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "negative pads are not supported");
    int64_t od[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, n->outputs[0], od);
    int32_t yt = ig__lw_dense(L, x.dtype, orank, od, ig__lw_nhwc(&x) && !ig__cu_tensor_contig(&x));
    ig_cu_step *fs = yt >= 0 ? ig__lw_step(L, IG_ST_FILL, id, "pad fill") : NULL;
    if (!fs) return ig__lw_oom(L);
    fs->u.fill.y = yt;
    fs->u.fill.bits = fill_bits(x.dtype, value);
    ig_cu_tensor in = *ig__lw_T(L, yt);
    for (int32_t k = 0; k < orank; k++) {
        in.offset += pb[k] * in.strides[k];
        in.dims[k] = x.dims[k];
    }
    int32_t inner = ig__lw_tensor(L, in.buf, in.dtype, in.rank, in.dims, in.strides, in.offset);
    if (inner < 0) return ig__lw_oom(L);
    ingot_status st = ig__lw_copy(L, id, NULL, xt, inner, 0);
    if (st != INGOT_OK) return st;
    L->p->val_tensor[n->outputs[0]] = yt;
    return INGOT_OK;
}

ingot_status ig__lw_constant_of_shape(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t yv = n->outputs[0];
    int64_t od[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, yv, od);
    ingot_dtype dt = ig__lw_dev_dtype(L->p, ig__lw_val(L, yv)->dtype);
    int32_t yt = ig__lw_dense(L, dt, orank, od, false);
    ig_cu_step *s = yt >= 0 ? ig__lw_step(L, IG_ST_FILL, id, NULL) : NULL;
    if (!s) return ig__lw_oom(L);
    const ig_attr *va = ig__node_attr(n, "value");
    double v = 0;
    if (va && va->type == IG_ATTR_TENSOR && va->t && va->t->n_bytes) v = ig__elem_f64(va->t->dtype, va->t->data, 0);
    s->u.fill.y = yt;
    s->u.fill.bits = fill_bits(dt, v);
    L->p->val_tensor[yv] = yt;
    return INGOT_OK;
}

ingot_status ig__lw_gather(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t xt = ig__lw_get(L, n->inputs[0]), iv = n->inputs[1];
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "data has no device tensor");
    ig_cu_tensor x = *ig__lw_T(L, xt);
    int32_t ax = ig__lw_norm_axis(ig__attr_int(n, "axis", 0), x.rank);
    double k;
    if (ig__lw_val(L, iv)->shape.rank == 0 && ig__lw_const_scalar(L, iv, &k)) { /* a constant scalar index: a view */
        int64_t i = (int64_t)k;
        if (i < 0) i += x.dims[ax];
        if (i < 0 || i >= x.dims[ax])
            return ig__lw_fail(L, id, INGOT_ERR_MODEL_INVALID, "index %" PRId64 " out of range [0, %" PRId64 ")", i,
                               x.dims[ax]);
        ig_cu_tensor v = x;
        v.offset += i * x.strides[ax];
        for (int32_t q = ax; q < x.rank - 1; q++) {
            v.dims[q] = x.dims[q + 1];
            v.strides[q] = x.strides[q + 1];
        }
        v.rank--;
        int32_t t = ig__lw_tensor(L, v.buf, v.dtype, v.rank, v.dims, v.strides, v.offset);
        if (t < 0) return ig__lw_oom(L);
        L->p->val_tensor[n->outputs[0]] = t;
        return INGOT_OK;
    }
    xt = ig__lw_contig(L, id, xt);
    int32_t it = ig__lw_contig(L, id, ig__lw_get(L, iv));
    if (xt < 0 || it < 0) return ig__lw_status(L);
    if (ig__lw_T(L, it)->dtype != INGOT_DTYPE_INT64 && ig__lw_T(L, it)->dtype != INGOT_DTYPE_INT32)
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "indices of type %s",
                           ingot_dtype_name(ig__lw_T(L, it)->dtype));
    x = *ig__lw_T(L, xt);
    int64_t od[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, n->outputs[0], od);
    int32_t yt = ig__lw_dense(L, x.dtype, orank, od, false);
    ig_cu_step *s = yt >= 0 ? ig__lw_step(L, IG_ST_GATHER, id, NULL) : NULL;
    if (!s) return ig__lw_oom(L);
    ig_gather_args *a = &s->u.gather.args;
    a->idx_dtype = ig__lw_T(L, it)->dtype;
    a->esize = (int32_t)ingot_dtype_size(x.dtype);
    a->outer = 1;
    for (int32_t q = 0; q < ax; q++) a->outer *= x.dims[q];
    a->axis_dim = x.dims[ax];
    a->inner = 1;
    for (int32_t q = ax + 1; q < x.rank; q++) a->inner *= x.dims[q];
    a->n_idx = (int64_t)ig__cu_tensor_numel(ig__lw_T(L, it));
    s->u.gather.x = xt;
    s->u.gather.idx = it;
    s->u.gather.y = yt;
    L->p->val_tensor[n->outputs[0]] = yt;
    return INGOT_OK;
}
