/*
 * stem.cu -- convolutions of 1-4 input channels (a network's first layer) as an implicit GEMM on tensor
 * cores. The design and the index math: stem.cuh. conv.c races this kernel against cuDNN's algorithms
 * when it tunes a convolution it applies to, so it runs only where it is faster.
 */
#include "kernels.h"
#include "mma.cuh"
#include "sm_count.cuh"
#include "stem.cuh"

#include <cuda_fp16.h>
#include <stdint.h>

/* filter rows staged a round */
#define STEM_WROWS 8

__device__ __forceinline__ uint32_t lds32(const __half *p) { return *(const uint32_t *)p; }

/* p, computed once: without it the compiler folds the image's 64-bit offset into every load's address
 * (five instructions a load where one multiply-add from p does) */
template <typename T> __device__ __forceinline__ const T *opaque(const T *p)
{
    asm("mov.b64 %0, %0;" : "+l"(p));
    return p;
}

/* A warp's outputs (32 pixels x NT channel tiles) into the staging buffer, the bias already in acc. */
template <int NT, bool RELU>
__device__ __forceinline__ void stem_stage_out(const float (&acc)[2][NT][4], __half *buf, int pbase, int t4)
{
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
                if (RELU) {
                    v0 = fmaxf(v0, 0.f);
                    v1 = fmaxf(v1, 0.f);
                }
                const int p = pbase + 16 * i + 8 * h;
                *(__half2 *)(buf + p * STEM_LDO + j * 8 + 2 * t4) = __floats2half2_rn(v0, v1);
            }
}

/* A warp's products over the reduction: M (1 or 2) blocks of 16 pixels by NT channel tiles of 8. */
template <int NT, int M>
__device__ __forceinline__ void stem_products(float (&acc)[2][NT][4], const __half *buf, const int *taps,
                                              const __half *wl, int pix0, int pix8, int pix16, int kp, int t4)
{
    for (int k0 = 0; k0 < kp; k0 += 16) {
        const unsigned tq = (unsigned)(k0 + 2 * t4) / 4;
        const int t0 = taps[tq], t2 = taps[tq + 2]; /* columns ka = k0 + 2 t4 and ka + 8 */
        uint32_t af[M][4];
#pragma unroll
        for (int i = 0; i < M; i++) {
            const __half *p = buf + pix0 + i * pix16;
            af[i][0] = lds32(p + t0);
            af[i][1] = lds32(p + t0 + pix8);
            af[i][2] = lds32(p + t2);
            af[i][3] = lds32(p + t2 + pix8);
        }
        /* B of two channel tiles per ldmatrix */
#pragma unroll
        for (int j = 0; j < NT; j += 2) {
            uint32_t bf[4];
            ldsm_x4(bf, wl + j * 8 * STEM_LDW + k0);
#pragma unroll
            for (int i = 0; i < M; i++) {
                mma16816(acc[i][j], af[i], bf[0], bf[1]);
                mma16816(acc[i][j + 1], af[i], bf[2], bf[3]);
            }
        }
    }
}

/* What a block keeps for its tiles: the staged filters, the tap table, the patch / output buffer, and
 * the per-thread constants. */
struct stem_smem {
    __align__(16) __half wsm[STEM_BN * STEM_LDW];
    int taps[STEM_MAX_KP / 4]; /* stem_tap of each tap for this tile's patch width */
    /* the patch of a tile, then (after its products) the tile's outputs */
    __align__(16)
        __half buf[STEM_BM * STEM_LDO > STEM_MAX_R *STEM_MAX_PW * 4 ? STEM_BM *STEM_LDO : STEM_MAX_R *STEM_MAX_PW * 4];
};

/* The filters of channels n0.. into sm.wsm: rows STEM_WROWS at a time, each thread columns tid and
 * tid + STEM_THREADS, every load of a round issued (raw bits, a mask of the real ones) before any is
 * stored. */
