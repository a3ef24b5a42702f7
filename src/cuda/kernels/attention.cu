/*
 * attention.cu -- fused scaled-dot-product attention for fp16, head dim 64, any number of keys:
 *   O[b,h,i,:] = sum_j softmax_j(scale * Q[b,h,i,:] . K[b,h,j,:] + mask[b,h,i,j]) V[b,h,j,:]
 *
 * The flash-attention layout: each warp owns 16 queries; their scores for a tile of 64 keys live in
 * registers as mma.sync accumulators (fp32), the softmax is taken online (running max and sum per row,
 * earlier partial outputs rescaled), and the probabilities go back into the tensor cores as fp16 A
 * fragments for P V without touching memory. K and V tiles stream through shared memory with cp.async,
 * double-buffered, so the next tile loads while this one is multiplied. Q, K, V, the mask and O are
 * read and written through their strides, in the layouts the surrounding GEMMs produce: the scores never
 * reach device memory and no transposing copy is needed.
 *
 * Fragment layouts (PTX ISA, mma.m16n8k16 with .f16 inputs): lane = 4 * g + t; an A fragment holds
 * rows g and g + 8, columns 2t, 2t + 1 (and + 8); a B fragment holds rows (k) 2t, 2t + 1 (and + 8) of
 * column (n) g; an accumulator holds rows g and g + 8, columns 2t, 2t + 1. A score accumulator tile
 * therefore has exactly the layout of the A fragment that P V needs.
 */
#include "kernels.h"
#include "ingot.h"

#include <cuda_fp16.h>
#include <float.h>
#include <stdint.h>
#include <stdlib.h>

#define ATT_D  64 /* head dimension */
#define ATT_BN 64 /* keys per tile */
#define ATT_LD 72 /* halves per staged row: 144 bytes, so 8 rows of an ldmatrix hit 8 distinct bank groups */

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool pred)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(pred ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

__device__ __forceinline__ void ldsm_x4(uint32_t r[4], const __half *p)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t r[4], const __half *p)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}

/* d += a (16x16, row) * b (16x8, col), fp16 inputs, fp32 accumulation */
__device__ __forceinline__ void mma16816(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
/* 2^x with the hardware approximation (flushes denormals: probabilities below 2^-126 become 0) */
__device__ __forceinline__ float ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi)
{
    __half2 h = __floats2half2_rn(lo, hi); /* lo: the lower column, in the low 16 bits */
    return *(uint32_t *)&h;
}

/* two consecutive mask values (fp32 or fp16) as floats */
__device__ __forceinline__ float2 mask_pair(int dtype, const unsigned char *p)
{
    return dtype == INGOT_DTYPE_FLOAT ? *(const float2 *)p : __half22float2(*(const __half2 *)p);
}
__device__ __forceinline__ float mask_one(int dtype, const unsigned char *p)
{
    return dtype == INGOT_DTYPE_FLOAT ? *(const float *)p : __half2float(*(const __half *)p);
}

/* How the mask reaches the kernel. Staged masks are copied with cp.async into shared memory with K and
 * V, as rows padded by 16 bytes so the rows one load instruction touches fall in distinct banks. */
enum {
    ATT_MASK_GLOBAL = 0, /* read per element from global memory (any strides) */
    ATT_MASK_ROW = 1,    /* one row of keys for every query (stride 0 over queries) */
    ATT_MASK_ROWS = 2,   /* a row of keys per query (keys contiguous) */
    ATT_MASK_COLS = 3,   /* a row of queries per key (queries contiguous: the transposed layout) */
};
#define ATT_MLD(esz) (64 * (esz) + 16) /* bytes per staged row: 64 keys or up to 64 queries */

/* WARPS warps, 16 queries each, of one (batch, head) per block. Shared memory (dynamic): K and V tiles,
 * two stages each, then two stages of the staged mask (see the ATT_MASK_ modes). */
