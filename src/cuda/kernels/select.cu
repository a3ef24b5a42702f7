/*
 * select.cu -- kernels that pick elements of a line: Hardmax, TopK, and OneHot (which writes one per line).
 * The CPU ops (src/ops/reduce.c, misc.c) define the semantics; these follow them exactly:
 *
 * - Hardmax: the first maximum of each line gets 1, the rest 0; NaN ranks above everything (the first
 *   NaN wins), -0 ties +0. A warp per contiguous line; a thread per line when lines are strided (inner >
 *   1: neighbouring threads then read neighbouring elements).
 * - TopK: the CPU's total order -- an unsigned key per element (NaN the largest, -0 = +0; smallest = the
 *   keys inverted), ties to the smaller index -- so the result is unique, and sorting any way gives it.
 *   Lines up to IG_TOPK_SORT_MAX: a block loads the line's (key, index) pairs into shared memory and
 *   sorts them bitonically, any k. Longer lines: k rounds of a block-wide maximum over the elements that
 *   rank below the previous round's pick (k * n reads; k up to IG_TOPK_SELECT_MAX).
 * - OneHot: a thread per output element; indices of any integer or float type (floats truncated toward
 *   zero, as the CPU op casts them), values moved as raw bytes.
 */
#include "kernels.h"
#include "ingot.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#define SEL_BLOCK 256

