/*
 * groupnorm_vec.cuh -- the 16-byte paths of groupnorm.cu (included there; Wf, wf_of, gld, GN_BLOCK come
 * from it). A thread moves 16 bytes at a time: 8 fp16/bf16 or 4 fp32 elements.
 *
 * Channels-last ([n][s][c], c % V == 0): a block is tx threads across channel vectors x ty = 256 / tx
 * pixel rows; with tx = cv (the vectors of one pixel) consecutive threads read consecutive vectors, so a
 * warp reads 512 contiguous bytes whatever c is; wide pixels take tiles of 32 vectors (a warp reads 512
 * bytes of one pixel). Every thread of a channel shifts by the same value (the channel's first pixel of
 * that n), so the block's sums are plain sums: no Chan merge inside the block, only in gn_finish.
 * NCHW rows (s % V == 0): the same loads along each (n, c) row.
 *
 * Apply: y = (x - mean) * (rstd * scale) + bias, with mean, rstd * scale and bias computed once per
 * thread for its channels (channels-last: the block's n is blockIdx.z, the thread's channels fixed).
 */
#ifndef INGOT_GROUPNORM_VEC_CUH
#define INGOT_GROUPNORM_VEC_CUH

#define GN_UNROLL 4 /* 16-byte loads in flight per thread */

template <int DT> struct gn_vec {
    static constexpr int n = DT == INGOT_DTYPE_FLOAT ? 4 : 8;
};

/* Vector i (16 bytes) of p as floats. */
template <int DT> __device__ __forceinline__ void vld(const void *p, int64_t i, float *f)
{
    const uint4 u = reinterpret_cast<const uint4 *>(p)[i];
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int k = 0; k < 4; k++) {
        if (DT == INGOT_DTYPE_FLOAT) {
            f[k] = __uint_as_float(w[k]);
        } else if (DT == INGOT_DTYPE_FLOAT16) {
            const float2 t = __half22float2(*reinterpret_cast<const __half2 *>(&w[k]));
            f[2 * k] = t.x;
            f[2 * k + 1] = t.y;
        } else {
            const float2 t = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&w[k]));
            f[2 * k] = t.x;
            f[2 * k + 1] = t.y;
        }
    }
}

template <int DT> __device__ __forceinline__ void vst(void *p, int64_t i, const float *f)
{
    uint32_t w[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        if (DT == INGOT_DTYPE_FLOAT) {
            w[k] = __float_as_uint(f[k]);
        } else if (DT == INGOT_DTYPE_FLOAT16) {
            const __half2 h = __floats2half2_rn(f[2 * k], f[2 * k + 1]);
            w[k] = *reinterpret_cast<const uint32_t *>(&h);
        } else {
            const __nv_bfloat162 h = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
            w[k] = *reinterpret_cast<const uint32_t *>(&h);
        }
    }
    reinterpret_cast<uint4 *>(p)[i] = make_uint4(w[0], w[1], w[2], w[3]);
}

/* Shifted sums of vectors first, first + step, ... < end of p, GN_UNROLL loads in flight. */
template <int DT>
__device__ __forceinline__ void vsums(const void *p, int64_t first, int64_t end, int64_t step, int64_t stride,
                                      const float *shift, float *sum, float *sq)
{
    constexpr int V = gn_vec<DT>::n;
    int64_t j = first;
    for (; j + (GN_UNROLL - 1) * step < end; j += GN_UNROLL * step) {
        float v[GN_UNROLL][V];
#pragma unroll
        for (int u = 0; u < GN_UNROLL; u++) vld<DT>(p, (j + u * step) * stride, v[u]);
#pragma unroll
        for (int u = 0; u < GN_UNROLL; u++)
#pragma unroll
            for (int k = 0; k < V; k++) {
                const float d = v[u][k] - shift[k];
                sum[k] += d;
                sq[k] += d * d;
            }
    }
    for (; j < end; j += step) {
        float v[V];
        vld<DT>(p, j * stride, v);
#pragma unroll
        for (int k = 0; k < V; k++) {
            const float d = v[k] - shift[k];
            sum[k] += d;
            sq[k] += d * d;
        }
    }
}

