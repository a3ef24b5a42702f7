/*
 * gemm.c -- fp32 matrix multiply for the CPU backend.
 *
 * The classic GotoBLAS/BLIS structure: C is computed in blocks of MC x NC; for each KC slice of the
 * inner dimension a block of op(B) (KC x NC) and a block of op(A) (MC x KC) are packed into panels
 * laid out exactly as the register micro-kernel reads them (NR columns of B, MR rows of A per step of
 * k), so the kernel streams contiguous, aligned memory whatever the transposes and strides were. The
 * micro-kernel keeps an MR x NR tile of C in registers for the whole KC loop.
 *
 * The micro-kernel is portable C (GCC/Clang vector extensions; no intrinsics, no assembly). It is
 * instantiated three times: a generic one the baseline compiler flags vectorise (SSE2 on x86-64,
 * NEON on arm64), and on x86-64 an AVX2+FMA and an AVX-512 one compiled through target attributes and
 * picked at run time from the CPU's features, so one binary built with default flags runs at full
 * speed on new CPUs and correctly on old ones.
 *
 * Threads split the tiles of each packed block (column panels first, so each thread keeps its own B
 * panel in L1 while it walks the shared A block); packing is split the same way. Small products
 * (a vector times a matrix, or a handful of flops) skip packing altogether.
 */
#include "cpu.h"

#include <stdint.h>

/* GCC only fuses a*b+c into an FMA in ISO C mode (-std=c11) when told to; the micro-kernels rely on
 * it. Clang contracts within an expression by default, which is all the kernels need. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")
#define IG_UNROLL(n) _Pragma("GCC unroll 16")
#elif defined(__clang__)
#define IG_UNROLL(n) _Pragma("unroll")
#else
#define IG_UNROLL(n)
#endif

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define IG_GEMM_X86 1
#endif

typedef void (*kern_fn)(int64_t kc, const float *ap, const float *bp, float *c, int64_t ldc, float alpha,
                        float beta);

/* One instruction-set variant: register tile MR x NR and the cache blocking that suits it. */
typedef struct gemm_arch {
    const char *name;
    int mr, nr;
    int64_t mc, kc, nc; /* block sizes (mc a multiple of mr, nc of nr) */
    kern_fn kern;
} gemm_arch;

/*
 * The micro-kernel: C[0:MR, 0:NR] = alpha * Ap * Bp + beta * C (beta == 0: C is not read), where
 * Ap holds kc steps of MR values and Bp kc steps of NR values. VW floats per vector, NV vectors per
 * row of the tile (NR = VW * NV). The accumulators are an array of vectors that full unrolling turns
 * into registers.
 */
#define DEFINE_KERNEL(NAME, ATTR, MR, VW, NV)                                                              \
    ATTR static void NAME(int64_t kc, const float *restrict ap, const float *restrict bp, float *restrict c, \
                          int64_t ldc, float alpha, float beta)                                            \
    {                                                                                                      \
        typedef float vf __attribute__((vector_size((VW) * 4)));                                           \
        typedef float vfu __attribute__((vector_size((VW) * 4), aligned(4), may_alias));                   \
        vf acc[MR][NV];                                                                                    \
        IG_UNROLL(MR) for (int i = 0; i < (MR); i++)                                                       \
            IG_UNROLL(NV) for (int j = 0; j < (NV); j++) acc[i][j] = (vf){0};                              \
        for (int64_t p = 0; p < kc; p++) {                                                                 \
            const float *bq = bp + p * ((VW) * (NV));                                                      \
            const float *aq = ap + p * (MR);                                                               \
            vf bv[NV];                                                                                     \
            IG_UNROLL(NV) for (int j = 0; j < (NV); j++) bv[j] = *(const vfu *)(bq + j * (VW));            \
            IG_UNROLL(MR) for (int i = 0; i < (MR); i++) {                                                 \
                float av = aq[i];                                                                          \
                IG_UNROLL(NV) for (int j = 0; j < (NV); j++) acc[i][j] += bv[j] * av;                      \
            }                                                                                              \
        }                                                                                                  \
        if (beta == 0) {                                                                                   \
            IG_UNROLL(MR) for (int i = 0; i < (MR); i++)                                                   \
                IG_UNROLL(NV) for (int j = 0; j < (NV); j++)                                               \
                    *(vfu *)(c + i * ldc + j * (VW)) = acc[i][j] * alpha;                                  \
        } else {                                                                                           \
            IG_UNROLL(MR) for (int i = 0; i < (MR); i++)                                                   \
                IG_UNROLL(NV) for (int j = 0; j < (NV); j++) {                                             \
                    vfu *cp = (vfu *)(c + i * ldc + j * (VW));                                             \
                    *cp = acc[i][j] * alpha + *cp * beta;                                                  \
                }                                                                                          \
        }                                                                                                  \
    }

