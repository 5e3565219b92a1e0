-- get_status(), cancel(), requeue(), the views, purge()
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
SELECT name FROM pgrelay_notifier.create_profile('u_main', host => 'smtp.example.com', from_address => 'app@example.com',
                                                 debug => true);
SELECT name FROM pgrelay_notifier.create_profile('u_idle', transport => 'graph', tenant_id => 'contoso.com',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 'env:S', sender => 'a@contoso.com');
SELECT channel FROM pgrelay_notifier.create_channel('u_mail', 'u_main');
CREATE FUNCTION regress_send() RETURNS bigint LANGUAGE sql AS $$
    SELECT pgrelay_notifier.send('u_mail', ARRAY['Ann <ann@example.org>'], 'Hi', 'Hello', cc => ARRAY['bob@example.org'])
$$;

-- get_status: a queued notification
SELECT regress_send() AS n1 \gset
SELECT status, attempts, last_error, sent_at, recipients, channel, message_id LIKE '<' || :n1 || '.%' AS message_id,
       created_at IS NOT NULL AS created, last_attempt_at, next_attempt_at, cancelled_at
FROM pgrelay_notifier.get_status(:n1);
-- after attempts: per-recipient results, the last error, the next attempt
SELECT pgrelay_notifier.set_status(:'n1', '{"outcome": "retrying", "next_attempt_at": "2030-01-01T00:00:00Z",
    "recipients": [{"id": 1, "status": "sent", "code": 250, "reply": "250 ok"},
                   {"id": 2, "status": "retrying", "code": 452, "reply": "452 mailbox full"}]}');
SELECT status, attempts, last_error, sent_at, jsonb_pretty(recipients), next_attempt_at, last_attempt_at IS NOT NULL AS tried
FROM pgrelay_notifier.get_status(:n1);
SELECT pgrelay_notifier.set_status(:'n1', '{"outcome": "sent", "recipients": [{"id": 2, "status": "sent", "code": 250}]}');
SELECT status, attempts, last_error, sent_at IS NOT NULL AS sent, next_attempt_at FROM pgrelay_notifier.get_status(:n1);
-- unknown ids (error)
SELECT regress_error('SELECT pgrelay_notifier.get_status(1)');
SELECT pgrelay_notifier.get_status(NULL);

-- cancel: queued, retrying and failed notifications; cancelling twice is fine
SELECT regress_send() AS c1 \gset
SELECT regress_send() AS c2 \gset
SELECT regress_send() AS c3 \gset
SELECT pgrelay_notifier.set_status(:'c2', '{"outcome": "retrying", "error": "421 try later"}');
SELECT pgrelay_notifier.set_status(:'c3', '{"outcome": "failed", "error": "550 rejected"}');
SELECT pgrelay_notifier.cancel(:c1), pgrelay_notifier.cancel(:c2), pgrelay_notifier.cancel(:c3), pgrelay_notifier.cancel(:c1);
SELECT status, cancelled_at IS NOT NULL AS cancelled, next_attempt_at FROM pgrelay_notifier.get_status(:c2);
-- the queued event stays; the Processor skips it when fetch() says cancelled
SELECT count(*) FROM pgrelay.queue WHERE payload = :'c1';
-- a sent or partially sent notification cannot be cancelled; unknown ids (error)
SELECT regress_error(format('SELECT pgrelay_notifier.cancel(%s)', :n1));
SELECT regress_send() AS p1 \gset
SELECT pgrelay_notifier.set_status(:'p1', '{"outcome": "partially_sent",
    "recipients": [{"id": 1, "status": "sent"}, {"id": 2, "status": "failed", "reply": "550 no such user"}]}');
SELECT regress_error(format('SELECT pgrelay_notifier.cancel(%s)', :p1));
SELECT regress_error('SELECT pgrelay_notifier.cancel(1)');

