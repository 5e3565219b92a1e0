-- operator views and functions: queue_depth, failed, retry_failed, discard_failed, purge_log,
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
-- pause, resume, request_reload
SET timezone = 'UTC';
CREATE FUNCTION regress_fail(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
BEGIN
    IF payload LIKE 'bad%' THEN RAISE EXCEPTION 'cannot %', payload; END IF;
END
$$;
SELECT channel FROM pgrelay.register('a_one', 'sql', handler => 'regress_fail(text)', max_attempts => 1);
SELECT channel FROM pgrelay.register('a_two', 'sql', handler => 'regress_fail(text)', active => false);
DELETE FROM pgrelay.queue;

-- queue_depth: queued, due, retrying and the age of the oldest due event, per channel
BEGIN;
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, attempt, run_at) VALUES
    (0, 'a_one', 'sql', '1', 1, now() - interval '10 minutes'),
    (0, 'a_one', 'sql', '2', 2, now() - interval '1 minute'),
    (0, 'a_one', 'sql', '3', 1, now() + interval '1 hour'),
    (0, 'a_two', 'sql', '4', 1, now());
SELECT channel, action_type, active, queued, due, retrying, oldest_due_age,
       next_run_at - now() AS next_in
FROM pgrelay.queue_depth WHERE channel LIKE 'a_%' ORDER BY channel;
COMMIT;
DELETE FROM pgrelay.queue;

-- failed events are listed, can be re-queued with a fresh attempt budget, or discarded
SELECT pgrelay.notify('a_one', 'bad one') AS e1 \gset
SELECT pgrelay.notify('a_one', 'bad two') AS e2 \gset
SELECT outcome FROM pgrelay.process_one(:e1);
SELECT outcome FROM pgrelay.process_one(:e2);
SELECT payload, attempts, error FROM pgrelay.failed ORDER BY payload;
SELECT pgrelay.retry_failed(:e1) AS requeued \gset
SELECT id = :requeued AS new_row, event_id = :e1 AS same_event, attempt, payload FROM pgrelay.queue;
SELECT payload FROM pgrelay.failed;
-- it fails again and comes back to the list; its history stays linked by event_id
SELECT outcome FROM pgrelay.process_one(:requeued);
SELECT payload, attempts FROM pgrelay.failed ORDER BY payload;
SELECT count(*) AS log_rows_of_event FROM pgrelay.log WHERE event_id = :e1;
SELECT pgrelay.discard_failed(:e2);
SELECT payload FROM pgrelay.failed;
-- events that are not in the list (error)
SELECT regress_error(format('SELECT pgrelay.retry_failed(%s)', :e2));
SELECT regress_error(format('SELECT pgrelay.discard_failed(%s)', :e2));
-- an event whose channel is gone cannot be re-queued (error)
SELECT pgrelay.unregister('a_one');
SELECT regress_error(format('SELECT pgrelay.retry_failed(%s)', :e1));
SELECT count(*) FROM pgrelay.failed WHERE event_id = :e1;
SELECT channel FROM pgrelay.register('a_one', 'sql', handler => 'regress_fail(text)');
SELECT pgrelay.discard_failed(:e1);

