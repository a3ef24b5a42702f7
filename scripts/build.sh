#!/usr/bin/env bash
# Configure and build ingot into DIR (default build/), warnings as errors. Extra args go to CMake.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$here/build}
shift || true
cmake -S "$here" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DINGOT_FATAL_WARNINGS=ON "$@" >/dev/null
# the build's own status decides (pipefail), not whether an old binary is still there
cmake --build "$dir" -j"$(nproc)" 2>&1 | { grep -vE '^\[ *[0-9]+%\]|^-- ' || true; }
test -x "$dir/ingot"
