/*
 * test_stem_host.cu -- the stem convolution (src/cuda/kernels/stem.cu) run on the host: its index math
 * (stem.cuh) with the kernel's loops, and each mma.m16n8k16 assembled from the 32 lanes' fragments by
 * the PTX layout (mma.cuh), against a direct convolution in double. Random problems: 1-4 input channels,
 * 8-128 output channels (one and several channel tiles, tiles not full), filters 1x1 to 7x7, strides,
 * pads, rows wider than a tile, inputs channels-last or planar, outputs packed or a slice of a wider one.
 *
 * Every output must be written once with the right value, nothing around it touched.
 */
#include "../../src/cuda/kernels/stem.cuh"

#include <cuda_fp16.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <vector>

#include "host_rng.h"
static float runit(void) { return (float)rint_in(-1000, 1000) / 1000.f; }

static int failures;

static float h2f(__half h) { return __half2float(h); }

/* the fragments' element pairs as floats */
struct pairf {
    float lo, hi;
};
static pairf pair_at(const std::vector<__half> &m, int at) { return {h2f(m[(size_t)at]), h2f(m[(size_t)at + 1])}; }

/* One warp's mma: A (16x16) from a[lane][4] pairs, B (16x8) from b[lane][2] pairs, into d[lane][4]. */
static void mma_host(float d[32][4], const pairf a[32][4], const pairf b[32][2])
{
    float A[16][16], B[16][8];
    for (int lane = 0; lane < 32; lane++) {
        const int g = lane / 4, t = lane % 4;
        const int rows[4] = {g, g + 8, g, g + 8}, cols[4] = {2 * t, 2 * t, 2 * t + 8, 2 * t + 8};
        for (int q = 0; q < 4; q++) {
            A[rows[q]][cols[q]] = a[lane][q].lo;
            A[rows[q]][cols[q] + 1] = a[lane][q].hi;
        }
        B[2 * t][g] = b[lane][0].lo;
        B[2 * t + 1][g] = b[lane][0].hi;
        B[2 * t + 8][g] = b[lane][1].lo;
        B[2 * t + 9][g] = b[lane][1].hi;
    }
    for (int lane = 0; lane < 32; lane++) {
        const int g = lane / 4, t = lane % 4;
        for (int q = 0; q < 4; q++) {
            const int row = q < 2 ? g : g + 8, col = 2 * t + q % 2;
            float s = 0;
            for (int k = 0; k < 16; k++) s += A[row][k] * B[k][col];
            d[lane][q] += s;
        }
    }
}

/* What one trial shares with its tiles. */
struct problem {
    ig_stem_args a;
    int trial;
    bool has_b;
    std::vector<__half> x, w, b;
};

/* The kernel's tile (np pixels of output row oh of image n from ow0, channels n0..) on the host: the
 * staged patch, every fragment by its lanes, the outputs in `out` as stem_tile_outs leaves them in its
 * buffer (STEM_LDO halves a pixel). False when an index is wrong (reported). */
