/*
 * host_check.h -- the host kernel tests' checks (test_*_host.cu): CHECK counts every check and prints the
 * first 20 failures only (a broken index formula fails thousands of them); check_aligned counts the
 * vector accesses a kernel makes that are not aligned to their size (the host would not fault where the
 * GPU does) -- include this before the kernel's source and define its hook (IG_VEC_ALIGNED,
 * RS_VEC_ALIGNED) as check_aligned. Included once per program.
 */
#ifndef INGOT_HOST_CHECK_H
#define INGOT_HOST_CHECK_H

#include <stdint.h>
#include <stdio.h>

static int64_t misaligned;
__host__ __device__ inline void check_aligned(const void *p, size_t bytes)
{
#ifndef __CUDA_ARCH__
    misaligned += (uintptr_t)p % bytes != 0;
#endif
}

static int failures, checks;
#define CHECK(cond, ...)                                    \
    do {                                                    \
        checks++;                                           \
        if (!(cond)) {                                      \
            if (failures++ < 20) {                          \
                printf("FAIL %s:%d: ", __FILE__, __LINE__); \
                printf(__VA_ARGS__);                        \
                printf("\n");                               \
            }                                               \
        }                                                   \
    } while (0)

#endif /* INGOT_HOST_CHECK_H */
