"""Errors that say the right thing (proto/INGEST.md), against the real
gpuaggd: at the journal's cap (journal.max_bytes) ingest pauses reading
(counted in ingest.backpressure_pauses) and a batch that cannot get space
within a second is answered "busy"; a client of a draining daemon gets an
ESHUTDOWN error, not a reset; and a drain whose final commit cannot
complete (PostgreSQL gone) exits 1, so that systemd sees the failure."""
import signal
import subprocess
import time

from inglib import (EBUSY, Client, IngestDaemon, PrivatePG, columnar, wait_for)

NOW = (int(time.time()) // 60) * 60 * 10**9
ESHUTDOWN = -4107


def stats(d):
    return d.call("stats")["result"]


def big(seq, n=20000):
    ts = [NOW + i * 10**6 for i in range(n)]
    return columnar(seq, ["big.%d" % seq], ts, [float(i) for i in range(n)], counts=[n])


def test_journal_cap_answers_busy():
    # no PostgreSQL: nothing is ever released, the 2 MiB cap fills up
    with IngestDaemon(journal={"segment_bytes": "1MiB", "max_bytes": "2MiB"}) as d:
        c = Client(d)
        c.hello()
        got = None
        for seq in range(1, 20):
            c.send(big(seq))
            got = c.recv()
            if got["type"] != "ack":
                break
        assert got and got["type"] == "error" and got["code"] == EBUSY, got
        assert "busy" in got["message"] and "journal.max_bytes" in got["message"], got
        st = stats(d)
        assert st["ingest.backpressure_pauses"] >= 1, st
        assert st["pipeline.journal_full_busy"] >= 1 and st["journal.full_refusals"] >= 1, st


def test_drain_eshutdown_and_incomplete_stop_exit_1():
    pg = PrivatePG()
    try:
        d = IngestDaemon(conninfo=pg.conninfo, storage={"stop_timeout_ms": 1000,
                                                       "flush_interval_ms": 100})
        d.start()
        assert wait_for(lambda: d.call("status")["result"]["engine"]["state"] == "running", 30), \
            d.logtext()[-3000:]
        c = Client(d)
        c.hello()
        c.send(big(1, 100))
        assert c.recv()["type"] == "ack"
        pg.stop()                       # the final commit cannot happen
        c.send(big(2, 100))
        assert c.recv()["type"] == "ack"
        idle = Client(d)
        idle.hello()
        t0 = time.time()
        d.signal(signal.SIGTERM)
        for x in (idle, c):
            m = x.recv()
            assert m and m["type"] == "error" and m["code"] == ESHUTDOWN and \
                m["name"] == "ESHUTDOWN", m
            assert "shutting down" in m["message"], m
            assert x.recv() is None       # then an orderly EOF
        try:
            rc = d.proc.wait(60)
        except subprocess.TimeoutExpired:
            d.proc.kill()
            raise AssertionError("gpuaggd did not stop:\n" + d.logtext()[-3000:])
        assert rc == 1, (rc, d.logtext()[-3000:])
        assert time.time() - t0 < 30
        assert "storage_stop_incomplete" in d.logtext()
    finally:
        pg.stop()
