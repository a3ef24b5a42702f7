/*
 * tensor_io.c -- tensors in and out of files: .npy (NumPy's format, versions 1.0/2.0/3.0) and
 * serialized ONNX TensorProto files (the input_J.pb / output_J.pb of ONNX's test data).
 *
 * The format is chosen by content: a file starting with "\x93NUMPY" is .npy, anything else is handed
 * to the ONNX reader as a TensorProto. Only little-endian, C-order .npy files of the dtypes ingot
 * computes with are accepted; anything else fails with a message naming the file, the format it was
 * read as and the problem (never a guess: a Fortran-order array read as C order would silently
 * transpose the data). A file that starts with 0x93 but not the whole magic is a broken .npy (no
 * TensorProto starts with that byte: it would be field 18 as a group); a file the TensorProto reader
 * rejects too is "neither a .npy file nor an ONNX TensorProto", so a garbled .npy is never reported
 * as a protobuf error alone.
 *
 * A loaded tensor owns one allocation: the elements (64-byte aligned, as kernels like) followed by
 * the NUL-terminated name, so ingot_tensor_free has exactly one pointer to release.
 */
#define _POSIX_C_SOURCE 200809L
#include "../core/core.h"
#include "../onnx/import.h"
#include "../onnx/onnx.h"
#include "api_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define NPY_MAGIC     "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN     64 /* numpy >= 1.x pads the header so data starts on a 64-byte boundary */

/* .npy descr <-> dtype. The descr's first char is the byte order ('<' little, '|' not applicable,
 * '=' native); the rest names kind and size. bfloat16 has no NumPy type: ml_dtypes writes it as the
 * 2-byte void '<V2', which is what we write too and accept back. */
static const struct {
    const char *code; /* descr without the byte-order char */
    ingot_dtype dtype;
} npy_types[] = {
    {"f4", INGOT_DTYPE_FLOAT},    {"f8", INGOT_DTYPE_DOUBLE}, {"f2", INGOT_DTYPE_FLOAT16}, {"i1", INGOT_DTYPE_INT8},
    {"u1", INGOT_DTYPE_UINT8},    {"i2", INGOT_DTYPE_INT16},  {"u2", INGOT_DTYPE_UINT16},  {"i4", INGOT_DTYPE_INT32},
    {"u4", INGOT_DTYPE_UINT32},   {"i8", INGOT_DTYPE_INT64},  {"u8", INGOT_DTYPE_UINT64},  {"b1", INGOT_DTYPE_BOOL},
    {"V2", INGOT_DTYPE_BFLOAT16},
};

static const char *npy_code(ingot_dtype t)
{
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (npy_types[i].dtype == t) return npy_types[i].code;
    return NULL;
}

/* The file, mapped: a regular file only (ig__onnx_blob_open opens without blocking and refuses FIFOs,
 * devices and directories before reading), no larger than the machine's memory (a tensor is copied
 * out of it whole, so a larger one could never load; this says so instead of failing an allocation). */
static ingot_status map_file(const char *path, ig_onnx_blob *blob, ig_err *err)
{
    ingot_status st = ig__onnx_blob_open(path, true, "tensor file", blob, err);
    if (st != INGOT_OK) return st;
    uint64_t mem = ig__host_memory_bytes();
    if (mem && (uint64_t)blob->size > mem) {
        size_t n = blob->size;
        ig__onnx_blob_close(blob);
        return ig__errf(err, INGOT_ERR_INPUT,
                        "'%s': the file is %zu bytes, more than the machine's memory (%" PRIu64
                        " bytes): it cannot be loaded as a tensor",
                        path, n, mem);
    }
    return INGOT_OK;
}

/* ---- .npy header: a Python dict literal, e.g.
 *      {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }                    */

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* The position right after `'key':` (either quote style), or NULL. */
static const char *find_key(const char *h, const char *end, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = h; p + klen + 2 <= end; p++) {
        if ((*p == '\'' || *p == '"') && memcmp(p + 1, key, klen) == 0 && p[1 + klen] == *p) {
            const char *q = skip_ws(p + klen + 2, end);
            if (q < end && *q == ':') return skip_ws(q + 1, end);
        }
    }
    return NULL;
}

