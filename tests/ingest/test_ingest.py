"""Ingest protocol v1 against the real gpuaggd (proto/INGEST.md): both
point forms and every timestamp form, acks and rejections, frame errors,
the hello and its token, framing across reads, pipelining, the limits
(max_frame, max_connections, idle timeout), a bounded fuzz over many
connections, and backpressure with a tiny journal and no PostgreSQL.

PostgreSQL is down throughout (batches are acknowledged once journaled);
tests/ingest/test_crash.py checks what reaches the database."""
import json
import msgpack
import os
import socket
import struct
import threading
import time

import pytest

from inglib import (EAUTH, EBUSY, EPROTO, ETIMEDOUT, ETOOBIG, Client, IngestDaemon,
                    columnar, friendly, rand_value, rfc3339, rng_for, wait_for)

RNG = rng_for("ingest")
TS0 = 1795273445123456789


def rand_points(n, start=TS0, step=10**9):
    ts0 = start + RNG.randrange(10**9)
    return [ts0 + i * step for i in range(n)], [rand_value(RNG) for _ in range(n)]


def stat(d, key):
    return d.stats()[key]


def test_friendly_timestamp_forms(d):
    c = Client(d)
    c.hello()
    ts, vs = rand_points(30)
    ents = [("fr.ns.%d" % RNG.randrange(10**6), [[t, v] for t, v in zip(ts[:10], vs[:10])]),
            ("fr.sec", [[t / 1e9, v] for t, v in zip(ts[10:20], vs[10:20])]),
            ("fr.rfc", [[rfc3339(t), v] for t, v in zip(ts[20:], vs[20:])]),
            ("fr.int", [[t, int(v) or 7] for t, v in zip(ts[:5], vs[:5])])]
    before = stat(d, "ingest.points_accepted")
    seq = 2**64 - 1                    # the whole uint64 range is echoed
    c.send(friendly(seq, ents))
    a = c.recv()
    assert a == {"type": "ack", "seq": seq, "accepted": 35, "rejected": []}, a
    assert wait_for(lambda: stat(d, "ingest.points_accepted") == before + 35), d.stats()
    c.close()


def test_friendly_rejections(d):
    """The reasons of INGEST.md §6, with their flat indexes."""
    c = Client(d)
    c.hello()
    v = [rand_value(RNG) for _ in range(12)]
    ents = [("cpu.util", [[1795273445.5, v[0]], ["2026-11-21T17:04:05+02:00", v[1]],
                          [-5, v[2]], [TS0, float("nan")], [TS0, "high"]]),
            ("", [[TS0, v[3]]]),
            ("ok", [[TS0, float("inf")], [2**63, v[4]], [float("nan"), v[5]], [TS0],
                    ["2026-11-21 15:04:05Z", v[6]], [None, v[7]], [TS0 + 1, v[8]]]),
            ("x" * 256, [[TS0, v[9]]]),
            ("bad\x01name", [[TS0, v[10]], [TS0 + 1, v[11]]])]
    c.send(friendly(9, ents))
    a = c.recv()
    want = [(2, "timestamp before 1970"), (3, "value is NaN"), (4, "value is not a number"),
            (5, "metric name empty"), (6, "value is infinite"),
            (7, "timestamp after 2200-01-01T00:00:00Z"), (8, "timestamp is not finite"),
            (9, "point is not a [timestamp, value] pair"),
            (10, "timestamp not RFC 3339: 2026-11-21 15:04:05Z"),
            (11, "timestamp is not an integer, float or string"),
            (13, "metric name longer than 255 bytes"),
            (14, "metric name contains U+0001 (C0 control) at byte 3"),
            (15, "metric name contains U+0001 (C0 control) at byte 3")]
    assert a["type"] == "ack" and a["seq"] == 9, a
    got = [(r["index"], r["reason"]) for r in a["rejected"]]
    assert got == want, got
    assert a["accepted"] == 3 and a["accepted"] + len(a["rejected"]) == 16, a
    c.close()


