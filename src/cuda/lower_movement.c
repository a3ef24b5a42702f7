/*
 * lower_movement.c -- ops that move data into a new tensor: Concat (one strided copy per input into its
 * slice of the output), Pad (a fill, then the input copied into the interior), Gather (a view for a
 * constant scalar index, else the gather kernel), ConstantOfShape (a fill).
 */
#include "lower_internal.h"

#include <inttypes.h>

/* Layouts of a Concat's output (ig_lower.concat_layout): dense in logical order, or channels-last. */
enum { SLOT_NONE = 0, SLOT_LOGICAL = 1, SLOT_NHWC = 2 };

/* t can be written as a slice of a Concat output of the given layout. */
static bool layout_fits(const ig_cu_tensor *t, int layout)
{
    return layout == SLOT_NHWC ? ig__lw_nhwc(t) : ig__cu_tensor_contig(t);
}

/* Concat a's inputs are the first inputs of Concat b, along the same axis (DenseNet: each layer
 * concatenates every feature map so far, so each Concat is a prefix of the block's last). */
static bool concat_prefix(const ig_lower *L, int32_t a, int32_t b)
{
    const ig_node *na = ig__lw_node(L, a), *nb = ig__lw_node(L, b);
    if (na->op != IG_OP_concat || nb->op != IG_OP_concat || na->n_inputs > nb->n_inputs) return false;
    int64_t d[IG_MAX_RANK];
    int32_t ra = ig__lw_value_dims(L, na->outputs[0], d), rb = ig__lw_value_dims(L, nb->outputs[0], d);
    if (ra != rb ||
        ig__lw_norm_axis(ig__attr_int(na, "axis", 0), ra) != ig__lw_norm_axis(ig__attr_int(nb, "axis", 0), rb))
        return false;
    for (int32_t i = 0; i < na->n_inputs; i++)
        if (na->inputs[i] != nb->inputs[i]) return false;
    return true;
}

/* The Concat whose output v is written into: its one consumer when that is a Concat; or, when every
 * consumer is a Concat and each is a prefix of one of them, that one -- the smaller Concats are then
 * views of its leading slices (concat_prefix_view), and no input is copied twice. -1: none. */
static int32_t concat_home(const ig_lower *L, int32_t v)
{
    int32_t c = ig__lw_sole_consumer(L, v);
    if (c >= 0) return ig__lw_node(L, c)->op == IG_OP_concat ? c : -1;
    if (v < 0 || L->is_output[v] || ig__lw_n_cons(L, v) < 2) return -1;
    /* one Concat, and readers that take a channel slice in place (ResNet's shortcut_merge: the block's
     * input is read by its first 1x1 conv and concatenated for the merged shortcut) */
    int32_t cat = -1, rows = 0;
    bool ok = true;
    for (int32_t i = L->cons_off[v]; i < L->cons_off[v + 1] && ok; i++) {
        int32_t u = L->cons[i];
        if (ig__lw_node(L, u)->op == IG_OP_concat) {
            ok = cat < 0 || cat == u;
            cat = u;
        } else {
            ok = ig__lw_conv_reads_rows(L, u, v);
            rows++;
        }
    }
    if (ok && cat >= 0 && rows > 0) return cat;
    int32_t big = -1;
    for (int32_t i = L->cons_off[v]; i < L->cons_off[v + 1]; i++) {
        int32_t u = L->cons[i];
        if (ig__lw_node(L, u)->op != IG_OP_concat) return -1;
        if (big < 0 || ig__lw_node(L, u)->n_inputs > ig__lw_node(L, big)->n_inputs) big = u;
    }
    for (int32_t i = L->cons_off[v]; i < L->cons_off[v + 1]; i++)
        if (!concat_prefix(L, L->cons[i], big)) return -1;
    return big;
}

/* Concat id as the leading slice of the Concat it is a prefix of, when that one's output is placed
 * already (its first input's producer placed it: concat_home), else -1. */
static int32_t concat_prefix_view(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t yv = n->outputs[0];
    if (n->n_inputs < 1 || n->inputs[0] < 0 || L->is_output[yv] || concat_home(L, yv) >= 0) return -1;
    int32_t big = concat_home(L, n->inputs[0]);
    if (big < 0 || big == id || !concat_prefix(L, id, big) || L->concat_y[big] < 0) return -1;
    int64_t od[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, yv, od), ax = ig__lw_norm_axis(ig__attr_int(n, "axis", 0), orank);
    ig_cu_tensor part = *ig__lw_T(L, L->concat_y[big]);
    if (part.rank != orank || part.dtype != ig__lw_dev_dtype(L->p, ig__lw_val(L, yv)->dtype)) return -1;
    for (int32_t k = 0; k < orank; k++)
        if (k != ax && part.dims[k] != od[k]) return -1;
    part.dims[ax] = od[ax];
    return ig__lw_tensor(L, part.buf, part.dtype, part.rank, part.dims, part.strides, part.offset);
}

