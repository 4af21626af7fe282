#!/bin/bash
# Ingest capacity, ack-to-visible latency and the resample job on a GPU
# host, in one run (about 2 to 3 minutes on 16 cores with the defaults),
# from the bundle (tools/gpu-host/bundle.sh):
#   1. ingest capacity: gpuagg-load, columnar, batches of 100,000, max rate,
#      INGEST_POINTS points with 4, 8 and 16 connections (and 16 connections
#      spread over 4 and 16 processes: INGEST_SPLIT), against gpuaggd on the
#      GPU (journal on the disk under BENCH_WORK, PostgreSQL up): acked
#      points/s, ack p50/p99, the daemon's CPU (utime+stime of
#      /proc/PID/stat over the run) and the load generator's; ceilings of
#      the same run: the journal disk's sequential write with fdatasync
#      (dd) and a Unix-socket copy (visprobe.py sockcopy);
#   2. ack-to-visible latency at a steady LAT_RATE points/s, on a fresh GPU
#      daemon: visprobe.py probe sends a one-point batch every
#      PROBE_INTERVAL s and polls PostgreSQL until the point's bucket is
#      there (storage.flush_interval_ms at its default, 1000 ms);
#   3. the resample job on one submitted CSV of RS_POINTS points (written by
#      gen_points_csv into a jobs.input_dirs directory), once on a GPU daemon
#      and once on a CPU daemon (gpu.devices: none): wall time, points/s and
#      where the time goes (CSV reading vs aggregation, from the job's
#      progress: visprobe.py jobwatch).
# Every step has a timeout; a failed step is reported and the run goes on.
# Prints Markdown tables at the end (also $OUT/report.md); logs and JSON go
# to $OUT (or /tmp/gpuagg-bench).  Run as root (PostgreSQL runs as nobody).
#   (from the repo root there) tar -C /opt -xJf build-bundle/gpuagg-bundle.tar.xz
#   OUT=$OUT /opt/root/bench_host.sh
# Parameters (environment, defaults in parentheses):
#   INGEST_POINTS (20000000)   INGEST_CONNS ("4 8 16")
#   INGEST_SPLIT ("4 16": 16 connections from that many processes; "" none)
#   LAT_RATE (1000000)   LAT_SECONDS (40: a warm-up commit, then the probes)
#   PROBES (120)   PROBE_INTERVAL (0.2)
#   RS_POINTS (100000000)   RS_METRICS (1000)
#   RS_BATCH (10000000: a "#batch" line every that many points)
#   DD_MB (1024)   SOCK_MIB (2048)   GPU_DEVICES (all)
#   BENCH_WORK (/tmp/gpuagg-bench-work: journal, PostgreSQL, the CSV)
#   BUDGET_S (540: later steps are skipped once past it)   KEEP_WORK (0)
set -u
R=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$R/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GA_LOG_NO_TS=1
export PYTHONPATH="$R/py${PYTHONPATH:+:$PYTHONPATH}" LC_ALL=C
PG="$R/usr/lib/postgresql/15/bin"
OUTD=${OUT:-/tmp/gpuagg-bench}
W=${BENCH_WORK:-/tmp/gpuagg-bench-work}
INGEST_POINTS=${INGEST_POINTS:-20000000}
INGEST_CONNS=${INGEST_CONNS:-4 8 16}
INGEST_SPLIT=${INGEST_SPLIT-4 16}
LAT_RATE=${LAT_RATE:-1000000}
LAT_SECONDS=${LAT_SECONDS:-40}
PROBES=${PROBES:-120}
PROBE_INTERVAL=${PROBE_INTERVAL:-0.2}
RS_POINTS=${RS_POINTS:-100000000}
RS_METRICS=${RS_METRICS:-1000}
RS_BATCH=${RS_BATCH:-10000000}
DD_MB=${DD_MB:-1024}
SOCK_MIB=${SOCK_MIB:-2048}
GPU_DEVICES=${GPU_DEVICES:-all}
BUDGET_S=${BUDGET_S:-540}
KEEP_WORK=${KEEP_WORK:-0}
LOAD="$R/bin/gpuagg-load"
VP="$R/visprobe.py"
T_START=$(date +%s.%N)
rm -rf "$W"; mkdir -p "$W/in" "$OUTD"; chmod 755 "$W"
W=$(cd "$W" && pwd)
S="$OUTD/steps.txt"; : > "$S"      # one line per step: name rc seconds
PIDS=()                            # daemons and loads started here, killed on exit

