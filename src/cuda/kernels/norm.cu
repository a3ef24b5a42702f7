/*
 * norm.cu -- row-wise kernels: Softmax / LogSoftmax, LayerNormalization, and general reductions
 * (ReduceSum/Mean/Max/Min, ArgMax/ArgMin, GlobalAverage/MaxPool).
 *
 * Softmax and LayerNormalization read each row once into registers and write it once (one pass over
 * memory): one warp per row, the row held as `EPL` values per lane (EPL a compile-time constant, so the
 * row stays in registers), statistics through warp shuffles, arithmetic in fp32. Rows too long for
 * registers take a block-per-row path that reads the row again instead.
 */
#include "kernels.h"
#include "ingot.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <float.h>
#include <stdint.h>

#define NORM_WARPS 4 /* warps per block in the warp-per-row kernels */
#define NORM_BLOCK 256

__device__ __forceinline__ float ld(const void *p, int64_t i, int dt)
{
    switch (dt) {
    case INGOT_DTYPE_FLOAT16: return __half2float(((const __half *)p)[i]);
    case INGOT_DTYPE_BFLOAT16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case INGOT_DTYPE_DOUBLE: return (float)((const double *)p)[i];
    case INGOT_DTYPE_INT64: return (float)((const long long *)p)[i];
    case INGOT_DTYPE_INT32: return (float)((const int *)p)[i];
    default: return ((const float *)p)[i];
    }
}

__device__ __forceinline__ void st(void *p, int64_t i, int dt, float v)
{
    switch (dt) {
    case INGOT_DTYPE_FLOAT16: ((__half *)p)[i] = __float2half_rn(v); break;
    case INGOT_DTYPE_BFLOAT16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v); break;
    case INGOT_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    default: ((float *)p)[i] = v; break;
    }
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* ---- softmax ----------------------------------------------------------------------------------- */

/* Offset of row r's mask values (see ig_softmax_args). */
__device__ __forceinline__ int64_t mask_row(const ig_softmax_args &a, int64_t r)
{
    int64_t r2 = r % a.row_dims[2], q = r / a.row_dims[2];
    int64_t r1 = q % a.row_dims[1], r0 = q / a.row_dims[1];
    return r0 * a.ms[0] + r1 * a.ms[1] + r2 * a.ms[2];
}

__device__ __forceinline__ float scaled(const ig_softmax_args &a, float x, int64_t moff, int64_t c)
{
    x *= a.scale;
    if (a.mask) x += ld(a.mask, moff + c * a.ms[3], a.mask_dtype);
    return x;
}

template <int EPL> __global__ void __launch_bounds__(NORM_WARPS * 32) softmax_warp(const ig_softmax_args a)
{
    const int lane = threadIdx.x % 32;
    /* each warp walks rows with a grid stride: a few thousand warps cover millions of short rows */
    for (int64_t row = (int64_t)blockIdx.x * NORM_WARPS + threadIdx.x / 32; row < a.rows;
         row += (int64_t)gridDim.x * NORM_WARPS) {
        const int64_t base = row * a.cols;
        const int64_t moff = a.mask ? mask_row(a, row) : 0;
        float v[EPL];
        float m = -INFINITY;
#pragma unroll
        for (int i = 0; i < EPL; i++) {
            int64_t c = lane + 32 * i;
            v[i] = c < a.cols ? scaled(a, ld(a.x, base + c, a.dtype), moff, c) : -INFINITY;
            m = fmaxf(m, v[i]);
        }
        m = warp_max(m);
        float s = 0.f;
#pragma unroll
        for (int i = 0; i < EPL; i++) {
            int64_t c = lane + 32 * i;
            float e = c < a.cols ? expf(v[i] - m) : 0.f;
            s += e;
            if (!a.log) v[i] = e;
        }
        s = warp_sum(s);
        const float inv = 1.f / s, ls = logf(s);
#pragma unroll
        for (int i = 0; i < EPL; i++) {
            int64_t c = lane + 32 * i;
            if (c >= a.cols) continue;
            float o = a.log ? v[i] - m - ls : v[i] * inv;
            if (a.zero_nan && o != o) o = 0.f;
            st(a.y, base + c, a.dtype, o);
        }
    }
}

