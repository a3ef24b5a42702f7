/*
 * misc.c -- small ops the exporters emit that fit no bigger family: CumSum (RoBERTa-style position ids),
 * Trilu (causal masks), Size, EyeLike, OneHot, SpaceToDepth, and the broadcasting n-ary ops Mean, Xor,
 * BitwiseAnd/Or/Xor/Not and BitShift.
 *
 * Reference kernels: element access through ig__elem_f64/ig__elem_i64 where a loop is not the hot path
 * of any model, so every dtype the spec allows is handled by one loop. Float math is in double (CumSum
 * accumulates in double, rounding each output once), integers exactly in int64 wrapping like the type.
 */
#include "op.h"
#include "ops_internal.h"
#include "pw.h"

#include <inttypes.h>
#include <math.h>

static void copy_tensor(const ig_tensor *x, ig_tensor *y)
{
    if (x->data != y->data && x->numel) memcpy(y->data, x->data, (size_t)x->numel * ingot_dtype_size(x->dtype));
}

/* A scalar input (0-D, or 1-D of one element) as int64: false when absent or not one element. */
static bool scalar_int(const ig_tensor *t, int64_t *v)
{
    if (!t || t->numel != 1) return false;
    *v = ig__elem_i64(t->dtype, t->data, 0);
    return true;
}

/* Infer: input i, when present, is a scalar (or a 1-D tensor of one element) of an allowed dtype. */
static ingot_status infer_scalar_input(ig_infer *cx, int i, uint32_t types, const char *what)
{
    ig_value *v = ig__in(cx, i);
    if (!v) return INGOT_OK;
    ingot_status st = ig__check_dtype(cx, i, types);
    if (st != INGOT_OK) return st;
    int64_t numel;
    if (v->shape.rank > 1 || (ig__shape_numel(&v->shape, &numel) && numel != 1))
        return ig__fail_shape(cx, "input %d '%s' (%s) must be a scalar", i, v->name, what);
    return INGOT_OK;
}

/* ==== CumSum ========================================================================================== */

static ingot_status cumsum_infer(ig_infer *cx)
{
    ingot_status st;
    uint32_t types = IG_TS_FLOAT | IG_T(INT32) | IG_T(INT64) | IG_T(UINT32) | IG_T(UINT64);
    if ((st = ig__check_dtype(cx, 0, types)) != INGOT_OK) return st;
    if ((st = infer_scalar_input(cx, 1, IG_T(INT32) | IG_T(INT64), "axis")) != INGOT_OK) return st;
    for (int k = 0; k < 2; k++) {
        const char *a = k ? "reverse" : "exclusive";
        int64_t v = ig__attr_int(cx->node, a, 0);
        if (v != 0 && v != 1) return ig__unsupported(cx, "attribute %s=%" PRId64 " is not 0 or 1", a, v);
    }
    const ig_value *x = ig__in(cx, 0);
    if (x->shape.rank == 0) return ig__fail_shape(cx, "input '%s' is a scalar; CumSum needs rank >= 1", x->name);
    double axis;
    if (x->shape.rank > 0 && ig__in_scalar_f64(cx, 1, &axis)) {
        int32_t a;
        if ((st = ig__norm_axis(cx, (int64_t)axis, x->shape.rank, "input 'axis'", &a)) != INGOT_OK) return st;
    }
    return ig__set_out(cx, 0, x->dtype, &x->shape);
}

static ingot_status cumsum_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    int64_t axis;
    if (!scalar_int(ex->in[1], &axis)) return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "axis must be a scalar");
    if (axis < -x->rank || axis >= x->rank)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "axis %" PRId64 " is out of range for rank %d", axis,
                             (int)x->rank);
    if (axis < 0) axis += x->rank;
    bool excl = ig__attr_int(ex->node, "exclusive", 0) != 0, rev = ig__attr_int(ex->node, "reverse", 0) != 0;
    int64_t outer = 1, len = x->dims[axis], inner = 1;
    for (int32_t a = 0; a < axis; a++) outer *= x->dims[a];
    for (int32_t a = (int32_t)axis + 1; a < x->rank; a++) inner *= x->dims[a];
    const bool fl = ig__dtype_is_float(x->dtype);
    const ingot_dtype t = x->dtype;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double sf = 0;
            uint64_t si = 0;
            for (int64_t s = 0; s < len; s++) {
                int64_t j = rev ? len - 1 - s : s, e = (o * len + j) * inner + i;
                /* read before writing: y may be x's buffer */
                double vf = fl ? ig__elem_f64(t, x->data, e) : 0;
                uint64_t vi = fl ? 0 : (uint64_t)ig__elem_i64(t, x->data, e);
                if (!excl) sf += vf, si += vi;
                if (fl)
                    ig__elem_set_f64(t, y->data, e, sf);
                else
                    ig__elem_set_i64(t, y->data, e, (int64_t)si);
                if (excl) sf += vf, si += vi;
            }
        }
    return INGOT_OK;
}

