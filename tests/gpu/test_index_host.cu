/*
 * test_index_host.cu -- GatherElements and ScatterElements of index.cu by rows (ix_row, ix_col,
 * ix_row_width) run on the host, thread by thread as ix_elements_rows walks them, against a direct
 * reference from each element's coordinates: random ranks 1-5, every axis, data read through strides
 * (a transposed or sliced view), indices broadcast along some dims, negative and out-of-range indices
 * (clamped), rows shorter and longer than a block.
 *
 * Every output element must be written exactly once with the reference's value (gather), and every
 * update must land where the reference puts it (scatter, indices made distinct along the axis).
 */
#include "../../src/cuda/kernels/index.cu"

#include "host_rng.h"

#include <stdio.h>
#include <string.h>
#include <vector>

static int failures;

static void run_case(int trial, bool scatter)
{
    ig_index_args a;
    memset(&a, 0, sizeof a);
    a.op = scatter ? IG_IX_SCATTER_ELEMENTS : IG_IX_GATHER_ELEMENTS;
    a.esize = 4;
    a.idx_dtype = rnd() % 2 ? INGOT_DTYPE_INT64 : INGOT_DTYPE_INT32;
    a.rank = (int32_t)rint_in(1, 5);
    a.axis = (int32_t)rint_in(0, a.rank - 1);
    int64_t xd[IG_IX_MAX_RANK]; /* the data's dims (scatter: the output's) */
    for (int d = 0; d < a.rank; d++) {
        a.dims[d] = d == a.rank - 1 && trial % 5 == 0 ? rint_in(200, 600) : rint_in(1, 6);
        xd[d] = d == a.axis ? a.dims[d] + rint_in(0, 3) : a.dims[d];
    }
    a.axis_dim = xd[a.axis];
    /* data strides: dense, or dense over a permutation of the dims (a transposed view), maybe padded */
    int perm[IG_IX_MAX_RANK];
    for (int d = 0; d < a.rank; d++) perm[d] = d;
    if (!scatter && rnd() % 2)
        for (int d = a.rank - 1; d > 0; d--) {
            const int j = (int)rint_in(0, d), t = perm[d];
            perm[d] = perm[j], perm[j] = t;
        }
    int64_t st = 1 + (!scatter && rnd() % 3 == 0 ? rint_in(1, 2) : 0), xsize = 1;
    for (int q = a.rank - 1; q >= 0; q--) {
        a.ts[perm[q]] = st;
        st *= xd[perm[q]] + (scatter ? 0 : rint_in(0, 1));
    }
    xsize = st + 8;
    /* indices: dense over their dims, broadcast (stride 0) where the dim is kept at 1 in storage */
    int64_t is = 1, isize = 1;
    for (int d = a.rank - 1; d >= 0; d--) {
        const bool bcast = !scatter && a.dims[d] > 1 && rnd() % 3 == 0;
        a.is[d] = bcast ? 0 : is;
        if (!bcast) is *= a.dims[d];
    }
    isize = is;
    a.n = 1;
    for (int d = 0; d < a.rank; d++) a.n *= a.dims[d];
    std::vector<long long> idx64((size_t)isize);
    std::vector<int> idx32((size_t)isize);
    for (int64_t i = 0; i < isize; i++) {
        const int64_t v = rint_in(-a.axis_dim - 2, a.axis_dim + 1); /* some out of range: clamped */
        idx64[(size_t)i] = v;
        idx32[(size_t)i] = (int)v;
    }
    std::vector<uint32_t> x((size_t)xsize), u((size_t)a.n), y;
    for (int64_t i = 0; i < xsize; i++) x[(size_t)i] = (uint32_t)(i * 2654435761u);
    for (int64_t i = 0; i < a.n; i++) u[(size_t)i] = (uint32_t)(i + 1);
    /* coordinates of iteration element e */
    auto coords = [&](int64_t e, int64_t *c) {
        for (int d = a.rank - 1; d >= 0; d--) {
            c[d] = e % a.dims[d];
            e /= a.dims[d];
        }
    };
    if (scatter) { /* distinct targets along the axis within each line: c -> (7c + 3) mod dims[axis] */
        if (a.dims[a.axis] % 7 == 0) return; /* 7 and the length not coprime: not a permutation */
        for (int64_t e = 0; e < a.n; e++) {
            int64_t c[IG_IX_MAX_RANK], io = 0;
            coords(e, c);
            for (int d = 0; d < a.rank; d++) io += c[d] * a.is[d];
            const int64_t v = (c[a.axis] * 7 + 3) % a.dims[a.axis];
            const int64_t sv = e % 3 == 0 ? v - a.axis_dim : v; /* negative ones count from the end */
            idx64[(size_t)io] = sv;
            idx32[(size_t)io] = (int)sv;
        }
    }
    a.idx = a.idx_dtype == INGOT_DTYPE_INT64 ? (const void *)idx64.data() : (const void *)idx32.data();
    a.x = x.data();
    a.upd = u.data();
    y.assign((size_t)(scatter ? xsize : a.n), 0xA5A5A5A5u);
    if (scatter) y = x; /* the lowering copies the data into the output first */
    std::vector<int> writes(y.size(), 0);
    a.y = y.data();
    /* ix_elements_rows, thread by thread */
    const int width = ix_row_width(a), per = IX_BLOCK / width;
    const int64_t len = a.dims[a.rank - 1], rows = a.n / len;
    for (int64_t row0 = 0; row0 < rows; row0 += per)
        for (int t = 0; t < IX_BLOCK; t++) {
            const int64_t row = row0 + t / width;
            if (row >= rows) continue;
            int64_t off, ioff;
            ix_row(a, row, a.ts, off, ioff);
            for (int64_t col = t % width; col < len; col += width) {
                const int64_t o = ix_col(a, off, ioff, col, a.ts), e = row * len + col;
                if (o < 0 || o >= xsize || e >= a.n) {
                    if (failures++ < 10)
                        printf("FAIL trial %d: element %lld at offset %lld\n", trial, (long long)e, (long long)o);
                    return;
                }
                if (scatter)
                    y[(size_t)o] = u[(size_t)e], writes[(size_t)o]++;
                else
                    y[(size_t)e] = x[(size_t)o], writes[(size_t)e]++;
            }
        }
    /* the reference */
    int64_t wrong = 0;
    for (int64_t e = 0; e < a.n; e++) {
        int64_t c[IG_IX_MAX_RANK], io = 0, o = 0;
        coords(e, c);
        for (int d = 0; d < a.rank; d++) io += c[d] * a.is[d];
        int64_t v = idx64[(size_t)io];
        if (v < 0) v += a.axis_dim;
        v = v < 0 ? 0 : v >= a.axis_dim ? a.axis_dim - 1 : v;
        for (int d = 0; d < a.rank; d++) o += (d == a.axis ? v : c[d]) * a.ts[d];
        if (scatter ? (y[(size_t)o] != u[(size_t)e] || writes[(size_t)o] != 1)
                    : (y[(size_t)e] != x[(size_t)o] || writes[(size_t)e] != 1))
            wrong++;
    }
    if (wrong && failures++ < 10)
        printf("FAIL trial %d (%s rank %d axis %d, row %lld, width %d): %lld of %lld wrong\n", trial,
               scatter ? "scatter" : "gather", a.rank, a.axis, (long long)len, width, (long long)wrong, (long long)a.n);
}

int main(void)
{
    const int trials = 400;
    for (int t = 0; t < trials; t++) run_case(t, t % 2 == 1);
    printf("%d trials, %d failed\n", trials, failures);
    return failures ? 1 : 0;
}
