#!/usr/bin/env python3
"""Small ONNX models for the GPU tests, with inputs and ONNX Runtime reference outputs.

    make_models.py OUT_DIR

Writes OUT_DIR/<case>/{model.onnx, input_<i>.npy, output_<j>.npy}. Each case exercises what the CUDA
backend lowers specially: convolutions with BatchNormalization / residual / ReLU / Clip fusions and
depthwise groups (ResNet-50, MobileNetV2 style), a BERT-style encoder layer (embedding Gather, LayerNorm,
Q/K/V MatMul+bias, Reshape/Transpose views, scaled softmax attention with a mask, erf-GELU MLP, residual
adds), a ViT-style patch embedding with class token (Expand, Concat, Gather of index 0), and single ops
(Slice, Split, Pad, reductions, softmax on an inner axis, casts, comparisons, Where), torchvision's
nn.MultiheadAttention export (packed QKV split into heads through Reshapes with no strided view, kept
lazy) and such lazy views under every kind of consumer. Symbolic batch
dims come with Shape->Gather->Unsqueeze->Concat->Reshape chains as exporters write them. Weights are
seeded random; references come from ONNX Runtime on the CPU.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as oh
from onnx import numpy_helper as nh

rng = np.random.default_rng(1234)


class G:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, p="t"):
        self.n += 1
        return f"{p}{self.n}"

    def w(self, arr, p="w"):
        nm = self.name(p)
        self.inits.append(nh.from_array(np.asarray(arr), nm))
        return nm

    def op(self, op, ins, n_out=1, **attrs):
        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(oh.make_node(op, ins, outs, name=self.name("n_" + op), **attrs))
        return outs[0] if n_out == 1 else outs

    def model(self, inputs, outputs, opset=17):
        g = oh.make_graph(self.nodes, "g", inputs, outputs, self.inits)
        m = oh.make_model(g, opset_imports=[oh.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def randw(*shape, scale=None):
    fan = np.prod(shape[1:]) if len(shape) > 1 else shape[0]
    s = scale if scale is not None else 1.0 / np.sqrt(max(fan, 1))
    return (rng.standard_normal(shape) * s).astype(np.float32)


def conv_bn(g, x, cin, cout, k, stride=1, pad=None, group=1, bias=False, bn=True):
    pad = k // 2 if pad is None else pad
    ins = [x, g.w(randw(cout, cin // group, k, k))]
    if bias:
        ins.append(g.w(randw(cout, scale=0.1)))
    y = g.op("Conv", ins, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, group=group)
    if bn:
        y = g.op("BatchNormalization", [y, g.w(1 + 0.1 * randw(cout, scale=1)), g.w(0.1 * randw(cout, scale=1)),
                                        g.w(0.1 * randw(cout, scale=1)), g.w(np.abs(1 + 0.1 * randw(cout, scale=1)))],
                 epsilon=1e-5)
    return y


def batch_reshape(g, x, tail):
    """Reshape x to [batch] + tail with the batch taken from Shape(x)[0], as exporters do."""
    s = g.op("Shape", [x])
    b = g.op("Gather", [s, g.w(np.array(0, np.int64))], axis=0)
    b = g.op("Unsqueeze", [b, g.w(np.array([0], np.int64))])
    shape = g.op("Concat", [b, g.w(np.array(tail, np.int64))], axis=0)
    return g.op("Reshape", [x, shape])


def img_input(c=3, hw=32):
    return oh.make_tensor_value_info("input", TP.FLOAT, ["batch", c, hw, hw])


def out_info(shape, name="output"):
    return oh.make_tensor_value_info(name, TP.FLOAT, shape)


# ---- cases ------------------------------------------------------------------------------------------

def case_resnet_block():
    g = G()
    x = conv_bn(g, "input", 3, 16, 7, stride=2, pad=3)
    x = g.op("Relu", [x])
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    for cin, cout, stride in ((16, 32, 1), (32, 64, 2)):
        y = g.op("Relu", [conv_bn(g, x, cin, cout // 2, 1)])
        y = g.op("Relu", [conv_bn(g, y, cout // 2, cout // 2, 3, stride=stride)])
        y = conv_bn(g, y, cout // 2, cout, 1)
        sc = conv_bn(g, x, cin, cout, 1, stride=stride, pad=0)
        x = g.op("Relu", [g.op("Add", [y, sc])])
        y = g.op("Relu", [conv_bn(g, x, cout, cout, 3)])
        y = conv_bn(g, y, cout, cout, 3)
        x = g.op("Relu", [g.op("Add", [y, x])])
    x = g.op("GlobalAveragePool", [x])
    x = g.op("Flatten", [x], axis=1)
    y = g.op("Gemm", [x, g.w(randw(10, 64)), g.w(randw(10, scale=0.1))], transB=1)
    g.nodes[-1].output[0] = "output"
    # five elementwise steps: the input and output copies, and the copies into the merged shortcuts'
    # Concats of what cuDNN's convolutions wrote (two) and of the strided shortcut's input; the block input
    # x goes into its Concat slice, its conv1 reading it there (src/cuda/lower_movement.c, concat_home)
    return g.model([img_input()], [out_info(["batch", 10])]), {"input": (2, 3, 32, 32)}, {"max_ew_steps": 5}


def case_mobilenet_block():
    g = G()
    x = g.op("Clip", [conv_bn(g, "input", 3, 16, 3, stride=2), g.w(np.array(0, np.float32)), g.w(np.array(6, np.float32))])
    for cin, cout, t, stride in ((16, 16, 1, 1), (16, 24, 6, 2), (24, 24, 6, 1)):
        hid = cin * t
        y = x
        if t != 1:
            y = g.op("Clip", [conv_bn(g, y, cin, hid, 1), g.w(np.array(0, np.float32)), g.w(np.array(6, np.float32))])
        y = g.op("Clip", [conv_bn(g, y, hid, hid, 3, stride=stride, group=hid), g.w(np.array(0, np.float32)),
                          g.w(np.array(6, np.float32))])
        y = conv_bn(g, y, hid, cout, 1)
        x = g.op("Add", [x, y]) if stride == 1 and cin == cout else y
    x = g.op("GlobalAveragePool", [x])
    x = g.op("Flatten", [x], axis=1)
    g.op("Gemm", [x, g.w(randw(10, 24)), g.w(randw(10, scale=0.1))], transB=1)
    g.nodes[-1].output[0] = "output"
    return g.model([img_input()], [out_info(["batch", 10])]), {"input": (2, 3, 32, 32)}


# ---- ConvTranspose (cuDNN backward data) ----------------------------------------------------------

def convt(g, x, cin, cout, k, bias=True, **attrs):
    """ConvTranspose with a random [cin, cout / group, k...] filter and, optionally, a bias."""
    ins = [x, g.w(randw(cin, cout // attrs.get("group", 1), *k))]
    if bias:
        ins.append(g.w(randw(cout, scale=0.5)))
    return g.op("ConvTranspose", ins, **attrs)


def add_out(g, outs, y, shape):
    """The last node's output y becomes graph output out<i> of the given shape."""
    assert g.nodes[-1].output[0] == y
    g.nodes[-1].output[0] = f"out{len(outs)}"
    outs.append(out_info(shape, g.nodes[-1].output[0]))


def case_conv_transpose():
    """2-D ConvTranspose: stride 2 with output_padding, groups, depthwise, dilation, asymmetric pads,
    SAME_UPPER/SAME_LOWER, output_shape, output_padding beside asymmetric pads, bias and no bias, and a
    cropped output (a view of cuDNN's) read by a convolution."""
    g = G()
    x, outs = "input", []  # [batch, 8, 6, 7]
    add_out(g, outs, convt(g, x, 8, 4, (3, 3), strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
            ["batch", 4, 12, 14])
    add_out(g, outs, convt(g, x, 8, 6, (4, 4), bias=False, group=2, strides=[2, 2], pads=[1, 1, 1, 1]),
            ["batch", 6, 12, 14])
    add_out(g, outs, convt(g, x, 8, 5, (3, 3), strides=[1, 2], dilations=[2, 2], pads=[1, 1, 1, 1]),
            ["batch", 5, 8, 15])
    add_out(g, outs, convt(g, x, 8, 4, (3, 3), strides=[2, 2], pads=[0, 1, 2, 0]), ["batch", 4, 11, 14])
    add_out(g, outs, convt(g, x, 8, 4, (3, 3), strides=[2, 2], output_shape=[12, 13]), ["batch", 4, 12, 13])
    add_out(g, outs, convt(g, x, 8, 8, (3, 3), group=8, strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
            ["batch", 8, 12, 14])
    add_out(g, outs, convt(g, x, 8, 4, (5, 5), strides=[2, 2], auto_pad="SAME_LOWER"), ["batch", 4, 12, 14])
    add_out(g, outs, convt(g, x, 8, 4, (3, 3), strides=[3, 3], pads=[1, 0, 0, 2], output_padding=[2, 1]),
            ["batch", 4, 19, 20])
    # SAME_UPPER crops the last row and column: a view of cuDNN's output, read by the next convolution
    y = convt(g, x, 8, 4, (3, 3), bias=False, strides=[2, 2], auto_pad="SAME_UPPER")
    y = g.op("Conv", [y, g.w(randw(4, 4, 3, 3)), g.w(randw(4, scale=0.1))], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    add_out(g, outs, y, ["batch", 4, 12, 14])
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 8, 6, 7])
    return g.model([inp], outs), {"input": (2, 8, 6, 7)}


def case_conv_transpose_1d():
    """1-D ConvTranspose ([N, C, L] as [N, C, 1, L]): with bias; grouped with output_padding and asymmetric
    pads; dilated."""
    g = G()
    outs = []
    add_out(g, outs, convt(g, "input", 6, 4, (4,), strides=[2], pads=[1, 1]), ["batch", 4, 18])
    add_out(g, outs, convt(g, "input", 6, 4, (3,), bias=False, group=2, strides=[2], pads=[1, 0],
                           output_padding=[1]), ["batch", 4, 19])
    add_out(g, outs, convt(g, "input", 6, 3, (3,), dilations=[3], pads=[2, 0]), ["batch", 3, 13])
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 6, 9])
    return g.model([inp], outs), {"input": (2, 6, 9)}


def case_unet_decoder():
    """A UNet's decoder: ConvTranspose 2x2 stride 2 on a convolution's channels-last output, Concat with
    the skip connection, then a 3x3 stride 2 ConvTranspose with output_padding 1 and a 1x1 head."""
    g = G()
    e1 = g.op("Relu", [conv_bn(g, "input", 3, 8, 3)])  # [b, 8, 16, 16]
    e2 = g.op("Relu", [conv_bn(g, e1, 8, 16, 3, stride=2)])  # [b, 16, 8, 8]
    u = convt(g, e2, 16, 8, (2, 2), strides=[2, 2])  # [b, 8, 16, 16]
    d = g.op("Relu", [conv_bn(g, g.op("Concat", [u, e1], axis=1), 16, 8, 3)])
    u2 = g.op("Relu", [convt(g, d, 8, 4, (3, 3), strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])])
    g.op("Conv", [u2, g.w(randw(2, 4, 1, 1)), g.w(randw(2, scale=0.1))], kernel_shape=[1, 1])
    g.nodes[-1].output[0] = "output"
    return g.model([img_input(3, 16)], [out_info(["batch", 2, 32, 32])]), {"input": (2, 3, 16, 16)}


