/*
 * ops_internal.h -- what the CPU kernels of several op families share beyond op.h: the fp32 math
 * approximations of the elementwise kernels, the float -> integer conversions of Cast, and entry
 * points into the Conv kernel and the softmax row kernel that the fused ops of the ingot domain
 * (fused.c, pw.c) build on.
 *
 * unary.c and pw.c both compute with the math below, so that a fused chain interpreted by pw.c
 * computes bit for bit what the unfused nodes compute: the optimizer's tests compare the two.
 */
#ifndef INGOT_OPS_INTERNAL_H
#define INGOT_OPS_INTERNAL_H

#include "op.h"

#include <math.h>

/* ---- fp32 math (branch-free, so loops over arrays vectorise) ---------------------------------- */

/* c ? a : b on floats without a branch: GCC refuses to vectorise loops whose selects it turned into
 * branches (trapping math being the default). */
static inline float ig__self(bool c, float a, float b)
{
    uint32_t ua, ub, m = 0u - (uint32_t)c;
    memcpy(&ua, &a, 4);
    memcpy(&ub, &b, 4);
    ua = (ua & m) | (ub & ~m);
    memcpy(&a, &ua, 4);
    return a;
}

static inline float ig__pow2i(int32_t k)
{
    uint32_t b = (uint32_t)(k + 127) << 23;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* e^x = 2^k * e^r, |r| <= ln2/2, e^r by its degree-7 Taylor polynomial; x clamped to [-104, 89] so
 * 2^k (applied in two halves to stay normal) under/overflows to 0/inf by itself; NaN kept aside.
 * About 1 ulp. */
static inline float ig__fast_expf(float x)
{
    bool nan = x != x;
    float xc = ig__self(nan, 0.0f, ig__self(x < -104.0f, -104.0f, ig__self(x > 89.0f, 89.0f, x)));
    float kf = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = xc - kf * 0.693145751953125f - kf * 1.42860682030941723e-6f;
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t k = (int32_t)kf, k1 = k / 2;
    float e = p * ig__pow2i(k1) * ig__pow2i(k - k1);
    return ig__self(nan, x, e);
}

/* tanh and erf: odd rational minimax approximations x*P(x^2)/Q(x^2) on a clamped range (Eigen's for
 * float); beyond the clamp the functions are +-1 in float. Errors < 4e-7. */
static inline float ig__fast_tanhf(float x)
{
    const float lim = 7.90531110763549805f;
    float xc = ig__self(x < -lim, -lim, ig__self(x > lim, lim, x));
    float x2 = xc * xc;
    float p = -2.76076847742355e-16f;
    p = p * x2 + 2.00018790482477e-13f;
    p = p * x2 + -8.60467152213735e-11f;
    p = p * x2 + 5.12229709037114e-08f;
    p = p * x2 + 1.48572235717979e-05f;
    p = p * x2 + 6.37261928875436e-04f;
    p = p * x2 + 4.89352455891786e-03f;
    float q = 1.19825839466702e-06f;
    q = q * x2 + 1.18534705686654e-04f;
    q = q * x2 + 2.26843463243900e-03f;
    q = q * x2 + 4.89352518554385e-03f;
    float t = xc * p / q;
    return ig__self(fabsf(x) < 0.0004f, x, t); /* tiny |x|: tanh(x) = x in float */
}

static inline float ig__fast_erff(float x)
{
    float xc = ig__self(x < -4.0f, -4.0f, ig__self(x > 4.0f, 4.0f, x)); /* erf(4) = 1 in float; NaN passes */
    float x2 = xc * xc;
    float p = -2.72614225801306e-10f;
    p = p * x2 + 2.77068142495902e-08f;
    p = p * x2 + -2.10102402082508e-06f;
    p = p * x2 + -5.69250639462346e-05f;
    p = p * x2 + -7.34990630326855e-04f;
    p = p * x2 + -2.95459980854025e-03f;
    p = p * x2 + -1.60960333262415e-02f;
    float q = -1.45660718464996e-05f;
    q = q * x2 + -2.13374055278905e-04f;
    q = q * x2 + -1.68282697438203e-03f;
    q = q * x2 + -7.37332916720468e-03f;
    q = q * x2 + -1.42647390514189e-02f;
    return xc * p / q;
}

/* Mod with fmod=0 on floats: numpy's remainder (the result takes the divisor's sign; ONNX opset 28
 * spells out the same special cases: x mod 0 = NaN, inf mod y = NaN, finite x mod inf = x or inf). */
static inline double ig__mod_f64(double x, double y)
{
    double m = fmod(x, y);
    if (y == 0 || m != m) return m;
    if (m != 0) {
        if ((y < 0) != (m < 0)) m += y;
    } else {
        m = copysign(0.0, y);
    }
    return m;
}
static inline float ig__mod_f32(float x, float y)
{
    float m = fmodf(x, y);
    if (y == 0 || m != m) return m;
    if (m != 0) {
        if ((y < 0) != (m < 0)) m += y;
    } else {
        m = copysignf(0.0f, y);
    }
    return m;
}

/* Integer powers by squaring, wrapping like repeated multiplication. A negative exponent gives the
 * truncated real result: 1 for base 1, +-1 for base -1, 0 otherwise (0 also for base 0). */
static inline int64_t ig__ipow_s(int64_t x, int64_t e)
{
    if (e < 0) return x == 1 ? 1 : x == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)x, u = (uint64_t)e;
    while (u) {
        if (u & 1) r *= b;
        b *= b;
        u >>= 1;
    }
    return (int64_t)r;
}

