/*
 * api_internal.h -- what the files of src/api (and the CLI's internal commands) share behind the
 * public header: the handle structs and the error plumbing.
 */
#ifndef INGOT_API_INTERNAL_H
#define INGOT_API_INTERNAL_H

#include "../core/core.h"
#include "../cpu/exec.h"
#include "../ir/ir.h"
#include "../onnx/onnx.h"
#include "../ops/op.h"

struct ingot_runtime {
    ig_err err; /* the last failure of a call made through this runtime */
};

struct ingot_model {
    ingot_runtime *rt;
    ig_graph g;
    ig_onnx_file *file;  /* the mapping g's initializers point into */
    ig_arena fold_arena; /* folded constants and symbolic values of the current inference */
    ig_infer_options iopt;
    bool inferred;       /* shapes/costs reflect the current bindings */
    uint64_t generation; /* bumped at every inference: contexts re-prepare when it moves */
    void **bound_values; /* [n_inputs] values bound to shape inputs (64-byte aligned), or NULL */
};

/* Allowed range of one input's dims (ingot_engine_set_input_profile); rank -1 when none was set. */
typedef struct ig_profile {
    int32_t rank;
    int64_t min[INGOT_MAX_RANK], opt[INGOT_MAX_RANK], max[INGOT_MAX_RANK];
} ig_profile;

struct ingot_engine {
    ingot_runtime *rt;
    ingot_model *model;
    ingot_build_options opts;
    struct ig_pool *pool;
    ig_cpu_weights weights;      /* the weights account: aligned copies made once at build */
    ig_profile *profiles;        /* [model inputs] */
    struct ig_cuda_engine *cuda; /* CUDA backend (src/api/api_cuda.c); NULL for the CPU backend */
};

struct ingot_context {
    ingot_engine *engine;
    ingot_context_options opts;
    ig_plan plan; /* the activation arena's layout for the shapes of the last run */
    ig_cpu_exec exec;
    uint64_t generation; /* the model generation plan and exec were made for; 0: never */
    bool failed;
    struct ig_cuda_ctx *cuda; /* CUDA backend state when the engine is a CUDA engine */
};

/* Copy err (status + message) onto the runtime's error slot and return err->status. rt may be NULL
 * (then only the status is returned). */
ingot_status ig__api_fail(ingot_runtime *rt, const ig_err *err);
/* The graph behind a model, for internal tools (ingot plan). */
ig_graph *ig__model_graph(ingot_model *m);

/* ---- CUDA backend glue (src/api/api_cuda.c; stubs returning INGOT_ERR_NO_DEVICE without CUDA) ---- */
/* Check and bind the given inputs (shapes, shape-input values), re-inferring the model when they
 * changed (what ingot_context_run does first). */
ingot_status ig__api_bind_infer(ingot_engine *e, const ingot_tensor *inputs, int64_t n_inputs, ig_err *err);
ingot_status ig__api_cuda_engine_build(ingot_engine *e, ig_err *err);
void ig__api_cuda_engine_destroy(ingot_engine *e);
ingot_status ig__api_cuda_context_create(ingot_context *c, ig_err *err);
void ig__api_cuda_context_destroy(ingot_context *c);
/* After bind/infer: select the instance for the current shapes and run with host inputs. */
ingot_status ig__api_cuda_context_run(ingot_context *c, const ingot_tensor *inputs, int64_t n_inputs, ig_err *err);
ingot_status ig__api_cuda_get_output(const ingot_context *c, int64_t i, ingot_tensor *out);

#endif /* INGOT_API_INTERNAL_H */
