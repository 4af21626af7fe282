"""Open buckets packed into blocks (docs/STORAGE.md "Open buckets") store
what rows of `buckets` store, bit for bit.

The same batches go to three daemons on three databases of one private
PostgreSQL:
  rows    storage.open_buckets_max 0: every bucket a row of `buckets`;
  blocks  every bucket a row for the first batches (open_buckets_max 0),
          then the default: the open buckets in blocks, metrics stored
          before given a block by an update of their row; killed (kill -9)
          twice, restarted with another number of writers each time
          (partitions change writers, which load their blocks);
  capped  open_buckets_max 60: some pairs in blocks, the rest rows.
The policy has three archives (1 s buckets close at almost every point,
10 s ones every few, 600 s ones stay open), rate: and percentile methods
(a bucket's method set grows and is merged) and back_window 1 with points
out of order (older buckets rewritten as rows).  bucket_rows, late points,
point counts and the gpuagg_measures view must be equal, and the blocks
must have been used: buckets opened, rewritten in place, closed into
`buckets`, and held across the restarts."""
import signal
import tempfile
import time

from inglib import (STORED_SQL, IngestDaemon, PrivatePG, engine_running, flush, rand_value,
                    rng_for, send_batch, wait_for)

RNG = rng_for("open_blocks")
POLICY = ("archive_policies:\n  - name: blocks\n    back_window: 1\n    definition:\n"
          "      - { granularity: 1s, points: 100000 }\n"
          "      - { granularity: 10s, points: 10000 }\n"
          "      - { granularity: 600s, points: 1000 }\n"
          "    aggregation_methods: [mean, count, std, 90pct, last, rate:mean]\n"
          "default_archive_policy: blocks\n")
METRICS, BATCHES = 60, 40
T0 = (int(time.time()) // 600 - 1) * 600 * 10**9   # on a 600 s boundary, recent (retention)
MEASURES_SQL = ("SELECT metric, method, granularity_ns, ts_ns, value FROM gpuagg_measures "
                "ORDER BY 1, 2, 3, 4")


def make_batches():
    names = ["ob.%d" % j for j in range(METRICS)]
    out = []
    for k in range(BATCHES):
        index, ts, vals = [], [], []
        for j in range(METRICS):
            if RNG.random() < 0.2:
                continue                          # a metric silent this batch
            for _ in range(RNG.randrange(1, 4)):
                t = T0 + k * 2 * 10**9 + RNG.randrange(0, 2 * 10**9)
                r = RNG.random()
                if r < 0.05:
                    t -= 12 * 10**9               # an older bucket, within back_window
                elif r < 0.07:
                    t -= 1800 * 10**9             # before the window: late
                index.append(j)
                ts.append(t)
                vals.append(rand_value(RNG))
        out.append((names, index, ts, vals))
    return out


def daemon(conninfo, tmp=None, **storage):
    st = {"flush_interval_ms": 100, "window_snapshot_s": 10}
    st.update(storage)
    return IngestDaemon(conninfo=conninfo, storage=st, extra=POLICY, tmp=tmp)


def straight(pg, db, batches, **storage):
    pg.sql("CREATE DATABASE %s" % db)
    conninfo = pg.conninfo.replace("dbname=gpuagg", "dbname=" + db)
    assert conninfo != pg.conninfo, pg.conninfo
    with daemon(conninfo, **storage) as d:
        assert engine_running(d), d.logtext()[-3000:]
        for k, b in enumerate(batches):
            send_batch(d, k + 1, b)
            if k % 4 == 3:
                flush(d)
        flush(d)
        st = d.stats()
        assert d.stop() == 0
    return st


def test_blocks_store_what_rows_store():
    batches = make_batches()
    pg = PrivatePG()
    try:
        rows = straight(pg, "ob_rows", batches, open_buckets_max=0)
        assert rows["storage.open_written"] == 0 and rows["storage.open_buckets"] == 0, rows
        capped = straight(pg, "ob_capped", batches, open_buckets_max=60)
        assert 0 < capped["storage.open_buckets"] <= 60, capped
        assert capped["storage.open_full"] > 0, capped

        tmp = tempfile.mkdtemp(prefix="gaob-")
        runs = [{"writers": 4, "open_buckets_max": 0}, {"writers": 3}, {"writers": 1}]
        d = daemon(pg.conninfo, tmp, **runs.pop(0))
        d.start()
        held = []
        try:
            assert engine_running(d), d.logtext()[-3000:]
            for k, b in enumerate(batches):
                send_batch(d, k + 1, b)
                if k % 4 == 3:
                    flush(d)
                if k in (17, 29):
                    held.append(int(pg.sql("SELECT count(*) FROM open_blocks o, "
                                           "unnest(o.metrics) m")[0][0]))
                    d.proc.send_signal(signal.SIGKILL)
                    d.proc.wait()
                    d = daemon(pg.conninfo, tmp, **runs.pop(0))
                    d.start()
                    assert engine_running(d), d.logtext()[-3000:]
                    # the blocks are loaded (entries only ever get added)
                    assert wait_for(lambda: d.stats()["storage.open_buckets"] >= held[-1], 30), \
                        (d.stats(), held)
            flush(d)
            st = d.stats()
            assert d.stop() == 0
        finally:
            if d.proc and d.proc.poll() is None:
                d.proc.kill()
        assert held[0] == 0 and held[1] > 0, held     # rows only, then blocks
        # the 1 s and 10 s pairs of the 60 metrics moved to blocks with their
        # next bucket; the 600 s buckets, rows from the first run, stay open
        # rows: no newer bucket of theirs starts in the 80 s of data
        assert int(pg.sql("SELECT count(*) FROM open_blocks o, unnest(o.metrics) m")[0][0]) == \
            2 * METRICS
        assert st["storage.open_written"] > 0 and st["storage.open_closed"] > 0, st
        assert int(pg.sql("SELECT count(*) FROM metrics WHERE open_block IS NULL")[0][0]) == 0
        want = pg.sql(STORED_SQL, db="ob_rows")
        assert len(want) > 2000, len(want)
        assert any(r[3] == "window" for r in want if len(r) == 4), "no late point in the data"
        for db in ("gpuagg", "ob_capped"):
            got = pg.sql(STORED_SQL, db=db)
            assert got == want, (db, next((a, b) for a, b in zip(got, want) if a != b))
            assert pg.sql(MEASURES_SQL, db=db) == pg.sql(MEASURES_SQL, db="ob_rows"), db
        # a bucket is in one place: no block entry is also a row of buckets
        assert pg.sql("SELECT count(*) FROM open_blocks o, unnest(o.metrics, o.grans, o.tss) "
                      "u(m, g, t) JOIN buckets b ON (b.metric, b.granularity, b.ts) = "
                      "(u.m, u.g, u.t)") == [["0"]]
    finally:
        pg.stop()
