/*
 * test_api.c -- the public API end to end on a small model built in C: load, bind, run on the CPU
 * backend, outputs; bad inputs named; shape profiles; context memory sizes, caller-owned and shared
 * context memory; debug canaries; every allocation failing in turn never crashes or leaks.
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
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "input 'x' (float32 [batch,4]) was not given");
    in.dtype = INGOT_DTYPE_INT32;
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "input 'x': expected dtype float32, given int32");
    in = input(x, 2);
    in.dims[1] = 3;
    in.bytes = 6 * sizeof(float);
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "input 'x': expected [batch,4], given [2,3] (axis 1 must be 4)");
    in = input(x, 2);
    in.name = "y";
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "no input named 'y'");
    in = input(x, 2);
    in.bytes = 4;
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "4 bytes given, its shape needs 32");
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
    const int64_t lo[2] = {1, 4}, opt[2] = {2, 4}, hi[2] = {4, 4}, bad[2] = {1, 5};
    ASSERT_EQ(ingot_engine_set_input_profile(f.e, "x", 2, lo, opt, bad), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "axis 1 must be 4");
    ASSERT_EQ(ingot_engine_set_input_profile(f.e, "x", 2, lo, opt, hi), INGOT_OK);
    size_t at1 = 0, at4 = 0, max = 0;
    ASSERT_EQ(ingot_model_set_batch(f.m, 1), INGOT_OK);
    ASSERT_EQ(ingot_engine_memory_size(f.e, &at1), INGOT_OK);
    ASSERT_EQ(ingot_model_set_batch(f.m, 4), INGOT_OK);
    ASSERT_EQ(ingot_engine_memory_size(f.e, &at4), INGOT_OK);
    ASSERT_EQ(ingot_engine_max_memory_size(f.e, &max), INGOT_OK);
    ASSERT(at1 > 0 && at1 <= at4);
    ASSERT_EQ(max, at4);
    ingot_context *c = NULL;
    ASSERT_EQ(ingot_context_create(f.e, NULL, &c), INGOT_OK);
    float x[8 * 4];
    ingot_tensor in = input(x, 8);
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "input 'x': axis 0 is 8, outside the profile's range [1, 4]");
    in = input(x, 1);
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_OK);
    ingot_memory_info mi;
    ASSERT_EQ(ingot_context_memory_info(c, &mi), INGOT_OK);
    ASSERT_EQ(mi.arena_bytes, at1); /* sized for the shape run, not the profile's max */
    ingot_context_destroy(c);
    close_fixture(&f);
    free(m.p);
}

TEST(caller_memory_shared_between_contexts)
{
    wb m = small_model();
    fixture f;
    ASSERT_EQ(open_fixture(&f, &m), INGOT_OK);
    size_t need = 0;
    ASSERT_EQ(ingot_model_set_batch(f.m, 2), INGOT_OK);
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
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), want);
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

TEST_MAIN(RUN(run_and_outputs); RUN(bad_inputs_are_named); RUN(profiles_and_memory_sizes);
          RUN(caller_memory_shared_between_contexts); RUN(canaries_and_no_reuse_agree); RUN(allocation_failures))
