/*
 * index.cu -- kernels that move elements by computed index: GatherElements, GatherND, ScatterElements and
 * ScatterND (reduction "none"; the lowering copies the data into the output first), Trilu, and CumSum.
 * GatherElements reads its data and indices through their strides (views, broadcasts); the others take
 * dense tensors but the *Elements indices.
 *
 * GatherElements and ScatterElements walk rows of the innermost dim: a row's coordinates are taken apart
 * once, and `width` threads take its elements (the per-element decomposition -- four 64-bit divisions
 * and remainders for a 4-D tensor -- held DeBERTa's 24 GatherElements at batch 64 to 120 us each, a
 * third of copy bandwidth: 29% of its run, H200 2026-12-02). The others take one thread per element of
 * the iteration space (the output for GatherND and Trilu, the updates for ScatterND, a line for CumSum),
 * grid-stride, every index and offset in 64 bits. Elements are moved as
 * raw bytes of their size (exact for every dtype); CumSum adds in fp32 (int64 for integers). Indices are
 * int32 or int64, negative ones count from the end; one out of range is clamped into the axis (the CPU
 * backend reports it; a kernel cannot, and must not read or write outside the tensor). With reduction
 * "none", a repeated index takes one of its updates (ONNX leaves the order undefined).
 */
#include "kernels.h"
#include "ingot.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#define IX_BLOCK 256

#ifndef IG_IX_HD
#define IG_IX_HD __host__ __device__ __forceinline__ /* tests/gpu/test_index_host.cu runs them on the host */
#endif

IG_IX_HD int64_t ix_index(const ig_index_args &a, int64_t i, int64_t dim)
{
    int64_t v = a.idx_dtype == INGOT_DTYPE_INT32 ? (int64_t)((const int *)a.idx)[i] : ((const long long *)a.idx)[i];
    if (v < 0) v += dim;
    return v < 0 ? 0 : v >= dim ? dim - 1 : v;
}

/* The *Elements ops by rows of the innermost dim (dims a.dims, the indices' shape): row `row`'s offset in
 * the tensor of strides ts without the axis's coordinate, and its indices' offset (strides a.is: 0 where
 * they broadcast -- DeBERTa's relative positions are one [1, S, S] table over batch and heads). */
IG_IX_HD void ix_row(const ig_index_args &a, int64_t row, const int64_t *ts, int64_t &off, int64_t &ioff)
{
    off = ioff = 0;
    int64_t rem = row;
    for (int d = a.rank - 2; d >= 0; d--) {
        const int64_t c = rem % a.dims[d];
        rem /= a.dims[d];
        ioff += c * a.is[d];
        if (d != a.axis) off += c * ts[d];
    }
}

/* Element col of that row: its offset in the tensor, the axis's coordinate replaced by the index. */
IG_IX_HD int64_t ix_col(const ig_index_args &a, int64_t off, int64_t ioff, int64_t col, const int64_t *ts)
{
    const int last = a.rank - 1;
    if (last != a.axis) off += col * ts[last];
    return off + ix_index(a, ioff + col * a.is[last], a.axis_dim) * ts[a.axis];
}

/* Threads a row gets: the row's length up to a power of two, at most a block. */
IG_IX_HD int ix_row_width(const ig_index_args &a)
{
    const int64_t len = a.rank > 0 ? a.dims[a.rank - 1] : 1;
    int w = 1;
    while (w < len && w < IX_BLOCK) w *= 2;
    return w;
}

/* The offset of the k indices of row `row` (the *ND ops) over dims a.nd_dims with strides ts. */
IG_IX_HD int64_t ix_nd(const ig_index_args &a, int64_t row, const int64_t *ts)
{
    int64_t off = 0;
    for (int j = 0; j < a.k; j++) off += ix_index(a, row * a.k + j, a.nd_dims[j]) * ts[j];
    return off;
}

template <typename E> __global__ void __launch_bounds__(IX_BLOCK) ix_move(const ig_index_args a)
{
    const E *x = reinterpret_cast<const E *>(a.x);
    const E *u = reinterpret_cast<const E *>(a.upd);
    E *y = reinterpret_cast<E *>(a.y);
    for (int64_t e = (int64_t)blockIdx.x * IX_BLOCK + threadIdx.x; e < a.n; e += (int64_t)gridDim.x * IX_BLOCK) {
        switch (a.op) {
        case IG_IX_GATHER_ND: {
            const int64_t row = e / a.slice, p = e - row * a.slice;
            y[e] = x[(row / a.n_idx) * a.bstride + ix_nd(a, row, a.ts) + p];
            break;
        }
        case IG_IX_SCATTER_ND: {
            const int64_t row = e / a.slice, p = e - row * a.slice;
            y[ix_nd(a, row, a.ts) + p] = u[e];
            break;
        }
        default: { /* Trilu over [mats, rows, cols]: keep j - i >= k (upper) or j - i <= k (lower) */
            const int64_t j = e % a.dims[1], i = (e / a.dims[1]) % a.dims[0], d = j - i;
            const bool keep = a.upper ? d >= a.tk : d <= a.tk;
            y[e] = keep ? x[e] : E(0);
            break;
        }
        }
    }
}

/* GatherElements / ScatterElements: rows of the innermost dim, ix_row_width(a) threads a row (coalesced
 * along it), IX_BLOCK / width rows a block, grid-stride over the rows. */
