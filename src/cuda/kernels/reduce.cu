/*
 * reduce.cu -- reductions at memory bandwidth: ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/
 * LogSumExp and GlobalAverage/MaxPool, over any axes of a tensor read through its strides.
 *
 * The lowering hands the problem over in a canonical form (ig_reduction_args): x's dims sorted by stride,
 * neighbours of one class merged, the innermost (stride 1) run either reduced ("rows": NCHW global
 * pooling, a mean over the last axis) or kept ("columns": NHWC global pooling, a sum over the sequence
 * of [B, S, D]). Every load is coalesced in both forms:
 *
 *  - rows: a group of `lanes` threads per output (a sub-warp of 1..32 lanes for short rows, a block of
 *    64..1024 threads for long ones) walks the row with 16-byte loads, four in flight per thread, then
 *    combines through shuffles (and shared memory across warps);
 *  - columns: a block of tx x ty threads owns tx 16-byte column vectors (8 x 16 = 128 contiguous bytes
 *    of each row for a warp's 8 lanes) and splits the reduced rows over ty; the ty partial states
 *    combine through shared memory.
 *
 * A grid too small to fill the GPU (batch 1: [1, 96, 112, 112]) splits each output's reduced elements
 * over `split` blocks: they write fp32 partial states, and a second kernel finishes them in a fixed
 * order (deterministic: no atomics). Accumulation is fp32 for float types (int64 for integer types);
 * LogSumExp keeps an online (max, sum of exp) pair. The geometry is planned once, at lowering
 * (ingot_cuda_reduction_plan), because the partials need an arena buffer.
 */
#include "div_rem.cuh"
#include "kernels.h"
#include "ingot.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <float.h>
#include <limits.h>
#include <stdint.h>

#define RDX_BLOCK  256
#define RDX_UNROLL 4
#define RDX_TARGET (132 * 1024) /* threads that keep an H200's memory system busy */

/* ---- element types ---------------------------------------------------------------------------------- */

template <typename T> struct Elem; /* load type -> accumulator type and conversions */
template <> struct Elem<float> {
    typedef float acc;
    static __device__ __forceinline__ float to(float v) { return v; }
    static __device__ __forceinline__ float from(float v) { return v; }
};
template <> struct Elem<__half> {
    typedef float acc;
    static __device__ __forceinline__ float to(__half v) { return __half2float(v); }
    static __device__ __forceinline__ __half from(float v) { return __float2half_rn(v); }
};
template <> struct Elem<__nv_bfloat16> {
    typedef float acc;
    static __device__ __forceinline__ float to(__nv_bfloat16 v) { return __bfloat162float(v); }
    static __device__ __forceinline__ __nv_bfloat16 from(float v) { return __float2bfloat16_rn(v); }
};
template <> struct Elem<int> {
    typedef long long acc;
    static __device__ __forceinline__ long long to(int v) { return v; }
    static __device__ __forceinline__ int from(long long v) { return (int)v; }
};
template <> struct Elem<long long> {
    typedef long long acc;
    static __device__ __forceinline__ long long to(long long v) { return v; }
    static __device__ __forceinline__ long long from(long long v) { return v; }
};

/* V elements from p: one 16-byte load when V elements make 16 bytes (p aligned), else scalars. */
template <typename T, int V> __device__ __forceinline__ void load_vec(const T *__restrict__ p, T (&v)[V])
{
    if (V * sizeof(T) == 16) {
        union {
            uint4 u;
            T t[V];
        } w;
        w.u = __ldg(reinterpret_cast<const uint4 *>(p));
#pragma unroll
        for (int e = 0; e < V; e++) v[e] = w.t[e];
    } else {
#pragma unroll
        for (int e = 0; e < V; e++) v[e] = p[e];
    }
}

/* ---- the operations: state, element step, merge ------------------------------------------------------ */

enum { OP_ADD, OP_ADD_ABS, OP_ADD_SQ, OP_MAX, OP_MIN, OP_MUL, OP_LSE };

template <typename A> struct St {
    A a;
    float b; /* OP_LSE: the sum of exp(x - a) */
};

