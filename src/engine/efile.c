/*
 * efile.c -- the engine file's container: header, section table, sections (efile.h). Layout, all
 * integers little-endian:
 *
 *   header (64 bytes)  magic "INGOTENG" | u32 version | u32 header size (64) | u32 sections |
 *                      u32 entry size (32) | u64 table offset | u64 file size | u32 table CRC |
 *                      u32 flags (0) | 12 zero bytes | u32 CRC of the 60 bytes before it
 *   table              per section: u32 kind | u32 alignment | u64 offset | u64 size | u32 CRC |
 *                      u32 zero
 *   sections           each at a multiple of its alignment, zero padding between
 */
#include "efile.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *ig__efile_kind_str(uint32_t kind, char *buf)
{
    for (int i = 0; i < 4; i++) {
        char c = (char)(kind >> (8 * i));
        buf[i] = c >= 0x20 && c < 0x7f ? c : '?';
    }
    buf[4] = '\0';
    return buf;
}

static bool pow2(uint64_t a) { return a && !(a & (a - 1)); }

ingot_status ig__efile_emit(const ig_efile_sec *sections, int32_t n, ig_efile_sink sink, void *user, ig_err *err)
{
    if (n < 0 || n > IG_EFILE_MAX_SECTION)
        return ig__errf(err, INGOT_ERR_INTERNAL, "engine file: %d sections (at most %d)", (int)n, IG_EFILE_MAX_SECTION);
    /* the layout first: each section at its alignment after the table */
    uint8_t head[IG_EFILE_HEADER + IG_EFILE_MAX_SECTION * IG_EFILE_ENTRY];
    size_t table_bytes = (size_t)n * IG_EFILE_ENTRY;
    memset(head, 0, sizeof head);
    uint64_t off[IG_EFILE_MAX_SECTION], at = IG_EFILE_HEADER + table_bytes;
    for (int32_t i = 0; i < n; i++) {
        const ig_efile_sec *s = &sections[i];
        if (!pow2(s->align) || s->align < 8)
            return ig__errf(err, INGOT_ERR_INTERNAL, "engine file: section %d alignment %u", (int)i, s->align);
        at = (at + s->align - 1) & ~(uint64_t)(s->align - 1);
        off[i] = at;
        at += s->size;
    }
    uint8_t *t = head + IG_EFILE_HEADER;
    for (int32_t i = 0; i < n; i++) {
        const ig_efile_sec *s = &sections[i];
        uint8_t *e = t + (size_t)i * IG_EFILE_ENTRY;
        ig__put_le32(e, s->kind);
        ig__put_le32(e + 4, s->align);
        ig__put_le64(e + 8, off[i]);
        ig__put_le64(e + 16, s->size);
        ig__put_le32(e + 24, ig__crc32c(0, s->data, s->size));
    }
    memcpy(head, IG_EFILE_MAGIC, 8);
    ig__put_le32(head + 8, IG_EFILE_VERSION);
    ig__put_le32(head + 12, IG_EFILE_HEADER);
    ig__put_le32(head + 16, (uint32_t)n);
    ig__put_le32(head + 20, IG_EFILE_ENTRY);
    ig__put_le64(head + 24, IG_EFILE_HEADER);
    ig__put_le64(head + 32, at);
    ig__put_le32(head + 40, ig__crc32c(0, t, table_bytes));
    ig__put_le32(head + 60, ig__crc32c(0, head, 60));
    static const uint8_t zeros[4096];
    ingot_status st = sink(user, head, IG_EFILE_HEADER + table_bytes, err);
    uint64_t pos = IG_EFILE_HEADER + table_bytes;
    for (int32_t i = 0; i < n && st == INGOT_OK; i++) {
        while (pos < off[i] && st == INGOT_OK) {
            size_t pad = off[i] - pos < sizeof zeros ? (size_t)(off[i] - pos) : sizeof zeros;
            st = sink(user, zeros, pad, err);
            pos += pad;
        }
        if (st == INGOT_OK && sections[i].size) st = sink(user, sections[i].data, sections[i].size, err);
        pos += sections[i].size;
    }
    return st;
}

