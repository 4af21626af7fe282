#!/bin/bash
# The whole daemon on a GPU host, end to end: PostgreSQL, gpuaggd, the load
# generator.  The same seeded workload runs twice, once on the CPU backend
# (gpu.devices: none) and once on the GPUs (gpu.devices: all), each into its
# own database; the stored aggregates must be equal row for row.  Prints a
# table; logs go to $OUT (or /tmp/gpuagg-e2e).
#   (from the repo root there) tar -C /opt -xJf build-bundle/gpuagg-bundle.tar.xz
#   /opt/root/e2e.sh [POINTS]
set -u
R=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$R/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GA_LOG_NO_TS=1
PG="$R/usr/lib/postgresql/15/bin"
OUTD=${OUT:-/tmp/gpuagg-e2e}
POINTS=${1:-20000000}
W=/tmp/gpuagg-e2e-work; rm -rf "$W"; mkdir -p "$W" "$OUTD"; chmod 755 "$W"
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "PASS $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# PostgreSQL as an unprivileged user (initdb refuses root).
PGU=nobody
mkdir -p "$W/pg" && chown "$PGU" "$W/pg"
runuser -u $PGU -- "$PG/initdb" -D "$W/pg/data" -U postgres --auth=trust -E UTF8 --no-sync >"$OUTD/initdb.log" 2>&1 || { cat "$OUTD/initdb.log"; exit 1; }
runuser -u $PGU -- "$PG/pg_ctl" -D "$W/pg/data" -l "$W/pg/postgres.log" -w \
    -o "-c listen_addresses='' -c unix_socket_directories='$W/pg' -c shared_buffers=2GB -c max_wal_size=8GB -c max_connections=50" start >/dev/null || { tail "$W/pg/postgres.log"; exit 1; }
psql() { "$PG/psql" -h "$W/pg" -U postgres -v ON_ERROR_STOP=1 -Atq "$@"; }

