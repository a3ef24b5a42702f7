/*
 * cmd_device.c -- `ingot device`: what this machine can do, measured once and cached (docs/DIAGNOSE.md).
 *
 *   ingot device [--cpu] [--json] [--remeasure]
 *
 * On the GPU: copy bandwidth (read + write), fp32/fp16/bf16 GEMM rates through cuBLASLt, one kernel
 * launch on a stream, one node of a CUDA Graph, cudaMalloc + cudaFree at 1 MiB / 64 MiB / 1 GiB, L2 size,
 * memory total and free, beside the data sheet's peaks (src/cuda/device_bench.c measures). The result
 * is cached, keyed by GPU, driver, runtime and ingot version, in $INGOT_CACHE_DIR or ~/.cache/ingot;
 * `ingot profile` judges every step against it. With --cpu: the CPU's ceilings (a large memcpy, the CPU
 * backend's GEMM, a tiny GEMM for the least a step costs), as `ingot profile --cpu` uses them.
 */
#include "cli.h"

#include "diag/diag.h"

#include <stdio.h>
#include <string.h>

#ifdef INGOT_HAVE_CUDA
#include "cuda/device_bench.h"
#include "ingot_cuda.h"
#endif

int ig__cli_gpu_ceilings(const char *cmd, int remeasure, ig_diag_ceilings *c)
{
#ifdef INGOT_HAVE_CUDA
    ig_err err = {0};
    ig_cuda_bench b;
    if (ig__cuda_device_identity(0, &b, &err) != INGOT_OK) {
        fprintf(stderr, "%s: %s: %s\n", cmd, ingot_status_name(err.status), err.msg);
        return 0;
    }
    char key[256];
    snprintf(key, sizeof key, "cuda|%s|sm %d.%d|driver %d|runtime %d|ingot %d.%d.%d", b.name, b.sm_major, b.sm_minor,
             b.driver, b.runtime, INGOT_VERSION_MAJOR, INGOT_VERSION_MINOR, INGOT_VERSION_PATCH);
    if (!remeasure && ig__diag_ceilings_load(key, c)) {
        c->mem_free = (double)b.mem_free; /* the rates are the device's; what is free is now's */
        c->mem_total = (double)b.mem_total;
        return 1;
    }
    fprintf(stderr, "%s: measuring %s once (a few seconds; cached for later runs)\n", cmd, b.name);
    if (ig__cuda_device_bench(0, &b, &err) != INGOT_OK) {
        fprintf(stderr, "%s: measuring the GPU: %s: %s\n", cmd, ingot_status_name(err.status), err.msg);
        return 0;
    }
    memset(c, 0, sizeof *c);
    snprintf(c->backend, sizeof c->backend, "cuda");
    snprintf(c->device, sizeof c->device, "%s", b.name);
    snprintf(c->key, sizeof c->key, "%s", key);
    c->copy_gbs = b.copy_gbs;
    c->fp32_tflops = b.fp32_tflops;
    c->fp16_tflops = b.fp16_tflops;
    c->bf16_tflops = b.bf16_tflops;
    c->launch_us = b.launch_us;
    c->graph_node_us = b.graph_node_us;
    memcpy(c->malloc_us, b.malloc_us, sizeof c->malloc_us);
    c->l2_bytes = (double)b.l2_bytes;
    c->mem_total = (double)b.mem_total;
    c->mem_free = (double)b.mem_free;
    ig__diag_sheet(c);
    if (!ig__diag_ceilings_save(c)) fprintf(stderr, "%s: warning: could not write the cache (no cache folder)\n", cmd);
    return 1;
#else
    (void)remeasure;
    (void)c;
    fprintf(stderr, "%s: this build of ingot has no CUDA backend\n", cmd);
    return 0;
#endif
}

static void print_rate(const char *what, double v, double sheet, const char *unit)
{
    if (v <= 0) return;
    printf("  %-30s %12.2f %-8s", what, v, unit);
    if (sheet > 0) printf("  data sheet %10.1f  (%.0f%%)", sheet, 100 * v / sheet);
    printf("\n");
}

