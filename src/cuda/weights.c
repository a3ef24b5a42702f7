/*
 * weights.c -- constants converted once for the device: precision (fp16 storage saturates at +-65504
 * instead of overflowing to infinity, so masks built as `(1 - m) * float_min` stay finite and 0 * min
 * stays 0), filter layout (KRSC for channels-last convolutions, RSK for depthwise), and the per-channel
 * scale and shift of a BatchNormalization the optimizer left standing (folding BN into a convolution is
 * the optimizer's job: src/opt/bn_fold.c). Every engine-owned request lands in ONE device allocation.
 */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "cuda_internal.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define WEIGHT_ALIGN 256

bool ig__cu_wreq_same(const ig_cu_wreq *a, const ig_cu_wreq *b)
{
    return a->kind == b->kind && a->src == b->src && a->bn[0] == b->bn[0] && a->bn[1] == b->bn[1] &&
           a->bn[2] == b->bn[2] && a->bn[3] == b->bn[3] && a->eps == b->eps && a->scale == b->scale &&
           a->dtype == b->dtype && a->nhwc == b->nhwc && a->n_out == b->n_out && a->bytes == b->bytes;
}

static float sat_f16(float f)
{
    if (isinf(f)) return f; /* a mask's -inf stays -inf; only finite values saturate */
    if (f > 65504.f) return 65504.f;
    if (f < -65504.f) return -65504.f;
    return f;
}

/* Element i of dst (dtype) = v. */
static void put_f(ingot_dtype t, void *dst, size_t i, double v)
{
    switch (t) {
    case INGOT_DTYPE_FLOAT: {
        float f = (float)v;
        memcpy((char *)dst + i * 4, &f, 4);
        break;
    }
    case INGOT_DTYPE_FLOAT16: {
        uint16_t h = ig__f32_to_f16(sat_f16((float)v));
        memcpy((char *)dst + i * 2, &h, 2);
        break;
    }
    case INGOT_DTYPE_BFLOAT16: {
        uint16_t h = ig__f32_to_bf16((float)v);
        memcpy((char *)dst + i * 2, &h, 2);
        break;
    }
    default: ig__elem_set_f64(t, dst, (int64_t)i, v); break;
    }
}

static const ig_value *cval(const ig_graph *g, int32_t v) { return v >= 0 ? &g->values[v] : NULL; }

static int64_t numel_of_value(const ig_value *x)
{
    int64_t n = 1;
    for (int32_t k = 0; k < x->shape.rank; k++) n *= x->shape.d[k].n;
    return n;
}

/* BatchNormalization folded: scale[k] = gamma / sqrt(var + eps), shift[k] = beta - mean * scale[k]. */
static ingot_status bn_vectors(const ig_graph *g, const ig_cu_wreq *r, int64_t K, double **scale, double **shift,
                               ig_err *err)
{
    *scale = *shift = NULL;
    if (r->bn[0] < 0) return INGOT_OK;
    const ig_value *gm = cval(g, r->bn[0]), *bt = cval(g, r->bn[1]), *mu = cval(g, r->bn[2]), *vr = cval(g, r->bn[3]);
    if (!gm || !bt || !mu || !vr || numel_of_value(gm) != K || numel_of_value(bt) != K || numel_of_value(mu) != K ||
        numel_of_value(vr) != K)
        return ig__errf(err, INGOT_ERR_MODEL_INVALID, "BatchNormalization parameters do not have %" PRId64 " channels",
                        K);
    *scale = ig__calloc((size_t)K + 1, sizeof(double));
    *shift = ig__calloc((size_t)K + 1, sizeof(double));
    if (!*scale || !*shift) {
        ig__free(*scale);
        ig__free(*shift);
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory folding BatchNormalization");
    }
    for (int64_t k = 0; k < K; k++) {
        double s =
            ig__elem_f64(gm->c.dtype, gm->c.data, k) / sqrt(ig__elem_f64(vr->c.dtype, vr->c.data, k) + (double)r->eps);
        (*scale)[k] = s;
        (*shift)[k] = ig__elem_f64(bt->c.dtype, bt->c.data, k) - ig__elem_f64(mu->c.dtype, mu->c.data, k) * s;
    }
    return INGOT_OK;
}

