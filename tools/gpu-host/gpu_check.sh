#!/bin/sh
# On the GPU host, in one go: the GPU-vs-CPU test, compute-sanitizer
# memcheck and racecheck over a smaller run of it, and the benchmark.
# Logs go to $OUT (or ./gpu-check-out).  Needs build-gpu/ from
# tools/gpu-host/build.sh.  Prints a summary last.
#   tools/gpu-host/gpu_check.sh [bench args...]
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-gpu-check-out}
mkdir -p "$OUT"
export GA_LOG_NO_TS=1
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,power.limit --format=csv > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"

t0=$(date +%s)
build-gpu/test_cuda_backend > "$OUT/test.log" 2>&1; rc_test=$?
t1=$(date +%s)
GA_CUDA_TEST_SCALE=0.03 timeout 240 "$SAN" --tool memcheck --leak-check full --error-exitcode 9 \
    build-gpu/test_cuda_backend > "$OUT/memcheck.log" 2>&1; rc_mem=$?
t2=$(date +%s)
GA_CUDA_TEST_SCALE=0.02 timeout 200 "$SAN" --tool racecheck --error-exitcode 9 \
    build-gpu/test_cuda_backend > "$OUT/racecheck.log" 2>&1; rc_race=$?
t3=$(date +%s)
build-gpu/bench_gpu "$@" > "$OUT/bench.log" 2>&1; rc_bench=$?
t4=$(date +%s)

echo "== test ($((t1 - t0)) s) rc=$rc_test"; tail -n 6 "$OUT/test.log"
echo "== memcheck ($((t2 - t1)) s) rc=$rc_mem"; grep -E "ERROR SUMMARY|LEAK SUMMARY|passed|Error" "$OUT/memcheck.log" | head -n 12
echo "== racecheck ($((t3 - t2)) s) rc=$rc_race"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|passed|hazard" "$OUT/racecheck.log" | head -n 12
echo "== bench ($((t4 - t3)) s) rc=$rc_bench"; cat "$OUT/bench.log"
