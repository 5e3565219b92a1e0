"""The Debian packages, as a DBA gets them: built with dpkg-buildpackage from a copy of the tree,
installed with apt, checked where the unit and the docs say, run end to end as the unit would run
them, then removed and purged. Root only: it installs packages and makes the pg_relay user (and
puts the machine back as it found it). The extensions' packages of the majors that run in a chroot
(17, 18) are test_extension_packages.py's."""
import os
import re
import shutil
import subprocess
import time

import psycopg
import pytest

import testlib
from machine import machine_lock, remove_user, user_exists
from notifysock import NotifySocket

PACKAGES = ("pg-relay", "postgresql-15-pg-relay")
PG_BINDIR = "/usr/lib/postgresql/15/bin"
UNIT = "/lib/systemd/system/pg_relay.service"
ETC = "/etc/pg_relay"
EXTDIR = "/usr/share/postgresql/15/extension"
VERSION = open(os.path.join(testlib.ROOT, "VERSION")).read().strip()
DB_PASSWORD = "relay-db-pw"
SMTP_PASSWORD = "smtp-s3cret"


def run(cmd, check=True, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.STDOUT)
    r = subprocess.run(cmd, text=True, **kw)
    if check:
        assert r.returncode == 0, "%s failed (%d):\n%s" % (" ".join(cmd), r.returncode, r.stdout[-6000:])
    return r


def shell(script):
    """A command of docs/operations.md, as root (the docs say sudo)."""
    return run(["sh", "-ec", script])


def installed(pkg):
    r = run(["dpkg-query", "-W", "-f=${Status}", pkg], check=False)
    return r.returncode == 0 and r.stdout.strip() == "install ok installed"


def apt(*args, cwd=None):
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    return run(["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=600"] + list(args), env=env, cwd=cwd)


def unit_settings():
    settings = {}
    for line in open(UNIT):
        line = line.strip()
        if line and not line.startswith(("#", "[")):
            k, _, v = line.partition("=")
            settings.setdefault(k, []).append(v)
    return settings


def environment_file(path):
    """KEY=value lines, as systemd's EnvironmentFile= reads this simple form."""
    env = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            k, _, v = line.partition("=")
            env[k] = v
    return env


def set_dbname(conninfo):
    """What the DBA does: the dbname line of the installed config names the database."""
    path = os.path.join(ETC, "pg_relay.conf")
    text = open(path).read()
    text, n = re.subn(r"^dbname = .*$", "dbname = '%s'" % conninfo, text, flags=re.M)
    assert n == 1
    with open(path, "w") as f:  # rewritten in place: owner, group and mode stay
        f.write(text)


def run_as_the_unit(notify, log):
    """The unit's ExecStart (plus --once), as its User=, with its EnvironmentFile= and a
    NOTIFY_SOCKET: what systemd would start, without the sandbox."""
    unit = unit_settings()
    [execstart] = unit["ExecStart"]
    env = {"PATH": "/usr/bin:/bin", "NOTIFY_SOCKET": notify.path}
    envfile = unit["EnvironmentFile"][0].lstrip("-")
    if os.path.exists(envfile):
        env.update(environment_file(envfile))
    cmd = ["runuser", "-u", unit["User"][0], "--", "env", "-i"] + ["%s=%s" % kv for kv in env.items()]
    with open(log, "w") as out:
        rc = subprocess.run(cmd + execstart.split() + ["--once"], stdout=out, stderr=subprocess.STDOUT,
                            cwd="/", timeout=120).returncode
    return rc, open(log).read()


def check_hardening(binary):
    """What hardening-check looks for, with binutils' readelf: PIE, full RELRO, stack protector,
    fortified functions."""
    header = run(["readelf", "-hW", binary]).stdout
    assert re.search(r"Type:\s+DYN", header), "not PIE"
    assert "GNU_RELRO" in run(["readelf", "-lW", binary]).stdout
    dynamic = run(["readelf", "-dW", binary]).stdout
    assert re.search(r"\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*\bNOW\b", dynamic), "no immediate binding"
    assert re.search(r"\(FLAGS_1\).*\bPIE\b", dynamic)
    syms = run(["readelf", "--dyn-syms", "-W", binary]).stdout
    assert "__stack_chk_fail" in syms
    assert re.search(r"__\w+_chk\b", syms), "no fortified functions"


