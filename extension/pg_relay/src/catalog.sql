/* extension/pg_relay/src/catalog.sql: tables, indexes and sequences (run once, by the base install; upgrades change them in upgrade/) */

-- The logical clock behind _next_id(): value = milliseconds since 2026-01-01 UTC * 4096 + sequence.
CREATE SEQUENCE pgrelay._id_clock;


CREATE TABLE pgrelay.action_types (
    action_type text PRIMARY KEY,
    run_order   integer,
    description text
);
COMMENT ON TABLE pgrelay.action_types IS
    'Kinds of action; lower run_order is dispatched first within a batch, NULL last';
INSERT INTO pgrelay.action_types (action_type, run_order, description) VALUES
    ('sql', 10, 'call the channel''s handler function with the payload'),
    ('notify', 20, 'deliver a pg_relay_notifier message; the payload is the notification id'),
    ('webhook', 30, 'send the payload to the channel''s HTTP endpoint (pgrelay.webhooks), signed'),
    ('redis', 40, 'append the event to a Redis stream (pgrelay.destinations)'),
    ('kafka', 50, 'produce the event to a Kafka topic (pgrelay.destinations)'),
    ('rabbitmq', 60, 'publish the event to a RabbitMQ exchange, confirmed (pgrelay.destinations)');

CREATE TABLE pgrelay.channels (
    channel          text PRIMARY KEY,
    action_type      text NOT NULL REFERENCES pgrelay.action_types,
    handler          text,
    active           boolean NOT NULL DEFAULT true,
    concurrency_mode text NOT NULL DEFAULT 'parallel'
                     CHECK (concurrency_mode IN ('parallel', 'channel')),
    node_restricted  boolean NOT NULL DEFAULT false,
    max_attempts     integer NOT NULL DEFAULT 5 CHECK (max_attempts BETWEEN 1 AND 1000),
    -- Durations are bounded so that every one of them makes a valid timestamp and a timer: a
    -- timeout under a millisecond would round to "no timeout" (0) in statement_timeout. Bounded
    -- as intervals compare and in seconds, as the Processor reads them (_duration_ok()).
    timeout          interval NOT NULL DEFAULT '30 seconds'
                     CHECK (timeout >= '1 millisecond' AND timeout <= '24 hours'
                            AND extract(epoch FROM timeout) BETWEEN 0.001 AND 86400),
    backoff_base     interval NOT NULL DEFAULT '10 seconds'
                     CHECK (backoff_base >= '1 millisecond' AND backoff_base <= '1 day'
                            AND extract(epoch FROM backoff_base) BETWEEN 0.001 AND 86400),
    backoff_max      interval NOT NULL DEFAULT '1 hour'
                     CHECK (backoff_max >= backoff_base AND backoff_max <= '30 days'
                            AND extract(epoch FROM backoff_max) BETWEEN extract(epoch FROM backoff_base) AND 2592000),
    description      text,
    registered_by    name NOT NULL DEFAULT session_user,
    registered_at    timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    -- since 1.2
    max_payload_bytes integer NOT NULL DEFAULT 1048576
                      CHECK (max_payload_bytes BETWEEN 1 AND 104857600),
    retry_policy     text NOT NULL DEFAULT 'all' CHECK (retry_policy IN ('all', 'strict')),
    paused           boolean NOT NULL DEFAULT false,
    batch            boolean NOT NULL DEFAULT false,
    -- since 1.4
    shared_keys      boolean NOT NULL DEFAULT false
);
COMMENT ON TABLE pgrelay.channels IS 'Named event channels; change them with pgrelay.register()';
COMMENT ON COLUMN pgrelay.channels.handler IS
    'The handler of a sql channel, as the text of a regprocedure (schema-qualified). Stored as text '
    'because pg_upgrade refuses tables with regprocedure columns.';
COMMENT ON COLUMN pgrelay.channels.max_payload_bytes IS
    'Largest payload notify() accepts on this channel, in bytes';
COMMENT ON COLUMN pgrelay.channels.paused IS
    'pause(channel): no event of the channel is dispatched, while notify() keeps queueing them';
COMMENT ON COLUMN pgrelay.channels.batch IS
    'sql channels: the Processor may finish several of its events in one transaction, each handler in '
    'its own subtransaction (register() turns it on for sql channels; notify and webhook channels never batch)';
