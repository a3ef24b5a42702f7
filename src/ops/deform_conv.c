/*
 * deform_conv.c -- DeformConv (opsets 19 and 22): a convolution whose every kernel tap, at every
 * output position, reads X at its regular place moved by a learned offset (bilinear interpolation,
 * zero outside the input), optionally scaled by a mask (modulated deformable convolution, DCNv2).
 * Any number of spatial dims: ONNX's reference implements 2-D; 1-D and 3-D fall out of the same code
 * (interpolation between the 2^dims corners of the cell a sample lands in).
 *
 * Inputs: X [N, C, in...], W [M, C/group, k...], offset [N, offset_group * dims * prod(k), out...]
 * (for each offset group and kernel tap, one offset per spatial dim, in the dims' order), optional
 * B [M], optional mask [N, offset_group * prod(k), out...]. Channel ch uses offset group
 * ch / (C / offset_group). A sample is 0 unless it lies strictly within one pixel of the input on every
 * axis (a NaN offset gives 0 too, as ONNX Runtime does; the reference raises).
 *
 * CPU: per image, the sampled taps of a chunk of output positions are gathered into a column matrix
 * [C/group * prod(k), positions] that the SGEMM multiplies by each group's weights, into an output
 * preloaded with the bias. Where a tap samples and with which corner weights (mask folded in) depends on
 * the tap, the position and the offset group only: one table per chunk serves every channel. Chunks
 * keep the scratch near DC_CHUNK_BYTES. fp32 math; float16/bfloat16/double are converted, as Conv does.
 */
#include "op.h"
#include "ops_internal.h"
#include "../cpu/cpu.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#define MAX_SP         (IG_MAX_RANK - 2)
#define DC_CHUNK_BYTES ((int64_t)4 << 20)

typedef struct dc_geom {
    int32_t nsp;
    int64_t group, og;                       /* groups, offset groups */
    int64_t n, c, m, cg, mg;                 /* batch, channels in/out, per group */
    int64_t k[MAX_SP], s[MAX_SP], d[MAX_SP]; /* kernel (0: unknown), strides, dilations */
    int64_t pb[MAX_SP], pe[MAX_SP];          /* pads at the beginning and end */
    int64_t in[MAX_SP], out[MAX_SP];         /* spatial sizes */
    int64_t in_sp, out_sp, kprod, corners, chunk;
} dc_geom;

/* INTS attribute `name` of exactly `want` values, each in [min, INT32_MAX], into v; absent: v untouched. */
static ingot_status ints_attr(const ig_node *n, const char *name, int32_t want, int64_t min, int64_t *v, char *why,
                              size_t why_n)
{
    const int64_t *a;
    int64_t cnt;
    if (!ig__attr_ints(n, name, &a, &cnt)) return INGOT_OK;
    if (cnt != want) {
        snprintf(why, why_n, "attribute '%s' has %" PRId64 " values; %d expected", name, cnt, (int)want);
        return INGOT_ERR_MODEL_SHAPE;
    }
    for (int64_t i = 0; i < cnt; i++) {
        /* window geometry past 2^31 describes no real tensor, and keeps the size arithmetic far from overflow */
        if (a[i] < min || a[i] > INT32_MAX) {
            snprintf(why, why_n,
                     "attribute '%s' value %" PRId64 " at index %" PRId64 " is not supported (%" PRId64 " to %d)", name,
                     a[i], i, min, INT32_MAX);
            return INGOT_ERR_MODEL_UNSUPPORTED_OP;
        }
        v[i] = a[i];
    }
    return INGOT_OK;
}

/* The attributes of a node with nsp spatial dims; wk: W's spatial dims (-1 where unknown), the kernel
 * when kernel_shape is absent. */
