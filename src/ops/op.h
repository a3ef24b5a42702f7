/*
 * op.h -- the op registry: one descriptor per ONNX op, holding everything ingot knows about it
 * (arity, which inputs are shape operands, type/shape inference, the CPU reference kernel, cost).
 * Support checks and execution read the same descriptor, so they cannot drift apart.
 *
 * Adding an op: a line in op_list.h, a descriptor `const ig_op_def ig__op_<cname>` in the family file
 * the list names, a node test in tests/conformance/manifest.txt. See docs/ADDING_AN_OP.md.
 *
 * The infer function of an op sees an ig_infer: it reads its inputs' dtypes, shapes and (when known
 * at build time) values, checks attributes, and sets each output's dtype and shape. It never fails
 * silently: a bad attribute or dtype returns ig__fail()/ig__unsupported(), which name the node.
 * The driver (infer.c) then folds the node if all its inputs are constant and the outputs are small,
 * by running the CPU kernel; shape-vector ops also propagate symbolic element values (ig__set_out_sym)
 * so `Reshape(x, Concat(Gather(Shape(x), 0), [-1]))` keeps the symbolic batch.
 */
#ifndef INGOT_OP_H
#define INGOT_OP_H

#include "../ir/ir.h"

/* ---- the op list ---- */
enum ig_op {
#define INGOT_OP(onnx_name, cname, family) IG_OP_##cname,
#include "op_list.h"
#undef INGOT_OP
    IG_OP_COUNT
};

/* ---- inference context ---- */
typedef struct ig_infer {
    ig_graph *g;
    ig_node *node;
    ig_err *err;
    ig_arena *fold_arena; /* where folded constants and symbolic values live */
} ig_infer;

/* ---- CPU execution context ---- */
typedef struct ig_tensor {
    ingot_dtype dtype;
    int32_t rank;
    int64_t dims[IG_MAX_RANK];
    int64_t numel;
    void *data; /* 64-byte aligned, numel * dtype size bytes */
} ig_tensor;

struct ig_pool;

typedef struct ig_exec {
    const ig_graph *g;
    const ig_node *node;
    int32_t n_in, n_out;
    const ig_tensor *const *in; /* [n_in]; NULL for an omitted optional input */
    ig_tensor *const *out;      /* [n_out]; shape set and data allocated by the executor; NULL if omitted */
    void *scratch;              /* cpu_scratch() bytes, 64-byte aligned */
    size_t scratch_bytes;
    struct ig_pool *pool; /* worker threads for ig__parallel_for; NULL runs serially */
    ig_err *err;
} ig_exec;

enum ig_op_flags {
    IG_OP_NOFOLD = 1u << 0,  /* never constant-fold (e.g. ops whose output is large by nature) */
    IG_OP_ALIAS = 1u << 1,   /* output 0 has input 0's bytes unchanged (Reshape, Squeeze, ...) */
    IG_OP_INPLACE = 1u << 2, /* output 0 may overwrite input 0 when same size and input 0 is dead */
};

typedef struct ig_op_def {
    const char *name;      /* ONNX op_type */
    const char *domain;    /* "" for ai.onnx */
    int32_t since;         /* lowest opset version this descriptor implements */
    int8_t min_in, max_in; /* arity, counting omitted optional inputs; max -1 = variadic */
    int8_t min_out, max_out;
    uint32_t shape_inputs; /* bit i: input i's *values* decide output shapes (Reshape's shape, ...) */
    uint32_t flags;        /* ig_op_flags */
    ingot_status (*infer)(ig_infer *cx);
    ingot_status (*cpu)(ig_exec *ex);
    /* scratch bytes the CPU kernel needs for this node (shapes are concrete); NULL: none */
    size_t (*cpu_scratch)(const ig_graph *g, const ig_node *n);
    /* arithmetic operations for this node (shapes concrete); NULL: one per output element */
    double (*flops)(const ig_graph *g, const ig_node *n);
} ig_op_def;

#define INGOT_OP(onnx_name, cname, family) extern const ig_op_def ig__op_##cname;
#include "op_list.h"
#undef INGOT_OP

extern const ig_op_def *const ig__op_table[IG_OP_COUNT];

/* The descriptor for (domain, op_type) in a model importing `opset` of that domain: NULL when ingot
 * has no such op, or only for later opsets (then *too_old is set). */
const ig_op_def *ig__op_find(const char *domain, const char *op_type, int64_t opset, bool *too_old);

