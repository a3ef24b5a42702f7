/*
 * fused.c -- ops of the ingot domain that the optimizer makes (docs/OPTIMIZER.md, "The ops"):
 * Pointwise, FusedConv and FusedMatMul, plus the helpers the fused ops share (ops_internal.h).
 * MaskedSoftmax and Attention live in fused_attention.c.
 *
 * Each is an ordinary op: inference (dtype and shape checks naming the node; the program attributes
 * validated by ig__pw_decode, since they may come from a file), a CPU reference kernel and a FLOP
 * count. The kernels reuse what the unfused ops run, so a fused graph computes what the graph it
 * replaced computed, minus intermediate roundings:
 *   - Pointwise: the pw.c interpreter;
 *   - FusedConv: Conv's kernel (conv.c, through ig__conv_cpu_run), the epilogue applied in place on
 *     its fp32 result before the store rounds to the output's dtype;
 *   - FusedMatMul: ONNX MatMul (batch broadcast, 1-D operands promoted) with the last two dims of
 *     either operand transposed on request, alpha, a bias row and the epilogue, on ig__sgemm. The
 *     bias is written into the output first and the GEMM accumulates onto it (beta = 1), as Gemm does.
 * float16/bfloat16 tensors are converted to fp32 in scratch, computed, and rounded once at the end.
 */
#include "op.h"
#include "ops_internal.h"
#include "pw.h"
#include "../cpu/cpu.h"

#include <inttypes.h>
#include <string.h>
#include <stdio.h>

/* ---------------------------------------------------------------------------------------------- */
/* shared helpers                                                                                  */

ingot_status ig__exec_fail(ig_exec *ex, ingot_status st, const char *fmt, ...)
{
    char msg[IG_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ig__errf(ex->err, st, "node '%s' (%s): %s", ig__node_label(ex->node), ex->node->op_type, msg);
}

ingot_status ig__exec_scratch(ig_exec *ex, size_t need, char **base, void **own)
{
    *own = NULL;
    if (need == 0 || (ex->scratch && ex->scratch_bytes >= need)) {
        *base = ex->scratch;
        return INGOT_OK;
    }
    /* constant folding and callers that did not size scratch */
    *own = ig__malloc_aligned(need, 64);
    if (!*own) return ig__exec_fail(ex, INGOT_ERR_OUT_OF_MEMORY, "out of memory for %zu bytes of scratch", need);
    *base = *own;
    return INGOT_OK;
}

void *ig__carve(ig_carver *cv, size_t bytes)
{
    bytes = (bytes + 63) & ~(size_t)63;
    void *p = cv->base ? cv->base + cv->off : NULL;
    cv->off += bytes;
    return p;
}

bool ig__is_lowp(ingot_dtype t) { return t == INGOT_DTYPE_FLOAT16 || t == INGOT_DTYPE_BFLOAT16; }

void ig__to_f32(ingot_dtype t, const void *src, int64_t n, float *dst)
{
    const uint16_t *h = src;
    if (t == INGOT_DTYPE_FLOAT16)
        for (int64_t i = 0; i < n; i++) dst[i] = ig__f16_to_f32(h[i]);
    else if (t == INGOT_DTYPE_BFLOAT16)
        for (int64_t i = 0; i < n; i++) dst[i] = ig__bf16_to_f32(h[i]);
    else if (n > 0 && src != dst)
        memcpy(dst, src, sizeof(float) * (size_t)n);
}

void ig__from_f32(ingot_dtype t, const float *src, int64_t n, void *dst)
{
    uint16_t *h = dst;
    if (t == INGOT_DTYPE_FLOAT16)
        for (int64_t i = 0; i < n; i++) h[i] = ig__f32_to_f16(src[i]);
    else if (t == INGOT_DTYPE_BFLOAT16)
        for (int64_t i = 0; i < n; i++) h[i] = ig__f32_to_bf16(src[i]);
    else if (n > 0 && src != dst)
        memcpy(dst, src, sizeof(float) * (size_t)n);
}

ingot_status ig__infer_bcast_to(ig_infer *cx, int i, const ig_shape *to, const char *what)
{
    const ig_value *v = ig__in(cx, i);
    if (!v || v->shape.rank < 0 || to->rank < 0) return INGOT_OK;
    bool ok = v->shape.rank <= to->rank;
    for (int32_t d = 0; ok && d < v->shape.rank; d++) {
        ig_dim a = v->shape.d[d], b = to->d[to->rank - v->shape.rank + d];
        /* only what is certain fails: a symbolic dim may turn out to be 1 or equal */
        if (ig__dim_known(a) && ig__dim_known(b) && a.n != 1 && a.n != b.n) ok = false;
    }
    if (ok) return INGOT_OK;
    char s1[256], s2[256];
    return ig__fail_shape(cx, "%s %d '%s' of shape %s does not broadcast to %s", what, i, v->name,
                          ig__shape_str(cx->g, &v->shape, s1, sizeof s1), ig__shape_str(cx->g, to, s2, sizeof s2));
}

ingot_status ig__infer_flag(ig_infer *cx, const char *name)
{
    const ig_attr *a = ig__node_attr(cx->node, name);
    if (a && (a->type != IG_ATTR_INT || (a->i != 0 && a->i != 1)))
        return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "attribute '%s' must be the integer 0 or 1", name);
    return INGOT_OK;
}

