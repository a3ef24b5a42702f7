/*
 * lower_internal.h -- what the files of the lowering share: the lowering state, the program builder
 * (buffers, tensors, steps, weights), views, elementwise steps, and the per-op lowerings the table in
 * lower_table.c names. The lowering reads the graph the optimizer produced and never matches patterns:
 * a fused node (ingot.FusedConv, FusedMatMul, Pointwise, MaskedSoftmax, Attention) already says what
 * to compute; the lowering picks the kernel, the layouts and the views.
 *
 *   lower.c          the driver: consumers, inputs, the walk over the nodes, outputs
 *   lower_prog.c     buffers, tensors, steps, weights, get()
 *   lower_views.c    strided and lazy views: Reshape, Transpose, Slice, Split, Expand, Identity, rows in
 *                    memory order
 *   lower_ew.c       elementwise steps: pointwise programs, single elementwise nodes, copies
 *   lower_conv.c     Conv, FusedConv (cuDNN, 1x1 as GEMM, depthwise), pooling
 *   lower_gemm.c     MatMul, Gemm, FusedMatMul (cuBLASLt with epilogues)
 *   lower_norm.c     Softmax, MaskedSoftmax, Attention, LayerNormalization, reductions
 *   lower_movement.c Concat, Pad, Gather, ConstantOfShape
 *   lower_select.c   Hardmax, TopK, OneHot (kernels/select.cu)
 *   lower_table.c    the support table: per op, its lowering and what it supports
 */
#ifndef INGOT_CUDA_LOWER_INTERNAL_H
#define INGOT_CUDA_LOWER_INTERNAL_H

#include "../ops/pw.h"
#include "cuda_internal.h"

/* A Reshape result that no strided view expresses (ViT's q [S,B,E] with strides (3BE, 3E, 1) reshaped to
 * [S, B*H, D]), kept without a copy: logical dim k is the row-major merge of n[k] consecutive dims of
 * `fine`, a strided view of the same memory whose row-major order is the logical order. Reshape and
 * Transpose regroup it for free (the chain above ends in [B,H,S,D], a plain view again); any other
 * consumer gets one contiguous copy through ig__lw_get(). */
typedef struct ig_lazy {
    int32_t fine; /* tensor */
    int32_t node; /* the Reshape that made it: labels the copy */
    int32_t rank;
    int8_t n[IG_MAX_RANK]; /* fine dims per logical dim (0 for a dim of size 1) */
} ig_lazy;

typedef struct ig_lower {
    ig_cu_prog *p;
    const ig_graph *g;
    const ig_cu_lower_options *o;
    ig_err *err;
    int32_t *cons_off; /* [n_values + 1] CSR of consumer nodes (each node once per value) */
    int32_t *cons;
    bool *is_output; /* [n_values] */
    ig_lazy **lazy;  /* [n_values] the value's lazy view or NULL (its copy, once made: val_tensor) */
    /* Concat without copies (lower_movement.c): per Concat node, its output tensor once a producer of
     * one of its inputs wrote into its slice (-1 before), and that tensor's layout (1 dense in logical
     * order, 2 channels-last); NULL when INGOT_CUDA_CONCAT_SLOTS=0 */
    int32_t *concat_y;
    int8_t *concat_layout;
} ig_lower;

/* One lowering per op (lower_table.c); `supports` answers for a node of an inferred graph, NULL when
 * the node can run, else the reason. */
typedef ingot_status (*ig_lw_fn)(ig_lower *L, int32_t node);
typedef const char *(*ig_lw_supports_fn)(const ig_graph *g, const ig_node *n);
typedef struct ig_lw_entry {
    ig_lw_fn lower;             /* NULL: the backend has no kernel for this op */
    ig_lw_supports_fn supports; /* NULL: every node of the op is supported */
} ig_lw_entry;
const ig_lw_entry *ig__lw_entry(int32_t op);