int32_t ig__lw_concat_slot(ig_lower *L, int32_t v, int32_t t)
{
    int32_t c = L->concat_y && v >= 0 ? concat_home(L, v) : -1;
    if (c < 0) return t;
    const ig_node *n = ig__lw_node(L, c);
    int32_t yv = n->outputs[0];
    int64_t od[IG_MAX_RANK], vd[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, yv, od), rank = ig__lw_value_dims(L, v, vd);
    const ig_cu_tensor *x = ig__lw_T(L, t);
    if (rank != orank || x->rank != rank || x->dtype != ig__lw_dev_dtype(L->p, ig__lw_val(L, yv)->dtype)) return t;
    for (int32_t k = 0; k < rank; k++)
        if (x->dims[k] != vd[k]) return t;
    /* v's place: after the inputs before it (ig__lw_concat's offsets); v twice would need two writes */
    int32_t ax = ig__lw_norm_axis(ig__attr_int(n, "axis", 0), orank), seen = 0;
    int64_t off = 0, d[IG_MAX_RANK];
    for (int32_t i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] == v)
            seen++;
        else if (n->inputs[i] >= 0 && !seen && ig__lw_value_dims(L, n->inputs[i], d) == orank)
            off += d[ax];
    }
    if (seen != 1) return t;
    int32_t yt = L->concat_y[c];
    if (yt < 0) { /* the first producer fixes the layout: its own */
        bool nhwc = rank == 4 && ig__lw_nhwc(x) && !ig__cu_tensor_contig(x);
        if (!nhwc && !ig__cu_tensor_contig(x)) return t;
        /* a Concat feeding a Concat: its output is a slice of the outer one's */
        if ((yt = ig__lw_dense(L, x->dtype, orank, od, nhwc)) < 0 || (yt = ig__lw_concat_slot(L, yv, yt)) < 0)
            return -1;
        L->concat_y[c] = yt;
        L->concat_layout[c] = nhwc ? SLOT_NHWC : SLOT_LOGICAL;
    }
    if (!layout_fits(x, L->concat_layout[c])) return t;
    ig_cu_tensor part = *ig__lw_T(L, yt);
    part.dims[ax] = vd[ax];
    part.offset += off * part.strides[ax];
    return ig__lw_tensor(L, part.buf, part.dtype, part.rank, part.dims, part.strides, part.offset);
}

/* t's channels are its innermost dim: channels-last, or a strided view of it (a slice of pixels or of
 * channels, the every-other-pixel input of shortcut_merge), so a channels-last copy of it reads runs of
 * channels. */
static bool channels_inner(const ig_cu_tensor *t)
{
    if (t->rank != 4 || (t->dims[1] > 1 && t->strides[1] != 1)) return false;
    for (int32_t k = 0; k < 4; k++)
        if (k != 1 && t->dims[k] > 1 && t->strides[k] < t->dims[1]) return false;
    return true;
}

static bool same_view(const ig_cu_tensor *a, const ig_cu_tensor *b)
{
    if (a->buf != b->buf || a->dtype != b->dtype || a->rank != b->rank || a->offset != b->offset) return false;
    for (int32_t k = 0; k < a->rank; k++)
        if (a->dims[k] != b->dims[k] || (a->dims[k] > 1 && a->strides[k] != b->strides[k])) return false;
    return true;
}