log()  { echo "[$(elapsed)s] $*" | tee -a "$OUTD/bench.log"; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$T_START" "$(date +%s.%N)"; }
now() { date +%s.%N; }
secs() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$1" "$2"; }
step() { echo "$1 $2 $3" >> "$S"; [ "$2" = 0 ] && log "step $1: ok ($3 s)" || log "step $1: FAILED rc=$2 ($3 s)"; }
over_budget() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)" "$(elapsed)" "$BUDGET_S"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
CLK=$(getconf CLK_TCK)

cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    sleep 1
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    [ -f "$W/pg/data/postmaster.pid" ] && runuser -u nobody -- "$PG/pg_ctl" -D "$W/pg/data" -m immediate stop >/dev/null 2>&1
    cp "$W/pg/postgres.log" "$OUTD/" 2>/dev/null
    [ "$KEEP_WORK" = 1 ] || rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Run "$@" and write its user+sys CPU seconds (itself and its children) to $TF.
# (bash's `times`: line 1 the shell's own, line 2 its children's "XmY.YYYs XmY.YYYs")
timed() { TF=$1 bash -c '"${@}"; rc=$?; times > "$TF"; exit $rc' _ "${@:2}"; }

# ---- the machine ---------------------------------------------------------------
{
    echo "date: $(date -u +%FT%TZ)"; uname -a; nproc
    grep -m1 'model name' /proc/cpuinfo; free -g | head -2
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    df -hT "$W" | tail -n 1
    python3 -c 'import sys, msgpack; print("python", sys.version.split()[0], "msgpack", msgpack.version, msgpack.Unpacker.__module__)'
} > "$OUTD/machine.txt" 2>&1
log "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); work dir: $(df -T "$W" | awk 'NR==2 {print $2, $1}')"

# ---- PostgreSQL as nobody ------------------------------------------------------
PGU=nobody
mkdir -p "$W/pg" && chown "$PGU" "$W/pg"
t0=$(now)
timeout 60 runuser -u $PGU -- "$PG/initdb" -D "$W/pg/data" -U postgres --auth=trust -E UTF8 --no-sync >"$OUTD/initdb.log" 2>&1 &&
timeout 60 runuser -u $PGU -- "$PG/pg_ctl" -D "$W/pg/data" -l "$W/pg/postgres.log" -w -t 50 \
    -o "-c listen_addresses='' -c unix_socket_directories='$W/pg' -c shared_buffers=2GB -c max_wal_size=8GB -c max_connections=50" \
    start >/dev/null
rc=$?; step postgres $rc "$(secs "$t0" "$(now)")"
[ $rc -eq 0 ] || { tail -n 20 "$OUTD/initdb.log" "$W/pg/postgres.log"; log "no PostgreSQL: storage steps will fail"; }

# ---- ceilings: journal disk, Unix socket ---------------------------------------
dd_rate() {   # label dd-args...: MB/s from dd's own summary line
    local label=$1; shift
    timeout 120 dd if=/dev/zero of="$W/dd.bin" bs=1M "$@" 2>"$OUTD/dd-$label.txt"
    local rc=$?
    rm -f "$W/dd.bin"
    awk '/copied/ {for (i = 1; i <= NF; i++) if ($i == "copied,") s = $(i+1); printf "%.0f\n", $1 / s / 1e6}' "$OUTD/dd-$label.txt" > "$W/dd-$label.rate"
    return $rc
}
t0=$(now); dd_rate fdatasync count="$DD_MB" conv=fdatasync; step dd-fdatasync $? "$(secs "$t0" "$(now)")"
t0=$(now); dd_rate dsync count=$((DD_MB / 4)) oflag=dsync; step dd-dsync $? "$(secs "$t0" "$(now)")"
t0=$(now); timeout 60 python3 "$VP" sockcopy --mib "$SOCK_MIB" > "$OUTD/sockcopy.json" 2>&1; step sockcopy $? "$(secs "$t0" "$(now)")"

