/*
 * movement.cu -- kernels that move data by index rather than elementwise: Gather and 2-D pooling.
 * (Transposes, slices, concatenation and broadcasts are strided views copied by elementwise.cu.)
 */
#include "kernels.h"
#include "ingot.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <float.h>
#include <stdlib.h>
#include <stdint.h>

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

/* ---- pooling ------------------------------------------------------------------------------------- */

__device__ __forceinline__ float pld(const void *p, int64_t i, int dt)
{
    switch (dt) {
    case INGOT_DTYPE_FLOAT16: return __half2float(((const __half *)p)[i]);
    case INGOT_DTYPE_BFLOAT16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

__device__ __forceinline__ void pst(void *p, int64_t i, int dt, float v)
{
    switch (dt) {
    case INGOT_DTYPE_FLOAT16: ((__half *)p)[i] = __float2half_rn(v); break;
    case INGOT_DTYPE_BFLOAT16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v); break;
    default: ((float *)p)[i] = v; break;
    }
}

/* Channels-last fp16 with C % 8 == 0: one thread per 8 channels of one output pixel, 16-byte loads. */
__global__ void pool_nhwc8_kernel(const ig_pool_args a)
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
#pragma unroll
    for (int j = 0; j < 8; j++) acc[j] = a.is_max ? -INFINITY : 0.f;
    int count = 0;
    const __half *x = (const __half *)a.x + n * a.xs[0] + c8 * 8;
    for (int i = 0; i < a.kh; i++) {
        const int64_t ih = oh * a.sh - a.ph + (int64_t)i * a.dh;
        for (int j = 0; j < a.kw; j++) {
            const int64_t iw = ow * a.sw - a.pw + (int64_t)j * a.dw;
            if (ih >= 0 && ih < a.h && iw >= 0 && iw < a.w) {
                uint4 u = *(const uint4 *)(x + ih * a.xs[2] + iw * a.xs[3]);
                const __half2 *h2 = (const __half2 *)&u;
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    float2 f = __half22float2(h2[q]);
                    if (a.is_max) {
                        acc[2 * q] = (f.x > acc[2 * q] || f.x != f.x) ? f.x : acc[2 * q];
                        acc[2 * q + 1] = (f.y > acc[2 * q + 1] || f.y != f.y) ? f.y : acc[2 * q + 1];
                    } else {
                        acc[2 * q] += f.x;
                        acc[2 * q + 1] += f.y;
                    }
                }
                count++;
            } else if (!a.is_max && a.count_include_pad && ih >= -a.ph && ih < a.h + a.ph && iw >= -a.pw &&
                       iw < a.w + a.pw) {
                count++;
            }
        }
    }
    uint32_t w[4];
#pragma unroll
    for (int q = 0; q < 4; q++) {
        float o0 = a.is_max ? acc[2 * q] : (count ? acc[2 * q] / count : 0.f);
        float o1 = a.is_max ? acc[2 * q + 1] : (count ? acc[2 * q + 1] / count : 0.f);
        __half2 h = __floats2half2_rn(o0, o1);
        w[q] = *(uint32_t *)&h;
    }
    *(uint4 *)((__half *)a.y + n * a.ys[0] + oh * a.ys[2] + ow * a.ys[3] + c8 * 8) = make_uint4(w[0], w[1], w[2], w[3]);
}

static bool nhwc8(int32_t dtype, int64_t c, const int64_t *xs, const int64_t *ys, const void *x, const void *y)
{
    if (dtype != INGOT_DTYPE_FLOAT16 || c % 8 || xs[1] != 1 || ys[1] != 1) return false;
    for (int k = 0; k < 4; k++)
        if (k != 1 && (xs[k] % 8 || ys[k] % 8)) return false;
    return ((uintptr_t)x % 16) == 0 && ((uintptr_t)y % 16) == 0;
}

/* One thread per output element. Threads are numbered so that neighbours write neighbouring bytes:
 * channel fastest when y is channels-last (NHWC), width fastest otherwise. */
__global__ void pool_kernel(const ig_pool_args a, int channels_last)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t total = a.n * a.c * a.oh * a.ow;
    if (t >= total) return;
    int64_t n, c, oh, ow, r = t;
    if (channels_last) {
        c = r % a.c;
        r /= a.c;
        ow = r % a.ow;
        r /= a.ow;
        oh = r % a.oh;
        n = r / a.oh;
    } else {
        ow = r % a.ow;
        r /= a.ow;
        oh = r % a.oh;
        r /= a.oh;
        c = r % a.c;
        n = r / a.c;
    }
    const int64_t xb = n * a.xs[0] + c * a.xs[1];
    float acc = a.is_max ? -INFINITY : 0.f;
    int count = 0;
    for (int i = 0; i < a.kh; i++) {
        const int64_t ih = oh * a.sh - a.ph + (int64_t)i * a.dh;
        for (int j = 0; j < a.kw; j++) {
            const int64_t iw = ow * a.sw - a.pw + (int64_t)j * a.dw;
            const bool inside = ih >= 0 && ih < a.h && iw >= 0 && iw < a.w;
            if (inside) {
                float v = pld(a.x, xb + ih * a.xs[2] + iw * a.xs[3], a.dtype);
                if (a.is_max)
                    acc = (v > acc || v != v) ? v : acc;
                else
                    acc += v;
                count++;
            } else if (!a.is_max && a.count_include_pad) {
                /* padding counts only where the window lies within the padded input */
                if (ih >= -a.ph && ih < a.h + a.ph && iw >= -a.pw && iw < a.w + a.pw) count++;
            }
        }
    }
    float out = a.is_max ? acc : (count ? acc / (float)count : 0.f);
    pst(a.y, n * a.ys[0] + c * a.ys[1] + oh * a.ys[2] + ow * a.ys[3], a.dtype, out);
}