ingot_status ig__lw_concat(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t yv = n->outputs[0];
    int64_t od[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, yv, od);
    int32_t ax = ig__lw_norm_axis(ig__attr_int(n, "axis", 0), orank);
    /* the output a producer of an input already wrote into (ig__lw_concat_slot), or a fresh one:
     * channels-last when every input is (an NCHW output made each copy a transpose, and the convolutions
     * and pools after it copied it back: GoogLeNet's MaxPool after each Concat took the scalar NCHW
     * kernel, 26x off its bandwidth bound) */
    int32_t yt = L->concat_y ? L->concat_y[id] : -1;
    const bool prefix = yt < 0 && L->concat_y && (yt = concat_prefix_view(L, id)) >= 0;
    if (yt < 0) {
        bool nhwc = orank == 4;
        for (int32_t i = 0; i < n->n_inputs && nhwc; i++) {
            int32_t ut = n->inputs[i] >= 0 ? ig__lw_get(L, n->inputs[i]) : -1;
            const ig_cu_tensor *u = ut >= 0 ? ig__lw_T(L, ut) : NULL;
            nhwc = u && channels_inner(u) && !ig__cu_tensor_contig(u);
        }
        yt = ig__lw_dense(L, ig__lw_dev_dtype(L->p, ig__lw_val(L, yv)->dtype), orank, od, nhwc);
        if (yt >= 0) yt = ig__lw_concat_slot(L, yv, yt);
        if (yt < 0) return ig__lw_oom(L);
        if (L->concat_y) L->concat_y[id] = yt;
    }
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
        if (same_view(ig__lw_T(L, ut), &part)) continue; /* its producer wrote it there */
        int32_t pt = ig__lw_tensor(L, part.buf, part.dtype, part.rank, part.dims, part.strides, part.offset);
        if (pt < 0) return ig__lw_oom(L);
        ingot_status st = ig__lw_copy(L, id, NULL, ut, pt, 0);
        if (st != INGOT_OK) return st;
        /* in a prefix view the copy is in the larger Concat's place: the later Concats (u's only
         * consumers, concat_home) find it there and copy it no more */
        if (prefix) L->p->val_tensor[u] = pt;
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

/* ---- Resize / Upsample ------------------------------------------------------------------------------ */

/* What resize.c's parse_cfg and plan_dims decide, for the kernel (resize.cu). */
typedef struct rs_plan {
    int mode, ct, nearest, exclude_outside;
    double cubic_a;
    int32_t rank;
    int64_t in[IG_MAX_RANK], out[IG_MAX_RANK];
    double scale[IG_MAX_RANK];
    bool resized[IG_MAX_RANK];
    int32_t n_resized;
} rs_plan;

/* Element i of constant value v as a double; false when v is absent, not constant or too short. */
static bool rs_const(const ig_graph *g, int32_t v, int64_t i, double *out)
{
    if (v < 0 || !(g->values[v].flags & IG_VAL_CONST)) return false;
    const ig_value *x = &g->values[v];
    size_t es = ingot_dtype_size(x->c.dtype);
    if (!es || (size_t)(i + 1) * es > x->c.n_bytes) return false;
    *out = ig__elem_f64(x->c.dtype, x->c.data, i);
    return true;
}

static int64_t rs_len(const ig_graph *g, const ig_node *n, int i)
{
    if (i < 0 || i >= n->n_inputs || n->inputs[i] < 0) return 0;
    const ig_shape *s = &g->values[n->inputs[i]].shape;
    return s->rank == 1 ? s->d[0].n : s->rank == 0 ? 1 : 0;
}

/* The plan of node n (shapes concrete), or the reason the kernel cannot run it. */
static const char *rs_plan_of(const ig_graph *g, const ig_node *n, rs_plan *p)
{
    memset(p, 0, sizeof *p);
    const ig_value *x = &g->values[n->inputs[0]], *y = &g->values[n->outputs[0]];
    bool upsample = n->op == IG_OP_upsample, legacy = upsample || n->opset < 11;
    int scales_in = upsample ? (n->opset >= 9 ? 1 : -1) : n->opset < 11 ? 1 : 2, sizes_in = legacy ? -1 : 3;
    static const char *const modes[] = {"nearest", "linear", "cubic", "bilinear"};
    p->mode = ig__str_index(ig__attr_str(n, "mode", "nearest"), modes, 4);
    if (p->mode == 3 && upsample) p->mode = IG_RS_LINEAR;
    if (p->mode < 0 || p->mode == 3 || (legacy && p->mode == IG_RS_CUBIC)) return "this 'mode'";
    p->cubic_a = -0.75;
    p->ct = IG_RS_ASYMMETRIC;
    p->nearest = IG_RS_NM_SIMPLE;
    int kar = 0;
    if (!legacy) {
        static const char *const cts[] = {"half_pixel",    "half_pixel_symmetric", "pytorch_half_pixel",
                                          "align_corners", "asymmetric",           "tf_half_pixel_for_nn"};
        const char *ct = ig__attr_str(n, "coordinate_transformation_mode", "half_pixel");
        if ((p->ct = ig__str_index(ct, cts, 6)) < 0) return "coordinate_transformation_mode 'tf_crop_and_resize'";
        static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
        if ((p->nearest = ig__str_index(ig__attr_str(n, "nearest_mode", "round_prefer_floor"), nms, 4)) < 0)
            return "this 'nearest_mode'";
        static const char *const kars[] = {"stretch", "not_larger", "not_smaller"};
        if ((kar = ig__str_index(ig__attr_str(n, "keep_aspect_ratio_policy", "stretch"), kars, 3)) < 0)
            return "this 'keep_aspect_ratio_policy'";
        p->cubic_a = ig__attr_float(n, "cubic_coeff_a", -0.75f);
        p->exclude_outside = ig__attr_int(n, "exclude_outside", 0) != 0;
        if (ig__attr_int(n, "antialias", 0) && p->mode != IG_RS_NEAREST) return "antialias";
    }
    if (p->mode != IG_RS_NEAREST && x->dtype != INGOT_DTYPE_FLOAT && x->dtype != INGOT_DTYPE_FLOAT16 &&
        x->dtype != INGOT_DTYPE_BFLOAT16)
        return "linear and cubic modes of a non-float tensor";
    int32_t r = p->rank = x->shape.rank;
    if (r < 1 || r > IG_MAX_RANK || y->shape.rank != r) return "rank";
    int32_t axes[IG_MAX_RANK], na = r;
    const int64_t *aa;
    int64_t naa;
    if (!legacy && ig__attr_ints(n, "axes", &aa, &naa)) {
        if (naa < 1 || naa > r) return "attribute 'axes'";
        na = (int32_t)naa;
        for (int32_t i = 0; i < na; i++) axes[i] = (int32_t)(aa[i] < 0 ? aa[i] + r : aa[i]);
    } else {
        for (int32_t i = 0; i < r; i++) axes[i] = i;
    }
    for (int32_t d = 0; d < r; d++) {
        p->in[d] = x->shape.d[d].n;
        p->out[d] = y->shape.d[d].n;
        p->scale[d] = 1.0;
    }
    bool use_sizes = sizes_in >= 0 && rs_len(g, n, sizes_in) > 0;
    if (!use_sizes) { /* scales: an attribute (Upsample-7) or a constant input */
        for (int32_t i = 0; i < na; i++) {
            double s;
            if (scales_in < 0) {
                const float *f;
                int64_t nf;
                if (!ig__attr_floats(n, "scales", &f, &nf) || nf != r) return "attribute 'scales'";
                s = f[i];
            } else if (!rs_const(g, n->inputs[scales_in], i, &s)) {
                return "scales must be a constant";
            }
            p->scale[axes[i]] = s;
        }
    } else if (kar == 0) { /* stretch: the output dims are the sizes */
        for (int32_t i = 0; i < na; i++)
            p->scale[axes[i]] = p->in[axes[i]] ? (double)p->out[axes[i]] / (double)p->in[axes[i]] : 1.0;
    } else { /* one scale for the listed axes, from the sizes */
        double s = kar == 1 ? INFINITY : -INFINITY;
        for (int32_t i = 0; i < na; i++) {
            double sz;
            if (!rs_const(g, n->inputs[sizes_in], i, &sz)) return "sizes must be a constant";
            double v = p->in[axes[i]] ? sz / (double)p->in[axes[i]] : 1.0;
            s = kar == 1 ? (v < s ? v : s) : (v > s ? v : s);
        }
        for (int32_t i = 0; i < na; i++) p->scale[axes[i]] = s;
    }
    for (int32_t d = 0; d < r; d++) {
        if (!(p->scale[d] > 0)) return "a scale that is not positive";
        p->resized[d] = !(p->scale[d] == 1.0 && p->in[d] == p->out[d]);
        if (p->resized[d] && p->in[d] == 0 && p->out[d] > 0) return "an empty input";
        p->n_resized += p->resized[d];
        if (p->in[d] > INT32_MAX || p->out[d] > INT32_MAX) return "an axis longer than 2^31";
    }
    if (p->n_resized > 2) return "more than two resized axes";
    return NULL;
}

const char *ig__lw_supports_resize(const ig_graph *g, const ig_node *n)
{
    rs_plan p;
    return rs_plan_of(g, n, &p);
}

ingot_status ig__lw_resize(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    rs_plan p;
    const char *why = rs_plan_of(L->g, n, &p);
    if (why) return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "not supported: %s", why);
    int32_t xt = ig__lw_get(L, n->inputs[0]);
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    ig_cu_tensor x = *ig__lw_T(L, xt);
    /* channels-last stays channels-last, except into a graph output: that is written in logical order, so
     * the output copy is a plain cast instead of a transpose, and the resize runs along the output's rows
     * (a segmentation model's last step, 21 classes upsampled 8x to 1024x512: as channels-last it wrote
     * one element a thread behind 64-bit index math, and the copy after it transposed 21 channels --
     * 2.9 + 1.3 of DeepLabV3-MobileNetV3's 9.4 ms at batch 16 on the H200) */
    const bool nhwc = ig__lw_nhwc(&x) && !ig__cu_tensor_contig(&x) && !L->is_output[n->outputs[0]];
    int32_t yt = ig__lw_dense(L, x.dtype, p.rank, p.out, nhwc);
    if (yt < 0) return ig__lw_oom(L);
    L->p->val_tensor[n->outputs[0]] = yt;
    if (ig__lw_numel(p.rank, p.out) == 0) return INGOT_OK;
    if (p.n_resized == 0) return ig__lw_copy(L, id, NULL, xt, yt, 0);
    const ig_cu_tensor *y = ig__lw_T(L, yt);
    ig_resize_args a;
    memset(&a, 0, sizeof a);
    a.dtype = x.dtype;
    a.esize = (int32_t)ingot_dtype_size(x.dtype);
    a.mode = p.mode;
    a.ct = p.ct;
    a.nearest = p.nearest;
    a.exclude_outside = p.exclude_outside;
    a.cubic_a = p.cubic_a;
    /* y's dims in memory order (decreasing stride); size-1 dims that are not resized carry nothing */
    int32_t ord[IG_MAX_RANK], m = 0;
    for (int32_t d = 0; d < p.rank; d++)
        if (p.resized[d] || p.out[d] != 1) ord[m++] = d;
    for (int32_t i = 1; i < m; i++)
        for (int32_t j = i; j > 0 && y->strides[ord[j - 1]] < y->strides[ord[j]]; j--) {
            int32_t t = ord[j - 1];
            ord[j - 1] = ord[j];
            ord[j] = t;
        }
    if (m > IG_RS_MAX_DIMS) return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "rank %d", (int)p.rank);
    a.rank = m;
    for (int32_t i = 0; i < m; i++) {
        int32_t d = ord[i];
        a.dims[i] = p.out[d];
        a.ys[i] = y->strides[d];
        a.axis[i] = -1;
        if (!p.resized[d]) {
            a.xs[i] = x.strides[d];
            continue;
        }
        int32_t k = a.n_axes++;
        a.axis[i] = k;
        a.in[k] = p.in[d];
        a.out[k] = p.out[d];
        a.scale[k] = p.scale[d];
        a.axis_xs[k] = x.strides[d];
    }
    int64_t tn = (int64_t)((ingot_cuda_resize_plan(&a) + 3) / 4);
    int32_t tt = ig__lw_tensor(L, ig__lw_buf(L, IG_LOC_ARENA, (size_t)tn * 4), INGOT_DTYPE_INT32, 1, &tn, NULL, 0);
    ig_cu_step *s = tt >= 0 ? ig__lw_kstep(L, IG_ST_RESIZE, id, 3, (int32_t[]){xt, yt, tt}) : NULL;
    if (!s) return ig__lw_oom(L);
    s->u.k.a.resize = a;
    return INGOT_OK;
}

