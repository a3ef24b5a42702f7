/*
 * ingot.h -- the public C API of ingot, an ONNX inference engine.
 *
 * Usage, from ONNX file to outputs (examples/classify.c is a complete program):
 *
 *     ingot_runtime *rt = NULL;
 *     ingot_model *m = NULL;
 *     ingot_engine *e = NULL;
 *     ingot_context *c = NULL;
 *     if (ingot_runtime_create(&rt) != INGOT_OK) return 1;
 *     ingot_load_options lo = ingot_load_options_default();
 *     ingot_build_options bo = ingot_build_options_default();   // backend AUTO: CUDA if usable, else CPU
 *     if (ingot_model_load(rt, "resnet50.onnx", &lo, &m) != INGOT_OK ||
 *         ingot_model_set_batch(m, 8) != INGOT_OK ||             // bind the symbolic batch dim
 *         ingot_engine_build(rt, m, &bo, &e) != INGOT_OK ||      // infer, optimize, plan
 *         ingot_context_create(e, NULL, &c) != INGOT_OK) {       // the memory runs use
 *         fprintf(stderr, "%s\n", ingot_runtime_errmsg(rt));     // names node, tensor or byte offset
 *         goto out;
 *     }
 *     ingot_tensor in = {"input", INGOT_DTYPE_FLOAT, 4, {8, 3, 224, 224}, pixels, 8 * 3 * 224 * 224 * 4};
 *     ingot_tensor out;
 *     if (ingot_context_run(c, &in, 1) != INGOT_OK ||           // inputs matched by name
 *         ingot_context_get_output(c, 0, &out) != INGOT_OK)     // owned by c until its next run
 *         fprintf(stderr, "%s\n", ingot_context_errmsg(c));      // a context reports on itself
 *     else
 *         printf("%s: %lld x %lld, first %g\n", out.name, (long long)out.dims[0], (long long)out.dims[1],
 *                ((const float *)out.data)[0]);
 * out:
 *     ingot_context_destroy(c);                                 // contexts before their engine
 *     ingot_engine_destroy(e);
 *     ingot_model_destroy(m);                                   // may also go right after the build
 *     ingot_runtime_destroy(rt);
 *
 * ingot_engine_save writes a built engine to a file and ingot_engine_load reads it back without
 * importing or optimizing again. Without an engine, a model can be inspected: ingot_model_infer,
 * ingot_model_node_info (per-node shapes and FLOPs), ingot_model_describe_json.
 *
 * Conventions: every fallible call returns ingot_status (INGOT_OK == 0) and writes objects through its
 * last out-parameter; the detailed message is on the runtime handle (ingot_runtime_errmsg) for
 * runtime, model and engine calls and for ingot_context_create, and on the context
 * (ingot_context_errmsg) for calls on a context. Objects are opaque; *_destroy accepts NULL. int64_t
 * for dims and counts, size_t for bytes. Enums have explicit values and only grow. The library never
 * exits or aborts on bad input, I/O or memory errors.
 *
 * Thread-safety: a runtime, its models and the *building* of engines (ingot_engine_build,
 * ingot_engine_set_input_profile) are used by one thread at a time. A built engine is immutable: any
 * number of threads may create contexts of it (ingot_context_create) and run *different* contexts at
 * once, e.g. one context per worker thread; running a context writes nothing the engine, the runtime
 * or other contexts own. One context is used by one thread at a time. An engine is destroyed after
 * all its contexts. ingot_log_set may be called from any thread.
 */
#ifndef INGOT_H
#define INGOT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(INGOT_SHARED)
#define INGOT_API __declspec(dllexport)
#elif defined(__GNUC__)
#define INGOT_API __attribute__((visibility("default")))
#else
#define INGOT_API
#endif

#define INGOT_VERSION_MAJOR 0
#define INGOT_VERSION_MINOR 1
#define INGOT_VERSION_PATCH 0

/* Maximum tensor rank ingot handles; a model with a larger rank is rejected with a message. */
#define INGOT_MAX_RANK 8

