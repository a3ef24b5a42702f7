/*
 * resize.cu -- Resize / Upsample: nearest, linear and cubic over one or two axes of a tensor of any
 * layout (NCHW, NHWC), with the coordinate modes and nearest roundings of src/ops/resize.c, which it
 * matches exactly: the per-axis taps (input index and weight per output coordinate) are computed in
 * double by the same formulas, by a small first kernel into a table in the arena; the second kernel
 * reads them.
 *
 * The second kernel walks the output as rows of its innermost (stride-1) dim. Per row, the taps of the
 * outer resized axes are combined once (up to 4 x 4 offsets and weights); each thread then produces
 * elements of the row: when the innermost dim is resized (NCHW), with that axis's taps from the table;
 * else (NHWC, channels innermost) as 16-byte vectors of channels. Nearest copies element bytes (exact for
 * every dtype); linear and cubic accumulate in fp32 and round once at the store.
 */
#include "div_rem.cuh"
#include "kernels.h"
#include "ingot.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#define RS_BLOCK 256

struct Tap {
    int32_t idx;
    float w;
};

/* ---- the tap table: one thread per (axis, output coordinate); resize.c's build_axis ------------------ */

__global__ void resize_taps(const ig_resize_args a)
{
    int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int ax = 0;
    if (o >= a.out[0]) {
        o -= a.out[0];
        ax = 1;
        if (ax >= a.n_axes || o >= a.out[1]) return;
    }
    const int k = a.taps;
    Tap *t = reinterpret_cast<Tap *>(a.tab) + a.tab_off[ax] + o * k;
    const double scale = a.scale[ax], y = (double)o, out_w = scale * (double)a.in[ax];
    const int64_t in = a.in[ax];
    double x;
    switch (a.ct) {
    case IG_RS_ALIGN_CORNERS: x = out_w == 1 ? 0.0 : y * (double)(in - 1) / (out_w - 1); break;
    case IG_RS_ASYMMETRIC: x = y / scale; break;
    case IG_RS_TF_HALF_PIXEL_NN: x = (y + 0.5) / scale; break;
    case IG_RS_PYTORCH_HALF_PIXEL: x = out_w == 1 ? -0.5 : (y + 0.5) / scale - 0.5; break;
    case IG_RS_HALF_PIXEL_SYM: {
        const double adj = (double)a.out[ax] / out_w, center = (double)in / 2;
        x = center * (1 - adj) + (y + 0.5) / scale - 0.5;
        break;
    }
    default: x = (y + 0.5) / scale - 0.5; break;
    }
    if (a.mode == IG_RS_NEAREST) {
        const double f = floor(x), frac = x - f;
        int64_t i;
        if (a.nearest == IG_RS_NM_SIMPLE)
            i = scale < 1 ? (int64_t)ceil(x) : (int64_t)f;
        else if (frac == 0)
            i = (int64_t)f;
        else if (a.nearest == IG_RS_NM_FLOOR)
            i = (int64_t)f;
        else if (a.nearest == IG_RS_NM_CEIL)
            i = (int64_t)f + 1;
        else if (a.nearest == IG_RS_NM_ROUND_PREFER_FLOOR)
            i = (int64_t)f + (frac > 0.5);
        else
            i = (int64_t)f + (frac >= 0.5);
        i = i < 0 ? 0 : i >= in ? in - 1 : i;
        t[0].idx = (int32_t)i;
        t[0].w = 1.f;
        return;
    }
    /* the window: k taps around x, the left neighbour preferred (ratio in (0, 1]) */
    const double fb = floor(x);
    int64_t base = (int64_t)fb;
    if (x == fb) base -= 1;
    const double ratio = x - (double)base;
    const int64_t first = base - k / 2 + 1;
    double w[4];
    if (a.mode == IG_RS_LINEAR) {
        w[0] = 1 - ratio;
        w[1] = ratio;
    } else {
        const double c = a.cubic_a, r1 = ratio + 1, q = 1 - ratio, q1 = q + 1;
        w[0] = ((c * r1 - 5 * c) * r1 + 8 * c) * r1 - 4 * c;
        w[1] = ((c + 2) * ratio - (c + 3)) * ratio * ratio + 1;
        w[2] = ((c + 2) * q - (c + 3)) * q * q + 1;
        w[3] = ((c * q1 - 5 * c) * q1 + 8 * c) * q1 - 4 * c;
    }
    if (a.exclude_outside) {
        double sum = 0;
        for (int j = 0; j < k; j++) {
            const int64_t m = first + j;
            if (m < 0 || m >= in) w[j] = 0;
            sum += w[j];
        }
        if (sum != 0)
            for (int j = 0; j < k; j++) w[j] /= sum;
    }
    for (int j = 0; j < k; j++) {
        int64_t m = first + j;
        m = m < 0 ? 0 : m >= in ? in - 1 : m;
        t[j].idx = (int32_t)m;
        t[j].w = (float)w[j];
    }
}