/* Channels-last statistics: block (n, tile of tx channel vectors, split) -> per-channel states. */
template <int DT> __global__ void __launch_bounds__(GN_BLOCK) gn_stats_cols_vec(const ig_groupnorm_args a)
{
    constexpr int V = gn_vec<DT>::n;
    __shared__ float2 sm[GN_BLOCK * 8]; /* [k][ry][vx]: conflict-free for both phases */
    const int tx = a.tx, ty = GN_BLOCK / tx, vx = threadIdx.x % tx, ry = threadIdx.x / tx;
    const int64_t cv = a.c / V, tiles = (cv + tx - 1) / tx, n = blockIdx.x / tiles, v0 = (blockIdx.x % tiles) * tx;
    const int64_t j0 = (int64_t)blockIdx.y * a.chunk, j1 = min(j0 + a.chunk, a.s);
    const char *xn = static_cast<const char *>(a.x) + n * a.s * a.c * (DT == INGOT_DTYPE_FLOAT ? 4 : 2);
    float sum[V], sq[V], shift[V];
#pragma unroll
    for (int k = 0; k < V; k++) sum[k] = sq[k] = 0.f;
    const bool live = ry < ty && v0 + vx < cv;
    if (live) {
        vld<DT>(xn, v0 + vx, shift);
        /* vector index of pixel j: j * cv + (v0 + vx); vsums multiplies by its stride argument */
        vsums<DT>(xn + (v0 + vx) * 16, j0 + ry, j1, ty, cv, shift, sum, sq);
    }
    if (ry < ty)
#pragma unroll
        for (int k = 0; k < V; k++) sm[(k * ty + ry) * tx + vx] = make_float2(sum[k], sq[k]);
    __syncthreads();
    const float cnt = (float)max(j1 - j0, (int64_t)0);
    for (int t = threadIdx.x; t < tx * V; t += GN_BLOCK) {
        const int k = t / tx, x = t % tx;
        if (v0 + x >= cv) continue;
        float s = 0.f, q = 0.f;
        for (int r = 0; r < ty; r++) {
            const float2 e = sm[(k * ty + r) * tx + x];
            s += e.x;
            q += e.y;
        }
        const int64_t ch = (v0 + x) * V + k;
        const Wf w = wf_of(cnt, s, q, gld(a.x, n * a.s * a.c + ch, a.dtype));
        reinterpret_cast<float4 *>(a.part)[(n * a.c + ch) * a.split + blockIdx.y] = make_float4(w.n, w.mean, w.m2, 0.f);
    }
}

/* NCHW statistics, 16-byte loads: block (row = n * c + ch, split); chunk is a multiple of V. */
template <int DT> __global__ void __launch_bounds__(GN_BLOCK) gn_stats_rows_vec(const ig_groupnorm_args a)
{
    constexpr int V = gn_vec<DT>::n;
    __shared__ Wf sm[GN_BLOCK / 32];
    const int64_t row = blockIdx.x, part = blockIdx.y, sv = a.s / V;
    const int64_t j0 = part * a.chunk / V, j1 = min((part * a.chunk + a.chunk) / V, sv);
    const char *xr = static_cast<const char *>(a.x) + row * sv * 16;
    const float first = gld(a.x, row * a.s, a.dtype);
    float shift[V], sum[V], sq[V];
#pragma unroll
    for (int k = 0; k < V; k++) {
        shift[k] = first;
        sum[k] = sq[k] = 0.f;
    }
    vsums<DT>(xr, j0 + threadIdx.x, j1, GN_BLOCK, 1, shift, sum, sq);
    float s = 0.f, q = 0.f;
#pragma unroll
    for (int k = 0; k < V; k++) {
        s += sum[k];
        q += sq[k];
    }
    const int64_t mine = j1 - j0 - threadIdx.x; /* this thread's vectors: ceil(mine / GN_BLOCK) */
    gn_block_partial(wf_of(mine > 0 ? (float)(((mine + GN_BLOCK - 1) / GN_BLOCK) * V) : 0.f, s, q, first), sm, a, row,
                     part);
}