template <typename E> __global__ void __launch_bounds__(IX_BLOCK) ix_elements_rows(const ig_index_args a)
{
    const E *x = reinterpret_cast<const E *>(a.x);
    const E *u = reinterpret_cast<const E *>(a.upd);
    E *y = reinterpret_cast<E *>(a.y);
    const int width = ix_row_width(a), per = IX_BLOCK / width, lane = threadIdx.x % width;
    const int64_t len = a.dims[a.rank - 1], rows = a.n / len;
    const bool gather = a.op == IG_IX_GATHER_ELEMENTS;
    for (int64_t row = (int64_t)blockIdx.x * per + threadIdx.x / width; row < rows; row += (int64_t)gridDim.x * per) {
        int64_t off, ioff;
        ix_row(a, row, a.ts, off, ioff);
        for (int64_t col = lane; col < len; col += width) {
            const int64_t o = ix_col(a, off, ioff, col, a.ts), e = row * len + col;
            if (gather)
                y[e] = x[o];
            else
                y[o] = u[e];
        }
    }
}

template <typename T> struct Acc {
    typedef float type;
    static __device__ __forceinline__ float to(T v) { return (float)v; }
    static __device__ __forceinline__ T from(float v) { return (T)v; }
};
template <> struct Acc<__half> {
    typedef float type;
    static __device__ __forceinline__ float to(__half v) { return __half2float(v); }
    static __device__ __forceinline__ __half from(float v) { return __float2half_rn(v); }
};
template <> struct Acc<__nv_bfloat16> {
    typedef float type;
    static __device__ __forceinline__ float to(__nv_bfloat16 v) { return __bfloat162float(v); }
    static __device__ __forceinline__ __nv_bfloat16 from(float v) { return __float2bfloat16_rn(v); }
};
template <> struct Acc<int> {
    typedef long long type;
    static __device__ __forceinline__ long long to(int v) { return v; }
    static __device__ __forceinline__ int from(long long v) { return (int)v; }
};
template <> struct Acc<long long> {
    typedef long long type;
    static __device__ __forceinline__ long long to(long long v) { return v; }
    static __device__ __forceinline__ long long from(long long v) { return v; }
};

/* CumSum: a thread per line (outer o, inner i) of dims [outer, len, inner]; neighbouring threads read
 * neighbouring elements when inner > 1. */
template <typename T> __global__ void __launch_bounds__(IX_BLOCK) ix_cumsum(const ig_index_args a)
{
    const T *x = reinterpret_cast<const T *>(a.x);
    T *y = reinterpret_cast<T *>(a.y);
    const int64_t outer = a.dims[0], len = a.dims[1], inner = a.dims[2];
    for (int64_t l = (int64_t)blockIdx.x * IX_BLOCK + threadIdx.x; l < outer * inner;
         l += (int64_t)gridDim.x * IX_BLOCK) {
        const int64_t o = l / inner, i = l - o * inner;
        typename Acc<T>::type s = 0;
        for (int64_t q = 0; q < len; q++) {
            const int64_t j = a.reverse ? len - 1 - q : q, e = (o * len + j) * inner + i;
            const typename Acc<T>::type v = Acc<T>::to(x[e]);
            if (!a.exclusive) s += v;
            y[e] = Acc<T>::from(s);
            if (a.exclusive) s += v;
        }
    }
}

static unsigned ix_blocks(int64_t n)
{
    int64_t b = (n + IX_BLOCK - 1) / IX_BLOCK;
    return (unsigned)(b < 65536 ? (b > 0 ? b : 1) : 65536);
}

template <typename E> static void ix_launch_moves(bool rows, unsigned grid, const ig_index_args *a, cudaStream_t s)
{
    if (rows)
        ix_elements_rows<E><<<grid, IX_BLOCK, 0, s>>>(*a);
    else
        ix_move<E><<<grid, IX_BLOCK, 0, s>>>(*a);
}

extern "C" cudaError_t ingot_cuda_index(const ig_index_args *a, cudaStream_t s)
{
    if (a->n <= 0) return cudaSuccess;
    const unsigned g = ix_blocks(a->n);
    if (a->op == IG_IX_CUMSUM) {
        switch (a->dtype) {
        case INGOT_DTYPE_FLOAT: ix_cumsum<float><<<g, IX_BLOCK, 0, s>>>(*a); break;
        case INGOT_DTYPE_FLOAT16: ix_cumsum<__half><<<g, IX_BLOCK, 0, s>>>(*a); break;
        case INGOT_DTYPE_BFLOAT16: ix_cumsum<__nv_bfloat16><<<g, IX_BLOCK, 0, s>>>(*a); break;
        case INGOT_DTYPE_INT32: ix_cumsum<int><<<g, IX_BLOCK, 0, s>>>(*a); break;
        case INGOT_DTYPE_INT64: ix_cumsum<long long><<<g, IX_BLOCK, 0, s>>>(*a); break;
        default: return cudaErrorInvalidValue;
        }
        return cudaGetLastError();
    }
    /* the others move raw bytes: one kernel instance per element size, GatherElements / ScatterElements
     * by rows (their grid in rows), the rest element by element */
    const bool rows = a->op == IG_IX_GATHER_ELEMENTS || a->op == IG_IX_SCATTER_ELEMENTS;
    unsigned grid = g;
    if (rows) {
        if (a->rank < 1) return cudaErrorInvalidValue;
        const int64_t n_rows = a->n / a->dims[a->rank - 1], per = IX_BLOCK / ix_row_width(*a);
        grid = ix_blocks((n_rows + per - 1) / per * IX_BLOCK);
    }
    switch (a->esize) {
    case 1: ix_launch_moves<uint8_t>(rows, grid, a, s); break;
    case 2: ix_launch_moves<uint16_t>(rows, grid, a, s); break;
    case 4: ix_launch_moves<uint32_t>(rows, grid, a, s); break;
    case 8: ix_launch_moves<unsigned long long>(rows, grid, a, s); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
