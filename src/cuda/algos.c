/*
 * algos.c -- the algorithms a CUDA engine's contexts chose, shared by all of them, saved in engine
 * files and timing caches; and the fingerprint of the machine they were chosen on.
 *
 * A choice is keyed by the exact problem the library sees (conv.c / gemm.c describe it: descriptor
 * dims, strides, types, layouts, the fused epilogue, the workspace allowed), so two steps with the
 * same problem share one timing, a context never re-times what another context of the engine timed,
 * and every context runs the same algorithms (their outputs are bit-identical). The choice itself is
 * opaque bytes (an algorithm enum and math type, or cuBLASLt's algorithm struct, which the library
 * documents as serializable for the same library version -- the fingerprint pins the version) and is
 * checked against the library before use (conv.c, gemm.c): a stale or forged one is re-tuned, never
 * run blindly.
 */
#include "cuda_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MAX_KEY    512
#define MAX_CHOICE 128

typedef struct entry {
    char *key;
    uint32_t n;
    uint8_t choice[MAX_CHOICE];
} entry;

struct ig_cu_algos {
    pthread_mutex_t lock;
    int32_t n, cap;   /* entries */
    entry *e;         /* [cap] in insertion order (so files are written the same way every time) */
    uint32_t idx_cap; /* power of two, > 2 * n */
    int32_t *idx;     /* open addressing over e: index + 1, 0 empty */
};

static uint64_t hash(const char *s) { return ig__fnv1a(IG_FNV_SEED, s, strlen(s)); }

