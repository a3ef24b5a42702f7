/*
 * test_ops_shape.c -- the shape and movement op families (src/ops/shape.c, src/ops/movement.c):
 * inference with symbolic dims and symbolic element values (the PyTorch attention export chain),
 * error messages, and CPU kernels checked against naive index arithmetic on random shapes.
 */
#include "ops/op.h"
#include "test.h"

#include "graph_builder.h"

/* the symbolic element values as "[batch,-1,12]" */
static const char *vals(T *t, const char *name)
{
    static char buf[8][256];
    static int k;
    char *b = buf[k++ % 8];
    ig_value *v = V(t, name);
    if (v->n_sym <= 0) return "none";
    size_t off = (size_t)snprintf(b, 256, "[");
    for (int i = 0; i < v->n_sym; i++) {
        char d[64];
        off += (size_t)snprintf(b + off, 256 - off, "%s%s", i ? "," : "", ig__dim_str(&t->g, v->sym[i], d, sizeof d));
    }
    snprintf(b + off, 256 - off, "]");
    return b;
}

static int64_t geti(const ig_tensor *te, int64_t k) { return ig__elem_i64(te->dtype, te->data, k); }

/* ====================================================================================================
 * Inference: the attention export chain
 * ==================================================================================================== */

/* x:[batch,seq,768] -> Shape -> Gather(0) -> Unsqueeze -> Concat([b], [-1], [12], [64]) -> Reshape */
TEST(chain_attention_reshape)
{
    T t;
    t_init(&t);
    ig_dim xd[3] = {S(&t, "batch"), S(&t, "seq"), D(768)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 3, xd);
    t_scalar_i64(&t, "i0", 0);
    t_scalar_i64(&t, "i1", 1);
    int64_t zero = 0, m1 = -1, c12 = 12, c64 = 64;
    t_i64(&t, "ax0", 1, &zero);
    t_i64(&t, "m1", 1, &m1);
    t_i64(&t, "c12", 1, &c12);
    t_i64(&t, "c64", 1, &c64);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Shape", 17, "x", "s")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "s"), "[3]");
    ASSERT_STREQ(vals(&t, "s"), "[batch,seq,768]");
    ASSERT_EQ(t_infer(&t, t_node(&t, "Gather", 17, "s,i0", "b")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "b"), "[]");
    ASSERT_STREQ(vals(&t, "b"), "[batch]");
    ASSERT_EQ(t_infer(&t, t_node(&t, "Gather", 17, "s,i1", "q")), INGOT_OK);
    ASSERT_STREQ(vals(&t, "q"), "[seq]");
    ASSERT_EQ(t_infer(&t, t_node(&t, "Unsqueeze", 17, "b,ax0", "bu")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "bu"), "[1]");
    ASSERT_STREQ(vals(&t, "bu"), "[batch]");
    ig_node *cn = t_node(&t, "Concat", 17, "bu,m1,c12,c64", "shape");
    a_int(cn, "axis", 0);
    ASSERT_EQ(t_infer(&t, cn), INGOT_OK);
    ASSERT_STREQ(shp(&t, "shape"), "[4]");
    ASSERT_STREQ(vals(&t, "shape"), "[batch,-1,12,64]");
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 17, "x,shape", "y")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[batch,seq,12,64]");
    ASSERT_EQ(V(&t, "y")->shape.d[0].sym, xd[0].sym);
    ASSERT_EQ(V(&t, "y")->shape.d[1].sym, xd[1].sym);

    /* the same with both symbols gathered (opset 11 Unsqueeze with the axes attribute) */
    ig_node *u = t_node(&t, "Unsqueeze", 11, "q", "qu");
    a_ints(&t, u, "axes", 1, &zero);
    ASSERT_EQ(t_infer(&t, u), INGOT_OK);
    cn = t_node(&t, "Concat", 11, "bu,qu,c12,c64", "shape2");
    a_int(cn, "axis", 0);
    ASSERT_EQ(t_infer(&t, cn), INGOT_OK);
    ASSERT_STREQ(vals(&t, "shape2"), "[batch,seq,12,64]");
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 11, "x,shape2", "y2")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y2"), "[batch,seq,12,64]");

    /* ... and back: Transpose, then Reshape to [batch, -1, 768] */
    ig_node *tr = t_node(&t, "Transpose", 13, "y2", "yt");
    int64_t perm[4] = {0, 2, 1, 3};
    a_ints(&t, tr, "perm", 4, perm);
    ASSERT_EQ(t_infer(&t, tr), INGOT_OK);
    ASSERT_STREQ(shp(&t, "yt"), "[batch,12,seq,64]");
    int64_t c768 = 768;
    t_i64(&t, "c768", 1, &c768);
    cn = t_node(&t, "Concat", 13, "bu,m1,c768", "shape3");
    a_int(cn, "axis", 0);
    ASSERT_EQ(t_infer(&t, cn), INGOT_OK);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 13, "y2,shape3", "y3")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y3"), "[batch,seq,768]");
    t_free(&t);
}

TEST(reshape_symbolic_minus_one)
{
    T t;
    t_init(&t);
    ig_dim xd[3] = {S(&t, "batch"), D(128), D(768)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 3, xd);
    int64_t s1[2] = {-1, 768}, s2[4] = {0, 0, 12, 64}, s3[3] = {0, -1, 64}, s4[2] = {-1, 7};
    t_i64(&t, "s1", 2, s1);
    t_i64(&t, "s2", 4, s2);
    t_i64(&t, "s3", 3, s3);
    t_i64(&t, "s4", 2, s4);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 14, "x,s1", "y1")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y1"), "[128*batch,768]");
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 14, "x,s2", "y2")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y2"), "[batch,128,12,64]");
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 14, "x,s3", "y3")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y3"), "[batch,1536,64]");
    /* [128*batch, 768] back to [batch*128, 12, 64] via 0 copies and -1 */
    int64_t s5[3] = {0, 12, 64};
    t_i64(&t, "s5", 3, s5);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 14, "y1,s5", "y5")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y5"), "[128*batch,12,64]");
    /* 768 is not a multiple of 7: the -1 cannot be expressed, a fresh dim is made */
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 14, "x,s4", "y4")), INGOT_OK);
    ASSERT_CONTAINS(shp(&t, "y4"), "unk__");

    /* known shapes that do not match fail naming both */
    ig_dim kd[2] = {D(4), D(6)};
    t_input(&t, "k", INGOT_DTYPE_FLOAT, 2, kd);
    int64_t bad[2] = {5, 5}, bad2[2] = {-1, 5}, two[2] = {-1, -1};
    t_i64(&t, "bad", 2, bad);
    t_i64(&t, "bad2", 2, bad2);
    t_i64(&t, "two", 2, two);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 14, "k,bad", "kb")), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "cannot reshape [4,6] (24 elements) to [5,5]");
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 14, "k,bad2", "kb2")), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "does not divide evenly");
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 14, "k,two", "kb3")), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "more than one -1");

    /* allowzero=1 keeps a real 0 */
    ig_dim ed[2] = {D(0), D(3)};
    t_input(&t, "e", INGOT_DTYPE_FLOAT, 2, ed);
    int64_t z[3] = {3, 0, 1};
    t_i64(&t, "z", 3, z);
    ig_node *n = t_node(&t, "Reshape", 14, "e,z", "ez");
    a_int(n, "allowzero", 1);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "ez"), "[3,0,1]");

    /* a shape operand computed at run time: rank known, dims fresh */
    ig_dim rd[1] = {D(3)};
    t_input(&t, "rt", INGOT_DTYPE_INT64, 1, rd);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 14, "x,rt", "yr")), INGOT_OK);
    ASSERT_EQ(V(&t, "yr")->shape.rank, 3);
    ASSERT(!ig__dim_known(V(&t, "yr")->shape.d[0]));
    ig_dim ud[1] = {S(&t, "n")};
    t_input(&t, "rt2", INGOT_DTYPE_INT64, 1, ud);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 14, "x,rt2", "yr2")), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "input 'rt2' must be known when the engine is built");
    t_free(&t);
}

