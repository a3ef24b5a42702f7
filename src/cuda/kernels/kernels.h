/*
 * kernels.h -- the launchers of ingot's own CUDA kernels: plain C argument structs and extern "C"
 * functions taking an explicit stream. Included by the host C files of src/cuda and by the .cu files.
 *
 * Every launcher only enqueues work: no allocation, no free, no synchronisation, no handle creation,
 * so each is safe inside CUDA Graph capture. Each returns the cudaError_t of cudaGetLastError() after
 * its launch (cudaSuccess when it had nothing to do); the caller turns it into an ingot_status that
 * names the node.
 *
 * Element types are given as ingot_dtype values (FLOAT, FLOAT16, BFLOAT16, DOUBLE, INT8..UINT64,
 * BOOL stored as one byte). Strides and offsets are in elements.
 */
#ifndef INGOT_CUDA_KERNELS_H
#define INGOT_CUDA_KERNELS_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define IG_EW_MAX_IN   6  /* inputs of one fused elementwise kernel */
#define IG_EW_MAX_OPS  24 /* operations of its program */
#define IG_EW_MAX_RANK 6  /* dims after collapsing */
#define IG_EW_NREG     6  /* registers r0..r5 */

/* Operand references of an elementwise program: a register, or the op's constant k. */
enum ig_ew_ref {
    IG_REF_R0 = 0,         /* .. IG_REF_R0 + IG_EW_NREG - 1 */
    IG_REF_K = IG_EW_NREG, /* the op's constant k */
    IG_REF_NONE = 255,
};

/* Opcodes. Float programs compute in fp32, integer programs in int64 (see ig_ew_args.int_math). Every
 * op writes register dst; IG_EW_LOAD reads input number `a` (not a ref) at the current element. */
enum ig_ew_code {
    IG_EW_LOAD = 0, /* r = in[a] */
    IG_EW_COPY,     /* r = a */
    IG_EW_NEG,
    IG_EW_ABS,
    IG_EW_RECIP,
    IG_EW_SQRT,
    IG_EW_EXP,
    IG_EW_LOG,
    IG_EW_ERF,
    IG_EW_TANH,
    IG_EW_SIGMOID,
    IG_EW_RELU,
    IG_EW_LEAKY,       /* k = alpha */
    IG_EW_CLIP,        /* k = min, k2 = max */
    IG_EW_HARDSIGMOID, /* k = alpha, k2 = beta */
    IG_EW_HARDSWISH,
    IG_EW_GELU_ERF,
    IG_EW_GELU_TANH,
    IG_EW_SOFTPLUS,
    IG_EW_MISH,
    IG_EW_ISNAN,
    IG_EW_NOT,
    IG_EW_FLOOR,
    IG_EW_CEIL,
    IG_EW_ROUND,
    IG_EW_TO_F16,
    IG_EW_TO_BF16,
    IG_EW_TO_INT,
    IG_EW_TO_BOOL, /* value-changing casts inside a program */
    IG_EW_ADD,
    IG_EW_SUB,
    IG_EW_MUL,
    IG_EW_DIV,
    IG_EW_POW,
    IG_EW_MOD,
    IG_EW_FMOD,
    IG_EW_MAX,
    IG_EW_MIN,
    IG_EW_PRELU,
    IG_EW_EQ,
    IG_EW_GT,
    IG_EW_LT,
    IG_EW_GE,
    IG_EW_LE,
    IG_EW_AND,
    IG_EW_OR,
    IG_EW_WHERE,  /* r = a != 0 ? b : c */
    IG_EW_MULADD, /* r = a * b + c */
    IG_EW_CODE_COUNT
};

typedef struct ig_ew_op {
    uint8_t code;
    uint8_t a, b, c; /* operand refs (IG_REF_*) */
    uint8_t dst;     /* IG_REF_R0 + i */
    uint8_t pad[3];
    double k, k2; /* constants: operand IG_REF_K, or parameters (CLIP, LEAKY, HARDSIGMOID) */
} ig_ew_op;