ingot_status ig__infer_float_attr(ig_infer *cx, const char *name)
{
    const ig_attr *a = ig__node_attr(cx->node, name);
    if (a && a->type != IG_ATTR_FLOAT && a->type != IG_ATTR_INT)
        return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "attribute '%s' must be a float", name);
    return INGOT_OK;
}

double ig__value_numel(const ig_graph *g, int32_t v)
{
    int64_t n;
    if (v < 0 || !ig__shape_numel(&g->values[v].shape, &n)) return 0;
    return (double)n;
}

/* ---------------------------------------------------------------------------------------------- */
/* epilogues: program input 0 is the op's result, inputs first_extra.. are the extras               */

static int32_t n_extras(const ig_node *n, int32_t first_extra)
{
    return n->n_inputs > first_extra ? n->n_inputs - first_extra : 0;
}

/* Inference side: extras present, broadcasting to the output, the program valid and fp32. */
static ingot_status epilogue_infer(ig_infer *cx, int32_t first_extra)
{
    const ig_node *n = cx->node;
    int32_t ne = n_extras(n, first_extra);
    if (ne > IG_PW_MAX_IN - 1)
        return ig__unsupported(cx, "%d epilogue inputs; at most %d are supported", (int)ne, IG_PW_MAX_IN - 1);
    ig_value *out = ig__out(cx, 0);
    ingot_status st;
    for (int32_t i = first_extra; i < n->n_inputs; i++) {
        if (!ig__in(cx, i)) return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "epilogue input %d is empty", (int)i);
        if (!ig__dtype_supported(ig__in(cx, i)->dtype))
            return ig__unsupported(cx, "epilogue input %d has dtype %s", (int)i,
                                   ingot_dtype_name(ig__in(cx, i)->dtype));
        if (out && (st = ig__infer_bcast_to(cx, i, &out->shape, "epilogue input")) != INGOT_OK) return st;
    }
    ig_pw_prog p;
    if ((st = ig__pw_decode(cx->g, n, "epilogue_", 1 + ne, &p, cx->err)) != INGOT_OK) return st;
    if (p.int_math) return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "an epilogue computes in fp32: int_math must be 0");
    return INGOT_OK;
}

/* Execution side: the program, and the extras checked against the output's concrete shape. */
static ingot_status epilogue_prepare(ig_exec *ex, int32_t first_extra, ig_pw_prog *p)
{
    int32_t ne = n_extras(ex->node, first_extra);
    ingot_status st = ig__pw_decode(ex->g, ex->node, "epilogue_", 1 + ne, p, ex->err);
    if (st != INGOT_OK) return st;
    const ig_tensor *y = ex->out[0];
    for (int32_t i = first_extra; i < ex->n_in; i++) {
        const ig_tensor *t = ex->in[i];
        if (!t) return ig__exec_fail(ex, INGOT_ERR_INTERNAL, "epilogue input %d is missing", (int)i);
        if (!ig__pw_broadcasts(t, y->rank, y->dims))
            return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "epilogue input %d does not broadcast to the output",
                                 (int)i);
    }
    return INGOT_OK;
}

/* Run the epilogue in place on y, the fp32 result of output 0's shape. */
static void epilogue_apply(ig_exec *ex, const ig_pw_prog *p, int32_t first_extra, float *y)
{
    if (p->n_ops == 0) return;
    ig_tensor yv;
    ig__tensor_set_shape(&yv, INGOT_DTYPE_FLOAT, ex->out[0]->rank, ex->out[0]->dims);
    yv.data = y;
    const ig_tensor *ins[IG_PW_MAX_IN] = {&yv};
    for (int32_t k = 1; k < p->n_in; k++) ins[k] = ex->in[first_extra + k - 1];
    ig__pw_apply(ex->pool, p, ins, p->n_in, &yv);
}

/* An instruction an element of what the epilogue runs over (numel; < 0: the node's output). */
static double epilogue_flops(const ig_graph *g, const ig_node *n, double numel)
{
    const ig_attr *a = ig__node_attr(n, "epilogue_ops");
    if (!a || a->type != IG_ATTR_INTS || n->n_outputs < 1) return 0;
    return (double)(a->n / 4) * (numel >= 0 ? numel : ig__value_numel(g, n->outputs[0]));
}

/* ---------------------------------------------------------------------------------------------- */
/* Pointwise                                                                                       */

