/*
 * opt_internal.h -- what the optimizer's passes share: the pass list, the context a pass runs in, and
 * the helpers every pattern matcher needs (constants, scalars, node creation with provenance).
 *
 * A pass reads and edits the IR (src/ir/edit.c), counts its rewrites in cx->n_rewrites and returns a
 * status. It never compacts, sorts or re-infers: the pass manager (opt.c) does that after every pass
 * that changed something, then verifies. Removed nodes are marked dead (ig__graph_remove_node); node
 * and value ids stay valid until the manager compacts.
 */
#ifndef INGOT_OPT_INTERNAL_H
#define INGOT_OPT_INTERNAL_H

#include "opt.h"

/* THE pass list, in the order the passes run (docs/OPTIMIZER.md). Adding a pass: one line here and
 * its file src/opt/<name>.c defining ig__opt_pass_<name>. */
#define IG_OPT_PASSES(X) \
    X(expand_sink)       \
    X(fold)              \
    X(canonical)         \
    X(dce)               \
    X(cse)               \
    X(bn_fold)           \
    X(gelu)              \
    X(layernorm)         \
    X(groupnorm)         \
    X(attention)         \
    X(softmax)           \
    X(sink_views)        \
    X(patchify)          \
    X(conv_epilogue)     \
    X(conv_pool)         \
    X(shortcut_merge)    \
    X(gemm_epilogue)     \
    X(gemm_siblings)     \
    X(pointwise)         \
    X(cleanup)

typedef struct ig_opt_ctx {
    ig_graph *g;
    ig_arena *fold_arena; /* the caller's, for the inference a pass may run (fold) */
    const ig_opt_options *o;
    const char *pass; /* the running pass's name: ig_node.pass of the nodes it makes */
    int32_t n_rewrites;
    bool changed; /* the pass edited the graph without counting it a rewrite (fold's inference) */
    ig_err *err;
    /* [n_varies] values computed from a graph input (as of the pass's start): constant, if at all, only
     * for the shapes or values bound now, not for every run */
    const bool *varies;
    int32_t n_varies;
} ig_opt_ctx;

typedef ingot_status (*ig_opt_pass_fn)(ig_opt_ctx *cx);

typedef struct ig_opt_pass {
    const char *name;
    ig_opt_pass_fn run;
} ig_opt_pass;

#define IG_OPT_DECLARE(name) ingot_status ig__opt_pass_##name(ig_opt_ctx *cx);
IG_OPT_PASSES(IG_OPT_DECLARE)
#undef IG_OPT_DECLARE

/* ig__optimize over any pass list: what it runs with opt.c's table, and what tests run with a pass of
 * their own (a deliberately broken one, to see the manager name it). */
ingot_status ig__opt_run(ig_graph *g, ig_arena *fold_arena, const ig_opt_options *o, const ig_opt_pass *passes,
                         int32_t n_passes, ig_opt_report *rep, ig_err *err);

/* ---- reading the graph in a pattern ---------------------------------------------------------- */

/* The live node producing v, -1 when none. */
static inline int32_t ig__opt_producer(const ig_graph *g, int32_t v)
{
    int32_t p = v >= 0 ? g->values[v].producer : -1;
    return p >= 0 && !g->nodes[p].dead ? p : -1;
}
/* Node id exists, is live and computes op. */
static inline bool ig__opt_is(const ig_graph *g, int32_t id, int32_t op)
{
    return id >= 0 && !g->nodes[id].dead && g->nodes[id].op == op;
}
static inline int32_t ig__opt_out0(const ig_graph *g, int32_t id) { return g->nodes[id].outputs[0]; }

/* The float types the fused ops compute in (fp32 math over fp32/fp16/bf16 storage). */
static inline bool ig__opt_float_type(ingot_dtype t)
{
    return t == INGOT_DTYPE_FLOAT || t == INGOT_DTYPE_FLOAT16 || t == INGOT_DTYPE_BFLOAT16;
}

/* ---- constants -------------------------------------------------------------------------------- */

/* A build-time constant for every run: the value's data is known and does not come from a graph input
 * (a bound shape input is constant only for the shapes it was bound with). */
