"""http.auth keystone against Debian 12's real Keystone (python3-keystone,
fernet tokens, SQLite) served by keystone.server.wsgi's public application
under wsgiref.

Keystone holds a service project with the user gnocchi (role service, the
user gpuaggd validates tokens with) and aodh (role admin, as Aodh's service
user), projects A and B with a member each, and the `metric` service whose
public endpoint is gpuaggd.  The clients find gpuaggd through that catalog
as they find Gnocchi: gnocchiclient on a keystoneauth1 v3 Password session
and Aodh's Gnocchi threshold evaluator with password service credentials.

A second Keystone on the same database and keys issues tokens that expire
after TOKEN_LIFE_S, for the expiry test.  gpuaggd caches tokens
CACHE_S seconds, at most 16 of them."""
import datetime
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid

import msgpack
from gnocchiclient import client as gclient
from keystoneauth1 import session as ksession
from keystoneauth1.identity import v3
import pytest

from apilib import ROOT, HttpDaemon, free_port, wait_for

PG = os.path.join(ROOT, "tools", "pg-private.sh")
POLICY = """archive_policies:
  - name: kstest
    back_window: 10
    definition:
      - granularity: 60
        timespan: 1 day
    aggregation_methods: [mean, max]
default_archive_policy: kstest
"""
CACHE_S = 12                  # http.keystone.token_cache_s
TOKEN_LIFE_S = 8              # the second Keystone's [token] expiration (< CACHE_S - 1.5)
CACHE_ENTRIES = 16
ADMIN_PW, SVC_PW, USER_PW = "admin-pw", "gnocchi-pw", "user-pw"
RID = str(uuid.uuid4())
# One request at a time, on a SQLite file in WAL mode: in its default
# journal mode Keystone's own connections lock each other out ("database is
# locked" creating a role after projects).
SERVER = """
import sys, wsgiref.simple_server as ws
port = int(sys.argv.pop(1))    # keystone's own options are parsed from argv
from keystone.server.wsgi import initialize_public_application
app = initialize_public_application()
class Quiet(ws.WSGIRequestHandler):
    def log_message(self, *a):
        pass
ws.make_server("127.0.0.1", port, app, handler_class=Quiet).serve_forever()
"""


class Env:
    d = None
    ks = ks_short = None      # Keystone processes
    ks_url = ks_short_url = ""
    tmp = ""
    ids = {}


E = Env()


# ---- Keystone ----------------------------------------------------------------

def keystone_conf(tmp, name, expiration):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write("""[DEFAULT]
use_stderr = true
[database]
connection = sqlite:///{t}/keystone.db?timeout=60
[token]
provider = fernet
expiration = {exp}
[fernet_tokens]
key_repository = {t}/fernet-keys
[fernet_receipts]
key_repository = {t}/fernet-receipts
[credential]
key_repository = {t}/credential-keys
[identity]
password_hash_rounds = 4
[cache]
enabled = false
""".format(t=tmp, exp=expiration))
    return path


def manage(conf, *args, log=None):
    return subprocess.Popen(["keystone-manage", "--config-file", conf] + list(args),
                            stdout=log, stderr=subprocess.STDOUT)


def setup_keystone():
    """One database for the suite: db_sync and the key repositories at once,
    then bootstrap."""
    E.tmp = tempfile.mkdtemp(prefix="gaks-", dir="/tmp")
    conf = keystone_conf(E.tmp, "keystone.conf", 3600)
    keystone_conf(E.tmp, "short.conf", TOKEN_LIFE_S)
    port = free_port()
    E.ks_url = "http://127.0.0.1:%d" % port
    log = open(os.path.join(E.tmp, "manage.log"), "ab")
    own = ["--keystone-user", "root", "--keystone-group", "root"]
    procs = [manage(conf, "db_sync", log=log), manage(conf, "fernet_setup", *own, log=log),
             manage(conf, "credential_setup", *own, log=log)]
    for p in procs:
        assert p.wait(300) == 0, open(os.path.join(E.tmp, "manage.log")).read()[-3000:]
    db = sqlite3.connect(os.path.join(E.tmp, "keystone.db"))
    assert db.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    db.close()
    p = manage(conf, "bootstrap", "--bootstrap-password", ADMIN_PW,
               "--bootstrap-admin-url", E.ks_url + "/v3", "--bootstrap-public-url",
               E.ks_url + "/v3", "--bootstrap-internal-url", E.ks_url + "/v3",
               "--bootstrap-region-id", "RegionOne", log=log)
    assert p.wait(300) == 0, open(os.path.join(E.tmp, "manage.log")).read()[-3000:]
    E.ks = start_keystone("keystone.conf", port)
    wait_keystone(E.ks, E.ks_url)


