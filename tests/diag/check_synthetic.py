#!/usr/bin/env python3
"""Is each synthetic model's bottleneck found? (docs/DIAGNOSE.md, issue 11)

    check_synthetic.py --ingot BUILD/ingot --work DIR [--cpu] [--model M.onnx ...]

Makes the models of make_synthetic.py and runs `ingot profile --json` (and `ingot sweep`) on each:

  on the GPU (the default; scripts/gpu_check.sh or the lead's command):
    tiny_chain       batch 1     launch-bound (latency steps and gaps; graph replay saves time)
    big_elementwise  batch 64    bandwidth-bound, its step at >= 70% of the measured copy bandwidth
    big_gemm --fp16  batch 4096  compute-bound, the GEMM at >= 60% of the fp16 rate
    capacity         sweep 512..8192 (32 MB a sample): stops where device memory runs out, saying so
    --model M        (any number) a real model at fp16 batch 32, profiled in under 10 s
  and, on every GPU profile, the memory accounts within 2 MiB of what cudaMemGetInfo says is used,
  and prints, per model, the sum of the step times (each timed inside a graph replay), the replay and the
  step-by-step run (the steps checked within 5% of the replay for the real models).

  with --cpu (CI): the same models at CPU sizes against the CPU's ceilings, checking what holds there:
    every report well formed (classes adding up, costs on every step), the GEMM the fastest arithmetic
    of the four, the tiny chain's steps all small, and the capacity sweep stopping at --mem-limit.
Exit status 1 on any failed check.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def check(cond, what):
    print(("  ok    " if cond else "  FAIL  ") + what)
    if not cond:
        failures.append(what)
    return cond


def ingot(args, env, timeout=600):
    print("$ ingot " + " ".join(args))
    r = subprocess.run([ARGS.ingot] + args, capture_output=True, text=True, env=env, timeout=timeout)
    if r.returncode != 0:
        print(r.stderr[-3000:])
    return r


def profile(model, extra, env):
    r = ingot(["profile", model, "--json"] + extra, env)
    if not check(r.returncode == 0, f"ingot profile {os.path.basename(model)} {' '.join(extra)}"):
        return None
    d = json.loads(r.stdout)
    shares = sum(c["share"] for c in d["classes"].values())
    check(abs(shares - 1) < 1e-6, f"  class shares add up to 1 ({shares:.4f})")
    check(all(s["ms"] > 0 and s["class"] in d["classes"] for s in d["steps"]), "  every step timed and classed")
    run = d["run"]
    print(f"  {d['bottleneck']}: {d['verdict']}")
    print(f"  steps sum {run['steps_ms']:.4f} ms, graph replay {run['run_ms']:.4f} ms, step-by-step run "
          f"{run['run_stream_ms']:.4f} ms")
    mem = d["memory"]
    if mem["device"]:
        # the accounts against cudaMemGetInfo after every run: weights, arena, handles, graph, context, the
        # caller's buffers; the driver rounds each allocation up to 2 MiB pages
        check(abs(mem["residual"]) <= 2 * 1024 * 1024,
              f"  memory accounts within 2 MiB of cudaMemGetInfo ({mem['residual'] / 1e6:+.3f} MB not explained; "
              f"CUDA Graph {mem['graph_reserved'] / 1e6:.3f} MB)")
    return d


def main_gpu(m, env):
    r = ingot(["device", "--json"], env)
    if check(r.returncode == 0, "ingot device measured the GPU"):
        c = json.loads(r.stdout)
        print(f"  {c['device']}: copy {c['copy_gbs']:.0f} GB/s, fp16 {c['fp16_tflops']:.0f}, fp32 "
              f"{c['fp32_tflops']:.1f} TFLOP/s, launch {c['launch_us']:.2f} us, graph node {c['graph_node_us']:.2f} us")
    for model in ARGS.model:
        # a real model: profiled fast enough to use (< 10 s with the build and tuning), accounts complete
        t0 = time.time()
        d = profile(model, ["--batch", "32", "--fp16"], env)
        check(d is not None and time.time() - t0 < 10,
              f"{os.path.basename(model)}: profiled in {time.time() - t0:.1f} s (< 10 s)")
        if d:  # the target for real models; a chain of 200 steps of 5 us carries its events' cost visibly
            # the steps are timed inside a graph replay (docs/DIAGNOSE.md): they sum to that replay
            run = d["run"]
            ref, what = (run["run_ms"], "graph replay") if run["graphs"] else (run["run_stream_ms"], "step-by-step run")
            off = abs(run["steps_ms"] - ref) / max(ref, 1e-12)
            # each step's event node costs the pipeline a little; the profile takes up to 5 us a step of
            # it off (probe_ms), and more than that leaves the sum off
            check(off <= 0.05, f"{os.path.basename(model)}: the steps sum to within 5% of the {what} "
                               f"({100 * off:.1f}%; probes {1e3 * run.get('probe_ms', 0):.2f} us a step)")
    d = profile(m["tiny_chain"], ["--batch", "1"], env)
    if d:
        check(d["bottleneck"] == "launch", "tiny_chain: launch-bound")
        lat = d["classes"]["latency"]["steps"]
        check(lat >= 0.9 * len(d["steps"]), f"tiny_chain: {lat} of {len(d['steps'])} steps latency-bound")
        check(d["run"]["graph_gain"] > 0.1, f"tiny_chain: graph replay saves {100 * d['run']['graph_gain']:.0f}%")
    d = profile(m["big_elementwise"], ["--batch", "64"], env)
    if d:
        check(d["bottleneck"] == "bandwidth", "big_elementwise: bandwidth-bound")
        top = max(d["steps"], key=lambda s: s["ms"])
        check(top["pct_bw"] >= 0.7, f"big_elementwise: its step at {100 * top['pct_bw']:.0f}% of copy bandwidth (>= 70%)")
    d = profile(m["big_gemm"], ["--batch", "4096", "--fp16"], env)
    if d:
        check(d["bottleneck"] == "compute", "big_gemm fp16: compute-bound")
        top = max(d["steps"], key=lambda s: s["ms"])
        check(top["class"] == "compute", f"big_gemm fp16: the GEMM at {100 * top['pct_flops']:.0f}% of the fp16 rate")
    # the field report's experiment on a bandwidth-bound model: batch 16 -> 24 -> 32 multiplies the memory
    # and leaves the throughput where it was (saving memory or adding batch does not move a bandwidth roof)
    r = ingot(["sweep", m["big_elementwise"], "--batch", "16,24,32", "--json"], env)
    if check(r.returncode == 0, "ingot sweep big_elementwise --batch 16,24,32"):
        sw = json.loads(r.stdout)["sweep"]
        print("  batch  samples/s  latency ms  peak MB  of which batch MB  bottleneck")
        for w in sw:
            print(f"  {w['batch']:5d}  {w['throughput']:9.1f}  {w['latency_ms']:10.4f}  {w['peak_bytes'] / 1e6:7.1f}  "
                  f"{w['batch_bytes'] / 1e6:17.1f}  {w['bottleneck']}")
        if check(len(sw) == 3 and all(w["ok"] for w in sw), "big_elementwise: batches 16, 24 and 32 ran"):
            gain = sw[2]["throughput"] / max(sw[0]["throughput"], 1e-9)
            grow = sw[2]["peak_bytes"] / max(sw[0]["peak_bytes"], 1.0)
            act = sw[2]["batch_bytes"] / max(sw[0]["batch_bytes"], 1.0)
            check(all(w["bottleneck"] == "bandwidth" for w in sw), "big_elementwise: bandwidth-bound at every batch")
            # the activations double with the batch; the whole (weights, library handles, the graph's pool
            # besides) grows less (1.79x on the H200, 2026-12-02), but by far more than the throughput
            check(act >= 1.9 and grow >= 1.5 and 0.85 <= gain <= 1.15,
                  f"big_elementwise: batch 32 holds {grow:.2f}x the memory of batch 16 ({act:.2f}x the activations) "
                  f"for {gain:.2f}x the throughput")
    r = ingot(["sweep", m["capacity"], "--batch", "512,1024,2048,4096,8192", "--json"], env, timeout=900)
    if check(r.returncode == 0, "ingot sweep capacity"):
        sw = json.loads(r.stdout)["sweep"]
        for w in sw:
            print(f"  batch {w['batch']}: {'ok' if w['ok'] else 'stop'} {w['throughput']:.1f}/s "
                  f"{w['peak_bytes'] / 1e9:.2f} GB {w['bottleneck']} {w['note']}")
        check(any(w["ok"] for w in sw) and not sw[-1]["ok"] and "out of memory" in sw[-1]["note"],
              "capacity: the sweep stops where device memory runs out, saying so")


def main_cpu(m, env):
    ds = {}
    for name, extra in (("tiny_chain", ["--batch", "1"]), ("big_elementwise", ["--batch", "2"]),
                        ("big_gemm", ["--batch", "64"]), ("capacity", ["--batch", "1"])):
        d = profile(m[name], ["--cpu"] + extra, env)
        if d:
            ds[name] = d
            check(all(s["bytes_read"] + s["bytes_written"] > 0 for s in d["steps"]), f"{name}: bytes on every step")
    if "tiny_chain" in ds:
        d = ds["tiny_chain"]
        check(len(d["steps"]) >= 100, f"tiny_chain: {len(d['steps'])} steps")
        check(max(s["ms"] for s in d["steps"]) < 5, "tiny_chain: every step under 5 ms")
    if "big_gemm" in ds:
        best = max(s["tflops"] for s in ds["big_gemm"]["steps"])
        others = [s["tflops"] for n, d in ds.items() if n != "big_gemm" for s in d["steps"]]
        check(best > max(others), f"big_gemm: the fastest arithmetic ({best * 1e3:.1f} GFLOP/s vs "
                                  f"{max(others) * 1e3:.1f})")
        check(ds["big_gemm"]["steps"][0]["intensity"] > 10, "big_gemm: high arithmetic intensity")
    if "big_elementwise" in ds:
        d = ds["big_elementwise"]
        check(len(d["steps"]) == 1, "big_elementwise: the chain runs as one fused step")
        check(d["steps"][0]["intensity"] <= 2, "big_elementwise: low arithmetic intensity (8 ops per 8 bytes)")
    r = ingot(["sweep", m["capacity"], "--cpu", "--batch", "1,2,4,8", "--mem-limit", "100M", "--json"], env)
    if check(r.returncode == 0, "ingot sweep capacity --cpu --mem-limit 100M"):
        sw = json.loads(r.stdout)["sweep"]
        check([w["batch"] for w in sw] == [1, 2, 4] and sw[1]["ok"] and not sw[2]["ok"],
              "capacity: batches 1 and 2 fit (33.6 MB per sample), the sweep stops at 4, 8 is not tried")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--model", action="append", default=[], help="a real model to profile too (GPU: fp16, batch 32)")
    ARGS = ap.parse_args()
    os.makedirs(ARGS.work, exist_ok=True)
    env = dict(os.environ, INGOT_CACHE_DIR=os.environ.get("INGOT_CACHE_DIR", os.path.join(ARGS.work, "cache")))
    models = os.path.join(ARGS.work, "models")
    subprocess.run([sys.executable, os.path.join(HERE, "make_synthetic.py"), models], check=True)
    m = {n: os.path.join(models, n + ".onnx") for n in ("tiny_chain", "big_elementwise", "big_gemm", "capacity")}
    (main_cpu if ARGS.cpu else main_gpu)(m, env)
    print(f"check_synthetic: {'FAILED: ' + str(len(failures)) + ' checks' if failures else 'all checks passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