COMMENT ON COLUMN pgrelay.channels.shared_keys IS
    'notify(key => ...): false: a waiting event''s key is its producer''s (queue.key_owner), another role''s call '
    'with it is refused; true: any producer''s call with the key keeps, replaces or debounces it';
COMMENT ON COLUMN pgrelay.channels.retry_policy IS
    'all: every handler error is retried until max_attempts (SQLSTATE PGSTP stops at once); '
    'strict: only errors that can pass by themselves are retried';

CREATE TABLE pgrelay.queue (
    id              bigint PRIMARY KEY DEFAULT pgrelay._next_id(),
    event_id        bigint NOT NULL,
    channel         text NOT NULL,
    action_type     text NOT NULL,
    payload         text NOT NULL,
    owner_node      integer NOT NULL DEFAULT pgrelay._this_node(),
    node_restricted boolean NOT NULL DEFAULT false,
    attempt         integer NOT NULL DEFAULT 1,
    -- the clock, not now(): a row's run_at is never before its writer's lock (_queue_bound)
    run_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    queued_at       timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    -- since 1.3
    key             text,
    snoozes         integer NOT NULL DEFAULT 0,
    -- since 1.4: the role that queued the event of a key (NULL without a key: no width for the
    -- others); a role name, not an oid, since the row replicates and may be adopted by a node whose
    -- oids differ
    key_owner       text,
    -- since 1.4: the publication (publish()) this delivery is part of; NULL for a notify()
    publication_id  bigint,
    -- since 1.4: the event type that publication was made with (NULL: none, or a notify())
    event_type      text
);
COMMENT ON TABLE pgrelay.queue IS
    'Pending events only: a finished event leaves this table (its history is in pgrelay.log)';
COMMENT ON COLUMN pgrelay.queue.key IS
    'notify(key => ...): at most one event of a channel and key waits to start on a node (docs/sql-api.md)';
COMMENT ON COLUMN pgrelay.queue.key_owner IS
    'The login role (session_user) whose notify(key => ...) queued the event; only its calls with the key find it '
    'unless the channel shares its keys; a retry or a snooze keeps it; NULL for an event without a key, and for one queued before 1.4';
COMMENT ON COLUMN pgrelay.queue.publication_id IS
    'The publication (publish()) whose delivery to this channel the event is; NULL for an event queued by notify()';
COMMENT ON COLUMN pgrelay.queue.event_type IS
    'The event type of the publication (publish(event_type => ...)) whose delivery the event is; NULL for one '
    'without an event type and for an event queued by notify()';
COMMENT ON COLUMN pgrelay.queue.snoozes IS
    'How often the handler snoozed the event (SQLSTATE PGSNZ) without spending an attempt';
-- Two secondary indexes serve the probe (action_type = x AND run_at <= now()) and the ordered
-- fetch of queue_pending_ids() (per action type, by run_at, queued_at, id) in every mode, so that
-- a node never reads rows the dispatch rule does not offer it: unrestricted rows of
-- any owner (single mode, the leader), and rows by restriction and owner (a node's own rows under
-- multi-node and leader, restricted rows of any owner under single; adoption).
CREATE INDEX queue_free_idx ON pgrelay.queue (action_type, run_at, queued_at, id) WHERE NOT node_restricted;
CREATE INDEX queue_node_idx ON pgrelay.queue (node_restricted, owner_node, action_type, run_at, queued_at, id);
-- A node id has 1024 possible values. The plans PL/pgSQL keeps for the probe and the fetch are
-- generic: they guess how many rows "owner_node = this node" matches from the number of distinct
-- owners ANALYZE saw. With every row owned by one node that guess is "all of them", and a node
-- owning none would read every row of the others instead of its part of queue_node_idx.
ALTER TABLE pgrelay.queue ALTER COLUMN owner_node SET (n_distinct = 1024);
-- The pending event of a key (notify(key => ...)), looked up under the key's advisory lock.
CREATE INDEX queue_key_idx ON pgrelay.queue (owner_node, channel, key) WHERE key IS NOT NULL;
-- Every event is a row inserted and deleted, so the queue's dead rows come at the rate of events.
-- Autovacuum's defaults (20% of the table, throttled by a cost delay) let the dispatch indexes of a
-- busy queue grow by the pages of every row inserted between two visits, and keep growing from one
-- backlog to the next; vacuumed after every 1,000 dead rows and without the delay, they reuse their
-- emptied pages (docs/design/benchmark-notes.md, queue bloat).
ALTER TABLE pgrelay.queue SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
                               autovacuum_vacuum_cost_delay = 0);

