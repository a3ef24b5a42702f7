/*
 * emulate.c -- runs a lowered CUDA device program on the host, step by step, with the semantics each
 * step asks of its kernel or library call. It checks everything the lowering decides -- views and their
 * strides, the collapsed iteration of elementwise programs, fusions, weight conversion and layouts, GEMM
 * leading dimensions and batch strides, the arena plan -- on machines without a GPU (CI), against ONNX
 * Runtime. What it cannot check is the CUDA side: kernels and the cuDNN/cuBLASLt calls (tests/gpu/test_gpu.c
 * does that on a GPU).
 *
 *   test_gpu_lower DIR...      each DIR holds model.onnx, input_<i>.npy, output_<j>.npy
 */
#include "../../src/cuda/cuda_internal.h"
#include "../../src/ops/pw_math.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- element access ----------------------------------------------------------------------------- */

static double ld(const void *p, int64_t i, int dt)
{
    const unsigned char *b = p;
    switch (dt) {
    case INGOT_DTYPE_FLOAT16: {
        uint16_t h;
        memcpy(&h, b + 2 * i, 2);
        return ig__f16_to_f32(h);
    }
    case INGOT_DTYPE_BFLOAT16: {
        uint16_t h;
        memcpy(&h, b + 2 * i, 2);
        return ig__bf16_to_f32(h);
    }
    case INGOT_DTYPE_BOOL: return b[i] != 0;
    default: return ig__elem_f64((ingot_dtype)dt, p, i);
    }
}

static int64_t ldi(const void *p, int64_t i, int dt)
{
    if (dt == INGOT_DTYPE_BOOL) return ((const unsigned char *)p)[i] != 0;
    if (ig__dtype_is_float((ingot_dtype)dt)) return (int64_t)ld(p, i, dt);
    return ig__elem_i64((ingot_dtype)dt, p, i);
}

static void st(void *p, int64_t i, int dt, double v)
{
    unsigned char *b = p;
    switch (dt) {
    case INGOT_DTYPE_FLOAT16: {
        uint16_t h = ig__f32_to_f16((float)v);
        memcpy(b + 2 * i, &h, 2);
        break;
    }
    case INGOT_DTYPE_BFLOAT16: {
        uint16_t h = ig__f32_to_bf16((float)v);
        memcpy(b + 2 * i, &h, 2);
        break;
    }
    case INGOT_DTYPE_FLOAT: {
        float f = (float)v;
        memcpy(b + 4 * i, &f, 4);
        break;
    }
    case INGOT_DTYPE_BOOL: b[i] = v != 0; break;
    default:
        if (ig__dtype_is_float((ingot_dtype)dt))
            ig__elem_set_f64((ingot_dtype)dt, p, i, v);
        else
            ig__elem_set_i64((ingot_dtype)dt, p, i, (int64_t)v);
    }
}

static void sti(void *p, int64_t i, int dt, int64_t v)
{
    if (ig__dtype_is_float((ingot_dtype)dt))
        st(p, i, dt, (double)v);
    else if (dt == INGOT_DTYPE_BOOL)
        ((unsigned char *)p)[i] = v != 0;
    else
        ig__elem_set_i64((ingot_dtype)dt, p, i, v);
}

/* ---- elementwise programs: the kernel's semantics --------------------------------------------------- */

static float fmod_py(float x, float y)
{
    float m = fmodf(x, y);
    if (y == 0.f || m != m) return m;
    if (m != 0.f) {
        if ((y < 0.f) != (m < 0.f)) m += y;
    } else {
        m = copysignf(0.f, y);
    }
    return m;
}

/* The fp16/bf16 round trips by the names IG_EW_FLOAT_EXPRS uses (kernels.h). */
static uint16_t f2h(float f) { return ig__f32_to_f16(f); }
static float h2f(uint16_t h) { return ig__f16_to_f32(h); }
static uint16_t f2b(float f) { return ig__f32_to_bf16(f); }
static float b2f(uint16_t h) { return ig__bf16_to_f32(h); }

/* The kernel's expressions, from the list the interpreter and the generated kernels expand too. */
static float op_f(int code, float a, float b, float z, float k, float k2)
{
    (void)b;
    (void)z;
    (void)k;
    (void)k2;
    switch (code) {
#define IG_EMU_CASE_(c, e) \
    case c: return (e);
        IG_EW_FLOAT_EXPRS(IG_EMU_CASE_)
#undef IG_EMU_CASE_
    default: return ig__pw_math_ext(code) ? ig__pw_math_f32(code, a, k, k2) : NAN; /* SIN and after */
    }
}

static int64_t op_i(int code, int64_t a, int64_t b, int64_t z, int64_t k, int64_t k2)
{
    switch (code) {
    case IG_EW_COPY:
    case IG_EW_TO_INT:
    case IG_EW_FLOOR:
    case IG_EW_CEIL:
    case IG_EW_ROUND: return a;
    case IG_EW_NEG: return -a;
    case IG_EW_ABS: return a < 0 ? -a : a;
    case IG_EW_RELU: return a > 0 ? a : 0;
    case IG_EW_CLIP: return a < k ? k : a > k2 ? k2 : a;
    case IG_EW_NOT: return a == 0;
    case IG_EW_TO_BOOL: return a != 0;
    case IG_EW_ADD: return a + b;
    case IG_EW_SUB: return a - b;
    case IG_EW_MUL: return a * b;
    case IG_EW_DIV: return b == 0 ? 0 : a / b;
    case IG_EW_MAX: return a > b ? a : b;
    case IG_EW_MIN: return a < b ? a : b;
    case IG_EW_EQ: return a == b;
    case IG_EW_GT: return a > b;
    case IG_EW_LT: return a < b;
    case IG_EW_GE: return a >= b;
    case IG_EW_LE: return a <= b;
    case IG_EW_AND: return a && b;
    case IG_EW_OR: return a || b;
    case IG_EW_WHERE: return a ? b : z;
    case IG_EW_MULADD: return a * b + z;
    case IG_PW_SIGN: return ig__pw_math_i64(code, a);
    default: return 0;
    }
}

