/*
 * tensor.c -- TensorProto to ig_const: dims, dtype and data from raw_data (referenced in place), the
 * typed repeated fields (packed float/double referenced, varint fields decoded into the arena) or
 * external data; and standalone TensorProto files (ONNX test data), whose bytes are copied.
 *
 * Sizes taken from the file are checked before use: the element count is the product of the dims
 * (overflow and negative dims rejected) and must match the data exactly, so nothing is allocated
 * beyond what the data bytes themselves justify.
 */
#define _XOPEN_SOURCE 700
#include "import.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const onnx_dtype_names[] = {
    "undefined",  "float32",      "uint8",          "int8",       "uint16",         "int16",  "int32",     "int64",
    "string",     "bool",         "float16",        "float64",    "uint32",         "uint64", "complex64", "complex128",
    "bfloat16",   "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4",  "int4",      "float4e2m1",
    "float8e8m0", "uint2",        "int2",           "float6e2m3", "float6e3m2",
};

const char *ig__onnx_dtype_name(int64_t t, char *buf, size_t n)
{
    if (t >= 0 && t < (int64_t)(sizeof onnx_dtype_names / sizeof onnx_dtype_names[0])) return onnx_dtype_names[t];
    snprintf(buf, n, "unknown type %" PRId64, t);
    return buf;
}

ingot_status ig__onnx_str(ig_onnx_imp *im, const ig_pb_field *f, const char **out)
{
    const char *s = (const char *)im->pb.buf + f->off;
    if (f->len && memchr(s, 0, f->len))
        return ig__pb_errf(&im->pb, INGOT_ERR_MODEL_PARSE, f, "string at byte %zu contains a NUL byte", f->off);
    char *p = ig__arena_strndup(im->arena, s, f->len);
    if (!p) return ig__errf(im->pb.err, INGOT_ERR_OUT_OF_MEMORY, "out of memory reading %zu-byte string", f->len);
    *out = p;
    return INGOT_OK;
}

/* Which typed field holds a dtype's elements, and how wide each stored element is. */
static uint32_t typed_field_for(ingot_dtype t)
{
    switch (t) {
    case INGOT_DTYPE_FLOAT: return F_TENSOR_FLOAT;
    case INGOT_DTYPE_DOUBLE: return F_TENSOR_DOUBLE;
    case INGOT_DTYPE_INT64: return F_TENSOR_INT64;
    case INGOT_DTYPE_UINT32:
    case INGOT_DTYPE_UINT64: return F_TENSOR_UINT64;
    default: return F_TENSOR_INT32; /* int8/16/32, uint8/16, bool, float16, bfloat16 */
    }
}

static const char *typed_field_name(uint32_t num)
{
    switch (num) {
    case F_TENSOR_FLOAT: return "float_data";
    case F_TENSOR_DOUBLE: return "double_data";
    case F_TENSOR_INT64: return "int64_data";
    case F_TENSOR_UINT64: return "uint64_data";
    case F_TENSOR_INT32: return "int32_data";
    default: return "?";
    }
}

/* Strict decimal for external_data offset/length ("123"; no sign, space or overflow). */
static bool parse_u64(const char *s, uint64_t *out)
{
    if (!*s) return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return true;
}

typedef struct tensor_scan {
    int64_t dims[IG_MAX_RANK];
    int64_t rank; /* may exceed IG_MAX_RANK: counted, not stored */
    int64_t dtype;
    const char *name;
    bool has_raw, has_segment, has_strings;
    ig_pb_field raw;
    int64_t typed_count[16]; /* elements per typed field number */
    int32_t typed_occ[16];   /* occurrences per typed field number */
    ig_pb_field typed_first[16];
    int64_t location; /* data_location */
    const char *ext_location, *ext_offset, *ext_length;
} tensor_scan;

