/*
 * cuda_internal.h -- what the host files of the CUDA backend (the .c files of src/cuda) share. Includes the CUDA
 * runtime, cuDNN and cuBLASLt C headers; nothing outside src/cuda includes this file (the API layer sees
 * only cuda_backend.h, which has no CUDA types).
 *
 * The backend has three layers:
 *
 *  1. lower.c turns an inferred graph (all shapes concrete) into a device program: tensors as strided
 *     views of buffers (so Reshape, Transpose, Slice, Split, Expand, Squeeze and constant-index Gather
 *     cost nothing), and steps -- cuDNN convolutions with fused bias/residual/ReLU, cuBLASLt GEMMs with
 *     bias/residual/ReLU/GELU epilogues, fused elementwise programs, softmax, layer norm, reductions,
 *     pooling, gather. BatchNormalization after a convolution is folded into its weights.
 *  2. weights.c converts constants (precision, KRSC filter layout, folded BN) into the engine's one
 *     device allocation.
 *  3. exec.c plans one arena for activations + per-step workspaces (the planner's packing core), binds
 *     pointers, tunes cuDNN/cuBLASLt algorithms by timing, and runs the steps on a stream -- captured
 *     into a CUDA Graph on the first run of a shape and replayed after.
 */
#ifndef INGOT_CUDA_INTERNAL_H
#define INGOT_CUDA_INTERNAL_H

#include "../ops/op.h"
#include "../plan/plan.h"
#include "cuda_backend.h"
#include "kernels/kernels.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

/* ---- errors: one converter per library (check.c) ------------------------------------------------ */

/* Turn a library code into an ingot_status + message "node 'X' (Op): call: NAME: text (file:line)".
 * node may be NULL. Sticky device faults map to INGOT_ERR_DEVICE_FATAL, allocation failures to
 * INGOT_ERR_DEVICE_OOM, a missing device or driver to INGOT_ERR_NO_DEVICE. INGOT_OK on success. */
ingot_status ig__cu_status(ig_err *err, cudaError_t e, const char *call, const char *node, const char *file, int line);
ingot_status ig__cudnn_status(ig_err *err, cudnnStatus_t s, const char *call, const char *node, const char *file,
                              int line);
ingot_status ig__cublas_status(ig_err *err, cublasStatus_t s, const char *call, const char *node, const char *file,
                               int line);
bool ig__cu_is_sticky(cudaError_t e);

#define IG_CU(err, node, call)     ig__cu_status((err), (call), #call, (node), __FILE__, __LINE__)
#define IG_CUDNN(err, node, call)  ig__cudnn_status((err), (call), #call, (node), __FILE__, __LINE__)
#define IG_CUBLAS(err, node, call) ig__cublas_status((err), (call), #call, (node), __FILE__, __LINE__)

/* ---- device memory: every cudaMalloc/cudaFree of the library goes through here (device.c) ------- */
cudaError_t ig__cu_malloc(void **p, size_t bytes);
cudaError_t ig__cu_free(void *p);

/* ---- the device program (lower.c) ------------------------------------------------------------------ */

typedef enum ig_cu_loc {
    IG_LOC_ARENA = 0,  /* the context's one allocation, offset from the plan */
    IG_LOC_WEIGHT = 1, /* the engine's weight allocation */
    IG_LOC_INPUT = 2,  /* a graph input's bytes, where the caller (or the staging copy) put them */
    IG_LOC_OUTPUT = 3, /* a graph output's destination */
} ig_cu_loc;

typedef struct ig_cu_buf {
    uint8_t loc;        /* ig_cu_loc */
    uint8_t is_const;   /* ARENA: holds constant bytes uploaded once per instance (live throughout) */
    uint8_t is_scratch; /* ARENA: 1 one step's workspace, 2 host-path staging (fixed lifetimes) */
    int32_t io;         /* INPUT/OUTPUT: graph input/output index */
    int32_t wreq;       /* WEIGHT or constant ARENA: index into prog.wreqs */
    size_t bytes;
    uint64_t offset;     /* ARENA: from the plan; WEIGHT: from the engine's table */
    int32_t first, last; /* steps using it (ARENA) */
    int32_t alias;       /* ARENA: >= 0 when planned onto another buffer's bytes (in-place) */
} ig_cu_buf;

