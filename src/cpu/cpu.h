/*
 * cpu.h -- shared numeric routines of the CPU reference backend (used by several op kernels).
 */
#ifndef INGOT_CPU_H
#define INGOT_CPU_H

#include "../ops/op.h"

/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major, fp32, threaded over the pool.
 * op(X) is X or X^T per trans_*; lda/ldb/ldc are row strides in elements of the stored matrices.
 * beta == 0 ignores C's prior contents (NaN included). */
void ig__sgemm(struct ig_pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* ig__sgemm with caller-provided workspace (packing buffers) of ws_bytes, any alignment. When ws is
 * NULL or smaller than ig__sgemm_ws_bytes(m, n, k), the workspace is allocated per call (and when that
 * fails, a slower path on a stack buffer computes the same result). The size does not depend on the thread
 * count, so an op's cpu_scratch can ask for it. */
void ig__sgemm_ws(struct ig_pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc, void *ws,
                  size_t ws_bytes);
size_t ig__sgemm_ws_bytes(int64_t m, int64_t n, int64_t k);

/* Packs rows [p0, p0 + kc) x columns [j0, j0 + cols) of op(B) into dst as kc rows of nr floats
 * (entries past `cols` zero). Called concurrently from the pool's threads, for disjoint dst. */
typedef void (*ig_sgemm_pack_b)(void *ctx, int64_t p0, int64_t kc, int64_t j0, int64_t cols, float *dst, int nr);

/* ig__sgemm_ws with op(B) supplied by a packing callback instead of a matrix, so a caller can feed
 * B without materialising it (Conv's implicit im2col), and with an optional per-row bias:
 * C = alpha * op(A) * B + beta * C + row_bias[i] on row i (row_bias NULL: none). Needs
 * ig__sgemm_pack_b_ws_bytes(m, n, k) of workspace (allocated per call when smaller; a slow
 * stack-buffer path when that fails too). */
void ig__sgemm_pack_b(struct ig_pool *pool, bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                      int64_t lda, ig_sgemm_pack_b pack_b, void *ctx, float beta, float *c, int64_t ldc,
                      const float *row_bias, void *ws, size_t ws_bytes);
size_t ig__sgemm_pack_b_ws_bytes(int64_t m, int64_t n, int64_t k);

/* The micro-kernel in use: "avx512", "avx2" or "generic" (picked from the CPU at run time). */
const char *ig__sgemm_isa_name(void);
/* Tests only, not thread-safe: force a kernel (0 generic, 1 AVX2, 2 AVX-512, -1 automatic); an ISA
 * the CPU lacks falls back to the best available. Returns the previous setting. */
int ig__sgemm_force_isa(int isa);
/* Tests only: cap the shared packing buffer at this many floats (0: default) to reach the chunked
 * paths with small matrices. Returns the previous cap. */
int64_t ig__sgemm_set_pack_cap(int64_t floats);

/* Copy dst[i * dst_strides] = src[i * src_strides] for every index i of dims (rank <= 2*IG_MAX_RANK,
 * strides in elements, may be 0 or negative), elements of es bytes; contiguous runs are memcpy'd and
 * transposes tiled. Threaded over pool. The one data-movement primitive of Transpose, Slice, Expand,
 * Tile, Pad, DepthToSpace... (src/ops/movement.c). */
void ig__copy_strided(struct ig_pool *pool, size_t es, int32_t rank, const int64_t *dims, const void *src,
                      const int64_t *src_strides, void *dst, const int64_t *dst_strides);

#endif /* INGOT_CPU_H */
