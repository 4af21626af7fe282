"""The HTTP listener's core against the real daemon (no PostgreSQL needed):
GET / (versions), Gnocchi-shaped 404/405/401, the body size limit, a
slow client closed by http.timeout_s, the connection limit."""
import json
import socket
import time

from apilib import HttpDaemon, Results

R = Results("http_core")
D = HttpDaemon(http="auth: basic, timeout_s: 1, max_body_bytes: 2KiB, max_connections: 4")


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


def test_body_too_big():
    st, j = D.get_json("/", method="POST", body="x" * 5000)
    assert st == 413 and "max_body_bytes" in j["description"], j


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


def test_connection_limit():
    # http.max_connections: 4.  A fifth connection waits in the listen
    # backlog until one of the four closes.
    held = [socket.create_connection(("127.0.0.1", D.port), timeout=5) for _ in range(4)]
    extra = socket.create_connection(("127.0.0.1", D.port), timeout=0.5)
    extra.sendall(b"GET / HTTP/1.0\r\n\r\n")
    try:
        extra.recv(1024)
        raise AssertionError("a fifth connection was served while four were open")
    except socket.timeout:
        pass
    for s in held:
        s.close()
    extra.settimeout(5)
    data = extra.recv(1024)
    extra.close()
    assert data.startswith(b"HTTP/1.1 200"), data
    assert D.get_json("/")[0] == 200
    assert D.call("ping")["ok"]                        # the control socket never waited


try:
    D.start()
    D.wait_http()
    for t in (test_versions, test_not_found_shape, test_method_not_allowed, test_body_too_big,
              test_slow_client_closed, test_connection_limit):
        R.run(t)
    assert D.stop() == 0
finally:
    if D.proc and D.proc.poll() is None:
        D.proc.kill()
R.finish()
