#!/usr/bin/env python3
"""Write ONNX's backend tests that use only ingot's ops, in ONNX's on-disk test layout.

    OUT/node/<test>/model.onnx + test_data_set_0/{input_J.pb,output_J.pb}   ONNX node tests, and
                                                 ingot's test_ingot_* for ops ONNX's do not test
    OUT/simple/<test>/...  OUT/pytorch-converted/<test>/...  OUT/pytorch-operator/<test>/...
    OUT/light/test_light_<model>/...                                          'light' real models
    OUT/excluded.txt       every test left out and why (unsupported op, non-tensor I/O)

The node tests come from onnx.backend.test.case.node.collect_testcases() (the wheel no longer ships
them as files: see shared/design/ONNX-TESTS.md); the model-level suites are copied from the wheel. The
'light' models get the input ONNX's runner uses for them (arange(n)/n, see generate_dummy_data in
onnx/backend/test/runner) and the expected output shipped beside them.

A test is kept when every node (including expanded function bodies, which are the test's graph) is an
op of src/ops/op_list.h in the default domain. The data are regenerated only when the onnx version,
the op list or this script changed (OUT/.stamp), so repeated runs cost nothing.

Usage: gen_node_tests.py OUT [--ops src/ops/op_list.h] [--force] [--quiet]
"""
import argparse
import hashlib
import os
import re
import shutil
import sys
import time
import warnings

ONNX_VERSION = "1.23.1"  # pinned: test data (and expected outputs) change between onnx releases
REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SUITES = ("simple", "pytorch-converted", "pytorch-operator")


def supported_ops(op_list_path):
    """The ONNX op types listed in op_list.h (INGOT_OP(OnnxName, cname, family)).

    The family "fused" is the ingot domain (Pointwise, FusedConv, Attention, ...: ops the optimizer makes,
    descriptors with domain "ingot"): not ONNX ops, so left out. Otherwise ONNX's tests of the
    default-domain op Attention (opset 23) would be taken for ingot.Attention."""
    with open(op_list_path) as f:
        ops = {name for name, family in
               re.findall(r"^\s*INGOT_OP\(\s*(\w+)\s*,\s*\w+\s*,\s*(\w+)\s*\)", f.read(), re.M)
               if family != "fused"}
    if not ops:
        sys.exit(f"gen_node_tests: no INGOT_OP lines in {op_list_path}")
    return ops


def graph_ops(graph):
    """(domain, op_type) of every node, descending into subgraph attributes."""
    out = set()
    for n in graph.node:
        out.add((n.domain, n.op_type))
        for a in n.attribute:
            if a.HasField("g"):
                out |= graph_ops(a.g)
            for g in a.graphs:
                out |= graph_ops(g)
    return out


def unsupported(model, ops):
    """Sorted names of the ops ingot lacks, or [] when the model can be run."""
    return sorted(
        (o if d in ("", "ai.onnx") else f"{d}.{o}")
        for d, o in graph_ops(model.graph)
        if d not in ("", "ai.onnx") or o not in ops
    )


def non_tensor_io(model):
    return [vi.name for vi in list(model.graph.input) + list(model.graph.output)
            if not vi.type.HasField("tensor_type")]


def to_tensor_proto(value, name):
    import numpy as np
    from onnx import TensorProto, numpy_helper

    if isinstance(value, TensorProto):
        t = TensorProto()
        t.CopyFrom(value)
        if not t.name:
            t.name = name
        return t
    return numpy_helper.from_array(np.asarray(value), name)


def write_case(case_dir, model, data_sets):
    """model.onnx plus test_data_set_i/input_j.pb, output_j.pb named after the graph's inputs/outputs."""
    os.makedirs(case_dir)
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    inits = {i.name for i in model.graph.initializer}
    in_names = [i.name for i in model.graph.input if i.name not in inits]
    out_names = [o.name for o in model.graph.output]
    for i, (inputs, outputs) in enumerate(data_sets):
        ds = os.path.join(case_dir, f"test_data_set_{i}")
        os.makedirs(ds)
        for kind, values, names in (("input", inputs, in_names), ("output", outputs, out_names)):
            for j, v in enumerate(values):
                name = names[j] if j < len(names) else ""
                with open(os.path.join(ds, f"{kind}_{j}.pb"), "wb") as f:
                    f.write(to_tensor_proto(v, name).SerializeToString())


