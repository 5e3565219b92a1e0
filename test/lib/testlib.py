"""Shared helpers of the end-to-end tests: throwaway PostgreSQL clusters, the Processor as a child
process with its log, and polling for conditions (never sleeping as synchronisation).

Clusters come from test/lib/pgcluster (a private copy of the PostgreSQL install with both
extensions, servers run as an unprivileged user when we are root). For high availability:
StandbyPair (a primary and its streaming standby) and PglogicalCluster (2 or 3 pglogical 2 nodes
subscribed to each other), see docs/testing.md.
"""
import base64
import contextlib
import glob
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import json
import pathlib

import psycopg

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _ext_version():
    """The version of both extensions built here (pg_relay.control's default_version)."""
    with open(os.path.join(ROOT, "extension", "pg_relay", "pg_relay.control")) as f:
        return re.search(r"default_version = '([^']+)'", f.read()).group(1)


EXT_VERSION = _ext_version()
PGCLUSTER = os.path.join(ROOT, "test", "lib", "pgcluster")
FIXTURES = os.path.join(ROOT, "test", "fixtures")
PYTHON = "/usr/bin/python3"
PROCESSOR = os.environ.get("PGRELAY_BIN", os.path.join(ROOT, "processor", "build", "asan", "pg_relay"))
PROCESSOR_RELEASE = os.environ.get("PGRELAY_BIN_RELEASE",
                                   os.path.join(ROOT, "processor", "build", "release", "pg_relay"))
# delivers fetch() documents outside any database (processor/test/mail/tool_deliver.c)
TOOL_DELIVER = os.environ.get("PGRELAY_TOOL_DELIVER",
                              os.path.join(ROOT, "processor", "build", "asan", "tool_deliver"))


