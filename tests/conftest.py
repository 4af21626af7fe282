"""What every Python suite under tests/ shares when pytest runs it: the
helper modules on sys.path (tests/blackbox/bblib.py, tests/ingest/inglib.py,
tests/api/apilib.py, tests/cluster/clusterlib.py), and skip reasons that
name their test.

A suite is one tests/<dir>/test_*.py; tests/run.sh runs each one on its own
(`python3 -m pytest -q -rs -p no:cacheprovider FILE`).  Tests run in file
order; a suite whose tests share one daemon starts it in a module-scoped
fixture.  A test that cannot run calls pytest.skip("what is missing")."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
for _d in ("blackbox", "ingest", "api", "cluster"):
    _p = os.path.join(HERE, _d)
    if _p not in sys.path:
        sys.path.append(_p)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A skip's reason starts with its test's name, so that -rs lines read
    "SKIPPED [1] FILE:LINE: test_name: reason" (tests/run.sh lists them)."""
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and isinstance(rep.longrepr, tuple) and len(rep.longrepr) == 3:
        path, line, reason = rep.longrepr
        if reason.startswith("Skipped: "):
            reason = reason[len("Skipped: "):]
        rep.longrepr = (path, line, "%s: %s" % (item.name, reason))
