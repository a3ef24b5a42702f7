/*
 * ir.h -- ingot's graph: values (tensors), nodes with parsed attributes, symbolic dims.
 *
 * Everything a graph holds lives in its arena and is freed with it. Values and nodes are addressed by
 * index (int32_t ids) so that arrays can grow and later stages (planner, engine file) can serialise
 * them without pointer fix-ups. Initializer bytes are referenced where they lie (the mapped model
 * file) and may be unaligned: read them through core.h's load helpers or copy them.
 *
 * Dims are either concrete or `n * symbol` (n >= 1), which carries a symbolic batch through the
 * Shape -> Gather -> Mul -> Concat -> Reshape chains exporters emit (batch*128 / 128 = batch). A dim
 * no rule can express gets a fresh symbol "unk__K", as ONNX's own inference does.
 *
 * No CUDA and no ONNX protobuf here: the importer (src/onnx) builds graphs with the functions below.
 */
#ifndef INGOT_IR_H
#define INGOT_IR_H

#include "../core/core.h"

/* The newest opset of the default domain ingot implements: that of the onnx release the conformance
 * suite is pinned to (tests/conformance). A model importing a later one is refused, naming it; an ONNX
 * op an engine file stores in the ingot domain (made by the optimizer at a later opset than the model
 * imports, src/onnx/export.c) is read in this opset's form. */
#define IG_ONNX_MAX_OPSET         28
#define IG_ONNX_MAX_OPSET_RELEASE "1.23.1"

#define IG_MAX_RANK INGOT_MAX_RANK
#define IG_NOSYM    (-1)
/* Small integer tensors (shape vectors) also carry their values symbolically, up to this many. */
#define IG_MAX_SYMVAL 16

typedef struct ig_dim {
    int64_t n;   /* the value, or the coefficient of sym (>= 1) */
    int32_t sym; /* IG_NOSYM, or index into graph->syms */
} ig_dim;

static inline ig_dim ig__dim_const(int64_t n)
{
    ig_dim d = {n, IG_NOSYM};
    return d;
}
static inline bool ig__dim_known(ig_dim d) { return d.sym == IG_NOSYM; }
static inline bool ig__dim_eq(ig_dim a, ig_dim b) { return a.n == b.n && a.sym == b.sym; }

typedef struct ig_shape {
    int32_t rank; /* -1: unknown rank */
    ig_dim d[IG_MAX_RANK];
} ig_shape;

/* ONNX AttributeProto.AttributeType values */
typedef enum ig_attr_type {
    IG_ATTR_UNDEFINED = 0,
    IG_ATTR_FLOAT = 1,
    IG_ATTR_INT = 2,
    IG_ATTR_STRING = 3,
    IG_ATTR_TENSOR = 4,
    IG_ATTR_GRAPH = 5,
    IG_ATTR_FLOATS = 6,
    IG_ATTR_INTS = 7,
    IG_ATTR_STRINGS = 8,
    IG_ATTR_TENSORS = 9,
    IG_ATTR_GRAPHS = 10,
    IG_ATTR_SPARSE_TENSOR = 11,
    IG_ATTR_SPARSE_TENSORS = 12,
    IG_ATTR_TYPE_PROTO = 13,
    IG_ATTR_TYPE_PROTOS = 14,
} ig_attr_type;

/* A constant tensor: initializer, Constant's value, folded result. */
typedef struct ig_const {
    ingot_dtype dtype;
    int32_t rank;
    int64_t dims[IG_MAX_RANK];
    const void *data; /* little-endian elements, possibly unaligned, NULL when n_bytes == 0 */
    size_t n_bytes;
    const char *name;
} ig_const;

typedef struct ig_attr {
    const char *name;
    ig_attr_type type;
    int64_t i;
    float f;
    const char *s; /* STRING: NUL-terminated copy */
    size_t s_len;
    int64_t n;            /* element count of the list kinds */
    const int64_t *ints;  /* INTS [n] */
    const float *floats;  /* FLOATS [n] */
    const char **strings; /* STRINGS [n] */
    ig_const *t;          /* TENSOR; TENSORS: array [n] */
    const uint8_t *raw;   /* GRAPH(S), SPARSE_TENSOR(S), TYPE_PROTO(S): undecoded bytes, kept opaque */
    size_t raw_len;
} ig_attr;

enum ig_value_flags {
    IG_VAL_INPUT = 1u << 0,       /* graph input (caller provides it) */
    IG_VAL_OUTPUT = 1u << 1,      /* graph output */
    IG_VAL_INITIALIZER = 1u << 2, /* weight from the file */
    IG_VAL_CONST = 1u << 3,       /* value known at build time (initializer, Constant, folded) */
    IG_VAL_DECLARED = 1u << 4,    /* the file declared a type (input/output/value_info) */
    IG_VAL_SHAPE_INPUT = 1u << 5, /* graph input whose values decide shapes (bound before planning) */
};

