"""The sandbox of pg_relay.service lets the Processor do its work. systemd does not run here, so
the release build runs under strace through a startup, a SQL event, an email over STARTTLS with a
login and a file: secret, two requests to its Prometheus endpoint, a reload and a stop, and what it did is held against the unit's
settings: every system call is allowed by its SystemCallFilter=, every socket is of a family
RestrictAddressFamilies= allows, no memory is both writable and executable
(MemoryDenyWriteExecute=), no file is opened for writing (ProtectSystem=strict: the Processor
writes only to stderr), and /proc is read only for the process itself (ProcSubset=pid)."""
import os
import re
import shutil
import signal
import subprocess
import urllib.error
import urllib.request

import pytest

import testlib
from notifysock import NotifySocket

UNIT_IN = os.path.join(testlib.ROOT, "packaging", "pg_relay.service.in")


def unit_values(key):
    out = []
    for line in open(UNIT_IN):
        k, sep, v = line.strip().partition("=")
        if sep and k == key:
            out.append(v)
    return out


_groups = {}


def expand(name):
    """A system call, or every call of a set such as @system-service (systemd-analyze syscall-filter)."""
    if not name.startswith("@"):
        return {name}
    if name not in _groups:
        out = subprocess.run(["systemd-analyze", "syscall-filter", name], stdout=subprocess.PIPE, text=True,
                             check=True).stdout
        calls = set()
        for line in out.splitlines()[1:]:
            item = line.strip()
            if item and not item.startswith("#"):
                calls |= expand(item)
        _groups[name] = calls
    return _groups[name]


def allowed_syscalls():
    """The allow list the unit's SystemCallFilter= lines leave, in order (a ~ line takes away)."""
    allowed = None
    for value in unit_values("SystemCallFilter"):
        deny = value.startswith("~")
        calls = set().union(*(expand(n) for n in value.lstrip("~").split()))
        if deny:
            allowed = (allowed or set()) - calls
        else:
            allowed = (allowed or set()) | calls
    return allowed


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_what_the_processor_does_fits_the_units_sandbox(db, smtpd, certs, tmp_path):
    db.sql("CREATE EXTENSION pg_relay_notifier")
    db.sql("CREATE TABLE done (p text)")
    db.sql("CREATE FUNCTION h(p text) RETURNS void SECURITY DEFINER SET search_path = public "
           "LANGUAGE sql AS 'INSERT INTO done VALUES (p)'")
    db.sql("SELECT pgrelay.register('ev', 'sql', handler => 'h(text)')")
    s = smtpd("--starttls", "--cert", "{certs}/server.pem", "--key", "{certs}/server.key",
              "--auth-user", "relay", "--auth-password", "pw-1")
    (tmp_path / "secrets" / "profile" / "p").mkdir(parents=True)      # the profile's own directory
    (tmp_path / "secrets" / "profile" / "p" / "smtp").write_text("pw-1\n")
    db.sql("SELECT pgrelay_notifier.create_profile('p', host => '127.0.0.1', port => %s, security => 'starttls', "
           "ca_file => %s, username => 'relay', password => 'file:smtp', from_address => 'noreply@example.com')",
           (s.port, str(certs / "ca.pem")))
    db.sql("SELECT pgrelay_notifier.create_channel('mail', 'p')")
    db.sql("SELECT pgrelay.notify('ev', 'x')")
    nid = db.scalar("SELECT pgrelay_notifier.send('mail', \"to\" => ARRAY['ann@example.org'], subject => 's', "
                    "body_text => 'b')")

    trace = tmp_path / "strace.out"
    notify = NotifySocket(tmp_path)  # and the notifications to systemd, watchdog included
    p = testlib.Processor(["-d", db.dsn, "--poll-interval=50ms", "--secrets-dir", str(tmp_path / "secrets"),
                           "--metrics=127.0.0.1:0"],
                          binary=testlib.PROCESSOR_RELEASE, env=notify.env(watchdog_usec=200000),
                          wrapper=("strace", "-f", "-qq", "-e", "signal=none", "-o", str(trace)))
    testlib.wait_for(lambda: db.scalar("SELECT status FROM pgrelay_notifier.get_status(%s)", (nid,)) == "sent",
                     "the email to be sent")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM done") == 1, "the SQL event")
    # a scrape of the Prometheus endpoint, and a request it refuses
    addr = p.wait_log(r" metrics_listening address=(\S+)").group(1)
    with urllib.request.urlopen("http://%s/metrics" % addr, timeout=10) as r:
        assert b"pgrelay_events_total" in r.read()
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen("http://%s/" % addr, timeout=10)
    # signals go to the Processor itself, strace's child
    child = int(open("/proc/%d/task/%d/children" % (p.proc.pid, p.proc.pid)).read().split()[0])
    os.kill(child, signal.SIGHUP)
    p.wait_log(r" reloaded source=signal")
    os.kill(child, signal.SIGTERM)
    assert p.wait_exit() == 0
    p.wait_log(r" stopped unfinished=0")
    notify.wait_key("WATCHDOG", "1")
    notify.wait_key("STOPPING", "1")
    notify.close()

    calls, families, wx, writes, proc = set(), set(), [], [], []
    for line in trace.read_text(errors="replace").splitlines():
        m = re.match(r"\d+\s+([a-z0-9_]+)\((.*)", line)
        if not m:
            continue
        name, args = m.groups()
        calls.add(name)
        if name == "socket":
            families.add(args.split(",")[0])
        if name in ("mmap", "mprotect", "pkey_mprotect") and "PROT_WRITE" in args and "PROT_EXEC" in args:
            wx.append(line)
        if name in ("open", "openat", "creat") and re.search(r"O_WRONLY|O_RDWR|O_CREAT", args) or \
                name in ("creat", "mkdir", "mkdirat", "unlink", "unlinkat", "rename", "renameat", "renameat2"):
            writes.append(line)
        path = re.search(r'"(/proc/[^"]*)"', args)
        if path and not re.match(r"/proc/(self|thread-self|\d+)(/|$)", path.group(1)):
            proc.append(line)

    assert calls, "strace recorded nothing"
    denied = sorted(calls - allowed_syscalls() - {"execve"})  # execve: strace starting the binary
    assert not denied, "system calls SystemCallFilter= refuses: %s" % denied
    allowed_families = set(unit_values("RestrictAddressFamilies")[0].split())
    assert families and families <= allowed_families, families
    assert unit_values("MemoryDenyWriteExecute") == ["yes"] and not wx, wx
    assert not writes, writes
    assert not proc, proc
