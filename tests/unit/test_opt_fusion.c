/*
 * test_opt_fusion.c -- the optimizer's fusion passes (src/opt: attention, softmax, sink_views,
 * conv_epilogue, gemm_epilogue, gemm_siblings, pointwise, groupnorm, patchify, and group.c's growth rule).
 *
 * Per pass: graphs where it must fire (the op made, its inputs, attributes, decoded program and
 * provenance) and near-misses where it must not (an intermediate read elsewhere, a graph output in
 * the middle, a softmax over another axis, a mask that does not broadcast, unequal batch dims, an
 * input produced after the anchor, too many inputs for one program). Every graph has a symbolic batch
 * and is run, optimized and as built, at two batch sizes on the same random inputs: the outputs agree
 * within 1e-5 relative.
 */
#define OPT_HARNESS_SEED 0x2545F4914F6CDD1Dull
#include "opt_harness.h"

/* ---- running graphs ------------------------------------------------------------------------------ */

/* Bind every symbolic dim of the graph inputs to n. */
static void bind(T *t, int64_t n)
{
    for (int32_t i = 0; i < t->g.n_inputs; i++) {
        ig_value *v = &t->g.values[t->g.inputs[i]];
        for (int32_t k = 0; k < v->shape.rank; k++)
            if (!ig__dim_known(v->shape.d[k])) v->shape.d[k] = D(n);
    }
}

/* With FUSION_DUMP set: the optimized graph, one node a line (for debugging a failed case). */
static void dump(T *t, const char *what, int variant)
{
    if (!getenv("FUSION_DUMP")) return;
    fprintf(stderr, "-- %s %d\n", what, variant);
    for (int32_t k = 0; k < t->g.n_nodes; k++) {
        const ig_node *n = &t->g.nodes[t->g.order[k]];
        fprintf(stderr, "  %s (%s)", n->name, n->op_type);
        for (int32_t i = 0; i < n->n_inputs; i++)
            fprintf(stderr, "%s%s", i ? "," : " ", n->inputs[i] >= 0 ? t->g.values[n->inputs[i]].name : "-");
        fprintf(stderr, " -> %s", t->g.values[n->outputs[0]].name);
        if (n->domain[0] && strcmp(n->op_type, "Attention") && strcmp(n->op_type, "MaskedSoftmax"))
            fprintf(stderr, "  %s", prog_str(t, n));
        fprintf(stderr, "\n");
    }
}

typedef void (*build_fn)(T *t, int variant);

/* Build the graph twice, optimize one copy (left in *opt with its report; disable: the passes to skip),
 * run both at batch 1 and 3 on the same inputs: the largest relative difference, negative on failure. */
static double equiv(build_fn build, int variant, const char *disable, T *opt, ig_opt_report *rep)
{
    T ref;
    t_init(&ref);
    t_init(opt);
    uint64_t seed = rng;
    build(&ref, variant);
    rng = seed;
    build(opt, variant);
    double worst = -2;
    outs_t a = {0}, b = {0};
    if (prep(&ref) || prep(opt)) {
        fprintf(stderr, "  prep: %s%s\n", ref.err.msg, opt->err.msg);
        goto out;
    }
    ig_opt_options o = {.enabled = true, .disable = disable};
    if (ig__optimize(&opt->g, &opt->fold, &o, rep, &opt->err)) {
        fprintf(stderr, "  optimize: %s\n", opt->err.msg);
        goto out;
    }
    dump(opt, "optimized", variant);
    worst = 0;
    for (int64_t batch = 1; batch <= 3; batch += 2) {
        T ri, oi;
        /* run instances bound to the batch, leaving the graphs symbolic for the checks */
        ig__err_clear(&ref.err);
        if (ig__graph_instance(&ref.g, &ri.g, &ref.err) || ig__graph_instance(&opt->g, &oi.g, &ref.err)) {
            fprintf(stderr, "  instance: %s\n", ref.err.msg);
            worst = -3;
            goto out;
        }
        ig__arena_init(&ri.fold);
        ig__arena_init(&oi.fold);
        memset(&ri.err, 0, sizeof ri.err);
        memset(&oi.err, 0, sizeof oi.err);
        bind(&ri, batch);
        bind(&oi, batch);
        double r = -4;
        if (reinfer(&ri) || reinfer(&oi)) {
            fprintf(stderr, "  reinfer at batch %d: %s%s\n", (int)batch, ri.err.msg, oi.err.msg);
        } else if (!run_graph(&ri, 7 + (uint64_t)batch, &a) && !run_graph(&oi, 7 + (uint64_t)batch, &b)) {
            r = max_rel(&b, &a);
        }
        outs_free(&a);
        outs_free(&b);
        t_free(&ri);
        t_free(&oi);
        if (r < 0) {
            worst = r;
            goto out;
        }
        if (r > worst) worst = r;
    }
out:
    outs_free(&a);
    outs_free(&b);
    t_free(&ref);
    return worst;
}

/* The outputs agree (evaluate the equiv once: the argument is an expression). */
#define AGREES(expr)                                                  \
    do {                                                              \
        double r_ = (expr);                                           \
        if (!(r_ >= 0 && r_ < 1e-5)) TEST_FAIL_("%s: %g", #expr, r_); \
    } while (0)

/* ==== attention ==== */

/* Q [b,2,5,4], K^T [b,2,4,5], V [b,2,5,3], mask [b,1,1,5]. variant: 0 BERT (Div, Add(s, mask)); 1 sdpa
 * (Mul on Q and K^T, Add(mask, s), NaN guard); 2 no scale, no mask, opset-11 Softmax axis 3; 3 Mul(c, s)
 * and a [5] mask; near misses: 10 Softmax over axis 2; 11 the scaled scores also a graph output; 12 a
 * mask of another batch symbol; 13 K^T of batch 1 (MatMul broadcasts it); 14 rank 2; 15 the Mul on Q
 * also read elsewhere (kept, not absorbed) */
static void build_att(T *t, int variant)
{
    int64_t qd[4] = {0, 2, 5, 4}, kd[4] = {variant == 13 ? 1 : 0, 2, 4, 5}, vd[4] = {0, 2, 5, 3};
    int64_t md[4] = {0, 1, 1, 5}, m1[1] = {5};
    if (variant == 14) {
        int64_t q2[2] = {5, 4}, k2[2] = {4, 5}, v2[2] = {5, 3};
        in_f(t, "q", 2, q2);
        in_f(t, "kt", 2, k2);
        in_f(t, "v", 2, v2);
    } else {
        in_f(t, "q", 4, qd);
        in_f(t, "kt", 4, kd);
        in_f(t, "v", 4, vd);
    }
    if (variant == 3) {
        in_f(t, "mask", 1, m1);
    } else if (variant == 12) {
        ig_dim d[4] = {S(t, "other"), D(1), D(1), D(5)};
        t_input(t, "mask", INGOT_DTYPE_FLOAT, 4, d);
    } else if (variant != 4 && variant != 5) {
        in_f(t, "mask", 4, md);
    }
    scalar_f(t, "sqrtd", 2.0f);
    scalar_f(t, "c", 0.7f);
    scalar_f(t, "zero", 0.0f);
    const char *outs = "y";
    switch (variant) {
    case 4:
    case 5: { /* transformers' mask: a constant [1,1,5,5] comparison Expand-ed to the scores' shape, made
               * additive by Where; all true (4, it masks nothing) or causal (5) */
        uint8_t keep[25];
        for (int i = 0; i < 25; i++) keep[i] = variant == 4 || i % 5 <= i / 5;
        int64_t kd4[4] = {1, 1, 5, 5};
        t_const(t, "keep", INGOT_DTYPE_BOOL, 4, kd4, keep);
        scalar_f(t, "neginf", -INFINITY);
        /* [batch, 1, 5, 5] with the batch from Shape(q), as transformers builds it from the input's */
        int64_t zero1[1] = {0}, one1[1] = {1}, tail[3] = {1, 5, 5};
        t_i64(t, "s0", 1, zero1);
        t_i64(t, "s1", 1, one1);
        t_i64(t, "tail", 3, tail);
        nd(t, "shape", "Shape", "q", "qshape");
        nd(t, "slice", "Slice", "qshape,s0,s1", "bdim");
        ig_node *cn = nd(t, "cat", "Concat", "bdim,tail", "xshape");
        a_int(cn, "axis", 0);
        nd(t, "expand", "Expand", "keep,xshape", "keepx");
        nd(t, "mm1", "MatMul", "q,kt", "s");
        nd(t, "madd", "Where", "keepx,zero,neginf", "amask");
        nd(t, "scale", "Div", "s,sqrtd", "ss");
        nd(t, "add", "Add", "ss,amask", "sm");
        nd(t, "sm", "Softmax", "sm", "p");
        nd(t, "mm2", "MatMul", "p,v", "y");
        t_io(t, "q,kt,v", outs);
        return;
    }
    case 1:
    case 15:
        nd(t, "mq", "Mul", "q,c", "qs");
        nd(t, "mk", "Mul", "c,kt", "ks");
        nd(t, "mm1", "MatMul", "qs,ks", "s");
        nd(t, "add", "Add", "mask,s", "sm");
        nd(t, "sm", "Softmax", "sm", "p");
        nd(t, "isnan", "IsNaN", "p", "pn");
        nd(t, "where", "Where", "pn,zero,p", "pg");
        nd(t, "mm2", "MatMul", "pg,v", "y");
        if (variant == 15) outs = "y,qs";
        break;
    case 2: {
        nd(t, "mm1", "MatMul", "q,kt", "s");
        ig_node *n = nd(t, "sm", "Softmax", "s", "p");
        n->opset = 11;
        a_int(n, "axis", 3);
        nd(t, "mm2", "MatMul", "p,v", "y");
        break;
    }
    case 3:
        nd(t, "mm1", "MatMul", "q,kt", "s");
        nd(t, "scale", "Mul", "c,s", "ss");
        nd(t, "add", "Add", "ss,mask", "sm");
        nd(t, "sm", "Softmax", "sm", "p");
        nd(t, "mm2", "MatMul", "p,v", "y");
        break;
    default: {
        nd(t, "mm1", "MatMul", "q,kt", "s");
        nd(t, "scale", "Div", "s,sqrtd", "ss");
        nd(t, "add", "Add", "ss,mask", "sm");
        ig_node *n = nd(t, "sm", "Softmax", "sm", "p");
        if (variant == 10) a_int(n, "axis", 2);
        nd(t, "mm2", "MatMul", "p,v", "y");
        if (variant == 11) outs = "y,ss";
    }
    }
    t_io(t, "q,kt,v,mask", outs);
}

TEST(attention_forms)
{
    const int variants[] = {0, 1, 2, 3, 15};
    const double scales[] = {0.5, 0.49, 1, 0.7, 0.7};
    const int covers[] = {5, 8, 3, 5, 7};
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        int v = variants[i];
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_att, v, NULL, &t, &rep));
        const ig_node *n = find_op(&t.g, "Attention");
        ASSERT(n);
        ASSERT_STREQ(n->domain, "ingot");
        ASSERT_STREQ(n->pass, "attention");
        ASSERT_STREQ(n->name, "mm2");
        ASSERT_EQ(n->inputs[0], vid(&t, v == 15 ? "qs" : "q"));
        ASSERT_EQ(n->inputs[1], vid(&t, "kt"));
        ASSERT_EQ(n->inputs[2], vid(&t, "v"));
        ASSERT_EQ(n->n_inputs, v == 2 ? 3 : 4);
        if (v != 2) ASSERT_EQ(n->inputs[3], vid(&t, "mask"));
        ASSERT_EQ(n->outputs[0], vid(&t, "y"));
        ASSERT_NEAR(ig__attr_float(n, "scale", 0), scales[i], 1e-6);
        ASSERT_EQ(ig__attr_int(n, "k_transposed", 0), 1);
        ASSERT_EQ(ig__attr_int(n, "nan_to_zero", 0), v == 1 || v == 15);
        ASSERT_EQ(n->n_covers, covers[i]);
        ASSERT_STREQ(n->covers[n->n_covers - 1], "mm2 (MatMul)");
        ASSERT_EQ(pass_rep(&rep, "attention")->n_rewrites, 1);
        ASSERT_EQ(live_count(&t.g, NULL), v == 15 ? 2 : 1);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