static ingot_status read_attrs(const ig_node *n, int32_t nsp, const int64_t *wk, dc_geom *g, char *why, size_t why_n)
{
    ingot_status st;
    int64_t pads[2 * MAX_SP] = {0};
    memset(g, 0, sizeof *g);
    g->nsp = nsp;
    for (int32_t i = 0; i < nsp; i++) {
        g->k[i] = wk[i] > 0 ? wk[i] : 0;
        g->s[i] = g->d[i] = 1;
    }
    if ((st = ints_attr(n, "kernel_shape", nsp, 1, g->k, why, why_n)) != INGOT_OK ||
        (st = ints_attr(n, "strides", nsp, 1, g->s, why, why_n)) != INGOT_OK ||
        (st = ints_attr(n, "dilations", nsp, 1, g->d, why, why_n)) != INGOT_OK ||
        (st = ints_attr(n, "pads", 2 * nsp, 0, pads, why, why_n)) != INGOT_OK)
        return st;
    for (int32_t i = 0; i < nsp; i++) {
        g->pb[i] = pads[i];
        g->pe[i] = pads[nsp + i];
        if (wk[i] > 0 && wk[i] != g->k[i]) {
            snprintf(why, why_n,
                     "attribute 'kernel_shape' (%" PRId64 " at spatial dim %d) disagrees with W (%" PRId64 ")", g->k[i],
                     (int)i, wk[i]);
            return INGOT_ERR_MODEL_SHAPE;
        }
    }
    g->group = ig__attr_int(n, "group", 1);
    g->og = ig__attr_int(n, "offset_group", 1);
    if (g->group < 1 || g->group > INT32_MAX || g->og < 1 || g->og > INT32_MAX) {
        snprintf(why, why_n, "attributes group=%" PRId64 ", offset_group=%" PRId64 " are not supported (1 to %d)",
                 g->group, g->og, INT32_MAX);
        return INGOT_ERR_MODEL_UNSUPPORTED_OP;
    }
    return INGOT_OK;
}

/* Output size of spatial dim i for input size in (kernel known). */
static ingot_status out_size(const dc_geom *g, int32_t i, int64_t in, int64_t *out, char *why, size_t why_n)
{
    int64_t ek = (g->k[i] - 1) * g->d[i] + 1; /* attributes < 2^31: no overflow */
    int64_t span = in > INT64_MAX / 4 ? -1 : in + g->pb[i] + g->pe[i] - ek;
    if (span < 0) {
        snprintf(why, why_n,
                 "spatial dim %d: the kernel (%" PRId64 ", dilation %" PRId64
                 ") is larger than the padded input (%" PRId64 " + pads %" PRId64 " + %" PRId64 ")",
                 (int)i, g->k[i], g->d[i], in, g->pb[i], g->pe[i]);
        return INGOT_ERR_MODEL_SHAPE;
    }
    *out = span / g->s[i] + 1;
    return INGOT_OK;
}

/* ---- inference ---------------------------------------------------------------------------------- */

/* Fail unless dim k of input i is `want` where both are known; `what` says where want comes from. */
static ingot_status expect_dim(ig_infer *cx, int i, int32_t k, ig_dim want, const char *what)
{
    const ig_value *v = ig__in(cx, i);
    if (!v || v->shape.rank <= k) return INGOT_OK;
    ig_dim d = v->shape.d[k];
    if (!ig__dim_known(d) || !ig__dim_known(want) || d.n == want.n) return INGOT_OK;
    return ig__fail_shape(cx, "input %d '%s' has %" PRId64 " at axis %d, expected %" PRId64 " (%s)", i, v->name, d.n,
                          (int)k, want.n, what);
}

/* Every present input of X's dtype (float types) and of rank `rank` (B: 1). */
static ingot_status check_inputs(ig_infer *cx, int32_t rank)
{
    static const char *const names[5] = {"X", "W", "offset", "B", "mask"};
    const ig_value *x = ig__in(cx, 0);
    ingot_status st = ig__check_dtype(cx, 0, IG_TS_FLOAT);
    for (int i = 0; st == INGOT_OK && i < 5; i++) {
        const ig_value *v = ig__in(cx, i);
        int32_t want = i == 3 ? 1 : rank;
        if (!v) continue;
        if (v->dtype != x->dtype)
            return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "%s '%s' has dtype %s but X '%s' has %s", names[i], v->name,
                            ingot_dtype_name(v->dtype), x->name, ingot_dtype_name(x->dtype));
        if (v->shape.rank >= 0 && want >= 0 && v->shape.rank != want)
            return ig__fail_shape(cx, "%s '%s' must have rank %d, got %d", names[i], v->name, (int)want,
                                  (int)v->shape.rank);
    }
    return st;
}

