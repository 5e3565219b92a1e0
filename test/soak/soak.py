#!/usr/bin/python3
"""The fault soak (make soak, docs/testing.md): producers queue SQL events, emails, webhooks and
Redis Streams events on a primary with a synchronous streaming standby while the Processor delivers
them, and the harness breaks everything it can, at random moments:

  - SIGKILL the Processor 20 times (a new one starts at once),
  - restart PostgreSQL with -m immediate 3 times,
  - stop the SMTP server for 10 seconds, and hang it (SIGSTOP) for a while once,
  - SIGKILL the redis-server twice, with appends in flight, and start it again on the same port
    and directory (an append-only file with appendfsync always: the stream and the events'
    markers survive), and hang it (SIGSTOP) for a while once,
  - fail over: kill the primary and promote the standby, which the Processor and the producers
    reach through a multi-host connection string.

Then it waits until every event has its outcome and checks, from the database, the SMTP
server's spools and the webhook receiver's: nothing a producer saw committed is lost, no SQL
handler ran twice for an event, no event was finished twice in pgrelay.log, no event is left
without a final outcome, and emails and webhooks were sent twice at most as many times as
deliveries of their kind were in flight when something broke (recognised by their Message-ID and
webhook-id); every webhook the receiver got carried a valid signature. The Redis stream holds
each event that finished ok exactly once (counted by its event_id field), the entry its log row
names, and nothing else: the Lua script's marker makes the retry after a lost reply, a killed
Processor or a restarted server append nothing. Redis duplicates are bounded by 0: the server
writes a script's effects (entry and marker, one MULTI/EXEC) to the append-only file before it
answers, and a SIGKILL loses only what it has not written, entry and marker together, never an
entry without its marker (a duplicate needs a marker lost without its entry: a power failure
without appendfsync always, a failover to a replica that lacked it, or dedup_seconds passing).
It prints a report; exit status 1 when a check fails.

Knobs (environment): SOAK_SQL_EVENTS (6000), SOAK_EMAILS (4000), SOAK_WEBHOOKS (2000),
SOAK_REDIS (2000), SOAK_SECONDS (the time the
producers take, 90), SOAK_WORKERS (4), SOAK_RANDOM (the schedule's random number, printed with
the report so that a schedule can be run again).
"""
import email
import email.policy
import os
import random
import signal
import sys
import threading
import time

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import testlib  # noqa: E402

SQL_EVENTS = int(os.environ.get("SOAK_SQL_EVENTS", 6000))
EMAILS = int(os.environ.get("SOAK_EMAILS", 4000))
WEBHOOKS = int(os.environ.get("SOAK_WEBHOOKS", 2000))
REDIS = int(os.environ.get("SOAK_REDIS", 2000))
SECONDS = float(os.environ.get("SOAK_SECONDS", 90))
WORKERS = int(os.environ.get("SOAK_WORKERS", 4))
RANDOM = int(os.environ.get("SOAK_RANDOM", random.SystemRandom().randrange(1 << 30)))
KILLS, RESTARTS, REDIS_RESTARTS = 20, 3, 2
FINAL = ("ok", "partial", "cancelled", "failed")

SCHEMA = """
CREATE EXTENSION pg_relay;
CREATE EXTENSION pg_relay_notifier;
-- one run_order for every kind: events are offered in their queue order, so a Processor behind its
-- queue (a slow machine) still delivers every kind while things break, not SQL events first
UPDATE pgrelay.action_types SET run_order = 10;
CREATE TABLE public.done (token text NOT NULL, backend int, at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION public.soak_handler(p text) RETURNS void SECURITY DEFINER SET search_path = pg_catalog
LANGUAGE sql AS 'INSERT INTO public.done (token, backend) VALUES (p, pg_catalog.pg_backend_pid())';
GRANT EXECUTE ON FUNCTION public.soak_handler(text) TO pgrelay_processor;
SELECT pgrelay.register('soak_sql', 'sql', handler => 'public.soak_handler(text)', max_attempts => 1000,
                        backoff_base => '50 ms', backoff_max => '500 ms', timeout => '10 seconds');
"""


