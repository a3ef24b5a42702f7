/*
 * conv.c -- convolutions through cuDNN: descriptors made once per instance, the algorithm chosen by
 * timing (cudnnFindConvolutionForwardAlgorithmEx over the real buffers, under the step's workspace),
 * bias + residual + ReLU fused through cudnnConvolutionBiasActivationForward.
 *
 * ConvTranspose (cv->transpose) is the backward data of the forward convolution whose filter is its
 * weight: the same descriptors with x as dy and y as dx, the same choice machinery over cuDNN's
 * backward-data algorithms (cudnnConvolutionBackwardData; no bias: the lowering adds it after).
 *
 * A convolution of 1-4 input channels in fp16 (a network's stem) has one more candidate, ingot's own
 * kernel (kernels/stem.cu, IG_CONV_ALGO_STEM): tuning races it against cuDNN's, so it runs where it is
 * faster. INGOT_CUDA_STEM=off leaves it out; =force takes it wherever it applies (tuned or not: the GPU
 * tests use that to check it).
 *
 * A step may carry a max pool fused after the convolution (cv->pool_y, from ingot.FusedConv's "pool"):
 * every candidate then runs the conv into y and the pool from y (so the race times both), and the stem
 * kernel's pooled form (IG_CONV_ALGO_STEM_POOL) is one more candidate that writes the pooled output
 * without y's round trip through memory.
 *
 * Channels-last fp16 tensors take cuDNN's tensor-core kernels (CUDNN_TENSOR_OP_MATH, fp32 accumulation).
 * float32 convolutions are held to CUDNN_FMA_MATH, so no TF32 creeps in: fp32 results stay within 1e-3
 * of the CPU reference.
 */
#include "cuda_internal.h"

#include <string.h>

#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#define CONV_CANDIDATES 8

/* the algorithm numbers of ingot's stem kernel, and of its pooled form (a step with a pool fused,
 * whose other candidates run the pool after the conv): past cuDNN's in both directions */
#define IG_CONV_ALGO_STEM      1000
#define IG_CONV_ALGO_STEM_POOL 1001

struct ig_cu_conv_prep {
    cudnnTensorDescriptor_t x, y, b;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnActivationDescriptor_t act;
    int algo; /* a cudnnConvolutionFwdAlgo_t, or a cudnnConvolutionBwdDataAlgo_t when transposed */
    cudnnMathType_t math;
    size_t ws;      /* workspace of the chosen algorithm */
    size_t ws_plan; /* workspace planned for the step */
    bool tuned;
    bool stem;      /* the stem kernel takes the problem (the geometry in stem_args) */
    bool stem_pool; /* ... and its pooled form the conv and the step's pool (stem_pool_args) */
    bool stem_only; /* ... and INGOT_CUDA_STEM=force: no other candidate (the pooled form where it applies) */
    ig_stem_args stem_args, stem_pool_args;
    char key[IG_CU_ALGO_KEY]; /* the problem, for the engine's algorithm table (algos.c) */
};

typedef enum stem_mode { STEM_RACE = 0, STEM_OFF = 1, STEM_FORCE = 2 } stem_mode;

static stem_mode stem_mode_env(void)
{
    const char *v = getenv("INGOT_CUDA_STEM");
    if (v && !strcmp(v, "off")) return STEM_OFF;
    if (v && !strcmp(v, "force")) return STEM_FORCE;
    return STEM_RACE;
}

/* Whether the stem kernel computes what conv_call would (fp16 NHWC in and out, KRSC filter, no group,
 * dilation or residual; bias and ReLU exactly when the fused call has them); its geometry into c. */
