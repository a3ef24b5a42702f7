#!/usr/bin/env python3
"""Write the malformed-model corpus: files ingot must reject with a message naming the problem.

    gen_malformed.py OUT_DIR [--cases cases.txt]

Models are built with the onnx package (which happily serializes semantically broken graphs) and,
for wire-format damage, with the small protobuf writer below or by editing the bytes of a valid
model. cases.txt (next to this script) lists `file<TAB>expected substring of the error message`;
with --cases the script checks that it wrote every file the list names, so the two cannot drift.
External-data cases live in OUT_DIR/ext/ with their data files; OUT_DIR/secret.bin is outside that
folder, the target of the escape attempts.
"""
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


# ---- a minimal protobuf writer for bytes the onnx package will not produce ----
def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(field, wire):
    return varint((field << 3) | wire)


def f_varint(field, v):
    return tag(field, 0) + varint(v)


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return tag(field, 2) + varint(len(data)) + data


# ---- building blocks ----
def vi(name, elem=TensorProto.FLOAT, shape=(2, 3)):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs=(), outputs=(), inits=(), opsets=OPSET, value_info=(), sparse=()):
    g = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), list(inits), value_info=list(value_info),
                          sparse_initializer=list(sparse))
    m = helper.make_model(g, opset_imports=list(opsets), producer_name="gen_malformed")
    m.ir_version = 8
    return m


def tensor(name, dtype, dims, raw=None, **typed):
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    if raw is not None:
        t.raw_data = raw
    for field, vals in typed.items():
        getattr(t, field).extend(vals)
    return t


def relu_with_init(t, out_shape=(4,)):
    """Relu over initializer t, so it is used."""
    return model([helper.make_node("Relu", [t.name], ["y"], name="relu")], [], [vi("y", shape=out_shape)], [t])


def valid_model():
    """A small valid model: x[N,3,8,8] -> Conv(W,B) -> Relu -> Flatten -> MatMul(F) -> y."""
    rng = np.random.default_rng(1)
    W = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "W")
    B = numpy_helper.from_array(np.zeros(4, np.float32), "B")
    F = numpy_helper.from_array(rng.standard_normal((144, 10)).astype(np.float32), "F")
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Flatten", ["r"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "F"], ["y"], name="fc"),
    ]
    return model(nodes, [vi("x", shape=("N", 3, 8, 8))], [vi("y", shape=("N", 10))], [W, B, F])


