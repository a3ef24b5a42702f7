/*
 * test_diag.c -- the diagnostics stage (src/diag) on synthetic step records with known answers: the
 * classifier's four classes and their edges, the cures, the model's shares, fusable traffic, capacity and
 * the verdict; the JSON, trace and HTML writers; the ceilings cache. Also the CPU profile through the
 * API on a one-node graph (times, costs, live bytes) and the memory accounts.
 */
#define _POSIX_C_SOURCE 200809L
#include "test.h"

#include "diag/diag.h"
#include "pbwriter.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* A device with round numbers: 1000 GB/s, 50 TFLOP/s fp32, 500 fp16, 5 us per launch. */
static ig_diag_ceilings ceil_gpu(void)
{
    ig_diag_ceilings c;
    memset(&c, 0, sizeof c);
    snprintf(c.backend, sizeof c.backend, "cuda");
    snprintf(c.device, sizeof c.device, "Test GPU");
    snprintf(c.key, sizeof c.key, "test|gpu");
    c.copy_gbs = 1000;
    c.fp32_tflops = 50;
    c.fp16_tflops = 500;
    c.bf16_tflops = 500;
    c.launch_us = 5;
    return c;
}

static ig_diag_step step(const char *name, const char *op, double ms, double flops, double bytes, ingot_dtype t)
{
    ig_diag_step s;
    memset(&s, 0, sizeof s);
    snprintf(s.p.name, sizeof s.p.name, "%s", name);
    snprintf(s.p.op, sizeof s.p.op, "%s", op);
    snprintf(s.p.kind, sizeof s.p.kind, "ew");
    s.p.ms = ms;
    s.p.flops = flops;
    s.p.bytes_read = bytes / 2;
    s.p.bytes_written = bytes / 2;
    s.p.math_dtype = t;
    s.p.covers = 1;
    return s;
}

TEST(classify_bandwidth)
{
    ig_diag_ceilings c = ceil_gpu();
    /* 1 GB in 1.25 ms: 800 GB/s, 80% of the copy bandwidth */
    ig_diag_step s = step("add", "Add", 1.25, 2.5e8, 1e9, INGOT_DTYPE_FLOAT);
    ig__diag_classify(&c, true, &s);
    ASSERT_EQ(s.cls, IG_DIAG_BANDWIDTH);
    ASSERT_NEAR(s.gbs, 800, 1e-6);
    ASSERT_NEAR(s.pct_bw, 0.8, 1e-9);
    ASSERT_NEAR(s.intensity, 0.25, 1e-12);
    ASSERT_NEAR(s.ideal_us, 1000, 1e-6);
    ASSERT_CONTAINS(s.cure, "fuse");
    ASSERT_CONTAINS(s.cure, "lower precision"); /* fp32 storage */
    s.p.math_dtype = INGOT_DTYPE_FLOAT16;
    ig__diag_classify(&c, true, &s);
    ASSERT(strstr(s.cure, "lower precision") == NULL);
    /* just under the edge (59%): not bandwidth-bound, and its work is large: other */
    ig_diag_step e = step("add", "Add", 1e9 / 0.59e12 * 1e3, 0, 1e9, INGOT_DTYPE_FLOAT);
    ig__diag_classify(&c, true, &e);
    ASSERT_EQ(e.cls, IG_DIAG_OTHER);
    ASSERT_CONTAINS(e.cure, "better kernel");
    /* a GEMM that is bandwidth-bound (weights dominate): a bigger batch reuses them */
    ig_diag_step g = step("fc", "ingot.FusedMatMul", 1.25, 2e9, 1e9, INGOT_DTYPE_FLOAT16);
    snprintf(g.p.kind, sizeof g.p.kind, "gemm");
    ig__diag_classify(&c, true, &g);
    ASSERT_EQ(g.cls, IG_DIAG_BANDWIDTH);
    ASSERT_CONTAINS(g.cure, "bigger batch");
}

