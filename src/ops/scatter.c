/*
 * scatter.c -- indexed writes and reads: ScatterND, ScatterElements (and its opset-9 name Scatter) with
 * the reductions none/add/mul/max/min, and GatherND with batch_dims.
 *
 * Kernels copy the data input into the output (nothing when the executor gave them the same buffer:
 * IG_OP_INPLACE), then apply the updates in index order, serially, so a repeated index with reduction
 * "none" takes the last update, as ONNX Runtime and the reference do. Negative indices count from the
 * end of their axis; an index out of range fails naming the node, the element and the axis. Reductions
 * compute float types in double (rounded once per update into the output's type) and integers exactly
 * in int64, wrapping like the type.
 */
#include "op.h"
#include "ops_internal.h"

#include <inttypes.h>
#include <math.h>

enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

/* The reduction attribute: add/mul since opset 16, max/min since 18; -1 for anything else. */
static int reduction_of(const ig_node *n)
{
    const char *r = ig__attr_str(n, "reduction", "none");
    if (!strcmp(r, "none")) return RED_NONE;
    if (n->opset > 0 && n->opset < 16) return -1;
    if (!strcmp(r, "add")) return RED_ADD;
    if (!strcmp(r, "mul")) return RED_MUL;
    if (n->opset > 0 && n->opset < 18) return -1;
    if (!strcmp(r, "max")) return RED_MAX;
    if (!strcmp(r, "min")) return RED_MIN;
    return -1;
}

static ingot_status check_reduction(ig_infer *cx)
{
    if (reduction_of(cx->node) < 0)
        return ig__unsupported(cx,
                               "attribute reduction='%s' is not supported in opset %d (none; add and mul from "
                               "opset 16; max and min from 18)",
                               ig__attr_str(cx->node, "reduction", "none"), (int)cx->node->opset);
    return INGOT_OK;
}

static int64_t index_at(const ig_tensor *t, int64_t k)
{
    return t->dtype == INGOT_DTYPE_INT64 ? ((const int64_t *)t->data)[k] : ((const int32_t *)t->data)[k];
}

/* out[o] = red(out[o], upd[u]), elements of dtype t. */
static void combine(ingot_dtype t, void *out, int64_t o, const void *upd, int64_t u, int red)
{
    size_t es = ingot_dtype_size(t);
    if (red == RED_NONE) {
        memcpy((char *)out + (size_t)o * es, (const char *)upd + (size_t)u * es, es);
        return;
    }
    if (ig__dtype_is_float(t)) {
        double a = ig__elem_f64(t, out, o), b = ig__elem_f64(t, upd, u), r;
        switch (red) {
        case RED_ADD: r = a + b; break;
        case RED_MUL: r = a * b; break;
        case RED_MAX: r = (a >= b || isnan(a)) ? a : b; break;
        default: r = (a <= b || isnan(a)) ? a : b; break;
        }
        ig__elem_set_f64(t, out, o, r);
        return;
    }
    int64_t a = ig__elem_i64(t, out, o), b = ig__elem_i64(t, upd, u), r;
    bool uns = t == INGOT_DTYPE_UINT64;
    switch (red) {
    case RED_ADD: r = (int64_t)((uint64_t)a + (uint64_t)b); break;
    case RED_MUL: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
    case RED_MAX: r = (uns ? (uint64_t)a >= (uint64_t)b : a >= b) ? a : b; break;
    default: r = (uns ? (uint64_t)a <= (uint64_t)b : a <= b) ? a : b; break;
    }
    ig__elem_set_i64(t, out, o, r);
}

static void copy_data(const ig_tensor *x, ig_tensor *y)
{
    if (x->data != y->data && x->numel) memcpy(y->data, x->data, (size_t)x->numel * ingot_dtype_size(x->dtype));
}

/* Index i of an axis of size dim, negative counting from the end; false when out of range. */
static bool norm_index(int64_t i, int64_t dim, int64_t *out)
{
    if (i < -dim || i >= dim) return false;
    *out = i < 0 ? i + dim : i;
    return true;
}

static ingot_status bad_index(ig_exec *ex, int in, int64_t i, int64_t elem, int axis, int64_t dim)
{
    return ig__exec_fail(ex, INGOT_ERR_INVALID_ARG,
                         "index %" PRId64 " (element %" PRId64 " of input %d '%s') is out of range for axis %d of "
                         "size %" PRId64,
                         i, elem, in, ex->g ? ex->g->values[ex->node->inputs[in]].name : "indices", axis, dim);
}

