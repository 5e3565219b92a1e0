/* extension/pg_relay/src/views.sql: operator views */

CREATE OR REPLACE VIEW pgrelay.queue_depth AS
SELECT COALESCE(c.channel, q.channel) AS channel,
       COALESCE(c.action_type, q.action_type) AS action_type,
       COALESCE(c.active, false) AS active,
       count(q.id) AS queued,
       count(q.id) FILTER (WHERE q.run_at <= now()) AS due,
       count(q.id) FILTER (WHERE q.attempt > 1) AS retrying,
       now() - min(q.run_at) FILTER (WHERE q.run_at <= now()) AS oldest_due_age,
       min(q.run_at) FILTER (WHERE q.run_at > now()) AS next_run_at,
       COALESCE(c.paused, false) AS paused,
       count(q.id) FILTER (WHERE q.key IS NOT NULL) AS keyed,
       count(q.id) FILTER (WHERE q.snoozes > 0) AS snoozed
FROM pgrelay.channels c
FULL JOIN pgrelay.queue q ON q.channel = c.channel
GROUP BY 1, 2, 3, 9;
COMMENT ON VIEW pgrelay.queue_depth IS
    'Per channel: queued and due events, retries waiting, age of the oldest due event, paused, events with a key, snoozed events';

CREATE OR REPLACE VIEW pgrelay.failed AS
SELECT f.event_id, f.channel, f.action_type, f.payload, f.attempts, f.error, f.sqlstate,
       f.failed_at, f.queued_at, f.log_id, f.node_id,
       pgrelay.error_kind(f.sqlstate) AS error_kind
FROM pgrelay.failed_events f;
COMMENT ON VIEW pgrelay.failed IS
    'Events that failed for good (permanent error or attempts exhausted), newest last';

CREATE OR REPLACE VIEW pgrelay.channel_stats AS
-- The log rows of the last hour, found through the primary key: log ids start with their
-- creation time (the same arithmetic as pgrelay._id_floor, written out so that a role reading the
-- view needs no right on the function).
WITH recent AS (
    SELECT l.channel, l.outcome, l.started_at, l.finished_at
    FROM pgrelay.log l
    WHERE l.id >= (GREATEST(floor(date_part('epoch', now() - interval '1 hour') * 1000)::bigint
                            - 1767225600000, 0) << 22)
      AND l.finished_at > now() - interval '1 hour'
)
SELECT c.channel, c.action_type,
       count(r.*) FILTER (WHERE r.finished_at > now() - interval '5 minutes'
                          AND r.outcome IN ('ok', 'partial', 'cancelled')) AS done_5m,
       count(r.*) FILTER (WHERE r.finished_at > now() - interval '5 minutes'
                          AND r.outcome IN ('retry', 'timeout')) AS retried_5m,
       count(r.*) FILTER (WHERE r.finished_at > now() - interval '5 minutes' AND r.outcome = 'failed') AS failed_5m,
       count(r.*) FILTER (WHERE r.outcome IN ('ok', 'partial', 'cancelled')) AS done_1h,
       count(r.*) FILTER (WHERE r.outcome IN ('retry', 'timeout')) AS retried_1h,
       count(r.*) FILTER (WHERE r.outcome = 'failed') AS failed_1h,
       round(count(r.*) FILTER (WHERE r.outcome IN ('retry', 'timeout', 'failed'))::numeric
             / NULLIF(count(r.*), 0), 4) AS error_rate_1h,
       round((avg(date_part('epoch', r.finished_at - r.started_at)) * 1000)::numeric, 1) AS avg_ms_1h,
       max(r.finished_at) FILTER (WHERE r.outcome IN ('ok', 'partial', 'cancelled')) AS last_done_at,
       round(count(r.*) FILTER (WHERE r.finished_at > now() - interval '5 minutes'
                                AND r.outcome IN ('retry', 'timeout', 'failed'))::numeric
             / NULLIF(count(r.*) FILTER (WHERE r.finished_at > now() - interval '5 minutes'), 0), 4) AS error_rate_5m,
       round(count(r.*) FILTER (WHERE r.finished_at > now() - interval '5 minutes'
                                AND r.outcome IN ('ok', 'partial', 'cancelled'))::numeric / 300, 3) AS throughput_5m,
       round(count(r.*) FILTER (WHERE r.outcome IN ('ok', 'partial', 'cancelled'))::numeric / 3600, 3) AS throughput_1h