TEST(classify_compute)
{
    ig_diag_ceilings c = ceil_gpu();
    /* fp16: 1e12 FLOPs in 2.5 ms = 400 TFLOP/s, 80% of 500 */
    ig_diag_step s = step("gemm", "MatMul", 2.5, 1e12, 1e8, INGOT_DTYPE_FLOAT16);
    ig__diag_classify(&c, true, &s);
    ASSERT_EQ(s.cls, IG_DIAG_COMPUTE);
    ASSERT_NEAR(s.pct_flops, 0.8, 1e-9);
    ASSERT_NEAR(s.tflops, 400, 1e-6);
    ASSERT_CONTAINS(s.cure, "FLOP roof");
    /* the same work in fp32 at 40 TFLOP/s is 80% of the fp32 roof: lower precision is the cure */
    s = step("gemm", "MatMul", 25, 1e12, 1e8, INGOT_DTYPE_FLOAT);
    ig__diag_classify(&c, true, &s);
    ASSERT_EQ(s.cls, IG_DIAG_COMPUTE);
    ASSERT_CONTAINS(s.cure, "lower precision");
    /* fp16 work judged against the fp16 roof, not fp32's: 40 TFLOP/s of fp16 is 8% */
    s = step("gemm", "MatMul", 25, 1e12, 1e8, INGOT_DTYPE_FLOAT16);
    ig__diag_classify(&c, true, &s);
    ASSERT_EQ(s.cls, IG_DIAG_OTHER);
    /* at both roofs: bound by the closer one (90% of FLOPs vs 70% of bytes) */
    s = step("both", "MatMul", 1.0, 0.9 * 50e12 * 1e-3, 0.7 * 1000e9 * 1e-3, INGOT_DTYPE_FLOAT);
    ig__diag_classify(&c, true, &s);
    ASSERT_EQ(s.cls, IG_DIAG_COMPUTE);
    s = step("both", "MatMul", 1.0, 0.7 * 50e12 * 1e-3, 0.9 * 1000e9 * 1e-3, INGOT_DTYPE_FLOAT);
    ig__diag_classify(&c, true, &s);
    ASSERT_EQ(s.cls, IG_DIAG_BANDWIDTH);
}

TEST(classify_latency)
{
    ig_diag_ceilings c = ceil_gpu();
    /* 1 MB in 10 us: 100 GB/s (10%); at the roof it would take 1 us, less than 4 launches (20 us) */
    ig_diag_step s = step("tiny", "Relu", 0.010, 2.5e5, 1e6, INGOT_DTYPE_FLOAT);
    ig__diag_classify(&c, false, &s);
    ASSERT_EQ(s.cls, IG_DIAG_LATENCY);
    ASSERT_CONTAINS(s.cure, "CUDA Graph"); /* running step by step */
    ig__diag_classify(&c, true, &s);
    ASSERT_EQ(s.cls, IG_DIAG_LATENCY);
    ASSERT(strstr(s.cure, "CUDA Graph") == NULL); /* graphs already on: fuse, batch */
    ASSERT_CONTAINS(s.cure, "fuse");
    /* bytes faster than the copy bandwidth came from a cache: never bandwidth-bound; small: latency */
    s = step("cached", "Add", 0.0005, 0, 1e6, INGOT_DTYPE_FLOAT); /* 2000 GB/s */
    ig__diag_classify(&c, true, &s);
    ASSERT(s.pct_bw > 1.9);
    ASSERT_EQ(s.cls, IG_DIAG_LATENCY);
    /* large work at 10%: not latency but an inefficient kernel */
    s = step("slow", "Add", 10, 0, 1e9, INGOT_DTYPE_FLOAT);
    ig__diag_classify(&c, true, &s);
    ASSERT_EQ(s.cls, IG_DIAG_OTHER);
    /* no time, no work: latency, no division by zero */
    s = step("empty", "Identity", 0, 0, 0, INGOT_DTYPE_FLOAT);
    ig__diag_classify(&c, true, &s);
    ASSERT_EQ(s.cls, IG_DIAG_LATENCY);
    ASSERT(isfinite(s.gbs) && isfinite(s.intensity));
}

static ig_diag_report report_with(ig_diag_step *steps, int64_t n)
{
    ig_diag_report r;
    memset(&r, 0, sizeof r);
    snprintf(r.model, sizeof r.model, "synthetic \"model\" <b>");
    snprintf(r.precision, sizeof r.precision, "fp32");
    r.batch = 8;
    r.ceil = ceil_gpu();
    r.steps = steps;
    r.n_steps = n;
    r.max_batch = -1;
    return r;
}