def start_short_keystone():
    """The second Keystone, once the accounts are made (the two share one
    SQLite file)."""
    E.ks_short_url = "http://127.0.0.1:%d" % free_port()
    E.ks_short = start_keystone("short.conf", int(E.ks_short_url.rsplit(":", 1)[1]))
    wait_keystone(E.ks_short, E.ks_short_url)


def start_keystone(conf, port):
    env = dict(os.environ, OS_KEYSTONE_CONFIG_DIR=E.tmp, OS_KEYSTONE_CONFIG_FILES=conf)
    log = open(os.path.join(E.tmp, conf + ".log"), "ab")
    return subprocess.Popen([sys.executable, "-c", SERVER, str(port)], env=env, stdout=log,
                            stderr=subprocess.STDOUT)


def keystone_logs():
    out = []
    for name in ("manage.log", "keystone.conf.log", "short.conf.log"):
        path = os.path.join(E.tmp, name)
        if os.path.exists(path):
            out.append("--- %s\n%s" % (name, open(path, errors="replace").read()[-4000:]))
    return "\n".join(out)


def wait_keystone(proc, url):
    def up():
        assert proc.poll() is None, keystone_logs()
        try:
            socket.create_connection((url[7:].split(":")[0], int(url.rsplit(":", 1)[1])),
                                     1).close()
            return True
        except OSError:
            return False
    assert wait_for(up, 120, 0.2), "Keystone at %s never listened" % url


def password_auth(user, password, project, url=None):
    return v3.Password(auth_url=(url or E.ks_url) + "/v3", username=user, password=password,
                       project_name=project, user_domain_name="Default",
                       project_domain_name="Default")


def token(user, project, url=None):
    """A new token of user scoped to project."""
    pw = {"admin": ADMIN_PW, "gnocchi": SVC_PW}.get(user, USER_PW)
    return ksession.Session(auth=password_auth(user, pw, project, url)).get_token()


def admin():
    return ksession.Session(auth=password_auth("admin", ADMIN_PW, "admin"))


def setup_accounts():
    """Projects, users, roles and gpuaggd's catalog entry (the daemon's port
    is known before it starts)."""
    s = admin()
    u = E.ks_url + "/v3"

    def role(name):
        got = s.get(u + "/roles", params={"name": name}).json()["roles"]
        if got:
            return got[0]["id"]
        return s.post(u + "/roles", json={"role": {"name": name}}).json()["role"]["id"]

    def project(name):
        return s.post(u + "/projects", json={"project": {"name": name, "domain_id": "default"}}
                      ).json()["project"]["id"]

    def user(name, pw, proj, role_id):
        uid = s.post(u + "/users", json={"user": {"name": name, "password": pw,
                                                  "domain_id": "default"}}).json()["user"]["id"]
        s.put(u + "/projects/%s/users/%s/roles/%s" % (proj, uid, role_id))
        return uid

    ids = E.ids
    ids["service"], ids["A"], ids["B"] = project("service"), project("A"), project("B")
    ids["gnocchi"] = user("gnocchi", SVC_PW, ids["service"], role("service"))
    ids["aodh"] = user("aodh", USER_PW, ids["service"], role("admin"))
    ids["alice"] = user("alice", USER_PW, ids["A"], role("member"))
    ids["bob"] = user("bob", USER_PW, ids["B"], role("member"))
    svc = s.post(u + "/services", json={"service": {"type": "metric", "name": "gnocchi"}}
                 ).json()["service"]["id"]
    s.post(u + "/endpoints", json={"endpoint": {"service_id": svc, "interface": "public",
                                                "url": E.d.url, "region_id": "RegionOne"}})


