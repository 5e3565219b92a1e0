"""Fixtures shared by every pytest suite under test/: PostgreSQL clusters and databases, the
Processor as a child process, the throwaway certificates, the scripted SMTP server, the fake
Microsoft token endpoint + Graph (graphd) and the webhook receiver (hookd).

Run from the repository root after `make -C processor all asan`:
    /usr/bin/python3 -m pytest test/e2e test/smtp test/ha test/graph test/guard -q
"""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))

import testlib  # noqa: E402


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


@pytest.fixture(scope="session")
def cluster():
    c = testlib.Cluster(os.path.join(testlib.work_dir("e2e-"), "main"),
                        conf=("max_connections = 200",))
    c.start()
    yield c
    c.stop("immediate")


@pytest.fixture
def private_cluster():
    """A cluster of the test's own, with pg_relay, that a streaming standby can follow
    (cluster.standby()), stopped after the test."""
    c = testlib.Cluster(os.path.join(testlib.work_dir("own-"), "c"),
                        conf=("wal_level = replica", "max_wal_senders = 4"))
    c.start()
    with c.connect() as k:
        k.execute("CREATE EXTENSION pg_relay")
    yield c
    c.stop("immediate")


@pytest.fixture
def db(cluster):
    d = testlib.Database(cluster)
    yield d
    d.close()


@pytest.fixture
def processors(request):
    """processors(args...) starts a Processor; all are stopped after the test, and their logs
    are printed when the test failed."""
    started = []

    def start(*args, **kw):
        p = testlib.Processor(list(args), **kw)
        started.append(p)
        return p

    yield start
    for p in started:
        if p.proc.poll() is None:
            p.kill()
        rep = getattr(request.node, "rep_call", None)
        if rep is not None and rep.failed:
            print("---- processor log %s ----\n%s" % (p.logpath, p.log()[-8000:]))
        p.check_sanitizers()


@pytest.fixture(scope="session")
def certs(tmp_path_factory):
    return testlib.make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def smtpd(tmp_path, certs):
    """smtpd(*flags) starts a server; {certs} in a flag is replaced by the certs dir."""
    started = []

    def start(*flags):
        d = tmp_path / ("server%d" % len(started))
        d.mkdir()
        s = testlib.SmtpServer(d, [f.replace("{certs}", str(certs)) for f in flags])
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


@pytest.fixture
def graphd(tmp_path, certs):
    """graphd(**kw) starts a fake token endpoint + Graph sendMail (testlib.GraphServer: tenants=,
    clients=, mailboxes=, expires_in=, plain_http=, args=[raw graphd.py flags])."""
    started = []

    def start(**kw):
        s = testlib.GraphServer(tmp_path / ("graphd%d" % len(started)), certs, **kw)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


@pytest.fixture
def hookd(tmp_path, certs):
    """hookd(**kw) starts a webhook receiver (testlib.HookServer: secrets=, args=[raw hookd.py
    flags], host=)."""
    started = []

    def start(**kw):
        s = testlib.HookServer(tmp_path / ("hookd%d" % len(started)), certs, **kw)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


@pytest.fixture
def deliver(tmp_path):
    """deliver(doc or [docs], repeat=1, env={}, args=[]) runs tool_deliver, returns its results.
    The variables of env are bound to the documents' profiles (--secret-env): these tests are
    about the transports; binding secrets to their owner is test_secrets.c's and
    test/e2e/test_secrets.py's."""
    counter = [0]

    def run(docs, repeat=1, env=None, args=()):
        if isinstance(docs, dict):
            docs = [docs]
        files = []
        owners = sorted({"profile/" + d["profile"]["name"] for d in docs})
        binds = ["--secret-env=" + ",".join("%s=%s" % (v, o) for v in sorted(env or {}) for o in owners)]
        for d in docs:
            counter[0] += 1
            f = tmp_path / ("doc%d.json" % counter[0])
            f.write_text(json.dumps(d))
            files.append(str(f))
        e = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1")
        e.update(env or {})
        p = subprocess.run([testlib.TOOL_DELIVER, "--repeat", str(repeat)] + binds + list(args) + files,
                           capture_output=True, env=e, timeout=120)
        assert p.returncode == 0, p.stderr.decode()
        assert b"Sanitizer" not in p.stderr, p.stderr.decode()
        return [json.loads(line) for line in p.stdout.decode().splitlines()]

    return run