typedef struct ig_cu_tensor {
    int32_t buf;
    ingot_dtype dtype; /* element type as stored on the device */
    int32_t rank;
    int64_t dims[IG_MAX_RANK];
    int64_t strides[IG_MAX_RANK]; /* elements; 0 for broadcast dims */
    int64_t offset;               /* elements from the buffer's start */
} ig_cu_tensor;

/* A constant converted for the device: what to compute on the host and where it goes. */
typedef enum ig_wkind {
    IG_W_PLAIN = 0,    /* value's elements converted to dtype, times scale */
    IG_W_CONV_W = 1,   /* conv filter [K, C/g, R, S]; KRSC when nhwc, RSK for depthwise */
    IG_W_CONV_B = 2,   /* conv bias [K] (zeros when absent) */
    IG_W_BN_SCALE = 3, /* gamma / sqrt(var + eps) */
    IG_W_BN_SHIFT = 4, /* beta - mean * gamma / sqrt(var + eps) */
} ig_wkind;

typedef struct ig_cu_wreq {
    int32_t kind;      /* ig_wkind */
    int32_t src;       /* PLAIN: the value; CONV_W: filter; CONV_B: bias value or -1 */
    int32_t bn[4];     /* BN_SCALE/BN_SHIFT: the BN params (scale, B, mean, var) value ids; else -1 */
    float eps;         /* BN epsilon */
    float scale;       /* PLAIN: multiplier (1 normally) */
    ingot_dtype dtype; /* device element type */
    int32_t nhwc;      /* CONV_W: 1 KRSC layout, 2 RSK (depthwise: [kh][kw][C]) */
    int32_t n_out;     /* CONV_B: K (for a bias made of zeros) */
    size_t bytes;
    bool all_initializers; /* every source is a file initializer (shape-independent: engine-owned) */
} ig_cu_wreq;

/* The kinds of step, X(NAME, label): one list for the enum, the profile's labels and the tests. */
#define IG_CU_STEP_KINDS(X)   \
    X(EW, "ew")               \
    X(CONV, "conv")           \
    X(GEMM, "gemm")           \
    X(SOFTMAX, "softmax")     \
    X(LAYERNORM, "layernorm") \
    X(REDUCE, "reduce")       \
    X(POOL, "pool")           \
    X(GATHER, "gather")       \
    X(FILL, "fill")           \
    X(ATTENTION, "attention") \
    X(DWCONV, "dwconv")       \
    IG_CU_KSTEP_KINDS(X)

/* The kinds of the kernel families (kstep.c): one layout (u.k: tensor ids and a union of argument
 * structs), so exec.c plans and launches all of them through ig__cu_kstep_tensors/_launch. Kinds of
 * other layouts go before them in IG_CU_STEP_KINDS. */
#define IG_CU_KSTEP_KINDS(X)  \
    X(REDUCTION, "reduction") \
    X(RESIZE, "resize")       \
    X(GROUPNORM, "groupnorm") \
    X(INDEX, "index")         \
    X(SELECT, "select")

typedef enum ig_cu_step_kind {
#define IG_CU_X_(name, label) IG_ST_##name,
    IG_CU_STEP_KINDS(IG_CU_X_)
#undef IG_CU_X_
        IG_ST_KIND_COUNT
} ig_cu_step_kind;

/* "gemm" for IG_ST_GEMM, "?" for anything else. */
const char *ig__cu_step_kind_name(int kind);

typedef struct ig_cu_ew {
    int32_t out; /* tensor */
    int32_t n_in;
    int32_t in[IG_EW_MAX_IN]; /* tensors */
    ig_ew_args args;          /* program, dims and strides final; pointers filled at bind */
    void *jit;                /* the program compiled into a kernel of its own (ew_jit.c), or NULL */
} ig_cu_ew;