static ingot_status parse_npy_header(const char *path, const char *h, size_t hlen, ingot_dtype *dtype, int32_t *rank,
                                     int64_t *dims, ig_err *err)
{
    const char *end = h + hlen;
    const char *p = find_key(h, end, "descr");
    if (!p || p >= end || (*p != '\'' && *p != '"'))
        return ig__errf(err, INGOT_ERR_INPUT, "'%s': .npy header has no 'descr' string", path);
    char q = *p++;
    const char *ds = p;
    while (p < end && *p != q) p++;
    if (p >= end) return ig__errf(err, INGOT_ERR_INPUT, "'%s': .npy header: unterminated 'descr'", path);
    size_t dlen = (size_t)(p - ds);
    char descr[32];
    if (dlen == 0 || dlen >= sizeof descr)
        return ig__errf(err, INGOT_ERR_INPUT, "'%s': .npy dtype '%.*s' is not supported", path,
                        (int)(dlen < 64 ? dlen : 64), ds);
    memcpy(descr, ds, dlen);
    descr[dlen] = '\0';
    *dtype = INGOT_DTYPE_UNDEFINED;
    const char order = descr[0];
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (strcmp(descr + 1, npy_types[i].code) == 0) *dtype = npy_types[i].dtype;
    if (*dtype == INGOT_DTYPE_UNDEFINED || (order != '<' && order != '|' && order != '=' && order != '>'))
        return ig__errf(err, INGOT_ERR_INPUT,
                        "'%s': .npy dtype '%s' is not supported (ingot reads float16/32/64, bfloat16 as "
                        "'<V2', int8/16/32/64, uint8/16/32/64 and bool)",
                        path, descr);
    if (order == '>' && ingot_dtype_size(*dtype) > 1)
        return ig__errf(err, INGOT_ERR_INPUT, "'%s': .npy dtype '%s' is big-endian; save it little-endian", path,
                        descr);

    p = find_key(h, end, "fortran_order");
    if (!p) return ig__errf(err, INGOT_ERR_INPUT, "'%s': .npy header has no 'fortran_order'", path);
    if ((size_t)(end - p) >= 4 && memcmp(p, "True", 4) == 0)
        return ig__errf(err, INGOT_ERR_INPUT,
                        "'%s': .npy array is in Fortran order; ingot reads C order only "
                        "(save np.ascontiguousarray(a))",
                        path);
    if ((size_t)(end - p) < 5 || memcmp(p, "False", 5) != 0)
        return ig__errf(err, INGOT_ERR_INPUT, "'%s': .npy header: bad 'fortran_order' value", path);

    p = find_key(h, end, "shape");
    if (!p || p >= end || *p != '(')
        return ig__errf(err, INGOT_ERR_INPUT, "'%s': .npy header has no 'shape' tuple", path);
    p++;
    *rank = 0;
    for (;;) {
        p = skip_ws(p, end);
        if (p < end && *p == ')') break;
        if (p >= end || *p < '0' || *p > '9')
            return ig__errf(err, INGOT_ERR_INPUT, "'%s': .npy header: bad 'shape' tuple", path);
        int64_t v = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (!ig__mul_i64(v, 10, &v) || !ig__add_i64(v, *p - '0', &v))
                return ig__errf(err, INGOT_ERR_INPUT, "'%s': .npy shape dim %d overflows int64", path, *rank);
            p++;
        }
        if (p < end && *p == 'L') p++; /* Python 2 longs */
        if (*rank >= INGOT_MAX_RANK)
            return ig__errf(err, INGOT_ERR_INPUT, "'%s': .npy array has more than %d dims", path, INGOT_MAX_RANK);
        dims[(*rank)++] = v;
        p = skip_ws(p, end);
        if (p < end && *p == ',')
            p++;
        else if (p >= end || *p != ')')
            return ig__errf(err, INGOT_ERR_INPUT, "'%s': .npy header: bad 'shape' tuple", path);
    }
    return INGOT_OK;
}