/* ---- status codes: one list, expanded into the enum and the name/description tables ---------- */
#define INGOT_STATUS_MAP(X)                                                    \
    X(OK, 0, "success")                                                        \
    X(ERR_INVALID_ARG, 1, "invalid argument")                                  \
    X(ERR_OUT_OF_MEMORY, 2, "out of host memory")                              \
    X(ERR_IO, 3, "file I/O error")                                             \
    X(ERR_MODEL_PARSE, 4, "malformed model file")                              \
    X(ERR_MODEL_INVALID, 5, "invalid model graph")                             \
    X(ERR_MODEL_UNSUPPORTED_OP, 6, "unsupported operator, attribute or dtype") \
    X(ERR_MODEL_SHAPE, 7, "shape or type inference failed")                    \
    X(ERR_INPUT, 8, "bad inference input")                                     \
    X(ERR_DEVICE_OOM, 9, "out of device memory")                               \
    X(ERR_NO_DEVICE, 10, "no usable GPU or driver")                            \
    X(ERR_CUDA, 11, "CUDA runtime error")                                      \
    X(ERR_CUDNN, 12, "cuDNN error")                                            \
    X(ERR_CUBLAS, 13, "cuBLAS error")                                          \
    X(ERR_NVRTC, 14, "NVRTC error")                                            \
    X(ERR_DEVICE_FATAL, 15, "unrecoverable device fault")                      \
    X(ERR_INTERNAL, 16, "internal error")                                      \
    X(ERR_ENGINE_FILE, 17, "malformed engine file")                            \
    X(ERR_ENGINE_MISMATCH, 18, "engine file built for another device or software version")

typedef enum ingot_status {
#define INGOT_X_(name, val, desc) INGOT_##name = val,
    INGOT_STATUS_MAP(INGOT_X_)
#undef INGOT_X_
        INGOT_STATUS_COUNT
} ingot_status;

/* "INGOT_ERR_MODEL_PARSE" for INGOT_ERR_MODEL_PARSE; "INGOT_UNKNOWN" for values outside the list. */
INGOT_API const char *ingot_status_name(ingot_status s);
/* A short English description: "malformed model file". */
INGOT_API const char *ingot_status_str(ingot_status s);

/* ---- element types: values equal ONNX TensorProto.DataType ------------------------------------ */
typedef enum ingot_dtype {
    INGOT_DTYPE_UNDEFINED = 0,
    INGOT_DTYPE_FLOAT = 1,
    INGOT_DTYPE_UINT8 = 2,
    INGOT_DTYPE_INT8 = 3,
    INGOT_DTYPE_UINT16 = 4,
    INGOT_DTYPE_INT16 = 5,
    INGOT_DTYPE_INT32 = 6,
    INGOT_DTYPE_INT64 = 7,
    INGOT_DTYPE_STRING = 8,
    INGOT_DTYPE_BOOL = 9,
    INGOT_DTYPE_FLOAT16 = 10,
    INGOT_DTYPE_DOUBLE = 11,
    INGOT_DTYPE_UINT32 = 12,
    INGOT_DTYPE_UINT64 = 13,
    INGOT_DTYPE_COMPLEX64 = 14,
    INGOT_DTYPE_COMPLEX128 = 15,
    INGOT_DTYPE_BFLOAT16 = 16,
    INGOT_DTYPE_COUNT
} ingot_dtype;

/* "float32", "int64", ...; "undefined" for anything unknown. */
INGOT_API const char *ingot_dtype_name(ingot_dtype t);
/* Bytes per element, 0 for UNDEFINED, STRING and unknown values. */
INGOT_API size_t ingot_dtype_size(ingot_dtype t);

/* ---- logging ------------------------------------------------------------------------------------ */
typedef enum ingot_log_level {
    INGOT_LOG_ERROR = 0,
    INGOT_LOG_WARN = 1,
    INGOT_LOG_INFO = 2,
    INGOT_LOG_DEBUG = 3,
} ingot_log_level;

typedef void (*ingot_log_fn)(ingot_log_level level, const char *msg, void *user);
/* Route library log lines to fn (NULL: drop them; the default writes warnings and errors to stderr).
 * Logging never changes what a call returns. Process-wide and thread-safe: fn may be called from any
 * thread that runs a context, concurrently; a line being logged while ingot_log_set runs may still go
 * to the previous callback. */
INGOT_API void ingot_log_set(ingot_log_fn fn, void *user);

/* ---- runtime: owns the error message and library-wide state ------------------------------------ */
typedef struct ingot_runtime ingot_runtime;

/* Create a runtime. The only call that can fail without a handle to carry a message:
 * INGOT_ERR_INVALID_ARG (out is NULL) or INGOT_ERR_OUT_OF_MEMORY. */
INGOT_API ingot_status ingot_runtime_create(ingot_runtime **out);
INGOT_API void ingot_runtime_destroy(ingot_runtime *rt);
/* The message of the last failed runtime, model or engine call made with this runtime, or of
 * ingot_context_create ("" if none; calls on a context report on the context, ingot_context_errmsg).
 * Valid until the next call on the runtime. */
INGOT_API const char *ingot_runtime_errmsg(const ingot_runtime *rt);
/* The status of that last failed call (INGOT_OK if none). */
INGOT_API ingot_status ingot_runtime_errcode(const ingot_runtime *rt);

