"""/metrics, /healthz and /readyz on the HTTP listener, against the real
gpuaggd: /metrics parsed by a real Prometheus text parser (Debian's
python3-prometheus-client) with every counter docs/COUNTERS.md documents
present and equal to `gpuaggctl stats`; /readyz flipping when PostgreSQL
stops, when the journal fills and while draining; /healthz staying up
(also while the drain's final commit holds the event loop)."""
import json
import os
import re
import signal
import sys
import time

from apilib import ROOT, HttpDaemon, Results, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ingest"))
from inglib import Client, PrivatePG, columnar  # noqa: E402

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

R = Results("ops_endpoints")


def documented():
    """{stats name: kind} of docs/COUNTERS.md's `gpuaggctl stats` section."""
    out, on = {}, False
    with open(os.path.join(ROOT, "docs", "COUNTERS.md")) as f:
        for line in f:
            if line.startswith("## "):
                on = line.startswith("## `gpuaggctl stats`")
            m = re.match(r"\| `([^`]+)` \| (\w+) \|", line) if on else None
            if m:
                out[m.group(1)] = m.group(2)
    assert len(out) > 80, out
    return out


def scrape(d):
    st, hd, body = d.request("GET", "/metrics")
    assert st == 200, (st, body[:300])
    assert hd["Content-Type"].startswith("text/plain; version=0.0.4"), hd
    fams = {}
    for fam in text_string_to_metric_families(body.decode("utf-8")):
        m = re.search(r"\(gpuaggctl stats: ([^)]+)\)$", fam.documentation)
        assert m, "HELP without the stats name: %r" % fam.documentation
        assert m.group(1) not in fams, "twice: %s" % m.group(1)
        fams[m.group(1)] = fam
    return fams


def readyz(d):
    st, j = d.get_json("/readyz")
    assert st in (200, 503) and j["status"] == ("ready" if st == 200 else "not ready"), (st, j)
    return st, j


def test_metrics_every_documented_counter():
    with HttpDaemon() as d:
        d.wait_http()
        fams = scrape(d)
        r = d.ctl("--json", "stats")
        assert r.returncode == 0, r
        stats = json.loads(r.stdout)
        docs = documented()
        missing = sorted(set(docs) - set(fams))
        assert not missing, "documented but not in /metrics: %s" % missing
        extra = sorted(set(fams) - set(stats))
        assert not extra, "in /metrics but not in stats: %s" % extra
        for name, kind in docs.items():
            fam = fams[name]
            assert fam.type == ("counter" if kind == "counter" else "gauge"), (name, fam.type)
            assert len(fam.samples) == 1, fam
            s = fam.samples[0]
            assert s.name.startswith("gpuagg_") and re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", s.name), s
            if kind == "counter":
                assert s.name.endswith("_total"), s.name
        assert fams["uptime_s"].samples[0].name == "gpuagg_uptime_seconds"
        assert fams["ingest.bytes_in"].samples[0].name == "gpuagg_ingest_bytes_in_total"
        # values: the same counters as gpuaggctl stats (those that do not move by themselves)
        for name in ("gpu.devices", "config.reloads", "udp.datagrams", "journal.segments",
                     "ceilometer_tcp.frames", "storage.connected"):
            assert fams[name].samples[0].value == stats[name], (name, fams[name], stats[name])
        before = scrape(d)["ctl.requests"].samples[0].value
        assert scrape(d)["ctl.requests"].samples[0].value == before, "a scrape is not a control request"
        assert d.stop() == 0


def test_healthz_and_readyz_without_postgres():
    with HttpDaemon() as d:
        d.wait_http()
        st, j = d.get_json("/healthz")
        assert st == 200 and j["status"] == "ok" and j["checks"]["loop"]["ok"] is True, j
        assert j["checks"]["loop"]["round_trip_ms"] < 2000 and j["reasons"] == [], j
        st, j = readyz(d)
        assert st == 503, j
        assert j["checks"]["storage"]["ok"] is False and j["checks"]["journal"]["ok"] is True, j
        assert j["checks"]["draining"]["ok"] is True, j
        assert any(x.startswith("storage (PostgreSQL) is ") for x in j["reasons"]), j
        assert d.stop() == 0


