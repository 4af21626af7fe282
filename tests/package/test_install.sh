#!/bin/sh
# make install / make uninstall into a DESTDIR: FHS places under PREFIX,
# the unit's paths rewritten to where gpuaggd went, an operator's config
# never overwritten (the shipped one put beside it as gpuaggd.yaml.dist),
# and uninstall removing exactly what install put, leaving an edited
# config.  Uses the binaries `make all` built.
set -u
cd "$(dirname "$0")/../.."
root=$(pwd)
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() {   # $1 = what, rest = test command
    what=$1; shift
    if "$@"; then ok; else bad "$what"; fi
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mk() { make -s --no-print-directory -C "$root" "$@" >"$tmp/make.out" 2>&1 || { cat "$tmp/make.out"; return 1; }; }
pyver=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# PREFIX=/opt/ga: everything under it but the config, in /etc/gpuagg.
d=$tmp/opt; p=/opt/ga
check "make install PREFIX=$p" mk install DESTDIR="$d" PREFIX="$p"
for f in sbin/gpuaggd bin/gpuaggctl bin/gpuagg-load; do
    check "$p/$f installed executable" test -x "$d$p/$f"
done
check "gpuaggd not in bin/" test ! -e "$d$p/bin/gpuaggd"
check "installed gpuaggd is the built one" cmp -s build/bin/gpuaggd "$d$p/sbin/gpuaggd"
for f in man8/gpuaggd.8 man1/gpuaggctl.1 man1/gpuagg-load.1; do
    check "man page $f" cmp -s "docs/$(basename "$f")" "$d$p/share/man/$f"
done
check "config installed as shipped" cmp -s etc/gpuaggd.yaml "$d/etc/gpuagg/gpuaggd.yaml"
check "Grafana dashboard in $p/share/gpuagg/grafana" cmp -s etc/grafana/gpuagg.json "$d$p/share/gpuagg/grafana/gpuagg.json"
unit=$d$p/lib/systemd/system/gpuaggd.service
check "unit under PREFIX ($p/lib/systemd/system)" test -f "$unit"
check "sysusers entry under PREFIX" cmp -s systemd/gpuagg.sysusers "$d$p/lib/sysusers.d/gpuagg.conf"
check "unit ExecStart is $p/sbin/gpuaggd" \
    grep -qx "ExecStart=$p/sbin/gpuaggd --config /etc/gpuagg/gpuaggd.yaml --foreground" "$unit"
check "unit ExecStartPre is $p/sbin/gpuaggd" \
    grep -qx "ExecStartPre=$p/sbin/gpuaggd --check-config /etc/gpuagg/gpuaggd.yaml" "$unit"
check "unit names no /usr/local" sh -c "! grep -q /usr/local '$unit'"
plug=$d$p/lib/python$pyver/dist-packages
check "Ceilometer plugin installed" test -f "$plug/gpuagg_ceilometer/publisher.py"
check "plugin entry point registered" grep -qx 'gpuagg = gpuagg_ceilometer.publisher:GpuaggPublisher' \
    "$plug/gpuagg_ceilometer-$(cat VERSION).dist-info/entry_points.txt"

# A second install over an edited config keeps it and says so.
echo "# edited by the operator" >> "$d/etc/gpuagg/gpuaggd.yaml"
cp "$d/etc/gpuagg/gpuaggd.yaml" "$tmp/edited"
check "install over an edited config" mk install DESTDIR="$d" PREFIX="$p"
check "edited config kept" cmp -s "$tmp/edited" "$d/etc/gpuagg/gpuaggd.yaml"
check "shipped config beside it as .dist" cmp -s etc/gpuaggd.yaml "$d/etc/gpuagg/gpuaggd.yaml.dist"
check "install says the config was kept" grep -q "gpuaggd.yaml differs from etc/gpuaggd.yaml and is kept" "$tmp/make.out"

# uninstall: all of it but the edited config.
check "make uninstall" mk uninstall DESTDIR="$d" PREFIX="$p"
left=$(find "$d" \( -type f -o -type l \) | sed "s|^$d||")
check "only the edited config left (left: $left)" test "$left" = "/etc/gpuagg/gpuaggd.yaml"
check "uninstall says the config was kept" grep -q "gpuaggd.yaml differs from etc/gpuaggd.yaml and is kept" "$tmp/make.out"

# PREFIX=/usr: the unit and sysusers.d where systemd's pkg-config file
# says, the plugin on Debian's python3 path; an unedited config goes with
# the rest, leaving no file.
d=$tmp/usr
unitdir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /usr/lib/systemd/system)
usersdir=$(pkg-config --variable=sysusersdir systemd 2>/dev/null || echo /usr/lib/sysusers.d)
check "make install PREFIX=/usr" mk install DESTDIR="$d" PREFIX=/usr
check "gpuaggd in /usr/sbin" test -x "$d/usr/sbin/gpuaggd"
check "unit in $unitdir, ExecStart /usr/sbin/gpuaggd" \
    grep -qx "ExecStart=/usr/sbin/gpuaggd --config /etc/gpuagg/gpuaggd.yaml --foreground" "$d$unitdir/gpuaggd.service"
check "sysusers entry in $usersdir" test -f "$d$usersdir/gpuagg.conf"
check "plugin in /usr/lib/python3/dist-packages" test -f "$d/usr/lib/python3/dist-packages/gpuagg_ceilometer/client.py"
check "make uninstall PREFIX=/usr" mk uninstall DESTDIR="$d" PREFIX=/usr
left=$(find "$d" \( -type f -o -type l \) | sed "s|^$d||")
check "nothing left after uninstall (left: $left)" test -z "$left"
check "config directory removed" test ! -e "$d/etc/gpuagg"

# Every directory variable can be overridden.
d=$tmp/vars
check "install with SYSTEMDUNITDIR, SYSUSERSDIR, CONFDIR set" mk install DESTDIR="$d" PREFIX=/usr \
    SYSTEMDUNITDIR=/srv/units SYSUSERSDIR=/srv/users CONFDIR=/srv/conf SBINDIR=/srv/sbin
check "unit in SYSTEMDUNITDIR naming SBINDIR and CONFDIR" \
    grep -qx "ExecStart=/srv/sbin/gpuaggd --config /srv/conf/gpuaggd.yaml --foreground" "$d/srv/units/gpuaggd.service"
check "sysusers in SYSUSERSDIR" test -f "$d/srv/users/gpuagg.conf"
check "config in CONFDIR" test -f "$d/srv/conf/gpuaggd.yaml"

echo "install: $pass passed, $fail failed, 0 skipped"
[ "$fail" -eq 0 ]
