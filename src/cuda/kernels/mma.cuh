/*
 * mma.cuh -- the tensor-core instruction the hand-written kernels share (attention.cu, stem.cu).
 *
 * Fragment layouts (PTX ISA, mma.m16n8k16 with .f16 inputs): lane = 4 * g + t; an A fragment holds
 * rows g and g + 8, columns 2t, 2t + 1 (and + 8) as a[0] (row g), a[1] (row g + 8), a[2] (row g, columns
 * + 8), a[3] (row g + 8, columns + 8); a B fragment holds rows (k) 2t, 2t + 1 (b0) and 2t + 8, 2t + 9 (b1)
 * of column (n) g; an accumulator holds rows g and g + 8 (d[0..1], d[2..3]), columns 2t, 2t + 1.
 */
#ifndef INGOT_MMA_CUH
#define INGOT_MMA_CUH

#include <stdint.h>

/* d += a (16x16, row) * b (16x8, col), fp16 inputs, fp32 accumulation */
__device__ __forceinline__ void mma16816(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Four 8x8 matrices of halves from shared memory: lane l gives the address of row l % 8 of matrix l / 8
 * (16 bytes, 16-byte aligned); r[m] of lane l holds matrix m's row l / 4, columns 2 (l % 4) and + 1, which
 * is a B fragment's register when the rows are its columns (n) and k runs along them. */
__device__ __forceinline__ void ldsm_x4(uint32_t r[4], const void *smem_row)
{
    const unsigned addr = (unsigned)__cvta_generic_to_shared(smem_row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
/* The same, each matrix transposed: r[m] of lane l holds column l / 4 of matrix m, rows 2 (l % 4) and + 1. */
__device__ __forceinline__ void ldsm_x4_trans(uint32_t r[4], const void *smem_row)
{
    const unsigned addr = (unsigned)__cvta_generic_to_shared(smem_row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

#endif /* INGOT_MMA_CUH */
