-- The held transaction of docs/interface.md, run as the Processor's role: claim, fetch, deliver,
-- _write_log, set_status, mark done
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
CREATE ROLE regress_processor IN ROLE pgrelay_processor;
SELECT name FROM pgrelay_notifier.create_profile('w_main', host => 'smtp.example.com', from_address => 'app@example.com');
SELECT channel FROM pgrelay_notifier.create_channel('w_mail', 'w_main', max_attempts => 3);
SELECT pgrelay_notifier.send('w_mail', ARRAY['ann@example.org', 'bob@example.org'], 'Hi', 'Hello') AS n \gset

-- attempt 1: bob is greylisted; pg_relay decides on a retry, set_status records it
SET ROLE regress_processor;
SELECT id AS q FROM pgrelay.queue_pending_ids() \gset
BEGIN;
SELECT payload = :'n' AS payload_is_id, attempt FROM pgrelay._queue_claim(:q);
SELECT d ->> 'status' AS status, jsonb_array_length(d -> 'recipients') AS recipients FROM pgrelay_notifier.fetch(:'n', regress_event(:'n')) d;
SELECT outcome, next_run_at > now() AS later FROM pgrelay._write_log(:q, 'transient', '451 4.7.1 greylisted');
SELECT pgrelay_notifier.set_status(:'n', jsonb_build_object('attempt', 1, 'outcome', 'retrying', 'transport', 'smtp',
       'error', '451 4.7.1 greylisted', 'next_attempt_at', now() + interval '10 seconds',
       'recipients', '[{"id": 1, "status": "sent", "code": 250}, {"id": 2, "status": "retrying", "code": 451}]'::jsonb));
SELECT pgrelay._queue_mark_done(:q) IS NOT NULL AS retry_queued;
COMMIT;
RESET ROLE;
SELECT payload = :'n' AS same_payload, attempt, run_at > now() AS later FROM pgrelay.queue;
UPDATE pgrelay.queue SET run_at = now() - interval '1 second';

-- a crash after fetch() (rollback) leaves everything as it was: the event is offered again
SET ROLE regress_processor;
SELECT id AS q FROM pgrelay.queue_pending_ids() \gset
BEGIN;
SELECT attempt FROM pgrelay._queue_claim(:q);
SELECT pgrelay_notifier.fetch(:'n', regress_event(:'n')) ->> 'status' AS status;
ROLLBACK;
RESET ROLE;
SELECT status, attempts FROM pgrelay_notifier.get_status(:n);
SELECT count(*) AS still_queued FROM pgrelay.queue WHERE id = :q;

-- attempt 2: only bob is in the envelope now; sent
SET ROLE regress_processor;
BEGIN;
SELECT attempt FROM pgrelay._queue_claim(:q);
SELECT r ->> 'address' AS envelope FROM jsonb_array_elements(pgrelay_notifier.fetch(:'n', regress_event(:'n')) -> 'recipients') r
WHERE r ->> 'status' IN ('pending', 'retrying');
SELECT outcome FROM pgrelay._write_log(:q, 'ok');
SELECT pgrelay_notifier.set_status(:'n', '{"attempt": 2, "outcome": "sent", "recipients": [{"id": 2, "status": "sent", "code": 250}]}');
SELECT pgrelay._queue_mark_done(:q) IS NULL AS finished;
COMMIT;
RESET ROLE;
SELECT status, attempts, last_error FROM pgrelay_notifier.get_status(:n);
SELECT count(*) AS queued FROM pgrelay.queue;

-- a duplicate event of a sent notification: fetch() says sent, the Processor finishes it as ok, no set_status
SELECT pgrelay.notify('w_mail', :'n') AS q \gset
SET ROLE regress_processor;
BEGIN;
SELECT count(*) AS claimed FROM pgrelay._queue_claim(:q);
SELECT pgrelay_notifier.fetch(:'n', regress_event(:'n')) ->> 'status' AS status;
SELECT outcome FROM pgrelay._write_log(:q, 'ok');
SELECT pgrelay._queue_mark_done(:q);
COMMIT;
RESET ROLE;

-- a cancelled notification: fetch() says cancelled, the Processor finishes the event as cancelled
SELECT pgrelay_notifier.send('w_mail', ARRAY['ann@example.org'], 'Never mind', 'x') AS c \gset
SELECT pgrelay_notifier.cancel(:c);
SET ROLE regress_processor;
SELECT id AS q FROM pgrelay.queue_pending_ids() \gset
BEGIN;
SELECT count(*) AS claimed FROM pgrelay._queue_claim(:q);
SELECT pgrelay_notifier.fetch(:'c', regress_event(:'c')) ->> 'status' AS status;
SELECT outcome FROM pgrelay._write_log(:q, 'cancelled');
SELECT pgrelay._queue_mark_done(:q);
COMMIT;
RESET ROLE;
SELECT status, attempts FROM pgrelay_notifier.get_status(:c);

-- the audit trail has one row per attempt; the notifier has its own attempt history
SELECT l.attempt, l.outcome, l.error, l.payload IN (:'n', :'c') AS ours
FROM pgrelay.log l ORDER BY l.id;
SELECT attempt, outcome, status FROM pgrelay_notifier.attempts WHERE notification_id = :n ORDER BY attempt;
SELECT count(*) AS queued FROM pgrelay.queue;

DELETE FROM pgrelay.log;
DELETE FROM pgrelay_notifier.notifications;
SELECT pgrelay_notifier.drop_channel('w_mail');
SELECT pgrelay_notifier.drop_profile('w_main');
DROP ROLE regress_processor;