CREATE TABLE pgrelay.log (
    id          bigint PRIMARY KEY DEFAULT pgrelay._next_id(),
    queue_id    bigint NOT NULL,
    event_id    bigint NOT NULL,
    channel     text NOT NULL,
    action_type text NOT NULL,
    payload     text,
    attempt     integer NOT NULL,
    outcome     text NOT NULL
                CHECK (outcome IN ('ok', 'partial', 'retry', 'timeout', 'failed', 'cancelled', 'snoozed')),
    error       text,
    sqlstate    text,
    detail      jsonb,
    node_id     integer NOT NULL,
    queued_at   timestamptz,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL,
    retry_at    timestamptz,
    -- since 1.4: the queue row's
    publication_id bigint,
    event_type     text
);
COMMENT ON TABLE pgrelay.log IS 'The audit trail: one row per attempt';
COMMENT ON COLUMN pgrelay.log.outcome IS
    'ok: done; partial: done, some recipients failed; retry: transient failure, retried at retry_at; '
    'timeout: timed out, retried at retry_at; failed: permanent failure or attempts exhausted; '
    'cancelled: the work was withdrawn before the attempt; snoozed: the handler asked to run again '
    'at retry_at, without spending an attempt';
COMMENT ON COLUMN pgrelay.log.publication_id IS
    'The publication (publish()) the attempt''s event was delivered for; NULL for an event queued by notify()';
COMMENT ON COLUMN pgrelay.log.event_type IS
    'The event type of the publication the attempt''s event was delivered for; NULL without one';
-- One log row per attempt (queue row) of an event; the index also serves "the history of event x".
CREATE UNIQUE INDEX log_event_idx ON pgrelay.log (event_id, queue_id);

