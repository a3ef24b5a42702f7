#!/usr/bin/env python3
"""Synthetic ONNX models with a known bottleneck, for `ingot profile` (docs/DIAGNOSE.md, issue 11).

    make_synthetic.py OUT_DIR

  tiny_chain.onnx       [batch,64] through 100 x (MatMul 64x64, Tanh): 200 steps of a few kFLOP each.
                        Launch-bound: every step is far smaller than a kernel launch.
  big_elementwise.onnx  [batch,1M] through a chain of 8 elementwise ops (fused into one pass by the
                        optimizer): one read and one write of every element. Bandwidth-bound.
  big_gemm.onnx         [batch,4096] x [4096,4096]: compute-bound at a large batch (4096 on the GPU).
  capacity.onnx         [batch,1,1024] broadcast to [batch,4096,1024] -> Softmax -> square -> sum: 16 MB
                        per big intermediate per sample from a 4 KB input, so the batch is limited by
                        memory (ingot sweep stops where it runs out).
All inputs have a symbolic leading dim `batch`; weights are seeded random.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def save(graph, path):
    model = helper.make_model(graph, opset_imports=OPSET, producer_name="ingot-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def tiny_chain(path, n=100, width=64):
    rng = np.random.default_rng(1)
    nodes, inits = [], []
    cur = "x"
    for k in range(n):
        w = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{k}"))
        nodes.append(helper.make_node("MatMul", [cur, f"w{k}"], [f"m{k}"], name=f"matmul_{k}"))
        nodes.append(helper.make_node("Tanh", [f"m{k}"], [f"t{k}"], name=f"tanh_{k}"))
        cur = f"t{k}"
    nodes.append(helper.make_node("Identity", [cur], ["y"], name="out"))
    g = helper.make_graph(nodes, "tiny_chain",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])], inits)
    save(g, path)


def big_elementwise(path, width=1 << 20):
    consts = [numpy_helper.from_array(np.array(v, np.float32), f"c{k}") for k, v in enumerate([0.5, 1.5, 0.25, 2.0])]
    nodes = [
        helper.make_node("Mul", ["x", "c0"], ["a"], name="mul0"),
        helper.make_node("Add", ["a", "c1"], ["b"], name="add0"),
        helper.make_node("Relu", ["b"], ["c"], name="relu0"),
        helper.make_node("Mul", ["c", "c2"], ["d"], name="mul1"),
        helper.make_node("Sub", ["d", "c3"], ["e"], name="sub0"),
        helper.make_node("Abs", ["e"], ["f"], name="abs0"),
        helper.make_node("Add", ["f", "c0"], ["g"], name="add1"),
        helper.make_node("Neg", ["g"], ["y"], name="neg0"),
    ]
    g = helper.make_graph(nodes, "big_elementwise",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])], consts)
    save(g, path)


def big_gemm(path, k=4096, n=4096):
    rng = np.random.default_rng(2)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="gemm")], "big_gemm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", n])],
                          [numpy_helper.from_array(w, "w")])
    save(g, path)


def capacity(path, rows=4096, width=1024):
    """x[batch,1,width] broadcast to [batch,rows,width], Softmax, squared, summed: 16 MB (fp32) per sample
    for each of the big intermediates while the input and output stay small, so memory, not host-side
    input generation, limits the batch."""
    shape = numpy_helper.from_array(np.array([1, rows, width], np.int64), "shape")
    axes = numpy_helper.from_array(np.array([1, 2], np.int64), "axes")
    nodes = [
        helper.make_node("Expand", ["x", "shape"], ["e"], name="expand"),
        helper.make_node("Softmax", ["e"], ["s"], name="softmax", axis=-1),
        helper.make_node("Mul", ["s", "s"], ["q"], name="square"),
        helper.make_node("ReduceSum", ["q", "axes"], ["y"], name="sum", keepdims=0),
    ]
    g = helper.make_graph(nodes, "capacity",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, width])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch"])], [shape, axes])
    save(g, path)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    tiny_chain(os.path.join(out, "tiny_chain.onnx"))
    big_elementwise(os.path.join(out, "big_elementwise.onnx"))
    big_gemm(os.path.join(out, "big_gemm.onnx"))
    capacity(os.path.join(out, "capacity.onnx"))
    print(f"make_synthetic: 4 models in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
