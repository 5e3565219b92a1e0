"""Fixtures for the SMTP transport tests: certificates, the scripted server, the delivery tool.

Run from the repository root after `make -C processor asan`:
    /usr/bin/python3 -m pytest test/smtp -q
PGRELAY_TOOL_DELIVER overrides the tool (default processor/build/asan/tool_deliver).
"""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(ROOT, "test", "fixtures")
TOOL = os.environ.get("PGRELAY_TOOL_DELIVER",
                      os.path.join(ROOT, "processor", "build", "asan", "tool_deliver"))
PYTHON = "/usr/bin/python3"


def wait_for(cond, what, timeout=10.0):
    """Poll cond() until it is true; the timeout only bounds a broken test."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.01)


@pytest.fixture(scope="session")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("certs")
    subprocess.run(["sh", os.path.join(FIXTURES, "certs.sh"), str(d)], check=True)
    return d


class Server:
    """One smtpd.py process; its spool tells what arrived."""

    def __init__(self, tmp, args):
        self.spool = tmp / "spool"
        ready = tmp / "ready"
        self.log = open(tmp / "smtpd.log", "wb")
        self.proc = subprocess.Popen(
            [PYTHON, os.path.join(FIXTURES, "smtpd.py"), "--ready-file", str(ready),
             "--spool", str(self.spool)] + args,
            stdout=self.log, stderr=subprocess.STDOUT)
        self.port = int(wait_for(lambda: self._read(ready), "smtpd to listen"))

    def _read(self, path):
        if self.proc.poll() is not None:
            raise AssertionError("smtpd exited: " + open(self.log.name).read())
        return path.read_text() if path.exists() else None

    def connections(self):
        p = self.spool / "connections"
        return int(p.read_text()) if p.exists() else 0

    def messages(self):
        """[(envelope dict, raw bytes)] in arrival order."""
        out = []
        for name in sorted(os.listdir(self.spool)):
            if name.endswith(".json"):
                base = self.spool / name[:-5]
                out.append((json.loads((self.spool / name).read_text()),
                            (base.with_suffix(".eml")).read_bytes()))
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture
def smtpd(tmp_path, certs):
    """smtpd(*flags) starts a server; {certs} in a flag is replaced by the certs dir."""
    started = []

    def start(*flags):
        d = tmp_path / ("server%d" % len(started))
        d.mkdir()
        s = Server(d, [f.replace("{certs}", str(certs)) for f in flags])
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def make_doc(port, security="none", **kw):
    """A fetch() document for the test server; keyword arguments override top-level keys,
    smtp_* keys override profile.smtp, profile_* keys override the profile."""
    doc = {
        "interface_version": 1,
        "notification_id": 4242,
        "status": "queued",
        "channel": "test",
        "message_id": "<4242.test@example.com>",
        "from": {"address": "noreply@example.com", "name": "Example App"},
        "reply_to": [],
        "recipients": [
            {"id": 1, "kind": "to", "address": "ann@example.org", "name": "Ann", "status": "pending"},
        ],
        "subject": "Hello",
        "body_text": "Hello Ann",
        "body_html": None,
        "headers": [],
        "attachments": [],
        "profile": {
            "name": "test", "transport": "smtp", "debug": False,
            "connect_timeout_ms": 5000, "timeout_ms": 10000,
            "rate_limit_per_minute": None, "max_message_bytes": None,
            "smtp": {"host": "127.0.0.1", "port": port, "security": security,
                     "username": None, "password": None, "oauth_token": None,
                     "ca_file": None, "helo_name": "relay.test"},
            "graph": None,
        },
    }
    for k, v in kw.items():
        if k.startswith("smtp_"):
            doc["profile"]["smtp"][k[5:]] = v
        elif k.startswith("profile_"):
            doc["profile"][k[8:]] = v
        else:
            doc[k] = v
    return doc


@pytest.fixture
def deliver(tmp_path):
    """deliver(doc or [docs], repeat=1, env={}, args=[]) runs tool_deliver, returns its results."""
    counter = [0]

    def run(docs, repeat=1, env=None, args=()):
        if isinstance(docs, dict):
            docs = [docs]
        files = []
        for d in docs:
            counter[0] += 1
            f = tmp_path / ("doc%d.json" % counter[0])
            f.write_text(json.dumps(d))
            files.append(str(f))
        e = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1")
        e.update(env or {})
        p = subprocess.run([TOOL, "--repeat", str(repeat)] + list(args) + files,
                           capture_output=True, env=e, timeout=120)
        assert p.returncode == 0, p.stderr.decode()
        assert b"Sanitizer" not in p.stderr, p.stderr.decode()
        return [json.loads(line) for line in p.stdout.decode().splitlines()]

    return run


def pytest_configure(config):
    if not os.access(TOOL, os.X_OK):
        sys.stderr.write("conftest: %s is missing; run `make -C processor asan` first\n" % TOOL)