typedef struct ig_value {
    const char *name;
    ingot_dtype dtype; /* UNDEFINED until known */
    ig_shape shape;
    int32_t producer; /* node id, -1 for graph inputs, initializers and unproduced names */
    uint32_t flags;
    ig_const c;             /* with IG_VAL_CONST: the data (c.dtype/c.rank/c.dims mirror dtype/shape) */
    int32_t n_sym;          /* > 0: element values of a small int/bool tensor, possibly symbolic */
    ig_dim *sym;            /* [n_sym] */
    ingot_dtype decl_dtype; /* what the file declared, for checking (IG_VAL_DECLARED) */
    ig_shape decl_shape;
    const char *decl_dim_names[IG_MAX_RANK]; /* dim_param names as declared, NULL for values */
} ig_value;

typedef struct ig_node {
    const char *name; /* "" when the file gave none */
    const char *op_type;
    const char *domain; /* "" for ai.onnx */
    int32_t op;         /* index into the op table (enum ig_op), -1 when unknown */
    int32_t opset;      /* version of the node's domain imported by the model */
    int32_t n_inputs, n_outputs, n_attrs;
    int32_t *inputs;                         /* [n_inputs] value ids, -1 for an omitted optional input */
    int32_t *outputs;                        /* [n_outputs] value ids, -1 for an omitted optional output */
    ig_attr *attrs;                          /* [n_attrs] */
    bool folded;                             /* all outputs computed at build time */
    bool dead;                               /* removed by an edit; dropped by ig__graph_compact */
    double flops, bytes_read, bytes_written; /* from cost analysis */
    /* provenance of nodes the optimizer made (src/opt): NULL / 0 for the model's own nodes */
    const char *pass;    /* the pass that created it */
    int32_t n_covers;    /* labels ("name (Op)") of the model's nodes it computes, transitively */
    const char **covers; /* [n_covers] */
} ig_node;

typedef struct ig_opset {
    const char *domain;
    int64_t version;
} ig_opset;

typedef struct ig_graph {
    ig_arena arena;
    const char *name;
    int64_t ir_version;
    const char *producer_name, *producer_version, *model_domain, *doc;
    int64_t model_version;
    int32_t n_opsets;
    ig_opset *opsets;
    int32_t n_meta;
    const char **meta_keys, **meta_values;

    int32_t n_values, cap_values;
    ig_value *values;
    int32_t n_nodes, cap_nodes;
    ig_node *nodes;
    int32_t n_inputs, n_outputs, n_initializers;
    int32_t *inputs;  /* [n_inputs] graph inputs that are not initializers, in file order */
    int32_t *outputs; /* [n_outputs] */
    int32_t *order;   /* [n_nodes] topological execution order (after ig__graph_toposort) */
    int32_t n_syms, cap_syms;
    const char **syms; /* [n_syms] symbol names: "batch", "unk__0", ... */

    /* name -> value id, open addressing; capacity a power of two */
    int32_t *index;
    uint32_t index_cap;

    /* an instance (ig__graph_instance): the graph whose structure this one shares, else NULL */
    const struct ig_graph *base;
} ig_graph;

/* ---- building ---- */
ingot_status ig__graph_init(ig_graph *g, ig_err *err);
void ig__graph_free(ig_graph *g);
/* The value with this name, created (dtype UNDEFINED, rank -1) if absent. -1 on out of memory. Never on an
 * instance (ig__graph_instance): it shares its base's name index. */
int32_t ig__graph_value(ig_graph *g, const char *name, ig_err *err);
/* The id of an existing value, -1 if none. */
int32_t ig__graph_find(const ig_graph *g, const char *name);
/* Append a node; inputs/outputs/attrs are filled by the caller afterwards. -1 on out of memory. */
int32_t ig__graph_add_node(ig_graph *g, const char *name, const char *op_type, const char *domain, int32_t n_inputs,
                           int32_t n_outputs, int32_t n_attrs, ig_err *err);
/* Symbol id for a name (interned), -1 on out of memory. NULL name makes a fresh "unk__K". */
int32_t ig__graph_symbol(ig_graph *g, const char *name);
int64_t ig__graph_opset(const ig_graph *g, const char *domain); /* 0 when not imported */

/* ---- checking and ordering ---- */
/* Topological order into g->order. Fails naming a node on a cycle. */
ingot_status ig__graph_toposort(ig_graph *g, ig_err *err);
/* Structural checks: every input produced or provided, one producer per value, names unique, graph
 * outputs produced, declared types consistent. Names the node or tensor that fails. */