def case_unsupported_convt_3d():
    """3-D ConvTranspose (volumetric decoders): not lowered yet; the support check names the node."""
    g = G()
    convt(g, "input", 3, 2, (3, 3, 3), strides=[2, 2, 2], pads=[1] * 6, output_padding=[1, 1, 1])
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 3, 4, 4, 4])
    return g.model([inp], [out_info(["batch", 2, 8, 8, 8])]), {"input": (2, 3, 4, 4, 4)}


def attention(g, x, S, D, H, mask=None):
    """x [B, S, D] -> multi-head self-attention output [B, S, D] (exporter style)."""
    dh = D // H
    q = g.op("Add", [g.op("MatMul", [x, g.w(randw(D, D))]), g.w(randw(D, scale=0.1))])
    k = g.op("Add", [g.op("MatMul", [x, g.w(randw(D, D))]), g.w(randw(D, scale=0.1))])
    v = g.op("Add", [g.op("MatMul", [x, g.w(randw(D, D))]), g.w(randw(D, scale=0.1))])
    q = g.op("Transpose", [batch_reshape(g, q, [S, H, dh])], perm=[0, 2, 1, 3])
    k = g.op("Transpose", [batch_reshape(g, k, [S, H, dh])], perm=[0, 2, 3, 1])
    v = g.op("Transpose", [batch_reshape(g, v, [S, H, dh])], perm=[0, 2, 1, 3])
    s = g.op("Div", [g.op("MatMul", [q, k]), g.w(np.array(np.sqrt(dh), np.float32))])
    if mask is not None:
        s = g.op("Add", [s, mask])
    p = g.op("Softmax", [s], axis=-1)
    o = g.op("Transpose", [g.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
    o = batch_reshape(g, o, [S, D])
    return g.op("Add", [g.op("MatMul", [o, g.w(randw(D, D))]), g.w(randw(D, scale=0.1))])


def layernorm(g, x, D):
    return g.op("LayerNormalization", [x, g.w(1 + 0.1 * randw(D, scale=1)), g.w(0.1 * randw(D, scale=1))], axis=-1,
                epsilon=1e-12)


def gelu_erf(g, x):
    d = g.op("Div", [x, g.w(np.array(1.4142135381698608, np.float32))])
    e = g.op("Erf", [d])
    a = g.op("Add", [e, g.w(np.array(1.0, np.float32))])
    m = g.op("Mul", [x, a])
    return g.op("Mul", [m, g.w(np.array(0.5, np.float32))])


def encoder_layer(g, x, S, D, H, F, mask=None):
    a = attention(g, x, S, D, H, mask)
    x = layernorm(g, g.op("Add", [a, x]), D)
    h = gelu_erf(g, g.op("Add", [g.op("MatMul", [x, g.w(randw(D, F))]), g.w(randw(F, scale=0.1))]))
    h = g.op("Add", [g.op("MatMul", [h, g.w(randw(F, D))]), g.w(randw(D, scale=0.1))])
    return layernorm(g, g.op("Add", [h, x]), D)


def case_bert_layer():
    S, D, H, F, V = 16, 64, 4, 128, 100
    g = G()
    we = g.op("Gather", [g.w(randw(V, D, scale=0.5)), "input_ids"], axis=0)
    pos = g.op("Gather", [g.w(randw(32, D, scale=0.5)), g.w(np.arange(S, dtype=np.int64)[None, :])], axis=0)
    tt = g.op("Gather", [g.w(randw(2, D, scale=0.5)), g.op("Expand", [g.w(np.zeros((1, S), np.int64)),
                                                                     g.op("Shape", ["input_ids"])])], axis=0)
    x = layernorm(g, g.op("Add", [g.op("Add", [we, tt]), pos]), D)
    # attention mask from the ids: (ids != 0) as an additive bias, exporter style
    m = g.op("Cast", [g.op("Not", [g.op("Equal", ["input_ids", g.w(np.array(0, np.int64))])])], to=TP.FLOAT)
    m = g.op("Unsqueeze", [g.op("Unsqueeze", [m, g.w(np.array([1], np.int64))]), g.w(np.array([2], np.int64))])
    m = g.op("Mul", [g.op("Sub", [g.w(np.array(1.0, np.float32)), m]), g.w(np.array(np.finfo(np.float32).min, np.float32))])
    x = encoder_layer(g, x, S, D, H, F, m)
    x = encoder_layer(g, x, S, D, H, F, m)
    g.nodes[-1].output[0] = "output"
    ids = oh.make_tensor_value_info("input_ids", TP.INT64, ["batch", S])
    return g.model([ids], [out_info(["batch", S, D])]), {"input_ids": (2, S)}


def case_vit_block():
    P, D, H, F, HW = 8, 64, 4, 128, 32
    N = (HW // P) ** 2
    g = G()
    x = g.op("Conv", ["input", g.w(randw(D, 3, P, P)), g.w(randw(D, scale=0.1))], kernel_shape=[P, P], strides=[P, P])
    x = batch_reshape(g, x, [D, N])
    x = g.op("Transpose", [x], perm=[0, 2, 1])
    s = g.op("Shape", [x])
    b = g.op("Unsqueeze", [g.op("Gather", [s, g.w(np.array(0, np.int64))], axis=0), g.w(np.array([0], np.int64))])
    shp = g.op("Concat", [b, g.w(np.array([1, 1], np.int64))], axis=0)
    cls = g.op("Expand", [g.w(randw(1, 1, D, scale=0.5)), shp])
    x = g.op("Concat", [cls, x], axis=1)
    x = g.op("Add", [x, g.w(randw(1, N + 1, D, scale=0.5))])
    y = attention(g, layernorm(g, x, D), N + 1, D, H)
    x = g.op("Add", [x, y])
    h = gelu_erf(g, g.op("Add", [g.op("MatMul", [layernorm(g, x, D), g.w(randw(D, F))]), g.w(randw(F, scale=0.1))]))
    x = g.op("Add", [x, g.op("Add", [g.op("MatMul", [h, g.w(randw(F, D))]), g.w(randw(D, scale=0.1))])])
    x = layernorm(g, x, D)
    x = g.op("Gather", [x, g.w(np.array(0, np.int64))], axis=1)
    g.op("Gemm", [x, g.w(randw(10, D)), g.w(randw(10, scale=0.1))], transB=1)
    g.nodes[-1].output[0] = "output"
    return g.model([img_input(3, HW)], [out_info(["batch", 10])]), {"input": (2, 3, HW, HW)}


def case_patch_embed():
    """Patchify convolutions (kernel == stride, no padding, 3 channels), which the optimizer's patchify pass
    makes an im2col copy and one GEMM: HF ViT's 16x16/16 embed read as tokens (Reshape [B, O, L] ->
    Transpose(0, 2, 1)), and ConvNeXt's 4x4/4 stem with its channels-last LayerNorm (Transposes around
    LayerNormalization) and a depthwise conv after it."""
    g = G()
    H, W, D, C = 48, 64, 32, 16
    e = g.op("Conv", ["input", g.w(randw(D, 3, 16, 16)), g.w(randw(D, scale=0.5))], kernel_shape=[16, 16],
             strides=[16, 16])
    t = g.op("Transpose", [batch_reshape(g, e, [D, (H // 16) * (W // 16)])], perm=[0, 2, 1])
    g.nodes[-1].output[0] = "tokens"
    s = g.op("Conv", ["input", g.w(randw(C, 3, 4, 4)), g.w(randw(C, scale=0.5))], kernel_shape=[4, 4], strides=[4, 4],
             pads=[0, 0, 0, 0])
    s = g.op("Transpose", [layernorm(g, g.op("Transpose", [s], perm=[0, 2, 3, 1]), C)], perm=[0, 3, 1, 2])
    g.op("Conv", [s, g.w(randw(C, 1, 3, 3)), g.w(randw(C, scale=0.1))], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
         group=C)
    g.nodes[-1].output[0] = "stem"
    ins = [oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 3, H, W])]
    outs = [out_info(["batch", (H // 16) * (W // 16), D], "tokens"), out_info(["batch", C, H // 4, W // 4], "stem")]
    return g.model(ins, outs), {"input": (2, 3, H, W)}


def case_misc_ops():
    g = G()
    x = "input"  # [B, 6, 8, 10]
    a, b = g.op("Split", [x, g.w(np.array([2, 4], np.int64))], n_out=2, axis=1)
    a = g.op("Sigmoid", [a])
    b = g.op("Slice", [b, g.w(np.array([1, 0], np.int64)), g.w(np.array([7, 10], np.int64)),
                       g.w(np.array([2, 3], np.int64)), g.w(np.array([2, 2], np.int64))])  # [B,4,3,5]
    b = g.op("Pad", [b, g.w(np.array([0, 0, 1, 0, 0, 0, 0, 0], np.int64)), g.w(np.array(0.5, np.float32))])  # [B,4,4,5]
    b = g.op("Tanh", [b])
    a = g.op("AveragePool", [a], kernel_shape=[2, 2], strides=[2, 2])  # [B,2,4,5]
    c = g.op("Concat", [a, b], axis=1)  # [B,6,4,5]
    c = g.op("Softmax", [c], axis=1)
    r = g.op("ReduceMean", [c], axes=[2], keepdims=0)  # [B,6,5]
    r = g.op("Transpose", [r], perm=[0, 2, 1])  # [B,5,6]
    r = g.op("LeakyRelu", [r], alpha=0.2)
    m = g.op("ReduceSum", [r, g.w(np.array([-1], np.int64))], keepdims=1)  # [B,5,1]
    w = g.op("Where", [g.op("Greater", [r, g.w(np.array(0.1, np.float32))]), r, g.op("Neg", [r])])
    y = g.op("Div", [g.op("Sub", [w, m]), g.op("Add", [g.op("Sqrt", [g.op("Abs", [m])]), g.w(np.array(1.0, np.float32))])])
    y = g.op("Max", [y, g.w(np.array(-0.5, np.float32))])
    y = g.op("Mul", [g.op("HardSwish", [y]), g.op("Exp", [g.op("Pow", [y, g.w(np.array(2.0, np.float32))])])])
    g.op("MatMul", [y, g.w(randw(6, 7))])
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 6, 8, 10])
    return g.model([inp], [out_info(["batch", 5, 7])]), {"input": (3, 6, 8, 10)}


def case_gemm_variants():
    g = G()
    x = "input"  # [B, 12]
    y = g.op("Gemm", [x, g.w(randw(12, 16))], alpha=0.5)  # no C
    y = g.op("Gemm", [y, g.w(randw(8, 16)), g.w(randw(1, 8, scale=0.1))], transB=1, beta=2.0)
    y = g.op("Relu", [y])
    z = g.op("Gemm", [g.w(randw(8, 16)), y], transA=1, transB=1)  # [16, B]
    z = g.op("Transpose", [z], perm=[1, 0])  # [B, 16]
    b3 = g.op("Reshape", [z, g.w(np.array([-1, 4, 4], np.int64))])  # [B,4,4]
    bm = g.op("MatMul", [b3, g.w(randw(2, 4, 3))]) if False else g.op("MatMul", [b3, b3])  # batched square
    g.op("ReduceMax", [bm], axes=[1], keepdims=0)
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 12])
    return g.model([inp], [out_info(["batch", 4])]), {"input": (5, 12)}


def case_sdpa_export(B=2, S=16, H=4, dh=8, masked=True):
    """torch.onnx's scaled_dot_product_attention: q*sqrt(s), k^T*sqrt(s), MatMul, a boolean mask turned
    into 0/-inf by a Where placed after the MatMul, Add, Softmax, Where(IsNaN(p), 0, p), MatMul."""
    D = H * dh
    g = G()
    x = "input"  # [B, S, D]
    q = g.op("Transpose", [batch_reshape(g, g.op("MatMul", [x, g.w(randw(D, D))]), [S, H, dh])], perm=[0, 2, 1, 3])
    k = g.op("Transpose", [batch_reshape(g, g.op("MatMul", [x, g.w(randw(D, D))]), [S, H, dh])], perm=[0, 2, 1, 3])
    v = g.op("Transpose", [batch_reshape(g, g.op("MatMul", [x, g.w(randw(D, D))]), [S, H, dh])], perm=[0, 2, 1, 3])
    sc = g.w(np.array(np.sqrt(1 / np.sqrt(dh)), np.float32))
    qs = g.op("Mul", [q, sc])
    kt = g.op("Mul", [g.op("Transpose", [k], perm=[0, 1, 3, 2]), sc])
    s = g.op("MatMul", [qs, kt])
    if masked:
        keep = g.op("Greater", [g.op("ReduceSum", [x, g.w(np.array([-1], np.int64))], keepdims=0), g.w(np.array(-0.5, np.float32))])
        keep = g.op("Unsqueeze", [keep, g.w(np.array([1, 2], np.int64))])  # [B,1,1,S]
        m = g.op("Where", [keep, g.w(np.array(0.0, np.float32)), g.w(np.array(-np.inf, np.float32))])
        s = g.op("Add", [s, m])
    p = g.op("Softmax", [s], axis=-1)
    p = g.op("Where", [g.op("IsNaN", [p]), g.w(np.array(0.0, np.float32)), p])
    o = g.op("Transpose", [g.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
    batch_reshape(g, o, [S, D])
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", S, D])
    return g.model([inp], [out_info(["batch", S, D])]), {"input": (B, S, D)}


def case_levit_attention(B=2, S=49, H=4, dk=16, dv=64):
    """timm LeViT's attention: keys of head dim dk, values of dv (4x wider), scores scaled by a Mul after
    the MatMul and an attention bias [H, S, S] added before the Softmax; the output [B, S, H*dv]."""
    g = G()
    x = "input"  # [B, S, C]
    C = 64

    def heads(d):
        t = g.op("MatMul", [x, g.w(randw(C, H * d, scale=0.3))])
        return g.op("Transpose", [batch_reshape(g, t, [S, H, d])], perm=[0, 2, 1, 3])

    q, k, v = heads(dk), heads(dk), heads(dv)
    s = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
    s = g.op("Add", [g.op("Mul", [s, g.w(np.array(dk ** -0.5, np.float32))]), g.w(randw(H, S, S, scale=0.5))])
    o = g.op("MatMul", [g.op("Softmax", [s], axis=-1), v])
    batch_reshape(g, g.op("Transpose", [o], perm=[0, 2, 1, 3]), [S, H * dv])
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", S, C])
    return g.model([inp], [out_info(["batch", S, H * dv])]), {"input": (B, S, C)}


def case_torch_mha(B=2, S=17, H=2, dh=64, residual=True):
    """torchvision's nn.MultiheadAttention export (ViT): sequence-first packed QKV projection, unflatten to 3
    -> Unsqueeze/Transpose/Squeeze -> Gather 0/1/2, each [S,B,E] reshaped to [S, B*H, dh] (no strided view:
    lowered lazily), transposed, reshaped to [B,H,S,dh]; the sdpa scale as Mul by sqrt(scale) on q and k^T;
    output Transpose(2,0,1,3) -> Reshape [S*B, E] -> Gemm out-projection -> Reshape [S,B,E] -> Transpose
    [-> Add(residual): the out-projection runs over its rows in memory order, the residual in its epilogue]."""
    E = H * dh
    g = G()
    x = g.op("Transpose", ["input"], perm=[1, 0, 2])  # [S, B, E]
    qkv = g.op("Add", [g.w(randw(3 * E, scale=0.1)), g.op("MatMul", [x, g.w(randw(E, 3 * E))])])
    qkv = g.op("Reshape", [qkv, g.w(np.array([S, -1, 3, E], np.int64))])
    qkv = g.op("Unsqueeze", [qkv, g.w(np.array([0], np.int64))])
    qkv = g.op("Transpose", [qkv], perm=[3, 1, 2, 0, 4])
    qkv = g.op("Squeeze", [qkv, g.w(np.array([3], np.int64))])  # [3, S, B, E]
    heads = []
    for i in range(3):
        t = g.op("Gather", [qkv, g.w(np.array(i, np.int64))], axis=0)  # [S, B, E], strides (3BE, 3E, 1)
        t = g.op("Transpose", [g.op("Reshape", [t, g.w(np.array([S, -1, dh], np.int64))])], perm=[1, 0, 2])
        heads.append(g.op("Reshape", [t, g.w(np.array([-1, H, S, dh], np.int64))]))  # [B, H, S, dh]
    q, k, v = heads
    sc = g.w(np.array(np.sqrt(1 / np.sqrt(dh)), np.float32))
    s = g.op("MatMul", [g.op("Mul", [q, sc]), g.op("Mul", [g.op("Transpose", [k], perm=[0, 1, 3, 2]), sc])])
    o = g.op("MatMul", [g.op("Softmax", [s], axis=-1), v])
    o = g.op("Reshape", [g.op("Transpose", [o], perm=[2, 0, 1, 3]), g.w(np.array([-1, E], np.int64))])
    o = g.op("Gemm", [o, g.w(randw(E, E)), g.w(randw(E, scale=0.1))], transB=1)
    o = g.op("Reshape", [o, g.w(np.array([S, -1, E], np.int64))])
    o = g.op("Transpose", [o], perm=[1, 0, 2])
    if residual:
        g.op("Add", ["input", o])
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", S, E])
    return g.model([inp], [out_info(["batch", S, E])]), {"input": (B, S, E)}


def case_lazy_views(S=5, B=3, H=2, D=6):
    """Reshapes with no strided view, kept lazy: regrouped by Transpose/Reshape (back to a plain view, or
    split further), and copied for every other consumer -- elementwise, softmax, GEMM, a graph output --
    once per value (a Reshape of a lazy value whose shapes do not nest takes that copy too)."""
    E = H * D
    g = G()
    x = "input"  # [S, B, 3E]
    q = g.op("Slice", [x, g.w(np.array([0], np.int64)), g.w(np.array([E], np.int64)), g.w(np.array([2], np.int64))])
    k = g.op("Slice", [x, g.w(np.array([E], np.int64)), g.w(np.array([2 * E], np.int64)), g.w(np.array([2], np.int64))])
    r = g.op("Reshape", [q, g.w(np.array([S, -1, D], np.int64))])  # [S, B*H, D]: lazy
    t = g.op("Transpose", [r], perm=[1, 0, 2])  # [B*H, S, D]: lazy
    outs = [t]  # a lazy graph output
    u = g.op("Reshape", [t, g.w(np.array([-1, H, S, D], np.int64))])  # [B, H, S, D]: a plain view again
    outs.append(g.op("Softmax", [u], axis=-1))
    w = g.op("Reshape", [t, g.w(np.array([-1, H * S * D // 2, 2], np.int64))])  # splits D further: lazy
    wt = g.op("Transpose", [g.op("Identity", [w])], perm=[0, 2, 1])  # still lazy (groups permuted)
    outs.append(g.op("Sigmoid", [w]))
    outs.append(g.op("Mul", [r, g.w(np.array(2.0, np.float32))]))
    rk = g.op("Reshape", [k, g.w(np.array([S, -1, D], np.int64))])  # lazy, two non-view consumers: one copy
    outs.append(g.op("MatMul", [rk, g.w(randw(D, 5))]))
    outs.append(g.op("Relu", [rk]))
    n = g.op("Reshape", [t, g.w(np.array([B * H * S * D // 20, 20], np.int64))])  # does not nest: t's copy
    outs.append(g.op("Neg", [n]))
    outs.append(g.op("Tanh", [wt]))
    inp = oh.make_tensor_value_info("input", TP.FLOAT, [S, B, 3 * E])
    shapes = [[B * H, S, D], [B, H, S, D], [B, H * S * D // 2, 2], [S, B * H, D], [S, B * H, 5], [S, B * H, D],
              [B * H * S * D // 20, 20], [B, 2, H * S * D // 2]]
    return g.model([inp], [out_info(sh, o) for o, sh in zip(outs, shapes)]), {"input": (S, B, 3 * E)}


def case_op_coverage():
    """Every elementwise op, reduction and small op the CUDA backend lowers that no other case has (the
    --coverage check of test_gpu_lower), summed into one output. x is large enough (128 KiB a sample)
    that ConstantOfShape(Shape(x)) is not folded at run time and is lowered as a fill."""
    g = G()
    x = "input"  # [B, 4, 64, 64]
    c = lambda v: g.w(np.array(v, np.float32))
    ax = lambda *a: g.w(np.array(a, np.int64))
    one = g.op("Add", [g.op("Abs", [x]), c(1.0)])
    terms = [
        g.op("Log", [one]),
        g.op("Reciprocal", [g.op("Add", [one, c(1.0)])]),
        g.op("HardSigmoid", [x], alpha=0.3, beta=0.4),
        g.op("Gelu", [x]),
        g.op("Softplus", [x]),
        g.op("Mish", [x]),
        g.op("Dropout", [x]),
        g.op("Mod", [x, c(0.7)], fmod=1),
        g.op("Min", [x, c(0.3)]),
        g.op("PRelu", [x, g.w(randw(4, 1, 1, scale=0.5))]),
    ]
    b = g.op("And", [g.op("Less", [x, c(0.1)]), g.op("GreaterOrEqual", [x, c(-0.5)])])
    b = g.op("Or", [b, g.op("LessOrEqual", [x, c(-1.0)])])
    terms.append(g.op("Cast", [b], to=TP.FLOAT))
    shape = g.op("Shape", [x])
    terms.append(g.op("ConstantOfShape", [shape], value=nh.from_array(np.array([0.5], np.float32))))
    terms.append(g.op("Expand", [g.op("ReduceMean", [x, ax(2, 3)], keepdims=1), shape]))
    terms.append(g.op("GlobalMaxPool", [x]))
    terms.append(g.op("LogSoftmax", [x], axis=-1))
    terms.append(g.op("ReduceMin", [x, ax(3)], keepdims=1))
    terms.append(g.op("Cast", [g.op("ArgMax", [x], axis=1, keepdims=1)], to=TP.FLOAT))
    mask = g.w(np.where(np.arange(64) % 5 == 0, -1e4, 0).astype(np.float32).reshape(1, 1, 1, 64))
    terms.append(g.op("Softmax", [g.op("Add", [g.op("Mul", [x, c(0.125)]), mask])], axis=-1))  # ingot.MaskedSoftmax
    y = g.op("Sum", terms[:3])
    for t in terms[3:]:
        y = g.op("Add", [y, t])
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 4, 64, 64])
    return g.model([inp], [out_info(["batch", 4, 64, 64])], opset=20), {"input": (2, 4, 64, 64)}


def case_unary_more():
    """The elementwise ops of pointwise codes SIN and after (src/ops/pw_math.h), each on inputs inside its
    domain, summed into one output; Sign also on int64 (an int program)."""
    g = G()
    x = "input"  # [B, 4, 16, 16]
    c = lambda v: g.w(np.array(v, np.float32))
    t = g.op("Mul", [g.op("Tanh", [x]), c(0.9)])  # in (-1, 1)
    x3 = g.op("Mul", [x, c(3.0)])
    zeros = g.w(np.where(np.arange(16) % 3 == 0, 0.0, 1.0).astype(np.float32))
    terms = [
        g.op("Sin", [x]),
        g.op("Cos", [x]),
        g.op("Tan", [g.op("Mul", [x, c(0.3)])]),
        g.op("Asin", [t]),
        g.op("Acos", [t]),
        g.op("Atan", [x]),
        g.op("Sinh", [x]),
        g.op("Cosh", [x]),
        g.op("Asinh", [x]),
        g.op("Acosh", [g.op("Add", [g.op("Abs", [x]), c(1.0)])]),
        g.op("Atanh", [t]),
        g.op("Floor", [x3]),
        g.op("Ceil", [x3]),
        g.op("Round", [x3]),
        g.op("Sign", [x]),
        g.op("Elu", [x], alpha=0.7),
        g.op("Selu", [x]),
        g.op("Celu", [x], alpha=1.3),
        g.op("Softsign", [x]),
        g.op("ThresholdedRelu", [x], alpha=0.2),
        g.op("Shrink", [x], bias=0.1, lambd=0.4),
        g.op("Cast", [g.op("IsInf", [g.op("Div", [x, zeros])], detect_negative=0)], to=TP.FLOAT),
        g.op("Cast", [g.op("Sign", [g.op("Cast", [x3], to=TP.INT64)])], to=TP.FLOAT),
    ]
    y = terms[0]
    for v in terms[1:]:
        y = g.op("Add", [y, v])
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 4, 16, 16])
    return g.model([inp], [out_info(["batch", 4, 16, 16])], opset=20), {"input": (2, 4, 16, 16)}


def case_reductions(more=False):
    """Reductions over NHWC (conv outputs: columns, split over blocks at batch 1) and NCHW (rows, one long
    row split over blocks), several runs per output (axes 1 and 3), channel pooling (axis 1 of NCHW),
    integers, a strided and a broadcast input (read through a dense copy); with `more`, the other kinds."""
    g = G()
    x = "input"  # [1, 4, 64, 64]
    c = lambda v: g.w(np.array(v, np.float32))
    ax = lambda *a: g.w(np.array(a, np.int64))
    y = g.op("Relu", [conv_bn(g, x, 4, 16, 3)])  # [1, 16, 64, 64], channels-last on the GPU
    outs = [g.op("GlobalAveragePool", [y]), g.op("GlobalMaxPool", [y])]  # [1, 16, 1, 1]
    outs.append(g.op("ReduceMean", [x, ax(1, 2, 3)], keepdims=0))  # [1]: one long row
    outs.append(g.op("ReduceMin", [x, ax(1, 3)], keepdims=0))  # [1, 64]: 4 runs of 64 per output
    outs.append(g.op("ReduceMax", [x, ax(1)], keepdims=1))  # [1, 1, 64, 64]: columns of 4096
    outs.append(g.op("ReduceSum", [g.op("Transpose", [x], perm=[0, 2, 3, 1]), ax(1, 2)], keepdims=1))  # [1,1,1,4]
    pos = g.op("Cast", [g.op("Greater", [x, c(0.0)])], to=TP.INT64)
    outs.append(g.op("Cast", [g.op("ReduceSum", [pos, ax(-1)], keepdims=0)], to=TP.FLOAT))  # [1, 4, 64]
    sl = g.op("Slice", [x, ax(0), ax(64), ax(3), ax(2)])  # [1, 4, 64, 32], innermost stride 2
    outs.append(g.op("ReduceSum", [sl, ax(3)], keepdims=0))  # [1, 4, 64]
    ex = g.op("Expand", [g.op("ReduceMax", [x, ax(2)], keepdims=1), ax(1, 4, 8, 64)])  # stride 0
    outs.append(g.op("ReduceMean", [ex, ax(1, 2)], keepdims=0))  # [1, 64]
    outs.append(g.op("ReduceMean", [y, ax(0, 2, 3)], keepdims=0))  # [16]: a column sum over batch and space
    shapes = [[1, 16, 1, 1], [1, 16, 1, 1], [1], [1, 64], [1, 1, 64, 64], [1, 1, 1, 4], [1, 4, 64], [1, 4, 64],
              [1, 64], [16]]
    if more:
        outs = [g.op("ReduceL1", [y, ax(2, 3)], keepdims=1)]  # [1, 16, 1, 1]
        outs.append(g.op("ReduceL2", [x, ax(3)], keepdims=0))  # [1, 4, 64]
        outs.append(g.op("ReduceSumSquare", [x, ax(1)], keepdims=0))  # [1, 64, 64]
        outs.append(g.op("ReduceLogSum", [g.op("Abs", [x]), ax(2)], keepdims=0))  # [1, 4, 64]
        outs.append(g.op("ReduceLogSumExp", [g.op("Mul", [y, c(4.0)]), ax(2, 3)], keepdims=0))  # [1, 16]
        outs.append(g.op("ReduceProd", [g.op("Add", [x, c(1.5)]), ax(1)], keepdims=0))  # [1, 64, 64]
        outs.append(g.op("Cast", [g.op("ArgMin", [x], axis=2, keepdims=0)], to=TP.FLOAT))  # [1, 4, 64]
        shapes = [[1, 16, 1, 1], [1, 4, 64], [1, 64, 64], [1, 4, 64], [1, 16], [1, 64, 64], [1, 4, 64]]
    for i, o in enumerate(outs):
        g.nodes[[n.output[0] for n in g.nodes].index(o)].output[0] = f"out{i}"
        for n in g.nodes:
            n.input[:] = [f"out{i}" if v == o else v for v in n.input]
    inp = oh.make_tensor_value_info("input", TP.FLOAT, [1, 4, 64, 64])
    return g.model([inp], [out_info(sh, f"out{i}") for i, sh in enumerate(shapes)], opset=18), {"input": (1, 4, 64, 64)}


def case_dwconv_more():
    """Depthwise convolutions of the common shapes beyond MobileNet's 3x3: ConvNeXt's 7x7 (stride 1,
    bias), 5x5 stride 2 (EfficientNet), 3x3 stride 2 with ReLU, on widths that end strips of 4 pixels
    part-way (20 -> 10 -> 5)."""
    g = G()
    c = 16
    x = conv_bn(g, "input", c, c, 7, group=c, bias=True, bn=False)  # [B,16,20,20]
    x = conv_bn(g, x, c, c, 5, stride=2, group=c)                     # [B,16,10,10]
    x = g.op("Relu", [conv_bn(g, x, c, c, 3, stride=2, group=c)])     # [B,16,5,5]
    g.op("Conv", [x, g.w(randw(8, c, 1, 1))], kernel_shape=[1, 1])
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", c, 20, 20])
    return g.model([inp], [out_info(["batch", 8, 5, 5])]), {"input": (2, c, 20, 20)}


# ---- pooling and depthwise convolution over every layout the kernels vectorise ----------------------

POOLS = (  # (op, attrs): the common windows, and the odd ones (dilation, count_include_pad, ceil_mode)
    ("MaxPool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),                                # inception
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),                # ResNet stem
    ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)),
    ("MaxPool", dict(kernel_shape=[3, 3], pads=[2, 2, 2, 2], dilations=[2, 2])),
    ("MaxPool", dict(kernel_shape=[5, 5], pads=[2, 2, 2, 2])),                                # YOLO SPPF
    ("AveragePool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0)),       # poolformer
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1], count_include_pad=1,
                         ceil_mode=1)),  # the padding counted is the end's (1), not the begin's (0)
)


def case_pool_layouts(c, h, w):
    """Each of POOLS over the input as given (NCHW) and over a 1x1 convolution's output (channels-last
    on the GPU): C = c channels picks the vector width (8, 4, 2 or 1 elements), odd sizes end the strips
    of the NCHW kernel part-way."""
    g = G()
    xs = ["input", conv_bn(g, "input", c, c, 1, bias=True, bn=False)]
    outs = [g.op(op, [x], **attrs) for x in xs for op, attrs in POOLS]
    name_outputs(g, outs)
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", c, h, w])
    m = g.model([inp], [out_info(["batch", c, f"h{i}", f"w{i}"], f"out{i}") for i in range(len(outs))])
    return m, {"input": (2, c, h, w)}


def case_inception_block():
    """torchvision GoogLeNet's inception block: four branches concatenated; the next block's MaxPool
    3x3 stride 1 branch reads that Concat's output (googlenet spends 40% of its time in such pools)."""
    g = G()

    def cbr(x, cin, cout, k):
        return g.op("Relu", [conv_bn(g, x, cin, cout, k)])

    def inception(x, cin, c1, c3r, c3, c5r, c5, cp):
        b1 = cbr(x, cin, c1, 1)
        b2 = cbr(cbr(x, cin, c3r, 1), c3r, c3, 3)
        b3 = cbr(cbr(x, cin, c5r, 1), c5r, c5, 3)
        b4 = cbr(g.op("MaxPool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1), cin, cp, 1)
        return g.op("Concat", [b1, b2, b3, b4], axis=1), c1 + c3 + c5 + cp

    x = cbr("input", 3, 24, 3)
    x, c = inception(x, 24, 8, 6, 12, 4, 6, 6)     # 32 channels
    x, c = inception(x, c, 10, 8, 12, 4, 6, 8)     # 36 channels: C % 8 != 0
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    x, c = inception(x, c, 8, 8, 16, 4, 8, 8)      # 40 channels
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 3, 15, 15])
    return g.model([inp], [out_info(["batch", c, 7, 7])]), {"input": (2, 3, 15, 15)}


def case_mixed_concat():
    """Concats whose inputs are written in place (src/cuda/lower_movement.c, ig__lw_concat_slot), as
    MixNet, GhostNet and SqueezeNet build them: a channel Split into 1x1 convolutions (GEMMs reading and
    writing channel slices), depthwise convolutions of mixed kernel sizes, a MaxPool, a pointwise node,
    a Concat inside a Concat; odd channel counts put slices at unaligned offsets. Copied: a cuDNN
    convolution's output, an input with other readers, the graph input. max_ew_steps fails the lowering
    check when a copy comes back."""
    g = G()

    def chan(c, base):
        return g.w((base + 0.2 * randw(c, scale=1)).reshape(1, c, 1, 1).astype(np.float32))

    x = g.op("Relu", [conv_bn(g, "input", 3, 14, 3)])                                  # [B, 14, 12, 12]
    a, b = g.op("Split", [x, g.w(np.array([7, 7], np.int64))], n_out=2, axis=1)
    pw = g.op("Concat", [conv_bn(g, a, 7, 13, 1, bn=False), conv_bn(g, b, 7, 11, 1, bn=False)], axis=1)
    y = g.op("Relu", [g.op("Add", [g.op("Mul", [pw, chan(24, 1)]), chan(24, 0)])])     # 24 channels
    c0, c1 = g.op("Split", [y, g.w(np.array([10, 14], np.int64))], n_out=2, axis=1)
    mix = g.op("Concat", [conv_bn(g, c0, 10, 10, 3, group=10, bn=False),
                          conv_bn(g, c1, 14, 14, 5, group=14, bn=False)], axis=1)
    z = g.op("Relu", [mix])
    e1 = g.op("Relu", [conv_bn(g, z, 24, 9, 1, bias=True, bn=False)])
    e3 = g.op("Relu", [conv_bn(g, z, 24, 8, 3, bias=True, bn=False)])
    inner = g.op("Concat", [e1, e3], axis=1)                                            # 17
    p = g.op("MaxPool", [z], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    outer = g.op("Concat", [inner, p, g.op("Sigmoid", [z])], axis=1)                   # 65
    q = conv_bn(g, outer, 65, 6, 1, bn=False)
    g.op("Concat", [q, g.op("Mul", [q, q]), g.op("Relu", [q]), "input"], axis=1)        # 21
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 3, 12, 12])
    return g.model([inp], [out_info(["batch", 21, 12, 12])]), {"input": (2, 3, 12, 12)}, {"max_ew_steps": 11}


def case_dense_block():
    """torchvision DenseNet's dense block: layer i concatenates every feature map so far (the first a
    MaxPool's output, then each layer's growth of 6 channels: slices at unaligned offsets), BatchNorm and
    Relu on the Concat (not foldable), a 1x1 and a 3x3 convolution; the transition's BN/Relu/AvgPool on the
    last Concat. Each Concat is a prefix of the last (src/cuda/lower_movement.c, concat_home), so no
    input is copied more than once: max_ew_steps fails the lowering check when the copies per Concat come
    back (DenseNet-121 lowered 661 elementwise steps, most of them such copies)."""
    g = G()
    x = g.op("Relu", [conv_bn(g, "input", 3, 16, 3)])
    feats, c = [g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])], 16  # [B,16,8,8]
    for _ in range(5):
        cat = g.op("Concat", list(feats), axis=1)
        y = g.op("Relu", [g.op("BatchNormalization", [cat, g.w(1 + 0.1 * randw(c, scale=1)),
                                                      g.w(0.1 * randw(c, scale=1)), g.w(0.1 * randw(c, scale=1)),
                                                      g.w(np.abs(1 + 0.1 * randw(c, scale=1)))], epsilon=1e-5)])
        y = g.op("Relu", [conv_bn(g, y, c, 24, 1)])
        feats.append(conv_bn(g, y, 24, 6, 3, bn=False))
        c += 6
    cat = g.op("Concat", list(feats), axis=1)                                          # 46 channels
    y = g.op("Relu", [g.op("BatchNormalization", [cat, g.w(1 + 0.1 * randw(c, scale=1)),
                                                  g.w(0.1 * randw(c, scale=1)), g.w(0.1 * randw(c, scale=1)),
                                                  g.w(np.abs(1 + 0.1 * randw(c, scale=1)))], epsilon=1e-5)])
    g.op("AveragePool", [conv_bn(g, y, c, 24, 1, bn=False)], kernel_shape=[2, 2], strides=[2, 2])
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 3, 16, 16])
    return g.model([inp], [out_info(["batch", 24, 4, 4])]), {"input": (2, 3, 16, 16)}, {"max_ew_steps": 13}


def case_conv_pool_paths():
    """Every lowering of a FusedConv with a max pool fused (conv_pool): the stem kernel's pooled form or
    cuDNN + the pool in one step (a 7x7/2 stem on 3 channels, 56x56 input: bands of several pooled rows);
    a 3x3 conv on 16 channels with the pool in its cuDNN step; a 1x1 conv as a GEMM, a depthwise conv
    (ceil_mode), and a conv whose SiLU epilogue is a step of its own, each followed by a pool step.
    The outputs are summed over space so that one tensor checks them all."""
    g = G()
    s = g.op("Relu", [conv_bn(g, "input", 3, 16, 7, stride=2, pad=3)])                       # [B,16,28,28]
    s = g.op("MaxPool", [s], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])          # [B,16,14,14]
    a = g.op("Relu", [conv_bn(g, s, 16, 16, 3)])
    a = g.op("MaxPool", [a], kernel_shape=[2, 2], strides=[2, 2])                             # [B,16,7,7]
    b = g.op("Relu", [conv_bn(g, s, 16, 24, 1)])
    b = g.op("MaxPool", [b], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])          # [B,24,7,7]
    d = g.op("Clip", [conv_bn(g, s, 16, 16, 3, group=16), g.w(np.float32(0)), g.w(np.float32(6))])
    d = g.op("MaxPool", [d], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)                # [B,16,7,7]
    e = conv_bn(g, s, 16, 8, 3)
    e = g.op("Mul", [e, g.op("Sigmoid", [e])])
    e = g.op("MaxPool", [e], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])          # [B,8,7,7]
    y = g.op("Concat", [a, b, d, e], axis=1)                                                  # [B,64,7,7]
    g.op("GlobalAveragePool", [y])
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 3, 56, 56])
    return g.model([inp], [out_info(["batch", 64, 1, 1])]), {"input": (2, 3, 56, 56)}


def case_poolformer_block(c=36):
    """timm poolformer's token mixer, x + ls * (AvgPool3x3(n) - n), n = GroupNorm(1 group) of x as torch
    exports it (Reshape to [B, 1, -1], InstanceNormalization, Reshape back, Mul, Add), over a patch
    embedding's channels-last output, then its MLP."""
    g = G()
    x = conv_bn(g, "input", 3, c, 3, stride=2, bias=True, bn=False)  # [B, c, 10, 10]
    n = g.op("Reshape", [x, g.w(np.array([0, 1, -1], np.int64))])
    n = g.op("InstanceNormalization", [n, g.w(np.ones(1, np.float32)), g.w(np.zeros(1, np.float32))], epsilon=1e-5)
    n = g.op("Reshape", [n, g.op("Shape", [x])])
    n = g.op("Add", [g.op("Mul", [n, g.w(1 + 0.2 * randw(c, 1, 1, scale=1))]), g.w(0.1 * randw(c, 1, 1, scale=1))])
    t = g.op("Sub", [g.op("AveragePool", [n], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0), n])
    x = g.op("Add", [x, g.op("Mul", [t, g.w(0.5 + randw(c, 1, 1, scale=0.2))])])
    y = g.op("Relu", [conv_bn(g, x, c, 2 * c, 1, bias=True, bn=False)])
    g.op("Add", [x, conv_bn(g, y, 2 * c, c, 1, bias=True, bn=False)])
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 3, 20, 20])
    return g.model([inp], [out_info(["batch", c, 10, 10])]), {"input": (2, 3, 20, 20)}


def case_dwconv_layouts():
    """Depthwise 3x3 and 5x5 convolutions at stride 1 and 2 on ghostnet's channel counts (36, 60, 100:
    C % 8 == 4; 6: C % 4 == 2; 7: odd), channels-last, some ghost modules' cheap operation writing into
    its Concat (the output view starts part-way into a pixel: 8-byte, not 16-byte, aligned)."""
    g = G()
    outs, shapes = [], []
    for c, k, s, act in ((36, 3, 1, "Relu"), (60, 3, 2, None), (100, 5, 1, None), (6, 5, 2, "Relu"),
                         (7, 3, 1, None), (36, 5, 2, None), (60, 5, 1, "Relu"), (100, 3, 2, None)):
        x = g.op("Relu", [conv_bn(g, "input", 8, c, 1)])                 # primary conv, channels-last
        y = conv_bn(g, x, c, c, k, stride=s, group=c)                    # cheap operation
        y = g.op(act, [y]) if act else y
        if s == 1:  # a ghost module: [primary, cheap] concatenated, the cheap half written in place
            y = g.op("Concat", [x, y], axis=1)
        outs.append(y)
        shapes.append(["batch", c * (2 if s == 1 else 1), (13 - 1) // s + 1, (13 - 1) // s + 1])
    name_outputs(g, outs)
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 8, 13, 13])
    return g.model([inp], [out_info(sh, f"out{i}") for i, sh in enumerate(shapes)]), {"input": (2, 8, 13, 13)}


def case_softmax_axes():
    """Softmax over a middle axis: CoaT's factorized attention over the 700 tokens of [B, 4, 700, 8] (few
    long lines: one block per line group), and LogSoftmax over axis 1 of the same tensor (many short
    lines), scaled so the rows are far from uniform."""
    g = G()
    x = g.op("Mul", ["input", g.w(np.array(3.0, np.float32))])
    g.op("Softmax", [x], axis=2)
    g.nodes[-1].output[0] = "out0"
    g.op("LogSoftmax", [x], axis=1)
    g.nodes[-1].output[0] = "out1"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 4, 700, 8])
    return g.model([inp], [out_info(["batch", 4, 700, 8], "out0"), out_info(["batch", 4, 700, 8], "out1")]), \
        {"input": (2, 4, 700, 8)}


