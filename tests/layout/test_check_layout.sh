#!/bin/sh
# test_check_layout.sh — tools/check-layout.sh passes on the tree and fails,
# naming file and line, on an include planted across a layer the wrong way.
set -u
cd "$(dirname "$0")/../.."
fail=0 npass=0 nfail=0
ok() { echo "ok: $1"; npass=$((npass + 1)); }
bad() { echo "FAIL: $1"; fail=1; nfail=$((nfail + 1)); }
tools/check-layout.sh >/dev/null 2>&1 && ok "the tree" || bad "the tree has includes out of place"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r proto storage gpu daemon tools "$tmp/"
plant() {   # $1 = file to create, $2 = the include, $3 = 1 if it must be refused
    printf '#include "%s"\n' "$2" > "$tmp/$1"
    out=$("$tmp/tools/check-layout.sh" 2>&1)
    rc=$?
    rm -f "$tmp/$1"
    if [ "$3" = 1 ]; then
        [ $rc -ne 0 ] && echo "$out" | grep -q "^$1:1: includes $2" && ok "$1 -> $2 refused" ||
            bad "$1 -> $2 not refused (rc $rc: $out)"
    else
        [ $rc -eq 0 ] && ok "$1 -> $2 allowed" || bad "$1 -> $2 refused (rc $rc: $out)"
    fi
}
plant storage/zz.c gpu/engine.h 1
plant storage/zz.c daemon/config/config.h 1
plant proto/zz.h storage/journal.h 1
plant proto/base/zz.h proto/policy.h 1
plant gpu/zz.c daemon/log.h 1
plant gpu/cuda/zz.cuh gpu/agg_cpu.h 1
plant tools/zz.c daemon/daemon.h 1
plant gpu/agg_cpu_zz.c gpu/agg_cpu.h 0
plant daemon/zz.c gpu/engine.h 0
plant proto/base/zz.h proto/ga_err.h 0
plant storage/zz.c proto/agg.h 0
echo "check_layout: $npass passed, $nfail failed, 0 skipped"
exit $fail