#define MAX_MR 16
#define MAX_NR 32

DEFINE_KERNEL(kern_generic, , 6, 4, 2)
static const gemm_arch arch_generic = {"generic", 6, 8, 120, 256, 2048, kern_generic};

#ifdef IG_GEMM_X86
DEFINE_KERNEL(kern_avx2, __attribute__((target("avx2,fma"))), 6, 8, 2)
DEFINE_KERNEL(kern_avx512, __attribute__((target("avx512f"))), 14, 16, 2)
static const gemm_arch arch_avx2 = {"avx2", 6, 16, 144, 256, 2048, kern_avx2};
static const gemm_arch arch_avx512 = {"avx512", 14, 32, 168, 256, 2048, kern_avx512};
#endif

/* Test hook: -1 picks from the CPU; 0 forces generic, 1 AVX2, 2 AVX-512 (when the CPU has them). */
static int forced_isa = -1;

static const gemm_arch *arch_get(void)
{
#ifdef IG_GEMM_X86
    bool has512 = __builtin_cpu_supports("avx512f");
    bool has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (forced_isa == 0) return &arch_generic;
    if (forced_isa == 1 && has2) return &arch_avx2;
    if (has512 && forced_isa != 1) return &arch_avx512;
    if (has2) return &arch_avx2;
#endif
    return &arch_generic;
}

int ig__sgemm_force_isa(int isa)
{
    int old = forced_isa;
    forced_isa = isa;
    return old;
}

const char *ig__sgemm_isa_name(void) { return arch_get()->name; }

/* ---- helpers ------------------------------------------------------------------------------------- */

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

/* Split `total` into equal blocks of at most `max` that are multiples of `unit`. */
static int64_t balance(int64_t total, int64_t max, int64_t unit)
{
    if (total <= max) return round_up(total, unit);
    int64_t nb = ceil_div(total, max);
    return round_up(ceil_div(total, nb), unit);
}

typedef struct blocks {
    int64_t mc, kc, nc;
} blocks;

static blocks plan_blocks(const gemm_arch *ar, int64_t m, int64_t n, int64_t k)
{
    blocks b;
    b.mc = balance(m, ar->mc, ar->mr);
    b.kc = balance(k, ar->kc, 1);
    b.nc = balance(n, ar->nc, ar->nr);
    return b;
}

/* Products below this many multiply-adds run on one thread; the pool's hand-off costs more. */
#define PAR_MIN_MACS (1 << 18)
/* Below this, skip packing: a plain loop is as fast as the setup. */
#define SMALL_MACS (1 << 12)

/* C = beta * C, with beta == 0 writing zeros whatever C held. */
static void scale_c(int64_t m, int64_t n, float beta, float *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++) {
        float *ci = c + i * ldc;
        if (beta == 0)
            for (int64_t j = 0; j < n; j++) ci[j] = 0;
        else if (beta != 1)
            for (int64_t j = 0; j < n; j++) ci[j] *= beta;
    }
}

/* The reference loop: tiny products, and the fallback when no workspace could be had. */
static void gemm_naive(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                       int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float s = 0;
            for (int64_t p = 0; p < k; p++)
                s += (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
            float *cp = &c[i * ldc + j];
            *cp = beta == 0 ? alpha * s : alpha * s + beta * *cp;
        }
}

