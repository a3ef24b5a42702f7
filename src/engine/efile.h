/*
 * efile.h -- the engine file's container (docs/ENGINE_FILE.md): a header, a table of sections and
 * the sections' bytes, each section with its own alignment and CRC32C; and the little-endian records
 * the metadata sections are written in. Knows nothing of engines, graphs or devices: src/api decides
 * what goes into which section. No CUDA header.
 *
 * Reading is defensive: every offset, size and count read from the file is checked against the bytes
 * that are there, with overflow-safe arithmetic, before anything is allocated or dereferenced, and
 * every failure names the section and the field (INGOT_ERR_ENGINE_FILE).
 */
#ifndef INGOT_ENGINE_EFILE_H
#define INGOT_ENGINE_EFILE_H

#include "../core/core.h"

#define IG_EFILE_MAGIC       "INGOTENG"
#define IG_EFILE_VERSION     2u  /* 2: OPTS records mem_limit and deterministic */
#define IG_EFILE_HEADER      64u /* bytes of the header */
#define IG_EFILE_ENTRY       32u /* bytes of one section table entry */
#define IG_EFILE_MAX_SECTION 64  /* sections a file may have */

/* Section kinds: four ASCII characters, read as a little-endian uint32. */
#define IG_FOURCC(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define IG_SEC_FINGERPRINT    IG_FOURCC('F', 'P', 'R', 'T')
#define IG_SEC_OPTIONS        IG_FOURCC('O', 'P', 'T', 'S')
#define IG_SEC_GRAPH          IG_FOURCC('G', 'R', 'P', 'H')
#define IG_SEC_WEIGHTS        IG_FOURCC('W', 'G', 'H', 'T')
#define IG_SEC_PROVENANCE     IG_FOURCC('P', 'R', 'O', 'V')
#define IG_SEC_PLANS          IG_FOURCC('P', 'L', 'A', 'N')
#define IG_SEC_ALGORITHMS     IG_FOURCC('A', 'L', 'G', 'O')

/* "FPRT" for a kind (buf of at least 5 bytes; non-printable bytes as '?'). */
const char *ig__efile_kind_str(uint32_t kind, char *buf);

/* CRC32C (Castagnoli), as iSCSI and ext4 use it; crc of the empty string is 0. Hardware instructions
 * where the CPU has them (SSE4.2, ARMv8 CRC). */
uint32_t ig__crc32c(uint32_t crc, const void *data, size_t n);
/* The same by tables only (what machines without the instructions run; for tests). */
uint32_t ig__crc32c_portable(uint32_t crc, const void *data, size_t n);

/* ---- little-endian records (written with core.h's ig_wbuf) ---- */

/* A reader over one section. The first failure is kept in *err (naming the section, the field and
 * the byte offset) and makes every later read return 0 / "" / false, so a parser can read a whole
 * record and check once. */
typedef struct ig_rbuf {
    const uint8_t *p;
    size_t n, pos;
    const char *section; /* for messages */
    ig_err *err;
    bool failed;
} ig_rbuf;

void ig__rbuf_init(ig_rbuf *r, const void *p, size_t n, const char *section, ig_err *err);
uint32_t ig__rbuf_u32(ig_rbuf *r, const char *field);
uint64_t ig__rbuf_u64(ig_rbuf *r, const char *field);
int64_t ig__rbuf_i64(ig_rbuf *r, const char *field);
double ig__rbuf_f64(ig_rbuf *r, const char *field);
/* A u32 in [lo, hi]; a value outside fails naming the field and the range. */
uint32_t ig__rbuf_range(ig_rbuf *r, const char *field, uint32_t lo, uint32_t hi);
/* A count of records of at least min_bytes each that must all fit in what is left (so a crafted
 * count cannot make the caller allocate or loop more than the file's size allows), at most max. */
uint32_t ig__rbuf_count(ig_rbuf *r, const char *field, size_t min_bytes, uint32_t max);
/* A string copied into arena (NUL-terminated); its length at most max_len. "" on failure. */
const char *ig__rbuf_str(ig_rbuf *r, const char *field, size_t max_len, ig_arena *arena);
/* Fail with a message naming the field (for checks the caller makes on values it read). */
bool ig__rbuf_fail(ig_rbuf *r, const char *field, const char *fmt, ...) IG_PRINTF(3, 4);
/* Every byte was read (trailing garbage is an error). */
bool ig__rbuf_done(ig_rbuf *r);

/* ---- writing a container ---- */

typedef struct ig_efile_sec {
    uint32_t kind;
    uint32_t align; /* of the section's offset in the file: a power of two, >= 8 */
    const void *data;
    size_t size;
} ig_efile_sec;

/* Where the bytes of a file go, in order (a FILE, a buffer); an error stops the writing. */
typedef ingot_status (*ig_efile_sink)(void *user, const void *data, size_t n, ig_err *err);
/* The whole file for sections[0 .. n): header, table, each section at its alignment with zero padding,
 * CRCs computed; the sections' bytes are passed through, never copied. */
ingot_status ig__efile_emit(const ig_efile_sec *sections, int32_t n, ig_efile_sink sink, void *user, ig_err *err);
/* The same into out (freed by the caller). */
ingot_status ig__efile_write(const ig_efile_sec *sections, int32_t n, ig_wbuf *out, ig_err *err);

/* ---- reading a container ---- */

typedef struct ig_efile {
    const uint8_t *data;
    size_t size;
    uint32_t version;
    int32_t n_sections;
    ig_efile_sec sec[IG_EFILE_MAX_SECTION];
    uint32_t crc[IG_EFILE_MAX_SECTION];
} ig_efile;

/* Parse and check the header and the section table over data[0 .. size) (which must stay mapped):
 * magic, version, sizes, every section inside the file, aligned, not overlapping the header, the
 * table or another section, no kind twice, and the CRC of every section except those whose kind is
 * in skip_crc[0 .. n_skip) (checked later, or not at all, by the caller). */
ingot_status ig__efile_open(const void *data, size_t size, const uint32_t *skip_crc, int32_t n_skip, ig_efile *ef,
                            ig_err *err);
/* The section of that kind, or NULL (required: an error naming it when absent). */
const ig_efile_sec *ig__efile_find(const ig_efile *ef, uint32_t kind);
ingot_status ig__efile_require(const ig_efile *ef, uint32_t kind, const ig_efile_sec **out, ig_err *err);
/* Check the CRC of one section (one whose check ig__efile_open skipped). */
ingot_status ig__efile_verify(const ig_efile *ef, const ig_efile_sec *s, ig_err *err);

#endif /* INGOT_ENGINE_EFILE_H */
