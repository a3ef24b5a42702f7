/*
 * plan_io.c -- a plan written out for people and tools: JSON (the numbers), SVG (a picture of the
 * arena: x = step, y = offset, one rectangle per tensor, hover for its name and range) and a Chrome
 * trace / Perfetto JSON (a memory counter over the steps, a slice per node and per tensor).
 */
#include "plan.h"

#include <inttypes.h>

/* ---- shared helpers ---- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void xml_str(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if (*p < 0x20)
                fputc(' ', f);
            else
                fputc(*p, f);
        }
    }
}

static ingot_status finish(FILE *f, const char *what, ig_err *err)
{
    if (fflush(f) != 0 || ferror(f)) return ig__errf(err, INGOT_ERR_IO, "writing the plan's %s failed", what);
    return INGOT_OK;
}

static const char *producer_label(const ig_graph *g, int32_t v)
{
    int32_t p = g->values[v].producer;
    return p >= 0 ? ig__node_label(&g->nodes[p]) : "";
}

static const char *producer_op(const ig_graph *g, int32_t v)
{
    int32_t p = g->values[v].producer;
    return p >= 0 ? g->nodes[p].op_type : "";
}

/* planned values sorted by (first step, value id): the order tables and lanes use */
static int32_t *sorted_values(const ig_plan *p, int32_t *count)
{
    int32_t n = 0;
    int32_t *ids = ig__malloc(sizeof(int32_t) * ((size_t)p->n_values + 1));
    if (!ids) return NULL;
    /* counting sort by first step keeps it O(values + steps) */
    int32_t *cnt = ig__calloc((size_t)p->n_steps + 2, sizeof(int32_t));
    if (!cnt) {
        ig__free(ids);
        return NULL;
    }
    for (int32_t v = 0; v < p->n_values; v++)
        if (p->values[v].kind != IG_PLAN_NONE) cnt[p->values[v].first + 1]++, n++;
    for (int32_t s = 0; s < p->n_steps; s++) cnt[s + 1] += cnt[s];
    for (int32_t v = 0; v < p->n_values; v++)
        if (p->values[v].kind != IG_PLAN_NONE) ids[cnt[p->values[v].first]++] = v;
    ig__free(cnt);
    *count = n;
    return ids;
}

/* ---- JSON ---- */

