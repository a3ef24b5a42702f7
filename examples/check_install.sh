#!/usr/bin/env bash
# The package as a user gets it (scripts/test.sh's "install + example" stage):
#
#   examples/check_install.sh [BUILD_DIR]
#
#  1. a fresh CPU-only build (no tests) in a temporary folder, `cmake --install`ed to a temporary prefix;
#     libingot.so has a versioned SONAME and exports only ingot_* symbols
#  2. examples/ built against that prefix with CMake (find_package(ingot): classify links
#     ingot::ingot, classify_static ingot::ingot_static and must not need libingot.so) and with
#     pkg-config on a plain cc command line: shared (`pkg-config --cflags --libs ingot`), fully static
#     (`--static` and cc -static), and libingot.a with nothing but -lm -pthread
#  3. every binary runs classify on two small models of tests/models/make_models.py (resnet_mini: float
#     input; bert_mini: int64 inputs): build, save, load from file and from memory, run, and the
#     outputs of the loaded engines bit-identical to the built one's
#  4. with BUILD_DIR (scripts/test.sh passes build/): that build installed to a second prefix and
#     checked as in 1-3 with CMake and shared pkg-config (it has the CUDA backend where one was found;
#     the runs use the CPU backend).
#
# Any failing step fails the run (exit 1), and the temporary folder is kept and named. The fresh build
# is CPU-only because CUDA would change nothing checked here but take longer; INSTALL_CMAKE_ARGS adds
# configure arguments to it (e.g. -DINGOT_CUDA=ON). Needs python3 with onnx (scripts/setup.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
build_dir=${1:-}
tmp=$(mktemp -d /tmp/ingot-install.XXXXXX)
cleanup() {
  local rc=$?
  if [ $rc -eq 0 ]; then rm -rf "$tmp"; else echo "install: FAILED (exit $rc); files in $tmp"; fi
}
trap cleanup EXIT

fail() {
  echo "install: FAILED: $*"
  exit 1
}
quiet() { # quiet NAME COMMAND...: output to $tmp/NAME.log, shown when the command fails
  local name=$1
  shift
  "$@" >"$tmp/$name.log" 2>&1 && return 0
  tail -n 40 "$tmp/$name.log"
  fail "$name: $*"
}
shown=0
run() { # run BINARY: classify on each model; its whole output the first time, then its verdict
  local m log
  for m in resnet_mini bert_mini; do
    log=$tmp/$(basename "$1")-$m.log
    "$1" "$tmp/models/$m.onnx" "$tmp/$(basename "$1")-$m.ingot" >"$log" 2>&1 || {
      sed 's/^/    /' "$log"
      fail "$1 on $m.onnx (exit $?)"
    }
    if [ $shown -lt 2 ]; then sed 's/^/    /' "$log"; else echo "    $m: $(tail -n 1 "$log")"; fi
    shown=$((shown + 1))
  done
}
check_package() { # check_package PREFIX NAME: the files, CMake consumers, pkg-config's shared link
  local p=$1 n=$2 f
  for f in include/ingot.h lib/libingot.a lib/libingot.so lib/cmake/ingot/ingotConfig.cmake \
    lib/cmake/ingot/ingotConfigVersion.cmake lib/pkgconfig/ingot.pc; do
    [ -e "$p/$f" ] || fail "$p/$f was not installed"
  done
  readelf -d "$p/lib/libingot.so" | grep -qE 'SONAME.*\[libingot\.so\.[0-9]' || fail "libingot.so has no versioned SONAME"
  f=$(nm -D --defined-only "$p/lib/libingot.so" | awk '{print $3}' | grep -v '^ingot_' || true)
  [ -z "$f" ] || fail "libingot.so exports symbols outside the API: $f"

  quiet "$n-cmake-configure" cmake -S examples -B "$tmp/ex-$n" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_BUILD_TYPE=Release
  grep "^-- ingot" "$tmp/$n-cmake-configure.log" | sed 's/^-- /  /'
  quiet "$n-cmake-build" cmake --build "$tmp/ex-$n" -j"$(nproc)"
  echo "  CMake, ingot::ingot (libingot.so):"
  run "$tmp/ex-$n/classify"
  echo "  CMake, ingot::ingot_static (libingot.a):"
  if ldd "$tmp/ex-$n/classify_static" | grep libingot; then fail "classify_static needs libingot.so"; fi
  run "$tmp/ex-$n/classify_static"

  export PKG_CONFIG_PATH=$p/lib/pkgconfig
  echo "  pkg-config: cc classify.c \$(pkg-config --cflags --libs ingot)"
  # shellcheck disable=SC2046 # pkg-config's output is a list of words
  quiet "$n-pc-shared" cc -std=c11 -O2 -Wall -Wextra -Werror examples/classify.c $(pkg-config --cflags --libs ingot) \
    -Wl,-rpath,"$(pkg-config --variable=libdir ingot)" -o "$tmp/classify-pc-$n"
  run "$tmp/classify-pc-$n"
}

read -r -a extra_args <<<"${INSTALL_CMAKE_ARGS:-}"
quiet configure cmake -S . -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DINGOT_FATAL_WARNINGS=ON \
  -DINGOT_BUILD_TESTS=OFF -DINGOT_CUDA=OFF "${extra_args[@]}"
quiet build cmake --build "$tmp/build" -j"$(nproc)"
quiet install cmake --install "$tmp/build" --prefix "$tmp/prefix"
quiet models python3 tests/models/make_models.py "$tmp/models" --only resnet_mini,bert_mini
p=$tmp/prefix
echo "install: a fresh build, installed to $p"
check_package "$p" fresh
if grep -q '^set(ingot_HAVE_CUDA ON)' "$p/lib/cmake/ingot/ingotConfig.cmake"; then
  echo "  (the CUDA backend is in: no fully static or archive-only link)"
else
  echo "  pkg-config: cc -static classify.c \$(pkg-config --cflags --libs --static ingot)"
  # shellcheck disable=SC2046
  quiet pc-static cc -std=c11 -O2 -static examples/classify.c $(pkg-config --cflags --libs --static ingot) \
    -o "$tmp/classify-pc-static"
  run "$tmp/classify-pc-static"
  echo "  cc classify.c -I\$prefix/include \$prefix/lib/libingot.a -lm -pthread"
  quiet archive cc -std=c11 -O2 examples/classify.c -I"$p/include" "$p/lib/libingot.a" -lm -pthread \
    -o "$tmp/classify-archive"
  run "$tmp/classify-archive"
fi

if [ -n "$build_dir" ]; then
  quiet install-build cmake --install "$build_dir" --prefix "$tmp/prefix-build"
  echo "install: $build_dir, installed to $tmp/prefix-build"
  check_package "$tmp/prefix-build" build
fi
echo "install: ok"