static void print_ceilings(const ig_diag_ceilings *c)
{
    printf("%s (%s backend)\n", c->device, c->backend);
    print_rate("copy bandwidth (read + write)", c->copy_gbs, c->sheet_copy_gbs, "GB/s");
    print_rate("fp32 GEMM", c->fp32_tflops, c->sheet_fp32_tflops, "TFLOP/s");
    print_rate("fp16 GEMM (fp32 accumulation)", c->fp16_tflops, c->sheet_fp16_tflops, "TFLOP/s");
    print_rate("bf16 GEMM (fp32 accumulation)", c->bf16_tflops, c->sheet_fp16_tflops, "TFLOP/s");
    print_rate(strcmp(c->backend, "cuda") ? "one step (a 4x4x4 GEMM)" : "kernel launch on a stream", c->launch_us, 0,
               "us");
    print_rate("kernel node of a CUDA Graph", c->graph_node_us, 0, "us");
    static const char *const sz[3] = {"1 MiB", "64 MiB", "1 GiB"};
    for (int k = 0; k < 3; k++)
        if (c->malloc_us[k] != 0) {
            char what[64];
            snprintf(what, sizeof what, "cudaMalloc + cudaFree %s", sz[k]);
            if (c->malloc_us[k] < 0)
                printf("  %-30s   (no room to measure)\n", what);
            else
                print_rate(what, c->malloc_us[k], 0, "us");
        }
    if (c->l2_bytes > 0) printf("  %-30s %12.1f MB\n", "L2 cache", c->l2_bytes / 1e6);
    printf("  %-30s %12.1f MB of %.1f MB\n", "memory free", c->mem_free / 1e6, c->mem_total / 1e6);
    printf("  (cached as: %s)\n", c->key);
}

static void print_json(const ig_diag_ceilings *c)
{
    printf("{\"backend\": \"%s\", \"device\": \"", c->backend);
    ig__diag_json_str(stdout, c->device);
    printf("\", \"key\": \"");
    ig__diag_json_str(stdout, c->key);
    printf("\", \"copy_gbs\": %.6g, \"fp32_tflops\": %.6g, \"fp16_tflops\": %.6g, \"bf16_tflops\": %.6g, "
           "\"launch_us\": %.6g, \"graph_node_us\": %.6g, "
           "\"malloc_free_us\": {\"1MiB\": %.6g, \"64MiB\": %.6g, \"1GiB\": %.6g}, \"l2_bytes\": %.6g, "
           "\"mem_total\": %.6g, \"mem_free\": %.6g, "
           "\"sheet\": {\"copy_gbs\": %.6g, \"fp16_tflops\": %.6g, \"fp32_tflops\": %.6g}}\n",
           c->copy_gbs, c->fp32_tflops, c->fp16_tflops, c->bf16_tflops, c->launch_us, c->graph_node_us, c->malloc_us[0],
           c->malloc_us[1], c->malloc_us[2], c->l2_bytes, c->mem_total, c->mem_free, c->sheet_copy_gbs,
           c->sheet_fp16_tflops, c->sheet_fp32_tflops);
}

int ig__cmd_device(int argc, char **argv)
{
    int cpu = 0, json = 0, remeasure = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cpu"))
            cpu = 1;
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--remeasure"))
            remeasure = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: ingot device [--cpu] [--json] [--remeasure]\n"
                   "  measures this GPU once (copy bandwidth, GEMM rates, launch and graph-node latency,\n"
                   "  cudaMalloc costs, L2, memory) and caches it in $INGOT_CACHE_DIR or ~/.cache/ingot\n"
                   "  --cpu        the CPU's ceilings instead (what `ingot profile --cpu` uses)\n"
                   "  --json       one JSON object on stdout\n"
                   "  --remeasure  measure again instead of reading the cache\n");
            return 0;
        } else {
            fprintf(stderr, "ingot device: unexpected argument '%s' (see ingot device --help)\n", argv[i]);
            return 2;
        }
    }
    ig_diag_ceilings c;
    memset(&c, 0, sizeof c);
    if (cpu) {
        ig_err err = {0};
        if (ig__diag_cpu_ceilings(0, remeasure, &c, &err) != INGOT_OK) {
            fprintf(stderr, "ingot device: measuring the CPU: %s\n", err.msg);
            return 1;
        }
    } else {
#ifdef INGOT_HAVE_CUDA
        char why[512] = "";
        if (!ingot_cuda_available(why, sizeof why)) {
            fprintf(stderr, "ingot device: no usable GPU: %s (`ingot device --cpu` measures the CPU)\n", why);
            return 1;
        }
        if (!ig__cli_gpu_ceilings("ingot device", remeasure, &c)) return 1;
#else
        fprintf(stderr, "ingot device: no usable GPU: this build of ingot has no CUDA backend (`ingot device --cpu` "
                        "measures the CPU)\n");
        return 1;
#endif
    }
    if (json)
        print_json(&c);
    else
        print_ceilings(&c);
    return 0;
}