/* ---- conversions as Cast does them -------------------------------------------------------------- */

/* float -> integer: truncation toward zero, NaN -> 0, saturating at the int64 range (a store then
 * wraps to the target width). */
static inline int64_t ig__f2i64(double v)
{
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return INT64_MAX;
    if (v < -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}
static inline uint64_t ig__f2u64(double v)
{
    if (v >= 9223372036854775808.0) return v < 18446744073709551616.0 ? (uint64_t)v : UINT64_MAX;
    return (uint64_t)ig__f2i64(v);
}

/* double -> float rounded to odd: a later round-to-nearest-even to fp16/bf16 is then correctly
 * rounded (double -> float -> half, two plain roundings, is not always). */
static inline float ig__f64_to_f32_odd(double d)
{
    float f = (float)d;
    if (isnan(d) || (double)f == d) return f;
    if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f);
    uint32_t b;
    memcpy(&b, &f, 4);
    b |= 1;
    memcpy(&f, &b, 4);
    return f;
}

/* ---- kernel entry points shared with the fused ops ---------------------------------------------- */

/* A (batched, broadcast) matrix product as a batch of GEMMs over the output's batch dims, numpy's
 * matmul rules (src/ops/matmul.c); FusedMatMul adds transposed operands and alpha. */
typedef struct ig_bmm_plan {
    bool ta, tb; /* A is stored [k, m], B [n, k] (last two dims) */
    float alpha; /* product scale: 1 for MatMul */
    int64_t m, n, k, lda, ldb;
    int32_t nb;                                   /* output batch rank */
    int64_t bdims[IG_MAX_RANK];                   /* output batch dims */
    int64_t astr[IG_MAX_RANK], bstr[IG_MAX_RANK]; /* per batch dim, in elements (0: broadcast) */
    int64_t nbatch;
    bool fold; /* B has no batch and A's batch is contiguous and not transposed: one GEMM of nbatch*m rows */
} ig_bmm_plan;

/* The plan for A [.., m, k] x B [.., k, n] (before transposition; a 1-D A is a row, a 1-D B a column,
 * and transposing them means nothing); false when k or the batch dims do not match. alpha = 1. */
bool ig__bmm_plan(int32_t ra, const int64_t *ad, int32_t rb, const int64_t *bd, bool ta, bool tb, ig_bmm_plan *p);
/* Element offsets of batch entry bi in A and B. */
void ig__bmm_offsets(const ig_bmm_plan *p, int64_t bi, int64_t *ao, int64_t *bo);
/* The fp32 GEMM workspace of a plan: *slots slices of *slice_bytes (64-byte multiples when several).
 * Small batched GEMMs run side by side, one per thread; a large one, or a folded batch, threads itself. */