# ---- daemons -------------------------------------------------------------------
start_daemon() {   # label devices -> $W/label/{c.yaml,pid}; returns 0 when running
    local label=$1 dev=$2 dir="$W/$1"
    mkdir -p "$dir"
    timeout 30 "$PG/createdb" -h "$W/pg" -U postgres "agg_$label" 2>>"$OUTD/bench.log"
    cat > "$dir/c.yaml" <<YAML
log: { level: info }
control: { socket: $dir/control.sock }
listen: { unix: $dir/ingest.sock, tcp: "", udp: "" }
storage: { conninfo: "host=$W/pg user=postgres dbname=agg_$label" }
journal: { dir: $dir/journal, max_bytes: 16GiB, segment_bytes: 256MiB }
gpu: { devices: $dev }
limits: { memory_budget_bytes: 8GiB, max_frame_bytes: 64MiB, conn_buffer_bytes: 128MiB, queue_batches: 256 }
jobs: { input_dirs: [ "$W/in" ] }
archive_policies:
  - name: probe
    back_window: 0
    definition: [ { granularity: 1, timespan: "1 day" } ]
    aggregation_methods: [count, last]
archive_policy_rules:
  - metric_pattern: "probe.*"
    archive_policy_name: probe
default_archive_policy: ceilometer-low
YAML
    "$R/bin/gpuaggd" --config "$dir/c.yaml" --foreground 2>"$OUTD/gpuaggd-$label.log" &
    local pid=$!
    echo $pid > "$dir/pid"; PIDS+=("$pid")
    local ctl="$R/bin/gpuaggctl --socket $dir/control.sock"
    for _ in $(seq 1 600); do
        kill -0 "$pid" 2>/dev/null || return 1
        $ctl --json status 2>/dev/null | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(not (s["state"]=="running" and s["engine"]["state"]=="running" and s["storage"]["state"]=="connected"))' 2>/dev/null && break
        sleep 0.1
    done
    $ctl --json status > "$OUTD/status-$label-start.json" 2>&1
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(s["state"]!="running")' "$OUTD/status-$label-start.json" 2>/dev/null
}
stop_daemon() {   # label
    local pid; pid=$(cat "$W/$1/pid" 2>/dev/null) || return 1
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { log "gpuaggd $1 did not drain in 60 s: killed"; kill -KILL "$pid"; }
    wait "$pid" 2>/dev/null
}
ctl() { "$R/bin/gpuaggctl" --socket "$W/$1/control.sock" "${@:2}"; }

