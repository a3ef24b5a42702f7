/*
 * core.h -- what every module of ingot shares: error records, a bump arena, checked arithmetic,
 * half-precision conversion and logging. No CUDA, no ONNX, no graph.
 *
 * Errors travel as (ingot_status, message) in an ig_err the caller owns. A failing function fills it
 * with ig__errf() and returns the status; the API layer copies the message onto the runtime handle.
 */
#ifndef INGOT_CORE_H
#define INGOT_CORE_H

#include "ingot.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define IG_ERRMSG_MAX 1024

typedef struct ig_err {
    ingot_status status;
    char msg[IG_ERRMSG_MAX];
} ig_err;

#if defined(__GNUC__)
#define IG_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define IG_UNUSED       __attribute__((unused))
#else
#define IG_PRINTF(a, b)
#define IG_UNUSED
#endif

/* Record status + formatted message in err (which may be NULL) and return status. The first error
 * wins: a later ig__errf on an err that already holds a failure keeps the original message. */
ingot_status ig__errf(ig_err *err, ingot_status status, const char *fmt, ...) IG_PRINTF(3, 4);
ingot_status ig__verrf(ig_err *err, ingot_status status, const char *fmt, va_list ap);
/* Prefix the message already in err with "prefix: " (used to add node context on the way up). */
void ig__err_prefix(ig_err *err, const char *fmt, ...) IG_PRINTF(2, 3);
void ig__err_clear(ig_err *err);

/* Evaluate a call returning ingot_status; on failure jump to label (one forward cleanup chain). */
#define IG_TRY(st, call, label)           \
    do {                                  \
        (st) = (call);                    \
        if ((st) != INGOT_OK) goto label; \
    } while (0)