def case_masked_softmax_rank5():
    """Window attention's rank-5 scores [B, windows, heads, S, S]: a bias [windows, heads, S, S] (the
    leading dims merge into 2 row dims), MaxViT-like masks whose broadcasting does not merge into 3 row dims
    ([2, 1, 4, 1, 6]: added first), and a scaled rank-5 softmax with no mask."""
    g = G()
    m1 = g.w((np.random.RandomState(7).randn(3, 4, 5, 6) * 2).astype(np.float32))
    m2 = g.w((np.random.RandomState(8).randn(2, 1, 4, 1, 6) * 2).astype(np.float32))
    x = g.op("Mul", ["input", g.w(np.array(0.5, np.float32))])
    g.op("Softmax", [g.op("Add", [x, m1])], axis=-1)
    g.nodes[-1].output[0] = "out0"
    g.op("Softmax", [g.op("Add", [m2, "input"])], axis=-1)
    g.nodes[-1].output[0] = "out1"
    g.op("Softmax", [x], axis=-1)
    g.nodes[-1].output[0] = "out2"
    shape = [2, 3, 4, 5, 6]
    inp = oh.make_tensor_value_info("input", TP.FLOAT, shape)
    return g.model([inp], [out_info(shape, f"out{k}") for k in range(3)]), {"input": tuple(shape)}