__device__ __forceinline__ void stem_stage_filters(const ig_stem_args &a, stem_smem &sm, int n0, int kp, int tid)
{
    const uint16_t *wr16 = (const uint16_t *)a.filt;
    static_assert(STEM_MAX_KP <= 2 * STEM_THREADS, "two filter columns a thread");
    for (int n = 0; n < STEM_BN; n += STEM_WROWS) {
        uint16_t v[STEM_WROWS][2];
        unsigned ok = 0;
#pragma unroll
        for (int u = 0; u < STEM_WROWS; u++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int k = tid + h * STEM_THREADS, src = k < kp ? stem_filter_at(a, n0, n + u, k) : -1;
                ok |= (unsigned)(src >= 0) << (2 * u + h);
                v[u][h] = wr16[src >= 0 ? src : 0]; /* always a load; element 0 exists */
            }
#pragma unroll
        for (int u = 0; u < STEM_WROWS; u++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int k = tid + h * STEM_THREADS;
                if (k < kp) ((uint16_t *)sm.wsm)[(n + u) * STEM_LDW + k] = ok >> (2 * u + h) & 1 ? v[u][h] : 0;
            }
    }
}

/* One tile (np pixels of output row oh of image n from ow0): the patch staged, the products, and the
 * outputs (bias and ReLU applied, fp16) left in sm.buf, STEM_LDO halves a pixel, when it returns.
 * taps_pw: the patch width sm.taps was built for (every thread's copy the same); the table is built
 * again only when a tile's width differs (the pooled kernel's tiles are all whole rows, the plain
 * kernel's all but a row's last): two warps built it every tile, with a division by S a tap, while the
 * other two waited at the barrier after the staging. */
template <int C, int NT>
__device__ __forceinline__ void stem_tile_outs(const ig_stem_args &a, stem_smem &sm, const float (&bias)[NT][2],
                                               const unsigned (&coff)[C], int n, int oh, int ow0, int np, int kp,
                                               int &taps_pw)
{
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t4 = lane % 4;
    const int pw = stem_pw(a, np);
    __syncthreads(); /* the previous tile's outputs are used; the filters are staged */
    /* the patch (stem.cuh): a thread takes columns tid, tid + STEM_THREADS, ... and loads a column's R
     * pixels at once, from offsets that are 0 in the padding, as raw bits, so they are in flight
     * together; then a pixel's 4 slots (zeros past C and in the padding) as one 8-byte store. Each
     * load's address is one multiply-add from the image's pointer (unsigned 32-bit offsets; 64-bit
     * compares and address arithmetic took ~370 instructions a column before) */
    const uint16_t *xn = opaque((const uint16_t *)a.x + n * a.xs[0]);
    const unsigned rows_in = stem_rows_in(a, oh);
    for (int col = tid; col < pw; col += STEM_THREADS) {
        const unsigned in = stem_col_in(a, ow0, col, rows_in);
        uint16_t v[STEM_MAX_R][C];
#pragma unroll
        for (int r = 0; r < STEM_MAX_R; r++) {
            if (r >= a.r) break;
            const unsigned at = stem_px_at(a, oh, ow0, in, r, col);
#pragma unroll
            for (int c = 0; c < C; c++) v[r][c] = __ldg(xn + (at + coff[c]));
        }
#pragma unroll
        for (int r = 0; r < STEM_MAX_R; r++) {
            if (r >= a.r) break;
            uint32_t w2[2] = {0u, 0u}; /* slots 0-1, 2-3 */
#pragma unroll
            for (int c = 0; c < C; c++) w2[c / 2] |= (in >> r & 1 ? (uint32_t)v[r][c] : 0u) << (16 * (c % 2));
            *(uint2 *)(sm.buf + 4 * (r * pw + col)) = make_uint2(w2[0], w2[1]);
        }
    }
    if (pw != taps_pw) { /* the same in every thread: the barrier above ends the last tile's reads */
        for (int q = tid; q < kp / 4; q += STEM_THREADS) sm.taps[q] = stem_tap(a, pw, q);
        taps_pw = pw;
    }
    __syncthreads();
    float acc[2][NT][4]; /* starting from the bias */
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = bias[j][e % 2];
    const int pbase = warp * 32 + g;
    /* this thread's pixels' offsets in the patch, and its channel pair (k % 4 = 2 * (t4 % 2)) */
    const int pix0 = pbase * a.sw * 4 + 2 * (t4 & 1), pix16 = 16 * a.sw * 4, pix8 = 8 * a.sw * 4;
    const __half *wl = sm.wsm + stem_ldsm_b(lane, 0, 0);
    /* a warp's second 16 pixels are past the tile's (ResNet's rows of 112 pixels in tiles of 128):
     * their products skipped, which frees issue slots for the SM's other warps */
    const int mb = stem_warp_blocks(np, warp);
    if (mb == 2)
        stem_products<NT, 2>(acc, sm.buf, sm.taps, wl, pix0, pix8, pix16, kp, t4);
    else if (mb == 1)
        stem_products<NT, 1>(acc, sm.buf, sm.taps, wl, pix0, pix8, pix16, kp, t4);
    __syncthreads(); /* every warp is done with the patch: the outputs take its place */
    if (a.relu)      /* one branch a tile, not one a value */
        stem_stage_out<NT, true>(acc, sm.buf, pbase, t4);
    else
        stem_stage_out<NT, false>(acc, sm.buf, pbase, t4);
    __syncthreads();
}

