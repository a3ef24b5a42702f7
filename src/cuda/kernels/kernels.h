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

/* The fp32 expression of every code over operands a, b, z and constants k, k2, in one list: the
 * interpreter (kernels/elementwise.cu) expands it into code, the run-time generator (src/cuda/ew_jit.c)
 * into text, so the two compute exactly the same. h2f/f2h and b2f/f2b round through fp16 and bf16 bits;
 * fmod_py is Python's (and ONNX Mod's) sign rule. */
#define IG_EW_FLOAT_EXPRS(X)                                                                         \
    X(IG_EW_COPY, a)                                                                                 \
    X(IG_EW_NEG, -a)                                                                                 \
    X(IG_EW_ABS, fabsf(a))                                                                           \
    X(IG_EW_RECIP, 1.f / a)                                                                          \
    X(IG_EW_SQRT, sqrtf(a))                                                                          \
    X(IG_EW_EXP, expf(a))                                                                            \
    X(IG_EW_LOG, logf(a))                                                                            \
    X(IG_EW_ERF, erff(a))                                                                            \
    X(IG_EW_TANH, tanhf(a))                                                                          \
    X(IG_EW_SIGMOID, 1.f / (1.f + expf(-a)))                                                         \
    X(IG_EW_RELU, a > 0.f ? a : (a != a ? a : 0.f))                                                  \
    X(IG_EW_LEAKY, a < 0.f ? a * k : a)                                                              \
    X(IG_EW_CLIP, a != a ? a : fminf(fmaxf(a, k), k2))                                               \
    X(IG_EW_HARDSIGMOID, a != a ? a : fmaxf(0.f, fminf(1.f, k * a + k2)))                            \
    X(IG_EW_HARDSWISH, a *fmaxf(0.f, fminf(1.f, a *(1.f / 6.f) + 0.5f)))                             \
    X(IG_EW_GELU_ERF, 0.5f * a * (1.f + erff(a * 0.70710678118654752f)))                             \
    X(IG_EW_GELU_TANH, 0.5f * a * (1.f + tanhf(0.79788456080286536f * (a + 0.044715f * a * a * a)))) \
    X(IG_EW_SOFTPLUS, fmaxf(a, 0.f) + log1pf(expf(-fabsf(a))))                                       \
    X(IG_EW_MISH, a *tanhf(fmaxf(a, 0.f) + log1pf(expf(-fabsf(a)))))                                 \
    X(IG_EW_ISNAN, a != a ? 1.f : 0.f)                                                               \
    X(IG_EW_NOT, a == 0.f ? 1.f : 0.f)                                                               \
    X(IG_EW_FLOOR, floorf(a))                                                                        \
    X(IG_EW_CEIL, ceilf(a))                                                                          \
    X(IG_EW_ROUND, rintf(a))                                                                         \
    X(IG_EW_TO_F16, h2f(f2h(a)))                                                                     \
    X(IG_EW_TO_BF16, b2f(f2b(a)))                                                                    \
    X(IG_EW_TO_INT, a != a ? 0.f : truncf(a))                                                        \
    X(IG_EW_TO_BOOL, a != 0.f ? 1.f : 0.f)                                                           \
    X(IG_EW_ADD, a + b)                                                                              \
    X(IG_EW_SUB, a - b)                                                                              \
    X(IG_EW_MUL, a *b)                                                                               \
    X(IG_EW_DIV, a / b)                                                                              \
    X(IG_EW_POW, b == 2.f ? a * a : powf(a, b))                                                      \
    X(IG_EW_MOD, fmod_py(a, b))                                                                      \
    X(IG_EW_FMOD, fmodf(a, b))                                                                       \
    X(IG_EW_MAX, (a > b || a != a) ? a : b)                                                          \
    X(IG_EW_MIN, (a < b || a != a) ? a : b)                                                          \
    X(IG_EW_PRELU, a < 0.f ? a * b : a)                                                              \
    X(IG_EW_EQ, a == b ? 1.f : 0.f)                                                                  \
    X(IG_EW_GT, a > b ? 1.f : 0.f)                                                                   \
    X(IG_EW_LT, a < b ? 1.f : 0.f)                                                                   \
    X(IG_EW_GE, a >= b ? 1.f : 0.f)                                                                  \
    X(IG_EW_LE, a <= b ? 1.f : 0.f)                                                                  \
    X(IG_EW_AND, (a != 0.f && b != 0.f) ? 1.f : 0.f)                                                 \
    X(IG_EW_OR, (a != 0.f || b != 0.f) ? 1.f : 0.f)                                                  \
    X(IG_EW_WHERE, a != 0.f ? b : z)                                                                 \
    X(IG_EW_MULADD, fmaf(a, b, z))

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
/* The same launch through a kernel compiled for this program (src/cuda/ew_jit.c): func takes one
 * ig_ew_args by value, one thread per 8 elements in blocks of 256, as the interpreter. */
