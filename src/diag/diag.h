/*
 * diag.h -- the diagnostics stage: the field report's bottleneck table, automated (docs/DIAGNOSE.md).
 *
 * Input: per-step records (what ran, its time, FLOPs and bytes; ingot_step_profile) and the ceilings
 * of the machine it ran on (measured copy bandwidth, GEMM rates, launch latency). Output: per step the
 * achieved GB/s and TFLOP/s, their share of the ceilings, a class and the cure; per model the time
 * shares by class, the launch/idle share, capacity and a verdict in plain words; and the reports (JSON,
 * a Chrome/Perfetto trace, one self-contained HTML page).
 *
 * The classes follow Nsight Compute's rule on the roofline, with tensor-core FLOPs counted:
 *   bandwidth  the step moves >= 60% of the copy bandwidth
 *   compute    it reaches >= 60% of the FLOP rate of its precision
 *   latency    neither, and the step is small: its work at the roofs, or its time, is under
 *              IG_DIAG_SMALL_LAUNCHES launch latencies (small grid, short step)
 *   other      neither roof with work enough to reach one: the kernel is inefficient
 * A step moving bytes faster than the copy bandwidth (IG_DIAG_CACHE_SHARE) is served by a cache: it
 * is never called bandwidth-bound, whatever its share.
 *
 * Pure C over the public types: no CUDA header, no graph; the unit tests feed it synthetic records.
 */
#ifndef INGOT_DIAG_H
#define INGOT_DIAG_H

#include "../core/core.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define IG_DIAG_ROOF_SHARE     0.60 /* at or above this share of a roof, the step is bound by it */
#define IG_DIAG_SMALL_LAUNCHES 4.0  /* work or time under this many launch latencies: latency-bound */
#define IG_DIAG_CACHE_SHARE    1.25 /* above this share of the copy bandwidth the bytes came from a cache */
/* Steps timed inside a graph replay carry an event node after each, and each node holds the next kernel
 * back (H200: 1-3 us a step, 6-20% of the benchmark models' replays at batch 32). Their excess over the
 * replay without events, per step and up to this much, is the probes' cost and comes off every step;
 * more than this is not an event's cost (host work timed on a stream) and stays, visibly. */
#define IG_DIAG_PROBE_MAX_MS 0.005

typedef enum ig_diag_class {
    IG_DIAG_BANDWIDTH = 0,
    IG_DIAG_COMPUTE = 1,
    IG_DIAG_LATENCY = 2,
    IG_DIAG_OTHER = 3,
    IG_DIAG_N_CLASSES
} ig_diag_class;

/* "bandwidth", "compute", "latency", "other". */
const char *ig__diag_class_name(ig_diag_class c);

/* What the machine can do, measured (ingot device), beside the data sheet where known. */
typedef struct ig_diag_ceilings {
    char backend[8];    /* "cpu" or "cuda" */
    char device[128];   /* GPU or CPU model */
    char key[256];      /* what the cached measurement is keyed by (device, driver, ingot version) */
    double copy_gbs;    /* copy bandwidth, GB/s counting bytes read + bytes written */
    double fp32_tflops; /* GEMM rates by precision (0: not measured) */
    double fp16_tflops;
    double bf16_tflops;
    double launch_us;     /* one kernel launch on a stream (CPU: a 4x4x4 GEMM, the least a step costs) */
    double graph_node_us; /* one kernel node of a CUDA Graph (0 on the CPU) */
    double malloc_us[3];  /* cudaMalloc + cudaFree of 1 MiB, 64 MiB, 1 GiB (0 when not measured) */
    double l2_bytes;
    double mem_total, mem_free; /* bytes */
    /* the data sheet's peaks (0 when unknown) */
    double sheet_copy_gbs, sheet_fp16_tflops, sheet_fp32_tflops;
} ig_diag_ceilings;

/* FLOP/s the ceilings allow for arithmetic in dtype t (fp32 rate for anything but FLOAT16/BFLOAT16). */
double ig__diag_peak_flops(const ig_diag_ceilings *c, ingot_dtype t);
/* The data sheet of a known device by name (H200, H100), else zeros. */
void ig__diag_sheet(ig_diag_ceilings *c);

/* One step: the record and what the analysis made of it. */
typedef struct ig_diag_step {
    ingot_step_profile p;
    double bytes;     /* read + written + workspace */
    double gbs;       /* achieved bandwidth, GB/s */
    double tflops;    /* achieved TFLOP/s */
    double intensity; /* FLOPs per byte */
    double pct_bw;    /* share of the copy bandwidth, 0..1+ */
    double pct_flops; /* share of the FLOP rate of its precision */
    double ideal_us;  /* the step at the roofs: max(bytes / bandwidth, FLOPs / rate) */
    ig_diag_class cls;
    const char *cure;
} ig_diag_step;

/* Classify one step against c (fills everything but p). graphs: the model runs as a CUDA Graph
 * (a latency-bound step's cure is then fusion, not graphs). */
void ig__diag_classify(const ig_diag_ceilings *c, bool graphs, ig_diag_step *s);

/* Memory accounts, as ingot_context_memory_accounts reports them, plus what the caller measured around
 * each stage (cudaMemGetInfo deltas; -1: not measured). */