bool ig__opt_is_const(const ig_opt_ctx *cx, int32_t v);
/* Element count of a constant (its c.dims); -1 when v is not a constant. */
int64_t ig__opt_const_numel(const ig_opt_ctx *cx, int32_t v);
/* The value of a one-element constant as double. */
bool ig__opt_const_scalar(const ig_opt_ctx *cx, int32_t v, double *out);
/* A one-element float constant whose rank does not exceed max_rank (broadcasting it against a tensor of
 * that rank keeps the tensor's shape), of value within rel (relative) of want. */
bool ig__opt_scalar_near(const ig_opt_ctx *cx, int32_t v, int32_t max_rank, double want, double rel);
/* The other input of a two-input node, when one of its inputs is v; -1 otherwise. */
int32_t ig__opt_other_input(const ig_node *n, int32_t v);

/* ---- making nodes ----------------------------------------------------------------------------- */

/* A new node (ig__graph_add_node) stamped with the running pass and the opset it needs; a node of a
 * domain other than ai.onnx also gets that domain imported into the graph. -1 on failure. Pointers
 * into g->nodes are invalid after this call. */
int32_t ig__opt_add_node(ig_opt_ctx *cx, const char *name, const char *op_type, const char *domain, int32_t opset,
                         int32_t n_inputs, int32_t n_outputs, int32_t n_attrs);
/* A copy of node `src` (op, opset, attributes, inputs; it covers src) with input `slot` replaced by
 * `in` (in < 0: kept) and output 0 `out`, the other outputs absent. -1 on failure. */
int32_t ig__opt_copy_node(ig_opt_ctx *cx, int32_t src, int32_t slot, int32_t in, int32_t out);
/* Provenance: node `made` covers the labels of the model nodes `replaced` compute (a replaced node the
 * optimizer made itself passes on its own covers), strings in the graph's arena. */
ingot_status ig__opt_set_covers(ig_opt_ctx *cx, int32_t made, const int32_t *replaced, int32_t n_replaced);
/* Output slot j of node `node` becomes value v (its producer). */
void ig__opt_set_output(ig_graph *g, int32_t node, int32_t j, int32_t v);
/* How a pattern rewrite ends: `made` covers replaced[0 .. n), which are removed, takes over value y as
 * its output 0, and one rewrite is counted. */
ingot_status ig__opt_replace(ig_opt_ctx *cx, int32_t made, const int32_t *replaced, int32_t n, int32_t y);

/* ---- walking a pass over the graph ------------------------------------------------------------- */

/* What a pattern pass sees while it walks: the uses as of its start and, for a walk in g->order, every
 * node's position there (ig__opt_order_pos). Rewrites along the way kill nodes: a visit checks that
 * what it matches is live. */
typedef struct ig_opt_walk {
    ig_uses u;
    int32_t *pos; /* in-order walks only */
    int32_t cap;
} ig_opt_walk;
typedef ingot_status (*ig_opt_visit_fn)(ig_opt_ctx *cx, ig_opt_walk *w, int32_t id);
/* Visit every node that existed when the walk started, by id or (in_order) in g->order; stops at the
 * first error. */
ingot_status ig__opt_walk(ig_opt_ctx *cx, bool in_order, ig_opt_visit_fn visit);

/* ---- pointwise groups (src/opt/group.c): what conv_epilogue, gemm_epilogue and pointwise share ---- */

#include "../ops/pw.h"

/* A group of elementwise nodes computed by one pointwise program. The caller describes where it starts
 * (an anchor node, a seed value or a first member, the fixed program inputs), ig__opt_group_grow adds
 * the nodes that can join, and the caller makes the fused node from the result. */
