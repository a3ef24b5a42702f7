#!/usr/bin/env bash
# The CUDA backend, checked and measured on a GPU machine, in one command run from the repository root:
#
#   scripts/gpu_check.sh            (results under $OUT when set, else ./gpu_out)
#
#  1. builds Release for sm_90 (+ compute_80 PTX) in build-gpu/
#  2. GPU tests: lowering emulator; per-op/fusion models vs ONNX Runtime in fp32 (rel err <= 1e-3, TF32
#     off) and fp16 (cosine >= 0.999), device path + CUDA Graph pointer updates, allocation audit, leak
#     check after destroy; engine files saved, loaded and compared (test_gpu_engine); 4 contexts of one
#     engine on 4 threads; compute-sanitizer memcheck on a small
#     model; unsupported-op error
#  3. exports the benchmark models with the peers script (shared/bench/peers.py, or a copy in .shared/)
#     and checks each whole model against ONNX Runtime at batch 2 (fp32 and fp16)
#  4. `ingot bench --fp16` at batch 1 and 128 and `peers.py measure` in the same run
#  5. prints a table of ingot vs PyTorch last; JSON in $OUT (summary.json, bench.jsonl, peers.json)
#
# Stages have time limits so the whole run stays within 9 minutes on one H200; a failing stage is
# reported and the next one still runs. Exit status: 0 when every stage passed.
# INGOT_GPU_PART=tests runs 1-3 only, INGOT_GPU_PART=bench 1 and 4-5 only (two calls of a lease each); the
# bench part runs a prebuilt ingot when the call carries .prebuilt (scripts/prebuilt.sh), times ResNet-50 at
# batch 256 too (INGOT_BENCH_R50_256=0: not), and INGOT_SKIP_DIAG=1 leaves out its diagnosis stage.
# INGOT_GPU_PART=reliability runs 1 and the reliability stages only (part of `tests` too; issue 13): the
# device fault sweep (tests/gpu/test_gpu_faults) on resnet_block fp32 and bert_layer fp16, the soak
# (tests/gpu/test_gpu_soak: 4 contexts x 4 threads) on both and on ResNet-50 batch 32 when exported, and
# compute-sanitizer racecheck on the attention kernels and memcheck/racecheck on elementwise models.
# INGOT_FAULT_SECONDS (default 60) bounds each sweep, INGOT_SOAK_SECONDS (60) each soak, INGOT_SOAK_RUNS
# (1000000) the small models' run count.
# INGOT_GPU_PART=zoo builds ingot and runs one shard of the model zoo, bench/zoo (INGOT_ZOO_SHARD=K/N);
# the binary it builds comes back as $OUT/ingot-HASH.gz (HASH: of the sources), and a later shard's call
# that carries it in .prebuilt/ skips the build (scripts/prebuilt.sh makes one on the CPU machine).
# INGOT_GPU_PART=quick: test_gpu on some cases and `ingot bench` of some models, with binaries (and test
# models) built on the CPU machine by scripts/prebuilt.sh BUILD --tests --models: a change checked in
# about a minute of device time. INGOT_GPU_PART=ncu: kernels of one model under Nsight Compute.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
out=${OUT:-$here/gpu_out}
mkdir -p "$out"
work=${INGOT_GPU_WORK:-/tmp/ingot_gpu}
mkdir -p "$work"
log=$out/gpu_check.log
: >"$log"
t_start=$SECONDS
failed_stages=()
models=${INGOT_BENCH_MODELS:-resnet50,mobilenet_v2,vit_b_16,bert_base}
part=${INGOT_GPU_PART:-all}
do_tests=1 do_bench=1 do_rel=1
[ "$part" = bench ] && do_tests=0 && do_rel=0
[ "$part" = tests ] && do_bench=0
[ "$part" = reliability ] && do_tests=0 && do_bench=0 && models=${INGOT_BENCH_MODELS:-resnet50}
batches=${INGOT_BENCH_BATCHES:-1,128}

