/*
 * fuzz_tensor.c -- libFuzzer target for standalone TensorProto files (the ONNX test-data format read
 * by ingot_tensor_load_file): bytes -> ig__onnx_read_tensor_buffer into an arena, then every byte of
 * the result is read so a wrong size or pointer shows up under AddressSanitizer.
 */
#include "onnx/onnx.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ig_arena arena;
    ig__arena_init(&arena);
    ig_const c;
    ig_err err = {0};
    if (ig__onnx_read_tensor_buffer(data, size, NULL, &arena, &c, &err) == INGOT_OK) {
        size_t n = 1;
        for (int32_t i = 0; i < c.rank; i++) n *= (size_t)c.dims[i];
        if (n * ingot_dtype_size(c.dtype) != c.n_bytes) abort();
        volatile uint8_t sum = 0;
        for (size_t i = 0; i < c.n_bytes; i++) sum ^= ((const uint8_t *)c.data)[i];
        (void)sum;
    } else if (!err.msg[0]) {
        abort();
    }
    ig__arena_free(&arena);
    return 0;
}