static __device__ __forceinline__ float sel_f(float v) { return v; }
static __device__ __forceinline__ float sel_f(__half v) { return __half2float(v); }
static __device__ __forceinline__ float sel_f(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> static __device__ __forceinline__ T sel_from(float v) { return (T)v; }
template <> __device__ __forceinline__ __half sel_from<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 sel_from<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

static unsigned sel_blocks(int64_t threads)
{
    int64_t b = (threads + SEL_BLOCK - 1) / SEL_BLOCK;
    return (unsigned)(b < 65536 ? (b > 0 ? b : 1) : 65536);
}

/* ---- Hardmax ------------------------------------------------------------------------------------- */

/* (v, j) ranks above (m, b): NaN above every number, then the larger value, then the smaller index. The
 * start (-inf, INT64_MAX) ranks below every element. */
static __device__ __forceinline__ bool hm_beats(float v, long long j, float m, long long b)
{
    const bool vn = isnan(v), mn = isnan(m);
    if (vn != mn) return vn;
    if (!vn && v != m) return v > m;
    return j < b;
}

/* inner == 1: a warp per line (the warp's lanes agree on the line, so the shuffles are uniform). */
template <typename T> __global__ void __launch_bounds__(SEL_BLOCK) hm_rows(const ig_select_args a)
{
    const T *x = reinterpret_cast<const T *>(a.x);
    T *y = reinterpret_cast<T *>(a.y);
    const int lane = threadIdx.x & 31;
    const int64_t step = ((int64_t)gridDim.x * SEL_BLOCK) >> 5;
    for (int64_t l = ((int64_t)blockIdx.x * SEL_BLOCK + threadIdx.x) >> 5; l < a.outer; l += step) {
        const T *xl = x + l * a.n;
        T *yl = y + l * a.n;
        float m = -INFINITY;
        long long b = INT64_MAX;
        for (int64_t j = lane; j < a.n; j += 32) {
            const float v = sel_f(xl[j]);
            if (hm_beats(v, j, m, b)) m = v, b = j;
        }
        for (int off = 16; off; off >>= 1) {
            const float om = __shfl_xor_sync(0xffffffffu, m, off);
            const long long ob = __shfl_xor_sync(0xffffffffu, b, off);
            if (hm_beats(om, ob, m, b)) m = om, b = ob;
        }
        for (int64_t j = lane; j < a.n; j += 32) yl[j] = sel_from<T>(j == b ? 1.f : 0.f);
    }
}

/* inner > 1: a thread per line. */
template <typename T> __global__ void __launch_bounds__(SEL_BLOCK) hm_lines(const ig_select_args a)
{
    const T *x = reinterpret_cast<const T *>(a.x);
    T *y = reinterpret_cast<T *>(a.y);
    const int64_t lines = a.outer * a.inner;
    for (int64_t l = (int64_t)blockIdx.x * SEL_BLOCK + threadIdx.x; l < lines; l += (int64_t)gridDim.x * SEL_BLOCK) {
        const int64_t o = l / a.inner, base = o * a.n * a.inner + (l - o * a.inner);
        float m = -INFINITY;
        long long b = INT64_MAX;
        for (int64_t j = 0; j < a.n; j++) {
            const float v = sel_f(x[base + j * a.inner]);
            if (hm_beats(v, j, m, b)) m = v, b = j;
        }
        for (int64_t j = 0; j < a.n; j++) y[base + j * a.inner] = sel_from<T>(j == b ? 1.f : 0.f);
    }
}

/* ---- TopK ---------------------------------------------------------------------------------------- */

/* The CPU op's key (src/ops/reduce.c, topk_key): a larger key is a larger element, NaN the largest, -0 = +0.
 * Float keys come from the fp32 bits: the order of fp32 and of double agree on every fp32/fp16/bf16 value. */
template <typename T> static __device__ __forceinline__ unsigned long long tk_key(T v)
{
    float f = sel_f(v);
    if (isnan(f)) return ~0ull;
    if (f == 0.f) f = 0.f;
    const unsigned b = __float_as_uint(f);
    return (unsigned long long)(b >> 31 ? ~b : b | 0x80000000u);
}
template <> __device__ __forceinline__ unsigned long long tk_key<int>(int v)
{
    return (unsigned long long)(long long)v ^ (1ull << 63);
}
template <> __device__ __forceinline__ unsigned long long tk_key<long long>(long long v)
{
    return (unsigned long long)v ^ (1ull << 63);
}

/* Element (ka, ia) ranks above (kb, ib). */
static __device__ __forceinline__ bool tk_above(unsigned long long ka, long long ia, unsigned long long kb,
                                                long long ib)
{
    return ka > kb || (ka == kb && ia < ib);
}

/* A block per line: (key, index) pairs in shared memory (P = the line's length rounded up to a power of
 * two; padding ranks below every element), a bitonic sort into rank order, the first k written. */
template <typename T> __global__ void tk_sort(const ig_select_args a, int P)
{
    extern __shared__ unsigned long long tk_sm[];
    unsigned long long *key = tk_sm;
    unsigned short *ix = reinterpret_cast<unsigned short *>(tk_sm + P); /* n <= IG_TOPK_SORT_MAX < 65535 */
    const T *x = reinterpret_cast<const T *>(a.x);
    T *y = reinterpret_cast<T *>(a.y);
    const int64_t lines = a.outer * a.inner;
    const unsigned long long flip = a.largest ? 0ull : ~0ull;
    for (int64_t l = blockIdx.x; l < lines; l += gridDim.x) {
        const int64_t o = l / a.inner, i = l - o * a.inner;
        const int64_t base = o * a.n * a.inner + i, ybase = o * a.k * a.inner + i;
        for (int j = threadIdx.x; j < P; j += blockDim.x) {
            const bool real = j < a.n;
            key[j] = real ? tk_key<T>(x[base + j * a.inner]) ^ flip : 0ull;
            ix[j] = real ? (unsigned short)j : 0xffffu;
        }
        __syncthreads();
        for (int size = 2; size <= P; size <<= 1)
            for (int stride = size >> 1; stride > 0; stride >>= 1) {
                for (int t = threadIdx.x; t < P / 2; t += blockDim.x) {
                    const int i0 = (t / stride) * 2 * stride + t % stride, i1 = i0 + stride;
                    const bool desc = (i0 & size) == 0; /* this run goes best first */
                    if (tk_above(key[i1], ix[i1], key[i0], ix[i0]) == desc) {
                        const unsigned long long tk = key[i0];
                        const unsigned short ti = ix[i0];
                        key[i0] = key[i1], ix[i0] = ix[i1];
                        key[i1] = tk, ix[i1] = ti;
                    }
                }
                __syncthreads();
            }
        for (int64_t j = threadIdx.x; j < a.k; j += blockDim.x) {
            const int s = ix[j];
            y[ybase + j * a.inner] = x[base + s * a.inner];
            a.idx[ybase + j * a.inner] = s;
        }
        __syncthreads(); /* the next line reuses the shared arrays */
    }
}

/* A block per line, k rounds: round r picks the best element ranking below round r-1's pick. */
template <typename T> __global__ void __launch_bounds__(SEL_BLOCK) tk_select(const ig_select_args a)
{
    __shared__ unsigned long long wk[SEL_BLOCK / 32];
    __shared__ long long wi[SEL_BLOCK / 32];
    __shared__ unsigned long long pick_k;
    __shared__ long long pick_i;
    const T *x = reinterpret_cast<const T *>(a.x);
    T *y = reinterpret_cast<T *>(a.y);
    const int64_t lines = a.outer * a.inner;
    const unsigned long long flip = a.largest ? 0ull : ~0ull;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int64_t l = blockIdx.x; l < lines; l += gridDim.x) {
        const int64_t o = l / a.inner, i = l - o * a.inner;
        const int64_t base = o * a.n * a.inner + i, ybase = o * a.k * a.inner + i;
        unsigned long long pk = 0;
        long long pi = -1;
        for (int64_t r = 0; r < a.k; r++) {
            unsigned long long bk = 0;
            long long bi = INT64_MAX;
            for (int64_t j = threadIdx.x; j < a.n; j += SEL_BLOCK) {
                const unsigned long long kk = tk_key<T>(x[base + j * a.inner]) ^ flip;
                if ((r == 0 || tk_above(pk, pi, kk, j)) && tk_above(kk, j, bk, bi)) bk = kk, bi = j;
            }
            for (int off = 16; off; off >>= 1) {
                const unsigned long long ok = __shfl_xor_sync(0xffffffffu, bk, off);
                const long long oi = __shfl_xor_sync(0xffffffffu, bi, off);
                if (tk_above(ok, oi, bk, bi)) bk = ok, bi = oi;
            }
            if (lane == 0) wk[warp] = bk, wi[warp] = bi;
            __syncthreads();
            if (threadIdx.x == 0) {
                for (int w = 1; w < SEL_BLOCK / 32; w++)
                    if (tk_above(wk[w], wi[w], bk, bi)) bk = wk[w], bi = wi[w];
                y[ybase + r * a.inner] = x[base + bi * a.inner];
                a.idx[ybase + r * a.inner] = bi;
                pick_k = bk, pick_i = bi;
            }
            __syncthreads();
            pk = pick_k, pi = pick_i;
        }
        __syncthreads(); /* pick_* are read before the next line's first pick */
    }
}

