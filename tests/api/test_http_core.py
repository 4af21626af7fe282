"""The HTTP listener's core against the real daemon (no PostgreSQL needed):
GET / (versions), Gnocchi-shaped 404/405/401, the body size limit, a
slow client closed by http.timeout_s, the connection limit (the wait for a
place, the 503 after it, the probes' places).  The header deadline, the
per-peer cap and the request-target rules: test_http_limits.py."""
import json
import socket
import time

import pytest

from apilib import HttpDaemon, wait_for

D = HttpDaemon(http="auth: basic, timeout_s: 1, max_body_bytes: 2KiB")


def test_versions():
    st, j = D.get_json("/")
    assert st == 200, (st, j)
    v = j["versions"][0]
    assert v["id"] == "v1.0" and v["status"] == "CURRENT", j
    assert v["links"][0]["href"] == "%s/v1/" % D.url, j


def test_not_found_shape():
    st, j = D.get_json("/nope/at/all")
    assert st == 404 and j["code"] == 404 and j["title"] == "Not Found" and j["description"], j


def test_method_not_allowed():
    st, j = D.get_json("/", method="DELETE")
    assert st == 405 and "DELETE" in j["description"], j


def test_basic_auth():
    st, j = D.get_json("/v1/capabilities")
    assert st == 401 and "basic" in j["description"], (st, j)
    st, j = D.get_json("/v1/capabilities", headers={"Authorization": "Basic YWRtaW46"})  # admin:
    assert st == 200 and "mean" in j["aggregation_methods"], (st, j)
    st, j = D.get_json("/v1/capabilities", headers={"Authorization": "Basic !!!"})
    assert st == 401, (st, j)
    for bad in ("OnB3", "YWRtaW4=", "Bearer YWRtaW46"):      # ":pw", "admin" (no colon), not Basic
        hdr = bad if bad.startswith("Bearer") else "Basic " + bad
        st, j = D.get_json("/v1/capabilities", headers={"Authorization": hdr})
        assert st == 401, (bad, st, j)
    # bob:secret is let in (no database here: 503, not 401)
    st, j = D.get_json("/v1/resource/generic", headers={"Authorization": "Basic Ym9iOnNlY3JldA=="})
    assert st == 503 and "storage unavailable" in j["description"], (st, j)


def test_body_too_big():
    st, j = D.get_json("/", method="POST", body="x" * 5000)
    assert st == 413 and "max_body_bytes" in j["description"], j


def test_huge_headers():
    s = socket.create_connection(("127.0.0.1", D.port), timeout=5)
    try:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n")
    except (ConnectionResetError, BrokenPipeError):
        pass
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        pass
    s.close()
    assert data == b"" or data.split(b" ")[1][:1] == b"4", data[:200]
    assert D.get_json("/")[0] == 200


def test_slow_client_closed():
    s = socket.create_connection(("127.0.0.1", D.port), timeout=5)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")       # never finishes the headers
    t0 = time.time()
    data = s.recv(1024)                                # closed by the server
    took = time.time() - t0
    s.close()
    assert data == b"" and 0.5 < took < 4, (data, took)
    st, _ = D.get_json("/")                            # the listener still answers
    assert st == 200


def recv_all(s):
    """Everything s receives until the server closes it (b"" on a reset)."""
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk
    except ConnectionResetError:
        return data


def check_connection_limit(D):
    # http.max_connections: 4.  While four are held, a fifth waits up to 1 s
    # for a place: it gets one if a held connection closes meanwhile, else a
    # 503 naming the limit; a probe is answered at once on a place kept for
    # the probes, and closed after its answer.
    # The listener counts a closed client's connection until its thread sees
    # the close: wait for the earlier requests' connections to be gone.
    assert wait_for(lambda: D.call("stats")["result"]["http.connections_open"] == 0), \
        D.call("stats")["result"]["http.connections_open"]
    held = [socket.create_connection(("127.0.0.1", D.port), timeout=5) for _ in range(4)]
    # each served a request (kept alive) shows the listener holds all four
    for s in held:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.recv(65536).startswith(b"HTTP/1.1 200"), "a held connection was not served"
    extra = socket.create_connection(("127.0.0.1", D.port), timeout=5)
    t0 = time.time()
    extra.sendall(b"GET / HTTP/1.0\r\n\r\n")
    data = recv_all(extra)
    took = time.time() - t0
    extra.close()
    assert data.startswith(b"HTTP/1.1 503") and 0.8 < took < 3, (data[:300], took)
    j = json.loads(data.split(b"\r\n\r\n", 1)[1])
    assert j["code"] == 503 and "http.max_connections (4)" in j["description"], j
    probe = socket.create_connection(("127.0.0.1", D.port), timeout=5)
    t0 = time.time()
    probe.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    data = recv_all(probe)                             # closed after its answer
    probe.close()
    assert data.startswith(b"HTTP/1.1 200") and b'"status":"ok"' in data, data[:300]
    assert time.time() - t0 < 0.5, time.time() - t0
    # a waiting connection takes the place a held one gives up
    extra = socket.create_connection(("127.0.0.1", D.port), timeout=5)
    extra.sendall(b"GET / HTTP/1.0\r\n\r\n")
    time.sleep(0.3)
    held.pop().close()
    data = recv_all(extra)
    extra.close()
    assert data.startswith(b"HTTP/1.1 200"), data[:300]
    for s in held:
        s.close()
    time.sleep(0.2)
    assert D.get_json("/")[0] == 200
    assert D.call("ping")["ok"]                        # the control socket never waited


def test_remoteuser_mode_and_connection_limit():
    d = HttpDaemon(http="auth: remoteuser, max_connections: 4, timeout_s: 30")
    try:
        d.start()
        d.wait_http()
        check_connection_limit(d)
        st, j = d.get_json("/v1/capabilities")
        assert st == 401 and "X-Remote-User" in j["description"], (st, j)
        st, j = d.get_json("/v1/capabilities", headers={"X-Remote-User": "alice"})
        assert st == 200, (st, j)
        assert d.stop() == 0
    finally:
        if d.proc and d.proc.poll() is None:
            d.proc.kill()


@pytest.fixture(scope="module", autouse=True)
def shared_daemon():
    """D, shared by the tests that use it, in order; it must exit 0."""
    try:
        D.start()
        D.wait_http()
        yield
        assert D.stop() == 0
    finally:
        if D.proc and D.proc.poll() is None:
            D.proc.kill()