def case_reduce_big():
    """A mean over every element of [1, 4, 192, 192] (one row split over many blocks) and an NCHW global
    average pool with rows of 36864 (blocks of 1024 threads)."""
    g = G()
    a = g.op("ReduceMean", ["input"], keepdims=0)
    g.nodes[-1].output[0] = "out0"
    g.op("GlobalAveragePool", ["input"])
    g.nodes[-1].output[0] = "out1"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, [1, 4, 192, 192])
    return g.model([inp], [out_info([], "out0"), out_info([1, 4, 1, 1], "out1")]), {"input": (1, 4, 192, 192)}


def case_resize():
    """Resize in the modes exporters emit: nearest (asymmetric/floor as torch writes it, round_prefer_ceil,
    ceil, tf_half_pixel_for_nn, downsampling), linear (half_pixel from sizes, pytorch_half_pixel,
    align_corners, asymmetric, half_pixel_symmetric), cubic (-0.75; -0.5 with exclude_outside), on NCHW
    inputs and on a convolution's channels-last output (into graph outputs, written channels-first, and
    into a convolution, channels-last), 1-D over [N, C, L], 'axes', int32 nearest."""
    g = G()
    x = "input"  # [2, 3, 10, 12]
    f = lambda *v: g.w(np.array(v, np.float32))
    i = lambda *v: g.w(np.array(v, np.int64))
    e = ""
    outs = [
        g.op("Resize", [x, e, f(1, 1, 2, 2)], mode="nearest", coordinate_transformation_mode="asymmetric",
             nearest_mode="floor"),
        g.op("Resize", [x, e, f(1, 1, 1.5, 0.5)], mode="nearest", nearest_mode="round_prefer_ceil"),
        g.op("Resize", [x, e, f(1, 1, 0.6, 1.75)], mode="nearest", nearest_mode="ceil",
             coordinate_transformation_mode="tf_half_pixel_for_nn"),
        g.op("Resize", [x, e, e, i(2, 3, 17, 9)], mode="linear"),
        g.op("Resize", [x, e, f(1, 1, 2, 1.5)], mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
        g.op("Resize", [x, e, e, i(2, 3, 20, 5)], mode="linear", coordinate_transformation_mode="align_corners"),
        g.op("Resize", [x, e, f(1, 1, 0.5, 0.5)], mode="linear", coordinate_transformation_mode="asymmetric"),
        g.op("Resize", [x, e, f(1, 1, 1.7, 1.3)], mode="linear", coordinate_transformation_mode="half_pixel_symmetric"),
        g.op("Resize", [x, e, f(1, 1, 2, 2)], mode="cubic"),
        g.op("Resize", [x, e, e, i(2, 3, 7, 25)], mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1),
    ]
    y = g.op("Relu", [conv_bn(g, x, 3, 16, 3)])  # [2, 16, 10, 12], channels-last on the GPU
    outs.append(g.op("Resize", [y, e, f(1, 1, 2, 2)], mode="linear"))
    # read by a convolution, a resize of channels-last stays channels-last; into a graph output (the
    # other two), it is written channels-first
    outs.append(conv_bn(g, g.op("Resize", [y, e, f(1, 1, 2, 2)], mode="nearest"), 16, 4, 3))
    outs.append(g.op("Resize", [y, e, e, i(2, 16, 5, 30)], mode="cubic", coordinate_transformation_mode="align_corners"))
    l1 = g.op("Reshape", [x, i(2, 3, 120)])
    outs.append(g.op("Resize", [l1, e, f(1, 1, 1.5)], mode="linear", coordinate_transformation_mode="align_corners"))
    outs.append(g.op("Resize", [x, e, f(3, 2)], mode="linear", axes=[2, 3]))
    xi = g.op("Cast", [g.op("Mul", [x, f(10.0)])], to=TP.INT32)
    outs.append(g.op("Cast", [g.op("Resize", [xi, e, f(1, 1, 3, 3)], mode="nearest")], to=TP.FLOAT))
    shapes = [[2, 3, 20, 24], [2, 3, 15, 6], [2, 3, 6, 21], [2, 3, 17, 9], [2, 3, 20, 18], [2, 3, 20, 5],
              [2, 3, 5, 6], [2, 3, 17, 15], [2, 3, 20, 24], [2, 3, 7, 25], [2, 16, 20, 24], [2, 4, 20, 24],
              [2, 16, 5, 30], [2, 3, 180], [2, 3, 30, 24], [2, 3, 30, 36]]
    for k, o in enumerate(outs):
        for n in g.nodes:
            n.output[:] = [f"out{k}" if v == o else v for v in n.output]
            n.input[:] = [f"out{k}" if v == o else v for v in n.input]
    inp = oh.make_tensor_value_info("input", TP.FLOAT, [2, 3, 10, 12])
    return g.model([inp], [out_info(sh, f"out{k}") for k, sh in enumerate(shapes)], opset=18), {"input": (2, 3, 10, 12)}


def case_resize_rows():
    """Resize along the innermost axis only (the inner-axis kernel with no outer taps): rows of 720
    values upsampled to 1440, rows of 60 to 1081 in cubic (an odd width), rows of 4320 to 8640 (long
    rows; a staged kernel, 2dece61, held at most 4096 values a row)."""
    g = G()
    f = lambda *v: g.w(np.array(v, np.float32))
    i = lambda *v: g.w(np.array(v, np.int64))
    e = ""
    rows = g.op("Reshape", ["input", i(2, 3, 720)])
    g.op("Resize", [rows, e, f(1, 1, 2)], mode="linear")
    g.nodes[-1].output[0] = "out0"
    g.op("Resize", ["input", e, e, i(2, 3, 12, 1081)], mode="cubic", coordinate_transformation_mode="align_corners")
    g.nodes[-1].output[0] = "out1"
    g.op("Resize", [g.op("Tile", [rows, i(1, 1, 6)]), e, f(1, 1, 2)], mode="linear")
    g.nodes[-1].output[0] = "out2"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, [2, 3, 12, 60])
    shapes = [[2, 3, 1440], [2, 3, 12, 1081], [2, 3, 8640]]
    return g.model([inp], [out_info(sh, f"out{k}") for k, sh in enumerate(shapes)], opset=18), {"input": (2, 3, 12, 60)}