TEST(reshape_two_symbols)
{
    T t;
    t_init(&t);
    ig_dim xd[4] = {S(&t, "batch"), S(&t, "seq"), D(12), D(64)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 4, xd);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Shape", 13, "x", "s")), INGOT_OK);
    int64_t zero = 0, c768 = 768, m1 = -1;
    t_scalar_i64(&t, "i0", 0);
    t_i64(&t, "ax0", 1, &zero);
    t_i64(&t, "c768", 1, &c768);
    t_i64(&t, "m1", 1, &m1);
    /* Reshape(x, [batch, -1, 768]): -1 = (batch*seq*768) / (batch*768) = seq */
    ASSERT_EQ(t_infer(&t, t_node(&t, "Gather", 13, "s,i0", "b")), INGOT_OK);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Unsqueeze", 13, "b,ax0", "bu")), INGOT_OK);
    ig_node *cn = t_node(&t, "Concat", 13, "bu,m1,c768", "shape");
    a_int(cn, "axis", 0);
    ASSERT_EQ(t_infer(&t, cn), INGOT_OK);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 13, "x,shape", "y")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[batch,seq,768]");
    /* Slice(Shape, 0, 2) then Concat with [768]: [batch, seq, 768] */
    int64_t st0 = 0, en2 = 2;
    t_i64(&t, "st0", 1, &st0);
    t_i64(&t, "en2", 1, &en2);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Slice", 13, "s,st0,en2", "s2")), INGOT_OK);
    ASSERT_STREQ(vals(&t, "s2"), "[batch,seq]");
    cn = t_node(&t, "Concat", 13, "s2,c768", "shape2");
    a_int(cn, "axis", 0);
    ASSERT_EQ(t_infer(&t, cn), INGOT_OK);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 13, "x,shape2", "y2")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y2"), "[batch,seq,768]");
    /* [-1, 768]: batch*seq cannot be one dim, so a fresh one */
    int64_t s3[2] = {-1, 768};
    t_i64(&t, "s3", 2, s3);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Reshape", 13, "x,s3", "y3")), INGOT_OK);
    ASSERT_CONTAINS(shp(&t, "y3"), "unk__");
    ASSERT_CONTAINS(shp(&t, "y3"), ",768]");
    t_free(&t);
}

/* ====================================================================================================
 * Inference: each op
 * ==================================================================================================== */

TEST(infer_constant)
{
    T t;
    t_init(&t);
    ig_node *n = t_node(&t, "Constant", 13, "", "c");
    int64_t v[3] = {2, -1, 64};
    a_ints(&t, n, "value_ints", 3, v);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ig_value *c = V(&t, "c");
    ASSERT(c->flags & IG_VAL_CONST);
    ASSERT_EQ(c->dtype, INGOT_DTYPE_INT64);
    ASSERT_STREQ(shp(&t, "c"), "[3]");
    ASSERT_STREQ(vals(&t, "c"), "[2,-1,64]");
    ASSERT_EQ(c->c.n_bytes, 24);
    ASSERT_EQ(ig__load_i64((const char *)c->c.data + 16), 64);

    n = t_node(&t, "Constant", 13, "", "f");
    ig_attr *a = &n->attrs[n->n_attrs++];
    a->name = "value_float";
    a->type = IG_ATTR_FLOAT;
    a->f = 2.5f;
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "f"), "[]");
    ASSERT_EQ(V(&t, "f")->dtype, INGOT_DTYPE_FLOAT);
    ASSERT_NEAR(ig__load_f32(V(&t, "f")->c.data), 2.5, 0);

    /* value: a tensor attribute */
    n = t_node(&t, "Constant", 9, "", "tv");
    static ig_const tc;
    static const int32_t tdata[6] = {1, 2, 3, 4, 5, 6};
    tc.dtype = INGOT_DTYPE_INT32;
    tc.rank = 2;
    tc.dims[0] = 2;
    tc.dims[1] = 3;
    tc.data = tdata;
    tc.n_bytes = sizeof tdata;
    a = &n->attrs[n->n_attrs++];
    a->name = "value";
    a->type = IG_ATTR_TENSOR;
    a->t = &tc;
    R r;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "tv"), "[2,3]");
    ASSERT_EQ(((int32_t *)r.out[0].data)[5], 6);
    r_free(&r);

    n = t_node(&t, "Constant", 13, "", "s");
    a_str(n, "value_string", "hello");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "attribute 'value_string': string constants are not supported");
    n = t_node(&t, "Constant", 13, "", "sp");
    a = &n->attrs[n->n_attrs++];
    a->name = "sparse_value";
    a->type = IG_ATTR_SPARSE_TENSOR;
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "sparse_value");
    n = t_node(&t, "Constant", 13, "", "none");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "node 'Constant' (Constant): needs one of the attributes");
    t_free(&t);
}

TEST(infer_shape_opset15)
{
    T t;
    t_init(&t);
    ig_dim xd[4] = {S(&t, "batch"), D(3), S(&t, "h"), D(224)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT16, 4, xd);
    ig_node *n = t_node(&t, "Shape", 15, "x", "s");
    a_int(n, "start", 1);
    a_int(n, "end", -1);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "s"), "[2]");
    ASSERT_STREQ(vals(&t, "s"), "[3,h]");
    n = t_node(&t, "Shape", 15, "x", "s2");
    a_int(n, "start", -10);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(vals(&t, "s2"), "[batch,3,h,224]");
    ASSERT(!(V(&t, "s2")->flags & IG_VAL_CONST));
    /* a fully known input shape makes Shape's output a constant: the shape sub-graph folds */
    ig_dim kd[2] = {D(5), D(7)};
    t_input(&t, "k", INGOT_DTYPE_BOOL, 2, kd);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Shape", 13, "k", "ks")), INGOT_OK);
    ASSERT(V(&t, "ks")->flags & IG_VAL_CONST);
    ASSERT_EQ(V(&t, "ks")->c.n_bytes, 16);
    ASSERT_EQ(ig__load_i64((const char *)V(&t, "ks")->c.data + 8), 7);
    /* before opset 15 the attributes do not exist */
    n = t_node(&t, "Shape", 13, "x", "s3");
    a_int(n, "start", 2);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "s3"), "[4]");
    t_free(&t);
}

