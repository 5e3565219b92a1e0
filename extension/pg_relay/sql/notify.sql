-- pgrelay.notify()
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
CREATE FUNCTION regress_sink(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;
SELECT channel FROM pgrelay.register('n_orders', 'sql', handler => 'regress_sink(text)');

-- success: the id is returned, the row is queued in the caller's transaction; it is due from the
-- moment of the call (run_at: the clock then, not the transaction's start), queued_at is the
-- transaction's start
BEGIN;
SELECT pgrelay.notify('n_orders', '{"order": 1}') AS id \gset
SELECT id = :id AS same_id, event_id = :id AS event_is_id, channel, action_type, payload,
       attempt, owner_node, node_restricted, run_at BETWEEN now() AND clock_timestamp() AS due_now,
       queued_at = now() AS queued_now
FROM pgrelay.queue;
COMMIT;
SELECT count(*) FROM pgrelay.queue;

-- rollback discards the event
BEGIN;
SELECT pgrelay.notify('n_orders', 'gone') > 0 AS queued;
ROLLBACK;
SELECT count(*) FROM pgrelay.queue WHERE payload = 'gone';

-- so does the rollback of a savepoint
BEGIN;
SAVEPOINT s;
SELECT pgrelay.notify('n_orders', 'gone too') > 0 AS queued;
ROLLBACK TO SAVEPOINT s;
SELECT pgrelay.notify('n_orders', 'kept') > 0 AS queued;
COMMIT;
SELECT payload FROM pgrelay.queue WHERE payload LIKE 'gone%' OR payload = 'kept';

-- run_at in the future; named arguments; the empty payload
SELECT pgrelay.notify(channel => 'n_orders', payload => 'later', run_at => now() + interval '1 hour') > 0 AS queued;
SELECT run_at > now() AS in_future FROM pgrelay.queue WHERE payload = 'later';
SELECT pgrelay.notify('n_orders', '') > 0 AS queued;

-- the owner node is this node's id
SET pg_relay.node_id = 3;
SELECT pgrelay.notify('n_orders', 'node3') > 0 AS queued;
RESET pg_relay.node_id;
SELECT owner_node FROM pgrelay.queue WHERE payload = 'node3';

-- a channel that does not exist (error)
SELECT pgrelay.notify('no_such_channel', 'x');
SELECT pgrelay.notify(E'no_such\r\nchannel\u200b', 'x');
-- an inactive channel (error)
SELECT channel, active FROM pgrelay.register('n_orders', active => false);
SELECT pgrelay.notify('n_orders', 'x');
SELECT channel, active FROM pgrelay.register('n_orders', active => true);
-- an email channel's payload (action type notify) is a notification id, 1 to 19 digits within
-- bigint: anything else is refused when it is queued, by every way of queueing it (error)
SELECT channel FROM pgrelay.register('n_mail', 'notify');
SELECT pgrelay.notify('n_mail', '42') > 0 AS queued;
SELECT pgrelay.notify('n_mail', '9223372036854775807', now() + interval '1 hour') > 0 AS queued;
SELECT pgrelay.notify('n_mail', '0000000000000000042', key => 'k') > 0 AS queued;
SELECT pgrelay.notify('n_mail', 'not-a-number');
SELECT pgrelay.notify('n_mail', '9223372036854775808');
SELECT pgrelay.notify('n_mail', '12345678901234567890');
SELECT pgrelay.notify('n_mail', ' 42');
SELECT pgrelay.notify('n_mail', '42 ');
SELECT pgrelay.notify('n_mail', '-1');
SELECT pgrelay.notify('n_mail', '+1');
SELECT pgrelay.notify('n_mail', '');
SELECT pgrelay.notify('n_mail', E'42\n');
SELECT pgrelay.notify('n_mail', '１２');
SELECT pgrelay.notify('n_mail', '1); DROP TABLE pgrelay.queue; --', now() + interval '1 day');
SELECT pgrelay.notify('n_mail', 'x', key => 'k2');
SELECT pgrelay.notify('n_mail', 'x', key => 'k', key_mode => 'replace');
SELECT cardinality(pgrelay.notify_many('n_mail', ARRAY['1', '2'])) AS queued;
SELECT cardinality(pgrelay.notify_many('n_mail', ARRAY['3'], keys => ARRAY['k3'])) AS queued;
SELECT pgrelay.notify_many('n_mail', ARRAY['1', '2', 'three']);
SELECT pgrelay.notify_many('n_mail', '[0:1]={1,two}');
SELECT pgrelay.notify_many('n_mail', ARRAY['1', 'x'], keys => ARRAY['k4', 'k5']);
SELECT payload, key FROM pgrelay.queue WHERE channel = 'n_mail' ORDER BY id;
DELETE FROM pgrelay.queue WHERE channel = 'n_mail';
SELECT pgrelay.unregister('n_mail');
-- NULL channel and NULL payload (error)
SELECT pgrelay.notify(NULL, 'x');
SELECT pgrelay.notify('n_orders', NULL);
-- an error leaves nothing behind
SELECT count(*) FROM pgrelay.queue WHERE payload = 'x';

DELETE FROM pgrelay.queue;
