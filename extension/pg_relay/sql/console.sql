-- the web console's reads: pgrelay.attempts (the log without payloads) and throughput()
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
DELETE FROM pgrelay.queue;
DELETE FROM pgrelay.log;
CREATE ROLE regress_console_monitor IN ROLE pgrelay_monitor;
CREATE ROLE regress_console_admin IN ROLE pgrelay_admin;

-- attempts made at known times: ids carry their time (_id_floor), so a row "made" 3 hours ago
-- has an id of 3 hours ago; base keeps the ids of each call apart
CREATE FUNCTION regress_attempt(base integer, ago interval, n integer, ch text, outcome text, detail jsonb DEFAULT NULL)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO pgrelay.log (id, queue_id, event_id, channel, action_type, payload, attempt, outcome, error,
                             detail, node_id, started_at, finished_at)
    SELECT pgrelay._id_floor(date_trunc('minute', now() - ago) + interval '10 seconds') + base + g,
           base + g, base + g, ch, 'sql', 'secret payload ' || g, 1, outcome,
           CASE WHEN outcome <> 'ok' THEN 'boom' END, detail, 0,
           now() - ago - interval '250 milliseconds', now() - ago
    FROM generate_series(1, n) g
$$;
SELECT regress_attempt(0, '3 hours', 4, 'c_one', 'ok'), regress_attempt(10, '3 hours', 2, 'c_one', 'failed'),
       regress_attempt(20, '2 hours', 3, 'c_two', 'retry'), regress_attempt(30, '2 minutes', 5, 'c_one', 'ok'),
       regress_attempt(40, '2 minutes', 1, 'c_two', 'timeout'), regress_attempt(50, '2 minutes', 1, 'c_two', 'cancelled'),
       regress_attempt(60, '1 minute', 1, 'c_hook', 'failed',
                       '{"transport": "webhook", "status": 500, "latency_ms": 42, "response": "secret answer"}'),
       regress_attempt(70, '2 days', 1, 'c_one', 'ok');

-- the monitor reads every attempt's outcome, but neither payload nor detail
SET ROLE regress_console_monitor;
SELECT channel, outcome, error, duration_ms, http_status, latency_ms, count(*)
FROM pgrelay.attempts GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2;
SELECT payload FROM pgrelay.attempts;
SELECT detail FROM pgrelay.attempts;
SELECT count(*) FROM pgrelay.log;
RESET ROLE;

-- the last hour, per minute
SET ROLE regress_console_monitor;
SELECT now() - bucket_start BETWEEN interval '1 minute' AND interval '3 minutes' AS recent, channel, done, retried, failed
FROM pgrelay.throughput(now() - interval '1 hour') ORDER BY bucket_start, channel;
RESET ROLE;
-- the last day in hours, as the admin: the attempt of two days ago is outside
SET ROLE regress_console_admin;
SELECT channel, sum(done) AS done, sum(retried) AS retried, sum(failed) AS failed, count(*) AS buckets
FROM pgrelay.throughput(now() - interval '1 day', now(), '1 hour') GROUP BY channel ORDER BY channel;
-- buckets start at whole multiples of the bucket, and a range's end is left out
SELECT bool_and(date_part('epoch', bucket_start)::bigint % 3600 = 0) AS whole_hours
FROM pgrelay.throughput(now() - interval '1 day', now(), '1 hour');
SELECT count(*) FROM pgrelay.throughput(now() - interval '1 day', date_trunc('minute', now() - interval '3 hours'));
SELECT sum(done + failed) FROM pgrelay.throughput(now() - interval '1 day', date_trunc('minute', now() - interval '3 hours') + interval '1 minute');
RESET ROLE;

-- bad ranges and buckets (error)
SELECT * FROM pgrelay.throughput(NULL);
SELECT * FROM pgrelay.throughput(now() - interval '1 hour', NULL);
SELECT * FROM pgrelay.throughput(now() - interval '1 hour', now(), NULL);
SELECT * FROM pgrelay.throughput(now(), now());
SELECT * FROM pgrelay.throughput(now(), now() - interval '1 hour');
SELECT * FROM pgrelay.throughput(now() - interval '25 hours');
SELECT * FROM pgrelay.throughput('-infinity');
-- a bucket is bounded in seconds too, the measure it is used with ('1 year -359 days' compares
-- as 1 day and is 6.25 days)
SELECT * FROM pgrelay.throughput(now() - interval '1 hour', now(), '1 year -359 days');
SELECT * FROM pgrelay.throughput(now() - interval '1 hour', 'infinity');
SELECT * FROM pgrelay.throughput(now() - interval '1 hour', now(), '30 seconds');
SELECT * FROM pgrelay.throughput(now() - interval '1 hour', now(), '90 seconds');
SELECT * FROM pgrelay.throughput(now() - interval '1 hour', now(), '2 days');
SELECT * FROM pgrelay.throughput(now() - interval '1 hour', now(), '-1 minute');
-- producers and the Processor have no business here (error)
CREATE ROLE regress_console_producer IN ROLE pgrelay_producer;
SET ROLE regress_console_producer;
SELECT * FROM pgrelay.throughput(now() - interval '1 hour');
SELECT count(*) FROM pgrelay.attempts;
RESET ROLE;