/* ---- elementwise programs compiled at run time (ew_jit.c) ----------------------------------------- */
/* False for INGOT_CUDA_EW_JIT=0. */
bool ig__cu_ew_jit_enabled(void);
/* Programs the generator covers: float math, fp32/fp16/bf16 inputs and output, the codes with an
 * expression of their own (not pw_math.h's). */
bool ig__cu_ew_jit_covers(const ig_ew_args *a);
/* The kernels of n programs (i32[i]: 32-bit indices, ingot_cuda_ew_fits_i32), for cudaLaunchKernel: the
 * ones not compiled before in this process compiled together by NVRTC and loaded as one library. On
 * an error no funcs[i] is set (the interpreter runs them). */
ingot_status ig__cu_ew_jit_batch(const ig_ew_args *const *progs, const bool *i32, int n, void **funcs, ig_err *err);
/* Compile the kernels of n programs as one unit for arch ("sm_90") without loading them: no device
 * needed (tests). */
ingot_status ig__cu_ew_jit_check(const ig_ew_args *const *progs, const bool *i32, int n, const char *arch, ig_err *err);
/* Units compiled by NVRTC and units read back from the cache folder, so far in this process. */
void ig__cu_ew_jit_stats(int64_t *compiled, int64_t *cached);

typedef struct ig_cu_conv {
    int32_t x, w, b, z, y; /* tensors; b, z may be -1 */
    int32_t relu;
    int32_t transpose; /* ConvTranspose: cuDNN's backward data of the conv whose filter is w (x is its dy, y its dx) */
    int32_t pad[2], stride[2], dil[2], group;
    int32_t scratch; /* buffer of the workspace (-1 none) */
    /* a max pool fused after it (ingot.FusedConv's "pool"): pool_y its output, y the conv's, which only
     * this step reads (-1: none). Each candidate runs the conv and then the pool, or the stem kernel's
     * pooled form both at once (conv.c) */
    int32_t pool_y;
    ig_pool_args pool; /* its geometry; the pointers are set when it runs */
    struct ig_cu_conv_prep *prep;
} ig_cu_conv;

enum ig_gemm_epi { IG_EPI_NONE = 0, IG_EPI_RELU = 1, IG_EPI_GELU = 2 };

typedef struct ig_cu_gemm {
    int32_t a, b, bias, c, d; /* tensors: D = epi(alpha * A B + beta * C + bias); bias, c may be -1 */
    float alpha, beta;
    int32_t epi;
    /* the problem in row-major terms, from the views: D[batch][m][n] */
    int64_t m, n, k, batch;
    int32_t a_trans, b_trans;   /* operand stored transposed (column-major) */
    int64_t lda, ldb, ldc, ldd; /* leading dims of the stored matrices (elements) */
    int64_t sa, sb, sc, sd;     /* batch strides (elements; 0 broadcast) */
    int32_t scratch;
    struct ig_cu_gemm_prep *prep;
} ig_cu_gemm;

/* A step of the kernel families (IG_CU_KSTEP_KINDS): its tensors (-1: absent) and arguments, pointers
 * filled at launch by ig__cu_kstep_bind (kstep.c) in the order that file gives per kind. */
#define IG_KSTEP_MAX_T 6
typedef struct ig_cu_kstep {
    int32_t t[IG_KSTEP_MAX_T];
    union {
        ig_reduction_args red; /* x, y, partials */
        ig_resize_args resize; /* x, y, taps */
        ig_groupnorm_args gn;  /* x, y, statistics, scale, bias */
        ig_index_args ix;      /* x, indices, updates, y */
        ig_select_args sel;    /* x, values, y, indices */
    } a;
} ig_cu_kstep;