/* The bias of this thread's output channels, and the offsets of a pixel's C channels. */
template <int C, int NT>
__device__ __forceinline__ void stem_consts(const ig_stem_args &a, int n0, float (&bias)[NT][2], unsigned (&coff)[C])
{
    const int t4 = threadIdx.x % 4;
    const __half *b = (const __half *)a.b;
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int ch = n0 + j * 8 + 2 * t4 + e;
            bias[j][e] = b && ch < a.k ? __half2float(b[ch]) : 0.f;
        }
#pragma unroll
    for (int c = 0; c < C; c++) coff[c] = (unsigned)(c * a.xs[1]); /* 32-bit: stem_applies bounds them */
}

/* C (1-4) is a template argument: a pixel's loads and the packing of its 4 slots are unrolled, with no
 * load of a channel that is not there. NT (2, 4 or 8): the channel tiles of 8 a block computes, the
 * fewest that cover K's in a block; tiles past K have zero filters, and only K's are written. What ncu
 * said of the first versions (ResNet-50's stem at b256): 0.55 instructions issued per cycle and
 * scheduler, stalled on integer dependencies (64-bit divisions and address arithmetic per tile, patch
 * pixel and filter element), ~3,400 instructions a warp per tile against ~600 for its products; now
 * ~1,700 (docs/CUDA.md). */