/* A constant mask reaching the scores through Expand (expand_sink, fold, then the attention pass):
 * read unexpanded, or not at all when it is zeros; nothing of the mask's computation is left. */
TEST(attention_constant_masks)
{
    for (int v = 4; v <= 5; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_att, v, NULL, &t, &rep));
        const ig_node *n = find_op(&t.g, "Attention");
        ASSERT(n);
        ASSERT_EQ(n->n_inputs, v == 4 ? 3 : 4);
        if (v == 5) {
            const ig_value *m = &t.g.values[n->inputs[3]];
            ASSERT(m->flags & IG_VAL_CONST);
            ASSERT(m->shape.rank == 4 && m->shape.d[0].n == 1 && m->shape.d[2].n == 5 && m->shape.d[3].n == 5);
            ASSERT_EQ(ig__elem_f64(m->c.dtype, m->c.data, 1), -INFINITY); /* row 0, key 1: masked */
            ASSERT_EQ(ig__elem_f64(m->c.dtype, m->c.data, 5), 0);         /* row 1, key 0 */
        }
        ASSERT_EQ(pass_rep(&rep, "expand_sink")->n_rewrites, 1);
        ASSERT_EQ(live_count(&t.g, NULL), 1); /* the Expand and its shape's computation are gone (cleanup) */
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

TEST(attention_near_misses)
{
    for (int v = 10; v <= 14; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_att, v, NULL, &t, &rep));
        ASSERT(!find_op(&t.g, "Attention"));
        ASSERT_EQ(pass_rep(&rep, "attention")->n_rewrites, 0);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

/* ==== softmax ==== */

/* x [b,3,6], mask [b,1,6]. variant: 0 Div(x, 2) -> Add(., mask) -> Softmax; 1 Add(mask, x) -> LogSoftmax
 * -> NaN guard; 2 Mul(x, 3) -> opset-11 Softmax axis 2; 3 Softmax -> NaN guard; near misses: 10 a bare
 * Softmax; 11 Div -> Softmax over axis 1; 12 the Add's output also a graph output; 13 neither Add
 * operand of the output's shape (x [b,1,6] + mask [b,3,1]) */
static void build_sm(T *t, int variant)
{
    int64_t xd[3] = {0, variant == 13 ? 1 : 3, 6}, md[3] = {0, variant == 13 ? 3 : 1, variant == 13 ? 1 : 6};
    in_f(t, "x", 3, xd);
    in_f(t, "mask", 3, md);
    scalar_f(t, "two", 2);
    scalar_f(t, "three", 3);
    scalar_f(t, "zero", 0);
    const char *outs = "y";
    ig_node *n;
    switch (variant) {
    case 0:
    case 12:
    case 13:
        nd(t, "div", "Div", "x,two", "xs");
        nd(t, "add", "Add", "xs,mask", "xm");
        nd(t, "sm", "Softmax", "xm", "y");
        if (variant == 12) outs = "y,xm";
        break;
    case 1:
        nd(t, "add", "Add", "mask,x", "xm");
        nd(t, "sm", "LogSoftmax", "xm", "p");
        nd(t, "isnan", "IsNaN", "p", "pn");
        nd(t, "where", "Where", "pn,zero,p", "y");
        break;
    case 2:
        nd(t, "mul", "Mul", "x,three", "xs");
        n = nd(t, "sm", "Softmax", "xs", "y");
        n->opset = 11;
        a_int(n, "axis", 2);
        break;
    case 3:
        nd(t, "sm", "Softmax", "x", "p");
        nd(t, "isnan", "IsNaN", "p", "pn");
        nd(t, "where", "Where", "pn,zero,p", "y");
        break;
    case 10: nd(t, "sm", "Softmax", "x", "y"); break;
    case 11:
        nd(t, "div", "Div", "x,two", "xs");
        n = nd(t, "sm", "Softmax", "xs", "y");
        a_int(n, "axis", 1);
        break;
    }
    t_io(t, "x,mask", outs);
}

TEST(softmax_forms)
{
    const double scales[4] = {0.5, 1, 3, 1};
    const int covers[4] = {3, 4, 2, 3};
    for (int v = 0; v < 4; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_sm, v, NULL, &t, &rep));
        ASSERT_EQ(live_count(&t.g, NULL), 1);
        const ig_node *n = find_op(&t.g, "MaskedSoftmax");
        ASSERT(n);
        ASSERT_STREQ(n->pass, "softmax");
        ASSERT_EQ(n->inputs[0], vid(&t, "x"));
        ASSERT_EQ(n->n_inputs, v <= 1 ? 2 : 1);
        if (v <= 1) ASSERT_EQ(n->inputs[1], vid(&t, "mask"));
        ASSERT_EQ(n->outputs[0], vid(&t, "y"));
        ASSERT_NEAR(ig__attr_float(n, "scale", 0), scales[v], 1e-7);
        ASSERT_EQ(ig__attr_int(n, "log", 0), v == 1);
        ASSERT_EQ(ig__attr_int(n, "nan_to_zero", 0), v == 1 || v == 3);
        ASSERT_EQ(n->n_covers, covers[v]);
        ASSERT_EQ(pass_rep(&rep, "softmax")->n_rewrites, 1);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

TEST(softmax_near_misses)
{
    for (int v = 10; v <= 13; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_sm, v, NULL, &t, &rep));
        ASSERT(!find_op(&t.g, "MaskedSoftmax"));
        ASSERT_EQ(pass_rep(&rep, "softmax")->n_rewrites, 0);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

/* ==== sink_views ==== */

/* ViT's seq-first out-projection: x [b,3,4] -> Transpose(1,0,2) -> Reshape [3b,4] -> Gemm(W^T, bias)
 * -> Reshape [3,b,4] -> Transpose(1,0,2) -> Add(x, .). variant 1: MatMul + bias Add instead of the Gemm;
 * near misses: 10 the Gemm's output also a graph output; 11 a constant R; 12 R broadcast ([1,3,4]);
 * 13 Y from a Relu; 14 the inverse Reshape would have two symbolic dims */
static void build_sv(T *t, int variant)
{
    int64_t xd[3] = {0, 3, 4}, wd[2] = {4, 4}, bd[1] = {4}, r1[3] = {1, 3, 4};
    int64_t sh1[2] = {-1, 4}, sh2[3] = {3, -1, 4};
    if (variant != 14) in_f(t, "x", 3, xd);
    rand_f(t, "W", 2, wd, -1, 1);
    rand_f(t, "B", 1, bd, -1, 1);
    t_i64(t, "shape1", 2, sh1);
    t_i64(t, "shape2", 3, sh2);
    const char *r = "x", *ins = "x", *outs = "y";
    if (variant == 11) {
        rand_f(t, "R", 3, r1, -1, 1);
        r = "R";
    }
    if (variant == 12) {
        in_f(t, "R", 3, r1);
        r = "R";
        ins = "x,R";
    }
    char radd[64];
    if (variant == 14) { /* [b, seq, 4] -> MatMul -> Reshape [0, 0, 2, 2] -> Transpose(0,1,3,2) */
        int64_t x2[3] = {0, -1, 4}, s4[4] = {0, 0, 2, 2}, r4[4] = {0, -1, 2, 2}, p4[4] = {0, 1, 3, 2};
        in_f(t, "x2", 3, x2);
        in_f(t, "R4", 4, r4);
        t_i64(t, "shape4", 4, s4);
        nd(t, "mm", "MatMul", "x2,W", "y0");
        nd(t, "re", "Reshape", "y0,shape4", "y1");
        ig_node *n = nd(t, "tr", "Transpose", "y1", "y2");
        a_ints(t, n, "perm", 4, p4);
        nd(t, "add", "Add", "y2,R4", "y");
        t_io(t, "x2,R4", "y");
        return;
    }
    int64_t p3[3] = {1, 0, 2};
    ig_node *n = nd(t, "tin", "Transpose", "x", "xt");
    a_ints(t, n, "perm", 3, p3);
    nd(t, "rin", "Reshape", "xt,shape1", "x2d");
    if (variant == 1) {
        nd(t, "mm", "MatMul", "x2d,W", "mmo");
        nd(t, "bias", "Add", "mmo,B", "g");
    } else if (variant == 13) {
        nd(t, "gemm", "Relu", "x2d", "g");
    } else {
        n = nd(t, "gemm", "Gemm", "x2d,W,B", "g");
        a_int(n, "transB", 1);
    }
    if (variant == 10) outs = "y,g";
    nd(t, "rout", "Reshape", "g,shape2", "g3");
    n = nd(t, "tout", "Transpose", "g3", "gt");
    a_ints(t, n, "perm", 3, p3);
    snprintf(radd, sizeof radd, "%s,gt", r);
    nd(t, "add", "Add", radd, "y");
    t_io(t, ins, outs);
}

