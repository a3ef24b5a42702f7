#!/usr/bin/env python3
"""ingot's model zoo: many architectures, each exported with random weights, built by ingot, checked
against ONNX Runtime and timed against PyTorch's best in the same run. See bench/zoo/README.md.

    zoo.py [--shard K/N | --models a,b,c] [--ingot build-gpu/ingot] [--out DIR] [--work DIR]
    zoo.py --list [--shards N]                   the models and the shard each falls in
    zoo.py --report DIR [DIR ...]                one table from the zoo.json of several shards
    zoo.py --export-only ...                     only the exports (CPU), e.g. while ingot builds
    zoo.py --device cpu ...                      ingot's CPU backend, PyTorch eager on the CPU (testing)
    zoo.py --dry-run ...                         say what would run, run nothing

Per model: export (export.py, in a pool of CPU processes that runs ahead of the GPU work) -> `ingot
build` fp32 and fp16 engines at the check batch, `ingot run --device cuda` on the exported inputs,
compared with ONNX Runtime's outputs (fp32: relative error <= 1e-3; fp16: cosine >= 0.999) -> `ingot
bench --fp16` at both batches -> PyTorch's best (torch_time.py: eager and CUDA graph, NCHW and
channels_last, fp16) -> with --reports DIR, `ingot profile` at the largest batch (bottleneck class, verdict,
an HTML report in DIR). Every step has a time limit; a model that fails or hangs is reported and skipped.
The markdown table is printed last; zoo.json and zoo.md go to --out (default $OUT, else ./zoo_out).
"""
import argparse
import concurrent.futures as cf
import json
import math
import re
import os
import selectors
import shlex
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

FP32_REL_TOL = 1e-3
FP16_COS_MIN = 0.999
DEGENERATE_RMS = 1e-4  # a reference below this proves nothing (and is below fp16's resolution)
CHECK_BATCH = 2


def spec_table():
    """(name, cost, batches, source, family, note) of every model, without importing torch."""
    import models

    return models.SPECS


def assign_shards(specs, n):
    """Longest-processing-time first over the cost estimates: deterministic, balanced. Returns a list of
    n lists of names, each in the zoo's order."""
    order = sorted(range(len(specs)), key=lambda i: (-specs[i].cost, i))
    load = [0.0] * n
    members = [[] for _ in range(n)]
    for i in order:
        k = min(range(n), key=lambda j: (load[j], j))
        load[k] += specs[i].cost
        members[k].append(i)
    return [[specs[i].name for i in sorted(m)] for m in members]


def select(args, specs):
    names = [s.name for s in specs]
    if args.models:
        want = [m for m in args.models.split(",") if m]
        bad = [m for m in want if m not in names]
        if bad:
            raise SystemExit(f"zoo.py: unknown model(s) {', '.join(bad)}; see zoo.py --list")
        return want
    if args.shard:
        try:
            k, n = (int(x) for x in args.shard.split("/"))
        except ValueError:
            raise SystemExit(f"zoo.py: --shard expects K/N (e.g. 2/6), got '{args.shard}'")
        if not 1 <= k <= n:
            raise SystemExit(f"zoo.py: --shard {args.shard}: K must be in 1..N")
        return assign_shards(specs, n)[k - 1]
    return names


# ---- subprocesses with time limits --------------------------------------------------------------------

LIVE = set()  # running children, each in its own process group: killed with us (SIGTERM from a time limit)


def on_sigterm(signum, frame):
    for p in list(LIVE):
        kill_group(p)
    raise SystemExit(128 + signum)


def run_cmd(cmd, timeout, log=None, env=None):
    """Runs cmd in its own process group; on timeout kills the group. Returns (rc, stdout, stderr, seconds);
    rc is None after a timeout."""
    t = time.time()
    if log:
        log.write(f"$ {' '.join(shlex.quote(c) for c in cmd)}\n")
        log.flush()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         env=env)
    LIVE.add(p)
    try:
        out, err = p.communicate(timeout=max(1.0, timeout))
        rc = p.returncode
    except subprocess.TimeoutExpired:
        kill_group(p)
        out, err = p.communicate()
        rc = None
    finally:
        LIVE.discard(p)
    if log:
        log.write(out[-20000:])
        log.write(err[-20000:])
        log.write(f"[rc {rc}, {time.time() - t:.1f} s]\n")
        log.flush()
    return rc, out, err, time.time() - t


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def err_line(out, err, rc):
    """The message worth a table cell: ingot's `ingot <cmd>: INGOT_ERR_...` line, else the last lines."""
    if rc is None:
        return "time limit"
    lines = [ln.strip() for ln in (err or "").splitlines() + (out or "").splitlines() if ln.strip()]
    errs = [ln for ln in lines if "INGOT_ERR" in ln or "error" in ln.lower() or "unsupported" in ln.lower()]
    pick = errs[-3:] if errs else lines[-3:]
    return (" | ".join(pick) or f"exit status {rc}")[:600]


# ---- exports --------------------------------------------------------------------------------------------


