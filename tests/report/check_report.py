#!/usr/bin/env python3
"""The diagnostics report, end to end on the CPU backend (docs/DIAGNOSE.md, issue 11).

    check_report.py --ingot BUILD/ingot --work DIR

Profiles a small synthetic model with `ingot profile --cpu --json --html --trace`, checks the JSON and the
Chrome trace, then renders the HTML report in headless Chromium: a screenshot, the DOM after its script
ran (the verdict text, one roofline point per step, the class and memory bars) and no console errors.
Does the same for an `ingot sweep` report (one point per batch that fit, the out-of-memory stop).
Without a Chromium to run, the browser part is skipped with a message (exit 0); everything else still
runs. Exit status 1 on any failed check.
"""
import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def check(cond, what):
    print(("  ok    " if cond else "  FAIL  ") + what)
    if not cond:
        failures.append(what)
    return cond


def run(cmd, **kw):
    print("$ " + " ".join(cmd))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        p = shutil.which(name)
        if p:
            return p
    return None


def render(browser, page, png, work):
    """Screenshot and DOM of page; returns (dom, console lines with errors)."""
    prof = os.path.join(work, "chromium-profile")
    common = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--no-first-run", "--user-data-dir=" + prof, "--enable-logging=stderr", "--v=0",
              "--window-size=1280,2600", "--virtual-time-budget=5000"]
    url = "file://" + os.path.abspath(page)
    shot = run(common + ["--screenshot=" + png, url])
    dom = run(common + ["--dump-dom", url])
    log = shot.stderr + dom.stderr
    errors = [l for l in log.splitlines() if "CONSOLE" in l and re.search(r"error|uncaught", l, re.I)]
    check(shot.returncode == 0 and dom.returncode == 0, f"chromium ran on {os.path.basename(page)}")
    return dom.stdout, errors


