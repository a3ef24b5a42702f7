/*
 * fuzz_reader.c -- libFuzzer target for the ONNX reader alone: bytes -> ig__onnx_load_buffer (wire
 * format, import, toposort, verify), then every decoded piece of the graph is read so wrong sizes or
 * dangling pointers show up under AddressSanitizer. fuzz_load covers the same bytes through shape
 * inference too; this one keeps the search on the reader when inference bugs would stop fuzz_load.
 */
#define _XOPEN_SOURCE 700
#include "fuzz_util.h" /* first: it sets the POSIX level */

#include "onnx/onnx.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char base_dir[64];
static volatile uint8_t sink;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_make_base_dir(base_dir, sizeof base_dir, "/tmp/ingot_fuzz_reader_XXXXXX");
    return 0;
}

static void touch(const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) sink ^= ((const uint8_t *)p)[i];
}

static void check_const(const ig_const *c)
{
    if (c->rank < 0 || c->rank > IG_MAX_RANK) abort();
    size_t n = ingot_dtype_size(c->dtype);
    for (int32_t i = 0; i < c->rank; i++) n *= (size_t)c->dims[i];
    if (c->data && n != c->n_bytes) abort();
    if (c->data) touch(c->data, c->n_bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ig_graph g;
    ig_err err = {0};
    ig_onnx_file *file = NULL;
    ig__graph_init(&g, &err);
    ig_onnx_options opt = {true, true};
    if (ig__onnx_load_buffer(data, size, base_dir, &opt, &g, &file, &err) == INGOT_OK) {
        for (int32_t i = 0; i < g.n_values; i++) {
            const ig_value *v = &g.values[i];
            touch(v->name, strlen(v->name));
            if (v->flags & IG_VAL_CONST) check_const(&v->c);
            for (int32_t k = 0; k < v->decl_shape.rank; k++)
                if (v->decl_shape.d[k].sym >= g.n_syms) abort();
        }
        for (int32_t i = 0; i < g.n_nodes; i++) {
            const ig_node *n = &g.nodes[i];
            for (int32_t k = 0; k < n->n_inputs; k++)
                if (n->inputs[k] < -1 || n->inputs[k] >= g.n_values) abort();
            for (int32_t k = 0; k < n->n_attrs; k++) {
                const ig_attr *a = &n->attrs[k];
                if (a->ints) touch(a->ints, (size_t)a->n * sizeof *a->ints);
                if (a->floats) touch(a->floats, (size_t)a->n * sizeof *a->floats);
                if (a->strings)
                    for (int64_t j = 0; j < a->n; j++) touch(a->strings[j], strlen(a->strings[j]));
                if (a->s) touch(a->s, a->s_len);
                if (a->raw) touch(a->raw, a->raw_len);
                if (a->t && a->type == IG_ATTR_TENSOR) check_const(a->t);
                if (a->t && a->type == IG_ATTR_TENSORS)
                    for (int64_t j = 0; j < a->n; j++) check_const(&a->t[j]);
            }
        }
        for (int32_t i = 0; i < g.n_nodes; i++)
            if (g.order[i] < 0 || g.order[i] >= g.n_nodes) abort();
    } else if (!err.msg[0]) {
        abort();
    }
    ig__graph_free(&g);
    ig__onnx_close(file);
    return 0;
}