TEST(infer_constant_of_shape_range_expand_tile)
{
    T t;
    t_init(&t);
    ig_dim xd[2] = {S(&t, "batch"), S(&t, "seq")};
    t_input(&t, "ids", INGOT_DTYPE_INT64, 2, xd);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Shape", 13, "ids", "s")), INGOT_OK);
    ASSERT_EQ(t_infer(&t, t_node(&t, "ConstantOfShape", 13, "s", "ones")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "ones"), "[batch,seq]");
    ASSERT_EQ(V(&t, "ones")->dtype, INGOT_DTYPE_FLOAT);

    /* position ids: Range(0, seq, 1) -> [seq], then Unsqueeze and Expand to [batch, seq] */
    t_scalar_i64(&t, "zero", 0);
    t_scalar_i64(&t, "one", 1);
    t_scalar_i64(&t, "i1", 1);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Gather", 13, "s,i1", "seqlen")), INGOT_OK);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Range", 13, "zero,seqlen,one", "pos")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "pos"), "[seq]");
    int64_t ax0 = 0;
    t_i64(&t, "ax0", 1, &ax0);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Unsqueeze", 13, "pos,ax0", "pos2")), INGOT_OK);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Expand", 13, "pos2,s", "posb")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "posb"), "[batch,seq]");

    /* constant range: values folded into sym values */
    t_scalar_i64(&t, "ten", 10);
    t_scalar_i64(&t, "three", 3);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Range", 13, "one,ten,three", "r")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "r"), "[3]");
    ASSERT_STREQ(vals(&t, "r"), "[1,4,7]");
    t_scalar_i64(&t, "dz", 0);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Range", 13, "one,ten,dz", "rz")), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "delta is 0");

    /* Expand: bidirectional broadcast */
    ig_dim ed[3] = {D(3), D(1), D(5)};
    t_input(&t, "e", INGOT_DTYPE_BOOL, 3, ed);
    int64_t es[2] = {4, 1};
    t_i64(&t, "es", 2, es);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Expand", 13, "e,es", "eo")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "eo"), "[3,4,5]");
    int64_t eb[1] = {4};
    t_i64(&t, "eb", 1, eb);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Expand", 13, "e,eb", "ebad")), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "cannot be broadcast");

    /* Tile with symbolic dims */
    int64_t reps[2] = {2, 3};
    t_i64(&t, "reps", 2, reps);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Tile", 13, "ids,reps", "tt")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "tt"), "[2*batch,3*seq]");
    int64_t reps3[3] = {1, 1, 1};
    t_i64(&t, "reps3", 3, reps3);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Tile", 13, "ids,reps3", "tbad")), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "'repeats' has 3 entries for an input of rank 2");
    t_free(&t);
}

TEST(infer_flatten_squeeze_unsqueeze)
{
    T t;
    t_init(&t);
    ig_dim xd[4] = {S(&t, "batch"), D(1), D(7), D(7)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 4, xd);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Flatten", 13, "x", "f1")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "f1"), "[batch,49]");
    ig_node *n = t_node(&t, "Flatten", 13, "x", "f2");
    a_int(n, "axis", -1);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "f2"), "[7*batch,7]");
    n = t_node(&t, "Flatten", 13, "x", "f3");
    a_int(n, "axis", 4);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "f3"), "[49*batch,1]");
    n = t_node(&t, "Flatten", 13, "x", "f4");
    a_int(n, "axis", 5);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "attribute 'axis' 5 is out of range for rank 4");

    ASSERT_EQ(t_infer(&t, t_node(&t, "Squeeze", 13, "x", "q1")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "q1"), "[batch,7,7]");
    n = t_node(&t, "Squeeze", 11, "x", "q2");
    int64_t ax[1] = {-3};
    a_ints(&t, n, "axes", 1, ax);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "q2"), "[batch,7,7]");
    int64_t bad = 2;
    t_i64(&t, "bad", 1, &bad);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Squeeze", 13, "x,bad", "q3")), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "cannot squeeze axis 2 of size 7");

    int64_t uax[2] = {0, -1};
    t_i64(&t, "uax", 2, uax);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Unsqueeze", 13, "x,uax", "u1")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "u1"), "[1,batch,1,7,7,1]");
    ASSERT_EQ(t_infer(&t, t_node(&t, "Unsqueeze", 13, "x", "u2")), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "input 'axes' is required");
    int64_t dup[2] = {1, 1};
    t_i64(&t, "dup", 2, dup);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Unsqueeze", 13, "x,dup", "u3")), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "axis 1 is listed twice");

    /* axes bound only at run time (a graph input of known length): the rank is known, dims are fresh */
    ig_dim ad[1] = {D(2)};
    t_input(&t, "rax", INGOT_DTYPE_INT64, 1, ad);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Unsqueeze", 13, "x,rax", "u4")), INGOT_OK);
    ASSERT_EQ(V(&t, "u4")->shape.rank, 6);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Squeeze", 13, "x,rax", "q4")), INGOT_OK);
    ASSERT_EQ(V(&t, "q4")->shape.rank, 2);

    /* values survive Squeeze/Unsqueeze of shape vectors */
    ASSERT_EQ(t_infer(&t, t_node(&t, "Shape", 13, "x", "s")), INGOT_OK);
    int64_t one = 1, i0 = 0;
    t_i64(&t, "st", 1, &i0);
    t_i64(&t, "en", 1, &one);
    t_i64(&t, "a0", 1, &i0);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Slice", 13, "s,st,en", "s0")), INGOT_OK);
    ASSERT_STREQ(vals(&t, "s0"), "[batch]");
    ASSERT_EQ(t_infer(&t, t_node(&t, "Squeeze", 13, "s0,a0", "sq")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "sq"), "[]");
    ASSERT_STREQ(vals(&t, "sq"), "[batch]");
    t_free(&t);
}