static int emulate_ew(const ig_ew_args *a)
{
    for (int i = 0; i < a->n_ops; i++)
        if (a->ops[i].dst >= IG_EW_NREG) return -1;
    for (int64_t e = 0; e < a->n; e++) {
        int64_t io[IG_EW_MAX_IN] = {0}, oo = 0, rem = e;
        for (int d = a->rank - 1; d >= 0; d--) {
            int64_t c = d ? rem % a->dims[d] : rem;
            rem = d ? rem / a->dims[d] : 0;
            oo += c * a->out_strides[d];
            for (int k = 0; k < a->n_in; k++) io[k] += c * a->in_strides[k][d];
        }
        for (int k = 0; k < a->n_in; k++) {
            if (a->in_kind[k] == 1)
                io[k] = e;
            else if (a->in_kind[k] == 2)
                io[k] = 0;
        }
        if (a->out_contig) oo = e;
        float rf[IG_EW_NREG] = {0};
        int64_t ri[IG_EW_NREG] = {0};
        for (int i = 0; i < a->n_ops; i++) {
            const ig_ew_op *op = &a->ops[i];
            if (op->code == IG_EW_LOAD) {
                if (op->a >= a->n_in) return -2;
                if (a->int_math)
                    ri[op->dst] = ldi(a->in[op->a], io[op->a], a->in_dtype[op->a]);
                else
                    rf[op->dst] = (float)ld(a->in[op->a], io[op->a], a->in_dtype[op->a]);
                continue;
            }
#define OPF(r) ((r) < IG_EW_NREG ? rf[(r)] : (float)op->k)
#define OPI(r) ((r) < IG_EW_NREG ? ri[(r)] : (int64_t)op->k)
            if (a->int_math)
                ri[op->dst] = op_i(op->code, OPI(op->a), OPI(op->b), OPI(op->c), (int64_t)op->k, (int64_t)op->k2);
            else
                rf[op->dst] = op_f(op->code, OPF(op->a), OPF(op->b), OPF(op->c), (float)op->k, (float)op->k2);
        }
        if (a->int_math)
            sti(a->out, oo, a->out_dtype, ri[a->result]);
        else
            st(a->out, oo, a->out_dtype, rf[a->result]);
    }
    return 0;
}

/* ---- the other steps ------------------------------------------------------------------------------ */

/* ConvTranspose as cuDNN's backward data: y (dx) gathers from x (dy) through the forward conv's filter. */
static void emulate_convt(const ig_cu_prog *p, const ig_cu_step *s, void **P)
{
    const ig_cu_conv *c = &s->u.conv;
    const ig_cu_tensor *x = &p->tensors[c->x], *w = &p->tensors[c->w], *y = &p->tensors[c->y];
    const ig_cu_buf *wb = &p->bufs[w->buf];
    bool krsc = wb->wreq >= 0 && p->wreqs[wb->wreq].nhwc;
    int64_t N = y->dims[0], K = y->dims[1], H = y->dims[2], W = y->dims[3]; /* dx */
    int64_t IH = x->dims[2], IW = x->dims[3], R = w->dims[2], S = w->dims[3], Kg = w->dims[1];
    int64_t Cg = x->dims[1] / c->group; /* dy channels per group */
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t oh = 0; oh < H; oh++)
                for (int64_t ow = 0; ow < W; ow++) {
                    int64_t g = k / Kg, kk = k % Kg;
                    double acc = 0;
                    for (int64_t cc = 0; cc < Cg; cc++)
                        for (int64_t r = 0; r < R; r++)
                            for (int64_t q = 0; q < S; q++) {
                                int64_t th = oh + c->pad[0] - r * c->dil[0], tw = ow + c->pad[1] - q * c->dil[1];
                                if (th < 0 || tw < 0 || th % c->stride[0] || tw % c->stride[1]) continue;
                                int64_t ih = th / c->stride[0], iw = tw / c->stride[1];
                                if (ih >= IH || iw >= IW) continue;
                                int64_t ci = g * Cg + cc;
                                double xv =
                                    ld(P[c->x],
                                       n * x->strides[0] + ci * x->strides[1] + ih * x->strides[2] + iw * x->strides[3],
                                       x->dtype);
                                int64_t wi = krsc ? ((ci * R + r) * S + q) * Kg + kk : ((ci * Kg + kk) * R + r) * S + q;
                                acc += xv * ld(P[c->w], wi, w->dtype);
                            }
                    st(P[c->y], n * y->strides[0] + k * y->strides[1] + oh * y->strides[2] + ow * y->strides[3],
                       y->dtype, acc);
                }
}

/* cuDNN's rule for both directions: the forward convolution of x (transposed: of the dx buffer y) has
 * exactly the other tensor's spatial size. */
static int conv_geometry_ok(const ig_cu_prog *p, const ig_cu_conv *c, char *why, size_t nwhy)
{
    const ig_cu_tensor *in = &p->tensors[c->transpose ? c->y : c->x], *out = &p->tensors[c->transpose ? c->x : c->y];
    const ig_cu_tensor *w = &p->tensors[c->w];
    for (int i = 0; i < 2; i++) {
        int64_t ek = (w->dims[2 + i] - 1) * c->dil[i] + 1, span = in->dims[2 + i] + 2 * c->pad[i] - ek;
        if (span < 0 || span / c->stride[i] + 1 != out->dims[2 + i]) {
            snprintf(why, nwhy,
                     "conv geometry: spatial dim %d of %lld, pad %d, window %lld, stride %d gives %lld, not %lld", i,
                     (long long)in->dims[2 + i], c->pad[i], (long long)ek, c->stride[i],
                     (long long)(span < 0 ? 0 : span / c->stride[i] + 1), (long long)out->dims[2 + i]);
            return -1;
        }
    }
    return 0;
}

