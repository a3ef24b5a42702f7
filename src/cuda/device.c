/*
 * device.c -- the device-memory wrappers every allocation of the library goes through (so tests and
 * `ingot bench` can prove a run allocates nothing), the device probe, and the process-wide switch of
 * fault injection (fault.h: INGOT_CUDA_FAULT, ig__cu_fault_set).
 */
#include "cuda_internal.h"
#include "fault.h"

#include <pthread.h>
#include <stdatomic.h>

static _Atomic uint64_t n_malloc, n_free, live_bytes;

/* Sizes of live allocations, to keep live_bytes exact: a small open-addressing table keyed by pointer.
 * The library makes a handful of allocations (weights, arenas), never many. */
#define LIVE_CAP 1024
static struct {
    void *p;
    size_t bytes;
} live[LIVE_CAP];
static atomic_flag live_lock = ATOMIC_FLAG_INIT;

static void lock(void)
{
    while (atomic_flag_test_and_set_explicit(&live_lock, memory_order_acquire)) {}
}
static void unlock(void) { atomic_flag_clear_explicit(&live_lock, memory_order_release); }

/* ---- fault injection (fault.h) ------------------------------------------------------------------------ */

/* 0: INGOT_CUDA_FAULT not read yet; 1: off (the fast path: one relaxed load per site); 2: armed. */
static atomic_int fault_state;
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER; /* fault_spec and fault_what */
static ig_fault_spec fault_spec;
static ig_fault_counter fault_count;
static char fault_what[256];

static void fault_read_env(void)
{
    const char *v = getenv("INGOT_CUDA_FAULT");
    ig_fault_spec s;
    bool armed = false;
    char why[256];
    if (!ig__fault_parse(v, &s, &armed, why, sizeof why)) {
        ig__log(INGOT_LOG_WARN, "%s; fault injection stays off", why);
        armed = false;
    }
    pthread_mutex_lock(&fault_lock);
    if (armed) fault_spec = s;
    pthread_mutex_unlock(&fault_lock);
    if (armed) ig__log(INGOT_LOG_WARN, "INGOT_CUDA_FAULT=%s: device fault injection is on (tests only)", v);
    atomic_store(&fault_state, armed ? 2 : 1);
}

void ig__cu_fault_set(const ig_fault_spec *s)
{
    pthread_once(&fault_once, fault_read_env); /* a later first site must not re-read the environment */
    pthread_mutex_lock(&fault_lock);
    if (s) fault_spec = *s;
    ig__fault_reset(&fault_count);
    fault_what[0] = '\0';
    pthread_mutex_unlock(&fault_lock);
    atomic_store(&fault_state, s ? 2 : 1);
}

void ig__cu_fault_counts(int64_t *seen, int64_t *fired)
{
    for (int k = 0; seen && k < IG_FAULT_KINDS; k++) seen[k] = atomic_load(&fault_count.seen[k]);
    if (fired) *fired = atomic_load(&fault_count.fired);
}

void ig__cu_fault_last(char *buf, size_t n)
{
    pthread_mutex_lock(&fault_lock);
    snprintf(buf, n, "%s", fault_what);
    pthread_mutex_unlock(&fault_lock);
}

bool ig__cu_fault_armed(void)
{
    int state = atomic_load_explicit(&fault_state, memory_order_relaxed);
    if (state == 0) {
        pthread_once(&fault_once, fault_read_env);
        state = atomic_load(&fault_state);
    }
    return state == 2;
}

int ig__cu_fault_site(int kind, const char *what, const char *file, int line, int64_t *index_out)
{
    if (!ig__cu_fault_armed()) return IG_FAULT_NONE;
    int64_t index = 0;
    int err = ig__fault_tick(&fault_count, &fault_spec, kind, &index);
    if (index_out) *index_out = index;
    if (err != IG_FAULT_NONE) {
        const char *f = file ? strstr(file, "src/") : NULL;
        pthread_mutex_lock(&fault_lock);
        snprintf(fault_what, sizeof fault_what, "%s #%lld (%s): %.120s%s%s", ig__fault_kind_name(kind),
                 (long long)index, ig__fault_err_name(err), what ? what : "?", file ? " at " : "",
                 file ? (f ? f : file) : "");
        if (file) {
            size_t l = strlen(fault_what);
            snprintf(fault_what + l, sizeof fault_what - l, ":%d", line);
        }
        pthread_mutex_unlock(&fault_lock);
    }
    return err;
}

