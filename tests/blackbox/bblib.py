"""Shared helpers for the black-box tests: start the real gpuaggd on
temporary sockets, talk msgpack to its control socket.

The test files are pytest modules (tests/conftest.py); tests/run.sh runs
each with `python3 -m pytest -q -rs`."""
import msgpack
import os
import signal
import socket
import subprocess
import tempfile
import time

ROOT = os.environ.get("GA_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.join(ROOT, "build", "bin")
GPUAGGD = os.path.join(BIN, "gpuaggd")
GPUAGGCTL = os.path.join(BIN, "gpuaggctl")


def free_port():
    """A TCP port on 127.0.0.1 nothing listens on now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def read_points(path):
    """The points gpuagg-load --log wrote to path (metric TAB ts TAB value
    a line; {} when absent): {(metric, ts): value}, each timestamp once."""
    pts = {}
    if not os.path.exists(path):
        return pts
    with open(path) as f:
        for line in f:
            m, ts, v = line.rstrip("\n").split("\t")
            key = (m, int(ts))
            assert key not in pts, "timestamp sent twice: %r" % (key,)
            pts[key] = float(v)
    return pts


def config_text(tmp, conninfo=None, extra=""):
    """A minimal valid config whose sockets and journal live in tmp."""
    conninfo = conninfo or "host=%s/nopg dbname=gpuagg connect_timeout=1" % tmp
    return f"""log: {{ level: info }}
control: {{ socket: {tmp}/control.sock }}
listen: {{ unix: {tmp}/ingest.sock, tcp: "127.0.0.1:0", udp: "127.0.0.1:0", telemetry_secret: "" }}
storage: {{ conninfo: "{conninfo}", retry_initial_ms: 100, retry_max_ms: 500 }}
journal: {{ dir: {tmp}/journal }}
{extra}"""


class Daemon:
    """gpuaggd --foreground on a config in a temporary directory."""

    def __init__(self, conninfo=None, extra="", env=None):
        self.tmp = tempfile.mkdtemp(prefix="gabb-")
        self.cfg = os.path.join(self.tmp, "gpuaggd.yaml")
        self.sock = os.path.join(self.tmp, "control.sock")
        self.log = os.path.join(self.tmp, "gpuaggd.log")
        self.write_config(config_text(self.tmp, conninfo, extra))
        self.env = dict(os.environ, GA_LOG_NO_TS="1", **(env or {}))
        self.proc = None

    def write_config(self, text):
        with open(self.cfg, "w") as f:
            f.write(text)

    def start(self, wait=True):
        self.logf = open(self.log, "ab")
        self.proc = subprocess.Popen([GPUAGGD, "--config", self.cfg, "--foreground"],
                                     stderr=self.logf, env=self.env)
        if wait:
            self.wait_socket()
        return self

    def wait_socket(self, timeout=10.0):
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise AssertionError("gpuaggd exited %d:\n%s" % (self.proc.returncode, self.logtext()))
            try:
                self.call("ping")
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("control socket never answered:\n" + self.logtext())

    def logtext(self):
        with open(self.log, "r", errors="replace") as f:
            return f.read()

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(self.sock)
        return s

    def call(self, op, args=None, id=1):
        s = self.connect()
        try:
            send(s, op, args, id)
            return recv(s)
        finally:
            s.close()

    def ctl(self, *args, timeout=10):
        return subprocess.run([GPUAGGCTL, "--socket", self.sock] + list(args),
                              capture_output=True, text=True, timeout=timeout)

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=15):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("gpuaggd did not stop within %ss on SIGTERM" % timeout)
        return self.proc.returncode if self.proc else None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def send(s, op, args=None, id=1):
    req = {"id": id, "op": op}
    if args is not None:
        req["args"] = args
    s.sendall(msgpack.packb(req))


def recv(s, unpacker=None):
    """Read one msgpack object from s (raises on EOF)."""
    up = unpacker or msgpack.Unpacker(raw=False)
    while True:
        for obj in up:
            return obj
        data = s.recv(65536)
        if not data:
            raise EOFError("connection closed")
        up.feed(data)


def wait_for(pred, timeout=10.0, step=0.05):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()
