#!/usr/bin/python3
"""gen_vectors.py — test vectors for proto/ceilometer.c and proto/pystr.c,
made with Debian's real Ceilometer code.

  gen_vectors.py samples [--seed N] [--count N] [-o FILE]
      Sign samples with ceilometer.publisher.utils (via the real
      UDPPublisher, which calls meter_message_from_counter and
      msgpack.dumps(msg, use_bin_type=True)), catch the datagrams on a local
      UDP socket and write one line per datagram:
          <secret hex> <datagram hex> <signature> <metric hex> <type> <ts ns> <value>
      <signature> is message_signature as sent ("-" when empty); <value> is
      repr(float(counter_volume)).  Fixed hand-written samples come first,
      then --count random ones from --seed.
  gen_vectors.py floats [--seed N] [--count N] [-o FILE]
      Lines "<IEEE-754 bits, 16 hex> <repr(float)>" for edge values and
      random doubles.

`samples` needs Debian's python3-ceilometer, which tools/deps.sh installs
(`make test` runs it); nothing is fetched here.  Without it, `samples`
exits 77 (skip) and says so on stderr.  The publisher needs only
oslo.config, oslo.log, oslo.utils, oslo.i18n, stevedore and msgpack, which
python3-gnocchi already pulls in.

tests/ceilometer/data/{samples,float_repr}.txt were made with the defaults.
"""
import argparse
import datetime
import importlib
import math
import random
import socket
import struct
import sys

EXIT_SKIP = 77          # what is needed is not installed (automake's skip status)


def find_ceilometer():
    """None when `import ceilometer.publisher.udp` works, else the reason."""
    try:
        importlib.import_module("ceilometer.publisher.udp")
        return None
    except ImportError as e:
        return ("Ceilometer is not importable (%s): install Debian's python3-ceilometer "
                "(tools/deps.sh, run by make test)" % e)


def make_publisher(secret, port):
    """A standalone UDPPublisher sending to 127.0.0.1:port, signing with
    secret — the recipe the daemon's black-box tests can copy."""
    from oslo_config import cfg
    from oslo_utils import netutils
    from ceilometer.publisher import udp, utils
    conf = cfg.ConfigOpts()
    conf.register_opts(utils.OPTS, group="publisher")
    conf([], project="ceilometer", default_config_files=[])
    conf.set_override("telemetry_secret", secret, group="publisher")
    return udp.UDPPublisher(conf, netutils.urlsplit("udp://127.0.0.1:%d" % port))


# -- samples -------------------------------------------------------------------
SECRETS = ["change this for valid signing", "s\u00e9cret \u2713", "k" * 100, "x", ""]

WEIRD_FLOATS = [0.1, 1e-05, 1e+16, 123456789.0, -0.0, 0.0, 1.0, 1e300, 5e-324, 2.5e-308,
                1e15, 9999999999999998.0, 0.0001, 0.00012, 1/3, -1.5, 2**53 + 0.0,
                float("inf"), float("-inf"), float("nan")]
WEIRD_INTS = [0, 1, -1, 127, 128, 255, 65536, -33, 2**31, -2**31, 2**63 - 1, -2**63, 2**64 - 1]
WEIRD_STRS = ["", "plain", "caf\u00e9", "\u4e2d\u6587", "\U0001f600", "it's", 'say "hi"',
              "both ' and \"", "back\\slash", "tab\there\nnl\r", "\x00nul\x7f", "a:b", "None"]
WEIRD_BYTES = [b"", b"abc", b"\x00\xff\x80", b"it's", b'q"', b"\\", b"\t\n\r\x7f"]


