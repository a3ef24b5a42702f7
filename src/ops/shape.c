/*
 * shape.c -- shape computation and constants: Constant, ConstantOfShape, Shape, Range, Expand, Tile,
 * Reshape, Flatten, Squeeze, Unsqueeze.
 *
 * Shape is where symbolic propagation starts: its output always carries the input's dims as element
 * values (ig__set_out_sym), symbolic or not, and the ops downstream (Gather, Unsqueeze, Concat, Slice
 * in movement.c) carry them on until Reshape/Expand/Tile/ConstantOfShape/Range read them back as
 * dims. Reshape infers -1 by cancelling symbols: [batch,seq,768] to [batch,-1,12,64] gives seq.
 */
#include "op.h"
#include "../cpu/cpu.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* ==== shared helpers ================================================================================= */

static ingot_status set_unknown_rank(ig_infer *cx, int out, ingot_dtype t)
{
    ig_shape s;
    s.rank = -1;
    return ig__set_out(cx, out, t, &s);
}

/* A shape operand (Reshape's shape, Expand's shape, ...) whose values are not known at build time:
 * when its length is known the output has that rank with fresh dims, else it is an error. */
static ingot_status shape_operand_unknown(ig_infer *cx, int i, ig_shape *s)
{
    ig_value *v = ig__in(cx, i);
    if (v->shape.rank == 1 && ig__dim_known(v->shape.d[0]) && v->shape.d[0].n <= IG_MAX_RANK) {
        s->rank = (int32_t)v->shape.d[0].n;
        for (int32_t a = 0; a < s->rank; a++) s->d[a] = ig__dim_fresh(cx);
        return INGOT_OK;
    }
    if (v->shape.rank == 1 && ig__dim_known(v->shape.d[0]))
        return ig__unsupported(cx, "input '%s' has %" PRId64 " entries; ingot supports rank <= %d", v->name,
                               v->shape.d[0].n, IG_MAX_RANK);
    return ig__unsupported(cx,
                           "input '%s' must be known when the engine is built (a constant, an initializer, or "
                           "computed from shapes), but it depends on run-time data",
                           v->name);
}

/* Copy input 0's values to output 0 when both are small vectors (element order is kept by reshapes). */
static ingot_status pass_vals(ig_infer *cx, const ig_shape *out_shape)
{
    ig_value *x = ig__in(cx, 0);
    int64_t n;
    if (out_shape->rank > 1 || !ig__dtype_is_int(x->dtype) || !ig__shape_numel(out_shape, &n)) return INGOT_OK;
    ig_dim vals[IG_MAX_SYMVAL];
    int32_t nv;
    if (!ig__in_vals(cx, 0, vals, IG_MAX_SYMVAL, &nv) || nv != n || nv == 0) return INGOT_OK;
    return ig__set_out_sym(cx, 0, vals, nv);
}

/* Output 0 as a copy of input 0's bytes (the executor may already have aliased them). */
static ingot_status alias_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    if (y->data != x->data && y->numel > 0) memcpy(y->data, x->data, (size_t)x->numel * ingot_dtype_size(x->dtype));
    return INGOT_OK;
}

/* A product of dims kept as coefficient * symbols, so that symbols can cancel in a division:
 * (batch*seq*768) / (batch*12*64) = seq. */
typedef struct mono {
    int64_t coef;
    int32_t n;
    int32_t s[IG_MAX_RANK];
    bool ok;
} mono;

static void mono_init(mono *m)
{
    m->coef = 1;
    m->n = 0;
    m->ok = true;
}

static void mono_mul(mono *m, ig_dim d)
{
    if (!ig__mul_i64(m->coef, d.n, &m->coef)) m->ok = false;
    if (d.sym != IG_NOSYM) {
        if (m->n < IG_MAX_RANK)
            m->s[m->n++] = d.sym;
        else
            m->ok = false;
    }
}

/* Remove the symbols a and b share. */
static void mono_cancel(mono *a, mono *b)
{
    for (int32_t i = 0; i < b->n;) {
        int32_t k = -1;
        for (int32_t j = 0; j < a->n && k < 0; j++)
            if (a->s[j] == b->s[i]) k = j;
        if (k < 0) {
            i++;
            continue;
        }
        a->s[k] = a->s[--a->n];
        b->s[i] = b->s[--b->n];
    }
}

static bool mono_dim(const mono *m, ig_dim *d)
{
    if (!m->ok || m->n > 1) return false;
    if (m->coef == 0) {
        *d = ig__dim_const(0);
        return true;
    }
    d->n = m->coef;
    d->sym = m->n ? m->s[0] : IG_NOSYM;
    return m->coef > 0 || m->n == 0;
}

static bool shape_mono(const ig_shape *s, int32_t b, int32_t e, int32_t skip, mono *m)
{
    mono_init(m);
    for (int32_t a = b; a < e; a++)
        if (a != skip) mono_mul(m, s->d[a]);
    return m->ok;
}

/* ==== Constant ======================================================================================= */