static ingot_status check_same_dtype(ig_infer *cx, int a, int b)
{
    ig_value *x = ig__in(cx, a), *y = ig__in(cx, b);
    if (x->dtype != y->dtype)
        return ig__fail_shape(cx, "input %d '%s' has dtype %s but input %d '%s' has %s", b, y->name,
                              ingot_dtype_name(y->dtype), a, x->name, ingot_dtype_name(x->dtype));
    return INGOT_OK;
}

/* ==== ScatterND ====================================================================================== */

static ingot_status scatter_nd_infer(ig_infer *cx)
{
    ingot_status st;
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    IG_TRY(st, ig__check_dtype(cx, 1, IG_T(INT64)), out);
    IG_TRY(st, check_same_dtype(cx, 0, 2), out);
    IG_TRY(st, check_reduction(cx), out);
    const ig_value *x = ig__in(cx, 0), *ix = ig__in(cx, 1), *u = ig__in(cx, 2);
    if (ix->shape.rank == 0) return ig__fail_shape(cx, "indices '%s' must have rank >= 1", ix->name);
    if (x->shape.rank >= 0 && ix->shape.rank > 0 && ig__dim_known(ix->shape.d[ix->shape.rank - 1])) {
        int64_t k = ix->shape.d[ix->shape.rank - 1].n;
        if (k > x->shape.rank)
            return ig__fail_shape(cx, "indices '%s' index %" PRId64 " dims, but data '%s' has rank %d", ix->name, k,
                                  x->name, (int)x->shape.rank);
        int32_t want = ix->shape.rank - 1 + x->shape.rank - (int32_t)k;
        if (u->shape.rank >= 0 && u->shape.rank != want)
            return ig__fail_shape(cx,
                                  "updates '%s' has rank %d, expected %d (indices rank - 1 + data rank - %" PRId64 ")",
                                  u->name, (int)u->shape.rank, (int)want, k);
    }
    st = ig__set_out(cx, 0, x->dtype, &x->shape);
out:
    return st;
}

static ingot_status scatter_nd_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0], *idx = ex->in[1], *u = ex->in[2];
    ig_tensor *y = ex->out[0];
    int red = reduction_of(ex->node);
    int64_t k = idx->rank ? idx->dims[idx->rank - 1] : 0;
    if (red < 0 || idx->rank < 1 || k > x->rank)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "invalid indices shape or reduction");
    int64_t slice = 1, n_upd = 1, st[IG_MAX_RANK];
    for (int32_t a = (int32_t)k; a < x->rank; a++) slice *= x->dims[a];
    for (int32_t a = 0; a < idx->rank - 1; a++) n_upd *= idx->dims[a];
    if (u->numel != n_upd * slice)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "updates have %" PRId64 " elements, expected %" PRId64,
                             u->numel, n_upd * slice);
    ig__strides(x, st);
    copy_data(x, y);
    for (int64_t i = 0; i < n_upd; i++) {
        int64_t off = 0;
        for (int64_t j = 0; j < k; j++) {
            int64_t v = index_at(idx, i * k + j), c;
            if (!norm_index(v, x->dims[j], &c)) return bad_index(ex, 1, v, i * k + j, (int)j, x->dims[j]);
            off += c * st[j];
        }
        if (red == RED_NONE) {
            size_t es = ingot_dtype_size(x->dtype);
            memcpy((char *)y->data + (size_t)off * es, (const char *)u->data + (size_t)(i * slice) * es,
                   (size_t)slice * es);
        } else {
            for (int64_t e = 0; e < slice; e++) combine(x->dtype, y->data, off + e, u->data, i * slice + e, red);
        }
    }
    return INGOT_OK;
}

const ig_op_def ig__op_scatter_nd = {
    .name = "ScatterND",
    .since = 11,
    .min_in = 3,
    .max_in = 3,
    .min_out = 1,
    .max_out = 1,
    .flags = IG_OP_INPLACE,
    .infer = scatter_nd_infer,
    .cpu = scatter_nd_cpu,
    .flops = ig__flops_none,
};

/* ==== ScatterElements (Scatter) ======================================================================= */

