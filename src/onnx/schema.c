/*
 * schema.c -- the part of onnx.proto ingot reads, as wire-reader descriptors: field numbers, names
 * for error paths, and kinds for wire-type checks. Nested message types are linked so opaque parts
 * (subgraphs, type protos) can be validated without decoding them. Fields not listed are skipped.
 */
#include "import.h"

#define N(a)                 ((int)(sizeof(a) / sizeof((a)[0])))
#define MSG(var, nm, fields) const ig_pb_msgdesc var = {nm, N(fields), fields}

/* Every descriptor refers to others; these declarations let the tables below link in any order. */
static const ig_pb_msgdesc segment_desc, sparse_tensor_desc, type_seq_desc, type_map_desc, type_opt_desc,
    type_sparse_desc, type_opaque_desc, annotation_desc, training_desc, function_desc;

static const ig_pb_fielddesc entry_f[] = {
    {F_ENTRY_KEY, IG_PBK_BYTES, "key", NULL},
    {F_ENTRY_VALUE, IG_PBK_BYTES, "value", NULL},
};
MSG(ig__pb_string_entry, "StringStringEntryProto", entry_f);

static const ig_pb_fielddesc opset_f[] = {
    {F_OPSET_DOMAIN, IG_PBK_BYTES, "domain", NULL},
    {F_OPSET_VERSION, IG_PBK_VARINT, "version", NULL},
};
MSG(ig__pb_opset, "OperatorSetIdProto", opset_f);

static const ig_pb_fielddesc segment_f[] = {
    {1, IG_PBK_VARINT, "begin", NULL},
    {2, IG_PBK_VARINT, "end", NULL},
};
static MSG(segment_desc, "TensorProto.Segment", segment_f);

static const ig_pb_fielddesc tensor_f[] = {
    {F_TENSOR_DIMS, IG_PBK_RVARINT, "dims", NULL},
    {F_TENSOR_DTYPE, IG_PBK_VARINT, "data_type", NULL},
    {F_TENSOR_SEGMENT, IG_PBK_MSG, "segment", &segment_desc},
    {F_TENSOR_FLOAT, IG_PBK_RI32, "float_data", NULL},
    {F_TENSOR_INT32, IG_PBK_RVARINT, "int32_data", NULL},
    {F_TENSOR_STRING, IG_PBK_BYTES, "string_data", NULL},
    {F_TENSOR_INT64, IG_PBK_RVARINT, "int64_data", NULL},
    {F_TENSOR_NAME, IG_PBK_BYTES, "name", NULL},
    {F_TENSOR_RAW, IG_PBK_BYTES, "raw_data", NULL},
    {F_TENSOR_DOUBLE, IG_PBK_RI64, "double_data", NULL},
    {F_TENSOR_UINT64, IG_PBK_RVARINT, "uint64_data", NULL},
    {12, IG_PBK_BYTES, "doc_string", NULL},
    {F_TENSOR_EXTERNAL, IG_PBK_RMSG, "external_data", &ig__pb_string_entry},
    {F_TENSOR_LOCATION, IG_PBK_VARINT, "data_location", NULL},
    {16, IG_PBK_RMSG, "metadata_props", &ig__pb_string_entry},
};
MSG(ig__pb_tensor, "TensorProto", tensor_f);

static const ig_pb_fielddesc sparse_tensor_f[] = {
    {1, IG_PBK_MSG, "values", &ig__pb_tensor},
    {2, IG_PBK_MSG, "indices", &ig__pb_tensor},
    {3, IG_PBK_RVARINT, "dims", NULL},
};
static MSG(sparse_tensor_desc, "SparseTensorProto", sparse_tensor_f);

static const ig_pb_fielddesc dim_f[] = {
    {F_DIM_VALUE, IG_PBK_VARINT, "dim_value", NULL},
    {F_DIM_PARAM, IG_PBK_BYTES, "dim_param", NULL},
    {3, IG_PBK_BYTES, "denotation", NULL},
};
MSG(ig__pb_dim, "TensorShapeProto.Dimension", dim_f);

static const ig_pb_fielddesc shape_f[] = {
    {F_SHAPE_DIM, IG_PBK_RMSG, "dim", &ig__pb_dim},
};
MSG(ig__pb_shape, "TensorShapeProto", shape_f);

static const ig_pb_fielddesc type_tensor_f[] = {
    {F_TT_ELEM, IG_PBK_VARINT, "elem_type", NULL},
    {F_TT_SHAPE, IG_PBK_MSG, "shape", &ig__pb_shape},
};
MSG(ig__pb_type_tensor, "TypeProto.Tensor", type_tensor_f);

