/*
 * stem.cuh -- the index math of the stem convolution (stem.cu), host and device, so
 * tests/gpu/test_stem_host.cu runs the whole kernel on the host, fragment by fragment.
 *
 * A network's first convolution reads 1-4 channels (RGB): cuDNN's kernels for it are far from both roofs
 * (ResNet-50's 7x7/2 stem on 3 channels: 595 us at batch 256 on the H200, 102 TFLOP/s, 10% of the run).
 * This one is an implicit GEMM on tensor cores (mma.m16n8k16, fp16 in, fp32 accumulation): rows are output
 * pixels, columns output channels, and the reduction runs over (r, s, c) with c padded to 4, so that a
 * pair of channels is one 32-bit word and a 16-wide k step covers 4 filter taps.
 *
 * A block holds STEM_BN output channels' filters in shared memory and walks tiles of STEM_BM pixels of
 * one output row: it stages the input patch the tile reads (R rows x the columns the tile spans x 4
 * channels, zeros for padding), then each of its STEM_WARPS warps multiplies 32 pixels by the STEM_BN
 * channels (A fragments from the patch through a table of tap offsets, B by ldmatrix); the results go
 * through shared memory again so that rows of the output are written in 16-byte pieces. ResNet-50's stem
 * at batch 256 on the H200: 448 us under ncu against cuDNN's ~600 (2026-12-02, docs/CUDA.md).
 */
#ifndef INGOT_STEM_CUH
#define INGOT_STEM_CUH

#include "kernels.h"

#include <cuda_fp16.h>
#include <stdint.h>

#define STEM_BM      128 /* output pixels per tile (of one output row) */
#define STEM_BN      64  /* output channels per block */
#define STEM_WARPS   4   /* 32 pixels each */
#define STEM_THREADS (32 * STEM_WARPS)
#define STEM_MAX_RS  52  /* filter taps: k = 4 * R * S fits STEM_MAX_KP */
#define STEM_MAX_KP  208 /* the reduction, padded to a multiple of 16 */
#define STEM_MAX_R   7
#define STEM_MAX_S   7
#define STEM_MAX_SW  2
#define STEM_MAX_PW  ((STEM_BM - 1) * STEM_MAX_SW + STEM_MAX_S) /* patch columns */
#define STEM_LDW     (STEM_MAX_KP + 8) /* halves per staged filter: 8 rows of B fragments hit distinct banks */
#define STEM_LDO     (STEM_BN + 8)     /* halves per staged output pixel */

#ifndef IG_STEM_HD
#define IG_STEM_HD __host__ __device__ __forceinline__
#endif

/* Whether the kernel takes this convolution (the lowering has made its padding symmetric). Offsets within
 * one image or the filter and tile numbers are 32-bit in the kernel. */
static inline __host__ __device__ bool stem_applies(const ig_stem_args &a)
{
    if (!(a.c >= 1 && a.c <= 4 && a.k >= 8 && a.k % 8 == 0 && a.r >= 1 && a.r <= STEM_MAX_R && a.s >= 1 &&
          a.s <= STEM_MAX_S && a.r * a.s <= STEM_MAX_RS && a.sh >= 1 && a.sw >= 1 && a.sw <= STEM_MAX_SW && a.ph >= 0 &&
          a.pw >= 0 && a.n > 0 && a.h > 0 && a.w > 0 && a.oh > 0 && a.ow > 0 && a.ys[1] == 1))
        return false;
    for (int d = 1; d < 4; d++)
        if (a.xs[d] < 0) return false;
    const int64_t span = (a.c - 1) * a.xs[1] + (a.h - 1) * a.xs[2] + (a.w - 1) * a.xs[3];
    return span < INT32_MAX && a.n * a.oh * ((a.ow + STEM_BM - 1) / STEM_BM) < INT32_MAX &&
           (int64_t)a.k * a.r * a.s * a.c < INT32_MAX;
}

/* The reduction's length: 4 * R * S rounded up to 16. */
IG_STEM_HD int stem_kp(const ig_stem_args &a) { return (4 * a.r * a.s + 15) / 16 * 16; }

/* Tiles: one per STEM_BM pixels of each output row (fewer than 2^31: stem_applies). */
IG_STEM_HD int stem_segs(const ig_stem_args &a) { return (int)((a.ow + STEM_BM - 1) / STEM_BM); }
IG_STEM_HD int stem_tiles(const ig_stem_args &a) { return (int)(a.n * a.oh * stem_segs(a)); }

