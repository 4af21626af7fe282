#!/bin/sh
# Build every tests/fuzz/fuzz_NAME.c as a libFuzzer binary with ASan + UBSan
# (clang -fsanitize=fuzzer,address,undefined) into build-fuzz/, then run each,
# in parallel, for GA_FUZZ_SECONDS seconds (default 20) starting from its
# seed corpus tests/fuzz/corpus/NAME/.  A target passes when it builds and
# the fuzzer finds nothing.  Last line: "fuzz: N passed, N failed, N skipped".
#
# Targets link against build-fuzz/libproto.a: every proto/*.c, instrumented
# (proto/ is self-contained: the wire format needs nothing else but msgpack,
# libuuid for ids and nettle for signatures).  A target
# that needs more names the sources in a line "fuzz-sources: a.c b.c" of its
# header comment (fuzz_journal.c; they are built instrumented too and linked
# with it), and the libraries they need in a " * fuzz-libs: -lX" line
# (fuzz_api.c, which includes its sources).  New inputs
# the fuzzer finds go to build-fuzz/corpus/NAME/ (not into the repository);
# a crashing input is kept as build-fuzz/artifacts/NAME-crash-* — add it to
# the seed corpus once fixed, so it stays a regression test.
#   GA_FUZZ_SECONDS=300 tests/fuzz/test_fuzz.sh     longer run
#   tests/fuzz/test_fuzz.sh mp_frame                one target
set -u
cd "$(dirname "$0")/../.."
secs=${GA_FUZZ_SECONDS:-20}
only=${1:-}
CLANG=${CLANG:-clang}
out=build-fuzz
pass=0
fail=0

finish() {
    echo "fuzz: $pass passed, $fail failed, 0 skipped"
    [ "$fail" -eq 0 ]
    exit $?
}

if ! command -v "$CLANG" >/dev/null 2>&1; then
    echo "clang not found (apt-get install clang libclang-rt-14-dev)"
    fail=1
    finish
fi

CFLAGS="-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer -I. -Wall -Wextra -Wno-unused-parameter
        -DGA_VERSION=\"fuzz\" -fsanitize=address,undefined -fno-sanitize-recover=undefined
        $(pkg-config --cflags msgpack libpq jansson uuid nettle 2>/dev/null)"
LIBS="$(pkg-config --libs msgpack 2>/dev/null || echo -lmsgpackc) $(pkg-config --libs uuid nettle 2>/dev/null || echo -luuid -lnettle) -lm -lpthread"
mkdir -p "$out/obj/proto" "$out/corpus" "$out/artifacts" "$out/logs"

# the instrumented wire-format library
objs=""
for src in proto/*.c; do
    obj="$out/obj/${src%.c}.o"
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$(find proto -name '*.h' -newer "$obj" 2>/dev/null)" ]; then
        # shellcheck disable=SC2086
        if ! $CLANG $CFLAGS -fsanitize=fuzzer-no-link -c "$src" -o "$obj.$$" 2>"$out/logs/build.log" ||
           ! mv -f "$obj.$$" "$obj"; then
            rm -f "$obj.$$"
            echo "build failed: $src"
            sed 's/^/    | /' "$out/logs/build.log" | head -30
            fail=1
            finish
        fi
    fi
    objs="$objs $obj"
done
# built aside and renamed, so a concurrent run never links a half-written archive
# shellcheck disable=SC2086
ar rcs "$out/libproto.a.$$" $objs && mv -f "$out/libproto.a.$$" "$out/libproto.a"

# build every target, then run them side by side
targets=""
for src in tests/fuzz/fuzz_*.c; do
    [ -f "$src" ] || continue
    name=$(basename "$src" .c)
    name=${name#fuzz_}
    case "$only" in ""|"$name") ;; *) continue ;; esac
    extra=""
    for x in $(sed -nE 's/^[ *]*fuzz-sources: *//p' "$src"); do
        xo="$out/obj/${x%.c}.o"
        mkdir -p "$(dirname "$xo")"
        # shellcheck disable=SC2086
        if ! $CLANG $CFLAGS -fsanitize=fuzzer-no-link -c "$x" -o "$xo.$$" 2>"$out/logs/build.log" ||
           ! mv -f "$xo.$$" "$xo"; then
            rm -f "$xo.$$"
            echo "build failed: $x"
            sed 's/^/    | /' "$out/logs/build.log" | head -30
            fail=1
            finish
        fi
        extra="$extra $xo"
    done
    # a target that needs more libraries names them in a " * fuzz-libs: ..." comment line
    libs=$(sed -n 's/^ \* fuzz-libs: \(.*\)$/\1/p' "$src" | sed 's/ \*\/$//')
    # shellcheck disable=SC2086
    if $CLANG $CFLAGS -fsanitize=fuzzer "$src" $extra "$out/libproto.a" $LIBS $libs -o "$out/fuzz_$name.$$" \
            >"$out/logs/$name.build.log" 2>&1 && mv -f "$out/fuzz_$name.$$" "$out/fuzz_$name"; then
        targets="$targets $name"
    else
        echo "FAIL $name: does not build"
        sed 's/^/    | /' "$out/logs/$name.build.log" | head -30
        fail=$((fail + 1))
    fi
done

pids=""
for name in $targets; do
    seeds="tests/fuzz/corpus/$name"
    work="$out/corpus/$name"
    mkdir -p "$work" "$seeds"
    "$out/fuzz_$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$out/artifacts/$name-" \
        "$work" "$seeds" >"$out/logs/$name.log" 2>&1 &
    pids="$pids $!:$name"
done
for pn in $pids; do
    pid=${pn%%:*}
    name=${pn#*:}
    if wait "$pid"; then
        runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$out/logs/$name.log" | tail -n 1)
        echo "ok   $name: ${runs:-?} runs in ${secs}s"
        pass=$((pass + 1))
    else
        echo "FAIL $name: the fuzzer found a problem (log: $out/logs/$name.log)"
        grep -E "ERROR|SUMMARY|runtime error|Test unit written|deadly signal" "$out/logs/$name.log" | head -10 | sed 's/^/    | /'
        fail=$((fail + 1))
    fi
done
finish