/* ---- the resampling kernel ------------------------------------------------------------------------- */

template <typename T> struct Cv;
template <> struct Cv<float> {
    static __device__ __forceinline__ float to(float v) { return v; }
    static __device__ __forceinline__ float from(float v) { return v; }
};
template <> struct Cv<__half> {
    static __device__ __forceinline__ float to(__half v) { return __half2float(v); }
    static __device__ __forceinline__ __half from(float v) { return __float2half_rn(v); }
};
template <> struct Cv<__nv_bfloat16> {
    static __device__ __forceinline__ float to(__nv_bfloat16 v) { return __bfloat162float(v); }
    static __device__ __forceinline__ __nv_bfloat16 from(float v) { return __float2bfloat16_rn(v); }
};

template <typename T, int V> union Pack {
    T t[V];
    typename std::conditional<sizeof(T) * V == 16, uint4, T>::type u;
};

/* Row r of the output (all dims but the innermost): y's and x's offsets, and the combined taps of the
 * outer resized axes (NR of them, K taps each: K^NR combinations). A thread does this once a row, and
 * with channels innermost a row can be one 16-byte vector a thread (DeepLabV3's pooling branch broadcast
 * to [16, 64, 128, 256]: 112 us for 67 MB on the H200), so its divisions are 32-bit where they fit
 * (ig_div_rem). */
template <int K, int NR> struct RowTaps {
    int64_t off[NR == 2 ? K * K : NR == 1 ? K : 1];
    float w[NR == 2 ? K * K : NR == 1 ? K : 1];
};

template <int K, int NR>
__device__ __forceinline__ int64_t row_setup(const ig_resize_args &a, int64_t r, int64_t *xoff, RowTaps<K, NR> &rt)
{
    const Tap *tab = reinterpret_cast<const Tap *>(a.tab);
    int64_t yo = 0, xo = 0;
    int64_t ti[2] = {0, 0};
#pragma unroll
    for (int d = IG_RS_MAX_DIMS - 2; d >= 0; d--) {
        if (d >= a.rank - 1) continue;
        int64_t c;
        r = ig_div_rem(r, a.dims[d], c);
        yo += c * a.ys[d];
        if (a.axis[d] < 0)
            xo += c * a.xs[d];
        else
            ti[a.axis[d]] = c; /* a resized axis: its coordinate picks taps */
    }
    if (NR == 0) {
        rt.off[0] = 0;
        rt.w[0] = 1.f;
    } else if (NR == 1) {
        const int ax = a.row_axis[0];
        const Tap *t = tab + a.tab_off[ax] + ti[ax] * K;
#pragma unroll
        for (int i = 0; i < K; i++) {
            rt.off[i] = (int64_t)t[i].idx * a.axis_xs[ax];
            rt.w[i] = t[i].w;
        }
    } else {
        const Tap *t0 = tab + a.tab_off[0] + ti[0] * K, *t1 = tab + a.tab_off[1] + ti[1] * K;
#pragma unroll
        for (int i = 0; i < K; i++)
#pragma unroll
            for (int j = 0; j < K; j++) {
                rt.off[i * K + j] = (int64_t)t0[i].idx * a.axis_xs[0] + (int64_t)t1[j].idx * a.axis_xs[1];
                rt.w[i * K + j] = t0[i].w * t1[j].w;
            }
    }
    *xoff = xo;
    return yo;
}

/* Innermost dim resized (NCHW): one element per (row, j); T the element (float math) or, for nearest
 * (K == 1), a raw integer type of the element's size. */
