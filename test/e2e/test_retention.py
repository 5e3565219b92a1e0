"""The retention recipes of docs/operations.md, as written there: the pg_cron statements run on a
cluster that preloads pg_cron (Debian's postgresql-MAJOR-cron), make the jobs they say, and each
job's command does its work as the role that scheduled it; the systemd units are ones
systemd-analyze accepts, and their psql command purges a real database."""
import os
import re
import shutil
import subprocess

import pytest

import testlib

OPERATIONS = open(os.path.join(testlib.ROOT, "docs", "operations.md")).read()


def retention_section():
    return OPERATIONS[OPERATIONS.index("## Retention"):OPERATIONS.index("## Upgrade")]


def blocks(lang):
    """The code blocks of the section fenced as ```lang (lang "" for a bare fence), in order."""
    out, current = [], None
    for line in retention_section().splitlines():
        if current is None and line.startswith("```"):
            current = [] if line[3:] == lang else False
        elif current is not None and line == "```":
            if current is not False:
                out.append("\n".join(current) + "\n")
            current = None
        elif current:
            current.append(line)
        elif current == []:
            current.append(line)
    return out


def has_pg_cron():
    return os.path.exists(os.path.join(testlib.pg_libdir(), "pg_cron.so"))


OLD = """
CREATE FUNCTION ok(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS '';
SELECT pgrelay.register('orders', 'sql', handler => 'ok(text)');
-- a log row of 40 days ago and one of now; a failed event of 100 days ago
INSERT INTO pgrelay.log (id, queue_id, event_id, channel, action_type, attempt, outcome, node_id, started_at,
                         finished_at)
VALUES (((floor(extract(epoch FROM now() - interval '40 days') * 1000)::bigint - 1767225600000) << 22), 1, 1,
        'orders', 'sql', 1, 'ok', 0, now() - interval '40 days', now() - interval '40 days'),
       (pgrelay._next_id(), 2, 2, 'orders', 'sql', 1, 'ok', 0, now(), now());
INSERT INTO pgrelay.failed_events (event_id, channel, action_type, payload, attempts, log_id, node_id, queued_at,
                                   failed_at)
VALUES (3, 'orders', 'sql', 'x', 1, 2, 0, now() - interval '100 days', now() - interval '100 days');
"""


@pytest.mark.skipif(not has_pg_cron(), reason="pg_cron (postgresql-%s-cron) is not installed" % testlib.pg_major())
def test_pg_cron_recipe_as_written():
    conf = [l for l in blocks("")[0].splitlines() if l and not l.startswith("#")]
    assert conf == ["shared_preload_libraries = 'pg_cron'", "cron.database_name = 'app'"]
    c = testlib.Cluster(os.path.join(testlib.work_dir("cron-"), "c"), conf=conf).start()
    try:
        with c.connect() as conn:
            conn.execute("CREATE DATABASE app")
        with c.connect("app") as conn:
            conn.execute("CREATE EXTENSION pg_relay")
            conn.execute("CREATE EXTENSION pg_relay_notifier")
            conn.execute(OLD)
            sql = blocks("sql")
            statements = [l for l in sql[0].splitlines() if l and not l.startswith("--")]
            assert statements[0].startswith("CREATE EXTENSION pg_cron;")
            for stmt in statements:
                conn.execute(stmt)
            # the other database's way: from pg_cron's database into app (here they are the same)
            (other,) = [l for l in sql[1].splitlines() if l]
            conn.execute(other.replace("'pg_relay retention'", "'pg_relay retention elsewhere'"))
            jobs = conn.execute("SELECT jobname, schedule, database, username, command FROM cron.job "
                                "ORDER BY jobname").fetchall()
            assert [(j[0], j[1], j[2], j[3]) for j in jobs] == [
                ("pg_relay failed retention", "37 3 * * *", "app", "postgres"),
                ("pg_relay retention", "17 3 * * *", "app", "postgres"),
                ("pg_relay retention elsewhere", "17 3 * * *", "app", "postgres"),
                ("pg_relay_notifier retention", "27 3 * * *", "app", "postgres")]
            # each job's command, as pg_cron will run it: in its database, as its role
            for name, _, _, user, command in jobs:
                conn.execute("SET ROLE %s" % user)
                conn.execute(command)
                conn.execute("RESET ROLE")
            assert conn.execute("SELECT count(*) FROM pgrelay.log").fetchone()[0] == 1
            assert conn.execute("SELECT count(*) FROM pgrelay.failed_events").fetchone()[0] == 0
            # and pg_cron's scheduler is running for this database
            testlib.wait_for(lambda: conn.execute("SELECT count(*) FROM pg_stat_activity "
                                                  "WHERE backend_type = 'pg_cron launcher'").fetchone()[0] == 1,
                             "the pg_cron launcher")
    finally:
        c.stop("immediate")


def test_systemd_timer_and_cron_line_as_written(db, tmp_path):
    units = blocks("ini")
    assert len(units) == 2
    for text in units:
        name = re.match(r"# /etc/systemd/system/(\S+)\n", text).group(1)
        (tmp_path / name).write_text(text)
    service = (tmp_path / "pg_relay-retention.service").read_text()
    if shutil.which("systemd-analyze"):
        r = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "pg_relay-retention.timer")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        problems = [l for l in r.stdout.splitlines() if "pg_relay-retention" in l]
        assert r.returncode == 0 and not problems, r.stdout
    db.conn.execute(OLD)
    db.sql("CREATE EXTENSION pg_relay_notifier")
    # the service's command, pointed at this test's database (peer authentication as postgres there)
    command = re.search(r"^ExecStart=(.*)$", service, re.M).group(1)
    cron = [l for l in blocks("")[-1].splitlines() if l][0]
    assert cron.split(" postgres ", 1)[1] == command
    args = re.findall(r'"[^"]*"|\S+', command)
    args = [a.strip('"') for a in args]
    assert args[0] == "/usr/bin/psql" and args[args.index("-d") + 1] == "app"
    args[:1] = testlib.program("psql")
    args[args.index("-d") + 1] = db.dsn
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    assert db.scalar("SELECT count(*) FROM pgrelay.log") == 1