TEST(sink_views_residual_into_gemm)
{
    for (int v = 0; v < 2; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_sv, v, NULL, &t, &rep));
        ASSERT_EQ(pass_rep(&rep, "sink_views")->n_rewrites, 1);
        ASSERT(!find_op(&t.g, "Add"));
        const ig_node *f = find_op(&t.g, "FusedMatMul");
        ASSERT(f);
        ASSERT_EQ(f->n_inputs, 4);
        ASSERT_EQ(f->inputs[2], vid(&t, "B"));
        ASSERT_STREQ(prog_str(&t, f), "x0,x1 -> t0=ADD(x0,x1)");
        /* the extra is x brought into the GEMM's row order: Reshape(Transpose(x)) */
        const ig_node *re = &t.g.nodes[t.g.values[f->inputs[3]].producer];
        ASSERT_STREQ(re->op_type, "Reshape");
        ASSERT_STREQ(re->pass, "sink_views");
        const ig_node *tr = &t.g.nodes[t.g.values[re->inputs[0]].producer];
        ASSERT_STREQ(tr->op_type, "Transpose");
        ASSERT_EQ(tr->inputs[0], vid(&t, "x"));
        const ig_value *sh = &t.g.values[re->inputs[1]];
        ASSERT_EQ(ig__elem_i64(sh->c.dtype, sh->c.data, 0), -1);
        ASSERT_EQ(ig__elem_i64(sh->c.dtype, sh->c.data, 1), 4);
        /* the views now follow the GEMM, the last one producing the Add's output */
        const ig_node *last = &t.g.nodes[t.g.values[vid(&t, "y")].producer];
        ASSERT_STREQ(last->op_type, "Transpose");
        ASSERT_STREQ(last->name, "tout");
        ASSERT_STREQ(t.g.nodes[t.g.values[last->inputs[0]].producer].op_type, "Reshape");
        ASSERT_EQ(f->n_covers, v == 0 ? 2 : 3);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

TEST(sink_views_near_misses)
{
    for (int v = 10; v <= 14; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_sv, v, NULL, &t, &rep));
        ASSERT_EQ(pass_rep(&rep, "sink_views")->n_rewrites, 0);
        ASSERT(find_op(&t.g, "Add"));
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

/* ==== conv_epilogue ==== */

/* x [b,4,6,6], W [4,4,3,3], B [4], pads 1. variant: 0 Conv -> Relu; 1 Conv -> Add(r) -> Relu (r an
 * input); 2 depthwise Conv -> Clip(0, 6); 3 SiLU Mul(conv, Sigmoid(conv)); 4 HardSwish; 5 no bias ->
 * Relu; 6 ResNet's downsample: Add(conv_a, conv_b) -> Relu, conv_b after conv_a; near misses: 10 the SE
 * block's Mul(conv, sigmoid(fc(pool(conv)))); 11 the conv output also a graph output; 12 a residual
 * produced after the conv (Neg(r)); 13 six residual Adds: at most four extras */
static void build_conv(T *t, int variant)
{
    int64_t xd[4] = {0, 4, 6, 6}, wd[4] = {4, variant == 2 ? 1 : 4, 3, 3}, bd[1] = {4}, pads[4] = {1, 1, 1, 1};
    in_f(t, "x", 4, xd);
    rand_f(t, "W", 4, wd, -0.5, 0.5);
    rand_f(t, "W2", 4, wd, -0.5, 0.5);
    rand_f(t, "B", 1, bd, -0.5, 0.5);
    scalar_f(t, "lo", 0);
    scalar_f(t, "hi", 6);
    char ins[64] = "x", outs[64] = "y";
    ig_node *c = nd(t, "conv", "Conv", variant == 5 ? "x,W" : "x,W,B", "c");
    a_ints(t, c, "pads", 4, pads);
    if (variant == 2) a_int(c, "group", 4);
    switch (variant) {
    case 0:
    case 5: nd(t, "relu", "Relu", "c", "y"); break;
    case 1:
        in_f(t, "r", 4, xd);
        strcpy(ins, "x,r");
        nd(t, "add", "Add", "c,r", "a");
        nd(t, "relu", "Relu", "a", "y");
        break;
    case 2: nd(t, "clip", "Clip", "c,lo,hi", "y"); break;
    case 3:
        nd(t, "sig", "Sigmoid", "c", "s");
        nd(t, "mul", "Mul", "c,s", "y");
        break;
    case 4: nd(t, "hs", "HardSwish", "c", "y"); break;
    case 6:
        c = nd(t, "conv_b", "Conv", "x,W2,B", "cb");
        a_ints(t, c, "pads", 4, pads);
        nd(t, "add", "Add", "c,cb", "a");
        nd(t, "relu", "Relu", "a", "y");
        break;
    case 10: {
        int64_t wf[2] = {4, 4};
        rand_f(t, "Wf", 2, wf, -0.5, 0.5);
        int64_t sh[4] = {-1, 4, 1, 1};
        t_i64(t, "sh", 4, sh);
        nd(t, "gap", "GlobalAveragePool", "c", "gp");
        nd(t, "flat", "Flatten", "gp", "gf");
        nd(t, "fc", "MatMul", "gf,Wf", "f");
        nd(t, "sig", "Sigmoid", "f", "fs");
        nd(t, "rs", "Reshape", "fs,sh", "s");
        nd(t, "mul", "Mul", "c,s", "y");
        break;
    }
    case 11:
        nd(t, "relu", "Relu", "c", "y");
        strcpy(outs, "y,c");
        break;
    case 12:
        in_f(t, "r", 4, xd);
        strcpy(ins, "x,r");
        nd(t, "neg", "Neg", "r", "nr");
        nd(t, "add", "Add", "c,nr", "a");
        nd(t, "relu", "Relu", "a", "y");
        break;
    case 13: {
        const char *prev = "c";
        char nm[16], in2[32], out[16];
        for (int i = 0; i < 6; i++) {
            snprintf(nm, sizeof nm, "r%d", i);
            in_f(t, nm, 4, xd);
            snprintf(ins + strlen(ins), sizeof ins - strlen(ins), ",%s", nm);
            snprintf(in2, sizeof in2, "%s,%s", prev, nm);
            snprintf(out, sizeof out, "a%d", i);
            snprintf(nm, sizeof nm, "add%d", i);
            prev = ig__graph_find(&t->g, out) >= 0 ? out : t->g.values[ig__graph_value(&t->g, out, &t->err)].name;
            nd(t, nm, "Add", in2, prev);
        }
        nd(t, "relu", "Relu", prev, "y");
        break;
    }
    }
    t_io(t, ins, outs);
}

TEST(conv_epilogue_forms)
{
    const char *progs[7] = {"x0 -> t0=RELU(x0)",
                            "x0,x1 -> t0=ADD(x0,x1) t1=RELU(t0)",
                            "x0 -> t0=CLIP(x0;0,6)",
                            "x0 -> t0=SIGMOID(x0) t1=MUL(x0,t0)",
                            "x0 -> t0=HARDSWISH(x0)",
                            "x0 -> t0=RELU(x0)",
                            "x0,x1 -> t0=ADD(x1,x0) t1=RELU(t0)"};
    for (int v = 0; v <= 6; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_conv, v, NULL, &t, &rep));
        const ig_node *f = find_op(&t.g, "FusedConv");
        ASSERT(f);
        ASSERT_STREQ(f->pass, "conv_epilogue");
        ASSERT_EQ(live_count(&t.g, "FusedConv"), 1);
        ASSERT_EQ(live_count(&t.g, NULL), v == 6 ? 2 : 1);
        ASSERT_EQ(f->inputs[0], vid(&t, "x"));
        ASSERT_EQ(f->inputs[1], vid(&t, v == 6 ? "W2" : "W"));
        ASSERT_EQ(f->inputs[2], v == 5 ? -1 : vid(&t, "B"));
        ASSERT_EQ(f->n_inputs, v == 1 || v == 6 ? 4 : 3);
        if (v == 1) ASSERT_EQ(f->inputs[3], vid(&t, "r"));
        if (v == 6) ASSERT_EQ(f->inputs[3], vid(&t, "c"));
        ASSERT_EQ(f->outputs[0], vid(&t, "y"));
        ASSERT_STREQ(prog_str(&t, f), progs[v]);
        const int64_t *pads;
        int64_t np;
        ASSERT(ig__attr_ints(f, "pads", &pads, &np) && np == 4 && pads[0] == 1);
        ASSERT_EQ(ig__attr_int(f, "group", 1), v == 2 ? 4 : 1);
        ASSERT_STREQ(f->covers[0], v == 6 ? "conv_b (Conv)" : "conv (Conv)");
        ASSERT_EQ(f->n_covers, v == 0 || v == 2 || v == 4 || v == 5 ? 2 : 3);
        if (v == 6) ASSERT_STREQ(find_op(&t.g, "Conv")->name, "conv");
        ASSERT_EQ(pass_rep(&rep, "conv_epilogue")->n_rewrites, 1);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

TEST(conv_epilogue_near_misses)
{
    for (int v = 10; v <= 12; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_conv, v, NULL, &t, &rep));
        ASSERT(!find_op(&t.g, "FusedConv"));
        ASSERT_EQ(live_count(&t.g, "Conv"), 1);
        ASSERT_EQ(pass_rep(&rep, "conv_epilogue")->n_rewrites, 0);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
    /* six residuals: four join the conv (five inputs with the CUDA bias' one left), the rest a Pointwise */
    T t;
    ig_opt_report rep;
    AGREES(equiv(build_conv, 13, NULL, &t, &rep));
    const ig_node *f = find_op(&t.g, "FusedConv");
    ASSERT(f);
    ASSERT_EQ(f->n_inputs, 3 + 4);
    ASSERT_STREQ(prog_str(&t, f), "x0,x1,x2,x3,x4 -> t0=ADD(x0,x1) t1=ADD(t0,x2) t2=ADD(t1,x3) t3=ADD(t2,x4)");
    ASSERT_EQ(f->outputs[0], vid(&t, "a3"));
    const ig_node *p = find_op(&t.g, "Pointwise");
    ASSERT(p);
    ASSERT_EQ(p->inputs[0], vid(&t, "a3"));
    ASSERT_STREQ(prog_str(&t, p), "x0,x1,x2 -> t0=ADD(x0,x1) t1=ADD(t0,x2) t2=RELU(t1)");
    ASSERT_EQ(live_count(&t.g, NULL), 2);
    ig__opt_report_free(&rep);
    t_free(&t);
}

/* ==== conv_pool ==== */

/* x [b,3,13,13] -> Conv 3x3/2 pad 1 (8 channels) -> Relu -> MaxPool. variant: 0 ResNet's 3x3/2 pad 1;
 * 1 2x2/2 ceil_mode (a last window half past the edge); 2 3x3/1 asymmetric pads; near misses: 10 the
 * conv's output also read by another node; 11 the pool's Indices in use; 12 a dilated pool */
