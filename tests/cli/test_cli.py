#!/usr/bin/env python3
"""Tests of the `ingot` command as a user runs it: shape binding (--batch, --shapes), errors that name
what is wrong, checksums of every dtype, input-file errors, --compare, bench throughput, unsupported ops.

    test_cli.py --ingot build/ingot [--work DIR] [-v]

Builds its tiny models with the onnx package into DIR (default: a temporary folder), runs the tool and
checks exit codes and what it prints. Ends with "N passed, M failed"; exit status 1 if any failed.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def model(path, nodes, inputs, outputs, opset_imports=None):
    g = helper.make_graph(nodes, os.path.basename(path), inputs, outputs)
    m = helper.make_model(g, opset_imports=opset_imports or [helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def make_models(d):
    m = {}
    # batch fixed at 1
    m["fixed"] = model(os.path.join(d, "fixed.onnx"), [helper.make_node("Relu", ["x"], ["y"], name="relu")],
                       [vi("x", TensorProto.FLOAT, [1, 4])], [vi("y", TensorProto.FLOAT, [1, 4])])
    # symbolic batch only
    m["batch"] = model(os.path.join(d, "batch.onnx"), [helper.make_node("Relu", ["x"], ["y"], name="relu")],
                       [vi("x", TensorProto.FLOAT, ["B", 4])], [vi("y", TensorProto.FLOAT, ["B", 4])])
    # [B,S] token ids and a [B,S] mask: S is not the batch
    m["seq"] = model(os.path.join(d, "seq.onnx"),
                     [helper.make_node("Cast", ["input_ids"], ["f"], to=TensorProto.FLOAT, name="cast"),
                      helper.make_node("Add", ["f", "mask"], ["y"], name="add")],
                     [vi("input_ids", TensorProto.INT64, ["batch", "seq"]), vi("mask", TensorProto.FLOAT, ["batch", "seq"])],
                     [vi("y", TensorProto.FLOAT, ["batch", "seq"])])
    # [B,S,32]
    m["bs32"] = model(os.path.join(d, "bs32.onnx"), [helper.make_node("Relu", ["x"], ["y"], name="relu")],
                      [vi("x", TensorProto.FLOAT, ["B", "S", 32])], [vi("y", TensorProto.FLOAT, ["B", "S", 32])])
    # outputs of dtypes whose checksum used to be 0
    m["dtypes"] = model(os.path.join(d, "dtypes.onnx"),
                        [helper.make_node("Identity", ["h"], ["h_out"], name="id_h"),
                         helper.make_node("Identity", ["u16"], ["u16_out"], name="id_u16"),
                         helper.make_node("Identity", ["u64"], ["u64_out"], name="id_u64")],
                        [vi("h", TensorProto.FLOAT16, [3]), vi("u16", TensorProto.UINT16, [3]),
                         vi("u64", TensorProto.UINT64, [3])],
                        [vi("h_out", TensorProto.FLOAT16, [3]), vi("u16_out", TensorProto.UINT16, [3]),
                         vi("u64_out", TensorProto.UINT64, [3])])
    # two ops ingot does not know, around one it does
    m["unknown"] = model(os.path.join(d, "unknown.onnx"),
                         [helper.make_node("FooOp", ["x"], ["a"], name="foo", domain="com.example"),
                          helper.make_node("Relu", ["a"], ["b"], name="relu"),
                          helper.make_node("BarOp", ["b"], ["y"], name="bar", domain="com.example")],
                         [vi("x", TensorProto.FLOAT, [1, 4])], [vi("y", TensorProto.FLOAT, [1, 4])],
                         opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.example", 1)])
    return m


class Runner:
    def __init__(self, ingot, verbose):
        self.ingot, self.verbose = ingot, verbose
        self.passed, self.failed = 0, 0

    def run(self, *args):
        p = subprocess.run([self.ingot, *args], capture_output=True, text=True, timeout=120)
        if self.verbose:
            print("$ ingot " + " ".join(args) + f"  -> {p.returncode}\n{p.stdout}{p.stderr}")
        return p

    def check(self, name, cond, p=None, detail=""):
        if cond:
            self.passed += 1
            print(f"PASS {name}")
        else:
            self.failed += 1
            print(f"FAIL {name} {detail}")
            if p is not None:
                print(f"  exit {p.returncode}\n  stdout: {p.stdout.strip()[:2000]}\n  stderr: {p.stderr.strip()[:2000]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="ingot-cli-")
    os.makedirs(work, exist_ok=True)
    m = make_models(work)
    r = Runner(a.ingot, a.v)
    f = lambda leaf: os.path.join(work, leaf)  # noqa: E731

    # ---- --batch binds only leading dims, and says so --------------------------------------------
    p = r.run("inspect", m["seq"], "--batch", "4", "--json")
    ok = p.returncode == 0
    if ok:
        ins = {t["name"]: t["shape"] for t in json.loads(p.stdout)["inputs"]}
        ok = ins.get("input_ids") == [4, "seq"] and ins.get("mask") == [4, "seq"]
    r.check("--batch binds the leading dims only ([batch,seq] -> [4,seq])", ok, p)
    r.check("--batch says which dims it bound",
            "bound input_ids[0] (batch) = 4, mask[0] (batch) = 4 (--batch 4)" in p.stderr, p)

    p = r.run("run", m["seq"], "--random-inputs", "--batch", "4")
    r.check("unbound symbolic dim: run fails naming input, dim and --shapes",
            p.returncode != 0 and "input 'input_ids'" in p.stderr and "dim 1 (seq)" in p.stderr
            and "--shapes input_ids:4x<seq>" in p.stderr, p)
    p = r.run("bench", m["bs32"], "--cpu", "--iterations", "3")
    r.check("unbound symbolic dim: bench of [B,S,32] fails instead of timing S=1",
            p.returncode != 0 and "input 'x'" in p.stderr and "dim 1 (S)" in p.stderr and "--shapes" in p.stderr, p)
    p = r.run("plan", m["bs32"], "--batch", "2")
    r.check("unbound symbolic dim: plan fails too", p.returncode != 0 and "dim 1 (S)" in p.stderr, p)

    # ---- --shapes ------------------------------------------------------------------------------------
    p = r.run("run", m["seq"], "--random-inputs", "--shapes", "input_ids:2x5")
    r.check("--shapes binds a whole shape, and the symbols follow to the other inputs",
            p.returncode == 0 and re.search(r"^y\s+float32\s+\[2,5\]", p.stdout, re.M) is not None
            and "bound mask[0] (batch) = 2, mask[1] (seq) = 5 (the same dims as in --shapes)" in p.stderr, p)
    p = r.run("bench", m["bs32"], "--cpu", "--iterations", "3", "--json", "--shapes", "x:3x7x32")
    ok = p.returncode == 0 and json.loads(p.stdout).get("batch") == 3
    r.check("--shapes on bench: runs at the given shape (batch 3)", ok, p)
    p = r.run("plan", m["bs32"], "--shapes", "x:2x9x32", "--json")
    r.check("--shapes on plan", p.returncode == 0, p)
    p = r.run("inspect", m["bs32"], "--shapes", "x:2x9x32", "--json")
    ok = p.returncode == 0 and json.loads(p.stdout)["outputs"][0]["shape"] == [2, 9, 32]
    r.check("--shapes on inspect", ok, p)
    p = r.run("run", m["seq"], "--random-inputs", "--shapes", "nope:2x5")
    r.check("--shapes with an unknown input name is an error listing the inputs",
            p.returncode != 0 and "no input 'nope'" in p.stderr and "input_ids" in p.stderr, p)
    p = r.run("run", m["seq"], "--random-inputs", "--shapes", "input_ids:2xfive")
    r.check("--shapes with malformed dims is a usage error", p.returncode == 2 and "NAME:DIMS" in p.stderr, p)
    p = r.run("run", m["seq"], "--random-inputs", "--shapes", "input_ids:2x5", "--batch", "3")
    r.check("--batch contradicting --shapes is an error", p.returncode != 0 and "'batch'" in p.stderr, p)
    p = r.run("run", m["fixed"], "--random-inputs", "--shapes", "x:2x4")
    r.check("--shapes contradicting a fixed dim is an error", p.returncode != 0 and "axis 0 must be 1" in p.stderr, p)

    # ---- inspect without --batch binds 1 and says so ------------------------------------------------
    p = r.run("inspect", m["batch"])
    r.check("inspect binds 1 for its costs and says so",
            p.returncode == 0 and "x[0] (B) = 1 (no --batch given" in p.stdout, p)

    # ---- bench throughput counts what ran ----------------------------------------------------------
    p = r.run("bench", m["fixed"], "--cpu", "--batch", "16", "--iterations", "20", "--json")
    ok = p.returncode == 0
    if ok:
        js = json.loads(p.stdout)
        mean = js["latency_host_ms"]["mean"]
        ok = js["batch"] == 1 and abs(js["throughput_per_s"] - 1e3 / mean) <= 0.02 * 1e3 / mean + 0.01
    r.check("bench --batch 16 on a fixed-batch model: batch 1 and throughput of batch 1", ok, p)
    r.check("bench --batch on a fixed-batch model warns that it binds nothing",
            "--batch 16 binds nothing" in p.stderr, p)
    p = r.run("bench", m["batch"], "--cpu", "--batch", "16", "--iterations", "20", "--json")
    ok = p.returncode == 0
    if ok:
        js = json.loads(p.stdout)
        mean = js["latency_host_ms"]["mean"]
        ok = js["batch"] == 16 and abs(js["throughput_per_s"] - 16e3 / mean) <= 0.02 * 16e3 / mean + 0.01
    r.check("bench --batch 16 on a symbolic-batch model: throughput of batch 16", ok, p)
    p = r.run("bench", m["fixed"], "--cpu", "--iterations", "3", "--profile", "--no-graph", "--workspace", "64",
              "--fp16")
    r.check("bench on the CPU warns about every option it ignores",
            p.returncode == 0 and all(w in p.stderr for w in
                                      ["--profile ignored", "--no-graph ignored",
                                       "--workspace, --mem-limit and --deterministic are ignored", "--fp16 ignored"]), p)
    # byte counts: digits with K/M/G; anything else is refused before any work
    p = r.run("build", m["fixed"], "-o", os.path.join(work, "bad.ingot"), "--cpu", "--workspace", "12Q")
    r.check("build --workspace 12Q is refused with what a byte count looks like",
            p.returncode == 2 and "expects a byte count" in p.stderr, p)
    p = r.run("bench", m["fixed"], "--cpu", "--iterations", "1", "--mem-limit", "-5")
    r.check("bench --mem-limit -5 is refused", p.returncode == 2 and "expects a byte count" in p.stderr, p)

    # ---- missing inputs ------------------------------------------------------------------------------
    p = r.run("run", m["fixed"])
    r.check("a missing input is an error naming it",
            p.returncode != 0 and "input 'x' (float32 [1,4]) is not given" in p.stderr and "--random-inputs" in p.stderr,
            p)
    p = r.run("run", m["fixed"], "--random-inputs")
    r.check("--random-inputs: runs and says which inputs were generated",
            p.returncode == 0 and "random inputs (seed 0): x float32 [1,4]" in p.stderr, p)
    p = r.run("run", m["fixed"], "--seed", "3")
    r.check("--seed implies random inputs", p.returncode == 0 and "random inputs (seed 3)" in p.stderr, p)

    # ---- checksums of every dtype --------------------------------------------------------------------
    np.save(f("h.npy"), np.array([1.5, -2.25, 0.5], dtype=np.float16))
    np.save(f("u16.npy"), np.array([65535, 1, 2], dtype=np.uint16))
    np.save(f("u64.npy"), np.array([1, 2, 1 << 40], dtype=np.uint64))
    p = r.run("run", m["dtypes"], "--input", f"h={f('h.npy')}", "--input", f"u16={f('u16.npy')}",
              "--input", f"u64={f('u64.npy')}")
    out = p.stdout
    r.check("checksum of a float16 output", p.returncode == 0 and re.search(
        r"^h_out\s+float16\s+\[3\]\s+sum -0\.25\s+abs-sum 4\.25$", out, re.M) is not None, p)
    r.check("checksum of a uint16 output (unsigned)", re.search(
        r"^u16_out\s+uint16\s+\[3\]\s+sum 65538\s+abs-sum 65538$", out, re.M) is not None, p)
    r.check("checksum of a uint64 output", re.search(
        r"^u64_out\s+uint64\s+\[3\]\s+sum 1\.09951163e\+12\s+abs-sum 1\.09951163e\+12$", out, re.M) is not None, p)

    # ---- input file errors name the file kind --------------------------------------------------------
    with open(f("garbled.npy"), "wb") as fh:
        fh.write(b"\x93NUMPY\x01\x00\xff\x7f{'descr': '<f4'")
    p = r.run("run", m["fixed"], "--input", f"x={f('garbled.npy')}")
    r.check("a garbled .npy (with the magic) is reported as .npy",
            p.returncode != 0 and ".npy" in p.stderr and "protobuf" not in p.stderr.lower()
            and "TensorProto" not in p.stderr, p)
    with open(f("broken_magic.npy"), "wb") as fh:
        fh.write(b"\x93NUMPZ\x01\x00" + b"\x00" * 40)
    p = r.run("run", m["fixed"], "--input", f"x={f('broken_magic.npy')}")
    r.check("a .npy with a broken magic is reported as .npy",
            p.returncode != 0 and "broken .npy file" in p.stderr, p)
    with open(f("text.npy"), "wb") as fh:
        fh.write(b"this is not an array\n")
    p = r.run("run", m["fixed"], "--input", f"x={f('text.npy')}")
    r.check("a .npy-named file without the magic says it is not .npy (nor TensorProto)",
            p.returncode != 0 and "not a .npy file" in p.stderr and "TensorProto" in p.stderr, p)
    with open(f("junk.bin"), "wb") as fh:
        fh.write(b"\xff" * 11)
    p = r.run("run", m["fixed"], "--input", f"x={f('junk.bin')}")
    r.check("an unknown format says neither .npy nor TensorProto",
            p.returncode != 0 and "neither a .npy file" in p.stderr and "nor an ONNX TensorProto" in p.stderr, p)

    # ---- --compare ---------------------------------------------------------------------------------
    x = np.array([[0.5, -1.0, 2.0, -0.25]], dtype=np.float32)
    np.save(f("x.npy"), x)
    ref = f("ref")
    os.makedirs(ref, exist_ok=True)
    np.save(os.path.join(ref, "y.npy"), np.maximum(x, 0))
    p = r.run("run", m["fixed"], "--input", f"x={f('x.npy')}", "--compare", ref)
    r.check("--compare passes against the right reference (.npy)",
            p.returncode == 0 and re.search(r"vs .*y\.npy: max abs err 0, max rel err 0, cosine 1\.0+: ok", p.stdout)
            is not None, p)
    pb = f("ref_pb")
    os.makedirs(pb, exist_ok=True)
    with open(os.path.join(pb, "output_0.pb"), "wb") as fh:
        fh.write(numpy_helper.from_array(np.maximum(x, 0), "y").SerializeToString())
    p = r.run("run", m["fixed"], "--input", f"x={f('x.npy')}", "--compare", pb)
    r.check("--compare passes against ONNX test data (output_0.pb)",
            p.returncode == 0 and "output_0.pb" in p.stdout and ": ok" in p.stdout, p)
    bad = f("ref_bad")
    os.makedirs(bad, exist_ok=True)
    np.save(os.path.join(bad, "y.npy"), np.maximum(x, 0) + np.array([[0, 0, 1e-3, 0]], dtype=np.float32))
    p = r.run("run", m["fixed"], "--input", f"x={f('x.npy')}", "--compare", bad)
    r.check("--compare fails (exit 1) beyond the default tolerance",
            p.returncode == 1 and "FAIL" in p.stdout and "max abs err 0.001" in p.stdout
            and "1 of 4 elements" in p.stdout, p)
    p = r.run("run", m["fixed"], "--input", f"x={f('x.npy')}", "--compare", bad, "--atol", "0.01")
    r.check("--compare passes with a looser --atol", p.returncode == 0 and ": ok" in p.stdout, p)
    p = r.run("run", m["fixed"], "--input", f"x={f('x.npy')}", "--compare", work + "/nowhere")
    r.check("--compare without a reference fails naming what it looked for",
            p.returncode == 1 and "looked for y.npy" in p.stdout, p)
    outd = f("out")
    p = r.run("run", m["fixed"], "--input", f"x={f('x.npy')}", "--output-dir", outd)
    q = r.run("run", m["fixed"], "--input", f"x={f('x.npy')}", "--compare", outd)
    r.check("--compare against what --output-dir wrote", p.returncode == 0 and q.returncode == 0, q)

    # ---- devices -------------------------------------------------------------------------------------
    p = r.run("run", m["fixed"], "--input", f"x={f('x.npy')}", "--device", "cuda", "--compare", ref)
    if p.returncode == 0:
        r.check("--device cuda runs and matches the reference", ": ok" in p.stdout, p)
    else:
        r.check("--device cuda without a GPU says so plainly and names --device cpu",
                ("no usable NVIDIA GPU" in p.stderr or "no CUDA backend" in p.stderr)
                and "--device cpu" in p.stderr and "insufficient" not in p.stderr.split("(")[0], p)
    p = r.run("run", m["fixed"], "--random-inputs", "--device", "tpu")
    r.check("--device with an unknown value is a usage error", p.returncode == 2, p)

    # ---- inspect lists the whole graph and every unsupported node -----------------------------------
    p = r.run("inspect", m["unknown"])
    out = p.stdout
    r.check("inspect of a model with unknown ops lists the whole graph",
            p.returncode != 0 and all(re.search(rf"\b{n}\b", out) for n in ["foo", "relu", "bar"]), p)
    r.check("inspect lists every unsupported node",
            "unsupported: 2 of 3 nodes" in out and "node 'foo' (FooOp)" in out and "node 'bar' (BarOp)" in out, p)
    p = r.run("inspect", m["fixed"])
    r.check("inspect of a supported model says so per backend",
            p.returncode == 0 and "CPU backend: every node has a kernel" in p.stdout, p)

    # ---- engine files: ingot build, then every subcommand on the .ingot ------------------------------
    eng = f("batch.ingot")
    p = r.run("build", m["batch"], "-o", eng, "--cpu", "--batch", "2")
    r.check("build writes a CPU engine file", p.returncode == 0 and "CPU engine" in p.stdout and os.path.exists(eng), p)
    x2 = np.array([[-1, 2, -3, 4], [5, -6, 7, -8]], dtype=np.float32)
    np.save(f("x2.npy"), x2)
    p = r.run("run", eng, "--input", f"x={f('x2.npy')}", "--output-dir", f("eng_out"))
    ok = p.returncode == 0 and os.path.exists(os.path.join(f("eng_out"), "y.npy"))
    r.check("run on an engine file", ok and np.array_equal(np.load(os.path.join(f("eng_out"), "y.npy")),
                                                          np.maximum(x2, 0)), p)
    p = r.run("run", eng, "--random-inputs")
    r.check("run on an engine file uses its default shapes (batch 2)",
            p.returncode == 0 and re.search(r"^y\s+float32\s+\[2,4\]", p.stdout, re.M) is not None, p)
    p = r.run("run", eng, "--random-inputs", "--batch", "3")
    r.check("--batch on an engine file runs another batch",
            p.returncode == 0 and re.search(r"^y\s+float32\s+\[3,4\]", p.stdout, re.M) is not None, p)
    p = r.run("inspect", eng)
    r.check("inspect of an engine file shows its graph", p.returncode == 0 and "engine file" in p.stdout
            and "relu" in p.stdout, p)
    p = r.run("plan", eng, "--json")
    r.check("plan of an engine file", p.returncode == 0 and json.loads(p.stdout).get("arena_bytes", 0) > 0, p)
    p = r.run("bench", eng, "--iterations", "3", "--json")
    r.check("bench of an engine file", p.returncode == 0 and json.loads(p.stdout).get("batch") == 2, p)
    p = r.run("run", eng, "--random-inputs", "--device", "cuda")
    r.check("a CPU engine file asked to run on the GPU says it needs the model",
            p.returncode != 0 and "CPU engine" in p.stderr and "ONNX model" in p.stderr, p)
    # an input whose values decide shapes: nothing to plan ahead, still an engine file
    sm = model(f("shape_input.onnx"), [helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
               [vi("x", TensorProto.FLOAT, [4, 6]), vi("s", TensorProto.INT64, [2])], [vi("y", TensorProto.FLOAT, None)])
    np.save(f("x46.npy"), np.arange(24, dtype=np.float32).reshape(4, 6))
    np.save(f("s38.npy"), np.array([3, 8], dtype=np.int64))
    p = r.run("build", sm, "-o", f("shape_input.ingot"), "--cpu")
    q = r.run("run", f("shape_input.ingot"), "--input", f"x={f('x46.npy')}", "--input", f"s={f('s38.npy')}")
    r.check("an engine file of a model whose shapes come from an input's values",
            p.returncode == 0 and q.returncode == 0 and re.search(r"^y\s+float32\s+\[3,8\]\s+sum 276", q.stdout, re.M)
            is not None, q)
    # damaged and stale files
    data = bytearray(open(eng, "rb").read())
    data[200] ^= 0x01
    bad = f("bad.ingot")
    open(bad, "wb").write(bytes(data))
    p = r.run("run", bad, "--random-inputs")
    r.check("a damaged engine file is refused with a message",
            p.returncode != 0 and "INGOT_ERR_ENGINE_FILE" in p.stderr and "engine file" in p.stderr, p)
    stale = f("stale.ingot")
    open(stale, "wb").write(forge_version(open(eng, "rb").read(), b"0.1.0", b"9.9.9"))
    p = r.run("run", stale, "--random-inputs")
    r.check("an engine file of another ingot version: a mismatch naming what differs",
            p.returncode != 0 and "INGOT_ERR_ENGINE_MISMATCH" in p.stderr and "ingot: built with 9.9.9" in p.stderr, p)
    p = r.run("run", stale, "--random-inputs", "--rebuild-on-mismatch", m["batch"])
    q = r.run("run", stale, "--random-inputs")
    r.check("--rebuild-on-mismatch rebuilds it from the model, with the shapes it records, and writes it back",
            p.returncode == 0 and "rebuilding it from" in p.stderr and q.returncode == 0
            and re.search(r"^y\s+float32\s+\[2,4\]", q.stdout, re.M) is not None, q)

    print(f"{r.passed} passed, {r.failed} failed")
    return 1 if r.failed else 0


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli), as src/engine/crc32c.c."""
    table = crc32c.table
    if table is None:
        table = crc32c.table = []
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            table.append(c)
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = (crc >> 8) ^ table[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF


crc32c.table = None


def forge_version(data, old, new):
    """The engine file with `old` replaced by `new` in its fingerprint section, every checksum valid."""
    import struct
    f = bytearray(data)
    n = struct.unpack_from("<I", f, 16)[0]
    for i in range(n):
        e = 64 + 32 * i
        kind, _, off, size = struct.unpack_from("<IIQQ", f, e)
        if kind == struct.unpack("<I", b"FPRT")[0]:
            sec = bytes(f[off:off + size])
            assert old in sec
            f[off:off + size] = sec.replace(old, new, 1)
            struct.pack_into("<I", f, e + 24, crc32c(f[off:off + size]))
    struct.pack_into("<I", f, 40, crc32c(f[64:64 + 32 * n]))
    struct.pack_into("<I", f, 60, crc32c(f[:60]))
    return bytes(f)


if __name__ == "__main__":
    sys.exit(main())