/* ---- state and graph queries ---- */
ingot_status ig__lw_oom(ig_lower *L);
ingot_status ig__lw_fail(ig_lower *L, int32_t node, ingot_status st, const char *fmt, ...) IG_PRINTF(4, 5);
int32_t ig__lw_n_cons(const ig_lower *L, int32_t v);
/* The one node consuming v, or -1 when v has several consumers or is a graph output. */
int32_t ig__lw_sole_consumer(const ig_lower *L, int32_t v);
static inline const ig_value *ig__lw_val(const ig_lower *L, int32_t v) { return &L->g->values[v]; }
static inline const ig_node *ig__lw_node(const ig_lower *L, int32_t id) { return &L->g->nodes[id]; }
/* Input i / output j of node id, -1 when absent. */
int32_t ig__lw_in(const ig_lower *L, int32_t id, int i);
int32_t ig__lw_out(const ig_lower *L, int32_t id, int j);
bool ig__lw_is_const(const ig_lower *L, int32_t v);
/* Output j of node id is read by something (a node or the graph's outputs). */
bool ig__lw_out_used(const ig_lower *L, int32_t id, int j);
/* The value's shape as plain dims; its rank. */
int32_t ig__lw_value_dims(const ig_lower *L, int32_t v, int64_t *dims);
bool ig__lw_same_shape(const ig_lower *L, int32_t v, int32_t w);
/* Integer list / scalar of a constant value. */
bool ig__lw_const_ints(const ig_lower *L, int32_t v, int64_t *out, int32_t max, int32_t *count);
bool ig__lw_const_scalar(const ig_lower *L, int32_t v, double *out);
static inline int32_t ig__lw_norm_axis(int64_t a, int32_t rank) { return (int32_t)(a < 0 ? a + rank : a); }
/* The device type of graph type t (float32 values are stored in the program's precision). */
static inline ingot_dtype ig__lw_dev_dtype(const ig_cu_prog *p, ingot_dtype t)
{
    return t == INGOT_DTYPE_FLOAT ? p->fdt : t;
}

/* ---- the program: buffers, tensors, steps (lower_prog.c) ---- */
int32_t ig__lw_buf(ig_lower *L, int loc, size_t bytes);
int32_t ig__lw_tensor(ig_lower *L, int32_t buf, ingot_dtype dt, int32_t rank, const int64_t *dims,
                      const int64_t *strides, int64_t offset);
static inline ig_cu_tensor *ig__lw_T(ig_lower *L, int32_t t) { return &L->p->tensors[t]; }
/* A fresh arena buffer holding a dense tensor; nhwc: a rank-4 tensor laid out channels-last. */
int32_t ig__lw_dense(ig_lower *L, ingot_dtype dt, int32_t rank, const int64_t *dims, bool nhwc);
/* A fresh dense tensor whose memory order is the logical order with axis `inner` moved last. */
int32_t ig__lw_dense_inner(ig_lower *L, ingot_dtype dt, int32_t rank, const int64_t *dims, int32_t inner);
ig_cu_step *ig__lw_step(ig_lower *L, int kind, int32_t node_id, const char *what);
/* A step of one of kstep.c's kernels on tensors t[0..n) (the others -1); the caller fills u.k.a. NULL:
 * out of memory. */
ig_cu_step *ig__lw_kstep(ig_lower *L, int kind, int32_t node_id, int n, const int32_t *t);
size_t ig__lw_numel(int32_t rank, const int64_t *dims);
void ig__lw_contig_strides(int32_t rank, const int64_t *dims, int64_t *strides);
bool ig__lw_nhwc(const ig_cu_tensor *t);
/* A weight tensor for request r with the given view: engine-owned when every source is a file
 * initializer, else an instance constant in the arena. */
int32_t ig__lw_weight(ig_lower *L, ig_cu_wreq *r, int32_t rank, const int64_t *dims, const int64_t *strides);
/* The plain device copy of constant v, converted to dtype (UNDEFINED: its device type), times scale. */
int32_t ig__lw_const(ig_lower *L, int32_t v, ingot_dtype dtype, float scale);
/* The tensor of value v: its producer's output, a constant's device copy, or an input's staging; a
 * lazy value is copied here (once). -1 when it has none (or on out of memory: L->err says which). */
int32_t ig__lw_get(ig_lower *L, int32_t v);
/* For the ops that take a lazy value as it is (Reshape, Transpose, Identity): a plain tensor (*z NULL)
 * or the fine view of a lazy value (*z). */
int32_t ig__lw_get_view(ig_lower *L, int32_t v, ig_lazy **z);
bool ig__lw_produced(const ig_lower *L, int32_t v);

/* ---- elementwise steps (lower_ew.c) ---- */
/* One elementwise step: out = program(in...) through every operand's strides; the program is in
 * register form (ig__pw_to_regs). */
ingot_status ig__lw_ew_step(ig_lower *L, int32_t node_id, const char *what, const ig_pw_reg_op *ops, int32_t n_ops,
                            int result, const int32_t *in, int32_t n_in, bool int_math, int32_t out, int io_patch);
/* A pointwise program over input tensors in[] into out (a fresh dense tensor when out < 0, laid out
 * like its main input); returns the output tensor, -1 on failure (L->err set). */
int32_t ig__lw_program(ig_lower *L, int32_t node_id, const ig_pw_prog *prog, const int32_t *in, ingot_dtype out_dtype,
                       const int64_t *out_dims, int32_t out_rank, int32_t out);