static void build_conv_pool(T *t, int variant)
{
    int64_t xd[4] = {0, 3, 13, 13}, wd[4] = {8, 3, 3, 3}, bd[1] = {8}, pads[4] = {1, 1, 1, 1}, st[2] = {2, 2};
    in_f(t, "x", 4, xd);
    rand_f(t, "W", 4, wd, -0.5, 0.5);
    rand_f(t, "B", 1, bd, -0.5, 0.5);
    ig_node *c = nd(t, "conv", "Conv", "x,W,B", "c");
    a_ints(t, c, "pads", 4, pads);
    a_ints(t, c, "strides", 2, st);
    nd(t, "relu", "Relu", "c", "r");
    const bool indices = variant == 11;
    ig_node *m = nd(t, "pool", "MaxPool", "r", indices ? "y,idx" : "y");
    int64_t k3[2] = {3, 3}, k2[2] = {2, 2}, p1[4] = {1, 1, 1, 1}, pa[4] = {0, 1, 2, 0}, s1[2] = {1, 1}, d2[2] = {2, 2};
    a_ints(t, m, "kernel_shape", 2, variant == 1 ? k2 : k3);
    a_ints(t, m, "strides", 2, variant == 2 ? s1 : st);
    if (variant != 1) a_ints(t, m, "pads", 4, variant == 2 ? pa : p1);
    if (variant == 1) a_int(m, "ceil_mode", 1);
    if (variant == 12) a_ints(t, m, "dilations", 2, d2);
    if (variant == 10) nd(t, "neg", "Neg", "r", "n");
    t_io(t, "x", variant == 10 ? "y,n" : indices ? "y,idx" : "y");
}

TEST(conv_pool_forms)
{
    const int64_t want[3][9] = {{3, 3, 2, 2, 1, 1, 1, 1, 0}, {2, 2, 2, 2, 0, 0, 0, 0, 1}, {3, 3, 1, 1, 0, 1, 2, 0, 0}};
    for (int v = 0; v <= 2; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_conv_pool, v, NULL, &t, &rep));
        const ig_node *f = find_op(&t.g, "FusedConv");
        ASSERT(f);
        ASSERT_STREQ(f->pass, "conv_pool");
        ASSERT_EQ(live_count(&t.g, NULL), 1);
        ASSERT_EQ(f->outputs[0], vid(&t, "y"));
        ASSERT_STREQ(prog_str(&t, f), "x0 -> t0=RELU(x0)");
        const int64_t *pl;
        int64_t np;
        ASSERT(ig__attr_ints(f, "pool", &pl, &np) && np == 9);
        for (int i = 0; i < 9; i++) ASSERT_EQ(pl[i], want[v][i]);
        ASSERT_EQ(f->n_covers, 3);
        ASSERT_STREQ(f->covers[2], "pool (MaxPool)");
        ASSERT_EQ(pass_rep(&rep, "conv_pool")->n_rewrites, 1);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
    /* a malformed pool attribute (as a crafted file could carry) is refused by the op, naming it */
    T t;
    t_init(&t);
    build_conv_pool(&t, 0);
    ASSERT(!prep(&t));
    ig_opt_report rep;
    ig_opt_options o = {.enabled = true};
    ASSERT(!ig__optimize(&t.g, &t.fold, &o, &rep, &t.err));
    ig_node *f = (ig_node *)find_op(&t.g, "FusedConv");
    ASSERT(f);
    for (int32_t i = 0; i < f->n_attrs; i++)
        if (!strcmp(f->attrs[i].name, "pool")) ((int64_t *)f->attrs[i].ints)[4] = 3; /* a pad as large as the window */
    ASSERT(reinfer(&t));
    ASSERT(strstr(t.err.msg, "'pool'"));
    ig__opt_report_free(&rep);
    t_free(&t);
}

TEST(conv_pool_near_misses)
{
    for (int v = 10; v <= 12; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_conv_pool, v, NULL, &t, &rep));
        ASSERT(find_op(&t.g, "MaxPool"));
        ASSERT_EQ(pass_rep(&rep, "conv_pool")->n_rewrites, 0);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

/* ==== shortcut_merge ==== */

/* ResNet's projection shortcut: y [b,6,5,5] -> conv3 1x1 (8), x [b,4,5,5] -> downsample 1x1 (8), Add,
 * Relu. variant: 0 both biases; 1 the downsample without bias; 2 no Relu after the Add; 3 the shortcut
 * of stride 2 (x [b,4,9,9]: the Concat takes Slice(x, steps 2)); near misses: 10 the shortcut of stride
 * 2 with pads 1 (x [b,4,7,7]); 11 conv3 3x3 with pads; 12 conv3's output also a graph output */
static void build_shortcut(T *t, int variant)
{
    const int64_t hx = variant == 3 ? 9 : variant == 10 ? 7 : 5;
    int64_t yd[4] = {0, 6, 5, 5}, xd[4] = {0, 4, hx, hx};
    int64_t w3d[4] = {8, 6, variant == 11 ? 3 : 1, variant == 11 ? 3 : 1}, wdd[4] = {8, 4, 1, 1}, bd[1] = {8};
    in_f(t, "y", 4, yd);
    in_f(t, "x", 4, xd);
    rand_f(t, "W3", 4, w3d, -0.5, 0.5);
    rand_f(t, "Wd", 4, wdd, -0.5, 0.5);
    rand_f(t, "B3", 1, bd, -0.5, 0.5);
    rand_f(t, "Bd", 1, bd, -0.5, 0.5);
    ig_node *c = nd(t, "conv3", "Conv", "y,W3,B3", "c3");
    int64_t p1[4] = {1, 1, 1, 1}, s2[2] = {2, 2};
    if (variant == 11) a_ints(t, c, "pads", 4, p1);
    ig_node *d = nd(t, "down", "Conv", variant == 1 ? "x,Wd" : "x,Wd,Bd", "cd");
    if (variant == 3 || variant == 10) a_ints(t, d, "strides", 2, s2);
    if (variant == 10) a_ints(t, d, "pads", 4, p1);
    nd(t, "add", "Add", "c3,cd", variant == 2 ? "out" : "a");
    if (variant != 2) nd(t, "relu", "Relu", "a", "out");
    t_io(t, "y,x", variant == 12 ? "out,c3" : "out");
}

TEST(shortcut_merge_forms)
{
    for (int v = 0; v <= 3; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_shortcut, v, NULL, &t, &rep));
        const ig_node *f = find_op(&t.g, "FusedConv"), *cat = find_op(&t.g, "Concat"), *sl = find_op(&t.g, "Slice");
        ASSERT(f && cat);
        ASSERT_STREQ(f->pass, "shortcut_merge");
        ASSERT_EQ(live_count(&t.g, NULL), v == 3 ? 3 : 2);
        ASSERT_EQ(live_count(&t.g, "Conv"), 0);
        ASSERT_EQ(f->inputs[0], cat->outputs[0]);
        ASSERT_EQ(cat->inputs[0], vid(&t, "y"));
        ASSERT_EQ(cat->inputs[1], v == 3 ? sl->outputs[0] : vid(&t, "x"));
        if (v == 3) ASSERT_EQ(sl->inputs[0], vid(&t, "x"));
        ASSERT(!ig__node_attr(f, "strides"));
        ASSERT_EQ(ig__attr_int(cat, "axis", 0), 1);
        ASSERT_EQ(f->n_inputs, 3);
        ASSERT(f->inputs[2] >= 0);
        ASSERT_STREQ(prog_str(&t, f), v == 2 ? "x0 -> x0" : "x0 -> t0=RELU(x0)");
        const ig_value *w = &t.g.values[f->inputs[1]];
        ASSERT(w->shape.rank == 4 && w->shape.d[0].n == 8 && w->shape.d[1].n == 10);
        ASSERT_EQ(pass_rep(&rep, "shortcut_merge")->n_rewrites, 1);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

TEST(shortcut_merge_near_misses)
{
    for (int v = 10; v <= 12; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_shortcut, v, NULL, &t, &rep));
        ASSERT(!find_op(&t.g, "Concat"));
        ASSERT_EQ(pass_rep(&rep, "shortcut_merge")->n_rewrites, 0);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

/* ==== gemm_epilogue ==== */

/* x [b,5,8], W [8,6], bias [6]. variant: 0 MatMul -> Add(bias) -> Relu; 1 MatMul -> Div(2) -> Add(bias
 * [1,1,6]) -> Add(residual) -> erf GELU; 2 Gemm(transB, alpha 0.5, beta 2, C [6]) -> Relu; 3 Gemm with C
 * an input [b,6], beta 0.5, transA -> Sigmoid; 4 batched MatMul of two inputs -> Mul(0.25) -> Sigmoid; 5 MatMul
 * -> Mul(3) only; near misses: 10 a bare MatMul and a bare Gemm; 11 the MatMul output read twice */