static ingot_status scatter_elements_infer(ig_infer *cx)
{
    ingot_status st;
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    IG_TRY(st, ig__check_dtype(cx, 1, IG_T(INT32) | IG_T(INT64)), out);
    IG_TRY(st, check_same_dtype(cx, 0, 2), out);
    IG_TRY(st, check_reduction(cx), out);
    const ig_value *x = ig__in(cx, 0), *ix = ig__in(cx, 1), *u = ig__in(cx, 2);
    if (x->shape.rank >= 0) {
        if (x->shape.rank == 0) return ig__fail_shape(cx, "data '%s' must have rank >= 1", x->name);
        int32_t axis;
        IG_TRY(st, ig__norm_axis(cx, ig__attr_int(cx->node, "axis", 0), x->shape.rank, "attribute 'axis'", &axis), out);
        if (ix->shape.rank >= 0 && ix->shape.rank != x->shape.rank)
            return ig__fail_shape(cx, "indices '%s' has rank %d but data '%s' rank %d", ix->name, (int)ix->shape.rank,
                                  x->name, (int)x->shape.rank);
    }
    if (ix->shape.rank >= 0 && u->shape.rank >= 0) {
        if (ix->shape.rank != u->shape.rank)
            return ig__fail_shape(cx, "updates '%s' has rank %d but indices '%s' rank %d", u->name, (int)u->shape.rank,
                                  ix->name, (int)ix->shape.rank);
        for (int32_t a = 0; a < ix->shape.rank; a++)
            if (ig__dim_known(ix->shape.d[a]) && ig__dim_known(u->shape.d[a]) && ix->shape.d[a].n != u->shape.d[a].n)
                return ig__fail_shape(cx,
                                      "updates '%s' and indices '%s' differ at axis %d (%" PRId64 " vs %" PRId64 ")",
                                      u->name, ix->name, (int)a, u->shape.d[a].n, ix->shape.d[a].n);
    }
    st = ig__set_out(cx, 0, x->dtype, &x->shape);
out:
    return st;
}

static ingot_status scatter_elements_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0], *idx = ex->in[1], *u = ex->in[2];
    ig_tensor *y = ex->out[0];
    int red = reduction_of(ex->node);
    int64_t axis = ig__attr_int(ex->node, "axis", 0);
    if (axis < 0) axis += x->rank;
    if (red < 0 || axis < 0 || axis >= x->rank || idx->rank != x->rank || u->numel != idx->numel)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "invalid axis, reduction or input shapes");
    for (int32_t a = 0; a < x->rank; a++)
        if (a != axis && idx->dims[a] > x->dims[a])
            return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE,
                                 "indices have %" PRId64 " at axis %d but data only %" PRId64, idx->dims[a], (int)a,
                                 x->dims[a]);
    int64_t st[IG_MAX_RANK];
    ig__strides(x, st);
    copy_data(x, y);
    int64_t coord[IG_MAX_RANK] = {0};
    for (int64_t e = 0; e < idx->numel; e++) {
        int64_t v = index_at(idx, e), c, off = 0;
        if (!norm_index(v, x->dims[axis], &c)) return bad_index(ex, 1, v, e, (int)axis, x->dims[axis]);
        for (int32_t a = 0; a < x->rank; a++) off += (a == axis ? c : coord[a]) * st[a];
        combine(x->dtype, y->data, off, u->data, e, red);
        for (int32_t a = idx->rank - 1; a >= 0; a--) { /* odometer over the indices' shape */
            if (++coord[a] < idx->dims[a]) break;
            coord[a] = 0;
        }
    }
    return INGOT_OK;
}

const ig_op_def ig__op_scatter_elements = {
    .name = "ScatterElements",
    .since = 11,
    .min_in = 3,
    .max_in = 3,
    .min_out = 1,
    .max_out = 1,
    .flags = IG_OP_INPLACE,
    .infer = scatter_elements_infer,
    .cpu = scatter_elements_cpu,
    .flops = ig__flops_none,
};

/* Scatter (opsets 9 and 10) is ScatterElements under its old name. */
const ig_op_def ig__op_scatter = {
    .name = "Scatter",
    .since = 9,
    .min_in = 3,
    .max_in = 3,
    .min_out = 1,
    .max_out = 1,
    .flags = IG_OP_INPLACE,
    .infer = scatter_elements_infer,
    .cpu = scatter_elements_cpu,
    .flops = ig__flops_none,
};

