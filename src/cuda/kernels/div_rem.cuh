/*
 * div_rem.cuh -- the index math's division: a kernel that turns a flat index into coordinates divides
 * once per dim, and a 64-bit division is ~70 instructions where a 32-bit one is a handful. Indices and
 * extents nearly always fit in 31 bits, so the division is done in 32 bits when both do (ResNet-50's
 * global pooling made three 64-bit divisions a thread before its first load; DeepLabV3's resize rows one
 * per dim for each 16-byte store).
 */
#ifndef INGOT_DIV_REM_CUH
#define INGOT_DIV_REM_CUH

#include <stdint.h>

/* o / d, and o % d into rem (o >= 0, d > 0). */
__host__ __device__ __forceinline__ int64_t ig_div_rem(int64_t o, int64_t d, int64_t &rem)
{
    if (((uint64_t)o | (uint64_t)d) < 0x80000000ull) {
        const unsigned q = (unsigned)o / (unsigned)d;
        rem = o - (int64_t)q * d;
        return q;
    }
    const int64_t q = o / d;
    rem = o - q * d;
    return q;
}

#endif /* INGOT_DIV_REM_CUH */
