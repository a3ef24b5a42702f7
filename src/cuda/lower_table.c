/*
 * lower_table.c -- THE table of what the CUDA backend runs: per op of src/ops/op_list.h, its lowering
 * and its support check. Every op of the list must have an entry here (CU_<cname> below): adding an op
 * without deciding what the GPU does with it is a compile error, and the support check that engine
 * build asks and the lowering that runs are one entry, so they cannot drift apart.
 *
 * supports(graph, node) is asked of a graph inferred at concrete shapes (the engine asks it at the
 * default shapes and at each profile's min and max); NULL means the node runs, otherwise the reason.
 */
#include "lower_internal.h"

#include <stdio.h>

static const char *sup_dropout(const ig_graph *g, const ig_node *n)
{
    for (int32_t j = 1; j < n->n_outputs; j++)
        if (n->outputs[j] >= 0 && (g->values[n->outputs[j]].flags & IG_VAL_OUTPUT)) return "the mask output is used";
    return NULL;
}

static const char *sup_batchnorm(const ig_graph *g, const ig_node *n)
{
    if (ig__attr_int(n, "training_mode", 0)) return "training mode";
    if (n->n_inputs < 5) return "missing parameters";
    for (int i = 1; i < 5; i++)
        if (n->inputs[i] < 0 || !(g->values[n->inputs[i]].flags & IG_VAL_CONST))
            return "the scale, bias, mean and variance must be constants";
    const ig_value *x = &g->values[n->inputs[0]];
    if (x->shape.rank < 2) return "input of rank < 2";
    return NULL;
}

static bool const_input(const ig_graph *g, const ig_node *n, int i)
{
    return i >= n->n_inputs || n->inputs[i] < 0 || (g->values[n->inputs[i]].flags & IG_VAL_CONST);
}

static const char *sup_slice(const ig_graph *g, const ig_node *n)
{
    for (int i = 1; i < 5; i++)
        if (!const_input(g, n, i)) return "starts, ends, axes and steps must be constants";
    return NULL;
}

static const char *sup_pool(const ig_graph *g, const ig_node *n)
{
    int32_t r = g->values[n->inputs[0]].shape.rank;
    if (r != 3 && r != 4) return "only 1-D and 2-D pooling";
    if (n->n_outputs > 1 && n->outputs[1] >= 0) return "the Indices output is not supported";
    return NULL;
}

static const char *sup_gather(const ig_graph *g, const ig_node *n)
{
    ingot_dtype t = g->values[n->inputs[1]].dtype;
    if (t != INGOT_DTYPE_INT64 && t != INGOT_DTYPE_INT32) return "indices must be int32 or int64";
    return NULL;
}

static const char *sup_layernorm(const ig_graph *g, const ig_node *n)
{
    for (int32_t j = 1; j < n->n_outputs; j++)
        if (n->outputs[j] >= 0 && (g->values[n->outputs[j]].flags & IG_VAL_OUTPUT))
            return "the Mean/InvStdDev outputs are not supported";
    return NULL;
}

static const char *sup_float(const ig_graph *g, const ig_node *n)
{
    ingot_dtype t = g->values[n->inputs[0]].dtype;
    if (!ig__dtype_is_float(t) || t == INGOT_DTYPE_DOUBLE) return "only fp32/fp16/bf16 inputs";
    return NULL;
}

/* the entries */
#define CU_NONE    \
    {              \
        NULL, NULL \
    }
#define CU_EW                                           \
    {                                                   \
        ig__lw_elementwise, ig__lw_supports_elementwise \
    }
#define CU_RESHAPE           \
    {                        \
        ig__lw_reshape, NULL \
    }
#define CU_REDUCE                             \
    {                                         \
        ig__lw_reduce, ig__lw_supports_reduce \
    }
#define CU_SOFTMAX                \
    {                             \
        ig__lw_softmax, sup_float \
    }
#define CU_MATMUL                             \
    {                                         \
        ig__lw_matmul, ig__lw_supports_matmul \
    }
#define CU_INDEX                            \
    {                                       \
        ig__lw_index, ig__lw_supports_index \
    }
#define CU_POOL               \
    {                         \
        ig__lw_pool, sup_pool \
    }

#define CU_sqrt             CU_EW
#define CU_erf              CU_EW
#define CU_exp              CU_EW
#define CU_log              CU_EW
#define CU_neg              CU_EW
#define CU_abs              CU_EW
#define CU_reciprocal       CU_EW
#define CU_tanh             CU_EW
#define CU_sigmoid          CU_EW
#define CU_relu             CU_EW
#define CU_leaky_relu       CU_EW
#define CU_clip             CU_EW
#define CU_hard_sigmoid     CU_EW
#define CU_hard_swish       CU_EW
#define CU_gelu             CU_EW
#define CU_softplus         CU_EW
#define CU_mish             CU_EW
#define CU_is_nan           CU_EW
#define CU_not              CU_EW
#define CU_cast             CU_EW
#define CU_sin              CU_EW
#define CU_cos              CU_EW
#define CU_tan              CU_EW
#define CU_asin             CU_EW
#define CU_acos             CU_EW
#define CU_atan             CU_EW
#define CU_sinh             CU_EW
#define CU_cosh             CU_EW
#define CU_asinh            CU_EW
#define CU_acosh            CU_EW
#define CU_atanh            CU_EW
#define CU_floor            CU_EW
#define CU_ceil             CU_EW
#define CU_round            CU_EW
#define CU_sign             CU_EW
#define CU_elu              CU_EW
#define CU_selu             CU_EW
#define CU_celu             CU_EW
#define CU_softsign         CU_EW
#define CU_thresholded_relu CU_EW
#define CU_shrink           CU_EW
#define CU_is_inf           CU_EW
#define CU_identity           \
    {                         \
        ig__lw_identity, NULL \
    }
