/*
 * diag.c -- the classifier and the verdict: per step, where it sits on the roofline and what would make
 * it faster; per model, where the time goes and what that means (the field report's table, automated).
 */
#include "diag.h"

#include <math.h>
#include <string.h>

const char *ig__diag_class_name(ig_diag_class c)
{
    static const char *const names[] = {"bandwidth", "compute", "latency", "other"};
    return c >= 0 && c < IG_DIAG_N_CLASSES ? names[c] : "?";
}

double ig__diag_peak_flops(const ig_diag_ceilings *c, ingot_dtype t)
{
    double tf = c->fp32_tflops;
    if (t == INGOT_DTYPE_FLOAT16 && c->fp16_tflops > 0) tf = c->fp16_tflops;
    if (t == INGOT_DTYPE_BFLOAT16 && c->bf16_tflops > 0) tf = c->bf16_tflops;
    return tf * 1e12;
}

void ig__diag_sheet(ig_diag_ceilings *c)
{
    /* dense (no sparsity) tensor-core rates; fp32 without tensor cores (TF32 is off in ingot) */
    static const struct {
        const char *name;
        double gbs, fp16, fp32;
    } sheets[] = {
        {"H200", 4800, 989, 67}, {"H100 NVL", 3900, 835, 60}, {"H100 PCIe", 2000, 756, 51},
        {"H100", 3350, 989, 67}, {"A100", 2039, 312, 19.5},   {"L40S", 864, 362, 91.6},
    };
    c->sheet_copy_gbs = c->sheet_fp16_tflops = c->sheet_fp32_tflops = 0;
    for (size_t i = 0; i < sizeof sheets / sizeof sheets[0]; i++)
        if (strstr(c->device, sheets[i].name)) {
            c->sheet_copy_gbs = sheets[i].gbs;
            c->sheet_fp16_tflops = sheets[i].fp16;
            c->sheet_fp32_tflops = sheets[i].fp32;
            return;
        }
}

/* Convolutions and matrix products: their bytes are mostly weights and their reuse grows with the batch. */
static bool is_gemm_like(const ingot_step_profile *p)
{
    return !strcmp(p->kind, "gemm") || !strcmp(p->kind, "conv") || strstr(p->op, "Conv") || strstr(p->op, "MatMul") ||
           strstr(p->op, "Gemm") || strstr(p->op, "Attention");
}

static const char *cure_of(const ig_diag_ceilings *c, bool graphs, const ig_diag_step *s)
{
    bool cuda = !strcmp(c->backend, "cuda");
    bool fp32 = s->p.math_dtype != INGOT_DTYPE_FLOAT16 && s->p.math_dtype != INGOT_DTYPE_BFLOAT16;
    switch (s->cls) {
    case IG_DIAG_BANDWIDTH:
        if (is_gemm_like(&s->p))
            return fp32 ? "bigger batch (reuses the weights it reads), lower precision (half the bytes)"
                        : "bigger batch (reuses the weights it reads)";
        return fp32 ? "fuse with its neighbours (fewer bytes), lower precision (half the bytes)"
                    : "fuse with its neighbours (fewer bytes)";
    case IG_DIAG_COMPUTE:
        return fp32 && cuda ? "lower precision (fp16/bf16 tensor cores)"
                            : "at the FLOP roof: fewer FLOPs (a cheaper algorithm) or more devices";
    case IG_DIAG_LATENCY:
        if (cuda && !graphs) return "CUDA Graph (removes launch gaps), fuse with its neighbours";
        return "fuse with its neighbours, bigger batch (more work per launch)";
    default: return "better kernel (it reaches neither roof with work enough to)";
    }
}

void ig__diag_classify(const ig_diag_ceilings *c, bool graphs, ig_diag_step *s)
{
    const ingot_step_profile *p = &s->p;
    s->bytes = p->bytes_read + p->bytes_written + p->bytes_workspace;
    double sec = p->ms > 0 ? p->ms * 1e-3 : 0;
    double bw = c->copy_gbs * 1e9, peak = ig__diag_peak_flops(c, p->math_dtype);
    s->gbs = sec > 0 ? s->bytes / sec / 1e9 : 0;
    s->tflops = sec > 0 ? p->flops / sec / 1e12 : 0;
    s->intensity = s->bytes > 0 ? p->flops / s->bytes : 0;
    s->pct_bw = bw > 0 ? s->gbs * 1e9 / bw : 0;
    s->pct_flops = peak > 0 ? s->tflops * 1e12 / peak : 0;
    double t_bw = bw > 0 ? s->bytes / bw : 0, t_fl = peak > 0 ? p->flops / peak : 0;
    s->ideal_us = 1e6 * (t_bw > t_fl ? t_bw : t_fl);
    /* Moving bytes faster than the copy bandwidth means they came from a cache: the memory roof does not
     * bind such a step. A step at both roofs is bound by the one it is closer to. */
    bool cached = s->pct_bw > IG_DIAG_CACHE_SHARE;
    double launch = c->launch_us > 0 ? c->launch_us : 1.0;
    bool small = s->ideal_us < IG_DIAG_SMALL_LAUNCHES * launch || p->ms * 1e3 < IG_DIAG_SMALL_LAUNCHES * launch;
    if (!cached && s->pct_bw >= IG_DIAG_ROOF_SHARE && s->pct_bw >= s->pct_flops)
        s->cls = IG_DIAG_BANDWIDTH;
    else if (s->pct_flops >= IG_DIAG_ROOF_SHARE)
        s->cls = IG_DIAG_COMPUTE;
    else if (small)
        s->cls = IG_DIAG_LATENCY;
    else
        s->cls = IG_DIAG_OTHER;
    s->cure = cure_of(c, graphs, s);
}

