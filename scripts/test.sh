#!/usr/bin/env bash
# Every check CI runs, in one command: install, format check, build with -Werror, unit tests, unit tests
# under AddressSanitizer + UndefinedBehaviorSanitizer, the malformed-model corpus, a bounded fuzzing run,
# ONNX node-test conformance, shape inference against onnx, the FLOPs check, whole models against ONNX
# Runtime. Ends with one summary line "N passed, M failed".
#   FUZZ_SECONDS=60 (default) bounds the fuzzing run; SKIP_SANITIZERS=1 / SKIP_FUZZ=1 skip those stages.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
"$here/scripts/setup.sh" || exit 1

passed=0 failed=0
stage() { # stage NAME COMMAND...: run, record, keep going
  local name=$1; shift
  local t0=$SECONDS
  echo "::: $name"
  if "$@"; then
    passed=$((passed + 1)); echo "::: $name: ok ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1)); echo "::: $name: FAILED ($((SECONDS - t0)) s)"
  fi
}

build=$here/build
asan=$here/build-asan
data=$build/tests/data

stage "format check" scripts/format.sh --check
stage "build (Release, -Werror)" scripts/build.sh "$build"
stage "unit tests" ctest --test-dir "$build" --output-on-failure -j2
if [ "${SKIP_SANITIZERS:-0}" != 1 ]; then
  stage "build (ASan+UBSan)" scripts/build.sh "$asan" -DCMAKE_BUILD_TYPE=Debug -DINGOT_SANITIZE_ADDRESS=ON -DINGOT_SANITIZE_UNDEFINED=ON
  stage "unit tests (ASan+UBSan)" env ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$asan" --output-on-failure -j2
fi
if [ "${SKIP_FUZZ:-0}" != 1 ] && [ -x tests/fuzz/run.sh ]; then
  stage "fuzzing (${FUZZ_SECONDS:-60} s) + regressions" tests/fuzz/run.sh "${FUZZ_SECONDS:-60}"
fi
if [ -x tests/run_all.sh ]; then
  stage "conformance, shapes, FLOPs, models" tests/run_all.sh "$build" --no-unit --no-build
fi
echo
echo "stages: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