/* ---- model: an imported, verified ONNX graph ---------------------------------------------------- */
typedef struct ingot_model ingot_model;

typedef struct ingot_load_options {
    uint32_t struct_size;   /* sizeof(ingot_load_options); set by the defaults function */
    int use_mmap;           /* 1: map the file and reference initializer bytes in place (default) */
    int load_external_data; /* 1: resolve external data files (default); 0: only record locations */
    /* Maximum bytes of an output that shape inference computes ahead of time (constant folding of
     * shape sub-graphs). 0 picks the default (64 KiB). */
    size_t fold_max_bytes;
} ingot_load_options;

INGOT_API ingot_load_options ingot_load_options_default(void);

/* Read, verify and shape-infer an ONNX model file (symbolic dims stay symbolic).
 * External data is resolved relative to the model's folder and may not escape it.
 * The model keeps the file mapped until destroyed. Errors: INGOT_ERR_IO, INGOT_ERR_MODEL_PARSE (names
 * the field and byte offset), INGOT_ERR_MODEL_INVALID (names the node or tensor),
 * INGOT_ERR_MODEL_UNSUPPORTED_OP, INGOT_ERR_MODEL_SHAPE, INGOT_ERR_OUT_OF_MEMORY. */
INGOT_API ingot_status ingot_model_load(ingot_runtime *rt, const char *path, const ingot_load_options *opts,
                                        ingot_model **out);
/* The same over bytes in memory (copied). External data is resolved against base_dir (NULL: none
 * allowed). */
INGOT_API ingot_status ingot_model_load_buffer(ingot_runtime *rt, const void *data, size_t n_bytes,
                                               const char *base_dir, const ingot_load_options *opts, ingot_model **out);
INGOT_API void ingot_model_destroy(ingot_model *m);

/* A dim is value (symbol == NULL), or value * symbol (value >= 1), e.g. {1,"batch"}, {128,"batch"}. */
typedef struct ingot_dim {
    int64_t value;
    const char *symbol; /* owned by the model */
} ingot_dim;

typedef struct ingot_tensor_info {
    const char *name;  /* owned by the model */
    ingot_dtype dtype; /* UNDEFINED when not inferred */
    int32_t rank;      /* -1 when unknown */
    ingot_dim dims[INGOT_MAX_RANK];
    int is_constant; /* initializer or folded constant */
    size_t bytes;    /* element count * element size; 0 when any dim is symbolic */
} ingot_tensor_info;

INGOT_API int64_t ingot_model_input_count(const ingot_model *m);
INGOT_API int64_t ingot_model_output_count(const ingot_model *m);
/* Graph inputs exclude initializers. i in [0, count). INGOT_ERR_INVALID_ARG for a bad index. */
INGOT_API ingot_status ingot_model_input_info(const ingot_model *m, int64_t i, ingot_tensor_info *out);
INGOT_API ingot_status ingot_model_output_info(const ingot_model *m, int64_t i, ingot_tensor_info *out);
/* Any tensor of the graph by name; INGOT_ERR_INVALID_ARG when no tensor has that name. */
INGOT_API ingot_status ingot_model_tensor_info(const ingot_model *m, const char *name, ingot_tensor_info *out);

/* Fix an input's shape (all dims concrete). Takes effect at the next ingot_model_infer. Errors:
 * INGOT_ERR_INVALID_ARG naming the input when the name is unknown, the rank differs, or a dim
 * contradicts a fixed dim of the model. */
INGOT_API ingot_status ingot_model_set_input_shape(ingot_model *m, const char *name, int32_t rank, const int64_t *dims);
/* Bind the batch: every input whose leading dim (dim 0) is symbolic gets batch there (k * batch for a
 * dim declared k * symbol). No other dim is touched, except one named by the same symbol as a bound
 * leading dim: that is the same dim, so it takes the same value (a model with inputs [batch,seq] and
 * [seq] gets seq bound too, seq being the second one's leading dim). Fixed leading dims stay as they
 * are, and so do the dims the batch does not name: bind those with ingot_model_set_input_shape. Takes
 * effect at the next ingot_model_infer. Errors on the runtime: INGOT_ERR_INVALID_ARG for batch < 1 or
 * a dim that would overflow. */
INGOT_API ingot_status ingot_model_set_batch(ingot_model *m, int64_t batch);
/* Re-run shape inference, constant folding and cost analysis with the bound input shapes. */
INGOT_API ingot_status ingot_model_infer(ingot_model *m);

