#!/bin/sh
# Pack the whole daemon for a GPU host that has only the CUDA toolkit: the
# gpuagg binaries, every shared library they and PostgreSQL 15 need (glibc
# excepted: the host's is newer), and a relocatable PostgreSQL server laid
# out as usr/lib/postgresql/15 + usr/share/postgresql/15 so its relative
# paths resolve.  Output: build-bundle/gpuagg-bundle.tar.xz; copy
# build-bundle/ to the GPU host and run tools/gpu-host/e2e.sh there (or
# bench_host.sh: it also needs build/bench/gen_points_csv and a pure-Python
# msgpack, both packed here); `root/bench_capacity` (tools/gpu-host/bench_capacity.sh) runs
# the capacity benchmark with the bundle's PostgreSQL, `root/bench_cluster`
# (tools/gpu-host/bench_cluster.sh) the cluster benchmark with it and the
# bundle's nats-server (Debian's; it needs only glibc).
set -eu
cd "$(dirname "$0")/../.."
make -s all >/dev/null
out=build-bundle
rm -rf "$out" && mkdir -p "$out/root/bin" "$out/root/lib"
root="$out/root"
pgv=15
pgbin=/usr/lib/postgresql/$pgv/bin
mkdir -p "$root/usr/lib/postgresql/$pgv/bin" "$root/usr/lib/postgresql/$pgv/lib" "$root/usr/share/postgresql"
cp build/bin/gpuaggd build/bin/gpuaggctl build/bin/gpuagg-load build/bench/gen_points_csv \
   build/bench/bench_capacity "$root/bin/"
nats=$(command -v nats-server || echo /usr/sbin/nats-server)
[ -x "$nats" ] || { echo "bundle.sh: nats-server not found (tools/deps.sh installs it)" >&2; exit 1; }
cp "$nats" "$root/bin/"
for b in postgres initdb pg_ctl psql createdb pgbench; do cp "$pgbin/$b" "$root/usr/lib/postgresql/$pgv/bin/"; done
for l in plpgsql.so dict_snowball.so; do cp "/usr/lib/postgresql/$pgv/lib/$l" "$root/usr/lib/postgresql/$pgv/lib/"; done
cp -r /usr/share/postgresql/$pgv "$root/usr/share/postgresql/"
rm -rf "$root/usr/share/postgresql/$pgv/man"
# Shared libraries, glibc's own excepted.
for f in "$root"/bin/* "$root"/usr/lib/postgresql/$pgv/bin/* "$root"/usr/lib/postgresql/$pgv/lib/*.so; do
    ldd "$f" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
        libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libresolv.so*) ;;
        *) cp -L "$lib" "$root/lib/" ;;
    esac
done
cp tools/gpu-host/e2e.sh tools/gpu-host/bench_host.sh tools/gpu-host/visprobe.py tools/gpu-host/pg_rewrite_ceiling.sh \
   tools/gpu-host/pg_register_ceiling.sh tools/pg-private.sh "$root/"
cp tools/gpu-host/bench_capacity.sh "$root/bench_capacity"
cp tools/bench/bench_cluster.py "$root/"
cp tools/gpu-host/bench_cluster.sh "$root/bench_cluster"
# msgpack for visprobe.py (the host's python3 has none): Debian's package,
# pure Python only -- its C extension is built for another Python version,
# and msgpack falls back to msgpack/fallback.py without it.
mkdir -p "$root/py"
cp -r /usr/lib/python3/dist-packages/msgpack "$root/py/"
rm -rf "$root/py/msgpack/__pycache__" "$root"/py/msgpack/*.so
tar -C "$out" -cJf "$out/gpuagg-bundle.tar.xz" root
rm -rf "$root"
ls -l "$out"
