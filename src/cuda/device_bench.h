/*
 * device_bench.h -- the GPU side of the diagnostics (docs/DIAGNOSE.md), with no CUDA type in sight:
 * measuring the device's ceilings once (`ingot device`), the memory other processes hold, and the
 * per-step costs of a CUDA program (which node each step computes, the bytes its device tensors move,
 * the activation bytes live while it runs). Only compiled with INGOT_HAVE_CUDA.
 */
#ifndef INGOT_CUDA_DEVICE_BENCH_H
#define INGOT_CUDA_DEVICE_BENCH_H

#include "../ir/ir.h"

typedef struct ig_cuda_bench {
    char name[128];
    int sm_major, sm_minor, n_sms;
    int driver, runtime;                          /* 1000 * major + 10 * minor */
    double copy_gbs;                              /* device-to-device copy, GB/s of bytes read + written */
    double fp32_tflops, fp16_tflops, bf16_tflops; /* cuBLASLt GEMM, fp32 accumulation, TF32 off */
    double launch_us;                             /* one tiny kernel on a stream, back to back */
    double graph_node_us;                         /* one kernel node of a replayed CUDA Graph */
    double malloc_us[3];                          /* cudaMalloc + cudaFree of 1 MiB, 64 MiB, 1 GiB; -1: no room */
    size_t l2_bytes, mem_total, mem_free;
} ig_cuda_bench;

/* Name, architecture, driver/runtime versions and memory of device `device`, without measuring (what
 * the cache is keyed by). INGOT_ERR_NO_DEVICE when there is none. */
ingot_status ig__cuda_device_identity(int device, ig_cuda_bench *out, ig_err *err);
/* Measure everything in ig_cuda_bench on `device` (a few seconds). Every CUDA and cuBLASLt status is
 * checked; the first failure is returned, naming the call. */
ingot_status ig__cuda_device_bench(int device, ig_cuda_bench *out, ig_err *err);
/* Device memory used by other processes, from NVML (loaded at run time); -1 when NVML is not there. */
double ig__cuda_other_process_bytes(int device);

/* One step of the program the CUDA backend runs for a graph, as the diagnostics need it. */
typedef struct ig_cuda_step_cost {
    int32_t node;      /* graph node, -1 for steps the lowering added */
    char kind[16];     /* "gemm", "ew", ... */
    char what[48];     /* what an added step does ("input copy"), "" for a node's own step */
    double bytes_read; /* every distinct element of its input tensors (weights included) */
    double bytes_written;
    size_t live_bytes; /* activation bytes live at this step (the arena's lifetimes) */
} ig_cuda_step_cost;

/* Lower g (concrete shapes) exactly as a CUDA engine with these options does, and describe each step
 * of the program: *out (ig__free it) of *n steps, in execution order. */
ingot_status ig__cuda_step_costs(const ig_graph *g, ingot_dtype precision, int nhwc, int gelu_epilogue, int attention,
                                 int attention_kernel, ig_cuda_step_cost **out, int64_t *n, ig_err *err);

#endif /* INGOT_CUDA_DEVICE_BENCH_H */
