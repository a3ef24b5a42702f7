/* matmul.c -- ops of the 'matmul' family (see op_list.h). STUB: descriptors without infer/cpu yet. */
#include "op.h"

const ig_op_def ig__op_gemm = {.name = "Gemm", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
const ig_op_def ig__op_matmul = {.name = "MatMul", .since = 1, .min_in = 0, .max_in = -1, .min_out = 1, .max_out = -1};
