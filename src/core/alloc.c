/* alloc.c -- host allocation with fault injection, and the bump arena the IR lives in. */
#define _POSIX_C_SOURCE 200809L
#include "core.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Atomics, because contexts of one engine allocate from several threads at once (relaxed: the count
 * orders nothing else; a test setting the failure point does so before it starts any thread). */
static _Atomic uint64_t alloc_count;
static _Atomic uint64_t alloc_fail_at; /* 0: never fail */

uint64_t ig__alloc_fail_after(uint64_t n)
{
    uint64_t made = atomic_exchange_explicit(&alloc_count, 0, memory_order_relaxed);
    atomic_store_explicit(&alloc_fail_at, n, memory_order_relaxed);
    return made;
}

uint64_t ig__host_memory_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return 0;
    uint64_t b;
    return __builtin_mul_overflow((uint64_t)pages, (uint64_t)page, &b) ? UINT64_MAX : b;
}

static _Atomic size_t alloc_max; /* 0: no limit */

/* Every host allocation the library makes and the ones not freed yet: a soak compares them before and
 * after its runs to tell the library's host memory from the CUDA driver's and the C library's. */
static _Atomic uint64_t alloc_made;
static _Atomic int64_t alloc_live;

static void *counted(void *p)
{
    if (p) {
        atomic_fetch_add_explicit(&alloc_made, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&alloc_live, 1, memory_order_relaxed);
    }
    return p;
}

static void uncounted(const void *p)
{
    if (p) atomic_fetch_sub_explicit(&alloc_live, 1, memory_order_relaxed);
}

void ig__alloc_counts(uint64_t *made, int64_t *live)
{
    if (made) *made = atomic_load_explicit(&alloc_made, memory_order_relaxed);
    if (live) *live = atomic_load_explicit(&alloc_live, memory_order_relaxed);
}

void ig__alloc_set_limit(size_t max_bytes) { atomic_store_explicit(&alloc_max, max_bytes, memory_order_relaxed); }

static bool alloc_should_fail(size_t n)
{
    uint64_t k = atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed) + 1;
    uint64_t at = atomic_load_explicit(&alloc_fail_at, memory_order_relaxed);
    size_t max = atomic_load_explicit(&alloc_max, memory_order_relaxed);
    return (at && k >= at) || (max && n > max);
}

void *ig__malloc(size_t n)
{
    if (alloc_should_fail(n)) return NULL;
    return counted(malloc(n ? n : 1));
}

void *ig__calloc(size_t n, size_t size)
{
    size_t total;
    if (alloc_should_fail(__builtin_mul_overflow(n, size, &total) ? SIZE_MAX : total)) return NULL;
    return counted(calloc(n ? n : 1, size ? size : 1));
}

void *ig__realloc(void *p, size_t n)
{
    if (alloc_should_fail(n)) return NULL;
    void *q = realloc(p, n ? n : 1);
    return p ? q : counted(q); /* a new block only when there was none */
}

void ig__free(void *p)
{
    uncounted(p);
    free(p);
}

void *ig__malloc_aligned(size_t n, size_t align)
{
    if (alloc_should_fail(n)) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, align, n ? n : 1) != 0) return NULL;
    return counted(p);
}

void ig__free_aligned(void *p)
{
    uncounted(p);
    free(p);
}

/* Arena: a list of blocks; large requests get a block of their own. */
struct ig_arena_block {
    ig_arena_block *next;
    size_t cap, off;
    _Alignas(16) unsigned char data[];
};

#define ARENA_BLOCK 65536

void ig__arena_init(ig_arena *a) { memset(a, 0, sizeof *a); }

void ig__arena_free(ig_arena *a)
{
    ig_arena_block *b = a->head;
    while (b) {
        ig_arena_block *n = b->next;
        ig__free(b);
        b = n;
    }
    a->head = NULL;
    a->used = 0;
}

bool ig__arena_contains(const ig_arena *a, const void *p)
{
    /* integers, not pointers: comparing pointers into different objects is undefined in C */
    uintptr_t q = (uintptr_t)p;
    for (const ig_arena_block *b = a->head; b && p; b = b->next) {
        uintptr_t lo = (uintptr_t)b->data;
        if (q >= lo && q - lo < b->cap) return true;
    }
    return false;
}

void *ig__arena_alloc(ig_arena *a, size_t n)
{
    size_t need = (n + 15) & ~(size_t)15;
    if (need < n) return NULL;
    ig_arena_block *b = a->head;
    if (!b || b->cap - b->off < need) {
        size_t cap = need > ARENA_BLOCK / 4 ? need : ARENA_BLOCK;
        size_t total;
        if (!ig__add_size(sizeof(ig_arena_block), cap, &total)) return NULL;
        ig_arena_block *nb = ig__malloc(total);
        if (!nb) return NULL;
        nb->cap = cap;
        nb->off = 0;
        if (b && cap != ARENA_BLOCK) {
            /* a dedicated big block goes behind the current one so the current keeps filling */
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        b = nb;
    }
    void *p = b->data + b->off;
    b->off += need;
    a->used += need;
    memset(p, 0, n);
    return p;
}

void *ig__arena_alloc_aligned(ig_arena *a, size_t n, size_t align)
{
    size_t total;
    if (!ig__add_size(n, align, &total)) return NULL;
    unsigned char *p = ig__arena_alloc(a, total);
    if (!p) return NULL;
    return p + (align - ((uintptr_t)p % align)) % align;
}

void *ig__arena_array(ig_arena *a, size_t n, size_t size)
{
    size_t total;
    if (!ig__mul_size(n, size, &total)) return NULL;
    return ig__arena_alloc(a, total);
}

char *ig__arena_strndup(ig_arena *a, const char *s, size_t n)
{
    char *p = ig__arena_alloc(a, n + 1);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *ig__arena_strdup(ig_arena *a, const char *s) { return ig__arena_strndup(a, s, strlen(s)); }

char *ig__arena_printf(ig_arena *a, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = n < 0 ? NULL : ig__arena_alloc(a, (size_t)n + 1);
    if (p) vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}
