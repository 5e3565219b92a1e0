/* extension/pg_relay/upgrade/1.2--1.3.sql: schema changes from 1.2 to 1.3 (the code follows from src/) */

-- Set-based retry_failed/discard_failed take all_channels: a NULL channel no longer means every
-- channel (created again by the code below). IF EXISTS: an upgrade from 1.1 never had them.
DROP FUNCTION IF EXISTS pgrelay.retry_failed(text, timestamptz, timestamptz, text);
DROP FUNCTION IF EXISTS pgrelay.discard_failed(text, timestamptz, timestamptz, text);

-- Watched tables: a row per watch records whose rights its changes are read with. The watches of
-- 1.2 (triggers only) are recorded with the table's owner as the watcher, who reads everything the
-- trigger read before (owners bypass their own row security unless it is forced); watch_table()
-- again, as the role that should read the table, narrows that.
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
SELECT pg_catalog.pg_extension_config_dump('pgrelay.watches', '');
DO $$
DECLARE
    r record;
    args text[];
    rest bytea;
    cut integer;
BEGIN
    FOR r IN SELECT t.tgrelid, t.tgname, t.tgtype, t.tgnargs, t.tgargs, c.relowner
             FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
             WHERE t.tgfoid = pg_catalog.to_regprocedure('pgrelay._watch_trigger()') AND t.tgparentid = 0 LOOP
        -- tgargs: the trigger's arguments, each ended by a zero byte
        args := '{}';
        rest := r.tgargs;
        FOR i IN 1 .. r.tgnargs LOOP
            cut := pg_catalog.position(rest, '\x00'::bytea);
            args := args || pg_catalog.convert_from(pg_catalog.substr(rest, 1, cut - 1), 'UTF8');
            rest := pg_catalog.substr(rest, cut + 1);
        END LOOP;
        IF NOT EXISTS (SELECT 1 FROM pgrelay.channels x WHERE x.channel = args[1]) THEN
            RAISE WARNING 'pg_relay 1.3: trigger % of table % watches channel "%", which does not exist: drop the trigger',
                          r.tgname, r.tgrelid::regclass, args[1];
            CONTINUE;
        END IF;
        INSERT INTO pgrelay.watches (relid, channel, trigger_name, watcher, operations, columns)
        VALUES (r.tgrelid, args[1], r.tgname, r.relowner,
                ARRAY(SELECT o FROM (VALUES (4, 'insert'), (8, 'delete'), (16, 'update')) v(bit, o)
                      WHERE r.tgtype & v.bit <> 0 ORDER BY o),
                CASE WHEN r.tgnargs > 1 THEN ARRAY(SELECT pg_catalog.jsonb_array_elements_text(args[2]::jsonb)) END);
        RAISE NOTICE 'pg_relay 1.3: table % is watched for channel "%" with the rights of its owner %; call watch_table() again as the role that should read it',
                     r.tgrelid::regclass, args[1], r.relowner::regrole;
    END LOOP;
END
$$;
-- trigger names come from pgrelay.watches now
DROP FUNCTION IF EXISTS pgrelay._watch_name(text);

-- High availability and replayed rows.
-- A claim recognises a replayed row (its attempt is in pgrelay.log already) and finishes it: the
-- claim's row type and the claims' results say so.
-- (IF EXISTS: an upgrade from 1.1 runs this after 1.1--1.2, whose functions the code below creates.)
ALTER TYPE pgrelay._claim ADD ATTRIBUTE replayed_log bigint;
DROP FUNCTION IF EXISTS pgrelay._webhook_claim(bigint);
DROP FUNCTION IF EXISTS pgrelay._queue_claim(bigint);
DROP FUNCTION IF EXISTS pgrelay._claim_events(bigint[]);
-- The dead-node rule counts a peer not heard from yet as live: the verdicts say which are.
DROP FUNCTION IF EXISTS pgrelay._ha_observe(interval);
DROP FUNCTION IF EXISTS pgrelay._verdicts(interval);
-- ---- end of the HA branch's block ----

-- Keys, cancel, snooze: the pending event of a key, how often an event snoozed, the snoozed outcome.
ALTER TABLE pgrelay.queue ADD COLUMN key text, ADD COLUMN snoozes integer NOT NULL DEFAULT 0;
COMMENT ON COLUMN pgrelay.queue.key IS
    'notify(key => ...): at most one event of a channel and key waits to start on a node (docs/sql-api.md)';
COMMENT ON COLUMN pgrelay.queue.snoozes IS
    'How often the handler snoozed the event (SQLSTATE PGSNZ) without spending an attempt';
CREATE INDEX queue_key_idx ON pgrelay.queue (owner_node, channel, key) WHERE key IS NOT NULL;
ALTER TABLE pgrelay.log DROP CONSTRAINT log_outcome_check,
    ADD CONSTRAINT log_outcome_check
        CHECK (outcome IN ('ok', 'partial', 'retry', 'timeout', 'failed', 'cancelled', 'snoozed'));
COMMENT ON COLUMN pgrelay.log.outcome IS
    'ok: done; partial: done, some recipients failed; retry: transient failure, retried at retry_at; '
    'timeout: timed out, retried at retry_at; failed: permanent failure or attempts exhausted; '
    'cancelled: the work was withdrawn before the attempt; snoozed: the handler asked to run again '
    'at retry_at, without spending an attempt';
-- notify() takes a key and a key_mode (created again by the code below)
DROP FUNCTION IF EXISTS pgrelay.notify(text, text, timestamptz);

-- ---- Recurring events (schedule(), unschedule(), pgrelay.schedules) ----
-- The tables as src/catalog.sql creates them.
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
CREATE INDEX schedule_entries_due_idx ON pgrelay.schedule_entries (next_run_at) WHERE active;
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
SELECT pg_catalog.pg_extension_config_dump('pgrelay.schedule_entries', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.schedule_runs', '');
-- The probe and the HA tick say whether a schedule is due: a new OUT column each (IF EXISTS: an
-- upgrade from 1.1 runs this after 1.1--1.2, whose functions the code below creates).
DROP FUNCTION IF EXISTS pgrelay.queue_probe(bigint);
DROP FUNCTION IF EXISTS pgrelay._ha_tick(bigint, boolean, boolean, boolean);
-- ---- end of the recurring events block ----

-- ---- the floors under finished rows (docs/architecture.md, a held snapshot) ----
-- The probe and the fetch take the Processor's bound (queue_probe() got it above already).
DROP FUNCTION IF EXISTS pgrelay._queue_fetch(integer);
-- A row's run_at is never before its writer took its lock, also for an INSERT that leaves it out.
ALTER TABLE pgrelay.queue ALTER COLUMN run_at SET DEFAULT clock_timestamp();
-- ---- end of the floors' block ----

-- ---- the web console (pg_relay web, docs/console.md) ----
-- The pages of the console read pgrelay.log by channel, by outcome and by both, newest first, a
-- page at a time (keyset pagination on the id): each of these indexes serves one of those
-- searches without reading the rest of the log. The two partial ones hold only the attempts that
-- did not succeed, usually a small part of the log.
CREATE INDEX log_channel_idx ON pgrelay.log (channel, id);
CREATE INDEX log_trouble_idx ON pgrelay.log (outcome, id) WHERE outcome <> 'ok';
CREATE INDEX log_channel_trouble_idx ON pgrelay.log (channel, outcome, id) WHERE outcome <> 'ok';
-- ---- end of the web console's block ----