def test_columnar_index_and_counts(d):
    c = Client(d)
    c.hello()
    names = ["col.%d.%d" % (RNG.randrange(10**6), i) for i in range(7)]
    n = RNG.randrange(500, 3000)
    index = [RNG.randrange(len(names)) for _ in range(n)]
    ts, vs = rand_points(n)
    c.send(columnar(11, names, ts, vs, index=index))
    assert c.recv() == {"type": "ack", "seq": 11, "accepted": n, "rejected": []}
    counts = [RNG.randrange(0, 300) for _ in names]
    ts, vs = rand_points(sum(counts))
    c.send(columnar(12, names, ts, vs, counts=counts))
    assert c.recv() == {"type": "ack", "seq": 12, "accepted": sum(counts), "rejected": []}
    # Bad names and an index past the table: every point under them is listed.
    bad = msgpack.packb("ZZ")          # a str of invalid UTF-8, patched in below
    frame = columnar(13, ["good", "", "ZZ", "c\x7f"], [TS0 + i for i in range(6)],
                     [rand_value(RNG) for _ in range(6)], index=[0, 1, 2, 3, 9, 0])
    frame = frame.replace(bad, b"\xa2\xff\xfe", 1)
    c.send(frame)
    a = c.recv()
    got = [(r["index"], r["reason"]) for r in a["rejected"]]
    assert got == [(1, "metric name empty"), (2, "metric name not valid UTF-8 at byte 0"),
                   (3, "metric name contains U+007F (delete) at byte 1"),
                   (4, "metric index 9 out of range")], a
    assert a["accepted"] == 2, a
    c.close()


def test_pipelining_acks_in_order(d):
    c = Client(d)
    h = c.hello()
    assert h["max_inflight"] >= 1 and h["max_frame"] >= 1024, h
    seqs = RNG.sample(range(1, 2**40), 300)
    want, frames = [], []
    for s in seqs:
        n = RNG.randrange(1, 50)
        ts, vs = rand_points(n)
        if RNG.random() < 0.5:
            frames.append(columnar(s, ["pipe.%d" % (s % 5)], ts, vs, counts=[n]))
            want.append((s, n))
        else:
            vs[0] = float("nan")       # one rejection: accepted differs per batch
            frames.append(friendly(s, [("pipe.f", [[t, v] for t, v in zip(ts, vs)])]))
            want.append((s, n - 1))
    sender = threading.Thread(target=lambda: c.send(b"".join(frames)))
    sender.start()                     # all 300 in flight; the daemon reads as it can
    got = [c.recv() for _ in seqs]
    sender.join()
    assert [(a["seq"], a["accepted"]) for a in got] == want
    c.close()


def test_split_byte_by_byte(d):
    c = Client(tcp_port=d.tcp_port())
    data = msgpack.packb({"type": "hello", "version": 1, "client": "bytewise"})
    ts, vs = rand_points(5)
    data += columnar(1, ["split.a", "split.b"], ts, vs, counts=[2, 3])
    data += friendly(2, [("split.c", [[rfc3339(t), v] for t, v in zip(ts, vs)])])
    for i in range(len(data)):
        c.send(data[i:i + 1])
        time.sleep(0.0005)
    assert c.recv()["type"] == "hello"
    assert c.recv() == {"type": "ack", "seq": 1, "accepted": 5, "rejected": []}
    assert c.recv() == {"type": "ack", "seq": 2, "accepted": 5, "rejected": []}
    c.close()


