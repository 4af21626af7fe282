"""gpuaggctl against a scripted fake daemon: the exact request it sends, each
command's human and --json output, daemon errors (exit 1), and broken
conversations (exit 4): timeout, early close, wrong id, garbage, responses
trickling in byte by byte.  The live-daemon test is tests/blackbox (lead's)."""
import json
import os
import socket
import subprocess
import tempfile
import threading
import time

import msgpack
import pytest

ROOT = os.environ.get("GA_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CTL = os.environ.get("GA_CTL") or os.path.join(ROOT, "build", "bin", "gpuaggctl")   # GA_CTL: e.g. an ASan build
DIR = None      # the fake daemon's directory (fixture fake_dir)


class FakeDaemon:
    """Accepts one connection, reads one request, then calls script(conn, request_bytes, request)."""

    def __init__(self, path, script):
        self.path, self.script = path, script
        self.request_bytes = None
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(4)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        conn, _ = self.srv.accept()
        with conn:
            u = msgpack.Unpacker(raw=False)
            raw = b""
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                raw += chunk
                u.feed(chunk)
                reqs = list(u)
                if reqs:
                    self.request_bytes = raw
                    self.script(conn, raw, reqs[0])
                    return

    def close(self):
        self.thread.join(timeout=10)
        self.srv.close()
        os.unlink(self.path)


def ok(result):
    return lambda conn, raw, req: conn.sendall(msgpack.packb({"id": req["id"], "ok": True, "result": result}))


def error(code, name, message, rid=None):
    return lambda conn, raw, req: conn.sendall(msgpack.packb(
        {"id": req["id"] if rid is None else rid, "ok": False,
         "error": {"code": code, "name": name, "message": message}}))


def with_fake(d, script, *args, timeout="5"):
    path = os.path.join(d, "ctl.sock")
    fake = FakeDaemon(path, script)
    try:
        p = subprocess.run([CTL, "--socket", path, "--timeout", timeout, *args],
                           capture_output=True, text=True, timeout=30)
    finally:
        fake.close()
    return p.returncode, p.stdout, p.stderr, fake.request_bytes


STATUS = {"version": "9.9.9", "pid": 4242, "uptime_s": 12.25, "state": "running", "config": "/etc/g.yaml",
          "backends": [{"device": "cpu", "backend": "cpu", "name": "CPU", "state": "standby"},
                       {"device": "cuda:0", "backend": "cuda", "name": "H100", "state": "active"}],
          "storage": {"state": "connected", "last_error": "", "lag_s": 0.5},
          "queues": {"ingest": {"depth": 3, "limit": 64}}, "counters": {"points": 10}, "tags": ["a", "b"],
          "empty": {}, "nothing": None, "evil": "line1\nline2\x1b[31m"}


@pytest.fixture(scope="module", autouse=True)
def fake_dir():
    global DIR
    assert os.access(CTL, os.X_OK), f"{CTL} not built"
    with tempfile.TemporaryDirectory(prefix="ga-fake-") as d:
        DIR = d
        yield


def fake(script, *args, **kw):
    return with_fake(DIR, script, *args, **kw)


# ping: exact request bytes (proto/PROTOCOL.md example) and the human line
@pytest.fixture(scope="module")
def ping():
    return fake(ok({"pong": True, "version": "9.9.9"}), "ping")


def test_ping_request_bytes(ping):
    rc, out, err, raw = ping
    assert raw == bytes.fromhex("82a2696401a26f70a470696e67"), f"{raw!r}"


def test_ping_output(ping):
    rc, out, err, raw = ping
    assert rc == 0 and out.startswith("pong from gpuaggd 9.9.9 at ") and out.endswith(" ms\n"), \
        f"rc={rc} out={out!r} err={err!r}"


# the op names on the wire
@pytest.mark.parametrize("cmd,op", [("status", "status"), ("stats", "stats"), ("config", "config.get"),
                                    ("reload", "reload"), ("shutdown", "shutdown")])
def test_sends_op(cmd, op):
    rc, out, err, raw = fake(ok({"reloaded": True, "restart_needed": []}), cmd)
    req = msgpack.unpackb(raw) if raw else None
    assert req == {"id": 1, "op": op}, f"{req!r}"


def test_status_human():
    # status: generic nested rendering
    rc, out, err, _ = fake(ok(STATUS), "status")
    want = ("version: 9.9.9\npid: 4242\nuptime_s: 12.25\nstate: running\nconfig: /etc/g.yaml\n"
            "backends:\n  - device: cpu\n    backend: cpu\n    name: CPU\n    state: standby\n"
            "  - device: cuda:0\n    backend: cuda\n    name: H100\n    state: active\n"
            "storage:\n  state: connected\n  last_error: \"\"\n  lag_s: 0.5\n"
            "queues:\n  ingest:\n    depth: 3\n    limit: 64\ncounters:\n  points: 10\n"
            "tags: [a, b]\nempty: {}\nnothing: -\nevil: line1\\nline2\\x1b[31m\n")
    assert rc == 0 and out == want, f"rc={rc}\n{out}"


# --json, before or after the command: the result object, nothing else
@pytest.mark.parametrize("args", [["--json", "status"], ["status", "--json"]], ids=" ".join)
def test_json(args):
    rc, out, err, _ = fake(ok(STATUS), *args)
    try:
        got = json.loads(out)
    except ValueError as e:
        got = e
    assert rc == 0 and got == STATUS, f"rc={rc} got={got!r}"


def test_stats_table():
    # stats: sorted, aligned, nested groups dotted
    rc, out, err, _ = fake(ok({"z.last": 1, "ctl.requests": 12, "storage": {"connects": 2},
                               "uptime_s": 3.5, "big": 2**64 - 1}), "stats")
    want = ("big               18446744073709551615\nctl.requests      12\nstorage.connects  2\n"
            "uptime_s          3.5\nz.last            1\n")
    assert rc == 0 and out == want, f"rc={rc}\n{out!r}"


def test_config_tree():
    # config: YAML-ish
    rc, out, err, _ = fake(ok({"log": {"level": "info"}, "gpu": {"devices": [0, 1]},
                               "policies": [{"name": "low", "methods": ["mean"]}]}), "config")
    assert rc == 0 and out == "log:\n  level: info\ngpu:\n  devices: [0, 1]\n" \
        "policies:\n  - name: low\n    methods: [mean]\n", f"rc={rc}\n{out}"


# reload variants
def test_reload_restart_needed():
    rc, out, err, _ = fake(ok({"reloaded": True, "restart_needed": ["control.socket", "gpu.devices"]}),
                           "reload")
    assert rc == 0 and out == "configuration reloaded\nchanges that need a restart " \
        "(kept as they were): control.socket, gpu.devices\n", f"rc={rc} out={out!r}"


def test_reload_not_reloaded():
    rc, out, err, _ = fake(ok({"reloaded": False, "restart_needed": [], "error": "busy draining"}),
                           "reload")
    assert rc == 1 and "configuration not reloaded: busy draining" in err, f"rc={rc} {err!r}"


def test_reload_bad_config():
    rc, out, err, _ = fake(error(-4105, "ECONFIG", "g.yaml:3: storage.pool_size: must be 1..64"), "reload")
    assert rc == 1 and out == "" and \
        err == "gpuaggctl: reload: g.yaml:3: storage.pool_size: must be 1..64 (ECONFIG)\n", f"rc={rc} {err!r}"


def test_shutdown():
    rc, out, err, _ = fake(ok({"stopping": True}), "shutdown")
    assert rc == 0 and out == "gpuaggd is stopping\n", f"rc={rc} {out!r}"


# daemon errors → exit 1; a frame complaint with id 0 too
def test_daemon_error():
    rc, out, err, _ = fake(error(-4098, "EBADOP", "unknown op 'config.get'"), "config")
    assert rc == 1 and err == "gpuaggctl: config.get: unknown op 'config.get' (EBADOP)\n", \
        f"rc={rc} {err!r}"


def test_id_0_error():
    rc, out, err, _ = fake(error(-4097, "EPROTO", "request: 'op' missing", rid=0), "stats")
    assert rc == 1 and "request: 'op' missing (EPROTO)" in err, f"rc={rc} {err!r}"


def test_error_without_name():
    rc, out, err, _ = fake(lambda c, raw, req: c.sendall(msgpack.packb(
        {"id": req["id"], "ok": False, "error": {"code": -4101, "message": "queue full"}})), "stats")
    assert rc == 1 and err.endswith("queue full (EBUSY)\n"), f"rc={rc} {err!r}"


def test_trickled_response():
    # the response trickles in one byte at a time, with a second message behind it
    def trickle(conn, raw, req):
        data = msgpack.packb({"id": req["id"], "ok": True, "result": {"pong": True, "version": "1"}})
        for b in data:
            conn.sendall(bytes([b]))
            time.sleep(0.002)
    rc, out, err, _ = fake(trickle, "ping")
    assert rc == 0 and out.startswith("pong from gpuaggd 1 "), f"rc={rc} {out!r} {err!r}"


# broken conversations → exit 4
def test_closed_before_responding():
    rc, out, err, _ = fake(lambda c, raw, req: None, "ping")
    assert rc == 4 and "connection closed by gpuaggd before it responded" in err, f"rc={rc} {err!r}"


def test_closed_mid_response():
    rc, out, err, _ = fake(lambda c, raw, req: c.sendall(b"\x83\xa2id"), "ping")
    assert rc == 4 and "in the middle of a response" in err, f"rc={rc} {err!r}"


def test_timeout():
    t0 = time.monotonic()
    rc, out, err, _ = fake(lambda c, raw, req: time.sleep(1.5), "ping", timeout="0.3")
    assert rc == 4 and "timed out after 0.3 s waiting for a response" in err \
        and time.monotonic() - t0 < 3, f"rc={rc} {err!r}"


def test_wrong_id():
    rc, out, err, _ = fake(lambda c, raw, req: c.sendall(msgpack.packb(
        {"id": 99, "ok": True, "result": None})), "ping")
    assert rc == 4 and "response id 99 does not match request id 1" in err, f"rc={rc} {err!r}"


def test_garbage():
    rc, out, err, _ = fake(lambda c, raw, req: c.sendall(b"\xc1"), "ping")
    assert rc == 4 and "not valid msgpack" in err, f"rc={rc} {err!r}"


def test_bad_envelope():
    rc, out, err, _ = fake(lambda c, raw, req: c.sendall(msgpack.packb({"id": 1, "ok": "yes"})), "ping")
    assert rc == 4 and "response: 'ok' must be a boolean" in err, f"rc={rc} {err!r}"


def test_hostile_length():
    rc, out, err, _ = fake(lambda c, raw, req: c.sendall(b"\xdd\xff\xff\xff\xff"), "ping")
    assert rc == 4 and "larger than 1048576 bytes" in err, f"rc={rc} {err!r}"
