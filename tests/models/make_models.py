#!/usr/bin/env python3
"""Build small ONNX models shaped like real exports, with seeded random weights (no downloads, no torch).

    make_models.py OUT [--only NAME,...] [--resnet50]

writes OUT/<name>.onnx for:
  resnet_mini         stem Conv7x7/BN/Relu, MaxPool, 3 stages of bottleneck blocks with projection
                      shortcuts and residual Add, GlobalAveragePool, Flatten, Gemm      [batch,3,64,64]
  mobilenetv2_mini    Conv+Clip(0,6) (min/max as inputs), inverted residuals with depthwise convs
                      (group = channels), Reshape head built from Shape like torch.flatten exports
  efficientnet_block  MBConv blocks: expand/depthwise with BN, SiLU (x*Sigmoid(x)) and HardSwish,
                      squeeze-excitation GlobalAveragePool->Conv->act->Conv->Sigmoid->Mul, residual
  seg_head            encoder convs, Resize x2 (scales, linear), Resize to sizes computed by a
                      Shape->Slice->Concat chain, Resize x4 (nearest, asymmetric/floor), Concat skips
  bert_mini           2-layer BERT encoder (hidden 128, 4 heads, seq 32): Gather embeddings, position ids
                      sliced by Shape, LayerNormalization, MatMul+Add projections, Shape->Gather->
                      Unsqueeze->Concat->Reshape to heads, Transpose, MatMul/Div/Softmax attention,
                      masks as PyTorch exports them (Unsqueeze/Cast/Sub-from-1/Mul by float min; and
                      Equal+Where(-inf) with an IsNaN guard after Softmax, Expand), Erf GELU, a final
                      LayerNorm and a Tanh pooler                                   [batch,32] int64
  resnetv2_gn_mini    timm's BiT ResNetV2 shape: pre-activation bottlenecks, GroupNorm as torch exports it
                      before opset 18 (Reshape/InstanceNormalization/Reshape(Shape)/Mul/Add) + Relu
  vit_patch_mini      HF ViT's front: a 16x16/16 patch-embedding Conv (3 channels, the optimizer's
                      patchify), flatten(2).transpose(1, 2), class token, position embeddings, LayerNorm,
                      an erf-GELU MLP with residual, mean over tokens, linear head       [batch,3,64,64]
  convnext_stem_mini  ConvNeXt's 4x4/4 stem Conv (patchify) -> channels-last LayerNorm (Transposes
                      around it), a block: depthwise 7x7, channels-last LayerNorm, MLP, residual
  if_shape_then/_else If over Shape(x)[-1] == 8 (then taken at width 8, else at width 6): branches reading
                      outer-scope values, with initializers of their own                  [batch,8|6]
  if_nested           an If inside an If's branch, then an If whose condition depends on its output
and, with --resnet50 (or --only resnet50), the full-size fixed-shape ResNet-50 v1.5 (224x224, BN
folded into the convs as torch.onnx exports with constant folding) for the FLOPs check.

Every model is opset 17 and (except resnet50) has a symbolic leading "batch" dim on its inputs.
"""
import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
SEED = 20240607


