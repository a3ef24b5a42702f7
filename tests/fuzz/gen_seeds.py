#!/usr/bin/env python3
"""Write the fuzzers' seed corpus: small valid models and tensor files.

    gen_seeds.py OUT_DIR

OUT_DIR/load/   models for fuzz_load: shapes of real exports (conv nets, an MLP with a symbolic batch,
                the Shape->Gather->Concat->Reshape chains and IsNaN/Where masking of attention),
                initializers in every encoding (raw_data, packed and unpacked typed fields, fp16 in
                int32_data, external data next to the model), every attribute kind, subgraphs, and the
                small models shipped with the onnx package.
OUT_DIR/run/    models for fuzz_run whose run-time inputs steer the kernels (fuzz_run also takes load/).
OUT_DIR/tensor/ TensorProto files for fuzz_tensor.
"""
import glob
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MAX_SEED_BYTES = 16384


def opsets(v=17):
    return [helper.make_opsetid("", v)]


def vi(name, elem=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def mk(nodes, inputs, outputs, inits=(), opset=17, value_info=()):
    g = helper.make_graph(nodes, "seed", inputs, outputs, list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=opsets(opset), producer_name="gen_seeds")
    m.ir_version = 8
    return m


def arr(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def models():
    rng = np.random.default_rng(0)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    out = {}

    out["conv_relu_pool"] = mk([
        helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "F", "FB"], ["y"], transB=1),
    ], [vi("x", shape=("N", 3, 8, 8))], [vi("y", shape=("N", 5))],
        [arr("W", f32(4, 3, 3, 3)), arr("B", f32(4)), arr("s", f32(4)), arr("b", f32(4)), arr("m", f32(4)),
         arr("v", np.abs(f32(4))), arr("F", f32(5, 4)), arr("FB", f32(5))])

    out["mlp_symbolic_batch"] = mk([
        helper.make_node("MatMul", ["x", "W1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["h1"]),
        helper.make_node("Tanh", ["h1"], ["a"]),
        helper.make_node("MatMul", ["a", "W2"], ["o"]),
        helper.make_node("Softmax", ["o"], ["y"], axis=-1),
    ], [vi("x", shape=("batch", "seq", 8))], [vi("y", shape=("batch", "seq", 4))],
        [arr("W1", f32(8, 16)), arr("b1", f32(16)), arr("W2", f32(16, 4))])

    # attention-style reshape chain with the symbolic batch carried through
    out["reshape_chain"] = mk([
        helper.make_node("Shape", ["x"], ["sh"]),
        helper.make_node("Gather", ["sh", "i0"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["bu"]),
        helper.make_node("Concat", ["bu", "tail"], ["ns"], axis=0),
        helper.make_node("Reshape", ["x", "ns"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["t", "t2"], ["s"]),
        helper.make_node("IsNaN", ["s"], ["nan"]),
        helper.make_node("Where", ["nan", "zero", "s"], ["clean"]),
        helper.make_node("Softmax", ["clean"], ["y"], axis=-1),
    ], [vi("x", shape=("B", 6, 8)), vi("t2", shape=("B", 2, 4, 6))], [vi("y")],
        [arr("i0", np.array(0, np.int64)), arr("ax0", np.array([0], np.int64)),
         arr("tail", np.array([6, 2, 4], np.int64)), arr("zero", np.array(0, np.float32))])

    out["constants"] = mk([
        helper.make_node("Constant", [], ["c1"], value=numpy_helper.from_array(np.array([2, 3], np.int64))),
        helper.make_node("ConstantOfShape", ["c1"], ["z"], value=numpy_helper.from_array(np.array([1.5], np.float32))),
        helper.make_node("Constant", [], ["lim"], value_int=6),
        helper.make_node("Constant", [], ["st"], value_ints=[0]),
        helper.make_node("Range", ["zero", "lim", "one"], ["rg"]),
        helper.make_node("Cast", ["rg"], ["rgf"], to=TensorProto.FLOAT),
        helper.make_node("Reshape", ["rgf", "c1"], ["rr"]),
        helper.make_node("Add", ["z", "rr"], ["y"]),
        helper.make_node("Slice", ["y", "st", "ends", "st"], ["ys"]),
    ], [], [vi("ys")],
        [arr("zero", np.array(0, np.int64)), arr("one", np.array(1, np.int64)), arr("ends", np.array([1], np.int64))])

    # initializers through the typed fields
    typed = [
        helper.make_tensor("f16", TensorProto.FLOAT16, [2], np.array([1, -2], np.float16).view(np.uint16).tolist()),
        helper.make_tensor("i8", TensorProto.INT8, [3], [-128, 0, 127]),
        helper.make_tensor("u16", TensorProto.UINT16, [2], [1, 65535]),
        helper.make_tensor("bl", TensorProto.BOOL, [2], [True, False]),
        helper.make_tensor("i64", TensorProto.INT64, [2], [-1, 1 << 40]),
        helper.make_tensor("u32", TensorProto.UINT32, [1], [4000000000]),
        helper.make_tensor("u64", TensorProto.UINT64, [1], [1 << 63]),
        helper.make_tensor("dbl", TensorProto.DOUBLE, [2], [0.5, -0.25]),
        helper.make_tensor("flt", TensorProto.FLOAT, [2], [0.5, -0.25]),
        helper.make_tensor("bf", TensorProto.BFLOAT16, [1], [0x3F80]),
        helper.make_tensor("empty", TensorProto.FLOAT, [0, 3], []),
    ]
    out["typed_initializers"] = mk([helper.make_node("Cast", ["f16"], ["y"], to=TensorProto.FLOAT)], [],
                                   [vi("y")], typed)

    # every attribute kind on a custom-domain op (kept, never inferred), plus If with subgraphs
    sub = helper.make_graph([helper.make_node("Relu", ["p"], ["q"])], "sub", [vi("p", shape=[2])], [vi("q")])
    attrs = helper.make_node(
        "Everything", ["x"], ["e"], domain="com.example", f=0.5, i=-3, s="text", t=arr("tv", f32(2)), g=sub,
        floats=[1.0, 2.5], ints=[1, -1, 1 << 40], strings=["a", "bc"], tensors=[arr("t0", [1, 2]), arr("t1", [3.0])],
        graphs=[sub, sub])
    m = mk([attrs, helper.make_node("Relu", ["x"], ["y"])], [vi("x", shape=[2])], [vi("y", shape=[2]), vi("e")])
    m.opset_import.extend([helper.make_opsetid("com.example", 1)])
    out["attributes"] = m

    then_g = helper.make_graph([helper.make_node("Neg", ["x"], ["o"])], "then", [], [vi("o")])
    else_g = helper.make_graph([helper.make_node("Abs", ["x"], ["o"])], "else", [], [vi("o")])
    out["if_subgraphs"] = mk([
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["c"]),
        helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
    ], [vi("x", shape=[3])], [vi("y", shape=[3])], [arr("zero", np.array(0, np.float32))])

    out["resize_pad"] = mk([
        helper.make_node("Pad", ["x", "pads"], ["p"], mode="constant"),
        helper.make_node("Resize", ["p", "", "scales"], ["r"], mode="nearest"),
        helper.make_node("DepthToSpace", ["r"], ["d"], blocksize=2),
        helper.make_node("LayerNormalization", ["d", "g", "bb"], ["y"], axis=-1, epsilon=1e-5),
    ], [vi("x", shape=(1, 4, 2, 2))], [vi("y")],
        [arr("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)), arr("scales", np.array([1, 1, 2, 2], np.float32)),
         arr("g", f32(16)), arr("bb", f32(16))])

    # value_info, metadata, doc strings, an initializer also listed as input (IR 3 style)
    m = mk([helper.make_node("Add", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
           [vi("x", shape=("N", 2)), vi("w", shape=[2])], [vi("y", shape=("N", 2))], [arr("w", f32(2))],
           value_info=[vi("h", shape=("N", 2))])
    m.doc_string = "seed"
    helper.set_model_props(m, {"author": "ingot", "license": "none"})
    out["metadata_value_info"] = m
    return out


def run_models():
    """Seeds for fuzz_run: small models whose run-time inputs decide what the kernels do (indices,
    shapes, Resize's roi and scales, integer divisors), and ops whose attributes bound their windows."""
    rng = np.random.default_rng(1)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    i64 = TensorProto.INT64
    out = {}
    out["resize_crop_roi_input"] = mk([
        helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="linear",
                         coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-1.0),
    ], [vi("x", shape=(1, 1, 4, 4)), vi("roi", shape=[8])], [vi("y")], [arr("scales", np.array([1, 1, 2, 2],
                                                                                               np.float32))], opset=13)
    out["resize_scales_input"] = mk([
        helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="cubic", antialias=1),
    ], [vi("x", shape=(1, 1, 4, 4)), vi("scales", shape=[4])], [vi("y")], opset=18)
    out["int_div_mod"] = mk([
        helper.make_node("Div", ["a", "b"], ["d"]),
        helper.make_node("Mod", ["a", "b"], ["y"]),
    ], [vi("a", TensorProto.INT32, [4]), vi("b", TensorProto.INT32, [4])],
        [vi("d", TensorProto.INT32), vi("y", TensorProto.INT32)])
    out["gather_indices_input"] = mk([
        helper.make_node("Gather", ["x", "i"], ["g"], axis=1),
        helper.make_node("GatherElements", ["x", "j"], ["y"], axis=0),
    ], [vi("x", shape=(3, 4)), vi("i", i64, [2]), vi("j", i64, (3, 4))], [vi("g"), vi("y")])
    out["shape_inputs"] = mk([
        helper.make_node("Reshape", ["x", "s"], ["r"]),
        helper.make_node("Expand", ["r", "e"], ["ex"]),
        helper.make_node("Slice", ["ex", "st", "en"], ["sl"]),
        helper.make_node("Tile", ["sl", "t"], ["y"]),
    ], [vi("x", shape=(2, 3)), vi("s", i64, [2]), vi("e", i64, [2]), vi("st", i64, [2]), vi("en", i64, [2]),
        vi("t", i64, [2])], [vi("y")])
    out["windows"] = mk([
        helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("ConvTranspose", ["p", "W"], ["c"], strides=[2, 2], output_padding=[1, 1]),
        helper.make_node("LRN", ["c"], ["l"], size=3),
        helper.make_node("AveragePool", ["l"], ["y"], kernel_shape=[2, 2], ceil_mode=1),
    ], [vi("x", shape=(1, 2, 6, 6))], [vi("y")], [arr("W", f32(2, 2, 3, 3))])
    out["softmax_argmax_range"] = mk([
        helper.make_node("Softmax", ["x"], ["s"], axis=-1),
        helper.make_node("ArgMax", ["s"], ["ix"], axis=1),
        helper.make_node("Range", ["a", "b", "d"], ["y"]),
    ], [vi("x", shape=(2, 5)), vi("a", shape=[]), vi("b", shape=[]), vi("d", shape=[])],
        [vi("ix", i64), vi("y")])
    # sampling at run-time positions: grid, ROIs and their batch indices, offsets and masks, unpool indices
    out["grid_sample_input"] = mk([
        helper.make_node("AffineGrid", ["theta", "size"], ["g"], align_corners=1),
        helper.make_node("GridSample", ["x", "g"], ["a"], mode="linear", padding_mode="reflection"),
        helper.make_node("GridSample", ["x", "grid"], ["y"], mode="cubic", padding_mode="border"),
    ], [vi("x", shape=(1, 2, 4, 5)), vi("theta", shape=(1, 2, 3)), vi("grid", shape=(1, 3, 3, 2))],
        [vi("a"), vi("y")], [arr("size", np.array([1, 2, 3, 4], np.int64))], opset=20)
    out["roi_align_inputs"] = mk([
        helper.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], output_height=2, output_width=3, sampling_ratio=0,
                         spatial_scale=0.5, mode="max"),
    ], [vi("x", shape=(2, 2, 6, 6)), vi("rois", shape=(3, 4)), vi("bi", i64, [3])], [vi("y")], opset=16)
    out["deform_unpool_inputs"] = mk([
        helper.make_node("DeformConv", ["x", "W", "off", "", "mask"], ["d"], kernel_shape=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("MaxUnpool", ["x", "ix"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
    ], [vi("x", shape=(1, 2, 3, 3)), vi("off", shape=(1, 8, 4, 4)), vi("mask", shape=(1, 4, 4, 4)),
        vi("ix", i64, (1, 2, 3, 3))], [vi("d"), vi("y")], [arr("W", f32(2, 2, 2, 2))], opset=19)
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    load_dir, tensor_dir = os.path.join(out, "load"), os.path.join(out, "tensor")
    os.makedirs(load_dir, exist_ok=True)
    os.makedirs(tensor_dir, exist_ok=True)
    n_models = n_tensors = 0
    run_dir = os.path.join(out, "run")
    os.makedirs(run_dir, exist_ok=True)
    for name, m in run_models().items():
        with open(os.path.join(run_dir, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())
        n_models += 1
    for name, m in models().items():
        with open(os.path.join(load_dir, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())
        n_models += 1
        for t in m.graph.initializer:
            with open(os.path.join(tensor_dir, f"{name}_{t.name}.pb"), "wb") as f:
                f.write(t.SerializeToString())
            n_tensors += 1
    # an initializer in external data: fuzz_load resolves against a folder holding w.bin (4096 bytes)
    t = numpy_helper.from_array(np.zeros(4, np.float32), "w")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "64"), ("length", "16")):
        e = t.external_data.add()
        e.key, e.value = k, v
    m = mk([helper.make_node("Relu", ["w"], ["y"])], [], [vi("y", shape=[4])], [t])
    with open(os.path.join(load_dir, "external_data.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    n_models += 1
    # small models and test tensors shipped with the onnx package
    data = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    for p in sorted(glob.glob(os.path.join(data, "**", "*.onnx"), recursive=True)):
        if os.path.getsize(p) <= MAX_SEED_BYTES:
            shutil.copy(p, os.path.join(load_dir, "pkg_" + os.path.relpath(p, data).replace(os.sep, "_")))
            n_models += 1
    for p in sorted(glob.glob(os.path.join(data, "**", "*.pb"), recursive=True))[:200]:
        if os.path.getsize(p) <= MAX_SEED_BYTES:
            shutil.copy(p, os.path.join(tensor_dir, "pkg_" + os.path.relpath(p, data).replace(os.sep, "_")))
            n_tensors += 1
    print(f"gen_seeds: {n_models} models, {n_tensors} tensors in {out}")


if __name__ == "__main__":
    main()
