/*
 * test_ew_transpose_host.cu -- the transposing copy's index math (src/cuda/kernels/ew_transpose.cuh) run
 * on the host, block by block and thread by thread in the kernel's two phases (each thread's load runs,
 * then its store runs), against a direct strided
 * copy: random [outer..., C, P] problems with NCHW-like and padded inputs (rows of a wider buffer, an
 * offset slab), C from 2 to TR_MAX_C, P below, at and across tile edges, and the cases the kernel must
 * refuse (a C too wide, an output that does not run along C, a program that computes).
 *
 * The register form (C of 3 or 4) likewise, thread by thread.
 *
 * Every output element must be written exactly once, with the input element at the same coordinates;
 * every tile slot read in the store phase must have been written in the load phase of the same block,
 * and every slot must lie inside the tile.
 */
#include "../../src/cuda/kernels/ew_transpose.cuh"

#include <stdio.h>
#include <string.h>
#include <vector>

#include "host_check.h"
#include "host_rng.h"

/* A copy program over dims (outermost first) with the input's strides and a dense [P, C] output. */
static ig_ew_args copy_args(int rank, const int64_t *dims, const int64_t *in_strides, int in_kind)
{
    ig_ew_args a;
    memset(&a, 0, sizeof a);
    a.rank = rank;
    a.n = 1;
    for (int d = 0; d < rank; d++) {
        a.dims[d] = dims[d];
        a.n *= dims[d];
        a.in_strides[0][d] = in_strides[d];
    }
    /* output: dense over [outer..., P, C] */
    const int64_t C = dims[rank - 2], P = dims[rank - 1];
    a.out_strides[rank - 2] = 1;
    a.out_strides[rank - 1] = C;
    int64_t s = C * P;
    for (int d = rank - 3; d >= 0; d--) {
        a.out_strides[d] = s;
        s *= dims[d];
    }
    a.out_dtype = INGOT_DTYPE_FLOAT16;
    a.n_in = 1;
    a.n_ops = 1;
    a.in_dtype[0] = INGOT_DTYPE_FLOAT;
    a.in_kind[0] = in_kind;
    a.ops[0].code = IG_EW_LOAD;
    a.ops[0].a = 0;
    a.ops[0].dst = 0;
    a.result = 0;
    return a;
}

/* Every output written exactly once, with the input element at the same coordinates: the direct copy
 * (element e of the iteration, input through its strides, output through out_strides). */
static void check_direct(const ig_ew_args &a, const std::vector<double> &in, const std::vector<double> &out,
                         const std::vector<int> &writes, const char *what)
{
    int64_t wrong = 0, multi = 0;
    for (int64_t e = 0; e < a.n; e++) {
        int64_t rem = e, io = 0, oo = 0;
        for (int d = a.rank - 1; d >= 0; d--) {
            const int64_t c = rem % a.dims[d];
            rem /= a.dims[d];
            io += c * tr_in_stride(a, d);
            oo += c * a.out_strides[d];
        }
        if (writes[(size_t)oo] != 1) multi++;
        if (out[(size_t)oo] != in[(size_t)io]) wrong++;
    }
    CHECK(wrong == 0 && multi == 0, "%s: %lld of %lld outputs wrong, %lld not written exactly once", what,
          (long long)wrong, (long long)a.n, (long long)multi);
}

