/* pb.c -- the protobuf wire-format reader: framing, bounds, wire types, paths and messages. */
#include "pb.h"

#include <inttypes.h>
#include <stdio.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX reader references little-endian tensor bytes in place: big-endian hosts are not supported"
#endif

static const char *wire_name(unsigned w)
{
    switch (w) {
    case IG_PB_VARINT: return "varint";
    case IG_PB_I64: return "fixed64";
    case IG_PB_LEN: return "length-delimited";
    case IG_PB_SGROUP: return "start-group";
    case IG_PB_EGROUP: return "end-group";
    case IG_PB_I32: return "fixed32";
    default: return "invalid";
    }
}

static const char *kind_expect(unsigned k)
{
    switch (k) {
    case IG_PBK_VARINT: return "varint (0)";
    case IG_PBK_I32: return "fixed32 (5)";
    case IG_PBK_I64: return "fixed64 (1)";
    case IG_PBK_BYTES:
    case IG_PBK_MSG:
    case IG_PBK_RMSG: return "length-delimited (2)";
    case IG_PBK_RVARINT: return "varint (0) or packed length-delimited (2)";
    case IG_PBK_RI32: return "fixed32 (5) or packed length-delimited (2)";
    case IG_PBK_RI64: return "fixed64 (1) or packed length-delimited (2)";
    default: return "?";
    }
}

static bool kind_accepts(unsigned k, unsigned w)
{
    switch (k) {
    case IG_PBK_VARINT: return w == IG_PB_VARINT;
    case IG_PBK_I32: return w == IG_PB_I32;
    case IG_PBK_I64: return w == IG_PB_I64;
    case IG_PBK_BYTES:
    case IG_PBK_MSG:
    case IG_PBK_RMSG: return w == IG_PB_LEN;
    case IG_PBK_RVARINT: return w == IG_PB_VARINT || w == IG_PB_LEN;
    case IG_PBK_RI32: return w == IG_PB_I32 || w == IG_PB_LEN;
    case IG_PBK_RI64: return w == IG_PB_I64 || w == IG_PB_LEN;
    default: return false;
    }
}

void ig__pb_init(ig_pb_ctx *c, const void *buf, size_t size, const char *root, ig_err *err)
{
    c->buf = buf;
    c->size = size;
    c->err = err;
    c->depth = 0;
    snprintf(c->path, sizeof c->path, "%s", root);
    c->path_len = strlen(c->path);
}

ig_pb_msg ig__pb_root(ig_pb_ctx *c, const ig_pb_msgdesc *desc)
{
    ig_pb_msg m = {c, desc, 0, c->size, 0};
    return m;
}

ingot_status ig__pb_errf(ig_pb_ctx *c, ingot_status status, const ig_pb_field *f, const char *fmt, ...)
{
    if (!c->err || c->err->status != INGOT_OK) return status;
    char body[IG_ERRMSG_MAX], fname[48];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    /* a deep path keeps its head and tail, so the message still shows where and what */
    char path[320];
    if (c->path_len < sizeof path)
        memcpy(path, c->path, c->path_len + 1);
    else
        snprintf(path, sizeof path, "%.100s ... %s", c->path, c->path + c->path_len - 200);
    if (f) return ig__errf(c->err, status, "%s.%s: %s", path, ig__pb_field_name(f, fname, sizeof fname), body);
    return ig__errf(c->err, status, "%s: %s", path, body);
}

const char *ig__pb_field_name(const ig_pb_field *f, char *buf, size_t n)
{
    if (f->desc) return f->desc->name;
    snprintf(buf, n, "field %" PRIu32, f->num);
    return buf;
}

int ig__pb_varint(const uint8_t *buf, size_t *pos, size_t end, uint64_t *out)
{
    uint64_t v = 0;
    size_t p = *pos;
    for (unsigned i = 0; i < 10; i++) {
        if (p >= end) return 1;
        uint8_t b = buf[p++];
        v |= (uint64_t)(b & 0x7f) << (7 * i); /* bits past 64 in the 10th byte are dropped, as protobuf does */
        if (!(b & 0x80)) {
            *out = v;
            *pos = p;
            return 0;
        }
    }
    return 2;
}

/* Read a varint for the message m at m->pos; what names it in errors ("tag", "length of field x"). */
static int read_varint(ig_pb_msg *m, const ig_pb_field *f, const char *what, uint64_t *out)
{
    size_t at = m->pos;
    int r = ig__pb_varint(m->c->buf, &m->pos, m->end, out);
    if (r == 1) {
        ig__pb_errf(m->c, INGOT_ERR_MODEL_PARSE, f,
                    "truncated varint (%s) at byte %zu: the message ends at byte %zu before its last byte", what, at,
                    m->end);
        return -1;
    }
    if (r == 2) {
        ig__pb_errf(m->c, INGOT_ERR_MODEL_PARSE, f, "varint (%s) at byte %zu is longer than 10 bytes", what, at);
        return -1;
    }
    return 0;
}