static ig_dim dim_of(const ig_value *v, int32_t k)
{
    return v && v->shape.rank > k ? v->shape.d[k] : ig__dim_const(-1);
}

static ingot_status deform_conv_infer(ig_infer *cx)
{
    const ig_value *x = ig__in(cx, 0), *w = ig__in(cx, 1), *off = ig__in(cx, 2);
    if (!x || !w || !off) return ig__fail_shape(cx, "inputs X, W and offset are required");
    int32_t rank = x->shape.rank >= 0 ? x->shape.rank : w->shape.rank >= 0 ? w->shape.rank : off->shape.rank;
    if (rank >= 0 && rank < 3)
        return ig__fail_shape(cx, "X must have rank 3 or more (N, C, spatial dims), got %d", (int)rank);
    ingot_status st = check_inputs(cx, rank);
    if (st != INGOT_OK) return st;
    ig_shape os = {.rank = -1};
    if (rank < 0) return ig__set_out(cx, 0, x->dtype, &os);
    int32_t nsp = rank - 2;
    int64_t wk[MAX_SP];
    for (int32_t i = 0; i < nsp; i++) wk[i] = ig__dim_known(dim_of(w, 2 + i)) ? dim_of(w, 2 + i).n : -1;
    dc_geom g;
    char why[256];
    if ((st = read_attrs(cx->node, nsp, wk, &g, why, sizeof why)) != INGOT_OK) return ig__fail(cx, st, "%s", why);
    ig_dim xc = dim_of(x, 1), wc = dim_of(w, 1), m = dim_of(w, 0);
    if (ig__dim_known(xc) && ig__dim_known(wc) && xc.n != wc.n * g.group)
        return ig__fail_shape(
            cx, "X has %" PRId64 " channels but W expects %" PRId64 " (W dim 1 = %" PRId64 " x group %" PRId64 ")",
            xc.n, wc.n * g.group, wc.n, g.group);
    if (ig__dim_known(m) && m.n % g.group)
        return ig__fail_shape(cx, "W has %" PRId64 " output channels, not a multiple of group %" PRId64, m.n, g.group);
    if (ig__dim_known(xc) && xc.n % g.og)
        return ig__fail_shape(cx, "X has %" PRId64 " channels, not a multiple of offset_group %" PRId64, xc.n, g.og);
    ig_dim nb = x->shape.rank >= 0 ? dim_of(x, 0) : dim_of(off, 0);
    int64_t kprod = 1, n_mask = 0, n_off = 0;
    bool known = true;
    for (int32_t i = 0; i < nsp; i++) known = known && g.k[i] > 0 && ig__mul_i64(kprod, g.k[i], &kprod);
    if (known && (!ig__mul_i64(kprod, g.og, &n_mask) || !ig__mul_i64(n_mask, nsp, &n_off)))
        return ig__fail_shape(cx, "the kernel (%" PRId64 " taps) times offset_group %" PRId64 " is too large", kprod,
                              g.og);
    if (known) {
        IG_TRY(st, expect_dim(cx, 2, 1, ig__dim_const(n_off), "offset_group x dims x kernel size"), out);
        IG_TRY(st, expect_dim(cx, 4, 1, ig__dim_const(n_mask), "offset_group x kernel size"), out);
    }
    IG_TRY(st, expect_dim(cx, 2, 0, nb, "X's batch"), out);
    IG_TRY(st, expect_dim(cx, 4, 0, nb, "X's batch"), out);
    IG_TRY(st, expect_dim(cx, 3, 0, m, "W's output channels"), out);
    os.rank = rank;
    os.d[0] = ig__dim_known(nb) && nb.n < 0 ? ig__dim_fresh(cx) : nb;
    os.d[1] = ig__dim_known(m) && m.n < 0 ? ig__dim_fresh(cx) : m;
    for (int32_t i = 0; i < nsp; i++) {
        ig_dim in = dim_of(x, 2 + i), o = dim_of(off, 2 + i);
        if (ig__dim_known(in) && in.n >= 0 && g.k[i] > 0) {
            int64_t on;
            if ((st = out_size(&g, i, in.n, &on, why, sizeof why)) != INGOT_OK) return ig__fail(cx, st, "%s", why);
            os.d[2 + i] = ig__dim_const(on);
        } else {
            /* the offsets are given at every output position */
            os.d[2 + i] = ig__dim_known(o) && o.n < 0 ? ig__dim_fresh(cx) : o;
        }
        IG_TRY(st, expect_dim(cx, 2, 2 + i, os.d[2 + i], "the output size"), out);
        IG_TRY(st, expect_dim(cx, 4, 2 + i, os.d[2 + i], "the output size"), out);
    }
    st = ig__set_out(cx, 0, x->dtype, &os);
out:
    return st;
}