static ingot_status pointwise_infer(ig_infer *cx)
{
    int32_t n = ig__n_in(cx);
    if (n < 1 || n > IG_PW_MAX_IN)
        return ig__unsupported(cx, "%d inputs; a pointwise program has 1 to %d", (int)n, IG_PW_MAX_IN);
    const ig_attr *to = ig__node_attr(cx->node, "to");
    if (!to || to->type != IG_ATTR_INT)
        return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "required attribute 'to' (the output dtype, an integer) is %s",
                        to ? "not an integer" : "missing");
    if (!ig__dtype_supported(to->i))
        return ig__unsupported(cx, "attribute to=%" PRId64 " is not a dtype ingot supports", to->i);
    ig_pw_prog p;
    ingot_status st = ig__pw_decode(cx->g, cx->node, "", n, &p, cx->err);
    if (st != INGOT_OK) return st;
    ig_shape out = {.rank = 0};
    for (int32_t i = 0; i < n; i++) {
        ig_value *v = ig__in(cx, i);
        if (!v) return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "input %d is empty", (int)i);
        if (p.int_math && !ig__dtype_is_int(v->dtype) && v->dtype != INGOT_DTYPE_BOOL)
            return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "input %d '%s' is %s, but an int_math program takes integers",
                            (int)i, v->name, ingot_dtype_name(v->dtype));
        ig_shape prev = out;
        if ((st = ig__broadcast(cx, &prev, &v->shape, &out)) != INGOT_OK) return st;
    }
    /* an int_math program may store into a float type: the store converts its int64 result as Cast does */
    return ig__set_out(cx, 0, (ingot_dtype)to->i, &out);
}

/* The planner lets output 0 overwrite input 0 when their byte sizes agree; when input 0 is broadcast
 * (fewer, wider elements) that is not the same layout, and input 0 is copied aside first. */
static bool alias_needs_copy(const ig_tensor *in0, const ig_tensor *out) { return in0->numel != out->numel; }

static size_t pointwise_scratch(const ig_graph *g, const ig_node *n)
{
    if (n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs < 1 || n->outputs[0] < 0) return 0;
    size_t bi = ig__value_bytes(&g->values[n->inputs[0]]), bo = ig__value_bytes(&g->values[n->outputs[0]]);
    double ni = ig__value_numel(g, n->inputs[0]), no = ig__value_numel(g, n->outputs[0]);
    return bi == bo && ni != no ? bi : 0;
}

static ingot_status pointwise_cpu(ig_exec *ex)
{
    ig_tensor *y = ex->out[0];
    if (!y) return ig__exec_fail(ex, INGOT_ERR_INTERNAL, "missing output");
    ig_pw_prog p;
    ingot_status st = ig__pw_decode(ex->g, ex->node, "", ex->n_in, &p, ex->err);
    if (st != INGOT_OK) return st;
    const ig_tensor *ins[IG_PW_MAX_IN];
    for (int32_t i = 0; i < p.n_in; i++) {
        if (!ex->in[i]) return ig__exec_fail(ex, INGOT_ERR_INTERNAL, "input %d is missing", (int)i);
        if (!ig__pw_broadcasts(ex->in[i], y->rank, y->dims))
            return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "input %d does not broadcast to the output", (int)i);
        ins[i] = ex->in[i];
    }
    ig_tensor copy;
    void *own = NULL;
    if (ins[0]->data == y->data && y->numel > 0 && alias_needs_copy(ins[0], y)) {
        size_t bytes = (size_t)ins[0]->numel * ingot_dtype_size(ins[0]->dtype);
        char *base = NULL;
        if ((st = ig__exec_scratch(ex, bytes, &base, &own)) != INGOT_OK) return st;
        copy = *ins[0];
        copy.data = base;
        memcpy(copy.data, ins[0]->data, bytes);
        ins[0] = &copy;
    }
    ig__pw_apply(ex->pool, &p, ins, p.n_in, y);
    if (own) ig__free_aligned(own);
    return INGOT_OK;
}

static double pointwise_flops(const ig_graph *g, const ig_node *n)
{
    const ig_attr *a = ig__node_attr(n, "ops");
    int64_t ops = a && a->type == IG_ATTR_INTS ? a->n / 4 : 0;
    if (n->n_outputs < 1) return 0;
    return (double)(ops > 0 ? ops : 1) * ig__value_numel(g, n->outputs[0]);
}

const ig_op_def ig__op_pointwise = {
    .name = "Pointwise",
    .domain = "ingot",
    .since = 1,
    .min_in = 1,
    .max_in = IG_PW_MAX_IN,
    .min_out = 1,
    .max_out = 1,
    .flags = IG_OP_INPLACE,
    .infer = pointwise_infer,
    .cpu = pointwise_cpu,
    .cpu_scratch = pointwise_scratch,
    .flops = pointwise_flops,
};

/* ---------------------------------------------------------------------------------------------- */
/* FusedConv: Conv (inputs X, W, B), then the epilogue over its result and inputs 3..              */

#define CONV_EXTRAS 3

