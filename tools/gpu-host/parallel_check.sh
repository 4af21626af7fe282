#!/bin/sh
# The checks of a change to the kernels, spread over a 4-GPU host in one
# run: compute-sanitizer racecheck on GPU 3 in the background while GPU 0
# runs the test, memcheck and bench_gpu's kernel table for the build before
# and after the change (alternating, twice each), and GPUs 1-2 the engines.
#   tools/gpu-host/parallel_check.sh BEFORE_DIR [test_scale]
# BEFORE_DIR: build-gpu/ of the commit before (tools/gpu-host/build.sh
# there, copied aside); build-gpu/ is the change.  Logs in $OUT.
set -u
cd "$(dirname "$0")/../.."
PRE=$1
OUT=${OUT:-gpu-check-out}
mkdir -p "$OUT"
export GA_LOG_NO_TS=1
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi -L
CUDA_VISIBLE_DEVICES=3 GA_CUDA_TEST_SCALE=0.01 timeout 540 "$SAN" --tool racecheck \
    --error-exitcode 9 build-gpu/test_cuda_backend > "$OUT/racecheck.log" 2>&1 &
RACE=$!
t0=$(date +%s)
export CUDA_VISIBLE_DEVICES=0
GA_CUDA_TEST_SCALE=${2:-0.5} timeout 120 build-gpu/test_cuda_backend > "$OUT/test.log" 2>&1
echo "== test rc=$?"; grep -E "passed|bit-identical|steady" "$OUT/test.log"
GA_CUDA_TEST_SCALE=0.02 timeout 90 "$SAN" --tool memcheck --error-exitcode 9 \
    build-gpu/test_cuda_backend > "$OUT/memcheck.log" 2>&1
echo "== memcheck rc=$?"; grep -E "ERROR SUMMARY|passed" "$OUT/memcheck.log" | tail -n 2
for r in 1 2; do
    for d in "$PRE" build-gpu; do
        timeout 100 "$d/bench_gpu" --only kernel > "$OUT/kernel_$(basename "$d")_$r.log" 2>&1
        echo "== kernel $d run $r rc=$?"; grep -E "^\| kernel" "$OUT/kernel_$(basename "$d")_$r.log"
    done
done
export CUDA_VISIBLE_DEVICES=1,2
for o in 1 2 4 5; do
    echo "== engine --gpus 2 --only $o"
    timeout 100 build-gpu/bench_engine_gpus --gpus 2 --batch 10000000 --batches 10 --metrics 10000 \
        --only $o 2>&1 | sed -n '/^| engine/,$p' | grep -v '^$' | grep -v '^|---'
done
echo "== waiting for racecheck ($(( $(date +%s) - t0 )) s so far)"
wait $RACE
echo "== racecheck rc=$? ($(( $(date +%s) - t0 )) s)"
grep -E "RACECHECK SUMMARY|ERROR SUMMARY|passed|hazard" "$OUT/racecheck.log" | tail -n 4