def fixed_metadata():
    """Hand-picked resource_metadata: every value type Python str() shows."""
    return [
        {},
        {"flavor": {"name": "m1.tiny", "ram": 512, "vcpus": 1, "disk": 0.5, "extra": {}},
         "image": {"id": "cirros", "meta": {"a": {"b": {"c": [1, 2]}}}},
         "status": "active", "ok": True, "bad": False, "none": None},
        {"floats": WEIRD_FLOATS, "ints": WEIRD_INTS, "strs": WEIRD_STRS,
         "bytes": [b for b in WEIRD_BYTES if b.isascii()]},
        {"f%d" % i: f for i, f in enumerate(WEIRD_FLOATS)},
        {"i%d" % i: v for i, v in enumerate(WEIRD_INTS)},
        {"s%d" % i: v for i, v in enumerate(WEIRD_STRS)},
        {"b%d" % i: v for i, v in enumerate(WEIRD_BYTES)},
        {"list": [1, "a", None, 0.1, True, [], (), {}, {"k": "v", "a": [b"x", "y"]}, ("t", 1)],
         "tuple": ("x", 2, None), "nested": [[["deep"]]], "dict_in_list": [{"z": 1, "a": {"m": "n"}}]},
        {"a": 1, "a0": {"z": 2}, "a:b": 3, "B": 4, "\u00e9": 5, "z": {"": 6}, "": 7, "A": {"a": {}}},
        {"key with space": "v", "caf\u00e9": {"\u4e2d": "\U0001f600"}, "\x01ctl": "\x02"},
    ]


def rand_value(rng, depth, in_list=False):
    """A random metadata value.  Inside lists (in_list), bytes are ASCII:
    Ceilometer's decode_unicode turns them into str there, which fails on
    non-UTF-8 and whose non-ASCII repr() proto/pystr.c does not reproduce."""
    k = rng.randrange(11 if depth < 3 else 7)
    if k == 0:
        return rng.choice(WEIRD_FLOATS + [rng.uniform(-1e6, 1e6), rng.random() * 10 ** rng.randint(-30, 30),
                                          struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]])
    if k == 1:
        return rng.choice(WEIRD_INTS + [rng.randint(-2**63, 2**64 - 1), rng.randint(-1000, 1000)])
    if k == 2:
        return rng.choice(WEIRD_STRS) + "".join(chr(rng.choice([rng.randint(32, 126), rng.randint(160, 0x2fff)]))
                                                for _ in range(rng.randint(0, 6)))
    if k == 3:
        return rng.choice([None, True, False])
    if k == 4:
        b = rng.choice(WEIRD_BYTES)
        return b.decode("latin-1").encode("ascii", "replace") if in_list else b
    if k in (5, 6):
        return "%08x-%04x" % (rng.getrandbits(32), rng.getrandbits(16))
    if k in (7, 8):
        return {rand_key(rng): rand_value(rng, depth + 1, in_list) for _ in range(rng.randint(0, 4))}
    items = [rand_value(rng, depth + 1, True) for _ in range(rng.randint(0, 4))]
    return tuple(items) if k == 9 and rng.random() < 0.5 else items


def rand_key(rng):
    return rng.choice(["a", "b", "A", "a:b", "x" * rng.randint(1, 3), "caf\u00e9", "\u4e2d", "k%d" % rng.randint(0, 99),
                       "", "_", "Z", "zz", "name", "id"])


def make_samples(rng, count):
    """(secret, Sample) pairs: the fixed set, then random ones."""
    from ceilometer import sample
    from oslo_utils import timeutils
    out = []
    stamps = ["2026-11-21T15:04:05.123456", "2026-11-21T15:04:05", "2012-05-08T20:23:48.028195+00:00",
              "1970-01-01T00:00:00Z", "2262-04-11T23:47:16.854775", "1677-09-21T00:12:43.145225",
              "2000-02-29T12:00:00.000001+05:30", timeutils.utcnow().isoformat(),
              timeutils.parse_isotime("2012-05-08 20:23:48.5-02:00").isoformat()]
    types = ["gauge", "delta", "cumulative"]
    volumes = [1, 0, -5, 2**53, 0.1, 1e-05, 1e16, 123456789.0, 3.25, -0.0, 2**63 - 1]
    md = fixed_metadata()
    n = max(len(md), len(stamps), len(volumes)) * len(SECRETS)
    for i in range(n):
        out.append((SECRETS[i % len(SECRETS)], sample.Sample(
            name="cpu.util" if i % 2 else "disk.read.bytes", type=types[i % 3], unit="%",
            volume=volumes[i % len(volumes)], user_id="u-%d" % i, project_id="p\u00e9",
            resource_id="inst-%04d" % i, timestamp=stamps[i % len(stamps)],
            resource_metadata=md[i % len(md)], source="openstack",
            monotonic_time=None if i % 3 else 12345.678 + i)))
    for i in range(count):
        ts = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=rng.randint(0, 2**62) // 1000)
        out.append((rng.choice(SECRETS[:-1]), sample.Sample(
            name=rng.choice(["cpu", "memory.usage", "network.incoming.bytes", "caf\u00e9.n"]),
            type=rng.choice(types), unit="B", volume=rand_value(rng, 9) if rng.random() < 0.1 else
            rng.choice([rng.randint(-10**6, 10**6), rng.uniform(-1e9, 1e9)]),
            user_id=rand_value(rng, 3), project_id=rand_value(rng, 3),
            resource_id="%032x" % rng.getrandbits(128), timestamp=ts.isoformat(),
            resource_metadata={rand_key(rng): rand_value(rng, 0) for _ in range(rng.randint(0, 8))},
            source=rng.choice(["openstack", None]), monotonic_time=rng.choice([None, rng.random() * 1e6]))))
    return out


