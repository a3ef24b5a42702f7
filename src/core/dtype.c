/* dtype.c -- element types: names, sizes, half-precision conversion, slow generic accessors. */
#include "core.h"

#include <math.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtypes[INGOT_DTYPE_COUNT] = {
    [INGOT_DTYPE_UNDEFINED] = {"undefined", 0}, [INGOT_DTYPE_FLOAT] = {"float32", 4},
    [INGOT_DTYPE_UINT8] = {"uint8", 1},         [INGOT_DTYPE_INT8] = {"int8", 1},
    [INGOT_DTYPE_UINT16] = {"uint16", 2},       [INGOT_DTYPE_INT16] = {"int16", 2},
    [INGOT_DTYPE_INT32] = {"int32", 4},         [INGOT_DTYPE_INT64] = {"int64", 8},
    [INGOT_DTYPE_STRING] = {"string", 0},       [INGOT_DTYPE_BOOL] = {"bool", 1},
    [INGOT_DTYPE_FLOAT16] = {"float16", 2},     [INGOT_DTYPE_DOUBLE] = {"float64", 8},
    [INGOT_DTYPE_UINT32] = {"uint32", 4},       [INGOT_DTYPE_UINT64] = {"uint64", 8},
    [INGOT_DTYPE_COMPLEX64] = {"complex64", 8}, [INGOT_DTYPE_COMPLEX128] = {"complex128", 16},
    [INGOT_DTYPE_BFLOAT16] = {"bfloat16", 2},
};

const char *ingot_dtype_name(ingot_dtype t) { return (unsigned)t < INGOT_DTYPE_COUNT ? dtypes[t].name : "undefined"; }

size_t ingot_dtype_size(ingot_dtype t) { return (unsigned)t < INGOT_DTYPE_COUNT ? dtypes[t].size : 0; }

bool ig__dtype_supported(int64_t t)
{
    switch (t) {
    case INGOT_DTYPE_FLOAT:
    case INGOT_DTYPE_FLOAT16:
    case INGOT_DTYPE_BFLOAT16:
    case INGOT_DTYPE_DOUBLE:
    case INGOT_DTYPE_INT8:
    case INGOT_DTYPE_INT16:
    case INGOT_DTYPE_INT32:
    case INGOT_DTYPE_INT64:
    case INGOT_DTYPE_UINT8:
    case INGOT_DTYPE_UINT16:
    case INGOT_DTYPE_UINT32:
    case INGOT_DTYPE_UINT64:
    case INGOT_DTYPE_BOOL: return true;
    default: return false;
    }
}

bool ig__dtype_is_float(ingot_dtype t)
{
    return t == INGOT_DTYPE_FLOAT || t == INGOT_DTYPE_FLOAT16 || t == INGOT_DTYPE_BFLOAT16 || t == INGOT_DTYPE_DOUBLE;
}

bool ig__dtype_is_int(ingot_dtype t)
{
    switch (t) {
    case INGOT_DTYPE_UINT8:
    case INGOT_DTYPE_INT8:
    case INGOT_DTYPE_UINT16:
    case INGOT_DTYPE_INT16:
    case INGOT_DTYPE_INT32:
    case INGOT_DTYPE_INT64:
    case INGOT_DTYPE_UINT32:
    case INGOT_DTYPE_UINT64: return true;
    default: return false;
    }
}

bool ig__dtype_is_signed(ingot_dtype t)
{
    return ig__dtype_is_float(t) || t == INGOT_DTYPE_INT8 || t == INGOT_DTYPE_INT16 || t == INGOT_DTYPE_INT32 ||
           t == INGOT_DTYPE_INT64;
}

