#!/bin/sh
# Python 3.11 with numpy and python3-gnocchi, from this Debian 12 machine,
# for running carbonara on the GPU host (Ubuntu, no numpy, no gnocchi, no
# network): the interpreter, its standard library, the dist-packages that
# tools/bench/bench_gpu_carbonara.py imports and the shared libraries they
# need but glibc's.  Needs python3-gnocchi installed here (tests/engine).
#   tools/gpu-host/pybundle.sh   -> build-py/py311.tar.xz (copy build-py/ to the host)
# On the host:
#   tar -C /tmp -xJf build-py/py311.tar.xz && P=/tmp/py311
#   PYTHONHOME=$P PYTHONPATH=$P/dist LD_LIBRARY_PATH=$P/lib $P/bin/python3.11 \
#       tools/bench/bench_gpu_carbonara.py --bench build-gpu/bench_gpu
set -eu
cd "$(dirname "$0")/../.."
S=build-py/stage/py311
rm -rf build-py/stage
mkdir -p "$S/bin" "$S/lib" "$S/dist"
cp /usr/bin/python3.11 "$S/bin/"
tar -C /usr/lib -cf - --exclude=__pycache__ --exclude=python3.11/test \
    --exclude='python3.11/config-*' --exclude=python3.11/idlelib --exclude=python3.11/tkinter \
    --exclude=python3.11/turtledemo --exclude=python3.11/ensurepip --exclude=python3.11/lib2to3 \
    --exclude=python3.11/pydoc_data python3.11 | tar -C "$S/lib" -xf -
# the dist-packages the benchmark imports, found by importing it
/usr/bin/python3.11 - "$S/dist" <<'PY'
import os, shutil, sys
sys.path.insert(0, "tools/bench")
import bench_engine, argparse, platform, subprocess, tempfile  # noqa: F401
dst = sys.argv[1]
tops = set()
for m in list(sys.modules.values()):
    f = getattr(m, "__file__", None) or ""
    if "/dist-packages/" in f:
        tops.add(f.split("/dist-packages/")[0] + "/dist-packages/" + f.split("/dist-packages/")[1].split("/")[0])
for t in sorted(tops):
    out = os.path.join(dst, os.path.basename(t))
    if os.path.isdir(t):
        shutil.copytree(t, out, ignore=shutil.ignore_patterns("__pycache__", "tests"))
    else:
        shutil.copy2(t, out)
PY
# shared libraries of the interpreter and every extension module, but glibc's
find "$S/bin" "$S/lib" "$S/dist" -type f \( -name '*.so' -o -name python3.11 \) -exec ldd {} \; 2>/dev/null |
    awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
    grep -Ev '/(libc|libm|libpthread|libdl|librt|libresolv|libutil|libnss_[a-z]*|ld-linux[^/]*)\.so' |
    while read -r l; do cp -L "$l" "$S/lib/"; done
tar -C build-py/stage -cJf build-py/py311.tar.xz py311
rm -rf build-py/stage
ls -l build-py/py311.tar.xz