def wait_for(cond, what, timeout=30.0, interval=0.01):
    """Poll cond() until it returns something true and return that; the timeout only bounds a
    broken test, it is never what a test measures."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(interval)


def work_dir(prefix):
    """A fresh directory the unprivileged server user can enter."""
    base = os.environ.get("PGRELAY_TEST_WORK") or tempfile.gettempdir()
    d = tempfile.mkdtemp(prefix=prefix, dir=base)
    os.chmod(d, 0o755)
    return d


_prefix = None
_prefix_majors = set()
_major = None


def pg_major():
    """The PostgreSQL major of this session's clusters, as a string: PGRELAY_PG_MAJOR (test/run-all
    sets it for each major it runs), else pgcluster's default (15 on Debian 12)."""
    global _major
    if _major is None:
        _major = os.environ.get("PGRELAY_PG_MAJOR") or subprocess.run(
            [PGCLUSTER, "major"], check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    return _major


def runs_here(major=None):
    """Whether a major's programs are this machine's own (else they run in a Debian chroot of
    test/lib/pgchroot, and only the server's socket and files are shared with the tests)."""
    major = str(major or pg_major())
    bindir = os.environ.get("PG_BINDIR")
    if bindir and os.path.basename(os.path.dirname(bindir.rstrip("/"))) == major:
        return True
    return os.access("/usr/lib/postgresql/%s/bin/postgres" % major, os.X_OK)


def pg_prefix(major=None):
    """The private PostgreSQL prefix, holding `major` (default: the session's): made once per test
    session unless run-all made it; a major it lacks is added on first use."""
    global _prefix
    major = str(major or pg_major())
    if _prefix is None:
        _prefix = os.environ.get("PGRELAY_PG_PREFIX") or os.path.join(work_dir("pgprefix-"), "pg")
    if major not in _prefix_majors:
        if not os.path.exists(os.path.join(_prefix, "lib", "postgresql", major, "bin", "postgres")):
            subprocess.run([PGCLUSTER, "prefix", _prefix, major], check=True)
        _prefix_majors.add(major)
        os.environ["PGRELAY_PG_PREFIX"] = _prefix
    return _prefix


def pg_libdir(major=None):
    """The prefix's library directory of a major (its .so files: pglogical, pg_cron), on this
    machine's side."""
    major = str(major or pg_major())
    return os.path.join(pg_prefix(major), "lib", "postgresql", major, "lib")


def program(name, major=None):
    """The command (a list: append the arguments) that runs one of a major's client programs from
    the prefix (psql, pg_dump, ...), where that major runs: on this machine or in its chroot."""
    major = str(major or pg_major())
    path = os.path.join(pg_prefix(major), "lib", "postgresql", major, "bin", name)
    return [path] if runs_here(major) else [PGCLUSTER, "exec", major, path]


def pgcluster(*args, check=True, major=None):
    """test/lib/pgcluster; `major` picks the major of a cluster it makes (init), else the session's."""
    major = str(major or pg_major())
    pg_prefix(major)
    return subprocess.run([PGCLUSTER] + [str(a) for a in args], check=check,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=dict(os.environ, PGRELAY_PG_MAJOR=major))


def run_parallel(*fns):
    """Call each fn in its own thread (they mostly wait on subprocesses or servers); return their
    results in order, or raise the first exception once all have finished."""
    results = [None] * len(fns)
    errors = []

    def run(k, fn):
        try:
            results[k] = fn()
        except BaseException as e:  # noqa: B902 - re-raised in the caller's thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k, fn)) for k, fn in enumerate(fns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def free_ports(n):
    """n distinct free loopback ports (held together while chosen, so clusters started in parallel
    cannot pick the same one)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for sk in socks:
            sk.bind(("127.0.0.1", 0))
        return [sk.getsockname()[1] for sk in socks]
    finally:
        for sk in socks:
            sk.close()


def keep_dirs():
    """KEEP=1 (as for test/run-all) keeps the clusters' directories and logs for a post-mortem."""
    return os.environ.get("KEEP") == "1"


class Cluster:
    """One throwaway PostgreSQL cluster on a unix socket in its directory and a loopback port.
    pglogical=True initialises it for pglogical 2 (pgcluster init-pglogical). `major` (default:
    the session's, pg_major()) is the PostgreSQL major it is made with; a cluster of any major
    works the same from here (pgcluster runs another major's server in its chroot)."""

    def __init__(self, path, conf=(), init=True, pglogical=False, major=None):
        self.path = path
        self.major = str(major or pg_major())
        if init:
            r = pgcluster("init-pglogical" if pglogical else "init", path, *conf, check=False,
                          major=self.major)
            if r.returncode != 0:
                raise AssertionError("initdb failed: " + r.stderr)
        self.port = None

    def start(self, port=None):
        """Start on `port`, else on the port of the last start, else on a free one."""
        r = pgcluster("start", self.path, *([port] if port else []), check=False, major=self.major)
        if r.returncode != 0:
            raise AssertionError("cluster start failed: " + r.stderr)
        self.port = int(r.stdout.strip())
        return self

    def stop(self, mode="fast"):
        pgcluster("stop", self.path, mode, check=False, major=self.major)

    def restart(self, mode="fast"):
        self.stop(mode)
        return self.start()

    def promote(self):
        pgcluster("promote", self.path, major=self.major)

    def standby(self, path):
        """A streaming standby of this (running) cluster, started."""
        pgcluster("basebackup", self.path, path, major=self.major)
        return Cluster(path, init=False, major=self.major).start()

    def dsn(self, dbname="postgres", **extra):
        parts = ["host=%s" % self.path, "port=%d" % self.port, "dbname=%s" % dbname, "user=postgres"]
        parts += ["%s=%s" % kv for kv in extra.items()]
        return " ".join(parts)

    def tcp_dsn(self, dbname="postgres", **extra):
        """The loopback TCP address (what another server, or a multi-host conninfo, uses)."""
        parts = ["host=127.0.0.1", "port=%d" % self.port, "dbname=%s" % dbname, "user=postgres"]
        parts += ["%s=%s" % kv for kv in extra.items()]
        return " ".join(parts)

    def connect(self, dbname="postgres", **extra):
        return psycopg.connect(self.dsn(dbname, **extra), autocommit=True)

    def server_log(self):
        with open(os.path.join(self.path, "server.log"), errors="replace") as f:
            return f.read()

    def pid(self):
        """The postmaster's pid."""
        return int(pgcluster("pid", self.path, major=self.major).stdout)

    def pids(self):
        """The postmaster's pid and its children's."""
        return [int(p) for p in pgcluster("pids", self.path, major=self.major).stdout.split()]

    def freeze(self):
        """SIGSTOP the postmaster and every child: a hung server. Connections are still accepted
        by the kernel and then never answered, so do not connect to it until thaw()."""
        pgcluster("freeze", self.path, major=self.major)

    def thaw(self):
        pgcluster("thaw", self.path, major=self.major)


class Database:
    """A fresh database in a cluster, with pg_relay installed and an autocommit connection."""

    counter = 0

    def __init__(self, cluster, extensions=("pg_relay",)):
        Database.counter += 1
        self.cluster = cluster
        self.name = "t%d_%d" % (os.getpid(), Database.counter)
        with cluster.connect() as c:
            c.execute('CREATE DATABASE "%s"' % self.name)
        self.conn = cluster.connect(self.name)
        for ext in extensions:
            self.conn.execute("CREATE EXTENSION %s CASCADE" % ext)

    @property
    def dsn(self):
        return self.cluster.dsn(self.name)

    def sql(self, query, params=None):
        cur = self.conn.execute(query, params)
        return cur.fetchall() if cur.description is not None else []

    def scalar(self, query, params=None):
        row = self.conn.execute(query, params).fetchone()
        return row[0] if row else None

    @contextlib.contextmanager
    def poison_log_refused(self):
        """For the with block, a trigger refuses the 'ok' log row of every event whose payload is
        'poison' ("log rows of poison are refused", SQLSTATE P0001): an outcome that cannot be
        recorded."""
        self.conn.execute("""
            CREATE FUNCTION refuse_ok() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'log rows of poison are refused'; END $$;
            CREATE TRIGGER refuse_ok BEFORE INSERT ON pgrelay.log FOR EACH ROW
                WHEN (NEW.payload = 'poison' AND NEW.outcome = 'ok') EXECUTE FUNCTION refuse_ok();""")
        try:
            yield
        finally:
            self.conn.execute("DROP TRIGGER refuse_ok ON pgrelay.log; DROP FUNCTION refuse_ok()")

    def close(self):
        self.conn.close()
        with self.cluster.connect() as c:
            c.execute('DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % self.name)


class Processor:
    """The pg_relay binary as a child process; its log (stderr) goes to a file we can poll."""

    counter = 0

    def __init__(self, args, env=None, binary=PROCESSOR, wrapper=()):
        Processor.counter += 1
        self.logpath = os.path.join(work_dir("proc-"), "processor.log")
        self.logfile = open(self.logpath, "wb")
        full_env = dict(os.environ)
        full_env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        full_env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        if env:
            full_env.update(env)
        self.proc = subprocess.Popen(list(wrapper) + [binary] + list(args), stdout=self.logfile,
                                     stderr=subprocess.STDOUT, env=full_env)
        self.returncode = None

    def log(self):
        with open(self.logpath, errors="replace") as f:
            return f.read()

    def lines(self, event=None):
        out = self.log().splitlines()
        if event:
            out = [l for l in out if re.search(r"\s%s(\s|$)" % re.escape(event), l)]
        return out

    def wait_log(self, pattern, timeout=30.0, count=1):
        """Wait until `count` log lines match the regex; return the last match."""
        def found():
            if self.proc.poll() is not None and self.returncode is None:
                self.returncode = self.proc.returncode
            ms = [m for m in (re.search(pattern, l) for l in self.log().splitlines()) if m]
            if len(ms) >= count:
                return ms[-1]
            if self.returncode is not None:
                raise AssertionError("processor exited (rc=%s) before logging %r:\n%s"
                                     % (self.returncode, pattern, self.log()))
            return None
        try:
            return wait_for(found, "log line %r" % pattern, timeout)
        except AssertionError as e:
            raise AssertionError("%s; processor log:\n%s" % (e, self.log()[-6000:])) from None

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait_exit(self, timeout=60.0):
        self.returncode = self.proc.wait(timeout=timeout)
        self.check_sanitizers()
        return self.returncode

    def stop(self, timeout=60.0):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.wait_exit(timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.returncode = self.proc.wait()

    def check_sanitizers(self):
        text = self.log()
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            assert marker not in text, "sanitizer report in the processor log:\n" + text


def remove_tree(path):
    shutil.rmtree(path, ignore_errors=True)


def copy_source(dst):
    """The source tree without build output, copied to dst (for a package build): the files git
    knows (tracked or new), else all but the build directories."""
    if os.path.exists(os.path.join(ROOT, ".git")):
        names = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "-co", "--exclude-standard"],
                               check=True, stdout=subprocess.PIPE, text=True).stdout
        for name in filter(None, names.split("\0")):
            src = os.path.join(ROOT, name)
            if os.path.isfile(src):
                os.makedirs(os.path.dirname(os.path.join(dst, name)), exist_ok=True)
                shutil.copy2(src, os.path.join(dst, name))
    else:
        shutil.copytree(ROOT, dst, ignore=shutil.ignore_patterns("build", "build-clang", "__pycache__"))


def make_certs(directory):
    """A throwaway CA and server certificates (test/fixtures/certs.sh) in directory."""
    subprocess.run(["sh", os.path.join(FIXTURES, "certs.sh"), str(directory)], check=True)
    return pathlib.Path(directory)


class SmtpServer:
    """One smtpd.py process; its spool tells what arrived."""

    def __init__(self, tmp, args):
        tmp = pathlib.Path(tmp)
        tmp.mkdir(parents=True, exist_ok=True)
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


class GraphServer:
    """One graphd.py process (test/fixtures/graphd.py): the token endpoint and Graph sendMail over
    HTTPS with the throwaway CA, scriptable at run time through its control port.

    GraphServer(tmp, certs) knows one tenant, one app (CLIENT_ID / CLIENT_SECRET, a secret full
    of characters that need form encoding) and one sender mailbox (SENDER); keyword arguments
    replace them, `args` adds raw graphd.py flags."""

    TENANT = "contoso.onmicrosoft.com"
    TENANT_ID = "9188040d-6c67-4c5b-b112-36a304b66dad"
    CLIENT_ID = "6731de76-14a6-49ae-97bc-6eba6914391e"
    CLIENT_SECRET = "Xy~8Q+b/c=d&e%41f%g h"
    SENDER = "relay@contoso.com"
    GRAPH_SCOPE = "https://graph.microsoft.com/.default"
    OUTLOOK_SCOPE = "https://outlook.office365.com/.default"

    def __init__(self, tmp, certs, args=(), tenants=None, clients=None, mailboxes=None,
                 expires_in=None, plain_http=False, host="127.0.0.1"):
        tmp = pathlib.Path(tmp)
        tmp.mkdir(parents=True, exist_ok=True)
        self.spool = tmp / "spool"
        self.ca = str(pathlib.Path(certs) / "ca.pem")
        ready = tmp / "ready"
        self.host = host
        flags = ["--host", host, "--cert", str(pathlib.Path(certs) / "server.pem"),
                 "--key", str(pathlib.Path(certs) / "server.key")]
        for t in tenants or (self.TENANT, self.TENANT_ID):
            flags += ["--tenant", t]
        for cid, secret in (clients or {self.CLIENT_ID: self.CLIENT_SECRET}).items():
            flags += ["--client", "%s=%s" % (cid, secret)]
        for m in mailboxes or (self.SENDER,):
            flags += ["--mailbox", m]
        if expires_in is not None:
            flags += ["--expires-in", str(expires_in)]
        if plain_http:
            flags.append("--plain-http")
        self.log = open(tmp / "graphd.log", "wb")
        self.proc = subprocess.Popen(
            [PYTHON, os.path.join(FIXTURES, "graphd.py"), "--ready-file", str(ready),
             "--spool", str(self.spool)] + flags + list(args),
            stdout=self.log, stderr=subprocess.STDOUT)
        ports = json.loads(wait_for(lambda: self._read(ready), "graphd to listen"))
        self.port, self.http_port = ports["https"], ports["http"]
        self.control_port = ports["control"]
        netloc = "[%s]" % host if ":" in host else host
        self.base_url = "https://%s:%d" % (netloc, self.port)
        self.http_base_url = "http://%s:%d" % (netloc, self.http_port) if self.http_port else None

    def _read(self, path):
        if self.proc.poll() is not None:
            raise AssertionError("graphd exited: " + open(self.log.name).read())
        return path.read_text() if path.exists() else None

    # -- URLs
    def token_url(self, tenant=None, base=None):
        return "%s/%s/oauth2/v2.0/token" % (base or self.base_url, tenant or self.TENANT)

    def sendmail_url(self, user=None, base=None):
        return "%s/v1.0/users/%s/sendMail" % (base or self.base_url,
                                              urllib.parse.quote(user or self.SENDER, safe=""))

    def ssl_context(self):
        """A client context that trusts the throwaway CA (and nothing else)."""
        return ssl.create_default_context(cafile=self.ca)

    # -- what arrived
    def counters(self):
        return json.loads((self.spool / "counters.json").read_text())

    def requests(self, endpoint=None):
        """The request records in arrival order; endpoint "token" or "sendmail" filters."""
        out = [json.loads((self.spool / n).read_text())
               for n in sorted(os.listdir(self.spool)) if re.match(r"req-\d+\.json$", n)]
        if endpoint == "token":
            out = [r for r in out if r["path"].endswith("/oauth2/v2.0/token")]
        elif endpoint == "sendmail":
            out = [r for r in out if r["path"].lower().endswith("/sendmail")]
        return out

    def wait_requests(self, count, endpoint=None, timeout=30.0):
        """Poll until `count` records (of endpoint) are in the spool; return them all."""
        def enough():
            r = self.requests(endpoint)
            return r if len(r) >= count else None
        return wait_for(enough, "%d %s requests at graphd" % (count, endpoint or "all"), timeout)

    def file(self, name):
        """A spool file named by a record (body_file, attachments[i]["file"], mime["file"])."""
        return (self.spool / name).read_bytes()

    def tokens(self):
        return json.loads((self.spool / "tokens.json").read_text())

    def tokens_file(self):
        """For smtpd.py --xoauth2-tokens."""
        return str(self.spool / "tokens.json")

    def mailbox_id(self, upn=None):
        return json.loads((self.spool / "mailboxes.json").read_text())[upn or self.SENDER]

    # -- run-time control
    def control(self, path, doc=None):
        data = None if doc is None else json.dumps(doc).encode()
        netloc = "[%s]" % self.host if ":" in self.host else self.host
        req = urllib.request.Request("http://%s:%d%s" % (netloc, self.control_port, path),
                                     data=data, method="GET" if doc is None else "POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise AssertionError("graphd control %s: %s" % (path, e.read().decode())) from None

    def script(self, endpoint, *entries):
        """Queue scripted answers for the next requests to endpoint ("token" or "sendmail"), e.g.
        script("sendmail", "429 retry-after=2", "drop", "hang seconds=30")."""
        return self.control("/script", {"endpoint": endpoint, "entries": list(entries)})

    def clear_script(self):
        return self.control("/clear", {})

    def expire_tokens(self):
        return self.control("/expire-tokens", {})

    def configure(self, **settings):
        """expires_in=N, deny_mailboxes=[...], mailboxes=[...]"""
        return self.control("/config", settings)

    def state(self):
        return self.control("/state")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class HookServer:
    """One hookd.py process (test/fixtures/hookd.py): a webhook receiver over HTTPS (the throwaway
    CA) and plain HTTP that checks Standard Webhooks signatures with Python's hmac under `secrets`,
    spools every request and answers as scripted (script("503 retry-after=1", "hang", ...))."""

    SECRET = "whsec_" + base64.b64encode(bytes(range(1, 33))).decode()

    def __init__(self, tmp, certs, secrets=None, args=(), host="127.0.0.1"):
        tmp = pathlib.Path(tmp)
        tmp.mkdir(parents=True, exist_ok=True)
        self.spool = tmp / "spool"
        self.ca = str(pathlib.Path(certs) / "ca.pem")
        self.host = host
        ready = tmp / "ready"
        flags = ["--host", host, "--cert", str(pathlib.Path(certs) / "server.pem"),
                 "--key", str(pathlib.Path(certs) / "server.key")]
        for s in (self.SECRET,) if secrets is None else secrets:
            flags += ["--secret", s]
        self.log = open(tmp / "hookd.log", "wb")
        self.proc = subprocess.Popen(
            [PYTHON, os.path.join(FIXTURES, "hookd.py"), "--ready-file", str(ready),
             "--spool", str(self.spool)] + flags + list(args),
            stdout=self.log, stderr=subprocess.STDOUT)
        ports = json.loads(wait_for(lambda: self._read(ready), "hookd to listen"))
        self.port, self.http_port, self.control_port = ports["https"], ports["http"], ports["control"]
        netloc = "[%s]" % host if ":" in host else host
        self.base_url = "https://%s:%d" % (netloc, self.port)
        self.http_base_url = "http://%s:%d" % (netloc, self.http_port)

    def _read(self, path):
        if self.proc.poll() is not None:
            raise AssertionError("hookd exited: " + open(self.log.name).read())
        return path.read_text() if path.exists() else None

    def url(self, path="/hooks"):
        return self.base_url + path

    def requests(self):
        """The request records in arrival order."""
        if not self.spool.exists():
            return []
        return [json.loads((self.spool / n).read_text())
                for n in sorted(os.listdir(self.spool)) if re.match(r"req-\d+\.json$", n)]

    def wait_requests(self, count, timeout=30.0):
        """Poll until `count` requests are in the spool; return them all."""
        def enough():
            r = self.requests()
            return r if len(r) >= count else None
        return wait_for(enough, "%d requests at hookd" % count, timeout)

    def body(self, record):
        return (self.spool / record["body_file"]).read_bytes()

    @staticmethod
    def header(record, name):
        for k, v in record["headers"]:
            if k.lower() == name.lower():
                return v
        return None

    def counters(self):
        return json.loads((self.spool / "counters.json").read_text())

    def control(self, path, doc=None):
        data = None if doc is None else json.dumps(doc).encode()
        netloc = "[%s]" % self.host if ":" in self.host else self.host
        req = urllib.request.Request("http://%s:%d%s" % (netloc, self.control_port, path),
                                     data=data, method="GET" if doc is None else "POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def script(self, *entries):
        return self.control("/script", {"entries": list(entries)})

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def make_doc(port, security="none", **kw):
    """A fetch() document for the test server; keyword arguments override top-level keys,
    smtp_* keys override profile.smtp, profile_* keys override the profile."""
    doc = {
        "interface_version": 4,
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


def make_graph_doc(g, **kw):
    """A fetch() document for a Microsoft Graph profile on the fake g (GraphServer): its token
    endpoint and Graph URL, its CA, the Graph scope (the fake's URL is not graph.microsoft.com, so
    the default {graph_url}/.default would not do) and the secret env:GRAPH_SECRET. Keyword
    arguments override top-level keys, graph_* keys profile.graph, profile_* keys the profile."""
    doc = make_doc(0, **{"from": {"address": g.SENDER, "name": "Contoso Relay"},
                         "message_id": "<4242.test@contoso.com>"})
    doc["profile"].update(name="m365", transport="graph", smtp=None, graph={
        "tenant_id": g.TENANT, "client_id": g.CLIENT_ID, "client_secret": "env:GRAPH_SECRET",
        "sender": g.SENDER, "login_url": g.base_url, "graph_url": g.base_url,
        "scope": g.GRAPH_SCOPE, "ca_file": g.ca, "save_to_sent_items": True})
    for k, v in kw.items():
        if k.startswith("graph_"):
            doc["profile"]["graph"][k[6:]] = v
        elif k.startswith("profile_"):
            doc["profile"][k[8:]] = v
        else:
            doc[k] = v
    return doc


# ------------------------------------------------------------------------------------------------
# High availability: a streaming standby pair and pglogical 2 nodes. Recipes and the pglogical
# quirks worked around here: docs/testing.md, "The HA harness".

def _query(conn, sql, params=None):
    cur = conn.execute(sql, params)
    return cur.fetchall() if cur.description is not None else []


def call_failed(request):
    """In a pytest fixture's teardown: whether the test's call failed (test/conftest.py records it)."""
    rep = getattr(request.node, "rep_call", None)
    return rep is not None and rep.failed


def proc_state(pid):
    """A process's one-letter state from /proc (R, S, T, Z...), None when there is no such process."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def pglogical_guard(request, pc):
    """For a function-scoped pytest fixture over a module-scoped PglogicalCluster
    (`yield from pglogical_guard(request, pc)`): after a failed test it prints the mesh's state
    and the servers' logs; after any test it starts killed nodes, thaws frozen ones and waits
    until every link streams, so that the next test starts from a healthy mesh."""
    yield pc
    if call_failed(request):
        print("---- pglogical state: %s" % pc.describe())
        for node in pc.nodes:
            print("---- server log of %s (%s) ----\n%s" % (node.name, node.cluster.path, pc.log_tail(node.index, 60)))
    pc.heal()


def pglogical_missing(major=None):
    """Why pglogical clusters of a major (default: the session's) cannot run here (None when they
    can): the private prefix is a hard-linked copy of the install, so pglogical must be installed
    before it is made."""
    major = str(major or pg_major())
    if os.path.exists(os.path.join(pg_libdir(major), "pglogical.so")):
        return None
    if not runs_here(major):
        return "the chroot of PostgreSQL %s has no pglogical (its Debian suite has no postgresql-%s-pglogical)" % (
            major, major)
    if not os.path.exists("/usr/lib/postgresql/%s/lib/pglogical.so" % major):
        return "pglogical is not installed (apt-get install postgresql-%s-pglogical)" % major
    return "the PostgreSQL prefix %s predates the pglogical install: make it again" % pg_prefix(major)


class StandbyPair:
    """A primary and its streaming standby (pg_basebackup -R -X stream), both started and
    streaming. After promote() `primary` is the promoted node and `old_primary` the one that was
    killed: never restart that one as it is (two read-write servers, and a read-write multi-host
    conninfo picks the first listed). conninfo() always lists both, in their original order.
    `major`: the PostgreSQL major of both (default: the session's)."""

    def __init__(self, path=None, conf=(), major=None):
        self.path = path or work_dir("pair-")
        self.nodes = []
        self.old_primary = None
        try:
            self.primary = Cluster(os.path.join(self.path, "a"), major=major,
                                   conf=("wal_level = replica", "max_wal_senders = 10") + tuple(conf))
            self.nodes.append(self.primary)
            self.primary.start()
            self.standby = self.primary.standby(os.path.join(self.path, "b"))
            self.nodes.append(self.standby)
            with self.primary.connect() as c:
                wait_for(lambda: c.execute("SELECT count(*) FROM pg_stat_replication"
                                           " WHERE state = 'streaming'").fetchone()[0] == 1,
                         "the standby to stream")
        except BaseException:
            self.close()
            raise

    def conninfo(self, dbname="postgres", target_session_attrs="read-write", **extra):
        """A libpq multi-host conninfo naming both servers (loopback TCP)."""
        extra.setdefault("connect_timeout", 5)
        parts = ["host=" + ",".join("127.0.0.1" for _ in self.nodes),
                 "port=" + ",".join(str(n.port) for n in self.nodes),
                 "dbname=%s" % dbname, "user=postgres",
                 "target_session_attrs=%s" % target_session_attrs]
        parts += ["%s=%s" % kv for kv in extra.items()]
        return " ".join(parts)

    def kill_primary(self):
        """pg_ctl stop -m immediate: the primary dies without a shutdown checkpoint."""
        self.primary.stop("immediate")

    def promote(self):
        """Promote the standby (pg_ctl promote -w) and wait until it accepts writes."""
        self.standby.promote()
        with self.standby.connect() as c:
            wait_for(lambda: not c.execute("SELECT pg_is_in_recovery()").fetchone()[0],
                     "the promoted standby to leave recovery")
        self.old_primary, self.primary, self.standby = self.primary, self.standby, None

    def wait_replayed(self, timeout=30.0):
        """Wait until the standby has replayed everything the primary has written so far."""
        with self.primary.connect() as p:
            lsn = p.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
        with self.standby.connect() as s:
            wait_for(lambda: s.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn",
                                       (str(lsn),)).fetchone()[0],
                     "the standby to replay up to %s" % lsn, timeout)

    def close(self):
        for n in self.nodes:
            n.stop("immediate")
        if not keep_dirs():
            remove_tree(self.path)


class PglNode:
    """One pglogical node of a PglogicalCluster: its Cluster, database, names and a cached
    autocommit connection (dropped whenever the node is killed, restarted or frozen)."""

    def __init__(self, index, cluster, dbname, node_id):
        self.index = index                  # 1-based, as in the node name
        self.name = "n%d" % index
        self.cluster = cluster
        self.dbname = dbname
        self.node_id = node_id              # the pg_relay.node_id setting, None when not set
        self.state = "up"                   # up, down (killed) or frozen
        self._conn = None

    @property
    def dsn(self):
        """This harness's connections: the unix socket."""
        return self.cluster.dsn(self.dbname)

    @property
    def peer_dsn(self):
        """What the other nodes' subscriptions use: loopback TCP."""
        return self.cluster.tcp_dsn(self.dbname)

    def conn(self):
        if self.state != "up":
            raise AssertionError("node %s is %s" % (self.name, self.state))
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=10)
        return self._conn

    def sql(self, query, params=None):
        try:
            return _query(self.conn(), query, params)
        except psycopg.OperationalError:
            self.drop_conn()
            raise

    def scalar(self, query, params=None):
        rows = self.sql(query, params)
        return rows[0][0] if rows else None

    def drop_conn(self):
        c, self._conn = self._conn, None
        if c is not None:
            try:
                c.close()
            except Exception:
                pass

    def __repr__(self):
        return "<PglNode %s %s port=%s>" % (self.name, self.state, self.cluster.port)


class PglogicalCluster:
    """N (2 or 3) PostgreSQL clusters on loopback, each with the database `dbname`, the
    pglogical extension and a pglogical node n1..nN, subscribed to each other in a full mesh
    (synchronize_data := false, forward_origins := '{}': nothing copied, nothing echoed).

    Set-up order, so that callers can create their schema before replication sets are filled:
    nodes -> schema (SQL run on every node, or a callable(node)) -> add_tables(tables) ->
    subscribe(). With subscribe=False the constructor stops after the schema and the caller does
    the rest. `node_ids` (default 1..N) become each node's `pg_relay.node_id` setting; pass
    node_ids=False for none. `conf` lines go to every node's postgresql.conf. `major` is the
    PostgreSQL major of every node (default: the session's).

    Nodes are indexed from 1 (node i is named "n<i>"); node i's subscription to node j is named
    "n<i>_from_n<j>". Teardown (close) stops the servers and deletes their directories, never
    DROP DATABASE (pglogical 2.4.2 hangs it while an apply worker runs)."""

    SETS = ("default", "default_insert_only", "ddl_sql")

    def __init__(self, n=2, dbname="relay", node_ids=None, conf=(), path=None, schema=None,
                 tables=(), subscribe=True, replication_sets=SETS, major=None):
        if n < 2:
            raise ValueError("a pglogical cluster needs at least two nodes")
        if node_ids is None:
            node_ids = list(range(1, n + 1))
        if node_ids is not False:
            if len(node_ids) != n or len(set(node_ids)) != n or \
                    not all(isinstance(i, int) and 0 <= i <= 1023 for i in node_ids):
                raise ValueError("node_ids: %d distinct integers from 0 to 1023" % n)
        self.path = path or work_dir("pgl-")
        self.dbname = dbname
        self.replication_sets = tuple(replication_sets)
        self.nodes = []
        self.slots = {}        # (provider index, subscriber index) -> slot name on the provider
        self.kicks = []        # (subscriber, subscription) per disable+enable resume_subscriptions did
        self.timings = {}      # seconds per set-up step
        try:
            t = time.monotonic()
            clusters = run_parallel(*[
                (lambda i: lambda: Cluster(
                    os.path.join(self.path, "n%d" % i), pglogical=True, major=major,
                    conf=tuple(conf) + (() if node_ids is False else
                                        ("pg_relay.node_id = %d" % node_ids[i - 1],))))(i)
                for i in range(1, n + 1)])
            for i, c in enumerate(clusters, 1):
                self.nodes.append(PglNode(i, c, dbname, None if node_ids is False else node_ids[i - 1]))
            self.timings["initdb"] = time.monotonic() - t
            t = time.monotonic()
            ports = free_ports(n)
            run_parallel(*[(lambda node, port: lambda: node.cluster.start(port))(node, port)
                           for node, port in zip(self.nodes, ports)])
            self.timings["start"] = time.monotonic() - t
            t = time.monotonic()
            run_parallel(*[(lambda node: lambda: self._create_node(node))(node) for node in self.nodes])
            self.timings["create_node"] = time.monotonic() - t
            if schema is not None:
                self.each(schema)
            if tables:
                self.add_tables(tables)
            if subscribe:
                self.subscribe()
        except BaseException:
            self.close()
            raise

    # ---- set-up ----------------------------------------------------------------------------

    def _create_node(self, node):
        with node.cluster.connect() as c:
            c.execute('CREATE DATABASE "%s"' % self.dbname)
        node.sql("CREATE EXTENSION pglogical")
        node.sql("SELECT pglogical.create_node(node_name := %s, dsn := %s)", (node.name, node.peer_dsn))

    def node(self, i):
        return self.nodes[i - 1]

    def up(self):
        """The nodes that are running and not frozen."""
        return [n for n in self.nodes if n.state == "up"]

    def each(self, what):
        """Run SQL (a string) or what(node) on every running node, in node order."""
        for node in self.up():
            if callable(what):
                what(node)
            else:
                node.sql(what)

    def add_tables(self, tables, set_name="default"):
        """replication_set_add_table(set_name, table, synchronize_data := false) on every node
        for each 'schema.table' (the tables must exist on every node)."""
        for node in self.up():
            with node.conn().transaction():
                for t in tables:
                    node.conn().execute("SELECT pglogical.replication_set_add_table(%s, %s::regclass,"
                                        " synchronize_data := false)", (set_name, t))

    @staticmethod
    def sub_name(subscriber, provider):
        return "n%d_from_n%d" % (subscriber, provider)

    def subscribe(self):
        """The full mesh of subscriptions, each node's in one transaction, nodes in parallel (one
        create_subscription per transaction costs seconds); then wait until every link streams.
        An apply worker can crash while its peers are still creating theirs (seen once in a
        three-node mesh on PostgreSQL 18: the subscription stayed `down` for the whole minute),
        and pglogical's manager may relaunch it only minutes later: so the wait heals as after a
        restart (resume_subscriptions), kicking a subscription that stays `down` for 2 s."""
        t = time.monotonic()

        def create(node):
            with node.conn().transaction():
                for p in self.nodes:
                    if p is not node:
                        node.conn().execute(
                            "SELECT pglogical.create_subscription(subscription_name := %s,"
                            " provider_dsn := %s, replication_sets := %s,"
                            " synchronize_structure := false, synchronize_data := false,"
                            " forward_origins := '{}')",
                            (self.sub_name(node.index, p.index), p.peer_dsn, list(self.replication_sets)))

        run_parallel(*[(lambda node: lambda: create(node))(node) for node in self.nodes])
        self.resume_subscriptions()
        self.timings["subscribe"] = time.monotonic() - t

    def set_conflict_resolution(self, mode):
        """pglogical.conflict_resolution on every running node (ALTER SYSTEM + reload; apply
        workers take it without a restart): error, apply_remote (pglogical's default),
        keep_local, last_update_wins, first_update_wins."""
        if mode not in ("error", "apply_remote", "keep_local", "last_update_wins", "first_update_wins"):
            raise ValueError("unknown pglogical.conflict_resolution %r" % mode)
        for node in self.up():
            node.sql("ALTER SYSTEM SET pglogical.conflict_resolution = '%s'" % mode)
            node.sql("SELECT pg_reload_conf()")
        for node in self.up():
            def reloaded():
                with psycopg.connect(node.dsn, autocommit=True, connect_timeout=10) as c:
                    return c.execute("SHOW pglogical.conflict_resolution").fetchone()[0] == mode
            wait_for(reloaded, "%s to reload pglogical.conflict_resolution" % node.name)

    # ---- state ----------------------------------------------------------------------------

    def subscription_status(self, i):
        """Rows of pglogical.show_subscription_status() on node i, as dicts; forward_origins is
        coalesced to '{}' (pglogical 2.4.2 reports NULL for '{}')."""
        cur = self.node(i).conn().execute(
            "SELECT subscription_name, status, provider_node, provider_dsn, slot_name,"
            " replication_sets, coalesce(forward_origins, '{}') AS forward_origins"
            " FROM pglogical.show_subscription_status() ORDER BY subscription_name")
        names = [d.name for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    def status(self, i, provider):
        """The status word of node i's subscription to `provider`: replicating, down, disabled..."""
        return self.node(i).scalar("SELECT status FROM pglogical.show_subscription_status(%s)",
                                   (self.sub_name(i, provider),))

    def slot_active(self, i, peer):
        """Whether node i's slot for peer's subscription to i is active (a walsender streams from
        it); None when there is no such slot."""
        return self.node(i).scalar("SELECT active FROM pg_replication_slots WHERE slot_name = %s",
                                   (self.slots[(i, peer)],))

    def _links(self):
        """(provider, subscriber) index pairs among the running nodes."""
        up = [n.index for n in self.up()]
        return [(p, s) for p in up for s in up if p != s]

    def _snapshot(self):
        """{subscriber: {provider: status}} and {provider: {slot: active}} of the running nodes."""
        subs, slots = {}, {}
        for node in self.up():
            subs[node.index] = {}
            for row in self.subscription_status(node.index):
                m = re.match(r"n(\d+)_from_n(\d+)$", row["subscription_name"])
                if m:
                    p = int(m.group(2))
                    subs[node.index][p] = row["status"]
                    self.slots.setdefault((p, node.index), row["slot_name"])
            slots[node.index] = dict(node.sql("SELECT slot_name, active FROM pg_replication_slots"))
        return subs, slots

    def _healthy(self, subs, slots):
        return all(subs[s].get(p) == "replicating" and slots[p].get(self.slots.get((p, s))) is True
                   for p, s in self._links())

    def wait_healthy(self, timeout=60.0):
        """Wait until every link between running nodes streams: the subscriber's subscription is
        replicating and the provider's slot for it active."""
        def healthy():
            return self._healthy(*self._snapshot())
        try:
            wait_for(healthy, "every pglogical link to stream", timeout, interval=0.05)
        except AssertionError:
            raise AssertionError("pglogical links not streaming after %ss: %s" % (timeout, self.describe()))

    def describe(self):
        """One line per running node: its subscriptions' status and its slots."""
        out = []
        for node in self.nodes:
            if node.state != "up":
                out.append("%s: %s" % (node.name, node.state))
                continue
            try:
                subs = ", ".join("%s=%s" % (r["subscription_name"], r["status"])
                                 for r in self.subscription_status(node.index))
                slots = ", ".join("%s active=%s" % r for r in
                                  node.sql("SELECT slot_name, active FROM pg_replication_slots"))
                out.append("%s: subscriptions %s; slots %s" % (node.name, subs, slots))
            except psycopg.Error as e:
                out.append("%s: %s" % (node.name, e))
        return "; ".join(out)

    def wait_replicated(self, sql_check, timeout=30.0, params=None, nodes=None):
        """Wait until sql_check's first value is true on every running node (or on `nodes`,
        indexes), e.g. "SELECT count(*) = 3 FROM items", or "... WHERE id = %s" with params."""
        pending = list(nodes) if nodes is not None else [n.index for n in self.up()]

        def done():
            for i in list(pending):
                if self.node(i).scalar(sql_check, params):
                    pending.remove(i)
            return not pending
        wait_for(done, "%r on nodes %s" % (sql_check, pending), timeout, interval=0.02)

    # ---- failures -------------------------------------------------------------------------

    def kill(self, i):
        """pg_ctl stop -m immediate on node i: its peers' subscriptions to it go down and their
        slots for it inactive at once."""
        node = self.node(i)
        node.drop_conn()
        node.cluster.stop("immediate")
        node.state = "down"

    def start(self, i, resume=True):
        """Start node i again (same port), then resume_subscriptions() unless resume=False."""
        node = self.node(i)
        node.cluster.start()
        node.state = "up"
        if resume:
            self.resume_subscriptions(urgent=[self.sub_name(n.index, i) for n in self.up() if n is not node])

    def resume_subscriptions(self, urgent=(), kicked=(), timeout=60.0):
        """Heal the mesh after a peer came back, until every link streams (wait_healthy).

        pglogical 2.4.2's manager holds a crashed apply worker back for 5 s, then relaunches it
        only when it wakes, which can be up to 180 s later. A subscription that is `down` is
        therefore kicked: disabled and enabled again on its node (the verified fix), which makes
        the manager forget the crash if it runs between the two commits. It usually does (resumed
        within ~0.2 s); when it does not, the subscription is still `down` 0.5 s later and is
        kicked again. Subscriptions in `urgent` (their provider was dead) are kicked at once,
        those in `kicked` (just disabled and enabled by the caller) count as kicked now, others
        are kicked only after 2 s of `down`, because a subscription is also `down` while its worker
        starts (~10 ms after an enable; a node starts its apply workers ~1 s apart) and kicking it
        then only delays it."""
        last_kick, down_since = dict.fromkeys(kicked, time.monotonic()), {}

        def due(name, now):
            if name in last_kick:
                return now - last_kick[name] >= 0.5
            return name in urgent or now - down_since[name] >= 2.0

        def healthy():
            subs, slots = self._snapshot()
            up = {n.index for n in self.up()}
            for s, by_provider in subs.items():
                for p, status in by_provider.items():
                    name = self.sub_name(s, p)
                    if status != "down" or p not in up:
                        down_since.pop(name, None)
                        continue
                    now = time.monotonic()
                    down_since.setdefault(name, now)
                    if due(name, now):
                        last_kick[name] = now
                        self._kick(s, name)
            return self._healthy(subs, slots)

        try:
            wait_for(healthy, "the subscriptions to resume", timeout, interval=0.05)
        except AssertionError:
            raise AssertionError("pglogical links not streaming after %ss: %s" % (timeout, self.describe()))

    def _kick(self, i, sub):
        node = self.node(i)
        # Two statements: immediate := true refuses to run inside a transaction block.
        node.sql("SELECT pglogical.alter_subscription_disable(%s, true)", (sub,))
        node.sql("SELECT pglogical.alter_subscription_enable(%s, true)", (sub,))
        self.kicks.append((i, sub))

    def freeze(self, i):
        """SIGSTOP every process of node i: a hung peer. Its peers still report their
        subscriptions to it `replicating`; their slots for it turn inactive only after their
        wal_sender_timeout."""
        node = self.node(i)
        node.drop_conn()
        node.cluster.freeze()
        node.state = "frozen"

    def thaw(self, i, resume=True):
        """SIGCONT node i. The connections from and to it are stale by then and die one after the
        other, each followed by a 5 s (or much longer) relaunch delay; so unless resume=False
        every subscription from and to node i is disabled, and enabled again once no walsender
        holds their slots (fresh connections both ways), then resume_subscriptions()."""
        node = self.node(i)
        node.cluster.thaw()
        node.state = "up"
        if resume:
            self.resume_subscriptions(kicked=self._reconnect(i))

    def _reconnect(self, i):
        """Disable every subscription from and to node i, wait until no walsender holds their
        slots, enable them again; returns their names."""
        others = [n.index for n in self.up() if n.index != i]
        subs = [(i, self.sub_name(i, j)) for j in others] + [(j, self.sub_name(j, i)) for j in others]
        for s, name in subs:
            self.node(s).sql("SELECT pglogical.alter_subscription_disable(%s, true)", (name,))
        names = [self.slots[link] for link in self._links() if i in link]

        def released():
            return all(not n.scalar("SELECT count(*) FROM pg_replication_slots"
                                    " WHERE active AND slot_name = ANY(%s)", (names,))
                       for n in self.up())
        wait_for(released, "the slots of node %d's links to be released" % i, interval=0.05)
        for s, name in subs:
            self.node(s).sql("SELECT pglogical.alter_subscription_enable(%s, true)", (name,))
        return [name for s, name in subs]

    def heal(self):
        """Start killed nodes, thaw frozen ones, resume: the mesh as set up, whatever a test (maybe
        one that failed midway) left behind."""
        urgent, kicked = [], []
        for node in self.nodes:
            if node.state == "down":
                self.start(node.index, resume=False)
                urgent += [self.sub_name(n.index, node.index) for n in self.nodes if n is not node]
        for node in self.nodes:
            if node.state == "frozen":
                self.thaw(node.index, resume=False)
                kicked += self._reconnect(node.index)
        self.resume_subscriptions(urgent=urgent, kicked=kicked)

    def log_tail(self, i, lines=40):
        try:
            text = self.node(i).cluster.server_log()
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def close(self):
        """Stop every server (thawing frozen ones) and delete the directories; never hangs on
        DROP DATABASE because it never drops one."""
        for node in self.nodes:
            node.cluster.stop("immediate")
            node.state = "down"
        for node in self.nodes:
            node.drop_conn()
        if not keep_dirs():
            remove_tree(self.path)

def _redis_entry_id(s):
    """Whether a line of XRANGE --raw output is an entry's id (MS-SEQ)."""
    a, _, b = s.partition("-")
    return a.isdigit() and b.isdigit()


class RedisServer:
    """A redis-server of its own on a free loopback port, in a temporary directory; with certs,
    TLS only, with the certificate cert_name (test/fixtures/certs.sh: server, or wrong). conf:
    further lines of redis.conf, after the defaults, so that they override them (appendonly yes)."""

    def __init__(self, tmp, certs=None, users=(), cert_name="server", conf=()):
        self.port = free_ports(1)[0]
        self.dir = tmp
        lines = ["port %d" % (0 if certs else self.port), "bind 127.0.0.1", "dir %s" % tmp,
                 "save ''", "appendonly no", "daemonize no", "logfile %s/redis.log" % tmp]
        if certs:
            lines += ["tls-port %d" % self.port, "tls-cert-file %s/%s.pem" % (certs, cert_name),
                      "tls-key-file %s/%s.key" % (certs, cert_name), "tls-ca-cert-file %s/ca.pem" % certs,
                      "tls-auth-clients no"]
        lines += ["user %s" % u for u in users] + list(conf)
        with open(os.path.join(tmp, "redis.conf"), "w") as f:
            f.write("\n".join(lines) + "\n")
        self.tls = certs
        self.start()

    def start(self):
        """Starts the server (again, on the same port and directory: with the defaults no data is
        kept; with appendonly yes the append-only file is loaded again)."""
        self.proc = subprocess.Popen(["redis-server", os.path.join(self.dir, "redis.conf")])
        wait_for(self.listening, "redis-server to listen")

    def listening(self):
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def cli(self, *args):
        cmd = ["redis-cli", "-h", "127.0.0.1", "-p", str(self.port), "--no-auth-warning"]
        if self.tls:
            cmd += ["--tls", "--cacert", "%s/ca.pem" % self.tls]
        return subprocess.run(cmd + list(args), check=True, capture_output=True, text=True).stdout

    def entries(self, stream):
        """Each entry of the stream as a dict of its fields, read back by redis-cli."""
        return self.entries_as(None, None, stream)

    def entries_as(self, user, password, stream):
        auth = ["--user", user, "--pass", password] if user else []
        out = self.cli(*(auth + ["--raw", "XRANGE", stream, "-", "+"])).split("\n")
        entries, i = [], 0
        while i < len(out) and out[i]:
            # --raw: the id, then field, value, field, value ... one per line
            fields, i = {"id": out[i]}, i + 1
            while i + 1 < len(out) and out[i] and not _redis_entry_id(out[i]):
                fields[out[i]] = out[i + 1]
                i += 2
            entries.append(fields)
        return entries

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)



KAFKA_MOCK = os.path.join(ROOT, "processor", "build", "release", "tool_kafka_mock")


def kafka_tls_missing():
    """Why KafkaMock(certs=...) cannot run here, or None: it needs socat and a network namespace
    of its own (unshare --net: root, as in CI)."""
    missing = [tool for tool in ("socat", "unshare", "nsenter", "ip") if shutil.which(tool) is None]
    if missing:
        return "missing: %s" % ", ".join(missing)
    out = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True)
    if out.returncode != 0:
        return "cannot make a network namespace here (unshare --net: %s)" % out.stderr.strip()
    return None


class PortTaken(RuntimeError):
    """A server in front of KafkaMock's brokers could not listen on its port: another socket has it."""


class KafkaMock:
    """librdkafka's mock cluster on loopback, in a process of its own (processor/test/kafka/
    tool_kafka_mock.c), driven by commands on its stdin; read back with kcat, a real consumer.

    With certs (test/fixtures/certs.sh's directory) its brokers are reached over TLS, with the
    certificate cert_name. The mock cluster speaks only plaintext, and a client connects to the
    address each broker advertises, so a TLS proxy on another port would be bypassed: the cluster
    runs in a network namespace of its own instead, its brokers on 127.0.0.1:PORT there, and on
    the same 127.0.0.1:PORT here a socat TLS server forwards each connection over a unix socket to
    a socat inside the namespace, which connects to the broker. The advertised address is then
    the TLS server's.

    With sasl (a dict: mechanisms, user, password) the server on each 127.0.0.1:PORT is instead
    test/fixtures/kafkasasl.py, which answers SASL itself (the mock cluster has none) before it
    passes the connection on, over TLS too when certs is given."""

    def __init__(self, brokers=1, certs=None, cert_name="server", sasl=None):
        isolated = bool(certs or sasl)
        for tries_left in (2, 1, 0) if isolated else (0,):
            self._start_cluster(brokers, isolated)
            if not isolated:
                return
            try:
                self._serve_outside(certs, cert_name, sasl)
                return
            except BaseException as e:
                # no caller gets this object to stop: the cluster and the servers started so far,
                # each in a session of its own, would outlive the test
                self.stop()
                # a port free in the cluster's namespace but taken here (by any socket of the
                # machine's, in the same range of ports): a new cluster gets other ports
                if not (isinstance(e, PortTaken) and tries_left):
                    raise

    def _start_cluster(self, brokers, isolated):
        cmd = [KAFKA_MOCK, str(brokers)]
        if isolated:
            # a new namespace's loopback is down until brought up
            cmd = ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$0" "$@"'] + cmd
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)
        line = self.proc.stdout.readline()
        assert line.startswith("bootstrap "), "the mock cluster did not start: %r" % line
        self.bootstrap = line.split()[1]
        # unshare and sh exec: the process started is the cluster itself, in its namespace
        self.inside = ["nsenter", "--net=/proc/%d/ns/net" % self.proc.pid] if isolated else []
        self.proxies, self.dir = [], None

    def _serve_outside(self, certs, cert_name, sasl):
        """On each broker's 127.0.0.1:PORT here, a server reaching the broker on the same port in
        the cluster's namespace: a socat inside listens on a unix socket (a path: reachable from
        both) and connects to the broker, and here socat's TLS server, or with sasl kafkasasl.py,
        forwards to that socket. Each port was free in that namespace; should one be taken here,
        the server exits, _alive says so, and __init__ starts a cluster again."""
        self.dir = tempfile.mkdtemp(prefix="kafka-proxy-")
        socks = [(address.rsplit(":", 1)[1], os.path.join(self.dir, "b%d.sock" % n))
                 for n, address in enumerate(self.bootstrap.split(","))]
        for port, sock in socks:
            self._start(self.inside + ["socat", "UNIX-LISTEN:%s,fork" % sock, "TCP:127.0.0.1:%s" % port])
            wait_for(lambda sock=sock: self._listening(socket.AF_UNIX, sock), "the forwarder of %s" % sock)
        if sasl:
            cmd = [PYTHON, os.path.join(FIXTURES, "kafkasasl.py"), "--user", sasl["user"]]
            cmd += ["--mechanism=%s" % m for m in sasl["mechanisms"]]
            cmd += ["--broker=%s=%s" % (port, sock) for port, sock in socks]
            if certs:
                cmd += ["--cert", "%s/%s.pem" % (certs, cert_name), "--key", "%s/%s.key" % (certs, cert_name)]
            self._start(cmd, env=dict(os.environ, KAFKASASL_PASSWORD=sasl["password"]))
        else:
            for port, sock in socks:
                self._start(["socat", "OPENSSL-LISTEN:%s,bind=127.0.0.1,reuseaddr,fork,verify=0,cert=%s/%s.pem,"
                             "key=%s/%s.key" % (port, certs, cert_name, certs, cert_name), "UNIX-CONNECT:%s" % sock])
        for port, _ in socks:
            wait_for(lambda port=port: self._serving(int(port)), "the server on port %s" % port)

    def _start(self, cmd, env=None):
        with open(os.path.join(self.dir, "proxy.log"), "a") as log:
            # a session of its own: stop() ends the forked children of a connection with it
            self.proxies.append(subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                                 env=env, start_new_session=True))

    def _alive(self):
        for p in self.proxies:
            if p.poll() is not None:
                # said here: stop() removes the directory of the log
                log = self.proxy_log()
                raise (PortTaken if "Address already in use" in log else RuntimeError)(
                    "a forwarding server exited (%d): %s" % (p.returncode, log[-2000:]))

    def _listening(self, family, address):
        self._alive()
        with socket.socket(family) as s:
            return s.connect_ex(address) == 0

    def _serving(self, port):
        """Whether a server started here listens on 127.0.0.1:port. Not a connection tried: another
        process's listener on the port would take it in the moment before ours, which cannot bind
        the port, exits."""
        self._alive()
        out = subprocess.run(["ss", "-Hltnp", "src", "127.0.0.1:%d" % port], capture_output=True, text=True,
                             check=True).stdout
        return any("pid=%d," % p.pid in out for p in self.proxies)

    def proxy_log(self):
        """What the servers here wrote (kafkasasl.py: one line per connection's outcome)."""
        with open(os.path.join(self.dir, "proxy.log")) as f:
            return f.read()

    def command(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        assert answer == "ok", (line, answer)

    def messages(self, topic):
        """Every message of the topic, oldest first in each partition, as kcat -J gives them (the
        headers as a dict); read from the brokers themselves (in their namespace), not through the
        TLS server."""
        out = subprocess.run(self.inside + ["kcat", "-C", "-b", self.bootstrap, "-t", topic, "-o", "beginning",
                                            "-e", "-q", "-J"],
                             check=True, capture_output=True, text=True, timeout=60).stdout
        msgs = [json.loads(l) for l in out.splitlines() if l.strip()]
        for m in msgs:
            h = m.get("headers") or []
            m["headers"] = dict(zip(h[0::2], h[1::2]))
        return sorted(msgs, key=lambda m: (m["partition"], m["offset"]))

    def stop(self):
        for p in self.proxies:
            # the group outlives its leader while a child still serves a connection
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=30)
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


