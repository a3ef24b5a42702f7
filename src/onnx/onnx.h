/*
 * onnx.h -- the ONNX importer: a protobuf wire-format reader over the memory-mapped file (pb.h),
 * decoding ModelProto straight into an ig_graph. No libprotobuf, no generated structs.
 *
 * What lands where:
 *  - initializers: values with IG_VAL_INITIALIZER | IG_VAL_CONST, dtype/shape and c = the data.
 *    raw_data and packed float_data/double_data are referenced in place (zero-copy, possibly
 *    unaligned); varint fields (int32_data, int64_data, uint64_data) are decoded into the graph arena.
 *    External data is mapped from files next to the model. With load_external_data off, an external
 *    initializer gets dtype/shape and c.dtype/rank/dims but no IG_VAL_CONST and c.data == NULL.
 *  - graph inputs that have an initializer are weights, not inputs; the other inputs get
 *    IG_VAL_INPUT | IG_VAL_DECLARED with dtype/shape = the declaration. Outputs: IG_VAL_OUTPUT, and
 *    decl_* when declared (dtype/shape are left to inference). value_info: decl_* only.
 *  - symbolic dims: dim_param "batch" -> {1, symbol "batch"}; a dim with neither value nor param
 *    gets a fresh "unk__K" symbol.
 *  - attributes: scalars, strings and lists decoded; TENSOR(S) decoded to ig_const like initializers;
 *    GRAPH, SPARSE_TENSOR, TYPE_PROTO keep raw = the serialized message; GRAPHS, SPARSE_TENSORS,
 *    TYPE_PROTOS keep raw = the whole serialized AttributeProto (n = element count). Opaque bytes are
 *    validated (framing, wire types, nesting depth) but not decoded. A missing `type` (old files) is
 *    inferred from the fields present.
 *
 * Errors: INGOT_ERR_MODEL_PARSE (wire format; names the field path and byte offset, e.g.
 * "ModelProto.graph.node[12].attribute[0]: length 4000 at byte 1234 runs past the end of its message
 * (ends at byte 1300)"), INGOT_ERR_MODEL_INVALID (ONNX rules broken; names tensor or node, prefixed by
 * the path), INGOT_ERR_MODEL_UNSUPPORTED_OP (valid ONNX ingot does not handle: string/complex/float8
 * tensors, rank > 8, sequence/map types, sparse initializers), INGOT_ERR_IO (files).
 */
#ifndef INGOT_ONNX_H
#define INGOT_ONNX_H

#include "../ir/ir.h"

/* IG_ONNX_MAX_OPSET, the newest opset of the default domain ingot implements: ../ir/ir.h */

typedef struct ig_onnx_options {
    bool use_mmap;           /* map the file (true) or read it into memory */
    bool load_external_data; /* resolve external data (true) or only record locations */
} ig_onnx_options;

/* A model file kept open (mapped) while a graph references its bytes. Reference-counted: the model
 * holds one reference and every engine built from it another (its graph's initializers point into
 * the mapping), so the model may be destroyed before its engines. */
typedef struct ig_onnx_file ig_onnx_file;

/* Parse `path` into g (initialised by the caller with ig__graph_init), then topologically sort and
 * verify it (ig__graph_toposort, ig__graph_verify). opt NULL: mmap and external data on. On success
 * *file holds the mapping(s) that g's initializer data points into; release it with ig__onnx_close
 * after freeing g. On failure *file is NULL and g holds a partial graph the caller frees. */
ingot_status ig__onnx_load_file(const char *path, const ig_onnx_options *opt, ig_graph *g, ig_onnx_file **file,
                                ig_err *err);
/* The same over a caller's buffer (copied into the returned file object). base_dir resolves external
 * data; NULL forbids it. */
ingot_status ig__onnx_load_buffer(const void *data, size_t n, const char *base_dir, const ig_onnx_options *opt,
                                  ig_graph *g, ig_onnx_file **file, ig_err *err);
/* ---- If branches (src/api/inline_if.c): the names of one branch being inlined into the main graph ---- */
typedef struct ig_onnx_scope {
    const struct ig_onnx_scope *parent; /* the branch this one's If came from; NULL: the main graph's If */
    int32_t n_outer;                    /* the main graph's own values are ids [0, n_outer) */
    /* the branch's own names (initializers, node outputs) -> their values in the main graph, which have
     * fresh names; open addressing, cap a power of two, names NULL in empty slots */
    uint32_t cap;
    int32_t n;
    const char **names;
    int32_t *ids;
    ig_arena *arena; /* where the table lives (the inliner's scratch) */
} ig_onnx_scope;

