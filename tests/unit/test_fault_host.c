/*
 * test_fault_host.c -- the host half of device fault injection (src/cuda/fault.h): parsing the
 * INGOT_CUDA_FAULT switch and counting sites, with no GPU and no CUDA toolkit. The device half (every
 * site of a real build, context and runs failing in turn) is tests/gpu/test_gpu_faults.c.
 */
#define _POSIX_C_SOURCE 200809L
#include "cuda/fault.h"
#include "test.h"

#include <pthread.h>

static ig_fault_spec parse_ok(const char *text, bool *armed)
{
    ig_fault_spec s = {IG_FAULT_COUNT, -7, true, IG_FAULT_NONE};
    char why[256] = "";
    if (!ig__fault_parse(text, &s, armed, why, sizeof why)) {
        fprintf(stderr, "  unexpected parse failure of '%s': %s\n", text, why);
        s.n = -99;
    }
    return s;
}

TEST(parse_kinds_and_numbers)
{
    bool armed = false;
    ig_fault_spec s = parse_ok("alloc:3", &armed);
    ASSERT(armed);
    ASSERT_EQ(s.kind, IG_FAULT_ALLOC);
    ASSERT_EQ(s.n, 3);
    ASSERT(!s.from_n);
    ASSERT_EQ(s.err, IG_FAULT_NONE);
    s = parse_ok("call:12", &armed);
    ASSERT_EQ(s.kind, IG_FAULT_CALL);
    ASSERT_EQ(s.n, 12);
    s = parse_ok("launch:1", &armed);
    ASSERT_EQ(s.kind, IG_FAULT_LAUNCH);
    s = parse_ok("lib:7:oom", &armed);
    ASSERT_EQ(s.kind, IG_FAULT_LIB);
    ASSERT_EQ(s.err, IG_FAULT_OOM);
    s = parse_ok("any:40+:fatal", &armed);
    ASSERT_EQ(s.kind, IG_FAULT_ANY);
    ASSERT_EQ(s.n, 40);
    ASSERT(s.from_n);
    ASSERT_EQ(s.err, IG_FAULT_FATAL);
    s = parse_ok("alloc:2+", &armed);
    ASSERT(s.from_n);
    ASSERT_EQ(s.err, IG_FAULT_NONE);
    s = parse_ok("call:5:fail", &armed);
    ASSERT_EQ(s.err, IG_FAULT_FAIL);
    s = parse_ok("count", &armed);
    ASSERT(armed);
    ASSERT_EQ(s.kind, IG_FAULT_COUNT);
}

TEST(parse_off)
{
    const char *off[] = {NULL, "", "0", "off"};
    for (int i = 0; i < 4; i++) {
        bool armed = true;
        ig_fault_spec s = {IG_FAULT_CALL, 5, false, IG_FAULT_NONE};
        char why[128];
        ASSERT(ig__fault_parse(off[i], &s, &armed, why, sizeof why));
        ASSERT(!armed);
        ASSERT_EQ(s.n, 5); /* untouched */
    }
}