template <int WARPS>
__global__ void __launch_bounds__(WARPS * 32) flash_attention(const ig_attention_args a, int mask_mode)
{
    extern __shared__ __align__(128) unsigned char smem[];
    __half(*Ks)[ATT_BN * ATT_LD] = (__half(*)[ATT_BN * ATT_LD]) smem;
    __half(*Vs)[ATT_BN * ATT_LD] = Ks + 2;
    unsigned char *Ms = (unsigned char *)(Ks + 4);

    const int64_t b = blockIdx.z, h = blockIdx.y;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const __half *__restrict__ q = (const __half *)a.q + b * a.qs[0] + h * a.qs[1];
    const __half *__restrict__ k = (const __half *)a.k + b * a.ks[0] + h * a.ks[1];
    const __half *__restrict__ v = (const __half *)a.v + b * a.vs[0] + h * a.vs[1];
    const int skv = (int)a.skv, n_tiles = (skv + ATT_BN - 1) / ATT_BN;
    const int64_t qb = (int64_t)blockIdx.x * (WARPS * 16); /* this block's first query */
    const int mdt = a.mask_dtype, mesz = mdt == INGOT_DTYPE_FLOAT ? 4 : 2, mld = ATT_MLD(mesz);
    const unsigned char *mbase = a.mask ? (const unsigned char *)a.mask + (b * a.ms[0] + h * a.ms[1]) * mesz : NULL;

    /* K/V tile j -> stage st: 64 rows of 8 16-byte chunks each; rows past S_kv are zero-filled */
    auto load_tile = [&](int j, int st) {
        for (int i = tid; i < ATT_BN * (ATT_D / 8); i += WARPS * 32) {
            const int r = i / (ATT_D / 8), c = (i % (ATT_D / 8)) * 8;
            const int key = j * ATT_BN + r;
            const bool in = key < skv;
            const int64_t kr = in ? key : 0;
            cp_async16(&Ks[st][r * ATT_LD + c], k + kr * a.ks[2] + c, in);
            cp_async16(&Vs[st][r * ATT_LD + c], v + kr * a.vs[2] + c, in);
        }
        if (mask_mode == ATT_MASK_ROW || mask_mode == ATT_MASK_ROWS) {
            const int rows = mask_mode == ATT_MASK_ROW ? 1 : WARPS * 16, cpr = ATT_BN * mesz / 16;
            unsigned char *dst = Ms + st * ATT_BN * mld;
            for (int i = tid; i < rows * cpr; i += WARPS * 32) {
                const int r = i / cpr, c = (i % cpr) * 16; /* r: query, c: byte of the row of keys */
                const int64_t qi = qb + r;
                const bool in = j * ATT_BN + c / mesz < skv && (rows == 1 || qi < a.sq);
                const unsigned char *src = in ? mbase + (qi * a.ms[2] + (int64_t)j * ATT_BN) * mesz + c : mbase;
                cp_async16(dst + r * mld + c, src, in);
            }
        } else if (mask_mode == ATT_MASK_COLS) {
            const int cpr = WARPS * 16 * mesz / 16;
            unsigned char *dst = Ms + st * ATT_BN * mld;
            for (int i = tid; i < ATT_BN * cpr; i += WARPS * 32) {
                const int r = i / cpr, c = (i % cpr) * 16; /* r: key, c: byte of the row of queries */
                const int64_t key = (int64_t)j * ATT_BN + r;
                const bool in = key < skv && qb + c / mesz < a.sq;
                const unsigned char *src = in ? mbase + (key * a.ms[3] + qb) * mesz + c : mbase;
                cp_async16(dst + r * mld + c, src, in);
            }
        }
        cp_async_commit();
    };
    load_tile(0, 0);

    /* this warp's 16 queries as A fragments, straight from global memory (rows past S_q are zero) */
    const int64_t q0 = qb + warp * 16;
    const int64_t qr0 = q0 + g, qr1 = q0 + g + 8;
    const bool live0 = qr0 < a.sq, live1 = qr1 < a.sq;
    uint32_t qa[ATT_D / 16][4];
#pragma unroll
    for (int kk = 0; kk < ATT_D / 16; kk++) {
        const int c = kk * 16 + 2 * t;
        qa[kk][0] = live0 ? *(const uint32_t *)(q + qr0 * a.qs[2] + c) : 0u;
        qa[kk][1] = live1 ? *(const uint32_t *)(q + qr1 * a.qs[2] + c) : 0u;
        qa[kk][2] = live0 ? *(const uint32_t *)(q + qr0 * a.qs[2] + c + 8) : 0u;
        qa[kk][3] = live1 ? *(const uint32_t *)(q + qr1 * a.qs[2] + c + 8) : 0u;
    }
    /* masks read per element from global memory: this thread's two rows */
    const bool mask_global = a.mask && mask_mode == ATT_MASK_GLOBAL;
    const unsigned char *mrow0 = mask_global && live0 ? mbase + qr0 * a.ms[2] * mesz : NULL;
    const unsigned char *mrow1 = mask_global && live1 ? mbase + qr1 * a.ms[2] * mesz : NULL;
    /* staged mask rows of this thread's queries (row 0 for a query-independent mask) */
    const int mr0 = mask_mode == ATT_MASK_ROW ? 0 : warp * 16 + g,
              mr1 = mask_mode == ATT_MASK_ROW ? 0 : warp * 16 + g + 8;

    float o[ATT_D / 8][4];
#pragma unroll
    for (int n = 0; n < ATT_D / 8; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
    const float LOG2E = 1.4426950408889634f;

    for (int j = 0; j < n_tiles; j++) {
        const int st = j & 1;
        cp_async_wait_all();
        __syncthreads(); /* tile j is in; every warp is done with tile j - 1, whose buffer is reused */
        if (j + 1 < n_tiles) load_tile(j + 1, st ^ 1);
        const int key0 = j * ATT_BN;
        const __half *Kt = Ks[st], *Vt = Vs[st];

        /* S = Q K^T for 16 queries x 64 keys: 8 accumulator tiles of 8 keys */
        float sc[ATT_BN / 8][4];
#pragma unroll
        for (int n = 0; n < ATT_BN / 8; n++) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.f;
#pragma unroll
        for (int np = 0; np < ATT_BN / 16; np++) {
            if (key0 + np * 16 >= skv) break; /* warp-uniform: the rest of the tile is padding */
#pragma unroll
            for (int kk = 0; kk < ATT_D / 16; kk++) {
                /* matrices: keys +0/+8 (bit 1 of the lane's matrix), dims +0/+8 (bit 0) */
                const int mi = lane / 8, r = lane % 8;
                uint32_t kb[4];
                ldsm_x4(kb, Kt + (np * 16 + (mi >> 1) * 8 + r) * ATT_LD + kk * 16 + (mi & 1) * 8);
                mma16816(sc[2 * np], qa[kk], kb[0], kb[1]);
                mma16816(sc[2 * np + 1], qa[kk], kb[2], kb[3]);
            }
        }

        /* scale and mask: rows g (elements 0, 1) and g + 8 (2, 3), keys key0 + 8n + 2t (+ 1) */
#pragma unroll
        for (int n = 0; n < ATT_BN / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) sc[n][e] *= a.scale;
        if (mask_mode == ATT_MASK_ROW || mask_mode == ATT_MASK_ROWS) {
            const unsigned char *mt = Ms + st * ATT_BN * mld;
#pragma unroll
            for (int n = 0; n < ATT_BN / 8; n++) {
                const int c = (n * 8 + 2 * t) * mesz;
                const float2 x0 = mask_pair(mdt, mt + mr0 * mld + c), x1 = mask_pair(mdt, mt + mr1 * mld + c);
                sc[n][0] += x0.x;
                sc[n][1] += x0.y;
                sc[n][2] += x1.x;
                sc[n][3] += x1.y;
            }
        } else if (mask_mode == ATT_MASK_COLS) {
            const unsigned char *mt = Ms + st * ATT_BN * mld;
#pragma unroll
            for (int n = 0; n < ATT_BN / 8; n++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const unsigned char *kr = mt + (n * 8 + 2 * t + e) * mld;
                    sc[n][e] += mask_one(mdt, kr + mr0 * mesz);
                    sc[n][2 + e] += mask_one(mdt, kr + mr1 * mesz);
                }
        } else if (mask_global) {
#pragma unroll
            for (int n = 0; n < ATT_BN / 8; n++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int key = key0 + n * 8 + 2 * t + e;
                    if (key >= skv) continue;
                    const int64_t off = key * a.ms[3] * mesz;
                    if (mrow0) sc[n][e] += mask_one(mdt, mrow0 + off);
                    if (mrow1) sc[n][2 + e] += mask_one(mdt, mrow1 + off);
                }
        }
        if (key0 + ATT_BN > skv) /* the last, partial tile: keys past S_kv get no weight */
#pragma unroll
            for (int n = 0; n < ATT_BN / 8; n++)
#pragma unroll
                for (int e = 0; e < 2; e++)
                    if (key0 + n * 8 + 2 * t + e >= skv) sc[n][e] = sc[n][2 + e] = -INFINITY;

        /* online softmax; the 4 lanes of a group share the rows */
        float mx0 = m0, mx1 = m1;
#pragma unroll
        for (int n = 0; n < ATT_BN / 8; n++) {
            mx0 = fmaxf(mx0, fmaxf(sc[n][0], sc[n][1]));
            mx1 = fmaxf(mx1, fmaxf(sc[n][2], sc[n][3]));
        }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        /* A row masked out so far keeps a max of -inf: shift by 0 so exp gives 0, not NaN. The shift is
         * subtracted before scaling by log2(e), so finite masks down to -FLT_MAX cannot overflow. */
        const float sh0 = mx0 == -INFINITY ? 0.f : mx0, sh1 = mx1 == -INFINITY ? 0.f : mx1;
        const float al0 = ex2((m0 - sh0) * LOG2E), al1 = ex2((m1 - sh1) * LOG2E);
        m0 = mx0;
        m1 = mx1;
        l0 *= al0;
        l1 *= al1;
#pragma unroll
        for (int n = 0; n < ATT_D / 8; n++) {
            o[n][0] *= al0;
            o[n][1] *= al0;
            o[n][2] *= al1;
            o[n][3] *= al1;
        }
#pragma unroll
        for (int n = 0; n < ATT_BN / 8; n++) {
            sc[n][0] = ex2((sc[n][0] - sh0) * LOG2E);
            sc[n][1] = ex2((sc[n][1] - sh0) * LOG2E);
            sc[n][2] = ex2((sc[n][2] - sh1) * LOG2E);
            sc[n][3] = ex2((sc[n][3] - sh1) * LOG2E);
            l0 += sc[n][0] + sc[n][1];
            l1 += sc[n][2] + sc[n][3];
        }

        /* O += P V: P's accumulator tiles 2kk, 2kk + 1 are the A fragment of keys 16kk .. 16kk + 15 */
#pragma unroll
        for (int kk = 0; kk < ATT_BN / 16; kk++) {
            if (key0 + kk * 16 >= skv) break;
            uint32_t pa[4];
            pa[0] = pack_half2(sc[2 * kk][0], sc[2 * kk][1]);
            pa[1] = pack_half2(sc[2 * kk][2], sc[2 * kk][3]);
            pa[2] = pack_half2(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
            pa[3] = pack_half2(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
#pragma unroll
            for (int dp = 0; dp < ATT_D / 16; dp++) {
                /* matrices: keys +0/+8 (bit 0 of the lane's matrix), dims +0/+8 (bit 1), transposed */
                const int mi = lane / 8, r = lane % 8;
                uint32_t vb[4];
                ldsm_x4_trans(vb, Vt + (kk * 16 + (mi & 1) * 8 + r) * ATT_LD + dp * 16 + (mi >> 1) * 8);
                mma16816(o[2 * dp], pa, vb[0], vb[1]);
                mma16816(o[2 * dp + 1], pa, vb[2], vb[3]);
            }
        }
    }

    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
    __half *out = (__half *)a.o + b * a.os[0] + h * a.os[1];
#pragma unroll
    for (int n = 0; n < ATT_D / 8; n++) {
        const int64_t c = n * 8 + 2 * t;
#pragma unroll
        for (int rr = 0; rr < 2; rr++) {
            if (!(rr ? live1 : live0)) continue;
            const float inv = rr ? inv1 : inv0;
            __half *p = out + (rr ? qr1 : qr0) * a.os[2];
            const __half2 hv = __floats2half2_rn(o[n][2 * rr] * inv, o[n][2 * rr + 1] * inv);
            if (a.os[3] == 1) {
                *(__half2 *)(p + c) = hv;
            } else {
                p[c * a.os[3]] = __low2half(hv);
                p[(c + 1) * a.os[3]] = __high2half(hv);
            }
        }
    }
}

extern "C" int ingot_cuda_attention_supported(const ig_attention_args *a)
{
    if (a->dtype != INGOT_DTYPE_FLOAT16 || a->d != ATT_D || a->skv < 1 || a->sq < 1) return 0;
    if (a->b > 65535 || a->h > 65535 || a->skv > INT32_MAX / 2) return 0;
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
    /* Blocks of 64 queries (4 warps) share each K/V tile four ways; when that leaves the GPU short of
     * blocks (batch 1) a warp per block spreads the work over more SMs. The SM count is read and the
     * shared-memory opt-in made once: the first run of an instance is never captured, so this happens
     * outside any graph capture. */
    static int n_sm = 0, opted = 0, force = -1; /* INGOT_CUDA_ATTENTION_WIDE=0/1 picks one (tests) */
    if (!n_sm) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev))
            n_sm = 132;
        const char *env = getenv("INGOT_CUDA_ATTENTION_WIDE");
        if (env && (env[0] == '0' || env[0] == '1')) force = env[0] - '0';
    }
    const bool wide = force >= 0 ? force == 1 : a->b * a->h * ((a->sq + 63) / 64) >= 2 * n_sm;
    /* the mask is staged in shared memory when its rows (of keys, or of queries) are runs of 16-byte
     * chunks that never straddle the end of a row */
    const int64_t mesz = a->mask_dtype == INGOT_DTYPE_FLOAT ? 4 : 2, per = 16 / mesz;
    int mode = ATT_MASK_GLOBAL;
    if (a->mask && (uintptr_t)a->mask % 16 == 0 && a->ms[0] % per == 0 && a->ms[1] % per == 0) {
        if (a->ms[3] == 1 && a->skv % per == 0 && a->ms[2] % per == 0)
            mode = a->ms[2] == 0 ? ATT_MASK_ROW : ATT_MASK_ROWS;
        else if (a->ms[2] == 1 && a->sq % per == 0 && a->ms[3] % per == 0)
            mode = ATT_MASK_COLS;
    }
    const size_t kv_bytes = 4 * ATT_BN * ATT_LD * sizeof(__half), max_bytes = kv_bytes + 2 * ATT_BN * ATT_MLD(4);
    const size_t smem = kv_bytes + (mode != ATT_MASK_GLOBAL ? 2 * ATT_BN * (size_t)ATT_MLD(mesz) : 0);
    if (!opted) {
        cudaError_t e =
            cudaFuncSetAttribute(flash_attention<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)max_bytes);
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(flash_attention<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)max_bytes);
        if (e != cudaSuccess) return e;
        opted = 1;
    }
    if (wide) {
        dim3 grid((unsigned)((a->sq + 63) / 64), (unsigned)a->h, (unsigned)a->b);
        flash_attention<4><<<grid, 128, smem, s>>>(*a, mode);
    } else {
        dim3 grid((unsigned)((a->sq + 15) / 16), (unsigned)a->h, (unsigned)a->b);
        flash_attention<1><<<grid, 32, smem, s>>>(*a, mode);
    }
    return cudaGetLastError();
}