static const ig_pb_fielddesc *find_field(const ig_pb_msgdesc *d, uint32_t num)
{
    if (!d) return NULL;
    for (int i = 0; i < d->n_fields; i++)
        if (d->fields[i].num == num) return &d->fields[i];
    return NULL;
}

int ig__pb_next(ig_pb_msg *m, ig_pb_field *f)
{
    if (m->pos >= m->end) return 0;
    memset(f, 0, sizeof *f);
    f->tag_off = m->pos;
    uint64_t tag;
    if (read_varint(m, NULL, "field tag", &tag)) return -1;
    uint64_t num = tag >> 3;
    unsigned wire = (unsigned)(tag & 7);
    if (num == 0 || num > 536870911u) {
        ig__pb_errf(m->c, INGOT_ERR_MODEL_PARSE, NULL,
                    "invalid field number %" PRIu64 " in the tag at byte %zu (not a protobuf message, or corrupt)", num,
                    f->tag_off);
        return -1;
    }
    f->num = (uint32_t)num;
    f->wire = (uint8_t)wire;
    f->desc = find_field(m->desc, f->num);
    char fname[48];
    switch (wire) {
    case IG_PB_VARINT:
        f->off = m->pos;
        if (read_varint(m, f, "value", &f->u)) return -1;
        f->len = m->pos - f->off;
        break;
    case IG_PB_I64:
    case IG_PB_I32: {
        size_t w = wire == IG_PB_I64 ? 8 : 4;
        if (m->end - m->pos < w) {
            ig__pb_errf(m->c, INGOT_ERR_MODEL_PARSE, f,
                        "%s value at byte %zu runs past the end of its message (ends at byte %zu)", wire_name(wire),
                        m->pos, m->end);
            return -1;
        }
        f->off = m->pos;
        f->len = w;
        f->u = 0;
        memcpy(&f->u, m->c->buf + m->pos, w); /* little-endian host */
        m->pos += w;
        break;
    }
    case IG_PB_LEN: {
        size_t at = m->pos;
        uint64_t len;
        if (read_varint(m, f, "length", &len)) return -1;
        if (len > m->end - m->pos) {
            ig__pb_errf(m->c, INGOT_ERR_MODEL_PARSE, f,
                        "length %" PRIu64 " at byte %zu runs past the end of its message (ends at byte %zu)", len, at,
                        m->end);
            return -1;
        }
        f->off = m->pos;
        f->len = (size_t)len;
        m->pos += (size_t)len;
        break;
    }
    case IG_PB_SGROUP:
    case IG_PB_EGROUP:
        ig__pb_errf(m->c, INGOT_ERR_MODEL_PARSE, f,
                    "%s (wire type %u) at byte %zu: deprecated protobuf groups are not supported (ONNX never uses "
                    "them; the file is corrupt or not an ONNX model)",
                    wire_name(wire), wire, f->tag_off);
        return -1;
    default:
        ig__pb_errf(m->c, INGOT_ERR_MODEL_PARSE, NULL, "invalid wire type %u in the tag of %s at byte %zu", wire,
                    ig__pb_field_name(f, fname, sizeof fname), f->tag_off);
        return -1;
    }
    if (f->desc && !kind_accepts(f->desc->kind, wire)) {
        ig__pb_errf(m->c, INGOT_ERR_MODEL_PARSE, f, "wire type %u (%s) at byte %zu, expected %s", wire, wire_name(wire),
                    f->tag_off, kind_expect(f->desc->kind));
        return -1;
    }
    return 1;
}

static ingot_status push(ig_pb_ctx *c, const char *name, int64_t index)
{
    if (c->depth >= IG_PB_MAX_DEPTH)
        return ig__pb_errf(c, INGOT_ERR_MODEL_PARSE, NULL,
                           "messages nested deeper than %d levels (subgraphs inside subgraphs?)", IG_PB_MAX_DEPTH);
    c->path_stack[c->depth++] = c->path_len;
    size_t room = sizeof c->path - c->path_len;
    int n;
    if (index >= 0)
        n = snprintf(c->path + c->path_len, room, ".%s[%" PRId64 "]", name, index);
    else
        n = snprintf(c->path + c->path_len, room, ".%s", name);
    /* A path too long for the buffer is cut; the depth stack still restores it exactly. */
    c->path_len = n < 0 ? c->path_len : ((size_t)n >= room ? sizeof c->path - 1 : c->path_len + (size_t)n);
    return INGOT_OK;
}

void ig__pb_leave(ig_pb_ctx *c)
{
    IG_ASSERT(c->depth > 0);
    c->path_len = c->path_stack[--c->depth];
    c->path[c->path_len] = '\0';
}