def check_page(dom, errors, png, expect_points, verdict=None, label="report"):
    check(os.path.exists(png) and os.path.getsize(png) > 20000 and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n",
          f"{label}: screenshot {png} is a PNG of some size")
    check('data-rendered="1"' in dom, f"{label}: the page's script ran to the end")
    check("data-errors" not in dom, f"{label}: no script error caught by the page")
    check(not errors, f"{label}: no console errors" + ("" if not errors else ": " + " | ".join(errors[:3])))
    for cls, n in expect_points.items():
        got = len(re.findall(r'<circle[^>]*class="%s' % cls, dom))
        check(got == n, f"{label}: {n} '{cls}' points drawn (found {got})")
    if verdict is not None:
        m = re.search(r'<div id="verdict">(.*?)</div>', dom, re.S)
        check(m is not None and html.unescape(m.group(1)) == verdict, f"{label}: the verdict is shown verbatim")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingot", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    env = dict(os.environ, INGOT_CACHE_DIR=os.path.join(a.work, "cache"))
    models = os.path.join(a.work, "models")
    r = run([sys.executable, os.path.join(HERE, "..", "diag", "make_synthetic.py"), models])
    if not check(r.returncode == 0, "synthetic models made"):
        print(r.stderr)
        return 1

    # ---- ingot profile: JSON, trace, HTML
    page, trace = os.path.join(a.work, "report.html"), os.path.join(a.work, "trace.json")
    r = run([a.ingot, "profile", os.path.join(models, "tiny_chain.onnx"), "--cpu", "--batch", "4", "--json",
             "--html", page, "--trace", trace], env=env)
    if not check(r.returncode == 0, "ingot profile --cpu --json --html --trace"):
        print(r.stderr)
        return 1
    d = json.loads(r.stdout)
    n = len(d["steps"])
    check(n >= 100, f"{n} steps: the 100 MatMuls (their Tanh fused in) of tiny_chain")
    check(d["backend"] == "cpu" and d["batch"] == 4, "backend cpu, batch 4")
    check(d["bottleneck"] in ("bandwidth", "compute", "launch", "capacity", "inefficient kernels"),
          f"a bottleneck: {d['bottleneck']}")
    check(d["verdict"].startswith(("bandwidth-bound", "compute-bound", "launch-bound", "inefficient kernels",
                                   "capacity-bound")), "the verdict names the bottleneck first")
    shares = sum(c["share"] for c in d["classes"].values())
    check(abs(shares - 1) < 1e-6, f"class shares add up to 1 ({shares:.6f})")
    check(all(s["class"] in d["classes"] and s["ms"] > 0 and s["cure"] for s in d["steps"]),
          "every step has a time, a class and a cure")
    check(all(s["flops"] > 0 and s["bytes_read"] > 0 and s["bytes_written"] > 0 for s in d["steps"]),
          "every step has FLOPs and bytes")
    steps_ms = sum(s["ms"] for s in d["steps"])
    check(abs(steps_ms - d["run"]["steps_ms"]) < 1e-6 * max(1, steps_ms), "steps_ms is the sum of the steps")
    m = d["memory"]
    check(m["measured"] and m["weights"] > 1_600_000, "memory accounts: weights (100 x 64x64 floats)")
    check(m["activation_lower_bound"] <= m["arena"] and m["activations"] <= m["arena"] <= m["activation_no_reuse"],
          "memory accounts: lower bound, activations <= arena <= no reuse")
    check(d["ceilings"]["copy_gbs"] > 0 and d["ceilings"]["fp32_tflops"] > 0, "the CPU ceilings were measured")
    t = json.load(open(trace))
    ev = t["traceEvents"]
    check(sum(1 for e in ev if e["ph"] == "X") == n, "trace: one slice per step")
    check(sum(1 for e in ev if e["ph"] == "C") == n + 1, "trace: the live-bytes counter at every step")
    check({e["cat"] for e in ev if e["ph"] == "X"} <= set(d["classes"]), "trace: slices categorised by class")

    # ---- ingot sweep: stops where memory runs out
    spage = os.path.join(a.work, "sweep.html")
    r = run([a.ingot, "sweep", os.path.join(models, "capacity.onnx"), "--cpu", "--batch", "1,2,4,8",
             "--mem-limit", "100M", "--json", "--html", spage], env=env)
    check(r.returncode == 0, "ingot sweep --cpu --mem-limit (a stop for memory is not a failure)")
    sw = json.loads(r.stdout)["sweep"] if r.returncode == 0 else []
    # 33.6 MB of activations per sample: batches 1 and 2 fit in 100 MB, 4 does not, 8 is not tried
    check([w["batch"] for w in sw] == [1, 2, 4] and sw[0]["ok"] and sw[1]["ok"] and not sw[2]["ok"]
          and "out of memory" in sw[2]["note"], "sweep: batches 1 and 2 fit, 4 is out of memory, 8 is not tried")
    check(sw and sw[1]["peak_bytes"] > 1.9 * sw[0]["peak_bytes"], "sweep: memory grows with the batch")

    # ---- the browser
    browser = find_chromium()
    if not browser:
        print("check_report: SKIP the browser checks: no chromium found (scripts/setup.sh installs the Debian "
              "package chromium)")
    else:
        dom, errors = render(browser, page, os.path.join(a.work, "report.png"), a.work)
        check_page(dom, errors, os.path.join(a.work, "report.png"), {"step-point": n}, d["verdict"])
        check(len(re.findall(r'<tr class="step-row"', dom)) == min(60, n), "the step table lists the slowest steps")
        check(len(re.findall(r'class="mem-bar"', dom)) >= 7, "memory bars drawn")
        if sw:
            dom, errors = render(browser, spage, os.path.join(a.work, "sweep.png"), a.work)
            ok_rows = sum(1 for w in sw if w["ok"])  # one point per batch that ran, on each of the two plots
            check_page(dom, errors, os.path.join(a.work, "sweep.png"), {"sweep-point": 2 * ok_rows},
                       label="sweep report")
            check(">OOM<" in dom, "sweep report: the out-of-memory batch is marked")
    print(f"check_report: {'FAILED: ' + str(len(failures)) + ' checks' if failures else 'all checks passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
