#!/bin/sh
# `make run`: a private PostgreSQL under ./var, gpuaggd on the default config
# adjusted to ./var (GPU backend when a usable GPU is present, else CPU),
# status through gpuaggctl, then a clean stop of both.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
var="$root/var"
bin="$root/build/bin"
mkdir -p "$var/run" "$var/lib/journal" "$var/log"

# Unix socket paths are limited to 107 bytes.
run="$var/run"
[ ${#run} -gt 90 ] && run=$(mktemp -d /tmp/gpuagg-run.XXXXXX)

echo "== PostgreSQL (private, $var/pg)"
conninfo=$(tools/pg-private.sh start "$var/pg")
echo "   conninfo: $conninfo"

cfg="$var/gpuaggd.yaml"
sed -e "s|/run/gpuagg|$run|g" \
    -e "s|/var/lib/gpuagg|$var/lib|g" \
    -e "s|conninfo: .*|conninfo: \"$conninfo\"|" \
    -e "s|\"127.0.0.1:4951\"|\"127.0.0.1:0\"|" \
    -e "s|\"127.0.0.1:4952\"|\"127.0.0.1:0\"|" \
    -e "s|^  http: \"\"|  http: \"127.0.0.1:0\"|" \
    -e "s|^default_archive_policy: .*|default_archive_policy: low|" \
    etc/gpuaggd.yaml > "$cfg"
"$bin/gpuaggd" --check-config "$cfg"

ctl="$bin/gpuaggctl --socket $run/control.sock"
stop_all() {
    $ctl shutdown >/dev/null 2>&1 || true
    i=0
    while [ -S "$run/control.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    tools/pg-private.sh stop "$var/pg"
}
trap stop_all EXIT INT TERM

echo "== gpuaggd (log: $var/log/gpuaggd.log)"
"$bin/gpuaggd" --config "$cfg" 2>>"$var/log/gpuaggd.log" || {
    echo "gpuaggd failed to start:"; tail -n 20 "$var/log/gpuaggd.log"; exit 1; }

# Wait for the engine to have loaded its state from PostgreSQL (it retries
# in the background; ingest acknowledges into the journal meanwhile).
engine_state() {
    $ctl --json status | python3 -c 'import json, sys; print(json.load(sys.stdin)["engine"]["state"])'
}
i=0
until [ "$(engine_state)" = running ] || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done

echo "== gpuaggctl status"
$ctl status

# The demo workload: 200 metrics, one point every 10 s each, the last
# 3 hours, pushed through the ingest socket in the columnar form.
echo "== demo workload: gpuagg-load, 216,000 points over 200 metrics, 10 s apart"
"$bin/gpuagg-load" --connect "$run/ingest.sock" --connections 2 --metrics 200 \
    --points 216000 --batch 5000 --points-per-metric 25 --step 10s \
    --start "$(( ($(date +%s) - 3 * 3600) * 1000000000 ))" --prefix demo.vm --seed 7
echo "== gpuaggctl flush"
$ctl flush
echo "== gpuaggctl metrics (first 5)"
$ctl metrics | head -n 6
echo "== gpuaggctl query demo.vm0 --granularity 300 --method mean (last 6 buckets)"
$ctl query demo.vm0 --granularity 300 --method mean | tail -n 6
echo "== the same in SQL (view gpuagg_measures, as Grafana reads it)"
psql_q="SELECT time, method, value FROM gpuagg_measures WHERE metric = 'demo.vm0' AND granularity_s = 300 AND method IN ('max', 'count') ORDER BY time DESC, method LIMIT 4"
if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- psql -h "$var/pg/sock" -d gpuagg -c "$psql_q"
else
    psql -h "$var/pg/sock" -d gpuagg -c "$psql_q"
fi
echo "== the Gnocchi API (listen.http, docs/API.md): demo.vm0's 300 s means, last 3"
http_port=$($ctl --json status | python3 -c 'import json, sys; print(json.load(sys.stdin)["http"]["port"])')
python3 - "$http_port" <<'PY'
import base64, json, sys, urllib.request, uuid
port = sys.argv[1]
mid = uuid.uuid3(uuid.UUID("5c1e5b8e-07c5-4c53-a2a5-3f2b1d6e9a47"), "demo.vm0")
req = urllib.request.Request(
    "http://127.0.0.1:%s/v1/metric/%s/measures?granularity=300&aggregation=mean" % (port, mid),
    headers={"Authorization": "Basic " + base64.b64encode(b"admin:").decode()})
for row in json.load(urllib.request.urlopen(req, timeout=10))[-3:]:
    print("   ", row)
PY
echo "== stopping"