const ig_op_def ig__op_cum_sum = {
    .name = "CumSum",
    .since = 11,
    .min_in = 2,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .flags = IG_OP_INPLACE,
    .infer = cumsum_infer,
    .cpu = cumsum_cpu,
};

/* ==== Trilu =========================================================================================== */

static ingot_status trilu_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_ALL)) != INGOT_OK) return st;
    if ((st = infer_scalar_input(cx, 1, IG_T(INT64), "k")) != INGOT_OK) return st;
    int64_t up = ig__attr_int(cx->node, "upper", 1);
    if (up != 0 && up != 1) return ig__unsupported(cx, "attribute upper=%" PRId64 " is not 0 or 1", up);
    const ig_value *x = ig__in(cx, 0);
    if (x->shape.rank >= 0 && x->shape.rank < 2)
        return ig__fail_shape(cx, "input '%s' has rank %d; Trilu needs rank >= 2", x->name, (int)x->shape.rank);
    return ig__set_out(cx, 0, x->dtype, &x->shape);
}

static ingot_status trilu_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    int64_t k = 0;
    if (ex->n_in > 1 && ex->in[1] && !scalar_int(ex->in[1], &k))
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "k must be a scalar");
    bool upper = ig__attr_int(ex->node, "upper", 1) != 0;
    copy_tensor(x, y);
    if (x->rank < 2 || y->numel == 0) return INGOT_OK;
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1], mats = x->numel / (rows * cols);
    size_t es = ingot_dtype_size(x->dtype);
    for (int64_t m = 0; m < mats; m++)
        for (int64_t i = 0; i < rows; i++) {
            /* zero columns j with j - i < k (upper) or j - i > k (lower) */
            int64_t lo = upper ? 0 : i + k + 1, hi = upper ? i + k : cols;
            if (lo < 0) lo = 0;
            if (hi > cols) hi = cols;
            if (hi > lo) memset((char *)y->data + (size_t)((m * rows + i) * cols + lo) * es, 0, (size_t)(hi - lo) * es);
        }
    return INGOT_OK;
}

const ig_op_def ig__op_trilu = {
    .name = "Trilu",
    .since = 14,
    .min_in = 1,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .flags = IG_OP_INPLACE,
    .infer = trilu_infer,
    .cpu = trilu_cpu,
    .flops = ig__flops_none,
};

/* ==== Size ============================================================================================ */

static ingot_status size_infer(ig_infer *cx)
{
    const ig_value *x = ig__in(cx, 0);
    ig_shape s = {.rank = 0};
    ingot_status st = ig__set_out(cx, 0, INGOT_DTYPE_INT64, &s);
    if (st != INGOT_OK || x->shape.rank < 0) return st;
    /* the element count as a (symbolic) value, so Size(x) folds or stays symbolic like Shape(x) */
    ig_dim n = ig__dim_const(1);
    for (int32_t a = 0; a < x->shape.rank; a++)
        if (!ig__dim_mul(n, x->shape.d[a], &n)) return INGOT_OK;
    return ig__set_out_sym(cx, 0, &n, 1);
}

static ingot_status size_cpu(ig_exec *ex)
{
    *(int64_t *)ex->out[0]->data = ex->in[0]->numel;
    return INGOT_OK;
}

const ig_op_def ig__op_size = {
    .name = "Size",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = size_infer,
    .cpu = size_cpu,
    .flops = ig__flops_none,
};

/* ==== If ============================================================================================== */

/* The importer replaces an If whose condition is a build-time constant by the branch it takes
 * (src/api/inline_if.c) and refuses the others: one that reaches inference came another way (an engine
 * file written by hand), and neither backend runs control flow. */
