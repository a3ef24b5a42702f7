#!/usr/bin/env python3
"""Shape inference agreement: ingot's (`ingot inspect --json MODEL`) against onnx's
(onnx.shape_inference.infer_shapes(model, data_prop=True)), tensor by tensor.

    check_shapes.py [--ingot PATH] [--tests DIR] [--models DIR] [--no-light] [--filter SUBSTR] [-j N] [-v]

Models checked: every 'light' model of the onnx wheel, every model.onnx under --tests (the generated
node tests, gen_node_tests.py), and every *.onnx under --models (the export-shaped graphs of
tests/models/make_models.py; those are checked twice: with the symbolic batch, and with
`--batch 3` against onnx's inference on the model with batch fixed to 3).

Each model is checked as written and once more "inferred": with value_info and the graph outputs'
declared types removed, so both engines must infer every shape and dtype from the inputs alone (the
node tests declare their outputs, which would otherwise make the check lean on the declarations).

Rules, per tensor that onnx types (graph inputs, outputs, value_info):
  * dtype: onnx's elem_type must equal ingot's.
  * a concrete onnx dim: ingot must give the same number.
  * an onnx dim_param that names a symbol of the graph inputs ("batch"): ingot must give that symbol.
  * an onnx dim_param of its own making (unk__N, or any name not on the inputs), an empty dim, or no
    shape at all: anything goes. Where ingot is concrete (or has an input symbol) there, it is counted
    as "ingot more precise".
  * when onnx knows the rank, ingot must know the same rank.
A model whose ops ingot lacks is skipped (reason printed); a model ingot fails to load counts as
failed, unless the conformance manifest lists it (xfail/skip: the reason is an unsupported dtype or
similar). Disagreements onnx gets wrong can be listed as `NAME shapes-xfail reason` in the manifest.
Ends with the line `N passed, M failed`; exit status 1 when M > 0.
"""
import argparse
import concurrent.futures
import copy
import glob
import json
import os
import shutil
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import onnx  # noqa: E402


def onnx_shapes(model):
    """name -> (dtype name or None, shape list or None) from onnx's inference; dims are int, str or None."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    g = inferred.graph
    inits = {i.name for i in g.initializer}
    out = {}
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        dtype = common.DTYPE_NAMES.get(tt.elem_type) if tt.elem_type else None
        shape = None
        if tt.HasField("shape"):
            shape = []
            for d in tt.shape.dim:
                if d.HasField("dim_value"):
                    shape.append(int(d.dim_value))
                elif d.HasField("dim_param"):
                    shape.append(d.dim_param)
                else:
                    shape.append(None)
        out[vi.name] = (dtype, shape)
    return out


def input_symbols(model):
    inits = {i.name for i in model.graph.initializer}
    syms = set()
    for vi in model.graph.input:
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param:
                syms.add(d.dim_param)
    return syms


def ingot_shapes(doc):
    """name -> (dtype, shape) from the JSON of `ingot inspect --json`."""
    out = {}
    for t in doc.get("inputs", []) + doc.get("outputs", []):
        out[t["name"]] = (t.get("dtype"), t.get("shape"))
    for n in doc.get("nodes", []):
        for t in n.get("outputs", []):
            if t.get("name"):
                out[t["name"]] = (t.get("dtype"), t.get("shape"))
    return out


def norm_sym(d):
    """'1*batch' -> 'batch'; other dims unchanged."""
    if isinstance(d, str) and d.startswith("1*"):
        return d[2:]
    return d


def compare(onnx_map, ingot_map, syms):
    """(problems, n_compared, n_more_precise)."""
    problems, n, more = [], 0, 0
    for name, (odt, oshape) in sorted(onnx_map.items()):
        if name not in ingot_map:
            problems.append(f"'{name}': onnx types it ({odt} {oshape}), ingot does not list it")
            continue
        idt, ishape = ingot_map[name]
        n += 1
        if odt is not None and odt != idt:
            problems.append(f"'{name}': dtype {idt}, onnx says {odt}")
        if oshape is None:
            if ishape is not None:
                more += 1
            continue
        if ishape is None:
            problems.append(f"'{name}': ingot has no shape, onnx says {oshape}")
            continue
        if len(ishape) != len(oshape):
            problems.append(f"'{name}': shape {ishape}, onnx says {oshape} (rank differs)")
            continue
        bad, precise = False, False
        for od, idd in zip(oshape, ishape):
            idd = norm_sym(idd)
            if isinstance(od, int):
                bad |= not (isinstance(idd, int) and not isinstance(idd, bool) and idd == od)
            elif isinstance(od, str) and od in syms:
                bad |= idd != od
            else:
                precise |= isinstance(idd, int) or (isinstance(idd, str) and idd in syms)
        if bad:
            problems.append(f"'{name}': shape {ishape}, onnx says {oshape}")
        more += precise
    return problems, n, more


def fix_batch(model, batch):
    """A copy of model with every symbolic leading input dim set to batch (what --batch N does)."""
    m = copy.deepcopy(model)
    inits = {i.name for i in m.graph.initializer}
    for vi in m.graph.input:
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        dims = vi.type.tensor_type.shape.dim
        if len(dims) and not dims[0].HasField("dim_value"):
            dims[0].Clear()
            dims[0].dim_value = batch
    return m


def strip_declared(model):
    """A copy without value_info and without the graph outputs' declared types."""
    m = copy.deepcopy(model)
    del m.graph.value_info[:]
    for o in m.graph.output:
        o.type.tensor_type.ClearField("shape")
        o.type.tensor_type.elem_type = 0
    return m


