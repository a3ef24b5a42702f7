/*
 * plan_bench.c -- benchmark of the memory planner.
 *
 *   plan_bench                      the whole suite: MiniMalloc-style instances, random interval sets
 *                                   and synthetic 2,000-node graphs
 *   plan_bench --effort E           packing effort (0, 1 default, 2)
 *   plan_bench --csv FILE...        instances in MiniMalloc's CSV format (id,lower,upper,size with
 *                                   half-open [lower, upper)), e.g. lifetimes exported from a model
 *   plan_bench --seed S             base seed of the generated instances (default 1)
 *   plan_bench --many N             only summaries over N seeds per family and size (154, 300, 454)
 *
 * Prints one line per instance: buffers, lower bound, arena, arena/LB, winning strategy, time.
 */
#include "gen.h"
#include "graphs.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

typedef struct stats {
    int n;
    double sum_ratio, max_ratio, sum_ms, max_ms;
    int at_lb, within10;
} stats;

static int quiet;

static void run_instance(const char *name, const ig_pack_buf *b, int32_t n, int effort, stats *st)
{
    uint64_t *off = malloc(sizeof(uint64_t) * ((size_t)n + 1));
    ig_pack_options o = ig__pack_options_default();
    o.effort = effort;
    o.align = 1;
    ig_pack_result r;
    ig_err err = {0};
    double t0 = now_ms();
    ingot_status s = ig__pack(b, n, &o, off, &r, &err);
    double ms = now_ms() - t0;
    if (s != INGOT_OK) {
        printf("%-24s error: %s\n", name, err.msg);
        free(off);
        return;
    }
    if (ig__pack_check(b, n, off, o.align, r.arena, &err) != INGOT_OK)
        printf("%-24s CHECK FAILED: %s\n", name, err.msg);
    double ratio = r.lower_bound ? (double)r.arena / (double)r.lower_bound : 1.0;
    if (!quiet)
        printf("| %-22s | %5d | %12" PRIu64 " | %12" PRIu64 " | %6.3f | %-22s | %6d | %9.2f |\n", name, (int)n,
               r.lower_bound, r.arena, ratio, r.strategy, (int)r.n_runs, ms);
    fflush(stdout);
    st->n++;
    st->sum_ratio += ratio;
    if (ratio > st->max_ratio) st->max_ratio = ratio;
    st->sum_ms += ms;
    if (ms > st->max_ms) st->max_ms = ms;
    st->at_lb += r.arena == r.lower_bound;
    st->within10 += ratio <= 1.10 + 1e-12;
    free(off);
}

static void header(const char *title)
{
    printf("\n%s\n\n", title);
    printf("| %-22s | %5s | %12s | %12s | %6s | %-22s | %6s | %9s |\n", "instance", "bufs", "lower bound", "arena",
           "ratio", "strategy", "runs", "ms");
    printf("|%s|%s|%s|%s|%s|%s|%s|%s|\n", "------------------------", "-------", "--------------", "--------------",
           "--------", "------------------------", "--------", "-----------");
}

static void summary(const char *what, const stats *st)
{
    if (!st->n) return;
    printf("\n%s: %d instances, mean ratio %.3f, max %.3f, %d at LB, %d within 1.10; mean %.1f ms, max %.1f ms\n", what,
           st->n, st->sum_ratio / st->n, st->max_ratio, st->at_lb, st->within10, st->sum_ms / st->n, st->max_ms);
}

static int run_csv(const char *path, int effort, stats *st)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 1;
    }
    int32_t cap = 1024, n = 0;
    ig_pack_buf *b = malloc(sizeof(ig_pack_buf) * (size_t)cap);
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char id[256];
        long long lo, hi, sz;
        if (sscanf(line, "%255[^,],%lld,%lld,%lld", id, &lo, &hi, &sz) != 4) continue; /* header */
        if (n == cap) b = realloc(b, sizeof(ig_pack_buf) * (size_t)(cap *= 2));
        b[n].first = (int32_t)lo;
        b[n].last = (int32_t)hi - 1;
        b[n].size = (uint64_t)sz;
        n++;
    }
    fclose(f);
    const char *base = strrchr(path, '/');
    run_instance(base ? base + 1 : path, b, n, effort, st);
    free(b);
    return 0;
}