bool ig__conv_pool_read(const int64_t *v, int64_t nv, ig_conv_pool *p)
{
    bool ok = nv == 9 && (v[8] == 0 || v[8] == 1);
    for (int i = 0; ok && i < 2; i++) {
        p->k[i] = v[i], p->s[i] = v[2 + i], p->pb[i] = v[4 + i], p->pe[i] = v[6 + i];
        /* as MaxPool requires (ONNX Runtime's rule): pads smaller than the window */
        ok = p->k[i] >= 1 && p->k[i] <= 1 << 16 && p->s[i] >= 1 && p->s[i] <= 1 << 16 && p->pb[i] >= 0 &&
             p->pb[i] < p->k[i] && p->pe[i] >= 0 && p->pe[i] < p->k[i];
    }
    if (ok) p->ceil_mode = v[8] == 1;
    return ok;
}

bool ig__conv_pool_of(const ig_node *n, ig_conv_pool *p, bool *bad)
{
    const int64_t *v;
    int64_t nv;
    if (bad) *bad = false;
    if (!ig__attr_ints(n, "pool", &v, &nv)) return false;
    const bool ok = ig__conv_pool_read(v, nv, p);
    if (bad) *bad = !ok;
    return ok;
}

/* The pooled output: the conv's (and the epilogue's) shape with its spatial dims pooled. */
static ingot_status pool_infer(ig_infer *cx)
{
    ig_conv_pool pl;
    bool bad;
    if (!ig__conv_pool_of(cx->node, &pl, &bad))
        return bad ? ig__fail(cx, INGOT_ERR_MODEL_INVALID,
                              "attribute 'pool' must be 9 ints: kernel, strides, pads (smaller than the kernel), "
                              "ceil_mode")
                   : INGOT_OK;
    /* what the pass makes: no epilogue inputs (they would be of the conv's shape, not the output's), the
     * conv's pads explicit */
    if (cx->node->n_inputs > CONV_EXTRAS)
        return ig__unsupported(cx, "a fused pool after an epilogue with inputs is not supported");
    const char *ap = ig__attr_str(cx->node, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") && ap[0]) return ig__unsupported(cx, "a fused pool after auto_pad %s", ap);
    ig_value *y = ig__out(cx, 0);
    if (!y || y->shape.rank < 0) return INGOT_OK;
    if (y->shape.rank != 4) return ig__unsupported(cx, "a fused pool needs a 2-D convolution");
    ig_shape os = y->shape;
    for (int i = 0; i < 2; i++) {
        if (!ig__dim_known(os.d[2 + i])) {
            os.d[2 + i] = ig__dim_fresh(cx);
            continue;
        }
        const int64_t q = ig__conv_pool_size(cx->node, &pl, i, os.d[2 + i].n);
        if (q < 1)
            return ig__fail_shape(cx, "the pool's window (%" PRId64 ") is larger than the padded output (%" PRId64 ")",
                                  pl.k[i], os.d[2 + i].n);
        os.d[2 + i] = ig__dim_const(q);
    }
    return ig__set_out(cx, 0, y->dtype, &os);
}

static ingot_status fused_conv_infer(ig_infer *cx)
{
    ingot_status st = ig__op_conv.infer(cx);
    if (st != INGOT_OK) return st;
    if ((st = epilogue_infer(cx, CONV_EXTRAS)) != INGOT_OK) return st;
    return pool_infer(cx);
}

typedef struct conv_epi {
    ig_exec *ex;
    const ig_pw_prog *p;
} conv_epi;

static void conv_epi_run(void *ctx, float *y)
{
    const conv_epi *c = ctx;
    epilogue_apply(c->ex, c->p, CONV_EXTRAS, y);
}

static size_t conv_out_bytes(const ig_graph *g, const ig_node *n, int64_t *d)
{
    ig_conv_pool pl;
    if (!ig__conv_pool_of(n, &pl, NULL) || !ig__conv_out_dims(g, n, d)) return 0;
    /* the conv's output is no graph value, so nothing else has bounded its size: a crafted pool of a huge
     * conv gets 0 here (an error), not a wrapped product */
    size_t bytes = sizeof(float);
    for (int i = 0; i < 4; i++)
        if (d[i] < 1 || !ig__mul_size(bytes, (size_t)d[i], &bytes) || bytes > SIZE_MAX / 2) return 0;
    return (bytes + 63) & ~(size_t)63;
}

/* The pooled result in fp32 before it is rounded to the output's type (none for an fp32 output). */
static size_t pooled_f32_bytes(ingot_dtype t, int64_t numel)
{
    return t == INGOT_DTYPE_FLOAT ? 0 : ((size_t)numel * sizeof(float) + 63) & ~(size_t)63;
}

static ingot_status fused_conv_cpu(ig_exec *ex)
{
    if (ex->n_in < 2 || !ex->in[0] || !ex->in[1] || !ex->out[0])
        return ig__exec_fail(ex, INGOT_ERR_INTERNAL, "missing input or output");
    ig_pw_prog p;
    ingot_status st = epilogue_prepare(ex, CONV_EXTRAS, &p);
    if (st != INGOT_OK) return st;
    conv_epi c = {ex, &p};
    ig_conv_pool pl;
    if (!ig__conv_pool_of(ex->node, &pl, NULL)) return ig__conv_cpu_run(ex, p.n_ops ? conv_epi_run : NULL, &c);
    /* pooled: the conv (and epilogue) into fp32 scratch after the conv's own, then MaxPool's kernel */
    int64_t cd[4];
    ig_tensor *y = ex->out[0];
    const size_t cbytes = conv_out_bytes(ex->g, ex->node, cd), conv_need = ig__op_conv.cpu_scratch(ex->g, ex->node);
    if (!cbytes) return ig__exec_fail(ex, INGOT_ERR_INTERNAL, "the pooled convolution's shape is not known");
    if (y->rank != 4 || y->dims[0] != cd[0] || y->dims[1] != cd[1] ||
        y->dims[2] != ig__conv_pool_size(ex->node, &pl, 0, cd[2]) ||
        y->dims[3] != ig__conv_pool_size(ex->node, &pl, 1, cd[3]))
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "the output is not the pooled convolution's shape");
    const size_t at = (conv_need + 63) & ~(size_t)63;
    char *base = NULL;
    void *own;
    if ((st = ig__exec_scratch(ex, at + cbytes + pooled_f32_bytes(y->dtype, y->numel), &base, &own)) != INGOT_OK)
        return st;
    ig_tensor conv_out = {
        .dtype = INGOT_DTYPE_FLOAT, .rank = 4, .numel = cd[0] * cd[1] * cd[2] * cd[3], .data = base + at};
    memcpy(conv_out.dims, cd, sizeof cd);
    /* the conv runs as a node of its own whose output is conv_out, on the first part of the scratch */
    ig_tensor *outs[1] = {&conv_out};
    ig_exec sub = *ex;
    sub.out = outs;
    sub.n_out = 1;
    sub.scratch = base;
    sub.scratch_bytes = at;
    c.ex = &sub;
    st = ig__conv_cpu_run(&sub, p.n_ops ? conv_epi_run : NULL, &c);
    if (st == INGOT_OK) {
        float *yf = y->dtype == INGOT_DTYPE_FLOAT ? y->data : (float *)(base + at + cbytes);
        ig__conv_pool_f32(ex->pool, ex->node, &pl, conv_out.data, cd, yf);
        ig__from_f32(y->dtype, yf, y->numel, y->data);
    }
    if (own) ig__free_aligned(own);
    return st;
}