/* Softmax over a non-innermost axis, [outer, cols, inner] with inner > 1 (CoaT's factorized attention
 * takes it over the tokens of [B, heads, tokens, channels]). A block owns one outer index and tx_n
 * neighbouring inner positions (threadIdx.x, so a warp reads runs of contiguous elements); its
 * threadIdx.y rows walk the axis together, each keeping an online max and sum, which shared memory then
 * combines. Two reads of the line and one write. One thread per line walking the axis alone, as
 * before, left the device nearly idle when lines are few and long (64 lines of 3,137: 2.25 ms). */
#define SOFTMAX_COLS_MAX 1024
__device__ __forceinline__ void online_add(float &m, float &s, float x)
{
    if (x > m) {
        s = s * expf(m - x) + 1.f;
        m = x;
    } else if (x != -INFINITY) { /* -inf adds nothing (also before any finite value); NaN propagates */
        s += expf(x - m);
    }
}

__global__ void __launch_bounds__(SOFTMAX_COLS_MAX) softmax_cols(const ig_softmax_args a, int64_t chunks)
{
    __shared__ float sm_m[SOFTMAX_COLS_MAX], sm_s[SOFTMAX_COLS_MAX];
    const int tx = threadIdx.x, ty = threadIdx.y, tx_n = blockDim.x, ty_n = blockDim.y;
    const int64_t o = (int64_t)blockIdx.x / chunks, i = ((int64_t)blockIdx.x % chunks) * tx_n + tx;
    const bool live = i < a.inner;
    const int64_t base = o * a.cols * a.inner + i;
    float m = -INFINITY, s = 0.f;
    if (live)
        for (int64_t c = ty; c < a.cols; c += ty_n) online_add(m, s, ld(a.x, base + c * a.inner, a.dtype));
    sm_m[ty * tx_n + tx] = m;
    sm_s[ty * tx_n + tx] = s;
    __syncthreads();
    if (ty == 0) {
        for (int k = 1; k < ty_n; k++) {
            const float m2 = sm_m[k * tx_n + tx], s2 = sm_s[k * tx_n + tx];
            if (s2 == 0.f && m2 == -INFINITY) continue; /* a row that saw no element */
            const float mm = fmaxf(m, m2);
            s = s * expf(m - mm) + s2 * expf(m2 - mm);
            m = mm;
        }
        sm_m[tx] = m;
        sm_s[tx] = s;
    }
    __syncthreads();
    if (!live) return;
    m = sm_m[tx];
    s = sm_s[tx];
    const float inv = 1.f / s, ls = logf(s);
    for (int64_t c = ty; c < a.cols; c += ty_n) {
        const float x = ld(a.x, base + c * a.inner, a.dtype);
        float y = a.log ? x - m - ls : expf(x - m) * inv;
        if (a.zero_nan && y != y) y = 0.f;
        st(a.y, base + c * a.inner, a.dtype, y);
    }
}

/* Long contiguous rows: a block per row, block-wide reductions, the row read three times. */
__global__ void __launch_bounds__(NORM_BLOCK) softmax_block(const ig_softmax_args a)
{
    __shared__ float red[NORM_BLOCK / 32];
    const int64_t base = (int64_t)blockIdx.x * a.cols;
    const int64_t moff = a.mask ? mask_row(a, blockIdx.x) : 0;
    const int lane = threadIdx.x % 32, wid = threadIdx.x / 32;
    float m = -INFINITY;
    for (int64_t c = threadIdx.x; c < a.cols; c += NORM_BLOCK)
        m = fmaxf(m, scaled(a, ld(a.x, base + c, a.dtype), moff, c));
    m = warp_max(m);
    if (lane == 0) red[wid] = m;
    __syncthreads();
    m = -INFINITY;
    for (int w = 0; w < NORM_BLOCK / 32; w++) m = fmaxf(m, red[w]);
    __syncthreads();
    float s = 0.f;
    for (int64_t c = threadIdx.x; c < a.cols; c += NORM_BLOCK)
        s += expf(scaled(a, ld(a.x, base + c, a.dtype), moff, c) - m);
    s = warp_sum(s);
    if (lane == 0) red[wid] = s;
    __syncthreads();
    s = 0.f;
    for (int w = 0; w < NORM_BLOCK / 32; w++) s += red[w];
    const float inv = 1.f / s, ls = logf(s);
    for (int64_t c = threadIdx.x; c < a.cols; c += NORM_BLOCK) {
        float x = scaled(a, ld(a.x, base + c, a.dtype), moff, c);
        float o = a.log ? x - m - ls : expf(x - m) * inv;
        if (a.zero_nan && o != o) o = 0.f;
        st(a.y, base + c, a.dtype, o);
    }
}