def ext_tensor(name, dims, entries):
    t = tensor(name, TensorProto.FLOAT, dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in entries:
        e = t.external_data.add()
        e.key = k
        e.value = v
    return t


def cases():
    """(file name, bytes) for every case; a bytes value of None marks a file written elsewhere."""
    c = {}
    valid = valid_model().SerializeToString()

    # ---- wire format ----
    c["truncated.onnx"] = valid[: len(valid) * 2 // 3]
    c["truncated_varint.onnx"] = f_varint(1, 8) + tag(7, 2) + b"\xff\xff"
    c["varint_11_bytes.onnx"] = tag(1, 0) + b"\xff" * 10 + b"\x01"
    c["wrong_wire_type.onnx"] = f_bytes(1, "8") + valid
    node_bad = f_bytes(1, "x") + f_bytes(2, "y") + f_varint(4, 5)
    c["wrong_wire_type_nested.onnx"] = f_bytes(7, f_bytes(1, node_bad)) + f_bytes(8, f_bytes(1, "") + f_varint(2, 17))
    c["length_past_end.onnx"] = f_varint(1, 8) + tag(7, 2) + varint(100000) + valid[:50]
    inner_attr = f_bytes(1, "alpha") + tag(4, 2) + varint(300) + b"abc"
    c["length_past_end_nested.onnx"] = (f_bytes(7, f_bytes(1, f_bytes(4, "LeakyRelu") + f_bytes(5, inner_attr))) +
                                        f_bytes(8, f_varint(2, 17)))
    c["group_wire_type.onnx"] = f_varint(1, 8) + tag(7, 3) + tag(7, 4)
    c["invalid_wire_type.onnx"] = f_varint(1, 8) + tag(9, 7) + b"\x00"
    c["field_number_zero.onnx"] = b"\x02\x00" + valid
    c["empty.onnx"] = b""
    c["text.onnx"] = b'ir_version: 8\nproducer_name: "pytorch"\ngraph {\n  node { op_type: "Relu" }\n}\n'
    # float_data given as a 5-byte packed field (not a whole number of floats)
    t = f_varint(1, 1) + f_varint(2, 1) + f_bytes(8, "w") + f_bytes(4, b"\x00" * 5)
    c["packed_float_partial.onnx"] = f_varint(1, 8) + f_bytes(7, f_bytes(5, t)) + f_bytes(8, f_varint(2, 17))
    c["nul_in_name.onnx"] = f_varint(1, 8) + f_bytes(7, f_bytes(2, b"bad\x00name")) + f_bytes(8, f_varint(2, 17))
    # 60 subgraphs inside each other (If -> then_branch -> If ...): 180 message levels
    g = f_bytes(2, "leaf")
    for _ in range(60):
        g = f_bytes(1, f_bytes(4, "If") + f_bytes(5, f_bytes(1, "then_branch") + f_bytes(6, g) + f_varint(20, 5)))
    c["nesting_too_deep.onnx"] = f_varint(1, 8) + f_bytes(7, g) + f_bytes(8, f_varint(2, 17))
    # a subgraph with a broken length inside an attribute
    sub = f_bytes(1, f_bytes(4, "Relu") + tag(1, 2) + varint(99))
    c["subgraph_length_past_end.onnx"] = (f_varint(1, 8) + f_bytes(7, f_bytes(1, f_bytes(4, "If") + f_bytes(
        5, f_bytes(1, "then_branch") + f_bytes(6, sub) + f_varint(20, 5))))) + f_bytes(8, f_varint(2, 17))
    c["no_graph.onnx"] = f_varint(1, 8) + f_bytes(8, f_varint(2, 17))

    # ---- tensors ----
    c["negative_dim.onnx"] = relu_with_init(
        tensor("w", TensorProto.FLOAT, [-1, 4], raw=b"\x00" * 16)).SerializeToString()
    c["huge_dim.onnx"] = relu_with_init(tensor("w", TensorProto.FLOAT, [1 << 40], raw=b"\x00" * 16)).SerializeToString()
    c["dim_product_overflow.onnx"] = relu_with_init(
        tensor("w", TensorProto.FLOAT, [1 << 40, 1 << 40, 1 << 20], raw=b"\x00" * 16)).SerializeToString()
    c["raw_data_size_mismatch.onnx"] = relu_with_init(
        tensor("w", TensorProto.FLOAT, [4], raw=b"\x00" * 12)).SerializeToString()
    c["typed_count_mismatch.onnx"] = relu_with_init(
        tensor("w", TensorProto.FLOAT, [4], float_data=[1.0, 2.0, 3.0])).SerializeToString()
    c["wrong_typed_field.onnx"] = relu_with_init(
        tensor("w", TensorProto.FLOAT, [2], int64_data=[1, 2]), (2,)).SerializeToString()
    c["raw_and_typed.onnx"] = relu_with_init(
        tensor("w", TensorProto.FLOAT, [1], raw=b"\x00" * 4, float_data=[1.0]), (1,)).SerializeToString()
    c["no_data.onnx"] = relu_with_init(tensor("w", TensorProto.FLOAT, [4])).SerializeToString()
    c["unknown_dtype.onnx"] = relu_with_init(tensor("w", 99, [4], raw=b"\x00" * 4)).SerializeToString()
    c["string_initializer.onnx"] = relu_with_init(
        tensor("w", TensorProto.STRING, [1], string_data=[b"hello"]), (1,)).SerializeToString()
    c["float8_initializer.onnx"] = relu_with_init(
        tensor("w", TensorProto.FLOAT8E4M3FN, [4], raw=b"\x00" * 4)).SerializeToString()
    c["complex_initializer.onnx"] = relu_with_init(
        tensor("w", TensorProto.COMPLEX64, [4], raw=b"\x00" * 32)).SerializeToString()
    c["rank9.onnx"] = relu_with_init(tensor("w", TensorProto.FLOAT, [1] * 9, raw=b"\x00" * 4)).SerializeToString()
    c["no_dtype.onnx"] = relu_with_init(tensor("w", 0, [1], raw=b"\x00" * 4)).SerializeToString()
    attr_t = helper.make_node("Constant", [], ["y"], name="const",
                              value=tensor("v", TensorProto.INT64, [3], int64_data=[1]))
    c["attribute_tensor_mismatch.onnx"] = model([attr_t], [], [vi("y", TensorProto.INT64, (3,))]).SerializeToString()

    # ---- graph structure ----
    x, y = vi("x"), vi("y")
    c["graph_cycle.onnx"] = model([
        helper.make_node("Add", ["x", "b"], ["a"], name="add"),
        helper.make_node("Relu", ["a"], ["b"], name="relu"),
    ], [x], [vi("a")]).SerializeToString()
    c["missing_initializer.onnx"] = model([helper.make_node("Add", ["x", "W"], ["y"], name="add")], [x],
                                          [y]).SerializeToString()
    c["duplicate_producer.onnx"] = model([
        helper.make_node("Relu", ["x"], ["y"], name="a"),
        helper.make_node("Sigmoid", ["x"], ["y"], name="b"),
    ], [x], [y]).SerializeToString()
    c["duplicate_node_output.onnx"] = model([helper.make_node("Split", ["x"], ["y", "y"], name="split", axis=0)],
                                            [x], [y]).SerializeToString()
    w1 = numpy_helper.from_array(np.ones(3, np.float32), "W")
    c["duplicate_initializer.onnx"] = model([helper.make_node("Add", ["x", "W"], ["y"], name="add")], [x], [y],
                                            [w1, w1]).SerializeToString()
    c["duplicate_input.onnx"] = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [x, x],
                                      [y]).SerializeToString()
    c["output_is_input.onnx"] = model([helper.make_node("Relu", ["x"], ["x"], name="relu")], [x],
                                      [x]).SerializeToString()
    c["output_is_initializer.onnx"] = model([helper.make_node("Relu", ["x"], ["W"], name="relu")], [x], [vi("W")],
                                            [w1]).SerializeToString()
    c["output_not_produced.onnx"] = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [x],
                                          [y, vi("z")]).SerializeToString()
    c["missing_opset.onnx"] = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [x], [y],
                                    opsets=[helper.make_opsetid("com.example", 1)]).SerializeToString()
    c["empty_op_type.onnx"] = model([helper.make_node("", ["x"], ["y"], name="nameless_op")], [x],
                                    [y]).SerializeToString()
    n = helper.make_node("LeakyRelu", ["x"], ["y"], name="lrelu", alpha=0.1)
    n.attribute.extend([helper.make_attribute("alpha", 0.2)])
    c["duplicate_attribute.onnx"] = model([n], [x], [y]).SerializeToString()
    # an AttributeType the enum does not have: written by hand, kept by protobuf as an unknown field
    n = helper.make_node("LeakyRelu", ["x"], ["y"], name="lrelu")
    n = onnx.NodeProto.FromString(n.SerializeToString() + f_bytes(5, f_bytes(1, "alpha") + f_varint(20, 99)))
    c["attribute_bad_type.onnx"] = model([n], [x], [y]).SerializeToString()
    n = helper.make_node("LeakyRelu", ["x"], ["y"], name="lrelu", alpha=0.1)
    n.attribute[0].name = ""
    c["attribute_no_name.onnx"] = model([n], [x], [y]).SerializeToString()
    seq = helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, None)
    c["sequence_input.onnx"] = model([helper.make_node("SequenceLength", ["seq"], ["y"], name="len")], [seq],
                                     [vi("y", TensorProto.INT64, ())]).SerializeToString()
    mp = helper.make_value_info("dict", helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(
        TensorProto.FLOAT, None)))
    c["map_input.onnx"] = model([helper.make_node("Identity", ["dict"], ["y"], name="id")], [mp],
                                [y]).SerializeToString()
    c["string_input.onnx"] = model([helper.make_node("Identity", ["s"], ["y"], name="id")],
                                   [vi("s", TensorProto.STRING, (1,))], [y]).SerializeToString()
    no_type = onnx.ValueInfoProto()
    no_type.name = "x"
    c["input_no_type.onnx"] = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [no_type],
                                    [y]).SerializeToString()
    c["input_negative_dim.onnx"] = model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                                         [vi("x", shape=(2, -3))],
                                         [y]).SerializeToString()
    c["input_rank9.onnx"] = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", shape=(1,) * 9)],
                                  [y]).SerializeToString()
    sp = helper.make_sparse_tensor(numpy_helper.from_array(np.ones(2, np.float32), "sv"),
                                   numpy_helper.from_array(np.array([0, 3], np.int64), "si"), [5])
    c["sparse_initializer.onnx"] = model([helper.make_node("Relu", ["sv"], ["y"], name="relu")], [], [y],
                                         sparse=[sp]).SerializeToString()
    c["two_graphs.onnx"] = valid + f_bytes(7, f_bytes(2, "again"))
    # shape inference: a well-formed file whose shapes cannot broadcast
    c["shape_mismatch.onnx"] = model([helper.make_node("Add", ["x", "z"], ["y"], name="bad_add")],
                                     [vi("x", shape=(2, 3)), vi("z", shape=(4, 5))],
                                     [vi("y", shape=None)]).SerializeToString()

    # ---- models ONNX Runtime rejects (issue 13): each would otherwise run with a wrong answer ----
    x4 = vi("x", shape=(1, 3, 4, 4))
    c["attr_type_softmax_axis_float.onnx"] = model([helper.make_node("Softmax", ["x"], ["y"], name="softmax",
                                                                      axis=1.0)], [x], [y]).SerializeToString()
    c["attr_type_flatten_axis_list.onnx"] = model([helper.make_node("Flatten", ["x"], ["y"], name="flatten",
                                                                     axis=[1])], [x], [y]).SerializeToString()
    c["attr_type_leakyrelu_alpha_int.onnx"] = model([helper.make_node("LeakyRelu", ["x"], ["y"], name="lrelu",
                                                                       alpha=2)], [x], [y]).SerializeToString()
    n = helper.make_node("Softmax", ["x"], ["y"], name="softmax")
    n = onnx.NodeProto.FromString(n.SerializeToString() + f_bytes(5, f_bytes(1, "axis")))  # no value, no type
    c["attr_type_no_value.onnx"] = model([n], [x], [y]).SerializeToString()
    c["maxpool_pads_ge_kernel.onnx"] = model([helper.make_node("MaxPool", ["x"], ["y"], name="pool",
                                                               kernel_shape=[2, 2], pads=[2, 2, 2, 2])], [x4],
                                             [vi("y", shape=None)]).SerializeToString()
    c["avgpool_pads_ge_kernel.onnx"] = model([helper.make_node("AveragePool", ["x"], ["y"], name="pool",
                                                               kernel_shape=[3, 3], pads=[0, 3, 0, 0])], [x4],
                                             [vi("y", shape=None)]).SerializeToString()
    wt = numpy_helper.from_array(np.ones((3, 2, 3, 3), np.float32), "W")
    c["convtranspose_output_padding_ge_stride.onnx"] = model(
        [helper.make_node("ConvTranspose", ["x", "W"], ["y"], name="deconv", strides=[2, 2], output_padding=[2, 0])],
        [x4], [vi("y", shape=None)], [wt]).SerializeToString()
    w3 = numpy_helper.from_array(np.ones(4, np.float32), "W")
    c["input_initializer_shape_conflict.onnx"] = model(
        [helper.make_node("Add", ["x", "W"], ["y"], name="add")], [vi("x", shape=(4,)), vi("W", shape=(3,))],
        [vi("y", shape=(4,))], [w3]).SerializeToString()
    c["input_initializer_dtype_conflict.onnx"] = model(
        [helper.make_node("Add", ["x", "W"], ["y"], name="add")],
        [vi("x", shape=(4,)), vi("W", TensorProto.INT64, shape=(4,))], [vi("y", shape=(4,))], [w3]).SerializeToString()
    c["opset_too_new.onnx"] = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [x], [y],
                                    opsets=[helper.make_opsetid("", 99)]).SerializeToString()
    c["lrn_size_huge.onnx"] = model([helper.make_node("LRN", ["x"], ["y"], name="lrn", size=1 << 62)], [x4],
                                    [vi("y", shape=None)]).SerializeToString()
    c["lrn_size_huge_odd.onnx"] = model([helper.make_node("LRN", ["x"], ["y"], name="lrn", size=(1 << 62) + 1)],
                                        [x4], [vi("y", shape=None)]).SerializeToString()
    a = numpy_helper.from_array(np.array([7, 8, 9], np.int32), "a")
    b = numpy_helper.from_array(np.array([1, 0, 3], np.int32), "b")
    c["int_div_by_zero.onnx"] = model([helper.make_node("Div", ["a", "b"], ["y"], name="div")], [],
                                      [vi("y", TensorProto.INT32, (3,))], [a, b]).SerializeToString()
    c["int_mod_by_zero.onnx"] = model([helper.make_node("Mod", ["a", "b"], ["y"], name="mod")], [],
                                      [vi("y", TensorProto.INT32, (3,))], [a, b]).SerializeToString()

    # ---- external data (files under ext/; secret.bin outside) ----
    # ---- If: inlined at load when the condition is a build-time constant, else refused naming the node ----
    def if_model(then_g, else_g=None, cond_nodes=None, cond="c"):
        """x[2,3] -> If(cond) -> y; by default cond = Equal(Shape(x)[1], 3), true (a build-time constant)."""
        three = numpy_helper.from_array(np.array(3, np.int64), "three")
        one = numpy_helper.from_array(np.array(1, np.int64), "one")
        if cond_nodes is None:
            cond_nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
                          helper.make_node("Gather", ["s", "one"], ["d"], name="gather"),
                          helper.make_node("Equal", ["d", "three"], ["c"], name="eq")]
        attrs = {"then_branch": then_g}
        if else_g is not None:
            attrs["else_branch"] = else_g
        nodes = list(cond_nodes) + [helper.make_node("If", [cond], ["y"], name="if", **attrs)]
        return model(nodes, [vi("x")], [vi("y")], [three, one]).SerializeToString()

    def branch(nodes, outputs=("b",), inputs=(), inits=()):
        return helper.make_graph(nodes, "branch", list(inputs), [vi(o) for o in outputs], list(inits))

    neg = branch([helper.make_node("Neg", ["x"], ["b"], name="neg")])
    c["if_not_constant.onnx"] = if_model(neg, neg, [
        helper.make_node("ReduceSum", ["x"], ["sum"], name="sum", keepdims=0),
        helper.make_node("Cast", ["three"], ["threef"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("Greater", ["sum", "threef"], ["c"], name="gt")])
    c["if_cond_not_bool.onnx"] = if_model(neg, neg, [], cond="three")
    c["if_branch_outputs.onnx"] = if_model(branch([helper.make_node("Neg", ["x"], ["b"], name="neg"),
                                                   helper.make_node("Abs", ["x"], ["b2"], name="abs")],
                                                  outputs=("b", "b2")), neg)
    c["if_branch_unknown_name.onnx"] = if_model(branch([helper.make_node("Add", ["x", "nowhere"], ["b"], name="add")]),
                                                neg)
    c["if_branch_input.onnx"] = if_model(branch([helper.make_node("Neg", ["x"], ["b"], name="neg")],
                                                inputs=[vi("z")]), neg)
    c["if_branch_empty_op.onnx"] = if_model(branch([helper.make_node("", ["x"], ["b"], name="nop")]), neg)
    c["if_branch_twice.onnx"] = if_model(branch([helper.make_node("Neg", ["x"], ["b"], name="neg"),
                                                 helper.make_node("Abs", ["x"], ["b"], name="abs")]), neg)
    c["if_missing_branch.onnx"] = if_model(neg, None, [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "one"], ["d"], name="gather"),
        helper.make_node("Greater", ["d", "three"], ["c"], name="gt")])
    # a branch whose output is the If's own output: a cycle once inlined
    c["if_branch_cycle.onnx"] = if_model(branch([], outputs=("y",)), neg)

    def ext_model(entries, dims=(4,)):
        return relu_with_init(ext_tensor("w", list(dims), entries), dims).SerializeToString()

    c["ext/missing_file.onnx"] = ext_model([("location", "nowhere.bin")])
    c["ext/offset_out_of_range.onnx"] = ext_model([("location", "weights.bin"), ("offset", "4096"), ("length", "16")])
    c["ext/length_past_end.onnx"] = ext_model([("location", "weights.bin"), ("offset", "16"), ("length", "16")])
    c["ext/escape_dotdot.onnx"] = ext_model([("location", "../secret.bin")])
    c["ext/escape_nested_dotdot.onnx"] = ext_model([("location", "sub/../../secret.bin")])
    c["ext/absolute_path.onnx"] = ext_model([("location", "/etc/passwd")])
    c["ext/escape_symlink.onnx"] = ext_model([("location", "link_to_secret.bin")])
    c["ext/length_mismatch.onnx"] = ext_model([("location", "weights.bin"), ("length", "8")])
    c["ext/bad_offset.onnx"] = ext_model([("location", "weights.bin"), ("offset", "-5")])
    c["ext/no_location.onnx"] = ext_model([("offset", "0")])
    c["ext/size_mismatch.onnx"] = ext_model([("location", "weights.bin")])
    c["ext/folder_as_file.onnx"] = ext_model([("location", "sub")])
    return c


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "ext", "sub"), exist_ok=True)
    for name, data in cases().items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    # data files for the external cases: 24 bytes of weights, a secret outside ext/, a symlink to it
    with open(os.path.join(out, "ext", "weights.bin"), "wb") as f:
        f.write(struct.pack("<6f", 1, 2, 3, 4, 5, 6))
    with open(os.path.join(out, "secret.bin"), "wb") as f:
        f.write(struct.pack("<4f", 9, 9, 9, 9))
    link = os.path.join(out, "ext", "link_to_secret.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.join("..", "secret.bin"), link)
    if "--cases" in sys.argv:
        listed = sys.argv[sys.argv.index("--cases") + 1]
        missing = []
        with open(listed) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    name = line.split("\t")[0]
                    if not os.path.exists(os.path.join(out, name)):
                        missing.append(name)
        if missing:
            sys.exit("gen_malformed: cases.txt names files this script does not write: " + ", ".join(missing))
    print(f"gen_malformed: wrote {len(cases())} files to {out}")


if __name__ == "__main__":
    main()