typedef struct ig_cu_step {
    int32_t kind;     /* ig_cu_step_kind */
    int32_t node;     /* graph node id for messages; -1 for steps the lowering added */
    const char *what; /* "input copy", "to NHWC", ... for added steps */
    int32_t io_patch; /* 1: an input/output copy whose pointers change between runs */
    union {
        ig_cu_ew ew;
        ig_cu_conv conv;
        ig_cu_gemm gemm;
        struct {
            int32_t x, y, mask;
            ig_softmax_args args;
        } softmax;
        struct {
            int32_t x, y, gamma, beta;
            ig_layernorm_args args;
        } ln;
        struct {
            int32_t x, y;
            ig_reduce_args args;
        } reduce;
        struct {
            int32_t x, y;
            ig_pool_args args;
        } pool;
        struct {
            int32_t x, idx, y;
            ig_gather_args args;
        } gather;
        struct {
            int32_t y;
            uint64_t bits;
        } fill;
        struct {
            int32_t q, k, v, mask, o;
            ig_attention_args args;
        } attn;
        struct {
            int32_t x, w, b, y;
            ig_dwconv_args args;
        } dw;
        ig_cu_kstep k; /* the kinds of IG_CU_KSTEP_KINDS */
    } u;
} ig_cu_step;

typedef struct ig_cu_prog {
    ig_arena arena; /* every array below */
    const ig_graph *g;
    ingot_dtype fdt; /* device type of float32 values (FLOAT or FLOAT16) */
    int32_t n_bufs, cap_bufs;
    ig_cu_buf *bufs;
    int32_t n_tensors, cap_tensors;
    ig_cu_tensor *tensors;
    int32_t n_steps, cap_steps;
    ig_cu_step *steps;
    int32_t n_wreqs, cap_wreqs;
    ig_cu_wreq *wreqs;
    int32_t *val_tensor; /* [g->n_values] the tensor holding each value (-1: none yet) */
    int32_t *val_nhwc;   /* [g->n_values] a channels-last copy made for convolutions (-1) */
    int32_t n_inputs, n_outputs;
    int32_t *in_tensor;             /* [n_inputs] the caller's bytes (LOC_INPUT), -1 for folded inputs */
    int32_t *out_tensor;            /* [n_outputs] the destination (LOC_OUTPUT) */
    int64_t n_fused;                /* model nodes the optimizer fused into the lowered nodes (reports) */
    int32_t n_lowered[IG_OP_COUNT]; /* nodes lowered, per op (the tests' coverage check) */
} ig_cu_prog;

typedef struct ig_cu_lower_options {
    ingot_dtype precision; /* FLOAT or FLOAT16 */
    int nhwc;              /* convolutions channels-last (default 1) */
    int gelu_epilogue;     /* fuse erf-GELU into cuBLASLt's GELU epilogue (tanh form; fp16 only) */
    int attention;         /* the flash-attention kernel where ingot.Attention's shapes allow */
    int attention_kernel;  /* 0: chosen by size; 1 wide, 2 narrow, 3 split (tests) */
} ig_cu_lower_options;

/* The support table (lower_table.c). Why node n of an inferred graph cannot run on the device, or NULL. */
const char *ig__cu_node_unsupported(const ig_graph *g, const ig_node *n);
/* Every node of inferred graph g that cannot run, "'name' (Op): reason; ..." into buf; their count. */
int32_t ig__cu_unsupported(const ig_graph *g, char *buf, size_t n);
/* The backend has a lowering for op (the coverage check of the tests). */
bool ig__cu_op_lowered(int32_t op);
/* Lower g (shapes concrete) into *p. Fails naming the node that cannot run on the device. */
ingot_status ig__cu_lower(const ig_graph *g, const ig_cu_lower_options *o, ig_cu_prog *p, ig_err *err);
void ig__cu_prog_free(ig_cu_prog *p);
/* Node label for messages ("name (Op)" or the step's description). */
const char *ig__cu_step_label(const ig_cu_prog *p, const ig_cu_step *s, char *buf, size_t n);
bool ig__cu_tensor_contig(const ig_cu_tensor *t);
/* "1:150528,3:1,224:672,224:3" (dim:stride per axis) into buf, for keys and messages. */
char *ig__cu_tensor_str(const ig_cu_tensor *t, char *buf, size_t n);
size_t ig__cu_tensor_numel(const ig_cu_tensor *t);

/* The tensors step s reads or writes (at most 8) into ids; their count. */
int ig__cu_step_tensors(const ig_cu_step *s, int32_t *ids);

/* Steps of the kernel families (kstep.c). */
bool ig__cu_is_kstep(int kind);
/* Their tensors into ids (0 for other kinds); the step's arguments with pointers from P (tensor id ->
 * device or host address); its launch. */