extern "C" cudaError_t ingot_cuda_softmax(const ig_softmax_args *a, cudaStream_t s)
{
    if (a->rows <= 0 || a->cols <= 0) return cudaSuccess;
    if (a->inner > 1) {
        int tx = 1;
        while (tx < 32 && tx < a->inner) tx *= 2;
        const int64_t chunks = (a->inner + tx - 1) / tx, blocks = a->rows * chunks;
        if (blocks > INT32_MAX) return cudaErrorInvalidConfiguration;
        /* few blocks: more threads per line (up to 1024 a block) so the device still fills */
        int threads = blocks >= 4 * 132 ? 256 : SOFTMAX_COLS_MAX;
        int ty = threads / tx;
        while (ty > 1 && ty / 2 >= a->cols) ty /= 2;
        softmax_cols<<<(unsigned)blocks, dim3((unsigned)tx, (unsigned)ty), 0, s>>>(*a, chunks);
        return cudaGetLastError();
    }
    int64_t nb = (a->rows + NORM_WARPS - 1) / NORM_WARPS;
    if (nb > 132 * 64) nb = 132 * 64;
    const unsigned blocks = (unsigned)nb;
    const int64_t epl = (a->cols + 31) / 32;
    if (epl <= 1)
        softmax_warp<1><<<blocks, NORM_WARPS * 32, 0, s>>>(*a);
    else if (epl <= 2)
        softmax_warp<2><<<blocks, NORM_WARPS * 32, 0, s>>>(*a);
    else if (epl <= 4)
        softmax_warp<4><<<blocks, NORM_WARPS * 32, 0, s>>>(*a);
    else if (epl <= 8)
        softmax_warp<8><<<blocks, NORM_WARPS * 32, 0, s>>>(*a);
    else if (epl <= 16)
        softmax_warp<16><<<blocks, NORM_WARPS * 32, 0, s>>>(*a);
    else if (epl <= 32)
        softmax_warp<32><<<blocks, NORM_WARPS * 32, 0, s>>>(*a);
    else
        softmax_block<<<(unsigned)a->rows, NORM_BLOCK, 0, s>>>(*a);
    return cudaGetLastError();
}

/* ---- layer normalisation ------------------------------------------------------------------------ */

/* One warp per row; lane l holds elements l, l+32, ... (EPL of them). Two-pass variance in registers. */
template <int EPL> __global__ void __launch_bounds__(NORM_WARPS * 32) layernorm_warp(const ig_layernorm_args a)
{
    const int64_t row = (int64_t)blockIdx.x * NORM_WARPS + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= a.rows) return;
    const int64_t base = row * a.cols;
    float v[EPL];
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < EPL; i++) {
        int64_t c = lane + 32 * i;
        v[i] = c < a.cols ? ld(a.x, base + c, a.dtype) : 0.f;
        s += v[i];
    }
    const float mean = warp_sum(s) / (float)a.cols;
    float q = 0.f;
#pragma unroll
    for (int i = 0; i < EPL; i++) {
        int64_t c = lane + 32 * i;
        float d = c < a.cols ? v[i] - mean : 0.f;
        q += d * d;
    }
    const float rstd = rsqrtf(warp_sum(q) / (float)a.cols + a.eps);
#pragma unroll
    for (int i = 0; i < EPL; i++) {
        int64_t c = lane + 32 * i;
        if (c >= a.cols) continue;
        float g = ld(a.gamma, c, a.wdtype);
        float b = a.beta ? ld(a.beta, c, a.wdtype) : 0.f;
        st(a.y, base + c, a.dtype, (v[i] - mean) * rstd * g + b);
    }
}

/* fp16 rows of exactly CH * 256 elements: lane l holds the 8-element chunks l, l+32, ... loaded and
 * stored as 16 bytes. Every load -- the row and, when they are fp32, gamma and beta as float4 -- is
 * issued before the first reduction, so a warp keeps all of its row's bytes in flight at once. */
