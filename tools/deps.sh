#!/bin/sh
# Install the Debian packages gpuagg needs to build, run and test — only those
# that are missing.  Called by `make run` and `make test`.
set -eu
PKGS="build-essential pkg-config libuv1-dev libmsgpack-dev libpq-dev libyaml-dev
      uuid-dev nettle-dev
      postgresql postgresql-client python3 python3-msgpack python3-yaml python3-psycopg2
      python3-gnocchi systemd clang libclang-rt-14-dev libmicrohttpd-dev libjansson-dev
      python3-gnocchiclient python3-aodh python3-ceilometer python3-prometheus-client
      nats-server libnats-dev libcurl4-openssl-dev keystone
      dpkg-dev init-system-helpers python3-pytest"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
if [ "$(id -u)" != 0 ]; then
    SUDO=sudo
    command -v sudo >/dev/null || { echo "deps: run as root or install:$missing" >&2; exit 1; }
else
    SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