/* ---- synthetic graphs: ratio to the bound and planning time ---- */

typedef struct gcase {
    const char *name;
    int kind; /* 0 resnet, 1 transformer, 2 random */
    int64_t batch;
    int depth;
} gcase;

static void build_case(gb *b, const gcase *c, uint64_t seed)
{
    static const int r50[4] = {3, 4, 6, 3};
    int deep[4] = {c->depth, c->depth, c->depth, c->depth};
    gb_init(b);
    if (c->kind == 0)
        gb_resnet(b, c->batch, c->depth ? deep : r50, 4);
    else if (c->kind == 1)
        gb_transformer(b, c->batch, 128, 768, 12, c->depth);
    else
        gb_random(b, seed, c->depth, 14);
}

static void bench_graphs(uint64_t seed, int effort)
{
    static const gcase cases[] = {
        {"resnet50-b1", 0, 1, 0},        {"resnet50-b32", 0, 32, 0},        {"bert-base-b1", 1, 1, 12},
        {"bert-base-b32", 1, 32, 12},    {"resnet-2k-b1", 0, 1, 62},        {"resnet-2k-b32", 0, 32, 62},
        {"transformer-2k-b1", 1, 1, 80}, {"transformer-2k-b32", 1, 32, 80}, {"random-2k", 2, 1, 2000},
        {"random-5k", 2, 1, 5000},
    };
    printf("\nSynthetic graphs (fp32 sizes, alignment 256, effort %d): planning time is the median of 5 runs of\n"
           "ig__plan_graph (liveness, aliases, in-place, both orders, packing); re-plan reuses the plan object\n\n",
           effort);
    printf("| %-20s | %5s | %7s | %11s | %11s | %11s | %6s | %-18s | %-12s | %8s | %8s |\n", "graph", "nodes",
           "tensors", "no reuse MiB", "LB MiB", "arena MiB", "ratio", "strategy", "order", "plan ms", "replan ms");
    printf("|----------------------|-------|---------|--------------|-------------|-------------|--------|----------"
           "----------|--------------|----------|----------|\n");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        gb b;
        build_case(&b, &cases[k], seed);
        if (!b.ok) {
            printf("| %-20s | build failed: %s |\n", cases[k].name, b.err.msg);
            gb_free(&b);
            continue;
        }
        ig_plan_options o = gb_options(&b);
        o.effort = effort;
        ig_plan p;
        memset(&p, 0, sizeof p);
        double t[5];
        ig_err err = {0};
        int ok = 1;
        for (int r = 0; r < 5 && ok; r++) {
            double t0 = now_ms();
            ok = ig__plan_graph(&b.g, &o, &p, &err) == INGOT_OK;
            t[r] = now_ms() - t0;
        }
        if (!ok || ig__plan_check(&b.g, &p, &err) != INGOT_OK) {
            printf("| %-20s | error: %s |\n", cases[k].name, err.msg);
            gb_free(&b);
            ig__plan_free(&p);
            continue;
        }
        for (int i = 0; i < 5; i++) /* sort for the median */
            for (int j = i + 1; j < 5; j++)
                if (t[j] < t[i]) {
                    double x = t[i];
                    t[i] = t[j];
                    t[j] = x;
                }
        /* re-plan for another batch: same structure, new sizes (what a context does on a new shape) */
        double rt = 0;
        if (cases[k].kind != 2) {
            gcase c2 = cases[k];
            c2.batch = c2.batch == 1 ? 8 : 1;
            gb b2;
            build_case(&b2, &c2, seed);
            double t0 = now_ms();
            ok = ig__plan_graph(&b2.g, &o, &p, &err) == INGOT_OK;
            rt = now_ms() - t0;
            gb_free(&b2);
            ig__plan_free(&p);
            ig__plan_graph(&b.g, &o, &p, &err);
        }
        int32_t nt = 0;
        for (int32_t v = 0; v < p.n_values; v++) nt += p.values[v].kind != IG_PLAN_NONE;
        char order[32];
        snprintf(order, sizeof order, "%s", p.reordered ? "memory-aware" : "original");
        printf("| %-20s | %5d | %7d | %12.1f | %11.2f | %11.2f | %6.4f | %-18s | %-12s | %8.2f | %8.2f |\n",
               cases[k].name, (int)b.g.n_nodes, (int)nt, (double)p.no_reuse_bytes / (1 << 20),
               (double)p.lower_bound / (1 << 20), (double)p.arena_bytes / (1 << 20),
               (double)p.arena_bytes / (double)(p.lower_bound ? p.lower_bound : 1), p.strategy, order, t[2], rt);
        fflush(stdout);
        ig__plan_free(&p);
        gb_free(&b);
    }
}

