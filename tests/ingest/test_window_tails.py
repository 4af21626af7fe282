"""Window saves that write only what changed (docs/STORAGE.md "Window
snapshots": tails) give back the windows they saved: a daemon killed
(kill -9) twice and restarted from PostgreSQL and its journal stores what
a daemon fed the same batches straight through stores, bit for bit.

The policy's block is 600 s and the points come one a second per metric,
mostly in order: windows grow by tails between whole saves (`flush` takes
a window set of every partition), a few points out of order make the next
save whole.  Buckets of 600 s are computed from every point of the window,
so a window rebuilt wrong from its snapshot and tails shows in them.

The killed daemon writes at most 256 bytes of windows a transaction, so a
window set goes over many (docs/STORAGE.md "Window snapshots"), and each
kill comes while a flush (a window set of every partition) is under way:
the windows stored before the kill carry their own position, and the
restart replays only the points of the others."""
import signal
import subprocess
import tempfile
import time

from inglib import (STORED_SQL, IngestDaemon, PrivatePG, bblib, engine_running, flush,
                    rand_value, rng_for, send_batch)

RNG = rng_for("window_tails")
POLICY = ("archive_policies:\n  - name: tails\n    back_window: 0\n    definition:\n"
          "      - { granularity: 10s, points: 100000 }\n"
          "      - { granularity: 600s, points: 1000 }\n"
          "    aggregation_methods: [mean, count, std, 50pct, last, rate:mean]\n"
          "default_archive_policy: tails\n")
METRICS, STEP_S, BATCHES = 40, 5, 90
T0 = (int(time.time()) // 600 - 1) * 600 * 10**9   # on a 600 s boundary, recent (retention)


def make_batches():
    names = ["tails.%d" % j for j in range(METRICS)]
    out = []
    for k in range(BATCHES):
        index, ts, vals = [], [], []
        for j in range(METRICS):
            for s in range(STEP_S):
                t = T0 + (k * STEP_S + s) * 10**9 + RNG.randrange(0, 10**8)
                if RNG.random() < 0.01:
                    t -= 30 * 10**9               # within the window, before its newest
                index.append(j)
                ts.append(t)
                vals.append(rand_value(RNG))
        out.append((names, index, ts, vals))
    return out


def daemon(conninfo, tmp=None, txn_bytes=None):
    storage = {"flush_interval_ms": 100, "window_snapshot_s": 10}
    if txn_bytes:
        storage["window_txn_bytes"] = txn_bytes
    return IngestDaemon(conninfo=conninfo, storage=storage, extra=POLICY, tmp=tmp)


def test_killed_daemon_equals_straight_run():
    batches = make_batches()
    pg = PrivatePG()
    try:
        pg.sql("CREATE DATABASE tails_ref")
        ref = pg.conninfo.replace("dbname=gpuagg", "dbname=tails_ref")
        assert ref != pg.conninfo, pg.conninfo
        with daemon(ref) as one:
            assert engine_running(one), one.logtext()[-3000:]
            for k, b in enumerate(batches):
                send_batch(one, k + 1, b)
            flush(one)
            assert one.stop() == 0
        tmp = tempfile.mkdtemp(prefix="gatails-")
        tails_seen = 0
        d = daemon(pg.conninfo, tmp, 256)
        d.start()
        try:
            assert engine_running(d), d.logtext()[-3000:]
            for k, b in enumerate(batches):
                send_batch(d, k + 1, b)
                if k % 10 == 9:
                    flush(d)               # a window set of every partition
                    tails_seen = max(tails_seen, int(pg.sql(
                        "SELECT count(*) FROM metric_window_tails")[0][0]))
                if k in (34, 64):
                    # a flush under way: a window set of every partition,
                    # written over many transactions
                    f = subprocess.Popen([bblib.GPUAGGCTL, "--socket", d.sock, "flush"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    time.sleep(0.05 + RNG.random() * 0.1)
                    d.proc.send_signal(signal.SIGKILL)
                    d.proc.wait()
                    f.wait()
                    d = daemon(pg.conninfo, tmp, 256)
                    d.start()
                    assert engine_running(d), d.logtext()[-3000:]
            flush(d)
            assert d.stop() == 0
        finally:
            if d.proc and d.proc.poll() is None:
                d.proc.kill()
        assert tails_seen > 0, "no window was saved as a tail"
        got, want = pg.sql(STORED_SQL), pg.sql(STORED_SQL, db="tails_ref")
        assert len(want) > 1000, len(want)
        assert got == want, next((a, b) for a, b in zip(got, want) if a != b)
    finally:
        pg.stop()
