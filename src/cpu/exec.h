/*
 * exec.h -- the CPU backend's executor: runs an inferred graph (all shapes concrete) node by node,
 * calling each descriptor's reference kernel. Every tensor of the run lives in one arena whose layout
 * comes from a memory plan (src/plan) when one is given, or from a no-reuse layout otherwise.
 */
#ifndef INGOT_CPU_EXEC_H
#define INGOT_CPU_EXEC_H

#include "../ops/op.h"

/* Where a value's bytes are: an offset in the arena, or a pointer elsewhere (constants, inputs). */
typedef struct ig_cpu_layout {
    size_t arena_bytes;
    size_t *offset;          /* [n_values] arena offset, SIZE_MAX when not in the arena */
    size_t *scratch_offset;  /* [n_nodes] */
    size_t *scratch_bytes;   /* [n_nodes] */
} ig_cpu_layout;

typedef struct ig_cpu_exec {
    const ig_graph *g;
    struct ig_pool *pool;
    ig_tensor *t;             /* [n_values] views: shape from inference, data into arena/weights/inputs */
    unsigned char *arena;     /* one allocation: activations + scratch (64-byte aligned) */
    size_t arena_bytes;
    unsigned char *consts;    /* aligned copies of constants whose bytes are misaligned in the file */
    size_t consts_bytes;
    unsigned char *inputs;    /* aligned staging for graph inputs */
    size_t inputs_bytes;
    size_t *scratch_offset;   /* [n_nodes] */
    size_t *scratch_bytes;    /* [n_nodes] */
} ig_cpu_exec;

/* Size and allocate everything for the graph's current (concrete) shapes. layout NULL: no reuse. */
ingot_status ig__cpu_prepare(ig_cpu_exec *x, const ig_graph *g, const ig_cpu_layout *layout,
                             struct ig_pool *pool, ig_err *err);
/* Copy graph input i's bytes in (caller checked dtype and shape), then run every node. */
ingot_status ig__cpu_set_input(ig_cpu_exec *x, int32_t input_index, const void *data, size_t bytes);
ingot_status ig__cpu_run(ig_cpu_exec *x, ig_err *err);
void ig__cpu_release(ig_cpu_exec *x);

#endif