def export_model(name, args):
    """Export NAME (or wait for the process that is exporting it). Returns its meta.json as a dict."""
    d = os.path.join(args.work, name)
    os.makedirs(d, exist_ok=True)
    meta_path = os.path.join(d, "meta.json")
    cmd = [sys.executable, os.path.join(HERE, "export.py"), name, args.work, "--threads", str(args.threads),
           "--check-batch", str(CHECK_BATCH), "--exporter", args.exporter]
    deadline = time.time() + args.export_timeout
    t0 = time.time()
    with open(os.path.join(d, "export.log"), "a") as log:
        while True:
            rc, out, err, _ = run_cmd(cmd, deadline - time.time(), log)
            if rc != 3:
                break
            # another zoo process (--export-only, started while ingot builds) holds the lock: wait for it
            while os.path.exists(os.path.join(d, ".lock")) and time.time() < deadline:
                time.sleep(1)
            if time.time() >= deadline:
                rc = None
                break
    meta = None
    try:
        meta = json.load(open(meta_path))
    except (OSError, ValueError):
        pass
    if rc is None:
        meta = {"model": name, "status": "error", "stage": "export",
                "error": f"export time limit ({args.export_timeout:.0f} s)"}
    elif meta is None:
        meta = {"model": name, "status": "error", "stage": "export", "error": err_line(out, err, rc)}
    meta["wait_s"] = round(time.time() - t0, 1)
    return meta


# ---- the PyTorch worker -------------------------------------------------------------------------------


class TorchWorker:
    """torch_time.py kept running across models; a request that runs past its limit kills it (the next
    request starts a new one)."""

    def __init__(self, args):
        self.args = args
        self.p = None
        self.info = None
        self.log = open(os.path.join(args.work, "torch_worker.log"), "a")

    def start(self):
        cmd = [sys.executable, os.path.join(HERE, "torch_time.py"), "--device", self.args.device, "--dtype", "fp16"
               if self.args.device == "cuda" else "fp32"]
        if self.args.device == "cpu":
            cmd += ["--threads", str(self.args.threads)]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                  bufsize=1, start_new_session=True)
        LIVE.add(self.p)
        self.buf = ""
        self.info = None

    def _read_line(self, prefix, timeout):
        """The next stdout line starting with prefix, or None at timeout / exit."""
        sel = selectors.DefaultSelector()
        sel.register(self.p.stdout, selectors.EVENT_READ)
        deadline = time.time() + timeout
        try:
            while True:
                while "\n" in self.buf:
                    line, self.buf = self.buf.split("\n", 1)
                    if line.startswith(prefix):
                        return line[len(prefix):]
                left = deadline - time.time()
                if left <= 0 or not sel.select(left):
                    return None
                chunk = os.read(self.p.stdout.fileno(), 65536).decode(errors="replace")
                if not chunk:
                    return None
                self.buf += chunk
        finally:
            sel.close()

    def ready(self, timeout=120):
        """Started and past its imports (the READY line read)."""
        if self.p is None or self.p.poll() is not None:
            self.start()
        if self.info is None:
            line = self._read_line("READY ", timeout)
            if line is None:
                self.stop()
                return False
            self.info = json.loads(line)
        return True

    def measure(self, name, batches, timeout):
        t = time.time()
        if not self.ready(min(timeout, 120)):
            return {"model": name, "rows": [], "errors": ["PyTorch worker did not start: " + self.tail()]}
        try:
            req = {"model": name, "batches": batches, "weights": os.path.join(self.args.work, name, "weights.pt")}
            self.p.stdin.write(json.dumps(req) + "\n")
            self.p.stdin.flush()
        except BrokenPipeError:
            self.stop()
            return {"model": name, "rows": [], "errors": ["PyTorch worker died: " + self.tail()]}
        line = self._read_line("RESULT ", max(1.0, timeout - (time.time() - t)))
        if line is None:
            dead = self.p.poll() is not None
            self.stop()
            why = "PyTorch worker died: " + self.tail() if dead else f"time limit ({timeout:.0f} s)"
            return {"model": name, "rows": [], "errors": [why]}
        res = json.loads(line)
        if res.get("restart"):
            self.stop()  # the next model gets a fresh process
        return res

    def tail(self):
        self.log.flush()
        try:
            with open(self.log.name, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log.name) - 600))
                return f.read().decode(errors="replace").strip().replace("\n", " | ")[-400:]
        except OSError:
            return "?"

    def stop(self):
        if self.p is not None:
            LIVE.discard(self.p)
            if self.p.poll() is None:
                kill_group(self.p)
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.p = None
        self.buf = ""
        self.info_last = self.info or getattr(self, "info_last", None)


# ---- numerics -------------------------------------------------------------------------------------------


def compare(ref, got):
    import numpy as np

    r = {"shape_ok": list(ref.shape) == list(got.shape) and ref.dtype == got.dtype}
    if not r["shape_ok"]:
        r["why"] = f"got {got.dtype} {list(got.shape)}, reference {ref.dtype} {list(ref.shape)}"
        return r
    if ref.dtype.kind != "f":
        r["exact"] = bool((ref == got).all())
        return r
    a, b = got.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    r["finite"] = bool(np.isfinite(a).all())
    if not r["finite"]:
        r["why"] = f"{int((~np.isfinite(a)).sum())} non-finite values"
        return r
    d = a - b
    nb, na = float(np.linalg.norm(b)), float(np.linalg.norm(a))
    r["rel"] = float(np.linalg.norm(d) / nb) if nb > 0 else float(np.linalg.norm(d))
    r["cos"] = float(a @ b / (na * nb)) if na > 0 and nb > 0 else (1.0 if na == nb else 0.0)
    r["max_abs"] = float(np.abs(d).max()) if d.size else 0.0
    return r