static ingot_status if_infer(ig_infer *cx)
{
    return ig__unsupported(cx, "control flow is not run by ingot; an If is replaced by its branch when the model "
                               "loads, which needs a condition known at build time");
}

const ig_op_def ig__op_if = {
    .name = "If",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = -1,
    .flags = IG_OP_NOFOLD,
    .infer = if_infer,
};

/* ==== EyeLike ========================================================================================= */

static ingot_dtype eyelike_dtype(const ig_node *n, ingot_dtype in)
{
    const ig_attr *a = ig__node_attr(n, "dtype");
    return a && a->type == IG_ATTR_INT ? (ingot_dtype)a->i : in;
}

static ingot_status eyelike_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_ALL)) != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0);
    ingot_dtype t = eyelike_dtype(cx->node, x->dtype);
    if (!ig__dtype_supported(t)) return ig__unsupported(cx, "attribute dtype=%d is not a supported type", (int)t);
    if (x->shape.rank >= 0 && x->shape.rank != 2)
        return ig__fail_shape(cx, "input '%s' has rank %d; EyeLike needs rank 2", x->name, (int)x->shape.rank);
    return ig__set_out(cx, 0, t, &x->shape);
}

static ingot_status eyelike_cpu(ig_exec *ex)
{
    ig_tensor *y = ex->out[0];
    int64_t k = ig__attr_int(ex->node, "k", 0), rows = y->dims[0], cols = y->dims[1];
    memset(y->data, 0, (size_t)y->numel * ingot_dtype_size(y->dtype));
    for (int64_t i = 0; i < rows; i++)
        if (i + k >= 0 && i + k < cols) ig__elem_set_i64(y->dtype, y->data, i * cols + i + k, 1);
    return INGOT_OK;
}

const ig_op_def ig__op_eye_like = {
    .name = "EyeLike",
    .since = 9,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = eyelike_infer,
    .cpu = eyelike_cpu,
    .flops = ig__flops_none,
};

/* ==== SpaceToDepth ==================================================================================== */

static ingot_status space_to_depth_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_ALL)) != INGOT_OK) return st;
    const ig_attr *ba = ig__node_attr(cx->node, "blocksize");
    if (!ba || ba->type != IG_ATTR_INT || ba->i < 1)
        return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "attribute 'blocksize' is required and must be >= 1");
    int64_t b = ba->i;
    const char *mode = ig__attr_str(cx->node, "mode", "DCR");
    if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
        return ig__unsupported(cx, "attribute mode='%s' is not supported (DCR or CRD)", mode);
    const ig_value *x = ig__in(cx, 0);
    ig_shape s = {.rank = -1};
    if (x->shape.rank < 0) return ig__set_out(cx, 0, x->dtype, &s);
    if (x->shape.rank != 4)
        return ig__fail_shape(cx, "input '%s' has rank %d; SpaceToDepth needs [N, C, H, W]", x->name,
                              (int)x->shape.rank);
    s = x->shape;
    if (!ig__dim_mul(x->shape.d[1], ig__dim_const(b * b), &s.d[1])) s.d[1] = ig__dim_fresh(cx);
    for (int a = 2; a < 4; a++) {
        ig_dim d = x->shape.d[a];
        if (ig__dim_known(d) && d.n % b)
            return ig__fail_shape(cx, "dim %d of input '%s' (%" PRId64 ") is not a multiple of blocksize %" PRId64, a,
                                  x->name, d.n, b);
        if (!ig__dim_div(d, ig__dim_const(b), &s.d[a])) s.d[a] = ig__dim_fresh(cx);
    }
    return ig__set_out(cx, 0, x->dtype, &s);
}