/* Allocate out->data with room for `bytes` elements and the name after them. kind names the format in
 * messages (".npy", "TensorProto"). */
static ingot_status alloc_tensor(const char *path, const char *kind, ingot_tensor *out, size_t bytes, const char *name,
                                 ig_err *err)
{
    size_t nlen = name ? strlen(name) + 1 : 0, total;
    size_t padded = (bytes + 63) & ~(size_t)63;
    if (padded < bytes || !ig__add_size(padded, nlen, &total))
        return ig__errf(err, INGOT_ERR_INPUT, "'%s': %s tensor too large", path, kind);
    unsigned char *p = ig__malloc_aligned(total ? total : 1, 64);
    if (!p)
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "'%s': out of memory for a %s tensor of %zu bytes", path, kind,
                        total);
    out->data = p;
    out->bytes = bytes;
    out->name = NULL;
    if (name) {
        memcpy(p + padded, name, nlen);
        out->name = (const char *)(p + padded);
    }
    return INGOT_OK;
}

static ingot_status load_npy(const char *path, const unsigned char *buf, size_t n, ingot_tensor *out, ig_err *err)
{
    if (n < 10) return ig__errf(err, INGOT_ERR_INPUT, "'%s': truncated .npy file (%zu bytes)", path, n);
    unsigned major = buf[6], minor = buf[7];
    size_t hlen, hoff;
    if (major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        hoff = 10;
    } else if (major == 2 || major == 3) {
        if (n < 12) return ig__errf(err, INGOT_ERR_INPUT, "'%s': truncated .npy file (%zu bytes)", path, n);
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        hoff = 12;
    } else {
        return ig__errf(err, INGOT_ERR_INPUT, "'%s': .npy format version %u.%u is not supported", path, major, minor);
    }
    if (hlen > n - hoff)
        return ig__errf(err, INGOT_ERR_INPUT, "'%s': .npy header length %zu runs past the end of the file", path, hlen);
    ingot_dtype dtype = INGOT_DTYPE_UNDEFINED;
    int32_t rank = 0;
    int64_t dims[INGOT_MAX_RANK];
    ingot_status st = parse_npy_header(path, (const char *)buf + hoff, hlen, &dtype, &rank, dims, err);
    if (st != INGOT_OK) return st;

    size_t esize = ingot_dtype_size(dtype), bytes = esize;
    for (int32_t i = 0; i < rank; i++)
        if (!ig__mul_size(bytes, (size_t)dims[i], &bytes))
            return ig__errf(err, INGOT_ERR_INPUT, "'%s': .npy shape overflows the size", path);
    size_t data_off = hoff + hlen;
    if (n - data_off != bytes)
        return ig__errf(err, INGOT_ERR_INPUT, "'%s': .npy data is %zu bytes, the shape and dtype need %zu", path,
                        n - data_off, bytes);
    st = alloc_tensor(path, ".npy", out, bytes, NULL, err);
    if (st != INGOT_OK) return st;
    memcpy(out->data, buf + data_off, bytes);
    out->dtype = dtype;
    out->rank = rank;
    for (int32_t i = 0; i < rank; i++) out->dims[i] = dims[i];
    return INGOT_OK;
}

