"""Ceilometer's tcp:// publisher framing against gpuaggd's
listen.ceilometer_tcp, with a private PostgreSQL for the end-to-end case.

The sender is Ceilometer's TCPPublisher (ceilometer/publisher/tcp.py,
Ceilometer 20 and later) when the installed python3-ceilometer has it;
Debian 12's Ceilometer 19 does not, so then TcpWire below does what that
file does, on Debian's own ceilometer.publisher base class and
utils.meter_message_from_counter: msgpack.dumps(msg, use_bin_type=True),
prefixed by len(...).to_bytes(8, 'little'), one socket.send per sample on
one long-lived connection.

Signed samples are accepted and aggregated; forged and unsigned ones are
counted by reason (ceilometer_tcp.rejected.*) and leave no trace; bad frames
(oversize length, garbage, a stream cut inside a frame, a sender that
stalls inside a frame) are counted (ceilometer_tcp.bad_frames.*) and close
their own connection while a good connection beside them goes on."""
import datetime
import json
import os
import socket
import struct
import sys
import time

import pytest

from inglib import IngestDaemon, PrivatePG, rng_for, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ceilometer"))
import gen_vectors  # noqa: E402

RNG = rng_for("ceilometer_tcp")
FIVE_MIN = 300


def make_tcp_publisher(secret, port):
    """A publisher writing Ceilometer's tcp:// framing to 127.0.0.1:port."""
    why = gen_vectors.find_ceilometer()
    if why:
        pytest.skip(why)
    import msgpack
    from oslo_config import cfg
    from oslo_utils import netutils
    from ceilometer import publisher
    from ceilometer.publisher import utils
    conf = cfg.ConfigOpts()
    conf.register_opts(utils.OPTS, group="publisher")
    conf([], project="ceilometer", default_config_files=[])
    conf.set_override("telemetry_secret", secret, group="publisher")
    url = netutils.urlsplit("tcp://127.0.0.1:%d" % port)
    try:
        from ceilometer.publisher import tcp
        return tcp.TCPPublisher(conf, url)
    except ImportError:
        pass

    class TcpWire(publisher.ConfigPublisherBase):
        """ceilometer/publisher/tcp.py's TCPPublisher, on Ceilometer 19."""

        def __init__(self, conf, parsed_url):
            super().__init__(conf, parsed_url)
            self.host, self.port = netutils.parse_host_port(parsed_url.netloc, default_port=4952)
            self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.socket.connect((self.host, self.port))

        def publish_samples(self, samples):
            for sample in samples:
                msg = utils.meter_message_from_counter(sample, self.conf.publisher.telemetry_secret)
                encoded_msg = msgpack.dumps(msg, use_bin_type=True)
                msg_len = len(encoded_msg).to_bytes(8, "little")
                self.socket.send(msg_len + encoded_msg)

        def publish_events(self, events):
            raise NotImplementedError

    return TcpWire(conf, url)


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


def ctcp_port(d):
    return d.ingest_status()["ceilometer_tcp_port"]


def json_stats(d):
    r = d.ctl("--json", "stats")
    assert r.returncode == 0, r
    return json.loads(r.stdout)


def decided(st):
    return st["ceilometer_tcp.accepted"] + sum(
        v for k, v in st.items() if k.startswith("ceilometer_tcp.rejected."))


