#!/usr/bin/env bash
# Every check of ingot's test infrastructure, in one command:
#   build (cmake, if needed) -> generate ONNX test data and the export-shaped models into BUILD/tests/
#   -> unit tests (ctest) -> ONNX conformance (ingot-conformance) -> shape inference vs onnx
#   (check_shapes.py) -> ResNet-50 FLOPs (check_flops.py) -> whole models vs ONNX Runtime (check_models.py)
#   -> memory plans and planned-vs-unplanned execution (check_arena.py)
# and ends with each step's summary line. Exit status 0 only when every step passed; a failed configure,
# build or test-data generator stops the run first (with --no-build the binaries there are used as is).
#
#   tests/run_all.sh [BUILD_DIR] [--no-build] [--no-unit] [--only STEP,...] [-j N]
#   STEP: unit conformance shapes flops models arena.   BUILD_DIR defaults to build/.
# Needs python3 with onnx==1.23.1, onnxruntime, numpy: the virtual environment scripts/setup.sh makes
# (.venv/, or INGOT_VENV) when it exists, else the python3 on PATH.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$repo/build
do_build=1 do_unit=1 only="" jobs=2
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build=$2; shift ;;
    --no-build) do_build=0 ;;
    --no-unit) do_unit=0 ;;
    --only) only=$2; shift ;;
    -j) jobs=$2; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    -*) echo "run_all: unknown option $1" >&2; exit 2 ;;
    *) build=$1 ;;
  esac
  shift
done
build=$(mkdir -p "$build" && cd "$build" && pwd)
venv=${INGOT_VENV:-$repo/.venv}
if [ -x "$venv/bin/python3" ]; then
  export VIRTUAL_ENV=$venv PATH=$venv/bin:$PATH
fi
data=$build/tests/data
models=$build/tests/models
logs=$build/tests/logs
mkdir -p "$data" "$models" "$logs"
want() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

t_all=$SECONDS
summary=()
failed=0
# step NAME COMMAND...: run with output shown and logged; remember its last line as the summary
step() {
  local name=$1; shift
  local t0=$SECONDS log=$logs/$name.log rc
  echo "=== $name: $*"
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  local last
  last=$(grep -E "passed|failed" "$log" | tail -n 1)
  [ -n "$last" ] || last=$(grep -v "^[[:space:]]*$" "$log" | tail -n 1)
  [ $rc -eq 0 ] || failed=$((failed + 1))
  summary+=("$(printf '%-12s %-5s %4ss  %s' "$name" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" $((SECONDS - t0)) "$last")")
  return $rc
}

if [ -n "$only" ]; then
  for s in ${only//,/ }; do
    case $s in unit | conformance | shapes | flops | models | arena) ;;
    *) echo "run_all: unknown step '$s' in --only (steps: unit conformance shapes flops models arena)" >&2; exit 2 ;;
    esac
  done
fi

# build: a failed configure or build stops here, with its errors shown, so old binaries are never tested
if [ $do_build -eq 1 ]; then
  if [ ! -f "$build/CMakeCache.txt" ]; then
    if ! cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$logs/configure.log" 2>&1; then
      cat "$logs/configure.log" >&2
      echo "run_all: configuring $build failed" >&2
      exit 1
    fi
  fi
  cmake --build "$build" -j"$jobs" >"$logs/build.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    grep -E -A3 'error|Error' "$logs/build.log" | head -n 60 || tail -n 20 "$logs/build.log"
    echo "run_all: building $build failed (exit $rc; full log: $logs/build.log); not testing old binaries" >&2
    exit 1
  fi
  grep -E -A3 'warning' "$logs/build.log"
fi
for bin in ingot ingot-conformance; do
  if [ ! -x "$build/$bin" ]; then
    echo "run_all: $build/$bin is missing (build failed? is tools/conformance added to CMake?)" >&2
    exit 1
  fi
  # with --no-build the caller vouches for these: say which ones, and how old they are
  echo "run_all: using $build/$bin (built $(date -r "$build/$bin" '+%Y-%m-%d %H:%M:%S')$([ $do_build -eq 1 ] || echo ', --no-build: not rebuilt'))"
done
echo "run_all: using $(command -v python3 || echo 'no python3')"
python3 -c 'import onnx, onnxruntime, numpy' 2>/dev/null || {
  echo "run_all: $(command -v python3 || echo python3) needs onnx, onnxruntime and numpy (scripts/setup.sh puts them in .venv/)" >&2
  exit 1
}

# test data: regenerated only when onnx, the op list or the generators change; a failed generator stops
# the run (tests over missing or half-written data would say little)
gen() { # gen LOGNAME COMMAND...: output to the log, shown when it fails
  local name=$1 rc=0; shift
  "$@" >"$logs/$name.log" 2>&1 || rc=$?
  [ $rc -eq 0 ] && return 0
  tail -n 30 "$logs/$name.log" >&2
  echo "run_all: test-data generator $name failed (exit $rc; full log: $logs/$name.log)" >&2
  exit 1
}
gen gen_node_tests python3 "$repo/tests/conformance/gen_node_tests.py" "$data"
tail -n 1 "$logs/gen_node_tests.log"
if [ ! -f "$models/.stamp" ] || [ "$repo/tests/models/make_models.py" -nt "$models/.stamp" ]; then
  rm -f "$models/.stamp"
  gen make_models python3 "$repo/tests/models/make_models.py" "$models" --resnet50
  touch "$models/.stamp"
fi

export INGOT="$build/ingot"
if [ $do_unit -eq 1 ] && want unit; then
  step unit ctest --test-dir "$build" --output-on-failure -j"$jobs"
fi
if want conformance; then
  step conformance "$build/ingot-conformance" "$data" --manifest "$repo/tests/conformance/manifest.txt" \
    -j "$jobs" --threads 1 --timeout 120 --min-pass 500
fi
if want shapes; then
  step shapes python3 "$repo/tests/conformance/check_shapes.py" --ingot "$build/ingot" --tests "$data" \
    --models "$models" -j "$jobs"
fi
if want flops; then
  step flops python3 "$repo/tests/models/check_flops.py" --ingot "$build/ingot" --model "$models/resnet50.onnx"
fi
if want models; then
  step models python3 "$repo/tests/models/check_models.py" --ingot "$build/ingot" --models "$models"
fi
if want arena; then
  light=$(python3 -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend/test/data/light'))")
  step arena python3 "$repo/tests/models/check_arena.py" --ingot "$build/ingot" "$models"/*.onnx "$light"/*.onnx
fi

echo
echo "=== run_all summary ($((SECONDS - t_all)) s; logs in $logs)"
for s in "${summary[@]}"; do echo "$s"; done
echo "run_all: ${#summary[@]} steps, $((${#summary[@]} - failed)) passed, $failed failed"
[ $failed -eq 0 ]
