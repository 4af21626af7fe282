#!/bin/sh
# On the GPU host, everything the CUDA backend needs checked and measured,
# in one run with a time cap per step:
#   test_cuda_backend (GPU vs CPU, both rows kernels), bench_gpu (one
#   table with its ceilings), bench_engine_gpus over all GPUs present
#   (1 vs N), then compute-sanitizer memcheck and racecheck (a process
#   a rows kernel, side by side) on a small
#   scale of the test.  Needs build-gpu/ from tools/gpu-host/build.sh;
#   with build-py/ (tools/gpu-host/pybundle.sh) there too, also
#   carbonara on the pipeline's points (tools/bench/bench_gpu_carbonara.py).
# Logs in $OUT (or ./gpu-all-out); a summary is printed last.
#   tools/gpu-host/all_in_one.sh [test_scale]   (default 0.5; RACECHECK=0: no racecheck)
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-gpu-all-out}
mkdir -p "$OUT"
export GA_LOG_NO_TS=1
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv > "$OUT/gpu.txt" 2>&1
step() {        # step NAME SECONDS CMD...
    name=$1 secs=$2
    shift 2
    t0=$(date +%s)
    timeout "$secs" "$@" > "$OUT/$name.log" 2>&1
    rc=$?
    echo "== $name rc=$rc ($(( $(date +%s) - t0 )) s, cap $secs s)" >> "$OUT/summary.txt"
}
: > "$OUT/summary.txt"
step test 90 env GA_CUDA_TEST_SCALE=${1:-0.5} build-gpu/test_cuda_backend
step bench 300 build-gpu/bench_gpu --cpu-threads 16
# carbonara on the pipeline's points, when build-py/ came along (pybundle.sh)
if [ -f build-py/py311.tar.xz ] && tar -C /tmp -xJf build-py/py311.tar.xz; then
    P=/tmp/py311
    step carbonara 200 env PYTHONHOME=$P PYTHONPATH=$P/dist LD_LIBRARY_PATH=$P/lib \
        $P/bin/python3.11 tools/bench/bench_gpu_carbonara.py --bench build-gpu/bench_gpu
fi
# one engine per process (--only: 1 = one GPU, 2 = all GPUs, 3 = all GPUs
# with a pageable split, 4 and 5 = 1 and all pipelined); compare the
# checksums across them.  With 4 or more GPUs also 2 of them (2, 3, 5).
engine() {      # engine NGPUS ONLY
    step engine_gpus${1}_$2 35 build-gpu/bench_engine_gpus --gpus "$1" --batch 10000000 \
        --batches 10 --metrics 10000 --only "$2"
}
if [ "$NGPU" -ge 2 ]; then
    for o in 1 2 3 4 5; do engine "$NGPU" $o; done
fi
if [ "$NGPU" -ge 4 ]; then
    for o in 2 3 5; do engine 2 $o; done
fi
step memcheck 40 env GA_CUDA_TEST_SCALE=0.02 "$SAN" --tool memcheck --error-exitcode 9 build-gpu/test_cuda_backend
# RACECHECK=0 skips it (6-9 minutes; it checks shared memory, so a change
# to no shared-memory kernel need not pay for it).  One process a rows
# kernel, side by side on the GPU: the two in one took past 9 minutes.
if [ "${RACECHECK:-1}" != 0 ]; then
    for k in tiled warp; do
        step racecheck_$k 560 env GA_CUDA_TEST_SCALE=0.01 GA_CUDA_TEST_ROWS=$k "$SAN" --tool racecheck \
            --error-exitcode 9 build-gpu/test_cuda_backend &
    done
    wait
fi
cat "$OUT/gpu.txt"
cat "$OUT/summary.txt"
echo "-- test";       grep -E "rows kernel|sort|passed|FAIL" "$OUT/test.log" | tail -n 10
echo "-- memcheck";   grep -E "ERROR SUMMARY|passed" "$OUT/memcheck.log" | tail -n 3
for k in tiled warp; do
    echo "-- racecheck $k"
    grep -E "RACECHECK SUMMARY|ERROR SUMMARY|passed|hazard" "$OUT/racecheck_$k.log" 2>/dev/null | tail -n 4
done
for f in "$OUT"/engine_gpus*.log; do [ -f "$f" ] && { echo "-- $f"; tail -n 14 "$f"; }; done
echo "-- bench";      cat "$OUT/bench.log"
[ -f "$OUT/carbonara.log" ] && { echo "-- carbonara"; cat "$OUT/carbonara.log"; }