static int emulate_conv(const ig_cu_prog *p, const ig_cu_step *s, void **P, char *why, size_t nwhy)
{
    const ig_cu_conv *c = &s->u.conv;
    if (conv_geometry_ok(p, c, why, nwhy)) return -1;
    if (c->transpose) {
        emulate_convt(p, s, P);
        return 0;
    }
    const ig_cu_tensor *x = &p->tensors[c->x], *w = &p->tensors[c->w], *y = &p->tensors[c->y];
    const ig_cu_buf *wb = &p->bufs[w->buf];
    bool krsc = wb->wreq >= 0 && p->wreqs[wb->wreq].nhwc;
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t K = y->dims[1], OH = y->dims[2], OW = y->dims[3], R = w->dims[2], S = w->dims[3], Cg = w->dims[1];
    int64_t G = c->group, Kg = K / G;
    (void)C;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    int64_t g = k / Kg;
                    double acc = 0;
                    for (int64_t cc = 0; cc < Cg; cc++)
                        for (int64_t r = 0; r < R; r++)
                            for (int64_t q = 0; q < S; q++) {
                                int64_t ih = oh * c->stride[0] - c->pad[0] + r * c->dil[0];
                                int64_t iw = ow * c->stride[1] - c->pad[1] + q * c->dil[1];
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                int64_t ci = g * Cg + cc;
                                double xv =
                                    ld(P[c->x],
                                       n * x->strides[0] + ci * x->strides[1] + ih * x->strides[2] + iw * x->strides[3],
                                       x->dtype);
                                int64_t wi = krsc ? ((k * R + r) * S + q) * Cg + cc : ((k * Cg + cc) * R + r) * S + q;
                                acc += xv * ld(P[c->w], wi, w->dtype);
                            }
                    if (c->b >= 0) acc += ld(P[c->b], k, p->tensors[c->b].dtype);
                    int64_t yo = n * y->strides[0] + k * y->strides[1] + oh * y->strides[2] + ow * y->strides[3];
                    if (c->z >= 0) {
                        const ig_cu_tensor *z = &p->tensors[c->z];
                        acc +=
                            ld(P[c->z], n * z->strides[0] + k * z->strides[1] + oh * z->strides[2] + ow * z->strides[3],
                               z->dtype);
                    }
                    if (c->relu && acc < 0) acc = 0;
                    st(P[c->y], yo, y->dtype, acc);
                }
    return 0;
}

static void emulate_gemm(const ig_cu_prog *p, const ig_cu_step *s, void **P)
{
    const ig_cu_gemm *g = &s->u.gemm;
    int dt = p->tensors[g->d].dtype;
    for (int64_t bb = 0; bb < g->batch; bb++)
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                double acc = 0;
                for (int64_t k = 0; k < g->k; k++) {
                    int64_t ai = bb * g->sa + (g->a_trans ? i + k * g->lda : i * g->lda + k);
                    int64_t bi = bb * g->sb + (g->b_trans ? k + j * g->ldb : k * g->ldb + j);
                    acc += ld(P[g->a], ai, dt) * ld(P[g->b], bi, dt);
                }
                acc *= g->alpha;
                if (g->c >= 0) acc += g->beta * ld(P[g->c], bb * g->sc + i * g->ldc + j, dt);
                if (g->bias >= 0) acc += ld(P[g->bias], j, p->tensors[g->bias].dtype);
                if (g->epi == IG_EPI_RELU && acc < 0) acc = 0;
                if (g->epi == IG_EPI_GELU) acc = op_f(IG_EW_GELU_TANH, (float)acc, 0, 0, 0, 0);
                st(P[g->d], bb * g->sd + i * g->ldd + j, dt, acc);
            }
}

static void emulate_softmax(const ig_softmax_args *a)
{
    for (int64_t o = 0; o < a->rows; o++)
        for (int64_t in = 0; in < a->inner; in++) {
            int64_t base = o * a->cols * a->inner + in, moff = 0;
            if (a->mask) {
                int64_t r2 = o % a->row_dims[2], q = o / a->row_dims[2];
                moff = (q / a->row_dims[1]) * a->ms[0] + (q % a->row_dims[1]) * a->ms[1] + r2 * a->ms[2];
            }
#define X(c)                                              \
    (ld(a->x, base + (c)*a->inner, a->dtype) * a->scale + \
     (a->mask ? ld(a->mask, moff + (c)*a->ms[3], a->mask_dtype) : 0))
            double m = -INFINITY, s = 0;
            for (int64_t c = 0; c < a->cols; c++) m = fmax(m, X(c));
            for (int64_t c = 0; c < a->cols; c++) s += exp(X(c) - m);
            for (int64_t c = 0; c < a->cols; c++) {
                double r = a->log ? X(c) - m - log(s) : exp(X(c) - m) / s;
                if (a->zero_nan && r != r) r = 0;
                st(a->y, base + c * a->inner, a->dtype, r);
            }
#undef X
        }
}

static void emulate_ln(const ig_layernorm_args *a)
{
    for (int64_t r = 0; r < a->rows; r++) {
        double mean = 0, var = 0;
        for (int64_t c = 0; c < a->cols; c++) mean += ld(a->x, r * a->cols + c, a->dtype);
        mean /= (double)a->cols;
        for (int64_t c = 0; c < a->cols; c++) {
            double d = ld(a->x, r * a->cols + c, a->dtype) - mean;
            var += d * d;
        }
        double rstd = 1 / sqrt(var / (double)a->cols + a->eps);
        for (int64_t c = 0; c < a->cols; c++) {
            double v = (ld(a->x, r * a->cols + c, a->dtype) - mean) * rstd * ld(a->gamma, c, a->wdtype) +
                       (a->beta ? ld(a->beta, c, a->wdtype) : 0);
            st(a->y, r * a->cols + c, a->dtype, v);
        }
    }
}

