"""test_ceilometer_live.py — proto/ceilometer.c against Ceilometer itself,
on fresh vectors.

tests/ceilometer/gen_vectors.py signs and sends new random samples through
Debian's real UDPPublisher (python3-ceilometer, which tools/deps.sh
installs; nothing is fetched while the test runs) and prints new random
doubles with CPython's repr(); build/tests/test_ceilometer and
build/tests/test_pystr then check them instead of the committed vectors.
Each of the two counts as one pass or fail (a vector file that cannot be
made fails its check); without Ceilometer importable, test_ceilometer is
skipped with the reason.
GA_SEED=N repeats a run (the seed is printed); GA_LIVE_COUNT=N sets the
number of random samples.
"""
import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("GA_ROOT") or os.path.dirname(os.path.dirname(HERE))
KEEP = os.path.join(ROOT, "build", "test-logs", "ceilometer_live")
GEN = os.path.join(HERE, "gen_vectors.py")
EXIT_SKIP = 77                  # gen_vectors.py: what it needs is not installed
SEED = int(os.environ.get("GA_SEED") or time.time_ns() % 1000000007)
COUNT = os.environ.get("GA_LIVE_COUNT", "300")
SAMPLES = os.path.join(KEEP, "samples.txt")
FLOATS = os.path.join(KEEP, "float_repr.txt")


# each check with the vectors it reads: (test, environment variable, file, gen_vectors args)
@pytest.mark.parametrize("name,var,out,args", [
    ("test_ceilometer", "GA_CEILO_VECTORS", SAMPLES, ["samples", "--count", COUNT]),
    ("test_pystr", "GA_FLOAT_VECTORS", FLOATS, ["floats", "--count", "20000"]),
], ids=["test_ceilometer", "test_pystr"])
def test_live_vectors(name, var, out, args):
    print("seed %d" % SEED)
    os.makedirs(KEEP, exist_ok=True)
    r = subprocess.run([sys.executable, GEN] + args + ["--seed", str(SEED), "-o", out],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode == EXIT_SKIP:
        pytest.skip(r.stdout.strip().replace("gen_vectors: ", "", 1))
    assert r.returncode == 0, "gen_vectors.py %s:\n%s" % (args[0], r.stdout)
    exe = os.path.join(ROOT, "build", "tests", name)
    assert os.access(exe, os.X_OK), "%s not built (make all)" % exe
    env = dict(os.environ, **{var: out})
    r = subprocess.run([exe], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    print(r.stdout.rstrip())
    assert r.returncode == 0, "%s: vectors kept in %s" % (name, KEEP)