/* The epilogue of a fused GEMM or convolution as one elementwise step: out = epi(acc + bias, extras...)
 * where acc is the library call's raw output and bias (a tensor broadcasting to it, or -1) was not
 * applied by the library. Returns the output tensor (ig__lw_program_out for value v: dense and laid out
 * like acc, or v's Concat slice), -1 on failure. */
int32_t ig__lw_epilogue(ig_lower *L, int32_t node_id, const ig_pw_prog *epi, int32_t acc, int32_t bias,
                        const int32_t *extras, ingot_dtype out_dtype, const int64_t *out_dims, int32_t out_rank,
                        int32_t v);
/* The output tensor a program over in[] writes for value v: v's slice of the Concat that alone reads it
 * (ig__lw_concat_slot), else a fresh dense tensor laid out like the program's main input. */
int32_t ig__lw_program_out(ig_lower *L, const int32_t *in, int32_t n_in, ingot_dtype dt, const int64_t *dims,
                           int32_t rank, int32_t v);
/* What an epilogue program is, for the library calls that take one: */
enum ig_lw_epi {
    IG_LW_EPI_NONE,     /* no instruction */
    IG_LW_EPI_RELU,     /* Relu(acc) */
    IG_LW_EPI_CLIP,     /* Clip(acc, k, k2) */
    IG_LW_EPI_GELU,     /* Gelu(acc), erf or tanh form */
    IG_LW_EPI_RES,      /* acc + extra 1 */
    IG_LW_EPI_RES_RELU, /* Relu(acc + extra 1) */
    IG_LW_EPI_OTHER,
};
int ig__lw_epi_kind(const ig_pw_prog *epi);
/* A copy of tensor src into dst (a dense tensor or a view into one), converting the element type. */
ingot_status ig__lw_copy(ig_lower *L, int32_t node_id, const char *what, int32_t src, int32_t dst, int io_patch);
/* A dense copy of t (channels-last when nhwc and rank 4); -1 out of memory, -2 another failure. */
int32_t ig__lw_materialize(ig_lower *L, int32_t node_id, int32_t t, bool nhwc, const char *what);
int32_t ig__lw_contig(ig_lower *L, int32_t node_id, int32_t t);
/* The status to return after a failed materialisation (L->err's, or out of memory). */
ingot_status ig__lw_status(ig_lower *L);

/* ---- views (lower_views.c) ---- */
ingot_status ig__lw_reshape_view(ig_lower *L, int32_t node_id, int32_t iv, int32_t ov);
int32_t ig__lw_materialize_lazy(ig_lower *L, int32_t v);
int32_t ig__lw_transpose_last2(ig_lower *L, int32_t t);
int32_t ig__lw_unsqueeze_view(ig_lower *L, int32_t t, int32_t at);
/* A GEMM operand whose rows are a permutation of one dense run of memory rows (lazy): see
 * lower_views.c. */
typedef struct ig_row_order {
    int32_t v;  /* the value */
    int32_t nr; /* its fine row dims, in logical order: */
    int64_t dims[IG_MAX_RANK];
    int32_t pos[IG_MAX_RANK]; /* each one's place in memory order (0: outermost) */
    int32_t rank;             /* the value's logical rank, and the fine dims of each of its dims: */
    int8_t n[IG_MAX_RANK];
} ig_row_order;
/* The [M, K] memory-order matrix of lazy value v and its row order, or -1 when v is not such a value. */
int32_t ig__lw_rows_in_memory_order(ig_lower *L, int32_t v, ig_row_order *ro);
bool ig__lw_same_row_order(const ig_row_order *a, const ig_row_order *b);
/* Output value v of a GEMM run over rows in the order ro: dense D [M, N] seen in that row order. */
ingot_status ig__lw_set_rows_permuted(ig_lower *L, int32_t node_id, int32_t v, int32_t d, const ig_row_order *ro);

/* ---- GEMMs (lower_gemm.c) ---- */
/* One GEMM step D = epi(alpha A B + beta C + bias) over the views at, bt (g carries alpha, bias, c, beta
 * and epi); an operand no GEMM layout reads is copied first. D is a fresh dense tensor of out_dims ([M, N]
 * in A's memory row order when mem_order). Returns D, -1 on failure (L->err set, or out of memory). */
int32_t ig__lw_gemm(ig_lower *L, int32_t id, int32_t at, int32_t bt, ig_cu_gemm *g, bool mem_order,
                    const int64_t *out_dims, int32_t out_rank);

