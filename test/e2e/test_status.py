"""pg_relay status: one screen about a database, read with nothing but pgrelay_monitor's rights:
dispatch (the global pause, a standby), the Processors and whether they are alive, the channels
with the most events due or waiting to retry (with their keyed and snoozed events) and their last
errors, the recurring events (a failed last run first); and its errors (no rights, no server, bad
usage)."""
import re
import subprocess

import testlib


def status(*args):
    r = subprocess.run([testlib.PROCESSOR, "status"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=60)
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    return r


def monitor_dsn(db):
    db.sql("DO $$ BEGIN CREATE ROLE relay_watch LOGIN IN ROLE pgrelay_monitor; "
           "EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    return db.dsn.replace("user=postgres", "user=relay_watch")


def test_status_as_a_monitor(db, processors):
    db.sql("CREATE FUNCTION ok(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS ''")
    db.sql("SELECT pgrelay.register('orders', 'sql', handler => 'ok(text)')")
    db.sql("SELECT pgrelay.register('later', 'sql', handler => 'ok(text)')")
    db.sql("SELECT pgrelay.pause('later')")
    db.sql("SELECT pgrelay.notify('later', 'x') FROM generate_series(1, 3)")
    dsn = monitor_dsn(db)

    r = status("-d", dsn)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert re.search(r"^pg_relay 1\.\d+ in database %s, read as relay_watch at " % db.name, out, re.M), out
    assert re.search(r"^Dispatch: +running$", out, re.M), out
    # one version story: the extension and the SQL interface it speaks, this program and its own
    version = open(testlib.ROOT + "/VERSION").read().strip()
    ext = db.scalar("SELECT extversion FROM pg_extension WHERE extname = 'pg_relay'")
    iface = db.scalar("SELECT pgrelay.interface_version()")
    assert re.search(r"^Versions: +pg_relay %s \(extension\), interface %d; this pg_relay %s \(interface %d\)$"
                     % (re.escape(ext), iface, re.escape(version), iface), out, re.M), out
    assert re.search(r"^Server: +a primary, pg_relay node 0$", out, re.M), out
    assert re.search(r"^Processors: +NONE reported", out, re.M), out
    assert re.search(r"^Channels: +2; queued 3, due 3, retrying 0; failed for good 0 \(pgrelay.failed\)$", out, re.M), out
    assert "Last errors:" not in out
    # the channel with due events comes first, and says it is paused
    rows = [l.split() for l in out.splitlines() if re.match(r"  (later|orders) ", l)]
    assert rows[0][0] == "later" and rows[0][2:4] == ["3", "3"] and rows[0][-1] == "PAUSED", out
    assert rows[1][0] == "orders" and rows[1][-1] == "active", out
    assert len(out.splitlines()) <= 24

    p = processors("-d", db.dsn, "--workers=2", "--poll-interval=50ms")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.processors") == 1, "the Processor's row")
    db.sql("SELECT pgrelay.pause()")
    out = status("-d", dsn).stdout
    assert re.search(r"^Dispatch: +PAUSED for \d+s by pgrelay.pause\(\)", out, re.M), out
    assert re.search(r"^Processors: +1 alive$", out, re.M), out
    line = [l for l in out.splitlines() if re.match(r"  \S+ +%d " % p.proc.pid, l)]
    assert line and line[0].split()[3:6] == [open(testlib.ROOT + "/VERSION").read().strip(), "single", "2"], out
    assert p.stop() == 0
    out = status("-d", dsn).stdout
    assert re.search(r"^Processors: +NONE reported", out, re.M), out


def channel_row(out, channel):
    """The fields of a channel's row: name, type, queued, due, retrying, keyed, snoozed, oldest due, ..."""
    table = out.split("Channels:", 1)[1].split("Last errors:", 1)[0].split("Schedules:", 1)[0]
    rows = [l.split() for l in table.splitlines() if re.match(r"  %s " % re.escape(channel), l)]
    assert len(rows) == 1, out
    return rows[0]


def test_status_counts_keyed_and_snoozed_events(db, processors):
    # a handler that is never ready: every attempt snoozes for an hour
    db.sql("CREATE FUNCTION nap(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql "
           "AS $$ BEGIN RAISE EXCEPTION 'not yet' USING ERRCODE = 'PGSNZ', DETAIL = '1 hour'; END $$")
    db.sql("CREATE FUNCTION ok(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS ''")
    db.sql("SELECT pgrelay.register('nap', 'sql', handler => 'nap(text)')")
    db.sql("SELECT pgrelay.register('keys', 'sql', handler => 'ok(text)')")
    db.sql("SELECT pgrelay.pause('keys')")
    db.sql("SELECT pgrelay.notify('keys', 'k', key => 'product:' || i) FROM generate_series(1, 2) i")
    db.sql("SELECT pgrelay.notify('keys', 'no key')")
    db.sql("SELECT pgrelay.notify('nap', 'x', key => 'nap:' || i) FROM generate_series(1, 2) i")
    p = processors("-d", db.dsn, "--poll-interval=50ms")
    testlib.wait_for(lambda: db.scalar("SELECT snoozed FROM pgrelay.queue_depth WHERE channel = 'nap'") == 2,
                     "both events of nap to snooze")
    assert p.stop() == 0

    out = status("-d", monitor_dsn(db)).stdout
    header = [l for l in out.splitlines() if l.startswith("  CHANNEL ")]
    assert header and header[0].split()[:7] == ["CHANNEL", "TYPE", "QUEUED", "DUE", "RETRYING", "KEYED", "SNOOZED"], out
    # queued, due, retrying, keyed, snoozed: the paused channel's three wait, two with a key; the
    # snoozed events wait for their hour (not due, no retry: a snooze spends no attempt), keyed
    # still (a snooze keeps the key)
    assert channel_row(out, "keys")[2:7] == ["3", "3", "0", "2", "0"], out
    assert channel_row(out, "nap")[2:7] == ["2", "0", "0", "2", "2"], out


def test_status_shows_retrying_events_and_the_last_error(db, processors):
    """A handler that fails on every attempt (a duplicate key), retried an hour later: its events
    are queued and not due, and would look healthy. The screen counts them as retrying, beside
    queued and due and in the totals, and shows the channel's last error under the table; a
    channel without errors has no such line."""
    db.sql("CREATE TABLE seen (id integer PRIMARY KEY)")
    db.sql("INSERT INTO seen VALUES (1)")
    db.sql("CREATE FUNCTION dup(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql "
           "AS 'INSERT INTO seen VALUES (1)'")
    db.sql("CREATE FUNCTION ok(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS ''")
    db.sql("SELECT pgrelay.register('order_placed', 'sql', handler => 'dup(text)', max_attempts => 8,"
           " backoff_base => '1 hour', backoff_max => '1 hour')")
    db.sql("SELECT pgrelay.register('fine', 'sql', handler => 'ok(text)')")
    db.sql("SELECT pgrelay.notify('order_placed', 'x') FROM generate_series(1, 20)")
    db.sql("SELECT pgrelay.notify('fine', 'x')")
    p = processors("-d", db.dsn, "--poll-interval=50ms")
    testlib.wait_for(lambda: db.scalar("SELECT retrying FROM pgrelay.queue_depth WHERE channel = 'order_placed'") == 20
                     and db.scalar("SELECT queued FROM pgrelay.queue_depth WHERE channel = 'fine'") == 0,
                     "every event of order_placed waiting for its retry")
    assert p.stop() == 0
    db.sql("SELECT pgrelay.pause('order_placed')")
    db.sql("SELECT pgrelay.notify('order_placed', 'new')")

    out = status("-d", monitor_dsn(db)).stdout
    assert re.search(r"^Channels: +2; queued 21, due 1, RETRYING 20; failed for good 0 \(pgrelay.failed\)$", out,
                     re.M), out
    assert channel_row(out, "order_placed")[2:5] == ["21", "1", "20"], out
    # first: the most events due or retrying
    names = [l.split()[0] for l in out.split("Channels:", 1)[1].splitlines()[2:4]]
    assert names == ["order_placed", "fine"], out
    errors = out.split("Last errors:", 1)[1].splitlines()
    assert errors[1].split()[:5] == ["CHANNEL", "WHEN", "ATTEMPT", "KIND", "ERROR"], out
    assert re.match(r"  order_placed +\d+s ago +1 data 23505 +duplicate key value violates unique constraint "
                    r"\"seen_pkey\"$", errors[2]), out
    assert not errors[3].startswith("  fine "), out


AGE = r"\d+[smhd](?:\d\d[smh])?"  # status_format_age: 5s, 4m10s, 3h12m, 2d05h


def schedule_line(out, name):
    lines = [l for l in out.splitlines() if re.match(r"  %s " % re.escape(name), l)]
    assert len(lines) == 1, out
    return lines[0]


def test_status_shows_the_schedules(db):
    dsn = monitor_dsn(db)
    out = status("-d", dsn).stdout
    assert re.search(r"^Schedules: +none$", out, re.M), out

    db.sql("CREATE FUNCTION ok(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS ''")
    db.sql("SELECT pgrelay.register('ticks', 'sql', handler => 'ok(text)')")
    db.sql("SELECT pgrelay.register('off', 'sql', handler => 'ok(text)', active => false)")
    db.sql("SELECT pgrelay.schedule('hourly', 'ticks', '0 * * * *')")
    db.sql("SELECT pgrelay.schedule('berlin', 'ticks', '30 2 * * *', timezone => 'Europe/Berlin', active => false)")
    db.sql("SELECT pgrelay.schedule('minutely', 'ticks', '* * * * *')")
    db.sql("SELECT pgrelay.schedule('broken', 'off', '* * * * *')")
    # two occurrences come, and the Processor's call fires them: one queued, one the inactive
    # channel refuses
    db.sql("UPDATE pgrelay.schedule_entries SET next_run_at = now() - interval '5 seconds' "
           "WHERE name IN ('minutely', 'broken')")
    fired = dict(db.conn.execute("SELECT schedule, outcome FROM pgrelay._schedule_fire()").fetchall())
    assert fired == {"minutely": "queued", "broken": "failed"}
    reason = db.scalar("SELECT last_reason FROM pgrelay.schedules WHERE name = 'broken'")
    # and one is due, for minutes: nothing fires it
    db.sql("SELECT pgrelay.schedule('stuck', 'ticks', '*/5 * * * *')")
    db.sql("UPDATE pgrelay.schedule_entries SET next_run_at = now() - interval '3 minutes' WHERE name = 'stuck'")

    r = status("-d", dsn)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert re.search(r"^Schedules: +5, 1 whose last run FAILED$", out, re.M), out
    assert re.search(r"^  NAME +CHANNEL +CRON +STATE +NEXT RUN +LAST RUN +OUTCOME$", out, re.M), out
    names = [l.split()[0] for l in out.split("Schedules:", 1)[1].splitlines()[2:]]
    # the failed one first, then the due one, then the next to run, the paused one last; in an
    # hour's last minute the hourly and the minutely one run at the same time: then by name
    tie = db.scalar("SELECT count(DISTINCT next_run_at) = 1 FROM pgrelay.schedule_entries"
                    " WHERE name IN ('hourly', 'minutely')")
    middle = ["hourly", "minutely"] if tie else ["minutely", "hourly"]
    assert names == ["broken", "stuck"] + middle + ["berlin"], out
    assert re.match(r"  broken +off +\* \* \* \* \* +active +in %s +%s ago +FAILED: " % (AGE, AGE),
                    schedule_line(out, "broken")), out
    assert schedule_line(out, "broken").endswith("FAILED: " + reason[:60]) and "off" in reason, out
    assert re.match(r"  stuck +ticks +\*/5 \* \* \* \* +active +due 3m\d\ds +never +-$", schedule_line(out, "stuck")), out
    assert re.match(r"  minutely +ticks +\* \* \* \* \* +active +in %s +%s ago +queued$" % (AGE, AGE),
                    schedule_line(out, "minutely")), out
    assert re.match(r"  hourly +ticks +0 \* \* \* \* +active +in %s +never +-$" % AGE,
                    schedule_line(out, "hourly")), out
    # the time zone only when it is not UTC; a paused schedule has no next run
    assert re.match(r"  berlin +ticks +30 2 \* \* \* Europe/Berlin +paused +- +never +-$",
                    schedule_line(out, "berlin")), out

    # at most 10 rows, the failed one still first, and how many more there are
    db.sql("SELECT pgrelay.schedule('yearly-' || i, 'ticks', '0 0 1 1 *') FROM generate_series(1, 8) i")
    out = status("-d", dsn).stdout
    assert re.search(r"^Schedules: +13, 1 whose last run FAILED$", out, re.M), out
    rows = out.split("Schedules:", 1)[1].splitlines()[2:]
    assert len(rows) == 11 and rows[0].startswith("  broken ") and rows[-1] == "  and 3 more (pgrelay.schedules)", out


def test_status_shows_the_topics(db):
    """Per subscription of a topic: its deliveries queued, due, retrying, failed for good and failed
    in the last hour, the ones with failures first; nothing while no channel subscribes."""
    dsn = monitor_dsn(db)
    assert "Topics:" not in status("-d", dsn).stdout
    db.sql("CREATE FUNCTION ok(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS ''")
    db.sql("CREATE FUNCTION bad(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql "
           "AS $$ BEGIN RAISE EXCEPTION 'no' USING ERRCODE = 'PGSTP'; END $$")
    db.sql("SELECT pgrelay.register('ledger', 'sql', handler => 'ok(text)')")
    db.sql("SELECT pgrelay.register('crm', 'sql', handler => 'bad(text)')")
    db.sql("SELECT pgrelay.register('other', 'sql', handler => 'ok(text)')")
    db.sql("SELECT pgrelay.create_topic('orders')")
    db.sql("SELECT pgrelay.subscribe('orders', 'ledger')")
    db.sql("SELECT pgrelay.subscribe('orders', 'crm')")
    db.sql("SELECT pgrelay.publish_many('orders', ARRAY['a', 'b', 'c'])")
    db.sql("SELECT pgrelay.notify('other', 'x')")   # not a delivery of a publication
    crm = db.scalar("SELECT min(id) FROM pgrelay.queue WHERE channel = 'crm'")
    assert db.scalar("SELECT outcome FROM pgrelay.process_one(%s)", (crm,)) == "failed"
    out = status("-d", dsn).stdout
    assert re.search(r"^Topics: +1 with 2 subscription\(s\); deliveries failed for good FAILED 1$", out, re.M), out
    rows = [l.split() for l in out.split("Topics:", 1)[1].splitlines() if re.match(r"  orders ", l)]
    # topic, channel, type, queued, due, retrying, oldest due, failed, failed 1h, state
    assert len(rows) == 2 and rows[0][1] == "crm" and rows[1][1] == "ledger", out
    assert rows[0][3:6] == ["2", "2", "0"] and rows[0][7:] == ["1", "1", "active"], out
    assert rows[1][3:6] == ["3", "3", "0"] and rows[1][7:] == ["0", "0", "active"], out


def test_status_of_a_crashed_processor(db, processors):
    dsn = monitor_dsn(db)
    p = processors("-d", db.dsn, "--poll-interval=50ms")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.processors") == 1, "the Processor's row")
    p.kill()
    # not alive as soon as its session is gone, not three missed reports later
    testlib.wait_for(lambda: re.search(r"^Processors: +NONE alive \(1 silent\)$", status("-d", dsn).stdout, re.M),
                     "the killed Processor shown not alive")
    out = status("-d", dsn).stdout
    assert re.search(r"ago +NOT ALIVE$", out, re.M), out
    db.sql("UPDATE pgrelay.processor_reports SET last_tick_at = last_tick_at - interval '2 minutes',"
           " backend_pid = pg_backend_pid()")
    out = status("-d", dsn).stdout
    assert re.search(r"^Processors: +NONE alive \(1 silent\)$", out, re.M), out


def test_status_errors(db):
    db.sql("DO $$ BEGIN CREATE ROLE relay_nobody LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    r = status("-d", db.dsn.replace("user=postgres", "user=relay_nobody"))
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.splitlines() == [
        "pg_relay status: relay_nobody may not read pgrelay.dispatch_state, pgrelay.processors,"
        " pgrelay.cluster_status, pgrelay.queue_depth, pgrelay.channel_stats, pgrelay.failed, pgrelay.last_errors,"
        " pgrelay.schedules",
        "hint: GRANT pgrelay_monitor TO relay_nobody; (the views pg_relay status reads are the monitor role's)"], r.stderr
    # the Processor's role reads some of them: one message too, before anything is printed
    db.sql("DO $$ BEGIN CREATE ROLE relay_proc LOGIN IN ROLE pgrelay_processor; "
           "EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    r = status("-d", db.dsn.replace("user=postgres", "user=relay_proc"))
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("pg_relay status: relay_proc may not read pgrelay.channel_stats, pgrelay.last_errors,"
                               " pgrelay.schedules\n"), r.stderr
    port = testlib.free_ports(1)[0]
    r = status("-d", "host=127.0.0.1 port=%d dbname=x connect_timeout=2" % port)
    assert r.returncode == 1 and "could not connect" in r.stderr and "hint: is the server running" in r.stderr
    r = status("--nonsense")
    assert r.returncode == 2 and 'Try "pg_relay status --help"' in r.stderr
    r = status("-d", db.dsn, "extra")
    assert r.returncode == 2
    r = status("--help")
    assert r.returncode == 0 and r.stdout.startswith("pg_relay status - ") and "--dbname=CONNINFO" in r.stdout
    r = status("-d", "host='unterminated")
    assert r.returncode == 2