/* ---- matrix-vector: y[j] = alpha * sum_p x[p] * M(p, j) + beta * y[j] --------------------------- */

typedef struct gemv_job {
    int64_t n, k;
    float alpha, beta;
    const float *x;
    int64_t xs;        /* x[p] = x[p * xs] */
    const float *mat;
    int64_t rs, cs;    /* M(p, j) = mat[p * rs + j * cs] */
    float *y;
    int64_t ys;
} gemv_job;

#define GEMV_CHUNK 256

static void gemv_store(const gemv_job *g, int64_t j, float s)
{
    float *yp = &g->y[j * g->ys];
    *yp = g->beta == 0 ? g->alpha * s : g->alpha * s + g->beta * *yp;
}

static void gemv_range(void *arg, int64_t cb, int64_t ce)
{
    const gemv_job *g = arg;
    for (int64_t ch = cb; ch < ce; ch++) {
        int64_t j0 = ch * GEMV_CHUNK, j1 = min64(j0 + GEMV_CHUNK, g->n);
        if (g->cs == 1) {
            /* rows of M are contiguous: accumulate x[p] * row p over a chunk of y (vectorises over j) */
            float acc[GEMV_CHUNK];
            int64_t w = j1 - j0;
            for (int64_t j = 0; j < w; j++) acc[j] = 0;
            for (int64_t p = 0; p < g->k; p++) {
                float xp = g->x[p * g->xs];
                const float *row = g->mat + p * g->rs + j0;
                for (int64_t j = 0; j < w; j++) acc[j] += xp * row[j];
            }
            for (int64_t j = 0; j < w; j++) gemv_store(g, j0 + j, acc[j]);
        } else if (g->rs == 1 && g->xs == 1) {
            /* columns of M are contiguous: dot products, 16 independent partial sums */
            for (int64_t j = j0; j < j1; j++) {
                const float *col = g->mat + j * g->cs;
                float part[16] = {0};
                int64_t p = 0;
                for (; p + 16 <= g->k; p += 16)
                    for (int l = 0; l < 16; l++) part[l] += g->x[p + l] * col[p + l];
                float s = 0;
                for (; p < g->k; p++) s += g->x[p] * col[p];
                for (int l = 0; l < 16; l++) s += part[l];
                gemv_store(g, j, s);
            }
        } else {
            for (int64_t j = j0; j < j1; j++) {
                float s = 0;
                for (int64_t p = 0; p < g->k; p++) s += g->x[p * g->xs] * g->mat[p * g->rs + j * g->cs];
                gemv_store(g, j, s);
            }
        }
    }
}

static void gemv(struct ig_pool *pool, gemv_job *g)
{
    int64_t chunks = ceil_div(g->n, GEMV_CHUNK);
    int64_t grain = ceil_div(PAR_MIN_MACS, GEMV_CHUNK * (g->k > 0 ? g->k : 1));
    ig__parallel_for(pool, chunks, grain < 1 ? 1 : grain, gemv_range, g);
}

/* ---- packing ------------------------------------------------------------------------------------- */

typedef struct gemm_job {
    const gemm_arch *ar;
    bool ta, tb;
    int64_t m, n, k;
    float alpha;
    const float *a, *b;
    int64_t lda, ldb;
    float *c;
    int64_t ldc;
    float *ap, *bp; /* packed blocks */
    /* the current block */
    int64_t ic, pc, jc, mc, kc, nc;
    float beta; /* for this K slice: the caller's beta on the first, 1 after */
} gemm_job;