/* ---- concrete geometry and scratch -------------------------------------------------------------- */

/* Geometry from concrete dims xd [rank], wd [rank]; checks what inference checked where it could. */
static ingot_status make_geom(const ig_node *n, int32_t rank, const int64_t *xd, const int64_t *wd, dc_geom *g,
                              char *why, size_t why_n)
{
    if (rank < 3 || rank > IG_MAX_RANK) {
        snprintf(why, why_n, "X must have rank 3 or more, got %d", (int)rank);
        return INGOT_ERR_MODEL_SHAPE;
    }
    ingot_status st = read_attrs(n, rank - 2, wd + 2, g, why, why_n);
    if (st != INGOT_OK) return st;
    g->n = xd[0];
    g->c = xd[1];
    g->m = wd[0];
    g->cg = wd[1];
    int64_t cg_all;
    if (!ig__mul_i64(g->cg, g->group, &cg_all) || cg_all != g->c || g->m % g->group || g->c % g->og) {
        snprintf(why, why_n,
                 "X's %" PRId64 " channels do not fit W [%" PRId64 ", %" PRId64 ", ...] with group %" PRId64
                 " and offset_group %" PRId64,
                 g->c, g->m, g->cg, g->group, g->og);
        return INGOT_ERR_MODEL_SHAPE;
    }
    g->mg = g->m / g->group;
    g->in_sp = g->out_sp = g->kprod = 1;
    g->corners = (int64_t)1 << g->nsp;
    /* every product checked: a zero-sized tensor can have dims whose products overflow */
    bool fits = true;
    for (int32_t i = 0; i < g->nsp; i++) {
        g->in[i] = xd[2 + i];
        if ((st = out_size(g, i, g->in[i], &g->out[i], why, why_n)) != INGOT_OK) return st;
        fits = fits && ig__mul_i64(g->in_sp, g->in[i], &g->in_sp) && ig__mul_i64(g->out_sp, g->out[i], &g->out_sp) &&
               ig__mul_i64(g->kprod, g->k[i], &g->kprod);
    }
    int64_t tab = 0, col = 0, per_col = 0;
    fits = fits && ig__mul_i64(g->og * g->corners, g->kprod, &tab) && ig__mul_i64(tab, 12, &tab) &&
           ig__mul_i64(g->cg, g->kprod, &col) && ig__mul_i64(col, 4, &col) &&
           !__builtin_add_overflow(tab, col + 1, &per_col) && per_col < INT64_MAX / 2;
    if (!fits) {
        snprintf(why, why_n, "the output or the sampling table would have more elements than ingot can address");
        return INGOT_ERR_MODEL_SHAPE;
    }
    g->chunk = DC_CHUNK_BYTES / per_col;
    if (g->chunk > g->out_sp) g->chunk = g->out_sp;
    if (g->chunk < 1) g->chunk = 1;
    return INGOT_OK;
}

typedef struct dc_buffers {
    float *x, *w, *off, *mask, *b, *y; /* fp32 copies (NULL when the tensor is fp32 already) */
    int64_t *tab_idx;                  /* [og, kprod, chunk, corners]: input offset of a corner, -1: outside */
    float *tab_w;                      /* its weight, mask included */
    float *col;                        /* [cg * kprod, chunk] */
    void *ws;
    size_t ws_bytes;
} dc_buffers;

static void *carve_n(ig_carver *cv, int64_t n, size_t es) { return ig__carve(cv, (size_t)(n > 0 ? n : 0) * es); }

/* Lay out (cv->base NULL: size) the scratch of a node of dtype dt whose inputs X, W, offset, B, mask and
 * output have numel[0..5] elements (-1: input absent). */
