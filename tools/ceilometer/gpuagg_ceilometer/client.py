"""The ingest protocol v1 client behind the publisher (proto/INGEST.md).

One background thread owns the connection.  Producers call add(points); the
thread takes up to `batch` points at a time off a bounded queue, sends them
as columnar `points` messages (several in flight, up to the server's
max_inflight), and forgets a batch only when its `ack` arrives.  When the
connection fails, the batches in flight go back to the head of the queue
and the thread reconnects with exponential backoff; gpuaggd treats a resent
point as the same point (last value wins), so nothing acknowledged or
queued is lost by a restart.  When the queue holds `max_queue` points, the
oldest queued (never sent or failed in flight) are dropped and counted."""
import collections
import logging
import re
import socket
import struct
import threading
import time
import calendar

import msgpack

LOG = logging.getLogger(__name__)

EPROTO, ETOOBIG = -4097, -4100
NAME_MAX = 255
TS_MAX_NS = 7258118400 * 10**9           # 2200-01-01T00:00:00Z, proto/ga_time.h

_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?"
                  r"(Z|[+-]\d\d:?\d\d)?$", re.I)


def parse_timestamp(ts):
    """Ceilometer's timestamp (an ISO 8601 str as isoformat() writes it, no
    zone meaning UTC; or a datetime) → int ns since the epoch, exactly.
    Raises ValueError."""
    if hasattr(ts, "isoformat"):
        ts = ts.isoformat()
    m = _ISO.match(ts.strip()) if isinstance(ts, str) else None
    if not m:
        raise ValueError("timestamp not ISO 8601: %r" % (ts,))
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    frac = (m.group(7) or "").ljust(9, "0")
    secs = calendar.timegm((y, mo, d, h, mi, min(s, 59), 0, 0, 0)) + (s == 60)
    zone = m.group(8)
    if zone and zone.upper() != "Z":
        sign = -1 if zone[0] == "-" else 1
        z = zone[1:].replace(":", "")
        secs -= sign * (int(z[:2]) * 3600 + int(z[2:]) * 60)
    return secs * 10**9 + int(frac)


