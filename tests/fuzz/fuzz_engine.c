/*
 * fuzz_engine.c -- libFuzzer target over the engine-file loader and the run path: bytes ->
 * ingot_engine_load_buffer (container, fingerprint, options, the embedded graph through the importer,
 * provenance, plans re-planned and compared), then, when it loads, a context run on small inputs of
 * the engine's default shapes, the outputs read, and destroy.
 *
 * Most mutations of a real engine file break a checksum and stop at the container, which is worth
 * fuzzing too; so each input is loaded twice, as given and with its checksums recomputed (header,
 * table and every section, when the header and table are readable), which lets the mutations reach
 * the section parsers behind them. Seeds: engine files `ingot build` makes from the fuzz seed models
 * (tests/fuzz/run.sh).
 */
#include "fuzz_util.h" /* first: it sets the POSIX level */

#include "api/api_internal.h"
#include "engine/efile.h"
#include "ingot.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ingot_runtime *rt;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (ingot_runtime_create(&rt) != INGOT_OK) abort();
    ingot_log_set(NULL, NULL);
    return 0;
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void wr64(uint8_t *p, uint64_t v)
{
    wr32(p, (uint32_t)v);
    wr32(p + 4, (uint32_t)(v >> 32));
}

/* Recompute what a mutation broke without meaning to: the file size, each section's CRC (sections
 * inside the file), the table's and the header's. */
static void fix_checksums(uint8_t *f, size_t n)
{
    if (n < IG_EFILE_HEADER || memcmp(f, IG_EFILE_MAGIC, 8) != 0) return;
    wr64(f + 32, n);
    uint32_t ns = rd32(f + 16);
    uint64_t table = rd64(f + 24);
    if (ns > IG_EFILE_MAX_SECTION || table > n || (uint64_t)ns * IG_EFILE_ENTRY > n - table) return;
    for (uint32_t i = 0; i < ns; i++) {
        uint8_t *e = f + table + (size_t)i * IG_EFILE_ENTRY;
        uint64_t off = rd64(e + 8), sz = rd64(e + 16);
        if (off <= n && sz <= n - off) wr32(e + 24, ig__crc32c(0, f + off, (size_t)sz));
    }
    wr32(f + 40, ig__crc32c(0, f + table, (size_t)ns * IG_EFILE_ENTRY));
    wr32(f + 60, ig__crc32c(0, f, 60));
}

/* One run on inputs of the engine's default shapes (zeros; shape inputs too, which keeps shapes
 * small), bounded so that a crafted huge shape is skipped rather than allocated. */
static void run_once(ingot_engine *e)
{
    const ig_graph *g = &e->graph;
    if (g->n_inputs > 16) return;
    ingot_tensor in[16];
    void *bufs[16] = {0};
    int n = 0;
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const ig_value *v = &g->values[g->inputs[i]];
        const ig_shape *s = &e->default_shapes[i];
        if (s->rank < 0) return;
        int64_t numel = 1;
        for (int32_t k = 0; k < s->rank; k++)
            if (!ig__mul_i64(numel, s->d[k].n, &numel) || numel > (1 << 20)) goto out;
        size_t bytes = (size_t)numel * ingot_dtype_size(v->dtype);
        if (!bytes && ingot_dtype_size(v->dtype) == 0) goto out;
        bufs[n] = calloc(1, bytes + 8);
        in[n] = (ingot_tensor){.name = v->name, .dtype = v->dtype, .rank = s->rank, .data = bufs[n], .bytes = bytes};
        for (int32_t k = 0; k < s->rank; k++) in[n].dims[k] = s->d[k].n;
        n++;
    }
    ingot_context *c = NULL;
    if (ingot_context_create(e, NULL, &c) == INGOT_OK) { fuzz_run_and_read(c, in, n); }
    ingot_context_destroy(c);
out:
    for (int k = 0; k < n; k++) free(bufs[k]);
}

static void load_and_run(const uint8_t *data, size_t size)
{
    ingot_engine *e = NULL;
    if (ingot_engine_load_buffer(rt, data, size, NULL, &e) != INGOT_OK) {
        if (!ingot_runtime_errmsg(rt)[0]) abort();
        return;
    }
    char *json = NULL;
    if (ingot_engine_describe_json(e, &json) == INGOT_OK) ingot_free(json);
    run_once(e);
    ingot_engine_destroy(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load_and_run(data, size);
    uint8_t *copy = malloc(size + 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    fix_checksums(copy, size);
    if (size && memcmp(copy, data, size) != 0) load_and_run(copy, size);
    free(copy);
    return 0;
}