-- retry_failed / discard_failed by filter: a channel (or all_channels => true), a time range, an
-- error pattern
SELECT channel FROM pgrelay.register('a_many', 'sql', handler => 'regress_fail(text)', max_attempts => 1);
SELECT count(pgrelay.process_one(pgrelay.notify('a_many', p))) AS failed_now
FROM unnest(ARRAY['bad timeout 1', 'bad timeout 2', 'bad disk']) p;
SELECT channel FROM pgrelay.register('a_other', 'sql', handler => 'regress_fail(text)', max_attempts => 1);
SELECT outcome FROM pgrelay.process_one(pgrelay.notify('a_other', 'bad other channel'));
SELECT channel, error FROM pgrelay.failed ORDER BY channel, error;
SELECT pgrelay.retry_failed('a_many', error_like => '%timeout%') AS requeued;
SELECT channel, payload, attempt FROM pgrelay.queue ORDER BY payload;
SELECT pgrelay.retry_failed('a_many', failed_after => now() + interval '1 hour') AS none_in_the_future;
-- every channel only when the call says so: a NULL channel (however typed), a channel that does
-- not exist, an event id passed as a string, a channel and all_channels, a NULL all_channels
-- (error); nothing is retried or discarded
SELECT regress_error('SELECT pgrelay.discard_failed(NULL)');
SELECT regress_error('SELECT pgrelay.retry_failed(NULL)');
SELECT regress_error('SELECT pgrelay.discard_failed(NULL::text, error_like => ''%'')');
SELECT regress_error('SELECT pgrelay.discard_failed(NULL::bigint)');
SELECT regress_error('SELECT pgrelay.retry_failed(NULL::bigint)');
SELECT regress_error('SELECT pgrelay.retry_failed(''a_nonesuch'')');
SELECT regress_error(format('SELECT pgrelay.retry_failed(%L)', (SELECT min(event_id) FROM pgrelay.failed)));
SELECT regress_error('SELECT pgrelay.discard_failed(''a_many'', all_channels => true)');
SELECT regress_error('SELECT pgrelay.discard_failed(''a_many'', all_channels => NULL)');
SELECT count(*) AS still_failed FROM pgrelay.failed WHERE channel IN ('a_many', 'a_other');
SELECT pgrelay.discard_failed(NULL, error_like => 'cannot bad disk', all_channels => true) AS discarded;
SELECT channel, error FROM pgrelay.failed ORDER BY channel, error;
SELECT pgrelay.discard_failed('a_other') AS discarded;
SELECT count(*) AS left_failed FROM pgrelay.failed WHERE channel IN ('a_other', 'a_many');
DELETE FROM pgrelay.queue;
SELECT pgrelay.unregister('a_many'), pgrelay.unregister('a_other');

-- purge_log: removes rows written before now - older_than, keeps the rest
INSERT INTO pgrelay.log (id, queue_id, event_id, channel, action_type, attempt, outcome, node_id,
                         started_at, finished_at)
SELECT pgrelay._id_floor(now() - interval '40 days') + n, n, 0, 'a_one', 'sql', 1, 'ok', 0, now(), now()
FROM generate_series(1, 5) n;
SELECT count(*) AS old_rows FROM pgrelay.log WHERE id < pgrelay._id_floor(now() - interval '30 days');
SELECT count(*) AS recent_rows FROM pgrelay.log WHERE id >= pgrelay._id_floor(now() - interval '30 days') \gset
SELECT pgrelay.purge_log('30 days');
SELECT count(*) = :recent_rows AS recent_kept FROM pgrelay.log;
SELECT pgrelay.purge_log('30 days');
-- a negative or NULL interval (error)
SELECT pgrelay.purge_log('-1 day');
SELECT pgrelay.purge_log(NULL);

-- pause / resume / request_reload as the probe reports them; pause() and resume() say whether they
-- changed anything (a second pause() keeps the first one's time)
SELECT pgrelay.pause() AS paused_it;
SELECT paused_at AS first_paused_at FROM pgrelay.control \gset
SELECT pgrelay.pause() AS paused_it;
SELECT paused, paused_at = :'first_paused_at' AS since_the_first FROM pgrelay.control;
SELECT paused FROM pgrelay.queue_probe();
SELECT pgrelay.resume() AS resumed_it;
SELECT pgrelay.resume() AS resumed_it;
SELECT paused, paused_at FROM pgrelay.control;
-- the same for one channel; an unknown one is an error whatever its state would be
SELECT channel FROM pgrelay.register('a_pause', 'notify');
SELECT pgrelay.pause('a_pause') AS paused_it, pgrelay.pause('a_pause') AS again;
SELECT pgrelay.resume('a_pause') AS resumed_it, pgrelay.resume('a_pause') AS again;
SELECT pgrelay.pause('a_nonesuch');
SELECT pgrelay.resume('a_nonesuch');
SELECT pgrelay.unregister('a_pause');
SELECT reload_generation AS gen FROM pgrelay.control \gset
SELECT pgrelay.request_reload() - :gen AS step;
SELECT reload_requested FROM pgrelay.queue_probe(:gen);