class Client:
    """address: ("tcp", host, port) or ("unix", path).  Thread-safe."""

    def __init__(self, address, token=None, batch=1000, max_queue=100000, timeout=10.0,
                 backoff_initial=0.1, backoff_max=10.0, name="ceilometer-gpuagg"):
        self.address, self.token, self.batch = address, token, max(1, int(batch))
        self.max_queue, self.timeout = max(1, int(max_queue)), float(timeout)
        self.backoff_initial, self.backoff_max = float(backoff_initial), float(backoff_max)
        self.name = name
        self._cv = threading.Condition()
        self._queue = collections.deque()        # (name, ts_ns, value), oldest first
        self._inflight = collections.OrderedDict()   # seq -> list of points
        self._seq = 0
        self._closed = False
        self._sock = None
        self.stats = {"queued": 0, "acked": 0, "rejected": 0, "late": 0, "dropped_queue_full": 0,
                      "dropped_refused": 0, "reconnects": 0, "connect_failures": 0}
        self._last_drop_log = 0.0
        self._dropped_since_log = 0
        self._thread = threading.Thread(target=self._run, name="gpuagg-publisher", daemon=True)
        self._thread.start()

    # ---- producer side ---------------------------------------------------------

    def add(self, points):
        """Queue points, a list of (metric name, ts ns, float value)."""
        with self._cv:
            for p in points:
                self._queue.append(p)
            self.stats["queued"] += len(points)
            over = len(self._queue) + sum(len(b) for b in self._inflight.values()) - self.max_queue
            dropped = 0
            while over > 0 and self._queue:
                self._queue.popleft()
                over -= 1
                dropped += 1
            if dropped:
                self.stats["dropped_queue_full"] += dropped
                self._report_drop(dropped)
            self._cv.notify_all()

    def _report_drop(self, n):
        self._dropped_since_log += n
        now = time.monotonic()
        if now - self._last_drop_log >= 1.0:
            LOG.warning("gpuagg publisher: queue full (max_queue=%d points, gpuaggd at %s "
                        "unreachable or slow): dropped the %d oldest points (%d in all)",
                        self.max_queue, self._where(), self._dropped_since_log,
                        self.stats["dropped_queue_full"])
            self._last_drop_log, self._dropped_since_log = now, 0

    def pending(self):
        """Points queued or sent and not yet acknowledged."""
        with self._cv:
            return len(self._queue) + sum(len(b) for b in self._inflight.values())

    def flush(self, timeout=None):
        """Wait until every point added so far is acknowledged (or dropped);
        True if that happened within timeout seconds."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while self._queue or self._inflight:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cv.wait(left if left is None else min(left, 0.5))
            return True

    def close(self, timeout=5.0):
        """Flush for up to timeout seconds, then stop the thread; returns the
        number of points left unsent (also logged).  Idempotent."""
        with self._cv:
            if self._closed:
                return len(self._queue) + sum(len(b) for b in self._inflight.values())
        self.flush(timeout)
        with self._cv:
            self._closed = True
            left = len(self._queue) + sum(len(b) for b in self._inflight.values())
            self._cv.notify_all()
        self._thread.join(timeout=max(1.0, self.timeout))
        if left:
            LOG.warning("gpuagg publisher: closing with %d points not acknowledged by gpuaggd at "
                        "%s: they are dropped", left, self._where())
        return left

    # ---- the connection thread -----------------------------------------------

    def _where(self):
        return self.address[1] if self.address[0] == "unix" else "%s:%d" % self.address[1:]

    def _connect(self):
        if self.address[0] == "unix":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            target = self.address[1]
        else:
            s = socket.socket(socket.AF_INET6 if ":" in self.address[1] else socket.AF_INET,
                              socket.SOCK_STREAM)
            target = (self.address[1], self.address[2])
        s.settimeout(self.timeout)
        try:
            s.connect(target)
            hello = {"type": "hello", "version": 1, "client": self.name}
            if self.token:
                hello["token"] = self.token
            s.sendall(msgpack.packb(hello, use_bin_type=True))
            up = msgpack.Unpacker(raw=False)
            reply = self._read_one(s, up)
            if reply.get("type") == "error":
                raise ConnectionError("gpuaggd refused the hello: %s (%s)" %
                                      (reply.get("message"), reply.get("name")))
            if reply.get("type") != "hello":
                raise ConnectionError("gpuaggd answered the hello with %r" % reply.get("type"))
        except Exception:
            s.close()
            raise
        s.settimeout(0.2)
        return s, up, max(1, int(reply.get("max_inflight", 1))), int(reply.get("max_frame", 1 << 20))

    @staticmethod
    def _read_one(s, up):
        while True:
            for obj in up:
                return obj
            data = s.recv(65536)
            if not data:
                raise ConnectionError("gpuaggd closed the connection")
            up.feed(data)

    def _requeue_inflight(self):
        """Put the unacknowledged batches back at the head of the queue, in order."""
        for pts in reversed(list(self._inflight.values())):
            self._queue.extendleft(reversed(pts))
        self._inflight.clear()

    def _encode(self, seq, pts):
        names, index, idx = [], [], {}
        for n, _, _ in pts:
            i = idx.get(n)
            if i is None:
                i = idx[n] = len(names)
                names.append(n)
            index.append(i)
        k = len(pts)
        return msgpack.packb({"type": "points", "seq": seq, "names": names,
                              "index": struct.pack("<%dI" % k, *index),
                              "ts": struct.pack("<%dq" % k, *(p[1] for p in pts)),
                              "values": struct.pack("<%dd" % k, *(p[2] for p in pts))},
                             use_bin_type=True)

    def _handle(self, msg):
        """An ack or error from the server (called with the lock held).
        Returns False when the connection must be dropped."""
        if msg.get("type") == "ack":
            pts = self._inflight.pop(msg.get("seq"), None)
            if pts is None:
                LOG.warning("gpuagg publisher: ack for unknown seq %r", msg.get("seq"))
                return True
            rej = msg.get("rejected") or []
            self.stats["acked"] += msg.get("accepted", 0)
            self.stats["rejected"] += len(rej)
            for r in rej[:5]:
                i = r.get("index", -1)
                LOG.warning("gpuagg publisher: gpuaggd refused point %s of metric %r: %s", i,
                            pts[i][0] if 0 <= i < len(pts) else "?", r.get("reason"))
            late = msg.get("late") or []        # accepted, behind their metric's window
            self.stats["late"] += len(late)
            for r in late[:1]:
                i = r.get("index", -1)
                LOG.warning("gpuagg publisher: %d points stored as late, e.g. point %s of metric "
                            "%r: %s", len(late), i, pts[i][0] if 0 <= i < len(pts) else "?",
                            r.get("reason"))
            self._cv.notify_all()
            return True
        if msg.get("type") == "error":
            code, seq = msg.get("code"), msg.get("seq")
            if code in (EPROTO, ETOOBIG) and seq in self._inflight:
                pts = self._inflight.pop(seq)
                self.stats["dropped_refused"] += len(pts)
                LOG.error("gpuagg publisher: gpuaggd refused a batch of %d points: %s (%s); "
                          "dropped", len(pts), msg.get("message"), msg.get("name"))
            else:
                LOG.warning("gpuagg publisher: gpuaggd at %s: %s (%s); reconnecting",
                            self._where(), msg.get("message"), msg.get("name"))
            return False
        LOG.warning("gpuagg publisher: unexpected message %r", msg.get("type"))
        return False

    def _run(self):
        backoff = self.backoff_initial
        while True:
            with self._cv:
                while not self._closed and not self._queue and not self._inflight and self._sock is None:
                    self._cv.wait()
                if self._closed:
                    break
            try:
                s, up, max_inflight, max_frame = self._connect()
            except Exception as e:
                with self._cv:
                    self.stats["connect_failures"] += 1
                    if self.stats["connect_failures"] == 1 or backoff >= self.backoff_max:
                        LOG.warning("gpuagg publisher: cannot reach gpuaggd at %s: %s; %d points "
                                    "queued, retrying", self._where(), e, len(self._queue))
                    self._cv.wait(backoff)
                backoff = min(backoff * 2, self.backoff_max)
                continue
            with self._cv:
                self.stats["reconnects"] += 1
            progressed = self._serve(s, up, max_inflight, max_frame)
            s.close()
            with self._cv:
                self._requeue_inflight()
                self._cv.notify_all()
                if progressed:
                    backoff = self.backoff_initial
                elif self._queue and not self._closed:
                    # accepted, then failed before any ack: do not spin
                    self._cv.wait(backoff)
                    backoff = min(backoff * 2, self.backoff_max)

    def _serve(self, s, up, max_inflight, max_frame):
        """Send and read acks on one connection until it fails or the client
        closes; returns whether any ack arrived."""
        last_progress = time.monotonic()
        acked = False
        while True:
            with self._cv:
                if self._closed:
                    return acked
                out = []
                while self._queue and len(self._inflight) < max_inflight:
                    k = min(self.batch, len(self._queue))
                    pts = [self._queue.popleft() for _ in range(k)]
                    self._seq += 1
                    self._inflight[self._seq] = pts
                    out.append(self._encode(self._seq, pts))
                idle = not self._inflight
            try:
                for frame in out:
                    s.sendall(frame)
                if out:
                    last_progress = time.monotonic()
                if idle:
                    with self._cv:
                        if not self._queue and not self._closed:
                            self._cv.wait(0.5)
                    continue
                try:
                    data = s.recv(65536)
                except socket.timeout:
                    if time.monotonic() - last_progress > self.timeout:
                        LOG.warning("gpuagg publisher: no ack from gpuaggd at %s for %.0f s; "
                                    "reconnecting", self._where(), self.timeout)
                        return acked
                    continue
                if not data:
                    return acked
                up.feed(data)
                with self._cv:
                    for msg in up:
                        last_progress = time.monotonic()
                        acked = acked or msg.get("type") == "ack"
                        if not self._handle(msg):
                            return acked
            except OSError as e:
                LOG.info("gpuagg publisher: connection to %s lost: %s", self._where(), e)
                return acked
