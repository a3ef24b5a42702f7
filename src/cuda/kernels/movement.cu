/*
 * movement.cu -- kernels that move data by index rather than elementwise: Gather, 2-D pooling and
 * depthwise convolution. (Transposes, slices, concatenation and broadcasts are strided views copied by
 * elementwise.cu.)
 */
#include "kernels.h"
#include "sm_count.cuh"
#include "ingot.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#define MOVE_BLOCK 256

/* ---- Gather ------------------------------------------------------------------------------------ */

/* One thread per CS-byte chunk of the output; a row of `inner` elements is copied in chunks, so for
 * embeddings (inner = 768 fp16) each thread moves 16 bytes. */
template <typename C> __global__ void gather_kernel(const ig_gather_args a, int64_t chunks_per_row, int64_t n_chunks)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_chunks) return;
    const int64_t ch = t % chunks_per_row;
    const int64_t row = t / chunks_per_row; /* over (outer, n_idx) */
    const int64_t j = row % a.n_idx, o = row / a.n_idx;
    int64_t k = a.idx_dtype == INGOT_DTYPE_INT32 ? (int64_t)((const int *)a.idx)[j] : ((const long long *)a.idx)[j];
    if (k < 0) k += a.axis_dim;
    if (k < 0 || k >= a.axis_dim) k = 0; /* out of range: ONNX leaves it undefined; never read outside */
    const C *src = (const C *)a.x + (o * a.axis_dim + k) * chunks_per_row + ch;
    C *dst = (C *)a.y + row * chunks_per_row + ch;
    *dst = *src;
}

extern "C" cudaError_t ingot_cuda_gather(const ig_gather_args *a, cudaStream_t s)
{
    const int64_t row_bytes = a->inner * a->esize;
    const int64_t rows = a->outer * a->n_idx;
    if (rows <= 0 || row_bytes <= 0) return cudaSuccess;
    int cs = 1;
    const uintptr_t al = (uintptr_t)a->x | (uintptr_t)a->y;
    for (int c = 16; c > 1; c >>= 1)
        if (row_bytes % c == 0 && al % c == 0) {
            cs = c;
            break;
        }
    const int64_t cpr = row_bytes / cs, n = rows * cpr;
    const unsigned blocks = (unsigned)((n + MOVE_BLOCK - 1) / MOVE_BLOCK);
    switch (cs) {
    case 16: gather_kernel<uint4><<<blocks, MOVE_BLOCK, 0, s>>>(*a, cpr, n); break;
    case 8: gather_kernel<uint2><<<blocks, MOVE_BLOCK, 0, s>>>(*a, cpr, n); break;
    case 4: gather_kernel<uint32_t><<<blocks, MOVE_BLOCK, 0, s>>>(*a, cpr, n); break;
    case 2: gather_kernel<uint16_t><<<blocks, MOVE_BLOCK, 0, s>>>(*a, cpr, n); break;
    default: gather_kernel<uint8_t><<<blocks, MOVE_BLOCK, 0, s>>>(*a, cpr, n); break;
    }
    return cudaGetLastError();
}

/* ---- shared by pooling and depthwise convolution ------------------------------------------------- */
/* The thread bodies are __host__ __device__ so that tests/gpu/test_movement_host.cu can run each thread
 * on the host, against a reference, without a GPU. */

#define IG_HD __host__ __device__ __forceinline__
#ifndef IG_VEC_ALIGNED /* the host test counts the vector accesses not aligned to their size */
#define IG_VEC_ALIGNED(p, bytes)
#endif

IG_HD float to_f(float v) { return v; }
IG_HD float to_f(__half v) { return __half2float(v); }
IG_HD float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> IG_HD T from_f(float v);
template <> IG_HD float from_f<float>(float v) { return v; }
template <> IG_HD __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> IG_HD __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <int B> struct vbytes;
template <> struct vbytes<16> {
    typedef uint4 t;
};
template <> struct vbytes<8> {
    typedef uint2 t;
};
template <> struct vbytes<4> {
    typedef uint32_t t;
};
template <> struct vbytes<2> {
    typedef uint16_t t;
};

/* V neighbouring elements at p as floats, in one access of V * sizeof(T) bytes (p aligned to that);
 * memcpy rather than a pointer cast: the host compiler's aliasing rules, registers either way. */
template <typename T, int V> IG_HD void vload(const T *p, float (&o)[V])
{
    typedef typename vbytes<V * sizeof(T)>::t U;
    IG_VEC_ALIGNED(p, sizeof(U));
    const U u = *(const U *)p;
    T e[V];
    memcpy(e, &u, sizeof u);
#pragma unroll
    for (int k = 0; k < V; k++) o[k] = to_f(e[k]);
}