template <typename A> __device__ __forceinline__ A lim_lo();
template <> __device__ __forceinline__ float lim_lo<float>() { return -INFINITY; }
template <> __device__ __forceinline__ long long lim_lo<long long>() { return LLONG_MIN; }
template <typename A> __device__ __forceinline__ A lim_hi();
template <> __device__ __forceinline__ float lim_hi<float>() { return INFINITY; }
template <> __device__ __forceinline__ long long lim_hi<long long>() { return LLONG_MAX; }

template <int K, typename A> __device__ __forceinline__ St<A> op_init()
{
    St<A> s;
    s.b = 0.f;
    if constexpr (K == OP_MAX || K == OP_LSE)
        s.a = lim_lo<A>();
    else if constexpr (K == OP_MIN)
        s.a = lim_hi<A>();
    else if constexpr (K == OP_MUL)
        s.a = (A)1;
    else
        s.a = (A)0;
    return s;
}

/* NaN propagates through Max/Min as in the CPU kernels (x != x is false for integers). */
template <int K, typename A> __device__ __forceinline__ void op_step(St<A> &s, A x)
{
    if constexpr (K == OP_ADD)
        s.a += x;
    else if constexpr (K == OP_ADD_ABS)
        s.a += x < (A)0 ? -x : x;
    else if constexpr (K == OP_ADD_SQ)
        s.a += x * x;
    else if constexpr (K == OP_MAX)
        s.a = (x > s.a || x != x) ? x : s.a;
    else if constexpr (K == OP_MIN)
        s.a = (x < s.a || x != x) ? x : s.a;
    else if constexpr (K == OP_MUL)
        s.a *= x;
    else { /* online log-sum-exp; -inf contributes nothing, equal maxima (+inf too) add exp(0) */
        const float xf = (float)x, m = (float)s.a;
        if (xf > m) {
            s.b = s.b * __expf(m - xf) + 1.f;
            s.a = (A)xf;
        } else if (xf == m) {
            s.b += xf == -INFINITY ? 0.f : 1.f;
        } else if (xf != -INFINITY) {
            s.b += __expf(xf - m); /* NaN x lands here and poisons the sum */
        }
    }
}

template <int K, typename A> __device__ __forceinline__ void op_merge(St<A> &s, const St<A> &o)
{
    if constexpr (K == OP_ADD || K == OP_ADD_ABS || K == OP_ADD_SQ)
        s.a += o.a;
    else if constexpr (K == OP_MUL)
        s.a *= o.a;
    else if constexpr (K == OP_MAX || K == OP_MIN)
        op_step<K, A>(s, o.a);
    else {
        const float m1 = (float)s.a, m2 = (float)o.a, m = fmaxf(m1, m2);
        if (m == -INFINITY) return; /* both empty */
        if (m1 != m1 || m2 != m2) {
            s.a = (A)NAN;
            return;
        }
        const float f1 = m1 == m ? 1.f : __expf(m1 - m), f2 = m2 == m ? 1.f : __expf(m2 - m);
        s.b = s.b * f1 + o.b * f2;
        s.a = (A)m;
    }
}

template <typename A> __device__ __forceinline__ St<A> shfl_st(const St<A> &s, int m, int width)
{
    St<A> o;
    o.a = __shfl_xor_sync(0xffffffffu, s.a, m, width);
    o.b = __shfl_xor_sync(0xffffffffu, s.b, m, width);
    return o;
}

/* The value stored for a final state (kind: enum ig_rdx_kind). */
__device__ __forceinline__ float finish_f(const ig_reduction_args &a, St<float> s)
{
    switch (a.kind) {
    case IG_RDX_MEAN: return s.a / (float)a.n_red_total;
    case IG_RDX_L2: return sqrtf(s.a);
    case IG_RDX_LOGSUM: return logf(s.a);
    case IG_RDX_LOGSUMEXP: return s.a == -INFINITY || s.a == INFINITY || s.a != s.a ? s.a : s.a + logf(s.b);
    default: return s.a;
    }
}
__device__ __forceinline__ long long finish_f(const ig_reduction_args &a, St<long long> s) { return s.a; }

/* ---- offsets ------------------------------------------------------------------------------------------- */

