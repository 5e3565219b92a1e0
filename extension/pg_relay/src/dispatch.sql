/* extension/pg_relay/src/dispatch.sql: what the Processor runs every tick: the probe and the fetch of pending ids */

-- pgrelay._has_due_work()
CREATE OR REPLACE FUNCTION pgrelay._has_due_work() RETURNS TABLE (has_work boolean)
LANGUAGE sql STABLE AS $$
    -- One index probe per action type on queue_dispatch_idx; never reads pgrelay.log. A set-
    -- returning SQL function so that the planner inlines it and EXPLAIN can show this plan.
    SELECT EXISTS (SELECT 1
                   FROM pgrelay.action_types a
                   WHERE EXISTS (SELECT 1 FROM pgrelay.queue q
                                 WHERE q.action_type = a.action_type
                                   AND q.run_at <= pg_catalog.now()))
$$;
COMMENT ON FUNCTION pgrelay._has_due_work() IS
    'Is any queued event due? (the query behind queue_has_work and queue_probe)';

-- pgrelay.queue_has_work()
CREATE OR REPLACE FUNCTION pgrelay.queue_has_work() RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- PL/pgSQL keeps this plan for the session (see queue_probe).
    RETURN (SELECT d.has_work FROM pgrelay._has_due_work() d);
END
$$;
COMMENT ON FUNCTION pgrelay.queue_has_work() IS 'true when at least one queued event is due';

-- pgrelay.queue_probe()
CREATE OR REPLACE FUNCTION pgrelay.queue_probe(seen_generation bigint DEFAULT NULL,
                                    OUT has_work boolean, OUT reload_requested boolean,
                                    OUT paused boolean, OUT reload_generation bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * PL/pgSQL, not SQL: a SECURITY DEFINER SQL function is never inlined, and PostgreSQL plans the
 * body of a SQL function afresh on every call, which made planning (~0.2 ms) most of the cost of
 * a probe. PL/pgSQL plans this statement once per session (docs/benchmarks.md).
 */
BEGIN
    SELECT (SELECT d.has_work FROM pgrelay._has_due_work() d),
           queue_probe.seen_generation IS NOT NULL AND c.reload_generation > queue_probe.seen_generation,
           c.paused,
           c.reload_generation
    INTO queue_probe.has_work, queue_probe.reload_requested, queue_probe.paused,
         queue_probe.reload_generation
    FROM pgrelay.control c;
END
$$;
COMMENT ON FUNCTION pgrelay.queue_probe(bigint) IS
    'The Processor''s tick probe: is work due, was a reload requested since seen_generation, is dispatch paused';

-- pgrelay.queue_pending_ids()
CREATE OR REPLACE FUNCTION pgrelay.queue_pending_ids(max_rows integer DEFAULT NULL)
RETURNS TABLE (id bigint, action_type text, channel text, timeout_ms integer, attempt integer)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
-- jit off: action_types is far too small for autovacuum to ever analyze it, so the planner
-- guesses 850 rows and a cost over jit_above_cost; compiling the plan took 60-160 ms per call
-- for a query that runs in 2 ms (docs/benchmarks.md).
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
/*
 * Every eligible row (or max_rows of them), ordered by action_types.run_order NULLS LAST, run_at,
 * queued_at. Rows are read per action type in index order and locked FOR UPDATE SKIP LOCKED, so
 * concurrent Processors get disjoint sets and rows in flight are passed over; the locks end with
 * the caller's statement. A channel with concurrency_mode 'channel' offers only its first row.
 * Returns nothing while dispatch is paused; a paused or inactive channel offers nothing.
 */
#variable_conflict use_column
DECLARE
    ctx record;
BEGIN
    IF max_rows IS NOT NULL AND max_rows < 1 THEN
        RAISE EXCEPTION 'max_rows must be positive, not %', max_rows
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (SELECT c.paused FROM pgrelay.control c) THEN
        RETURN;
    END IF;
    SELECT * INTO ctx FROM pgrelay._dispatch_context();

    RETURN QUERY
    WITH cand AS (
        SELECT s.*
        FROM pgrelay.action_types a
        CROSS JOIN LATERAL (
            SELECT q.id, q.action_type, q.channel, q.run_at, q.queued_at, q.attempt,
                   a.run_order, c.concurrency_mode, c.timeout
            FROM pgrelay.queue q
            JOIN pgrelay.channels c ON c.channel = q.channel
            WHERE q.action_type = a.action_type
              AND q.run_at <= now()
              AND c.active AND NOT c.paused
              AND pgrelay._dispatch_allowed(q.owner_node, q.node_restricted,
                                            ctx.mode, ctx.node, ctx.is_leader)
            ORDER BY q.run_at, q.queued_at, q.id
            LIMIT max_rows
            FOR UPDATE OF q SKIP LOCKED
        ) s
    ), ranked AS (
        SELECT cand.*,
               row_number() OVER (PARTITION BY cand.channel
                                  ORDER BY cand.run_at, cand.queued_at, cand.id) AS rn
        FROM cand
    )
    SELECT r.id, r.action_type, r.channel,
           (date_part('epoch', r.timeout) * 1000)::integer,
           r.attempt
    FROM ranked r
    WHERE r.concurrency_mode = 'parallel' OR r.rn = 1
    ORDER BY r.run_order NULLS LAST, r.run_at, r.queued_at, r.id
    LIMIT max_rows;
END
$$;
COMMENT ON FUNCTION pgrelay.queue_pending_ids(integer) IS
    'Eligible (id, action_type, channel, timeout_ms, attempt) rows in dispatch order, locked FOR UPDATE SKIP LOCKED';