TEST(analyze_bandwidth_bound)
{
    /* three bandwidth steps of 1 ms (1 GB each; the first two feed the next), one compute step of 1 ms */
    ig_diag_step s[4];
    for (int k = 0; k < 3; k++) {
        s[k] = step("ew", "Add", 1.0, 0, 0.8e9, INGOT_DTYPE_FLOAT);
        s[k].p.feeds_next = k < 2;
    }
    s[3] = step("gemm", "MatMul", 1.0, 0.8 * 50e12 * 1e-3, 1e6, INGOT_DTYPE_FLOAT);
    ig_diag_report r = report_with(s, 4);
    r.run_ms = 4.0;
    r.run_stream_ms = 4.0;
    ig__diag_analyze(&r);
    ASSERT_EQ(r.class_n[IG_DIAG_BANDWIDTH], 3);
    ASSERT_EQ(r.class_n[IG_DIAG_COMPUTE], 1);
    ASSERT_NEAR(r.class_share[IG_DIAG_BANDWIDTH], 0.75, 1e-9);
    ASSERT_NEAR(r.steps_ms, 4.0, 1e-12);
    ASSERT_NEAR(r.idle_share, 0, 1e-12);
    ASSERT_STREQ(r.bottleneck, "bandwidth");
    ASSERT_CONTAINS(r.verdict, "bandwidth-bound: 75% of the time is in 3 steps at >= 60% of copy bandwidth");
    ASSERT_CONTAINS(r.verdict, "saving memory will not raise throughput");
    /* each intermediate is written once and read back once: 2 x 0.4 GB, two of them */
    ASSERT_EQ(r.fusable_steps, 2);
    ASSERT_NEAR(r.fusable_bytes, 1.6e9, 1);
    ASSERT_CONTAINS(r.verdict, "fusing 2 steps into their successors removes 1600.0 MB of traffic per inference");
    ASSERT_CONTAINS(r.verdict, "fp16 storage halves");
}

/* Steps timed in a graph with an event after each sum to more than the replay: the excess per step (up to
 * IG_DIAG_PROBE_MAX_MS) comes off each, never below a quarter of a step; more than that stays. */
TEST(analyze_probe_cost)
{
    ig_diag_step s[4];
    const double ms[4] = {0.100, 0.050, 0.0016, 0.200};
    for (int k = 0; k < 4; k++) s[k] = step("ew", "Add", ms[k], 0, 1e6, INGOT_DTYPE_FLOAT);
    ig_diag_report r = report_with(s, 4);
    r.graphs = true;
    r.run_ms = 0.3436; /* 0.3516 measured: 2 us a step of probes */
    r.run_stream_ms = 0.5;
    ig__diag_analyze(&r);
    ASSERT_NEAR(r.probe_ms, 0.002, 1e-12);
    ASSERT_NEAR(s[0].p.ms, 0.098, 1e-12);
    ASSERT_NEAR(s[2].p.ms, 0.0004, 1e-12); /* a quarter of its 1.6 us, not negative */
    ASSERT_NEAR(r.steps_ms, 0.098 + 0.048 + 0.0004 + 0.198, 1e-12);
    ig__diag_analyze(&r); /* again: nothing more comes off */
    ASSERT_NEAR(s[0].p.ms, 0.098, 1e-12);
    /* 50 us a step over the replay is host work on a stream, not a probe: left as measured */
    ig_diag_step t[2] = {step("conv", "Conv", 0.1, 0, 1e6, INGOT_DTYPE_FLOAT),
                         step("conv", "Conv", 0.1, 0, 1e6, INGOT_DTYPE_FLOAT)};
    ig_diag_report q = report_with(t, 2);
    q.graphs = true;
    q.run_ms = 0.1;
    ig__diag_analyze(&q);
    ASSERT_NEAR(q.probe_ms, 0, 0);
    ASSERT_NEAR(q.steps_ms, 0.2, 1e-12);
    /* no graph replay: nothing to compare with */
    ig_diag_step u = step("ew", "Add", 0.1, 0, 1e6, INGOT_DTYPE_FLOAT);
    ig_diag_report v = report_with(&u, 1);
    v.run_ms = 0.09;
    ig__diag_analyze(&v);
    ASSERT_NEAR(v.steps_ms, 0.1, 1e-12);
}