static size_t fused_conv_scratch(const ig_graph *g, const ig_node *n)
{
    int64_t d[4];
    const size_t pooled = conv_out_bytes(g, n, d), conv = ig__op_conv.cpu_scratch(g, n);
    if (!pooled) return conv;
    const ig_value *y = &g->values[n->outputs[0]];
    return ((conv + 63) & ~(size_t)63) + pooled +
           pooled_f32_bytes(y->dtype, (int64_t)ig__value_numel(g, n->outputs[0]));
}

static double fused_conv_flops(const ig_graph *g, const ig_node *n)
{
    int64_t d[4];
    ig_conv_pool pl;
    if (!conv_out_bytes(g, n, d) || !ig__conv_pool_of(n, &pl, NULL))
        return ig__op_conv.flops(g, n) + epilogue_flops(g, n, -1);
    /* pooled: the epilogue on the conv's output, a compare per window tap of the pooled one */
    return ig__op_conv.flops(g, n) + epilogue_flops(g, n, (double)d[0] * (double)d[1] * (double)d[2] * (double)d[3]) +
           ig__value_numel(g, n->outputs[0]) * (double)(pl.k[0] * pl.k[1]);
}

const ig_op_def ig__op_fused_conv = {
    .name = "FusedConv",
    .domain = "ingot",
    .since = 1,
    .min_in = 2,
    .max_in = CONV_EXTRAS + IG_PW_MAX_IN - 1,
    .min_out = 1,
    .max_out = 1,
    .infer = fused_conv_infer,
    .cpu = fused_conv_cpu,
    .cpu_scratch = fused_conv_scratch,
    .flops = fused_conv_flops,
};

/* ---------------------------------------------------------------------------------------------- */
/* FusedMatMul: alpha * op(A) op(B) + bias, then the epilogue over it and inputs 3..                */

#define MM_EXTRAS 3
#define MM_TYPES  (IG_T(FLOAT) | IG_T(FLOAT16) | IG_T(BFLOAT16))