-- requeue: a failed or partially sent notification gets another round for its unsent recipients
SELECT regress_send() AS f1 \gset
SELECT pgrelay_notifier.set_status(:'f1', '{"outcome": "failed", "error": "attempts exhausted",
    "recipients": [{"id": 1, "status": "failed"}, {"id": 2, "status": "failed"}]}');
SELECT count(*) AS events FROM pgrelay.queue WHERE payload = :'f1' \gset
SELECT pgrelay_notifier.requeue(:f1), pgrelay_notifier.requeue(:p1, run_at => now() + interval '1 hour');
SELECT count(*) - :events AS new_events FROM pgrelay.queue WHERE payload = :'f1';
SELECT count(*) AS later FROM pgrelay.queue WHERE payload = :'p1' AND run_at > now();
SELECT status, attempts, last_error, sent_at, recipients -> 0 ->> 'status' AS r1, recipients -> 1 ->> 'status' AS r2
FROM pgrelay_notifier.get_status(:f1);
SELECT status, sent_at, recipients -> 0 ->> 'status' AS r1, recipients -> 1 ->> 'status' AS r2
FROM pgrelay_notifier.get_status(:p1);
-- only failed or partially sent notifications; the channel must still exist (error)
SELECT regress_error(format('SELECT pgrelay_notifier.requeue(%s)', :f1));
SELECT regress_error(format('SELECT pgrelay_notifier.requeue(%s)', :n1));
SELECT regress_error(format('SELECT pgrelay_notifier.requeue(%s)', :c1));
SELECT regress_error('SELECT pgrelay_notifier.requeue(1)');

-- recent_failures: failed, partially sent and retrying notifications of the past 7 days
SELECT regress_send() AS r1 \gset
SELECT pgrelay_notifier.set_status(:'r1', '{"outcome": "retrying", "error": "421 4.3.2 shutting down"}');
SELECT regress_send() AS o1 \gset
SELECT pgrelay_notifier.set_status(:'o1', '{"outcome": "failed", "error": "too old to show"}');
UPDATE pgrelay_notifier.notifications SET last_attempt_at = now() - interval '8 days' WHERE notification_id = :o1;
SELECT status, channel, profile, attempts, last_error, failed_recipients, recipients, created_by = session_user AS mine
FROM pgrelay_notifier.recent_failures ORDER BY last_error;
-- profile_summary: per profile, notifications by status
SELECT profile, transport, debug, channels, queued, retrying, sent, partially_sent, failed, cancelled,
       last_sent_at IS NOT NULL AS has_sent, last_failure_at IS NOT NULL AS has_failed
FROM pgrelay_notifier.profile_summary ORDER BY profile;

-- purge: notifications finished before the cutoff go, with attempts and traces; open ones stay
SELECT pgrelay_notifier.set_status(:'r1', '{"outcome": "retrying", "trace": "S: 421 busy"}');
UPDATE pgrelay_notifier.attempt_traces SET recorded_at = now() - interval '40 days';
UPDATE pgrelay_notifier.notifications SET finished_at = now() - interval '40 days', created_at = now() - interval '41 days'
WHERE notification_id IN (:n1, :c1, :o1, :r1);
SELECT count(*) AS notifications FROM pgrelay_notifier.notifications \gset
SELECT * FROM pgrelay_notifier.purge('30 days');
SELECT count(*) - :notifications AS change FROM pgrelay_notifier.notifications;
SELECT notification_id = :r1 AS open_kept FROM pgrelay_notifier.notifications WHERE notification_id IN (:n1, :c1, :o1, :r1);
SELECT count(*) AS orphans FROM pgrelay_notifier.recipients r
WHERE NOT EXISTS (SELECT 1 FROM pgrelay_notifier.notifications n WHERE n.notification_id = r.notification_id);
SELECT * FROM pgrelay_notifier.purge('30 days');
-- a negative, zero, NULL or huge interval (error)
SELECT pgrelay_notifier.purge('-1 day');
SELECT pgrelay_notifier.purge(NULL);
SELECT pgrelay_notifier.purge('0');
SELECT pgrelay_notifier.purge('1001 years');
SELECT pgrelay_notifier.purge('1000000 years');
-- the bound is on the cut-off: '-10000 years 3600001 days' compares as 1 day and is a cut-off in
-- 2170, which would purge every finished notification (error)
SELECT pgrelay_notifier.purge('-10000 years 3600001 days');
SELECT count(*) > 0 AS kept FROM pgrelay_notifier.notifications;

