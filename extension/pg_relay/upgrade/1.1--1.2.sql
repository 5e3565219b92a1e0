/* extension/pg_relay/upgrade/1.1--1.2.sql: schema changes from 1.1 to 1.2 (the code follows from src/) */

-- Channels: two new settings, and bounds on every duration so that each makes a valid timer and
-- timestamp. Values outside the new bounds are brought inside them first.
UPDATE pgrelay.channels
SET timeout = GREATEST(timeout, interval '1 millisecond'),
    backoff_base = LEAST(GREATEST(backoff_base, interval '1 millisecond'), interval '1 day'),
    backoff_max = LEAST(GREATEST(backoff_max, LEAST(GREATEST(backoff_base, interval '1 millisecond'), interval '1 day')),
                        interval '30 days');
ALTER TABLE pgrelay.channels
    DROP CONSTRAINT channels_timeout_check,
    DROP CONSTRAINT channels_backoff_base_check,
    DROP CONSTRAINT channels_check,
    ADD CONSTRAINT channels_timeout_check CHECK (timeout >= '1 millisecond' AND timeout <= '24 hours'),
    ADD CONSTRAINT channels_backoff_base_check CHECK (backoff_base >= '1 millisecond' AND backoff_base <= '1 day'),
    ADD CONSTRAINT channels_check CHECK (backoff_max >= backoff_base AND backoff_max <= '30 days'),
    ADD COLUMN max_payload_bytes integer NOT NULL DEFAULT 1048576
               CHECK (max_payload_bytes BETWEEN 1 AND 104857600),
    ADD COLUMN retry_policy text NOT NULL DEFAULT 'all' CHECK (retry_policy IN ('all', 'strict')),
    ADD COLUMN paused boolean NOT NULL DEFAULT false,
    ADD COLUMN batch boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN pgrelay.channels.paused IS
    'pause(channel): no event of the channel is dispatched, while notify() keeps queueing them';
COMMENT ON COLUMN pgrelay.channels.max_payload_bytes IS
    'Largest payload notify() accepts on this channel, in bytes';
COMMENT ON COLUMN pgrelay.channels.batch IS
    'sql channels: the Processor may finish several of its events in one transaction, each handler in '
    'its own subtransaction (register() turns it on for sql channels; notify and webhook channels never batch)';
COMMENT ON COLUMN pgrelay.channels.retry_policy IS
    'all: every handler error is retried until max_attempts (SQLSTATE PGSTP stops at once); '
    'strict: only errors that can pass by themselves are retried';

-- Channels that existed before keep the retry behaviour they had (strict); new ones retry every
-- error. Handlers must now be SECURITY DEFINER: say which are not, before their events fail.
UPDATE pgrelay.channels SET retry_policy = 'strict';
-- sql channels batch, as new ones do (docs/processor.md: a handler's work commits with its event)
UPDATE pgrelay.channels SET batch = true WHERE action_type = 'sql';
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT c.channel, c.handler FROM pgrelay.channels c
             WHERE c.handler IS NOT NULL
               AND NOT COALESCE((SELECT p.prosecdef FROM pg_catalog.pg_proc p
                                 WHERE p.oid = pg_catalog.to_regprocedure(c.handler)), true) LOOP
        RAISE WARNING 'pg_relay 1.2: the handler % of channel "%" is not SECURITY DEFINER; its events fail until it is',
                      r.handler, r.channel
            USING HINT = pg_catalog.format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = ...', r.handler);
    END LOOP;
    IF FOUND THEN
        RAISE NOTICE 'pg_relay 1.2: channels keep retry_policy strict; pgrelay.register(channel, retry_policy => ''all'') retries every error';
    END IF;
END
$$;

-- The log: one row per attempt, enforced by the index that finds it.
DROP INDEX pgrelay.log_event_idx;
CREATE UNIQUE INDEX log_event_idx ON pgrelay.log (event_id, queue_id);

-- Functions whose arguments or result changed (created again by the code below).
DROP FUNCTION pgrelay.register(text, text, regprocedure, text, boolean, integer, interval, interval, interval,
                               boolean, text);
DROP FUNCTION pgrelay._classify_error(text);
DROP FUNCTION pgrelay.process_one(bigint);
DROP FUNCTION pgrelay._complete(bigint, text, text, text, timestamptz);
DROP FUNCTION pgrelay.pause();
DROP FUNCTION pgrelay.resume();
-- process_one() checks its handler in the claim (_claim_event) since 1.2
DROP FUNCTION pgrelay._handler_sql(text);

-- The queue's indexes serve every dispatch mode (one for unrestricted rows of any owner, one by
-- restriction and owner); the probe's helper takes the dispatch scope.
DROP INDEX pgrelay.queue_dispatch_idx;
CREATE INDEX queue_free_idx ON pgrelay.queue (action_type, run_at, queued_at, id) WHERE NOT node_restricted;
CREATE INDEX queue_node_idx ON pgrelay.queue (node_restricted, owner_node, action_type, run_at, queued_at, id);
ALTER TABLE pgrelay.queue ALTER COLUMN owner_node SET (n_distinct = 1024);
-- The queue is vacuumed after every 1,000 dead rows, without autovacuum's cost delay, so that its
-- indexes reuse their emptied pages.
ALTER TABLE pgrelay.queue SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
                               autovacuum_vacuum_cost_delay = 0);
