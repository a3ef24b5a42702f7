/*
 * fused.c -- the ops of the ingot domain, made by the optimizer (docs/OPTIMIZER.md): Pointwise,
 * FusedConv, FusedMatMul, MaskedSoftmax, Attention. (Placeholder descriptors until the kernels land.)
 */
#include "op.h"

static ingot_status not_yet(ig_infer *cx) { return ig__unsupported(cx, "not implemented yet"); }

#define FUSED_STUB(cname, oname)                         \
    const ig_op_def ig__op_##cname = {.name = oname,     \
                                      .domain = "ingot", \
                                      .since = 1,        \
                                      .min_in = 1,       \
                                      .max_in = -1,      \
                                      .min_out = 1,      \
                                      .max_out = 1,      \
                                      .infer = not_yet}
FUSED_STUB(pointwise, "Pointwise");
FUSED_STUB(fused_conv, "FusedConv");
FUSED_STUB(fused_matmul, "FusedMatMul");
FUSED_STUB(masked_softmax, "MaskedSoftmax");
FUSED_STUB(attention, "Attention");