/* The constant's bytes, dtype and shape from whichever value attribute the node has. */
static ingot_status constant_value(const ig_node *nd, ig_const *c, const char **bad)
{
    static const char *const names[] = {"value",      "value_float",  "value_floats",  "value_int",
                                        "value_ints", "value_string", "value_strings", "sparse_value"};
    const ig_attr *a = NULL;
    int found = 0;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        const ig_attr *x = ig__node_attr(nd, names[k]);
        if (x) {
            a = x;
            found++;
        }
    }
    memset(c, 0, sizeof *c);
    *bad = NULL;
    if (found != 1) return found ? INGOT_ERR_MODEL_INVALID : INGOT_ERR_MODEL_SHAPE;
    *bad = a->name;
    if (!strcmp(a->name, "value") && a->type == IG_ATTR_TENSOR && a->t) {
        *c = *a->t;
    } else if (!strcmp(a->name, "value_float") && (a->type == IG_ATTR_FLOAT)) {
        c->dtype = INGOT_DTYPE_FLOAT;
        c->data = &a->f;
        c->n_bytes = 4;
    } else if (!strcmp(a->name, "value_floats") && a->type == IG_ATTR_FLOATS) {
        c->dtype = INGOT_DTYPE_FLOAT;
        c->rank = 1;
        c->dims[0] = a->n;
        c->data = a->n ? (const void *)a->floats : NULL;
        c->n_bytes = (size_t)a->n * 4;
    } else if (!strcmp(a->name, "value_int") && a->type == IG_ATTR_INT) {
        c->dtype = INGOT_DTYPE_INT64;
        c->data = &a->i;
        c->n_bytes = 8;
    } else if (!strcmp(a->name, "value_ints") && a->type == IG_ATTR_INTS) {
        c->dtype = INGOT_DTYPE_INT64;
        c->rank = 1;
        c->dims[0] = a->n;
        c->data = a->n ? (const void *)a->ints : NULL;
        c->n_bytes = (size_t)a->n * 8;
    } else {
        return INGOT_ERR_MODEL_UNSUPPORTED_OP;
    }
    return INGOT_OK;
}

static ingot_status constant_infer(ig_infer *cx)
{
    ig_const c;
    const char *bad;
    ingot_status st = constant_value(cx->node, &c, &bad);
    if (st == INGOT_ERR_MODEL_SHAPE)
        return ig__fail_shape(cx, "needs one of the attributes value, value_float(s), value_int(s)");
    if (st == INGOT_ERR_MODEL_INVALID) return ig__fail_shape(cx, "has more than one value attribute");
    if (st != INGOT_OK) {
        if (!strcmp(bad, "value_string") || !strcmp(bad, "value_strings"))
            return ig__unsupported(cx, "attribute '%s': string constants are not supported", bad);
        if (!strcmp(bad, "sparse_value"))
            return ig__unsupported(cx, "attribute 'sparse_value': sparse constants are not supported");
        return ig__fail_shape(cx, "attribute '%s' has the wrong type", bad);
    }
    size_t es = ingot_dtype_size(c.dtype);
    if (!es || (unsigned)c.dtype >= 32 || !(IG_TS_ALL & (1u << c.dtype)))
        return ig__unsupported(cx, "attribute '%s' has dtype %s, which ingot does not support", bad,
                               ingot_dtype_name(c.dtype));
    ig_shape s;
    s.rank = c.rank;
    int64_t n = 1;
    for (int32_t a = 0; a < c.rank; a++) {
        s.d[a] = ig__dim_const(c.dims[a]);
        if (c.dims[a] < 0 || !ig__mul_i64(n, c.dims[a], &n))
            return ig__fail_shape(cx, "attribute '%s' has a bad dim %" PRId64, bad, c.dims[a]);
    }
    size_t want;
    if (!ig__mul_size((size_t)n, es, &want) || want != c.n_bytes)
        return ig__fail_shape(cx, "attribute '%s' holds %zu bytes; its shape needs %" PRId64 " x %zu", bad, c.n_bytes,
                              n, es);
    IG_TRY(st, ig__set_out(cx, 0, c.dtype, &s), out);
    ig_value *v = ig__out(cx, 0);
    if (v) {
        c.name = v->name;
        v->c = c;
        v->flags |= IG_VAL_CONST;
    }
    if (c.rank <= 1 && ig__dtype_is_int(c.dtype) && n > 0 && n <= IG_MAX_SYMVAL) {
        ig_dim vals[IG_MAX_SYMVAL];
        for (int64_t k = 0; k < n; k++) vals[k] = ig__dim_const(ig__elem_i64(c.dtype, c.data, k));
        st = ig__set_out_sym(cx, 0, vals, (int32_t)n);
    }
out:
    return st;
}

static ingot_status constant_cpu(ig_exec *ex)
{
    ig_const c;
    const char *bad;
    ig_tensor *y = ex->out[0];
    if (constant_value(ex->node, &c, &bad) != INGOT_OK || c.n_bytes != (size_t)y->numel * ingot_dtype_size(y->dtype))
        return ig__errf(ex->err, INGOT_ERR_MODEL_INVALID, "node '%s' (Constant): bad value attribute",
                        ig__node_label(ex->node));
    if (c.n_bytes) memcpy(y->data, c.data, c.n_bytes);
    return INGOT_OK;
}