ingot_status ig__cu_algos_create(ig_cu_algos **out, ig_err *err)
{
    ig_cu_algos *a = ig__calloc(1, sizeof *a);
    if (!a || pthread_mutex_init(&a->lock, NULL) != 0) {
        ig__free(a);
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    *out = a;
    return INGOT_OK;
}

void ig__cu_algos_destroy(ig_cu_algos *a)
{
    if (!a) return;
    for (int32_t i = 0; i < a->n; i++) ig__free(a->e[i].key);
    ig__free(a->e);
    ig__free(a->idx);
    pthread_mutex_destroy(&a->lock);
    ig__free(a);
}

static int32_t find(const ig_cu_algos *a, const char *key)
{
    if (!a->idx_cap) return -1;
    for (uint32_t i = (uint32_t)hash(key) & (a->idx_cap - 1);; i = (i + 1) & (a->idx_cap - 1)) {
        int32_t k = a->idx[i] - 1;
        if (k < 0) return -1;
        if (!strcmp(a->e[k].key, key)) return k;
    }
}

static bool grow(ig_cu_algos *a)
{
    if (a->n == a->cap) {
        int32_t cap = a->cap ? a->cap * 2 : 32;
        entry *ne = ig__realloc(a->e, sizeof *ne * (size_t)cap);
        if (!ne) return false;
        a->e = ne;
        a->cap = cap;
    }
    if ((uint32_t)(a->n + 1) * 2 >= a->idx_cap) {
        uint32_t cap = a->idx_cap ? a->idx_cap * 2 : 64;
        int32_t *ni = ig__calloc(cap, sizeof *ni);
        if (!ni) return false;
        ig__free(a->idx);
        a->idx = ni;
        a->idx_cap = cap;
        for (int32_t k = 0; k < a->n; k++) {
            uint32_t i = (uint32_t)hash(a->e[k].key) & (cap - 1);
            while (a->idx[i]) i = (i + 1) & (cap - 1);
            a->idx[i] = k + 1;
        }
    }
    return true;
}

/* Insert under the lock; an existing key keeps its first choice (what the other contexts run). */
static ingot_status put_locked(ig_cu_algos *a, const char *key, const void *choice, size_t n, ig_err *err)
{
    if (strlen(key) >= MAX_KEY || n > MAX_CHOICE)
        return ig__errf(err, INGOT_ERR_INTERNAL, "algorithm key or choice too long");
    if (find(a, key) >= 0) return INGOT_OK;
    if (!grow(a)) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    entry *x = &a->e[a->n];
    size_t kl = strlen(key);
    if (!(x->key = ig__malloc(kl + 1))) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(x->key, key, kl + 1);
    x->n = (uint32_t)n;
    memcpy(x->choice, choice, n);
    uint32_t i = (uint32_t)hash(key) & (a->idx_cap - 1);
    while (a->idx[i]) i = (i + 1) & (a->idx_cap - 1);
    a->idx[i] = ++a->n;
    return INGOT_OK;
}

ingot_status ig__cu_algos_put(ig_cu_algos *a, const char *key, const void *choice, size_t n, ig_err *err)
{
    pthread_mutex_lock(&a->lock);
    ingot_status st = put_locked(a, key, choice, n, err);
    pthread_mutex_unlock(&a->lock);
    return st;
}

size_t ig__cu_algos_get(ig_cu_algos *a, const char *key, void *choice, size_t cap)
{
    pthread_mutex_lock(&a->lock);
    int32_t k = find(a, key);
    size_t n = 0;
    if (k >= 0 && a->e[k].n <= cap) {
        n = a->e[k].n;
        memcpy(choice, a->e[k].choice, n);
    }
    pthread_mutex_unlock(&a->lock);
    return n;
}

int32_t ig__cu_algos_count(ig_cu_algos *a)
{
    pthread_mutex_lock(&a->lock);
    int32_t n = a->n;
    pthread_mutex_unlock(&a->lock);
    return n;
}

/* u32 count, then per entry: u32 key length, key, u32 choice length, choice */
static void put32(ig_wbuf *b, uint32_t v) { ig__wbuf_u32(b, v); }

ingot_status ig__cu_algos_write(ig_cu_algos *a, ig_wbuf *b, ig_err *err)
{
    pthread_mutex_lock(&a->lock);
    put32(b, (uint32_t)a->n);
    for (int32_t k = 0; k < a->n; k++) {
        ig__wbuf_str(b, a->e[k].key);
        put32(b, a->e[k].n);
        ig__wbuf_put(b, a->e[k].choice, a->e[k].n);
    }
    pthread_mutex_unlock(&a->lock);
    return b->oom ? ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory") : INGOT_OK;
}

static bool get32(const uint8_t *p, size_t n, size_t *at, uint32_t *v)
{
    if (n - *at < 4) return false;
    const uint8_t *x = p + *at;
    *v = (uint32_t)x[0] | (uint32_t)x[1] << 8 | (uint32_t)x[2] << 16 | (uint32_t)x[3] << 24;
    *at += 4;
    return true;
}

ingot_status ig__cu_algos_read(ig_cu_algos *a, const void *data, size_t n, const char *what, ig_err *err)
{
    const uint8_t *p = data;
    size_t at = 0;
    uint32_t count;
    if (!get32(p, n, &at, &count) || count > (n - at) / 8)
        return ig__errf(err, INGOT_ERR_ENGINE_FILE, "%s: bad entry count", what);
    char key[MAX_KEY];
    ingot_status st = INGOT_OK;
    pthread_mutex_lock(&a->lock);
    for (uint32_t k = 0; k < count && st == INGOT_OK; k++) {
        uint32_t kl, cl;
        if (!get32(p, n, &at, &kl) || kl >= MAX_KEY || kl > n - at) {
            st = ig__errf(err, INGOT_ERR_ENGINE_FILE, "%s: entry %u: bad key length", what, k);
            break;
        }
        memcpy(key, p + at, kl);
        key[kl] = '\0';
        at += kl;
        if (memchr(key, 0, kl)) {
            st = ig__errf(err, INGOT_ERR_ENGINE_FILE, "%s: entry %u: NUL in key", what, k);
            break;
        }
        if (!get32(p, n, &at, &cl) || cl > MAX_CHOICE || cl > n - at) {
            st = ig__errf(err, INGOT_ERR_ENGINE_FILE, "%s: entry %u: bad choice length", what, k);
            break;
        }
        st = put_locked(a, key, p + at, cl, err);
        at += cl;
    }
    pthread_mutex_unlock(&a->lock);
    if (st == INGOT_OK && at != n)
        st = ig__errf(err, INGOT_ERR_ENGINE_FILE, "%s: %zu bytes after the last entry", what, n - at);
    return st;
}

char *ig__cu_tensor_str(const ig_cu_tensor *t, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int32_t k = 0; k < t->rank && at < n; k++)
        at += (size_t)snprintf(buf + at, n - at, "%s%lld:%lld", k ? "," : "", (long long)t->dims[k],
                               (long long)t->strides[k]);
    return buf;
}

/* ---- fingerprint ---- */

ingot_status ig__cuda_fingerprint(int device, ig_cuda_fingerprint *fp, ig_err *err)
{
    memset(fp, 0, sizeof *fp);
    ingot_status st = ig__cuda_probe(err);
    if (st != INGOT_OK) return st;
    struct cudaDeviceProp prop;
    if ((st = IG_CU(err, NULL, cudaGetDeviceProperties(&prop, device))) != INGOT_OK) return st;
    snprintf(fp->device_name, sizeof fp->device_name, "%.127s", prop.name);
    fp->sm_major = prop.major;
    fp->sm_minor = prop.minor;
    if ((st = IG_CU(err, NULL, cudaDriverGetVersion(&fp->driver))) != INGOT_OK ||
        (st = IG_CU(err, NULL, cudaRuntimeGetVersion(&fp->runtime))) != INGOT_OK)
        return st;
    fp->cudnn = cudnnGetVersion();
    fp->cublaslt = cublasLtGetVersion();
    return INGOT_OK;
}
