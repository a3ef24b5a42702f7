#!/usr/bin/env bash
# Every check CI runs, in one command: install, format check, build with -Werror, unit tests, the
# installed library with examples/ built against it, unit tests under AddressSanitizer +
# UndefinedBehaviorSanitizer, the concurrency tests under ThreadSanitizer, the malformed-model corpus,
# a bounded fuzzing run,
# ONNX node-test conformance, shape inference against onnx, the FLOPs check, whole models against ONNX
# Runtime. Ends with one summary line "N passed, M failed".
#   FUZZ_SECONDS=60 (default) bounds the fuzzing run; SKIP_SANITIZERS=1 / SKIP_FUZZ=1 skip those stages.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
INGOT_SETUP_BROWSER=1 "$here/scripts/setup.sh" || { echo "test: scripts/setup.sh failed: nothing was tested" >&2; exit 1; }
# Python tools (the fuzz seeds, the malformed corpus, run_all's checks) run in setup.sh's venv
venv=${INGOT_VENV:-$here/.venv}
export VIRTUAL_ENV=$venv PATH=$venv/bin:$PATH

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
# the package as a user gets it: a fresh build installed to a temporary prefix, examples/ built against
# it with CMake and pkg-config and run; then the same for build/ installed (examples/check_install.sh)
stage "install + example" examples/check_install.sh "$build"
if [ "${SKIP_SANITIZERS:-0}" != 1 ]; then
  stage "build (ASan+UBSan)" scripts/build.sh "$asan" -DCMAKE_BUILD_TYPE=Debug -DINGOT_SANITIZE_ADDRESS=ON -DINGOT_SANITIZE_UNDEFINED=ON
  stage "unit tests (ASan+UBSan)" env ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$asan" --output-on-failure -j2
fi
# ---- ThreadSanitizer: contexts of one engine run from several threads (test_concurrency, test_api).
# halt_on_error makes a race exit non-zero, so one report fails the stage. CUDA off: TSan does not
# know the driver's threads. Clang: GCC's target_clones resolvers (src/ops/conv.c) run before the TSan
# runtime starts and crash at load. SKIP_SANITIZERS=1 skips this stage too.
tsan=$here/build-tsan
if [ "${SKIP_SANITIZERS:-0}" != 1 ]; then
  stage "build (TSan)" scripts/build.sh "$tsan" -DCMAKE_BUILD_TYPE=Debug -DINGOT_SANITIZE_THREAD=ON -DINGOT_CUDA=OFF \
    -DCMAKE_C_COMPILER=clang
  stage "concurrency tests (TSan)" env TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    ctest --test-dir "$tsan" --output-on-failure -R '^(test_concurrency|test_api)$'
fi
# a missing or non-executable script fails its stage (exit 126/127), it is never skipped silently
if [ "${SKIP_FUZZ:-0}" = 1 ]; then
  echo "::: fuzzing: skipped (SKIP_FUZZ=1)"
else
  stage "fuzzing (${FUZZ_SECONDS:-60} s) + regressions" tests/fuzz/run.sh "${FUZZ_SECONDS:-60}"
fi
# run_all rebuilds first (a no-op after the build stage): a broken build fails here too, not old binaries
stage "conformance, shapes, FLOPs, models" tests/run_all.sh "$build" --no-unit
stage "diagnostics: synthetic bottlenecks, HTML report in headless Chromium" tests/report/run.sh "$build"
echo
echo "stages: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