cudaError_t ingot_cuda_ew_jit_launch(const void *func, const ig_ew_args *a, cudaStream_t s);
/* True when every offset of the launch fits in 32 bits (the kernels then index with int). */
int ingot_cuda_ew_fits_i32(const ig_ew_args *a);
/* Non-NULL when `a` is a copy that transposes its innermost dims (ew_transpose.cuh), so the generated
 * kernels leave it alone: how ingot_cuda_ew runs it, "shared-memory tile" or "pixels in registers" (a
 * thread holds whole pixels, C of 3 or 4). */
const char *ingot_cuda_ew_transpose_form(const ig_ew_args *a);
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
    int64_t xs[4], ys[4];                   /* strides of x and y for (n, c, h, w) */
    int32_t kh, kw, sh, sw, ph, pw, dh, dw; /* ph, pw: the pads at the beginning */
    int32_t eh, ew;                         /* the pads at the end: count_include_pad counts up to them */
} ig_pool_args;
cudaError_t ingot_cuda_pool(const ig_pool_args *a, cudaStream_t s);
/* The kernel ingot_cuda_pool would launch for a (its pointers' alignment included), in words. */
void ingot_cuda_pool_describe(const ig_pool_args *a, char *buf, size_t n);

/* ---- convolutions of 1-4 input channels (network stems): an implicit GEMM on tensor cores (stem.cu).
 * y[n,k,oh,ow] = act(sum_{r,s,c} x[n,c,oh*sh-ph+r,ow*sw-pw+s] * filt[k][r][s][c] + b[k]), fp16 in and out,
 * fp32 accumulation; filt KRSC, x through strides, y channels-last (ys[1] == 1). */
typedef struct ig_stem_args {
    const void *x, *filt, *b; /* b may be NULL */
    void *y;
    int32_t relu;
    int32_t c, k, r, s, sh, sw, ph, pw; /* input channels, output channels, filter, strides, leading pads */
    int64_t n, h, w, oh, ow;
    int64_t xs[4], ys[4]; /* (n, c, h, w) */
    /* pool != 0: a max pool over the convolution's output, fused: y and ys are the pooled output's
     * [n, k, qh, qw]; its window pkh x pkw, strides psh, psw, leading pads pph, ppw (dilation 1); a
     * block computes `band` pooled rows at a time (stem_band_for picks it) */
    int32_t pool, pkh, pkw, psh, psw, pph, ppw, band;
    int64_t qh, qw;
} ig_stem_args;
/* 1 when ingot_cuda_stem takes a (its geometry; the pointers and, pooled, `band` are not looked at). */
int ingot_cuda_stem_applies(const ig_stem_args *a);
cudaError_t ingot_cuda_stem(const ig_stem_args *a, cudaStream_t s);