def check_outputs(meta, out_dir, prec):
    """Compares ingot's outputs (out_dir/<name>.npy) with the references. Returns a dict with 'ok'."""
    import numpy as np

    d = os.path.join(os.path.dirname(out_dir))
    per, ok, proof = [], True, False
    for ref_info in meta["refs"]:
        ref = np.load(os.path.join(d, "refs", ref_info["file"]))
        path = os.path.join(out_dir, ref_info["file"])
        if not os.path.exists(path):
            per.append({"name": ref_info["name"], "ok": False, "why": "no output written"})
            ok = False
            continue
        c = compare(ref, np.load(path))
        c["name"] = ref_info["name"]
        c["ref_norm"] = ref_info.get("norm")
        c["ref_rms"] = ref_info.get("rms")
        c["extra"] = ref_info.get("extra", False)
        if "exact" in c:
            c["ok"] = c["exact"]
        elif not c.get("shape_ok") or not c.get("finite"):
            c["ok"] = False
        else:
            degenerate = (ref_info.get("rms") or 0.0) < DEGENERATE_RMS
            c["degenerate"] = degenerate
            if degenerate:
                c["ok"] = c["max_abs"] <= DEGENERATE_RMS
            else:
                c["ok"] = c["rel"] <= FP32_REL_TOL if prec == "fp32" else c["cos"] >= FP16_COS_MIN
                exact = os.path.join(d, "refs64", ref_info["file"])
                if prec == "fp32" and not c["ok"] and os.path.exists(exact):
                    # ONNX Runtime's fp32 has errors of its own: the exact answer judges, and says whose
                    # error it was (export.py: fp64_reference)
                    c64 = compare(np.load(exact).astype(np.float32), np.load(path))
                    c["rel_fp64"] = c64.get("rel")
                    c["ort_rel_fp64"] = ((meta.get("fp64") or {}).get("ort_rel") or {}).get(ref_info["name"])
                    # within the tolerance of the exact answer, or no further from it than twice ONNX
                    # Runtime's own fp32 (a network that amplifies rounding, LeViT's at 1.5e-2, leaves
                    # every fp32 implementation that far off)
                    c["ok"] = c["rel_fp64"] is not None and \
                        c["rel_fp64"] <= max(FP32_REL_TOL, 2 * (c["ort_rel_fp64"] or 0))
                    c["judged_by"] = "fp64"
                if prec == "fp16" and not c["ok"]:
                    fp16_judge(c, meta.get("fp16_peer") or {})
                proof = proof or c["ok"]
        ok = ok and c["ok"]
        per.append(c)
    floats = [c for c in per if "rel" in c and not c.get("degenerate")]
    by64 = [c for c in floats if c.get("judged_by") == "fp64"]
    if prec == "fp32" and by64 and all(c["ok"] for c in by64) and \
            max((c["ort_rel_fp64"] or 0) for c in by64) > FP32_REL_TOL:
        # ONNX Runtime's own outputs are further than the tolerance from the exact answer, and ingot's are
        # within it: the intermediate tensor (no float64 twin) differs from ONNX Runtime's for the same reason
        for c in floats:
            if c.get("extra") and not c["ok"]:
                c["ok"], c["judged_by"] = True, "ORT off the exact answer"
        ok = all(c["ok"] for c in per)
    peer = [c["peer_cos"] for c in per if c.get("judged_by") == "PyTorch fp16"]
    return {"ok": ok and proof, "inconclusive": ok and not proof, "outputs": per,
            "fp16_peer_cos": min(peer) if peer else None,
            "fp64": {"rel": max(c["rel_fp64"] if c["rel_fp64"] is not None else math.inf for c in by64),
                     "ort_rel": max((c["ort_rel_fp64"] or 0) for c in by64)} if by64 else None,
            "worst_rel": max((c["rel"] for c in floats), default=None),
            "worst_cos": min((c["cos"] for c in floats), default=None)}


def fp16_judge(c, peer):
    """An fp16 output below the cosine bound, judged by PyTorch's own fp16 (export.py: fp16_peer): fp16
    storage costs a network that amplifies rounding the same whoever runs it, so ingot passes when it is
    no further from fp32 than twice PyTorch's fp16. An output PyTorch does not return (the check's extra
    tensor) takes the model's worst peer error."""
    cos = peer.get("cos") or {}
    if not peer.get("ok") or not cos:
        return
    p = cos.get(c["name"], min(cos.values()))
    c["peer_cos"] = p
    c["ok"] = 1 - c["cos"] <= max(1 - FP16_COS_MIN, 2 * (1 - p))
    c["judged_by"] = "PyTorch fp16"


# ---- one model on the GPU -------------------------------------------------------------------------------