cudaError_t ig__cu_fault_cuda_error(int err, int kind)
{
    switch (err) {
    case IG_FAULT_OOM: return cudaErrorMemoryAllocation;
    case IG_FAULT_FATAL: return cudaErrorLaunchFailure; /* sticky: the context is marked failed */
    case IG_FAULT_FAIL: return kind == IG_FAULT_LAUNCH ? cudaErrorLaunchOutOfResources : cudaErrorNotSupported;
    default: return cudaSuccess;
    }
}

cudaError_t ig__cu_fault_launch(cudaError_t e, const char *file, int line)
{
    if (e != cudaSuccess) return e; /* a real failure: not a site */
    int f = ig__cu_fault_site(IG_FAULT_LAUNCH, "kernel launch", file, line, NULL);
    return f == IG_FAULT_NONE ? cudaSuccess : ig__cu_fault_cuda_error(f, IG_FAULT_LAUNCH);
}

/* ---- device memory ----------------------------------------------------------------------------------- */

cudaError_t ig__cu_malloc(void **p, size_t bytes)
{
    /* an injected failure comes before the call: nothing is allocated, as when cudaMalloc fails */
    int f = IG_FAULT_NONE;
    if (ig__cu_fault_armed()) {
        char what[64];
        snprintf(what, sizeof what, "cudaMalloc of %zu bytes", bytes);
        f = ig__cu_fault_site(IG_FAULT_ALLOC, what, NULL, 0, NULL);
    }
    if (f != IG_FAULT_NONE) {
        *p = NULL;
        return ig__cu_fault_cuda_error(f, IG_FAULT_ALLOC);
    }
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 256);
    if (e != cudaSuccess) {
        *p = NULL;
        return e;
    }
    atomic_fetch_add(&n_malloc, 1);
    atomic_fetch_add(&live_bytes, bytes);
    lock();
    for (size_t i = 0; i < LIVE_CAP; i++) {
        size_t k = (((uintptr_t)*p >> 8) + i) % LIVE_CAP;
        if (!live[k].p) {
            live[k].p = *p;
            live[k].bytes = bytes;
            break;
        }
    }
    unlock();
    return cudaSuccess;
}

cudaError_t ig__cu_free(void *p)
{
    if (!p) return cudaSuccess;
    atomic_fetch_add(&n_free, 1);
    lock();
    for (size_t i = 0; i < LIVE_CAP; i++) {
        size_t k = (((uintptr_t)p >> 8) + i) % LIVE_CAP;
        if (live[k].p == p) {
            atomic_fetch_sub(&live_bytes, live[k].bytes);
            live[k].p = NULL;
            live[k].bytes = 0;
            break;
        }
    }
    unlock();
    return cudaFree(p);
}

void ig__cuda_alloc_counts(uint64_t *nm, uint64_t *nf, uint64_t *lb)
{
    if (nm) *nm = atomic_load(&n_malloc);
    if (nf) *nf = atomic_load(&n_free);
    if (lb) *lb = atomic_load(&live_bytes);
}

ingot_status ig__cuda_probe(ig_err *err)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
        return ig__errf(err, INGOT_ERR_NO_DEVICE, "no usable NVIDIA GPU or driver found (cudaGetDeviceCount: %s: %s)",
                        cudaGetErrorName(e), cudaGetErrorString(e));
    if (n < 1)
        return ig__errf(err, INGOT_ERR_NO_DEVICE, "no usable NVIDIA GPU found: the driver reports no CUDA device");
    struct cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess)
        return ig__errf(err, INGOT_ERR_NO_DEVICE, "no usable GPU: cudaGetDeviceProperties: %s", cudaGetErrorString(e));
    if (prop.major < 7)
        return ig__errf(err, INGOT_ERR_NO_DEVICE, "GPU '%s' has compute capability %d.%d; ingot needs 7.0 or later",
                        prop.name, prop.major, prop.minor);
    return INGOT_OK;
}