def stamp_of(op_list_path):
    import onnx

    h = hashlib.sha256()
    h.update(onnx.__version__.encode())
    for p in (op_list_path, os.path.abspath(__file__), os.path.join(os.path.dirname(__file__), "extra_node_tests.py")):
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="output folder (replaced)")
    ap.add_argument("--ops", default=os.path.join(REPO, "src", "ops", "op_list.h"))
    ap.add_argument("--force", action="store_true", help="regenerate even when the stamp matches")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()

    import onnx

    if onnx.__version__ != ONNX_VERSION:
        sys.exit(f"gen_node_tests: onnx {ONNX_VERSION} is pinned, found {onnx.__version__} "
                 f"(pip install onnx=={ONNX_VERSION})")
    t0 = time.time()
    ops = supported_ops(args.ops)
    stamp_path = os.path.join(args.out, ".stamp")
    stamp = stamp_of(args.ops)
    if not args.force and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if f.read().strip() == stamp:
                if not args.quiet:
                    print(f"gen_node_tests: {args.out} is up to date")
                return 0
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)

    from onnx.backend.test.case import node as node_cases
    from onnx import numpy_helper

    excluded = []  # (suite, name, reason)
    counts = {}
    seen = set()

    def keep(suite, name, model):
        if name in seen:  # names are the manifest's keys: they must be unique across suites
            sys.exit(f"gen_node_tests: test name {name} appears twice ({suite})")
        miss = unsupported(model, ops)
        if miss:
            excluded.append((suite, name, "unsupported op: " + " ".join(miss)))
            return False
        nt = non_tensor_io(model)
        if nt:
            excluded.append((suite, name, "non-tensor graph input/output: " + " ".join(nt)))
            return False
        seen.add(name)
        counts[suite] = counts.get(suite, 0) + 1
        return True

    # ONNX node tests: generated by the onnx package (expected outputs from its numpy references).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the case generators overflow casts on purpose
        cases = node_cases.collect_testcases()
    for c in sorted(cases, key=lambda c: c.name):
        if keep("node", c.name, c.model):
            write_case(os.path.join(args.out, "node", c.name), c.model, c.data_sets)

    # ingot's node tests of ops ONNX's suite does not test (extra_node_tests.py).
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import extra_node_tests

    for c in extra_node_tests.cases():
        if keep("node", c.name, c.model):
            write_case(os.path.join(args.out, "node", c.name), c.model, c.data_sets)

    # Model-level suites shipped in the wheel as files.
    data_dir = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    for suite in SUITES:
        sdir = os.path.join(data_dir, suite)
        for name in sorted(os.listdir(sdir)):
            src = os.path.join(sdir, name)
            if not os.path.isfile(os.path.join(src, "model.onnx")):
                continue
            model = onnx.load(os.path.join(src, "model.onnx"))
            if keep(suite, name, model):
                shutil.copytree(src, os.path.join(args.out, suite, name))

    # 'light' models: ONNX's runner feeds arange(n)/n and compares with light_<m>_output_0.pb.
    ldir = os.path.join(data_dir, "light")
    for fn in sorted(os.listdir(ldir)):
        if not fn.endswith(".onnx"):
            continue
        base = fn[:-5]
        name = "test_" + base
        model = onnx.load(os.path.join(ldir, fn), load_external_data=False)
        if not keep("light", name, model):
            continue
        import numpy as np

        inits = {i.name for i in model.graph.initializer}
        inputs = []
        for x in model.graph.input:
            if x.name in inits:
                continue
            shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in x.type.tensor_type.shape.dim)
            n = int(np.prod(shape))
            inputs.append((np.arange(n).reshape(shape) / n).astype(np.float32))
        outputs = []
        for j in range(len(model.graph.output)):
            t = onnx.TensorProto()
            with open(os.path.join(ldir, f"{base}_output_{j}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            outputs.append(numpy_helper.to_array(t))
        write_case(os.path.join(args.out, "light", name), model, [(inputs, outputs)])

    with open(os.path.join(args.out, "excluded.txt"), "w") as f:
        f.write("# tests left out by gen_node_tests.py: suite name reason\n")
        for suite, name, reason in excluded:
            f.write(f"{suite} {name} {reason}\n")
    with open(stamp_path, "w") as f:
        f.write(stamp + "\n")
    if not args.quiet:
        summary = ", ".join(f"{k} {v}" for k, v in counts.items())
        print(f"gen_node_tests: wrote {sum(counts.values())} tests ({summary}), left out {len(excluded)} "
              f"(see excluded.txt), {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
