/*
 * report.c -- the diagnostics as JSON (everything the analysis knows) and as Chrome trace events (one
 * slice per step, coloured by class, and the live activation bytes as a counter), docs/DIAGNOSE.md.
 */
#include "diag.h"

#include <math.h>

void ig__diag_json_str(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20 || ch == '<' || ch == '>' || ch == '&')
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
}

/* A finite number (JSON has no NaN or infinity). */
static double fin(double x) { return isfinite(x) ? x : 0; }

static void jnum(FILE *f, const char *key, double v, const char *sep)
{
    fprintf(f, "\"%s\": %.9g%s", key, fin(v), sep);
}

static void jstr(FILE *f, const char *key, const char *v, const char *sep)
{
    fprintf(f, "\"%s\": \"", key);
    ig__diag_json_str(f, v ? v : "");
    fprintf(f, "\"%s", sep);
}

static void write_ceilings(const ig_diag_ceilings *c, FILE *f)
{
    fprintf(f, "  \"ceilings\": {");
    jstr(f, "backend", c->backend, ", ");
    jstr(f, "device", c->device, ", ");
    jstr(f, "key", c->key, ", ");
    jnum(f, "copy_gbs", c->copy_gbs, ", ");
    jnum(f, "fp32_tflops", c->fp32_tflops, ", ");
    jnum(f, "fp16_tflops", c->fp16_tflops, ", ");
    jnum(f, "bf16_tflops", c->bf16_tflops, ", ");
    jnum(f, "launch_us", c->launch_us, ", ");
    jnum(f, "graph_node_us", c->graph_node_us, ", ");
    fprintf(f, "\"malloc_free_us\": {\"1MiB\": %.6g, \"64MiB\": %.6g, \"1GiB\": %.6g}, ", fin(c->malloc_us[0]),
            fin(c->malloc_us[1]), fin(c->malloc_us[2]));
    jnum(f, "l2_bytes", c->l2_bytes, ", ");
    jnum(f, "mem_total", c->mem_total, ", ");
    jnum(f, "mem_free", c->mem_free, ", ");
    fprintf(f, "\"sheet\": {\"copy_gbs\": %.6g, \"fp16_tflops\": %.6g, \"fp32_tflops\": %.6g}},\n",
            fin(c->sheet_copy_gbs), fin(c->sheet_fp16_tflops), fin(c->sheet_fp32_tflops));
}

static void write_memory(const ig_diag_report *r, FILE *f)
{
    const ig_diag_memory *m = &r->mem;
    const ingot_memory_accounts *a = &m->a;
    fprintf(f, "  \"memory\": {\"measured\": %s, \"device\": %d, ", m->have ? "true" : "false", (int)a->device);
    fprintf(f,
            "\"weights\": %zu, \"arena\": %zu, \"activations\": %zu, \"activation_lower_bound\": %zu, "
            "\"activation_no_reuse\": %zu, \"workspace\": %zu, \"constants\": %zu, \"io_staging\": %zu, "
            "\"library_live\": %zu, \"unattributed\": %zu, \"graph_objects\": %zu, \"free\": %zu, \"total\": %zu, ",
            a->weights, a->arena, a->activations, a->activation_lower_bound, a->activation_no_reuse, a->workspace,
            a->constants, a->io_staging, a->library_live, a->unattributed, a->graph_objects, a->free_bytes,
            a->total_bytes);
    jnum(f, "cuda_context", m->cuda_context, ", ");
    jnum(f, "library_handles", m->library_handles, ", ");
    jnum(f, "graph_reserved", m->graph_reserved, ", ");
    jnum(f, "other_processes", m->other_processes, ", ");
    jnum(f, "caller_io", m->caller_io, ", ");
    jnum(f, "residual", m->residual, ", ");
    jnum(f, "need_bytes", r->need_bytes, ", ");
    jnum(f, "avail_bytes", r->avail_bytes, ", ");
    fprintf(f, "\"max_batch\": %lld},\n", (long long)r->max_batch);
}

