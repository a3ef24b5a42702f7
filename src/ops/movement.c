/* movement.c -- ops of the 'movement' family (see op_list.h). STUB: descriptors without infer/cpu yet. */
#include "op.h"

const ig_op_def ig__op_transpose = {.name = "Transpose", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_concat = {.name = "Concat", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_split = {.name = "Split", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_slice = {.name = "Slice", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_gather = {.name = "Gather", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_gather_elements = {.name = "GatherElements", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_pad = {.name = "Pad", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
