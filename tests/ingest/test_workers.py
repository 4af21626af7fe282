"""Partition workers (engine.workers, docs/ARCHITECTURE.md): what is stored
does not depend on how many workers share the partitions.

The same batches go to two daemons on two databases of one private
PostgreSQL: one with a single worker, one with four, restarted with three
for a second round (every partition moves to another worker, whose writers
resume from the partition's own positions).  The policy has the
batch-sensitive methods (rate:, a percentile, std, back_window 1) and some
points come out of order or too old: the stored buckets, late points and
point counts of both databases must be equal.  Also: status shows each
worker's share, every worker took points, and a metric whose partition
belongs to one worker is flushed (the others' positions move with skip
entries) and lets the journal go."""
import time

from inglib import (STORED_SQL, IngestDaemon, PrivatePG, batch_sensitive_policy,
                    engine_running, flush, random_points, rng_for, send_batch, wait_for)

RNG = rng_for("workers")
POLICY = batch_sensitive_policy("lanes")
METRICS, PER_BATCH, POINTS = 400, 100, 3
T0 = (int(time.time()) // 600 - 1) * 600 * 10**9   # recent: retention keeps it


def make_batches(n, first):
    out = []
    for k in range(first, first + n):
        names = ["lanes.%d" % ((k * 37 + j) % METRICS) for j in range(PER_BATCH)]
        out.append((names,) + random_points(RNG, PER_BATCH, POINTS, T0 + k * 4 * 10**9))
    return out


def daemon(conninfo, workers):
    return IngestDaemon(conninfo=conninfo, storage={"flush_interval_ms": 100,
                                                    "window_snapshot_s": 10},
                        extra=POLICY + "engine: { workers: %d }\n" % workers)


def feed(d, batches, first_seq):
    assert engine_running(d), d.logtext()[-3000:]
    for k, b in enumerate(batches):
        send_batch(d, first_seq + k, b)
    flush(d)


def test_stored_equal_whatever_the_workers():
    round1, round2 = make_batches(40, 0), make_batches(40, 40)
    pg = PrivatePG()
    try:
        pg.sql("CREATE DATABASE lanes_one")
        one_conninfo = pg.conninfo.replace("dbname=gpuagg", "dbname=lanes_one")
        assert one_conninfo != pg.conninfo, pg.conninfo
        with daemon(one_conninfo, 1) as one:
            feed(one, round1 + round2, 1)
            assert one.call("status")["result"]["engine"]["workers"] == 1
            assert one.stop() == 0
        with daemon(pg.conninfo, 4) as four:
            feed(four, round1, 1)
            eng = four.call("status")["result"]["engine"]
            assert eng["workers"] == 4 and [w["partitions"] for w in eng["worker"]] == [16] * 4, eng
            assert all(w["points"] > 0 and w["state"] == "running" for w in eng["worker"]), eng
            assert sum(w["metrics"] for w in eng["worker"]) == eng["metrics"] == METRICS, eng
            # each worker numbers its own metrics from 0: no slots for the others'
            assert all(w["metric_slots"] == w["metrics"] for w in eng["worker"]), eng
            assert sum(w["points"] for w in eng["worker"]) == eng["points"], eng
            assert four.stop() == 0
        with daemon(pg.conninfo, 3) as three:       # every partition to another worker
            feed(three, round2, 41)
            eng = three.call("status")["result"]["engine"]
            assert [w["partitions"] for w in eng["worker"]] == [22, 21, 21], eng
            assert eng["metrics"] == METRICS, eng
            assert all(w["metric_slots"] == w["metrics"] for w in eng["worker"]), eng
            assert three.stop() == 0
        got, want = pg.sql(STORED_SQL), pg.sql(STORED_SQL, db="lanes_one")
        assert len(want) > 3000, len(want)
        assert any(r[3] == "window" for r in want if len(r) == 4), "no late point in the data"
        assert got == want, next((a, b) for a, b in zip(got, want) if a != b)
    finally:
        pg.stop()


def test_one_partition_flushes_and_releases():
    """Every point of one metric: one worker aggregates, the other three
    only move past the records; flush answers and the journal lets go."""
    pg = PrivatePG()
    try:
        with daemon(pg.conninfo, 4) as d:
            assert engine_running(d), d.logtext()[-3000:]
            for k in range(50):
                ts = [T0 + (k * 1000 + i) * 10**9 for i in range(1000)]
                send_batch(d, k + 1, (["lanes.only"], [0] * 1000, ts, [float(i) for i in range(1000)]))
            held = d.stats()["journal.retained_bytes"]
            assert held > 500000, held
            flush(d)
            eng = d.call("status")["result"]["engine"]
            assert sorted(w["points"] for w in eng["worker"]) == [0, 0, 0, 50000], eng
            assert len({w["processed_lsn"] for w in eng["worker"]}) == 1, eng
            # every worker committed a window set at the flush: the journal
            # is released below the lowest of them
            assert wait_for(lambda: d.stats()["journal.retained_bytes"] < held // 4, 20), \
                (held, d.stats()["journal.retained_bytes"])
            n = pg.sql("SELECT sum(value) FROM gpuagg_measures WHERE metric = 'lanes.only' "
                       "AND method = 'count' AND granularity_ns = 1000000000")
            assert n == [["50000"]], n
            assert d.stop() == 0
    finally:
        pg.stop()
