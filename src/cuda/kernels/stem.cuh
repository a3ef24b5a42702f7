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

#include <stdint.h>

#define STEM_BM     128 /* output pixels per tile (of one output row) */
#define STEM_BN     64  /* output channels per block */
#define STEM_WARPS  4   /* 32 pixels each */
#define STEM_MAX_RS 52  /* filter taps: k = 4 * R * S fits STEM_MAX_KP */
#define STEM_MAX_KP 208 /* the reduction, padded to a multiple of 16 */
#define STEM_MAX_R  7
#define STEM_MAX_S  7
#define STEM_MAX_SW 2
#define STEM_MAX_PW ((STEM_BM - 1) * STEM_MAX_SW + STEM_MAX_S) /* patch columns */
#define STEM_LDW    (STEM_MAX_KP + 8) /* halves per staged filter: 8 rows of B fragments hit distinct banks */
#define STEM_LDO    (STEM_BN + 8)     /* halves per staged output pixel */

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

#endif /* INGOT_STEM_CUH */
