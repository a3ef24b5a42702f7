#!/usr/bin/env python3
"""Whole-model checks (issue 3): ONNX Runtime (CPU) and `ingot run` on the same seeded random inputs.

    check_models.py [--ingot PATH] [--models DIR] [--work DIR] [--no-light] [--filter SUBSTR] [-v]

Models: every *.onnx in --models (tests/models/make_models.py builds them there when the folder is
missing or empty; resnet50.onnx, the FLOPs model, is left out), run at batch 1 and batch 3; and the
'light' models shipped in the onnx wheel (fixed batch 1), where ingot has their ops, each twice: as shipped
(every weight 0.02 through ConstantOfShape: the outputs are uniform, so this mostly proves the graph runs)
and with seeded random weights in place of the ConstantOfShape nodes (MODELS/light/*_random.onnx).

Inputs (seeded per model and batch, saved as .npy and passed with `--input NAME=FILE`): float inputs
standard normal (uniform [0,1) for the light models' images); int64 inputs that index a Gather table
(token ids) uniform over the table's rows; int64 inputs named *mask*: ones with padding (batch item 1
has its last 12 positions masked, item 2 is masked entirely, which exercises the IsNaN guard).

Comparison, per output: same dtype and shape; NaN where ONNX Runtime has NaN, the same infinities;
float outputs pass when max|ingot - ort| / max(max|ort|, 1e-6) <= 1e-4 (the error relative to the
output's largest magnitude, over finite elements: per-element relative error is meaningless near
zero); integer and bool outputs exactly. Ends with `N passed, M failed`; exit status 1 when M > 0.

Every model runs twice, with the optimizer (the default) and with `--no-optimize` (the graph as
imported): both against ONNX Runtime, and the two against each other under the same tolerance, so a
rewrite that changes the function fails even where ONNX Runtime's own rounding hides it. For the
project's models the fused ops the optimizer must make are listed (EXPECT_FUSED) and checked in
`ingot inspect --optimized --json`, so a pass that silently stops firing fails too (and EXPECT_ABSENT:
ops a pass must have removed, such as the patch-embedding Conv patchify rewrites).
"""
import argparse
import glob
import os
import re
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
import common  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

REL_TOL = 1e-4
SEED = 1234

# model (file stem) -> ingot-domain ops its optimized graph must contain
EXPECT_FUSED = {
    "resnet_mini": {"FusedConv"},
    "mobilenetv2_mini": {"FusedConv"},
    "efficientnet_block": {"FusedConv"},
    "seg_head": {"FusedConv"},
    "bert_mini": {"FusedMatMul", "Pointwise", "Attention"},
    "resnetv2_gn_mini": {"GroupNorm", "FusedConv"},
    "vit_patch_mini": {"FusedMatMul"},
    "convnext_stem_mini": {"FusedMatMul"},
}
# model -> (op, node name or None for any) its optimized graph must not contain: the patchify pass turns
# their patch-embedding Conv into views and a GEMM (ConvNeXt's depthwise conv stays a Conv)
EXPECT_ABSENT = {
    "vit_patch_mini": {("Conv", None), ("FusedConv", None)},
    "convnext_stem_mini": {("Conv", "stem.0"), ("FusedConv", "stem.0")},
}