TEST(infer_transpose_concat_split)
{
    T t;
    t_init(&t);
    ig_dim xd[3] = {S(&t, "batch"), D(4), D(6)};
    t_input(&t, "x", INGOT_DTYPE_BFLOAT16, 3, xd);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Transpose", 13, "x", "t1")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "t1"), "[6,4,batch]");
    ig_node *n = t_node(&t, "Transpose", 13, "x", "t2");
    int64_t bad[3] = {0, 0, 1};
    a_ints(&t, n, "perm", 3, bad);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "attribute 'perm' is not a permutation");

    ig_dim yd[3] = {S(&t, "batch"), D(2), D(6)};
    t_input(&t, "y", INGOT_DTYPE_BFLOAT16, 3, yd);
    n = t_node(&t, "Concat", 13, "x,y", "c1");
    a_int(n, "axis", -2);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "c1"), "[batch,6,6]");
    n = t_node(&t, "Concat", 13, "x,y", "c2");
    a_int(n, "axis", 2);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "input 1 'y' has 2 at axis 1 where earlier inputs have 4");
    n = t_node(&t, "Concat", 13, "x,x", "c3");
    a_int(n, "axis", 0);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "c3"), "[2*batch,4,6]");
    ASSERT_EQ(t_infer(&t, t_node(&t, "Concat", 13, "x,y", "c4")), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "attribute 'axis' is required");

    /* Split: attribute (opset 11), input (13), num_outputs uneven (18) */
    n = t_node(&t, "Split", 11, "x", "p1,p2");
    int64_t sp[2] = {1, 5};
    a_int(n, "axis", 2);
    a_ints(&t, n, "split", 2, sp);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "p1"), "[batch,4,1]");
    ASSERT_STREQ(shp(&t, "p2"), "[batch,4,5]");
    n = t_node(&t, "Split", 13, "x", "q1,q2,q3");
    a_int(n, "axis", -1);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "q3"), "[batch,4,2]");
    n = t_node(&t, "Split", 13, "x", "w1,w2,w3,w4");
    a_int(n, "axis", -1);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "cannot be split evenly into 4 outputs");
    n = t_node(&t, "Split", 18, "x", "v1,v2,v3,v4");
    a_int(n, "axis", -1);
    a_int(n, "num_outputs", 4);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "v1"), "[batch,4,2]");
    ASSERT_STREQ(shp(&t, "v4"), "[batch,4,0]");
    int64_t sp2[2] = {2, 3};
    t_i64(&t, "sp2", 2, sp2);
    n = t_node(&t, "Split", 13, "x,sp2", "z1,z2");
    a_int(n, "axis", 2);
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "'split' sums to 5 but axis 2 has 6");
    /* splitting the symbolic axis in two: 2*batch -> batch, batch */
    n = t_node(&t, "Split", 13, "c3", "h1,h2");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "h2"), "[batch,4,6]");
    t_free(&t);
}

TEST(infer_slice)
{
    T t;
    t_init(&t);
    ig_dim xd[3] = {S(&t, "batch"), S(&t, "seq"), D(10)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 3, xd);
    int64_t st[3] = {0, -1, 8}, en[3] = {INT64_MAX, INT64_MAX, 2}, ax[3] = {0, 1, 2}, sp[3] = {1, 1, -2};
    t_i64(&t, "st", 3, st);
    t_i64(&t, "en", 3, en);
    t_i64(&t, "ax", 3, ax);
    t_i64(&t, "sp", 3, sp);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Slice", 13, "x,st,en,ax,sp", "y")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[batch,1,3]");
    /* opset 1: attributes, ends clamp */
    ig_node *n = t_node(&t, "Slice", 1, "x", "y1");
    int64_t s1[1] = {2}, e1[1] = {1000}, a1[1] = {-1};
    a_ints(&t, n, "starts", 1, s1);
    a_ints(&t, n, "ends", 1, e1);
    a_ints(&t, n, "axes", 1, a1);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y1"), "[batch,seq,8]");
    /* reverse a symbolic axis: x[:, ::-1] */
    int64_t rs = -1, re = INT64_MIN, ra = 1, rstep = -1;
    t_i64(&t, "rs", 1, &rs);
    t_i64(&t, "re", 1, &re);
    t_i64(&t, "ra", 1, &ra);
    t_i64(&t, "rstep", 1, &rstep);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Slice", 13, "x,rs,re,ra,rstep", "yr")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "yr"), "[batch,seq,10]");
    /* position_ids[:, :seq] with seq from Shape: the symbolic end is the length */
    ig_dim pd[2] = {D(1), D(512)};
    t_input(&t, "pid", INGOT_DTYPE_INT64, 2, pd);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Shape", 13, "x", "s")), INGOT_OK);
    int64_t one = 1, two = 2, zero = 0;
    t_i64(&t, "c1", 1, &one);
    t_i64(&t, "c2", 1, &two);
    t_i64(&t, "c0", 1, &zero);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Slice", 13, "s,c1,c2", "seqv")), INGOT_OK);
    ASSERT_STREQ(vals(&t, "seqv"), "[seq]");
    ASSERT_EQ(t_infer(&t, t_node(&t, "Slice", 13, "pid,c0,seqv,c1", "pids")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "pids"), "[1,seq]");
    /* Shape(x)[-2:] */
    int64_t m2 = -2, big = INT64_MAX;
    t_i64(&t, "m2", 1, &m2);
    t_i64(&t, "big", 1, &big);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Slice", 13, "s,m2,big", "tail")), INGOT_OK);
    ASSERT_STREQ(vals(&t, "tail"), "[seq,10]");
    /* errors */
    int64_t zs = 0;
    t_i64(&t, "zs", 1, &zs);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Slice", 13, "x,c0,c1,c0,zs", "e1")), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "step for axis 0 is 0");
    int64_t a5 = 5;
    t_i64(&t, "a5", 1, &a5);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Slice", 13, "x,c0,c1,a5", "e2")), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "slice axis 5 is out of range for rank 3");
    /* starts computed at run time: sliced axes get fresh dims, others keep theirs */
    ig_dim rd[1] = {D(1)};
    t_input(&t, "rst", INGOT_DTYPE_INT64, 1, rd);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Slice", 13, "x,rst,c2,c1", "e3")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "e3"), "[batch,unk__2,10]");
    t_free(&t);
}

TEST(infer_slice_runtime_bounds)
{
    T t;
    t_init(&t);
    ig_dim xd[3] = {D(4), D(5), D(6)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 3, xd);
    ig_dim rd[1] = {D(1)};
    t_input(&t, "rst", INGOT_DTYPE_INT64, 1, rd);
    int64_t two = 2, one = 1;
    t_i64(&t, "c2", 1, &two);
    t_i64(&t, "ax", 1, &one);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Slice", 13, "x,rst,c2,ax", "y")), INGOT_OK);
    ig_value *y = V(&t, "y");
    ASSERT_EQ(y->shape.rank, 3);
    ASSERT_EQ(y->shape.d[0].n, 4);
    ASSERT(!ig__dim_known(y->shape.d[1]));
    ASSERT_EQ(y->shape.d[2].n, 6);
    /* no axes: the length of starts says which axes */
    ASSERT_EQ(t_infer(&t, t_node(&t, "Slice", 13, "x,rst,c2", "y2")), INGOT_OK);
    ASSERT(!ig__dim_known(V(&t, "y2")->shape.d[0]));
    ASSERT_EQ(V(&t, "y2")->shape.d[1].n, 5);
    t_free(&t);
}