ingot_status ig__plan_write_json(const ig_graph *g, const ig_plan *p, FILE *f, ig_err *err)
{
    int32_t nt = 0;
    int32_t *ids = sorted_values(p, &nt);
    if (!ids) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory writing the plan");
    double ratio = p->lower_bound ? (double)p->arena_bytes / (double)p->lower_bound : 1.0;
    fprintf(f, "{\n  \"graph\": ");
    json_str(f, g->name);
    fprintf(f,
            ",\n  \"arena_bytes\": %" PRIu64 ",\n  \"lower_bound\": %" PRIu64 ",\n  \"ratio\": %.6f,\n"
            "  \"no_reuse_bytes\": %" PRIu64 ",\n  \"alignment\": %" PRIu64 ",\n  \"strategy\": ",
            p->arena_bytes, p->lower_bound, ratio, p->no_reuse_bytes, p->align);
    json_str(f, p->strategy);
    fprintf(f, ",\n  \"order\": \"%s\",\n", p->reordered ? "memory-aware" : "original");
    fprintf(f, "  \"orders\": {\"original\": {\"arena_bytes\": %" PRIu64 ", \"lower_bound\": %" PRIu64 "}",
            p->arena_original, p->lb_original);
    if (p->lb_reordered)
        fprintf(f, ", \"memory_aware\": {\"arena_bytes\": %" PRIu64 ", \"lower_bound\": %" PRIu64 ", \"packed\": %s}",
                p->arena_reordered, p->lb_reordered, p->arena_reordered ? "true" : "false");
    fprintf(f, "},\n  \"steps\": %d,\n  \"peak_step\": %d,\n  \"workspace_max\": %" PRIu64 ",\n", (int)p->n_steps,
            (int)p->peak_step, p->workspace_max);
    fprintf(f, "  \"live_bytes\": [");
    for (int32_t s = 0; s < p->n_steps; s++) fprintf(f, "%s%" PRIu64, s ? ", " : "", p->live[s]);
    fprintf(f, "],\n  \"nodes\": [\n");
    for (int32_t s = 0; s < p->n_steps; s++) {
        const ig_node *n = &g->nodes[p->order[s]];
        fprintf(f, "    {\"step\": %d, \"node\": ", (int)s);
        json_str(f, ig__node_label(n));
        fprintf(f, ", \"op\": ");
        json_str(f, n->op_type);
        fprintf(f, ", \"scratch_offset\": %" PRIu64 ", \"scratch_bytes\": %" PRIu64 "}%s\n",
                p->scratch_offset[p->order[s]], p->scratch_bytes[p->order[s]], s + 1 < p->n_steps ? "," : "");
    }
    fprintf(f, "  ],\n  \"tensors\": [\n");
    for (int32_t k = 0; k < nt; k++) {
        int32_t v = ids[k];
        const ig_plan_value *pv = &p->values[v];
        fprintf(f, "    {\"name\": ");
        json_str(f, g->values[v].name);
        fprintf(f, ", \"producer\": ");
        json_str(f, producer_label(g, v));
        fprintf(f, ", \"op\": ");
        json_str(f, producer_op(g, v));
        fprintf(f, ", \"bytes\": %" PRIu64 ", \"offset\": %" PRIu64 ", \"first\": %d, \"last\": %d, \"kind\": \"%s\"",
                pv->bytes, pv->offset, (int)pv->first, (int)pv->last, ig__plan_kind_name((ig_plan_kind)pv->kind));
        if (pv->root != v) {
            fprintf(f, ", \"shares\": ");
            json_str(f, g->values[pv->root].name);
        }
        fprintf(f, "}%s\n", k + 1 < nt ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    ig__free(ids);
    return finish(f, "JSON", err);
}

/* ---- SVG ---- */

static void fmt_bytes(char *buf, size_t n, uint64_t b)
{
    if (b >= (1ull << 30))
        snprintf(buf, n, "%.2f GiB", (double)b / (double)(1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(buf, n, "%.2f MiB", (double)b / (double)(1ull << 20));
    else if (b >= (1ull << 10))
        snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(buf, n, "%" PRIu64 " B", b);
}

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

ingot_status ig__plan_write_svg(const ig_graph *g, const ig_plan *p, FILE *f, ig_err *err)
{
    const double W = 1280, H = 760, x0 = 96, x1 = W - 24, y0 = 84, y1 = H - 70;
    int32_t ns = p->n_steps > 0 ? p->n_steps : 1;
    double ymax = (double)(p->arena_bytes ? p->arena_bytes : 1);
    double sx = (x1 - x0) / ns, sy = (y1 - y0) / ymax;
    char b1[32], b2[32], b3[32];
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n"
            "<style>rect.t:hover{stroke:#000;stroke-width:1.5}</style>\n"
            "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>\n",
            W, H, W, H, W, H);
    fmt_bytes(b1, sizeof b1, p->arena_bytes);
    fmt_bytes(b2, sizeof b2, p->lower_bound);
    fmt_bytes(b3, sizeof b3, p->no_reuse_bytes);
    fprintf(f, "<text x=\"%.0f\" y=\"24\" font-size=\"16\" font-weight=\"bold\">ingot memory plan: ", x0);
    xml_str(f, g->name && g->name[0] ? g->name : "graph");
    fprintf(f, "</text>\n<text x=\"%.0f\" y=\"46\">arena %s, lower bound %s (ratio %.3f), no reuse %s; strategy ", x0,
            b1, b2, p->lower_bound ? (double)p->arena_bytes / (double)p->lower_bound : 1.0, b3);
    xml_str(f, p->strategy);
    fprintf(f, ", %s order; %d steps, alignment %" PRIu64 " B. Hover a rectangle for its tensor.</text>\n",
            p->reordered ? "memory-aware" : "original", (int)p->n_steps, p->align);
    /* axes */
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f7f7f7\" stroke=\"#999\"/>\n", x0,
            y0, x1 - x0, y1 - y0);
    for (int k = 0; k <= 5; k++) {
        double by = ymax * k / 5, y = y1 - by * sy;
        fmt_bytes(b1, sizeof b1, (uint64_t)by);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x0, y, x1, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", x0 - 6, y + 4, b1);
    }
    int32_t tick = 1;
    for (int32_t k = 0; ns / tick > 12 && tick < INT32_MAX / 10; k++)
        tick = (k % 3 == 1 ? 5 : 2) * (tick / (k % 3 == 1 ? 2 : 1));
    for (int32_t s = 0; s < ns; s += tick)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n", x0 + (s + 0.5) * sx, y1 + 16,
                (int)s);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step (node in execution order)</text>\n",
            (x0 + x1) / 2, y1 + 34);
    fprintf(f, "<text transform=\"translate(18,%.1f) rotate(-90)\" text-anchor=\"middle\">offset in the arena</text>\n",
            (y0 + y1) / 2);
    /* tensors: one rectangle each over its own steps at its buffer's offset */
    for (int32_t v = 0; v < p->n_values; v++) {
        const ig_plan_value *pv = &p->values[v];
        if (pv->kind == IG_PLAN_NONE || !pv->bytes) continue;
        double x = x0 + pv->first * sx, w = (pv->last - pv->first + 1) * sx;
        double h = (double)pv->bytes * sy, y = y1 - (double)(pv->offset + pv->bytes) * sy;
        if (h < 0.6) h = 0.6;
        /* one hue per buffer (a value and everything sharing its bytes look alike) */
        uint32_t hh = hash_str(g->values[pv->root].name), hu = hh % 360, li = 58 + (hh >> 16) % 16;
        const char *extra = pv->kind == IG_PLAN_ALIAS     ? " fill-opacity=\"0.45\" stroke-dasharray=\"3,2\""
                            : pv->kind == IG_PLAN_INPLACE ? " fill-opacity=\"0.7\""
                                                          : "";
        fprintf(f,
                "<rect class=\"t\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"hsl(%u,65%%,%u%%)\" "
                "stroke=\"hsl(%u,50%%,35%%)\" stroke-width=\"0.5\"%s><title>",
                x, y, w, h, hu, li, hu, extra);
        fmt_bytes(b1, sizeof b1, pv->bytes);
        xml_str(f, g->values[v].name);
        fprintf(f, "\n%s, %" PRIu64 " bytes at offset %" PRIu64 "\nsteps %d..%d, %s", b1, pv->bytes, pv->offset,
                (int)pv->first, (int)pv->last, ig__plan_kind_name((ig_plan_kind)pv->kind));
        if (pv->root != v) {
            fprintf(f, " of ");
            xml_str(f, g->values[pv->root].name);
        }
        fprintf(f, "\nproduced by ");
        xml_str(f, producer_label(g, v));
        fprintf(f, " (");
        xml_str(f, producer_op(g, v));
        fprintf(f, ")</title></rect>\n");
    }
    for (int32_t b = 0; b < p->n_buffers; b++) {
        const ig_plan_buffer *pb = &p->buffers[b];
        if (pb->node < 0 || !pb->bytes) continue;
        double h = (double)pb->bytes * sy, y = y1 - (double)(pb->offset + pb->bytes) * sy;
        if (h < 0.6) h = 0.6;
        fmt_bytes(b1, sizeof b1, pb->bytes);
        fprintf(
            f,
            "<rect class=\"t\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#888\" fill-opacity=\"0.6\" "
            "stroke=\"#444\" stroke-width=\"0.5\"><title>scratch of ",
            x0 + pb->first * sx, y, sx, h);
        xml_str(f, ig__node_label(&g->nodes[pb->node]));
        fprintf(f, " (");
        xml_str(f, g->nodes[pb->node].op_type);
        fprintf(f, ")\n%s, %" PRIu64 " bytes at offset %" PRIu64 "\nstep %d</title></rect>\n", b1, pb->bytes,
                pb->offset, (int)pb->first);
    }
    /* live bytes per step (the lower bound is its maximum) */
    if (p->n_steps > 0) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"#000\" stroke-width=\"1.2\" points=\"");
        for (int32_t s = 0; s < p->n_steps; s++) {
            double y = y1 - (double)p->live[s] * sy;
            fprintf(f, "%.2f,%.2f %.2f,%.2f ", x0 + s * sx, y, x0 + (s + 1) * sx, y);
        }
        fprintf(f, "\"><title>bytes live at each step</title></polyline>\n");
    }
    double ylb = y1 - (double)p->lower_bound * sy;
    fmt_bytes(b1, sizeof b1, p->lower_bound);
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"#06c\" stroke-dasharray=\"6,3\"/>\n"
            "<text x=\"%.1f\" y=\"%.2f\" text-anchor=\"end\" fill=\"#06c\">lower bound %s</text>\n",
            x0, ylb, x1, ylb, x1 - 4, ylb - 4, b1);
    if (p->peak_step >= 0 && p->peak_step < p->n_steps) {
        double xp = x0 + (p->peak_step + 0.5) * sx;
        fprintf(f,
                "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#d00\" stroke-width=\"1.5\" "
                "stroke-dasharray=\"5,3\"/>\n<text x=\"%.2f\" y=\"%.1f\" fill=\"#d00\" text-anchor=\"middle\">peak: "
                "step %d (",
                xp, y0, xp, y1, xp, y0 - 8, (int)p->peak_step);
        xml_str(f, ig__node_label(&g->nodes[p->order[p->peak_step]]));
        fprintf(f, "), %s live</text>\n", b1);
    }
    fprintf(
        f,
        "<g transform=\"translate(%.0f,%.0f)\"><rect width=\"12\" height=\"10\" fill=\"hsl(200,65%%,60%%)\"/>"
        "<text x=\"16\" y=\"9\">own buffer</text><rect x=\"100\" width=\"12\" height=\"10\" "
        "fill=\"hsl(200,65%%,60%%)\" "
        "fill-opacity=\"0.7\"/><text x=\"116\" y=\"9\">in-place</text><rect x=\"190\" width=\"12\" height=\"10\" "
        "fill=\"hsl(200,65%%,60%%)\" fill-opacity=\"0.45\" stroke=\"#333\" stroke-dasharray=\"3,2\"/><text x=\"206\" "
        "y=\"9\">alias (no copy)</text><rect x=\"310\" width=\"12\" height=\"10\" fill=\"#888\"/><text x=\"326\" "
        "y=\"9\">scratch</text><line x1=\"400\" y1=\"5\" x2=\"420\" y2=\"5\" stroke=\"#000\"/><text x=\"424\" "
        "y=\"9\">live bytes</text></g>\n",
        x0, H - 22);
    fprintf(f, "</svg>\n");
    return finish(f, "SVG", err);
}

