#!/usr/bin/env python3
"""How close the fused elementwise kernel comes to copy bandwidth as its program grows.

    probe_elementwise.py --ingot BUILD/ingot --work DIR

Makes [batch, 1M] models of 1, 2, 4 and 8 pointwise ops (Mul, Add, Relu, Mul, Sub, Abs, Add, Neg by
scalar constants: one fused step each) and prints `ingot profile --batch 64` of each, fp32 and fp16: the
fused step's time and its share of the measured copy bandwidth, beside the input and output copies (pure
copies through the same kernel). A measurement, not a check: bench/RESULTS.md records its figures.
"""
import argparse
import json
import os
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPS = [("Mul", 0.5), ("Add", 1.5), ("Relu", None), ("Mul", 0.25), ("Sub", 2.0), ("Abs", None), ("Add", 0.5),
       ("Neg", None)]


def chain(n, path):
    nodes, inits, prev = [], [], "x"
    for i, (op, c) in enumerate(OPS[:n]):
        out = "y" if i == n - 1 else f"t{i}"
        ins = [prev]
        if c is not None:
            inits.append(numpy_helper.from_array(np.array(c, np.float32), f"c{i}"))
            ins.append(f"c{i}")
        nodes.append(helper.make_node(op, ins, [out], name=f"n{i}"))
        prev = out
    io = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", 1 << 20])
    g = helper.make_graph(nodes, "chain", [io("x")], [io("y")], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    for prec in ([], ["--fp16"]):
        for n in (1, 2, 4, 8):
            path = os.path.join(args.work, f"chain{n}.onnx")
            chain(n, path)
            r = subprocess.run([args.ingot, "profile", path, "--batch", "64", "--json"] + prec, capture_output=True,
                               text=True)
            if r.returncode:
                print(f"chain{n} {prec}: error {r.stderr[-500:]}")
                continue
            d = json.loads(r.stdout)
            for s in d["steps"]:
                print(f"chain{n} {' '.join(prec) or 'fp32'}: step {s['name'][:40]} {s['ms']:.4f} ms "
                      f"{100 * s['pct_bw']:.0f}% of copy BW ({len(d['steps'])} steps)")


if __name__ == "__main__":
    main()