static ingot_status load_pb(const char *path, ingot_tensor *out, ig_err *err)
{
    ig_arena arena;
    ig__arena_init(&arena);
    ig_const c;
    memset(&c, 0, sizeof c);
    ingot_status st = ig__onnx_read_tensor_file(path, &arena, &c, err);
    if (st != INGOT_OK) goto out_arena;
    size_t esize = ingot_dtype_size(c.dtype), bytes = esize;
    if (c.dtype == INGOT_DTYPE_UNDEFINED) { /* parsed, but with no data_type: not a tensor at all */
        st = ig__errf(err, INGOT_ERR_MODEL_PARSE, "it holds no TensorProto.data_type");
        goto out_arena;
    }
    if (esize == 0 || !npy_code(c.dtype)) {
        st = ig__errf(err, INGOT_ERR_INPUT, "'%s': TensorProto '%s' has dtype %s, which ingot does not compute with",
                      path, c.name ? c.name : "", ingot_dtype_name(c.dtype));
        goto out_arena;
    }
    if (c.rank < 0 || c.rank > INGOT_MAX_RANK) {
        st = ig__errf(err, INGOT_ERR_INPUT, "'%s': TensorProto has rank %d (at most %d)", path, (int)c.rank,
                      INGOT_MAX_RANK);
        goto out_arena;
    }
    for (int32_t i = 0; i < c.rank; i++) {
        if (c.dims[i] < 0 || !ig__mul_size(bytes, (size_t)c.dims[i], &bytes)) {
            st = ig__errf(err, INGOT_ERR_INPUT, "'%s': TensorProto dim %d is invalid", path, (int)i);
            goto out_arena;
        }
    }
    if (bytes != c.n_bytes || (bytes && !c.data)) {
        st = ig__errf(err, INGOT_ERR_INPUT, "'%s': TensorProto holds %zu bytes, its shape needs %zu", path, c.n_bytes,
                      bytes);
        goto out_arena;
    }
    st = alloc_tensor(path, "TensorProto", out, bytes, c.name && c.name[0] ? c.name : NULL, err);
    if (st != INGOT_OK) goto out_arena;
    if (bytes) memcpy(out->data, c.data, bytes);
    out->dtype = c.dtype;
    out->rank = c.rank;
    for (int32_t i = 0; i < c.rank; i++) out->dims[i] = c.dims[i];
out_arena:
    ig__arena_free(&arena);
    return st;
}

ingot_status ingot_tensor_load_file(ingot_runtime *rt, const char *path, ingot_tensor *out)
{
    ig_err err;
    ig__err_clear(&err);
    if (!out || !path) {
        ig__errf(&err, INGOT_ERR_INVALID_ARG, "ingot_tensor_load_file: path and out must not be NULL");
        return ig__api_fail(rt, &err);
    }
    memset(out, 0, sizeof *out);
    ig_onnx_blob blob;
    ingot_status st = map_file(path, &blob, &err);
    if (st != INGOT_OK) return ig__api_fail(rt, &err);
    const unsigned char *buf = blob.data;
    size_t n = blob.size;
    if (n >= NPY_MAGIC_LEN && memcmp(buf, NPY_MAGIC, NPY_MAGIC_LEN) == 0) {
        st = load_npy(path, buf, n, out, &err);
        ig__onnx_blob_close(&blob);
    } else if (n > 0 && buf[0] == (unsigned char)NPY_MAGIC[0]) {
        size_t same = 0;
        while (same < n && same < NPY_MAGIC_LEN && buf[same] == (unsigned char)NPY_MAGIC[same]) same++;
        st = ig__errf(&err, INGOT_ERR_INPUT,
                      same == n ? "'%s': truncated .npy file (%zu bytes: not even the \\x93NUMPY magic)"
                                : "'%s': broken .npy file: it starts with 0x93 but not with the \\x93NUMPY magic "
                                  "(%zu bytes match)",
                      path, same);
        ig__onnx_blob_close(&blob);
    } else {
        ig__onnx_blob_close(&blob); /* the ONNX reader reads the file itself */
        st = load_pb(path, out, &err);
        if (st == INGOT_ERR_MODEL_PARSE) { /* not a TensorProto either: say both */
            char why[IG_ERRMSG_MAX];
            size_t plen = strlen(path);
            const char *w = err.msg;
            if (!strncmp(w, path, plen) && w[plen] == ':' && w[plen + 1] == ' ') w += plen + 2; /* no path twice */
            snprintf(why, sizeof why, "%s", w);
            size_t len = strlen(path);
            int npy_name = len >= 4 && !strcmp(path + len - 4, ".npy");
            ig__err_clear(&err);
            ig__errf(&err, INGOT_ERR_MODEL_PARSE,
                     npy_name ? "'%s': not a .npy file (it does not start with the \\x93NUMPY magic) and not an "
                                "ONNX TensorProto either: %.700s"
                              : "'%s': neither a .npy file (no \\x93NUMPY magic) nor an ONNX TensorProto: %.700s",
                     path, why);
        }
    }
    if (st != INGOT_OK) {
        ingot_tensor_free(out);
        return ig__api_fail(rt, &err);
    }
    return INGOT_OK;
}

