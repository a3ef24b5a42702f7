#!/usr/bin/env python3
"""PyTorch's best time for zoo models: a worker that zoo.py keeps running and sends one model at a time.

    torch_time.py [--device cuda|cpu] [--dtype fp16|fp32]

Reads one JSON request per line on stdin, {"model": NAME, "batches": [1, 64]}, and answers with one line
"RESULT {...}" on stdout (everything else goes to stderr). zoo.py gives each request a time limit and
kills and restarts the worker when a model hangs.

Per model and batch: eager and CUDA-graph replay, NCHW and (image models) channels_last, in fp16 with
cudnn.benchmark on; each time is the median over CUDA-event-timed iterations after a warm-up, inputs
resident on the GPU. On --device cpu (for testing the zoo without a GPU) only eager, timed by the clock.
"""
import argparse
import json
import os
import statistics
import sys
import time
import traceback

import torch

import models


def ev_time(fn, iters, warm):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def wall_time(fn, iters, warm):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def captured(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def iterations(first_ms):
    """Enough iterations for a stable median, within about a second per measurement."""
    if first_ms > 50:
        return 8, 3
    if first_ms > 10:
        return 20, 5
    return 50, 10


def measure(req, device, dtype_name):
    spec = models.BY_NAME[req["model"]]
    dev = torch.device(device)
    dtype = torch.float16 if dtype_name == "fp16" else torch.float32
    weights = req.get("weights")
    if weights and os.path.exists(weights):  # what export.py checked, bit for bit
        base = models.build(spec, calibrate=False)
        base.load_state_dict(torch.load(weights, map_location="cpu"))
    else:
        base = models.build(spec, device=device)
    layouts = [("nchw", False)] + ([("channels_last", True)] if spec.channels_last else [])
    rows, errors = [], []
    for lname, cl in layouts:
        m = base.to(dev).to(dtype)
        if cl:
            m = m.to(memory_format=torch.channels_last)
        for bs in req["batches"]:
            xs = models.example_inputs(spec, bs, device=dev, dtype=dtype)
            if cl:
                xs = [x.to(memory_format=torch.channels_last) if x.dim() == 4 else x for x in xs]
            with torch.inference_mode():
                fn = lambda: m(*xs)  # noqa: E731
                try:
                    fn()  # cudnn.benchmark tunes on the first call of a shape: size the run on the second
                    sync(device)
                    t = time.perf_counter()
                    fn()
                    sync(device)
                    it, warm = iterations((time.perf_counter() - t) * 1e3) if device == "cuda" else (2, 0)
                    timer = ev_time if device == "cuda" else wall_time
                    ms = timer(fn, it, warm)
                    rows.append({"layout": lname, "mode": "eager", "batch": bs, "ms": round(ms, 4),
                                 "per_s": round(bs / ms * 1e3, 1), "iterations": it})
                except Exception as e:  # noqa: BLE001
                    errors.append(f"{lname} eager b{bs}: {type(e).__name__}: {str(e)[:300]}")
                    continue
                if device != "cuda":
                    continue
                try:
                    torch.cuda.synchronize()
                    torch.cuda.empty_cache()
                    torch.cuda.reset_peak_memory_stats()
                    before = torch.cuda.memory_allocated()
                    g = captured(fn)
                    pool = (torch.cuda.max_memory_allocated() - before) / 1e6
                    ms = ev_time(g.replay, it, warm)
                    del g
                    rows.append({"layout": lname, "mode": "graph", "batch": bs, "ms": round(ms, 4),
                                 "per_s": round(bs / ms * 1e3, 1), "iterations": it,
                                 "graph_pool_MB": round(pool, 1)})
                except Exception as e:  # noqa: BLE001
                    errors.append(f"{lname} graph b{bs}: {type(e).__name__}: {str(e)[:300]}")
            del xs
        del m
    del base
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    # a failed capture can leave CUDA state behind that breaks later models: ask for a fresh worker
    restart = any(" graph " in e for e in errors)
    return {"model": spec.name, "dtype": dtype_name, "rows": rows, "errors": errors, "restart": restart}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--dtype", default="fp16", choices=["fp16", "fp32"])
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.device == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True  # PyTorch at its fastest (fp16 runs are unaffected)
        torch.backends.cudnn.allow_tf32 = True
    info = {"device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu", "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version() if a.device == "cuda" else None}
    print("READY " + json.dumps(info), flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        t = time.time()
        try:
            res = measure(req, a.device, a.dtype)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            res = {"model": req.get("model"), "rows": [], "errors": [f"{type(e).__name__}: {str(e)[:500]}"],
                   "restart": True}
            if a.device == "cuda":
                torch.cuda.empty_cache()
        res["seconds"] = round(time.time() - t, 2)
        print("RESULT " + json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
