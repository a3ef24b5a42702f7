/*
 * fuzz_util.h -- what the fuzz targets share: a directory holding the external-data file that crafted
 * models may point at, and one run of a context whose outputs are read back (so a kernel writing
 * out of bounds or leaving garbage is touched by the sanitizers).
 */
#ifndef INGOT_FUZZ_UTIL_H
#define INGOT_FUZZ_UTIL_H

/* mkdtemp: included first by every target, before any system header */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "ingot.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* mkdtemp(tmpl) into dir (at least strlen(tmpl) + 1 bytes) with a 4 KiB w.bin for external data. */
static inline void fuzz_make_base_dir(char *dir, size_t n, const char *tmpl)
{
    snprintf(dir, n, "%s", tmpl);
    if (!mkdtemp(dir)) abort();
    char p[128];
    snprintf(p, sizeof p, "%s/w.bin", dir);
    FILE *f = fopen(p, "wb");
    if (!f) abort();
    for (int i = 0; i < 4096; i++) fputc(i & 0xff, f);
    fclose(f);
}

/* Run c once on in[0..n) and read every output; a failure without a message is a finding (abort). */
static inline void fuzz_run_and_read(ingot_context *c, const ingot_tensor *in, int64_t n)
{
    if (ingot_context_run(c, in, n) == INGOT_OK) {
        ingot_tensor o;
        for (int64_t k = 0; ingot_context_get_output(c, k, &o) == INGOT_OK; k++) {
            volatile uint8_t sink = 0;
            for (size_t b = 0; b < o.bytes; b += 64) sink ^= ((const uint8_t *)o.data)[b];
            (void)sink;
        }
    } else if (!ingot_context_errmsg(c)[0]) {
        abort(); /* every failure carries a message */
    }
}

#endif /* INGOT_FUZZ_UTIL_H */
