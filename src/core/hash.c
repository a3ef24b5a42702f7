/* hash.c -- 64-bit FNV-1a, the one hash of ingot's caches and lookup tables (keys, file names, shapes). */
#include "core.h"

uint64_t ig__fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}