static void build_mm(T *t, int variant)
{
    int64_t xd[3] = {0, 5, 8}, wd[2] = {8, 6}, bd[1] = {6}, b3[3] = {1, 1, 6}, rd[3] = {0, 5, 6};
    int64_t x2[2] = {0, 8}, wt[2] = {6, 8}, cd[2] = {0, 6}, bd2[3] = {0, 8, 6};
    rand_f(t, "W", 2, wd, -0.5, 0.5);
    rand_f(t, "Wt", 2, wt, -0.5, 0.5);
    rand_f(t, "bias", 1, bd, -0.5, 0.5);
    rand_f(t, "bias3", 3, b3, -0.5, 0.5);
    scalar_f(t, "two", 2);
    scalar_f(t, "three", 3);
    scalar_f(t, "quarter", 0.25f);
    scalar_f(t, "sqrt2", 1.4142135f);
    scalar_f(t, "one", 1);
    scalar_f(t, "half", 0.5f);
    ig_node *n;
    switch (variant) {
    case 0:
        in_f(t, "x", 3, xd);
        nd(t, "mm", "MatMul", "x,W", "m");
        nd(t, "badd", "Add", "m,bias", "mb");
        nd(t, "relu", "Relu", "mb", "y");
        t_io(t, "x", "y");
        break;
    case 1:
        in_f(t, "x", 3, xd);
        in_f(t, "r", 3, rd);
        nd(t, "mm", "MatMul", "x,W", "m");
        nd(t, "div", "Div", "m,two", "md");
        nd(t, "badd", "Add", "bias3,md", "mb");
        nd(t, "res", "Add", "mb,r", "h");
        nd(t, "gdiv", "Div", "h,sqrt2", "ga");
        nd(t, "erf", "Erf", "ga", "ge");
        nd(t, "gadd", "Add", "ge,one", "gp");
        nd(t, "gmul", "Mul", "h,gp", "gm");
        nd(t, "ghalf", "Mul", "gm,half", "y");
        t_io(t, "x,r", "y");
        break;
    case 2:
        in_f(t, "x", 2, x2);
        n = nd(t, "mm", "Gemm", "x,Wt,bias", "m");
        a_int(n, "transB", 1);
        a_float(n, "alpha", 0.5f);
        a_float(n, "beta", 2);
        nd(t, "relu", "Relu", "m", "y");
        t_io(t, "x", "y");
        break;
    case 3: { /* A given transposed: [8, b] */
        int64_t xt[2] = {8, 0};
        in_f(t, "x", 2, xt);
        in_f(t, "cin", 2, cd);
        n = nd(t, "mm", "Gemm", "x,W,cin", "m");
        a_int(n, "transA", 1);
        a_float(n, "beta", 0.5f);
        nd(t, "sig", "Sigmoid", "m", "y");
        t_io(t, "x,cin", "y");
        break;
    }
    case 4:
        in_f(t, "x", 3, xd);
        in_f(t, "x2", 3, bd2);
        nd(t, "mm", "MatMul", "x,x2", "m");
        nd(t, "mul", "Mul", "quarter,m", "ms");
        nd(t, "sig", "Sigmoid", "ms", "y");
        t_io(t, "x,x2", "y");
        break;
    case 5:
        in_f(t, "x", 3, xd);
        nd(t, "mm", "MatMul", "x,W", "m");
        nd(t, "mul", "Mul", "m,three", "y");
        t_io(t, "x", "y");
        break;
    case 10:
        in_f(t, "x", 3, xd);
        in_f(t, "x2", 2, x2);
        nd(t, "mm", "MatMul", "x,W", "y");
        n = nd(t, "gemm", "Gemm", "x2,Wt,bias", "z");
        a_int(n, "transB", 1);
        t_io(t, "x,x2", "y,z");
        break;
    case 11:
        in_f(t, "x", 3, xd);
        nd(t, "mm", "MatMul", "x,W", "m");
        nd(t, "relu", "Relu", "m", "y");
        nd(t, "neg", "Neg", "m", "z");
        t_io(t, "x", "y,z");
        break;
    }
}

TEST(gemm_epilogue_forms)
{
    const char *progs[6] = {"x0 -> t0=RELU(x0)",    "x0,x1 -> t0=ADD(x0,x1) t1=GELU_ERF(t0)",
                            "x0 -> t0=RELU(x0)",    "x0,x1 -> t0=MULADD(x1,0.5,x0) t1=SIGMOID(t0)",
                            "x0 -> t0=SIGMOID(x0)", "x0 -> x0"};
    const double alphas[6] = {1, 0.5, 0.5, 1, 0.25, 3};
    const int covers[6] = {3, 9, 2, 2, 3, 2};
    for (int v = 0; v <= 5; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_mm, v, NULL, &t, &rep));
        ASSERT_EQ(live_count(&t.g, NULL), 1);
        const ig_node *f = find_op(&t.g, "FusedMatMul");
        ASSERT(f);
        ASSERT_STREQ(f->pass, "gemm_epilogue");
        ASSERT_STREQ(f->name, "mm");
        ASSERT_EQ(f->inputs[0], vid(&t, "x"));
        ASSERT_EQ(f->outputs[0], vid(&t, "y"));
        ASSERT_NEAR(ig__attr_float(f, "alpha", 0), alphas[v], 1e-7);
        ASSERT_EQ(ig__attr_int(f, "trans_b", 0), v == 2);
        ASSERT_EQ(ig__attr_int(f, "trans_a", 0), v == 3);
        ASSERT_STREQ(prog_str(&t, f), progs[v]);
        ASSERT_EQ(f->n_covers, covers[v]);
        ASSERT_STREQ(f->covers[0], v == 2 || v == 3 ? "mm (Gemm)" : "mm (MatMul)");
        const ig_value *b = f->inputs[2] >= 0 ? &t.g.values[f->inputs[2]] : NULL;
        if (v == 0) ASSERT_EQ(f->inputs[2], vid(&t, "bias"));
        if (v == 1 || v == 2) { /* a new [6] constant: bias3 reshaped, or bias * beta */
            ASSERT(b && b->shape.rank == 1 && b->shape.d[0].n == 6);
            const ig_value *src = &t.g.values[vid(&t, v == 1 ? "bias3" : "bias")];
            ASSERT_NEAR(ig__elem_f64(b->c.dtype, b->c.data, 5),
                        ig__elem_f64(src->c.dtype, src->c.data, 5) * (v == 2 ? 2 : 1), 1e-6);
        }
        if (v >= 3) ASSERT(!b);
        if (v == 1) ASSERT_EQ(f->inputs[3], vid(&t, "r"));
        if (v == 3) ASSERT_EQ(f->inputs[3], vid(&t, "cin"));
        ASSERT_EQ(pass_rep(&rep, "gemm_epilogue")->n_rewrites, 1);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

TEST(gemm_epilogue_near_misses)
{
    for (int v = 10; v <= 11; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_mm, v, NULL, &t, &rep));
        ASSERT(!find_op(&t.g, "FusedMatMul"));
        ASSERT_EQ(live_count(&t.g, "MatMul"), 1);
        ASSERT_EQ(pass_rep(&rep, "gemm_epilogue")->n_rewrites, 0);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

/* ==== gemm_siblings ==== */

/* Products of one input with constant weights. variant: 0 BERT's projections over x [b,5,8]: MatMul ->
 * Mul(0.25) -> Add(bq), MatMul -> Add(bk), a bare MatMul (no bias), each a graph output; 1 over x2 [b,8]:
 * Gemm(transB, alpha 0.5, beta 2, C [6]), Gemm without C, MatMul -> Add(bias). Near misses: 10 one product
 * has a Relu epilogue, the other a computed weight; 11 the products read different inputs. */
static void build_sibs(T *t, int variant)
{
    int64_t xd[3] = {0, 5, 8}, x2d[2] = {0, 8}, wd[2] = {8, 6}, w4[2] = {8, 4}, wt[2] = {6, 8}, bd[1] = {6};
    int64_t b4[1] = {4}, xx[3] = {0, 8, 6};
    rand_f(t, "Wq", 2, wd, -0.5, 0.5);
    rand_f(t, "Wk", 2, w4, -0.5, 0.5);
    rand_f(t, "Wv", 2, wd, -0.5, 0.5);
    rand_f(t, "Wt", 2, wt, -0.5, 0.5);
    rand_f(t, "bq", 1, bd, -0.5, 0.5);
    rand_f(t, "bk", 1, b4, -0.5, 0.5);
    scalar_f(t, "quarter", 0.25f);
    ig_node *n;
    switch (variant) {
    case 0:
        in_f(t, "x", 3, xd);
        nd(t, "q", "MatMul", "x,Wq", "qm");
        nd(t, "qs", "Mul", "qm,quarter", "qa");
        nd(t, "qb", "Add", "qa,bq", "yq");
        nd(t, "k", "MatMul", "x,Wk", "km");
        nd(t, "kb", "Add", "km,bk", "yk");
        nd(t, "v", "MatMul", "x,Wv", "yv");
        t_io(t, "x", "yq,yk,yv");
        break;
    case 1:
        in_f(t, "x", 2, x2d);
        n = nd(t, "q", "Gemm", "x,Wt,bq", "yq");
        a_int(n, "transB", 1);
        a_float(n, "alpha", 0.5f);
        a_float(n, "beta", 2);
        nd(t, "k", "Gemm", "x,Wk", "yk");
        nd(t, "v", "MatMul", "x,Wv", "vm");
        nd(t, "vb", "Add", "vm,bq", "yv");
        t_io(t, "x", "yq,yk,yv");
        break;
    case 10:
        in_f(t, "x", 3, xd);
        in_f(t, "x2", 3, xx);
        nd(t, "q", "MatMul", "x,Wq", "qm");
        nd(t, "qr", "Relu", "qm", "yq");
        nd(t, "k", "MatMul", "x,x2", "yk");
        t_io(t, "x,x2", "yq,yk");
        break;
    case 11:
        in_f(t, "x", 3, xd);
        in_f(t, "x2", 3, xd);
        nd(t, "q", "MatMul", "x,Wq", "yq");
        nd(t, "k", "MatMul", "x2,Wv", "yk");
        t_io(t, "x,x2", "yq,yk");
        break;
    }
}

TEST(gemm_siblings_forms)
{
    for (int v = 0; v <= 1; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_sibs, v, NULL, &t, &rep));
        ASSERT_EQ(live_count(&t.g, NULL), 2);
        const ig_node *f = find_op(&t.g, "FusedMatMul"), *sp = find_op(&t.g, "Split");
        ASSERT(f && sp);
        ASSERT_STREQ(f->pass, "gemm_siblings");
        ASSERT_EQ(f->inputs[0], vid(&t, "x"));
        ASSERT_NEAR(ig__attr_float(f, "alpha", 0), 1, 0);
        ASSERT_EQ(ig__attr_int(f, "trans_b", 1), 0);
        const ig_value *w = &t.g.values[f->inputs[1]], *b = &t.g.values[f->inputs[2]];
        ASSERT(w->c.rank == 2 && w->c.dims[0] == 8 && w->c.dims[1] == 16);
        ASSERT(b->c.rank == 1 && b->c.dims[0] == 16);
        /* the Split gives each product its columns back, in the order of the nodes in the graph: find q's
         * and k's first columns (alpha folded into q's weights, beta into its bias; v's bias zeros in 1) */
        ASSERT_EQ(sp->n_outputs, 3);
        ASSERT_EQ(sp->inputs[0], f->outputs[0]);
        const ig_value *sz = &t.g.values[sp->inputs[1]];
        int64_t col[3] = {0}, off = 0, oq = -1, ok = -1, ov = -1;
        for (int j = 0; j < 3; j++) {
            col[j] = off;
            off += ig__elem_f64(INGOT_DTYPE_INT64, sz->c.data, j);
            if (sp->outputs[j] == vid(&t, "yq")) oq = col[j];
            if (sp->outputs[j] == vid(&t, "yk")) ok = col[j];
            if (sp->outputs[j] == vid(&t, "yv")) ov = col[j];
        }
        ASSERT(off == 16 && oq >= 0 && ok >= 0 && ov >= 0);
        const ig_value *wq = &t.g.values[vid(&t, v == 0 ? "Wq" : "Wt")], *bq = &t.g.values[vid(&t, "bq")];
        const ig_value *wk = &t.g.values[vid(&t, "Wk")], *bk = &t.g.values[vid(&t, "bk")];
        double q10 = ig__elem_f64(wq->c.dtype, wq->c.data, v == 0 ? 1 * 6 + 0 : 0 * 8 + 1); /* W_q[k=1][n=0] */
        ASSERT_NEAR(ig__elem_f64(w->c.dtype, w->c.data, 1 * 16 + oq), q10 * (v == 0 ? 0.25 : 0.5), 1e-6);
        ASSERT_NEAR(ig__elem_f64(w->c.dtype, w->c.data, 2 * 16 + ok + 3),
                    ig__elem_f64(wk->c.dtype, wk->c.data, 2 * 4 + 3), 1e-6);
        ASSERT_NEAR(ig__elem_f64(b->c.dtype, b->c.data, oq), ig__elem_f64(bq->c.dtype, bq->c.data, 0) * (v ? 2 : 1),
                    1e-6);
        ASSERT_NEAR(ig__elem_f64(b->c.dtype, b->c.data, ok + 1), v == 0 ? ig__elem_f64(bk->c.dtype, bk->c.data, 1) : 0,
                    1e-6);
        ASSERT_NEAR(ig__elem_f64(b->c.dtype, b->c.data, ov + 2), v == 1 ? ig__elem_f64(bq->c.dtype, bq->c.data, 2) : 0,
                    1e-6);
        ASSERT(f->n_covers >= 3);
        ASSERT_EQ(pass_rep(&rep, "gemm_siblings")->n_rewrites, 1);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