typedef struct ingot_model_info {
    int64_t ir_version;
    int64_t opset; /* version of the default ("ai.onnx") domain */
    const char *producer_name;
    const char *producer_version;
    const char *graph_name;
    int64_t n_nodes;
    int64_t n_initializers;
    int64_t n_params;     /* elements of all initializers (weights) */
    size_t param_bytes;   /* bytes of all initializers as stored */
    double flops;         /* sum over nodes; 0 where shapes are symbolic */
    double bytes_moved;   /* sum over nodes of read + written bytes */
    int all_shapes_known; /* 1 when every tensor has a concrete shape */
} ingot_model_info;

INGOT_API ingot_status ingot_model_get_info(const ingot_model *m, ingot_model_info *out);

typedef struct ingot_node_info {
    const char *name; /* "" if the node has none */
    const char *op_type;
    const char *domain; /* "" for the default domain */
    int32_t n_inputs;
    int32_t n_outputs;
    int is_folded;        /* computed at build time (all outputs constant) */
    double flops;         /* floating-point (or integer) operations, a multiply-add counts 2 */
    double bytes_read;    /* every non-omitted input read once */
    double bytes_written; /* every output written once */
} ingot_node_info;

INGOT_API int64_t ingot_model_node_count(const ingot_model *m);
/* Nodes in execution (topological) order. */
INGOT_API ingot_status ingot_model_node_info(const ingot_model *m, int64_t i, ingot_node_info *out);
/* Name of input/output j of node i; "" for an omitted optional input; NULL for a bad index. */
INGOT_API const char *ingot_model_node_input(const ingot_model *m, int64_t i, int32_t j);
INGOT_API const char *ingot_model_node_output(const ingot_model *m, int64_t i, int32_t j);

/* ---- tensors passed in and out ------------------------------------------------------------------ */
typedef struct ingot_tensor {
    const char *name; /* graph input/output name (of an output: owned by the engine) */
    ingot_dtype dtype;
    int32_t rank;
    int64_t dims[INGOT_MAX_RANK];
    void *data;   /* host memory (row-major, dense); for outputs owned by the context */
    size_t bytes; /* element count * element size */
} ingot_tensor;

/* Read a tensor from a .npy file or a serialized ONNX TensorProto (.pb, the format of ONNX's test
 * data); the format is chosen by content. data is allocated by the library: free it with
 * ingot_tensor_free. name is set from the TensorProto (or NULL). Errors name the file and the problem. */
INGOT_API ingot_status ingot_tensor_load_file(ingot_runtime *rt, const char *path, ingot_tensor *out);
/* Write t as a .npy file (version 1.0, little-endian, C order). */
INGOT_API ingot_status ingot_tensor_save_npy(ingot_runtime *rt, const char *path, const ingot_tensor *t);
/* Free what ingot_tensor_load_file allocated, and zero the struct. */
INGOT_API void ingot_tensor_free(ingot_tensor *t);

/* ---- engine: a model prepared for one backend --------------------------------------------------- */
typedef struct ingot_engine ingot_engine;

typedef enum ingot_backend {
    INGOT_BACKEND_AUTO = 0, /* CUDA when a GPU is usable, else CPU */
    INGOT_BACKEND_CPU = 1,
    INGOT_BACKEND_CUDA = 2,
    INGOT_BACKEND_COUNT
} ingot_backend;

/* The allowed range of one input's shape: min[k] <= dim k <= max[k] for k < rank; opt is the shape the
 * engine plans for by default (its *default shape*). */
typedef struct ingot_input_profile {
    const char *name; /* a graph input */
    int32_t rank;
    int64_t min[INGOT_MAX_RANK], opt[INGOT_MAX_RANK], max[INGOT_MAX_RANK];
} ingot_input_profile;

/* How to build an engine. Take the defaults from ingot_build_options_default() and change fields;
 * ingot_engine_build checks every field and names the one it rejects (INGOT_ERR_INVALID_ARG). The
 * engine copies what it needs: strings and arrays given here may be freed after the build. */
