/*
 * test_api.c -- the public API end to end on a small model built in C: load, bind, run on the CPU
 * backend, outputs; bad inputs named (on the context's own error slot); shape profiles, set on the
 * engine or given in the build options; context memory sizes, caller-owned and shared context memory;
 * debug canaries; the engine outliving its model; build options checked field by field; every
 * allocation failing in turn never crashes or leaks.
 */
#include "ingot.h"
#include "core/core.h"
#include "pbwriter.h"
#include "test.h"

#include <stdint.h>

/* x [batch, 4] -> y = Relu(x) + x * W (W = [1,2,3,4]) -> out [batch, 4] */
static wb small_model(void)
{
    wb g = {0}, t, vi, n;
    const float w[4] = {1, 2, 3, 4};
    const int64_t d4[1] = {4}, xd[2] = {-1, 4};
    const char *xp[2] = {"batch", NULL};
    const char *i_relu[1] = {"x"}, *o_relu[1] = {"r"};
    const char *i_mul[2] = {"x", "W"}, *o_mul[1] = {"m"};
    const char *i_add[2] = {"r", "m"}, *o_add[1] = {"out"};
    n = node("Relu", "relu", i_relu, 1, o_relu, 1);
    w_msg(&g, 1, &n);
    n = node("Mul", "mul", i_mul, 2, o_mul, 1);
    w_msg(&g, 1, &n);
    n = node("Add", "add", i_add, 2, o_add, 1);
    w_msg(&g, 1, &n);
    w_str(&g, 2, "small");
    t = tensor_raw("W", 1, 1, d4, w, sizeof w);
    w_msg(&g, 5, &t);
    vi = value_info("x", 1, 2, xd, xp);
    w_msg(&g, 11, &vi);
    vi = value_info("out", 1, 2, xd, xp);
    w_msg(&g, 12, &vi);
    return model(&g, 17);
}

typedef struct fixture {
    ingot_runtime *rt;
    ingot_model *m;
    ingot_engine *e;
} fixture;

static ingot_status open_fixture(fixture *f, const wb *bytes)
{
    memset(f, 0, sizeof *f);
    ingot_status st = ingot_runtime_create(&f->rt);
    if (st != INGOT_OK) return st;
    if ((st = ingot_model_load_buffer(f->rt, bytes->p, bytes->n, NULL, NULL, &f->m)) != INGOT_OK) return st;
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    bo.n_threads = 1;
    return ingot_engine_build(f->rt, f->m, &bo, &f->e);
}

static void close_fixture(fixture *f)
{
    ingot_engine_destroy(f->e);
    ingot_model_destroy(f->m);
    ingot_runtime_destroy(f->rt);
}

static ingot_tensor input(float *data, int64_t batch)
{
    for (int64_t i = 0; i < batch * 4; i++) data[i] = (float)(i % 7) - 3.0f;
    ingot_tensor t = {.name = "x",
                      .dtype = INGOT_DTYPE_FLOAT,
                      .rank = 2,
                      .dims = {batch, 4},
                      .data = data,
                      .bytes = (size_t)batch * 4 * sizeof(float)};
    return t;
}

static int check_output(ingot_context *c, const float *x, int64_t batch)
{
    ingot_tensor o;
    if (ingot_context_get_output(c, 0, &o) != INGOT_OK || o.rank != 2 || o.dims[0] != batch || o.dims[1] != 4) return 0;
    const float *y = o.data;
    for (int64_t i = 0; i < batch * 4; i++) {
        float want = (x[i] > 0 ? x[i] : 0) + x[i] * (float)(i % 4 + 1);
        if (y[i] != want) return 0;
    }
    return 1;
}