# ---- gpuaggd -------------------------------------------------------------------

def stats():
    return E.d.call("stats")["result"]


def get(path, tok=None):
    return E.d.get_json(path, headers={"X-Auth-Token": tok} if tok else {})


def send_samples(value, n, project):
    """n cpu_util samples of RID over the last 100 s, all `value`, then a
    flush."""
    st = E.d.call("status")["result"]["ingest"]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    now = time.time()
    for k in range(n):
        ts = datetime.datetime.utcfromtimestamp(now - 100 + 100.0 * k / max(n - 1, 1))
        u.sendto(msgpack.packb({
            "source": "openstack", "counter_name": "cpu_util", "counter_type": "gauge",
            "counter_unit": "%", "counter_volume": value, "user_id": E.ids["alice"],
            "project_id": project, "resource_id": RID, "timestamp": ts.isoformat(),
            "resource_metadata": {"host": "c1"}, "message_id": str(uuid.uuid4()),
            "monotonic_time": None, "message_signature": ""}, use_bin_type=True),
            ("127.0.0.1", st["udp_port"]))
    u.close()
    ok = wait_for(lambda: E.d.call("status")["result"]["ingest"]["udp_accepted"]
                  >= st["udp_accepted"] + n, 10)
    assert ok, E.d.call("status")
    assert E.d.ctl("flush", timeout=30).returncode == 0


# ---- the tests -------------------------------------------------------------------

def test_no_token_challenge():
    st, hd, body = E.d.request("GET", "/v1/metric")
    assert st == 401, (st, body)
    assert hd.get("WWW-Authenticate") == 'Keystone uri="%s"' % E.ks_url, hd
    assert b"X-Auth-Token" in body and b'"code": 401' in body.replace(b'"code":401',
                                                                        b'"code": 401'), body
    st, hd, body = E.d.request("GET", "/v1/metric", headers={"X-Auth-Token": "not-a-token"})
    assert st == 401 and hd.get("WWW-Authenticate", "").startswith("Keystone uri="), (st, hd)
    st, _, _ = E.d.request("GET", "/")              # public routes need no token
    assert st == 200


def test_gnocchiclient_through_catalog():
    send_samples(10.0, 6, E.ids["A"])
    sess = ksession.Session(auth=password_auth("alice", USER_PW, "A"))
    c = gclient.Client("1", session=sess)       # endpoint from Keystone's catalog
    res = c.resource.list("instance")
    assert [r["id"] for r in res] == [RID], res
    assert res[0]["project_id"] == E.ids["A"], res
    metrics = c.metric.list()
    mid = res[0]["metrics"]["cpu_util"]
    assert mid in [m["id"] for m in metrics], metrics
    meas = c.metric.get_measures("cpu_util", resource_id=RID, granularity=60)
    assert meas and all(abs(v - 10.0) < 1e-9 for _, _, v in meas), meas


def test_project_scope():
    bob = token("bob", "B")
    st, body = get("/v1/resource/instance", bob)
    assert st == 200 and body == [], (st, body)
    st, body = get("/v1/resource/instance/" + RID, bob)
    assert st == 404, (st, body)
    alice = token("alice", "A")
    st, body = get("/v1/resource/instance/" + RID, alice)
    assert st == 200 and body["id"] == RID, (st, body)
    adm = token("admin", "admin")                # role admin: every project
    st, body = get("/v1/resource/instance", adm)
    assert st == 200 and [r["id"] for r in body] == [RID], (st, body)


