/* helpers.c -- what op descriptors share: input/output access during inference, attributes,
 * symbolic dim arithmetic, broadcasting, strides. */
#include "op.h"

#include <inttypes.h>
#include <stdio.h>

ig_value *ig__in(ig_infer *cx, int i)
{
    if (i < 0 || i >= cx->node->n_inputs || cx->node->inputs[i] < 0) return NULL;
    return &cx->g->values[cx->node->inputs[i]];
}

ig_value *ig__out(ig_infer *cx, int i)
{
    if (i < 0 || i >= cx->node->n_outputs || cx->node->outputs[i] < 0) return NULL;
    return &cx->g->values[cx->node->outputs[i]];
}

int ig__n_in(const ig_infer *cx) { return cx->node->n_inputs; }

ingot_status ig__fail(ig_infer *cx, ingot_status st, const char *fmt, ...)
{
    char msg[IG_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ig__errf(cx->err, st, "node '%s' (%s): %s", ig__node_label(cx->node), cx->node->op_type, msg);
}

ingot_status ig__set_out(ig_infer *cx, int i, ingot_dtype t, const ig_shape *s)
{
    ig_value *v = ig__out(cx, i);
    if (!v) return INGOT_OK;
    if (s->rank > IG_MAX_RANK)
        return ig__unsupported(cx, "output '%s' would have rank %d; ingot supports at most %d", v->name, (int)s->rank,
                               IG_MAX_RANK);
    for (int32_t k = 0; k < s->rank; k++)
        if (s->d[k].sym == IG_NOSYM && s->d[k].n < 0)
            return ig__fail_shape(cx, "output '%s' would have negative dim %" PRId64 " at axis %d", v->name, s->d[k].n,
                                  (int)k);
    int64_t numel;
    size_t bytes;
    if (ig__shape_known(s) &&
        (!ig__shape_numel(s, &numel) || !ig__mul_size((size_t)numel, ingot_dtype_size(t), &bytes)))
        return ig__fail_shape(cx, "output '%s' would have more elements than ingot can address", v->name);
    v->dtype = t;
    v->shape = *s;
    return INGOT_OK;
}

ingot_status ig__set_out_sym(ig_infer *cx, int i, const ig_dim *vals, int32_t n)
{
    ig_value *v = ig__out(cx, i);
    if (!v || n <= 0 || n > IG_MAX_SYMVAL) return INGOT_OK;
    ig_dim *s = ig__arena_array(cx->fold_arena, (size_t)n, sizeof(ig_dim));
    if (!s) return ig__fail(cx, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(s, vals, sizeof(ig_dim) * (size_t)n);
    v->sym = s;
    v->n_sym = n;
    return INGOT_OK;
}

ingot_status ig__check_dtype(ig_infer *cx, int i, uint32_t mask)
{
    ig_value *v = ig__in(cx, i);
    if (!v) return INGOT_OK;
    if ((unsigned)v->dtype < 32 && (mask & (1u << v->dtype))) return INGOT_OK;
    return ig__unsupported(cx, "input %d '%s' has dtype %s, which this op does not support", i, v->name,
                           ingot_dtype_name(v->dtype));
}

ig_dim ig__dim_fresh(ig_infer *cx)
{
    int32_t s = ig__graph_symbol(cx->g, NULL);
    ig_dim d = {1, s};
    if (s < 0) d = ig__dim_const(-1); /* out of memory: caller's set_out reports it */
    return d;
}

bool ig__dim_mul(ig_dim a, ig_dim b, ig_dim *r)
{
    if (a.sym != IG_NOSYM && b.sym != IG_NOSYM) return false;
    ig_dim out;
    if (!ig__mul_i64(a.n, b.n, &out.n)) return false;
    out.sym = a.sym != IG_NOSYM ? a.sym : b.sym;
    if (out.sym != IG_NOSYM && out.n == 0) out.sym = IG_NOSYM; /* 0 * batch = 0 */
    *r = out;
    return true;
}

bool ig__dim_div(ig_dim a, ig_dim b, ig_dim *r)
{
    if (b.n == 0) return false;
    if (b.sym != IG_NOSYM) {
        if (a.sym == b.sym && a.n % b.n == 0) { /* (6*s)/(2*s) = 3 */
            *r = ig__dim_const(a.n / b.n);
            return true;
        }
        return false;
    }
    if (a.n % b.n != 0) return false;
    r->n = a.n / b.n;
    r->sym = a.sym;
    if (r->sym != IG_NOSYM && r->n <= 0) return false;
    return true;
}

bool ig__dim_add(ig_dim a, ig_dim b, ig_dim *r)
{
    if (a.sym == IG_NOSYM && b.sym == IG_NOSYM) {
        r->sym = IG_NOSYM;
        return ig__add_i64(a.n, b.n, &r->n);
    }
    if (a.sym == b.sym) { /* 2*s + 3*s = 5*s */
        r->sym = a.sym;
        return ig__add_i64(a.n, b.n, &r->n);
    }
    if (a.sym != IG_NOSYM && b.sym == IG_NOSYM && b.n == 0) {
        *r = a;
        return true;
    }
    if (b.sym != IG_NOSYM && a.sym == IG_NOSYM && a.n == 0) {
        *r = b;
        return true;
    }
    return false;
}

bool ig__dim_sub(ig_dim a, ig_dim b, ig_dim *r)
{
    if (a.sym == IG_NOSYM && b.sym == IG_NOSYM) {
        r->sym = IG_NOSYM;
        return !__builtin_sub_overflow(a.n, b.n, &r->n);
    }
    if (a.sym == b.sym) {
        int64_t n;
        if (__builtin_sub_overflow(a.n, b.n, &n)) return false;
        if (n == 0) {
            *r = ig__dim_const(0);
            return true;
        }
        if (n < 0) return false;
        r->n = n;
        r->sym = a.sym;
        return true;
    }
    if (a.sym != IG_NOSYM && b.sym == IG_NOSYM && b.n == 0) {
        *r = a;
        return true;
    }
    return false;
}

ingot_status ig__broadcast(ig_infer *cx, const ig_shape *a, const ig_shape *b, ig_shape *out)
{
    if (a->rank < 0 || b->rank < 0) {
        out->rank = -1;
        return INGOT_OK;
    }
    int32_t r = a->rank > b->rank ? a->rank : b->rank;
    out->rank = r;
    for (int32_t i = 0; i < r; i++) {
        int32_t ia = i - (r - a->rank), ib = i - (r - b->rank);
        ig_dim da = ia >= 0 ? a->d[ia] : ig__dim_const(1);
        ig_dim db = ib >= 0 ? b->d[ib] : ig__dim_const(1);
        if (ig__dim_eq(da, db))
            out->d[i] = da;
        else if (ig__dim_known(da) && da.n == 1)
            out->d[i] = db;
        else if (ig__dim_known(db) && db.n == 1)
            out->d[i] = da;
        else if (!ig__dim_known(da) && !ig__dim_known(db))
            out->d[i] = ig__dim_fresh(cx);
        else if (!ig__dim_known(da))
            out->d[i] = db; /* a symbolic dim broadcast against n must be n (or 1) */
        else if (!ig__dim_known(db))
            out->d[i] = da;
        else {
            char sa[256], sb[256];
            return ig__fail_shape(cx, "shapes %s and %s cannot be broadcast (axis %d: %" PRId64 " vs %" PRId64 ")",
                                  ig__shape_str(cx->g, a, sa, sizeof sa), ig__shape_str(cx->g, b, sb, sizeof sb),
                                  (int)i, da.n, db.n);
        }
    }
    return INGOT_OK;
}

ingot_status ig__norm_axis(ig_infer *cx, int64_t axis, int32_t rank, const char *what, int32_t *out)
{
    if (axis < -(int64_t)rank || axis >= rank)
        return ig__fail_shape(cx, "%s %" PRId64 " is out of range for rank %d", what, axis, (int)rank);
    *out = (int32_t)(axis < 0 ? axis + rank : axis);
    return INGOT_OK;
}

int64_t ig__attr_int(const ig_node *n, const char *name, int64_t def)
{
    const ig_attr *a = ig__node_attr(n, name);
    return a && a->type == IG_ATTR_INT ? a->i : def;
}

float ig__attr_float(const ig_node *n, const char *name, float def)
{
    const ig_attr *a = ig__node_attr(n, name);
    if (!a) return def;
    if (a->type == IG_ATTR_FLOAT) return a->f;
    if (a->type == IG_ATTR_INT) return (float)a->i;
    return def;
}

const char *ig__attr_str(const ig_node *n, const char *name, const char *def)
{
    const ig_attr *a = ig__node_attr(n, name);
    return a && a->type == IG_ATTR_STRING ? a->s : def;
}

bool ig__attr_ints(const ig_node *n, const char *name, const int64_t **v, int64_t *count)
{
    const ig_attr *a = ig__node_attr(n, name);
    if (!a || a->type != IG_ATTR_INTS) return false;
    *v = a->ints;
    *count = a->n;
    return true;
}

bool ig__attr_floats(const ig_node *n, const char *name, const float **v, int64_t *count)
{
    const ig_attr *a = ig__node_attr(n, name);
    if (!a || a->type != IG_ATTR_FLOATS) return false;
    *v = a->floats;
    *count = a->n;
    return true;
}

int ig__str_index(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

bool ig__in_known(ig_infer *cx, int i)
{
    ig_value *v = ig__in(cx, i);
    if (!v) return false;
    if (v->flags & IG_VAL_CONST) return true;
    if (v->n_sym <= 0) return false;
    for (int32_t k = 0; k < v->n_sym; k++)
        if (v->sym[k].sym != IG_NOSYM) return false;
    return true;
}

ingot_status ig__in_ints(ig_infer *cx, int i, int64_t *out, int64_t max, int64_t *count)
{
    ig_value *v = ig__in(cx, i);
    if (!v) return ig__fail_shape(cx, "input %d is missing", i);
    if (v->flags & IG_VAL_CONST) {
        size_t es = ingot_dtype_size(v->c.dtype);
        int64_t n = es ? (int64_t)(v->c.n_bytes / es) : 0;
        if (!ig__dtype_is_int(v->c.dtype) && v->c.dtype != INGOT_DTYPE_BOOL)
            return ig__unsupported(cx, "input '%s' must be an integer tensor, not %s", v->name,
                                   ingot_dtype_name(v->c.dtype));
        if (n > max)
            return ig__unsupported(cx, "input '%s' has %" PRId64 " values; at most %" PRId64 " supported", v->name, n,
                                   max);
        for (int64_t k = 0; k < n; k++) out[k] = ig__elem_i64(v->c.dtype, v->c.data, k);
        *count = n;
        return INGOT_OK;
    }
    if (ig__in_known(cx, i)) {
        if (v->n_sym > max) return ig__unsupported(cx, "input '%s' has too many values", v->name);
        for (int32_t k = 0; k < v->n_sym; k++) out[k] = v->sym[k].n;
        *count = v->n_sym;
        return INGOT_OK;
    }
    return ig__unsupported(cx,
                           "input '%s' must be known when the engine is built (a constant, an initializer, or "
                           "computed from shapes), but it depends on run-time data",
                           v->name);
}

bool ig__in_dims(ig_infer *cx, int i, ig_dim *out, int32_t max, int32_t *count)
{
    ig_value *v = ig__in(cx, i);
    if (!v) return false;
    if (v->n_sym > 0) {
        if (v->n_sym > max) return false;
        memcpy(out, v->sym, sizeof(ig_dim) * (size_t)v->n_sym);
        *count = v->n_sym;
        return true;
    }
    if (v->flags & IG_VAL_CONST) {
        size_t es = ingot_dtype_size(v->c.dtype);
        int64_t n = es ? (int64_t)(v->c.n_bytes / es) : 0;
        if (n > max || !(ig__dtype_is_int(v->c.dtype) || v->c.dtype == INGOT_DTYPE_BOOL)) return false;
        for (int64_t k = 0; k < n; k++) out[k] = ig__dim_const(ig__elem_i64(v->c.dtype, v->c.data, k));
        *count = (int32_t)n;
        return true;
    }
    return false;
}

bool ig__in_vals(ig_infer *cx, int i, ig_dim *out, int32_t max, int32_t *count)
{
    if (ig__in_dims(cx, i, out, max, count)) return true;
    ig_value *v = ig__in(cx, i);
    if (v && v->shape.rank == 1 && ig__dim_known(v->shape.d[0]) && v->shape.d[0].n == 0) {
        *count = 0;
        return true;
    }
    return false;
}

bool ig__in_scalar_f64(ig_infer *cx, int i, double *out)
{
    ig_value *v = ig__in(cx, i);
    if (!v || !(v->flags & IG_VAL_CONST)) return false;
    size_t es = ingot_dtype_size(v->c.dtype);
    if (!es || v->c.n_bytes != es) return false;
    *out = ig__elem_f64(v->c.dtype, v->c.data, 0);
    return true;
}

void ig__strides(const ig_tensor *t, int64_t *strides)
{
    int64_t s = 1;
    for (int32_t i = t->rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= t->dims[i];
    }
}

void ig__broadcast_strides(const ig_tensor *t, int32_t rank, const int64_t *dims, int64_t *strides)
{
    int64_t own[IG_MAX_RANK];
    ig__strides(t, own);
    int32_t off = rank - t->rank;
    for (int32_t i = 0; i < rank; i++) {
        int32_t j = i - off;
        strides[i] = (j < 0 || (t->dims[j] == 1 && dims[i] != 1)) ? 0 : own[j];
    }
}

void ig__tensor_set_shape(ig_tensor *t, ingot_dtype dtype, int32_t rank, const int64_t *dims)
{
    t->dtype = dtype;
    t->rank = rank;
    t->numel = 1;
    for (int32_t i = 0; i < rank; i++) {
        t->dims[i] = dims[i];
        t->numel *= dims[i];
    }
}