const ig_op_def ig__op_constant = {
    .name = "Constant",
    .since = 1,
    .min_in = 0,
    .max_in = 0,
    .min_out = 1,
    .max_out = 1,
    .infer = constant_infer,
    .cpu = constant_cpu,
    .flops = ig__flops_none,
};

/* ==== ConstantOfShape ================================================================================ */

/* The fill value: attribute 'value' (a one-element tensor), float 0 by default. */
static bool cos_value(const ig_node *nd, ingot_dtype *t, const void **data)
{
    static const float zero = 0;
    const ig_attr *a = ig__node_attr(nd, "value");
    if (!a) {
        *t = INGOT_DTYPE_FLOAT;
        *data = &zero;
        return true;
    }
    if (a->type != IG_ATTR_TENSOR || !a->t) return false;
    size_t es = ingot_dtype_size(a->t->dtype);
    if (!es || a->t->n_bytes != es) return false;
    *t = a->t->dtype;
    *data = a->t->data;
    return true;
}

static ingot_status constant_of_shape_infer(ig_infer *cx)
{
    ingot_status st;
    ingot_dtype t;
    const void *val;
    IG_TRY(st, ig__check_dtype(cx, 0, IG_T(INT64)), out);
    if (!cos_value(cx->node, &t, &val)) return ig__fail_shape(cx, "attribute 'value' must be a one-element tensor");
    if ((unsigned)t >= 32 || !(IG_TS_ALL & (1u << t)))
        return ig__unsupported(cx, "attribute 'value' has dtype %s, which ingot does not support", ingot_dtype_name(t));
    ig_dim dims[IG_MAX_RANK];
    int32_t n;
    ig_shape s;
    if (ig__in_vals(cx, 0, dims, IG_MAX_RANK, &n)) {
        s.rank = n;
        for (int32_t a = 0; a < n; a++) {
            if (ig__dim_known(dims[a]) && dims[a].n < 0)
                return ig__fail_shape(cx, "shape entry %d is negative (%" PRId64 ")", (int)a, dims[a].n);
            s.d[a] = dims[a];
        }
    } else {
        IG_TRY(st, shape_operand_unknown(cx, 0, &s), out);
    }
    IG_TRY(st, ig__set_out(cx, 0, t, &s), out);
    int64_t numel;
    if (s.rank <= 1 && ig__dtype_is_int(t) && ig__shape_numel(&s, &numel) && numel > 0 && numel <= IG_MAX_SYMVAL) {
        ig_dim vals[IG_MAX_SYMVAL];
        for (int64_t k = 0; k < numel; k++) vals[k] = ig__dim_const(ig__elem_i64(t, val, 0));
        st = ig__set_out_sym(cx, 0, vals, (int32_t)numel);
    }
out:
    return st;
}

/* Fill n elements of es bytes with the value at v (unaligned), by doubling copies. */
static void fill_bytes(char *dst, const void *v, size_t es, int64_t n)
{
    if (n <= 0) return;
    memcpy(dst, v, es);
    size_t have = es, total = (size_t)n * es;
    while (have < total) {
        size_t c = have < total - have ? have : total - have;
        memcpy(dst + have, dst, c);
        have += c;
    }
}

static ingot_status constant_of_shape_cpu(ig_exec *ex)
{
    ingot_dtype t;
    const void *val;
    ig_tensor *y = ex->out[0];
    if (!cos_value(ex->node, &t, &val) || t != y->dtype)
        return ig__errf(ex->err, INGOT_ERR_MODEL_INVALID, "node '%s' (ConstantOfShape): bad value attribute",
                        ig__node_label(ex->node));
    fill_bytes(y->data, val, ingot_dtype_size(t), y->numel);
    return INGOT_OK;
}

const ig_op_def ig__op_constant_of_shape = {
    .name = "ConstantOfShape",
    .since = 9,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = 1u << 0,
    .infer = constant_of_shape_infer,
    .cpu = constant_of_shape_cpu,
    .flops = ig__flops_none,
};

/* ==== Shape ========================================================================================== */

/* [start, end) of the dims Shape reports (opset 15 attributes; negative counts from the end). */
static void shape_range(const ig_node *nd, int32_t rank, int32_t *b, int32_t *e)
{
    int64_t s = nd->opset >= 15 ? ig__attr_int(nd, "start", 0) : 0;
    int64_t en = nd->opset >= 15 ? ig__attr_int(nd, "end", rank) : rank;
    if (s < 0) s += rank;
    if (en < 0) en += rank;
    s = s < 0 ? 0 : s > rank ? rank : s;
    en = en < 0 ? 0 : en > rank ? rank : en;
    *b = (int32_t)s;
    *e = (int32_t)(en > s ? en : s);
}

