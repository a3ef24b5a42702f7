"""Shared helpers of the Python test scripts (check_shapes.py, tests/models/check_*.py).

Only onnx, onnxruntime and numpy: the scripts run on a fresh CI machine after `pip install`.
"""
import fnmatch
import os
import re
import shutil
import subprocess

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OP_LIST = os.path.join(REPO, "src", "ops", "op_list.h")
MANIFEST = os.path.join(REPO, "tests", "conformance", "manifest.txt")

# ONNX TensorProto.DataType -> the dtype names `ingot inspect --json` prints (ingot_dtype_name)
DTYPE_NAMES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string",
    9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 14: "complex64", 15: "complex128",
    16: "bfloat16",
}


def supported_ops(path=OP_LIST):
    """The default-domain ops of op_list.h; the family "fused" is the ingot domain (ops the optimizer
    makes), which ONNX models and tests never name."""
    with open(path) as f:
        return {name for name, family in
                re.findall(r"^\s*INGOT_OP\(\s*(\w+)\s*,\s*\w+\s*,\s*(\w+)\s*\)", f.read(), re.M)
                if family != "fused"}


def unsupported_ops(model, ops):
    """Op types of the model (subgraphs included) that ingot lacks, sorted."""
    out = set()

    def walk(g):
        for n in g.node:
            if n.domain not in ("", "ai.onnx") or n.op_type not in ops:
                out.add(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}")
            for a in n.attribute:
                if a.HasField("g"):
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)

    walk(model.graph)
    return sorted(out)


class Manifest:
    """tests/conformance/manifest.txt: `NAME KIND [args] reason`, NAME an fnmatch pattern, '#' comments."""

    def __init__(self, path=MANIFEST):
        self.entries = []  # (pattern, kind, rest)
        if path and os.path.exists(path):
            with open(path) as f:
                for line in f:
                    line = line.split("#", 1)[0].strip()
                    if not line:
                        continue
                    parts = line.split(None, 2)
                    if len(parts) >= 2:
                        self.entries.append((parts[0], parts[1], parts[2] if len(parts) > 2 else ""))

    def find(self, name, *kinds):
        for pat, kind, rest in self.entries:
            if kind in kinds and fnmatch.fnmatchcase(name, pat):
                return kind, rest
        return None


def find_ingot(explicit=None):
    """The `ingot` CLI: --ingot, $INGOT, a build folder of the repo, or PATH."""
    cands = [explicit, os.environ.get("INGOT")]
    for b in ("build-testinfra", "build", "build-release", "build-debug"):
        cands.append(os.path.join(REPO, b, "ingot"))
    cands.append(shutil.which("ingot"))
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    raise SystemExit("cannot find the ingot CLI: build it or pass --ingot PATH (or set INGOT)")


def run(cmd, timeout=300):
    """Run a command; returns (returncode, stdout, stderr). A timeout is returncode -9."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        return -9, e.stdout or "", f"timed out after {timeout} s"


def first_line(s, n=300):
    s = (s or "").strip()
    for line in s.splitlines():
        if line.strip():
            return line.strip()[:n]
    return ""