TEST(run_and_outputs)
{
    wb m = small_model();
    fixture f;
    ASSERT_EQ(open_fixture(&f, &m), INGOT_OK);
    ingot_tensor_info ti;
    ASSERT_EQ(ingot_model_input_info(f.m, 0, &ti), INGOT_OK);
    ASSERT_STREQ(ti.dims[0].symbol, "batch");
    ingot_context *c = NULL;
    ASSERT_EQ(ingot_context_create(f.e, NULL, &c), INGOT_OK);
    float x[8 * 4];
    for (int64_t b = 1; b <= 8; b *= 2) { /* a new shape re-plans */
        ingot_tensor in = input(x, b);
        ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_OK);
        ASSERT(check_output(c, x, b));
    }
    ingot_memory_info mi;
    ASSERT_EQ(ingot_context_memory_info(c, &mi), INGOT_OK);
    ASSERT(mi.arena_bytes >= mi.lower_bound_bytes && mi.arena_bytes <= mi.no_reuse_bytes);
    ingot_context_destroy(c);
    close_fixture(&f);
    free(m.p);
}

/* The library's host allocation count: runs at one shape allocate nothing, and destroying
 * everything returns every allocation (what the GPU soak compares to tell the library's host memory
 * from the driver's). */
TEST(host_allocations_balance)
{
    int64_t live0 = -1, live1 = -1, live2 = -1, live3 = -1;
    uint64_t made1 = 0, made2 = 0;
    ingot_host_alloc_counts(NULL, &live0);
    wb m = small_model();
    fixture f;
    ASSERT_EQ(open_fixture(&f, &m), INGOT_OK);
    ingot_context *c = NULL;
    ASSERT_EQ(ingot_context_create(f.e, NULL, &c), INGOT_OK);
    float x[4 * 4];
    ingot_tensor in = input(x, 4);
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_OK);
    ingot_host_alloc_counts(&made1, &live1);
    for (int r = 0; r < 100; r++) ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_OK);
    ingot_host_alloc_counts(&made2, &live2);
    ASSERT_EQ(live2, live1); /* a run allocates nothing it keeps */
    ASSERT_EQ(made2, made1); /* nor anything at all, once the shape is prepared */
    ASSERT(live1 > live0);
    ingot_context_destroy(c);
    close_fixture(&f);
    free(m.p);
    ingot_host_alloc_counts(NULL, &live3);
    ASSERT_EQ(live3, live0);
}

TEST(bad_inputs_are_named)
{
    wb m = small_model();
    fixture f;
    ASSERT_EQ(open_fixture(&f, &m), INGOT_OK);
    ingot_context *c = NULL;
    ASSERT_EQ(ingot_context_create(f.e, NULL, &c), INGOT_OK);
    float x[16];
    ingot_tensor in = input(x, 2);
    ASSERT_EQ(ingot_context_run(c, &in, 0), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(c), "input 'x' (float32 [batch,4]) was not given");
    in.dtype = INGOT_DTYPE_INT32;
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(c), "input 'x': expected dtype float32, given int32");
    in = input(x, 2);
    in.dims[1] = 3;
    in.bytes = 6 * sizeof(float);
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(c), "input 'x': expected [batch,4], given [2,3] (axis 1 must be 4)");
    in = input(x, 2);
    in.name = "y";
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(c), "no input named 'y'");
    in = input(x, 2);
    in.bytes = 4;
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(c), "4 bytes given, its shape needs 32");
    in = input(x, 2);
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_OK); /* the context still works */
    ASSERT(check_output(c, x, 2));
    ingot_context_destroy(c);
    close_fixture(&f);
    free(m.p);
}

