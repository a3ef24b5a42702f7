/* gemm.c -- fp32 matrix multiply for the CPU backend. STUB: naive, to be replaced by a blocked,
 * threaded kernel. */
#include "cpu.h"

void ig__sgemm(struct ig_pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
               int64_t ldc)
{
    (void)pool;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float s = 0;
            for (int64_t p = 0; p < k; p++)
                s += (trans_a ? a[p * lda + i] : a[i * lda + p]) * (trans_b ? b[j * ldb + p] : b[p * ldb + j]);
            c[i * ldc + j] = alpha * s + (beta == 0 ? 0 : beta * c[i * ldc + j]);
        }
}