/* out[i] = program(in_0[i], ..., in_{n-1}[i]) over the output's dims, every input read through its own
 * strides (0 for broadcast dims). The result is the register named by `result`. */
typedef struct ig_ew_args {
    int64_t n;                    /* output elements */
    int32_t rank;                 /* >= 1 after collapsing */
    int32_t int_math;             /* 1: registers are int64 (all values integer or bool) */
    int64_t dims[IG_EW_MAX_RANK]; /* iteration dims, outermost first */
    void *out;
    int64_t out_strides[IG_EW_MAX_RANK];
    int32_t out_dtype;
    int32_t out_contig; /* 1: out_strides are row-major of dims */
    int32_t n_in;
    int32_t n_ops;
    const void *in[IG_EW_MAX_IN];
    int32_t in_dtype[IG_EW_MAX_IN];
    int32_t in_kind[IG_EW_MAX_IN]; /* 0: general strides, 1: same as a contiguous output, 2: one value */
    int64_t in_strides[IG_EW_MAX_IN][IG_EW_MAX_RANK];
    ig_ew_op ops[IG_EW_MAX_OPS];
    uint8_t result; /* register holding the value stored */
} ig_ew_args;

cudaError_t ingot_cuda_ew(const ig_ew_args *a, cudaStream_t s);
/* The kernel node parameters `a` launches with, written to *params (kernel function, grid, block, the
 * by-value arguments copied into arg_storage, which must hold sizeof(ig_ew_args) + 16 bytes, pointed to
 * by arg_ptrs[0..1]); for patching an instantiated CUDA graph's input/output copies in place
 * (cudaGraphExecKernelNodeSetParams). */
cudaError_t ingot_cuda_ew_node_params(const ig_ew_args *a, struct cudaKernelNodeParams *params, void *arg_storage,
                                      void **arg_ptrs);

/* ---- softmax / log-softmax over contiguous rows ---- */
typedef struct ig_softmax_args {
    const void *x;
    void *y;
    int32_t dtype; /* of x and y */
    int64_t rows, cols;
    int32_t log; /* 1: LogSoftmax */
    /* rows are [outer, axis, inner] when inner > 1: element (o, j, i) at o*cols*inner + j*inner + i */
    int64_t inner;
    /* inner == 1 only: softmax(x * scale + mask), mask read through strides; row r = (r0, r1, r2) over
     * row_dims, element (r, c) of the mask at r0*ms[0] + r1*ms[1] + r2*ms[2] + c*ms[3] */
    float scale;      /* 1 when unused */
    const void *mask; /* NULL: none */
    int32_t mask_dtype;
    int64_t row_dims[3];
    int64_t ms[4];
    int32_t zero_nan; /* NaN results become 0 (Where(IsNaN(y), 0, y) fused: fully masked rows) */
} ig_softmax_args;
cudaError_t ingot_cuda_softmax(const ig_softmax_args *a, cudaStream_t s);

/* ---- layer normalisation over contiguous rows: y = (x - mean) / sqrt(var + eps) * gamma + beta ---- */
typedef struct ig_layernorm_args {
    const void *x;
    void *y;
    const void *gamma, *beta; /* [cols]; beta may be NULL */
    int32_t dtype;            /* of x, y */
    int32_t wdtype;           /* of gamma, beta */
    int64_t rows, cols;
    float eps;
} ig_layernorm_args;
cudaError_t ingot_cuda_layernorm(const ig_layernorm_args *a, cudaStream_t s);