def ingot_model(name, meta, args, worker):
    """Everything GPU-side for one exported model. Returns the model's result dict."""
    res = {"model": name, "source": meta.get("source"), "family": meta.get("family"), "note": meta.get("note"),
           "export": {k: meta.get(k) for k in ("status", "stage", "error", "export_s", "ort_s", "onnx_MB",
                                               "opset", "nodes", "params", "check_extra_output", "weights",
                                               "sensitivity", "wait_s")},
           "refs": meta.get("refs"), "build": {}, "numerics": {}, "bench": {}, "torch": {}, "errors": []}
    if meta.get("status") != "ok":
        res["errors"].append(f"export ({meta.get('stage')}): {meta.get('error')}")
        return res
    d = os.path.join(args.work, name)
    t_start = time.time()
    deadline = t_start + args.model_timeout
    ing = args.ingot
    dev = ["--device", args.device]
    log = open(os.path.join(d, "ingot.log"), "a")

    def left(step_limit):
        return min(step_limit, deadline - time.time())

    def over():
        if time.time() >= deadline:
            res["errors"].append(f"model time limit ({args.model_timeout:.0f} s): remaining steps skipped")
            return True
        return False

    # numerics: an engine file per precision at the check batch, run on the exported inputs
    precs = ["fp32", "fp16"] if args.device == "cuda" else ["fp32"]
    inputs = []
    for i in meta["inputs"]:
        inputs += ["--input", f"{i['name']}={os.path.join(d, 'inputs', i['name'] + '.npy')}"]
    for prec in precs:
        if over():
            break
        engine = os.path.join(d, f"check.{prec}.ingot")
        cmd = [ing, "build", os.path.join(d, "check.onnx"), "-o", engine, "--batch", str(CHECK_BATCH),
               "--cuda" if args.device == "cuda" else "--cpu"] + (["--fp16"] if prec == "fp16" else [])
        rc, out, err, s = run_cmd(cmd, left(args.step_timeout), log)
        res["build"][prec] = {"ok": rc == 0, "s": round(s, 2)}
        if rc != 0:
            res["build"][prec]["error"] = err_line(out, err, rc)
            res["errors"].append(f"build {prec}: {res['build'][prec]['error']}")
            continue
        out_dir = os.path.join(d, f"out_{prec}")
        if os.path.isdir(out_dir):
            for f in os.listdir(out_dir):
                os.remove(os.path.join(out_dir, f))
        rc, out, err, s = run_cmd([ing, "run", engine] + dev + inputs + ["--output-dir", out_dir],
                                  left(args.step_timeout), log)
        if rc != 0:
            res["numerics"][prec] = {"ok": False, "error": err_line(out, err, rc)}
            res["errors"].append(f"run {prec}: {res['numerics'][prec]['error']}")
            continue
        res["numerics"][prec] = check_outputs(meta, out_dir, prec)
        res["numerics"][prec]["run_s"] = round(s, 2)
        if not res["numerics"][prec]["ok"]:
            bad = [c for c in res["numerics"][prec]["outputs"] if not c.get("ok")]
            what = "; ".join(f"{c['name']}: " + (c.get("why") or (f"rel {c['rel']:.3g}" if prec == "fp32" else
                                                                    f"cos {c['cos']:.6f}")) for c in bad[:3])
            res["errors"].append(f"numerics {prec}: " + (what or "every reference is degenerate"))
        for f in os.listdir(out_dir) if os.path.isdir(out_dir) else []:
            os.remove(os.path.join(out_dir, f))  # keep the work dir small: the verdict is in the JSON
    if any(not b["ok"] for b in res["build"].values()):
        # why: every node ingot cannot take, from `ingot inspect` (no GPU needed)
        rc, out, err, _ = run_cmd([ing, "inspect", os.path.join(d, "model.onnx")], left(60), log)
        lines = [ln.strip() for ln in (out + err).splitlines()
                 if "unsupported" in ln.lower() or "not supported" in ln.lower() or "cannot" in ln.lower()]
        res["inspect_unsupported"] = lines[:20]

    # ingot bench at both batches
    if not args.no_bench and any(b["ok"] for b in res["build"].values()):
        for b in args.batches or meta["batches"]:
            if over():
                break
            cmd = [ing, "bench", os.path.join(d, "model.onnx"), "--batch", str(b), "--json"] + dev
            cmd += (["--fp16", "--duration", str(args.duration), "--warmup", "10", "--profile"]
                    if args.device == "cuda" else ["--iterations", "2"])
            rc, out, err, s = run_cmd(cmd, left(args.step_timeout), log)
            if rc != 0:
                res["bench"][str(b)] = {"ok": False, "error": err_line(out, err, rc)}
                res["errors"].append(f"bench b{b}: {res['bench'][str(b)]['error']}")
                continue
            try:
                j = json.loads(out)
            except ValueError:
                res["bench"][str(b)] = {"ok": False, "error": "bench printed no JSON"}
                continue
            lat = j.get("latency_gpu_ms") or j.get("latency_host_ms") or {}
            res["bench"][str(b)] = {
                "ok": True, "batch": j.get("batch"), "ms": lat.get("median"), "per_s": j.get("throughput_per_s"),
                "backend": j.get("backend"), "steps": j.get("steps"), "graph_captured": j.get("graph_captured"),
                "graph_fallback": j.get("graph_fallback") or None, "build_ms": j.get("build_ms"),
                "arena_MB": (j.get("memory_bytes") or {}).get("arena", 0) / 1e6 if j.get("memory_bytes") else None,
                "allocs_during_timed_runs": ((j.get("timed_runs") or {}).get("device_mallocs", 0)
                                             + (j.get("timed_runs") or {}).get("device_frees", 0))
                if j.get("timed_runs") else None,
                "s": round(s, 2), "profile": where_time_goes(err)}

    # PyTorch's best, same batches (only where ingot has a time to compare with), before the diagnosis: the
    # ratio is the target, and a slow model's profile (FCN's at 1024x512) once spent the time it needed
    if worker is not None and any(bb.get("ok") for bb in res["bench"].values()) and not over():
        batches = [int(b) for b in (args.batches or meta["batches"])]
        tr = worker.measure(name, batches, left(args.torch_timeout))
        res["torch_errors"] = tr.get("errors", [])
        if not tr.get("rows"):
            res["errors"] += [f"torch: {e}" for e in tr.get("errors", [])][:2]
        for b in batches:
            rows = [r for r in tr.get("rows", []) if r["batch"] == b]
            if not rows:
                continue
            best = min(rows, key=lambda r: r["ms"])
            graph = [r for r in rows if r["mode"] == "graph"]
            gbest = min(graph, key=lambda r: r["ms"]) if graph else None
            res["torch"][str(b)] = {"best_ms": best["ms"], "best_per_s": best["per_s"],
                                    "best_variant": f"{best['layout']}+{best['mode']}",
                                    "graph_ms": gbest["ms"] if gbest else None, "rows": rows}
        res["torch_s"] = tr.get("seconds")

    # the diagnosis at the largest batch that ran: `ingot profile` (issue 11), its class and verdict in the
    # JSON and the table, its HTML report in --reports
    ran = [int(b) for b, bb in res["bench"].items() if bb.get("ok")]
    if args.reports and ran and not over():
        b = max(ran)
        html = os.path.join(args.reports, f"{name}_b{b}.html")
        cmd = [ing, "profile", os.path.join(d, "model.onnx"), "--batch", str(b), "--json", "--html", html]
        cmd += ["--fp16"] if args.device == "cuda" else ["--cpu"]
        rc, out, err, s = run_cmd(cmd, left(args.step_timeout), log)
        try:
            j = json.loads(out) if rc == 0 else None
        except ValueError:
            j = None
        if j:
            res["diagnosis"] = {"batch": b, "bottleneck": j.get("bottleneck"), "verdict": j.get("verdict"),
                                "classes": {k: round(v.get("share", 0), 3) for k, v in (j.get("classes") or {}).items()},
                                "run_ms": (j.get("run") or {}).get("run_ms"), "report": os.path.basename(html),
                                "s": round(s, 2)}
        else:
            res["errors"].append(f"profile b{b}: {err_line(out, err, rc)}")

    # the ratios
    for b, bb in res["bench"].items():
        t = res["torch"].get(b)
        if bb.get("ok") and t:
            bb["throughput_ratio"] = bb["per_s"] / t["best_per_s"] if t["best_per_s"] else None
            bb["latency_ratio_vs_graph"] = t["graph_ms"] / bb["ms"] if t.get("graph_ms") and bb["ms"] else None
    res["gpu_s"] = round(time.time() - t_start, 1)
    log.close()
    return res