/* ---- the lowerings named by the table ---- */
ingot_status ig__lw_reshape(ig_lower *L, int32_t id);
ingot_status ig__lw_identity(ig_lower *L, int32_t id);
ingot_status ig__lw_transpose(ig_lower *L, int32_t id);
ingot_status ig__lw_slice(ig_lower *L, int32_t id);
ingot_status ig__lw_split(ig_lower *L, int32_t id);
ingot_status ig__lw_expand(ig_lower *L, int32_t id);
ingot_status ig__lw_elementwise(ig_lower *L, int32_t id);
ingot_status ig__lw_batchnorm(ig_lower *L, int32_t id);
ingot_status ig__lw_pointwise(ig_lower *L, int32_t id);
ingot_status ig__lw_conv(ig_lower *L, int32_t id);
ingot_status ig__lw_pool(ig_lower *L, int32_t id);
ingot_status ig__lw_matmul(ig_lower *L, int32_t id);
ingot_status ig__lw_softmax(ig_lower *L, int32_t id);
ingot_status ig__lw_attention(ig_lower *L, int32_t id);
ingot_status ig__lw_layernorm(ig_lower *L, int32_t id);
ingot_status ig__lw_reduce(ig_lower *L, int32_t id);
ingot_status ig__lw_concat(ig_lower *L, int32_t id);
/* Concat without copies: the tensor a producer writes for value v, given the dense tensor t it would
 * write. When v's readers are one Concat (v once among its inputs) and convolutions that read a channel
 * slice in place (ig__lw_conv_reads_rows), t's layout matches the Concat's output and the types agree,
 * that is v's slice of the Concat's output (created here by the first such producer), and the Concat
 * copies nothing for v. Otherwise t. -1: out of memory. */
int32_t ig__lw_concat_slot(ig_lower *L, int32_t v, int32_t t);
/* Node id is a convolution the lowering runs as a GEMM over the pixel rows of its input v (1x1, stride
 * 1, no pads, group 1, channels-last): it reads a channel slice of a wider tensor in place, so v may live
 * in a Concat's output (ig__lw_concat_slot) without a copy for this reader. */
bool ig__lw_conv_reads_rows(const ig_lower *L, int32_t id, int32_t v);
ingot_status ig__lw_pad(ig_lower *L, int32_t id);
ingot_status ig__lw_gather(ig_lower *L, int32_t id);
ingot_status ig__lw_constant_of_shape(ig_lower *L, int32_t id);
ingot_status ig__lw_resize(ig_lower *L, int32_t id);
ingot_status ig__lw_groupnorm(ig_lower *L, int32_t id);
ingot_status ig__lw_index(ig_lower *L, int32_t id);
ingot_status ig__lw_tile(ig_lower *L, int32_t id);
ingot_status ig__lw_depth_space(ig_lower *L, int32_t id);
ingot_status ig__lw_einsum(ig_lower *L, int32_t id);
ingot_status ig__lw_mean(ig_lower *L, int32_t id);
ingot_status ig__lw_lp_norm(ig_lower *L, int32_t id);
ingot_status ig__lw_mvn(ig_lower *L, int32_t id);
ingot_status ig__lw_hardmax(ig_lower *L, int32_t id);
ingot_status ig__lw_topk(ig_lower *L, int32_t id);
ingot_status ig__lw_one_hot(ig_lower *L, int32_t id);
/* What the table's `supports` entries share. */
const char *ig__lw_supports_elementwise(const ig_graph *g, const ig_node *n);
const char *ig__lw_supports_conv(const ig_graph *g, const ig_node *n);
const char *ig__lw_supports_matmul(const ig_graph *g, const ig_node *n);
const char *ig__lw_supports_pad(const ig_graph *g, const ig_node *n);
const char *ig__lw_supports_resize(const ig_graph *g, const ig_node *n);
const char *ig__lw_supports_groupnorm(const ig_graph *g, const ig_node *n);
const char *ig__lw_supports_reduce(const ig_graph *g, const ig_node *n);
const char *ig__lw_supports_index(const ig_graph *g, const ig_node *n);
const char *ig__lw_supports_einsum(const ig_graph *g, const ig_node *n);
const char *ig__lw_supports_mean(const ig_graph *g, const ig_node *n);
const char *ig__lw_supports_lp_norm(const ig_graph *g, const ig_node *n);
const char *ig__lw_supports_mvn(const ig_graph *g, const ig_node *n);
const char *ig__lw_supports_hardmax(const ig_graph *g, const ig_node *n);
const char *ig__lw_supports_topk(const ig_graph *g, const ig_node *n);
const char *ig__lw_supports_one_hot(const ig_graph *g, const ig_node *n);

#endif /* INGOT_CUDA_LOWER_INTERNAL_H */