def log(fmt, *args):
    print("%8.1fs  %s" % (time.monotonic() - T0, fmt % args), flush=True)


T0 = time.monotonic()


class Soak:
    def __init__(self):
        self.rng = random.Random(RANDOM)
        self.work = testlib.work_dir("soak-")
        # Synchronous replication: a commit is acknowledged once the standby has it, so a failover
        # loses nothing a producer saw committed (docs/guarantees.md says what an asynchronous one
        # costs). The standby retries its primary quickly after each restart.
        self.pair = testlib.StandbyPair(os.path.join(self.work, "pair"), conf=(
            "synchronous_standby_names = '*'", "wal_retrieve_retry_interval = 100ms", "max_connections = 100"))
        self.conninfo = self.pair.conninfo("soak")
        with self.pair.primary.connect() as c:
            c.execute("CREATE DATABASE soak")
        with psycopg.connect(self.conninfo, autocommit=True) as c:
            c.execute(SCHEMA)
        self.smtp_port = None
        self.spools = []
        self.smtp = self.start_smtp()
        with psycopg.connect(self.conninfo, autocommit=True) as c:
            c.execute("SELECT pgrelay_notifier.create_profile('soak', host => '127.0.0.1', port => %s,"
                      " security => 'none', from_address => 'soak@example.com', connect_timeout => '1 second',"
                      " timeout => '3 seconds')", (self.smtp_port,))
            c.execute("SELECT pgrelay_notifier.create_channel('soak_mail', 'soak', max_attempts => 1000,"
                      " backoff_base => '100 ms', backoff_max => '1 second')")
        # the webhook receiver checks every request's signature with its own implementation
        certs = os.path.join(self.work, "certs")
        testlib.make_certs(certs)
        self.hookd = testlib.HookServer(os.path.join(self.work, "hookd"), certs)
        with psycopg.connect(self.conninfo, autocommit=True) as c:
            c.execute("SELECT pgrelay.register_webhook('soak_hook', %s, ca_file => %s, signing_secret => 'env:SOAK_HOOK_SECRET',"
                      " timeout => '3 seconds', max_attempts => 1000, backoff_base => '50 ms', backoff_max => '500 ms')",
                      (self.hookd.url(), self.hookd.ca))
        # the broker: a redis-server whose stream and markers survive a SIGKILL; each script's
        # effects reach the append-only file before the server answers
        os.mkdir(os.path.join(self.work, "redis"))
        self.redis = testlib.RedisServer(os.path.join(self.work, "redis"),
                                         conf=("appendonly yes", "appendfsync always"))
        with psycopg.connect(self.conninfo, autocommit=True) as c:
            c.execute("SELECT pgrelay.register('soak_redis', 'redis', settings => %s, timeout => '3 seconds',"
                      " max_attempts => 1000, backoff_base => '50 ms', backoff_max => '500 ms')",
                      ('{"host": "127.0.0.1", "port": %d, "stream": "soak:events"}' % self.redis.port,))
        self.acked = {"sql": set(), "mail": set(), "hook": set(), "redis": set()}
        self.unknown = {"sql": set(), "mail": set(), "hook": set(), "redis": set()}
        self.redis_ids = {}              # token -> event id, as notify() returned it
        self.producer_errors = 0
        self.in_flight = 0               # email deliveries held open when something broke
        self.hooks_in_flight = 0         # webhook deliveries held open when something broke
        self.redis_in_flight = 0         # Redis appends held open when something broke
        self.breaks = []                 # (when, what, in flight)
        self.processors = []
        self.processor = None
        self.lock = threading.Lock()

    # ---- the parts ----------------------------------------------------------------------------

    def start_smtp(self):
        d = os.path.join(self.work, "smtp%d" % len(self.spools))
        args = ["--port", str(self.smtp_port)] if self.smtp_port else []
        s = testlib.SmtpServer(d, args)
        self.smtp_port = s.port
        self.spools.append(s)
        return s

    def start_processor(self):
        # the Processor's sessions are named, so that their deliveries in flight can be counted
        p = testlib.Processor(["-d", self.conninfo + " application_name=pg_relay_soak", "--workers=%d" % WORKERS,
                               "--poll-interval=100ms",
                               "--reconnect-max=500ms", "--shutdown-timeout=10s",
                               "--secret-env=SOAK_HOOK_SECRET=webhook/soak_hook"],
                              env={"SOAK_HOOK_SECRET": testlib.HookServer.SECRET})
        self.processors.append(p)
        self.processor = p

    def primary(self):
        """The harness's own connection to the writable server. Connecting can fail right after
        a break (a server going down or coming up): that says nothing about pg_relay, so it is
        logged, and the harness waits for a writable primary and connects again."""
        while True:
            try:
                return psycopg.connect(self.conninfo, autocommit=True)
            except psycopg.OperationalError as e:
                log("the harness could not connect (%s); waiting for a writable primary",
                    " ".join(str(e).split()))
                self.wait_for_primary()

    def held_deliveries(self):
        """Emails whose held transaction is open right now: fetch() holds a one-key advisory lock on
        the notification id until its COMMIT or ROLLBACK."""
        with self.primary() as c:
            return c.execute("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
                             " WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted"
                             " AND a.application_name = 'pg_relay_soak'").fetchone()[0]

    def held_rows(self, channel):
        """Webhook or Redis events whose held transaction is open right now: the claim holds the
        queue row's lock until COMMIT or ROLLBACK, so they are the rows this session cannot lock."""
        with self.primary() as c:
            return c.execute("SELECT (SELECT count(*) FROM pgrelay.queue WHERE channel = %s)"
                             " - (SELECT count(*) FROM (SELECT 1 FROM pgrelay.queue WHERE channel = %s"
                             " FOR UPDATE SKIP LOCKED) x)", (channel, channel)).fetchone()[0]

    def freeze(self):
        """SIGSTOP the Processor and count its deliveries in flight; they cannot change while it
        is stopped, so the count is exact."""
        self.processor.signal(signal.SIGSTOP)
        n = self.held_deliveries()
        self.in_flight += n
        self.hooks_in_flight += self.held_rows("soak_hook")
        self.redis_in_flight += self.held_rows("soak_redis")
        return n

    def thaw(self):
        self.processor.signal(signal.SIGCONT)

    # ---- the producers ----------------------------------------------------------------------------

    def produce(self, kind, count):
        """Queue count events at an even pace over SECONDS, one transaction each, as an application
        would; a commit whose outcome the connection lost is counted as unknown, never retried
        under the same token (that could queue it twice)."""
        conn = None
        start = time.monotonic()
        for i in range(count):
            token = "%s-%05d" % (kind, i)
            due = start + SECONDS * i / count
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)       # pacing the load, not waiting for anything
            while True:
                if conn is None:
                    try:
                        conn = psycopg.connect(self.conninfo, autocommit=True)
                    except psycopg.Error:
                        # nothing was sent: wait for a primary and send this event again
                        self.wait_for_primary()
                        continue
                try:
                    if kind == "sql":
                        conn.execute("SELECT pgrelay.notify('soak_sql', %s)", (token,))
                    elif kind == "hook":
                        conn.execute("SELECT pgrelay.notify('soak_hook', %s)", ('{"token": "%s"}' % token,))
                    elif kind == "redis":
                        eid = conn.execute("SELECT pgrelay.notify('soak_redis', %s)", (token,)).fetchone()[0]
                        with self.lock:
                            self.redis_ids[token] = str(eid)
                    else:
                        conn.execute("SELECT pgrelay_notifier.send('soak_mail', ARRAY['ann@example.org'], %s,"
                                     " %s)", (token, "Hello " + token))
                    with self.lock:
                        self.acked[kind].add(token)
                    break
                except psycopg.Error:
                    # the connection died under the statement: it may or may not have committed
                    with self.lock:
                        self.unknown[kind].add(token)
                        self.producer_errors += 1
                    try:
                        conn.close()
                    except Exception:
                        pass
                    conn = None
                    self.wait_for_primary()
                    break
        if conn is not None:
            conn.close()

    def wait_for_primary(self):
        def writable():
            try:
                with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=2) as c:
                    return not c.execute("SELECT pg_is_in_recovery()").fetchone()[0]
            except psycopg.Error:
                return False
        testlib.wait_for(writable, "a writable primary", timeout=120, interval=0.1)

    # ---- what breaks ---------------------------------------------------------------------------------

    def kill_processor(self):
        n = self.freeze()
        self.processor.kill()
        self.start_processor()
        return n

    def restart_postgres(self):
        n = self.freeze()
        self.pair.primary.restart("immediate")
        self.thaw()
        return n

    def failover(self):
        n = self.freeze()
        self.pair.kill_primary()
        self.pair.promote()
        # the promoted server has no standby of its own: commit without waiting for one
        with self.pair.primary.connect() as c:
            c.execute("ALTER SYSTEM SET synchronous_standby_names = ''")
            c.execute("SELECT pg_reload_conf()")
        self.thaw()
        return n

    def stop_smtp(self):
        n = self.held_deliveries()
        self.in_flight += n
        self.smtp.stop()
        return n

    def start_smtp_again(self):
        self.smtp = self.start_smtp()
        return 0

    def hang_smtp(self):
        n = self.held_deliveries()
        self.in_flight += n
        self.smtp.proc.send_signal(signal.SIGSTOP)
        return n

    def unhang_smtp(self):
        self.smtp.proc.send_signal(signal.SIGCONT)
        return 0

    def kill_redis(self):
        """SIGKILL the redis-server with appends in flight and start it again on the same port and
        directory: it loads its append-only file. An append takes well under a millisecond, so a
        kill at a random moment would rarely meet one: the server is stopped (SIGSTOP) first until
        a worker holds an event (claimed, its append sent or on its way), for 5 s at most: a
        longer wait would only push the rest of the schedule."""
        self.redis.proc.send_signal(signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while self.held_rows("soak_redis") == 0 and time.monotonic() < deadline:
            time.sleep(0.05)        # polling the condition above
        n = self.held_rows("soak_redis")
        self.redis_in_flight += n
        self.redis.proc.kill()
        self.redis.proc.wait(timeout=30)
        self.redis.start()
        return n

    def hang_redis(self):
        n = self.held_rows("soak_redis")
        self.redis_in_flight += n
        self.redis.proc.send_signal(signal.SIGSTOP)
        return n

    def unhang_redis(self):
        self.redis.proc.send_signal(signal.SIGCONT)
        return 0

    def schedule(self):
        """(time, action) pairs spread over the production time, in order, at least a second apart."""
        span = SECONDS + 10
        acts = [(self.rng.uniform(3, span), self.kill_processor, "SIGKILL the Processor") for _ in range(KILLS)]
        acts += [(self.rng.uniform(3, span), self.restart_postgres, "restart PostgreSQL -m immediate")
                 for _ in range(RESTARTS)]
        t = self.rng.uniform(0.2 * span, 0.5 * span)
        acts += [(t, self.stop_smtp, "stop the SMTP server"), (t + 10, self.start_smtp_again, "start it again")]
        t = self.rng.uniform(0.55 * span, 0.8 * span)
        acts += [(t, self.hang_smtp, "hang the SMTP server (SIGSTOP)"), (t + 6, self.unhang_smtp, "let it go on")]
        acts += [(self.rng.uniform(0.6 * span, 0.9 * span), self.failover, "fail over to the standby")]
        acts += [(self.rng.uniform(3, SECONDS), self.kill_redis, "SIGKILL the redis-server, start it again")
                 for _ in range(REDIS_RESTARTS)]
        t = self.rng.uniform(0.3 * span, 0.7 * span)
        acts += [(t, self.hang_redis, "hang the redis-server (SIGSTOP)"), (t + 6, self.unhang_redis, "let redis go on")]
        acts.sort(key=lambda a: a[0])
        out, last = [], 0.0
        for when, fn, what in acts:
            when = max(when, last + 1.0)
            out.append((when, fn, what))
            last = when
        return out

    # ---- the run ---------------------------------------------------------------------------------------

    def run(self):
        log("soak: %d SQL events, %d emails, %d webhooks and %d Redis events over %ds, %d workers,"
            " schedule SOAK_RANDOM=%d", SQL_EVENTS, EMAILS, WEBHOOKS, REDIS, SECONDS, WORKERS, RANDOM)
        self.start_processor()
        producers = [threading.Thread(target=self.produce, args=("sql", SQL_EVENTS)),
                     threading.Thread(target=self.produce, args=("mail", EMAILS)),
                     threading.Thread(target=self.produce, args=("hook", WEBHOOKS)),
                     threading.Thread(target=self.produce, args=("redis", REDIS))]
        started = time.monotonic()
        for t in producers:
            t.start()
        for when, fn, what in self.schedule():
            pause = started + when - time.monotonic()
            if pause > 0:
                time.sleep(pause)       # the moment the schedule chose
            n = fn()
            self.breaks.append((time.monotonic() - started, what, n))
            log("%s (%d deliveries in flight)", what, n)
        for t in producers:
            t.join()
        produced = time.monotonic() - started
        log("producers done; waiting for every event to finish")
        self.wait_drained()
        drained = time.monotonic() - started
        self.processor.signal(signal.SIGTERM)
        self.processor.proc.wait(timeout=120)
        return produced, drained

    def wait_drained(self):
        def drained():
            with self.primary() as c:
                return c.execute("SELECT count(*) = 0 FROM pgrelay.queue").fetchone()[0]
        testlib.wait_for(drained, "the queue to drain", timeout=900, interval=0.5)

    # ---- the checks ---------------------------------------------------------------------------------------

    def report(self, produced, drained):
        with self.primary() as c:
            done = dict(c.execute("SELECT token, count(*) FROM public.done GROUP BY token").fetchall())
            sql_final = dict(c.execute(
                "SELECT payload, count(*) FILTER (WHERE outcome = ANY(%s)) FROM pgrelay.log"
                " WHERE channel = 'soak_sql' GROUP BY payload", (list(FINAL),)).fetchall())
            twice = c.execute("SELECT count(*) FROM (SELECT event_id FROM pgrelay.log WHERE outcome = ANY(%s)"
                              " GROUP BY event_id HAVING count(*) > 1) x", (list(FINAL),)).fetchone()[0]
            open_events = c.execute(
                "SELECT (SELECT count(*) FROM pgrelay.queue) + (SELECT count(*) FROM (SELECT event_id FROM pgrelay.log"
                " GROUP BY event_id HAVING NOT bool_or(outcome = ANY(%s))) x)", (list(FINAL),)).fetchone()[0]
            failed = c.execute("SELECT count(*) FROM pgrelay.failed").fetchone()[0]
            notes = {subject: (status, mid) for subject, status, mid in c.execute(
                "SELECT subject, status, message_id FROM pgrelay_notifier.notifications").fetchall()}
            attempts = dict(c.execute("SELECT outcome, count(*) FROM pgrelay.log GROUP BY outcome").fetchall())
            unknown_outcomes = c.execute("SELECT count(*) FROM pgrelay.log WHERE channel = 'soak_mail'"
                                         " AND detail->>'unknown_outcome' = 'true'").fetchone()[0]
            hook_ok = dict(c.execute("SELECT payload::json->>'token', event_id::text FROM pgrelay.log"
                                     " WHERE channel = 'soak_hook' AND outcome = 'ok'").fetchall())
            redis_ok = {eid: (payload, entry, dup) for payload, eid, entry, dup in c.execute(
                "SELECT payload, event_id::text, detail->>'entry_id', (detail->>'duplicate')::bool FROM pgrelay.log"
                " WHERE channel = 'soak_redis' AND outcome = 'ok'").fetchall()}
        redis = self.redis_check(redis_ok)
        received = {}
        for s in self.spools:
            for _, raw in s.messages():
                mid = email.message_from_bytes(raw, policy=email.policy.default)["Message-ID"]
                received[mid] = received.get(mid, 0) + 1
        hook_requests = self.hookd.requests()
        hook_ids = {}
        for r in hook_requests:
            if r["status"] == 200:
                hook_ids[r["webhook_id"]] = hook_ids.get(r["webhook_id"], 0) + 1
        bad_signatures = sum(1 for r in hook_requests if r["signature"] != "valid")
        hook_dups = sum(n - 1 for n in hook_ids.values() if n > 1)
        lost_hook = [t for t in self.acked["hook"] if t not in hook_ok or hook_ok[t] not in hook_ids]
        acked_sql, acked_mail = self.acked["sql"], self.acked["mail"]
        lost_sql = [t for t in acked_sql if done.get(t, 0) == 0 or sql_final.get(t, 0) == 0]
        lost_mail = [t for t in acked_mail if t not in notes or notes[t][0] != "sent" or notes[t][1] not in received]
        double_runs = [t for t, n in done.items() if n > 1]
        unknown_sql = self.unknown["sql"]
        redis_tokens = {payload for payload, _, _ in redis_ok.values()}
        unknown_found = (sum(1 for t in unknown_sql if t in done) + sum(1 for t in self.unknown["mail"] if t in notes)
                         + sum(1 for t in self.unknown["hook"] if t in hook_ok)
                         + sum(1 for t in self.unknown["redis"] if t in redis_tokens))
        duplicates = sum(n - 1 for n in received.values() if n > 1)
        dup_bound = self.in_flight + unknown_outcomes
        logs = "".join(p.log() for p in self.processors)
        sanitizer = [m for m in ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer") if m in logs]
        kinds, flight, at = {}, {}, {}
        for when, what, n in self.breaks:
            kinds[what] = kinds.get(what, 0) + 1
            if "redis" not in what:     # the redis-server's breaks count Redis appends
                flight[what] = flight.get(what, 0) + n
            at[what] = when
        stopped = at.get("start it again", 0) - at.get("stop the SMTP server", 0)
        hung = at.get("let it go on", 0) - at.get("hang the SMTP server (SIGSTOP)", 0)
        redis_hung = at.get("let redis go on", 0) - at.get("hang the redis-server (SIGSTOP)", 0)
        rows = [
            ("events queued (acknowledged to the producers)", "%d SQL, %d emails, %d webhooks, %d Redis"
             % (len(acked_sql), len(acked_mail), len(self.acked["hook"]), len(self.acked["redis"]))),
            ("commits the producers lost track of (connection gone)", "%d, of which %d reached the queue"
             % (sum(len(u) for u in self.unknown.values()), unknown_found)),
            ("Processor SIGKILLs / PostgreSQL restarts / failovers", "%d / %d / %d" % (
                kinds.get("SIGKILL the Processor", 0), kinds.get("restart PostgreSQL -m immediate", 0),
                kinds.get("fail over to the standby", 0))),
            ("SMTP server stopped / hung", "%d (%.1f s) / %d (%.1f s)" % (
                kinds.get("stop the SMTP server", 0), stopped, kinds.get("hang the SMTP server (SIGSTOP)", 0), hung)),
            ("email deliveries in flight at the breaks", "%d: %s" % (self.in_flight, ", ".join(
                "%d at %s" % (n, what) for what, n in sorted(flight.items()) if n))),
            ("webhook deliveries in flight at the breaks", "%d" % self.hooks_in_flight),
            ("redis-server SIGKILLed and started again / hung", "%d / %d (%.1f s)" % (
                kinds.get("SIGKILL the redis-server, start it again", 0),
                kinds.get("hang the redis-server (SIGSTOP)", 0), redis_hung)),
            ("Redis appends in flight at the breaks", "%d, of which %d at the redis-server's SIGKILLs" % (
                self.redis_in_flight, sum(n for _, what, n in self.breaks if what.startswith("SIGKILL the redis")))),
            ("attempts by outcome", ", ".join("%s %d" % kv for kv in sorted(attempts.items()))),
            ("lost (acknowledged, never done or delivered)", "%d" % (len(lost_sql) + len(lost_mail) + len(lost_hook)
                                                                     + len(redis["lost"]))),
            ("SQL handler double runs", "%d" % len(double_runs)),
            ("events finished twice in pgrelay.log", "%d" % twice),
            ("events without a final outcome", "%d" % open_events),
            ("events failed for good", "%d" % failed),
            ("email duplicates (same Message-ID)", "%d, bound %d = %d in flight at the breaks + %d unknown outcomes"
             % (duplicates, dup_bound, self.in_flight, unknown_outcomes)),
            ("webhook duplicates (same webhook-id answered 200)", "%d, bound %d in flight at the breaks"
             % (hook_dups, self.hooks_in_flight)),
            ("webhook requests without a valid signature", "%d of %d" % (bad_signatures, len(hook_requests))),
            ("Redis stream entries / duplicates (same event_id)", "%d / %d, bound 0" % (
                redis["entries"], redis["duplicates"])),
            ("Redis retries that found the event's marker (appended nothing)", "%d" % redis["found"]),
            ("Redis entries unlike their log row, or of no event finished ok", "%d" % len(redis["wrong"])),
            ("sanitizer reports in the Processors' logs", "%d" % len(sanitizer)),
            ("wall time: producing / until every event was done", "%.0f s / %.0f s" % (produced, drained)),
        ]
        print("\n| soak (SOAK_RANDOM=%d) | |\n|---|---|" % RANDOM)
        for k, v in rows:
            print("| %s | %s |" % (k, v))
        problems = []
        if lost_sql or lost_mail or lost_hook or redis["lost"]:
            problems.append("lost: %s" % (lost_sql + lost_mail + lost_hook + redis["lost"])[:10])
        if double_runs:
            problems.append("double runs: %s" % double_runs[:10])
        if twice or open_events or failed:
            problems.append("finished twice %d, without outcome %d, failed %d" % (twice, open_events, failed))
        if duplicates > dup_bound:
            problems.append("%d duplicates, more than the %d deliveries in flight" % (duplicates, dup_bound))
        if hook_dups > self.hooks_in_flight:
            problems.append("%d webhook duplicates, more than the %d in flight" % (hook_dups, self.hooks_in_flight))
        if redis["duplicates"]:
            problems.append("%d Redis duplicates: %s" % (redis["duplicates"], redis["doubled"][:10]))
        if redis["wrong"]:
            problems.append("Redis entries unlike their log row: %s" % redis["wrong"][:10])
        if bad_signatures:
            problems.append("%d webhook requests without a valid signature" % bad_signatures)
        if sanitizer:
            problems.append("sanitizer reports: %s" % sanitizer)
        if any(len(self.acked[k]) + len(self.unknown[k]) != n
               for k, n in (("sql", SQL_EVENTS), ("mail", EMAILS), ("hook", WEBHOOKS), ("redis", REDIS))):
            problems.append("the producers did not produce everything")
        for p in problems:
            print("FAILED: " + p)
        return not problems

    def redis_check(self, redis_ok):
        """Compares the stream with the log's ok rows (event id -> payload, entry id, duplicate):
        each acknowledged event is in both; each entry is the one its event's log row names, with
        its payload; no event_id is in the stream twice."""
        entries = self.redis.entries("soak:events")
        by_event = {}
        for e in entries:
            by_event.setdefault(e.get("event_id"), []).append(e)
        doubled = [eid for eid, es in by_event.items() if len(es) > 1]
        lost = [t for t in self.acked["redis"]
                if self.redis_ids[t] not in redis_ok or self.redis_ids[t] not in by_event]
        wrong = [eid for eid, es in by_event.items()
                 if eid not in redis_ok or all(e["id"] != redis_ok[eid][1] or e.get("payload") != redis_ok[eid][0]
                                               for e in es)]
        return {"entries": len(entries), "duplicates": sum(len(by_event[eid]) - 1 for eid in doubled),
                "doubled": doubled, "lost": lost, "wrong": wrong,
                "found": sum(1 for _, _, dup in redis_ok.values() if dup)}

    def close(self):
        for p in self.processors:
            if p.proc.poll() is None:
                p.kill()
        for s in self.spools:
            s.stop()
        self.hookd.stop()
        self.redis.proc.send_signal(signal.SIGCONT)
        self.redis.stop()
        self.pair.close()


def main():
    soak = Soak()
    try:
        produced, drained = soak.run()
        ok = soak.report(produced, drained)
    finally:
        soak.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