FROM pgrelay.channels c
LEFT JOIN recent r ON r.channel = c.channel
GROUP BY c.channel, c.action_type;
COMMENT ON VIEW pgrelay.channel_stats IS
    'Per channel, from the log of the last hour: attempts done, retried and failed in the last 5 minutes '
    'and hour, the share of failed attempts, their mean duration, the last success, events done per second';

-- The last error of each channel: its newest attempt that failed (retry, timeout or failed). Three
-- looks at the end of log_channel_trouble_idx per channel, one for each of these outcomes (an
-- index on (channel, outcome, id) gives the newest of one outcome at once, not of three), then the
-- row by its primary key: the same cost whatever the size of the log.
CREATE OR REPLACE VIEW pgrelay.last_errors AS
SELECT c.channel, l.finished_at AS failed_at, l.event_id, l.attempt, l.outcome, l.error, l.sqlstate,
       pgrelay.error_kind(l.sqlstate) AS error_kind, l.retry_at, l.id AS log_id
FROM pgrelay.channels c
CROSS JOIN LATERAL (
    SELECT GREATEST((SELECT max(x.id) FROM pgrelay.log x WHERE x.channel = c.channel AND x.outcome = 'retry'),
                    (SELECT max(x.id) FROM pgrelay.log x WHERE x.channel = c.channel AND x.outcome = 'timeout'),
                    (SELECT max(x.id) FROM pgrelay.log x WHERE x.channel = c.channel AND x.outcome = 'failed')) AS id
) m
JOIN pgrelay.log l ON l.id = m.id;
COMMENT ON VIEW pgrelay.last_errors IS
    'Per channel that has one in pgrelay.log: its newest failed attempt (retry, timeout or failed): when, the event, '
    'the attempt, the error, its SQLSTATE and kind, when it is retried';

-- The backlog over the last 25 hours, a sample a minute while a Processor reports (_backlog_sample).
CREATE OR REPLACE VIEW pgrelay.backlog AS
SELECT s.sampled_at, s.due, s.waiting, s.retrying, s.failed
FROM pgrelay.backlog_samples s;
COMMENT ON VIEW pgrelay.backlog IS
    'This node''s backlog once a minute over the last 25 hours while a Processor reports: events due (first '
    'attempts), waiting (first attempts due later), retrying (due or not) and failed for good';

CREATE OR REPLACE VIEW pgrelay.cluster_status AS
SELECT * FROM pgrelay._cluster_status();
COMMENT ON VIEW pgrelay.cluster_status IS
    'Multi-node and leader mode: every node as this node''s Processor last saw it: link, heartbeat, '
    'silence by this node''s clock, dead by the rule (pg_relay.dead_after), leading, acknowledging this node';

CREATE OR REPLACE VIEW pgrelay.webhook_status AS
SELECT w.channel,
       substring(w.url from '^[a-z]+://[^/?#]+') AS endpoint,
       w.method,
       CASE WHEN w.gone_at IS NOT NULL THEN 'gone'
            WHEN c.paused THEN 'paused'
            WHEN NOT c.active THEN 'inactive'
            ELSE 'active' END AS state,
       w.signing IS NOT NULL AS signed,
       w.gone_at, w.gone_status, w.gone_reason
FROM pgrelay.webhooks w
JOIN pgrelay.channels c ON c.channel = w.channel;
COMMENT ON VIEW pgrelay.webhook_status IS
    'Per webhook channel: the endpoint''s scheme, host and port (not its path, which may hold a token), '
    'its state (active, paused, inactive, gone: it answered 410 and its channel was paused) and why';