ingot_status ig__cu_wreq_fill(const ig_graph *g, const ig_cu_wreq *r, void *dst, ig_err *err)
{
    size_t es = ingot_dtype_size(r->dtype);
    ingot_status st = INGOT_OK;
    double *scale = NULL, *shift = NULL;
    switch (r->kind) {
    case IG_W_PLAIN: {
        const ig_value *x = cval(g, r->src);
        if (!x || !(x->flags & IG_VAL_CONST))
            return ig__errf(err, INGOT_ERR_INTERNAL, "weight request for a non-constant value");
        size_t n = es ? r->bytes / es : 0;
        size_t sn = ingot_dtype_size(x->c.dtype) ? x->c.n_bytes / ingot_dtype_size(x->c.dtype) : 0;
        if (sn != n)
            return ig__errf(err, INGOT_ERR_INTERNAL, "constant '%s' has %zu elements, the request %zu", x->name, sn, n);
        if (x->c.dtype == r->dtype && r->scale == 1.f) {
            if (r->bytes) memcpy(dst, x->c.data, r->bytes);
        } else if (x->c.dtype == INGOT_DTYPE_FLOAT && r->dtype == INGOT_DTYPE_FLOAT16) { /* the common case: bulk */
            const unsigned char *src = x->c.data;
            float tmp[1024];
            for (size_t i = 0; i < n; i += 1024) {
                size_t m = n - i < 1024 ? n - i : 1024;
                if (r->scale == 1.f) {
                    ig__f32_to_f16_n(src + 4 * i, (uint16_t *)dst + i, m, true);
                    continue;
                }
                for (size_t k = 0; k < m; k++) tmp[k] = ig__load_f32(src + 4 * (i + k)) * r->scale;
                ig__f32_to_f16_n(tmp, (uint16_t *)dst + i, m, true);
            }
        } else if (x->c.dtype == INGOT_DTYPE_FLOAT) {
            const unsigned char *src = x->c.data;
            for (size_t i = 0; i < n; i++) put_f(r->dtype, dst, i, (double)(ig__load_f32(src + 4 * i) * r->scale));
        } else if (ig__dtype_is_float(x->c.dtype) || ig__dtype_is_float(r->dtype)) {
            for (size_t i = 0; i < n; i++)
                put_f(r->dtype, dst, i, ig__elem_f64(x->c.dtype, x->c.data, (int64_t)i) * r->scale);
        } else {
            for (size_t i = 0; i < n; i++)
                ig__elem_set_i64(r->dtype, dst, (int64_t)i, ig__elem_i64(x->c.dtype, x->c.data, (int64_t)i));
        }
        return INGOT_OK;
    }
    case IG_W_CONV_W: {
        const ig_value *w = cval(g, r->src);
        if (!w || !(w->flags & IG_VAL_CONST) || (w->shape.rank != 4 && w->shape.rank != 3))
            return ig__errf(err, INGOT_ERR_INTERNAL, "convolution filter is not a constant of rank 3 or 4");
        int64_t K = w->shape.d[0].n, C = w->shape.d[1].n;
        int64_t R = w->shape.rank == 4 ? w->shape.d[2].n : 1, S = w->shape.d[w->shape.rank - 1].n;
        if ((size_t)(K * C * R * S) * es != r->bytes)
            return ig__errf(err, INGOT_ERR_INTERNAL, "convolution filter '%s': size mismatch", w->name);
        if ((st = bn_vectors(g, r, K, &scale, &shift, err)) != INGOT_OK) return st;
        /* fp32 filters (nearly all): reordered in fp32, then converted in bulk */
        float *tmp =
            w->c.dtype == INGOT_DTYPE_FLOAT && (r->dtype == INGOT_DTYPE_FLOAT || r->dtype == INGOT_DTYPE_FLOAT16)
                ? ig__malloc(sizeof(float) * (size_t)(K * C * R * S) + 4)
                : NULL;
        for (int64_t k = 0; k < K; k++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t y = 0; y < R; y++)
                    for (int64_t x = 0; x < S; x++) {
                        int64_t si = ((k * C + c) * R + y) * S + x;
                        int64_t di = r->nhwc == 2 ? (y * S + x) * K + k : r->nhwc ? ((k * R + y) * S + x) * C + c : si;
                        if (tmp) {
                            float f = ig__load_f32((const unsigned char *)w->c.data + 4 * si);
                            tmp[di] = scale ? (float)((double)f * scale[k]) : f;
                            continue;
                        }
                        double v = ig__elem_f64(w->c.dtype, w->c.data, si);
                        if (scale) v *= scale[k];
                        put_f(r->dtype, dst, (size_t)di, v);
                    }
        if (tmp && r->dtype == INGOT_DTYPE_FLOAT16)
            ig__f32_to_f16_n(tmp, dst, (size_t)(K * C * R * S), true);
        else if (tmp)
            memcpy(dst, tmp, sizeof(float) * (size_t)(K * C * R * S));
        ig__free(tmp);
        break;
    }
    case IG_W_CONV_B: {
        int64_t K = r->n_out;
        const ig_value *b = cval(g, r->src);
        if (b && numel_of_value(b) != K)
            return ig__errf(err, INGOT_ERR_MODEL_INVALID, "convolution bias '%s' does not have %" PRId64 " elements",
                            b->name, K);
        if ((st = bn_vectors(g, r, K, &scale, &shift, err)) != INGOT_OK) return st;
        for (int64_t k = 0; k < K; k++) {
            double v = b ? ig__elem_f64(b->c.dtype, b->c.data, k) : 0.0;
            if (scale) v = v * scale[k] + shift[k];
            put_f(r->dtype, dst, (size_t)k, v);
        }
        break;
    }
    case IG_W_BN_SCALE:
    case IG_W_BN_SHIFT: {
        int64_t K = r->n_out;
        if ((st = bn_vectors(g, r, K, &scale, &shift, err)) != INGOT_OK) return st;
        if (!scale) return ig__errf(err, INGOT_ERR_INTERNAL, "BatchNormalization request without parameters");
        for (int64_t k = 0; k < K; k++) put_f(r->dtype, dst, (size_t)k, r->kind == IG_W_BN_SCALE ? scale[k] : shift[k]);
        break;
    }
    default: return ig__errf(err, INGOT_ERR_INTERNAL, "unknown weight request kind %d", (int)r->kind);
    }
    ig__free(scale);
    ig__free(shift);
    return INGOT_OK;
}

