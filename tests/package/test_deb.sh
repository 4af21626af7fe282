#!/bin/sh
# make deb: the package's metadata and contents, then the package installed
# into a fresh root (dpkg --root, its scripts run outside a chroot with
# DPKG_ROOT, as dpkg --force-script-chrootless does): the gpuagg user
# created there, the unit enabled there, the installed gpuaggd started on a
# config pointing into that root against a private PostgreSQL and answering
# the installed gpuaggctl's status, stopped, then the package removed and
# purged with nothing of it left.  Packages the binaries `make all` built.
set -u
cd "$(dirname "$0")/../.."
src=$(pwd)
pass=0; fail=0; skip=0
ok()   { pass=$((pass + 1)); }
bad()  { fail=$((fail + 1)); echo "FAIL: $*"; }
check() {   # $1 = what, rest = test command
    what=$1; shift
    if "$@"; then ok; else bad "$what"; fi
}
finish() { echo "deb: $pass passed, $fail failed, $skip skipped"; [ "$fail" -eq 0 ]; exit; }
for t in dpkg-deb dpkg-shlibdeps systemd-sysusers deb-systemd-helper; do
    command -v $t >/dev/null || { skip=1; echo "SKIP deb: $t not found (tools/deps.sh installs dpkg-dev, systemd, init-system-helpers)"; finish; }
done
if [ "$(id -u)" != 0 ]; then skip=1; echo "SKIP deb: dpkg --root needs root to own the installed files"; finish; fi

tmp=$(mktemp -d); chmod 0755 "$tmp"
pid=""
cleanup() {
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    tools/pg-private.sh stop "$tmp/pg" >/dev/null 2>&1
    rm -rf "$tmp"
}
trap cleanup EXIT
version=$(cat VERSION)
arch=$(dpkg --print-architecture)

# --- build
# zstd: xz takes most of a minute on a 2-core machine for the same package.
if ! make -s --no-print-directory deb DEB_DIR="$tmp/deb" DEB_COMPRESS=zstd >"$tmp/make.out" 2>&1; then
    cat "$tmp/make.out"; bad "make deb"; finish
fi
deb=$tmp/deb/gpuagg_${version}_${arch}.deb
check "make deb wrote $(basename "$deb")" test -f "$deb"
check "make deb printed its path" grep -qx "$deb" "$tmp/make.out"

# --- metadata (dpkg-deb -f / -I)
field() { dpkg-deb -f "$deb" "$1"; }
check "Package: gpuagg" test "$(field Package)" = gpuagg
check "Version: $version (VERSION)" test "$(field Version)" = "$version"
check "Architecture: $arch" test "$(field Architecture)" = "$arch"
check "Maintainer set" test -n "$(field Maintainer)"
check "Installed-Size a number" sh -c "test '$(field Installed-Size)' -gt 0"
check "Description has a synopsis and a long text" sh -c "dpkg-deb -f '$deb' Description | sed -n 2p | grep -q ."
deps=$(field Depends)
# Every shared library the binaries link (NEEDED) comes from a package in
# Depends.
for b in build/bin/gpuaggd build/bin/gpuaggctl build/bin/gpuagg-load; do
    for so in $(objdump -p "$b" | awk '$1 == "NEEDED" {print $2}'); do
        lib=$(ldd "$b" | awk -v so="$so" '$1 == so {print $3} $1 ~ ("/" so "$") {print $1}')
        [ -n "$lib" ] || { bad "$b: ldd does not resolve $so"; continue; }
        real=$(readlink -f "$lib")
        pkg=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$real" 2>/dev/null) || { bad "no package owns $lib"; continue; }
        pkg=${pkg%%:*}
        case ", $deps," in
            *", $pkg "*|*", $pkg,"*|*"| $pkg "*|*"| $pkg,"*) ok ;;
            *) bad "Depends ($deps) lacks $pkg, which holds $lib for $b" ;;
        esac
    done
done
check "Depends systemd (sysusers, the unit)" sh -c "echo '$deps' | grep -qE '(^|, )systemd(,|$)'"
check "Depends python3 (the Ceilometer plugin)" sh -c "echo '$deps' | grep -qE '(^|, )python3:any(,|$)'"
dpkg-deb -I "$deb" > "$tmp/info"
for f in control conffiles md5sums postinst prerm postrm; do
    check "control member $f" grep -qE "^ +[0-9]+ bytes, +[0-9]+ lines +\*? +$f( |$)" "$tmp/info"