# ---- 1. ingest capacity --------------------------------------------------------
ingest_run() {   # daemon conns procs
    local d=$1 conns=$2 procs=$3 name="c$2p$3"
    local pid; pid=$(cat "$W/$d/pid")
    local per=$((INGEST_POINTS / procs)) m=$((16000 / procs)) pids=() rc=0
    ctl "$d" --json stats > "$W/stats-$name-0.json" 2>/dev/null
    local c0; c0=$(cpu_ticks "$pid")
    local t0; t0=$(now)
    for p in $(seq 1 "$procs"); do
        timed "$W/cpu-$name-$p" timeout 120 "$LOAD" -c "$W/$d/ingest.sock" -f columnar -n $((conns / procs)) -b 100000 \
            -m "$m" -k 100 -i 8 -p "$per" --prefix "i$name.$p." --json \
            > "$OUTD/ingest-$name-$p.json" 2> "$OUTD/ingest-$name-$p.err" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || rc=$?; done
    local t1; t1=$(now)
    local c1; c1=$(cpu_ticks "$pid")
    ctl "$d" --json stats > "$W/stats-$name-1.json" 2>/dev/null
    local f0; f0=$(now)
    ctl "$d" --timeout 120 flush > "$OUTD/flush-$name.txt" 2>&1 || { [ $rc -eq 0 ] && rc=9; }
    local f1; f1=$(now)
    python3 - "$OUTD" "$W" "$name" "$procs" "$conns" "$(secs "$t0" "$t1")" "$c0" "$c1" "$CLK" "$(secs "$f0" "$f1")" "$rc" <<'PY' >> "$OUTD/ingest.jsonl"
import json, sys
o, w, name, procs, conns, wall, c0, c1, clk, flush, rc = sys.argv[1:]
procs, wall = int(procs), float(wall)
loads = []
for p in range(1, procs + 1):
    try: loads.append(json.load(open(f"{o}/ingest-{name}-{p}.json")))
    except Exception: loads.append({})
cpu = []
for p in range(1, procs + 1):
    try:
        u, s = open(f"{w}/cpu-{name}-{p}").read().splitlines()[1].split()
        f = lambda x: int(x.split("m")[0]) * 60 + float(x.split("m")[1].rstrip("s"))
        cpu.append(f(u) + f(s))
    except Exception: cpu.append(float("nan"))
try:
    s0, s1 = json.load(open(f"{w}/stats-{name}-0.json")), json.load(open(f"{w}/stats-{name}-1.json"))
    d = {k: s1[k] - s0[k] for k in s1 if isinstance(s1[k], int) and isinstance(s0.get(k), int)}
except Exception: d = {}
acked = sum(l.get("points_acked", 0) for l in loads)
ack_s = max([l.get("ack_seconds", 0) for l in loads] or [0])
r = {"name": name, "conns": int(conns), "procs": procs, "rc": int(rc), "points_acked": acked,
     "points_rejected": sum(l.get("points_rejected", 0) for l in loads),
     "acked_per_s": acked / ack_s if ack_s else None, "ack_seconds": ack_s, "wall_s": wall,
     "p50_ms": max([l.get("latency_ms", {}).get("p50", 0) for l in loads] or [None]),
     "p99_ms": max([l.get("latency_ms", {}).get("p99", 0) for l in loads] or [None]),
     "max_ms": max([l.get("latency_ms", {}).get("max", 0) for l in loads] or [None]),
     "daemon_cores": (float(c1) - float(c0)) / float(clk) / wall if wall else None,
     "load_cores": sum(cpu) / wall if wall else None,
     "flush_s": float(flush), "stats_delta": d}
pts = d.get("ingest.points_accepted") or 0
r["journal_bytes_per_point"] = d.get("journal.bytes_written", 0) / pts if pts else None
r["wire_bytes_per_point"] = d.get("ingest.bytes_in", 0) / pts if pts else None
r["journal_mb_per_s"] = d.get("journal.bytes_written", 0) / ack_s / 1e6 if ack_s else None
print(json.dumps(r))
PY
    return $rc
}

: > "$OUTD/ingest.jsonl"
t0=$(now); start_daemon gpu "$GPU_DEVICES"; rc=$?; step daemon-gpu $rc "$(secs "$t0" "$(now)")"
GPU_UP=$rc
if [ $GPU_UP -eq 0 ]; then
    for c in $INGEST_CONNS; do
        over_budget && { step "ingest-c$c" skipped 0; continue; }
        t0=$(now); ingest_run gpu "$c" 1; step "ingest-c${c}" $? "$(secs "$t0" "$(now)")"
    done
    # 16 connections from several gpuagg-load processes: one process is one
    # thread, and near 50 M points/s it can be the client that limits.
    for sp in $INGEST_SPLIT; do
        [ "$sp" -gt 1 ] && [ $((16 % sp)) -eq 0 ] || continue
        over_budget && { step "ingest-c16p$sp" skipped 0; continue; }
        t0=$(now); ingest_run gpu 16 "$sp"; step "ingest-c16p$sp" $? "$(secs "$t0" "$(now)")"
    done
