/* clock.c -- the one monotonic clock every timing in ingot reads (builds, tuning, profiles, the CLI). */
#define _POSIX_C_SOURCE 200809L
#include "core.h"

#include <time.h>

double ig__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