-- a channel that is gone cannot be requeued to (error)
SELECT pgrelay_notifier.cancel(notification_id) FROM pgrelay_notifier.notifications WHERE status IN ('queued', 'retrying');
DELETE FROM pgrelay.queue;

-- requeue_failed: requeue() for every failed or partially sent notification a filter selects
SELECT clock_timestamp() AS t0 \gset
SELECT regress_send() AS s1 \gset
SELECT pgrelay_notifier.set_status(:'s1', '{"outcome": "failed", "error": "550 5.1.1 no such user"}');
SELECT regress_send() AS s2 \gset
SELECT pgrelay_notifier.set_status(:'s2', '{"outcome": "failed", "error": "535 5.7.8 authentication failed"}');
DELETE FROM pgrelay.queue;
SELECT pgrelay_notifier.requeue_failed('u_mail', :'t0', error_like => '535%') AS auth_failures;
SELECT pgrelay_notifier.requeue_failed('u_mail', :'t0', finished_before => :'t0') AS none_in_range;
SELECT pgrelay_notifier.requeue_failed('u_mail', error_like => 'nothing like it') AS no_match;
SELECT notification_id = :s2 AS is_s2, status FROM pgrelay_notifier.notifications
WHERE notification_id IN (:s1, :s2) ORDER BY notification_id;
SELECT count(*) AS new_events FROM pgrelay.queue WHERE payload IN (:'s1', :'s2');
-- run_at must be finite, even when nothing matches (error)
SELECT pgrelay_notifier.requeue_failed(NULL, run_at => 'infinity', all_channels => true);
-- every channel only when the call says so: a NULL channel, a channel that does not exist, an id
-- passed as a string, both a channel and all_channels, a NULL all_channels (error); nothing changed
SELECT regress_error('SELECT pgrelay_notifier.requeue_failed(NULL)');
SELECT regress_error('SELECT pgrelay_notifier.requeue_failed(NULL::text, run_at => now())');
SELECT regress_error('SELECT pgrelay_notifier.requeue_failed(''no_such_channel'')');
SELECT regress_error(format('SELECT pgrelay_notifier.requeue_failed(%L)', :'s1'));
SELECT regress_error('SELECT pgrelay_notifier.requeue_failed(''u_mail'', all_channels => true)');
SELECT regress_error('SELECT pgrelay_notifier.requeue_failed(''u_mail'', all_channels => NULL)');
SELECT count(*) AS still_failed FROM pgrelay_notifier.notifications WHERE notification_id = :s1 AND status = 'failed';
SELECT pgrelay_notifier.requeue_failed(NULL, :'t0', run_at => now() + interval '1 hour', all_channels => true) AS every_channel;
SELECT count(*) AS later FROM pgrelay.queue WHERE payload = :'s1' AND run_at > now();
SELECT pgrelay_notifier.cancel(:s1), pgrelay_notifier.cancel(:s2);
DELETE FROM pgrelay.queue;
SELECT regress_send() AS g1 \gset
SELECT pgrelay_notifier.set_status(:'g1', '{"outcome": "failed"}');
DELETE FROM pgrelay.queue;
SELECT pgrelay_notifier.drop_channel('u_mail');
SELECT regress_error(format('SELECT pgrelay_notifier.requeue(%s)', :g1));

DELETE FROM pgrelay_notifier.notifications;
SELECT pgrelay_notifier.drop_profile(name) FROM pgrelay_notifier.profiles ORDER BY name;
DROP FUNCTION regress_send();