typedef struct ingot_build_options {
    uint32_t struct_size;       /* sizeof(ingot_build_options); set by the defaults function */
    ingot_backend backend;      /* AUTO (default), CPU or CUDA */
    ingot_dtype precision;      /* FLOAT (default); FLOAT16/BFLOAT16 storage on the CUDA backend */
    size_t workspace_limit;     /* the workspace budget: the most scratch one convolution or matrix product
                                   may use; the fastest algorithm within it is chosen, and the arena keeps
                                   only what the chosen ones use (steps share it). 0 (default): 4 GiB, or
                                   1/16 of the GPU's memory when less */
    int n_threads;              /* CPU backend threads, 0..1024: 0 (default) one per core; more than the
                                   machine's cores are capped at the core count, or at 64 when the
                                   machine has fewer (so tests can run a pool of several threads anywhere) */
    int optimize;               /* 1 (default): run the optimizer (docs/OPTIMIZER.md); 0: the graph as imported */
    const char *disable_passes; /* comma-separated optimizer passes to skip ("cse,attention"); NULL or ""
                                   (default): none. An unknown name fails the build, naming it */
    const ingot_input_profile *profiles; /* [n_profiles] shape ranges, checked exactly as
                                            ingot_engine_set_input_profile checks them (default none) */
    int64_t n_profiles;
    int device; /* CUDA device index, >= 0 (default 0) */
    /* CUDA backend switches, each 0 or 1 (defaults in brackets); the environment variables of
     * docs/CLI.md override them at build, for debugging, and the build logs each override (INFO): */
    int cuda_graphs;           /* [1] replay captured CUDA Graphs (INGOT_CUDA_GRAPHS) */
    int cuda_tune;             /* [1] time cuDNN/cuBLASLt algorithms; 0 keeps the heuristics' (INGOT_CUDA_TUNE) */
    int cuda_sync_debug;       /* [0] synchronise after every step so a device fault names its node
                                  (INGOT_CUDA_SYNC) */
    int cuda_nhwc;             /* [1] convolutions channels-last; 0 channels-first (INGOT_CUDA_NCHW=1 sets 0) */
    int cuda_gelu_epilogue;    /* [1] fp16 erf-GELU in the GEMM epilogue (tanh form); 0 exact
                                  (INGOT_CUDA_GELU_EPILOGUE) */
    int cuda_attention;        /* [1] the fused attention kernel; 0 cuBLASLt + softmax (INGOT_CUDA_ATTENTION) */
    int cuda_attention_kernel; /* [0] which attention kernel: 0 auto, 1 wide, 2 narrow, 3 split
                                  (INGOT_CUDA_ATTENTION_KERNEL=wide|narrow|split) */
    size_t mem_limit;          /* CUDA: a hard cap in bytes on weights + one context's memory (activations,
                                  workspaces, constants); algorithms with smaller workspaces are chosen to fit,
                                  else context creation fails with INGOT_ERR_DEVICE_OOM and every account.
                                  0 (default): none */
    int deterministic;         /* [0] CUDA: 1 chooses algorithms without timing (the libraries' heuristics, cuDNN's
                                  deterministic algorithms only; stored choices and timing caches are not used),
                                  so every build on one machine and library version makes the same engine */
} ingot_build_options;

INGOT_API ingot_build_options ingot_build_options_default(void);

/* Limit the shapes input `name` may take at run time: min[k] <= dim k <= max[k]; opt becomes that
 * input's default shape (ingot_engine_memory_size). Runs with a shape outside the range fail with
 * INGOT_ERR_INPUT naming the input, the axis and the range. Context memory is still sized for the
 * shape actually run. A setup call: make it before any context of e runs (or give the profiles in
 * ingot_build_options, which also makes opt the shape a CUDA engine is built for). Errors on the
 * runtime: INGOT_ERR_INVALID_ARG naming the input and the axis. */
INGOT_API ingot_status ingot_engine_set_input_profile(ingot_engine *e, const char *name, int32_t rank,
                                                      const int64_t *min, const int64_t *opt, const int64_t *max);
/* Context memory (activation arena + per-node scratch, planned) needed to run with the engine's
 * default shapes: the input shapes bound on the model when the engine was built
 * (ingot_model_set_input_shape / ingot_model_set_batch; a dim left symbolic counts as 1), or a
 * profile's opt. Plans on a temporary copy: safe while contexts of e run. Errors on the runtime. */
INGOT_API ingot_status ingot_engine_memory_size(ingot_engine *e, size_t *bytes);
/* The same with every input that has a profile at its profile's max: enough for any allowed shape. */
INGOT_API ingot_status ingot_engine_max_memory_size(ingot_engine *e, size_t *bytes);
/* Prepare m for execution: the engine copies m's graph (shapes reset to the declared ones, symbolic
 * dims staying symbolic), infers and optimizes it, and keeps a reference on the model file its
 * weights lie in, so m may be destroyed right after the build. The input shapes bound on m now
 * become the engine's default shapes (m is inferred first when its bindings changed). Errors on the
 * runtime: INGOT_ERR_INVALID_ARG (an option, naming the field; an unknown optimizer pass),
 * INGOT_ERR_MODEL_UNSUPPORTED_OP (names node and op), INGOT_ERR_NO_DEVICE (CUDA asked for, none
 * usable), INGOT_ERR_OUT_OF_MEMORY, INGOT_ERR_INTERNAL (an optimizer pass produced a graph that does
 * not verify; names the pass). */