ingot_status ig__pb_enter(ig_pb_msg *parent, const ig_pb_field *f, const ig_pb_msgdesc *desc, const char *name,
                          int64_t index, ig_pb_msg *sub)
{
    IG_ASSERT(f->wire == IG_PB_LEN);
    ingot_status st = push(parent->c, name, index);
    if (st) return st;
    sub->c = parent->c;
    sub->desc = desc;
    sub->start = sub->pos = f->off;
    sub->end = f->off + f->len;
    return INGOT_OK;
}

int64_t ig__pb_count(ig_pb_msg *m, const ig_pb_field *f)
{
    if (f->wire != IG_PB_LEN) return 1;
    unsigned kind = f->desc ? f->desc->kind : IG_PBK_RVARINT;
    if (kind == IG_PBK_RI32 || kind == IG_PBK_RI64) {
        size_t w = kind == IG_PBK_RI32 ? 4 : 8;
        if (f->len % w) {
            ig__pb_errf(m->c, INGOT_ERR_MODEL_PARSE, f,
                        "packed %s data at byte %zu has %zu bytes, not a multiple of %zu",
                        w == 4 ? "fixed32" : "fixed64", f->off, f->len, w);
            return -1;
        }
        return (int64_t)(f->len / w);
    }
    /* packed varints: one element per byte without the continuation bit */
    const uint8_t *p = m->c->buf + f->off;
    int64_t n = 0;
    unsigned run = 0;
    for (size_t i = 0; i < f->len; i++) {
        if (p[i] & 0x80) {
            if (++run >= 10) {
                ig__pb_errf(m->c, INGOT_ERR_MODEL_PARSE, f, "packed varint at byte %zu is longer than 10 bytes",
                            f->off + i + 1 - run);
                return -1;
            }
        } else {
            run = 0;
            n++;
        }
    }
    if (run) {
        ig__pb_errf(m->c, INGOT_ERR_MODEL_PARSE, f,
                    "packed varints at byte %zu: the last one is truncated at the field's end (byte %zu)", f->off,
                    f->off + f->len);
        return -1;
    }
    return n;
}

void ig__pb_iter_init(ig_pb_iter *it, const ig_pb_msg *m, const ig_pb_field *f)
{
    memset(it, 0, sizeof *it);
    if (f->wire != IG_PB_LEN) {
        it->single = 1;
        it->single_val = f->u;
        it->elem_wire = f->wire;
        return;
    }
    unsigned kind = f->desc ? f->desc->kind : IG_PBK_RVARINT;
    it->elem_wire = kind == IG_PBK_RI32 ? IG_PB_I32 : kind == IG_PBK_RI64 ? IG_PB_I64 : IG_PB_VARINT;
    it->p = m->c->buf + f->off;
    it->end = it->p + f->len;
}

bool ig__pb_iter_next(ig_pb_iter *it, uint64_t *v)
{
    if (it->single) {
        if (it->single == 2) return false;
        it->single = 2;
        *v = it->single_val;
        return true;
    }
    if (it->p >= it->end) return false;
    if (it->elem_wire == IG_PB_I32) {
        uint32_t x;
        memcpy(&x, it->p, 4);
        it->p += 4;
        *v = x;
    } else if (it->elem_wire == IG_PB_I64) {
        memcpy(v, it->p, 8);
        it->p += 8;
    } else {
        /* validated by ig__pb_count, so every varint ends before it->end */
        size_t pos = 0;
        if (ig__pb_varint(it->p, &pos, (size_t)(it->end - it->p), v)) return false;
        it->p += pos;
    }
    return true;
}

ingot_status ig__pb_validate(ig_pb_msg *m)
{
    ig_pb_field f;
    int r;
    int64_t seen[64] = {0}; /* occurrences per descriptor entry, to name repeated messages "node[3]" */
    while ((r = ig__pb_next(m, &f)) > 0) {
        if (!f.desc) continue;
        if ((f.desc->kind == IG_PBK_MSG || f.desc->kind == IG_PBK_RMSG) && f.desc->sub) {
            ptrdiff_t k = f.desc - m->desc->fields;
            int64_t index = -1;
            if (f.desc->kind == IG_PBK_RMSG) index = k < 64 ? seen[k]++ : 0;
            ig_pb_msg sub;
            ingot_status st = ig__pb_enter(m, &f, f.desc->sub, f.desc->name, index, &sub);
            if (st) return st;
            st = ig__pb_validate(&sub);
            if (st) return st;
            ig__pb_leave(m->c);
        } else if (f.desc->kind >= IG_PBK_RVARINT && ig__pb_count(m, &f) < 0) {
            return INGOT_ERR_MODEL_PARSE;
        }
    }
    return r < 0 ? INGOT_ERR_MODEL_PARSE : INGOT_OK;
}
