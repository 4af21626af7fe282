#!/bin/sh
# build-deb.sh STAGE VERSION OUTDIR — the Debian binary package gpuagg from
# a tree staged by `make install DESTDIR=STAGE PREFIX=/usr` (`make deb`
# does both): binaries stripped, man pages compressed, copyright and a
# changelog under /usr/share/doc/gpuagg, DEBIAN/ from the templates beside
# this script, Depends computed by dpkg-shlibdeps from the binaries (plus
# systemd, for systemd-sysusers and the unit, and python3 for the
# Ceilometer plugin).  Writes
# OUTDIR/gpuagg_VERSION_ARCH.deb and prints its path.
# DEB_MAINTAINER (environment) names the package's maintainer and
# DEB_COMPRESS its compressor (dpkg-deb -Z: xz, the default, zstd, gzip).
set -eu
stage=$1; version=$2; out=$3
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "build-deb: $*" >&2; exit 1; }
for t in dpkg-deb dpkg-shlibdeps dpkg-architecture strip gzip; do
    command -v $t >/dev/null || die "$t not found (Debian's dpkg-dev, binutils: tools/deps.sh installs them)"
done
[ -x "$stage/usr/sbin/gpuaggd" ] || die "$stage/usr/sbin/gpuaggd missing: stage with make install DESTDIR=$stage PREFIX=/usr"
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
maintainer=${DEB_MAINTAINER:-gpuagg maintainers <maintainers@gpuagg.invalid>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(cd "$stage" && pwd)

bins="$stage/usr/sbin/gpuaggd"
for b in gpuaggctl gpuagg-load; do
    [ -e "$stage/usr/bin/$b" ] && bins="$bins $stage/usr/bin/$b"
done
# shellcheck disable=SC2086
strip --strip-unneeded --remove-section=.comment --remove-section=.note $bins
find "$stage/usr/share/man" -type f -name '*.[0-9]' -exec gzip -9nf {} +

doc="$stage/usr/share/doc/gpuagg"
install -d "$doc"
install -m 0644 "$here/copyright" "$doc/copyright"
# One entry for the version built, dated by the tree's last commit (or now);
# a native package's changelog is changelog.gz.
when=$(git -C "$here" log -1 --format=%cD 2>/dev/null || date -R)
printf 'gpuagg (%s) unstable; urgency=medium\n\n  * Package of gpuagg %s built from its source tree.\n\n -- %s  %s\n' \
    "$version" "$version" "$maintainer" "$when" | gzip -9n > "$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"

# Depends: dpkg-shlibdeps reads debian/control, so give it one in a scratch
# directory.
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir "$work/debian"
printf 'Source: gpuagg\n\nPackage: gpuagg\nArchitecture: any\n' > "$work/debian/control"
# shellcheck disable=SC2086
deps=$(cd "$work" && dpkg-shlibdeps -O $bins 2>"$work/err") || { cat "$work/err" >&2; die "dpkg-shlibdeps failed on $bins"; }
# Its one warning here is that the binaries are not under debian/gpuagg/.
grep -v "should already be installed in their package's directory" "$work/err" >&2 || true
deps=${deps#shlibs:Depends=}
[ -n "$deps" ] || die "dpkg-shlibdeps found no dependencies"

install -d -m 0755 "$stage/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@MAINTAINER@|$maintainer|" \
    -e "s|@SIZE@|$size|" -e "s|@DEPENDS@|$deps|" "$here/control.in" > "$stage/DEBIAN/control"
install -m 0644 "$here/conffiles" "$stage/DEBIAN/conffiles"
for s in postinst prerm postrm; do install -m 0755 "$here/$s" "$stage/DEBIAN/$s"; done
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort |
    xargs md5sum > DEBIAN/md5sums)
chmod 0644 "$stage/DEBIAN/md5sums"
chmod -R u+rwX,go+rX,go-w "$stage"

deb="$out/gpuagg_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Z"${DEB_COMPRESS:-xz}" --build "$stage" "$deb" >/dev/null
echo "$deb"