static const ig_pb_fielddesc type_seq_f[] = {
    {1, IG_PBK_MSG, "elem_type", &ig__pb_type},
};
static MSG(type_seq_desc, "TypeProto.Sequence", type_seq_f);
static MSG(type_opt_desc, "TypeProto.Optional", type_seq_f);

static const ig_pb_fielddesc type_map_f[] = {
    {1, IG_PBK_VARINT, "key_type", NULL},
    {2, IG_PBK_MSG, "value_type", &ig__pb_type},
};
static MSG(type_map_desc, "TypeProto.Map", type_map_f);
static MSG(type_sparse_desc, "TypeProto.SparseTensor", type_tensor_f);

static const ig_pb_fielddesc type_opaque_f[] = {
    {1, IG_PBK_BYTES, "domain", NULL},
    {2, IG_PBK_BYTES, "name", NULL},
};
static MSG(type_opaque_desc, "TypeProto.Opaque", type_opaque_f);

static const ig_pb_fielddesc type_f[] = {
    {F_TYPE_TENSOR, IG_PBK_MSG, "tensor_type", &ig__pb_type_tensor},
    {F_TYPE_SEQUENCE, IG_PBK_MSG, "sequence_type", &type_seq_desc},
    {F_TYPE_MAP, IG_PBK_MSG, "map_type", &type_map_desc},
    {6, IG_PBK_BYTES, "denotation", NULL},
    {F_TYPE_OPAQUE, IG_PBK_MSG, "opaque_type", &type_opaque_desc},
    {F_TYPE_SPARSE, IG_PBK_MSG, "sparse_tensor_type", &type_sparse_desc},
    {F_TYPE_OPTIONAL, IG_PBK_MSG, "optional_type", &type_opt_desc},
};
MSG(ig__pb_type, "TypeProto", type_f);

static const ig_pb_fielddesc value_info_f[] = {
    {F_VI_NAME, IG_PBK_BYTES, "name", NULL},
    {F_VI_TYPE, IG_PBK_MSG, "type", &ig__pb_type},
    {3, IG_PBK_BYTES, "doc_string", NULL},
    {4, IG_PBK_RMSG, "metadata_props", &ig__pb_string_entry},
};
MSG(ig__pb_value_info, "ValueInfoProto", value_info_f);

static const ig_pb_fielddesc attribute_f[] = {
    {F_ATTR_NAME, IG_PBK_BYTES, "name", NULL},
    {F_ATTR_F, IG_PBK_I32, "f", NULL},
    {F_ATTR_I, IG_PBK_VARINT, "i", NULL},
    {F_ATTR_S, IG_PBK_BYTES, "s", NULL},
    {F_ATTR_T, IG_PBK_MSG, "t", &ig__pb_tensor},
    {F_ATTR_G, IG_PBK_MSG, "g", &ig__pb_graph},
    {F_ATTR_FLOATS, IG_PBK_RI32, "floats", NULL},
    {F_ATTR_INTS, IG_PBK_RVARINT, "ints", NULL},
    {F_ATTR_STRINGS, IG_PBK_BYTES, "strings", NULL},
    {F_ATTR_TENSORS, IG_PBK_RMSG, "tensors", &ig__pb_tensor},
    {F_ATTR_GRAPHS, IG_PBK_RMSG, "graphs", &ig__pb_graph},
    {13, IG_PBK_BYTES, "doc_string", NULL},
    {F_ATTR_TP, IG_PBK_MSG, "tp", &ig__pb_type},
    {F_ATTR_TYPE_PROTOS, IG_PBK_RMSG, "type_protos", &ig__pb_type},
    {F_ATTR_TYPE, IG_PBK_VARINT, "type", NULL},
    {F_ATTR_REF, IG_PBK_BYTES, "ref_attr_name", NULL},
    {F_ATTR_SPARSE, IG_PBK_MSG, "sparse_tensor", &sparse_tensor_desc},
    {F_ATTR_SPARSES, IG_PBK_RMSG, "sparse_tensors", &sparse_tensor_desc},
};
MSG(ig__pb_attribute, "AttributeProto", attribute_f);

static const ig_pb_fielddesc node_f[] = {
    {F_NODE_INPUT, IG_PBK_BYTES, "input", NULL},
    {F_NODE_OUTPUT, IG_PBK_BYTES, "output", NULL},
    {F_NODE_NAME, IG_PBK_BYTES, "name", NULL},
    {F_NODE_OP_TYPE, IG_PBK_BYTES, "op_type", NULL},
    {F_NODE_ATTR, IG_PBK_RMSG, "attribute", &ig__pb_attribute},
    {6, IG_PBK_BYTES, "doc_string", NULL},
    {F_NODE_DOMAIN, IG_PBK_BYTES, "domain", NULL},
    {8, IG_PBK_BYTES, "overload", NULL},
    {9, IG_PBK_RMSG, "metadata_props", &ig__pb_string_entry},
    {10, IG_PBK_RMSG, "device_configurations", NULL},
};
MSG(ig__pb_node, "NodeProto", node_f);