void ig__bmm_workspace(const ig_bmm_plan *p, size_t *slice_bytes, int64_t *slots);

/* Called by the Conv kernel on its fp32 result y (Conv's output shape, row-major) before it is stored
 * in the output's dtype: FusedConv applies its epilogue here, so a float16 output is rounded once. */
typedef void (*ig_conv_epilogue)(void *ctx, float *y);

/* Conv's CPU kernel (src/ops/conv.c) on ex's inputs 0..2 (X, W, optional B; later inputs ignored)
 * into ex->out[0], calling epi(ctx, y) on the fp32 result when epi is not NULL. Scratch: Conv's
 * cpu_scratch of the node. */
ingot_status ig__conv_cpu_run(ig_exec *ex, ig_conv_epilogue epi, void *ctx);

/* One softmax (or log-softmax) over a contiguous fp32 row, as the Softmax kernel computes it (row
 * maximum subtracted, sum in double). y may be x. */
void ig__softmax_row_f32(const float *x, float *y, int64_t n, bool log);

/* ---- sliding windows (conv.c): one geometry for Conv, ConvTranspose, the pools and Col2Im ---------- */

#define IG_MAX_SP (IG_MAX_RANK - 2) /* spatial dims of a windowed op */

typedef enum ig_win_kind {
    IG_WIN_CONV,
    IG_WIN_CONVT, /* ConvTranspose */
    IG_WIN_MAXPOOL,
    IG_WIN_AVGPOOL,
    IG_WIN_LPPOOL,
    IG_WIN_UNPOOL, /* MaxUnpool: its output sized as a ConvTranspose's, dilation 1 */
    IG_WIN_COL2IM, /* Col2Im: its block counts are a Conv's output sizes over the image */
} ig_win_kind;
typedef enum ig_auto_pad { IG_PAD_NOTSET, IG_PAD_SAME_UPPER, IG_PAD_SAME_LOWER, IG_PAD_VALID } ig_auto_pad;

/* Sliding-window attributes of a node, with defaults filled in. kernel[i] == 0: not known (a Conv
 * whose weight dims are symbolic and that has no kernel_shape). */
typedef struct ig_window {
    ig_win_kind kind;
    int32_t nsp;
    int64_t kernel[IG_MAX_SP], stride[IG_MAX_SP], dil[IG_MAX_SP];
    int64_t pad_b[IG_MAX_SP], pad_e[IG_MAX_SP]; /* explicit pads (used with NOTSET) */
    int64_t out_pad[IG_MAX_SP];                 /* ConvTranspose output_padding */
    int64_t out_shape[IG_MAX_SP];               /* ConvTranspose output_shape */
    bool has_out_shape;
    ig_auto_pad autopad;
    bool ceil_mode;
    bool count_include_pad;
    int64_t storage_order;
    int64_t group;
} ig_window;

/* The window attributes of a node with nsp spatial dims (only those its op has at its opset), each
 * checked, failing with the node named (err may be NULL). wk: the kernel when it is not an attribute
 * (Conv's weight dims, < 0 where unknown; Col2Im's block_shape, each in [1, 2^31)), else NULL. */
ingot_status ig__window_parse(ig_err *err, const ig_node *node, ig_win_kind kind, int32_t nsp, const int64_t *wk,
                              ig_window *w);
/* Spatial dim i of an input of size `in`: the output size and the pads applied at the begin and end
 * (for the transposed kinds, the pads cropped from the full output). Fails naming the dim when the
 * window does not fit. */
ingot_status ig__window_resolve(ig_err *err, const ig_node *node, const ig_window *w, int32_t i, int64_t in,
                                int64_t *out, int64_t *pb, int64_t *pe);
/* Output spatial dims os->d[2..] from input dims xs->d[2..] that may be symbolic (kept where the
 * window cannot change them, else fresh). */
ingot_status ig__window_infer_spatial(ig_infer *cx, const ig_window *w, const ig_shape *xs, ig_shape *os);
/* Along one spatial dim: the taps [*t0, *t1) of the window starting at `start` that fall inside the
 * input, and (returned) how many fall inside the padded input (count_include_pad's divisor). */