def case_upsample():
    """The deprecated Upsample (opset 9: scales as an input), nearest and linear."""
    g = G()
    g.op("Upsample", ["input", g.w(np.array([1, 1, 2, 3], np.float32))], mode="nearest")
    g.nodes[-1].output[0] = "out0"
    g.op("Upsample", ["input", g.w(np.array([1, 1, 1.5, 2.5], np.float32))], mode="linear")
    g.nodes[-1].output[0] = "out1"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, [2, 3, 6, 8])
    g2 = oh.make_graph(g.nodes, "g", [inp], [out_info([2, 3, 12, 24], "out0"), out_info([2, 3, 9, 20], "out1")],
                       g.inits)
    m = oh.make_model(g2, opset_imports=[oh.make_opsetid("", 9)])
    m.ir_version = 8
    return m, {"input": (2, 3, 6, 8)}


def case_instance_norm():
    """InstanceNormalization over NCHW (rank 4 and 3, channels split over blocks at batch 1) and over a
    convolution's channels-last output, with a mean far from zero (the statistics must not cancel)."""
    g = G()
    x = "input"  # [1, 6, 48, 40]
    outs = [g.op("InstanceNormalization", [g.op("Add", [x, g.w(np.array(30.0, np.float32))]),
                                           g.w(1 + 0.2 * randw(6, scale=1)), g.w(0.1 * randw(6, scale=1))],
                 epsilon=1e-3)]
    outs.append(g.op("InstanceNormalization", [g.op("Reshape", [x, g.w(np.array([1, 12, 960], np.int64))]),
                                               g.w(randw(12, scale=1)), g.w(randw(12, scale=1))]))
    y = conv_bn(g, x, 6, 16, 3)  # channels-last on the GPU
    outs.append(g.op("InstanceNormalization", [y, g.w(randw(16, scale=1)), g.w(randw(16, scale=1))]))
    shapes = [[1, 6, 48, 40], [1, 12, 960], [1, 16, 48, 40]]
    for k, o in enumerate(outs):
        for n in g.nodes:
            n.output[:] = [f"out{k}" if v == o else v for v in n.output]
    inp = oh.make_tensor_value_info("input", TP.FLOAT, [1, 6, 48, 40])
    return g.model([inp], [out_info(sh, f"out{k}") for k, sh in enumerate(shapes)]), {"input": (1, 6, 48, 40)}


