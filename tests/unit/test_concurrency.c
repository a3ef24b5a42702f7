/*
 * test_concurrency.c -- one engine, several contexts, several threads (docs/OPTIMIZER.md, "Engine and
 * contexts"): each thread creates its own context of a shared CPU engine and runs it many times on
 * inputs of its own, switching batch now and then (re-inference and re-planning on the context while
 * the others run). Every output must equal, bit for bit, what a run of the same engine on one thread
 * computed for the same inputs. The engine's thread pool has 4 threads whatever the machine, so the
 * contexts contend for it (a busy pool runs the caller's range on the caller's thread).
 *
 * Run under ThreadSanitizer by scripts/test.sh (build-tsan): a data race anywhere on the path -- pool,
 * kernels, allocation counter, error slots, the shared graph -- is a report, and a report fails.
 */
#include "ingot.h"
#include "pbwriter.h"
#include "test.h"

#include <pthread.h>
#include <stdint.h>

#define N_THREADS 4
#define N_RUNS    200
#define C_IN      8
#define C_OUT     16
#define HW        34
#define FLAT      (C_OUT * (HW - 2) * (HW - 2))
#define N_OUT     32
#define MAX_BATCH 4

static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill(float *p, size_t n, uint64_t seed, float scale)
{
    for (size_t i = 0; i < n; i++) p[i] = scale * (float)((double)(next_rand(&seed) >> 11) / 4503599627370496.0 - 1.0);
}

/* x [batch, 8, 16, 16] -> Conv 3x3 (16 filters, bias) -> Relu -> Flatten -> MatMul [3136, 32] -> Add bias
 * -> out [batch, 32]. The optimizer fuses Conv + Relu and MatMul + Add; the products are large enough
 * (batch >= 2) for the GEMM to use the pool. */
static wb conv_matmul_model(void)
{
    static float w1[C_OUT * C_IN * 9], b1[C_OUT], w2[FLAT * N_OUT], b2[N_OUT];
    fill(w1, sizeof w1 / 4, 1, 0.2f);
    fill(b1, sizeof b1 / 4, 2, 0.1f);
    fill(w2, sizeof w2 / 4, 3, 0.05f);
    fill(b2, sizeof b2 / 4, 4, 0.1f);
    wb g = {0}, t, vi, n;
    const int64_t dw1[4] = {C_OUT, C_IN, 3, 3}, db1[1] = {C_OUT}, dw2[2] = {FLAT, N_OUT}, db2[1] = {N_OUT};
    const int64_t xd[4] = {-1, C_IN, HW, HW}, od[2] = {-1, N_OUT};
    const char *xp[4] = {"batch", NULL, NULL, NULL}, *op[2] = {"batch", NULL};
    const char *i_conv[3] = {"x", "W1", "B1"}, *o_conv[1] = {"c"};
    const char *i_relu[1] = {"c"}, *o_relu[1] = {"r"};
    const char *i_flat[1] = {"r"}, *o_flat[1] = {"f"};
    const char *i_mm[2] = {"f", "W2"}, *o_mm[1] = {"m"};
    const char *i_add[2] = {"m", "B2"}, *o_add[1] = {"out"};
    n = node("Conv", "conv", i_conv, 3, o_conv, 1);
    w_msg(&g, 1, &n);
    n = node("Relu", "relu", i_relu, 1, o_relu, 1);
    w_msg(&g, 1, &n);
    n = node("Flatten", "flatten", i_flat, 1, o_flat, 1);
    w_msg(&g, 1, &n);
    n = node("MatMul", "matmul", i_mm, 2, o_mm, 1);
    w_msg(&g, 1, &n);
    n = node("Add", "add", i_add, 2, o_add, 1);
    w_msg(&g, 1, &n);
    w_str(&g, 2, "conv_matmul");
    t = tensor_raw("W1", 1, 4, dw1, w1, sizeof w1);
    w_msg(&g, 5, &t);
    t = tensor_raw("B1", 1, 1, db1, b1, sizeof b1);
    w_msg(&g, 5, &t);
    t = tensor_raw("W2", 1, 2, dw2, w2, sizeof w2);
    w_msg(&g, 5, &t);
    t = tensor_raw("B2", 1, 1, db2, b2, sizeof b2);
    w_msg(&g, 5, &t);
    vi = value_info("x", 1, 4, xd, xp);
    w_msg(&g, 11, &vi);
    vi = value_info("out", 1, 2, od, op);
    w_msg(&g, 12, &vi);
    return model(&g, 17);
}

/* The batches a thread runs: its own most of the time, 1 every 25th run (a new shape for its context). */
static int64_t batch_of(int thread, int run) { return run % 25 == 24 ? 1 : (thread % 2 ? 2 : MAX_BATCH); }

typedef struct job {
    ingot_engine *e;
    int thread;
    float x[2][MAX_BATCH * C_IN * HW * HW]; /* [0]: the thread's batch, [1]: batch 1 */
    float ref[2][MAX_BATCH * N_OUT];
    int mismatches, failures;
    char msg[512];
} job;

