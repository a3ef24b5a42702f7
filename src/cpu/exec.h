/*
 * exec.h -- the CPU backend's executor: runs an inferred graph (all shapes concrete) step by step,
 * calling each descriptor's reference kernel. Every tensor a run computes lives in one arena laid out
 * by the memory planner (src/plan): the executor allocates nothing while running.
 *
 * Memory accounts: the arena (activations + per-node scratch, planned) is the context's; aligned
 * copies of weights whose bytes sit misaligned in the model file are the engine's (ig_cpu_weights,
 * made once); inputs are staged in an I/O buffer of their own.
 */
#ifndef INGOT_CPU_EXEC_H
#define INGOT_CPU_EXEC_H

#include "../plan/plan.h"

#define IG_CPU_ALIGN 64

/* The engine's weights: for each initializer whose file bytes are not IG_CPU_ALIGN-aligned, an
 * aligned copy (others are used where they lie, in the mapped file). */
typedef struct ig_cpu_weights {
    int32_t n_values;
    void **ptr;           /* [n_values] aligned copy, or NULL to use the value's own bytes */
    bool *read;           /* [n_values] read by a node or a graph output (the others need no copy) */
    unsigned char *block; /* one allocation holding every copy */
    size_t bytes;
} ig_cpu_weights;

ingot_status ig__cpu_weights_make(ig_cpu_weights *w, const ig_graph *g, ig_err *err);
void ig__cpu_weights_free(ig_cpu_weights *w);

typedef struct ig_cpu_exec {
    const ig_graph *g;
    const ig_plan *plan; /* layout and order; NULL: no reuse, every tensor its own bytes */
    struct ig_pool *pool;
    ig_tensor *t; /* [n_values] views: shape from inference, data into arena/weights/inputs */
    int32_t n_steps;
    const int32_t *order; /* [n_steps] node ids */
    int32_t *own_order;   /* g->order without folded nodes, when there is no plan */
    unsigned char *arena; /* activations + scratch */
    size_t arena_bytes;
    bool arena_owned;      /* false when the caller handed the memory in */
    unsigned char *inputs; /* aligned staging for graph inputs (the I/O account) */
    size_t inputs_bytes;
    size_t *scratch_offset; /* [n_nodes] */
    size_t *scratch_bytes;  /* [n_nodes] */
    bool canaries;          /* debug: guard bytes checked after every step, dead bytes poisoned */
    /* per-step timing hook (ingot_context_profile_steps): called after each step's kernel with the
     * step index, the node id and the kernel's wall time; NULL (the default) reads no clock */
    void (*on_step)(void *user, int32_t step, int32_t node, double ms);
    void *on_step_user;
} ig_cpu_exec;

/* Bytes of arena a plan needs (what a caller's own buffer must hold), and its alignment. */
size_t ig__cpu_arena_bytes(const ig_graph *g, const ig_plan *plan);

/* Lay out everything for the graph's current (concrete) shapes. plan NULL: no reuse. arena NULL:
 * allocate it; otherwise use the caller's memory (at least ig__cpu_arena_bytes, IG_CPU_ALIGN-aligned;
 * checked by the caller). canaries needs a plan made with a guard. */
ingot_status ig__cpu_prepare(ig_cpu_exec *x, const ig_graph *g, const ig_plan *plan, const ig_cpu_weights *w,
                             void *arena, bool canaries, struct ig_pool *pool, ig_err *err);
/* Copy graph input i's bytes into its staging buffer (the caller checked dtype and shape). */
void ig__cpu_set_input(ig_cpu_exec *x, int32_t input_index, const void *data, size_t bytes);
/* Run every step. With canaries, fails at the first step after which a guard byte changed, naming
 * the node and the tensor whose bounds were overrun. */
ingot_status ig__cpu_run(ig_cpu_exec *x, ig_err *err);
void ig__cpu_release(ig_cpu_exec *x);

#endif