TEST(gemm_siblings_near_misses)
{
    for (int v = 10; v <= 11; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_sibs, v, NULL, &t, &rep));
        ASSERT(!find_op(&t.g, "Split"));
        ASSERT_EQ(pass_rep(&rep, "gemm_siblings")->n_rewrites, 0);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

/* ==== pointwise ==== */

/* variant: 0 SiLU Mul(x, Sigmoid(x)); 1 BERT's mask from ids: Equal(ids, 0) -> Not (int64 math), Cast ->
 * Sub(1, .) -> Mul(-10000) (fp32); 2 a standalone BatchNormalization (bn_fold's Mul + Add); 3 a lone
 * Relu; 4 GRN's tail, members of growing shapes (the group widens); near misses: 13 the same with the
 * smallest member's output read outside; 10 Sigmoid -> Neg -> Exp with Neg's output a graph output; 11 Add(Relu(x),
 * Neg(z)) with the Neg after the Relu; 12 a sum of eight inputs: six inputs at most */
static void build_pw(T *t, int variant)
{
    int64_t xd[2] = {0, 6}, x3[3] = {0, 3, 4}, cd[1] = {3};
    char ins[96] = "x";
    const char *outs = "y";
    bool grn = variant == 4 || variant == 13;
    if (variant != 1 && !grn) in_f(t, "x", variant == 2 ? 3 : 2, variant == 2 ? x3 : xd);
    switch (variant) {
    case 0:
        nd(t, "sig", "Sigmoid", "x", "s");
        nd(t, "mul", "Mul", "x,s", "y");
        break;
    case 1: {
        in_t(t, "ids", INGOT_DTYPE_INT64, 2, xd);
        strcpy(ins, "ids");
        int64_t z = 0;
        t_const(t, "zero", INGOT_DTYPE_INT64, 0, NULL, &z);
        scalar_f(t, "one", 1);
        scalar_f(t, "big", -10000);
        nd(t, "eq", "Equal", "ids,zero", "e");
        nd(t, "not", "Not", "e", "ne");
        ig_node *n = nd(t, "cast", "Cast", "ne", "m");
        a_int(n, "to", INGOT_DTYPE_FLOAT);
        nd(t, "sub", "Sub", "one,m", "s");
        nd(t, "mul", "Mul", "s,big", "y");
        break;
    }
    case 2:
        rand_f(t, "g", 1, cd, 0.5, 1.5);
        rand_f(t, "b", 1, cd, -1, 1);
        rand_f(t, "mu", 1, cd, -1, 1);
        rand_f(t, "var", 1, cd, 0.5, 2);
        nd(t, "bn", "BatchNormalization", "x,g,b,mu,var", "y");
        break;
    case 3: nd(t, "relu", "Relu", "x", "y"); break;
    case 4:
    case 13: { /* ConvNeXt-V2's GRN tail over three shapes: [b,1,1,1] -> [b,1,1,4] -> [b,2,3,4] */
        int64_t md[4] = {0, 1, 1, 1}, gd[4] = {0, 1, 1, 4}, bd[4] = {0, 2, 3, 4};
        in_f(t, "m", 4, md);
        in_f(t, "gx", 4, gd);
        in_f(t, "x", 4, bd);
        scalar_f(t, "eps", 1e-6);
        nd(t, "add_eps", "Add", "m,eps", "d");
        nd(t, "div", "Div", "gx,d", "nx");
        nd(t, "mul", "Mul", "x,nx", "p");
        nd(t, "res", "Add", "p,x", "y");
        strcpy(ins, "m,gx,x");
        if (variant == 13) outs = "y,d"; /* the small member read outside: it cannot join */
        break;
    }
    case 10:
        nd(t, "sig", "Sigmoid", "x", "s");
        nd(t, "neg", "Neg", "s", "n");
        nd(t, "exp", "Exp", "n", "y");
        outs = "y,n";
        break;
    case 11:
        in_f(t, "z", 2, xd);
        strcpy(ins, "x,z");
        nd(t, "relu", "Relu", "x", "a");
        nd(t, "neg", "Neg", "z", "b");
        nd(t, "add", "Add", "a,b", "y");
        break;
    case 12: {
        const char *prev = "x";
        static const char *sums[7] = {"s0", "s1", "s2", "s3", "s4", "s5", "y"};
        char nm[16], in2[32];
        for (int i = 0; i < 7; i++) {
            snprintf(nm, sizeof nm, "x%d", i);
            in_f(t, nm, 2, xd);
            snprintf(ins + strlen(ins), sizeof ins - strlen(ins), ",%s", nm);
            snprintf(in2, sizeof in2, "%s,%s", prev, nm);
            snprintf(nm, sizeof nm, "add%d", i);
            nd(t, nm, "Add", in2, sums[i]);
            prev = sums[i];
        }
        break;
    }
    }
    t_io(t, ins, outs);
}

TEST(pointwise_forms)
{
    T t;
    ig_opt_report rep;
    AGREES(equiv(build_pw, 0, NULL, &t, &rep));
    ASSERT_EQ(live_count(&t.g, NULL), 1);
    const ig_node *p = find_op(&t.g, "Pointwise");
    ASSERT(p);
    ASSERT_STREQ(p->pass, "pointwise");
    ASSERT_STREQ(p->name, "mul");
    ASSERT_EQ(p->n_inputs, 1);
    ASSERT_EQ(p->inputs[0], vid(&t, "x"));
    ASSERT_EQ(ig__attr_int(p, "int_math", 1), 0);
    ASSERT_EQ(ig__attr_int(p, "to", 0), INGOT_DTYPE_FLOAT);
    ASSERT_STREQ(prog_str(&t, p), "x0 -> t0=SIGMOID(x0) t1=MUL(x0,t0)");
    ASSERT_EQ(p->n_covers, 2);
    ASSERT_EQ(pass_rep(&rep, "pointwise")->n_rewrites, 1);
    ig__opt_report_free(&rep);
    t_free(&t);
    /* the mask: an int64 program ending in the Cast to float (the store converts), then an fp32 one */
    AGREES(equiv(build_pw, 1, NULL, &t, &rep));
    ASSERT_EQ(live_count(&t.g, NULL), 2);
    const ig_node *a = find_nth(&t.g, "Pointwise", 0), *b = find_nth(&t.g, "Pointwise", 1);
    ASSERT(a && b);
    ASSERT_EQ(ig__attr_int(a, "int_math", 0), 1);
    ASSERT_EQ(ig__attr_int(a, "to", 0), INGOT_DTYPE_FLOAT);
    ASSERT_STREQ(prog_str(&t, a), "[int] x0 -> t0=EQ(x0,0) t1=NOT(t0) t2=COPY(t1)");
    ASSERT_EQ(ig__attr_int(b, "int_math", 1), 0);
    ASSERT_EQ(ig__attr_int(b, "to", 0), INGOT_DTYPE_FLOAT);
    ASSERT_EQ(b->inputs[0], vid(&t, "m"));
    ASSERT_STREQ(prog_str(&t, b), "x0 -> t0=SUB(1,x0) t1=MUL(t0,-10000)");
    ig__opt_report_free(&rep);
    t_free(&t);
    /* BN's Mul + Add */
    AGREES(equiv(build_pw, 2, NULL, &t, &rep));
    ASSERT_EQ(live_count(&t.g, NULL), 1);
    p = find_op(&t.g, "Pointwise");
    ASSERT(p);
    ASSERT_EQ(p->n_inputs, 3);
    ASSERT_STREQ(prog_str(&t, p), "x0,x1,x2 -> t0=MUL(x0,x1) t1=ADD(t0,x2)");
    ASSERT_STREQ(p->covers[0], "bn (BatchNormalization)");
    ig__opt_report_free(&rep);
    t_free(&t);
    /* shapes growing along the chain: one program over the largest, the small members per element */
    AGREES(equiv(build_pw, 4, NULL, &t, &rep));
    ASSERT_EQ(live_count(&t.g, NULL), 1);
    p = find_op(&t.g, "Pointwise");
    ASSERT(p);
    ASSERT_EQ(p->outputs[0], vid(&t, "y"));
    ASSERT_EQ(p->n_covers, 4);
    ASSERT_EQ(p->n_inputs, 3);
    ASSERT_STREQ(prog_str(&t, p), "x0,x1,x2 -> t0=ADD(x0,1e-06) t1=DIV(x1,t0) t2=MUL(x2,t1) t3=ADD(t2,x2)");
    ig__opt_report_free(&rep);
    t_free(&t);
    /* a lone elementwise node stays */
    AGREES(equiv(build_pw, 3, NULL, &t, &rep));
    ASSERT(find_op(&t.g, "Relu"));
    ASSERT_EQ(pass_rep(&rep, "pointwise")->n_rewrites, 0);
    ig__opt_report_free(&rep);
    t_free(&t);
}

