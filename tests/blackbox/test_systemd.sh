#!/bin/sh
# The shipped unit passes `systemd-analyze verify` and carries the directives
# operators rely on.  Installs systemd when missing.
set -u
cd "$(dirname "$0")/../.."
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

if ! command -v systemd-analyze >/dev/null; then
    apt-get install -y -qq systemd >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq systemd >/dev/null; }
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
bin="$(pwd)/build/bin"
sed "s|/usr/local/bin|$bin|g" systemd/gpuaggd.service > "$tmp/gpuaggd.service"
out=$(systemd-analyze verify --man=no "$tmp/gpuaggd.service" 2>&1)
if [ -z "$out" ]; then ok; else bad "systemd-analyze verify: $out"; fi

for d in Type=notify WatchdogSec= "ExecReload=/bin/kill -HUP" User=gpuagg RuntimeDirectory=gpuaggd \
         StateDirectory=gpuaggd ProtectSystem=strict NoNewPrivileges=yes PrivateTmp=yes \
         "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6" "DeviceAllow=char-nvidia-frontend" \
         "DeviceAllow=char-nvidia-uvm" "--foreground"; do
    if grep -q -- "$d" systemd/gpuaggd.service; then ok; else bad "unit lacks $d"; fi
done
# The unit's own pre-start check passes on the shipped config.
if "$bin/gpuaggd" --check-config etc/gpuaggd.yaml >/dev/null 2>&1; then ok; else bad "gpuaggd --check-config etc/gpuaggd.yaml"; fi
echo "systemd: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
