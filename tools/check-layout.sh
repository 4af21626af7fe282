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
#   tools/        programs and the lab                (anything but daemon/)
#   tests/        anything
# and inside gpu/: only the CPU backend (gpu/agg_cpu*.c) includes its
# private gpu/agg_cpu.h.  Prints each violation as file:line: reason.
set -eu
cd "$(dirname "$0")/.."
find proto storage gpu daemon tools -type f \
     \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort |
xargs awk '
function allowed(f, inc,    top) {
    if (f ~ /^proto\/base\//)
        return inc ~ /^proto\/base\// || inc == "proto/ga_err.h"
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
}
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
