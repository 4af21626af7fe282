#!/bin/sh
# GPU checks and benchmarks of the apd-fit and gf820 job kernels, for a GPU
# host.  Build first, here:
#     tools/gpu-host/jobs_actuarial_build.sh
# then on the GPU host, from the repository root, with build/jobs_actuarial copied there:
#     sh tools/gpu-host/jobs_actuarial.sh
# Runs the unit tests with a GPU required (GA_REQUIRE_GPU=1) and the slow
# CPU cases on (GA_TEST_SLOW=1: GF820 steps 10 on the CPU too), then
# bench_jobs_actuarial on every core.  Logs go to $OUT (default /tmp/jobs_actuarial); a
# short table is printed last.
set -u
cd "$(dirname "$0")/../.."
D=${JOBS_ACTUARIAL_DIR:-build/jobs_actuarial}
OUT=${OUT:-/tmp/jobs_actuarial}
mkdir -p "$OUT"
NPROC=$(nproc)
export GA_REQUIRE_GPU=1 GA_TEST_SLOW=1 GA_TEST_THREADS=$NPROC GA_LOG_NO_TS=1
{
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
        --format=csv 2>&1
    echo "cpus=$NPROC"
    uname -a
} >"$OUT/host.txt"
summary=""
for t in test_special_fn test_apd test_gf820; do
    start=$(date +%s)
    timeout 120 "$D/$t" >"$OUT/$t.log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    last=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$OUT/$t.log" | tail -n 1)
    summary="$summary$(printf '%-18s rc=%-3d %4ss  %s' "$t" "$rc" "$secs" "$last")
"
done
timeout 150 "$D/bench_jobs_actuarial" --threads "$NPROC" >"$OUT/bench.log" 2>&1
brc=$?
echo "== host"; cat "$OUT/host.txt"
echo "== GPU lines of the tests"
grep -h -E "GPU|gpu|FAIL" "$OUT"/test_*.log | head -40
echo "== bench (rc=$brc)"
grep -v '^$' "$OUT/bench.log" | grep -v -E '^(job|apd|gf820) ' ; grep -E '^(apd|gf820) ' "$OUT/bench.log"
echo "== tests"
printf '%s' "$summary"
echo "== table"
sed -n '/^job /,$p' "$OUT/bench.log"