def test_publisher_signed_forged_unsigned():
    secret = "tcp-secret-%08x" % RNG.randrange(2**32)
    pg = PrivatePG()
    d = IngestDaemon(conninfo=pg.conninfo, listen={"telemetry_secret": '"%s"' % secret,
                                                   "ceilometer_tcp": '"127.0.0.1:0"'})
    try:
        d.start()
        port = ctcp_port(d)
        assert port > 0, d.ingest_status()
        t0 = (int(time.time()) // FIVE_MIN - 24) * FIVE_MIN
        good, want = [], {}
        for k in range(6):
            rid = "inst-%06x" % RNG.randrange(2**24)
            name, ctype = ("cpu", "cumulative") if k % 2 == 0 else ("memory.usage", "gauge")
            vols = sorted(RNG.uniform(1, 1e6) for _ in range(4))
            good += samples_for(rid, name, ctype, t0, vols)
            want["%s/%s" % (rid, name)] = sum(vols) / len(vols)
        forged = samples_for("forged-%06x" % RNG.randrange(2**24), "cpu", "cumulative", t0, [1.0, 2.0])
        unsigned = samples_for("unsigned-%06x" % RNG.randrange(2**24), "cpu", "cumulative", t0, [3.0])
        pub = make_tcp_publisher(secret, port)
        pub.publish_samples(good[:12])
        make_tcp_publisher(secret + "x", port).publish_samples(forged)
        make_tcp_publisher("", port).publish_samples(unsigned)
        pub.publish_samples(good[12:])            # the same connection, later
        total = len(good) + len(forged) + len(unsigned)
        st = wait_for(lambda: (lambda s: s if decided(s) >= total else None)(json_stats(d)), timeout=15)
        assert st, json_stats(d)
        assert st["ceilometer_tcp.frames"] == total, st
        assert st["ceilometer_tcp.accepted"] == len(good), st
        assert st["ceilometer_tcp.rejected.bad_signature"] == len(forged), st
        assert st["ceilometer_tcp.rejected.unsigned"] == len(unsigned), st
        assert st["ceilometer_tcp.connections_total"] == 3, st
        assert sum(v for k, v in st.items() if k.startswith("ceilometer_tcp.bad_frames.")) == 0, st
        assert st["udp.datagrams"] == 0 and st["ingest.frames"] == 0, st
        assert d.stop(timeout=60) == 0, d.logtext()[-2000:]
        rows = pg.sql("SELECT metric, method, ts_ns, value FROM gpuagg_measures "
                      "WHERE granularity_s = %d AND method = 'mean'" % FIVE_MIN)
        got = {m: (int(ts), float(v)) for m, _, ts, v in rows}
        assert set(got) == set(want), (sorted(got), sorted(want))
        for name, mean in want.items():
            ts, v = got[name]
            assert ts == t0 * 10**9 and abs(v - mean) <= 1e-9 * abs(mean), (name, ts, v, mean)
    finally:
        if d.proc and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
        pg.stop()


def frame(body):
    return len(body).to_bytes(8, "little") + body


def closed_by_peer(s, timeout=5.0):
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_bad_frames_close_only_their_connection():
    import msgpack
    with IngestDaemon(listen={"ceilometer_tcp": '"127.0.0.1:0"'},
                      limits={"max_frame_bytes": "64KiB", "slow_client_timeout_s": 1}) as d:
        port = ctcp_port(d)
        t0 = (int(time.time()) // FIVE_MIN - 24) * FIVE_MIN
        pub = make_tcp_publisher("", port)         # the good neighbour, open throughout
        pub.publish_samples(samples_for("good-1", "cpu", "cumulative", t0, [1.0, 2.0]))

        def conn():
            s = socket.create_connection(("127.0.0.1", port))
            return s
        good_body = msgpack.dumps({"counter_name": "x"}, use_bin_type=True)
        # oversize: a length over limits.max_frame_bytes, after one good frame
        over = conn()
        over.sendall(frame(good_body) + struct.pack("<Q", 64 * 1024 + 1) + b"\x80" * 16)
        # garbage: random bytes whose first 8 read as a small length
        garb = conn()
        garb.sendall(struct.pack("<Q", 5) + b"\xc1\x02\x03\x04\x05")
        garb_zero = conn()
        garb_zero.sendall(struct.pack("<Q", 0))
        # truncated: half a frame, then the end of the stream
        trunc = conn()
        trunc.sendall(frame(good_body)[:7])
        trunc.shutdown(socket.SHUT_WR)
        # slow: part of a frame, then nothing for longer than the timeout
        slow = conn()
        slow.sendall(frame(good_body)[:-3])
        for s in (over, garb, garb_zero, trunc):
            assert closed_by_peer(s), s
        assert closed_by_peer(slow, timeout=6.0)
        pub.publish_samples(samples_for("good-2", "cpu", "cumulative", t0, [3.0]))

        def done():
            st = json_stats(d)
            return st if decided(st) >= 4 and st["ceilometer_tcp.bad_frames.slow"] >= 1 else None
        st = wait_for(done, timeout=10)
        assert st, json_stats(d)
        assert st["ceilometer_tcp.bad_frames.oversize"] == 1, st
        assert st["ceilometer_tcp.bad_frames.garbage"] == 2, st
        assert st["ceilometer_tcp.bad_frames.truncated"] == 1, st
        assert st["ceilometer_tcp.bad_frames.slow"] == 1, st
        assert st["ceilometer_tcp.accepted"] == 3, st           # good-1 x2, good-2
        # the good frame ahead of the oversize length was taken (and refused
        # for its missing fields): the samples before a bad frame stand
        assert st["ceilometer_tcp.rejected.missing_field"] == 1, st
        assert st["ceilometer_tcp.connections_open"] == 1, st   # the publisher's
        assert "event=ceilometer_tcp_bad_frame" in d.logtext()
        # no PostgreSQL here: the accepted samples stay in the journal, exit 1
        assert d.stop() == 1, d.logtext()[-2000:]


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_backpressure_blocks_the_sender():
    """journal.max_bytes 2 MiB and no PostgreSQL: the journal fills, ingest
    goes into backpressure and stops reading the Ceilometer connection, so
    the publisher's send blocks; nothing read is dropped, memory stays put."""
    import msgpack
    import threading
    why = gen_vectors.find_ceilometer()
    if why:
        pytest.skip(why)
    from ceilometer.publisher import utils
    body = msgpack.dumps(utils.meter_message_from_counter(
        samples_for("bp-vm", "cpu", "cumulative", int(time.time()), [1.0])[0], ""), use_bin_type=True)
    chunk = frame(body) * 2000
    with IngestDaemon(listen={"ceilometer_tcp": '"127.0.0.1:0"'},
                      journal={"segment_bytes": "1MiB", "max_bytes": "2MiB"},
                      limits={"queue_batches": 8}) as d:
        s = socket.create_connection(("127.0.0.1", ctcp_port(d)))
        sent, stop = [0], threading.Event()

        def sender():
            try:
                while not stop.is_set():
                    s.sendall(chunk)
                    sent[0] += 2000
            except OSError:
                pass
        th = threading.Thread(target=sender, daemon=True)
        th.start()

        def settled():                 # the daemon stopped reading: frames stand still
            a = json_stats(d)["ceilometer_tcp.frames"]
            time.sleep(1.5)
            b = json_stats(d)
            return b if a == b["ceilometer_tcp.frames"] and a > 0 else None
        st = wait_for(settled, timeout=40, step=0)
        assert st, json_stats(d)
        rss0, n0 = rss_kib(d.proc.pid), sent[0]
        time.sleep(2)                  # the sender is still trying
        st = json_stats(d)
        assert sent[0] == n0 and th.is_alive(), (n0, sent[0])      # blocked in send
        assert rss_kib(d.proc.pid) - rss0 < 32 * 1024
        assert st["ingest.backpressure_active"] == 1, st
        assert st["pipeline.journal_full_waits"] > 0 or st["journal.full_refusals"] > 0, st
        assert st["ceilometer_tcp.frames"] < n0 + 2000, st        # what was sent is not all read
        assert decided(st) == st["ceilometer_tcp.frames"], st          # every frame read is decoded
        assert st["ceilometer_tcp.accepted"] == st["ceilometer_tcp.frames"], st
        assert st["ceilometer_tcp.connections_open"] == 1, st     # still open, just not read
        assert sum(v for k, v in st.items() if k.startswith("ceilometer_tcp.bad_frames.")) == 0, st
        stop.set()
        s.close()