static bool tile_outs(const problem &P, const std::vector<__half> &wsm, int n0, int ntiles, int n, int oh, int ow0,
                      int np, std::vector<__half> &out)
{
    const ig_stem_args &a = P.a;
    const int trial = P.trial, kp = stem_kp(a);
    const int pw = stem_pw(a, np), npatch = a.r * pw * 4;
    std::vector<__half> buf(STEM_BM * STEM_LDO > STEM_MAX_R * STEM_MAX_PW * 4 ? STEM_BM * STEM_LDO
                                                                              : STEM_MAX_R * STEM_MAX_PW * 4,
                            __float2half(0.f));
    if (npatch > (int)buf.size()) {
        printf("FAIL trial %d: patch of %d halves\n", trial, npatch);
        failures++;
        return false;
    }
    /* the kernel's staging: column col of patch row r is slots 4 (r pw + col) .. + 3 */
    const unsigned rows_in = stem_rows_in(a, oh);
    for (int col = 0; col < pw; col++) {
        const unsigned in = stem_col_in(a, ow0, col, rows_in);
        for (int r = 0; r < a.r; r++) {
            const unsigned at = stem_px_at(a, oh, ow0, in, r, col);
            const int64_t ih = oh * a.sh - a.ph + r, iw = ow0 * a.sw - a.pw + col;
            const bool inside = ih >= 0 && ih < a.h && iw >= 0 && iw < a.w;
            if ((bool)(in >> r & 1) != inside || (inside && at != ih * a.xs[2] + iw * a.xs[3]) ||
                (!inside && at != 0)) {
                if (failures++ < 10) printf("FAIL trial %d: patch pixel (%d, %d) at %u\n", trial, r, col, at);
                return false;
            }
            for (int c = 0; c < 4; c++)
                buf[(size_t)(4 * (r * pw + col) + c)] =
                    inside && c < a.c ? P.x[(size_t)(n * a.xs[0] + at + c * a.xs[1])] : __float2half(0.f);
        }
    }
    out.assign(STEM_BM * STEM_LDO, __float2half(-77.f));
    for (int warp = 0; warp < STEM_WARPS; warp++) {
        static float acc[2][STEM_BN / 8][32][4];
        memset(acc, 0, sizeof acc);
        std::vector<int> taps((size_t)kp / 4);
        for (int q = 0; q < kp / 4; q++) taps[(size_t)q] = stem_tap(a, pw, q);
        for (int k0 = 0; k0 < kp; k0 += 16) {
            pairf af[2][32][4], bf[32][2];
            for (int i = 0; i < 2; i++)
                for (int lane = 0; lane < 32; lane++) {
                    const int g = lane / 4, t4 = lane % 4, p = warp * 32 + g + 16 * i, ka = k0 + 2 * t4;
                    /* the kernel's addressing (tap table, pixel offsets) must be stem_a_at's */
                    const int pix0 = (warp * 32 + g) * a.sw * 4 + 2 * (t4 & 1) + i * 16 * a.sw * 4;
                    const int t0 = taps[(size_t)ka / 4], t2 = taps[(size_t)ka / 4 + 2], p8 = 8 * a.sw * 4;
                    const int at[4] = {pix0 + t0, pix0 + t0 + p8, pix0 + t2, pix0 + t2 + p8};
                    const int want[4] = {stem_a_at(a, pw, p, ka), stem_a_at(a, pw, p + 8, ka),
                                         stem_a_at(a, pw, p, ka + 8), stem_a_at(a, pw, p + 8, ka + 8)};
                    for (int q = 0; q < 4; q++) {
                        if (at[q] != want[q] && failures++ < 10)
                            printf("FAIL trial %d: A element at %d, stem_a_at says %d\n", trial, at[q], want[q]);
                        af[i][lane][q] = pair_at(buf, at[q]);
                    }
                }
            for (int j = 0; j < ntiles; j += 2) {
                /* ldmatrix.x4: lane l gets row l / 4, columns 2 (l % 4), + 1 of matrix m, whose row
                 * r8 is at the address lane 8 m + r8 gave (stem_ldsm_b) */
                pairf ld[32][4];
                for (int lane = 0; lane < 32; lane++)
                    for (int m = 0; m < 4; m++)
                        ld[lane][m] = pair_at(wsm, stem_ldsm_b(8 * m + lane / 4, j, k0) + 2 * (lane % 4));
                for (int jj = j; jj < j + 2 && jj < ntiles; jj++) {
                    for (int lane = 0; lane < 32; lane++) {
                        bf[lane][0] = ld[lane][2 * (jj - j)];
                        bf[lane][1] = ld[lane][2 * (jj - j) + 1];
                    }
                    for (int i = 0; i < stem_warp_blocks(np, warp); i++) mma_host(acc[i][jj], af[i], bf);
                }
            }
        }
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < ntiles; j++)
                for (int lane = 0; lane < 32; lane++)
                    for (int h = 0; h < 2; h++) {
                        const int g = lane / 4, t4 = lane % 4, p = warp * 32 + g + 16 * i + 8 * h;
                        for (int e = 0; e < 2; e++) {
                            const int ch = j * 8 + 2 * t4 + e;
                            float v = acc[i][j][lane][2 * h + e] + (P.has_b ? h2f(P.b[(size_t)(n0 + ch)]) : 0.f);
                            if (a.relu) v = fmaxf(v, 0.f);
                            out[(size_t)(p * STEM_LDO + ch)] = __float2half(v);
                        }
                    }
    }
    return true;
}