TEST(analyze_launch_bound)
{
    /* 100 tiny steps of 10 us, run step by step in 2 ms (1 ms of gaps) and as a graph in 1.1 ms */
    ig_diag_step s[100];
    for (int k = 0; k < 100; k++) s[k] = step("tiny", "Relu", 0.010, 1e5, 4e5, INGOT_DTYPE_FLOAT);
    ig_diag_report r = report_with(s, 100);
    r.graphs = true;
    r.run_ms = 1.1;
    r.run_stream_ms = 2.0;
    ig__diag_analyze(&r);
    ASSERT_EQ(r.class_n[IG_DIAG_LATENCY], 100);
    ASSERT_NEAR(r.idle_share, 0.5, 1e-9);
    ASSERT_NEAR(r.launch_share, 1.0, 1e-9);
    ASSERT_NEAR(r.graph_gain, 0.45, 1e-9);
    ASSERT_STREQ(r.bottleneck, "launch");
    ASSERT_CONTAINS(r.verdict, "launch-bound: 100% of the step-by-step run is gaps between steps (50%)");
    ASSERT_CONTAINS(r.verdict, "CUDA Graph replay saves 45%");
}

TEST(analyze_compute_and_inefficient)
{
    ig_diag_step s[2] = {step("gemm", "MatMul", 9.0, 9 * 0.9 * 50e12 * 1e-3, 1e8, INGOT_DTYPE_FLOAT),
                         step("slow", "Add", 1.0, 0, 1e8, INGOT_DTYPE_FLOAT)};
    ig_diag_report r = report_with(s, 2);
    r.run_ms = r.run_stream_ms = 10;
    ig__diag_analyze(&r);
    ASSERT_STREQ(r.bottleneck, "compute");
    ASSERT_CONTAINS(r.verdict, "compute-bound: 90% of the time");
    ASSERT_CONTAINS(r.verdict, "fp16/bf16 tensor cores will");
    ig_diag_step t[2] = {step("slow", "Add", 9.0, 0, 1e8, INGOT_DTYPE_FLOAT),
                         step("gemm", "MatMul", 1.0, 0.9 * 50e12 * 1e-3, 1e8, INGOT_DTYPE_FLOAT)};
    r = report_with(t, 2);
    r.run_ms = r.run_stream_ms = 10;
    ig__diag_analyze(&r);
    ASSERT_STREQ(r.bottleneck, "inefficient kernels");
    ASSERT_CONTAINS(r.verdict, "inefficient kernels: 90%");
}

TEST(analyze_capacity)
{
    ig_diag_step s[1] = {step("ew", "Add", 1.0, 0, 0.8e9, INGOT_DTYPE_FLOAT)};
    ig_diag_report r = report_with(s, 1);
    r.run_ms = r.run_stream_ms = 1;
    r.mem.have = true;
    r.mem.a.device = 1;
    r.mem.a.weights = 1000000000;   /* 1 GB */
    r.mem.a.arena = 8000000000;     /* 8 GB at batch 8: 1 GB per sample */
    r.mem.a.free_bytes = 500000000; /* 0.5 GB still free */
    ig__diag_analyze(&r);
    ASSERT_NEAR(r.need_bytes, 9e9, 1);
    ASSERT_NEAR(r.avail_bytes, 9.5e9, 1);
    ASSERT_EQ(r.max_batch, 8);
    ASSERT_STREQ(r.bottleneck, "bandwidth");
    ASSERT_CONTAINS(r.verdict, "up to batch 8 fits");
    /* within a 5 GB budget this batch does not fit, and batch 4 is the largest that does */
    r.mem_limit = 5e9;
    ig__diag_analyze(&r);
    ASSERT_STREQ(r.bottleneck, "capacity");
    ASSERT_EQ(r.max_batch, 4);
    ASSERT_CONTAINS(r.verdict, "capacity-bound: this batch needs 9000.0 MB and 5000.0 MB are available");
    ASSERT_CONTAINS(r.verdict, "the largest batch that fits is 4");
}

