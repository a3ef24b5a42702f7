/* binary.c -- ops of the 'binary' family (see op_list.h). STUB: descriptors without infer/cpu yet. */
#include "op.h"

const ig_op_def ig__op_add = {.name = "Add", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_sub = {.name = "Sub", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_mul = {.name = "Mul", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_div = {.name = "Div", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_pow = {.name = "Pow", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_mod = {.name = "Mod", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_max = {.name = "Max", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_min = {.name = "Min", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_prelu = {.name = "PRelu", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_equal = {.name = "Equal", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_greater = {.name = "Greater", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_less = {.name = "Less", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_greater_or_equal = {.name = "GreaterOrEqual", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_less_or_equal = {.name = "LessOrEqual", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_and = {.name = "And", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_or = {.name = "Or", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_where = {.name = "Where", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
