/*
 * movement.cu -- kernels that move data by index rather than elementwise: Gather and 2-D pooling.
 * (Transposes, slices, concatenation and broadcasts are strided views copied by elementwise.cu.)
 */
#include "kernels.h"
#include "ingot.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <float.h>
#include <stdint.h>

#define MOVE_BLOCK 256

/* ---- Gather ------------------------------------------------------------------------------------ */

/* One thread per CS-byte chunk of the output; a row of `inner` elements is copied in chunks, so for
 * embeddings (inner = 768 fp16) each thread moves 16 bytes. */
template <typename C>
__global__ void gather_kernel(const ig_gather_args a, int64_t chunks_per_row, int64_t n_chunks)
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

/* One thread per output element. Threads are numbered so that neighbours write neighbouring bytes:
 * channel fastest when y is channels-last (NHWC), width fastest otherwise. */
__global__ void pool_kernel(const ig_pool_args a, int channels_last)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t total = a.n * a.c * a.oh * a.ow;
    if (t >= total) return;
    int64_t n, c, oh, ow, r = t;
    if (channels_last) {
        c = r % a.c; r /= a.c;
        ow = r % a.ow; r /= a.ow;
        oh = r % a.oh; n = r / a.oh;
    } else {
        ow = r % a.ow; r /= a.ow;
        oh = r % a.oh; r /= a.oh;
        c = r % a.c; n = r / a.c;
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
                if (a.is_max) acc = (v > acc || v != v) ? v : acc;
                else acc += v;
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
    pool_kernel<<<(unsigned)((total + MOVE_BLOCK - 1) / MOVE_BLOCK), MOVE_BLOCK, 0, s>>>(*a, a->ys[1] == 1);
    return cudaGetLastError();
}