fi

[ $GPU_UP -eq 0 ] && {
    ctl gpu --json status > "$OUTD/status-gpu-end.json" 2>&1
    ctl gpu --json stats > "$OUTD/stats-gpu-end.json" 2>&1
    t0=$(now); stop_daemon gpu; step drain-gpu $? "$(secs "$t0" "$(now)")"
}

# ---- 2. ack-to-visible latency at a steady rate ---------------------------------
# A fresh GPU daemon and database ("lat"): nothing left from the ingest runs
# (their 64,000 metrics' windows would go into its first window snapshot).
LAT_UP=1
if ! over_budget; then
    t0=$(now); start_daemon lat "$GPU_DEVICES"; LAT_UP=$?; step daemon-lat $LAT_UP "$(secs "$t0" "$(now)")"
fi
if [ $LAT_UP -eq 0 ] && ! over_budget; then
    t0=$(now)
    timeout $((LAT_SECONDS + 60)) "$LOAD" -c "$W/lat/ingest.sock" -f columnar -n 4 -b 10000 -m 10000 -k 100 -i 8 \
        -r "$LAT_RATE" -d "$LAT_SECONDS" --prefix lat. --json > "$OUTD/latency-load.json" 2> "$OUTD/latency-load.err" &
    lp=$!; PIDS+=("$lp")
    # Warm-up: the first commit also creates the load's 10,000 metrics in
    # PostgreSQL (seconds, not steady state); probes start after it.
    sleep 1
    tw=$(now); ctl lat --timeout 60 flush > "$OUTD/flush-latency-warmup.txt" 2>&1
    secs "$tw" "$(now)" > "$OUTD/latency-warmup-flush-s.txt"
    timeout $((LAT_SECONDS + 60)) python3 "$VP" probe --ingest "$W/lat/ingest.sock" --psql "$PG/psql" --pghost "$W/pg" \
        --db agg_lat --count "$PROBES" --interval "$PROBE_INTERVAL" --out "$OUTD/latency-probe.json" \
        > /dev/null 2> "$OUTD/latency-probe.err"
    prc=$?
    echo "$(secs "$t0" "$tw") $(secs "$t0" "$(now)")" > "$OUTD/latency-window.txt"   # probes' start and end, s into the load
    wait "$lp"; lrc=$?
    step latency-probe $prc "$(secs "$t0" "$(now)")"
    step latency-load $lrc "$(secs "$t0" "$(now)")"
    ctl lat --timeout 120 flush > "$OUTD/flush-latency.txt" 2>&1
fi

# ---- 3. the resample job, GPU daemon then CPU daemon ----------------------------
CSV="$W/in/points.csv"
RS_OK=1
if ! over_budget; then
    t0=$(now)
    timeout 180 "$R/bin/gen_points_csv" "$CSV" "$RS_POINTS" --metrics "$RS_METRICS" --batch "$RS_BATCH" \
        > "$OUTD/gen_points_csv.txt" 2>&1
    rc=$?; RS_OK=$rc; step gen-csv $rc "$(secs "$t0" "$(now)")"
    ls -l "$CSV" >> "$OUTD/gen_points_csv.txt" 2>&1