say() { echo "$*" | tee -a "$log"; }
stage() { # stage NAME TIMEOUT_S COMMAND...: run with a time limit, log everything, keep going
    local name=$1 limit=$2
    shift 2
    local t0=$SECONDS
    say "::: $name (limit ${limit}s, at $((SECONDS - t_start))s)"
    timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
    local rc=$?
    if [ $rc -eq 0 ]; then
        say "::: $name: ok ($((SECONDS - t0)) s)"
    else
        say "::: $name: FAILED rc=$rc ($((SECONDS - t0)) s)"
        failed_stages+=("$name")
    fi
    return $rc
}

peers=""
for p in "$here/.shared/peers.py" "$here/shared/bench/peers.py" "$here/../shared/bench/peers.py"; do
    [ -f "$p" ] && { peers=$p; break; }
done

# the commit the run is of, for the log and for zoo.json (a copy of the tree may lack .git: the caller may
# pass INGOT_COMMIT)
INGOT_COMMIT=${INGOT_COMMIT:-$(git -C "$here" rev-parse --verify -q HEAD 2>/dev/null || echo unknown)}
export INGOT_COMMIT
{
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $INGOT_COMMIT"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1
    nvcc --version 2>&1 | tail -1
    python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())' 2>&1
    echo "peers script: ${peers:-none}"
    ls /usr/local/cuda/lib64 2>/dev/null | grep -E '^lib(cublasLt|cudnn|cudart)\.so' | tr '\n' ' '; echo
} >>"$log" 2>&1
head -12 "$log"

# peers_export MODELS LOG: the benchmark models MODELS (comma-separated) exported by the peers script into
# $work/models, its output and exit status appended to LOG (the exports take minutes of CPU: callers run
# them in the background while ingot builds).
peers_export() {
    mkdir -p "$work/models"
    (cd "$work" && timeout 240 python3 "$peers" export "$work/models" --models "$1") >>"$2" 2>&1
    local rc=$?
    echo "peers export rc=$rc" >>"$2"
    return $rc
}

# binaries TARGET...: the targets from .prebuilt/TARGET-HASH.gz (scripts/prebuilt.sh built them on the CPU
# machine from these very sources: HASH names them, so a stale one is never used) when all are there and
# run, else built here (two minutes of a call), ingot then returned as $OUT/ingot-HASH.gz for the next call.
# Paths as a build puts them: build-gpu/ingot, build-gpu/tests/gpu/test_*.
binaries() {
    local src_hash t have=1
    src_hash=$("$here/scripts/prebuilt.sh" --hash)
    mkdir -p "$here/build-gpu/tests/gpu"
    for t in "$@"; do
        local dst=$here/build-gpu/$t
        [ "$t" = ingot ] || dst=$here/build-gpu/tests/gpu/$t
        if [ -f "$here/.prebuilt/$t-$src_hash.gz" ] && gunzip -c "$here/.prebuilt/$t-$src_hash.gz" >"$dst" &&
            chmod +x "$dst"; then :; else have=0; fi
    done
    if [ $have = 1 ] && "$here/build-gpu/ingot" --version >/dev/null 2>&1; then
        say "::: build: skipped, .prebuilt/{$(echo "$@" | tr ' ' ',')}-$src_hash.gz run"
        return 0
    fi
    stage "configure" 120 cmake -S "$here" -B "$here/build-gpu" -DCMAKE_BUILD_TYPE=Release \
        "-DCMAKE_CUDA_ARCHITECTURES=90-real;80-virtual" -DINGOT_BUILD_TESTS=ON
    stage "build" 300 cmake --build "$here/build-gpu" -j"$(nproc 2>/dev/null || echo 8)" --target "$@" &&
        gzip -c "$here/build-gpu/ingot" >"$out/ingot-$src_hash.gz"
}