/* x and y offsets of output o's kept coordinates over the outer kept dims (rows: o itself; columns: the
 * outer part of o). */
__device__ __forceinline__ int64_t keep_offsets(const ig_reduction_args &a, int64_t o, int64_t *yoff)
{
    int64_t xo = 0, yo = 0;
#pragma unroll
    for (int d = IG_RDX_MAX_DIMS - 1; d >= 0; d--) {
        if (d >= a.n_keep) continue;
        int64_t c;
        o = ig_div_rem(o, a.keep[d], c);
        xo += c * a.keep_xs[d];
        yo += c * a.keep_ys[d];
    }
    *yoff = yo;
    return xo;
}

__device__ __forceinline__ int64_t red_offset(const ig_reduction_args &a, int64_t r)
{
    int64_t off = 0;
#pragma unroll
    for (int d = IG_RDX_MAX_DIMS - 1; d >= 0; d--) {
        if (d >= a.n_red) continue;
        int64_t c;
        r = ig_div_rem(r, a.red[d], c);
        off += c * a.red_xs[d];
    }
    return off;
}

/* y's offset of canonical output o (the finishing kernel). */
__device__ __forceinline__ int64_t out_offset(const ig_reduction_args &a, int64_t o)
{
    int64_t yo, k = 0;
    if (a.cols) o = ig_div_rem(o, a.inner, k);
    keep_offsets(a, o, &yo);
    return yo + k * a.inner_ys;
}

template <typename T, typename A>
__device__ __forceinline__ void put(const ig_reduction_args &a, int64_t o, int64_t part, int64_t yoff, St<A> s)
{
    if (a.split > 1) {
        float2 p;
        p.x = (float)s.a;
        p.y = s.b;
        reinterpret_cast<float2 *>(a.part)[o * a.split + part] = p;
    } else {
        reinterpret_cast<T *>(a.y)[yoff] = Elem<T>::from(finish_f(a, s));
    }
}

/* ---- rows: the innermost run is reduced ------------------------------------------------------------- */

/* Accumulate elements [j0, j1) of output o's reduced set (element j: segment j / inner, position
 * j % inner), lane `lane` of `lanes`, V elements per load. */
template <typename T, int K, int V>
__device__ __forceinline__ void row_range(const ig_reduction_args &a, const T *__restrict__ x, int64_t j0, int64_t j1,
                                          int lane, int lanes, St<typename Elem<T>::acc> &s)
{
    typedef typename Elem<T>::acc A;
    const int64_t step = (int64_t)lanes * V;
    int64_t j = j0 + (int64_t)lane * V;
    if (a.n_red == 0) { /* one contiguous run: several loads in flight */
        for (; j + (RDX_UNROLL - 1) * step < j1; j += RDX_UNROLL * step) {
            T v[RDX_UNROLL][V];
#pragma unroll
            for (int u = 0; u < RDX_UNROLL; u++) load_vec<T, V>(x + j + u * step, v[u]);
#pragma unroll
            for (int u = 0; u < RDX_UNROLL; u++)
#pragma unroll
                for (int e = 0; e < V; e++) op_step<K, A>(s, Elem<T>::to(v[u][e]));
        }
        for (; j < j1; j += step) {
            T v[V];
            load_vec<T, V>(x + j, v);
#pragma unroll
            for (int e = 0; e < V; e++) op_step<K, A>(s, Elem<T>::to(v[e]));
        }
        return;
    }
    for (; j < j1; j += step) { /* several runs (outer reduced dims): locate each load */
        const int64_t seg = j / a.inner;
        T v[V];
        load_vec<T, V>(x + red_offset(a, seg) + (j - seg * a.inner), v);
#pragma unroll
        for (int e = 0; e < V; e++) op_step<K, A>(s, Elem<T>::to(v[e]));
    }
}

