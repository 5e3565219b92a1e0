/* extension/pg_relay/src/console.sql: what the web console reads (pg_relay web, docs/console.md) */

-- pgrelay.attempts
-- The audit trail without what only admins may read: one row per attempt, its outcome, error,
-- SQLSTATE, duration and node, but not the payload and not the attempt's detail document (a
-- webhook's recorded answer, an email's per-recipient results), of which it keeps the HTTP status
-- and latency only. A plain view of pgrelay.log, so every index of the log serves it.
CREATE OR REPLACE VIEW pgrelay.attempts AS
SELECT l.id, l.event_id, l.queue_id, l.channel, l.action_type, l.attempt, l.outcome, l.error, l.sqlstate,
       l.node_id, l.queued_at, l.started_at, l.finished_at, l.retry_at,
       round((date_part('epoch', l.finished_at - l.started_at) * 1000)::numeric, 1) AS duration_ms,
       CASE WHEN l.detail ->> 'transport' = 'webhook' AND jsonb_typeof(l.detail -> 'status') = 'number'
            THEN (l.detail ->> 'status')::integer END AS http_status,
       CASE WHEN l.detail ->> 'transport' = 'webhook' AND jsonb_typeof(l.detail -> 'latency_ms') = 'number'
            THEN (l.detail ->> 'latency_ms')::bigint END AS latency_ms,
       l.publication_id
FROM pgrelay.log l;
COMMENT ON VIEW pgrelay.attempts IS
    'Every attempt of pgrelay.log without its payload and detail: outcome, error, SQLSTATE, duration, node, '
    'and for webhooks the HTTP status and latency; the publication it was delivered for';

-- pgrelay.throughput()
CREATE OR REPLACE FUNCTION pgrelay.throughput(since timestamptz, until timestamptz DEFAULT now(),
                                              bucket interval DEFAULT '1 minute')
RETURNS TABLE (bucket_start timestamptz, channel text, done bigint, retried bigint, failed bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Attempts per channel and time bucket in [since, until), at most a day, from pgrelay.log: done
 * (ok, partial, cancelled), retried (retry, timeout) and failed, by the time their log row was made
 * (its id). Buckets start at whole multiples of bucket since 2026-01-01 UTC; a bucket without
 * attempts is left out. The rows are found through the primary key, so the cost is that of the
 * range read, whatever the size of the log.
 */
DECLARE
    ms bigint;
BEGIN
    IF since IS NULL OR until IS NULL OR bucket IS NULL THEN
        RAISE EXCEPTION 'since, until and bucket must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT isfinite(since) OR NOT isfinite(until) OR until <= since OR until - since > interval '1 day' THEN
        RAISE EXCEPTION 'since and until must be finite times, since before until, at most 1 day apart'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pgrelay._duration_ok(bucket, '1 minute', '1 day') OR extract(epoch FROM bucket) % 60 <> 0 THEN
        RAISE EXCEPTION 'bucket must be a whole number of minutes from 1 minute to 1 day, not %', bucket
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Bucket numbers from the ids alone (an id's top bits are milliseconds since 2026-01-01),
    -- so that each row costs two integer operations; a bucket's time is made once per group.
    ms := (date_part('epoch', bucket) * 1000)::bigint;
    RETURN QUERY
    SELECT pg_catalog.to_timestamp((b.k * ms + 1767225600000) / 1000.0), b.channel,
           count(*) FILTER (WHERE b.outcome IN ('ok', 'partial', 'cancelled')),
           count(*) FILTER (WHERE b.outcome IN ('retry', 'timeout')),
           count(*) FILTER (WHERE b.outcome = 'failed')
    FROM (SELECT (l.id >> 22) / ms AS k, l.channel, l.outcome
          FROM pgrelay.log l
          WHERE l.id >= pgrelay._id_floor(since) AND l.id < pgrelay._id_floor(until)) b
    GROUP BY b.k, b.channel
    ORDER BY b.k, b.channel;
END
$$;
COMMENT ON FUNCTION pgrelay.throughput(timestamptz, timestamptz, interval) IS
    'Attempts done, retried and failed per channel and time bucket in a time range of at most a day, from pgrelay.log';