static bool stem_takes(const ig_cu_prog *p, const ig_cu_conv *cv, bool krsc, struct ig_cu_conv_prep *c)
{
    const ig_cu_tensor *x = &p->tensors[cv->x], *w = &p->tensors[cv->w], *y = &p->tensors[cv->y];
    if (cv->transpose || !krsc || cv->group != 1 || cv->dil[0] != 1 || cv->dil[1] != 1 || cv->z >= 0 ||
        (cv->relu && cv->b < 0) || x->rank != 4 || y->rank != 4 || x->dtype != INGOT_DTYPE_FLOAT16 ||
        y->dtype != INGOT_DTYPE_FLOAT16 || w->dtype != INGOT_DTYPE_FLOAT16 || x->dims[1] > 4 ||
        w->dims[1] != x->dims[1])
        return false;
    ig_stem_args *a = &c->stem_args;
    memset(a, 0, sizeof *a);
    a->relu = cv->relu;
    a->c = (int32_t)x->dims[1];
    a->k = (int32_t)w->dims[0];
    a->r = (int32_t)w->dims[2];
    a->s = (int32_t)w->dims[3];
    a->sh = cv->stride[0];
    a->sw = cv->stride[1];
    a->ph = cv->pad[0];
    a->pw = cv->pad[1];
    a->n = x->dims[0];
    a->h = x->dims[2];
    a->w = x->dims[3];
    a->oh = y->dims[2];
    a->ow = y->dims[3];
    memcpy(a->xs, x->strides, sizeof a->xs);
    memcpy(a->ys, y->strides, sizeof a->ys);
    if (y->dims[1] != a->k || !ingot_cuda_stem_applies(a)) return false;
    /* the pooled form: the same convolution, y the pool's output */
    c->stem_pool = false;
    if (cv->pool_y >= 0) {
        const ig_cu_tensor *py = &p->tensors[cv->pool_y];
        const ig_pool_args *pl = &cv->pool;
        ig_stem_args *b = &c->stem_pool_args;
        *b = *a;
        b->pool = 1;
        b->pkh = pl->kh, b->pkw = pl->kw, b->psh = pl->sh, b->psw = pl->sw, b->pph = pl->ph, b->ppw = pl->pw;
        b->qh = py->dims[2];
        b->qw = py->dims[3];
        memcpy(b->ys, py->strides, sizeof b->ys);
        c->stem_pool = pl->is_max && pl->dh == 1 && pl->dw == 1 && py->rank == 4 && py->dtype == INGOT_DTYPE_FLOAT16 &&
                       py->dims[0] == a->n && py->dims[1] == a->k && ingot_cuda_stem_applies(b);
    }
    return true;
}

static cudnnDataType_t cudnn_type(ingot_dtype t)
{
    switch (t) {
    case INGOT_DTYPE_FLOAT16: return CUDNN_DATA_HALF;
    case INGOT_DTYPE_BFLOAT16: return CUDNN_DATA_BFLOAT16;
    case INGOT_DTYPE_DOUBLE: return CUDNN_DATA_DOUBLE;
    default: return CUDNN_DATA_FLOAT;
    }
}

static const char *bwd_algo_name(int a)
{
    switch (a) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "algo_0";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "algo_1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "fft";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "fft_tiling";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "winograd";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "winograd_nonfused";
    default: return "?";
    }
}

static const char *algo_name(int a, bool transpose)
{
    if (a == IG_CONV_ALGO_STEM) return "stem kernel";
    if (a == IG_CONV_ALGO_STEM_POOL) return "stem kernel, pooled";
    if (transpose) return bwd_algo_name(a);
    switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "implicit_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "implicit_precomp_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "direct";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "fft";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "fft_tiling";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "winograd";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "winograd_nonfused";
    default: return "?";
    }
}

void ig__cu_conv_describe(const ig_cu_step *s, char *buf, size_t n)
{
    const struct ig_cu_conv_prep *c = s->u.conv.prep;
    if (!c) {
        snprintf(buf, n, "cuDNN (not prepared)");
        return;
    }
    bool t = s->u.conv.transpose != 0;
    const char *pool = s->u.conv.pool_y >= 0 ? ", then the max pool" : "";
    if (c->algo == IG_CONV_ALGO_STEM_POOL) {
        snprintf(buf, n, "ingot stem kernel (tensor cores), max pool fused");
        return;
    }
    if (c->algo == IG_CONV_ALGO_STEM) {
        snprintf(buf, n, "ingot stem kernel (tensor cores)%s", pool);
        return;
    }
    snprintf(buf, n, "cuDNN %s%s%s, %.1f MB%s", t ? "bwd-data " : "", algo_name(c->algo, t),
             c->math == CUDNN_FMA_MATH ? " fma" : "", (double)c->ws / 1e6, pool);
}

/* A 4-D descriptor from a view: the packed channels-last and row-major forms by name (so cuDNN takes
 * its NHWC kernels), anything else through explicit strides. */
