/* record.c -- the little-endian records of the engine file's metadata sections (efile.h). */
#include "efile.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- reading ---- */

void ig__rbuf_init(ig_rbuf *r, const void *p, size_t n, const char *section, ig_err *err)
{
    r->p = p;
    r->n = n;
    r->pos = 0;
    r->section = section;
    r->err = err;
    r->failed = false;
}

bool ig__rbuf_fail(ig_rbuf *r, const char *field, const char *fmt, ...)
{
    if (r->failed) return false;
    r->failed = true;
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    ig__errf(r->err, INGOT_ERR_ENGINE_FILE, "engine file, section %s, %s (at byte %zu of the section): %s", r->section,
             field, r->pos, why);
    return false;
}

static const uint8_t *take(ig_rbuf *r, size_t n, const char *field)
{
    if (r->failed) return NULL;
    if (n > r->n - r->pos) {
        ig__rbuf_fail(r, field, "needs %zu bytes, the section has %zu left", n, r->n - r->pos);
        return NULL;
    }
    const uint8_t *at = r->p + r->pos;
    r->pos += n;
    return at;
}

uint32_t ig__rbuf_u32(ig_rbuf *r, const char *field)
{
    const uint8_t *x = take(r, 4, field);
    return x ? (uint32_t)x[0] | (uint32_t)x[1] << 8 | (uint32_t)x[2] << 16 | (uint32_t)x[3] << 24 : 0;
}

uint64_t ig__rbuf_u64(ig_rbuf *r, const char *field)
{
    uint64_t lo = ig__rbuf_u32(r, field), hi = ig__rbuf_u32(r, field);
    return lo | hi << 32;
}

int64_t ig__rbuf_i64(ig_rbuf *r, const char *field) { return (int64_t)ig__rbuf_u64(r, field); }

double ig__rbuf_f64(ig_rbuf *r, const char *field)
{
    uint64_t u = ig__rbuf_u64(r, field);
    double v;
    memcpy(&v, &u, 8);
    return v;
}

uint32_t ig__rbuf_range(ig_rbuf *r, const char *field, uint32_t lo, uint32_t hi)
{
    uint32_t v = ig__rbuf_u32(r, field);
    if (!r->failed && (v < lo || v > hi)) {
        r->pos -= 4;
        ig__rbuf_fail(r, field, "%" PRIu32 " is outside [%" PRIu32 ", %" PRIu32 "]", v, lo, hi);
        return lo;
    }
    return r->failed ? lo : v;
}

uint32_t ig__rbuf_count(ig_rbuf *r, const char *field, size_t min_bytes, uint32_t max)
{
    uint32_t v = ig__rbuf_u32(r, field);
    if (r->failed) return 0;
    size_t left = r->n - r->pos;
    if (v > max || (min_bytes && v > left / min_bytes)) {
        r->pos -= 4;
        ig__rbuf_fail(r, field, "count %" PRIu32 " is more than the %zu bytes left can hold (at most %" PRIu32 ")", v,
                      left, max);
        return 0;
    }
    return v;
}

const char *ig__rbuf_str(ig_rbuf *r, const char *field, size_t max_len, ig_arena *arena)
{
    uint32_t n = ig__rbuf_u32(r, field);
    if (r->failed) return "";
    if (n > max_len) {
        r->pos -= 4;
        ig__rbuf_fail(r, field, "string of %" PRIu32 " bytes, at most %zu allowed", n, max_len);
        return "";
    }
    const uint8_t *at = take(r, n, field);
    if (!at) return "";
    if (memchr(at, 0, n)) {
        r->pos -= n;
        ig__rbuf_fail(r, field, "the string holds a NUL byte");
        return "";
    }
    char *s = ig__arena_strndup(arena, (const char *)at, n);
    if (!s) {
        r->failed = true;
        ig__errf(r->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory reading the engine file");
        return "";
    }
    return s;
}

bool ig__rbuf_done(ig_rbuf *r)
{
    if (r->failed) return false;
    if (r->pos != r->n) return ig__rbuf_fail(r, "end", "%zu bytes follow the last record", r->n - r->pos);
    return true;
}