static ingot_status shape_infer(ig_infer *cx)
{
    ingot_status st;
    ig_value *x = ig__in(cx, 0);
    ig_shape s;
    s.rank = 1;
    if (x->shape.rank < 0) {
        s.d[0] = ig__dim_fresh(cx);
        return ig__set_out(cx, 0, INGOT_DTYPE_INT64, &s);
    }
    int32_t b, e;
    shape_range(cx->node, x->shape.rank, &b, &e);
    s.d[0] = ig__dim_const(e - b);
    IG_TRY(st, ig__set_out(cx, 0, INGOT_DTYPE_INT64, &s), out);
    /* the root of symbolic propagation: the output's values are the input's dims */
    IG_TRY(st, ig__set_out_sym(cx, 0, x->shape.d + b, e - b), out);
    /* all of them concrete: the output is a constant (its input's data never matters), so the shape
     * sub-graph behind it folds away */
    ig_value *y = ig__out(cx, 0);
    bool known = true;
    for (int32_t a = b; a < e; a++) known &= ig__dim_known(x->shape.d[a]);
    if (y && known) {
        int64_t *data = ig__arena_array(cx->fold_arena, (size_t)(e - b) + 1, sizeof(int64_t));
        if (!data) return ig__fail(cx, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
        for (int32_t a = b; a < e; a++) data[a - b] = x->shape.d[a].n;
        memset(&y->c, 0, sizeof y->c);
        y->c.dtype = INGOT_DTYPE_INT64;
        y->c.rank = 1;
        y->c.dims[0] = e - b;
        y->c.data = data;
        y->c.n_bytes = sizeof(int64_t) * (size_t)(e - b);
        y->c.name = y->name;
        y->flags |= IG_VAL_CONST;
    }
out:
    return st;
}

static ingot_status shape_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    int32_t b, e;
    shape_range(ex->node, x->rank, &b, &e);
    if (y->numel != e - b)
        return ig__errf(ex->err, INGOT_ERR_INTERNAL, "node '%s' (Shape): output has %" PRId64 " elements, not %d",
                        ig__node_label(ex->node), y->numel, (int)(e - b));
    for (int32_t a = b; a < e; a++) ((int64_t *)y->data)[a - b] = x->dims[a];
    return INGOT_OK;
}

const ig_op_def ig__op_shape = {
    .name = "Shape",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = shape_infer,
    .cpu = shape_cpu,
    .flops = ig__flops_none,
};

/* ==== Range ========================================================================================== */

#define RANGE_TYPES (IG_TS_FLOAT | IG_T(INT16) | IG_T(INT32) | IG_T(INT64))

/* ceil((limit - start) / delta), at least 0, as ONNX Runtime computes it for each type. */
static bool range_count_i(int64_t start, int64_t limit, int64_t delta, int64_t *n)
{
    int64_t diff;
    if (delta == 0 || __builtin_sub_overflow(limit, start, &diff)) return false;
    int64_t q = diff / delta, r = diff % delta;
    if (r != 0 && ((r > 0) == (delta > 0))) q++;
    *n = q > 0 ? q : 0;
    return true;
}

static bool range_count_f(ingot_dtype t, double start, double limit, double delta, int64_t *n)
{
    if (delta == 0) return false;
    double diff = t == INGOT_DTYPE_DOUBLE ? limit - start : (double)((float)limit - (float)start);
    double c = ceil(diff / delta);
    if (!(c < 9.2e18)) return false; /* also NaN */
    *n = c > 0 ? (int64_t)c : 0;
    return true;
}

static ingot_status range_infer(ig_infer *cx)
{
    ingot_status st;
    ig_value *v0 = ig__in(cx, 0);
    IG_TRY(st, ig__check_dtype(cx, 0, RANGE_TYPES), out);
    for (int i = 1; i < 3; i++) {
        ig_value *v = ig__in(cx, i);
        if (v->dtype != v0->dtype)
            return ig__fail_shape(cx, "input %d '%s' has dtype %s but 'start' has %s", i, v->name,
                                  ingot_dtype_name(v->dtype), ingot_dtype_name(v0->dtype));
    }
    for (int i = 0; i < 3; i++) {
        ig_value *v = ig__in(cx, i);
        int64_t numel;
        if (ig__shape_numel(&v->shape, &numel) && numel != 1)
            return ig__fail_shape(cx, "input %d '%s' must be a scalar", i, v->name);
    }
    ingot_dtype t = v0->dtype;
    ig_shape s;
    s.rank = 1;
    s.d[0] = ig__dim_fresh(cx);
    ig_dim d[3];
    bool known[3], isint = ig__dtype_is_int(t);
    int64_t n = -1;
    if (isint) {
        for (int i = 0; i < 3; i++) {
            int32_t c;
            known[i] = ig__in_vals(cx, i, &d[i], 1, &c) && c == 1;
        }
        if (known[0] && known[1] && known[2] && ig__dim_known(d[0]) && ig__dim_known(d[1]) && ig__dim_known(d[2])) {
            if (!range_count_i(d[0].n, d[1].n, d[2].n, &n))
                return ig__fail_shape(cx, "delta is 0 or the range overflows");
            s.d[0] = ig__dim_const(n);
        } else if (known[0] && known[1] && known[2] && ig__dim_known(d[0]) && ig__dim_known(d[2]) && d[2].n == 1) {
            ig_dim len; /* Range(0, seq, 1): seq elements */
            if (ig__dim_sub(d[1], d[0], &len)) s.d[0] = len;
        }
    } else {
        double f[3];
        if (ig__in_scalar_f64(cx, 0, &f[0]) && ig__in_scalar_f64(cx, 1, &f[1]) && ig__in_scalar_f64(cx, 2, &f[2])) {
            if (!range_count_f(t, f[0], f[1], f[2], &n))
                return ig__fail_shape(cx, "delta is 0 or the range is not finite");
            s.d[0] = ig__dim_const(n);
        }
    }
    IG_TRY(st, ig__set_out(cx, 0, t, &s), out);
    if (isint && n > 0 && n <= IG_MAX_SYMVAL) {
        ig_dim vals[IG_MAX_SYMVAL];
        for (int64_t k = 0; k < n; k++) vals[k] = ig__dim_const(d[0].n + k * d[2].n);
        st = ig__set_out_sym(cx, 0, vals, (int32_t)n);
    }
out:
    return st;
}