static void write_step(const ig_diag_step *s, int64_t k, FILE *f)
{
    const ingot_step_profile *p = &s->p;
    fprintf(f, "    {\"index\": %lld, ", (long long)k);
    jstr(f, "name", p->name, ", ");
    jstr(f, "op", p->op, ", ");
    jstr(f, "kind", p->kind, ", ");
    jstr(f, "algo", p->algo, ", ");
    fprintf(f, "\"node\": %lld, \"covers\": %d, \"feeds_next\": %s, ", (long long)p->node, (int)p->covers,
            p->feeds_next ? "true" : "false");
    jnum(f, "ms", p->ms, ", ");
    jnum(f, "flops", p->flops, ", ");
    jnum(f, "bytes_read", p->bytes_read, ", ");
    jnum(f, "bytes_written", p->bytes_written, ", ");
    jnum(f, "bytes_workspace", p->bytes_workspace, ", ");
    jstr(f, "dtype", ingot_dtype_name(p->math_dtype), ", ");
    fprintf(f, "\"live_bytes\": %zu, ", p->live_bytes);
    jnum(f, "gbs", s->gbs, ", ");
    jnum(f, "tflops", s->tflops, ", ");
    jnum(f, "intensity", s->intensity, ", ");
    jnum(f, "pct_bw", s->pct_bw, ", ");
    jnum(f, "pct_flops", s->pct_flops, ", ");
    jnum(f, "ideal_us", s->ideal_us, ", ");
    jstr(f, "class", ig__diag_class_name(s->cls), ", ");
    jstr(f, "cure", s->cure, "}");
}

static void write_sweep(const ig_diag_report *r, FILE *f)
{
    fprintf(f, "  \"sweep\": [");
    for (int64_t k = 0; k < r->n_sweep; k++) {
        const ig_diag_sweep_row *w = &r->sweep[k];
        fprintf(f, "%s\n    {\"batch\": %lld, \"workspace\": %lld, \"ok\": %s, ", k ? "," : "", (long long)w->batch,
                (long long)w->workspace, w->ok ? "true" : "false");
        jnum(f, "throughput", w->throughput, ", ");
        jnum(f, "latency_ms", w->latency_ms, ", ");
        jnum(f, "peak_bytes", w->peak_bytes, ", ");
        jnum(f, "batch_bytes", w->batch_bytes, ", ");
        jstr(f, "class", w->ok ? ig__diag_class_name(w->cls) : "", ", ");
        jnum(f, "class_share", w->cls_share, ", ");
        jstr(f, "bottleneck", w->verdict, ", ");
        jstr(f, "note", w->note, ", ");
        fprintf(f, "\"algos_changed\": %d, ", (int)w->algos_changed);
        jstr(f, "algo_changes", w->changes, "}");
    }
    fprintf(f, "%s]\n", r->n_sweep ? "\n  " : "");
}

