/* conv.c -- ops of the 'conv' family (see op_list.h). STUB: descriptors without infer/cpu yet. */
#include "op.h"

const ig_op_def ig__op_conv = {.name = "Conv", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_conv_transpose = {.name = "ConvTranspose", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_max_pool = {.name = "MaxPool", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_average_pool = {.name = "AveragePool", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_global_average_pool = {.name = "GlobalAveragePool", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_global_max_pool = {.name = "GlobalMaxPool", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
