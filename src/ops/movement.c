/*
 * movement.c -- data movement ops: Transpose, Concat, Split, Slice, Gather, GatherElements, Pad.
 *
 * These ops are type-agnostic: kernels copy elements by their size (1, 2, 4 or 8 bytes), so every
 * dtype of the supported set works. Most of them reduce to ig__copy_strided (a strided view copied
 * into another), which merges contiguous axes and copies the innermost contiguous run with memcpy.
 *
 * Inference keeps symbolic dims symbolic and, for 1-D int vectors, propagates element values
 * (Concat of Gather(Shape(x)) pieces, Slice of Shape(x), Gather(Shape(x), 0)) so that the Reshape at
 * the end of an exporter's shape sub-graph still sees the symbolic batch.
 */
#include "op.h"
#include "../cpu/cpu.h"

#include <inttypes.h>
#include <stdio.h>

/* ==== strided copy: the engine behind Transpose, Slice, Expand, Tile, Pad =========================== */

#define CS_MAX_RANK (2 * IG_MAX_RANK)

typedef struct cs_job {
    size_t es;
    int32_t rank; /* after merging; the last axis is the "row" */
    int64_t dims[CS_MAX_RANK], ss[CS_MAX_RANK], ds[CS_MAX_RANK];
    const char *src;
    char *dst;
    int32_t tj;   /* tiled transpose: the outer axis with unit source stride, or -1 */
    int64_t nblk; /* tiled: blocks along tj */
} cs_job;

#ifndef CS_TILE
#define CS_TILE 16 /* elements per side of a transpose tile (16 measured best on x86, one thread) */
#endif

/* Copy n elements from src (stride ss) to dst (stride ds), strides in elements. */
static void copy_run(size_t es, int64_t n, const char *src, int64_t ss, char *dst, int64_t ds)
{
    if (ss == 1 && ds == 1) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
#define RUN_T(T)                                                          \
    do {                                                                  \
        const T *s_ = (const T *)(const void *)src;                       \
        T *d_ = (T *)(void *)dst;                                         \
        if (ss == 0) {                                                    \
            T v_ = s_[0];                                                 \
            for (int64_t k_ = 0; k_ < n; k_++) d_[k_ * ds] = v_;          \
        } else {                                                          \
            for (int64_t k_ = 0; k_ < n; k_++) d_[k_ * ds] = s_[k_ * ss]; \
        }                                                                 \
    } while (0)
    switch (es) {
    case 1: RUN_T(uint8_t); break;
    case 2: RUN_T(uint16_t); break;
    case 4: RUN_T(uint32_t); break;
    case 8: RUN_T(uint64_t); break;
    default:
        for (int64_t k = 0; k < n; k++) memcpy(dst + k * ds * (int64_t)es, src + k * ss * (int64_t)es, es);
    }
#undef RUN_T
}

/* Rows [b, e) of the generic path: every axis but the last is walked with an odometer. */
static void cs_rows(void *arg, int64_t b, int64_t e)
{
    const cs_job *j = arg;
    int32_t r = j->rank;
    int64_t idx[CS_MAX_RANK] = {0}, so = 0, dof = 0, rem = b;
    for (int32_t a = r - 2; a >= 0; a--) {
        idx[a] = rem % j->dims[a];
        rem /= j->dims[a];
        so += idx[a] * j->ss[a];
        dof += idx[a] * j->ds[a];
    }
    int64_t es = (int64_t)j->es, n = j->dims[r - 1];
    for (int64_t row = b; row < e; row++) {
        copy_run(j->es, n, j->src + so * es, j->ss[r - 1], j->dst + dof * es, j->ds[r - 1]);
        for (int32_t a = r - 2; a >= 0; a--) {
            so += j->ss[a];
            dof += j->ds[a];
            if (++idx[a] < j->dims[a]) break;
            so -= j->ss[a] * j->dims[a];
            dof -= j->ds[a] * j->dims[a];
            idx[a] = 0;
        }
    }
}

/* One CS_TILE x CS_TILE tile: source rows (contiguous along j) are read into buf, then destination rows
 * (contiguous along k) are written from it. Going through buf keeps both sides sequential; reading
 * columns directly thrashes L1 when the row stride is a power of two. */
#define TILE_T(T)                                                                           \
    do {                                                                                    \
        T buf_[CS_TILE * CS_TILE];                                                          \
        const T *s_ = (const T *)(const void *)src;                                         \
        T *d_ = (T *)(void *)dst;                                                           \
        for (int64_t k_ = 0; k_ < nk; k_++)                                                 \
            for (int64_t j_ = 0; j_ < nj; j_++) buf_[k_ * CS_TILE + j_] = s_[k_ * sk + j_]; \
        for (int64_t j_ = 0; j_ < nj; j_++)                                                 \
            for (int64_t k_ = 0; k_ < nk; k_++) d_[j_ * dj + k_] = buf_[k_ * CS_TILE + j_]; \
    } while (0)

static void copy_tile(size_t es, int64_t nj, int64_t nk, const char *src, int64_t sk, char *dst, int64_t dj)
{
    switch (es) {
    case 1: TILE_T(uint8_t); break;
    case 2: TILE_T(uint16_t); break;
    case 4: TILE_T(uint32_t); break;
    case 8: TILE_T(uint64_t); break;
    default:
        for (int64_t j = 0; j < nj; j++) copy_run(es, nk, src + j * (int64_t)es, sk, dst + j * dj * (int64_t)es, 1);
    }
}
#undef TILE_T

/* Units [b, e) of the tiled path (a transpose whose source is contiguous along axis tj while the
 * destination is contiguous along the last axis): each unit is one CS_TILE-wide band of tj for one
 * index of the other axes, copied in CS_TILE x CS_TILE tiles. */
static void cs_tiles(void *arg, int64_t b, int64_t e)
{
    const cs_job *j = arg;
    int32_t r = j->rank, tj = j->tj;
    int64_t es = (int64_t)j->es, nk = j->dims[r - 1], sk = j->ss[r - 1], dj = j->ds[tj];
    for (int64_t u = b; u < e; u++) {
        int64_t rem = u / j->nblk, jb = u % j->nblk, so = 0, dof = 0;
        for (int32_t a = r - 2; a >= 0; a--) {
            if (a == tj) continue;
            int64_t i = rem % j->dims[a];
            rem /= j->dims[a];
            so += i * j->ss[a];
            dof += i * j->ds[a];
        }
        int64_t j0 = jb * CS_TILE, j1 = j0 + CS_TILE < j->dims[tj] ? j0 + CS_TILE : j->dims[tj];
        for (int64_t k0 = 0; k0 < nk; k0 += CS_TILE) {
            int64_t k1 = k0 + CS_TILE < nk ? k0 + CS_TILE : nk;
            copy_tile(j->es, j1 - j0, k1 - k0, j->src + (so + j0 + k0 * sk) * es, sk,
                      j->dst + (dof + j0 * dj + k0) * es, dj);
        }
    }
}

