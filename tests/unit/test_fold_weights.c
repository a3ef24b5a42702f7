/*
 * test_fold_weights.c -- filters computed from initializers fold at build (src/opt/fold.c): weight
 * standardisation (ReduceMean, Sub, Mul, Sqrt, Div of a filter larger than the 64 KiB the inference
 * folds by itself), a weight normalised by ReduceL2 feeding a MatMul, and BatchNormalization in
 * training mode on a constant (timm's StdConv2d) -- each leaves one Conv/MatMul reading an initializer,
 * computing what the graph as built computes.
 */
#include "opt_harness.h"

typedef void (*build_fn)(T *t);

/* Build twice, optimize one copy (the whole pass list), run both on the same inputs: the largest
 * relative difference, or a negative number on failure. *opt is left for inspection. */
static double fold_equiv(build_fn build, T *opt, bool *unsupported)
{
    T ref;
    t_init(&ref);
    t_init(opt);
    uint64_t seed = rng;
    build(&ref);
    rng = seed;
    build(opt);
    double r = -2;
    outs_t a = {0}, b = {0};
    if (prep(&ref) || prep(opt)) {
        if (unsupported) *unsupported = ref.err.status == INGOT_ERR_MODEL_UNSUPPORTED_OP;
        if (!unsupported) fprintf(stderr, "  prep: %s%s\n", ref.err.msg, opt->err.msg);
        goto out;
    }
    static const ig_opt_options o = {.enabled = true};
    if (ig__optimize(&opt->g, &opt->fold, &o, NULL, &opt->err)) {
        fprintf(stderr, "  optimize: %s\n", opt->err.msg);
        goto out;
    }
    if (run_graph(&ref, 7, &a) || run_graph(opt, 7, &b)) goto out;
    r = max_rel(&b, &a);
out:
    outs_free(&a);
    outs_free(&b);
    t_free(&ref);
    return r;
}

/* The only live node is `op`, and its input `in` is an initializer. */
static bool only_op_reading_initializer(T *t, const char *op, int in)
{
    if (live_count(&t->g, NULL) != 1) return false;
    const ig_node *n = find_op(&t->g, op);
    if (!n || n->n_inputs <= in || n->inputs[in] < 0) return false;
    const ig_value *w = &t->g.values[n->inputs[in]];
    return (w->flags & IG_VAL_INITIALIZER) && w->producer < 0;
}

/* x [batch, 32, 6, 6] -> Conv with W' = (W - mean(W)) / sqrt(var(W) + eps), W [64, 32, 3, 3] (72 KiB) */
static void build_weight_std(T *t)
{
    int64_t xd[4] = {2, 32, 6, 6}, wd[4] = {64, 32, 3, 3}, axes[3] = {1, 2, 3};
    in_f(t, "x", 4, xd);
    rand_f(t, "W", 4, wd, -1, 1);
    t_i64(t, "axes", 3, axes);
    scalar_f(t, "eps", 1e-5f);
    nd(t, "m", "ReduceMean", "W,axes", "m")->opset = 18;
    nd(t, "c", "Sub", "W,m", "c");
    nd(t, "sq", "Mul", "c,c", "sq");
    nd(t, "v", "ReduceMean", "sq,axes", "v")->opset = 18;
    nd(t, "ve", "Add", "v,eps", "ve");
    nd(t, "s", "Sqrt", "ve", "s");
    nd(t, "wn", "Div", "c,s", "wn");
    ig_node *c = nd(t, "conv", "Conv", "x,wn", "y");
    a_ints(t, c, "pads", 4, (int64_t[]){1, 1, 1, 1});
    t_io(t, "x", "y");
}

TEST(weight_standardisation_folds)
{
    T t;
    double r = fold_equiv(build_weight_std, &t, NULL);
    ASSERT(r >= 0 && r < 1e-5);
    ASSERT(only_op_reading_initializer(&t, "Conv", 1));
    t_free(&t);
}

