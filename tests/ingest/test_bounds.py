"""Bounds at the ingest door (proto/INGEST.md; etc/gpuaggd.yaml limits),
against the real gpuaggd: a connection never has more than max_inflight
batches taken unacknowledged, whatever it pipelines; one peer (a uid on the
unix socket, an address over TCP) cannot take more than
limits.max_connections_per_peer connections; an oversize frame and a frame
nested too deep get their own messages."""
import time

import msgpack

from inglib import ETOOBIG, EBUSY, Client, IngestDaemon, friendly, wait_for

NOW = (int(time.time()) // 60) * 60 * 10**9


def stats(d):
    return d.call("stats")["result"]


def test_max_inflight_enforced():
    # acks wait for an fsync at most once a second: only max_inflight
    # batches may be taken meanwhile, however many are pipelined
    with IngestDaemon(limits={"queue_batches": 4},
                      journal={"fsync_interval_ms": 1000}) as d:
        c = Client(d)
        assert c.hello()["max_inflight"] == 4
        before = stats(d)["ingest.frames"]
        c.send(b"".join(friendly(i, [("infl.%d" % i, [[NOW, float(i)]])]) for i in range(1, 41)))
        time.sleep(0.5)
        st = stats(d)
        taken = st["ingest.frames"] - before
        assert 1 <= taken <= 8, (taken, st)
        assert st["ingest.inflight_waits"] >= 1, st
        for i in range(1, 9):           # in order, every one acked
            a = c.recv()
            assert a["type"] == "ack" and a["seq"] == i and a["accepted"] == 1, a
        c.close()


def test_max_connections_per_peer():
    with IngestDaemon(limits={"max_connections_per_peer": 2}) as d:
        for mk in (lambda: Client(d), lambda: Client(tcp_port=d.tcp_port())):
            held = [mk() for _ in range(2)]
            for c in held:
                c.hello()
            extra = mk()
            msgs = extra.expect_eof()
            assert len(msgs) == 1 and msgs[0]["code"] == EBUSY, msgs
            assert "max_connections_per_peer" in msgs[0]["message"], msgs
            held.pop().close()
            assert wait_for(lambda: stats(d)["ingest.connections_open"] == 1)
            c = mk()
            c.hello()
            c.send(friendly(1, [("peer.a", [[NOW, 1.0]])]))
            assert c.recv()["accepted"] == 1
            for x in held + [c]:
                x.close()
            assert wait_for(lambda: stats(d)["ingest.connections_open"] == 0)
        assert stats(d)["ingest.connections_refused_peer"] == 2


def test_max_metrics_at_the_door():
    with IngestDaemon(limits={"max_metrics": 3}) as d:
        c = Client(d)
        c.hello()
        # flat indexes: a0 a1(bad ts) b2 c3 d4 d5 a6 e7
        c.send(friendly(1, [("mm.a", [[NOW, 1.0], [-5, 2.0]]), ("mm.b", [[NOW, 3.0]]),
                            ("mm.c", [[NOW, 4.0]]), ("mm.d", [[NOW, 5.0], [NOW + 1, 6.0]]),
                            ("mm.a", [[NOW + 2, 7.0]]), ("mm.e", [[NOW, 8.0]])]))
        a = c.recv()
        too_many = "too many metrics (limits.max_metrics = 3): new metric refused"
        assert a["type"] == "ack" and a["accepted"] == 4, a
        got = [(r["index"], r["reason"]) for r in a["rejected"]]
        assert got == [(1, "timestamp before 1970"), (4, too_many), (5, too_many),
                       (7, too_many)], got
        # known metrics keep being served, new ones are refused
        c.send(friendly(2, [("mm.f", [[NOW, 1.0]]), ("mm.b", [[NOW + 5, 2.0]])]))
        a = c.recv()
        assert a["accepted"] == 1 and [r["index"] for r in a["rejected"]] == [0], a
        st = stats(d)
        assert st["ingest.metrics_refused"] == 4 and st["ingest.metrics_admitted"] == 3, st
        # a reload raises the bound
        with open(d.cfg) as f:
            text = f.read()
        d.write_config(text.replace("max_metrics: 3", "max_metrics: 4"))
        r = d.ctl("reload")
        assert r.returncode == 0, r
        c.send(friendly(3, [("mm.f", [[NOW, 1.0]]), ("mm.g", [[NOW, 2.0]])]))
        a = c.recv()
        assert a["accepted"] == 1 and [r["index"] for r in a["rejected"]] == [1], a
        c.close()


def test_oversize_and_deep_frames_told_apart():
    with IngestDaemon(limits={"max_frame_bytes": "4KiB", "conn_buffer_bytes": "64KiB"}) as d:
        c = Client(d)
        c.hello()
        deep = b"\x91" * 40 + b"\x00"
        c.send(deep)
        msgs = c.expect_eof()
        assert len(msgs) == 1 and msgs[0]["code"] == ETOOBIG, msgs
        assert msgs[0]["message"] == "frame: nested deeper than 32 levels", msgs
        c = Client(d)
        c.hello()
        c.send(msgpack.packb({"type": "points", "seq": 1, "pad": b"x" * 5000}, use_bin_type=True))
        msgs = c.expect_eof()
        assert len(msgs) == 1 and msgs[0]["code"] == ETOOBIG, msgs
        m = msgs[0]["message"]
        assert m.startswith("frame: ") and "at most 4096 (max_frame)" in m and "deeper" not in m, m
