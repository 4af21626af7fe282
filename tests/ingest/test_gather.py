"""Batches that wait in the engine queue are aggregated in one feed
(daemon/engine_worker.c, gather), with what feeding them one after another
gives, bit for bit (docs/SEMANTICS.md is per metric, per batch).

The same 30 batches go to two daemons on two databases of one private
PostgreSQL.  The first gets them one at a time, each committed (`flush`)
before the next: one feed a batch.  The second gets them while its
PostgreSQL is down, so they wait in its queue, and aggregates them when it
comes back: fewer feeds than batches.  Batch k holds metric set k mod 10,
so every 10th batch repeats a gathered run's metrics and must start a new
feed.  The policy has the batch-sensitive methods (rate:, a percentile,
std, back_window 1) and the points come out of order, some too old: the
stored buckets, late points and point counts of both databases must be
equal."""
import subprocess
import time

from inglib import (PG_PRIVATE, STORED_SQL, IngestDaemon, PrivatePG,
                    batch_sensitive_policy, engine_running, flush, random_points, rng_for,
                    send_batch, wait_for)

RNG = rng_for("gather")
POLICY = batch_sensitive_policy("gather")
BATCHES, SETS, PER_SET, POINTS = 30, 10, 100, 3
T0 = (int(time.time()) // 600 - 1) * 600 * 10**9   # recent: retention keeps it


def make_batches():
    out = []
    for k in range(BATCHES):
        names = ["gather.%d" % (k % SETS * PER_SET + j) for j in range(PER_SET)]
        out.append((names,) + random_points(RNG, PER_SET, POINTS, T0 + k * 4 * 10**9))
    return out


def test_gathered_equals_one_at_a_time():
    batches = make_batches()
    pg = PrivatePG()
    try:
        pg.sql("CREATE DATABASE gather_seq")
        seq_conninfo = pg.conninfo.replace("dbname=gpuagg", "dbname=gather_seq")
        assert seq_conninfo != pg.conninfo, pg.conninfo
        with IngestDaemon(conninfo=seq_conninfo, storage={"flush_interval_ms": 100},
                          extra=POLICY) as one:
            assert engine_running(one), one.logtext()[-3000:]
            for k, b in enumerate(batches):
                send_batch(one, k + 1, b)
                flush(one)
            st = one.stats()
            assert st["engine.batches"] == BATCHES and st["engine.feeds"] == BATCHES, st
            assert one.stop() == 0
        # the second daemon: its PostgreSQL down while the batches come
        subprocess.run(["sh", PG_PRIVATE, "stop", pg.dir], capture_output=True, timeout=60,
                       check=True)
        with IngestDaemon(conninfo=pg.conninfo, storage={"flush_interval_ms": 100},
                          extra=POLICY) as many:
            wait_for(lambda: many.call("status")["result"]["engine"]["state"] == "loading", 30)
            for k, b in enumerate(batches):
                send_batch(many, k + 1, b)
            r = subprocess.run(["sh", PG_PRIVATE, "start", pg.dir], capture_output=True,
                               text=True, timeout=120)
            assert r.returncode == 0, r.stderr
            assert engine_running(many), many.logtext()[-3000:]
            flush(many)
            st = many.stats()
            assert st["engine.batches"] == BATCHES, st
            # runs of 10 batches (the 11th repeats the first's metrics): 3
            # feeds; a few more if the engine took the queue while it filled
            assert 3 <= st["engine.feeds"] <= 6, st
            assert many.stop() == 0
        got, want = pg.sql(STORED_SQL), pg.sql(STORED_SQL, db="gather_seq")
        assert len(want) > 3000, len(want)
        assert any(r[3] == "window" for r in want if len(r) == 4), "no late point in the data"
        assert got == want, next((a, b) for a, b in zip(got, want) if a != b)
    finally:
        pg.stop()