void ig__cu_weights_free(ig_cu_weights *w)
{
    if (!w) return;
    if (w->dev) ig__cu_free(w->dev);
    ig__free(w->reqs);
    ig__free(w->offsets);
    memset(w, 0, sizeof *w);
}

uint64_t ig__cu_weights_find(const ig_cu_weights *w, const ig_cu_wreq *r)
{
    for (int32_t i = 0; i < w->n; i++)
        if (ig__cu_wreq_same(&w->reqs[i], r)) return w->offsets[i];
    return UINT64_MAX;
}

/* Converting the weights is most of an engine's creation (or an engine file's load): the requests are
 * independent, so FILL_THREADS threads take them in turn. */
#define FILL_THREADS 8

typedef struct fill_job {
    const ig_graph *g;
    const ig_cu_weights *w;
    unsigned char *host;
    atomic_int next, failed;
    ig_err err; /* the first failure */
    pthread_mutex_t lock;
} fill_job;

static void *fill_worker(void *arg)
{
    fill_job *j = arg;
    for (;;) {
        int i = atomic_fetch_add(&j->next, 1);
        if (i >= j->w->n || atomic_load(&j->failed)) return NULL;
        ig_err e = {0};
        if (ig__cu_wreq_fill(j->g, &j->w->reqs[i], j->host + j->w->offsets[i], &e) != INGOT_OK) {
            pthread_mutex_lock(&j->lock);
            if (!atomic_exchange(&j->failed, 1)) j->err = e;
            pthread_mutex_unlock(&j->lock);
            return NULL;
        }
    }
}

