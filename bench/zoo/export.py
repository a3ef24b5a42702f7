#!/usr/bin/env python3
"""Export one zoo model and compute its ONNX Runtime reference (CPU work; zoo.py runs several at once).

    export.py NAME WORKDIR [--threads N] [--check-batch 2] [--force] [--exporter torchscript|dynamo]

Writes WORKDIR/NAME/:
  model.onnx        fp32, dynamic batch, what `ingot bench` times: TorchScript's exporter at opset 17 (the
                    default), or with --exporter dynamo torch's dynamo exporter at opset 18 (torch.export +
                    onnxscript: the default of torch.onnx.export since torch 2.9, so what new users bring)
  check.onnx        the same graph with the input of the node making output 0 as one more output (a
                    random-weight model's logits can be degenerate; the features feeding them are not)
  inputs/<in>.npy   seeded inputs at the check batch; refs/<out>.npy the ONNX Runtime (CPU, fp32) outputs
  refs64/<out>.npy  the model's outputs in float64 (PyTorch on the CPU, same weights and inputs): the
                    exact answer, for telling ingot's fp32 error from ONNX Runtime's own
  meta.json "fp16_peer"  how far PyTorch's own fp16 (fp16 tensors, on the CPU) lands from ONNX Runtime's
                    fp32: the error fp16 storage costs this network, whoever runs it
  meta.json         status ("ok" or "error" with the message), inputs, outputs, reference norms, timings

A lock file (WORKDIR/NAME/.lock, holding the exporting pid) lets two zoo processes share a work dir: the
second waits for the first's meta.json instead of exporting again. Exit status 0 on success, 1 on an
error (recorded in meta.json), 3 when another live process holds the lock.
"""
import argparse
import json
import os
import sys
import time
import traceback
import warnings

META_VERSION = 7  # bump when what an export writes changes: older meta.json files are redone
OPSETS = {"torchscript": 17, "dynamo": 18}  # dynamo's lowest


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def take_lock(d):
    """True when this process now holds d/.lock (a stale lock of a dead process is taken over)."""
    path = os.path.join(d, ".lock")
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            return True
        except FileExistsError:
            try:
                pid = int(open(path).read().strip() or 0)
            except (OSError, ValueError):
                pid = 0
            if pid and pid_alive(pid):
                return False
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
    return False


def cached_ok(d, exporter):
    try:
        meta = json.load(open(os.path.join(d, "meta.json")))
    except (OSError, ValueError):
        return None
    if meta.get("version") != META_VERSION or meta.get("status") != "ok":
        return None
    if meta.get("exporter", "torchscript") != exporter:
        return None
    if not all(os.path.exists(os.path.join(d, f)) for f in ("model.onnx", "check.onnx")):
        return None
    return meta


def short_error(e):
    msg = f"{type(e).__name__}: {e}".strip()
    lines = [ln for ln in msg.splitlines() if ln.strip()]
    return " | ".join(lines[:6])[:800]


def numpy_inputs(spec, batch, seed=7):
    import numpy as np

    from models import TOKENS

    rng = np.random.default_rng(seed)
    feeds = {}
    for i in spec.inputs:
        shape = (batch,) + tuple(i.shape)
        if i.kind == TOKENS:
            feeds[i.name] = rng.integers(1, min(i.vocab, 1000), size=shape, dtype=np.int64)
        else:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def add_check_output(model_path, check_path):
    """check.onnx: model.onnx plus the input of the node producing output 0 as an output, when that is a
    float activation. Returns the added tensor's name or None (then check.onnx is a copy)."""
    import onnx

    m = onnx.load(model_path)
    inferred = onnx.shape_inference.infer_shapes(m)
    types = {vi.name: vi.type.tensor_type.elem_type for vi in inferred.graph.value_info}
    inits = {t.name for t in m.graph.initializer}
    outs = {o.name for o in m.graph.output}
    graph_inputs = {i.name for i in m.graph.input}
    out0 = m.graph.output[0].name
    added = None
    last = next((n for n in reversed(m.graph.node) if out0 in n.output), None)
    if last is not None:
        for cand in last.input:
            if (cand and cand not in inits and cand not in outs and cand not in graph_inputs
                    and types.get(cand) == onnx.TensorProto.FLOAT):
                m.graph.output.append(onnx.helper.make_tensor_value_info(cand, onnx.TensorProto.FLOAT, None))
                added = cand
                break
    onnx.save(m, check_path)
    return added


