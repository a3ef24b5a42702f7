/*
 * plan.h -- the static memory planner: which bytes of one arena each tensor of a graph occupies.
 *
 * Two layers:
 *
 *  1. A pure packing core over an abstract problem: buffers {size, first step, last step} (inclusive)
 *     get byte offsets such that two buffers whose step ranges overlap never overlap in bytes. Several
 *     strategies run (greedy by size with best-fit gaps as in TFLite's ArenaPlanner / XLA's heap
 *     simulator, greedy by breadth and by conflict degree, ggml-style online in-order best-fit, and
 *     skyline packers that fill the lowest free level) and the smallest arena is kept; when that is
 *     still above the lower bound, a bounded restarted search for a packing at the bound (after
 *     MiniMalloc) and an iterated greedy that re-places the buffers sticking out above the bound
 *     take over. Deterministic: same input, same offsets (seeded; work is counted, not timed).
 *     docs/PLANNER.md describes the strategies, the effort levels and measured results.
 *
 *  2. A graph layer: from an ig_graph with concrete shapes and its execution order, the liveness of
 *     every value, zero-copy aliases (IG_OP_ALIAS ops), in-place reuse (IG_OP_INPLACE ops), per-node
 *     scratch from the op descriptor, and a memory-aware topological order tried against the original
 *     one. The result, an ig_plan, is what an executor consumes; it can be written as JSON, as an SVG
 *     picture of the arena and as a Chrome-trace / Perfetto JSON.
 *
 * Lower bound (LB): the maximum over steps of the sum of the aligned sizes of the buffers live at that
 * step. No offset assignment can use fewer bytes; finding the minimum is NP-hard, so the planner
 * reports arena / LB and the strategy that won.
 */
#ifndef INGOT_PLAN_H
#define INGOT_PLAN_H

#include "../ops/op.h"

#include <stdio.h>

#define IG_PLAN_ALIGN_DEFAULT 256

/* ================================ packing core ================================================ */

typedef struct ig_pack_buf {
    uint64_t size;       /* bytes; a buffer of size 0 takes no space (offset 0) */
    int32_t first, last; /* inclusive steps it is live at; first <= last */
} ig_pack_buf;

typedef struct ig_pack_options {
    uint64_t align; /* offsets are multiples of this power of two; 0: IG_PLAN_ALIGN_DEFAULT */
    /* 0: the one-pass strategies only; 1 (default): plus a bounded improvement search when the best
     * one-pass result is above the lower bound; 2: a much longer search (benchmarks, offline builds). */
    int32_t effort;
    uint64_t seed; /* for the randomised improvement; 0 picks a fixed default */
} ig_pack_options;

ig_pack_options ig__pack_options_default(void);

typedef struct ig_pack_result {
    uint64_t arena;       /* max over buffers of offset + aligned size (a multiple of align) */
    uint64_t lower_bound; /* max over steps of the sum of aligned sizes live at that step */
    uint64_t no_reuse;    /* sum of aligned sizes: every buffer its own bytes */
    int32_t peak_step;    /* first step where the live sum reaches lower_bound (-1 if no buffers) */
    const char *strategy; /* static name of the strategy whose offsets were kept */
    int32_t n_runs;       /* packings tried (strategies plus improvement iterations) */
} ig_pack_result;

/* Assign offsets[i] to bufs[i] for i in [0, n). Fails with INGOT_ERR_INVALID_ARG naming the buffer
 * when first > last or an aligned size overflows, with INGOT_ERR_OUT_OF_MEMORY on allocation failure.
 * opt may be NULL (defaults). */
ingot_status ig__pack(const ig_pack_buf *bufs, int32_t n, const ig_pack_options *opt, uint64_t *offsets,
                      ig_pack_result *res, ig_err *err);

/* The lower bound alone (aligned sizes); *peak_step (may be NULL) gets the first step reaching it. */
uint64_t ig__pack_lower_bound(const ig_pack_buf *bufs, int32_t n, uint64_t align, int32_t *peak_step);

/* Verify an assignment: offsets aligned, every buffer inside [0, arena), no two buffers with
 * overlapping step ranges overlapping in bytes, arena >= the lower bound. The message names the two
 * buffers and their byte ranges. O(n log n + overlapping pairs). */
ingot_status ig__pack_check(const ig_pack_buf *bufs, int32_t n, const uint64_t *offsets, uint64_t align, uint64_t arena,
                            ig_err *err);

/* ================================ graph layer ================================================= */

typedef enum ig_plan_kind {
    IG_PLAN_NONE = 0,    /* not in the arena: graph input, constant, omitted, or produced by no executed node */
    IG_PLAN_OWN = 1,     /* its own bytes */
    IG_PLAN_ALIAS = 2,   /* shares its source's bytes unchanged (Reshape, Flatten, Squeeze, ...): no copy */
    IG_PLAN_INPLACE = 3, /* written over its input 0, which is dead after this node */
} ig_plan_kind;