/* ---- depthwise 2-D convolution (group == channels), bias and activation fused:
 * y[n,c,oh,ow] = act(sum_{r,s} x[n,c,ih,iw] * w[r][s][c] + b[c]); x and y through strides (NHWC runs
 * vectorised: 8, 4 or 2 channels per thread). */
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
void ingot_cuda_dwconv_describe(const ig_dwconv_args *a, char *buf, size_t n);

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
    const void *q, *k, *v; /* Q, K [B, H, S_q|S_kv, D], V [B, H, S_kv, DV] through strides */
    void *o;
    const void *mask; /* additive, broadcast over [B, H, S_q, S_kv] through strides; NULL: none */
    int32_t dtype;    /* FLOAT16 only for now (q, k, v, o) */
    int32_t mask_dtype;
    int64_t b, h, sq, skv, d, dv; /* head dims: multiples of 8 up to 64 (O is [B, H, S_q, DV]) */
    int64_t qs[4], ks[4], vs[4], os[4], ms[4];
    float scale;
    int32_t kernel; /* 0: chosen by the grid's size; 1 wide, 2 narrow, 3 split (tests) */
} ig_attention_args;
/* cudaErrorNotSupported when the shape is outside what the kernel handles (see attention.cu). */
cudaError_t ingot_cuda_attention(const ig_attention_args *a, cudaStream_t s);
int ingot_cuda_attention_supported(const ig_attention_args *a);

/* Fill bytes with a repeated element value (value as the element's bit pattern in the low bytes). */
cudaError_t ingot_cuda_fill(void *dst, int64_t n, int32_t esize, uint64_t bits, cudaStream_t s);

/* ---- reductions at bandwidth (reduce.cu): Reduce{Sum,Mean,Max,Min,Prod,L1,L2,SumSquare,LogSum,LogSumExp},
 * GlobalAverage/MaxPool. The problem in canonical form: x's dims ordered by stride, the innermost run
 * (stride 1, `inner` elements) reduced (rows) or kept (columns); the outer kept and reduced dims in
 * row-major order with their strides. Canonical output o: rows -- over the outer kept dims; columns --
 * (outer kept index) * inner + position in the run. ---- */
enum ig_rdx_kind {
    IG_RDX_SUM = 0,
    IG_RDX_MEAN,
    IG_RDX_MAX,
    IG_RDX_MIN,
    IG_RDX_PROD,
    IG_RDX_L1,
    IG_RDX_L2,
    IG_RDX_SUMSQ,
    IG_RDX_LOGSUM,
    IG_RDX_LOGSUMEXP,
};
#define IG_RDX_MAX_DIMS 6
typedef struct ig_reduction_args {
    const void *x;
    void *y;
    void *part;               /* split > 1: fp32 partial states [n_out][split][2] (ingot_cuda_reduction_plan) */
    int32_t x_dtype, y_dtype; /* equal: FLOAT, FLOAT16, BFLOAT16 (fp32 math), INT32, INT64 (int64 math) */
    int32_t kind;             /* enum ig_rdx_kind */
    int32_t cols;             /* 0: the innermost run is reduced (rows); 1: it is kept (columns) */
    int32_t n_keep, n_red;    /* outer kept / reduced dims */
    int64_t keep[IG_RDX_MAX_DIMS], keep_xs[IG_RDX_MAX_DIMS], keep_ys[IG_RDX_MAX_DIMS];
    int64_t red[IG_RDX_MAX_DIMS], red_xs[IG_RDX_MAX_DIMS];
    int64_t inner;       /* length of the innermost run (x stride 1) */
    int64_t inner_ys;    /* columns: the run's stride in y */
    int64_t n_out;       /* outputs */
    int64_t n_red_total; /* elements reduced into each output */
    /* launch geometry, filled by ingot_cuda_reduction_plan */
    int32_t vec;   /* elements per 16-byte load (1: scalar loads) */
    int32_t lanes; /* rows: threads per output (1..32: a sub-warp, 64..1024: a block) */
    int32_t split; /* blocks sharing one output's elements (> 1: partials, then a finishing kernel) */
    int64_t chunk; /* elements (rows) or reduced rows (columns) of one split */
} ig_reduction_args;
/* Whether the kernel takes this element type and kind. */
int ingot_cuda_reduction_supported(int dtype, int kind);
/* Fill a's launch geometry from its problem; returns the bytes of a->part it needs (0: none). Host only. */
size_t ingot_cuda_reduction_plan(ig_reduction_args *a);
/* One or two kernels (the second merges the partials when split > 1). */
cudaError_t ingot_cuda_reduction(const ig_reduction_args *a, cudaStream_t s);