def test_malformed_closes_only_that_connection(d):
    a, b, e = Client(d), Client(d), Client(d)
    a.hello(), b.hello(), e.hello()
    errors = stat(d, "ingest.protocol_errors")
    # Stream level: the unused type byte 0xc1 inside a map.
    a.send(b"\x82\xa4type\xa6points\xc1")
    msgs = a.expect_eof()
    assert len(msgs) == 1 and msgs[0]["type"] == "error" and msgs[0]["code"] == EPROTO, msgs
    assert msgs[0]["name"] == "EPROTO" and "0xc1" in msgs[0]["message"], msgs
    # Message level, between two good batches: ack 1, error naming 'ts' with seq 2, close.
    ts, vs = rand_points(4)
    good = columnar(1, ["mal.a"], ts, vs, counts=[4])
    badf = msgpack.packb({"type": "points", "seq": 2, "names": ["mal.a"],
                          "index": struct.pack("<4I", 0, 0, 0, 0),
                          "ts": struct.pack("<3q", *ts[:3]), "values": struct.pack("<4d", *vs)})
    e.send(good + badf + columnar(3, ["mal.a"], ts, vs, counts=[4]))
    msgs = e.expect_eof()
    assert msgs[0] == {"type": "ack", "seq": 1, "accepted": 4, "rejected": []}, msgs
    assert len(msgs) == 2 and msgs[1]["code"] == EPROTO and msgs[1]["seq"] == 2, msgs
    assert msgs[1]["message"] == "points: 'ts' is 24 bytes, expected 8 \u00d7 4 points", msgs
    # The third connection never noticed.
    b.send(columnar(77, ["mal.b"], ts, vs, counts=[4]))
    assert b.recv() == {"type": "ack", "seq": 77, "accepted": 4, "rejected": []}
    assert stat(d, "ingest.protocol_errors") >= errors + 2
    for x in (a, b, e):
        x.close()


def test_first_message_not_hello(d):
    c = Client(d)
    ts, vs = rand_points(3)
    c.send(columnar(1, ["nohello"], ts, vs, counts=[3]))
    msgs = c.expect_eof()
    assert len(msgs) == 1 and msgs[0]["code"] == EPROTO, msgs
    assert "first message must be a client 'hello'" in msgs[0]["message"], msgs
    c = Client(d)
    c.send_obj({"type": "hello", "version": 2, "client": "future"})
    msgs = c.expect_eof()
    assert len(msgs) == 1 and msgs[0]["code"] == EPROTO and "version 2" in msgs[0]["message"], msgs
    # After the hello, another hello is refused too.
    c = Client(d)
    c.hello()
    c.send_obj({"type": "hello", "version": 1, "client": "again"})
    msgs = c.expect_eof()
    assert len(msgs) == 1 and msgs[0]["code"] == EPROTO and "'points'" in msgs[0]["message"], msgs


def test_fuzz_many_connections(d):
    errors = stat(d, "ingest.protocol_errors")
    for _ in range(4):                 # 4 rounds of 50 connections at once
        conns = []
        for _ in range(50):
            c = Client(d, timeout=10)
            conns.append(c)
        for c in conns:
            try:
                c.send(fuzz_input(RNG))
                c.s.shutdown(socket.SHUT_WR)
            except OSError:            # the daemon already closed it
                pass
        for c in conns:
            try:
                c.expect_eof(timeout=10)   # every one gets closed, none hangs
            except (msgpack.ExtraData, msgpack.FormatError, msgpack.StackError, ValueError):
                pass                       # it echoes nothing malformed, but be lenient to our reader
            c.close()
        assert d.proc.poll() is None, d.logtext()[-2000:]
    assert stat(d, "ingest.protocol_errors") > errors
    assert wait_for(lambda: stat(d, "ingest.connections_open") == 0), d.stats()
    c = Client(d)
    c.hello()
    ts, vs = rand_points(10)
    c.send(columnar(1234, ["after.fuzz"], ts, vs, counts=[10]))
    assert c.recv() == {"type": "ack", "seq": 1234, "accepted": 10, "rejected": []}


def test_drain_exits_1_with_batches_only_journaled(d):
    """Acknowledged batches that never reached PostgreSQL stay in the
    journal: the drain ends promptly and exits 1 (docs/gpuaggd.8)."""
    assert d.proc.poll() is None, d.logtext()[-2000:]
    assert d.stop() == 1, d.logtext()[-2000:]
    assert "event=stop_uncommitted" in d.logtext(), d.logtext()[-2000:]