static ingot_status range_cpu(ig_exec *ex)
{
    ig_tensor *y = ex->out[0];
    ingot_dtype t = y->dtype;
    int64_t n;
    bool ok;
    if (ig__dtype_is_int(t)) {
        int64_t a = ig__elem_i64(t, ex->in[0]->data, 0), l = ig__elem_i64(t, ex->in[1]->data, 0);
        int64_t dl = ig__elem_i64(t, ex->in[2]->data, 0);
        ok = range_count_i(a, l, dl, &n) && n == y->numel;
        if (ok)
            for (int64_t k = 0; k < n; k++) ig__elem_set_i64(t, y->data, k, a + k * dl);
    } else {
        double a = ig__elem_f64(t, ex->in[0]->data, 0), l = ig__elem_f64(t, ex->in[1]->data, 0);
        double dl = ig__elem_f64(t, ex->in[2]->data, 0);
        ok = range_count_f(t, a, l, dl, &n) && n == y->numel;
        /* float16/bfloat16: computed in float, rounded once on the store */
        if (ok && t == INGOT_DTYPE_DOUBLE)
            for (int64_t k = 0; k < n; k++) ((double *)y->data)[k] = a + (double)k * dl;
        else if (ok)
            for (int64_t k = 0; k < n; k++) ig__elem_set_f64(t, y->data, k, (float)a + (float)k * (float)dl);
    }
    if (!ok)
        return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE,
                        "node '%s' (Range): inputs give a different length than the "
                        "%" PRId64 " planned, or delta is 0",
                        ig__node_label(ex->node), y->numel);
    return INGOT_OK;
}

const ig_op_def ig__op_range = {
    .name = "Range",
    .since = 11,
    .min_in = 3,
    .max_in = 3,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = 7u,
    .infer = range_infer,
    .cpu = range_cpu,
    .flops = ig__flops_none,
};

/* ==== Expand ========================================================================================= */

static ingot_status expand_infer(ig_infer *cx)
{
    ingot_status st;
    ig_value *x = ig__in(cx, 0);
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    IG_TRY(st, ig__check_dtype(cx, 1, IG_T(INT64)), out);
    ig_dim dims[IG_MAX_RANK];
    int32_t n;
    ig_shape target, s;
    if (ig__in_vals(cx, 1, dims, IG_MAX_RANK, &n)) {
        target.rank = n;
        for (int32_t a = 0; a < n; a++) {
            if (ig__dim_known(dims[a]) && dims[a].n < 0)
                return ig__fail_shape(cx, "shape entry %d is negative (%" PRId64 ")", (int)a, dims[a].n);
            target.d[a] = dims[a];
        }
    } else {
        IG_TRY(st, shape_operand_unknown(cx, 1, &target), out);
    }
    IG_TRY(st, ig__broadcast(cx, &x->shape, &target, &s), out);
    IG_TRY(st, ig__set_out(cx, 0, x->dtype, &s), out);
    /* Expand of a scalar shape value to [n] (seen in masks): keep the values */
    int64_t numel;
    ig_dim vals[IG_MAX_SYMVAL];
    int32_t nv;
    if (s.rank == 1 && ig__dtype_is_int(x->dtype) && ig__shape_numel(&s, &numel) && numel <= IG_MAX_SYMVAL &&
        ig__in_vals(cx, 0, vals, IG_MAX_SYMVAL, &nv) && (nv == 1 || nv == numel) && numel > 0) {
        ig_dim res[IG_MAX_SYMVAL];
        for (int64_t k = 0; k < numel; k++) res[k] = vals[nv == 1 ? 0 : k];
        st = ig__set_out_sym(cx, 0, res, (int32_t)numel);
    }
out:
    return st;
}

static ingot_status expand_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    int64_t ss[IG_MAX_RANK], ds[IG_MAX_RANK];
    for (int32_t a = 0; a < y->rank; a++) {
        int32_t b = a - (y->rank - x->rank);
        if (b >= 0 && x->dims[b] != 1 && x->dims[b] != y->dims[a])
            return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE,
                            "node '%s' (Expand): input dim %" PRId64 " cannot expand to %" PRId64,
                            ig__node_label(ex->node), x->dims[b], y->dims[a]);
    }
    if (y->numel == 0) return INGOT_OK;
    ig__broadcast_strides(x, y->rank, y->dims, ss);
    ig__strides(y, ds);
    ig__copy_strided(ex->pool, ingot_dtype_size(x->dtype), y->rank, y->dims, x->data, ss, y->data, ds);
    return INGOT_OK;
}

