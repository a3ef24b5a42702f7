/*
 * lower_select.c -- Hardmax, TopK and OneHot: one step of the selection kernels (kernels/select.cu) each,
 * over dense lines [outer, n, inner]. The inputs are read through one dense copy when they are views.
 */
#include "lower_internal.h"

/* The lines of a dense tensor of dims along axis: [outer, dims[axis], inner]. */
static void lines_of(int32_t rank, const int64_t *dims, int32_t axis, int64_t *outer, int64_t *inner)
{
    *outer = *inner = 1;
    for (int32_t k = 0; k < axis; k++) *outer *= dims[k];
    for (int32_t k = axis + 1; k < rank; k++) *inner *= dims[k];
}

/* A select step over x (-1: none) and values (-1) into y and idx (-1). */
static ingot_status select_step(ig_lower *L, int32_t id, const ig_select_args *a, int32_t xt, int32_t vt, int32_t yt,
                                int32_t it)
{
    ig_cu_step *s = ig__lw_kstep(L, IG_ST_SELECT, id, 4, (int32_t[]){xt, vt, yt, it});
    if (!s) return ig__lw_oom(L);
    s->u.k.a.sel = *a;
    return INGOT_OK;
}

static bool float_storage(ingot_dtype t)
{
    return t == INGOT_DTYPE_FLOAT || t == INGOT_DTYPE_FLOAT16 || t == INGOT_DTYPE_BFLOAT16;
}

/* The input of a line-wise op as a dense tensor and its axis (`axis` normalised): -1 after reporting
 * a dtype ok() refuses or an axis out of range. */
static int32_t line_input(ig_lower *L, int32_t id, bool (*ok)(ingot_dtype), int64_t axis, int32_t *ax)
{
    int32_t xt = ig__lw_contig(L, id, ig__lw_get(L, ig__lw_node(L, id)->inputs[0]));
    if (xt < 0) return -1;
    const ig_cu_tensor *x = ig__lw_T(L, xt);
    if (!ok(x->dtype)) {
        ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "%s inputs are not supported", ingot_dtype_name(x->dtype));
        return -1;
    }
    *ax = x->rank ? ig__lw_norm_axis(axis, x->rank) : -1;
    if (*ax < 0 || *ax >= x->rank) {
        ig__lw_fail(L, id, INGOT_ERR_MODEL_INVALID, "axis out of range");
        return -1;
    }
    return xt;
}

/* ---- Hardmax ----------------------------------------------------------------------------------------- */

/* Opset 13 along one axis (default -1); older opsets on the 2-D view [d0 * .. * d(axis-1), the rest]
 * (default axis 1), as src/ops/reduce.c. */
const char *ig__lw_supports_hardmax(const ig_graph *g, const ig_node *n)
{
    if (!float_storage(g->values[n->inputs[0]].dtype)) return "only fp32/fp16/bf16 inputs";
    return NULL;
}

ingot_status ig__lw_hardmax(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t ax, xt = line_input(L, id, float_storage, ig__attr_int(n, "axis", n->opset >= 13 ? -1 : 1), &ax);
    if (xt < 0) return ig__lw_status(L);
    const ig_cu_tensor x = *ig__lw_T(L, xt);
    ig_select_args a;
    memset(&a, 0, sizeof a);
    a.op = IG_SEL_HARDMAX;
    a.dtype = x.dtype;
    a.esize = (int32_t)ingot_dtype_size(x.dtype);
    lines_of(x.rank, x.dims, ax, &a.outer, &a.inner);
    a.n = x.dims[ax];
    if (n->opset < 13) { /* the axes from `axis` on are one line */
        a.n *= a.inner;
        a.inner = 1;
    }
    int32_t yt = ig__lw_dense(L, x.dtype, x.rank, x.dims, false);
    if (yt < 0) return ig__lw_oom(L);
    L->p->val_tensor[n->outputs[0]] = yt;
    return select_step(L, id, &a, xt, -1, yt, -1);
}

/* ---- TopK -------------------------------------------------------------------------------------------- */

static bool topk_dtype(ingot_dtype t) { return float_storage(t) || t == INGOT_DTYPE_INT32 || t == INGOT_DTYPE_INT64; }

/* k is the output's length along the axis (the graph is inferred at concrete shapes, K included). */
static const char *topk_limits(int64_t n, int64_t k)
{
    if (n > IG_TOPK_SORT_MAX && k > IG_TOPK_SELECT_MAX)
        return "TopK with k > 64 along an axis of more than 4096 elements (the kernel sorts lines of up to 4096 "
               "elements in shared memory, and selects at most 64 from longer ones)";
    return NULL;
}

