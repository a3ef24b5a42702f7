/*
 * pack.c -- offsets for buffers with lifetimes (the pure core of the planner, see plan.h).
 *
 * Every strategy except the skyline is "order + best-fit placement": buffers are taken in some order
 * and each goes into the smallest gap left between the already placed buffers whose lifetimes overlap
 * it (or on top of them when no gap is big enough). The order is what distinguishes TFLite/XLA's
 * greedy-by-size, TFLite-GPU's greedy-by-breadth, greedy-by-conflict and ggml's online allocator
 * (order of first use). The skyline packer instead fills the lowest free level of the step axis with
 * a buffer whose lifetime fits inside it. For instances all of those leave above the lower bound
 * (pieces of a cut rectangle, as in MiniMalloc's benchmark, defeat every greedy order by 20-40%) a
 * restarted depth-first search looks for a packing at the bound, and its best partial packing is
 * completed by the other packers; an iterated greedy finally re-orders what sticks out.
 *
 * Work is counted (neighbour visits, search nodes), not timed, so results never depend on machine
 * speed or load. Phase order and budgets per effort level: docs/PLANNER.md.
 */
#include "plan.h"

#include <inttypes.h>
#include <stdlib.h>

ig_pack_options ig__pack_options_default(void)
{
    ig_pack_options o = {IG_PLAN_ALIGN_DEFAULT, 1, 0};
    return o;
}

/* ---- small utilities ---- */