static cudnnStatus_t set_tensor(cudnnTensorDescriptor_t d, const ig_cu_tensor *t)
{
    const int64_t *n = t->dims, *s = t->strides;
    cudnnDataType_t dt = cudnn_type(t->dtype);
    bool nhwc = (n[1] == 1 || s[1] == 1) && (n[3] == 1 || s[3] == n[1]) && (n[2] == 1 || s[2] == n[3] * n[1]) &&
                (n[0] == 1 || s[0] == n[2] * n[3] * n[1]);
    bool nchw = ig__cu_tensor_contig(t);
    if (nhwc && !nchw)
        return cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NHWC, dt, (int)n[0], (int)n[1], (int)n[2], (int)n[3]);
    if (nchw) return cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, dt, (int)n[0], (int)n[1], (int)n[2], (int)n[3]);
    return cudnnSetTensor4dDescriptorEx(d, dt, (int)n[0], (int)n[1], (int)n[2], (int)n[3], (int)s[0], (int)s[1],
                                        (int)s[2], (int)s[3]);
}

void ig__cu_conv_release(ig_cu_step *s)
{
    struct ig_cu_conv_prep *c = s->u.conv.prep;
    if (!c) return;
    if (c->x) cudnnDestroyTensorDescriptor(c->x);
    if (c->y) cudnnDestroyTensorDescriptor(c->y);
    if (c->b) cudnnDestroyTensorDescriptor(c->b);
    if (c->w) cudnnDestroyFilterDescriptor(c->w);
    if (c->conv) cudnnDestroyConvolutionDescriptor(c->conv);
    if (c->act) cudnnDestroyActivationDescriptor(c->act);
    ig__free(c);
    s->u.conv.prep = NULL;
}

/* A candidate as cuDNN reports it, for either direction. */
typedef struct conv_perf {
    int algo;
    cudnnStatus_t status;
    size_t memory;
    cudnnDeterminism_t determinism;
    cudnnMathType_t math;
} conv_perf;

#define CONV_PERF(p) ((conv_perf){(int)(p).algo, (p).status, (p).memory, (p).determinism, (p).mathType})

/* cuDNN's heuristic candidates (ptrs NULL), or its timed ones over the real buffers and workspace. */
static cudnnStatus_t conv_candidates(ig_cu_libs *L, const ig_cu_step *s, void *const *ptrs, void *ws, size_t ws_bytes,
                                     conv_perf *out, int *n)
{
    const ig_cu_conv *cv = &s->u.conv;
    const struct ig_cu_conv_prep *c = cv->prep;
    cudnnStatus_t r;
    *n = 0;
    if (cv->transpose) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CONV_CANDIDATES];
        r = ptrs
                ? cudnnFindConvolutionBackwardDataAlgorithmEx(L->cudnn, c->w, ptrs[cv->w], c->x, ptrs[cv->x], c->conv,
                                                              c->y, ptrs[cv->y], CONV_CANDIDATES, n, perf, ws, ws_bytes)
                : cudnnGetConvolutionBackwardDataAlgorithm_v7(L->cudnn, c->w, c->x, c->conv, c->y, CONV_CANDIDATES, n,
                                                              perf);
        for (int i = 0; r == CUDNN_STATUS_SUCCESS && i < *n; i++) out[i] = CONV_PERF(perf[i]);
    } else {
        cudnnConvolutionFwdAlgoPerf_t perf[CONV_CANDIDATES];
        r = ptrs
                ? cudnnFindConvolutionForwardAlgorithmEx(L->cudnn, c->x, ptrs[cv->x], c->w, ptrs[cv->w], c->conv, c->y,
                                                         ptrs[cv->y], CONV_CANDIDATES, n, perf, ws, ws_bytes)
                : cudnnGetConvolutionForwardAlgorithm_v7(L->cudnn, c->x, c->w, c->conv, c->y, CONV_CANDIDATES, n, perf);
        for (int i = 0; r == CUDNN_STATUS_SUCCESS && i < *n; i++) out[i] = CONV_PERF(perf[i]);
    }
    if (r != CUDNN_STATUS_SUCCESS) *n = 0;
    return r;
}

/* the workspace algorithm `algo` needs */
static cudnnStatus_t conv_ws_size(ig_cu_libs *L, const ig_cu_step *s, int algo, size_t *need)
{
    const struct ig_cu_conv_prep *c = s->u.conv.prep;
    if (s->u.conv.transpose)
        return cudnnGetConvolutionBackwardDataWorkspaceSize(L->cudnn, c->w, c->x, c->conv, c->y,
                                                            (cudnnConvolutionBwdDataAlgo_t)algo, need);
    return cudnnGetConvolutionForwardWorkspaceSize(L->cudnn, c->x, c->w, c->conv, c->y, (cudnnConvolutionFwdAlgo_t)algo,
                                                   need);
}

