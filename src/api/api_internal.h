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
    ig_onnx_file *file;     /* the mapping g's initializers point into */
    ig_arena fold_arena;    /* folded constants and symbolic values of the current inference */
    ig_infer_options iopt;
    bool inferred;          /* shapes/costs reflect the current bindings */
    uint64_t generation;    /* bumped at every inference: contexts re-prepare when it moves */
};

struct ingot_engine {
    ingot_runtime *rt;
    ingot_model *model;
    ingot_build_options opts;
    struct ig_pool *pool;
};

struct ingot_context {
    ingot_engine *engine;
    ingot_context_options opts;
    ig_cpu_exec exec;
    uint64_t generation;    /* the model generation exec was prepared for; 0: never */
    bool failed;
};

/* Copy err (status + message) onto the runtime's error slot and return err->status. rt may be NULL
 * (then only the status is returned). */
ingot_status ig__api_fail(ingot_runtime *rt, const ig_err *err);
/* The graph behind a model, for internal tools (ingot plan). */
ig_graph *ig__model_graph(ingot_model *m);

#endif /* INGOT_API_INTERNAL_H */
