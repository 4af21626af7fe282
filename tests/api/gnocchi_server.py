"""Debian's real Gnocchi (python3-gnocchi) as a reference server for the
differential tests: the same data fed to it and to gpuaggd, the same
requests asked of both.

    from gnocchi_server import GnocchiServer, create_builtin_policies, create_policies
    g = GnocchiServer(tmpdir, pg_conninfo, auth="noauth")
    g.start()                      # database, gnocchi-upgrade, API, processing
    g.url                          # "http://127.0.0.1:PORT" (the API root; /v1/... below it)
    g.request("GET", "/v1/metric", headers=g.headers())   # (status, headers, body bytes)
    g.get_json(path, headers=..., method=..., body=...)   # (status, decoded JSON or None)
    create_policies(g, yaml_text)  # the archive policies (and rules) a gpuagg config defines
    create_builtin_policies(g)     # the ones gpuagg has built in (Gnocchi's and Ceilometer's)
    g.wait_processed(timeout=30)   # True once no posted measure is left unaggregated
    g.stop()

GnocchiServer(tmpdir, pg_conninfo, auth="noauth", processing_delay=1)
  tmpdir       an existing directory the server owns: its config, the file
               storage and file incoming (tmpdir/storage), the coordination
               locks, and its log (tmpdir/gnocchi.log).
  pg_conninfo  the libpq conninfo of a PostgreSQL server (tools/pg-private.sh
               start prints one), keyword form "host=... user=... dbname=...";
               Gnocchi's indexer gets its own database in that server,
               "gnocchi" (dropped and created again by start()).
  auth         how requests say who they are, as in gpuaggd's http.auth:
               "noauth"  the X-User-Id / X-Project-Id / X-Roles headers are
                         trusted (Gnocchi's keystone mode without the token
                         middleware, as gnocchiclient's noauth plugin expects);
               "basic"   HTTP Basic, the user name is the user (user "admin"
                         is the administrator);
               "remoteuser" the REMOTE_USER a front proxy set.
  processing_delay  seconds between passes of measure processing
               ([metricd] metric_processing_delay).

headers(user, project, roles) gives the identity headers of `auth` for one
request; with no arguments, the administrator.

start(wait=True, timeout=120) creates the database and starts one
subprocess that runs gnocchi-upgrade's code (gnocchi.cli.manage.upgrade;
no default archive policies: the test defines its own), then serves
`gnocchi.rest.app.load_app(conf)` under a threaded wsgiref server on a free
port of 127.0.0.1 and, in a thread of the same process, aggregates posted
measures every processing_delay seconds, as gnocchi-metricd's processing
workers do (Gnocchi's own Chef.process_new_measures_for_sack).  The policy
file is the packaged gnocchi/rest/policy.yaml.  Debian 12's Gnocchi uses
numpy.int, which numpy 1.24 removed, in the percentile (Npct) code: that
process sets numpy.int = int before importing Gnocchi.  start() raises
RuntimeError, with the log's tail, when any step fails.  start(wait=False)
returns at once; wait_ready(timeout) then waits for the API.

wait_processed(timeout) polls GET /v1/status until Gnocchi reports no
measures left to process, then waits for one more processing pass to end
(so measures being processed while the status was read are stored too).

Run as a program (`python3 gnocchi_server.py serve CONFIG PORT MARKER`) this file is
that subprocess; tests do not call it that way themselves."""
import http.client
import importlib.util
import json
import os
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "blackbox"))
from bblib import free_port  # noqa: E402

AUTH_MODES = ("noauth", "basic", "remoteuser")
GNOCCHI_DB = "gnocchi"
# the packaged files, found where the gnocchi package is (not imported here)
_GNOCCHI_DIR = list(importlib.util.find_spec("gnocchi").submodule_search_locations)[0]
POLICY_FILE = os.path.join(_GNOCCHI_DIR, "rest", "policy.yaml")
PASTE_INI = os.path.join(_GNOCCHI_DIR, "rest", "api-paste.ini")
SACKS = 8            # few sacks: one processing pass is quick on a small machine



def _conninfo_dict(conninfo):
    out = {}
    for part in conninfo.split():
        k, _, v = part.partition("=")
        if not _ or not k:
            raise ValueError("pg_conninfo: '%s' is not key=value" % part)
        out[k] = v
    return out