@pytest.mark.skipif(os.geteuid() != 0, reason="installs Debian packages and a system user: root only")
def test_debian_packages_build_install_run_and_purge(tmp_path, smtpd, certs):
    with machine_lock():
        present = [p for p in PACKAGES if installed(p)]
        if present or os.path.exists(ETC):
            pytest.skip("%s already on this machine; this test installs and purges the packages and "
                        "leaves an existing installation alone" % (", ".join(present) or ETC))
        had_user = user_exists("pg_relay")
        try:
            build_install_run_purge(tmp_path, smtpd, certs)
        finally:
            left = [p for p in PACKAGES if installed(p) or run(["dpkg-query", "-W", p], check=False).returncode == 0]
            if left:
                apt("purge", *left)
            shutil.rmtree(ETC, ignore_errors=True)
            if not had_user and user_exists("pg_relay"):
                remove_user("pg_relay")


def build_install_run_purge(tmp_path, smtpd, certs):
    times = {}
    t0 = time.monotonic()
    tmp_path.chmod(0o755)
    src = tmp_path / "src"
    testlib.copy_source(str(src))
    run(["make", "deb"], cwd=str(src),  # dpkg-buildpackage -us -uc -b
        env={k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")})
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    debs = sorted(f for f in os.listdir(tmp_path) if f.endswith(".deb") and "-dbgsym_" not in f)
    assert debs == ["pg-relay_%s_%s.deb" % (VERSION, arch), "postgresql-15-pg-relay_%s_all.deb" % VERSION]
    times["build"] = time.monotonic() - t0
    # make deb made debian/control from debian/control.in for Debian 12: the one in the tree is that
    assert (src / "debian" / "control").read_text() == open(os.path.join(testlib.ROOT, "debian", "control")).read(), \
        "debian/control is not what pg_buildext updatecontrol makes of debian/control.in on Debian 12"

    t0 = time.monotonic()
    apt("install", "--no-install-recommends", *["./" + d for d in debs], cwd=str(tmp_path))
    times["install"] = time.monotonic() - t0
    assert all(installed(p) for p in PACKAGES)

    # --- where the unit and the documentation say things are ----------------------------------
    r = run(["/usr/bin/pg_relay", "--version"])
    assert r.stdout.splitlines()[0] == "pg_relay " + VERSION
    unit = unit_settings()
    assert unit["ExecStart"] == ["/usr/bin/pg_relay --config=/etc/pg_relay/pg_relay.conf"]
    assert unit["EnvironmentFile"] == ["-/etc/pg_relay/environment"]
    assert unit["Type"] == ["notify"] and unit["User"] == ["pg_relay"]
    man, doc = unit["Documentation"][0].split()
    assert man == "man:pg_relay(1)" and doc == "file:///usr/share/doc/pg-relay/operations.md"
    assert os.path.isfile(doc[len("file://"):])
    assert run(["man", "-w", "pg_relay"]).stdout.strip() == "/usr/share/man/man1/pg_relay.1.gz"
    for f in ("README.md", "processor.md", "security.md", "monitoring.md", "copyright", "monitoring/queries.yaml",
              "monitoring/grafana-dashboard.json"):
        assert os.path.isfile("/usr/share/doc/pg-relay/" + f), f
    v = testlib.EXT_VERSION
    for f in ("pg_relay.control", "pg_relay--%s.sql" % v, "pg_relay--1.2--%s.sql" % v, "pg_relay--1.3--%s.sql" % v,
              "pg_relay_notifier.control", "pg_relay_notifier--%s.sql" % v):
        assert os.path.isfile(os.path.join(EXTDIR, f)), f
    assert os.path.isfile("/usr/lib/sysusers.d/pg_relay.conf")
    check_hardening("/usr/bin/pg_relay")

    # the system user, and /etc/pg_relay for root and its group only
    assert user_exists("pg_relay")
    gid = int(run(["getent", "group", "pg_relay"]).stdout.split(":")[2])
    for path, mode in ((ETC, 0o750), (ETC + "/secrets", 0o750), (ETC + "/pg_relay.conf", 0o640),
                       (ETC + "/environment", 0o640)):
        st = os.stat(path)
        assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (0, gid, mode), path
    # installed, not enabled, not started: the database comes first
    assert not os.path.exists("/etc/systemd/system/multi-user.target.wants/pg_relay.service")

    # systemd accepts the installed unit, and rates its sandbox
    r = run(["systemd-analyze", "verify", UNIT], check=False)
    assert r.returncode == 0 and r.stdout == "", r.stdout
    r = run(["systemd-analyze", "security", "--offline=yes", "--threshold=25", UNIT], check=False)
    exposure = float(re.search(r"Overall exposure level for pg_relay.service: ([0-9.]+)", r.stdout).group(1))
    assert r.returncode == 0 and exposure <= 2.5, r.stdout

    # --- end to end: a throwaway cluster of the system's PostgreSQL, the installed extensions -----
    t0 = time.monotonic()
    work = testlib.work_dir("package-")
    cluster = os.path.join(work, "cluster")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG") or k.startswith("PG_")}
    env.pop("PGRELAY_PG_PREFIX", None)
    env["PG_BINDIR"] = PG_BINDIR
    run([testlib.PGCLUSTER, "init", cluster], env=env)
    try:
        end_to_end(cluster, env, work, smtpd, certs)
    finally:
        run([testlib.PGCLUSTER, "stop", cluster, "immediate"], env=env, check=False)
        if not testlib.keep_dirs():
            testlib.remove_tree(work)
    times["end_to_end"] = time.monotonic() - t0

    # --- remove keeps the configuration; purge takes what the package shipped ------------------
    t0 = time.monotonic()
    apt("remove", *PACKAGES)
    assert not os.path.exists("/usr/bin/pg_relay") and not os.path.exists(UNIT)
    assert not os.path.exists(os.path.join(EXTDIR, "pg_relay.control"))
    assert os.path.isfile(ETC + "/pg_relay.conf") and os.path.isfile(ETC + "/secrets/profile/mail/smtp_password")
    apt("purge", *PACKAGES)
    assert not any(installed(p) for p in PACKAGES)
    assert not os.path.exists(ETC + "/pg_relay.conf") and not os.path.exists(ETC + "/environment")
    # what the administrator added stays: secrets are never deleted
    assert os.path.isfile(ETC + "/secrets/profile/mail/smtp_password") and os.path.isfile(ETC + "/pgpass")
    assert user_exists("pg_relay")
    times["remove_purge"] = time.monotonic() - t0
    print("package test phases (s): " + ", ".join("%s %.1f" % kv for kv in times.items()))


def end_to_end(cluster, env, work, smtpd, certs):
    data = os.path.join(cluster, "data")
    # Peer authentication maps the OS user pg_relay to the role relay on the unix socket (the lines
    # of docs/operations.md); TCP takes the password (from the password file).
    with open(os.path.join(data, "pg_hba.conf"), "w") as f:
        f.write("local   all   postgres   trust\n"
                "local   app   relay   peer map=pg_relay\n"
                "host    app   relay   127.0.0.1/32   scram-sha-256\n"
                "host    all   postgres   127.0.0.1/32   trust\n")
    with open(os.path.join(data, "pg_ident.conf"), "w") as f:
        f.write("pg_relay   pg_relay   relay\n")
    port = int(run([testlib.PGCLUSTER, "start", cluster], env=env).stdout.strip())
    smtp = smtpd("--starttls", "--cert", "{certs}/server.pem", "--key", "{certs}/server.key",
                 "--auth-user", "relay", "--auth-password", SMTP_PASSWORD)
    ca_file = os.path.join(work, "ca.pem")  # where the service user can read it
    shutil.copy(str(certs / "ca.pem"), ca_file)
    os.chmod(ca_file, 0o644)

    with psycopg.connect("host=%s port=%d dbname=postgres user=postgres" % (cluster, port), autocommit=True) as c:
        c.execute("CREATE DATABASE app")
    db = psycopg.connect("host=%s port=%d dbname=app user=postgres" % (cluster, port), autocommit=True)
    try:
        db.execute("CREATE EXTENSION pg_relay")
        db.execute("CREATE EXTENSION pg_relay_notifier")
        assert db.execute("SELECT extversion FROM pg_extension WHERE extname = 'pg_relay'").fetchone()[0] == \
            re.search(r"default_version = '(.*)'", open(os.path.join(EXTDIR, "pg_relay.control")).read()).group(1)
        db.execute("CREATE ROLE relay LOGIN PASSWORD '%s' IN ROLE pgrelay_processor" % DB_PASSWORD)
        db.execute("CREATE TABLE done (p text)")
        db.execute("CREATE FUNCTION handler(p text) RETURNS void SECURITY DEFINER SET search_path = public "
                   "LANGUAGE sql AS 'INSERT INTO done VALUES (p)'")
        db.execute("SELECT pgrelay.register('order_placed', 'sql', handler => 'handler(text)')")
        db.execute("SELECT pgrelay_notifier.create_profile('mail', host => '127.0.0.1', port => %s, "
                   "security => 'starttls', ca_file => %s, username => 'relay', password => 'file:smtp_password', "
                   "from_address => 'noreply@example.com')", (smtp.port, ca_file))
        db.execute("SELECT pgrelay_notifier.create_channel('welcome_mail', 'mail')")

        # the SMTP password in the secrets directory, readable by the service's group, written as
        # docs/operations.md says
        shell("printf '%%s\\n' '%s' | install -D -g pg_relay -m 0640 /dev/stdin"
              " /etc/pg_relay/secrets/profile/mail/smtp_password" % SMTP_PASSWORD)

        # 1. the unix socket, peer authentication: no password anywhere
        db.execute("SELECT pgrelay.notify('order_placed', 'one')")
        nid = db.execute("SELECT pgrelay_notifier.send('welcome_mail', \"to\" => ARRAY['ann@example.org'], "
                         "subject => 'Welcome', body_text => 'Hello Ann')").fetchone()[0]
        set_dbname("host=%s port=%d dbname=app user=relay" % (cluster, port))
        notify = NotifySocket(work)
        try:
            rc, log = run_as_the_unit(notify, os.path.join(work, "run1.log"))
            assert rc == 0, log
            assert " started " in log and "startup_failed" not in log, log
            keys = [k for m in notify.received() for k in m if k in ("READY", "STOPPING")]
            assert keys == ["READY", "STOPPING"]
        finally:
            notify.close()
        assert db.execute("SELECT p FROM done").fetchall() == [("one",)]
        assert db.execute("SELECT status FROM pgrelay_notifier.get_status(%s)", (nid,)).fetchone()[0] == "sent"
        [(envelope, _)] = smtp.messages()
        assert envelope["login"] == "relay" and envelope["rcpt_tos"] == ["ann@example.org"]

        # 2. TCP with a password from the password file that the environment file names
        shell("install -o pg_relay -g pg_relay -m 0600 /dev/null /etc/pg_relay/pgpass")
        shell("echo '127.0.0.1:%d:app:relay:%s' | tee /etc/pg_relay/pgpass >/dev/null" % (port, DB_PASSWORD))
        shell("echo 'PGPASSFILE=/etc/pg_relay/pgpass' | tee -a /etc/pg_relay/environment >/dev/null")
        db.execute("SELECT pgrelay.notify('order_placed', 'two')")
        set_dbname("host=127.0.0.1 port=%d dbname=app user=relay" % port)
        notify = NotifySocket(work)
        try:
            rc, log = run_as_the_unit(notify, os.path.join(work, "run2.log"))
        finally:
            notify.close()
        assert rc == 0, log
        assert DB_PASSWORD not in log and SMTP_PASSWORD not in log
        assert db.execute("SELECT p FROM done ORDER BY p").fetchall() == [("one",), ("two",)]
        assert db.execute("SELECT count(*) FROM pgrelay.log WHERE outcome = 'ok'").fetchone()[0] == 3
    finally:
        db.close()