template <int CH> __global__ void __launch_bounds__(NORM_WARPS * 32) layernorm_warp_h8(const ig_layernorm_args a)
{
    const int64_t row = (int64_t)blockIdx.x * NORM_WARPS + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= a.rows) return;
    const __half *x = (const __half *)a.x + row * a.cols;
    __half *y = (__half *)a.y + row * a.cols;
    const bool wf32 = a.wdtype == INGOT_DTYPE_FLOAT;
    uint4 u[CH];
    float4 gv[CH][2], bv[CH][2];
#pragma unroll
    for (int i = 0; i < CH; i++) {
        const int64_t c0 = (int64_t)(lane + 32 * i) * 8;
        u[i] = __ldg((const uint4 *)(x + c0));
        if (wf32) {
            gv[i][0] = __ldg((const float4 *)a.gamma + c0 / 4);
            gv[i][1] = __ldg((const float4 *)a.gamma + c0 / 4 + 1);
            if (a.beta) {
                bv[i][0] = __ldg((const float4 *)a.beta + c0 / 4);
                bv[i][1] = __ldg((const float4 *)a.beta + c0 / 4 + 1);
            } else {
                bv[i][0] = bv[i][1] = make_float4(0.f, 0.f, 0.f, 0.f);
            }
        } else {
            float gg[8], bb[8];
#pragma unroll
            for (int j = 0; j < 8; j++) {
                gg[j] = ld(a.gamma, c0 + j, a.wdtype);
                bb[j] = a.beta ? ld(a.beta, c0 + j, a.wdtype) : 0.f;
            }
            gv[i][0] = make_float4(gg[0], gg[1], gg[2], gg[3]);
            gv[i][1] = make_float4(gg[4], gg[5], gg[6], gg[7]);
            bv[i][0] = make_float4(bb[0], bb[1], bb[2], bb[3]);
            bv[i][1] = make_float4(bb[4], bb[5], bb[6], bb[7]);
        }
    }
    float v[CH][8];
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < CH; i++) {
        const __half2 *hp = (const __half2 *)&u[i];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float2 f = __half22float2(hp[j]);
            v[i][2 * j] = f.x;
            v[i][2 * j + 1] = f.y;
            s += f.x + f.y;
        }
    }
    const float mean = warp_sum(s) * (1.f / (float)(CH * 256));
    float q = 0.f;
#pragma unroll
    for (int i = 0; i < CH; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) {
            float d = v[i][j] - mean;
            q += d * d;
        }
    const float rstd = rsqrtf(warp_sum(q) * (1.f / (float)(CH * 256)) + a.eps);