done
dpkg-deb --ctrl-tarfile "$deb" | tar -xf - -C "$tmp" ./conffiles
check "conffiles is the config" test "$(cat "$tmp/conffiles")" = /etc/gpuagg/gpuaggd.yaml
for s in postinst prerm postrm; do
    dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - "./$s" > "$tmp/$s"
    check "$s parses (sh -n)" sh -n "$tmp/$s"
done

# --- contents (dpkg-deb -c): owner root, the FHS places, man pages compressed
dpkg-deb -c "$deb" > "$tmp/contents"
check "every member owned by root/root" sh -c "awk '\$2 != \"root/root\"' '$tmp/contents' | grep -q . && exit 1 || exit 0"
awk '{print $6}' "$tmp/contents" | sed 's|^\./|/|; s|/$||' | grep -v '^/*$' | sort > "$tmp/paths"
unitdir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /usr/lib/systemd/system)
usersdir=$(pkg-config --variable=sysusersdir systemd 2>/dev/null || echo /usr/lib/sysusers.d)
for f in /usr/sbin/gpuaggd /usr/bin/gpuaggctl /usr/bin/gpuagg-load /etc/gpuagg/gpuaggd.yaml \
         "$unitdir/gpuaggd.service" "$usersdir/gpuagg.conf" \
         /usr/share/man/man8/gpuaggd.8.gz /usr/share/man/man1/gpuaggctl.1.gz /usr/share/man/man1/gpuagg-load.1.gz \
         /usr/share/doc/gpuagg/copyright /usr/share/doc/gpuagg/changelog.gz /usr/share/gpuagg/grafana/gpuagg.json \
         /usr/lib/python3/dist-packages/gpuagg_ceilometer/publisher.py \
         "/usr/lib/python3/dist-packages/gpuagg_ceilometer-$version.dist-info/entry_points.txt"; do
    check "package holds $f" grep -qx "$f" "$tmp/paths"
done
check "nothing under /usr/local" sh -c "! grep -q '^/usr/local' '$tmp/paths'"
check "no gpuaggd in /usr/bin" sh -c "! grep -qx /usr/bin/gpuaggd '$tmp/paths'"
check "executables are 0755, the rest 0644" sh -c "awk '\$1 ~ /^-/ && \$1 != \"-rwxr-xr-x\" && \$1 != \"-rw-r--r--\"' '$tmp/contents' | grep -q . && exit 1 || exit 0"

# --- install into a fresh root
r=$tmp/root
mkdir -p "$r/var/lib/dpkg/info" "$r/var/lib/dpkg/updates" "$r/var/lib/dpkg/triggers" "$r/etc"
: > "$r/var/lib/dpkg/status"; : > "$r/var/lib/dpkg/available"
# The root holds none of the libraries: Depends are the host's.
dpkg_r() { dpkg --root="$r" --force-script-chrootless --force-depends --force-not-root "$@" >"$tmp/dpkg.out" 2>&1 ||
           { cat "$tmp/dpkg.out"; return 1; }; }
check "dpkg --root install" dpkg_r -i "$deb"
check "dpkg says installed" sh -c "dpkg --root='$r' -s gpuagg 2>/dev/null | grep -qx 'Status: install ok installed'"
check "gpuagg user created by sysusers" grep -q '^gpuagg:x:[0-9]*:[0-9]*:.*:/var/lib/gpuagg:' "$r/etc/passwd"
check "gpuagg group created" grep -q '^gpuagg:x:' "$r/etc/group"
check "unit enabled (multi-user.target.wants)" test -L "$r/etc/systemd/system/multi-user.target.wants/gpuaggd.service"
check "unit ExecStart is /usr/sbin/gpuaggd" \
    grep -qx "ExecStart=/usr/sbin/gpuaggd --config /etc/gpuagg/gpuaggd.yaml --foreground" "$r$unitdir/gpuaggd.service"
check "installed config is the shipped one" cmp -s etc/gpuaggd.yaml "$r/etc/gpuagg/gpuaggd.yaml"
check "installed gpuaggd --version" sh -c "'$r/usr/sbin/gpuaggd' --version | grep -qx 'gpuaggd $version'"
check "installed gpuaggd checks the installed config" "$r/usr/sbin/gpuaggd" --check-config "$r/etc/gpuagg/gpuaggd.yaml" >/dev/null 2>&1
check "plugin importable from the root" env PYTHONPATH="$r/usr/lib/python3/dist-packages" /usr/bin/python3 -c \
    'import gpuagg_ceilometer.client, sys; sys.exit(0 if gpuagg_ceilometer.client.__file__.startswith(sys.argv[1]) else 1)' "$r/usr"