bool ig__diag_write_json(const ig_diag_report *r, FILE *f)
{
    fprintf(f, "{\n  ");
    jstr(f, "model", r->model, ",\n  ");
    jstr(f, "backend", r->ceil.backend, ",\n  ");
    jstr(f, "precision", r->precision, ",\n  ");
    fprintf(f, "\"batch\": %lld,\n", (long long)r->batch);
    write_ceilings(&r->ceil, f);
    fprintf(f, "  \"run\": {");
    jnum(f, "run_ms", r->run_ms, ", ");
    jnum(f, "run_stream_ms", r->run_stream_ms, ", ");
    fprintf(f, "\"graphs\": %s, ", r->graphs ? "true" : "false");
    jnum(f, "steps_ms", r->steps_ms, ", ");
    jnum(f, "probe_ms", r->probe_ms, ", ");
    jnum(f, "idle_share", r->idle_share, ", ");
    jnum(f, "graph_gain", r->graph_gain, ", ");
    jnum(f, "launch_share", r->launch_share, "},\n");
    fprintf(f, "  \"classes\": {");
    for (int c = 0; c < IG_DIAG_N_CLASSES; c++)
        fprintf(f, "%s\"%s\": {\"ms\": %.9g, \"share\": %.9g, \"steps\": %lld}", c ? ", " : "",
                ig__diag_class_name((ig_diag_class)c), fin(r->class_ms[c]), fin(r->class_share[c]),
                (long long)r->class_n[c]);
    fprintf(f, "},\n  ");
    jstr(f, "bottleneck", r->bottleneck, ",\n  ");
    jstr(f, "verdict", r->verdict, ",\n");
    fprintf(f, "  \"fusable\": {\"steps\": %lld, \"bytes\": %.9g},\n", (long long)r->fusable_steps,
            fin(r->fusable_bytes));
    write_memory(r, f);
    fprintf(f, "  \"steps\": [\n");
    for (int64_t k = 0; k < r->n_steps; k++) {
        write_step(&r->steps[k], k, f);
        fprintf(f, "%s\n", k + 1 < r->n_steps ? "," : "");
    }
    fprintf(f, "  ],\n");
    write_sweep(r, f);
    fprintf(f, "}\n");
    return !ferror(f);
}

/* Chrome's reserved colour names, one per class (the trace viewer's palette). */
static const char *trace_colour(ig_diag_class c)
{
    switch (c) {
    case IG_DIAG_BANDWIDTH: return "thread_state_iowait"; /* orange */
    case IG_DIAG_COMPUTE: return "good";                  /* green */
    case IG_DIAG_LATENCY: return "terrible";              /* red */
    default: return "generic_work";                       /* grey */
    }
}

bool ig__diag_write_trace(const ig_diag_report *r, FILE *f)
{
    fprintf(f, "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"model\": \"");
    ig__diag_json_str(f, r->model);
    fprintf(f, "\", \"verdict\": \"");
    ig__diag_json_str(f, r->verdict);
    fprintf(f, "\"},\n\"traceEvents\": [\n");
    fprintf(f, "{\"ph\": \"M\", \"pid\": 1, \"name\": \"process_name\", \"args\": {\"name\": \"ingot %s\"}},\n",
            r->ceil.backend);
    fprintf(f, "{\"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"name\": \"thread_name\", \"args\": {\"name\": \"steps\"}}");
    /* the steps back to back, as they ran one after another (stream order) */
    double t = 0;
    for (int64_t k = 0; k < r->n_steps; k++) {
        const ig_diag_step *s = &r->steps[k];
        double dur = fin(s->p.ms) * 1e3;
        fprintf(f, ",\n{\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": %.3f, \"dur\": %.3f, \"name\": \"", t, dur);
        ig__diag_json_str(f, s->p.name);
        fprintf(f, "\", \"cat\": \"%s\", \"cname\": \"%s\", \"args\": {\"op\": \"", ig__diag_class_name(s->cls),
                trace_colour(s->cls));
        ig__diag_json_str(f, s->p.op);
        fprintf(f, "\", \"class\": \"%s\", \"GB/s\": %.2f, \"TFLOP/s\": %.4f, \"MB\": %.3f, \"cure\": \"",
                ig__diag_class_name(s->cls), fin(s->gbs), fin(s->tflops), fin(s->bytes) / 1e6);
        ig__diag_json_str(f, s->cure);
        fprintf(f, "\"}}");
        fprintf(f,
                ",\n{\"ph\": \"C\", \"pid\": 1, \"ts\": %.3f, \"name\": \"live activations\", "
                "\"args\": {\"bytes\": %zu}}",
                t, s->p.live_bytes);
        t += dur;
    }
    fprintf(f, ",\n{\"ph\": \"C\", \"pid\": 1, \"ts\": %.3f, \"name\": \"live activations\", \"args\": {\"bytes\": 0}}",
            t);
    fprintf(f, "\n]}\n");
    return !ferror(f);
}
