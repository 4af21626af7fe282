"""The HTTP listener under slow and malformed clients, against the real
daemon (docs/API.md "Who is served" and "The request target"):

* connections from 127.0.0.1 trickling a header byte a second, more than
  http.max_connections and reopened as soon as they are closed, for 8 s:
  /healthz and /metrics answer within 2 s throughout, an API request gets
  an answer (a place or a 503), and every trickling connection is closed
  by http.header_timeout_s, never answered;
* http.max_connections_per_peer: a third connection of an address holding
  two waits and gets 503, a probe and another address are served at once;
* request targets: 3,000 query parameters and an 8 KiB+ target get 414
  with a Gnocchi-shaped body, a path or query string that is not UTF-8
  (/v1/metric/%ff%fe), a NUL, a U+202E and a non-UTF-8 identity get 400
  with one, and never reach PostgreSQL (the daemon runs with one); the log
  line of a refusal quotes the path escaped and the log holds no byte
  outside printable ASCII; a metric whose name is not ASCII is served.

Every wait is bounded: the flood stops itself after 8 s."""
import http.client
import json
import os
import socket
import sys
import threading
import time
import urllib.parse
import uuid

import pytest

from apilib import HttpDaemon, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ingest"))
from inglib import Client, PrivatePG  # noqa: E402

METRIC_NS = uuid.UUID("5c1e5b8e-07c5-4c53-a2a5-3f2b1d6e9a47")
NOAUTH = b"X-User-Id: u\r\nX-Project-Id: p\r\n"


def recv_all(s):
    """Everything s receives until the server closes it (what came before
    a reset, if it resets)."""
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk
    except (ConnectionResetError, socket.timeout):
        return data