static ingot_status fused_matmul_infer(ig_infer *cx)
{
    ig_value *a = ig__in(cx, 0), *b = ig__in(cx, 1), *bias = ig__in(cx, 2);
    if (!a || !b) return ig__fail_shape(cx, "inputs A and B are required");
    ingot_status st;
    for (int i = 0; i < 3; i++) {
        if ((st = ig__check_dtype(cx, i, MM_TYPES)) != INGOT_OK) return st;
        ig_value *v = ig__in(cx, i);
        if (v && v->dtype != a->dtype)
            return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "input %d '%s' has dtype %s but input 0 has %s", i, v->name,
                            ingot_dtype_name(v->dtype), ingot_dtype_name(a->dtype));
    }
    if ((st = ig__infer_flag(cx, "trans_a")) != INGOT_OK || (st = ig__infer_flag(cx, "trans_b")) != INGOT_OK ||
        (st = ig__infer_float_attr(cx, "alpha")) != INGOT_OK)
        return st;
    bool ta = ig__attr_int(cx->node, "trans_a", 0), tb = ig__attr_int(cx->node, "trans_b", 0);
    ig_shape os = {.rank = -1};
    if (a->shape.rank >= 0 && b->shape.rank >= 0) {
        int32_t ra = a->shape.rank, rb = b->shape.rank;
        if (ra == 0 || rb == 0)
            return ig__fail_shape(cx, "operands must have rank >= 1 ('%s' has rank %d, '%s' rank %d)", a->name, (int)ra,
                                  b->name, (int)rb);
        const ig_dim *ad = a->shape.d, *bd = b->shape.d;
        ig_dim ak = ra == 1 ? ad[0] : ta ? ad[ra - 2] : ad[ra - 1];
        ig_dim bk = rb == 1 ? bd[0] : tb ? bd[rb - 1] : bd[rb - 2];
        if (ig__dim_known(ak) && ig__dim_known(bk) && ak.n != bk.n)
            return ig__fail_shape(
                cx, "inner dims differ: '%s' has K = %" PRId64 " (trans_a=%d), '%s' has K = %" PRId64 " (trans_b=%d)",
                a->name, ak.n, (int)ta, b->name, bk.n, (int)tb);
        ig_shape ba = {.rank = ra > 2 ? ra - 2 : 0}, bb = {.rank = rb > 2 ? rb - 2 : 0};
        for (int32_t i = 0; i < ba.rank; i++) ba.d[i] = ad[i];
        for (int32_t i = 0; i < bb.rank; i++) bb.d[i] = bd[i];
        if ((st = ig__broadcast(cx, &ba, &bb, &os)) != INGOT_OK) return st;
        if (ra > 1) os.d[os.rank++] = ta ? ad[ra - 1] : ad[ra - 2];
        if (rb > 1) os.d[os.rank++] = tb ? bd[rb - 2] : bd[rb - 1];
        if (bias && bias->shape.rank >= 0) {
            const ig_shape *bs = &bias->shape;
            ig_dim n_dim = rb > 1 ? os.d[os.rank - 1] : ig__dim_const(1), last = bs->d[bs->rank - 1];
            bool ok = bs->rank == 1 || bs->rank == 2;
            if (ok && bs->rank == 2 && ig__dim_known(bs->d[0]) && bs->d[0].n != 1) ok = false;
            if (ok && ig__dim_known(last) && last.n != 1 && ig__dim_known(n_dim) && last.n != n_dim.n) ok = false;
            if (!ok) {
                char s1[256];
                return ig__fail_shape(cx, "bias '%s' of shape %s is not [N] or [1, N] (N the output's last dim)",
                                      bias->name, ig__shape_str(cx->g, bs, s1, sizeof s1));
            }
        }
    }
    if ((st = ig__set_out(cx, 0, a->dtype, &os)) != INGOT_OK) return st;
    return epilogue_infer(cx, MM_EXTRAS);
}

/* The product as a batch of GEMMs over the output's batch dims (ops_internal.h). */
typedef ig_bmm_plan fm_plan;

static bool fm_plan_of(const ig_node *node, int32_t ra, const int64_t *ad, int32_t rb, const int64_t *bd, fm_plan *p)
{
    if (!ig__bmm_plan(ra, ad, rb, bd, ig__attr_int(node, "trans_a", 0), ig__attr_int(node, "trans_b", 0), p))
        return false;
    p->alpha = ig__attr_float(node, "alpha", 1.0f);
    return true;
}

typedef struct fm_bufs {
    float *a, *b, *bias, *y; /* fp32 copies (float16/bfloat16 tensors only) */
    char *ws;
    size_t ws_bytes; /* per slot */
    int64_t slots;
} fm_bufs;

static void fm_layout(const fm_plan *p, ingot_dtype t, int64_t an, int64_t bn, int64_t cn, int64_t yn, ig_carver *cv,
                      fm_bufs *bf)
{
    memset(bf, 0, sizeof *bf);
    if (ig__is_lowp(t)) {
        bf->a = ig__carve(cv, sizeof(float) * (size_t)an);
        bf->b = ig__carve(cv, sizeof(float) * (size_t)bn);
        if (cn > 0) bf->bias = ig__carve(cv, sizeof(float) * (size_t)cn);
        bf->y = ig__carve(cv, sizeof(float) * (size_t)yn);
    }
    ig__bmm_workspace(p, &bf->ws_bytes, &bf->slots);
    bf->ws = ig__carve(cv, bf->ws_bytes * (size_t)bf->slots);
}

