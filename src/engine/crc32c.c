/*
 * crc32c.c -- CRC32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78), the checksum of every
 * engine-file section. The weights section is most of a file (100 MB for ResNet-50), so the hardware
 * instruction matters: SSE4.2's crc32 runs one 8-byte step per cycle of throughput (~8 GB/s, ~12 ms
 * for ResNet-50's weights) where the table method does ~1 GB/s.
 */
#include "efile.h"

#include <pthread.h>

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++) table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

/* Slicing by 8: eight table lookups per 8 bytes. */
static uint32_t crc_soft(uint32_t c, const uint8_t *p, size_t n)
{
    pthread_once(&table_once, make_table);
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
            table[3][p[4]] ^ table[2][p[5]] ^ table[1][p[6]] ^ table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--) c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#include <string.h>

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t n)
{
    uint64_t c64 = c;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = _mm_crc32_u64(c64, w);
        p += 8;
        n -= 8;
    }
    c = (uint32_t)c64;
    while (n--) c = _mm_crc32_u8(c, *p++);
    return c;
}

static bool have_hw(void)
{
    static int known; /* 0 unknown, 1 yes, 2 no: a benign race, every thread computes the same */
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (!k) {
        __builtin_cpu_init();
        k = __builtin_cpu_supports("sse4.2") ? 1 : 2;
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return k == 1;
}
#else
static bool have_hw(void) { return false; }
static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t n) { return crc_soft(c, p, n); }
#endif

uint32_t ig__crc32c(uint32_t crc, const void *data, size_t n)
{
    const uint8_t *p = data;
    uint32_t c = ~crc;
    if (n) c = have_hw() ? crc_hw(c, p, n) : crc_soft(c, p, n);
    return ~c;
}

uint32_t ig__crc32c_portable(uint32_t crc, const void *data, size_t n) { return ~crc_soft(~crc, data, n); }