INGOT_API ingot_status ingot_engine_build(ingot_runtime *rt, ingot_model *m, const ingot_build_options *opts,
                                          ingot_engine **out);
/* Destroy e. Its contexts must be destroyed first. */
INGOT_API void ingot_engine_destroy(ingot_engine *e);
/* The backend e runs on: CPU or CUDA (AUTO is resolved at build). */
INGOT_API ingot_backend ingot_engine_backend(const ingot_engine *e);
/* Why a build with backend AUTO chose the CPU: every node the GPU cannot run, with the reason ("node
 * 'up1' (Resize): no CUDA kernel for this op; ..."), or why no GPU is usable; "" when it did not. The
 * same list is logged as a warning at the build. */
INGOT_API const char *ingot_engine_fallback_reason(const ingot_engine *e);

/* The engine's inputs and outputs, as declared (symbolic dims stay symbolic; names owned by the
 * engine), for a program that has only the engine (loaded from a file). INGOT_ERR_INVALID_ARG for a
 * bad index. */
INGOT_API int64_t ingot_engine_input_count(const ingot_engine *e);
INGOT_API int64_t ingot_engine_output_count(const ingot_engine *e);
INGOT_API ingot_status ingot_engine_input_info(const ingot_engine *e, int64_t i, ingot_tensor_info *out);
INGOT_API ingot_status ingot_engine_output_info(const ingot_engine *e, int64_t i, ingot_tensor_info *out);
/* Input i's default shape: the concrete shape the engine was built and planned for (a profile's opt,
 * or the shape bound on the model at build, a dim left symbolic counting as 1). */
INGOT_API ingot_status ingot_engine_input_default_shape(const ingot_engine *e, int64_t i, int32_t *rank,
                                                        int64_t dims[INGOT_MAX_RANK]);

/* ---- engine files: build once, load fast (docs/ENGINE_FILE.md) ----------------------------------- */

/* Write e as an engine file: the optimized graph, its weights, the build options and profiles, the
 * memory plans, the algorithms chosen so far and the fingerprint of the build machine. A context that
 * ran first has tuned its algorithms into the engine, so save after one run to skip tuning at load.
 * Errors on the runtime (INGOT_ERR_IO names the path). */
INGOT_API ingot_status ingot_engine_save(ingot_engine *e, const char *path);
/* The same into memory: *data (free with ingot_free) of *n_bytes. */
INGOT_API ingot_status ingot_engine_serialize(ingot_engine *e, void **data, size_t *n_bytes);

/* A timing cache: the algorithm choices of CUDA engines by problem (convolution or matrix product
 * shape, types, layouts, workspace), reusable across builds of any model on the same GPU
 * architecture and library versions. Load merges a cache into e before its contexts are created
 * (they then time only what the cache lacks); INGOT_ERR_ENGINE_MISMATCH when the cache comes from
 * another machine or version (e is unchanged). Save writes every choice e holds, the loaded ones
 * included. For CPU engines both succeed with nothing to cache. Errors on the runtime. */
INGOT_API ingot_status ingot_engine_load_timing_cache(ingot_engine *e, const char *path);
INGOT_API ingot_status ingot_engine_save_timing_cache(ingot_engine *e, const char *path);

typedef struct ingot_engine_load_options {
    uint32_t struct_size; /* sizeof(ingot_engine_load_options); set by the defaults function */
    int use_mmap;         /* 1 (default): map the file, weights referenced in place; 0: read it */
    int n_threads;        /* CPU engines: threads as for ingot_build_options; -1 (default): as built */
    int device;           /* CUDA engines: device index; -1 (default): as built */
    int verify_weights;   /* 1 (default): check the weights section's CRC too (the others always are) */
} ingot_engine_load_options;

INGOT_API ingot_engine_load_options ingot_engine_load_options_default(void);
/* Load an engine file written by ingot_engine_save. Every offset, count and checksum is verified
 * first; the graph is re-verified and the stored plans re-checked. Errors on the runtime:
 * INGOT_ERR_ENGINE_FILE (names the section and field), INGOT_ERR_ENGINE_MISMATCH (says what differs:
 * GPU, driver, library or ingot version; rebuild from the ONNX file), INGOT_ERR_IO,
 * INGOT_ERR_NO_DEVICE, INGOT_ERR_OUT_OF_MEMORY. */
INGOT_API ingot_status ingot_engine_load(ingot_runtime *rt, const char *path, const ingot_engine_load_options *opts,
                                         ingot_engine **out);
/* Rebuild the engine file at engine_path from the ONNX model it was built from (onnx_path), with the
 * build options, default shapes and profiles the file records (for a file built for another GPU,
 * driver or ingot version: INGOT_ERR_ENGINE_MISMATCH from ingot_engine_load), tune it as `ingot build`
 * does, write it back over engine_path and return it. Errors on the runtime; a damaged file is
 * INGOT_ERR_ENGINE_FILE (its options cannot be trusted). */
