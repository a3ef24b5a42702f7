/* resize.c -- ops of the 'resize' family (see op_list.h). STUB: descriptors without infer/cpu yet. */
#include "op.h"

const ig_op_def ig__op_resize = {.name = "Resize", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_upsample = {.name = "Upsample", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_depth_to_space = {.name = "DepthToSpace", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