def case_index_ops():
    """GatherElements, GatherND (batch_dims 0 and 1), ScatterElements, the opset-9 Scatter, ScatterND (Swin's
    mask writes), CumSum (exclusive, reverse, int64), Trilu (upper and lower, k), Tile, DepthToSpace (DCR,
    CRD) and SpaceToDepth, on NCHW inputs and on a convolution's channels-last output."""
    g = G()
    x = "input"  # [2, 4, 6, 8]
    i64 = lambda a: g.w(np.array(a, np.int64))
    gi = rng.integers(-6, 6, size=(2, 4, 3, 8)).astype(np.int64)
    outs = [g.op("GatherElements", [x, i64(gi)], axis=2)]  # [2, 4, 3, 8]
    outs.append(g.op("GatherND", [x, i64([[[0, 1], [1, 3]], [[1, 0], [0, 2]]])]))  # [2, 2, 6, 8]
    outs.append(g.op("GatherND", [x, i64([[[1, 2]], [[3, 0]]])], batch_dims=1))  # [2, 1, 8]
    si = np.stack([rng.permutation(8)[:5] for _ in range(2 * 4 * 6)]).reshape(2, 4, 6, 5).astype(np.int64)
    outs.append(g.op("ScatterElements", [x, i64(si), g.op("Slice", [x, i64([0]), i64([5]), i64([3])])], axis=3))
    upd = g.op("Neg", [g.op("Slice", [x, i64([0, 0]), i64([1, 2]), i64([0, 1])])])  # [1, 2, 6, 8]
    outs.append(g.op("ScatterND", [x, i64([[[1, 2], [0, 3]]]), upd]))  # [2, 4, 6, 8]
    outs.append(g.op("CumSum", [x, i64(2)]))
    outs.append(g.op("CumSum", [x, i64(-1)], exclusive=1, reverse=1))
    ci = g.op("Cast", [g.op("Mul", [x, g.w(np.array(10.0, np.float32))])], to=TP.INT64)
    outs.append(g.op("Cast", [g.op("CumSum", [ci, i64(1)])], to=TP.FLOAT))
    outs.append(g.op("Trilu", [x, i64(1)], upper=1))
    outs.append(g.op("Trilu", [x, i64(-2)], upper=0))
    outs.append(g.op("Tile", [x, i64([1, 2, 1, 3])]))  # [2, 8, 6, 24]
    y = conv_bn(g, x, 4, 8, 3)  # [2, 8, 6, 8], channels-last on the GPU
    outs.append(g.op("DepthToSpace", [y], blocksize=2, mode="DCR"))  # [2, 2, 12, 16]
    outs.append(g.op("DepthToSpace", [y], blocksize=2, mode="CRD"))
    outs.append(g.op("SpaceToDepth", [y], blocksize=2))  # [2, 32, 3, 4]
    outs.append(g.op("Tile", [y, i64([2, 1, 1, 2])]))  # [4, 8, 6, 16]
    shapes = [[2, 4, 3, 8], [2, 2, 6, 8], [2, 1, 8], [2, 4, 6, 8], [2, 4, 6, 8], [2, 4, 6, 8], [2, 4, 6, 8],
              [2, 4, 6, 8], [2, 4, 6, 8], [2, 4, 6, 8], [2, 8, 6, 24], [2, 2, 12, 16], [2, 2, 12, 16], [2, 32, 3, 4],
              [4, 8, 6, 16]]
    for k, o in enumerate(outs):
        for n in g.nodes:
            n.output[:] = [f"out{k}" if v == o else v for v in n.output]
            n.input[:] = [f"out{k}" if v == o else v for v in n.input]
    inp = oh.make_tensor_value_info("input", TP.FLOAT, [2, 4, 6, 8])
    return g.model([inp], [out_info(sh, f"out{k}") for k, sh in enumerate(shapes)], opset=18), {"input": (2, 4, 6, 8)}