/* Pack rows [ic, ic+mc) x cols [pc, pc+kc) of op(A), MR-row panels [pb, pe). */
static void pack_a_range(void *arg, int64_t pb, int64_t pe)
{
    const gemm_job *j = arg;
    const int mr = j->ar->mr;
    for (int64_t pn = pb; pn < pe; pn++) {
        float *dst = j->ap + pn * mr * j->kc;
        int64_t i0 = j->ic + pn * mr;
        int64_t rows = min64(mr, j->ic + j->mc - i0);
        rows = min64(rows, j->m - i0);
        if (!j->ta) {
            /* A(i, p) = a[i * lda + p]: read rows, write strided by MR */
            for (int64_t i = 0; i < rows; i++) {
                const float *src = j->a + (i0 + i) * j->lda + j->pc;
                for (int64_t p = 0; p < j->kc; p++) dst[p * mr + i] = src[p];
            }
            for (int64_t i = rows; i < mr; i++)
                for (int64_t p = 0; p < j->kc; p++) dst[p * mr + i] = 0;
        } else {
            /* A(i, p) = a[p * lda + i]: MR contiguous values per step of k */
            for (int64_t p = 0; p < j->kc; p++) {
                const float *src = j->a + (j->pc + p) * j->lda + i0;
                float *d = dst + p * mr;
                int64_t i = 0;
                for (; i < rows; i++) d[i] = src[i];
                for (; i < mr; i++) d[i] = 0;
            }
        }
    }
}

/* Pack rows [pc, pc+kc) x cols [jc, jc+nc) of op(B), NR-column panels [pb, pe). */
static void pack_b_range(void *arg, int64_t pb, int64_t pe)
{
    const gemm_job *j = arg;
    const int nr = j->ar->nr;
    for (int64_t pn = pb; pn < pe; pn++) {
        float *dst = j->bp + pn * nr * j->kc;
        int64_t j0 = j->jc + pn * nr;
        int64_t cols = min64(nr, j->jc + j->nc - j0);
        cols = min64(cols, j->n - j0);
        if (!j->tb) {
            for (int64_t p = 0; p < j->kc; p++) {
                const float *src = j->b + (j->pc + p) * j->ldb + j0;
                float *d = dst + p * nr;
                int64_t q = 0;
                for (; q < cols; q++) d[q] = src[q];
                for (; q < nr; q++) d[q] = 0;
            }
        } else {
            for (int64_t q = 0; q < cols; q++) {
                const float *src = j->b + (j0 + q) * j->ldb + j->pc;
                for (int64_t p = 0; p < j->kc; p++) dst[p * nr + q] = src[p];
            }
            for (int64_t q = cols; q < nr; q++)
                for (int64_t p = 0; p < j->kc; p++) dst[p * nr + q] = 0;
        }
    }
}

/* ---- the macro-kernel ---------------------------------------------------------------------------- */

/* Tiles [tb, te) of the current block, numbered column panel first (t = jr * n_ir + ir). */
static void compute_range(void *arg, int64_t tb, int64_t te)
{
    const gemm_job *j = arg;
    const gemm_arch *ar = j->ar;
    const int mr = ar->mr, nr = ar->nr;
    int64_t n_ir = ceil_div(min64(j->mc, j->m - j->ic), mr);
    float tile[MAX_MR * MAX_NR];
    for (int64_t t = tb; t < te; t++) {
        int64_t jr = t / n_ir, ir = t % n_ir;
        int64_t i0 = j->ic + ir * mr, j0 = j->jc + jr * nr;
        int64_t rows = min64(mr, j->m - i0), cols = min64(nr, j->n - j0);
        const float *ap = j->ap + ir * mr * j->kc, *bp = j->bp + jr * nr * j->kc;
        float *c = j->c + i0 * j->ldc + j0;
        if (rows == mr && cols == nr) {
            ar->kern(j->kc, ap, bp, c, j->ldc, j->alpha, j->beta);
        } else {
            /* edge tile: compute the full tile aside, merge the valid part */
            ar->kern(j->kc, ap, bp, tile, nr, 1.0f, 0.0f);
            for (int64_t i = 0; i < rows; i++)
                for (int64_t q = 0; q < cols; q++) {
                    float *cp = &c[i * j->ldc + q];
                    float v = j->alpha * tile[i * nr + q];
                    *cp = j->beta == 0 ? v : v + j->beta * *cp;
                }
        }
    }
}