#define CU_dropout                   \
    {                                \
        ig__lw_identity, sup_dropout \
    }
#define CU_add              CU_EW
#define CU_sub              CU_EW
#define CU_mul              CU_EW
#define CU_div              CU_EW
#define CU_pow              CU_EW
#define CU_mod              CU_EW
#define CU_max              CU_EW
#define CU_min              CU_EW
#define CU_sum              CU_EW
#define CU_prelu            CU_EW
#define CU_equal            CU_EW
#define CU_greater          CU_EW
#define CU_less             CU_EW
#define CU_greater_or_equal CU_EW
#define CU_less_or_equal    CU_EW
#define CU_and              CU_EW
#define CU_or               CU_EW
#define CU_where            CU_EW
#define CU_constant         CU_NONE /* always folded at build */
#define CU_constant_of_shape           \
    {                                  \
        ig__lw_constant_of_shape, NULL \
    }
#define CU_shape CU_NONE /* folded: shapes are concrete when a graph is lowered */
#define CU_range CU_NONE
#define CU_expand           \
    {                       \
        ig__lw_expand, NULL \
    }
#define CU_tile           \
    {                     \
        ig__lw_tile, NULL \
    }
#define CU_reshape   CU_RESHAPE
#define CU_flatten   CU_RESHAPE
#define CU_squeeze   CU_RESHAPE
#define CU_unsqueeze CU_RESHAPE
#define CU_transpose           \
    {                          \
        ig__lw_transpose, NULL \
    }
#define CU_concat           \
    {                       \
        ig__lw_concat, NULL \
    }
#define CU_split           \
    {                      \
        ig__lw_split, NULL \
    }
#define CU_slice                \
    {                           \
        ig__lw_slice, sup_slice \
    }
#define CU_gather                 \
    {                             \
        ig__lw_gather, sup_gather \
    }
#define CU_gather_elements CU_INDEX
#define CU_pad                          \
    {                                   \
        ig__lw_pad, ig__lw_supports_pad \
    }
#define CU_conv                           \
    {                                     \
        ig__lw_conv, ig__lw_supports_conv \
    }
#define CU_conv_transpose                 \
    {                                     \
        ig__lw_conv, ig__lw_supports_conv \
    } /* cuDNN's backward data */
#define CU_max_pool            CU_POOL
#define CU_average_pool        CU_POOL
#define CU_global_average_pool CU_REDUCE
#define CU_global_max_pool     CU_REDUCE
#define CU_lp_pool             CU_NONE /* rare in models: runs on the CPU */
#define CU_global_lp_pool      CU_NONE /* p = 2, 1: a ReduceL2 / ReduceL1 after the optimizer (canonical.c) */
#define CU_max_unpool          CU_NONE /* a data-dependent scatter, rare in models: runs on the CPU */
#define CU_col2im              CU_NONE /* rare in models: runs on the CPU */
#define CU_gemm                CU_MATMUL
#define CU_matmul              CU_MATMUL
#define CU_batch_normalization          \
    {                                   \
        ig__lw_batchnorm, sup_batchnorm \
    }
#define CU_instance_normalization                   \
    {                                               \
        ig__lw_groupnorm, ig__lw_supports_groupnorm \
    }
#define CU_layer_normalization          \
    {                                   \
        ig__lw_layernorm, sup_layernorm \
    }
#define CU_lrn                CU_NONE
#define CU_softmax            CU_SOFTMAX
#define CU_log_softmax        CU_SOFTMAX
#define CU_reduce_mean        CU_REDUCE
#define CU_reduce_sum         CU_REDUCE
#define CU_reduce_max         CU_REDUCE
#define CU_reduce_min         CU_REDUCE
#define CU_arg_max            CU_REDUCE
#define CU_reduce_l1          CU_REDUCE
#define CU_reduce_l2          CU_REDUCE
#define CU_reduce_sum_square  CU_REDUCE
#define CU_reduce_log_sum     CU_REDUCE
#define CU_reduce_log_sum_exp CU_REDUCE
#define CU_reduce_prod        CU_REDUCE
#define CU_arg_min            CU_REDUCE
#define CU_hardmax                              \
    {                                           \
        ig__lw_hardmax, ig__lw_supports_hardmax \
    }
#define CU_top_k                          \
    {                                     \
        ig__lw_topk, ig__lw_supports_topk \
    }