ingot_status ingot_tensor_save_npy(ingot_runtime *rt, const char *path, const ingot_tensor *t)
{
    ig_err err;
    ig__err_clear(&err);
    if (!path || !t) {
        ig__errf(&err, INGOT_ERR_INVALID_ARG, "ingot_tensor_save_npy: path and tensor must not be NULL");
        return ig__api_fail(rt, &err);
    }
    const char *code = npy_code(t->dtype);
    if (!code) {
        ig__errf(&err, INGOT_ERR_INVALID_ARG, "'%s': cannot save dtype %s as .npy", path, ingot_dtype_name(t->dtype));
        return ig__api_fail(rt, &err);
    }
    if (t->rank < 0 || t->rank > INGOT_MAX_RANK) {
        ig__errf(&err, INGOT_ERR_INVALID_ARG, "'%s': tensor rank %d out of range", path, (int)t->rank);
        return ig__api_fail(rt, &err);
    }
    size_t bytes = ingot_dtype_size(t->dtype);
    for (int32_t i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0 || !ig__mul_size(bytes, (size_t)t->dims[i], &bytes)) {
            ig__errf(&err, INGOT_ERR_INVALID_ARG, "'%s': tensor dim %d (%lld) is invalid", path, (int)i,
                     (long long)t->dims[i]);
            return ig__api_fail(rt, &err);
        }
    }
    if (bytes != t->bytes || (bytes && !t->data)) {
        ig__errf(&err, INGOT_ERR_INVALID_ARG, "'%s': tensor says %zu bytes, its shape and dtype need %zu", path,
                 t->bytes, bytes);
        return ig__api_fail(rt, &err);
    }

    /* header: dict, padded with spaces and a final '\n' so data starts on a NPY_ALIGN boundary */
    char hdr[512];
    int len = snprintf(hdr + 10, sizeof hdr - 10, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                       ingot_dtype_size(t->dtype) == 1 ? '|' : '<', code);
    for (int32_t i = 0; i < t->rank; i++)
        len += snprintf(hdr + 10 + len, sizeof hdr - 10 - (size_t)len, "%lld%s", (long long)t->dims[i],
                        t->rank == 1 ? "," : (i + 1 < t->rank ? ", " : ""));
    len += snprintf(hdr + 10 + len, sizeof hdr - 10 - (size_t)len, "), }");
    size_t total = 10 + (size_t)len + 1;
    total = (total + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    memset(hdr + 10 + len, ' ', total - 10 - (size_t)len - 1);
    hdr[total - 1] = '\n';
    memcpy(hdr, NPY_MAGIC, NPY_MAGIC_LEN);
    hdr[6] = 1;
    hdr[7] = 0;
    hdr[8] = (char)((total - 10) & 0xff);
    hdr[9] = (char)((total - 10) >> 8);

    FILE *f = fopen(path, "wb");
    if (!f) {
        ig__errf(&err, INGOT_ERR_IO, "'%s': cannot create: %s", path, strerror(errno));
        return ig__api_fail(rt, &err);
    }
    bool ok = fwrite(hdr, 1, total, f) == total && (bytes == 0 || fwrite(t->data, 1, bytes, f) == bytes);
    if (fclose(f) != 0) ok = false;
    if (!ok) {
        ig__errf(&err, INGOT_ERR_IO, "'%s': write failed: %s", path, strerror(errno));
        remove(path); /* no partial files */
        return ig__api_fail(rt, &err);
    }
    return INGOT_OK;
}

void ingot_tensor_free(ingot_tensor *t)
{
    if (!t) return;
    ig__free_aligned(t->data);
    memset(t, 0, sizeof *t);
}
