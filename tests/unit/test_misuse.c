/*
 * test_misuse.c -- the public API used wrongly, entry point by entry point: NULL arguments (with and
 * without a size), ranks checked before dims are read, element counts that overflow, options out of
 * range, inputs given twice, files that are not regular files; every failure returns a status and a
 * fresh message naming what is wrong (never the previous call's), and nothing crashes under ASan and
 * UBSan. Then sizes an attacker chooses: 200k attributes on a node, 50k graph inputs, 100k nodes
 * planned and checked, each in seconds (the checks are hashed or sorted, never quadratic).
 */
#define _POSIX_C_SOURCE 200809L
#include "ingot.h"
#include "api/api_internal.h"
#include "pbwriter.h"
#include "test.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* x [batch, 4] -> Relu -> out [batch, 4] */
static wb relu_model(void)
{
    wb g = {0}, vi, n;
    const int64_t xd[2] = {-1, 4};
    const char *xp[2] = {"batch", NULL};
    const char *in[1] = {"x"}, *out[1] = {"out"};
    n = node("Relu", "relu", in, 1, out, 1);
    w_msg(&g, 1, &n);
    w_str(&g, 2, "relu");
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
    ingot_context *c;
} fixture;

static int open_fixture(fixture *f, const wb *bytes)
{
    memset(f, 0, sizeof *f);
    if (ingot_runtime_create(&f->rt) != INGOT_OK) return 0;
    if (ingot_model_load_buffer(f->rt, bytes->p, bytes->n, NULL, NULL, &f->m) != INGOT_OK) return 0;
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    bo.n_threads = 1;
    if (ingot_engine_build(f->rt, f->m, &bo, &f->e) != INGOT_OK) return 0;
    return ingot_context_create(f->e, NULL, &f->c) == INGOT_OK;
}

static void close_fixture(fixture *f)
{
    ingot_context_destroy(f->c);
    ingot_engine_destroy(f->e);
    ingot_model_destroy(f->m);
    ingot_runtime_destroy(f->rt);
}

/* Leave a known message on the runtime, so a later failure must replace it to pass. */
static void stale_message(ingot_runtime *rt)
{
    ingot_model *m = NULL;
    ingot_model_load_buffer(rt, "garbage!", 8, NULL, NULL, &m);
    ingot_model_destroy(m);
}

#define ASSERT_FRESH(rt, st, text)                               \
    do {                                                         \
        ASSERT_EQ(ingot_runtime_errcode(rt), (st));              \
        ASSERT_CONTAINS(ingot_runtime_errmsg(rt), (text));       \
        ASSERT(!strstr(ingot_runtime_errmsg(rt), "garbage"));    \
        ASSERT(!strstr(ingot_runtime_errmsg(rt), "ModelProto")); \
    } while (0)

/* ---- runtime and model loading ---------------------------------------------------------------- */

TEST(runtime_create_and_errmsg)
{
    ASSERT_EQ(ingot_runtime_create(NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_STREQ(ingot_runtime_errmsg(NULL), "no runtime");
    ASSERT_EQ(ingot_runtime_errcode(NULL), INGOT_ERR_INVALID_ARG);
    ingot_runtime_destroy(NULL);
    ASSERT_STREQ(ingot_status_name((ingot_status)999), "INGOT_UNKNOWN");
    ASSERT(ingot_status_str((ingot_status)-1) != NULL);
    ASSERT_STREQ(ingot_dtype_name((ingot_dtype)999), "undefined");
    ASSERT_EQ(ingot_dtype_size((ingot_dtype)-5), 0);
}

TEST(load_buffer_null_data_with_size)
{
    ingot_runtime *rt = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    ingot_model *m = (ingot_model *)(uintptr_t)1;
    /* n bytes from NULL: refused before anything is read */
    ASSERT_EQ(ingot_model_load_buffer(rt, NULL, 4096, NULL, NULL, &m), INGOT_ERR_INVALID_ARG);
    ASSERT(m == NULL);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "ingot_model_load_buffer: data is NULL with n_bytes 4096");
    /* NULL with 0 bytes is an empty model: a parse error, never a read */
    ASSERT(ingot_model_load_buffer(rt, NULL, 0, NULL, NULL, &m) != INGOT_OK);
    ASSERT(ingot_runtime_errmsg(rt)[0]);
    ASSERT_EQ(ingot_model_load_buffer(NULL, "x", 1, NULL, NULL, &m), INGOT_ERR_INVALID_ARG);
    stale_message(rt);
    ASSERT_EQ(ingot_model_load_buffer(rt, "x", 1, NULL, NULL, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_FRESH(rt, INGOT_ERR_INVALID_ARG, "ingot_model_load_buffer: out is NULL");
    ingot_runtime_destroy(rt);
}

TEST(load_null_path_and_options)
{
    ingot_runtime *rt = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    ingot_model *m = NULL;
    stale_message(rt);
    ASSERT_EQ(ingot_model_load(rt, NULL, NULL, &m), INGOT_ERR_INVALID_ARG);
    ASSERT_FRESH(rt, INGOT_ERR_INVALID_ARG, "ingot_model_load: path is NULL");
    ASSERT_EQ(ingot_model_load(rt, "/nonexistent/model.onnx", NULL, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "out is NULL");
    wb mb = relu_model();
    ingot_load_options lo = ingot_load_options_default();
    lo.struct_size = 3;
    ASSERT_EQ(ingot_model_load_buffer(rt, mb.p, mb.n, NULL, &lo, &m), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "struct_size 3");
    lo = ingot_load_options_default();
    lo.use_mmap = 7;
    ASSERT_EQ(ingot_model_load_buffer(rt, mb.p, mb.n, NULL, &lo, &m), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "ingot_load_options.use_mmap must be 0 or 1, not 7");
    lo = ingot_load_options_default();
    lo.load_external_data = -1;
    ASSERT_EQ(ingot_model_load_buffer(rt, mb.p, mb.n, NULL, &lo, &m), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "load_external_data must be 0 or 1");
    ASSERT(m == NULL);
    free(mb.p);
    ingot_runtime_destroy(rt);
}

/* A FIFO, a directory or a device as the model: refused at once (a FIFO would block open() until a
 * writer came), naming what it is. */
TEST(special_files_as_model)
{
    ingot_runtime *rt = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    char dir[] = "/tmp/ingot_misuse_XXXXXX", fifo[64];
    ASSERT(mkdtemp(dir) != NULL);
    snprintf(fifo, sizeof fifo, "%s/fifo.onnx", dir);
    ASSERT_EQ(mkfifo(fifo, 0600), 0);
    ingot_model *m = NULL;
    double t0 = now_s();
    ASSERT_EQ(ingot_model_load(rt, fifo, NULL, &m), INGOT_ERR_IO);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "is not a regular file (a FIFO)");
    ASSERT_EQ(ingot_model_load(rt, dir, NULL, &m), INGOT_ERR_IO);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "is not a regular file (a directory)");
    ASSERT_EQ(ingot_model_load(rt, "/dev/zero", NULL, &m), INGOT_ERR_IO);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "is not a regular file (a device)");
    /* engine files and tensor files go through the same opening */
    ingot_engine *e = NULL;
    ASSERT_EQ(ingot_engine_load(rt, fifo, NULL, &e), INGOT_ERR_IO);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "a FIFO");
    ingot_tensor t;
    ASSERT_EQ(ingot_tensor_load_file(rt, fifo, &t), INGOT_ERR_IO);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "a FIFO");
    ASSERT_EQ(ingot_tensor_load_file(rt, dir, &t), INGOT_ERR_IO);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "a directory");
    ASSERT(t.data == NULL);
    ASSERT(now_s() - t0 < 5);
    unlink(fifo);
    rmdir(dir);
    ingot_runtime_destroy(rt);
}

