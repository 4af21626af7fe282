#!/bin/sh
# PostgreSQL's own ceilings for the writer's three ways of writing bucket
# rows, on this host, with the bundle's PostgreSQL and the private server's
# settings (tools/pg-private.sh): pgbench clients each rewrite 10,000 rows
# a transaction (5,000 metrics x 2 granularities, 6 values a row, the
# server generating them: no client parsing), on a table shaped like a
# `buckets` partition (fillfactor 50) holding N metrics x 2 buckets:
#   upsert  INSERT ... ON CONFLICT DO UPDATE of existing keys (the merge path)
#   update  UPDATE of existing keys (the replace path)
#   insert  INSERT of new keys (the fresh COPY path, without COPY's parsing)
# docs/PERFORMANCE.md, "Capacity": what bounds the writers.
#   pg_rewrite_ceiling.sh [N=1000000] [SECONDS=20] [CLIENTS=online CPUs]
set -eu
R=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$R/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PG_BINDIR="$R/usr/lib/postgresql/15/bin"
N=${1:-1000000}; T=${2:-20}; C=${3:-$(nproc)}
D=$(mktemp -d /tmp/pg-rewrite.XXXXXX); chmod 755 "$D"
trap '"$R/pg-private.sh" stop "$D/pg"; rm -rf "$D"' EXIT
"$R/pg-private.sh" start "$D/pg" >/dev/null
PSQL="$PG_BINDIR/psql -X -q -v ON_ERROR_STOP=1 -h $D/pg/sock -U postgres -d gpuagg"
$PSQL -c "CREATE TABLE t (metric int, g bigint, ts bigint, vals float8[], PRIMARY KEY (metric, g, ts))
          WITH (fillfactor = 50);
          INSERT INTO t SELECT m, g, 0, '{1,2,3,4,5,6}' FROM generate_series(0, $N - 1) m,
                 (VALUES (60), (3600)) v(g)"
$PSQL -c "VACUUM ANALYZE t"
slice=$((N / C))
[ "$slice" -ge 5000 ] || { echo "pg_rewrite_ceiling: N must be at least 5000 x clients" >&2; exit 2; }
V="ARRAY[random(),random(),random(),random(),random(),random()]"
pick="\\set m0 :client_id * $slice + random(0, $((slice / 5000 - 1))) * 5000"
printf '%s\n%s\n' "$pick" "INSERT INTO t SELECT m, g, 0, $V FROM generate_series(:m0, :m0 + 4999) m, (VALUES (60), (3600)) v(g) ON CONFLICT (metric, g, ts) DO UPDATE SET vals = excluded.vals;" >"$D/upsert.sql"
printf '%s\n%s\n' "$pick" "UPDATE t SET vals = $V WHERE metric BETWEEN :m0 AND :m0 + 4999 AND ts = 0;" >"$D/update.sql"
printf '%s\n%s\n' "$pick" "INSERT INTO t SELECT m, g, (random() * 1e15)::bigint, $V FROM generate_series(:m0, :m0 + 4999) m, (VALUES (60), (3600)) v(g);" >"$D/insert.sql"
echo "| path | clients | rows/s |"
echo "|---|---|---|"
for k in upsert update insert; do
    tps=$("$PG_BINDIR/pgbench" -n -h "$D/pg/sock" -U postgres -c "$C" -j "$C" -T "$T" -f "$D/$k.sql" gpuagg 2>&1 |
          sed -n 's/^tps = \([0-9.]*\).*/\1/p')
    echo "| $k | $C | $(awk "BEGIN { printf \"%.0f\", ${tps:-0} * 10000 }") |"
done