template <int C, int NT> __global__ void __launch_bounds__(STEM_THREADS, 4) stem_kernel(const ig_stem_args a)
{
    __shared__ stem_smem sm;
    const int tid = threadIdx.x, n0 = blockIdx.y * STEM_BN, kp = stem_kp(a);
    stem_stage_filters(a, sm, n0, kp, tid);
    /* output channel tiles of 8 this block computes (K need not fill STEM_BN) */
    const int ntiles = (a.k - n0 < STEM_BN ? a.k - n0 : STEM_BN) / 8;
    float bias[NT][2];
    unsigned coff[C];
    stem_consts<C, NT>(a, n0, bias, coff);
    const int tiles = stem_tiles(a);
    int taps_pw = -1; /* no table yet */
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        int n, oh, ow0, np;
        stem_tile(a, tile, n, oh, ow0, np);
        stem_tile_outs<C, NT>(a, sm, bias, coff, n, oh, ow0, np, kp, taps_pw);
        /* np pixels of nc channels: 16-byte pieces when the output's rows allow, else halves */
        const int nc = ntiles * 8;
        __half *y = (__half *)a.y + n * a.ys[0] + oh * a.ys[2] + ow0 * a.ys[3] + n0;
        const bool v16 = ((uintptr_t)y & 15) == 0 && a.ys[3] % 8 == 0;
        if (v16 && nc == STEM_BN) { /* the common case: shifts, not divisions */
            for (int i = tid; i < np * (STEM_BN / 8); i += STEM_THREADS) {
                const int p = i / (STEM_BN / 8), q = i % (STEM_BN / 8);
                *(uint4 *)(y + p * a.ys[3] + q * 8) = *(const uint4 *)(sm.buf + p * STEM_LDO + q * 8);
            }
        } else if (v16) {
            for (int i = tid; i < np * (nc / 8); i += STEM_THREADS) {
                const int p = i / (nc / 8), q = i % (nc / 8);
                *(uint4 *)(y + p * a.ys[3] + q * 8) = *(const uint4 *)(sm.buf + p * STEM_LDO + q * 8);
            }
        } else {
            for (int i = tid; i < np * nc; i += STEM_THREADS) {
                const int p = i / nc, q = i % nc;
                y[p * a.ys[3] + q] = sm.buf[p * STEM_LDO + q];
            }
        }
    }
}

/* The pooled form (stem.cuh): bands of a.band pooled rows, each conv row a whole tile, its outputs
 * pooled along W from sm.buf and into the ring (dynamic shared memory: a pooled row's columns by the
 * block's channel groups of 8, STEM_POOL_QW x STEM_BN / 8 slots at most). A thread keeps the same ring
 * slots for every row (stem_pool_items), so the ring needs no barrier of its own; what a row does in the
 * band's windows is worked out once a row (stem_pool_role_next), not once a slot: the first version did it
 * per slot, with two divisions each, and took 586 us under ncu against the unpooled 448 (ResNet-50's
 * stem at batch 256). */
template <int C, int NT> __global__ void __launch_bounds__(STEM_THREADS, 4) stem_pool_kernel(const ig_stem_args a)
{
    __shared__ stem_smem sm;
    extern __shared__ uint4 ring[];
    const int tid = threadIdx.x, n0 = blockIdx.y * STEM_BN, kp = stem_kp(a);
    stem_stage_filters(a, sm, n0, kp, tid);
    const int ng = (a.k - n0 < STEM_BN ? a.k - n0 : STEM_BN) / 8; /* channel groups of 8 */
    float bias[NT][2];
    unsigned coff[C];
    stem_consts<C, NT>(a, n0, bias, coff);
    int g, qo0, qstep;
    const bool active = stem_pool_items(ng, tid, g, qo0, qstep);
    /* 16-byte stores when the pooled output's pixels allow */
    const bool v16 =
        ((uintptr_t)((const __half *)a.y + n0) & 15) == 0 && a.ys[3] % 8 == 0 && a.ys[0] % 8 == 0 && a.ys[2] % 8 == 0;
    const int bands = stem_bands(a);
    int taps_pw = -1; /* no table yet */
    for (int t = blockIdx.x; t < bands; t += gridDim.x) {
        int n, po0, po1, r0, r1;
        stem_band(a, t, n, po0, po1, r0, r1);
        __half *yn = (__half *)a.y + n * a.ys[0] + n0 + g * 8;
        int po = po0;
        for (int cr = r0; cr <= r1; cr++) {
            stem_tile_outs<C, NT>(a, sm, bias, coff, n, cr, 0, (int)a.ow, kp, taps_pw);
            const stem_role role = stem_pool_role_next(a, po1, cr, po); /* the block's, not a slot's */
            if (!active) continue;
            for (int qo = qo0; qo < a.qw; qo += qstep) {
                const int i = qo * ng + g;
                __half2 h[4], rg[4], out[2][4];
                stem_pool_cols(a, sm.buf, qo, g * 8, h);
                if (role.first != (1u << role.n) - 1) *(uint4 *)rg = ring[i]; /* some window goes on */
                const unsigned done = stem_pool_slot(role, h, rg, out);
                if (done != (1u << role.n) - 1) ring[i] = *(const uint4 *)rg; /* some window is not complete */
#pragma unroll
                for (int u = 0; u < 2; u++) {
                    if (u >= role.n || !(done >> u & 1)) continue;
                    __half *y = yn + (role.po + u) * a.ys[2] + qo * a.ys[3];
                    if (v16) {
                        *(uint4 *)y = *(const uint4 *)out[u];
                    } else {
#pragma unroll
                        for (int e = 0; e < 4; e++) {
                            y[2 * e] = __low2half(out[u][e]);
                            y[2 * e + 1] = __high2half(out[u][e]);
                        }
                    }
                }
            }
        }
    }
}