static void layout(const dc_geom *g, ingot_dtype dt, const int64_t *numel, ig_carver *cv, dc_buffers *bf)
{
    memset(bf, 0, sizeof *bf);
    float **copies[6] = {&bf->x, &bf->w, &bf->off, &bf->b, &bf->mask, &bf->y};
    for (int i = 0; dt != INGOT_DTYPE_FLOAT && i < 6; i++)
        if (numel[i] >= 0) *copies[i] = carve_n(cv, numel[i], sizeof(float));
    int64_t n_tab = g->og * g->kprod * g->chunk * g->corners;
    bf->tab_idx = carve_n(cv, n_tab, sizeof(int64_t));
    bf->tab_w = carve_n(cv, n_tab, sizeof(float));
    bf->col = carve_n(cv, g->cg * g->kprod * g->chunk, sizeof(float));
    bf->ws_bytes = ig__sgemm_ws_bytes(g->mg, g->chunk, g->cg * g->kprod);
    bf->ws = ig__carve(cv, bf->ws_bytes);
}

static bool value_dims(const ig_value *v, int32_t *rank, int64_t *dims)
{
    if (!v || v->shape.rank < 0 || !ig__shape_known(&v->shape)) return false;
    *rank = v->shape.rank;
    for (int32_t k = 0; k < v->shape.rank; k++) dims[k] = v->shape.d[k].n;
    return true;
}

static bool graph_geom(const ig_graph *gr, const ig_node *n, dc_geom *g)
{
    int32_t rx, rw;
    int64_t xd[IG_MAX_RANK], wd[IG_MAX_RANK];
    char why[256];
    return value_dims(ig__node_input(gr, n, 0), &rx, xd) && value_dims(ig__node_input(gr, n, 1), &rw, wd) && rw == rx &&
           make_geom(n, rx, xd, wd, g, why, sizeof why) == INGOT_OK;
}

static size_t deform_conv_scratch(const ig_graph *gr, const ig_node *n)
{
    dc_geom g;
    if (!graph_geom(gr, n, &g)) return 0;
    int64_t numel[6];
    for (int i = 0; i < 6; i++) {
        int32_t v = i == 5 ? n->outputs[0] : i < n->n_inputs ? n->inputs[i] : -1;
        numel[i] = v >= 0 ? (int64_t)ig__value_numel(gr, v) : -1;
    }
    ig_carver cv = {0};
    dc_buffers bf;
    layout(&g, gr->values[n->inputs[0]].dtype, numel, &cv, &bf);
    return cv.off;
}

/* ---- the kernel --------------------------------------------------------------------------------- */

typedef struct dc_job {
    const dc_geom *g;
    const float *x, *w, *off, *mask; /* fp32 views; mask NULL when absent */
    const dc_buffers *bf;
    int64_t img, j0, cols, grp; /* the image, chunk [j0, j0 + cols) of output positions, group */
} dc_job;

/* Table rows [begin, end) of (offset group, tap): for each position of the chunk, the input offset and
 * weight of each corner of the cell its sample lands in. */
static void table_rows(void *arg, int64_t begin, int64_t end)
{
    const dc_job *jb = arg;
    const dc_geom *g = jb->g;
    int32_t nsp = g->nsp;
    for (int64_t row = begin; row < end; row++) {
        int64_t og = row / g->kprod, tap = row % g->kprod, kk[MAX_SP], rem = tap;
        for (int32_t i = nsp - 1; i >= 0; i--) {
            kk[i] = rem % g->k[i];
            rem /= g->k[i];
        }
        /* offset channel of (og, tap, dim i) = (og * kprod + tap) * nsp + i; mask channel = og * kprod + tap */
        const float *offs = jb->off + ((jb->img * g->og + og) * g->kprod + tap) * nsp * g->out_sp;
        const float *mk = jb->mask ? jb->mask + ((jb->img * g->og + og) * g->kprod + tap) * g->out_sp : NULL;
        for (int64_t j = 0; j < jb->cols; j++) {
            int64_t pos = jb->j0 + j, o[MAX_SP], lo[MAX_SP];
            float fr[MAX_SP];
            for (int32_t i = nsp - 1; i >= 0; i--) {
                o[i] = pos % g->out[i];
                pos /= g->out[i];
            }
            bool inside = true;
            for (int32_t i = 0; i < nsp; i++) {
                double p = (double)(o[i] * g->s[i] - g->pb[i] + kk[i] * g->d[i]) + offs[i * g->out_sp + jb->j0 + j];
                inside = inside && p > -1.0 && p < (double)g->in[i]; /* NaN: outside */
                double f = inside ? floor(p) : 0.0;
                lo[i] = (int64_t)f;
                fr[i] = (float)(p - f);
            }
            float scale = mk ? mk[jb->j0 + j] : 1.0f;
            int64_t *ti = g->corners * ((row * g->chunk) + j) + jb->bf->tab_idx;
            float *tw = g->corners * ((row * g->chunk) + j) + jb->bf->tab_w;
            for (int64_t cn = 0; cn < g->corners; cn++) {
                int64_t idx = 0;
                float wt = scale;
                bool ok = inside;
                for (int32_t i = 0; i < nsp && ok; i++) {
                    bool up = (cn >> (nsp - 1 - i)) & 1;
                    int64_t at = lo[i] + up;
                    ok = at >= 0 && at < g->in[i];
                    idx = idx * g->in[i] + at;
                    wt *= up ? fr[i] : 1.0f - fr[i];
                }
                ti[cn] = ok ? idx : -1;
                tw[cn] = ok ? wt : 0.0f;
            }
        }
    }
}

