"""Aodh's own Gnocchi evaluators (Debian's python3-aodh, aodh/evaluator/
gnocchi.py) against gpuaggd's HTTP API: a threshold rule on a resource's
metric, one over a search of resources and one over metric ids are
evaluated with live Ceilometer samples; each reads "ok" while the values
are low and moves to "alarm" once samples above the threshold arrive.

The evaluators get the minimum aodh configuration (service credentials
through gnocchiclient's gnocchi-noauth plugin); their alarm storage and
notifier (a database and a message bus, not under test) are replaced by
objects that record what the evaluator writes."""
import datetime
import os
import socket
import subprocess
import tempfile
import time
import uuid

import msgpack
import pytest

from apilib import ROOT, HttpDaemon, wait_for

PG = os.path.join(ROOT, "tools", "pg-private.sh")
POLICY = """archive_policies:
  - name: aodhtest
    back_window: 10
    definition:
      - granularity: 60
        timespan: 1 day
    aggregation_methods: [mean, max]
default_archive_policy: aodhtest
"""
RID = str(uuid.uuid4())
PROJECT, USER = "proj-aodh", "user-aodh"
METRIC_NS = uuid.UUID("5c1e5b8e-07c5-4c53-a2a5-3f2b1d6e9a47")


class Env:
    d = None
    conf = None


E = Env()


class Recorder:
    """Stands in for aodh's alarm database and notifier."""

    def __init__(self):
        self.updates, self.notified = [], []

    def update_alarm(self, alarm):
        self.updates.append(alarm.state)

    def record_alarm_change(self, payload):
        pass

    def notify(self, alarm, previous, reason, reason_data):
        self.notified.append((previous, alarm.state))


def send_samples(value, n):
    """n cpu_util samples over the last 100 s, all `value`."""
    port = E.d.call("status")["result"]["ingest"]["udp_port"]
    before = E.d.call("status")["result"]["ingest"]["udp_accepted"]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    now = time.time()
    for k in range(n):
        ts = datetime.datetime.utcfromtimestamp(now - 100 + 100.0 * k / max(n - 1, 1))
        u.sendto(msgpack.packb({
            "source": "openstack", "counter_name": "cpu_util", "counter_type": "gauge",
            "counter_unit": "%", "counter_volume": value, "user_id": USER, "project_id": PROJECT,
            "resource_id": RID, "timestamp": ts.isoformat(), "resource_metadata": {"host": "c1"},
            "message_id": str(uuid.uuid4()), "monotonic_time": None, "message_signature": ""},
            use_bin_type=True), ("127.0.0.1", E.d.call("status")["result"]["ingest"]["udp_port"]))
    u.close()
    assert port
    ok = wait_for(lambda: E.d.call("status")["result"]["ingest"]["udp_accepted"] >= before + n, 10)
    assert ok, E.d.call("status")
    r = E.d.ctl("flush", timeout=30)
    assert r.returncode == 0, r


def make_conf():
    from aodh import service
    f = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False, dir=E.d.tmp)
    f.write("[DEFAULT]\nrecord_history = false\n"
            "[service_credentials]\nauth_type = gnocchi-noauth\nuser_id = %s\nproject_id = %s\n"
            "roles = admin\nendpoint = %s\ninterface = public\n" % (USER, PROJECT, E.d.url))
    f.close()
    return service.prepare_service(argv=[], config_files=[f.name])


def alarm(rule_type, rule):
    from aodh.storage import models
    now = datetime.datetime.utcnow()
    base = {"comparison_operator": "gt", "threshold": 50.0, "evaluation_periods": 1,
            "granularity": 60, "aggregation_method": "mean"}
    base.update(rule)
    return models.Alarm(alarm_id=str(uuid.uuid4()), type=rule_type, enabled=True, name="t",
                        description="", timestamp=now, user_id=USER, project_id=PROJECT,
                        state="insufficient data", state_timestamp=now, state_reason="",
                        ok_actions=[], alarm_actions=[], insufficient_data_actions=[],
                        repeat_actions=False, rule=base, time_constraints=[], severity="low")


def evaluators():
    from aodh.evaluator import gnocchi
    out = []
    for cls, rule_type, rule in (
            (gnocchi.GnocchiResourceThresholdEvaluator, "gnocchi_resources_threshold",
             {"metric": "cpu_util", "resource_id": RID, "resource_type": "instance"}),
            (gnocchi.GnocchiAggregationResourcesThresholdEvaluator,
             "gnocchi_aggregation_by_resources_threshold",
             {"metric": "cpu_util", "resource_type": "instance",
              "query": '{"=": {"project_id": "%s"}}' % PROJECT}),
            (gnocchi.GnocchiAggregationMetricsThresholdEvaluator,
             "gnocchi_aggregation_by_metrics_threshold",
             {"metrics": [str(uuid.uuid3(METRIC_NS, RID + "/cpu_util"))],
              "aggregation_method": "max"})):
        ev = cls(E.conf)
        rec = Recorder()
        ev.storage_conn = rec
        ev.notifier = rec
        out.append((ev, alarm(rule_type, rule), rec))
    return out


def test_threshold_crossing():
    E.conf = make_conf()
    send_samples(10.0, 6)
    ok = wait_for(lambda: E.d.get_json("/v1/resource/instance/" + RID,
                                       headers={"X-User-Id": USER, "X-Project-Id": PROJECT})[0] == 200,
                  10)
    assert ok, E.d.logtext()[-2000:]
    evs = evaluators()
    for ev, a, rec in evs:
        ev.evaluate(a)
        assert a.state == "ok", (type(ev).__name__, a.state, a.state_reason)
    send_samples(100.0, 40)                 # every bucket's mean and max above 50 now
    for ev, a, rec in evs:
        ev.evaluate(a)
        assert a.state == "alarm", (type(ev).__name__, a.state, a.state_reason)
        assert rec.updates == ["ok", "alarm"], rec.updates
        assert rec.notified[-1] == ("ok", "alarm"), rec.notified


def test_unknown_resource_is_insufficient_data():
    from aodh.evaluator import gnocchi
    ev = gnocchi.GnocchiResourceThresholdEvaluator(E.conf)
    rec = Recorder()
    ev.storage_conn = rec
    ev.notifier = rec
    a = alarm("gnocchi_resources_threshold", {"metric": "cpu_util", "resource_id": str(uuid.uuid4()),
                                              "resource_type": "instance"})
    a.state = "ok"
    ev.evaluate(a)
    assert a.state == "insufficient data" and "does not exist" in a.state_reason, (a.state,
                                                                                  a.state_reason)
    assert rec.updates == ["insufficient data"], rec.updates


@pytest.fixture(scope="module", autouse=True)
def shared_daemon():
    """A private PostgreSQL and one daemon on it, shared by the tests in
    order; the daemon must exit 0."""
    pgdir = tempfile.mkdtemp(prefix="gapg-", dir="/tmp")
    try:
        conninfo = subprocess.run([PG, "start", pgdir], capture_output=True, text=True,
                                  check=True).stdout.strip()
        E.d = HttpDaemon(conninfo=conninfo, http="auth: noauth", extra=POLICY)
        with E.d:
            E.d.wait_http()
            assert wait_for(lambda: E.d.call("status")["result"]["engine"]["state"] == "running", 30)
            yield
            assert E.d.stop(30) == 0, E.d.logtext()[-3000:]
    finally:
        subprocess.run([PG, "stop", pgdir])
        subprocess.run(["rm", "-rf", pgdir])