void ig__copy_strided(struct ig_pool *pool, size_t es, int32_t rank, const int64_t *dims, const void *src,
                      const int64_t *src_strides, void *dst, const int64_t *dst_strides)
{
    cs_job j;
    memset(&j, 0, sizeof j);
    j.es = es;
    j.src = src;
    j.dst = dst;
    j.tj = -1;
    /* drop unit axes and merge neighbours that are contiguous in both source and destination */
    int32_t r = 0;
    for (int32_t a = 0; a < rank; a++) {
        if (dims[a] == 0) return;
        if (dims[a] == 1) continue;
        if (r > 0 && j.ss[r - 1] == src_strides[a] * dims[a] && j.ds[r - 1] == dst_strides[a] * dims[a]) {
            j.dims[r - 1] *= dims[a];
            j.ss[r - 1] = src_strides[a];
            j.ds[r - 1] = dst_strides[a];
            continue;
        }
        j.dims[r] = dims[a];
        j.ss[r] = src_strides[a];
        j.ds[r] = dst_strides[a];
        r++;
    }
    if (r == 0) {
        memcpy(dst, src, es);
        return;
    }
    j.rank = r;
    int64_t n = j.dims[r - 1], rows = 1;
    for (int32_t a = 0; a < r - 1; a++) rows *= j.dims[a];
    if (j.ss[r - 1] != 1 && j.ds[r - 1] == 1 && n >= 8) {
        for (int32_t a = r - 2; a >= 0; a--)
            if (j.ss[a] == 1 && j.dims[a] >= 8) {
                j.tj = a;
                break;
            }
    }
    if (j.tj >= 0) {
        j.nblk = (j.dims[j.tj] + CS_TILE - 1) / CS_TILE;
        int64_t units = rows / j.dims[j.tj] * j.nblk;
        int64_t unit_bytes = (int64_t)es * n * CS_TILE;
        ig__parallel_for(pool, units, 1 + (1 << 16) / unit_bytes, cs_tiles, &j);
        return;
    }
    int64_t row_bytes = (int64_t)es * n;
    ig__parallel_for(pool, rows, 1 + (1 << 16) / row_bytes, cs_rows, &j);
}

/* ==== shared helpers ================================================================================= */

/* Small int vector values of input i as int64 when all known (constant or concrete symbolic values). */
static bool in_known_ints(ig_infer *cx, int i, int64_t *out, int32_t max, int32_t *count)
{
    ig_dim d[2 * IG_MAX_RANK];
    if (max > 2 * IG_MAX_RANK) max = 2 * IG_MAX_RANK;
    if (!ig__in_vals(cx, i, d, max, count)) return false;
    for (int32_t k = 0; k < *count; k++) {
        if (!ig__dim_known(d[k])) return false;
        out[k] = d[k].n;
    }
    return true;
}

/* Read an int32/int64 tensor into out (at most max values); returns the count or -1. */
static int64_t tensor_ints(const ig_tensor *t, int64_t *out, int64_t max)
{
    if (!t) return 0;
    if (t->numel > max) return -1;
    for (int64_t k = 0; k < t->numel; k++) {
        if (t->dtype == INGOT_DTYPE_INT64)
            out[k] = ((const int64_t *)t->data)[k];
        else if (t->dtype == INGOT_DTYPE_INT32)
            out[k] = ((const int32_t *)t->data)[k];
        else
            return -1;
    }
    return t->numel;
}

static ingot_status set_unknown_rank(ig_infer *cx, int out, ingot_dtype t)
{
    ig_shape s;
    s.rank = -1;
    return ig__set_out(cx, out, t, &s);
}

static int64_t prod(const int64_t *d, int32_t b, int32_t e)
{
    int64_t p = 1;
    for (int32_t a = b; a < e; a++) p *= d[a];
    return p;
}

#define IDX_TYPES (IG_T(INT32) | IG_T(INT64))

/* ==== Transpose ====================================================================================== */

static ingot_status transpose_perm(ig_infer *cx, int32_t rank, int32_t *perm)
{
    const int64_t *p;
    int64_t n;
    if (!ig__attr_ints(cx->node, "perm", &p, &n)) {
        for (int32_t a = 0; a < rank; a++) perm[a] = rank - 1 - a;
        return INGOT_OK;
    }
    if (n != rank)
        return ig__fail_shape(cx, "attribute 'perm' has %" PRId64 " entries for an input of rank %d", n, (int)rank);
    bool seen[IG_MAX_RANK] = {false};
    for (int32_t a = 0; a < rank; a++) {
        if (p[a] < 0 || p[a] >= rank || seen[p[a]])
            return ig__fail_shape(cx, "attribute 'perm' is not a permutation of 0..%d (entry %d is %" PRId64 ")",
                                  (int)rank - 1, (int)a, p[a]);
        seen[p[a]] = true;
        perm[a] = (int32_t)p[a];
    }
    return INGOT_OK;
}

static ingot_status transpose_infer(ig_infer *cx)
{
    ingot_status st;
    ig_value *x = ig__in(cx, 0);
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    if (x->shape.rank < 0) return set_unknown_rank(cx, 0, x->dtype);
    int32_t perm[IG_MAX_RANK];
    IG_TRY(st, transpose_perm(cx, x->shape.rank, perm), out);
    ig_shape s;
    s.rank = x->shape.rank;
    for (int32_t a = 0; a < s.rank; a++) s.d[a] = x->shape.d[perm[a]];
    IG_TRY(st, ig__set_out(cx, 0, x->dtype, &s), out);
    if (s.rank <= 1 && x->n_sym > 0) st = ig__set_out_sym(cx, 0, x->sym, x->n_sym);
out:
    return st;
}

static ingot_status transpose_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    int32_t r = x->rank, perm[IG_MAX_RANK];
    const int64_t *p;
    int64_t n;
    if (ig__attr_ints(ex->node, "perm", &p, &n) && n == r)
        for (int32_t a = 0; a < r; a++) perm[a] = (int32_t)p[a];
    else
        for (int32_t a = 0; a < r; a++) perm[a] = r - 1 - a;
    int64_t xs[IG_MAX_RANK], ss[IG_MAX_RANK], ds[IG_MAX_RANK];
    ig__strides(x, xs);
    ig__strides(y, ds);
    for (int32_t a = 0; a < r; a++) ss[a] = xs[perm[a]];
    if (y->numel > 0) ig__copy_strided(ex->pool, ingot_dtype_size(x->dtype), r, y->dims, x->data, ss, y->data, ds);
    return INGOT_OK;
}

const ig_op_def ig__op_transpose = {
    .name = "Transpose",
    .since = 1,
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = transpose_infer,
    .cpu = transpose_cpu,
    .flops = ig__flops_none,
};

/* ==== Concat ========================================================================================= */

static ingot_status concat_axis(ig_infer *cx, int32_t rank, int32_t *axis)
{
    const ig_attr *a = ig__node_attr(cx->node, "axis");
    if (!a && cx->node->opset >= 4) return ig__fail_shape(cx, "attribute 'axis' is required");
    return ig__norm_axis(cx, a ? a->i : 1, rank, "attribute 'axis'", axis);
}

static ingot_status concat_infer(ig_infer *cx)
{
    ingot_status st;
    int n = ig__n_in(cx);
    ig_value *x0 = ig__in(cx, 0);
    if (!x0) return ig__fail_shape(cx, "input 0 is missing");
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    int32_t rank = -1;
    for (int i = 0; i < n; i++) {
        ig_value *v = ig__in(cx, i);
        if (!v) return ig__fail_shape(cx, "input %d is missing", i);
        if (v->dtype != x0->dtype)
            return ig__fail_shape(cx, "input %d '%s' has dtype %s but input 0 '%s' has %s", i, v->name,
                                  ingot_dtype_name(v->dtype), x0->name, ingot_dtype_name(x0->dtype));
        if (v->shape.rank >= 0) {
            if (rank >= 0 && v->shape.rank != rank)
                return ig__fail_shape(cx, "input %d '%s' has rank %d but an earlier input has rank %d", i, v->name,
                                      (int)v->shape.rank, (int)rank);
            rank = v->shape.rank;
        }
    }
    if (rank < 0) return set_unknown_rank(cx, 0, x0->dtype);
    if (rank == 0) return ig__fail_shape(cx, "cannot concatenate 0-D tensors");
    int32_t axis;
    IG_TRY(st, concat_axis(cx, rank, &axis), out);
    ig_shape s;
    s.rank = rank;
    bool have = false, sum_ok = true;
    ig_dim sum = ig__dim_const(0);
    for (int i = 0; i < n; i++) {
        ig_value *v = ig__in(cx, i);
        if (v->shape.rank < 0) {
            sum_ok = false;
            continue;
        }
        if (!ig__dim_add(sum, v->shape.d[axis], &sum)) sum_ok = false;
        for (int32_t a = 0; a < rank; a++) {
            if (a == axis) continue;
            ig_dim d = v->shape.d[a];
            if (!have) {
                s.d[a] = d;
            } else if (ig__dim_known(d) && ig__dim_known(s.d[a])) {
                if (d.n != s.d[a].n)
                    return ig__fail_shape(cx,
                                          "input %d '%s' has %" PRId64 " at axis %d where earlier inputs have "
                                          "%" PRId64,
                                          i, v->name, d.n, (int)a, s.d[a].n);
            } else if (ig__dim_known(d)) {
                s.d[a] = d; /* a symbolic dim concatenated with a known one must equal it */
            }
        }
        have = true;
    }
    s.d[axis] = sum_ok ? sum : ig__dim_fresh(cx);
    IG_TRY(st, ig__set_out(cx, 0, x0->dtype, &s), out);
    /* element values of concatenated 1-D int vectors: the heart of Shape->...->Concat->Reshape */
    if (rank == 1 && ig__dtype_is_int(x0->dtype)) {
        ig_dim vals[IG_MAX_SYMVAL];
        int32_t total = 0;
        for (int i = 0; i < n; i++) {
            int32_t c;
            if (!ig__in_vals(cx, i, vals + total, IG_MAX_SYMVAL - total, &c)) return INGOT_OK;
            total += c;
        }
        st = ig__set_out_sym(cx, 0, vals, total);
    }
out:
    return st;
}

