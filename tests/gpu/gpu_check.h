/*
 * gpu_check.h -- what the GPU test programs share: PASS/FAIL lines counted by CHECK, and a clock.
 * Included once per program (the counters are its own).
 */
#ifndef INGOT_TESTS_GPU_CHECK_H
#define INGOT_TESTS_GPU_CHECK_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>
#include <time.h>

static int n_pass, n_fail;

/* One line "PASS ..." or "FAIL ..." (printf arguments after cond), flushed, and counted. */
#define CHECK(cond, ...)                         \
    do {                                         \
        if (cond)                                \
            n_pass++;                            \
        else                                     \
            n_fail++;                            \
        printf("%s ", (cond) ? "PASS" : "FAIL"); \
        printf(__VA_ARGS__);                     \
        printf("\n");                            \
        fflush(stdout);                          \
    } while (0)

/* Seconds on the monotonic clock. */
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif /* INGOT_TESTS_GPU_CHECK_H */
