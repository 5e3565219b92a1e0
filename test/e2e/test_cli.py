"""The Processor's command line and startup checks: --help, --version, bad flags and values,
config files, missing extension, missing privileges, unreachable server."""
import os
import re
import subprocess

import pytest

import testlib


def run(*args, env=None, timeout=60):
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run([testlib.PROCESSOR] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout, env=e)


def test_version_names_the_libraries():
    r = run("--version")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert re.fullmatch(r"pg_relay \d+\.\d+\.\d+", lines[0])
    assert any(l.startswith("libpq ") for l in lines)
    assert any(l.startswith("libcurl ") for l in lines)


def test_help_lists_every_flag():
    r = run("--help")
    assert r.returncode == 0
    for flag in ("--dbname", "--mode", "--workers", "--poll-interval", "--once", "--log-format",
                 "--log-level", "--config", "--help", "--version", "--secrets-dir"):
        assert flag in r.stdout, flag


def test_sample_config_is_a_valid_config(tmp_path):
    r = run("--sample-config")
    assert r.returncode == 0 and "poll-interval" in r.stdout
    f = tmp_path / "sample.conf"
    f.write_text(r.stdout)
    assert run("--config", str(f), "--help").returncode == 0


@pytest.mark.parametrize("args, message", [
    (["--bogus"], 'unknown option "--bogus"'),
    (["--workers=0"], 'invalid value "0" for --workers: expected an integer from 1 to 64'),
    (["--workers=abc"], 'invalid value "abc" for --workers'),
    (["--poll-interval=fast"], 'invalid value "fast" for --poll-interval: expected a duration'),
    (["--poll-interval=1ms"], 'invalid value "1ms" for --poll-interval'),
    (["--mode=cluster"], 'invalid value "cluster" for --mode: expected one of single, multi-node, leader'),
    (["--log-format=xml"], 'invalid value "xml" for --log-format'),
    (["--log-level=loud"], 'invalid value "loud" for --log-level'),
    (["--dbname=host=/tmp port"], "invalid --dbname"),
    (["extra-argument"], 'unexpected argument "extra-argument"'),
    (["--mode=leader", "--once"], "--once cannot be used with --mode=leader: its heartbeats need a running Processor"),
    (["--mode=multi-node", "--once"], "--once cannot be used with --mode=multi-node"),
])
def test_bad_flags_exit_2_with_one_clear_line(args, message):
    r = run(*args)
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert lines[0].startswith("pg_relay: ") and message in lines[0], r.stderr
    assert lines[1] == 'Try "pg_relay --help" for more information.'
    assert len(lines) == 2


def test_config_file_errors_name_file_and_line(tmp_path):
    f = tmp_path / "bad.conf"
    f.write_text("# comment\nworkers = 2\nnot_a_key = 1\n")
    r = run("--config", str(f))
    assert r.returncode == 2
    assert "bad.conf line 3: unknown setting \"not_a_key\"" in r.stderr
    f.write_text("poll_interval = soon\n")
    r = run("--config", str(f))
    assert r.returncode == 2 and "bad.conf line 1: invalid value \"soon\" for poll-interval" in r.stderr
    r = run("--config", str(tmp_path / "missing.conf"))
    assert r.returncode == 2 and "could not open config file" in r.stderr


def test_flags_win_over_the_config_file(tmp_path, db):
    f = tmp_path / "relay.conf"
    f.write_text("workers = 3\npoll-interval = 250ms\nlog_level = 'warn'\n")
    p = testlib.Processor(["--config", str(f), "--log-level=info", "-w", "2", "-d", db.dsn, "--once"])
    assert p.wait_exit() == 0
    started = p.lines("started")[0]
    assert "workers=2" in started and "poll-interval=250ms" in started and "log-level=info" in started


def test_missing_extension_is_one_clear_line(cluster):
    d = testlib.Database(cluster, extensions=())
    try:
        p = testlib.Processor(["-d", d.dsn])
        assert p.wait_exit() == 1
        err = p.lines("startup_failed")
        assert len(err) == 1
        assert "pg_relay is not installed in this database" in err[0] and "CREATE EXTENSION pg_relay" in err[0]
        assert "pg_relay install -d CONNINFO" in err[0]
    finally:
        d.close()


def test_missing_privileges_is_one_clear_line(db):
    db.sql("CREATE ROLE regress_stranger LOGIN")
    try:
        p = testlib.Processor(["-d", db.dsn.replace("user=postgres", "user=regress_stranger")])
        assert p.wait_exit() == 1
        err = p.lines("startup_failed")
        assert len(err) == 1 and "permission denied" in err[0] and "GRANT pgrelay_processor" in err[0]
        # with the role granted it starts
        db.sql("GRANT pgrelay_processor TO regress_stranger")
        p = testlib.Processor(["-d", db.dsn.replace("user=postgres", "user=regress_stranger"), "--once"])
        assert p.wait_exit() == 0
    finally:
        db.sql("DROP OWNED BY regress_stranger")
        db.sql("DROP ROLE regress_stranger")


