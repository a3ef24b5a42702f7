/*
 * groupnorm.cu -- InstanceNormalization (and GroupNormalization: groups of channels), NCHW or
 * channels-last, in three small kernels:
 *
 *  1. statistics per (n, channel, split): the elements shifted by the channel's first one (so that
 *     fp32 sums of squares do not cancel), summed per thread, then merged across the block with Chan's
 *     parallel formula into (count, mean, M2). NCHW reads each channel's contiguous run with a block;
 *     channels-last reads channel vectors x spatial rows per block (coalesced across channels). Where
 *     the channels (channels-last) or the rows (NCHW) split into 16-byte vectors and the pointers are
 *     16-byte aligned, groupnorm_vec.cuh's kernels move 16 bytes a load; the scalar kernels here are
 *     the fallback for other shapes;
 *  2. one warp per (n, group) merges its channels' and splits' states into (mean, 1/sqrt(var + eps));
 *  3. y = (x - mean) * rstd * scale[c] + bias[c] over rows of the memory order.
 *
 * Memory: x read twice, y written once (3 passes); the statistics are a few KB.
 */
#include "kernels.h"
#include "ingot.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#define GN_BLOCK  256
#define GN_TARGET (132 * 1024)

__device__ __forceinline__ float gld(const void *p, int64_t i, int dt)
{
    switch (dt) {
    case INGOT_DTYPE_FLOAT16: return __half2float(((const __half *)p)[i]);
    case INGOT_DTYPE_BFLOAT16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

__device__ __forceinline__ void gst(void *p, int64_t i, int dt, float v)
{
    switch (dt) {
    case INGOT_DTYPE_FLOAT16: ((__half *)p)[i] = __float2half_rn(v); break;
    case INGOT_DTYPE_BFLOAT16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v); break;
    default: ((float *)p)[i] = v; break;
    }
}

/* (count, mean, M2) */
struct Wf {
    float n, mean, m2;
};

__device__ __forceinline__ Wf wf_merge(Wf a, Wf b)
{
    if (b.n == 0.f) return a;
    if (a.n == 0.f) return b;
    const float n = a.n + b.n, d = b.mean - a.mean, f = b.n / n;
    Wf r;
    r.n = n;
    r.mean = a.mean + d * f;
    r.m2 = a.m2 + b.m2 + d * d * a.n * f;
    return r;
}

__device__ __forceinline__ Wf wf_shfl(Wf a, int m)
{
    Wf b;
    b.n = __shfl_xor_sync(0xffffffffu, a.n, m);
    b.mean = __shfl_xor_sync(0xffffffffu, a.mean, m);
    b.m2 = __shfl_xor_sync(0xffffffffu, a.m2, m);
    return b;
}

/* A thread's shifted sums as a state. */
__device__ __forceinline__ Wf wf_of(float cnt, float sum, float sq, float shift)
{
    Wf w;
    w.n = cnt;
    w.mean = cnt > 0.f ? shift + sum / cnt : 0.f;
    w.m2 = cnt > 0.f ? fmaxf(sq - sum * sum / cnt, 0.f) : 0.f;
    return w;
}

/* The block's state from every thread's w (GN_BLOCK threads; sm holds GN_BLOCK / 32), stored by thread 0
 * as partial `part` of row `row`: the tail of the rows-statistics kernels. */
__device__ __forceinline__ void gn_block_partial(Wf w, Wf *sm, const ig_groupnorm_args &a, int64_t row, int64_t part)
{
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) w = wf_merge(w, wf_shfl(w, m));
    if (threadIdx.x % 32 == 0) sm[threadIdx.x / 32] = w;
    __syncthreads();
    if (threadIdx.x >= 32) return; /* the kernel's last act: the first warp finishes */
    w = threadIdx.x < GN_BLOCK / 32 ? sm[threadIdx.x] : Wf{0.f, 0.f, 0.f};
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) w = wf_merge(w, wf_shfl(w, m));
    if (threadIdx.x == 0)
        reinterpret_cast<float4 *>(a.part)[row * a.split + part] = make_float4(w.n, w.mean, w.m2, 0.f);
}

/* NCHW: block (row = n * c + ch, split). */
__global__ void __launch_bounds__(GN_BLOCK) gn_stats_rows(const ig_groupnorm_args a)
{
    __shared__ Wf sm[GN_BLOCK / 32];
    const int64_t row = blockIdx.x, part = blockIdx.y;
    const int64_t base = row * a.s, j0 = part * a.chunk, j1 = min(j0 + a.chunk, a.s);
    const float shift = gld(a.x, base, a.dtype);
    float sum = 0.f, sq = 0.f, cnt = 0.f;
    for (int64_t j = j0 + threadIdx.x; j < j1; j += GN_BLOCK) {
        const float v = gld(a.x, base + j, a.dtype) - shift;
        sum += v;
        sq += v * v;
        cnt += 1.f;
    }
    gn_block_partial(wf_of(cnt, sum, sq, shift), sm, a, row, part);
}

