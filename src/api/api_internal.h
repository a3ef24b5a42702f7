/*
 * api_internal.h -- what the files of src/api (and the CLI's internal commands) share behind the
 * public header: the handle structs and the error plumbing.
 *
 * Ownership (docs/OPTIMIZER.md, "Engine and contexts"): the model owns the imported graph; the engine
 * owns a clone of it, optimized, plus everything derived at build (weights, options, default shapes,
 * the default instance the CUDA engine was lowered from) and is read-only afterwards; a context owns
 * an instance of the engine's graph and every byte a run writes, its error slot included.
 */
#ifndef INGOT_API_INTERNAL_H
#define INGOT_API_INTERNAL_H

#include "../core/core.h"
#include "../cpu/exec.h"
#include "../ir/ir.h"
#include "../onnx/onnx.h"
#include "../ops/op.h"
#include "../opt/opt.h"

#include <stdatomic.h>

struct ingot_runtime {
    /* the last failure of a runtime, model or engine call, or of ingot_context_create; written under
     * the lock so that contexts created from several threads at once do not race on it */
    atomic_flag lock;
    ig_err err;
};

struct ingot_model {
    ingot_runtime *rt;
    char path[1024]; /* the file it was loaded from, "" for a buffer (an engine file records it) */
    ig_graph g;
    ig_onnx_file *file;  /* the mapping g's initializers point into (one reference) */
    ig_arena fold_arena; /* folded constants and symbolic values of the current inference */
    ig_infer_options iopt;
    bool inferred; /* shapes/costs reflect the current bindings */
};

/* Allowed range of one input's dims (ingot_engine_set_input_profile); rank -1 when none was set. */
typedef struct ig_profile {
    int32_t rank;
    int64_t min[INGOT_MAX_RANK], opt[INGOT_MAX_RANK], max[INGOT_MAX_RANK];
} ig_profile;

/* An inferred instance of the engine's graph at some concrete input shapes, with its fold arena. */
typedef struct ig_api_instance {
    ig_graph g;
    ig_arena fold;
    bool made, inferred;
} ig_api_instance;

struct ingot_engine {
    ingot_runtime *rt;
    /* resolved: the caller's options, the environment's debugging overrides over them; the
     * threads actually started in n_threads; disable_passes points at own_disable; profiles NULL */
    ingot_build_options opts;
    char *own_disable;
    ig_graph graph;      /* the engine's own graph (a clone of the model's), optimized, declared shapes */
    ig_arena fold_arena; /* constants its inference and the optimizer folded */
    ig_infer_options iopt;
    ig_onnx_file *file; /* a reference: graph's initializer bytes may point into the mapping */
    ig_opt_report report;
    size_t *removed_bytes; /* [report.n_passes] bytes of the tensors each pass removed, at the model's shapes */
    int32_t n_inputs;
    ig_shape *default_shapes; /* [n_inputs] concrete (rank -1 when unknown): memory sizes, the CUDA build */
    ig_profile *profiles;     /* [n_inputs] */
    ig_api_instance def;      /* graph inferred at the default shapes (lives as long as the engine) */
    struct ig_pool *pool;
    ig_cpu_weights weights;       /* the weights account: aligned copies made once at build */
    struct ig_cuda_engine *cuda;  /* CUDA backend (src/api/api_cuda.c); NULL for the CPU backend */
    char fallback[IG_ERRMSG_MAX]; /* why AUTO chose the CPU ("" otherwise) */
    char source[1024];            /* the ONNX file it was built from ("" when loaded from memory) */
};

struct ingot_context {
    ingot_engine *engine;
    ingot_context_options opts;
    /* the last failure of a call on this context. Written by calls that take a const context too
     * (ingot_context_get_output): the slot is the context's mutable state, never the engine's. */
    ig_err err;
    ig_graph graph;             /* this context's instance of the engine's graph */
    ig_arena fold_arena;        /* its folded constants and symbolic values */
    void **bound_values;        /* [n_inputs] values bound to shape inputs (64-byte aligned), or NULL */
    const ingot_tensor **given; /* [n_inputs] the caller's tensor for each input in the current run */
    int32_t *input_pos;         /* [graph.n_values] the position in graph.inputs of each value, or -1 */
    int64_t *sym_val;           /* [sym_cap] binding's scratch: each symbol's value (a run allocates nothing) */
    int32_t sym_cap;            /* entries of sym_val */
    bool inferred;              /* graph reflects the bound shapes and values */
    uint64_t generation;        /* bumped at every inference of graph */
    uint64_t prepared;          /* the generation plan and exec were made for; 0: none */
    bool ran;                   /* the last run succeeded: outputs are valid */
    ig_plan plan;               /* the activation arena's layout for the shapes of the last run */
    ig_cpu_exec exec;
    struct ig_cuda_ctx *cuda; /* CUDA backend state when the engine is a CUDA engine */
};

