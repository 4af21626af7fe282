"""test_ceilometer_live.py — proto/ceilometer.c against Ceilometer itself,
on fresh vectors.

tests/ceilometer/gen_vectors.py signs and sends new random samples through
Debian's real UDPPublisher (python3-ceilometer, which tools/deps.sh
installs; nothing is fetched while the test runs) and prints new random
doubles with CPython's repr(); build/tests/test_ceilometer and
build/tests/test_pystr then check them instead of the committed vectors.
Each of the two counts as one pass or fail (a vector file that cannot be
made fails its check); without Ceilometer importable, test_ceilometer is
skipped with the reason.  The last line is
    ceilometer_live: N passed, N failed, N skipped
GA_SEED=N repeats a run (the seed is printed); GA_LIVE_COUNT=N sets the
number of random samples.
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("GA_ROOT") or os.path.dirname(os.path.dirname(HERE))
KEEP = os.path.join(ROOT, "build", "test-logs", "ceilometer_live")
GEN = os.path.join(HERE, "gen_vectors.py")
EXIT_SKIP = 77                  # gen_vectors.py: what it needs is not installed


def main():
    seed = int(os.environ.get("GA_SEED") or time.time_ns() % 1000000007)
    count = os.environ.get("GA_LIVE_COUNT", "300")
    print("seed %d" % seed)
    os.makedirs(KEEP, exist_ok=True)
    samples = os.path.join(KEEP, "samples.txt")
    floats = os.path.join(KEEP, "float_repr.txt")
    passed = failed = skipped = 0
    # each check with the vectors it reads: (test, environment variable, file, gen_vectors args)
    checks = (("test_ceilometer", "GA_CEILO_VECTORS", samples, ["samples", "--count", count]),
              ("test_pystr", "GA_FLOAT_VECTORS", floats, ["floats", "--count", "20000"]))
    for name, var, out, args in checks:
        r = subprocess.run([sys.executable, GEN] + args + ["--seed", str(seed), "-o", out],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode == EXIT_SKIP:
            print("SKIP %s: %s" % (name, r.stdout.strip().replace("gen_vectors: ", "", 1)))
            skipped += 1
            continue
        if r.returncode != 0:
            print("FAIL gen_vectors.py %s:\n%s" % (args[0], r.stdout))
            failed += 1
            continue
        exe = os.path.join(ROOT, "build", "tests", name)
        if not os.access(exe, os.X_OK):
            print("FAIL %s not built (make all)" % exe)
            failed += 1
            continue
        env = dict(os.environ, **{var: out})
        r = subprocess.run([exe], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        print(r.stdout.rstrip())
        if r.returncode != 0:
            print("FAIL %s: vectors kept in %s" % (name, KEEP))
            failed += 1
        else:
            passed += 1
    print("ceilometer_live: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