int main(int argc, char **argv)
{
    int effort = 1, many = 0;
    uint64_t seed = 1;
    int first_csv = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--effort") && i + 1 < argc)
            effort = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--many") && i + 1 < argc)
            many = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--csv")) {
            first_csv = i + 1;
            break;
        } else {
            fprintf(stderr, "usage: %s [--effort E] [--seed S] [--csv FILE...]\n", argv[0]);
            return 2;
        }
    }
    if (first_csv) {
        stats st = {0};
        header("CSV instances");
        for (int i = first_csv; i < argc; i++) run_csv(argv[i], effort, &st);
        summary("CSV", &st);
        return 0;
    }
    ig_pack_buf *b = malloc(sizeof(ig_pack_buf) * 4096);
    char name[64];
    if (many > 0) {
        static const int nn[3] = {154, 300, 454};
        quiet = 1;
        printf("effort %d, %d seeds per row\n\n| family | buffers | mean ratio | max ratio | at LB | within 1.10 | "
               "mean ms | max ms |\n"
               "|---|---|---|---|---|---|---|---|\n",
               effort, many);
        for (int fam = 0; fam < 2; fam++)
            for (int k = 0; k < 3; k++) {
                stats st = {0};
                for (int r = 0; r < many; r++) {
                    uint64_t sd = seed + (uint64_t)(1000 * k + r);
                    int32_t n = fam == 0 ? gen_guillotine(sd, nn[k], 1024, 1024, b)
                                         : gen_holes(sd, nn[k] * 100 / 85, 1024, 1024, 15, b);
                    run_instance("", b, n, effort, &st);
                }
                printf("| %s | ~%d | %.3f | %.3f | %d%% | %d%% | %.1f | %.1f |\n", fam ? "holes" : "guillotine", nn[k],
                       st.sum_ratio / st.n, st.max_ratio, 100 * st.at_lb / st.n, 100 * st.within10 / st.n,
                       st.sum_ms / st.n, st.max_ms);
                fflush(stdout);
            }
        free(b);
        return 0;
    }
    stats sg = {0}, ss = {0}, sr = {0};
    printf("effort %d\n", effort);
    header("MiniMalloc-style instances: guillotine = pieces of a cut 1 MiB x 2^20 rectangle (optimum = lower bound);\n"
           "holes = the same with 15% of the pieces removed (slack, as in MiniMalloc's own instances)");
    static const int sizes[] = {154, 200, 250, 300, 350, 400, 454};
    for (int k = 0; k < 7; k++) {
        snprintf(name, sizeof name, "guillotine-%d-s%" PRIu64, sizes[k], seed + (uint64_t)k);
        int32_t n = gen_guillotine(seed + (uint64_t)k, sizes[k], 1024, 1024, b);
        run_instance(name, b, n, effort, &sg);
    }
    for (int k = 0; k < 7; k++) {
        int32_t n = gen_holes(seed + 100 + (uint64_t)k, sizes[k] * 100 / 85, 1024, 1024, 15, b);
        snprintf(name, sizeof name, "holes-%d-s%" PRIu64, (int)n, seed + 100 + (uint64_t)k);
        run_instance(name, b, n, effort, &ss);
    }
    summary("guillotine", &sg);
    summary("holes (optimum unknown, <= capacity)", &ss);
    header("Random interval sets (optimum unknown)");
    for (int k = 0; k < 8; k++) {
        int32_t n = gen_random(seed + 200 + (uint64_t)k, 300 + 100 * k, 200 + 50 * k, b);
        snprintf(name, sizeof name, "random-%d-s%" PRIu64, (int)n, seed + 200 + (uint64_t)k);
        run_instance(name, b, n, effort, &sr);
    }
    summary("random", &sr);
    free(b);
    bench_graphs(seed, effort);
    return 0;
}