static double pct(double x) { return 100.0 * x; }

/* Append to the verdict (bounded; a verdict that does not fit is cut, never overrun). */
static void say(ig_diag_report *r, const char *fmt, ...) IG_PRINTF(2, 3);
static void say(ig_diag_report *r, const char *fmt, ...)
{
    size_t n = strlen(r->verdict);
    if (n + 1 >= sizeof r->verdict) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->verdict + n, sizeof r->verdict - n, fmt, ap);
    va_end(ap);
}

static void capacity(ig_diag_report *r)
{
    const ig_diag_memory *m = &r->mem;
    r->need_bytes = r->avail_bytes = r->batch_bytes = 0;
    r->max_batch = -1;
    if (!m->have) return;
    double extra = (m->library_handles > 0 ? m->library_handles : 0) + (m->graph_reserved > 0 ? m->graph_reserved : 0);
    double fixed = (double)m->a.weights + extra + (double)m->a.constants;
    /* the CPU stages inputs in a buffer of its own; on the GPU the staging is inside the arena */
    double per_batch = (double)m->a.arena - (double)m->a.constants + (m->a.device ? 0 : (double)m->a.io_staging);
    r->need_bytes = fixed + per_batch;
    r->batch_bytes = per_batch;
    /* what the model may have: what is free now plus what it holds itself */
    r->avail_bytes = r->mem_limit > 0 ? r->mem_limit : (double)m->a.free_bytes + r->need_bytes;
    double per_sample = r->batch > 0 ? per_batch / (double)r->batch : 0;
    if (per_sample > 0 && r->avail_bytes > fixed) {
        double b = floor((r->avail_bytes - fixed) / per_sample);
        r->max_batch = b < 1e9 ? (int64_t)b : 1000000000; /* beyond that the estimate means nothing */
    }
}

/* IG_DIAG_PROBE_MAX_MS: the steps' excess over the graph replay, per step, taken off each (never below a
 * quarter of what was measured: a step shorter than the probe's cost is still a step). Once per report:
 * probe_ms set says the steps are already corrected. */
static void take_off_probes(ig_diag_report *r)
{
    if (r->probe_ms > 0 || !r->graphs || r->run_ms <= 0 || r->n_steps <= 0) return;
    double sum = 0;
    for (int64_t k = 0; k < r->n_steps; k++) sum += r->steps[k].p.ms;
    double per = (sum - r->run_ms) / (double)r->n_steps;
    if (per <= 0 || per > IG_DIAG_PROBE_MAX_MS) return;
    r->probe_ms = per;
    for (int64_t k = 0; k < r->n_steps; k++) {
        double *ms = &r->steps[k].p.ms;
        *ms = *ms - per > 0.25 * *ms ? *ms - per : 0.25 * *ms;
    }
}

