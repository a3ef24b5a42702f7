/*
 * cuda_backend.h -- the CUDA backend as the API layer sees it: engines and contexts over an ig_graph,
 * with no CUDA type in sight (streams travel as void *). Only compiled with INGOT_HAVE_CUDA.
 *
 * Lifecycle: ig__cuda_engine_create (handles nothing device-side beyond the weight upload, which
 * happens once, at the first lowering with concrete shapes) -> ig__cuda_ctx_create (library handles,
 * streams; and, when the graph's shapes are concrete, the first instance: plan, the one arena
 * allocation, tuning) -> ig__cuda_ctx_select for each shape in use (one instance per input shape,
 * each with its own captured CUDA Graph) -> ig__cuda_ctx_enqueue / ig__cuda_ctx_run_host.
 */
#ifndef INGOT_CUDA_BACKEND_H
#define INGOT_CUDA_BACKEND_H

#include "../ir/ir.h"

typedef struct ig_cuda_engine ig_cuda_engine;
typedef struct ig_cuda_ctx ig_cuda_ctx;

/* A usable device: INGOT_OK, or INGOT_ERR_NO_DEVICE with the reason. */
ingot_status ig__cuda_probe(ig_err *err);

/* Every non-folded node of inferred graph g can run on the device (the support table of
 * src/cuda/lower_table.c); else INGOT_ERR_MODEL_UNSUPPORTED_OP listing every node that cannot, with why. */
ingot_status ig__cuda_check_graph(const ig_graph *g, ig_err *err);

/* The workspace budget when the caller gives none: 4 GiB, or 1/16 of the device's memory when that is
 * less -- large enough not to starve any convolution (ResNet-50's stem at batch 256 needs ~1 GiB for
 * its fast algorithm), a function of the GPU alone so that stored choices stay valid across runs. */
size_t ig__cuda_default_workspace(int device);

typedef struct ig_cuda_engine_options {
    ingot_dtype precision;  /* FLOAT or FLOAT16 */
    size_t workspace_limit; /* the workspace budget: the most scratch one convolution or matrix product may
                               use (0: the default, ig__cuda_default_workspace). Steps run one at a time
                               and their workspaces share the arena's bytes, so this bounds the account */
    size_t mem_limit;       /* a hard cap on weights + one context's arena (activations, workspaces,
                               constants); 0: none. Algorithms with smaller workspaces are chosen to fit */
    int device;             /* CUDA device index */
    int graphs;             /* capture each shape's program into a CUDA Graph */
    int tune;               /* time algorithm candidates (0: the libraries' heuristic choice) */
    int deterministic;      /* choices independent of timing (the heuristics' first), deterministic
                               cuDNN algorithms only: every build on one machine makes the same engine */
    int sync_debug;         /* synchronise after every step, so a fault names its node */
    int nhwc;               /* channels-last convolutions */
    int gelu_epilogue;      /* GELU in cuBLASLt's epilogue (its tanh form), fp16 only */
    int attention;          /* the flash-attention kernel where it applies */
    int attention_kernel;   /* 0 by size; 1 wide, 2 narrow, 3 split (tests) */
} ig_cuda_engine_options;

/* Lower g (an instance of the engine's graph inferred at representative concrete shapes) once: every
 * node is checked and the weights are uploaded into one allocation. Contexts lower the other shapes;
 * a constant the engine does not hold then lives in the context's arena. g is not kept. */
ingot_status ig__cuda_engine_create(const ig_graph *g, const ig_cuda_engine_options *o, ig_cuda_engine **out,
                                    ig_err *err);
void ig__cuda_engine_destroy(ig_cuda_engine *e);
/* The algorithm choices its contexts made so far (timed once per problem, shared by all contexts), as
 * bytes for an engine file or timing cache, and back (choices read are checked before use). */
ingot_status ig__cuda_engine_algos_save(ig_cuda_engine *e, ig_wbuf *out, ig_err *err);
ingot_status ig__cuda_engine_algos_load(ig_cuda_engine *e, const void *data, size_t n, const char *what, ig_err *err);
int32_t ig__cuda_engine_algos_count(ig_cuda_engine *e);

/* What the engine file records of the build machine. */
typedef struct ig_cuda_fingerprint {
    char device_name[128];
    int sm_major, sm_minor;
    int driver, runtime; /* CUDA versions as 1000 * major + 10 * minor */
    size_t cudnn, cublaslt;
} ig_cuda_fingerprint;
ingot_status ig__cuda_fingerprint(int device, ig_cuda_fingerprint *fp, ig_err *err);

