"""Fixtures for the SMTP transport tests: the delivery tool. (Certificates and the scripted
server come from test/conftest.py.)

Run from the repository root after `make -C processor asan`:
    /usr/bin/python3 -m pytest test/smtp -q
PGRELAY_TOOL_DELIVER overrides the tool (default processor/build/asan/tool_deliver).
"""
import json
import os
import subprocess
import sys

import pytest

from testlib import ROOT

TOOL = os.environ.get("PGRELAY_TOOL_DELIVER",
                      os.path.join(ROOT, "processor", "build", "asan", "tool_deliver"))


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