/* lanes <= 32: a sub-warp group per output, blockDim / lanes outputs per block. */
template <typename T, int K, int V>
__global__ void __launch_bounds__(RDX_BLOCK) rdx_rows_warp(const ig_reduction_args a)
{
    typedef typename Elem<T>::acc A;
    const int lanes = a.lanes, lane = threadIdx.x % lanes;
    const int64_t o = (int64_t)blockIdx.x * (blockDim.x / lanes) + threadIdx.x / lanes;
    St<A> s = op_init<K, A>();
    int64_t yoff = 0;
    if (o < a.n_out) {
        const int64_t xb = keep_offsets(a, o, &yoff);
        row_range<T, K, V>(a, (const T *)a.x + xb, 0, a.n_red_total, lane, lanes, s);
    }
    for (int m = lanes / 2; m > 0; m >>= 1) op_merge<K, A>(s, shfl_st(s, m, lanes));
    if (o < a.n_out && lane == 0) put<T, A>(a, o, 0, yoff, s);
}

/* lanes > 32: a block per (output, split). */
template <typename T, int K, int V> __global__ void __launch_bounds__(1024) rdx_rows_block(const ig_reduction_args a)
{
    typedef typename Elem<T>::acc A;
    __shared__ St<A> sm[32];
    const int64_t o = blockIdx.x, part = blockIdx.y;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int64_t yoff;
    const int64_t xb = keep_offsets(a, o, &yoff);
    const int64_t j0 = part * a.chunk, j1 = min(j0 + a.chunk, a.n_red_total);
    St<A> s = op_init<K, A>();
    row_range<T, K, V>(a, (const T *)a.x + xb, j0, j1, threadIdx.x, blockDim.x, s);
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) op_merge<K, A>(s, shfl_st(s, m, 32));
    if (lane == 0) sm[warp] = s;
    __syncthreads();
    if (warp) return;
    const int nw = blockDim.x / 32;
    s = lane < nw ? sm[lane] : op_init<K, A>();
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) op_merge<K, A>(s, shfl_st(s, m, 32));
    if (lane == 0) put<T, A>(a, o, part, yoff, s);
}

/* ---- columns: the innermost run is kept ------------------------------------------------------------- */

/* Block (tx x ty): threadIdx.x % tx picks a column vector of V elements, threadIdx.x / tx a reduced row
 * (step ty) within split blockIdx.y's rows; blockIdx.x = (outer kept index, column tile). */
template <typename T, int K, int V>
__global__ void __launch_bounds__(RDX_BLOCK) rdx_cols(const ig_reduction_args a, int tx, int ty)
{
    typedef typename Elem<T>::acc A;
    /* element-major ([V][RDX_BLOCK]): a warp's threads touch consecutive states of one element (a
     * thread-major layout put them V states apart: 16-way bank conflicts at V = 8) */
    __shared__ St<A> sm[V * RDX_BLOCK];
    const int cx = threadIdx.x % tx, ry = threadIdx.x / tx;
    const int64_t kv = a.inner / V, tiles = (kv + tx - 1) / tx;
    int64_t tile;
    const int64_t ai = ig_div_rem(blockIdx.x, tiles, tile), c = tile * tx + cx;
    const int64_t part = blockIdx.y;
    int64_t ybase;
    const int64_t xb = keep_offsets(a, ai, &ybase);
    const int64_t r0 = part * a.chunk, r1 = min(r0 + a.chunk, a.n_red_total);
    St<A> s[V];
#pragma unroll
    for (int e = 0; e < V; e++) s[e] = op_init<K, A>();
    if (c < kv) {
        const T *x = (const T *)a.x + xb + c * V;
        int64_t r = r0 + ry;
        if (a.n_red == 1) { /* one reduced dim of stride rs: RDX_UNROLL rows in flight, the last
                             * group's loads predicated (a tail loop of one load at a time, each behind a
                             * 64-bit division, left ResNet-50's global pooling at 1.4 TB/s) */
            const int64_t rs = a.red_xs[0];
            for (; r < r1; r += RDX_UNROLL * (int64_t)ty) {
                T v[RDX_UNROLL][V];
#pragma unroll
                for (int u = 0; u < RDX_UNROLL; u++)
                    if (r + u * (int64_t)ty < r1) load_vec<T, V>(x + (r + u * (int64_t)ty) * rs, v[u]);
#pragma unroll
                for (int u = 0; u < RDX_UNROLL; u++)
                    if (r + u * (int64_t)ty < r1)
#pragma unroll
                        for (int e = 0; e < V; e++) op_step<K, A>(s[e], Elem<T>::to(v[u][e]));
            }
        }
        for (; r < r1; r += ty) { /* several reduced dims */
            T v[V];
            load_vec<T, V>(x + red_offset(a, r), v);
#pragma unroll
            for (int e = 0; e < V; e++) op_step<K, A>(s[e], Elem<T>::to(v[e]));
        }
    }
#pragma unroll
    for (int e = 0; e < V; e++) sm[e * RDX_BLOCK + threadIdx.x] = s[e];
    __syncthreads();
    for (int h = ty / 2; h > 0; h >>= 1) {
        if (ry < h)
#pragma unroll
            for (int e = 0; e < V; e++) {
                St<A> t = sm[e * RDX_BLOCK + threadIdx.x];
                op_merge<K, A>(t, sm[e * RDX_BLOCK + threadIdx.x + h * tx]);
                sm[e * RDX_BLOCK + threadIdx.x] = t;
            }
        __syncthreads();
    }
    if (ry || c >= kv) return;
#pragma unroll
    for (int e = 0; e < V; e++) {
        const int64_t k = c * V + e;
        put<T, A>(a, ai * a.inner + k, part, ybase + k * a.inner_ys, sm[e * RDX_BLOCK + threadIdx.x]);
    }
}