typedef struct concat_job {
    size_t es;
    int n;
    const ig_tensor *const *in;
    int64_t chunk[64]; /* bytes per outer index of each input (n <= 64 on the threaded path) */
    int64_t row;       /* output bytes per outer index */
    char *dst;
} concat_job;

static void concat_rows(void *arg, int64_t b, int64_t e)
{
    const concat_job *j = arg;
    for (int64_t o = b; o < e; o++) {
        char *d = j->dst + o * j->row;
        for (int i = 0; i < j->n; i++) {
            memcpy(d, (const char *)j->in[i]->data + o * j->chunk[i], (size_t)j->chunk[i]);
            d += j->chunk[i];
        }
    }
}

static ingot_status concat_cpu(ig_exec *ex)
{
    ig_tensor *y = ex->out[0];
    int32_t r = y->rank;
    int64_t axis = ig__attr_int(ex->node, "axis", 1);
    if (axis < 0) axis += r;
    size_t es = ingot_dtype_size(y->dtype);
    int64_t outer = prod(y->dims, 0, (int32_t)axis), inner = prod(y->dims, (int32_t)axis + 1, r);
    int64_t row = y->dims[axis] * inner * (int64_t)es;
    if (ex->n_in <= 64 && outer > 1) {
        concat_job j = {.es = es, .n = ex->n_in, .in = ex->in, .row = row, .dst = y->data};
        for (int i = 0; i < ex->n_in; i++) j.chunk[i] = ex->in[i]->dims[axis] * inner * (int64_t)es;
        ig__parallel_for(ex->pool, outer, 1 + (1 << 16) / (row ? row : 1), concat_rows, &j);
        return INGOT_OK;
    }
    int64_t off = 0;
    for (int i = 0; i < ex->n_in; i++) {
        int64_t chunk = ex->in[i]->dims[axis] * inner * (int64_t)es;
        for (int64_t o = 0; o < outer; o++)
            memcpy((char *)y->data + o * row + off, (const char *)ex->in[i]->data + o * chunk, (size_t)chunk);
        off += chunk;
    }
    return INGOT_OK;
}

const ig_op_def ig__op_concat = {
    .name = "Concat",
    .since = 1,
    .min_in = 1,
    .max_in = -1,
    .min_out = 1,
    .max_out = 1,
    .infer = concat_infer,
    .cpu = concat_cpu,
    .flops = ig__flops_none,
};

/* ==== Split ========================================================================================== */

/* The split sizes, when known: from the 'split' attribute (< 13) or input (>= 13). Returns the count
 * (0 when none given) or -1 when given but not known at build time. */
static int32_t split_sizes(ig_infer *cx, int64_t *sizes, int32_t max)
{
    if (cx->node->opset < 13) {
        const int64_t *p;
        int64_t n;
        if (!ig__attr_ints(cx->node, "split", &p, &n)) return 0;
        if (n > max) return -2;
        memcpy(sizes, p, sizeof(int64_t) * (size_t)n);
        return (int32_t)n;
    }
    if (!ig__in(cx, 1)) return 0;
    ig_dim d[64];
    int32_t n;
    if (!ig__in_vals(cx, 1, d, max < 64 ? max : 64, &n)) return -1;
    for (int32_t k = 0; k < n; k++) {
        if (!ig__dim_known(d[k])) return -1;
        sizes[k] = d[k].n;
    }
    return n;
}

static ingot_status split_infer(ig_infer *cx)
{
    ingot_status st = INGOT_OK;
    ig_value *x = ig__in(cx, 0);
    int n_out = cx->node->n_outputs;
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    if (cx->node->opset >= 13) IG_TRY(st, ig__check_dtype(cx, 1, IG_T(INT64)), out);
    if (n_out > 64) return ig__unsupported(cx, "%d outputs; at most 64 supported", n_out);
    if (x->shape.rank < 0) {
        for (int k = 0; k < n_out; k++) IG_TRY(st, set_unknown_rank(cx, k, x->dtype), out);
        return INGOT_OK;
    }
    int32_t axis;
    IG_TRY(st, ig__norm_axis(cx, ig__attr_int(cx->node, "axis", 0), x->shape.rank, "attribute 'axis'", &axis), out);
    ig_dim d = x->shape.d[axis];
    ig_dim len[64];
    int64_t sizes[64];
    int32_t ns = split_sizes(cx, sizes, 64);
    if (ns == -2) return ig__unsupported(cx, "attribute 'split' has more than 64 entries");
    if (ns > 0) {
        if (ns != n_out)
            return ig__fail_shape(cx, "'split' has %d entries but the node has %d outputs", (int)ns, n_out);
        int64_t total = 0;
        for (int k = 0; k < ns; k++) {
            if (sizes[k] < 0) return ig__fail_shape(cx, "'split' entry %d is negative (%" PRId64 ")", k, sizes[k]);
            total += sizes[k];
            len[k] = ig__dim_const(sizes[k]);
        }
        if (ig__dim_known(d) && total != d.n)
            return ig__fail_shape(cx, "'split' sums to %" PRId64 " but axis %d has %" PRId64, total, (int)axis, d.n);
    } else if (ns < 0) {
        for (int k = 0; k < n_out; k++) len[k] = ig__dim_fresh(cx);
    } else {
        int64_t parts = n_out;
        const ig_attr *no = ig__node_attr(cx->node, "num_outputs");
        if (no && cx->node->opset >= 18) {
            if (no->i != n_out)
                return ig__fail_shape(cx, "attribute 'num_outputs' is %" PRId64 " but the node has %d outputs", no->i,
                                      n_out);
        }
        if (ig__dim_known(d)) {
            if (cx->node->opset >= 18) {
                /* uneven: ceil-sized chunks, the last one smaller */
                int64_t c = (d.n + parts - 1) / parts, last = d.n - c * (parts - 1);
                if (last < 0)
                    return ig__fail_shape(cx, "axis %d of size %" PRId64 " cannot be split into %" PRId64 " outputs",
                                          (int)axis, d.n, parts);
                for (int k = 0; k < n_out; k++) len[k] = ig__dim_const(k == n_out - 1 ? last : c);
            } else {
                if (d.n % parts)
                    return ig__fail_shape(cx,
                                          "axis %d of size %" PRId64 " cannot be split evenly into %" PRId64 " outputs",
                                          (int)axis, d.n, parts);
                for (int k = 0; k < n_out; k++) len[k] = ig__dim_const(d.n / parts);
            }
        } else {
            ig_dim q;
            bool ok = ig__dim_div(d, ig__dim_const(parts), &q);
            for (int k = 0; k < n_out; k++) len[k] = ok ? q : ig__dim_fresh(cx);
        }
    }
    ig_dim vals[IG_MAX_SYMVAL];
    int32_t nv = 0;
    bool have_vals = x->shape.rank == 1 && ig__dtype_is_int(x->dtype) && ig__in_vals(cx, 0, vals, IG_MAX_SYMVAL, &nv);
    int64_t off = 0;
    for (int k = 0; k < n_out; k++) {
        ig_shape s = x->shape;
        s.d[axis] = len[k];
        IG_TRY(st, ig__set_out(cx, k, x->dtype, &s), out);
        if (have_vals && ig__dim_known(len[k]) && off + len[k].n <= nv)
            IG_TRY(st, ig__set_out_sym(cx, k, vals + off, (int32_t)len[k].n), out);
        if (ig__dim_known(len[k]))
            off += len[k].n;
        else
            have_vals = false;
    }
out:
    return st;
}