fi
resample() {   # daemon label
    local d=$1 l=$2 rc wrc
    python3 "$VP" jobwatch --socket "$W/$d/control.sock" --timeout 300 --out "$OUTD/jobwatch-$l.json" \
        > /dev/null 2> "$OUTD/jobwatch-$l.err" &
    local wp=$!
    sleep 0.3
    local t0; t0=$(now)
    timeout 300 "$R/bin/gpuaggctl" --socket "$W/$d/control.sock" --timeout 290 job submit resample \
        --param granularity=60 --param method=mean,sum,max --input "$CSV" --wait --json \
        > "$W/resample-$l.json" 2> "$OUTD/resample-$l.err"
    rc=$?
    local t1; t1=$(now)
    wait "$wp"; wrc=$?
    python3 - "$W/resample-$l.json" "$(secs "$t0" "$t1")" "$rc" "$l" "$RS_POINTS" <<'PY' > "$OUTD/resample-$l.json"
import hashlib, json, sys
path, wall, rc, d, n = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
try: r = json.load(open(path))
except Exception: r = {}
out = r.pop("output", "")
r.pop("rejected", None); r.pop("late", None)
r.update({"daemon": d, "rc": rc, "wall_s": wall, "requested_points": n,
          "output_bytes": len(out), "output_sha256": hashlib.sha256(out.encode()).hexdigest(),
          "output_head": out[:300]})
print(json.dumps(r))
PY
    return $rc
}
# On the latency run's GPU daemon (its load has stopped and been flushed).
if [ "$RS_OK" -eq 0 ] && [ $LAT_UP -eq 0 ] && ! over_budget; then
    t0=$(now); resample lat gpu; step resample-gpu $? "$(secs "$t0" "$(now)")"
fi
[ $LAT_UP -eq 0 ] && {
    ctl lat --json status > "$OUTD/status-lat-end.json" 2>&1
    t0=$(now); stop_daemon lat; step drain-lat $? "$(secs "$t0" "$(now)")"
}
if [ "$RS_OK" -eq 0 ] && ! over_budget; then
    t0=$(now); start_daemon cpu none; rc=$?; step daemon-cpu $rc "$(secs "$t0" "$(now)")"
    if [ $rc -eq 0 ]; then
        t0=$(now); resample cpu cpu; step resample-cpu $? "$(secs "$t0" "$(now)")"
        t0=$(now); stop_daemon cpu; step drain-cpu $? "$(secs "$t0" "$(now)")"
    fi
fi

# ---- the report ----------------------------------------------------------------
python3 - "$OUTD" "$W" "$RS_POINTS" "$RS_BATCH" "$LAT_RATE" "$(elapsed)" "$LAT_SECONDS" <<'PY' | tee "$OUTD/report.md"
import json, math, os, sys
o, w, rs_points, rs_batch, lat_rate, total, lat_s = sys.argv[1:]
rs_points, rs_batch = int(rs_points), int(rs_batch)
def load(p):
    try: return json.load(open(p))
    except Exception: return None
def f(x, fmt="{:,.1f}", none="?"):
    return none if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)
def M(x): return f(x / 1e6 if x is not None else None, "{:.2f} M")
def rate(path):
    try: return float(open(path).read().strip())
    except Exception: return None
machine = open(f"{o}/machine.txt").read().splitlines() if os.path.exists(f"{o}/machine.txt") else []
cores = machine[2] if len(machine) > 2 else "?"
model = machine[3].split(":", 1)[-1].strip() if len(machine) > 3 else "?"
gpu = next((l for l in machine if "," in l and "MiB" in l), "no GPU")
print(f"\n## gpuagg bench_host.sh: {cores} cores ({model}), {gpu}")
st = load(f"{o}/status-gpu-end.json") or load(f"{o}/status-gpu-start.json") or {}
print("\ningest daemon's backends at the end:", ", ".join(f'{b.get("device")} {b.get("state")} ({b.get("metrics", "?")} metrics)' for b in st.get("backends", [])) or "?",
      "| work dir (journal, PostgreSQL, CSV):", " ".join(next((l for l in machine if "/" in l and "%" in l), "?").split()))
