-- what every job queue has: keys (notify(key => ...)), notify_many(), cancel(), snooze (PGSNZ)
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
SET timezone = 'UTC';
DELETE FROM pgrelay.queue;
CREATE TABLE regress_job_calls (n integer GENERATED ALWAYS AS IDENTITY, payload text);
CREATE FUNCTION regress_job(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO regress_job_calls (payload) VALUES (payload);
    CASE
        WHEN payload LIKE 'snooze %' THEN
            RAISE EXCEPTION 'not yet' USING ERRCODE = 'PGSNZ', DETAIL = substr(payload, 8);
        WHEN payload LIKE 'nap %' THEN
            RAISE EXCEPTION '%', substr(payload, 5) USING ERRCODE = 'PGSNZ';
        WHEN payload = 'fail' THEN
            RAISE EXCEPTION 'bad payload';
        ELSE NULL;
    END CASE;
END
$$;
SELECT channel FROM pgrelay.register('j_one', 'sql', handler => 'regress_job(text)', max_attempts => 3);
SELECT channel FROM pgrelay.register('j_two', 'sql', handler => 'regress_job(text)');

-- keys: a second call with the key keeps the waiting event (keep, the default) and returns its id
SELECT pgrelay.notify('j_one', 'first', key => 'k1') AS k1 \gset
SELECT pgrelay.notify('j_one', 'second', key => 'k1') = :k1 AS same_event;
SELECT payload, key FROM pgrelay.queue WHERE key = 'k1';
-- replace: the payload becomes the new one, run_at stays
SELECT pgrelay.notify('j_one', 'third', now() + interval '1 hour', key => 'k1', key_mode => 'replace') = :k1 AS same_event;
SELECT payload, run_at <= now() AS due FROM pgrelay.queue WHERE key = 'k1';
-- debounce: payload and run_at move
SELECT pgrelay.notify('j_one', 'fourth', now() + interval '1 hour', key => 'k1', key_mode => 'debounce') = :k1 AS same_event;
SELECT payload, run_at > now() + interval '59 minutes' AS moved FROM pgrelay.queue WHERE key = 'k1';
-- debounce without run_at: due now
SELECT pgrelay.notify('j_one', 'fifth', key => 'k1', key_mode => 'debounce') = :k1 AS same_event;
SELECT payload, run_at <= now() AS due FROM pgrelay.queue WHERE key = 'k1';
-- a key is per channel; events without a key are never merged
SELECT pgrelay.notify('j_two', 'other channel', key => 'k1') <> :k1 AS new_event;
SELECT pgrelay.notify('j_one', 'no key') <> pgrelay.notify('j_one', 'no key') AS two_events;
SELECT channel, count(*) FILTER (WHERE key = 'k1') AS with_k1, count(*) AS queued FROM pgrelay.queue GROUP BY 1 ORDER BY 1;
SELECT channel, queued, keyed FROM pgrelay.queue_depth WHERE channel LIKE 'j_%' ORDER BY 1;
-- once it has run, the key is free again: the next call queues a new event
SELECT outcome FROM pgrelay.process_one(:k1);
SELECT pgrelay.notify('j_one', 'after', key => 'k1') <> :k1 AS new_event;
-- a retry keeps its key and its owner: a later call of the owner finds it (a key without an
-- owner, as 1.3 queued, is found only on a channel that shares its keys)
DELETE FROM pgrelay.queue;
SELECT pgrelay.notify('j_one', 'fail', key => 'kf') AS kf \gset
SELECT key_owner = session_user AS owned FROM pgrelay.queue;
SELECT outcome FROM pgrelay.process_one(:kf);
SELECT attempt, key, key_owner = session_user AS owned, payload FROM pgrelay.queue;
SELECT pgrelay.notify('j_one', 'ok now', key => 'kf', key_mode => 'replace') = :kf AS same_event;
SELECT attempt, key, key_owner = session_user AS owned, payload FROM pgrelay.queue ORDER BY id;
-- so does a retry of a batch
DELETE FROM pgrelay.queue;
SELECT pgrelay.notify('j_one', 'fail', key => 'kb') AS kb \gset
SELECT outcome FROM pgrelay.process_batch(ARRAY[:kb]::bigint[]);
SELECT attempt, key, key_owner = session_user AS owned FROM pgrelay.queue;
SELECT pgrelay.notify('j_one', 'fail', key => 'kb', key_mode => 'replace') = :kb AS same_event;
DELETE FROM pgrelay.queue;
SELECT pgrelay.notify('j_one', 'fail', key => 'kf') AS kf \gset
UPDATE pgrelay.queue SET key_owner = NULL, payload = 'fail';
SELECT pgrelay.notify('j_one', 'ok now', key => 'kf', key_mode => 'replace') <> :kf AS new_event;
DELETE FROM pgrelay.queue WHERE payload = 'ok now';
SELECT shared_keys FROM pgrelay.register('j_one', shared_keys => true);
SELECT pgrelay.notify('j_one', 'ok now', key => 'kf', key_mode => 'replace') = :kf AS same_event;
SELECT attempt, key, payload FROM pgrelay.queue;
SELECT shared_keys FROM pgrelay.register('j_one', shared_keys => false);
-- a key is its producer's (the login role, session_user): another role's call that finds its
-- event is refused, whatever the key_mode, and changes nothing (error)
DELETE FROM pgrelay.queue;
CREATE ROLE regress_prod IN ROLE pgrelay_producer;
CREATE ROLE regress_prod2 IN ROLE pgrelay_producer;
SET SESSION AUTHORIZATION regress_prod;
SELECT pgrelay.notify('j_two', 'A', now() + interval '5 minutes', key => 'user:7') AS p1 \gset
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_prod2;
SELECT pgrelay.notify('j_two', 'B', '9999-12-31', key => 'user:7', key_mode => 'debounce');
SELECT pgrelay.notify('j_two', 'B', key => 'user:7', key_mode => 'replace');
SELECT pgrelay.notify('j_two', 'B', key => 'user:7');
SELECT pgrelay.notify_many('j_two', ARRAY['B', 'C'], keys => ARRAY['user:9', 'user:7']);
SELECT pgrelay.notify('j_two', 'B', key => 'user:8') AS p2 \gset
RESET SESSION AUTHORIZATION;
-- ... and the other way round: a key taken first is the taker's
SET SESSION AUTHORIZATION regress_prod;
SELECT pgrelay.notify('j_two', 'A', key => 'user:8');
SELECT pgrelay.notify('j_two', 'A2', key => 'user:7', key_mode => 'replace') = :p1 AS own_event;
RESET SESSION AUTHORIZATION;
SELECT payload, key, key_owner, run_at < now() + interval '1 hour' AS soon FROM pgrelay.queue ORDER BY id;
-- a channel with shared keys: every producer's call finds the waiting event, as keys did before
SELECT shared_keys FROM pgrelay.register('j_two', shared_keys => true);
SET SESSION AUTHORIZATION regress_prod2;
SELECT pgrelay.notify('j_two', 'B2', key => 'user:7', key_mode => 'replace') = :p1 AS same_event;
RESET SESSION AUTHORIZATION;
SELECT payload, key, key_owner FROM pgrelay.queue ORDER BY id;
SELECT shared_keys FROM pgrelay.register('j_two', shared_keys => false);
DELETE FROM pgrelay.queue;
DROP ROLE regress_prod, regress_prod2;
-- a key has 1 to 512 bytes, whatever its characters: a multi-byte one counts its bytes
SELECT octet_length(k) AS bytes, length(k) AS characters, pgrelay.notify('j_two', 'len', key => k) > 0 AS queued
FROM unnest(ARRAY['k', repeat('k', 100), repeat('k', 101), repeat('k', 511) || 'x', repeat('é', 256),
                  repeat('€', 170) || 'kk', repeat('😀', 128)]) k;
SELECT octet_length(key) AS bytes, length(key) AS characters FROM pgrelay.queue WHERE payload = 'len' ORDER BY id;
DELETE FROM pgrelay.queue WHERE payload = 'len';
-- bad keys and modes
SELECT pgrelay.notify('j_one', 'x', key => '');
SELECT pgrelay.notify('j_one', 'x', key => repeat('k', 513));
SELECT pgrelay.notify('j_one', 'x', key => repeat('é', 257));
SELECT pgrelay.notify('j_one', 'x', key => repeat('😀', 128) || 'k');
SELECT pgrelay.notify('j_one', 'x', key => repeat('k', 200) || E'\n');
SELECT pgrelay.notify('j_one', 'x', key => E'a\nb');
SELECT pgrelay.notify('j_one', 'x', key => 'k', key_mode => 'merge');
SELECT pgrelay.notify('j_one', 'x', key => 'k', key_mode => NULL);
-- the checks of notify() apply to a keyed event too (and to a replacement)
SELECT pgrelay.notify('j_nope', 'x', key => 'k');
SELECT pgrelay.notify('j_one', 'x', 'infinity', key => 'k');
SELECT pgrelay.notify('j_one', NULL, key => 'k');

-- notify_many: one id per payload, in order, one event each
DELETE FROM pgrelay.queue;
SELECT cardinality(pgrelay.notify_many('j_two', ARRAY['a', 'b', 'c'])) AS ids;
SELECT payload FROM pgrelay.queue ORDER BY id;
SELECT pgrelay.notify_many('j_two', ARRAY['d', 'e']) AS ids \gset
SELECT (SELECT array_agg(payload ORDER BY i) FROM unnest(:'ids'::bigint[]) WITH ORDINALITY u(id, i)
        JOIN pgrelay.queue q ON q.id = u.id) AS payloads_of_ids;
SELECT count(DISTINCT id) = 5 AS distinct_ids, bool_and(id = event_id) AS own_events FROM pgrelay.queue;
SELECT pgrelay.notify_many('j_two', '{}') AS empty;
-- run_at applies to every event
SELECT cardinality(pgrelay.notify_many('j_two', ARRAY['later'], now() + interval '1 hour'));
SELECT payload, run_at > now() AS scheduled FROM pgrelay.queue WHERE payload = 'later';
-- keys: one per payload (NULL: no key); two of one key in one call are two calls
DELETE FROM pgrelay.queue;
SELECT ids[1] = ids[3] AS merged, ids[2] <> ids[1] AS kept_apart
FROM (SELECT pgrelay.notify_many('j_two', ARRAY['p1', 'p2', 'p3'], keys => ARRAY['a', NULL, 'a'],
                                 key_mode => 'replace') AS ids) x;
SELECT payload, key FROM pgrelay.queue ORDER BY id;
-- payloads and keys of any lower bound pair by position; the ids come back as a plain array
SELECT array_lower(ids, 1) AS lower, cardinality(ids) AS ids, ids[1] = ids[3] AS merged
FROM (SELECT pgrelay.notify_many('j_two', '[0:2]={z0,z1,z2}', keys => '[7:9]={za,zb,za}', key_mode => 'replace') AS ids) x;
SELECT array_lower(ids, 1) AS lower, cardinality(ids) AS ids
FROM (SELECT pgrelay.notify_many('j_two', '[-3:-2]={m1,m2}') AS ids) x;
SELECT payload, key FROM pgrelay.queue WHERE payload ~ '^[zm][0-9]$' ORDER BY id;
DELETE FROM pgrelay.queue WHERE payload ~ '^[zm][0-9]$';
-- the ids of a large call: increasing in the order of payloads, this node's, and near the wall
-- clock even when the id clock was far behind it (caught up by the first id)
SET pg_relay.node_id = 5;
SELECT setval('pgrelay._id_clock', 1) IS NOT NULL AS clock_behind;
SELECT pgrelay.notify_many('j_two', ARRAY(SELECT 'm' || g FROM generate_series(1, 3000) g)) AS big \gset
SELECT bool_and(u.id > u.prev) AS increasing, count(*) AS ids,
       bool_and((u.id >> 12) & 1023 = 5) AS this_node,
       bool_and(abs((u.id >> 22) - (floor(date_part('epoch', clock_timestamp()) * 1000)::bigint
                                     - 1767225600000)) < 1000) AS near_wall_clock,
       count(q.id) FILTER (WHERE q.payload = 'm' || u.i AND q.owner_node = 5) AS queued_in_order
FROM (SELECT id, i, lag(id, 1, 0::bigint) OVER (ORDER BY i) AS prev
      FROM unnest(:'big'::bigint[]) WITH ORDINALITY x(id, i)) u
LEFT JOIN pgrelay.queue q ON q.id = u.id;
RESET pg_relay.node_id;
DELETE FROM pgrelay.queue WHERE id = ANY (:'big'::bigint[]);
-- the end of the id space: a call whose last id is the last one succeeds; one that would draw
-- past it fails, whichever of its ids crosses it: the first (looked at with the wall clock), the
-- 1025th (looked at too) or another (the check after the insert)
SELECT setval('pgrelay._id_clock', 9007199254740989) IS NOT NULL AS clock_near_end;
SELECT pgrelay.notify_many('j_two', ARRAY['x', 'y']) AS last_two \gset
SELECT (:'last_two'::bigint[])[2] = ((2199023255551::bigint << 22) | 4095) AS last_id;
DELETE FROM pgrelay.queue WHERE id = ANY (:'last_two'::bigint[]);
SELECT setval('pgrelay._id_clock', 9007199254740991) IS NOT NULL AS clock_at_end;
SELECT pgrelay.notify_many('j_two', ARRAY['x']);
SELECT setval('pgrelay._id_clock', 9007199254740991 - 1024) IS NOT NULL AS clock_1024_before_end;
SELECT pgrelay.notify_many('j_two', ARRAY(SELECT 'x' FROM generate_series(1, 1025)));
SELECT setval('pgrelay._id_clock', 9007199254740989) IS NOT NULL AS clock_near_end;
SELECT pgrelay.notify_many('j_two', ARRAY['x', 'y', 'z']);
SELECT setval('pgrelay._id_clock',
              (floor(date_part('epoch', clock_timestamp()) * 1000)::bigint - 1767225600000) * 4096) IS NOT NULL
       AS clock_reset;
-- bad input
SELECT pgrelay.notify_many(NULL, ARRAY['x']);
SELECT pgrelay.notify_many('j_two', NULL);
SELECT pgrelay.notify_many('j_two', ARRAY['x', NULL]);
SELECT pgrelay.notify_many('j_two', ARRAY[['x'], ['y']]);
SELECT pgrelay.notify_many('j_two', ARRAY['x', 'y'], keys => ARRAY['k']);
SELECT pgrelay.notify_many('j_two', ARRAY['x'], '-infinity');
SELECT pgrelay.notify_many('j_nope', ARRAY['x']);
SELECT pgrelay.notify_many('j_two', ARRAY['x', 'y'], keys => ARRAY['k', ''], key_mode => 'keep');
SELECT pgrelay.notify_many('j_two', ARRAY['x'], keys => ARRAY['k'], key_mode => 'later');
SELECT channel FROM pgrelay.register('j_small', 'sql', handler => 'regress_job(text)', max_payload_bytes => 10);
SELECT pgrelay.notify_many('j_small', ARRAY['short', 'much too long']);
-- arrays are read by position, whatever index they start at; the position an error names counts from 1
SELECT pgrelay.notify_many('j_small', '[0:2]={short,"much too long",x}');
SELECT pgrelay.notify_many('j_small', '[-5:-4]={"too long, first",short}');
SELECT pgrelay.notify_many('j_two', '{x,y}', keys => '{{a},{b}}');
SELECT channel FROM pgrelay.register('j_off', 'sql', handler => 'regress_job(text)', active => false);
SELECT pgrelay.notify_many('j_off', ARRAY['x']);
-- nothing of a refused call stays
SELECT count(*) AS queued FROM pgrelay.queue;

-- cancel(event_id): a waiting event leaves with a cancelled log row
DELETE FROM pgrelay.queue;
SELECT pgrelay.notify('j_one', 'to cancel') AS c1 \gset
SELECT pgrelay.cancel(:c1);
SELECT count(*) AS queued FROM pgrelay.queue WHERE event_id = :c1;
SELECT outcome, attempt, error LIKE 'cancelled by %' AS says_who FROM pgrelay.log WHERE event_id = :c1;
-- again: finished; never an event: an error
SELECT pgrelay.cancel(:c1);
SELECT pgrelay.cancel(12345);
SELECT pgrelay.cancel(NULL::bigint);
-- a retry waiting is cancelled too (its attempt is the one that will not run)
SELECT pgrelay.notify('j_one', 'fail') AS c2 \gset
SELECT outcome FROM pgrelay.process_one(:c2);
SELECT pgrelay.cancel(:c2);
SELECT outcome, attempt FROM pgrelay.log WHERE event_id = :c2 ORDER BY id;
-- a scheduled event too
SELECT pgrelay.cancel(pgrelay.notify('j_one', 'tomorrow', now() + interval '1 day'));
-- an email event is cancelled through its notification: the hint names the call, with the
-- payload as a number; a payload that is no notification id (a producer's text, queued before
-- notify() checked it) never reaches the hint: that event sends nothing and is cancelled here
SELECT channel FROM pgrelay.register('j_mail', 'notify');
INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, run_at) VALUES
    (9001, 9001, 'j_mail', 'notify', '42', now() + interval '1 day'),
    (9002, 9002, 'j_mail', 'notify', '1); ALTER ROLE regress_nobody SUPERUSER; SELECT (1', now() + interval '1 day');