/* The direct convolution at (n, oh, ow, k), in double. */
static double conv_at(const problem &P, int64_t n, int64_t oh, int64_t ow, int k)
{
    const ig_stem_args &a = P.a;
    double s = P.has_b ? h2f(P.b[(size_t)k]) : 0;
    for (int r = 0; r < a.r; r++)
        for (int q = 0; q < a.s; q++)
            for (int c = 0; c < a.c; c++) {
                const int64_t ih = oh * a.sh - a.ph + r, iw = ow * a.sw - a.pw + q;
                if (ih < 0 || ih >= a.h || iw < 0 || iw >= a.w) continue;
                s += (double)h2f(P.x[(size_t)(n * a.xs[0] + c * a.xs[1] + ih * a.xs[2] + iw * a.xs[3])]) *
                     h2f(P.w[(size_t)(((int64_t)k * a.r * a.s + r * a.s + q) * a.c + c)]);
            }
    return a.relu && s < 0 ? 0 : s;
}

/* A random pool after the convolution (pooled trials): ResNet's 3x3/2 pad 1 half the time, else windows
 * of 1-4 with pkh - psh of 0 or 1, leading pads below the window, floor or ceil output sizes. */
static void random_pool(ig_stem_args &a)
{
    a.pool = 1;
    if (rnd() % 2) {
        a.pkh = a.pkw = 3, a.psh = a.psw = 2, a.pph = a.ppw = 1;
    } else {
        a.psh = rint_in(1, 3), a.pkh = a.psh + rint_in(0, 1);
        a.psw = rint_in(1, 3), a.pkw = rint_in(1, STEM_POOL_MAX_KW);
        a.pph = rint_in(0, a.pkh - 1), a.ppw = rint_in(0, a.pkw - 1);
    }
    const bool ceil_mode = rnd() % 3 == 0;
    const int64_t eh = a.oh + 2 * a.pph - a.pkh, ew = a.ow + 2 * a.ppw - a.pkw;
    a.qh = (eh >= 0 ? (ceil_mode ? (eh + a.psh - 1) / a.psh : eh / a.psh) : -1) + 1;
    a.qw = (ew >= 0 ? (ceil_mode ? (ew + a.psw - 1) / a.psw : ew / a.psw) : -1) + 1;
    /* ONNX's ceil mode: the last window starts inside the input or its leading pads */
    if (ceil_mode && (a.qh - 1) * a.psh - a.pph >= a.oh) a.qh--;
    if (ceil_mode && (a.qw - 1) * a.psw - a.ppw >= a.ow) a.qw--;
    a.band = rint_in(1, 5);
}

