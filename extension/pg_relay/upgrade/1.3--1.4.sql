/* extension/pg_relay/upgrade/1.3--1.4.sql: schema changes from 1.3 to 1.4 (the code follows from src/) */

-- _enqueue() takes any_payload (the table-change trigger's): the old signature goes, so that a call
-- with four arguments is not ambiguous
DROP FUNCTION IF EXISTS pgrelay._enqueue(text, text, timestamptz, bigint);

-- A channel's durations are bounded in seconds too (as the Processor reads them), not only as
-- intervals compare: '1 year -359 days' compared as 1 day and was a timeout of 6.25 days. A
-- duration the new bounds refuse (only one whose parts have opposite signs can be) is set to the
-- nearest bound in seconds, with a warning, before the constraints change.
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN
        SELECT x.channel, x.timeout, x.backoff_base, x.backoff_max,
               make_interval(secs => LEAST(GREATEST(extract(epoch FROM x.timeout), 0.001), 86400)::double precision) AS t,
               make_interval(secs => LEAST(GREATEST(extract(epoch FROM x.backoff_base), 0.001), 86400)::double precision) AS b
        FROM pgrelay.channels x
        WHERE extract(epoch FROM x.timeout) NOT BETWEEN 0.001 AND 86400
           OR extract(epoch FROM x.backoff_base) NOT BETWEEN 0.001 AND 86400
           OR extract(epoch FROM x.backoff_max) NOT BETWEEN extract(epoch FROM x.backoff_base) AND 2592000
    LOOP
        UPDATE pgrelay.channels x
        SET timeout = c.t, backoff_base = c.b,
            backoff_max = make_interval(secs => LEAST(GREATEST(extract(epoch FROM c.backoff_max),
                                                               extract(epoch FROM c.b)), 2592000)::double precision)
        WHERE x.channel = c.channel;
        RAISE WARNING 'channel "%": timeout %, backoff_base % and backoff_max % are out of range in seconds; set to their bounds',
                      c.channel, c.timeout, c.backoff_base, c.backoff_max;
    END LOOP;
END
$$;
ALTER TABLE pgrelay.channels
    DROP CONSTRAINT channels_timeout_check,
    DROP CONSTRAINT channels_backoff_base_check,
    DROP CONSTRAINT channels_check,
    ADD CONSTRAINT channels_timeout_check
        CHECK (timeout >= '1 millisecond' AND timeout <= '24 hours'
               AND extract(epoch FROM timeout) BETWEEN 0.001 AND 86400),
    ADD CONSTRAINT channels_backoff_base_check
        CHECK (backoff_base >= '1 millisecond' AND backoff_base <= '1 day'
               AND extract(epoch FROM backoff_base) BETWEEN 0.001 AND 86400),
    ADD CONSTRAINT channels_check
        CHECK (backoff_max >= backoff_base AND backoff_max <= '30 days'
               AND extract(epoch FROM backoff_max) BETWEEN extract(epoch FROM backoff_base) AND 2592000);

-- Keys belong to the role that queued their event (notify(key => ...)), unless the channel shares
-- them. The events of a key queued before 1.4 have no owner: calls with the key queue beside them.
ALTER TABLE pgrelay.channels ADD COLUMN shared_keys boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN pgrelay.channels.shared_keys IS
    'notify(key => ...): false: a waiting event''s key is its producer''s (queue.key_owner), another role''s call '
    'with it is refused; true: any producer''s call with the key keeps, replaces or debounces it';
ALTER TABLE pgrelay.queue ADD COLUMN key_owner text;
COMMENT ON COLUMN pgrelay.queue.key_owner IS
    'The login role (session_user) whose notify(key => ...) queued the event; only its calls with the key find it '
    'unless the channel shares its keys; a retry or a snooze keeps it; NULL for an event without a key, and for one queued before 1.4';
-- register() takes shared_keys: the old signature goes
DROP FUNCTION IF EXISTS pgrelay.register(text, text, regprocedure, text, boolean, integer, interval, interval, interval,
                                         boolean, text, integer, text, boolean);

-- How many of its workers each Processor has connected (pgrelay.processors.connected)
ALTER TABLE pgrelay.processor_reports ADD COLUMN connected integer;
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

-- The claim hands the handler's function (its oid) to the call, which runs it only while that
-- function is still SECURITY DEFINER (process_one, process_batch)
ALTER TYPE pgrelay._claim ADD ATTRIBUTE fn oid;
COMMENT ON TYPE pgrelay._claim IS 'Internal: a queue row claimed by _claim_event(), with its handler checked '
    '(replayed_log: the row was replayed, its attempt is recorded already by that log row, and it is finished; '
    'fn: the handler''s function as the claim checked it)';
DROP FUNCTION IF EXISTS pgrelay._claim_events(bigint[]);

-- _queue_fetch() returns each row's event_id too (the Processor's log lines name the event): a
-- function's result columns change only by dropping it
DROP FUNCTION IF EXISTS pgrelay._queue_fetch(integer, jsonb);