/* ---- index kernels: GatherElements, GatherND, ScatterElements, ScatterND, Trilu, CumSum ----------------- */

static bool idx_type_ok(ingot_dtype t) { return t == INGOT_DTYPE_INT64 || t == INGOT_DTYPE_INT32; }

const char *ig__lw_supports_index(const ig_graph *g, const ig_node *n)
{
    switch (n->op) {
    case IG_OP_gather_elements:
    case IG_OP_gather_nd:
    case IG_OP_scatter_elements:
    case IG_OP_scatter:
    case IG_OP_scatter_nd:
        if (!idx_type_ok(g->values[n->inputs[1]].dtype)) return "indices must be int32 or int64";
        if (n->op != IG_OP_gather_elements && n->op != IG_OP_gather_nd &&
            strcmp(ig__attr_str(n, "reduction", "none"), "none"))
            return "only reduction 'none'";
        if (ingot_dtype_size(g->values[n->inputs[0]].dtype) > 8) return "this element type";
        return NULL;
    case IG_OP_cum_sum: {
        ingot_dtype t = g->values[n->inputs[0]].dtype;
        if (t != INGOT_DTYPE_FLOAT && t != INGOT_DTYPE_FLOAT16 && t != INGOT_DTYPE_BFLOAT16 && t != INGOT_DTYPE_INT32 &&
            t != INGOT_DTYPE_INT64)
            return "only float, int32 and int64 tensors";
        if (!(g->values[n->inputs[1]].flags & IG_VAL_CONST)) return "axis must be a constant";
        return NULL;
    }
    default: /* Trilu */
        if (n->n_inputs > 1 && n->inputs[1] >= 0 && !(g->values[n->inputs[1]].flags & IG_VAL_CONST))
            return "k must be a constant";
        return NULL;
    }
}