static bool value_dims(const ig_graph *g, const ig_node *n, int i, int32_t *rank, int64_t *d, int64_t *numel)
{
    if (i >= n->n_inputs || n->inputs[i] < 0) return false;
    const ig_value *v = &g->values[n->inputs[i]];
    if (v->shape.rank < 0 || !ig__shape_known(&v->shape) || !ig__shape_numel(&v->shape, numel)) return false;
    *rank = v->shape.rank;
    for (int32_t k = 0; k < v->shape.rank; k++) d[k] = v->shape.d[k].n;
    return true;
}

static size_t fused_matmul_scratch(const ig_graph *g, const ig_node *n)
{
    int32_t ra, rb, rc;
    int64_t ad[IG_MAX_RANK], bd[IG_MAX_RANK], cd[IG_MAX_RANK], an, bn, cn = 0;
    fm_plan p;
    if (!value_dims(g, n, 0, &ra, ad, &an) || !value_dims(g, n, 1, &rb, bd, &bn) || !fm_plan_of(n, ra, ad, rb, bd, &p))
        return 0;
    if (n->n_inputs > 2 && n->inputs[2] >= 0 && !value_dims(g, n, 2, &rc, cd, &cn)) return 0;
    ig_carver cv = {0};
    fm_bufs bf;
    fm_layout(&p, g->values[n->inputs[0]].dtype, an, bn, cn, p.nbatch * p.m * p.n, &cv, &bf);
    return cv.off;
}

typedef struct fm_job {
    const fm_plan *p;
    const float *a, *b;
    float *y;
    float beta;
    const fm_bufs *bf;
    int64_t per_slot;
} fm_job;

static void fm_gemm(const fm_job *j, struct ig_pool *pool, int64_t bi, char *ws)
{
    const fm_plan *p = j->p;
    int64_t ao, bo;
    ig__bmm_offsets(p, bi, &ao, &bo);
    ig__sgemm_ws(pool, p->ta, p->tb, p->m, p->n, p->k, p->alpha, j->a + ao, p->lda, j->b + bo, p->ldb, j->beta,
                 j->y + bi * p->m * p->n, p->n, ws, j->bf->ws_bytes);
}

/* Slots [sb, se): slot s runs its batches one after another, single-threaded, in its workspace. */
static void fm_slot_range(void *arg, int64_t sb, int64_t se)
{
    const fm_job *j = arg;
    for (int64_t s = sb; s < se; s++) {
        int64_t b0 = s * j->per_slot, b1 = b0 + j->per_slot;
        if (b1 > j->p->nbatch) b1 = j->p->nbatch;
        for (int64_t bi = b0; bi < b1; bi++) fm_gemm(j, NULL, bi, j->bf->ws + s * j->bf->ws_bytes);
    }
}

typedef struct bias_job {
    const float *bias;
    int64_t n, bn; /* row length; bias values (n or 1) */
    float *y;
} bias_job;

static void bias_range(void *arg, int64_t rb, int64_t re)
{
    const bias_job *j = arg;
    for (int64_t r = rb; r < re; r++) {
        float *row = j->y + r * j->n;
        if (j->bn == 1)
            for (int64_t c = 0; c < j->n; c++) row[c] = j->bias[0];
        else
            memcpy(row, j->bias, sizeof(float) * (size_t)j->n);
    }
}

static ingot_status fused_matmul_cpu(ig_exec *ex)
{
    const ig_tensor *at = ex->in[0], *bt = ex->in[1], *ct = ex->n_in > 2 ? ex->in[2] : NULL;
    ig_tensor *yt = ex->out[0];
    if (!at || !bt || !yt) return ig__exec_fail(ex, INGOT_ERR_INTERNAL, "missing input or output");
    fm_plan p;
    if (!fm_plan_of(ex->node, at->rank, at->dims, bt->rank, bt->dims, &p))
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "operand shapes do not match");
    if (p.nbatch * p.m * p.n != yt->numel)
        return ig__exec_fail(ex, INGOT_ERR_INTERNAL, "output has %" PRId64 " elements, the product %" PRId64, yt->numel,
                             p.nbatch * p.m * p.n);
    if (ct && ct->numel != p.n && ct->numel != 1)
        return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE, "bias has %" PRId64 " values for N = %" PRId64, ct->numel, p.n);
    ig_pw_prog prog;
    ingot_status st = epilogue_prepare(ex, MM_EXTRAS, &prog);
    if (st != INGOT_OK || yt->numel == 0) return st;
    ingot_dtype t = at->dtype;
    ig_carver cv = {0};
    fm_bufs bf;
    fm_layout(&p, t, at->numel, bt->numel, ct ? ct->numel : 0, yt->numel, &cv, &bf);
    char *base = NULL;
    void *own = NULL;
    if ((st = ig__exec_scratch(ex, cv.off, &base, &own)) != INGOT_OK) return st;
    cv = (ig_carver){base, 0};
    fm_layout(&p, t, at->numel, bt->numel, ct ? ct->numel : 0, yt->numel, &cv, &bf);
    const float *a = at->data, *b = bt->data, *bias = ct ? ct->data : NULL;
    float *y = yt->data;
    if (ig__is_lowp(t)) {
        ig__to_f32(t, at->data, at->numel, bf.a);
        ig__to_f32(t, bt->data, bt->numel, bf.b);
        if (ct) ig__to_f32(t, ct->data, ct->numel, bf.bias);
        a = bf.a, b = bf.b, bias = ct ? bf.bias : NULL, y = bf.y;
    }
    if (bias) {
        bias_job bj = {bias, p.n, ct->numel, y};
        ig__parallel_for(ex->pool, p.nbatch * p.m, 1 + (1 << 14) / (p.n + 1), bias_range, &bj);
    }
    fm_job j = {&p, a, b, y, bias ? 1.0f : 0.0f, &bf, 1};
    if (p.fold) {
        ig__sgemm_ws(ex->pool, false, p.tb, p.nbatch * p.m, p.n, p.k, p.alpha, a, p.lda, b, p.ldb, j.beta, y, p.n,
                     bf.ws, bf.ws_bytes);
    } else {
        int64_t threads = ig__pool_threads(ex->pool), slots = threads < bf.slots ? threads : bf.slots;
        if (slots > 1) {
            j.per_slot = (p.nbatch + slots - 1) / slots;
            ig__parallel_for(ex->pool, slots, 1, fm_slot_range, &j);
        } else {
            for (int64_t bi = 0; bi < p.nbatch; bi++) fm_gemm(&j, ex->pool, bi, bf.ws);
        }
    }
    epilogue_apply(ex, &prog, MM_EXTRAS, y);
    if (ig__is_lowp(t)) ig__from_f32(t, y, yt->numel, yt->data);
    if (own) ig__free_aligned(own);
    return INGOT_OK;
}

