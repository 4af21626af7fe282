"""GpuaggPublisher: Ceilometer's publisher plugin for gpuaggd, registered on
the `ceilometer.sample.publisher` entry point as `gpuagg`.

    sinks:
      - name: gpuagg_sink
        publishers:
          - gpuagg:///run/gpuagg/ingest.sock
          - gpuagg://127.0.0.1:4951?token=s3cret&batch=1000&max_queue=100000

Options (URL query): token (listen.token of a TCP listener), batch (points
per message, default 1000), max_queue (points buffered while gpuaggd is
away, default 100000; beyond it the oldest are dropped and counted),
timeout (seconds to wait for a connection or an ack, default 10),
backoff_max (seconds between reconnection attempts at most, default 10).

Each sample becomes one point of the metric "<resource_id>/<counter_name>"
(the name gpuaggd gives a sample arriving over UDP) at the sample's
timestamp.  publish_samples() only queues: a background thread sends,
waits for acks and retries (gpuagg_ceilometer.client).  Samples without a
usable timestamp or volume are dropped here, logged and counted."""
import atexit
import math
import urllib.parse

from oslo_log import log

from ceilometer import publisher
from gpuagg_ceilometer.client import Client, NAME_MAX, parse_timestamp

LOG = log.getLogger(__name__)


def parse_url(parsed_url):
    """(address, options) from the publisher URL, or ValueError."""
    q = {k: v[-1] for k, v in urllib.parse.parse_qs(parsed_url.query or "").items()}
    if parsed_url.netloc:
        host, _, port = parsed_url.netloc.rpartition(":")
        host = host.strip("[]")
        if not host or not port.isdigit():
            raise ValueError("gpuagg publisher URL %r: want gpuagg://host:port or "
                             "gpuagg:///path/to/socket" % parsed_url.geturl())
        address = ("tcp", host, int(port))
    elif parsed_url.path:
        address = ("unix", parsed_url.path)
    else:
        raise ValueError("gpuagg publisher URL %r: no address" % parsed_url.geturl())
    known = {"token", "batch", "max_queue", "timeout", "backoff_max"}
    unknown = set(q) - known
    if unknown:
        raise ValueError("gpuagg publisher URL: unknown option(s) %s (known: %s)" %
                         (", ".join(sorted(unknown)), ", ".join(sorted(known))))
    opts = {}
    if "token" in q:
        opts["token"] = q["token"]
    for k, conv in (("batch", int), ("max_queue", int), ("timeout", float), ("backoff_max", float)):
        if k in q:
            try:
                v = conv(q[k])
            except ValueError:
                raise ValueError("gpuagg publisher URL: %s=%r is not a number" % (k, q[k]))
            if not v > 0:
                raise ValueError("gpuagg publisher URL: %s must be positive" % k)
            opts[k] = v
    return address, opts


class GpuaggPublisher(publisher.ConfigPublisherBase):
    def __init__(self, conf, parsed_url):
        super().__init__(conf, parsed_url)
        address, opts = parse_url(parsed_url)
        self.dropped_invalid = 0
        self.client = Client(address, **opts)
        # at exit, give what is queued a last chance (and log what is left)
        atexit.register(self.client.close, min(self.client.timeout, 5.0))
        LOG.info("gpuagg publisher: sending to %s", self.client._where())

    def publish_samples(self, samples):
        points = []
        for s in samples:
            name = "%s/%s" % (s.resource_id, s.name)
            try:
                ts = parse_timestamp(s.timestamp)
                v = float(s.volume)
                if not math.isfinite(v):
                    raise ValueError("volume %r is not finite" % (s.volume,))
                if len(name.encode("utf-8")) > NAME_MAX:
                    raise ValueError("metric name longer than %d bytes" % NAME_MAX)
            except (TypeError, ValueError) as e:
                self.dropped_invalid += 1
                LOG.warning("gpuagg publisher: dropped sample %s: %s (%d dropped so far)",
                            name, e, self.dropped_invalid)
                continue
            points.append((name, ts, v))
        if points:
            self.client.add(points)

    def publish_events(self, events):
        raise NotImplementedError("gpuagg publisher: events are not supported")

    def flush(self, timeout=None):
        """Wait until every published sample is acknowledged; True if so."""
        return self.client.flush(timeout)