template <typename T, int K, int NR, bool RAW>
__global__ void __launch_bounds__(RS_BLOCK) resize_inner(const ig_resize_args a)
{
    const int tx = a.tx, ty = RS_BLOCK / a.tx;
    const int64_t inner = a.dims[a.rank - 1];
    const int64_t j0 = ((int64_t)blockIdx.x * a.per_thread) * tx + threadIdx.x % tx;
    const Tap *tab = reinterpret_cast<const Tap *>(a.tab) + a.tab_off[a.inner_axis];
    const int64_t ixs = a.axis_xs[a.inner_axis];
    const T *x = reinterpret_cast<const T *>(a.x);
    T *y = reinterpret_cast<T *>(a.y);
    for (int64_t r = (int64_t)blockIdx.y * ty + threadIdx.x / tx; r < a.rows; r += (int64_t)gridDim.y * ty) {
        RowTaps<K, NR> rt;
        int64_t xo;
        const int64_t yo = row_setup<K, NR>(a, r, &xo, rt);
        for (int q = 0; q < a.per_thread; q++) {
            const int64_t j = j0 + (int64_t)q * tx;
            if (j >= inner) break;
            const Tap *t = tab + j * K;
            if constexpr (RAW) { /* nearest: every weight is 1 */
                y[yo + j * a.inner_ys] = x[xo + rt.off[0] + (int64_t)t[0].idx * ixs];
            } else {
                float acc = 0.f;
#pragma unroll
                for (int i = 0; i < (NR == 2 ? K * K : NR == 1 ? K : 1); i++) {
                    float s = 0.f;
#pragma unroll
                    for (int k = 0; k < K; k++) s += t[k].w * Cv<T>::to(x[xo + rt.off[i] + (int64_t)t[k].idx * ixs]);
                    acc += rt.w[i] * s;
                }
                y[yo + j * a.inner_ys] = Cv<T>::from(acc);
            }
        }
    }
}

/* Innermost dim kept (NHWC: channels): V elements per thread, 16-byte accesses when V > 1. */
template <typename T, int K, int NR, bool RAW, int V>
__global__ void __launch_bounds__(RS_BLOCK) resize_outer(const ig_resize_args a)
{
    const int tx = a.tx, ty = RS_BLOCK / a.tx;
    const int64_t inner = a.dims[a.rank - 1] / V, ixs = a.xs[a.rank - 1];
    const int64_t j0 = ((int64_t)blockIdx.x * a.per_thread) * tx + threadIdx.x % tx;
    const T *x = reinterpret_cast<const T *>(a.x);
    T *y = reinterpret_cast<T *>(a.y);
    for (int64_t r = (int64_t)blockIdx.y * ty + threadIdx.x / tx; r < a.rows; r += (int64_t)gridDim.y * ty) {
        RowTaps<K, NR> rt;
        int64_t xo;
        const int64_t yo = row_setup<K, NR>(a, r, &xo, rt);
        for (int q = 0; q < a.per_thread; q++) {
            const int64_t j = j0 + (int64_t)q * tx;
            if (j >= inner) break;
            Pack<T, V> out;
            if constexpr (RAW) {
                out = *reinterpret_cast<const Pack<T, V> *>(x + xo + rt.off[0] + j * V * ixs);
            } else {
                float acc[V];
#pragma unroll
                for (int e = 0; e < V; e++) acc[e] = 0.f;
#pragma unroll
                for (int i = 0; i < (NR == 2 ? K * K : NR == 1 ? K : 1); i++) {
                    const Pack<T, V> in = *reinterpret_cast<const Pack<T, V> *>(x + xo + rt.off[i] + j * V * ixs);
#pragma unroll
                    for (int e = 0; e < V; e++) acc[e] += rt.w[i] * Cv<T>::to(in.t[e]);
                }
#pragma unroll
                for (int e = 0; e < V; e++) out.t[e] = Cv<T>::from(acc[e]);
            }
            *reinterpret_cast<Pack<T, V> *>(y + yo + j * V * a.inner_ys) = out;
        }
    }
}

/* ---- launch ------------------------------------------------------------------------------------------- */

template <typename T, int K, int NR, bool RAW>
static void launch_shape(const ig_resize_args &a, cudaStream_t s, bool vec)
{
    dim3 grid((unsigned)a.grid_x, (unsigned)a.grid_y);
    if (a.inner_axis >= 0)
        resize_inner<T, K, NR, RAW><<<grid, RS_BLOCK, 0, s>>>(a);
    else if (vec)
        resize_outer<T, K, NR, RAW, 16 / sizeof(T)><<<grid, RS_BLOCK, 0, s>>>(a);
    else
        resize_outer<T, K, NR, RAW, 1><<<grid, RS_BLOCK, 0, s>>>(a);
}

