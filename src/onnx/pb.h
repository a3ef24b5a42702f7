/*
 * pb.h -- a bounds-checked protobuf wire-format reader over one byte buffer.
 *
 * No generated code and no allocation: a message is a byte range [start, end) of the buffer, read
 * field by field with ig__pb_next(). Each message type is described by a small table (field number,
 * name, expected kind, sub-message type) so that the reader can check wire types, name the field in
 * errors and validate nested messages it does not decode (subgraphs kept opaque).
 *
 * Every error is INGOT_ERR_MODEL_PARSE with a message of the form
 *   "ModelProto.graph.node[12].attribute[0].t: length 4000 at byte 1234 runs past the end of its
 *    message (ends at byte 1300)"
 * built from a path the parsers push and pop as they descend. Byte offsets are from the start of
 * the buffer (the file). Nesting is capped at IG_PB_MAX_DEPTH so no input makes the parsers recurse
 * without bound; deprecated groups (wire types 3 and 4) are rejected.
 */
#ifndef INGOT_PB_H
#define INGOT_PB_H

#include "../core/core.h"

#define IG_PB_MAX_DEPTH 100
#define IG_PB_PATH_MAX  8192 /* IG_PB_MAX_DEPTH segments like ".attribute[123]" fit whole */

enum ig_pb_wire {
    IG_PB_VARINT = 0,
    IG_PB_I64 = 1,
    IG_PB_LEN = 2,
    IG_PB_SGROUP = 3,
    IG_PB_EGROUP = 4,
    IG_PB_I32 = 5,
};

/* What a known field holds; decides which wire types are accepted. */
enum ig_pb_kind {
    IG_PBK_VARINT,  /* int32/int64/uint64/enum/bool: wire 0 */
    IG_PBK_I32,     /* float/fixed32: wire 5 */
    IG_PBK_I64,     /* double/fixed64: wire 1 */
    IG_PBK_BYTES,   /* string/bytes: wire 2 */
    IG_PBK_MSG,     /* embedded message: wire 2 */
    IG_PBK_RMSG,    /* repeated embedded message: wire 2 */
    IG_PBK_RVARINT, /* repeated varint: wire 0 (unpacked) or 2 (packed) */
    IG_PBK_RI32,    /* repeated float/fixed32: wire 5 or 2 */
    IG_PBK_RI64,    /* repeated double/fixed64: wire 1 or 2 */
};

typedef struct ig_pb_msgdesc ig_pb_msgdesc;

typedef struct ig_pb_fielddesc {
    uint32_t num;
    uint8_t kind; /* enum ig_pb_kind */
    const char *name;
    const ig_pb_msgdesc *sub; /* IG_PBK_MSG: the message type, for validation (NULL: not checked) */
} ig_pb_fielddesc;

struct ig_pb_msgdesc {
    const char *name;
    int n_fields;
    const ig_pb_fielddesc *fields;
};

/* Shared state of one parse: the buffer, the error record and the current field path. */
typedef struct ig_pb_ctx {
    const uint8_t *buf;
    size_t size;
    ig_err *err;
    int depth;
    size_t path_len;
    size_t path_stack[IG_PB_MAX_DEPTH + 2];
    char path[IG_PB_PATH_MAX];
} ig_pb_ctx;

/* A message being read: fields are taken from [pos, end). */
typedef struct ig_pb_msg {
    ig_pb_ctx *c;
    const ig_pb_msgdesc *desc;
    size_t start, end, pos;
} ig_pb_msg;

typedef struct ig_pb_field {
    uint32_t num;
    uint8_t wire;
    const ig_pb_fielddesc *desc; /* NULL for a field the message type does not list */
    size_t tag_off;              /* byte offset of the tag */
    uint64_t u;                  /* VARINT value, or the I32/I64 bits */
    size_t off, len;             /* LEN: payload offset and length; others: value offset and width */
} ig_pb_field;

/* Start a parse of buf[0, size) whose root message is called root ("ModelProto"). */
void ig__pb_init(ig_pb_ctx *c, const void *buf, size_t size, const char *root, ig_err *err);
/* The root message over the whole buffer. */
ig_pb_msg ig__pb_root(ig_pb_ctx *c, const ig_pb_msgdesc *desc);

/* Read the next field. Returns 1 with *f filled, 0 at the end of the message, -1 on error (err set).
 * Checks framing, bounds and, for listed fields, the wire type. Unknown fields are returned too (the
 * caller ignores them); their bytes are never interpreted. */
int ig__pb_next(ig_pb_msg *m, ig_pb_field *f);

/* Descend into the LEN field f as message type desc, pushing "name" (index < 0) or "name[index]" on
 * the path. Fails when nesting passes IG_PB_MAX_DEPTH. Pair every successful enter with a leave. */
ingot_status ig__pb_enter(ig_pb_msg *parent, const ig_pb_field *f, const ig_pb_msgdesc *desc, const char *name,
                          int64_t index, ig_pb_msg *sub);
void ig__pb_leave(ig_pb_ctx *c);
/* Restart reading m from its first field. */
static inline void ig__pb_rewind(ig_pb_msg *m) { m->pos = m->start; }

/* Walk a whole message, checking framing and wire types of it and of every nested message its
 * descriptor names, recursively (bounded by IG_PB_MAX_DEPTH). For bytes kept opaque. */
ingot_status ig__pb_validate(ig_pb_msg *m);

/* Element count of one occurrence of a repeated scalar field (1 when unpacked, else the packed
 * count), validating packed framing (whole elements, terminated varints). -1 on error. */
int64_t ig__pb_count(ig_pb_msg *m, const ig_pb_field *f);

/* Iterate the elements of a repeated scalar field occurrence that ig__pb_count accepted. */
typedef struct ig_pb_iter {
    const uint8_t *p, *end;
    uint8_t elem_wire; /* IG_PB_VARINT, IG_PB_I32 or IG_PB_I64 */
    uint8_t single;    /* 0: packed; 1: one unpacked value pending; 2: it was returned */
    uint64_t single_val;
} ig_pb_iter;
void ig__pb_iter_init(ig_pb_iter *it, const ig_pb_msg *m, const ig_pb_field *f);
bool ig__pb_iter_next(ig_pb_iter *it, uint64_t *v);

/* The field's display name: "dims" or "field 17". */
const char *ig__pb_field_name(const ig_pb_field *f, char *buf, size_t n);

/* Fail with status at the current path, optionally naming a field (NULL: the message itself):
 * "<path>.<field>: <message>". Returns status. */
ingot_status ig__pb_errf(ig_pb_ctx *c, ingot_status status, const ig_pb_field *f, const char *fmt, ...) IG_PRINTF(4, 5);
/* The current path as text (valid until the next push/pop). */
static inline const char *ig__pb_path(const ig_pb_ctx *c) { return c->path; }

/* Decode one varint at buf[*pos, end). 0 ok, 1 truncated, 2 longer than 10 bytes. */
int ig__pb_varint(const uint8_t *buf, size_t *pos, size_t end, uint64_t *out);

#endif
