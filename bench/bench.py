#!/usr/bin/python3
"""bench/bench.py - measures the Processor against the database's own floor and prints one table.

Run it through bench/run (`make bench`), which builds the release Processor first. Every figure
and the targets are described in docs/benchmarks.md, how each is measured in
docs/design/benchmark-notes.md. Progress goes to stderr, the table to stdout.
"""
import http.client
import json
import os
import re
import shutil
import statistics
import signal
import smtplib
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import psycopg

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PGCLUSTER = os.path.join(ROOT, "test", "lib", "pgcluster")
SMTPD = os.path.join(ROOT, "test", "fixtures", "smtpd.py")
PEERS_JS = os.path.join(ROOT, "bench", "peers.mjs")
PGQUE_BENCH_SQL = os.path.join(ROOT, "bench", "pgque.sql")
NPM = os.environ.get("NPM", "npm")
NODE = os.environ.get("NODE", "node")
# The peers of `make bench-peers`, installed from npm into the work directory at these versions.
PEERS = (("graphile-worker", os.environ.get("GRAPHILE_WORKER_VERSION", "0.18.0")),
         ("pg-boss", os.environ.get("PG_BOSS_VERSION", "12.38.0")))
PEER_SINK_SQL = ("CREATE TABLE bench_sink (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text NOT NULL,"
                 " at timestamptz NOT NULL DEFAULT clock_timestamp())")
# PgQue (bench/run pgque, part of make bench-peers): its single SQL file from a local path, never
# downloaded. PgQue's consumers get the backlog in ticks of PGQUE_TICK_EVENTS, its default
# queue_ticker_max_count.
PGQUE_SQL = os.environ.get("PGQUE_SQL", "")
PGQUE_EVENTS = int(os.environ.get("PGQUE_EVENTS", "100000"))
PGQUE_TICK_EVENTS = int(os.environ.get("PGQUE_TICK_EVENTS", "500"))
PGQUE_WORKERS = (1, 4)              # 1 consumer, and 4 cooperative subconsumers of one consumer
PGQUE_BULK = 100000                 # events queued by one statement
PGQUE_SESSIONS = 8                  # producers of one event per transaction
BLOAT_EVENTS = int(os.environ.get("BLOAT_EVENTS", "1000000"))
BLOAT_ROUNDS = int(os.environ.get("BLOAT_ROUNDS", "2"))
PROCESSOR = os.path.join(ROOT, "processor", "build", "release", "pg_relay")
PGBENCH = os.environ.get("PGBENCH", "/usr/lib/postgresql/15/bin/pgbench")
PYTHON = "/usr/bin/python3"

# The sizes of the runs (docs/design/benchmark-notes.md explains each).
DRAIN_EVENTS = 20000
DRAIN_WORKERS = (4, 8)
DRAIN_BATCHES = (1, 10, 50, 100)     # --events-per-commit: one event per transaction, ..., the default 50
DEFAULT_BATCH = 50
LIMIT_CLIENTS = 4                   # the batched limit: DEFAULT_BATCH events per transaction
REPEATS = int(os.environ.get("REPEATS", "3"))   # every figure of the drains and the producers
LOG_ROWS = 1000000
PRODUCER_SESSIONS = (1, 8)
PRODUCER_SECONDS = 5
PROBE_SECONDS = 5
IDLE_SECONDS = 30
LATENCY_RATE = 200
LATENCY_SECONDS = 20
LATENCY_POLLS = ("1s", "100ms")     # the default poll interval, and a shorter one
EMAILS = 1000
EMAIL_WORKERS = (1, 4)
REDIS_EVENTS = 20000
REDIS_WORKERS = (4, 8)
KAFKA_EVENTS = 20000
KAFKA_WORKERS = (4, 8)
KAFKA_MOCK = os.path.join(ROOT, "processor", "build", "release", "tool_kafka_mock")
RMQ_EVENTS = 10000
RMQ_WORKERS = (4, 8)
ALLKINDS_EVENTS = int(os.environ.get("ALLKINDS_EVENTS", "1000"))  # events a channel in the all-kinds phase (one channel of each kind)
ALLKINDS_WORKERS = 8
HOOKD = os.path.join(ROOT, "test", "fixtures", "hookd.py")
# the rabbitmq phase's reference publisher (processor/test/amqp/tool_rmq_confirm.c)
TOOL_RMQ_CONFIRM = os.path.join(ROOT, "processor", "build", "release", "tool_rmq_confirm")

# Instructions per statement (callgrind): two runs of each statement, the difference divided by
# the difference of their lengths, so start-up and shut-down cancel out.
INSTR_RUNS = (200, 600)
# ... of the statements that finish a batch of DEFAULT_BATCH events each (process_batch and the
# batched limit's statement): fewer runs, as each is 50 events; reported per event.
INSTR_BATCH_RUNS = (10, 30)
VALGRIND = os.environ.get("VALGRIND", "valgrind")

# The web console's pages against a big history (docs/console.md): CONSOLE_ROWS log rows spread
# over CONSOLE_DAYS days and CONSOLE_CHANNELS channels, each page loaded CONSOLE_LOADS times.
CONSOLE_ROWS = int(os.environ.get("CONSOLE_ROWS", "10000000"))
CONSOLE_DAYS = 10
CONSOLE_CHANNELS = 20
CONSOLE_LOADS = 20

# The held-snapshot phase: HELD_ROUNDS rounds of HELD_EVENTS events drained by a Processor with
# default settings (4 workers) while a REPEATABLE READ transaction stays open.
HELD_ROUNDS = int(os.environ.get("HELD_ROUNDS", "10"))
HELD_EVENTS = int(os.environ.get("HELD_EVENTS", "50000"))
HELD_PROBE_SECONDS = 2
HELD_VACUUM_WAIT = 180              # seconds to wait for autovacuum once the snapshot is gone
HELD_REPORT_WAIT = 25               # ... and then for the Processor's reports (every 10 s) to compact

METRICS_CHANNELS = 20
METRICS_QUEUED = 100000
METRICS_SCRAPES = 200

# The phases, in the order they run; bench/run PHASE... runs a subset (the table shows what ran).
# peers and pgque (make bench-peers) and bloat (a million events) run only when named.
# held runs last: the queue's indexes keep the pages its rounds needed.
PHASES = ("drains", "producers", "topics", "probe", "idle", "latency", "email", "redis", "metrics", "instructions", "console",
          "kafka", "rabbitmq", "allkinds", "held")
EXTRA_PHASES = ("peers", "pgque", "bloat")
RUN_ORDER = PHASES[:-1] + EXTRA_PHASES + ("held",)

# Durability as in production: the point is the database's real commit rate.
CLUSTER_CONF = ("fsync = on", "synchronous_commit = on", "full_page_writes = on")

TARGETS = {
    "single4": 0.85,    # one event per transaction, 4 workers: >= 85% of the pgbench floor
    "batched4": 1.5,    # the default batches, 4 workers: >= 1.5 times the floor of the same run
    "peers": 2.0,       # the default batches: >= 2 times the best peer, at 4 and at 8 workers
    "producer8": 0.80,  # notify() from 8 sessions: >= 80% of a plain insert with the same indexes
    "probe_server_us": 10.0,   # the probe's own cost in the server, with 1M log rows
    "probe_us": 50.0,   # probe <= 50 us with 1M log rows, as a client sees it
    "idle_cpu": 0.1,    # idle Processor < 0.1% CPU
    "idle_tx": 1.1,     # idle: one probe per poll interval (1 s), i.e. about 1 tx/s
    "rss_mb": 10.0,     # peak RSS <= 10 MB with 8 workers
    "email4": 0.70,     # emails/s at 4 workers >= 70% of the minimal client's floor
    "redis4": 0.5,      # events/s into a Redis stream at 4 workers >= 0.5 of redis-benchmark's XADD, 1 client
    "kafka4": 0.5,      # events/s into a Kafka topic at 4 workers >= 0.5 of kcat -P, one process, batched
    "rmq4": 0.5,        # events/s to RabbitMQ at 4 workers >= 0.5 of rabbitmq-c alone, 1 connection, the default
                        # batch in flight
    "console_ms": 100.0,  # every page of the web console, 10 million log rows: <= 100 ms (median)
    "limit4": 0.6,      # the default drain, 4 workers: >= 0.6 of the batched limit of the same run
    "pgque4": 0.4,      # the default drain, 4 workers: >= 0.4 times PgQue's best drain
    "pgque1": 0.3,      # the default drain, 1 worker: >= 0.3 times PgQue's best drain
    "contract4": 0.8,   # the default drain, 4 workers: >= 0.8 of the contract floor (4 sessions, each
                        # handler in a subtransaction + an audit row, the default batch per commit)
    "audit_share": 0.7,  # the contract floor: "handler + audit row" >= 0.7 of "handler only"
    "audit_delete": 1.5,  # the audit row <= 1.5 times the queue DELETE, per event in one transaction
    "instr_event": 4.0,  # process_one(): <= 4 times the floor statement's instructions (a guard: a plan
                         # that reads a catalog whole costs 100 times more, and no drain test would fail)
    "bulk_plain": 1.5,  # notify_many() of 1,000 payloads: <= 1.5 times a plain multi-row INSERT's time
    "publish5": 0.8,    # publish() to 5 subscribers: >= 0.8 of notify_many() of 5 payloads, calls per second
    "bulk": 0.8,        # one statement of notify() calls: >= 80% of PgQue's send_batch
    "held_rate": 0.9,   # held snapshot: the last round's drain >= 90% of the first's
    "held_probe_us": 100.0,   # held snapshot: the empty-queue probe in the server <= 100 us after every round
}

# One transaction per event doing what a drained event leaves behind: the queue row gone (taken
# in dispatch order, FOR UPDATE SKIP LOCKED), its log row, and the handler's one row.
# A plain single-row insert into a table with the queue's columns and indexes: what notify()
# is held against.
PLAIN_TABLE_SQL = """\
CREATE TABLE bench.plain (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, event_id bigint NOT NULL, channel text NOT NULL,
    action_type text NOT NULL, payload text NOT NULL, owner_node integer NOT NULL DEFAULT 0,
    node_restricted boolean NOT NULL DEFAULT false, attempt integer NOT NULL DEFAULT 1,
    run_at timestamptz NOT NULL DEFAULT now(), queued_at timestamptz NOT NULL DEFAULT now(), last_error text);
CREATE INDEX ON bench.plain (action_type, run_at, queued_at, id) WHERE NOT node_restricted;
CREATE INDEX ON bench.plain (node_restricted, owner_node, action_type, run_at, queued_at, id);
"""
NOTIFY_SQL = "SELECT pgrelay.notify('bench', 'order 42');\n"
# Bulk enqueue: BULK_PAYLOADS payloads in one statement, BULK_RUNS times for each way of queueing
# them; each statement's wall time, its commit included, on an empty table.
BULK_PAYLOADS = 1000
BULK_RUNS = 15
BULK_SQL = {
    "notify_many": "SELECT cardinality(pgrelay.notify_many('bench', ARRAY(SELECT 'event ' || g"
                   " FROM generate_series(1, %d) g)))" % BULK_PAYLOADS,
    "notify": "SELECT count(pgrelay.notify('bench', 'event ' || g)) FROM generate_series(1, %d) g" % BULK_PAYLOADS,
    "plain": "INSERT INTO bench.plain (event_id, channel, action_type, payload)"
             " SELECT g, 'bench', 'sql', 'event ' || g FROM generate_series(1, %d) g" % BULK_PAYLOADS,
}
# Topics: one call per transaction, one session (prepared): a publication to 1 and to 5 subscribers
# against notify() and notify_many() of as many rows, TOPIC_SECONDS each, REPEATS runs.
TOPIC_SECONDS = 5
TOPIC_SETUP_SQL = """\
SELECT count(pgrelay.register('sub' || n, 'sql', handler => 'bench.record(text)')) FROM generate_series(1, 5) n;
SELECT topic FROM pgrelay.create_topic('one');
SELECT topic FROM pgrelay.create_topic('five');
SELECT channel FROM pgrelay.subscribe('one', 'sub1');
SELECT count(pgrelay.subscribe('five', 'sub' || n)) FROM generate_series(1, 5) n;
"""
TOPIC_SQL = {
    "publish1": "SELECT pgrelay.publish('one', 'order 42');\n",
    "notify": "SELECT pgrelay.notify('sub1', 'order 42');\n",
    "publish5": "SELECT pgrelay.publish('five', 'order 42');\n",
    "notify_many5": "SELECT pgrelay.notify_many('sub1', ARRAY['order 42', 'order 42', 'order 42', 'order 42',"
                    " 'order 42']);\n",
}
PGQUE_SEND_SQL = "SELECT pgque.send('single', 'order 42');\n"
PLAIN_SQL = "INSERT INTO bench.plain (event_id, channel, action_type, payload) VALUES (0, 'bench', 'sql', 'order 42');\n"

FLOOR_SQL = """\
WITH d AS (
  DELETE FROM pgrelay.queue q
  WHERE q.id = (SELECT x.id FROM pgrelay.queue x
                WHERE NOT x.node_restricted AND x.action_type = 'sql' AND x.run_at <= now()
                ORDER BY x.run_at, x.queued_at, x.id
                LIMIT 1 FOR UPDATE SKIP LOCKED)
  RETURNING q.*
), h AS (
  INSERT INTO bench.sink (payload) SELECT d.payload FROM d
)
INSERT INTO pgrelay.log (queue_id, event_id, channel, action_type, payload, attempt, outcome,
                         node_id, queued_at, started_at, finished_at)
SELECT d.id, d.event_id, d.channel, d.action_type, d.payload, d.attempt, 'ok',
       0, d.queued_at, clock_timestamp(), clock_timestamp()
FROM d;
"""

# The batched limit: the floor's work for DEFAULT_BATCH events in one transaction, by plain SQL:
# that many queue rows taken in dispatch order FOR UPDATE SKIP LOCKED and deleted, their log rows
# and the handler's rows. What the default batches could reach without the contract's per-event
# work (the handler's subtransaction and dynamic call, the session reset, the checks).
LIMIT_SQL = """\
WITH d AS (
  DELETE FROM pgrelay.queue q
  WHERE q.id = ANY (ARRAY(SELECT x.id FROM pgrelay.queue x
                          WHERE NOT x.node_restricted AND x.action_type = 'sql' AND x.run_at <= now()
                          ORDER BY x.run_at, x.queued_at, x.id
                          LIMIT %d FOR UPDATE SKIP LOCKED))
  RETURNING q.*
), h AS (
  INSERT INTO bench.sink (payload) SELECT d.payload FROM d
)
INSERT INTO pgrelay.log (queue_id, event_id, channel, action_type, payload, attempt, outcome,
                         node_id, queued_at, started_at, finished_at)
SELECT d.id, d.event_id, d.channel, d.action_type, d.payload, d.attempt, 'ok',
       0, d.queued_at, clock_timestamp(), clock_timestamp()
FROM d;
""" % DEFAULT_BATCH

# The database floor of a broker phase: what any relay that keeps pg_relay's audit row must still
# write per event, with no broker at all. One statement a transaction: up to DEFAULT_BATCH due rows
# of the kind taken in dispatch order FOR UPDATE SKIP LOCKED and deleted, and a log row each with a
# detail of the shape the kind's Processor writes; BROKER_FLOOR_SESSIONS sessions at once, as the
# Processor's 4 workers; REPEATS runs, the best of them taken. No relay that keeps the audit row
# drains the phase's events faster at that batch and concurrency, whatever the broker.
BROKER_FLOOR_SESSIONS = 4
BROKER_FLOOR_SQL = """\
WITH d AS (
  DELETE FROM pgrelay.queue q
  WHERE q.id = ANY (ARRAY(SELECT x.id FROM pgrelay.queue x
                          WHERE NOT x.node_restricted AND x.action_type = '%(kind)s' AND x.run_at <= now()
                          ORDER BY x.run_at, x.queued_at, x.id
                          LIMIT %(batch)d FOR UPDATE SKIP LOCKED))
  RETURNING q.*
)
INSERT INTO pgrelay.log (queue_id, event_id, channel, action_type, payload, attempt, outcome, detail,
                         node_id, queued_at, started_at, finished_at)
SELECT d.id, d.event_id, d.channel, d.action_type, d.payload, d.attempt, 'ok', '%(detail)s',
       0, d.queued_at, clock_timestamp(), clock_timestamp()
FROM d;
"""
# (The redis detail's stream has no colon: pgbench would read ":events" as a variable.)
BROKER_FLOOR_DETAIL = {
    "redis": '{"stream": "bench-events", "host": "127.0.0.1", "port": 6379, "entry_id": "1700000000000-0",'
             ' "duplicate": false}',
    "kafka": '{"topic": "bench.events", "partition": 0, "offset": 0}',
    "rabbitmq": '{"exchange": "", "routing_key": "bench_events", "host": "127.0.0.1", "port": 5672,'
                ' "confirmed": true}',
}