typedef struct ig_plan_options {
    uint64_t align;           /* 0: IG_PLAN_ALIGN_DEFAULT; a power of two otherwise */
    uint64_t workspace_limit; /* per-node scratch budget in bytes; 0: unlimited */
    uint64_t guard;           /* bytes reserved after every buffer (debug canaries); 0: none */
    int32_t reorder;          /* 1 (default): also try a memory-aware topological order */
    int32_t alias;            /* 1 (default): zero-copy aliases for IG_OP_ALIAS ops */
    int32_t inplace;          /* 1 (default): in-place reuse for IG_OP_INPLACE ops */
    int32_t effort;           /* packing effort, see ig_pack_options (default 1) */
    /* Hooks for backends and tests; NULL reads the op descriptor (flags, .cpu_scratch). */
    uint32_t (*op_flags)(void *user, const ig_graph *g, const ig_node *n);
    uint64_t (*scratch)(void *user, const ig_graph *g, const ig_node *n);
    void *user;
} ig_plan_options;

ig_plan_options ig__plan_options_default(void);

/* The most bytes of activations and scratch a plan may add up to (1 PiB): larger shapes fail planning
 * with INGOT_ERR_MODEL_SHAPE instead of overflowing the arithmetic of the packers. */
#define IG_PLAN_MAX_BYTES ((uint64_t)1 << 50)

typedef struct ig_plan_value {
    uint64_t offset;     /* into the arena (meaningless for IG_PLAN_NONE) */
    uint64_t bytes;      /* the value's own size, unaligned */
    int32_t first, last; /* steps: produced at first, last read at last (graph outputs: n_steps - 1) */
    int32_t root;        /* value whose buffer this one uses (itself when OWN; -1 when NONE) */
    int32_t buffer;      /* index into ig_plan.buffers (-1 when NONE) */
    uint8_t kind;        /* ig_plan_kind */
} ig_plan_value;

/* One packed rectangle: a root value with everything sharing its bytes, or one node's scratch. */
typedef struct ig_plan_buffer {
    uint64_t offset, bytes;
    int32_t first, last;
    int32_t value; /* root value id, or -1 for scratch */
    int32_t node;  /* scratch: the node it belongs to; -1 otherwise */
} ig_plan_buffer;

typedef struct ig_plan {
    uint64_t arena_bytes;    /* size of the one arena (multiple of align) */
    uint64_t lower_bound;    /* max over steps of live aligned bytes, for the order used */
    uint64_t no_reuse_bytes; /* every planned value and scratch its own aligned bytes */
    uint64_t align;
    uint64_t guard;       /* bytes after each buffer no other live buffer touches (options.guard) */
    const char *strategy; /* packing strategy that won (static string) */
    int32_t peak_step;    /* where the live bytes reach lower_bound */
    int32_t reordered;    /* 1 when `order` is the memory-aware order, 0 when it is g->order */
    /* both orders, for the report: the memory-aware pair is 0 when reordering was off; its arena
     * alone is 0 when its lower bound already reached the original arena (then it is not packed) */
    uint64_t arena_original, lb_original, arena_reordered, lb_reordered;

    int32_t n_steps;          /* executed nodes (folded nodes are skipped) */
    int32_t *order;           /* [n_steps] node ids: step s runs node order[s] */
    int32_t *step_of_node;    /* [n_nodes] step of each node, -1 for folded nodes */
    int32_t n_values;         /* = g->n_values */
    ig_plan_value *values;    /* [n_values] indexed by value id */
    int32_t n_nodes;          /* = g->n_nodes */
    uint64_t *scratch_offset; /* [n_nodes] indexed by node id */
    uint64_t *scratch_bytes;  /* [n_nodes] 0 when the node needs none */
    uint64_t workspace_max;   /* largest per-node scratch */
    int32_t n_buffers;
    ig_plan_buffer *buffers; /* [n_buffers] */
    uint64_t *live;          /* [n_steps] aligned bytes live at each step (the memory curve) */
} ig_plan;

/* Plan g (shapes concrete, g->order set) into *plan. *plan must be zeroed or hold an earlier plan,
 * which is freed first (so re-planning for a new shape reuses the same object). Fails naming the
 * tensor whose shape is not concrete, or the node whose scratch exceeds opt->workspace_limit.
 * opt may be NULL. */
ingot_status ig__plan_graph(const ig_graph *g, const ig_plan_options *opt, ig_plan *plan, ig_err *err);
void ig__plan_free(ig_plan *plan);

/* Verify a plan against its graph, independently of how it was made: recomputes every value's live
 * range from the graph and plan->order, then checks that no two values live at the same step share
 * bytes unless one aliases the other or is written in place over an input dead after that step,
 * that graph inputs and constants are not in the arena and graph outputs are not aliases, that
 * offsets are aligned, every buffer lies inside the arena, and arena >= lower bound. */
ingot_status ig__plan_check(const ig_graph *g, const ig_plan *plan, ig_err *err);

const char *ig__plan_kind_name(ig_plan_kind k); /* "own", "alias", "in-place", "none" */

/* Writers. Each returns INGOT_ERR_IO when the stream reports a write error. */
ingot_status ig__plan_write_json(const ig_graph *g, const ig_plan *plan, FILE *f, ig_err *err);
/* x = step, y = offset; one rectangle per tensor with a <title> tooltip; peak step and LB marked. */
ingot_status ig__plan_write_svg(const ig_graph *g, const ig_plan *plan, FILE *f, ig_err *err);
/* Chrome trace / Perfetto JSON: a counter of live and arena bytes per step, one slice per node, one
 * slice per tensor (tensors spread over lanes so slices in a lane never overlap). 1 step = 1 ms. */
ingot_status ig__plan_write_trace(const ig_graph *g, const ig_plan *plan, FILE *f, ig_err *err);

#endif /* INGOT_PLAN_H */
