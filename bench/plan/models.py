#!/usr/bin/env python3
"""Plan every model given (default: the onnx package's 'light' models) at batch 1 and 32 with
`ingot plan --json` and print the table of docs/PLANNER.md: model, batch, no-reuse, lower bound,
arena, ratio, strategy, order, wall time of the whole `ingot plan` process (load, infer, plan).

    bench/plan/models.py [--ingot build-plan/ingot] [--batch 1,32] [--symbolic-batch] [MODEL.onnx ...]

--symbolic-batch first rewrites each model's leading input/output dim to a symbol "N" (and drops
value_info) into a temporary folder, so that fixed-batch models (the light models) can be planned at
batch 32; models whose Reshape targets bake the batch in then fail at 32, which the table shows.
Exit status 1 when some plan is above 1.05 x its lower bound.
"""
import argparse, glob, json, os, subprocess, sys, tempfile, time


def symbolic_copy(path, out_dir):
    import onnx
    m = onnx.load(path)
    inits = {i.name for i in m.graph.initializer}
    for v in list(m.graph.input) + list(m.graph.output):
        if v.name in inits:
            continue
        dims = v.type.tensor_type.shape.dim
        if len(dims) > 0:
            dims[0].ClearField("dim_value")
            dims[0].dim_param = "N"
    del m.graph.value_info[:]
    out = os.path.join(out_dir, os.path.basename(path))
    onnx.save(m, out)
    return out

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", default=os.path.join(os.path.dirname(__file__), "../../build-plan/ingot"))
    ap.add_argument("--batch", default="1,32")
    ap.add_argument("--symbolic-batch", action="store_true")
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    models = a.models
    if not models:
        import onnx
        d = os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light")
        models = sorted(glob.glob(os.path.join(d, "*.onnx")))
    if a.symbolic_batch:
        tmp = tempfile.mkdtemp(prefix="ingot_plan_models_")
        models = [symbolic_copy(m, tmp) for m in models]
    mib = lambda b: "%.2f" % (b / 2**20)
    print("| model | batch | steps | no reuse MiB | lower bound MiB | arena MiB | ratio | strategy | order (original / memory-aware arena MiB) | ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    worst = 1.0
    for m in models:
        for b in a.batch.split(","):
            t0 = time.time()
            r = subprocess.run([a.ingot, "plan", m, "--batch", b, "--json"], capture_output=True, text=True)
            ms = (time.time() - t0) * 1e3
            name = os.path.basename(m).replace(".onnx", "")
            if r.returncode != 0:
                print("| %s | %s | - | - | - | - | - | %s | - | - |" % (name, b, r.stderr.strip().split(": ")[-1][:60]))
                continue
            p = json.loads(r.stdout)
            o = p["orders"]
            orders = "%s (%s / %s)" % (p["order"], mib(o["original"]["arena_bytes"]),
                                        (mib(o["memory_aware"]["arena_bytes"]) if o["memory_aware"]["packed"]
                                         else "LB " + mib(o["memory_aware"]["lower_bound"])) if "memory_aware" in o else "same")
            worst = max(worst, p["ratio"])
            print("| %s | %s | %d | %s | %s | %s | %.4f | %s | %s | %.0f |" % (
                name, b, p["steps"], mib(p["no_reuse_bytes"]), mib(p["lower_bound"]), mib(p["arena_bytes"]),
                p["ratio"], p["strategy"], orders, ms))
    print("\nworst ratio %.4f" % worst)
    return 0 if worst <= 1.05 else 1

if __name__ == "__main__":
    sys.exit(main())