# The contract's floor (the pgque phase): what any queue storage would still do per event under
# pg_relay's contract, with no queue at all. bench.contract_floor() takes its payloads from a
# counter: no claim, no queue row read or deleted, no dynamic call, no session reset, no checks;
# per event only the handler (the same bench.record() as PgQue's consumer calls), in a
# subtransaction of its own when subtxn, and per batch of per_commit events one multi-row INSERT of
# their audit rows into pgrelay.log (ids from its default, _next_id(), as the drain's) when audit,
# then COMMIT. The mixes of subtxn and audit show what each of the two costs; both on is the least
# a drain under the contract can do, at DEFAULT_BATCH events per commit and at PGQUE_TICK_EVENTS
# (the ticks PgQue's consumer commits; from 64 subtransactions a transaction overflows
# PostgreSQL's cache, which the figure then pays too).
# bench.write_costs() times the two writes a drain makes per event inside one transaction that the
# caller rolls back (so without a commit): the audit rows and the DELETE of the queue rows,
# per_batch at a time, of n events it queues first with notify().
CONTRACT_FLOOR_SQL = """\
CREATE PROCEDURE bench.contract_floor(first bigint, n integer, per_commit integer, subtxn boolean,
                                      audit boolean) LANGUAGE plpgsql AS $$
DECLARE
    batch_first bigint := first;
BEGIN
    FOR i IN first .. first + n - 1 LOOP
        IF subtxn THEN
            BEGIN
                PERFORM bench.record('event ' || i);
            EXCEPTION WHEN OTHERS THEN
                RAISE;   -- never taken: the handler does not fail here
            END;
        ELSE
            PERFORM bench.record('event ' || i);
        END IF;
        IF i - batch_first + 1 = per_commit OR i = first + n - 1 THEN
            IF audit THEN
                INSERT INTO pgrelay.log (queue_id, event_id, channel, action_type, payload, attempt, outcome,
                                         node_id, queued_at, started_at, finished_at)
                SELECT g, g, 'bench', 'sql', 'event ' || g, 1, 'ok', 0, now(), clock_timestamp(), clock_timestamp()
                FROM generate_series(batch_first, i) g;
            END IF;
            COMMIT;
            batch_first := i + 1;
        END IF;
    END LOOP;
END
$$;
CREATE FUNCTION bench.write_costs(n integer, per_batch integer, OUT audit_us double precision,
                                  OUT delete_us double precision)
LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
    t0 timestamptz;
BEGIN
    PERFORM pgrelay.notify('bench', 'event ' || g) FROM generate_series(1, n) g;
    ids := ARRAY(SELECT q.id FROM pgrelay.queue q ORDER BY q.id);
    t0 := clock_timestamp();
    FOR b IN 0 .. n / per_batch - 1 LOOP
        INSERT INTO pgrelay.log (queue_id, event_id, channel, action_type, payload, attempt, outcome,
                                 node_id, queued_at, started_at, finished_at)
        SELECT g, -g, 'bench', 'sql', 'event ' || g, 1, 'ok', 0, now(), clock_timestamp(), clock_timestamp()
        FROM unnest(ids[b * per_batch + 1 : (b + 1) * per_batch]) g;
    END LOOP;
    audit_us := 1e6 * extract(epoch FROM clock_timestamp() - t0) / n;
    t0 := clock_timestamp();
    FOR b IN 0 .. n / per_batch - 1 LOOP
        DELETE FROM pgrelay.queue q WHERE q.id = ANY (ids[b * per_batch + 1 : (b + 1) * per_batch]);
    END LOOP;
    delete_us := 1e6 * extract(epoch FROM clock_timestamp() - t0) / n;
END
$$;
"""
# The mixes of the contract's floor, in the order they run: (subtxn, audit, events per commit, label).
CONTRACT_MIXES = ((False, False, DEFAULT_BATCH, "handler only"),
                  (True, False, DEFAULT_BATCH, "handler in a subtransaction"),
                  (False, True, DEFAULT_BATCH, "handler + audit row"),
                  (True, True, DEFAULT_BATCH, "handler in a subtransaction + audit row"),
                  (False, False, PGQUE_TICK_EVENTS, "handler only"),
                  (True, True, PGQUE_TICK_EVENTS, "handler in a subtransaction + audit row"))
WRITE_COST_EVENTS = 20000

SETUP_SQL = """\
CREATE EXTENSION pg_relay;
CREATE EXTENSION pg_relay_notifier;
CREATE ROLE relay LOGIN IN ROLE pgrelay_processor;
CREATE SCHEMA bench;
GRANT USAGE ON SCHEMA bench TO pgrelay_processor;
CREATE TABLE bench.sink (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text NOT NULL,
                         at timestamptz NOT NULL DEFAULT clock_timestamp());
GRANT INSERT ON bench.sink TO pgrelay_processor;
CREATE FUNCTION bench.record(payload text) RETURNS void LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO bench.sink (payload) VALUES (payload);
END
$$;
GRANT EXECUTE ON FUNCTION bench.record(text) TO pgrelay_processor;
CREATE FUNCTION bench.probe_loop(n integer, bound jsonb DEFAULT NULL) RETURNS double precision
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
    r record;
BEGIN
    -- with a bound, as the Processor calls it: each call gets the bound the last one returned
    FOR i IN 1..n LOOP
        SELECT * INTO r FROM pgrelay.queue_probe(NULL, bound);
        bound := r.next_bound;
    END LOOP;
    RETURN 1e6 * extract(epoch FROM clock_timestamp() - t0) / n;
END
$$;
-- The bound a Processor's probes would hold by now: probed until every action type has a floor
-- above the rows the queue had when it began (at most 5 s).
CREATE FUNCTION bench.warm_bound() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    b jsonb := '{}';
    r record;
    t0 timestamptz := clock_timestamp();
BEGIN
    LOOP
        SELECT * INTO r FROM pgrelay.queue_probe(NULL, b);
        b := r.next_bound;
        EXIT WHEN clock_timestamp() - t0 > interval '5 s'
            OR (b ->> 'safe')::timestamptz > t0 + interval '100 ms'
               AND (SELECT count(*) FROM jsonb_object_keys(b -> 'floor')) = (SELECT count(*) FROM pgrelay.action_types);
        PERFORM pg_sleep(0.02);
    END LOOP;
    RETURN b;
END
$$;
SELECT channel FROM pgrelay.register('bench', 'sql', handler => 'bench.record(text)');
SELECT channel FROM pgrelay.register('latency', 'sql', handler => 'bench.record(text)');
"""


def say(msg):
    print(msg, file=sys.stderr, flush=True)


# ---- instructions per statement, counted by callgrind (also test/guard/test_instructions.py) -----

# The held batch (INSTR_STATEMENTS' held): a redis channel's events, claimed and finished as a
# Processor's redis worker does (processor/src/dispatch/held.c: BEGIN; _destination_claim_many;
# every event appended; _finish_held_many, every attempt ok with the entry's id as its detail;
# COMMIT), the arrays as literals, as the Processor sends them. Each statement's rows are counted,
# as process_batch's are: the single-user server's debug print of every column would cost more than
# the functions' own work on them.
INSTR_HELD_SETUP_SQL = """\
SELECT channel FROM pgrelay.register('bench_redis', 'redis', settings => '{"host": "127.0.0.1", "maxlen": 100000}');
"""
INSTR_HELD_PREPARE = (
    "PREPARE c(bigint[]) AS SELECT count(*) FROM pgrelay._destination_claim_many($1);\n\n"
    "PREPARE f(bigint[], text[], text[], text[], timestamptz[], jsonb[]) AS SELECT count(*)"
    " FROM pgrelay._finish_held_many($1, $2, $3, $4, $5, $6)")
INSTR_HELD_EXECUTE = (
    "BEGIN;\n\nEXECUTE c('{%s}');\n\nEXECUTE f('{%s}', '{" + ",".join(["ok"] * DEFAULT_BATCH) + "}', '{"
    + ",".join(["NULL"] * DEFAULT_BATCH) + "}', '{" + ",".join(["NULL"] * DEFAULT_BATCH) + "}', '{"
    + ",".join(['"2026-01-01 00:00:00+00"'] * DEFAULT_BATCH) + "}', '{"
    + ",".join(['"{\\"entry_id\\": \\"1700000000000-%d\\"}"' % i for i in range(DEFAULT_BATCH)])
    + "}');\n\nCOMMIT")
# ... and its floor: the same writes in one plain statement (the batch's queue rows deleted, a log
# row each), with no claim, no checks and no settings.
HELD_FLOOR_SQL = """\
WITH d AS (
  DELETE FROM pgrelay.queue q WHERE q.id = ANY ($1) RETURNING q.*
)
INSERT INTO pgrelay.log (queue_id, event_id, channel, action_type, payload, attempt, outcome, detail,
                         node_id, queued_at, started_at, finished_at)
SELECT d.id, d.event_id, d.channel, d.action_type, d.payload, d.attempt, 'ok', '{"entry_id": "1700000000000-0"}',
       0, d.queued_at, clock_timestamp(), clock_timestamp()
FROM d;
"""

INSTR_STATEMENTS = (
    # name, PREPARE, EXECUTE (format with the i-th queued id), what the run must leave behind
    ("select1", "PREPARE p AS SELECT 1", "EXECUTE p", None),
    ("plain", "PREPARE p AS " + PLAIN_SQL.strip().rstrip(";"), "EXECUTE p", None),
    ("notify", "PREPARE p AS " + NOTIFY_SQL.strip().rstrip(";"), "EXECUTE p", None),
    ("floor", "PREPARE p AS " + " ".join(FLOOR_SQL.split()).rstrip(";"), "EXECUTE p", "log"),
    ("process_one", "PREPARE p(bigint) AS SELECT outcome FROM pgrelay.process_one($1)", "EXECUTE p(%d)", "log"),
    # a batch of DEFAULT_BATCH events per statement (%s: the batch's ids), reported per event
    ("limit", "PREPARE p AS " + " ".join(LIMIT_SQL.split()).rstrip(";"), "EXECUTE p", "batch"),
    ("process_batch", "PREPARE p(bigint[]) AS SELECT count(*) FROM pgrelay.process_batch($1)", "EXECUTE p('{%s}')",
     "batch"),
    # a broker kind's batch of DEFAULT_BATCH events of a redis channel (INSTR_HELD_SETUP_SQL; nothing is
    # sent): the Processor's claim and finish in one transaction, and a statement doing the same
    # writes in plain SQL (the queue rows deleted, their log rows written); reported per event
    ("held", INSTR_HELD_PREPARE, INSTR_HELD_EXECUTE, "held"),
    ("held_floor", "PREPARE p(bigint[]) AS " + " ".join(HELD_FLOOR_SQL.split()).rstrip(";"), "EXECUTE p('{%s}')",
     "held"),
    # a publication to 5 subscribers, and notify_many() of as many rows (TOPIC_SETUP_SQL)
    ("publish5", "PREPARE p AS " + TOPIC_SQL["publish5"].strip().rstrip(";"), "EXECUTE p", None),
    ("notify_many5", "PREPARE p AS " + TOPIC_SQL["notify_many5"].strip().rstrip(";"), "EXECUTE p", None),
)


def _pgcluster(*args):
    return subprocess.run([PGCLUSTER] + list(args), check=True, stdout=subprocess.PIPE, text=True).stdout.strip()