static ingot_tensor tensor_for(job *j, int which, int64_t batch)
{
    ingot_tensor t = {.name = "x",
                      .dtype = INGOT_DTYPE_FLOAT,
                      .rank = 4,
                      .dims = {batch, C_IN, HW, HW},
                      .data = j->x[which],
                      .bytes = (size_t)batch * C_IN * HW * HW * sizeof(float)};
    return t;
}

/* One run; the output copied to out (n floats). */
static ingot_status run_once(ingot_context *c, job *j, int which, int64_t batch, float *out)
{
    ingot_tensor in = tensor_for(j, which, batch), o;
    ingot_status st = ingot_context_run(c, &in, 1);
    if (st == INGOT_OK) st = ingot_context_get_output(c, 0, &o);
    if (st != INGOT_OK) {
        snprintf(j->msg, sizeof j->msg, "thread %d: %s: %s", j->thread, ingot_status_name(st), ingot_context_errmsg(c));
        return st;
    }
    if (o.rank != 2 || o.dims[0] != batch || o.dims[1] != N_OUT || o.bytes != (size_t)batch * N_OUT * sizeof(float)) {
        snprintf(j->msg, sizeof j->msg, "thread %d: output of shape [%lld, %lld]", j->thread, (long long)o.dims[0],
                 (long long)o.dims[1]);
        return INGOT_ERR_INTERNAL;
    }
    memcpy(out, o.data, o.bytes);
    return INGOT_OK;
}

static void *worker(void *arg)
{
    job *j = arg;
    ingot_context *c = NULL;
    /* contexts are created concurrently too */
    if (ingot_context_create(j->e, NULL, &c) != INGOT_OK) {
        j->failures++;
        snprintf(j->msg, sizeof j->msg, "thread %d: ingot_context_create failed", j->thread);
        return NULL;
    }
    float out[MAX_BATCH * N_OUT];
    for (int r = 0; r < N_RUNS; r++) {
        int64_t batch = batch_of(j->thread, r);
        int which = batch == 1 ? 1 : 0;
        if (run_once(c, j, which, batch, out) != INGOT_OK) {
            j->failures++;
            break;
        }
        if (memcmp(out, j->ref[which], (size_t)batch * N_OUT * sizeof(float)) != 0) j->mismatches++;
    }
    ingot_context_destroy(c);
    return NULL;
}

TEST(contexts_on_threads_match_one_thread)
{
    wb m = conv_matmul_model();
    ingot_runtime *rt = NULL;
    ingot_model *md = NULL;
    ingot_engine *e = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    ASSERT_EQ(ingot_model_load_buffer(rt, m.p, m.n, NULL, NULL, &md), INGOT_OK);
    free(m.p);
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    bo.n_threads = 4; /* a pool of several threads even on a 2-core machine */
    ASSERT_EQ(ingot_engine_build(rt, md, &bo, &e), INGOT_OK);
    ingot_model_destroy(md); /* the engine holds what it needs */

    static job jobs[N_THREADS];
    ingot_context *ref = NULL;
    ASSERT_EQ(ingot_context_create(e, NULL, &ref), INGOT_OK);
    for (int t = 0; t < N_THREADS; t++) {
        job *j = &jobs[t];
        memset(j, 0, sizeof *j);
        j->e = e;
        j->thread = t;
        int64_t b = batch_of(t, 0);
        fill(j->x[0], (size_t)b * C_IN * HW * HW, 100 + (uint64_t)t, 1.0f);
        fill(j->x[1], (size_t)C_IN * HW * HW, 200 + (uint64_t)t, 1.0f);
        /* the references: one thread, one context, nothing else running */
        ASSERT_EQ(run_once(ref, j, 0, b, j->ref[0]), INGOT_OK);
        ASSERT_EQ(run_once(ref, j, 1, 1, j->ref[1]), INGOT_OK);
    }
    ingot_context_destroy(ref);
    /* inputs differ per thread, so equal outputs across threads would hide mixed-up contexts */
    ASSERT(memcmp(jobs[0].ref[0], jobs[2].ref[0], MAX_BATCH * N_OUT * sizeof(float)) != 0);

    pthread_t th[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) ASSERT_EQ(pthread_create(&th[t], NULL, worker, &jobs[t]), 0);
    for (int t = 0; t < N_THREADS; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < N_THREADS; t++) {
        if (jobs[t].failures) fprintf(stderr, "  %s\n", jobs[t].msg);
        ASSERT_EQ(jobs[t].failures, 0);
        ASSERT_EQ(jobs[t].mismatches, 0);
    }
    ASSERT_EQ(ingot_runtime_errcode(rt), INGOT_OK); /* runs never write the runtime */
    ingot_engine_destroy(e);
    ingot_runtime_destroy(rt);
}

TEST_MAIN(RUN(contexts_on_threads_match_one_thread))