/* A dense device copy of input i of node id (-1 and L->err set on failure). */
static int32_t dense_in(ig_lower *L, int32_t id, int i)
{
    int32_t t = ig__lw_get(L, ig__lw_in(L, id, i));
    if (t < 0) {
        ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input %d has no device tensor", i);
        return -1;
    }
    return ig__lw_contig(L, id, t);
}

static ingot_status emit_index(ig_lower *L, int32_t id, const ig_index_args *a, int32_t xt, int32_t it, int32_t ut,
                               int32_t yt)
{
    ig_cu_step *s = ig__lw_kstep(L, IG_ST_INDEX, id, 4, (int32_t[]){xt, it, ut, yt});
    if (!s) return ig__lw_oom(L);
    s->u.k.a.ix = *a;
    L->p->val_tensor[ig__lw_node(L, id)->outputs[0]] = yt;
    return INGOT_OK;
}

ingot_status ig__lw_index(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    const char *why = ig__lw_supports_index(L->g, n);
    if (why) return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "%s", why);
    /* GatherElements reads its data and indices through their strides; the others want them dense */
    bool strided = n->op == IG_OP_gather_elements;
    int32_t xt = strided ? ig__lw_get(L, ig__lw_in(L, id, 0)) : dense_in(L, id, 0);
    if (xt < 0)
        return strided ? ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input 0 has no device tensor") : ig__lw_status(L);
    const ig_cu_tensor x = *ig__lw_T(L, xt);
    int64_t od[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, n->outputs[0], od);
    int32_t yt = ig__lw_dense(L, x.dtype, orank, od, false);
    if (yt < 0) return ig__lw_oom(L);
    ig_index_args a;
    memset(&a, 0, sizeof a);
    a.esize = (int32_t)ingot_dtype_size(x.dtype);
    a.dtype = x.dtype;
    if (x.rank > IG_IX_MAX_RANK) return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "rank %d", (int)x.rank);
    if (n->op == IG_OP_trilu || n->op == IG_OP_cum_sum) {
        double k = 0;
        if (ig__lw_in(L, id, 1) >= 0 && !ig__lw_const_scalar(L, ig__lw_in(L, id, 1), &k))
            return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "input 1 must be a constant scalar");
        if (n->op == IG_OP_trilu) {
            if (x.rank < 2) {
                ingot_status st = ig__lw_copy(L, id, NULL, xt, yt, 0);
                if (st == INGOT_OK) L->p->val_tensor[n->outputs[0]] = yt;
                return st;
            }
            a.op = IG_IX_TRILU;
            a.dims[0] = x.dims[x.rank - 2];
            a.dims[1] = x.dims[x.rank - 1];
            a.tk = (int64_t)k;
            a.upper = ig__attr_int(n, "upper", 1) != 0;
            a.n = (int64_t)ig__cu_tensor_numel(&x);
            return emit_index(L, id, &a, xt, -1, -1, yt);
        }
        int32_t ax = ig__lw_norm_axis((int64_t)k, x.rank);
        if (ax < 0 || ax >= x.rank) return ig__lw_fail(L, id, INGOT_ERR_MODEL_INVALID, "axis out of range");
        a.op = IG_IX_CUMSUM;
        a.dims[0] = a.dims[2] = 1;
        for (int32_t q = 0; q < ax; q++) a.dims[0] *= x.dims[q];
        a.dims[1] = x.dims[ax];
        for (int32_t q = ax + 1; q < x.rank; q++) a.dims[2] *= x.dims[q];
        a.n = a.dims[0] * a.dims[2];
        a.exclusive = ig__attr_int(n, "exclusive", 0) != 0;
        a.reverse = ig__attr_int(n, "reverse", 0) != 0;
        return emit_index(L, id, &a, xt, -1, -1, yt);
    }
    bool elements = n->op == IG_OP_gather_elements || n->op == IG_OP_scatter_elements || n->op == IG_OP_scatter;
    int32_t it = elements ? ig__lw_get(L, ig__lw_in(L, id, 1)) : dense_in(L, id, 1);
    if (it < 0)
        return elements ? ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input 1 has no device tensor") : ig__lw_status(L);
    const ig_cu_tensor ix = *ig__lw_T(L, it);
    a.idx_dtype = ix.dtype;
    int64_t xs[IG_MAX_RANK];
    ig__lw_contig_strides(x.rank, x.dims, xs); /* y of the scatters: x's dims, dense too */
    if (strided)
        for (int32_t q = 0; q < x.rank; q++) xs[q] = x.strides[q];
    bool scatter = n->op != IG_OP_gather_elements && n->op != IG_OP_gather_nd;
    int32_t ut = -1;
    if (scatter) {
        if ((ut = dense_in(L, id, 2)) < 0) return ig__lw_status(L);
        ingot_status st = ig__lw_copy(L, id, "scatter data copy", xt, yt, 0);
        if (st != INGOT_OK) return st;
    }
    if (elements) {
        a.op = scatter ? IG_IX_SCATTER_ELEMENTS : IG_IX_GATHER_ELEMENTS;
        a.rank = ix.rank;
        a.axis = ig__lw_norm_axis(ig__attr_int(n, "axis", 0), x.rank);
        if (ix.rank != x.rank || a.axis < 0 || a.axis >= x.rank)
            return ig__lw_fail(L, id, INGOT_ERR_MODEL_INVALID, "indices of rank %d", (int)ix.rank);
        for (int32_t q = 0; q < ix.rank; q++) {
            a.dims[q] = ix.dims[q];
            a.ts[q] = xs[q];
            a.is[q] = ix.dims[q] == 1 ? 0 : ix.strides[q];
        }
        a.axis_dim = x.dims[a.axis];
        a.n = (int64_t)ig__cu_tensor_numel(&ix);
        return emit_index(L, id, &a, xt, it, ut, yt);
    }
    int64_t b = n->op == IG_OP_gather_nd && n->opset >= 12 ? ig__attr_int(n, "batch_dims", 0) : 0;
    a.k = ix.rank ? ix.dims[ix.rank - 1] : 0;
    if (ix.rank < 1 || b < 0 || b + a.k > x.rank || b >= ix.rank)
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_INVALID, "indices of this shape");
    a.op = scatter ? IG_IX_SCATTER_ND : IG_IX_GATHER_ND;
    for (int64_t j = 0; j < a.k; j++) {
        a.nd_dims[j] = x.dims[b + j];
        a.ts[j] = xs[b + j];
    }
    a.slice = a.n_idx = a.bstride = 1;
    for (int64_t q = b + a.k; q < x.rank; q++) a.slice *= x.dims[q];
    for (int64_t q = b; q < ix.rank - 1; q++) a.n_idx *= ix.dims[q];
    for (int64_t q = b; q < x.rank; q++) a.bstride *= x.dims[q];
    int64_t rows = a.k ? (int64_t)ig__cu_tensor_numel(&ix) / a.k : 0;
    a.n = rows * a.slice;
    return emit_index(L, id, &a, xt, it, ut, yt);
}