int ig__cu_kstep_tensors(const ig_cu_step *s, int32_t *ids);
ig_cu_kstep ig__cu_kstep_bind(const ig_cu_step *s, void *const *P);
cudaError_t ig__cu_kstep_launch(const ig_cu_step *s, void *const *P, cudaStream_t stream);

typedef struct ig_cu_plan_result {
    size_t arena, lower_bound, no_reuse, const_bytes, workspace_max;
} ig_cu_plan_result;
/* Lifetimes of the arena buffers from the steps, then offsets from the planner's packing core (checked
 * with ig__pack_check). Fills every ARENA buffer's offset. (exec.c) */
ingot_status ig__cu_plan(ig_cu_prog *p, ig_cu_plan_result *r, ig_err *err);

/* ---- weights (weights.c) ---------------------------------------------------------------------------- */
/* The host bytes of a request (exactly r->bytes) into dst. */
ingot_status ig__cu_wreq_fill(const ig_graph *g, const ig_cu_wreq *r, void *dst, ig_err *err);
bool ig__cu_wreq_same(const ig_cu_wreq *a, const ig_cu_wreq *b);

typedef struct ig_cu_weights {
    void *dev; /* one allocation */
    size_t bytes;
    int32_t n;
    ig_cu_wreq *reqs;  /* [n] */
    uint64_t *offsets; /* [n] */
} ig_cu_weights;

/* Upload every engine-owned request of p (all_initializers) into one allocation. */
ingot_status ig__cu_weights_build(const ig_graph *g, const ig_cu_prog *p, ig_cu_weights *w, ig_err *err);
void ig__cu_weights_free(ig_cu_weights *w);
/* Offset of request r in w, or UINT64_MAX when w does not hold it. */
uint64_t ig__cu_weights_find(const ig_cu_weights *w, const ig_cu_wreq *r);

/* ---- library steps (conv.c, gemm.c) -------------------------------------------------------------- */
typedef struct ig_cu_libs {
    cudnnHandle_t cudnn;
    cublasLtHandle_t lt;
} ig_cu_libs;

/* Descriptors and the workspace candidates for a step; *ws_bytes is what it may use. */
/* With algos: a choice it holds for this problem skips cuDNN's heuristic query and sizes the workspace. */
typedef struct ig_cu_algos ig_cu_algos;
/* deterministic: only algorithms cuDNN marks deterministic. */
ingot_status ig__cu_conv_prepare(ig_cu_libs *L, const ig_cu_prog *p, ig_cu_step *s, size_t ws_limit, bool deterministic,
                                 ig_cu_algos *algos, size_t *ws_bytes, const char *label, ig_err *err);
/* Time the candidates with the bound pointers (tensors and the workspace) and keep the fastest. */
ingot_status ig__cu_conv_tune(ig_cu_libs *L, ig_cu_step *s, void *const *ptrs, void *ws, size_t ws_bytes,
                              cudaStream_t stream, const char *label, ig_err *err);
ingot_status ig__cu_conv_run(ig_cu_libs *L, const ig_cu_step *s, void *const *ptrs, void *ws, cudaStream_t stream,
                             const char *label, ig_err *err);
void ig__cu_conv_release(ig_cu_step *s);
/* The algorithm a step runs, for profiles and sweeps: "cuDNN implicit_precomp_gemm, 1.2 MB" (its workspace). */
void ig__cu_conv_describe(const ig_cu_step *s, char *buf, size_t n);
void ig__cu_gemm_describe(const ig_cu_step *s, char *buf, size_t n);
/* The chosen algorithm's workspace becomes the step's (runs pass no more); returns it. */
size_t ig__cu_conv_commit_ws(ig_cu_step *s);
size_t ig__cu_gemm_commit_ws(ig_cu_step *s);

/* With algos: a choice it holds for this problem sizes the workspace (tuning then checks it). */
ingot_status ig__cu_gemm_prepare(ig_cu_libs *L, const ig_cu_prog *p, ig_cu_step *s, size_t ws_limit, ig_cu_algos *algos,
                                 size_t *ws_bytes, const char *label, ig_err *err);