/* ---- the finishing kernel: a warp per output merges its `split` partial states --------------------- */

template <typename T, int K> __global__ void __launch_bounds__(RDX_BLOCK) rdx_finish(const ig_reduction_args a)
{
    const int64_t o = (int64_t)blockIdx.x * (RDX_BLOCK / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (o >= a.n_out) return; /* whole warps */
    St<float> s = op_init<K, float>();
    const float2 *p = reinterpret_cast<const float2 *>(a.part) + o * a.split;
    for (int64_t q = lane; q < a.split; q += 32) {
        const float2 v = p[q];
        St<float> t;
        t.a = v.x;
        t.b = v.y;
        op_merge<K, float>(s, t);
    }
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) op_merge<K, float>(s, shfl_st(s, m, 32));
    if (lane == 0) reinterpret_cast<T *>(a.y)[out_offset(a, o)] = Elem<T>::from(finish_f(a, s));
}

/* ---- launch ------------------------------------------------------------------------------------------- */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int pow2_ceil(int64_t v)
{
    int p = 1;
    while (p < v && p < (1 << 30)) p <<= 1;
    return p;
}

/* Columns' block width: tx column vectors by ty = RDX_BLOCK / tx reduced rows. Wide (8 vectors: 128
 * bytes of a row) when the rows are many; when they are few, ty only as tall as gives each thread about
 * 2 * RDX_UNROLL rows, so the loads are in flight together and the shared-memory merge is short
 * (ResNet-50's global pooling, 49 rows of 2048 channels, merged 32 partial states per output in 5 rounds
 * after one or two loads per thread: 87 us at 605 GB/s at batch 256 on the H200), and no taller than
 * fills the GPU with RDX_TARGET threads: past that a taller block only adds threads, each with its
 * offsets to work out and its state to merge (the same pooling with 8 rows a column: 30 us, 670
 * instructions a warp). cols: the column vectors of all outputs (kv times the outer kept extent). */
static int col_tx(int64_t kv, int vec, int64_t n_red, int64_t cols)
{
    int64_t ty_want = pow2_ceil(ceil_div(n_red > 0 ? n_red : 1, 2 * RDX_UNROLL));
    const int64_t ty_fill = pow2_ceil(ceil_div(RDX_TARGET, cols > 0 ? cols : 1));
    if (ty_fill < ty_want) ty_want = ty_fill;
    int tx = vec > 1 ? 8 : 32;
    if (ty_want < RDX_BLOCK / tx) tx = RDX_BLOCK / (int)ty_want;
    return pow2_ceil(kv) < tx ? pow2_ceil(kv) : tx;
}