SELECT pgrelay.cancel(9001);
SELECT pgrelay.cancel(9002);
SELECT outcome, payload FROM pgrelay.log WHERE event_id = 9002;
DELETE FROM pgrelay.queue WHERE event_id = 9001;
-- cancel by filter: the key, the time range, the channel
SELECT pgrelay.notify('j_one', 'a', key => 'ka') AS ka \gset
SELECT pgrelay.notify('j_one', 'b', key => 'kb') AS kb \gset
SELECT pgrelay.notify('j_two', 'c', key => 'ka') AS kc \gset
SELECT pgrelay.cancel('j_one', key => 'ka');
SELECT channel, key FROM pgrelay.queue ORDER BY id;
SELECT pgrelay.cancel('j_one', queued_before => now() - interval '1 minute');
SELECT pgrelay.cancel('j_one', queued_after => now() - interval '1 minute');
SELECT pgrelay.cancel(NULL, all_channels => true);
SELECT count(*) AS queued FROM pgrelay.queue;
SELECT outcome, count(*) FROM pgrelay.log WHERE event_id IN (:ka, :kb, :kc) GROUP BY 1;
-- bad input
SELECT pgrelay.cancel(NULL::text);
SELECT pgrelay.cancel('j_one', all_channels => NULL);
SELECT pgrelay.cancel('j_one', all_channels => true);
SELECT pgrelay.cancel('j_nope');
SELECT pgrelay.cancel('123');
SELECT pgrelay.cancel('j_one', queued_after => '2026-02-01 UTC', queued_before => '2026-01-01 UTC');

