#!/bin/sh
# test_check_layout.sh — tools/check-layout.sh passes on the tree and fails,
# naming file and line, on an include planted across a layer the wrong way;
# with --symbols, on an object using a symbol a higher layer's object defines.
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
# symbols: an object of a lower layer using a function a higher one defines
mkdir -p "$tmp/obj/gpu" "$tmp/obj/daemon"
link() {    # $1 = user's path, $2 = definer's path (no suffix), $3 = 1 if refused
    printf 'int zz_up(void);\nint zz_user(void) { return zz_up(); }\n' > "$tmp/$1.c"
    printf 'int zz_up(void) { return 1; }\n' > "$tmp/$2.c"
    cc -c "$tmp/$1.c" -o "$tmp/obj/$1.o" && cc -c "$tmp/$2.c" -o "$tmp/obj/$2.o"
    out=$("$tmp/tools/check-layout.sh" --symbols "$tmp/obj" 2>&1)
    rc=$?
    rm -f "$tmp/$1.c" "$tmp/$2.c" "$tmp/obj/$1.o" "$tmp/obj/$2.o"
    if [ "$3" = 1 ]; then
        [ $rc -ne 0 ] && echo "$out" | grep -q "^$1.o: uses zz_up, defined by $2.o" &&
            ok "$1.o -> $2.o refused" || bad "$1.o -> $2.o not refused (rc $rc: $out)"
    else
        [ $rc -eq 0 ] && ok "$1.o -> $2.o allowed" || bad "$1.o -> $2.o refused (rc $rc: $out)"
    fi
}
link gpu/zz daemon/yy 1
link daemon/zz gpu/yy 0
(sh tools/check-layout.sh --symbols /nonexistent >/dev/null 2>&1) && bad "a missing object tree passes" ||
    ok "a missing object tree is an error"
echo "check_layout: $npass passed, $nfail failed, 0 skipped"
exit $fail