static const ig_pb_fielddesc annotation_f[] = {
    {1, IG_PBK_BYTES, "tensor_name", NULL},
    {2, IG_PBK_RMSG, "quant_parameter_tensor_names", &ig__pb_string_entry},
};
static MSG(annotation_desc, "TensorAnnotation", annotation_f);

static const ig_pb_fielddesc graph_f[] = {
    {F_GRAPH_NODE, IG_PBK_RMSG, "node", &ig__pb_node},
    {F_GRAPH_NAME, IG_PBK_BYTES, "name", NULL},
    {F_GRAPH_INIT, IG_PBK_RMSG, "initializer", &ig__pb_tensor},
    {F_GRAPH_DOC, IG_PBK_BYTES, "doc_string", NULL},
    {F_GRAPH_INPUT, IG_PBK_RMSG, "input", &ig__pb_value_info},
    {F_GRAPH_OUTPUT, IG_PBK_RMSG, "output", &ig__pb_value_info},
    {F_GRAPH_VALUE_INFO, IG_PBK_RMSG, "value_info", &ig__pb_value_info},
    {14, IG_PBK_RMSG, "quantization_annotation", &annotation_desc},
    {F_GRAPH_SPARSE_INIT, IG_PBK_RMSG, "sparse_initializer", &sparse_tensor_desc},
    {16, IG_PBK_RMSG, "metadata_props", &ig__pb_string_entry},
};
MSG(ig__pb_graph, "GraphProto", graph_f);

static const ig_pb_fielddesc training_f[] = {
    {1, IG_PBK_MSG, "initialization", &ig__pb_graph},
    {2, IG_PBK_MSG, "algorithm", &ig__pb_graph},
    {3, IG_PBK_RMSG, "initialization_binding", &ig__pb_string_entry},
    {4, IG_PBK_RMSG, "update_binding", &ig__pb_string_entry},
};
static MSG(training_desc, "TrainingInfoProto", training_f);

static const ig_pb_fielddesc function_f[] = {
    {1, IG_PBK_BYTES, "name", NULL},
    {4, IG_PBK_BYTES, "input", NULL},
    {5, IG_PBK_BYTES, "output", NULL},
    {6, IG_PBK_BYTES, "attribute", NULL},
    {7, IG_PBK_RMSG, "node", &ig__pb_node},
    {8, IG_PBK_BYTES, "doc_string", NULL},
    {9, IG_PBK_RMSG, "opset_import", &ig__pb_opset},
    {10, IG_PBK_BYTES, "domain", NULL},
    {11, IG_PBK_RMSG, "attribute_proto", &ig__pb_attribute},
    {12, IG_PBK_RMSG, "value_info", &ig__pb_value_info},
    {13, IG_PBK_BYTES, "overload", NULL},
    {14, IG_PBK_RMSG, "metadata_props", &ig__pb_string_entry},
};
static MSG(function_desc, "FunctionProto", function_f);

static const ig_pb_fielddesc model_f[] = {
    {F_MODEL_IR_VERSION, IG_PBK_VARINT, "ir_version", NULL},
    {F_MODEL_PRODUCER_NAME, IG_PBK_BYTES, "producer_name", NULL},
    {F_MODEL_PRODUCER_VERSION, IG_PBK_BYTES, "producer_version", NULL},
    {F_MODEL_DOMAIN, IG_PBK_BYTES, "domain", NULL},
    {F_MODEL_VERSION, IG_PBK_VARINT, "model_version", NULL},
    {F_MODEL_DOC, IG_PBK_BYTES, "doc_string", NULL},
    {F_MODEL_GRAPH, IG_PBK_MSG, "graph", &ig__pb_graph},
    {F_MODEL_OPSET, IG_PBK_RMSG, "opset_import", &ig__pb_opset},
    {F_MODEL_META, IG_PBK_RMSG, "metadata_props", &ig__pb_string_entry},
    {20, IG_PBK_RMSG, "training_info", &training_desc},
    {25, IG_PBK_RMSG, "functions", &function_desc},
    {26, IG_PBK_RMSG, "configuration", NULL},
};
MSG(ig__pb_model, "ModelProto", model_f);
