/*
 * gemm.c -- fp32 matrix multiply for the CPU backend.
 *
 * The GotoBLAS/BLIS recipe: operands are packed into panels laid out exactly as the register
 * micro-kernel reads them (MR rows of op(A), NR columns of op(B) per step of k), so the kernel streams
 * contiguous memory whatever the transposes and strides were, and keeps an MR x NR tile of C in
 * registers for a whole KC slice. The smaller operand is packed once and shared by all threads; the
 * larger one is read once, a panel at a time, into an L1-sized buffer by the thread that uses it (see
 * "packing and the macro-kernel" below). On this project's CI-sized VMs memory bandwidth, not FMA
 * throughput, is what large weights hit, so reading them once matters more than anything else.
 *
 * The micro-kernel is portable C (GCC/Clang vector extensions; no intrinsics, no assembly). It is
 * instantiated three times: a generic one the baseline compiler flags vectorise (SSE2 on x86-64,
 * NEON on arm64), and on x86-64 an AVX2+FMA and an AVX-512 one compiled through target attributes and
 * picked at run time from the CPU's features, so one binary built with default flags runs at full
 * speed on new CPUs and correctly on old ones.
 *
 * Matrix-vector products (M or N of 1) and tiny products skip packing altogether.
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

typedef void (*kern_fn)(int64_t kc, const float *ap, int64_t lda, const float *bp, float *c, int64_t ldc, float alpha,
                        float beta, const float *bias);

/* One instruction-set variant: register tile MR x NR, and KC, the steps of k per B panel (KC x NR
 * floats, sized to stay in L1). */
typedef struct gemm_arch {
    const char *name;
    int mr, nr;
    int64_t kc;
    kern_fn kern;      /* A packed: MR values per step of k */
    kern_fn kern_rows; /* A read in place: row i at ap + i * lda (for weights used by few column panels) */
} gemm_arch;

/*
 * The micro-kernel: C[0:MR, 0:NR] = alpha * A * Bp + beta * C (+ bias[i] on row i when bias is not
 * NULL; beta == 0: C is not read), where Bp holds kc steps of NR values and A is either packed (kc
 * steps of MR values) or, with ROWS, read in place (row i at ap + i * lda). VW floats per vector, NV
 * vectors per row of the tile (NR = VW * NV). The accumulators are an array of vectors that full
 * unrolling turns into registers.
 */
/* (clang-format's layout of this macro changes from one run to the next: kept as written) */
// clang-format off
#define DEFINE_KERNEL(NAME, ATTR, MR, VW, NV, ROWS)                                                        \
    ATTR static void NAME(int64_t kc, const float *restrict ap, int64_t lda, const float *restrict bp,     \
                          float *restrict c, int64_t ldc, float alpha, float beta, const float *restrict bias) \
    {                                                                                                      \
        typedef float vf __attribute__((vector_size((VW) * 4)));                                           \
        typedef float vfu __attribute__((vector_size((VW) * 4), aligned(4), may_alias));                   \
        vf acc[MR][NV];                                                                                    \
        IG_UNROLL(MR) for (int i = 0; i < (MR); i++)                                                       \
            IG_UNROLL(NV) for (int j = 0; j < (NV); j++) acc[i][j] = (vf){0};                              \
        for (int64_t p = 0; p < kc; p++) {                                                                 \
            const float *bq = bp + p * ((VW) * (NV));                                                      \
            const float *aq = (ROWS) ? ap + p : ap + p * (MR);                                            \
            vf bv[NV];                                                                                     \
            IG_UNROLL(NV) for (int j = 0; j < (NV); j++) bv[j] = *(const vfu *)(bq + j * (VW));            \
            IG_UNROLL(MR) for (int i = 0; i < (MR); i++) {                                                 \
                float av = (ROWS) ? aq[i * lda] : aq[i];                                                   \
                IG_UNROLL(NV) for (int j = 0; j < (NV); j++) acc[i][j] += bv[j] * av;                      \
            }                                                                                              \
        }                                                                                                  \
        IG_UNROLL(MR) for (int i = 0; i < (MR); i++) {                                                     \
            vf bi = (vf){0} + (bias ? bias[i] : 0.0f);                                                     \
            if (beta == 0) {                                                                               \
                IG_UNROLL(NV) for (int j = 0; j < (NV); j++)                                               \
                    *(vfu *)(c + i * ldc + j * (VW)) = acc[i][j] * alpha + bi;                             \
            } else {                                                                                       \
                IG_UNROLL(NV) for (int j = 0; j < (NV); j++) {                                             \
                    vfu *cp = (vfu *)(c + i * ldc + j * (VW));                                             \
                    *cp = acc[i][j] * alpha + *cp * beta + bi;                                             \
                }                                                                                          \
            }                                                                                              \
        }                                                                                                  \
    }