/* a choice: the algorithm, its math type and its workspace */
typedef struct conv_choice {
    int32_t algo, math;
    uint64_t ws;
} conv_choice;

ingot_status ig__cu_conv_prepare(ig_cu_libs *L, const ig_cu_prog *p, ig_cu_step *s, size_t ws_limit, bool deterministic,
                                 ig_cu_algos *algos, size_t *ws_bytes, const char *label, ig_err *err)
{
    ig_cu_conv *cv = &s->u.conv;
    ingot_status st;
    ig__cu_conv_release(s);
    struct ig_cu_conv_prep *c = ig__calloc(1, sizeof *c);
    if (!c) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    cv->prep = c;
    const ig_cu_tensor *x = &p->tensors[cv->x], *w = &p->tensors[cv->w], *y = &p->tensors[cv->y];
    bool half = x->dtype != INGOT_DTYPE_FLOAT;
    if ((st = IG_CUDNN(err, label, cudnnCreateTensorDescriptor(&c->x))) != INGOT_OK) return st;
    if ((st = IG_CUDNN(err, label, cudnnCreateTensorDescriptor(&c->y))) != INGOT_OK) return st;
    if ((st = IG_CUDNN(err, label, cudnnCreateTensorDescriptor(&c->b))) != INGOT_OK) return st;
    if ((st = IG_CUDNN(err, label, cudnnCreateFilterDescriptor(&c->w))) != INGOT_OK) return st;
    if ((st = IG_CUDNN(err, label, cudnnCreateConvolutionDescriptor(&c->conv))) != INGOT_OK) return st;
    if ((st = IG_CUDNN(err, label, cudnnCreateActivationDescriptor(&c->act))) != INGOT_OK) return st;
    if ((st = IG_CUDNN(err, label, set_tensor(c->x, x))) != INGOT_OK) return st;
    if ((st = IG_CUDNN(err, label, set_tensor(c->y, y))) != INGOT_OK) return st;
    if ((st = IG_CUDNN(err, label,
                       cudnnSetTensor4dDescriptor(c->b, CUDNN_TENSOR_NCHW, cudnn_type(y->dtype), 1, (int)y->dims[1], 1,
                                                  1))) != INGOT_OK)
        return st;
    /* the filter's layout (KRSC for channels-last) was fixed by its weight request */
    const ig_cu_buf *wb = &p->bufs[w->buf];
    bool krsc = wb->wreq >= 0 && p->wreqs[wb->wreq].nhwc != 0;
    if ((st = IG_CUDNN(err, label,
                       cudnnSetFilter4dDescriptor(c->w, cudnn_type(w->dtype),
                                                  krsc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, (int)w->dims[0],
                                                  (int)w->dims[1], (int)w->dims[2], (int)w->dims[3]))) != INGOT_OK)
        return st;
    if ((st = IG_CUDNN(err, label,
                       cudnnSetConvolution2dDescriptor(c->conv, cv->pad[0], cv->pad[1], cv->stride[0], cv->stride[1],
                                                       cv->dil[0], cv->dil[1], CUDNN_CROSS_CORRELATION,
                                                       x->dtype == INGOT_DTYPE_DOUBLE ? CUDNN_DATA_DOUBLE
                                                                                      : CUDNN_DATA_FLOAT))) != INGOT_OK)
        return st;
    if ((st = IG_CUDNN(err, label, cudnnSetConvolutionGroupCount(c->conv, cv->group))) != INGOT_OK) return st;
    c->math = half ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    if ((st = IG_CUDNN(err, label, cudnnSetConvolutionMathType(c->conv, c->math))) != INGOT_OK) return st;
    if ((st = IG_CUDNN(err, label,
                       cudnnSetActivationDescriptor(c->act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0))) !=
        INGOT_OK)
        return st;
    /* the forward convolution's geometry: of x into y, or (transposed) of the dx buffer y into dy = x */
    const ig_cu_tensor *fo = cv->transpose ? x : y;
    int on, oc, oh, ow;
    if ((st = IG_CUDNN(err, label,
                       cudnnGetConvolution2dForwardOutputDim(c->conv, cv->transpose ? c->y : c->x, c->w, &on, &oc, &oh,
                                                             &ow))) != INGOT_OK)
        return st;
    if (on != fo->dims[0] || oc != fo->dims[1] || oh != fo->dims[2] || ow != fo->dims[3])
        return ig__errf(err, INGOT_ERR_INTERNAL,
                        "node %s: cuDNN computes %s [%d,%d,%d,%d], the graph says "
                        "[%lld,%lld,%lld,%lld]",
                        label, cv->transpose ? "the forward convolution of the output as" : "output", on, oc, oh, ow,
                        (long long)fo->dims[0], (long long)fo->dims[1], (long long)fo->dims[2], (long long)fo->dims[3]);
    /* the problem as cuDNN is asked it, so equal keys mean interchangeable choices */
    char xs[160], ys[160], pool[240] = "";
    if (cv->pool_y >= 0) {
        const ig_pool_args *pl = &cv->pool;
        char ps[160];
        snprintf(pool, sizeof pool, " pool %d,%d str %d,%d pad %d,%d,%d,%d y %s", pl->kh, pl->kw, pl->sh, pl->sw,
                 pl->ph, pl->pw, pl->eh, pl->ew, ig__cu_tensor_str(&p->tensors[cv->pool_y], ps, sizeof ps));
    }
    snprintf(c->key, sizeof c->key,
             "%s %s x %s y %s w %lld,%lld,%lld,%lld%s pad %d,%d str %d,%d dil %d,%d g %d relu %d z %d math %d "
             "limit %zu%s%s",
             cv->transpose ? "convT" : "conv", ingot_dtype_name(x->dtype), ig__cu_tensor_str(x, xs, sizeof xs),
             ig__cu_tensor_str(y, ys, sizeof ys), (long long)w->dims[0], (long long)w->dims[1], (long long)w->dims[2],
             (long long)w->dims[3], krsc ? " krsc" : "", cv->pad[0], cv->pad[1], cv->stride[0], cv->stride[1],
             cv->dil[0], cv->dil[1], cv->group, cv->relu, cv->z >= 0, (int)c->math, ws_limit,
             deterministic ? " det" : "", pool);
    const stem_mode mode = stem_mode_env();
    c->stem = mode != STEM_OFF && stem_takes(p, cv, krsc, c);
    c->stem_only = c->stem && mode == STEM_FORCE;
    if (c->stem_only) { /* no workspace, no cuDNN query */
        c->algo = c->stem_pool ? IG_CONV_ALGO_STEM_POOL : IG_CONV_ALGO_STEM;
        c->ws = c->ws_plan = 0;
        *ws_bytes = 0;
        return INGOT_OK;
    }
    /* a choice the engine already holds (another context's, the engine file's): its workspace is the
     * step's, and cuDNN's heuristic query (about a millisecond a convolution) is skipped; tuning checks
     * the choice before it runs (ig__cu_conv_apply) and times again if it does not hold */
    conv_choice k;
    if (algos && ig__cu_algos_get(algos, c->key, &k, sizeof k) == sizeof k && k.ws <= ws_limit &&
        (c->math != CUDNN_FMA_MATH || k.math == CUDNN_FMA_MATH)) {
        c->ws = c->ws_plan = (size_t)k.ws;
        *ws_bytes = c->ws_plan;
        return INGOT_OK;
    }
    conv_perf perf[CONV_CANDIDATES];
    int n = 0;
    if ((st = IG_CUDNN(err, label, conv_candidates(L, s, NULL, NULL, 0, perf, &n))) != INGOT_OK) return st;
    size_t ws = 0;
    bool any = false;
    for (int i = 0; i < n; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ws_limit) continue;
        if (deterministic && perf[i].determinism != CUDNN_DETERMINISTIC) continue;
        if (!any) {
            c->algo = perf[i].algo;
            c->ws = perf[i].memory;
            any = true;
        }
        if (perf[i].memory > ws) ws = perf[i].memory;
    }
    if (!any)
        return ig__errf(err, INGOT_ERR_CUDNN,
                        "node %s: cuDNN offers no %s%s algorithm within the %zu-byte "
                        "workspace limit",
                        label, deterministic ? "deterministic " : "",
                        cv->transpose ? "backward-data (ConvTranspose)" : "convolution", ws_limit);
    c->ws_plan = ws;
    *ws_bytes = ws;
    return INGOT_OK;
}