# --- run it: the installed config, its /run/gpuagg and /var/lib/gpuagg moved into the root
if conninfo=$(tools/pg-private.sh start "$tmp/pg" 2>"$tmp/pg.err"); then
    mkdir -p "$r/run/gpuagg" "$r/var/lib/gpuagg"
    sed -e "s|/run/gpuagg/|$r/run/gpuagg/|g" -e "s|/var/lib/gpuagg/|$r/var/lib/gpuagg/|g" \
        -e "s|conninfo: .*|conninfo: \"$conninfo\"|" \
        -e "s|\"127.0.0.1:4951\"|\"127.0.0.1:0\"|" -e "s|\"127.0.0.1:4952\"|\"127.0.0.1:0\"|" \
        -e "s|^  devices: all|  devices: none|" \
        "$r/etc/gpuagg/gpuaggd.yaml" > "$tmp/gpuaggd.yaml"
    GA_LOG_NO_TS=1 "$r/usr/sbin/gpuaggd" --config "$tmp/gpuaggd.yaml" --foreground 2>"$tmp/gpuaggd.log" &
    pid=$!
    ctl="$r/usr/bin/gpuaggctl --socket $r/run/gpuagg/control.sock --timeout 5"
    # status (JSON) from the installed gpuaggctl: this version, storage connected
    up() { $ctl --json status 2>"$tmp/ctl.err" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d["storage"]["state"] == "connected" and d["version"] == sys.argv[1] else 1)' "$version"; }
    i=0
    while [ $i -lt 150 ] && ! up 2>/dev/null; do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2; i=$((i + 1))
    done
    check "installed gpuaggctl status answers from the installed gpuaggd, storage connected" up
    # the text form of the same (again while the writers connect, on a busy machine)
    text_up() { i=0; while [ $i -lt 50 ]; do
        $ctl status 2>>"$tmp/ctl.err" | grep -q "^  state: connected" && return 0
        sleep 0.2; i=$((i + 1)); done; return 1; }
    check "installed gpuaggctl status, text" text_up
    check "journal in the root's /var/lib/gpuagg" test -d "$r/var/lib/gpuagg/journal"
    check "gpuaggctl shutdown" sh -c "$ctl shutdown >/dev/null"
    wait "$pid"; rc=$?; pid=""
    check "gpuaggd exited 0 after shutdown (rc $rc)" test "$rc" -eq 0
    [ "$fail" -eq 0 ] || tail -n 20 "$tmp/gpuaggd.log"
    tools/pg-private.sh stop "$tmp/pg"
else
    bad "private PostgreSQL: $(cat "$tmp/pg.err")"
fi

# --- remove, then purge: nothing of the package left
check "dpkg --root remove" dpkg_r -r gpuagg
check "remove kept the conffile" test -f "$r/etc/gpuagg/gpuaggd.yaml"
check "remove took the binaries" test ! -e "$r/usr/sbin/gpuaggd"
check "remove took the plugin's compiled files" test ! -e "$r/usr/lib/python3/dist-packages/gpuagg_ceilometer"
check "dpkg --root purge" dpkg_r -P gpuagg
left=""
while read -r f; do   # a directory may be shared (/usr/share/man): only gpuagg's own count
    if [ -L "$r$f" ] || { [ -e "$r$f" ] && [ ! -d "$r$f" ]; }; then left="$left $f"
    elif [ -d "$r$f" ]; then case "$f" in *gpuagg*) left="$left $f/" ;; esac; fi
done < "$tmp/paths"
check "no file of the package left after purge:$left" test -z "$left"
stray=$(find "$r" -name '*gpuagg*')
check "no gpuagg path left anywhere in the root: $stray" test -z "$stray"
check "unit's enablement gone" test ! -e "$r/etc/systemd/system/multi-user.target.wants/gpuaggd.service"
check "journal directory gone" test ! -e "$r/var/lib/gpuagg"
check "dpkg forgot it" sh -c "! dpkg --root='$r' -s gpuagg >/dev/null 2>&1"
finish