static ingot_status space_to_depth_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    int64_t b = ig__attr_int(ex->node, "blocksize", 1);
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], Ho = H / b, Wo = W / b;
    if (b < 1 || H % b || W % b)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "spatial dims are not multiples of blocksize %" PRId64, b);
    size_t es = ingot_dtype_size(x->dtype);
    const bool crd = !strcmp(ig__attr_str(ex->node, "mode", "DCR"), "CRD");
    /* DCR: y[n, (bh * b + bw) * C + c, h, w] = x[n, c, h * b + bh, w * b + bw]; CRD: channel
     * c * b * b + bh * b + bw */
    for (int64_t n = 0; n < N; n++)
        for (int64_t bh = 0; bh < b; bh++)
            for (int64_t bw = 0; bw < b; bw++)
                for (int64_t c = 0; c < C; c++)
                    for (int64_t h = 0; h < Ho; h++)
                        for (int64_t w = 0; w < Wo; w++) {
                            int64_t oc = crd ? (c * b + bh) * b + bw : (bh * b + bw) * C + c;
                            int64_t yo = ((n * C * b * b + oc) * Ho + h) * Wo + w;
                            int64_t xo = ((n * C + c) * H + h * b + bh) * W + w * b + bw;
                            memcpy((char *)y->data + (size_t)yo * es, (const char *)x->data + (size_t)xo * es, es);
                        }
    return INGOT_OK;
}

const ig_op_def ig__op_space_to_depth = {
    .name = "SpaceToDepth",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = space_to_depth_infer,
    .cpu = space_to_depth_cpu,
    .flops = ig__flops_none,
};

/* ==== broadcasting n-ary ops: Mean, Xor, BitwiseAnd/Or/Xor/Not, BitShift ============================== */

enum nary_kind { NK_MEAN, NK_XOR, NK_BAND, NK_BOR, NK_BXOR, NK_BNOT, NK_SHIFT };

static int nary_kind(const ig_node *n)
{
    static const char *const names[] = {[NK_MEAN] = "Mean",     [NK_XOR] = "Xor",         [NK_BAND] = "BitwiseAnd",
                                        [NK_BOR] = "BitwiseOr", [NK_BXOR] = "BitwiseXor", [NK_BNOT] = "BitwiseNot"};
    for (int k = 0; k < NK_SHIFT; k++)
        if (!strcmp(n->op_type, names[k])) return k;
    return NK_SHIFT;
}

static uint32_t nary_types(int kind)
{
    switch (kind) {
    case NK_MEAN: return IG_TS_FLOAT;
    case NK_XOR: return IG_T(BOOL);
    default: return IG_TS_INT;
    }
}

static ingot_status nary_infer(ig_infer *cx)
{
    ingot_status st;
    int kind = nary_kind(cx->node);
    int n = ig__n_in(cx);
    ig_value *x0 = ig__in(cx, 0);
    if (kind == NK_SHIFT) {
        const char *d = ig__attr_str(cx->node, "direction", "");
        if (strcmp(d, "LEFT") && strcmp(d, "RIGHT"))
            return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "attribute direction='%s' must be LEFT or RIGHT", d);
    }
    ig_shape s = x0->shape;
    for (int i = 0; i < n; i++) {
        ig_value *v = ig__in(cx, i);
        if (!v) return ig__fail_shape(cx, "input %d is missing", i);
        if ((st = ig__check_dtype(cx, i, nary_types(kind))) != INGOT_OK) return st;
        if (v->dtype != x0->dtype)
            return ig__fail_shape(cx, "input %d '%s' has dtype %s but input 0 '%s' has %s", i, v->name,
                                  ingot_dtype_name(v->dtype), x0->name, ingot_dtype_name(x0->dtype));
        if (i > 0 && (st = ig__broadcast(cx, &s, &v->shape, &s)) != INGOT_OK) return st;
    }
    uint32_t uns = IG_T(UINT8) | IG_T(UINT16) | IG_T(UINT32) | IG_T(UINT64);
    if (kind == NK_SHIFT && cx->node->opset < 28 && !(uns & (1u << x0->dtype)))
        return ig__unsupported(cx, "BitShift on signed %s needs opset 28 (the model imports %d)",
                               ingot_dtype_name(x0->dtype), (int)cx->node->opset);
    return ig__set_out(cx, 0, x0->dtype, &s);
}