// clang-format on

#define MAX_MR 16
#define MAX_NR 32
#define MAX_KC 256

DEFINE_KERNEL(kern_generic, , 6, 4, 2, 0)
DEFINE_KERNEL(kern_generic_rows, , 6, 4, 2, 1)
static const gemm_arch arch_generic = {"generic", 6, 8, 256, kern_generic, kern_generic_rows};

#ifdef IG_GEMM_X86
DEFINE_KERNEL(kern_avx2, __attribute__((target("avx2,fma"))), 6, 8, 2, 0)
DEFINE_KERNEL(kern_avx2_rows, __attribute__((target("avx2,fma"))), 6, 8, 2, 1)
DEFINE_KERNEL(kern_avx512, __attribute__((target("avx512f"))), 14, 16, 2, 0)
DEFINE_KERNEL(kern_avx512_rows, __attribute__((target("avx512f"))), 14, 16, 2, 1)
static const gemm_arch arch_avx2 = {"avx2", 6, 16, 256, kern_avx2, kern_avx2_rows};
static const gemm_arch arch_avx512 = {"avx512", 14, 32, 256, kern_avx512, kern_avx512_rows};
#endif

/* Test hook: -1 picks from the CPU; 0 forces generic, 1 AVX2, 2 AVX-512 (when the CPU has them). */
static int forced_isa = -1;
/* Test hook: the most floats the shared packed operand may hold (PACK_CAP_FLOATS by default). */
#define PACK_CAP_FLOATS ((int64_t)4 << 20)
static int64_t pack_cap = PACK_CAP_FLOATS;

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