def export(name, workdir, threads, check_batch, exporter="torchscript"):
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch

    import models

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    torch.set_num_threads(threads)
    spec = models.BY_NAME[name]
    d = os.path.join(workdir, name)
    meta = {"version": META_VERSION, "model": name, "source": spec.source, "family": spec.family,
            "note": spec.note, "batches": list(spec.batches), "channels_last": spec.channels_last,
            "check_batch": check_batch, "status": "error", "stage": "build", "torch": torch.__version__,
            "exporter": exporter}
    t0 = time.time()
    try:
        model = models.build(spec)
        # perturbed norm layers can make a deep network chaotic (EfficientNetV2-S: a 1e-7 change of the
        # input moves the output by 40%): then no reference means anything; keep the calibrated weights
        xs = models.example_inputs(spec, check_batch)
        sens = models.sensitivity(model, xs)
        meta["weights"] = "perturbed"
        if not sens < 3e-5:
            model = models.build(spec, perturb=False)
            meta["weights"] = f"calibrated only (perturbed: sensitivity {sens:.2g})"
            sens2, sens = sens, models.sensitivity(model, xs)
            if not sens < 3e-5:
                # statistics of 2 samples leave some channels' variance near 0 (LeViT's BatchNorm1d over
                # 16 tokens: sensitivity 3e-4 from 2 samples, 3e-6 from 32); only such models pay for more
                model = models.build(spec, perturb=False, calib_batch=32)
                meta["weights"] = (f"calibrated on 32 samples only (perturbed: sensitivity {sens2:.2g}; "
                                   f"calibrated on 2: {sens:.2g})")
                sens = models.sensitivity(model, xs)
        meta["sensitivity"] = sens
        meta["params"] = sum(p.numel() for p in model.parameters())
        # the PyTorch timing worker loads these, so it times exactly the weights checked here
        torch.save(model.state_dict(), os.path.join(d, "weights.pt"))
        meta["stage"] = "export"
        in_names = [i.name for i in spec.inputs]
        with torch.no_grad():
            y = model(*xs)
        n_out = len(y) if isinstance(y, (tuple, list)) else 1
        out_names = ["output"] if n_out == 1 else [f"output_{k}" for k in range(n_out)]
        dyn = {n: {0: "batch"} for n in in_names + out_names}
        path = os.path.join(d, "model.onnx")
        t1 = time.time()
        # not under no_grad: there nn.MultiheadAttention takes its fused fast path
        # (aten::_native_multi_head_attention), which has no ONNX export
        if exporter == "dynamo":  # its graph optimizer (constant folding included) runs by default
            torch.onnx.export(model, tuple(xs), path, input_names=in_names, output_names=out_names,
                              dynamic_shapes=dynamo_batch(model, xs), opset_version=OPSETS[exporter], dynamo=True,
                              external_data=False)
        else:
            torch.onnx.export(model, tuple(xs), path, input_names=in_names, output_names=out_names,
                              dynamic_axes=dyn, opset_version=OPSETS[exporter], do_constant_folding=True,
                              dynamo=False, **(spec.export_kwargs or {}))
        meta["export_s"] = round(time.time() - t1, 2)
        meta["onnx_MB"] = round(os.path.getsize(path) / 1e6, 1)
        del y

        meta["stage"] = "check model"
        added = add_check_output(path, os.path.join(d, "check.onnx"))
        meta["check_extra_output"] = added
        om = onnx.load(os.path.join(d, "check.onnx"), load_external_data=False)
        meta["opset"] = max((o.version for o in om.opset_import if o.domain in ("", "ai.onnx")), default=None)
        meta["nodes"] = len(om.graph.node)
        meta["ops"] = sorted({n.op_type for n in om.graph.node})
        del om

        meta["stage"] = "onnx runtime"
        feeds = numpy_inputs(spec, check_batch)
        os.makedirs(os.path.join(d, "inputs"), exist_ok=True)
        os.makedirs(os.path.join(d, "refs"), exist_ok=True)
        for k, v in feeds.items():
            np.save(os.path.join(d, "inputs", k + ".npy"), v)
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        t1 = time.time()
        sess = ort.InferenceSession(os.path.join(d, "check.onnx"), so, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        res = sess.run(None, feeds)
        meta["ort_s"] = round(time.time() - t1, 2)
        meta["inputs"] = [{"name": k, "dtype": str(v.dtype), "shape": ["batch"] + list(v.shape[1:])}
                          for k, v in feeds.items()]
        refs = []
        for n, r in zip(names, res):
            np.save(os.path.join(d, "refs", safe_name(n) + ".npy"), r)
            info = {"name": n, "file": safe_name(n) + ".npy", "dtype": str(r.dtype), "shape": list(r.shape),
                    "extra": n == added}
            if r.dtype.kind == "f":
                r64 = r.astype(np.float64)
                finite = bool(np.isfinite(r64).all())
                info.update(finite=finite, norm=float(np.linalg.norm(r64)) if finite else None,
                            rms=float(np.sqrt(np.mean(r64 * r64))) if finite and r.size else None,
                            max_abs=float(np.abs(r64).max()) if finite and r.size else None)
            refs.append(info)
        meta["refs"] = refs
        meta["stage"] = "fp64 reference"
        # float64 on the CPU costs several times ONNX Runtime's fp32: only where that stays seconds
        meta["fp64"] = fp64_reference(model, spec, feeds, out_names, dict(zip(names, res)), d) \
            if meta["ort_s"] <= 5 else {"ok": False, "error": f"skipped: ONNX Runtime took {meta['ort_s']} s"}
        meta["stage"] = "fp16 peer"
        meta["fp16_peer"] = fp16_peer(model, spec, feeds, out_names, dict(zip(names, res))) \
            if meta["ort_s"] <= 5 else {"ok": False, "error": f"skipped: ONNX Runtime took {meta['ort_s']} s"}
        del model
        meta["status"] = "ok"
        meta["stage"] = "done"
    except Exception as e:  # noqa: BLE001 -- every failure is a result to report
        meta["error"] = short_error(e)
        meta["traceback"] = traceback.format_exc()[-4000:]
    meta["total_s"] = round(time.time() - t0, 2)
    write_json(os.path.join(d, "meta.json"), meta)
    return meta


def dynamo_batch(model, xs):
    """torch.export's dynamic_shapes for a dynamic dim 0 of every input. A forward(*xs) (models.FirstOutput)
    takes them as one argument: its entry is the tuple of the inputs' (dynamic_axes, which the exporter
    converts per argument, fails there with "inputs[0] is a tuple, dynamic_shapes[0] a dict")."""
    import inspect

    import torch

    per = tuple({0: torch.export.Dim.DYNAMIC} for _ in xs)
    params = inspect.signature(model.forward).parameters.values()
    return (per,) if any(p.kind == p.VAR_POSITIONAL for p in params) else per


def run_as(model, spec, feeds, dtype):
    """The model's outputs (a list) with its parameters and float inputs converted to dtype, on the CPU.
    The conversion is in place: the model keeps dtype."""
    import torch

    model = model.to(dtype).eval()
    xs = [torch.from_numpy(feeds[i.name]).to(dtype) if feeds[i.name].dtype.kind == "f"
          else torch.from_numpy(feeds[i.name]) for i in spec.inputs]
    with torch.no_grad():
        y = model(*xs)
    return list(y) if isinstance(y, (tuple, list)) else [y]


def fp64_reference(model, spec, feeds, out_names, ort_out, d):
    """The model's outputs in float64 on the CPU, saved as refs64/<out>.npy, and ONNX Runtime's fp32 error
    against them. ONNX Runtime is the reference of record, but its fp32 is not exact: its
    InstanceNormalization, for one, loses about 1e-4 of relative accuracy on groups whose mean is 300
    times their spread (ingot: 1e-5), and deep pre-activation networks carry that to the output. Where
    ONNX Runtime is further from the exact answer than ingot, the exact answer judges. A model that does
    not run in float64 gets no such reference (the reason is recorded), never a failed export."""
    import numpy as np
    import torch

    t0 = time.time()
    try:
        ys = run_as(model, spec, feeds, torch.float64)
        if len(ys) != len(out_names):
            return {"ok": False, "error": f"{len(ys)} float64 outputs for {len(out_names)} exported ones"}
        os.makedirs(os.path.join(d, "refs64"), exist_ok=True)
        ort_rel = {}
        for n, t in zip(out_names, ys):
            r64 = t.detach().cpu().numpy()
            if r64.dtype != np.float64 or n not in ort_out or list(r64.shape) != list(ort_out[n].shape):
                continue
            np.save(os.path.join(d, "refs64", safe_name(n) + ".npy"), r64)
            nb = float(np.linalg.norm(r64))
            diff = float(np.linalg.norm(ort_out[n].astype(np.float64) - r64))
            ort_rel[n] = diff / nb if nb > 0 else diff
        return {"ok": True, "ort_rel": ort_rel, "s": round(time.time() - t0, 2)}
    except Exception as e:  # noqa: BLE001 -- a model without a float64 path keeps ONNX Runtime as its judge
        return {"ok": False, "error": short_error(e), "s": round(time.time() - t0, 2)}


def fp16_peer(model, spec, feeds, out_names, ort_out):
    """PyTorch's fp16 answer (weights and float inputs as fp16 tensors, each op rounding its output to fp16,
    on the CPU: the GPU stays free for the benchmarks) against ONNX Runtime's fp32: cosine and relative
    error per output. A random-weight network can amplify rounding so far that fp16 storage alone misses
    the zoo's cosine bound (RegNetY-1.6GF: fp32 implementations 2e-5 apart); then ingot's fp16 is judged
    against this peer. Run after fp64_reference (the model is float64 by then, rounded once to fp16)."""
    import numpy as np
    import torch

    t0 = time.time()
    try:
        ys = run_as(model, spec, feeds, torch.float16)
        if len(ys) != len(out_names):
            return {"ok": False, "error": f"{len(ys)} fp16 outputs for {len(out_names)} exported ones"}
        cos, rel = {}, {}
        for n, t in zip(out_names, ys):
            a = t.detach().float().cpu().numpy().astype(np.float64).ravel()
            if n not in ort_out or a.size != ort_out[n].size or not np.isfinite(a).all():
                continue
            b = ort_out[n].astype(np.float64).ravel()
            na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
            if na > 0 and nb > 0:
                cos[n] = float(a @ b / (na * nb))
                rel[n] = float(np.linalg.norm(a - b) / nb)
        return {"ok": bool(cos), "cos": cos, "rel": rel, "s": round(time.time() - t0, 2)}
    except Exception as e:  # noqa: BLE001 -- a model without an fp16 CPU path keeps the plain bound
        return {"ok": False, "error": short_error(e), "s": round(time.time() - t0, 2)}


def safe_name(n):
    """The file name `ingot run --output-dir` uses for an output: [A-Za-z0-9._-] kept, the rest '_'."""
    return "".join(c if c.isalnum() and c.isascii() or c in "._-" else "_" for c in n)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name")
    p.add_argument("workdir")
    p.add_argument("--threads", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    p.add_argument("--check-batch", type=int, default=2)
    p.add_argument("--force", action="store_true")
    p.add_argument("--exporter", choices=sorted(OPSETS), default="torchscript")
    a = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    d = os.path.join(a.workdir, a.name)
    os.makedirs(d, exist_ok=True)
    if not take_lock(d):
        print(f"{a.name}: another process is exporting it", file=sys.stderr)
        return 3
    try:
        if not a.force and cached_ok(d, a.exporter):
            print(f"{a.name}: exported already ({d})")
            return 0
        try:
            os.remove(os.path.join(d, "meta.json"))
        except FileNotFoundError:
            pass
        meta = export(a.name, a.workdir, a.threads, a.check_batch, a.exporter)
    finally:
        try:
            os.remove(os.path.join(d, ".lock"))
        except FileNotFoundError:
            pass
    if meta["status"] == "ok":
        print(f"{a.name}: exported in {meta['export_s']} s ({meta['onnx_MB']} MB, opset {meta['opset']}), "
              f"ONNX Runtime {meta['ort_s']} s")
        return 0
    print(f"{a.name}: {meta['stage']} failed: {meta['error']}", file=sys.stderr)
    print(meta.get("traceback", ""), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