static void emulate_reduce(const ig_reduce_args *a)
{
    for (int64_t o = 0; o < a->n_out; o++) {
        int64_t base = 0, rem = o;
        for (int d = a->out_rank - 1; d >= 0; d--) {
            base += (rem % a->out_dims[d]) * a->out_xstrides[d];
            rem /= a->out_dims[d];
        }
        double acc = a->kind == IG_RED_MAX ? -INFINITY : a->kind == IG_RED_MIN ? INFINITY : 0;
        int64_t best = -1;
        for (int64_t r = 0; r < a->n_red; r++) {
            int64_t off = 0, rr = r;
            for (int d = a->red_rank - 1; d >= 0; d--) {
                off += (rr % a->red_dims[d]) * a->red_xstrides[d];
                rr /= a->red_dims[d];
            }
            double x = ld(a->x, base + off, a->x_dtype);
            switch (a->kind) {
            case IG_RED_SUM:
            case IG_RED_MEAN: acc += x; break;
            case IG_RED_MAX: acc = fmax(acc, x); break;
            case IG_RED_MIN: acc = fmin(acc, x); break;
            case IG_RED_ARGMAX:
                if (best < 0 || x > acc || (a->select_last && x == acc)) {
                    acc = x;
                    best = r;
                }
                break;
            case IG_RED_ARGMIN:
                if (best < 0 || x < acc || (a->select_last && x == acc)) {
                    acc = x;
                    best = r;
                }
                break;
            }
        }
        if (a->kind >= IG_RED_ARGMAX)
            ((int64_t *)a->y)[o] = best;
        else
            st(a->y, o, a->y_dtype, a->kind == IG_RED_MEAN ? acc / (double)a->n_red : acc);
    }
}

static void emulate_pool(const ig_pool_args *a)
{
    for (int64_t n = 0; n < a->n; n++)
        for (int64_t c = 0; c < a->c; c++)
            for (int64_t oh = 0; oh < a->oh; oh++)
                for (int64_t ow = 0; ow < a->ow; ow++) {
                    double acc = a->is_max ? -INFINITY : 0;
                    int cnt = 0;
                    for (int i = 0; i < a->kh; i++)
                        for (int j = 0; j < a->kw; j++) {
                            int64_t ih = oh * a->sh - a->ph + i * a->dh, iw = ow * a->sw - a->pw + j * a->dw;
                            if (ih >= 0 && ih < a->h && iw >= 0 && iw < a->w) {
                                double v =
                                    ld(a->x, n * a->xs[0] + c * a->xs[1] + ih * a->xs[2] + iw * a->xs[3], a->dtype);
                                acc = a->is_max ? fmax(acc, v) : acc + v;
                                cnt++;
                            } else if (!a->is_max && a->count_include_pad && ih >= -a->ph && ih < a->h + a->eh &&
                                       iw >= -a->pw && iw < a->w + a->ew) {
                                cnt++;
                            }
                        }
                    st(a->y, n * a->ys[0] + c * a->ys[1] + oh * a->ys[2] + ow * a->ys[3], a->dtype,
                       a->is_max ? acc : (cnt ? acc / cnt : 0));
                }
}

static void emulate_gather(const ig_gather_args *a)
{
    size_t row = (size_t)(a->inner * a->esize);
    for (int64_t o = 0; o < a->outer; o++)
        for (int64_t j = 0; j < a->n_idx; j++) {
            int64_t k = ldi(a->idx, j, a->idx_dtype);
            if (k < 0) k += a->axis_dim;
            if (k < 0 || k >= a->axis_dim) k = 0;
            memcpy((char *)a->y + (size_t)(o * a->n_idx + j) * row,
                   (const char *)a->x + (size_t)(o * a->axis_dim + k) * row, row);
        }
}

static void emulate_dwconv(const ig_dwconv_args *a)
{
    for (int64_t n = 0; n < a->n; n++)
        for (int64_t c = 0; c < a->c; c++)
            for (int64_t oh = 0; oh < a->oh; oh++)
                for (int64_t ow = 0; ow < a->ow; ow++) {
                    double acc = a->b ? ld(a->b, c, a->dtype) : 0;
                    for (int i = 0; i < a->kh; i++)
                        for (int j = 0; j < a->kw; j++) {
                            int64_t ih = oh * a->sh - a->ph + i * a->dh, iw = ow * a->sw - a->pw + j * a->dw;
                            if (ih < 0 || ih >= a->h || iw < 0 || iw >= a->w) continue;
                            acc += ld(a->x, n * a->xs[0] + c * a->xs[1] + ih * a->xs[2] + iw * a->xs[3], a->dtype) *
                                   ld(a->filt, (int64_t)(i * a->kw + j) * a->c + c, a->dtype);
                        }
                    if (a->act == IG_ACT_RELU && acc < 0) acc = 0;
                    if (a->act == IG_ACT_CLIP) acc = fmin(fmax(acc, a->lo), a->hi);
                    st(a->y, n * a->ys[0] + c * a->ys[1] + oh * a->ys[2] + ow * a->ys[3], a->dtype, acc);
                }
}

static void emulate_attention(const ig_attention_args *a)
{
    double *sc = malloc(sizeof(double) * (size_t)a->skv);
    if (!sc) return;
    for (int64_t b = 0; b < a->b; b++)
        for (int64_t h = 0; h < a->h; h++)
            for (int64_t i = 0; i < a->sq; i++) {
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < a->skv; j++) {
                    double acc = 0;
                    for (int64_t d = 0; d < a->d; d++)
                        acc += ld(a->q, b * a->qs[0] + h * a->qs[1] + i * a->qs[2] + d * a->qs[3], a->dtype) *
                               ld(a->k, b * a->ks[0] + h * a->ks[1] + j * a->ks[2] + d * a->ks[3], a->dtype);
                    acc *= a->scale;
                    if (a->mask)
                        acc += ld(a->mask, b * a->ms[0] + h * a->ms[1] + i * a->ms[2] + j * a->ms[3], a->mask_dtype);
                    sc[j] = acc;
                    if (acc > mx) mx = acc;
                }
                for (int64_t j = 0; j < a->skv; j++) {
                    sc[j] = mx == -INFINITY ? 0 : exp(sc[j] - mx);
                    sum += sc[j];
                }
                for (int64_t d = 0; d < a->dv; d++) {
                    double o = 0;
                    for (int64_t j = 0; j < a->skv; j++)
                        o += sc[j] * ld(a->v, b * a->vs[0] + h * a->vs[1] + j * a->vs[2] + d * a->vs[3], a->dtype);
                    st(a->o, b * a->os[0] + h * a->os[1] + i * a->os[2] + d * a->os[3], a->dtype,
                       sum > 0 ? o / sum : 0);
                }
            }
    free(sc);
}