def test_the_startup_check_covers_the_ha_tick(db):
    """A role that may run everything but the multi-master tick is refused at startup, in every
    mode, rather than failing each tick once a mode needs it."""
    tick = "pgrelay._ha_tick(bigint, boolean, boolean, boolean, jsonb)"
    db.sql("REVOKE EXECUTE ON FUNCTION %s FROM pgrelay_processor" % tick)
    db.sql("CREATE ROLE regress_relay LOGIN IN ROLE pgrelay_processor")
    try:
        p = testlib.Processor(["-d", db.dsn.replace("user=postgres", "user=regress_relay"), "--once"])
        assert p.wait_exit() == 1
        err = p.lines("startup_failed")
        assert len(err) == 1 and "permission denied" in err[0] and "GRANT pgrelay_processor" in err[0]
        db.sql("GRANT EXECUTE ON FUNCTION %s TO pgrelay_processor" % tick)
        p = testlib.Processor(["-d", db.dsn.replace("user=postgres", "user=regress_relay"), "--once"])
        assert p.wait_exit() == 0
    finally:
        db.sql("GRANT EXECUTE ON FUNCTION %s TO pgrelay_processor" % tick)
        db.sql("DROP OWNED BY regress_relay")
        db.sql("DROP ROLE regress_relay")


def test_wrong_interface_version_is_refused(db):
    """A version mismatch is refused at startup, with a hint that says which side to upgrade."""
    db.sql("CREATE OR REPLACE FUNCTION pgrelay.interface_version() RETURNS integer LANGUAGE sql AS 'SELECT 5'")
    p = testlib.Processor(["-d", db.dsn])
    assert p.wait_exit() == 1
    line = p.lines("startup_failed")[0]
    assert "interface version 5 is not supported" in line
    assert "install the matching Processor" in line
    db.sql("CREATE OR REPLACE FUNCTION pgrelay.interface_version() RETURNS integer LANGUAGE sql AS 'SELECT 1'")
    p = testlib.Processor(["-d", db.dsn])
    assert p.wait_exit() == 1
    line = p.lines("startup_failed")[0]
    assert "interface version 1 is not supported" in line
    assert "ALTER EXTENSION pg_relay UPDATE" in line


def test_unreachable_server_with_once_fails_at_once():
    port = subprocess.run([testlib.PYTHON, "-c",
                           "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"],
                          stdout=subprocess.PIPE, text=True).stdout.strip()
    p = testlib.Processor(["-d", "host=127.0.0.1 port=%s dbname=x connect_timeout=2" % port, "--once"])
    assert p.wait_exit() == 1
    err = p.lines("startup_failed")
    assert len(err) == 1 and "Connection refused" in err[0]
    assert 'hint="is the server running, and listening on that host and port?"' in err[0]
    assert p.lines("reconnecting") == []


def test_a_processor_that_never_connected_stops_at_a_missing_database(db):
    """A first connection that fails until someone changes the set-up (here: no such database)
    is not retried for ever in a terminal: one startup_failed line with what to check, exit 1
    (under systemd the unit starts it again)."""
    p = testlib.Processor(["-d", db.dsn.replace("dbname=" + db.name, "dbname=nonesuch_db"),
                           "--reconnect-max=200ms"])
    assert p.wait_exit() == 1
    [line] = p.lines("startup_failed")
    assert " error startup_failed " in line and 'database \\"nonesuch_db\\" does not exist' in line
    assert 'hint="create the database, or fix dbname= in --dbname"' in line
    assert p.lines("reconnecting") == [] and p.lines("started") == []


def test_a_processor_that_never_connected_stops_at_a_wrong_password(tmp_path):
    """A wrong password at the first connection (pg_hba.conf asks for one) stops the Processor
    with the hint, where it used to print the same error every few seconds."""
    c = testlib.Cluster(os.path.join(testlib.work_dir("auth-"), "c"))
    c.start()
    try:
        with c.connect() as conn:
            conn.execute("CREATE ROLE proof_pw LOGIN PASSWORD 'the-right-one'")
        with open(os.path.join(c.path, "data", "pg_hba.conf")) as f:
            hba = f.read()
        with open(os.path.join(c.path, "data", "pg_hba.conf"), "w") as f:
            f.write("host all proof_pw 127.0.0.1/32 scram-sha-256\n" + hba)
        with c.connect() as conn:
            conn.execute("SELECT pg_reload_conf()")
        dsn = "host=127.0.0.1 port=%d dbname=postgres user=proof_pw" % c.port
        p = testlib.Processor(["-d", dsn, "--reconnect-max=200ms"], env={"PGPASSWORD": "a-wrong-one"})
        assert p.wait_exit() == 1
        [line] = p.lines("startup_failed")
        assert 'password authentication failed for user \\"proof_pw\\"' in line
        assert 'hint="check the role\'s password' in line
        assert p.lines("reconnecting") == []
        assert "a-wrong-one" not in p.log()
    finally:
        c.stop("immediate")


