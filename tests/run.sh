#!/bin/sh
# Run every test suite; print the skipped tests with their reasons, then the
# total as the last line (the form CI's parser reads):
#   N passed, N failed, N skipped
# The Python suites run under pytest (-rs): its summary line ("2 failed,
# 10 passed, 1 skipped, 1 error in 4.1s", parts in any order, an error
# counts as failed) gives the counts and its "SKIPPED [1] FILE:LINE: test:
# reason" lines the skipped list (tests/conftest.py puts the test's name in
# the reason).  The C unit suites and the shell suites print "name: N passed,
# N failed, N skipped" as their last line (", N skipped" may be absent: 0),
# and "SKIP test: reason" for each test they skipped.
#   tests/run.sh            everything (unit, unit under ASan+UBSan, the
#                           threaded engine's suites under TSan, scripts)
#   tests/run.sh unit       only build/tests/test_*
#   tests/run.sh FILTER     only suites whose path contains FILTER
# Scripted suites are tests/<dir>/test_*.py (pytest modules, run with
# Debian's python3 -m pytest) and tests/<dir>/test_*.sh.
set -u
cd "$(dirname "$0")/.."
filter=${1:-}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
export GA_LOG_NO_TS=1 GA_ROOT="$(pwd)" ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
total_pass=0; total_fail=0; total_skip=0; failed_suites=""
skips=$(mktemp); trap 'rm -f "$skips"' EXIT
log_dir=build/test-logs; mkdir -p "$log_dir"

count() {       # $1 = pytest's summary line, $2 = the word after the number: the number, or 0
    n=$(echo "$1" | grep -oE "[0-9]+ $2([^a-z]|\$)" | grep -oE '^[0-9]+')
    echo "${n:-0}"
}

run_suite() {   # $1 = label, rest = command
    label=$1; shift
    case "$filter" in
        ""|all) ;;
        unit) case "$label" in unit:*|asan:*|tsan:*) ;; *) return ;; esac ;;
        *) case "$label" in *"$filter"*) ;; *) return ;; esac ;;
    esac
    logf="$log_dir/$(echo "$label" | tr '/:' '__').log"
    start=$(date +%s)
    "$@" >"$logf" 2>&1; rc=$?
    secs=$(( $(date +%s) - start ))
    case "$label" in
    *.py)   # pytest's summary line; its parts come in any order
        last=$(grep -E '^=* *(([0-9]+ [a-z]+(, )?)+|no tests ran) in [0-9.]+s' "$logf" | tail -n 1)
        p=$(count "$last" passed); f=$(( $(count "$last" failed) + $(count "$last" errors?) ))
        s=$(count "$last" skipped)
        grep -E '^SKIPPED \[[0-9]+\] [^ ]+:[0-9]+: ' "$logf" |
            sed -E "s|^SKIPPED \[[0-9]+\] [^ ]+:[0-9]+: |  $label: |" >>"$skips" ;;
    *)
        last=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$logf" | tail -n 1)
        p=$(echo "$last" | sed -nE 's/.*([^0-9]|^)([0-9]+) passed.*/\2/p'); p=${p:-0}
        f=$(echo "$last" | sed -nE 's/.* ([0-9]+) failed.*/\1/p'); f=${f:-0}
        s=$(echo "$last" | sed -nE 's/.* ([0-9]+) skipped.*/\1/p'); s=${s:-0}
        grep -E '^SKIP [^:]+: ' "$logf" | sed "s|^SKIP |  $label: |" >>"$skips" ;;
    esac
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # crashed or exited non-zero
    if [ -z "$last" ] && [ "$rc" -eq 0 ]; then f=1; echo "  $label printed no result line"; fi
    total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); total_skip=$((total_skip + s))
    if [ "$f" -ne 0 ]; then
        failed_suites="$failed_suites $label"
        printf '%-40s %4d passed %4d failed %4d skipped  %3ss  FAIL (rc=%d)\n' "$label" "$p" "$f" "$s" \
            "$secs" "$rc"
        sed 's/^/    | /' "$logf" | tail -n 40
    else
        printf '%-40s %4d passed %4d failed %4d skipped  %3ss\n' "$label" "$p" "$f" "$s" "$secs"
    fi
}

for t in build/tests/test_*; do
    [ -x "$t" ] && run_suite "unit:$(basename "$t")" "$t"
done
for t in build-asan/tests/test_*; do
    [ -x "$t" ] && run_suite "asan:$(basename "$t")" "$t"
done
for t in build-tsan/tests/test_*; do
    [ -x "$t" ] && run_suite "tsan:$(basename "$t")" env TSAN_OPTIONS=halt_on_error=1 "$t"
done
for t in tests/*/test_*.py tests/*/test_*.sh; do
    [ -f "$t" ] || continue
    case "$t" in
        *.py) run_suite "$t" "$PY" -m pytest -q -rs -p no:cacheprovider "$t" ;;
        *.sh) run_suite "$t" sh "$t" ;;
    esac
done
[ -n "$failed_suites" ] && echo "failed suites:$failed_suites"
if [ -s "$skips" ]; then
    echo "skipped:"
    cat "$skips"
fi
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