void ig__diag_analyze(ig_diag_report *r)
{
    memset(r->class_ms, 0, sizeof r->class_ms);
    memset(r->class_share, 0, sizeof r->class_share);
    memset(r->class_n, 0, sizeof r->class_n);
    r->steps_ms = 0;
    r->fusable_steps = 0;
    r->fusable_bytes = 0;
    r->verdict[0] = '\0';
    take_off_probes(r);
    for (int64_t k = 0; k < r->n_steps; k++) {
        ig_diag_step *s = &r->steps[k];
        ig__diag_classify(&r->ceil, r->graphs, s);
        r->steps_ms += s->p.ms;
        r->class_ms[s->cls] += s->p.ms;
        r->class_n[s->cls]++;
    }
    for (int c = 0; c < IG_DIAG_N_CLASSES; c++) r->class_share[c] = r->steps_ms > 0 ? r->class_ms[c] / r->steps_ms : 0;
    /* intermediates a fusion would keep in registers: a memory-bound step whose output only the next
     * (memory-bound) step reads is written once and read back once for nothing */
    for (int64_t k = 0; k + 1 < r->n_steps; k++) {
        const ig_diag_step *a = &r->steps[k], *b = &r->steps[k + 1];
        bool am = a->cls == IG_DIAG_BANDWIDTH || a->cls == IG_DIAG_LATENCY;
        bool bm = b->cls == IG_DIAG_BANDWIDTH || b->cls == IG_DIAG_LATENCY;
        if (a->p.feeds_next && am && bm) {
            r->fusable_steps++;
            r->fusable_bytes += 2 * a->p.bytes_written;
        }
    }
    /* the step-by-step run; never less than its steps (timings of separate runs differ a little) */
    double stream = r->run_stream_ms > r->steps_ms ? r->run_stream_ms : r->steps_ms;
    double idle = stream > r->steps_ms ? stream - r->steps_ms : 0;
    r->idle_share = stream > 0 ? idle / stream : 0;
    r->graph_gain = r->graphs && r->run_stream_ms > 0 && r->run_ms > 0 ? 1 - r->run_ms / r->run_stream_ms : 0;
    r->launch_share = stream > 0 ? (idle + r->class_ms[IG_DIAG_LATENCY]) / stream : 0;
    capacity(r);

    /* the bottleneck: the largest share of the step-by-step run */
    double f[IG_DIAG_N_CLASSES];
    for (int c = 0; c < IG_DIAG_N_CLASSES; c++) f[c] = stream > 0 ? r->class_ms[c] / stream : 0;
    f[IG_DIAG_LATENCY] = r->launch_share;
    int top = 0;
    for (int c = 1; c < IG_DIAG_N_CLASSES; c++)
        if (f[c] > f[top]) top = c;
    bool cuda = !strcmp(r->ceil.backend, "cuda");
    bool fp32 = strcmp(r->precision, "fp16") != 0 && strcmp(r->precision, "bf16") != 0;
    bool oom = r->mem.have && r->need_bytes > r->avail_bytes;
    if (oom) {
        r->bottleneck = "capacity";
        say(r, "capacity-bound: this batch needs %.1f MB and %.1f MB are available; ", r->need_bytes / 1e6,
            r->avail_bytes / 1e6);
        if (r->max_batch > 0) say(r, "the largest batch that fits is %lld. ", (long long)r->max_batch);
    }
    const char *mixed = f[top] < 0.5 ? " (mixed: no class has half the time)" : "";
    switch (top) {
    case IG_DIAG_BANDWIDTH:
        if (!oom) r->bottleneck = "bandwidth";
        say(r,
            "bandwidth-bound%s: %.0f%% of the time is in %lld steps at >= 60%% of copy bandwidth; saving memory "
            "will not raise throughput",
            mixed, pct(f[top]), (long long)r->class_n[top]);
        if (r->fusable_steps > 0)
            say(r, "; fusing %lld steps into their successors removes %.1f MB of traffic per inference",
                (long long)r->fusable_steps, r->fusable_bytes / 1e6);
        if (fp32) say(r, "; fp16 storage halves the bytes every step moves");
        say(r, ".");
        break;
    case IG_DIAG_COMPUTE:
        if (!oom) r->bottleneck = "compute";
        say(r,
            "compute-bound%s: %.0f%% of the time is in %lld steps at >= 60%% of the %s FLOP rate; fusion and "
            "memory savings will not raise throughput, ",
            mixed, pct(f[top]), (long long)r->class_n[top], fp32 ? "fp32" : "fp16");
        say(r, "%s.", fp32 && cuda ? "fp16/bf16 tensor cores will" : "only fewer FLOPs or a faster device will");
        break;
    case IG_DIAG_LATENCY:
        if (!oom) r->bottleneck = "launch";
        say(r,
            "launch-bound%s: %.0f%% of the step-by-step run is gaps between steps (%.0f%%) and %lld steps too "
            "small to fill the device; ",
            mixed, pct(f[top]), pct(r->idle_share), (long long)r->class_n[IG_DIAG_LATENCY]);
        if (cuda && r->graphs)
            say(r, "CUDA Graph replay saves %.0f%% of the time; fusing small steps and a bigger batch do the rest.",
                pct(r->graph_gain));
        else if (cuda)
            say(r, "a CUDA Graph removes the gaps; fusing small steps and a bigger batch do the rest.");
        else
            say(r, "fusing small steps and a bigger batch raise throughput; memory is not the limit.");
        break;
    default:
        if (!oom) r->bottleneck = "inefficient kernels";
        say(r,
            "inefficient kernels%s: %.0f%% of the time is in %lld steps that reach neither roof although they have "
            "work enough to; better kernels (see the slowest steps) raise throughput, memory savings will not.",
            mixed, pct(f[top]), (long long)r->class_n[top]);
        break;
    }
    if (r->mem.have && !oom) {
        say(r, " Memory: this batch needs %.1f MB of %.1f MB available", r->need_bytes / 1e6, r->avail_bytes / 1e6);
        if (r->max_batch > 0)
            say(r, "; up to batch %lld fits (activations grow with the batch)", (long long)r->max_batch);
        say(r, ".");
    }
}