static ingot_status scan_external_entry(ig_onnx_imp *im, ig_pb_msg *m, const ig_pb_field *f, int64_t index,
                                        tensor_scan *ts)
{
    ig_pb_msg e;
    ingot_status st = ig__pb_enter(m, f, &ig__pb_string_entry, "external_data", index, &e);
    if (st) return st;
    const char *key = "", *value = "";
    ig_pb_field ef;
    int r;
    while ((r = ig__pb_next(&e, &ef)) > 0) {
        if (ef.num == F_ENTRY_KEY)
            st = ig__onnx_str(im, &ef, &key);
        else if (ef.num == F_ENTRY_VALUE)
            st = ig__onnx_str(im, &ef, &value);
        if (st) return st;
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;
    ig__pb_leave(&im->pb);
    if (!strcmp(key, "location"))
        ts->ext_location = value;
    else if (!strcmp(key, "offset"))
        ts->ext_offset = value;
    else if (!strcmp(key, "length"))
        ts->ext_length = value;
    /* "checksum" and unknown keys are ignored */
    return INGOT_OK;
}

static ingot_status scan_tensor(ig_onnx_imp *im, ig_pb_msg *m, tensor_scan *ts)
{
    ig_pb_field f;
    int r;
    ingot_status st = INGOT_OK;
    int64_t n_ext = 0;
    memset(ts, 0, sizeof *ts);
    ts->name = "";
    while ((r = ig__pb_next(m, &f)) > 0) {
        switch (f.num) {
        case F_TENSOR_DIMS: {
            int64_t n = ig__pb_count(m, &f);
            if (n < 0) return INGOT_ERR_MODEL_PARSE;
            ig_pb_iter it;
            uint64_t v;
            ig__pb_iter_init(&it, m, &f);
            while (ig__pb_iter_next(&it, &v)) {
                if (ts->rank < IG_MAX_RANK) ts->dims[ts->rank] = (int64_t)v;
                ts->rank++;
            }
            break;
        }
        case F_TENSOR_DTYPE:
            ts->dtype = (int64_t)(int32_t)f.u; /* int32 field: sign-extended varint */
            break;
        case F_TENSOR_SEGMENT: ts->has_segment = true; break;
        case F_TENSOR_NAME: st = ig__onnx_str(im, &f, &ts->name); break;
        case F_TENSOR_RAW:
            ts->has_raw = true;
            ts->raw = f;
            break;
        case F_TENSOR_STRING: ts->has_strings = true; break;
        case F_TENSOR_FLOAT:
        case F_TENSOR_INT32:
        case F_TENSOR_INT64:
        case F_TENSOR_DOUBLE:
        case F_TENSOR_UINT64: {
            int64_t n = ig__pb_count(m, &f);
            if (n < 0) return INGOT_ERR_MODEL_PARSE;
            if (!ts->typed_occ[f.num]) ts->typed_first[f.num] = f;
            ts->typed_occ[f.num]++;
            ts->typed_count[f.num] += n;
            break;
        }
        case F_TENSOR_EXTERNAL: st = scan_external_entry(im, m, &f, n_ext++, ts); break;
        case F_TENSOR_LOCATION: ts->location = (int64_t)f.u; break;
        default: break;
        }
        if (st) return st;
    }
    return r < 0 ? INGOT_ERR_MODEL_PARSE : INGOT_OK;
}

/* Decode the typed field `num` (all its occurrences) into dst as elements of dtype t. */
static void decode_typed(ig_pb_msg *m, uint32_t num, ingot_dtype t, uint8_t *dst)
{
    size_t es = ingot_dtype_size(t), k = 0;
    ig_pb_field f;
    ig__pb_rewind(m);
    while (ig__pb_next(m, &f) > 0) { /* already scanned: cannot fail */
        if (f.num != num) continue;
        ig_pb_iter it;
        uint64_t v;
        ig__pb_iter_init(&it, m, &f);
        while (ig__pb_iter_next(&it, &v)) {
            uint8_t *p = dst + k * es;
            if (t == INGOT_DTYPE_BOOL) {
                p[0] = v != 0;
            } else if (es == 1) {
                p[0] = (uint8_t)v;
            } else if (es == 2) {
                uint16_t x = (uint16_t)v;
                memcpy(p, &x, 2);
            } else if (es == 4) {
                uint32_t x = (uint32_t)v;
                memcpy(p, &x, 4);
            } else {
                memcpy(p, &v, 8);
            }
            k++;
        }
    }
}

ingot_status ig__onnx_tensor(ig_onnx_imp *im, ig_pb_msg *m, const char *what, ig_const *out, bool *loaded)
{
    ig_pb_ctx *c = &im->pb;
    tensor_scan ts;
    ingot_status st = scan_tensor(im, m, &ts);
    if (st) return st;
    memset(out, 0, sizeof *out);
    out->name = ts.name;
    if (loaded) *loaded = true;
    const char *nm = ts.name[0] ? ts.name : "(unnamed)";
    char tb[32];

    if (ts.dtype == INGOT_DTYPE_UNDEFINED)
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "%s '%.200s' has no data_type", what, nm);
    if (!ig__dtype_supported(ts.dtype))
        return ig__pb_errf(c, INGOT_ERR_MODEL_UNSUPPORTED_OP, NULL,
                           "%s '%.200s' has data type %" PRId64 " (%s), which ingot does not support", what, nm,
                           ts.dtype, ig__onnx_dtype_name(ts.dtype, tb, sizeof tb));
    ingot_dtype dt = (ingot_dtype)ts.dtype;
    const char *dtn = ingot_dtype_name(dt);
    if (ts.rank > IG_MAX_RANK)
        return ig__pb_errf(c, INGOT_ERR_MODEL_UNSUPPORTED_OP, NULL,
                           "%s '%.200s' has rank %" PRId64 "; ingot supports tensors of rank up to %d", what, nm,
                           ts.rank, IG_MAX_RANK);
    int64_t count = 1;
    for (int64_t i = 0; i < ts.rank; i++) {
        if (ts.dims[i] < 0)
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "%s '%.200s': dim %" PRId64 " is negative (%" PRId64 ")", what, nm, i, ts.dims[i]);
        if (!ig__mul_i64(count, ts.dims[i], &count))
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "%s '%.200s': the element count (product of %" PRId64 " dims) overflows 64 bits", what,
                               nm, ts.rank);
    }
    size_t es = ingot_dtype_size(dt), n_bytes;
    if ((uint64_t)count > SIZE_MAX || !ig__mul_size((size_t)count, es, &n_bytes))
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                           "%s '%.200s': %" PRId64 " %s elements do not fit in memory (byte size overflows)", what, nm,
                           count, dtn);
    out->dtype = dt;
    out->rank = (int32_t)ts.rank;
    for (int64_t i = 0; i < ts.rank; i++) out->dims[i] = ts.dims[i];

    if (ts.has_segment)
        return ig__pb_errf(c, INGOT_ERR_MODEL_UNSUPPORTED_OP, NULL,
                           "%s '%.200s' is a segment of a larger tensor; segmented tensors are not supported", what,
                           nm);
    if (ts.has_strings)
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "%s '%.200s' is %s but has string_data", what, nm, dtn);
    uint32_t want = typed_field_for(dt);
    int n_sources = ts.has_raw;
    static const uint32_t typed_nums[] = {F_TENSOR_FLOAT, F_TENSOR_INT32, F_TENSOR_INT64, F_TENSOR_DOUBLE,
                                          F_TENSOR_UINT64};
    for (size_t i = 0; i < sizeof typed_nums / sizeof typed_nums[0]; i++) {
        uint32_t num = typed_nums[i];
        if (!ts.typed_occ[num]) continue;
        if (num != want)
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "%s '%.200s' is %s but stores its elements in %s (%s data belongs in %s or raw_data)",
                               what, nm, dtn, typed_field_name(num), dtn, typed_field_name(want));
        n_sources++;
    }

    if (ts.location == 1) { /* EXTERNAL */
        if (n_sources)
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "%s '%.200s' has data_location EXTERNAL but also data in the file", what, nm);
        if (!ts.ext_location)
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "%s '%.200s' has data_location EXTERNAL but no 'location' in external_data", what, nm);
        uint64_t off = 0, len = 0;
        if (ts.ext_offset && !parse_u64(ts.ext_offset, &off))
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "%s '%.200s': external_data offset '%.40s' is not a non-negative decimal number", what,
                               nm, ts.ext_offset);
        if (ts.ext_length && !parse_u64(ts.ext_length, &len))
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "%s '%.200s': external_data length '%.40s' is not a non-negative decimal number", what,
                               nm, ts.ext_length);
        if (ts.ext_length && len != (uint64_t)n_bytes)
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "%s '%.200s': external_data length is %" PRIu64 " bytes, expected %zu (%" PRId64
                               " %s elements)",
                               what, nm, len, n_bytes, count, dtn);
        if (!im->load_external) {
            if (!loaded)
                return ig__pb_errf(c, INGOT_ERR_MODEL_UNSUPPORTED_OP, NULL,
                                   "%s '%.200s' keeps its data in external file '%.200s', which is only read when "
                                   "external data loading is on",
                                   what, nm, ts.ext_location);
            *loaded = false;
            return INGOT_OK;
        }
        const uint8_t *data;
        size_t got;
        st = ig__onnx_external(im, nm, ts.ext_location, off, ts.ext_length != NULL, len, &data, &got);
        if (st) return st;
        if (got != n_bytes)
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "%s '%.200s': external file '%.200s' holds %zu bytes from offset %" PRIu64
                               ", expected %zu (%" PRId64 " %s elements)",
                               what, nm, ts.ext_location, got, off, n_bytes, count, dtn);
        out->n_bytes = n_bytes;
        if (n_bytes && im->copy_data) {
            void *p = ig__arena_alloc(im->arena, n_bytes);
            if (!p) return ig__errf(c->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory copying tensor '%.200s'", nm);
            memcpy(p, data, n_bytes);
            data = p;
        }
        out->data = n_bytes ? data : NULL;
        return INGOT_OK;
    }
    if (ts.location != 0)
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "%s '%.200s' has unknown data_location %" PRId64, what, nm,
                           ts.location);
    if (n_sources > 1)
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "%s '%.200s' has both raw_data and %s", what, nm,
                           typed_field_name(want));

    if (ts.has_raw) {
        if (ts.raw.len != n_bytes)
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "%s '%.200s': raw_data has %zu bytes, expected %zu (%" PRId64 " %s elements)", what, nm,
                               ts.raw.len, n_bytes, count, dtn);
        const uint8_t *data = c->buf + ts.raw.off;
        if (n_bytes && im->copy_data) {
            void *p = ig__arena_alloc(im->arena, n_bytes);
            if (!p) return ig__errf(c->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory copying tensor '%.200s'", nm);
            memcpy(p, data, n_bytes);
            data = p;
        }
        out->data = n_bytes ? data : NULL;
        out->n_bytes = n_bytes;
        return INGOT_OK;
    }
    int64_t have = ts.typed_count[want];
    if (have != count) {
        if (!ts.typed_occ[want])
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "%s '%.200s' has %" PRId64 " %s elements but no data (no raw_data, %s or external data)",
                               what, nm, count, dtn, typed_field_name(want));
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                           "%s '%.200s': %s has %" PRId64 " elements, expected %" PRId64 " (dims of the %s tensor)",
                           what, nm, typed_field_name(want), have, count, dtn);
    }
    out->n_bytes = n_bytes;
    if (!count) return INGOT_OK;
    /* packed float/double in one chunk are the elements themselves: reference them */
    const ig_pb_field *first = &ts.typed_first[want];
    if (!im->copy_data && ts.typed_occ[want] == 1 && first->wire == IG_PB_LEN &&
        (want == F_TENSOR_FLOAT || want == F_TENSOR_DOUBLE)) {
        out->data = c->buf + first->off;
        return INGOT_OK;
    }
    uint8_t *p = ig__arena_alloc(im->arena, n_bytes);
    if (!p)
        return ig__errf(c->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory decoding %zu bytes of tensor '%.200s'", n_bytes,
                        nm);
    decode_typed(m, want, dt, p);
    out->data = p;
    return INGOT_OK;
}