template <typename T, int V> IG_HD void vstore(T *p, const float (&v)[V])
{
    typedef typename vbytes<V * sizeof(T)>::t U;
    T e[V];
#pragma unroll
    for (int k = 0; k < V; k++) e[k] = from_f<T>(v[k]);
    U u;
    memcpy(&u, e, sizeof u);
    IG_VEC_ALIGNED(p, sizeof(U));
    *(U *)p = u;
}

/* The widest vector of channels, at most vmax elements, every access of a step can take: channels
 * innermost in x and y, C and the strides of the other dims (those longer than 1) multiples of it, and
 * each pointer (NULL passes) aligned to its bytes. 1 otherwise. */
static int vec_width(int vmax, int esize, int64_t c, const int64_t xd[4], const int64_t xs[4], const int64_t yd[4],
                     const int64_t ys[4], const void *p0, const void *p1, const void *p2, const void *p3)
{
    if (xs[1] != 1 || ys[1] != 1) return 1;
    for (int v = vmax; v > 1; v /= 2) {
        bool ok = c % v == 0;
        for (int k = 0; k < 4; k++)
            if (k != 1) ok = ok && (xd[k] == 1 || xs[k] % v == 0) && (yd[k] == 1 || ys[k] % v == 0);
        const uintptr_t al = (uintptr_t)p0 | (uintptr_t)p1 | (uintptr_t)p2 | (uintptr_t)p3;
        if (ok && al % (uintptr_t)(v * esize) == 0) return v;
    }
    return 1;
}

/* Farthest element from the base a view of dims d and strides s reaches. */
static int64_t reach(const int64_t d[4], const int64_t s[4])
{
    int64_t r = 0;
    for (int k = 0; k < 4; k++) r += (d[k] - 1) * (s[k] < 0 ? -s[k] : s[k]);
    return r;
}

/* 32-bit index math (a 64-bit division costs ~70 instructions) when every offset and thread number fits,
 * with room for a block past the last thread and a vector past the last offset. */
static bool fits_i32(int64_t threads, int64_t r0, int64_t r1, int64_t r2)
{
    const int64_t lim = INT32_MAX - 4096;
    return threads < lim && r0 < lim && r1 < lim && r2 < lim;
}

static int esize_of(int32_t dtype) { return dtype == INGOT_DTYPE_FLOAT ? 4 : 2; }

/* ---- pooling ------------------------------------------------------------------------------------- */

/* max keeps a NaN once seen (v != v), as the CPU backend does */
IG_HD float pool_add(int is_max, float acc, float v) { return is_max ? (v > acc || v != v ? v : acc) : acc + v; }

/* Taps start + k * d (k < kk) of a window along one axis that fall in [lo, hi). */
IG_HD int taps_in(int start, int kk, int d, int lo, int hi)
{
    int n = 0;
    for (int k = 0; k < kk; k++) n += start + k * d >= lo && start + k * d < hi;
    return n;
}

/* An average's divisor: the window's taps inside the input, or with count_include_pad inside the padded
 * input (a window past the end pad, with ceil_mode, counts only up to it). The window is a grid, so
 * that is rows x columns. */
IG_HD int pool_count(const ig_pool_args &a, int h0, int w0)
{
    const bool pad = a.count_include_pad;
    return taps_in(h0, a.kh, a.dh, pad ? -a.ph : 0, (int)a.h + (pad ? a.eh : 0)) *
           taps_in(w0, a.kw, a.dw, pad ? -a.pw : 0, (int)a.w + (pad ? a.ew : 0));
}

IG_HD float pool_out(const ig_pool_args &a, float acc, int h0, int w0)
{
    if (a.is_max) return acc;
    const int n = pool_count(a, h0, w0);
    return n ? acc / (float)n : 0.f;
}

/* Thread t of a channels-last pooling: channels c .. c + V - 1 of output pixel (n, oh, ow), its window's
 * first tap (h0, w0), and the offsets of channel c at image n in x and of the outputs in y. */
template <typename I> struct pool_px {
    int h0, w0;
    I x0, y0;
};
template <int V, typename I> IG_HD pool_px<I> pool_cl_at(const ig_pool_args &a, I t)
{
    const I cv = (I)a.c / V;
    const I c = t % cv * V;
    t /= cv;
    const int ow = (int)(t % (I)a.ow);
    t /= (I)a.ow;
    const int oh = (int)(t % (I)a.oh);
    const I n = t / (I)a.oh;
    pool_px<I> q;
    q.h0 = oh * a.sh - a.ph, q.w0 = ow * a.sw - a.pw;
    q.x0 = n * (I)a.xs[0] + c * (I)a.xs[1];
    q.y0 = n * (I)a.ys[0] + c * (I)a.ys[1] + oh * (I)a.ys[2] + ow * (I)a.ys[3];
    return q;
}

