#!/usr/bin/env python3
"""Host simulation of groupnorm.cu's 16-byte kernels (groupnorm_vec.cuh) and its plan.

    sim_groupnorm.py

test_gpu_lower's emulator runs groupnorm steps from their arguments (its own loops), so the kernels'
decomposition -- which thread reads which vector, the splits, the counts, the shift, the block sums, the
apply's per-channel constants -- is only exercised on a GPU. This mirrors each kernel's index
expressions line by line (one Python loop per grid/block dimension, numpy over the threads' vectors)
for channels-last and NCHW shapes around every layout choice (tx = cv, tiles of 32, splits, partial last
vectors), and checks the result against a float64 GroupNorm of inputs with a large per-channel offset.
Exit status 1 on a mismatch. Keep it in step with groupnorm_vec.cuh and ingot_cuda_groupnorm_plan.
"""
import sys

import numpy as np

BLOCK, TARGET, UNROLL = 256, 132 * 1024, 4


def cols_tx(cv):
    if cv > BLOCK:
        return 32
    whole, tiled = cv * (BLOCK // cv) / BLOCK, cv / (32 * ((cv + 31) // 32))
    return cv if whole >= tiled else 32


def plan(n, c, s, cl, v):
    """ingot_cuda_groupnorm_plan: (split, chunk, tx)."""
    split, chunk = 1, s
    tx = cols_tx(c // v) if cl and c % v == 0 else 0
    if tx:
        blocks, rows_per = n * ((c // v + tx - 1) // tx), BLOCK // tx
    elif cl:
        blocks, rows_per = n * ((c + 31) // 32), 8
    else:
        blocks, rows_per = n * c, BLOCK * v if s % v == 0 else BLOCK
    if blocks > 0 and blocks * BLOCK < TARGET and s // rows_per > 16:
        split = (TARGET + blocks * BLOCK - 1) // (blocks * BLOCK)
        split = max(1, min(split, s // (rows_per * 8), 65535))
        chunk = (s + split - 1) // split
    chunk = (chunk + 7) // 8 * 8
    return (s + chunk - 1) // chunk, chunk, tx


def wf_of(cnt, s, q, shift):
    return (cnt, shift + s / cnt, max(q - s * s / cnt, 0.0)) if cnt > 0 else (0.0, 0.0, 0.0)


def stats_cols_vec(x, n_, c, s, v, split, chunk, tx):
    """gn_stats_cols_vec over x viewed as vectors [n][s][cv][v]: part[n][c][split] = (cnt, mean, m2)."""
    cv, ty = c // v, BLOCK // tx
    tiles = (cv + tx - 1) // tx
    xv = x.reshape(n_ * s * cv, v)
    part = np.zeros((n_, c, split, 3))
    for bx in range(n_ * tiles):
        for by in range(split):
            n, v0 = bx // tiles, (bx % tiles) * tx
            j0 = by * chunk
            j1 = min(j0 + chunk, s)
            sm = np.zeros((v, ty, tx, 2), np.float32)
            for t in range(BLOCK):
                vx, ry = t % tx, t // tx
                if not (ry < ty and v0 + vx < cv):
                    continue
                base = n * s * cv + v0 + vx
                shift = xv[base]
                rows = np.arange(j0 + ry, j1, ty)  # vsums: j, j + step, ... < end
                d = xv[base + rows * cv] - shift
                sm[:, ry, vx, 0] = d.sum(0, dtype=np.float32)
                sm[:, ry, vx, 1] = (d * d).sum(0, dtype=np.float32)
            cnt = float(max(j1 - j0, 0))
            for t in range(0, tx * v):
                k, xx = t // tx, t % tx
                if v0 + xx >= cv:
                    continue
                ssum, q = sm[k, :, xx, 0].sum(), sm[k, :, xx, 1].sum()
                ch = (v0 + xx) * v + k
                part[n, ch, by] = wf_of(cnt, ssum, q, x.reshape(-1)[n * s * c + ch])
    return part


def stats_rows_vec(x, n_, c, s, v, split, chunk):
    """gn_stats_rows_vec: rows (n, ch) of sv vectors; per-thread counts as the kernel computes them."""
    sv = s // v
    xv = x.reshape(n_ * c * sv, v)
    part = np.zeros((n_, c, split, 3))
    for row in range(n_ * c):
        for p in range(split):
            j0, j1 = p * chunk // v, min((p * chunk + chunk) // v, sv)
            first = x.reshape(-1)[row * s]
            states = []
            for t in range(BLOCK):
                d = xv[row * sv + np.arange(j0 + t, j1, BLOCK)] - first
                mine = j1 - j0 - t
                cnt = ((mine + BLOCK - 1) // BLOCK) * v if mine > 0 else 0
                assert cnt == d.size
                states.append(wf_of(float(cnt), float(d.sum()), float((d * d).sum()), first))
            part[row // c, row % c, p] = merge(states)
    return part


def merge(states):
    n, mean, m2 = 0.0, 0.0, 0.0
    for bn, bm, b2 in states:
        if bn == 0:
            continue
        if n == 0:
            n, mean, m2 = bn, bm, b2
            continue
        t = n + bn
        d = bm - mean
        mean, m2, n = mean + d * bn / t, m2 + b2 + d * d * n * bn / t, t
    return n, mean, m2


def finish(part, groups, eps):
    n_, c = part.shape[:2]
    cg = c // groups
    st = np.zeros((n_, groups, 2))
    for n in range(n_):
        for g in range(groups):
            cnt, mean, m2 = merge([tuple(e) for e in part[n, g * cg:(g + 1) * cg].reshape(-1, 3)])
            st[n, g] = mean, 1 / np.sqrt((m2 / cnt if cnt else 0) + eps)
    return st


def apply_cols_vec(x, st, scale, bias, n_, c, s, v, groups, tx):
    cv, ty, cg = c // v, BLOCK // tx, c // groups
    tiles = (cv + tx - 1) // tx
    gy = max(1, min((s + ty * UNROLL * 2 - 1) // (ty * UNROLL * 2), 65535))
    y = np.full(n_ * s * c, np.nan)
    xv = x.reshape(-1)
    for bz in range(n_):
        for bx in range(tiles):
            for t in range(BLOCK):
                ry, vc = t // tx, bx * tx + t % tx
                if ry >= ty or vc >= cv:
                    continue
                ch = vc * v + np.arange(v)
                m, mul, add = st[bz, ch // cg, 0], st[bz, ch // cg, 1] * scale[ch], bias[ch]
                for by in range(gy):
                    step = gy * ty
                    for j in range(by * ty + ry, s, step):  # the unrolled loop visits exactly these
                        o = bz * s * c + (j * cv + vc) * v + np.arange(v)
                        assert np.isnan(y[o]).all(), "a vector written twice"
                        y[o] = (xv[o] - m) * mul + add
    return y


def apply_rows_vec(x, st, scale, bias, n_, c, s, v, groups):
    sv, cg = s // v, c // groups
    tx = 1
    while tx < sv and tx < BLOCK:
        tx <<= 1
    ty, rows = BLOCK // tx, n_ * c
    gx, gy = max(1, min((sv + tx - 1) // tx, 1024)), max(1, min((rows + ty - 1) // ty, 65535))
    y = np.full(n_ * c * s, np.nan)
    xv = x.reshape(-1)
    for by in range(gy):
        for bx in range(gx):
            for t in range(BLOCK):
                for r in range(by * ty + t // tx, rows, gy * ty):
                    n, ch = r // c, r % c
                    m, mul, add = st[n, ch // cg, 0], st[n, ch // cg, 1] * scale[ch], bias[ch]
                    for j in range(bx * tx + t % tx, sv, gx * tx):
                        o = (r * sv + j) * v + np.arange(v)
                        assert np.isnan(y[o]).all(), "a vector written twice"
                        y[o] = (xv[o] - m) * mul + add
    return y


def reference(x, n_, c, s, groups, scale, bias, eps, cl):
    xd = x.astype(np.float64).reshape(n_, s, c).transpose(0, 2, 1) if cl else x.astype(np.float64).reshape(n_, c, s)
    g = xd.reshape(n_, groups, -1)
    y = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    y = y.reshape(n_, c, s) * scale[None, :, None] + bias[None, :, None]
    return (y.transpose(0, 2, 1) if cl else y).reshape(-1)


def check(n_, c, s, groups, cl, v, rng):
    eps = 1e-5
    split, chunk, tx = plan(n_, c, s, cl, v)
    offset = 30 + 10 * rng.standard_normal(c)  # a mean far from 0: the shift must keep the variance
    x = rng.standard_normal((n_, c, s)) + offset[None, :, None]
    x = (x.transpose(0, 2, 1) if cl else x).astype(np.float32).reshape(-1)
    scale, bias = 1 + 0.2 * rng.standard_normal(c), 0.1 * rng.standard_normal(c)
    if cl:
        part = stats_cols_vec(x, n_, c, s, v, split, chunk, tx)
    else:
        part = stats_rows_vec(x, n_, c, s, v, split, chunk)
    st = finish(part, groups, eps)
    y = (apply_cols_vec(x, st, scale, bias, n_, c, s, v, groups, tx) if cl
         else apply_rows_vec(x, st, scale, bias, n_, c, s, v, groups))
    err = np.abs(y - reference(x, n_, c, s, groups, scale, bias, eps, cl)).max()
    what = f"{'NHWC' if cl else 'NCHW'} n={n_} c={c} s={s} G={groups} v={v}: split {split} chunk {chunk} tx {tx}"
    ok = err < 2e-3
    print(f"{'ok  ' if ok else 'FAIL'} {what}: max error {err:.2e}")
    return ok


def main():
    rng = np.random.default_rng(5)
    cases = [  # (n, c, s, groups, channels-last, vector width)
        (2, 64, 28 * 28, 32, True, 8),   # the timm shape at batch 2: tx = cv = 8, splits
        (1, 256, 56 * 56, 32, True, 8),  # tx = cv = 32, many splits
        (1, 48, 100, 4, True, 4),        # fp32 vectors, tx = 12 (ty = 21, idle threads)
        (2, 8 * 40, 50, 8, True, 8),     # cv = 40: tx = 40, ty = 6
        (1, 8 * 200, 6, 16, True, 8),    # cv = 200: tiles of 32, a partial tile
        (1, 16, 9, 16, True, 8),         # InstanceNorm (G = C), tiny spatial
        (2, 6, 1000, 3, False, 8),       # NCHW: chunks of whole vectors, splits
        (1, 4, 40 * 48, 2, False, 4),
        (1, 2, 40000, 1, False, 8),      # NCHW split over blocks
    ]
    ok = all([check(*cs, rng) for cs in cases])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
