/*
 * sm_count.cuh -- the device's multiprocessor count, read once per process (per translation unit: each
 * kernel file that sizes its grid by it includes this), for kernels that launch one wave of blocks or
 * split work by what the GPU holds at once.
 */
#ifndef INGOT_SM_COUNT_CUH
#define INGOT_SM_COUNT_CUH

#include <cuda_runtime_api.h>

/* 132 (an H100 or H200) when the query fails; no error is left behind for the launch check to report. */
static inline int ig_sm_count(void)
{
    static int sms = 0;
    int v = __atomic_load_n(&sms, __ATOMIC_RELAXED);
    if (v == 0) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || v <= 0) {
            cudaGetLastError();
            v = 132;
        }
        __atomic_store_n(&sms, v, __ATOMIC_RELAXED);
    }
    return v;
}

#endif /* INGOT_SM_COUNT_CUH */