extern "C" cudaError_t ingot_cuda_pool(const ig_pool_args *a, cudaStream_t s)
{
    const int64_t total = a->n * a->c * a->oh * a->ow;
    if (total <= 0) return cudaSuccess;
    if (nhwc8(a->dtype, a->c, a->xs, a->ys, a->x, a->y)) {
        pool_nhwc8_kernel<<<(unsigned)((total / 8 + MOVE_BLOCK - 1) / MOVE_BLOCK), MOVE_BLOCK, 0, s>>>(*a);
        return cudaGetLastError();
    }
    pool_kernel<<<(unsigned)((total + MOVE_BLOCK - 1) / MOVE_BLOCK), MOVE_BLOCK, 0, s>>>(*a, a->ys[1] == 1);
    return cudaGetLastError();
}

/* ---- depthwise convolution ------------------------------------------------------------------------- */

__device__ __forceinline__ float act_f(const ig_dwconv_args &a, float v)
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

/* Any layout and float type: one thread per output element. */
__global__ void dwconv_kernel(const ig_dwconv_args a)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.n * a.c * a.oh * a.ow) return;
    int64_t r = t;
    const int64_t c = r % a.c;
    r /= a.c;
    const int64_t ow = r % a.ow;
    r /= a.ow;
    const int64_t oh = r % a.oh;
    const int64_t n = r / a.oh;
    float acc = a.b ? pld(a.b, c, a.dtype) : 0.f;
    for (int i = 0; i < a.kh; i++) {
        const int64_t ih = oh * a.sh - a.ph + (int64_t)i * a.dh;
        if (ih < 0 || ih >= a.h) continue;
        for (int j = 0; j < a.kw; j++) {
            const int64_t iw = ow * a.sw - a.pw + (int64_t)j * a.dw;
            if (iw < 0 || iw >= a.w) continue;
            acc = fmaf(pld(a.x, n * a.xs[0] + c * a.xs[1] + ih * a.xs[2] + iw * a.xs[3], a.dtype),
                       pld(a.filt, (int64_t)(i * a.kw + j) * a.c + c, a.dtype), acc);
        }
    }
    pst(a.y, n * a.ys[0] + c * a.ys[1] + oh * a.ys[2] + ow * a.ys[3], a.dtype, act_f(a, acc));
}

/* INGOT_CUDA_DWCONV_STRIP=0 keeps one pixel per thread (to compare the two; read once per process). */
static bool dwconv_strip_enabled(void)
{
    static const bool on = [] {
        const char *v = getenv("INGOT_CUDA_DWCONV_STRIP");
        return !(v && v[0] == '0');
    }();
    return on;
}

/* Threads the GPU holds at once (multiprocessors x 2048), read once per process. */
static int64_t resident_threads(void)
{
    static int sms = 0;
    int v = __atomic_load_n(&sms, __ATOMIC_RELAXED);
    if (v == 0) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || v <= 0)
            v = 132;
        __atomic_store_n(&sms, v, __ATOMIC_RELAXED);
    }
    return (int64_t)v * 2048;
}

extern "C" cudaError_t ingot_cuda_dwconv(const ig_dwconv_args *a, cudaStream_t s)
{
    const int64_t total = a->n * a->c * a->oh * a->ow;
    if (total <= 0) return cudaSuccess;
    if (nhwc8(a->dtype, a->c, a->xs, a->ys, a->x, a->y) && (uintptr_t)a->filt % 16 == 0 &&
        (!a->b || (uintptr_t)a->b % 16 == 0)) {
        /* strips of 4 pixels for the common shapes: 3x3, 5x5 and 7x7 filters, stride 1 or 2, no dilation,
         * where a pixel a thread would fill the GPU twice over: a strip a thread has a quarter of the
         * threads, which a small grid (MobileNetV2 at batch 1: 0.277 -> 0.313 ms) cannot spare */
        const int64_t strips = a->n * a->oh * ((a->ow + 3) / 4) * (a->c / 8);
        const unsigned sb = (unsigned)((strips + MOVE_BLOCK - 1) / MOVE_BLOCK);
        if (a->dh == 1 && a->dw == 1 && (a->sw == 1 || a->sw == 2) && (a->kw == 3 || a->kw == 5 || a->kw == 7) &&
            total / 8 >= 2 * resident_threads() && dwconv_strip_enabled()) {
#define IG_DW_STRIP_(KW, S)                                                \
    if (a->kw == KW && a->sw == S) {                                       \
        dwconv_nhwc8_strip_kernel<KW, S, 4><<<sb, MOVE_BLOCK, 0, s>>>(*a); \
        return cudaGetLastError();                                         \
    }
            IG_DW_STRIP_(3, 1)
            IG_DW_STRIP_(3, 2)
            IG_DW_STRIP_(5, 1)
            IG_DW_STRIP_(5, 2)
            IG_DW_STRIP_(7, 1)
            IG_DW_STRIP_(7, 2)
#undef IG_DW_STRIP_
        }
        dwconv_nhwc8_kernel<<<(unsigned)((total / 8 + MOVE_BLOCK - 1) / MOVE_BLOCK), MOVE_BLOCK, 0, s>>>(*a);
        return cudaGetLastError();
    }
    dwconv_kernel<<<(unsigned)((total + MOVE_BLOCK - 1) / MOVE_BLOCK), MOVE_BLOCK, 0, s>>>(*a);
    return cudaGetLastError();
}