/* Run the kernel's two phases over every block on the host; compare with the direct copy. */
static void run_case(const ig_ew_args &a, int64_t in_size, const char *what)
{
    std::vector<double> in((size_t)in_size), out((size_t)a.n, -1.0);
    std::vector<int> writes((size_t)a.n, 0);
    for (int64_t i = 0; i < in_size; i++) in[(size_t)i] = (double)i + 0.5;
    const int C = (int)a.dims[a.rank - 2];
    const int64_t blocks = tr_blocks(a);
    std::vector<double> tile(TR_MAX_C * TR_LD);
    std::vector<int64_t> stamp(TR_MAX_C * TR_LD);
    bool bad_slot = false, bad_src = false, bad_dst = false, stale = false;
    for (int64_t b = 0; b < blocks; b++) {
        int64_t ib, ob, p0, ic, off;
        int slot;
        tr_tile(a, b, ib, ob, p0, ic);
        for (int t = 0; t < TR_THREADS; t++) /* the load phase: each thread's 2 * C runs */
            for (int c = 0; c < C; c++)
                for (int h = 0; h < 2; h++) {
                    const int k = tr_load_run(a, ib, ic, p0, t, c, h, off, slot);
                    if (slot % 4 != 0) bad_slot = true; /* the tile is written in float4s */
                    for (int e = 0; e < k; e++) {
                        if (slot + e < 0 || slot + e >= TR_MAX_C * TR_LD)
                            bad_slot = true;
                        else if (off + e < 0 || off + e >= in_size)
                            bad_src = true;
                        else {
                            tile[(size_t)(slot + e)] = in[(size_t)(off + e)];
                            stamp[(size_t)(slot + e)] = b + 1;
                        }
                    }
                }
        const int n = tr_tile_outputs(a, p0);
        for (int t = 0; t < TR_THREADS; t++) /* the store phase: runs of TR_OUT_RUN outputs */
            for (int i = TR_OUT_RUN * t; i < n; i += TR_OUT_RUN * TR_THREADS)
                for (int e = i; e < n && e < i + TR_OUT_RUN; e++) {
                    slot = tr_slot(C, e);
                    off = ob + p0 * C + e;
                    if (slot < 0 || slot >= TR_MAX_C * TR_LD)
                        bad_slot = true;
                    else if (off < 0 || off >= a.n)
                        bad_dst = true;
                    else {
                        if (stamp[(size_t)slot] != b + 1) stale = true;
                        out[(size_t)off] = tile[(size_t)slot];
                        writes[(size_t)off]++;
                    }
                }
    }
    CHECK(!bad_slot && !bad_src && !bad_dst && !stale, "%s: slot %d, source %d, destination %d, stale slot %d", what,
          bad_slot, bad_src, bad_dst, stale);
    check_direct(a, in, out, writes, what);
}

/* The register form over every thread on the host: its TR8_PIX positions of each of the C rows in, its
 * TR8_PIX * C outputs out in the kernel's store order; every run must start on a multiple of TR8_PIX
 * elements (16-byte aligned accesses when the buffers are). */
static void run_case_tr8(const ig_ew_args &a, int64_t in_size, const char *what)
{
    std::vector<double> in((size_t)in_size), out((size_t)a.n, -1.0);
    std::vector<int> writes((size_t)a.n, 0);
    for (int64_t i = 0; i < in_size; i++) in[(size_t)i] = (double)i + 0.5;
    const int C = (int)a.dims[a.rank - 2];
    bool bad_src = false, bad_dst = false, misaligned = false;
    for (int64_t t = 0; t < tr8_threads(a); t++) {
        int64_t io, ic, oo;
        tr8_group(a, (unsigned)t, io, ic, oo);
        if (io % TR8_PIX || ic % TR8_PIX || oo % TR8_PIX) misaligned = true;
        for (int e = 0; e < TR8_PIX * C; e++) {
            const int64_t src = io + (e % C) * ic + e / C, dst = oo + e;
            if (src < 0 || src >= in_size)
                bad_src = true;
            else if (dst < 0 || dst >= a.n)
                bad_dst = true;
            else {
                out[(size_t)dst] = in[(size_t)src];
                writes[(size_t)dst]++;
            }
        }
    }
    CHECK(!bad_src && !bad_dst && !misaligned, "%s: source %d, destination %d, misaligned run %d", what, bad_src,
          bad_dst, misaligned);
    check_direct(a, in, out, writes, what);
}

/* The input's strides for [outer..., C, P]: P contiguous, C rows pad apart beyond P, each outer slab gap
 * elements beyond its rows; returns the elements the input spans. */
static int64_t input_strides(int rank, const int64_t *dims, int64_t pad, int64_t gap, int64_t *st)
{
    st[rank - 1] = 1;
    st[rank - 2] = dims[rank - 1] + pad;
    int64_t s = dims[rank - 2] * (dims[rank - 1] + pad) + gap;
    for (int d = rank - 3; d >= 0; d--) {
        st[d] = s;
        s *= dims[d];
    }
    return s;
}