run_daemon() {   # $1 = label (cpu|gpu), $2 = gpu.devices value
    local label=$1 dev=$2 dir="$W/$1"
    mkdir -p "$dir"
    "$PG/createdb" -h "$W/pg" -U postgres "agg_$label"
    cat > "$dir/c.yaml" <<YAML
control: { socket: $dir/control.sock }
listen: { unix: $dir/ingest.sock, tcp: "127.0.0.1:0", udp: "" }
storage: { conninfo: "host=$W/pg user=postgres dbname=agg_$label", flush_rows: 500000 }
journal: { dir: $dir/journal, max_bytes: 16GiB, segment_bytes: 256MiB }
gpu: { devices: $dev }
limits: { memory_budget_bytes: 8GiB, max_frame_bytes: 64MiB, conn_buffer_bytes: 128MiB, queue_batches: 256 }
archive_policies:
  - name: e2e
    back_window: 0
    definition: [ { granularity: 60, timespan: "30 days" }, { granularity: 3600, timespan: "365 days" } ]
    aggregation_methods: [mean, sum, count, min, max, first, last, std, median, 90pct, "rate:mean"]
default_archive_policy: e2e
YAML
    "$R/bin/gpuaggd" --config "$dir/c.yaml" --foreground 2>"$OUTD/gpuaggd-$label.log" &
    echo $! > "$dir/pid"
    local ctl="$R/bin/gpuaggctl --socket $dir/control.sock"
    for i in $(seq 1 300); do
        st=$($ctl --json status 2>/dev/null) && echo "$st" | grep -q '"state": "running"' &&
            echo "$st" | python3 -c 'import json,sys; sys.exit(json.load(sys.stdin)["engine"]["state"]!="running")' 2>/dev/null && break
        sleep 0.1
    done
    $ctl status > "$OUTD/status-$label-before.txt" 2>&1
    local t0=$(date +%s.%N)
    # One connection: the points each metric gets do not depend on timing,
    # so both runs store the same workload.
    "$R/bin/gpuagg-load" --connect "$dir/ingest.sock" --connections 1 --metrics 10000 \
        --points "$POINTS" --batch 100000 --points-per-metric 50 --step 5s --inflight 8 \
        --start 1700000000000000000 --seed 42 --json > "$OUTD/load-$label.json" 2>"$OUTD/load-$label.err"
    local lrc=$?
    $ctl flush --timeout 600 > "$OUTD/flush-$label.txt" 2>&1
    local frc=$?
    local t1=$(date +%s.%N)
    # RPC jobs through the same daemon: on the GPU run they get the GPU.
    local J="$W/jobs-$label"; mkdir -p "$J"
    job() { local name=$1; shift; local t0=$(date +%s.%N)
            $ctl --timeout 600 job submit "$@" --wait --json > "$J/$name.json" 2> "$J/$name.err"
            echo "$name $? $(python3 -c "print(f'{$(date +%s.%N)-$t0:.3f}')")" >> "$J/summary"; }
    job kmeans kmeans --param mb=256 --param coords=2 --param k=16 --param loops=10 --param threshold=0
    job dot dot --param n=67108864 --param dtype=f64 --param seed=3
    job blackscholes blackscholes --param n=4194304 --param return=1000
    job gf820 gf820 --param g=10 --param r=65 --param x=35 --param steps=10
    job apd apd-fit --param n=2499 --param seed=5
    cp "$J/summary" "$OUTD/jobs-$label.txt"
    $ctl --json status > "$OUTD/status-$label.json" 2>&1
    $ctl --json stats > "$OUTD/stats-$label.json" 2>&1
    kill -TERM "$(cat "$dir/pid")"; wait "$(cat "$dir/pid")"; local drc=$?
    [ $lrc -eq 0 ] && ok "$label: every batch acknowledged" || bad "$label: gpuagg-load exit $lrc ($(tail -n 3 "$OUTD/load-$label.err"))"
    [ $frc -eq 0 ] && ok "$label: flush committed" || bad "$label: flush: $(cat "$OUTD/flush-$label.txt")"
    [ $drc -eq 0 ] && ok "$label: drained, exit 0" || bad "$label: gpuaggd exit $drc"
    echo "$label $(python3 -c "print(f'{$t1-$t0:.2f}')")" >> "$W/times"
}

run_daemon cpu none
run_daemon gpu all

# The GPU daemon really ran on the GPU.
if python3 - "$OUTD/status-gpu.json" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
gpus = [b for b in st["backends"] if b["backend"] == "cuda"]
print("backends:", [(b["device"], b["state"], b["metrics"]) for b in st["backends"]])
sys.exit(0 if gpus and all(b["state"] == "active" and b["metrics"] > 0 for b in gpus) else 1)
PY
then ok "gpu: every CUDA backend active with metrics"; else bad "gpu: CUDA backends not serving"; fi

# Same rows, same values (the backends are bit-identical by design; allow 1e-12 relative).
q="SELECT m.name, a.method, a.granularity, a.ts, a.value FROM aggregates a JOIN metrics m ON m.id = a.metric"
psql -d agg_cpu -c "COPY ($q) TO STDOUT" | sort > "$W/cpu.rows"
psql -d agg_gpu -c "COPY ($q) TO STDOUT" | sort > "$W/gpu.rows"
ncpu=$(wc -l < "$W/cpu.rows"); ngpu=$(wc -l < "$W/gpu.rows")
if [ "$ncpu" -gt 0 ] && python3 - "$W/cpu.rows" "$W/gpu.rows" <<'PY'
import math, sys
a = open(sys.argv[1]).read().split("\n"); b = open(sys.argv[2]).read().split("\n")
if len(a) != len(b): print("row counts differ", len(a), len(b)); sys.exit(1)
bad = 0
for x, y in zip(a, b):
    if x == y: continue
    xs, ys = x.split("\t"), y.split("\t")
    if xs[:4] != ys[:4]: bad += 1; continue
    u, v = float(xs[4]), float(ys[4])
    if not (abs(u - v) <= 1e-12 * max(abs(u), abs(v))): bad += 1
