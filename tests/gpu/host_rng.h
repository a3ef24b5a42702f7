/*
 * host_rng.h -- the host kernel tests' random numbers (test_*_host.cu): xorshift64 from a fixed seed, so
 * every run draws the same problems and a failure reproduces.
 */
#ifndef INGOT_HOST_RNG_H
#define INGOT_HOST_RNG_H

#include <stdint.h>

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 16);
}
/* uniform in [lo, hi] */
static int64_t rint_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint32_t)(hi - lo + 1)); }

#endif /* INGOT_HOST_RNG_H */
