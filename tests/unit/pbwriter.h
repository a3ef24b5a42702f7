/*
 * pbwriter.h -- a tiny protobuf writer for tests: ModelProto/GraphProto/NodeProto/TensorProto byte
 * buffers built by hand, so C tests can make models (valid or broken) without Python.
 */
#ifndef INGOT_TEST_PBWRITER_H
#define INGOT_TEST_PBWRITER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif

typedef struct wb {
    uint8_t *p;
    size_t n, cap;
} wb;

static void wb_put(wb *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->n + n) cap *= 2;
        b->p = realloc(b->p, cap);
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void w_varint(wb *b, uint64_t v)
{
    uint8_t t[10];
    int k = 0;
    do {
        t[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) t[k] |= 0x80;
        k++;
    } while (v);
    wb_put(b, t, (size_t)k);
}
static void w_tag(wb *b, uint32_t field, int wire) { w_varint(b, ((uint64_t)field << 3) | (uint64_t)wire); }
static void w_int(wb *b, uint32_t field, int64_t v)
{
    w_tag(b, field, 0);
    w_varint(b, (uint64_t)v);
}
static void w_bytes(wb *b, uint32_t field, const void *d, size_t n)
{
    w_tag(b, field, 2);
    w_varint(b, n);
    wb_put(b, d, n);
}
static void w_str(wb *b, uint32_t field, const char *s) { w_bytes(b, field, s, strlen(s)); }
static void w_msg(wb *b, uint32_t field, wb *sub)
{
    w_bytes(b, field, sub->p, sub->n);
    free(sub->p);
    memset(sub, 0, sizeof *sub);
}
static void w_f32(wb *b, uint32_t field, float v)
{
    w_tag(b, field, 5);
    wb_put(b, &v, 4);
}
static void w_packed_ints(wb *b, uint32_t field, const int64_t *v, int n)
{
    wb s = {0};
    for (int i = 0; i < n; i++) w_varint(&s, (uint64_t)v[i]);
    w_msg(b, field, &s);
}

/* ---- ONNX pieces ---- */
static wb opset(const char *domain, int64_t v)
{
    wb o = {0};
    w_str(&o, 1, domain);
    w_int(&o, 2, v);
    return o;
}
/* ValueInfoProto; dims[i] < 0 means "use params[i]" (NULL param: a dim with neither field) */
static wb value_info(const char *name, int elem, int rank, const int64_t *dims, const char *const *params)
{
    wb shape = {0}, tt = {0}, type = {0}, vi = {0};
    for (int i = 0; i < rank; i++) {
        wb d = {0};
        if (dims[i] >= 0)
            w_int(&d, 1, dims[i]);
        else if (params && params[i])
            w_str(&d, 2, params[i]);
        w_msg(&shape, 1, &d);
    }
    w_int(&tt, 1, elem);
    if (rank >= 0) w_msg(&tt, 2, &shape);
    free(shape.p);
    w_msg(&type, 1, &tt);
    w_str(&vi, 1, name);
    w_msg(&vi, 2, &type);
    return vi;
}
static wb tensor_raw(const char *name, int dtype, int rank, const int64_t *dims, const void *data, size_t n)
{
    wb t = {0};
    for (int i = 0; i < rank; i++) w_int(&t, 1, dims[i]);
    w_int(&t, 2, dtype);
    w_str(&t, 8, name);
    w_bytes(&t, 9, data, n);
    return t;
}
static wb node(const char *op, const char *name, const char *const *ins, int n_in, const char *const *outs, int n_out)
{
    wb n = {0};
    for (int i = 0; i < n_in; i++) w_str(&n, 1, ins[i]);
    for (int i = 0; i < n_out; i++) w_str(&n, 2, outs[i]);
    if (name) w_str(&n, 3, name);
    w_str(&n, 4, op);
    return n;
}
static wb model(wb *graph, int64_t opset_version)
{
    wb m = {0};
    w_int(&m, 1, 8);
    w_str(&m, 2, "unit-test");
    w_str(&m, 3, "1.0");
    w_msg(&m, 7, graph);
    if (opset_version > 0) {
        wb o = opset("", opset_version);
        w_msg(&m, 8, &o);
    }
    return m;
}

#endif