/* Tile t: image n, output row oh, first pixel ow0, np pixels. */
IG_STEM_HD void stem_tile(const ig_stem_args &a, int t, int &n, int &oh, int &ow0, int &np)
{
    const int segs = stem_segs(a), ohs = (int)a.oh;
    ow0 = t % segs * STEM_BM;
    t /= segs;
    oh = t % ohs;
    n = t / ohs;
    np = (int)(a.ow - ow0 < STEM_BM ? a.ow - ow0 : STEM_BM);
}

/* The patch of a tile of np pixels: R rows of pw(np) columns of 4 channels, row-major. */
IG_STEM_HD int stem_pw(const ig_stem_args &a, int np) { return (np - 1) * a.sw + a.s; }

/* The patch of the tile whose first output pixel is (oh, ow0): pixel (r, col) is input pixel (oh sh -
 * ph + r, ow0 sw - pw + col), its 4 channels (zeros past C) slots 4 (r pw + col) .. + 3. Bit r of
 * stem_rows_in: row r is inside the image; stem_col_in: those bits for column col (none where the
 * column is padding); stem_px_at: the pixel's offset in the image (channel c at + c xs[1]) where its
 * bit is set, else 0 (a pixel that exists: the kernel loads it and stores zeros). */
IG_STEM_HD unsigned stem_rows_in(const ig_stem_args &a, int oh)
{
    const int ih0 = oh * a.sh - a.ph;
    unsigned m = 0;
    for (int r = 0; r < STEM_MAX_R; r++) m |= (unsigned)(r < a.r && (unsigned)(ih0 + r) < (unsigned)a.h) << r;
    return m;
}
IG_STEM_HD unsigned stem_col_in(const ig_stem_args &a, int ow0, int col, unsigned rows_in)
{
    return (unsigned)(ow0 * a.sw - a.pw + col) < (unsigned)a.w ? rows_in : 0u;
}
IG_STEM_HD unsigned stem_px_at(const ig_stem_args &a, int oh, int ow0, unsigned in, int r, int col)
{
    /* each term within the image's span (stem_applies) */
    return in >> r & 1 ? (unsigned)((oh * a.sh - a.ph + r) * (int)a.xs[2] + (ow0 * a.sw - a.pw + col) * (int)a.xs[3])
                       : 0u;
}

/* Where tap q = r * S + s starts in the patch (halves); taps past R * S (the padding of the reduction,
 * whose filter is zero) read the last real one, so every product is of finite inputs. */
IG_STEM_HD int stem_tap(const ig_stem_args &a, int pw, int q)
{
    const int last = a.r * a.s - 1;
    q = q < last ? q : last;
    return (q / a.s * pw + q % a.s) * 4;
}

/* Staged filter row n (output channel n0 + n), reduction index k (tap k / 4, input channel k % 4): its
 * offset in the KRSC filter, -1 for a zero (a channel past K, a tap past R * S, a channel of input past
 * C). It goes to slot n * STEM_LDW + k of the staged filters. */
IG_STEM_HD int stem_filter_at(const ig_stem_args &a, int n0, int n, int k)
{
    const int q = k / 4, c = k % 4;
    if (n0 + n >= a.k || q >= a.r * a.s || c >= a.c) return -1;
    return ((n0 + n) * a.r * a.s + q) * a.c + c;
}

/* The half offset in the patch of the A element (pixel p of the tile, reduction index k): tap k / 4,
 * channel k % 4 (an even k starts a 32-bit pair). The kernel reads stem_tap from a table it fills per
 * tile (a division by S per element cost more than the products). */
IG_STEM_HD int stem_a_at(const ig_stem_args &a, int pw, int p, int k)
{
    return stem_tap(a, pw, k / 4) + p * a.sw * 4 + k % 4;
}

/* Blocks of 16 pixels warp w multiplies in a tile of np pixels: 2, or 1 when its second block is past np
 * (ResNet's rows of 112 pixels), 0 when the whole warp is. */
IG_STEM_HD int stem_warp_blocks(int np, int w)
{
    const int wp = np - w * 32;
    return wp > 16 ? 2 : wp > 0 ? 1 : 0;
}

/* The row of wsm that lane gives ldmatrix.x4 for the B fragments of channel tiles j and j + 1 at
 * reduction k0: matrices 0-3 are (j, k0..+7), (j, k0+8..+15), (j+1, k0..), (j+1, k0+8..); lane l
 * addresses row l % 8 of matrix l / 8 (halves from wsm). */
IG_STEM_HD int stem_ldsm_b(int lane, int j, int k0)
{
    return ((j + lane / 16) * 8 + lane % 8) * STEM_LDW + k0 + (lane / 8 % 2) * 8;
}