def where_time_goes(err):
    """From `ingot bench --profile`'s stderr: time by step kind and the slowest steps (one timed pass)."""
    kinds, slowest, total = {}, [], None
    for ln in err.splitlines():
        m = re.match(r"\s+profile of .* \((?:stream execution|an event after each step), ([0-9.]+) ms in", ln)
        if m:
            total = float(m.group(1))
        m = re.match(r"\s{4}(\w+)\s+(\d+) steps\s+([0-9.]+) ms\s+([0-9.]+)%", ln)
        if m:
            kinds[m.group(1)] = {"steps": int(m.group(2)), "ms": float(m.group(3))}
        m = re.match(r"\s{4}\s*\d+\s+([0-9.]+) ms\s+([0-9.]+)%\s+(.*)", ln)
        if m and len(slowest) < 5:
            slowest.append({"ms": float(m.group(1)), "step": m.group(3)[:120]})
    return {"stream_ms": total, "kinds": kinds, "slowest": slowest} if total else None


def time_by_kind(results):
    """Lines saying where each model slower than PyTorch spends its time (the large batch's profile)."""
    L = []
    for r in results:
        for b, bb in sorted(r["bench"].items(), key=lambda kv: int(kv[0])):
            pr, ratio = bb.get("profile"), bb.get("throughput_ratio")
            if not pr or ratio is None or ratio >= 1.0:
                continue
            ks = sorted(pr["kinds"].items(), key=lambda kv: -kv[1]["ms"])
            share = ", ".join(f"{k} {100 * v['ms'] / pr['stream_ms']:.0f}% ({v['steps']})" for k, v in ks[:4])
            top = "; ".join(f"{x['ms']:.3f} ms {x['step'][:60]}" for x in pr["slowest"][:2])
            L.append(f"- {r['model']} b{b} ({ratio:.2f}x, stream {pr['stream_ms']:.3f} ms): {share}; slowest: {top}")
    return (["", "where the time goes in the runs slower than PyTorch (kind: share of stream time (steps)):"] + L
            if L else [])


def diagnoses(results):
    """One line per model: `ingot profile`'s class shares and verdict at its largest batch (--reports)."""
    L = []
    for r in results:
        dg = r.get("diagnosis")
        if not dg:
            continue
        cls = ", ".join(f"{k} {100 * v:.0f}%" for k, v in sorted(dg["classes"].items(), key=lambda kv: -kv[1]) if v)
        L.append(f"- {r['model']} b{dg['batch']}: {dg['bottleneck']} ({cls}). {(dg['verdict'] or '').split('. ')[0]}"
                 f" [{dg['report']}]")
    return ["", "diagnosis (`ingot profile` at the largest batch: time by class, the verdict, the HTML report):"] + L \
        if L else []


