"""`make install` and `make uninstall`: what goes where for a PREFIX, the unit made for it, the
permissions of /etc/pg_relay, a second install that keeps an edited config, an uninstall that
removes everything but the config and the secrets, SYSCONFDIR in every installed file; as root, the
system user, a Processor run by hand with the installed config, and a unit that `systemd-analyze
verify` accepts and rates at most 2.5."""
import grp
import os
import pwd
import re
import stat
import subprocess

import pytest

import testlib
from machine import machine_lock, remove_user, user_exists

DOCS = ["README.md"] + sorted(f for f in os.listdir(os.path.join(testlib.ROOT, "docs")) if f.endswith(".md"))


def make(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run(["make", "-s", "--no-print-directory"] + list(args), cwd=testlib.ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e)
    assert r.returncode == 0, "make %s failed:\n%s" % (" ".join(args), r.stdout)
    return r.stdout


def files_under(top):
    """Every file (not directory) below top, as paths relative to it."""
    out = set()
    for d, _, names in os.walk(top):
        for n in names:
            out.add(os.path.relpath(os.path.join(d, n), top))
    return out


def unit_settings(path):
    settings = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith(("#", "[")):
            k, _, v = line.partition("=")
            settings.setdefault(k, []).append(v)
    return settings


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def pg_config():
    """The prefix's pg_config of the session's major: make install runs it on this machine, so a
    major that runs in a chroot (test/lib/pgchroot) has none to offer."""
    if not testlib.runs_here():
        pytest.skip("PostgreSQL %s runs in a chroot: make install is tested with this machine's own"
                    % testlib.pg_major())
    major = testlib.pg_major()
    return os.path.join(testlib.pg_prefix(major), "lib", "postgresql", major, "bin", "pg_config")


def test_install_for_prefix_usr_then_uninstall(tmp_path):
    dest = str(tmp_path / "dest")
    args = ["DESTDIR=" + dest, "PREFIX=/usr", "PG_CONFIG=" + pg_config()]
    make("install", *args)
    extdir = subprocess.run([pg_config(), "--sharedir"], stdout=subprocess.PIPE, text=True,
                            check=True).stdout.strip().lstrip("/") + "/extension"
    want = {"usr/bin/pg_relay", "usr/share/man/man1/pg_relay.1",
            "usr/lib/systemd/system/pg_relay.service", "usr/lib/sysusers.d/pg_relay.conf",
            "etc/pg_relay/pg_relay.conf", "etc/pg_relay/environment"}
    want |= {"usr/share/doc/pg_relay/" + d for d in DOCS}
    want |= {"usr/share/doc/pg_relay/monitoring/" + f for f in ("queries.yaml", "alerts.yaml", "grafana-dashboard.json")}
    for ext in ("pg_relay", "pg_relay_notifier"):
        want |= {"%s/%s" % (extdir, f) for f in os.listdir(os.path.join(testlib.ROOT, "extension", ext))
                 if f.endswith(".sql") or f.endswith(".control")}
        want |= {"%s/%s" % (extdir, f) for f in os.listdir(os.path.join(testlib.ROOT, "extension", ext, "released"))}
    assert files_under(dest) == want

    # the unit runs the installed binary with the installed config; its documentation is installed
    unit = unit_settings(os.path.join(dest, "usr/lib/systemd/system/pg_relay.service"))
    assert unit["ExecStart"] == ["/usr/bin/pg_relay --config=/etc/pg_relay/pg_relay.conf"]
    assert unit["EnvironmentFile"] == ["-/etc/pg_relay/environment"]
    assert unit["User"] == ["pg_relay"] and unit["Type"] == ["notify"]
    docs = unit["Documentation"][0].split()
    assert docs[0] == "man:pg_relay(1)"
    assert docs[1] == "file:///usr/share/doc/pg_relay/operations.md"
    assert os.path.isfile(dest + docs[1][len("file://"):])
    sysusers = open(os.path.join(dest, "usr/lib/sysusers.d/pg_relay.conf")).read()
    assert re.search(r"^u pg_relay - ", sysusers, re.M)

    etc = os.path.join(dest, "etc/pg_relay")
    assert mode(etc) == 0o750 and mode(etc + "/secrets") == 0o750
    assert mode(etc + "/pg_relay.conf") == 0o640 and mode(etc + "/environment") == 0o640
    assert mode(dest + "/usr/bin/pg_relay") == 0o755
    conf = open(etc + "/pg_relay.conf").read()
    assert "user=relay'" in conf and "secrets-dir = '/etc/pg_relay/secrets'" in conf
    r = subprocess.run([dest + "/usr/bin/pg_relay", "--version"], stdout=subprocess.PIPE, text=True)
    assert r.returncode == 0 and r.stdout.startswith("pg_relay ")

    # a second install keeps the edited config; uninstall keeps config and secrets, nothing else
    with open(etc + "/pg_relay.conf", "a") as f:
        f.write("workers = 2\n")
    edited = open(etc + "/pg_relay.conf").read()
    with open(etc + "/secrets/smtp_password", "w") as f:
        f.write("s3cret\n")
    make("install", *args)
    assert open(etc + "/pg_relay.conf").read() == edited
    make("uninstall", *args)
    assert files_under(dest) == {"etc/pg_relay/pg_relay.conf", "etc/pg_relay/environment",
                                 "etc/pg_relay/secrets/smtp_password"}


def test_sysconfdir_places_every_path_of_the_installed_files(tmp_path):
    """SYSCONFDIR moves the configuration, and every file installed names it: the config file's
    secrets-dir, the environment file's password file, the unit's EnvironmentFile= and --config.
    No installed file of the Processor names /etc/pg_relay then."""
    dest, etc = str(tmp_path / "dest"), "/opt/relay/etc"
    make("install", "DESTDIR=" + dest, "PREFIX=/usr", "SYSCONFDIR=" + etc, "EXTENSIONS=")
    conf = dest + etc + "/pg_relay/pg_relay.conf"
    env = dest + etc + "/pg_relay/environment"
    unit = dest + "/usr/lib/systemd/system/pg_relay.service"
    assert re.search(r"^secrets-dir = '/opt/relay/etc/pg_relay/secrets'$", open(conf).read(), re.M)
    assert "#PGPASSFILE=/opt/relay/etc/pg_relay/pgpass" in open(env).read()
    settings = unit_settings(unit)
    assert settings["ExecStart"] == ["/usr/bin/pg_relay --config=/opt/relay/etc/pg_relay/pg_relay.conf"]
    assert settings["EnvironmentFile"] == ["-/opt/relay/etc/pg_relay/environment"]
    named = [(f, line) for f in (conf, env, unit) for line in open(f) if re.search(r"(?<![\w/])/etc/pg_relay", line)]
    assert not named, named


def test_unit_of_the_default_prefix_runs_usr_local_bin(tmp_path):
    make("build/pg_relay.service")
    unit = unit_settings(os.path.join(testlib.ROOT, "build", "pg_relay.service"))
    assert unit["ExecStart"] == ["/usr/local/bin/pg_relay --config=/etc/pg_relay/pg_relay.conf"]
    assert unit["Documentation"] == ["man:pg_relay(1) file:///usr/local/share/doc/pg_relay/operations.md"]


def security_exposure(unit, *extra):
    """systemd-analyze security --offline=yes: the overall exposure (0 best, 10 worst)."""
    r = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--threshold=25"] + list(extra)
                       + [unit], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    m = re.search(r"Overall exposure level for pg_relay.service: ([0-9.]+)", r.stdout)
    assert m, r.stdout
    assert r.returncode == 0, r.stdout
    return float(m.group(1))


@pytest.mark.skipif(os.geteuid() != 0, reason="make install without DESTDIR creates a system user: root only")
def test_install_as_root_makes_the_user_and_a_unit_systemd_accepts(tmp_path, db):
    with machine_lock():
        had_user = user_exists("pg_relay")
        try:
            install_as_root(tmp_path, db)
        finally:
            if not had_user and user_exists("pg_relay"):
                remove_user("pg_relay")


def install_as_root(tmp_path, db):
    tmp_path.chmod(0o755)
    prefix, etc = str(tmp_path / "usr"), str(tmp_path / "etc")
    # EXTENSIONS= : the extensions' install is covered above, and this must not touch the test prefix
    args = ["PREFIX=" + prefix, "SYSCONFDIR=" + etc, "EXTENSIONS="]
    make("install", *args)
    user = pwd.getpwnam("pg_relay")
    assert user.pw_dir == "/nonexistent" and user.pw_shell == "/usr/sbin/nologin"
    assert user.pw_uid < 1000 and grp.getgrgid(user.pw_gid).gr_name == "pg_relay"
    for f in ("pg_relay", "pg_relay/secrets", "pg_relay/pg_relay.conf", "pg_relay/environment"):
        st = os.stat(os.path.join(etc, f))
        assert (st.st_uid, st.st_gid) == (0, user.pw_gid), f

    # run by hand with the installed config: its secrets directory is the one installed beside it
    conf = os.path.join(etc, "pg_relay", "pg_relay.conf")
    assert "secrets-dir = '%s/pg_relay/secrets'" % etc in open(conf).read()
    r = subprocess.run([os.path.join(prefix, "bin", "pg_relay"), "--config=" + conf, "-d", db.dsn, "--once"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert r.returncode == 0 and " started " in r.stdout, r.stdout

    unit = os.path.join(prefix, "lib/systemd/system/pg_relay.service")
    r = subprocess.run(["systemd-analyze", "verify", unit], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=dict(os.environ, MANPATH=os.path.join(prefix, "share/man")))
    assert r.returncode == 0 and r.stdout == "", r.stdout
    assert security_exposure(unit) <= 2.5
    make("uninstall", *args)
    assert files_under(str(tmp_path)) == {"etc/pg_relay/pg_relay.conf", "etc/pg_relay/environment"}
