"""Ceilometer's real UDPPublisher against gpuaggd's UDP listener
(listen.udp, listen.telemetry_secret), with a private PostgreSQL.

Samples signed with the daemon's secret are accepted and reach the
aggregates as metric resource_id/counter_name with the policy the shipped
rules give ("*/cpu" → ceilometer-low-rate, others → ceilometer-low);
samples signed with another secret, unsigned ones and garbage datagrams are
rejected and counted by reason (gpuaggctl --json stats: udp.*) and leave no
trace in the database.  The publisher comes from tests/ceilometer/
gen_vectors.py (python3-ceilometer; skipped with the reason when it is not installed)."""
import datetime
import json
import os
import socket
import sys
import time

import pytest

from inglib import IngestDaemon, PrivatePG, rng_for, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ceilometer"))
import gen_vectors  # noqa: E402

RNG = rng_for("ceilometer_udp")
FIVE_MIN = 300


def samples_for(rid, name, ctype, t0, volumes):
    from ceilometer import sample
    out = []
    for i, v in enumerate(volumes):
        ts = datetime.datetime.fromtimestamp(t0 + 60 * i, datetime.timezone.utc)
        out.append(sample.Sample(name=name, type=ctype, unit="ns", volume=v, user_id="u1",
                                 project_id="p1", resource_id=rid, timestamp=ts.isoformat(),
                                 resource_metadata={"flavor": {"name": "m1.tiny"}, "n": i},
                                 source="openstack"))
    return out


def test_publisher_signed_forged_unsigned():
    why = gen_vectors.find_ceilometer()
    if why:
        pytest.skip(why)
    secret = "udp-secret-%08x" % RNG.randrange(2**32)
    pg = PrivatePG()
    d = IngestDaemon(conninfo=pg.conninfo, listen={"telemetry_secret": '"%s"' % secret})
    try:
        d.start()
        port = d.udp_port()
        assert port > 0, d.ingest_status()
        # A whole 5-minute bucket a few hours back, on each good metric.
        t0 = (int(time.time()) // FIVE_MIN - 24) * FIVE_MIN
        good, want = [], {}
        for k in range(6):
            rid = "inst-%06x" % RNG.randrange(2**24)
            name, ctype = ("cpu", "cumulative") if k % 2 == 0 else ("memory.usage", "gauge")
            vols = [RNG.uniform(1, 1e6) for _ in range(4)]
            if ctype == "cumulative":
                vols = sorted(vols)
            good += samples_for(rid, name, ctype, t0, vols)
            want["%s/%s" % (rid, name)] = (sum(vols) / len(vols),
                                          "ceilometer-low-rate" if name == "cpu" else "ceilometer-low")
        forged = samples_for("forged-%06x" % RNG.randrange(2**24), "cpu", "cumulative", t0,
                             [RNG.uniform(1, 100) for _ in range(5)])
        unsigned = samples_for("unsigned-%06x" % RNG.randrange(2**24), "cpu", "cumulative", t0,
                               [RNG.uniform(1, 100) for _ in range(3)])
        signed_pub = gen_vectors.make_publisher(secret, port)
        for s in good:
            signed_pub.publish_samples([s])
            time.sleep(0.002)
        gen_vectors.make_publisher(secret + "x", port).publish_samples(forged)
        gen_vectors.make_publisher("", port).publish_samples(unsigned)
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        # 0xc1 (a type byte msgpack never uses) first: random bytes after it
        # cannot decode as an object of another kind (a fixint, a fixmap),
        # which is what a seed of 554586373 once sent.
        garbage = [b"\xc1" + bytes(RNG.randrange(256) for _ in range(RNG.randrange(1, 200)))
                   for _ in range(4)]
        for g in garbage:
            u.sendto(g, ("127.0.0.1", port))
        total = len(good) + len(forged) + len(unsigned) + len(garbage)

        def udp_stats():
            r = d.ctl("--json", "stats")
            assert r.returncode == 0, r
            st = json.loads(r.stdout)
            done = st["udp.accepted"] + sum(v for k, v in st.items() if k.startswith("udp.rejected."))
            return st if done >= total else None   # datagrams are counted before they are decoded
        st = wait_for(udp_stats, timeout=15)
        assert st, d.stats()
        assert st["udp.datagrams"] == total, st
        assert st["udp.accepted"] == len(good), st
        assert st["udp.rejected.bad_signature"] == len(forged), st
        assert st["udp.rejected.unsigned"] == len(unsigned), st   # empty message_signature
        assert st["udp.rejected.not_msgpack"] == len(garbage), st
        assert st["udp.dropped_backpressure"] == 0, st
        # a fresh journal is numbered from the clock: the lag counts from its start
        assert st["storage.lag_journal_bytes"] <= st["journal.bytes_written"], st
        assert d.stop(timeout=60) == 0, d.logtext()[-2000:]

        pol = dict(pg.sql("SELECT name, policy FROM metrics"))
        assert {n: p for n, p in pol.items()} == {n: w[1] for n, w in want.items()}, pol
        rows = pg.sql("SELECT metric, method, ts_ns, value FROM gpuagg_measures "
                      "WHERE granularity_s = %d" % FIVE_MIN)
        got = {}
        for m, method, ts, v in rows:
            got[(m, method)] = (int(ts), float(v))
        for name, (mean, policy) in want.items():
            ts, v = got[(name, "mean")]
            assert ts == t0 * 10**9 and abs(v - mean) <= 1e-9 * abs(mean), (name, ts, v, mean)
            assert ((name, "rate:mean") in got) == (policy == "ceilometer-low-rate"), (name, got)
        assert not any(m.startswith(("forged-", "unsigned-")) for m, _ in got)
    finally:
        if d.proc and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
        pg.stop()