/* ---- Tile, DepthToSpace, SpaceToDepth: one strided copy ------------------------------------------------ */

/* Copy view xv into view yv of the dense output yt of node id. */
static ingot_status copy_views(ig_lower *L, int32_t id, int32_t yt, const ig_cu_tensor *xv, const ig_cu_tensor *yv)
{
    int32_t a = ig__lw_tensor(L, xv->buf, xv->dtype, xv->rank, xv->dims, xv->strides, xv->offset);
    int32_t b = ig__lw_tensor(L, yv->buf, yv->dtype, yv->rank, yv->dims, yv->strides, yv->offset);
    if (a < 0 || b < 0) return ig__lw_oom(L);
    ingot_status st = ig__lw_copy(L, id, NULL, a, b, 0);
    if (st == INGOT_OK) L->p->val_tensor[ig__lw_node(L, id)->outputs[0]] = yt;
    return st;
}

ingot_status ig__lw_tile(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t xt = ig__lw_get(L, n->inputs[0]);
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    const ig_cu_tensor x = *ig__lw_T(L, xt);
    int64_t od[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, n->outputs[0], od);
    int32_t yt = ig__lw_dense(L, x.dtype, orank, od, false);
    if (yt < 0) return ig__lw_oom(L);
    if (ig__lw_numel(orank, od) == 0) {
        L->p->val_tensor[n->outputs[0]] = yt;
        return INGOT_OK;
    }
    /* each axis splits into (repeat, dim): the source ignores the repeat (stride 0) */
    ig_cu_tensor xv = x, yv = *ig__lw_T(L, yt);
    const ig_cu_tensor y = yv;
    int32_t r = 0;
    for (int32_t q = 0; q < orank; q++) {
        int64_t rep = x.dims[q] ? od[q] / x.dims[q] : 1;
        if (rep != 1) {
            if (r >= IG_MAX_RANK) break;
            xv.dims[r] = yv.dims[r] = rep;
            xv.strides[r] = 0;
            yv.strides[r++] = x.dims[q] * y.strides[q];
        }
        if (r >= IG_MAX_RANK) break;
        xv.dims[r] = yv.dims[r] = x.dims[q];
        xv.strides[r] = x.strides[q];
        yv.strides[r++] = y.strides[q];
    }
    int32_t need = orank;
    for (int32_t q = 0; q < orank; q++) need += x.dims[q] && od[q] != x.dims[q];
    if (need > IG_MAX_RANK)
        return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "%d repeated axes of rank %d", (int)(need - orank),
                           (int)orank);
    xv.rank = yv.rank = r;
    return copy_views(L, id, yt, &xv, &yv);
}

/* DepthToSpace [N, C, H, W] -> [N, C/b^2, H*b, W*b] and SpaceToDepth, its inverse: the output seen as
 * [N, C', H, b, W, b] (depth to space) or [N, b, b, C, H', W'] (space to depth, DCR order), the input
 * through the matching strides. */
