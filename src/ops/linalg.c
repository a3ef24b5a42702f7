/*
 * linalg.c -- linear algebra on the last two dims of a tensor: Det (opsets 11 and 22, bfloat16 from 22).
 *
 * Det factors each matrix by LU with partial pivoting in double, whatever X's type (float16, bfloat16
 * and float are read into double and the determinant rounded once into X's type): the product of the
 * pivots loses far less than a float elimination would. A zero pivot column means a singular matrix,
 * whose determinant is 0; a NaN is taken as the pivot, so it reaches the result as numpy's does.
 * An empty matrix (M = 0) has determinant 1, as numpy.
 */
#include "op.h"
#include "ops_internal.h"

#include <inttypes.h>
#include <math.h>

static ingot_status det_infer(ig_infer *cx)
{
    uint32_t types = IG_T(FLOAT) | IG_T(FLOAT16) | IG_T(DOUBLE) | (cx->node->opset >= 22 ? IG_T(BFLOAT16) : 0);
    ingot_status st = ig__check_dtype(cx, 0, types);
    if (st != INGOT_OK) return st;
    const ig_value *x = ig__in(cx, 0);
    ig_shape s = {.rank = -1};
    if (x->shape.rank >= 0) {
        if (x->shape.rank < 2)
            return ig__fail_shape(cx, "input '%s' has rank %d; Det needs [..., M, M]", x->name, (int)x->shape.rank);
        ig_dim m = x->shape.d[x->shape.rank - 2], n = x->shape.d[x->shape.rank - 1];
        if (ig__dim_known(m) && ig__dim_known(n) && m.n != n.n)
            return ig__fail_shape(cx, "input '%s' has matrices of %" PRId64 " x %" PRId64 "; Det needs square ones",
                                  x->name, m.n, n.n);
        s.rank = x->shape.rank - 2;
        for (int32_t a = 0; a < s.rank; a++) s.d[a] = x->shape.d[a];
    }
    return ig__set_out(cx, 0, x->dtype, &s);
}

/* The determinant of the m x m matrix a (row-major, overwritten by its LU factors). */
static double lu_det(double *a, int64_t m)
{
    double det = 1.0;
    for (int64_t k = 0; k < m; k++) {
        int64_t p = k;
        double best = fabs(a[k * m + k]);
        for (int64_t i = k + 1; i < m; i++) {
            double v = fabs(a[i * m + k]);
            if (!(v <= best)) p = i, best = v; /* larger, or NaN */
        }
        if (best == 0) return 0.0;
        if (p != k) {
            for (int64_t j = 0; j < m; j++) {
                double t = a[k * m + j];
                a[k * m + j] = a[p * m + j];
                a[p * m + j] = t;
            }
            det = -det;
        }
        double piv = a[k * m + k];
        det *= piv;
        for (int64_t i = k + 1; i < m; i++) {
            double f = a[i * m + k] / piv;
            for (int64_t j = k + 1; j < m; j++) a[i * m + j] -= f * a[k * m + j];
        }
    }
    return det;
}

static size_t det_scratch_of(int64_t m) { return sizeof(double) * (size_t)(m * m); }

static int64_t square_dim(const ig_graph *g, const ig_node *n)
{
    const ig_value *x = ig__node_input(g, n, 0);
    /* no matrix at all (a batch dim of 0): no scratch, whatever M says */
    if (!x || x->shape.rank < 2 || ig__value_numel(g, n->inputs[0]) == 0) return 0;
    return x->shape.d[x->shape.rank - 1].n;
}

static size_t det_scratch(const ig_graph *g, const ig_node *n) { return det_scratch_of(square_dim(g, n)); }

static ingot_status det_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    bool ok = x->rank >= 2 && y->rank == x->rank - 2 && x->dims[x->rank - 1] == x->dims[x->rank - 2];
    for (int32_t a = 0; ok && a < y->rank; a++) ok = y->dims[a] == x->dims[a];
    if (!ok) return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "input [..., M, M] and output [...] expected");
    if (x->numel == 0) { /* no matrices, or matrices of 0 x 0 (determinant 1) */
        for (int64_t b = 0; b < y->numel; b++) ig__elem_set_f64(y->dtype, y->data, b, 1.0);
        return INGOT_OK;
    }
    int64_t m = x->dims[x->rank - 1], mm = m * m;
    char *base = NULL;
    void *own = NULL;
    ingot_status st = ig__exec_scratch(ex, det_scratch_of(m), &base, &own);
    if (st != INGOT_OK) return st;
    double *a = (double *)base;
    for (int64_t b = 0; b < y->numel; b++) {
        for (int64_t i = 0; i < mm; i++) a[i] = ig__elem_f64(x->dtype, x->data, b * mm + i);
        double d = lu_det(a, m);
        /* to fp16/bf16 through float rounded to odd: one correct rounding */
        ig__elem_set_f64(y->dtype, y->data, b, ig__is_lowp(y->dtype) ? (double)ig__f64_to_f32_odd(d) : d);
    }
    ig__free_aligned(own);
    return INGOT_OK;
}

/* LU: about 2/3 M^3 multiply-adds (2 operations each) per matrix. */
static double det_flops(const ig_graph *g, const ig_node *n)
{
    double m = (double)square_dim(g, n);
    return ig__value_numel(g, n->outputs[0]) * (2.0 / 3.0 * m * m * m * 2.0 + m * m);
}

const ig_op_def ig__op_det = {
    .name = "Det",
    .since = 11,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = det_infer,
    .cpu = det_cpu,
    .cpu_scratch = det_scratch,
    .flops = det_flops,
};
