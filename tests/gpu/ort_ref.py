#!/usr/bin/env python3
"""Reference outputs of a whole model from ONNX Runtime (CPU), for tests/gpu/test_gpu.

    ort_ref.py MODEL.onnx BATCH OUT_DIR

Writes OUT_DIR/model.onnx (a symbolic link), input_<i>.npy (seeded: floats N(0,1), integer inputs as
token ids in [1, 1000)) and output_<j>.npy. Symbolic leading dims are bound to BATCH.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort


def main():
    path, batch, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    os.makedirs(out, exist_ok=True)
    link = os.path.join(out, "model.onnx")
    if os.path.lexists(link):
        os.remove(link)
    m = onnx.load(path, load_external_data=False)
    # Random-weight models can end in a degenerate output (torchvision's ViT head is zero-initialised,
    # MobileNetV2's logits are ~1e-9): also check the features feeding the last node.
    last = next((n for n in reversed(m.graph.node) if m.graph.output[0].name in n.output), None)
    outs = {o.name for o in m.graph.output}
    if last is not None and last.input and last.input[0] not in outs:
        m.graph.output.append(onnx.helper.make_tensor_value_info(last.input[0], onnx.TensorProto.FLOAT, None))
        onnx.save(m, link)
        path = link
    else:
        os.symlink(os.path.abspath(path), link)
    inits = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(7)
    feeds = {}
    for i, vi in enumerate([v for v in m.graph.input if v.name not in inits]):
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else batch for d in tt.shape.dim]
        if tt.elem_type == onnx.TensorProto.INT64:
            a = rng.integers(1, 1000, size=shape, dtype=np.int64)
        elif tt.elem_type == onnx.TensorProto.INT32:
            a = rng.integers(1, 1000, size=shape, dtype=np.int32)
        else:
            a = rng.standard_normal(shape).astype(np.float32)
        feeds[vi.name] = a
        np.save(os.path.join(out, f"input_{i}.npy"), a)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    m = onnx.load(path, load_external_data=False)
    for j, o in enumerate(sess.run(None, feeds)):
        np.save(os.path.join(out, f"output_{j}.npy"), o)
    print(f"{os.path.basename(path)}: batch {batch}, {len(feeds)} inputs, references written to {out}")


if __name__ == "__main__":
    main()