/* f(offset in x) for each tap of q's window that lies inside the input. */
template <typename I, typename F> IG_HD void pool_taps(const ig_pool_args &a, const pool_px<I> &q, F &&f)
{
    for (int i = 0; i < a.kh; i++) {
        const int ih = q.h0 + i * a.dh;
        if (ih < 0 || ih >= a.h) continue;
        for (int j = 0; j < a.kw; j++) {
            const int iw = q.w0 + j * a.dw;
            if (iw < 0 || iw >= a.w) continue;
            f(q.x0 + ih * (I)a.xs[2] + iw * (I)a.xs[3]);
        }
    }
}

/* The max of fp16 channels-last windows two channels an instruction, in half precision: a max is
 * exact in any precision, so this equals the float path, NaN kept once seen (__hmax2_nan). Converting
 * each tap to float and comparing with a NaN check took ~4 instructions an element; ResNet-50's max
 * pool at b256 issued from 75% of the SMs' issue slots at 2.2 TB/s (ncu, 2026-12-02). */
template <int V, typename I> IG_HD void pool_cl_maxh(const ig_pool_args &a, I t)
{
    static_assert(V % 2 == 0, "channel pairs");
    typedef typename vbytes<V * 2>::t U;
    const pool_px<I> q = pool_cl_at<V, I>(a, t);
    const __half *x = (const __half *)a.x;
    const uint16_t ninf_bits = 0xFC00;
    __half ninf;
    memcpy(&ninf, &ninf_bits, sizeof ninf);
    __half2 acc[V / 2];
#pragma unroll
    for (int k = 0; k < V / 2; k++) acc[k] = __halves2half2(ninf, ninf);
    pool_taps(a, q, [&](I off) {
        IG_VEC_ALIGNED(x + off, sizeof(U));
        const U u = *(const U *)(x + off);
        __half2 h[V / 2];
        memcpy(h, &u, sizeof u);
#pragma unroll
        for (int k = 0; k < V / 2; k++) acc[k] = __hmax2_nan(acc[k], h[k]);
    });
    U u;
    memcpy(&u, acc, sizeof u);
    __half *y = (__half *)a.y + q.y0;
    IG_VEC_ALIGNED(y, sizeof(U));
    *(U *)y = u;
}

/* y channels-last: a thread takes V channels of one output pixel (V-element vector loads and stores, V
 * from the strides and the pointers' alignment); neighbouring threads take neighbouring channels. V = 1
 * serves any layout. */
template <typename T, int V, typename I> IG_HD void pool_cl(const ig_pool_args &a, I t)
{
    const pool_px<I> q = pool_cl_at<V, I>(a, t);
    const T *x = (const T *)a.x;
    float acc[V];
#pragma unroll
    for (int k = 0; k < V; k++) acc[k] = a.is_max ? -INFINITY : 0.f;
    pool_taps(a, q, [&](I off) {
        float v[V];
        vload<T, V>(x + off, v);
#pragma unroll
        for (int k = 0; k < V; k++) acc[k] = pool_add(a.is_max, acc[k], v[k]);
    });
#pragma unroll
    for (int k = 0; k < V; k++) acc[k] = pool_out(a, acc[k], q.h0, q.w0);
    vstore<T, V>((T *)a.y + q.y0, acc);
}

/* y not channels-last (NCHW): a thread takes a strip of TW neighbouring output pixels of one row,
 * neighbouring threads neighbouring strips. With TW > 1 (stride S along W, no dilation) each input
 * column of the strip is loaded once and given to every pixel whose window holds it: a 3x3 stride-1
 * window loads 6 columns a row for 4 pixels where one pixel a thread loads 12. TW = 1 (S = 0: the
 * stride from the arguments) takes any stride and dilation. */
