-- Replayed rows: a queue row inserted again with its id after this node finished it (a
-- replication engine that applied a peer's INSERT twice after a crash, a restore, a re-sync) is
-- recognised at its claim by its log row, and finished without running anything again: in
-- process_one(), in a batch (process_batch), and in the held transaction of notify and webhook
-- events (_queue_claim, _webhook_claim). Its outcome stands as recorded: no second retry row, no
-- second failure.
\set SHOW_CONTEXT never
SET timezone = 'UTC';
DELETE FROM pgrelay.queue;
CREATE TABLE regress_replay_runs (n integer GENERATED ALWAYS AS IDENTITY, payload text);
CREATE FUNCTION regress_replay_work(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO regress_replay_runs (payload) VALUES (payload);
    IF payload LIKE 'fail%' THEN
        RAISE EXCEPTION 'bad payload %', payload;
    END IF;
END
$$;
SELECT channel FROM pgrelay.register('rp_jobs', 'sql', handler => 'regress_replay_work(text)', max_attempts => 2);
-- what a replication engine does when it applies an INSERT again: the row as it was queued, with
-- its id (read back from this node's log row of the attempt)
CREATE FUNCTION regress_replay(log_id bigint) RETURNS bigint LANGUAGE sql AS $$
    INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, owner_node, node_restricted,
                               attempt, run_at, queued_at)
    SELECT l.queue_id, l.event_id, l.channel, l.action_type, l.payload, 0, false, l.attempt, l.queued_at,
           l.queued_at
    FROM pgrelay.log l WHERE l.id = log_id
    RETURNING id $$;

-- process_one(): done once, replayed, finished without running again
SELECT pgrelay.notify('rp_jobs', 'once') AS id \gset
SELECT outcome, log_id AS first_log FROM pgrelay.process_one(:id) \gset
SELECT :'outcome' AS outcome;
SELECT regress_replay(:first_log) = :id AS replayed_with_its_id;
SELECT outcome, log_id = :first_log AS same_log_row, retry_id, error FROM pgrelay.process_one(:id);
SELECT count(*) AS runs FROM regress_replay_runs WHERE payload = 'once';
SELECT count(*) AS queued FROM pgrelay.queue;
SELECT count(*) AS log_rows FROM pgrelay.log WHERE queue_id = :id;

-- an attempt recorded as a retry: the retry row was queued then; the replayed row makes no second
SELECT pgrelay.notify('rp_jobs', 'fail-once') AS id \gset
SELECT outcome, log_id AS retry_log, retry_id FROM pgrelay.process_one(:id) \gset
SELECT :'outcome' AS outcome;
SELECT regress_replay(:retry_log) = :id AS replayed_with_its_id;
SELECT outcome FROM pgrelay.process_one(:id);
SELECT id = :retry_id AS only_the_retry_row, attempt FROM pgrelay.queue;
-- ... and the retry fails for good (max_attempts 2): replayed, it is not failed a second time
UPDATE pgrelay.queue SET run_at = now() WHERE id = :retry_id;
SELECT outcome, log_id AS failed_log FROM pgrelay.process_one(:retry_id) \gset
SELECT :'outcome' AS outcome;
SELECT failed_at AS failed_at FROM pgrelay.failed_events WHERE payload = 'fail-once' \gset
SELECT regress_replay(:failed_log) = :retry_id AS replayed_with_its_id;
SELECT outcome FROM pgrelay.process_one(:retry_id);
SELECT attempts, failed_at = :'failed_at' AS unchanged FROM pgrelay.failed_events WHERE payload = 'fail-once';
-- (a failed attempt's work is rolled back with its subtransaction: none is left of either)
SELECT count(*) AS runs FROM regress_replay_runs WHERE payload = 'fail-once';
SELECT count(*) AS queued FROM pgrelay.queue;

-- a replayed row waits, like any other, while the gate is closed (nothing is finished paused)
SELECT pgrelay.notify('rp_jobs', 'paused') AS id \gset
SELECT log_id AS paused_log FROM pgrelay.process_one(:id) \gset
SELECT regress_replay(:paused_log) = :id AS replayed_with_its_id;
SELECT pgrelay.pause();
SELECT outcome FROM pgrelay.process_one(:id);
SELECT count(*) AS queued FROM pgrelay.queue;
SELECT pgrelay.resume();
SELECT outcome FROM pgrelay.process_one(:id);

-- a batch: two replayed rows and a new one; only the new one runs
SELECT pgrelay.notify('rp_jobs', 'b1') AS b1, pgrelay.notify('rp_jobs', 'b2') AS b2 \gset
SELECT array_agg(log_id ORDER BY id) AS batch_logs FROM pgrelay.process_batch(ARRAY[:b1, :b2]) \gset
SELECT count(regress_replay(x)) AS replayed FROM unnest(:'batch_logs'::bigint[]) x;
SELECT pgrelay.notify('rp_jobs', 'b3') AS b3 \gset
SELECT id = ANY (ARRAY[:b1, :b2, :b3]) AS ours, outcome, log_id = ANY (:'batch_logs'::bigint[]) AS recorded_before
FROM pgrelay.process_batch(ARRAY[:b1, :b2, :b3]);
SELECT payload, count(*) AS runs FROM regress_replay_runs WHERE payload LIKE 'b_' GROUP BY payload ORDER BY payload;
SELECT count(*) AS queued FROM pgrelay.queue;

-- the held transaction of a notify event (_queue_claim): a replayed row comes back marked, and
-- is finished by the claim once the Processor commits
SELECT pgrelay.notify('rp_jobs', 'held') AS id \gset
BEGIN;
SELECT replayed FROM pgrelay._queue_claim(:id);
SELECT outcome FROM pgrelay._write_log(:id, 'ok');
SELECT pgrelay._queue_mark_done(:id);
COMMIT;
SELECT regress_replay(id) = :id AS replayed_with_its_id FROM pgrelay.log WHERE queue_id = :id;
BEGIN;
SELECT queue_id = :id AS ours, payload, replayed FROM pgrelay._queue_claim(:id);
COMMIT;
SELECT count(*) AS queued FROM pgrelay.queue;

-- a webhook event (_webhook_claim): replayed, it comes back without its endpoint, nothing to send
SELECT channel FROM pgrelay.register_webhook('rp_hook', 'https://hooks.example.com/replay');
SELECT pgrelay.notify('rp_hook', '{"n": 1}') AS id \gset
BEGIN;
SELECT payload, endpoint IS NOT NULL AS has_endpoint, replayed FROM pgrelay._webhook_claim(:id);
SELECT outcome FROM pgrelay._write_log(:id, 'ok');
SELECT pgrelay._queue_mark_done(:id);
COMMIT;
SELECT regress_replay(id) = :id AS replayed_with_its_id FROM pgrelay.log WHERE queue_id = :id;
BEGIN;
SELECT payload, endpoint IS NOT NULL AS has_endpoint, replayed FROM pgrelay._webhook_claim(:id);
COMMIT;
SELECT count(*) AS queued FROM pgrelay.queue;

-- a row whose log row is gone (retention pruned it) cannot be told from a new one: it runs
SELECT pgrelay.notify('rp_jobs', 'pruned') AS id \gset
SELECT log_id AS pruned_log FROM pgrelay.process_one(:id) \gset
SELECT regress_replay(:pruned_log) = :id AS replayed_with_its_id;
DELETE FROM pgrelay.log WHERE id = :pruned_log;
SELECT outcome FROM pgrelay.process_one(:id);
SELECT count(*) AS runs FROM regress_replay_runs WHERE payload = 'pruned';

DELETE FROM pgrelay.log WHERE channel IN ('rp_jobs', 'rp_hook');
DELETE FROM pgrelay.failed_events WHERE channel = 'rp_jobs';
SELECT pgrelay.unregister('rp_jobs'), pgrelay.unregister('rp_hook');
DROP FUNCTION regress_replay(bigint);
DROP FUNCTION regress_replay_work(text);
DROP TABLE regress_replay_runs;