template <typename T, int K, int V> static void launch_main(const ig_reduction_args &a, cudaStream_t s)
{
    if (a.cols) {
        const int64_t outer = a.n_out / a.inner;
        const int tx = col_tx(a.inner / V, V, a.n_red_total, a.inner / V * outer), ty = RDX_BLOCK / tx;
        const int64_t tiles = (a.inner / V + tx - 1) / tx;
        rdx_cols<T, K, V><<<dim3((unsigned)(tiles * outer), (unsigned)a.split), RDX_BLOCK, 0, s>>>(a, tx, ty);
    } else if (a.lanes <= 32) {
        const int64_t per = RDX_BLOCK / a.lanes;
        rdx_rows_warp<T, K, V><<<(unsigned)((a.n_out + per - 1) / per), RDX_BLOCK, 0, s>>>(a);
    } else {
        rdx_rows_block<T, K, V><<<dim3((unsigned)a.n_out, (unsigned)a.split), a.lanes, 0, s>>>(a);
    }
}

template <typename T, int K> static void launch_kind(const ig_reduction_args &a, bool vec, cudaStream_t s)
{
    const int VV = 16 / (int)sizeof(T);
    if (vec)
        launch_main<T, K, VV>(a, s);
    else
        launch_main<T, K, 1>(a, s);
    if (a.split > 1) {
        const int64_t per = RDX_BLOCK / 32;
        rdx_finish<T, K><<<(unsigned)((a.n_out + per - 1) / per), RDX_BLOCK, 0, s>>>(a);
    }
}

static int op_of(int kind)
{
    switch (kind) {
    case IG_RDX_L1: return OP_ADD_ABS;
    case IG_RDX_L2:
    case IG_RDX_SUMSQ: return OP_ADD_SQ;
    case IG_RDX_MAX: return OP_MAX;
    case IG_RDX_MIN: return OP_MIN;
    case IG_RDX_PROD: return OP_MUL;
    case IG_RDX_LOGSUMEXP: return OP_LSE;
    default: return OP_ADD;
    }
}

template <typename T> static cudaError_t launch_float(const ig_reduction_args &a, bool vec, cudaStream_t s)
{
    switch (op_of(a.kind)) {
    case OP_ADD: launch_kind<T, OP_ADD>(a, vec, s); break;
    case OP_ADD_ABS: launch_kind<T, OP_ADD_ABS>(a, vec, s); break;
    case OP_ADD_SQ: launch_kind<T, OP_ADD_SQ>(a, vec, s); break;
    case OP_MAX: launch_kind<T, OP_MAX>(a, vec, s); break;
    case OP_MIN: launch_kind<T, OP_MIN>(a, vec, s); break;
    case OP_MUL: launch_kind<T, OP_MUL>(a, vec, s); break;
    default: launch_kind<T, OP_LSE>(a, vec, s); break;
    }
    return cudaGetLastError();
}

template <typename T> static cudaError_t launch_int(const ig_reduction_args &a, bool vec, cudaStream_t s)
{
    switch (op_of(a.kind)) {
    case OP_ADD: launch_kind<T, OP_ADD>(a, vec, s); break;
    case OP_MAX: launch_kind<T, OP_MAX>(a, vec, s); break;
    case OP_MIN: launch_kind<T, OP_MIN>(a, vec, s); break;
    case OP_MUL: launch_kind<T, OP_MUL>(a, vec, s); break;
    default: return cudaErrorNotSupported;
    }
    return cudaGetLastError();
}

static size_t dtype_bytes(int dt)
{
    switch (dt) {
    case INGOT_DTYPE_FLOAT16:
    case INGOT_DTYPE_BFLOAT16: return 2;
    case INGOT_DTYPE_FLOAT:
    case INGOT_DTYPE_INT32: return 4;
    case INGOT_DTYPE_INT64: return 8;
    default: return 0;
    }
}

extern "C" int ingot_cuda_reduction_supported(int dtype, int kind)
{
    const bool f = dtype == INGOT_DTYPE_FLOAT || dtype == INGOT_DTYPE_FLOAT16 || dtype == INGOT_DTYPE_BFLOAT16;
    const bool i = dtype == INGOT_DTYPE_INT32 || dtype == INGOT_DTYPE_INT64;
    if (f) return kind >= IG_RDX_SUM && kind <= IG_RDX_LOGSUMEXP;
    return i && (kind == IG_RDX_SUM || kind == IG_RDX_MAX || kind == IG_RDX_MIN || kind == IG_RDX_PROD);
}

