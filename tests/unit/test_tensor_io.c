/* test_tensor_io.c -- .npy and TensorProto files through ingot_tensor_load_file / ingot_tensor_save_npy. */
#define _POSIX_C_SOURCE 200809L
#include "ingot.h"
#include "test.h"

#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static const char *tmp_path(const char *leaf)
{
    static char p[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, leaf);
    return p[k];
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(data, 1, n, f);
    fclose(f);
}

/* A v1.0 .npy with the given header dict and payload. */
static void write_npy(const char *path, const char *dict, const void *data, size_t n)
{
    unsigned char buf[4096];
    size_t hl = strlen(dict);
    size_t total = (10 + hl + 1 + 63) / 64 * 64;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)((total - 10) & 0xff);
    buf[9] = (unsigned char)((total - 10) >> 8);
    memcpy(buf + 10, dict, hl);
    memset(buf + 10 + hl, ' ', total - 10 - hl - 1);
    buf[total - 1] = '\n';
    memcpy(buf + total, data, n);
    write_bytes(path, buf, total + n);
}

TEST(roundtrip_every_dtype)
{
    static const ingot_dtype types[] = {
        INGOT_DTYPE_FLOAT, INGOT_DTYPE_DOUBLE, INGOT_DTYPE_FLOAT16, INGOT_DTYPE_BFLOAT16, INGOT_DTYPE_INT8,
        INGOT_DTYPE_UINT8, INGOT_DTYPE_INT16,  INGOT_DTYPE_UINT16,  INGOT_DTYPE_INT32,    INGOT_DTYPE_UINT32,
        INGOT_DTYPE_INT64, INGOT_DTYPE_UINT64, INGOT_DTYPE_BOOL,
    };
    ingot_runtime *rt = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    unsigned char bytes[2 * 3 * 4 * 8];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (unsigned char)(i * 37 + 1);
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        ingot_tensor t = {0}, u = {0};
        t.dtype = types[k];
        t.rank = 3;
        t.dims[0] = 2, t.dims[1] = 3, t.dims[2] = 4;
        t.bytes = 24 * ingot_dtype_size(types[k]);
        unsigned char data[sizeof bytes];
        memcpy(data, bytes, sizeof data);
        if (types[k] == INGOT_DTYPE_BOOL)
            for (int i = 0; i < 24; i++) data[i] &= 1;
        t.data = data;
        const char *p = tmp_path("rt.npy");
        ASSERT_EQ(ingot_tensor_save_npy(rt, p, &t), INGOT_OK);
        ASSERT_EQ(ingot_tensor_load_file(rt, p, &u), INGOT_OK);
        ASSERT_EQ(u.dtype, t.dtype);
        ASSERT_EQ(u.rank, 3);
        ASSERT_EQ(u.dims[2], 4);
        ASSERT_EQ(u.bytes, t.bytes);
        ASSERT(memcmp(u.data, t.data, t.bytes) == 0);
        ASSERT(u.name == NULL);
        ingot_tensor_free(&u);
        ASSERT(u.data == NULL);
    }
    /* scalar and empty tensors */
    float one = 1.5f;
    ingot_tensor s = {.dtype = INGOT_DTYPE_FLOAT, .rank = 0, .data = &one, .bytes = 4}, u = {0};
    ASSERT_EQ(ingot_tensor_save_npy(rt, tmp_path("s.npy"), &s), INGOT_OK);
    ASSERT_EQ(ingot_tensor_load_file(rt, tmp_path("s.npy"), &u), INGOT_OK);
    ASSERT_EQ(u.rank, 0);
    ASSERT(*(float *)u.data == 1.5f);
    ingot_tensor_free(&u);
    ingot_tensor e = {.dtype = INGOT_DTYPE_INT64, .rank = 2, .dims = {0, 3}, .data = NULL, .bytes = 0};
    ASSERT_EQ(ingot_tensor_save_npy(rt, tmp_path("e.npy"), &e), INGOT_OK);
    ASSERT_EQ(ingot_tensor_load_file(rt, tmp_path("e.npy"), &u), INGOT_OK);
    ASSERT_EQ(u.rank, 2);
    ASSERT_EQ(u.dims[0], 0);
    ASSERT_EQ(u.bytes, 0);
    ingot_tensor_free(&u);
    ingot_runtime_destroy(rt);
}

TEST(npy_versions_and_header_forms)
{
    ingot_runtime *rt = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    int32_t v[3] = {1, -2, 3};
    ingot_tensor u = {0};
    /* double quotes, keys in another order, no trailing comma */
    write_npy(tmp_path("a.npy"), "{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"<i4\"}", v, 12);
    ASSERT_EQ(ingot_tensor_load_file(rt, tmp_path("a.npy"), &u), INGOT_OK);
    ASSERT_EQ(u.dtype, INGOT_DTYPE_INT32);
    ASSERT_EQ(u.rank, 1);
    ASSERT_EQ(((int32_t *)u.data)[1], -2);
    ingot_tensor_free(&u);

    /* version 2.0: 4-byte header length */
    unsigned char buf[256];
    const char *dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 3), }";
    size_t hl = strlen(dict), total = (12 + hl + 1 + 63) / 64 * 64;
    memcpy(buf, "\x93NUMPY\x02\x00", 8);
    buf[8] = (unsigned char)(total - 12), buf[9] = buf[10] = buf[11] = 0;
    memcpy(buf + 12, dict, hl);
    memset(buf + 12 + hl, ' ', total - 12 - hl - 1);
    buf[total - 1] = '\n';
    memcpy(buf + total, v, 12);
    write_bytes(tmp_path("v2.npy"), buf, total + 12);
    ASSERT_EQ(ingot_tensor_load_file(rt, tmp_path("v2.npy"), &u), INGOT_OK);
    ASSERT_EQ(u.rank, 2);
    ASSERT_EQ(u.dims[1], 3);
    ingot_tensor_free(&u);
    ingot_runtime_destroy(rt);
}