/* ---- the kernel families (kstep.c) ------------------------------------------------------------------- */

static int64_t rdx_keep(const ig_reduction_args *a, int64_t o, int64_t *yoff)
{
    int64_t xo = 0, yo = 0;
    for (int d = a->n_keep - 1; d >= 0; d--) {
        xo += (o % a->keep[d]) * a->keep_xs[d];
        yo += (o % a->keep[d]) * a->keep_ys[d];
        o /= a->keep[d];
    }
    *yoff = yo;
    return xo;
}

static int64_t rdx_red(const ig_reduction_args *a, int64_t r)
{
    int64_t off = 0;
    for (int d = a->n_red - 1; d >= 0; d--) {
        off += (r % a->red[d]) * a->red_xs[d];
        r /= a->red[d];
    }
    return off;
}

/* The reduction kernel's semantics in double (int64 for integers), over the canonical form; checks that
 * the planned split covers every element exactly once. */
static int emulate_reduction(const ig_reduction_args *a, char *why, size_t nwhy)
{
    bool isint = !ig__dtype_is_float((ingot_dtype)a->x_dtype);
    if (a->split < 1 || a->chunk < 1 || (int64_t)(a->split - 1) * a->chunk >= (a->n_red_total ? a->n_red_total : 1) ||
        (int64_t)a->split * a->chunk < a->n_red_total || (a->split > 1 && !a->part)) {
        snprintf(why, nwhy, "reduction split %d x %lld does not cover %lld elements", (int)a->split,
                 (long long)a->chunk, (long long)a->n_red_total);
        return -1;
    }
    for (int64_t o = 0; o < a->n_out; o++) {
        int64_t yoff, xb, k = 0, oo = o;
        if (a->cols) {
            k = o % a->inner;
            oo = o / a->inner;
        }
        xb = rdx_keep(a, oo, &yoff) + k;
        yoff += k * a->inner_ys;
        double acc = a->kind == IG_RDX_MAX ? -INFINITY : a->kind == IG_RDX_MIN ? INFINITY : a->kind == IG_RDX_PROD;
        int64_t iacc = a->kind == IG_RDX_MAX ? INT64_MIN : a->kind == IG_RDX_MIN ? INT64_MAX : a->kind == IG_RDX_PROD;
        double mx = -INFINITY;
        for (int pass = a->kind == IG_RDX_LOGSUMEXP ? 0 : 1; pass < 2; pass++)
            for (int64_t j = 0; j < a->n_red_total; j++) {
                int64_t off = a->cols ? rdx_red(a, j) : rdx_red(a, j / a->inner) + j % a->inner;
                if (isint) {
                    int64_t v = ldi(a->x, xb + off, a->x_dtype);
                    switch (a->kind) {
                    case IG_RDX_MAX: iacc = v > iacc ? v : iacc; break;
                    case IG_RDX_MIN: iacc = v < iacc ? v : iacc; break;
                    case IG_RDX_PROD: iacc *= v; break;
                    default: iacc += v; break;
                    }
                    continue;
                }
                double v = ld(a->x, xb + off, a->x_dtype);
                if (pass == 0) {
                    mx = v > mx || v != v ? v : mx;
                    continue;
                }
                switch (a->kind) {
                case IG_RDX_MAX: acc = v > acc || v != v ? v : acc; break;
                case IG_RDX_MIN: acc = v < acc || v != v ? v : acc; break;
                case IG_RDX_PROD: acc *= v; break;
                case IG_RDX_L1: acc += fabs(v); break;
                case IG_RDX_L2:
                case IG_RDX_SUMSQ: acc += v * v; break;
                case IG_RDX_LOGSUMEXP: acc += isinf(mx) ? (v == mx) : exp(v - mx); break;
                default: acc += v; break;
                }
            }
        if (isint) {
            sti(a->y, yoff, a->y_dtype, iacc);
            continue;
        }
        switch (a->kind) {
        case IG_RDX_MEAN: acc /= (double)a->n_red_total; break;
        case IG_RDX_L2: acc = sqrt(acc); break;
        case IG_RDX_LOGSUM: acc = log(acc); break;
        case IG_RDX_LOGSUMEXP: acc = isinf(mx) || mx != mx ? mx : mx + log(acc); break;
        default: break;
        }
        st(a->y, yoff, a->y_dtype, acc);
    }
    return 0;
}

/* Taps of output coordinate o along resized axis k (resize.c's formulas, in double): their count. */
static int rs_taps(const ig_resize_args *a, int k, int64_t o, int64_t *idx, double *w)
{
    double scale = a->scale[k], y = (double)o, ow = scale * (double)a->in[k], x;
    int64_t in = a->in[k];
    switch (a->ct) {
    case IG_RS_ALIGN_CORNERS: x = ow == 1 ? 0 : y * (double)(in - 1) / (ow - 1); break;
    case IG_RS_ASYMMETRIC: x = y / scale; break;
    case IG_RS_TF_HALF_PIXEL_NN: x = (y + 0.5) / scale; break;
    case IG_RS_PYTORCH_HALF_PIXEL: x = ow == 1 ? -0.5 : (y + 0.5) / scale - 0.5; break;
    case IG_RS_HALF_PIXEL_SYM: x = (double)in / 2 * (1 - (double)a->out[k] / ow) + (y + 0.5) / scale - 0.5; break;
    default: x = (y + 0.5) / scale - 0.5; break;
    }
    if (a->mode == IG_RS_NEAREST) {
        double f = floor(x), fr = x - f;
        int64_t i = (int64_t)f;
        if (a->nearest == IG_RS_NM_SIMPLE)
            i = scale < 1 ? (int64_t)ceil(x) : i;
        else if (fr != 0 && (a->nearest == IG_RS_NM_CEIL || (a->nearest == IG_RS_NM_ROUND_PREFER_FLOOR && fr > 0.5) ||
                             (a->nearest == IG_RS_NM_ROUND_PREFER_CEIL && fr >= 0.5)))
            i++;
        idx[0] = i < 0 ? 0 : i >= in ? in - 1 : i;
        w[0] = 1;
        return 1;
    }
    int n = a->mode == IG_RS_LINEAR ? 2 : 4;
    int64_t base = (int64_t)floor(x) - (x == floor(x));
    double r = x - (double)base, c = a->cubic_a, sum = 0;
    for (int j = 0; j < n; j++) {
        double d = fabs((double)(base - n / 2 + 1 + j) - x);
        if (n == 2)
            w[j] = 1 - d;
        else
            w[j] = d <= 1 ? ((c + 2) * d - (c + 3)) * d * d + 1 : ((c * d - 5 * c) * d + 8 * c) * d - 4 * c;
        int64_t m = base - n / 2 + 1 + j;
        if (a->exclude_outside && (m < 0 || m >= in)) w[j] = 0;
        sum += w[j];
        idx[j] = m < 0 ? 0 : m >= in ? in - 1 : m;
    }
    (void)r;
    if (a->exclude_outside && sum != 0)
        for (int j = 0; j < n; j++) w[j] /= sum;
    return n;
}

