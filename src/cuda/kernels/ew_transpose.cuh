/*
 * ew_transpose.cuh -- the index math of the transposing copy (elementwise.cu's ew_transpose_kernel), host
 * and device, so tests/gpu/test_ew_transpose_host.cu runs it without a GPU.
 *
 * The copy it serves: a program that only loads its one input (a copy or a dtype conversion) over
 * iteration dims [outer..., C, P] where the input runs along P (stride 1) and the output along C, in
 * dense [P, C] blocks -- an NCHW image written channels-last, C = 3. The generic kernel then stores 2
 * bytes every 6 (ResNet-50's input copy at batch 32: 54 us, 536 GB/s on the H200). Here a block stages
 * a tile of C x TR_TP elements in shared memory: it reads C rows of TR_TP contiguous inputs and writes
 * TR_TP * C contiguous outputs. A first version moved one element per thread and step and reached 590 GB/s
 * (one 4-byte load in flight per thread: latency-bound); here every thread issues all its loads first,
 * 2 * C runs of TR_VEC inputs (16-byte loads of fp32), then stores runs of TR_OUT_RUN outputs (16 bytes
 * of fp16).
 */
#ifndef INGOT_EW_TRANSPOSE_CUH
#define INGOT_EW_TRANSPOSE_CUH

#include "kernels.h"
#include "ingot.h"

#include <stdint.h>

#define TR_THREADS 128                       /* threads per block */
#define TR_VEC     4                         /* positions per load run of a thread */
#define TR_TP      (2 * TR_VEC * TR_THREADS) /* positions along P per tile: two runs per thread per row */
#define TR_MAX_C   8                         /* C is at most this: the tile is C rows of TR_TP */
#define TR_LD      (TR_TP + 4)               /* a row's length in the tile, 16-byte aligned */
#define TR_OUT_RUN 8                         /* outputs per store run of a thread */

#ifndef IG_TR_HD
#define IG_TR_HD __host__ __device__ __forceinline__
#endif

static inline __host__ __device__ bool tr_float_type(int32_t dt)
{
    return dt == INGOT_DTYPE_FLOAT || dt == INGOT_DTYPE_FLOAT16 || dt == INGOT_DTYPE_BFLOAT16;
}

/* The input's stride along iteration dim d (a contiguous input: dense in iteration order). */
IG_TR_HD int64_t tr_in_stride(const ig_ew_args &a, int d)
{
    if (a.in_kind[0] != 1) return a.in_strides[0][d];
    int64_t s = 1;
    for (int k = a.rank - 1; k > d; k--) s *= a.dims[k];
    return s;
}

/* Whether the transposing copy takes program a. */
static inline __host__ __device__ bool tr_applies(const ig_ew_args &a)
{
    if (a.int_math || a.n_in != 1 || a.n_ops != 1 || a.ops[0].code != IG_EW_LOAD || a.ops[0].a != 0 ||
        a.result != a.ops[0].dst || a.rank < 2 || a.rank > IG_EW_MAX_RANK || a.in_kind[0] == 2 || a.out_contig)
        return false;
    if (!tr_float_type(a.in_dtype[0]) || !tr_float_type(a.out_dtype)) return false;
    const int r = a.rank;
    const int64_t C = a.dims[r - 2], P = a.dims[r - 1];
    if (C < 2 || C > TR_MAX_C || P < 1 || tr_in_stride(a, r - 1) != 1) return false;
    if (a.out_strides[r - 2] != 1 || a.out_strides[r - 1] != C) return false;
    int64_t blocks = (P + TR_TP - 1) / TR_TP;
    for (int d = 0; d < r - 2; d++) blocks *= a.dims[d];
    return blocks < ((int64_t)1 << 31);
}

static inline __host__ __device__ int64_t tr_blocks(const ig_ew_args &a)
{
    int64_t b = (a.dims[a.rank - 1] + TR_TP - 1) / TR_TP;
    for (int d = 0; d < a.rank - 2; d++) b *= a.dims[d];
    return b;
}

/* Block blk's tile: where its input rows and its output block start, its first position p0, and the
 * input's stride from one row (along C) to the next. */
IG_TR_HD void tr_tile(const ig_ew_args &a, int64_t blk, int64_t &in_base, int64_t &out_base, int64_t &p0, int64_t &in_c)
{
    in_c = tr_in_stride(a, a.rank - 2);
    const int r = a.rank;
    const int64_t tiles = (a.dims[r - 1] + TR_TP - 1) / TR_TP;
    int64_t o = blk / tiles;
    p0 = (blk - o * tiles) * TR_TP;
    in_base = out_base = 0;
    for (int d = r - 3; d >= 0; d--) {
        const int64_t c = o % a.dims[d];
        o /= a.dims[d];
        in_base += c * tr_in_stride(a, d);
        out_base += c * a.out_strides[d];
    }
}

