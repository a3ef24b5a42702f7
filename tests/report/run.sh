#!/usr/bin/env bash
# The diagnostics stage of scripts/test.sh (docs/DIAGNOSE.md): the synthetic models profiled on the CPU
# backend (tests/diag/check_synthetic.py --cpu) and the HTML report rendered in headless Chromium
# (tests/report/check_report.py; its browser checks skip with a message when no Chromium is installed).
#   tests/report/run.sh [BUILD_DIR]     (default build/)
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$repo/build}
venv=${INGOT_VENV:-$repo/.venv}
py=python3
[ -x "$venv/bin/python3" ] && py=$venv/bin/python3
if [ ! -x "$build/ingot" ]; then
  echo "report: $build/ingot is not built" >&2
  exit 1
fi
work=$build/tests/report
rm -rf "$work"
mkdir -p "$work"
rc=0
"$py" "$repo/tests/diag/check_synthetic.py" --ingot "$build/ingot" --work "$work/synthetic" --cpu || rc=1
"$py" "$repo/tests/report/check_report.py" --ingot "$build/ingot" --work "$work/report" || rc=1
echo "report: screenshots and pages in $work/report"
exit $rc