/* Clear the runtime's error slot at the start of a call on it. */
void ig__api_clear(ingot_runtime *rt);
/* Every field of build options in range (what ingot_engine_build checks first); names the field. */
ingot_status ig__api_check_options(const ingot_build_options *o, ig_err *err);
/* Check and record input `name`'s profile (ingot_engine_set_input_profile); opt becomes its default
 * shape. */
ingot_status ig__api_set_profile(ingot_engine *e, const char *name, int32_t rank, const int64_t *min,
                                 const int64_t *opt, const int64_t *max, ig_err *err);
/* The end of a build, from an engine whose graph is optimized and inferred and whose default shapes
 * and profiles are set: the default instance, then the backend (AUTO: CUDA, else the CPU with the
 * reason kept). The engine file's loader ends the same way. */
ingot_status ig__api_engine_finish(ingot_engine *e, ingot_backend backend, ig_err *err);

/* Copy err (status + message) onto the runtime's error slot and return err->status. rt may be NULL
 * (then only the status is returned). */
ingot_status ig__api_fail(ingot_runtime *rt, const ig_err *err);
/* The same onto a context's own slot (c may be NULL). */
ingot_status ig__api_ctx_fail(const ingot_context *c, const ig_err *err);
/* The same with a fresh message made from fmt: the context's error slot says st and why. */
ingot_status ig__api_ctx_failf(const ingot_context *c, ingot_status st, const char *fmt, ...) IG_PRINTF(3, 4);
/* Clear the context's slot at the start of a call on it. */
void ig__api_ctx_clear(const ingot_context *c);
/* An instance of e's graph with input i at shapes[i] (rank < 0: as declared), inferred; and its release. */
ingot_status ig__api_instance_at(const ingot_engine *e, const ig_shape *shapes, ig_api_instance *in, ig_err *err);
void ig__api_instance_free(ig_api_instance *in);
/* The graph behind a model, for internal tools. */
ig_graph *ig__model_graph(ingot_model *m);
/* The engine's graph inferred at its default shapes (what `ingot plan` plans and `inspect --optimized`
 * shows); NULL when the default shapes could not be inferred. */
const ig_graph *ig__engine_graph(const ingot_engine *e);
/* The optimizer's report and the bytes each pass removed ([rep->n_passes]). */
const ig_opt_report *ig__engine_report(const ingot_engine *e, const size_t **removed_bytes);

/* ---- engine files (engine_file.c) ---- */

/* The build machine's fingerprint: key/value pairs, those marked `must` compared at load. */
#define IG_FP_MAX 16
typedef struct ig_fp_entry {
    char key[32];
    char value[160];
    bool must;
} ig_fp_entry;
typedef struct ig_fp {
    int n;
    ig_fp_entry e[IG_FP_MAX];
} ig_fp;

/* ---- CUDA backend glue (src/api/api_cuda.c; stubs returning INGOT_ERR_NO_DEVICE without CUDA) ---- */
/* Check and bind the given inputs on the context's instance (shapes, shape-input values),
 * re-inferring it when they changed (what ingot_context_run does first). */
ingot_status ig__api_ctx_bind_infer(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs, ig_err *err);
/* Build the CUDA engine from e->def (the default instance, kept for the engine's lifetime). */
ingot_status ig__api_cuda_engine_build(ingot_engine *e, ig_err *err);
void ig__api_cuda_engine_destroy(ingot_engine *e);
/* Called by ingot_context_create with the context's instance already inferred at the default shapes
 * (when they are concrete), so the backend prepares its first instance at creation. */
ingot_status ig__api_cuda_context_create(ingot_context *c, ig_err *err);
void ig__api_cuda_context_destroy(ingot_context *c);
/* After bind/infer: select the instance for the current shapes and run with host inputs. */
ingot_status ig__api_cuda_context_run(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs, ig_err *err);
ingot_status ig__api_cuda_get_output(const ingot_context *c, int64_t i, ingot_tensor *out, ig_err *err);
/* Append device `device`'s entries to fp: GPU name and SM architecture, driver, CUDA runtime, cuDNN and
 * cuBLASLt versions (INGOT_ERR_NO_DEVICE without a usable GPU). */
ingot_status ig__api_cuda_fingerprint(int device, ig_fp *fp, ig_err *err);
/* The algorithm choices of e's CUDA engine as the engine file's ALGO section, and back. */
ingot_status ig__api_cuda_algos_save(const ingot_engine *e, ig_wbuf *out, ig_err *err);
ingot_status ig__api_cuda_algos_load(ingot_engine *e, const void *data, size_t n, ig_err *err);

/* Replace every If node of g (loaded from file) by the branch it takes, which needs its condition to be
 * a build-time constant once shapes are inferred and constants folded (inline_if.c); an If whose
 * condition is not is refused, naming it. Infers g partially with fold_arena along the way: g must be
 * inferred again afterwards. No If: nothing is done. */
ingot_status ig__api_inline_ifs(ig_graph *g, ig_onnx_file *file, size_t fold_max_bytes, ig_arena *fold_arena,
                                ig_err *err);

#endif /* INGOT_API_INTERNAL_H */