int64_t ig__sgemm_set_pack_cap(int64_t floats)
{
    int64_t old = pack_cap;
    pack_cap = floats > 0 ? floats : PACK_CAP_FLOATS;
    return old;
}

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
static void gemm_naive(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                       const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
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
    int64_t xs; /* x[p] = x[p * xs] */
    const float *mat;
    int64_t rs, cs; /* M(p, j) = mat[p * rs + j * cs] */
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

/* ---- packing and the macro-kernel ---------------------------------------------------------------- */

/*
 * Two loop orders, chosen by which operand is larger, so the larger one is read from memory once
 * and packed piece by piece into L1, while the smaller one is packed once, shared by all threads:
 *  - B-stationary (the default): op(A) is packed up front; a work item is a column panel of C. For
 *    each KC slice it packs its NR columns of op(B) into an L1 buffer and runs down the packed A.
 *  - A-stationary (few columns, many rows: late CNN layers, where the weights dominate): op(B) is
 *    packed up front; a work item is a row panel of C, packing its MR rows of op(A) per KC slice.
 * Either way a product is two parallel loops (pack, compute): each hand-off to the pool costs tens
 * of microseconds on small VMs. The shared packed operand is capped; bigger products go in chunks.
 */
/* A-stationary items with at most this many column panels read their rows of A in place. */
#define A_IN_PLACE_PANELS 4
/* Steps of k per block of a transposing pack (PACK_STEP x 32 floats stay in L1). */
#define PACK_STEP 64
/* Rows of packed A per chunk, so that one KC slice of it (rows x KC floats) stays in L2. */
#define A_CHUNK_ROWS 1024
/* A-stationary needs one KC slice of packed B (cols x KC floats) to stay in L2. */
#define B_STAT_MAX_COLS 1024

typedef struct gemm_job {
    const gemm_arch *ar;
    bool ta, tb;
    int64_t m, n, k;
    float alpha, beta;
    const float *a, *b;
    int64_t lda, ldb;
    float *c;
    int64_t ldc;
    const float *row_bias;  /* when set, row_bias[i] is added to row i of C */
    ig_sgemm_pack_b pack_b; /* when set, op(B) comes from this callback instead of b/ldb/tb */
    void *pack_ctx;
    bool a_stat;            /* A-stationary: sp is packed op(B); else sp is packed op(A) */
    float *sp;              /* the shared packed operand: panels of MR (or NR) x kl floats */
    int64_t i0, mrows;      /* rows of C in this chunk */
    int64_t p0, kl;         /* k range of this chunk */
    int64_t kstep;          /* k per L1 panel: kl split evenly into slices of at most KC */
    int64_t n_shared;       /* panels in the shared operand */
    int64_t n_grp, per_grp; /* work item w: own panel w / n_grp, shared panels of group w % n_grp */
} gemm_job;

/* Rows [r0, r0 + rows) (rows <= MR, zero-padded to MR) x k [p0, p0 + kc) of op(A), as kc steps of MR. */
static void pack_a_panel(const gemm_job *j, int64_t r0, int64_t rows, int64_t p0, int64_t kc, float *dst)
{
    const int mr = j->ar->mr;
    if (!j->ta) {
        /* A(i, p) = a[i * lda + p]: a transpose, done PACK_STEP steps of k at a time so the
         * destination block stays in L1 while MR rows stream in */
        for (int64_t pb = 0; pb < kc; pb += PACK_STEP) {
            int64_t pe = min64(kc, pb + PACK_STEP);
            for (int64_t i = 0; i < rows; i++) {
                const float *src = j->a + (r0 + i) * j->lda + p0;
                for (int64_t p = pb; p < pe; p++) dst[p * mr + i] = src[p];
            }
            for (int64_t i = rows; i < mr; i++)
                for (int64_t p = pb; p < pe; p++) dst[p * mr + i] = 0;
        }
    } else {
        /* A(i, p) = a[p * lda + i]: MR contiguous values per step of k */
        for (int64_t p = 0; p < kc; p++) {
            const float *src = j->a + (p0 + p) * j->lda + r0;
            float *d = dst + p * mr;
            int64_t i = 0;
            for (; i < rows; i++) d[i] = src[i];
            for (; i < mr; i++) d[i] = 0;
        }
    }
}

/* Columns [c0, c0 + cols) (cols <= NR, zero-padded) x k [p0, p0 + kc) of op(B), as kc steps of NR. */
static void pack_b_panel(const gemm_job *j, int64_t c0, int64_t cols, int64_t p0, int64_t kc, float *dst)
{
    const int nr = j->ar->nr;
    if (j->pack_b) {
        j->pack_b(j->pack_ctx, p0, kc, c0, cols, dst, nr);
    } else if (!j->tb) {
        for (int64_t p = 0; p < kc; p++) {
            const float *src = j->b + (p0 + p) * j->ldb + c0;
            float *d = dst + p * nr;
            int64_t q = 0;
            for (; q < cols; q++) d[q] = src[q];
            for (; q < nr; q++) d[q] = 0;
        }
    } else {
        for (int64_t pb = 0; pb < kc; pb += PACK_STEP) { /* a transpose: see pack_a_panel */
            int64_t pe = min64(kc, pb + PACK_STEP);
            for (int64_t q = 0; q < cols; q++) {
                const float *src = j->b + (c0 + q) * j->ldb + p0;
                for (int64_t p = pb; p < pe; p++) dst[p * nr + q] = src[p];
            }
            for (int64_t q = cols; q < nr; q++)
                for (int64_t p = pb; p < pe; p++) dst[p * nr + q] = 0;
        }
    }
}

static int64_t panel_rows(const gemm_job *j, int64_t ir) { return min64(j->ar->mr, j->mrows - ir * j->ar->mr); }
static int64_t panel_cols(const gemm_job *j, int64_t jr) { return min64(j->ar->nr, j->n - jr * j->ar->nr); }

/* Pack panels [pb, pe) of the shared operand for the current chunk (full kl). */
static void pack_shared_range(void *arg, int64_t pb, int64_t pe)
{
    const gemm_job *j = arg;
    for (int64_t pn = pb; pn < pe; pn++) {
        if (j->a_stat)
            pack_b_panel(j, pn * j->ar->nr, panel_cols(j, pn), j->p0, j->kl, j->sp + pn * j->ar->nr * j->kl);
        else
            pack_a_panel(j, j->i0 + pn * j->ar->mr, panel_rows(j, pn), j->p0, j->kl, j->sp + pn * j->ar->mr * j->kl);
    }
}

/* One MR x NR tile of C at (row r0, col c0) = alpha * ap * bp over kc steps + beta * C (+ the row bias
 * on the first K slice, first == true). */
static void run_tile(const gemm_job *j, const float *ap, int64_t lda, const float *bp, int64_t kc, int64_t r0,
                     int64_t rows, int64_t c0, int64_t cols, float beta, bool first)
{
    const gemm_arch *ar = j->ar;
    kern_fn kern = lda ? ar->kern_rows : ar->kern; /* lda 0: ap is packed */
    float *c = j->c + r0 * j->ldc + c0;
    const float *bias = first && j->row_bias ? j->row_bias + r0 : NULL;
    if (rows == ar->mr && cols == ar->nr) {
        kern(kc, ap, lda, bp, c, j->ldc, j->alpha, beta, bias);
        return;
    }
    /* edge tile: compute the full tile aside, merge the valid part */
    float tile[MAX_MR * MAX_NR];
    kern(kc, ap, lda, bp, tile, ar->nr, 1.0f, 0.0f, NULL);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t q = 0; q < cols; q++) {
            float *cp = &c[i * j->ldc + q];
            float v = j->alpha * tile[i * ar->nr + q] + (bias ? bias[i] : 0.0f);
            *cp = beta == 0 ? v : v + beta * *cp;
        }
}

