/*
 * cpu.h -- shared numeric routines of the CPU reference backend (used by several op kernels).
 */
#ifndef INGOT_CPU_H
#define INGOT_CPU_H

#include "../ops/op.h"

/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major, fp32, threaded over the pool.
 * op(X) is X or X^T per trans_*; lda/ldb/ldc are row strides in elements of the stored matrices.
 * beta == 0 ignores C's prior contents (NaN included). */
void ig__sgemm(struct ig_pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
               int64_t ldc);

#endif /* INGOT_CPU_H */
