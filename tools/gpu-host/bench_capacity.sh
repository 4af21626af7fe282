#!/bin/sh
# bench_capacity on the GPU host, from the unpacked bundle: its libraries
# and its PostgreSQL (docs/PERFORMANCE.md, "Capacity (socket to committed
# rows)").  Every option goes to the program (--help lists them), e.g.
#   /opt/root/bench_capacity --metrics 1000000 --interval 1s --policy medium \
#       --duration 600 --backend gpu --out /tmp/capacity
set -eu
R=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$R/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PG_BINDIR="$R/usr/lib/postgresql/15/bin"
exec "$R/bin/bench_capacity" --pg-script "$R/pg-private.sh" "$@"
