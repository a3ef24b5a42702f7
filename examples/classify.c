/*
 * classify.c -- ingot's C API from ONNX model to outputs, through an engine file and back.
 *
 *     classify MODEL.onnx ENGINE_FILE [--cuda]
 *
 * Loads the model, binds every symbolic dim of its inputs to 1, builds an engine (the CPU backend, or
 * CUDA with --cuda), runs it once on deterministic inputs, saves it to ENGINE_FILE, loads it back
 * (from the file, and from ingot_engine_serialize's bytes) and runs each loaded engine on the same
 * inputs. Prints every output's name, dtype, shape and checksum. Exit status: 0 when the loaded
 * engines' outputs are bit-identical to the built one's, 1 when they differ, 2 on any error.
 *
 * Build it against an installed ingot with CMake (examples/CMakeLists.txt: find_package(ingot)) or
 * with pkg-config:  cc classify.c $(pkg-config --cflags --libs ingot) -o classify
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ingot.h>

#define N_ENGINES 3 /* built, loaded from the file, loaded from memory */

static const char *const engine_names[N_ENGINES] = {"built", "loaded from file", "loaded from memory"};

/* IEEE half and bfloat16 bits of the small exact values the pattern uses (|x| <= 1, a multiple of
 * 1/8): no rounding is needed. */
static uint16_t half_bits(float x)
{
    uint32_t f;
    memcpy(&f, &x, sizeof f);
    uint16_t sign = (uint16_t)((f >> 16) & 0x8000u);
    if ((f & 0x7fffffffu) == 0) return sign;
    int exp = (int)((f >> 23) & 0xff) - 127 + 15;
    return (uint16_t)(sign | (uint16_t)(exp << 10) | (uint16_t)((f >> 13) & 0x3ffu));
}

static uint16_t bfloat16_bits(float x)
{
    uint32_t f;
    memcpy(&f, &x, sizeof f);
    return (uint16_t)(f >> 16);
}

/* Fill n elements of type t: floats cycle through -1, -7/8, ..., 7/8; integers through 0..6 (valid
 * indices for most embedding tables); booleans alternate. 0 for a dtype this example cannot fill. */
static int fill(void *data, ingot_dtype t, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float f = (float)(i % 16 - 8) / 8.0f;
        int64_t k = i % 7;
        switch (t) {
        case INGOT_DTYPE_FLOAT: ((float *)data)[i] = f; break;
        case INGOT_DTYPE_DOUBLE: ((double *)data)[i] = f; break;
        case INGOT_DTYPE_FLOAT16: ((uint16_t *)data)[i] = half_bits(f); break;
        case INGOT_DTYPE_BFLOAT16: ((uint16_t *)data)[i] = bfloat16_bits(f); break;
        case INGOT_DTYPE_INT8: ((int8_t *)data)[i] = (int8_t)k; break;
        case INGOT_DTYPE_UINT8: ((uint8_t *)data)[i] = (uint8_t)k; break;
        case INGOT_DTYPE_INT16: ((int16_t *)data)[i] = (int16_t)k; break;
        case INGOT_DTYPE_UINT16: ((uint16_t *)data)[i] = (uint16_t)k; break;
        case INGOT_DTYPE_INT32: ((int32_t *)data)[i] = (int32_t)k; break;
        case INGOT_DTYPE_UINT32: ((uint32_t *)data)[i] = (uint32_t)k; break;
        case INGOT_DTYPE_INT64: ((int64_t *)data)[i] = k; break;
        case INGOT_DTYPE_UINT64: ((uint64_t *)data)[i] = (uint64_t)k; break;
        case INGOT_DTYPE_BOOL: ((uint8_t *)data)[i] = (uint8_t)(i & 1); break;
        default: return 0;
        }
    }
    return 1;
}

/* FNV-1a over the bytes: equal checksums for equal outputs, whatever the dtype. */
static uint64_t checksum(const void *data, size_t n_bytes)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n_bytes; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static void print_output(const ingot_tensor *t)
{
    printf("  %s %s [", t->name, ingot_dtype_name(t->dtype));
    for (int32_t k = 0; k < t->rank; k++) printf("%s%lld", k ? ", " : "", (long long)t->dims[k]);
    printf("] %zu bytes, fnv1a %016llx\n", t->bytes, (unsigned long long)checksum(t->data, t->bytes));
}

/* Output i of a run of b is the same tensor, bit for bit, as output i of a run of a. */
static int same_output(const ingot_tensor *a, const ingot_tensor *b)
{
    return a->dtype == b->dtype && a->rank == b->rank && a->bytes == b->bytes &&
           memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) == 0 &&
           (a->bytes == 0 || memcmp(a->data, b->data, a->bytes) == 0);
}

/* Bind each input's symbolic dims to 1 (a dim value * symbol becomes value), allocate and fill its
 * tensor: *out gets [*n_out] tensors, names and data malloc'ed (freed by the caller, also after a
 * failure). Returns 0, or -1
 * after printing why. */