def raw(d, data, src="127.0.0.1", timeout=5):
    """Send data on a new connection from src; all the answer."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=timeout, source_address=(src, 0))
    try:
        s.sendall(data)
    except (ConnectionResetError, BrokenPipeError):
        pass
    out = recv_all(s)
    s.close()
    return out


def answer(data):
    """(status, body as JSON or None) of a raw HTTP answer."""
    assert data.startswith(b"HTTP/1."), "no HTTP answer: %r" % data[:200]
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


def get(d, target, headers=NOAUTH, src="127.0.0.1"):
    if isinstance(target, str):
        target = target.encode()
    return answer(raw(d, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n" + headers +
                      b"Connection: close\r\n\r\n", src))


# ---- slow clients -----------------------------------------------------------------

HEADER_TIMEOUT = 3
FLOOD_S = 8.0
TRICKLERS = 12            # 3 x max_connections, and more than it plus the probes' 8 places
TRICKLE = b"GET /v1/capabilities HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 100


class Trickler:
    """A connection sending one more byte of its headers every second."""

    def __init__(self, d):
        self.s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
        self.s.setblocking(False)
        self.opened, self.closed, self.sent, self.got = time.time(), None, 0, b""

    def step(self, now, send):
        if self.closed is not None:
            return
        try:
            data = self.s.recv(4096)
            self.got += data
            self.closed = now                      # an answer or the end: either way it is over
        except BlockingIOError:
            if send:
                try:
                    self.s.send(TRICKLE[self.sent:self.sent + 1])
                    self.sent += 1
                except OSError:
                    self.closed = now
        except OSError:
            self.closed = now
        if self.closed is not None:
            self.s.close()


def probe_loop(d, end, results, api):
    """/healthz and /metrics on fresh connections every 0.25 s until end;
    one API request on the way."""
    while time.time() < end:
        for path in ("/healthz", "/metrics"):
            t0 = time.time()
            try:
                c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=2)
                c.request("GET", path)
                r = c.getresponse()
                r.read()
                st = r.status
                c.close()
            except Exception as e:                 # a refused or closed probe is the failure
                st = repr(e)
            results.append((round(t0 - START[0], 2), path, st, time.time() - t0))
        if not api and time.time() - START[0] > FLOOD_S / 2:
            t0 = time.time()
            try:
                api.append((get(d, "/")[0], time.time() - t0))
            except AssertionError as e:
                api.append((repr(e), time.time() - t0))
        time.sleep(0.25)


START = [0.0]


def test_slow_headers_keep_probes():
    d = HttpDaemon(http="auth: noauth, max_connections: 4, header_timeout_s: %d, timeout_s: 30"
                   % HEADER_TIMEOUT)
    with d:
        d.wait_http()
        START[0] = time.time()
        end = START[0] + FLOOD_S
        live = [Trickler(d) for _ in range(TRICKLERS)]
        done, probes, api = [], [], []
        t = threading.Thread(target=probe_loop, args=(d, end, probes, api))
        t.start()
        next_byte = time.time()
        while time.time() < end:
            now = time.time()
            send = now >= next_byte
            if send:
                next_byte += 1.0
            for i, c in enumerate(live):
                c.step(now, send)
                if c.closed is not None:           # reopened at once: the pressure stays
                    done.append(c)
                    live[i] = Trickler(d)
            time.sleep(0.05)
        t.join(10)
        assert not t.is_alive(), "the probe loop did not stop"
        now = time.time()
        bad = [p for p in probes if p[2] != 200 or p[3] >= 2.0]
        assert not bad and len(probes) >= 20, (bad, len(probes), d.logtext()[-2000:])
        assert api and api[0][0] in (200, 503) and api[0][1] < 3.0, api
        lives = [c.closed - c.opened for c in done] + [now - c.opened for c in live]
        assert max(lives) < HEADER_TIMEOUT + 1.0, sorted(lives)[-5:]
        held = [x for x in lives if x >= HEADER_TIMEOUT - 0.5]
        assert len(held) >= 4, sorted(lives)[-8:]   # places held until the deadline closed them
        assert not [c.got for c in done if c.got], [c.got[:100] for c in done if c.got]
        for c in live:
            c.s.close()
        log = d.logtext()
        assert "event=http_shed header_timeouts=" in log and \
            any("header_timeouts=0 " not in line for line in log.splitlines()
                if "event=http_shed" in line), log[-2000:]
        st = d.call("stats")["result"]
        assert st["http.header_timeouts"] >= 4, st
        assert d.stop() == 0


def test_per_peer_cap():
    d = HttpDaemon(http="auth: noauth, max_connections: 8, max_connections_per_peer: 2")
    with d:
        d.wait_http()
        held = [socket.create_connection(("127.0.0.1", d.port), timeout=5) for _ in range(2)]
        for s in held:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert s.recv(65536).startswith(b"HTTP/1.1 200")
        t0 = time.time()
        st, j = get(d, "/")
        assert st == 503 and "http.max_connections_per_peer (2)" in j["description"], (st, j)
        assert 0.8 < time.time() - t0 < 3, time.time() - t0
        t0 = time.time()
        st, j = get(d, "/healthz")                # the probes' places
        assert st == 200 and j["status"] == "ok" and time.time() - t0 < 0.5, (st, j)
        t0 = time.time()
        st, j = get(d, "/", src="127.0.0.2")      # another address has places left
        assert st == 200 and time.time() - t0 < 0.5, (st, j)
        held.pop().close()
        time.sleep(0.2)
        assert get(d, "/")[0] == 200
        held[0].close()
        st = d.call("stats")["result"]
        assert st["http.refused_peer"] == 1 and st["http.refused_full"] == 0, st
        assert d.stop() == 0


# ---- request targets ---------------------------------------------------------------

def check_targets(d):
    # 3,000 parameters in 6 KB: 414 with a body, not a closed connection
    st, j = get(d, "/v1/metric?" + "&".join("a" for _ in range(3000)))
    assert st == 414 and j["code"] == 414 and j["title"] == "Request-URI Too Long", (st, j)
    assert "3000 parameters" in j["description"], j
    st, j = get(d, "/v1/metric?" + "&".join("p%d=1" % i for i in range(3000)))
    assert st == 414 and "more than 8192" in j["description"], (st, j)
    st, _ = get(d, "/v1/metric?" + "x" * 70000)  # past libmicrohttpd's buffer: its own 414 page
    assert st == 414, st
    assert get(d, "/?" + "&".join("a" for _ in range(256)))[0] == 200   # at the bound
    # not UTF-8, a NUL, a bidirectional override: 400 before any handler
    time.sleep(1.1)                                # the refusals' log line: one a second
    st, j = get(d, "/v1/metric/%ff%fe")
    assert st == 400 and j["code"] == 400 and j["title"] == "Bad Request", (st, j)
    assert j["description"] == "request path not valid UTF-8 at byte 11", j
    assert wait_for(lambda: 'path="/v1/metric/%FF%FE"' in d.logtext(), 5), d.logtext()[-1500:]
    st, j = get(d, b"/v1/metric/\xff\xfe")
    assert st == 400 and "request path not valid UTF-8" in j["description"], (st, j)
    st, j = get(d, "/v1/metric?name=%c3%28")
    assert st == 400 and "query string not valid UTF-8 at byte 5" == j["description"], (st, j)
    st, j = get(d, "/v1/metric/a%00b")
    assert st == 400 and "U+0000" in j["description"], (st, j)
    st, j = get(d, "/v1/metric/cpu%E2%80%AEx")
    assert st == 400 and "U+202E (right-to-left override)" in j["description"], (st, j)
    st, j = get(d, "/v1/metric", headers=b"X-User-Id: \xff\xfe\r\n")
    assert st == 400 and "user name not valid UTF-8" in j["description"], (st, j)
    with open(d.log, "rb") as f:
        log = f.read()
    odd = sorted({b for b in log if (b < 0x20 and b != 0x0a) or b > 0x7e})
    assert not odd, "bytes outside printable ASCII in the log: %r" % odd


def test_targets_without_postgres():
    d = HttpDaemon(http="auth: noauth")
    with d:
        d.wait_http()
        check_targets(d)
        assert d.stop() == 0


def test_targets_and_non_ascii_name_with_postgres():
    try:
        pg = PrivatePG()
    except AssertionError as e:
        pytest.skip("no private PostgreSQL: %s" % e)
    try:
        d = HttpDaemon(conninfo=pg.conninfo, http="auth: noauth")
        with d:
            d.wait_http()
            assert wait_for(lambda: d.call("status")["result"]["engine"]["state"] == "running",
                            30), d.logtext()[-2000:]
            check_targets(d)                       # 400, not PostgreSQL's 500
            name = "température.cœur/温度"
            c = Client(path=os.path.join(d.tmp, "ingest.sock"))
            c.hello()
            c.send_obj({"type": "points", "seq": 1, "metrics": [
                {"metric": name, "points": [[(int(time.time()) - 120) * 10**9, 21.5]]}]})
            ack = c.recv()
            assert ack["type"] == "ack" and ack["accepted"] == 1, ack
            r = d.ctl("flush", timeout=30)
            assert r.returncode == 0, r
            quoted = urllib.parse.quote(name, safe="/")
            st, j = get(d, "/v1/metric/" + quoted)
            assert st == 200 and j["name"] == name, (st, j)
            assert j["id"] == str(uuid.uuid3(METRIC_NS, name)), j
            st, j = get(d, "/v1/metric/%s/measures" % j["id"])
            assert st == 200 and [m[2] for m in j] and j[-1][2] == 21.5, (st, j)
            st, j = get(d, "/v1/metric?name=" + urllib.parse.quote(name))
            assert st == 200 and [m["name"] for m in j] == [name], (st, j)
            assert "status=500" not in d.logtext(), d.logtext()[-2000:]
            assert d.stop(30) == 0
    finally:
        pg.stop()