def expected(msg):
    """What ceilo_decode must return for a message: (metric, type, ns, value)
    or None when it must refuse it (volume not a finite number).  A time
    after 2200-01-01T00:00:00Z (GA_TS_MAX) is written as it is: the unit test
    expects out_of_range for it (tests/unit/test_ceilometer.c)."""
    vol = msg["counter_volume"]
    if isinstance(vol, bool) or not isinstance(vol, (int, float)) or not math.isfinite(vol):
        return None
    dt = datetime.datetime.fromisoformat(msg["timestamp"].replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    us = (dt - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // datetime.timedelta(microseconds=1)
    return (msg["resource_id"] + "/" + msg["counter_name"], msg["counter_type"], us * 1000, float(vol))


def gen_samples(seed, count, out):
    import msgpack
    from ceilometer.publisher import utils
    rng = random.Random(seed)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(5)
    port = sock.getsockname()[1]
    pubs = {}
    for secret, s in make_samples(rng, count):
        pub = pubs.get(secret) or pubs.setdefault(secret, make_publisher(secret, port))
        pub.publish_samples([s])
        data = sock.recv(65536)
        msg = msgpack.loads(data)
        sig = msg["message_signature"]
        # the real verifier must accept the decoded message, or the vector
        # says nothing about the sender's signature
        assert utils.verify_signature(msg, secret), msg
        exp = expected(msg)
        metric, ctype, ns, value = exp if exp else ("", "-", 0, float("nan"))
        out.write("%s %s %s %s %s %d %r\n" % (secret.encode().hex() or "-", data.hex(), sig or "-",
                                              metric.encode().hex() or "-", ctype, ns, value))
    sock.close()


# -- floats --------------------------------------------------------------------
def gen_floats(seed, count, out):
    rng = random.Random(seed)
    vals = [0.0, -0.0, float("inf"), float("-inf"), float("nan")] + WEIRD_FLOATS
    vals += [math.ldexp(1.0, e) for e in range(-1074, 1024)]
    vals += [math.nextafter(math.ldexp(1.0, e), 0) for e in range(-1073, 1025, 7)]
    vals += [10.0 ** e for e in range(-323, 309)]
    vals += [x * 10.0 ** e for e in range(-8, 20) for x in (1.5, 9.999, 12345.678)]
    for _ in range(count):
        k = rng.randrange(4)
        if k == 0:
            v = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        elif k == 1:
            v = round(rng.uniform(-1e6, 1e6), rng.randint(0, 9))
        elif k == 2:
            v = rng.randint(1, 10 ** rng.randint(1, 20)) * 10.0 ** rng.randint(-30, 30)
        else:
            v = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(52)))[0]   # subnormal
        vals.append(-v if rng.random() < 0.5 else v)
    for v in vals:
        out.write("%016x %r\n" % (struct.unpack("<Q", struct.pack("<d", v))[0], v))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["samples", "floats"])
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--count", type=int)
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    why = find_ceilometer() if a.what == "samples" else None
    if why:
        print("gen_vectors: " + why, file=sys.stderr)
        sys.exit(EXIT_SKIP)
    out = open(a.output, "w") if a.output else sys.stdout
    if a.what == "floats":
        gen_floats(a.seed, 3000 if a.count is None else a.count, out)
    else:
        gen_samples(a.seed, 150 if a.count is None else a.count, out)
    out.close()


if __name__ == "__main__":
    main()