# INGOT_GPU_PART=zoo: build ingot and run one shard of the model zoo (bench/zoo/README.md), nothing else.
#   INGOT_ZOO_SHARD=K/N (default 1/6) or INGOT_ZOO_MODELS=a,b,c; INGOT_ZOO_BUDGET: seconds for the whole
#   call, build included (default 540); results in $OUT/zoo (zoo.json, zoo.md), exports in $work/zoo.
#   INGOT_ZOO_REPORTS=0 leaves out each model's `ingot profile` (a tenth of a shard's GPU time).
if [ "$part" = zoo ]; then
    zoo_sel=(--shard "${INGOT_ZOO_SHARD:-1/6}")
    [ -n "${INGOT_ZOO_MODELS:-}" ] && zoo_sel=(--models "$INGOT_ZOO_MODELS")
    zoo_budget=${INGOT_ZOO_BUDGET:-540}
    mkdir -p "$out/zoo" "$work/zoo"
    # the exports (CPU) run while ingot builds; the shard's own run waits for the ones still in progress
    python3 bench/zoo/zoo.py --export-only "${zoo_sel[@]}" --work "$work/zoo" >"$out/zoo/export.log" 2>&1 &
    zoo_export=$!
    binaries ingot
    left=$((zoo_budget - (SECONDS - t_start)))
    if [ $left -lt 60 ]; then
        say "::: zoo: only ${left}s of INGOT_ZOO_BUDGET=${zoo_budget}s left after the build: run the shard again"
        failed_stages+=("zoo (no time left)")
    elif [ -x "$here/build-gpu/ingot" ]; then
        jobs_arg=()
        # fewer export processes of our own while the background ones are still busy
        kill -0 "$zoo_export" 2>/dev/null && jobs_arg=(--jobs 2)
        reports=(--reports "$work/zoo_reports")
        [ "${INGOT_ZOO_REPORTS:-1}" = 0 ] && reports=()
        stage "zoo ${zoo_sel[*]}" $((left + 60)) python3 bench/zoo/zoo.py "${zoo_sel[@]}" "${jobs_arg[@]}" \
            --work "$work/zoo" --out "$out/zoo" --ingot "$here/build-gpu/ingot" --budget "$left" "${reports[@]}"
        # every model's diagnosis report, as one file ($OUT returns few files)
        tar -czf "$out/zoo/reports.tar.gz" -C "$work" zoo_reports 2>/dev/null
    fi
    kill "$zoo_export" 2>/dev/null
    wait "$zoo_export" 2>/dev/null
    [ -f "$out/zoo/zoo.md" ] && cat "$out/zoo/zoo.md" | tee -a "$log"
    say ""
    say "gpu_check zoo: $((SECONDS - t_start)) s; failed stages: ${#failed_stages[@]}${failed_stages:+ (${failed_stages[*]})}"
    [ ${#failed_stages[@]} -eq 0 ]
    exit
fi

# INGOT_GPU_PART=ncu: a few kernels of one model under Nsight Compute, to see what holds a step back
# before changing it (a kernel that issues a sixth of the instructions can run as slowly: 2dece61).
#   INGOT_NCU_MODEL: a benchmark model (resnet50, mobilenet_v2, vit_b_16, bert_base: the peers script) or a
#   zoo model (bench/zoo/zoo.py --list); INGOT_NCU_BATCH (default 1); INGOT_NCU_KERNELS: comma-separated
#   regular expressions of kernel names (e.g. "resize_inner,rdx_cols"). Per expression, the first launch of
#   a matching kernel in `ingot bench --fp16` (cuDNN and cuBLASLt kernels also launch while the builder
#   times algorithms: INGOT_NCU_SKIP launches are skipped first) under `ncu --set full`: duration,
#   throughputs, occupancy, registers and the stall rules printed, the whole reports in $OUT/ncu.tar.gz.
#   INGOT_CUDA_* variables pass through to ingot (the same kernel with a switch off, for comparison).
if [ "$part" = ncu ]; then
    binaries ingot
    m=${INGOT_NCU_MODEL:-resnet50} b=${INGOT_NCU_BATCH:-1}
    mkdir -p "$work/ncu"
    case ",$models," in
    *",$m,"*)
        peers_export "$m" "$log"
        onnx=$work/models/$m.onnx
        ;;
    *)
        timeout 300 python3 bench/zoo/zoo.py --export-only --models "$m" --work "$work/zoo" >>"$log" 2>&1
        onnx=$work/zoo/$m/model.onnx
        ;;
    esac
    [ -f "$onnx" ] || { say "::: ncu: $m was not exported (see gpu_check.log)"; exit 1; }
    ncu_bin=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    IFS=, read -r -a kernels <<<"${INGOT_NCU_KERNELS:?INGOT_NCU_KERNELS: regexes of kernel names}"
    for k in "${kernels[@]}"; do
        rep=$work/ncu/$(echo "$k" | tr -c 'A-Za-z0-9_\n' _).txt
        stage "ncu $k ($m, batch $b)" 150 "$ncu_bin" --clock-control none --set full -k "regex:$k" \
            -s "${INGOT_NCU_SKIP:-0}" -c 1 "$here/build-gpu/ingot" bench "$onnx" --fp16 --batch "$b" \
            --iterations 2 --warmup 0
        # the stage logged ncu's report; keep this kernel's part of it on its own
        awk -v k="$k" '/^::: ncu /{on = index($0, "::: ncu " k " ") == 1} on' "$log" >"$rep"
        say "$(grep -E '^  [^ ].*\([0-9]+, [0-9]+, [0-9]+\)x\(' "$rep" | head -1 | cut -c1-200)"
        grep -E '^ +(Duration|DRAM Throughput|Memory Throughput|L1/TEX Hit Rate|L2 Hit Rate|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Executed Ipc Active|Warp Cycles Per Issued Instruction|Block Size|Grid Size|Static Shared Memory Per Block) ' \
            "$rep" | tr -s ' ' | tee -a "$log"
        grep -E 'stalled|Est\. (Local )?Speedup' "$rep" | head -6 | cut -c1-240 | tee -a "$log"
    done
    tar -czf "$out/ncu.tar.gz" -C "$work" ncu 2>/dev/null
    say "gpu_check ncu: $((SECONDS - t_start)) s; failed stages: ${#failed_stages[@]}${failed_stages:+ (${failed_stages[*]})}"
    [ ${#failed_stages[@]} -eq 0 ]
    exit
fi

# INGOT_GPU_PART=quick: a check of a change in one short call, with binaries built on the CPU machine
# (scripts/prebuilt.sh BUILD --tests): test_gpu on INGOT_QUICK_CASES (names of tests/gpu/make_models.py's
# cases, default all; the models from .prebuilt/gm when carried, else made here), then `ingot bench
# --fp16` of INGOT_BENCH_MODELS at INGOT_BENCH_BATCHES (exported by the peers script; no PyTorch timing).
# Environment variables such as INGOT_CUDA_STEM pass through to both.
if [ "$part" = quick ]; then
    binaries ingot test_gpu
    gm=$here/.prebuilt/gm
    if [ ! -d "$gm" ]; then
        gm=$work/gm
        stage "test models (ONNX Runtime references)" 120 python3 tests/gpu/make_models.py "$gm"
    fi
    if [ -n "$peers" ] && [ -n "${INGOT_BENCH_MODELS:-}" ]; then
        peers_export "$models" "$work/export.log" &
        export_pid=$!
    fi
    cases=() # names or patterns (pool_*) of cases in $gm
    for c in ${INGOT_QUICK_CASES:-*}; do
        for d in "$gm"/$c; do [ -d "$d" ] && cases+=("$d"); done
    done
    stage "gpu test ${#cases[@]} cases" 300 "$here/build-gpu/tests/gpu/test_gpu" --no-leak "${cases[@]}"
    grep -E "^FAIL" "$log" | head -20
    if [ -n "${export_pid:-}" ]; then
        wait "$export_pid"
        IFS=, read -r -a model_list <<<"$models"
        IFS=, read -r -a batch_list <<<"$batches"
        for m in "${model_list[@]}"; do
            for b in "${batch_list[@]}"; do
                [ -f "$work/models/$m.onnx" ] || continue
                timeout 120 "$here/build-gpu/ingot" bench "$work/models/$m.onnx" --fp16 --batch "$b" --duration 2 \
                    --warmup 20 >"$work/quick_bench.txt" 2>&1
                say "::: bench $m batch $b: $(grep -E 'throughput|GPU, events' "$work/quick_bench.txt" | tr -s ' ' | tr '\n' ' ')"
            done
        done
    fi
    say "gpu_check quick: $((SECONDS - t_start)) s; failed stages: ${#failed_stages[@]}${failed_stages:+ (${failed_stages[*]})}"
    [ ${#failed_stages[@]} -eq 0 ]
    exit
fi

# the exports run on the CPU while the build runs
export_pid=""
if [ -n "$peers" ]; then
    peers_export "$models" "$work/export.log" &
    export_pid=$!
fi

jobs=$(nproc 2>/dev/null || echo 8)
bin=$here/build-gpu
ok_build=0
if [ "$part" = bench ]; then # ingot is all the bench needs: a prebuilt one when the call carries it
    binaries ingot
    [ -x "$bin/ingot" ] && ok_build=1
else
    stage "configure" 120 cmake -S "$here" -B "$here/build-gpu" -DCMAKE_BUILD_TYPE=Release \
        "-DCMAKE_CUDA_ARCHITECTURES=90-real;80-virtual" -DINGOT_BUILD_TESTS=ON
    stage "build" 300 cmake --build "$here/build-gpu" -j"$jobs" --target ingot test_gpu test_gpu_lower \
        test_gpu_threads test_gpu_engine test_gpu_faults test_gpu_soak test_gpu_budget
    [ -x "$bin/ingot" ] && [ -x "$bin/tests/gpu/test_gpu" ] && ok_build=1
fi

if [ $ok_build = 1 ] && [ $do_tests = 1 ]; then
    stage "test models (ONNX Runtime references)" 120 python3 tests/gpu/make_models.py "$work/gm"
    # the host emulation, and every covered elementwise program generated and compiled by NVRTC
    stage "lowering emulator, elementwise programs compiled" 180 "$bin/tests/gpu/test_gpu_lower" --jit sm_90 "$work"/gm/*
    for d in "$work"/gm/*; do
        leak=--no-leak
        case $(basename "$d") in resnet_block | bert_layer) leak="" ;; esac
        if ! stage "gpu test $(basename "$d")" 120 "$bin/tests/gpu/test_gpu" $leak "$d"; then
            stage "gpu test $(basename "$d") with INGOT_CUDA_SYNC=1" 120 env INGOT_CUDA_SYNC=1 INGOT_CUDA_GRAPHS=0 \
                "$bin/tests/gpu/test_gpu" --no-leak "$d"
        fi
    done
    # the elementwise interpreter too, where the generated kernels (src/cuda/ew_jit.c) run by default
    stage "gpu test (elementwise interpreter: INGOT_CUDA_EW_JIT=0)" 120 env INGOT_CUDA_EW_JIT=0 \
        "$bin/tests/gpu/test_gpu" --no-leak "$work"/gm/misc_ops "$work"/gm/op_coverage "$work"/gm/unary_more \
        "$work"/gm/bert_layer "$work"/gm/lazy_views
    # engine files: save, load, bit-identical outputs, no re-tuning after load or with a timing cache
    for d in "$work"/gm/resnet_block "$work"/gm/bert_layer; do
        stage "engine file $(basename "$d") (fp32, fp16)" 120 sh -c "'$bin/tests/gpu/test_gpu_engine' '$d/model.onnx' && \
            '$bin/tests/gpu/test_gpu_engine' '$d/model.onnx' --fp16"
    done
    # many contexts of one engine on many threads (the model destroyed after the build)
    for d in "$work"/gm/resnet_block "$work"/gm/bert_layer; do
        stage "gpu threads $(basename "$d") (4 contexts x 4 threads x 200 runs)" 240 "$bin/tests/gpu/test_gpu_threads" "$d" 200
    done
    # the attention models again with each attention kernel forced (by default their size picks one)
    for kern in wide narrow split; do
        for d in "$work"/gm/sdpa_* "$work"/gm/torch_mha; do
            stage "gpu test $(basename "$d") ($kern attention kernel)" 120 env INGOT_CUDA_ATTENTION_KERNEL=$kern \
                "$bin/tests/gpu/test_gpu" --no-leak "$d"
        done
    done
    if [ "${INGOT_SKIP_SANITIZER:-0}" = 1 ]; then
        say "::: compute-sanitizer skipped (INGOT_SKIP_SANITIZER=1)"
    elif command -v compute-sanitizer >/dev/null; then
        stage "compute-sanitizer memcheck (resnet_block, bert_layer)" 240 env INGOT_CUDA_TUNE=0 compute-sanitizer --tool memcheck \
            --error-exitcode 1 --print-limit 20 "$bin/tests/gpu/test_gpu" --no-leak "$work/gm/resnet_block" "$work/gm/bert_layer"
        for kern in wide split; do
            stage "compute-sanitizer memcheck (attention, $kern kernel)" 240 env INGOT_CUDA_TUNE=0 \
                INGOT_CUDA_ATTENTION_KERNEL=$kern compute-sanitizer --tool memcheck --error-exitcode 1 --print-limit 20 \
                "$bin/tests/gpu/test_gpu" --no-leak "$work/gm/sdpa_head64" "$work/gm/sdpa_head64_197"
        done
    else
        say "::: compute-sanitizer not found: memcheck skipped"
    fi
fi

# ---- reliability (issue 13): every device error path, a soak, the race checker --------------------------
if [ $ok_build = 1 ] && [ $do_rel = 1 ]; then
    gm=$work/gm
    [ -f "$gm/resnet_block/model.onnx" ] ||
        stage "test models (ONNX Runtime references)" 120 python3 tests/gpu/make_models.py "$gm"
    fs=${INGOT_FAULT_SECONDS:-60} ss=${INGOT_SOAK_SECONDS:-60} sr=${INGOT_SOAK_RUNS:-1000000}
    # each allocation, CUDA call, kernel launch and cuDNN/cuBLASLt call of a build + context + 3 runs fails
    # in turn: a clean error naming the call, no leak, a fresh engine gives the same outputs
    stage "fault sweep resnet_block (fp32)" $((2 * fs + 120)) "$bin/tests/gpu/test_gpu_faults" "$gm/resnet_block" \
        --seconds "$fs"
    stage "fault sweep bert_layer (fp16)" $((2 * fs + 120)) "$bin/tests/gpu/test_gpu_faults" "$gm/bert_layer" --fp16 \
        --seconds "$fs"
    # 4 contexts on 4 threads: memory flat after warm-up, p99 stable, outputs bit-identical to the first run
    stage "soak resnet_block (fp32, up to $sr runs in ${ss}s)" $((2 * ss + 120)) "$bin/tests/gpu/test_gpu_soak" \
        "$gm/resnet_block" --runs "$sr" --seconds "$ss"
    stage "soak bert_layer (fp16, up to $sr runs in ${ss}s)" $((2 * ss + 120)) "$bin/tests/gpu/test_gpu_soak" \
        "$gm/bert_layer" --fp16 --runs "$sr" --seconds "$ss"
    if [ "${INGOT_SKIP_SANITIZER:-0}" = 1 ]; then
        say "::: compute-sanitizer racecheck skipped (INGOT_SKIP_SANITIZER=1)"
    elif command -v compute-sanitizer >/dev/null; then
        # shared-memory races: the wide attention kernel (cp.async double buffering), the split one (the
        # combine through shared memory), then the elementwise/norm/softmax kernels of a BERT layer
        cs=(compute-sanitizer --error-exitcode 1 --print-limit 20)
        for kern in wide split; do
            stage "compute-sanitizer racecheck (attention, $kern kernel)" 240 env INGOT_CUDA_TUNE=0 \
                INGOT_CUDA_ATTENTION_KERNEL=$kern "${cs[@]}" --tool racecheck "$bin/ingot" bench \
                "$gm/sdpa_head64_197/model.onnx" --fp16 --batch 2 --iterations 2 --warmup 1
        done
        stage "compute-sanitizer racecheck (elementwise, bert_layer fp16)" 240 env INGOT_CUDA_TUNE=0 "${cs[@]}" \
            --tool racecheck "$bin/ingot" bench "$gm/bert_layer/model.onnx" --fp16 --batch 2 --iterations 2 --warmup 1
        stage "compute-sanitizer memcheck (elementwise: misc_ops, op_coverage, lazy_views)" 240 env INGOT_CUDA_TUNE=0 \
            "${cs[@]}" --tool memcheck "$bin/tests/gpu/test_gpu" --no-leak "$gm/misc_ops" "$gm/op_coverage" \
            "$gm/lazy_views"
    else
        say "::: compute-sanitizer not found: racecheck skipped"
    fi
    # ResNet-50 from the peers export, started before the build (waited for here, last)
    if [ -n "$export_pid" ]; then
        wait "$export_pid"
        cat "$work/export.log" >>"$log"
        export_pid=""
    fi
    if [ -f "$work/models/resnet50.onnx" ]; then
        stage "soak resnet50 (fp16, batch 32, 10000 runs)" $((2 * ss + 180)) "$bin/tests/gpu/test_gpu_soak" \
            "$work/models/resnet50.onnx" --batch 32 --fp16 --runs 10000 --seconds "$ss"
    else
        say "::: soak resnet50: not exported (needs the peers script and torch): skipped"
    fi
fi

if [ -n "$export_pid" ]; then
    wait "$export_pid"
    cat "$work/export.log" >>"$log"
fi

IFS=, read -r -a model_list <<<"$models"
IFS=, read -r -a batch_list <<<"$batches"
: >"$out/bench.jsonl"
if [ $ok_build = 1 ]; then
    for m in "${model_list[@]}"; do
        [ "$part" = reliability ] && break # the export was for its soak: whole-model stages are in tests
        f=$work/models/$m.onnx
        [ -f "$f" ] || { say "::: model $m: not exported"; failed_stages+=("export $m"); continue; }
        [ $do_tests = 1 ] || continue
        if stage "whole model $m vs ONNX Runtime (batch 2)" 120 python3 tests/gpu/ort_ref.py "$f" 2 "$work/ref_$m"; then
            stage "lowering of $m (program listing)" 60 "$bin/tests/gpu/test_gpu_lower" -v --lower-only "$work/ref_$m"
            stage "gpu test whole model $m" 150 "$bin/tests/gpu/test_gpu" --no-leak "$work/ref_$m" ||
                stage "gpu test whole model $m with INGOT_CUDA_SYNC=1" 150 env INGOT_CUDA_SYNC=1 INGOT_CUDA_GRAPHS=0 \
                    "$bin/tests/gpu/test_gpu" --no-leak "$work/ref_$m"
        fi
        # algorithms under one workspace budget, --mem-limit, deterministic builds (fp16, batch 32)
        [ "$m" = resnet50 ] && stage "workspace budget, --mem-limit, deterministic ($m fp16 batch 32)" 150 \
            "$bin/tests/gpu/test_gpu_budget" "$f" --batch 32
        # build once, load fast: load-to-first-result and the build times, fp16 at batch 1
        stage "engine file $m (fp16, batch 1)" 150 "$bin/tests/gpu/test_gpu_engine" "$f" --fp16 --batch 1
    done
    for m in "${model_list[@]}"; do
        f=$work/models/$m.onnx
        [ -f "$f" ] && [ $do_bench = 1 ] || continue
        # issue 10: ResNet-50's throughput must not fall past batch 128 (45,000 img/s at 256; no peer row)
        m_batches=("${batch_list[@]}")
        [ "$m" = resnet50 ] && [ "${INGOT_BENCH_R50_256:-1}" = 1 ] && m_batches+=(256)
        for b in "${m_batches[@]}"; do
            prof=--profile
            say "::: bench $m batch $b"
            if timeout --kill-after=10 120 "$bin/ingot" bench "$f" --fp16 --batch "$b" --duration 1 --warmup 20 --json $prof \
                >"$work/bench.json" 2>>"$log"; then
                python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["model_name"]=sys.argv[2]; print(json.dumps(d))' \
                    "$work/bench.json" "$m" >>"$out/bench.jsonl"
                tail -c 2000 "$work/bench.json" >>"$log"
            else
                say "::: bench $m batch $b FAILED"
                cat "$work/bench.json" >>"$log"
                failed_stages+=("bench $m $b")
            fi
        done
    done
fi

if [ -n "$peers" ] && [ "${INGOT_SKIP_PEERS:-0}" != 1 ] && [ $do_bench = 1 ]; then
    stage "PyTorch peers (eager, CUDA graph, channels_last)" 300 python3 "$peers" measure "$out/peers.json" \
        --models "$models" --batches "$batches" --dtype fp16
fi

# the diagnosis (issue 11): the synthetic bottlenecks found, `ingot profile` of each benchmark model, one report
# (INGOT_SKIP_DIAG=1 leaves it out: a call that only records the benchmarks)
if [ $do_bench = 1 ] && [ "${INGOT_SKIP_DIAG:-0}" != 1 ]; then
    diag_models=()
    for m in "${model_list[@]}"; do [ -f "$work/models/$m.onnx" ] && diag_models+=(--model "$work/models/$m.onnx"); done
    stage "diagnosis: synthetic bottlenecks, ingot profile of the benchmark models" 300 python3 tests/diag/check_synthetic.py \
        --ingot "$bin/ingot" --work "$work/diag" "${diag_models[@]}"
    if [ -f "$work/models/resnet50.onnx" ]; then
        stage "HTML report (resnet50 fp16 batch 32)" 120 "$bin/ingot" profile "$work/models/resnet50.onnx" --fp16 \
            --batch 32 --html "$out/report_resnet50_b32.html" --json >"$out/profile_resnet50_b32.json"
    fi
fi

# ---- the table ----------------------------------------------------------------------------------------
python3 - "$out" <<'EOF' 2>&1 | tee -a "$log"
import json, os, sys
out = sys.argv[1]
bench = {}
if os.path.exists(os.path.join(out, "bench.jsonl")):
    for line in open(os.path.join(out, "bench.jsonl")):
        d = json.loads(line)
        bench[(d["model_name"], d["batch"])] = d
peers = json.load(open(os.path.join(out, "peers.json"))) if os.path.exists(os.path.join(out, "peers.json")) else {"rows": []}
rows = peers.get("rows", [])
summary = []
print()
print(f"{'model':13} {'batch':>5} | {'ingot ms':>9} {'ingot/s':>9} | {'torch best':>10} {'variant':>20} | {'torch graph':>11} | {'speedup':>7} {'vs graph':>8} | {'arena MB':>8} {'torch pool MB':>13}")
for (m, b), d in sorted(bench.items()):
    ing_ms = d["latency_gpu_ms"]["median"]
    ing_tp = d["throughput_per_s"]
    pr = [r for r in rows if r["model"] == m and r["batch"] == b]
    best = min(pr, key=lambda r: r["ms"]) if pr else None
    graph = [r for r in pr if r["mode"] == "graph"]
    gbest = min(graph, key=lambda r: r["ms"]) if graph else None
    pool = min((r["graph_pool_MB"] for r in graph if r.get("graph_pool_MB") is not None), default=None)
    torch_tp = best["per_s"] if best else None
    # throughput ratio (ingot per s over PyTorch's best per s); latency ratio against PyTorch + graph
    sp = ing_tp / torch_tp if torch_tp else None
    vg = gbest["ms"] / ing_ms if gbest else None
    arena = d["memory_bytes"]["arena"] / 1e6
    s = {"model": m, "batch": b, "ingot_ms_median": ing_ms, "ingot_per_s": ing_tp,
         "torch_best_ms": best["ms"] if best else None, "torch_best_per_s": torch_tp,
         "torch_best_variant": f"{best['layout']}+{best['mode']}" if best else None,
         "torch_graph_ms": gbest["ms"] if gbest else None, "throughput_ratio": sp, "latency_ratio_vs_graph": vg,
         "ingot_arena_MB": arena, "torch_graph_pool_MB": pool,
         "allocs_during_timed_runs": d["timed_runs"]["device_mallocs"] + d["timed_runs"]["device_frees"]}
    summary.append(s)
    f = lambda x, p=3: "-" if x is None else f"{x:.{p}f}"
    print(f"{m:13} {b:5d} | {ing_ms:9.3f} {ing_tp:9.0f} | {f(s['torch_best_ms']):>10} {str(s['torch_best_variant']):>20} | "
          f"{f(s['torch_graph_ms']):>11} | {f(sp, 2):>7} {f(vg, 2):>8} | {arena:8.1f} {f(pool, 1):>13}")
print("speedup = ingot throughput / PyTorch best throughput; vs graph = PyTorch+CUDA-graph latency / ingot latency (median GPU ms)")
json.dump({"bench": list(bench.values()), "summary": summary, "peers_device": peers.get("device")},
          open(os.path.join(out, "summary.json"), "w"), indent=1)
EOF

say ""
say "gpu_check: $((SECONDS - t_start)) s; failed stages: ${#failed_stages[@]}${failed_stages:+ (${failed_stages[*]})}"
grep -E "^(PASS|FAIL)" "$log" | awk '{print $1}' | sort | uniq -c | tee -a "$log"
[ ${#failed_stages[@]} -eq 0 ]