template <typename T, int S, int TW, typename I> IG_HD void pool_rows(const ig_pool_args &a, I t)
{
    const I owt = ((I)a.ow + TW - 1) / TW;
    I r = t;
    const int ow0 = (int)(r % owt) * TW;
    r /= owt;
    const int oh = (int)(r % (I)a.oh);
    r /= (I)a.oh;
    const I c = r % (I)a.c, n = r / (I)a.c;
    const int sw = S ? S : a.sw;
    const int h0 = oh * a.sh - a.ph, w0 = ow0 * sw - a.pw;
    const T *x = (const T *)a.x + n * (I)a.xs[0] + c * (I)a.xs[1];
    const I xw = (I)a.xs[3];
    float acc[TW];
#pragma unroll
    for (int p = 0; p < TW; p++) acc[p] = a.is_max ? -INFINITY : 0.f;
    for (int i = 0; i < a.kh; i++) {
        const int ih = h0 + i * a.dh;
        if (ih < 0 || ih >= a.h) continue;
        const T *row = x + ih * (I)a.xs[2];
        if constexpr (TW == 1) {
            for (int j = 0; j < a.kw; j++) {
                const int iw = w0 + j * a.dw;
                if (iw >= 0 && iw < a.w) acc[0] = pool_add(a.is_max, acc[0], to_f(row[iw * xw]));
            }
            continue;
        }
        const int ncol = (TW - 1) * S + a.kw;
        for (int col = 0; col < ncol; col++) {
            const int iw = w0 + col;
            if (iw < 0 || iw >= a.w) continue;
            const float v = to_f(row[iw * xw]);
#pragma unroll
            for (int p = 0; p < TW; p++) /* pixel p's tap col - p * S, when that is one */
                if (col - p * S >= 0 && col - p * S < a.kw) acc[p] = pool_add(a.is_max, acc[p], v);
        }
    }
    T *y = (T *)a.y + n * (I)a.ys[0] + c * (I)a.ys[1] + oh * (I)a.ys[2];
#pragma unroll
    for (int p = 0; p < TW; p++) {
        const int ow = ow0 + p;
        if (ow >= a.ow) break;
        y[ow * (I)a.ys[3]] = from_f<T>(pool_out(a, acc[p], h0, ow * sw - a.pw));
    }
}

/* One thread of a channels-last pooling: fp16 max in half precision, the rest through floats. */
template <typename T, int V, typename I> IG_HD void pool_cl_thread(const ig_pool_args &a, I t)
{
    if constexpr (std::is_same<T, __half>::value && V % 2 == 0) {
        if (a.is_max) {
            pool_cl_maxh<V, I>(a, t);
            return;
        }
    }
    pool_cl<T, V, I>(a, t);
}

template <typename T, int V, typename I> __global__ void pool_cl_kernel(const ig_pool_args a, I threads)
{
    const I t = (I)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < threads) pool_cl_thread<T, V, I>(a, t);
}

template <typename T, int S, int TW, typename I> __global__ void pool_rows_kernel(const ig_pool_args a, I threads)
{
    const I t = (I)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < threads) pool_rows<T, S, TW, I>(a, t);
}

/* What ingot_cuda_pool launches: channels-last with V channels a thread, or rows with strips of TW
 * pixels at stride S; 32- or 64-bit indices. */
struct pool_plan {
    bool cl, i32;
    int v, s, tw;
    int64_t threads;
};

static pool_plan plan_pool(const ig_pool_args *a)
{
    pool_plan p = {};
    const int es = esize_of(a->dtype);
    const int64_t xd[4] = {a->n, a->c, a->h, a->w}, yd[4] = {a->n, a->c, a->oh, a->ow};
    p.cl = a->ys[1] == 1 && a->c > 1;
    if (p.cl) {
        p.v = vec_width(16 / es, es, a->c, xd, a->xs, yd, a->ys, a->x, a->y, NULL, NULL);
        p.threads = a->n * a->oh * a->ow * (a->c / p.v);
    } else {
        p.s = a->dw == 1 && (a->sw == 1 || a->sw == 2) && a->ow > 1 ? a->sw : 0;
        p.tw = p.s ? 4 : 1;
        p.threads = a->n * a->c * a->oh * ((a->ow + p.tw - 1) / p.tw);
    }
    p.i32 = fits_i32(p.threads, reach(xd, a->xs), reach(yd, a->ys), 0);
    return p;
}

