#!/usr/bin/env bash
# Build the libFuzzer targets with clang (ASan + UBSan), replay every saved regression input, then
# fuzz for a bounded time over a fresh seed corpus (gen_seeds.py + the malformed corpus).
#
#   tests/fuzz/run.sh [SECONDS]      (default 60: 25% to fuzz_load, 25% to fuzz_run, 20% to
#                                     fuzz_engine, 15% each to fuzz_reader and fuzz_tensor)
#
# A crash, leak, UB report or timeout fails the run; libFuzzer writes the input that caused it into
# tests/fuzz/regressions/<target>/ so it is kept, fixed, and replayed from then on (the README there lists
# each kept input and its fix). A regression input that crashes, or a failed build, fails the run too.
# FUZZ_BUILD (default build-fuzz) is the build folder; FUZZ_JOBS runs that many fuzzing processes.
set -euo pipefail
secs=${1:-60}
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD:-$here/build-fuzz}
regs=$here/tests/fuzz/regressions
command -v clang >/dev/null || { echo "fuzz: clang is needed"; exit 1; }

mkdir -p "$build"
# quiet when it works; the errors, not a bare exit status, when it does not
quiet() { # quiet WHAT COMMAND...
  local what=$1; shift
  "$@" >"$build/$what.log" 2>&1 && return 0
  grep -E -A3 'error|Error|undefined reference' "$build/$what.log" | head -60 || tail -n 20 "$build/$what.log"
  echo "fuzz: $what failed (full log: $build/$what.log)"
  exit 1
}
quiet configure env CC=clang cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINGOT_BUILD_FUZZERS=ON \
  -DINGOT_BUILD_TESTS=OFF -DINGOT_CUDA=OFF -DINGOT_SANITIZE_ADDRESS=ON -DINGOT_SANITIZE_UNDEFINED=ON
quiet build cmake --build "$build" -j"$(nproc)" --target fuzz_load fuzz_reader fuzz_tensor fuzz_engine fuzz_run ingot

corpus=$build/fuzz-corpus
rm -rf "$corpus/seeds" "$corpus/malformed"
python3 "$here/tests/fuzz/gen_seeds.py" "$corpus/seeds"
python3 "$here/tests/malformed/gen_malformed.py" "$corpus/malformed" >/dev/null
mkdir -p "$corpus/load" "$corpus/reader" "$corpus/tensor" "$corpus/engine" "$corpus/run" "$regs/load" "$regs/reader" \
  "$regs/tensor" "$regs/engine" "$regs/run"
# engine-file seeds: CPU engines of the seed models that build (the others are no seeds)
rm -rf "$corpus/seeds/engine" && mkdir -p "$corpus/seeds/engine"
for m in "$corpus"/seeds/load/*; do
  ASAN_OPTIONS=detect_leaks=0 "$build/ingot" build "$m" -o "$corpus/seeds/engine/$(basename "$m").ingot" --cpu \
    >/dev/null 2>&1 || true
done
find "$corpus/seeds/engine" -type f -size +64k -delete # small seeds: mutations stay fast
n_engine=$(find "$corpus/seeds/engine" -type f | wc -l)
[ "$n_engine" -gt 0 ] || { echo "fuzz: no engine-file seed could be built"; exit 1; }
echo "fuzz: $n_engine engine-file seeds"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
opts=(-timeout=10 -rss_limit_mb=2560 -malloc_limit_mb=1024 -print_final_stats=1)

# 1. regressions: each saved input once, in its own process so every crashing one is named
bad=0
for t in load reader tensor engine run; do
  mapfile -t files < <(find "$regs/$t" -type f ! -name '.*' | sort)
  echo "fuzz: replaying ${#files[@]} regression inputs of fuzz_$t"
  for f in "${files[@]}"; do
    log=$build/replay_$t.log
    if ! "$build/tests/fuzz/fuzz_$t" "${opts[@]}" "$f" >"$log" 2>&1; then
      grep -vE '^(INFO:|MS:|stat::|\s*$)' "$log" | head -40
      echo "fuzz: regression input ${f#"$here"/} crashes fuzz_$t"
      bad=$((bad + 1))
    fi
  done
done
if [ "$bad" -gt 0 ]; then
  echo "fuzz: FAILED: $bad regression inputs crash (tests/fuzz/regressions/README.md says what each tests)"
  exit 1
fi

# 2. bounded fuzzing; new interesting inputs go to $corpus/<t>, crashes to regressions/<t>/
run() { # run TARGET SECONDS SEED_DIRS...
  local t=$1 s=$2 rc=0; shift 2
  [ "$s" -gt 0 ] || return 0
  echo "fuzz: fuzz_$t for $s s"
  set +e
  "$build/tests/fuzz/fuzz_$t" "${opts[@]}" -max_total_time="$s" -artifact_prefix="$regs/$t/" \
    ${FUZZ_JOBS:+-jobs=$FUZZ_JOBS -workers=$FUZZ_JOBS} -dict="$here/tests/fuzz/onnx.dict" \
    "$corpus/$t" "$@" >"$build/fuzz_$t.log" 2>&1
  rc=$?
  set -e
  # the summary, and everything about a failure
  grep -E '^(#[0-9]+[[:space:]]+DONE|stat::|INFO: seed corpus)' "$build/fuzz_$t.log" || true
  if [ "$rc" -ne 0 ]; then
    grep -vE '^(#[0-9]+|INFO:|MS:|NEW_FUNC|\s*$)' "$build/fuzz_$t.log" | head -60
    echo "fuzz: fuzz_$t FAILED (exit $rc); the input is in $regs/$t/ (full log: $build/fuzz_$t.log)"
  fi
  return "$rc"
}
run load $((secs / 4)) "$corpus/seeds/load" "$corpus/malformed"
run run $((secs / 4)) "$corpus/seeds/run" "$corpus/seeds/load"
run engine $((secs / 5)) "$corpus/seeds/engine"
run reader $((secs * 3 / 20)) "$corpus/seeds/load" "$corpus/malformed"
run tensor $((secs - secs / 4 - secs / 4 - secs / 5 - secs * 3 / 20)) "$corpus/seeds/tensor"
echo "fuzz: done, no crashes"
