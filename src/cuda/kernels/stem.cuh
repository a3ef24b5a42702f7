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
 * channels; the results go through shared memory again so that rows of the output are written in
 * 16-byte pieces.
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

/* Whether the kernel takes this convolution (the lowering has made its padding symmetric). */
static inline __host__ __device__ bool stem_applies(const ig_stem_args &a)
{
    return a.c >= 1 && a.c <= 4 && a.k >= 8 && a.k % 8 == 0 && a.r >= 1 && a.r <= STEM_MAX_R && a.s >= 1 &&
           a.s <= STEM_MAX_S && a.r * a.s <= STEM_MAX_RS && a.sh >= 1 && a.sw >= 1 && a.sw <= STEM_MAX_SW &&
           a.ph >= 0 && a.pw >= 0 && a.n > 0 && a.oh > 0 && a.ow > 0 && a.ys[1] == 1;
}

/* The reduction's length: 4 * R * S rounded up to 16. */
IG_STEM_HD int stem_kp(const ig_stem_args &a) { return (4 * a.r * a.s + 15) / 16 * 16; }

/* Tiles: one per STEM_BM pixels of each output row. */
IG_STEM_HD int64_t stem_segs(const ig_stem_args &a) { return (a.ow + STEM_BM - 1) / STEM_BM; }
IG_STEM_HD int64_t stem_tiles(const ig_stem_args &a) { return a.n * a.oh * stem_segs(a); }

/* Tile t: image n, output row oh, first pixel ow0, np pixels. */
IG_STEM_HD void stem_tile(const ig_stem_args &a, int64_t t, int64_t &n, int64_t &oh, int64_t &ow0, int &np)
{
    const int64_t segs = stem_segs(a);
    ow0 = t % segs * STEM_BM;
    t /= segs;
    oh = t % a.oh;
    n = t / a.oh;
    np = (int)(a.ow - ow0 < STEM_BM ? a.ow - ow0 : STEM_BM);
}

/* The patch of a tile of np pixels: R rows of pw(np) columns of 4 channels, row-major. */
IG_STEM_HD int stem_pw(const ig_stem_args &a, int np) { return (np - 1) * a.sw + a.s; }

/* Patch pixel i (< R * pw): row i / pw, column i % pw; the input offset of its channel 0 (channel c at
 * + c * xs[1]), -1 where it is padding. Its 4 channels (zeros past C) are slots 4i .. 4i + 3. */
IG_STEM_HD int64_t stem_patch_src(const ig_stem_args &a, int64_t n, int64_t oh, int64_t ow0, int pw, int i)
{
    const int r = i / pw, col = i - r * pw;
    const int64_t ih = oh * a.sh - a.ph + r, iw = ow0 * a.sw - a.pw + col;
    if (ih < 0 || ih >= a.h || iw < 0 || iw >= a.w) return -1;
    return n * a.xs[0] + ih * a.xs[2] + iw * a.xs[3];
}

/* Where tap q = r * S + s starts in the patch (halves); taps past R * S (the padding of the reduction,
 * whose filter is zero) read the last real one, so every product is of finite inputs. */
IG_STEM_HD int stem_tap(const ig_stem_args &a, int pw, int q)
{
    const int last = a.r * a.s - 1;
    q = q < last ? q : last;
    return (q / a.s * pw + q % a.s) * 4;
}

/* Staged filter element i (< STEM_BN * KP) of channel tile n0: its slot and its source in the KRSC
 * filter, -1 for a zero (a channel past K, a tap past R * S, a channel of input past C). */
IG_STEM_HD int64_t stem_filter_src(const ig_stem_args &a, int n0, int i, int &slot)
{
    const int kp = stem_kp(a), n = i / kp, k = i % kp, q = k / 4, c = k % 4;
    slot = n * STEM_LDW + k;
    if (n0 + n >= a.k || q >= a.r * a.s || c >= a.c) return -1;
    return ((int64_t)(n0 + n) * a.r * a.s + q) * a.c + c;
}

/* The half offset in the patch of the A element (pixel p of the tile, reduction index k): tap k / 4,
 * channel k % 4 (an even k starts a 32-bit pair). The kernel reads stem_tap from a table it fills per
 * tile (a division by S per element cost more than the products). */
IG_STEM_HD int stem_a_at(const ig_stem_args &a, int pw, int p, int k)
{
    return stem_tap(a, pw, k / 4) + p * a.sw * 4 + k % 4;
}

#endif /* INGOT_STEM_CUH */