static ingot_status split_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    const ig_node *nd = ex->node;
    int32_t r = x->rank;
    int64_t axis = ig__attr_int(nd, "axis", 0);
    if (axis < 0) axis += r;
    size_t es = ingot_dtype_size(x->dtype);
    int64_t outer = prod(x->dims, 0, (int32_t)axis), inner = prod(x->dims, (int32_t)axis + 1, r);
    int64_t d = x->dims[axis], lens[64], n = -1;
    int n_out = ex->n_out;
    if (n_out > 64) n_out = 64;
    /* lengths again from the node (an omitted output still takes its share of the axis) */
    const int64_t *p;
    int64_t c;
    if (nd->opset < 13 && ig__attr_ints(nd, "split", &p, &c) && c <= 64) {
        memcpy(lens, p, sizeof(int64_t) * (size_t)c);
        n = c;
    } else if (nd->opset >= 13 && ex->n_in > 1 && ex->in[1]) {
        n = tensor_ints(ex->in[1], lens, 64);
    } else {
        int64_t chunk = nd->opset >= 18 ? (d + n_out - 1) / n_out : d / n_out;
        for (int k = 0; k < n_out; k++) lens[k] = k == n_out - 1 ? d - chunk * (n_out - 1) : chunk;
        n = n_out;
    }
    if (n != n_out)
        return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE, "node '%s' (Split): %" PRId64 " split sizes for %d outputs",
                        ig__node_label(nd), n, n_out);
    int64_t off = 0, row = d * inner * (int64_t)es;
    for (int k = 0; k < n_out; k++) {
        int64_t chunk = lens[k] * inner * (int64_t)es;
        ig_tensor *y = ex->out[k];
        if (lens[k] < 0 || off + chunk > row || (y && y->dims[axis] != lens[k]))
            return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE, "node '%s' (Split): output %d does not fit the input",
                            ig__node_label(nd), k);
        if (y && y->numel > 0) {
            int64_t dims[2] = {outer, chunk}, ss[2] = {row, 1}, ds[2] = {chunk, 1};
            ig__copy_strided(ex->pool, 1, 2, dims, (const char *)x->data + off, ss, y->data, ds);
        }
        off += chunk;
    }
    return INGOT_OK;
}

const ig_op_def ig__op_split = {
    .name = "Split",
    .since = 2,
    .min_in = 1,
    .max_in = 2,
    .min_out = 1,
    .max_out = -1,
    .shape_inputs = 1u << 1,
    .infer = split_infer,
    .cpu = split_cpu,
    .flops = ig__flops_none,
};

/* ==== Slice ========================================================================================== */

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ONNX slice rules for one axis of known size d: normalises *start and returns the output length. */
static int64_t slice_len(int64_t d, int64_t *start, int64_t end, int64_t step)
{
    int64_t s = *start, e = end, len = 0;
    if (d == 0) {
        *start = 0;
        return 0;
    }
    if (s < 0) s += d;
    if (e < 0) e += d;
    if (step > 0) {
        s = clamp64(s, 0, d);
        e = clamp64(e, 0, d);
        if (e > s) len = (e - s - 1) / step + 1;
    } else {
        s = clamp64(s, 0, d - 1);
        e = clamp64(e, -1, d - 1);
        if (s > e) len = step == INT64_MIN ? 1 : (s - e - 1) / (-step) + 1;
    }
    *start = s;
    return len;
}

#define SLICE_BIG ((int64_t)INT32_MAX) /* an end this large means "to the end" */

/* Output length along an axis whose size or bounds are symbolic. Assumes, like exporters do, that a
 * symbolic dim is at least as large as the constant bounds used with it. false: not expressible. */
static bool slice_len_sym(ig_dim d, ig_dim s, ig_dim e, int64_t step, ig_dim *out)
{
    bool sk = ig__dim_known(s), ek = ig__dim_known(e);
    if (sk && ek) {
        int64_t s0 = s.n, e0 = e.n;
        if (step > 0) {
            int64_t len;
            if (s0 >= 0 && e0 >= SLICE_BIG) {
                if (s0 == 0 && step == 1) {
                    *out = d;
                    return true;
                }
                return false;
            }
            if (s0 < 0 && e0 >= SLICE_BIG)
                len = -s0; /* the last -s0 elements */
            else if (s0 >= 0 && e0 >= 0)
                len = e0 - s0; /* assumes d >= e0 */
            else if (s0 < 0 && e0 < 0)
                len = e0 - s0;
            else
                return false; /* [s0, d + e0) */
            *out = ig__dim_const(len > 0 ? (len - 1) / step + 1 : 0);
            return true;
        }
        if (step == -1 && (s0 == -1 || s0 >= SLICE_BIG) && e0 <= -SLICE_BIG) {
            *out = d;
            return true;
        }
        return false;
    }
    if (sk && s.n == 0 && step == 1 && !ek) { /* x[:n] with n symbolic (e.g. from Shape): n, assumed <= d */
        if (!ig__dim_known(d) && d.sym == e.sym && d.n < e.n)
            *out = d;
        else
            *out = e;
        return true;
    }
    return false;
}

typedef struct slice_args {
    int32_t n; /* entries */
    ig_dim starts[IG_MAX_RANK], ends[IG_MAX_RANK];
    int64_t axes[IG_MAX_RANK], steps[IG_MAX_RANK];
    bool known; /* starts/ends/axes/steps all known (values possibly symbolic) */
    bool axes_known;
} slice_args;

