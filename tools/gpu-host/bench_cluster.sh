#!/bin/sh
# bench_cluster.py on the GPU host, from the unpacked bundle: its libraries,
# its PostgreSQL and its nats-server (tools/bench/bench_cluster.py says
# what it measures).  Every option goes to the program (--help lists them),
# e.g. two daemons on GPUs 0 and 1 against one on GPU 0:
#   /opt/root/bench_cluster --metrics 1000000 --interval 1s --duration 300 \
#       --daemons 2 --backend gpu --out /tmp/cluster
set -eu
R=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$R/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PG_BINDIR="$R/usr/lib/postgresql/15/bin"
exec python3 "$R/bench_cluster.py" --bindir "$R/bin" --bench-capacity "$R/bin/bench_capacity" \
    --pg-script "$R/pg-private.sh" --nats-server "$R/bin/nats-server" "$@"