TEST(infer_gather_pad)
{
    T t;
    t_init(&t);
    ig_dim ed[2] = {D(30522), D(768)};
    t_input(&t, "emb", INGOT_DTYPE_FLOAT, 2, ed);
    ig_dim id[2] = {S(&t, "batch"), S(&t, "seq")};
    t_input(&t, "ids", INGOT_DTYPE_INT64, 2, id);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Gather", 13, "emb,ids", "h")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "h"), "[batch,seq,768]");
    ig_node *n = t_node(&t, "Gather", 13, "h,ids", "h2");
    a_int(n, "axis", -1);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "h2"), "[batch,seq,batch,seq]");
    int64_t big = 40000;
    t_scalar_i64(&t, "big", big);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Gather", 13, "emb,big", "h3")), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "index 40000 is out of range for axis 0 of size 30522");
    ig_dim fd[1] = {D(3)};
    t_input(&t, "fidx", INGOT_DTYPE_FLOAT, 1, fd);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Gather", 13, "emb,fidx", "h4")), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "input 1 'fidx' has dtype float32");
    /* Gather(Shape(x), -1) */
    ASSERT_EQ(t_infer(&t, t_node(&t, "Shape", 13, "ids", "s")), INGOT_OK);
    t_scalar_i64(&t, "m1", -1);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Gather", 13, "s,m1", "last")), INGOT_OK);
    ASSERT_STREQ(vals(&t, "last"), "[seq]");

    ig_dim xd[4] = {S(&t, "batch"), D(3), D(32), D(32)};
    t_input(&t, "x", INGOT_DTYPE_FLOAT, 4, xd);
    int64_t pads[8] = {0, 0, 1, 2, 0, 0, 1, -3};
    t_i64(&t, "pads", 8, pads);
    n = t_node(&t, "Pad", 13, "x,pads", "p");
    a_str(n, "mode", "reflect");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "p"), "[batch,3,34,31]");
    n = t_node(&t, "Pad", 2, "x", "p2");
    int64_t pads2[8] = {0, 0, 2, 2, 0, 0, 2, 2};
    a_ints(&t, n, "pads", 8, pads2);
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    ASSERT_STREQ(shp(&t, "p2"), "[batch,3,36,36]");
    /* opset 18 axes */
    int64_t pa[2] = {1, 3}, axs[2] = {-1, -2};
    t_i64(&t, "pa", 2, pa);
    t_i64(&t, "paxes", 1, axs);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Pad", 18, "x,pa,,paxes", "p3")), INGOT_OK);
    ASSERT_STREQ(shp(&t, "p3"), "[batch,3,32,36]");
    n = t_node(&t, "Pad", 13, "x,pads", "p4");
    a_str(n, "mode", "wrap");
    ASSERT_EQ(t_infer(&t, n), INGOT_ERR_MODEL_UNSUPPORTED_OP);
    ASSERT_CONTAINS(t.err.msg, "attribute 'mode' value 'wrap' is not supported");
    n = t_node(&t, "Pad", 19, "x,pads", "p5");
    a_str(n, "mode", "wrap");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    int64_t crop[8] = {0, 0, 0, 0, 0, 0, 0, -40};
    t_i64(&t, "crop", 8, crop);
    ASSERT_EQ(t_infer(&t, t_node(&t, "Pad", 13, "x,crop", "p6")), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(t.err.msg, "crop more than axis 3's 32 elements");
    t_free(&t);
}

/* ====================================================================================================
 * CPU kernels
 * ==================================================================================================== */

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static const ingot_dtype some_types[] = {INGOT_DTYPE_FLOAT, INGOT_DTYPE_INT64,   INGOT_DTYPE_FLOAT16,
                                         INGOT_DTYPE_UINT8, INGOT_DTYPE_BOOL,    INGOT_DTYPE_DOUBLE,
                                         INGOT_DTYPE_INT32, INGOT_DTYPE_BFLOAT16};

/* A constant tensor of random bytes (as element ids: element k holds a value derived from k). */
static ig_value *t_rand(T *t, const char *name, ingot_dtype dt, int rank, const int64_t *dims)
{
    size_t n = 1, es = ingot_dtype_size(dt);
    for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
    uint8_t *p = ig__malloc(n * es + 1);
    for (size_t k = 0; k < n * es; k++) p[k] = (uint8_t)rnd();
    ig_value *v = t_const(t, name, dt, rank, dims, p);
    ig__free(p);
    return v;
}

static void unravel(int64_t i, int rank, const int64_t *dims, int64_t *c)
{
    for (int a = rank - 1; a >= 0; a--) {
        c[a] = i % dims[a];
        i /= dims[a];
    }
}

static int64_t ravel(int rank, const int64_t *dims, const int64_t *c)
{
    int64_t i = 0;
    for (int a = 0; a < rank; a++) i = i * dims[a] + c[a];
    return i;
}

static bool elem_eq(const ig_tensor *a, int64_t i, const ig_tensor *b, int64_t j)
{
    size_t es = ingot_dtype_size(a->dtype);
    return !memcmp((const char *)a->data + i * (int64_t)es, (const char *)b->data + j * (int64_t)es, es);
}

TEST(cpu_transpose_random)
{
    struct ig_pool *pool = ig__pool_create(2);
    for (int iter = 0; iter < 60; iter++) {
        T t;
        t_init(&t);
        int rank = 1 + (int)(rnd() % 5);
        int64_t dims[IG_MAX_RANK], perm[IG_MAX_RANK], numel = 1;
        for (int a = 0; a < rank; a++) {
            /* the last iterations use larger dims (the tiled path), kept under ~1M elements */
            int64_t cap = iter < 50 || numel > 20000 ? 7 : 70;
            dims[a] = 1 + (int64_t)(rnd() % (uint64_t)cap);
            numel *= dims[a];
            perm[a] = a;
        }
        for (int a = rank - 1; a > 0; a--) {
            int b = (int)(rnd() % (uint64_t)(a + 1));
            int64_t x = perm[a];
            perm[a] = perm[b];
            perm[b] = x;
        }
        ingot_dtype dt = some_types[iter % 8];
        t_rand(&t, "x", dt, rank, dims);
        ig_node *n = t_node(&t, "Transpose", 13, "x", "y");
        a_ints(&t, n, "perm", rank, perm);
        R r;
        ASSERT_EQ(t_run(&t, n, iter % 2 ? pool : NULL, &r), INGOT_OK);
        int64_t c[IG_MAX_RANK], ci[IG_MAX_RANK];
        for (int64_t i = 0; i < r.out[0].numel; i++) {
            unravel(i, rank, r.out[0].dims, c);
            for (int a = 0; a < rank; a++) ci[perm[a]] = c[a];
            if (!elem_eq(&r.out[0], i, &r.in[0], ravel(rank, dims, ci))) {
                r_free(&r);
                t_free(&t);
                ig__pool_destroy(pool);
                TEST_FAIL_("transpose mismatch, iter %d element %" PRId64, iter, i);
            }
        }
        r_free(&r);
        t_free(&t);
    }
    /* a big 2-D transpose through the tiled path */
    T t;
    t_init(&t);
    int64_t dims[2] = {300, 517};
    t_rand(&t, "x", INGOT_DTYPE_FLOAT, 2, dims);
    R r;
    ASSERT_EQ(t_run(&t, t_node(&t, "Transpose", 13, "x", "y"), pool, &r), INGOT_OK);
    const float *x = r.in[0].data, *y = r.out[0].data;
    int bad = 0;
    for (int64_t i = 0; i < 300; i++)
        for (int64_t j = 0; j < 517; j++) bad += memcmp(&y[j * 300 + i], &x[i * 517 + j], 4) != 0;
    ASSERT_EQ(bad, 0);
    r_free(&r);
    t_free(&t);
    ig__pool_destroy(pool);
}