def _instructions_run(work, base, name, prepare, execute, n, ids):
    """Instructions of a single-user server on a copy of the stopped cluster in base that runs
    PREPARE and then n EXECUTEs, each its own transaction; and how many events it logged."""
    run = os.path.join(work, "instr-run")
    shutil.rmtree(run, ignore_errors=True)
    subprocess.run(["cp", "-a", base, run], check=True)
    if "%s" in execute:    # a batch: the i-th DEFAULT_BATCH ids (each %s of execute)
        lines = [prepare] + [execute.replace("%s", ",".join(str(x) for x in ids[i * DEFAULT_BATCH:(i + 1) * DEFAULT_BATCH]))
                             for i in range(n)]
    else:
        lines = [prepare] + [execute % ids[i] if "%d" in execute else execute for i in range(n)]
    lines.append("SELECT count(*) AS logged FROM pgrelay.log")
    script = "".join(line + ";\n\n" for line in lines)   # -j: a statement ends with ;<blank line>
    out = subprocess.run([PGCLUSTER, "single", run, "bench", VALGRIND, "--tool=callgrind",
                          "--callgrind-out-file=/dev/null"],
                         input=script, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    shutil.rmtree(run, ignore_errors=True)
    total = re.search(r"Collected : (\d+)", out.stderr)
    logged = re.findall(r'logged = "(\d+)"', out.stdout)
    if out.returncode != 0 or not total or not logged or "ERROR" in out.stdout + out.stderr:
        raise RuntimeError("single-user run of %s failed:\n%s%s" % (name, out.stdout[-2000:], out.stderr[-2000:]))
    return int(total.group(1)), int(logged[-1])


def instructions(work, names=None, runs=INSTR_RUNS, batch_runs=INSTR_BATCH_RUNS):
    """{name: instructions per statement (per event for a batch)} of INSTR_STATEMENTS (or those
    named), each run runs times (batch_runs for a batch) in a single-user server
    under callgrind on a cluster made in work (PGRELAY_PG_PREFIX must hold the prefix): the
    difference of two run lengths, so that start-up and shut-down cancel out. Deterministic for
    a given build and server: the same counts on every run, whatever the machine does."""
    base = os.path.join(work, "instr")
    _pgcluster("init", base)
    port = int(_pgcluster("start", base))
    try:
        with psycopg.connect("host=%s port=%d dbname=postgres user=postgres" % (base, port), autocommit=True) as c:
            c.execute("CREATE DATABASE bench")
        with psycopg.connect("host=%s port=%d dbname=bench user=postgres" % (base, port), autocommit=True) as c:
            c.execute(SETUP_SQL)
            c.execute(PLAIN_TABLE_SQL)
            c.execute(TOPIC_SETUP_SQL)
            c.execute(INSTR_HELD_SETUP_SQL)
            ids = [i for (i,) in c.execute("SELECT pgrelay.notify('bench', 'event ' || g)"
                                            " FROM generate_series(1, %s) g",
                                            (max(runs[1], batch_runs[1] * DEFAULT_BATCH),)).fetchall()]
            held_ids = [i for (i,) in c.execute("SELECT pgrelay.notify('bench_redis', 'event ' || g)"
                                                 " FROM generate_series(1, %s) g",
                                                 (batch_runs[1] * DEFAULT_BATCH,)).fetchall()]
            c.execute("VACUUM ANALYZE")
    finally:
        _pgcluster("stop", base)
    per = {}
    for name, prepare, execute, check in INSTR_STATEMENTS:
        if names is not None and name not in names:
            continue
        n, events = (batch_runs, DEFAULT_BATCH) if check in ("batch", "held") else (runs, 1)
        (t0, log0), (t1, log1) = [_instructions_run(work, base, name, prepare, execute, k,
                                                    held_ids if check == "held" else ids) for k in n]
        if check in ("log", "batch", "held") and (log0, log1) != (n[0] * events, n[1] * events):
            raise RuntimeError("%s logged %d and %d events, not %d and %d"
                               % (name, log0, log1, n[0] * events, n[1] * events))
        per[name] = (t1 - t0) / float((n[1] - n[0]) * events)
    shutil.rmtree(base, ignore_errors=True)
    return per


class Bench:
    def __init__(self):
        base = tempfile.mkdtemp(prefix="pgrelay-bench.", dir="/tmp")
        os.chmod(base, 0o755)
        self.work = base
        self.cluster = os.path.join(base, "db")
        os.environ["PGRELAY_PG_PREFIX"] = os.path.join(base, "pg")
        self.children = []   # Popen objects we started, stopped at the end
        self.results = {}
        self.smtpd = None
        self.contract_runs = 0   # contract_floor() runs so far: each takes its own range of ids

    # ---- set-up -------------------------------------------------------------------------------

    def pgcluster(self, *args):
        return subprocess.run([PGCLUSTER] + list(args), check=True, stdout=subprocess.PIPE,
                              text=True).stdout.strip()

    def setup(self):
        say("setting up a throwaway cluster in %s (asking for %s)" % (self.work, ", ".join(CLUSTER_CONF)))
        self.pgcluster("prefix", os.environ["PGRELAY_PG_PREFIX"])
        self.pgcluster("init", self.cluster, *CLUSTER_CONF)
        self.port = int(self.pgcluster("start", self.cluster))
        self.admin = self.connect("postgres")
        self.admin.execute("CREATE DATABASE bench")
        self.db = self.connect("bench")
        self.db.execute(SETUP_SQL)
        self.pg_version = self.db.execute("SHOW server_version").fetchone()[0]
        self.settings = self.settings_in_effect()
        say("cluster settings in effect: " + self.settings)

    def fill_log(self, rows):
        """Adds history rows to pgrelay.log until it has `rows`."""
        have = self.scalar("SELECT count(*) FROM pgrelay.log")
        if have >= rows:
            return
        say("pgrelay.log: adding %d rows of history (has %d)" % (rows - have, have))
        # Small ids cannot meet the ones _next_id() makes (those start with the time since 2026).
        first = self.scalar("SELECT COALESCE(max(id), 0) + 1 FROM pgrelay.log WHERE id < 1000000000")
        self.db.execute("""
            INSERT INTO pgrelay.log (id, queue_id, event_id, channel, action_type, payload, attempt,
                                     outcome, node_id, queued_at, started_at, finished_at)
            SELECT g, g, g, 'bench', 'sql', 'event ' || g, 1, 'ok', 0, now(), now(), now()
            FROM generate_series(%s::bigint, %s::bigint) g""", (first, first + rows - have - 1))
        self.db.execute("VACUUM ANALYZE pgrelay.log")

    def dsn(self, dbname="bench", user="postgres"):
        return "host=%s port=%d dbname=%s user=%s" % (self.cluster, self.port, dbname, user)

    def connect(self, dbname="bench", user="postgres"):
        return psycopg.connect(self.dsn(dbname, user), autocommit=True)

    def sql(self, query, params=None):
        cur = self.db.execute(query, params)
        return cur.fetchall() if cur.description is not None else []

    def scalar(self, query, params=None):
        return self.db.execute(query, params).fetchone()[0]

    def refill(self, n, channel="bench"):
        """An empty, vacuumed queue, then n due events queued with pgrelay.notify() in one
        transaction, fresh statistics and a checkpoint, so every run starts from the same state."""
        assert self.scalar("SELECT count(*) FROM pgrelay.queue") == 0, "queue not drained"
        self.db.execute("VACUUM pgrelay.queue")
        self.db.execute("SELECT count(pgrelay.notify(%s, 'event ' || g)) FROM generate_series(1, %s) g",
                        (channel, n))
        self.db.execute("VACUUM ANALYZE pgrelay.queue, pgrelay.log, bench.sink")
        self.db.execute("CHECKPOINT")

    def refill_topic(self, n):
        """As refill, but n events made by n / 5 publish() calls to the topic 'five' (TOPIC_SETUP_SQL):
        5 deliveries each, one on each subscriber's channel."""
        assert self.scalar("SELECT count(*) FROM pgrelay.queue") == 0, "queue not drained"
        self.db.execute("VACUUM pgrelay.queue")
        self.db.execute("SELECT count(pgrelay.publish('five', 'event ' || g)) FROM generate_series(1, %s) g",
                        (n // 5,))
        self.db.execute("VACUUM ANALYZE pgrelay.queue, pgrelay.log, bench.sink")
        self.db.execute("CHECKPOINT")

    # ---- the Processor ----------------------------------------------------------------------

    def start_processor(self, name, args, env=None):
        logpath = os.path.join(self.work, name + ".log")
        logf = open(logpath, "wb")
        wrap = os.environ.get("PROCESSOR_WRAP", "").split()   # e.g. valgrind --tool=massif (bench/run)
        p = subprocess.Popen(wrap + [PROCESSOR, "-d", self.dsn(user="relay")] + args, stdout=logf,
                             stderr=subprocess.STDOUT, env=None if env is None else dict(os.environ, **env))
        p.logpath = logpath
        p.logf = logf
        self.children.append(p)
        return p

    @staticmethod
    def log_text(p):
        with open(p.logpath, errors="replace") as f:
            return f.read()

    def wait_log(self, p, pattern, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(pattern, self.log_text(p), re.M):
                return
            if p.poll() is not None:
                raise RuntimeError("processor exited early:\n" + self.log_text(p)[-3000:])
            time.sleep(0.05)
        raise RuntimeError("timed out waiting for %r:\n%s" % (pattern, self.log_text(p)[-3000:]))

    def batches(self, p):
        """(processed, ok, duration_ms) summed over the "batch" lines logged so far."""
        processed = ok = ms = 0
        for m in re.finditer(r" batch rounds=\d+ processed=(\d+) ok=(\d+) .* duration_ms=(\d+)",
                             self.log_text(p)):
            processed += int(m.group(1))
            ok += int(m.group(2))
            ms += int(m.group(3))
        return processed, ok, ms

    def wait_batches(self, p, n, timeout=300):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            processed, ok, ms = self.batches(p)
            if processed >= n:
                return processed, ok, ms
            if p.poll() is not None:
                raise RuntimeError("processor exited early:\n" + self.log_text(p)[-3000:])
            time.sleep(0.05)
        raise RuntimeError("timed out after %d of %d events:\n%s" % (self.batches(p)[0], n,
                                                                      self.log_text(p)[-3000:]))

    @staticmethod
    def proc_status(pid):
        out = {}
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "Threads"):
                    out[k] = int(v.split()[0])   # kB
        return out

    @staticmethod
    def cpu_seconds(pid):
        """utime + stime of the whole process (all threads), from /proc/PID/stat, and the same
        from the threads' schedstat (nanoseconds, for a finer reading)."""
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        stat = (int(fields[11]) + int(fields[12])) / ticks
        ns = 0
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                    ns += int(f.read().split()[0])
            except OSError:
                pass
        return stat, ns / 1e9

    @staticmethod
    def terminate(p, timeout):
        """SIGTERM, then SIGKILL if it has not exited within timeout seconds."""
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    def stop_processor(self, p):
        self.terminate(p, 60)
        p.logf.close()
        self.children.remove(p)
        if p.returncode != 0:
            raise RuntimeError("processor exited with %s:\n%s" % (p.returncode, self.log_text(p)[-3000:]))

    # ---- pgbench ----------------------------------------------------------------------------

    def pgbench(self, script_sql, args, dbname="bench"):
        path = os.path.join(self.work, "script-%d.sql" % abs(hash(script_sql)))
        with open(path, "w") as f:
            f.write(script_sql)
        cmd = [PGBENCH, "-n", "-h", self.cluster, "-p", str(self.port), "-U", "postgres", "-f", path] \
            + args + [dbname]
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True).stdout
        tps = float(re.search(r"^tps = ([0-9.]+) \(without initial connection time\)", out, re.M).group(1))
        lat = float(re.search(r"^latency average = ([0-9.]+) ms", out, re.M).group(1))
        failed = re.search(r"^number of failed transactions: (\d+)", out, re.M)
        if failed and int(failed.group(1)) != 0:
            raise RuntimeError("pgbench had failed transactions:\n" + out)
        return tps, lat

    # ---- 1, 2, 5: drain rate against the floor, peak RSS ------------------------------------

    def drain(self, workers, per_commit, events=DRAIN_EVENTS, name="drain", fill=None):
        (fill or self.refill)(events)
        logged = self.scalar("SELECT count(*) FROM pgrelay.log")
        p = self.start_processor("%s-%d-%d" % (name, workers, per_commit),
                                 ["--workers=%d" % workers, "--events-per-commit=%d" % per_commit])
        processed, ok, ms = self.wait_batches(p, events, timeout=max(300, events // 100))
        status = self.proc_status(p.pid)   # VmHWM at the end of the drain, before it exits
        self.stop_processor(p)
        if ok != events or self.scalar("SELECT count(*) FROM pgrelay.log") - logged != events:
            raise RuntimeError("drain with %d workers: %d processed, %d ok" % (workers, processed, ok))
        rate = events / (ms / 1000.0)
        say("  Processor, %d workers, %3d events per commit: %d events in %d ms = %.0f events/s, VmHWM %d kB"
            % (workers, per_commit, events, ms, rate, status["VmHWM"]))
        return rate, status

    def floor(self, clients):
        self.refill(DRAIN_EVENTS)
        tps, _ = self.pgbench(FLOOR_SQL, ["-M", "prepared", "-c", str(clients), "-j", str(clients),
                                          "-t", str(DRAIN_EVENTS // clients)])
        left = self.scalar("SELECT count(*) FROM pgrelay.queue")
        if left != 0:
            raise RuntimeError("the floor run left %d events" % left)
        say("  pgbench floor, %d clients: %.0f tx/s" % (clients, tps))
        return tps

    def batched_limit(self, clients):
        """The floor's work in transactions of DEFAULT_BATCH events (LIMIT_SQL), in events/s."""
        self.refill(DRAIN_EVENTS)
        rate = self.batched_pgbench(LIMIT_SQL, clients, DRAIN_EVENTS, "the batched limit")
        say("  pgbench batched limit, %d clients, %d events per transaction: %.0f tx/s = %.0f events/s"
            % (clients, DEFAULT_BATCH, rate / DEFAULT_BATCH, rate))
        return rate

    def batched_pgbench(self, script_sql, clients, events, what):
        """script_sql (one statement taking up to DEFAULT_BATCH queued events) run by pgbench from
        `clients` sessions until the `events` queued ones are gone; in events/s."""
        per_client = events // (DEFAULT_BATCH * clients)
        logged = self.scalar("SELECT count(*) FROM pgrelay.log")
        tps, _ = self.pgbench(script_sql, ["-M", "prepared", "-c", str(clients), "-j", str(clients),
                                           "-t", str(per_client)])
        # Every event gone in clients * per_client transactions of at most DEFAULT_BATCH each:
        # so each took a full batch, and tps * DEFAULT_BATCH is the event rate.
        left = self.scalar("SELECT count(*) FROM pgrelay.queue")
        added = self.scalar("SELECT count(*) FROM pgrelay.log") - logged
        if left != 0 or added != events or per_client * clients * DEFAULT_BATCH != events:
            raise RuntimeError("%s left %d events and wrote %d log rows" % (what, left, added))
        return tps * DEFAULT_BATCH

    @staticmethod
    def drains_logged():
        """The log rows the drains phase adds: every drain and floor run, and the batched limit."""
        return (len(DRAIN_WORKERS) * (len(DRAIN_BATCHES) + 1) + 1) * REPEATS * DRAIN_EVENTS

    def run_drains(self):
        # History first: a drain against an empty pgrelay.log is not the steady state (and an
        # ANALYZE of the empty log makes the Processor's sessions cache sequential scans of it,
        # docs/design/benchmark-notes.md). The probe phase then tops the log up to LOG_ROWS.
        self.fill_log(LOG_ROWS - self.drains_logged())
        say("drain: %d due events on a sql channel whose handler inserts one row; %d runs of each figure,"
            " the floor of each worker count in every run" % (DRAIN_EVENTS, REPEATS))
        r = self.results
        r["drain"], r["floor"], r["rss"], r["limit"] = {}, {}, {}, []
        for rep in range(REPEATS):
            say(" run %d of %d" % (rep + 1, REPEATS))
            for n in DRAIN_WORKERS:
                r["floor"].setdefault(n, []).append(self.floor(n))
                if n == LIMIT_CLIENTS:
                    r["limit"].append(self.batched_limit(n))
                for size in DRAIN_BATCHES:
                    rate, status = self.drain(n, size)
                    r["drain"].setdefault((n, size), []).append(rate)
                    if status["VmHWM"] > r["rss"].get(n, {"VmHWM": 0})["VmHWM"]:
                        r["rss"][n] = status
        self.db.execute("TRUNCATE bench.sink")

    # ---- producers: notify() against a plain insert ------------------------------------------

    def producer_run(self, script, sessions):
        self.db.execute("VACUUM ANALYZE pgrelay.queue, bench.plain")
        self.db.execute("CHECKPOINT")
        tps, _ = self.pgbench(script, ["-M", "prepared", "-c", str(sessions), "-j", str(sessions),
                                       "-T", str(PRODUCER_SECONDS)])
        return tps

    def run_producers(self):
        say("producers: one notify() per transaction against a plain insert into a table with the queue's"
            " indexes, %s sessions, %d s each, %d runs" % (" and ".join(map(str, PRODUCER_SESSIONS)),
                                                           PRODUCER_SECONDS, REPEATS))
        self.db.execute(PLAIN_TABLE_SQL)
        assert self.scalar("SELECT count(*) FROM pgrelay.queue") == 0, "queue not drained"
        self.db.execute("TRUNCATE pgrelay.queue")
        r = self.results
        r["notify"], r["plain"] = {}, {}
        for rep in range(REPEATS):
            for n in PRODUCER_SESSIONS:
                r["notify"].setdefault(n, []).append(self.producer_run(NOTIFY_SQL, n))
                r["plain"].setdefault(n, []).append(self.producer_run(PLAIN_SQL, n))
                say("  %d sessions: notify %.0f/s, plain insert %.0f/s" % (n, r["notify"][n][-1], r["plain"][n][-1]))
                # Both tables start every run empty and alike (the queue is empty here, and the
                # bench owns it): a queue left with the drains' emptied pages is not the same table.
                self.db.execute("TRUNCATE pgrelay.queue, bench.plain")
        r["bulk_ms"] = {what: [] for what in BULK_SQL}
        for _ in range(BULK_RUNS):
            for what in BULK_SQL:
                r["bulk_ms"][what].append(self.bulk_statement(what))
        say("  bulk, %d payloads in one statement (median of %d): %s" % (
            BULK_PAYLOADS, BULK_RUNS, ", ".join("%s %.1f ms" % (w, statistics.median(v))
                                                for w, v in r["bulk_ms"].items())))

    def run_topics(self):
        say("topics: publish() to 1 and to 5 subscribers against notify() and notify_many() of as many rows,"
            " one call per transaction, 1 session, %d s each, %d runs" % (TOPIC_SECONDS, REPEATS))
        self.db.execute(TOPIC_SETUP_SQL)
        r = self.results
        r["topics"] = {what: [] for what in TOPIC_SQL}
        for _ in range(REPEATS):
            for what, script in TOPIC_SQL.items():
                self.db.execute("TRUNCATE pgrelay.queue")
                self.db.execute("VACUUM ANALYZE pgrelay.queue")
                self.db.execute("CHECKPOINT")
                tps, _ = self.pgbench(script, ["-M", "prepared", "-c", "1", "-j", "1", "-T", str(TOPIC_SECONDS)])
                r["topics"][what].append(tps)
            say("  " + ", ".join("%s %.0f/s" % (w, v[-1]) for w, v in r["topics"].items()))
        self.db.execute("TRUNCATE pgrelay.queue")
        # The drain of published events: deliveries are ordinary events, spread over 5 channels.
        say("  the default drain, 4 workers, of %d events: published to 5 subscribers, and notified on one"
            " channel" % DRAIN_EVENTS)
        fanout, _ = self.drain(4, DEFAULT_BATCH, name="fanout", fill=self.refill_topic)
        plain, _ = self.drain(4, DEFAULT_BATCH, name="plain")
        r["topics_drain"] = {"published": fanout, "notified": plain}
        say("  drain of published events: %.2f of the drain of notified events" % (fanout / plain))
        self.db.execute("SELECT pgrelay.drop_topic('one'), pgrelay.drop_topic('five')")

    def bulk_statement(self, what):
        """One statement of BULK_SQL[what] in its own transaction on an empty queue and table: its
        wall time in ms, the commit included."""
        self.db.execute("TRUNCATE pgrelay.queue, bench.plain")
        t0 = time.monotonic()
        self.db.execute(BULK_SQL[what])
        ms = (time.monotonic() - t0) * 1000
        table = "bench.plain" if what == "plain" else "pgrelay.queue"
        n = self.scalar("SELECT count(*) FROM %s" % table)
        if n != BULK_PAYLOADS:
            raise RuntimeError("bulk %s queued %d rows, not %d" % (what, n, BULK_PAYLOADS))
        self.db.execute("TRUNCATE pgrelay.queue, bench.plain")
        return ms

    # ---- peers: graphile-worker and pg-boss on the same cluster (make bench-peers) -----------

    def sink_rate(self, conn, table):
        """Events per second from the first to the last row a drain's handlers inserted."""
        n, secs = conn.execute("SELECT count(*), extract(epoch FROM max(at) - min(at)) FROM %s" % table).fetchone()
        return n / float(secs)

    def relay_peer_run(self, workers, events=DRAIN_EVENTS):
        """pg_relay's drain with the default batches, timed as the peers' are: from its sink."""
        self.db.execute("TRUNCATE bench.sink")
        self.drain(workers, DEFAULT_BATCH, events)
        rate = self.sink_rate(self.db, "bench.sink")
        say("    (from its handler's rows: %.0f events/s)" % rate)
        return rate

    def peer_run(self, name, workers):
        conn, env = self.peer_db[name]
        conn.execute("TRUNCATE bench_sink")
        conn.execute("VACUUM ANALYZE")
        subprocess.run([NODE, "peers.mjs", "setup", name, str(DRAIN_EVENTS)], cwd=self.peer_dir, env=env,
                       check=True, stdout=subprocess.DEVNULL)
        conn.execute("CHECKPOINT")
        logf = open(os.path.join(self.work, "peer-%s-%d.log" % (name, workers)), "wb")
        p = subprocess.Popen([NODE, "peers.mjs", "run", name, str(workers)], cwd=self.peer_dir, env=env,
                             stdout=logf, stderr=subprocess.STDOUT)
        p.logf = logf
        self.children.append(p)
        deadline = time.monotonic() + 600
        while conn.execute("SELECT count(*) FROM bench_sink").fetchone()[0] < DRAIN_EVENTS:
            if p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("%s did not finish its %d jobs (see %s)" % (name, DRAIN_EVENTS, logf.name))
            time.sleep(0.05)
        self.terminate(p, 30)
        logf.close()
        self.children.remove(p)
        rate = self.sink_rate(conn, "bench_sink")
        say("  %s, %d workers: %.0f jobs/s" % (name, workers, rate))
        return rate

    def run_peers(self):
        self.fill_log(LOG_ROWS - self.drains_logged())
        self.peer_dir = os.path.join(self.work, "peers")
        os.makedirs(self.peer_dir)
        with open(os.path.join(self.peer_dir, "package.json"), "w") as f:
            f.write('{"private": true}\n')
        shutil.copy(PEERS_JS, self.peer_dir)
        wanted = ["%s@%s" % p for p in PEERS] + ["pg"]
        say("peers: npm install %s (into %s)" % (" ".join(wanted), self.peer_dir))
        subprocess.run([NPM, "install", "--no-audit", "--no-fund", "--loglevel=error"] + wanted,
                       cwd=self.peer_dir, check=True, stdout=subprocess.DEVNULL)
        self.peer_db = {}
        for name, _ in PEERS:
            dbname = "peer_" + re.sub(r"[^a-z]", "_", name)
            self.admin.execute('CREATE DATABASE "%s"' % dbname)
            conn = self.connect(dbname)
            conn.execute(PEER_SINK_SQL)
            env = dict(os.environ, PGHOST=self.cluster, PGPORT=str(self.port), PGUSER="postgres",
                       PGDATABASE=dbname, NO_LOG_SUCCESS="1")
            self.peer_db[name] = (conn, env)
        say("drain: %d jobs whose handler inserts one row, pg_relay and each peer, %d runs" % (DRAIN_EVENTS, REPEATS))
        r = self.results
        relay, peers = {}, {}
        for rep in range(REPEATS):
            for n in DRAIN_WORKERS:
                relay.setdefault(n, []).append(self.relay_peer_run(n))
                for name, _ in PEERS:
                    peers.setdefault((name, n), []).append(self.peer_run(name, n))
        how = {"graphile-worker": "concurrentJobs=N, localQueue 500, completeJobBatchDelay 0",
               "pg-boss": "localConcurrency=N, batchSize 50, burstWhenBatchFull, poll 0.5 s"}
        r["peers"] = [(n, "pg_relay, default batches (from its rows)", relay[n], "") for n in DRAIN_WORKERS]
        r["peers"] += [(n, "%s %s" % (name, ver), peers[(name, n)], how[name]) for name, ver in PEERS
                       for n in DRAIN_WORKERS]
        r["peer_relay"] = {n: statistics.median(relay[n]) for n in DRAIN_WORKERS}
        r["best_peer"] = {n: max(statistics.median(peers[(name, n)]) for name, _ in PEERS) for n in DRAIN_WORKERS}
        for conn, _ in self.peer_db.values():
            conn.close()

    # ---- pgque: PgQue on the same cluster (bench/run pgque, part of make bench-peers) ----------

    def run_pgque(self):
        if not PGQUE_SQL:
            say("pgque: PGQUE_SQL is not set (the path of PgQue's sql/pgque.sql); skipped")
            return
        if not os.path.isfile(PGQUE_SQL):
            raise RuntimeError("pgque: PGQUE_SQL=%s is not a file" % PGQUE_SQL)
        self.fill_log(LOG_ROWS - self.drains_logged())
        # Its own database, as the other peers; PgQue from the one file, as its docs install it.
        copy = os.path.join(self.work, "pgque.sql")
        shutil.copy(PGQUE_SQL, copy)
        self.admin.execute("CREATE DATABASE peer_pgque")
        for path in (copy, PGQUE_BENCH_SQL):
            subprocess.run([PGCLUSTER, "psql", self.cluster, "-d", "peer_pgque", "-v", "ON_ERROR_STOP=1",
                            "-f", path], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.db.execute(CONTRACT_FLOOR_SQL)
        q = self.pgque = self.connect("peer_pgque")
        version = q.execute("SELECT pgque.version()").fetchone()[0]
        notify_many = self.scalar("SELECT string_agg(p.oid::regprocedure::text, ', ') FROM pg_proc p"
                                  " WHERE p.proname = 'notify_many' AND p.pronamespace = 'pgrelay'::regnamespace")
        say("pgque: PgQue %s from %s, in database peer_pgque; %d events, ticks of %d, %d runs; "
            "pgrelay.notify_many: %s" % (version, PGQUE_SQL, PGQUE_EVENTS, PGQUE_TICK_EVENTS, REPEATS,
                                         notify_many or "not in this pg_relay"))
        r = self.results
        relay, pgque = {}, {}
        bulk = {"notify": [], "send_batch": []}
        if notify_many:
            bulk["notify_many"] = []
        single = {"notify": [], "send": []}
        contract, costs = {}, []
        for rep in range(REPEATS):
            say(" run %d of %d" % (rep + 1, REPEATS))
            for n in PGQUE_WORKERS:
                relay.setdefault(n, []).append(self.relay_peer_run(n, PGQUE_EVENTS))
                pgque.setdefault(n, []).append(self.pgque_drain(n))
                for mix in CONTRACT_MIXES:
                    contract.setdefault((n, mix), []).append(self.contract_floor(n, mix))
            costs.append(self.write_costs())
            for what in bulk:
                bulk[what].append(self.bulk_enqueue(what))
            for what in single:
                single[what].append(self.single_enqueue(what))
        r["pgque"] = {"version": version, "relay": relay, "pgque": pgque, "bulk": bulk, "single": single,
                      "contract": contract, "costs": costs, "best": max(statistics.median(v) for v in pgque.values())}
        q.close()
        self.db.execute("TRUNCATE bench.sink")
        # the contract floor's audit rows (negative ids) would only weigh on the phases after this
        self.db.execute("DELETE FROM pgrelay.log WHERE event_id < 0")
        self.db.execute("VACUUM ANALYZE pgrelay.log")

    def sessions_call(self, dbname, sql, params, what):
        """Runs sql once for each element of params, each in a session of its own, all at once;
        returns the wall time in seconds, or raises the first error."""
        errors = []

        def session(p):
            try:
                with self.connect(dbname) as c:
                    c.execute(sql, p)
            except Exception as e:   # reported below
                errors.append(e)

        threads = [threading.Thread(target=session, args=(p,)) for p in params]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise RuntimeError("%s: %s" % (what, errors[0]))
        return time.monotonic() - t0

    def contract_floor(self, sessions, mix):
        """PGQUE_EVENTS events through bench.contract_floor() in `sessions` sessions, each its share
        in batches of the mix's events per commit; timed as PgQue's drain, from the handler's rows.
        The audit rows get negative ids of a range no earlier run used (the log's (event_id,
        queue_id) is unique)."""
        subtxn, audit, per_commit, label = mix
        self.contract_runs += 1
        first = -self.contract_runs * 10 * PGQUE_EVENTS
        share = PGQUE_EVENTS // sessions
        assert share * sessions == PGQUE_EVENTS
        self.db.execute("TRUNCATE bench.sink")
        self.db.execute("VACUUM ANALYZE pgrelay.log, bench.sink")
        self.db.execute("CHECKPOINT")
        self.sessions_call("bench", "CALL bench.contract_floor(%s, %s, %s, %s, %s)",
                           [(first + k * share, share, per_commit, subtxn, audit) for k in range(sessions)],
                           "contract floor")
        n = self.scalar("SELECT count(*) FROM bench.sink")
        logged = self.scalar("SELECT count(*) FROM pgrelay.log WHERE event_id BETWEEN %s AND %s",
                             (first, first + PGQUE_EVENTS - 1))
        if n != PGQUE_EVENTS or logged != (PGQUE_EVENTS if audit else 0):
            raise RuntimeError("contract floor %s: %d handler rows, %d audit rows" % (label, n, logged))
        rate = self.sink_rate(self.db, "bench.sink")
        say("  contract floor, %d session%s, %d per commit, %s: %.0f events/s"
            % (sessions, "s" if sessions > 1 else "", per_commit, label, rate))
        return rate

    def write_costs(self):
        """bench.write_costs() in a transaction rolled back, DEFAULT_BATCH rows a statement:
        (audit row, queue DELETE) in us an event."""
        assert self.scalar("SELECT count(*) FROM pgrelay.queue") == 0, "queue not drained"
        with psycopg.connect(self.dsn()) as c:
            audit, delete = c.execute("SELECT * FROM bench.write_costs(%s, %s)",
                                      (WRITE_COST_EVENTS, DEFAULT_BATCH)).fetchone()
            c.rollback()
        say("  in one transaction, %d at a time: audit row %.2f us an event, queue DELETE %.2f us"
            % (DEFAULT_BATCH, audit, delete))
        return audit, delete

    def pgque_drain(self, workers):
        """PGQUE_EVENTS events in ticks of PGQUE_TICK_EVENTS, drained by bench.consume() in one
        session (one consumer) or in `workers` sessions (as many cooperative subconsumers of one
        consumer); timed as the other peers, from the first to the last row its handler inserted."""
        q = self.pgque
        q.execute("TRUNCATE bench.sink")
        q.execute("CALL bench.new_queue('drain', %s)", (0 if workers == 1 else workers,))
        q.execute("CALL bench.fill('drain', %s, %s)", (PGQUE_EVENTS, PGQUE_TICK_EVENTS))
        q.execute("VACUUM ANALYZE")
        q.execute("CHECKPOINT")
        calls = [("solo", None)] if workers == 1 else [("coop", "s%d" % i) for i in range(1, workers + 1)]
        wall = self.sessions_call("peer_pgque", "CALL bench.consume('drain', %s, %s)", calls, "pgque consumer")
        n, distinct = q.execute("SELECT count(*), count(DISTINCT payload) FROM bench.sink").fetchone()
        if n != PGQUE_EVENTS or distinct != PGQUE_EVENTS:
            raise RuntimeError("pgque drain with %d sessions: %d rows, %d distinct, not %d"
                               % (workers, n, distinct, PGQUE_EVENTS))
        rate = self.sink_rate(q, "bench.sink")
        say("  PgQue, %d %s: %.0f events/s from its handler's rows (%.0f from the calls' wall time)"
            % (workers, "consumer" if workers == 1 else "cooperative subconsumers", rate, PGQUE_EVENTS / wall))
        return rate

    def bulk_enqueue(self, what):
        """PGQUE_BULK events queued by one statement, in events/s of the statement's wall time
        (with its commit); each on an empty queue, checkpointed, with nothing else queued."""
        payloads = "ARRAY(SELECT 'event ' || g FROM generate_series(1, %d) g)" % PGQUE_BULK
        if what == "send_batch":
            conn = self.pgque
            conn.execute("CALL bench.new_queue('bulk', 0)")
            sql = "SELECT cardinality(pgque.send_batch('bulk', %s))" % payloads
        else:
            conn = self.db
            assert self.scalar("SELECT count(*) FROM pgrelay.queue") == 0, "queue not drained"
            conn.execute("TRUNCATE pgrelay.queue")
            if what == "notify":
                sql = "SELECT count(pgrelay.notify('bench', 'event ' || g)) FROM generate_series(1, %d) g" % PGQUE_BULK
            else:   # returning an array of ids or a set of them
                sql = "SELECT count(*) FROM (SELECT pgrelay.notify_many('bench', %s)) s" % payloads
        conn.execute("CHECKPOINT")
        t0 = time.monotonic()
        conn.execute(sql)
        secs = time.monotonic() - t0
        if what == "send_batch":
            done = conn.execute("SELECT count(*) FROM pgque.event_template e JOIN pgque.queue q"
                                " ON e.tableoid::regclass::text ~ ('^' || q.queue_data_pfx || '_[0-9]+$')"
                                " WHERE q.queue_name = 'bulk'").fetchone()[0]
        else:
            done = self.scalar("SELECT count(*) FROM pgrelay.queue")
            self.db.execute("TRUNCATE pgrelay.queue")
        if done != PGQUE_BULK:
            raise RuntimeError("bulk enqueue by %s queued %d events, not %d" % (what, done, PGQUE_BULK))
        say("  bulk enqueue, %s: %d events in %.0f ms = %.0f events/s" % (what, PGQUE_BULK, secs * 1000,
                                                                          PGQUE_BULK / secs))
        return PGQUE_BULK / secs

    def single_enqueue(self, what):
        """One event per transaction from PGQUE_SESSIONS pgbench sessions, PRODUCER_SECONDS long,
        each on an empty queue."""
        args = ["-M", "prepared", "-c", str(PGQUE_SESSIONS), "-j", str(PGQUE_SESSIONS), "-T", str(PRODUCER_SECONDS)]
        if what == "send":
            self.pgque.execute("CALL bench.new_queue('single', 0)")
            self.pgque.execute("CHECKPOINT")
            tps, _ = self.pgbench(PGQUE_SEND_SQL, args, dbname="peer_pgque")
        else:
            assert self.scalar("SELECT count(*) FROM pgrelay.queue") == 0, "queue not drained"
            self.db.execute("TRUNCATE pgrelay.queue")
            self.db.execute("CHECKPOINT")
            tps, _ = self.pgbench(NOTIFY_SQL, args)
            self.db.execute("TRUNCATE pgrelay.queue")
        say("  one event per transaction, %d sessions, %s: %.0f/s" % (PGQUE_SESSIONS, what, tps))
        return tps

    # ---- bloat: a million events through the queue (bench/run bloat) --------------------------

    def queue_sizes(self):
        return self.sql("SELECT pg_relation_size('pgrelay.queue'), pg_indexes_size('pgrelay.queue'),"
                        " (SELECT count(*) FROM pgrelay.queue)")[0]

    def run_bloat(self):
        """BLOAT_ROUNDS rounds, each of BLOAT_EVENTS events that producers keep feeding while a
        Processor drains them; the queue's table and indexes are measured before, at their largest
        in each round, and after each round once autovacuum has been by (it is on, at its
        defaults). A second round shows whether the indexes grow again or reuse their pages."""
        say("bloat: %d round(s) of %d events through the queue, fed 5,000 at a time while a Processor"
            " (4 workers) drains it" % (BLOAT_ROUNDS, BLOAT_EVENTS))
        self.db.execute("VACUUM pgrelay.queue")
        kb = lambda t: "%d kB table + %d kB indexes" % (t[0] // 1024, t[1] // 1024)
        self.results["bloat"] = [("queue before", kb(self.queue_sizes()))]
        for k in range(1, BLOAT_ROUNDS + 1):
            self.results["bloat"] += self.bloat_round(k, kb)
        for label, value in self.results["bloat"]:
            say("  %s: %s" % (label, value))

    def bloat_round(self, k, kb):
        prod = self.connect()
        p = self.start_processor("bloat%d" % k, ["--workers=4", "--poll-interval=100ms"])
        self.wait_log(p, r" started ")
        made, biggest, t0 = 0, self.queue_sizes(), time.monotonic()
        while made < BLOAT_EVENTS:
            if self.scalar("SELECT count(*) FROM pgrelay.queue") < 20000:
                prod.execute("SELECT count(pgrelay.notify('bench', 'event ' || g)) FROM generate_series(1, 5000) g")
                made += 5000
            else:
                time.sleep(0.02)
            now = self.queue_sizes()
            if now[0] + now[1] > biggest[0] + biggest[1]:
                biggest = now
        while self.scalar("SELECT count(*) FROM pgrelay.queue") > 0:
            time.sleep(0.1)
        secs = time.monotonic() - t0
        prod.close()
        drained = self.queue_sizes()
        # Autovacuum's next visit (naptime 1 min) reclaims the dead rows; wait for it, at most 3 min,
        # with the Processor running on, as it would: its report (every 10 s) rebuilds the indexes
        # once vacuum has left them far larger than the table; waited for at most 25 s more.
        deadline = time.monotonic() + 180
        v0 = self.scalar("SELECT autovacuum_count FROM pg_stat_user_tables WHERE relid = 'pgrelay.queue'::regclass")
        while time.monotonic() < deadline and self.scalar(
                "SELECT autovacuum_count FROM pg_stat_user_tables WHERE relid = 'pgrelay.queue'::regclass") == v0:
            time.sleep(1)
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline and self.queue_sizes()[1] > max(biggest[1] // 10, 1048576):
            time.sleep(1)
        self.stop_processor(p)
        after = self.queue_sizes()
        n = format(BLOAT_EVENTS, ",")
        return [
            ("round %d (%s events): queue at its largest (%d rows queued then)" % (k, n, biggest[2]), kb(biggest)),
            ("round %d: queue when drained (%.0f s, %.0f events/s)" % (k, secs, BLOAT_EVENTS / secs), kb(drained)),
            ("round %d: queue after autovacuum's next visit and the Processor's reports" % k, kb(after)),
        ]

    # ---- held: a snapshot held open through rounds of drains (bench/run held) ------------------

    def probe_server(self):
        """The probe's own cost in the server, as the Processor sends it: with the bound its probes
        would hold by now (bench.warm_bound), each call passing on the bound the last returned
        (bench.probe_loop, the median of three loops), with as many calls per loop as fit in about
        half a second: under a held snapshot a probe can cost a thousand times its usual."""
        bound = self.scalar("SELECT bench.warm_bound()::text")
        one = self.scalar("SELECT bench.probe_loop(10, %s::jsonb)", (bound,))
        n = int(min(20000, max(10, 0.5e6 / max(one, 1.0))))
        return statistics.median(self.scalar("SELECT bench.probe_loop(%s, %s::jsonb)", (n, bound))
                                 for _ in range(3))

    def probe_client(self, seconds):
        """The probe as the Processor sends it, by pgbench: prepared, from the bound its probes
        would hold by now (bench.warm_bound), each call passing on the bound the last returned
        (\\gset keeps it in a variable of the client); its latency average in us."""
        bound = self.scalar("SELECT bench.warm_bound()::text")
        _, lat = self.pgbench("SELECT next_bound AS b FROM pgrelay.queue_probe(NULL, :b::jsonb) \\gset\n",
                              ["-M", "prepared", "-c", "1", "-T", str(seconds), "-D", "b=" + bound])
        return lat * 1000.0

    def pgrelay_sizes(self):
        """{table: (heap, indexes, total)} in bytes for every table of schema pgrelay; total is
        pg_total_relation_size (heap, indexes, TOAST, free space and visibility maps)."""
        return {name: (heap, idx, total) for name, heap, idx, total in self.sql(
            "SELECT c.relname::text, pg_relation_size(c.oid), pg_indexes_size(c.oid), pg_total_relation_size(c.oid)"
            " FROM pg_class c WHERE c.relnamespace = 'pgrelay'::regnamespace AND c.relkind IN ('r', 'p', 'm')")}

    @staticmethod
    def is_log(name):
        return name == "log" or name.startswith("log_")

    @classmethod
    def held_sizes(cls, sizes):
        """(every pgrelay table but the log, the log, pgrelay.queue's heap, its indexes), in bytes:
        the log keeps its rows by design, the rest is the queue's storage."""
        rest = sum(t for name, (_, _, t) in sizes.items() if not cls.is_log(name))
        log = sum(t for name, (_, _, t) in sizes.items() if cls.is_log(name))
        heap, idx, _ = sizes.get("queue", (0, 0, 0))
        return rest, log, heap, idx

    def dead_rows(self):
        """{pgrelay table: (autovacuum_count, n_dead_tup)}."""
        return {name: (count, dead) for name, count, dead in self.sql(
            "SELECT relname::text, autovacuum_count, n_dead_tup FROM pg_stat_user_tables WHERE schemaname = 'pgrelay'")}

    def run_held(self):
        """HELD_ROUNDS rounds of HELD_EVENTS events, each queued and drained as in the drains phase
        (a Processor with default settings), while another session keeps a REPEATABLE READ
        transaction open: it read one table once, so its snapshot holds back the xmin horizon and no
        vacuum can remove a row deleted after it began. After every round: the drain rate, the
        empty-queue probe and the sizes of the pgrelay tables; then the snapshot ends and the sizes
        and the probe are read again once autovacuum has been by, and after a VACUUM."""
        self.fill_log(LOG_ROWS - self.drains_logged())
        say("held: a REPEATABLE READ transaction open for %d rounds of %d events, each drained by a Processor"
            " with default settings" % (HELD_ROUNDS, HELD_EVENTS))
        r = self.results["held"] = {"rounds": []}
        self.db.execute("CREATE TABLE IF NOT EXISTS bench.held AS SELECT 1 AS x")
        self.db.execute("VACUUM pgrelay.queue")
        _, rtt = self.pgbench("SELECT 1;\n", ["-M", "prepared", "-c", "1", "-T", "2"])
        r["rtt_us"] = rtt * 1000.0
        r["before"] = (self.probe_server(), self.probe_client(HELD_PROBE_SECONDS), self.pgrelay_sizes())
        self.say_held("before", None, *r["before"])
        holder = self.connect()
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM bench.held")
        if self.scalar("SELECT backend_xmin FROM pg_stat_activity WHERE pid = %s", (holder.info.backend_pid,)) is None:
            raise RuntimeError("held: the REPEATABLE READ transaction holds no snapshot")
        try:
            for k in range(1, HELD_ROUNDS + 1):
                rate, _ = self.drain(4, DEFAULT_BATCH, HELD_EVENTS, name="held%d" % k)
                got = (rate, self.probe_server(), self.probe_client(HELD_PROBE_SECONDS), self.pgrelay_sizes())
                r["rounds"].append(got)
                self.say_held("round %d" % k, *got)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        # A Processor with default settings runs while autovacuum comes by, in case the queue's
        # storage is kept by the Processor too. Waited for: a visit to every pgrelay table with more
        # than 1,000 dead rows when the snapshot ended, after which it has at most 1,000 left (a
        # visit that began before the snapshot ended removes nothing).
        t0 = time.monotonic()
        dead = self.dead_rows()
        waiting = {name for name, (_, d) in dead.items() if d > 1000}
        p = self.start_processor("held-after", [])
        self.wait_log(p, r" started ")
        while waiting and time.monotonic() - t0 < HELD_VACUUM_WAIT:
            time.sleep(1)
            now = self.dead_rows()
            waiting = {name for name in waiting if not (now[name][0] > dead[name][0] and now[name][1] <= 1000)}
        # Then the Processor's reports (every 10 s), which rebuild the queue's indexes once vacuum
        # has left them far larger than the queue: until the sizes are within the bound the
        # targets name (their size after round 1), at most HELD_REPORT_WAIT s more.
        bound = self.held_sizes(r["rounds"][0][3])[0]
        t1 = time.monotonic()
        while (time.monotonic() - t1 < HELD_REPORT_WAIT
               and self.held_sizes(self.pgrelay_sizes())[0] > bound):
            time.sleep(1)
        self.stop_processor(p)
        r["autovacuum"] = (time.monotonic() - t0, sorted(waiting), self.probe_server(),
                           self.probe_client(HELD_PROBE_SECONDS), self.pgrelay_sizes())
        self.say_held("autovacuum and reports (%.0f s%s)" % (r["autovacuum"][0], ", not yet: " + ", ".join(waiting) if waiting else ""),
                      None, *r["autovacuum"][2:])
        tables = self.scalar("SELECT string_agg(format('%I.%I', 'pgrelay', c.relname), ', ') FROM pg_class c"
                             " WHERE c.relnamespace = 'pgrelay'::regnamespace AND c.relkind IN ('r', 'm')")
        self.db.execute("VACUUM " + tables)
        r["vacuum"] = (self.probe_server(), self.probe_client(HELD_PROBE_SECONDS), self.pgrelay_sizes())
        self.say_held("VACUUM", None, *r["vacuum"])
        for name, (heap, idx, total) in sorted(r["vacuum"][2].items(), key=lambda x: -x[1][2])[:6]:
            say("    pgrelay.%s: %s heap, %s indexes, %s in all" % (name, self.size(heap), self.size(idx), self.size(total)))

    @staticmethod
    def size(b):
        return "%.1f MB" % (b / 1048576.0) if b >= 1048576 else "%d kB" % (b // 1024)

    def held_text(self, sizes):
        rest, log, heap, idx = self.held_sizes(sizes)
        return "pgrelay but the log %s (queue %s + %s indexes); log %s" % (
            self.size(rest), self.size(heap), self.size(idx), self.size(log))

    def say_held(self, label, rate, server, client, sizes):
        say("  %s: %sprobe %.1f us in the server, %.0f us by pgbench; %s"
            % (label, "" if rate is None else "%.0f events/s; " % rate, server, client, self.held_text(sizes)))

    # ---- 3: probe cost --------------------------------------------------------------------

    def run_probe(self):
        self.fill_log(LOG_ROWS)
        self.results["log_rows"] = self.scalar("SELECT count(*) FROM pgrelay.log")
        say("probe: empty queue, %d rows in pgrelay.log" % self.results["log_rows"])
        self.db.execute("VACUUM ANALYZE pgrelay.queue, pgrelay.log")
        self.db.execute("CHECKPOINT")
        assert self.scalar("SELECT count(*) FROM pgrelay.queue") == 0
        # The probe's own cost inside the server, without the client round trip: a loop of calls
        # (the median of three), with the queue empty and with 1,000 events scheduled for later.
        self.results["probe_server_us"] = statistics.median(
            self.scalar("SELECT bench.probe_loop(20000)") for _ in range(3))
        self.db.execute("SELECT count(pgrelay.notify('bench', 'later', now() + interval '1 day'))"
                        " FROM generate_series(1, 1000)")
        self.db.execute("ANALYZE pgrelay.queue")
        self.results["probe_sched_us"] = statistics.median(
            self.scalar("SELECT bench.probe_loop(20000)") for _ in range(3))
        self.db.execute("DELETE FROM pgrelay.queue")
        self.db.execute("VACUUM ANALYZE pgrelay.queue")
        probe = "SELECT * FROM pgrelay.queue_probe();\n"
        args = ["-c", "1", "-T", str(PROBE_SECONDS)]
        for mode, suffix in (("prepared", ""), ("simple", "_simple")):
            _, self.results["rtt%s_us" % suffix] = self.pgbench("SELECT 1;\n", ["-M", mode, "-c", "1", "-T", "2"])
            _, self.results["probe%s_us" % suffix] = self.pgbench(probe, ["-M", mode] + args)
        for k in ("rtt_us", "probe_us", "rtt_simple_us", "probe_simple_us"):
            self.results[k] *= 1000.0
        say("  probe %.1f us (prepared), %.1f us (simple protocol); SELECT 1 %.1f us; in the server %.1f us"
            " (%.1f us with 1,000 events scheduled for later)"
            % (self.results["probe_us"], self.results["probe_simple_us"], self.results["rtt_us"],
               self.results["probe_server_us"], self.results["probe_sched_us"]))

    # ---- 4: idle cost -----------------------------------------------------------------------

    def xact_commit(self):
        return self.admin.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = 'bench'").fetchone()[0]

    def run_idle(self):
        say("idle: the Processor (default settings: 4 workers, poll interval 1 s) on an empty queue, %d s"
            % IDLE_SECONDS)
        # Nothing left for autovacuum to do in the window. On a connection of its own, closed at
        # once: a backend reports its transaction counts when it exits, while an idle one may
        # hold them back for up to 10 s, which would land them in the window.
        with self.connect() as c:
            c.execute("VACUUM ANALYZE")
        self.db.close()
        # --log-level=debug logs one "probe" line per probe: a count that does not depend on
        # when the server flushes its statistics.
        # Autovacuum off for the window: its workers visit every database now and then and
        # commit a few transactions there, which pg_stat_database cannot tell from ours.
        self.admin.execute("ALTER SYSTEM SET autovacuum = off")
        self.admin.execute("SELECT pg_reload_conf()")
        p = self.start_processor("idle", ["--log-level=debug"])
        self.wait_log(p, r" started ")
        # Connections up, and their set-up statements counted: an idle backend reports its
        # transaction counts only after up to 10 s (PGSTAT_IDLE_INTERVAL).
        time.sleep(12)
        backends = [r[0] for r in self.admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'pg_relay'").fetchall()]
        probes = lambda: len(re.findall(r" probe has_work=", self.log_text(p)))
        server = lambda: sum(self.cpu_seconds(b)[1] for b in backends)
        x0, (c0, n0), k0, s0, t0 = (self.xact_commit(), self.cpu_seconds(p.pid), probes(), server(),
                                    time.monotonic())
        time.sleep(IDLE_SECONDS)
        x1, (c1, n1), k1, s1, t1 = (self.xact_commit(), self.cpu_seconds(p.pid), probes(), server(),
                                    time.monotonic())
        self.stop_processor(p)
        self.admin.execute("ALTER SYSTEM RESET autovacuum")
        self.admin.execute("SELECT pg_reload_conf()")
        self.db = self.connect()
        span = t1 - t0
        self.results["idle_cpu"] = 100.0 * (c1 - c0) / span
        self.results["idle_cpu_ns"] = 100.0 * (n1 - n0) / span
        self.results["idle_server_cpu"] = 100.0 * (s1 - s0) / span
        self.results["idle_sessions"] = len(backends)
        self.results["idle_tx"] = (x1 - x0) / span
        self.results["idle_probes"] = (k1 - k0) / span
        say("  %.3f%% CPU (/proc/PID/stat), %.4f%% (schedstat); its %d server sessions %.4f%%; "
            "%.2f tx/s, %.2f probes/s"
            % (self.results["idle_cpu"], self.results["idle_cpu_ns"], len(backends),
               self.results["idle_server_cpu"], self.results["idle_tx"], self.results["idle_probes"]))

    # ---- 6: end-to-end latency ------------------------------------------------------------

    def run_latency(self):
        for poll in LATENCY_POLLS:
            self.results["lat_%s" % poll] = self.latency(poll)

    def latency(self, poll):
        n = LATENCY_RATE * LATENCY_SECONDS
        say("latency: a producer at %d events/s for %d s, each event its own transaction; poll interval %s"
            % (LATENCY_RATE, LATENCY_SECONDS, poll))
        self.db.execute("DELETE FROM pgrelay.log WHERE channel = 'latency'")
        p = self.start_processor("latency-%s" % poll, ["--poll-interval=%s" % poll])
        self.wait_log(p, r" started ")
        time.sleep(1.5)
        prod = self.connect()
        t0 = time.monotonic()
        for i in range(n):
            delay = t0 + i / LATENCY_RATE - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            prod.execute("SELECT pgrelay.notify('latency', %s)", (str(i),))
        produced = n / (time.monotonic() - t0)
        prod.close()
        deadline = time.monotonic() + 30
        while self.scalar("SELECT count(*) FROM pgrelay.queue WHERE channel = 'latency'") > 0:
            if time.monotonic() > deadline:
                raise RuntimeError("latency events not drained")
            time.sleep(0.1)
        self.stop_processor(p)
        row = self.sql("""
            SELECT count(*),
                   1000 * extract(epoch FROM percentile_cont(0.5) WITHIN GROUP (ORDER BY finished_at - queued_at)),
                   1000 * extract(epoch FROM percentile_cont(0.99) WITHIN GROUP (ORDER BY finished_at - queued_at)),
                   1000 * extract(epoch FROM max(finished_at - queued_at))
            FROM pgrelay.log WHERE channel = 'latency' AND outcome = 'ok'""")[0]
        if row[0] != n:
            raise RuntimeError("latency: %d of %d events logged ok" % (row[0], n))
        say("  p50 %.1f ms, p99 %.1f ms, max %.1f ms (producer %.1f events/s)"
            % (row[1], row[2], row[3], produced))
        return (float(row[1]), float(row[2]), float(row[3]), produced)

    # ---- 7: email ---------------------------------------------------------------------------

    def start_smtpd(self):
        d = os.path.join(self.work, "smtpd")
        os.makedirs(d)
        ready = os.path.join(d, "ready")
        self.spool = os.path.join(d, "spool")
        logf = open(os.path.join(d, "smtpd.log"), "wb")
        p = subprocess.Popen([PYTHON, SMTPD, "--ready-file", ready, "--spool", self.spool],
                             stdout=logf, stderr=subprocess.STDOUT)
        p.logf = logf
        self.children.append(p)
        self.smtpd = p
        deadline = time.monotonic() + 30
        while not os.path.exists(ready):
            if p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("smtpd did not start")
            time.sleep(0.05)
        with open(ready) as f:
            self.smtp_port = int(f.read())

    def connections(self):
        path = os.path.join(self.spool, "connections")
        return int(open(path).read()) if os.path.exists(path) else 0

    def email_run(self, workers):
        assert self.scalar("SELECT count(*) FROM pgrelay.queue") == 0
        self.db.execute("VACUUM pgrelay.queue")
        self.db.execute("""
            SELECT count(pgrelay_notifier.send('mail', ARRAY['Ann Example <ann@example.org>'],
                                               'Benchmark message ' || g,
                                               'Hello Ann, this is benchmark message ' || g || '.'))
            FROM generate_series(1, %s) g""", (EMAILS,))
        self.db.execute("VACUUM ANALYZE pgrelay.queue")
        self.db.execute("CHECKPOINT")
        conns = self.connections()
        p = self.start_processor("email-%d" % workers, ["--workers=%d" % workers])
        processed, ok, ms = self.wait_batches(p, EMAILS)
        status = self.proc_status(p.pid)
        self.stop_processor(p)
        if ok != EMAILS:
            raise RuntimeError("email with %d workers: %d processed, %d ok" % (workers, processed, ok))
        rate = EMAILS / (ms / 1000.0)
        used = self.connections() - conns
        say("  Processor, %d worker(s): %d emails in %d ms = %.0f emails/s over %d SMTP connection(s)"
            % (workers, EMAILS, ms, rate, used))
        return rate, status, used

    def email_floor(self, conns):
        """The sink's own acceptance rate: smtplib sending one message the Processor made, N times,
        over `conns` parallel connections (EMAILS messages in all)."""
        names = sorted(n for n in os.listdir(self.spool) if n.endswith(".eml"))
        with open(os.path.join(self.spool, names[-1]), "rb") as f:
            raw = f.read()
        per = EMAILS // conns
        errors = []

        def client():
            try:
                with smtplib.SMTP("127.0.0.1", self.smtp_port, local_hostname="bench.test") as s:
                    s.ehlo()
                    for _ in range(per):
                        s.sendmail("noreply@example.com", ["ann@example.org"], raw)
            except Exception as e:   # reported below
                errors.append(e)

        threads = [threading.Thread(target=client) for _ in range(conns)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - t0
        if errors:
            raise RuntimeError("smtplib floor: %s" % errors[0])
        rate = per * conns / elapsed
        say("  smtplib floor, %d connection(s): %.0f messages/s" % (conns, rate))
        return rate

    def run_email(self):
        say("email: %d messages through pgrelay_notifier to a local SMTP sink (smtpd.py, plain)" % EMAILS)
        self.start_smtpd()
        self.db.execute("""
            SELECT pgrelay_notifier.create_profile('bench', host => '127.0.0.1', port => %s,
                                                   security => 'none',
                                                   from_address => 'noreply@example.com',
                                                   from_name => 'pg_relay bench')""", (self.smtp_port,))
        self.db.execute("SELECT pgrelay_notifier.create_channel('mail', 'bench')")
        for n in EMAIL_WORKERS:
            rate, status, used = self.email_run(n)
            self.results["email%d" % n] = rate
            self.results["email_conns%d" % n] = used
            self.results["email_rss%d" % n] = status
        for n in EMAIL_WORKERS:
            self.results["smtp_floor%d" % n] = self.email_floor(n)

    # ---- R, K, Q: the broker phases' events, and their database floor -----------------------

    def broker_fill(self, channel, n):
        """An empty, vacuumed queue, then n events of a broker channel queued with notify() in one
        transaction (the same payloads for the Processor and the floor), fresh statistics and a
        checkpoint."""
        assert self.scalar("SELECT count(*) FROM pgrelay.queue") == 0, "queue not drained"
        self.db.execute("VACUUM pgrelay.queue")
        self.db.execute("SELECT count(pgrelay.notify(%s, '{\"order\": ' || g || ', \"note\": \"bench\"}'))"
                        " FROM generate_series(1, %s) g", (channel, n))
        self.db.execute("VACUUM ANALYZE pgrelay.queue")
        self.db.execute("CHECKPOINT")

    def broker_floor(self, channel, kind, n):
        """The database floor (BROKER_FLOOR_SQL) of n events of the channel, in events/s."""
        self.broker_fill(channel, n)
        script = BROKER_FLOOR_SQL % {"kind": kind, "batch": DEFAULT_BATCH, "detail": BROKER_FLOOR_DETAIL[kind]}
        rate = self.batched_pgbench(script, BROKER_FLOOR_SESSIONS, n, "the %s floor" % kind)
        say("  database floor, %d sessions, %d events per transaction, no broker: %.0f events/s"
            % (BROKER_FLOOR_SESSIONS, DEFAULT_BATCH, rate))
        return rate

    # ---- Q: a RabbitMQ exchange ----------------------------------------------------------------

    def rmq_run(self, rabbit, workers):
        rabbit.ctl("purge_queue", "bench_events")
        self.broker_fill("rmq", RMQ_EVENTS)
        p = self.start_processor("rabbitmq-%d" % workers, ["--workers=%d" % workers])
        processed, ok, ms = self.wait_batches(p, RMQ_EVENTS)
        status = self.proc_status(p.pid)
        self.stop_processor(p)
        queued = int(rabbit.queue_length("bench_events"))
        if ok != RMQ_EVENTS or queued != RMQ_EVENTS:
            raise RuntimeError("rabbitmq with %d workers: %d processed, %d ok, %d messages" % (workers, processed, ok,
                                                                                              queued))
        rate = RMQ_EVENTS / (ms / 1000.0)
        say("  Processor, %d workers: %d events in %d ms = %.0f events/s, VmHWM %d kB"
            % (workers, RMQ_EVENTS, ms, rate, status["VmHWM"]))
        return rate, status

    def rmq_reference(self, rabbit):
        """rabbitmq-c alone, one process, one connection: the same messages published persistent
        and mandatory, DEFAULT_BATCH at a time (the Processor's default batch), each batch waited
        for until the broker has confirmed all of it (processor/test/amqp)."""
        rabbit.ctl("purge_queue", "bench_events")
        subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "processor"), "build/release/tool_rmq_confirm"],
                       check=True)
        out = subprocess.run([TOOL_RMQ_CONFIRM, "127.0.0.1", str(rabbit.port), "", "bench_events", str(RMQ_EVENTS),
                              str(DEFAULT_BATCH)],
                             capture_output=True, text=True, check=True).stdout
        m = re.search(r"(\d+) messages in (\d+) ms", out)
        rate = int(m.group(1)) / (int(m.group(2)) / 1000.0)
        say("  rabbitmq-c with confirms, 1 connection, %d in flight: %.0f messages/s" % (DEFAULT_BATCH, rate))
        for n in RMQ_WORKERS:
            say("  Processor, %d workers: %.0f events/s = %.2fx the reference" % (n, self.results["rmq%d" % n],
                                                                           self.results["rmq%d" % n] / rate))
        rabbit.ctl("purge_queue", "bench_events")
        return rate

    def run_rabbitmq(self):
        say("rabbitmq: %d events to a RabbitMQ queue (Debian's rabbitmq-server, plain, on loopback)" % RMQ_EVENTS)
        sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
        import testlib
        d = os.path.join(self.work, "rabbitmq")
        os.makedirs(d, exist_ok=True)
        rabbit = testlib.RabbitServer(d)
        try:
            rabbit.amqp("amqp-declare-queue", "-q", "bench_events", "-d")
            self.db.execute("SELECT pgrelay.register('rmq', 'rabbitmq', settings => %s)",
                            (json.dumps({"host": "127.0.0.1", "port": rabbit.port, "routing_key": "bench_events"}),))
            for n in RMQ_WORKERS:
                rate, status = self.rmq_run(rabbit, n)
                self.results["rmq%d" % n] = rate
                self.results["rmq_rss%d" % n] = status
            self.results["rmq_floor"] = [self.broker_floor("rmq", "rabbitmq", RMQ_EVENTS) for _ in range(REPEATS)]
            self.results["rmq_ref"] = self.rmq_reference(rabbit)
            self.db.execute("SELECT pgrelay.unregister('rmq')")
        finally:
            rabbit.stop()

    # ---- R: a Redis stream --------------------------------------------------------------------

    def start_redis(self):
        with socket.socket() as sk:
            sk.bind(("127.0.0.1", 0))
            self.redis_port = sk.getsockname()[1]
        logf = open(os.path.join(self.work, "redis.log"), "wb")
        p = subprocess.Popen(["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--dir", self.work,
                              "--save", "", "--appendonly", "no"], stdout=logf, stderr=subprocess.STDOUT)
        p.logf = logf
        self.children.append(p)
        deadline = time.monotonic() + 30
        while self.redis_cli("PING").strip() != "PONG":
            if p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)

    def redis_cli(self, *args):
        r = subprocess.run(["redis-cli", "-p", str(self.redis_port)] + list(args), capture_output=True, text=True)
        return r.stdout

    def redis_run(self, workers):
        self.redis_cli("DEL", "bench:events")
        self.broker_fill("rstream", REDIS_EVENTS)
        p = self.start_processor("redis-%d" % workers, ["--workers=%d" % workers])
        processed, ok, ms = self.wait_batches(p, REDIS_EVENTS)
        status = self.proc_status(p.pid)
        self.stop_processor(p)
        entries = int(self.redis_cli("XLEN", "bench:events") or 0)
        if ok != REDIS_EVENTS or entries != REDIS_EVENTS:
            raise RuntimeError("redis with %d workers: %d processed, %d ok, %d entries" % (workers, processed, ok,
                                                                                          entries))
        rate = REDIS_EVENTS / (ms / 1000.0)
        say("  Processor, %d workers: %d events in %d ms = %.0f events/s, VmHWM %d kB"
            % (workers, REDIS_EVENTS, ms, rate, status["VmHWM"]))
        return rate, status

    def redis_reference(self):
        """Redis's own client, one process, one connection: redis-benchmark XADD of entries with the
        same fields and a payload of the same size, one command per round trip."""
        out = subprocess.run(["redis-benchmark", "-p", str(self.redis_port), "-q", "-c", "1", "-n", str(REDIS_EVENTS),
                              "-r", "1000000", "XADD", "bench:reference", "*", "event_id", "__rand_int__",
                              "channel", "rstream", "attempt", "1", "queued_at", "2026-12-07T05:26:39.757214Z",
                              "payload", '{"order": __rand_int__, "note": "bench"}'],
                             capture_output=True, text=True, check=True).stdout
        m = re.search(r"([0-9.]+) requests per second", out.replace("\r", "\n"))
        if m is None:
            raise RuntimeError("redis-benchmark said: %s" % out[-500:])
        rate = float(m.group(1))
        say("  redis-benchmark XADD, 1 client: %.0f requests/s" % rate)
        return rate

    def run_redis(self):
        say("redis: %d events into a Redis stream (Debian's redis-server, plain, on loopback)" % REDIS_EVENTS)
        self.start_redis()
        self.db.execute("SELECT pgrelay.register('rstream', 'redis', settings => %s)",
                        (json.dumps({"host": "127.0.0.1", "port": self.redis_port, "stream": "bench:events"}),))
        for n in REDIS_WORKERS:
            rate, status = self.redis_run(n)
            self.results["redis%d" % n] = rate
            self.results["redis_rss%d" % n] = status
        self.results["redis_floor"] = [self.broker_floor("rstream", "redis", REDIS_EVENTS) for _ in range(REPEATS)]
        self.results["redis_ref"] = self.redis_reference()
        self.db.execute("SELECT pgrelay.unregister('rstream')")

    # ---- K: a Kafka topic (librdkafka's mock cluster) ---------------------------------------------

    def start_kafka(self):
        p = subprocess.Popen([KAFKA_MOCK], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, bufsize=1)
        self.children.append(p)
        self.kafka_mock = p
        self.kafka_bootstrap = p.stdout.readline().split()[1]
        for cmd in ("topic bench.events 4", "topic bench.reference 4"):
            p.stdin.write(cmd + "\n")
            p.stdin.flush()
            if p.stdout.readline().strip() != "ok":
                raise RuntimeError("tool_kafka_mock refused: %s" % cmd)

    def kafka_count(self, topic):
        out = subprocess.run(["kcat", "-C", "-b", self.kafka_bootstrap, "-t", topic, "-o", "beginning", "-e", "-q",
                              "-f", "%o\n"], capture_output=True, text=True, check=True, timeout=300).stdout
        return len(out.splitlines())

    def kafka_run(self, workers):
        self.broker_fill("ktopic", KAFKA_EVENTS)
        p = self.start_processor("kafka-%d" % workers, ["--workers=%d" % workers])
        processed, ok, ms = self.wait_batches(p, KAFKA_EVENTS)
        status = self.proc_status(p.pid)
        self.stop_processor(p)
        if ok != KAFKA_EVENTS:
            raise RuntimeError("kafka with %d workers: %d processed, %d ok" % (workers, processed, ok))
        rate = KAFKA_EVENTS / (ms / 1000.0)
        say("  Processor, %d workers: %d events in %d ms = %.0f events/s, VmHWM %d kB, %d threads"
            % (workers, KAFKA_EVENTS, ms, rate, status["VmHWM"], status.get("Threads", 0)))
        return rate, status

    def kafka_reference(self):
        """librdkafka itself, one process: kcat producing the same number of messages of the same
        size with the same four headers, idempotent and acks=all, batched as librdkafka likes (no
        wait for each report)."""
        path = os.path.join(self.work, "kafka-reference.txt")
        with open(path, "w") as f:
            for g in range(1, KAFKA_EVENTS + 1):
                f.write('{"order": %d, "note": "bench"}\n' % g)
        t0 = time.monotonic()
        with open(path) as f:  # one message a line (a file named as an argument is one message)
            subprocess.run(["kcat", "-P", "-b", self.kafka_bootstrap, "-t", "bench.reference", "-X",
                            "enable.idempotence=true", "-X", "acks=all", "-H", "event_id=123380393310158849",
                            "-H", "channel=ktopic", "-H", "attempt=1", "-H", "queued_at=2026-12-07T11:09:38.086688Z"],
                           stdin=f, check=True, capture_output=True, timeout=300)
        rate = KAFKA_EVENTS / (time.monotonic() - t0)
        if self.kafka_count("bench.reference") != KAFKA_EVENTS:
            raise RuntimeError("kcat did not produce every reference message")
        say("  kcat -P (librdkafka, one process, batched): %.0f messages/s" % rate)
        return rate

    def run_kafka(self):
        say("kafka: %d events into a Kafka topic (librdkafka's mock cluster, 4 partitions, on loopback)"
            % KAFKA_EVENTS)
        self.start_kafka()
        self.db.execute("SELECT pgrelay.register('ktopic', 'kafka', settings => %s)",
                        (json.dumps({"brokers": self.kafka_bootstrap, "topic": "bench.events"}),))
        for n in KAFKA_WORKERS:
            rate, status = self.kafka_run(n)
            self.results["kafka%d" % n] = rate
            self.results["kafka_rss%d" % n] = status
        if self.kafka_count("bench.events") != KAFKA_EVENTS * len(KAFKA_WORKERS):
            raise RuntimeError("the topic does not hold every event")
        self.results["kafka_floor"] = [self.broker_floor("ktopic", "kafka", KAFKA_EVENTS) for _ in range(REPEATS)]
        self.results["kafka_ref"] = self.kafka_reference()
        self.db.execute("SELECT pgrelay.unregister('ktopic')")
        self.terminate(self.kafka_mock, 30)
        self.children.remove(self.kafka_mock)

    # ---- A: one channel of each kind, peak RSS ------------------------------------------------

    @staticmethod
    def memory_map(pid):
        """The resident kB of /proc/PID/smaps, and the anonymous part of them (a library's pages
        written by its relocations are its own copies), grouped by what they are: each file by its name (the
        binary, each shared library), [heap], [stack], and the anonymous mappings sorted by their
        shape: a thread's stack (megabytes with a guard page below it), a malloc arena's heap (64 MB
        reserved, the unused part inaccessible) and any other (librdkafka's and libpq's own
        mmap'd buffers, malloc's large blocks)."""
        maps, cur = [], None
        with open("/proc/%d/smaps" % pid) as f:
            for line in f:
                head = line.split()
                if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                    lo, hi = (int(x, 16) for x in head[0].split("-"))
                    cur = {"size": (hi - lo) // 1024, "perms": head[1],
                           "name": head[5] if len(head) > 5 else "", "rss": 0}
                    maps.append(cur)
                elif head and head[0] in ("Rss:", "Anonymous:"):
                    cur[head[0][:-1].lower()] = int(head[1])
        groups = {}
        for i, m in enumerate(maps):
            name = m["name"]
            if name.startswith("/"):
                key = os.path.basename(name)
            elif name:
                key = name
            else:
                prev = maps[i - 1] if i > 0 else None
                nxt = maps[i + 1] if i + 1 < len(maps) else None
                if prev and not prev["name"] and prev["perms"] == "---p" and prev["size"] < 1024 \
                        and m["size"] >= 1024:
                    key = "anonymous: thread stacks"
                elif nxt and not nxt["name"] and nxt["perms"] == "---p" and m["size"] + nxt["size"] == 65536:
                    key = "anonymous: malloc arenas"
                else:
                    key = "anonymous: other"
            rss, anon = groups.get(key, (0, 0))
            groups[key] = (rss + m["rss"], anon + m.get("anonymous", 0))
        return groups

    @staticmethod
    def smaps_rollup(pid):
        out = {}
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                head = line.split()
                if len(head) == 3 and head[2] == "kB":
                    out[head[0].rstrip(":")] = int(head[1])
        return out

    def allkinds_channels(self):
        """One channel of each kind beside the sql channel `bench`: email (pg_relay_notifier, to the
        SMTP sink), webhook (hookd.py over HTTPS), redis, kafka (the mock cluster), rabbitmq."""
        if self.smtpd is None:
            self.start_smtpd()
        if not hasattr(self, "redis_port"):
            self.start_redis()
        self.start_kafka()
        sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
        import testlib
        d = os.path.join(self.work, "allkinds")
        certs = testlib.make_certs(os.path.join(d, "certs"))
        self.hookd = testlib.HookServer(os.path.join(d, "hookd"), certs)
        self.rabbit = testlib.RabbitServer(os.path.join(d, "rabbitmq"))
        self.rabbit.amqp("amqp-declare-queue", "-q", "all_events", "-d")
        self.db.execute("""
            SELECT pgrelay_notifier.create_profile('all_mail', host => '127.0.0.1', port => %s, security => 'none',
                                                   from_address => 'noreply@example.com',
                                                   from_name => 'pg_relay bench')""", (self.smtp_port,))
        self.db.execute("SELECT pgrelay_notifier.create_channel('all_mail', 'all_mail')")
        self.db.execute("SELECT pgrelay.register_webhook('all_hook', %s, ca_file => %s,"
                        " signing_secret => 'env:HOOK_SECRET')", (self.hookd.url(), self.hookd.ca))
        for name, kind, settings in (
                ("all_redis", "redis", {"host": "127.0.0.1", "port": self.redis_port, "stream": "all:events"}),
                ("all_kafka", "kafka", {"brokers": self.kafka_bootstrap, "topic": "bench.events"}),
                ("all_rmq", "rabbitmq", {"host": "127.0.0.1", "port": self.rabbit.port,
                                         "routing_key": "all_events"})):
            self.db.execute("SELECT pgrelay.register(%s, %s, settings => %s)", (name, kind, json.dumps(settings)))
        return self.hookd.SECRET

    def allkinds_run(self, name, channels, mail, secret):
        """ALLKINDS_EVENTS events on each of `channels` (and on the email channel when `mail`),
        drained by one Processor with ALLKINDS_WORKERS workers: its peak RSS and memory map."""
        n = ALLKINDS_EVENTS
        total = n * (len(channels) + (1 if mail else 0))
        assert self.scalar("SELECT count(*) FROM pgrelay.queue") == 0
        self.db.execute("VACUUM pgrelay.queue")
        self.db.execute("SELECT count(pgrelay.notify(c, '{\"order\": ' || g || ', \"note\": \"bench\"}'))"
                        " FROM unnest(%s::text[]) c, generate_series(1, %s) g", (list(channels), n))
        if mail:
            self.db.execute("""
                SELECT count(pgrelay_notifier.send('all_mail', ARRAY['Ann Example <ann@example.org>'],
                                                   'Benchmark message ' || g, 'Hello Ann, message ' || g || '.'))
                FROM generate_series(1, %s) g""", (n,))
        self.db.execute("VACUUM ANALYZE pgrelay.queue")
        self.db.execute("CHECKPOINT")
        p = self.start_processor(name, ["--workers=%d" % ALLKINDS_WORKERS, "--secret-env=HOOK_SECRET=webhook/all_hook"],
                                 env={"HOOK_SECRET": secret})
        processed, ok, ms = self.wait_batches(p, total, timeout=900)
        status = self.proc_status(p.pid)
        rollup = self.smaps_rollup(p.pid)
        groups = self.memory_map(p.pid)
        self.stop_processor(p)
        if ok != total:
            raise RuntimeError("%s: %d processed, %d ok of %d" % (name, processed, ok, total))
        say("  Processor, %d workers: %d events in %d ms, VmHWM %d kB (RssAnon %d, RssFile %d kB), %d threads;"
            " at the end: Rss %d, Pss %d kB"
            % (ALLKINDS_WORKERS, total, ms, status["VmHWM"], status["RssAnon"], status["RssFile"],
               status["Threads"], rollup.get("Rss", 0), rollup.get("Pss", 0)))
        for key, (kb, anon) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
            if kb >= 64:
                say("    %-40s %6d kB (anonymous %d kB)" % (key, kb, anon))
        return dict(status, Pss=rollup.get("Pss", 0), groups=groups)

    def run_allkinds(self):
        say("allkinds: %d events on each of six channels, one of each kind (sql, email, webhook, redis, kafka,"
            " rabbitmq), drained by one Processor with %d workers; first the sql channel's events alone"
            % (ALLKINDS_EVENTS, ALLKINDS_WORKERS))
        secret = self.allkinds_channels()
        try:
            self.results["allkinds_sql"] = self.allkinds_run("allkinds-sql", ["bench"], False, secret)
            if os.environ.get("ALLKINDS_EACH") == "1":   # each kind beside the sql channel, one at a time
                for kind in ("all_mail", "all_hook", "all_redis", "all_kafka", "all_rmq"):
                    say("  the sql channel and %s" % kind)
                    self.allkinds_run("allkinds-" + kind, ["bench"] + ([kind] if kind != "all_mail" else []),
                                      kind == "all_mail", secret)
            self.results["allkinds"] = self.allkinds_run(
                "allkinds", ["bench", "all_hook", "all_redis", "all_kafka", "all_rmq"], True, secret)
        finally:
            for name in ("all_hook", "all_redis", "all_kafka", "all_rmq"):
                self.db.execute("SELECT pgrelay.unregister(%s)", (name,))
            self.rabbit.stop()
            self.hookd.stop()
            self.terminate(self.kafka_mock, 30)
            self.children.remove(self.kafka_mock)

    # ---- 8: the cost of a scrape of --metrics --------------------------------------------------

    @staticmethod
    def scrape(addr):
        t0 = time.monotonic()
        with urllib.request.urlopen("http://%s/metrics" % addr, timeout=30) as r:
            size = len(r.read())
        return time.monotonic() - t0, size

    def run_metrics(self):
        say("metrics: --metrics scraped with %d channels, with an empty queue and with %d events queued "
            "for later" % (METRICS_CHANNELS, METRICS_QUEUED))
        self.db.execute("SELECT count(pgrelay.register('m' || n, 'sql', handler => 'bench.record(text)')) "
                        "FROM generate_series(1, %s) n", (METRICS_CHANNELS,))
        p = self.start_processor("metrics", ["--metrics=127.0.0.1:0"])
        self.wait_log(p, r" started ")
        addr = re.search(r" metrics_listening address=(\S+)", self.log_text(p)).group(1)
        for label, queued in (("empty", 0), ("queued", METRICS_QUEUED)):
            if queued:
                self.db.execute("INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, run_at) "
                                "SELECT n, 'm' || (n %% %s + 1), 'sql', '', now() + interval '1 day' "
                                "FROM generate_series(1, %s) n", (METRICS_CHANNELS, queued))
                self.db.execute("VACUUM ANALYZE pgrelay.queue")
            # a scrape more than a second after the last read makes the main loop read the queue
            fresh = []
            for _ in range(5):
                time.sleep(1.1)
                fresh.append(self.scrape(addr)[0])
            cpu0 = self.cpu_seconds(p.pid)[1]
            cached = [self.scrape(addr) for _ in range(METRICS_SCRAPES)]
            cpu1 = self.cpu_seconds(p.pid)[1]
            fresh.sort()
            times = sorted(t for t, _ in cached)
            self.results["metrics_" + label] = (fresh[2] * 1000, times[len(times) // 2] * 1000,
                                                (cpu1 - cpu0) / METRICS_SCRAPES * 1000, cached[-1][1])
            say("  %s: a scrape that reads the queue %.1f ms (median of 5), one within a second of the last "
                "read %.2f ms; %.3f ms of the Processor's CPU per scrape; %d bytes"
                % ((label,) + self.results["metrics_" + label]))
        self.stop_processor(p)
        self.db.execute("DELETE FROM pgrelay.queue WHERE channel LIKE 'm%%'")
        self.db.execute("SELECT count(pgrelay.unregister('m' || n)) FROM generate_series(1, %s) n",
                        (METRICS_CHANNELS,))

    # ---- 13: the web console's pages with a big history -----------------------------------

    def console_history(self):
        """CONSOLE_ROWS attempts in pgrelay.log, newest now, spread evenly over CONSOLE_DAYS days (ids
        carry their time, as _next_id() makes them), over CONSOLE_CHANNELS channels: one in 200 retried,
        one in 1000 failed (and in pgrelay.failed), the rest done."""
        have = self.scalar("SELECT count(*) FROM pgrelay.log WHERE channel LIKE 'c%%'")
        if have >= CONSOLE_ROWS:
            return
        say("console: adding %s rows of history to pgrelay.log over %d days (a few minutes)"
            % (format(CONSOLE_ROWS, ","), CONSOLE_DAYS))
        self.db.execute("SELECT count(pgrelay.register('c' || n, 'sql', handler => 'bench.record(text)')) "
                        "FROM generate_series(0, %s) n", (CONSOLE_CHANNELS - 1,))
        step = CONSOLE_DAYS * 86400000.0 / CONSOLE_ROWS
        chunk = 1000000
        for lo in range(0, CONSOLE_ROWS, chunk):
            self.db.execute("""
                INSERT INTO pgrelay.log (id, queue_id, event_id, channel, action_type, payload, attempt, outcome,
                                         error, sqlstate, node_id, queued_at, started_at, finished_at)
                SELECT i, i, i, 'c' || (g %% %(ch)s), 'sql', 'order ' || g || ' for customer ' || (g %% 9973),
                       1, o, CASE WHEN o <> 'ok' THEN 'handler failed: timeout talking to the stock service' END,
                       CASE WHEN o <> 'ok' THEN 'P0001' END, 0, t, t, t + interval '2 milliseconds'
                FROM generate_series(%(lo)s::bigint, %(hi)s::bigint) g,
                     LATERAL (SELECT now() - (g * %(step)s) * interval '1 millisecond' AS t) tt,
                     LATERAL (SELECT pgrelay._id_floor(tt.t) + (g %% 4096) AS i,
                                     CASE WHEN g %% 1000 = 7 THEN 'failed' WHEN g %% 200 = 3 THEN 'retry'
                                          ELSE 'ok' END AS o) x""",
                            {"ch": CONSOLE_CHANNELS, "lo": lo + 1, "hi": min(lo + chunk, CONSOLE_ROWS), "step": step})
        self.db.execute("""
            INSERT INTO pgrelay.failed_events (event_id, channel, action_type, payload, attempts, error, sqlstate,
                                               log_id, node_id, queued_at, failed_at)
            SELECT event_id, channel, action_type, payload, 1, error, sqlstate, id, node_id, queued_at, finished_at
            FROM pgrelay.log WHERE outcome = 'failed' AND channel LIKE 'c%%' ON CONFLICT DO NOTHING""")
        self.db.execute("VACUUM ANALYZE pgrelay.log, pgrelay.failed_events")

    def console_cookie(self, p):
        """The session cookie of a console without a password file, from the sign-in address it logged."""
        self.wait_log(p, r" web_sign_in ")
        url = urllib.parse.urlsplit(re.search(r' web_sign_in url="([^"]+)"', self.log_text(p)).group(1))
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
        conn.request("GET", "%s?%s" % (url.path, url.query))
        r = conn.getresponse()
        r.read()
        conn.close()
        assert r.status == 303, r.status
        return r.getheader("Set-Cookie").split(";")[0]

    def page_ms(self, base, path, cookie):
        t0 = time.monotonic()
        with urllib.request.urlopen(urllib.request.Request(base + path, headers={"Cookie": cookie}), timeout=60) as r:
            body = r.read()
            assert r.status == 200 and b"</html>" in body, (path, r.status)
        return (time.monotonic() - t0) * 1000

    def console_pages(self, failed_id, q_time):
        return [("overview", "/"), ("channels", "/channels"), ("events", "/events"),
                ("events of a channel", "/events?channel=c7"), ("failed attempts", "/events?outcome=failed"),
                ("failed attempts of a channel", "/events?channel=c7&outcome=failed"),
                ("a time range", "/events?from=%s&to=%s" % q_time),
                ("payload text", "/events?q=customer+4242"), ("one event", "/event?id=%d" % failed_id),
                ("failures", "/failures"), ("failures of a channel", "/failures?channel=c7"),
                ("processors", "/processors"), ("schedules", "/schedules"), ("topics", "/topics"),
                ("a key", "/events?key=k7")]

    def run_console(self):
        self.console_history()
        rows = self.scalar("SELECT count(*) FROM pgrelay.log")
        self.db.execute("DO $$ BEGIN CREATE ROLE console_admin LOGIN IN ROLE pgrelay_admin; "
                        "CREATE ROLE console_monitor LOGIN IN ROLE pgrelay_monitor; "
                        "EXCEPTION WHEN duplicate_object THEN NULL; END $$")
        failed_id = self.scalar("SELECT max(event_id) FROM pgrelay.failed")
        q_time = tuple(urllib.parse.quote(t) for t in self.db.execute(
            "SELECT to_char(now() - interval '3 days', 'YYYY-MM-DD HH24:MI'),"
            " to_char(now() - interval '2 days 23 hours', 'YYYY-MM-DD HH24:MI')").fetchone())
        seq0 = self.log_seq_scans()
        results = {}
        for role in ("console_admin", "console_monitor"):
            logpath = os.path.join(self.work, "web-%s.log" % role)
            logf = open(logpath, "wb")
            p = subprocess.Popen([PROCESSOR, "web", "-d", self.dsn(user=role), "--listen=127.0.0.1:0"],
                                 stdout=logf, stderr=subprocess.STDOUT)
            p.logpath, p.logf = logpath, logf
            self.children.append(p)
            self.wait_log(p, r" web_listening ")
            base = re.search(r" web_listening url=(\S+)/", self.log_text(p)).group(1)
            cookie = self.console_cookie(p)
            # the overviews that read the rest of the last day, a little each, until it is counted
            fill = []
            while len(fill) < 1000:
                t0 = time.monotonic()
                with urllib.request.urlopen(urllib.request.Request(base + "/", headers={"Cookie": cookie}),
                                            timeout=60) as resp:
                    counting = b'id="counting"' in resp.read()
                fill.append((time.monotonic() - t0) * 1000)
                if not counting:
                    break
            for name, path in self.console_pages(failed_id, q_time):
                before = self.log_seq_scans()
                times = sorted(self.page_ms(base, path, cookie) for _ in range(CONSOLE_LOADS))
                results[(role, name)] = (statistics.median(times), times[-1])
                scans = self.log_seq_scans() - before
                say("  %s %s (%s): median %.1f ms, max %.1f ms%s" % (role, name, path, *results[(role, name)],
                                                                   "; %d SEQUENTIAL SCANS of pgrelay.log" % scans
                                                                   if scans else ""))
            results[(role, "first overview")] = (len(fill), max(fill))
            say("  %s: %d overviews until the last day was counted, the slowest %.0f ms, median %.0f ms"
                % (role, len(fill), max(fill), statistics.median(fill)))
            self.stop_processor(p)
        self.results["console"] = (rows, results, self.log_seq_scans() - seq0)

    def log_seq_scans(self):
        """Sequential scans of pgrelay.log so far (the statistics collector's count, flushed first)."""
        time.sleep(0.6)                   # a backend reports its counts at most every 500 ms
        self.db.execute("SELECT pg_stat_clear_snapshot()")
        return self.scalar("SELECT seq_scan FROM pg_stat_user_tables WHERE relid = 'pgrelay.log'::regclass")

    # ---- 9: instructions per statement, counted by callgrind ----------------------------------

    def run_instructions(self):
        if shutil.which(VALGRIND) is None:
            say("instructions: %s not found, skipped" % VALGRIND)
            return
        say("instructions: each statement %d and %d times in a single-user server under callgrind,"
            " one transaction each" % INSTR_RUNS)
        per = instructions(self.work)
        for name, _, _, check in INSTR_STATEMENTS:
            say("  %s: %.0f instructions per %s" % (name, per[name], "event" if check in ("batch", "held")
                                                           else "statement"))
        self.results["instructions"] = per

    # ---- the table --------------------------------------------------------------------------

    def table(self):
        r = self.results
        rows = []

        def row(figure, value, ref="", ratio="", target="", verdict=""):
            rows.append((figure, value, ref, ratio, target, verdict))

        def pf(ok):
            return "PASS" if ok else "MISS"

        def spread(values, unit="", fmt="%.0f"):
            """The median of several runs, and their range."""
            med = statistics.median(values)
            if len(values) == 1:
                return (fmt + "%s") % (med, unit)
            return (fmt + "%s (" + fmt + "-" + fmt + ")") % (med, unit, min(values), max(values))

        def ratios(values, refs):
            """Each run against the reference of the same run: the median ratio, and the range."""
            q = [100.0 * v / f for v, f in zip(values, refs)]
            return statistics.median(q), spread(q, "%")

        def broker(tag, key, what, events, workers, ref_name, ref_short):
            """A broker phase: the Processor against the broker's own client, the target at 4
            workers, and the database floor (BROKER_FLOOR_SQL), which no relay keeping the audit
            row can pass: when it is below the target, the target is out of reach. The floor is the
            best of its runs, so that a slow run cannot make a target look out of reach."""
            ref, runs, goal = r[key + "_ref"], r[key + "_floor"], TARGETS[key + "4"]
            floor = max(runs)
            for n in workers:
                got = r["%s%d" % (key, n)]
                tgt = verdict = ""
                if n == 4:
                    tgt, verdict = ">= %.1fx %s" % (goal, ref_short), pf(got / ref >= goal)
                row("%s   %s, %d events, %d workers" % (tag, what, events, n), "%.0f events/s" % got,
                    "%s: %.0f/s" % (ref_name, ref), "%.2fx" % (got / ref), tgt, verdict)
            row("%s   database floor, %d sessions, %d events/commit, no broker" % (tag, BROKER_FLOOR_SESSIONS,
                                                                               DEFAULT_BATCH),
                "", "pgbench: %.0f events/s" % floor
                + (" (best of %d, from %.0f)" % (len(runs), min(runs)) if len(runs) > 1 else ""),
                "4 workers %.2fx" % (r[key + "4"] / floor))
            row("%s   the target against the database floor" % tag, "",
                "floor %.1fk/s %s %.1fx %s %.1fk/s" % (floor / 1000, "<" if floor < goal * ref else ">=", goal,
                                                       ref_short, goal * ref / 1000),
                "%.2fx" % (floor / (goal * ref)), "", "unreachable" if floor < goal * ref else "reachable")

        if "drain" in r:
            best_peer = r.get("best_peer", {})
            for n in DRAIN_WORKERS:
                floor = r["floor"][n]
                row("1-2 floor, %d clients (one commit per event)" % n, "", "pgbench: " + spread(floor, " tx/s"))
                for size in DRAIN_BATCHES:
                    got = r["drain"][(n, size)]
                    med, text = ratios(got, floor)
                    tgt = verdict = ""
                    if n == 4 and size == 1:
                        tgt = ">= %d%% of floor" % (TARGETS["single4"] * 100)
                        verdict = pf(med >= 100 * TARGETS["single4"])
                    elif n == 4 and size == DEFAULT_BATCH:
                        tgt = ">= %.1fx floor" % TARGETS["batched4"]
                        verdict = pf(med >= 100 * TARGETS["batched4"])
                    row("1-2 drain %d, %d workers, %d event%s/commit%s"
                        % (DRAIN_EVENTS, n, size, "s" if size > 1 else "", " (default)" if size == DEFAULT_BATCH else ""),
                        spread(got, " ev/s"), "", text, tgt, verdict)
                if n == LIMIT_CLIENTS and r.get("limit"):
                    med, text = ratios(r["drain"][(n, DEFAULT_BATCH)], r["limit"])
                    row("1-2 batched limit, %d clients, %d events/commit" % (n, DEFAULT_BATCH), "",
                        "pgbench: " + spread(r["limit"], " ev/s"))
                    row("1-2 drain %d, %d workers, default / batched limit" % (DRAIN_EVENTS, n), "", "", text,
                        ">= %.1fx limit" % TARGETS["limit4"], pf(med >= 100 * TARGETS["limit4"]))
            for n in DRAIN_WORKERS:
                s8 = r["rss"][n]
                tgt = verdict = ""
                if n == 8:
                    tgt, verdict = "<= %.0f MB" % TARGETS["rss_mb"], pf(s8["VmHWM"] / 1024.0 <= TARGETS["rss_mb"])
                row("5   peak RSS, %d workers, end of drain (max)" % n, "%.1f MB" % (s8["VmHWM"] / 1024.0),
                    "anon %.1f + file %.1f MB" % (s8["RssAnon"] / 1024.0, s8["RssFile"] / 1024.0), "", tgt, verdict)
        if "peers" in r:
            for n, name, rates, how in r["peers"]:
                row("P   %s, %d workers" % (name, n), spread(rates, " jobs/s"), how)
            for n in DRAIN_WORKERS:
                mine, best = r["peer_relay"][n], r["best_peer"][n]
                row("P   pg_relay (default batches) / best peer, %d workers" % n,
                    "%.1fx" % (mine / best), "%.0f / %.0f ev/s (medians)" % (mine, best), "",
                    ">= %.0fx" % TARGETS["peers"], pf(mine / best >= TARGETS["peers"]))
        if "pgque" in r:
            g = r["pgque"]
            best = g["best"]
            for n in PGQUE_WORKERS:
                row("P   pg_relay, %s events, default batches, %d worker%s (from its rows)"
                    % (format(PGQUE_EVENTS, ","), n, "s" if n > 1 else ""), spread(g["relay"][n], " ev/s"))
                row("P   PgQue %s, %s" % (g["version"], "1 consumer" if n == 1 else "%d cooperative subconsumers" % n),
                    spread(g["pgque"][n], " ev/s"), "ticks of %d events; bench/pgque.sql" % PGQUE_TICK_EVENTS)
            for n in PGQUE_WORKERS:
                mine = statistics.median(g["relay"][n])
                key = "pgque1" if n == 1 else "pgque4"
                row("P   pg_relay / PgQue's best, %d worker%s" % (n, "s" if n > 1 else ""), "%.2fx" % (mine / best),
                    "%.0f / %.0f ev/s (medians)" % (mine, best), "", ">= %.1fx" % TARGETS[key],
                    pf(mine / best >= TARGETS[key]))
            for n in PGQUE_WORKERS:
                for mix in CONTRACT_MIXES:
                    values = g["contract"][(n, mix)]
                    mine = statistics.median(values)
                    row("P   contract floor, no queue, %d session%s, %d/commit: %s"
                        % (n, "s" if n > 1 else "", mix[2], mix[3]),
                        spread(values, " ev/s"), "/ PgQue's best (medians)", "%.2fx" % (mine / best))
            for n in PGQUE_WORKERS:
                only = statistics.median(g["contract"][(n, CONTRACT_MIXES[0])])
                audited = statistics.median(g["contract"][(n, CONTRACT_MIXES[2])])
                row("P   contract floor, %d session%s: handler + audit row / handler only"
                    % (n, "s" if n > 1 else ""), "%.2fx" % (audited / only), "%.0f / %.0f ev/s (medians)"
                    % (audited, only), "", ">= %.1fx" % TARGETS["audit_share"] if n == 4 else "",
                    pf(audited / only >= TARGETS["audit_share"]) if n == 4 else "")
            full = statistics.median(g["contract"][(4, CONTRACT_MIXES[3])])
            mine = statistics.median(g["relay"][4])
            row("P   pg_relay, 4 workers / contract floor (subtransaction + audit row), 4 sessions",
                "%.2fx" % (mine / full), "%.0f / %.0f ev/s (medians)" % (mine, full), "",
                ">= %.1fx" % TARGETS["contract4"], pf(mine / full >= TARGETS["contract4"]))
            audit = statistics.median([a for a, _ in g["costs"]])
            delete = statistics.median([d for _, d in g["costs"]])
            row("P   in one transaction, batches of %d: audit row, us an event" % DEFAULT_BATCH,
                spread([a for a, _ in g["costs"]], " us", "%.2f"),
                "queue DELETE: " + spread([d for _, d in g["costs"]], " us", "%.2f"), "%.1fx" % (audit / delete),
                "<= %.1fx DELETE" % TARGETS["audit_delete"], pf(audit / delete <= TARGETS["audit_delete"]))
            for what, label in (("notify", "notify() over generate_series"), ("notify_many", "notify_many()")):
                if what in g["bulk"]:
                    med, text = ratios(g["bulk"][what], g["bulk"]["send_batch"])
                    row("P   bulk enqueue of %s in one statement: %s" % (format(PGQUE_BULK, ","), label),
                        spread(g["bulk"][what], " ev/s"), "send_batch: " + spread(g["bulk"]["send_batch"], " ev/s"),
                        text, ">= %d%% of send_batch" % (100 * TARGETS["bulk"]), pf(med >= 100 * TARGETS["bulk"]))
            med, text = ratios(g["single"]["notify"], g["single"]["send"])
            row("P   enqueue one per transaction, %d sessions: notify()" % PGQUE_SESSIONS,
                spread(g["single"]["notify"], "/s"), "pgque.send(): " + spread(g["single"]["send"], "/s"), text)
        if "notify" in r:
            for n in PRODUCER_SESSIONS:
                med, text = ratios(r["notify"][n], r["plain"][n])
                tgt = verdict = ""
                if n == 8:
                    tgt, verdict = ">= %d%% of insert" % (TARGETS["producer8"] * 100), pf(med >= 100 * TARGETS["producer8"])
                row("P   notify(), %d session%s, one per commit" % (n, "s" if n > 1 else ""),
                    spread(r["notify"][n], "/s"), "plain insert: " + spread(r["plain"][n], "/s"), text, tgt, verdict)
        if "bulk_ms" in r:
            b = r["bulk_ms"]
            plain = statistics.median(b["plain"])
            for what, label in (("notify_many", "notify_many()"), ("notify", "notify() x %d" % BULK_PAYLOADS)):
                med = statistics.median(b[what])
                tgt = verdict = ""
                if what == "notify_many":
                    tgt, verdict = "<= %.1fx insert" % TARGETS["bulk_plain"], pf(med <= TARGETS["bulk_plain"] * plain)
                row("P   %s, %s payloads in one statement" % (label, format(BULK_PAYLOADS, ",")),
                    spread(b[what], " ms", "%.1f"), "multi-row insert: " + spread(b["plain"], " ms", "%.1f"),
                    "%.2fx" % (med / plain), tgt, verdict)
        if "topics" in r:
            t = r["topics"]
            med, text = ratios(t["publish1"], t["notify"])
            row("P   publish(), 1 subscriber, 1 session, calls", spread(t["publish1"], "/s"),
                "notify(): " + spread(t["notify"], "/s"), text)
            med, text = ratios(t["publish5"], t["notify_many5"])
            row("P   publish(), 5 subscribers, 1 session, calls", spread(t["publish5"], "/s"),
                "notify_many() of 5: " + spread(t["notify_many5"], "/s"), text,
                ">= %d%% of notify_many" % (TARGETS["publish5"] * 100), pf(med >= 100 * TARGETS["publish5"]))
        if "probe_us" in r:
            row("3   probe in the server, empty queue, %s log rows" % format(r["log_rows"], ","),
                "%.1f us" % r["probe_server_us"], "1,000 events scheduled later: %.1f us" % r["probe_sched_us"], "",
                "<= %.0f us" % TARGETS["probe_server_us"], pf(r["probe_server_us"] <= TARGETS["probe_server_us"]))
            row("3   probe, as a client sees it (pgbench)", "%.0f us" % r["probe_us"],
                "SELECT 1: %.0f us" % r["rtt_us"], "",
                "<= %.0f us" % TARGETS["probe_us"], pf(r["probe_us"] <= TARGETS["probe_us"]))
            row("    probe, simple protocol (parse+plan)", "%.0f us" % r["probe_simple_us"],
                "SELECT 1: %.0f us" % r["rtt_simple_us"])
        if "idle_cpu" in r:
            row("4   idle CPU, %d s" % IDLE_SECONDS, "%.3f%%" % r["idle_cpu"],
                "schedstat %.4f%%; server %.4f%%" % (r["idle_cpu_ns"], r["idle_server_cpu"]), "",
                "< %.1f%%" % TARGETS["idle_cpu"], pf(r["idle_cpu"] < TARGETS["idle_cpu"]))
            row("4   idle transactions, %d s" % IDLE_SECONDS, "%.2f tx/s" % r["idle_tx"],
                "probes logged: %.2f/s" % r["idle_probes"], "", "1 probe/s (poll 1 s)",
                pf(r["idle_tx"] <= TARGETS["idle_tx"]))
        if "email_rss4" in r:
            se = r["email_rss4"]
            row("    peak RSS, 4 workers, after mail", "%.1f MB" % (se["VmHWM"] / 1024.0),
                "anon %.1f + file %.1f MB" % (se["RssAnon"] / 1024.0, se["RssFile"] / 1024.0))
        for poll in LATENCY_POLLS:
            if "lat_%s" % poll in r:
                p50, p99, mx, produced = r["lat_%s" % poll]
                row("6   latency commit -> log, %d/s, poll %s" % (LATENCY_RATE, poll),
                    "p50 %.0f ms, p99 %.0f ms" % (p50, p99),
                    "max %.0f ms; %.0f events/s made" % (mx, produced))
        if "email4" in r:
            for n in EMAIL_WORKERS:
                got, floor = r["email%d" % n], r["smtp_floor%d" % n]
                tgt = verdict = ""
                if n == 4:
                    tgt, verdict = ">= %d%% of floor" % (TARGETS["email4"] * 100), pf(got / floor >= TARGETS["email4"])
                row("7   email %d messages, %d worker%s" % (EMAILS, n, "s" if n > 1 else ""), "%.0f emails/s" % got,
                    "smtplib %d conn%s: %.0f msg/s" % (n, "s" if n > 1 else "", floor), "%.0f%%" % (100 * got / floor),
                    tgt, verdict)
        if "redis_ref" in r:
            broker("R", "redis", "Redis stream", REDIS_EVENTS, REDIS_WORKERS, "redis-benchmark XADD, 1 client", "XADD")
            s8 = r["redis_rss8"]
            row("R   peak RSS, 8 workers, after Redis", "%.1f MB" % (s8["VmHWM"] / 1024.0),
                "anon %.1f + file %.1f MB" % (s8["RssAnon"] / 1024.0, s8["RssFile"] / 1024.0), "",
                "<= %.0f MB" % TARGETS["rss_mb"], pf(s8["VmHWM"] / 1024.0 <= TARGETS["rss_mb"]))
        if "kafka_ref" in r:
            broker("K", "kafka", "Kafka topic (mock cluster)", KAFKA_EVENTS, KAFKA_WORKERS, "kcat -P, batched", "kcat")
            s8 = r["kafka_rss8"]
            row("K   peak RSS, 8 workers, after Kafka", "%.1f MB" % (s8["VmHWM"] / 1024.0),
                "anon %.1f + file %.1f MB" % (s8["RssAnon"] / 1024.0, s8["RssFile"] / 1024.0), "", "", "")
        if "rmq_ref" in r:
            broker("Q", "rmq", "RabbitMQ", RMQ_EVENTS, RMQ_WORKERS,
                   "rabbitmq-c, confirms, %d in flight, 1 conn" % DEFAULT_BATCH, "rabbitmq-c")
            s8 = r["rmq_rss8"]
            row("Q   peak RSS, 8 workers, after RabbitMQ", "%.1f MB" % (s8["VmHWM"] / 1024.0),
                "anon %.1f + file %.1f MB" % (s8["RssAnon"] / 1024.0, s8["RssFile"] / 1024.0), "",
                "<= %.0f MB" % TARGETS["rss_mb"], pf(s8["VmHWM"] / 1024.0 <= TARGETS["rss_mb"]))
        if "allkinds_sql" in r:
            s8 = r["allkinds_sql"]
            row("A   peak RSS, %d workers, only the sql channel's events" % ALLKINDS_WORKERS,
                "%.1f MB" % (s8["VmHWM"] / 1024.0),
                "anon %.1f + file %.1f MB" % (s8["RssAnon"] / 1024.0, s8["RssFile"] / 1024.0))
        if "allkinds" in r:
            s8 = r["allkinds"]
            row("A   peak RSS, %d workers, one channel of each kind" % ALLKINDS_WORKERS, "%.1f MB" % (s8["VmHWM"] / 1024.0),
                "anon %.1f + file %.1f MB" % (s8["RssAnon"] / 1024.0, s8["RssFile"] / 1024.0), "",
                "<= %.0f MB" % TARGETS["rss_mb"], pf(s8["VmHWM"] / 1024.0 <= TARGETS["rss_mb"]))
        if "bloat" in r:
            for label, value in r["bloat"]:
                row("B   " + label, value)
        if r.get("held", {}).get("rounds"):
            h = r["held"]
            probe = lambda server, client: "probe %.1f us in the server, %.0f us by pgbench" % (server, client)
            row("H   held snapshot: before, empty queue", "", probe(*h["before"][:2]) + "; " + self.held_text(h["before"][2]))
            for k, (rate, server, client, sizes) in enumerate(h["rounds"], 1):
                row("H   round %d of %d: %s events, 4 workers, default batches" % (k, len(h["rounds"]), format(HELD_EVENTS, ",")),
                    "%.0f ev/s" % rate, probe(server, client) + "; " + self.held_text(sizes))
            first, last = h["rounds"][0][0], h["rounds"][-1][0]
            row("H   held snapshot: last round / first", "%.0f%%" % (100.0 * last / first),
                "%.0f / %.0f ev/s" % (last, first), "", ">= %d%%" % (100 * TARGETS["held_rate"]),
                pf(last >= TARGETS["held_rate"] * first))
            worst = max(h["rounds"], key=lambda x: x[1])
            row("H   held snapshot: the probe at its largest (in the server)", "%.1f us" % worst[1],
                "by pgbench: %.0f us at most; SELECT 1: %.0f us" % (max(x[2] for x in h["rounds"]), h["rtt_us"]), "",
                "<= %.0f us" % TARGETS["held_probe_us"], pf(worst[1] <= TARGETS["held_probe_us"]))
            secs, waiting, server, client, sizes = h["autovacuum"]
            row("H   snapshot ended, autovacuum and the reports have been by (%.0f s%s)" % (secs, ", not all" if waiting else ""), "",
                probe(server, client) + "; " + self.held_text(sizes))
            bound = self.held_sizes(h["rounds"][0][3])[0]
            after = self.held_sizes(h["vacuum"][2])[0]
            row("H   then a VACUUM of every pgrelay table", self.size(after),
                probe(*h["vacuum"][:2]) + "; " + self.held_text(h["vacuum"][2]), "",
                "<= size after round 1 (%s)" % self.size(bound), pf(after <= bound))

        for label, what in (("empty", "empty queue"), ("queued", "%s queued" % format(METRICS_QUEUED, ","))):
            if "metrics_" + label in r:
                fresh, cached, cpu, size = r["metrics_" + label]
                row("8   scrape, %d channels, %s" % (METRICS_CHANNELS, what),
                    "%.1f ms (reads the queue)" % fresh,
                    "within 1 s of a read: %.2f ms; CPU %.3f ms; %.1f KB" % (cached, cpu, size / 1024.0))

        if "console" in r:
            rows_n, res, seqs = r["console"]
            pages = [(k, v) for k, v in res.items() if k[1] != "first overview"]
            (role, name), (med, mx) = max(pages, key=lambda kv: kv[1][0])
            row("13  web console, slowest page, %s log rows" % format(rows_n, ","), "%.1f ms" % med,
                "%s as %s (max %.0f ms); %d pages x %d loads" % (name, role.split("_")[1], mx, len(pages), CONSOLE_LOADS),
                "", "<= %.0f ms" % TARGETS["console_ms"], pf(med <= TARGETS["console_ms"]))
            loads, slowest = res[("console_admin", "first overview")]
            row("13  web console, overviews until the last day is counted", "%d, slowest %.0f ms" % (loads, slowest),
                "sequential scans of pgrelay.log during all loads: %d" % seqs)

        if "instructions" in r:
            ins = r["instructions"]
            k = lambda name: "%.0fk" % (ins[name] / 1000.0)
            row("12  instructions per notify() (callgrind)", k("notify"), "plain insert: %s; SELECT 1: %s"
                % (k("plain"), k("select1")), "%.0f%%" % (100.0 * ins["plain"] / ins["notify"]))
            row("12  instructions per event, one per commit", k("process_one"), "floor statement: " + k("floor"),
                "%.0f%%" % (100.0 * ins["floor"] / ins["process_one"]),
                "<= %.0fx floor" % TARGETS["instr_event"], pf(ins["process_one"] <= TARGETS["instr_event"] * ins["floor"]))
            if "process_batch" in ins:
                row("12  instructions per event, batches of %d" % DEFAULT_BATCH, k("process_batch"),
                    "batched limit's statement: %s per event" % k("limit"),
                    "%.0f%%" % (100.0 * ins["limit"] / ins["process_batch"]))
            if "held" in ins:
                row("12  instructions per event, a broker kind's batch of %d" % DEFAULT_BATCH, k("held"),
                    "its writes in one plain statement: %s per event" % k("held_floor"),
                    "%.0f%%" % (100.0 * ins["held_floor"] / ins["held"]))
            if "publish5" in ins:
                row("12  instructions per publish(), 5 subscribers", k("publish5"),
                    "notify_many() of 5: " + k("notify_many5"), "%.0f%%" % (100.0 * ins["notify_many5"] / ins["publish5"]))

        head = ("figure", "Processor", "floor / reference", "ratio", "target", "")
        widths = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]
        line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
        out = [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
        out += [line(x) for x in rows]
        return "\n".join(out)

    SETTINGS = ("fsync", "synchronous_commit", "full_page_writes", "wal_level", "shared_buffers",
                "wal_buffers", "max_wal_size", "checkpoint_timeout", "jit", "autovacuum", "max_connections")

    def settings_in_effect(self):
        """The cluster's settings as the server reports them (after its config file), not as asked."""
        rows = dict(self.sql("SELECT name, setting || COALESCE(unit, '') FROM pg_settings WHERE name = ANY (%s)",
                             (list(self.SETTINGS),)))
        return ", ".join("%s=%s" % (k, rows[k]) for k in self.SETTINGS if k in rows)

    def header(self):
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) / 1024 / 1024
        return ("pg_relay benchmark: %s, %d CPU(s), %.0f GiB RAM, PostgreSQL %s, load average at start %.2f\n"
                "cluster: %s; unix socket; Processor as a pgrelay_processor login role\n"
                "figures: a repeated figure is the median of %d runs (their range in brackets), a database floor"
                " the best of them, a broker's drain one run; ratios are against the reference of the same run\n"
                % (os.uname().release, os.cpu_count(), mem, self.pg_version, self.load0, self.settings,
                   REPEATS))

    # ---- driver -----------------------------------------------------------------------------

    def run(self, phases):
        self.load0 = os.getloadavg()[0]
        t0 = time.monotonic()
        self.setup()
        for name in RUN_ORDER:
            if name in phases:
                getattr(self, "run_" + name)()
        say("done in %.0f s" % (time.monotonic() - t0))
        print(self.header())
        print(self.table())

    def cleanup(self):
        for p in list(self.children):
            self.terminate(p, 30)
        for c in ("db", "admin"):
            if hasattr(self, c):
                getattr(self, c).close()
        subprocess.run([PGCLUSTER, "stop", self.cluster, "fast"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        if os.environ.get("KEEP") == "1":
            say("kept %s" % self.work)
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def main():
    phases = sys.argv[1:] or list(PHASES)
    unknown = [p for p in phases if p not in PHASES + EXTRA_PHASES]
    if unknown:
        say("usage: bench/run [%s ...] (default: all but %s; they run in that order)"
            % (" ".join(RUN_ORDER), ", ".join(EXTRA_PHASES)))
        return 2
    if not os.access(PROCESSOR, os.X_OK):
        say("bench: %s is missing; run bench/run (make bench)" % PROCESSOR)
        return 2
    b = Bench()
    try:
        b.run(phases)
    finally:
        b.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
