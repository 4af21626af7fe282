"""One bad row never blocks the others (docs/STORAGE.md "Rows the database
refuses"), against the real gpuaggd and a private PostgreSQL.

A CHECK constraint added by the test makes PostgreSQL refuse every bucket
row of one metric.  Points of that metric travel with points of other
metrics: `gpuaggctl flush` still succeeds, every other metric is stored,
the refused rows are in rejected_rows with the database's message,
`status` and `stats` show them, and a restart replays nothing into the same
wall.  The same run stores the highest accepted timestamp (2200-01-01,
GA_TS_MAX) and the nanosecond before it in archives of 1 s, 60 s, 1 h and
1 day, end to end."""
import os
import shutil
import tempfile
import time

import pytest

from inglib import (shared_suite, IngestDaemon, PrivatePG, engine_running, flush, friendly, rand_value,
                    rng_for, send_ack)

RNG = rng_for("bad_rows")
TS_MAX = 7258118400000000000            # 2200-01-01T00:00:00Z
GRANS = [1, 60, 3600, 86400]
POLICY = ("archive_policies:\n  - name: edge\n    back_window: 0\n    definition:\n" +
          "".join("      - { granularity: %ds, points: 1000 }\n" % g for g in GRANS) +
          "    aggregation_methods: [mean, count, last]\ndefault_archive_policy: edge\n")
GOOD = ["good.%d" % i for i in range(6)]


class S:
    pg = d = None
    tmp = None
    bad_id = None
    now = (int(time.time()) // 60) * 60 * 10**9


def daemon():
    # open_buckets_max 0: every bucket is a row of `buckets`, which the
    # constraint below guards (open buckets in blocks are not such rows:
    # docs/STORAGE.md "Open buckets"); max_future_s 0: the points at
    # 2200-01-01 are far ahead of the clock
    return IngestDaemon(conninfo=S.pg.conninfo,
                        storage={"flush_interval_ms": 200, "open_buckets_max": 0},
                        limits={"max_future_s": 0}, extra=POLICY, tmp=S.tmp)


def running(d):
    return engine_running(d, 30)


def send(d, seq, entries):
    return send_ack(d, seq, friendly(seq, entries))


def setup():
    S.pg = PrivatePG()
    S.tmp = tempfile.mkdtemp(prefix="gabad-")
    S.d = daemon()
    S.d.start()
    assert running(S.d), S.d.logtext()[-3000:]
    # the metric to refuse gets its id first; then the constraint
    send(S.d, 1, [("bad.metric", [[S.now, 1.0]])])
    flush(S.d)
    S.bad_id = int(S.pg.sql("SELECT id FROM metrics WHERE name = 'bad.metric'")[0][0])
    S.pg.sql("DELETE FROM buckets WHERE metric = %d; ALTER TABLE buckets ADD CONSTRAINT "
             "refuse_bad CHECK (metric <> %d)" % (S.bad_id, S.bad_id))


def test_refused_metric_does_not_block_others():
    d = S.d
    ents = [("bad.metric", [[S.now + i * 10**9, rand_value(RNG)] for i in range(1, 6)])]
    for m in GOOD:
        ents.append((m, [[S.now + i * 10**9, rand_value(RNG)] for i in range(5)]))
    ents.append(("edge.max", [[TS_MAX - 1, 2.0], [TS_MAX, 3.0]]))
    send(d, 2, ents)
    flush(d)
    for m in GOOD:
        n = S.pg.sql("SELECT count(*) FROM buckets b JOIN metrics m ON m.id = b.metric "
                     "WHERE m.name = '%s' AND b.granularity = 1000000000" % m)
        assert n == [["5"]], (m, n)
    assert S.pg.sql("SELECT count(*) FROM buckets WHERE metric = %d" % S.bad_id) == [["0"]]
    rej = S.pg.sql("SELECT count(*), min(metric), max(metric), bool_and(error LIKE "
                   "'%%refuse_bad%%') FROM rejected_rows WHERE kind = 'bucket'")
    # 5 new 1 s buckets, the 60 s / 1 h / 1 day buckets, 3 methods each
    assert int(rej[0][0]) >= 5 * 3 and rej[0][1:] == [str(S.bad_id), str(S.bad_id), "t"], rej
    st = d.stats()
    assert st["storage.rows_rejected"] == int(rej[0][0]), (st, rej)
    assert st["storage.isolations"] >= 1, st
    stor = d.call("status")["result"]["storage"]
    assert stor["rows_rejected"] == int(rej[0][0]) and "refuse_bad" in stor["last_rejected"], stor
    assert "metric %d:" % S.bad_id in stor["last_rejected"], stor
    out = d.ctl("status").stdout
    assert "rows_rejected" in out and "refuse_bad" in out, out
    assert "storage_rows_rejected" in d.logtext()


def test_highest_timestamp_every_granularity():
    for g in GRANS:
        gns = g * 10**9
        rows = S.pg.sql("SELECT ts_ns, value FROM gpuagg_measures WHERE metric = 'edge.max' "
                        "AND method = 'last' AND granularity_ns = %d ORDER BY ts_ns" % gns)
        want = [[str(TS_MAX - gns), "2"], [str(TS_MAX), "3"]]
        assert rows == want, (g, rows, want)
    assert S.pg.sql("SELECT count(*) FROM buckets WHERE ts > %d" % TS_MAX) == [["0"]]


def test_restart_does_not_replay_into_the_wall():
    rc = S.d.stop(timeout=60)
    assert rc == 0, (rc, S.d.logtext()[-3000:])
    S.d = daemon()
    S.d.start()
    assert running(S.d), S.d.logtext()[-3000:]
    flush(S.d)
    st = S.d.stats()
    assert st["storage.isolations"] == 0 and st["storage.retries"] == 0, st
    # new points of the good metrics commit; the refused one is refused again
    send(S.d, 3, [(GOOD[0], [[S.now + 10 * 10**9, 1.5]]),
                  ("bad.metric", [[S.now + 10 * 10**9, 2.5]])])
    flush(S.d)
    n = S.pg.sql("SELECT count(*) FROM buckets b JOIN metrics m ON m.id = b.metric "
                 "WHERE m.name = '%s' AND b.granularity = 1000000000" % GOOD[0])
    assert n == [["6"]], n
    assert S.d.stats()["storage.isolations"] == 1, S.d.stats()
    lag = S.d.call("status")["result"]["storage"]["lag_journal_bytes"]
    assert lag == 0, S.d.call("status")


@pytest.fixture(scope="module", autouse=True)
def suite():
    """setup(): one daemon shared by the tests in order."""
    yield from shared_suite(S, setup, cleanup=lambda: S.tmp and not os.environ.get("GA_KEEP") and
                            shutil.rmtree(S.tmp, ignore_errors=True))