static ingot_status slice_read_args(ig_infer *cx, int32_t rank, slice_args *sa)
{
    memset(sa, 0, sizeof *sa);
    const ig_node *nd = cx->node;
    if (nd->opset < 10) {
        const int64_t *st, *en, *ax;
        int64_t ns, ne, na;
        if (!ig__attr_ints(nd, "starts", &st, &ns) || !ig__attr_ints(nd, "ends", &en, &ne))
            return ig__fail_shape(cx, "attributes 'starts' and 'ends' are required");
        if (ns != ne) return ig__fail_shape(cx, "'starts' has %" PRId64 " entries but 'ends' %" PRId64, ns, ne);
        if (ns > IG_MAX_RANK) return ig__fail_shape(cx, "'starts' has %" PRId64 " entries, more than the rank", ns);
        bool has_axes = ig__attr_ints(nd, "axes", &ax, &na);
        if (has_axes && na != ns)
            return ig__fail_shape(cx, "'axes' has %" PRId64 " entries but 'starts' %" PRId64, na, ns);
        sa->n = (int32_t)ns;
        for (int32_t k = 0; k < sa->n; k++) {
            sa->starts[k] = ig__dim_const(st[k]);
            sa->ends[k] = ig__dim_const(en[k]);
            sa->axes[k] = has_axes ? ax[k] : k;
            sa->steps[k] = 1;
        }
        sa->known = sa->axes_known = true;
        return INGOT_OK;
    }
    ingot_status st;
    if (!ig__in(cx, 1) || !ig__in(cx, 2)) return ig__fail_shape(cx, "inputs 'starts' and 'ends' are required");
    for (int i = 1; i <= 4; i++) IG_TRY(st, ig__check_dtype(cx, i, IDX_TYPES), out);
    int32_t ns = 0, ne = 0, na = 0, nst = 0;
    bool ks = ig__in_vals(cx, 1, sa->starts, IG_MAX_RANK, &ns);
    bool ke = ig__in_vals(cx, 2, sa->ends, IG_MAX_RANK, &ne);
    bool ka = !ig__in(cx, 3) || in_known_ints(cx, 3, sa->axes, IG_MAX_RANK, &na);
    bool kst = !ig__in(cx, 4) || in_known_ints(cx, 4, sa->steps, IG_MAX_RANK, &nst);
    if (ig__in(cx, 3)) {
        sa->axes_known = ka;
        sa->n = na;
    } else {
        /* axes default to 0..len(starts)-1: known when the length of starts is */
        ig_value *sv = ig__in(cx, 1);
        int64_t len = ks ? ns : sv->shape.rank == 1 && ig__dim_known(sv->shape.d[0]) ? sv->shape.d[0].n : -1;
        sa->axes_known = len >= 0 && len <= rank;
        sa->n = sa->axes_known ? (int32_t)len : 0;
        for (int32_t k = 0; k < sa->n; k++) sa->axes[k] = k;
    }
    if (!ks || !ke || !ka || !kst) return INGOT_OK;
    if (ns != ne) return ig__fail_shape(cx, "'starts' has %d entries but 'ends' %d", (int)ns, (int)ne);
    if (ig__in(cx, 3) && na != ns) return ig__fail_shape(cx, "'axes' has %d entries but 'starts' %d", (int)na, (int)ns);
    if (ig__in(cx, 4) && nst != ns)
        return ig__fail_shape(cx, "'steps' has %d entries but 'starts' %d", (int)nst, (int)ns);
    sa->n = ns;
    for (int32_t k = 0; k < ns; k++)
        if (!ig__in(cx, 4)) sa->steps[k] = 1;
    sa->known = true;
out:
    return st;
}

static ingot_status slice_infer(ig_infer *cx)
{
    ingot_status st;
    ig_value *x = ig__in(cx, 0);
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    if (x->shape.rank < 0) return set_unknown_rank(cx, 0, x->dtype);
    int32_t r = x->shape.rank;
    slice_args sa;
    IG_TRY(st, slice_read_args(cx, r, &sa), out);
    ig_shape s = x->shape;
    bool seen[IG_MAX_RANK] = {false};
    int32_t axes[IG_MAX_RANK];
    if (sa.axes_known) {
        for (int32_t k = 0; k < sa.n; k++) {
            IG_TRY(st, ig__norm_axis(cx, sa.axes[k], r, "slice axis", &axes[k]), out);
            if (seen[axes[k]]) return ig__fail_shape(cx, "axis %d is sliced twice", (int)axes[k]);
            seen[axes[k]] = true;
        }
    }
    if (!sa.known) {
        /* bounds only known at run time: the rank stays, the sliced axes get new dims */
        for (int32_t a = 0; a < r; a++)
            if (!sa.axes_known || seen[a]) s.d[a] = ig__dim_fresh(cx);
        return ig__set_out(cx, 0, x->dtype, &s);
    }
    int64_t starts_c[IG_MAX_RANK];
    for (int32_t k = 0; k < sa.n; k++) {
        int32_t a = axes[k];
        int64_t step = sa.steps[k];
        if (step == 0) return ig__fail_shape(cx, "step for axis %d is 0", (int)a);
        ig_dim d = x->shape.d[a];
        starts_c[k] = 0;
        if (ig__dim_known(d) && ig__dim_known(sa.starts[k]) && ig__dim_known(sa.ends[k])) {
            starts_c[k] = sa.starts[k].n;
            s.d[a] = ig__dim_const(slice_len(d.n, &starts_c[k], sa.ends[k].n, step));
        } else if (!slice_len_sym(d, sa.starts[k], sa.ends[k], step, &s.d[a])) {
            s.d[a] = ig__dim_fresh(cx);
        }
    }
    IG_TRY(st, ig__set_out(cx, 0, x->dtype, &s), out);
    /* slicing a shape vector (Shape(x)[1:], Shape(x)[-2:]) keeps its element values */
    if (r == 1 && ig__dtype_is_int(x->dtype) && ig__dim_known(s.d[0])) {
        ig_dim vals[IG_MAX_SYMVAL], res[IG_MAX_SYMVAL];
        int32_t nv;
        if (ig__in_vals(cx, 0, vals, IG_MAX_SYMVAL, &nv) && ig__dim_known(x->shape.d[0]) && nv == x->shape.d[0].n) {
            int64_t start = 0, step = 1;
            for (int32_t k = 0; k < sa.n; k++) start = starts_c[k], step = sa.steps[k];
            for (int64_t i = 0; i < s.d[0].n; i++) res[i] = vals[start + i * step];
            st = ig__set_out_sym(cx, 0, res, (int32_t)s.d[0].n);
        }
    }
out:
    return st;
}

static ingot_status slice_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    const ig_node *nd = ex->node;
    int32_t r = x->rank;
    int64_t starts[IG_MAX_RANK], ends[IG_MAX_RANK], axes[IG_MAX_RANK], steps[IG_MAX_RANK];
    int64_t n, ne, na = -1, nst = -1;
    if (nd->opset < 10) {
        const int64_t *p;
        int64_t c;
        n = ig__attr_ints(nd, "starts", &p, &c) && c <= IG_MAX_RANK ? c : -1;
        if (n >= 0) memcpy(starts, p, sizeof(int64_t) * (size_t)n);
        ne = ig__attr_ints(nd, "ends", &p, &c) && c <= IG_MAX_RANK ? c : -1;
        if (ne >= 0) memcpy(ends, p, sizeof(int64_t) * (size_t)ne);
        if (ig__attr_ints(nd, "axes", &p, &c) && c <= IG_MAX_RANK) {
            na = c;
            memcpy(axes, p, sizeof(int64_t) * (size_t)c);
        }
    } else {
        n = tensor_ints(ex->in[1], starts, IG_MAX_RANK);
        ne = tensor_ints(ex->n_in > 2 ? ex->in[2] : NULL, ends, IG_MAX_RANK);
        if (ex->n_in > 3 && ex->in[3]) na = tensor_ints(ex->in[3], axes, IG_MAX_RANK);
        if (ex->n_in > 4 && ex->in[4]) nst = tensor_ints(ex->in[4], steps, IG_MAX_RANK);
    }
    if (n < 0 || ne != n || (na >= 0 && na != n) || (nst >= 0 && nst != n))
        return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE, "node '%s' (Slice): starts/ends/axes/steps disagree in length",
                        ig__node_label(nd));
    int64_t st0[IG_MAX_RANK], stp[IG_MAX_RANK], xs[IG_MAX_RANK], ss[IG_MAX_RANK], ds[IG_MAX_RANK], off = 0;
    for (int32_t a = 0; a < r; a++) st0[a] = 0, stp[a] = 1;
    for (int64_t k = 0; k < n; k++) {
        int64_t a = na >= 0 ? axes[k] : k, step = nst >= 0 ? steps[k] : 1;
        if (a < 0) a += r;
        if (a < 0 || a >= r || step == 0)
            return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE, "node '%s' (Slice): bad axis or step at entry %d",
                            ig__node_label(nd), (int)k);
        st0[a] = starts[k];
        stp[a] = step;
        int64_t len = slice_len(x->dims[a], &st0[a], ends[k], step);
        if (len != y->dims[a])
            return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE,
                            "node '%s' (Slice): axis %d slices to %" PRId64 " elements but the output has %" PRId64,
                            ig__node_label(nd), (int)a, len, y->dims[a]);
    }
    if (y->numel == 0) return INGOT_OK;
    ig__strides(x, xs);
    ig__strides(y, ds);
    for (int32_t a = 0; a < r; a++) {
        ss[a] = xs[a] * stp[a];
        off += st0[a] * xs[a];
    }
    size_t es = ingot_dtype_size(x->dtype);
    ig__copy_strided(ex->pool, es, r, y->dims, (const char *)x->data + off * (int64_t)es, ss, y->data, ds);
    return INGOT_OK;
}