TEST(cpu_slice_random)
{
    for (int iter = 0; iter < 80; iter++) {
        T t;
        t_init(&t);
        int rank = 1 + (int)(rnd() % 4);
        int64_t dims[IG_MAX_RANK], st[IG_MAX_RANK], en[IG_MAX_RANK], ax[IG_MAX_RANK], sp[IG_MAX_RANK];
        for (int a = 0; a < rank; a++) dims[a] = (int64_t)(rnd() % 8);
        int n = 0;
        for (int a = 0; a < rank; a++) {
            if (rnd() % 3 == 0) continue;
            int64_t d = dims[a] + 2;
            st[n] = (int64_t)(rnd() % (uint64_t)(2 * d + 1)) - d;
            en[n] = (int64_t)(rnd() % (uint64_t)(2 * d + 1)) - d;
            if (rnd() % 5 == 0) en[n] = rnd() % 2 ? INT64_MAX : INT64_MIN;
            sp[n] = (int64_t)(rnd() % 7) - 3;
            if (sp[n] == 0) sp[n] = 1;
            ax[n] = rnd() % 2 ? a : a - rank;
            n++;
        }
        ingot_dtype dt = some_types[iter % 8];
        t_rand(&t, "x", dt, rank, dims);
        t_i64(&t, "st", n, st);
        t_i64(&t, "en", n, en);
        t_i64(&t, "ax", n, ax);
        t_i64(&t, "sp", n, sp);
        R r;
        ASSERT_EQ(t_run(&t, t_node(&t, "Slice", 13, "x,st,en,ax,sp", "y"), NULL, &r), INGOT_OK);
        /* reference: numpy-style clamping, written out independently */
        int64_t s0[IG_MAX_RANK], step[IG_MAX_RANK], len[IG_MAX_RANK];
        for (int a = 0; a < rank; a++) s0[a] = 0, step[a] = 1, len[a] = dims[a];
        for (int k = 0; k < n; k++) {
            int a = (int)(ax[k] < 0 ? ax[k] + rank : ax[k]);
            int64_t d = dims[a], s = st[k], e = en[k];
            if (s < 0) s += d;
            if (e < 0) e += d;
            step[a] = sp[k];
            if (sp[k] > 0) {
                s = s < 0 ? 0 : s > d ? d : s;
                e = e < 0 ? 0 : e > d ? d : e;
                len[a] = 0;
                for (int64_t i = s; i < e; i += sp[k]) len[a]++;
            } else if (d == 0) {
                len[a] = 0;
            } else {
                s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
                e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
                len[a] = 0;
                for (int64_t i = s; i > e; i += sp[k]) len[a]++;
            }
            s0[a] = s;
        }
        for (int a = 0; a < rank; a++) ASSERT_EQ(r.out[0].dims[a], len[a]);
        int64_t c[IG_MAX_RANK];
        for (int64_t i = 0; i < r.out[0].numel; i++) {
            unravel(i, rank, len, c);
            for (int a = 0; a < rank; a++) c[a] = s0[a] + c[a] * step[a];
            if (!elem_eq(&r.out[0], i, &r.in[0], ravel(rank, dims, c))) {
                r_free(&r);
                t_free(&t);
                TEST_FAIL_("slice mismatch, iter %d element %" PRId64, iter, i);
            }
        }
        r_free(&r);
        t_free(&t);
    }
}