-- snooze: the handler raises PGSNZ with a delay (DETAIL, or the message): the same attempt again later
DELETE FROM pgrelay.queue;
TRUNCATE regress_job_calls;
SELECT pgrelay.notify('j_one', 'snooze 90', key => 'ks') AS s1 \gset
SELECT outcome, retry_id IS NOT NULL AS queued_again, retry_at - now() > interval '85 seconds' AS later, sqlstate
FROM pgrelay.process_one(:s1);
SELECT event_id = :s1 AS same_event, attempt, snoozes, key, run_at > now() AS later FROM pgrelay.queue;
SELECT outcome, attempt, error, sqlstate, retry_at IS NOT NULL AS has_retry_at FROM pgrelay.log WHERE event_id = :s1;
SELECT channel, snoozed FROM pgrelay.queue_depth WHERE channel = 'j_one';
-- the message as the delay, as an interval
SELECT pgrelay.notify('j_one', 'nap 2 hours') AS s2 \gset
SELECT outcome, retry_at - now() > interval '119 minutes' AS later FROM pgrelay.process_one(:s2);
-- an unreadable or out-of-range delay is an error of the attempt (it spends one)
SELECT pgrelay.notify('j_one', 'nap soon') AS s3 \gset
SELECT outcome, error FROM pgrelay.process_one(:s3);
SELECT pgrelay.notify('j_one', 'snooze 31 days') AS s4 \gset
SELECT outcome, error FROM pgrelay.process_one(:s4);
-- the bound is on the time the delay makes, not on the interval: '10000 years -3599999 days'
-- compares as 1 day and is 143 years from now; '1 year -359 days' is 6 or 7 days from now, and
-- '-1 day 25 hours' an hour
SELECT pgrelay.notify('j_one', 'snooze 10000 years -3599999 days') AS s7 \gset
SELECT outcome, error FROM pgrelay.process_one(:s7);
SELECT pgrelay.notify('j_one', 'snooze 1 year -359 days') AS s8 \gset
SELECT outcome, error FROM pgrelay.process_one(:s8);
SELECT pgrelay.notify('j_one', 'snooze -1 day 25 hours') AS s9 \gset
SELECT outcome, retry_at - now() BETWEEN interval '59 minutes' AND interval '61 minutes' AS in_an_hour
FROM pgrelay.process_one(:s9);
SELECT pgrelay.notify('j_one', 'snooze 100000000 years') AS s10 \gset
SELECT outcome, error FROM pgrelay.process_one(:s10);
SELECT pgrelay.notify('j_one', 'snooze 0') AS s5 \gset
SELECT outcome, error FROM pgrelay.process_one(:s5);
-- the bound: after 100 snoozes the next is an error of the attempt
SELECT pgrelay.notify('j_one', 'snooze 1') AS s6 \gset
UPDATE pgrelay.queue SET snoozes = 100 WHERE event_id = :s6;
SELECT outcome, error, sqlstate FROM pgrelay.process_one(:s6);
SELECT attempt, snoozes FROM pgrelay.queue WHERE event_id = :s6;
-- in a batch: the snoozed event goes back, the others finish as usual
DELETE FROM pgrelay.queue;
SELECT pgrelay.notify('j_one', 'b1') AS b1 \gset
SELECT pgrelay.notify('j_one', 'snooze 60') AS b2 \gset
SELECT pgrelay.notify('j_one', 'b3') AS b3 \gset
SELECT b.id = :b2 AS is_snoozed, b.outcome, b.retry_id IS NOT NULL AS queued_again, b.sqlstate
FROM pgrelay.process_batch(ARRAY[:b1, :b2, :b3]::bigint[]) b;
SELECT event_id = :b2 AS snoozed_one, attempt, snoozes FROM pgrelay.queue;
-- the snooze bound in a batch, too
UPDATE pgrelay.queue SET snoozes = 100, run_at = now();
SELECT outcome, error FROM pgrelay.process_batch(ARRAY(SELECT id FROM pgrelay.queue));

DELETE FROM pgrelay.queue;
SELECT pgrelay.unregister(c) FROM unnest(ARRAY['j_one', 'j_two', 'j_small', 'j_off', 'j_mail']) c;
DROP FUNCTION regress_job(text);
DROP TABLE regress_job_calls;
