/*
 * fault.h -- device fault injection, for the tests of every error path of the CUDA backend (issue 13).
 *
 * A switch, read once from the environment at the first site or set by a test:
 *
 *     INGOT_CUDA_FAULT=KIND:N[+][:ERR]
 *
 *   KIND  alloc   a device allocation (ig__cu_malloc: weights, arenas)
 *         call    a CUDA runtime call checked through IG_CU (copies, synchronisations, events, graph
 *                 launches and updates, cudaSetDevice...)
 *         launch  the check after one of our kernel launches (exec.c's launch_step)
 *         lib     a cuDNN or cuBLASLt call checked through IG_CUDNN / IG_CUBLAS
 *         any     any of the above: N counts them all, in the order they come
 *         count   fail nothing; count the sites (what a sweep does first)
 *   N     the site to fail, 1-based, counted from the process start (or the last ig__cu_fault_set);
 *         N+ fails that site and every later one of the kind (a device that stays out of memory)
 *   ERR   oom (cudaErrorMemoryAllocation, CUDNN/CUBLAS allocation failures), fatal (cudaErrorLaunchFailure,
 *         the libraries' EXECUTION_FAILED: a sticky device fault), fail (a plain error of the call).
 *         Default: alloc oom, call fatal, launch fail, lib fail.
 *
 * Where the failure is made (why these sites are safe to fake): an allocation fails *before* cudaMalloc,
 * exactly as a real one. The other sites fail *after* the call succeeded, in the converters of check.c
 * (and for launches in exec.c): the library sees the error a real failure would return, while the device
 * did the work. That is only consistent for calls whose success leaves nothing a failure would not: calls
 * that create an object through an out-parameter (...Create..., cudaMallocHost, cudaGraphInstantiate) or
 * change a stream's mode (cudaStreamBeginCapture) are therefore not sites -- a faked failure of those
 * would leak the object or leave the stream capturing, which no real failure does. A faked sticky fault
 * poisons nothing: the library marks its context failed, as for a real one, and a fresh engine and
 * context work again (after a real one the whole process would have to restart).
 *
 * The parser and the counter are plain C with no CUDA type, so tests/unit/test_fault_host.c checks them
 * on machines without a GPU; device.c keeps the process-wide state and check.c / exec.c call the sites.
 */
#ifndef INGOT_CUDA_FAULT_H
#define INGOT_CUDA_FAULT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum ig_fault_kind {
    IG_FAULT_ALLOC = 0,
    IG_FAULT_CALL = 1,
    IG_FAULT_LAUNCH = 2,
    IG_FAULT_LIB = 3,
    IG_FAULT_KINDS = 4,
    IG_FAULT_ANY = 4,    /* spec only: the Nth site of any kind */
    IG_FAULT_COUNT = -1, /* spec only: count, fail nothing */
} ig_fault_kind;

typedef enum ig_fault_err {
    IG_FAULT_NONE = 0, /* no failure here (what a site hears when it is not the one) */
    IG_FAULT_OOM = 1,
    IG_FAULT_FATAL = 2,
    IG_FAULT_FAIL = 3,
} ig_fault_err;

typedef struct ig_fault_spec {
    int kind;    /* ig_fault_kind, IG_FAULT_ANY or IG_FAULT_COUNT */
    int64_t n;   /* 1-based site index (ignored for COUNT) */
    bool from_n; /* N+: this site and every later one */
    int err;     /* ig_fault_err; IG_FAULT_NONE picks the kind's default */
} ig_fault_spec;

static inline const char *ig__fault_kind_name(int kind)
{
    switch (kind) {
    case IG_FAULT_ALLOC: return "alloc";
    case IG_FAULT_CALL: return "call";
    case IG_FAULT_LAUNCH: return "launch";
    case IG_FAULT_LIB: return "lib";
    case IG_FAULT_ANY: return "any";
    case IG_FAULT_COUNT: return "count";
    default: return "?";
    }
}

static inline const char *ig__fault_err_name(int err)
{
    switch (err) {
    case IG_FAULT_OOM: return "oom";
    case IG_FAULT_FATAL: return "fatal";
    case IG_FAULT_FAIL: return "fail";
    default: return "none";
    }
}

/* The error a site of `kind` fails with under spec s. */
static inline int ig__fault_err_for(const ig_fault_spec *s, int kind)
{
    if (s->err != IG_FAULT_NONE) return s->err;
    switch (kind) {
    case IG_FAULT_ALLOC: return IG_FAULT_OOM;
    case IG_FAULT_CALL: return IG_FAULT_FATAL;
    default: return IG_FAULT_FAIL;
    }
}

/* Parse "KIND:N[+][:ERR]" (or "count", or "" / "0" / "off": nothing armed, *armed false) into *s. False
 * with the reason in why (n bytes) when the text is malformed; s is then untouched. */
