#!/bin/sh
# PostgreSQL's own rates for what a first start costs, when every metric of
# a fleet is new: registering N metrics (rows of a table shaped like
# `metrics`, its three indexes, the writer's INSERT ... ON CONFLICT) and
# creating the open buckets' blocks (NB rows of about 1.3 kB, fillfactor
# 20, as `open_blocks`), each by CLIENTS connections at once (one statement
# each, its share of the rows; ids interleaved over the connections as the
# writers' partitions interleave them) and by one connection.  Blocks go into
# one table, then into 64 range partitions as schema 15 stores them, each
# connection into its own.  The server generates the rows: no client parsing.
# With the bundle's PostgreSQL and the private server's settings
# (tools/pg-private.sh).  docs/PERFORMANCE.md, "Capacity".
#   pg_register_ceiling.sh [N=1000000] [NB=100000] [CLIENTS=online CPUs]
set -eu
R=$(cd "$(dirname "$0")" && pwd)
[ -x "$R/usr/lib/postgresql/15/bin/psql" ] || R=$(cd "$R/../.." && pwd)   # from the source tree
if [ -x "$R/usr/lib/postgresql/15/bin/psql" ]; then
    export LD_LIBRARY_PATH="$R/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PG_BINDIR="$R/usr/lib/postgresql/15/bin"
    PGP="$R/pg-private.sh"
else
    export PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
    PGP="$R/tools/pg-private.sh"
fi
N=${1:-1000000}; NB=${2:-100000}; C=${3:-$(nproc)}
[ $((64 % C)) -eq 0 ] || { echo "pg_register_ceiling: CLIENTS must divide 64" >&2; exit 2; }
D=$(mktemp -d /tmp/pg-register.XXXXXX); chmod 755 "$D"
trap '"$PGP" stop "$D/pg" >/dev/null; rm -rf "$D"' EXIT
"$PGP" start "$D/pg" >/dev/null
PSQL="$PG_BINDIR/psql -X -q -v ON_ERROR_STOP=1 -h $D/pg/sock -U postgres -d gpuagg"
BLOCK_COLS="id bigint PRIMARY KEY, metrics integer[] NOT NULL, msets integer[] NOT NULL, grans bigint[] NOT NULL,
            tss bigint[] NOT NULL, offs integer[] NOT NULL, vals double precision[] NOT NULL"
tables() {   # metrics as schema 15, blocks in one table or 64
    $PSQL -c "SET client_min_messages = warning; DROP TABLE IF EXISTS m, b;
        CREATE TABLE m (id integer PRIMARY KEY CHECK (id >= 0), name text NOT NULL UNIQUE, policy text NOT NULL,
            points bigint NOT NULL DEFAULT 0, created timestamptz NOT NULL DEFAULT now(), uuid uuid NOT NULL,
            open_block bigint) WITH (fillfactor = 80);
        CREATE INDEX m_uuid ON m (uuid)"
    if [ "$1" = one ]; then
        $PSQL -c "CREATE TABLE b ($BLOCK_COLS) WITH (fillfactor = 20)"
    else
        $PSQL -c "CREATE TABLE b ($BLOCK_COLS) PARTITION BY RANGE (id);
            DO \$\$ BEGIN FOR p IN 0 .. 63 LOOP
                EXECUTE format('CREATE TABLE b_%s PARTITION OF b FOR VALUES FROM (%s) TO (%s) WITH (fillfactor = 20)',
                               p, p::int8 << 32, (p + 1)::int8 << 32);
            END LOOP; END \$\$"
    fi
}
metrics_sql() {   # connection $1 of $2: ids k * $2 + $1
    per=$((N / $2)); i="(k * $2 + $1)"
    echo "INSERT INTO m AS x (id, name, policy, uuid, open_block)
          SELECT $i, n, 'medium', md5(n)::uuid, $i / 10
            FROM generate_series(0, $per - 1) k, LATERAL (SELECT 'host-' || md5($i::text) || '.cpu.util' AS n) s
          ON CONFLICT (id) DO UPDATE SET open_block = EXCLUDED.open_block
           WHERE EXCLUDED.open_block IS NOT NULL AND x.open_block IS DISTINCT FROM EXCLUDED.open_block"
}
blocks_sql() {    # connection $1 of $2: blocks of partitions $1 * 64/$2 ..; 20 entries, 120 values
    per=$((NB / $2)); parts=$((64 / $2))
    echo "INSERT INTO b SELECT ((($1 * $parts + k % $parts)::int8) << 32) + k, a.i, a.i, a.g, a.g, a.i, v.v
            FROM generate_series(0, $per - 1) k,
                 LATERAL (SELECT array_agg(j + k) i, array_agg((j + k)::int8 * 1000) g FROM generate_series(1, 20) j) a,
                 LATERAL (SELECT array_agg(random() + j + k) v FROM generate_series(1, 120) j) v"
}
now() { date +%s.%N; }
run() {   # label rows connections sql-function
    t0=$(now); s=0
    while [ $s -lt "$3" ]; do $PSQL -c "$($4 $s "$3")" & s=$((s + 1)); done
    wait; t1=$(now)
    awk -v l="$1" -v n="$2" -v c="$3" "BEGIN { d = $t1 - $t0; printf \"| %s | %d | %d | %.2f | %.0f |\\n\", l, n, c, d, n / d }"
}
echo "| what | rows | connections | s | rows/s |"
echo "|---|---|---|---|---|"
tables one;  run "metrics registered" "$N" "$C" metrics_sql
tables one;  run "metrics registered" "$N" 1 metrics_sql
tables one;  run "blocks created, one table" "$NB" "$C" blocks_sql
tables part; run "blocks created, 64 partitions" "$NB" "$C" blocks_sql
tables one;  run "blocks created, one table" "$NB" 1 blocks_sql