int64_t ig__window_taps(int64_t start, int64_t k, int64_t d, int64_t in, int64_t pad_end, int64_t *t0, int64_t *t1);

/* ---- helpers of the fused ops (fused.c), shared with fused_attention.c ------------------------- */

/* Fail with "node 'NAME' (OpType): " first, from a kernel. */
ingot_status ig__exec_fail(ig_exec *ex, ingot_status st, const char *fmt, ...) IG_PRINTF(3, 4);
/* Where a kernel's temporaries live: ex->scratch when it holds need bytes, else (constant folding,
 * callers that did not size scratch) a block allocated here, returned in *own for the caller to free
 * with ig__free_aligned. */
ingot_status ig__exec_scratch(ig_exec *ex, size_t need, char **base, void **own);

/* Scratch carved into 64-byte aligned pieces in a fixed order; with base NULL the same walk sizes it
 * (cpu_scratch and the kernel share one layout function). */
typedef struct ig_carver {
    char *base;
    size_t off;
} ig_carver;
void *ig__carve(ig_carver *cv, size_t bytes);

bool ig__is_lowp(ingot_dtype t); /* float16 or bfloat16 */

/* X (input 0) and Y (output 0) as a kernel computing in fp32 or double reads and writes them (RoiAlign,
 * MaxRoiPool): fp32 copies in scratch for float16/bfloat16, the tensors themselves for float (xf, yf) and
 * double (xd, yd). ig__float_io_scratch is the op's .cpu_scratch; _end writes a copy back and frees. */
typedef struct ig_float_io {
    const float *xf;
    float *yf;
    const double *xd;
    double *yd;
    void *own;
} ig_float_io;
size_t ig__float_io_scratch(const ig_graph *g, const ig_node *n);
ingot_status ig__float_io_begin(ig_exec *ex, const ig_tensor *x, ig_tensor *y, ig_float_io *io);
void ig__float_io_end(ig_float_io *io, ig_tensor *y);
/* Element i of X, and of Y, as double; Y's element i set from a double (to float when computing in fp32). */
static inline double ig__float_io_x(const ig_float_io *io, int64_t i) { return io->xf ? (double)io->xf[i] : io->xd[i]; }
static inline double ig__float_io_y(const ig_float_io *io, int64_t i) { return io->yf ? (double)io->yf[i] : io->yd[i]; }
static inline void ig__float_io_set_y(const ig_float_io *io, int64_t i, double v)
{
    if (io->yf)
        io->yf[i] = (float)v;
    else
        io->yd[i] = v;
}
/* v rounded to the computation type: computing in double and rounding each operation to float gives what
 * float arithmetic gives (double holds every sum, product and quotient of two floats to more than twice
 * float's precision). */
static inline double ig__round_to(bool f32, double v) { return f32 ? (double)(float)v : v; }
/* n elements of a float32/float16/bfloat16 buffer to fp32 and back (round to nearest even). */
void ig__to_f32(ingot_dtype t, const void *src, int64_t n, float *dst);
void ig__from_f32(ingot_dtype t, const float *src, int64_t n, void *dst);

/* Inference: fail when input i provably does not broadcast (one way) to `to`; symbolic dims pass.
 * `what` names the input in the message ("mask"). */
ingot_status ig__infer_bcast_to(ig_infer *cx, int i, const ig_shape *to, const char *what);
/* Inference: attribute `name`, when present, is the INT 0 or 1 / a FLOAT (or INT). */
ingot_status ig__infer_flag(ig_infer *cx, const char *name);
ingot_status ig__infer_float_attr(ig_infer *cx, const char *name);
/* Element count of value v when concrete, else 0 (for FLOP counts). */
double ig__value_numel(const ig_graph *g, int32_t v);

/* ---- BatchNormalization in training mode (norm_more.c), for the BatchNormalization descriptor ---- */

/* Inference and CPU kernel of a BatchNormalization node with training_mode=1 (opset 14+): Y normalised
 * with the batch's own mean and population variance; outputs 1 and 2, when present, the running
 * statistics. */
ingot_status ig__bn_training_infer(ig_infer *cx);
ingot_status ig__bn_training_cpu(ig_exec *ex);

#endif /* INGOT_OPS_INTERNAL_H */