def case_deberta_gather(B=2, S=24, E=16):
    """DeBERTa's relative-position gathers: c2p scores [B, S, 2S] gathered along the keys by one [1, S, S]
    table of positions Expand-ed over the batch (read through stride 0, never copied), and p2c the same
    over a transposed view of the scores (data read through its strides)."""
    g = G()
    x = "input"  # [B, S, E]
    c2p = g.op("MatMul", [x, g.w(randw(E, 2 * S, scale=0.5))])  # [B, S, 2S]
    pos = np.clip(np.arange(S)[None, :] - np.arange(S)[:, None] + S, 0, 2 * S - 1)  # [S, S] in [0, 2S)
    b = g.op("Slice", [g.op("Shape", [x]), g.w(np.array([0], np.int64)), g.w(np.array([1], np.int64))])
    shape = g.op("Concat", [b, g.w(np.array([S, S], np.int64))], axis=0)
    idx = g.op("Expand", [g.w(pos[None].astype(np.int64)), shape])  # [B, S, S]
    o1 = g.op("GatherElements", [c2p, idx], axis=2)
    p2c = g.op("Transpose", [c2p], perm=[0, 2, 1])  # [B, 2S, S]
    o2 = g.op("GatherElements", [p2c, idx], axis=1)  # [B, S, S]
    g.op("Add", [o1, o2])
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", S, E])
    return g.model([inp], [out_info(["batch", S, S])]), {"input": (B, S, E)}


def case_scatter9():
    """Scatter, ScatterElements' opset-9 name."""
    g = G()
    si = np.stack([rng.permutation(5)[:3] for _ in range(4)]).astype(np.int64)
    g.op("Scatter", ["input", g.w(si), g.w(randw(4, 3, scale=1))], axis=1)
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, [4, 5])
    g2 = oh.make_graph(g.nodes, "g", [inp], [out_info([4, 5])], g.inits)
    m = oh.make_model(g2, opset_imports=[oh.make_opsetid("", 9)])
    m.ir_version = 8
    return m, {"input": (4, 5)}


def case_einsum():
    """Einsum as one GEMM: attention's "bhqd,bhkd->bhqk" and "bhqk,bhkd->bhqd", a linear layer "bsd,ed->bse",
    a contraction over two letters with the output transposed, and operands whose merged dims do not nest."""
    g = G()
    q, k = "q", "k"  # [2, 3, 5, 4], [2, 3, 6, 4]
    s = g.op("Einsum", [q, k], equation="bhqd,bhkd->bhqk")  # [2, 3, 5, 6]
    o = g.op("Einsum", [s, g.op("Transpose", [k], perm=[0, 1, 2, 3])], equation="bhqk,bhkd->bhqd")  # [2, 3, 5, 4]
    lin = g.op("Einsum", [g.op("Reshape", [q, g.w(np.array([2, 15, 4], np.int64))]), g.w(randw(7, 4))],
               equation="bsd,ed->bse")  # [2, 15, 7]
    two = g.op("Einsum", [q, g.w(randw(3, 4, 5))], equation="bhqd,hde->eqb")  # [5, 5, 2]
    nn = g.op("Einsum", [g.op("Transpose", [q], perm=[0, 2, 1, 3]), k], equation="bqhd,bhkd->bkq")  # [2, 6, 5]
    outs, shapes = [s, o, lin, two, nn], [[2, 3, 5, 6], [2, 3, 5, 4], [2, 15, 7], [5, 5, 2], [2, 6, 5]]
    for j, v in enumerate(outs):
        for n in g.nodes:
            n.output[:] = [f"out{j}" if w == v else w for w in n.output]
            n.input[:] = [f"out{j}" if w == v else w for w in n.input]
    ins = [oh.make_tensor_value_info("q", TP.FLOAT, [2, 3, 5, 4]), oh.make_tensor_value_info("k", TP.FLOAT, [2, 3, 6, 4])]
    return g.model(ins, [out_info(sh, f"out{j}") for j, sh in enumerate(shapes)]), {"q": (2, 3, 5, 4), "k": (2, 3, 6, 4)}


def case_group_norm(opset=21):
    """GroupNormalization over NCHW and a convolution's channels-last output (scale and bias per channel
    from opset 21, per group before)."""
    g = G()
    per = 4 if opset < 21 else 16
    y = conv_bn(g, "input", 6, 16, 3)  # [1, 16, 20, 24], channels-last on the GPU
    g.op("GroupNormalization", [y, g.w(1 + 0.2 * randw(per, scale=1)), g.w(0.1 * randw(per, scale=1))],
         num_groups=4, epsilon=1e-4)
    g.nodes[-1].output[0] = "out0"
    per = 3 if opset < 21 else 6
    g.op("GroupNormalization", ["input", g.w(randw(per, scale=1)), g.w(randw(per, scale=1))], num_groups=3)
    g.nodes[-1].output[0] = "out1"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, [1, 6, 20, 24])
    return g.model([inp], [out_info([1, 16, 20, 24], "out0"), out_info([1, 6, 20, 24], "out1")], opset=opset), \
        {"input": (1, 6, 20, 24)}


def timm_group_norm(g, x, c, groups, shape_of=True, affine=True):
    """GroupNorm as torch exports it before opset 18: Reshape [0, G, -1], InstanceNormalization with ones and
    zeros, Reshape back (to Shape(x), or to a constant), Mul gamma [C, 1, 1], Add beta [C, 1, 1]."""
    r = g.op("Reshape", [x, g.w(np.array([0, groups, -1], np.int64))])
    i = g.op("InstanceNormalization", [r, g.w(np.ones(groups, np.float32)), g.w(np.zeros(groups, np.float32))],
             epsilon=1e-5)
    back = g.op("Shape", [x]) if shape_of else g.w(np.array([0, c, 28, 28], np.int64))
    y = g.op("Reshape", [i, back])
    if not affine:
        return y
    y = g.op("Mul", [y, g.w(1 + 0.2 * randw(c, 1, 1, scale=1))])
    return g.op("Add", [y, g.w(0.5 * randw(c, 1, 1, scale=1))])


def channel_offset(g, x, c):
    """x plus a large per-channel offset: GroupNorm's statistics must not cancel (the shift)."""
    return g.op("Add", [x, g.w((30 + 10 * randw(1, c, 1, 1, scale=1)).astype(np.float32))])


def case_timm_group_norm():
    """The timm/torch GroupNorm export (optimizer: one ingot.GroupNorm) on a convolution's channels-last output
    at C = 64, G = 32 (16-byte path) and C = 12, G = 4 (C % 8 != 0: scalar kernels), and on the NCHW input
    without the affine tail; InstanceNormalization on channels-last C = 64 (G = C). Large per-channel offsets."""
    g = G()
    x = "input"  # [batch, 64, 28, 28]
    y = channel_offset(g, conv_bn(g, x, 64, 64, 1), 64)  # channels-last on the GPU
    outs = [g.op("Relu", [timm_group_norm(g, y, 64, 32)])]
    z = channel_offset(g, conv_bn(g, x, 64, 12, 1), 12)
    outs.append(timm_group_norm(g, z, 12, 4))
    outs.append(timm_group_norm(g, channel_offset(g, x, 64), 64, 32, shape_of=False, affine=False))
    outs.append(g.op("InstanceNormalization", [y, g.w(1 + 0.2 * randw(64, scale=1)), g.w(randw(64, scale=1))]))
    name_outputs(g, outs)
    shapes = [["batch", 64, 28, 28], ["batch", 12, 28, 28], ["batch", 64, 28, 28], ["batch", 64, 28, 28]]
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 64, 28, 28])
    return g.model([inp], [out_info(sh, f"out{k}") for k, sh in enumerate(shapes)]), {"input": (2, 64, 28, 28)}


def case_group_norm21_offset():
    """GroupNormalization (opset 21, per-channel scale and bias) with large per-channel offsets: channels-last
    C = 64, G = 32 and C = 12, G = 3; NCHW C = 64, G = 8."""
    g = G()
    x = "input"  # [2, 64, 28, 28]
    outs = []
    for c, groups in ((64, 32), (12, 3)):
        y = channel_offset(g, conv_bn(g, x, 64, c, 1), c)
        outs.append(g.op("GroupNormalization", [y, g.w(1 + 0.2 * randw(c, scale=1)), g.w(randw(c, scale=1))],
                         num_groups=groups, epsilon=1e-5))
    outs.append(g.op("GroupNormalization", [channel_offset(g, x, 64), g.w(1 + 0.2 * randw(64, scale=1)),
                                            g.w(randw(64, scale=1))], num_groups=8))
    name_outputs(g, outs)
    shapes = [[2, 64, 28, 28], [2, 12, 28, 28], [2, 64, 28, 28]]
    inp = oh.make_tensor_value_info("input", TP.FLOAT, [2, 64, 28, 28])
    return g.model([inp], [out_info(sh, f"out{k}") for k, sh in enumerate(shapes)], opset=21), \
        {"input": (2, 64, 28, 28)}


def case_unsupported_lrn():
    g = G()
    g.op("LRN", ["input"], size=3)
    g.nodes[-1].output[0] = "output"
    inp = oh.make_tensor_value_info("input", TP.FLOAT, ["batch", 3, 4, 4])
    return g.model([inp], [out_info(["batch", 3, 4, 4])]), {"input": (2, 3, 4, 4)}


# ---- Mean, LpNormalization, MeanVarianceNormalization, Hardmax, TopK, OneHot ------------------------------

def name_outputs(g, outs):
    """Rename the values in outs to out0, out1, ... (graph outputs), in producers and consumers."""
    for k, o in enumerate(outs):
        for n in g.nodes:
            n.output[:] = [f"out{k}" if v == o else v for v in n.output]
            n.input[:] = [f"out{k}" if v == o else v for v in n.input]


def case_norm_more():
    """Mean with broadcasting (3 inputs, one input, and 8: partial sums in fp32), LpNormalization (p 2 and 1,
    last, middle and first axis, a transposed view), MeanVarianceNormalization (default axes [0, 2, 3],
    [2, 3], [1], a transposed view, values far from 0)."""
    g = G()
    x, y, z = "x", "y", "z"  # [2, 3, 4, 5], [3, 1, 5], [5]
    c = lambda v: g.w(np.array(v, np.float32))
    outs = [g.op("Mean", [x, y, z]), g.op("Mean", [y])]
    outs.append(g.op("Mean", [x, g.op("Mul", [x, c(2.0)]), y, z, g.op("Relu", [x]), x, g.op("Neg", [y]),
                              g.op("Abs", [z])]))
    t = g.op("Transpose", [x], perm=[0, 2, 3, 1])  # [2, 4, 5, 3], strided
    outs.append(g.op("LpNormalization", [x], axis=-1, p=2))
    outs.append(g.op("LpNormalization", [x], axis=1, p=1))
    outs.append(g.op("LpNormalization", [t], axis=0, p=2))
    outs.append(g.op("MeanVarianceNormalization", [x]))
    outs.append(g.op("MeanVarianceNormalization", [g.op("Add", [x, c(3.0)])], axes=[2, 3]))
    outs.append(g.op("MeanVarianceNormalization", [x], axes=[1]))
    outs.append(g.op("MeanVarianceNormalization", [t], axes=[-1, 1]))
    shapes = [[2, 3, 4, 5], [3, 1, 5], [2, 3, 4, 5]] + [[2, 3, 4, 5]] * 2 + [[2, 4, 5, 3]] + [[2, 3, 4, 5]] * 3 + \
        [[2, 4, 5, 3]]
    name_outputs(g, outs)
    ins = [oh.make_tensor_value_info(n, TP.FLOAT, s) for n, s in ((x, [2, 3, 4, 5]), (y, [3, 1, 5]), (z, [5]))]
    return g.model(ins, [out_info(sh, f"out{k}") for k, sh in enumerate(shapes)]), \
        {x: (2, 3, 4, 5), y: (3, 1, 5), z: (5,)}


