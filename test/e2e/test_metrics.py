"""The Prometheus endpoint (--metrics) and pgrelay.processors, end to end: a running Processor is
scraped over HTTP and what it serves is parsed by a strict parser of the text format 0.0.4
(test/lib/promtext.py) and by prometheus_client's own, then held against what happened in the
database. Also: only GET /metrics is served, bad addresses and ports in use are refused, the
metrics are there while the database is not, and each Processor keeps its row of
pgrelay.processors until it stops cleanly."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import urllib.error
import urllib.request

import pytest

import promtext
import testlib

HANDLERS = """
CREATE TABLE done (p text);
CREATE FUNCTION ok(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS
    'INSERT INTO done VALUES (p)';
CREATE FUNCTION stop(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS
    $$ BEGIN RAISE EXCEPTION 'no' USING ERRCODE = 'PGSTP'; END $$;
SELECT pgrelay.register('good', 'sql', handler => 'ok(text)');
SELECT pgrelay.register('bad:one', 'sql', handler => 'stop(text)');
SELECT pgrelay.register('held', 'sql', handler => 'ok(text)');
"""


def metrics_address(p):
    return p.wait_log(r" metrics_listening address=(\S+)").group(1)


def get(url, method="GET"):
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def scrape(addr):
    status, ctype, body = get("http://%s/metrics" % addr)
    assert status == 200, body
    assert ctype == "text/plain; version=0.0.4; charset=utf-8"
    families = promtext.parse(body)
    # and prometheus_client's parser reads the same families (counters without _total there)
    from prometheus_client.parser import text_string_to_metric_families
    theirs = {f.name for f in text_string_to_metric_families(body)}
    ours = {re.sub(r"_total$", "", n) if f.type == "counter" else n for n, f in families.items()}
    assert theirs == ours, theirs ^ ours
    return families



def test_events_finished_in_batches_are_counted_one_by_one(db, processors):
    """A batch finishes several events in one transaction: each is counted under its own outcome,
    and each is one observation of the duration histogram (its share of the batch)."""
    db.conn.execute(HANDLERS)
    db.sql("SELECT pgrelay.notify('good', 'g' || n) FROM generate_series(1, 40) n")
    db.sql("SELECT pgrelay.notify('bad:one', 'b' || n) FROM generate_series(1, 5) n")
    p = processors("-d", db.dsn, "--workers=1", "--events-per-commit=20", "--metrics=127.0.0.1:0")
    addr = metrics_address(p)
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.log") == 45, "45 attempts")
    # fewer transactions than events: they were batched
    assert db.scalar("SELECT count(DISTINCT xmin::text) FROM pgrelay.log") < 45

    def settled():
        f = scrape(addr)
        ev = f["pgrelay_events_total"]
        done = (ev.value(channel="good", outcome="ok") or 0) + (ev.value(channel="bad:one", outcome="failed") or 0)
        return f if done == 45 else None
    f = testlib.wait_for(settled, "45 events counted")
    ev, h = f["pgrelay_events_total"], f["pgrelay_attempt_duration_seconds"]
    assert (ev.value(channel="good", outcome="ok"), ev.value(channel="bad:one", outcome="failed")) == (40, 5)
    assert (h.value("_count", channel="good"), h.value("_count", channel="bad:one")) == (40, 5)

def test_scrape_reports_events_queue_and_state(db, processors):
    db.conn.execute(HANDLERS)
    db.sql("SELECT pgrelay.pause('held')")
    p = processors("-d", db.dsn, "--workers=2", "--poll-interval=50ms", "--metrics=127.0.0.1:0")
    addr = metrics_address(p)
    assert addr.startswith("127.0.0.1:")
    db.sql("SELECT pgrelay.notify('good', 'g' || n) FROM generate_series(1, 3) n")
    db.sql("SELECT pgrelay.notify('bad:one', 'b')")
    db.sql("SELECT pgrelay.notify('held', 'h' || n) FROM generate_series(1, 2) n")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.log") == 4, "4 attempts")

    def settled():
        f = scrape(addr)
        ev = f["pgrelay_events_total"]
        if ev.value(channel="good", outcome="ok") == 3 and f["pgrelay_queue_due_events"].value(channel="held") == 2:
            return f
        return None
    f = testlib.wait_for(settled, "the counters and the queue figures")
    ev = f["pgrelay_events_total"]
    assert ev.type == "counter" and ev.help
    assert ev.value(channel='bad:one', outcome="failed") == 1
    assert ev.value(channel="good", outcome="retry") == 0
    h = f["pgrelay_attempt_duration_seconds"]
    assert h.type == "histogram"
    assert h.value("_count", channel="good") == 3
    assert h.value("_bucket", channel="good", le="+Inf") == 3
    assert h.value("_sum", channel="good") > 0
    assert f["pgrelay_processor_info"].value(version=open(os.path.join(testlib.ROOT, "VERSION")).read().strip(),
                                             mode="single") == 1
    assert f["pgrelay_workers"].value() == 2
    assert f["pgrelay_database_connected"].value() == 1
    assert f["pgrelay_dispatch_allowed"].value() == 1
    assert f["pgrelay_paused"].value() == 0
    assert f["pgrelay_leader"].series() == []                       # not leader mode
    assert f["pgrelay_connections_open"].value(conn="control") == 1
    assert f["pgrelay_connections_open"].value(conn="worker") == 2
    assert f["pgrelay_probe_duration_seconds"].value("_count") >= 1
    # the queue figures: the paused channel's two events wait
    assert f["pgrelay_queue_events"].value(channel="held", action_type="sql") == 2
    assert f["pgrelay_channel_paused"].value(channel="held") == 1
    assert f["pgrelay_queue_oldest_due_age_seconds"].value(channel="held") > 0
    assert f["pgrelay_queue_oldest_due_age_seconds"].value(channel="good") == 0
    assert f["pgrelay_queue_stats_age_seconds"].value() < 60
    # the global pause shows at the next probe
    db.sql("SELECT pgrelay.pause()")
    testlib.wait_for(lambda: scrape(addr)["pgrelay_paused"].value() == 1, "pgrelay_paused 1")
    assert p.stop() == 0


def test_scrape_reports_each_topic_subscriber(db, processors):
    """Per subscription of a topic (topic, channel): the deliveries of publications waiting, due,
    retrying, failed for good and failed in the last hour; a channel's own figures stay its own."""
    db.conn.execute(HANDLERS)
    db.sql("SELECT pgrelay.pause('held')")
    db.sql("SELECT pgrelay.create_topic('shop')")
    db.sql("SELECT pgrelay.subscribe('shop', 'held')")
    db.sql("SELECT pgrelay.subscribe('shop', 'bad:one')")
    db.sql("SELECT pgrelay.publish_many('shop', ARRAY['a', 'b'])")
    db.sql("SELECT pgrelay.notify('held', 'not a publication')")
    p = processors("-d", db.dsn, "--workers=1", "--poll-interval=50ms", "--metrics=127.0.0.1:0")
    addr = metrics_address(p)

    def settled():
        f = scrape(addr)
        failed = f.get("pgrelay_topic_subscriber_failed_events")
        return f if failed and failed.value(topic="shop", channel="bad:one") == 2 else None
    f = testlib.wait_for(settled, "both deliveries to bad:one failed for good")
    assert f["pgrelay_topic_subscriber_failed_1h_events"].value(topic="shop", channel="bad:one") == 2
    assert f["pgrelay_topic_subscriber_events"].value(topic="shop", channel="bad:one") == 0
    assert f["pgrelay_topic_subscriber_events"].value(topic="shop", channel="held") == 2
    assert f["pgrelay_topic_subscriber_due_events"].value(topic="shop", channel="held") == 2
    assert f["pgrelay_topic_subscriber_retrying_events"].value(topic="shop", channel="held") == 0
    assert f["pgrelay_topic_subscriber_failed_events"].value(topic="shop", channel="held") == 0
    assert f["pgrelay_queue_events"].value(channel="held", action_type="sql") == 3
    assert p.stop() == 0


def test_rate_limit_waits_are_counted(db, smtpd, processors):
    db.sql("CREATE EXTENSION pg_relay_notifier")
    s = smtpd()
    db.sql("SELECT pgrelay_notifier.create_profile('m365.main', host => '127.0.0.1', port => %s, security => 'none', "
           "from_address => 'noreply@example.com', rate_limit_per_minute => 1)", (s.port,))
    db.sql("SELECT pgrelay_notifier.create_channel('mail', 'm365.main')")
    for i in range(2):
        db.sql("SELECT pgrelay_notifier.send('mail', \"to\" => ARRAY['ann@example.org'], subject => %s, "
               "body_text => 'b')", ("n%d" % i,))
    p = processors("-d", db.dsn, "--workers=2", "--poll-interval=50ms", "--metrics=127.0.0.1:0")
    addr = metrics_address(p)
    f = testlib.wait_for(lambda: (lambda f: f if f["pgrelay_ratelimit_deferrals_total"].value(profile="m365.main")
                                  else None)(scrape(addr)), "a deferral counted")
    assert f["pgrelay_ratelimit_deferrals_total"].value(profile="m365.main") == 1
    assert f["pgrelay_ratelimit_wait_seconds_total"].value(profile="m365.main") > 30    # until the window moves
    # the worker counts a deferral when it waits; the event's outcome is counted once the main
    # thread has collected it (after the deferral's commit), so both are waited for
    events = lambda f: (f["pgrelay_events_total"].value(channel="mail", outcome="ok"),
                        f["pgrelay_events_total"].value(channel="mail", outcome="deferred"))
    f = testlib.wait_for(lambda: (lambda f: f if all(events(f)) else None)(scrape(addr)),
                         "the first email and the deferred one counted")
    assert events(f) == (1, 1)
    assert len(s.messages()) == 1
    assert p.stop() == 0


def test_only_get_metrics_is_served(db, processors):
    p = processors("-d", db.dsn, "--metrics=127.0.0.1:0")
    base = "http://" + metrics_address(p)
    for path, method in (("/", "GET"), ("/metrics/", "GET"), ("/metrics?x", "POST"), ("/metrics", "POST"),
                         ("/metrics", "PUT"), ("/other", "GET"), ("/metrics", "DELETE")):
        status, _, body = get(base + path, method)
        assert status == 404, (path, method, status)
        assert "GET /metrics" in body
    status, ctype, body = get(base + "/metrics", "HEAD")
    assert status == 200 and body == "" and ctype.startswith("text/plain; version=0.0.4")
    # a query string is not part of the path
    status, _, body = get(base + "/metrics?name[]=x", "GET")
    assert status == 200 and "pgrelay_processor_info" in body
    assert p.stop() == 0


def test_reconnects_are_counted(db, processors):
    p = processors("-d", db.dsn, "--workers=1", "--poll-interval=50ms", "--metrics=127.0.0.1:0")
    addr = metrics_address(p)
    p.wait_log(r" started ")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                       "AND application_name = 'pg_relay'") == 2, "both sessions")
    db.sql("CREATE FUNCTION ok(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS ''")
    db.sql("SELECT pgrelay.register('r', 'sql', handler => 'ok(text)')")
    pids = [r[0] for r in db.sql("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                                 "AND application_name = 'pg_relay'")]
    db.sql("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) pid", (pids,))
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,)) == 0,
                     "the sessions to end")
    # an idle worker finds its session gone when it next has an event to run
    db.sql("SELECT pgrelay.notify('r', 'x')")
    f = testlib.wait_for(lambda: (lambda f: f if f["pgrelay_reconnects_total"].value(conn="control") >= 1
                                  and f["pgrelay_reconnects_total"].value(conn="worker") >= 1 else None)(scrape(addr)),
                         "reconnects counted")
    assert f["pgrelay_connections_open"].value(conn="control") == 1
    assert p.stop() == 0