/* ---- model queries ---------------------------------------------------------------------------- */

TEST(model_queries_name_their_null_argument)
{
    wb mb = relu_model();
    fixture f;
    ASSERT(open_fixture(&f, &mb));
    ingot_tensor_info ti;
    ingot_node_info ni;
    ingot_model_info mi;
    stale_message(f.rt);
    ASSERT_EQ(ingot_model_input_info(f.m, 0, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_FRESH(f.rt, INGOT_ERR_INVALID_ARG, "ingot_model_input_info: out is NULL");
    stale_message(f.rt);
    ASSERT_EQ(ingot_model_output_info(f.m, 0, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_FRESH(f.rt, INGOT_ERR_INVALID_ARG, "ingot_model_output_info: out is NULL");
    stale_message(f.rt);
    ASSERT_EQ(ingot_model_tensor_info(f.m, NULL, &ti), INGOT_ERR_INVALID_ARG);
    ASSERT_FRESH(f.rt, INGOT_ERR_INVALID_ARG, "ingot_model_tensor_info: name is NULL");
    stale_message(f.rt);
    ASSERT_EQ(ingot_model_tensor_info(f.m, "x", NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_FRESH(f.rt, INGOT_ERR_INVALID_ARG, "ingot_model_tensor_info: out is NULL");
    stale_message(f.rt);
    ASSERT_EQ(ingot_model_get_info(f.m, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_FRESH(f.rt, INGOT_ERR_INVALID_ARG, "ingot_model_get_info: out is NULL");
    stale_message(f.rt);
    ASSERT_EQ(ingot_model_node_info(f.m, 0, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_FRESH(f.rt, INGOT_ERR_INVALID_ARG, "ingot_model_node_info: out is NULL");
    /* bad indices */
    ASSERT_EQ(ingot_model_input_info(f.m, -1, &ti), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "input index -1 out of range");
    ASSERT_EQ(ingot_model_output_info(f.m, INT64_MAX, &ti), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_model_node_info(f.m, 1, &ni), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "node index 1 out of range");
    ASSERT(ingot_model_node_input(f.m, 0, 5) == NULL && ingot_model_node_output(f.m, -1, 0) == NULL);
    ASSERT(ingot_model_node_input(NULL, 0, 0) == NULL);
    /* NULL models: a status (no handle to carry a message) */
    ASSERT_EQ(ingot_model_input_info(NULL, 0, &ti), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_model_get_info(NULL, &mi), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_model_input_count(NULL), 0);
    ASSERT_EQ(ingot_model_node_count(NULL), 0);
    ASSERT_EQ(ingot_model_infer(NULL), INGOT_ERR_INVALID_ARG);
    char *json = NULL;
    ASSERT_EQ(ingot_model_describe_json(NULL, &json), INGOT_ERR_INVALID_ARG);
    ingot_model_destroy(NULL);
    close_fixture(&f);
    free(mb.p);
}

/* rank is checked before any dim is read: rank 99 with a 2-element array reads nothing past it */
TEST(set_input_shape_rank_before_dims)
{
    wb mb = relu_model();
    fixture f;
    ASSERT(open_fixture(&f, &mb));
    int64_t *dims = malloc(2 * sizeof *dims); /* heap: ASan sees any read past it */
    dims[0] = 2;
    dims[1] = 4;
    ASSERT_EQ(ingot_model_set_input_shape(f.m, "x", 99, dims), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "input 'x': rank 99 is not supported");
    ASSERT_EQ(ingot_model_set_input_shape(f.m, "x", -1, dims), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "rank -1 is not supported");
    ASSERT_EQ(ingot_model_set_input_shape(f.m, "x", 2, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "dims is NULL with rank 2");
    ASSERT_EQ(ingot_model_set_input_shape(f.m, NULL, 2, dims), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "name is NULL");
    ASSERT_EQ(ingot_model_set_input_shape(f.m, "out", 2, dims), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "the model has no input named 'out'");
    ASSERT_EQ(ingot_model_set_input_shape(f.m, "x", 2, dims), INGOT_OK);
    /* dims whose element count overflows int64 pass the shape check but fail inference, named */
    dims[0] = (int64_t)1 << 62;
    ASSERT_EQ(ingot_model_set_input_shape(f.m, "x", 2, dims), INGOT_OK);
    ASSERT(ingot_model_infer(f.m) != INGOT_OK);
    ASSERT(ingot_runtime_errmsg(f.rt)[0]);
    ASSERT_EQ(ingot_model_set_input_shape(NULL, "x", 2, dims), INGOT_ERR_INVALID_ARG);
    free(dims);
    close_fixture(&f);
    free(mb.p);
}

TEST(set_batch_misuse)
{
    wb mb = relu_model();
    fixture f;
    ASSERT(open_fixture(&f, &mb));
    ASSERT_EQ(ingot_model_set_batch(f.m, 0), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "batch must be at least 1, not 0");
    ASSERT_EQ(ingot_model_set_batch(f.m, -7), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_model_set_batch(NULL, 2), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_model_set_batch(f.m, INT64_MAX), INGOT_OK); /* 1 * batch: no overflow */
    ASSERT(ingot_model_infer(f.m) != INGOT_OK);                 /* but no tensor that large */
    ASSERT_EQ(ingot_model_set_batch(f.m, 3), INGOT_OK);
    ASSERT_EQ(ingot_model_infer(f.m), INGOT_OK);
    close_fixture(&f);
    free(mb.p);
}

/* ---- engine options and profiles --------------------------------------------------------------- */

TEST(build_options_out_of_range)
{
    wb mb = relu_model();
    fixture f;
    ASSERT(open_fixture(&f, &mb));
    ingot_engine *e = (ingot_engine *)(uintptr_t)1;
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = (ingot_backend)99;
    ASSERT_EQ(ingot_engine_build(f.rt, f.m, &bo, &e), INGOT_ERR_INVALID_ARG);
    ASSERT(e == NULL);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "ingot_build_options.backend 99");
    bo = ingot_build_options_default();
    bo.n_threads = -3;
    ASSERT_EQ(ingot_engine_build(f.rt, f.m, &bo, &e), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "n_threads must be in [0, 1024]");
    bo.n_threads = 2000;
    ASSERT_EQ(ingot_engine_build(f.rt, f.m, &bo, &e), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "not 2000");
    bo = ingot_build_options_default();
    bo.device = -1;
    ASSERT_EQ(ingot_engine_build(f.rt, f.m, &bo, &e), INGOT_ERR_INVALID_ARG);
    bo = ingot_build_options_default();
    bo.n_profiles = 2;
    ASSERT_EQ(ingot_engine_build(f.rt, f.m, &bo, &e), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "profiles is NULL");
    ASSERT_EQ(ingot_engine_build(f.rt, NULL, NULL, &e), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "NULL argument");
    ASSERT_EQ(ingot_engine_build(f.rt, f.m, NULL, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_engine_build(NULL, f.m, NULL, &e), INGOT_ERR_INVALID_ARG);
    /* the most threads allowed: capped by the machine, never 1024 OS threads on a small one */
    bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    bo.n_threads = 1024;
    ASSERT_EQ(ingot_engine_build(f.rt, f.m, &bo, &e), INGOT_OK);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    ASSERT(e->opts.n_threads <= (cores > 64 ? cores : 64));
    ingot_engine_destroy(e);
    close_fixture(&f);
    free(mb.p);
}

TEST(profiles_misuse)
{
    wb mb = relu_model();
    fixture f;
    ASSERT(open_fixture(&f, &mb));
    int64_t *lo = calloc(2, sizeof(int64_t)), *hi = calloc(2, sizeof(int64_t));
    lo[0] = 1, lo[1] = 4, hi[0] = 8, hi[1] = 4;
    ASSERT_EQ(ingot_engine_set_input_profile(f.e, "x", 99, lo, lo, hi), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "rank 99 is not supported");
    ASSERT_EQ(ingot_engine_set_input_profile(f.e, "x", 2, lo, NULL, hi), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "NULL argument");
    ASSERT_EQ(ingot_engine_set_input_profile(f.e, NULL, 2, lo, lo, hi), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_engine_set_input_profile(NULL, "x", 2, lo, lo, hi), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_engine_memory_size(f.e, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "bytes is NULL");
    ASSERT_EQ(ingot_engine_max_memory_size(f.e, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "bytes is NULL");
    size_t b;
    ASSERT_EQ(ingot_engine_memory_size(NULL, &b), INGOT_ERR_INVALID_ARG);
    free(lo);
    free(hi);
    close_fixture(&f);
    free(mb.p);
}

/* ---- contexts ---------------------------------------------------------------------------------- */

TEST(context_create_misuse)
{
    wb mb = relu_model();
    fixture f;
    ASSERT(open_fixture(&f, &mb));
    ingot_context *c = (ingot_context *)(uintptr_t)1;
    ASSERT_EQ(ingot_context_create(NULL, NULL, &c), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_context_create(f.e, NULL, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "ingot_context_create: NULL argument");
    ingot_context_options co = ingot_context_options_default();
    co.struct_size = 1;
    ASSERT_EQ(ingot_context_create(f.e, &co, &c), INGOT_ERR_INVALID_ARG);
    ASSERT(c == NULL);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "struct_size 1");
    co = ingot_context_options_default();
    static _Alignas(64) char buf[256];
    co.memory = buf + 1;
    co.memory_bytes = 100;
    ASSERT_EQ(ingot_context_create(f.e, &co, &c), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "is not aligned to 64 bytes");
    co = ingot_context_options_default();
    co.debug_canaries = 5;
    ASSERT_EQ(ingot_context_create(f.e, &co, &c), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "ingot_context_options.debug_canaries must be 0 or 1, not 5");
    co = ingot_context_options_default();
    co.memory_reuse = 2;
    ASSERT_EQ(ingot_context_create(f.e, &co, &c), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "memory_reuse must be 0 or 1");
    co = ingot_context_options_default();
    co.memory_bytes = 4096; /* bytes of no buffer */
    ASSERT_EQ(ingot_context_create(f.e, &co, &c), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(f.rt), "memory_bytes is 4096 but memory is NULL");
    ingot_context_destroy(NULL);
    close_fixture(&f);
    free(mb.p);
}

/* A tensor of rank 99 is refused before its dims are read (ingot_tensor holds INGOT_MAX_RANK) */
TEST(run_rank_before_dims)
{
    wb mb = relu_model();
    fixture f;
    ASSERT(open_fixture(&f, &mb));
    float x[8] = {0};
    ingot_tensor *in = calloc(1, sizeof *in); /* heap: a read past it is caught */
    in->name = "x";
    in->dtype = INGOT_DTYPE_FLOAT;
    in->rank = 99;
    in->data = x;
    in->bytes = sizeof x;
    ASSERT_EQ(ingot_context_run(f.c, in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(f.c), "input 'x': rank 99 is not supported");
    in->rank = -4;
    ASSERT_EQ(ingot_context_run(f.c, in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(f.c), "rank -4 is not supported");
    free(in);
    close_fixture(&f);
    free(mb.p);
}

/* dims [2^62, 4] float: 2^64 elements * 4 bytes. The byte check must see the overflow, not a wrapped
 * product that matches `bytes`. */
TEST(run_element_count_overflow)
{
    wb mb = relu_model();
    fixture f;
    ASSERT(open_fixture(&f, &mb));
    float x[8] = {0};
    ingot_tensor in = {.name = "x", .dtype = INGOT_DTYPE_FLOAT, .rank = 2, .dims = {(int64_t)1 << 62, 4}, .data = x};
    in.bytes = 0; /* (2^62 * 4 * 4) mod 2^64 */
    ASSERT_EQ(ingot_context_run(f.c, &in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(f.c), "input 'x': its shape's byte size overflows");
    in.dims[0] = (int64_t)1 << 61; /* 2^63 elements: the count overflows int64 */
    ASSERT_EQ(ingot_context_run(f.c, &in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(f.c), "overflows");
    in.dims[0] = -1;
    ASSERT_EQ(ingot_context_run(f.c, &in, 1), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(f.c), "negative dim at axis 0");
    in.dims[0] = 2;
    in.bytes = sizeof x;
    in.data = NULL;
    ASSERT_EQ(ingot_context_run(f.c, &in, 1), INGOT_ERR_INPUT);
    in.data = x;
    ASSERT_EQ(ingot_context_run(f.c, &in, 1), INGOT_OK);
    close_fixture(&f);
    free(mb.p);
}

TEST(run_input_given_twice)
{
    wb mb = relu_model();
    fixture f;
    ASSERT(open_fixture(&f, &mb));
    float x[8] = {1, -1, 2, -2, 3, -3, 4, -4};
    ingot_tensor in[2] = {{.name = "x", .dtype = INGOT_DTYPE_FLOAT, .rank = 2, .dims = {2, 4}, .data = x, .bytes = 32},
                          {.name = "x", .dtype = INGOT_DTYPE_FLOAT, .rank = 2, .dims = {2, 4}, .data = x, .bytes = 32}};
    ASSERT_EQ(ingot_context_run(f.c, in, 2), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(f.c), "input 'x' is given twice (inputs[0] and inputs[1])");
    in[1].name = "nope";
    ASSERT_EQ(ingot_context_run(f.c, in, 2), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(f.c), "the model has no input named 'nope'");
    in[1].name = NULL;
    ASSERT_EQ(ingot_context_run(f.c, in, 2), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(f.c), "input 1 has no name");
    ASSERT_EQ(ingot_context_run(f.c, in, 0), INGOT_ERR_INPUT);
    ASSERT_CONTAINS(ingot_context_errmsg(f.c), "input 'x' (float32 [batch,4]) was not given");
    ASSERT_EQ(ingot_context_run(f.c, in, 1), INGOT_OK);
    ingot_tensor o;
    ASSERT_EQ(ingot_context_get_output(f.c, 0, &o), INGOT_OK);
    ASSERT_EQ(((const float *)o.data)[1], 0);
    ASSERT_EQ(ingot_context_run(NULL, in, 1), INGOT_ERR_INVALID_ARG);
    close_fixture(&f);
    free(mb.p);
}

TEST(context_queries_misuse)
{
    wb mb = relu_model();
    fixture f;
    ASSERT(open_fixture(&f, &mb));
    ingot_tensor o;
    ingot_memory_info mi;
    ASSERT_EQ(ingot_context_get_output(NULL, 0, &o), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_context_get_output(f.c, 0, &o), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_context_errmsg(f.c), "has not run");
    ASSERT_EQ(ingot_context_get_output(f.c, -1, &o), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_context_errmsg(f.c), "output index -1 out of range");
    ASSERT_EQ(ingot_context_memory_info(NULL, &mi), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_context_memory_info(f.c, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_context_errmsg(f.c), "out is NULL");
    ASSERT_STREQ(ingot_context_errmsg(NULL), "no context");
    close_fixture(&f);
    free(mb.p);
}

TEST(engine_queries_name_their_null_argument)
{
    wb mb = relu_model();
    fixture f;
    ASSERT(open_fixture(&f, &mb));
    ingot_tensor_info ti;
    int32_t rank;
    int64_t dims[INGOT_MAX_RANK];
    char *json = NULL;
    stale_message(f.rt);
    ASSERT_EQ(ingot_engine_input_info(f.e, 0, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_FRESH(f.rt, INGOT_ERR_INVALID_ARG, "ingot_engine_input_info: out is NULL");
    stale_message(f.rt);
    ASSERT_EQ(ingot_engine_output_info(f.e, 7, &ti), INGOT_ERR_INVALID_ARG);
    ASSERT_FRESH(f.rt, INGOT_ERR_INVALID_ARG, "ingot_engine_output_info: index 7 is outside [0, 1)");
    stale_message(f.rt);
    ASSERT_EQ(ingot_engine_input_default_shape(f.e, 0, NULL, dims), INGOT_ERR_INVALID_ARG);
    ASSERT_FRESH(f.rt, INGOT_ERR_INVALID_ARG, "rank is NULL");
    stale_message(f.rt);
    ASSERT_EQ(ingot_engine_input_default_shape(f.e, -1, &rank, dims), INGOT_ERR_INVALID_ARG);
    ASSERT_FRESH(f.rt, INGOT_ERR_INVALID_ARG, "index -1 is outside");
    stale_message(f.rt);
    ASSERT_EQ(ingot_engine_describe_json(f.e, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_FRESH(f.rt, INGOT_ERR_INVALID_ARG, "ingot_engine_describe_json: out is NULL");
    stale_message(f.rt);
    ASSERT_EQ(ingot_model_describe_json(f.m, NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_FRESH(f.rt, INGOT_ERR_INVALID_ARG, "ingot_model_describe_json: out is NULL");
    ASSERT_EQ(ingot_engine_input_info(NULL, 0, &ti), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_engine_describe_json(NULL, &json), INGOT_ERR_INVALID_ARG);
    ASSERT(json == NULL);
    close_fixture(&f);
    free(mb.p);
}

/* ---- tensor files ------------------------------------------------------------------------------ */

TEST(tensor_files_misuse)
{
    ingot_runtime *rt = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    ingot_tensor t;
    stale_message(rt);
    ASSERT_EQ(ingot_tensor_load_file(rt, NULL, &t), INGOT_ERR_INVALID_ARG);
    ASSERT_FRESH(rt, INGOT_ERR_INVALID_ARG, "ingot_tensor_load_file: path and out must not be NULL");
    ASSERT_EQ(ingot_tensor_load_file(rt, "/tmp", NULL), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_tensor_load_file(rt, "/nonexistent/t.npy", &t), INGOT_ERR_IO);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "No such file");
    ASSERT_EQ(ingot_tensor_save_npy(rt, NULL, &t), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "ingot_tensor_save_npy: path and tensor must not be NULL");
    ingot_tensor bad = {.name = "t", .dtype = INGOT_DTYPE_FLOAT, .rank = 99};
    ASSERT_EQ(ingot_tensor_save_npy(rt, "/tmp/ingot_never.npy", &bad), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "rank 99 out of range");
    bad.rank = 2;
    bad.dims[0] = (int64_t)1 << 62;
    bad.dims[1] = 4;
    ASSERT_EQ(ingot_tensor_save_npy(rt, "/tmp/ingot_never.npy", &bad), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "is invalid");
    ingot_tensor_free(NULL);
    ingot_runtime_destroy(rt);
}

/* A sparse file far larger than the machine's memory: refused with a message before any allocation. */
TEST(tensor_file_larger_than_memory)
{
    ingot_runtime *rt = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    char path[] = "/tmp/ingot_huge_XXXXXX";
    int fd = mkstemp(path);
    ASSERT(fd >= 0);
    static const char hdr[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': "
                              "(274877906944, 4), }";
    char h[128];
    memset(h, ' ', sizeof h);
    memcpy(h, hdr, sizeof hdr - 1);
    h[127] = '\n';
    int ok = write(fd, h, sizeof h) == (ssize_t)sizeof h && ftruncate(fd, (off_t)128 + ((off_t)1 << 42)) == 0;
    close(fd);
    if (ok) { /* a file system without sparse files of 4 TiB: nothing to test */
        ingot_tensor t;
        ASSERT_EQ(ingot_tensor_load_file(rt, path, &t), INGOT_ERR_INPUT);
        ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "more than the machine's memory");
    }
    unlink(path);
    ingot_runtime_destroy(rt);
}

/* ---- attacker-sized models --------------------------------------------------------------------- */

static wb attr_int(const char *name, int64_t v)
{
    wb a = {0};
    w_str(&a, 1, name);
    w_int(&a, 3, v);
    w_int(&a, 20, 2);
    return a;
}

/* Relu with n attributes a0..a{n-1} (ONNX defines none of them: ignored), the last one named `last`. */
static wb many_attrs_model(int n, const char *last)
{
    wb g = {0}, vi, nd;
    const int64_t xd[1] = {4};
    const char *in[1] = {"x"}, *out[1] = {"y"};
    nd = node("Relu", "relu", in, 1, out, 1);
    char name[32];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "a%d", i);
        wb a = attr_int(i == n - 1 && last ? last : name, i);
        w_msg(&nd, 5, &a);
    }
    w_msg(&g, 1, &nd);
    w_str(&g, 2, "attrs");
    vi = value_info("x", 1, 1, xd, NULL);
    w_msg(&g, 11, &vi);
    vi = value_info("y", 1, 1, xd, NULL);
    w_msg(&g, 12, &vi);
    return model(&g, 17);
}

TEST(two_hundred_thousand_attributes)
{
    ingot_runtime *rt = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    wb mb = many_attrs_model(200000, NULL);
    ingot_model *m = NULL;
    double t0 = now_s();
    ASSERT_EQ(ingot_model_load_buffer(rt, mb.p, mb.n, NULL, NULL, &m), INGOT_OK);
    double t = now_s() - t0;
    printf("200k attributes: loaded in %.2f s\n", t);
    ASSERT(t < 10);
    ingot_model_destroy(m);
    free(mb.p);
    mb = many_attrs_model(200000, "a777"); /* the last repeats an earlier one */
    t0 = now_s();
    ASSERT_EQ(ingot_model_load_buffer(rt, mb.p, mb.n, NULL, NULL, &m), INGOT_ERR_MODEL_INVALID);
    ASSERT(now_s() - t0 < 10);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "node 'relu' (Relu) has attribute 'a777' twice");
    free(mb.p);
    ingot_runtime_destroy(rt);
}

/* n inputs i0..i{n-1} of shape [1], summed by a chain of Add nodes into y [1]. */
static wb many_inputs_model(int n)
{
    wb g = {0}, vi, nd;
    const int64_t d1[1] = {1};
    char a[32], b[32], o[32];
    for (int i = 1; i < n; i++) {
        snprintf(a, sizeof a, i == 1 ? "i0" : "s%d", i - 1);
        snprintf(b, sizeof b, "i%d", i);
        snprintf(o, sizeof o, i == n - 1 ? "y" : "s%d", i);
        const char *in[2] = {a, b}, *out[1] = {o};
        nd = node("Add", NULL, in, 2, out, 1);
        w_msg(&g, 1, &nd);
    }
    w_str(&g, 2, "inputs");
    for (int i = 0; i < n; i++) {
        snprintf(a, sizeof a, "i%d", i);
        vi = value_info(a, 1, 1, d1, NULL);
        w_msg(&g, 11, &vi);
    }
    vi = value_info("y", 1, 1, d1, NULL);
    w_msg(&g, 12, &vi);
    return model(&g, 17);
}

TEST(fifty_thousand_inputs)
{
    enum { N = 50000 };
    wb mb = many_inputs_model(N);
    fixture f;
    double t0 = now_s();
    ASSERT(open_fixture(&f, &mb));
    printf("50k inputs: load and build %.2f s\n", now_s() - t0);
    ingot_tensor *in = calloc(N, sizeof *in);
    float *x = calloc(N, sizeof *x);
    char(*names)[16] = calloc(N, sizeof *names);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "i%d", N - 1 - i); /* given in reverse order */
        x[i] = (float)((N - 1 - i) % 3);                       /* input iK holds K mod 3 */
        in[i] = (ingot_tensor){
            .name = names[i], .dtype = INGOT_DTYPE_FLOAT, .rank = 1, .dims = {1}, .data = &x[i], .bytes = 4};
    }
    ASSERT_EQ(ingot_model_set_batch(f.m, 2), INGOT_OK); /* linear in the inputs too */
    t0 = now_s();
    ingot_status st = ingot_context_run(f.c, in, N);
    double t = now_s() - t0;
    if (st != INGOT_OK) printf("%s\n", ingot_context_errmsg(f.c));
    ASSERT_EQ(st, INGOT_OK);
    printf("50k inputs: run in %.2f s\n", t);
    ASSERT(t < 10);
    ingot_tensor o;
    ASSERT_EQ(ingot_context_get_output(f.c, 0, &o), INGOT_OK);
    ASSERT_EQ(((const float *)o.data)[0], 49999); /* 16666 * (0 + 1 + 2) + (0 + 1) */
    in[N - 1].name = in[7].name;                  /* a duplicate, found as fast */
    t0 = now_s();
    ASSERT_EQ(ingot_context_run(f.c, in, N), INGOT_ERR_INPUT);
    ASSERT(now_s() - t0 < 10);
    ASSERT_CONTAINS(ingot_context_errmsg(f.c), "is given twice");
    free(in);
    free(x);
    free(names);
    close_fixture(&f);
    free(mb.p);
}

/* A chain of n Relu nodes, each output written in place over the last: one buffer, n tensors. */
static wb many_nodes_model(int n)
{
    wb g = {0}, vi, nd;
    const int64_t d[1] = {16};
    char a[32], b[32];
    for (int i = 0; i < n; i++) {
        snprintf(a, sizeof a, i ? "t%d" : "x", i - 1);
        snprintf(b, sizeof b, i == n - 1 ? "y" : "t%d", i);
        const char *in[1] = {a}, *out[1] = {b};
        nd = node("Relu", NULL, in, 1, out, 1);
        w_msg(&g, 1, &nd);
    }
    w_str(&g, 2, "nodes");
    vi = value_info("x", 1, 1, d, NULL);
    w_msg(&g, 11, &vi);
    vi = value_info("y", 1, 1, d, NULL);
    w_msg(&g, 12, &vi);
    return model(&g, 17);
}

TEST(hundred_thousand_nodes_planned_and_checked)
{
    enum { N = 100000 };
    wb mb = many_nodes_model(N);
    ingot_runtime *rt = NULL;
    ingot_model *m = NULL;
    ingot_engine *e = NULL;
    ingot_context *c = NULL;
    double t0 = now_s();
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    ASSERT_EQ(ingot_model_load_buffer(rt, mb.p, mb.n, NULL, NULL, &m), INGOT_OK);
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    bo.n_threads = 1;
    bo.optimize = 0;
    ASSERT_EQ(ingot_engine_build(rt, m, &bo, &e), INGOT_OK);
    printf("100k nodes: load and build %.2f s\n", now_s() - t0);
    ingot_context_options co = ingot_context_options_default();
    co.debug_canaries = 1; /* the plan is checked (ig__plan_check) before the run */
    ASSERT_EQ(ingot_context_create(e, &co, &c), INGOT_OK);
    float x[16];
    for (int i = 0; i < 16; i++) x[i] = (float)i - 8;
    ingot_tensor in = {.name = "x", .dtype = INGOT_DTYPE_FLOAT, .rank = 1, .dims = {16}, .data = x, .bytes = 64};
    t0 = now_s();
    ingot_status st = ingot_context_run(c, &in, 1);
    double t = now_s() - t0;
    if (st != INGOT_OK) printf("%s\n", ingot_context_errmsg(c));
    ASSERT_EQ(st, INGOT_OK);
    printf("100k nodes: planned, checked and run in %.2f s\n", t);
    ASSERT(t < 20);
    ingot_tensor o;
    ASSERT_EQ(ingot_context_get_output(c, 0, &o), INGOT_OK);
    ASSERT_EQ(((const float *)o.data)[15], 7);
    ASSERT_EQ(((const float *)o.data)[0], 0);
    ingot_context_destroy(c);
    ingot_engine_destroy(e);
    ingot_model_destroy(m);
    ingot_runtime_destroy(rt);
    free(mb.p);
}

/* The in-place rule of the plan checker, now a sort and a sweep, still catches a write over a tensor
 * that is read later: t1 = Relu(t0) is put in t0's buffer while y = Add(t0, t1) still reads t0. */
TEST(plan_check_catches_a_bad_in_place_write)
{
    wb g = {0}, vi, nd;
    const int64_t d[1] = {16};
    const char *i0[1] = {"x"}, *o0[1] = {"t0"}, *i1[1] = {"t0"}, *o1[1] = {"t1"}, *i2[2] = {"t0", "t1"}, *o2[1] = {"y"};
    nd = node("Relu", "r0", i0, 1, o0, 1);
    w_msg(&g, 1, &nd);
    nd = node("Relu", "r1", i1, 1, o1, 1);
    w_msg(&g, 1, &nd);
    nd = node("Add", "add", i2, 2, o2, 1);
    w_msg(&g, 1, &nd);
    w_str(&g, 2, "inplace");
    vi = value_info("x", 1, 1, d, NULL);
    w_msg(&g, 11, &vi);
    vi = value_info("y", 1, 1, d, NULL);
    w_msg(&g, 12, &vi);
    wb mb = model(&g, 17);
    fixture f = {0};
    ASSERT_EQ(ingot_runtime_create(&f.rt), INGOT_OK);
    ASSERT_EQ(ingot_model_load_buffer(f.rt, mb.p, mb.n, NULL, NULL, &f.m), INGOT_OK);
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    bo.optimize = 0; /* the graph as written: no fusion of the Relus */
    ASSERT_EQ(ingot_engine_build(f.rt, f.m, &bo, &f.e), INGOT_OK);
    ASSERT_EQ(ingot_context_create(f.e, NULL, &f.c), INGOT_OK);
    float x[16] = {0};
    ingot_tensor in = {.name = "x", .dtype = INGOT_DTYPE_FLOAT, .rank = 1, .dims = {16}, .data = x, .bytes = 64};
    ASSERT_EQ(ingot_context_run(f.c, &in, 1), INGOT_OK);
    ig_plan *p = &f.c->plan;
    ig_err err = {0};
    ASSERT_EQ(ig__plan_check(&f.c->graph, p, &err), INGOT_OK);
    int32_t t0 = ig__graph_find(&f.c->graph, "t0"), t1 = ig__graph_find(&f.c->graph, "t1");
    ASSERT(t0 >= 0 && t1 >= 0 && p->values[t1].kind == IG_PLAN_OWN);
    int32_t r = p->values[t0].root;
    for (int32_t v = 0; v < p->n_values; v++) /* whatever t1's buffer held moves with it */
        if (p->values[v].kind != IG_PLAN_NONE && p->values[v].root == t1) p->values[v].root = r;
    p->values[t1].kind = IG_PLAN_INPLACE;
    p->values[t1].offset = p->values[r].offset;
    ASSERT(ig__plan_check(&f.c->graph, p, &err) != INGOT_OK);
    ASSERT_CONTAINS(err.msg, "is written in place at step 1 over 't0', which is still read at step 2");
    close_fixture(&f);
    free(mb.p);
}

/* a, b int32 [3] (inputs) -> op -> y */
static wb int_binary_model(const char *op)
{
    wb g = {0}, vi, nd;
    const int64_t d[1] = {3};
    const char *in[2] = {"a", "b"}, *out[1] = {"y"};
    nd = node(op, "op", in, 2, out, 1);
    w_msg(&g, 1, &nd);
    w_str(&g, 2, "intdiv");
    vi = value_info("a", 6, 1, d, NULL);
    w_msg(&g, 11, &vi);
    vi = value_info("b", 6, 1, d, NULL);
    w_msg(&g, 11, &vi);
    vi = value_info("y", 6, 1, d, NULL);
    w_msg(&g, 12, &vi);
    return model(&g, 17);
}

/* Integer Div and Mod by zero: a run error naming the element, never a made-up value. */
TEST(integer_division_by_zero_is_a_run_error)
{
    const char *ops[2] = {"Div", "Mod"};
    for (int k = 0; k < 2; k++) {
        wb mb = int_binary_model(ops[k]);
        fixture f;
        ASSERT(open_fixture(&f, &mb));
        int32_t a[3] = {7, -8, 9}, b[3] = {2, 0, 4};
        ingot_tensor in[2] = {
            {.name = "a", .dtype = INGOT_DTYPE_INT32, .rank = 1, .dims = {3}, .data = a, .bytes = 12},
            {.name = "b", .dtype = INGOT_DTYPE_INT32, .rank = 1, .dims = {3}, .data = b, .bytes = 12}};
        ASSERT_EQ(ingot_context_run(f.c, in, 2), INGOT_ERR_INPUT);
        ASSERT_CONTAINS(ingot_context_errmsg(f.c), "integer division by zero (element 1 of divisor 'b' is 0)");
        ASSERT_CONTAINS(ingot_context_errmsg(f.c), ops[k]);
        ingot_tensor o;
        ASSERT_EQ(ingot_context_get_output(f.c, 0, &o), INGOT_ERR_INVALID_ARG); /* no outputs */
        b[1] = 3;
        ASSERT_EQ(ingot_context_run(f.c, in, 2), INGOT_OK);
        ASSERT_EQ(ingot_context_get_output(f.c, 0, &o), INGOT_OK);
        ASSERT_EQ(((const int32_t *)o.data)[1], k == 0 ? -2 : 1); /* -8 / 3 truncates; Mod takes the divisor's sign */
        close_fixture(&f);
        free(mb.p);
    }
}

/* Resize with tf_crop_and_resize: the roi is a run-time input, so it may be huge, infinite or NaN.
 * Converting such coordinates to indices is undefined behaviour unless they are bounded first; points
 * outside the crop take the extrapolation value. */
TEST(resize_run_time_roi_out_of_range)
{
    wb g = {0}, vi, nd, t, a;
    const int64_t xd[4] = {1, 1, 4, 4}, rd[1] = {8}, sd[1] = {4}, yd[4] = {1, 1, 8, 8};
    const float scales[4] = {1, 1, 2, 2};
    const char *in[3] = {"x", "roi", "scales"}, *out[1] = {"y"};
    const char *modes[2] = {"nearest", "linear"};
    for (int k = 0; k < 2; k++) {
        g = (wb){0};
        nd = node("Resize", "resize", in, 3, out, 1);
        a = (wb){0};
        w_str(&a, 1, "coordinate_transformation_mode");
        w_str(&a, 4, "tf_crop_and_resize");
        w_int(&a, 20, 3);
        w_msg(&nd, 5, &a);
        w_str(&a, 1, "mode");
        w_str(&a, 4, modes[k]);
        w_int(&a, 20, 3);
        w_msg(&nd, 5, &a);
        w_str(&a, 1, "extrapolation_value");
        w_f32(&a, 2, -5.0f);
        w_int(&a, 20, 1);
        w_msg(&nd, 5, &a);
        w_msg(&g, 1, &nd);
        w_str(&g, 2, "resize");
        t = tensor_raw("scales", 1, 1, sd, scales, sizeof scales);
        w_msg(&g, 5, &t);
        vi = value_info("x", 1, 4, xd, NULL);
        w_msg(&g, 11, &vi);
        vi = value_info("roi", 1, 1, rd, NULL);
        w_msg(&g, 11, &vi);
        vi = value_info("y", 1, 4, yd, NULL);
        w_msg(&g, 12, &vi);
        wb mb = model(&g, 13);
        fixture f;
        ASSERT(open_fixture(&f, &mb));
        float x[16];
        for (int i = 0; i < 16; i++) x[i] = (float)i;
        const float bad[4][8] = {{0, 0, 1e30f, -1e30f, 1, 1, -1e30f, 1e30f},
                                 {0, 0, NAN, NAN, 1, 1, NAN, NAN},
                                 {0, 0, -INFINITY, 0, 1, 1, INFINITY, 1},
                                 {0, 0, 3e38f, 3e38f, 1, 1, 3e38f, 3e38f}};
        for (int j = 0; j < 4; j++) {
            ingot_tensor ins[2] = {
                {.name = "x", .dtype = INGOT_DTYPE_FLOAT, .rank = 4, .dims = {1, 1, 4, 4}, .data = x, .bytes = 64},
                {.name = "roi",
                 .dtype = INGOT_DTYPE_FLOAT,
                 .rank = 1,
                 .dims = {8},
                 .data = (void *)bad[j],
                 .bytes = 32}};
            ASSERT_EQ(ingot_context_run(f.c, ins, 2), INGOT_OK);
            ingot_tensor o;
            ASSERT_EQ(ingot_context_get_output(f.c, 0, &o), INGOT_OK);
            const float *y = o.data;
            for (int i = 0; i < 64; i++) ASSERT(y[i] == -5.0f || (y[i] >= 0 && y[i] <= 15));
        }
        close_fixture(&f);
        free(mb.p);
    }
}

TEST_MAIN(RUN(runtime_create_and_errmsg); RUN(load_buffer_null_data_with_size); RUN(load_null_path_and_options);
          RUN(special_files_as_model); RUN(model_queries_name_their_null_argument);
          RUN(set_input_shape_rank_before_dims); RUN(set_batch_misuse); RUN(build_options_out_of_range);
          RUN(profiles_misuse); RUN(context_create_misuse); RUN(run_rank_before_dims); RUN(run_element_count_overflow);
          RUN(run_input_given_twice); RUN(context_queries_misuse); RUN(engine_queries_name_their_null_argument);
          RUN(tensor_files_misuse); RUN(tensor_file_larger_than_memory); RUN(two_hundred_thousand_attributes);
          RUN(fifty_thousand_inputs); RUN(hundred_thousand_nodes_planned_and_checked);
          RUN(plan_check_catches_a_bad_in_place_write); RUN(integer_division_by_zero_is_a_run_error);
          RUN(resize_run_time_roi_out_of_range))