TEST(profiles_and_memory_sizes)
{
    wb m = small_model();
    fixture f;
    ASSERT_EQ(open_fixture(&f, &m), INGOT_OK);
    const int64_t lo[2] = {1, 4}, opt1[2] = {1, 4}, opt4[2] = {4, 4}, hi[2] = {4, 4}, bad[2] = {1, 5};
    ASSERT_EQ(ingot_engine_set_input_profile(f.e, "x", 2, lo, opt1, bad), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "axis 1 must be 4");
    ASSERT_EQ(ingot_engine_set_input_profile(f.e, "y", 2, lo, opt1, hi), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "the model has no input named 'y'");
    ASSERT_EQ(ingot_engine_set_input_profile(f.e, "x", 2, opt4, opt1, hi), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "axis 0 needs min <= opt <= max, got 4 / 1 / 4");
    /* a profile's opt is the input's default shape: what ingot_engine_memory_size plans for */
    size_t at1 = 0, at4 = 0, max = 0;
    ASSERT_EQ(ingot_engine_set_input_profile(f.e, "x", 2, lo, opt1, hi), INGOT_OK);
    ASSERT_EQ(ingot_engine_memory_size(f.e, &at1), INGOT_OK);
    ASSERT_EQ(ingot_engine_set_input_profile(f.e, "x", 2, lo, opt4, hi), INGOT_OK);
    ASSERT_EQ(ingot_engine_memory_size(f.e, &at4), INGOT_OK);
    ASSERT_EQ(ingot_engine_max_memory_size(f.e, &max), INGOT_OK);
    ASSERT(at1 > 0 && at1 <= at4);
    ASSERT_EQ(max, at4);
    ingot_context *c = NULL;
    ASSERT_EQ(ingot_context_create(f.e, NULL, &c), INGOT_OK);
    float x[8 * 4];
    ingot_tensor in = input(x, 8);
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(c), "input 'x': axis 0 is 8, outside the profile's range [1, 4]");
    in = input(x, 1);
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_OK);
    ingot_memory_info mi;
    ASSERT_EQ(ingot_context_memory_info(c, &mi), INGOT_OK);
    ASSERT_EQ(mi.arena_bytes, at1); /* sized for the shape run, not the profile's max */
    ingot_context_destroy(c);
    close_fixture(&f);
    free(m.p);
}

/* Default shapes without profiles: the shapes bound on the model when the engine was built; binding
 * the model later changes nothing in the engine. */
TEST(default_shapes_from_the_model)
{
    wb m = small_model();
    ingot_runtime *rt = NULL;
    ingot_model *md = NULL;
    ingot_engine *e1 = NULL, *e3 = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    ASSERT_EQ(ingot_model_load_buffer(rt, m.p, m.n, NULL, NULL, &md), INGOT_OK);
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    ASSERT_EQ(ingot_engine_build(rt, md, &bo, &e1), INGOT_OK); /* batch still symbolic: counts as 1 */
    ASSERT_EQ(ingot_model_set_batch(md, 64), INGOT_OK);        /* not inferred: the build infers */
    ASSERT_EQ(ingot_engine_build(rt, md, &bo, &e3), INGOT_OK);
    size_t b1 = 0, b3 = 0, again = 0;
    ASSERT_EQ(ingot_engine_memory_size(e1, &b1), INGOT_OK);
    ASSERT_EQ(ingot_engine_memory_size(e3, &b3), INGOT_OK);
    ASSERT(b1 > 0 && b1 < b3);
    ASSERT_EQ(ingot_model_set_batch(md, 1), INGOT_OK);
    ASSERT_EQ(ingot_model_infer(md), INGOT_OK);
    ASSERT_EQ(ingot_engine_memory_size(e3, &again), INGOT_OK);
    ASSERT_EQ(again, b3);
    ingot_engine_destroy(e1);
    ingot_engine_destroy(e3);
    ingot_model_destroy(md);
    ingot_runtime_destroy(rt);
    free(m.p);
}

/* Profiles given in the build options are checked exactly as ingot_engine_set_input_profile checks
 * them, and their opt is the default shape. */
