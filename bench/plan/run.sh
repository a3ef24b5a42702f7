#!/bin/sh
# Build the planner benchmark against a Release build of the library and run it.
#   bench/plan/run.sh [plan_bench arguments]
# BUILD (default build-plan-rel) is the CMake build folder used.
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build-plan-rel}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DINGOT_CUDA=OFF >/dev/null
cmake --build "$build" --target ingot_plan -j2 >/dev/null
cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I"$root/include" -I"$root/src" -I"$root/bench/plan" \
   "$root/bench/plan/plan_bench.c" -o "$build/plan_bench" \
   "$build/src/libingot_plan.a" "$build/src/libingot_ops.a" "$build/src/libingot_ir.a" \
   "$build/src/libingot_core.a" -lm -lpthread
exec "$build/plan_bench" "$@"