/* Column rows [begin, end) of group grp: row ci * kprod + tap, the channel's samples at the chunk. */
static void col_rows(void *arg, int64_t begin, int64_t end)
{
    const dc_job *jb = arg;
    const dc_geom *g = jb->g;
    for (int64_t row = begin; row < end; row++) {
        int64_t ch = jb->grp * g->cg + row / g->kprod, tap = row % g->kprod;
        int64_t trow = (ch / (g->c / g->og)) * g->kprod + tap;
        const float *xc = jb->x + (jb->img * g->c + ch) * g->in_sp;
        const int64_t *ti = jb->bf->tab_idx + trow * g->chunk * g->corners;
        const float *tw = jb->bf->tab_w + trow * g->chunk * g->corners;
        float *dst = jb->bf->col + row * jb->cols;
        for (int64_t j = 0; j < jb->cols; j++) {
            float v = 0;
            for (int64_t cn = 0; cn < g->corners; cn++) {
                int64_t e = j * g->corners + cn;
                if (ti[e] >= 0) v += tw[e] * xc[ti[e]];
            }
            dst[j] = v;
        }
    }
}

/* t as fp32: its own data when fp32, else converted into dst. */
static const float *as_f32(const ig_tensor *t, float *dst)
{
    if (!t) return NULL;
    if (t->dtype == INGOT_DTYPE_FLOAT) return t->data;
    if (t->dtype == INGOT_DTYPE_DOUBLE)
        for (int64_t i = 0; i < t->numel; i++) dst[i] = (float)((const double *)t->data)[i];
    else
        ig__to_f32(t->dtype, t->data, t->numel, dst);
    return dst;
}

static ingot_status check_tensor(ig_exec *ex, int i, int32_t rank, const int64_t *dims)
{
    const ig_tensor *t = ex->n_in > i ? ex->in[i] : NULL;
    if (!t) return INGOT_OK;
    bool ok = t->rank == rank;
    for (int32_t k = 0; ok && k < rank; k++) ok = t->dims[k] == dims[k];
    if (ok) return INGOT_OK;
    return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "input %d does not have the shape the kernel and offsets imply", i);
}