/* ---- standalone TensorProto files ---- */

ingot_status ig__onnx_read_tensor_buffer(const void *data, size_t n, const char *base_dir, ig_arena *arena,
                                         ig_const *out, ig_err *err)
{
    ig_onnx_file tmp;
    memset(&tmp, 0, sizeof tmp);
    ig_onnx_imp im;
    memset(&im, 0, sizeof im);
    ig__pb_init(&im.pb, data, n, "TensorProto", err);
    im.arena = arena;
    im.file = &tmp;
    im.copy_data = true;
    im.load_external = true;
    tmp.opt.use_mmap = true;
    tmp.opt.load_external_data = true;
    ingot_status st = INGOT_OK;
    if (base_dir) {
        tmp.dir = realpath(base_dir, NULL);
        if (!tmp.dir) {
            st = ig__errf(err, INGOT_ERR_IO, "cannot resolve folder '%s' for external tensor data", base_dir);
            goto out;
        }
    }
    ig_pb_msg m = ig__pb_root(&im.pb, &ig__pb_tensor);
    st = ig__onnx_tensor(&im, &m, "tensor", out, NULL);
out:
    for (int32_t i = 0; i < tmp.n_ext; i++) ig__onnx_blob_close(&tmp.ext[i]);
    ig__free(tmp.ext);
    free(tmp.dir);
    if (st) memset(out, 0, sizeof *out);
    return st;
}

ingot_status ig__onnx_read_tensor_file(const char *path, ig_arena *arena, ig_const *out, ig_err *err)
{
    ig_onnx_blob blob;
    ingot_status st = ig__onnx_blob_open(path, false, "tensor file", &blob, err);
    if (st) return st;
    char *dir = NULL;
    const char *slash = strrchr(path, '/');
    if (slash) {
        dir = ig__malloc((size_t)(slash - path) + 2);
        if (!dir) {
            ig__onnx_blob_close(&blob);
            return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory reading '%s'", path);
        }
        memcpy(dir, path, (size_t)(slash - path) + 1); /* keep the '/': "/x" -> "/" */
        dir[slash - path + 1] = '\0';
    }
    st = ig__onnx_read_tensor_buffer(blob.data, blob.size, dir ? dir : ".", arena, out, err);
    if (st) ig__err_prefix(err, "%s", path);
    ig__free(dir);
    ig__onnx_blob_close(&blob);
    return st;
}