/* Internal invariant no input can break: abort with file:line (stays on in release builds). */
#define IG_ASSERT(c)                                       \
    do {                                                   \
        if (!(c)) ig__assert_fail(#c, __FILE__, __LINE__); \
    } while (0)
void ig__assert_fail(const char *expr, const char *file, int line);

/* ---- logging ---- */
void ig__log(ingot_log_level level, const char *fmt, ...) IG_PRINTF(2, 3);

/* ---- host allocation: every allocation goes through here so tests can inject failures ---- */
void *ig__malloc(size_t n);
/* Host allocations made so far, and those not freed yet (ingot_host_alloc_counts). */
void ig__alloc_counts(uint64_t *made, int64_t *live);
void *ig__calloc(size_t n, size_t size);
void *ig__realloc(void *p, size_t n);
void ig__free(void *p);
/* Aligned allocation (align a power of two >= sizeof(void*)); free with ig__free_aligned. */
void *ig__malloc_aligned(size_t n, size_t align);
void ig__free_aligned(void *p);
/* Fault injection for tests: the Nth allocation from now (1-based) and every later one fail; 0 turns
 * it off. Returns the number of allocations made since the last call. The counter is atomic, so
 * allocations from several threads are counted (in whatever order they happen). */
uint64_t ig__alloc_fail_after(uint64_t n);
/* For fuzzers: every single allocation larger than max_bytes fails (0, the default: no limit), so a
 * crafted model's huge tensor is an out-of-memory error, not an allocation the harness counts as a
 * crash. */
void ig__alloc_set_limit(size_t max_bytes);
/* 64-bit FNV-1a of n bytes, continuing from h (IG_FNV_SEED to start): chains over several pieces. */
#define IG_FNV_SEED 1469598103934665603ull

/* Little-endian integers in byte buffers (file formats: engine files, cached kernels). */
static inline void ig__put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void ig__put_le64(uint8_t *p, uint64_t v)
{
    ig__put_le32(p, (uint32_t)v);
    ig__put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline uint32_t ig__get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t ig__get_le64(const uint8_t *p)
{
    return (uint64_t)ig__get_le32(p) | (uint64_t)ig__get_le32(p + 4) << 32;
}
uint64_t ig__fnv1a(uint64_t h, const void *p, size_t n);

/* Milliseconds on a monotonic clock (CLOCK_MONOTONIC): for intervals only. */
double ig__now_ms(void);

/* The cache folder (cache.c): $INGOT_CACHE_DIR, else $XDG_CACHE_HOME/ingot, else ~/.cache/ingot, made
 * when absent; false when none can be had. ig__cache_get reads the regular file `name` there (at most
 * max bytes; NULL when absent, unreadable or larger; the caller frees it with ig__free), ig__cache_put
 * replaces it whole. Callers check what they read: a cache file is a hint, not an input. */
bool ig__cache_dir(char *buf, size_t n);
void *ig__cache_get(const char *name, size_t max, size_t *n);
bool ig__cache_put(const char *name, const void *data, size_t n);

/* The machine's physical memory in bytes (0 when unknown): what no single host tensor can exceed. */
uint64_t ig__host_memory_bytes(void);

/* ---- bump arena: many small allocations freed together ---- */
typedef struct ig_arena_block ig_arena_block;
typedef struct ig_arena {
    ig_arena_block *head;
    size_t used; /* bytes handed out, for reports */
} ig_arena;

void ig__arena_init(ig_arena *a);
void ig__arena_free(ig_arena *a);
/* True when p lies inside one of a's blocks (an ig__graph_clone copies such data, references the rest). */
bool ig__arena_contains(const ig_arena *a, const void *p);
/* Zeroed memory aligned to 16 bytes; NULL on out of memory. */
void *ig__arena_alloc(ig_arena *a, size_t n);
/* Zeroed memory aligned to `align` (a power of two), e.g. 64 for data kernels read. */
void *ig__arena_alloc_aligned(ig_arena *a, size_t n, size_t align);
/* n * size, zeroed; NULL on overflow or out of memory. */
void *ig__arena_array(ig_arena *a, size_t n, size_t size);
char *ig__arena_strndup(ig_arena *a, const char *s, size_t n);
char *ig__arena_strdup(ig_arena *a, const char *s);
char *ig__arena_printf(ig_arena *a, const char *fmt, ...) IG_PRINTF(2, 3);

/* ---- checked arithmetic: return false on overflow ---- */
static inline bool ig__mul_i64(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }
static inline bool ig__add_i64(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline bool ig__mul_size(size_t a, size_t b, size_t *r) { return !__builtin_mul_overflow(a, b, r); }
static inline bool ig__add_size(size_t a, size_t b, size_t *r) { return !__builtin_add_overflow(a, b, r); }

/* ---- unaligned little-endian loads/stores (initializer bytes may sit at any offset in a file) ---- */
static inline int64_t ig__load_i64(const void *p)
{
    int64_t v;
    memcpy(&v, p, 8);
    return v;
}
static inline int32_t ig__load_i32(const void *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline float ig__load_f32(const void *p)
{
    float v;
    memcpy(&v, p, 4);
    return v;
}
static inline double ig__load_f64(const void *p)
{
    double v;
    memcpy(&v, p, 8);
    return v;
}

/* ---- half precision, bit-exact IEEE conversions (round to nearest even) ---- */
float ig__f16_to_f32(uint16_t h);
uint16_t ig__f32_to_f16(float f);
/* n floats (possibly unaligned) to half, rounded to nearest even as ig__f32_to_f16; with saturate,
 * finite values beyond +-65504 become +-65504 (infinities and NaN stay). F16C where the CPU has it:
 * converting a model's weights for the GPU at load is this loop. */
void ig__f32_to_f16_n(const void *src, uint16_t *dst, size_t n, bool saturate);
float ig__bf16_to_f32(uint16_t b);
uint16_t ig__f32_to_bf16(float f);

/* Read element i of a buffer of dtype t as double / int64 (NaN/0 for unsupported types). These are
 * the slow, general accessors for folding and reports, not for kernels. */
double ig__elem_f64(ingot_dtype t, const void *data, int64_t i);
int64_t ig__elem_i64(ingot_dtype t, const void *data, int64_t i);
/* Store v converted to dtype t (saturating casts are the caller's business: this is a C cast). */
void ig__elem_set_f64(ingot_dtype t, void *data, int64_t i, double v);
void ig__elem_set_i64(ingot_dtype t, void *data, int64_t i, int64_t v);

/* The element types ingot stores and computes: float16/32/64, bfloat16, (u)int8..64, bool. */
bool ig__dtype_supported(int64_t t);
bool ig__dtype_is_float(ingot_dtype t);  /* float16, bfloat16, float, double */
bool ig__dtype_is_int(ingot_dtype t);    /* signed or unsigned integers, not bool */
bool ig__dtype_is_signed(ingot_dtype t); /* signed ints and floats */

/* ---- a growable byte buffer with little-endian writers (buf.c) ---- */

typedef struct ig_wbuf {
    uint8_t *p;
    size_t n, cap;
    bool oom; /* sticky: an allocation failed, the contents are incomplete */
} ig_wbuf;

void ig__wbuf_free(ig_wbuf *b);
/* Room for n more bytes at the end; NULL (and oom set) when it cannot grow. */
uint8_t *ig__wbuf_grow(ig_wbuf *b, size_t n);
void ig__wbuf_put(ig_wbuf *b, const void *data, size_t n);
void ig__wbuf_pad(ig_wbuf *b, size_t align); /* zeros up to a multiple of align */
void ig__wbuf_u32(ig_wbuf *b, uint32_t v);
void ig__wbuf_u64(ig_wbuf *b, uint64_t v);
static inline void ig__wbuf_i64(ig_wbuf *b, int64_t v) { ig__wbuf_u64(b, (uint64_t)v); }
void ig__wbuf_f64(ig_wbuf *b, double v);
void ig__wbuf_str(ig_wbuf *b, const char *s); /* u32 length, bytes (NULL writes "") */

#endif /* INGOT_CORE_H */