static int make_inputs(ingot_runtime *rt, ingot_model *m, ingot_tensor **out, int64_t *n_out)
{
    int64_t n = ingot_model_input_count(m);
    ingot_tensor *in = calloc(n > 0 ? (size_t)n : 1, sizeof *in);
    if (!in) return -1;
    *out = in;
    *n_out = n;
    for (int64_t i = 0; i < n; i++) {
        ingot_tensor_info ti;
        if (ingot_model_input_info(m, i, &ti) != INGOT_OK) return -1;
        if (ti.rank < 0 || ingot_dtype_size(ti.dtype) == 0) {
            fprintf(stderr, "classify: input '%s' has an unknown rank or a dtype (%s) it cannot fill\n", ti.name,
                    ingot_dtype_name(ti.dtype));
            return -1;
        }
        /* the name is the model's, and the model goes after the build: keep a copy */
        size_t n_name = strlen(ti.name) + 1;
        char *name = malloc(n_name);
        if (!name) return -1;
        in[i].name = memcpy(name, ti.name, n_name);
        in[i].dtype = ti.dtype;
        in[i].rank = ti.rank;
        int64_t n_elems = 1;
        for (int32_t k = 0; k < ti.rank; k++) {
            in[i].dims[k] = ti.dims[k].value;
            n_elems *= ti.dims[k].value;
        }
        if (ingot_model_set_input_shape(m, ti.name, ti.rank, in[i].dims) != INGOT_OK) {
            fprintf(stderr, "classify: %s\n", ingot_runtime_errmsg(rt));
            return -1;
        }
        in[i].bytes = (size_t)n_elems * ingot_dtype_size(ti.dtype);
        in[i].data = malloc(in[i].bytes ? in[i].bytes : 1);
        if (!in[i].data || !fill(in[i].data, ti.dtype, n_elems)) {
            fprintf(stderr, "classify: cannot fill input '%s' (%s)\n", ti.name, ingot_dtype_name(ti.dtype));
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *model_path = NULL, *engine_path = NULL;
    ingot_backend backend = INGOT_BACKEND_CPU;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cuda") == 0)
            backend = INGOT_BACKEND_CUDA;
        else if (!model_path)
            model_path = argv[i];
        else if (!engine_path)
            engine_path = argv[i];
        else
            model_path = NULL, i = argc; /* too many arguments */
    }
    if (!model_path || !engine_path) {
        fprintf(stderr, "usage: classify MODEL.onnx ENGINE_FILE [--cuda]\n");
        return 2;
    }

    int rc = 2;
    ingot_runtime *rt = NULL;
    ingot_model *m = NULL;
    ingot_engine *e[N_ENGINES] = {NULL};
    ingot_context *c[N_ENGINES] = {NULL};
    ingot_tensor *in = NULL;
    int64_t n_in = 0;
    void *bytes = NULL;
    size_t n_bytes = 0;

    if (ingot_runtime_create(&rt) != INGOT_OK) {
        fprintf(stderr, "classify: cannot create a runtime\n");
        return 2;
    }
    ingot_load_options lo = ingot_load_options_default();
    if (ingot_model_load(rt, model_path, &lo, &m) != INGOT_OK) goto out_rt_error;
    if (make_inputs(rt, m, &in, &n_in) != 0) goto out;

    ingot_build_options bo = ingot_build_options_default();
    bo.backend = backend;
    if (ingot_engine_build(rt, m, &bo, &e[0]) != INGOT_OK) goto out_rt_error;
    ingot_model_destroy(m); /* the engine keeps what it needs */
    m = NULL;

    /* run the built engine first: a CUDA engine saved after a run keeps its tuned algorithms */
    ingot_engine_load_options elo = ingot_engine_load_options_default();
    for (int k = 0; k < N_ENGINES; k++) {
        if (k == 1) {
            if (ingot_engine_save(e[0], engine_path) != INGOT_OK) goto out_rt_error;
            if (ingot_engine_load(rt, engine_path, &elo, &e[1]) != INGOT_OK) goto out_rt_error;
        } else if (k == 2) {
            if (ingot_engine_serialize(e[0], &bytes, &n_bytes) != INGOT_OK) goto out_rt_error;
            if (ingot_engine_load_buffer(rt, bytes, n_bytes, &elo, &e[2]) != INGOT_OK) goto out_rt_error;
        }
        if (ingot_context_create(e[k], NULL, &c[k]) != INGOT_OK) goto out_rt_error;
        if (ingot_context_run(c[k], in, n_in) != INGOT_OK) {
            fprintf(stderr, "classify: %s engine: %s\n", engine_names[k], ingot_context_errmsg(c[k]));
            goto out;
        }
    }

    rc = 0;
    int64_t n_out = ingot_engine_output_count(e[0]);
    printf("%s: %lld inputs, %lld outputs, %s backend, engine file %s (%zu bytes)\n", model_path, (long long)n_in,
           (long long)n_out, ingot_engine_backend(e[0]) == INGOT_BACKEND_CUDA ? "CUDA" : "CPU", engine_path, n_bytes);
    for (int64_t i = 0; i < n_out; i++) {
        ingot_tensor t[N_ENGINES];
        for (int k = 0; k < N_ENGINES; k++) {
            if (ingot_context_get_output(c[k], i, &t[k]) != INGOT_OK) {
                fprintf(stderr, "classify: %s\n", ingot_context_errmsg(c[k]));
                rc = 2;
                goto out;
            }
        }
        print_output(&t[0]);
        for (int k = 1; k < N_ENGINES; k++) {
            if (!same_output(&t[0], &t[k])) {
                fprintf(stderr, "classify: output '%s' of the engine %s differs from the built engine's\n", t[0].name,
                        engine_names[k]);
                rc = 1;
            }
        }
    }
    printf("%s\n", rc == 0 ? "outputs of the built and the loaded engines are bit-identical" : "outputs DIFFER");
    goto out;

out_rt_error:
    fprintf(stderr, "classify: %s: %s\n", ingot_status_name(ingot_runtime_errcode(rt)), ingot_runtime_errmsg(rt));
out:
    for (int k = N_ENGINES - 1; k >= 0; k--) {
        ingot_context_destroy(c[k]); /* contexts before their engine */
        ingot_engine_destroy(e[k]);
    }
    ingot_free(bytes);
    for (int64_t i = 0; i < n_in; i++) {
        free((char *)in[i].name);
        free(in[i].data);
    }
    free(in);
    ingot_model_destroy(m);
    ingot_runtime_destroy(rt);
    return rc;
}