/* Load run h (0 or 1) of thread t in row c: up to TR_VEC positions from j = h * TR_TP / 2 + TR_VEC * t of
 * the tile; its input offset and first tile slot. The number of positions inside P (0 past it). */
IG_TR_HD int tr_load_run(const ig_ew_args &a, int64_t in_base, int64_t in_c, int64_t p0, int t, int c, int h,
                         int64_t &src, int &slot)
{
    const int j = h * (TR_TP / 2) + TR_VEC * t;
    const int64_t left = a.dims[a.rank - 1] - p0 - j;
    src = in_base + c * in_c + p0 + j;
    slot = c * TR_LD + j;
    return left <= 0 ? 0 : left < TR_VEC ? (int)left : TR_VEC;
}

/* The outputs a tile writes: its positions inside P times C. */
IG_TR_HD int tr_tile_outputs(const ig_ew_args &a, int64_t p0)
{
    const int64_t left = a.dims[a.rank - 1] - p0;
    return (int)((left < TR_TP ? left : TR_TP) * a.dims[a.rank - 2]);
}

/* Output i of the tile (0 .. tr_tile_outputs - 1) is position i / C, channel i % C: its tile slot. Its
 * offset is out_base + p0 * C + i (the tile's outputs are contiguous). */
IG_TR_HD int tr_slot(int C, int i)
{
    const int j = i / C;
    return (i - j * C) * TR_LD + j;
}

/* ---- the register form: C of 3 or 4, no tile --------------------------------------------------------
 * An RGB image's input copy ([N, 3, H*W] fp32 in, [N, H*W, 3] fp16 out) through the tile reached 54% of
 * copy bandwidth (99 us at ResNet-50's batch 256 on the H200): the shared-memory round trip, a barrier and
 * a division by C per output. With C this small a thread can hold whole pixels: it loads TR8_PIX
 * positions of each of the C rows (16-byte loads) and stores its TR8_PIX * C outputs, which are
 * contiguous, in 16-byte pieces. It needs P and every outer stride to be multiples of TR8_PIX (so each
 * thread's runs start 16-byte aligned when the buffers are; the kernel checks the pointers and falls back
 * to scalar accesses). */
#define TR8_PIX 8 /* positions per thread */

/* Threads: one per TR8_PIX positions of each outer index. */
IG_TR_HD int64_t tr8_threads(const ig_ew_args &a)
{
    int64_t t = a.dims[a.rank - 1] / TR8_PIX;
    for (int d = 0; d < a.rank - 2; d++) t *= a.dims[d];
    return t;
}

static inline __host__ __device__ bool tr8_applies(const ig_ew_args &a)
{
    if (!tr_applies(a)) return false;
    const int r = a.rank;
    const int64_t C = a.dims[r - 2], P = a.dims[r - 1];
    if ((C != 3 && C != 4) || P % TR8_PIX || tr_in_stride(a, r - 2) % TR8_PIX) return false;
    for (int d = 0; d < r - 2; d++)
        if (tr_in_stride(a, d) % TR8_PIX || a.out_strides[d] % TR8_PIX || a.dims[d] >= INT32_MAX) return false;
    return P < INT32_MAX && tr8_threads(a) < INT32_MAX;
}

/* Thread t's positions: the input offset of its first position in row 0 (row c at + c * in_c), and the
 * output offset of its first output (its TR8_PIX * C outputs are contiguous from there). 32-bit
 * divisions: tr8_applies bounds the dims and the thread count. */
IG_TR_HD void tr8_group(const ig_ew_args &a, unsigned t, int64_t &in_off, int64_t &in_c, int64_t &out_off)
{
    const int r = a.rank;
    const unsigned groups = (unsigned)(a.dims[r - 1] / TR8_PIX);
    unsigned o = t / groups;
    const int64_t p = (int64_t)(t - o * groups) * TR8_PIX;
    in_off = p;
    out_off = p * a.dims[r - 2];
    for (int d = r - 3; d >= 0; d--) {
        const unsigned n = (unsigned)a.dims[d], c = o % n;
        o /= n;
        in_off += (int64_t)c * tr_in_stride(a, d);
        out_off += (int64_t)c * a.out_strides[d];
    }
    in_c = tr_in_stride(a, r - 2);
}

#endif /* INGOT_EW_TRANSPOSE_CUH */
