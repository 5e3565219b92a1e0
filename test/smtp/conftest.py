"""The SMTP transport tests need the delivery tool (the `deliver` fixture, the certificates and the
scripted server come from test/conftest.py).

Run from the repository root after `make -C processor asan`:
    /usr/bin/python3 -m pytest test/smtp -q
PGRELAY_TOOL_DELIVER overrides the tool (default processor/build/asan/tool_deliver).
"""
import os
import sys

from testlib import TOOL_DELIVER as TOOL


def pytest_configure(config):
    if not os.access(TOOL, os.X_OK):
        sys.stderr.write("conftest: %s is missing; run `make -C processor asan` first\n" % TOOL)
