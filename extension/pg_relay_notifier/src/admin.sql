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

-- pgrelay_notifier.requeue_failed()
CREATE OR REPLACE FUNCTION pgrelay_notifier.requeue_failed(channel text, finished_after timestamptz DEFAULT NULL,
                                                           finished_before timestamptz DEFAULT NULL,
                                                           error_like text DEFAULT NULL,
                                                           run_at timestamptz DEFAULT NULL,
                                                           all_channels boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: requeue() for a set: every failed or partially sent notification of a channel (of
 * every channel only with all_channels => true) that finished in [finished_after,
 * finished_before) and whose last error matches error_like (LIKE). A NULL channel is an error:
 * a name a script got wrong must never turn into every channel; so is a channel that neither
 * exists nor has notifications. Notifications whose channel is gone are left as they are.
 * Returns: how many were queued again.
 */
DECLARE
    id bigint;
    n bigint := 0;
BEGIN
    IF requeue_failed.all_channels IS NULL THEN
        RAISE EXCEPTION 'all_channels must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    ELSIF requeue_failed.all_channels AND requeue_failed.channel IS NOT NULL THEN
        RAISE EXCEPTION 'requeue_failed(): give a channel or all_channels => true, not both'
            USING ERRCODE = 'invalid_parameter_value';
    ELSIF NOT requeue_failed.all_channels AND requeue_failed.channel IS NULL THEN
        RAISE EXCEPTION 'requeue_failed(): channel must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'requeue(<notification id>) queues one notification again; requeue_failed(NULL, all_channels => true) those of every channel.';
    ELSIF NOT requeue_failed.all_channels
          AND NOT EXISTS (SELECT 1 FROM pgrelay_notifier.channels c WHERE c.channel = requeue_failed.channel)
          AND NOT EXISTS (SELECT 1 FROM pgrelay_notifier.notifications x WHERE x.channel = requeue_failed.channel) THEN
        RAISE EXCEPTION 'channel "%" does not exist', pgrelay_notifier._show(requeue_failed.channel)
            USING ERRCODE = 'undefined_object',
                  HINT = CASE WHEN requeue_failed.channel ~ '^\s*[0-9]+\s*$'
                              THEN format('To queue the notification %s again, pass its id as a number: requeue(%s).',
                                          btrim(requeue_failed.channel), btrim(requeue_failed.channel))
                              ELSE 'pgrelay_notifier.recent_failures lists failed notifications and their channels.' END;
    END IF;
    IF requeue_failed.run_at IS NOT NULL AND NOT isfinite(requeue_failed.run_at) THEN
        RAISE EXCEPTION 'run_at must be a finite time, not %', requeue_failed.run_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR id IN SELECT x.notification_id FROM pgrelay_notifier.notifications x
              WHERE x.status IN ('failed', 'partially_sent')
                AND (requeue_failed.channel IS NULL OR x.channel = requeue_failed.channel)
                AND (finished_after IS NULL OR x.finished_at >= finished_after)
                AND (finished_before IS NULL OR x.finished_at < finished_before)
                AND (error_like IS NULL OR x.last_error LIKE error_like)
                AND EXISTS (SELECT 1 FROM pgrelay_notifier.channels c WHERE c.channel = x.channel)
              ORDER BY x.notification_id LOOP
        PERFORM pgrelay_notifier.requeue(id, requeue_failed.run_at);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.requeue_failed(text, timestamptz, timestamptz, text, timestamptz, boolean) IS
    'Queues again the failed and partially sent notifications of a channel (every channel: all_channels => true) that finished in a time range with an error matching a LIKE pattern; returns how many';

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
    -- timestamp (pg_relay's purge_log() draws the same bounds). The bound is on the cut-off, the
    -- time it makes: '2 months -59 days' compares as positive and may be no time before now.
    BEGIN
        cutoff := now() - older_than;
    EXCEPTION WHEN datetime_field_overflow THEN
        cutoff := NULL;
    END;
    IF cutoff IS NULL OR cutoff >= now() OR cutoff < now() - interval '1000 years' THEN
        RAISE EXCEPTION 'older_than must be a positive interval of at most 1000 years, not %',
                        COALESCE(older_than::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
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
