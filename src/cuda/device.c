/*
 * device.c -- the device-memory wrappers every allocation of the library goes through (so tests and
 * `ingot bench` can prove a run allocates nothing), and the device probe.
 */
#include "cuda_internal.h"

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

cudaError_t ig__cu_malloc(void **p, size_t bytes)
{
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