const ig_op_def ig__op_expand = {
    .name = "Expand",
    .since = 8,
    .min_in = 2,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = 1u << 1,
    .infer = expand_infer,
    .cpu = expand_cpu,
    .flops = ig__flops_none,
};

/* ==== Tile =========================================================================================== */

static ingot_status tile_infer(ig_infer *cx)
{
    ingot_status st;
    ig_value *x = ig__in(cx, 0);
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    IG_TRY(st, ig__check_dtype(cx, 1, IG_T(INT64)), out);
    ig_dim reps[IG_MAX_RANK];
    int32_t n;
    bool known = ig__in_vals(cx, 1, reps, IG_MAX_RANK, &n);
    if (x->shape.rank < 0) return set_unknown_rank(cx, 0, x->dtype);
    ig_shape s = x->shape;
    if (known) {
        if (n != s.rank)
            return ig__fail_shape(cx, "'repeats' has %d entries for an input of rank %d", (int)n, (int)s.rank);
        for (int32_t a = 0; a < n; a++) {
            if (ig__dim_known(reps[a]) && reps[a].n < 0)
                return ig__fail_shape(cx, "repeat %d is negative (%" PRId64 ")", (int)a, reps[a].n);
            if (!ig__dim_mul(x->shape.d[a], reps[a], &s.d[a])) s.d[a] = ig__dim_fresh(cx);
        }
    } else {
        for (int32_t a = 0; a < s.rank; a++) s.d[a] = ig__dim_fresh(cx);
    }
    st = ig__set_out(cx, 0, x->dtype, &s);
out:
    return st;
}

static ingot_status tile_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    int32_t r = x->rank;
    for (int32_t a = 0; a < r; a++)
        if (x->dims[a] == 0 ? y->dims[a] != 0 : y->dims[a] % x->dims[a] != 0)
            return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE,
                            "node '%s' (Tile): output dim %" PRId64 " is not a multiple of input dim %" PRId64,
                            ig__node_label(ex->node), y->dims[a], x->dims[a]);
    if (y->numel == 0) return INGOT_OK;
    /* axis a of the output splits into (repeat, dim): the source ignores the repeat index */
    int64_t xs[IG_MAX_RANK], ys[IG_MAX_RANK], dims[2 * IG_MAX_RANK], ss[2 * IG_MAX_RANK], ds[2 * IG_MAX_RANK];
    ig__strides(x, xs);
    ig__strides(y, ys);
    for (int32_t a = 0; a < r; a++) {
        dims[2 * a] = y->dims[a] / x->dims[a];
        dims[2 * a + 1] = x->dims[a];
        ss[2 * a] = 0;
        ss[2 * a + 1] = xs[a];
        ds[2 * a] = x->dims[a] * ys[a];
        ds[2 * a + 1] = ys[a];
    }
    ig__copy_strided(ex->pool, ingot_dtype_size(x->dtype), 2 * r, dims, x->data, ss, y->data, ds);
    return INGOT_OK;
}

const ig_op_def ig__op_tile = {
    .name = "Tile",
    .since = 6,
    .min_in = 2,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = 1u << 1,
    .infer = tile_infer,
    .cpu = tile_cpu,
    .flops = ig__flops_none,
};

/* ==== Reshape ======================================================================================== */