TEST(cpu_concat_split_gather)
{
    struct ig_pool *pool = ig__pool_create(2);
    for (int iter = 0; iter < 40; iter++) {
        T t;
        t_init(&t);
        int rank = 1 + (int)(rnd() % 4), axis = (int)(rnd() % (uint64_t)rank);
        int64_t d1[IG_MAX_RANK], d2[IG_MAX_RANK];
        for (int a = 0; a < rank; a++) d1[a] = d2[a] = 1 + (int64_t)(rnd() % 6);
        d2[axis] = (int64_t)(rnd() % 4);
        ingot_dtype dt = some_types[iter % 8];
        t_rand(&t, "a", dt, rank, d1);
        t_rand(&t, "b", dt, rank, d2);
        ig_node *n = t_node(&t, "Concat", 13, "a,b,a", "c");
        a_int(n, "axis", axis);
        R r;
        ASSERT_EQ(t_run(&t, n, pool, &r), INGOT_OK);
        int64_t c[IG_MAX_RANK];
        for (int64_t i = 0; i < r.out[0].numel; i++) {
            unravel(i, rank, r.out[0].dims, c);
            const ig_tensor *src = &r.in[0];
            const int64_t *sd = d1;
            if (c[axis] >= d1[axis] + d2[axis])
                c[axis] -= d1[axis] + d2[axis];
            else if (c[axis] >= d1[axis])
                c[axis] -= d1[axis], src = &r.in[1], sd = d2;
            ASSERT(elem_eq(&r.out[0], i, src, ravel(rank, sd, c)));
        }
        r_free(&r);

        t_free(&t);
    }
    /* Split round trip on a fixed tensor */
    T t;
    t_init(&t);
    int64_t dims[3] = {2, 7, 3};
    t_rand(&t, "x", INGOT_DTYPE_INT16, 3, dims);
    int64_t sp[3] = {2, 0, 5};
    t_i64(&t, "sp", 3, sp);
    ig_node *n = t_node(&t, "Split", 13, "x,sp", "p,q,r");
    a_int(n, "axis", 1);
    R r;
    ASSERT_EQ(t_run(&t, n, pool, &r), INGOT_OK);
    ASSERT_EQ(r.out[1].numel, 0);
    for (int64_t i = 0; i < 2; i++)
        for (int64_t j = 0; j < 7; j++)
            for (int64_t k = 0; k < 3; k++) {
                const ig_tensor *o = j < 2 ? &r.out[0] : &r.out[2];
                int64_t jj = j < 2 ? j : j - 2, w = j < 2 ? 2 : 5;
                ASSERT(elem_eq(o, (i * w + jj) * 3 + k, &r.in[0], (i * 7 + j) * 3 + k));
            }
    r_free(&r);
    /* opset 18 uneven split */
    n = t_node(&t, "Split", 18, "x", "u1,u2,u3");
    a_int(n, "axis", 1);
    a_int(n, "num_outputs", 3);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(r.out[0].dims[1], 3);
    ASSERT_EQ(r.out[2].dims[1], 1);
    ASSERT(elem_eq(&r.out[2], 5, &r.in[0], 41));
    r_free(&r);

    /* Gather: negative indices, 0-D index, axis 1, int32 indices */
    int64_t ed[2] = {5, 4};
    t_rand(&t, "emb", INGOT_DTYPE_FLOAT, 2, ed);
    int32_t idx[3] = {4, -5, 2};
    int64_t three = 3;
    t_const(&t, "idx", INGOT_DTYPE_INT32, 1, &three, idx);
    ASSERT_EQ(t_run(&t, t_node(&t, "Gather", 13, "emb,idx", "g"), pool, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "g"), "[3,4]");
    for (int k = 0; k < 4; k++) {
        ASSERT(elem_eq(&r.out[0], k, &r.in[0], 16 + k));
        ASSERT(elem_eq(&r.out[0], 4 + k, &r.in[0], k));
        ASSERT(elem_eq(&r.out[0], 8 + k, &r.in[0], 8 + k));
    }
    r_free(&r);
    t_scalar_i64(&t, "i3", -1);
    n = t_node(&t, "Gather", 13, "emb,i3", "g2");
    a_int(n, "axis", 1);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "g2"), "[5]");
    for (int k = 0; k < 5; k++) ASSERT(elem_eq(&r.out[0], k, &r.in[0], k * 4 + 3));
    r_free(&r);
    /* out-of-range index found at run time */
    int64_t bad[2] = {0, 7};
    int64_t two = 2;
    ig_value *bi = t_const(&t, "badi", INGOT_DTYPE_INT64, 1, &two, bad);
    bi->flags &= ~(uint32_t)IG_VAL_CONST; /* infer cannot see it; the kernel must check */
    n = t_node(&t, "Gather", 13, "emb,badi", "g3");
    ASSERT_EQ(t_infer(&t, n), INGOT_OK);
    bi->flags |= IG_VAL_CONST;
    {
        R rr;
        memset(&rr, 0, sizeof rr);
        tensor_from_value(&rr.in[0], V(&t, "emb"));
        tensor_from_value(&rr.in[1], bi);
        memcpy(rr.in[1].data, bad, sizeof bad);
        tensor_from_value(&rr.out[0], V(&t, "g3"));
        rr.inp[0] = &rr.in[0];
        rr.inp[1] = &rr.in[1];
        rr.outp[0] = &rr.out[0];
        ig_exec ex = {.g = &t.g, .node = n, .n_in = 2, .n_out = 1, .in = rr.inp, .out = rr.outp, .err = &t.err};
        ig__err_clear(&t.err);
        ASSERT_EQ(ig__op_gather.cpu(&ex), INGOT_ERR_INVALID_ARG);
        ASSERT_CONTAINS(t.err.msg, "index 7 (element 1 of 'badi') is out of range for axis 0 of size 5");
        r_free(&rr);
    }
    t_free(&t);
    ig__pool_destroy(pool);
}

