#!/usr/bin/env python3
"""FLOPs check (issue 2): `ingot inspect --json` on the full-size ResNet-50 v1.5 at batch 1 reports
8.2 GFLOP +-2% (4.1 GMAC; a multiply-add counts 2).

    check_flops.py [--ingot PATH] [--model resnet50.onnx] [--work DIR]

Builds the model with make_models.py when --model is not given. Also prints an independent count
(convolutions and the classifier from the graph's shapes, 2 FLOP per MAC) and the per-op breakdown of
ingot's figure, so a drift is easy to place. Ends with `1 passed, 0 failed` or `0 passed, 1 failed`.
"""
import argparse
import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
import common  # noqa: E402

TARGET = 8.2e9
TOL = 0.02


def reference_flops(path):
    """2 * MACs of Conv and Gemm nodes, from onnx's shape inference."""
    import numpy as np
    import onnx

    m = onnx.shape_inference.infer_shapes(onnx.load(path))
    shapes = {}
    for vi in list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info):
        shapes[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    total = 0.0
    for n in m.graph.node:
        if n.op_type == "Conv":
            w = shapes[n.input[1]]
            out = shapes[n.output[0]]
            total += 2.0 * np.prod(out) * np.prod(w[1:])
        elif n.op_type == "Gemm":
            a, w = shapes[n.input[0]], shapes[n.input[1]]
            total += 2.0 * a[0] * w[0] * w[1]
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ingot")
    ap.add_argument("--model")
    ap.add_argument("--work", default=None, help="where to build resnet50.onnx when --model is not given")
    args = ap.parse_args()
    ingot = common.find_ingot(args.ingot)
    path = args.model
    if not path:
        work = args.work or os.path.join(common.REPO, "build-testinfra", "tests", "models")
        path = os.path.join(work, "resnet50.onnx")
        if not os.path.exists(path):
            rc, out, err = common.run([sys.executable, os.path.join(HERE, "make_models.py"), work,
                                       "--only", "resnet50"])
            if rc != 0:
                print(f"check_flops: make_models.py failed: {err.strip()}")
                print("0 passed, 1 failed")
                return 1
    ref = reference_flops(path)
    rc, out, err = common.run([ingot, "inspect", path, "--json", "--batch", "1"], timeout=120)
    ok = False
    if rc != 0:
        print(f"FAIL resnet50: ingot inspect failed: {common.first_line(err) or common.first_line(out)}")
    else:
        doc = json.loads(out)
        flops = float(doc["model"]["flops"])
        by_op = collections.Counter()
        for n in doc.get("nodes", []):
            by_op[n.get("op")] += float(n.get("flops") or 0)
        err_rel = flops / TARGET - 1
        ok = abs(err_rel) <= TOL
        print(f"{'PASS' if ok else 'FAIL'} resnet50: ingot reports {flops / 1e9:.4f} GFLOP at batch 1 "
              f"(target {TARGET / 1e9:.1f} +-{TOL:.0%}: {err_rel:+.2%}); convs + classifier counted here: "
              f"{ref / 1e9:.4f} GFLOP")
        print("    by op: " + ", ".join(f"{k} {v / 1e9:.4f}" for k, v in by_op.most_common()))
    print(f"{int(ok)} passed, {int(not ok)} failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
