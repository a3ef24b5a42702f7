/*
 * cmd_sweep.c -- `ingot sweep`: the field report's table per batch (and per workspace budget), docs/DIAGNOSE.md.
 *
 *   ingot sweep MODEL.onnx --batch 1,8,16,24,32 [--workspace 0,64M,256M,1G] [--fp16] [--cpu | --device D]
 *                          [--mem-limit BYTES] [--json] [--html FILE] [--shapes ...] [--no-optimize]
 *
 * For every batch (within every workspace budget): build, run and profile the model as `ingot profile`
 * does, and report throughput, latency, the memory the model holds and where the time goes (the class
 * with the largest share and the model's bottleneck). Batches go in increasing order and the sweep stops
 * at the first that does not fit -- an out-of-memory failure, or more than --mem-limit or the free
 * memory -- saying so; everything that batch allocated is freed before the next budget.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include "diag/diag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POINTS 64

static void usage(FILE *f)
{
    fprintf(f, "usage: ingot sweep MODEL.onnx --batch B1,B2,... [--workspace W1,W2,...] [--fp16]\n"
               "                   [--cpu | --device cpu|cuda] [--mem-limit BYTES] [--json] [--html FILE]\n"
               "  --batch LIST      batches to run, e.g. 1,8,16,24,32 (increasing; stops at the first that\n"
               "                    does not fit)\n"
               "  --workspace LIST  cuDNN/cuBLASLt workspace budgets, e.g. 0,64M,256M,1G (CUDA only)\n"
               "  --mem-limit B     treat B bytes as the memory the model may have\n"
               "  --json            the last batch's profile with the sweep, as one JSON object\n"
               "  --html FILE       the same as a self-contained HTML report with the sweep plots\n"
               "  --shapes N:DIMS   other input dims; --batch binds the leading ones\n" IG_CLI_OPT_USAGE);
}

/* "1,8,16" into v (at most MAX_POINTS values), bytes when as_bytes. */
static int parse_list(const char *opt, const char *s, int64_t *v, int *n, int as_bytes)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n >= MAX_POINTS) {
            fprintf(stderr, "ingot sweep: %s: more than %d values\n", opt, MAX_POINTS);
            return 0;
        }
        uint64_t u = 0;
        if (as_bytes ? !ig__cli_parse_bytes(opt, tok, &u) : !ig__cli_parse_i64(opt, tok, 1, &v[*n])) return 0;
        if (as_bytes) v[*n] = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
        (*n)++;
    }
    if (!*n) fprintf(stderr, "ingot sweep: %s expects a comma-separated list\n", opt);
    return *n > 0;
}

/* The library algorithm of every step of one profile, kept to compare the next workspace budget with. */
typedef struct step_algos {
    int64_t n;
    char (*algo)[sizeof(((ingot_step_profile *)0)->algo)];
    char (*name)[sizeof(((ingot_step_profile *)0)->name)];
} step_algos;

static void algos_free(step_algos *a)
{
    free(a->algo);
    free(a->name);
    memset(a, 0, sizeof *a);
}

static void algos_keep(step_algos *a, const ig_diag_report *r)
{
    algos_free(a);
    a->algo = calloc((size_t)r->n_steps + 1, sizeof *a->algo);
    a->name = calloc((size_t)r->n_steps + 1, sizeof *a->name);
    if (!a->algo || !a->name) {
        algos_free(a); /* no comparison for this batch: the sweep itself goes on */
        return;
    }
    a->n = r->n_steps;
    for (int64_t k = 0; k < r->n_steps; k++) {
        memcpy(a->algo[k], r->steps[k].p.algo, sizeof a->algo[k]);
        memcpy(a->name[k], r->steps[k].p.name, sizeof a->name[k]);
    }
}

