-- demo/queue.sql - the queue as the Processor will find it (run as postgres).
SELECT channel, action_type,
       CASE WHEN length(payload) > 64 THEN left(payload, 61) || '...' ELSE payload END AS payload,
       attempt, run_at::time(0) AS run_at
FROM pgrelay.queue
ORDER BY queued_at, id;