def test_readyz_flips_when_postgres_stops():
    pg = PrivatePG()
    try:
        with HttpDaemon(conninfo=pg.conninfo) as d:
            d.wait_http()
            ok = wait_for(lambda: readyz(d)[0] == 200, timeout=15)
            assert ok, readyz(d)
            st, j = readyz(d)
            assert j["reasons"] == [] and j["checks"]["storage"]["state"] == "connected", j
            # the engine has loaded its state (so the drain below has work to commit)
            assert wait_for(lambda: d.call("status")["result"]["engine"]["state"] == "running",
                            timeout=30), d.call("status")
            pg.stop()
            down = wait_for(lambda: (lambda r: r if r[0] == 503 else None)(readyz(d)), timeout=30)
            assert down, readyz(d)
            assert down[1]["checks"]["storage"]["ok"] is False, down
            assert any("storage (PostgreSQL)" in x for x in down[1]["reasons"]), down
            st, j = d.get_json("/healthz")
            assert st == 200, j
            # Draining: points journaled that storage cannot take, so the
            # drain's final commit waits (up to 30 s) with the loop busy:
            # /readyz says draining, /healthz stays ok.
            c, n = feed(d, 2000, per_batch=1000)
            for _ in range(n):
                m = c.recv()
                assert m and m["type"] == "ack", m
            c.close()
            d.signal(signal.SIGTERM)
            got = wait_for(lambda: (lambda r: r if r[1]["checks"]["draining"]["ok"] is False else None)(
                readyz(d)), timeout=10)
            assert got, d.logtext()[-2000:]
            st, j = got
            assert st == 503 and "draining: the daemon is shutting down" in j["reasons"], j
            assert j["checks"]["draining"]["state"] == "draining", j
            st, j = d.get_json("/healthz")
            assert st == 200 and j["status"] == "ok" and j["checks"]["draining"] is True, j
    finally:
        pg.stop()


def feed(d, npoints, per_batch=20000):
    c = Client(path=os.path.join(d.tmp, "ingest.sock"))
    c.hello()
    t0 = int(time.time()) * 10**9
    seq = 0
    for k in range(0, npoints, per_batch):
        n = min(per_batch, npoints - k)
        seq += 1
        c.send(columnar(seq, ["m%d" % (i % 50) for i in range(50)],
                        [t0 + (k + i) * 1000 for i in range(n)], [float(i) for i in range(n)],
                        index=[i % 50 for i in range(n)]))
    return c, seq


def test_readyz_journal_full():
    d = HttpDaemon()
    d.write_config(open(d.cfg).read().replace(
        "journal: { dir: %s/journal }" % d.tmp,
        "journal: { dir: %s/journal, segment_bytes: 1MiB, max_bytes: 2MiB }" % d.tmp))
    with d:
        d.wait_http()
        st, j = readyz(d)
        assert j["checks"]["journal"]["ok"] is True and j["checks"]["journal"]["max_bytes"] == 2 << 20, j
        c, n = feed(d, 60000)                  # ~1.5 MB of journal records; storage never commits
        full = wait_for(lambda: (lambda r: r if not r[1]["checks"]["journal"]["ok"] else None)(readyz(d)),
                        timeout=20)
        assert full, readyz(d)
        assert any(x.startswith("journal full: ") for x in full[1]["reasons"]), full
        assert full[1]["checks"]["journal"]["retained_bytes"] > 1 << 20, full
        c.close()


R.run(test_metrics_every_documented_counter)
R.run(test_healthz_and_readyz_without_postgres)
R.run(test_readyz_journal_full)
R.run(test_readyz_flips_when_postgres_stops)
R.finish()
