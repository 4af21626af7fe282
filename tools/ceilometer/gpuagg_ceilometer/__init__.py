"""gpuagg_ceilometer — a Ceilometer sample publisher for gpuaggd.

Publisher URLs (pipeline.yaml, sinks → publishers):
    gpuagg://host:port[?options]        gpuaggd's listen.tcp
    gpuagg:///path/to/socket[?options]  gpuaggd's listen.unix
It speaks gpuagg's acknowledged ingest protocol (proto/INGEST.md): samples
are batched in columnar form, kept until gpuaggd acknowledges them (after
they are durable in its journal), resent after a reconnect, and buffered in
a bounded in-memory queue while the daemon is away.  See publisher.py."""
from gpuagg_ceilometer.client import Client, parse_timestamp  # noqa: F401

__version__ = "0.1.0"