def test_aodh_evaluator():
    from aodh import service
    from aodh.evaluator import gnocchi
    from aodh.storage import models
    f = os.path.join(E.tmp, "aodh.conf")
    with open(f, "w") as fh:
        fh.write("[DEFAULT]\nrecord_history = false\n[service_credentials]\n"
                 "auth_type = password\nauth_url = %s/v3\nusername = aodh\npassword = %s\n"
                 "project_name = service\nuser_domain_name = Default\n"
                 "project_domain_name = Default\ninterface = public\nregion_name = RegionOne\n"
                 % (E.ks_url, USER_PW))
    conf = service.prepare_service(argv=[], config_files=[f])

    class Recorder:
        def __init__(self):
            self.updates = []

        def update_alarm(self, alarm):
            self.updates.append(alarm.state)

        def record_alarm_change(self, payload):
            pass

        def notify(self, alarm, previous, reason, reason_data):
            pass

    now = datetime.datetime.utcnow()
    a = models.Alarm(alarm_id=str(uuid.uuid4()), type="gnocchi_resources_threshold",
                     enabled=True, name="t", description="", timestamp=now,
                     user_id=E.ids["alice"], project_id=E.ids["A"], state="insufficient data",
                     state_timestamp=now, state_reason="", ok_actions=[], alarm_actions=[],
                     insufficient_data_actions=[], repeat_actions=False,
                     rule={"comparison_operator": "gt", "threshold": 50.0,
                           "evaluation_periods": 1, "granularity": 60,
                           "aggregation_method": "mean", "metric": "cpu_util",
                           "resource_id": RID, "resource_type": "instance"},
                     time_constraints=[], severity="low")
    ev = gnocchi.GnocchiResourceThresholdEvaluator(conf)
    rec = Recorder()
    ev.storage_conn = ev.notifier = rec
    before = stats()["http.keystone.validations"]
    ev.evaluate(a)
    assert a.state == "ok", (a.state, a.state_reason)
    send_samples(100.0, 40, E.ids["A"])
    ev.evaluate(a)
    assert a.state == "alarm", (a.state, a.state_reason)
    assert rec.updates == ["ok", "alarm"], rec.updates
    assert stats()["http.keystone.validations"] > before


def test_revoked_token():
    s = admin()
    t = token("alice", "A")
    assert get("/v1/resource/instance", t)[0] == 200         # validated, now cached
    s.delete(E.ks_url + "/v3/auth/tokens", headers={"X-Subject-Token": t})
    hits = stats()["http.keystone.cache_hits"]
    # within token_cache_s the cached answer stands, as keystonemiddleware's
    assert get("/v1/resource/instance", t)[0] == 200
    assert stats()["http.keystone.cache_hits"] == hits + 1
    ok = wait_for(lambda: get("/v1/resource/instance", t)[0] == 401, CACHE_S + 5, 0.5)
    assert ok, get("/v1/resource/instance", t)
    # a revoked token never seen before: refused at once
    t2 = token("alice", "A")
    s.delete(E.ks_url + "/v3/auth/tokens", headers={"X-Subject-Token": t2})
    rej = stats()["http.keystone.rejected"]
    st, body = get("/v1/resource/instance", t2)
    assert st == 401 and "not valid" in body["description"], (st, body)
    assert stats()["http.keystone.rejected"] == rej + 1


def test_expired_token():
    t = token("alice", "A", E.ks_short_url)     # expires TOKEN_LIFE_S after issue
    issued = time.time()
    st, body = get("/v1/resource/instance", t)
    assert st == 200, (st, body, "%.1f s after issue" % (time.time() - issued))
    time.sleep(max(0.0, issued + TOKEN_LIFE_S + 1.5 - time.time()))
    # still within token_cache_s: the cache ends at the token's expires_at
    assert time.time() - issued < CACHE_S
    st, body = get("/v1/resource/instance", t)
    assert st == 401, (st, body)