static ingot_status reshape_infer(ig_infer *cx)
{
    ingot_status st;
    ig_value *x = ig__in(cx, 0);
    char b1[256], b2[256];
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    IG_TRY(st, ig__check_dtype(cx, 1, IG_T(INT64)), out);
    bool allowzero = cx->node->opset >= 14 && ig__attr_int(cx->node, "allowzero", 0) != 0;
    ig_dim tv[IG_MAX_RANK];
    int32_t n;
    ig_shape s;
    if (!ig__in_vals(cx, 1, tv, IG_MAX_RANK, &n)) {
        IG_TRY(st, shape_operand_unknown(cx, 1, &s), out);
        return ig__set_out(cx, 0, x->dtype, &s);
    }
    s.rank = n;
    int32_t neg = -1;
    bool zero = false;
    for (int32_t a = 0; a < n; a++) {
        ig_dim d = tv[a];
        if (!ig__dim_known(d)) {
            s.d[a] = d;
        } else if (d.n == -1) {
            if (neg >= 0) return ig__fail_shape(cx, "shape has more than one -1 (entries %d and %d)", (int)neg, (int)a);
            neg = a;
            s.d[a] = ig__dim_const(1); /* placeholder */
        } else if (d.n < -1) {
            return ig__fail_shape(cx, "shape entry %d is %" PRId64 "", (int)a, d.n);
        } else if (d.n == 0 && !allowzero) {
            if (x->shape.rank < 0)
                s.d[a] = ig__dim_fresh(cx);
            else if (a >= x->shape.rank)
                return ig__fail_shape(cx, "shape entry %d is 0 (copy the input dim) but the input has rank %d", (int)a,
                                      (int)x->shape.rank);
            else
                s.d[a] = x->shape.d[a];
        } else {
            zero |= d.n == 0;
            s.d[a] = d;
        }
    }
    if (allowzero && zero && neg >= 0) return ig__fail_shape(cx, "shape has both 0 and -1 with allowzero=1");
    if (x->shape.rank < 0) {
        if (neg >= 0) s.d[neg] = ig__dim_fresh(cx);
        return ig__set_out(cx, 0, x->dtype, &s);
    }
    mono num, den;
    shape_mono(&x->shape, 0, x->shape.rank, -1, &num);
    shape_mono(&s, 0, s.rank, neg, &den);
    if (num.ok && den.ok) {
        mono_cancel(&num, &den);
        if (neg >= 0) {
            if (den.n == 0 && num.n <= 1 && den.coef != 0 && num.coef % den.coef == 0) {
                num.coef /= den.coef;
                if (!mono_dim(&num, &s.d[neg])) s.d[neg] = ig__dim_fresh(cx);
            } else if (num.n == 0 && den.n == 0) {
                return ig__fail_shape(cx, "cannot reshape %s (%" PRId64 " elements) to %s: -1 does not divide evenly",
                                      ig__shape_str(cx->g, &x->shape, b1, sizeof b1), num.coef,
                                      ig__shape_str(cx->g, &s, b2, sizeof b2));
            } else {
                s.d[neg] = ig__dim_fresh(cx);
            }
        } else if (num.n == 0 && den.n == 0 && num.coef != den.coef) {
            return ig__fail_shape(cx, "cannot reshape %s (%" PRId64 " elements) to %s (%" PRId64 " elements)",
                                  ig__shape_str(cx->g, &x->shape, b1, sizeof b1), num.coef,
                                  ig__shape_str(cx->g, &s, b2, sizeof b2), den.coef);
        }
    } else if (neg >= 0) {
        s.d[neg] = ig__dim_fresh(cx);
    }
    IG_TRY(st, ig__set_out(cx, 0, x->dtype, &s), out);
    st = pass_vals(cx, &s);
out:
    return st;
}

const ig_op_def ig__op_reshape = {
    .name = "Reshape",
    .since = 5,
    .min_in = 2,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = 1u << 1,
    .flags = IG_OP_ALIAS,
    .infer = reshape_infer,
    .cpu = alias_cpu,
    .flops = ig__flops_none,
};

/* ==== Flatten ======================================================================================== */

static ingot_status flatten_infer(ig_infer *cx)
{
    ingot_status st;
    ig_value *x = ig__in(cx, 0);
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    ig_shape s;
    s.rank = 2;
    if (x->shape.rank < 0) {
        s.d[0] = ig__dim_fresh(cx);
        s.d[1] = ig__dim_fresh(cx);
        return ig__set_out(cx, 0, x->dtype, &s);
    }
    int32_t r = x->shape.rank;
    int64_t axis = ig__attr_int(cx->node, "axis", 1);
    if (axis < -(int64_t)r || axis > r)
        return ig__fail_shape(cx, "attribute 'axis' %" PRId64 " is out of range for rank %d", axis, (int)r);
    if (axis < 0) axis += r;
    mono m;
    for (int k = 0; k < 2; k++) {
        shape_mono(&x->shape, k ? (int32_t)axis : 0, k ? r : (int32_t)axis, -1, &m);
        if (!mono_dim(&m, &s.d[k])) s.d[k] = ig__dim_fresh(cx);
    }
    st = ig__set_out(cx, 0, x->dtype, &s);
out:
    return st;
}

const ig_op_def ig__op_flatten = {
    .name = "Flatten",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .flags = IG_OP_ALIAS,
    .infer = flatten_infer,
    .cpu = alias_cpu,
    .flops = ig__flops_none,
};

/* ==== Squeeze / Unsqueeze ============================================================================ */

/* The axes, from the attribute (< 13) or input 1 (>= 13). *given false when absent; *known false when
 * the axes input's values come at run time but its length (*n) is known. */
static ingot_status squeeze_axes(ig_infer *cx, int64_t *axes, int32_t *n, bool *given, bool *known)
{
    *n = 0;
    *given = false;
    *known = true;
    if (cx->node->opset < 13) {
        const int64_t *p;
        int64_t c;
        if (!ig__attr_ints(cx->node, "axes", &p, &c)) return INGOT_OK;
        if (c > IG_MAX_RANK) return ig__fail_shape(cx, "attribute 'axes' has %" PRId64 " entries", c);
        memcpy(axes, p, sizeof(int64_t) * (size_t)c);
        *n = (int32_t)c;
        *given = true;
        return INGOT_OK;
    }
    if (!ig__in(cx, 1)) return INGOT_OK;
    ingot_status st = ig__check_dtype(cx, 1, IG_T(INT64));
    if (st != INGOT_OK) return st;
    *given = true;
    ig_value *v = ig__in(cx, 1);
    if (!ig__in_known(cx, 1) && v->shape.rank == 1 && ig__dim_known(v->shape.d[0]) && v->shape.d[0].n <= IG_MAX_RANK) {
        *n = (int32_t)v->shape.d[0].n; /* values bound at run time: only the count is known */
        *known = false;
        return INGOT_OK;
    }
    int64_t c;
    st = ig__in_ints(cx, 1, axes, IG_MAX_RANK, &c);
    *n = (int32_t)c;
    return st;
}

