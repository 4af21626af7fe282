#!/bin/sh
# A change to the feed, before against after on one GPU in one run: the
# GPU test and memcheck of the change, then bench_gpu's pipeline table for
# each build, alternating, twice each, at each batch size given.
#   tools/gpu-host/ab_pipeline.sh BEFORE_DIR [batch ...]   (default 4000000 100000)
# BEFORE_DIR: build-gpu/ of the commit before (tools/gpu-host/build.sh
# there, copied aside); build-gpu/ is the change.  Logs in $OUT.
# CHECKS=0 skips the test and memcheck (already run on this build).
set -u
cd "$(dirname "$0")/../.."
PRE=$1
shift
[ $# -gt 0 ] || set -- 4000000 100000
OUT=${OUT:-gpu-ab-out}
mkdir -p "$OUT"
export GA_LOG_NO_TS=1
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
if [ "${CHECKS:-1}" != 0 ]; then
    GA_CUDA_TEST_SCALE=${TEST_SCALE:-0.3} timeout 120 build-gpu/test_cuda_backend > "$OUT/test.log" 2>&1
    echo "== test rc=$?"; grep -E "passed|bit-identical|steady|order:" "$OUT/test.log"
    GA_CUDA_TEST_SCALE=0.02 timeout 90 "$SAN" --tool memcheck --error-exitcode 9 \
        build-gpu/test_cuda_backend > "$OUT/memcheck.log" 2>&1
    echo "== memcheck rc=$?"; grep -E "ERROR SUMMARY|passed" "$OUT/memcheck.log" | tail -n 2
fi
for b in "$@"; do
    for r in 1 2; do
        for d in "$PRE" build-gpu; do
            log="$OUT/pipe_${b}_$(basename "$d")_$r.log"
            timeout 120 "$d/bench_gpu" --only pipeline --batch "$b" > "$log" 2>&1
            echo "== pipeline batch $b $d run $r rc=$?"
            grep -E "^\| pipeline (feed\(\), pinned input|feed_start/feed_wait \+ prefetch of)" "$log"
            grep -E "variant=1 timed feeds" "$log" | sed 's/; GPU stages.*; growth/; growth/'
        done
    done
done