float ig__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13); /* inf / nan, payload kept */
    } else if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t ig__f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 | ((absx >> 13) & 0x3ff) : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (absx < 0x38800000u) {                                  /* below smallest normal half */
        if (absx < 0x33000000u) return (uint16_t)sign;         /* < 2^-25 rounds to zero */
        uint32_t e = absx >> 23, man = (absx & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t r = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((absx - 0x38000000u) >> 13);
    uint32_t rem = absx & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (uint16_t)(sign | r);
}

static void f32_to_f16_soft(const unsigned char *src, uint16_t *dst, size_t n, bool saturate)
{
    for (size_t i = 0; i < n; i++) {
        float f;
        memcpy(&f, src + 4 * i, 4);
        if (saturate && !isinf(f)) f = f > 65504.f ? 65504.f : f < -65504.f ? -65504.f : f;
        dst[i] = ig__f32_to_f16(f);
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>

__attribute__((target("avx,f16c"))) static void f32_to_f16_f16c(const unsigned char *src, uint16_t *dst, size_t n,
                                                                bool saturate)
{
    const __m256 lim = _mm256_set1_ps(65504.f), nlim = _mm256_set1_ps(-65504.f);
    const __m256 inf = _mm256_set1_ps(INFINITY), absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps((const float *)(const void *)(src + 4 * i));
        if (saturate) { /* clamp the finite values; infinities and NaN (|x| >= inf, unordered) as they are */
            __m256 special = _mm256_cmp_ps(_mm256_and_ps(x, absmask), inf, _CMP_NLT_UQ);
            __m256 c = _mm256_min_ps(_mm256_max_ps(x, nlim), lim);
            x = _mm256_blendv_ps(c, x, special);
        }
        _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
    }
    f32_to_f16_soft(src + 4 * i, dst + i, n - i, saturate);
}

/* AVX and F16C, and the OS saving the YMM registers (cpuid leaf 1, XCR0); __builtin_cpu_supports has no
 * "f16c" in every compiler */
static bool cpu_f16c(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    if (!((c >> 27) & 1) || !((c >> 28) & 1) || !((c >> 29) & 1)) return false; /* OSXSAVE, AVX, F16C */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 6) == 6;
}

static bool have_f16c(void)
{
    static int known; /* 0 unknown, 1 yes, 2 no: a benign race, every thread computes the same */
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (!k) {
        k = cpu_f16c() ? 1 : 2;
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return k == 1;
}
#endif

void ig__f32_to_f16_n(const void *src, uint16_t *dst, size_t n, bool saturate)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (have_f16c()) {
        f32_to_f16_f16c(src, dst, n, saturate);
        return;
    }
#endif
    f32_to_f16_soft(src, dst, n, saturate);
}

float ig__bf16_to_f32(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

uint16_t ig__f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet nan */
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

double ig__elem_f64(ingot_dtype t, const void *data, int64_t i)
{
    const unsigned char *p = data;
    switch (t) {
    case INGOT_DTYPE_FLOAT: return ig__load_f32(p + 4 * i);
    case INGOT_DTYPE_DOUBLE: return ig__load_f64(p + 8 * i);
    case INGOT_DTYPE_FLOAT16: {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        return ig__f16_to_f32(h);
    }
    case INGOT_DTYPE_BFLOAT16: {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        return ig__bf16_to_f32(h);
    }
    case INGOT_DTYPE_UINT64: {
        uint64_t v;
        memcpy(&v, p + 8 * i, 8);
        return (double)v;
    }
    default: return (double)ig__elem_i64(t, data, i);
    }
}

int64_t ig__elem_i64(ingot_dtype t, const void *data, int64_t i)
{
    const unsigned char *p = data;
    switch (t) {
    case INGOT_DTYPE_BOOL: return p[i] != 0;
    case INGOT_DTYPE_UINT8: return p[i];
    case INGOT_DTYPE_INT8: return (int8_t)p[i];
    case INGOT_DTYPE_UINT16: {
        uint16_t v;
        memcpy(&v, p + 2 * i, 2);
        return v;
    }
    case INGOT_DTYPE_INT16: {
        int16_t v;
        memcpy(&v, p + 2 * i, 2);
        return v;
    }
    case INGOT_DTYPE_INT32: return ig__load_i32(p + 4 * i);
    case INGOT_DTYPE_UINT32: {
        uint32_t v;
        memcpy(&v, p + 4 * i, 4);
        return v;
    }
    case INGOT_DTYPE_INT64: return ig__load_i64(p + 8 * i);
    case INGOT_DTYPE_UINT64: {
        uint64_t v;
        memcpy(&v, p + 8 * i, 8);
        return (int64_t)v;
    }
    case INGOT_DTYPE_FLOAT:
    case INGOT_DTYPE_DOUBLE:
    case INGOT_DTYPE_FLOAT16:
    case INGOT_DTYPE_BFLOAT16: {
        double d = ig__elem_f64(t, data, i);
        if (!(d >= -9.2233720368547758e18 && d < 9.2233720368547758e18)) return d > 0 ? INT64_MAX : INT64_MIN;
        return (int64_t)d;
    }
    default: return 0;
    }
}

void ig__elem_set_f64(ingot_dtype t, void *data, int64_t i, double v)
{
    unsigned char *p = data;
    switch (t) {
    case INGOT_DTYPE_FLOAT: {
        float f = (float)v;
        memcpy(p + 4 * i, &f, 4);
        return;
    }
    case INGOT_DTYPE_DOUBLE: memcpy(p + 8 * i, &v, 8); return;
    case INGOT_DTYPE_FLOAT16: {
        uint16_t h = ig__f32_to_f16((float)v);
        memcpy(p + 2 * i, &h, 2);
        return;
    }
    case INGOT_DTYPE_BFLOAT16: {
        uint16_t h = ig__f32_to_bf16((float)v);
        memcpy(p + 2 * i, &h, 2);
        return;
    }
    case INGOT_DTYPE_BOOL: p[i] = v != 0; return;
    default: {
        int64_t x = isnan(v)                      ? 0
                    : v >= 9.2233720368547758e18  ? INT64_MAX
                    : v <= -9.2233720368547758e18 ? INT64_MIN
                                                  : (int64_t)v;
        ig__elem_set_i64(t, data, i, x);
        return;
    }
    }
}

void ig__elem_set_i64(ingot_dtype t, void *data, int64_t i, int64_t v)
{
    unsigned char *p = data;
    switch (t) {
    case INGOT_DTYPE_BOOL: p[i] = v != 0; return;
    case INGOT_DTYPE_UINT8:
    case INGOT_DTYPE_INT8: p[i] = (unsigned char)v; return;
    case INGOT_DTYPE_UINT16:
    case INGOT_DTYPE_INT16: {
        uint16_t x = (uint16_t)v;
        memcpy(p + 2 * i, &x, 2);
        return;
    }
    case INGOT_DTYPE_UINT32:
    case INGOT_DTYPE_INT32: {
        uint32_t x = (uint32_t)v;
        memcpy(p + 4 * i, &x, 4);
        return;
    }
    case INGOT_DTYPE_UINT64:
    case INGOT_DTYPE_INT64: memcpy(p + 8 * i, &v, 8); return;
    case INGOT_DTYPE_FLOAT:
    case INGOT_DTYPE_DOUBLE:
    case INGOT_DTYPE_FLOAT16:
    case INGOT_DTYPE_BFLOAT16: ig__elem_set_f64(t, data, i, (double)v); return;
    default: return;
    }
}