class RabbitServer:
    """A rabbitmq-server (Debian's) of its own in a temporary directory: its node name, its data,
    its logs, its epmd (started here, in the foreground, on a free port, so that it is stopped by
    its pid) and an AMQP listener on a free loopback port; with certs, a TLS listener too with the
    certificate test/fixtures/certs.sh made for localhost. Users and virtual hosts through
    rabbitmqctl (ctl)."""

    BIN = "/usr/lib/rabbitmq/bin"

    def __init__(self, tmp, certs=None):
        self.dir = str(tmp)
        self.port, self.tls_port, self.epmd_port, self.dist_port = free_ports(4)
        self.node = "pgrelay%d@localhost" % self.port
        self.certs = certs
        conf = ["listeners.tcp.1 = 127.0.0.1:%d" % self.port, "loopback_users = none",
                "log.console = false", "log.file.level = info"]
        if certs:
            conf += ["listeners.ssl.1 = 127.0.0.1:%d" % self.tls_port,
                     "ssl_options.cacertfile = %s/ca.pem" % certs, "ssl_options.certfile = %s/server.pem" % certs,
                     "ssl_options.keyfile = %s/server.key" % certs, "ssl_options.verify = verify_none",
                     "ssl_options.fail_if_no_peer_cert = false"]
        os.makedirs(os.path.join(self.dir, "home"), exist_ok=True)
        with open(os.path.join(self.dir, "rabbitmq.conf"), "w") as f:
            f.write("\n".join(conf) + "\n")
        with open(os.path.join(self.dir, "enabled_plugins"), "w") as f:
            f.write("[].\n")
        self.env = dict(os.environ, HOME=os.path.join(self.dir, "home"),
                        RABBITMQ_MNESIA_BASE=os.path.join(self.dir, "mnesia"),
                        RABBITMQ_LOG_BASE=os.path.join(self.dir, "log"),
                        RABBITMQ_NODE_IP_ADDRESS="127.0.0.1", RABBITMQ_NODE_PORT=str(self.port),
                        RABBITMQ_DIST_PORT=str(self.dist_port), RABBITMQ_NODENAME=self.node,
                        RABBITMQ_CONFIG_FILE=os.path.join(self.dir, "rabbitmq.conf"),
                        RABBITMQ_ENABLED_PLUGINS_FILE=os.path.join(self.dir, "enabled_plugins"),
                        RABBITMQ_PID_FILE=os.path.join(self.dir, "rabbitmq.pid"),
                        ERL_EPMD_PORT=str(self.epmd_port), ERL_EPMD_ADDRESS="127.0.0.1")
        self.epmd = subprocess.Popen(["epmd", "-port", str(self.epmd_port), "-address", "127.0.0.1"],
                                     env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.log = open(os.path.join(self.dir, "server.out"), "w")
        self.proc = subprocess.Popen([os.path.join(self.BIN, "rabbitmq-server")], env=self.env,
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(self._started, "rabbitmq-server to start", timeout=180)

    def _started(self):
        """await_startup once the node answers at all (before, rabbitmqctl fails at once)."""
        if self.proc.poll() is not None:
            raise RuntimeError("rabbitmq-server exited: see %s/server.out" % self.dir)
        try:
            self.ctl("await_startup", "--timeout", "120")
            return True
        except subprocess.CalledProcessError:
            return False

    def ctl(self, *args):
        """rabbitmqctl against this node; its output."""
        return subprocess.run([os.path.join(self.BIN, "rabbitmqctl"), "-n", self.node] + list(args), env=self.env,
                              check=True, capture_output=True, text=True, timeout=180).stdout

    def amqp(self, tool, *args, vhost="/", user="guest", password="guest"):
        """One of amqp-tools' programs (amqp-declare-queue, amqp-get, ...) against the node."""
        return subprocess.run([tool, "--server", "127.0.0.1", "--port", str(self.port), "--vhost", vhost,
                               "--username", user, "--password", password] + list(args),
                              check=True, capture_output=True, text=True, timeout=60).stdout

    def queue_length(self, queue, vhost="/"):
        """How many messages the queue holds (rabbitmqctl list_queues)."""
        for line in self.ctl("list_queues", "-p", vhost, "-q", "--no-table-headers", "name", "messages").splitlines():
            name, _, count = line.rpartition("\t")
            if name == queue:
                return int(count)
        return 0

    def messages(self, queue, vhost="/"):
        """Every message of the queue, taken off it by pika (an independent client, since amqp-get
        shows bodies only): dicts of body, routing_key, exchange and properties."""
        import pika
        params = pika.ConnectionParameters("127.0.0.1", self.port, vhost, pika.PlainCredentials("guest", "guest"))
        out = []
        with pika.BlockingConnection(params) as conn:
            ch = conn.channel()
            while True:
                method, props, body = ch.basic_get(queue, auto_ack=True)
                if method is None:
                    return out
                out.append({"body": body.decode(), "routing_key": method.routing_key, "exchange": method.exchange,
                            "message_id": props.message_id, "delivery_mode": props.delivery_mode,
                            "content_type": props.content_type, "app_id": props.app_id,
                            "headers": {k: v.decode() if isinstance(v, bytes) else v
                                        for k, v in (props.headers or {}).items()}})

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.ctl("stop")
            except subprocess.CalledProcessError:
                self.proc.terminate()
            self.proc.wait(timeout=120)
        self.log.close()
        if self.epmd.poll() is None:
            self.epmd.terminate()
            self.epmd.wait(timeout=30)