static ingot_status to_wbuf(void *user, const void *data, size_t n, ig_err *err)
{
    ig_wbuf *b = user;
    ig__wbuf_put(b, data, n);
    return b->oom ? ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory writing the engine file") : INGOT_OK;
}

ingot_status ig__efile_write(const ig_efile_sec *sections, int32_t n, ig_wbuf *out, ig_err *err)
{
    memset(out, 0, sizeof *out);
    ingot_status st = ig__efile_emit(sections, n, to_wbuf, out, err);
    if (st != INGOT_OK) ig__wbuf_free(out);
    return st;
}

static ingot_status bad(ig_err *err, const char *fmt, ...) IG_PRINTF(2, 3);
static ingot_status bad(ig_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char why[768];
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return ig__errf(err, INGOT_ERR_ENGINE_FILE, "engine file: %s", why);
}

ingot_status ig__efile_verify(const ig_efile *ef, const ig_efile_sec *s, ig_err *err)
{
    int32_t i = (int32_t)(s - ef->sec);
    char k[5];
    uint32_t crc = ig__crc32c(0, s->data, s->size);
    if (crc != ef->crc[i])
        return bad(err,
                   "section %s (%zu bytes at byte %zu): checksum %08" PRIx32 ", the table says %08" PRIx32
                   " (the file is damaged)",
                   ig__efile_kind_str(s->kind, k), s->size, (size_t)((const uint8_t *)s->data - ef->data), crc,
                   ef->crc[i]);
    return INGOT_OK;
}

