#!/usr/bin/env bash
# Binaries built on this machine for a GPU machine's calls (building there takes two minutes of each call):
#
#   scripts/prebuilt.sh BUILD_DIR [--tests] [--models]
#       builds BUILD_DIR's ingot (and with --tests tests/gpu/test_gpu), gzips each into
#       .prebuilt/NAME-HASH.gz; --models writes tests/gpu/make_models.py's cases into .prebuilt/gm
#   scripts/prebuilt.sh --hash
#       prints HASH: of the sources that go into the binaries
#
# Carry .prebuilt in the call: gpu_check.sh (its zoo and quick parts) runs the binaries whose HASH is the
# tree's, and builds when they are not there, so a stale one is never used. Configure BUILD_DIR for the
# GPU, e.g. cmake -S . -B build-h200 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90-real
# -DINGOT_BUILD_TESTS=ON. Binaries built on the CPU machine (Debian 12, CUDA 13.0) ran on the H200 machine
# on 2026-12-02.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
src_hash() {
    (cd "$here" && find src include tools cmake CMakeLists.txt tests/gpu -type f | LC_ALL=C sort | xargs cat |
        sha256sum | cut -c1-16)
}
if [ "${1:-}" = --hash ]; then
    src_hash
    exit 0
fi
build=${1:?usage: scripts/prebuilt.sh BUILD_DIR [--tests] [--models] | --hash}
shift
targets=(ingot) models=0
for a in "$@"; do
    case $a in
    --tests) targets+=(test_gpu) ;;
    --models) models=1 ;;
    *) echo "prebuilt: unknown option $a" >&2; exit 2 ;;
    esac
done
# brought up to date first: the name says which sources they are of
cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target "${targets[@]}" >/dev/null
mkdir -p "$here/.prebuilt"
hash=$(src_hash)
rm -f "$here"/.prebuilt/*.gz # older sources' binaries
for t in "${targets[@]}"; do
    bin=$build/$t
    [ "$t" = ingot ] || bin=$build/tests/gpu/$t
    [ -x "$bin" ] || { echo "prebuilt: no $bin" >&2; exit 1; }
    gzip -c "$bin" >"$here/.prebuilt/$t-$hash.gz"
    echo "prebuilt: .prebuilt/$t-$hash.gz ($(du -h "$here/.prebuilt/$t-$hash.gz" | cut -f1))"
done
if [ $models = 1 ]; then
    py=python3
    [ -x "$here/.venv/bin/python3" ] && py=$here/.venv/bin/python3
    rm -rf "$here/.prebuilt/gm"
    "$py" "$here/tests/gpu/make_models.py" "$here/.prebuilt/gm" >/dev/null
    echo "prebuilt: .prebuilt/gm ($(ls "$here/.prebuilt/gm" | wc -l) cases, $(du -sh "$here/.prebuilt/gm" | cut -f1))"
fi