#pragma unroll
    for (int i = 0; i < CH; i++) {
        const int64_t c0 = (int64_t)(lane + 32 * i) * 8;
        const float g[8] = {gv[i][0].x, gv[i][0].y, gv[i][0].z, gv[i][0].w,
                            gv[i][1].x, gv[i][1].y, gv[i][1].z, gv[i][1].w};
        const float bb[8] = {bv[i][0].x, bv[i][0].y, bv[i][0].z, bv[i][0].w,
                             bv[i][1].x, bv[i][1].y, bv[i][1].z, bv[i][1].w};
        uint32_t w[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            __half2 hh = __floats2half2_rn((v[i][2 * j] - mean) * rstd * g[2 * j] + bb[2 * j],
                                           (v[i][2 * j + 1] - mean) * rstd * g[2 * j + 1] + bb[2 * j + 1]);
            w[j] = *(uint32_t *)&hh;
        }
        *(uint4 *)(y + c0) = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

/* Rows too long for registers: a block per row, the row read twice (mean, variance) then written. */
__global__ void __launch_bounds__(NORM_BLOCK) layernorm_block(const ig_layernorm_args a)
{
    __shared__ float red[NORM_BLOCK / 32];
    const int64_t base = (int64_t)blockIdx.x * a.cols;
    const int lane = threadIdx.x % 32, wid = threadIdx.x / 32;
    float s = 0.f;
    for (int64_t c = threadIdx.x; c < a.cols; c += NORM_BLOCK) s += ld(a.x, base + c, a.dtype);
    s = warp_sum(s);
    if (lane == 0) red[wid] = s;
    __syncthreads();
    s = 0.f;
    for (int w = 0; w < NORM_BLOCK / 32; w++) s += red[w];
    const float mean = s / (float)a.cols;
    __syncthreads();
    float q = 0.f;
    for (int64_t c = threadIdx.x; c < a.cols; c += NORM_BLOCK) {
        float d = ld(a.x, base + c, a.dtype) - mean;
        q += d * d;
    }
    q = warp_sum(q);
    if (lane == 0) red[wid] = q;
    __syncthreads();
    q = 0.f;
    for (int w = 0; w < NORM_BLOCK / 32; w++) q += red[w];
    const float rstd = rsqrtf(q / (float)a.cols + a.eps);
    for (int64_t c = threadIdx.x; c < a.cols; c += NORM_BLOCK) {
        float g = ld(a.gamma, c, a.wdtype), b = a.beta ? ld(a.beta, c, a.wdtype) : 0.f;
        st(a.y, base + c, a.dtype, (ld(a.x, base + c, a.dtype) - mean) * rstd * g + b);
    }
}

extern "C" cudaError_t ingot_cuda_layernorm(const ig_layernorm_args *a, cudaStream_t s)
{
    if (a->rows <= 0 || a->cols <= 0) return cudaSuccess;
    const unsigned blocks = (unsigned)((a->rows + NORM_WARPS - 1) / NORM_WARPS);
    const bool aligned = ((uintptr_t)a->x % 16 == 0) && ((uintptr_t)a->y % 16 == 0);
    const bool waligned = ((uintptr_t)a->gamma % 16 == 0) && ((uintptr_t)a->beta % 16 == 0);
    if (a->dtype == INGOT_DTYPE_FLOAT16 && aligned && waligned && a->cols % 256 == 0 && a->cols <= 1024) {
        switch (a->cols / 256) {
        case 1: layernorm_warp_h8<1><<<blocks, NORM_WARPS * 32, 0, s>>>(*a); break;
        case 2: layernorm_warp_h8<2><<<blocks, NORM_WARPS * 32, 0, s>>>(*a); break;
        case 3: layernorm_warp_h8<3><<<blocks, NORM_WARPS * 32, 0, s>>>(*a); break;
        default: layernorm_warp_h8<4><<<blocks, NORM_WARPS * 32, 0, s>>>(*a); break;
        }
        return cudaGetLastError();
    }
    const int64_t epl = (a->cols + 31) / 32;
    if (epl <= 1)
        layernorm_warp<1><<<blocks, NORM_WARPS * 32, 0, s>>>(*a);
    else if (epl <= 2)
        layernorm_warp<2><<<blocks, NORM_WARPS * 32, 0, s>>>(*a);
    else if (epl <= 4)
        layernorm_warp<4><<<blocks, NORM_WARPS * 32, 0, s>>>(*a);
    else if (epl <= 8)
        layernorm_warp<8><<<blocks, NORM_WARPS * 32, 0, s>>>(*a);
    else if (epl <= 16)
        layernorm_warp<16><<<blocks, NORM_WARPS * 32, 0, s>>>(*a);
    else if (epl <= 32)
        layernorm_warp<32><<<blocks, NORM_WARPS * 32, 0, s>>>(*a);
    else
        layernorm_block<<<(unsigned)a->rows, NORM_BLOCK, 0, s>>>(*a);
    return cudaGetLastError();
}

/* ---- reductions ------------------------------------------------------------------------------------ */

__device__ __forceinline__ int64_t red_offset(const ig_reduce_args &a, int64_t r)
{
    int64_t off = 0;
#pragma unroll
    for (int d = IG_EW_MAX_RANK - 1; d >= 0; d--) {
        if (d >= a.red_rank) continue;
        int64_t c = d ? r % a.red_dims[d] : r;
        r = d ? r / a.red_dims[d] : 0;
        off += c * a.red_xstrides[d];
    }
    return off;
}

__device__ __forceinline__ int64_t out_offset(const ig_reduce_args &a, int64_t o)
{
    int64_t off = 0;
#pragma unroll
    for (int d = IG_EW_MAX_RANK - 1; d >= 0; d--) {
        if (d >= a.out_rank) continue;
        int64_t c = d ? o % a.out_dims[d] : o;
        o = d ? o / a.out_dims[d] : 0;
        off += c * a.out_xstrides[d];
    }
    return off;
}

struct RedAcc {
    float v;
    int64_t idx;
};

__device__ __forceinline__ void red_step(const ig_reduce_args &a, RedAcc &acc, float x, int64_t r)
{
    switch (a.kind) {
    case IG_RED_SUM:
    case IG_RED_MEAN: acc.v += x; break;
    case IG_RED_MAX: acc.v = (x > acc.v || x != x) ? x : acc.v; break;
    case IG_RED_MIN: acc.v = (x < acc.v || x != x) ? x : acc.v; break;
    case IG_RED_ARGMAX:
        if (x > acc.v || (a.select_last && x == acc.v) || acc.idx < 0) {
            acc.v = x;
            acc.idx = r;
        }
        break;
    case IG_RED_ARGMIN:
        if (x < acc.v || (a.select_last && x == acc.v) || acc.idx < 0) {
            acc.v = x;
            acc.idx = r;
        }
        break;
    }
}

__device__ __forceinline__ RedAcc red_init(const ig_reduce_args &a)
{
    RedAcc r;
    r.idx = -1;
    r.v = a.kind == IG_RED_MAX ? -INFINITY : a.kind == IG_RED_MIN ? INFINITY : 0.f;
    return r;
}

__device__ __forceinline__ void red_merge(const ig_reduce_args &a, RedAcc &acc, RedAcc o)
{
    if (a.kind == IG_RED_ARGMAX || a.kind == IG_RED_ARGMIN) {
        if (o.idx < 0) return;
        bool better = a.kind == IG_RED_ARGMAX ? o.v > acc.v : o.v < acc.v;
        bool tie = o.v == acc.v && (a.select_last ? o.idx > acc.idx : o.idx < acc.idx);
        if (acc.idx < 0 || better || tie) acc = o;
        return;
    }
    if (a.kind == IG_RED_SUM || a.kind == IG_RED_MEAN)
        acc.v += o.v;
    else
        red_step(a, acc, o.v, 0);
}

__device__ __forceinline__ void red_store(const ig_reduce_args &a, int64_t o, RedAcc acc)
{
    if (a.kind == IG_RED_ARGMAX || a.kind == IG_RED_ARGMIN) {
        /* the index along the reduced axis: r counts elements of the (single) reduced axis */
        ((long long *)a.y)[o] = acc.idx < 0 ? 0 : acc.idx;
        return;
    }
    float v = a.kind == IG_RED_MEAN ? acc.v / (float)a.n_red : acc.v;
    st(a.y, o, a.y_dtype, v);
}

/* One thread per output: the reduced elements of consecutive outputs are adjacent in memory when the
 * reduced dims are outer (NHWC global pooling), so the reads coalesce across the warp. */
__global__ void reduce_thread(const ig_reduce_args a)
{
    const int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= a.n_out) return;
    const int64_t base = out_offset(a, o);
    RedAcc acc = red_init(a);
    for (int64_t r = 0; r < a.n_red; r++) red_step(a, acc, ld(a.x, base + red_offset(a, r), a.x_dtype), r);
    red_store(a, o, acc);
}