const char *ig__cu_conv_key(const ig_cu_step *s) { return s->u.conv.prep ? s->u.conv.prep->key : ""; }

size_t ig__cu_conv_commit_ws(ig_cu_step *s)
{
    struct ig_cu_conv_prep *c = s->u.conv.prep;
    c->ws_plan = c->ws;
    return c->ws;
}

size_t ig__cu_conv_choice(const ig_cu_step *s, void *out, size_t cap)
{
    const struct ig_cu_conv_prep *c = s->u.conv.prep;
    conv_choice k = {(int32_t)c->algo, (int32_t)c->math, c->ws};
    if (cap < sizeof k) return 0;
    memcpy(out, &k, sizeof k);
    return sizeof k;
}

/* The stem kernel on the handle's stream; a launch failure reads as cuDNN's execution failure, which
 * the callers report with the node's name. */
static cudnnStatus_t stem_call(ig_cu_libs *L, const ig_cu_step *s, void *const *ptrs, bool pooled)
{
    const ig_cu_conv *cv = &s->u.conv;
    ig_stem_args a = pooled ? cv->prep->stem_pool_args : cv->prep->stem_args;
    cudaStream_t stream = NULL;
    cudnnStatus_t r = cudnnGetStream(L->cudnn, &stream);
    if (r != CUDNN_STATUS_SUCCESS) return r;
    a.x = ptrs[cv->x];
    a.filt = ptrs[cv->w];
    a.b = cv->relu ? ptrs[cv->b] : NULL;
    a.y = ptrs[pooled ? cv->pool_y : cv->y];
    return ingot_cuda_stem(&a, stream) == cudaSuccess ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED;
}