dd1, dd2 = rate(f"{w}/dd-fdatasync.rate"), rate(f"{w}/dd-dsync.rate")
sc = load(f"{o}/sockcopy.json") or {}
rows = [json.loads(l) for l in open(f"{o}/ingest.jsonl")] if os.path.exists(f"{o}/ingest.jsonl") else []
jbpp = next((r["journal_bytes_per_point"] for r in rows if r.get("journal_bytes_per_point")), None)
print("\n### 1. Ingest capacity (columnar, batch 100,000, max rate, journal + PostgreSQL on)\n")
print("| connections (processes) | points acked | acked points/s | ack p50 / p99 / max ms | daemon CPU cores | load-gen CPU cores | journal MB/s | wire / journal B/pt | flush after s | exit |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f'| {r["conns"]} ({r["procs"]}) | {r["points_acked"]:,} | **{M(r["acked_per_s"])}** | '
          f'{f(r["p50_ms"])} / {f(r["p99_ms"])} / {f(r["max_ms"])} | {f(r["daemon_cores"], "{:.2f}")} | '
          f'{f(r["load_cores"], "{:.2f}")} | {f(r["journal_mb_per_s"], "{:,.0f}")} | '
          f'{f(r["wire_bytes_per_point"], "{:.1f}")} / {f(r["journal_bytes_per_point"], "{:.1f}")} | {f(r["flush_s"], "{:.2f}")} | {r["rc"]} |')
best = max((r["acked_per_s"] or 0 for r in rows), default=0)
print(f'\nBest: {M(best)} points/s; goal ≥ 50 M points/s on the 16-core host: {"met" if best >= 50e6 else "NOT met"}.')
print("\n| ceiling (same run) | MB/s | as points/s at the journal's bytes/point |")
print("|---|---|---|")
for label, v in (("journal disk, dd 1 MiB writes + one fdatasync", dd1), ("journal disk, dd 4 MiB writes, O_DSYNC each", dd2)):
    print(f'| {label} | {f(v, "{:,.0f}")} | {M(v * 1e6 / jbpp) if v and jbpp else "?"} |')
print(f'| Unix socket copy, 1 MiB writes, two processes | {f(sc.get("mb_per_s"), "{:,.0f}")} | {M(sc["mb_per_s"] * 1e6 / rows[0]["wire_bytes_per_point"]) if sc.get("mb_per_s") and rows and rows[0].get("wire_bytes_per_point") else "?"} (wire bytes) |')

print(f"\n### 2. Ack-to-visible latency at {int(lat_rate):,} points/s (storage.flush_interval_ms 1000, the default)\n")
p = load(f"{o}/latency-probe.json") or {}
ll = load(f"{o}/latency-load.json") or {}
v = p.get("visible_minus_ack_ms", {}); a = p.get("send_to_ack_ms", {})
print("| probes sent / visible | visible − ack p50 / p90 / p99 / max ms | probe send → ack p50 / p99 ms | background load acked points/s (its ack p50 / p99 ms) | poll every / query ms |")
print("|---|---|---|---|---|")
print(f'| {p.get("probes_sent", "?")} / {p.get("visible", "?")} | **{f(v.get("p50"))} / {f(v.get("p90"))} / {f(v.get("p99"))} / {f(v.get("max"))}** | '
      f'{f(a.get("p50"), "{:.2f}")} / {f(a.get("p99"), "{:.2f}")} | {M(ll.get("acked_per_s"))} ({f(ll.get("latency_ms", {}).get("p50"), "{:.2f}")} / {f(ll.get("latency_ms", {}).get("p99"), "{:.2f}")}) | '
      f'{f((p.get("poll_s") or 0) * 1e3, "{:.0f}")} / {f(p.get("poll_query_ms_mean"), "{:.1f}")} |')
wf = open(f"{o}/latency-warmup-flush-s.txt").read().strip() if os.path.exists(f"{o}/latency-warmup-flush-s.txt") else "?"
print(f'\nNot counted: the warm-up before the probes, a `gpuaggctl flush` 1 s into the load (it commits the 10,000 new '
      f'metrics): {wf} s; the probe metric\'s own first point became visible {f(p.get("warmup_visible_s"), "{:.2f}")} s after its ack.')
try:
    a0, a1 = open(f"{o}/latency-window.txt").read().split()
    print(f"Probes (with the warm-up) ran from {a0} s to {a1} s into the {lat_s} s load.")