static ingot_status nary_cpu(ig_exec *ex)
{
    ig_tensor *y = ex->out[0];
    int kind = nary_kind(ex->node);
    int n = ex->n_in;
    if (n < 1 || n > 16) return ig__exec_fail(ex, INGOT_ERR_MODEL_UNSUPPORTED_OP, "%d inputs (1 to 16 supported)", n);
    int64_t st[16][IG_MAX_RANK], off[16] = {0}, coord[IG_MAX_RANK] = {0};
    for (int i = 0; i < n; i++) {
        if (!ex->in[i] || !ig__pw_broadcasts(ex->in[i], y->rank, y->dims))
            return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "input %d does not broadcast to the output", i);
        ig__broadcast_strides(ex->in[i], y->rank, y->dims, st[i]);
    }
    const ingot_dtype t = y->dtype;
    const bool left = kind == NK_SHIFT && !strcmp(ig__attr_str(ex->node, "direction", ""), "LEFT");
    int bits = (int)ingot_dtype_size(t) * 8;
    const bool signed_t =
        t == INGOT_DTYPE_INT8 || t == INGOT_DTYPE_INT16 || t == INGOT_DTYPE_INT32 || t == INGOT_DTYPE_INT64;
    for (int64_t e = 0; e < y->numel; e++) {
        if (kind == NK_MEAN) {
            double s = 0;
            for (int i = 0; i < n; i++) s += ig__elem_f64(t, ex->in[i]->data, off[i]);
            ig__elem_set_f64(t, y->data, e, s / n);
        } else {
            uint64_t a = (uint64_t)ig__elem_i64(t, ex->in[0]->data, off[0]);
            uint64_t b = n > 1 ? (uint64_t)ig__elem_i64(t, ex->in[1]->data, off[1]) : 0, r;
            switch (kind) {
            case NK_XOR: r = (a != 0) != (b != 0); break;
            case NK_BAND: r = a & b; break;
            case NK_BOR: r = a | b; break;
            case NK_BXOR: r = a ^ b; break;
            case NK_BNOT: r = ~a; break;
            default: /* a shift past the width (or negative) leaves the sign fill: -1 or 0 */
                if (signed_t) {
                    int64_t sa = (int64_t)a, sb = (int64_t)b;
                    r = sb < 0 || sb >= bits ? (uint64_t)(!left && sa < 0 ? -1 : 0)
                        : left               ? a << sb
                                             : (uint64_t)(sa >> sb); /* arithmetic: sa is sign-extended */
                } else {
                    r = b >= (uint64_t)bits ? 0 : left ? a << b : a >> b;
                }
                break;
            }
            ig__elem_set_i64(t, y->data, e, (int64_t)r);
        }
        for (int32_t d = y->rank - 1; d >= 0; d--) { /* odometer */
            for (int i = 0; i < n; i++) off[i] += st[i][d];
            if (++coord[d] < y->dims[d]) break;
            for (int i = 0; i < n; i++) off[i] -= st[i][d] * y->dims[d];
            coord[d] = 0;
        }
    }
    return INGOT_OK;
}

#define NARY_DEF(cname, oname, since_, min_in_, max_in_) \
    const ig_op_def ig__op_##cname = {                   \
        .name = oname,                                   \
        .since = since_,                                 \
        .min_in = min_in_,                               \
        .max_in = max_in_,                               \
        .min_out = 1,                                    \
        .max_out = 1,                                    \
        .infer = nary_infer,                             \
        .cpu = nary_cpu,                                 \
        .flops = ig__flops_per_input,                    \
    }

NARY_DEF(mean, "Mean", 8, 1, -1);
NARY_DEF(xor, "Xor", 7, 2, 2);
NARY_DEF(bitwise_and, "BitwiseAnd", 18, 2, 2);
NARY_DEF(bitwise_or, "BitwiseOr", 18, 2, 2);
NARY_DEF(bitwise_xor, "BitwiseXor", 18, 2, 2);
NARY_DEF(bitwise_not, "BitwiseNot", 18, 1, 1);
NARY_DEF(bit_shift, "BitShift", 11, 2, 2);

/* ==== OneHot ========================================================================================== */

/* Y has indices' shape with a new axis of `depth` elements inserted at 'axis': values[1] (on) where the
 * position along it is the index, values[0] (off) elsewhere. From opset 11 a negative index counts from
 * the end of depth (opset 9: out of range); an index out of range leaves its line all off. Float indices and a float
 * depth are truncated toward zero, as ONNX Runtime casts them. */