def test_a_running_processor_keeps_retrying_what_only_a_change_of_set_up_ends(db, processors):
    """Once connected, a Processor never gives up: its role made NOLOGIN and its sessions ended,
    it says at error level what to fix, keeps retrying, and carries on once it may log in again."""
    relay = "proof_nologin_%d" % os.getpid()
    db.sql('CREATE ROLE "%s" LOGIN IN ROLE pgrelay_processor' % relay)
    try:
        p = processors("-d", db.dsn.replace("user=postgres", "user=" + relay), "--reconnect-max=200ms",
                       "--poll-interval=50ms")
        p.wait_log(r" started ")
        db.sql('ALTER ROLE "%s" NOLOGIN' % relay)
        db.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (relay,))
        line = p.wait_log(r" error reconnecting conn=control .*hint=", count=2).string
        assert "is not permitted to log in" in line and 'hint="ALTER ROLE ... LOGIN' in line
        db.sql('ALTER ROLE "%s" LOGIN' % relay)
        p.wait_log(r" reconnected conn=control ")
        assert p.lines("startup_failed") == []
        assert p.stop() == 0
    finally:
        db.sql('DROP ROLE IF EXISTS "%s"' % relay)


def test_peer_authentication_failure_says_to_connect_over_tcp(tmp_path):
    """Debian's pg_hba.conf: peer on the unix socket, a password over TCP. A password given for
    the socket is ignored there, so the failure says to connect over TCP (host=127.0.0.1) or map
    the OS user; and over TCP the same password works, as the README says."""
    c = testlib.Cluster(os.path.join(testlib.work_dir("peer-"), "c"))
    with open(os.path.join(c.path, "data", "pg_hba.conf"), "w") as f:
        f.write("local   all   postgres   trust\n"
                "local   all   all        peer\n"
                "host    all   postgres   127.0.0.1/32   trust\n"
                "host    all   all        127.0.0.1/32   scram-sha-256\n")
    c.start()
    try:
        with c.connect() as conn:
            conn.execute("CREATE EXTENSION pg_relay")
            conn.execute("CREATE ROLE relay LOGIN PASSWORD 'change-me' IN ROLE pgrelay_processor")
        env = {"PGPASSWORD": "change-me"}
        p = testlib.Processor(["-d", "host=%s port=%d dbname=postgres user=relay" % (c.path, c.port), "--once"],
                              env=env)
        assert p.wait_exit() == 1
        [line] = p.lines("startup_failed")
        assert 'Peer authentication failed for user \\"relay\\"' in line, line
        assert "connect over TCP (host=127.0.0.1) to log in with the role's password" in line, line
        assert "pg_ident.conf" in line
        p = testlib.Processor(["-d", "host=127.0.0.1 port=%d dbname=postgres user=relay" % c.port, "--once"],
                              env=env)
        assert p.wait_exit() == 0, p.log()
        assert p.lines("started")
    finally:
        c.stop("immediate")


def test_unreachable_server_is_retried_until_it_comes_up():
    c = testlib.Cluster(os.path.join(testlib.work_dir("late-"), "c"))
    c.start()
    with c.connect() as conn:
        conn.execute("CREATE EXTENSION pg_relay")
        conn.execute("CREATE TABLE done (p text)")
        conn.execute("CREATE FUNCTION h(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS 'INSERT INTO done VALUES (p)'")
        conn.execute("SELECT pgrelay.register('late', 'sql', handler => 'h(text)')")
        conn.execute("SELECT pgrelay.notify('late', 'hello')")
    port = c.port
    c.stop()
    p = testlib.Processor(["-d", "host=127.0.0.1 port=%d dbname=postgres user=postgres" % port,
                           "--reconnect-max=200ms", "--poll-interval=50ms"])
    try:
        p.wait_log(r"reconnecting conn=control attempt=2 ")
        c.start()
        assert c.port == port
        p.wait_log(r" started ")
        with c.connect() as conn:
            testlib.wait_for(lambda: conn.execute("SELECT count(*) FROM done").fetchone()[0] == 1,
                             "the event to be processed")
        assert p.stop() == 0
        assert "error=\"connection to server" in p.lines("reconnecting")[0]
    finally:
        p.kill()
        c.stop("immediate")


def test_password_never_reaches_the_log(db):
    p = testlib.Processor(["-d", db.dsn + " password=hunter2secret", "--once"])
    assert p.wait_exit() == 0
    assert "hunter2secret" not in p.log()
    assert "dbname=%s" % db.name in p.lines("started")[0]