DROP FUNCTION pgrelay._has_due_work();

-- High availability: the node map, the heartbeats and what this node saw of them.
CREATE TABLE pgrelay.nodes (
    node_id     integer PRIMARY KEY CHECK (node_id BETWEEN 0 AND 1023),
    node_name   text NOT NULL CHECK (node_name <> ''),
    description text,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrelay.nodes IS
    'The pg_relay node id of each node: the engine''s node name (Spock, pglogical), or the members '
    'themselves without an engine; change it with set_node() and remove_node()';

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

CREATE UNLOGGED TABLE pgrelay.peer_observations (
    node_id    integer PRIMARY KEY,
    beat       bigint,
    since      timestamptz NOT NULL,
    heard_at   timestamptz,
    dead_since timestamptz
);
COMMENT ON TABLE pgrelay.peer_observations IS
    'Node-local (unlogged, never replicated): the peers'' heartbeats as this node saw them, by its own clock';
SELECT pg_catalog.pg_extension_config_dump('pgrelay.nodes', '');

-- Webhooks: the action type, each channel's endpoint and its secrets.
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
INSERT INTO pgrelay.action_types (action_type, run_order, description) VALUES
    ('webhook', 30, 'send the payload to the channel''s HTTP endpoint (pgrelay.webhooks), signed');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.action_types',
                                           $$WHERE action_type NOT IN ('sql', 'notify', 'webhook')$$);
SELECT pg_catalog.pg_extension_config_dump('pgrelay.webhooks', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.webhook_secrets', '');

-- Monitoring: the Processors' own reports (pgrelay.processors), node-local.
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
    PRIMARY KEY (host, pid)
);
COMMENT ON TABLE pgrelay.processor_reports IS
    'Node-local (never replicated): the Processors running against this database, as they last reported '
    '(read pgrelay.processors)';
COMMENT ON COLUMN pgrelay.processor_reports.last_tick_at IS
    'When the Processor last reported, by this server''s clock: every report_every while it runs';

-- Named result types of process_one() and its two steps (process_one and _complete, dropped
-- above, returned OUT parameters in 1.1).
CREATE TYPE pgrelay.process_result AS (outcome text, log_id bigint, retry_id bigint, error text,
                                       sqlstate text, retry_at timestamptz);
COMMENT ON TYPE pgrelay.process_result IS
    'What process_one() did with an event: skipped, or the outcome of its log row (with error, '
    'SQLSTATE and retry time when it failed)';
CREATE TYPE pgrelay._claim AS (queue_id bigint, event_id bigint, channel text, action_type text,
                               payload text, attempt integer, max_attempts integer, timeout_ms integer,
                               handler text, queued_at timestamptz, run_at timestamptz, call text,
                               refusal text, refusal_sqlstate text);
COMMENT ON TYPE pgrelay._claim IS 'Internal: a queue row claimed by _claim_event(), with its handler checked';
CREATE TYPE pgrelay._completed AS (log_id bigint, outcome text, retry_id bigint, retry_at timestamptz);
COMMENT ON TYPE pgrelay._completed IS 'Internal: what _complete() wrote for an attempt';