static ingot_status onehot_infer(ig_infer *cx)
{
    ingot_status st;
    if ((st = ig__check_dtype(cx, 0, IG_TS_NUM)) != INGOT_OK) return st;
    if ((st = infer_scalar_input(cx, 1, IG_TS_NUM, "depth")) != INGOT_OK) return st;
    if ((st = ig__check_dtype(cx, 2, IG_TS_ALL)) != INGOT_OK) return st;
    const ig_value *ind = ig__in(cx, 0), *val = ig__in(cx, 2);
    int64_t numel;
    if (val->shape.rank >= 0 && (val->shape.rank != 1 || (ig__shape_numel(&val->shape, &numel) && numel != 2)))
        return ig__fail_shape(cx, "input 2 '%s' (values) must be [off_value, on_value], a 1-D tensor of 2 elements",
                              val->name);
    ig_dim depth = ig__dim_fresh(cx);
    double dv;
    if (ig__in_scalar_f64(cx, 1, &dv)) {
        if (!(dv >= 0 && dv < 9.2e18))
            return ig__fail_shape(cx, "depth = %g must be a non-negative number of classes", dv);
        depth = ig__dim_const((int64_t)dv);
    }
    ig_shape out = {.rank = -1};
    if (ind->shape.rank >= 0) {
        if (ind->shape.rank + 1 > IG_MAX_RANK)
            return ig__unsupported(cx, "output rank %d is above %d", (int)ind->shape.rank + 1, IG_MAX_RANK);
        int32_t a;
        if ((st = ig__norm_axis(cx, ig__attr_int(cx->node, "axis", -1), ind->shape.rank + 1, "attribute 'axis'", &a)) !=
            INGOT_OK)
            return st;
        out.rank = ind->shape.rank + 1;
        for (int32_t k = 0, j = 0; k < out.rank; k++) out.d[k] = k == a ? depth : ind->shape.d[j++];
    }
    return ig__set_out(cx, 0, val->dtype, &out);
}

/* Index i of t as an int64, or -1 - INT64_MAX when it is out of any range (NaN, huge). */
static int64_t onehot_index(const ig_tensor *t, int64_t i)
{
    if (ig__dtype_is_float(t->dtype)) {
        double v = ig__elem_f64(t->dtype, t->data, i);
        return v > -9.2e18 && v < 9.2e18 ? (int64_t)v : INT64_MIN;
    }
    int64_t v = ig__elem_i64(t->dtype, t->data, i);
    return t->dtype == INGOT_DTYPE_UINT64 && v < 0 ? INT64_MIN : v; /* a uint64 above INT64_MAX */
}

static ingot_status onehot_cpu(ig_exec *ex)
{
    const ig_tensor *ind = ex->in[0], *dep = ex->in[1], *val = ex->in[2];
    ig_tensor *y = ex->out[0];
    int64_t axis = ig__attr_int(ex->node, "axis", -1);
    if (axis < 0) axis += ind->rank + 1;
    int64_t depth = -1;
    if (dep->numel == 1)
        depth = ig__dtype_is_float(dep->dtype) ? onehot_index(dep, 0) : ig__elem_i64(dep->dtype, dep->data, 0);
    if (axis < 0 || axis > ind->rank || val->numel != 2 || depth < 0 || y->dims[axis] != depth)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE,
                             "depth must be one non-negative value, values two, and axis within rank %d + 1",
                             (int)ind->rank);
    const size_t es = ingot_dtype_size(y->dtype);
    const char *off = val->data, *on = off + es;
    char *yd = y->data;
    if (y->numel == 0) return INGOT_OK;
    memcpy(yd, off, es); /* all off: one element, then doubling copies */
    for (int64_t done = 1; done < y->numel; done *= 2) {
        int64_t c = done < y->numel - done ? done : y->numel - done;
        memcpy(yd + (size_t)done * es, yd, (size_t)c * es);
    }
    int64_t inner = 1;
    for (int32_t k = (int32_t)axis; k < ind->rank; k++) inner *= ind->dims[k];
    for (int64_t p = 0; p < ind->numel; p++) {
        int64_t i = onehot_index(ind, p);
        if (i < 0 && i >= -depth && ex->node->opset >= 11) i += depth;
        if (i < 0 || i >= depth) continue;
        memcpy(yd + (size_t)(((p / inner) * depth + i) * inner + p % inner) * es, on, es);
    }
    return INGOT_OK;
}

const ig_op_def ig__op_one_hot = {
    .name = "OneHot",
    .since = 9,
    .min_in = 3,
    .max_in = 3,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = 1u << 1,
    .infer = onehot_infer,
    .cpu = onehot_cpu,
    .flops = ig__flops_none,
};