def test_cache_bound():
    toks = [token("alice", "A") for _ in range(CACHE_ENTRIES + 4)]
    base = stats()
    t0 = time.time()
    for t in toks:
        assert get("/v1/resource/instance", t)[0] == 200
    took = time.time() - t0
    s1 = stats()
    assert s1["http.keystone.cached"] <= CACHE_ENTRIES, s1
    assert s1["http.keystone.validations"] == base["http.keystone.validations"] + len(toks)
    assert get("/v1/resource/instance", toks[-1])[0] == 200          # newest: cached
    s2 = stats()
    assert s2["http.keystone.cache_hits"] == s1["http.keystone.cache_hits"] + 1
    assert s2["http.keystone.validations"] == s1["http.keystone.validations"]
    assert get("/v1/resource/instance", toks[0])[0] == 200           # oldest: gone
    s3 = stats()
    assert s3["http.keystone.validations"] == s2["http.keystone.validations"] + 1, s3
    # an entry dropped after its token_cache_s is no eviction: only a run
    # of validations shorter than that shows the bound at work
    if took >= CACHE_S - 1:
        pytest.skip("%d validations took %.1f s, over token_cache_s (%d s)"
                    % (len(toks), took, CACHE_S))
    assert s1["http.keystone.evictions"] >= base["http.keystone.evictions"] + 4, (took, s1)


def test_keystone_down():
    fresh = token("alice", "A")                  # issued, never shown to gpuaggd
    cached = token("alice", "A")
    assert get("/v1/resource/instance", cached)[0] == 200
    E.ks.terminate()
    E.ks.wait(10)
    errs = stats()["http.keystone.errors"]
    st, body = get("/v1/resource/instance", fresh)
    assert st == 503, (st, body)
    assert "Keystone" in body["description"] and "did not answer" in body["description"], body
    assert stats()["http.keystone.errors"] == errs + 1
    assert get("/v1/resource/instance", cached)[0] == 200          # the cache still serves
    # ingest goes on
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(os.path.join(E.d.tmp, "ingest.sock"))
    up = msgpack.Unpacker(raw=False)

    def reply():
        while True:
            for o in up:
                return o
            up.feed(s.recv(65536))
    s.sendall(msgpack.packb({"type": "hello", "version": 1, "client": "test_keystone"}))
    reply()
    s.sendall(msgpack.packb({"type": "points", "seq": 1, "metrics": [
        {"metric": "kstest/down", "points": [[int(time.time()) * 10**9, 1.5]]}]}))
    ack = reply()
    s.close()
    assert ack["type"] == "ack" and not ack["rejected"], ack
    assert E.d.ctl("flush", timeout=30).returncode == 0


@pytest.fixture(scope="module", autouse=True)
def servers(request):
    """A private PostgreSQL, keystone (and a second one with short-lived
    tokens), the accounts, and one daemon authenticating against keystone,
    shared by the tests in order; the daemon must exit 0.  Keystone's logs
    are printed when something failed."""
    pgdir = tempfile.mkdtemp(prefix="gapg-", dir="/tmp")
    failed = request.session.testsfailed
    try:
        conninfo = subprocess.run([PG, "start", pgdir], capture_output=True, text=True,
                                  check=True).stdout.strip()
        setup_keystone()
        http = ("auth: keystone, keystone: { auth_url: \"%s\", username: gnocchi, "
                "password: %s, project_name: service, token_cache_s: %d, cache_entries: %d, "
                "timeout_ms: 30000 }" % (E.ks_url, SVC_PW, CACHE_S, CACHE_ENTRIES))
        E.d = HttpDaemon(conninfo=conninfo, http=http, extra=POLICY)
        setup_accounts()
        start_short_keystone()
        with E.d:
            E.d.wait_http()
            assert wait_for(lambda: E.d.call("status")["result"]["engine"]["state"] == "running",
                            30)
            yield
            assert E.d.stop(30) == 0, E.d.logtext()[-3000:]
    except Exception:
        print(keystone_logs())
        raise
    finally:
        if request.session.testsfailed != failed:
            # the tests' reports are written: show the logs past the capture
            capman = request.config.pluginmanager.getplugin("capturemanager")
            with capman.global_and_fixture_disabled():
                print(keystone_logs())
        for p in (E.ks, E.ks_short):
            if p and p.poll() is None:
                p.terminate()
                p.wait(10)
        subprocess.run([PG, "stop", pgdir])
        shutil.rmtree(pgdir, ignore_errors=True)
        if E.tmp:
            shutil.rmtree(E.tmp, ignore_errors=True)