CREATE OR REPLACE VIEW pgrelay.processors AS
SELECT r.host, r.pid, r.node_id, r.version, r.mode, r.workers, r.busy,
       -- Whether it leads comes from where cluster_status reads it, this node's heartbeat (written
       -- every tick), not from the report (every 10 s): the two never disagree. A Processor that
       -- is not alive leads nothing.
       CASE WHEN r.mode = 'leader'
            THEN a.alive AND COALESCE((SELECT h.leader AND h.stopped_at IS NULL FROM pgrelay.heartbeats h
                                       WHERE h.node_id = r.node_id), false)
       END AS leader,
       r.started_at, r.last_tick_at,
       GREATEST(now() - r.last_tick_at, interval '0') AS silent_for,
       a.alive,
       r.backend_pid, r.connected
FROM pgrelay.processor_reports r
-- A running Processor reports every report_every: three missed reports and it is not alive. Nor is
-- one whose reporting session is gone: its backend no longer runs, or the server started after
-- its last report (a crash: the Processor, if it still runs, reports again from a new session).
CROSS JOIN LATERAL (
    SELECT r.last_tick_at > pg_catalog.now() - 3 * r.report_every
           AND r.last_tick_at >= pg_catalog.pg_postmaster_start_time()
           AND (r.backend_pid IS NULL
                OR EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity s WHERE s.pid = r.backend_pid)) AS alive
) a;
COMMENT ON VIEW pgrelay.processors IS
    'The Processors running against this database (this node), as they report themselves: alive while '
    'their reports keep coming (every 10 s); a clean stop removes the row, a crashed one stays, not alive';

CREATE OR REPLACE VIEW pgrelay.dispatch_state AS
SELECT c.paused, c.paused_at, pg_catalog.pg_is_in_recovery() AS in_recovery,
       pgrelay._this_node() AS node_id,
       c.reload_generation, c.reload_requested_at
FROM pgrelay.control c;
COMMENT ON VIEW pgrelay.dispatch_state IS
    'Whether pgrelay.pause() stopped dispatch everywhere, whether this server is a standby, its node id, '
    'the reload generation';

CREATE OR REPLACE VIEW pgrelay.watched_tables AS
SELECT w.relid AS "table", w.channel, w.trigger_name, w.watcher, w.operations, w.columns,
       CASE WHEN s.state = 'active' AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger g
                                                    WHERE g.tgrelid = w.relid AND g.tgname = w.trigger_name)
            THEN 'trigger missing' ELSE s.state END AS state,
       s.readable AS readable_columns, w.created_at, w.topic, w.event_type
FROM pgrelay.watches w
CROSS JOIN LATERAL pgrelay._watch_readable(w) s;
COMMENT ON VIEW pgrelay.watched_tables IS
    'Each watch of watch_table(): its table, channel (or topic and event type) and watcher, and state: active, or why its changes queue nothing now';

-- ---- Recurring events: the schedules, with their last and next runs (no payload: the monitor
-- role reads this view, and reads no payload but those of failed events; its size says whether
-- there is one).
CREATE OR REPLACE VIEW pgrelay.schedules AS
SELECT e.name, e.channel, e.cron, e.timezone, e.catch_up, e.active,
       e.last_run_at, e.last_outcome, e.last_event_id, e.last_fired_at, e.last_reason,
       CASE WHEN e.active THEN e.next_run_at END AS next_run_at,
       e.active AND e.next_run_at <= now() AS due,
       octet_length(e.payload) AS payload_bytes,
       e.created_by, e.updated_at, e.topic, e.event_type
FROM pgrelay.schedule_entries e;
COMMENT ON VIEW pgrelay.schedules IS
    'Each recurring event: channel (or topic and event type), cron expression and time zone, the occurrence fired last and how, the next '
    'one (NULL while inactive or when the expression names no later time), due now, the payload''s size';
-- ---- end of the recurring events block ----