class Builder:
    """A graph under construction: unique names, initializers, and helpers that emit export-like nodes."""

    def __init__(self, name, seed=SEED):
        self.name = name
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.rng = np.random.default_rng(seed)
        self.counter = {}

    def uniq(self, base):
        k = self.counter.get(base, 0)
        self.counter[base] = k + 1
        return f"{base}_{k}" if k else base

    def init(self, base, arr):
        name = self.uniq(base)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def const_i64(self, base, vals):
        return self.init(base, np.asarray(vals, dtype=np.int64))

    def const_f32(self, base, vals):
        return self.init(base, np.asarray(vals, dtype=np.float32))

    def node(self, op, inputs, n_out=1, name=None, **attrs):
        name = self.uniq(name or op)
        outs = [f"{name}_out{i}" if n_out > 1 else f"{name}_out" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs if n_out > 1 else outs[0]

    def input(self, name, dtype, shape):
        self.inputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name

    def output(self, tensor, name, dtype, shape):
        """Make `tensor` a graph output called `name` (renamed in place, as exporters name outputs)."""
        for n in self.nodes:
            for lst in (n.input, n.output):
                for i, t in enumerate(lst):
                    if t == tensor:
                        lst[i] = name
        self.outputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name

    def model(self):
        g = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="ingot-tests", producer_version="1")
        m.ir_version = 8
        onnx.checker.check_model(m, full_check=True)
        return m

    # ---- layers -----------------------------------------------------------------------------------------
    def conv(self, x, c_in, c_out, k, stride=1, group=1, bias=True, name="conv"):
        fan_in = c_in // group * k * k
        w = self.rng.standard_normal((c_out, c_in // group, k, k)).astype(np.float32) * math.sqrt(2.0 / fan_in)
        ins = [x, self.init(name + ".weight", w)]
        if bias:
            ins.append(self.init(name + ".bias", self.rng.standard_normal(c_out).astype(np.float32) * 0.05))
        p = k // 2
        return self.node("Conv", ins, name=name, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[p, p, p, p], group=group, dilations=[1, 1])

    def bn(self, x, c, name="bn"):
        r = self.rng
        scale = r.uniform(0.5, 1.5, c).astype(np.float32)
        bias = (r.standard_normal(c) * 0.1).astype(np.float32)
        mean = (r.standard_normal(c) * 0.1).astype(np.float32)
        var = r.uniform(0.5, 1.5, c).astype(np.float32)
        return self.node("BatchNormalization",
                         [x, self.init(name + ".weight", scale), self.init(name + ".bias", bias),
                          self.init(name + ".running_mean", mean), self.init(name + ".running_var", var)],
                         name=name, epsilon=1e-5, momentum=0.9)

    def relu6(self, x):
        # torch.nn.ReLU6 exports as Clip with min/max inputs (opset >= 11)
        return self.node("Clip", [x, self.const_f32("clip_min", 0.0), self.const_f32("clip_max", 6.0)])

    def linear(self, x, n_in, n_out, name="fc", std=None):
        std = std if std is not None else 1.0 / math.sqrt(n_in)
        w = self.init(name + ".weight", (self.rng.standard_normal((n_in, n_out)) * std).astype(np.float32))
        b = self.init(name + ".bias", (self.rng.standard_normal(n_out) * 0.02).astype(np.float32))
        return self.node("Add", [self.node("MatMul", [x, w], name=name + "/MatMul"), b], name=name + "/Add")

    def gemm_head(self, x, n_in, n_out, name="fc"):
        w = (self.rng.standard_normal((n_out, n_in)) / math.sqrt(n_in)).astype(np.float32)
        b = (self.rng.standard_normal(n_out) * 0.02).astype(np.float32)
        return self.node("Gemm", [x, self.init(name + ".weight", w), self.init(name + ".bias", b)], name=name,
                         alpha=1.0, beta=1.0, transB=1)

    def layer_norm(self, x, c, name="LayerNorm"):
        g = self.init(name + ".weight", self.rng.uniform(0.8, 1.2, c).astype(np.float32))
        b = self.init(name + ".bias", (self.rng.standard_normal(c) * 0.02).astype(np.float32))
        return self.node("LayerNormalization", [x, g, b], name=name, axis=-1, epsilon=1e-12)

    def group_norm(self, x, c, groups, name="norm"):
        """GroupNorm as torch.onnx exports it before opset 18 (symbolic_opset9.group_norm): Reshape to
        [0, G, -1], InstanceNormalization with ones/zeros, Reshape to Shape(x), Mul/Add by the Unsqueezed
        weight and bias."""
        def const(base, arr):
            out = self.uniq(base)
            self.nodes.append(helper.make_node("Constant", [], [out], value=numpy_helper.from_array(arr, out + "_v")))
            return out
        r = self.node("Reshape", [x, const("gn_shape", np.array([0, groups, -1], np.int64))])
        i = self.node("InstanceNormalization", [r, const("gn_ones", np.ones(groups, np.float32)),
                                                const("gn_zeros", np.zeros(groups, np.float32))], epsilon=1e-5)
        y = self.node("Reshape", [i, self.node("Shape", [x])])
        axes = self.const_i64("gn_axes", [1, 2])
        w = self.node("Unsqueeze", [self.init(name + ".weight", self.rng.uniform(0.5, 1.5, c).astype(np.float32)), axes])
        b = self.node("Unsqueeze", [self.init(name + ".bias", (self.rng.standard_normal(c) * 0.1).astype(np.float32)),
                                    axes])
        return self.node("Add", [self.node("Mul", [y, w]), b])

    def dim(self, x, axis):
        """Shape(x) -> Gather(axis) -> Unsqueeze: the 1-element int64 vector PyTorch exports for x.size(axis)."""
        s = self.node("Shape", [x])
        d = self.node("Gather", [s, self.const_i64("axis", axis)], axis=0)
        return self.node("Unsqueeze", [d, self.const_i64("unsq_axes", [0])])


# ---- models -------------------------------------------------------------------------------------------------

def resnet_mini():
    b = Builder("resnet_mini")
    x = b.input("input", TensorProto.FLOAT, ["batch", 3, 64, 64])
    h = b.node("Relu", [b.bn(b.conv(x, 3, 16, 7, 2, bias=False, name="conv1"), 16, "bn1")])
    h = b.node("MaxPool", [h], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c_in = 16
    for si, (planes, blocks, stride) in enumerate([(8, 2, 1), (16, 2, 2), (32, 2, 2)]):
        for bi in range(blocks):
            s = stride if bi == 0 else 1
            pre = f"layer{si + 1}.{bi}"
            y = b.node("Relu", [b.bn(b.conv(h, c_in, planes, 1, bias=False, name=pre + ".conv1"), planes,
                                     pre + ".bn1")])
            y = b.node("Relu", [b.bn(b.conv(y, planes, planes, 3, s, bias=False, name=pre + ".conv2"), planes,
                                     pre + ".bn2")])
            y = b.bn(b.conv(y, planes, planes * 4, 1, bias=False, name=pre + ".conv3"), planes * 4, pre + ".bn3")
            sc = h
            if s != 1 or c_in != planes * 4:
                sc = b.bn(b.conv(h, c_in, planes * 4, 1, s, bias=False, name=pre + ".downsample.0"), planes * 4,
                          pre + ".downsample.1")
            h = b.node("Relu", [b.node("Add", [y, sc])])
            c_in = planes * 4
    h = b.node("Flatten", [b.node("GlobalAveragePool", [h])], axis=1)
    b.output(b.gemm_head(h, c_in, 10), "logits", TensorProto.FLOAT, ["batch", 10])
    return b.model()


def resnetv2_gn_mini():
    """timm's resnetv2 (BiT) shape: pre-activation bottlenecks with GroupNorm(8 groups) + Relu as torch exports
    GroupNorm before opset 18, a projection shortcut, a final GroupNorm, pooling and a linear head."""
    b = Builder("resnetv2_gn_mini")
    x = b.input("input", TensorProto.FLOAT, ["batch", 3, 32, 32])
    h = b.conv(x, 3, 32, 3, 2, bias=False, name="stem.conv")
    c_in = 32
    for bi, (mid, out, stride) in enumerate([(16, 64, 1), (16, 64, 1), (32, 128, 2)]):
        pre = f"stages.{bi}"
        a = b.node("Relu", [b.group_norm(h, c_in, 8, pre + ".norm1")])
        sc = b.conv(a, c_in, out, 1, stride, bias=False, name=pre + ".downsample") if c_in != out or stride != 1 else h
        y = b.conv(a, c_in, mid, 1, bias=False, name=pre + ".conv1")
        y = b.conv(b.node("Relu", [b.group_norm(y, mid, 8, pre + ".norm2")]), mid, mid, 3, stride, bias=False,
                   name=pre + ".conv2")
        y = b.conv(b.node("Relu", [b.group_norm(y, mid, 8, pre + ".norm3")]), mid, out, 1, bias=False,
                   name=pre + ".conv3")
        h = b.node("Add", [y, sc])
        c_in = out
    h = b.node("Relu", [b.group_norm(h, c_in, 8, "norm")])
    h = b.node("Flatten", [b.node("GlobalAveragePool", [h])], axis=1)
    b.output(b.gemm_head(h, c_in, 10), "logits", TensorProto.FLOAT, ["batch", 10])
    return b.model()


def vit_patch_mini(dim=64, patch=16, hw=64):
    """HF ViT's embeddings and one MLP block: the patch embedding is a Conv with kernel == stride over the
    3 image channels, flattened and transposed to tokens as torch exports flatten(2).transpose(1, 2)."""
    b = Builder("vit_patch_mini")
    x = b.input("pixel_values", TensorProto.FLOAT, ["batch", 3, hw, hw])
    n = (hw // patch) ** 2
    w = (b.rng.standard_normal((dim, 3, patch, patch)) / math.sqrt(3 * patch * patch)).astype(np.float32)
    e = b.node("Conv", [x, b.init("embeddings.patch_embeddings.projection.weight", w),
                        b.init("embeddings.patch_embeddings.projection.bias",
                               (b.rng.standard_normal(dim) * 0.05).astype(np.float32))],
               name="embeddings.patch_embeddings.projection", kernel_shape=[patch, patch], strides=[patch, patch],
               pads=[0, 0, 0, 0], dilations=[1, 1], group=1)
    shape = b.node("Concat", [b.dim(x, 0), b.const_i64("flat_tail", [dim, -1])], axis=0)
    t = b.node("Transpose", [b.node("Reshape", [e, shape])], perm=[0, 2, 1])
    cls_shape = b.node("Concat", [b.dim(x, 0), b.const_i64("cls_tail", [1, dim])], axis=0)
    cls = b.node("Expand", [b.init("embeddings.cls_token", (b.rng.standard_normal((1, 1, dim)) * 0.5).astype(np.float32)),
                            cls_shape])
    t = b.node("Concat", [cls, t], axis=1)
    t = b.node("Add", [t, b.init("embeddings.position_embeddings",
                                 (b.rng.standard_normal((1, n + 1, dim)) * 0.5).astype(np.float32))])
    h = b.layer_norm(t, dim, "layernorm_before")
    h = b.linear(h, dim, 4 * dim, "intermediate.dense")
    h = b.node("Mul", [b.node("Mul", [h, b.node("Add", [b.node("Erf", [b.node("Div", [h, b.const_f32("sqrt2", math.sqrt(2))])]),
                                                        b.const_f32("one", 1.0)])]), b.const_f32("half", 0.5)])
    t = b.node("Add", [b.linear(h, 4 * dim, dim, "output.dense"), t])
    t = b.node("ReduceMean", [b.layer_norm(t, dim, "layernorm")], axes=[1], keepdims=0)
    b.output(b.gemm_head(t, dim, 10, "classifier"), "logits", TensorProto.FLOAT, ["batch", 10])
    return b.model()


def convnext_stem_mini(dim=32, hw=32):
    """ConvNeXt's stem (Conv 4x4 stride 4 over 3 channels, then LayerNorm over channels in channels-last
    order, as torch exports LayerNorm2d: Transpose, LayerNormalization, Transpose) and one block."""
    b = Builder("convnext_stem_mini")
    x = b.input("input", TensorProto.FLOAT, ["batch", 3, hw, hw])
    w = (b.rng.standard_normal((dim, 3, 4, 4)) / math.sqrt(48)).astype(np.float32)
    h = b.node("Conv", [x, b.init("stem.0.weight", w),
                        b.init("stem.0.bias", (b.rng.standard_normal(dim) * 0.05).astype(np.float32))],
               name="stem.0", kernel_shape=[4, 4], strides=[4, 4], pads=[0, 0, 0, 0], dilations=[1, 1], group=1)
    h = b.node("Transpose", [b.layer_norm(b.node("Transpose", [h], perm=[0, 2, 3, 1]), dim, "stem.1")],
               perm=[0, 3, 1, 2])
    y = b.conv(h, dim, dim, 7, group=dim, name="stages.0.blocks.0.conv_dw")
    y = b.layer_norm(b.node("Transpose", [y], perm=[0, 2, 3, 1]), dim, "stages.0.blocks.0.norm")
    y = b.node("Relu", [b.linear(y, dim, 4 * dim, "stages.0.blocks.0.mlp.fc1")])
    y = b.linear(y, 4 * dim, dim, "stages.0.blocks.0.mlp.fc2")
    h = b.node("Add", [b.node("Transpose", [y], perm=[0, 3, 1, 2]), h])
    h = b.node("Flatten", [b.node("GlobalAveragePool", [h])], axis=1)
    b.output(b.gemm_head(h, dim, 10), "logits", TensorProto.FLOAT, ["batch", 10])
    return b.model()


def mobilenetv2_mini():
    b = Builder("mobilenetv2_mini")
    x = b.input("input", TensorProto.FLOAT, ["batch", 3, 64, 64])
    h = b.relu6(b.conv(x, 3, 16, 3, 2, name="features.0"))
    c = 16
    for i, (t, c_out, n, s) in enumerate([(1, 16, 1, 1), (4, 24, 2, 2), (4, 32, 2, 2), (4, 48, 1, 1)]):
        for j in range(n):
            stride = s if j == 0 else 1
            pre = f"features.{i + 1}.{j}"
            hid = c * t
            y = h
            if t != 1:
                y = b.relu6(b.conv(y, c, hid, 1, name=pre + ".expand"))
            y = b.relu6(b.conv(y, hid, hid, 3, stride, group=hid, name=pre + ".dw"))
            y = b.conv(y, hid, c_out, 1, name=pre + ".project")
            h = b.node("Add", [h, y]) if stride == 1 and c == c_out else y
            c = c_out
    h = b.relu6(b.conv(h, c, 128, 1, name="features.last"))
    h = b.node("GlobalAveragePool", [h])
    # torch.flatten(x, 1) in older exporters: Reshape(x, Concat(Shape(x)[0], [-1]))
    shape = b.node("Concat", [b.dim(h, 0), b.const_i64("minus1", [-1])], axis=0)
    h = b.node("Reshape", [h, shape])
    b.output(b.gemm_head(h, 128, 10, "classifier"), "logits", TensorProto.FLOAT, ["batch", 10])
    return b.model()


def efficientnet_block():
    b = Builder("efficientnet_block")
    x = b.input("input", TensorProto.FLOAT, ["batch", 16, 32, 32])
    h = x
    for i, act in enumerate(["silu", "hardswish"]):
        pre = f"blocks.{i}"

        def activate(v):
            if act == "silu":
                return b.node("Mul", [v, b.node("Sigmoid", [v])])
            return b.node("HardSwish", [v])

        y = activate(b.bn(b.conv(h, 16, 64, 1, bias=False, name=pre + ".expand"), 64, pre + ".bn0"))
        y = activate(b.bn(b.conv(y, 64, 64, 3, group=64, bias=False, name=pre + ".dw"), 64, pre + ".bn1"))
        # squeeze-excitation
        s = b.node("GlobalAveragePool", [y])
        s = b.conv(s, 64, 16, 1, name=pre + ".se.reduce")
        s = activate(s)
        s = b.node("Sigmoid", [b.conv(s, 16, 64, 1, name=pre + ".se.expand")])
        y = b.node("Mul", [y, s])
        y = b.bn(b.conv(y, 64, 16, 1, bias=False, name=pre + ".project"), 16, pre + ".bn2")
        h = b.node("Add", [y, h])
    h = b.output(h, "features", TensorProto.FLOAT, ["batch", 16, 32, 32])
    pooled = b.node("Flatten", [b.node("GlobalAveragePool", [b.node("HardSwish", [h])])], axis=1)
    b.output(b.gemm_head(pooled, 16, 8), "logits", TensorProto.FLOAT, ["batch", 8])
    return b.model()


def seg_head():
    b = Builder("seg_head")
    n_cls = 5
    x = b.input("input", TensorProto.FLOAT, ["batch", 3, 64, 64])
    f1 = b.node("Relu", [b.conv(x, 3, 16, 3, 2, name="enc1")])    # 32x32
    f2 = b.node("Relu", [b.conv(f1, 16, 32, 3, 2, name="enc2")])  # 16x16
    f3 = b.node("Relu", [b.conv(f2, 32, 32, 3, 2, name="enc3")])  # 8x8
    empty_roi = b.const_f32("roi", np.zeros(0, np.float32))
    # x2 with scales, bilinear (F.interpolate(scale_factor=2, mode="bilinear", align_corners=False))
    up = b.node("Resize", [f3, empty_roi, b.const_f32("scales", [1, 1, 2, 2])], mode="linear",
                coordinate_transformation_mode="pytorch_half_pixel")
    d2 = b.node("Relu", [b.conv(b.node("Concat", [up, f2], axis=1), 64, 32, 3, name="dec2")])  # 16x16
    # to f1's size with sizes built from shapes (F.interpolate(size=f1.shape[2:]))
    sizes = b.node("Concat", [b.node("Slice", [b.node("Shape", [d2]), b.const_i64("s0", [0]),
                                              b.const_i64("s2", [2])]),
                              b.node("Slice", [b.node("Shape", [f1]), b.const_i64("s2b", [2]),
                                              b.const_i64("s4", [4])])], axis=0)
    up = b.node("Resize", [d2, empty_roi, "", sizes], mode="linear", coordinate_transformation_mode="half_pixel")
    d1 = b.node("Relu", [b.conv(b.node("Concat", [up, f1], axis=1), 48, 16, 3, name="dec1")])  # 32x32
    logits = b.conv(d1, 16, n_cls, 1, name="cls")
    main = b.node("Resize", [logits, empty_roi, b.const_f32("scales2", [1, 1, 2, 2])], mode="linear",
                  coordinate_transformation_mode="align_corners")
    b.output(main, "masks", TensorProto.FLOAT, ["batch", n_cls, 64, 64])
    aux = b.conv(d2, 32, n_cls, 1, name="aux")
    aux = b.node("Resize", [aux, empty_roi, b.const_f32("scales4", [1, 1, 4, 4])], mode="nearest",
                 coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    b.output(aux, "aux_masks", TensorProto.FLOAT, ["batch", n_cls, 64, 64])
    return b.model()


def bert_mini(layers=2, hidden=128, heads=4, seq=32, vocab=1000, ffn=512, max_pos=64):
    b = Builder("bert_mini")
    hd = hidden // heads
    ids = b.input("input_ids", TensorProto.INT64, ["batch", seq])
    mask = b.input("attention_mask", TensorProto.INT64, ["batch", seq])
    std = 0.02
    rnd = lambda *s: (b.rng.standard_normal(s) * std).astype(np.float32)  # noqa: E731
    # embeddings: word + position (position_ids buffer sliced to the sequence length) + token type
    word = b.node("Gather", [b.init("embeddings.word_embeddings.weight", rnd(vocab, hidden)), ids], axis=0)
    pos_buf = b.init("embeddings.position_ids", np.arange(max_pos, dtype=np.int64)[None, :])
    pos_ids = b.node("Slice", [pos_buf, b.const_i64("zero", [0]), b.dim(ids, 1), b.const_i64("one", [1])])
    pos = b.node("Gather", [b.init("embeddings.position_embeddings.weight", rnd(max_pos, hidden)), pos_ids],
                 axis=0)
    tt_ids = b.node("ConstantOfShape", [b.node("Shape", [ids])],
                    value=numpy_helper.from_array(np.zeros(1, np.int64)))
    tt = b.node("Gather", [b.init("embeddings.token_type_embeddings.weight", rnd(2, hidden)), tt_ids], axis=0)
    h = b.node("Add", [b.node("Add", [word, tt]), pos])
    h = b.layer_norm(h, hidden, "embeddings.LayerNorm")

    # additive mask, as get_extended_attention_mask exports: (1 - mask[:, None, None, :]) * finfo.min
    m4 = b.node("Unsqueeze", [mask, b.const_i64("axes12", [1, 2])])
    mf = b.node("Cast", [m4], to=TensorProto.FLOAT)
    add_mask = b.node("Mul", [b.node("Sub", [b.const_f32("one_f", 1.0), mf]),
                              b.const_f32("fmin", np.finfo(np.float32).min)])
    # boolean mask, as SDPA-style exports: Expand(mask == 0) to [batch, heads, seq, seq], Where(-inf)
    exp_shape = b.node("Concat", [b.dim(ids, 0), b.const_i64("heads", [heads]), b.dim(ids, 1), b.dim(ids, 1)],
                       axis=0)
    bool_mask = b.node("Expand", [b.node("Equal", [m4, b.const_i64("zero_i", 0)]), exp_shape])

    scale = b.const_f32("sqrt_hd", math.sqrt(hd))
    for li in range(layers):
        pre = f"encoder.layer.{li}"

        def heads_view(t, perm):
            # x.view(x.size(0), x.size(1), heads, hd).permute(...)
            shp = b.node("Concat", [b.dim(t, 0), b.dim(t, 1), b.const_i64("nh", [heads]), b.const_i64("hd", [hd])],
                         axis=0)
            return b.node("Transpose", [b.node("Reshape", [t, shp])], perm=perm)

        q = heads_view(b.linear(h, hidden, hidden, pre + ".attention.self.query", std), [0, 2, 1, 3])
        k = heads_view(b.linear(h, hidden, hidden, pre + ".attention.self.key", std), [0, 2, 3, 1])
        v = heads_view(b.linear(h, hidden, hidden, pre + ".attention.self.value", std), [0, 2, 1, 3])
        scores = b.node("Div", [b.node("MatMul", [q, k]), scale])
        if li % 2 == 0:
            probs = b.node("Softmax", [b.node("Add", [scores, add_mask])], axis=-1)
        else:
            neg_inf = b.const_f32("neg_inf", -np.inf)
            probs = b.node("Softmax", [b.node("Where", [bool_mask, neg_inf, scores])], axis=-1)
            # fully masked rows give NaN: zero them (the IsNaN guard exporters emit)
            probs = b.node("Where", [b.node("IsNaN", [probs]), b.const_f32("zero_f", 0.0), probs])
        ctx = b.node("Transpose", [b.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        shp = b.node("Concat", [b.dim(ctx, 0), b.dim(ctx, 1), b.const_i64("hid", [hidden])], axis=0)
        ctx = b.node("Reshape", [ctx, shp])
        attn = b.linear(ctx, hidden, hidden, pre + ".attention.output.dense", std)
        h = b.layer_norm(b.node("Add", [attn, h]), hidden, pre + ".attention.output.LayerNorm")
        # FFN with erf GELU: x * 0.5 * (1 + erf(x / sqrt(2)))
        f = b.linear(h, hidden, ffn, pre + ".intermediate.dense", std)
        g = b.node("Add", [b.node("Erf", [b.node("Div", [f, b.const_f32("sqrt2", math.sqrt(2.0))])]),
                           b.const_f32("one_g", 1.0)])
        f = b.node("Mul", [b.node("Mul", [f, g]), b.const_f32("half", 0.5)])
        f = b.linear(f, ffn, hidden, pre + ".output.dense", std)
        h = b.layer_norm(b.node("Add", [f, h]), hidden, pre + ".output.LayerNorm")
    h = b.layer_norm(h, hidden, "final_layer_norm")
    h = b.output(h, "last_hidden_state", TensorProto.FLOAT, ["batch", seq, hidden])
    cls = b.node("Gather", [h, b.const_i64("cls_idx", 0)], axis=1)
    pooled = b.node("Tanh", [b.linear(cls, hidden, hidden, "pooler.dense", 0.05)])
    b.output(pooled, "pooler_output", TensorProto.FLOAT, ["batch", hidden])
    return b.model()


def _branch(name, nodes, outputs, inits=()):
    """An If branch: nodes reading outer-scope values by name, its own initializers, typed-less outputs."""
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                                               for o in outputs], list(inits))


def _if_on_width(b, x, width, then_g, else_g, name):
    """If(Shape(x)[-1] == width) as exporters write shape tests: Shape -> Gather -> Equal."""
    d = b.node("Gather", [b.node("Shape", [x]), b.const_i64(name + "_last", -1)], axis=0)
    cond = b.node("Equal", [d, b.const_i64(name + "_width", width)])
    return b.node("If", [cond], name=name, then_branch=then_g, else_branch=else_g)


def if_shape(feat):
    """An If whose condition comes from Shape (then taken when the width is 8, else otherwise): the
    branches compute different things from outer-scope values (a graph input, a value computed before
    the If) with initializers of their own."""
    b = Builder(f"if_shape_{feat}")
    x = b.input("x", TensorProto.FLOAT, ["batch", feat])
    h = b.node("Relu", [x])
    w = numpy_helper.from_array(b.rng.standard_normal(feat).astype(np.float32), "then_w")
    c = numpy_helper.from_array(b.rng.standard_normal(feat).astype(np.float32), "else_c")
    then_g = _branch("then", [helper.make_node("Mul", [h, "then_w"], ["t1"]),
                              helper.make_node("Add", ["t1", x], ["t2"])], ["t2"], [w])
    else_g = _branch("else", [helper.make_node("Sub", [h, "else_c"], ["e1"]),
                              helper.make_node("Mul", ["e1", "e1"], ["e2"])], ["e2"], [c])
    y = b.node("Sigmoid", [_if_on_width(b, x, 8, then_g, else_g, "if_width")])
    b.output(y, "y", TensorProto.FLOAT, ["batch", feat])
    return b.model()


def if_nested():
    """An If in an If's branch (its condition computed inside the branch, its branches reading the outer
    branch's values and the main graph's), then an If whose condition depends on the first one's output
    (inlined a round later), taking its else branch."""
    b = Builder("if_nested")
    x = b.input("x", TensorProto.FLOAT, ["batch", 8])
    h = b.node("Tanh", [x])
    w = numpy_helper.from_array(b.rng.standard_normal(8).astype(np.float32), "outer_w")
    v = numpy_helper.from_array(b.rng.standard_normal(8).astype(np.float32), "inner_w")
    four = numpy_helper.from_array(np.array(4, np.int64), "inner_four")
    one = numpy_helper.from_array(np.array(1, np.int64), "inner_one")
    inner_then = _branch("inner_then", [helper.make_node("Mul", ["a", "inner_w"], ["it"]),
                                        helper.make_node("Add", ["it", x], ["it2"])], ["it2"], [v])
    inner_else = _branch("inner_else", [helper.make_node("Neg", ["a"], ["ie"])], ["ie"])
    outer_then = _branch("outer_then", [
        helper.make_node("Add", [h, "outer_w"], ["a"]),
        helper.make_node("Shape", ["a"], ["a_shape"]),
        helper.make_node("Gather", ["a_shape", "inner_one"], ["a_width"], axis=0),
        helper.make_node("Greater", ["a_width", "inner_four"], ["inner_cond"]),
        helper.make_node("If", ["inner_cond"], ["inner_out"], then_branch=inner_then, else_branch=inner_else),
        helper.make_node("Mul", ["inner_out", h], ["ot"])], ["ot"], [w, four, one])
    outer_else = _branch("outer_else", [helper.make_node("Identity", [h], ["oe"])], ["oe"])
    y1 = _if_on_width(b, x, 8, outer_then, outer_else, "if_outer")
    then2 = _branch("then2", [helper.make_node("Abs", [y1], ["t"])], ["t"])
    else2 = _branch("else2", [helper.make_node("Sin", [y1], ["e"])], ["e"])
    y2 = _if_on_width(b, y1, 3, then2, else2, "if_chain")
    b.output(y2, "y", TensorProto.FLOAT, ["batch", 8])
    return b.model()


def resnet50():
    """ResNet-50 v1.5 (stride 2 on the 3x3 conv of each downsampling bottleneck) at 1x3x224x224, BN folded
    into conv biases. 4.09 GMAC of convolutions + 2 MMAC of the classifier: 8.2 GFLOP."""
    b = Builder("resnet50")
    x = b.input("input", TensorProto.FLOAT, [1, 3, 224, 224])
    h = b.node("Relu", [b.conv(x, 3, 64, 7, 2, name="conv1")])
    h = b.node("MaxPool", [h], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c_in = 64
    for si, (planes, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]):
        for bi in range(blocks):
            s = stride if bi == 0 else 1
            pre = f"layer{si + 1}.{bi}"
            y = b.node("Relu", [b.conv(h, c_in, planes, 1, name=pre + ".conv1")])
            y = b.node("Relu", [b.conv(y, planes, planes, 3, s, name=pre + ".conv2")])
            y = b.conv(y, planes, planes * 4, 1, name=pre + ".conv3")
            sc = h if bi > 0 else b.conv(h, c_in, planes * 4, 1, s, name=pre + ".downsample")
            h = b.node("Relu", [b.node("Add", [y, sc])])
            c_in = planes * 4
    h = b.node("Flatten", [b.node("GlobalAveragePool", [h])], axis=1)
    b.output(b.gemm_head(h, 2048, 1000), "logits", TensorProto.FLOAT, [1, 1000])
    return b.model()


MODELS = {
    "resnet_mini": resnet_mini,
    "mobilenetv2_mini": mobilenetv2_mini,
    "efficientnet_block": efficientnet_block,
    "seg_head": seg_head,
    "bert_mini": bert_mini,
    "resnetv2_gn_mini": resnetv2_gn_mini,
    "vit_patch_mini": vit_patch_mini,
    "convnext_stem_mini": convnext_stem_mini,
    "if_shape_then": lambda: if_shape(8),
    "if_shape_else": lambda: if_shape(6),
    "if_nested": if_nested,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--resnet50", action="store_true", help="also build the full-size resnet50")
    args = ap.parse_args()
    builders = dict(MODELS, resnet50=resnet50)
    names = args.only.split(",") if args.only else list(MODELS) + (["resnet50"] if args.resnet50 else [])
    os.makedirs(args.out, exist_ok=True)
    for n in names:
        if n not in builders:
            sys.exit(f"make_models: unknown model {n} (have: {', '.join(builders)})")
        path = os.path.join(args.out, n + ".onnx")
        m = builders[n]()
        onnx.save(m, path)
        params = sum(int(np.prod(t.dims)) for t in m.graph.initializer)
        print(f"make_models: {path}: {len(m.graph.node)} nodes, {params} params")
    return 0


if __name__ == "__main__":
    sys.exit(main())