TEST(profiles_in_build_options)
{
    wb m = small_model();
    ingot_runtime *rt = NULL;
    ingot_model *md = NULL;
    ingot_engine *e = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    ASSERT_EQ(ingot_model_load_buffer(rt, m.p, m.n, NULL, NULL, &md), INGOT_OK);
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    ingot_input_profile p = {.name = "x", .rank = 2, .min = {1, 4}, .opt = {2, 4}, .max = {64, 4}};
    bo.profiles = &p;
    bo.n_profiles = 1;
    p.max[1] = 5;
    ASSERT_EQ(ingot_engine_build(rt, md, &bo, &e), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "ingot_build_options.profiles[0]: input 'x'");
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "axis 1 must be 4");
    p.max[1] = 4;
    p.name = "nope";
    ASSERT_EQ(ingot_engine_build(rt, md, &bo, &e), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "the model has no input named 'nope'");
    p.name = NULL;
    ASSERT_EQ(ingot_engine_build(rt, md, &bo, &e), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "ingot_build_options.profiles[0]: name is NULL");
    p.name = "x";
    p.opt[0] = 7;
    p.max[0] = 3;
    ASSERT_EQ(ingot_engine_build(rt, md, &bo, &e), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "axis 0 needs min <= opt <= max, got 1 / 7 / 3");
    p.max[0] = 64;
    p.opt[0] = 2;
    bo.profiles = NULL;
    ASSERT_EQ(ingot_engine_build(rt, md, &bo, &e), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "ingot_build_options.profiles is NULL");
    bo.profiles = &p;
    ASSERT_EQ(ingot_engine_build(rt, md, &bo, &e), INGOT_OK);
    ASSERT_EQ(ingot_runtime_errcode(rt), INGOT_OK);
    /* opt [2, 4] is the default shape; max [64, 4] bounds the runs */
    ingot_engine *e2 = NULL;
    ASSERT_EQ(ingot_model_set_batch(md, 2), INGOT_OK);
    bo.profiles = NULL;
    bo.n_profiles = 0;
    ASSERT_EQ(ingot_engine_build(rt, md, &bo, &e2), INGOT_OK);
    size_t with_profile = 0, at2 = 0, max = 0;
    ASSERT_EQ(ingot_engine_memory_size(e, &with_profile), INGOT_OK);
    ASSERT_EQ(ingot_engine_memory_size(e2, &at2), INGOT_OK);
    ASSERT_EQ(with_profile, at2);
    ASSERT_EQ(ingot_engine_max_memory_size(e, &max), INGOT_OK);
    ASSERT(max > at2);
    ingot_context *c = NULL;
    ASSERT_EQ(ingot_context_create(e, NULL, &c), INGOT_OK);
    float x[65 * 4];
    ingot_tensor in = input(x, 65);
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(c), "axis 0 is 65, outside the profile's range [1, 64]");
    in = input(x, 64);
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_OK);
    ASSERT(check_output(c, x, 64));
    ingot_context_destroy(c);
    ingot_engine_destroy(e);
    ingot_engine_destroy(e2);
    ingot_model_destroy(md);
    ingot_runtime_destroy(rt);
    free(m.p);
}

TEST(caller_memory_shared_between_contexts)
{
    wb m = small_model();
    fixture f;
    ASSERT_EQ(open_fixture(&f, &m), INGOT_OK);
    size_t need = 0;
    const int64_t lo[2] = {1, 4}, two[2] = {2, 4};
    ASSERT_EQ(ingot_engine_set_input_profile(f.e, "x", 2, lo, two, two), INGOT_OK); /* default shape [2, 4] */
    ASSERT_EQ(ingot_engine_memory_size(f.e, &need), INGOT_OK);
    unsigned char *buf = ig__malloc_aligned(need + 64, 64);
    ASSERT(buf);
    ingot_context_options co = ingot_context_options_default();
    ingot_context *a = NULL, *b = NULL, *small = NULL;
    co.memory = buf + 8;
    co.memory_bytes = need;
    ASSERT_EQ(ingot_context_create(f.e, &co, &a), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "is not aligned to 64 bytes");
    co.memory = buf;
    ASSERT_EQ(ingot_context_create(f.e, &co, &a), INGOT_OK);
    ASSERT_EQ(ingot_context_create(f.e, &co, &b), INGOT_OK);
    co.memory_bytes = need - 1;
    ASSERT_EQ(ingot_context_create(f.e, &co, &small), INGOT_OK);
    float x[8], y[8];
    ingot_tensor in = input(x, 2);
    ASSERT_EQ(ingot_context_run(small, &in, 1), INGOT_ERR_INVALID_ARG);
    char want[128];
    snprintf(want, sizeof want, "holds %zu bytes; these shapes need %zu bytes, aligned to 64", need - 1, need);
    ASSERT_CONTAINS(ingot_context_errmsg(small), want);
    ASSERT_EQ(ingot_context_run(a, &in, 1), INGOT_OK);
    ASSERT(check_output(a, x, 2));
    ingot_tensor in2 = input(y, 2);
    for (int i = 0; i < 8; i++) y[i] = -y[i];
    ASSERT_EQ(ingot_context_run(b, &in2, 1), INGOT_OK);
    ASSERT(check_output(b, y, 2));
    ASSERT_EQ(ingot_context_run(a, &in, 1), INGOT_OK);
    ASSERT(check_output(a, x, 2));
    ingot_context_destroy(a);
    ingot_context_destroy(b);
    ingot_context_destroy(small);
    ig__free_aligned(buf);
    close_fixture(&f);
    free(m.p);
}