print("rows", len(a) - 1, "differing", bad); sys.exit(1 if bad else 0)
PY
then ok "cpu and gpu stored the same $ncpu aggregate rows"; else bad "aggregates differ: cpu $ncpu rows, gpu $ngpu rows"; fi

# The jobs: the GPU answers equal the CPU references (tolerances of docs/JOBS.md).
if python3 - "$W/jobs-cpu" "$W/jobs-gpu" <<'PY'
import json, sys
c, g = sys.argv[1], sys.argv[2]
def load(d, n):
    try:
        return json.load(open(f"{d}/{n}.json"))
    except Exception:
        print(n, "no result:", open(f"{d}/{n}.err").read().strip()[:300])
        return None
ok = True
def check(name, cond, detail=""):
    global ok
    print("PASS" if cond else "FAIL", "job", name, detail)
    ok = ok and bool(cond)
for n in ("kmeans", "dot", "blackscholes", "gf820", "apd"):
    a, b = load(c, n), load(g, n)
    if a is None or b is None:
        check(n, False, "missing")
        continue
    dev = b.get("device")
    if n == "kmeans":
        check(n, a["centres"] == b["centres"] and a["loops"] == b["loops"],
              f"device={dev} centres bit-equal, loops={b['loops']}")
    elif n == "dot":
        rel = abs(a["dot"] - b["dot"]) / max(abs(a["dot"]), 1e-300)
        check(n, rel <= 1e-12, f"device={dev} rel={rel:.2e}")
    elif n == "blackscholes":
        x, y = a["call"] + a["put"], b["call"] + b["put"]
        l1 = sum(abs(u - v) for u, v in zip(x, y)) / sum(abs(u) for u in x)
        check(n, l1 <= 1e-6 and len(a["call"]) == 1000, f"device={dev} L1 relative {l1:.2e} (docs/JOBS.md: <= 1e-6)")
    elif n == "gf820":
        check(n, abs(b["v0"][0] - 0.61861431190676) <= 1e-12 and abs(a["v0"][0] - b["v0"][0]) <= 1e-12,
              f"device={dev} V0={b['v0'][0]!r}")
    elif n == "apd":
        d = max(abs(x - y) for x, y in zip(a["loglik"], b["loglik"]))
        same = a["lambda"] == b["lambda"] and a["theta"] == b["theta"]
        check(n, d <= 1e-9 and same, f"device={dev} windows={len(b['loglik'])} max|dl|={d:.1e} same fit={same}")
sys.exit(0 if ok else 1)
PY
then ok "jobs: GPU results equal the CPU references"; else bad "jobs: see above"; fi
echo; echo "| job | cpu s (exit) | gpu s (exit) |"; echo "|---|---|---|"
join <(sort "$W/jobs-cpu/summary") <(sort "$W/jobs-gpu/summary") | awk '{printf "| %s | %s (%s) | %s (%s) |\n", $1, $3, $2, $5, $4}'

python3 - "$OUTD" "$W/times" "$POINTS" <<'PY'
import json, sys
d, times, pts = sys.argv[1], dict(l.split() for l in open(sys.argv[2])), int(sys.argv[3])
print("\n| backend | ingest acked points/s | ack p50 ms | ack p99 ms | load -> committed s | end-to-end points/s |")
print("|---|---|---|---|---|---|")
for b in ("cpu", "gpu"):
    try: l = json.load(open(f"{d}/load-{b}.json"))
    except Exception: l = {}
    acked = f'{l["acked_per_s"]:,.0f}' if "acked_per_s" in l else "?"
    lat = l.get("latency_ms", {})
    t = float(times.get(b, "nan"))
    print(f"| {b} | {acked} | {lat.get('p50','?')} | {lat.get('p99','?')} | {t:.2f} | {pts/t:,.0f} |")
PY
echo "e2e: $pass passed, $fail failed"
runuser -u $PGU -- "$PG/pg_ctl" -D "$W/pg/data" -m fast stop >/dev/null
cp "$W/pg/postgres.log" "$OUTD/" 2>/dev/null
[ $fail -eq 0 ]
