#!/bin/sh
# A private PostgreSQL for `make run` and the tests: a cluster in DIR, reached
# only through a Unix socket in DIR/sock (no TCP), trust auth, database gpuagg.
#   tools/pg-private.sh start DIR    prints the libpq conninfo on stdout
#   tools/pg-private.sh stop DIR
# initdb refuses root, so as root the cluster belongs to the postgres user
# (nobody where there is none, as on the GPU host).  The server binaries are
# Debian's newest, or those in $PG_BINDIR (the GPU bundle's own).
set -eu
cmd=$1; dir=$2
bindir=${PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
[ -n "$bindir" ] && [ -x "$bindir/pg_ctl" ] || { echo "pg-private: PostgreSQL server binaries not found (apt-get install postgresql, or set PG_BINDIR)" >&2; exit 1; }
pguser=postgres
id -u postgres >/dev/null 2>&1 || pguser=nobody
as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u $pguser -- "$@"; else "$@"; fi
}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# Write-heavy settings (docs/STORAGE.md "Server settings"): room for the
# day's partition and its index in shared memory, and checkpoints (whose
# full-page images dominate WAL right after them) far apart.  Durability is
# unchanged: fsync and synchronous_commit stay on.
# PG_OPTS (environment) adds server options after these, e.g. a larger
# max_wal_size and shared_buffers on a host with the disk and memory for them.
PERF_OPTS="-c shared_buffers=1GB -c wal_buffers=64MB -c max_wal_size=4GB -c checkpoint_timeout=30min -c wal_compression=lz4 ${PG_OPTS:-}"
case "$cmd" in
start)
    if [ "$(id -u)" = 0 ]; then
        chown "$pguser" "$dir"
        # postgres must be able to reach DIR; a parent like /root (0700) stops it.
        if ! runuser -u $pguser -- test -w "$dir"; then
            echo "pg-private: the $pguser user cannot reach $dir" >&2; exit 1
        fi
    fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        as_pg mkdir -p "$dir/data" "$dir/sock"
        as_pg "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
            { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    if ! as_pg "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
            -o "-c listen_addresses='' -c unix_socket_directories='$dir/sock' -c fsync=on -c max_connections=50 $PERF_OPTS" \
            start >/dev/null || { tail -n 20 "$dir/postgres.log" >&2; exit 1; }
    fi
    as_pg "$bindir/psql" -h "$dir/sock" -U postgres -d postgres -Atqc \
        "SELECT 1 FROM pg_database WHERE datname='gpuagg'" | grep -q 1 ||
        as_pg "$bindir/createdb" -h "$dir/sock" -U postgres gpuagg
    echo "host=$dir/sock user=postgres dbname=gpuagg"
    ;;
stop)
    [ -f "$dir/data/PG_VERSION" ] && as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