TEST(canaries_and_no_reuse_agree)
{
    wb m = small_model();
    fixture f;
    ASSERT_EQ(open_fixture(&f, &m), INGOT_OK);
    ingot_context_options co = ingot_context_options_default();
    ingot_context *c1 = NULL, *c2 = NULL;
    co.debug_canaries = 1;
    ASSERT_EQ(ingot_context_create(f.e, &co, &c1), INGOT_OK);
    co.debug_canaries = 0;
    co.memory_reuse = 0;
    ASSERT_EQ(ingot_context_create(f.e, &co, &c2), INGOT_OK);
    float x[12];
    ingot_tensor in = input(x, 3);
    ASSERT_EQ(ingot_context_run(c1, &in, 1), INGOT_OK);
    ASSERT(check_output(c1, x, 3));
    ASSERT_EQ(ingot_context_run(c2, &in, 1), INGOT_OK);
    ASSERT(check_output(c2, x, 3));
    ingot_context_destroy(c1);
    ingot_context_destroy(c2);
    close_fixture(&f);
    free(m.p);
}

/* The engine owns its graph and holds the model file: destroy the model right after the build, then
 * create a context, run and compare; a second engine of a destroyed model's sibling still works. */
TEST(model_destroyed_before_context)
{
    wb m = small_model();
    fixture f;
    ASSERT_EQ(open_fixture(&f, &m), INGOT_OK);
    ingot_model_destroy(f.m);
    f.m = NULL;
    free(m.p); /* the bytes the model was loaded from are gone too (the file object holds a copy) */
    m.p = NULL;
    ingot_context *c = NULL;
    ASSERT_EQ(ingot_context_create(f.e, NULL, &c), INGOT_OK);
    float x[5 * 4];
    for (int64_t b = 1; b <= 5; b += 2) {
        ingot_tensor in = input(x, b);
        ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_OK);
        ASSERT(check_output(c, x, b));
    }
    size_t bytes = 0;
    ASSERT_EQ(ingot_engine_memory_size(f.e, &bytes), INGOT_OK);
    ASSERT(bytes > 0);
    char *js = NULL;
    ASSERT_EQ(ingot_engine_describe_json(f.e, &js), INGOT_OK);
    ASSERT_CONTAINS(js, "\"passes\":[");
    ASSERT_CONTAINS(js, "\"name\":\"x\"");
    ingot_free(js);
    ingot_context_destroy(c);
    close_fixture(&f);
}

