/*
 * ingot_cuda.h -- the CUDA side of ingot's API: device pointers and the caller's stream. Optional: only
 * in builds with the CUDA backend (INGOT_HAVE_CUDA), and the only ingot header with CUDA types.
 *
 * Usage, fp16 on the GPU with inputs and outputs already in device memory:
 *
 *     ingot_build_options bo = ingot_build_options_default();
 *     bo.backend = INGOT_BACKEND_CUDA;
 *     bo.precision = INGOT_DTYPE_FLOAT16;          // fp16 storage, fp32 accumulation
 *     ingot_model_set_batch(m, 128);
 *     ingot_model_infer(m);
 *     ingot_engine_build(rt, m, &bo, &e);          // weights converted once, one device allocation
 *     ingot_context_create(e, NULL, &c);           // plan, ONE device allocation, algorithms tuned
 *     ingot_tensor in = {"input", INGOT_DTYPE_FLOAT, 4, {128, 3, 224, 224}, d_in, bytes_in};
 *     ingot_tensor out = {"output", INGOT_DTYPE_FLOAT, 0, {0}, d_out, bytes_out};
 *     for (;;)
 *         ingot_cuda_context_enqueue(c, &in, 1, &out, 1, stream);   // async; a CUDA Graph replay
 *
 * Contract of a run (ingot_cuda_context_enqueue): no device allocation, no free, no host
 * synchronisation; the work is enqueued on `stream` and the call returns. The first run of an input
 * shape runs step by step and captures a CUDA Graph; later runs replay it; new input/output pointers
 * patch the graph's copy nodes in place. A new input shape prepares a new instance first (that one call
 * plans, may grow the context's allocation, tunes and synchronises).
 *
 * Thread-safety: as ingot.h (different contexts of one engine may run on different threads). Failures of
 * the ingot_cuda_context_* calls are reported on the context (ingot_context_errmsg). Buffers passed in
 * must stay valid until the stream has run the work.
 */
#ifndef INGOT_CUDA_H
#define INGOT_CUDA_H

#include "ingot.h"

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when a usable CUDA device and driver are present; otherwise 0 and, when why is not NULL, the
 * reason in why (NUL-terminated, at most n bytes). */
INGOT_API int ingot_cuda_available(char *why, size_t n);

/* Run one inference of a CUDA context on `stream`. inputs: every graph input, data a device pointer
 * (matched by name; a NULL name takes the input at that position), dtype and dims as for
 * ingot_context_run. outputs: n_outputs destinations (by name, or position when the name is NULL), data
 * a device pointer to `bytes` bytes at least; dims, rank, dtype and bytes are written. Errors:
 * INGOT_ERR_INVALID_ARG (not a CUDA context, a buffer too small), INGOT_ERR_INPUT, and device errors
 * naming the node; INGOT_ERR_DEVICE_FATAL marks the context failed. */
INGOT_API ingot_status ingot_cuda_context_enqueue(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs,
                                                  ingot_tensor *outputs, int64_t n_outputs, cudaStream_t stream);

/* Shape, dtype and byte size of output i for the input shapes the context last prepared (data NULL). */
INGOT_API ingot_status ingot_cuda_context_output_info(const ingot_context *c, int64_t i, ingot_tensor *out);

/* 0 turns CUDA Graphs off for this context (every run launches its steps one by one); 1 (default) on. */
INGOT_API ingot_status ingot_cuda_context_set_graphs(ingot_context *c, int enabled);

typedef struct ingot_cuda_stats {
    uint32_t struct_size;                /* sizeof(ingot_cuda_stats), set by the caller */
    size_t weights_bytes;                /* the engine's one allocation */
    size_t arena_bytes;                  /* the context's one allocation: activations + workspaces (+ constants) */
    size_t workspace_bytes;              /* largest per-step library workspace planned inside the arena */
    size_t activation_lower_bound_bytes; /* max over steps of live bytes: no packing can use less */
    size_t no_reuse_bytes;               /* every buffer its own bytes */
    size_t constant_bytes;               /* shape-dependent constants kept in the arena */
    int64_t n_steps;                     /* kernels and library calls per inference */
    int64_t n_nodes_fused;               /* graph nodes absorbed into other steps */
    int64_t n_instances;                 /* input shapes prepared */
    int32_t graph_enabled;
    int32_t graph_captured;   /* the current shape replays a CUDA Graph */
    int64_t graph_updates;    /* kernel-node updates made for new input/output pointers */
    int64_t graph_captures;   /* graphs captured and instantiated */
    size_t graph_bytes;       /* device memory the current shape's executable graph took (free memory
                                 before and after instantiation and upload; the driver's, not ingot's) */
    char graph_fallback[256]; /* why the current shape runs without a graph ("" when it does not) */
    double prepare_ms;        /* preparing the current shape: lowering, plan, tuning */
    double tune_ms;           /* of which timing cuDNN/cuBLASLt algorithms */
} ingot_cuda_stats;

INGOT_API ingot_status ingot_cuda_context_get_stats(const ingot_context *c, ingot_cuda_stats *out);

/* Device allocations and frees the library has made so far in this process, and the bytes still held
 * (every cudaMalloc/cudaFree of ingot goes through one counting wrapper). */
INGOT_API void ingot_cuda_alloc_counts(uint64_t *n_malloc, uint64_t *n_free, uint64_t *live_bytes);

/* Time every step and report up to max: labels[k] "kind  'node' (Op)" and ms[k], the median of 5 passes
 * after 20 ms of warm-up. The steps, with an event after each, are captured as one CUDA Graph and
 * replayed on `stream` (device time only; each event adds ~2 us to its step); where they do not capture
 * (graphs off), they run on the stream, host work inside each interval. Synchronises `stream`. Returns
 * the number of steps reported, -1 on error. */
INGOT_API int64_t ingot_cuda_context_profile(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs,
                                             ingot_tensor *outputs, int64_t n_outputs, cudaStream_t stream, int64_t max,
                                             char (*labels)[96], double *ms);

/* ingot_context_profile_steps on a CUDA context, inputs and outputs in device memory: every step timed
 * as ingot_cuda_context_profile times it, joined with the node it computes and that step's bytes and
 * FLOPs (its device tensors, in the engine's precision).
 * Writes up to max steps and their number into *n_steps. Errors on the context. */
INGOT_API ingot_status ingot_cuda_context_profile_steps(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs,
                                                        ingot_tensor *outputs, int64_t n_outputs, cudaStream_t stream,
                                                        ingot_step_profile *steps, int64_t max, int64_t *n_steps);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_CUDA_H */