template <typename T, typename I> static void launch_pool(const ig_pool_args *a, const pool_plan &p, cudaStream_t s)
{
    const unsigned blocks = (unsigned)((p.threads + MOVE_BLOCK - 1) / MOVE_BLOCK);
    const I n = (I)p.threads;
    if (p.cl) {
        switch (p.v) {
        case 8: /* 2-byte types only (vec_width gives fp32 at most 4) */
            if constexpr (sizeof(T) == 2) pool_cl_kernel<T, 8, I><<<blocks, MOVE_BLOCK, 0, s>>>(*a, n);
            break;
        case 4: pool_cl_kernel<T, 4, I><<<blocks, MOVE_BLOCK, 0, s>>>(*a, n); break;
        case 2: pool_cl_kernel<T, 2, I><<<blocks, MOVE_BLOCK, 0, s>>>(*a, n); break;
        default: pool_cl_kernel<T, 1, I><<<blocks, MOVE_BLOCK, 0, s>>>(*a, n); break;
        }
    } else if (p.s == 1) {
        pool_rows_kernel<T, 1, 4, I><<<blocks, MOVE_BLOCK, 0, s>>>(*a, n);
    } else if (p.s == 2) {
        pool_rows_kernel<T, 2, 4, I><<<blocks, MOVE_BLOCK, 0, s>>>(*a, n);
    } else {
        pool_rows_kernel<T, 0, 1, I><<<blocks, MOVE_BLOCK, 0, s>>>(*a, n);
    }
}

template <typename T> static void launch_pool_t(const ig_pool_args *a, const pool_plan &p, cudaStream_t s)
{
    if (p.i32)
        launch_pool<T, int32_t>(a, p, s);
    else
        launch_pool<T, int64_t>(a, p, s);
}

extern "C" cudaError_t ingot_cuda_pool(const ig_pool_args *a, cudaStream_t s)
{
    if (a->n * a->c * a->oh * a->ow <= 0) return cudaSuccess;
    const pool_plan p = plan_pool(a);
    switch (a->dtype) {
    case INGOT_DTYPE_FLOAT: launch_pool_t<float>(a, p, s); break;
    case INGOT_DTYPE_FLOAT16: launch_pool_t<__half>(a, p, s); break;
    case INGOT_DTYPE_BFLOAT16: launch_pool_t<__nv_bfloat16>(a, p, s); break;
    default: return cudaErrorInvalidValue; /* the lowering passes float types only */
    }
    return cudaGetLastError();
}

extern "C" void ingot_cuda_pool_describe(const ig_pool_args *a, char *buf, size_t n)
{
    const pool_plan p = plan_pool(a);
    if (p.cl)
        snprintf(buf, n, "channels-last x%d%s", p.v, p.i32 ? "" : " i64");
    else
        snprintf(buf, n, "rows x%d%s", p.tw, p.i32 ? "" : " i64");
}

/* ---- depthwise convolution ------------------------------------------------------------------------- */

IG_HD float act_f(const ig_dwconv_args &a, float v)
{
    if (a.act == IG_ACT_RELU) return v > 0.f ? v : 0.f;
    if (a.act == IG_ACT_CLIP) return fminf(fmaxf(v, a.lo), a.hi);
    return v;
}

/* Channels-last fp16, C % 8 == 0: a thread computes 8 channels of one output pixel; every load of x
 * and w is 16 bytes; neighbouring threads take neighbouring channels (coalesced). */
__global__ void dwconv_nhwc8_kernel(const ig_dwconv_args a)
{
    const int64_t c8n = a.c / 8;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.n * a.oh * a.ow * c8n) return;
    int64_t r = t;
    const int64_t c8 = r % c8n;
    r /= c8n;
    const int64_t ow = r % a.ow;
    r /= a.ow;
    const int64_t oh = r % a.oh;
    const int64_t n = r / a.oh;
    float acc[8];
    if (a.b) {
        uint4 u = *(const uint4 *)((const __half *)a.b + c8 * 8);
        const __half2 *h2 = (const __half2 *)&u;
#pragma unroll
        for (int q = 0; q < 4; q++) {
            float2 f = __half22float2(h2[q]);
            acc[2 * q] = f.x;
            acc[2 * q + 1] = f.y;
        }
    } else {
#pragma unroll
        for (int j = 0; j < 8; j++) acc[j] = 0.f;
    }
    const __half *x = (const __half *)a.x + n * a.xs[0] + c8 * 8;
    const __half *w = (const __half *)a.filt + c8 * 8;
    for (int i = 0; i < a.kh; i++) {
        const int64_t ih = oh * a.sh - a.ph + (int64_t)i * a.dh;
        if (ih < 0 || ih >= a.h) continue;
        for (int j = 0; j < a.kw; j++) {
            const int64_t iw = ow * a.sw - a.pw + (int64_t)j * a.dw;
            if (iw < 0 || iw >= a.w) continue;
            uint4 xu = *(const uint4 *)(x + ih * a.xs[2] + iw * a.xs[3]);
            uint4 wu = *(const uint4 *)(w + (int64_t)(i * a.kw + j) * a.c);
            const __half2 *xh = (const __half2 *)&xu, *wh = (const __half2 *)&wu;
#pragma unroll
            for (int q = 0; q < 4; q++) {
                float2 xf = __half22float2(xh[q]), wf = __half22float2(wh[q]);
                acc[2 * q] = fmaf(xf.x, wf.x, acc[2 * q]);
                acc[2 * q + 1] = fmaf(xf.y, wf.y, acc[2 * q + 1]);
            }
        }
    }
    uint32_t o[4];
