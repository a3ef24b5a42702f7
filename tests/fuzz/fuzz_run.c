/*
 * fuzz_run.c -- libFuzzer target over the run path of a model: bytes -> ingot_model_load_buffer ->
 * ingot_engine_build (CPU backend, one thread; the optimizer on or off, by a hash of the input) ->
 * ingot_context_create -> ingot_context_run once on small inputs of the engine's default shapes, the
 * outputs read, then destroy. So every CPU kernel a model reaches is fuzzed, with values (float
 * inputs include NaN, infinities and huge magnitudes; integer inputs small, negative or huge) that
 * are the caller's to choose, as run-time inputs are: index and shape inputs, Resize's roi and scales,
 * divisors.
 *
 * Bounded to stay fast: models of at most MAX_NODES nodes, inputs of at most MAX_ELEMS elements, a
 * run skipped when the default shapes need more than MAX_FLOPS; and every single host allocation above
 * MAX_ALLOC fails inside the library (ig__alloc_set_limit), so a crafted huge tensor is an
 * out-of-memory error with a message, never an allocation libFuzzer's -malloc_limit_mb counts as a
 * crash. Each failure must carry a message. Seeds: tests/fuzz/gen_seeds.py (run/ and load/).
 */
#define _XOPEN_SOURCE 700
#include "fuzz_util.h" /* first: it sets the POSIX level */

#include "core/core.h"
#include "ingot.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_NODES  256
#define MAX_INPUTS 16
#define MAX_ELEMS  (1 << 16)
#define MAX_FLOPS  2e8
#define MAX_ALLOC  ((size_t)256 << 20)

static ingot_runtime *rt;
static char base_dir[64];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (ingot_runtime_create(&rt) != INGOT_OK) abort();
    ingot_log_set(NULL, NULL);
    ig__alloc_set_limit(MAX_ALLOC);
    fuzz_make_base_dir(base_dir, sizeof base_dir, "/tmp/ingot_fuzz_run_XXXXXX");
    return 0;
}

/* splitmix64 over a seed taken from the input: the values change with every mutation */
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Mostly small values (valid indices, shapes, divisors), sometimes the edges a caller may pass. */
static double pick(uint64_t *s, int is_float)
{
    uint64_t r = next(s);
    switch (r % 16) {
    case 0: return 0;
    case 1: return -1;
    case 2: return is_float ? NAN : 1e12;
    case 3: return is_float ? INFINITY : -1e12;
    case 4: return is_float ? -1e30 : 7;
    default: return is_float ? (double)(int64_t)(r >> 40 & 0xff) / 64.0 - 2.0 : (double)(r >> 40 & 3);
    }
}

/* v as element i of a tensor of type t (integer values are whole and within int64: no cast is
 * undefined; narrower integers wrap) */
static void store(ingot_dtype t, void *p, size_t i, double v)
{
    int64_t x = isfinite(v) && fabs(v) < 9e18 ? (int64_t)v : 0;
    switch (t) {
    case INGOT_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case INGOT_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case INGOT_DTYPE_INT64: ((int64_t *)p)[i] = x; break;
    case INGOT_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)x; break;
    case INGOT_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)x; break;
    case INGOT_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)x; break;
    case INGOT_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)x; break;
    case INGOT_DTYPE_BOOL: ((uint8_t *)p)[i] = (uint8_t)(x & 1); break;
    case INGOT_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)x; break;
    case INGOT_DTYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)x; break;
    case INGOT_DTYPE_UINT64: ((uint64_t *)p)[i] = (uint64_t)x; break;
    case INGOT_DTYPE_FLOAT16:
    case INGOT_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = (uint16_t)(x & 1 ? 0x3c00 : 0xbc00); break; /* +-1 */
    default: break;
    }
}

static void run_once(ingot_engine *e, uint64_t seed)
{
    int64_t n_in = ingot_engine_input_count(e);
    if (n_in > MAX_INPUTS) return;
    ingot_tensor in[MAX_INPUTS];
    void *bufs[MAX_INPUTS] = {0};
    int n = 0;
    for (int64_t i = 0; i < n_in; i++) {
        ingot_tensor_info ti;
        int32_t rank = 0;
        int64_t dims[INGOT_MAX_RANK];
        if (ingot_engine_input_info(e, i, &ti) != INGOT_OK ||
            ingot_engine_input_default_shape(e, i, &rank, dims) != INGOT_OK || rank < 0)
            goto out;
        int64_t numel = 1;
        for (int32_t k = 0; k < rank; k++)
            if (dims[k] < 0 || __builtin_mul_overflow(numel, dims[k], &numel) || numel > MAX_ELEMS) goto out;
        size_t es = ingot_dtype_size(ti.dtype);
        if (!es) goto out;
        bufs[n] = calloc((size_t)numel + 1, es);
        if (!bufs[n]) goto out;
        int is_float = ti.dtype == INGOT_DTYPE_FLOAT || ti.dtype == INGOT_DTYPE_DOUBLE;
        for (int64_t k = 0; k < numel; k++) store(ti.dtype, bufs[n], (size_t)k, pick(&seed, is_float));
        in[n] = (ingot_tensor){
            .name = ti.name, .dtype = ti.dtype, .rank = rank, .data = bufs[n], .bytes = (size_t)numel * es};
        memcpy(in[n].dims, dims, sizeof(int64_t) * (size_t)rank);
        n++;
    }
    ingot_context *c = NULL;
    if (ingot_context_create(e, NULL, &c) != INGOT_OK) {
        if (!ingot_runtime_errmsg(rt)[0]) abort();
        goto out;
    }
    fuzz_run_and_read(c, in, n);
    ingot_context_destroy(c);
out:
    for (int k = 0; k < n; k++) free(bufs[k]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ingot_model *m = NULL;
    if (ingot_model_load_buffer(rt, data, size, base_dir, NULL, &m) != INGOT_OK) {
        if (!ingot_runtime_errmsg(rt)[0]) abort();
        return 0;
    }
    ingot_model_info info;
    if (ingot_model_node_count(m) > MAX_NODES || ingot_model_get_info(m, &info) != INGOT_OK || info.flops > MAX_FLOPS) {
        ingot_model_destroy(m);
        return 0;
    }
    uint64_t seed = 0xcbf29ce484222325ull; /* FNV-1a of the input */
    for (size_t i = 0; i < size; i++) seed = (seed ^ data[i]) * 0x100000001b3ull;
    ingot_build_options bo = ingot_build_options_default();
    bo.backend = INGOT_BACKEND_CPU;
    bo.n_threads = 1;
    bo.optimize = (int)(seed & 1); /* both: the optimizer's rewrites run too, and must agree */
    ingot_engine *e = NULL;
    if (ingot_engine_build(rt, m, &bo, &e) == INGOT_OK)
        run_once(e, seed);
    else if (!ingot_runtime_errmsg(rt)[0])
        abort();
    ingot_engine_destroy(e);
    ingot_model_destroy(m);
    return 0;
}