/* Channels-last: block (n, tile of 32 channels, split); threads 32 channels x 8 spatial rows. */
__global__ void __launch_bounds__(GN_BLOCK) gn_stats_cols(const ig_groupnorm_args a)
{
    __shared__ Wf sm[GN_BLOCK];
    const int cx = threadIdx.x % 32, ry = threadIdx.x / 32;
    const int64_t tiles = (a.c + 31) / 32;
    const int64_t n = blockIdx.x / tiles, ch = (blockIdx.x % tiles) * 32 + cx, part = blockIdx.y;
    const int64_t j0 = part * a.chunk, j1 = min(j0 + a.chunk, a.s);
    Wf w = {0.f, 0.f, 0.f};
    if (ch < a.c) {
        const int64_t base = n * a.s * a.c + ch;
        const float shift = gld(a.x, base, a.dtype);
        float sum = 0.f, sq = 0.f, cnt = 0.f;
        for (int64_t j = j0 + ry; j < j1; j += GN_BLOCK / 32) {
            const float v = gld(a.x, base + j * a.c, a.dtype) - shift;
            sum += v;
            sq += v * v;
            cnt += 1.f;
        }
        w = wf_of(cnt, sum, sq, shift);
    }
    sm[threadIdx.x] = w;
    __syncthreads();
    if (ry || ch >= a.c) return;
#pragma unroll
    for (int k = 1; k < GN_BLOCK / 32; k++) w = wf_merge(w, sm[k * 32 + cx]);
    reinterpret_cast<float4 *>(a.part)[(n * a.c + ch) * a.split + part] = make_float4(w.n, w.mean, w.m2, 0.f);
}

/* A warp per (n, group): its channels' and splits' states -> (mean, rstd). */
__global__ void __launch_bounds__(GN_BLOCK) gn_finish(const ig_groupnorm_args a)
{
    const int64_t ng = (int64_t)blockIdx.x * (GN_BLOCK / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (ng >= a.n * a.groups) return;
    const int64_t cg = a.c / a.groups, n = ng / a.groups, g = ng % a.groups;
    const int64_t first = (n * a.c + g * cg) * a.split, count = cg * a.split; /* consecutive states */
    const float4 *p = reinterpret_cast<const float4 *>(a.part) + first;
    Wf w = {0.f, 0.f, 0.f};
    for (int64_t q = lane; q < count; q += 32) {
        const float4 v = p[q];
        w = wf_merge(w, Wf{v.x, v.y, v.z});
    }
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) w = wf_merge(w, wf_shfl(w, m));
    if (lane == 0) {
        const float var = w.n > 0.f ? w.m2 / w.n : 0.f;
        reinterpret_cast<float2 *>(a.stats)[ng] = make_float2(w.mean, rsqrtf(var + a.eps));
    }
}

/* Rows of the memory order: NCHW rows (n, c) of s elements, channels-last rows (n, spatial) of c. */
__global__ void __launch_bounds__(GN_BLOCK) gn_apply(const ig_groupnorm_args a, int tx)
{
    const int ty = GN_BLOCK / tx;
    const int64_t len = a.cl ? a.c : a.s, rows = a.cl ? a.n * a.s : a.n * a.c, cg = a.c / a.groups;
    const float2 *stats = reinterpret_cast<const float2 *>(a.stats);
    for (int64_t r = (int64_t)blockIdx.y * ty + threadIdx.x / tx; r < rows; r += (int64_t)gridDim.y * ty) {
        const int64_t n = a.cl ? r / a.s : r / a.c, rc = a.cl ? 0 : r % a.c;
        for (int64_t j = (int64_t)blockIdx.x * tx + threadIdx.x % tx; j < len; j += (int64_t)gridDim.x * tx) {
            const int64_t ch = a.cl ? j : rc, i = r * len + j;
            const float2 st = stats[n * a.groups + ch / cg];
            const int64_t pi = a.per_group ? ch / cg : ch;
            const float sc = a.scale ? gld(a.scale, pi, a.wdtype) : 1.f, b = a.bias ? gld(a.bias, pi, a.wdtype) : 0.f;
            gst(a.y, i, a.dtype, (gld(a.x, i, a.dtype) - st.x) * st.y * sc + b);
        }
    }
}

#include "groupnorm_vec.cuh"

/* Elements per 16-byte vector. */
static int gn_width(int32_t dtype) { return dtype == INGOT_DTYPE_FLOAT ? 4 : 8; }

/* Channels-last 16-byte layout: tx = cv (a block covers whole pixels) or tiles of 32 vectors, whichever
 * leaves fewer of the block's threads idle. */
static int32_t gn_cols_tx(int64_t cv)
{
    if (cv > GN_BLOCK) return 32;
    const double whole = (double)(cv * (GN_BLOCK / cv)) / GN_BLOCK, tiled = (double)cv / (32 * ((cv + 31) / 32));
    return whole >= tiled ? (int32_t)cv : 32;
}