/* The pooled kernel's ring: a pooled row's columns by the block's channel groups of 8. */
static size_t stem_ring_bytes(const ig_stem_args *a)
{
    return (size_t)a->qw * (size_t)((a->k < STEM_BN ? a->k : STEM_BN) / 8) * 16;
}

template <int C, int NT> static cudaError_t stem_go(dim3 grid, const ig_stem_args *a, cudaStream_t s)
{
    if (!a->pool) {
        stem_kernel<C, NT><<<grid, STEM_THREADS, 0, s>>>(*a);
        return cudaGetLastError();
    }
    /* the ring past the 48 KB of static shared memory takes the opt-in, once per instance */
    static int opted = 0;
    if (!__atomic_load_n(&opted, __ATOMIC_ACQUIRE)) {
        const cudaError_t e = cudaFuncSetAttribute(stem_pool_kernel<C, NT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                   (int)(STEM_POOL_QW * STEM_BN / 8 * 16));
        if (e != cudaSuccess) return e;
        __atomic_store_n(&opted, 1, __ATOMIC_RELEASE);
    }
    stem_pool_kernel<C, NT><<<grid, STEM_THREADS, stem_ring_bytes(a), s>>>(*a);
    return cudaGetLastError();
}

template <int C> static cudaError_t stem_launch(int nt, dim3 grid, const ig_stem_args *a, cudaStream_t s)
{
    switch (nt) {
    case 2: return stem_go<C, 2>(grid, a, s);
    case 4: return stem_go<C, 4>(grid, a, s);
    default: return stem_go<C, 8>(grid, a, s);
    }
}

static bool takes(const ig_stem_args &a) { return a.pool ? stem_pool_applies(a) : stem_applies(a); }

extern "C" int ingot_cuda_stem_applies(const ig_stem_args *a) { return takes(*a) ? 1 : 0; }

extern "C" cudaError_t ingot_cuda_stem(const ig_stem_args *a, cudaStream_t s)
{
    if (!takes(*a)) return cudaErrorInvalidValue;
    /* blocks enough for every SM to hold 4 of each channel tile, each walking its share of the tiles
     * (pooled: of the bands, whose height stem_band_for fits to those blocks) */
    const int64_t want = (int64_t)ig_sm_count() * 4, cblocks = (a->k + STEM_BN - 1) / STEM_BN;
    ig_stem_args b = *a;
    if (b.pool) b.band = stem_band_for(b, (int)(want / cblocks > 0 ? want / cblocks : 1));
    const int64_t work = b.pool ? stem_bands(b) : stem_tiles(b);
    const dim3 grid((unsigned)(work < want ? work : want), (unsigned)cblocks);
    const int64_t kt = (b.k < STEM_BN ? b.k : STEM_BN) / 8; /* channel tiles of a block */
    const int nt = kt <= 2 ? 2 : kt <= 4 ? 4 : 8;
    switch (b.c) {
    case 1: return stem_launch<1>(nt, grid, &b, s);
    case 2: return stem_launch<2>(nt, grid, &b, s);
    case 3: return stem_launch<3>(nt, grid, &b, s);
    default: return stem_launch<4>(nt, grid, &b, s);
    }
}