static double fused_matmul_flops(const ig_graph *g, const ig_node *n)
{
    int32_t ra, rb;
    int64_t ad[IG_MAX_RANK], bd[IG_MAX_RANK], an, bn;
    fm_plan p;
    if (!value_dims(g, n, 0, &ra, ad, &an) || !value_dims(g, n, 1, &rb, bd, &bn) || !fm_plan_of(n, ra, ad, rb, bd, &p))
        return 0;
    double outs = (double)p.nbatch * (double)p.m * (double)p.n;
    double f = 2.0 * outs * (double)p.k;
    if (n->n_inputs > 2 && n->inputs[2] >= 0) f += outs;
    return f + epilogue_flops(g, n, -1);
}

const ig_op_def ig__op_fused_matmul = {
    .name = "FusedMatMul",
    .domain = "ingot",
    .since = 1,
    .min_in = 2,
    .max_in = MM_EXTRAS + IG_PW_MAX_IN - 1,
    .min_out = 1,
    .max_out = 1,
    .infer = fused_matmul_infer,
    .cpu = fused_matmul_cpu,
    .cpu_scratch = fused_matmul_scratch,
    .flops = fused_matmul_flops,
};

/* ---- fp32 copies of a low-precision X and Y (ig_float_io) ------------------------------------------- */

static size_t float_io_bytes(ingot_dtype t, int64_t x_numel, int64_t y_numel)
{
    if (!ig__is_lowp(t)) return 0;
    ig_carver cv = {0};
    ig__carve(&cv, sizeof(float) * (size_t)x_numel);
    ig__carve(&cv, sizeof(float) * (size_t)y_numel);
    return cv.off;
}

size_t ig__float_io_scratch(const ig_graph *g, const ig_node *n)
{
    const ig_value *x = ig__node_input(g, n, 0);
    double xn = ig__value_numel(g, n->inputs[0]), yn = ig__value_numel(g, n->outputs[0]);
    return x ? float_io_bytes(x->dtype, (int64_t)xn, (int64_t)yn) : 0;
}

ingot_status ig__float_io_begin(ig_exec *ex, const ig_tensor *x, ig_tensor *y, ig_float_io *io)
{
    memset(io, 0, sizeof *io);
    char *base = NULL;
    ingot_status st = ig__exec_scratch(ex, float_io_bytes(x->dtype, x->numel, y->numel), &base, &io->own);
    if (st != INGOT_OK) return st;
    if (ig__is_lowp(x->dtype)) {
        ig_carver cv = {base, 0};
        float *xf = ig__carve(&cv, sizeof(float) * (size_t)x->numel);
        io->yf = ig__carve(&cv, sizeof(float) * (size_t)y->numel);
        ig__to_f32(x->dtype, x->data, x->numel, xf);
        io->xf = xf;
    } else if (x->dtype == INGOT_DTYPE_DOUBLE) {
        io->xd = x->data;
        io->yd = y->data;
    } else {
        io->xf = x->data;
        io->yf = y->data;
    }
    return INGOT_OK;
}

void ig__float_io_end(ig_float_io *io, ig_tensor *y)
{
    if (ig__is_lowp(y->dtype)) ig__from_f32(y->dtype, io->yf, y->numel, y->data);
    ig__free_aligned(io->own);
    io->own = NULL;
}