typedef struct ig_opt_group {
    /* set by the caller */
    int32_t anchor;    /* external inputs come from before this node in g->order */
    bool int_math;     /* the program's math type */
    int32_t max_in;    /* program inputs allowed, fixed ones included */
    int32_t max_ops;   /* instructions allowed, the prelude included */
    ingot_dtype dtype; /* the final value's dtype (the fused op's output type); UNDEFINED: any */
    ig_shape shape;    /* every member's output shape (with widen: the last member's) */
    /* a member may have a larger shape that the group's broadcasts to: the group's shape grows to it, and
     * the earlier members' values are computed per element of it (the pointwise pass: GRN's Add(mean,
     * eps) [N,1,1,1] joins the Div and the Mul over [N,H,W,C] instead of a launch for two elements) */
    bool widen;
    int32_t n_fixed; /* program inputs 0 .. n_fixed-1: in[], the caller's */
    int32_t seed;    /* the group value the program starts from (input 0, or pre's result); -1: none */
    bool has_pre;    /* one instruction over the fixed inputs computes the seed (Gemm's acc + beta * C) */
    ig_pw_inst pre;
    /* the group (members[0] may be set by the caller, with n_members 1 and no seed) */
    int32_t n_members;
    int32_t members[IG_PW_MAX_OPS];
    /* results */
    int32_t n_in;
    int32_t in[IG_PW_MAX_IN]; /* the program's inputs: fixed ones, then external values in order of use */
    int32_t final;            /* the value the program computes (the last member's output, or the seed) */
    ig_pw_prog prog;
} ig_opt_group;

/* Every live node's position in g->order, -1 for others; room for one new node per node (the fused
 * nodes the group passes make, placed by ig__opt_group_finish). *pos is ig__malloc'ed, *cap its size. */
ingot_status ig__opt_order_pos(ig_opt_ctx *cx, int32_t **pos, int32_t *cap);
/* Grow gr (docs/OPTIMIZER.md, "conv_epilogue"): repeatedly add the earliest node in g->order that reads
 * a group value, fits the program's math type, has exactly gr->shape, and whose other inputs are group
 * values, scalar constants (folded into k) or external values (build-time constants, graph inputs,
 * outputs of nodes before the anchor), within the limits; keep the last closed state (every group
 * value but the final one read only by members, none a graph output). gr->prog holds its program.
 * Returns the member count of that state (the caller's own members included), -1 when the caller's
 * own state does not translate. */
int32_t ig__opt_group_grow(const ig_opt_ctx *cx, const ig_uses *u, const int32_t *pos, ig_opt_group *gr);
/* After the caller made node `made` computing gr: the members are removed, `made` takes over
 * gr->final and sits at the last member's position in pos. */
void ig__opt_group_finish(ig_opt_ctx *cx, const ig_opt_group *gr, int32_t made, int32_t *pos, int32_t cap);
/* A one-element constant of rank at most max_rank (Mul-ing or Add-ing it keeps a tensor's shape): its
 * value. */
bool ig__opt_rank_scalar(const ig_opt_ctx *cx, int32_t v, int32_t max_rank, double *k);
/* Shapes of equal rank and dims (ig__dim_eq). */
bool ig__opt_shape_eq(const ig_shape *a, const ig_shape *b);

/* ---- softmax patterns (src/opt/softmax.c), shared with attention ---- */

/* n is a Softmax or LogSoftmax over the last axis of its rank-r input (opset 13's default -1, or an
 * older opset's axis = r - 1, whose 2-D coercion is the same thing). */
bool ig__opt_softmax_last(const ig_node *n, int32_t r);
/* mask broadcasts to s by numpy's rules, proved on symbolic dims: each dim equal, or a known 1. */
bool ig__opt_mask_fits(const ig_shape *mask, const ig_shape *s);
/* The value a fused node should read for an additive mask added to scores of shape s: the mask, or
 * what an Expand of it broadcast (when that broadcasts to s too: the fused kernels broadcast masks
 * themselves), and -1 when that is a constant of zeros, which adds nothing (transformers' mask of an
 * unmasked ViT, once expand_sink and fold made it a constant). */
int32_t ig__opt_mask_source(const ig_opt_ctx *cx, int32_t mask, const ig_shape *s);
/* The guard Where(IsNaN(p), 0, p) on p (p read by exactly those two nodes, not a graph output): its
 * output, with the IsNaN and the Where in nodes[]; -1 when absent. */
int32_t ig__opt_nan_guard(const ig_opt_ctx *cx, const ig_uses *u, int32_t p, int32_t nodes[2]);

#endif /* INGOT_OPT_INTERNAL_H */
