#!/usr/bin/env bash
# Binaries built on this machine for a GPU machine's calls (its build takes two minutes of each call):
#
#   scripts/prebuilt.sh BUILD_DIR     builds BUILD_DIR's ingot, gzips it into .prebuilt/ingot-HASH.gz
#   scripts/prebuilt.sh --hash        prints HASH: of the sources that go into the binary
#
# Carry .prebuilt in the call; gpu_check.sh's zoo part runs the binary whose HASH is the tree's, and
# builds when there is none (a stale binary is never used). Build for the GPU's architecture, e.g.
# cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90-real. A binary built on
# the CPU machine (Debian 12, CUDA 13.0) ran on the H200 machine on 2026-12-02.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
src_hash() {
    (cd "$here" && find src include tools cmake CMakeLists.txt -type f | LC_ALL=C sort | xargs cat | sha256sum |
        cut -c1-16)
}
if [ "${1:-}" = --hash ]; then
    src_hash
    exit 0
fi
build=${1:?usage: scripts/prebuilt.sh BUILD_DIR | --hash}
# brought up to date first: the name says which sources it is of
cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target ingot >/dev/null
[ -x "$build/ingot" ] || { echo "prebuilt: no $build/ingot" >&2; exit 1; }
mkdir -p "$here/.prebuilt"
out=$here/.prebuilt/ingot-$(src_hash).gz
gzip -c "$build/ingot" >"$out"
echo "prebuilt: $out ($(du -h "$out" | cut -f1))"