static inline bool ig__fault_parse(const char *text, ig_fault_spec *s, bool *armed, char *why, size_t n)
{
    static const char *const kinds[] = {"alloc", "call", "launch", "lib", "any"};
    static const char *const errs[] = {"oom", "fatal", "fail"};
    *armed = false;
    if (!text || !text[0] || !strcmp(text, "0") || !strcmp(text, "off")) return true;
    if (!strcmp(text, "count")) {
        *s = (ig_fault_spec){IG_FAULT_COUNT, 0, false, IG_FAULT_NONE};
        *armed = true;
        return true;
    }
    const char *colon = strchr(text, ':');
    size_t klen = colon ? (size_t)(colon - text) : strlen(text);
    int kind = -2;
    for (int k = 0; k < 5; k++)
        if (strlen(kinds[k]) == klen && !strncmp(text, kinds[k], klen)) kind = k;
    if (kind == -2) {
        snprintf(why, n, "INGOT_CUDA_FAULT=%.60s: the kind must be alloc, call, launch, lib, any or count", text);
        return false;
    }
    if (!colon || colon[1] < '0' || colon[1] > '9') {
        snprintf(why, n, "INGOT_CUDA_FAULT=%.60s: a site number (1, 2, ...) must follow '%.*s:'", text, (int)klen,
                 text);
        return false;
    }
    char *end = NULL;
    long long v = strtoll(colon + 1, &end, 10);
    if (v < 1 || v > INT64_MAX / 2) {
        snprintf(why, n, "INGOT_CUDA_FAULT=%.60s: the site number counts from 1", text);
        return false;
    }
    bool from_n = false;
    if (*end == '+') {
        from_n = true;
        end++;
    }
    int err = IG_FAULT_NONE;
    if (*end == ':') {
        for (int e = 0; e < 3; e++)
            if (!strcmp(end + 1, errs[e])) err = e + 1;
        if (err == IG_FAULT_NONE) {
            snprintf(why, n, "INGOT_CUDA_FAULT=%.60s: the error must be oom, fatal or fail", text);
            return false;
        }
    } else if (*end) {
        snprintf(why, n, "INGOT_CUDA_FAULT=%.60s: unexpected '%.20s' after the site number", text, end);
        return false;
    }
    *s = (ig_fault_spec){kind, (int64_t)v, from_n, err};
    *armed = true;
    return true;
}

/* Site counts: per kind, in all, and the failures made. Atomic: contexts run on many threads. */
typedef struct ig_fault_counter {
    _Atomic int64_t seen[IG_FAULT_KINDS];
    _Atomic int64_t total;
    _Atomic int64_t fired;
} ig_fault_counter;

static inline void ig__fault_reset(ig_fault_counter *c)
{
    for (int k = 0; k < IG_FAULT_KINDS; k++) atomic_store(&c->seen[k], 0);
    atomic_store(&c->total, 0);
    atomic_store(&c->fired, 0);
}

/* Count one site of `kind` (0 <= kind < IG_FAULT_KINDS) under spec s: the error it must fail with
 * (IG_FAULT_NONE: none), and its index among the sites the spec counts in *index (may be NULL). */
static inline int ig__fault_tick(ig_fault_counter *c, const ig_fault_spec *s, int kind, int64_t *index)
{
    int64_t i_kind = atomic_fetch_add(&c->seen[kind], 1) + 1;
    int64_t i_all = atomic_fetch_add(&c->total, 1) + 1;
    int64_t i = s->kind == IG_FAULT_ANY ? i_all : i_kind;
    if (index) *index = i;
    if (s->kind == IG_FAULT_COUNT || (s->kind != IG_FAULT_ANY && s->kind != kind)) return IG_FAULT_NONE;
    if (i != s->n && !(s->from_n && i > s->n)) return IG_FAULT_NONE;
    atomic_fetch_add(&c->fired, 1);
    return ig__fault_err_for(s, kind);
}

/* ---- the process-wide switch (device.c; CUDA builds only) --------------------------------------------- */

/* Arm the switch with *s (NULL: off, counting nothing) and zero the counts; overrides INGOT_CUDA_FAULT.
 * Call it while no context runs. */
void ig__cu_fault_set(const ig_fault_spec *s);
/* Sites seen per kind (seen[IG_FAULT_KINDS]) and failures made since the last set; any pointer may be NULL. */
void ig__cu_fault_counts(int64_t *seen, int64_t *fired);
/* The last failure made: "call #12 (fatal): cudaStreamSynchronize at src/cuda/exec.c:1033" ("" if none). */
void ig__cu_fault_last(char *buf, size_t n);
/* False when the switch is off: sites may skip their bookkeeping (one relaxed load). */
bool ig__cu_fault_armed(void);
/* A site: count it and say how it must fail (IG_FAULT_NONE almost always). what names the call, file:line
 * where (file may be NULL); *index (may be NULL) gets the site's number as the spec counts it. */
int ig__cu_fault_site(int kind, const char *what, const char *file, int line, int64_t *index);

#ifdef CUDART_VERSION /* the device side: sites that hold a cudaError_t */
/* The status of a kernel launch check after injection: e itself, or the injected error when e is
 * cudaSuccess and this is the launch site to fail. */
cudaError_t ig__cu_fault_launch(cudaError_t e, const char *file, int line);
/* The cudaError_t an injected error class stands for at a site of `kind`. */
cudaError_t ig__cu_fault_cuda_error(int err, int kind);
#endif

#endif /* INGOT_CUDA_FAULT_H */