ingot_status ig__cu_gemm_tune(ig_cu_libs *L, ig_cu_step *s, void *const *ptrs, void *ws, size_t ws_bytes,
                              cudaStream_t stream, const char *label, ig_err *err);
ingot_status ig__cu_gemm_run(ig_cu_libs *L, const ig_cu_step *s, void *const *ptrs, void *ws, cudaStream_t stream,
                             const char *label, ig_err *err);
void ig__cu_gemm_release(ig_cu_step *s);

/* ---- timing candidates (tune.c) ------------------------------------------------------------------ */
/* One call of a candidate on stream s; false when the library refuses it. */
typedef bool (*ig_cu_call)(void *ctx, cudaStream_t s);
/* The ms of `reps` calls replayed as a CUDA Graph (how a context runs them: the library's host work per
 * call stays out), or on the stream when the calls do not capture; FLT_MAX when a call fails. Errors only
 * for a failing stream or event. */
ingot_status ig__cu_time_calls(ig_cu_call call, void *ctx, int reps, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1,
                               float *ms, const char *label, ig_err *err);

/* Candidate `cand`'s time as the race ranks it: the library's own first choice (candidate 0) counts
 * IG_CU_TUNE_MARGIN of its time, so another replaces it only when that much faster -- one timed replay
 * per candidate does not resolve nearer ties, and a tie changed from build to build is noise in every
 * later measurement. FLT_MAX (a failed call) stays FLT_MAX. */
#define IG_CU_TUNE_MARGIN 0.95f
float ig__cu_tune_rank(int cand, float ms);

/* ---- the engine's algorithm choices (algos.c) ---------------------------------------------------- */

#define IG_CU_ALGO_KEY 512 /* bytes of a problem key, NUL included */

/* The problem a prepared conv/GEMM step poses, as a key ("" before prepare). */
const char *ig__cu_conv_key(const ig_cu_step *s);
const char *ig__cu_gemm_key(const ig_cu_step *s);
/* The step's current choice as bytes (their count; 0 when cap is too small). */
size_t ig__cu_conv_choice(const ig_cu_step *s, void *out, size_t cap);
size_t ig__cu_gemm_choice(const ig_cu_step *s, void *out, size_t cap);
/* Take a stored choice after checking it with the library (valid for the problem, workspace within
 * ws_bytes, one call succeeds on the bound pointers); *used false when it does not pass (the caller
 * tunes instead). Errors only for a failing stream. */
ingot_status ig__cu_conv_apply(ig_cu_libs *L, ig_cu_step *s, const void *choice, size_t n, void *const *ptrs, void *ws,
                               size_t ws_bytes, cudaStream_t stream, bool *used, const char *label, ig_err *err);
ingot_status ig__cu_gemm_apply(ig_cu_libs *L, ig_cu_step *s, const void *choice, size_t n, void *const *ptrs, void *ws,
                               size_t ws_bytes, cudaStream_t stream, bool *used, const char *label, ig_err *err);

/* key -> choice, thread-safe; the first choice stored for a key stays. */
ingot_status ig__cu_algos_create(ig_cu_algos **out, ig_err *err);
void ig__cu_algos_destroy(ig_cu_algos *a);
ingot_status ig__cu_algos_put(ig_cu_algos *a, const char *key, const void *choice, size_t n, ig_err *err);
/* The stored choice's size (copied into choice), 0 when none or larger than cap. */
size_t ig__cu_algos_get(ig_cu_algos *a, const char *key, void *choice, size_t cap);
int32_t ig__cu_algos_count(ig_cu_algos *a);
/* The table as bytes (u32 count; per entry u32 key length, key, u32 choice length, choice), and back:
 * every length is checked against the bytes there; `what` names the source in messages. */
ingot_status ig__cu_algos_write(ig_cu_algos *a, ig_wbuf *b, ig_err *err);
ingot_status ig__cu_algos_read(ig_cu_algos *a, const void *data, size_t n, const char *what, ig_err *err);

#endif /* INGOT_CUDA_INTERNAL_H */
