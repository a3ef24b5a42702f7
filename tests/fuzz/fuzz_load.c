/*
 * fuzz_load.c -- libFuzzer target over the whole front end: bytes -> ingot_model_load_buffer (protobuf
 * reader, import, toposort, verify, shape inference, constant folding, costs), then the calls a user
 * makes on a loaded model (batch binding, re-inference, JSON description), then destroy. Built with
 * clang -fsanitize=fuzzer,address,undefined by tests/fuzz/run.sh; every crash it finds is kept in
 * tests/fuzz/regressions/ and replayed.
 *
 * External data is resolved against a scratch folder holding one small data file, so location/offset
 * handling is reached too (paths escaping it must be refused like any other).
 */
#define _XOPEN_SOURCE 700
#include "fuzz_util.h" /* first: it sets the POSIX level */

#include "ingot.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    fuzz_make_base_dir(base_dir, sizeof base_dir, "/tmp/ingot_fuzz_XXXXXX");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ingot_model *m = NULL;
    if (ingot_model_load_buffer(rt, data, size, base_dir, NULL, &m) != INGOT_OK) {
        /* every failure carries a message */
        if (!ingot_runtime_errmsg(rt)[0]) abort();
        return 0;
    }
    ingot_model_info info;
    ingot_model_get_info(m, &info);
    for (int64_t i = 0; i < ingot_model_node_count(m); i++) {
        ingot_node_info ni;
        ingot_model_node_info(m, i, &ni);
    }
    if (ingot_model_set_batch(m, 2) == INGOT_OK) ingot_model_infer(m);
    char *json = NULL;
    if (ingot_model_describe_json(m, &json) == INGOT_OK) ingot_free(json);
    ingot_model_destroy(m);
    return 0;
}
