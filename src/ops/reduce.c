/* reduce.c -- ops of the 'reduce' family (see op_list.h). STUB: descriptors without infer/cpu yet. */
#include "op.h"

const ig_op_def ig__op_reduce_mean = {.name = "ReduceMean", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_reduce_sum = {.name = "ReduceSum", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_reduce_max = {.name = "ReduceMax", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_reduce_min = {.name = "ReduceMin", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_arg_max = {.name = "ArgMax", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