extern "C" size_t ingot_cuda_groupnorm_plan(ig_groupnorm_args *a)
{
    const int v = gn_width(a->dtype);
    a->split = 1;
    a->chunk = a->s;
    a->tx = a->cl && a->c % v == 0 ? gn_cols_tx(a->c / v) : 0;
    int64_t blocks, rows_per; /* stats blocks without a split; spatial elements a block reads per step */
    if (a->tx) {
        blocks = a->n * ((a->c / v + a->tx - 1) / a->tx);
        rows_per = GN_BLOCK / a->tx;
    } else if (a->cl) {
        blocks = a->n * ((a->c + 31) / 32);
        rows_per = 8;
    } else {
        blocks = a->n * a->c;
        rows_per = a->s % v == 0 ? GN_BLOCK * v : GN_BLOCK;
    }
    if (blocks > 0 && blocks * GN_BLOCK < GN_TARGET && a->s / rows_per > 16) {
        int64_t split = (GN_TARGET + blocks * GN_BLOCK - 1) / (blocks * GN_BLOCK), most = a->s / (rows_per * 8);
        split = split < most ? split : most;
        split = split < 1 ? 1 : split > 65535 ? 65535 : split;
        a->chunk = (a->s + split - 1) / split;
    }
    a->chunk = (a->chunk + 7) / 8 * 8; /* whole vectors per split for the 16-byte NCHW path */
    a->split = (int32_t)((a->s + a->chunk - 1) / a->chunk);
    /* partial states [n][c][split] (float4), then (mean, rstd) per (n, group) */
    return (size_t)(a->n * a->c * a->split) * 16 + (size_t)(a->n * a->groups) * 8;
}

static unsigned gn_cap(int64_t v, int64_t most) { return (unsigned)(v < 1 ? 1 : v < most ? v : most); }

/* The three kernels for one storage type: 16-byte paths where the shape and the pointers allow. */
template <int DT> static void gn_launch(const ig_groupnorm_args *a, cudaStream_t s)
{
    const int v = gn_width(DT);
    const bool aligned = (((uintptr_t)a->x | (uintptr_t)a->y) & 15) == 0;
    const bool cols_vec = a->cl && a->tx > 0 && aligned, rows_vec = !a->cl && a->s % v == 0 && aligned;
    const int64_t tiles = a->tx > 0 ? (a->c / v + a->tx - 1) / a->tx : 0;
    if (cols_vec)
        gn_stats_cols_vec<DT><<<dim3((unsigned)(a->n * tiles), (unsigned)a->split), GN_BLOCK, 0, s>>>(*a);
    else if (a->cl)
        gn_stats_cols<<<dim3((unsigned)(a->n * ((a->c + 31) / 32)), (unsigned)a->split), GN_BLOCK, 0, s>>>(*a);
    else if (rows_vec)
        gn_stats_rows_vec<DT><<<dim3((unsigned)(a->n * a->c), (unsigned)a->split), GN_BLOCK, 0, s>>>(*a);
    else
        gn_stats_rows<<<dim3((unsigned)(a->n * a->c), (unsigned)a->split), GN_BLOCK, 0, s>>>(*a);
    const int64_t ng = a->n * a->groups;
    gn_finish<<<(unsigned)((ng + GN_BLOCK / 32 - 1) / (GN_BLOCK / 32)), GN_BLOCK, 0, s>>>(*a);
    if (cols_vec && a->s * a->c < ((int64_t)1 << 31) && a->n <= 65535) {
        /* about 8 vectors a thread: the per-channel constants are computed once per thread */
        const int64_t ty = GN_BLOCK / a->tx;
        gn_apply_cols_vec<DT>
            <<<dim3((unsigned)tiles, gn_cap((a->s + ty * GN_UNROLL * 2 - 1) / (ty * GN_UNROLL * 2), 65535),
                    (unsigned)a->n),
               GN_BLOCK, 0, s>>>(*a);
        return;
    }
    const int64_t len = a->cl ? a->c : rows_vec ? a->s / v : a->s, rows = a->cl ? a->n * a->s : a->n * a->c;
    int tx = 1;
    while (tx < len && tx < GN_BLOCK) tx <<= 1;
    const dim3 grid(gn_cap((len + tx - 1) / tx, 1024), gn_cap((rows + GN_BLOCK / tx - 1) / (GN_BLOCK / tx), 65535));
    if (rows_vec)
        gn_apply_rows_vec<DT><<<grid, GN_BLOCK, 0, s>>>(*a, tx);
    else
        gn_apply<<<grid, GN_BLOCK, 0, s>>>(*a, tx);
}

extern "C" cudaError_t ingot_cuda_groupnorm(const ig_groupnorm_args *a, cudaStream_t s)
{
    if (a->n <= 0 || a->c <= 0 || a->s <= 0) return cudaSuccess;
    if (a->groups <= 0 || a->c % a->groups || !a->part || !a->stats) return cudaErrorInvalidValue;
    switch (a->dtype) {
    case INGOT_DTYPE_FLOAT16: gn_launch<INGOT_DTYPE_FLOAT16>(a, s); break;
    case INGOT_DTYPE_BFLOAT16: gn_launch<INGOT_DTYPE_BFLOAT16>(a, s); break;
    default: gn_launch<INGOT_DTYPE_FLOAT>(a, s); break;
    }
    return cudaGetLastError();
}
