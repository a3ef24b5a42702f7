/*
 * ceilings.c -- what the machine can do, measured once and cached: the CPU's here (a large parallel
 * memcpy, the CPU backend's GEMM, a tiny GEMM for the cost of a step); the GPU's in src/cuda/device_bench.c.
 * Both go through the same cache: one small text file per key (device, driver, ingot version, threads)
 * in $INGOT_CACHE_DIR, else $XDG_CACHE_HOME/ingot, else ~/.cache/ingot.
 */
#define _POSIX_C_SOURCE 200809L
#include "../cpu/cpu.h"
#include "diag.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The cache file of a key: ceilings-<64-bit FNV-1a of the key>.txt (the key itself is inside). */
static bool cache_path(const char *key, char *buf, size_t n)
{
    char dir[900];
    if (!ig__cache_dir(dir, sizeof dir)) return false;
    uint64_t h = ig__fnv1a(IG_FNV_SEED, key, strlen(key));
    int w = snprintf(buf, n, "%s/ceilings-%016llx.txt", dir, (unsigned long long)h);
    return w > 0 && (size_t)w < n;
}

/* The numeric fields of the file, by name. */
static const struct {
    const char *name;
    size_t off;
} fields[] = {
    {"copy_gbs", offsetof(ig_diag_ceilings, copy_gbs)},
    {"fp32_tflops", offsetof(ig_diag_ceilings, fp32_tflops)},
    {"fp16_tflops", offsetof(ig_diag_ceilings, fp16_tflops)},
    {"bf16_tflops", offsetof(ig_diag_ceilings, bf16_tflops)},
    {"launch_us", offsetof(ig_diag_ceilings, launch_us)},
    {"graph_node_us", offsetof(ig_diag_ceilings, graph_node_us)},
    {"l2_bytes", offsetof(ig_diag_ceilings, l2_bytes)},
    {"mem_total", offsetof(ig_diag_ceilings, mem_total)},
    {"mem_free", offsetof(ig_diag_ceilings, mem_free)},
    {"sheet_copy_gbs", offsetof(ig_diag_ceilings, sheet_copy_gbs)},
    {"sheet_fp16_tflops", offsetof(ig_diag_ceilings, sheet_fp16_tflops)},
    {"sheet_fp32_tflops", offsetof(ig_diag_ceilings, sheet_fp32_tflops)},
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

bool ig__diag_ceilings_save(const ig_diag_ceilings *c)
{
    char path[1024], tmp[1100];
    if (!cache_path(c->key, path, sizeof path)) return false;
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return false;
    fprintf(f, "key %s\nbackend %s\ndevice %s\n", c->key, c->backend, c->device);
    for (size_t k = 0; k < N_FIELDS; k++)
        fprintf(f, "%s %.9g\n", fields[k].name, *(const double *)((const char *)c + fields[k].off));
    fprintf(f, "malloc_us %.9g %.9g %.9g\n", c->malloc_us[0], c->malloc_us[1], c->malloc_us[2]);
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    /* rename: a reader never sees half a file, and two processes measuring at once both succeed */
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return false;
    }
    return true;
}

static void rest_of_line(char *dst, size_t n, const char *v)
{
    snprintf(dst, n, "%s", v);
    dst[strcspn(dst, "\n")] = '\0';
}

bool ig__diag_ceilings_load(const char *key, ig_diag_ceilings *c)
{
    char path[1024], line[512];
    if (!cache_path(key, path, sizeof path)) return false;
    FILE *f = fopen(path, "r");
    if (!f) return false;
    ig_diag_ceilings x;
    memset(&x, 0, sizeof x);
    bool keyed = false;
    while (fgets(line, sizeof line, f)) {
        char *sp = strchr(line, ' ');
        if (!sp) continue;
        *sp = '\0';
        const char *v = sp + 1;
        if (!strcmp(line, "key")) {
            rest_of_line(x.key, sizeof x.key, v);
            keyed = !strcmp(x.key, key);
        } else if (!strcmp(line, "backend"))
            rest_of_line(x.backend, sizeof x.backend, v);
        else if (!strcmp(line, "device"))
            rest_of_line(x.device, sizeof x.device, v);
        else if (!strcmp(line, "malloc_us")) {
            if (sscanf(v, "%lf %lf %lf", &x.malloc_us[0], &x.malloc_us[1], &x.malloc_us[2]) != 3)
                memset(x.malloc_us, 0, sizeof x.malloc_us); /* not measured, rather than half read */
        } else
            for (size_t k = 0; k < N_FIELDS; k++)
                if (!strcmp(line, fields[k].name)) *(double *)((char *)&x + fields[k].off) = strtod(v, NULL);
    }
    fclose(f);
    /* a file for another key (a hash collision) or without its rates is not a measurement */
    if (!keyed || !(x.copy_gbs > 0) || !(x.fp32_tflops > 0)) return false;
    *c = x;
    return true;
}

/* ---- the CPU ------------------------------------------------------------------------------------- */

typedef struct copy_job {
    unsigned char *dst;
    const unsigned char *src;
    int64_t chunk;
} copy_job;

static void copy_range(void *arg, int64_t b, int64_t e)
{
    copy_job *j = arg;
    memcpy(j->dst + b * j->chunk, j->src + b * j->chunk, (size_t)((e - b) * j->chunk));
}