class GnocchiServer:
    def __init__(self, tmpdir, pg_conninfo, auth="noauth", processing_delay=1):
        if auth not in AUTH_MODES:
            raise ValueError("auth must be one of %s, not %r" % (", ".join(AUTH_MODES), auth))
        if not os.path.isdir(tmpdir):
            raise ValueError("tmpdir %r is not a directory" % tmpdir)
        self.tmp = os.path.abspath(tmpdir)
        self.pg = _conninfo_dict(pg_conninfo)
        if "host" not in self.pg:
            raise ValueError("pg_conninfo has no host= (the PostgreSQL socket directory)")
        self.auth = auth
        self.delay = processing_delay
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.conf = os.path.join(self.tmp, "gnocchi.conf")
        self.log = os.path.join(self.tmp, "gnocchi.log")
        self.marker = os.path.join(self.tmp, "processed.pass")
        self.proc = None

    # ---- setup -------------------------------------------------------------
    def _indexer_url(self):
        q = {"host": self.pg["host"]}
        if "port" in self.pg:
            q["port"] = self.pg["port"]
        user = self.pg.get("user", "postgres")
        return "postgresql+psycopg2://%s@/%s?%s" % (user, GNOCCHI_DB, urllib.parse.urlencode(q))

    def _create_database(self):
        import psycopg2
        args = dict(self.pg)
        args["dbname"] = "postgres"
        c = psycopg2.connect(**args)
        try:
            c.autocommit = True
            with c.cursor() as cur:
                cur.execute("DROP DATABASE IF EXISTS " + GNOCCHI_DB)
                cur.execute("CREATE DATABASE " + GNOCCHI_DB)
        finally:
            c.close()

    def _write_config(self):
        storage = os.path.join(self.tmp, "storage")
        os.makedirs(storage, exist_ok=True)
        paste = PASTE_INI
        if self.auth == "noauth":
            # the keystone pipeline without keystone_authtoken: Gnocchi's
            # KeystoneAuthHelper then trusts the identity headers
            paste = os.path.join(self.tmp, "api-paste.ini")
            with open(PASTE_INI) as f:
                text = f.read()
            text = text.replace("pipeline = keystone_authtoken gnocchiv1", "pipeline = gnocchiv1")
            with open(paste, "w") as f:
                f.write(text)
        mode = "keystone" if self.auth == "noauth" else self.auth
        with open(self.conf, "w") as f:
            f.write("""[DEFAULT]
coordination_url = file://{tmp}/locks
parallel_operations = 1
[indexer]
url = {indexer}
[storage]
driver = file
file_basepath = {storage}
[incoming]
driver = file
file_basepath = {storage}
[api]
auth_mode = {mode}
paste_config = {paste}
[oslo_policy]
policy_file = {policy}
[metricd]
metric_processing_delay = {delay}
workers = 1
""".format(tmp=self.tmp, indexer=self._indexer_url(), storage=storage, mode=mode,
           paste=paste, policy=POLICY_FILE, delay=self.delay))

    def _fail(self, what):
        tail = ""
        if os.path.exists(self.log):
            with open(self.log, errors="replace") as f:
                tail = f.read()[-3000:]
        raise RuntimeError("Gnocchi: %s\n%s" % (what, tail))

    def start(self, wait=True, timeout=120):
        """Create the database and start the subprocess; with wait, return
        once the API answers (else call wait_ready() later: the test can
        feed gpuaggd meanwhile)."""
        self._create_database()
        self._write_config()
        self._logf = open(self.log, "ab")
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve",
                                      self.conf, str(self.port), self.marker],
                                     stdout=self._logf, stderr=self._logf)
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout=120):
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                self._fail("the API process exited %d" % self.proc.returncode)
            try:
                st, _, _ = self.request("GET", "/", timeout=5)
                if st == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        self._fail("the API never answered on %s" % self.url)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self._logf.close()
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # ---- requests ----------------------------------------------------------
    def headers(self, user="admin", project="admin-project", roles="admin"):
        if self.auth == "noauth":
            h = {"X-User-Id": user, "X-Project-Id": project}
            if roles:
                h["X-Roles"] = roles
            return h
        if self.auth == "basic":
            import base64
            return {"Authorization": "Basic " + base64.b64encode(
                (user + ":").encode()).decode()}
        return {}     # remoteuser: the WSGI server sets no REMOTE_USER (anonymous)

    def request(self, method, path, body=None, headers=None, timeout=30):
        """(status, headers dict, body bytes)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            h = dict(headers or {})
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
                h.setdefault("Content-Type", "application/json")
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def get_json(self, path, headers=None, method="GET", body=None):
        st, _, b = self.request(method, path, body, headers if headers is not None
                                else self.headers())
        try:
            return st, (json.loads(b) if b else None)
        except ValueError:
            return st, b.decode(errors="replace")

    def _pass_count(self):
        try:
            with open(self.marker) as f:
                return int(f.read() or 0)
        except (OSError, ValueError):
            return 0

    def wait_processed(self, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            if self.proc is None or self.proc.poll() is not None:
                self._fail("the API process is not running")
            st, j = self.get_json("/v1/status?details=false")
            if st == 200 and j["storage"]["summary"]["measures"] == 0:
                seen = self._pass_count()
                while time.time() < end and self._pass_count() < seen + 2:
                    time.sleep(0.05)
                return self._pass_count() >= seen + 2
            time.sleep(0.1)
        return False


def create_policies(server, yaml_text, headers=None):
    """Create on Gnocchi (through its REST API) the archive policies and
    archive policy rules that a gpuagg config text defines
    (archive_policies, archive_policy_rules).  A rule gets the name gpuagg
    shows for it (rule-N, N its place in the list from 1).  Raises
    AssertionError naming the policy or rule Gnocchi refused."""
    import yaml
    cfg = yaml.safe_load(yaml_text) or {}
    h = dict(headers or server.headers())
    for p in cfg.get("archive_policies") or []:
        body = {"name": p["name"], "back_window": p.get("back_window", 0),
                "definition": [{k: d[k] for k in ("granularity", "timespan", "points") if k in d}
                               for d in p["definition"]]}
        if "aggregation_methods" in p:
            body["aggregation_methods"] = p["aggregation_methods"]
        st, j = server.get_json("/v1/archive_policy", headers=h, method="POST", body=body)
        assert st == 201, ("archive policy %s refused by Gnocchi" % p["name"], st, j)
    for i, rule in enumerate(cfg.get("archive_policy_rules") or [], 1):
        body = {"name": rule.get("name", "rule-%d" % i), "metric_pattern": rule["metric_pattern"],
                "archive_policy_name": rule["archive_policy_name"]}
        st, j = server.get_json("/v1/archive_policy_rule", headers=h, method="POST", body=body)
        assert st == 201, ("archive policy rule %s refused by Gnocchi" % body["name"], st, j)


def create_builtin_policies(server, headers=None):
    """Create on Gnocchi the archive policies gpuagg has built in: Gnocchi's
    defaults (bool, low, medium, high: what gnocchi-upgrade creates, taken
    from gnocchi.archive_policy.DEFAULT_ARCHIVE_POLICIES) and Ceilometer's
    (from its publisher/data/gnocchi_resources.yaml), each by the REST API
    as an operator would."""
    import numpy
    if not hasattr(numpy, "int"):
        numpy.int = int
    from gnocchi import archive_policy
    h = dict(headers or server.headers())
    for p in archive_policy.DEFAULT_ARCHIVE_POLICIES.values():
        body = {"name": p.name, "back_window": p.back_window,
                "definition": [{"granularity": d.serialize()["granularity"],
                                "timespan": d.serialize()["timespan"]} for d in p.definition]}
        if p.name == "bool":
            body["aggregation_methods"] = ["last"]
        st, j = server.get_json("/v1/archive_policy", headers=h, method="POST", body=body)
        assert st == 201, ("archive policy %s refused by Gnocchi" % p.name, st, j)
    path = os.path.join(os.path.dirname(archive_policy.__file__), "..", "ceilometer", "publisher",
                        "data", "gnocchi_resources.yaml")
    with open(os.path.normpath(path)) as f:
        import yaml
        text = yaml.safe_dump({"archive_policies": yaml.safe_load(f)["archive_policies"]})
    create_policies(server, text, headers=h)


# ---- the server subprocess ------------------------------------------------------
def _serve(conf_path, port, marker):
    import numpy
    if not hasattr(numpy, "int"):
        numpy.int = int               # Debian 12's Gnocchi: carbonara's Npct code
    import threading
    import wsgiref.simple_server
    import socketserver
    from gnocchi import chef, incoming, indexer, service, storage
    from gnocchi.cli import metricd
    from gnocchi.rest import app as gapp

    from gnocchi.cli import manage
    # gnocchi-upgrade, in this process (one interpreter start less)
    sys.argv = ["gnocchi-upgrade", "--config-file", conf_path,
                "--skip-archive-policies-creation", "--sacks-number", str(SACKS)]
    manage.upgrade()
    conf = service.prepare_service(args=["--config-file", conf_path], log_to_std=True)
    application = gapp.load_app(conf)

    def process():
        coord = metricd.get_coordinator_and_start(b"gnocchi-server-processing",
                                                  conf.coordination_url)
        # as gnocchi-metricd's processing worker: a member of its group, so
        # that /v1/status can list the processors
        coord.join_partitioned_group(metricd.MetricProcessor.GROUP_ID, partitions=200)
        inc = incoming.get_driver(conf)
        c = chef.Chef(coord, inc, indexer.get_driver(conf), storage.get_driver(conf))
        passes = 0
        while True:
            for sack in inc.iter_sacks():
                try:
                    c.process_new_measures_for_sack(sack, blocking=True)
                except Exception as e:       # keep processing; the log says why
                    print("processing sack %s failed: %r" % (sack, e), file=sys.stderr)
            passes += 1
            with open(marker + ".tmp", "w") as f:
                f.write(str(passes))
            os.replace(marker + ".tmp", marker)
            time.sleep(conf.metricd.metric_processing_delay)

    threading.Thread(target=process, daemon=True).start()

    class Server(socketserver.ThreadingMixIn, wsgiref.simple_server.WSGIServer):
        daemon_threads = True

    class Quiet(wsgiref.simple_server.WSGIRequestHandler):
        def log_message(self, *a):
            pass

    httpd = wsgiref.simple_server.make_server("127.0.0.1", port, application,
                                              server_class=Server, handler_class=Quiet)
    httpd.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "serve":
        sys.exit("usage: gnocchi_server.py serve CONFIG PORT MARKER")
    _serve(sys.argv[2], int(sys.argv[3]), sys.argv[4])