-- the last error of each channel: its newest attempt that failed (retry, timeout, failed), with
-- its kind; a channel without one has no row
CREATE FUNCTION regress_console_ok(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS '';
SELECT count(pgrelay.register(c, 'sql', handler => 'regress_console_ok(text)'))
FROM unnest(ARRAY['c_one', 'c_two', 'c_hook', 'c_quiet']) c;
UPDATE pgrelay.log SET sqlstate = '42501', error = 'permission denied for table stock'
WHERE channel = 'c_two' AND outcome = 'timeout';
SET ROLE regress_console_monitor;
SELECT channel, round(date_part('epoch', now() - failed_at) / 60) AS minutes_ago, attempt, outcome, error, sqlstate,
       error_kind, event_id = (SELECT max(event_id) FROM pgrelay.attempts a WHERE a.id = log_id) AS its_event
FROM pgrelay.last_errors ORDER BY channel;
RESET ROLE;
-- a newer retry of c_one is its last error now, whatever the outcome of what came after it
SELECT regress_attempt(80, '30 seconds', 1, 'c_one', 'retry'), regress_attempt(90, '10 seconds', 1, 'c_one', 'ok');
SELECT channel, now() - failed_at < interval '1 minute' AS recent, outcome FROM pgrelay.last_errors
WHERE channel = 'c_one';

-- the backlog: the first report of a minute samples it (due and waiting first attempts, retries,
-- failed events), the next report of the same minute does not, and samples older than 25 hours go.
-- One transaction: one now(), one minute.
CREATE ROLE regress_console_proc IN ROLE pgrelay_processor;
SELECT count(pgrelay.notify('c_one', 'due')) FROM generate_series(1, 3);
SELECT count(pgrelay.notify('c_one', 'later', now() + interval '1 hour')) FROM generate_series(1, 2);
UPDATE pgrelay.queue SET attempt = 2
WHERE id IN (SELECT id FROM pgrelay.queue WHERE channel = 'c_one' AND payload = 'due' ORDER BY id LIMIT 1);
INSERT INTO pgrelay.failed_events (event_id, channel, action_type, payload, attempts, log_id, node_id, queued_at)
VALUES (1, 'c_one', 'sql', 'x', 5, 1, 0, now());
DELETE FROM pgrelay.backlog_samples;
BEGIN;
INSERT INTO pgrelay.backlog_samples VALUES (date_trunc('minute', now()) - interval '26 hours', 9, 9, 9, 9),
                                          (date_trunc('minute', now()) - interval '24 hours', 8, 8, 8, 8);
SET LOCAL ROLE regress_console_proc;
SELECT pgrelay._processor_report('host-c', 1, '9.9.9', 1, 0, now(), '10 seconds') AS reported;
RESET ROLE;
UPDATE pgrelay.queue SET attempt = 3;
SET LOCAL ROLE regress_console_proc;
SELECT pgrelay._processor_report('host-c', 1, '9.9.9', 1, 0, now(), '10 seconds') AS reported;
SELECT pgrelay._processor_stop('host-c', 1);
RESET ROLE;
SELECT pgrelay._backlog_sample() AS sampled_again;
COMMIT;
SET ROLE regress_console_monitor;
SELECT round(date_part('epoch', now() - sampled_at) / 3600) AS hours_ago, due, waiting, retrying, failed
FROM pgrelay.backlog ORDER BY sampled_at;
-- the monitor reads the view, not the table, and samples nothing (error)
SELECT count(*) FROM pgrelay.backlog_samples;
SELECT pgrelay._backlog_sample();
RESET ROLE;
DELETE FROM pgrelay.backlog_samples;
DELETE FROM pgrelay.failed_events;
DELETE FROM pgrelay.queue;
DROP ROLE regress_console_proc;

-- the console's searches use the log's indexes, never a scan of the whole log. On the statistics
-- of this test's rows (not on what autovacuum may or may not have analyzed since the earlier
-- tests' rows left), and, the log being this small, without the bitmap scans a sort would then
-- follow, which a log of any size would not pay for.
VACUUM ANALYZE pgrelay.log;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM pgrelay.attempts WHERE channel = 'c_one' AND id < 9223372036854775807 ORDER BY id DESC LIMIT 50;
EXPLAIN (COSTS OFF) SELECT id FROM pgrelay.attempts WHERE outcome = 'failed' ORDER BY id DESC LIMIT 50;
EXPLAIN (COSTS OFF) SELECT id FROM pgrelay.attempts WHERE channel = 'c_one' AND outcome = 'retry' ORDER BY id DESC LIMIT 50;
-- a channel's last error: the end of log_channel_trouble_idx for each failed outcome, then the row
-- by its key (counted from the plan: how a plan shows a subquery differs between major versions)
CREATE FUNCTION regress_plan(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        RETURN NEXT line;
    END LOOP;
END
$$;
SELECT count(*) FILTER (WHERE p ~ 'Index Only Scan Backward using log_channel_trouble_idx') AS newest_of_an_outcome,
       count(*) FILTER (WHERE p ~ 'Index Scan using log_pkey') AS the_row,
       count(*) FILTER (WHERE p ~ 'Seq Scan|Bitmap|Sort') AS other
FROM regress_plan('SELECT error FROM pgrelay.last_errors WHERE channel = ''c_one''') p;
DROP FUNCTION regress_plan(text);
RESET enable_bitmapscan;
RESET enable_seqscan;

DROP FUNCTION regress_attempt(integer, interval, integer, text, text, jsonb);
DELETE FROM pgrelay.log;
SELECT count(pgrelay.unregister(c)) FROM unnest(ARRAY['c_one', 'c_two', 'c_hook', 'c_quiet']) c;
DROP FUNCTION regress_console_ok(text);
DROP ROLE regress_console_monitor, regress_console_admin, regress_console_producer;
