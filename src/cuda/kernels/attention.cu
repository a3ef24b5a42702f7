/*
 * attention.cu -- fused scaled-dot-product attention for fp16, head dim 64, up to 256 keys:
 *   O[b,h,i,:] = sum_j softmax_j(scale * Q[b,h,i,:] . K[b,h,j,:] + mask[b,h,i,j]) V[b,h,j,:]
 * One block (4 warps) per 64 queries of one (batch, head): K and V of the head are staged in shared
 * memory once, each warp computes its 16 x S_kv scores with tensor cores (WMMA, fp32 accumulation),
 * takes the softmax in fp32 (fully masked rows give 0, as the exporters' IsNaN guard asks), multiplies
 * the probabilities (fp16) by V with tensor cores, and writes its 16 x 64 outputs through the output's
 * strides -- so the scores never reach device memory and Q, K, V and O are read and written in the
 * layouts the surrounding GEMMs produce ([B, S, H, D] views), with no transposing copies.
 */
#include "kernels.h"
#include "ingot.h"

#include <cuda_fp16.h>
#include <float.h>
#include <mma.h>
#include <stdint.h>

using namespace nvcuda;

#define ATT_D      64
#define ATT_QT     64 /* queries per block */
#define ATT_WARPS  (ATT_QT / 16)
#define ATT_MAX_KV 256
#define KV_LD      (ATT_D + 8) /* halves per staged row: padding against bank conflicts */

static __host__ __device__ int64_t pad16(int64_t x) { return (x + 15) / 16 * 16; }
static __host__ __device__ int64_t s_ld(int64_t kvp) { return (kvp > ATT_D ? kvp : ATT_D) + 4; }

static size_t att_smem(int64_t kvp)
{
    return (size_t)(2 * kvp * KV_LD + ATT_QT * KV_LD) * sizeof(__half) +
           (size_t)(ATT_WARPS * 16 * s_ld(kvp)) * sizeof(float) +
           (size_t)(ATT_WARPS * 16 * (kvp + 8)) * sizeof(__half) + ATT_WARPS * 16 * sizeof(float);
}

__device__ __forceinline__ float att_warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float att_warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void __launch_bounds__(ATT_WARPS * 32) attention_kernel(const ig_attention_args a, int kvp)
{
    extern __shared__ __align__(128) unsigned char smem[];
    const int lds = (int)s_ld(kvp), ldp = kvp + 8;
    __half *Ks = (__half *)smem;
    __half *Vs = Ks + kvp * KV_LD;
    __half *Qs = Vs + kvp * KV_LD;
    float *Ss = (float *)(Qs + ATT_QT * KV_LD);
    __half *Ps = (__half *)(Ss + ATT_WARPS * 16 * lds);
    float *Inv = (float *)(Ps + ATT_WARPS * 16 * ldp);

    const int64_t b = blockIdx.z, h = blockIdx.y;
    const int q0 = blockIdx.x * ATT_QT;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const __half *__restrict__ q = (const __half *)a.q + b * a.qs[0] + h * a.qs[1];
    const __half *__restrict__ k = (const __half *)a.k + b * a.ks[0] + h * a.ks[1];
    const __half *__restrict__ v = (const __half *)a.v + b * a.vs[0] + h * a.vs[1];

    /* stage K, V (rows past S_kv zeroed) and this block's queries, 16 bytes at a time; loads are issued
     * in batches of 4 before their stores, so each thread keeps several in flight */
    const uint4 zero = make_uint4(0, 0, 0, 0);
    const int nkv = kvp * (ATT_D / 8);
    for (int i0 = tid; i0 < nkv; i0 += 4 * ATT_WARPS * 32) {
        uint4 kv[4], vv[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int i = i0 + u * ATT_WARPS * 32, r = i / (ATT_D / 8), c = i % (ATT_D / 8);
            kv[u] = vv[u] = zero;
            if (i < nkv && r < a.skv) {
                kv[u] = __ldg((const uint4 *)(k + r * a.ks[2] + c * 8));
                vv[u] = __ldg((const uint4 *)(v + r * a.vs[2] + c * 8));
            }
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int i = i0 + u * ATT_WARPS * 32, r = i / (ATT_D / 8), c = i % (ATT_D / 8);
            if (i < nkv) {
                *(uint4 *)(Ks + r * KV_LD + c * 8) = kv[u];
                *(uint4 *)(Vs + r * KV_LD + c * 8) = vv[u];
            }
        }
    }
    {
        uint4 qv[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int i = tid + u * ATT_WARPS * 32, r = i / (ATT_D / 8), c = i % (ATT_D / 8);
            qv[u] = zero;
            if (q0 + r < a.sq) qv[u] = __ldg((const uint4 *)(q + (int64_t)(q0 + r) * a.qs[2] + c * 8));
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int i = tid + u * ATT_WARPS * 32, r = i / (ATT_D / 8), c = i % (ATT_D / 8);
            *(uint4 *)(Qs + r * KV_LD + c * 8) = qv[u];
        }
    }
    __syncthreads();

    float *S = Ss + warp * 16 * lds;
    __half *P = Ps + warp * 16 * ldp;
    /* scores: S = Q_w K^T (16 x kvp) */
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fq[ATT_D / 16];
#pragma unroll
    for (int kk = 0; kk < ATT_D / 16; kk++) wmma::load_matrix_sync(fq[kk], Qs + warp * 16 * KV_LD + kk * 16, KV_LD);
    for (int j = 0; j < kvp / 16; j++) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.f);