/* ---- the pooled form (a.pool): a max pool fused after the convolution ------------------------------
 * ResNet's stem writes 411 MB at batch 256 that its 3x3/2 max pool reads back (145 us of 5.9 ms). Pooled,
 * a block walks a band of `band` pooled rows of one image: it computes the conv rows their windows
 * cover one after another (a whole conv row is one tile: ow <= STEM_BM), max-pools each staged row
 * along W, and keeps a running vertical max of one pooled row in shared memory (the ring), writing a
 * pooled row when its window's last conv row is in. One ring row holds because consecutive windows
 * share at most one conv row (pkh - psh is 0 or 1), and that row is the last of one window and the
 * first of the next. Max commutes with rounding, so the result is bit for bit the conv's fp16 output
 * pooled. A band recomputes the conv row it shares with the previous band (1 in 2 band + 1 rows). */
#define STEM_POOL_QW     64 /* pooled columns the ring holds */
#define STEM_POOL_MAX_KW 4  /* window columns, unrolled */

static inline __host__ __device__ bool stem_pool_applies(const ig_stem_args &a)
{
    if (!stem_applies(a) || a.ow > STEM_BM || a.pkh < 1 || a.pkw < 1 || a.psh < 1 || a.psw < 1 || a.pkh - a.psh < 0 ||
        a.pkh - a.psh > 1 || a.pph < 0 || a.pph >= a.pkh || a.ppw < 0 || a.ppw >= a.pkw || a.pkw > STEM_POOL_MAX_KW ||
        a.qh < 1 || a.qw < 1 || a.qw > STEM_POOL_QW)
        return false;
    /* every window holds a conv row and column: it starts inside the output or its leading pads (smaller
     * than the window), so it reaches row / column 0 at least */
    return (a.qh - 1) * a.psh - a.pph < a.oh && (a.qw - 1) * a.psw - a.ppw < a.ow && a.n * a.qh < INT32_MAX;
}

/* The conv rows [first, last] pooled row po reads (its window clipped to the output). */
IG_STEM_HD void stem_pool_rows(const ig_stem_args &a, int po, int &first, int &last)
{
    const int r0 = po * a.psh - a.pph, r1 = r0 + a.pkh - 1;
    first = r0 > 0 ? r0 : 0;
    last = r1 < (int)a.oh - 1 ? r1 : (int)a.oh - 1;
}

/* Bands: `band` pooled rows of one image each. Band t: image n, pooled rows [po0, po1), conv rows
 * [r0, r1]. */
IG_STEM_HD int stem_bands(const ig_stem_args &a) { return (int)(a.n * ((a.qh + a.band - 1) / a.band)); }
IG_STEM_HD void stem_band(const ig_stem_args &a, int t, int &n, int &po0, int &po1, int &r0, int &r1)
{
    const int per = (int)((a.qh + a.band - 1) / a.band);
    n = t / per;
    po0 = t % per * a.band;
    po1 = po0 + a.band < (int)a.qh ? po0 + a.band : (int)a.qh;
    int f, l;
    stem_pool_rows(a, po0, r0, l);
    stem_pool_rows(a, po1 - 1, f, r1);
}

/* The band for `slots` blocks at once (per channel block): the fewest conv rows a block computes in the
 * busiest wave, waves of bands times the rows of one, fewer bands (rows recomputed) breaking ties. */
static inline int stem_band_for(const ig_stem_args &a, int slots)
{
    int best = 1;
    int64_t best_cost = INT64_MAX;
    for (int b = 1; b <= a.qh; b++) {
        const int64_t bands = a.n * ((a.qh + b - 1) / b), waves = (bands + slots - 1) / slots;
        const int64_t cost = waves * ((int64_t)(b - 1) * a.psh + a.pkh);
        if (cost < best_cost) best_cost = cost, best = b;
    }
    return best;
}

/* The 8 channels at h[0..3] of pooled column qo along W: the max over its window's columns of the
 * staged conv row buf (STEM_LDO halves a pixel, the group's channels from ch, 16 bytes a load). NaN
 * propagates, as the max pool's kernel does. The window's columns are unrolled (at most
 * STEM_POOL_MAX_KW): the first version looped over them with 4-byte loads, ~75 instructions a slot. */
