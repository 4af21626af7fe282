#!/bin/sh
# The shipped unit passes `systemd-analyze verify` and carries the directives
# operators rely on.  systemd-analyze comes from Debian's systemd package,
# which tools/deps.sh installs (make test); without it the verify check is
# skipped with the reason, the others run.
set -u
cd "$(dirname "$0")/../.."
pass=0; fail=0; skip=0
ok()   { pass=$((pass + 1)); }
bad()  { fail=$((fail + 1)); echo "FAIL: $*"; }
skip() { skip=$((skip + 1)); echo "SKIP $1: $2"; }

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
bin="$(pwd)/build/bin"
sed "s|/usr/local/sbin|$bin|g" systemd/gpuaggd.service > "$tmp/gpuaggd.service"
if ! command -v systemd-analyze >/dev/null; then
    skip verify "systemd-analyze not found: install Debian's systemd (tools/deps.sh, run by make test)"
else
    out=$(systemd-analyze verify --man=no "$tmp/gpuaggd.service" 2>&1)
    # What it says of other units on this host (loaded as dependencies,
    # e.g. a package's unit enabled in multi-user.target) is theirs, not ours.
    others=$(echo "$out" | grep -E '^[A-Za-z0-9@._\-]+\.(service|socket|target|mount|timer|path|slice): ' |
             grep -v '^gpuaggd\.service: ')
    [ -n "$others" ] && echo "note: systemd-analyze on other units of this host: $others"
    out=$(echo "$out" | grep -vxF "$others")
    if [ -z "$out" ]; then ok; else bad "systemd-analyze verify: $out"; fi
fi

for d in Type=notify WatchdogSec= "ExecReload=/bin/kill -HUP" User=gpuagg RuntimeDirectory=gpuagg \
         StateDirectory=gpuagg ProtectSystem=strict NoNewPrivileges=yes PrivateTmp=yes \
         "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6" "DeviceAllow=char-nvidia-frontend" \
         "DeviceAllow=char-nvidia-uvm" "--foreground"; do
    if grep -q -- "$d" systemd/gpuaggd.service; then ok; else bad "unit lacks $d"; fi
done
# MemoryMax covers what the shipped config lets the daemon take (the sum
# written in the unit) on hosts of 16, 64 and 128 GiB, and TasksMax is set.
pct=$(sed -nE 's/^MemoryMax=([0-9]+)%$/\1/p' systemd/gpuaggd.service)
for ram_gib in 16 64 128; do
    need=$(/usr/bin/python3 - "$ram_gib" <<'PY'
import re, sys, yaml
c = yaml.safe_load(open("etc/gpuaggd.yaml"))
def size(v):
    m = re.fullmatch(r"(\d+)\s*([KMGT]i?B)?", str(v))
    mult = {None: 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
            "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}[m.group(2)]
    return int(m.group(1)) * mult
lim, jobs = c["limits"], c["jobs"]
budget = size(lim["memory_budget_bytes"])
ram = int(sys.argv[1]) << 30
mm = lim["max_metrics"]
metrics = ram // 4 // 1024 if mm in (0, "auto") else mm
print(budget + metrics * 1400 + jobs["workers"] * size(jobs["max_job_bytes"]) +
      size(jobs["results_max_bytes"]) + (512 << 20))
PY
)
    if [ -n "$pct" ] && [ "$need" -le $(( (ram_gib << 30) / 100 * pct )) ]; then ok
    else bad "MemoryMax=${pct}% of ${ram_gib} GiB is below what etc/gpuaggd.yaml allows ($need bytes)"; fi
done
if grep -qE '^TasksMax=[0-9]+$' systemd/gpuaggd.service; then ok; else bad "unit lacks TasksMax"; fi
# One directory name, gpuagg, everywhere: the unit's RuntimeDirectory= holds
# the shipped config's sockets, its StateDirectory= the journal and the
# sysusers home; the unit reads the config the daemon reads by default.
rt=$(sed -n 's/^RuntimeDirectory=//p' systemd/gpuaggd.service)
sd=$(sed -n 's/^StateDirectory=//p' systemd/gpuaggd.service)
if [ "$rt" = gpuagg ] && [ "$sd" = gpuagg ]; then ok; else bad "RuntimeDirectory=$rt StateDirectory=$sd, not gpuagg"; fi
paths=$(/usr/bin/python3 -c '
import yaml
c = yaml.safe_load(open("etc/gpuaggd.yaml"))
print(c["control"]["socket"], c["listen"]["unix"], c["journal"]["dir"])')
set -- $paths
for sock in "$1" "$2"; do
    case "$sock" in "/run/$rt/"*) ok ;; *) bad "etc/gpuaggd.yaml: socket $sock not under /run/$rt (RuntimeDirectory)" ;; esac
done
case "$3" in "/var/lib/$sd/"*) ok ;; *) bad "etc/gpuaggd.yaml: journal.dir $3 not under /var/lib/$sd (StateDirectory)" ;; esac
if grep -qE "^u gpuagg .* /var/lib/$sd\$" systemd/gpuagg.sysusers; then ok; else bad "systemd/gpuagg.sysusers: home is not /var/lib/$sd"; fi
cfg=$(sed -nE 's/^ExecStart=[^ ]+ --config ([^ ]+) .*/\1/p' systemd/gpuaggd.service)
if "$bin/gpuaggd" --help | grep -qF "(default $cfg)"; then ok; else bad "the unit's --config $cfg is not gpuaggd's default"; fi
if "$bin/gpuaggctl" --help 2>&1 | grep -qF "$1"; then ok; else bad "gpuaggctl --help does not name $1 as its default socket"; fi
# The unit's own pre-start check passes on the shipped config.
if "$bin/gpuaggd" --check-config etc/gpuaggd.yaml >/dev/null 2>&1; then ok; else bad "gpuaggd --check-config etc/gpuaggd.yaml"; fi
echo "systemd: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