/* The step's fused pool, from y into pool_y, after the conv on the handle's stream. */
static cudnnStatus_t pool_call(ig_cu_libs *L, const ig_cu_conv *cv, void *const *ptrs)
{
    cudaStream_t stream = NULL;
    cudnnStatus_t r = cudnnGetStream(L->cudnn, &stream);
    if (r != CUDNN_STATUS_SUCCESS) return r;
    ig_pool_args a = cv->pool;
    a.x = ptrs[cv->y];
    a.y = ptrs[cv->pool_y];
    return ingot_cuda_pool(&a, stream) == cudaSuccess ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED;
}

static cudnnStatus_t conv_alone(ig_cu_libs *L, const ig_cu_step *s, int algo, void *const *ptrs, void *ws,
                                size_t ws_bytes)
{
    const ig_cu_conv *cv = &s->u.conv;
    const struct ig_cu_conv_prep *c = cv->prep;
    const float one = 1.f, zero = 0.f;
    if (algo == IG_CONV_ALGO_STEM) return c->stem ? stem_call(L, s, ptrs, false) : CUDNN_STATUS_NOT_SUPPORTED;
    if (cv->transpose)
        return cudnnConvolutionBackwardData(L->cudnn, &one, c->w, ptrs[cv->w], c->x, ptrs[cv->x], c->conv,
                                            (cudnnConvolutionBwdDataAlgo_t)algo, ws, ws_bytes, &zero, c->y,
                                            ptrs[cv->y]);
    if (cv->relu) {
        const float alpha2 = cv->z >= 0 ? 1.f : 0.f;
        const void *z = cv->z >= 0 ? ptrs[cv->z] : ptrs[cv->y];
        return cudnnConvolutionBiasActivationForward(L->cudnn, &one, c->x, ptrs[cv->x], c->w, ptrs[cv->w], c->conv,
                                                     (cudnnConvolutionFwdAlgo_t)algo, ws, ws_bytes, &alpha2, c->y, z,
                                                     c->b, ptrs[cv->b], c->act, c->y, ptrs[cv->y]);
    }
    return cudnnConvolutionForward(L->cudnn, &one, c->x, ptrs[cv->x], c->w, ptrs[cv->w], c->conv,
                                   (cudnnConvolutionFwdAlgo_t)algo, ws, ws_bytes, &zero, c->y, ptrs[cv->y]);
}

/* What the step computes with candidate algo: the conv, then its fused pool when it has one (the
 * pooled stem kernel does both). */
static cudnnStatus_t conv_call(ig_cu_libs *L, const ig_cu_step *s, int algo, void *const *ptrs, void *ws,
                               size_t ws_bytes)
{
    const ig_cu_conv *cv = &s->u.conv;
    if (algo == IG_CONV_ALGO_STEM_POOL)
        return cv->prep->stem_pool ? stem_call(L, s, ptrs, true) : CUDNN_STATUS_NOT_SUPPORTED;
    cudnnStatus_t r = conv_alone(L, s, algo, ptrs, ws, ws_bytes);
    return r == CUDNN_STATUS_SUCCESS && cv->pool_y >= 0 ? pool_call(L, cv, ptrs) : r;
}