/* ---- Resize / Upsample (resize.cu): nearest, linear, cubic over one or two axes, src/ops/resize.c's
 * coordinates exactly (taps computed in double into `tab` by a first kernel). The output's dims in its
 * memory order (the last one stride 1 in y); per dim its size, y stride, and either its x stride
 * (axis -1: not resized, same size in x) or the resized axis (0, 1) it is. ---- */
enum ig_rs_mode { IG_RS_NEAREST = 0, IG_RS_LINEAR, IG_RS_CUBIC };
enum ig_rs_ct {
    IG_RS_HALF_PIXEL = 0,
    IG_RS_HALF_PIXEL_SYM,
    IG_RS_PYTORCH_HALF_PIXEL,
    IG_RS_ALIGN_CORNERS,
    IG_RS_ASYMMETRIC,
    IG_RS_TF_HALF_PIXEL_NN,
};
enum ig_rs_nearest {
    IG_RS_NM_ROUND_PREFER_FLOOR = 0,
    IG_RS_NM_ROUND_PREFER_CEIL,
    IG_RS_NM_FLOOR,
    IG_RS_NM_CEIL,
    IG_RS_NM_SIMPLE, /* Upsample and Resize-10: floor when upsampling, ceil when downsampling */
};
#define IG_RS_MAX_DIMS 6
typedef struct ig_resize_args {
    const void *x;
    void *y;
    void *tab;     /* taps: ingot_cuda_resize_plan's bytes */
    int32_t dtype; /* of x and y: FLOAT, FLOAT16, BFLOAT16; nearest: any (bytes copied) */
    int32_t esize; /* bytes per element */
    int32_t mode, ct, nearest;
    int32_t exclude_outside;
    double cubic_a;
    int32_t n_axes; /* resized axes: 1 or 2 */
    int64_t in[2], out[2];
    double scale[2];    /* the coordinate scale of each (resize.c's plan_dims) */
    int64_t axis_xs[2]; /* x stride of each */
    int32_t rank;
    int64_t dims[IG_RS_MAX_DIMS], ys[IG_RS_MAX_DIMS], xs[IG_RS_MAX_DIMS];
    int32_t axis[IG_RS_MAX_DIMS];
    /* filled by ingot_cuda_resize_plan */
    int32_t taps, inner_axis, n_row_axes, row_axis[2], vec, tx, per_thread;
    int64_t tab_off[2], inner_ys, rows, grid_x, grid_y;
} ig_resize_args;
/* The launch geometry; returns the bytes of the tap table (a->tab). Host only. */
size_t ingot_cuda_resize_plan(ig_resize_args *a);
cudaError_t ingot_cuda_resize(const ig_resize_args *a, cudaStream_t s);

/* ---- InstanceNormalization / GroupNormalization (groupnorm.cu): per (n, group of channels)
 * y = (x - mean) / sqrt(var + eps) * scale[c] + bias[c]; x and y dense, [n][c][s] or channels-last
 * [n][s][c] (s: spatial elements per channel). ---- */
typedef struct ig_groupnorm_args {
    const void *x;
    void *y;
    const void *scale, *bias; /* [c] (NULL: 1 and 0) */
    void *part;               /* partial statistics: ingot_cuda_groupnorm_plan's bytes */
    void *stats;              /* inside part: (mean, rstd) per (n, group) */
    int32_t dtype;            /* of x, y: FLOAT, FLOAT16, BFLOAT16 */
    int32_t wdtype;           /* of scale, bias */
    int32_t cl;               /* 1: channels-last */
    int64_t n, c, s, groups;  /* InstanceNormalization: groups = c */
    float eps;
    int32_t per_group; /* GroupNormalization before opset 21: scale and bias have one value per group */
    int32_t split;     /* filled by the plan: blocks sharing one channel's statistics */
    int64_t chunk;     /* spatial elements per split (a multiple of 8) */
    int32_t tx;        /* filled by the plan: channels-last 16-byte path's threads across channel vectors, 0: none */
} ig_groupnorm_args;
/* The split; returns the bytes of part (the statistics at offset n * c * split * 16). Host only. */
size_t ingot_cuda_groupnorm_plan(ig_groupnorm_args *a);
cudaError_t ingot_cuda_groupnorm(const ig_groupnorm_args *a, cudaStream_t s);