def test_metrics_are_served_while_the_database_is_not(processors):
    port = testlib.free_ports(1)[0]
    p = processors("-d", "host=127.0.0.1 port=%d dbname=nowhere user=nobody connect_timeout=2" % port,
                   "--metrics=127.0.0.1:0", "--reconnect-max=200ms")
    addr = metrics_address(p)
    f = testlib.wait_for(lambda: (lambda f: f if f["pgrelay_connection_failures_total"].value(conn="control") >= 2
                                  else None)(scrape(addr)), "failed attempts counted")
    assert f["pgrelay_database_connected"].value() == 0
    assert f["pgrelay_queue_events"].series() == []
    p.signal(signal.SIGTERM)
    assert p.wait_exit() == 0


def test_bad_addresses_and_ports_in_use(db):
    for bad in ("9471", "127.0.0.1:99999", "::1:9471", "127.0.0.1:http"):
        r = subprocess.run([testlib.PROCESSOR, "-d", db.dsn, "--metrics=" + bad], stderr=subprocess.PIPE, text=True)
        assert r.returncode == 2, bad
        assert "invalid value for --metrics" in r.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        r = subprocess.run([testlib.PROCESSOR, "-d", db.dsn, "--metrics=127.0.0.1:%d" % taken],
                           stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 1
    # the reason is the system's, and no other port is named (libmicrohttpd's own message says "port 0")
    assert re.search(r"startup_failed error=\"cannot listen on 127.0.0.1:%d: Address already in use\"" % taken,
                     r.stderr), r.stderr


def test_ipv6_loopback(db, processors):
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        pytest.skip("no ::1 here")
    p = processors("-d", db.dsn, "--metrics=[::1]:0")
    addr = metrics_address(p)
    assert addr.startswith("[::1]:")
    assert "pgrelay_processor_info" in scrape(addr)
    assert p.stop() == 0


def test_processors_rows_come_and_go(db, processors):
    p = processors("-d", db.dsn, "--workers=3", "--poll-interval=50ms")
    row = testlib.wait_for(lambda: db.sql("SELECT host, pid, version, mode, workers, alive, node_id, "
                                          "backend_pid IN (SELECT a.pid FROM pg_stat_activity a "
                                          "                WHERE a.application_name = 'pg_relay') "
                                          "FROM pgrelay.processors"), "the Processor's row")
    host, pid, version, mode, workers, alive, node, own_session = row[0]
    assert own_session
    assert (host, pid, mode, workers, alive, node) == (socket.gethostname(), p.proc.pid, "single", 3, True, 0)
    assert version == open(os.path.join(testlib.ROOT, "VERSION")).read().strip()
    # a second Processor has its own row; a clean stop takes the row away
    q = processors("-d", db.dsn, "--workers=1")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.processors WHERE alive") == 2, "two rows")
    assert q.stop() == 0
    assert db.sql("SELECT pid FROM pgrelay.processors") == [(p.proc.pid,)]
    # a crashed Processor's row stays, and shows as not alive once three reports are missed
    p.kill()
    assert db.sql("SELECT pid FROM pgrelay.processors") == [(p.proc.pid,)]
    db.sql("UPDATE pgrelay.processor_reports SET last_tick_at = last_tick_at - interval '31 seconds'")
    assert db.sql("SELECT alive FROM pgrelay.processors") == [(False,)]


def test_processor_reports_on_a_standby_write_nothing(tmp_path):
    pair = testlib.StandbyPair()
    try:
        with pair.primary.connect() as conn:
            conn.execute("CREATE DATABASE relay")
        with pair.primary.connect("relay") as conn:
            conn.execute("CREATE EXTENSION pg_relay")
        pair.wait_replayed()
        p = testlib.Processor(["-d", pair.standby.dsn("relay"), "--poll-interval=50ms", "--log-level=debug"])
        try:
            p.wait_log(r" standby_waiting ")
            p.wait_log(r" probe has_work=f", count=3)
            assert "report_failed" not in p.log()
            with pair.standby.connect("relay") as conn:
                assert conn.execute("SELECT count(*) FROM pgrelay.processors").fetchone()[0] == 0
                # what the node observed is unlogged: unreadable on a standby, so no rows, no error
                assert conn.execute("SELECT count(*) FROM pgrelay.cluster_status").fetchone()[0] == 0
            # pg_relay status reads a standby too
            r = subprocess.run([testlib.PROCESSOR, "status", "-d", pair.standby.dsn("relay")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
            assert r.returncode == 0, r.stderr
            assert re.search(r"^Server: +a standby \(Processors wait\)", r.stdout, re.M), r.stdout
            assert p.stop() == 0
            assert "report_failed" not in p.log()
        finally:
            p.kill()
    finally:
        pair.close()


def fields(line):
    """The key=value fields of a text log line, quotes and escapes undone."""
    return {k: (json.loads(v) if v.startswith('"') else v) for k, v in re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', line)}


def test_a_revoked_grant_says_what_to_fix_from_the_first_attempt(db, processors):
    """A handler whose EXECUTE or schema USAGE was revoked from pgrelay_processor fails every
    attempt until someone grants it again. The first attempt's line says so, at error level, with
    the GRANT that fixes it; the attempt counts in pgrelay_config_errors_total, and pgrelay.log
    records the kind (configuration) with the attempt. Alone and in a batch."""
    relay = "proof_cfg_relay_%d" % os.getpid()
    db.conn.execute("""CREATE SCHEMA app;
                       CREATE FUNCTION app.h(p text) RETURNS void SECURITY DEFINER SET search_path = pg_catalog
                       LANGUAGE sql AS 'SELECT';
                       GRANT USAGE ON SCHEMA app TO pgrelay_processor;
                       GRANT EXECUTE ON FUNCTION app.h(text) TO pgrelay_processor;
                       REVOKE EXECUTE ON FUNCTION app.h(text) FROM PUBLIC""")
    db.sql("SELECT pgrelay.register('cfg', 'sql', handler => 'app.h(text)', backoff_base => '1 hour',"
           " backoff_max => '1 hour')")
    db.sql("REVOKE EXECUTE ON FUNCTION app.h(text) FROM pgrelay_processor")
    db.sql('CREATE ROLE "%s" LOGIN IN ROLE pgrelay_processor' % relay)
    try:
        db.sql("SELECT pgrelay.notify('cfg', n::text) FROM generate_series(1, 2) n")  # a batch of two
        p = processors("-d", db.dsn.replace("user=postgres", "user=" + relay), "--workers=1",
                       "--metrics=127.0.0.1:0")
        addr = metrics_address(p)
        p.wait_log(r" attempt_failed ", count=2)
        for line in p.lines("attempt_failed"):
            f = fields(line)
            assert " error attempt_failed " in line and f["attempt"] == "1" and f["sqlstate"] == "42501", line
            assert f["config_error"] == "missing_grant", line
            assert f["hint"] == "GRANT EXECUTE ON FUNCTION app.h(text) TO pgrelay_processor", line
        # the schema: the next event runs alone
        db.sql("GRANT EXECUTE ON FUNCTION app.h(text) TO pgrelay_processor")
        db.sql("REVOKE USAGE ON SCHEMA app FROM pgrelay_processor")
        db.sql("SELECT pgrelay.notify('cfg', '3')")
        line = p.wait_log(r" attempt_failed .*config_error=missing_grant hint=.*SCHEMA").string
        assert fields(line)["hint"] == "GRANT USAGE ON SCHEMA app TO pgrelay_processor", line
        testlib.wait_for(lambda: scrape(addr)["pgrelay_config_errors_total"].value(channel="cfg", kind="missing_grant")
                         == 3, "three configuration errors counted")
        assert scrape(addr)["pgrelay_config_errors_total"].value(channel="cfg", kind="secret") == 0
        assert db.sql("SELECT DISTINCT sqlstate, pgrelay.error_kind(sqlstate) FROM pgrelay.log WHERE channel = 'cfg'") == \
            [("42501", "configuration")]
        assert p.stop() == 0
    finally:
        db.sql('DROP ROLE IF EXISTS "%s"' % relay)


def test_a_missing_secret_says_which_and_what_to_do(db, processors, tmp_path):
    """A webhook whose signing secret names a file that is not there fails each attempt, retried:
    the first attempt's line (error level) names the file, says to create it, and the attempt is
    recorded as a configuration error (SQLSTATE F0000) and counted as kind secret."""
    db.sql("SELECT pgrelay.register_webhook('hooks', 'http://127.0.0.1:9/x', allow_http => true,"
           " signing_secret => 'file:hook_key', backoff_base => '1 hour', backoff_max => '1 hour')")
    eid = db.scalar("SELECT pgrelay.notify('hooks', '{}')")
    p = processors("-d", db.dsn, "--secrets-dir", str(tmp_path), "--metrics=127.0.0.1:0")
    addr = metrics_address(p)
    line = p.wait_log(r" attempt_failed ").string
    f = fields(line)
    assert " error attempt_failed " in line and f["event_id"] == str(eid) and f["outcome"] == "retry", line
    assert f["sqlstate"] == "F0000" and f["config_error"] == "secret", line
    assert "cannot open %s/webhook/hooks/hook_key" % tmp_path in f["error"], line
    assert f["hint"].startswith("create that file, readable by the user the Processor runs as"), line
    testlib.wait_for(lambda: scrape(addr)["pgrelay_config_errors_total"].value(channel="hooks", kind="secret") == 1,
                     "the secret counted")
    assert db.sql("SELECT sqlstate, pgrelay.error_kind(sqlstate) FROM pgrelay.log") == [("F0000", "configuration")]
    assert p.stop() == 0


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_valgrind_metrics_run_is_clean(db, tmp_path):
    """The release build under valgrind serves scrapes (libmicrohttpd's thread, the queue figures
    read by the main loop, a 404) and stops without an error or a leak."""
    db.conn.execute(HANDLERS)
    db.sql("SELECT pgrelay.notify('good', 'g' || n) FROM generate_series(1, 5) n")
    p = testlib.Processor(["-d", db.dsn, "--workers=2", "--poll-interval=50ms", "--metrics=127.0.0.1:0"],
                          binary=testlib.PROCESSOR_RELEASE,
                          wrapper=("valgrind", "--leak-check=full", "--show-leak-kinds=definite,indirect",
                                   "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99"))
    try:
        addr = p.wait_log(r" metrics_listening address=(\S+)", timeout=120).group(1)
        testlib.wait_for(lambda: scrape(addr)["pgrelay_events_total"].value(channel="good", outcome="ok") == 5,
                         "the events counted", timeout=120)
        assert get("http://%s/nothing" % addr)[0] == 404
        p.signal(signal.SIGTERM)
        assert p.wait_exit(timeout=120) == 0, p.log()[-4000:]
        assert "ERROR SUMMARY: 0 errors" in p.log(), p.log()[-4000:]
    finally:
        p.kill()