const ig_op_def ig__op_slice = {
    .name = "Slice",
    .since = 1,
    .min_in = 1,
    .max_in = 5,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4),
    .infer = slice_infer,
    .cpu = slice_cpu,
    .flops = ig__flops_none,
};

/* ==== Gather ========================================================================================= */

static ingot_status gather_infer(ig_infer *cx)
{
    ingot_status st;
    ig_value *x = ig__in(cx, 0), *ix = ig__in(cx, 1);
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    IG_TRY(st, ig__check_dtype(cx, 1, IDX_TYPES), out);
    if (x->shape.rank < 0 || ix->shape.rank < 0) return set_unknown_rank(cx, 0, x->dtype);
    int32_t r = x->shape.rank, q = ix->shape.rank, axis;
    if (r == 0) return ig__fail_shape(cx, "data input '%s' must have rank >= 1", x->name);
    IG_TRY(st, ig__norm_axis(cx, ig__attr_int(cx->node, "axis", 0), r, "attribute 'axis'", &axis), out);
    ig_shape s;
    s.rank = r - 1 + q;
    if (s.rank > IG_MAX_RANK)
        return ig__unsupported(cx, "output would have rank %d; ingot supports at most %d", (int)s.rank, IG_MAX_RANK);
    for (int32_t a = 0; a < axis; a++) s.d[a] = x->shape.d[a];
    for (int32_t a = 0; a < q; a++) s.d[axis + a] = ix->shape.d[a];
    for (int32_t a = axis + 1; a < r; a++) s.d[q + a - 1] = x->shape.d[a];
    /* constant indices are checked now, not at run time */
    int64_t idx[IG_MAX_SYMVAL];
    int32_t ni = 0;
    bool idx_known = in_known_ints(cx, 1, idx, IG_MAX_SYMVAL, &ni);
    ig_dim d = x->shape.d[axis];
    if (idx_known && ig__dim_known(d))
        for (int32_t k = 0; k < ni; k++)
            if (idx[k] < -d.n || idx[k] >= d.n)
                return ig__fail_shape(cx, "index %" PRId64 " is out of range for axis %d of size %" PRId64, idx[k],
                                      (int)axis, d.n);
    IG_TRY(st, ig__set_out(cx, 0, x->dtype, &s), out);
    /* Gather(Shape(x), i): pick element values, symbolic ones included */
    ig_dim vals[IG_MAX_SYMVAL], res[IG_MAX_SYMVAL];
    int32_t nv;
    if (r == 1 && q <= 1 && idx_known && ig__dim_known(d) && ig__dtype_is_int(x->dtype) &&
        ig__in_vals(cx, 0, vals, IG_MAX_SYMVAL, &nv) && nv == d.n) {
        for (int32_t k = 0; k < ni; k++) res[k] = vals[idx[k] < 0 ? idx[k] + nv : idx[k]];
        st = ig__set_out_sym(cx, 0, res, ni);
    }
out:
    return st;
}

typedef struct gather_job {
    size_t es;
    const char *src;
    char *dst;
    const ig_tensor *idx;
    int64_t n_idx, dim, inner_bytes;
} gather_job;

static int64_t index_at(const ig_tensor *t, int64_t k)
{
    return t->dtype == INGOT_DTYPE_INT64 ? ((const int64_t *)t->data)[k] : ((const int32_t *)t->data)[k];
}

/* rows are (outer, index) pairs; each copies one inner block */
static void gather_rows(void *arg, int64_t b, int64_t e)
{
    const gather_job *j = arg;
    for (int64_t row = b; row < e; row++) {
        int64_t o = row / j->n_idx, k = row % j->n_idx, i = index_at(j->idx, k);
        if (i < 0) i += j->dim;
        const char *s = j->src + (o * j->dim + i) * j->inner_bytes;
        char *d = j->dst + row * j->inner_bytes;
        switch (j->inner_bytes) {
        case 1: *d = *s; break;
        case 2: *(uint16_t *)(void *)d = *(const uint16_t *)(const void *)s; break;
        case 4: *(uint32_t *)(void *)d = *(const uint32_t *)(const void *)s; break;
        case 8: *(uint64_t *)(void *)d = *(const uint64_t *)(const void *)s; break;
        default: memcpy(d, s, (size_t)j->inner_bytes);
        }
    }
}

/* Every index in [-dim, dim); otherwise an error naming the first bad one. */
static ingot_status check_indices(ig_exec *ex, const ig_tensor *idx, int64_t dim, int axis)
{
    for (int64_t k = 0; k < idx->numel; k++) {
        int64_t i = index_at(idx, k);
        if (i < -dim || i >= dim)
            return ig__errf(ex->err, INGOT_ERR_INVALID_ARG,
                            "node '%s' (%s): index %" PRId64 " (element %" PRId64
                            " of '%s') is out of range for axis %d "
                            "of size %" PRId64,
                            ig__node_label(ex->node), ex->node->op_type, i, k,
                            ex->g ? ex->g->values[ex->node->inputs[1]].name : "indices", axis, dim);
    }
    return INGOT_OK;
}

static ingot_status gather_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0], *idx = ex->in[1];
    ig_tensor *y = ex->out[0];
    int32_t r = x->rank;
    int64_t axis = ig__attr_int(ex->node, "axis", 0);
    if (axis < 0) axis += r;
    ingot_status st = check_indices(ex, idx, x->dims[axis], (int)axis);
    if (st != INGOT_OK) return st;
    size_t es = ingot_dtype_size(x->dtype);
    int64_t outer = prod(x->dims, 0, (int32_t)axis), inner = prod(x->dims, (int32_t)axis + 1, r);
    gather_job j = {.es = es,
                    .src = x->data,
                    .dst = y->data,
                    .idx = idx,
                    .n_idx = idx->numel,
                    .dim = x->dims[axis],
                    .inner_bytes = inner * (int64_t)es};
    if (y->numel == 0) return INGOT_OK;
    ig__parallel_for(ex->pool, outer * idx->numel, 1 + (1 << 16) / (j.inner_bytes + 16), gather_rows, &j);
    return INGOT_OK;
}

const ig_op_def ig__op_gather = {
    .name = "Gather",
    .since = 1,
    .min_in = 2,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .infer = gather_infer,
    .cpu = gather_cpu,
    .flops = ig__flops_none,
};

/* ==== GatherElements ================================================================================= */

static ingot_status gather_elements_infer(ig_infer *cx)
{
    ingot_status st;
    ig_value *x = ig__in(cx, 0), *ix = ig__in(cx, 1);
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    IG_TRY(st, ig__check_dtype(cx, 1, IDX_TYPES), out);
    if (ix->shape.rank < 0) return set_unknown_rank(cx, 0, x->dtype);
    if (x->shape.rank >= 0) {
        if (x->shape.rank != ix->shape.rank)
            return ig__fail_shape(cx, "data '%s' has rank %d but indices '%s' rank %d", x->name, (int)x->shape.rank,
                                  ix->name, (int)ix->shape.rank);
        if (x->shape.rank == 0) return ig__fail_shape(cx, "data '%s' must have rank >= 1", x->name);
        int32_t axis;
        IG_TRY(st, ig__norm_axis(cx, ig__attr_int(cx->node, "axis", 0), x->shape.rank, "attribute 'axis'", &axis), out);
    }
    st = ig__set_out(cx, 0, x->dtype, &ix->shape);
out:
    return st;
}