ingot_status ig__lw_depth_space(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t xt = ig__lw_get(L, n->inputs[0]);
    if (xt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    const ig_cu_tensor x = *ig__lw_T(L, xt);
    int64_t od[IG_MAX_RANK], b = ig__attr_int(n, "blocksize", 1);
    int32_t orank = ig__lw_value_dims(L, n->outputs[0], od);
    if (x.rank != 4 || orank != 4 || b < 1) return ig__lw_fail(L, id, INGOT_ERR_MODEL_INVALID, "shapes");
    int32_t yt = ig__lw_dense(L, x.dtype, 4, od, false);
    if (yt < 0) return ig__lw_oom(L);
    const ig_cu_tensor y = *ig__lw_T(L, yt);
    ig_cu_tensor xv = x, yv = y;
    xv.rank = yv.rank = 6;
    const int64_t *xs = x.strides, *ys = y.strides;
    if (n->op == IG_OP_depth_to_space) {
        int64_t c = od[1];
        bool crd = !strcmp(ig__attr_str(n, "mode", "DCR"), "CRD");
        int64_t dims[6] = {od[0], c, x.dims[2], b, x.dims[3], b};
        int64_t yst[6] = {ys[0], ys[1], b * ys[2], ys[2], b * ys[3], ys[3]};
        /* input channel: DCR (i * b + j) * C' + c', CRD c' * b * b + i * b + j */
        int64_t xst[6] = {xs[0], crd ? b * b * xs[1] : xs[1], xs[2], crd ? b * xs[1] : b * c * xs[1],
                          xs[3], crd ? xs[1] : c * xs[1]};
        memcpy(xv.dims, dims, sizeof dims);
        memcpy(yv.dims, dims, sizeof dims);
        memcpy(xv.strides, xst, sizeof xst);
        memcpy(yv.strides, yst, sizeof yst);
    } else {
        int64_t c = x.dims[1];
        int64_t dims[6] = {x.dims[0], b, b, c, od[2], od[3]};
        int64_t yst[6] = {ys[0], b * c * ys[1], c * ys[1], ys[1], ys[2], ys[3]};
        int64_t xst[6] = {xs[0], xs[2], xs[3], xs[1], b * xs[2], b * xs[3]};
        memcpy(xv.dims, dims, sizeof dims);
        memcpy(yv.dims, dims, sizeof dims);
        memcpy(xv.strides, xst, sizeof xst);
        memcpy(yv.strides, yst, sizeof yst);
    }
    return copy_views(L, id, yt, &xv, &yv);
}

/* ---- Einsum: two operands that make one (batched) GEMM ------------------------------------------------- */

typedef struct es_eq {
    int32_t n[3];               /* letters of A, B, the output */
    char l[3][IG_MAX_RANK + 1]; /* and the letters */
} es_eq;

static bool es_has(const char *s, int32_t n, char c)
{
    for (int32_t i = 0; i < n; i++)
        if (s[i] == c) return true;
    return false;
}

/* The equation of n when it is a GEMM: two letter-only terms, no letter repeated in a term, every letter
 * of an input either in the output or in the other input (contracted). NULL, or the reason. */
static const char *es_parse(const ig_graph *g, const ig_node *n, es_eq *e)
{
    const char *eq = ig__attr_str(n, "equation", NULL);
    if (!eq || n->n_inputs != 2 || n->inputs[0] < 0 || n->inputs[1] < 0) return "only two-operand einsum";
    memset(e, 0, sizeof *e);
    int t = 0;
    bool arrow = false;
    for (const char *p = eq; *p; p++) {
        if (*p == ' ') continue;
        if (*p == ',' && t == 0) {
            t = 1;
        } else if (p[0] == '-' && p[1] == '>' && t == 1) {
            t = 2;
            arrow = true;
            p++;
        } else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) {
            if (e->n[t] >= IG_MAX_RANK || es_has(e->l[t], e->n[t], *p)) return "a repeated letter in one term";
            e->l[t][e->n[t]++] = *p;
        } else {
            return "an ellipsis or another character";
        }
    }
    if (!arrow) return "an equation without '->'";
    for (int i = 0; i < 2; i++)
        if (g->values[n->inputs[i]].shape.rank != e->n[i]) return "terms that do not match the ranks";
    for (int32_t i = 0; i < e->n[2]; i++)
        if (!es_has(e->l[0], e->n[0], e->l[2][i]) && !es_has(e->l[1], e->n[1], e->l[2][i]))
            return "an output letter in no input";
    for (int i = 0; i < 2; i++)
        for (int32_t j = 0; j < e->n[i]; j++)
            if (!es_has(e->l[2], e->n[2], e->l[i][j]) && !es_has(e->l[1 - i], e->n[1 - i], e->l[i][j]))
                return "a letter summed over one operand only";
    ingot_dtype dt = g->values[n->inputs[0]].dtype;
    if (dt != INGOT_DTYPE_FLOAT && dt != INGOT_DTYPE_FLOAT16 && dt != INGOT_DTYPE_BFLOAT16) return "non-float operands";
    return NULL;
}

const char *ig__lw_supports_einsum(const ig_graph *g, const ig_node *n)
{
    es_eq e;
    return es_parse(g, n, &e);
}

/* Operand t (letters lt) as [batch..., G1, G2]: its dims in the order of `order` (letters), the last
 * n1 + n2 of them merged into two dims; a dense copy first when their strides do not nest. */