static void run_case(int trial, bool pooled)
{
    problem P;
    ig_stem_args &a = P.a;
    P.trial = trial;
    memset(&a, 0, sizeof a);
    a.c = rint_in(1, 4);
    const int ks[] = {8, 16, 24, 32, 64, 72, 96, 128};
    a.k = ks[rnd() % 8];
    do {
        a.r = rint_in(1, 7);
        a.s = rint_in(1, 7);
    } while (a.r * a.s > STEM_MAX_RS);
    a.sh = rint_in(1, 3);
    a.sw = rint_in(1, 2);
    a.ph = rint_in(0, a.r / 2);
    a.pw = rint_in(0, a.s / 2);
    a.n = rint_in(1, 2);
    a.h = rint_in(a.r, a.r + 6);
    a.w = pooled ? rint_in(a.s, a.s + 100) : trial % 4 == 0 ? rint_in(200, 300) : rint_in(a.s, a.s + 40);
    a.relu = rint_in(0, 1);
    a.oh = (a.h + 2 * a.ph - a.r) / a.sh + 1;
    a.ow = (a.w + 2 * a.pw - a.s) / a.sw + 1;
    if (pooled) {
        a.h += 10; /* bands of several pooled rows */
        a.oh = (a.h + 2 * a.ph - a.r) / a.sh + 1;
        if (a.ow > STEM_BM) a.w -= (a.ow - STEM_BM) * a.sw, a.ow = STEM_BM; /* a whole row is one tile */
        /* again while the pool has no output (a window wider than the padded row) or too many columns */
        for (int tries = 0; tries < 100; tries++) {
            random_pool(a);
            if (a.qh >= 1 && a.qw >= 1 && a.qw <= STEM_POOL_QW) break;
        }
    }
    /* x: channels-last or planar */
    const bool xcl = rnd() % 2;
    if (xcl) {
        a.xs[1] = 1, a.xs[3] = a.c, a.xs[2] = a.w * a.c, a.xs[0] = a.h * a.w * a.c;
    } else {
        a.xs[3] = 1, a.xs[2] = a.w, a.xs[1] = a.h * a.w, a.xs[0] = a.c * a.h * a.w;
    }
    /* y (pooled or not): channels-last, its pixels ys3 >= K apart (a slice of a wider tensor when more) */
    const int64_t yh = pooled ? a.qh : a.oh, yw = pooled ? a.qw : a.ow;
    const int64_t ys3 = a.k + (rnd() % 3 == 0 ? 8 * rint_in(1, 2) : 0), yoff = ys3 > a.k ? 8 : 0;
    a.ys[1] = 1, a.ys[3] = ys3, a.ys[2] = yw * ys3, a.ys[0] = yh * yw * ys3;
    if (pooled ? !stem_pool_applies(a) : !stem_applies(a)) {
        printf(
            "FAIL trial %d: the kernel refuses a problem it should take (pooled %d: conv %lldx%lld, pool %dx%d s %d,%d "
            "p %d,%d -> %lldx%lld)\n",
            trial, (int)pooled, (long long)a.oh, (long long)a.ow, a.pkh, a.pkw, a.psh, a.psw, a.pph, a.ppw,
            (long long)a.qh, (long long)a.qw);
        failures++;
        return;
    }
    const int64_t xn = a.n * a.c * a.h * a.w, yn = a.n * a.ys[0] + 16;
    P.x.resize((size_t)xn), P.w.resize((size_t)a.k * a.r * a.s * a.c), P.b.resize((size_t)a.k);
    for (auto &v : P.x) v = __float2half(runit());
    for (auto &v : P.w) v = __float2half(runit() * 0.2f);
    for (auto &v : P.b) v = __float2half(runit());
    P.has_b = rnd() % 2;
    const __half sentinel = __float2half(-77.f);
    std::vector<__half> y((size_t)yn, sentinel), out;
    std::vector<int> writes((size_t)yn, 0);

    const int kp = stem_kp(a);
    for (int by = 0; by < (a.k + STEM_BN - 1) / STEM_BN; by++) { /* blockIdx.y */
        const int n0 = by * STEM_BN;
        std::vector<__half> wsm(STEM_BN * STEM_LDW, __float2half(1e4f)); /* unwritten slots: loud */
        for (int nn = 0; nn < STEM_BN; nn++)
            for (int k = 0; k < kp; k++) {
                const int src = stem_filter_at(a, n0, nn, k);
                wsm[(size_t)(nn * STEM_LDW + k)] = src >= 0 ? P.w[(size_t)src] : __float2half(0.f);
            }
        const int ntiles = (a.k - n0 < STEM_BN ? a.k - n0 : STEM_BN) / 8, nc = ntiles * 8;
        if (!pooled) {
            for (int tile = 0; tile < stem_tiles(a); tile++) {
                int n, oh, ow0, np;
                stem_tile(a, tile, n, oh, ow0, np);
                if (!tile_outs(P, wsm, n0, ntiles, n, oh, ow0, np, out)) return;
                const int64_t yb = yoff + n * a.ys[0] + oh * a.ys[2] + ow0 * a.ys[3] + n0;
                for (int i = 0; i < np * nc; i++) {
                    const int p = i / nc, q = i % nc;
                    y[(size_t)(yb + p * a.ys[3] + q)] = out[(size_t)(p * STEM_LDO + q)];
                    writes[(size_t)(yb + p * a.ys[3] + q)]++;
                }
            }
            continue;
        }
        /* stem_pool_kernel's bands: each conv row a tile, its slots pooled into the ring, thread by thread */
        const int slots = (int)a.qw * ntiles;
        std::vector<__half2> ring((size_t)slots * 4, __floats2half2_rn(1e4f, 1e4f)); /* unwritten: loud */
        for (int t = 0; t < stem_bands(a); t++) {
            int n, po0, po1, r0, r1;
            stem_band(a, t, n, po0, po1, r0, r1);
            int po = po0;
            for (int cr = r0; cr <= r1; cr++) {
                if (!tile_outs(P, wsm, n0, ntiles, n, cr, 0, (int)a.ow, out)) return;
                /* the kernel's incremental role must be the one worked out from the row alone */
                const stem_role role = stem_pool_role_next(a, po1, cr, po), want = stem_pool_role(a, po0, po1, cr);
                if ((role.n != want.n ||
                     (role.n && (role.po != want.po || role.first != want.first || role.last != want.last))) &&
                    failures++ < 10)
                    printf("FAIL trial %d: row %d's role (po %d n %d first %u last %u), want (po %d n %d first %u "
                           "last %u)\n",
                           trial, cr, role.po, role.n, role.first, role.last, want.po, want.n, want.first, want.last);
                for (int tid = 0; tid < STEM_THREADS; tid++) {
                    int g, qo0, qstep;
                    if (!stem_pool_items(ntiles, tid, g, qo0, qstep)) continue;
                    for (int qo = qo0; qo < a.qw; qo += qstep) {
                        const int i = qo * ntiles + g;
                        __half2 h[4], rg[4], o[2][4];
                        stem_pool_cols(a, out.data(), qo, g * 8, h);
                        for (int e = 0; e < 4; e++) rg[e] = ring[(size_t)i * 4 + e];
                        const unsigned done = stem_pool_slot(role, h, rg, o);
                        for (int e = 0; e < 4; e++) ring[(size_t)i * 4 + e] = rg[e];
                        for (int u = 0; u < role.n; u++) {
                            if (!(done >> u & 1)) continue;
                            const int64_t yb = yoff + n * a.ys[0] + (role.po + u) * a.ys[2] + qo * a.ys[3] + n0 + g * 8;
                            for (int e = 0; e < 8; e++) {
                                y[(size_t)(yb + e)] = ((const __half *)o[u])[e];
                                writes[(size_t)(yb + e)]++;
                            }
                        }
                    }
                }
            }
        }
    }
    /* the direct convolution (and pool: the max of its window's fp16-rounded values) */
    int64_t wrong = 0, multi = 0, stray = 0;
    double worst = 0;
    std::vector<char> expected((size_t)yn, 0);
    for (int64_t n = 0; n < a.n; n++)
        for (int64_t oh = 0; oh < yh; oh++)
            for (int64_t ow = 0; ow < yw; ow++)
                for (int k = 0; k < a.k; k++) {
                    double s = -INFINITY;
                    if (!pooled) {
                        s = conv_at(P, n, oh, ow, k);
                    } else {
                        for (int64_t r = oh * a.psh - a.pph; r < oh * a.psh - a.pph + a.pkh; r++)
                            for (int64_t q = ow * a.psw - a.ppw; q < ow * a.psw - a.ppw + a.pkw; q++)
                                if (r >= 0 && r < a.oh && q >= 0 && q < a.ow)
                                    s = fmax(s, (double)h2f(__float2half((float)conv_at(P, n, r, q, k))));
                    }
                    const int64_t at = yoff + n * a.ys[0] + oh * a.ys[2] + ow * a.ys[3] + k;
                    expected[(size_t)at] = 1;
                    const double err = fabs(h2f(y[(size_t)at]) - s);
                    if (err > worst) worst = err;
                    if (!(err <= 1e-2 + 2e-3 * fabs(s))) wrong++;
                    if (writes[(size_t)at] != 1) multi++;
                }
    for (int64_t i = 0; i < yn; i++)
        if (!expected[(size_t)i] && writes[(size_t)i]) stray++;
    if (wrong || multi || stray) {
        if (failures++ < 10)
            printf("FAIL trial %d (C %d K %d %dx%d s %d,%d p %d,%d N %lld H %lld W %lld -> %lldx%lld, x %s, ys3 %lld, "
                   "relu %d bias %d, pool %d: %dx%d s %d,%d p %d,%d -> %lldx%lld band %d): %lld wrong (worst %.4g), "
                   "%lld not written once, %lld stray\n",
                   trial, a.c, a.k, a.r, a.s, a.sh, a.sw, a.ph, a.pw, (long long)a.n, (long long)a.h, (long long)a.w,
                   (long long)a.oh, (long long)a.ow, xcl ? "channels-last" : "planar", (long long)ys3, a.relu,
                   (int)P.has_b, a.pool, a.pkh, a.pkw, a.psh, a.psw, a.pph, a.ppw, (long long)a.qh, (long long)a.qw,
                   a.band, (long long)wrong, worst, (long long)multi, (long long)stray);
    }
}

