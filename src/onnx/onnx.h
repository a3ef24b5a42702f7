/*
 * onnx.h -- the ONNX importer: protobuf wire format over a memory-mapped file, straight into ig_graph.
 * (Being written: see the reader task.)
 */
#ifndef INGOT_ONNX_H
#define INGOT_ONNX_H

#include "../ir/ir.h"

typedef struct ig_onnx_options {
    bool use_mmap;           /* map the file (true) or read it into memory */
    bool load_external_data; /* resolve external data (true) or only record locations */
} ig_onnx_options;

/* A model file kept open (mapped) while the graph references its bytes. */
typedef struct ig_onnx_file ig_onnx_file;

/* Parse `path` into g (initialised by the caller with ig__graph_init). On success *file holds the
 * mapping that g's initializer data points into; release it with ig__onnx_close after freeing g.
 * Errors name the field and byte offset (INGOT_ERR_MODEL_PARSE), the tensor (external data), or I/O. */
ingot_status ig__onnx_load_file(const char *path, const ig_onnx_options *opt, ig_graph *g, ig_onnx_file **file,
                                ig_err *err);
/* The same over a caller's buffer (copied into the returned file object). base_dir resolves external
 * data; NULL forbids it. */
ingot_status ig__onnx_load_buffer(const void *data, size_t n, const char *base_dir, const ig_onnx_options *opt,
                                  ig_graph *g, ig_onnx_file **file, ig_err *err);
void ig__onnx_close(ig_onnx_file *file);

/* Read one serialized TensorProto file (the ONNX test-data `input_0.pb` format) into *out, with data
 * copied into `arena`. */
ingot_status ig__onnx_read_tensor_file(const char *path, ig_arena *arena, ig_const *out, ig_err *err);

#endif