/* Failures of calls on a context land on the context, never on the runtime; the next call clears. */
TEST(context_error_slot)
{
    wb m = small_model();
    fixture f;
    ASSERT_EQ(open_fixture(&f, &m), INGOT_OK);
    ingot_context *c = NULL, *other = NULL;
    ASSERT_EQ(ingot_context_create(f.e, NULL, &c), INGOT_OK);
    ASSERT_EQ(ingot_context_create(f.e, NULL, &other), INGOT_OK);
    ASSERT_EQ(ingot_context_errcode(c), INGOT_OK);
    ASSERT_STREQ(ingot_context_errmsg(c), "");
    ASSERT_STREQ(ingot_context_errmsg(NULL), "no context");
    ASSERT_EQ(ingot_context_errcode(NULL), INGOT_ERR_INVALID_ARG);
    float x[8];
    ingot_tensor in = input(x, 2);
    in.dims[1] = 5;
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_ERR_INPUT);
    ASSERT_EQ(ingot_context_errcode(c), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(c), "input 'x': expected [batch,4], given [2,5]");
    ASSERT_EQ(ingot_runtime_errcode(f.rt), INGOT_OK); /* the runtime's slot is untouched */
    ASSERT_STREQ(ingot_runtime_errmsg(f.rt), "");
    ASSERT_EQ(ingot_context_errcode(other), INGOT_OK); /* and so is the other context's */
    ingot_tensor out;
    ASSERT_EQ(ingot_context_get_output(c, 0, &out), INGOT_ERR_INVALID_ARG); /* a failed run leaves no outputs */
    ASSERT_CONTAINS(ingot_context_errmsg(c), "has not run, or its last run failed");
    ASSERT_EQ(ingot_context_run(c, NULL, 1), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_context_errmsg(c), "ingot_context_run: inputs is NULL with n_inputs 1");
    ASSERT_EQ(ingot_context_run(c, &in, -1), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_context_errmsg(c), "n_inputs is -1");
    ingot_memory_info mi;
    ASSERT_EQ(ingot_context_memory_info(c, &mi), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_context_errmsg(c), "has not run on the CPU yet");
    ASSERT_EQ(ingot_context_memory_info(c, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_context_errmsg(c), "out is NULL");
    in = input(x, 2);
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_OK); /* a call that succeeds clears the slot */
    ASSERT_EQ(ingot_context_errcode(c), INGOT_OK);
    ASSERT_STREQ(ingot_context_errmsg(c), "");
    ASSERT_EQ(ingot_context_get_output(c, 3, &out), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_context_errmsg(c), "output index 3 out of range (the model has 1 outputs)");
    ASSERT_EQ(ingot_context_get_output(c, 0, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_context_errmsg(c), "ingot_context_get_output: out is NULL");
    ASSERT_EQ(ingot_context_get_output(c, 0, &out), INGOT_OK);
    ASSERT_STREQ(ingot_context_errmsg(c), "");
    ASSERT(check_output(c, x, 2));
    ASSERT_EQ(ingot_runtime_errcode(f.rt), INGOT_OK);
    ingot_context_destroy(c);
    ingot_context_destroy(other);
    close_fixture(&f);
    free(m.p);
}