static void cpu_name(char *buf, size_t n)
{
    snprintf(buf, n, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            const char *v = strchr(line, ':') + 1;
            while (*v == ' ') v++;
            rest_of_line(buf, n, v);
            break;
        }
    fclose(f);
}

ingot_status ig__diag_measure_cpu(int threads, ig_diag_ceilings *c, ig_err *err)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (threads <= 0) threads = cores > 0 ? (int)cores : 1;
    memset(c, 0, sizeof *c);
    snprintf(c->backend, sizeof c->backend, "cpu");
    char name[100];
    cpu_name(name, sizeof name);
    snprintf(c->device, sizeof c->device, "%s (%d threads)", name, threads);
    struct ig_pool *pool = ig__pool_create(threads);
    if (threads > 1 && !pool) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "cannot start %d threads", threads);

    /* copy bandwidth: 64 MiB, far beyond the last-level cache of the machines CI runs on */
    const int64_t chunk = 1 << 20, n_chunks = 64;
    unsigned char *a = ig__malloc_aligned((size_t)(chunk * n_chunks), 64);
    unsigned char *b = ig__malloc_aligned((size_t)(chunk * n_chunks), 64);
    size_t gn = 384;
    float *ga = ig__malloc_aligned(gn * gn * sizeof(float), 64), *gb = ig__malloc_aligned(gn * gn * sizeof(float), 64);
    float *gc = ig__malloc_aligned(gn * gn * sizeof(float), 64);
    ingot_status st = INGOT_OK;
    if (!a || !b || !ga || !gb || !gc) {
        st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory measuring the CPU");
        goto out;
    }
    memset(a, 1, (size_t)(chunk * n_chunks));
    memset(b, 0, (size_t)(chunk * n_chunks));
    copy_job j = {b, a, chunk};
    double best = 1e30;
    for (int rep = 0; rep < 6; rep++) {
        double t0 = ig__now_ms();
        ig__parallel_for(pool, n_chunks, 1, copy_range, &j);
        double t = (ig__now_ms() - t0) * 1e-3;
        if (t < best) best = t;
    }
    c->copy_gbs = 2.0 * (double)(chunk * n_chunks) / best / 1e9; /* read + write */

    /* the GEMM rate of the CPU backend's kernel */
    for (size_t i = 0; i < gn * gn; i++) {
        ga[i] = (float)(i % 7) * 0.25f;
        gb[i] = (float)(i % 5) * 0.5f;
    }
    best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = ig__now_ms();
        ig__sgemm(pool, false, false, (int64_t)gn, (int64_t)gn, (int64_t)gn, 1.0f, ga, (int64_t)gn, gb, (int64_t)gn,
                  0.0f, gc, (int64_t)gn);
        double t = (ig__now_ms() - t0) * 1e-3;
        if (t < best) best = t;
    }
    c->fp32_tflops = 2.0 * (double)gn * (double)gn * (double)gn / best / 1e12;

    /* a "launch": the cheapest step there is, a tiny GEMM through the same kernel (the median of many) */
    double lat[201];
    for (int r = 0; r < 201; r++) {
        double t0 = ig__now_ms();
        ig__sgemm(pool, false, false, 4, 4, 4, 1.0f, ga, 4, gb, 4, 0.0f, gc, 4);
        lat[r] = (ig__now_ms() - t0) * 1e3; /* us */
    }
    for (int i = 1; i < 201; i++) /* insertion sort: 201 values */
        for (int k = i; k > 0 && lat[k] < lat[k - 1]; k--) {
            double x = lat[k];
            lat[k] = lat[k - 1];
            lat[k - 1] = x;
        }
    c->launch_us = lat[100] > 0.2 ? lat[100] : 0.2;
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psz > 0) c->mem_total = (double)pages * (double)psz;
    if (avail > 0 && psz > 0) c->mem_free = (double)avail * (double)psz;
out:
    ig__free_aligned(a);
    ig__free_aligned(b);
    ig__free_aligned(ga);
    ig__free_aligned(gb);
    ig__free_aligned(gc);
    ig__pool_destroy(pool);
    return st;
}

ingot_status ig__diag_cpu_ceilings(int threads, bool remeasure, ig_diag_ceilings *c, ig_err *err)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (threads <= 0) threads = cores > 0 ? (int)cores : 1;
    char name[100], key[256];
    cpu_name(name, sizeof name);
    snprintf(key, sizeof key, "cpu|%s|threads %d|ingot %d.%d.%d", name, threads, INGOT_VERSION_MAJOR,
             INGOT_VERSION_MINOR, INGOT_VERSION_PATCH);
    if (!remeasure && ig__diag_ceilings_load(key, c)) {
        /* the rates are the machine's; what is free is now's */
        long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        if (pages > 0 && psz > 0) c->mem_total = (double)pages * (double)psz;
        if (avail > 0 && psz > 0) c->mem_free = (double)avail * (double)psz;
        return INGOT_OK;
    }
    ingot_status st = ig__diag_measure_cpu(threads, c, err);
    if (st != INGOT_OK) return st;
    snprintf(c->key, sizeof c->key, "%s", key);
    if (!ig__diag_ceilings_save(c)) ig__log(INGOT_LOG_WARN, "could not cache the CPU ceilings (no cache folder)");
    return INGOT_OK;
}