INGOT_API ingot_status ingot_engine_rebuild(ingot_runtime *rt, const char *engine_path, const char *onnx_path,
                                            ingot_engine **out);
/* The same over bytes in memory (copied). */
INGOT_API ingot_status ingot_engine_load_buffer(ingot_runtime *rt, const void *data, size_t n_bytes,
                                                const ingot_engine_load_options *opts, ingot_engine **out);

/* ---- context: one engine's memory and state for running it -------------------------------------- */
typedef struct ingot_context ingot_context;

/* Alignment the context memory handed in through ingot_context_options.memory must have. */
#define INGOT_MEMORY_ALIGNMENT 64

typedef struct ingot_context_options {
    uint32_t struct_size; /* sizeof(ingot_context_options) */
    int debug_canaries;   /* 1: guard bytes after every tensor, checked after each step, and freed
                             bytes poisoned, so an overrun is caught at the step where it happens */
    int memory_reuse;     /* 1 (default): tensors share the arena by lifetime; 0: every tensor its own
                             bytes (a reference to compare against) */
    void *memory;         /* caller-owned context memory (NULL: the context allocates its own); must be
                             INGOT_MEMORY_ALIGNMENT-aligned and hold ingot_engine_memory_size() bytes
                             for the shapes run. Contexts that never run at the same time may share
                             one buffer; a run invalidates the outputs of the others. */
    size_t memory_bytes;
} ingot_context_options;

INGOT_API ingot_context_options ingot_context_options_default(void);
/* Create a context of e: its own copy of the graph's mutable state, its plans and its memory. Safe to
 * call from several threads at once. A setup call: failures are reported on e's runtime. */
INGOT_API ingot_status ingot_context_create(ingot_engine *e, const ingot_context_options *opts, ingot_context **out);
INGOT_API void ingot_context_destroy(ingot_context *c);
/* Run one inference. inputs are matched by name; every graph input must be given, once, with the
 * model's dtype and a shape the model allows (otherwise INGOT_ERR_INPUT naming the input, what was
 * expected and what was given). Run-time errors of the model itself, such as an integer division by
 * zero, are INGOT_ERR_INPUT naming the node and the element. When shapes (or the values of inputs that decide shapes)
 * differ from the last run, the context re-infers and re-plans first. Failures are reported on the context
 * (ingot_context_errmsg); a failed run leaves no outputs. */
INGOT_API ingot_status ingot_context_run(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs);
/* Output i of the last run; data belongs to the context and stays valid until the next run (of
 * this context, or of another sharing its memory) or destroy. */
INGOT_API ingot_status ingot_context_get_output(const ingot_context *c, int64_t i, ingot_tensor *out);
/* The message of the last failed call on c (run, get_output, memory_info, the ingot_cuda_context_*
 * calls); every such call clears it first, so "" after a call that succeeded. Names the input,
 * node or tensor at fault. Valid until the next call on c. "no context" for NULL. */
INGOT_API const char *ingot_context_errmsg(const ingot_context *c);
/* The status of that call (INGOT_OK when it succeeded); INGOT_ERR_INVALID_ARG for NULL. */
INGOT_API ingot_status ingot_context_errcode(const ingot_context *c);

typedef struct ingot_memory_info {
    size_t arena_bytes;       /* activations + scratch of the current plan: the context memory */
    size_t lower_bound_bytes; /* no layout of these tensors can use less */
    size_t no_reuse_bytes;    /* what one buffer per tensor would take */
    size_t workspace_bytes;   /* the largest per-node scratch */
    size_t weights_bytes;     /* weight copies the engine made (the rest are used in place) */
    size_t io_bytes;          /* input staging */
    const char *strategy;     /* packing strategy of the plan */
} ingot_memory_info;

/* Where the context's memory goes, for the plan of the last run (CPU contexts). Errors on the context. */
INGOT_API ingot_status ingot_context_memory_info(const ingot_context *c, ingot_memory_info *out);

/* Write a JSON description of the model (inputs, outputs, nodes with shapes and costs, totals) to
 * *out, a NUL-terminated string the caller frees with ingot_free. */
INGOT_API ingot_status ingot_model_describe_json(const ingot_model *m, char **out);
/* The same for the engine's graph (as optimized) at its default shapes: per node also the optimizer
 * pass that made it and the model's nodes it covers, and per pass the rewrites, the nodes removed
 * and the bytes of intermediate tensors removed (at the shapes bound on the model at build). Format:
 * docs/CLI.md ("ingot inspect --optimized"). Errors on the runtime. */
