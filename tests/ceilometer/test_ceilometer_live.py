"""test_ceilometer_live.py — proto/ceilometer.c against Ceilometer itself,
on fresh vectors.

tests/ceilometer/gen_vectors.py signs and sends new random samples through
Debian's real UDPPublisher (fetching python3-ceilometer if it is missing)
and prints new random doubles with CPython's repr(); build/tests/
test_ceilometer then checks them instead of its committed vectors.  Each of
the two vector files counts as one pass or fail (both fail when
test_ceilometer fails on them); the last line is
    ceilometer_live: N passed, N failed
GA_SEED=N repeats a run (the seed is printed); GA_LIVE_COUNT=N sets the
number of random samples.
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("GA_ROOT") or os.path.dirname(os.path.dirname(HERE))
TEST = os.path.join(ROOT, "build", "tests", "test_ceilometer")
KEEP = os.path.join(ROOT, "build", "test-logs", "ceilometer_live")
GEN = os.path.join(HERE, "gen_vectors.py")


def main():
    seed = int(os.environ.get("GA_SEED") or time.time_ns() % 1000000007)
    count = os.environ.get("GA_LIVE_COUNT", "300")
    print("seed %d" % seed)
    os.makedirs(KEEP, exist_ok=True)
    samples = os.path.join(KEEP, "samples.txt")
    floats = os.path.join(KEEP, "float_repr.txt")
    passed = failed = 0
    for what, out, extra in (("samples", samples, ["--count", count]), ("floats", floats, ["--count", "20000"])):
        r = subprocess.run([sys.executable, GEN, what, "--seed", str(seed), "-o", out] + extra,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            print("FAIL gen_vectors.py %s:\n%s" % (what, r.stdout))
            failed += 1
        else:
            passed += 1
    if failed:
        print("ceilometer_live: %d passed, %d failed" % (passed, failed))
        return 1
    passed = 0
    if not os.access(TEST, os.X_OK):
        print("FAIL %s not built (make all)" % TEST)
        failed = 1
    else:
        env = dict(os.environ, GA_CEILO_VECTORS=samples, GA_FLOAT_VECTORS=floats)
        r = subprocess.run([TEST], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(r.stdout.rstrip())
        if r.returncode != 0:
            print("FAIL: vectors kept in %s" % KEEP)
            failed = 2
        else:
            passed = 2
    print("ceilometer_live: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