typedef struct gel_job {
    size_t es;
    int32_t rank, axis;
    const int64_t *odims;
    int64_t xs[IG_MAX_RANK];
    const char *src;
    char *dst;
    const ig_tensor *idx;
    int64_t dim;
} gel_job;

static void gel_rows(void *arg, int64_t b, int64_t e)
{
    const gel_job *j = arg;
    int32_t r = j->rank;
    int64_t n = j->odims[r - 1];
    for (int64_t row = b; row < e; row++) {
        int64_t rem = row, base = 0;
        for (int32_t a = r - 2; a >= 0; a--) {
            int64_t i = rem % j->odims[a];
            rem /= j->odims[a];
            if (a != j->axis) base += i * j->xs[a];
        }
        for (int64_t k = 0; k < n; k++) {
            int64_t o = row * n + k, i = index_at(j->idx, o);
            if (i < 0) i += j->dim;
            int64_t src = base + i * j->xs[j->axis] + (j->axis == r - 1 ? 0 : k);
            switch (j->es) {
            case 1: ((uint8_t *)j->dst)[o] = ((const uint8_t *)j->src)[src]; break;
            case 2: ((uint16_t *)(void *)j->dst)[o] = ((const uint16_t *)(const void *)j->src)[src]; break;
            case 4: ((uint32_t *)(void *)j->dst)[o] = ((const uint32_t *)(const void *)j->src)[src]; break;
            default: ((uint64_t *)(void *)j->dst)[o] = ((const uint64_t *)(const void *)j->src)[src]; break;
            }
        }
    }
}

static ingot_status gather_elements_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0], *idx = ex->in[1];
    ig_tensor *y = ex->out[0];
    int32_t r = x->rank;
    int64_t axis = ig__attr_int(ex->node, "axis", 0);
    if (axis < 0) axis += r;
    ingot_status st = check_indices(ex, idx, x->dims[axis], (int)axis);
    if (st != INGOT_OK) return st;
    for (int32_t a = 0; a < r; a++)
        if (a != axis && idx->dims[a] > x->dims[a])
            return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE,
                            "node '%s' (GatherElements): indices have %" PRId64 " at axis %d but data only %" PRId64,
                            ig__node_label(ex->node), idx->dims[a], (int)a, x->dims[a]);
    if (y->numel == 0) return INGOT_OK;
    gel_job j = {.es = ingot_dtype_size(x->dtype),
                 .rank = r,
                 .axis = (int32_t)axis,
                 .odims = y->dims,
                 .src = x->data,
                 .dst = y->data,
                 .idx = idx,
                 .dim = x->dims[axis]};
    ig__strides(x, j.xs);
    int64_t n = y->dims[r - 1];
    ig__parallel_for(ex->pool, y->numel / n, 1 + (1 << 14) / n, gel_rows, &j);
    return INGOT_OK;
}

const ig_op_def ig__op_gather_elements = {
    .name = "GatherElements",
    .since = 11,
    .min_in = 2,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .infer = gather_elements_infer,
    .cpu = gather_elements_cpu,
    .flops = ig__flops_none,
};

/* ==== Pad ============================================================================================ */

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

static int pad_mode(const ig_node *n)
{
    const char *m = ig__attr_str(n, "mode", "constant");
    if (!strcmp(m, "constant")) return PAD_CONSTANT;
    if (!strcmp(m, "reflect")) return PAD_REFLECT;
    if (!strcmp(m, "edge")) return PAD_EDGE;
    if (!strcmp(m, "wrap") && n->opset >= 19) return PAD_WRAP;
    return -1;
}

/* Source index along an axis of size d for padded coordinate x (x = output index - pad_begin):
 * -1 means "the constant value". Reflection repeats with period 2(d-1), as numpy's pad. */
static int64_t pad_src(int mode, int64_t x, int64_t d)
{
    if (x >= 0 && x < d) return x;
    switch (mode) {
    case PAD_EDGE: return x < 0 ? 0 : d - 1;
    case PAD_REFLECT: {
        if (d == 1) return 0;
        int64_t p = 2 * (d - 1), m = x % p;
        if (m < 0) m += p;
        return m < d ? m : p - m;
    }
    case PAD_WRAP: {
        int64_t m = x % d;
        return m < 0 ? m + d : m;
    }
    default: return -1;
    }
}

/* Per-axis begin/end pads (full rank) from the attribute (< 11) or the pads/axes inputs. */
typedef struct pad_args {
    int64_t begin[IG_MAX_RANK], end[IG_MAX_RANK];
    bool known;
    bool axis_padded[IG_MAX_RANK]; /* when !known: which axes may change */
} pad_args;

static ingot_status pad_read_args(ig_infer *cx, int32_t r, pad_args *pa)
{
    ingot_status st = INGOT_OK;
    memset(pa, 0, sizeof *pa);
    int64_t pads[2 * IG_MAX_RANK], axes[IG_MAX_RANK];
    int32_t np = 0, na = r;
    for (int32_t a = 0; a < r; a++) axes[a] = a;
    if (cx->node->opset < 11) {
        const int64_t *p;
        int64_t n;
        if (!ig__attr_ints(cx->node, "pads", &p, &n)) return ig__fail_shape(cx, "attribute 'pads' is required");
        if (n != 2 * r)
            return ig__fail_shape(cx, "attribute 'pads' has %" PRId64 " entries; rank %d needs %d", n, (int)r,
                                  2 * (int)r);
        memcpy(pads, p, sizeof(int64_t) * (size_t)n);
        np = (int32_t)n;
    } else {
        if (!ig__in(cx, 1)) return ig__fail_shape(cx, "input 'pads' is required");
        IG_TRY(st, ig__check_dtype(cx, 1, IG_T(INT64)), out);
        if (cx->node->opset >= 18 && ig__in(cx, 3)) {
            IG_TRY(st, ig__check_dtype(cx, 3, IDX_TYPES), out);
            if (!in_known_ints(cx, 3, axes, IG_MAX_RANK, &na)) {
                for (int32_t a = 0; a < r; a++) pa->axis_padded[a] = true;
                return INGOT_OK;
            }
            for (int32_t k = 0; k < na; k++) {
                int32_t ax;
                IG_TRY(st, ig__norm_axis(cx, axes[k], r, "pad axis", &ax), out);
                axes[k] = ax;
            }
        }
        if (!in_known_ints(cx, 1, pads, 2 * IG_MAX_RANK, &np)) {
            for (int32_t k = 0; k < na; k++) pa->axis_padded[axes[k]] = true;
            return INGOT_OK;
        }
        if (np != 2 * na)
            return ig__fail_shape(cx, "input 'pads' has %d entries; %d axes need %d", (int)np, (int)na, 2 * (int)na);
    }
    for (int32_t k = 0; k < na; k++) {
        pa->begin[axes[k]] = pads[k];
        pa->end[axes[k]] = pads[k + na];
    }
    pa->known = true;
out:
    return st;
}