/* One work item's product for K slice pk: pack its own panel, run it against its group of shared panels. */
static void compute_item(const gemm_job *j, int64_t w, int64_t pk, float *own)
{
    const int mr = j->ar->mr, nr = j->ar->nr;
    int64_t kc = min64(j->kstep, j->kl - pk);
    bool first = j->p0 + pk == 0;
    float beta = first ? j->beta : 1.0f; /* later slices accumulate */
    int64_t o = w / j->n_grp, g = w % j->n_grp;
    int64_t sb = g * j->per_grp, se = min64(j->n_shared, sb + j->per_grp);
    if (j->a_stat) {
        int64_t rows = panel_rows(j, o), r0 = j->i0 + o * mr;
        /* few column panels: packing the rows of A would cost more than the multiply; read them in place */
        bool in_place = !j->ta && rows == mr && se - sb <= A_IN_PLACE_PANELS;
        const float *ap = own;
        if (in_place)
            ap = j->a + r0 * j->lda + j->p0 + pk;
        else
            pack_a_panel(j, r0, rows, j->p0 + pk, kc, own);
        for (int64_t jr = sb; jr < se; jr++)
            run_tile(j, ap, in_place ? j->lda : 0, j->sp + jr * nr * j->kl + pk * nr, kc, r0, rows, jr * nr,
                     panel_cols(j, jr), beta, first);
    } else {
        int64_t cols = panel_cols(j, o);
        pack_b_panel(j, o * nr, cols, j->p0 + pk, kc, own);
        for (int64_t ir = sb; ir < se; ir++)
            run_tile(j, j->sp + ir * mr * j->kl + pk * mr, 0, own, kc, j->i0 + ir * mr, panel_rows(j, ir), o * nr, cols,
                     beta, first);
    }
}