/* ConvNeXt-V2 style: W / ReduceL2(W) over the input dim, the result feeding a MatMul */
static void build_l2_normalised(T *t)
{
    int64_t xd[2] = {3, 256}, wd[2] = {256, 128}, ax = 0;
    in_f(t, "x", 2, xd);
    rand_f(t, "W", 2, wd, -1, 1);
    t_i64(t, "ax", 1, &ax);
    nd(t, "n", "ReduceL2", "W,ax", "n")->opset = 18;
    nd(t, "wn", "Div", "W,n", "wn");
    nd(t, "mm", "MatMul", "x,wn", "y");
    t_io(t, "x", "y");
}

TEST(l2_normalised_weight_folds)
{
    T t;
    double r = fold_equiv(build_l2_normalised, &t, NULL);
    ASSERT(r >= 0 && r < 1e-5);
    ASSERT(only_op_reading_initializer(&t, "MatMul", 1) || only_op_reading_initializer(&t, "Gemm", 1) ||
           live_count(&t.g, NULL) == 1);
    t_free(&t);
}

/* timm StdConv2d: Reshape(W, [1, 64, -1]) -> BatchNormalization(training_mode=1) -> Reshape -> Conv */
static void build_bn_training(T *t)
{
    int64_t xd[4] = {2, 32, 6, 6}, wd[4] = {64, 32, 3, 3}, c = 64, s1[3] = {1, 64, -1}, s2[4] = {64, 32, 3, 3};
    in_f(t, "x", 4, xd);
    rand_f(t, "W", 4, wd, -1, 1);
    t_i64(t, "s1", 3, s1);
    t_i64(t, "s2", 4, s2);
    float ones[64], zeros[64];
    for (int i = 0; i < 64; i++) ones[i] = 1, zeros[i] = 0;
    t_f32(t, "g", 1, &c, ones);
    t_f32(t, "b", 1, &c, zeros);
    t_f32(t, "rm", 1, &c, zeros);
    t_f32(t, "rv", 1, &c, ones);
    nd(t, "r1", "Reshape", "W,s1", "w3");
    ig_node *bn = nd(t, "bn", "BatchNormalization", "w3,g,b,rm,rv", "wb,run_mean,run_var");
    bn->opset = 15;
    a_int(bn, "training_mode", 1);
    a_float(bn, "momentum", 0.0f);
    nd(t, "r2", "Reshape", "wb,s2", "wn");
    nd(t, "conv", "Conv", "x,wn", "y");
    t_io(t, "x", "y");
}

TEST(batchnorm_training_on_a_constant_folds)
{
    T t;
    bool unsupported = false;
    double r = fold_equiv(build_bn_training, &t, &unsupported);
    if (unsupported) {
        /* BatchNormalization's descriptor (src/ops/norm.c) does not hand training_mode=1 to
         * ig__bn_training_infer/ig__bn_training_cpu yet: nothing to fold */
        printf("note: BatchNormalization training_mode=1 is still rejected by norm.c; fold not checked\n");
        t_free(&t);
        return;
    }
    ASSERT(r >= 0 && r < 1e-5);
    ASSERT(only_op_reading_initializer(&t, "Conv", 1));
    /* the folded filter is standardised: per output channel, mean 0 and variance 1 (eps aside) */
    const ig_value *w = &t.g.values[find_op(&t.g, "Conv")->inputs[1]];
    const float *wf = w->c.data;
    for (int o = 0; o < 64; o += 21) {
        double m = 0, v = 0;
        for (int i = 0; i < 288; i++) m += wf[o * 288 + i] / 288.0;
        for (int i = 0; i < 288; i++) v += (wf[o * 288 + i] - m) * (wf[o * 288 + i] - m) / 288.0;
        ASSERT_NEAR(m, 0, 1e-5);
        ASSERT_NEAR(v, 1, 1e-3);
    }
    t_free(&t);
}

TEST_MAIN(RUN(weight_standardisation_folds); RUN(l2_normalised_weight_folds);
          RUN(batchnorm_training_on_a_constant_folds))
