-- pgrelay_monitor reads every view and nothing else; channel_stats; pausing one channel
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
DELETE FROM pgrelay.queue;
CREATE ROLE regress_monitor IN ROLE pgrelay_monitor;
CREATE ROLE regress_agent IN ROLE pg_monitor;

-- The role is granted to pg_monitor when it is made, so monitoring agents read pg_relay's views.
SELECT pg_has_role('regress_agent', 'pgrelay_monitor', 'USAGE') AS agent_is_monitor;

-- Every view of pgrelay is readable, no table is (from the catalog: a new view or table without a
-- decision changes this output).
SELECT c.relname, c.relkind, has_table_privilege('pgrelay_monitor', c.oid, 'SELECT') AS can_read
FROM pg_class c
WHERE c.relnamespace = 'pgrelay'::regnamespace AND c.relkind IN ('r', 'v', 'm', 'p')
ORDER BY c.relkind DESC, c.relname;
-- What producers wrote that it reads: the payload of an event that failed for good
-- (pgrelay.failed, for troubleshooting: it may hold personal data), the error texts of attempts
-- and failures (a handler may quote its payload in them), and of a schedule the size of its
-- payload; no payload of the log or the queue (pgrelay.attempts has none), no key (from the
-- catalog: a column that brings more into a view it reads changes this output)
SELECT c.relname, a.attname
FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.relnamespace = 'pgrelay'::regnamespace
  AND has_column_privilege('pgrelay_monitor', c.oid, a.attnum, 'SELECT')
  AND a.attname ~ '^(error|last_error|last_reason|detail|key|headers|url)$|payload'
ORDER BY 1, 2;
-- and the only functions it may call are pure ones the views use
SELECT p.oid::regprocedure AS executable_by_monitor
FROM pg_proc p
WHERE p.pronamespace = 'pgrelay'::regnamespace AND has_function_privilege('pgrelay_monitor', p.oid, 'EXECUTE')
ORDER BY 1;

-- channel_stats: attempts of the last 5 minutes and hour, by channel
CREATE FUNCTION regress_flaky(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
BEGIN
    IF payload = 'bad' THEN RAISE EXCEPTION 'bad payload' USING ERRCODE = 'PGSTP'; END IF;
END
$$;
SELECT channel FROM pgrelay.register('m_jobs', 'sql', handler => 'regress_flaky(text)');
SELECT outcome FROM pgrelay.process_one(pgrelay.notify('m_jobs', 'good'));
SELECT outcome FROM pgrelay.process_one(pgrelay.notify('m_jobs', 'good'));
SELECT outcome FROM pgrelay.process_one(pgrelay.notify('m_jobs', 'bad'));
SET ROLE regress_monitor;
SELECT channel, action_type, done_5m, retried_5m, failed_5m, done_1h, failed_1h, error_rate_1h,
       avg_ms_1h >= 0 AS timed, last_done_at IS NOT NULL AS has_last_done
FROM pgrelay.channel_stats WHERE channel = 'm_jobs';
-- throughput (events done per second) and the error rate of the last 5 minutes
SELECT error_rate_5m, throughput_5m, throughput_1h FROM pgrelay.channel_stats WHERE channel = 'm_jobs';
-- the global pause, whether this is a standby, this node
SELECT paused, in_recovery, node_id FROM pgrelay.dispatch_state;
SELECT channel, queued, paused FROM pgrelay.queue_depth WHERE channel = 'm_jobs';
SELECT channel, payload, error_kind FROM pgrelay.failed WHERE channel = 'm_jobs';
-- but nothing else (error)
SELECT count(*) FROM pgrelay.queue;
SELECT count(*) FROM pgrelay.log;
SELECT pgrelay.pause();
SELECT pgrelay.notify('m_jobs', 'x');
RESET ROLE;

-- pause(channel): the channel's producers keep queueing, nothing of it is dispatched
SELECT pgrelay.pause('m_jobs');
SELECT pgrelay.notify('m_jobs', 'while paused') AS id \gset
SELECT count(*) AS offered FROM pgrelay.queue_pending_ids() WHERE channel = 'm_jobs';
SELECT outcome FROM pgrelay.process_one(:id);
SELECT channel, queued, due, paused FROM pgrelay.queue_depth WHERE channel = 'm_jobs';
SELECT paused FROM pgrelay.control;
-- resume() of everything leaves a channel paused by itself paused; resume(channel) resumes it
SELECT pgrelay.resume();
SELECT count(*) AS offered FROM pgrelay.queue_pending_ids() WHERE channel = 'm_jobs';
SELECT pgrelay.resume('m_jobs');
SELECT outcome FROM pgrelay.process_one(:id);
-- an unknown channel (error)
SELECT pgrelay.pause('m_nonesuch');
SELECT pgrelay.resume('m_nonesuch');

-- pgrelay.processors: each Processor reports itself (_processor_report, at start and every
-- report_every); the monitor reads the view, alive while the reports keep coming
CREATE ROLE regress_mproc IN ROLE pgrelay_processor;
SET ROLE regress_mproc;
SELECT pgrelay._processor_report('host-a', 4242, '9.9.9', 4, 1, '2026-03-01 10:00:00+00', '10 seconds') AS reported;
SET pg_relay.mode = 'leader';
SET pg_relay.is_leader = on;
SELECT pgrelay._processor_report('host-b', 7, '9.9.9', 2, 0, '2026-03-01 11:00:00+00', '1 minute') AS reported;
RESET pg_relay.is_leader;
RESET pg_relay.mode;
-- a second report of the same Processor updates its row; how many of its workers have a
-- connection comes from the session, set by the statement as the Processor's own does (host-b
-- did not say: NULL)
SELECT pgrelay._processor_report('host-a', 4242, '9.9.9', 4, 3, '2026-03-01 10:00:00+00', '10 seconds') AS reported
FROM pg_catalog.set_config('pg_relay.workers_connected', '3', true);
-- but it cannot read the table, nor change it otherwise (error)
SELECT count(*) FROM pgrelay.processor_reports;
DELETE FROM pgrelay.processor_reports;
RESET ROLE;
-- whether a leader-mode Processor leads is read where cluster_status reads it, its node's
-- heartbeat: none yet, so it does not lead (whatever its report said)
SET ROLE regress_monitor;
SELECT host, pid, node_id, version, mode, workers, busy, leader, started_at, silent_for < '1 minute' AS recent,
       alive, backend_pid = pg_backend_pid() AS this_session, connected