static size_t ws_bytes_for(const gemm_arch *ar, int64_t m, int64_t n, int64_t k)
{
    if (m <= 1 || n <= 1 || k <= 0 || m * n * k < SMALL_MACS) return 0;
    blocks bl = plan_blocks(ar, m, n, k);
    size_t floats = (size_t)(bl.mc * bl.kc) + (size_t)(bl.kc * bl.nc);
    return floats * sizeof(float) + 128; /* two 64-byte alignments */
}

size_t ig__sgemm_ws_bytes(int64_t m, int64_t n, int64_t k) { return ws_bytes_for(arch_get(), m, n, k); }

static float *align64(void *p)
{
    uintptr_t u = ((uintptr_t)p + 63) & ~(uintptr_t)63;
    return (float *)u;
}

void ig__sgemm_ws(struct ig_pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                  float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                  int64_t ldc, void *ws, size_t ws_bytes)
{
    if (m <= 0 || n <= 0) return;
    if (k <= 0 || alpha == 0) {
        scale_c(m, n, beta, c, ldc);
        return;
    }
    if (m * n * k < PAR_MIN_MACS) pool = NULL;
    if (m == 1 || n == 1) {
        gemv_job g = {.k = k, .alpha = alpha, .beta = beta, .y = c};
        if (m == 1) { /* y = C row 0; x = op(A) row 0; M = op(B) */
            g.n = n;
            g.ys = 1;
            g.x = a;
            g.xs = trans_a ? lda : 1;
            g.mat = b;
            g.rs = trans_b ? 1 : ldb;
            g.cs = trans_b ? ldb : 1;
        } else { /* C^T = op(B)^T op(A)^T: y = C column 0; x = op(B) column 0; M(p, i) = op(A)(i, p) */
            g.n = m;
            g.ys = ldc;
            g.x = b;
            g.xs = trans_b ? 1 : ldb;
            g.mat = a;
            g.rs = trans_a ? lda : 1;
            g.cs = trans_a ? 1 : lda;
        }
        gemv(pool, &g);
        return;
    }
    if (m * n * k < SMALL_MACS) {
        gemm_naive(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }

    const gemm_arch *ar = arch_get();
    size_t need = ws_bytes_for(ar, m, n, k);
    void *own = NULL;
    if (!ws || ws_bytes < need) {
        own = ig__malloc_aligned(need, 64);
        if (!own) { /* no memory for packing: slow but correct */
            gemm_naive(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
            return;
        }
        ws = own;
    }
    blocks bl = plan_blocks(ar, m, n, k);
    gemm_job j = {.ar = ar, .ta = trans_a, .tb = trans_b, .m = m, .n = n, .k = k, .alpha = alpha,
                  .a = a, .b = b, .lda = lda, .ldb = ldb, .c = c, .ldc = ldc};
    j.ap = align64(ws);
    j.bp = align64(j.ap + bl.mc * bl.kc);

    for (j.jc = 0; j.jc < n; j.jc += bl.nc) {
        j.nc = min64(bl.nc, n - j.jc);
        int64_t n_jr = ceil_div(j.nc, ar->nr);
        for (j.pc = 0; j.pc < k; j.pc += bl.kc) {
            j.kc = min64(bl.kc, k - j.pc);
            j.beta = j.pc == 0 ? beta : 1.0f;
            int64_t pack_grain = ceil_div(8192, ar->nr * j.kc);
            ig__parallel_for(pool, n_jr, pack_grain, pack_b_range, &j);
            for (j.ic = 0; j.ic < m; j.ic += bl.mc) {
                j.mc = min64(bl.mc, m - j.ic);
                int64_t n_ir = ceil_div(j.mc, ar->mr);
                ig__parallel_for(pool, n_ir, ceil_div(8192, ar->mr * j.kc), pack_a_range, &j);
                /* a tile is mr*nr*kc multiply-adds; ask for ~64K per chunk at least */
                int64_t grain = ceil_div(1 << 16, (int64_t)ar->mr * ar->nr * j.kc);
                ig__parallel_for(pool, n_ir * n_jr, grain, compute_range, &j);
            }
        }
    }
    if (own) ig__free_aligned(own);
}

void ig__sgemm(struct ig_pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
               int64_t ldc)
{
    ig__sgemm_ws(pool, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL, 0);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