/* ---- Chrome trace / Perfetto ---- */

ingot_status ig__plan_write_trace(const ig_graph *g, const ig_plan *p, FILE *f, ig_err *err)
{
    const int64_t us = 1000; /* one step = 1 ms on the timeline */
    int32_t nt = 0;
    int32_t *ids = sorted_values(p, &nt);
    int32_t *lane_end = ig__malloc(sizeof(int32_t) * ((size_t)nt + 1));
    if (!ids || !lane_end) {
        ig__free(ids);
        ig__free(lane_end);
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory writing the plan trace");
    }
    fprintf(f,
            "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"arena_bytes\": %" PRIu64 ", \"lower_bound\": %" PRIu64
            ", \"strategy\": ",
            p->arena_bytes, p->lower_bound);
    json_str(f, p->strategy);
    fprintf(f, "},\n\"traceEvents\": [\n");
    fprintf(f, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"args\": {\"name\": ");
    json_str(f, g->name && g->name[0] ? g->name : "ingot plan");
    fprintf(f,
            "}},\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": \"nodes\"}}");
    for (int32_t s = 0; s < p->n_steps; s++) {
        const ig_node *n = &g->nodes[p->order[s]];
        fprintf(f, ",\n{\"ph\": \"X\", \"cat\": \"node\", \"name\": ");
        json_str(f, ig__node_label(n));
        fprintf(
            f, ", \"pid\": 1, \"tid\": 1, \"ts\": %" PRId64 ", \"dur\": %" PRId64 ", \"args\": {\"step\": %d, \"op\": ",
            s * us, us, (int)s);
        json_str(f, n->op_type);
        fprintf(f, ", \"scratch_bytes\": %" PRIu64 ", \"live_bytes\": %" PRIu64 "}}", p->scratch_bytes[p->order[s]],
                p->live[s]);
        fprintf(f,
                ",\n{\"ph\": \"C\", \"name\": \"memory\", \"pid\": 1, \"ts\": %" PRId64
                ", \"args\": {\"live_bytes\": %" PRIu64 ", \"free_in_arena\": %" PRIu64 "}}",
                s * us, p->live[s], p->arena_bytes > p->live[s] ? p->arena_bytes - p->live[s] : 0);
    }
    fprintf(f,
            ",\n{\"ph\": \"C\", \"name\": \"memory\", \"pid\": 1, \"ts\": %" PRId64
            ", \"args\": {\"live_bytes\": 0, \"free_in_arena\": %" PRIu64 "}}",
            (int64_t)p->n_steps * us, p->arena_bytes);
    /* tensors on lanes, first fit by first step, so slices in a lane never overlap */
    int32_t n_lanes = 0;
    for (int32_t k = 0; k < nt; k++) {
        int32_t v = ids[k];
        const ig_plan_value *pv = &p->values[v];
        int32_t lane = 0;
        while (lane < n_lanes && lane_end[lane] >= pv->first) lane++;
        if (lane == n_lanes) {
            n_lanes++;
            fprintf(f,
                    ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": %d, \"args\": {\"name\": "
                    "\"tensors %d\"}}",
                    (int)(100 + lane), (int)lane);
        }
        lane_end[lane] = pv->last;
        fprintf(f, ",\n{\"ph\": \"X\", \"cat\": \"tensor\", \"name\": ");
        json_str(f, g->values[v].name);
        fprintf(f,
                ", \"pid\": 1, \"tid\": %d, \"ts\": %" PRId64 ", \"dur\": %" PRId64 ", \"args\": {\"bytes\": %" PRIu64
                ", \"offset\": %" PRIu64 ", \"kind\": \"%s\", \"producer\": ",
                (int)(100 + lane), (int64_t)pv->first * us, (int64_t)(pv->last - pv->first + 1) * us, pv->bytes,
                pv->offset, ig__plan_kind_name((ig_plan_kind)pv->kind));
        json_str(f, producer_label(g, v));
        fprintf(f, "}}");
    }
    fprintf(f, "\n]}\n");
    ig__free(ids);
    ig__free(lane_end);
    return finish(f, "trace", err);
}
