"""The gpuagg Ceilometer publisher (tools/ceilometer/) as Ceilometer itself
loads it: `make install-ceilometer` into a temporary root, that root's
dist-packages on sys.path, and Debian's python3-ceilometer building a
SamplePipelineManager from a pipeline.yaml whose sink publishes to
gpuagg:///<ingest socket> — stevedore finds the plugin through its
ceilometer.sample.publisher entry point.  Against a real gpuaggd and a
private PostgreSQL:

* samples published while the daemon is killed (SIGKILL) and started again
  all arrive: each sample is its own metric, and every one has its value in
  PostgreSQL afterwards;
* with no daemon at all, the bounded queue drops the oldest samples, counts
  them and says so in the log;
* URL parsing: gpuagg://host:port, gpuagg:///path, options, and errors.

Without python3-ceilometer (tools/deps.sh installs it) each test is skipped
with the reason."""
import datetime
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ingest"))
from inglib import IngestDaemon, PrivatePG, ROOT, rng_for, wait_for  # noqa: E402
import gen_vectors  # noqa: E402  (this folder's)

RNG = rng_for("gpuagg_publisher")
FIVE_MIN = 300

INSTALL = tempfile.mkdtemp(prefix="gapub-")
r = subprocess.run(["make", "-s", "-C", ROOT, "install-ceilometer", "DESTDIR=" + INSTALL, "PREFIX=/usr"],
                   capture_output=True, text=True)
assert r.returncode == 0, r.stderr
SITE = os.path.join(INSTALL, "usr", "lib", "python3", "dist-packages")
sys.path.insert(0, SITE)


def need_ceilometer():
    """Skip the running test, with the reason, without python3-ceilometer."""
    why = gen_vectors.find_ceilometer()
    if why:
        pytest.skip(why)


def pipeline_manager(url, tmp):
    """Ceilometer's own SamplePipelineManager with one sink publishing to url."""
    need_ceilometer()
    from oslo_config import cfg
    from ceilometer.pipeline import base, sample as psample
    from ceilometer.publisher import utils
    path = os.path.join(tmp, "pipeline.yaml")
    with open(path, "w") as f:
        f.write("sources:\n  - name: all\n    meters: ['*']\n    sinks: [gpuagg]\n"
                "sinks:\n  - name: gpuagg\n    publishers:\n      - %s\n" % url)
    conf = cfg.ConfigOpts()
    conf.register_opts(base.OPTS)
    conf.register_opts(utils.OPTS, group="publisher")
    conf([], project="ceilometer", default_config_files=[])
    conf.set_override("pipeline_cfg_file", path)
    mgr = psample.SamplePipelineManager(conf)
    pubs = [p for pipe in mgr.pipelines for p in pipe.sink.publishers]
    assert len(pubs) == 1 and type(pubs[0]).__name__ == "GpuaggPublisher", pubs
    assert pubs[0].__module__ == "gpuagg_ceilometer.publisher"
    assert os.path.dirname(sys.modules["gpuagg_ceilometer"].__file__).startswith(SITE)
    return mgr, pubs[0]


def make_sample(rid, name, volume, ts):
    from ceilometer import sample
    return sample.Sample(name=name, type="gauge", unit="B", volume=volume, user_id="u",
                         project_id="p", resource_id=rid, timestamp=ts, resource_metadata={},
                         source="openstack")


def test_urls_and_timestamps():
    need_ceilometer()
    from oslo_utils import netutils
    from gpuagg_ceilometer import publisher, parse_timestamp
    a, o = publisher.parse_url(netutils.urlsplit("gpuagg://127.0.0.1:4951?token=t&batch=10"))
    assert a == ("tcp", "127.0.0.1", 4951) and o == {"token": "t", "batch": 10}, (a, o)
    a, o = publisher.parse_url(netutils.urlsplit("gpuagg://[::1]:4951"))
    assert a == ("tcp", "::1", 4951), a
    a, o = publisher.parse_url(netutils.urlsplit("gpuagg:///run/gpuagg/ingest.sock?timeout=2.5"))
    assert a == ("unix", "/run/gpuagg/ingest.sock") and o == {"timeout": 2.5}, (a, o)
    for bad in ("gpuagg://host", "gpuagg://", "gpuagg:///x?bogus=1", "gpuagg:///x?batch=0",
                "gpuagg:///x?batch=ten"):
        try:
            publisher.parse_url(netutils.urlsplit(bad))
        except ValueError as e:
            assert "gpuagg publisher URL" in str(e), e
        else:
            raise AssertionError("accepted %r" % bad)
    assert parse_timestamp("1970-01-01T00:00:01") == 10**9
    assert parse_timestamp("2026-11-27T05:00:00.123456789Z") == 1795755600123456789
    assert parse_timestamp("2026-11-27T07:00:00.5+02:00") == 1795755600500000000
    assert parse_timestamp(datetime.datetime(2026, 11, 27, 5, 0, 0, 1)) == 1795755600000001000


class Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_bounded_queue_reports_drops():
    tmp = tempfile.mkdtemp(prefix="gapub-")
    cap = Capture()
    logging.getLogger("gpuagg_ceilometer").addHandler(cap)
    mgr, pub = pipeline_manager("gpuagg://%s/nowhere.sock?max_queue=50&backoff_max=0.2" % tmp, tmp)
    ts = datetime.datetime.now(datetime.timezone.utc).isoformat()
    with mgr.publisher() as p:
        p([make_sample("r%d" % i, "cpu", float(i), ts) for i in range(80)])
        p([make_sample("bad", "cpu", float("nan"), ts)])
    st = pub.client.stats
    assert st["queued"] == 80 and st["dropped_queue_full"] == 30, st
    assert pub.client.pending() == 50
    assert pub.dropped_invalid == 1
    assert not pub.flush(timeout=0.5)
    assert any("dropped the 30 oldest points" in l for l in cap.lines), cap.lines
    assert any("dropped sample bad/cpu" in l for l in cap.lines), cap.lines
    assert pub.client.close(0.1) == 50


def test_restart_loses_nothing():
    pg = PrivatePG()
    d = IngestDaemon(conninfo=pg.conninfo)
    d2 = None
    try:
        d.start()
        mgr, pub = pipeline_manager("gpuagg://%s?batch=20&timeout=3&backoff_max=0.5" % d.unix, d.tmp)
        t0 = (int(time.time()) // FIVE_MIN - 24) * FIVE_MIN
        ts = datetime.datetime.fromtimestamp(t0, datetime.timezone.utc).replace(tzinfo=None).isoformat()
        want = {}
        stop = threading.Event()

        def producer():
            i = 0
            while not stop.is_set():
                with mgr.publisher() as p:
                    batch = []
                    for _ in range(5):
                        v = RNG.uniform(-1e6, 1e6)
                        rid = "vm-%05d" % i
                        want["%s/memory.usage" % rid] = v
                        batch.append(make_sample(rid, "memory.usage", v, ts))
                        i += 1
                    p(batch)
                time.sleep(0.01)
        th = threading.Thread(target=producer)
        th.start()
        time.sleep(1.0)
        d.proc.kill()                      # no drain: whatever was not acked must be resent
        d.proc.wait()
        time.sleep(1.0)                    # samples keep coming while it is away
        d2 = IngestDaemon(conninfo=pg.conninfo, tmp=d.tmp)
        d2.start()
        time.sleep(1.0)
        stop.set()
        th.join()
        assert pub.flush(timeout=30), pub.client.stats
        st = pub.client.stats
        assert st["dropped_queue_full"] == 0 and st["dropped_refused"] == 0, st
        assert st["acked"] == len(want) and st["rejected"] == 0, (st, len(want))
        assert st["reconnects"] >= 2, st
        assert d2.stop(timeout=60) == 0, d2.logtext()[-2000:]
        rows = pg.sql("SELECT metric, ts_ns, value FROM gpuagg_measures WHERE granularity_s = %d "
                      "AND method = 'mean'" % FIVE_MIN)
        got = {m: (int(t), float(v)) for m, t, v in rows}
        missing = sorted(set(want) - set(got))
        assert not missing, "%d of %d samples missing, e.g. %s" % (len(missing), len(want), missing[:5])
        for m, v in want.items():
            assert got[m][0] == t0 * 10**9 and abs(got[m][1] - v) <= 1e-9 * abs(v), (m, got[m], v)
        assert len(want) > 200, len(want)
        pub.client.close(1)
    finally:
        for x in (d, d2):
            if x and x.proc and x.proc.poll() is None:
                x.proc.kill()
                x.proc.wait()
        pg.stop()
