/*
 * graphs.h -- building ig_graphs by hand for the planner's tests and benchmark: a small builder,
 * op flags and scratch supplied through the planner's hooks (so the graphs do not depend on which
 * op descriptors exist yet), and generators of synthetic graphs with real tensor sizes: a
 * ResNet-style CNN, a BERT-style transformer and random DAGs.
 *
 * Header-only (static functions); include after plan/plan.h.
 */
#ifndef INGOT_BENCH_PLAN_GRAPHS_H
#define INGOT_BENCH_PLAN_GRAPHS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

#define GB_MAX_IO 4096

typedef struct gb {
    ig_graph g;
    ig_err err;
    int ok;
    uint64_t *scratch; /* per node */
    int32_t cap_scratch;
} gb;

static inline int gb_init(gb *b)
{
    memset(b, 0, sizeof *b);
    b->ok = ig__graph_init(&b->g, &b->err) == INGOT_OK;
    b->g.inputs = ig__arena_array(&b->g.arena, GB_MAX_IO, sizeof(int32_t));
    b->g.outputs = ig__arena_array(&b->g.arena, GB_MAX_IO, sizeof(int32_t));
    if (!b->g.inputs || !b->g.outputs) b->ok = 0;
    return b->ok;
}

static inline void gb_free(gb *b)
{
    ig__graph_free(&b->g);
    free(b->scratch);
    b->scratch = NULL;
}

static inline void gb_set_bytes(ig_value *v, uint64_t bytes)
{
    v->dtype = bytes % 4 == 0 ? INGOT_DTYPE_FLOAT : INGOT_DTYPE_UINT8;
    v->shape.rank = 1;
    v->shape.d[0] = ig__dim_const((int64_t)(bytes % 4 == 0 ? bytes / 4 : bytes));
}

static inline int32_t gb_value(gb *b, const char *name, uint64_t bytes)
{
    int32_t v = ig__graph_value(&b->g, name, &b->err);
    if (v < 0) {
        b->ok = 0;
        return -1;
    }
    gb_set_bytes(&b->g.values[v], bytes);
    return v;
}

static inline int32_t gb_input(gb *b, const char *name, uint64_t bytes)
{
    int32_t v = gb_value(b, name, bytes);
    if (v < 0 || b->g.n_inputs >= GB_MAX_IO) return -1;
    b->g.values[v].flags |= IG_VAL_INPUT;
    b->g.inputs[b->g.n_inputs++] = v;
    return v;
}

static inline int32_t gb_const(gb *b, const char *name, uint64_t bytes)
{
    int32_t v = gb_value(b, name, bytes);
    if (v < 0) return -1;
    b->g.values[v].flags |= IG_VAL_CONST | IG_VAL_INITIALIZER;
    b->g.n_initializers++;
    return v;
}

static inline void gb_output(gb *b, int32_t v)
{
    if (v < 0 || b->g.n_outputs >= GB_MAX_IO) return;
    b->g.values[v].flags |= IG_VAL_OUTPUT;
    b->g.outputs[b->g.n_outputs++] = v;
}

/* A node with n_out outputs named "<name>" (one output) or "<name>:k"; returns the first output's
 * value id. out_bytes[k] gives each output's size. */
static inline int32_t gb_opn(gb *b, const char *op, const char *name, int nin, const int32_t *ins, int nout,
                             const uint64_t *out_bytes)
{
    if (!b->ok) return -1;
    int32_t id = ig__graph_add_node(&b->g, name, op, "", nin, nout, 0, &b->err);
    if (id < 0) {
        b->ok = 0;
        return -1;
    }
    ig_node *n = &b->g.nodes[id];
    for (int i = 0; i < nin; i++) n->inputs[i] = ins[i];
    int32_t first = -1;
    for (int k = 0; k < nout; k++) {
        char nm[256];
        if (nout == 1)
            snprintf(nm, sizeof nm, "%s", name);
        else
            snprintf(nm, sizeof nm, "%s:%d", name, k);
        int32_t v = gb_value(b, nm, out_bytes[k]);
        if (v < 0) return -1;
        n = &b->g.nodes[id]; /* values may have moved, nodes not; re-read anyway */
        n->outputs[k] = v;
        b->g.values[v].producer = id;
        if (k == 0) first = v;
    }
    return first;
}

static inline int32_t gb_op(gb *b, const char *op, const char *name, int nin, const int32_t *ins, uint64_t out_bytes)
{
    return gb_opn(b, op, name, nin, ins, 1, &out_bytes);
}

static inline int32_t gb_op1(gb *b, const char *op, const char *name, int32_t in, uint64_t out_bytes)
{
    return gb_op(b, op, name, 1, &in, out_bytes);
}

