#!/usr/bin/env python3
"""The memory planner on real models (issue 4's checks):

1. `ingot plan --json` at batch 1 and 32 for every model given: arena <= 1.05 x the lower bound.
   The onnx package's 'light' models bake batch 1 into their shapes, so they are planned at their
   own batch; the project's models have a symbolic batch and are planned at both.
2. `ingot run` three ways on the same seeded inputs: with the planned arena, with debug canaries
   (guard bytes checked after every step, dead bytes poisoned) and with no reuse at all. The outputs
   must be bit-identical: sharing bytes by lifetime must never change a result.

    check_arena.py --ingot build/ingot MODEL.onnx ...      ends with "N passed, M failed"
"""
import argparse, filecmp, glob, json, os, subprocess, sys, tempfile

LIMIT = 1.05


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    passed = failed = 0
    rows = []

    def report(ok, what):
        nonlocal passed, failed
        passed += ok
        failed += not ok
        print(("PASS " if ok else "FAIL ") + what, flush=True)

    for path in a.models:
        name = os.path.basename(path)
        info = json.loads(subprocess.run([a.ingot, "inspect", "--json", path], capture_output=True, text=True,
                                         check=True).stdout)
        symbolic = any(isinstance(d, str) for i in info["inputs"] for d in (i["shape"] or []))
        for batch in ([1, 32] if symbolic else [None]):
            cmd = [a.ingot, "plan", "--json", path] + (["--batch", str(batch)] if batch else [])
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                report(False, f"{name} batch {batch}: ingot plan failed: {p.stderr.strip()}")
                continue
            j = json.loads(p.stdout)
            ratio = j["arena_bytes"] / max(j["lower_bound"], 1)
            rows.append((name, batch or "fixed", j["no_reuse_bytes"], j["lower_bound"], j["arena_bytes"], ratio,
                         j["strategy"], j["order"]))
            report(ratio <= LIMIT, f"{name} batch {batch or 'fixed'}: arena {j['arena_bytes']} / lower bound "
                                   f"{j['lower_bound']} = {ratio:.4f} ({j['strategy']}, {j['order']} order)")
        with tempfile.TemporaryDirectory() as tmp:
            outs = {}
            ok = True
            for mode in ["planned", "canaries", "no-reuse"]:
                d = os.path.join(tmp, mode)
                flags = {"planned": [], "canaries": ["--debug-memory"], "no-reuse": ["--no-memory-reuse"]}[mode]
                p = subprocess.run([a.ingot, "run", path, "--batch", "2", "--seed", "7", "--output-dir", d] + flags,
                                   capture_output=True, text=True)
                if p.returncode != 0:
                    report(False, f"{name}: ingot run ({mode}) failed: {p.stderr.strip()}")
                    ok = False
                    break
                outs[mode] = sorted(os.listdir(d))
            if ok:
                ref = os.path.join(tmp, "no-reuse")
                same = all(outs[m] == outs["no-reuse"] and
                           all(filecmp.cmp(os.path.join(tmp, m, f), os.path.join(ref, f), shallow=False)
                               for f in outs[m]) for m in ("planned", "canaries"))
                report(same, f"{name}: planned, canary-checked and no-reuse runs "
                             f"{'bit-identical' if same else 'DIFFER'} ({len(outs['no-reuse'])} outputs)")
    print()
    print(f"| model | batch | no reuse | lower bound | arena | ratio | strategy | order |")
    print(f"|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:,} | {r[3]:,} | {r[4]:,} | {r[5]:.4f} | {r[6]} | {r[7]} |")
    print(f"\n{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