def test_tcp_token():
    token = "tok-%08x" % RNG.randrange(2**32)
    with IngestDaemon(listen={"token": '"%s"' % token}) as d:
        port = d.tcp_port()
        for sent, text in ((None, "token required"), (token + "x", "wrong token"),
                           ("", "wrong token")):
            c = Client(tcp_port=port)
            h = {"type": "hello", "version": 1, "client": "t"}
            if sent is not None:
                h["token"] = sent
            c.send_obj(h)
            msgs = c.expect_eof()
            assert len(msgs) == 1 and msgs[0]["code"] == EAUTH and msgs[0]["name"] == "EAUTH", msgs
            assert text in msgs[0]["message"], (sent, msgs)
        c = Client(tcp_port=port)
        c.hello(token=token)
        ts, vs = rand_points(3)
        c.send(columnar(5, ["tok.a"], ts, vs, counts=[3]))
        assert c.recv()["accepted"] == 3
        u = Client(d)                  # Unix sockets rely on file permissions
        u.hello()
        assert stat(d, "ingest.auth_failures") == 3


def test_max_frame_etoobig():
    with IngestDaemon(limits={"max_frame_bytes": "4KiB", "conn_buffer_bytes": "64KiB"}) as d:
        c = Client(d)
        assert c.hello()["max_frame"] == 4096
        ts, vs = rand_points(400)      # 400 * 16 bytes: over 4 KiB
        c.send(columnar(1, ["big"], ts, vs, counts=[400]))
        msgs = c.expect_eof()
        assert len(msgs) == 1 and msgs[0]["code"] == ETOOBIG, msgs
        assert "max_frame" in msgs[0]["message"], msgs
        # A bin32 header declaring 1 GiB fails before its body arrives.
        c = Client(d)
        c.hello()
        c.send(b"\x83\xa4type\xa6points\xa3seq\x01\xa5names\x91\xc6\x40\x00\x00\x00")
        msgs = c.expect_eof(timeout=5)
        assert len(msgs) == 1 and msgs[0]["code"] == ETOOBIG, msgs
        ok = Client(d)
        ok.hello()
        ts, vs = rand_points(100)
        ok.send(columnar(2, ["small"], ts, vs, counts=[100]))
        assert ok.recv()["accepted"] == 100


def fuzz_input(rng):
    """Random bytes, a truncated valid stream, or a mutated one."""
    ts, vs = [TS0 + i for i in range(20)], [rand_value(rng) for _ in range(20)]
    hello = msgpack.packb({"type": "hello", "version": 1, "client": "fuzz"})
    pts = rng.choice([columnar(1, ["fz.a", "fz.b"], ts, vs, counts=[5, 15]),
                      columnar(1, ["fz.a"], ts, vs, index=[0] * 20),
                      friendly(1, [("fz.c", [[t, v] for t, v in zip(ts, vs)])])])
    kind = rng.randrange(5)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 2000)))
    if kind == 1:
        stream = hello + pts
        return stream[:rng.randrange(1, len(stream))]
    if kind == 2:                      # a good hello, then random bytes
        return hello + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 500)))
    if kind == 3:                      # deep nesting
        return hello + b"\x91" * rng.randrange(20, 5000) + b"\x00"
    data = bytearray(hello + pts)      # mutated: flips, inserts, deletions
    for _ in range(rng.randrange(1, 8)):
        i = rng.randrange(len(data))
        op = rng.randrange(3)
        if op == 0:
            data[i] = rng.randrange(256)
        elif op == 1:
            data[i:i] = bytes([rng.randrange(256)])
        elif len(data) > 1:
            del data[i]
    return bytes(data)