/* ---- OneHot -------------------------------------------------------------------------------------- */

/* Index p as an int64, or INT64_MIN when it is out of any range (NaN, huge, a uint64 above INT64_MAX). */
static __device__ __forceinline__ long long oh_index(const void *x, int dt, int64_t p)
{
    double f;
    switch (dt) {
    case INGOT_DTYPE_INT8: return ((const signed char *)x)[p];
    case INGOT_DTYPE_UINT8:
    case INGOT_DTYPE_BOOL: return ((const unsigned char *)x)[p];
    case INGOT_DTYPE_INT16: return ((const short *)x)[p];
    case INGOT_DTYPE_UINT16: return ((const unsigned short *)x)[p];
    case INGOT_DTYPE_INT32: return ((const int *)x)[p];
    case INGOT_DTYPE_UINT32: return ((const unsigned *)x)[p];
    case INGOT_DTYPE_INT64: return ((const long long *)x)[p];
    case INGOT_DTYPE_UINT64: {
        const unsigned long long u = ((const unsigned long long *)x)[p];
        return u > (unsigned long long)INT64_MAX ? INT64_MIN : (long long)u;
    }
    case INGOT_DTYPE_FLOAT: f = ((const float *)x)[p]; break;
    case INGOT_DTYPE_FLOAT16: f = __half2float(((const __half *)x)[p]); break;
    case INGOT_DTYPE_BFLOAT16: f = __bfloat162float(((const __nv_bfloat16 *)x)[p]); break;
    case INGOT_DTYPE_DOUBLE: f = ((const double *)x)[p]; break;
    default: return INT64_MIN;
    }
    return f > -9.2e18 && f < 9.2e18 ? (long long)f : INT64_MIN;
}