static int32_t es_operand(ig_lower *L, int32_t id, int32_t t, const char *lt, const char *order, int32_t nbat,
                          int32_t n1, int32_t n2)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        const ig_cu_tensor x = *ig__lw_T(L, t);
        ig_cu_tensor v = x;
        int32_t r = nbat + n1 + n2;
        for (int32_t i = 0; i < r; i++) {
            int32_t k = (int32_t)(strchr(lt, order[i]) - lt);
            v.dims[i] = x.dims[k];
            v.strides[i] = x.strides[k];
        }
        v.rank = r;
        ig_cu_tensor m = v;
        m.rank = nbat + 2;
        bool ok = true;
        for (int grp = 0; grp < 2; grp++) { /* dims of size > 1 nest: s_i = s_(i+1) * d_(i+1) */
            int32_t first = nbat + (grp ? n1 : 0), cnt = grp ? n2 : n1;
            int64_t size = 1, inner = 1, next = -1;
            for (int32_t i = first + cnt - 1; i >= first; i--) {
                if (v.dims[i] == 1) continue;
                if (next < 0)
                    inner = v.strides[i];
                else if (v.strides[i] != next)
                    ok = false;
                next = v.strides[i] * v.dims[i];
                size *= v.dims[i];
            }
            m.dims[nbat + grp] = size;
            m.strides[nbat + grp] = inner;
        }
        if (ok) {
            int32_t mt = ig__lw_tensor(L, v.buf, v.dtype, m.rank, m.dims, m.strides, v.offset);
            if (mt < 0) ig__lw_oom(L);
            return mt;
        }
        /* a dense copy in this order nests by construction */
        int32_t pt = ig__lw_tensor(L, v.buf, v.dtype, v.rank, v.dims, v.strides, v.offset);
        if (pt < 0 || (t = ig__lw_contig(L, id, pt)) < 0) return -1;
        lt = order;
    }
    return -1;
}

ingot_status ig__lw_einsum(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    es_eq e;
    const char *why = es_parse(L->g, n, &e);
    if (why) return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "not supported: %s", why);
    int32_t at = ig__lw_get(L, n->inputs[0]), bt = ig__lw_get(L, n->inputs[1]);
    if (at < 0 || bt < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "operands have no device tensors");
    /* letters by role, in output order (batch, M, N) and A's order (K) */
    char oa[IG_MAX_RANK + 1] = {0}, ob[IG_MAX_RANK + 1] = {0}, mid[IG_MAX_RANK + 1] = {0};
    int32_t nbat = 0, nm = 0, nn = 0, nk = 0;
    char bat[IG_MAX_RANK], ml[IG_MAX_RANK], nl[IG_MAX_RANK], kl[IG_MAX_RANK];
    for (int32_t i = 0; i < e.n[2]; i++) {
        char c = e.l[2][i];
        bool ina = es_has(e.l[0], e.n[0], c), inb = es_has(e.l[1], e.n[1], c);
        if (ina && inb)
            bat[nbat++] = c;
        else if (ina)
            ml[nm++] = c;
        else
            nl[nn++] = c;
    }
    for (int32_t j = 0; j < e.n[0]; j++)
        if (!es_has(e.l[2], e.n[2], e.l[0][j])) kl[nk++] = e.l[0][j];
    memcpy(oa, bat, (size_t)nbat);
    memcpy(oa + nbat, ml, (size_t)nm);
    memcpy(oa + nbat + nm, kl, (size_t)nk);
    memcpy(ob, bat, (size_t)nbat);
    memcpy(ob + nbat, kl, (size_t)nk);
    memcpy(ob + nbat + nk, nl, (size_t)nn);
    int32_t a2 = es_operand(L, id, at, e.l[0], oa, nbat, nm, nk);
    int32_t b2 = a2 >= 0 ? es_operand(L, id, bt, e.l[1], ob, nbat, nk, nn) : -1;
    if (a2 < 0 || b2 < 0) return ig__lw_status(L);
    const ig_cu_tensor *A = ig__lw_T(L, a2), *B = ig__lw_T(L, b2);
    int64_t od[IG_MAX_RANK];
    for (int32_t i = 0; i < nbat; i++) od[i] = A->dims[i] > B->dims[i] ? A->dims[i] : B->dims[i];
    od[nbat] = A->dims[nbat];
    od[nbat + 1] = B->dims[nbat + 1];
    ig_cu_gemm g;
    memset(&g, 0, sizeof g);
    g.alpha = 1.f;
    g.bias = g.c = g.scratch = -1;
    int32_t d = ig__lw_gemm(L, id, a2, b2, &g, false, od, nbat + 2);
    if (d < 0) return ig__lw_status(L);
    /* D [batch..., M, N] split into [batch..., M letters..., N letters...], then in the output's order */
    const ig_cu_tensor D = *ig__lw_T(L, d);
    int64_t sd[IG_MAX_RANK], ss[IG_MAX_RANK];
    memcpy(mid, bat, (size_t)nbat);
    memcpy(mid + nbat, ml, (size_t)nm);
    memcpy(mid + nbat + nm, nl, (size_t)nn);
    for (int32_t i = 0; i < nbat + nm + nn; i++) {
        char c = mid[i];
        int32_t k = (int32_t)(strchr(e.l[0], c) ? strchr(e.l[0], c) - e.l[0] : -1);
        sd[i] = k >= 0 ? ig__lw_T(L, at)->dims[k] : ig__lw_T(L, bt)->dims[strchr(e.l[1], c) - e.l[1]];
        if (i < nbat) sd[i] = od[i];
    }
    ig__lw_contig_strides(nbat + nm + nn, sd, ss);
    int64_t yd[IG_MAX_RANK], ys[IG_MAX_RANK];
    for (int32_t i = 0; i < e.n[2]; i++) {
        int32_t k = (int32_t)(strchr(mid, e.l[2][i]) - mid);
        yd[i] = sd[k];
        ys[i] = ss[k];
    }
    int32_t yt = ig__lw_tensor(L, D.buf, D.dtype, e.n[2], yd, ys, D.offset);
    if (yt < 0) return ig__lw_oom(L);
    L->p->val_tensor[n->outputs[0]] = yt;
    return INGOT_OK;
}