int main(void)
{
    const int trials = 60, pooled = 40;
    for (int t = 0; t < trials; t++) run_case(t, false);
    for (int t = 0; t < pooled; t++) run_case(trials + t, true);
    /* what it must refuse */
    ig_stem_args a;
    memset(&a, 0, sizeof a);
    a.c = 3, a.k = 64, a.r = a.s = 7, a.sh = a.sw = 2, a.n = 1, a.h = a.w = 8, a.oh = a.ow = 4, a.ys[1] = 1;
    a.xs[1] = 1, a.xs[3] = 3, a.xs[2] = 24, a.xs[0] = 192;
    if (!stem_applies(a)) printf("FAIL: a ResNet stem is refused\n"), failures++;
    a.h = a.w = 40000; /* an image of 4.8e9 elements: offsets past 32 bits */
    a.xs[2] = 3 * a.w, a.xs[0] = a.xs[2] * a.h;
    if (stem_applies(a)) printf("FAIL: an image past 32-bit offsets is taken\n"), failures++;
    a.h = a.w = 8, a.xs[2] = 24, a.xs[0] = 192;
    a.c = 5;
    if (stem_applies(a)) printf("FAIL: 5 input channels are taken\n"), failures++;
    a.c = 3, a.k = 60;
    if (stem_applies(a)) printf("FAIL: 60 output channels (not a multiple of 8) are taken\n"), failures++;
    a.k = 64, a.sw = 3;
    if (stem_applies(a)) printf("FAIL: a column stride of 3 is taken\n"), failures++;
    a.sw = 2, a.ys[1] = 7;
    if (stem_applies(a)) printf("FAIL: an output that is not channels-last is taken\n"), failures++;
    a.ys[1] = 1, a.r = 8, a.s = 7;
    if (stem_applies(a)) printf("FAIL: an 8x7 filter is taken\n"), failures++;
    /* pooled: what the ring cannot hold */
    a.pool = 1, a.pkh = a.pkw = 3, a.psh = a.psw = 2, a.pph = a.ppw = 1, a.qh = a.qw = 2, a.band = 1;
    a.r = a.s = 7;
    a.ys[1] = 1;
    if (!stem_pool_applies(a)) printf("FAIL: ResNet's stem and max pool are refused\n"), failures++;
    a.psh = 1, a.qh = 4;
    if (stem_pool_applies(a)) printf("FAIL: windows sharing two conv rows (3x3/1) are taken\n"), failures++;
    a.psh = 2, a.qh = 2, a.pph = 3;
    if (stem_pool_applies(a)) printf("FAIL: a leading pad as tall as the window is taken\n"), failures++;
    printf("%d + %d pooled trials, %d failed\n", trials, pooled, failures);
    return failures ? 1 : 0;
}