def verdicts(res):
    """(build, numerics) cells of the table for one model."""
    if res["export"].get("status") != "ok":
        return "export FAIL", "-"
    b = res["build"]
    build = "ok" if b and all(v["ok"] for v in b.values()) else ("FAIL" if b else "-")
    parts = []
    for prec, n in res["numerics"].items():
        if "error" in n:
            parts.append(f"{prec} run FAIL")
        elif prec == "fp32":
            parts.append(("ok " if n["ok"] else "FAIL ") + (f"rel {n['worst_rel']:.1e}" if n["worst_rel"] is not None
                                                              else "degenerate"))
            if n.get("fp64"):  # judged by the exact answer: ingot's error and ONNX Runtime's, both against it
                parts[-1] += f" (vs fp64: ingot {n['fp64']['rel']:.1e}, ORT {n['fp64']['ort_rel']:.1e})"
        else:
            parts.append(("ok " if n["ok"] else "FAIL ") + (f"cos {n['worst_cos']:.5f}" if n["worst_cos"] is not None
                                                              else "degenerate"))
            if n.get("fp16_peer_cos") is not None:  # below the bound: judged by PyTorch's own fp16
                parts[-1] += f" (PyTorch fp16 cos {n['fp16_peer_cos']:.5f})"
    return build, ", ".join(parts) or "-"


# ---- the report -----------------------------------------------------------------------------------------


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return (math.exp(sum(math.log(x) for x in xs) / len(xs)), len(xs)) if xs else (None, 0)


def summarize(results):
    """Geometric means of the ratios at batch 1 and at the large batch (64; 16 for segmentation)."""
    g = {}
    for key, pick in (("batch1", lambda r: "1"), ("large", lambda r: max(r["bench"], key=int, default=None))):
        tp, lat = [], []
        for r in results:
            b = pick(r)
            bb = r["bench"].get(b) if b else None
            if b == "1" and key == "large":
                continue
            if bb and bb.get("throughput_ratio"):
                tp.append(bb["throughput_ratio"])
            if bb and bb.get("latency_ratio_vs_graph"):
                lat.append(bb["latency_ratio_vs_graph"])
        (gt, nt), (gl, nl) = geomean(tp), geomean(lat)
        g[key] = {"throughput_ratio": gt, "n": nt, "latency_ratio_vs_graph": gl, "n_latency": nl}
    return g


def fmt(x, p=3):
    return "-" if x is None else f"{x:.{p}f}"


def targets(results, g, n_ok, n_num):
    """Issue 10's targets on these results: every model built with numerics ok, none below 1.0x PyTorch
    (batch 1: latency vs PyTorch + CUDA graph; the large batch: throughput), geometric means >= 1.3 at
    batch 1 and >= 1.2 at the large batch."""
    below = []
    for r in results:
        for b, bb in sorted(r["bench"].items(), key=lambda kv: int(kv[0])):
            ratio = bb.get("latency_ratio_vs_graph") if b == "1" else bb.get("throughput_ratio")
            if ratio is not None and ratio < 1.0:
                below.append(f"{r['model']} b{b} {ratio:.2f}")
    g1, gl = g["batch1"]["latency_ratio_vs_graph"], g["large"]["throughput_ratio"]
    ok = (n_ok == len(results) and n_num == len(results) and not below and g1 is not None and g1 >= 1.3
          and gl is not None and gl >= 1.2)
    return [f"below 1.0x: {', '.join(below) if below else 'none'}",
            f"issue 10's zoo targets (all built and numerics ok, none below 1.0x, geometric means >= 1.3 at "
            f"batch 1 and >= 1.2 at the large batch): {'met' if ok else 'NOT met'} on these {len(results)} models"]