CREATE TABLE pgrelay.failed_events (
    event_id    bigint PRIMARY KEY,
    channel     text NOT NULL,
    action_type text NOT NULL,
    payload     text NOT NULL,
    attempts    integer NOT NULL,
    error       text,
    sqlstate    text,
    log_id      bigint NOT NULL,
    node_id     integer NOT NULL,
    queued_at   timestamptz NOT NULL,
    failed_at   timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrelay.failed_events IS
    'Events whose last attempt failed for good; re-queue with retry_failed(), drop with discard_failed()';

CREATE TABLE pgrelay.control (
    singleton           boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    paused              boolean NOT NULL DEFAULT false,
    paused_at           timestamptz,
    reload_generation   bigint NOT NULL DEFAULT 0,
    reload_requested_at timestamptz
);
COMMENT ON TABLE pgrelay.control IS 'The flags queue_probe() reports: paused and the reload generation';
INSERT INTO pgrelay.control DEFAULT VALUES;

-- High availability (docs/ha.md). The pg_relay node id of each node of the cluster: under a
-- replication engine, the map from the engine's node names; without one, the members themselves.
-- Replicated. One unique index only (the primary key): replication resolves conflicts on it, and
-- a second unique index could stop a subscription on a conflict.
CREATE TABLE pgrelay.nodes (
    node_id     integer PRIMARY KEY CHECK (node_id BETWEEN 0 AND 1023),
    node_name   text NOT NULL CHECK (node_name <> ''),
    description text,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrelay.nodes IS
    'The pg_relay node id of each node: the engine''s node name (Spock, pglogical), or the members '
    'themselves without an engine; change it with set_node() and remove_node()';

-- One row per node whose Processor runs in multi-node or leader mode, written by that Processor
-- every tick. Replicated: this is how the nodes hear from each other.
CREATE TABLE pgrelay.heartbeats (
    node_id    integer PRIMARY KEY,
    beat       bigint NOT NULL,
    beat_at    timestamptz NOT NULL,
    mode       text NOT NULL,
    leader     boolean NOT NULL DEFAULT false,
    heard      jsonb NOT NULL DEFAULT '{}',
    links      jsonb NOT NULL DEFAULT '{}',
    started_at timestamptz NOT NULL,
    stopped_at timestamptz
);
COMMENT ON TABLE pgrelay.heartbeats IS
    'The Processors'' heartbeats: replicated, each row written by its own node''s Processor';
COMMENT ON COLUMN pgrelay.heartbeats.beat IS
    'Milliseconds since 1970 by the writer''s clock, strictly increasing; readers only ask whether it moved';
COMMENT ON COLUMN pgrelay.heartbeats.leader IS
    'The Processor leads (leader mode), or events it started as leader are still running';
COMMENT ON COLUMN pgrelay.heartbeats.heard IS
    'The beat this node last saw of each peer ({"node id": beat}): a peer reads its own entry as an acknowledgement';
COMMENT ON COLUMN pgrelay.heartbeats.links IS
    'The replication slot on each provider this node subscribes to ({"engine node": "slot"})';
COMMENT ON COLUMN pgrelay.heartbeats.stopped_at IS 'Set when the Processor stopped cleanly';

-- What this node's Processor has seen of each peer's heartbeat, and when by this node's own clock.
-- Node-local by nature: UNLOGGED, so it is never replicated (and starts empty after a crash).
CREATE UNLOGGED TABLE pgrelay.peer_observations (
    node_id    integer PRIMARY KEY,
    beat       bigint,
    since      timestamptz NOT NULL,
    heard_at   timestamptz,
    dead_since timestamptz
);
COMMENT ON TABLE pgrelay.peer_observations IS
    'Node-local (unlogged, never replicated): the peers'' heartbeats as this node saw them, by its own clock';

-- Webhooks (docs/webhooks.md): the HTTP endpoint of each channel of action type webhook, chosen
-- by an admin (register_webhook); producers only queue payloads. The foreign key is checked at
-- commit: register_webhook() writes the endpoint, then the channel, whose registration requires
-- the endpoint.
CREATE TABLE pgrelay.webhooks (
    channel     text PRIMARY KEY
                REFERENCES pgrelay.channels ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    url         text NOT NULL,
    method      text NOT NULL DEFAULT 'POST' CHECK (method IN ('POST', 'PUT', 'PATCH')),
    allow_http  boolean NOT NULL DEFAULT false,
    ca_file     text,
    debug       boolean NOT NULL DEFAULT false,
    headers     jsonb NOT NULL DEFAULT '{}',
    signing     text,
    gone_at     timestamptz,
    gone_status integer,
    gone_reason text,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (url ~ '^https://' OR (allow_http AND url ~ '^http://'))
);
COMMENT ON TABLE pgrelay.webhooks IS
    'The HTTP endpoint of each webhook channel; change it with register_webhook() (header values and the '
    'signing secret are in webhook_secrets)';
COMMENT ON COLUMN pgrelay.webhooks.headers IS
    'The extra request headers: each name with how its value is given (env:NAME, file:NAME or literal), never the value';
COMMENT ON COLUMN pgrelay.webhooks.signing IS
    'How the signing secret is given (env:NAME, file:NAME or literal); NULL: requests are not signed';
COMMENT ON COLUMN pgrelay.webhooks.gone_at IS
    'When the endpoint answered 410 Gone: the channel was paused; resume(channel) clears it';

CREATE TABLE pgrelay.webhook_secrets (
    channel        text PRIMARY KEY REFERENCES pgrelay.webhooks ON DELETE CASCADE,
    headers        jsonb NOT NULL DEFAULT '[]',
    signing_secret text
);
COMMENT ON TABLE pgrelay.webhook_secrets IS
    'Webhook header values ([[name, value], ...]) and signing secrets: literal values or references '
    '(env:NAME, file:NAME, value:TEXT) that only the Processor resolves. No role but the extension '
    'owner has any privilege on this table.';

-- since 1.4: where a destination channel's events go, and how (register(channel, kind, settings => ...))
CREATE TABLE pgrelay.destinations (
    channel    text PRIMARY KEY REFERENCES pgrelay.channels ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    settings   jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrelay.destinations IS
    'The settings of each channel that delivers to a broker (its action type is the kind: redis, kafka, rabbitmq), checked '
    'and completed by register(); secrets only as env:/file: references the Processor resolves';

-- One row per Processor running against this database, written by that Processor: when it
-- starts and then every 10 s (or every tick, with a longer poll interval), deleted when it stops
-- cleanly; the view pgrelay.processors tells the live from the silent. Node-local: each node of a
-- multi-master cluster has its own Processors, so it is not replicated (replication_tables()).
-- A logged table, unlike peer_observations, so that a streaming standby can show its primary's
-- Processors, and a row outlives a server crash to show that its Processor fell silent.
CREATE TABLE pgrelay.processor_reports (
    host         text NOT NULL,
    pid          integer NOT NULL,
    node_id      integer NOT NULL,
    version      text NOT NULL,
    mode         text NOT NULL,
    workers      integer NOT NULL,
    busy         integer NOT NULL,
    leader       boolean,
    started_at   timestamptz NOT NULL,
    last_tick_at timestamptz NOT NULL,
    report_every interval NOT NULL,
    backend_pid  integer NOT NULL,
    connected    integer,
    PRIMARY KEY (host, pid)
);
COMMENT ON TABLE pgrelay.processor_reports IS
    'Node-local (never replicated): the Processors running against this database, as they last reported '
    '(read pgrelay.processors)';
COMMENT ON COLUMN pgrelay.processor_reports.last_tick_at IS
    'When the Processor last reported, by this server''s clock: every report_every while it runs';
COMMENT ON COLUMN pgrelay.processor_reports.connected IS
    'Workers with a connection at the report (those whose attempts fail are not); NULL when the '
    'Processor did not say (pg_relay before 1.4)';

-- The backlog of the queue, as this node sees it, once a minute, for the web console's charts: a
-- row written by the first report in each minute of this node's Processors (_backlog_sample), the
-- rows older than 25 hours deleted by the same report, so that it holds at most 1,500 rows.
-- Node-local, as processor_reports (replication_tables()); logged, so that a standby shows its
-- primary's.
CREATE TABLE pgrelay.backlog_samples (
    sampled_at timestamptz PRIMARY KEY,
    due        bigint NOT NULL,
    waiting    bigint NOT NULL,
    retrying   bigint NOT NULL,
    failed     bigint NOT NULL
);
COMMENT ON TABLE pgrelay.backlog_samples IS
    'Node-local (never replicated): the queue''s backlog in each minute a Processor reported in, over '
    'the last 25 hours (read pgrelay.backlog)';
COMMENT ON COLUMN pgrelay.backlog_samples.due IS 'Events due to run their first attempt';
COMMENT ON COLUMN pgrelay.backlog_samples.waiting IS
    'Events whose first attempt is due later (notify(run_at => ...), a snooze)';
COMMENT ON COLUMN pgrelay.backlog_samples.retrying IS
    'Events waiting for a retry, due or not (attempt > 1: pgrelay.queue_depth.retrying)';
COMMENT ON COLUMN pgrelay.backlog_samples.failed IS 'Events failed for good (pgrelay.failed)';

-- The results of process_one() and of the two steps it calls for each event. Named row types,
-- not OUT parameters: the server caches a named type's description, while a record of OUT
-- parameters is built again from pg_proc on every call (docs/design/benchmark-notes.md).
CREATE TYPE pgrelay.process_result AS (outcome text, log_id bigint, retry_id bigint, error text,
                                       sqlstate text, retry_at timestamptz);
COMMENT ON TYPE pgrelay.process_result IS
    'What process_one() did with an event: skipped, or the outcome of its log row (with error, '
    'SQLSTATE and retry time when it failed)';
CREATE TYPE pgrelay._claim AS (queue_id bigint, event_id bigint, channel text, action_type text,
                               payload text, attempt integer, max_attempts integer, timeout_ms integer,
                               handler text, queued_at timestamptz, run_at timestamptz, call text,
                               refusal text, refusal_sqlstate text, replayed_log bigint, fn oid);
COMMENT ON TYPE pgrelay._claim IS 'Internal: a queue row claimed by _claim_event(), with its handler checked '
    '(replayed_log: the row was replayed, its attempt is recorded already by that log row, and it is finished; '
    'fn: the handler''s function as the claim checked it)';
CREATE TYPE pgrelay._completed AS (log_id bigint, outcome text, retry_id bigint, retry_at timestamptz);
COMMENT ON TYPE pgrelay._completed IS 'Internal: what _complete() wrote for an attempt';

-- Watched tables (watch_table()): one row per table and channel, recording whose rights the
-- table's rows are read with. The trigger of a watch looks its row up at every change: a trigger
-- that no row of this table describes (one that somebody else put on a table of theirs) queues
-- nothing. Node-local: the trigger and the table's OID are this node's (replication_tables()).
CREATE TABLE pgrelay.watches (
    relid        regclass NOT NULL,
    channel      text NOT NULL REFERENCES pgrelay.channels,
    trigger_name name NOT NULL,
    watcher      regrole NOT NULL,
    operations   text[] NOT NULL,
    columns      text[],
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (relid, channel),
    UNIQUE (relid, trigger_name)
);
COMMENT ON TABLE pgrelay.watches IS
    'The tables watch_table() watches: table, channel, the trigger, and the role whose rights each '
    'change is read with (pgrelay.watched_tables says whether it still may)';
COMMENT ON COLUMN pgrelay.watches.watcher IS
    'The login role that called watch_table(): a change queues only the columns this role may read, '
    'and nothing while it may read none or row-level security applies to it';

-- ---- Recurring events (schedule(), docs/sql-api.md "Recurring events"): the schedules and the
-- occurrences fired. Both replicated: every node must see a schedule, when it next runs, and
-- which occurrences are queued already.
CREATE TABLE pgrelay.schedule_entries (
    name          text PRIMARY KEY,
    channel       text NOT NULL REFERENCES pgrelay.channels,
    cron          text NOT NULL,
    timezone      text NOT NULL,
    payload       text NOT NULL,
    catch_up      text NOT NULL DEFAULT 'once' CHECK (catch_up IN ('once', 'skip')),
    active        boolean NOT NULL DEFAULT true,
    next_run_at   timestamptz,
    last_run_at   timestamptz,
    last_fired_at timestamptz,
    last_outcome  text,
    last_event_id bigint,
    last_reason   text,
    created_by    name NOT NULL DEFAULT session_user,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrelay.schedule_entries IS
    'Recurring events: each schedule queues its payload on its channel at the times its cron expression '
    'names; change them with schedule() and unschedule(), read them in pgrelay.schedules';
COMMENT ON COLUMN pgrelay.schedule_entries.next_run_at IS
    'The next occurrence not fired yet (NULL: the expression names no later time); the probe reads it';
COMMENT ON COLUMN pgrelay.schedule_entries.last_run_at IS 'The occurrence fired last (its scheduled time)';
-- The probe asks "is an active schedule due?" on every tick: one look at this index.
CREATE INDEX schedule_entries_due_idx ON pgrelay.schedule_entries (next_run_at) WHERE active;

-- One row per occurrence fired: queued, skipped (missed, with catch_up skip) or failed (the channel
-- refused it). The primary key is the occurrence's identity: no node queues an occurrence whose row
-- it has. The only unique index, so that replication resolves a conflict on it (docs/ha.md).
CREATE TABLE pgrelay.schedule_runs (
    schedule   text NOT NULL REFERENCES pgrelay.schedule_entries ON DELETE CASCADE,
    occurrence timestamptz NOT NULL,
    outcome    text NOT NULL CHECK (outcome IN ('queued', 'skipped', 'failed')),
    late       boolean NOT NULL DEFAULT false,
    reason     text,
    event_id   bigint,
    node_id    integer NOT NULL,
    fired_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (schedule, occurrence)
);
COMMENT ON TABLE pgrelay.schedule_runs IS
    'The occurrences of each schedule fired in the last 31 days: queued (with its event id), skipped or failed, '
    'by which node';
COMMENT ON COLUMN pgrelay.schedule_runs.late IS
    'Fired more than a minute after its time (no Processor fired it then): queued once with catch_up once, else skipped';
-- ---- end of the recurring events block ----

-- pg_dump keeps user data of extension tables only when told to.
SELECT pg_catalog.pg_extension_config_dump('pgrelay.channels', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.queue', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.log', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.failed_events', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.action_types',
                                           $$WHERE action_type NOT IN ('sql', 'notify', 'webhook', 'redis', 'kafka', 'rabbitmq')$$);
SELECT pg_catalog.pg_extension_config_dump('pgrelay._id_clock', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.nodes', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.webhooks', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.webhook_secrets', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.destinations', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.watches', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.schedule_entries', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.schedule_runs', '');

-- ---- the web console (pg_relay web, docs/console.md) ----
-- The pages of the console read pgrelay.log by channel, by outcome and by both, newest first, a
-- page at a time (keyset pagination on the id): each of these indexes serves one of those
-- searches without reading the rest of the log. The two partial ones hold only the attempts that
-- did not succeed, usually a small part of the log. Each key ends with the id, so no two keys are
-- equal: deduplication could never merge any, and it would only read each full page once more
-- before splitting it (off, log_channel_idx costs every log row 2% fewer instructions).
CREATE INDEX log_channel_idx ON pgrelay.log (channel, id) WITH (deduplicate_items = off);
CREATE INDEX log_trouble_idx ON pgrelay.log (outcome, id) WITH (deduplicate_items = off) WHERE outcome <> 'ok';
CREATE INDEX log_channel_trouble_idx ON pgrelay.log (channel, outcome, id) WITH (deduplicate_items = off)
    WHERE outcome <> 'ok';
-- ---- end of the web console's block ----

-- ---- topics (publish(), docs/sql-api.md "Topics"): a publication on a topic is one event on
-- each channel subscribed to it. Both replicated, as channels: every node's producers publish.
-- The foreign keys to channels are checked at commit, as the webhooks' are.
CREATE TABLE pgrelay.topics (
    topic       text PRIMARY KEY,
    description text,
    created_by  name NOT NULL DEFAULT session_user,
    created_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrelay.topics IS
    'Topics producers publish() to; change them with create_topic() and drop_topic()';

CREATE TABLE pgrelay.subscriptions (
    topic       text NOT NULL REFERENCES pgrelay.topics ON DELETE CASCADE,
    channel     text NOT NULL
                REFERENCES pgrelay.channels ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    event_types text[],
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic, channel)
);
COMMENT ON TABLE pgrelay.subscriptions IS
    'The channels subscribed to each topic: each publication matching event_types is one event on the channel; '
    'change them with subscribe() and unsubscribe()';
COMMENT ON COLUMN pgrelay.subscriptions.event_types IS
    'NULL: every publication; else the event types taken, each matched exactly, or as a prefix when it ends with *';
SELECT pg_catalog.pg_extension_config_dump('pgrelay.topics', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.subscriptions', '');
-- A schedule or a watch may target a topic instead of a channel: each occurrence or change is then
-- a publication (publish()), with the event type given. Exactly one of channel and topic is set.
ALTER TABLE pgrelay.schedule_entries ALTER COLUMN channel DROP NOT NULL;
ALTER TABLE pgrelay.schedule_entries
    ADD COLUMN topic text REFERENCES pgrelay.topics,
    ADD COLUMN event_type text,
    ADD CONSTRAINT schedule_entries_target_check CHECK (num_nonnulls(channel, topic) = 1);
COMMENT ON COLUMN pgrelay.schedule_entries.topic IS
    'The topic each occurrence is published on (publish(), with event_type), instead of a channel; '
    'schedule_runs.event_id is then the publication id';
ALTER TABLE pgrelay.watches DROP CONSTRAINT watches_pkey, DROP CONSTRAINT watches_relid_trigger_name_key;
ALTER TABLE pgrelay.watches ALTER COLUMN channel DROP NOT NULL;
ALTER TABLE pgrelay.watches
    ADD COLUMN topic text REFERENCES pgrelay.topics,
    ADD COLUMN event_type text,
    ADD CONSTRAINT watches_pkey PRIMARY KEY (relid, trigger_name),
    ADD CONSTRAINT watches_relid_channel_key UNIQUE (relid, channel),
    ADD CONSTRAINT watches_relid_topic_key UNIQUE (relid, topic),
    ADD CONSTRAINT watches_target_check CHECK (num_nonnulls(channel, topic) = 1);
COMMENT ON COLUMN pgrelay.watches.topic IS
    'The topic each change is published on (publish()), instead of a channel; its event type is '
    'event_type.operation (the operation alone when event_type is NULL)';
-- The deliveries of one publication (publication_status()): found through these indexes, which
-- hold only the rows of publications (a notify()'s rows have no publication id and cost nothing).
CREATE INDEX queue_publication_idx ON pgrelay.queue (publication_id) WHERE publication_id IS NOT NULL;
CREATE INDEX log_publication_idx ON pgrelay.log (publication_id) WHERE publication_id IS NOT NULL;
-- ---- end of the topics block ----