#pragma unroll
    for (int q = 0; q < 4; q++) {
        __half2 h = __floats2half2_rn(act_f(a, acc[2 * q]), act_f(a, acc[2 * q + 1]));
        o[q] = *(uint32_t *)&h;
    }
    *(uint4 *)((__half *)a.y + n * a.ys[0] + oh * a.ys[2] + ow * a.ys[3] + c8 * 8) = make_uint4(o[0], o[1], o[2], o[3]);
}

/* 8 halves at p (16-byte aligned) as floats. */
__device__ __forceinline__ void load8_h(const __half *p, float (&o)[8])
{
    uint4 u = *(const uint4 *)p;
    const __half2 *h2 = (const __half2 *)&u;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        float2 f = __half22float2(h2[q]);
        o[2 * q] = f.x;
        o[2 * q + 1] = f.y;
    }
}

/* The same for a strip of TW neighbouring output pixels of one row (kernel width KW, stride S along W,
 * no dilation): each input column of the row is loaded once for the strip, where one pixel per thread
 * loads KW * kh of them for each pixel; a filter row is loaded once per strip. For ConvNeXt's 7x7 that
 * is 2.8 times fewer loads. */
template <int KW, int S, int TW> __global__ void dwconv_nhwc8_strip_kernel(const ig_dwconv_args a)
{
    const int64_t c8n = a.c / 8, owt = (a.ow + TW - 1) / TW;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.n * a.oh * owt * c8n) return;
    int64_t r = t;
    const int64_t c8 = r % c8n;
    r /= c8n;
    const int64_t ow0 = (r % owt) * TW;
    r /= owt;
    const int64_t oh = r % a.oh;
    const int64_t n = r / a.oh;
    float acc[TW][8];
    float b0[8];
    if (a.b) {
        load8_h((const __half *)a.b + c8 * 8, b0);
    } else {
#pragma unroll
        for (int j = 0; j < 8; j++) b0[j] = 0.f;
    }
#pragma unroll
    for (int p = 0; p < TW; p++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[p][j] = b0[j];
    const __half *x = (const __half *)a.x + n * a.xs[0] + c8 * 8;
    const __half *w = (const __half *)a.filt + c8 * 8;
    const int64_t iw0 = ow0 * S - a.pw;
    for (int i = 0; i < a.kh; i++) {
        const int64_t ih = oh * a.sh - a.ph + (int64_t)i;
        if (ih < 0 || ih >= a.h) continue;
        float wf[KW][8];
#pragma unroll
        for (int j = 0; j < KW; j++) load8_h(w + (int64_t)(i * KW + j) * a.c, wf[j]);
#pragma unroll
        for (int col = 0; col < (TW - 1) * S + KW; col++) {
            const int64_t iw = iw0 + col;
            if (iw < 0 || iw >= a.w) continue;
            float xf[8];
            load8_h(x + ih * a.xs[2] + iw * a.xs[3], xf);
            /* pixel p takes this column as its tap col - p * S, when that is one */
#pragma unroll
            for (int p = 0; p < TW; p++) {
                const int tap = col - p * S;
                if (tap < 0 || tap >= KW) continue;
#pragma unroll
                for (int j = 0; j < 8; j++) acc[p][j] = fmaf(xf[j], wf[tap][j], acc[p][j]);
            }
        }
    }
#pragma unroll
    for (int p = 0; p < TW; p++) {
        if (ow0 + p >= a.ow) break;
        uint32_t o[4];
#pragma unroll
        for (int q = 0; q < 4; q++) {
            __half2 h = __floats2half2_rn(act_f(a, acc[p][2 * q]), act_f(a, acc[p][2 * q + 1]));
            o[q] = *(uint32_t *)&h;
        }
        *(uint4 *)((__half *)a.y + n * a.ys[0] + oh * a.ys[2] + (ow0 + p) * a.ys[3] + c8 * 8) =
            make_uint4(o[0], o[1], o[2], o[3]);
    }
}

