"""pg_relay(1) (docs/pg_relay.1) and the binary cannot drift apart: every option `pg_relay --help`
prints is described in the man page's OPTIONS, with the same short form, and nothing else is; the
page is the version being built and formats without warnings."""
import os
import re
import shutil
import subprocess

import pytest

import testlib

MANPAGE = os.path.join(testlib.ROOT, "docs", "pg_relay.1")


def help_options():
    out = subprocess.run([testlib.PROCESSOR_RELEASE, "--help"], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    opts = {}
    for m in re.finditer(r"^\s+(?:-(\w), )?--([a-z][a-z-]*)", out, re.M):
        opts[m.group(2)] = m.group(1)
    return opts


def manpage_options():
    text = open(MANPAGE).read()
    section = text[text.index(".SH OPTIONS"):]
    section = section[:section.index("\n.SH ", 1)]
    opts = {}
    # each option is the line after .TP: ".BI \-d ", " \-\-dbname= CONNINFO" and the like
    for item in re.findall(r"^\.TP\n(.*)$", section, re.M):
        item = item.replace("\\-", "-")
        long = re.search(r"--([a-z][a-z-]*)", item)
        short = re.search(r"(?<![-\w])-(\w)\b", item)
        assert long, "an OPTIONS item without a long option: %r" % item
        opts[long.group(1)] = short.group(1) if short else None
    return opts


def test_manpage_describes_every_option_of_help():
    have, want = manpage_options(), help_options()
    assert len(want) >= 17
    missing = sorted(set(want) - set(have))
    extra = sorted(set(have) - set(want))
    assert not missing, "options of --help missing from docs/pg_relay.1: %s" % missing
    assert not extra, "options in docs/pg_relay.1 that --help does not know: %s" % extra
    for name, short in want.items():
        assert have[name] == short, "--%s: short form -%s in --help, -%s in the man page" % (
            name, short, have[name])


def test_manpage_is_this_version():
    version = open(os.path.join(testlib.ROOT, "VERSION")).read().strip()
    th = re.search(r'^\.TH PG_RELAY 1 "[^"]*" "pg_relay ([^"]+)"', open(MANPAGE).read(), re.M)
    assert th and th.group(1) == version


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed (groff-base)")
def test_manpage_formats_without_warnings():
    r = subprocess.run(["groff", "-man", "-ww", "-z", "-Tutf8", MANPAGE], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0 and r.stdout == "", r.stdout
