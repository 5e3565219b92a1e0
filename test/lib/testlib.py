"""Shared helpers of the end-to-end tests: throwaway PostgreSQL clusters, the Processor as a child
process with its log, and polling for conditions (never sleeping as synchronisation).

Clusters come from test/lib/pgcluster (a private copy of the PostgreSQL install with both
extensions, servers run as an unprivileged user when we are root).
"""
import os
import re
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import json
import pathlib

import psycopg

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PGCLUSTER = os.path.join(ROOT, "test", "lib", "pgcluster")
FIXTURES = os.path.join(ROOT, "test", "fixtures")
PYTHON = "/usr/bin/python3"
PROCESSOR = os.environ.get("PGRELAY_BIN", os.path.join(ROOT, "processor", "build", "asan", "pg_relay"))
PROCESSOR_RELEASE = os.environ.get("PGRELAY_BIN_RELEASE",
                                   os.path.join(ROOT, "processor", "build", "release", "pg_relay"))


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


def pg_prefix():
    """The private PostgreSQL prefix: made once per test session unless run-all made it."""
    global _prefix
    if _prefix is None:
        _prefix = os.environ.get("PGRELAY_PG_PREFIX")
        if not _prefix:
            _prefix = os.path.join(work_dir("pgprefix-"), "pg")
            subprocess.run([PGCLUSTER, "prefix", _prefix], check=True)
            os.environ["PGRELAY_PG_PREFIX"] = _prefix
    return _prefix


def pgcluster(*args, check=True):
    pg_prefix()
    return subprocess.run([PGCLUSTER] + [str(a) for a in args], check=check,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class Cluster:
    """One throwaway PostgreSQL cluster on a unix socket in its directory and a loopback port."""

    def __init__(self, path, conf=(), init=True):
        self.path = path
        if init:
            r = pgcluster("init", path, *conf, check=False)
            if r.returncode != 0:
                raise AssertionError("initdb failed: " + r.stderr)
        self.port = None

    def start(self):
        r = pgcluster("start", self.path, check=False)
        if r.returncode != 0:
            raise AssertionError("cluster start failed: " + r.stderr)
        self.port = int(r.stdout.strip())
        return self

    def stop(self, mode="fast"):
        pgcluster("stop", self.path, mode, check=False)

    def restart(self, mode="fast"):
        self.stop(mode)
        return self.start()

    def promote(self):
        pgcluster("promote", self.path)

    def standby(self, path):
        """A streaming standby of this (running) cluster, started."""
        pgcluster("basebackup", self.path, path)
        return Cluster(path, init=False).start()

    def dsn(self, dbname="postgres", **extra):
        parts = ["host=%s" % self.path, "port=%d" % self.port, "dbname=%s" % dbname, "user=postgres"]
        parts += ["%s=%s" % kv for kv in extra.items()]
        return " ".join(parts)

    def connect(self, dbname="postgres", **extra):
        return psycopg.connect(self.dsn(dbname, **extra), autocommit=True)

    def server_log(self):
        with open(os.path.join(self.path, "server.log"), errors="replace") as f:
            return f.read()


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
