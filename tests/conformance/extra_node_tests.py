"""Node tests for ops of src/ops/op_list.h that ONNX's own node tests (onnx==1.23.1) do not cover.

gen_node_tests.py writes them into OUT/node/ beside ONNX's, named test_ingot_<op>_..., so the runner's rule
"every op has a passing node test" holds for them too. Each case is one node with seeded random inputs;
its expected output is the op's definition written out in numpy, in float64 (an oracle independent of
ingot's kernels), rounded to the input's dtype. ONNX Runtime agrees with them (it has no double GlobalLpPool,
and MaxRoiPool only in float: its float cases agree exactly).
"""
from collections import namedtuple

import numpy as np

Case = namedtuple("Case", "name model data_sets")


def _one_node_case(name, op, opset, x, y, **attrs):
    return _node_case(name, op, opset, [x], y, **attrs)


def _node_case(name, op, opset, xs, y, **attrs):
    """One node of inputs x0, x1, ... (the arrays xs) and output y."""
    from onnx import helper, numpy_helper

    names = ["x"] if len(xs) == 1 else ["x%d" % i for i in range(len(xs))]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(n, numpy_helper.from_array(x).data_type, list(x.shape))
         for n, x in zip(names, xs)],
        [helper.make_tensor_value_info("y", numpy_helper.from_array(y).data_type, list(y.shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return Case(name, model, [(list(xs), [y])])


def _global_lp_pool(x, p):
    """(sum over the spatial dims of |x|^p)^(1/p), per image and channel."""
    axes = tuple(range(2, x.ndim))
    s = np.sum(np.abs(x.astype(np.float64)) ** p, axis=axes, keepdims=True)
    return (s ** (1.0 / p)).astype(x.dtype)


def _max_roi_pool(x, rois, pooled, scale):
    """MaxRoiPool as ONNX Runtime's CPU kernel defines its windows: corners round(c * scale) (half away
    from zero), ROI size end - start + 1 (at least 1), bin k covering [floor(k * bin), ceil((k + 1) * bin))
    shifted by the start and clipped to the map; the maximum of a bin's pixels, 0 for an empty bin. The
    geometry is computed in x's type (float16 in float32), as the kernels do."""
    g = np.float64 if x.dtype == np.float64 else np.float32
    n_rois, (_, c, h, w) = rois.shape[0], x.shape
    y = np.zeros((n_rois, c) + tuple(pooled), np.float64)

    def rnd(v):
        return float(np.sign(v) * np.floor(np.abs(v) + 0.5))

    for r in range(n_rois):
        roi = rois[r].astype(g)
        b = int(roi[0])
        sw, sh, ew, eh = (int(rnd(roi[k] * g(scale))) for k in (1, 2, 3, 4))
        bin_h = g(max(eh - sh + 1, 1)) / g(pooled[0])
        bin_w = g(max(ew - sw + 1, 1)) / g(pooled[1])
        for ph in range(pooled[0]):
            h0 = min(max(int(np.floor(g(ph) * bin_h)) + sh, 0), h)
            h1 = min(max(int(np.ceil(g(ph + 1) * bin_h)) + sh, 0), h)
            for pw in range(pooled[1]):
                w0 = min(max(int(np.floor(g(pw) * bin_w)) + sw, 0), w)
                w1 = min(max(int(np.ceil(g(pw + 1) * bin_w)) + sw, 0), w)
                if h1 > h0 and w1 > w0:
                    y[r, :, ph, pw] = x[b, :, h0:h1, w0:w1].astype(np.float64).max(axis=(1, 2))
    return y.astype(x.dtype)


def _roi_pool_cases(rng):
    """ROIs inside, across the edges, off the map, inverted and under a pixel; ONNX Runtime runs only float."""
    out = []
    for name, xs, rois, pooled, scale, dtype in (
        ("test_ingot_maxroipool", (1, 3, 8, 8), [[0, 1, 1, 6, 5], [0, 0, 0, 7, 7]], (2, 2), 1.0, np.float32),
        ("test_ingot_maxroipool_scale_batch", (2, 2, 10, 12),
         [[1, 2.2, 3.1, 17.8, 14.4], [0, -6, -3, 9, 30], [1, 20, 3, 4, 1], [0, 30, 30, 40, 40]], (3, 4), 0.5,
         np.float32),
        ("test_ingot_maxroipool_small_bins", (1, 2, 5, 6), [[0, 1, 1, 3, 2], [0, 4.6, 0.4, 5.4, 4.6]], (4, 5), 1.0,
         np.float32),
        ("test_ingot_maxroipool_float16", (1, 2, 6, 7), [[0, 0.5, 1.25, 5.75, 4.5]], (2, 3), 1.0, np.float16),
        ("test_ingot_maxroipool_double", (2, 3, 7, 5), [[1, 0, 0, 4, 6], [0, 1.7, 2.2, 3.3, 5.9]], (3, 2), 1.0,
         np.float64),
    ):
        x = rng.standard_normal(xs).astype(dtype)
        r = np.array(rois, dtype=dtype)
        y = _max_roi_pool(x, r, pooled, scale)
        out.append(_node_case(name, "MaxRoiPool", 22 if dtype != np.float32 else 1, [x, r], y,
                              pooled_shape=list(pooled), spatial_scale=scale))
    return out


def cases():
    rng = np.random.default_rng(2024)
    out = []
    for name, shape, p, dtype in (
        ("test_ingot_globallppool", (1, 3, 5, 5), None, np.float32),
        ("test_ingot_globallppool_1d_p1", (2, 4, 7), 1, np.float32),
        ("test_ingot_globallppool_3d_p3", (2, 3, 4, 5, 6), 3, np.float32),
        ("test_ingot_globallppool_p4_float16", (1, 2, 6, 3), 4, np.float16),
        ("test_ingot_globallppool_double", (2, 2, 3, 4), 2, np.float64),
    ):
        x = rng.standard_normal(shape).astype(dtype)
        attrs = {} if p is None else {"p": p}
        out.append(_one_node_case(name, "GlobalLpPool", 18, x, _global_lp_pool(x, 2 if p is None else p), **attrs))
    return out + _roi_pool_cases(rng)
