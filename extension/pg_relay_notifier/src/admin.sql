/* extension/pg_relay_notifier/src/admin.sql: administration: requeue, purge */

-- pgrelay_notifier.requeue()
CREATE OR REPLACE FUNCTION pgrelay_notifier.requeue(notification_id bigint, run_at timestamptz DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: gives a failed or partially sent notification another round: recipients that failed
 * or were retrying become pending again (those sent stay sent and are not mailed twice), the
 * status becomes queued, and a new event is queued on its channel. Use it instead of
 * pgrelay.retry_failed() for notify events, which would re-deliver with the recipients' failed
 * statuses unchanged.
 * Returns: 'queued'.
 */
DECLARE
    n pgrelay_notifier.notifications;
BEGIN
    n := pgrelay_notifier._visible(requeue.notification_id, true);
    IF n.status NOT IN ('failed', 'partially_sent') THEN
        RAISE EXCEPTION 'notification % is %; only failed or partially sent notifications can be requeued',
                        n.notification_id, n.status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pgrelay_notifier.channels c WHERE c.channel = n.channel) THEN
        RAISE EXCEPTION 'channel "%" of notification % does not exist any more', n.channel, n.notification_id
            USING ERRCODE = 'undefined_object';
    END IF;
    IF requeue.run_at IS NOT NULL AND NOT isfinite(requeue.run_at) THEN
        RAISE EXCEPTION 'run_at must be a finite time, not %', requeue.run_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE pgrelay_notifier.recipients r SET status = 'pending', code = NULL, reply = NULL, updated_at = now()
    WHERE r.notification_id = n.notification_id AND r.status IN ('failed', 'retrying');
    -- The new event is the only one that may deliver the notification from now on.
    UPDATE pgrelay_notifier.notifications x
    SET status = 'queued', finished_at = NULL, sent_at = NULL, next_attempt_at = NULL,
        run_at = requeue.run_at, updated_at = now(),
        queue_event_id = pgrelay.notify(n.channel, n.notification_id::text, requeue.run_at)
    WHERE x.notification_id = n.notification_id;
    RETURN 'queued';
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.requeue(bigint, timestamptz) IS
    'Queues a failed or partially sent notification again for its unsent recipients; returns queued';

-- pgrelay_notifier.purge()
CREATE OR REPLACE FUNCTION pgrelay_notifier.purge(older_than interval,
                                       OUT notifications bigint, OUT attempts bigint, OUT traces bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: retention. Deletes the notifications that finished (sent, partially sent, failed or
 * cancelled) more than older_than ago, with their recipients, attachments, attempts and traces,
 * and the traces older than that of notifications still in progress.
 * Returns: how many notifications, attempts and traces were deleted.
 */
DECLARE
    cutoff timestamptz;
BEGIN
    -- 0 would delete every finished notification; more than 1000 years would not even make a
    -- timestamp (pg_relay's purge_log() draws the same bounds).
    IF older_than IS NULL OR older_than <= '0' OR older_than > '1000 years' THEN
        RAISE EXCEPTION 'older_than must be a positive interval of at most 1000 years, not %',
                        COALESCE(older_than::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    cutoff := now() - older_than;
    WITH old AS (
        SELECT x.notification_id FROM pgrelay_notifier.notifications x
        WHERE x.finished_at < cutoff AND x.status IN ('sent', 'partially_sent', 'failed', 'cancelled')
    )
    SELECT count(*),
           (SELECT count(*) FROM pgrelay_notifier.attempts a WHERE a.notification_id IN (SELECT * FROM old)),
           (SELECT count(*) FROM pgrelay_notifier.attempt_traces t
            JOIN pgrelay_notifier.attempts a USING (attempt_id)
            WHERE a.notification_id IN (SELECT * FROM old) OR t.recorded_at < cutoff)
    INTO notifications, attempts, traces
    FROM old;
    DELETE FROM pgrelay_notifier.attempt_traces t WHERE t.recorded_at < cutoff;
    DELETE FROM pgrelay_notifier.notifications x
    WHERE x.finished_at < cutoff AND x.status IN ('sent', 'partially_sent', 'failed', 'cancelled');
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.purge(interval) IS
    'Deletes notifications finished more than older_than ago (with attempts and traces) and older traces';