static void emulate_resize(const ig_resize_args *a)
{
    int64_t total = 1;
    for (int d = 0; d < a->rank; d++) total *= a->dims[d];
    size_t es = (size_t)a->esize;
    for (int64_t e = 0; e < total; e++) {
        int64_t rem = e, yo = 0, xo = 0, c[2] = {0, 0};
        for (int d = a->rank - 1; d >= 0; d--) {
            int64_t q = rem % a->dims[d];
            rem /= a->dims[d];
            yo += q * a->ys[d];
            if (a->axis[d] < 0)
                xo += q * a->xs[d];
            else
                c[a->axis[d]] = q;
        }
        int64_t i0[4] = {0}, i1[4] = {0};
        double w0[4] = {1}, w1[4] = {1};
        int n0 = rs_taps(a, 0, c[0], i0, w0), n1 = a->n_axes > 1 ? rs_taps(a, 1, c[1], i1, w1) : 1;
        if (a->mode == IG_RS_NEAREST) {
            int64_t off = xo + i0[0] * a->axis_xs[0] + (a->n_axes > 1 ? i1[0] * a->axis_xs[1] : 0);
            memcpy((char *)a->y + (size_t)yo * es, (const char *)a->x + (size_t)off * es, es);
            continue;
        }
        double acc = 0;
        for (int p = 0; p < n0; p++)
            for (int q = 0; q < n1; q++)
                acc += w0[p] * w1[q] *
                       ld(a->x, xo + i0[p] * a->axis_xs[0] + (a->n_axes > 1 ? i1[q] * a->axis_xs[1] : 0), a->dtype);
        st(a->y, yo, a->dtype, acc);
    }
}

static void emulate_groupnorm(const ig_groupnorm_args *a)
{
    int64_t cg = a->c / a->groups;
    for (int64_t n = 0; n < a->n; n++)
        for (int64_t g = 0; g < a->groups; g++) {
            double sum = 0, sq = 0, cnt = (double)(cg * a->s);
            for (int pass = 0; pass < 3; pass++)
                for (int64_t ch = g * cg; ch < (g + 1) * cg; ch++)
                    for (int64_t j = 0; j < a->s; j++) {
                        int64_t i = a->cl ? (n * a->s + j) * a->c + ch : (n * a->c + ch) * a->s + j;
                        double v = ld(a->x, i, a->dtype), mean = sum / cnt;
                        if (pass == 0)
                            sum += v;
                        else if (pass == 1)
                            sq += (v - mean) * (v - mean);
                        else
                            st(a->y, i, a->dtype,
                               (v - mean) / sqrt(sq / cnt + a->eps) *
                                       (a->scale ? ld(a->scale, a->per_group ? g : ch, a->wdtype) : 1) +
                                   (a->bias ? ld(a->bias, a->per_group ? g : ch, a->wdtype) : 0));
                    }
        }
}

static int64_t ix_index(const ig_index_args *a, int64_t i, int64_t dim)
{
    int64_t v = ldi(a->idx, i, a->idx_dtype);
    if (v < 0) v += dim;
    return v < 0 ? 0 : v >= dim ? dim - 1 : v;
}

static void emulate_index(const ig_index_args *a)
{
    size_t es = (size_t)a->esize;
    const char *x = a->x, *u = a->upd;
    char *y = a->y;
    if (a->op == IG_IX_CUMSUM) {
        for (int64_t o = 0; o < a->dims[0]; o++)
            for (int64_t i = 0; i < a->dims[2]; i++) {
                double s = 0;
                for (int64_t q = 0; q < a->dims[1]; q++) {
                    int64_t j = a->reverse ? a->dims[1] - 1 - q : q, e = (o * a->dims[1] + j) * a->dims[2] + i;
                    double v = ld(a->x, e, a->dtype);
                    if (!a->exclusive) s += v;
                    st(a->y, e, a->dtype, s);
                    if (a->exclusive) s += v;
                }
            }
        return;
    }
    for (int64_t e = 0; e < a->n; e++) {
        int64_t off = 0, rem = e, row = a->slice ? e / a->slice : 0, p = a->slice ? e % a->slice : 0;
        switch (a->op) {
        case IG_IX_GATHER_ELEMENTS:
        case IG_IX_SCATTER_ELEMENTS: {
            int64_t ioff = 0;
            for (int d = a->rank - 1; d >= 0; d--) {
                int64_t c = rem % a->dims[d];
                rem /= a->dims[d];
                ioff += c * a->is[d];
                if (d != a->axis) off += c * a->ts[d];
            }
            off += ix_index(a, ioff, a->axis_dim) * a->ts[a->axis];
            if (a->op == IG_IX_GATHER_ELEMENTS)
                memcpy(y + (size_t)e * es, x + (size_t)off * es, es);
            else
                memcpy(y + (size_t)off * es, u + (size_t)e * es, es);
            break;
        }
        case IG_IX_GATHER_ND:
        case IG_IX_SCATTER_ND:
            for (int64_t j = 0; j < a->k; j++) off += ix_index(a, row * a->k + j, a->nd_dims[j]) * a->ts[j];
            if (a->op == IG_IX_GATHER_ND)
                memcpy(y + (size_t)e * es, x + (size_t)((row / a->n_idx) * a->bstride + off + p) * es, es);
            else
                memcpy(y + (size_t)(off + p) * es, u + (size_t)e * es, es);
            break;
        default: {
            int64_t j = e % a->dims[1], i = (e / a->dims[1]) % a->dims[0];
            bool keep = a->upper ? j - i >= a->tk : j - i <= a->tk;
            if (keep)
                memcpy(y + (size_t)e * es, x + (size_t)e * es, es);
            else
                memset(y + (size_t)e * es, 0, es);
        }
        }
    }
}

