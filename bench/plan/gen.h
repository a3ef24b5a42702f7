/*
 * gen.h -- seeded generators of packing instances for the planner benchmark and tests.
 *
 * "Perfect" instances are pieces of a full rectangle (steps x capacity), so the optimum equals the
 * lower bound exactly, as in most of MiniMalloc's benchmark (Moffitt, ASPLOS 2023: 154..454 buffers,
 * 1 MiB capacity, 2^20 time units on a 1024 grid), which greedy packers miss by 12-95%:
 *   - guillotine: recursive straight cuts of the rectangle, alternating time and capacity;
 *   - stacked: rectangles dropped onto random flat stretches of a rising skyline until it is full
 *     (not guillotine: the lowest-level-first order that built it is not recoverable).
 * "random" instances have random lifetimes and log-uniform sizes; their optimum is unknown.
 *
 * Header-only (static functions) so the benchmark and the unit test share it without a library.
 */
#ifndef INGOT_BENCH_PLAN_GEN_H
#define INGOT_BENCH_PLAN_GEN_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

static inline uint64_t gen_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline uint32_t gen_below(uint64_t *s, uint32_t n) { return n ? (uint32_t)(gen_rand(s) % n) : 0; }
static inline double gen_unit(uint64_t *s) { return (double)(gen_rand(s) >> 11) * (1.0 / 9007199254740992.0); }

typedef struct gen_rect {
    int32_t t0, t1; /* grid units, half-open */
    int32_t y0, y1;
} gen_rect;

/* Guillotine cuts of a units x units square into n pieces; grid unit `unit` bytes (and steps).
 * Returns the number of buffers written to out (n). */
static inline int32_t gen_guillotine(uint64_t seed, int32_t n, int32_t units, int32_t unit, ig_pack_buf *out)
{
    uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;
    gen_rect *r = malloc(sizeof(gen_rect) * (size_t)n);
    int32_t k = 1;
    r[0] = (gen_rect){0, units, 0, units};
    int32_t guard = 0;
    while (k < n && guard++ < 100 * n) {
        /* half the time a uniform piece, half the time one picked in proportion to its area: a mix
         * of many slivers and a few large blocks, as in the real instances */
        int32_t i;
        if (gen_below(&s, 2)) {
            i = (int32_t)gen_below(&s, (uint32_t)k);
        } else {
            double tot = 0, x;
            for (int32_t j = 0; j < k; j++) tot += (double)(r[j].t1 - r[j].t0) * (r[j].y1 - r[j].y0);
            x = gen_unit(&s) * tot;
            for (i = 0; i < k - 1; i++) {
                x -= (double)(r[i].t1 - r[i].t0) * (r[i].y1 - r[i].y0);
                if (x < 0) break;
            }
        }
        int32_t w = r[i].t1 - r[i].t0, h = r[i].y1 - r[i].y0;
        int vertical = gen_below(&s, 2); /* cut the lifetime (1) or the size (0) */
        if (vertical && w < 2) vertical = 0;
        if (!vertical && h < 2) vertical = 1;
        if (vertical && w < 2) continue;
        gen_rect a = r[i], b = r[i];
        if (vertical) {
            int32_t c = a.t0 + 1 + (int32_t)gen_below(&s, (uint32_t)(w - 1));
            a.t1 = c;
            b.t0 = c;
        } else {
            int32_t c = a.y0 + 1 + (int32_t)gen_below(&s, (uint32_t)(h - 1));
            a.y1 = c;
            b.y0 = c;
        }
        r[i] = a;
        r[k++] = b;
    }
    for (int32_t i = 0; i < k; i++) {
        out[i].first = r[i].t0 * unit;
        out[i].last = r[i].t1 * unit - 1;
        out[i].size = (uint64_t)(r[i].y1 - r[i].y0) * (uint64_t)unit;
    }
    free(r);
    return k;
}