def table(results, title=""):
    """The markdown table (one row per model and batch), the geometric means and the failures."""
    L = []
    if title:
        L.append(f"### {title}")
        L.append("")
    L.append("| model | batch | build | numerics (fp32 rel err / fp16 cosine) | ingot ms | ingot /s | torch best ms "
             "(variant) | torch+graph ms | throughput ratio | latency vs graph |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        build, num = verdicts(r)
        batches = sorted(r["bench"], key=int) or [str(b) for b in (r.get("batches") or [])[:1]] or ["-"]
        for k, b in enumerate(batches):
            bb, t = r["bench"].get(b, {}), r["torch"].get(b, {})
            ing_ms = fmt(bb.get("ms")) if bb.get("ok") else ("FAIL" if bb else "-")
            tb = f"{fmt(t.get('best_ms'))} ({t.get('best_variant')})" if t else "-"
            L.append(f"| {r['model'] if k == 0 else ''} | {b} | {build if k == 0 else ''} | {num if k == 0 else ''} | "
                     f"{ing_ms} | {fmt(bb.get('per_s'), 0)} | {tb} | {fmt(t.get('graph_ms'))} | "
                     f"{fmt(bb.get('throughput_ratio'), 2)} | {fmt(bb.get('latency_ratio_vs_graph'), 2)} |")
    g = summarize(results)
    L.append("")
    L.append(f"geometric mean at batch 1: throughput ratio {fmt(g['batch1']['throughput_ratio'], 2)} "
             f"({g['batch1']['n']} models), latency vs graph {fmt(g['batch1']['latency_ratio_vs_graph'], 2)}; "
             f"at batch 64 (16 for segmentation): throughput ratio {fmt(g['large']['throughput_ratio'], 2)} "
             f"({g['large']['n']} models), latency vs graph {fmt(g['large']['latency_ratio_vs_graph'], 2)}")
    L.append("throughput ratio = ingot /s over PyTorch best /s; latency vs graph = PyTorch+CUDA-graph ms over "
             "ingot ms (median GPU time); > 1: ingot is faster")
    n_ok = sum(1 for r in results if verdicts(r)[0] == "ok")
    n_num = sum(1 for r in results if r["numerics"] and all(n.get("ok") for n in r["numerics"].values()))
    L.append(f"{len(results)} models: {n_ok} built, {n_num} numerics ok")
    L += targets(results, g, n_ok, n_num)
    L += time_by_kind(results)
    L += diagnoses(results)
    fails = [(r["model"], e) for r in results for e in r["errors"]]
    if fails:
        L.append("")
        L.append("failures:")
        for m, e in fails:
            L.append(f"- {m}: {e[:300]}")
    return "\n".join(L)


# ---- main -----------------------------------------------------------------------------------------------


def run(args):
    import models

    names = select(args, models.SPECS)
    os.makedirs(args.work, exist_ok=True)
    if not args.export_only and not args.dry_run:
        os.makedirs(args.out, exist_ok=True)
        if args.reports:
            os.makedirs(args.reports, exist_ok=True)
    t0 = time.time()
    label = args.shard or (args.models and "selected") or "all"
    print(f"zoo: {len(names)} models ({label}): {', '.join(names)}", flush=True)
    print(f"zoo: work {args.work}, out {args.out}, ingot {args.ingot}, device {args.device}, "
          f"{args.jobs} export processes x {args.threads} threads", flush=True)
    if args.dry_run:
        for n in names:
            s = models.BY_NAME[n]
            print(f"  {n:44} {s.source:12} {s.family:24} batches {args.batches or list(s.batches)}  {s.note}")
        return 0
    if not args.export_only and not (os.path.isfile(args.ingot) and os.access(args.ingot, os.X_OK)):
        raise SystemExit(f"zoo.py: no ingot binary at {args.ingot} (--ingot)")
    worker = None
    if not args.export_only and not args.no_torch:
        worker = TorchWorker(args)
        worker.start()  # its imports overlap the first exports
    results, skipped = [], []
    elapsed = lambda: time.time() - t0  # noqa: E731

    def one(name, meta):
        status = "ok" if meta.get("status") == "ok" else f"FAILED ({meta.get('stage')}: {meta.get('error')})"
        print(f"[{elapsed():6.1f}s] export {name}: {status}"
              + (f" export {meta.get('export_s')} s, ORT {meta.get('ort_s')} s" if meta.get("status") == "ok"
                 else ""), flush=True)
        if args.export_only:
            results.append({"model": name, "export": meta})
            return
        left = args.budget - elapsed() if args.budget else None
        if left is not None and left < args.min_model_s:
            skipped.append(name)
            print(f"[{elapsed():6.1f}s] {name}: skipped, {left:.0f} s of the shard budget left", flush=True)
            return
        saved = args.model_timeout
        if left is not None:
            args.model_timeout = min(args.model_timeout, left - 5)
        try:
            r = ingot_model(name, meta, args, worker)
        finally:
            args.model_timeout = saved
        r["batches"] = list(models.BY_NAME[name].batches)
        results.append(r)
        save(results, names, skipped, label, worker, args, t0, final=False)
        build, num = verdicts(r)
        speed = "; ".join(f"b{b}: ingot {fmt(bb.get('ms'))} ms, ratio {fmt(bb.get('throughput_ratio'), 2)}"
                          for b, bb in sorted(r["bench"].items(), key=lambda kv: int(kv[0])) if bb.get("ok"))
        print(f"[{elapsed():6.1f}s] {name}: build {build}; numerics {num}; {speed or 'no bench'}"
              f" ({r.get('gpu_s', 0)} s)", flush=True)
        for e in r["errors"]:
            print(f"    {e[:400]}", flush=True)

    pool = cf.ThreadPoolExecutor(max_workers=args.jobs)
    futs = {pool.submit(export_model, n, args): n for n in names}
    # the GPU side takes the models in the order their exports finish; with a budget, it stops waiting
    # for exports when the budget is spent
    wait = max(1.0, args.budget - elapsed()) if args.budget and not args.export_only else None
    try:
        try:
            for fut in cf.as_completed(futs, timeout=wait):
                one(futs[fut], fut.result())
        except cf.TimeoutError:
            done = {r["model"] for r in results} | set(skipped)
            skipped += [n for n in names if n not in done]
            print(f"[{elapsed():6.1f}s] shard budget spent waiting for exports: {', '.join(skipped)}", flush=True)
            for p in list(LIVE):  # the exports still running
                kill_group(p)
    except BaseException:
        if not args.export_only:  # SIGTERM (a time limit) or ^C: the table of what did run, then go
            print("zoo: interrupted", flush=True)
            save(results, names, skipped, label, worker, args, t0, final=True)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if worker is not None:
            worker.stop()
    if args.export_only:
        ok = sum(1 for r in results if r["export"].get("status") == "ok")
        print(f"zoo: exported {ok} of {len(results)} in {elapsed():.0f} s")
        return 0 if ok == len(results) else 1
    return save(results, names, skipped, label, worker, args, t0, final=True)


def save(results, names, skipped, label, worker, args, t0, final):
    """zoo.json (after every model, so a run cut short still leaves its results) and, at the end, zoo.md
    and the table on stdout. Returns the exit status: 0 when every model passed every step."""
    order = {n: i for i, n in enumerate(names)}
    results = sorted(results, key=lambda r: order[r["model"]])
    not_run = [n for n in names if n not in {r["model"] for r in results} and n not in skipped]
    doc = {"shard": label, "models_requested": names, "skipped_for_budget": skipped, "not_run": not_run,
           "complete": final, "device": args.device, "torch": (worker.info or getattr(worker, "info_last", None)) if worker else None,
           "seconds": round(time.time() - t0, 1), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "commit": os.environ.get("INGOT_COMMIT"),
           "tolerances": {"fp32_rel": FP32_REL_TOL, "fp16_cos": FP16_COS_MIN, "degenerate_rms": DEGENERATE_RMS},
           "geomean": summarize(results), "results": results}
    tmp = os.path.join(args.out, "zoo.json.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, os.path.join(args.out, "zoo.json"))
    if not final:
        return None
    md = table(results, f"ingot zoo, shard {label}, {args.device}, {time.time() - t0:.0f} s")
    if skipped:
        md += "\n\nnot run (shard budget spent): " + ", ".join(skipped)
    if not_run:
        md += "\n\nnot run (interrupted): " + ", ".join(not_run)
    with open(os.path.join(args.out, "zoo.md"), "w") as f:
        f.write(md + "\n")
    print()
    print(md, flush=True)
    bad = [r for r in results if r["errors"]]
    return 1 if bad or skipped or not_run else 0


def report(dirs):
    results, seen = [], {}
    for d in dirs:
        path = d if d.endswith(".json") else os.path.join(d, "zoo.json")
        doc = json.load(open(path))
        for r in doc["results"]:
            if r["model"] in seen:
                results[seen[r["model"]]] = r
            else:
                seen[r["model"]] = len(results)
                results.append(r)
    try:  # the zoo's order where torch is installed; the runs' order otherwise
        import models

        order = {s.name: i for i, s in enumerate(models.SPECS)}
        results.sort(key=lambda r: order.get(r["model"], 1 << 20))
    except ImportError:
        pass
    print(table(results, f"ingot zoo, {len(dirs)} runs merged"))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shard", help="K/N: the K-th of N shards (balanced by cost estimates)")
    p.add_argument("--models", help="comma-separated model names (zoo.py --list)")
    p.add_argument("--list", action="store_true", help="list the models and their shards (--shards N)")
    p.add_argument("--shards", type=int, default=6, help="N for --list")
    p.add_argument("--report", nargs="+", metavar="DIR", help="merge the zoo.json of several runs into one table")
    p.add_argument("--ingot", default=os.path.join(HERE, "..", "..", "build-gpu", "ingot"))
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--out", default=os.environ.get("OUT") or "zoo_out")
    p.add_argument("--work", default=os.environ.get("INGOT_ZOO_WORK", "/tmp/zoo"),
                   help="exports and engines (default /tmp/zoo); reused by later runs")
    ncpu = os.cpu_count() or 2
    p.add_argument("--jobs", type=int, default=max(1, min(4, ncpu // 4)), help="export processes")
    p.add_argument("--threads", type=int, default=0, help="threads per export process (default: fit the cores, "
                   "leaving a few for the GPU work)")
    p.add_argument("--batches", help="override every model's batches, e.g. 1,8")
    p.add_argument("--duration", type=float, default=0.5, help="ingot bench --duration (per phase)")
    p.add_argument("--export-timeout", type=float, default=360)
    p.add_argument("--model-timeout", type=float, default=150, help="GPU-side seconds per model")
    p.add_argument("--step-timeout", type=float, default=90, help="seconds per ingot command")
    p.add_argument("--torch-timeout", type=float, default=90, help="seconds for PyTorch's timings of one model")
    p.add_argument("--budget", type=float, default=0, help="seconds for the whole run: models that would start "
                   "after it are reported as not run (0: none)")
    p.add_argument("--min-model-s", type=float, default=30, help="a model starts only with this much budget left")
    p.add_argument("--export-only", action="store_true")
    p.add_argument("--exporter", choices=["torchscript", "dynamo"], default="torchscript",
                   help="torch's ONNX exporter (export.py); give each its own --work")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--no-bench", action="store_true")
    p.add_argument("--reports", metavar="DIR", help="also `ingot profile` each model at its largest batch: the "
                   "class and verdict into the JSON and table, the HTML report into DIR")
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    signal.signal(signal.SIGTERM, on_sigterm)
    if args.report:
        return report(args.report)
    if args.list:
        import models

        shards = assign_shards(models.SPECS, args.shards)
        where = {n: k + 1 for k, s in enumerate(shards) for n in s}
        for s in models.SPECS:
            print(f"{s.name:44} shard {where[s.name]}/{args.shards}  {s.source:12} {s.family:26} "
                  f"batches {list(s.batches)}  {s.note}")
        for k, s in enumerate(shards):
            cost = sum(models.BY_NAME[n].cost for n in s)
            print(f"shard {k + 1}/{args.shards}: {len(s)} models, cost {cost:.1f}")
        print(f"{len(models.SPECS)} models")
        return 0
    if args.threads <= 0:
        args.threads = max(1, (ncpu - 4) // args.jobs) if ncpu > 4 else 1
    args.batches = [int(b) for b in args.batches.split(",")] if args.batches else None
    args.ingot = os.path.abspath(args.ingot)
    args.work = os.path.abspath(args.work)
    args.out = os.path.abspath(args.out)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