INGOT_API ingot_status ingot_engine_describe_json(const ingot_engine *e, char **out);
INGOT_API void ingot_free(void *p);

/* Host allocations the library has made in this process so far, and how many of them are not freed
 * yet (either may be NULL). A diagnostic: a soak compares them before and after its runs, which tells
 * the library's host memory from the CUDA driver's and the C library's. */
INGOT_API void ingot_host_alloc_counts(uint64_t *n_alloc, int64_t *n_live);

/* ---- diagnostics: per-step profiles and memory accounts (docs/DIAGNOSE.md) ------------------------ */

/* One step as it ran: an executed node of the engine's optimized graph on the CPU; a kernel or library
 * call on the GPU (ingot_cuda_context_profile_steps). Costs are what the step must at least do: FLOPs
 * from the op's cost function (a multiply-add counts 2), every input and weight read once, every
 * output written once, in the dtypes the backend stores them in, plus the workspace it was given. */
typedef struct ingot_step_profile {
    char name[128];         /* the node's name, or what the backend added ("input copy") */
    char op[64];            /* its op ("Conv", "ingot.FusedMatMul"); "" for steps the backend added */
    char kind[16];          /* the CUDA step kind ("gemm", "ew", ...); "cpu" on the CPU */
    int64_t node;           /* index of the node in the engine's graph, -1 for steps the backend added */
    int32_t covers;         /* model nodes the step computes: 1, or what a fused node replaced */
    int32_t feeds_next;     /* 1: its output is read by the next step only (fusing them removes it) */
    double ms;              /* time of the step */
    double flops;           /* operations */
    double bytes_read;      /* inputs and weights */
    double bytes_written;   /* outputs */
    double bytes_workspace; /* planned scratch (0 where none or unknown) */
    ingot_dtype math_dtype; /* precision of its arithmetic: FLOAT, FLOAT16 */
    size_t live_bytes;      /* activation bytes live while it runs */
    char algo[48];          /* CUDA: the library algorithm it runs ("cuDNN implicit_precomp_gemm, 1.2 MB" with its
                               workspace; cuBLASLt's id, tile and stages), "" for ingot's own kernels */
} ingot_step_profile;

/* Run one inference of a CPU context with every step timed (the same kernels and outputs as
 * ingot_context_run; the run before it prepares the plan, so a first call runs twice). Writes up to max
 * steps into steps and their number into *n_steps (max 0 and steps NULL: count only). Errors on the
 * context; a CUDA context is told to use ingot_cuda_context_profile_steps (ingot_cuda.h). */
INGOT_API ingot_status ingot_context_profile_steps(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs,
                                                   ingot_step_profile *steps, int64_t max, int64_t *n_steps);

/* Where the memory of a context goes, every account apart. The library's own accounts are exact (the
 * plan's and the allocations' sizes); on a CUDA context free and total are cudaMemGetInfo's now, and
 * unattributed is the rest of the device's used memory: the CUDA context, library handles, loaded kernels
 * and other processes (`ingot profile` splits it by measuring around each). On a
 * CPU context free and total are the host's physical memory (available and installed). */
typedef struct ingot_memory_accounts {
    uint32_t struct_size;          /* sizeof(ingot_memory_accounts), set by the caller */
    int32_t device;                /* 1: device memory of a CUDA context; 0: host memory */
    size_t weights;                /* the engine's weights (CPU: the aligned copies it made) */
    size_t arena;                  /* the context's one allocation: activations, workspace, constants */
    size_t activations;            /* of which activations (CUDA: arena - workspace - constants - io; CPU:
                                      the arena, scratch packed among the activations by lifetime) */
    size_t activation_lower_bound; /* the most bytes live at once: no packing can use less */
    size_t activation_no_reuse;    /* every tensor its own bytes */
    size_t workspace;              /* the largest scratch of any step */
    size_t constants;              /* shape-dependent constants kept in the arena */
    size_t io_staging;             /* input (CUDA: and output) staging; CUDA: inside the arena */
    size_t library_live;           /* all the library holds: CUDA every ingot device allocation; CPU
                                      weights + arena (unless the caller's) + staging */
    size_t unattributed;           /* used memory none of the above explains (see above) */
    size_t free_bytes, total_bytes;
    size_t graph_objects; /* CUDA: the current shape's executable CUDA Graph (the driver's memory,
                             measured at instantiation; not in library_live, not in unattributed) */
} ingot_memory_accounts;

/* The accounts of c for the shapes it last ran (or, on CUDA, prepared). Errors on the context. */
INGOT_API ingot_status ingot_context_memory_accounts(const ingot_context *c, ingot_memory_accounts *out);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_H */