#pragma unroll
        for (int kk = 0; kk < ATT_D / 16; kk++) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fk;
            wmma::load_matrix_sync(fk, Ks + j * 16 * KV_LD + kk * 16, KV_LD);
            wmma::mma_sync(acc, fq[kk], fk, acc);
        }
        wmma::store_matrix_sync(S + j * 16, acc, lds, wmma::mem_row_major);
    }
    __syncwarp();

    /* softmax per row, in fp32; P holds exp(x - max) in fp16, Inv the row's 1 / sum. A lane holds its
     * (at most 8) columns in registers, so its loads of S and of the mask are issued together. */
    for (int r = 0; r < 16; r++) {
        const int64_t qi = q0 + warp * 16 + r;
        const bool live = qi < a.sq;
        const __half *mrow = a.mask && live ? (const __half *)a.mask + b * a.ms[0] + h * a.ms[1] + qi * a.ms[2] : NULL;
        const float *mrowf = a.mask && live ? (const float *)a.mask + b * a.ms[0] + h * a.ms[1] + qi * a.ms[2] : NULL;
        float xv[ATT_MAX_KV / 32];
        float mx = -INFINITY;
#pragma unroll
        for (int u = 0; u < ATT_MAX_KV / 32; u++) {
            const int c = lane + 32 * u;
            float x = -INFINITY;
            if (c < a.skv) {
                x = S[r * lds + c] * a.scale;
                if (a.mask && live)
                    x += a.mask_dtype == INGOT_DTYPE_FLOAT ? mrowf[c * a.ms[3]] : __half2float(mrow[c * a.ms[3]]);
            }
            xv[u] = x;
            mx = fmaxf(mx, x);
        }
        mx = att_warp_max(mx);
        float sum = 0.f;
#pragma unroll
        for (int u = 0; u < ATT_MAX_KV / 32; u++) {
            const int c = lane + 32 * u;
            if (c >= kvp) continue;
            float e = (c < a.skv && mx != -INFINITY) ? expf(xv[u] - mx) : 0.f;
            __half he = __float2half_rn(e);
            sum += __half2float(he);
            P[r * ldp + c] = he;
        }
        sum = att_warp_sum(sum);
        if (lane == 0) Inv[warp * 16 + r] = sum > 0.f ? 1.f / sum : 0.f;
    }
    __syncwarp();

    /* O_w = P V (16 x 64), staged in S */
#pragma unroll
    for (int n = 0; n < ATT_D / 16; n++) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.f);
        for (int j = 0; j < kvp / 16; j++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fp;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fv;
            wmma::load_matrix_sync(fp, P + j * 16, ldp);
            wmma::load_matrix_sync(fv, Vs + j * 16 * KV_LD + n * 16, KV_LD);
            wmma::mma_sync(acc, fp, fv, acc);
        }
        wmma::store_matrix_sync(S + n * 16, acc, lds, wmma::mem_row_major);
    }
    __syncwarp();
    __half *o = (__half *)a.o + b * a.os[0] + h * a.os[1];
    for (int i = lane; i < 16 * (ATT_D / 2); i += 32) {
        const int r = i / (ATT_D / 2), c = (i % (ATT_D / 2)) * 2;
        const int64_t qi = q0 + warp * 16 + r;
        if (qi >= a.sq) continue;
        const float inv = Inv[warp * 16 + r];
        __half2 hv = __floats2half2_rn(S[r * lds + c] * inv, S[r * lds + c + 1] * inv);
        if (a.os[3] == 1) {
            *(__half2 *)(o + qi * a.os[2] + c) = hv;
        } else {
            o[qi * a.os[2] + c * a.os[3]] = __low2half(hv);
            o[qi * a.os[2] + (c + 1) * a.os[3]] = __high2half(hv);
        }
    }
}

extern "C" int ingot_cuda_attention_supported(const ig_attention_args *a)
{
    if (a->dtype != INGOT_DTYPE_FLOAT16 || a->d != ATT_D || a->skv < 1 || a->skv > ATT_MAX_KV || a->sq < 1) return 0;
    if (a->b > 65535 || a->h > 65535) return 0;
    if (a->qs[3] != 1 || a->ks[3] != 1 || a->vs[3] != 1) return 0;
    for (int k = 0; k < 3; k++)
        if (a->qs[k] % 8 || a->ks[k] % 8 || a->vs[k] % 8) return 0;
    if (a->os[3] == 1 && a->os[2] % 2) return 0;
    if (a->mask && a->mask_dtype != INGOT_DTYPE_FLOAT16 && a->mask_dtype != INGOT_DTYPE_FLOAT) return 0;
    return 1;
}

extern "C" cudaError_t ingot_cuda_attention(const ig_attention_args *a, cudaStream_t s)
{
    if (a->b <= 0 || a->h <= 0 || a->sq <= 0) return cudaSuccess;
    if (((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v) % 16 || (a->os[3] == 1 && (uintptr_t)a->o % 4))
        return cudaErrorMisalignedAddress;
    const int64_t kvp = pad16(a->skv);
    const size_t smem = att_smem(kvp);
    /* more than 48 KB of dynamic shared memory needs an opt-in, once; the first run of an instance is
     * never captured, so this happens outside any graph capture */
    static size_t opted = 0;
    if (smem > opted) {
        cudaError_t e = cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)att_smem(ATT_MAX_KV));
        if (e != cudaSuccess) return e;
        opted = att_smem(ATT_MAX_KV);
    }
    dim3 grid((unsigned)((a->sq + ATT_QT - 1) / ATT_QT), (unsigned)a->h, (unsigned)a->b);
    attention_kernel<<<grid, ATT_WARPS * 32, smem, s>>>(*a, (int)kvp);
    return cudaGetLastError();
}