static ingot_status fill_all(const ig_graph *g, const ig_cu_weights *w, unsigned char *host, ig_err *err)
{
    fill_job j = {.g = g, .w = w, .host = host};
    atomic_init(&j.next, 0);
    atomic_init(&j.failed, 0);
    pthread_mutex_init(&j.lock, NULL);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = w->n < FILL_THREADS ? w->n : FILL_THREADS;
    if (cores > 0 && n > cores) n = (int)cores;
    pthread_t t[FILL_THREADS];
    int started = 0;
    for (int k = 1; k < n; k++) /* this thread is worker 0 */
        if (pthread_create(&t[started], NULL, fill_worker, &j) == 0) started++;
    fill_worker(&j);
    for (int k = 0; k < started; k++) pthread_join(t[k], NULL);
    pthread_mutex_destroy(&j.lock);
    if (!atomic_load(&j.failed)) return INGOT_OK;
    *err = j.err;
    return err->status;
}

ingot_status ig__cu_weights_build(const ig_graph *g, const ig_cu_prog *p, ig_cu_weights *w, ig_err *err)
{
    ig__cu_weights_free(w);
    ingot_status st = INGOT_OK;
    int32_t n = 0;
    for (int32_t i = 0; i < p->n_wreqs; i++) n += p->wreqs[i].all_initializers;
    w->reqs = ig__calloc((size_t)n + 1, sizeof *w->reqs);
    w->offsets = ig__calloc((size_t)n + 1, sizeof *w->offsets);
    if (!w->reqs || !w->offsets) {
        ig__cu_weights_free(w);
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    uint64_t off = 0;
    for (int32_t i = 0; i < p->n_wreqs; i++) {
        if (!p->wreqs[i].all_initializers) continue;
        w->reqs[w->n] = p->wreqs[i];
        w->offsets[w->n++] = off;
        off += (p->wreqs[i].bytes + WEIGHT_ALIGN - 1) / WEIGHT_ALIGN * WEIGHT_ALIGN;
    }
    w->bytes = off;
    unsigned char *host = off ? malloc(off) : NULL;
    if (off && !host) {
        ig__cu_weights_free(w);
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of host memory staging %zu bytes of weights", (size_t)off);
    }
    if ((st = fill_all(g, w, host, err)) != INGOT_OK) goto fail;
    cudaError_t ce = ig__cu_malloc(&w->dev, off ? off : WEIGHT_ALIGN);
    if (ce != cudaSuccess) {
        cudaGetLastError(); /* a failed allocation is no device fault: clear it (a sticky one stays) */
        if (ce == cudaErrorMemoryAllocation) {
            size_t free_b = 0, total_b = 0;
            if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) cudaGetLastError();
            st = ig__errf(err, INGOT_ERR_DEVICE_OOM,
                          "weights need %zu bytes of device memory, %zu are free (cudaMalloc: %s)", (size_t)off, free_b,
                          cudaGetErrorName(ce));
        } else {
            st = ig__cu_status(err, ce, "cudaMalloc(weights)", NULL, __FILE__, __LINE__);
            ig__err_prefix(err, "allocating %zu bytes of device memory for the weights", (size_t)off);
        }
        goto fail;
    }
    if (off && (st = IG_CU(err, NULL, cudaMemcpy(w->dev, host, off, cudaMemcpyHostToDevice))) != INGOT_OK) goto fail;
    free(host);
    return INGOT_OK;
fail:
    free(host);
    ig__cu_weights_free(w);
    return st;
}