int main(void)
{
    int n_cases = 0;
    for (int t = 0; t < 300; t++) {
        const int rank = (int)rint_in(2, 5);
        int64_t dims[IG_EW_MAX_RANK], st[IG_EW_MAX_RANK];
        for (int d = 0; d < rank - 2; d++) dims[d] = rint_in(1, 3);
        const int64_t C = rint_in(2, TR_MAX_C);
        const int64_t P = t % 3 == 0 ? TR_TP * rint_in(1, 3) : rint_in(1, 3 * TR_TP + 7);
        dims[rank - 2] = C;
        dims[rank - 1] = P;
        /* the input: P contiguous; C rows of a wider buffer (pad) and outer slabs with a gap, or dense in
         * iteration order (in_kind 1: the kernel derives the strides) */
        const int64_t pad = t % 4 == 1 ? rint_in(1, 9) : 0, gap = t % 6 == 3 ? rint_in(1, 5) : 0;
        const int64_t s = input_strides(rank, dims, pad, gap, st);
        const int kind = pad == 0 && gap == 0 && t % 2 == 0 ? 1 : 0;
        ig_ew_args a = copy_args(rank, dims, st, kind);
        CHECK(tr_applies(a), "case %d: the kernel refuses a transposing copy (C %lld, P %lld)", t, (long long)C,
              (long long)P);
        char what[96];
        snprintf(what, sizeof what, "case %d (rank %d, C %lld, P %lld, pad %lld, gap %lld, kind %d)", t, rank,
                 (long long)C, (long long)P, (long long)pad, (long long)gap, kind);
        run_case(a, s + 16, what);
        n_cases++;
    }
    /* the register form: C of 3 or 4, P and the strides multiples of TR8_PIX */
    for (int t = 0; t < 200; t++) {
        const int rank = (int)rint_in(2, 5);
        int64_t dims[IG_EW_MAX_RANK], st[IG_EW_MAX_RANK];
        for (int d = 0; d < rank - 2; d++) dims[d] = rint_in(1, 3);
        const int64_t C = rint_in(3, 4), P = TR8_PIX * rint_in(1, 300);
        dims[rank - 2] = C;
        dims[rank - 1] = P;
        const int64_t pad = t % 4 == 1 ? TR8_PIX * rint_in(1, 3) : 0, gap = t % 6 == 3 ? TR8_PIX * rint_in(1, 2) : 0;
        const int64_t s = input_strides(rank, dims, pad, gap, st);
        const int kind = pad == 0 && gap == 0 && t % 2 == 0 ? 1 : 0;
        ig_ew_args a = copy_args(rank, dims, st, kind);
        CHECK(tr8_applies(a), "case %d: the register form refuses (C %lld, P %lld)", t, (long long)C, (long long)P);
        char what[96];
        snprintf(what, sizeof what, "register case %d (rank %d, C %lld, P %lld, pad %lld, gap %lld, kind %d)", t, rank,
                 (long long)C, (long long)P, (long long)pad, (long long)gap, kind);
        run_case_tr8(a, s + 16, what);
        n_cases++;
    }
    {
        int64_t d[3] = {2, 3, 100}, st[3] = {300, 100, 1};
        CHECK(!tr8_applies(copy_args(3, d, st, 0)), "the register form takes P = 100 (not a multiple of 8)");
        int64_t d2[3] = {2, 3, 96}, st2[3] = {3 * 100, 100, 1};
        CHECK(!tr8_applies(copy_args(3, d2, st2, 0)), "the register form takes rows 100 apart");
        int64_t d3[3] = {2, 5, 96}, st3[3] = {5 * 96, 96, 1};
        CHECK(!tr8_applies(copy_args(3, d3, st3, 0)) && tr_applies(copy_args(3, d3, st3, 0)),
              "C = 5 goes to the register form, or not to the tile");
    }
    /* what it must refuse */
    int64_t d3[3] = {2, TR_MAX_C + 1, 100}, s3[3] = {(TR_MAX_C + 1) * 100, 100, 1};
    CHECK(!tr_applies(copy_args(3, d3, s3, 0)), "a C wider than TR_MAX_C is taken");
    int64_t d2[2] = {3, 100}, s2[2] = {100, 1};
    ig_ew_args a = copy_args(2, d2, s2, 0);
    a.out_strides[1] = 1, a.out_strides[0] = 100;
    CHECK(!tr_applies(a), "an output running along P is taken");
    a = copy_args(2, d2, s2, 0);
    a.in_strides[0][1] = 2;
    CHECK(!tr_applies(a), "an input not contiguous along P is taken");
    a = copy_args(2, d2, s2, 0);
    a.n_ops = 2;
    a.ops[1].code = IG_EW_NEG;
    CHECK(!tr_applies(a), "a program that computes is taken");
    a = copy_args(2, d2, s2, 0);
    a.in_dtype[0] = INGOT_DTYPE_INT64;
    CHECK(!tr_applies(a), "an int64 copy (through float) is taken");
    printf("%d cases, %d checks, %d failed\n", n_cases, checks, failures);
    return failures ? 1 : 0;
}