/* ---- inference: the driver ---- */
typedef struct ig_infer_options {
    size_t fold_max_bytes; /* fold a node only when each output is at most this large */
    /* leave If nodes, and every node reading a value not typed yet (downstream of an If), uninferred
     * instead of failing: how model loading learns which If conditions are constant (src/api/inline_if.c) */
    bool partial;
} ig_infer_options;

/* Resolve ops, then infer dtypes and shapes of every node in topological order, folding constant
 * sub-graphs. Values computed by a previous run are reset first (inputs keep their bound shapes).
 * Fails naming the node. Also marks graph inputs that decide shapes (IG_VAL_SHAPE_INPUT). */
ingot_status ig__graph_infer(ig_graph *g, const ig_infer_options *opt, ig_arena *fold_arena, ig_err *err);
/* Fill each node's flops and bytes; nodes with symbolic shapes get 0. */
void ig__graph_cost(ig_graph *g);
/* A .flops for ops that only move or reinterpret data (Transpose, Concat, Gather, ...): 0. */
double ig__flops_none(const ig_graph *g, const ig_node *n);
/* A .flops of one operation per element of input 0 (an add or a compare each: reductions, ArgMax,
 * OneHot's index reads). */
double ig__flops_per_input(const ig_graph *g, const ig_node *n);
/* Input i of node n as a value of g, NULL when absent (optional inputs left empty, i out of range). */
const ig_value *ig__node_input(const ig_graph *g, const ig_node *n, int i);

/* ---- helpers for infer functions ---- */
ig_value *ig__in(ig_infer *cx, int i);  /* NULL when absent or omitted */
ig_value *ig__out(ig_infer *cx, int i); /* NULL when absent or omitted */
int ig__n_in(const ig_infer *cx);
/* Set output i's dtype and shape (no-op for an omitted output). */
ingot_status ig__set_out(ig_infer *cx, int i, ingot_dtype t, const ig_shape *s);
/* Attach element values (constant or symbolic) to output i, a 0-D or 1-D int64 tensor of n elements. */
ingot_status ig__set_out_sym(ig_infer *cx, int i, const ig_dim *vals, int32_t n);
/* Fail with a message prefixed "node 'NAME' (OpType): ". */
ingot_status ig__fail(ig_infer *cx, ingot_status st, const char *fmt, ...) IG_PRINTF(3, 4);
#define ig__fail_shape(cx, ...)  ig__fail((cx), INGOT_ERR_MODEL_SHAPE, __VA_ARGS__)
#define ig__unsupported(cx, ...) ig__fail((cx), INGOT_ERR_MODEL_UNSUPPORTED_OP, __VA_ARGS__)
/* Fail unless input i's dtype is one of the types in the mask (bit = 1u << dtype). */
ingot_status ig__check_dtype(ig_infer *cx, int i, uint32_t mask);
#define IG_T(t)     (1u << INGOT_DTYPE_##t)
#define IG_TS_FLOAT (IG_T(FLOAT) | IG_T(FLOAT16) | IG_T(BFLOAT16) | IG_T(DOUBLE))
#define IG_TS_INT \
    (IG_T(INT8) | IG_T(INT16) | IG_T(INT32) | IG_T(INT64) | IG_T(UINT8) | IG_T(UINT16) | IG_T(UINT32) | IG_T(UINT64))
#define IG_TS_NUM (IG_TS_FLOAT | IG_TS_INT)
#define IG_TS_ALL (IG_TS_NUM | IG_T(BOOL))

/* A fresh unknown dim (new "unk__K" symbol). */
ig_dim ig__dim_fresh(ig_infer *cx);
/* Symbolic arithmetic; false when the result is not expressible as n*sym. */
bool ig__dim_mul(ig_dim a, ig_dim b, ig_dim *r);
bool ig__dim_div(ig_dim a, ig_dim b, ig_dim *r); /* exact division only */
bool ig__dim_add(ig_dim a, ig_dim b, ig_dim *r);
bool ig__dim_sub(ig_dim a, ig_dim b, ig_dim *r);

/* Multidirectional (numpy) broadcast of a and b into out; fails naming both shapes. */
ingot_status ig__broadcast(ig_infer *cx, const ig_shape *a, const ig_shape *b, ig_shape *out);
/* Normalise axis into [0, rank) (negative counts from the end); fails naming the attribute. */
ingot_status ig__norm_axis(ig_infer *cx, int64_t axis, int32_t rank, const char *what, int32_t *out);