TEST(pointwise_near_misses)
{
    T t;
    ig_opt_report rep;
    /* the Neg's output is read outside: Sigmoid + Neg fuse, the Exp stays */
    AGREES(equiv(build_pw, 10, NULL, &t, &rep));
    const ig_node *p = find_op(&t.g, "Pointwise");
    ASSERT(p);
    ASSERT_EQ(p->outputs[0], vid(&t, "n"));
    ASSERT(find_op(&t.g, "Exp"));
    ig__opt_report_free(&rep);
    t_free(&t);
    /* Neg(z) comes after the Relu: the Relu's group cannot read it; the Neg's can read the Relu's output */
    AGREES(equiv(build_pw, 11, NULL, &t, &rep));
    ASSERT(find_op(&t.g, "Relu"));
    p = find_op(&t.g, "Pointwise");
    ASSERT(p);
    ASSERT_EQ(p->n_inputs, 2);
    ASSERT_EQ(p->inputs[0], vid(&t, "z"));
    ASSERT_EQ(p->inputs[1], vid(&t, "a"));
    ig__opt_report_free(&rep);
    t_free(&t);
    /* GRN's Add(m, eps) also read outside: it stays; the Div widens into the Mul and the Add */
    AGREES(equiv(build_pw, 13, NULL, &t, &rep));
    ASSERT_EQ(live_count(&t.g, NULL), 2);
    p = find_op(&t.g, "Pointwise");
    ASSERT(p && find_op(&t.g, "Add"));
    ASSERT_EQ(p->outputs[0], vid(&t, "y"));
    ASSERT_EQ(p->n_covers, 3);
    ig__opt_report_free(&rep);
    t_free(&t);
    /* eight inputs: six in the first program, the rest in a second */
    AGREES(equiv(build_pw, 12, NULL, &t, &rep));
    ASSERT_EQ(live_count(&t.g, NULL), 2);
    const ig_node *a = find_nth(&t.g, "Pointwise", 0), *b = find_nth(&t.g, "Pointwise", 1);
    ASSERT(a && b);
    ASSERT_EQ(a->n_inputs, 6);
    ASSERT_EQ(a->outputs[0], vid(&t, "s4"));
    ASSERT_EQ(b->n_inputs, 3);
    ASSERT_EQ(b->inputs[0], vid(&t, "s4"));
    ig__opt_report_free(&rep);
    t_free(&t);
}

/* ==== groupnorm ==== */

/* x [b, 8, 3, 5], 4 groups. variant: 0 torch's export (Reshape [0, 4, -1], InstanceNormalization with
 * ones/zeros, Reshape to Shape(x), Mul gamma [8, 1, 1], Add beta [8, 1, 1]); 1 back-Reshape to a
 * constant [0, 8, 3, 5], Mul(gamma [1, 8, 1, 1], .), Add(beta, .), InstanceNormalization with its own
 * scale and bias (folded); 2 no Mul/Add, x split as [0, 4, 2, 3, 5]; 3 Mul by a one-element gamma, no
 * Add; near misses: 10 the first Reshape mixes the batch ([-1, 4, 15]); 11 the back-Reshape is not x's
 * shape ([0, 8, 15], no Mul/Add); 12 the InstanceNormalization's output also a graph output; 13 a Mul by a
 * [1, 8, 3, 1] constant (not per channel: the GroupNorm is made without it); 14 the InstanceNormalization's
 * scale a graph input */
static void build_gn(T *t, int variant)
{
    int64_t xd[4] = {0, 8, 3, 5}, gd[1] = {4}, cd[3] = {8, 1, 1}, c4[4] = {1, 8, 1, 1}, sp[4] = {1, 8, 3, 1};
    int64_t one[1] = {1};
    in_f(t, "x", 4, xd);
    const char *ins = "x";
    if (variant == 14) {
        in_f(t, "s_in", 1, gd);
        ins = "x,s_in";
    }
    float ones[4] = {1, 1, 1, 1}, zeros[4] = {0, 0, 0, 0};
    if (variant == 1) {
        rand_f(t, "s", 1, gd, 0.5, 1.5);
        rand_f(t, "b", 1, gd, -1, 1);
    } else {
        t_f32(t, "s", 1, gd, ones);
        t_f32(t, "b", 1, gd, zeros);
    }
    rand_f(t, "gamma", 3, cd, 0.5, 1.5);
    rand_f(t, "beta", 3, cd, -1, 1);
    rand_f(t, "gamma4", 4, c4, 0.5, 1.5);
    rand_f(t, "beta4", 4, c4, -1, 1);
    rand_f(t, "gamma1", 1, one, 0.5, 1.5);
    rand_f(t, "gsp", 4, sp, 0.5, 1.5);
    int64_t split3[3] = {0, 4, -1}, split5[5] = {0, 4, 2, 3, 5}, mixed[3] = {-1, 4, 15};
    int64_t back4[4] = {0, 8, 3, 5}, back3[3] = {0, 8, 15};
    t_i64(t, "split", variant == 2 ? 5 : 3, variant == 2 ? split5 : variant == 10 ? mixed : split3);
    t_i64(t, "back", variant == 11 ? 3 : 4, variant == 11 ? back3 : back4);
    nd(t, "r1", "Reshape", "x,split", "r");
    ig_node *n = nd(t, "in", "InstanceNormalization", variant == 14 ? "r,s_in,b" : "r,s,b", "i");
    a_float(n, "epsilon", 1e-5f);
    if (variant != 1 && variant != 11) {
        nd(t, "shape", "Shape", "x", "xs");
        nd(t, "r2", "Reshape", "i,xs", "y");
    } else {
        nd(t, "r2", "Reshape", "i,back", "y");
    }
    const char *last = "y";
    if (variant == 0 || (variant >= 10 && variant != 11)) {
        nd(t, "mul", "Mul", variant == 13 ? "y,gsp" : "y,gamma", "m");
        nd(t, "add", "Add", "m,beta", "o");
        last = "o";
    } else if (variant == 1) {
        nd(t, "mul", "Mul", "gamma4,y", "m");
        nd(t, "add", "Add", "beta4,m", "o");
        last = "o";
    } else if (variant == 3) {
        nd(t, "mul", "Mul", "y,gamma1", "m");
        last = "m";
    }
    char outs[64];
    snprintf(outs, sizeof outs, "%s%s", last, variant == 12 ? ",i" : "");
    t_io(t, ins, outs);
}

TEST(groupnorm_forms)
{
    const int covers[4] = {6, 5, 4, 5};
    for (int v = 0; v < 4; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_gn, v, only("fold,dce,cse,groupnorm"), &t, &rep));
        ASSERT_EQ(live_count(&t.g, NULL), 1);
        const ig_node *n = find_op(&t.g, "GroupNorm");
        ASSERT(n);
        ASSERT_STREQ(n->domain, "ingot");
        ASSERT_EQ(ig__attr_int(n, "num_groups", 0), 4);
        ASSERT_NEAR(ig__attr_float(n, "epsilon", 0), 1e-5, 1e-12);
        ASSERT_EQ(n->n_covers, covers[v]);
        ASSERT_EQ(n->inputs[0], vid(&t, "x"));
        const ig_value *scale = &t.g.values[n->inputs[1]], *bias = &t.g.values[n->inputs[2]];
        ASSERT_EQ(scale->shape.rank, 1);
        ASSERT_EQ(scale->shape.d[0].n, 8);
        ASSERT_EQ(bias->shape.d[0].n, 8);
        if (v == 2) ASSERT_EQ(ig__elem_f64(scale->dtype, scale->c.data, 7), 1.0);
        if (v == 3) ASSERT_EQ(ig__elem_f64(bias->dtype, bias->c.data, 5), 0.0);
        ASSERT_EQ(pass_rep(&rep, "groupnorm")->n_rewrites, 1);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
    /* the whole list: the GroupNorm stays what it is */
    T t;
    ig_opt_report rep;
    AGREES(equiv(build_gn, 0, NULL, &t, &rep));
    ASSERT_EQ(live_count(&t.g, NULL), 1);
    ASSERT(find_op(&t.g, "GroupNorm"));
    ig__opt_report_free(&rep);
    t_free(&t);
}

TEST(groupnorm_near_misses)
{
    for (int v = 10; v <= 14; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_gn, v, only("fold,dce,cse,groupnorm"), &t, &rep));
        if (v == 13) {
            ASSERT(find_op(&t.g, "GroupNorm"));
            ASSERT_EQ(live_count(&t.g, "Mul"), 1);
            ASSERT_EQ(live_count(&t.g, "Add"), 1);
        } else {
            ASSERT(!find_op(&t.g, "GroupNorm"));
            ASSERT(find_op(&t.g, "InstanceNormalization"));
            ASSERT_EQ(pass_rep(&rep, "groupnorm")->n_rewrites, 0);
        }
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

/* ==== patchify ==== */

/* A patchify Conv on x [b, C, H, W] (its output c, the graph's output unless a node follows). variant:
 * 0 ViT's embed (C 3, 32x32, 16x16/16, O 8, bias); 1 ConvNeXt's stem (C 3, 16x16, 4x4/4, O 8, bias) ->
 * Transpose to channels-last -> LayerNormalization; 2 no bias, a 2x4/2x4 patch of C 5 on 6x8, no
 * kernel_shape, auto_pad VALID; 3 ViT's embed -> Relu (the whole list: one FusedMatMul with the bias
 * and the Relu); 4 ViT's embed -> Clip(0, 0.25) -> Neg (both moved before the output views); near misses: 10 C 8; 11
 * pads 1; 12 stride 2 with kernel 4; 13 dilation 2; 14 group 3; 15 the filter a graph input; 16 H 18 with p 4 (rows
 * left over); 17 a 1x1 convolution (already a GEMM on the GPU) */