TEST(npy_rejections_name_the_file)
{
    ingot_runtime *rt = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    float f[6] = {0};
    ingot_tensor u = {0};
    const char *p = tmp_path("fortran.npy");
    write_npy(p, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", f, 24);
    ASSERT(ingot_tensor_load_file(rt, p, &u) != INGOT_OK);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "fortran.npy");
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "Fortran order");
    ASSERT(u.data == NULL);

    p = tmp_path("complex.npy");
    write_npy(p, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", f, 24);
    ASSERT(ingot_tensor_load_file(rt, p, &u) != INGOT_OK);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "complex.npy");
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "'<c8' is not supported");

    p = tmp_path("big.npy");
    write_npy(p, "{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }", f, 24);
    ASSERT(ingot_tensor_load_file(rt, p, &u) != INGOT_OK);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "big-endian");

    p = tmp_path("short.npy");
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f, 20);
    ASSERT(ingot_tensor_load_file(rt, p, &u) != INGOT_OK);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "data is 20 bytes, the shape and dtype need 24");

    p = tmp_path("rank9.npy");
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", f, 4);
    ASSERT(ingot_tensor_load_file(rt, p, &u) != INGOT_OK);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "more than 8 dims");

    p = tmp_path("hdr.npy");
    write_bytes(p, "\x93NUMPY\x01\x00\xff\x7f{", 11);
    ASSERT(ingot_tensor_load_file(rt, p, &u) != INGOT_OK);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "runs past the end");

    ASSERT_EQ(ingot_tensor_load_file(rt, tmp_path("missing.npy"), &u), INGOT_ERR_IO);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "missing.npy");

    ingot_tensor bad = {.dtype = INGOT_DTYPE_STRING, .rank = 1, .dims = {1}, .bytes = 0};
    ASSERT(ingot_tensor_save_npy(rt, tmp_path("x.npy"), &bad) != INGOT_OK);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "cannot save dtype string");
    ingot_tensor wrong = {.dtype = INGOT_DTYPE_FLOAT, .rank = 1, .dims = {3}, .data = f, .bytes = 8};
    ASSERT(ingot_tensor_save_npy(rt, tmp_path("x.npy"), &wrong) != INGOT_OK);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "need 12");
    ingot_runtime_destroy(rt);
}

TEST(tensor_proto_file)
{
    /* TensorProto { dims: 2, dims: 2, data_type: FLOAT, name: "x", raw_data: 4 floats } */
    unsigned char pb[64];
    size_t n = 0;
    float vals[4] = {1, 2, 3, -4};
    pb[n++] = 0x08, pb[n++] = 2;                /* dims = 2 */
    pb[n++] = 0x08, pb[n++] = 2;                /* dims = 2 */
    pb[n++] = 0x10, pb[n++] = 1;                /* data_type = FLOAT */
    pb[n++] = 0x42, pb[n++] = 1, pb[n++] = 'x'; /* name (field 8) */
    pb[n++] = 0x4a, pb[n++] = 16;               /* raw_data (field 9) */
    memcpy(pb + n, vals, 16);
    n += 16;
    write_bytes(tmp_path("t.pb"), pb, n);
    ingot_runtime *rt = NULL;
    ASSERT_EQ(ingot_runtime_create(&rt), INGOT_OK);
    ingot_tensor u = {0};
    ASSERT_EQ(ingot_tensor_load_file(rt, tmp_path("t.pb"), &u), INGOT_OK);
    ASSERT_EQ(u.dtype, INGOT_DTYPE_FLOAT);
    ASSERT_EQ(u.rank, 2);
    ASSERT_STREQ(u.name, "x");
    ASSERT_EQ(u.bytes, 16);
    ASSERT(((float *)u.data)[3] == -4.0f);
    ingot_tensor_free(&u);

    /* garbage that is neither .npy nor a TensorProto */
    write_bytes(tmp_path("junk.pb"), "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11);
    ASSERT(ingot_tensor_load_file(rt, tmp_path("junk.pb"), &u) != INGOT_OK);
    ASSERT_CONTAINS(ingot_runtime_errmsg(rt), "junk.pb");
    ingot_runtime_destroy(rt);
}

static void cleanup(void)
{
    static const char *leaves[] = {"rt.npy",      "s.npy",       "e.npy",   "a.npy",     "v2.npy",
                                   "fortran.npy", "complex.npy", "big.npy", "short.npy", "rank9.npy",
                                   "hdr.npy",     "x.npy",       "t.pb",    "junk.pb"};
    for (size_t i = 0; i < sizeof leaves / sizeof leaves[0]; i++) unlink(tmp_path(leaves[i]));
    rmdir(dir);
}

static int setup(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/ingot_tensor_io_%ld", base && *base ? base : "/tmp", (long)getpid());
    return mkdir(dir, 0700);
}

TEST_MAIN(setup(); RUN(roundtrip_every_dtype); RUN(npy_versions_and_header_forms); RUN(npy_rejections_name_the_file);
          RUN(tensor_proto_file); cleanup())
