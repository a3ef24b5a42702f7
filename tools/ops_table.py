#!/usr/bin/env python3
"""Write docs/OPS.md: every ONNX default-domain op of opsets 11-21 with its status on ingot's CPU and
CUDA backends.

    python3 tools/ops_table.py [--out docs/OPS.md] [--check]

Sources: onnx.defs (the ops and their versions), src/ops/op_list.h (what ingot implements: a CPU
reference kernel for every op of the list) and src/cuda/lower_table.c (CU_NONE: no CUDA lowering; a
model with such a node runs on the CPU when the backend is AUTO). --check exits 1 when the file on disk differs from what
would be written (for CI).
"""
import argparse
import os
import re
import sys

import onnx
from onnx import defs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPSETS = range(11, 22)

# Why an op is left out, by family; ops not named here: "not implemented yet".
REASONS = [
    ("training-only ops: ingot is an inference engine", [
        "Gradient", "Momentum", "Adagrad", "Adam", "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"]),
    ("sequences, optionals and maps are not tensors: ingot's values are tensors", [
        "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert", "SequenceLength",
        "SequenceMap", "SplitToSequence", "ConcatFromSequence", "Optional", "OptionalGetElement",
        "OptionalHasElement"]),
    ("strings are not a supported dtype", [
        "StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch", "TfIdfVectorizer"]),
    ("control flow (sub-graphs) is not supported", ["Loop", "Scan"]),
    ("random ops: results depend on a generator no two engines share", [
        "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli"]),
    ("quantized (int8/float8) ops: not supported yet", [
        "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul",
        "ConvInteger", "MatMulInteger"]),
    ("recurrent ops: not supported yet (exporters of current models unroll or use attention)", [
        "RNN", "GRU", "LSTM"]),
    ("outputs whose shape depends on values (data-dependent sizes): not supported yet", [
        "NonZero", "Unique", "NonMaxSuppression", "Compress"]),
    ("signal processing and image decoding: not supported yet", [
        "DFT", "STFT", "HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix", "ImageDecoder"]),
]


# What the CUDA backend leaves out of an op it lowers (a model with such a node runs on the CPU under AUTO).
CUDA_NOTES = {
    "ConvTranspose": "CUDA: 1-D and 2-D (cuDNN backward data), not 3-D",
}


# Ops that never reach a backend: replaced when the model loads (either backend then runs what replaced them).
AT_LOAD = {
    "If": "replaced at load by the branch it takes when its condition is a build-time constant (shape tests "
          "of exports); refused, naming the node, when the condition is known only at run time",
}


# Ops the optimizer rewrites into ops the CUDA backend lowers (src/opt/canonical.c): CUDA runs them in every
# engine built with the optimizer on (the default).
BY_OPTIMIZER = {
    "CastLike": "CUDA: as the Cast the optimizer's `canonical` pass makes of it (built with the optimizer off: "
                "CPU only)",
    "GlobalLpPool": "CUDA: p = 2 and 1 as the ReduceL2 / ReduceL1 over the spatial axes that the optimizer's "
                    "`canonical` pass makes of it; other p CPU only",
}


def reason_of(op):
    for why, ops in REASONS:
        if op in ops:
            return why
    return "not implemented yet"


def onnx_ops():
    """{op: [versions in 11..21 at which a new version appeared or the op is available]}"""
    names = sorted({s.name for s in defs.get_all_schemas_with_history() if s.domain == ""})
    out = {}
    for name in names:
        since = set()
        for o in OPSETS:
            try:
                s = defs.get_schema(name, o, "")
            except Exception:  # not defined yet at this opset
                continue
            if s.deprecated:
                continue
            since.add(s.since_version)
        if since:
            out[name] = sorted(since)
    return out


def ingot_ops():
    """{onnx name: c name} of the default domain, from op_list.h (the ingot domain comes last)."""
    ops = {}
    ingot_domain = False
    with open(os.path.join(REPO, "src", "ops", "op_list.h")) as f:
        for line in f:
            if "the ingot domain" in line:
                ingot_domain = True
            m = re.match(r"\s*INGOT_OP\((\w+),\s*(\w+),\s*(\w+)\)", line)
            if m and not ingot_domain:
                ops[m.group(1)] = m.group(2)
    return ops


def cuda_entries():
    """{c name: True when the entry has a lowering} from lower_table.c's #define CU_<name> lines."""
    text = open(os.path.join(REPO, "src", "cuda", "lower_table.c")).read()
    text = re.sub(r"\\\n", " ", text)  # join continued macro lines
    macros = {}
    for m in re.finditer(r"^#define\s+(CU_\w+)\s*(.*)$", text, re.M):
        macros[m.group(1)] = re.sub(r"/\*.*?\*/", "", m.group(2)).strip()

    def lowered(body, depth=0):
        if depth > 8:
            return False
        if body.startswith("{"):
            return not re.match(r"\{\s*NULL\s*,", body)
        if body in macros:
            return lowered(macros[body], depth + 1)
        return False

    return {k[3:]: lowered(v) for k, v in macros.items() if k not in ("CU_NONE",)}


def render():
    ops = onnx_ops()
    have = ingot_ops()
    cuda = cuda_entries()
    n_cpu = n_cuda = 0
    rows = []
    for op, vers in ops.items():
        c = have.get(op)
        cpu = "yes" if c else "no"
        gpu = "yes" if c and (cuda.get(c) or op in AT_LOAD or op in BY_OPTIMIZER) else "no"
        if op in AT_LOAD:
            n_cpu += 1
            n_cuda += 1
            note = AT_LOAD[op]
        elif c:
            n_cpu += 1
            n_cuda += gpu == "yes"
            note = BY_OPTIMIZER.get(op, CUDA_NOTES.get(op, "")) if gpu == "yes" else "CPU only: AUTO runs it on the CPU"
        else:
            note = reason_of(op)
        rows.append(f"| {op} | {', '.join(map(str, vers))} | {cpu} | {gpu} | {note} |")
    head = [
        "# ONNX operators in ingot",
        "",
        "Generated by `tools/ops_table.py` from onnx.defs (onnx " + onnx.__version__ + "), `src/ops/op_list.h` and",
        "`src/cuda/lower_table.c`; do not edit by hand. Every ONNX default-domain operator defined at some opset",
        "from 11 to 21, with the schema versions in use at those opsets; **CPU**: ingot has the op (a reference",
        "kernel; attribute values or dtypes it does not support fail at load naming the node); **CUDA**: the",
        "CUDA backend lowers it (otherwise an engine built for AUTO runs the whole model on the CPU, saying",
        "why, and one built for CUDA lists every such node). The ingot-domain fused ops of the optimizer are in",
        "docs/OPTIMIZER.md.",
        "",
        f"{len(ops)} operators: {n_cpu} on the CPU, {n_cuda} on CUDA.",
        "",
        "| op | versions at opsets 11-21 | CPU | CUDA | notes |",
        "|----|--------------------------|-----|------|-------|",
    ]
    return "\n".join(head + rows) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "OPS.md"))
    ap.add_argument("--check", action="store_true", help="fail when the file is out of date")
    a = ap.parse_args()
    text = render()
    if a.check:
        old = open(a.out).read() if os.path.exists(a.out) else ""
        if old != text:
            print(f"{a.out} is out of date: run tools/ops_table.py", file=sys.stderr)
            return 1
        return 0
    with open(a.out, "w") as f:
        f.write(text)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