/* The course chapter's question for a workspace sweep: which algorithms did the budget change? */
static void algos_compare(const step_algos *prev, const ig_diag_report *r, ig_diag_sweep_row *row)
{
    row->algos_changed = -1;
    row->changes[0] = '\0';
    if (!prev->algo || prev->n != r->n_steps) return;
    bool any = false; /* the CPU backend runs no library algorithms: nothing to compare */
    for (int64_t k = 0; k < r->n_steps && !any; k++) any = r->steps[k].p.algo[0] || prev->algo[k][0];
    if (!any) return;
    row->algos_changed = 0;
    size_t used = 0;
    for (int64_t k = 0; k < r->n_steps; k++) {
        const char *now = r->steps[k].p.algo;
        if (!strcmp(prev->algo[k], now)) continue;
        row->algos_changed++;
        if (used < sizeof row->changes - 1) {
            int w = snprintf(row->changes + used, sizeof row->changes - used, "%s%.60s: %s -> %s", used ? "; " : "",
                             prev->name[k], prev->algo[k], now);
            used = w < 0 ? sizeof row->changes : used + (size_t)w;
        }
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int ig__cmd_sweep(int argc, char **argv)
{
    ig_profile_opts o;
    memset(&o, 0, sizeof o);
    o.cmd = "ingot sweep";
    o.workspace = -1;
    o.quiet = 1;
    ig__cli_opt_init(&o.opt);
    int64_t batches[MAX_POINTS], ws[MAX_POINTS];
    int n_b = 0, n_w = 0, json = 0;
    const char *html = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--batch") && i + 1 < argc) {
            if (!parse_list("--batch", argv[++i], batches, &n_b, 0)) return 2;
            continue;
        }
        int r = ig__cli_opt_arg(argc, argv, &i, &o.opt);
        if (r == 0) r = ig__cli_shapes_arg("ingot sweep", argc, argv, &i, &o.shapes);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(a, "--workspace") && i + 1 < argc) {
            if (!parse_list("--workspace", argv[++i], ws, &n_w, 1)) return 2;
        } else if (!strcmp(a, "--mem-limit") && i + 1 < argc) {
            uint64_t u = 0;
            if (!ig__cli_parse_bytes("--mem-limit", argv[++i], &u)) return 2;
            o.mem_limit = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
        } else if (!strcmp(a, "--fp16"))
            o.fp16 = 1;
        else if (!strcmp(a, "--json"))
            json = 1;
        else if (!strcmp(a, "--cpu"))
            o.cpu = 1;
        else if (!strcmp(a, "--device") && i + 1 < argc) {
            const char *d = argv[++i];
            if (strcmp(d, "cpu") != 0 && strcmp(d, "cuda") != 0) {
                fprintf(stderr, "ingot sweep: --device expects cpu or cuda, got '%s'\n", d);
                return 2;
            }
            o.cpu = !strcmp(d, "cpu");
            o.cuda = !o.cpu;
        } else if (!strcmp(a, "--html") && i + 1 < argc)
            html = argv[++i];
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' || o.path) {
            fprintf(stderr, "ingot sweep: unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        } else {
            o.path = a;
        }
    }
    if (!o.path || !n_b) {
        usage(stderr);
        return 2;
    }
    qsort(batches, (size_t)n_b, sizeof batches[0], cmp_i64);
    if (!n_w) {
        ws[0] = -1;
        n_w = 1;
    } else if (o.cpu) {
        fprintf(stderr, "ingot sweep: warning: --workspace limits cuDNN/cuBLASLt workspaces; the CPU ignores it\n");
    }
    ig_diag_sweep_row *rows = calloc((size_t)(n_b * n_w), sizeof *rows);
    step_algos prev[MAX_POINTS];
    memset(prev, 0, sizeof prev);
    if (!rows) return 1;
    int n_rows = 0, rc = 0;
    ig_diag_report last;
    memset(&last, 0, sizeof last);
    bool have_last = false;
    if (!json)
        printf("%-8s %-10s %14s %12s %14s  %-10s %-20s %s\n", "batch", "workspace", "throughput/s", "latency ms",
               "memory MB", "class", "bottleneck", "note");
    for (int w = 0; w < n_w; w++) {
        for (int b = 0; b < n_b; b++) {
            ig_diag_sweep_row *row = &rows[n_rows++];
            row->batch = batches[b];
            row->workspace = ws[w];
            o.workspace = ws[w];
            o.shapes.batch = batches[b];
            ig_diag_report r;
            char oom[512];
            int pr = ig__profile_run(&o, &r, oom, sizeof oom);
            if (pr == 0 && r.mem.have && r.need_bytes > r.avail_bytes) {
                snprintf(oom, sizeof oom, "needs %.1f MB, more than the %.1f MB %s", r.need_bytes / 1e6,
                         r.avail_bytes / 1e6, o.mem_limit > 0 ? "--mem-limit allows" : "available");
                pr = 4;
            }
            row->algos_changed = -1;
            if (pr == 0) {
                algos_compare(&prev[b], &r, row);
                algos_keep(&prev[b], &r);
                row->ok = true;
                row->latency_ms = r.run_ms;
                row->throughput = r.run_ms > 0 ? (double)r.batch * 1e3 / r.run_ms : 0;
                row->peak_bytes = r.need_bytes;
                row->batch_bytes = r.batch_bytes;
                int top = 0;
                for (int k = 1; k < IG_DIAG_N_CLASSES; k++)
                    if (r.class_share[k] > r.class_share[top]) top = k;
                row->cls = (ig_diag_class)top;
                row->cls_share = r.class_share[top];
                snprintf(row->verdict, sizeof row->verdict, "%s", r.bottleneck ? r.bottleneck : "");
                if (r.batch != batches[b])
                    snprintf(row->note, sizeof row->note, "the model's batch is fixed at %lld", (long long)r.batch);
                if (have_last) ig__profile_free(&last);
                last = r;
                have_last = true;
            } else {
                ig__profile_free(&r); /* a profile that ran but does not fit */
                snprintf(row->note, sizeof row->note, "%s at batch %lld: %.200s", pr == 4 ? "out of memory" : "failed",
                         (long long)batches[b], pr == 4 ? oom : "see above");
            }
            if (!json) {
                char wsb[32];
                if (ws[w] < 0)
                    snprintf(wsb, sizeof wsb, "default");
                else
                    snprintf(wsb, sizeof wsb, "%.0fM", (double)ws[w] / 1048576.0);
                if (row->ok)
                    printf("%-8lld %-10s %14.1f %12.4f %14.1f  %-10s %-20s %s\n", (long long)row->batch, wsb,
                           row->throughput, row->latency_ms, row->peak_bytes / 1e6, ig__diag_class_name(row->cls),
                           row->verdict, row->note);
                else
                    printf("%-8lld %-10s %14s %12s %14s  %-10s %-20s %s\n", (long long)row->batch, wsb, "-", "-", "-",
                           "-", "-", row->note);
                if (row->algos_changed > 0)
                    printf("         %d algorithm%s changed from the previous budget: %s\n", (int)row->algos_changed,
                           row->algos_changed == 1 ? "" : "s", row->changes);
                else if (row->algos_changed == 0)
                    printf("         no algorithm changed from the previous budget\n");
            }
            if (!row->ok) {
                if (pr != 4) rc = 1;
                if (!json)
                    printf("stopped at batch %lld: %s; larger batches are not tried\n", (long long)row->batch,
                           pr == 4 ? "it does not fit in memory" : "it failed");
                break; /* larger batches need more */
            }
        }
    }
    if (have_last) {
        last.sweep = rows;
        last.n_sweep = n_rows;
        if (json) ig__diag_write_json(&last, stdout);
        if (html) {
            FILE *f = fopen(html, "w");
            bool ok = f && ig__diag_write_html(&last, f);
            if (f) ok = fclose(f) == 0 && ok;
            if (!ok) {
                fprintf(stderr, "ingot sweep: writing %s failed\n", html);
                rc = 1;
            }
        }
        ig__profile_free(&last);
    } else {
        fprintf(stderr, "ingot sweep: no batch ran\n");
        rc = 1;
    }
    for (int b = 0; b < n_b; b++) algos_free(&prev[b]);
    free(rows);
    return rc;
}
