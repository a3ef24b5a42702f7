/*
 * attention.cu -- fused scaled-dot-product attention for fp16, head dims up to 64 (multiples of 8; the
 * value's may differ from the query's), any number of keys:
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
 * Narrower heads (PVT's and Swin's 32, LeViT's 16 with 64-wide values) run as 64-wide ones: Q columns
 * and K/V chunks past D (DV for V) load as zeros, so they add nothing to the scores, and output columns
 * past DV are not stored. A 32-wide head thus costs what a 64-wide one does -- the decomposed form it
 * replaces writes and reads the whole score matrix, which costs far more.
 *
 * Fragment layouts: mma.cuh. A score accumulator tile has exactly the layout of the A fragment that P V
 * needs.
 */
#include "kernels.h"
#include "ingot.h"
#include "mma.cuh"
#include "sm_count.cuh"

#include <cuda_fp16.h>
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#define ATT_D  64 /* head dimension as computed (narrower heads are zero-padded to it) */
#define ATT_BN 64 /* keys per tile */
#define ATT_LD 72 /* halves per staged row: 144 bytes, so 8 rows of an ldmatrix hit 8 distinct bank groups */

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool pred)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(pred ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

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
/* a mask value in log2 units: -inf stays -inf (no weight), finite values as low as -FLT_MAX stay finite
 * (a row masked with them entirely still averages, as the unfused softmax does) */
__device__ __forceinline__ float mask_log2(float m)
{
    const float x = m * 1.4426950408889634f;
    return x < -FLT_MAX && m > -INFINITY ? -FLT_MAX : x;
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

/* What one thread needs to score a tile: its lane's place in the fragments, the key count, the scale
 * and where its two rows of the mask are. */
typedef struct att_ctx {
    int lane, g, t, skv;
    float sl;     /* scale * log2(e) */
    bool raw_max; /* no mask, positive scale: the row max is taken over the raw products */
    int mode, mdt, mesz, mld;
    int mr0, mr1;                       /* staged modes: this thread's rows (or columns) in the tile */
    const unsigned char *mrow0, *mrow1; /* global mode: this thread's rows, NULL when absent or dead */
    int64_t ms3;                        /* global mode: the mask's key stride */
} att_ctx;

/* A thread's share of 16 rows: the output accumulators, the running max (log2 units) and the partial
 * sum of the rows g (m0, l0) and g + 8 (m1, l1). */
typedef struct att_acc {
    float o[ATT_D / 8][4];
    float m0, m1, l0, l1;
} att_acc;

__device__ __forceinline__ void att_init(att_acc &A)
{
#pragma unroll
    for (int n = 0; n < ATT_D / 8; n++) A.o[n][0] = A.o[n][1] = A.o[n][2] = A.o[n][3] = 0.f;
    A.m0 = A.m1 = -INFINITY;
    A.l0 = A.l1 = 0.f;
}

/* The A fragments of 16 queries from global memory (rows at or past S_q and columns at or past d are
 * zero). */
__device__ __forceinline__ void att_load_q(uint32_t (&qa)[ATT_D / 16][4], const __half *q, int64_t qs2, int64_t qr0,
                                           bool live0, bool live1, int t, int d)
{
#pragma unroll
    for (int kk = 0; kk < ATT_D / 16; kk++) {
        const int c = kk * 16 + 2 * t;
        const bool lo = c < d, hi = c + 8 < d; /* d is a multiple of 8: a pair is all in or all out */
        qa[kk][0] = live0 && lo ? *(const uint32_t *)(q + qr0 * qs2 + c) : 0u;
        qa[kk][1] = live1 && lo ? *(const uint32_t *)(q + (qr0 + 8) * qs2 + c) : 0u;
        qa[kk][2] = live0 && hi ? *(const uint32_t *)(q + qr0 * qs2 + c + 8) : 0u;
        qa[kk][3] = live1 && hi ? *(const uint32_t *)(q + (qr0 + 8) * qs2 + c + 8) : 0u;
    }
}

/* One tile of 64 keys (K and V staged at Kt and Vt, a staged mask at Mt) into A. PARTIAL: the last
 * tile, where keys at or past S_kv are padding. */
template <bool PARTIAL>
__device__ __forceinline__ void att_tile(att_acc &A, const uint32_t (&qa)[ATT_D / 16][4], const __half *Kt,
                                         const __half *Vt, const unsigned char *Mt, int key0, const att_ctx &c)
{
    const int mi = c.lane / 8, r8 = c.lane % 8, t = c.t;
    /* S = Q K^T for 16 queries x 64 keys: 8 accumulator tiles of 8 keys */
    float sc[ATT_BN / 8][4];
#pragma unroll
    for (int n = 0; n < ATT_BN / 8; n++) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.f;
#pragma unroll
    for (int np = 0; np < ATT_BN / 16; np++) {
        if (PARTIAL && key0 + np * 16 >= c.skv) break; /* warp-uniform: the rest is padding */
        /* matrices: keys +0/+8 (bit 1 of the lane's matrix), dims +0/+8 (bit 0); all four k-steps'
         * fragments are loaded before the first multiply */
        uint32_t kb[ATT_D / 16][4];
#pragma unroll
        for (int kk = 0; kk < ATT_D / 16; kk++)
            ldsm_x4(kb[kk], Kt + (np * 16 + (mi >> 1) * 8 + r8) * ATT_LD + kk * 16 + (mi & 1) * 8);
#pragma unroll
        for (int kk = 0; kk < ATT_D / 16; kk++) {
            mma16816(sc[2 * np], qa[kk], kb[kk][0], kb[kk][1]);
            mma16816(sc[2 * np + 1], qa[kk], kb[kk][2], kb[kk][3]);
        }
    }

    /* Scores in log2 units, x = S * scale * log2(e) (+ mask * log2(e)), so a probability costs one
     * exp2; with raw_max the scaling waits for the exp2's argument (one FFMA). Rows g (elements 0, 1)
     * and g + 8 (2, 3), keys key0 + 8n + 2t (+ 1). */
    if (!c.raw_max) {
#pragma unroll
        for (int n = 0; n < ATT_BN / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) sc[n][e] *= c.sl;
    }
    if (c.mode == ATT_MASK_ROW || c.mode == ATT_MASK_ROWS) {
#pragma unroll
        for (int n = 0; n < ATT_BN / 8; n++) {
            const int off = (n * 8 + 2 * t) * c.mesz;
            const float2 x0 = mask_pair(c.mdt, Mt + c.mr0 * c.mld + off);
            const float2 x1 = mask_pair(c.mdt, Mt + c.mr1 * c.mld + off);
            sc[n][0] += mask_log2(x0.x);
            sc[n][1] += mask_log2(x0.y);
            sc[n][2] += mask_log2(x1.x);
            sc[n][3] += mask_log2(x1.y);
        }
    } else if (c.mode == ATT_MASK_COLS) {
#pragma unroll
        for (int n = 0; n < ATT_BN / 8; n++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const unsigned char *kr = Mt + (n * 8 + 2 * t + e) * c.mld;
                sc[n][e] += mask_log2(mask_one(c.mdt, kr + c.mr0 * c.mesz));
                sc[n][2 + e] += mask_log2(mask_one(c.mdt, kr + c.mr1 * c.mesz));
            }
    } else if (c.mrow0 || c.mrow1) {
#pragma unroll
        for (int n = 0; n < ATT_BN / 8; n++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int key = key0 + n * 8 + 2 * t + e;
                if (PARTIAL && key >= c.skv) continue;
                const int64_t off = key * c.ms3 * c.mesz;
                if (c.mrow0) sc[n][e] += mask_log2(mask_one(c.mdt, c.mrow0 + off));
                if (c.mrow1) sc[n][2 + e] += mask_log2(mask_one(c.mdt, c.mrow1 + off));
            }
    }
    if (PARTIAL) /* keys past S_kv get no weight */
#pragma unroll
        for (int n = 0; n < ATT_BN / 8; n++)
#pragma unroll
            for (int e = 0; e < 2; e++)
                if (key0 + n * 8 + 2 * t + e >= c.skv) sc[n][e] = sc[n][2 + e] = -INFINITY;

    /* online softmax; the 4 lanes of a group share the rows */
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int n = 0; n < ATT_BN / 8; n++) {
        mx0 = fmaxf(mx0, fmaxf(sc[n][0], sc[n][1]));
        mx1 = fmaxf(mx1, fmaxf(sc[n][2], sc[n][3]));
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    if (c.raw_max) { /* a tile always holds a live key, so the raw max is finite */
        mx0 *= c.sl;
        mx1 *= c.sl;
    }
    mx0 = fmaxf(mx0, A.m0);
    mx1 = fmaxf(mx1, A.m1);
    /* a row masked out so far keeps a max of -inf: shift by 0 so exp2 gives 0, not NaN */
    const float sh0 = mx0 == -INFINITY ? 0.f : mx0, sh1 = mx1 == -INFINITY ? 0.f : mx1;
    const float al0 = ex2(A.m0 - sh0), al1 = ex2(A.m1 - sh1);
    A.m0 = mx0;
    A.m1 = mx1;
    A.l0 *= al0;
    A.l1 *= al1;
#pragma unroll
    for (int n = 0; n < ATT_D / 8; n++) {
        A.o[n][0] *= al0;
        A.o[n][1] *= al0;
        A.o[n][2] *= al1;
        A.o[n][3] *= al1;
    }
    if (c.raw_max) {
#pragma unroll
        for (int n = 0; n < ATT_BN / 8; n++) {
            sc[n][0] = ex2(fmaf(sc[n][0], c.sl, -sh0));
            sc[n][1] = ex2(fmaf(sc[n][1], c.sl, -sh0));
            sc[n][2] = ex2(fmaf(sc[n][2], c.sl, -sh1));
            sc[n][3] = ex2(fmaf(sc[n][3], c.sl, -sh1));
        }
    } else {
#pragma unroll
        for (int n = 0; n < ATT_BN / 8; n++) {
            sc[n][0] = ex2(sc[n][0] - sh0);
            sc[n][1] = ex2(sc[n][1] - sh0);
            sc[n][2] = ex2(sc[n][2] - sh1);
            sc[n][3] = ex2(sc[n][3] - sh1);
        }
    }
#pragma unroll
    for (int n = 0; n < ATT_BN / 8; n++) {
        A.l0 += sc[n][0] + sc[n][1];
        A.l1 += sc[n][2] + sc[n][3];
    }

    /* O += P V: P's accumulator tiles 2kk, 2kk + 1 are the A fragment of keys 16kk .. 16kk + 15 */
#pragma unroll
    for (int kk = 0; kk < ATT_BN / 16; kk++) {
        if (PARTIAL && key0 + kk * 16 >= c.skv) break;
        uint32_t pa[4];
        pa[0] = pack_half2(sc[2 * kk][0], sc[2 * kk][1]);
        pa[1] = pack_half2(sc[2 * kk][2], sc[2 * kk][3]);
        pa[2] = pack_half2(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
        pa[3] = pack_half2(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
        /* matrices: keys +0/+8 (bit 0 of the lane's matrix), dims +0/+8 (bit 1), transposed */
        uint32_t vb[ATT_D / 16][4];
#pragma unroll
        for (int dp = 0; dp < ATT_D / 16; dp++)
            ldsm_x4_trans(vb[dp], Vt + (kk * 16 + (mi & 1) * 8 + r8) * ATT_LD + dp * 16 + (mi >> 1) * 8);
#pragma unroll
        for (int dp = 0; dp < ATT_D / 16; dp++) {
            mma16816(A.o[2 * dp], pa, vb[dp][0], vb[dp][1]);
            mma16816(A.o[2 * dp + 1], pa, vb[dp][2], vb[dp][3]);
        }
    }
}

/* The sum of a row over the 4 lanes of a group. */
__device__ __forceinline__ float att_group_sum(float x)
{
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

/* O row = o * scale through the output's strides (half2 stores when the head dim is contiguous). */
__device__ __forceinline__ void att_store_pair(const ig_attention_args &a, __half *row, int64_t col, float x0, float x1)
{
    const __half2 hv = __floats2half2_rn(x0, x1);
    if (a.os[3] == 1) {
        *(__half2 *)(row + col) = hv;
    } else {
        row[col * a.os[3]] = __low2half(hv);
        row[(col + 1) * a.os[3]] = __high2half(hv);
    }
}

/* Copies K/V tile j (64 rows of 8 16-byte chunks; rows past S_kv and chunks past the head dims
 * zero-filled) into Kt/Vt with NT threads; thread i always copies chunk column i % 8 of rows i / 8,
 * i / 8 + NT / 8, ... */
template <int NT>
__device__ __forceinline__ void att_copy_kv(__half *Kt, __half *Vt, const __half *k, const __half *v,
                                            const ig_attention_args &a, int j, int i)
{
    constexpr int RPI = NT / 8; /* rows per pass */
    const int lr = i / 8, lc = (i % 8) * 8;
    const bool kc = lc < a.d, vc = lc < a.dv;
    const __half *kt = k + ((int64_t)j * ATT_BN + lr) * a.ks[2] + lc;
    const __half *vt = v + ((int64_t)j * ATT_BN + lr) * a.vs[2] + lc;
#pragma unroll
    for (int it = 0; it < ATT_BN / RPI; it++) {
        const bool in = j * ATT_BN + lr + it * RPI < a.skv;
        cp_async16(Kt + (lr + it * RPI) * ATT_LD + lc, in && kc ? kt + it * RPI * a.ks[2] : k, in && kc);
        cp_async16(Vt + (lr + it * RPI) * ATT_LD + lc, in && vc ? vt + it * RPI * a.vs[2] : v, in && vc);
    }
}

/* The per-thread context for queries qr0 and qr0 + 8 of (b, h). */
__device__ __forceinline__ att_ctx att_context(const ig_attention_args &a, int mode, int64_t qr0, int lane, int64_t b,
                                               int64_t h)
{
    att_ctx c;
    c.lane = lane;
    c.g = lane / 4;
    c.t = lane % 4;
    c.skv = (int)a.skv;
    c.sl = a.scale * 1.4426950408889634f;
    c.raw_max = !a.mask && a.scale > 0.f;
    c.mode = mode;
    c.mdt = a.mask_dtype;
    c.mesz = a.mask_dtype == INGOT_DTYPE_FLOAT ? 4 : 2;
    c.mld = ATT_MLD(c.mesz);
    c.ms3 = a.ms[3];
    c.mrow0 = c.mrow1 = NULL;
    if (a.mask && mode == ATT_MASK_GLOBAL) {
        const unsigned char *mb = (const unsigned char *)a.mask + (b * a.ms[0] + h * a.ms[1]) * c.mesz;
        if (qr0 < a.sq) c.mrow0 = mb + qr0 * a.ms[2] * c.mesz;
        if (qr0 + 8 < a.sq) c.mrow1 = mb + (qr0 + 8) * a.ms[2] * c.mesz;
    }
    c.mr0 = c.mr1 = 0;
    return c;
}

/* WARPS warps, 16 queries each, of one (batch, head) per block; K/V tiles (and a staged mask) stream
 * through two stages of shared memory, the next tile loading while this one is multiplied. */
template <int WARPS, int MINB>
__global__ void __launch_bounds__(WARPS * 32, MINB) flash_attention(const ig_attention_args a, int mode)
{
    extern __shared__ __align__(128) unsigned char smem[];
    __half(*Ks)[ATT_BN * ATT_LD] = (__half(*)[ATT_BN * ATT_LD]) smem;
    __half(*Vs)[ATT_BN * ATT_LD] = Ks + 2;
    unsigned char *Ms = (unsigned char *)(Ks + 4);

    const int64_t b = blockIdx.z, h = blockIdx.y;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4;
    const __half *q = (const __half *)a.q + b * a.qs[0] + h * a.qs[1];
    const __half *k = (const __half *)a.k + b * a.ks[0] + h * a.ks[1];
    const __half *v = (const __half *)a.v + b * a.vs[0] + h * a.vs[1];
    const int skv = (int)a.skv, n_tiles = (skv + ATT_BN - 1) / ATT_BN;
    const int64_t qb = (int64_t)blockIdx.x * (WARPS * 16); /* this block's first query */
    const int64_t qr0 = qb + warp * 16 + g;
    att_ctx c = att_context(a, mode, qr0, lane, b, h);
    if (mode == ATT_MASK_ROWS || mode == ATT_MASK_COLS) {
        c.mr0 = warp * 16 + g;
        c.mr1 = warp * 16 + g + 8;
    }
    const unsigned char *mbase = a.mask ? (const unsigned char *)a.mask + (b * a.ms[0] + h * a.ms[1]) * c.mesz : NULL;

    auto load_tile = [&](int j, int st) {
        att_copy_kv<WARPS * 32>(Ks[st], Vs[st], k, v, a, j, tid);
        if (mode == ATT_MASK_ROW || mode == ATT_MASK_ROWS) {
            const int rows = mode == ATT_MASK_ROW ? 1 : WARPS * 16, cpr = ATT_BN * c.mesz / 16;
            unsigned char *dst = Ms + st * ATT_BN * c.mld;
            for (int i = tid; i < rows * cpr; i += WARPS * 32) {
                const int r = i / cpr, cb = (i % cpr) * 16; /* r: query, cb: byte of the row of keys */
                const int64_t qi = qb + r;
                const bool in = j * ATT_BN + cb / c.mesz < skv && (rows == 1 || qi < a.sq);
                const unsigned char *src = in ? mbase + (qi * a.ms[2] + (int64_t)j * ATT_BN) * c.mesz + cb : mbase;
                cp_async16(dst + r * c.mld + cb, src, in);
            }
        } else if (mode == ATT_MASK_COLS) {
            const int cpr = WARPS * 16 * c.mesz / 16;
            unsigned char *dst = Ms + st * ATT_BN * c.mld;
            for (int i = tid; i < ATT_BN * cpr; i += WARPS * 32) {
                const int r = i / cpr, cb = (i % cpr) * 16; /* r: key, cb: byte of the row of queries */
                const int64_t key = (int64_t)j * ATT_BN + r;
                const bool in = key < skv && qb + cb / c.mesz < a.sq;
                const unsigned char *src = in ? mbase + (key * a.ms[3] + qb) * c.mesz + cb : mbase;
                cp_async16(dst + r * c.mld + cb, src, in);
            }
        }
        cp_async_commit();
    };
    load_tile(0, 0);

    const bool live0 = qr0 < a.sq, live1 = qr0 + 8 < a.sq;
    uint32_t qa[ATT_D / 16][4];
    att_load_q(qa, q, a.qs[2], qr0, live0, live1, c.t, (int)a.d);
    att_acc A;
    att_init(A);

    for (int j = 0; j < n_tiles; j++) {
        const int st = j & 1;
        cp_async_wait_all();
        __syncthreads(); /* tile j is in; every warp is done with tile j - 1, whose buffer is reused */
        if (j + 1 < n_tiles) load_tile(j + 1, st ^ 1);
        const unsigned char *Mt = Ms + st * ATT_BN * c.mld;
        if ((j + 1) * ATT_BN <= skv)
            att_tile<false>(A, qa, Ks[st], Vs[st], Mt, j * ATT_BN, c);
        else
            att_tile<true>(A, qa, Ks[st], Vs[st], Mt, j * ATT_BN, c);
    }

    const float l0 = att_group_sum(A.l0), l1 = att_group_sum(A.l1);
    const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
    __half *out = (__half *)a.o + b * a.os[0] + h * a.os[1];
#pragma unroll
    for (int n = 0; n < ATT_D / 8; n++) {
        if (n * 8 >= a.dv) break; /* the zero padding of a narrower value */
        const int64_t col = n * 8 + 2 * c.t;
        if (live0) att_store_pair(a, out + qr0 * a.os[2], col, A.o[n][0] * inv0, A.o[n][1] * inv0);
        if (live1) att_store_pair(a, out + (qr0 + 8) * a.os[2], col, A.o[n][2] * inv1, A.o[n][3] * inv1);
    }
}

/* Few (batch, head, query-block) triples -- batch 1 -- leave most SMs idle and every warp walking all the
 * keys alone. Here the NSPLIT warps of a block share 16 queries and split the key tiles between them
 * (warp w takes tiles w, w + NSPLIT, ...; each warp stages its own tile), and the partial results are
 * combined at the end: O = sum_w 2^(m_w - m) O_w / sum_w 2^(m_w - m) l_w. The mask, if any, is read from
 * global memory. */
template <int NSPLIT> __global__ void __launch_bounds__(NSPLIT * 32) flash_attention_split(const ig_attention_args a)
{
    extern __shared__ __align__(128) unsigned char smem[];
    const int64_t b = blockIdx.z, h = blockIdx.y;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4;
    __half *Kt = (__half *)smem + warp * 2 * ATT_BN * ATT_LD, *Vt = Kt + ATT_BN * ATT_LD;
    const __half *q = (const __half *)a.q + b * a.qs[0] + h * a.qs[1];
    const __half *k = (const __half *)a.k + b * a.ks[0] + h * a.ks[1];
    const __half *v = (const __half *)a.v + b * a.vs[0] + h * a.vs[1];
    const int skv = (int)a.skv, n_tiles = (skv + ATT_BN - 1) / ATT_BN;
    const int64_t qr0 = (int64_t)blockIdx.x * 16 + g;
    const att_ctx c = att_context(a, ATT_MASK_GLOBAL, qr0, lane, b, h);
    const bool live0 = qr0 < a.sq, live1 = qr0 + 8 < a.sq;
    uint32_t qa[ATT_D / 16][4];
    att_load_q(qa, q, a.qs[2], qr0, live0, live1, c.t, (int)a.d);
    att_acc A;
    att_init(A);
    for (int j = warp; j < n_tiles; j += NSPLIT) {
        __syncwarp(); /* every lane is done reading the previous tile */
        att_copy_kv<32>(Kt, Vt, k, v, a, j, lane);
        cp_async_commit();
        cp_async_wait_all();
        __syncwarp();
        if ((j + 1) * ATT_BN <= skv)
            att_tile<false>(A, qa, Kt, Vt, NULL, j * ATT_BN, c);
        else
            att_tile<true>(A, qa, Kt, Vt, NULL, j * ATT_BN, c);
    }

    /* combine: each warp leaves its unnormalised rows, maxima and sums in shared memory */
    __syncthreads();                      /* the K/V stages are free */
    float *Os = (float *)smem;            /* [NSPLIT][16][64] */
    float *Mx = Os + NSPLIT * 16 * ATT_D; /* [NSPLIT][16] */
    float *Ls = Mx + NSPLIT * 16;         /* [NSPLIT][16] */
    const float l0 = att_group_sum(A.l0), l1 = att_group_sum(A.l1);
#pragma unroll
    for (int n = 0; n < ATT_D / 8; n++) {
        const int col = n * 8 + 2 * c.t;
        Os[(warp * 16 + g) * ATT_D + col] = A.o[n][0];
        Os[(warp * 16 + g) * ATT_D + col + 1] = A.o[n][1];
        Os[(warp * 16 + g + 8) * ATT_D + col] = A.o[n][2];
        Os[(warp * 16 + g + 8) * ATT_D + col + 1] = A.o[n][3];
    }
    if (c.t == 0) {
        Mx[warp * 16 + g] = A.m0;
        Mx[warp * 16 + g + 8] = A.m1;
        Ls[warp * 16 + g] = l0;
        Ls[warp * 16 + g + 8] = l1;
    }
    __syncthreads();
    __half *out = (__half *)a.o + b * a.os[0] + h * a.os[1];
    const int pairs = (int)a.dv / 2; /* column pairs per row that are stored */
    for (int i = tid; i < 16 * pairs; i += NSPLIT * 32) {
        const int r = i / pairs, col = (i % pairs) * 2;
        const int64_t qi = (int64_t)blockIdx.x * 16 + r;
        if (qi >= a.sq) continue;
        float m = -INFINITY;
#pragma unroll
        for (int w = 0; w < NSPLIT; w++) m = fmaxf(m, Mx[w * 16 + r]);
        const float sh = m == -INFINITY ? 0.f : m;
        float l = 0.f, o0 = 0.f, o1 = 0.f;
#pragma unroll
        for (int w = 0; w < NSPLIT; w++) {
            const float f = ex2(Mx[w * 16 + r] - sh);
            l += f * Ls[w * 16 + r];
            o0 += f * Os[(w * 16 + r) * ATT_D + col];
            o1 += f * Os[(w * 16 + r) * ATT_D + col + 1];
        }
        const float inv = l > 0.f ? 1.f / l : 0.f;
        att_store_pair(a, out + qi * a.os[2], col, o0 * inv, o1 * inv);
    }
}

extern "C" int ingot_cuda_attention_supported(const ig_attention_args *a)
{
    if (a->dtype != INGOT_DTYPE_FLOAT16 || a->skv < 1 || a->sq < 1) return 0;
    if (a->d < 8 || a->d > ATT_D || a->d % 8 || a->dv < 8 || a->dv > ATT_D || a->dv % 8) return 0;
    if (a->b > 65535 || a->h > 65535 || a->skv > INT32_MAX / 2) return 0;
    if (a->qs[3] != 1 || a->ks[3] != 1 || a->vs[3] != 1) return 0;
    for (int k = 0; k < 3; k++)
        if (a->qs[k] % 8 || a->ks[k] % 8 || a->vs[k] % 8) return 0;
    if (a->os[3] == 1 && a->os[2] % 2) return 0;
    if (a->mask && a->mask_dtype != INGOT_DTYPE_FLOAT16 && a->mask_dtype != INGOT_DTYPE_FLOAT) return 0;
    return 1;
}

/* Which kernel: ig_attention_args.kernel forces one (tests), else the grid's size decides. */
enum { ATT_K_AUTO = 0, ATT_K_WIDE, ATT_K_NARROW, ATT_K_SPLIT };

/* The SM count and the shared-memory opt-ins, made once per process (a C++ static: thread-safe). The
 * first run of an instance is never captured, so this happens outside any graph capture. Returns the
 * SM count, or a negative cudaError_t. */
static int att_init(void)
{
    const int sm = ig_sm_count();
    const size_t kv_bytes = 4 * ATT_BN * ATT_LD * sizeof(__half);
    const size_t max_bytes = kv_bytes + 2 * ATT_BN * ATT_MLD(4), split_bytes = 4 * 2 * ATT_BN * ATT_LD * sizeof(__half);
    const void *kernels[] = {(const void *)flash_attention<4, 3>, (const void *)flash_attention<1, 1>,
                             (const void *)flash_attention_split<2>, (const void *)flash_attention_split<4>};
    for (int i = 0; i < 4; i++) {
        cudaError_t e = cudaFuncSetAttribute(kernels[i], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)(i < 2 ? max_bytes : split_bytes));
        if (e != cudaSuccess) return -(int)e;
    }
    return sm;
}

extern "C" cudaError_t ingot_cuda_attention(const ig_attention_args *a, cudaStream_t s)
{
    if (a->b <= 0 || a->h <= 0 || a->sq <= 0) return cudaSuccess;
    if (((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v) % 16 || (a->os[3] == 1 && (uintptr_t)a->o % 4))
        return cudaErrorMisalignedAddress;
    static const int n_sm = att_init();
    if (n_sm < 0) return (cudaError_t)-n_sm;
    const size_t kv_bytes = 4 * ATT_BN * ATT_LD * sizeof(__half);
    const int64_t n_tiles = (a->skv + ATT_BN - 1) / ATT_BN;
    int kind = a->kernel >= ATT_K_WIDE && a->kernel <= ATT_K_SPLIT ? a->kernel : ATT_K_AUTO;
    if (kind == ATT_K_AUTO) /* 64-query blocks while they fill the GPU twice over; else split the keys */
        kind = a->b * a->h * ((a->sq + 63) / 64) >= 2 * n_sm ? ATT_K_WIDE : n_tiles >= 2 ? ATT_K_SPLIT : ATT_K_NARROW;
    if (kind == ATT_K_SPLIT) {
        dim3 grid((unsigned)((a->sq + 15) / 16), (unsigned)a->h, (unsigned)a->b);
        if (n_tiles >= 4)
            flash_attention_split<4><<<grid, 128, 4 * 2 * ATT_BN * ATT_LD * sizeof(__half), s>>>(*a);
        else
            flash_attention_split<2><<<grid, 64, 2 * 2 * ATT_BN * ATT_LD * sizeof(__half), s>>>(*a);
        return cudaGetLastError();
    }
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
    const size_t smem = kv_bytes + (mode != ATT_MASK_GLOBAL ? 2 * ATT_BN * (size_t)ATT_MLD(mesz) : 0);
    if (kind == ATT_K_WIDE) {
        dim3 grid((unsigned)((a->sq + 63) / 64), (unsigned)a->h, (unsigned)a->b);
        flash_attention<4, 3><<<grid, 128, smem, s>>>(*a, mode); /* 3 blocks per SM: 168 registers */
    } else {
        dim3 grid((unsigned)((a->sq + 15) / 16), (unsigned)a->h, (unsigned)a->b);
        flash_attention<1, 1><<<grid, 32, smem, s>>>(*a, mode);
    }
    return cudaGetLastError();
}