def test_max_connections_ebusy():
    with IngestDaemon(limits={"max_connections": 3}) as d:
        held = [Client(d) for _ in range(3)]
        for c in held:
            c.hello()
        extra = Client(d)
        msgs = extra.expect_eof()
        assert len(msgs) == 1 and msgs[0]["code"] == EBUSY and msgs[0]["name"] == "EBUSY", msgs
        assert stat(d, "ingest.connections_refused") == 1
        held.pop().close()
        assert wait_for(lambda: stat(d, "ingest.connections_open") == 2)
        c = Client(d)
        c.hello()
        ts, vs = rand_points(3)
        c.send(columnar(1, ["conn.a"], ts, vs, counts=[3]))
        assert c.recv()["accepted"] == 3


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_idle_timeout():
    with IngestDaemon(limits={"idle_timeout_s": 1}) as d:
        idle, busy = Client(d), Client(d)
        idle.hello(), busy.hello()
        t0 = time.time()
        for i in range(6):             # busy sends every 0.4 s for 2.4 s
            ts, vs = rand_points(2)
            busy.send(columnar(i, ["idle.b"], ts, vs, counts=[2]))
            assert busy.recv()["seq"] == i
            time.sleep(0.4)
        msgs = idle.expect_eof(timeout=5)
        assert time.time() - t0 < 6
        assert len(msgs) == 1 and msgs[0]["code"] == ETIMEDOUT, msgs
        assert "idle_timeout_s" in msgs[0]["message"], msgs
        assert stat(d, "ingest.idle_timeouts") == 1
        ts, vs = rand_points(2)
        busy.send(columnar(9, ["idle.b"], ts, vs, counts=[2]))
        assert busy.recv()["seq"] == 9


def test_backpressure_bounded_memory():
    """journal.max_bytes 2 MiB, PostgreSQL unreachable: the journal fills,
    acks stop, reading stops, memory stays put while three clients push."""
    with IngestDaemon(journal={"segment_bytes": "1MiB", "max_bytes": "2MiB"},
                      limits={"queue_batches": 8}) as d:
        acks, stop = [0], threading.Event()
        frame_pts = 4000               # ~100 KB a batch

        def client(k):
            c = Client(d, timeout=None)
            c.hello()
            c.s.settimeout(None)

            def reader():
                while c.recv() is not None:
                    acks[0] += 1
            threading.Thread(target=reader, daemon=True).start()
            seq = 0
            try:
                while not stop.is_set():
                    seq += 1
                    ts, vs = rand_points(frame_pts, start=TS0 + seq * 10**13)
                    c.send(columnar(seq, ["bp.%d" % k], ts, vs, counts=[frame_pts]))
            except OSError:
                pass

        threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(3)]
        for t in threads:
            t.start()

        def settled():                 # no ack for 1.5 s
            n = acks[0]
            time.sleep(1.5)
            return acks[0] == n and n > 0
        assert wait_for(settled, timeout=30, step=0), (acks, d.stats())
        rss0 = rss_kib(d.proc.pid)
        n0 = acks[0]
        time.sleep(3)                  # the clients keep pushing
        rss1 = rss_kib(d.proc.pid)
        assert acks[0] == n0, (n0, acks[0])
        assert n0 * frame_pts * 20 < 4 * 2**20, n0     # acked bytes fit the 2 MiB journal
        assert rss1 - rss0 < 32 * 1024, (rss0, rss1)
        r = d.ctl("--json", "stats")
        assert r.returncode == 0, r
        st = json.loads(r.stdout)
        assert st["journal.full_refusals"] > 0 and st["pipeline.journal_full_waits"] > 0, st
        assert st["ingest.backpressure_active"] == 1 and st["ingest.backpressure_pauses"] >= 1, st
        assert st["journal.retained_bytes"] <= 2 * 2**20, st
        stop.set()
        # what was acknowledged is in the journal only: the drain says so
        assert d.stop(timeout=20) == 1, d.logtext()[-2000:]
        assert "event=stop_uncommitted" in d.logtext()


@pytest.fixture(scope="module")
def d():
    """One daemon shared, in order, by the tests that take it; the last of
    them drains it."""
    with IngestDaemon() as daemon:
        yield daemon
