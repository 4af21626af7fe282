#!/bin/sh
# check-layout.sh — fail when an #include crosses a layer the wrong way
# (docs/LAYOUT.md).  Run by `make check-layout`, itself run by `make test`.
#
# The layers, bottom up; each may include its own and those below it:
#   proto/base/   leaf utilities (log, grow, hash, hmap, deadline); below it only
#                 proto/ga_err.h, the error table
#   proto/        the shared vocabulary (policies, methods, points, records,
#                 errors, time) and the wire formats
#   storage/      journal and PostgreSQL              (proto)
#   gpu/          the engine and its backends, jobs   (proto)
#   daemon/       the process: ingest, control, jobs  (proto, storage, gpu)
#   tools/        programs and benchmarks             (anything but daemon/)
#   tests/        anything
# and inside gpu/: only the CPU backend (gpu/agg_cpu*.c) includes its
# private gpu/agg_cpu.h.  Prints each violation as file:line: reason.
#
# With --symbols OBJ (a build's object tree, e.g. build/obj; `make test`
# passes it after the build) the same rules hold for the link: an object of
# proto/, storage/, gpu/ or daemon/ may use only functions and variables
# defined by objects of its own layer or those below it (nm), so code below
# the daemon cannot call up into it whatever it declares.
set -eu
cd "$(dirname "$0")/.."
RULES='
function allowed(f, inc,    top) {
    if (f ~ /^proto\/base\//)
        return inc ~ /^proto\/base\// || inc == "proto/ga_err.h" || inc == "proto/ga_err.o"
    if (f ~ /^proto\//)
        return inc ~ /^proto\//
    if (f ~ /^storage\//)
        return inc ~ /^(proto|storage)\//
    if (f ~ /^gpu\//) {
        if (inc == "gpu/agg_cpu.h")
            return f ~ /^gpu\/agg_cpu[a-z_]*\.(c|h)$/
        return inc ~ /^(proto|gpu)\//
    }
    if (f ~ /^daemon\//)
        return inc ~ /^(proto|storage|gpu|daemon)\//
    if (f ~ /^tools\//)
        return inc !~ /^daemon\//
    return 1
}'
if [ "${1:-}" = --symbols ]; then
    obj=${2:?usage: check-layout.sh [--symbols OBJDIR]}
    [ -d "$obj" ] || { echo "check-layout: no object tree $obj (build first)" >&2; exit 2; }
    # the objects of sources in the tree (not those a moved file left behind)
    root=$(pwd)
    files=$(cd "$obj" && find proto storage gpu daemon -name '*.o' 2>/dev/null | sort |
            while read -r o; do
                for src in "${o%.o}.c" "${o%.o}.cu"; do
                    [ -f "$root/$src" ] && { echo "$o"; break; }
                done
            done)
    [ -n "$files" ] || { echo "check-layout: no objects under $obj" >&2; exit 2; }
    # "file:addr T sym" (defined) then "file: U sym" (used), one per line
    # shellcheck disable=SC2086
    (cd "$obj" && nm -A --defined-only $files && echo "--" && nm -A -u $files) |
    awk "$RULES"'
    $0 == "--" { used = 1; next }
    {
        c = index($0, ":"); f = substr($0, 1, c - 1); n = split(substr($0, c + 1), a, " ")
        sym = a[n]
        if (!used) {
            if (a[n - 1] ~ /^[TDBRCVWGS]$/ && !(sym in def))
                def[sym] = f
        } else if ((sym in def) && !allowed(f, def[sym])) {
            printf "%s: uses %s, defined by %s, across a layer the wrong way (docs/LAYOUT.md)\n", f, sym, def[sym]
            bad++
        }
    }
    END { if (bad) { printf "check-layout: %d symbol(s) used across a layer the wrong way\n", bad; exit 1 } }'
    exit
fi
find proto storage gpu daemon tools -type f \
     \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort |
xargs awk "$RULES"'
/^[ \t]*#[ \t]*include[ \t]*"/ {
    inc = $0
    sub(/^[^"]*"/, "", inc)
    sub(/".*$/, "", inc)
    if (!allowed(FILENAME, inc)) {
        printf "%s:%d: includes %s across a layer the wrong way (docs/LAYOUT.md)\n", FILENAME, FNR, inc
        bad++
    }
}
END { if (bad) { printf "check-layout: %d include(s) out of place\n", bad; exit 1 } }
'