def check_one(job, ingot, ops, manifest, tmpdir):
    """Returns (status, label, details) with status in pass/fail/skip."""
    label, path, batch, strip = job
    name = os.path.basename(os.path.dirname(path)) if path.endswith("model.onnx") else os.path.basename(path)[:-5]
    try:
        model = onnx.load(path)
    except Exception as e:  # noqa: BLE001
        return "fail", label, [f"onnx cannot load it: {e}"]
    miss = common.unsupported_ops(model, ops)
    if miss:
        return "skip", label, [f"ops ingot lacks: {' '.join(miss)}"]
    if strip:
        model = strip_declared(model)
        path = os.path.join(tmpdir, label.replace("/", "__").replace(" ", "_") + ".onnx")
        onnx.save(model, path)
    try:
        omap = onnx_shapes(fix_batch(model, batch) if batch else model)
    except Exception as e:  # noqa: BLE001
        return "skip", label, [f"onnx shape inference fails: {str(e).splitlines()[0][:200]}"]
    cmd = [ingot, "inspect", path, "--json"] + (["--batch", str(batch)] if batch else [])
    rc, out, err = common.run(cmd, timeout=120)
    listed = manifest.find(name, "xfail", "skip")
    if strip:
        os.remove(path)
    if rc != 0:
        msg = common.first_line(err) or common.first_line(out) or f"exit status {rc}"
        if listed:
            return "skip", label, [f"ingot inspect fails ({msg}); manifest: {listed[1]}"]
        return "fail", label, [f"ingot inspect failed: {msg}"]
    try:
        doc = json.loads(out)
    except ValueError as e:
        return "fail", label, [f"ingot inspect --json printed invalid JSON: {e}"]
    problems, n, more = compare(omap, ingot_shapes(doc), input_symbols(model))
    xf = manifest.find(name, "shapes-xfail")
    if problems and xf:
        return "skip", label, [f"shapes-xfail: {xf[1]}"]
    if not problems and xf:
        return "fail", label, [f"unexpected agreement (manifest says shapes-xfail: {xf[1]})"]
    if problems:
        return "fail", label, problems
    return "pass", label, [f"{n} tensors, ingot more precise on {more}"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ingot")
    ap.add_argument("--tests", help="generated test folder (gen_node_tests.py OUT)")
    ap.add_argument("--models", help="folder of *.onnx built by tests/models/make_models.py")
    ap.add_argument("--no-light", action="store_true", help="skip the onnx wheel's light models")
    ap.add_argument("--manifest", default=common.MANIFEST)
    ap.add_argument("--filter")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    ingot = common.find_ingot(args.ingot)
    ops = common.supported_ops()
    manifest = common.Manifest(args.manifest)
    t0 = time.time()

    jobs = []
    if not args.no_light:
        ldir = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
        for p in sorted(glob.glob(os.path.join(ldir, "*.onnx"))):
            jobs.append(("light/" + os.path.basename(p)[:-5], p, None, False))
    if args.tests:
        for p in sorted(glob.glob(os.path.join(args.tests, "*", "*", "model.onnx"))):
            suite, name = p.split(os.sep)[-3:-1]
            if suite != "light":  # the light models are checked from the wheel above
                jobs.append((f"{suite}/{name}", p, None, False))
    if args.models:
        for p in sorted(glob.glob(os.path.join(args.models, "*.onnx"))):
            base = os.path.basename(p)[:-5]
            if base == "resnet50":
                continue  # checked by check_flops.py; the same layers as resnet_mini
            jobs.append(("models/" + base, p, None, False))
            jobs.append((f"models/{base} --batch 3", p, 3, False))
    jobs += [(label + " (inferred)", p, b, True) for label, p, b, _ in jobs]
    if args.filter:
        jobs = [j for j in jobs if args.filter in j[0]]
    if not jobs:
        print("check_shapes: nothing to check (give --tests / --models)")
        print("0 passed, 0 failed")
        return 1

    n_pass = n_fail = n_skip = 0
    tmpdir = tempfile.mkdtemp(prefix="check_shapes_")
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.j)) as ex:
        futs = [ex.submit(check_one, j, ingot, ops, manifest, tmpdir) for j in jobs]
        for f in futs:
            status, label, details = f.result()
            if status == "pass":
                n_pass += 1
                if args.verbose:
                    print(f"PASS {label}: {details[0]}")
            elif status == "skip":
                n_skip += 1
                if args.verbose or (label.startswith(("light/", "models/")) and not label.endswith("(inferred)")):
                    print(f"SKIP {label}: {details[0]}")
            else:
                n_fail += 1
                if len(details) == 1 and not details[0].startswith("'"):
                    print(f"FAIL {label}: {details[0]}")
                    continue
                print(f"FAIL {label}: {len(details)} disagreement(s)")
                for d in details[:8]:
                    print(f"    {d}")
                if len(details) > 8:
                    print(f"    ... and {len(details) - 8} more")
            sys.stdout.flush()
    shutil.rmtree(tmpdir, ignore_errors=True)
    print(f"({n_skip} skipped; {time.time() - t0:.1f} s)")
    print(f"{n_pass} passed, {n_fail} failed")
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