static inline int32_t gb_op2(gb *b, const char *op, const char *name, int32_t x, int32_t y, uint64_t out_bytes)
{
    int32_t ins[2] = {x, y};
    return gb_op(b, op, name, 2, ins, out_bytes);
}

static inline void gb_scratch(gb *b, int32_t value, uint64_t bytes)
{
    if (value < 0) return;
    int32_t node = b->g.values[value].producer;
    if (node >= b->cap_scratch) {
        int32_t c = b->cap_scratch ? b->cap_scratch : 64;
        while (c <= node) c *= 2;
        uint64_t *ns = realloc(b->scratch, sizeof(uint64_t) * (size_t)c);
        if (!ns) {
            b->ok = 0;
            return;
        }
        memset(ns + b->cap_scratch, 0, sizeof(uint64_t) * (size_t)(c - b->cap_scratch));
        b->scratch = ns;
        b->cap_scratch = c;
    }
    b->scratch[node] = bytes;
}

static inline int gb_finish(gb *b)
{
    if (!b->ok) return 0;
    b->ok = ig__graph_toposort(&b->g, &b->err) == INGOT_OK;
    return b->ok;
}

/* Flags by op type, as the descriptors declare them: reinterpretations alias, elementwise ops may
 * run in place. */
static inline uint32_t gb_flags(void *user, const ig_graph *g, const ig_node *n)
{
    (void)user;
    (void)g;
    static const char *const alias[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", NULL};
    static const char *const inplace[] = {
        "Relu", "Add", "Mul", "Sub", "Div", "Sigmoid", "Gelu", "Tanh", "Erf", "Clip", "BatchNormalization", NULL};
    for (int i = 0; alias[i]; i++)
        if (!strcmp(n->op_type, alias[i])) return IG_OP_ALIAS;
    for (int i = 0; inplace[i]; i++)
        if (!strcmp(n->op_type, inplace[i])) return IG_OP_INPLACE;
    return 0;
}

static inline uint64_t gb_scratch_hook(void *user, const ig_graph *g, const ig_node *n)
{
    gb *b = user;
    int32_t id = (int32_t)(n - g->nodes);
    return id < b->cap_scratch ? b->scratch[id] : 0;
}

static inline ig_plan_options gb_options(gb *b)
{
    ig_plan_options o = ig__plan_options_default();
    o.op_flags = gb_flags;
    o.scratch = gb_scratch_hook;
    o.user = b;
    return o;
}

/* ---- synthetic models with real sizes (fp32) ---- */

/* Conv with im2col scratch for k > 1, like the CPU reference kernels */
static inline int32_t gb_conv(gb *b, const char *name, int32_t x, int64_t batch, int64_t cin, int64_t cout, int64_t k,
                              int64_t hout, int64_t wout)
{
    int32_t v = gb_op1(b, "Conv", name, x, (uint64_t)(batch * cout * hout * wout * 4));
    if (k > 1) gb_scratch(b, v, (uint64_t)(cin * k * k * hout * wout * 4));
    return v;
}

/* ResNet-style CNN at 224x224: stem, then `stages` stages of bottleneck blocks (blocks[i] each).
 * Returns the number of nodes. */
static inline int32_t gb_resnet(gb *b, int64_t batch, const int *blocks, int stages)
{
    char nm[64];
    int64_t hw = 56, cin = 64;
    int32_t x = gb_input(b, "data", (uint64_t)(batch * 3 * 224 * 224 * 4));
    x = gb_conv(b, "stem", x, batch, 3, 64, 7, 112, 112);
    x = gb_op1(b, "Relu", "stem_relu", x, (uint64_t)(batch * 64 * 112 * 112 * 4));
    x = gb_op1(b, "MaxPool", "pool", x, (uint64_t)(batch * 64 * 56 * 56 * 4));
    for (int s = 0; s < stages; s++) {
        int64_t mid = 64 << (s < 3 ? s : 3), out = mid * 4;
        for (int k = 0; k < blocks[s]; k++) {
            int64_t h = (s > 0 && k == 0) ? hw / 2 : hw;
            uint64_t tb = (uint64_t)(batch * mid * h * h * 4), ob = (uint64_t)(batch * out * h * h * 4);
            snprintf(nm, sizeof nm, "s%db%d_c1", s, k);
            int32_t y = gb_conv(b, nm, x, batch, cin, mid, 1, h, h);
            snprintf(nm, sizeof nm, "s%db%d_r1", s, k);
            y = gb_op1(b, "Relu", nm, y, tb);
            snprintf(nm, sizeof nm, "s%db%d_c2", s, k);
            y = gb_conv(b, nm, y, batch, mid, mid, 3, h, h);
            snprintf(nm, sizeof nm, "s%db%d_r2", s, k);
            y = gb_op1(b, "Relu", nm, y, tb);
            snprintf(nm, sizeof nm, "s%db%d_c3", s, k);
            y = gb_conv(b, nm, y, batch, mid, out, 1, h, h);
            int32_t sc = x;
            if (k == 0) {
                snprintf(nm, sizeof nm, "s%db%d_down", s, k);
                sc = gb_conv(b, nm, x, batch, cin, out, 1, h, h);
            }
            snprintf(nm, sizeof nm, "s%db%d_add", s, k);
            y = gb_op2(b, "Add", nm, y, sc, ob);
            snprintf(nm, sizeof nm, "s%db%d_out", s, k);
            x = gb_op1(b, "Relu", nm, y, ob);
            hw = h;
            cin = out;
        }
    }
    x = gb_op1(b, "GlobalAveragePool", "gap", x, (uint64_t)(batch * cin * 4));
    x = gb_op1(b, "Flatten", "flat", x, (uint64_t)(batch * cin * 4));
    x = gb_op1(b, "Gemm", "fc", x, (uint64_t)(batch * 1000 * 4));
    gb_output(b, x);
    gb_finish(b);
    return b->g.n_nodes;
}

/* BERT-style encoder: `layers` layers, hidden h, heads nh, sequence seq. ~30 nodes per layer. */
static inline int32_t gb_transformer(gb *b, int64_t batch, int64_t seq, int64_t h, int64_t nh, int layers)
{
    char nm[64];
    uint64_t act = (uint64_t)(batch * seq * h * 4), att = (uint64_t)(batch * nh * seq * seq * 4);
    uint64_t ff = (uint64_t)(batch * seq * 4 * h * 4);
    int32_t ids = gb_input(b, "input_ids", (uint64_t)(batch * seq * 8));
    int32_t mask = gb_input(b, "attention_mask", (uint64_t)(batch * seq * 8));
    int32_t emb = gb_const(b, "word_embeddings", (uint64_t)(30522 * h * 4));
    int32_t m = gb_op1(b, "Cast", "mask_f", mask, (uint64_t)(batch * seq * 4));
    m = gb_op1(b, "Unsqueeze", "mask_u", m, (uint64_t)(batch * seq * 4));
    m = gb_op1(b, "Sub", "mask_s", m, (uint64_t)(batch * seq * 4));
    m = gb_op1(b, "Mul", "mask_m", m, (uint64_t)(batch * seq * 4));
    int32_t x = gb_op2(b, "Gather", "embed", emb, ids, act);
    x = gb_op1(b, "LayerNormalization", "embed_ln", x, act);
    for (int l = 0; l < layers; l++) {
        int32_t qkv[3];
        static const char *const qn[3] = {"q", "k", "v"};
        for (int j = 0; j < 3; j++) {
            snprintf(nm, sizeof nm, "l%d_%s_mm", l, qn[j]);
            int32_t t = gb_op1(b, "MatMul", nm, x, act);
            snprintf(nm, sizeof nm, "l%d_%s_bias", l, qn[j]);
            t = gb_op1(b, "Add", nm, t, act);
            snprintf(nm, sizeof nm, "l%d_%s_heads", l, qn[j]);
            t = gb_op1(b, "Reshape", nm, t, act);
            snprintf(nm, sizeof nm, "l%d_%s_tr", l, qn[j]);
            qkv[j] = gb_op1(b, "Transpose", nm, t, act);
        }
        snprintf(nm, sizeof nm, "l%d_scores", l);
        int32_t s = gb_op2(b, "MatMul", nm, qkv[0], qkv[1], att);
        snprintf(nm, sizeof nm, "l%d_scale", l);
        s = gb_op1(b, "Div", nm, s, att);
        snprintf(nm, sizeof nm, "l%d_masked", l);
        s = gb_op2(b, "Add", nm, s, m, att);
        snprintf(nm, sizeof nm, "l%d_softmax", l);
        s = gb_op1(b, "Softmax", nm, s, att);
        snprintf(nm, sizeof nm, "l%d_ctx", l);
        int32_t c = gb_op2(b, "MatMul", nm, s, qkv[2], act);
        snprintf(nm, sizeof nm, "l%d_ctx_tr", l);
        c = gb_op1(b, "Transpose", nm, c, act);
        snprintf(nm, sizeof nm, "l%d_ctx_merge", l);
        c = gb_op1(b, "Reshape", nm, c, act);
        snprintf(nm, sizeof nm, "l%d_proj", l);
        c = gb_op1(b, "MatMul", nm, c, act);
        snprintf(nm, sizeof nm, "l%d_proj_bias", l);
        c = gb_op1(b, "Add", nm, c, act);
        snprintf(nm, sizeof nm, "l%d_res1", l);
        c = gb_op2(b, "Add", nm, c, x, act);
        snprintf(nm, sizeof nm, "l%d_ln1", l);
        x = gb_op1(b, "LayerNormalization", nm, c, act);
        snprintf(nm, sizeof nm, "l%d_ff1", l);
        int32_t f = gb_op1(b, "MatMul", nm, x, ff);
        snprintf(nm, sizeof nm, "l%d_ff1_bias", l);
        f = gb_op1(b, "Add", nm, f, ff);
        snprintf(nm, sizeof nm, "l%d_gelu", l);
        f = gb_op1(b, "Gelu", nm, f, ff);
        snprintf(nm, sizeof nm, "l%d_ff2", l);
        f = gb_op1(b, "MatMul", nm, f, act);
        snprintf(nm, sizeof nm, "l%d_ff2_bias", l);
        f = gb_op1(b, "Add", nm, f, act);
        snprintf(nm, sizeof nm, "l%d_res2", l);
        f = gb_op2(b, "Add", nm, f, x, act);
        snprintf(nm, sizeof nm, "l%d_ln2", l);
        x = gb_op1(b, "LayerNormalization", nm, f, act);
    }
    int32_t pooled = gb_op1(b, "Gather", "cls", x, (uint64_t)(batch * h * 4));
    gb_output(b, x);
    gb_output(b, gb_op1(b, "Tanh", "pooler", gb_op1(b, "Gemm", "pool_fc", pooled, (uint64_t)(batch * h * 4)),
                        (uint64_t)(batch * h * 4)));
    gb_finish(b);
    return b->g.n_nodes;
}

/* A random DAG of n nodes: each reads 1-3 recent values (a window, so lifetimes stay local as in
 * real models, with occasional long skips), sizes log-uniform 256 B .. 256 << max_shift B, a mix of op kinds
 * (aliases, in-place candidates, scratch users), some nodes with two outputs, a few graph outputs.
 * Node order is shuffled within topological constraints by the toposort's stable order. */
static inline int32_t gb_random(gb *b, uint64_t seed, int32_t n, int max_shift)
{
    static const char *const ops[] = {"Conv", "Relu", "Add", "Reshape", "MatMul", "Concat", "Identity", "Mul", "Split"};
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 0x1234567;
#define GB_RND() (s ^= s << 13, s ^= s >> 7, s ^= s << 17, s)
    int32_t *vals = malloc(sizeof(int32_t) * (size_t)(2 * n + 8));
    int32_t nv = 0;
    char nm[64];
    vals[nv++] = gb_input(b, "in0", 4096);
    if (GB_RND() % 2) vals[nv++] = gb_input(b, "in1", 1024 * (1 + GB_RND() % 64));
    int32_t w = gb_const(b, "weight", 65536);
    for (int32_t i = 0; i < n && b->ok; i++) {
        const char *op = ops[GB_RND() % 9];
        int nin = 1 + (int)(GB_RND() % 3);
        int32_t ins[3];
        for (int k = 0; k < nin; k++) {
            int32_t back = (GB_RND() % 8 == 0) ? (int32_t)(GB_RND() % (uint64_t)nv) : (int32_t)(GB_RND() % 4);
            int32_t idx = nv - 1 - back;
            if (idx < 0) idx = 0;
            ins[k] = (GB_RND() % 16 == 0) ? w : vals[idx];
        }
        /* aliases and in-place ops keep their input 0's size, as the real ops do */
        uint64_t sz = 256ull << (GB_RND() % (uint64_t)max_shift);
        if (!strcmp(op, "Reshape") || !strcmp(op, "Identity") || !strcmp(op, "Relu") || !strcmp(op, "Add") ||
            !strcmp(op, "Mul")) {
            if (GB_RND() % 8) sz = (uint64_t)ig__value_bytes(&b->g.values[ins[0]]);
            if (!sz) sz = 256;
        }
        snprintf(nm, sizeof nm, "n%d_%s", (int)i, op);
        int32_t v;
        if (!strcmp(op, "Split")) {
            uint64_t outs[2] = {sz, 256ull << (GB_RND() % 12)};
            v = gb_opn(b, op, nm, nin, ins, 2, outs);
            if (v >= 0) vals[nv++] = v + 1;
        } else {
            v = gb_op(b, op, nm, nin, ins, sz);
        }
        if (v < 0) break;
        vals[nv++] = v;
        if (!strcmp(op, "Conv") && GB_RND() % 2) gb_scratch(b, v, 1024ull << (GB_RND() % 10));
        if (GB_RND() % 50 == 0) gb_output(b, v);
    }
    if (nv > 0) gb_output(b, vals[nv - 1]);
#undef GB_RND
    free(vals);
    gb_finish(b);
    return b->g.n_nodes;
}

#endif
