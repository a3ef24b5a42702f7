#!/usr/bin/env python3
"""Does the CUDA backend build the zoo's exports? Answered without a GPU.

    lower.py --work DIR --tool BUILD/tests/gpu/test_gpu_lower [--models a,b] [--emulate] [--cases DIR]

For each exported model in --work (export.py's folders, either exporter): a test_gpu_lower case folder
(check.onnx as model.onnx, inputs/*.npy as input_<i>.npy, refs/*.npy as output_<j>.npy, as symbolic
links), then test_gpu_lower on it: the model lowered for the CUDA backend, fp32 and fp16, with the
optimizer (what an engine runs); with --emulate the lowered program also runs in the host emulator
against ONNX Runtime's outputs (minutes for a large model on two cores). One line per model, a count
last; exit status 1 when a model fails. Typical use: the TorchScript and dynamo exports of the zoo, to
see which of torch's exporters writes graphs the CUDA backend cannot take:

    python3 bench/zoo/zoo.py --export-only --exporter dynamo --work /tmp/zoo-dynamo
    python3 bench/zoo/lower.py --work /tmp/zoo-dynamo --tool build/tests/gpu/test_gpu_lower
"""
import argparse
import json
import os
import subprocess
import sys
import time


def case_dir(work, name, cases):
    """The case folder of an exported model, or (None, why)."""
    d = os.path.join(work, name)
    try:
        meta = json.load(open(os.path.join(d, "meta.json")))
    except (OSError, ValueError):
        return None, "not exported"
    if meta.get("status") != "ok":
        return None, f"export failed at {meta.get('stage')}: {meta.get('error', '')[:300]}"
    c = os.path.join(cases, name)
    os.makedirs(c, exist_ok=True)
    links = [("check.onnx", "model.onnx")]
    links += [(os.path.join("inputs", i["name"] + ".npy"), f"input_{k}.npy") for k, i in enumerate(meta["inputs"])]
    links += [(os.path.join("refs", r["file"]), f"output_{k}.npy") for k, r in enumerate(meta["refs"])]
    for src, dst in links:
        dst = os.path.join(c, dst)
        if os.path.lexists(dst):
            os.remove(dst)
        os.symlink(os.path.abspath(os.path.join(d, src)), dst)
    return c, meta.get("exporter", "torchscript")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", required=True, help="export.py's work folder")
    p.add_argument("--tool", required=True, help="the test_gpu_lower binary")
    p.add_argument("--models", help="comma-separated (default: every folder in --work)")
    p.add_argument("--emulate", action="store_true", help="also run the lowered program in the host emulator")
    p.add_argument("--cases", help="where the case folders go (default: WORK/lower_cases)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per model")
    a = p.parse_args()
    cases = a.cases or os.path.join(a.work, "lower_cases")
    names = a.models.split(",") if a.models else sorted(
        n for n in os.listdir(a.work) if os.path.isfile(os.path.join(a.work, n, "meta.json")))
    ok = bad = 0
    for name in names:
        c, why = case_dir(a.work, name, cases)
        if c is None:
            print(f"{name}: FAIL ({why})", flush=True)
            bad += 1
            continue
        t0 = time.time()
        cmd = [a.tool] + ([] if a.emulate else ["--lower-only"]) + [c]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
            out = r.stdout + r.stderr
        except subprocess.TimeoutExpired:
            out = f"FAIL {c} opt: timed out after {a.timeout:.0f} s"
        # the engine's graph is the optimized one; "no-opt" lines (the graph as imported) are informative
        opt = [ln for ln in out.splitlines() if ln.startswith(("PASS", "FAIL")) and " opt " in ln]
        failed = [ln for ln in opt if ln.startswith("FAIL")] or ([] if opt else [out.strip()[-300:]])
        line = " | ".join(ln[:400] for ln in failed) if failed else opt[0][len("PASS ") + len(c) + 1:][:200]
        print(f"{name}: {'FAIL' if failed else 'ok'} ({why}, {time.time() - t0:.0f} s) {line}", flush=True)
        ok += not failed
        bad += bool(failed)
    print(f"{ok} built, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