/* Any layout and float type: a thread takes V channels of one output pixel, neighbouring threads
 * neighbouring channels. V > 1 (channels-last, 2 or 4 channels: fp16 4- or 8-byte, fp32 8- or 16-byte
 * accesses) serves the channel counts the 8-channel kernels cannot take, ghostnet's 36, 60, 100; V = 1
 * any layout. */
template <typename T, int V, typename I> IG_HD void dwconv_cl(const ig_dwconv_args &a, I t)
{
    const I cv = (I)a.c / V;
    I r = t;
    const I c = r % cv * V;
    r /= cv;
    const int ow = (int)(r % (I)a.ow);
    r /= (I)a.ow;
    const int oh = (int)(r % (I)a.oh);
    const I n = r / (I)a.oh;
    float acc[V];
    if (a.b) {
        vload<T, V>((const T *)a.b + c, acc);
    } else {
#pragma unroll
        for (int k = 0; k < V; k++) acc[k] = 0.f;
    }
    const T *x = (const T *)a.x + n * (I)a.xs[0] + c * (I)a.xs[1];
    const T *w = (const T *)a.filt + c;
    const int h0 = oh * a.sh - a.ph, w0 = ow * a.sw - a.pw;
    for (int i = 0; i < a.kh; i++) {
        const int ih = h0 + i * a.dh;
        if (ih < 0 || ih >= a.h) continue;
        for (int j = 0; j < a.kw; j++) {
            const int iw = w0 + j * a.dw;
            if (iw < 0 || iw >= a.w) continue;
            float xv[V], wv[V];
            vload<T, V>(x + ih * (I)a.xs[2] + iw * (I)a.xs[3], xv);
            vload<T, V>(w + (I)(i * a.kw + j) * (I)a.c, wv);
#pragma unroll
            for (int k = 0; k < V; k++) acc[k] = fmaf(xv[k], wv[k], acc[k]);
        }
    }
#pragma unroll
    for (int k = 0; k < V; k++) acc[k] = act_f(a, acc[k]);
    vstore<T, V>((T *)a.y + n * (I)a.ys[0] + c * (I)a.ys[1] + oh * (I)a.ys[2] + ow * (I)a.ys[3], acc);
}

template <typename T, int V, typename I> __global__ void dwconv_cl_kernel(const ig_dwconv_args a, I threads)
{
    const I t = (I)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < threads) dwconv_cl<T, V, I>(a, t);
}

/* INGOT_CUDA_DWCONV_STRIP=0 keeps one pixel per thread, =force takes strips wherever they apply, however
 * small the grid (the test cases are too small for strips otherwise); read once per process. */
static int dwconv_strip_mode(void) /* 0 off, 1 by size, 2 forced */
{
    static const int mode = [] {
        const char *v = getenv("INGOT_CUDA_DWCONV_STRIP");
        return v && v[0] == '0' ? 0 : v && strcmp(v, "force") == 0 ? 2 : 1;
    }();
    return mode;
}

/* Threads the GPU holds at once (multiprocessors x 2048). */
static int64_t resident_threads(void) { return (int64_t)ig_sm_count() * 2048; }

/* fp16, channels-last on both sides, C % 8 == 0, 16-byte aligned: the 8-channel kernels' conditions */
static bool nhwc8(int32_t dtype, int64_t c, const int64_t *xs, const int64_t *ys, const void *x, const void *y)
{
    if (dtype != INGOT_DTYPE_FLOAT16 || c % 8 || xs[1] != 1 || ys[1] != 1) return false;
    for (int k = 0; k < 4; k++)
        if (k != 1 && (xs[k] % 8 || ys[k] % 8)) return false;
    return ((uintptr_t)x % 16) == 0 && ((uintptr_t)y % 16) == 0;
}

/* What ingot_cuda_dwconv launches: the 8-channel fp16 kernels (strips of 4 pixels, or a pixel a
 * thread), else dwconv_cl with V channels a thread; 32- or 64-bit indices for the latter. */
struct dw_plan {
    int kind; /* 0: dwconv_cl, 1: nhwc8, 2: nhwc8 strips */
    int v;
    bool i32;
    int64_t threads;
};