/* The value the branch's own name `name` stands for, -1 when the branch does not define it. */
int32_t ig__onnx_scope_find(const ig_onnx_scope *s, const char *name);

/* Parse the GraphProto at bytes[0 .. len) -- a branch of If node `node` -- into g: its initializers
 * become constants and its nodes nodes of g, every name it defines a fresh value recorded in scope
 * (cleared by the caller, parent and n_outer set); a name it reads resolves in scope, then in the
 * scopes around it, then among the main graph's own values. outs[0 .. n_outs) receive the values of
 * the branch's outputs, of which there must be exactly n_outs. `what` ("node 'X' (If): then_branch")
 * starts every error message. */
ingot_status ig__onnx_parse_branch(ig_onnx_file *file, ig_graph *g, const uint8_t *bytes, size_t len, const char *what,
                                   ig_onnx_scope *scope, int32_t *outs, int32_t n_outs, ig_err *err);

/* Drop one reference; the last one unmaps and frees. Accepts NULL. */
void ig__onnx_close(ig_onnx_file *file);
/* Take another reference (any thread); returns file. Accepts NULL. */
ig_onnx_file *ig__onnx_retain(ig_onnx_file *file);

/* Read one serialized TensorProto file (the ONNX test-data `input_0.pb` format) into *out, with data
 * (and name) copied into `arena`, 16-byte aligned, so it outlives the file. External data is resolved
 * relative to the file's folder. */
ingot_status ig__onnx_read_tensor_file(const char *path, ig_arena *arena, ig_const *out, ig_err *err);
/* The same over bytes in memory; base_dir resolves external data (NULL forbids it). */
ingot_status ig__onnx_read_tensor_buffer(const void *data, size_t n, const char *base_dir, ig_arena *arena,
                                         ig_const *out, ig_err *err);

/* ---- writing (export.c) ---- */

/* The external-data location of tensors whose bytes lie in the weights section of the engine file
 * that holds the graph (ig__onnx_import_embedded), at IG_ONNX_EMBEDDED_ALIGN-aligned offsets. */
#define IG_ONNX_EMBEDDED "ingot:weights"
/* The domain an engine file stores ONNX ops in that the optimizer made at a later opset than the
 * model's (export.c): ig__op_find resolves an op of the ingot domain that has no ingot definition to
 * ONNX's. */
#define IG_ONNX_LATER_DOMAIN   "ingot"
#define IG_ONNX_EMBEDDED_ALIGN 64

typedef struct ig_onnx_export_options {
    ig_wbuf *weights;  /* NULL: every initializer's bytes inline (raw_data); else appended here, referenced
                          as external data at IG_ONNX_EMBEDDED */
    size_t inline_max; /* with weights: initializers smaller than this stay inline */
    const char *producer, *producer_version; /* NULL: "ingot", "" */
} ig_onnx_export_options;

/* g as a serialized ModelProto into out (freed by the caller): its live nodes in id order, its
 * initializers, declared inputs and outputs, opsets and metadata. */
ingot_status ig__onnx_export(const ig_graph *g, const ig_onnx_export_options *o, ig_wbuf *out, ig_err *err);

/* ---- engine files: a graph embedded in a container ---- */

/* A file (or a copy of a buffer) held open as an ig_onnx_file whose model blob is the whole file, so
 * that a graph embedded in it can be imported (ig__onnx_import_embedded) and its weights referenced in
 * place for as long as the file object lives. *data and *size give the bytes. */
ingot_status ig__onnx_open_container(const char *path, const void *buf, size_t n, bool use_mmap, ig_onnx_file **out,
                                     const uint8_t **data, size_t *size, ig_err *err);
/* Import the ModelProto at pb[0 .. pb_len) (inside file's bytes), whose external data must all lie in
 * weights[0 .. weights_len) (also inside them) at location IG_ONNX_EMBEDDED; then sort and verify g as
 * ig__onnx_load_file does. */
ingot_status ig__onnx_import_embedded(ig_onnx_file *file, const uint8_t *pb, size_t pb_len, const uint8_t *weights,
                                      size_t weights_len, ig_graph *g, ig_err *err);

#endif
