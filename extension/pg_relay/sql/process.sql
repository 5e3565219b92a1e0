-- process_one(), the three steps _queue_claim / _write_log / _queue_mark_done, retries, backoff
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
SET timezone = 'UTC';
CREATE TABLE regress_calls (payload text, at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION regress_work(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO regress_calls (payload) VALUES (payload);
    CASE payload
        WHEN 'permanent' THEN RAISE EXCEPTION 'bad payload';
        WHEN 'deadlock' THEN RAISE EXCEPTION 'simulated deadlock' USING ERRCODE = 'deadlock_detected';
        WHEN 'ask retry' THEN RAISE EXCEPTION 'try me later' USING ERRCODE = 'PGRTY';
        WHEN 'slow' THEN PERFORM pg_sleep(5);
        WHEN 'assert' THEN ASSERT false, 'assertion in handler';
        ELSE NULL;
    END CASE;
END
$$;
-- retry_policy strict: only errors that can pass by themselves are retried (the default, all, is
-- tested further down)
SELECT channel, retry_policy FROM pgrelay.register('p_work', 'sql', handler => 'regress_work(text)',
                                     max_attempts => 3, backoff_base => '10 seconds', backoff_max => '15 seconds',
                                     retry_policy => 'strict');

-- _backoff: exponential from base, capped, scaled by 0.5 + jitter / 2
SELECT a, pgrelay._backoff(a, '10 seconds', '1 hour', 1) AS full_delay,
       pgrelay._backoff(a, '10 seconds', '1 hour', 0) AS half_delay
FROM unnest(ARRAY[1, 2, 3, 5, 9, 10, 1000]) a;
SELECT pgrelay._backoff(3, '10 seconds', '1 hour') BETWEEN '20 seconds' AND '40 seconds' AS random_jitter_in_range;

-- _classify_error under both policies, and error_kind for people reading the log
SELECT s, pgrelay._classify_error(s) AS policy_all, pgrelay._classify_error(s, 'strict') AS policy_strict,
       pgrelay.error_kind(s)
FROM unnest(ARRAY['40001', '40P01', '55P03', '57014', '08006', '53200', 'PGRTY', 'PGSTP', 'P0001', '23505',
                  '22P02', '42883', '42501', 'F0000', 'XX000']) s;

-- success: the handler ran once, one log row, the queue is empty
SELECT pgrelay.notify('p_work', 'fine') AS id \gset
SELECT outcome, log_id > 0 AS logged, retry_id, error FROM pgrelay.process_one(:id);
SELECT payload FROM regress_calls;
SELECT queue_id = :id AS same_queue_id, event_id = :id AS same_event, channel, payload, attempt,
       outcome, error, sqlstate, node_id, started_at <= finished_at AS timed, retry_at
FROM pgrelay.log WHERE event_id = :id;
SELECT count(*) FROM pgrelay.queue;

-- skipped: an id that does not exist, an event not yet due, an inactive channel
SELECT outcome FROM pgrelay.process_one(-1);
SELECT outcome FROM pgrelay.process_one(NULL);
SELECT pgrelay.notify('p_work', 'later', now() + interval '1 hour') AS later \gset
SELECT outcome FROM pgrelay.process_one(:later);
SELECT pgrelay.notify('p_work', 'paused channel') AS inactive \gset
SELECT active FROM pgrelay.register('p_work', active => false);
SELECT outcome FROM pgrelay.process_one(:inactive);
SELECT active FROM pgrelay.register('p_work', active => true);
DELETE FROM pgrelay.queue;
SELECT count(*) AS calls_so_far FROM regress_calls;

-- a permanent error: failed at once, in pgrelay.failed
SELECT pgrelay.notify('p_work', 'permanent') AS id \gset
SELECT outcome, retry_id, error FROM pgrelay.process_one(:id);
SELECT attempt, outcome, error, sqlstate FROM pgrelay.log WHERE event_id = :id;
SELECT event_id = :id AS same_event, channel, payload, attempts, error, sqlstate FROM pgrelay.failed;
SELECT count(*) FROM pgrelay.queue;

-- an ASSERT in the handler is a permanent error too
SELECT pgrelay.notify('p_work', 'assert') AS id \gset
SELECT outcome, error FROM pgrelay.process_one(:id);

-- a transient error: a retry row with attempt + 1, the same event id, run_at after the backoff
-- (t0: a time before the attempt; the backoff of 5 to 10 s starts when the attempt ends)
SELECT pgrelay.notify('p_work', 'deadlock') AS id, clock_timestamp() AS t0 \gset
SELECT outcome, retry_id > 0 AS has_retry, error FROM pgrelay.process_one(:id);
SELECT id <> :id AS new_row, event_id = :id AS same_event, attempt, last_error,
       run_at BETWEEN :'t0'::timestamptz + interval '5 seconds' AND clock_timestamp() + interval '10 seconds' AS backoff_1
FROM pgrelay.queue;
SELECT l.outcome, l.retry_at = q.run_at AS logged_retry_at FROM pgrelay.log l, pgrelay.queue q WHERE l.event_id = :id;
-- not due yet: skipped
SELECT outcome FROM pgrelay.process_one((SELECT id FROM pgrelay.queue));
-- make it due; attempt 2 retries again with a longer (capped) backoff; attempt 3 is the last
UPDATE pgrelay.queue SET run_at = now();
SELECT outcome FROM pgrelay.process_one((SELECT id FROM pgrelay.queue));
SELECT attempt, run_at BETWEEN now() + interval '7.5 seconds' AND clock_timestamp() + interval '15 seconds' AS backoff_2_capped
FROM pgrelay.queue;
UPDATE pgrelay.queue SET run_at = now();
SELECT outcome, retry_id FROM pgrelay.process_one((SELECT id FROM pgrelay.queue));
SELECT attempt, outcome, sqlstate FROM pgrelay.log WHERE event_id = :id ORDER BY attempt;
SELECT attempts, error FROM pgrelay.failed WHERE event_id = :id;
SELECT count(*) FROM pgrelay.queue;

-- a handler may ask for a retry with SQLSTATE PGRTY
SELECT pgrelay.notify('p_work', 'ask retry') AS id \gset
SELECT outcome, error FROM pgrelay.process_one(:id);
DELETE FROM pgrelay.queue;

-- retry_policy all (the default): any error is retried until max_attempts, so a bug fixed and
-- redeployed meanwhile lets queued events through; SQLSTATE PGSTP stops at once
SELECT retry_policy FROM pgrelay.register('p_work', retry_policy => 'all');
SELECT pgrelay.notify('p_work', 'permanent') AS id \gset
SELECT outcome, retry_id > 0 AS has_retry, error, sqlstate, retry_at > now() AS retry_at_later
FROM pgrelay.process_one(:id);
UPDATE pgrelay.queue SET run_at = now();
SELECT outcome FROM pgrelay.process_one((SELECT id FROM pgrelay.queue));
UPDATE pgrelay.queue SET run_at = now();
SELECT outcome FROM pgrelay.process_one((SELECT id FROM pgrelay.queue));
SELECT attempt, outcome, sqlstate FROM pgrelay.log WHERE event_id = :id ORDER BY attempt;
SELECT attempts, sqlstate, error_kind FROM pgrelay.failed WHERE event_id = :id;
CREATE FUNCTION regress_stop(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'not worth retrying: %', payload USING ERRCODE = 'PGSTP';
END
$$;
SELECT channel FROM pgrelay.register('p_stop', 'sql', handler => 'regress_stop(text)', max_attempts => 5);
SELECT pgrelay.notify('p_stop', 'x') AS id \gset
SELECT outcome, retry_id, error FROM pgrelay.process_one(:id);
SELECT attempts, sqlstate, error_kind FROM pgrelay.failed WHERE event_id = :id;
SELECT retry_policy FROM pgrelay.register('p_work', retry_policy => 'strict');
-- an unknown policy (error)
SELECT pgrelay.register('p_work', retry_policy => 'sometimes');
DELETE FROM pgrelay.failed_events;

-- timeout: statement_timeout cancels the handler; the attempt is logged as a timeout and retried;
-- the session stays usable
SELECT pgrelay.notify('p_work', 'slow') AS id \gset
SET statement_timeout = '300ms';
SELECT outcome, retry_id > 0 AS has_retry, error FROM pgrelay.process_one(:id);
RESET statement_timeout;
SELECT outcome, sqlstate FROM pgrelay.log WHERE event_id = :id;
SELECT attempt FROM pgrelay.queue WHERE event_id = :id;
SELECT 1 AS still_usable;
DELETE FROM pgrelay.queue;

-- a cancel before the channel's timeout ran out (the Processor's shutdown, an admin) is not the
-- handler's failure: the statement fails, the event stays queued with its attempt unspent, no log row
CREATE FUNCTION regress_cancelled(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_cancel_backend(pg_backend_pid());
    PERFORM pg_sleep(5);
END
$$;
SELECT channel FROM pgrelay.register('p_cancelled', 'sql', handler => 'regress_cancelled(text)');
SELECT pgrelay.notify('p_cancelled', 'x') AS id \gset
SET statement_timeout = '30s';
SELECT outcome FROM pgrelay.process_one(:id);
RESET statement_timeout;
SELECT id = :id AS same_row, attempt FROM pgrelay.queue WHERE channel = 'p_cancelled';
SELECT count(*) AS log_rows FROM pgrelay.log WHERE event_id = :id;
DELETE FROM pgrelay.queue;

-- a handler dropped after registration: a clear error on the event (retried: it may be created
-- again), not a stuck row
CREATE FUNCTION regress_doomed(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;
SELECT channel FROM pgrelay.register('p_doomed', 'sql', handler => 'regress_doomed(text)');
SELECT pgrelay.notify('p_doomed', 'x') AS id \gset
DROP FUNCTION regress_doomed(text);
SELECT outcome, error FROM pgrelay.process_one(:id);
SELECT sqlstate FROM pgrelay.log WHERE event_id = :id;
DELETE FROM pgrelay.queue WHERE channel = 'p_doomed';

-- process_one() runs sql actions only (error)
SELECT channel FROM pgrelay.register('p_mail', 'notify');
SELECT pgrelay.notify('p_mail', '42') AS mail \gset
SELECT regress_error(format('SELECT pgrelay.process_one(%s)', :mail));

-- the three steps one by one, as the Processor runs them for notify events
BEGIN;
SELECT queue_id = :mail AS claimed, channel, action_type, payload, attempt, max_attempts, timeout_ms, handler
FROM pgrelay._queue_claim(:mail);
-- claiming again in the same transaction still works (our own lock)
SELECT count(*) FROM pgrelay._queue_claim(:mail);
-- mark_done before the log row (error)
SELECT regress_error(format('SELECT pgrelay._queue_mark_done(%s)', :mail));
-- an unknown result, a time that is not finite (error)
SELECT regress_error(format('SELECT pgrelay._write_log(%s, %L)', :mail, 'great'));
SELECT regress_error(format('SELECT pgrelay._write_log(%s, %L, retry_at => %L)', :mail, 'transient', 'infinity'));
SELECT regress_error(format('SELECT pgrelay._write_log(%s, %L, retry_at => %L)', :mail, 'transient', '-infinity'));
SELECT regress_error(format('SELECT pgrelay._write_log(%s, %L, started_at => %L)', :mail, 'ok', 'infinity'));
SELECT outcome, next_run_at FROM pgrelay._write_log(:mail, 'ok', detail => '{"reply": "250 ok"}');
-- a second log row for the same attempt (error)
SELECT regress_error(format('SELECT pgrelay._write_log(%s, %L)', :mail, 'ok'));
SELECT pgrelay._queue_mark_done(:mail) AS retry_id;
COMMIT;
SELECT outcome, detail FROM pgrelay.log WHERE queue_id = :mail;
SELECT count(*) FROM pgrelay.queue WHERE id = :mail;
-- finishing a row that is gone (error)
SELECT regress_error(format('SELECT pgrelay._write_log(%s, %L)', :mail, 'ok'));
SELECT regress_error(format('SELECT pgrelay._queue_mark_done(%s)', :mail));

-- a provider's Retry-After wins over the backoff; partial and cancelled finish the event
SELECT pgrelay.notify('p_mail', '43') AS mail \gset
BEGIN;
SELECT count(*) FROM pgrelay._queue_claim(:mail);
SELECT outcome, next_run_at = '2030-01-01 00:00:00+00' AS retry_after_used
FROM pgrelay._write_log(:mail, 'transient', error => '429 Too Many Requests', retry_at => '2030-01-01 00:00:00+00');
SELECT pgrelay._queue_mark_done(:mail) > 0 AS has_retry;
COMMIT;
SELECT attempt, run_at, last_error FROM pgrelay.queue WHERE channel = 'p_mail';
UPDATE pgrelay.queue SET run_at = now() WHERE channel = 'p_mail';
BEGIN;
SELECT count(*) FROM pgrelay._queue_claim((SELECT id FROM pgrelay.queue WHERE channel = 'p_mail'));
SELECT outcome FROM pgrelay._write_log((SELECT id FROM pgrelay.queue WHERE channel = 'p_mail'), 'partial');
SELECT pgrelay._queue_mark_done((SELECT id FROM pgrelay.queue WHERE channel = 'p_mail')) AS retry_id;
COMMIT;
SELECT pgrelay.notify('p_mail', '44') AS mail \gset
BEGIN;
SELECT outcome FROM pgrelay._write_log(:mail, 'cancelled');
SELECT pgrelay._queue_mark_done(:mail) AS retry_id;
COMMIT;
SELECT count(*) FROM pgrelay.queue;

-- _finish_held: the log row and the finish in one call on the claimed row, as the Processor runs it
SELECT pgrelay.notify('p_mail', '46') AS mail \gset
BEGIN;
SELECT count(*) FROM pgrelay._queue_claim(:mail);
-- an unknown result, a time that is not finite (error): nothing is finished
SELECT regress_error(format('SELECT pgrelay._finish_held(%s, %L)', :mail, 'great'));
SELECT regress_error(format('SELECT pgrelay._finish_held(%s, NULL)', :mail));
SELECT regress_error(format('SELECT pgrelay._finish_held(%s, %L, retry_at => %L)', :mail, 'transient', 'infinity'));
SELECT regress_error(format('SELECT pgrelay._finish_held(%s, %L, started_at => %L)', :mail, 'ok', '-infinity'));
SELECT count(*) AS still_queued, (SELECT count(*) FROM pgrelay.log WHERE queue_id = :mail) AS logged
FROM pgrelay.queue WHERE id = :mail;
SELECT log_id IS NOT NULL AS has_log_id, outcome, retry_id, retry_at
FROM pgrelay._finish_held(:mail, 'ok', started_at => '2020-01-01 00:00:00+00', detail => '{"reply": "250 ok"}');
-- the row is finished: finishing it again finds none (error)
SELECT regress_error(format('SELECT pgrelay._finish_held(%s, %L)', :mail, 'ok'));
COMMIT;
SELECT outcome, detail, started_at = '2020-01-01 00:00:00+00' AS started_as_given, attempt FROM pgrelay.log
WHERE queue_id = :mail;
SELECT count(*) FROM pgrelay.queue WHERE id = :mail;
-- a retry: the next attempt queued at the provider's Retry-After, its id returned
SELECT pgrelay.notify('p_mail', '47') AS mail \gset
BEGIN;
SELECT count(*) FROM pgrelay._queue_claim(:mail);
SELECT outcome, retry_at, retry_id AS retry
FROM pgrelay._finish_held(:mail, 'transient', '429 Too Many Requests', retry_at => '2030-01-01 00:00:00+00') \gset
COMMIT;
SELECT :'outcome' AS outcome, :'retry_at'::timestamptz = '2030-01-01 00:00:00+00' AS retry_after_used;
SELECT id = :retry AS is_the_retry, attempt, run_at, last_error FROM pgrelay.queue WHERE channel = 'p_mail';
SELECT outcome, error, retry_at FROM pgrelay.log WHERE queue_id = :mail;
-- a permanent failure: recorded in failed_events, nothing queued
UPDATE pgrelay.queue SET run_at = now() WHERE id = :retry;
BEGIN;
SELECT count(*) FROM pgrelay._queue_claim(:retry);
SELECT outcome, retry_id, retry_at FROM pgrelay._finish_held(:retry, 'permanent', '550 5.1.1 no such user');
COMMIT;
SELECT f.attempts, f.error, f.log_id = l.id AS its_log_row FROM pgrelay.failed_events f
JOIN pgrelay.log l ON l.event_id = f.event_id AND l.queue_id = :retry;
DELETE FROM pgrelay.failed_events WHERE event_id = (SELECT event_id FROM pgrelay.log WHERE queue_id = :retry);
-- a gone_status is for a webhook channel only (error): nothing of the finish stays
SELECT pgrelay.notify('p_mail', '48') AS mail \gset
SELECT regress_error(format('SELECT pgrelay._finish_held(%s, %L, gone_status => 410)', :mail, 'permanent'));
SELECT count(*) AS still_queued, (SELECT count(*) FROM pgrelay.log WHERE queue_id = :mail) AS logged
FROM pgrelay.queue WHERE id = :mail;
DELETE FROM pgrelay.queue WHERE id = :mail;
SELECT regress_error('SELECT pgrelay._finish_held(NULL, ''ok'')');

-- _check_result: every result of an attempt passes; anything else is refused (error)
SELECT pgrelay._check_result(r) FROM unnest('{ok,partial,transient,timeout,permanent,cancelled,error}'::text[]) r;
SELECT regress_error('SELECT pgrelay._check_result(''great'')');
SELECT regress_error('SELECT pgrelay._check_result(NULL)');
-- _take_claimed: the claimed row deleted and returned; a bad result deletes nothing (error); a row
-- that is gone (error)
SELECT pgrelay.notify('p_mail', '49') AS mail \gset
BEGIN;
SELECT count(*) FROM pgrelay._queue_claim(:mail);
SELECT regress_error(format('SELECT pgrelay._take_claimed(%s, %L)', :mail, 'great'));
SELECT (pgrelay._take_claimed(:mail, 'ok')).payload;
SELECT count(*) AS still_queued FROM pgrelay.queue WHERE id = :mail;
SELECT regress_error(format('SELECT pgrelay._take_claimed(%s, %L)', :mail, 'ok'));
ROLLBACK;
DELETE FROM pgrelay.queue WHERE id = :mail;
-- a retry row's id is drawn in _finish_rows's statement: this node's, after its log row's
SELECT pgrelay.notify('p_mail', '50') AS mail \gset
BEGIN;
SELECT count(*) FROM pgrelay._queue_claim(:mail);
SELECT log_id, retry_id FROM pgrelay._finish_held(:mail, 'transient', 'try later') \gset
COMMIT;
SELECT :retry_id > :log_id AS after_its_log_row, (pgrelay.decode_id(:retry_id)).node_id = pgrelay._node_id() AS this_node,
       (SELECT count(*) FROM pgrelay.queue WHERE id = :retry_id) AS queued;
DELETE FROM pgrelay.queue WHERE id = :retry_id;

-- _queue_defer: a later run_at, no attempt spent, no log row
SELECT pgrelay.notify('p_mail', '45') AS mail \gset
BEGIN;
SELECT count(*) FROM pgrelay._queue_claim(:mail);
SELECT pgrelay._queue_defer(:mail, now() + interval '30 seconds');
COMMIT;
SELECT attempt, run_at > now() + interval '20 seconds' AS deferred FROM pgrelay.queue WHERE id = :mail;
SELECT count(*) FROM pgrelay.log WHERE queue_id = :mail;
SELECT pgrelay._queue_defer(:mail, NULL);
SELECT pgrelay._queue_defer(:mail, 'infinity');
SELECT pgrelay._queue_defer(:mail, '-infinity');
SELECT pgrelay._queue_defer(-1, now());
DELETE FROM pgrelay.queue;
DELETE FROM pgrelay.failed_events;

-- _complete: an ok attempt needs nothing of its channel; any other result reads it (its attempts,
-- retry policy and backoff), and says so when the channel is gone; a row it cannot take is named
SELECT pgrelay.notify('p_work', 'complete ok') AS ok_id \gset
SELECT pgrelay.notify('p_work', 'complete transient') AS tr_id \gset
UPDATE pgrelay.queue SET channel = 'p_gone' WHERE id IN (:ok_id, :tr_id);
BEGIN;
SELECT outcome, log_id IS NOT NULL AS logged, retry_id, retry_at FROM pgrelay._complete(:ok_id, 'ok');
SELECT regress_error(format('SELECT pgrelay._complete(%s, %L)', :tr_id, 'transient'));
COMMIT;
SELECT channel, outcome, attempt FROM pgrelay.log WHERE queue_id = :ok_id;
SELECT count(*) AS still_queued FROM pgrelay.queue WHERE id = :tr_id;
SELECT regress_error(format('SELECT pgrelay._complete(%s, %L)', :ok_id, 'ok'));
UPDATE pgrelay.queue SET channel = 'p_work' WHERE id = :tr_id;
SELECT outcome, retry_id IS NOT NULL AS has_retry, retry_at > now() AS later
FROM pgrelay._complete(:tr_id, 'error', 'boom', '40001');
DELETE FROM pgrelay.queue;

-- _log_row: the log row of an attempt, made from its queue row and not written (no node id yet)
SELECT pgrelay.notify('p_work', 'rows one') AS rw1 \gset
SELECT pgrelay.notify('p_work', 'rows two') AS rw2 \gset
SELECT (l).id, (l).queue_id = :rw1 AS of_row, (l).payload, (l).attempt, (l).outcome, (l).error, (l).sqlstate,
       (l).node_id, (l).started_at, (l).finished_at, (l).retry_at
FROM (SELECT pgrelay._log_row(q, 7, 'retry', 'again', '40001', NULL, '2030-01-01', '2030-01-02', '2030-01-03') l
      FROM pgrelay.queue q WHERE q.id = :rw1) x;
-- _attempt_row: the outcome resolved (an ok has no retry time whatever the caller's; a retry at the
-- caller's time, or after the channel's backoff; a permanent error fails), nothing written; times
-- that are not finite refused
SELECT (a).outcome, (a).retry_at, (a).started_at
FROM (SELECT pgrelay._attempt_row(q, 'ok', NULL, NULL, '2030-01-01', NULL, '2031-01-01') a
      FROM pgrelay.queue q WHERE q.id = :rw1) x;
SELECT (a).outcome, (a).retry_at, (a).error
FROM (SELECT pgrelay._attempt_row(q, 'transient', 'again', NULL, NULL, NULL, '2031-01-01') a
      FROM pgrelay.queue q WHERE q.id = :rw1) x;
SELECT (a).outcome, (a).retry_at - (a).finished_at BETWEEN '5 seconds' AND '10 seconds' AS backoff
FROM (SELECT pgrelay._attempt_row(q, 'error', 'deadlock', '40P01', NULL, NULL, NULL) a
      FROM pgrelay.queue q WHERE q.id = :rw1) x;
SELECT (a).outcome, (a).retry_at, (a).sqlstate
FROM (SELECT pgrelay._attempt_row(q, 'permanent', 'no', 'X0001', NULL, NULL, NULL) a
      FROM pgrelay.queue q WHERE q.id = :rw1) x;
SELECT regress_error(format('SELECT pgrelay._attempt_row(q, ''transient'', NULL, NULL, NULL, NULL, ''infinity'') FROM pgrelay.queue q WHERE q.id = %s', :rw1));
SELECT regress_error(format('SELECT pgrelay._attempt_row(q, ''ok'', NULL, NULL, ''-infinity'', NULL, NULL) FROM pgrelay.queue q WHERE q.id = %s', :rw1));
SELECT count(*) AS logged FROM pgrelay.log WHERE queue_id IN (:rw1, :rw2);
-- _finish_rows: write_log writes the log rows only (with this node's id); settle queues the next
-- row of a retry (attempt + 1, its error) and of a snooze (the same attempt, snoozes + 1, last_error
-- kept) and records a failure, without writing the log rows again; the ids of the rows queued, in
-- the order of the log rows (NULL when none)
CREATE TEMP TABLE regress_fin AS
SELECT q.id, q, CASE WHEN q.id = :rw1 THEN pgrelay._attempt_row(q, 'transient', 'again', NULL, NULL, NULL, '2031-01-01')
                     ELSE pgrelay._log_row(q, pgrelay._next_id(), 'snoozed', 'later', 'PGSNZ', NULL, now(), now(),
                                           '2031-02-01') END AS l
FROM pgrelay.queue q WHERE q.id IN (:rw1, :rw2);
UPDATE pgrelay.queue SET last_error = 'before' WHERE id = :rw2;
UPDATE regress_fin SET q = x FROM pgrelay.queue x WHERE x.id = regress_fin.id;
SELECT pgrelay._finish_rows(ARRAY(SELECT q FROM regress_fin ORDER BY id),
                            ARRAY(SELECT l FROM regress_fin ORDER BY id), true, false) AS queued;
SELECT payload, outcome, error, sqlstate, retry_at, node_id = pgrelay._node_id() AS this_node
FROM pgrelay.log WHERE queue_id IN (:rw1, :rw2) ORDER BY queue_id;
DELETE FROM pgrelay.queue WHERE id IN (:rw1, :rw2);
CREATE TEMP TABLE regress_next AS
SELECT n.ord, n.retry_id
FROM pg_catalog.unnest(pgrelay._finish_rows(ARRAY(SELECT q FROM regress_fin ORDER BY id),
                                            ARRAY(SELECT l FROM regress_fin ORDER BY id), false, true))
     WITH ORDINALITY n(retry_id, ord);
SELECT n.ord, x.payload, x.attempt, x.run_at, x.last_error, x.snoozes
FROM regress_next n JOIN pgrelay.queue x ON x.id = n.retry_id
ORDER BY n.ord;
SELECT count(*) AS log_rows FROM pgrelay.log WHERE queue_id IN (:rw1, :rw2);
-- a failed attempt: its failure recorded, and recorded again for the same event (updated)
UPDATE regress_fin SET l = pgrelay._log_row(q, pgrelay._next_id(), 'failed', 'gave up', 'X0001', NULL, now(), now(), NULL)
WHERE id = :rw1;
SELECT pgrelay._finish_rows(ARRAY(SELECT q FROM regress_fin WHERE id = :rw1),
                            ARRAY(SELECT l FROM regress_fin WHERE id = :rw1), false, true) AS queued;
UPDATE regress_fin SET l.error = 'gave up again' WHERE id = :rw1;
SELECT pgrelay._finish_rows(ARRAY(SELECT q FROM regress_fin WHERE id = :rw1),
                            ARRAY(SELECT l FROM regress_fin WHERE id = :rw1), false, true) AS queued;
SELECT payload, attempts, error, sqlstate, log_id = (SELECT (l).id FROM regress_fin WHERE id = :rw1) AS its_log_row
FROM pgrelay.failed_events WHERE event_id = (SELECT (q).event_id FROM regress_fin WHERE id = :rw1);
DROP TABLE regress_fin, regress_next;
DELETE FROM pgrelay.queue;
DELETE FROM pgrelay.failed_events;

-- _config_hint: what to fix after a configuration error, read from the catalog; its kind and a hint
-- that names the handler and the grant, or nothing for an error of another kind
CREATE ROLE regress_cfg_processor;
CREATE SCHEMA regress_cfg;
CREATE FUNCTION regress_cfg.h(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;
GRANT EXECUTE ON FUNCTION regress_cfg.h(text) TO pgrelay_processor;
GRANT USAGE ON SCHEMA regress_cfg TO pgrelay_processor;
SELECT channel FROM pgrelay.register('p_cfg', 'sql', handler => 'regress_cfg.h(text)');
-- the role may use the schema and run the handler: the error was the handler's own
SELECT * FROM pgrelay._config_hint('p_cfg', '42P01', current_user);
-- no USAGE on the schema, then no EXECUTE on the function
SELECT * FROM pgrelay._config_hint('p_cfg', '42501', 'regress_cfg_processor');
GRANT USAGE ON SCHEMA regress_cfg TO regress_cfg_processor;
REVOKE EXECUTE ON FUNCTION regress_cfg.h(text) FROM PUBLIC;
SELECT * FROM pgrelay._config_hint('p_cfg', '42501', 'regress_cfg_processor');
-- no longer SECURITY DEFINER, then gone, then its schema gone
ALTER FUNCTION regress_cfg.h(text) SECURITY INVOKER;
SELECT * FROM pgrelay._config_hint('p_cfg', '42501', current_user);
DROP FUNCTION regress_cfg.h(text);
SELECT * FROM pgrelay._config_hint('p_cfg', '42883', current_user);
DROP SCHEMA regress_cfg;
SELECT * FROM pgrelay._config_hint('p_cfg', '42883', current_user);
-- another kind of error, no SQLSTATE, a channel without a handler or none at all: nothing
SELECT * FROM pgrelay._config_hint('p_cfg', 'P0001', current_user);
SELECT * FROM pgrelay._config_hint('p_cfg', NULL, current_user);
SELECT * FROM pgrelay._config_hint('p_mail', '42501', current_user);
SELECT * FROM pgrelay._config_hint('no such channel', '42501', current_user);
SELECT pgrelay.unregister('p_cfg');
DROP ROLE regress_cfg_processor;