static dw_plan plan_dwconv(const ig_dwconv_args *a)
{
    dw_plan p = {};
    const int64_t total = a->n * a->c * a->oh * a->ow;
    if (nhwc8(a->dtype, a->c, a->xs, a->ys, a->x, a->y) && (uintptr_t)a->filt % 16 == 0 &&
        (!a->b || (uintptr_t)a->b % 16 == 0)) {
        /* strips of 4 pixels for the common shapes: 3x3, 5x5 and 7x7 filters, stride 1 or 2, no dilation,
         * where a pixel a thread would fill the GPU twice over: a strip a thread has a quarter of the
         * threads, which a small grid (MobileNetV2 at batch 1: 0.277 -> 0.313 ms) cannot spare */
        const int mode = dwconv_strip_mode();
        p.kind = a->dh == 1 && a->dw == 1 && (a->sw == 1 || a->sw == 2) && (a->kw == 3 || a->kw == 5 || a->kw == 7) &&
                         (mode == 2 || (mode == 1 && total / 8 >= 2 * resident_threads()))
                     ? 2
                     : 1;
        p.v = 8;
        p.threads = p.kind == 2 ? a->n * a->oh * ((a->ow + 3) / 4) * (a->c / 8) : total / 8;
        return p;
    }
    const int es = esize_of(a->dtype);
    const int64_t xd[4] = {a->n, a->c, a->h, a->w}, yd[4] = {a->n, a->c, a->oh, a->ow};
    p.v = vec_width(4, es, a->c, xd, a->xs, yd, a->ys, a->x, a->y, a->filt, a->b);
    p.threads = total / p.v;
    p.i32 = fits_i32(p.threads, reach(xd, a->xs), reach(yd, a->ys), (int64_t)a->kh * a->kw * a->c);
    return p;
}

template <typename T, typename I>
static void launch_dwconv_cl(const ig_dwconv_args *a, const dw_plan &p, cudaStream_t s)
{
    const unsigned blocks = (unsigned)((p.threads + MOVE_BLOCK - 1) / MOVE_BLOCK);
    const I n = (I)p.threads;
    switch (p.v) {
    case 4: dwconv_cl_kernel<T, 4, I><<<blocks, MOVE_BLOCK, 0, s>>>(*a, n); break;
    case 2: dwconv_cl_kernel<T, 2, I><<<blocks, MOVE_BLOCK, 0, s>>>(*a, n); break;
    default: dwconv_cl_kernel<T, 1, I><<<blocks, MOVE_BLOCK, 0, s>>>(*a, n); break;
    }
}

template <typename T> static void launch_dwconv_t(const ig_dwconv_args *a, const dw_plan &p, cudaStream_t s)
{
    if (p.i32)
        launch_dwconv_cl<T, int32_t>(a, p, s);
    else
        launch_dwconv_cl<T, int64_t>(a, p, s);
}

extern "C" cudaError_t ingot_cuda_dwconv(const ig_dwconv_args *a, cudaStream_t s)
{
    if (a->n * a->c * a->oh * a->ow <= 0) return cudaSuccess;
    const dw_plan p = plan_dwconv(a);
    const unsigned blocks = (unsigned)((p.threads + MOVE_BLOCK - 1) / MOVE_BLOCK);
    if (p.kind == 2) {
#define IG_DW_STRIP_(KW, S)                                                    \
    if (a->kw == KW && a->sw == S) {                                           \
        dwconv_nhwc8_strip_kernel<KW, S, 4><<<blocks, MOVE_BLOCK, 0, s>>>(*a); \
        return cudaGetLastError();                                             \
    }
        IG_DW_STRIP_(3, 1)
        IG_DW_STRIP_(3, 2)
        IG_DW_STRIP_(5, 1)
        IG_DW_STRIP_(5, 2)
        IG_DW_STRIP_(7, 1)
        IG_DW_STRIP_(7, 2)
#undef IG_DW_STRIP_
    }
    if (p.kind >= 1) {
        dwconv_nhwc8_kernel<<<(unsigned)((a->n * a->c * a->oh * a->ow / 8 + MOVE_BLOCK - 1) / MOVE_BLOCK), MOVE_BLOCK,
                              0, s>>>(*a);
        return cudaGetLastError();
    }
    switch (a->dtype) {
    case INGOT_DTYPE_FLOAT: launch_dwconv_t<float>(a, p, s); break;
    case INGOT_DTYPE_FLOAT16: launch_dwconv_t<__half>(a, p, s); break;
    case INGOT_DTYPE_BFLOAT16: launch_dwconv_t<__nv_bfloat16>(a, p, s); break;
    default: return cudaErrorInvalidValue; /* the lowering passes fp32 and fp16 only */
    }
    return cudaGetLastError();
}

extern "C" void ingot_cuda_dwconv_describe(const ig_dwconv_args *a, char *buf, size_t n)
{
    const dw_plan p = plan_dwconv(a);
    if (p.kind)
        snprintf(buf, n, "nhwc8%s", p.kind == 2 ? " strips" : "");
    else
        snprintf(buf, n, "channels-last x%d%s", p.v, p.i32 ? "" : " i64");
}