static ingot_status deform_conv_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0], *w = ex->in[1], *off = ex->in[2];
    const ig_tensor *b = ex->n_in > 3 ? ex->in[3] : NULL, *mask = ex->n_in > 4 ? ex->in[4] : NULL;
    ig_tensor *y = ex->out[0];
    dc_geom g;
    char why[256];
    ingot_status st;
    if (w->rank != x->rank) return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "W's rank differs from X's");
    if ((st = make_geom(ex->node, x->rank, x->dims, w->dims, &g, why, sizeof why)) != INGOT_OK)
        return ig__exec_fail(ex, st, "%s", why);
    /* offset [N, og * dims * k, out...] (og * dims * k <= og * 2^dims * k: fits), mask [N, og * k, out...],
     * B [M], Y [N, M, out...] */
    int64_t dims[IG_MAX_RANK] = {g.n, g.og * g.nsp * g.kprod}, bdim = g.m;
    for (int32_t i = 0; i < g.nsp; i++) dims[2 + i] = g.out[i];
    if ((st = check_tensor(ex, 2, x->rank, dims)) != INGOT_OK) return st;
    dims[1] = g.og * g.kprod;
    if ((st = check_tensor(ex, 4, x->rank, dims)) != INGOT_OK || (st = check_tensor(ex, 3, 1, &bdim)) != INGOT_OK)
        return st;
    dims[1] = g.m;
    bool y_ok = y->rank == x->rank;
    for (int32_t i = 0; y_ok && i < y->rank; i++) y_ok = y->dims[i] == dims[i];
    if (!y_ok) return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "the output does not have the computed shape");
    if (y->numel == 0) return INGOT_OK;

    int64_t numel[6] = {x->numel, w->numel, off->numel, b ? b->numel : -1, mask ? mask->numel : -1, y->numel};
    dc_buffers bf;
    ig_carver cv = {0};
    layout(&g, x->dtype, numel, &cv, &bf);
    char *base;
    void *own;
    if ((st = ig__exec_scratch(ex, cv.off, &base, &own)) != INGOT_OK) return st;
    cv = (ig_carver){base, 0};
    layout(&g, x->dtype, numel, &cv, &bf);

    dc_job jb = {.g = &g, .bf = &bf};
    jb.x = as_f32(x, bf.x);
    jb.w = as_f32(w, bf.w);
    jb.off = as_f32(off, bf.off);
    jb.mask = as_f32(mask, bf.mask);
    const float *bias = as_f32(b, bf.b);
    float *yf = x->dtype == INGOT_DTYPE_FLOAT ? y->data : bf.y;
    for (int64_t i = 0; i < y->numel; i++) yf[i] = bias ? bias[i / g.out_sp % g.m] : 0.0f;
    int64_t kdim = g.cg * g.kprod;
    for (jb.img = 0; kdim > 0 && jb.img < g.n; jb.img++)
        for (jb.j0 = 0; jb.j0 < g.out_sp; jb.j0 += g.chunk) {
            jb.cols = g.out_sp - jb.j0 < g.chunk ? g.out_sp - jb.j0 : g.chunk;
            ig__parallel_for(ex->pool, g.og * g.kprod, 1 + (1 << 12) / (jb.cols * g.corners), table_rows, &jb);
            for (jb.grp = 0; jb.grp < g.group; jb.grp++) {
                ig__parallel_for(ex->pool, kdim, 1 + (1 << 12) / (jb.cols * g.corners), col_rows, &jb);
                float *yo = yf + (jb.img * g.m + jb.grp * g.mg) * g.out_sp + jb.j0;
                ig__sgemm_ws(ex->pool, false, false, g.mg, jb.cols, kdim, 1.0f, jb.w + jb.grp * g.mg * kdim, kdim,
                             bf.col, jb.cols, 1.0f, yo, g.out_sp, bf.ws, bf.ws_bytes);
            }
        }
    if (x->dtype == INGOT_DTYPE_DOUBLE)
        for (int64_t i = 0; i < y->numel; i++) ((double *)y->data)[i] = yf[i];
    else if (x->dtype != INGOT_DTYPE_FLOAT)
        ig__from_f32(y->dtype, yf, y->numel, y->data);
    ig__free_aligned(own);
    return INGOT_OK;
}

/* The product (2 per multiply-add) and the sampling (a multiply-add per corner and channel tap). */
static double deform_conv_flops(const ig_graph *gr, const ig_node *n)
{
    dc_geom g;
    if (!graph_geom(gr, n, &g)) return 0;
    double taps = (double)g.n * (double)g.out_sp * (double)g.kprod;
    return taps * (2.0 * (double)g.m * (double)g.cg + 2.0 * (double)g.c * (double)g.corners);
}

const ig_op_def ig__op_deform_conv = {
    .name = "DeformConv",
    .since = 19,
    .min_in = 3,
    .max_in = 5,
    .min_out = 1,
    .max_out = 1,
    .infer = deform_conv_infer,
    .cpu = deform_conv_cpu,
    .cpu_scratch = deform_conv_scratch,
    .flops = deform_conv_flops,
};