#define CU_resize                             \
    {                                         \
        ig__lw_resize, ig__lw_supports_resize \
    }
#define CU_upsample                           \
    {                                         \
        ig__lw_resize, ig__lw_supports_resize \
    }
#define CU_depth_to_space        \
    {                            \
        ig__lw_depth_space, NULL \
    }
/* sampling at computed positions (src/ops/sample.c, roi_align.c, deform_conv.c) */
#define CU_grid_sample  CU_NONE /* no CUDA kernel written yet: AUTO runs it on the CPU */
#define CU_affine_grid  CU_NONE /* no CUDA kernel written yet: AUTO runs it on the CPU */
#define CU_roi_align    CU_NONE /* no CUDA kernel yet: per-ROI bilinear sampling runs on the CPU under AUTO */
#define CU_deform_conv  CU_NONE /* no CUDA kernel yet: offset-driven im2col runs on the CPU under AUTO */
#define CU_max_roi_pool CU_NONE /* no CUDA kernel yet: per-ROI max over pixel windows runs on the CPU under AUTO */
/* the rare ops of src/ops/linalg.c and misc_more.c: no model of the zoo has them, AUTO runs them on the CPU */
#define CU_det              CU_NONE /* per-matrix LU with pivoting: no CUDA kernel written */
#define CU_reverse_sequence CU_NONE /* data-dependent per-batch copy: no CUDA kernel written */
#define CU_center_crop_pad  CU_NONE /* crop/pad copy: no CUDA kernel written */

#define CU_cum_sum  CU_INDEX
#define CU_trilu    CU_INDEX
#define CU_size     CU_NONE
#define CU_if       CU_NONE /* replaced by its branch when the model loads (src/api/inline_if.c) */
#define CU_eye_like CU_NONE
#define CU_one_hot                              \
    {                                           \
        ig__lw_one_hot, ig__lw_supports_one_hot \
    }
#define CU_space_to_depth        \
    {                            \
        ig__lw_depth_space, NULL \
    }
#define CU_mean                           \
    {                                     \
        ig__lw_mean, ig__lw_supports_mean \
    }
#define CU_xor         CU_NONE
#define CU_bitwise_and CU_NONE
#define CU_bitwise_or  CU_NONE
#define CU_bitwise_xor CU_NONE
#define CU_bitwise_not CU_NONE
#define CU_bit_shift   CU_NONE
#define CU_cast_like   CU_NONE
#define CU_group_normalization                      \
    {                                               \
        ig__lw_groupnorm, ig__lw_supports_groupnorm \
    }
#define CU_lp_normalization                     \
    {                                           \
        ig__lw_lp_norm, ig__lw_supports_lp_norm \
    }
#define CU_mean_variance_normalization  \
    {                                   \
        ig__lw_mvn, ig__lw_supports_mvn \
    }
#define CU_einsum                             \
    {                                         \
        ig__lw_einsum, ig__lw_supports_einsum \
    }
#define CU_scatter_nd       CU_INDEX
#define CU_scatter_elements CU_INDEX
#define CU_scatter          CU_INDEX
#define CU_gather_nd        CU_INDEX
#define CU_pointwise           \
    {                          \
        ig__lw_pointwise, NULL \
    }
#define CU_fused_conv                     \
    {                                     \
        ig__lw_conv, ig__lw_supports_conv \
    }
#define CU_fused_matmul   CU_MATMUL
#define CU_masked_softmax CU_SOFTMAX
#define CU_attention                \
    {                               \
        ig__lw_attention, sup_float \
    }
#define CU_group_norm                               \
    {                                               \
        ig__lw_groupnorm, ig__lw_supports_groupnorm \
    }

static const ig_lw_entry table[IG_OP_COUNT] = {
#define INGOT_OP(onnx_name, cname, family) [IG_OP_##cname] = CU_##cname,
#include "../ops/op_list.h"
#undef INGOT_OP
};

const ig_lw_entry *ig__lw_entry(int32_t op) { return op >= 0 && op < IG_OP_COUNT ? &table[op] : NULL; }

bool ig__cu_op_lowered(int32_t op) { return op >= 0 && op < IG_OP_COUNT && table[op].lower; }

const char *ig__cu_node_unsupported(const ig_graph *g, const ig_node *n)
{
    const ig_lw_entry *e = ig__lw_entry(n->op);
    if (!e) return "unknown op";
    if (!e->lower) return "no CUDA kernel for this op";
    return e->supports ? e->supports(g, n) : NULL;
}

int32_t ig__cu_unsupported(const ig_graph *g, char *buf, size_t n)
{
    int32_t bad = 0;
    size_t off = 0;
    if (n) buf[0] = 0;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const ig_node *nd = &g->nodes[g->order[k]];
        if (nd->folded) continue;
        const char *why = ig__cu_node_unsupported(g, nd);
        if (!why) continue;
        if (n && off < n)
            off += (size_t)snprintf(buf + off, n - off, "%snode '%s' (%s): %s", bad ? "; " : "", ig__node_label(nd),
                                    nd->op_type, why);
        bad++;
    }
    return bad;
}
