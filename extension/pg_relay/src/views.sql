/* extension/pg_relay/src/views.sql: operator views */

CREATE OR REPLACE VIEW pgrelay.queue_depth AS
SELECT COALESCE(c.channel, q.channel) AS channel,
       COALESCE(c.action_type, q.action_type) AS action_type,
       COALESCE(c.active, false) AS active,
       count(q.id) AS queued,
       count(q.id) FILTER (WHERE q.run_at <= now()) AS due,
       count(q.id) FILTER (WHERE q.attempt > 1) AS retrying,
       now() - min(q.run_at) FILTER (WHERE q.run_at <= now()) AS oldest_due_age,
       min(q.run_at) FILTER (WHERE q.run_at > now()) AS next_run_at
FROM pgrelay.channels c
FULL JOIN pgrelay.queue q ON q.channel = c.channel
GROUP BY 1, 2, 3;
COMMENT ON VIEW pgrelay.queue_depth IS
    'Per channel: queued and due events, retries waiting, age of the oldest due event';

CREATE OR REPLACE VIEW pgrelay.failed AS
SELECT f.event_id, f.channel, f.action_type, f.payload, f.attempts, f.error, f.sqlstate,
       f.failed_at, f.queued_at, f.log_id, f.node_id,
       pgrelay.error_kind(f.sqlstate) AS error_kind
FROM pgrelay.failed_events f;
COMMENT ON VIEW pgrelay.failed IS
    'Events that failed for good (permanent error or attempts exhausted), newest last';
