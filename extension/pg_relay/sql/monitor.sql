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

DELETE FROM pgrelay.failed_events;
DELETE FROM pgrelay.log WHERE channel = 'm_jobs';
SELECT pgrelay.unregister('m_jobs');
DROP FUNCTION regress_flaky(text);
DROP ROLE regress_monitor, regress_agent;