static ingot_status pad_infer(ig_infer *cx)
{
    ingot_status st;
    ig_value *x = ig__in(cx, 0);
    IG_TRY(st, ig__check_dtype(cx, 0, IG_TS_ALL), out);
    int mode = pad_mode(cx->node);
    if (mode < 0)
        return ig__unsupported(cx, "attribute 'mode' value '%s' is not supported (constant, reflect, edge%s)",
                               ig__attr_str(cx->node, "mode", ""), cx->node->opset >= 19 ? ", wrap" : "");
    ig_value *cv = cx->node->opset >= 11 ? ig__in(cx, 2) : NULL;
    if (cv && cv->dtype != x->dtype)
        return ig__fail_shape(cx, "constant_value '%s' has dtype %s but the data has %s", cv->name,
                              ingot_dtype_name(cv->dtype), ingot_dtype_name(x->dtype));
    if (x->shape.rank < 0) return set_unknown_rank(cx, 0, x->dtype);
    int32_t r = x->shape.rank;
    pad_args pa;
    IG_TRY(st, pad_read_args(cx, r, &pa), out);
    ig_shape s = x->shape;
    for (int32_t a = 0; a < r; a++) {
        if (!pa.known) {
            if (pa.axis_padded[a]) s.d[a] = ig__dim_fresh(cx);
            continue;
        }
        ig_dim d = x->shape.d[a];
        int64_t add, len;
        if (!ig__add_i64(pa.begin[a], pa.end[a], &add) || !ig__add_i64(d.n, add, &len))
            return ig__fail_shape(cx, "pads %" PRId64 ",%" PRId64 " on axis %d overflow", pa.begin[a], pa.end[a],
                                  (int)a);
        if (ig__dim_known(d)) {
            if (len < 0)
                return ig__fail_shape(cx, "pads %" PRId64 ",%" PRId64 " crop more than axis %d's %" PRId64 " elements",
                                      pa.begin[a], pa.end[a], (int)a, d.n);
            if (mode != PAD_CONSTANT && d.n == 0 && add > 0)
                return ig__fail_shape(cx, "cannot pad the empty axis %d in mode '%s'", (int)a,
                                      ig__attr_str(cx->node, "mode", ""));
            s.d[a] = ig__dim_const(len);
        } else if (!ig__dim_add(d, ig__dim_const(add), &s.d[a])) {
            s.d[a] = ig__dim_fresh(cx);
        }
    }
    st = ig__set_out(cx, 0, x->dtype, &s);
out:
    return st;
}

typedef struct pad_job {
    size_t es;
    int mode;
    int32_t rank;
    const int64_t *xd, *yd;
    int64_t xs[IG_MAX_RANK];
    int64_t begin[IG_MAX_RANK];
    const char *src;
    char *dst;
    uint8_t value[8];
} pad_job;

static void fill_elems(char *dst, const uint8_t *v, size_t es, int64_t n)
{
    switch (es) {
    case 1: memset(dst, v[0], (size_t)n); break;
    case 2: {
        uint16_t x;
        memcpy(&x, v, 2);
        for (int64_t k = 0; k < n; k++) ((uint16_t *)(void *)dst)[k] = x;
        break;
    }
    case 4: {
        uint32_t x;
        memcpy(&x, v, 4);
        for (int64_t k = 0; k < n; k++) ((uint32_t *)(void *)dst)[k] = x;
        break;
    }
    default: {
        uint64_t x;
        memcpy(&x, v, 8);
        for (int64_t k = 0; k < n; k++) ((uint64_t *)(void *)dst)[k] = x;
        break;
    }
    }
}

static void pad_rows(void *arg, int64_t b, int64_t e)
{
    const pad_job *j = arg;
    int32_t r = j->rank;
    int64_t L = j->yd[r - 1], d = j->xd[r - 1], pb = j->begin[r - 1], es = (int64_t)j->es;
    /* the interior of a row: outputs [lo, hi) come from inputs [lo - pb, hi - pb) */
    int64_t lo = pb > 0 ? pb : 0, hi = pb + d < L ? pb + d : L;
    if (hi < lo) hi = lo;
    for (int64_t row = b; row < e; row++) {
        char *dst = j->dst + row * L * es;
        int64_t rem = row, base = 0;
        bool fill = false;
        for (int32_t a = r - 2; a >= 0; a--) {
            int64_t o = rem % j->yd[a];
            rem /= j->yd[a];
            int64_t sidx = pad_src(j->mode, o - j->begin[a], j->xd[a]);
            if (sidx < 0)
                fill = true;
            else
                base += sidx * j->xs[a];
        }
        if (fill) {
            fill_elems(dst, j->value, j->es, L);
            continue;
        }
        const char *src = j->src + base * es;
        if (hi > lo) memcpy(dst + lo * es, src + (lo - pb) * es, (size_t)((hi - lo) * es));
        for (int64_t o = 0; o < L; o++) {
            if (o == lo && hi > lo) {
                o = hi - 1;
                continue;
            }
            int64_t sidx = pad_src(j->mode, o - pb, d);
            if (sidx < 0)
                fill_elems(dst + o * es, j->value, j->es, 1);
            else
                memcpy(dst + o * es, src + sidx * es, (size_t)es);
        }
    }
}

static ingot_status pad_cpu(ig_exec *ex)
{
    const ig_tensor *x = ex->in[0];
    ig_tensor *y = ex->out[0];
    const ig_node *nd = ex->node;
    int32_t r = x->rank;
    pad_job j;
    memset(&j, 0, sizeof j);
    j.es = ingot_dtype_size(x->dtype);
    j.mode = pad_mode(nd);
    j.rank = r;
    j.xd = x->dims;
    j.yd = y->dims;
    j.src = x->data;
    j.dst = y->data;
    int64_t pads[2 * IG_MAX_RANK], axes[IG_MAX_RANK], np, na = r;
    for (int32_t a = 0; a < r; a++) axes[a] = a;
    if (nd->opset < 11) {
        const int64_t *p;
        int64_t c;
        np = ig__attr_ints(nd, "pads", &p, &c) && c <= 2 * IG_MAX_RANK ? c : -1;
        if (np > 0) memcpy(pads, p, sizeof(int64_t) * (size_t)np);
        ig__elem_set_f64(x->dtype, j.value, 0, ig__attr_float(nd, "value", 0.0f));
    } else {
        np = tensor_ints(ex->in[1], pads, 2 * IG_MAX_RANK);
        if (ex->n_in > 2 && ex->in[2] && ex->in[2]->numel > 0) memcpy(j.value, ex->in[2]->data, j.es);
        if (ex->n_in > 3 && ex->in[3]) na = tensor_ints(ex->in[3], axes, IG_MAX_RANK);
    }
    if (j.mode < 0 || na < 0 || np != 2 * na)
        return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE, "node '%s' (Pad): bad pads, axes or mode", ig__node_label(nd));
    for (int64_t k = 0; k < na; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
        if (a < 0 || a >= r)
            return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE, "node '%s' (Pad): axis %" PRId64 " out of range",
                            ig__node_label(nd), axes[k]);
        j.begin[a] = pads[k];
        if (x->dims[a] + pads[k] + pads[k + na] != y->dims[a])
            return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE,
                            "node '%s' (Pad): axis %d pads to %" PRId64 " but the output has %" PRId64,
                            ig__node_label(nd), (int)a, x->dims[a] + pads[k] + pads[k + na], y->dims[a]);
    }
    if (y->numel == 0) return INGOT_OK;
    if (x->numel == 0 && j.mode != PAD_CONSTANT)
        return ig__errf(ex->err, INGOT_ERR_MODEL_SHAPE, "node '%s' (Pad): cannot pad an empty tensor in mode '%s'",
                        ig__node_label(nd), ig__attr_str(nd, "mode", ""));
    if (r == 0) {
        memcpy(y->data, x->data, j.es);
        return INGOT_OK;
    }
    ig__strides(x, j.xs);
    int64_t L = y->dims[r - 1];
    ig__parallel_for(ex->pool, y->numel / L, 1 + (1 << 14) / L, pad_rows, &j);
    return INGOT_OK;
}

const ig_op_def ig__op_pad = {
    .name = "Pad",
    .since = 2,
    .min_in = 1,
    .max_in = 4,
    .min_out = 1,
    .max_out = 1,
    .shape_inputs = (1u << 1) | (1u << 3),
    .infer = pad_infer,
    .cpu = pad_cpu,
    .flops = ig__flops_none,
};