TEST(parse_rejects_with_a_reason)
{
    struct {
        const char *text, *says;
    } bad[] = {
        {"malloc:1", "the kind must be"},
        {"alloc", "a site number"},
        {"alloc:", "a site number"},
        {"alloc:x", "a site number"},
        {"alloc:0", "counts from 1"},
        {"alloc:-1", "a site number"},
        {"call:3:boom", "the error must be"},
        {"call:3:", "the error must be"},
        {"call:3x", "unexpected 'x'"},
        {"call:3++", "unexpected '+'"},
        {"call:99999999999999999999", "counts from 1"},
        {"CALL:1", "the kind must be"},
        {"alloc:1:oom:extra", "the error must be"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ig_fault_spec s = {IG_FAULT_LIB, 77, false, IG_FAULT_NONE};
        bool armed = true;
        char why[256] = "";
        if (ig__fault_parse(bad[i].text, &s, &armed, why, sizeof why))
            TEST_FAIL_("'%s' parsed (kind %d, n %lld)", bad[i].text, s.kind, (long long)s.n);
        ASSERT(!armed);
        ASSERT_EQ(s.n, 77);
        ASSERT_CONTAINS(why, bad[i].says);
        ASSERT_CONTAINS(why, "INGOT_CUDA_FAULT=");
    }
}

TEST(default_errors)
{
    ig_fault_spec s = {IG_FAULT_ANY, 1, false, IG_FAULT_NONE};
    ASSERT_EQ(ig__fault_err_for(&s, IG_FAULT_ALLOC), IG_FAULT_OOM);
    ASSERT_EQ(ig__fault_err_for(&s, IG_FAULT_CALL), IG_FAULT_FATAL);
    ASSERT_EQ(ig__fault_err_for(&s, IG_FAULT_LAUNCH), IG_FAULT_FAIL);
    ASSERT_EQ(ig__fault_err_for(&s, IG_FAULT_LIB), IG_FAULT_FAIL);
    s.err = IG_FAULT_OOM;
    ASSERT_EQ(ig__fault_err_for(&s, IG_FAULT_CALL), IG_FAULT_OOM);
    ASSERT_STREQ(ig__fault_kind_name(IG_FAULT_LIB), "lib");
    ASSERT_STREQ(ig__fault_kind_name(IG_FAULT_ANY), "any");
    ASSERT_STREQ(ig__fault_err_name(IG_FAULT_FATAL), "fatal");
}

/* The sites of one "run", in order: what a sweep sees. */
static const int trace[] = {IG_FAULT_CALL, IG_FAULT_ALLOC, IG_FAULT_CALL, IG_FAULT_LIB,    IG_FAULT_LAUNCH,
                            IG_FAULT_CALL, IG_FAULT_ALLOC, IG_FAULT_LIB,  IG_FAULT_LAUNCH, IG_FAULT_CALL};
#define TRACE_N ((int)(sizeof trace / sizeof trace[0]))

/* Which positions of the trace fail under s (bit i: position i), and the count. */
static unsigned run_trace(ig_fault_counter *c, const ig_fault_spec *s, int *n_failed)
{
    unsigned hits = 0;
    *n_failed = 0;
    ig__fault_reset(c);
    for (int i = 0; i < TRACE_N; i++)
        if (ig__fault_tick(c, s, trace[i], NULL) != IG_FAULT_NONE) {
            hits |= 1u << i;
            (*n_failed)++;
        }
    return hits;
}

TEST(counting_one_shot)
{
    ig_fault_counter c;
    int nf = 0;
    ig_fault_spec s = {IG_FAULT_COUNT, 0, false, IG_FAULT_NONE};
    ASSERT_EQ(run_trace(&c, &s, &nf), 0);
    ASSERT_EQ(atomic_load(&c.seen[IG_FAULT_CALL]), 4);
    ASSERT_EQ(atomic_load(&c.seen[IG_FAULT_ALLOC]), 2);
    ASSERT_EQ(atomic_load(&c.seen[IG_FAULT_LIB]), 2);
    ASSERT_EQ(atomic_load(&c.seen[IG_FAULT_LAUNCH]), 2);
    ASSERT_EQ(atomic_load(&c.total), TRACE_N);
    ASSERT_EQ(atomic_load(&c.fired), 0);
    /* the Nth of a kind is exactly its Nth occurrence in the trace */
    for (int kind = 0; kind < IG_FAULT_KINDS; kind++) {
        int occ = 0;
        for (int i = 0; i < TRACE_N; i++) {
            if (trace[i] != kind) continue;
            occ++;
            s = (ig_fault_spec){kind, occ, false, IG_FAULT_NONE};
            ASSERT_EQ(run_trace(&c, &s, &nf), 1u << i);
            ASSERT_EQ(nf, 1);
            ASSERT_EQ(atomic_load(&c.fired), 1);
        }
        s = (ig_fault_spec){kind, occ + 1, false, IG_FAULT_NONE}; /* past the last: never fires */
        ASSERT_EQ(run_trace(&c, &s, &nf), 0);
    }
    /* any: N counts every site */
    for (int i = 0; i < TRACE_N; i++) {
        s = (ig_fault_spec){IG_FAULT_ANY, i + 1, false, IG_FAULT_NONE};
        ASSERT_EQ(run_trace(&c, &s, &nf), 1u << i);
    }
}

TEST(counting_from_n)
{
    ig_fault_counter c;
    int nf = 0;
    ig_fault_spec s = {IG_FAULT_CALL, 2, true, IG_FAULT_NONE}; /* calls 2, 3, 4: positions 2, 5, 9 */
    ASSERT_EQ(run_trace(&c, &s, &nf), (1u << 2) | (1u << 5) | (1u << 9));
    ASSERT_EQ(nf, 3);
    s = (ig_fault_spec){IG_FAULT_ANY, 9, true, IG_FAULT_NONE};
    ASSERT_EQ(run_trace(&c, &s, &nf), (1u << 8) | (1u << 9));
    int64_t idx = 0;
    ig__fault_reset(&c);
    s = (ig_fault_spec){IG_FAULT_LIB, 1, false, IG_FAULT_OOM};
    ASSERT_EQ(ig__fault_tick(&c, &s, IG_FAULT_CALL, &idx), IG_FAULT_NONE);
    ASSERT_EQ(idx, 1);
    ASSERT_EQ(ig__fault_tick(&c, &s, IG_FAULT_LIB, &idx), IG_FAULT_OOM);
    ASSERT_EQ(idx, 1);
}

/* Contexts run on many threads: every site counted once, and a one-shot spec fires exactly once. */
typedef struct tick_job {
    ig_fault_counter *c;
    const ig_fault_spec *s;
    int64_t fired;
} tick_job;

static void *ticker(void *arg)
{
    tick_job *j = arg;
    for (int i = 0; i < 20000; i++)
        if (ig__fault_tick(j->c, j->s, i % IG_FAULT_KINDS, NULL) != IG_FAULT_NONE) j->fired++;
    return NULL;
}

TEST(counting_threads)
{
    ig_fault_counter c;
    ig__fault_reset(&c);
    ig_fault_spec s = {IG_FAULT_LAUNCH, 12345, false, IG_FAULT_NONE};
    tick_job jobs[4];
    pthread_t t[4];
    for (int k = 0; k < 4; k++) {
        jobs[k] = (tick_job){&c, &s, 0};
        ASSERT_EQ(pthread_create(&t[k], NULL, ticker, &jobs[k]), 0);
    }
    int64_t fired = 0;
    for (int k = 0; k < 4; k++) {
        pthread_join(t[k], NULL);
        fired += jobs[k].fired;
    }
    ASSERT_EQ(fired, 1);
    ASSERT_EQ(atomic_load(&c.fired), 1);
    ASSERT_EQ(atomic_load(&c.total), 80000);
    for (int k = 0; k < IG_FAULT_KINDS; k++) ASSERT_EQ(atomic_load(&c.seen[k]), 20000);
}

TEST_MAIN(RUN(parse_kinds_and_numbers); RUN(parse_off); RUN(parse_rejects_with_a_reason); RUN(default_errors);
          RUN(counting_one_shot); RUN(counting_from_n); RUN(counting_threads))
