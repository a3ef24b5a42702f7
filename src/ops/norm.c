/* norm.c -- ops of the 'norm' family (see op_list.h). STUB: descriptors without infer/cpu yet. */
#include "op.h"

const ig_op_def ig__op_batch_normalization = {.name = "BatchNormalization", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_instance_normalization = {.name = "InstanceNormalization", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_layer_normalization = {.name = "LayerNormalization", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_softmax = {.name = "Softmax", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_log_softmax = {.name = "LogSoftmax", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