extern "C" size_t ingot_cuda_reduction_plan(ig_reduction_args *a)
{
    const size_t es = dtype_bytes(a->x_dtype);
    const bool fl = a->x_dtype != INGOT_DTYPE_INT32 && a->x_dtype != INGOT_DTYPE_INT64;
    const int V = es ? (int)(16 / es) : 1;
    bool vec = a->inner % V == 0;
    for (int d = 0; d < a->n_keep; d++) vec = vec && a->keep_xs[d] % V == 0;
    for (int d = 0; d < a->n_red; d++) vec = vec && a->red_xs[d] % V == 0;
    a->vec = vec ? V : 1;
    a->split = 1;
    a->lanes = 1;
    a->chunk = a->n_red_total > 0 ? a->n_red_total : 1;
    if (a->n_out <= 0) return 0;
    if (!a->cols) {
        const int64_t nv = ceil_div(a->n_red_total, a->vec);
        if (nv <= 32 * RDX_UNROLL) {
            a->lanes = pow2_ceil(ceil_div(nv, RDX_UNROLL));
            return 0;
        }
        int lanes = pow2_ceil(ceil_div(nv, 8));
        a->lanes = lanes < 64 ? 64 : lanes > 1024 ? 1024 : lanes;
        if (!fl || a->n_out * a->lanes >= RDX_TARGET || nv / a->lanes <= 16) return 0;
        int64_t split = ceil_div(RDX_TARGET, a->n_out * a->lanes), most = ceil_div(nv, (int64_t)a->lanes * RDX_UNROLL);
        split = split < most ? split : most;
        split = split < 65535 ? split : 65535;
        a->chunk = ceil_div(ceil_div(a->n_red_total, split), a->vec) * a->vec;
        a->split = (int32_t)ceil_div(a->n_red_total, a->chunk);
    } else {
        const int64_t kv = a->inner / a->vec, outer = a->n_out / (a->inner ? a->inner : 1);
        const int tx = col_tx(kv, a->vec, a->n_red_total, kv * outer), ty = RDX_BLOCK / tx;
        const int64_t blocks = ceil_div(kv, tx) * outer;
        if (!fl || blocks * RDX_BLOCK >= RDX_TARGET || a->n_red_total / ty <= 8) return 0;
        int64_t split = ceil_div(RDX_TARGET, blocks * RDX_BLOCK),
                most = ceil_div(a->n_red_total, (int64_t)ty * RDX_UNROLL);
        split = split < most ? split : most;
        split = split < 65535 ? split : 65535;
        a->chunk = ceil_div(a->n_red_total, split);
        a->split = (int32_t)ceil_div(a->n_red_total, a->chunk);
    }
    return a->split > 1 ? (size_t)a->n_out * (size_t)a->split * sizeof(float2) : 0;
}

extern "C" cudaError_t ingot_cuda_reduction(const ig_reduction_args *a, cudaStream_t s)
{
    if (a->n_out <= 0) return cudaSuccess;
    if (a->x_dtype != a->y_dtype || !ingot_cuda_reduction_supported(a->x_dtype, a->kind) ||
        (a->split > 1 && !a->part) || (a->cols && (a->inner <= 0 || a->inner % a->vec)))
        return cudaErrorInvalidValue;
    /* the plan assumed a 16-byte aligned x; fall back to scalar loads (same split) when it is not */
    const bool vec = a->vec > 1 && (uintptr_t)a->x % 16 == 0;
    switch (a->x_dtype) {
    case INGOT_DTYPE_FLOAT: return launch_float<float>(*a, vec, s);
    case INGOT_DTYPE_FLOAT16: return launch_float<__half>(*a, vec, s);
    case INGOT_DTYPE_BFLOAT16: return launch_float<__nv_bfloat16>(*a, vec, s);
    case INGOT_DTYPE_INT32: return launch_int<int>(*a, vec, s);
    default: return launch_int<long long>(*a, vec, s);
    }
}