typedef struct ig_diag_memory {
    ingot_memory_accounts a;
    bool have;
    double cuda_context;    /* the CUDA context (and the runtime's own) */
    double library_handles; /* cuDNN/cuBLASLt handles, loaded modules: context growth beyond the arena */
    double graph_reserved;  /* the executable CUDA Graph (the library measures it at instantiation) */
    double other_processes; /* used by other processes (NVML), -1 when unknown */
    double caller_io;       /* the caller's own input and output buffers (not the model's) */
    double residual;        /* used memory now minus every account above: what nothing explains */
} ig_diag_memory;

/* One row of a sweep (ingot sweep): a batch or a workspace budget. */
typedef struct ig_diag_sweep_row {
    int64_t batch;
    int64_t workspace; /* bytes, -1: default */
    bool ok;           /* false: it did not fit (out of memory) or failed; note says why */
    double throughput; /* samples per second */
    double latency_ms;
    double peak_bytes;  /* memory the model holds at this point */
    double batch_bytes; /* of peak_bytes, what grows with the batch (the activation arena) */
    ig_diag_class cls;  /* where most of the time goes */
    double cls_share;
    char verdict[64]; /* the model's bottleneck in one word */
    char note[256];
    int32_t algos_changed; /* steps whose library algorithm differs from the previous budget's at this
                              batch; -1: not compared (the first budget, or another program) */
    char changes[512];     /* the first of them: "node: old -> new; ..." */
} ig_diag_sweep_row;

/* The whole report. */
typedef struct ig_diag_report {
    char model[512];
    char precision[8]; /* "fp32", "fp16" */
    int64_t batch;
    ig_diag_ceilings ceil;
    int64_t n_steps;
    ig_diag_step *steps; /* [n_steps], owned by the caller */
    /* the whole run */
    double run_ms;        /* one inference as it runs by default (CUDA: graph replay) */
    double run_stream_ms; /* step by step on a stream (CUDA; the CPU's run) */
    bool graphs;          /* run_ms is a graph replay */
    ig_diag_memory mem;
    double mem_limit; /* bytes the model may have (ingot profile --mem-limit); 0: what was free */
    int64_t n_sweep;
    ig_diag_sweep_row *sweep; /* [n_sweep], owned by the caller */
    /* results of ig__diag_analyze */
    double probe_ms;                       /* per step, what timing it cost, taken off each step; 0 before */
    double steps_ms;                       /* sum of the step times */
    double class_ms[IG_DIAG_N_CLASSES];    /* time by class */
    double class_share[IG_DIAG_N_CLASSES]; /* of steps_ms */
    int64_t class_n[IG_DIAG_N_CLASSES];
    double idle_share;      /* of run_stream_ms not inside any step: launch gaps, host work */
    double graph_gain;      /* 1 - run_ms / run_stream_ms (what graph replay saved) */
    double launch_share;    /* the launch-bound share: idle time plus latency-class steps, of the run */
    int64_t fusable_steps;  /* bandwidth/latency steps whose output only the next step reads */
    double fusable_bytes;   /* traffic fusing them removes per inference (each intermediate written + read) */
    double need_bytes;      /* memory this batch needs (weights + arena + what the context costs) */
    double batch_bytes;     /* of need_bytes, what grows with the batch (the arena less its constants) */
    double avail_bytes;     /* what it may have: mem_limit, or the memory free before it was loaded */
    int64_t max_batch;      /* the largest batch that fits (activations linear in the batch); -1 unknown */
    const char *bottleneck; /* "bandwidth", "compute", "launch", "capacity" or "inefficient kernels" */
    char verdict[1024];
} ig_diag_report;

/* Classify every step, add up the shares, judge capacity and write the verdict. */
void ig__diag_analyze(ig_diag_report *r);

/* ---- reports (report.c, report_html.c) ---- */
/* Each returns false when writing failed (ferror). */
bool ig__diag_write_json(const ig_diag_report *r, FILE *f);
/* Chrome trace events (chrome://tracing, ui.perfetto.dev): one slice per step on a track per class
 * colour, live activation bytes as a counter track. */
bool ig__diag_write_trace(const ig_diag_report *r, FILE *f);
/* One self-contained HTML page (inline CSS, JS and SVG; no network): summary and verdict, the steps on
 * the measured roofline, time by class, memory by account, the sweep. */
bool ig__diag_write_html(const ig_diag_report *r, FILE *f);
/* A JSON string literal's contents for s (quotes and control characters escaped; '<' too, so the
 * text can sit inside an HTML <script> element). */
void ig__diag_json_str(FILE *f, const char *s);

/* ---- ceilings: measurement and cache (ceilings.c) ---- */
/* The cache folder is core's: ig__cache_dir. */
/* Read / write the ceilings cached under key (a file name made of it). Load is false when absent,
 * unreadable or made for another key. */
bool ig__diag_ceilings_load(const char *key, ig_diag_ceilings *c);
bool ig__diag_ceilings_save(const ig_diag_ceilings *c);
/* Measure the CPU's ceilings with `threads` threads (0: one per core): a large memcpy, the CPU
 * backend's GEMM, and the cost of a tiny GEMM (the least a step costs). Takes about a second. */
ingot_status ig__diag_measure_cpu(int threads, ig_diag_ceilings *c, ig_err *err);
/* The CPU's ceilings from the cache, or measured now and cached (key: CPU model, threads, version). */
ingot_status ig__diag_cpu_ceilings(int threads, bool remeasure, ig_diag_ceilings *c, ig_err *err);

#endif /* INGOT_DIAG_H */
