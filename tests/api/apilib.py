"""Helpers of the HTTP API tests: a gpuaggd with listen.http on a free
port (built on the black-box helpers in tests/blackbox/bblib.py)."""
import http.client
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "blackbox"))
from bblib import ROOT, Daemon, config_text, free_port, wait_for  # noqa: E402,F401


class HttpDaemon(Daemon):
    """gpuaggd with listen.http on 127.0.0.1:<free port> and the given
    http: section (YAML flow map text, without braces)."""

    def __init__(self, conninfo=None, http="auth: noauth", extra=""):
        super().__init__(conninfo, extra)
        self.port = free_port()
        text = config_text(self.tmp, conninfo, "http: { %s }\n%s" % (http, extra))
        text = text.replace('telemetry_secret: "" }',
                            'telemetry_secret: "", http: "127.0.0.1:%d" }' % self.port)
        self.write_config(text)
        self.url = "http://127.0.0.1:%d" % self.port

    def wait_http(self, timeout=10.0):
        ok = wait_for(lambda: self._probe(), timeout)
        assert ok, "HTTP listener never answered:\n" + self.logtext()

    def _probe(self):
        try:
            self.request("GET", "/")
            return True
        except OSError:
            return False

    def request(self, method, path, body=None, headers=None, timeout=30):
        """(status, headers dict, body bytes)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def get_json(self, path, headers=None, method="GET", body=None):
        st, hd, b = self.request(method, path, body, headers)
        return st, (json.loads(b) if b else None)