/* Output of rank r whose dims are not known until the axes are (fresh symbols). */
static ingot_status set_fresh_rank(ig_infer *cx, ingot_dtype t, int32_t r)
{
    ig_shape s;
    if (r < 0) return ig__fail_shape(cx, "input 'axes' has more entries than the input has dims");
    if (r > IG_MAX_RANK)
        return ig__unsupported(cx, "output would have rank %d; ingot supports at most %d", (int)r, IG_MAX_RANK);
    s.rank = r;
    for (int32_t a = 0; a < r; a++) s.d[a] = ig__dim_fresh(cx);
    return ig__set_out(cx, 0, t, &s);
}

static ingot_status squeeze_infer(ig_infer *cx)
{
    ingot_status st;
    ig_value *x = ig__in(cx, 0);
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    int64_t axes[IG_MAX_RANK];
    int32_t n;
    bool given;
    bool known;
    IG_TRY(st, squeeze_axes(cx, axes, &n, &given, &known), out);
    if (!known)
        return x->shape.rank < 0 ? set_unknown_rank(cx, 0, x->dtype) : set_fresh_rank(cx, x->dtype, x->shape.rank - n);
    if (x->shape.rank < 0) return set_unknown_rank(cx, 0, x->dtype);
    int32_t r = x->shape.rank;
    bool drop[IG_MAX_RANK] = {false};
    for (int32_t k = 0; k < n; k++) {
        int32_t a;
        IG_TRY(st, ig__norm_axis(cx, axes[k], r, "squeeze axis", &a), out);
        if (drop[a]) return ig__fail_shape(cx, "axis %d is listed twice", (int)a);
        ig_dim d = x->shape.d[a];
        if (ig__dim_known(d) && d.n != 1)
            return ig__fail_shape(cx, "cannot squeeze axis %d of size %" PRId64, (int)a, d.n);
        drop[a] = true; /* a symbolic dim squeezed must be 1 at run time */
    }
    if (!given)
        for (int32_t a = 0; a < r; a++) drop[a] = ig__dim_known(x->shape.d[a]) && x->shape.d[a].n == 1;
    ig_shape s;
    s.rank = 0;
    for (int32_t a = 0; a < r; a++)
        if (!drop[a]) s.d[s.rank++] = x->shape.d[a];
    IG_TRY(st, ig__set_out(cx, 0, x->dtype, &s), out);
    st = pass_vals(cx, &s);
out:
    return st;
}

const ig_op_def ig__op_squeeze = {
    .name = "Squeeze",
    .since = 1,
    .min_in = 1,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = 1u << 1,
    .flags = IG_OP_ALIAS,
    .infer = squeeze_infer,
    .cpu = alias_cpu,
    .flops = ig__flops_none,
};

static ingot_status unsqueeze_infer(ig_infer *cx)
{
    ingot_status st;
    ig_value *x = ig__in(cx, 0);
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    int64_t axes[IG_MAX_RANK];
    int32_t n;
    bool given;
    bool known;
    IG_TRY(st, squeeze_axes(cx, axes, &n, &given, &known), out);
    if (!known)
        return x->shape.rank < 0 ? set_unknown_rank(cx, 0, x->dtype) : set_fresh_rank(cx, x->dtype, x->shape.rank + n);
    if (!given)
        return ig__fail_shape(cx, cx->node->opset < 13 ? "attribute 'axes' is required" : "input 'axes' is required");
    if (x->shape.rank < 0) return set_unknown_rank(cx, 0, x->dtype);
    int32_t r = x->shape.rank + n;
    if (r > IG_MAX_RANK)
        return ig__unsupported(cx, "output would have rank %d; ingot supports at most %d", (int)r, IG_MAX_RANK);
    bool ins[IG_MAX_RANK] = {false};
    for (int32_t k = 0; k < n; k++) {
        int32_t a;
        IG_TRY(st, ig__norm_axis(cx, axes[k], r, "unsqueeze axis", &a), out);
        if (ins[a]) return ig__fail_shape(cx, "axis %d is listed twice", (int)a);
        ins[a] = true;
    }
    ig_shape s;
    s.rank = r;
    for (int32_t a = 0, b = 0; a < r; a++) s.d[a] = ins[a] ? ig__dim_const(1) : x->shape.d[b++];
    IG_TRY(st, ig__set_out(cx, 0, x->dtype, &s), out);
    st = pass_vals(cx, &s);
out:
    return st;
}

const ig_op_def ig__op_unsqueeze = {
    .name = "Unsqueeze",
    .since = 1,
    .min_in = 1,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = 1u << 1,
    .flags = IG_OP_ALIAS,
    .infer = unsqueeze_infer,
    .cpu = alias_cpu,
    .flops = ig__flops_none,
};