TEST(cpu_gather_elements)
{
    T t;
    t_init(&t);
    float data[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    int64_t d[2] = {3, 3}, id[2] = {2, 3};
    t_const(&t, "x", INGOT_DTYPE_FLOAT, 2, d, data);
    int64_t idx[6] = {1, 2, 0, 2, 0, -1};
    t_const(&t, "i", INGOT_DTYPE_INT64, 2, id, idx);
    ig_node *n = t_node(&t, "GatherElements", 13, "x,i", "y");
    a_int(n, "axis", 0);
    R r;
    /* indices shape [2,3] along axis 0: out[i][j] = x[idx[i][j]][j] */
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    float want0[6] = {4, 8, 3, 7, 2, 9};
    for (int k = 0; k < 6; k++) ASSERT_NEAR(((float *)r.out[0].data)[k], want0[k], 0);
    r_free(&r);
    n = t_node(&t, "GatherElements", 13, "x,i", "y1");
    a_int(n, "axis", 1);
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    float want1[6] = {2, 3, 1, 6, 4, 6};
    for (int k = 0; k < 6; k++) ASSERT_NEAR(((float *)r.out[0].data)[k], want1[k], 0);
    r_free(&r);
    t_free(&t);
}

TEST(cpu_pad_modes)
{
    static const int32_t want_reflect[54] = {7, 6, 5, 4, 5, 6, 7, 6, 5, 3,  2,  1, 0, 1, 2,  3,  2,  1,
                                             7, 6, 5, 4, 5, 6, 7, 6, 5, 11, 10, 9, 8, 9, 10, 11, 10, 9,
                                             7, 6, 5, 4, 5, 6, 7, 6, 5, 3,  2,  1, 0, 1, 2,  3,  2,  1};
    static const int32_t want_edge[54] = {0, 0, 0, 0, 1, 2,  3,  3,  3,  0, 0, 0, 0, 1, 2,  3,  3,  3,
                                          4, 4, 4, 4, 5, 6,  7,  7,  7,  8, 8, 8, 8, 9, 10, 11, 11, 11,
                                          8, 8, 8, 8, 9, 10, 11, 11, 11, 8, 8, 8, 8, 9, 10, 11, 11, 11};
    static const int32_t want_wrap[54] = {9, 10, 11, 8, 9, 10, 11, 8, 9, 1, 2,  3,  0, 1, 2,  3,  0, 1,
                                          5, 6,  7,  4, 5, 6,  7,  4, 5, 9, 10, 11, 8, 9, 10, 11, 8, 9,
                                          1, 2,  3,  0, 1, 2,  3,  0, 1, 5, 6,  7,  4, 5, 6,  7,  4, 5};
    const char *modes[3] = {"reflect", "edge", "wrap"};
    const int32_t *wants[3] = {want_reflect, want_edge, want_wrap};
    T t;
    t_init(&t);
    int32_t x[12];
    for (int k = 0; k < 12; k++) x[k] = k;
    int64_t d[2] = {3, 4};
    t_const(&t, "x", INGOT_DTYPE_INT32, 2, d, x);
    int64_t pads[4] = {1, 3, 2, 2};
    t_i64(&t, "pads", 4, pads);
    for (int m = 0; m < 3; m++) {
        char out[16];
        snprintf(out, sizeof out, "y%d", m);
        ig_node *n = t_node(&t, "Pad", 19, "x,pads", out);
        a_str(n, "mode", modes[m]);
        R r;
        ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
        ASSERT_EQ(r.out[0].numel, 54);
        for (int k = 0; k < 54; k++)
            if (((int32_t *)r.out[0].data)[k] != wants[m][k]) {
                r_free(&r);
                t_free(&t);
                TEST_FAIL_("pad mode %s element %d", modes[m], k);
            }
        r_free(&r);
    }
    /* constant with a value input, and cropping with a negative pad */
    int64_t cp[4] = {1, -1, 0, 0};
    t_i64(&t, "cp", 4, cp);
    int32_t seven = 7;
    t_const(&t, "cv", INGOT_DTYPE_INT32, 0, NULL, &seven);
    R r;
    ASSERT_EQ(t_run(&t, t_node(&t, "Pad", 13, "x,cp,cv", "yc"), NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "yc"), "[4,3]");
    int32_t wc[12] = {7, 7, 7, 1, 2, 3, 5, 6, 7, 9, 10, 11};
    for (int k = 0; k < 12; k++) ASSERT_EQ(((int32_t *)r.out[0].data)[k], wc[k]);
    r_free(&r);
    /* opset 2: pads and value attributes, float16 data */
    uint16_t h[4];
    for (int k = 0; k < 4; k++) h[k] = ig__f32_to_f16((float)k);
    int64_t hd[1] = {4};
    t_const(&t, "h", INGOT_DTYPE_FLOAT16, 1, hd, h);
    ig_node *n = t_node(&t, "Pad", 2, "h", "hp");
    int64_t hp[2] = {2, 1};
    a_ints(&t, n, "pads", 2, hp);
    ig_attr *a = &n->attrs[n->n_attrs++];
    a->name = "value";
    a->type = IG_ATTR_FLOAT;
    a->f = 1.5f;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    float wh[7] = {1.5f, 1.5f, 0, 1, 2, 3, 1.5f};
    for (int k = 0; k < 7; k++) ASSERT_NEAR(ig__f16_to_f32(((uint16_t *)r.out[0].data)[k]), wh[k], 0);
    r_free(&r);
    t_free(&t);
}

TEST(cpu_expand_tile_range_cos)
{
    struct ig_pool *pool = ig__pool_create(2);
    T t;
    t_init(&t);
    int64_t d[3] = {3, 1, 2};
    t_rand(&t, "x", INGOT_DTYPE_DOUBLE, 3, d);
    int64_t shape[4] = {2, 1, 4, 1};
    t_i64(&t, "shape", 4, shape);
    R r;
    ASSERT_EQ(t_run(&t, t_node(&t, "Expand", 13, "x,shape", "y"), pool, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "y"), "[2,3,4,2]");
    int64_t c[4];
    for (int64_t i = 0; i < 48; i++) {
        unravel(i, 4, r.out[0].dims, c);
        ASSERT(elem_eq(&r.out[0], i, &r.in[0], c[1] * 2 + c[3]));
    }
    r_free(&r);

    int64_t reps[3] = {2, 3, 1};
    t_i64(&t, "reps", 3, reps);
    ASSERT_EQ(t_run(&t, t_node(&t, "Tile", 13, "x,reps", "tt"), pool, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "tt"), "[6,3,2]");
    for (int64_t i = 0; i < 36; i++) {
        unravel(i, 3, r.out[0].dims, c);
        ASSERT(elem_eq(&r.out[0], i, &r.in[0], (c[0] % 3) * 2 + c[2]));
    }
    r_free(&r);

    float f0 = 1.0f, f1 = 2.0f, fd = 0.25f;
    t_const(&t, "f0", INGOT_DTYPE_FLOAT, 0, NULL, &f0);
    t_const(&t, "f1", INGOT_DTYPE_FLOAT, 0, NULL, &f1);
    t_const(&t, "fd", INGOT_DTYPE_FLOAT, 0, NULL, &fd);
    ASSERT_EQ(t_run(&t, t_node(&t, "Range", 11, "f0,f1,fd", "fr"), NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "fr"), "[4]");
    ASSERT_NEAR(((float *)r.out[0].data)[3], 1.75, 0);
    r_free(&r);
    int32_t i0 = 10, i1 = 1, id = -3;
    t_const(&t, "i0", INGOT_DTYPE_INT32, 0, NULL, &i0);
    t_const(&t, "i1", INGOT_DTYPE_INT32, 0, NULL, &i1);
    t_const(&t, "id", INGOT_DTYPE_INT32, 0, NULL, &id);
    ASSERT_EQ(t_run(&t, t_node(&t, "Range", 11, "i0,i1,id", "ir"), NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "ir"), "[3]");
    ASSERT_EQ(((int32_t *)r.out[0].data)[2], 4);
    r_free(&r);

    int64_t cs[2] = {3, 5};
    t_i64(&t, "cs", 2, cs);
    ig_node *n = t_node(&t, "ConstantOfShape", 13, "cs", "co");
    static ig_const v;
    static const int64_t seven = 7;
    v.dtype = INGOT_DTYPE_INT64;
    v.rank = 1;
    v.dims[0] = 1;
    v.data = &seven;
    v.n_bytes = 8;
    ig_attr *a = &n->attrs[n->n_attrs++];
    a->name = "value";
    a->type = IG_ATTR_TENSOR;
    a->t = &v;
    ASSERT_EQ(t_run(&t, n, NULL, &r), INGOT_OK);
    ASSERT_EQ(r.out[0].dtype, INGOT_DTYPE_INT64);
    for (int k = 0; k < 15; k++) ASSERT_EQ(geti(&r.out[0], k), 7);
    r_free(&r);

    /* Shape kernel */
    ASSERT_EQ(t_run(&t, t_node(&t, "Shape", 13, "tt", "ts"), NULL, &r), INGOT_OK);
    ASSERT_EQ(geti(&r.out[0], 0), 6);
    ASSERT_EQ(geti(&r.out[0], 2), 2);
    r_free(&r);
    /* Reshape kernel copies when not aliased */
    int64_t rs[2] = {-1, 6};
    t_i64(&t, "rs", 2, rs);
    ASSERT_EQ(t_run(&t, t_node(&t, "Reshape", 13, "x,rs", "xr"), NULL, &r), INGOT_OK);
    ASSERT_STREQ(shp(&t, "xr"), "[1,6]");
    ASSERT_EQ(r.out[0].dims[0], 1);
    ASSERT(!memcmp(r.out[0].data, r.in[0].data, 48));
    r_free(&r);
    t_free(&t);
    ig__pool_destroy(pool);
}

TEST_MAIN(RUN(chain_attention_reshape); RUN(reshape_symbolic_minus_one); RUN(reshape_two_symbols); RUN(infer_constant);
          RUN(infer_shape_opset15); RUN(infer_constant_of_shape_range_expand_tile);
          RUN(infer_flatten_squeeze_unsqueeze); RUN(infer_transpose_concat_split); RUN(infer_slice);
          RUN(infer_slice_runtime_bounds); RUN(infer_gather_pad); RUN(cpu_transpose_random); RUN(cpu_slice_random);
          RUN(cpu_concat_split_gather); RUN(cpu_gather_elements); RUN(cpu_pad_modes); RUN(cpu_expand_tile_range_cos))