-- The log row, the retry row and the failed row of a finished attempt have one writer,
-- _finish_rows(), which every finish calls: the functions it replaces go
DROP FUNCTION IF EXISTS pgrelay._log_attempt(pgrelay.queue, text, text, text, timestamptz, jsonb, timestamptz);
DROP FUNCTION IF EXISTS pgrelay._settle(pgrelay.queue, pgrelay.log);

-- The console's indexes of pgrelay.log without deduplication: each key ends with the id, so none
-- is equal to another and a deduplication pass before each page split is only work (catalog.sql).
-- A storage parameter: no rebuild, and the indexes stay as they are.
ALTER INDEX pgrelay.log_channel_idx SET (deduplicate_items = off);
ALTER INDEX pgrelay.log_trouble_idx SET (deduplicate_items = off);
ALTER INDEX pgrelay.log_channel_trouble_idx SET (deduplicate_items = off);
-- Destinations: a channel that delivers to a broker keeps its settings in one row; the first kind
-- are redis (a Redis stream) and kafka (a Kafka topic)
CREATE TABLE pgrelay.destinations (
    channel    text PRIMARY KEY REFERENCES pgrelay.channels ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    settings   jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrelay.destinations IS
    'The settings of each channel that delivers to a broker (its action type is the kind: redis, kafka, rabbitmq), checked '
    'and completed by register(); secrets only as env:/file: references the Processor resolves';
INSERT INTO pgrelay.action_types (action_type, run_order, description) VALUES
    ('redis', 40, 'append the event to a Redis stream (pgrelay.destinations)'),
    ('kafka', 50, 'produce the event to a Kafka topic (pgrelay.destinations)'),
    ('rabbitmq', 60, 'publish the event to a RabbitMQ exchange, confirmed (pgrelay.destinations)')
ON CONFLICT (action_type) DO NOTHING;
SELECT pg_catalog.pg_extension_config_dump('pgrelay.destinations', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.action_types',
                                           $$WHERE action_type NOT IN ('sql', 'notify', 'webhook', 'redis', 'kafka', 'rabbitmq')$$);

-- Topics (publish()): a publication on a topic is one event on each channel subscribed to it. The
-- queue row and the log row of each delivery name their publication.
ALTER TABLE pgrelay.queue ADD COLUMN publication_id bigint;
COMMENT ON COLUMN pgrelay.queue.publication_id IS
    'The publication (publish()) whose delivery to this channel the event is; NULL for an event queued by notify()';
ALTER TABLE pgrelay.log ADD COLUMN publication_id bigint;
COMMENT ON COLUMN pgrelay.log.publication_id IS
    'The publication (publish()) the attempt''s event was delivered for; NULL for an event queued by notify()';
-- and the event type it was made with, which the Processor hands the receiver beside the id
ALTER TABLE pgrelay.queue ADD COLUMN event_type text;
COMMENT ON COLUMN pgrelay.queue.event_type IS
    'The event type of the publication (publish(event_type => ...)) whose delivery the event is; NULL for one '
    'without an event type and for an event queued by notify()';
ALTER TABLE pgrelay.log ADD COLUMN event_type text;
COMMENT ON COLUMN pgrelay.log.event_type IS
    'The event type of the publication the attempt''s event was delivered for; NULL without one';
-- _webhook_claim() returns the publication and event type of the event too; _enqueue_keyed()
-- takes them (publish(key => ...)): the old signatures go
DROP FUNCTION IF EXISTS pgrelay._webhook_claim(bigint);
DROP FUNCTION IF EXISTS pgrelay._enqueue_keyed(text, text, timestamptz, text, text, bigint);
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
-- schedule() takes topic and event_type, watch_table() and unwatch_table() take topic (and
-- watch_table() event_type): the old signatures go
DROP FUNCTION IF EXISTS pgrelay.schedule(text, text, text, text, text, text, boolean);
DROP FUNCTION IF EXISTS pgrelay.watch_table(regclass, text, text[], text[]);
DROP FUNCTION IF EXISTS pgrelay.unwatch_table(regclass, text);
-- The deliveries of one publication (publication_status()): found through these indexes, which
-- hold only the rows of publications (a notify()'s rows have no publication id and cost nothing).
CREATE INDEX queue_publication_idx ON pgrelay.queue (publication_id) WHERE publication_id IS NOT NULL;
CREATE INDEX log_publication_idx ON pgrelay.log (publication_id) WHERE publication_id IS NOT NULL;
