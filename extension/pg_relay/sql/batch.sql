-- process_batch(): several sql events in one transaction, each handler in its own subtransaction;
-- _claim_events() and _complete_events(); the channel setting batch; _queue_fetch()
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
SET timezone = 'UTC';
DELETE FROM pgrelay.queue;
CREATE TABLE regress_batch_calls (n integer GENERATED ALWAYS AS IDENTITY, payload text, path text, work_mem text);
CREATE FUNCTION regress_batch_work(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO regress_batch_calls (payload, path, work_mem)
    VALUES (payload, current_setting('search_path'), current_setting('work_mem'));
    -- what a handler may do to the session: the next handler of the batch must not see it
    PERFORM set_config('work_mem', '77MB', false);
    CASE payload
        WHEN 'fail' THEN RAISE EXCEPTION 'bad payload %', payload;
        WHEN 'stop' THEN RAISE EXCEPTION 'not worth retrying' USING ERRCODE = 'PGSTP';
        WHEN 'slow' THEN PERFORM pg_sleep(0.3);
        WHEN 'hang' THEN PERFORM pg_sleep(30);
        WHEN 'cancel' THEN PERFORM pg_cancel_backend(pg_backend_pid()); PERFORM pg_sleep(5);
        ELSE NULL;
    END CASE;
END
$$;
-- the rows of a batch's result, with their payloads (from the log, or the queue when skipped)
CREATE FUNCTION regress_batch(ids bigint[]) RETURNS TABLE (payload text, outcome text, has_log boolean,
                                                          has_retry boolean, error text, sqlstate text)
LANGUAGE sql AS $$
    SELECT COALESCE(l.payload, q.payload, '(no such event)'), r.outcome, r.log_id IS NOT NULL,
           r.retry_id IS NOT NULL, r.error, r.sqlstate
    FROM pgrelay.process_batch(ids) WITH ORDINALITY r
    LEFT JOIN pgrelay.log l ON l.id = r.log_id
    LEFT JOIN pgrelay.queue q ON q.id = r.id
    ORDER BY r.ordinality
$$;

-- The channel setting batch: on for a sql channel unless asked otherwise; a notify channel never
-- batches (error)
SELECT channel, batch FROM pgrelay.register('b_work', 'sql', handler => 'regress_batch_work(text)',
                                            backoff_base => '1 hour', backoff_max => '1 hour');
SELECT channel, batch FROM pgrelay.register('b_alone', 'sql', handler => 'regress_batch_work(text)', batch => false);
SELECT batch FROM pgrelay.register('b_alone', max_attempts => 2);
SELECT channel, batch FROM pgrelay.register('b_mail', 'notify');
SELECT pgrelay.register('b_mail', batch => true);

-- _queue_fetch(): what queue_pending_ids() offers, in its order, whether each event may batch, and
-- the event each row is an attempt of (a first attempt's row has the event's id; w2 stands for a
-- retry of event 7 here)
SELECT pgrelay.notify('b_work', 'w1') AS w1, pgrelay.notify('b_alone', 'alone') AS alone,
       pgrelay.notify('b_mail', '42') AS mail, pgrelay.notify('b_work', 'w2') AS w2 \gset
UPDATE pgrelay.queue SET event_id = 7 WHERE id = :w2;
SELECT q.payload, f.action_type, f.channel, f.timeout_ms, f.attempt, f.batch,
       CASE WHEN f.event_id = f.id THEN 'its own' ELSE f.event_id::text END AS event_id
FROM pgrelay._queue_fetch(100) f JOIN pgrelay.queue q USING (id);
UPDATE pgrelay.queue SET event_id = id WHERE id = :w2;
SELECT count(*) FROM pgrelay._queue_fetch(2);
SELECT * FROM pgrelay._queue_fetch(0);

-- Success: one row per id, in the order given, one log row per event; the handlers ran in that
-- order, each in a session as clean as the first (work_mem and search_path as they were)
SHOW work_mem;
SELECT * FROM regress_batch(ARRAY[:w2, :w1]);
SELECT payload, path, work_mem FROM regress_batch_calls ORDER BY n;
SELECT count(*) AS log_rows FROM pgrelay.log WHERE event_id IN (:w1, :w2);
SHOW work_mem;
SELECT current_setting('search_path') AS search_path;
-- an event that batching is off for still runs when given (process_batch does what it is asked)
SELECT * FROM regress_batch(ARRAY[:alone]);
-- a notify event is not a sql action (error)
SELECT regress_error(format('SELECT pgrelay.process_batch(ARRAY[%s])', :mail));
DELETE FROM pgrelay.queue;
DELETE FROM regress_batch_calls;

-- A failing handler fails only its own event: retried (its own retry row) or, with SQLSTATE
-- PGSTP, failed at once; the other events are done
SELECT pgrelay.notify('b_work', 'ok 1') AS a, pgrelay.notify('b_work', 'fail') AS b,
       pgrelay.notify('b_work', 'stop') AS c, pgrelay.notify('b_work', 'ok 2') AS d \gset
SELECT * FROM regress_batch(ARRAY[:a, :b, :c, :d]);
SELECT payload, attempt, last_error, run_at > now() + interval '20 minutes' AS backoff FROM pgrelay.queue;
SELECT l.payload, l.outcome, l.retry_at = q.run_at AS logged_retry_at
FROM pgrelay.log l LEFT JOIN pgrelay.queue q ON q.event_id = l.event_id
WHERE l.event_id IN (:a, :b, :c, :d) ORDER BY l.id;
SELECT payload, attempts, sqlstate, error_kind FROM pgrelay.failed;
SELECT payload FROM regress_batch_calls ORDER BY n;
DELETE FROM pgrelay.queue;
DELETE FROM pgrelay.failed_events;
DELETE FROM regress_batch_calls;

-- Skipped, and left as they were: an id that is not queued, an event not yet due, an event of a
-- paused channel; an id given twice runs once; no ids, no rows
SELECT pgrelay.notify('b_work', 'due') AS due, pgrelay.notify('b_work', 'later', now() + interval '1 hour') AS later,
       pgrelay.notify('b_alone', 'paused channel') AS held \gset
SELECT pgrelay.pause('b_alone');
SELECT * FROM regress_batch(ARRAY[-1, :due, :later, :held, :due]);
SELECT pgrelay.resume('b_alone');
SELECT payload FROM regress_batch_calls;
SELECT count(*) FROM pgrelay.process_batch('{}');
SELECT count(*) FROM pgrelay.process_batch(NULL);
-- ids of more than one dimension, or not counted from 1, are taken in their order
SELECT pgrelay.notify('b_work', 'two dimensions') AS flat \gset
SELECT id = :flat AS queued, outcome FROM pgrelay.process_batch(ARRAY[[-1, :flat]]);
SELECT pgrelay.notify('b_work', 'from zero') AS zero \gset
SELECT id = :zero AS queued, outcome FROM pgrelay.process_batch(('[0:1]={' || :zero || ',-1}')::bigint[]);
-- dispatch paused: nothing is claimed
SELECT pgrelay.pause();
SELECT * FROM regress_batch(ARRAY[:held]);
SELECT pgrelay.resume();
DELETE FROM pgrelay.queue;
DELETE FROM regress_batch_calls;

-- The gate closing during a batch (here a handler pauses its own channel, as an admin would from
-- another session): the events it has not started yet stay queued
CREATE FUNCTION regress_batch_pauser(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO regress_batch_calls (payload) VALUES (payload);
    IF payload = 'pause' THEN
        PERFORM pgrelay.pause('b_gate');
        PERFORM pg_sleep(0.02);  -- longer than the batch goes without asking the gate again
    END IF;
END
$$;
SELECT channel FROM pgrelay.register('b_gate', 'sql', handler => 'regress_batch_pauser(text)');
SELECT pgrelay.notify('b_gate', 'pause') AS g1, pgrelay.notify('b_gate', 'not started') AS g2,
       pgrelay.notify('b_work', 'other channel') AS g3 \gset
SELECT * FROM regress_batch(ARRAY[:g1, :g2, :g3]);
SELECT payload FROM regress_batch_calls ORDER BY n;
SELECT pgrelay.resume('b_gate');
SELECT * FROM regress_batch(ARRAY[:g2]);
DELETE FROM pgrelay.queue;
DELETE FROM regress_batch_calls;

-- The batch is one transaction: rolled back, none of its events is finished and no handler's
-- work stays; they are all offered again
SELECT pgrelay.notify('b_work', 'x1') AS x1, pgrelay.notify('b_work', 'x2') AS x2 \gset
BEGIN;
SELECT count(*) FROM pgrelay.process_batch(ARRAY[:x1, :x2]);
ROLLBACK;
SELECT payload, attempt FROM pgrelay.queue ORDER BY id;
SELECT count(*) AS log_rows, (SELECT count(*) FROM regress_batch_calls) AS calls
FROM pgrelay.log WHERE event_id IN (:x1, :x2);
-- A cancel that is not the statement's timeout (the Processor stopping, an admin) is not an
-- attempt: the statement fails, and every event of the batch stays queued as it was (error)
SELECT pgrelay.notify('b_work', 'cancel') AS x3 \gset
SET statement_timeout = '60s';
SELECT * FROM regress_batch(ARRAY[:x1, :x3, :x2]);
RESET statement_timeout;
SELECT payload, attempt FROM pgrelay.queue ORDER BY id;
SELECT count(*) AS log_rows, (SELECT count(*) FROM regress_batch_calls) AS calls
FROM pgrelay.log WHERE event_id IN (:x1, :x2, :x3);
DELETE FROM pgrelay.queue;

-- Timeouts. A handler that returns after running longer than its channel's timeout is undone and
-- logged as a timeout (retried); the next event runs
SELECT timeout FROM pgrelay.register('b_work', timeout => '200 ms');
SELECT pgrelay.notify('b_work', 'slow') AS s1, pgrelay.notify('b_work', 'quick') AS s2 \gset
SELECT * FROM regress_batch(ARRAY[:s1, :s2]);
SELECT payload FROM regress_batch_calls ORDER BY n;
DELETE FROM pgrelay.queue;
DELETE FROM regress_batch_calls;
-- A handler that does not return is ended by the statement's timeout, which it cannot reach
-- before its own has passed: logged as a timeout; the timer is spent, so the events after it
-- are not started (skipped, still queued); the session stays usable
SELECT pgrelay.notify('b_work', 'quick') AS h1, pgrelay.notify('b_work', 'hang') AS h2,
       pgrelay.notify('b_work', 'after') AS h3 \gset
SET statement_timeout = '1s';
SELECT * FROM regress_batch(ARRAY[:h1, :h2, :h3]);
RESET statement_timeout;
SELECT payload, attempt FROM pgrelay.queue ORDER BY id;
SELECT 1 AS still_usable;
DELETE FROM pgrelay.queue;
DELETE FROM regress_batch_calls;
-- An event is started only while the statement has its channel's whole timeout left: with
-- statement_timeout no longer than the channel's, none is
SELECT pgrelay.notify('b_work', 'quick') AS t1 \gset
SET statement_timeout = '200ms';
SELECT * FROM regress_batch(ARRAY[:t1]);
RESET statement_timeout;
SELECT count(*) AS calls FROM regress_batch_calls;
SELECT timeout FROM pgrelay.register('b_work', timeout => '30 seconds');
DELETE FROM pgrelay.queue;

-- A channel that runs one event at a time: its events in one batch run one after the other, in
-- order, in the batch's transaction (which holds the channel until it ends)
SELECT channel FROM pgrelay.register('b_serial', 'sql', handler => 'regress_batch_work(text)',
                                     concurrency_mode => 'channel');
SELECT pgrelay.notify('b_serial', 'first') AS f1, pgrelay.notify('b_serial', 'second') AS f2 \gset
SELECT * FROM regress_batch(ARRAY[:f1, :f2]);
SELECT payload FROM regress_batch_calls ORDER BY n;
DELETE FROM regress_batch_calls;

-- A handler dropped, or made SECURITY INVOKER, after registration: an error of its own events
CREATE FUNCTION regress_batch_doomed(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE sql AS $$ SELECT $$;
SELECT channel FROM pgrelay.register('b_doomed', 'sql', handler => 'regress_batch_doomed(text)');
SELECT pgrelay.notify('b_doomed', 'doomed') AS d1, pgrelay.notify('b_work', 'fine') AS d2 \gset
DROP FUNCTION regress_batch_doomed(text);
SELECT * FROM regress_batch(ARRAY[:d1, :d2]);
ALTER FUNCTION regress_batch_work(text) SECURITY INVOKER;
SELECT pgrelay.notify('b_work', 'invoker') AS i1 \gset
SELECT * FROM regress_batch(ARRAY[:i1]);
ALTER FUNCTION regress_batch_work(text) SECURITY DEFINER;
SELECT count(*) AS ran FROM regress_batch_calls WHERE payload = 'invoker';
DELETE FROM pgrelay.queue;
DELETE FROM pgrelay.failed_events;

-- _claim_events() claims what can run now, in order; _complete_events() finishes claimed rows,
-- and refuses an unknown result or a row that is not there (error)
SELECT pgrelay.notify('b_work', 'c1') AS c1, pgrelay.notify('b_work', 'c2') AS c2 \gset
BEGIN;
SELECT ord, queue_id = ANY (ARRAY[:c1, :c2]) AS claimed, action_type, payload, timeout, call, refusal
FROM pgrelay._claim_events(ARRAY[:c2, -5, :c1]);
SELECT regress_error(format('SELECT pgrelay._complete_events(ARRAY[%s], ''{great}'', ''{NULL}'', ''{NULL}'', ARRAY[now()], ARRAY[now()])', :c1));
SELECT regress_error('SELECT pgrelay._complete_events(''{-5}'', ''{ok}'', ''{NULL}'', ''{NULL}'', ARRAY[now()], ARRAY[now()])');
SELECT outcome, retry_id IS NOT NULL AS has_retry FROM pgrelay._complete_events(ARRAY[:c1, :c2], '{ok,transient}', '{NULL,"try again"}',
                                                        '{NULL,NULL}', ARRAY[now(), now()], ARRAY[now(), now()]);
COMMIT;
SELECT payload, outcome, error FROM pgrelay.log WHERE event_id IN (:c1, :c2) ORDER BY id;
SELECT payload, attempt, last_error FROM pgrelay.queue;
DELETE FROM pgrelay.queue;

-- _claim_rows(), the claim _claim_events and _destination_claim_many share: the rows that can run
-- now, each with its place in ids (an id listed twice: its first place) and what either caller
-- needs; skipped rows (no such id, not yet due) stay as they were; a replayed row is deleted and
-- returned with the log row that recorded it, and takes no channel lock; a one-at-a-time
-- channel's row that is returned holds its channel until the transaction ends
SELECT pgrelay.notify('b_work', 'cr1', key => 'k1') AS cr1, pgrelay.notify('b_serial', 'cr2') AS cr2,
       pgrelay.notify('b_work', 'cr3') AS cr3, pgrelay.notify('b_mail', '7') AS cr4,
       pgrelay.notify('b_serial', 'cr5') AS cr5 \gset
UPDATE pgrelay.queue SET run_at = now() + interval '1 hour' WHERE id = :cr3;
UPDATE pgrelay.queue SET attempt = 2 WHERE id = :cr4;
INSERT INTO pgrelay.log (queue_id, event_id, channel, action_type, payload, attempt, outcome, node_id, queued_at,
                         started_at, finished_at)
SELECT id, event_id, channel, action_type, payload, attempt, 'ok', 0, queued_at, now(), now()
FROM pgrelay.queue WHERE id = :cr5;
SELECT id AS cr5_log FROM pgrelay.log WHERE queue_id = :cr5 \gset
BEGIN;
SELECT ord, payload, replayed_log = :cr5_log AS replayed FROM pgrelay._claim_rows(ARRAY[:cr5]);
SELECT count(*) AS channel_locks FROM pg_locks
WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND classid = 1885827585;
SELECT count(*) AS cr5_queued FROM pgrelay.queue WHERE id = :cr5;
ROLLBACK;
BEGIN;
SELECT ord, queue_id = ANY (ARRAY[:cr1, :cr2, :cr4, :cr5]) AS claimed, event_id = queue_id AS first_attempt, channel,
       action_type, payload, attempt, queued_at <= now() AS queued_at, key, publication_id, event_type, timeout,
       handler, replayed_log = :cr5_log AS replayed
FROM pgrelay._claim_rows(ARRAY[:cr4, :cr1, -5, :cr3, :cr5, :cr2, :cr1]) ORDER BY ord;
SELECT count(*) AS channel_locks FROM pg_locks
WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND classid = 1885827585;
SELECT payload, attempt, run_at > now() AS not_due FROM pgrelay.queue WHERE id IN (:cr1, :cr2, :cr3, :cr4, :cr5) ORDER BY id;
ROLLBACK;
DELETE FROM pgrelay.queue WHERE id IN (:cr1, :cr2, :cr3, :cr4, :cr5);
DELETE FROM pgrelay.log WHERE queue_id = :cr5;
-- internal: executable by no role (its callers run as its owner), with the claim's plan settings
SELECT has_function_privilege('public', 'pgrelay._claim_rows(bigint[])', 'EXECUTE') AS public,
       has_function_privilege('pgrelay_processor', 'pgrelay._claim_rows(bigint[])', 'EXECUTE') AS processor,
       prosecdef, proconfig
FROM pg_proc WHERE oid = 'pgrelay._claim_rows(bigint[])'::regprocedure;

-- _batch_results() finishes the attempts that ended (_complete_events) and returns one row per id,
-- in the order of ids: the attempt's, the one of an event finished apart (replayed, snoozed), or
-- skipped
SELECT pgrelay.notify('b_work', 'br1') AS br1 \gset
BEGIN;
SELECT count(*) AS claimed FROM pgrelay._claim_events(ARRAY[:br1]);
SELECT id = :br1 AS is_br1, outcome, CASE WHEN id < 0 THEN log_id ELSE log_id - log_id + 1 END AS log_id, retry_id,
       error, sqlstate, retry_at
FROM pgrelay._batch_results(ARRAY[-8, :br1, -7], ARRAY[:br1], '{permanent}', '{nope}', '{X0001}', ARRAY[now()],
                            ARRAY[now()], ARRAY[-7],
                            ARRAY[ROW('replayed', 42, NULL, NULL, NULL, NULL)::pgrelay.process_result]);
COMMIT;
SELECT payload, outcome, error FROM pgrelay.log WHERE event_id = :br1;
SELECT payload, error FROM pgrelay.failed_events WHERE event_id = :br1;
DELETE FROM pgrelay.failed_events;

-- _run_handler() runs a handler in a subtransaction and says what became of it: ok; its error; a
-- timeout of the channel when it returns too late (late_is_timeout), and not otherwise; with fn,
-- the function read again first: one no longer SECURITY DEFINER is not run; a cancel once the
-- statement's timer has run out is the channel's timeout (the timer spent), one before is re-raised
CREATE FUNCTION regress_batch_invoker(payload text) RETURNS void LANGUAGE sql AS $$ SELECT $$;
SELECT COALESCE(max(n), 0) AS rh_n FROM regress_batch_calls \gset
SELECT pgrelay._run_handler('public.regress_batch_work', NULL, 'rh ok', 'b_work', '1 hour', now(), '0', false);
SELECT pgrelay._run_handler('public.regress_batch_work', NULL, 'fail', 'b_work', '1 hour', now(), '0', false);
SELECT pgrelay._run_handler('public.regress_batch_work', NULL, 'slow', 'b_work', '1 ms', now(), '0', true);
SELECT pgrelay._run_handler('public.regress_batch_work', NULL, 'slow', 'b_work', '1 ms', now(), '0', false);
SELECT pgrelay._run_handler('public.regress_batch_work', 'public.regress_batch_work(text)'::regprocedure, 'rh fn',
                            'b_work', '1 hour', now(), '0', false);
SELECT pgrelay._run_handler('public.regress_batch_invoker', 'public.regress_batch_invoker(text)'::regprocedure,
                            'rh no', 'b_work', '1 hour', now(), '0', false);
SELECT pgrelay._run_handler('public.regress_batch_work', NULL, 'cancel', 'b_work', '1 hour',
                            now() - interval '1 hour', '1 minute', false);
SELECT pgrelay._run_handler('public.regress_batch_work', NULL, 'cancel', 'b_work', '1 hour', now(), '0', false);
SELECT payload FROM regress_batch_calls WHERE n > :rh_n ORDER BY n;
DELETE FROM regress_batch_calls WHERE n > :rh_n;
RESET work_mem;
DROP FUNCTION regress_batch_invoker(text);

-- After each handler, RESET ALL gives the session back the search_path it started with until
-- the pin is set again: a database whose default path lists pg_catalog after a schema its owner
-- writes to must not have that owner's look-alike set_config() run as the Processor
CREATE TABLE public.regress_batch_trap (who text);
CREATE FUNCTION public.set_config(text, text, boolean) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.regress_batch_trap VALUES (current_user);
    RETURN pg_catalog.set_config($1, $2, $3);
END
$$;
SELECT current_database() AS db \gset
ALTER DATABASE :"db" SET search_path = public, pg_catalog;
\c
SELECT pgrelay.notify('b_work', 'trap 1') AS p1, pgrelay.notify('b_work', 'trap 2') AS p2 \gset
SELECT outcome FROM pgrelay.process_batch(ARRAY[:p1]);
SELECT outcome FROM pgrelay.process_one(:p2);
SELECT count(*) AS trap_fired FROM public.regress_batch_trap;
ALTER DATABASE :"db" RESET search_path;
\c
DROP FUNCTION public.set_config(text, text, boolean);
DROP TABLE public.regress_batch_trap;

-- The log ids of a batch, drawn in its one statement (_complete_events): given in the reverse of
-- their queue order, the events run in the order given and their log ids increase in that order,
-- each with this node's id and the wall clock's millisecond, even when the id clock was far
-- behind it (the first id moves it forward, as _next_id() does). The node id is the database's
-- setting: a batch puts the session's settings back after each handler (RESET ALL).
DELETE FROM regress_batch_calls;
SELECT pgrelay.notify('b_work', 'id 1') AS i1, pgrelay.notify('b_work', 'id 2') AS i2,
       pgrelay.notify('b_work', 'id 3') AS i3 \gset
ALTER DATABASE :"db" SET pg_relay.node_id = 9;
\c
SELECT setval('pgrelay._id_clock', 1) IS NOT NULL AS clock_behind;
SELECT count(*) AS ok FROM pgrelay.process_batch(ARRAY[:i3, :i2, :i1]) WHERE outcome = 'ok';
SELECT payload FROM regress_batch_calls ORDER BY n;
SELECT l.payload, (l.id >> 12) & 1023 AS node,
       abs((l.id >> 22) - (floor(date_part('epoch', l.finished_at) * 1000)::bigint - 1767225600000)) < 1000
           AS ms_is_now,
       l.id > lag(l.id) OVER (ORDER BY c.n) AS after_previous
FROM pgrelay.log l JOIN regress_batch_calls c ON c.payload = l.payload
WHERE l.event_id IN (:i1, :i2, :i3) ORDER BY c.n;
ALTER DATABASE :"db" RESET pg_relay.node_id;
\c
-- past the 41 bits of milliseconds within a batch (the second id): the id space is exhausted
-- (error), and nothing of the batch is finished
SELECT pgrelay.notify('b_work', 'end 1') AS e1, pgrelay.notify('b_work', 'end 2') AS e2 \gset
SELECT setval('pgrelay._id_clock', 9007199254740990) IS NOT NULL AS clock_at_end;
SELECT regress_error(format('SELECT pgrelay.process_batch(ARRAY[%s, %s])', :e1, :e2));
SELECT setval('pgrelay._id_clock',
              (floor(date_part('epoch', clock_timestamp()) * 1000)::bigint - 1767225600000) * 4096) IS NOT NULL
       AS clock_reset;
SELECT count(*) AS still_queued FROM pgrelay.queue WHERE id IN (:e1, :e2);
-- a cancel of many events draws their log ids in its statement too: one each, distinct, with this
-- node's id and the wall clock's millisecond after the id clock fell far behind
SET pg_relay.node_id = 11;
SELECT setval('pgrelay._id_clock', 1) IS NOT NULL AS clock_behind;
SELECT pgrelay.cancel('b_work');
SELECT count(*) AS log_rows, count(DISTINCT l.id) AS distinct_ids, bool_and((l.id >> 12) & 1023 = 11) AS node,
       bool_and(abs((l.id >> 22) - (floor(date_part('epoch', l.finished_at) * 1000)::bigint - 1767225600000)) < 1000)
           AS ms_is_now
FROM pgrelay.log l WHERE l.event_id IN (:e1, :e2) AND l.outcome = 'cancelled';
RESET pg_relay.node_id;
DELETE FROM pgrelay.queue;
DELETE FROM regress_batch_calls;

DELETE FROM pgrelay.log WHERE channel LIKE 'b\_%';
DELETE FROM pgrelay.failed_events WHERE channel LIKE 'b\_%';
DELETE FROM pgrelay.channels WHERE channel LIKE 'b\_%';
DROP FUNCTION regress_batch(bigint[]);
DROP FUNCTION regress_batch_work(text), regress_batch_pauser(text);
DROP TABLE regress_batch_calls;