template <typename E> __global__ void __launch_bounds__(SEL_BLOCK) oh_kernel(const ig_select_args a)
{
    const E *val = reinterpret_cast<const E *>(a.values);
    E *y = reinterpret_cast<E *>(a.y);
    const E off = val[0], on = val[1];
    const int64_t per = a.n * a.inner, total = a.outer * per;
    for (int64_t e = (int64_t)blockIdx.x * SEL_BLOCK + threadIdx.x; e < total; e += (int64_t)gridDim.x * SEL_BLOCK) {
        const int64_t o = e / per, r = e - o * per, d = r / a.inner, i = r - d * a.inner;
        long long v = oh_index(a.x, a.dtype, o * a.inner + i);
        if (a.wrap && v < 0 && v >= -a.n) v += a.n;
        y[e] = v == d ? on : off;
    }
}

/* ---- the launcher -------------------------------------------------------------------------------- */

template <typename T> static void hm_launch(const ig_select_args *a, cudaStream_t s)
{
    if (a->inner == 1)
        hm_rows<T><<<sel_blocks(a->outer * 32), SEL_BLOCK, 0, s>>>(*a);
    else
        hm_lines<T><<<sel_blocks(a->outer * a->inner), SEL_BLOCK, 0, s>>>(*a);
}

template <typename T> static void tk_launch(const ig_select_args *a, cudaStream_t s)
{
    const int64_t lines = a->outer * a->inner;
    const unsigned g = (unsigned)(lines < 65536 ? lines : 65536);
    if (a->n <= IG_TOPK_SORT_MAX) {
        int P = 1;
        while (P < a->n) P <<= 1;
        const int threads = P / 2 < 32 ? 32 : P / 2 > 1024 ? 1024 : P / 2;
        const size_t smem = (size_t)P * (sizeof(unsigned long long) + sizeof(unsigned short));
        tk_sort<T><<<g, threads, smem, s>>>(*a, P);
    } else {
        tk_select<T><<<g, SEL_BLOCK, 0, s>>>(*a);
    }
}

extern "C" cudaError_t ingot_cuda_select(const ig_select_args *a, cudaStream_t s)
{
    switch (a->op) {
    case IG_SEL_HARDMAX:
        if (a->outer * a->inner <= 0 || a->n <= 0) return cudaSuccess;
        switch (a->dtype) {
        case INGOT_DTYPE_FLOAT: hm_launch<float>(a, s); break;
        case INGOT_DTYPE_FLOAT16: hm_launch<__half>(a, s); break;
        case INGOT_DTYPE_BFLOAT16: hm_launch<__nv_bfloat16>(a, s); break;
        default: return cudaErrorInvalidValue;
        }
        break;
    case IG_SEL_TOPK:
        if (a->outer * a->inner <= 0 || a->k <= 0) return cudaSuccess;
        if (a->k > a->n || (a->n > IG_TOPK_SORT_MAX && a->k > IG_TOPK_SELECT_MAX)) return cudaErrorNotSupported;
        switch (a->dtype) {
        case INGOT_DTYPE_FLOAT: tk_launch<float>(a, s); break;
        case INGOT_DTYPE_FLOAT16: tk_launch<__half>(a, s); break;
        case INGOT_DTYPE_BFLOAT16: tk_launch<__nv_bfloat16>(a, s); break;
        case INGOT_DTYPE_INT32: tk_launch<int>(a, s); break;
        case INGOT_DTYPE_INT64: tk_launch<long long>(a, s); break;
        default: return cudaErrorInvalidValue;
        }
        break;
    case IG_SEL_ONEHOT: {
        const int64_t total = a->outer * a->n * a->inner;
        if (total <= 0) return cudaSuccess;
        const unsigned g = sel_blocks(total);
        switch (a->esize) {
        case 1: oh_kernel<uint8_t><<<g, SEL_BLOCK, 0, s>>>(*a); break;
        case 2: oh_kernel<uint16_t><<<g, SEL_BLOCK, 0, s>>>(*a); break;
        case 4: oh_kernel<uint32_t><<<g, SEL_BLOCK, 0, s>>>(*a); break;
        case 8: oh_kernel<unsigned long long><<<g, SEL_BLOCK, 0, s>>>(*a); break;
        default: return cudaErrorInvalidValue;
        }
        break;
    }
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
