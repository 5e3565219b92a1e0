"""Fixtures of the high-availability tests: a streaming standby pair, and the skip for machines
without pglogical. A module makes its own module-scoped PglogicalCluster (with its own schema)
and wraps it per test with testlib.pglogical_guard. The classes are in test/lib/testlib.py; see
docs/testing.md, "The HA harness"."""
import pytest

import testlib


@pytest.fixture
def standby_pair(request):
    """A primary and its streaming standby (testlib.StandbyPair), stopped and deleted after the
    test; their server logs are printed when the test failed."""
    pair = testlib.StandbyPair()
    yield pair
    if testlib.call_failed(request):
        for n in pair.nodes:
            print("---- server log %s ----\n%s" % (n.path, n.server_log()[-6000:]))
    pair.close()


@pytest.fixture(scope="session")
def require_pglogical():
    reason = testlib.pglogical_missing()
    if reason:
        pytest.skip(reason)