/* Attributes: the default when absent. A present attribute of a type ONNX does not allow for it never
 * reaches these: the importer rejects it, naming node and attribute (src/onnx/attr_schema.c). */
int64_t ig__attr_int(const ig_node *n, const char *name, int64_t def);
float ig__attr_float(const ig_node *n, const char *name, float def);
const char *ig__attr_str(const ig_node *n, const char *name, const char *def);
/* INTS: true, with the values and their count, when present. */
bool ig__attr_ints(const ig_node *n, const char *name, const int64_t **v, int64_t *count);
bool ig__attr_floats(const ig_node *n, const char *name, const float **v, int64_t *count);
/* The index of s among names [n] (a STRING attribute naming a mode), -1 when it is none of them. */
int ig__str_index(const char *s, const char *const *names, int n);

/* Input i's values when known at build time (initializer, Constant, folded, or symbolic values that
 * happen to be all concrete), converted to int64; fails when not known or larger than max. */
bool ig__in_known(ig_infer *cx, int i);
ingot_status ig__in_ints(ig_infer *cx, int i, int64_t *out, int64_t max, int64_t *count);
/* Input i's values as dims (possibly symbolic): true when every element is known or symbolic. */
bool ig__in_dims(ig_infer *cx, int i, ig_dim *out, int32_t max, int32_t *count);
/* Like ig__in_dims, but a 1-D input of known length 0 also counts (no values). */
bool ig__in_vals(ig_infer *cx, int i, ig_dim *out, int32_t max, int32_t *count);
/* Input i's single value as double when constant (e.g. ConstantOfShape value, Clip min). */
bool ig__in_scalar_f64(ig_infer *cx, int i, double *out);

/* ---- ingot.FusedConv's fused max pool (the conv_pool pass): attribute "pool", 9 ints: kernel h, w,
 * strides h, w, pads top, left, bottom, right, ceil_mode; 2-D, dilation 1. The node's output is the
 * pooled one; the convolution's own output (conv_out) exists only inside the node. ---- */
typedef struct ig_conv_pool {
    int64_t k[2], s[2], pb[2], pe[2];
    bool ceil_mode;
} ig_conv_pool;
/* false when n has no pool; *bad (if given) says the attribute is there but malformed. */
bool ig__conv_pool_of(const ig_node *n, ig_conv_pool *p, bool *bad);
/* The 9 ints v [nv] as a pool: false when they are not a valid one. */
bool ig__conv_pool_read(const int64_t *v, int64_t nv, ig_conv_pool *p);
/* The rest works through MaxPool's own window code (src/ops/conv.c): the pooled size along spatial dim
 * i of a conv output of `in` (0: none); node n's 2-D conv output [N, K, H, W] from the graph's shapes
 * (false: not concrete); and the pool of an fp32 conv output x [xd] into y, fp32. */
int64_t ig__conv_pool_size(const ig_node *n, const ig_conv_pool *p, int i, int64_t in);
bool ig__conv_out_dims(const ig_graph *g, const ig_node *n, int64_t *dims);
void ig__conv_pool_f32(struct ig_pool *pool, const ig_node *n, const ig_conv_pool *p, const float *x, const int64_t *xd,
                       float *y);

/* ---- helpers for CPU kernels ---- */
typedef void (*ig_range_fn)(void *arg, int64_t begin, int64_t end);
/* Run fn over [0, n) split into chunks of at least `grain` across the pool's threads. */
void ig__parallel_for(struct ig_pool *pool, int64_t n, int64_t grain, ig_range_fn fn, void *arg);
struct ig_pool *ig__pool_create(int n_threads); /* n_threads <= 1: NULL (serial) */
void ig__pool_destroy(struct ig_pool *pool);
int ig__pool_threads(const struct ig_pool *pool);

/* Strides (in elements) of a row-major tensor, and of t broadcast to rank dims `dims`
 * (0 where t's dim is 1 and broadcast). */
void ig__strides(const ig_tensor *t, int64_t *strides);
void ig__broadcast_strides(const ig_tensor *t, int32_t rank, const int64_t *dims, int64_t *strides);
/* Set dtype/rank/dims/numel of a tensor (no allocation). */
void ig__tensor_set_shape(ig_tensor *t, ingot_dtype dtype, int32_t rank, const int64_t *dims);

#endif /* INGOT_OP_H */