/* ---- selection: Hardmax, TopK, OneHot (the CPU ops' semantics, src/ops/reduce.c and misc.c) ---------- */

typedef struct sel_item {
    uint64_t key;
    int64_t idx;
} sel_item;

/* Rank order, best first: the larger key, then the smaller index. */
static int sel_cmp(const void *pa, const void *pb)
{
    const sel_item *a = pa, *b = pb;
    if (a->key != b->key) return a->key > b->key ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The CPU op's key: larger element, larger key; NaN the largest; -0 = +0. */
static uint64_t sel_key(const void *x, int64_t i, int dt)
{
    if (dt == INGOT_DTYPE_INT32 || dt == INGOT_DTYPE_INT64) return (uint64_t)ldi(x, i, dt) ^ (1ull << 63);
    double v = ld(x, i, dt);
    if (v != v) return UINT64_MAX;
    if (v == 0) v = 0;
    uint64_t b;
    memcpy(&b, &v, 8);
    return b >> 63 ? ~b : b | (1ull << 63);
}

static int emulate_select(const ig_select_args *a, char *why, size_t nwhy)
{
    const size_t es = (size_t)a->esize;
    const int64_t lines = a->outer * a->inner;
    if (a->op == IG_SEL_ONEHOT) {
        for (int64_t e = 0; e < a->outer * a->n * a->inner; e++) {
            int64_t o = e / (a->n * a->inner), d = e / a->inner % a->n, i = e % a->inner, p = o * a->inner + i, v;
            if (ig__dtype_is_float((ingot_dtype)a->dtype)) {
                double f = ld(a->x, p, a->dtype);
                v = f > -9.2e18 && f < 9.2e18 ? (int64_t)f : INT64_MIN;
            } else {
                v = ldi(a->x, p, a->dtype);
            }
            if (a->wrap && v < 0 && v >= -a->n) v += a->n;
            memcpy((char *)a->y + e * es, (const char *)a->values + (v == d ? es : 0), es);
        }
        return 0;
    }
    sel_item *it = malloc(sizeof(sel_item) * (size_t)(a->n > 0 ? a->n : 1));
    if (!it) {
        snprintf(why, nwhy, "out of memory");
        return -1;
    }
    for (int64_t l = 0; l < lines; l++) {
        int64_t o = l / a->inner, base = o * a->n * a->inner + l % a->inner;
        for (int64_t j = 0; j < a->n; j++) {
            it[j].key = sel_key(a->x, base + j * a->inner, a->dtype);
            if (a->op == IG_SEL_TOPK && !a->largest) it[j].key = ~it[j].key;
            it[j].idx = j;
        }
        qsort(it, (size_t)a->n, sizeof *it, sel_cmp);
        if (a->op == IG_SEL_HARDMAX) {
            for (int64_t j = 0; j < a->n; j++) st(a->y, base + j * a->inner, a->dtype, j == it[0].idx);
            continue;
        }
        int64_t ybase = o * a->k * a->inner + l % a->inner;
        for (int64_t j = 0; j < a->k; j++) {
            memcpy((char *)a->y + (ybase + j * a->inner) * es, (const char *)a->x + (base + it[j].idx * a->inner) * es,
                   es);
            a->idx[ybase + j * a->inner] = it[j].idx;
        }
    }
    free(it);
    return 0;
}

static int emulate_kstep(const ig_cu_prog *p, const ig_cu_step *s, void **P, char *why, size_t nwhy)
{
    int32_t ids[16];
    (void)p;
    if (ig__cu_step_tensors(s, ids) == 0) { /* the arena plan would give its buffers no lifetime */
        snprintf(why, nwhy, "ig__cu_step_tensors (exec.c) does not list the tensors of kernel-family steps");
        return -1;
    }
    ig_cu_kstep k = ig__cu_kstep_bind(s, P);
    switch (s->kind) {
    case IG_ST_REDUCTION: return emulate_reduction(&k.a.red, why, nwhy);
    case IG_ST_RESIZE: emulate_resize(&k.a.resize); return 0;
    case IG_ST_GROUPNORM: emulate_groupnorm(&k.a.gn); return 0;
    case IG_ST_INDEX: emulate_index(&k.a.ix); return 0;
    case IG_ST_SELECT: return emulate_select(&k.a.sel, why, nwhy);
    default: snprintf(why, nwhy, "kind %d not emulated", s->kind); return -1;
    }
}

/* ---- driver ---------------------------------------------------------------------------------------- */

int ig__emulate(const ig_graph *g, ig_cu_prog *p, void *const *inputs, void *const *outputs, char *why, size_t nwhy);

int ig__emulate(const ig_graph *g, ig_cu_prog *p, void *const *inputs, void *const *outputs, char *why, size_t nwhy)
{
    ig_err err = {0};
    ig_cu_plan_result pr;
    if (ig__cu_plan(p, &pr, &err) != INGOT_OK) {
        snprintf(why, nwhy, "plan: %s", err.msg);
        return -1;
    }
    unsigned char *arena = calloc(pr.arena ? pr.arena : 1, 1);
    void **bufp = calloc((size_t)p->n_bufs + 1, sizeof(void *));
    void **P = calloc((size_t)p->n_tensors + 1, sizeof(void *));
    int rc = -1;
    if (!arena || !bufp || !P) goto out;
    /* poison the arena: a read of bytes nobody wrote shows up as a wrong result */
    memset(arena, 0x7f, pr.arena);
    for (int32_t b = 0; b < p->n_bufs; b++) {
        const ig_cu_buf *x = &p->bufs[b];
        switch (x->loc) {
        case IG_LOC_ARENA: bufp[b] = arena + x->offset; break;
        case IG_LOC_WEIGHT: bufp[b] = calloc(x->bytes ? x->bytes : 1, 1); break;
        case IG_LOC_INPUT: bufp[b] = inputs[x->io]; break;
        case IG_LOC_OUTPUT: bufp[b] = outputs[x->io]; break;
        }
        if (!bufp[b]) goto out;
        if (x->loc == IG_LOC_WEIGHT || (x->loc == IG_LOC_ARENA && x->is_const)) {
            if (ig__cu_wreq_fill(g, &p->wreqs[x->wreq], bufp[b], &err) != INGOT_OK) {
                snprintf(why, nwhy, "weights: %s", err.msg);
                goto out;
            }
        }
    }
    for (int32_t t = 0; t < p->n_tensors; t++) {
        const ig_cu_tensor *x = &p->tensors[t];
        P[t] = (char *)bufp[x->buf] + (size_t)x->offset * ingot_dtype_size(x->dtype);
    }
    char lbl[256];
    for (int32_t i = 0; i < p->n_steps; i++) {
        const ig_cu_step *s = &p->steps[i];
        switch (s->kind) {
        case IG_ST_EW: {
            ig_ew_args a = s->u.ew.args;
            a.out = P[s->u.ew.out];
            for (int k = 0; k < s->u.ew.n_in; k++) a.in[k] = P[s->u.ew.in[k]];
            if (emulate_ew(&a)) {
                snprintf(why, nwhy, "step %d %s: malformed program", (int)i, ig__cu_step_label(p, s, lbl, sizeof lbl));
                goto out;
            }
            break;
        }
        case IG_ST_CONV: {
            char w2[200];
            if (emulate_conv(p, s, P, w2, sizeof w2)) {
                snprintf(why, nwhy, "step %d %s: %s", (int)i, ig__cu_step_label(p, s, lbl, sizeof lbl), w2);
                goto out;
            }
            if (s->u.conv.pool_y >= 0) { /* its fused max pool, from the conv's output */
                ig_pool_args a = s->u.conv.pool;
                a.x = P[s->u.conv.y];
                a.y = P[s->u.conv.pool_y];
                emulate_pool(&a);
            }
            break;
        }
        case IG_ST_GEMM: emulate_gemm(p, s, P); break;
        case IG_ST_SOFTMAX: {
            ig_softmax_args a = s->u.softmax.args;
            a.x = P[s->u.softmax.x];
            a.y = P[s->u.softmax.y];
            a.mask = s->u.softmax.mask >= 0 ? P[s->u.softmax.mask] : NULL;
            emulate_softmax(&a);
            break;
        }
        case IG_ST_LAYERNORM: {
            ig_layernorm_args a = s->u.ln.args;
            a.x = P[s->u.ln.x];
            a.y = P[s->u.ln.y];
            a.gamma = P[s->u.ln.gamma];
            a.beta = s->u.ln.beta >= 0 ? P[s->u.ln.beta] : NULL;
            emulate_ln(&a);
            break;
        }
        case IG_ST_REDUCE: {
            ig_reduce_args a = s->u.reduce.args;
            a.x = P[s->u.reduce.x];
            a.y = P[s->u.reduce.y];
            emulate_reduce(&a);
            break;
        }
        case IG_ST_POOL: {
            ig_pool_args a = s->u.pool.args;
            a.x = P[s->u.pool.x];
            a.y = P[s->u.pool.y];
            emulate_pool(&a);
            break;
        }
        case IG_ST_GATHER: {
            ig_gather_args a = s->u.gather.args;
            a.x = P[s->u.gather.x];
            a.idx = P[s->u.gather.idx];
            a.y = P[s->u.gather.y];
            emulate_gather(&a);
            break;
        }
        case IG_ST_ATTENTION: {
            ig_attention_args a = s->u.attn.args;
            a.q = P[s->u.attn.q];
            a.k = P[s->u.attn.k];
            a.v = P[s->u.attn.v];
            a.o = P[s->u.attn.o];
            a.mask = s->u.attn.mask >= 0 ? P[s->u.attn.mask] : NULL;
            emulate_attention(&a);
            break;
        }
        case IG_ST_DWCONV: {
            ig_dwconv_args a = s->u.dw.args;
            a.x = P[s->u.dw.x];
            a.filt = P[s->u.dw.w];
            a.b = s->u.dw.b >= 0 ? P[s->u.dw.b] : NULL;
            a.y = P[s->u.dw.y];
            emulate_dwconv(&a);
            break;
        }
        case IG_ST_FILL: {
            const ig_cu_tensor *t = &p->tensors[s->u.fill.y];
            size_t es = ingot_dtype_size(t->dtype), n = ig__cu_tensor_numel(t);
            for (size_t k = 0; k < n; k++) memcpy((char *)P[s->u.fill.y] + k * es, &s->u.fill.bits, es);
            break;
        }
        default: {
            char kw[256] = "";
            if (!ig__cu_is_kstep(s->kind)) snprintf(kw, sizeof kw, "kind %d not emulated", s->kind);
            if (kw[0] || emulate_kstep(p, s, P, kw, sizeof kw)) {
                snprintf(why, nwhy, "step %d %s: %s", (int)i, ig__cu_step_label(p, s, lbl, sizeof lbl), kw);
                goto out;
            }
            break;
        }
        }
    }
    rc = 0;
out:
    if (bufp)
        for (int32_t b = 0; b < p->n_bufs; b++)
            if (p->bufs[b].loc == IG_LOC_WEIGHT) free(bufp[b]);
    free(bufp);
    free(P);
    free(arena);
    return rc;
}
