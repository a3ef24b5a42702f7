/* buf.c -- ig_wbuf, a growable byte buffer with little-endian writers (core.h). */
#include "core.h"

#include <string.h>

void ig__wbuf_free(ig_wbuf *b)
{
    ig__free(b->p);
    memset(b, 0, sizeof *b);
}

uint8_t *ig__wbuf_grow(ig_wbuf *b, size_t n)
{
    if (b->oom) return NULL;
    size_t need;
    if (!ig__add_size(b->n, n, &need)) goto oom;
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < need) {
            if (cap > SIZE_MAX / 2) goto oom;
            cap *= 2;
        }
        uint8_t *np = ig__realloc(b->p, cap);
        if (!np) goto oom;
        b->p = np;
        b->cap = cap;
    }
    uint8_t *at = b->p + b->n;
    b->n = need;
    return at;
oom:
    b->oom = true;
    return NULL;
}

void ig__wbuf_put(ig_wbuf *b, const void *data, size_t n)
{
    uint8_t *at = ig__wbuf_grow(b, n);
    if (at && n) memcpy(at, data, n);
}

void ig__wbuf_pad(ig_wbuf *b, size_t align)
{
    size_t r = b->n % align;
    if (!r) return;
    uint8_t *at = ig__wbuf_grow(b, align - r);
    if (at) memset(at, 0, align - r);
}

void ig__wbuf_u32(ig_wbuf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    ig__wbuf_put(b, x, 4);
}

void ig__wbuf_u64(ig_wbuf *b, uint64_t v)
{
    ig__wbuf_u32(b, (uint32_t)v);
    ig__wbuf_u32(b, (uint32_t)(v >> 32));
}

void ig__wbuf_f64(ig_wbuf *b, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    ig__wbuf_u64(b, u);
}

void ig__wbuf_str(ig_wbuf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    ig__wbuf_u32(b, (uint32_t)n);
    ig__wbuf_put(b, s, n);
}