IG_STEM_HD void stem_pool_cols(const ig_stem_args &a, const __half *buf, int qo, int ch, __half2 (&h)[4])
{
    const int c0 = qo * a.psw - a.ppw;
    /* from -inf, which the window's first column replaces exactly (every window holds one: stem_pool_applies),
     * so no column needs to know whether it is the first */
    const __half2 ninf = __halves2half2(__ushort_as_half(0xfc00), __ushort_as_half(0xfc00));
#pragma unroll
    for (int e = 0; e < 4; e++) h[e] = ninf;
#pragma unroll
    for (int s = 0; s < STEM_POOL_MAX_KW; s++) {
        const int col = c0 + s;
        if (s >= a.pkw || col < 0 || col >= (int)a.ow) continue;
        const uint4 q = *(const uint4 *)(buf + col * STEM_LDO + ch);
        const __half2 v[4] = {*(const __half2 *)&q.x, *(const __half2 *)&q.y, *(const __half2 *)&q.z,
                              *(const __half2 *)&q.w};
#pragma unroll
        for (int e = 0; e < 4; e++) h[e] = __hmax2_nan(h[e], v[e]);
    }
}

/* What conv row cr does in the pooled rows of band [po0, po1), the same for every ring slot: the windows
 * holding it (n of them, at most two: po and po + 1), and for window po + u whether cr is its first row
 * (bit u of first: the slot starts from this row's max) and its last (bit u of last: the pooled value is
 * complete). Two windows hold cr only where it is the last row of one and the first of the next, or at
 * the bottom edge, where a window clipped to its first row ends where the one before does. */
struct stem_role {
    int po, n;
    unsigned first, last;
};
IG_STEM_HD stem_role stem_pool_role(const ig_stem_args &a, int po0, int po1, int cr)
{
    /* pooled rows whose window holds cr: [ceil((cr + pph - pkh + 1) / psh), floor((cr + pph) / psh)]; a
     * negative bound (rounded towards zero) is below po0 anyway */
    const int hi0 = (cr + a.pph) / a.psh, lo0 = (cr + a.pph - a.pkh + a.psh) / a.psh;
    const int lo = lo0 > po0 ? lo0 : po0, hi = hi0 < po1 - 1 ? hi0 : po1 - 1;
    stem_role r = {lo, 0, 0u, 0u};
    for (int po = lo; po <= hi && po <= lo + 1; po++, r.n++) {
        int first, last;
        stem_pool_rows(a, po, first, last);
        r.first |= (unsigned)(cr == first) << r.n;
        r.last |= (unsigned)(cr == last) << r.n;
    }
    return r;
}

/* stem_pool_role for the rows of a band in order, without its divisions (two a row took ~50
 * instructions of every thread): po, the first window not yet complete, moves on as rows pass its last.
 * Start with po = po0 and call it for r0, r0 + 1, ..., r1. */
IG_STEM_HD stem_role stem_pool_role_next(const ig_stem_args &a, int po1, int cr, int &po)
{
    int first, last;
    stem_pool_rows(a, po, first, last);
    if (cr > last && po + 1 < po1) {
        po++;
        stem_pool_rows(a, po, first, last);
    }
    stem_role r = {po, 0, 0u, 0u};
    for (int u = 0; u < 2 && po + u < po1; u++) {
        if (u == 1) stem_pool_rows(a, po + 1, first, last);
        if (cr < first || cr > last) break;
        r.first |= (unsigned)(cr == first) << r.n;
        r.last |= (unsigned)(cr == last) << r.n;
        r.n++;
    }
    return r;
}

/* One ring slot (a pooled column's 8 channels) for a conv row of role r, h the row's max along W: in a
 * window's first row the slot takes h, in its others the max with h; a window at its last row is
 * complete, its value in out[u]. Returns r.last (the windows complete). */
IG_STEM_HD unsigned stem_pool_slot(const stem_role &r, const __half2 (&h)[4], __half2 (&ring)[4], __half2 (&out)[2][4])
{
    /* constant bounds, so that out stays in registers */
#pragma unroll
    for (int u = 0; u < 2; u++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            if (u >= r.n) continue;
            const __half2 v = r.first >> u & 1 ? h[e] : __hmax2_nan(ring[e], h[e]);
            if (r.last >> u & 1)
                out[u][e] = v;
            else
                ring[e] = v;
        }
    return r.last;
}

/* The ring slots thread tid takes: channel group g (channels 8 g ..) of pooled columns qo0, qo0 + step,
 * ... (none when tid is past the groups: `step` groups of ng threads). The same slots for every row, so
 * a slot's ring entry is the thread's own; no divisions in the row loop. */
IG_STEM_HD bool stem_pool_items(int ng, int tid, int &g, int &qo0, int &step)
{
    step = STEM_THREADS / ng;
    g = tid % ng;
    qo0 = tid / ng;
    return tid < step * ng;
}

#endif /* INGOT_STEM_CUH */
