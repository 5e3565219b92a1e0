/* extension/pg_relay/src/processors.sql: the Processors' reports of themselves (the view pgrelay.processors) */

-- pgrelay._processor_report()
CREATE OR REPLACE FUNCTION pgrelay._processor_report(host text, pid integer, version text, workers integer,
                                                     busy integer, started_at timestamptz, report_every interval)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: the Processor (host, pid) reports that it runs: when it starts and then every
 * report_every, after a tick, on its control connection. Its mode and leadership come from the
 * session (pg_relay.mode, pg_relay.is_leader), its node from pg_relay.node_id, and how many of its
 * workers have a connection from pg_relay.workers_connected (set by the statement that calls
 * this; not a parameter, so that the call stays the one of interface version 3, and a Processor
 * that does not set it reports NULL). Rows silent for a
 * day (a Processor that crashed and never came back) are deleted on the way, the queue's
 * indexes are rebuilt when a held snapshot or a backlog left them far larger than the queue
 * (_queue_compact: rarely, and then in a few milliseconds), and the first report of a minute
 * samples the backlog (_backlog_sample).
 * Returns: true, or false on a standby, where nothing can be written.
 *
 * The report is committed asynchronously, as the heartbeat is: losing the last report in a crash
 * costs nothing, and an idle Processor never waits for a WAL flush.
 */
DECLARE
    m text := COALESCE(NULLIF(current_setting('pg_relay.mode', true), ''), 'single');
    c text := NULLIF(current_setting('pg_relay.workers_connected', true), '');
BEGIN
    IF host IS NULL OR pid IS NULL OR version IS NULL OR workers IS NULL OR busy IS NULL OR started_at IS NULL
       OR report_every IS NULL THEN
        RAISE EXCEPTION 'host, pid, version, workers, busy, started_at and report_every must not be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- What pg_relay status prints and monitoring labels carry: visible text of bounded length.
    IF host = '' OR length(host) > 100 OR pgrelay._has_control(host) OR version = '' OR length(version) > 64
       OR pgrelay._has_control(version) THEN
        RAISE EXCEPTION 'host must be 1 to 100 and version 1 to 64 visible characters, not "%" and "%"',
                        pgrelay._show(host), pgrelay._show(version)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF workers < 1 OR busy < 0 OR busy > workers THEN
        RAISE EXCEPTION 'workers must be at least 1 and busy between 0 and workers, not % and %', workers, busy
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF c IS NOT NULL AND (c !~ '^[0-9]{1,9}$' OR c::integer > workers) THEN
        RAISE EXCEPTION 'pg_relay.workers_connected must be between 0 and workers (%), not "%"', workers,
                        pgrelay._show(c)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT isfinite(started_at) THEN
        RAISE EXCEPTION 'started_at must be a finite time, not %', started_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pgrelay._duration_ok(report_every, '1 microsecond', '1 day') THEN
        RAISE EXCEPTION 'report_every must be more than 0 and at most 1 day, not %', report_every
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_is_in_recovery() THEN
        RETURN false;
    END IF;
    PERFORM set_config('synchronous_commit', 'off', true);
    INSERT INTO pgrelay.processor_reports AS r
        (host, pid, node_id, version, mode, workers, busy, leader, started_at, last_tick_at, report_every,
         backend_pid, connected)
    VALUES (host, pid, pgrelay._this_node(), version, m, workers, busy,
            CASE WHEN m = 'leader' THEN COALESCE(current_setting('pg_relay.is_leader', true), '') = 'on' END,
            started_at, now(), report_every, pg_backend_pid(), c::integer)
    ON CONFLICT ON CONSTRAINT processor_reports_pkey DO UPDATE
    SET node_id = EXCLUDED.node_id, version = EXCLUDED.version, mode = EXCLUDED.mode,
        workers = EXCLUDED.workers, busy = EXCLUDED.busy, leader = EXCLUDED.leader,
        started_at = EXCLUDED.started_at, last_tick_at = EXCLUDED.last_tick_at,
        report_every = EXCLUDED.report_every, backend_pid = EXCLUDED.backend_pid,
        connected = EXCLUDED.connected;
    DELETE FROM pgrelay.processor_reports r WHERE r.last_tick_at < now() - interval '1 day';
    -- the upkeep must never cost the report (an event trigger refusing REINDEX, a full disk):
    -- a warning, and the report stands
    BEGIN
        PERFORM pgrelay._queue_compact();
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'pg_relay: the queue''s indexes were not rebuilt: % (SQLSTATE %)', SQLERRM, SQLSTATE;
    END;
    BEGIN
        PERFORM pgrelay._backlog_sample();
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'pg_relay: the backlog was not sampled: % (SQLSTATE %)', SQLERRM, SQLSTATE;
    END;
    RETURN true;
END
$$;
COMMENT ON FUNCTION pgrelay._processor_report(text, integer, text, integer, integer, timestamptz, interval) IS
    'A Processor reports that it runs (at start, then every report_every): the row of pgrelay.processors';

-- pgrelay._processor_stop()
CREATE OR REPLACE FUNCTION pgrelay._processor_stop(host text, pid integer) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- A Processor that stops cleanly takes its row away: only crashed ones stay, as not alive.
    -- (On a standby there is no row of its own, and nothing can be written.)
    IF host IS NULL OR pid IS NULL THEN
        RAISE EXCEPTION 'host and pid must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_is_in_recovery() THEN
        RETURN false;
    END IF;
    DELETE FROM pgrelay.processor_reports r WHERE r.host = _processor_stop.host AND r.pid = _processor_stop.pid;
    RETURN FOUND;
END
$$;
COMMENT ON FUNCTION pgrelay._processor_stop(text, integer) IS
    'A Processor stopped cleanly: its row leaves pgrelay.processors';

-- pgrelay._backlog_sample()
CREATE OR REPLACE FUNCTION pgrelay._backlog_sample() RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: writes the backlog of the queue for the current minute into pgrelay.backlog_samples,
 * unless a report of this minute did already (several Processors, or one that reports every
 * tick), and deletes the samples older than 25 hours. Called by _processor_report(), on the
 * Processor's control connection: no background worker of its own, and a sample costs one
 * count of the queue (the pending events only) and of pgrelay.failed_events a minute.
 * Returns: whether it wrote a sample.
 */
DECLARE
    minute timestamptz := date_trunc('minute', now());
BEGIN
    IF pg_is_in_recovery() OR EXISTS (SELECT 1 FROM pgrelay.backlog_samples s WHERE s.sampled_at = minute) THEN
        RETURN false;
    END IF;
    INSERT INTO pgrelay.backlog_samples AS s (sampled_at, due, waiting, retrying, failed)
    SELECT minute, count(*) FILTER (WHERE q.attempt = 1 AND q.run_at <= now()),
           count(*) FILTER (WHERE q.attempt = 1 AND q.run_at > now()),
           count(*) FILTER (WHERE q.attempt > 1),
           (SELECT count(*) FROM pgrelay.failed_events)
    FROM pgrelay.queue q
    ON CONFLICT ON CONSTRAINT backlog_samples_pkey DO NOTHING;
    DELETE FROM pgrelay.backlog_samples s WHERE s.sampled_at < now() - interval '25 hours';
    RETURN true;
END
$$;
COMMENT ON FUNCTION pgrelay._backlog_sample() IS
    'The first Processor report of a minute samples the backlog (due, waiting, retrying, failed) into pgrelay.backlog_samples';