template <typename T, int K, bool RAW> static void launch_nr(const ig_resize_args &a, cudaStream_t s, bool vec)
{
    switch (a.n_row_axes) {
    case 0: launch_shape<T, K, 0, RAW>(a, s, vec); break;
    case 1: launch_shape<T, K, 1, RAW>(a, s, vec); break;
    default: launch_shape<T, K, 2, RAW>(a, s, vec); break;
    }
}

template <typename T> static void launch_interp(const ig_resize_args &a, cudaStream_t s, bool vec)
{
    if (a.taps == 2)
        launch_nr<T, 2, false>(a, s, vec);
    else
        launch_nr<T, 4, false>(a, s, vec);
}

extern "C" size_t ingot_cuda_resize_plan(ig_resize_args *a)
{
    a->taps = a->mode == IG_RS_NEAREST ? 1 : a->mode == IG_RS_LINEAR ? 2 : 4;
    a->tab_off[0] = 0;
    a->tab_off[1] = a->out[0] * a->taps;
    a->inner_axis = a->axis[a->rank - 1];
    a->n_row_axes = a->n_axes - (a->inner_axis >= 0);
    for (int i = 0, k = 0; i < a->n_axes; i++)
        if (i != a->inner_axis) a->row_axis[k++] = i;
    int64_t inner = a->dims[a->rank - 1];
    a->inner_ys = a->ys[a->rank - 1];
    a->rows = 1;
    for (int d = 0; d < a->rank - 1; d++) a->rows *= a->dims[d];
    /* channels innermost in both x and y, a multiple of 16 bytes: vectors */
    const int V = 16 / a->esize;
    bool vec = a->inner_axis < 0 && a->esize <= 8 && inner % V == 0 && a->inner_ys == 1 && a->xs[a->rank - 1] == 1;
    for (int d = 0; vec && d < a->rank - 1; d++) vec = a->ys[d] % V == 0 && (a->axis[d] >= 0 || a->xs[d] % V == 0);
    for (int i = 0; vec && i < a->n_axes; i++) vec = a->axis_xs[i] % V == 0;
    a->vec = vec ? V : 1;
    const int64_t iv = inner / a->vec;
    int tx = 1;
    while (tx < iv && tx < 128) tx <<= 1;
    a->tx = tx;
    /* NCHW: amortise the row's setup (a segmentation head upsampled to 1024 columns: 8 a thread) */
    a->per_thread = a->inner_axis >= 0 ? (iv >= 8 * tx ? 8 : iv >= 4 * tx ? 4 : 1) : 1;
    a->grid_x = (iv + (int64_t)tx * a->per_thread - 1) / ((int64_t)tx * a->per_thread);
    const int64_t ty = RS_BLOCK / tx, gy = (a->rows + ty - 1) / ty;
    a->grid_y = gy < 65535 ? gy : 65535;
    return (size_t)(a->tab_off[1] + (a->n_axes > 1 ? a->out[1] * a->taps : 0)) * sizeof(Tap);
}

extern "C" cudaError_t ingot_cuda_resize(const ig_resize_args *a, cudaStream_t s)
{
    if (a->rows <= 0 || a->dims[a->rank - 1] <= 0) return cudaSuccess;
    if (a->n_axes < 1 || a->n_axes > 2 || !a->tab) return cudaErrorInvalidValue;
    const int64_t nt = a->out[0] + (a->n_axes > 1 ? a->out[1] : 0);
    resize_taps<<<(unsigned)((nt + RS_BLOCK - 1) / RS_BLOCK), RS_BLOCK, 0, s>>>(*a);
    const bool vec = a->vec > 1 && ((uintptr_t)a->x | (uintptr_t)a->y) % 16 == 0;
    if (a->mode == IG_RS_NEAREST) {
        switch (a->esize) {
        case 1: launch_nr<uint8_t, 1, true>(*a, s, vec); break;
        case 2: launch_nr<uint16_t, 1, true>(*a, s, vec); break;
        case 4: launch_nr<uint32_t, 1, true>(*a, s, vec); break;
        case 8: launch_nr<unsigned long long, 1, true>(*a, s, vec); break;
        default: return cudaErrorInvalidValue;
        }
    } else {
        switch (a->dtype) {
        case INGOT_DTYPE_FLOAT: launch_interp<float>(*a, s, vec); break;
        case INGOT_DTYPE_FLOAT16: launch_interp<__half>(*a, s, vec); break;
        case INGOT_DTYPE_BFLOAT16: launch_interp<__nv_bfloat16>(*a, s, vec); break;
        default: return cudaErrorInvalidValue;
        }
    }
    return cudaGetLastError();
}
