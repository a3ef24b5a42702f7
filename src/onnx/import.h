/*
 * import.h -- internals shared by the ONNX importer's files: the file object, the onnx.proto message
 * descriptors (schema.c), TensorProto decoding (tensor.c) and external data (external.c).
 */
#ifndef INGOT_ONNX_IMPORT_H
#define INGOT_ONNX_IMPORT_H

#include "onnx.h"
#include "pb.h"

#include <stdatomic.h>

/* One mapped (or read) file: the model itself or an external data file. */
typedef struct ig_onnx_blob {
    char *path;          /* resolved path (external data), for matching and messages */
    const uint8_t *data; /* NULL when size == 0 */
    size_t size;
    void *map;  /* mmap'd region to unmap, or NULL */
    void *heap; /* ig__malloc'd copy to free, or NULL */
} ig_onnx_blob;

struct ig_onnx_file {
    _Atomic int32_t refs; /* the model and every engine built from it (ig__onnx_retain / ig__onnx_close) */
    ig_onnx_blob model;
    char *dir; /* real path of the folder external data may come from; NULL forbids it */
    ig_onnx_options opt;
    int32_t n_ext, cap_ext;
    ig_onnx_blob *ext; /* [n_ext] external data files, each mapped once */
    /* an engine file's graph (ig__onnx_import_embedded): its external data lies in these bytes of
     * model, at location IG_ONNX_EMBEDDED, and nowhere else */
    bool embedded;
    const uint8_t *weights;
    size_t weights_size;
};

/* ---- the onnx.proto messages ingot reads (schema.c) ---- */
extern const ig_pb_msgdesc ig__pb_model, ig__pb_graph, ig__pb_node, ig__pb_attribute, ig__pb_tensor, ig__pb_value_info,
    ig__pb_type, ig__pb_type_tensor, ig__pb_shape, ig__pb_dim, ig__pb_opset, ig__pb_string_entry;

/* Field numbers used by the parsers. */
enum {
    F_MODEL_IR_VERSION = 1,
    F_MODEL_PRODUCER_NAME = 2,
    F_MODEL_PRODUCER_VERSION = 3,
    F_MODEL_DOMAIN = 4,
    F_MODEL_VERSION = 5,
    F_MODEL_DOC = 6,
    F_MODEL_GRAPH = 7,
    F_MODEL_OPSET = 8,
    F_MODEL_META = 14,

    F_GRAPH_NODE = 1,
    F_GRAPH_NAME = 2,
    F_GRAPH_INIT = 5,
    F_GRAPH_DOC = 10,
    F_GRAPH_INPUT = 11,
    F_GRAPH_OUTPUT = 12,
    F_GRAPH_VALUE_INFO = 13,
    F_GRAPH_SPARSE_INIT = 15,

    F_NODE_INPUT = 1,
    F_NODE_OUTPUT = 2,
    F_NODE_NAME = 3,
    F_NODE_OP_TYPE = 4,
    F_NODE_ATTR = 5,
    F_NODE_DOMAIN = 7,

    F_ATTR_NAME = 1,
    F_ATTR_F = 2,
    F_ATTR_I = 3,
    F_ATTR_S = 4,
    F_ATTR_T = 5,
    F_ATTR_G = 6,
    F_ATTR_FLOATS = 7,
    F_ATTR_INTS = 8,
    F_ATTR_STRINGS = 9,
    F_ATTR_TENSORS = 10,
    F_ATTR_GRAPHS = 11,
    F_ATTR_TP = 14,
    F_ATTR_TYPE_PROTOS = 15,
    F_ATTR_TYPE = 20,
    F_ATTR_REF = 21,
    F_ATTR_SPARSE = 22,
    F_ATTR_SPARSES = 23,

    F_TENSOR_DIMS = 1,
    F_TENSOR_DTYPE = 2,
    F_TENSOR_SEGMENT = 3,
    F_TENSOR_FLOAT = 4,
    F_TENSOR_INT32 = 5,
    F_TENSOR_STRING = 6,
    F_TENSOR_INT64 = 7,
    F_TENSOR_NAME = 8,
    F_TENSOR_RAW = 9,
    F_TENSOR_DOUBLE = 10,
    F_TENSOR_UINT64 = 11,
    F_TENSOR_EXTERNAL = 13,
    F_TENSOR_LOCATION = 14,

    F_VI_NAME = 1,
    F_VI_TYPE = 2,
    F_TYPE_TENSOR = 1,
    F_TYPE_SEQUENCE = 4,
    F_TYPE_MAP = 5,
    F_TYPE_OPAQUE = 7,
    F_TYPE_SPARSE = 8,
    F_TYPE_OPTIONAL = 9,
    F_TT_ELEM = 1,
    F_TT_SHAPE = 2,
    F_SHAPE_DIM = 1,
    F_DIM_VALUE = 1,
    F_DIM_PARAM = 2,
    F_OPSET_DOMAIN = 1,
    F_OPSET_VERSION = 2,
    F_ENTRY_KEY = 1,
    F_ENTRY_VALUE = 2,
};

/* ---- decoding state shared by the parsers ---- */
typedef struct ig_onnx_imp {
    ig_pb_ctx pb;
    ig_arena *arena;    /* where decoded strings and arrays go */
    ig_onnx_file *file; /* external data comes through it */
    bool copy_data;     /* copy every tensor's bytes into arena (standalone tensor files) */
    bool load_external;
} ig_onnx_imp;

/* NUL-terminated arena copy of a string field; fails (naming the field) on an embedded NUL byte,
 * which would make two different names compare equal in C. */
ingot_status ig__onnx_str(ig_onnx_imp *im, const ig_pb_field *f, const char **out);

/* Decode the TensorProto in message m into *out (dtype, dims, data). `what` names it in messages
 * ("initializer", "attribute tensor"). With loaded == NULL, data must be available (external data
 * resolved); otherwise *loaded is false when data_location is EXTERNAL and external data is not being
 * loaded, and out->data stays NULL with n_bytes 0. */
ingot_status ig__onnx_tensor(ig_onnx_imp *im, ig_pb_msg *m, const char *what, ig_const *out, bool *loaded);

/* ONNX TensorProto.DataType as text, for messages: "float32", "string", "float8e4m3fn", "type 99". */
const char *ig__onnx_dtype_name(int64_t t, char *buf, size_t n);
/* The element types ingot computes with. */

/* ---- files (external.c) ---- */
/* Map (or read, when !use_mmap) a whole file into blob. what names it in messages ("model file"). */
ingot_status ig__onnx_blob_open(const char *path, bool use_mmap, const char *what, ig_onnx_blob *blob, ig_err *err);
void ig__onnx_blob_close(ig_onnx_blob *blob);
/* The bytes [offset, offset + length) of external file `location`, relative to file->dir, for tensor
 * `tensor`. has_length false: up to the end of the file. Rejects absolute paths, "..", paths that
 * resolve outside the folder, missing files and ranges past the end. */
ingot_status ig__onnx_external(ig_onnx_imp *im, const char *tensor, const char *location, uint64_t offset,
                               bool has_length, uint64_t length, const uint8_t **data, size_t *n_bytes);

#endif