/* cudnnFind times each algorithm once, and on the plain convolution: at small sizes one run is noise
 * (ResNet-50 at batch 1 ran anywhere from 0.43 to 0.61 ms from one build to the next). The fastest few
 * it reports are timed again, CONV_TUNE_REPS calls each of the call that will run (bias, residual and
 * activation fused), and the fastest kept. */
#define CONV_RETIME    4
#define CONV_TUNE_REPS 10

typedef struct conv_cand {
    int algo;
    cudnnMathType_t math;
    size_t ws;
} conv_cand;

/* One call of a candidate, for ig__cu_time_calls. */
typedef struct conv_timed {
    ig_cu_libs *L;
    const ig_cu_step *s;
    int algo;
    void *const *ptrs;
    void *ws;
    size_t ws_bytes;
} conv_timed;

static bool conv_timed_call(void *ctx, cudaStream_t stream)
{
    const conv_timed *t = ctx;
    (void)stream; /* the handle's stream, set by the tuner */
    return conv_call(t->L, t->s, t->algo, t->ptrs, t->ws, t->ws_bytes) == CUDNN_STATUS_SUCCESS;
}

/* ms of CONV_TUNE_REPS calls of candidate k (its math type set on the descriptor) as a graph replay,
 * FLT_MAX when a call fails. */
static ingot_status time_cand(ig_cu_libs *L, ig_cu_step *s, const conv_cand *k, void *const *ptrs, void *ws,
                              size_t ws_bytes, cudaStream_t stream, cudaEvent_t e0, cudaEvent_t e1, float *ms,
                              const char *label, ig_err *err)
{
    struct ig_cu_conv_prep *c = s->u.conv.prep;
    ingot_status st;
    *ms = FLT_MAX;
    if ((st = IG_CUDNN(err, label, cudnnSetConvolutionMathType(c->conv, k->math))) != INGOT_OK) return st;
    if (conv_call(L, s, k->algo, ptrs, ws, ws_bytes) != CUDNN_STATUS_SUCCESS) { /* warm-up, outside capture */
        cudaGetLastError();
        return INGOT_OK;
    }
    conv_timed t = {L, s, k->algo, ptrs, ws, ws_bytes};
    return ig__cu_time_calls(conv_timed_call, &t, CONV_TUNE_REPS, stream, e0, e1, ms, label, err);
}

ingot_status ig__cu_conv_tune(ig_cu_libs *L, ig_cu_step *s, void *const *ptrs, void *ws, size_t ws_bytes,
                              cudaStream_t stream, const char *label, ig_err *err)
{
    ig_cu_conv *cv = &s->u.conv;
    struct ig_cu_conv_prep *c = cv->prep;
    ingot_status st;
    if ((st = IG_CUDNN(err, label, cudnnSetStream(L->cudnn, stream))) != INGOT_OK) return st;
    conv_perf perf[CONV_CANDIDATES];
    int n = 0;
    if (!c->stem_only)                                       /* forced: the stem kernel alone */
        conv_candidates(L, s, ptrs, ws, ws_bytes, perf, &n); /* none (a failure): keep the heuristic's choice */
    /* the heuristic's choice (prepare's) always runs the race: cudnnFind's one timing each is on the
     * stream, host work included, so its ranking at small sizes is not the graph's */
    conv_cand cand[CONV_RETIME + 3];
    int n_cand = 0;
    cand[n_cand++] = (conv_cand){(int)c->algo, c->math, c->ws};
    if (c->stem && c->algo != IG_CONV_ALGO_STEM) cand[n_cand++] = (conv_cand){IG_CONV_ALGO_STEM, c->math, 0};
    if (c->stem_pool && c->algo != IG_CONV_ALGO_STEM_POOL)
        cand[n_cand++] = (conv_cand){IG_CONV_ALGO_STEM_POOL, c->math, 0};
    for (int i = 0; i < n && n_cand < CONV_RETIME + 3; i++) {
        if (perf[i].algo == cand[0].algo && perf[i].math == cand[0].math) continue;
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ws_bytes) continue;
        if (c->math == CUDNN_FMA_MATH && perf[i].math != CUDNN_FMA_MATH && perf[i].math != CUDNN_DEFAULT_MATH) continue;
        cand[n_cand++] =
            (conv_cand){perf[i].algo, c->math == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : perf[i].math, perf[i].memory};
    }
    cudaEvent_t e0 = NULL, e1 = NULL;
    float best = FLT_MAX;
    int best_i = -1;
    if (n_cand > 0 && (st = IG_CU(err, label, cudaEventCreate(&e0))) == INGOT_OK)
        st = IG_CU(err, label, cudaEventCreate(&e1));
    for (int i = 0; i < n_cand && st == INGOT_OK; i++) {
        float ms;
        /* timed with the workspace it will run with (its own), not the tuning buffer: the library may
         * pick another kernel when it is handed more */
        if ((st = time_cand(L, s, &cand[i], ptrs, ws, cand[i].ws, stream, e0, e1, &ms, label, err)) == INGOT_OK &&
            ig__cu_tune_rank(i, ms) < best) { /* cand[0]: the heuristic's */
            best = ig__cu_tune_rank(i, ms);
            best_i = i;
        }
    }
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (st != INGOT_OK) return st;
    if (best_i >= 0) {
        c->algo = cand[best_i].algo;
        c->ws = cand[best_i].ws;
        c->math = cand[best_i].math;
    }
    if ((st = IG_CUDNN(err, label, cudnnSetConvolutionMathType(c->conv, c->math))) != INGOT_OK) return st;
    /* the chosen (or heuristic) algorithm must run */
    if ((st = IG_CUDNN(err, label, conv_call(L, s, c->algo, ptrs, ws, c->ws))) != INGOT_OK) return st;
    c->tuned = true;
    return IG_CU(err, label, cudaStreamSynchronize(stream));
}