/* ---- index kernels (index.cu): element moves by computed index, and CumSum. Tensors dense. ---- */
enum ig_ix_op {
    IG_IX_GATHER_ELEMENTS = 0, /* y[e] = x[e with coordinate `axis` = idx[e]]; dims: y's (= idx's) */
    IG_IX_SCATTER_ELEMENTS,    /* y[e with coordinate `axis` = idx[e]] = upd[e]; dims: idx's */
    IG_IX_GATHER_ND,           /* y[row, p] = x[batch(row) * bstride + nd(row) + p]; n = rows * slice */
    IG_IX_SCATTER_ND,          /* y[nd(row) + p] = upd[row, p] */
    IG_IX_TRILU,               /* dims [rows, cols] of the last two axes */
    IG_IX_CUMSUM,              /* dims [outer, len, inner]; n = outer * inner lines */
};
#define IG_IX_MAX_RANK 8
typedef struct ig_index_args {
    const void *x, *idx, *upd;
    void *y;
    int32_t op;        /* enum ig_ix_op */
    int32_t esize;     /* bytes per element (moves) */
    int32_t dtype;     /* CumSum: FLOAT, FLOAT16, BFLOAT16, INT32, INT64 */
    int32_t idx_dtype; /* INT32 or INT64 */
    int32_t rank, axis;
    int64_t dims[IG_IX_MAX_RANK];
    int64_t ts[IG_IX_MAX_RANK]; /* *Elements: strides of x (gather) or y (scatter); *ND: of the indexed dims */
    int64_t is[IG_IX_MAX_RANK]; /* *Elements: strides of the indices (0 where they broadcast) */
    int64_t axis_dim;           /* *Elements: the indexed axis's length in x (gather) or y (scatter) */
    int64_t k;                  /* *ND: indices per row, their dims: */
    int64_t nd_dims[IG_IX_MAX_RANK];
    int64_t slice, n_idx, bstride; /* *ND: elements per row; rows per batch; x's batch stride */
    int64_t n;                     /* threads' work items */
    int32_t upper, exclusive, reverse;
    int64_t tk; /* Trilu: the diagonal k */
} ig_index_args;
cudaError_t ingot_cuda_index(const ig_index_args *a, cudaStream_t s);

/* ---- selection kernels (select.cu): Hardmax, TopK, OneHot. Lines are [outer, n, inner]: element (o, j, i)
 * of a dense tensor at (o * n + j) * inner + i. ---- */
enum ig_sel_op {
    IG_SEL_HARDMAX = 0, /* y = 1 at the line's first maximum (NaN above everything, the first NaN wins), else 0 */
    IG_SEL_TOPK,        /* y, idx [outer, k, inner]: the k best of each line, best first, ties to the smaller index */
    IG_SEL_ONEHOT,      /* y [outer, n, inner] = values[1] where j == x[o, i] (n: depth), else values[0] */
};
#define IG_TOPK_SORT_MAX   4096 /* TopK: lines up to this length are sorted in shared memory, any k */
#define IG_TOPK_SELECT_MAX 64   /* longer lines: k rounds of a block-wide selection, k up to this */
typedef struct ig_select_args {
    const void *x;      /* Hardmax, TopK: the input; OneHot: the indices [outer, inner] */
    const void *values; /* OneHot: [off, on] */
    void *y;            /* Hardmax: the output; TopK: the values; OneHot: the output */
    long long *idx;     /* TopK: the indices (int64) */
    int32_t op;         /* enum ig_sel_op */
    int32_t dtype;      /* of x: FLOAT, FLOAT16, BFLOAT16 (Hardmax; TopK also INT32, INT64); OneHot: any number */
    int32_t esize;      /* bytes per element of y */
    int32_t largest;    /* TopK: 1 the largest (NaN first), 0 the smallest (NaN last) */
    int32_t wrap;       /* OneHot: an index in [-n, 0) counts from the end (opset 11) */
    int64_t outer, n, inner;
    int64_t k; /* TopK */
} ig_select_args;
/* cudaErrorNotSupported for a TopK outside the limits above (the lowering refuses those first). */
cudaError_t ingot_cuda_select(const ig_select_args *a, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif /* INGOT_CUDA_KERNELS_H */