FROM pgrelay.processors ORDER BY host;
RESET ROLE;
INSERT INTO pgrelay.heartbeats (node_id, beat, beat_at, mode, leader, heard, links, started_at)
VALUES (0, 1, now(), 'leader', true, '{}', '{}', now());
SET ROLE regress_monitor;
SELECT host, leader FROM pgrelay.processors ORDER BY host;
RESET ROLE;
-- a node whose Processor stopped leads nothing
UPDATE pgrelay.heartbeats SET stopped_at = now() WHERE node_id = 0;
SELECT host, leader FROM pgrelay.processors ORDER BY host;
DELETE FROM pgrelay.heartbeats;
SET ROLE regress_monitor;
-- the monitor may not report (error)
SELECT pgrelay._processor_report('host-x', 1, '9.9.9', 1, 0, now(), '10 seconds');
RESET ROLE;
-- three missed reports: not alive; silent for a day: deleted by the next report of any Processor
UPDATE pgrelay.processor_reports SET last_tick_at = now() - interval '31 seconds' WHERE host = 'host-a';
SELECT host, alive FROM pgrelay.processors ORDER BY host;
UPDATE pgrelay.processor_reports SET last_tick_at = now() - interval '25 hours' WHERE host = 'host-a';
SET ROLE regress_mproc;
SELECT pgrelay._processor_report('host-b', 7, '9.9.9', 2, 0, '2026-03-01 11:00:00+00', '1 minute') AS reported;
-- a clean stop removes the row
SELECT pgrelay._processor_stop('host-b', 7) AS removed, pgrelay._processor_stop('host-b', 7) AS again;
-- a report needs its identity, sane counts, a finite start and an interval up to a day (error)
SELECT pgrelay._processor_report(NULL, 1, '9.9.9', 1, 0, now(), '10 seconds');
SELECT pgrelay._processor_report('', 1, '9.9.9', 1, 0, now(), '10 seconds');
SELECT pgrelay._processor_report(E'host\n' || repeat('x', 300), 1, '9.9.9', 1, 0, now(), '10 seconds');
SELECT pgrelay._processor_report(repeat('h', 101), 1, '9.9.9', 1, 0, now(), '10 seconds');
SELECT pgrelay._processor_report('host-c', 1, '9.9.9', 1, 0, now(), '1 year -359 days');
SELECT pgrelay._processor_report('host-c', 1, '9.9.9', 0, 0, now(), '10 seconds');
SELECT pgrelay._processor_report('host-c', 1, '9.9.9', 2, 3, now(), '10 seconds');
SELECT pgrelay._processor_report('host-c', 1, '9.9.9', 1, 0, 'infinity', '10 seconds');
SELECT pgrelay._processor_report('host-c', 1, '9.9.9', 1, 0, now(), '0 seconds');
SELECT pgrelay._processor_report('host-c', 1, '9.9.9', 1, 0, now(), '2 days');
SET pg_relay.workers_connected = '3';
SELECT pgrelay._processor_report('host-c', 1, '9.9.9', 2, 0, now(), '10 seconds');
SET pg_relay.workers_connected = '-1';
SELECT pgrelay._processor_report('host-c', 1, '9.9.9', 2, 0, now(), '10 seconds');
SET pg_relay.workers_connected = 'two';
SELECT pgrelay._processor_report('host-c', 1, '9.9.9', 2, 0, now(), '10 seconds');
RESET pg_relay.workers_connected;
SELECT pgrelay._processor_stop(NULL, 1);
RESET ROLE;
SELECT count(*) AS left FROM pgrelay.processors;
DROP ROLE regress_mproc;

-- pause() shows in dispatch_state
SELECT pgrelay.pause();
SET ROLE regress_monitor;
SELECT paused, paused_at IS NOT NULL AS since FROM pgrelay.dispatch_state;
RESET ROLE;
SELECT pgrelay.resume();

DELETE FROM pgrelay.failed_events;
DELETE FROM pgrelay.log WHERE channel = 'm_jobs';
SELECT pgrelay.unregister('m_jobs');
DROP FUNCTION regress_flaky(text);
DROP ROLE regress_monitor, regress_agent;
