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
sed -e "s|/run/gpuaggd|$run|g" \
    -e "s|/var/lib/gpuaggd|$var/lib|g" \
    -e "s|conninfo: .*|conninfo: \"$conninfo\"|" \
    -e "s|\"127.0.0.1:4951\"|\"127.0.0.1:0\"|" \
    -e "s|\"127.0.0.1:4952\"|\"127.0.0.1:0\"|" \
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

# Wait for the storage connection to come up (it retries in the background).
i=0
until $ctl --json status | grep -q '"state": *"connected"' || [ $i -ge 50 ]; do sleep 0.1; i=$((i + 1)); done

echo "== gpuaggctl status"
$ctl status
echo "== stopping"