/* One warp per output: for reductions over the innermost (contiguous) dims. */
__global__ void __launch_bounds__(NORM_WARPS * 32) reduce_warp(const ig_reduce_args a)
{
    const int64_t o = (int64_t)blockIdx.x * NORM_WARPS + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (o >= a.n_out) return;
    const int64_t base = out_offset(a, o);
    RedAcc acc = red_init(a);
    for (int64_t r = lane; r < a.n_red; r += 32) red_step(a, acc, ld(a.x, base + red_offset(a, r), a.x_dtype), r);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        RedAcc other;
        other.v = __shfl_xor_sync(0xffffffffu, acc.v, off);
        other.idx = __shfl_xor_sync(0xffffffffu, acc.idx, off);
        red_merge(a, acc, other);
    }
    if (lane == 0) red_store(a, o, acc);
}

extern "C" cudaError_t ingot_cuda_reduce(const ig_reduce_args *a, cudaStream_t s)
{
    if (a->n_out <= 0) return cudaSuccess;
    const bool inner = a->red_rank > 0 && a->red_xstrides[a->red_rank - 1] == 1 && a->n_red >= 32;
    if (inner)
        reduce_warp<<<(unsigned)((a->n_out + NORM_WARPS - 1) / NORM_WARPS), NORM_WARPS * 32, 0, s>>>(*a);
    else
        reduce_thread<<<(unsigned)((a->n_out + 255) / 256), 256, 0, s>>>(*a);
    return cudaGetLastError();
}