/* Each build option out of range is rejected, naming the field. */
TEST(build_options_are_checked)
{
    wb m = small_model();
    ingot_runtime *rt = NULL;
    ingot_model *md = NULL;
    ingot_engine *e = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    ASSERT_EQ(ingot_model_load_buffer(rt, m.p, m.n, NULL, NULL, &md), INGOT_OK);
    const ingot_build_options d = ingot_build_options_default();
    ASSERT_EQ(d.optimize, 1);
    ASSERT(d.disable_passes == NULL && d.profiles == NULL && d.n_profiles == 0);
    ASSERT(d.device == 0 && d.cuda_graphs == 1 && d.cuda_tune == 1 && d.cuda_sync_debug == 0);
    ASSERT(d.cuda_nhwc == 1 && d.cuda_gelu_epilogue == 1 && d.cuda_attention == 1 && d.cuda_attention_kernel == 0);
    ingot_build_options bo;
#define REJECT(field, value, text)                                             \
    do {                                                                       \
        bo = d;                                                                \
        bo.backend = INGOT_BACKEND_CPU;                                        \
        bo.field = value;                                                      \
        ASSERT_EQ(ingot_engine_build(rt, md, &bo, &e), INGOT_ERR_INVALID_ARG); \
        ASSERT(e == NULL);                                                     \
        ASSERT_CONTAINS(ingot_runtime_errmsg(rt), text);                       \
    } while (0)
    REJECT(backend, (ingot_backend)7, "ingot_build_options.backend 7");
    REJECT(precision, INGOT_DTYPE_INT32, "ingot_build_options.precision must be float32, float16 or bfloat16");
    REJECT(n_threads, -1, "ingot_build_options.n_threads must be in [0, 1024]");
    REJECT(n_threads, 1025, "ingot_build_options.n_threads must be in [0, 1024]");
    REJECT(device, -2, "ingot_build_options.device must be >= 0, not -2");
    REJECT(optimize, 2, "ingot_build_options.optimize must be 0 or 1, not 2");
    REJECT(cuda_graphs, -1, "ingot_build_options.cuda_graphs must be 0 or 1");
    REJECT(cuda_tune, 5, "ingot_build_options.cuda_tune must be 0 or 1");
    REJECT(cuda_sync_debug, 2, "ingot_build_options.cuda_sync_debug must be 0 or 1");
    REJECT(cuda_nhwc, 2, "ingot_build_options.cuda_nhwc must be 0 or 1");
    REJECT(cuda_gelu_epilogue, 2, "ingot_build_options.cuda_gelu_epilogue must be 0 or 1");
    REJECT(cuda_attention, 2, "ingot_build_options.cuda_attention must be 0 or 1");
    REJECT(cuda_attention_kernel, 4, "ingot_build_options.cuda_attention_kernel must be 0 (auto)");
    REJECT(n_profiles, -1, "ingot_build_options.profiles");
    REJECT(disable_passes, "cse,no-such-pass", "no-such-pass");
    REJECT(precision, INGOT_DTYPE_FLOAT16, "the CPU backend computes in float32"); /* valid, not on the CPU */
#undef REJECT
    bo = d;
    bo.struct_size = 4;
    ASSERT_EQ(ingot_engine_build(rt, md, &bo, &e), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "struct_size 4");
    /* in range: an explicit thread count above the cores is honoured (a pool of several threads on
     * any machine), the optimizer off or with passes disabled builds, and the engine runs */
    const int64_t threads[3] = {0, 4, 1024};
    for (int i = 0; i < 3; i++) {
        bo = d;
        bo.backend = INGOT_BACKEND_CPU;
        bo.n_threads = (int)threads[i];
        bo.optimize = i != 1;
        bo.disable_passes = i == 2 ? "cse, dce" : NULL;
        ASSERT_EQ(ingot_engine_build(rt, md, &bo, &e), INGOT_OK);
        ingot_context *c = NULL;
        ASSERT_EQ(ingot_context_create(e, NULL, &c), INGOT_OK);
        float x[8];
        ingot_tensor in = input(x, 2);
        ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_OK);
        ASSERT(check_output(c, x, 2));
        ingot_context_destroy(c);
        ingot_engine_destroy(e);
        e = NULL;
    }
    ingot_model_destroy(md);
    ingot_runtime_destroy(rt);
    free(m.p);
}

/* Every host allocation of load + build + create + run fails in turn: each attempt returns a status
 * (never crashes; ASan's leak check covers the cleanup paths), and the sequence succeeds once the
 * failure point is past the end. */
TEST(allocation_failures)
{
    wb m = small_model();
    float x[8];
    int done = 0;
    for (uint64_t n = 1; n < 5000 && !done; n++) {
        fixture f;
        ingot_context *c = NULL;
        ig__alloc_fail_after(n);
        ingot_status st = open_fixture(&f, &m);
        if (st == INGOT_OK) st = ingot_context_create(f.e, NULL, &c);
        ingot_tensor in = input(x, 2);
        if (st == INGOT_OK) st = ingot_context_run(c, &in, 1);
        ig__alloc_fail_after(0);
        if (st == INGOT_OK) {
            ASSERT(check_output(c, x, 2));
            done = 1;
        } else {
            ASSERT(st == INGOT_ERR_OUT_OF_MEMORY || st == INGOT_ERR_INVALID_ARG);
        }
        ingot_context_destroy(c);
        close_fixture(&f);
    }
    ASSERT(done);
    free(m.p);
}

TEST_MAIN(RUN(run_and_outputs); RUN(host_allocations_balance); RUN(bad_inputs_are_named);
          RUN(profiles_and_memory_sizes); RUN(default_shapes_from_the_model); RUN(profiles_in_build_options);
          RUN(caller_memory_shared_between_contexts); RUN(canaries_and_no_reuse_agree);
          RUN(model_destroyed_before_context); RUN(context_error_slot); RUN(build_options_are_checked);
          RUN(allocation_failures))