/* ---- reductions: out[o] = reduce over r of x[base(o) + r-offsets] ---- */
enum ig_reduce_kind { IG_RED_SUM = 0, IG_RED_MEAN, IG_RED_MAX, IG_RED_MIN, IG_RED_ARGMAX, IG_RED_ARGMIN };
typedef struct ig_reduce_args {
    const void *x;
    void *y;
    int32_t x_dtype, y_dtype;
    int32_t kind;
    int32_t select_last; /* ArgMax/ArgMin: last index among equal values */
    int32_t out_rank, red_rank;
    int64_t out_dims[IG_EW_MAX_RANK], out_xstrides[IG_EW_MAX_RANK]; /* kept dims, their strides in x */
    int64_t red_dims[IG_EW_MAX_RANK], red_xstrides[IG_EW_MAX_RANK]; /* reduced dims */
    int64_t n_out, n_red;
    int64_t arg_stride; /* ArgMax/ArgMin: stride of the reduced axis (its index is returned) */
} ig_reduce_args;
cudaError_t ingot_cuda_reduce(const ig_reduce_args *a, cudaStream_t s);

/* ---- 2-D max/average pooling over [N, C, H, W] read and written through strides (NCHW or NHWC) ---- */
typedef struct ig_pool_args {
    const void *x;
    void *y;
    int32_t dtype;
    int32_t is_max;
    int32_t count_include_pad;
    int64_t n, c, h, w, oh, ow;
    int64_t xs[4], ys[4]; /* strides of x and y for (n, c, h, w) */
    int32_t kh, kw, sh, sw, ph, pw, dh, dw;
} ig_pool_args;
cudaError_t ingot_cuda_pool(const ig_pool_args *a, cudaStream_t s);

/* ---- depthwise 2-D convolution (group == channels), bias and activation fused:
 * y[n,c,oh,ow] = act(sum_{r,s} x[n,c,ih,iw] * w[r][s][c] + b[c]); x and y through strides (NHWC runs
 * vectorised, 8 channels per thread). */
enum ig_act { IG_ACT_NONE = 0, IG_ACT_RELU = 1, IG_ACT_CLIP = 2 };
typedef struct ig_dwconv_args {
    const void *x, *filt, *b; /* filt [kh][kw][C]; b may be NULL */
    void *y;
    int32_t dtype; /* of x, w, b, y */
    int32_t act;
    float lo, hi; /* IG_ACT_CLIP bounds */
    int64_t n, c, h, w, oh, ow;
    int64_t xs[4], ys[4];
    int32_t kh, kw, sh, sw, ph, pw, dh, dw;
} ig_dwconv_args;
cudaError_t ingot_cuda_dwconv(const ig_dwconv_args *a, cudaStream_t s);

/* ---- Gather along one axis: y[o, j, i] = x[o, idx[j], i]; x contiguous [outer, axis_dim, inner] ---- */
typedef struct ig_gather_args {
    const void *x;
    const void *idx;
    void *y;
    int32_t idx_dtype; /* INT32 or INT64 */
    int32_t esize;     /* bytes per element of x/y */
    int64_t outer, axis_dim, inner, n_idx;
} ig_gather_args;
cudaError_t ingot_cuda_gather(const ig_gather_args *a, cudaStream_t s);

/* ---- fused attention: O = softmax(scale * Q K^T + mask) V per (batch, head) ---- */
typedef struct ig_attention_args {
    const void *q, *k, *v; /* [B, H, S_q|S_kv, D] through strides */
    void *o;
    const void *mask; /* additive, broadcast over [B, H, S_q, S_kv] through strides; NULL: none */
    int32_t dtype;    /* FLOAT16 only for now (q, k, v, o) */
    int32_t mask_dtype;
    int64_t b, h, sq, skv, d;
    int64_t qs[4], ks[4], vs[4], os[4], ms[4];
    float scale;
    int32_t kernel; /* 0: chosen by the grid's size; 1 wide, 2 narrow, 3 split (tests) */
} ig_attention_args;
/* cudaErrorNotSupported when the shape is outside what the kernel handles (see attention.cu). */
cudaError_t ingot_cuda_attention(const ig_attention_args *a, cudaStream_t s);
int ingot_cuda_attention_supported(const ig_attention_args *a);

/* Fill bytes with a repeated element value (value as the element's bit pattern in the low bytes). */
cudaError_t ingot_cuda_fill(void *dst, int64_t n, int32_t esize, uint64_t bits, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_CUDA_KERNELS_H */