ingot_status ig__cuda_ctx_create(ig_cuda_engine *e, const ig_graph *g, ig_cuda_ctx **out, ig_err *err);
void ig__cuda_ctx_destroy(ig_cuda_ctx *c);
/* Make the instance for g's current shapes current (preparing it the first time: lowering, plan,
 * arena, tuning). Cheap when it already exists. */
ingot_status ig__cuda_ctx_select(ig_cuda_ctx *c, const ig_graph *g, ig_err *err);
/* True when the current instance was prepared for exactly these input dims (n_inputs graph inputs). */
bool ig__cuda_ctx_matches(const ig_cuda_ctx *c, const int32_t *ranks, const int64_t *const *dims, int32_t n);
/* Run the current instance asynchronously on `stream` (a cudaStream_t): inputs[i] / outputs[j] are device
 * pointers to graph input i / output j in the model's dtypes, dense. No allocation, free or host sync. */
ingot_status ig__cuda_ctx_enqueue(ig_cuda_ctx *c, const void *const *inputs, void *const *outputs, void *stream,
                                  ig_err *err);
/* Host inputs in, host outputs kept by the context (ig__cuda_ctx_host_output); synchronises. */
ingot_status ig__cuda_ctx_run_host(ig_cuda_ctx *c, const void *const *inputs, ig_err *err);
/* Output j of the last host run: bytes owned by the context, dims of the current instance. */
const void *ig__cuda_ctx_host_output(const ig_cuda_ctx *c, int32_t j, int32_t *rank, int64_t *dims, ingot_dtype *dtype,
                                     size_t *bytes);
/* Dims/dtype of graph output j in the current instance. */
ingot_status ig__cuda_ctx_output_shape(const ig_cuda_ctx *c, int32_t j, int32_t *rank, int64_t *dims,
                                       ingot_dtype *dtype, size_t *bytes);
bool ig__cuda_ctx_failed(const ig_cuda_ctx *c);
void ig__cuda_ctx_set_graphs(ig_cuda_ctx *c, int enabled);

/* Numbers for `ingot bench` and tests (see ingot_cuda_stats in ingot_cuda.h, which mirrors this). */
typedef struct ig_cuda_stats {
    size_t weights_bytes;       /* the engine's allocation */
    size_t arena_bytes;         /* the context's allocation: activations + workspaces */
    size_t workspace_bytes;     /* the largest per-step workspace planned inside the arena */
    size_t activation_lb_bytes; /* lower bound of the activation packing (max live bytes) */
    size_t no_reuse_bytes;      /* every buffer its own bytes */
    size_t const_bytes;         /* instance constants inside the arena */
    int64_t n_steps;            /* kernels/library calls per inference */
    int64_t n_nodes_fused;      /* graph nodes absorbed into other steps */
    int64_t n_instances;        /* shapes prepared */
    int32_t graph_enabled;
    int32_t graph_captured;   /* the current instance replays a CUDA Graph */
    int64_t graph_updates;    /* kernel-node parameter updates (pointer changes) */
    int64_t graph_captures;   /* captures + instantiations made */
    size_t graph_bytes;       /* device memory the current instance's executable graph took */
    char graph_fallback[256]; /* why the current instance runs without a graph ("" if it does) */
    double prepare_ms;        /* last instance preparation (lowering, plan, tuning) */
    double tune_ms;           /* of which algorithm timing */
} ig_cuda_stats;

void ig__cuda_ctx_stats(const ig_cuda_ctx *c, ig_cuda_stats *out);
/* The algorithm of each step of the current instance (cuDNN's or cuBLASLt's, "" for ingot's own kernels),
 * up to max; returns the count, -1 on error. */
#define IG_CU_ALGO_DESC 48
int64_t ig__cuda_ctx_step_algos(ig_cuda_ctx *c, char (*algo)[IG_CU_ALGO_DESC], int64_t max, ig_err *err);
/* Library-made device allocations so far (all contexts and engines of the process). */
void ig__cuda_alloc_counts(uint64_t *n_malloc, uint64_t *n_free, uint64_t *live_bytes);
/* A per-step timing profile of the current instance (ingot_cuda_context_profile: a graph replay with an
 * event after each step, else the stream): writes up to max entries of (label, milliseconds) into the
 * arrays; returns the count. */
int64_t ig__cuda_ctx_profile(ig_cuda_ctx *c, const void *const *inputs, void *const *outputs, void *stream, int64_t max,
                             char (*labels)[96], double *ms, ig_err *err);

#endif /* INGOT_CUDA_BACKEND_H */