static void build_pf(T *t, int variant)
{
    int64_t c = variant == 10 ? 8 : variant == 2 ? 5 : 3, o = 8, p = 4, q = 4, h = 16, w = 16;
    if (variant == 0 || variant == 3 || variant == 4) p = q = 16, h = w = 32;
    if (variant == 2) p = 2, q = 4, h = 6, w = 8;
    if (variant == 16) h = 18;
    if (variant == 17) p = q = 1;
    if (variant == 14) o = 6;
    int64_t xd[4] = {0, c, h, w}, wd[4] = {o, variant == 14 ? 1 : c, p, q}, bd[1] = {o}, k2[2] = {p, q};
    int64_t pads[4] = {1, 1, 1, 1}, s2[2] = {2, 2}, dil[2] = {2, 2};
    in_f(t, "x", 4, xd);
    const char *ins = "x";
    if (variant == 15) {
        in_f(t, "W", 4, wd);
        ins = "x,W";
    } else {
        rand_f(t, "W", 4, wd, -0.5, 0.5);
    }
    rand_f(t, "B", 1, bd, -0.5, 0.5);
    ig_node *n = nd(t, "conv", "Conv", variant == 2 ? "x,W" : "x,W,B", "c");
    if (variant != 2) a_ints(t, n, "kernel_shape", 2, k2);
    if (variant == 2) a_str(n, "auto_pad", "VALID");
    a_ints(t, n, "strides", 2, variant == 12 ? s2 : k2);
    if (variant == 11) a_ints(t, n, "pads", 4, pads);
    if (variant == 13) a_ints(t, n, "dilations", 2, dil);
    if (variant == 14) a_int(n, "group", 3);
    if (variant == 1) {
        int64_t perm[4] = {0, 2, 3, 1}, od[1] = {8};
        rand_f(t, "gamma", 1, od, 0.5, 1.5);
        rand_f(t, "beta", 1, od, -0.5, 0.5);
        a_ints(t, nd(t, "nhwc", "Transpose", "c", "cl"), "perm", 4, perm);
        a_int(nd(t, "ln", "LayerNormalization", "cl,gamma,beta", "y"), "axis", -1);
    } else if (variant == 3) {
        nd(t, "relu", "Relu", "c", "y");
    } else if (variant == 4) {
        scalar_f(t, "lo", 0);
        scalar_f(t, "hi", 0.25f);
        nd(t, "clip", "Clip", "c,lo,hi", "cc");
        nd(t, "neg", "Neg", "cc", "y");
    }
    t_io(t, ins, variant == 1 || variant == 3 || variant == 4 ? "y" : "c");
}

TEST(patchify_forms)
{
    const int64_t L[4] = {4, 16, 6, 4}, K[4] = {768, 48, 40, 768};
    for (int v = 0; v <= 2; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_pf, v, only("fold,dce,cse,patchify"), &t, &rep));
        ASSERT_EQ(live_count(&t.g, "Conv"), 0);
        ASSERT_EQ(live_count(&t.g, "Reshape"), 3);
        ASSERT_EQ(live_count(&t.g, "Transpose"), v == 1 ? 3 : 2);
        ASSERT_EQ(live_count(&t.g, "Add"), v == 2 ? 0 : 1);
        ASSERT_EQ(pass_rep(&rep, "patchify")->n_rewrites, 1);
        const ig_node *mm = find_op(&t.g, "MatMul");
        ASSERT(mm);
        ASSERT_STREQ(mm->name, "conv");
        ASSERT_STREQ(mm->pass, "patchify");
        ASSERT_EQ(mm->n_covers, 1);
        ASSERT_STREQ(mm->covers[0], "conv (Conv)");
        /* A: [batch, L, K], the batch x's own symbol */
        const ig_value *a = &t.g.values[mm->inputs[0]], *x = &t.g.values[vid(&t, "x")];
        ASSERT_STREQ(a->name, "c_patches");
        ASSERT_EQ(a->shape.rank, 3);
        ASSERT(ig__dim_eq(a->shape.d[0], x->shape.d[0]) && !ig__dim_known(a->shape.d[0]));
        ASSERT_EQ(a->shape.d[1].n, L[v]);
        ASSERT_EQ(a->shape.d[2].n, K[v]);
        /* B: the filter as [K, O], B[k][o] = W[o][k] */
        const ig_value *wk = &t.g.values[mm->inputs[1]], *w = &t.g.values[vid(&t, "W")];
        ASSERT_EQ(wk->c.rank, 2);
        ASSERT_EQ(wk->c.dims[0], K[v]);
        ASSERT_EQ(wk->c.dims[1], 8);
        for (int64_t k = 0; k < K[v]; k += 7)
            for (int64_t oc = 0; oc < 8; oc += 3)
                ASSERT_EQ(ig__elem_f64(wk->c.dtype, wk->c.data, k * 8 + oc),
                          ig__elem_f64(w->c.dtype, w->c.data, oc * K[v] + k));
        /* the conv's value is the last Transpose's, NCHW again, every new value shaped */
        const ig_value *c = &t.g.values[vid(&t, "c")];
        ASSERT(ig__opt_is(&t.g, c->producer, IG_OP_transpose));
        ASSERT_STREQ(t.g.nodes[c->producer].name, "conv_patch_nchw");
        ASSERT_EQ(c->shape.rank, 4);
        ASSERT(ig__dim_eq(c->shape.d[0], x->shape.d[0]));
        ASSERT_EQ(c->shape.d[1].n, 8);
        for (int32_t k = 0; k < t.g.n_nodes; k++) {
            const ig_node *nn = &t.g.nodes[k];
            if (nn->dead) continue;
            const ig_value *out = &t.g.values[nn->outputs[0]];
            ASSERT(out->shape.rank >= 2 && ig__dim_eq(out->shape.d[0], x->shape.d[0]));
        }
        ig__opt_report_free(&rep);
        t_free(&t);
    }
    /* the whole list: the MatMul takes the bias (and the Relu) into one FusedMatMul named after the conv;
     * without a bias it stays a MatMul */
    for (int v = 0; v <= 4; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_pf, v, NULL, &t, &rep));
        ASSERT_EQ(live_count(&t.g, "Conv"), 0);
        ASSERT_EQ(live_count(&t.g, "FusedConv"), 0);
        const ig_node *f = find_op(&t.g, v == 2 ? "MatMul" : "FusedMatMul");
        ASSERT(f);
        ASSERT_STREQ(f->name, "conv");
        if (v != 2) ASSERT_EQ(f->inputs[2], vid(&t, "B"));
        if (v == 0) { /* the MatMul and the bias Add both replace the Conv: it is listed once */
            ASSERT_EQ(f->n_covers, 1);
            ASSERT_STREQ(f->covers[0], "conv (Conv)");
        }
        if (v == 3) ASSERT_STREQ(prog_str(&t, f), "x0 -> t0=RELU(x0)");
        if (v == 4) ASSERT_STREQ(prog_str(&t, f), "x0 -> t0=CLIP(x0;0,0.25) t1=NEG(t0)");
        if (v >= 3) { /* the views come last and take over the chain's value */
            int32_t yp = ig__opt_producer(&t.g, vid(&t, "y"));
            ASSERT(yp >= 0);
            ASSERT_STREQ(t.g.nodes[yp].name, "conv_patch_nchw");
        }
        ASSERT_EQ(pass_rep(&rep, "patchify")->n_rewrites, 1);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

TEST(patchify_near_misses)
{
    for (int v = 10; v <= 17; v++) {
        T t;
        ig_opt_report rep;
        AGREES(equiv(build_pf, v, only("fold,dce,cse,patchify"), &t, &rep));
        ASSERT_EQ(live_count(&t.g, "Conv"), 1);
        ASSERT_EQ(live_count(&t.g, "MatMul"), 0);
        ASSERT_EQ(pass_rep(&rep, "patchify")->n_rewrites, 0);
        ig__opt_report_free(&rep);
        t_free(&t);
    }
}

/* ==== one pass at a time ==== */

TEST(passes_one_at_a_time)
{
    T t;
    ig_opt_report rep;
    /* attention alone on BERT's pattern */
    AGREES(equiv(build_att, 0, only("fold,dce,cse,attention"), &t, &rep));
    ASSERT_EQ(live_count(&t.g, NULL), 1);
    ASSERT(find_op(&t.g, "Attention"));
    ASSERT(pass_rep(&rep, "softmax")->skipped);
    ig__opt_report_free(&rep);
    t_free(&t);
    /* without attention: the scale and mask go to MaskedSoftmax, both MatMuls stay */
    AGREES(equiv(build_att, 0, "attention", &t, &rep));
    const ig_node *n = find_op(&t.g, "MaskedSoftmax");
    ASSERT(n);
    ASSERT_NEAR(ig__attr_float(n, "scale", 0), 0.5, 1e-7);
    ASSERT_EQ(n->inputs[0], vid(&t, "s"));
    ASSERT_EQ(live_count(&t.g, "MatMul"), 2);
    ig__opt_report_free(&rep);
    t_free(&t);
    /* without sink_views the residual stays an Add after the views, and the Gemm a Gemm */
    AGREES(equiv(build_sv, 0, "sink_views", &t, &rep));
    ASSERT(find_op(&t.g, "Gemm"));
    ASSERT_EQ(find_op(&t.g, "Add")->outputs[0], vid(&t, "y"));
    ig__opt_report_free(&rep);
    t_free(&t);
    /* sink_views alone: the Gemm is made again after W(R), so W(R) comes first in the order */
    AGREES(equiv(build_sv, 0, only("sink_views"), &t, &rep));
    const ig_node *gm = find_op(&t.g, "Gemm");
    ASSERT(gm);
    ASSERT_STREQ(gm->pass, "sink_views");
    int32_t pos_gemm = -1, pos_w = -1;
    for (int32_t k = 0; k < t.g.n_nodes; k++) {
        const ig_node *o = &t.g.nodes[t.g.order[k]];
        if (o == gm) pos_gemm = k;
        if (!strcmp(o->name, "rout_inverse")) pos_w = k;
    }
    ASSERT(pos_w >= 0 && pos_w < pos_gemm);
    ig__opt_report_free(&rep);
    t_free(&t);
    /* without conv_epilogue, SiLU after a conv is a Pointwise of the conv's output */
    AGREES(equiv(build_conv, 3, "conv_epilogue", &t, &rep));
    n = find_op(&t.g, "Pointwise");
    ASSERT(n && find_op(&t.g, "Conv"));
    ASSERT_EQ(n->inputs[0], vid(&t, "c"));
    ASSERT_STREQ(prog_str(&t, n), "x0 -> t0=SIGMOID(x0) t1=MUL(x0,t0)");
    ig__opt_report_free(&rep);
    t_free(&t);
}

TEST_MAIN(RUN(attention_forms); RUN(attention_constant_masks); RUN(attention_near_misses); RUN(softmax_forms);
          RUN(softmax_near_misses); RUN(sink_views_residual_into_gemm); RUN(sink_views_near_misses);
          RUN(conv_epilogue_forms); RUN(conv_epilogue_near_misses); RUN(conv_pool_forms); RUN(conv_pool_near_misses);
          RUN(shortcut_merge_forms); RUN(shortcut_merge_near_misses); RUN(gemm_epilogue_forms);
          RUN(gemm_epilogue_near_misses); RUN(gemm_siblings_forms); RUN(gemm_siblings_near_misses);
          RUN(pointwise_forms); RUN(pointwise_near_misses); RUN(groupnorm_forms); RUN(groupnorm_near_misses);
          RUN(patchify_forms); RUN(patchify_near_misses); RUN(passes_one_at_a_time))