/* Guillotine pieces with about `holes` percent of them removed: the real instances' mix of tight
 * and slack steps (MiniMalloc's instance A is full at 6 of its 71 segments, 79% full at the
 * emptiest). The optimum is at most the full capacity, the lower bound often equals it. */
static inline int32_t gen_holes(uint64_t seed, int32_t n, int32_t units, int32_t unit, int32_t holes, ig_pack_buf *out)
{
    int32_t k = gen_guillotine(seed, n, units, unit, out), w = 0;
    uint64_t s = seed * 0x632be59bd9b4e019ull + 11;
    for (int32_t i = 0; i < k; i++)
        if ((int32_t)gen_below(&s, 100) >= holes) out[w++] = out[i];
    return w;
}

/* Rectangles dropped on random flat stretches of a skyline over `units` time units until it reaches
 * `units` everywhere; about n pieces. out must hold 4 * n entries. */
static inline int32_t gen_stacked(uint64_t seed, int32_t n, int32_t units, int32_t unit, ig_pack_buf *out, int32_t cap)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 7;
    int32_t *h = calloc((size_t)units, sizeof(int32_t));
    double area = (double)units * units / n;
    int32_t k = 0;
    for (;;) {
        /* collect flat runs below the top, pick one at random (lower ones more often) */
        int32_t n_runs = 0, pick_l = -1, pick_r = -1;
        for (int32_t t = 0; t < units;) {
            int32_t e = t + 1;
            while (e < units && h[e] == h[t]) e++;
            if (h[t] < units) {
                n_runs++;
                /* reservoir sampling with weight favouring low runs */
                double wgt = 1.0 + 3.0 * (double)(units - h[t]) / units;
                if (gen_unit(&s) * n_runs < wgt || pick_l < 0) {
                    pick_l = t;
                    pick_r = e;
                }
            }
            t = e;
        }
        if (pick_l < 0 || k >= cap) break;
        int32_t len = pick_r - pick_l, lvl = h[pick_l];
        /* a sub-stretch touching an end of the run half of the time */
        double u = gen_unit(&s);
        int32_t w = 1 + (int32_t)((len - 1) * u * u);
        if (gen_below(&s, 4) == 0) w = len;
        int32_t a = pick_l;
        int32_t mode = (int32_t)gen_below(&s, 3);
        if (mode == 1)
            a = pick_r - w;
        else if (mode == 2)
            a = pick_l + (int32_t)gen_below(&s, (uint32_t)(len - w + 1));
        double want = area / w * (0.3 + 1.4 * gen_unit(&s));
        int32_t room = units - lvl;
        int32_t ht = (int32_t)want;
        if (ht < 1) ht = 1;
        if (ht > room || room - ht < room / 8) ht = room;
        for (int32_t t = a; t < a + w; t++) h[t] = lvl + ht;
        out[k].first = a * unit;
        out[k].last = (a + w) * unit - 1;
        out[k].size = (uint64_t)ht * (uint64_t)unit;
        k++;
    }
    free(h);
    return k;
}

/* n buffers over `steps` steps: lifetimes mostly short with a few long ones, sizes log-uniform over
 * 256 B .. 16 MiB. */
static inline int32_t gen_random(uint64_t seed, int32_t n, int32_t steps, ig_pack_buf *out)
{
    uint64_t s = seed * 0xd1342543de82ef95ull + 3;
    for (int32_t i = 0; i < n; i++) {
        int32_t f = (int32_t)gen_below(&s, (uint32_t)steps);
        double u = gen_unit(&s);
        int32_t len = 1 + (int32_t)(u * u * u * steps);
        if (f + len > steps) len = steps - f;
        out[i].first = f;
        out[i].last = f + len - 1;
        double e = 8.0 + 16.0 * gen_unit(&s);
        out[i].size = (uint64_t)(1ull << (int)e) + gen_below(&s, 1000);
    }
    return n;
}

#endif