def int_lines(g, xi):
    """Integers / 4 as floats: exact in fp16, so the fp16 run ties where ONNX Runtime does."""
    return g.op("Mul", [g.op("Cast", [xi], to=TP.FLOAT), g.w(np.array(0.25, np.float32))])


def case_topk():
    """TopK: largest and smallest, k of 1..the whole axis, strided lines, int64 values, a line of 1000 sorted
    in one block, lines of 5000 through the selection rounds. Values from int64 inputs in 0..99: many
    ties, which go to the smaller index."""
    g = G()
    xi, xl = "xi", "xl"  # int64 [2, 3, 40], [2, 5000]
    i64 = lambda *a: g.w(np.array(a, np.int64))
    f = lambda v: g.op("Cast", [v], to=TP.FLOAT)
    q, outs = int_lines(g, xi), []
    v, i = g.op("TopK", [q, i64(5)], n_out=2)
    outs += [v, f(i)]
    v, i = g.op("TopK", [q, i64(2)], n_out=2, axis=1, largest=0)
    outs += [v, f(i)]
    v, i = g.op("TopK", [q, i64(40)], n_out=2, axis=-1, largest=0)  # the whole line
    outs += [v, f(i)]
    v, i = g.op("TopK", [xi, i64(6)], n_out=2, axis=2)  # int64
    outs += [f(v), f(i)]
    ql = g.op("Add", [int_lines(g, xl), g.w(np.array(0.5, np.float32))])  # not 0: fp16's check is a cosine
    v, i = g.op("TopK", [g.op("Slice", [ql, i64(0), i64(1000), i64(1)]), i64(17)], n_out=2)  # bitonic, P = 1024
    outs += [v, f(i)]
    v, i = g.op("TopK", [ql, i64(20)], n_out=2, largest=0)  # 5000: selection rounds
    outs += [v, f(i)]
    shapes = [[2, 3, 5]] * 2 + [[2, 2, 40]] * 2 + [[2, 3, 40]] * 2 + [[2, 3, 6]] * 2 + [[2, 17]] * 2 + [[2, 20]] * 2
    name_outputs(g, outs)
    ins = [oh.make_tensor_value_info(xi, TP.INT64, [2, 3, 40]), oh.make_tensor_value_info(xl, TP.INT64, [2, 5000])]
    return g.model(ins, [out_info(sh, f"out{k}") for k, sh in enumerate(shapes)]), {xi: (2, 3, 40), xl: (2, 5000)}


def case_hardmax_onehot():
    """Hardmax (last axis with ties at the maximum, a middle axis: strided lines) and OneHot (negative
    indices wrapping and out of range, axis -1, 1 and 0, int64 and float indices and depth, int64 values)."""
    g = G()
    xi = "xi"  # int64 [2, 3, 40] in 0..99
    c = lambda v: g.w(np.array(v, np.float32))
    i64 = lambda *a: g.w(np.array(a, np.int64))
    f = lambda v: g.op("Cast", [v], to=TP.FLOAT)
    q = int_lines(g, xi)
    outs = [g.op("Hardmax", [g.op("Floor", [g.op("Mul", [q, c(0.125)])])], axis=-1)]  # ties at the maximum
    outs.append(g.op("Hardmax", [q], axis=1))
    xm = g.op("Sub", [xi, i64(50)])  # -50..49: -40..-1 wrap, below -40 and from 40 out of range
    outs.append(g.op("OneHot", [xm, i64(40), c([-0.5, 2.0])], axis=-1))  # [2, 3, 40, 40]
    outs.append(f(g.op("OneHot", [xm, i64(45), i64(3, 7)], axis=1)))  # [2, 45, 3, 40]
    outs.append(g.op("OneHot", [g.op("Sub", [f(xi), c(50.0)]), c(30.0), c([0.0, 1.0])], axis=0))  # [30, 2, 3, 40]
    shapes = [[2, 3, 40]] * 2 + [[2, 3, 40, 40], [2, 45, 3, 40], [30, 2, 3, 40]]
    name_outputs(g, outs)
    inp = oh.make_tensor_value_info(xi, TP.INT64, [2, 3, 40])
    return g.model([inp], [out_info(sh, f"out{k}") for k, sh in enumerate(shapes)]), {xi: (2, 3, 40)}


def case_select_v11():
    """Hardmax before opset 13 (the 2-D view from `axis`: default 1, and 2), and TopK at opset 11."""
    g = G()
    q = int_lines(g, "xi")  # [2, 3, 4, 5]
    outs = [g.op("Hardmax", [q]), g.op("Hardmax", [q], axis=2)]
    v, i = g.op("TopK", [q, g.w(np.array([3], np.int64))], n_out=2, axis=1)
    outs += [v, g.op("Cast", [i], to=TP.FLOAT)]
    name_outputs(g, outs)
    inp = oh.make_tensor_value_info("xi", TP.INT64, [2, 3, 4, 5])
    shapes = [[2, 3, 4, 5]] * 2 + [[2, 3, 4, 5]] * 2
    return g.model([inp], [out_info(sh, f"out{k}") for k, sh in enumerate(shapes)], opset=11), {"xi": (2, 3, 4, 5)}


def case_unsupported_topk():
    """TopK of k > 64 along an axis of more than 4096 elements: refused with the kernel's limits as reason."""
    g = G()
    v, i = g.op("TopK", ["input", g.w(np.array([100], np.int64))], n_out=2)
    name_outputs(g, [v])
    inp = oh.make_tensor_value_info("input", TP.FLOAT, [1, 5000])
    return g.model([inp], [out_info([1, 100], "out0")]), {"input": (1, 5000)}


CASES = {
    "resnet_block": case_resnet_block,
    "mobilenet_block": case_mobilenet_block,
    "conv_transpose": case_conv_transpose,
    "conv_transpose_1d": case_conv_transpose_1d,
    "unet_decoder": case_unet_decoder,
    "unsupported_convt_3d": case_unsupported_convt_3d,
    "bert_layer": case_bert_layer,
    "vit_block": case_vit_block,
    "patch_embed": case_patch_embed,
    "misc_ops": case_misc_ops,
    "gemm_variants": case_gemm_variants,
    "sdpa_export": case_sdpa_export,
    "sdpa_head64": lambda: case_sdpa_export(B=2, S=40, H=2, dh=64),
    "sdpa_head64_197": lambda: case_sdpa_export(B=2, S=197, H=2, dh=64, masked=False),
    # masks whose rows are not runs of 16-byte chunks: read per element; several key tiles
    "sdpa_head64_s20": lambda: case_sdpa_export(B=2, S=20, H=2, dh=64),
    "sdpa_head64_s150": lambda: case_sdpa_export(B=3, S=150, H=2, dh=64),
    # Whisper's encoder: 1,500 keys (23 full key tiles and a partial one) through the fused kernel
    "sdpa_head64_s1500": lambda: case_sdpa_export(B=1, S=1500, H=2, dh=64),
    # narrower heads through the fused kernel, zero-padded to 64 (PVT/Swin 32, LeViT 16 with 64-wide values)
    "sdpa_head32": lambda: case_sdpa_export(B=2, S=50, H=3, dh=32),
    "sdpa_head16_s150": lambda: case_sdpa_export(B=3, S=150, H=2, dh=16, masked=False),
    "levit_attention": case_levit_attention,
    "levit_attention_s196": lambda: case_levit_attention(B=1, S=196, H=3, dk=16, dv=32),
    "torch_mha": case_torch_mha,
    "torch_mha_head8": lambda: case_torch_mha(B=3, S=10, H=4, dh=8, residual=False),
    "lazy_views": case_lazy_views,
    "op_coverage": case_op_coverage,
    "reductions": case_reductions,
    "reductions_more": lambda: case_reductions(more=True),
    "reduce_big": case_reduce_big,
    "softmax_axes": case_softmax_axes,
    "masked_softmax_rank5": case_masked_softmax_rank5,
    "dwconv_more": case_dwconv_more,
    "pool_c36": lambda: case_pool_layouts(36, 14, 13),
    "pool_c60": lambda: case_pool_layouts(60, 9, 11),
    "pool_c6": lambda: case_pool_layouts(6, 11, 10),
    "pool_c16": lambda: case_pool_layouts(16, 9, 9),
    "pool_c5": lambda: case_pool_layouts(5, 7, 12),
    "inception_block": case_inception_block,
    "mixed_concat": case_mixed_concat,
    "dense_block": case_dense_block,
    "conv_pool_paths": case_conv_pool_paths,
    "poolformer_block": case_poolformer_block,
    "poolformer_block_c64": lambda: case_poolformer_block(64),
    "dwconv_layouts": case_dwconv_layouts,
    "resize": case_resize,
    "resize_rows": case_resize_rows,
    "upsample": case_upsample,
    "instance_norm": case_instance_norm,
    "group_norm": case_group_norm,
    "timm_group_norm": case_timm_group_norm,
    "group_norm21_offset": case_group_norm21_offset,
    "norm_more": case_norm_more,
    "topk": case_topk,
    "hardmax_onehot": case_hardmax_onehot,
    "select_v11": case_select_v11,
    "unsupported_topk": case_unsupported_topk,
    "unary_more": case_unary_more,
    "index_ops": case_index_ops,
    "deberta_gather": case_deberta_gather,
    "scatter9": case_scatter9,
    "einsum": case_einsum,
    "unsupported_lrn": case_unsupported_lrn,
}


def write_case(out, name, fn):
    import onnxruntime as ort
    model, shapes, *expect = fn()
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, v in (expect[0] if expect else {}).items():  # what test_gpu_lower checks of the lowering
        with open(os.path.join(d, k), "w") as f:
            f.write(f"{v}\n")
    feeds = {}
    for i, vi in enumerate(model.graph.input):
        shp = shapes[vi.name]
        if vi.type.tensor_type.elem_type == TP.INT64:
            a = rng.integers(0, 100, size=shp, dtype=np.int64)
            a.flat[-3:] = 0  # padding tokens, so the mask matters
        else:
            a = rng.standard_normal(shp).astype(np.float32)
        feeds[vi.name] = a
        np.save(os.path.join(d, f"input_{i}.npy"), a)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    for j, o in enumerate(outs):
        np.save(os.path.join(d, f"output_{j}.npy"), o)
    print(f"{name}: inputs {[feeds[k].shape for k in feeds]} -> outputs {[o.shape for o in outs]}")


def main():
    """make_models.py [OUT [CASE ...]]: every case, or the named ones, into OUT."""
    out = sys.argv[1] if len(sys.argv) > 1 else "gpu_models"
    names = sys.argv[2:] or list(CASES)
    for name in names:
        write_case(out, name, CASES[name])


if __name__ == "__main__":
    main()