def safe_name(name):
    """How `ingot run` names output files: characters outside [A-Za-z0-9._-] become '_'."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def gather_rows(model):
    """input name -> rows of the initializer table a Gather indexes with it (token ids)."""
    inits = {t.name: list(t.dims) for t in model.graph.initializer}
    out = {}
    for n in model.graph.node:
        if n.op_type == "Gather" and len(n.input) >= 2 and n.input[0] in inits:
            axis = next((a.i for a in n.attribute if a.name == "axis"), 0)
            out[n.input[1]] = inits[n.input[0]][axis]
    return out


def make_inputs(model, batch, seed, image_like):
    """name -> array for every graph input (symbolic dims: the leading one is batch, others 1)."""
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    rows = gather_rows(model)
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = []
        for i, d in enumerate(tt.shape.dim):
            shape.append(d.dim_value if d.HasField("dim_value") else (batch if i == 0 else 1))
        et = tt.elem_type
        if et == onnx.TensorProto.FLOAT:
            a = rng.random(shape, np.float32) if image_like else rng.standard_normal(shape).astype(np.float32)
        elif et in (onnx.TensorProto.INT64, onnx.TensorProto.INT32):
            dt = np.int64 if et == onnx.TensorProto.INT64 else np.int32
            if "mask" in vi.name.lower():
                a = np.ones(shape, dt)
                if len(shape) == 2 and shape[0] > 1:
                    a[1, max(1, shape[1] - 12):] = 0
                if len(shape) == 2 and shape[0] > 2:
                    a[2, :] = 0
            else:
                a = rng.integers(0, rows.get(vi.name, 10), shape).astype(dt)
        elif et == onnx.TensorProto.BOOL:
            a = rng.random(shape) < 0.5
        else:
            raise ValueError(f"input '{vi.name}': no generator for elem_type {et}")
        feeds[vi.name] = a
    return feeds


def randomize_weights(model, seed):
    """A copy of a 'light' model with every ConstantOfShape weight (all 0.02 in the wheel, which makes every
    channel equal and the softmax output exactly uniform, so a comparison proves little) replaced by a
    seeded random initializer: He-normal for rank >= 2, U(0.5, 1.5) for scales and variances (inputs 1 and 4
    of BatchNormalization, Mul operands), N(0, 0.1) for other vectors."""
    import copy

    m = copy.deepcopy(model)
    rng = np.random.default_rng(seed)
    inits = {t.name: t for t in m.graph.initializer}
    positive = set()
    for n in m.graph.node:
        if n.op_type == "BatchNormalization":
            positive.update(n.input[i] for i in (1, 4) if i < len(n.input))
        elif n.op_type == "Mul":
            positive.update(n.input)
    # Unsqueeze'd vectors feeding Mul (densenet's scale) count as positive too
    for n in m.graph.node:
        if n.op_type == "Unsqueeze" and n.output[0] in positive:
            positive.add(n.input[0])
    # a saturated softmax (one-hot) hides differences in the logits: expose them as outputs too
    outs = {o.name for o in m.graph.output}
    for n in m.graph.node:
        if n.op_type == "Softmax" and n.output[0] in outs and n.input[0] not in outs:
            m.graph.output.append(onnx.helper.make_tensor_value_info(n.input[0], onnx.TensorProto.FLOAT, None))
    keep = []
    for n in m.graph.node:
        if n.op_type == "ConstantOfShape" and n.input[0] in inits:
            shape = [int(v) for v in numpy_helper.to_array(inits[n.input[0]]).reshape(-1)]
            if len(shape) >= 2:
                fan_in = max(1, int(np.prod(shape[1:])))
                a = rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
            elif n.output[0] in positive:
                a = rng.uniform(0.5, 1.5, shape)
            else:
                a = rng.standard_normal(shape) * 0.1
            m.graph.initializer.append(numpy_helper.from_array(a.astype(np.float32), n.output[0]))
        else:
            keep.append(n)
    del m.graph.node[:]
    m.graph.node.extend(keep)
    return m


MAX_RANDOM_PARAMS = 50_000_000


def light_params(path):
    """Elements of the ConstantOfShape weights of a light model."""
    m = onnx.load(path)
    inits = {t.name: t for t in m.graph.initializer}
    return sum(int(np.prod(numpy_helper.to_array(inits[n.input[0]])))
               for n in m.graph.node if n.op_type == "ConstantOfShape" and n.input[0] in inits)


def compare(got, want):
    """None when equal within tolerance, else a description. Also returns the error figure."""
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, onnxruntime {want.dtype}", None
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, onnxruntime {list(want.shape)}", None
    if want.dtype.kind != "f":
        bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
        if bad.size:
            i = int(bad[0])
            return (f"{bad.size} of {want.size} elements differ (exact); first at flat index {i}: "
                    f"{got.reshape(-1)[i]} vs {want.reshape(-1)[i]}"), None
        return None, 0.0
    g = got.astype(np.float64).reshape(-1)
    w = want.astype(np.float64).reshape(-1)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    if (nan_g != nan_w).any():
        i = int(np.flatnonzero(nan_g != nan_w)[0])
        return f"NaN mismatch: {int((nan_g != nan_w).sum())} elements; first at flat index {i}: {g[i]} vs {w[i]}", None
    inf_g, inf_w = np.isinf(g), np.isinf(w)
    if (inf_g != inf_w).any() or (g[inf_w] != w[inf_w]).any():
        return "infinity mismatch", None
    fin = ~(nan_w | inf_w)
    if not fin.any():
        return None, 0.0
    diff = np.abs(g[fin] - w[fin])
    scale = max(float(np.abs(w[fin]).max()), 1e-6)
    rel = float(diff.max()) / scale
    if rel > REL_TOL:
        i = int(np.flatnonzero(fin)[int(diff.argmax())])
        return (f"relative error {rel:.3g} > {REL_TOL:g} (max abs err {diff.max():.4g}, output max |x| "
                f"{scale:.4g}); worst at flat index {i}: ingot {g[i]:.7g} ort {w[i]:.7g}"), rel
    return None, rel


def run_ort(path, feeds):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC  # no fused approximations
    so.intra_op_num_threads = 2
    so.log_severity_level = 3
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(None, feeds)))


def check(ingot, label, path, batch, image_like, work, verbose):
    """(ok, line)."""
    model = onnx.load(path)
    seed = SEED + (batch or 1) * 7919 + sum(map(ord, os.path.basename(path)))
    try:
        feeds = make_inputs(model, batch or 1, seed, image_like)
    except ValueError as e:
        return False, f"FAIL {label}: {e}"
    d = os.path.join(work, re.sub(r"[^A-Za-z0-9._-]", "_", label))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "out"))
    args = [ingot, "run", path, "--seed", "0"]
    for k, v in feeds.items():
        f = os.path.join(d, safe_name(k) + ".npy")
        np.save(f, v)
        args += ["--input", f"{k}={f}"]
    if batch:
        args += ["--batch", str(batch)]
    t0 = time.time()
    want = run_ort(path, feeds)
    t_ort = time.time() - t0
    got, t_ingot, problems, figures = {}, {}, [], []
    for mode, extra in (("opt", []), ("no-opt", ["--no-optimize"])):
        out_dir = os.path.join(d, "out_" + mode)
        os.makedirs(out_dir, exist_ok=True)
        t0 = time.time()
        rc, out, err = common.run(args + ["--output-dir", out_dir] + extra, timeout=600)
        t_ingot[mode] = time.time() - t0
        if rc != 0:
            return False, f"FAIL {label} ({mode}): ingot run exited {rc}: {common.first_line(err) or common.first_line(out)}"
        got[mode] = {}
        for name, w in want.items():
            f = os.path.join(out_dir, safe_name(name) + ".npy")
            if not os.path.exists(f):
                problems.append(f"{mode}: output '{name}': {os.path.basename(f)} not written")
                continue
            got[mode][name] = np.load(f)
            why, rel = compare(got[mode][name], w)
            if why:
                problems.append(f"{mode}: output '{name}': {why}")
            elif mode == "opt":
                figures.append(f"{name} {rel:.2g}")
    # the same through an engine file: ingot build, then run the .ingot -- bit-identical to "opt"
    eng = os.path.join(d, "model.ingot")
    bargs = [ingot, "build", path, "-o", eng, "--cpu"] + (["--batch", str(batch)] if batch else [])
    rc, out, err = common.run(bargs, timeout=600)
    if rc != 0:
        return False, f"FAIL {label} (engine file): ingot build exited {rc}: {common.first_line(err) or common.first_line(out)}"
    out_dir = os.path.join(d, "out_engine")
    os.makedirs(out_dir, exist_ok=True)
    eargs = [eng if a == path else a for a in args]
    if "--batch" in eargs:  # the engine's inputs come as files: their shapes decide
        k = eargs.index("--batch")
        del eargs[k:k + 2]
    rc, out, err = common.run(eargs + ["--output-dir", out_dir], timeout=600)
    if rc != 0:
        return False, f"FAIL {label} (engine file): ingot run exited {rc}: {common.first_line(err) or common.first_line(out)}"
    for name in want:
        f = os.path.join(out_dir, safe_name(name) + ".npy")
        if name in got["opt"] and (not os.path.exists(f) or not np.array_equal(np.load(f), got["opt"][name], equal_nan=True)):
            problems.append(f"engine file: output '{name}' differs from the engine built from the model")
    figures.append("engine file bit-identical")
    for name in want:  # optimized against as imported
        if name in got["opt"] and name in got["no-opt"]:
            why, rel = compare(got["opt"][name], got["no-opt"][name])
            if why:
                problems.append(f"optimized vs unoptimized: output '{name}': {why}")
            else:
                figures.append(f"opt/no-opt {rel:.2g}")
    stem = os.path.basename(path)[:-5]
    if stem in EXPECT_FUSED or stem in EXPECT_ABSENT:
        jargs = [ingot, "inspect", path, "--optimized", "--json"] + (["--batch", str(batch)] if batch else [])
        rc, out, err = common.run(jargs, timeout=600)
        import json
        nodes = json.loads(out)["nodes"] if rc == 0 else []
        made = {n["op"] for n in nodes if n.get("domain") == "ingot"}
        missing = EXPECT_FUSED.get(stem, set()) - made
        if missing:
            problems.append(f"the optimizer made no {', '.join(sorted(missing))} (made: {', '.join(sorted(made))})")
        left = sorted(f"{op} {name or ''}".strip() for op, name in EXPECT_ABSENT.get(stem, set())
                      if any(n["op"] == op and name in (None, n.get("name")) for n in nodes))
        if rc != 0 or left:
            problems.append(f"the optimized graph still has {', '.join(left) or '(inspect failed)'}")
    times = f"ingot {t_ingot['opt']:.2f} / {t_ingot['no-opt']:.2f} s unoptimized, onnxruntime {t_ort:.2f} s"
    if problems:
        return False, f"FAIL {label} ({times}):\n    " + "\n    ".join(problems)
    return True, f"PASS {label}: rel err {', '.join(figures)} ({times})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ingot")
    ap.add_argument("--models", default=os.path.join(common.REPO, "build-testinfra", "tests", "models"))
    ap.add_argument("--work", default=None, help="scratch folder for inputs/outputs (default MODELS/work)")
    ap.add_argument("--no-light", action="store_true")
    ap.add_argument("--filter")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    ingot = common.find_ingot(args.ingot)
    ops = common.supported_ops()
    t_start = time.time()
    if not glob.glob(os.path.join(args.models, "*.onnx")):
        rc, out, err = common.run([sys.executable, os.path.join(HERE, "make_models.py"), args.models])
        if rc != 0:
            print(f"check_models: make_models.py failed: {err.strip()}")
            print("0 passed, 1 failed")
            return 1
    work = args.work or os.path.join(args.models, "work")
    os.makedirs(work, exist_ok=True)

    jobs = []  # (label, path, batch, image_like)
    for p in sorted(glob.glob(os.path.join(args.models, "*.onnx"))):
        base = os.path.basename(p)[:-5]
        if base == "resnet50":
            continue
        jobs += [(f"{base} batch 1", p, 1, False), (f"{base} batch 3", p, 3, False)]
    if not args.no_light:
        ldir = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
        for p in sorted(glob.glob(os.path.join(ldir, "*.onnx"))):
            base = os.path.basename(p)[:-5]
            jobs.append((base, p, None, True))
            # the same architecture with random weights: a real numerical comparison. Not for the
            # biggest (vgg19: 143M parameters, a 574 MB file): its ops are all covered by the others.
            if light_params(p) > MAX_RANDOM_PARAMS:
                continue
            rp = os.path.join(args.models, "light", base + "_random.onnx")
            if not os.path.exists(rp) or os.path.getmtime(rp) < os.path.getmtime(__file__):
                os.makedirs(os.path.dirname(rp), exist_ok=True)
                onnx.save(randomize_weights(onnx.load(p), SEED), rp)
            jobs.append((base + " (random weights)", rp, None, True))
    if args.filter:
        jobs = [j for j in jobs if args.filter in j[0]]

    n_pass = n_fail = n_skip = 0
    for label, path, batch, image_like in jobs:
        miss = common.unsupported_ops(onnx.load(path, load_external_data=False), ops)
        if miss:
            n_skip += 1
            print(f"SKIP {label}: ops ingot lacks: {' '.join(miss)}")
            continue
        ok, line = check(ingot, label, path, batch, image_like, work, args.verbose)
        n_pass += ok
        n_fail += not ok
        print(line)
        sys.stdout.flush()
    print(f"({n_skip} skipped; {time.time() - t_start:.1f} s)")
    print(f"{n_pass} passed, {n_fail} failed")
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