static uint64_t rng_next(uint64_t *s)
{
    /* splitmix64: good enough for shuffling, one multiply chain, no state beyond 64 bits */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t rng_below(uint64_t *s, uint32_t n) { return n ? (uint32_t)(rng_next(s) % n) : 0; }

typedef struct span {
    uint64_t lo, hi;
} span;

/* Sort spans by lo: insertion sort for short runs, an inline quicksort (median of three, loop on the
 * larger part) above; several times faster than qsort's indirect compare on the placement's hot path. */
static void sort_spans(span *s, int32_t n)
{
    while (n > 24) {
        int32_t m = n / 2;
        uint64_t a = s[0].lo, b = s[m].lo, c = s[n - 1].lo;
        uint64_t piv = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        int32_t i = 0, j = n - 1;
        for (;;) {
            while (s[i].lo < piv) i++;
            while (s[j].lo > piv) j--;
            if (i >= j) break;
            span t = s[i];
            s[i] = s[j];
            s[j] = t;
            i++;
            j--;
        }
        /* [0, j] <= piv <= [j + 1, n) */
        if (j + 1 < n - j - 1) {
            sort_spans(s, j + 1);
            s += j + 1;
            n -= j + 1;
        } else {
            sort_spans(s + j + 1, n - j - 1);
            n = j + 1;
        }
    }
    for (int32_t i = 1; i < n; i++) {
        span t = s[i];
        int32_t j = i - 1;
        while (j >= 0 && s[j].lo > t.lo) {
            s[j + 1] = s[j];
            j--;
        }
        s[j + 1] = t;
    }
}

/* sort keys: descending k1, then descending k2, then ascending k3, then index (total order) */
typedef struct okey {
    uint64_t k1, k2, k3;
    int32_t i;
} okey;

static int cmp_okey(const void *a, const void *b)
{
    const okey *x = a, *y = b;
    if (x->k1 != y->k1) return x->k1 > y->k1 ? -1 : 1;
    if (x->k2 != y->k2) return x->k2 > y->k2 ? -1 : 1;
    if (x->k3 != y->k3) return x->k3 < y->k3 ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* ---- the problem, compacted to buffers of non-zero size ---- */

typedef struct packer {
    int32_t m;      /* buffers with size > 0 */
    int32_t *id;    /* [m] index into the caller's array */
    uint64_t *size; /* [m] aligned */
    int32_t *first, *last;
    int32_t *sa, *sb;   /* [m] segment range [sa, sb) on the compressed step axis */
    int32_t n_seg;      /* segments between consecutive distinct points */
    int32_t *pt;        /* [n_seg + 1] the distinct points (first, last + 1 of every buffer) */
    uint64_t *seg_live; /* [n_seg] live bytes per segment */
    int32_t *adj_start; /* [m + 1] CSR of lifetime conflicts */
    int32_t *adj;
    uint64_t lb;
    /* working memory for placement */
    uint64_t *off;
    uint8_t *placed;
    span *tmp;
    int32_t *lst;  /* [m] place_dense's buffers sorted by offset */
    bool dense;    /* use place_dense */
    uint64_t work; /* neighbour visits so far */
} packer;

static void packer_free(packer *p)
{
    ig__free(p->id);
    ig__free(p->size);
    ig__free(p->first);
    ig__free(p->last);
    ig__free(p->sa);
    ig__free(p->sb);
    ig__free(p->pt);
    ig__free(p->seg_live);
    ig__free(p->adj_start);
    ig__free(p->adj);
    ig__free(p->off);
    ig__free(p->placed);
    ig__free(p->tmp);
    ig__free(p->lst);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* index of v in the sorted array pt[0..n) (v is known to be present) */
static int32_t find_pt(const int32_t *pt, int32_t n, int32_t v)
{
    int32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (pt[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

typedef struct ev {
    int32_t first;
    int32_t k;
} ev;

static int cmp_ev(const void *a, const void *b)
{
    const ev *x = a, *y = b;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

/* Compact the non-empty buffers, compress the step axis, compute live bytes per segment and the
 * lower bound and, with `conflicts`, the lists of lifetime-overlapping buffers. */
static ingot_status packer_init(packer *p, const ig_pack_buf *bufs, int32_t n, uint64_t align, bool conflicts,
                                ig_err *err)
{
    memset(p, 0, sizeof *p);
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        if (bufs[i].first > bufs[i].last)
            return ig__errf(err, INGOT_ERR_INVALID_ARG, "buffer %d: first step %d is after last step %d", (int)i,
                            (int)bufs[i].first, (int)bufs[i].last);
        if (bufs[i].last == INT32_MAX)
            return ig__errf(err, INGOT_ERR_INVALID_ARG, "buffer %d: last step %d is out of range", (int)i,
                            (int)bufs[i].last);
        if (bufs[i].size > UINT64_MAX - align)
            return ig__errf(err, INGOT_ERR_INVALID_ARG, "buffer %d: size %" PRIu64 " overflows when aligned", (int)i,
                            bufs[i].size);
        if (bufs[i].size) m++;
    }
    p->m = m;
    size_t mm = (size_t)m + 1;
    p->id = ig__malloc(sizeof(int32_t) * mm);
    p->size = ig__malloc(sizeof(uint64_t) * mm);
    p->first = ig__malloc(sizeof(int32_t) * mm);
    p->last = ig__malloc(sizeof(int32_t) * mm);
    p->sa = ig__malloc(sizeof(int32_t) * mm);
    p->sb = ig__malloc(sizeof(int32_t) * mm);
    p->pt = ig__malloc(sizeof(int32_t) * (2 * mm));
    p->seg_live = ig__calloc(2 * mm, sizeof(uint64_t));
    p->adj_start = ig__calloc(mm + 1, sizeof(int32_t));
    p->off = ig__calloc(mm, sizeof(uint64_t));
    p->placed = ig__calloc(mm, 1);
    p->tmp = ig__malloc(sizeof(span) * mm);
    p->lst = ig__malloc(sizeof(int32_t) * mm);
    ev *evs = ig__malloc(sizeof(ev) * mm);
    int32_t *active = ig__malloc(sizeof(int32_t) * mm);
    int32_t *fill = NULL;
    if (!p->id || !p->size || !p->first || !p->last || !p->sa || !p->sb || !p->pt || !p->seg_live || !p->adj_start ||
        !p->off || !p->placed || !p->tmp || !p->lst || !evs || !active)
        goto oom;
    m = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!bufs[i].size) continue;
        p->id[m] = i;
        p->size[m] = (bufs[i].size + align - 1) & ~(align - 1);
        p->first[m] = bufs[i].first;
        p->last[m] = bufs[i].last;
        m++;
    }
    /* compressed step axis */
    int32_t np = 0;
    for (int32_t k = 0; k < m; k++) {
        p->pt[np++] = p->first[k];
        p->pt[np++] = p->last[k] + 1;
    }
    qsort(p->pt, (size_t)np, sizeof(int32_t), cmp_i32);
    int32_t u = 0;
    for (int32_t k = 0; k < np; k++)
        if (!u || p->pt[u - 1] != p->pt[k]) p->pt[u++] = p->pt[k];
    p->n_seg = u > 0 ? u - 1 : 0;
    for (int32_t k = 0; k < m; k++) {
        p->sa[k] = find_pt(p->pt, u, p->first[k]);
        p->sb[k] = find_pt(p->pt, u, p->last[k] + 1);
    }
    /* live bytes per segment by a difference array, then the lower bound */
    {
        uint64_t *d = p->seg_live; /* reuse: diff in place, n_seg + 1 entries */
        for (int32_t k = 0; k < m; k++) {
            d[p->sa[k]] += p->size[k];
            d[p->sb[k]] -= p->size[k]; /* wraps, undone by the prefix sum */
        }
        uint64_t run = 0;
        p->lb = 0;
        for (int32_t s = 0; s < p->n_seg; s++) {
            run += d[s];
            d[s] = run;
            if (run > p->lb) p->lb = run;
        }
        if (p->n_seg < u) d[p->n_seg] = 0;
    }
    if (!conflicts) goto done;
    /* conflicts: sweep by first step with an active set */
    for (int32_t k = 0; k < m; k++) {
        evs[k].first = p->first[k];
        evs[k].k = k;
    }
    qsort(evs, (size_t)m, sizeof(ev), cmp_ev);
    size_t n_pairs = 0;
    int32_t na = 0;
    for (int32_t e = 0; e < m; e++) {
        int32_t k = evs[e].k, w = 0;
        for (int32_t a = 0; a < na; a++)
            if (p->last[active[a]] >= p->first[k]) active[w++] = active[a];
        na = w;
        for (int32_t a = 0; a < na; a++) {
            p->adj_start[k + 1]++;
            p->adj_start[active[a] + 1]++;
        }
        n_pairs += (size_t)na;
        active[na++] = k;
    }
    if (n_pairs > (size_t)INT32_MAX / 2) {
        ig__free(evs);
        ig__free(active);
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "%zu pairs of buffers live at the same time: too many to plan",
                        n_pairs);
    }
    for (int32_t k = 0; k < m; k++) p->adj_start[k + 1] += p->adj_start[k];
    /* sorting neighbour lists costs ~2E log(deg); scanning all placed buffers ~m^2/2 */
    p->dense = (double)n_pairs * 16.0 > (double)m * (double)m;
    p->adj = ig__malloc(sizeof(int32_t) * (2 * n_pairs + 1));
    fill = ig__malloc(sizeof(int32_t) * mm);
    if (!p->adj || !fill) goto oom;
    memcpy(fill, p->adj_start, sizeof(int32_t) * (size_t)m);
    na = 0;
    for (int32_t e = 0; e < m; e++) {
        int32_t k = evs[e].k, w = 0;
        for (int32_t a = 0; a < na; a++)
            if (p->last[active[a]] >= p->first[k]) active[w++] = active[a];
        na = w;
        for (int32_t a = 0; a < na; a++) {
            p->adj[fill[k]++] = active[a];
            p->adj[fill[active[a]]++] = k;
        }
        active[na++] = k;
    }
done:
    ig__free(fill);
    ig__free(evs);
    ig__free(active);
    return INGOT_OK;
oom:
    ig__free(fill);
    ig__free(evs);
    ig__free(active);
    return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory planning %d buffers", (int)n);
}

/* ---- order + best-fit placement ---- */

enum { FIT_BEST = 0, FIT_FIRST = 1 };

/* Place buffers in `order` into p->off; returns the arena, or UINT64_MAX as soon as the arena would
 * exceed `cap` (the caller only wants results no worse than cap). */
/* Place order[0..n) around the buffers already marked in p->placed (at p->off), starting from an
 * arena of top. */
static uint64_t place_from(packer *p, const int32_t *order, int32_t n, int fit, uint64_t cap, uint64_t top)
{
    for (int32_t t = 0; t < n; t++) {
        int32_t i = order[t];
        int32_t cnt = 0;
        for (int32_t e = p->adj_start[i]; e < p->adj_start[i + 1]; e++) {
            int32_t j = p->adj[e];
            if (p->placed[j]) {
                p->tmp[cnt].lo = p->off[j];
                p->tmp[cnt].hi = p->off[j] + p->size[j];
                cnt++;
            }
        }
        p->work += (uint64_t)(p->adj_start[i + 1] - p->adj_start[i]) + 1;
        for (int32_t c = cnt; c > 16; c >>= 1) p->work += (uint64_t)cnt; /* the sort: ~cnt log cnt */
        sort_spans(p->tmp, cnt);
        uint64_t cur = 0, best = UINT64_MAX, best_gap = UINT64_MAX, sz = p->size[i];
        for (int32_t s = 0; s < cnt; s++) {
            if (p->tmp[s].lo > cur) {
                uint64_t gap = p->tmp[s].lo - cur;
                if (gap >= sz && gap < best_gap) {
                    best_gap = gap;
                    best = cur;
                    if (fit == FIT_FIRST || gap == sz) break;
                }
            }
            if (p->tmp[s].hi > cur) cur = p->tmp[s].hi;
        }
        if (best == UINT64_MAX) best = cur;
        p->off[i] = best;
        p->placed[i] = 1;
        if (best + sz > top) {
            top = best + sz;
            if (top > cap) return UINT64_MAX;
        }
    }
    return top;
}

static uint64_t place(packer *p, const int32_t *order, int fit, uint64_t cap)
{
    memset(p->placed, 0, (size_t)p->m);
    return place_from(p, order, p->m, fit, cap, 0);
}

/* The same placement for dense instances (many buffers live together): instead of sorting each
 * buffer's placed neighbours, keep all placed buffers sorted by offset and skip those not live with
 * it. O(m^2) plain comparisons beat O(E log deg) sorting once the average degree is large. Same
 * offsets as place(). */
static uint64_t place_dense(packer *p, const int32_t *order, int fit, uint64_t cap, int32_t *lst)
{
    uint64_t top = 0;
    int32_t cnt = 0;
    for (int32_t t = 0; t < p->m; t++) {
        int32_t i = order[t], fi = p->first[i], la = p->last[i];
        uint64_t cur = 0, best = UINT64_MAX, best_gap = UINT64_MAX, sz = p->size[i];
        for (int32_t s = 0; s < cnt; s++) {
            int32_t j = lst[s];
            if (p->last[j] < fi || p->first[j] > la) continue;
            if (p->off[j] > cur) {
                uint64_t gap = p->off[j] - cur;
                if (gap >= sz && gap < best_gap) {
                    best_gap = gap;
                    best = cur;
                    if (fit == FIT_FIRST || gap == sz) break;
                }
            }
            if (p->off[j] + p->size[j] > cur) cur = p->off[j] + p->size[j];
        }
        p->work += (uint64_t)cnt / 4 + 1;
        if (best == UINT64_MAX) best = cur;
        p->off[i] = best;
        int32_t lo = 0, hi = cnt;
        while (lo < hi) {
            int32_t mid = (lo + hi) / 2;
            if (p->off[lst[mid]] <= best)
                lo = mid + 1;
            else
                hi = mid;
        }
        memmove(lst + lo + 1, lst + lo, sizeof(int32_t) * (size_t)(cnt - lo));
        lst[lo] = i;
        cnt++;
        if (best + sz > top) {
            top = best + sz;
            if (top > cap) return UINT64_MAX;
        }
    }
    return top;
}

static uint64_t run_place(packer *p, const int32_t *order, int fit, uint64_t cap)
{
    return p->dense ? place_dense(p, order, fit, cap, p->lst) : place(p, order, fit, cap);
}

/* ---- orders ---- */

enum {
    ORD_SIZE,     /* size desc, longer first, earlier first: TFLite ArenaPlanner / XLA */
    ORD_AREA,     /* size x lifetime desc */
    ORD_LENGTH,   /* lifetime desc, then size: long-lived tensors at the bottom */
    ORD_BREADTH,  /* largest live set over the lifetime, then size: TFLite-GPU greedy by breadth */
    ORD_CONFLICT, /* bytes of conflicting buffers, then size: greedy by conflict degree */
    ORD_ONLINE,   /* first step asc: ggml's online allocator in graph order */
    ORD_COUNT
};

static const char *const ord_names[ORD_COUNT] = {
    "greedy-size", "greedy-area", "greedy-lifetime", "greedy-breadth", "greedy-conflict", "online-bestfit",
};

/* range maximum of seg_live over [a, b) by a sparse table built on demand */
typedef struct rmq {
    int32_t levels, n;
    uint64_t *t; /* [levels][n] */
} rmq;

static bool rmq_build(rmq *r, const uint64_t *v, int32_t n)
{
    r->n = n;
    r->levels = 1;
    while ((1 << r->levels) <= n) r->levels++;
    r->t = ig__malloc(sizeof(uint64_t) * ((size_t)r->levels * (size_t)n + 1));
    if (!r->t) return false;
    if (n) memcpy(r->t, v, sizeof(uint64_t) * (size_t)n);
    for (int32_t l = 1; l < r->levels; l++) {
        uint64_t *prev = r->t + (size_t)(l - 1) * (size_t)n, *cur = r->t + (size_t)l * (size_t)n;
        int32_t h = 1 << (l - 1);
        for (int32_t i = 0; i + (1 << l) <= n; i++) cur[i] = prev[i] > prev[i + h] ? prev[i] : prev[i + h];
    }
    return true;
}

static uint64_t rmq_max(const rmq *r, int32_t a, int32_t b)
{
    int32_t len = b - a, l = 0;
    while ((2 << l) <= len) l++;
    const uint64_t *row = r->t + (size_t)l * (size_t)r->n;
    uint64_t x = row[a], y = row[b - (1 << l)];
    return x > y ? x : y;
}

static ingot_status make_order(packer *p, int kind, int32_t *order, const rmq *rq, ig_err *err)
{
    okey *keys = ig__malloc(sizeof(okey) * ((size_t)p->m + 1));
    if (!keys) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory ordering %d buffers", (int)p->m);
    for (int32_t i = 0; i < p->m; i++) {
        uint64_t sz = p->size[i], len = (uint64_t)((int64_t)p->last[i] - p->first[i] + 1);
        okey *k = &keys[i];
        k->i = i;
        switch (kind) {
        case ORD_SIZE:
            k->k1 = sz;
            k->k2 = len;
            k->k3 = (uint64_t)(int64_t)p->first[i];
            break;
        case ORD_AREA:
            k->k1 = sat_mul(sz, len);
            k->k2 = sz;
            k->k3 = (uint64_t)(int64_t)p->first[i];
            break;
        case ORD_LENGTH:
            k->k1 = len;
            k->k2 = sz;
            k->k3 = (uint64_t)(int64_t)p->first[i];
            break;
        case ORD_BREADTH:
            k->k1 = rmq_max(rq, p->sa[i], p->sb[i]);
            k->k2 = sz;
            k->k3 = (uint64_t)(int64_t)p->first[i];
            break;
        case ORD_CONFLICT: {
            uint64_t s = sz;
            for (int32_t e = p->adj_start[i]; e < p->adj_start[i + 1]; e++) s = sat_add(s, p->size[p->adj[e]]);
            k->k1 = s;
            k->k2 = sz;
            k->k3 = (uint64_t)(int64_t)p->first[i];
            break;
        }
        default: /* ORD_ONLINE: ascending first step; keys are descending, so flip */
            k->k1 = UINT64_MAX - (uint64_t)((int64_t)p->first[i] - INT32_MIN);
            k->k2 = sz;
            k->k3 = 0;
            break;
        }
    }
    qsort(keys, (size_t)p->m, sizeof(okey), cmp_okey);
    for (int32_t i = 0; i < p->m; i++) order[i] = keys[i].i;
    ig__free(keys);
    return INGOT_OK;
}

/* ---- skyline: fill the lowest level with a buffer whose lifetime fits inside it ---- */

enum { SKY_WIDEST, SKY_TALLEST, SKY_EDGE, SKY_COUNT };
static const char *const sky_names[SKY_COUNT] = {"skyline-widest", "skyline-tallest", "skyline-edge"};

/* The skyline packer from a given state: h holds the skyline over the segments, un[0..nu) the
 * buffers still to place, top the arena so far. */
static uint64_t skyline_from(packer *p, int rule, uint64_t cap, uint64_t *h, int32_t *un, int32_t nu, uint64_t top)
{
    int32_t ns = p->n_seg;
    while (nu > 0) {
        int32_t L = 0;
        for (int32_t s = 1; s < ns; s++)
            if (h[s] < h[L]) L = s;
        uint64_t lvl = h[L];
        int32_t R = L + 1;
        while (R < ns && h[R] == lvl) R++;
        while (L > 0 && h[L - 1] == lvl) L--;
        int32_t best = -1;
        uint64_t bk1 = 0, bk2 = 0, bk3 = 0;
        p->work += (uint64_t)nu + (uint64_t)ns;
        for (int32_t u = 0; u < nu; u++) {
            int32_t i = un[u];
            if (p->sa[i] < L || p->sb[i] > R) continue;
            uint64_t len = (uint64_t)((int64_t)p->pt[p->sb[i]] - p->pt[p->sa[i]]), k1, k2, k3 = 0;
            switch (rule) {
            case SKY_WIDEST:
                k1 = len;
                k2 = p->size[i];
                break;
            case SKY_TALLEST:
                k1 = p->size[i];
                k2 = len;
                break;
            default: /* SKY_EDGE: an exact fit of the run, then touching one of its ends, then widest */
                k1 = (uint64_t)(p->sa[i] == L) + (uint64_t)(p->sb[i] == R);
                k2 = len;
                k3 = p->size[i];
                break;
            }
            if (best < 0 || k1 > bk1 || (k1 == bk1 && (k2 > bk2 || (k2 == bk2 && k3 > bk3)))) {
                best = u;
                bk1 = k1;
                bk2 = k2;
                bk3 = k3;
            }
        }
        if (best >= 0) {
            int32_t i = un[best];
            p->off[i] = lvl;
            for (int32_t s = p->sa[i]; s < p->sb[i]; s++) h[s] = lvl + p->size[i];
            if (lvl + p->size[i] > top) {
                top = lvl + p->size[i];
                if (top > cap) return UINT64_MAX;
            }
            un[best] = un[--nu];
            continue;
        }
        uint64_t up = UINT64_MAX;
        if (L > 0) up = h[L - 1];
        if (R < ns && h[R] < up) up = h[R];
        if (up == UINT64_MAX) return UINT64_MAX; /* cannot happen: the whole axis holds every buffer */
        for (int32_t s = L; s < R; s++) h[s] = up;
    }
    return top;
}

/* Returns the arena (UINT64_MAX when it exceeds cap); offsets in p->off. h: [n_seg] scratch,
 * un: [m] scratch. Each iteration finds the lowest run of segments [L, R) and places the best
 * buffer whose segment range lies inside it; when none does, the run is raised to its lower
 * neighbour (that area is wasted). */
static uint64_t skyline(packer *p, int rule, uint64_t cap, uint64_t *h, int32_t *un)
{
    int32_t nu = p->m;
    for (int32_t i = 0; i < nu; i++) un[i] = i;
    memset(h, 0, sizeof(uint64_t) * (size_t)p->n_seg);
    return skyline_from(p, rule, cap, h, un, nu, 0);
}

/* ---- skyline search: depth-first, the lowest-leftmost point first, bounded ---- */

/* A bounded depth-first search for a packing within `cap` (MiniMalloc's idea of canonical solutions,
 * simplified): the lowest, leftmost segment of the step axis that still has unplaced buffers live on
 * it is filled next, either by an unplaced buffer whose lifetime starts at that segment and fits in
 * the flat run there (every buffer then rests on the skyline: no other placement is needed), or by
 * leaving the segment empty up to its lower neighbour's level. A buffer resting on a run that is
 * lower at its left end could never start elsewhere, which is what makes the branching narrow.
 * Pruned by: level + size <= cap; for every segment, skyline + unplaced live bytes <= cap; and a
 * buffer's unplaced neighbours must still fit above it. Identical candidates are tried once. */

typedef struct sframe {
    int32_t L, R; /* the flat run [L, R) at level lvl this node fills at L */
    uint64_t lvl;
    int32_t c0, nc;  /* candidates: pool[c0 .. c0 + nc) */
    int32_t next;    /* next candidate to try; == nc: the waste move; > nc: exhausted */
    int32_t applied; /* buffer placed by the current move, -2 for waste, -1 none */
    uint64_t up;     /* waste: the level segments [L, wR) are raised to (0: no waste move) */
    int32_t wR;
} sframe;

typedef struct ssearch {
    uint64_t *h, *rem;
    int32_t *bstart, *blist; /* buffers by first segment, in the rule's preference order */
    sframe *fr;
    int32_t nfr, capfr;
    int32_t *pool;
    int32_t npool, cappool;
    int32_t n_placed, depth;  /* placed now; placed in the snapshot */
    uint64_t area, best_area; /* bytes x steps placed now; in the snapshot */
    uint8_t *can;             /* [n_seg + 1] run_cover's table */
    uint64_t *snap_off;       /* the deepest partial packing found */
    uint8_t *snap_placed;
} ssearch;

static void ssearch_free(ssearch *S)
{
    ig__free(S->h);
    ig__free(S->rem);
    ig__free(S->bstart);
    ig__free(S->blist);
    ig__free(S->fr);
    ig__free(S->pool);
    ig__free(S->can);
    ig__free(S->snap_off);
    ig__free(S->snap_placed);
}

/* 1 1 2 1 1 2 4 1 1 2 1 1 2 4 8 ...: restart lengths with a log-factor bound on wasted work */
static uint64_t luby(uint64_t i)
{
    for (;;) {
        uint64_t k = 1;
        while (((1ull << k) - 1) < i) k++;
        if (i == (1ull << k) - 1) return 1ull << (k - 1);
        i -= (1ull << (k - 1)) - 1;
    }
}

/* bucket buffers by first segment, each bucket in the order of `rule` */
static bool ssearch_rule(packer *p, ssearch *S, int rule, uint64_t *rng)
{
    okey *keys = ig__malloc(sizeof(okey) * ((size_t)p->m + 1));
    if (!keys) return false;
    for (int32_t i = 0; i < p->m; i++) {
        okey *k = &keys[i];
        k->i = i;
        k->k1 = UINT64_MAX - (uint64_t)p->sa[i]; /* ascending first segment */
        uint64_t sb = (uint64_t)p->sb[i], sz = p->size[i];
        switch (rule < 3 ? rule : 3) {
        case 0:
            k->k2 = sb;
            k->k3 = UINT64_MAX - sz;
            break; /* longest, then tallest */
        case 1:
            k->k2 = sb;
            k->k3 = sz;
            break; /* longest, then shortest */
        case 2:
            k->k2 = sz;
            k->k3 = UINT64_MAX - sb;
            break; /* tallest, then longest */
        default: { /* longest, with noise */
            double len = (double)(p->pt[p->sb[i]] - p->pt[p->sa[i]]);
            double noise = 0.5 + (double)(rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
            k->k2 = (uint64_t)(len * noise * 1024.0);
            k->k3 = rng_next(rng);
            break;
        }
        }
    }
    qsort(keys, (size_t)p->m, sizeof(okey), cmp_okey);
    memset(S->bstart, 0, sizeof(int32_t) * ((size_t)p->n_seg + 1));
    for (int32_t i = 0; i < p->m; i++) S->bstart[p->sa[i] + 1]++;
    for (int32_t s = 0; s < p->n_seg; s++) S->bstart[s + 1] += S->bstart[s];
    for (int32_t i = 0; i < p->m; i++) S->blist[i] = keys[i].i; /* sorted by sa first: buckets in place */
    ig__free(keys);
    return true;
}

/* Can the flat run [L, R) at level lvl be covered at that level? Segments without slack (every
 * byte above the skyline is needed by buffers still live there) must be covered exactly at lvl by
 * unplaced buffers lying inside the run; segments with slack may be left empty. can[s] says whether
 * [s, R) can be covered (a 1-D exact cover by dynamic programming, right to left). */
static void run_cover(packer *p, ssearch *S, int32_t L, int32_t R, uint64_t lvl, uint64_t cap)
{
    uint8_t *can = S->can;
    int32_t H = R;
    can[H] = 1;
    for (int32_t s = H - 1; s >= L; s--) {
        uint8_t ok = lvl + S->rem[s] < cap && can[s + 1];
        for (int32_t k = S->bstart[s]; k < S->bstart[s + 1] && !ok; k++) {
            int32_t i = S->blist[k];
            if (!p->placed[i] && p->sb[i] <= R && lvl + p->size[i] <= cap && (p->sb[i] >= H || can[p->sb[i]])) ok = 1;
        }
        can[s] = ok;
        p->work += (uint64_t)(S->bstart[s + 1] - S->bstart[s]) + 1;
    }
}

/* Candidates for filling the run [L, R) at its left end (after run_cover): buffers starting at L
 * whose rest of the run can still be covered; identical buffers only once. */
static int32_t run_cands(packer *p, ssearch *S, int32_t L, int32_t R, uint64_t lvl, uint64_t cap, int32_t *out)
{
    int32_t n = 0, prev = -1;
    for (int32_t k = S->bstart[L]; k < S->bstart[L + 1]; k++) {
        int32_t i = S->blist[k];
        if (p->placed[i] || p->sb[i] > R || lvl + p->size[i] > cap || !S->can[p->sb[i]]) continue;
        if (prev >= 0 && p->sb[prev] == p->sb[i] && p->size[prev] == p->size[i]) continue;
        if (out) out[n] = i;
        n++;
        prev = i;
    }
    return n;
}

/* Push the next node: among the flat runs at the lowest level (each can only be filled from its
 * left end), the one with the fewest moves, so that dead ends show up at once (first fail); a run
 * that cannot be covered makes the node a dead end. */
static bool spush(packer *p, ssearch *S, uint64_t cap, int32_t lo, int32_t hi)
{
    int32_t ns = p->n_seg;
    uint64_t lvl = UINT64_MAX;
    for (int32_t s = 0; s < ns; s++)
        if (S->rem[s] && S->h[s] < lvl) lvl = S->h[s];
    p->work += (uint64_t)ns / 8 + 1;
    if (S->nfr == S->capfr) {
        int32_t c = S->capfr ? 2 * S->capfr : 256;
        sframe *nf = ig__realloc(S->fr, sizeof(sframe) * (size_t)c);
        if (!nf) return false;
        S->fr = nf;
        S->capfr = c;
    }
    sframe *f = &S->fr[S->nfr++];
    memset(f, 0, sizeof *f);
    f->applied = -1;
    f->c0 = S->npool;
    if (lvl == UINT64_MAX) return true; /* nothing left: the caller stops before this */
    int32_t bestL = -1, bestR = -1, best_moves = INT32_MAX;
    uint64_t best_up = 0;
    for (int32_t s = 0; s < ns;) {
        if (!S->rem[s]) {
            s++;
            continue;
        }
        uint64_t l = S->h[s];
        int32_t L = s, R = s + 1;
        while (R < ns && S->h[R] == l && S->rem[R]) R++;
        s = R;
        /* a flat run lower than both neighbours (a well) must be covered at its level by buffers
         * inside it, whatever its level: checking every well, not just the lowest, finds the dead
         * end right after the placement that made it */
        bool left_wall = L == 0 || !S->rem[L - 1] || S->h[L - 1] > l;
        bool right_wall = R == ns || !S->rem[R] || S->h[R] > l;
        if (!left_wall || !right_wall) continue;
        /* wells away from the last move passed at the parent and have not changed */
        if (l != lvl && (R < lo || L > hi)) continue;
        run_cover(p, S, L, R, l, cap);
        if (!S->can[L]) { /* dead end */
            f->nc = 0;
            f->up = 0;
            return true;
        }
        if (l != lvl) continue;
        uint64_t up = UINT64_MAX;
        if (L > 0 && S->rem[L - 1] && S->h[L - 1] > lvl) up = S->h[L - 1];
        if (R < ns && S->rem[R] && S->h[R] > lvl && S->h[R] < up) up = S->h[R];
        if (up != UINT64_MAX)
            for (int32_t t = L; t < R; t++)
                if (up + S->rem[t] > cap) {
                    up = UINT64_MAX;
                    break;
                }
        up = up != UINT64_MAX ? up : 0;
        int32_t moves = run_cands(p, S, L, R, lvl, cap, NULL) + (up != 0);
        if (moves < best_moves) {
            best_moves = moves;
            bestL = L;
            bestR = R;
            best_up = up;
        }
    }
    f->L = bestL;
    f->R = bestR;
    f->lvl = lvl;
    f->up = best_up;
    int32_t need = S->bstart[bestL + 1] - S->bstart[bestL];
    if (S->npool + need > S->cappool) {
        int32_t c = S->cappool ? 2 * S->cappool : 1024;
        while (c < S->npool + need) c *= 2;
        int32_t *np = ig__realloc(S->pool, sizeof(int32_t) * (size_t)c);
        if (!np) return false;
        S->pool = np;
        S->cappool = c;
    }
    run_cover(p, S, bestL, bestR, lvl, cap);
    f->nc = run_cands(p, S, bestL, bestR, lvl, cap, S->pool + S->npool);
    S->npool += f->nc;
    return true;
}

static void sundo(packer *p, ssearch *S, sframe *f)
{
    if (f->applied >= 0) {
        int32_t i = f->applied;
        for (int32_t s = p->sa[i]; s < p->sb[i]; s++) {
            S->h[s] = f->lvl;
            S->rem[s] += p->size[i];
        }
        p->placed[i] = 0;
        S->n_placed--;
        S->area -= p->size[i] * (uint64_t)(p->pt[p->sb[i]] - p->pt[p->sa[i]]);
    } else if (f->applied == -2) {
        for (int32_t s = f->L; s < f->wR; s++) S->h[s] = f->lvl;
    }
    f->applied = -1;
}

/* 1: found (offsets in p->off), 0: not within budget or none exists, -1: out of memory */
static int sky_search(packer *p, ssearch *S, uint64_t cap, uint64_t budget)
{
    int32_t m = p->m;
    uint64_t w0 = p->work;
    memset(S->h, 0, sizeof(uint64_t) * (size_t)p->n_seg);
    memcpy(S->rem, p->seg_live, sizeof(uint64_t) * (size_t)p->n_seg);
    memset(p->placed, 0, (size_t)m);
    S->nfr = S->npool = S->n_placed = 0;
    S->area = S->best_area = 0;
    if (!spush(p, S, cap, 0, p->n_seg)) return -1;
    while (S->nfr > 0) {
        if (p->work - w0 > budget) return 0;
        sframe *f = &S->fr[S->nfr - 1];
        sundo(p, S, f);
        if (f->next < f->nc) {
            int32_t i = S->pool[f->c0 + f->next++];
            uint64_t top = f->lvl + p->size[i];
            for (int32_t s = p->sa[i]; s < p->sb[i]; s++) {
                S->h[s] = top;
                S->rem[s] -= p->size[i];
            }
            p->placed[i] = 1;
            p->off[i] = f->lvl;
            S->n_placed++;
            S->area += p->size[i] * (uint64_t)(p->pt[p->sb[i]] - p->pt[p->sa[i]]);
            f->applied = i;
            bool ok = true;
            /* every unplaced neighbour must still fit above this buffer */
            for (int32_t e = p->adj_start[i]; e < p->adj_start[i + 1]; e++) {
                int32_t j = p->adj[e];
                if (!p->placed[j] && top + p->size[j] > cap) {
                    ok = false;
                    break;
                }
            }
            p->work += (uint64_t)(p->adj_start[i + 1] - p->adj_start[i]) / 4 + (uint64_t)(p->sb[i] - p->sa[i]);
            if (!ok) continue;
            if (S->n_placed == m) return 1;
            if (S->area > S->best_area) { /* the partial packing covering most, for completion */
                S->best_area = S->area;
                S->depth = S->n_placed;
                memcpy(S->snap_off, p->off, sizeof(uint64_t) * (size_t)m);
                memcpy(S->snap_placed, p->placed, (size_t)m);
            }
            if (!spush(p, S, cap, p->sa[i], p->sb[i])) return -1;
        } else if (f->next == f->nc && f->up) {
            f->next++;
            f->wR = f->R;
            for (int32_t s = f->L; s < f->wR; s++) S->h[s] = f->up;
            f->applied = -2;
            if (!spush(p, S, cap, f->L, f->wR)) return -1;
        } else {
            S->npool = f->c0;
            S->nfr--;
        }
    }
    return 0;
}

/* ---- improvement: iterated greedy on the best order ---- */

/* Move the buffers that stick out above a random threshold between LB and the arena to the front of
 * the order (keeping their relative order), sometimes with a few random swaps among them, and pack
 * again; keep the new order when it is no worse. This is the "re-place the buffers touching the peak"
 * step: greedy placement is good at packing what comes first, so what overflowed goes first. */
static void perturb(packer *p, const int32_t *order, const uint64_t *off, uint64_t arena, uint64_t *rng, int32_t *out,
                    uint8_t *mark)
{
    int32_t m = p->m;
    uint64_t lb = p->lb;
    uint64_t span_ = arena > lb ? arena - lb : 1;
    uint64_t thr = lb + (rng_next(rng) % (span_ + 1));
    if (thr >= arena) thr = arena - 1;
    int32_t n_mark = 0;
    for (int32_t i = 0; i < m; i++) {
        mark[i] = off[i] + p->size[i] > thr;
        n_mark += mark[i];
    }
    /* also move a random conflicting neighbour of a marked buffer sometimes: what is under the
     * culprit often has to move for it to go lower */
    uint32_t mode = rng_below(rng, 4);
    if (mode == 0 && n_mark < m) {
        for (int32_t i = 0; i < m; i++) {
            if (mark[i] != 1) continue;
            int32_t deg = p->adj_start[i + 1] - p->adj_start[i];
            if (deg && rng_below(rng, 2)) {
                int32_t j = p->adj[p->adj_start[i] + (int32_t)rng_below(rng, (uint32_t)deg)];
                if (!mark[j]) mark[j] = 2;
            }
        }
    }
    int32_t w = 0;
    for (int32_t t = 0; t < m; t++)
        if (mark[order[t]]) out[w++] = order[t];
    int32_t nm = w;
    for (int32_t t = 0; t < m; t++)
        if (!mark[order[t]]) out[w++] = order[t];
    /* random swaps inside the moved block, or between block and the rest */
    uint32_t n_swaps = mode == 1 ? 1 + rng_below(rng, 3) : 0;
    for (uint32_t k = 0; k < n_swaps && m > 1; k++) {
        int32_t a = (int32_t)rng_below(rng, (uint32_t)(nm > 1 ? nm : m));
        int32_t b = (int32_t)rng_below(rng, (uint32_t)m);
        int32_t t = out[a];
        out[a] = out[b];
        out[b] = t;
    }
    if (mode == 2 && m > 1) { /* an adjacent swap anywhere: plateau moves */
        int32_t a = (int32_t)rng_below(rng, (uint32_t)(m - 1));
        int32_t t = out[a];
        out[a] = out[a + 1];
        out[a + 1] = t;
    }
}

/* Restarted searches at the lower bound: three deterministic candidate orders, then randomised
 * ones, with budgets growing along Luby's sequence (a search that took a wrong turn near the root
 * rarely recovers by backtracking; a fresh start often does). When a search fails, its deepest
 * partial packing, tight at the bottom, is completed by best-fit in size order. Returns -1 when
 * out of memory. */
static int search_phase(packer *p, const ig_pack_options *o, const int32_t *size_order, int32_t *cand, uint64_t *best,
                        uint64_t *best_off, ig_pack_result *res)
{
    int32_t m = p->m;
    size_t mm = (size_t)m + 1, ns1 = (size_t)p->n_seg + 1;
    ssearch S;
    memset(&S, 0, sizeof S);
    S.h = ig__malloc(sizeof(uint64_t) * ns1);
    S.rem = ig__malloc(sizeof(uint64_t) * ns1);
    S.bstart = ig__malloc(sizeof(int32_t) * (ns1 + 1));
    S.blist = ig__malloc(sizeof(int32_t) * mm);
    S.can = ig__malloc(ns1);
    S.snap_off = ig__malloc(sizeof(uint64_t) * mm);
    S.snap_placed = ig__malloc(mm);
    int rc = S.h && S.rem && S.bstart && S.blist && S.can && S.snap_off && S.snap_placed ? 0 : -1;
    uint64_t rng = o->seed ? o->seed : 0x5ca1ab1eu;
    /* budgets grow with the instance (a small one that cannot reach the bound should not cost as much
     * as a hard large one) up to a cap: about 30 ms at effort 1, seconds at effort 2 */
    uint64_t total = o->effort >= 2 ? 300000000ull : 10000000ull, unit = o->effort >= 2 ? 3000000ull : 300000ull;
    uint64_t scale = (uint64_t)m * (o->effort >= 2 ? 1000000ull : 25000ull);
    if (scale < total) total = scale;
    if (unit > total / 8) unit = total / 8 + 1;
    uint64_t w0 = p->work, top_area = 0;
    for (int r = 0; rc == 0 && *best > p->lb && p->work - w0 < total; r++) {
        if (!ssearch_rule(p, &S, r, &rng)) {
            rc = -1;
            break;
        }
        uint64_t budget = unit * luby((uint64_t)r + 1), left = total - (p->work - w0);
        S.depth = 0;
        rc = sky_search(p, &S, p->lb, budget < left ? budget : left);
        res->n_runs++;
        if (rc == 1) {
            uint64_t a = 0;
            for (int32_t k = 0; k < m; k++)
                if (p->off[k] + p->size[k] > a) a = p->off[k] + p->size[k];
            if (a < *best) {
                *best = a;
                memcpy(best_off, p->off, sizeof(uint64_t) * (size_t)m);
                res->strategy = "skyline-search";
            }
        } else if (rc == 0 && S.depth > 0 && S.best_area >= top_area - top_area / 8) {
            /* completing costs as much as a search: only for partials about as good as the best */
            if (S.best_area > top_area) top_area = S.best_area;
            memcpy(p->off, S.snap_off, sizeof(uint64_t) * (size_t)m);
            memcpy(p->placed, S.snap_placed, (size_t)m);
            uint64_t top = 0;
            int32_t nr = 0;
            for (int32_t k = 0; k < m; k++)
                if (p->placed[k] && p->off[k] + p->size[k] > top) top = p->off[k] + p->size[k];
            for (int32_t k = 0; k < m; k++)
                if (!p->placed[size_order[k]]) cand[nr++] = size_order[k];
            uint64_t a = place_from(p, cand, nr, FIT_BEST, *best - 1, top);
            if (a < *best) {
                *best = a;
                memcpy(best_off, p->off, sizeof(uint64_t) * (size_t)m);
                res->strategy = "skyline-search+greedy";
            }
            /* ... and by the skyline packers, which continue filling its lowest levels */
            for (int rule = 0; rule < SKY_COUNT; rule++) {
                memcpy(p->off, S.snap_off, sizeof(uint64_t) * (size_t)m);
                memset(S.h, 0, sizeof(uint64_t) * (size_t)p->n_seg);
                for (int32_t k = 0; k < m; k++) {
                    if (!S.snap_placed[k]) continue;
                    for (int32_t sg = p->sa[k]; sg < p->sb[k]; sg++)
                        if (p->off[k] + p->size[k] > S.h[sg]) S.h[sg] = p->off[k] + p->size[k];
                }
                p->work += (uint64_t)m + (uint64_t)p->n_seg;
                a = skyline_from(p, rule, *best - 1, S.h, cand, nr, top);
                p->work += (uint64_t)nr * (uint64_t)(nr + p->n_seg);
                if (a < *best) {
                    *best = a;
                    memcpy(best_off, p->off, sizeof(uint64_t) * (size_t)m);
                    res->strategy = "skyline-search+skyline";
                }
                nr = 0; /* skyline_from reorders cand: rebuild it */
                for (int32_t k = 0; k < m; k++)
                    if (!S.snap_placed[size_order[k]]) cand[nr++] = size_order[k];
            }
        }
    }
    ssearch_free(&S);
    return rc < 0 ? -1 : 0;
}

/* ---- driver ---- */

uint64_t ig__pack_lower_bound(const ig_pack_buf *bufs, int32_t n, uint64_t align, int32_t *peak_step)
{
    if (!align) align = IG_PLAN_ALIGN_DEFAULT;
    packer p;
    if (peak_step) *peak_step = -1;
    if (packer_init(&p, bufs, n, align, false, NULL) != INGOT_OK) {
        packer_free(&p);
        return 0;
    }
    uint64_t lb = p.lb;
    if (peak_step && p.m) {
        for (int32_t s = 0; s < p.n_seg; s++)
            if (p.seg_live[s] == lb) {
                *peak_step = p.pt[s];
                break;
            }
    }
    packer_free(&p);
    return lb;
}

ingot_status ig__pack(const ig_pack_buf *bufs, int32_t n, const ig_pack_options *opt, uint64_t *offsets,
                      ig_pack_result *res, ig_err *err)
{
    ig_pack_options o = opt ? *opt : ig__pack_options_default();
    if (!o.align) o.align = IG_PLAN_ALIGN_DEFAULT;
    if (o.align & (o.align - 1))
        return ig__errf(err, INGOT_ERR_INVALID_ARG, "alignment %" PRIu64 " is not a power of two", o.align);
    if (n < 0) return ig__errf(err, INGOT_ERR_INVALID_ARG, "negative buffer count %d", (int)n);
    memset(res, 0, sizeof *res);
    res->peak_step = -1;
    res->strategy = "empty";
    for (int32_t i = 0; i < n; i++) offsets[i] = 0;

    packer p;
    ingot_status st = packer_init(&p, bufs, n, o.align, true, err);
    int32_t *order = NULL, *best_order = NULL, *cand = NULL, *un = NULL;
    uint64_t *best_off = NULL, *cur_off = NULL, *h = NULL;
    uint8_t *mark = NULL;
    rmq rq = {0, 0, NULL};
    if (st != INGOT_OK) goto out;
    for (int32_t i = 0; i < n; i++)
        res->no_reuse = sat_add(res->no_reuse, (bufs[i].size + o.align - 1) & ~(o.align - 1));
    res->lower_bound = p.lb;
    for (int32_t s = 0; s < p.n_seg && p.m; s++)
        if (p.seg_live[s] == p.lb) {
            res->peak_step = p.pt[s];
            break;
        }
    if (!p.m) goto out;

    int32_t m = p.m;
    size_t mm = (size_t)m + 1;
    order = ig__malloc(sizeof(int32_t) * mm);
    best_order = ig__malloc(sizeof(int32_t) * mm);
    cand = ig__malloc(sizeof(int32_t) * mm);
    best_off = ig__malloc(sizeof(uint64_t) * mm);
    cur_off = ig__malloc(sizeof(uint64_t) * mm);
    mark = ig__malloc(mm);
    if (!order || !best_order || !cand || !best_off || !cur_off || !mark || !rmq_build(&rq, p.seg_live, p.n_seg))
        goto oom;

    uint64_t best = UINT64_MAX;
    int best_fit = FIT_BEST;
    bool have_order = false;
    /* At the default effort, within 0.5% of the bound is good enough: once there, the remaining
     * strategies and the costlier phases below are skipped (what keeps planning a 2,000-node graph
     * within milliseconds). Otherwise only the bound itself stops the work. */
    uint64_t enough = o.effort == 1 ? p.lb + p.lb / 200 : p.lb;
    /* one-pass strategies */
    for (int k = 0; k < ORD_COUNT && best > enough; k++) {
        IG_TRY(st, make_order(&p, k, order, &rq, err), out);
        for (int fit = FIT_BEST; fit <= FIT_FIRST && best > enough; fit++) {
            /* first-fit only for the two orders where it tends to differ usefully */
            if (fit == FIT_FIRST && k != ORD_SIZE && k != ORD_LENGTH) continue;
            uint64_t a = run_place(&p, order, fit, best == UINT64_MAX ? UINT64_MAX : best - 1);
            res->n_runs++;
            if (a < best) {
                best = a;
                best_fit = fit;
                memcpy(best_off, p.off, sizeof(uint64_t) * (size_t)m);
                memcpy(best_order, order, sizeof(int32_t) * (size_t)m);
                have_order = true;
                res->strategy = fit == FIT_FIRST ? (k == ORD_SIZE ? "greedy-size-firstfit" : "greedy-lifetime-firstfit")
                                                 : ord_names[k];
            }
        }
    }
    bool more = o.effort >= 1 && best > enough;
    /* skyline packers and the search: quadratic in the number of buffers, so only where that stays cheap */
    bool sky_ok = (uint64_t)m * (uint64_t)(m + p.n_seg) <= (o.effort >= 2 ? 400000000ull : 8000000ull);
    if (more && sky_ok) {
        h = ig__malloc(sizeof(uint64_t) * ((size_t)p.n_seg + 1));
        un = ig__malloc(sizeof(int32_t) * mm);
        if (!h || !un) goto oom;
        for (int r = 0; r < SKY_COUNT && best > p.lb; r++) {
            uint64_t a = skyline(&p, r, best - 1, h, un);
            res->n_runs++;
            if (a < best) {
                best = a;
                memcpy(best_off, p.off, sizeof(uint64_t) * (size_t)m);
                res->strategy = sky_names[r];
            }
        }
    }
    /* bounded search for a packing at the lower bound (perfect instances) */
    if (more && best > p.lb && sky_ok) {
        IG_TRY(st, make_order(&p, ORD_SIZE, order, &rq, err), out);
        if (search_phase(&p, &o, order, cand, &best, best_off, res) < 0) goto oom;
    }
    /* improvement: iterated greedy from the best greedy order, bounded by neighbour visits */
    if (more && best > p.lb && have_order) {
        uint64_t rng = o.seed ? o.seed : 0x1e607u;
        uint64_t budget = o.effort >= 2 ? 100000000ull : 3000000ull;
        if ((uint64_t)m * 20000ull < budget) budget = (uint64_t)m * 20000ull;
        uint64_t start_work = p.work;
        uint64_t cur = run_place(&p, best_order, best_fit, UINT64_MAX);
        memcpy(cur_off, p.off, sizeof(uint64_t) * (size_t)m);
        memcpy(order, best_order, sizeof(int32_t) * (size_t)m);
        int32_t max_iter = o.effort >= 2 ? 20000 : 400;
        for (int32_t it = 0; it < max_iter && p.work - start_work < budget && best > p.lb; it++) {
            perturb(&p, order, cur_off, cur, &rng, cand, mark);
            uint64_t a = run_place(&p, cand, best_fit, cur);
            res->n_runs++;
            if (a == UINT64_MAX) continue;
            memcpy(order, cand, sizeof(int32_t) * (size_t)m);
            memcpy(cur_off, p.off, sizeof(uint64_t) * (size_t)m);
            cur = a;
            if (a < best) {
                best = a;
                memcpy(best_off, p.off, sizeof(uint64_t) * (size_t)m);
                res->strategy = "iterated-greedy";
            }
        }
    }
    res->arena = best;
    for (int32_t k = 0; k < m; k++) offsets[p.id[k]] = best_off[k];
    goto out;
oom:
    st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory planning %d buffers", (int)n);
out:
    ig__free(rq.t);
    ig__free(order);
    ig__free(best_order);
    ig__free(cand);
    ig__free(best_off);
    ig__free(cur_off);
    ig__free(mark);
    ig__free(h);
    ig__free(un);
    packer_free(&p);
    return st;
}

/* ---- verifier ---- */

typedef struct chk {
    int32_t first, last, i;
} chk;

static int cmp_chk(const void *a, const void *b)
{
    const chk *x = a, *y = b;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

ingot_status ig__pack_check(const ig_pack_buf *bufs, int32_t n, const uint64_t *offsets, uint64_t align, uint64_t arena,
                            ig_err *err)
{
    if (!align) align = IG_PLAN_ALIGN_DEFAULT;
    if (align & (align - 1))
        return ig__errf(err, INGOT_ERR_INVALID_ARG, "alignment %" PRIu64 " is not a power of two", align);
    for (int32_t i = 0; i < n; i++) {
        if (bufs[i].first > bufs[i].last)
            return ig__errf(err, INGOT_ERR_INTERNAL, "buffer %d: first step %d after last step %d", (int)i,
                            (int)bufs[i].first, (int)bufs[i].last);
        if (!bufs[i].size) continue;
        if (offsets[i] & (align - 1))
            return ig__errf(err, INGOT_ERR_INTERNAL, "buffer %d: offset %" PRIu64 " is not a multiple of %" PRIu64,
                            (int)i, offsets[i], align);
        if (offsets[i] > arena || bufs[i].size > arena - offsets[i])
            return ig__errf(err, INGOT_ERR_INTERNAL,
                            "buffer %d: bytes [%" PRIu64 ", %" PRIu64 ") outside the arena of %" PRIu64 " bytes",
                            (int)i, offsets[i], offsets[i] + bufs[i].size, arena);
    }
    uint64_t lb = ig__pack_lower_bound(bufs, n, align, NULL);
    if (arena < lb)
        return ig__errf(err, INGOT_ERR_INTERNAL,
                        "arena %" PRIu64 " is below the lower bound %" PRIu64
                        " (impossible: the packing must overlap somewhere)",
                        arena, lb);
    chk *c = ig__malloc(sizeof(chk) * ((size_t)n + 1));
    int32_t *active = ig__malloc(sizeof(int32_t) * ((size_t)n + 1));
    ingot_status st = INGOT_OK;
    if (!c || !active) {
        st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory checking %d buffers", (int)n);
        goto out;
    }
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (bufs[i].size) c[m++] = (chk){bufs[i].first, bufs[i].last, i};
    qsort(c, (size_t)m, sizeof(chk), cmp_chk);
    /* the active set holds buffers live at the current first step; every newcomer is compared with
     * all of them in bytes: exactly the lifetime-overlapping pairs */
    int32_t na = 0;
    for (int32_t e = 0; e < m; e++) {
        int32_t i = c[e].i, w = 0;
        for (int32_t a = 0; a < na; a++)
            if (bufs[active[a]].last >= bufs[i].first) active[w++] = active[a];
        na = w;
        uint64_t lo = offsets[i], hi = offsets[i] + bufs[i].size;
        for (int32_t a = 0; a < na; a++) {
            int32_t j = active[a];
            uint64_t lo2 = offsets[j], hi2 = offsets[j] + bufs[j].size;
            if (lo < hi2 && lo2 < hi) {
                st = ig__errf(err, INGOT_ERR_INTERNAL,
                              "buffers %d (steps %d..%d, bytes [%" PRIu64 ", %" PRIu64 ")) and %d (steps %d..%d, "
                              "bytes [%" PRIu64 ", %" PRIu64 ")) are live together and overlap",
                              (int)i, (int)bufs[i].first, (int)bufs[i].last, lo, hi, (int)j, (int)bufs[j].first,
                              (int)bufs[j].last, lo2, hi2);
                goto out;
            }
        }
        active[na++] = i;
    }
out:
    ig__free(c);
    ig__free(active);
    return st;
}