/* Mean, rstd * scale and bias of channel ch of batch item n (32-bit: channels and groups are few). */
__device__ __forceinline__ void gn_affine(const ig_groupnorm_args &a, int64_t n, int ch, float *m, float *mul,
                                          float *add)
{
    const int cg = (int)(a.c / a.groups), g = ch / cg, pi = a.per_group ? g : ch;
    const float2 st = reinterpret_cast<const float2 *>(a.stats)[n * a.groups + g];
    *m = st.x;
    *mul = st.y * (a.scale ? gld(a.scale, pi, a.wdtype) : 1.f);
    *add = a.bias ? gld(a.bias, pi, a.wdtype) : 0.f;
}

/* Channels-last apply: grid (channel-vector tiles, pixel blocks, n); 32-bit offsets (s * c < 2^31). */
template <int DT> __global__ void __launch_bounds__(GN_BLOCK) gn_apply_cols_vec(const ig_groupnorm_args a)
{
    constexpr int V = gn_vec<DT>::n;
    const int tx = a.tx, ty = GN_BLOCK / tx, ry = threadIdx.x / tx;
    const int cv = (int)(a.c / V), vc = blockIdx.x * tx + threadIdx.x % tx;
    if (ry >= ty || vc >= cv) return;
    const int64_t n = blockIdx.z;
    float m[V], mul[V], add[V];
#pragma unroll
    for (int k = 0; k < V; k++) gn_affine(a, n, vc * V + k, &m[k], &mul[k], &add[k]);
    const size_t off = (size_t)n * a.s * a.c * (DT == INGOT_DTYPE_FLOAT ? 4 : 2);
    const char *xn = static_cast<const char *>(a.x) + off;
    char *yn = static_cast<char *>(a.y) + off;
    const int s = (int)a.s, step = gridDim.y * ty;
    for (int j = blockIdx.y * ty + ry; j < s; j += GN_UNROLL * step) {
        float v[GN_UNROLL][V];
#pragma unroll
        for (int u = 0; u < GN_UNROLL; u++)
            if (j + u * step < s) vld<DT>(xn, (j + u * step) * cv + vc, v[u]);
#pragma unroll
        for (int u = 0; u < GN_UNROLL; u++) {
            if (j + u * step >= s) break;
#pragma unroll
            for (int k = 0; k < V; k++) v[u][k] = fmaf(v[u][k] - m[k], mul[k], add[k]);
            vst<DT>(yn, (j + u * step) * cv + vc, v[u]);
        }
    }
}

/* NCHW apply: rows (n, ch) of sv vectors, tx threads along a row, ty rows per block. */
template <int DT> __global__ void __launch_bounds__(GN_BLOCK) gn_apply_rows_vec(const ig_groupnorm_args a, int tx)
{
    constexpr int V = gn_vec<DT>::n;
    const int ty = GN_BLOCK / tx;
    const int64_t rows = a.n * a.c, sv = a.s / V;
    for (int64_t r = (int64_t)blockIdx.y * ty + threadIdx.x / tx; r < rows; r += (int64_t)gridDim.y * ty) {
        float m, mul, add;
        gn_affine(a, r / a.c, (int)(r % a.c), &m, &mul, &add);
        for (int64_t j = (int64_t)blockIdx.x * tx + threadIdx.x % tx; j < sv; j += (int64_t)gridDim.x * tx) {
            float v[V];
            vld<DT>(a.x, r * sv + j, v);
#pragma unroll
            for (int k = 0; k < V; k++) v[k] = fmaf(v[k] - m, mul, add);
            vst<DT>(a.y, r * sv + j, v);
        }
    }
}

#endif /* INGOT_GROUPNORM_VEC_CUH */