ingot_status ig__efile_open(const void *data, size_t size, const uint32_t *skip_crc, int32_t n_skip, ig_efile *ef,
                            ig_err *err)
{
    memset(ef, 0, sizeof *ef);
    const uint8_t *h = data;
    ef->data = h;
    ef->size = size;
    if (size < IG_EFILE_HEADER || memcmp(h, IG_EFILE_MAGIC, 8) != 0) {
        if (size >= 8 && h[0] == 0x08) /* ModelProto starts with field 1 (ir_version), a varint */
            return bad(err, "no engine-file header (this looks like an ONNX model: build it with `ingot build`)");
        return bad(err, "no engine-file header (%zu bytes; an engine file starts with \"%s\")", size, IG_EFILE_MAGIC);
    }
    uint32_t version = ig__get_le32(h + 8);
    if (version != IG_EFILE_VERSION)
        return ig__errf(err, INGOT_ERR_ENGINE_MISMATCH,
                        "engine file: format version %" PRIu32 ", this ingot reads version %u; rebuild the engine "
                        "from its ONNX model",
                        version, IG_EFILE_VERSION);
    if (ig__get_le32(h + 60) != ig__crc32c(0, h, 60)) return bad(err, "header checksum mismatch (the file is damaged)");
    uint32_t hs = ig__get_le32(h + 12), n = ig__get_le32(h + 16), es = ig__get_le32(h + 20);
    uint64_t table = ig__get_le64(h + 24), fsize = ig__get_le64(h + 32);
    if (hs != IG_EFILE_HEADER || es != IG_EFILE_ENTRY)
        return bad(err, "header size %" PRIu32 " / entry size %" PRIu32 ", expected %u / %u", hs, es, IG_EFILE_HEADER,
                   IG_EFILE_ENTRY);
    if (fsize != size)
        return bad(err, "the header says the file has %" PRIu64 " bytes, it has %zu (%s)", fsize, size,
                   fsize > size ? "truncated" : "bytes appended");
    if (n > IG_EFILE_MAX_SECTION) return bad(err, "%" PRIu32 " sections, at most %d", n, IG_EFILE_MAX_SECTION);
    uint64_t tbytes = (uint64_t)n * IG_EFILE_ENTRY;
    if (table < IG_EFILE_HEADER || table > size || tbytes > size - table)
        return bad(err, "section table at byte %" PRIu64 " (%" PRIu64 " bytes) lies outside the file", table, tbytes);
    const uint8_t *t = h + table;
    if (ig__get_le32(h + 40) != ig__crc32c(0, t, (size_t)tbytes))
        return bad(err, "section table checksum mismatch (the file is damaged)");
    ef->version = version;
    ef->n_sections = (int32_t)n;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = t + (size_t)i * IG_EFILE_ENTRY;
        uint32_t kind = ig__get_le32(e), align = ig__get_le32(e + 4), crc = ig__get_le32(e + 24);
        uint64_t off = ig__get_le64(e + 8), sz = ig__get_le64(e + 16);
        char k[5];
        ig__efile_kind_str(kind, k);
        if (!pow2(align) || align < 8 || off % align)
            return bad(err, "section %s: offset %" PRIu64 " is not a multiple of its alignment %" PRIu32, k, off,
                       align);
        if (off > size || sz > size - off)
            return bad(err,
                       "section %s: %" PRIu64 " bytes at byte %" PRIu64 " run past the end of the file (%zu bytes)", k,
                       sz, off, size);
        if (sz > 0 && off < table + tbytes)
            return bad(err, "section %s at byte %" PRIu64 " overlaps the header or the section table", k, off);
        for (uint32_t j = 0; j < i; j++) {
            const ig_efile_sec *o = &ef->sec[j];
            uint64_t ooff = (uint64_t)((const uint8_t *)o->data - h);
            if (o->kind == kind) return bad(err, "section %s appears twice", k);
            if (sz && o->size && off < ooff + o->size && ooff < off + sz)
                return bad(err, "section %s overlaps section %s", k, ig__efile_kind_str(o->kind, (char[5]){0}));
        }
        ef->sec[i] = (ig_efile_sec){kind, align, h + off, (size_t)sz};
        ef->crc[i] = crc;
    }
    /* every byte outside the header, the table and the sections is padding and must be zero, so that
     * no change to a file goes unnoticed */
    int32_t idx[IG_EFILE_MAX_SECTION];
    for (int32_t i = 0; i < ef->n_sections; i++) {
        int32_t j = i;
        for (; j > 0 && ef->sec[idx[j - 1]].data > ef->sec[i].data; j--) idx[j] = idx[j - 1];
        idx[j] = i;
    }
    size_t at = (size_t)(table + tbytes);
    for (int32_t k = 0; k <= ef->n_sections; k++) {
        const ig_efile_sec *s = k < ef->n_sections ? &ef->sec[idx[k]] : NULL;
        size_t end = s ? (size_t)((const uint8_t *)s->data - h) : size;
        for (size_t b = at; b < end; b++)
            if (h[b]) return bad(err, "byte %zu lies between sections and is not zero (the file is damaged)", b);
        if (s && end + s->size > at) at = end + s->size;
    }
    for (int32_t i = 0; i < ef->n_sections; i++) {
        bool skip = false;
        for (int32_t j = 0; j < n_skip; j++) skip = skip || skip_crc[j] == ef->sec[i].kind;
        ingot_status st;
        if (!skip && (st = ig__efile_verify(ef, &ef->sec[i], err)) != INGOT_OK) return st;
    }
    return INGOT_OK;
}

const ig_efile_sec *ig__efile_find(const ig_efile *ef, uint32_t kind)
{
    for (int32_t i = 0; i < ef->n_sections; i++)
        if (ef->sec[i].kind == kind) return &ef->sec[i];
    return NULL;
}

ingot_status ig__efile_require(const ig_efile *ef, uint32_t kind, const ig_efile_sec **out, ig_err *err)
{
    char k[5];
    if (!(*out = ig__efile_find(ef, kind))) return bad(err, "section %s is missing", ig__efile_kind_str(kind, k));
    return INGOT_OK;
}