except Exception: pass
print("\nThe writer commits changed buckets when storage.flush_interval_ms (1000 ms) has passed since its oldest pending unit "
      "(or at flush_rows), so that default bounds visible − ack: about the interval plus one commit (a sawtooth from ~0.2 s "
      "to ~1 s+); every 10 s the engine also writes the window snapshots of the metrics changed since the last "
      "(WINDOW_SNAPSHOT_MS), which lengthens that commit. A probe's visible time is the start of the first poll that saw it "
      "(late by at most one poll). Per-probe values: latency-probe.json \"probes\" [k, ack s, visible − ack ms]. "
      "A fresh daemon and database (\"lat\") serve this run.")
if p.get("errors"): print("\nprobe errors:", p["errors"][:5])

print(f"\n### 3. resample job, one submitted CSV of {rs_points:,} points (granularity 60, mean,sum,max; \"#batch\" every {rs_batch:,} points)\n")
gen = open(f"{o}/gen_points_csv.txt").read().split("\n")[0] if os.path.exists(f"{o}/gen_points_csv.txt") else "?"
print(f"CSV written by gen_points_csv: {gen}\n")
print("| daemon | job backend | points | wall s (submit → result) | points/s | job seconds | CSV read ≈ s | aggregation ≈ s | rows out + result ≈ s | rows | exit |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
nb = max(1, -(-rs_points // rs_batch)) if rs_batch else 1
res = {}
for d in ("gpu", "cpu"):
    r = load(f"{o}/resample-{d}.json") or {}
    jw = load(f"{o}/jobwatch-{d}.json") or {}
    res[d] = r
    run, fp, p90 = jw.get("run_s"), jw.get("first_progress_s"), jw.get("progress90_s")
    parse = agg = rest = None
    if run and fp is not None and p90 is not None:
        per = (p90 - fp) / (nb - 1) if nb > 1 else None
        parse = fp - per if per is not None else None
        agg = (p90 - parse) if parse is not None else None
        rest = max(0.0, run - p90)          # the 20 ms polls can put p90 past the end
    pts = r.get("points")
    print(f'| {d} | {r.get("backend", "?")} | {f(pts, "{:,}")} | {f(r.get("wall_s"), "{:.2f}")} | **{M(pts / r["wall_s"]) if pts and r.get("wall_s") else "?"}** | '
          f'{f(r.get("seconds"), "{:.2f}")} | {f(parse, "{:.2f}")} | {f(agg, "{:.2f}")} | {f(rest, "{:.2f}")} | {f(r.get("rows"), "{:,}")} | {r.get("rc", "?")} |')
g, c = res.get("gpu", {}), res.get("cpu", {})
if g.get("output_sha256") and c.get("output_sha256"):
    print(f'\nGPU and CPU outputs: {"identical" if g["output_sha256"] == c["output_sha256"] else "DIFFERENT"} '
          f'({g.get("output_bytes", 0):,} bytes, sha256 {g["output_sha256"][:16]}…).')
print("\nSplit from the job's progress (visprobe.py jobwatch, 20 ms polls): the job reports progress only after each engine feed, "
      "so \"CSV read\" = time to the first progress − one feed's share (includes opening the CUDA backend on the GPU), "
      "\"aggregation\" = the feeds, the rest = sorting/printing the rows and packing the result.")

steps = [l.split() for l in open(f"{o}/steps.txt")] if os.path.exists(f"{o}/steps.txt") else []
bad = [s for s in steps if s[1] != "0"]
print(f"\nsteps: {len(steps)} run, {len(bad)} failed or skipped{': ' + ', '.join(s[0] + ' (rc ' + s[1] + ')' for s in bad) if bad else ''}; total {total} s")
PY
log "done in $(elapsed) s; logs in $OUTD"
# Exit 1 when a step failed or was skipped (the tables above say which).
! awk '$2 != "0" {bad = 1} END {exit !bad}' "$S"