const char *ig__lw_supports_topk(const ig_graph *g, const ig_node *n)
{
    const ig_value *x = &g->values[n->inputs[0]];
    if (!topk_dtype(x->dtype)) return "only fp32/fp16/bf16/int32/int64 inputs";
    int32_t r = x->shape.rank;
    int32_t ax = r > 0 ? ig__lw_norm_axis(ig__attr_int(n, "axis", -1), r) : -1;
    int32_t ov = n->outputs[0] >= 0 ? n->outputs[0] : n->outputs[1];
    if (ax < 0 || ax >= r || ov < 0 || g->values[ov].shape.rank != r) return NULL; /* the lowering reports it */
    ig_dim nd = x->shape.d[ax], kd = g->values[ov].shape.d[ax];
    if (ig__dim_known(nd) && ig__dim_known(kd)) return topk_limits(nd.n, kd.n);
    return NULL;
}

ingot_status ig__lw_topk(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t ax, xt = line_input(L, id, topk_dtype, ig__attr_int(n, "axis", -1), &ax);
    if (xt < 0) return ig__lw_status(L);
    const ig_cu_tensor x = *ig__lw_T(L, xt);
    int32_t ov = n->outputs[0] >= 0 ? n->outputs[0] : n->n_outputs > 1 ? n->outputs[1] : -1;
    if (ov < 0) return ig__lw_fail(L, id, INGOT_ERR_MODEL_INVALID, "no outputs");
    int64_t od[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, ov, od);
    if (orank != x.rank) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "output of rank %d", (int)orank);
    ig_select_args a;
    memset(&a, 0, sizeof a);
    a.op = IG_SEL_TOPK;
    a.dtype = x.dtype;
    a.esize = (int32_t)ingot_dtype_size(x.dtype);
    a.largest = ig__attr_int(n, "largest", 1) != 0;
    lines_of(x.rank, x.dims, ax, &a.outer, &a.inner);
    a.n = x.dims[ax];
    a.k = od[ax];
    if (a.k < 0 || a.k > a.n)
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_SHAPE, "k = %lld is not in [0, %lld]", (long long)a.k,
                           (long long)a.n);
    const char *why = topk_limits(a.n, a.k);
    if (why) return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "%s", why);
    /* both outputs are written (the kernel has no variant without one); sorted=0 leaves the order free */
    int32_t yt = ig__lw_dense(L, x.dtype, x.rank, od, false);
    int32_t it = yt >= 0 ? ig__lw_dense(L, INGOT_DTYPE_INT64, x.rank, od, false) : -1;
    if (it < 0) return ig__lw_oom(L);
    if (n->outputs[0] >= 0) L->p->val_tensor[n->outputs[0]] = yt;
    if (n->n_outputs > 1 && n->outputs[1] >= 0) L->p->val_tensor[n->outputs[1]] = it;
    return select_step(L, id, &a, xt, -1, yt, it);
}

/* ---- OneHot ------------------------------------------------------------------------------------------ */

/* depth is the output's length along the axis (a shape input: known when the graph is inferred). */
const char *ig__lw_supports_one_hot(const ig_graph *g, const ig_node *n)
{
    size_t es = ingot_dtype_size(g->values[n->inputs[2]].dtype);
    if (es != 1 && es != 2 && es != 4 && es != 8) return "values of this element type";
    return NULL;
}

ingot_status ig__lw_one_hot(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t xt = ig__lw_contig(L, id, ig__lw_get(L, n->inputs[0]));
    int32_t vt = xt >= 0 ? ig__lw_contig(L, id, ig__lw_get(L, n->inputs[2])) : -1;
    if (vt < 0) return ig__lw_status(L);
    if (ig__cu_tensor_numel(ig__lw_T(L, vt)) != 2)
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_SHAPE, "values must be [off_value, on_value]");
    int64_t od[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, n->outputs[0], od);
    int32_t ax = ig__lw_norm_axis(ig__attr_int(n, "axis", -1), orank);
    if (ax < 0 || ax >= orank) return ig__lw_fail(L, id, INGOT_ERR_MODEL_INVALID, "axis out of range");
    ingot_dtype ydt = ig__lw_T(L, vt)->dtype;
    ig_select_args a;
    memset(&a, 0, sizeof a);
    a.op = IG_SEL_ONEHOT;
    a.dtype = ig__lw_T(L, xt)->dtype;
    a.esize = (int32_t)ingot_dtype_size(ydt);
    a.wrap = n->opset >= 11;
    lines_of(orank, od, ax, &a.outer, &a.inner);
    a.n = od[ax];
    if (a.esize != 1 && a.esize != 2 && a.esize != 4 && a.esize != 8)
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "%s values are not supported", ingot_dtype_name(ydt));
    int32_t yt = ig__lw_dense(L, ydt, orank, od, false);
    if (yt < 0) return ig__lw_oom(L);
    L->p->val_tensor[n->outputs[0]] = yt;
    return select_step(L, id, &a, xt, vt, yt, -1);
}