/*
 * Work items [wb, we). B-stationary: K slice by K slice, so one slice of the shared packed A stays in
 * L2 while the items stream their B panels past it. A-stationary: item by item, walking each item's
 * MR rows of A along k (long sequential reads of the big operand; the small packed B stays in L2).
 */
static void compute_range(void *arg, int64_t wb, int64_t we)
{
    const gemm_job *j = arg;
    _Alignas(64) float own[MAX_KC * MAX_NR]; /* this item's panel of the other operand */
    if (j->a_stat) {
        for (int64_t w = wb; w < we; w++)
            for (int64_t pk = 0; pk < j->kl; pk += j->kstep) compute_item(j, w, pk, own);
    } else {
        for (int64_t pk = 0; pk < j->kl; pk += j->kstep)
            for (int64_t w = wb; w < we; w++) compute_item(j, w, pk, own);
    }
}

/* How a product is cut: the loop order, rows of C per chunk, k per chunk, floats of shared packing. */
typedef struct gemm_plan {
    bool a_stat;
    int64_t mchunk, kl;
    size_t shared_floats;
} gemm_plan;

static gemm_plan plan_gemm(const gemm_arch *ar, int64_t m, int64_t n, int64_t k, int64_t cap)
{
    gemm_plan pl;
    int64_t k1 = min64(k, ar->kc);
    pl.a_stat = m > n && round_up(n, ar->nr) <= B_STAT_MAX_COLS && round_up(n, ar->nr) * k1 <= cap;
    int64_t width; /* floats per step of k in the shared operand */
    if (pl.a_stat) {
        pl.mchunk = m;
        width = round_up(n, ar->nr);
    } else {
        int64_t rows = cap / k1 / ar->mr * ar->mr;
        if (rows > A_CHUNK_ROWS) rows = A_CHUNK_ROWS;
        if (rows < ar->mr) rows = ar->mr;
        pl.mchunk = balance(m, rows, ar->mr);
        width = round_up(pl.mchunk, ar->mr);
    }
    int64_t kmax = cap / width;
    pl.kl = balance(k, kmax < 1 ? 1 : kmax, 1);
    pl.shared_floats = (size_t)(width * pl.kl);
    return pl;
}

static bool use_packed(int64_t m, int64_t n, int64_t k) { return m > 1 && n > 1 && k > 0 && m * n * k >= SMALL_MACS; }

size_t ig__sgemm_ws_bytes(int64_t m, int64_t n, int64_t k)
{
    if (!use_packed(m, n, k)) return 0;
    return plan_gemm(arch_get(), m, n, k, pack_cap).shared_floats * sizeof(float) + 64;
}

size_t ig__sgemm_pack_b_ws_bytes(int64_t m, int64_t n, int64_t k)
{
    if (m <= 0 || n <= 0 || k <= 0) return 0;
    return plan_gemm(arch_get(), m, n, k, pack_cap).shared_floats * sizeof(float) + 64;
}

static float *align64(void *p)
{
    uintptr_t u = ((uintptr_t)p + 63) & ~(uintptr_t)63;
    return (float *)u;
}