ingot_status ig__graph_verify(const ig_graph *g, ig_err *err);

/* ---- copies (src/ir/copy.c) ---- */
/* A deep copy of src into dst (initialised here): values, nodes, attributes, names, opsets and
 * metadata in dst's arena. Constant data that lies in src's arena (decoded initializers, attribute
 * tensors) is copied; data elsewhere (the model file's mapping) is referenced, so the caller keeps
 * that memory alive as long as dst. Values that are constant only by inference (folded) are reset
 * to "not inferred": dst must be inferred before use. */
ingot_status ig__graph_clone(const ig_graph *src, ig_graph *dst, ig_err *err);
/* An instance of g for running one set of shapes: its own values, nodes, symbols and arena (what
 * inference writes); node inputs/outputs/attributes, names, order and the name index are g's, so g
 * must outlive the instance and stay unchanged. ig__graph_free frees an instance correctly. */
ingot_status ig__graph_instance(const ig_graph *g, ig_graph *inst, ig_err *err);

/* ---- editing (src/ir/edit.c): the optimizer's primitives ---- */
/* Consumers of every value over the live (not dead) nodes, as CSR: node ids reading value v are
 * node[off[v] .. off[v+1]), each node once per value however many of its inputs name v. */
typedef struct ig_uses {
    int32_t n_values;
    int32_t *off;    /* [n_values + 1] */
    int32_t *node;   /* [off[n_values]] */
    bool *is_output; /* [n_values] graph outputs */
} ig_uses;
ingot_status ig__uses_build(const ig_graph *g, ig_uses *u, ig_err *err);
void ig__uses_free(ig_uses *u);
static inline int32_t ig__uses_count(const ig_uses *u, int32_t v) { return u->off[v + 1] - u->off[v]; }
/* The one node reading v, or -1 when v has none, several, or is a graph output. */
int32_t ig__uses_sole(const ig_uses *u, int32_t v);
/* Every input of a live node naming value `from` names `to` instead (graph outputs keep their value). */
void ig__graph_replace_uses(ig_graph *g, int32_t from, int32_t to);
/* Mark a node dead; its outputs lose their producer. */
void ig__graph_remove_node(ig_graph *g, int32_t node);
/* Drop dead nodes (renumbering the others and the values' producers), then sort. */
ingot_status ig__graph_compact(ig_graph *g, ig_err *err);
/* A new value named after base, unique in the graph ("base", "base__1", ...). -1 on out of memory. */
int32_t ig__graph_new_value(ig_graph *g, const char *base, ig_err *err);
/* A new initializer holding a copy of data (64-byte aligned, in the graph's arena). -1 on failure. */
int32_t ig__graph_add_const(ig_graph *g, const char *base, ingot_dtype dtype, int32_t rank, const int64_t *dims,
                            const void *data, ig_err *err);
/* Attribute i of node n (made by ig__graph_add_node with n_attrs > i), copied into the graph's arena. */
ingot_status ig__node_set_int(ig_graph *g, ig_node *n, int32_t i, const char *name, int64_t v, ig_err *err);
ingot_status ig__node_set_float(ig_graph *g, ig_node *n, int32_t i, const char *name, float v, ig_err *err);
ingot_status ig__node_set_string(ig_graph *g, ig_node *n, int32_t i, const char *name, const char *v, ig_err *err);
ingot_status ig__node_set_ints(ig_graph *g, ig_node *n, int32_t i, const char *name, const int64_t *v, int64_t count,
                               ig_err *err);
ingot_status ig__node_set_floats(ig_graph *g, ig_node *n, int32_t i, const char *name, const float *v, int64_t count,
                                 ig_err *err);
/* Copy attribute a (of any type) into attribute slot i of n. */
ingot_status ig__node_copy_attr(ig_graph *g, ig_node *n, int32_t i, const ig_attr *a, ig_err *err);

/* ---- helpers ---- */
const ig_attr *ig__node_attr(const ig_node *n, const char *name);
const char *ig__node_label(const ig_node *n); /* name, or "#<op_type>" when unnamed; for messages */
/* Format a shape "[batch,3,224,224]" into buf; returns buf. */
char *ig__shape_str(const ig_graph *g, const ig_shape *s, char *buf, size_t n);
char *ig__dim_str(const ig_graph *g, ig_dim d, char *buf, size_t n);
/* Element count; false when a dim is symbolic or unknown rank, or on overflow. */
bool ig__shape_numel(const ig_shape *s, int64_t *out);
bool ig__shape_known(const ig_shape *s);
size_t ig__value_bytes(const ig_value *v); /* 0 when not concrete */

#endif /* INGOT_IR_H */