ingot_status ig__cu_conv_apply(ig_cu_libs *L, ig_cu_step *s, const void *choice, size_t n, void *const *ptrs, void *ws,
                               size_t ws_bytes, cudaStream_t stream, bool *used, const char *label, ig_err *err)
{
    struct ig_cu_conv_prep *c = s->u.conv.prep;
    *used = false;
    conv_choice k;
    if (n != sizeof k) return INGOT_OK;
    memcpy(&k, choice, sizeof k);
    /* what cuDNN accepts for this problem within the step's workspace, and fp32 stays fp32 */
    bool math_ok = k.math == CUDNN_DEFAULT_MATH || k.math == CUDNN_TENSOR_OP_MATH ||
                   k.math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION || k.math == CUDNN_FMA_MATH;
    int n_algo = s->u.conv.transpose ? CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT : CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    /* ingot's kernel: no workspace */
    const bool stem = k.algo == IG_CONV_ALGO_STEM || k.algo == IG_CONV_ALGO_STEM_POOL;
    if (stem ? !(k.algo == IG_CONV_ALGO_STEM ? c->stem : c->stem_pool) : (k.algo < 0 || k.algo >= n_algo))
        return INGOT_OK;
    if (!math_ok) return INGOT_OK;
    if (c->math == CUDNN_FMA_MATH && k.math != CUDNN_FMA_MATH) return INGOT_OK;
    ingot_status st;
    if ((st = IG_CUDNN(err, label, cudnnSetStream(L->cudnn, stream))) != INGOT_OK) return st;
    if (cudnnSetConvolutionMathType(c->conv, (cudnnMathType_t)k.math) != CUDNN_STATUS_SUCCESS) return INGOT_OK;
    size_t need = 0;
    int algo = k.algo;
    bool fits =
        stem || (conv_ws_size(L, s, algo, &need) == CUDNN_STATUS_SUCCESS && need <= ws_bytes && need <= c->ws_plan);
    /* and it runs (one call, as tuning checks its winner) */
    if (fits && conv_call(L, s, algo, ptrs, ws, need) == CUDNN_STATUS_SUCCESS) {
        c->algo = algo;
        c->math = (cudnnMathType_t)k.math;
        c->ws = need;
        c->tuned = true;
        *used = true;
        return IG_CU(err, label, cudaStreamSynchronize(stream));
    }
    cudaGetLastError();
    return IG_CUDNN(err, label, cudnnSetConvolutionMathType(c->conv, c->math)); /* back as it was */
}

ingot_status ig__cu_conv_run(ig_cu_libs *L, const ig_cu_step *s, void *const *ptrs, void *ws, cudaStream_t stream,
                             const char *label, ig_err *err)
{
    const struct ig_cu_conv_prep *c = s->u.conv.prep;
    ingot_status st;
    if ((st = IG_CUDNN(err, label, cudnnSetStream(L->cudnn, stream))) != INGOT_OK) return st;
    return IG_CUDNN(err, label, conv_call(L, s, c->algo, ptrs, ws, c->ws_plan));
}