/* ==== GatherND ======================================================================================== */

static int64_t batch_dims_of(const ig_node *n) { return n->opset >= 12 ? ig__attr_int(n, "batch_dims", 0) : 0; }

static ingot_status gather_nd_infer(ig_infer *cx)
{
    ingot_status st;
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    IG_TRY(st, ig__check_dtype(cx, 1, IG_T(INT64)), out);
    const ig_value *x = ig__in(cx, 0), *ix = ig__in(cx, 1);
    int64_t b = batch_dims_of(cx->node);
    ig_shape s = {.rank = -1};
    if (x->shape.rank < 0 || ix->shape.rank < 0) return ig__set_out(cx, 0, x->dtype, &s);
    int32_t r = x->shape.rank, q = ix->shape.rank;
    if (r < 1 || q < 1) return ig__fail_shape(cx, "data '%s' and indices '%s' must have rank >= 1", x->name, ix->name);
    if (b < 0 || b >= q || b >= r)
        return ig__fail_shape(cx, "attribute batch_dims=%" PRId64 " must be below both ranks (%d, %d)", b, (int)r,
                              (int)q);
    ig_dim kd = ix->shape.d[q - 1];
    if (!ig__dim_known(kd)) return ig__set_out(cx, 0, x->dtype, &s);
    int64_t k = kd.n;
    if (k < 1 || b + k > r)
        return ig__fail_shape(cx, "indices '%s' index %" PRId64 " dims of data '%s' (rank %d, batch_dims %" PRId64 ")",
                              ix->name, k, x->name, (int)r, b);
    for (int32_t a = 0; a < b; a++)
        if (ig__dim_known(x->shape.d[a]) && ig__dim_known(ix->shape.d[a]) && x->shape.d[a].n != ix->shape.d[a].n)
            return ig__fail_shape(cx, "batch dim %d differs: data %" PRId64 ", indices %" PRId64, (int)a,
                                  x->shape.d[a].n, ix->shape.d[a].n);
    s.rank = 0;
    for (int32_t a = 0; a < q - 1; a++) s.d[s.rank++] = ix->shape.d[a];
    for (int32_t a = (int32_t)(b + k); a < r; a++) s.d[s.rank++] = x->shape.d[a];
    st = ig__set_out(cx, 0, x->dtype, &s);
out:
    return st;
}

static ingot_status gather_nd_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0], *idx = ex->in[1];
    ig_tensor *y = ex->out[0];
    int64_t b = batch_dims_of(ex->node), k = idx->rank ? idx->dims[idx->rank - 1] : 0;
    if (idx->rank < 1 || b < 0 || b + k > x->rank || b >= idx->rank)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "invalid indices shape or batch_dims");
    int64_t nb = 1, n_idx = 1, slice = 1, bstride = 1, st[IG_MAX_RANK];
    for (int32_t a = 0; a < b; a++) nb *= x->dims[a];
    for (int32_t a = (int32_t)b; a < idx->rank - 1; a++) n_idx *= idx->dims[a];
    for (int32_t a = (int32_t)(b + k); a < x->rank; a++) slice *= x->dims[a];
    for (int32_t a = (int32_t)b; a < x->rank; a++) bstride *= x->dims[a];
    ig__strides(x, st);
    size_t es = ingot_dtype_size(x->dtype);
    for (int64_t bi = 0; bi < nb; bi++)
        for (int64_t t = 0; t < n_idx; t++) {
            int64_t row = bi * n_idx + t, off = bi * bstride;
            for (int64_t j = 0; j < k; j++) {
                int64_t v = index_at(idx, row * k + j), c;
                int64_t dim = x->dims[b + j];
                if (!norm_index(v, dim, &c)) return bad_index(ex, 1, v, row * k + j, (int)(b + j), dim);
                off += c * st[b + j];
            }
            memcpy((char *)y->data + (size_t)(row * slice) * es, (const char *)x->data + (size_t)off * es,
                   (size_t)slice * es);
        }
    return INGOT_OK;
}

const ig_op_def ig__op_gather_nd = {
    .name = "GatherND",
    .since = 11,
    .min_in = 2,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .infer = gather_nd_infer,
    .cpu = gather_nd_cpu,
    .flops = ig__flops_none,
};