static char *slurp(FILE *f)
{
    long n = ftell(f);
    rewind(f);
    char *s = calloc((size_t)n + 1, 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = '\0';
    return s;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

TEST(writers)
{
    ig_diag_step s[3] = {step("a\"quoted\"<script>", "Add", 1.0, 0, 0.8e9, INGOT_DTYPE_FLOAT),
                         step("b", "MatMul", 1.0, 0.8 * 50e12 * 1e-3, 1e6, INGOT_DTYPE_FLOAT),
                         step("c", "Relu", 0.01, 1e5, 4e5, INGOT_DTYPE_FLOAT)};
    s[0].p.live_bytes = 1234;
    ig_diag_sweep_row rows[2];
    memset(rows, 0, sizeof rows);
    rows[0].batch = 1;
    rows[0].ok = true;
    rows[0].throughput = 100;
    rows[1].batch = 2;
    snprintf(rows[1].note, sizeof rows[1].note, "out of memory");
    ig_diag_report r = report_with(s, 3);
    r.run_ms = r.run_stream_ms = 2.5;
    r.sweep = rows;
    r.n_sweep = 2;
    ig__diag_analyze(&r);

    FILE *f = tmpfile();
    ASSERT(f != NULL);
    ASSERT(ig__diag_write_json(&r, f));
    char *j = slurp(f);
    fclose(f);
    ASSERT(j != NULL);
    ASSERT_CONTAINS(j, "\"class\": \"bandwidth\"");
    ASSERT_CONTAINS(j, "\"class\": \"compute\"");
    ASSERT_CONTAINS(j, "\"class\": \"latency\"");
    ASSERT_CONTAINS(j, "a\\\"quoted\\\"\\u003cscript\\u003e"); /* no raw '<': safe inside <script> */
    ASSERT_CONTAINS(j, "\"live_bytes\": 1234");
    ASSERT_CONTAINS(j, "\"bottleneck\": \"bandwidth\"");
    ASSERT_EQ(count(j, "\"index\": "), 3);
    ASSERT_EQ(count(j, "\"batch\": 2, \"workspace\": 0, \"ok\": false"), 1);
    ASSERT(strchr(j, '<') == NULL);
    free(j);

    f = tmpfile();
    ASSERT(ig__diag_write_trace(&r, f));
    char *t = slurp(f);
    fclose(f);
    ASSERT(t != NULL);
    ASSERT_EQ(count(t, "\"ph\": \"X\""), 3);
    ASSERT_EQ(count(t, "\"ph\": \"C\""), 4);
    ASSERT_CONTAINS(t, "\"cat\": \"latency\", \"cname\": \"terrible\"");
    free(t);

    f = tmpfile();
    ASSERT(ig__diag_write_html(&r, f));
    char *h = slurp(f);
    fclose(f);
    ASSERT(h != NULL);
    ASSERT_CONTAINS(h, "<!doctype html>");
    ASSERT(strstr(h, "@INGOT_DATA@") == NULL);
    ASSERT_CONTAINS(h, "<script type=\"application/json\" id=\"ingot-data\">{");
    ASSERT(strstr(h, "http://") == NULL || strstr(h, "http://www.w3.org/2000/svg")); /* no network, SVG's NS */
    ASSERT(strstr(h, "https://") == NULL);
    free(h);
}

TEST(ceilings_cache)
{
    char dir[] = "/tmp/ingot-test-diag-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    setenv("INGOT_CACHE_DIR", dir, 1);
    ig_diag_ceilings c = ceil_gpu(), back;
    c.malloc_us[1] = 150;
    ASSERT(ig__diag_ceilings_save(&c));
    ASSERT(ig__diag_ceilings_load("test|gpu", &back));
    ASSERT_NEAR(back.copy_gbs, 1000, 1e-9);
    ASSERT_NEAR(back.fp16_tflops, 500, 1e-9);
    ASSERT_NEAR(back.malloc_us[1], 150, 1e-9);
    ASSERT_STREQ(back.device, "Test GPU");
    ASSERT(!ig__diag_ceilings_load("test|other gpu", &back));
    /* a damaged file is not a measurement */
    char path[1024];
    snprintf(path, sizeof path, "%s/junk", dir);
    ASSERT(ig__cache_dir(path, sizeof path));
    ASSERT_STREQ(path, dir);
    /* the CPU: measured once, then read back under its key */
    ig_err err = {0};
    ig_diag_ceilings cpu;
    ASSERT_EQ(ig__diag_cpu_ceilings(1, false, &cpu, &err), INGOT_OK);
    ASSERT(cpu.copy_gbs > 0 && cpu.fp32_tflops > 0 && cpu.launch_us > 0);
    ASSERT_STREQ(cpu.backend, "cpu");
    ig_diag_ceilings again;
    ASSERT(ig__diag_ceilings_load(cpu.key, &again));
    ASSERT_NEAR(again.copy_gbs, cpu.copy_gbs, 1e-6 * cpu.copy_gbs);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ASSERT_EQ(system(cmd), 0);
    unsetenv("INGOT_CACHE_DIR");
}

/* x[4,64] -> MatMul(w[64,64]) -> Softmax -> y: two steps, the first feeding only the second. */
static ingot_status load_model(ingot_runtime *rt, ingot_model **m)
{
    static float w[64 * 64];
    for (int i = 0; i < 64 * 64; i++) w[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    wb g = {0}, n, t, vi;
    const char *mm_in[] = {"x", "w"}, *mm_out[] = {"h"}, *sm_in[] = {"h"}, *sm_out[] = {"y"};
    n = node("MatMul", "mm", mm_in, 2, mm_out, 1);
    w_msg(&g, 1, &n);
    n = node("Softmax", "sm", sm_in, 1, sm_out, 1);
    w_msg(&g, 1, &n);
    w_str(&g, 2, "diag");
    int64_t wd[2] = {64, 64}, xd[2] = {4, 64};
    t = tensor_raw("w", 1, 2, wd, w, sizeof w);
    w_msg(&g, 5, &t);
    vi = value_info("x", 1, 2, xd, NULL);
    w_msg(&g, 11, &vi);
    vi = value_info("y", 1, 2, xd, NULL);
    w_msg(&g, 12, &vi);
    wb mo = model(&g, 17);
    free(g.p);
    ingot_load_options lo = ingot_load_options_default();
    ingot_status st = ingot_model_load_buffer(rt, mo.p, mo.n, NULL, &lo, m);
    free(mo.p);
    return st;
}

TEST(cpu_profile_api)
{
    ingot_runtime *rt = NULL;
    ingot_model *m = NULL;
    ingot_engine *e = NULL;
    ingot_context *c = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    bo.n_threads = 1;
    if (load_model(rt, &m) != INGOT_OK || ingot_engine_build(rt, m, &bo, &e) != INGOT_OK ||
        ingot_context_create(e, NULL, &c) != INGOT_OK) {
        fprintf(stderr, "  %s\n", ingot_runtime_errmsg(rt));
        ASSERT(0);
    }
    float x[4 * 64];
    for (int i = 0; i < 4 * 64; i++) x[i] = (float)(i % 11) * 0.1f;
    ingot_tensor in = {"x", INGOT_DTYPE_FLOAT, 2, {4, 64}, x, sizeof x};
    /* the accounts need a plan: before any run they say so */
    ingot_memory_accounts a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    ASSERT_EQ(ingot_context_memory_accounts(c, &a), INGOT_ERR_INVALID_ARG);
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_OK);
    ingot_tensor out;
    float ref[4 * 64];
    ASSERT_EQ(ingot_context_get_output(c, 0, &out), INGOT_OK);
    memcpy(ref, out.data, sizeof ref);

    int64_t n = -1;
    ASSERT_EQ(ingot_context_profile_steps(c, &in, 1, NULL, 0, &n), INGOT_OK);
    ASSERT_EQ(n, 2);
    ingot_step_profile p[4];
    ASSERT_EQ(ingot_context_profile_steps(c, &in, 1, p, 4, &n), INGOT_OK);
    ASSERT_EQ(n, 2);
    ASSERT_CONTAINS(p[0].op, "MatMul");
    ASSERT_STREQ(p[1].op, "Softmax");
    ASSERT_STREQ(p[1].name, "sm");
    ASSERT_STREQ(p[0].kind, "cpu");
    ASSERT(p[0].node >= 0 && p[1].node >= 0 && p[0].node != p[1].node);
    ASSERT(p[0].ms > 0 && p[1].ms > 0);
    ASSERT_NEAR(p[0].flops, 2.0 * 4 * 64 * 64, 0.5);
    ASSERT_NEAR(p[0].bytes_read, (4 * 64 + 64 * 64) * 4.0, 0.5);
    ASSERT_NEAR(p[0].bytes_written, 4 * 64 * 4.0, 0.5);
    ASSERT_EQ(p[0].feeds_next, 1);
    ASSERT_EQ(p[1].feeds_next, 0); /* a graph output */
    ASSERT_EQ(p[0].math_dtype, INGOT_DTYPE_FLOAT);
    ASSERT(p[0].live_bytes >= 4 * 64 * 4);
    ASSERT(p[0].covers >= 1);
    /* profiling never changes results */
    ASSERT_EQ(ingot_context_get_output(c, 0, &out), INGOT_OK);
    ASSERT(memcmp(out.data, ref, sizeof ref) == 0);
    /* bad arguments are named, not crashed on */
    ASSERT_EQ(ingot_context_profile_steps(c, &in, 1, NULL, 4, &n), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(ingot_context_errmsg(c), "n_steps");
    ingot_tensor bad = in;
    bad.dims[0] = 5;
    ASSERT(ingot_context_profile_steps(c, &bad, 1, p, 4, &n) != INGOT_OK);

    a.struct_size = 4;
    ASSERT_EQ(ingot_context_memory_accounts(c, &a), INGOT_ERR_INVALID_ARG);
    a.struct_size = sizeof a;
    ASSERT_EQ(ingot_context_run(c, &in, 1), INGOT_OK);
    ASSERT_EQ(ingot_context_memory_accounts(c, &a), INGOT_OK);
    ASSERT_EQ(a.device, 0);
    ASSERT(a.arena > 0);
    ASSERT(a.activation_lower_bound <= a.activation_no_reuse);
    ASSERT(a.activations <= a.arena && a.activation_lower_bound <= a.arena && a.workspace <= a.arena);
    ASSERT(a.io_staging >= sizeof x);
    ASSERT(a.total_bytes > 0 && a.free_bytes <= a.total_bytes);
    ASSERT_EQ(a.library_live, a.weights + a.arena + a.io_staging);
    ingot_context_destroy(c);
    ingot_engine_destroy(e);
    ingot_model_destroy(m);
    ingot_runtime_destroy(rt);
}

/* core/cache.c: whole files back, nothing larger than asked, no FIFO, directory or missing file */
TEST(cache_files)
{
    char dir[] = "/tmp/ingot-test-cache-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    setenv("INGOT_CACHE_DIR", dir, 1);
    const char data[] = "0123456789";
    size_t n = 99;
    ASSERT(ig__cache_get("absent.bin", 1 << 20, &n) == NULL);
    ASSERT_EQ(n, 0);
    ASSERT(ig__cache_put("a.bin", data, 10));
    char *got = ig__cache_get("a.bin", 1 << 20, &n);
    ASSERT(got != NULL);
    ASSERT_EQ(n, 10);
    ASSERT(memcmp(got, data, 10) == 0);
    ig__free(got);
    ASSERT(ig__cache_get("a.bin", 9, &n) == NULL); /* larger than the caller takes */
    ASSERT(ig__cache_put("a.bin", data, 3));       /* replaced whole */
    got = ig__cache_get("a.bin", 1 << 20, &n);
    ASSERT(got != NULL && n == 3);
    ig__free(got);
    char path[1200], cmd[1300];
    snprintf(path, sizeof path, "%s/fifo.bin", dir);
    ASSERT_EQ(mkfifo(path, 0600), 0);
    ASSERT(ig__cache_get("fifo.bin", 1 << 20, &n) == NULL); /* refused, without blocking */
    snprintf(path, sizeof path, "%s/dir.bin", dir);
    ASSERT_EQ(mkdir(path, 0700), 0);
    ASSERT(ig__cache_get("dir.bin", 1 << 20, &n) == NULL);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ASSERT_EQ(system(cmd), 0);
    unsetenv("INGOT_CACHE_DIR");
}

TEST_MAIN(RUN(cpu_profile_api); RUN(classify_bandwidth); RUN(classify_compute); RUN(classify_latency);
          RUN(analyze_bandwidth_bound); RUN(analyze_probe_cost); RUN(analyze_launch_bound);
          RUN(analyze_compute_and_inefficient); RUN(analyze_capacity); RUN(writers); RUN(ceilings_cache);
          RUN(cache_files))