/* The packed product: the shared operand chunk by chunk, each chunk packed then computed. */
static void gemm_run(struct ig_pool *pool, gemm_job *j, const gemm_plan *pl)
{
    const gemm_arch *ar = j->ar;
    j->a_stat = pl->a_stat;
    int64_t threads = ig__pool_threads(pool);
    for (j->p0 = 0; j->p0 < j->k; j->p0 += pl->kl) {
        j->kl = min64(pl->kl, j->k - j->p0);
        j->kstep = balance(j->kl, ar->kc, 1);
        for (j->i0 = 0; j->i0 < j->m; j->i0 += pl->mchunk) {
            j->mrows = min64(pl->mchunk, j->m - j->i0);
            int64_t n_ir = ceil_div(j->mrows, ar->mr), n_jr = ceil_div(j->n, ar->nr);
            int64_t n_own = j->a_stat ? n_ir : n_jr;
            j->n_shared = j->a_stat ? n_jr : n_ir;
            int64_t shared_w = j->a_stat ? ar->nr : ar->mr;
            ig__parallel_for(pool, j->n_shared, ceil_div(1 << 14, shared_w * j->kl), pack_shared_range, j);
            /* enough work items for every thread to get a few: own panels, then groups of shared ones */
            int64_t n_grp = 1;
            if (threads > 1 && n_own < 4 * threads) n_grp = min64(j->n_shared, ceil_div(4 * threads, n_own));
            j->per_grp = ceil_div(j->n_shared, n_grp);
            j->n_grp = ceil_div(j->n_shared, j->per_grp);
            int64_t item_macs = j->per_grp * ar->mr * ar->nr * j->kl;
            ig__parallel_for(pool, n_own * j->n_grp, ceil_div(1 << 16, item_macs), compute_range, j);
        }
    }
}

/* Run job j with the caller's workspace, or one of our own, or (out of memory) a small stack buffer:
 * one MR-row chunk of A at a time, single-threaded, slow but correct. */
static void gemm_packed(struct ig_pool *pool, gemm_job *j, void *ws, size_t ws_bytes)
{
    const gemm_arch *ar = j->ar;
    gemm_plan pl = plan_gemm(ar, j->m, j->n, j->k, pack_cap);
    size_t need = pl.shared_floats * sizeof(float) + 64;
    void *own = NULL;
    if (!ws || ws_bytes < need) {
        own = ig__malloc_aligned(need, 64);
        ws = own;
    }
    if (ws) {
        j->sp = align64(ws);
        gemm_run(pool, j, &pl);
    } else {
        _Alignas(64) float fallback[MAX_MR * MAX_KC];
        pl = plan_gemm(ar, j->m, j->n, j->k, (int64_t)ar->mr * ar->kc);
        j->sp = fallback;
        gemm_run(NULL, j, &pl);
    }
    if (own) ig__free_aligned(own);
}

void ig__sgemm_ws(struct ig_pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc, void *ws,
                  size_t ws_bytes)
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
    if (!use_packed(m, n, k)) {
        gemm_naive(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    gemm_job j = {.ar = arch_get(),
                  .ta = trans_a,
                  .tb = trans_b,
                  .m = m,
                  .n = n,
                  .k = k,
                  .alpha = alpha,
                  .beta = beta,
                  .a = a,
                  .b = b,
                  .lda = lda,
                  .ldb = ldb,
                  .c = c,
                  .ldc = ldc};
    gemm_packed(pool, &j, ws, ws_bytes);
}

void ig__sgemm_pack_b(struct ig_pool *pool, bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                      int64_t lda, ig_sgemm_pack_b pack_b, void *ctx, float beta, float *c, int64_t ldc,
                      const float *row_bias, void *ws, size_t ws_bytes)
{
    if (m <= 0 || n <= 0) return;
    if (k <= 0 || alpha == 0) {
        scale_c(m, n, beta, c, ldc);
        if (row_bias)
            for (int64_t i = 0; i < m; i++)
                for (int64_t q = 0; q < n; q++) c[i * ldc + q] += row_bias[i];
        return;
    }
    if (m * n * k < PAR_MIN_MACS) pool = NULL;
    gemm_job j = {.ar = arch_get(),
                  .ta = trans_a,
                  .m = m,
                  .n = n,
                  .k = k,
                  .alpha = alpha,
                  .beta = beta,
                  .a = a,
                  .lda = lda,
                  .c = c,
                  .ldc = ldc,
                  .row_bias = row_bias,
                  .pack_b = pack_b,
                  .pack_ctx = ctx};
    gemm_packed(pool, &j, ws, ws_bytes);
}

void ig__sgemm(struct ig_pool *pool, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    ig__sgemm_ws(pool, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL, 0);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
