/* extension/pg_relay/src/finish.sql: finishing an event: claim, log, mark done, and process_one for sql actions */

-- pgrelay._claim_event()
CREATE OR REPLACE FUNCTION pgrelay._claim_event(id bigint) RETURNS pgrelay._claim
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
-- No sequential scans: the plan is kept for the session, and one made while the log was empty (or
-- its statistics said so) reads the whole log for the replay check of every event: the check's
-- lookup by (event_id, queue_id) must be one probe of log_event_idx. (jit off: the sequential
-- scan that remains, of the one-row control table, then costs more than jit_above_cost.)
SET enable_seqscan = off SET jit = off AS $$
/*
 * Locks the row until the caller's transaction ends and re-validates it; queue_id is NULL (the
 * event is skipped, never failed) when dispatch is paused, or the row is gone, locked by someone
 * else, not yet due, its channel is missing, inactive or paused, the dispatch rule no longer
 * offers it to this node (its ownership or this node's leadership changed since it was fetched),
 * or its channel runs one event at a time and another transaction holds that channel. So an
 * event the gate no longer allows is never started, whatever a Processor fetched before the gate
 * closed. A skipped row may stay locked until the caller's transaction ends (it is a moment:
 * the caller has nothing to do with it).
 *
 * For a sql event it also looks the handler up again (the function may have been dropped,
 * replaced or altered since it was registered): call is its quoted, qualified name for EXECUTE,
 * or NULL with refusal and refusal_sqlstate saying why it must not run (gone, or no longer
 * SECURITY DEFINER: a handler runs with its owner's rights, never the Processor's, so whoever
 * owns or replaces a handler cannot run code as the Processor). The name comes from the
 * signature register() stored, resolved once when the channel was registered.
 *
 * process_one() calls it once per event, so it is kept small: two statements (the row, locked;
 * then its channel, the dispatch switch and the handler), each cheaper to start than one join of
 * all four, and a named row type as its result, whose description is cached, where a record of
 * OUT parameters is built again from the catalog on every call (docs/design/benchmark-notes.md).
 *
 * A replayed row. A row whose attempt this node has recorded already (pgrelay.log has the row of
 * its event_id and queue id) was finished here: the transaction that wrote that log row deleted
 * it. It is in the queue again only because it was inserted again with its id: a replication
 * engine that applied a peer's INSERT a second time after a crash, a restore, a re-sync. Claimed,
 * it is finished at once (deleted in the caller's transaction) and nothing runs: replayed_log is
 * the log row that recorded its attempt. Its outcome stands as recorded: a retry was queued then,
 * as a row of its own, and no second one is made; a failure was recorded in failed_events then.
 * The log is node-local, so only the node that made the attempt can tell (docs/ha.md).
 */
DECLARE
    r pgrelay._claim;
    owner integer;
    restricted boolean;
    serial boolean;
    ctx record;
BEGIN
    SELECT q.id, q.event_id, q.channel, q.action_type, q.payload, q.attempt, q.queued_at, q.run_at,
           q.owner_node, q.node_restricted,
           (SELECT l.id FROM pgrelay.log l WHERE l.event_id = q.event_id AND l.queue_id = q.id LIMIT 1)
    INTO r.queue_id, r.event_id, r.channel, r.action_type, r.payload, r.attempt, r.queued_at, r.run_at,
         owner, restricted, r.replayed_log
    FROM pgrelay.queue q
    WHERE q.id = _claim_event.id AND q.run_at <= pg_catalog.clock_timestamp()
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN r;
    END IF;
    SELECT c.max_attempts, (pg_catalog.date_part('epoch', c.timeout) * 1000)::integer, c.handler,
           -- register() stores format('%I.%I(text)', schema, name): the quoted, qualified name
           -- is the signature without "(text)", and resolves to the function looked up here.
           CASE WHEN p.prosecdef THEN pg_catalog.left(c.handler, -6) END,
           CASE WHEN c.handler IS NULL THEN NULL
                WHEN p.oid IS NULL THEN pg_catalog.format('handler %s does not exist', c.handler)
                WHEN NOT p.prosecdef THEN pg_catalog.format('handler %s is not SECURITY DEFINER', c.handler)
           END,
           CASE WHEN c.handler IS NULL THEN NULL WHEN p.oid IS NULL THEN '42883'
                WHEN NOT p.prosecdef THEN '42501' END,
           c.concurrency_mode = 'channel', p.oid
    INTO r.max_attempts, r.timeout_ms, r.handler, r.call, r.refusal, r.refusal_sqlstate, serial, r.fn
    FROM pgrelay.channels c
    JOIN pgrelay.control k ON NOT k.paused
    -- The handler by its schema and name, read from the catalog: pg_relay's owner may not have
    -- USAGE on the handler's schema (an install by the database's owner, not a superuser), and
    -- needs none to read pg_proc; the Processor's role, which calls it, does need it.
    -- (Written out in _claim_events too: a function call here costs every event.) Plain
    -- equalities on the name's parts, so that the lookup is one probe of pg_proc's unique index
    -- (proname, proargtypes, pronamespace): a row comparison with a subquery is a filter the
    -- planner runs on every row of pg_proc. The schema's oid comes from to_regnamespace(), which
    -- checks no privilege (NULL for a schema that is gone), rather than from a join of
    -- pg_namespace: one plan node less to start for every event.
    LEFT JOIN LATERAL (SELECT pg_catalog.parse_ident(pg_catalog.left(c.handler, -6)) AS ident) h ON true
    LEFT JOIN pg_catalog.pg_proc p
           ON p.proname = h.ident[2]::pg_catalog.name AND p.proargtypes = '25'::pg_catalog.oidvector
              AND p.pronamespace = pg_catalog.to_regnamespace(pg_catalog.quote_ident(h.ident[1]))::pg_catalog.oid
    WHERE c.channel = r.channel AND c.active AND NOT c.paused;
    IF NOT FOUND THEN
        r.queue_id := NULL;
        RETURN r;
    END IF;
    -- single mode (no setting, or the Processor's default) offers every row: skip the rule.
    IF COALESCE(pg_catalog.current_setting('pg_relay.mode', true), '') NOT IN ('', 'single') THEN
        SELECT * INTO ctx FROM pgrelay._dispatch_context();
        IF NOT pgrelay._dispatch_allowed(owner, restricted, ctx.mode, ctx.node, ctx.is_leader) THEN
            r.queue_id := NULL;
        END IF;
    END IF;
    -- A replayed row (above) is finished here: nothing of it runs, so no channel lock is needed.
    IF r.replayed_log IS NOT NULL THEN
        IF r.queue_id IS NOT NULL THEN
            DELETE FROM pgrelay.queue x WHERE x.id = r.queue_id;
        END IF;
        RETURN r;
    END IF;
    -- One event of the channel in flight across every session of this database: the lock is
    -- transaction-scoped, so it covers process_one() and the Processor's held transaction alike
    -- (and a batch: its events of the channel run one after another in it).
    IF serial AND r.queue_id IS NOT NULL
       AND NOT pg_catalog.pg_try_advisory_xact_lock(1885827585, pg_catalog.hashtext(r.channel)) THEN
        r.queue_id := NULL;
    END IF;
    RETURN r;
END
$$;
COMMENT ON FUNCTION pgrelay._claim_event(bigint) IS
    'Claims a queue row for this transaction after re-validating it (queue_id NULL: skipped), with its handler checked';

-- pgrelay._queue_claim()
CREATE OR REPLACE FUNCTION pgrelay._queue_claim(id bigint)
RETURNS TABLE (queue_id bigint, event_id bigint, channel text, action_type text, payload text,
               attempt integer, max_attempts integer, timeout_ms integer, handler text,
               queued_at timestamptz, run_at timestamptz, replayed boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * _claim_event() as a set: the claimed row, or no row when the event is skipped (the step the
 * Processor's held transaction of a notify event starts with). replayed: the row was replayed
 * (its attempt is recorded in pgrelay.log already, see _claim_event) and is finished by this
 * claim: the caller delivers nothing and commits.
 */
#variable_conflict use_column
DECLARE
    c record;
BEGIN
    c := pgrelay._claim_event(_queue_claim.id);
    IF c.queue_id IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT c.queue_id, c.event_id, c.channel, c.action_type, c.payload, c.attempt,
                        c.max_attempts, c.timeout_ms, c.handler, c.queued_at, c.run_at,
                        c.replayed_log IS NOT NULL;
END
$$;
COMMENT ON FUNCTION pgrelay._queue_claim(bigint) IS
    'Claims a queue row for this transaction after re-validating it; no row means skipped';

-- pgrelay._lock_claimed()
CREATE OR REPLACE FUNCTION pgrelay._lock_claimed(id bigint) RETURNS pgrelay.queue
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal (called by the SECURITY DEFINER functions below, executable by nobody else): the queue
 * row, locked by this transaction, or a clear error if it is gone or held by another.
 */
DECLARE
    q pgrelay.queue;
BEGIN
    -- Our own lock does not block us; someone else's makes the row invisible here.
    SELECT * INTO q FROM pgrelay.queue x WHERE x.id = _lock_claimed.id FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM pgrelay.queue x WHERE x.id = _lock_claimed.id) THEN
            RAISE EXCEPTION 'queue row % is claimed by another transaction', id
                USING ERRCODE = 'lock_not_available';
        END IF;
        RAISE EXCEPTION 'queue row % does not exist', id
            USING ERRCODE = 'no_data_found',
                  HINT = 'It was finished already, or never existed.';
    END IF;
    RETURN q;
END
$$;
COMMENT ON FUNCTION pgrelay._lock_claimed(bigint) IS
    'Internal: the queue row, locked by this transaction; a clear error if it is gone or held by another';

-- pgrelay._outcome()
CREATE OR REPLACE FUNCTION pgrelay._outcome(result text, sqlstate text, attempt integer, max_attempts integer,
                                 retry_policy text)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    -- Internal: the outcome of an attempt (the retry decision, once, for everybody). ok, partial
    -- and cancelled finish the event; permanent fails it; transient and timeout retry it until
    -- max_attempts, then fail it; error is a handler's error, classified from its SQLSTATE by the
    -- channel's retry_policy. A plain expression, inlined into its callers' statements
    -- (operators schema-qualified: an inlined body is read with the caller's search_path).
    SELECT CASE
        WHEN result OPERATOR(pg_catalog.=) ANY ('{ok,partial,cancelled}'::text[]) THEN result
        WHEN result OPERATOR(pg_catalog.=) 'permanent'
          OR (result OPERATOR(pg_catalog.=) 'error'
              AND pgrelay._classify_error(sqlstate, retry_policy) OPERATOR(pg_catalog.=) 'permanent') THEN 'failed'
        WHEN attempt OPERATOR(pg_catalog.>=) COALESCE(max_attempts, 1) THEN 'failed'
        WHEN result OPERATOR(pg_catalog.=) 'timeout'
          OR (result OPERATOR(pg_catalog.=) 'error'
              AND pgrelay._classify_error(sqlstate, retry_policy) OPERATOR(pg_catalog.=) 'timeout') THEN 'timeout'
        ELSE 'retry'
    END
$$;
COMMENT ON FUNCTION pgrelay._outcome(text, text, integer, integer, text) IS
    'Internal: what an attempt''s result makes of the event: ok, partial, cancelled, retry, timeout or failed';

-- pgrelay._log_row()
CREATE OR REPLACE FUNCTION pgrelay._log_row(q pgrelay.queue, id bigint, outcome text, error text, sqlstate text,
                                 detail jsonb, started_at timestamptz, finished_at timestamptz,
                                 retry_at timestamptz)
RETURNS pgrelay.log
LANGUAGE sql IMMUTABLE AS $$
    -- Internal: the log row of an attempt on the queue row q, not written yet (_finish_rows writes
    -- it, with this node's id). A plain expression, inlined into its callers' statements (a
    -- PL/pgSQL assignment of it is a simple expression): its type is schema-qualified, since an
    -- inlined body is read with the caller's search_path. The fields in pgrelay.log's order.
    SELECT ROW(id, q.id, q.event_id, q.channel, q.action_type, q.payload, q.attempt, outcome, error, sqlstate,
               detail, NULL, q.queued_at, started_at, finished_at, retry_at, q.publication_id,
               q.event_type)::pgrelay.log
$$;
COMMENT ON FUNCTION pgrelay._log_row(pgrelay.queue, bigint, text, text, text, jsonb, timestamptz, timestamptz, timestamptz) IS
    'Internal: the log row of an attempt on a queue row, for _finish_rows() to write';

-- pgrelay._finish_rows()
CREATE OR REPLACE FUNCTION pgrelay._finish_rows(qs pgrelay.queue[], ls pgrelay.log[], write_log boolean,
                                     settle boolean)
RETURNS bigint[]
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal: the one writer of what finishing attempts leaves behind, for any number of them. ls
 * are the log rows of the attempts on the queue rows qs (one each, matched by queue_id; _log_row;
 * qs may leave out the rows whose log row queues no next row, which it is read for only);
 * the caller has locked or deleted the queue rows. write_log: the log rows are written (with this
 * node's id). settle: for each log row that says so, the next row of its event is queued (retry and
 * timeout: the next attempt, run_at the log row's retry_at and last_error its error; snoozed: the
 * same attempt again, snoozes + 1, last_error kept) or the event is recorded in failed_events
 * (failed). The caller deletes the finished queue rows itself (it read them in the same
 * statement). Returns the ids of the queued rows, one element per log row in the order of ls
 * (NULL for a row that queued none; NULL for all when none did).
 *
 * One statement for each kind of row, over all the rows, run only when some row needs it: an
 * INSERT that inserts nothing still opens its table and every index of it, and nearly every
 * attempt is ok, which needs the log row only. A scalar result, so that a call for one event is a
 * simple expression of its caller (a set-returning one would start a query).
 */
#variable_conflict use_column
DECLARE
    l pgrelay.log;
    next boolean := false;
    failed boolean := false;
    ids bigint[];
    node integer;
    last bigint;     -- the highest value of the id clock drawn
BEGIN
    IF ls IS NULL THEN
        RETURN NULL;   -- no rows (an empty batch; a cancel that found none)
    END IF;
    IF write_log THEN
        -- this node's id read once, not for every row (_node_id() is inlined into the statement)
        node := pgrelay._node_id();
        INSERT INTO pgrelay.log (id, queue_id, event_id, channel, action_type, payload, attempt, outcome,
                                 error, sqlstate, detail, node_id, queued_at, started_at, finished_at, retry_at,
                                 publication_id, event_type)
        SELECT l.id, l.queue_id, l.event_id, l.channel, l.action_type, l.payload, l.attempt, l.outcome,
               l.error, l.sqlstate, l.detail, node, l.queued_at, l.started_at, l.finished_at,
               l.retry_at, l.publication_id, l.event_type
        FROM pg_catalog.unnest(ls) l;
    END IF;
    IF NOT settle THEN
        RETURN NULL;
    END IF;
    FOREACH l IN ARRAY ls LOOP
        next := next OR l.outcome IN ('retry', 'timeout', 'snoozed');
        failed := failed OR l.outcome = 'failed';
    END LOOP;
    IF failed THEN
        INSERT INTO pgrelay.failed_events AS f (event_id, channel, action_type, payload, attempts,
                                                error, sqlstate, log_id, node_id, queued_at, failed_at)
        SELECT l.event_id, l.channel, l.action_type, l.payload, l.attempt, l.error, l.sqlstate,
               l.id, pgrelay._node_id(), l.queued_at, l.finished_at
        FROM pg_catalog.unnest(ls) l
        WHERE l.outcome = 'failed'
        ON CONFLICT (event_id) DO UPDATE
            SET attempts = EXCLUDED.attempts, error = EXCLUDED.error, sqlstate = EXCLUDED.sqlstate,
                log_id = EXCLUDED.log_id, node_id = EXCLUDED.node_id, failed_at = EXCLUDED.failed_at;
    END IF;
    IF NOT next THEN
        RETURN NULL;
    END IF;
    -- The retry rows' ids drawn in the statement, as _complete_events() draws a batch's log ids:
    -- one value of the id clock per retry row, in the order of ls (w is numbered, then read in
    -- that order by v), the wall clock looked at for the first and every 1024th.
    node := pgrelay._node_id();
    WITH w AS MATERIALIZED (
        SELECT l.ordinality AS ord, l.queue_id, l.outcome, l.error, l.retry_at,
               pg_catalog.row_number() OVER (ORDER BY l.ordinality) AS k
        FROM pg_catalog.unnest(ls) WITH ORDINALITY l
        WHERE l.outcome IN ('retry', 'timeout', 'snoozed')
    ), v AS MATERIALIZED (
        SELECT w.*, CASE WHEN w.k % 1024 = 1
                         THEN pgrelay._id_clock_catch_up(pg_catalog.nextval('pgrelay._id_clock'))
                         ELSE pg_catalog.nextval('pgrelay._id_clock') END AS v
        FROM w
    ), n AS MATERIALIZED (
        SELECT v.ord, q.event_id, q.channel, q.action_type, q.payload, q.owner_node, q.node_restricted,
               q.key, q.key_owner, q.publication_id, q.event_type, q.queued_at, v.retry_at, v.v,
               CASE WHEN v.outcome = 'snoozed' THEN q.attempt ELSE q.attempt + 1 END AS attempt,
               CASE WHEN v.outcome = 'snoozed' THEN q.last_error ELSE v.error END AS last_error,
               CASE WHEN v.outcome = 'snoozed' THEN q.snoozes + 1 ELSE q.snoozes END AS snoozes,
               ((v.v >> 12) << 22) | (node::bigint << 12) | (v.v & 4095) AS next_id
        FROM v
        JOIN pg_catalog.unnest(qs) q ON q.id = v.queue_id
    ), r AS (
        INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, owner_node, node_restricted,
                                   attempt, run_at, queued_at, last_error, key, key_owner, snoozes, publication_id,
                                   event_type)
        SELECT n.next_id, n.event_id, n.channel, n.action_type, n.payload, n.owner_node, n.node_restricted,
               n.attempt, pgrelay._run_at(n.retry_at), n.queued_at, n.last_error, n.key, n.key_owner, n.snoozes,
               n.publication_id, n.event_type
        FROM n
    )
    SELECT pg_catalog.array_agg(n.next_id ORDER BY o.ord), pg_catalog.max(n.v)
    INTO ids, last
    FROM pg_catalog.generate_series(1, pg_catalog.cardinality(ls)) o(ord)
    LEFT JOIN n ON n.ord = o.ord;
    -- the id space's end, which _id_clock_catch_up checks, for the rows it did not see
    IF last >= 9007199254740992 THEN
        RAISE EXCEPTION 'pg_relay id space exhausted' USING ERRCODE = 'numeric_value_out_of_range';
    END IF;
    RETURN ids;
END
$$;
COMMENT ON FUNCTION pgrelay._finish_rows(pgrelay.queue[], pgrelay.log[], boolean, boolean) IS
    'Internal: writes the log rows of attempts and queues their retries or records their failures';

-- pgrelay._attempt_row()
CREATE OR REPLACE FUNCTION pgrelay._attempt_row(q pgrelay.queue, result text, error text, sqlstate text,
                                     started_at timestamptz, detail jsonb, retry_at timestamptz)
RETURNS pgrelay.log
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal (_complete, _finish_held, _write_log): the log row of one attempt on the queue row q (_log_row), with
 * its outcome (_outcome: the retry decision) and, for a retry, when: the caller's retry_at (a
 * provider's Retry-After) or now + the channel's backoff. An ok attempt needs nothing of its
 * channel, and it is nearly every attempt: only another result reads the channel. The caller has
 * checked result; it is not written here (_finish_rows).
 */
DECLARE
    ch pgrelay.channels;
    finished timestamptz := clock_timestamp();
    o text := 'ok';
    at timestamptz;
BEGIN
    -- A retry at infinity would never be due, one at -infinity would jump every queue; a log row
    -- must say when its attempt started.
    IF NOT isfinite(COALESCE(_attempt_row.retry_at, finished)) THEN
        RAISE EXCEPTION 'retry_at must be a finite time, not %', _attempt_row.retry_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT isfinite(COALESCE(started_at, finished)) THEN
        RAISE EXCEPTION 'started_at must be a finite time, not %', started_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF result <> 'ok' THEN
        SELECT * INTO ch FROM pgrelay.channels c WHERE c.channel = q.channel;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'the channel of queue row % does not exist', q.id
                USING ERRCODE = 'undefined_object';
        END IF;
        o := pgrelay._outcome(result, _attempt_row.sqlstate, q.attempt, ch.max_attempts, ch.retry_policy);
        IF o IN ('retry', 'timeout') THEN
            at := COALESCE(_attempt_row.retry_at, finished + pgrelay._backoff(q.attempt, ch.backoff_base, ch.backoff_max));
        END IF;
    END IF;
    RETURN pgrelay._log_row(q, pgrelay._next_id(), o, error, _attempt_row.sqlstate, detail,
                            COALESCE(started_at, finished), finished, at);
END
$$;
COMMENT ON FUNCTION pgrelay._attempt_row(pgrelay.queue, text, text, text, timestamptz, jsonb, timestamptz) IS
    'Internal: the log row of one attempt on a queue row, with its outcome resolved (not written)';

-- pgrelay._check_result()
CREATE OR REPLACE FUNCTION pgrelay._check_result(result text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
/*
 * Internal (_write_log, _take_claimed): refuses what is not an attempt's
 * result, with the clear error, before anything of the attempt is written.
 */
BEGIN
    IF result IS NULL OR result NOT IN ('ok', 'partial', 'transient', 'timeout', 'permanent', 'cancelled', 'error') THEN
        RAISE EXCEPTION 'invalid result "%"', result
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use ok, partial, transient, timeout, permanent, cancelled or error.';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay._check_result(text) IS
    'Internal: raises invalid_parameter_value for what is not an attempt''s result';

-- pgrelay._take_claimed()
CREATE OR REPLACE FUNCTION pgrelay._take_claimed(queue_id bigint, result text) RETURNS pgrelay.queue
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal (_complete, _finish_held): the start of finishing one attempt on the row this
 * transaction claimed: result checked (_check_result), then the row deleted and read in one
 * statement. SKIP LOCKED: a row another transaction holds is an error at once (below), never
 * waited for: a Processor that gives an event up (held_abandon) finishes a row it may no longer
 * hold.
 */
DECLARE
    q pgrelay.queue;
BEGIN
    -- ok is nearly every attempt, and needs no check: no second call for it
    IF result IS DISTINCT FROM 'ok' THEN
        PERFORM pgrelay._check_result(result);
    END IF;
    DELETE FROM pgrelay.queue x
    WHERE x.id = (SELECT y.id FROM pgrelay.queue y WHERE y.id = _take_claimed.queue_id FOR UPDATE SKIP LOCKED)
    RETURNING x.* INTO q;
    IF NOT FOUND THEN
        -- the clear error for a row that is gone or another's; the RAISE is a guard only (the
        -- row would have to be back and unlocked), so that nothing is logged for no row
        PERFORM pgrelay._lock_claimed(_take_claimed.queue_id);
        RAISE EXCEPTION 'queue row % could not be finished', _take_claimed.queue_id
            USING ERRCODE = 'lock_not_available';
    END IF;
    RETURN q;
END
$$;
COMMENT ON FUNCTION pgrelay._take_claimed(bigint, text) IS
    'Internal: checks an attempt''s result and deletes and reads the queue row this transaction claimed';

-- pgrelay._write_log()
CREATE OR REPLACE FUNCTION pgrelay._write_log(queue_id bigint, result text, error text DEFAULT NULL,
                                   sqlstate text DEFAULT NULL, started_at timestamptz DEFAULT NULL,
                                   detail jsonb DEFAULT NULL, retry_at timestamptz DEFAULT NULL,
                                   OUT log_id bigint, OUT outcome text, OUT next_run_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Step 2 of 3 (claim, log, mark done) of the held transaction of a Processor of pg_relay 1.3 (the
 * Processor of 1.4 finishes in one call: _finish_held): writes the audit row of this attempt on a
 * claimed row and returns the resolved outcome and, for a retry, when. A second log row for the
 * same attempt is refused.
 */
DECLARE
    q pgrelay.queue;
    l pgrelay.log;
BEGIN
    PERFORM pgrelay._check_result(result);
    q := pgrelay._lock_claimed(queue_id);
    IF EXISTS (SELECT 1 FROM pgrelay.log x WHERE x.event_id = q.event_id AND x.queue_id = q.id) THEN
        RAISE EXCEPTION 'the log row of queue row % is written already', q.id
            USING ERRCODE = 'unique_violation';
    END IF;
    l := pgrelay._attempt_row(q, result, error, sqlstate, started_at, detail, retry_at);
    PERFORM pgrelay._finish_rows(ARRAY[q], ARRAY[l], true, false);
    log_id := l.id;
    outcome := l.outcome;
    next_run_at := l.retry_at;
END
$$;
COMMENT ON FUNCTION pgrelay._write_log(bigint, text, text, text, timestamptz, jsonb, timestamptz) IS
    'Writes the audit row of one attempt on a claimed queue row and returns the resolved outcome';

-- pgrelay._queue_mark_done()
CREATE OR REPLACE FUNCTION pgrelay._queue_mark_done(queue_id bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Step 3 of 3 (of a Processor of 1.3, as _write_log): finishes a claimed row as its log row says:
 * deletes it, and queues the next attempt (same event_id, attempt + 1, run_at the log row's
 * retry_at) for retry and timeout, or records the event in failed_events for failed
 * (_finish_rows). Returns the id of the retry row, or NULL. A row without its log row is refused.
 */
DECLARE
    q pgrelay.queue;
    l pgrelay.log;
BEGIN
    q := pgrelay._lock_claimed(queue_id);
    SELECT * INTO l FROM pgrelay.log x
    WHERE x.event_id = q.event_id AND x.queue_id = q.id
    ORDER BY x.id DESC LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'queue row % has no log row', q.id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Write it with pgrelay._write_log() first.';
    END IF;
    DELETE FROM pgrelay.queue x WHERE x.id = q.id;
    RETURN (pgrelay._finish_rows(ARRAY[q], ARRAY[l], false, true))[1];
END
$$;
COMMENT ON FUNCTION pgrelay._queue_mark_done(bigint) IS
    'Finishes a claimed queue row according to its log row; returns the retry row id or NULL';

-- pgrelay._complete()
CREATE OR REPLACE FUNCTION pgrelay._complete(queue_id bigint, result text, error text DEFAULT NULL,
                                  sqlstate text DEFAULT NULL, started_at timestamptz DEFAULT NULL)
RETURNS pgrelay._completed
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Steps 2 and 3 at once (_write_log, _queue_mark_done), for a caller that claimed the row in this
 * transaction (process_one): the row is deleted and read (_take_claimed: a row another
 * transaction holds is refused), then its log row is made (an ok one at once, any
 * other by _attempt_row, which reads the channel) and written, and its retry row queued or its
 * failure recorded (_finish_rows). Returns the log row's id and outcome, and the retry row's id
 * and run_at. Like _claim_event(), it returns a named row type (docs/design/benchmark-notes.md).
 */
DECLARE
    q pgrelay.queue;
    l pgrelay.log;
    r pgrelay._completed;
    finished timestamptz;
BEGIN
    q := pgrelay._take_claimed(_complete.queue_id, result);
    IF result = 'ok' THEN
        -- nearly every attempt: its log row only, without a call to make it (_log_row is inlined)
        finished := clock_timestamp();
        r.log_id := pgrelay._next_id();
        r.outcome := 'ok';
        PERFORM pgrelay._finish_rows(ARRAY[q], ARRAY[pgrelay._log_row(q, r.log_id, 'ok', error, sqlstate, NULL,
                                                                      COALESCE(started_at, finished), finished,
                                                                      NULL)], true, false);
        RETURN r;
    END IF;
    l := pgrelay._attempt_row(q, result, error, sqlstate, started_at, NULL, NULL);
    r.log_id := l.id;
    r.outcome := l.outcome;
    r.retry_at := l.retry_at;
    r.retry_id := (pgrelay._finish_rows(ARRAY[q], ARRAY[l], true, true))[1];
    RETURN r;
END
$$;
COMMENT ON FUNCTION pgrelay._complete(bigint, text, text, text, timestamptz) IS
    'Writes the log row of an attempt and finishes the claimed queue row, in one call';

-- pgrelay._finish_held()
CREATE OR REPLACE FUNCTION pgrelay._finish_held(queue_id bigint, result text, error text DEFAULT NULL,
                                     sqlstate text DEFAULT NULL, started_at timestamptz DEFAULT NULL,
                                     detail jsonb DEFAULT NULL, retry_at timestamptz DEFAULT NULL,
                                     gone_status integer DEFAULT NULL)
RETURNS pgrelay._completed
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * The finish of the Processor's held transaction (notify and webhook events), in one call on the
 * row it claimed: the row is deleted and read (_take_claimed: a row another transaction holds
 * is refused), its log row made with the attempt's outcome (_attempt_row: the retry
 * decision; retry_at, a provider's Retry-After, wins over the backoff) and written, and its retry
 * row queued or its failure recorded (_finish_rows). gone_status: the webhook endpoint of the
 * row's channel answered with it (410 Gone): the endpoint is marked gone and the channel paused
 * (_webhook_mark_gone), with error as the reason. Returns the log row's id and outcome, and the
 * retry row's id and run_at: what the notifier's set_status() records. The claim checked that the
 * attempt has no log row yet (a replayed row is finished by the claim). _write_log() and
 * _queue_mark_done() are the same finish in two calls, kept for a Processor of pg_relay 1.3.
 */
DECLARE
    q pgrelay.queue;
    l pgrelay.log;
    r pgrelay._completed;
BEGIN
    q := pgrelay._take_claimed(_finish_held.queue_id, result);
    l := pgrelay._attempt_row(q, result, error, sqlstate, started_at, detail, retry_at);
    r.log_id := l.id;
    r.outcome := l.outcome;
    r.retry_at := l.retry_at;
    r.retry_id := (pgrelay._finish_rows(ARRAY[q], ARRAY[l], true, true))[1];
    IF gone_status IS NOT NULL THEN
        PERFORM pgrelay._webhook_mark_gone(q.channel, gone_status, error);
    END IF;
    RETURN r;
END
$$;
COMMENT ON FUNCTION pgrelay._finish_held(bigint, text, text, text, timestamptz, jsonb, timestamptz, integer) IS
    'Writes the log row of an attempt in the held transaction and finishes its claimed queue row, in one call';

-- pgrelay._snooze_delay()
CREATE OR REPLACE FUNCTION pgrelay._snooze_delay(message text, detail text) RETURNS interval
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (process_one, process_batch): the delay a handler asked for when it raised SQLSTATE
 * PGSNZ: its DETAIL if it has one, else its message, read as seconds ('30', '2.5') or as an
 * interval ('5 minutes', '1 hour 30 minutes'). NULL when it is neither, or when the time it makes
 * is not 1 ms to 30 days from now: the bound is on that time, the one the event is queued for, not
 * on the interval ('10000 years -3599999 days' compares as 1 day, and is 143 years from now).
 */
DECLARE
    t text := btrim(COALESCE(NULLIF(btrim(detail), ''), message));
    d interval;
    at timestamptz := clock_timestamp();
BEGIN
    IF t ~ '^[0-9]{1,9}(\.[0-9]{1,6})?$' THEN
        d := make_interval(secs => t::double precision);
    ELSE
        BEGIN
            d := t::interval;
        EXCEPTION WHEN OTHERS THEN
            RETURN NULL;
        END;
    END IF;
    BEGIN
        IF at + d < at + interval '1 millisecond' OR at + d > at + interval '30 days' THEN
            RETURN NULL;
        END IF;
    EXCEPTION WHEN datetime_field_overflow THEN
        RETURN NULL; -- not even a time
    END;
    RETURN d;
END
$$;
COMMENT ON FUNCTION pgrelay._snooze_delay(text, text) IS
    'Internal: the delay of a snooze (SQLSTATE PGSNZ), from its DETAIL or message; NULL if unreadable or out of range';

-- pgrelay._snooze()
CREATE OR REPLACE FUNCTION pgrelay._snooze(queue_id bigint, message text, detail text, started_at timestamptz)
RETURNS pgrelay.process_result
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (process_one, process_batch): finishes a claimed row whose handler snoozed (raised
 * SQLSTATE PGSNZ with this message and detail): a log row with outcome snoozed, and the same
 * attempt queued again after the delay they give (_snooze_delay), with snoozes + 1 (its key
 * kept). Nothing of the handler's work stays (it ran in a subtransaction that the raise rolled
 * back). A snooze is bounded: the 101st snooze of an event,
 * or one whose delay is unreadable or out of range, is an error of the attempt
 * instead, retried or failed as the channel says, so that no event snoozes for ever. Returns what
 * process_one() returns for the attempt.
 */
DECLARE
    q pgrelay.queue;
    l pgrelay.log;
    r pgrelay.process_result;
    c pgrelay._completed;
    finished timestamptz := clock_timestamp();
    delay interval := pgrelay._snooze_delay(message, detail);
BEGIN
    q := pgrelay._lock_claimed(queue_id);
    r.sqlstate := 'PGSNZ';
    IF q.snoozes >= 100 OR delay IS NULL THEN
        r.error := CASE WHEN delay IS NULL
                        THEN format('the snooze delay "%s" is not a number of seconds nor an interval from 1 ms to 30 days',
                                    pgrelay._show(btrim(COALESCE(NULLIF(btrim(detail), ''), message))))
                        ELSE format('snoozed 100 times, the most an event may: %s', message) END;
        c := pgrelay._complete(queue_id, 'error', r.error, r.sqlstate, started_at);
        r.outcome := c.outcome;
        r.log_id := c.log_id;
        r.retry_id := c.retry_id;
        r.retry_at := c.retry_at;
        RETURN r;
    END IF;
    DELETE FROM pgrelay.queue x WHERE x.id = q.id;
    r.error := message;
    r.outcome := 'snoozed';
    r.log_id := pgrelay._next_id();
    r.retry_at := finished + delay;
    l := pgrelay._log_row(q, r.log_id, r.outcome, message, 'PGSNZ', NULL, COALESCE(_snooze.started_at, finished),
                          finished, r.retry_at);
    r.retry_id := (pgrelay._finish_rows(ARRAY[q], ARRAY[l], true, true))[1];
    RETURN r;
END
$$;
COMMENT ON FUNCTION pgrelay._snooze(bigint, text, text, timestamptz) IS
    'Internal: queues a snoozed attempt again after its delay, without spending it (at most 100 times)';

-- pgrelay._queue_defer()
CREATE OR REPLACE FUNCTION pgrelay._queue_defer(queue_id bigint, run_at timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Moves a claimed row to a later run_at without counting an attempt or writing a log row: the
 * Processor uses it when a rate limit says "not now".
 */
BEGIN
    IF run_at IS NULL THEN
        RAISE EXCEPTION 'run_at must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT isfinite(run_at) THEN
        RAISE EXCEPTION 'run_at must be a finite time, not %', run_at USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM pgrelay._lock_claimed(queue_id);
    UPDATE pgrelay.queue x SET run_at = pgrelay._run_at(_queue_defer.run_at) WHERE x.id = queue_id;
END
$$;
COMMENT ON FUNCTION pgrelay._queue_defer(bigint, timestamptz) IS
    'Postpones a claimed queue row without spending an attempt (rate limits)';

-- pgrelay._settings_saved()
CREATE OR REPLACE FUNCTION pgrelay._settings_saved() RETURNS text[]
LANGUAGE sql STABLE AS $$
/*
 * Internal (process_one, process_batch): the session settings that nothing a handler does may
 * change, as they are now, for _settings_restore() to put back after the handler's RESET ALL:
 * {search_path, statement_timeout, pg_relay.mode, pg_relay.is_leader,
 * client_connection_check_interval, TimeZone, DateStyle, IntervalStyle}, in that order (the
 * pg_relay.* ones NULL when unset). Its callers read [1] (search_path) and [2] (statement_timeout).
 *
 * A SQL function of one expression, with no SET clause, so that the planner inlines it into the
 * caller's statement: no function call per event, and it reads the caller's search_path (a SET
 * clause would show its own). Inlined, its body is parsed on the caller's search_path, before
 * process_one pins it, so every function in it names its schema and it names no type.
 */
SELECT ARRAY[pg_catalog.current_setting('search_path'),
             pg_catalog.current_setting('statement_timeout'),
             pg_catalog.current_setting('pg_relay.mode', true),
             pg_catalog.current_setting('pg_relay.is_leader', true),
             pg_catalog.current_setting('client_connection_check_interval'),
             pg_catalog.current_setting('TimeZone'),
             pg_catalog.current_setting('DateStyle'),
             pg_catalog.current_setting('IntervalStyle')]
$$;
COMMENT ON FUNCTION pgrelay._settings_saved() IS
    'Internal (process_one, process_batch): the session settings a handler must not change, for _settings_restore()';

-- pgrelay._settings_restore()
CREATE OR REPLACE FUNCTION pgrelay._settings_restore(saved text[]) RETURNS text
LANGUAGE sql VOLATILE AS $$
/*
 * Internal (process_one, process_batch), right after the RESET ALL that follows a handler: pins
 * search_path to pg_catalog, pg_temp again for the rest of the transaction, and puts back the
 * other settings of saved (from _settings_saved()) for the session. The caller's own search_path
 * (saved[1]) is given back by the caller at its end. Returns the pinned search_path.
 *
 * A SQL function of one expression, with no SET clause, so that the planner inlines it into the
 * caller's statement (no function call per event; and a SET clause would undo the pin on return).
 * Inlined, its body is parsed on the session's default search_path, which RESET ALL brought back
 * and which may list before pg_catalog a schema its owner writes to: every function in it names
 * its schema, and it names no type. The array holds every set_config() so that one expression
 * runs them all, in order.
 *
 * Each one is set, also one that RESET ALL brought back to its saved value (skipping those would
 * save about 2 us an event): a value RESET ALL takes from the server's configuration follows the
 * next reload, and the Processor does not send statement_timeout again while it believes it set.
 */
SELECT (ARRAY[pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true),
              pg_catalog.set_config('statement_timeout', saved[2], false),
              pg_catalog.set_config('pg_relay.mode', COALESCE(saved[3], ''), false),
              pg_catalog.set_config('pg_relay.is_leader', COALESCE(saved[4], ''), false),
              pg_catalog.set_config('client_connection_check_interval', saved[5], false),
              pg_catalog.set_config('TimeZone', saved[6], false),
              pg_catalog.set_config('DateStyle', saved[7], false),
              pg_catalog.set_config('IntervalStyle', saved[8], false)])[1]
$$;
COMMENT ON FUNCTION pgrelay._settings_restore(text[]) IS
    'Internal (process_one, process_batch): after RESET ALL, pins search_path again and puts back the settings _settings_saved() read';

-- pgrelay._forget_handler_state()
CREATE OR REPLACE FUNCTION pgrelay._forget_handler_state() RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (process_one, process_batch), once the handlers have run: takes out of the session what
 * a handler may have left in it to run, or to pile up, after it returned, with the Processor's
 * rights and in its memory. Nothing but the handlers runs SQL in the calling statement, so what was
 * made during it is a handler's (what the session made before, when it calls process_one() from a
 * prepared statement or a cursor of its own, is left alone):
 * - the statements SQL prepared (PREPARE), with a warning each: the Processor prepares its own by
 *   name and runs them again and again in this session, so a handler that replaced one
 *   (DEALLOCATE and PREPARE, which no rollback and no RESET ALL undo) would have its statement run
 *   by the Processor;
 * - the cursors declared WITH HOLD, with a warning each: the commit of the Processor's
 *   transaction runs the rest of such a cursor's query, as the role that commits;
 * - what the session listens to (UNLISTEN *, which also undoes a LISTEN of this transaction):
 *   the Processor reads no notification, and each one sent to a channel the session listens to
 *   would stay in its memory.
 * (About 15 us a call, once per batch.)
 */
DECLARE
    n text;
BEGIN
    FOR n IN SELECT p.name FROM pg_prepared_statements p
             WHERE p.from_sql AND p.prepare_time >= statement_timestamp() ORDER BY p.name LOOP
        EXECUTE format('DEALLOCATE %I', n);
        RAISE WARNING 'a handler left the prepared statement % in the Processor''s session: dropped', quote_ident(n)
            USING HINT = 'A handler must not PREPARE statements: the Processor''s session is not its own.';
    END LOOP;
    FOR n IN SELECT c.name FROM pg_cursors c
             WHERE c.is_holdable AND c.creation_time >= statement_timestamp() ORDER BY c.name LOOP
        EXECUTE format('CLOSE %I', n);
        RAISE WARNING 'a handler left the cursor % WITH HOLD in the Processor''s session: closed', quote_ident(n)
            USING HINT = 'A handler must not declare cursors WITH HOLD: the Processor''s session is not its own.';
    END LOOP;
    UNLISTEN *;
END
$$;
COMMENT ON FUNCTION pgrelay._forget_handler_state() IS
    'Internal (process_one, process_batch): drops the prepared statements, cursors WITH HOLD and LISTENs a handler left in the Processor''s session';

-- pgrelay._deferred_triggers()
CREATE OR REPLACE FUNCTION pgrelay._deferred_triggers() RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (process_one, process_batch), right after a handler returned, inside its
 * subtransaction: checks its deferred constraints and fires its deferred triggers now, as the
 * owner of this function, pgrelay_nobody, which holds no right at all (privileges.sql). Left for
 * the commit, they would fire as the Processor's role (a trigger function runs as the current
 * user), so a handler could have code of its owner's run with the Processor's rights (before
 * PostgreSQL 18, which fires it as the role that queued it). In a SECURITY DEFINER function a
 * trigger cannot SET ROLE its way out either. A failure is the handler's: its subtransaction rolls
 * back. The transaction's constraints are immediate from here on: a later handler of the same
 * batch that wants deferral sets it itself (SET CONSTRAINTS ... DEFERRED).
 *
 * Returns true, so that _run_handler calls it in an assignment, a plain expression (a PERFORM
 * starts a query for the call). PL/pgSQL, which keeps its statement for the session: a SQL
 * function is parsed again in each subtransaction, so once per handler. (The two together: 22k
 * instructions per event less in a batch, docs/design/benchmark-notes.md.)
 */
BEGIN
    SET CONSTRAINTS ALL IMMEDIATE;
    RETURN true;
END
$$;
COMMENT ON FUNCTION pgrelay._deferred_triggers() IS
    'Internal (process_one, process_batch): fires a handler''s deferred triggers when it returns, with no rights (owned by pgrelay_nobody)';

-- pgrelay._run_handler()
CREATE OR REPLACE FUNCTION pgrelay._run_handler(call text, fn oid, payload text, channel text, timeout interval,
                                     timer_start timestamptz, timer interval, late_is_timeout boolean)
RETURNS text[]
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal (process_one, process_batch): runs the handler call (a quoted, qualified name the claim
 * checked) with the payload, in a subtransaction of its own (this block), and returns what became
 * of it: {result, error, sqlstate, snooze detail, spent}. result is ok, error (the handler's
 * error, or the channel's timeout: SQLSTATE 57014) or snooze (it raised PGSNZ; the detail is its
 * DETAIL). A cancel before the statement's timer (timer, from timer_start; 0: none) ran out is
 * someone else's (the Processor stopping, an admin): re-raised, it rolls the caller back
 * unfinished. One after it is the channel's timeout; spent is then set: the statement's timer is
 * spent, nothing more may start in it. late_is_timeout (a batch, whose timer is not the
 * handler's): a handler that returns after running longer than timeout is rolled back and is a
 * timeout too.
 *
 * fn (a batch, after one of its handlers ran): the handler's function as the claim checked it,
 * read again first. A handler that ran since, in this transaction and with its owner's rights,
 * may have made its owner's handler of this event SECURITY INVOKER (ALTER FUNCTION) or dropped and
 * made it again: then nothing runs, and the attempt is an error (42501).
 *
 * No SET clause: one costs a tenth of what process_one() does per event, and would not undo a
 * search_path the handler sets for the session anyway. The handler runs on the path its callers
 * pinned, and may set another: everything here names its schema and its operators, so that
 * nothing is looked up on a path a handler set, and the caller's RESET ALL and
 * _settings_restore() then undo what the handler did to the session. Every type here is
 * schema-qualified (the declarations are resolved on the caller's search_path).
 */
DECLARE
    began pg_catalog.timestamptz;
    err pg_catalog.text;
    state pg_catalog.text;
    detail pg_catalog.text;
    definer pg_catalog.bool;
    fired pg_catalog.bool;
BEGIN
    began := pg_catalog.clock_timestamp();
    IF fn IS NOT NULL THEN
        -- one index probe of a statement planned once
        SELECT p.prosecdef INTO definer FROM pg_catalog.pg_proc p WHERE p.oid OPERATOR(pg_catalog.=) _run_handler.fn;
        IF definer IS NOT TRUE THEN
            RETURN ARRAY['error', pg_catalog.format('handler %s(text) is gone, or is not SECURITY DEFINER any more', call),
                         '42501', NULL, NULL];
        END IF;
    END IF;
    EXECUTE 'SELECT ' OPERATOR(pg_catalog.||) call OPERATOR(pg_catalog.||) '($1)' USING payload;
    fired := pgrelay._deferred_triggers();   -- an assignment: no query started for it
    IF late_is_timeout
       AND pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) began OPERATOR(pg_catalog.>) timeout THEN
        -- too late: undone with this subtransaction, and a timeout like any other
        RAISE EXCEPTION '%', pgrelay._timeout_error(channel, timeout) USING ERRCODE = 'PGTMO';
    END IF;
    -- typed: a constant of the statement's plan (an untyped literal is read by array_in on every call)
    RETURN '{ok,NULL,NULL,NULL,NULL}'::pg_catalog.text[];
EXCEPTION WHEN SQLSTATE 'PGTMO' THEN
    GET STACKED DIAGNOSTICS err = MESSAGE_TEXT;
    RETURN ARRAY['error', err, '57014', NULL, NULL];
WHEN query_canceled THEN
    -- Measured from timer_start, which is never before the timer's start, a timeout is never
    -- taken for someone else's cancel in a transaction of its own; in a batch it may look a few
    -- microseconds short and be re-raised, and the Processor then runs the batch's events one per
    -- transaction.
    IF timer OPERATOR(pg_catalog.=) '0'::pg_catalog.interval
       OR pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) timer_start OPERATOR(pg_catalog.<) timer THEN
        RAISE;
    END IF;
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
    RETURN ARRAY['error', pgrelay._timeout_error(channel, timeout), state, NULL, 'spent'];
WHEN SQLSTATE 'PGSNZ' THEN
    -- "run me again later": no attempt spent, see _snooze
    GET STACKED DIAGNOSTICS err = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
    RETURN ARRAY['snooze', err, 'PGSNZ', detail, NULL];
WHEN OTHERS OR assert_failure THEN
    GET STACKED DIAGNOSTICS err = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RETURN ARRAY['error', err, state, NULL, NULL];
END
$$;
COMMENT ON FUNCTION pgrelay._run_handler(text, oid, text, text, interval, timestamptz, interval, boolean) IS
    'Internal (process_one, process_batch): runs a handler in a subtransaction; {result, error, sqlstate, snooze detail, spent}';

-- pgrelay.process_one()
CREATE OR REPLACE FUNCTION pgrelay.process_one(id bigint) RETURNS pgrelay.process_result
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Claims the row, runs the channel's handler with the payload inside a subtransaction (so a
 * failing handler cannot take the bookkeeping with it), writes the log row and finishes the row.
 * outcome is skipped when the claim fails, replayed when the row's attempt was recorded already
 * (the row was inserted again after it finished; the claim finished it, nothing ran, and log_id is
 * the row that recorded it: _claim_event), else the log row's outcome; a failed attempt also
 * returns its error and SQLSTATE, and retry_at when it will run again. It works in the caller's
 * transaction: the Processor runs it alone (one event per transaction) or several times in one
 * transaction (a batch), one statement per event.
 *
 * The channel timeout reaches the handler through statement_timeout: the Processor sets it to the
 * channel's timeout before this statement, the cancel lands inside the handler, is caught here and
 * logged as a timeout; the connection stays usable. Any other cancel ends the statement with the
 * event unfinished (no attempt spent). Since statement_timeout is per statement, each event of a
 * batch has its own.
 *
 * Security. The handler must be SECURITY DEFINER (checked by _claim_event on every call), so it
 * runs with its owner's rights; this function is SECURITY INVOKER so that it adds none of its
 * own. It runs with search_path pinned to pg_catalog, pg_temp, and so does the handler unless it
 * sets its own. Nothing the handler does to the session survives it: RESET ALL afterwards, then
 * the settings this call began with are put back (search_path, statement_timeout, the pg_relay.*
 * settings, client_connection_check_interval and the date and time formats: read by
 * _settings_saved(), put back by _settings_restore(), both inlined, shared with process_batch).
 * The pin is set
 * here rather than with a SET clause because a SET clause would hide the caller's search_path;
 * until it is set, only the pg_catalog-qualified calls and types of the DECLARE section are
 * looked up.
 *
 * Its steps are helpers: the claim (_claim_event), the handler's run (_run_handler), the finish
 * (_complete, _snooze), the settings (_settings_saved and _settings_restore, inlined).
 */
DECLARE
    -- Every type here is schema-qualified: PL/pgSQL resolves the declarations when it compiles the
    -- function, on the caller's search_path, before the pin below. A type of that name in a schema
    -- listed before pg_catalog (a domain public.text whose CHECK calls its owner's code, say)
    -- would otherwise run as the caller for each value assigned. The settings to put back:
    -- keep[1] is the caller's search_path, keep[2] its statement_timeout (_settings_saved).
    keep pg_catalog.text[] := pgrelay._settings_saved();
    -- When this statement's statement_timeout timer started, or a little later (never earlier):
    -- see the cancel in _run_handler. In a transaction of its own (no transaction id yet), the
    -- transaction's start: the timer starts with the statement's transaction, at the Bind of the
    -- Processor's prepared statement, before statement_timestamp() (the Execute). Later in a
    -- transaction (a batch), the statement's own start.
    timer_start pg_catalog.timestamptz := CASE WHEN pg_catalog.pg_current_xact_id_if_assigned() IS NULL
                                    THEN pg_catalog.now() ELSE pg_catalog.statement_timestamp() END;
    pinned pg_catalog.text := pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    c pg_catalog.record;
    started pg_catalog.timestamptz;
    h pg_catalog.text[];   -- what became of the handler (_run_handler)
    l pg_catalog.record;
    -- the result: a named row type, whose description is cached (OUT parameters would make the
    -- server build it from the catalog on every call); computed before the caller's search_path
    -- is put back, so that every expression here is planned on the pinned one
    r pgrelay.process_result;
BEGIN
    c := pgrelay._claim_event(process_one.id);
    IF c.queue_id IS NULL OR c.replayed_log IS NOT NULL THEN
        -- skipped, or replayed: finished by the claim without running (log_id: the row that
        -- recorded its attempt)
        r.outcome := CASE WHEN c.queue_id IS NULL THEN 'skipped' ELSE 'replayed' END;
        r.log_id := CASE WHEN c.queue_id IS NOT NULL THEN c.replayed_log END;
        pinned := set_config('search_path', keep[1], true);
        RETURN r;
    END IF;
    IF c.action_type <> 'sql' THEN
        RAISE EXCEPTION 'event % is a "%" event; process_one() runs sql actions only', c.queue_id, c.action_type
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'notify events are delivered by the Processor.';
    END IF;

    started := clock_timestamp();
    IF c.call IS NULL THEN
        -- the handler is gone or no longer SECURITY DEFINER: an error of the attempt
        h := ARRAY['error', c.refusal, c.refusal_sqlstate];
    ELSE
        -- The channel's timeout is statement_timeout (keep[2]): the cancel lands in the handler.
        h := pgrelay._run_handler(c.call, NULL, c.payload, c.channel,
                                  pg_catalog.make_interval(secs => c.timeout_ms / 1000.0), timer_start,
                                  keep[2]::pg_catalog.interval, false);
    END IF;
    -- RESET ALL puts back the search_path the session started with (its role's or database's
    -- default, which may list a schema its owner writes to before pg_catalog): the call that pins
    -- it again (and puts back the other settings) is looked up on that path, so it names its
    -- schema, and so does everything in it (_settings_restore).
    RESET ALL;
    pinned := pgrelay._settings_restore(keep);
    PERFORM pgrelay._forget_handler_state();

    IF h[1] = 'snooze' THEN
        r := pgrelay._snooze(c.queue_id, h[2], h[4], started);
    ELSE
        l := pgrelay._complete(c.queue_id, h[1], h[2], h[3], started);
        r := ROW(l.outcome, l.log_id, l.retry_id, h[2], h[3], l.retry_at);
    END IF;
    pinned := set_config('search_path', keep[1], false);
    RETURN r;
END
$$;
COMMENT ON FUNCTION pgrelay.process_one(bigint) IS
    'Runs one sql event end to end; returns skipped, replayed, ok, snoozed, retry, timeout or failed';

-- pgrelay._claim_rows()
CREATE OR REPLACE FUNCTION pgrelay._claim_rows(ids bigint[])
RETURNS TABLE (ord integer, queue_id bigint, event_id bigint, channel text, action_type text, payload text,
               attempt integer, queued_at timestamptz, key text, publication_id bigint, event_type text,
               timeout interval, handler text, replayed_log bigint)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
-- Generic plans: a custom plan of this statement takes longer to make (0.3-0.4 ms) than to run.
-- No sequential scans: the plan is kept for the session, and one made while the queue or the log
-- was empty (or their statistics said so) must not read them whole once they hold a million rows.
-- (jit off: a sequential scan that remains, of the one-row control table, then costs more than
-- jit_above_cost.)
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $$
/*
 * Internal: the claim of a batch, _claim_event()'s checks for all its events in one statement
 * whatever their number; _claim_events (sql) and _destination_claim_many (the broker kinds) add
 * what their kind needs. Returns the rows that can be claimed now, locked until the caller's
 * transaction ends, each with its place in ids (ord: its first one for an id listed twice), in
 * no order: the callers order by ord after their own joins (a sort here too cost 1.3k an event).
 * An event that cannot be claimed (skipped: dispatch paused, the row gone, locked by someone else
 * or not yet due, its channel inactive or paused, the dispatch rule no longer offering it to this
 * node, its channel running one event at a time while another transaction holds that channel) has
 * no row and stays as it is. A replayed row (its attempt is recorded in pgrelay.log already:
 * _claim_event) is finished here, deleted in the same statement, and returned with replayed_log,
 * the log row that recorded it: nothing of it runs. timeout and handler are its channel's.
 */
#variable_conflict use_column
DECLARE
    m text := COALESCE(NULLIF(pg_catalog.current_setting('pg_relay.mode', true), ''), 'single');
    node integer := 0;
    leader boolean := false;
    ctx record;
BEGIN
    -- ids as a list from 1: array_position() below, which keeps their order, searches one
    -- dimension only, and a batch's ids of more dimensions are taken in their order
    IF pg_catalog.array_ndims(ids) > 1 OR pg_catalog.array_lower(ids, 1) <> 1 THEN
        ids := ARRAY(SELECT pg_catalog.unnest(ids));
    END IF;
    IF (SELECT k.paused FROM pgrelay.control k) THEN
        RETURN;
    END IF;
    IF m <> 'single' THEN
        SELECT * INTO ctx FROM pgrelay._dispatch_context();
        m := ctx.mode;
        node := ctx.node;
        leader := ctx.is_leader;
    END IF;
    RETURN QUERY
    WITH claimed AS MATERIALIZED (
        SELECT i.ord::integer AS ord, q.id, q.event_id, q.channel, q.action_type, q.payload, q.attempt,
               q.queued_at, q.key, q.publication_id, q.event_type, c.timeout, c.handler, c.concurrency_mode,
               (SELECT l.id FROM pgrelay.log l WHERE l.event_id = q.event_id AND l.queue_id = q.id LIMIT 1) AS log_id
        FROM pgrelay.queue q
        -- the row's place in ids, its first one if listed twice: a lookup in the array (a join
        -- with unnest(ids) was planned for 10 ids, as a nested loop comparing every pair: 1.6 us
        -- an event at 50)
        CROSS JOIN LATERAL (SELECT pg_catalog.array_position(ids, q.id) AS ord) i
        JOIN pgrelay.channels c ON c.channel = q.channel
        WHERE q.id = ANY (_claim_rows.ids) AND q.run_at <= pg_catalog.clock_timestamp() AND c.active AND NOT c.paused
          AND (m = 'single' OR pgrelay._dispatch_allowed(q.owner_node, q.node_restricted, m, node, leader))
        FOR UPDATE OF q SKIP LOCKED
    ), replayed AS (
        -- finished by the claim: nothing of it runs (its outcome stands as recorded)
        DELETE FROM pgrelay.queue q WHERE q.id IN (SELECT x.id FROM claimed x WHERE x.log_id IS NOT NULL)
        RETURNING q.id
    )
    SELECT x.ord, x.id, x.event_id, x.channel, x.action_type, x.payload, x.attempt, x.queued_at, x.key,
           x.publication_id, x.event_type, x.timeout, x.handler, CASE WHEN rp.id IS NOT NULL THEN x.log_id END
    FROM claimed x
    LEFT JOIN replayed rp ON rp.id = x.id
    -- one event of a channel-mode channel in flight across every session: as _claim_event (a
    -- replayed row runs nothing and needs no lock). The lock is tried here, last, so that it is
    -- taken for the rows returned only.
    WHERE rp.id IS NOT NULL
       OR x.concurrency_mode = 'parallel'
       OR pg_catalog.pg_try_advisory_xact_lock(1885827585, pg_catalog.hashtext(x.channel));
END
$$;
COMMENT ON FUNCTION pgrelay._claim_rows(bigint[]) IS
    'Internal: claims the queue rows of a batch that can run now (the others are skipped), each with its place in the given ids; the claim of _claim_events and _destination_claim_many';

-- pgrelay._claim_events()
CREATE OR REPLACE FUNCTION pgrelay._claim_events(ids bigint[])
RETURNS TABLE (ord integer, queue_id bigint, channel text, action_type text, payload text, timeout interval,
               call text, refusal text, refusal_sqlstate text, replayed_log bigint, fn oid)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
-- As _claim_rows: generic plans (a custom plan takes longer to make than to run), no sequential
-- scans (the plan is kept for the session), no jit.
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $$
/*
 * _claim_event() for the events of a batch (process_batch), in one claim whatever their number:
 * the rows that can be claimed now (_claim_rows), locked until the caller's transaction ends, in
 * the order of ids (ord is the position in ids); the others are left out (skipped). Each handler
 * is looked up once per batch. A replayed row (its attempt is recorded already: _claim_event) is
 * finished by the claim and returned with replayed_log, the log row that recorded it: the batch
 * runs nothing of it.
 */
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH claimed AS MATERIALIZED (
        SELECT x.ord, x.queue_id, x.channel, x.action_type, x.payload, x.timeout, x.handler, x.replayed_log
        FROM pgrelay._claim_rows(_claim_events.ids) x
    ), handlers AS MATERIALIZED (
        SELECT c.handler, p.oid AS fn, p.prosecdef
        FROM (SELECT DISTINCT x.handler FROM claimed x WHERE x.handler IS NOT NULL) c
        CROSS JOIN LATERAL (SELECT pg_catalog.parse_ident(pg_catalog.left(c.handler, -6)) AS ident) h
        -- the handler by schema and name, as _claim_event finds it: one index probe each. (LIMIT
        -- 1, of a unique key, keeps the subquery apart: joined, the planner, which expects many
        -- handlers from a function, would hash every function of pg_proc that takes text.)
        LEFT JOIN LATERAL (
            SELECT f.oid, f.prosecdef FROM pg_catalog.pg_proc f
            WHERE f.proname = h.ident[2]::pg_catalog.name AND f.proargtypes = '25'::pg_catalog.oidvector
              AND f.pronamespace = pg_catalog.to_regnamespace(pg_catalog.quote_ident(h.ident[1]))::pg_catalog.oid
            LIMIT 1
        ) p ON true
    )
    SELECT x.ord, x.queue_id, x.channel, x.action_type, x.payload, x.timeout,
           CASE WHEN h.fn IS NOT NULL AND h.prosecdef THEN pg_catalog.left(x.handler, -6) END,
           CASE WHEN x.handler IS NULL THEN NULL
                WHEN h.fn IS NULL THEN pg_catalog.format('handler %s does not exist', x.handler)
                WHEN NOT h.prosecdef THEN pg_catalog.format('handler %s is not SECURITY DEFINER', x.handler)
           END,
           CASE WHEN x.handler IS NULL THEN NULL WHEN h.fn IS NULL THEN '42883'
                WHEN NOT h.prosecdef THEN '42501' END,
           x.replayed_log, h.fn
    FROM claimed x
    -- every claimed row is returned (_claim_rows took its channel's lock already)
    LEFT JOIN handlers h ON h.handler = x.handler
    ORDER BY x.ord;
END
$$;
COMMENT ON FUNCTION pgrelay._claim_events(bigint[]) IS
    'Claims the queue rows of a batch that can run now (the others are skipped), in the given order, with their handlers checked';

-- pgrelay._finish_attempts()
CREATE OR REPLACE FUNCTION pgrelay._finish_attempts(ids bigint[], results text[], errors text[], sqlstates text[],
                                          started timestamptz[], finished timestamptz[], details jsonb[])
RETURNS TABLE (queue_id bigint, outcome text, log_id bigint, retry_id bigint, retry_at timestamptz)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
-- Generic plans: a custom plan of this statement takes longer to make (0.3-0.4 ms) than to run.
-- No sequential scans: the plan is kept for the session, and one made while the queue was empty
-- (or its statistics said so) must not read the whole queue once it holds a million rows. (jit off:
-- a sequential scan that remains, of the one-row control table, then costs more than jit_above_cost.)
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $$
/*
 * Internal (_complete_events, _finish_held_many): _complete() for the events of a batch, in two
 * statements whatever their number: the claimed rows are deleted and their log rows made with the
 * attempts' results (the arrays are parallel, one element per event; details may be NULL for
 * none at all), then the log rows are written and the retry rows queued or the failures
 * recorded (_finish_rows). A row that is not there any more is an error (the caller claimed every
 * one of them in this transaction). One row per id, in the order of ids.
 */
#variable_conflict use_column
DECLARE
    n integer := 0;
    qs pgrelay.queue[];
    ls pgrelay.log[];
    retry_ids bigint[];
    node integer;
    last bigint;     -- the highest value of the id clock drawn
    settled boolean; -- every attempt finishes its event (no retry, no failure to record)
BEGIN
    -- parallel arrays: one element of each per id (a short one would read as NULLs). The checks
    -- are simple expressions, which PL/pgSQL evaluates without starting a statement.
    n := COALESCE(pg_catalog.cardinality(ids), 0);
    IF COALESCE(pg_catalog.cardinality(results), 0) <> n OR COALESCE(pg_catalog.cardinality(errors), 0) <> n
       OR COALESCE(pg_catalog.cardinality(sqlstates), 0) <> n OR COALESCE(pg_catalog.cardinality(started), 0) <> n
       OR COALESCE(pg_catalog.cardinality(finished), 0) <> n OR COALESCE(pg_catalog.cardinality(details), n) <> n THEN
        RAISE EXCEPTION 'a batch needs one result, error, sqlstate, start and finish per id'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- every result one of these (<@ holds no NULL element: a NULL result is refused too)
    IF NOT results <@ '{ok,partial,transient,timeout,permanent,cancelled,error}'::text[] THEN
        RAISE EXCEPTION 'invalid result in %', results
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use ok, partial, transient, timeout, permanent, cancelled or error.';
    END IF;
    -- The rows, deleted, and their log rows with the outcomes (_outcome: the retry decision).
    -- The log ids are drawn in this statement as notify_many() draws its ids: one value of the id
    -- clock per event, in the order of ids (r is evaluated once, row by row, whatever the join
    -- does with it), the wall clock looked at for the first and every 1024th (_id_clock_catch_up),
    -- made into ids with _next_id's arithmetic and this node's id, read once. So the log ids of a
    -- batch increase in the order its events ran, with no PL/pgSQL call per event.
    node := pgrelay._node_id();
    WITH r AS MATERIALIZED (
        SELECT r.*, CASE WHEN r.ord % 1024 = 1
                         THEN pgrelay._id_clock_catch_up(pg_catalog.nextval('pgrelay._id_clock'))
                         ELSE pg_catalog.nextval('pgrelay._id_clock') END AS v
        FROM ROWS FROM (pg_catalog.unnest(ids), pg_catalog.unnest(results), pg_catalog.unnest(errors),
                        pg_catalog.unnest(sqlstates), pg_catalog.unnest(started), pg_catalog.unnest(finished),
                        pg_catalog.unnest(details))
             WITH ORDINALITY AS r(id, result, error, sqlstate, started_at, finished_at, detail, ord)
    ), d AS (
        -- by = ANY: an index scan of the primary key, whatever the generic plan guesses of r
        DELETE FROM pgrelay.queue x
        WHERE x.id = ANY (_finish_attempts.ids)
        RETURNING x AS q, x.id, x.attempt, x.channel
    )
    -- In the order of ids (the rows sorted once, then aggregated in that order), so that the
    -- result needs no search of ids; settled: every outcome needs its log row only (ok, partial,
    -- cancelled), nearly every batch, whose rows _finish_rows then does not look at again: only
    -- the queue rows of the others are aggregated (qs), for their retry rows. An ok attempt needs
    -- nothing of its channel, and it is nearly every attempt: only another result reads the
    -- channel, in a subquery run for that row only (a join would look up every row's); a row whose
    -- channel is gone has no outcome (settled NULL) and is left out, which the count below refuses.
    SELECT pg_catalog.array_agg(s.q) FILTER (WHERE NOT s.settled),
           pg_catalog.array_agg(s.l) FILTER (WHERE s.settled IS NOT NULL), pg_catalog.max(s.v),
           pg_catalog.bool_and(s.settled)
    INTO qs, ls, last, settled
    FROM (SELECT d.q, r.v, e.outcome IN ('ok', 'partial', 'cancelled') AS settled,
                 pgrelay._log_row(d.q, ((r.v >> 12) << 22) | (node::bigint << 12) | (r.v & 4095),
                                  e.outcome, r.error, r.sqlstate, r.detail, r.started_at, r.finished_at,
                                  CASE WHEN e.outcome IN ('retry', 'timeout')
                                       THEN r.finished_at + (SELECT pgrelay._backoff(d.attempt, c.backoff_base,
                                                                                     c.backoff_max)
                                                             FROM pgrelay.channels c
                                                             WHERE c.channel = d.channel) END) AS l
          FROM d
          JOIN r ON r.id = d.id
          CROSS JOIN LATERAL (SELECT CASE WHEN r.result = 'ok' THEN 'ok'
                                          ELSE (SELECT pgrelay._outcome(r.result, r.sqlstate, d.attempt, c.max_attempts,
                                                                        c.retry_policy)
                                                FROM pgrelay.channels c WHERE c.channel = d.channel) END AS outcome) e
          ORDER BY r.ord) s;
    n := COALESCE(pg_catalog.cardinality(ls), 0);
    IF n <> COALESCE(pg_catalog.cardinality(ids), 0) THEN
        RAISE EXCEPTION 'only % of the % claimed queue rows of the batch are there', n, pg_catalog.cardinality(ids)
            USING ERRCODE = 'no_data_found';
    END IF;
    -- the id space's end, which _id_clock_catch_up checks, for the rows it did not see
    IF last >= 9007199254740992 THEN
        RAISE EXCEPTION 'pg_relay id space exhausted' USING ERRCODE = 'numeric_value_out_of_range';
    END IF;
    retry_ids := pgrelay._finish_rows(qs, ls, true, NOT settled);
    RETURN QUERY
    SELECT l.queue_id, l.outcome, l.id, retry_ids[l.ordinality::integer], l.retry_at
    FROM pg_catalog.unnest(ls) WITH ORDINALITY l
    ORDER BY l.ordinality;
END
$$;
COMMENT ON FUNCTION pgrelay._finish_attempts(bigint[], text[], text[], text[], timestamptz[], timestamptz[], jsonb[]) IS
    'Internal: writes the log rows of a batch''s attempts and finishes its claimed queue rows, in one statement';

-- pgrelay._complete_events()
CREATE OR REPLACE FUNCTION pgrelay._complete_events(ids bigint[], results text[], errors text[], sqlstates text[],
                                         started timestamptz[], finished timestamptz[])
RETURNS TABLE (queue_id bigint, outcome text, log_id bigint, retry_id bigint, retry_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * _complete() for the events of a batch of sql events (process_batch, through _batch_results):
 * their log rows written and their claimed rows finished in one statement (_finish_attempts).
 */
BEGIN
    RETURN QUERY SELECT * FROM pgrelay._finish_attempts(ids, results, errors, sqlstates, started, finished, NULL);
END
$$;
COMMENT ON FUNCTION pgrelay._complete_events(bigint[], text[], text[], text[], timestamptz[], timestamptz[]) IS
    'Writes the log rows of a batch''s attempts and finishes its claimed queue rows, in one statement';

-- pgrelay._finish_held_many()
CREATE OR REPLACE FUNCTION pgrelay._finish_held_many(ids bigint[], results text[], errors text[], sqlstates text[],
                                          started timestamptz[], details jsonb[])
RETURNS TABLE (queue_id bigint, outcome text, log_id bigint, retry_id bigint, retry_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * _finish_held() for the events of a batched held transaction (a broker's kind: the Processor
 * claimed them together, _destination_claim_many, and delivered them together): one log row per
 * attempt with its outcome (the retry decision, the channel's backoff) and detail, and each row
 * deleted and its retry queued or its failure recorded, in one statement whatever their number
 * (_finish_attempts), committed with the caller's transaction. The arrays are parallel, one
 * element per id (a start NULL: now); each attempt finishes now. One row per id, in the order of
 * ids.
 */
#variable_conflict use_column
DECLARE
    now_ts timestamptz := clock_timestamp();
    -- the starts, a NULL one now: simple expressions, no statement
    starts timestamptz[] := pg_catalog.array_replace(started, NULL, now_ts);
BEGIN
    IF 'infinity'::timestamptz = ANY (starts) OR '-infinity'::timestamptz = ANY (starts) THEN
        RAISE EXCEPTION 'started must hold finite times, not %', started
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- _finish_attempts returns its rows in the order of ids: kept by their ordinality
    RETURN QUERY
    SELECT f.queue_id, f.outcome, f.log_id, f.retry_id, f.retry_at FROM pgrelay._finish_attempts(
        ids, results, errors, sqlstates, starts,
        pg_catalog.array_fill(now_ts, ARRAY[COALESCE(pg_catalog.cardinality(ids), 0)]), details)
        WITH ORDINALITY f(queue_id, outcome, log_id, retry_id, retry_at, o)
    ORDER BY f.o;
END
$$;
COMMENT ON FUNCTION pgrelay._finish_held_many(bigint[], text[], text[], text[], timestamptz[], jsonb[]) IS
    'Writes the log rows of a batched held transaction''s attempts and finishes their claimed queue rows, in one statement';

-- pgrelay._gate_open()
CREATE OR REPLACE FUNCTION pgrelay._gate_open(channel text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * May an event of the channel start now? Not while dispatch is paused, or the channel is paused,
 * inactive or gone: what the claim checks, asked again by a batch between its events. PL/pgSQL,
 * which keeps the plan (a SQL function would be planned on every call). SELECT INTO rather than
 * RETURN (SELECT ...), whose query would be one more plan node over this one, run for the result
 * (4.8k instructions a call less, of 55k: docs/design/benchmark-notes.md).
 */
DECLARE
    is_open boolean;
BEGIN
    SELECT NOT k.paused AND COALESCE((SELECT c.active AND NOT c.paused FROM pgrelay.channels c
                                      WHERE c.channel = _gate_open.channel), false)
    INTO is_open
    FROM pgrelay.control k;
    RETURN is_open;
END
$$;
COMMENT ON FUNCTION pgrelay._gate_open(text) IS
    'Internal (process_batch): may an event of the channel start now (dispatch and the channel not paused, the channel active)?';

-- pgrelay._batch_results()
CREATE OR REPLACE FUNCTION pgrelay._batch_results(ids bigint[], done_ids bigint[], results text[], errors text[],
                                       sqlstates text[], started timestamptz[], finished timestamptz[],
                                       apart_ids bigint[], aparts pgrelay.process_result[])
RETURNS TABLE (id bigint, outcome text, log_id bigint, retry_id bigint, error text, sqlstate text,
               retry_at timestamptz)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (process_batch), once its handlers have run: finishes the events whose attempts ended
 * (done_ids, with the parallel arrays of their results: _complete_events) and returns one row per
 * id of the batch, in the order of ids: the finished attempt's, the one of an event finished apart
 * (apart_ids: replayed, or snoozed), or skipped for an event not claimed or not started.
 */
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT i.id, COALESCE(f.outcome, a.outcome, 'skipped'), COALESCE(f.log_id, a.log_id),
           COALESCE(f.retry_id, a.retry_id), COALESCE(e.err, a.error), COALESCE(e.state, a.sqlstate),
           COALESCE(f.retry_at, a.retry_at)
    FROM pg_catalog.unnest(ids) WITH ORDINALITY i(id, ord)
    LEFT JOIN pgrelay._complete_events(done_ids, results, errors, sqlstates, started, finished) f ON f.queue_id = i.id
    LEFT JOIN ROWS FROM (pg_catalog.unnest(done_ids), pg_catalog.unnest(errors), pg_catalog.unnest(sqlstates))
              AS e(id, err, state) ON e.id = i.id
    LEFT JOIN ROWS FROM (pg_catalog.unnest(apart_ids), pg_catalog.unnest(aparts))
              AS a(id, outcome, log_id, retry_id, error, sqlstate, retry_at) ON a.id = i.id
    ORDER BY i.ord;
END
$$;
COMMENT ON FUNCTION pgrelay._batch_results(bigint[], bigint[], text[], text[], text[], timestamptz[], timestamptz[],
                                           bigint[], pgrelay.process_result[]) IS
    'Internal (process_batch): finishes the attempts of a batch and returns one result row per id, in order';

-- pgrelay.process_batch()
CREATE OR REPLACE FUNCTION pgrelay.process_batch(ids bigint[])
RETURNS TABLE (id bigint, outcome text, log_id bigint, retry_id bigint, error text, sqlstate text,
               retry_at timestamptz)
LANGUAGE plpgsql VOLATILE AS $$
/*
 * process_one() for several sql events in the caller's transaction: one result row per id, in
 * the order of ids. Each handler runs in a subtransaction of its own, so a failure or a timeout
 * is that event's outcome only, and after each handler the session is put back as it was (as in
 * process_one). The events are claimed together at the start and finished together at the end
 * (two statements each, whatever the number of events), so a rollback anywhere finishes none of
 * them: they are offered again, and since a handler's work commits with its event, nothing runs
 * twice. outcome is skipped for an event that could not be claimed, or was not started (below),
 * and replayed for one whose attempt was recorded already (finished by the claim without running:
 * _claim_event; log_id is the row that recorded it).
 *
 * Timeouts. statement_timeout is one timer for the whole statement, so each handler's channel
 * timeout is kept in two ways: an event is started only while the statement has at least its
 * channel's timeout left, so the timer can only end a handler that has run for its whole timeout
 * (that event is logged as a timeout, and the batch starts no more events: the timer is spent);
 * and a handler that returns after running longer than its timeout is rolled back and logged as
 * a timeout too. The Processor sets statement_timeout to the channel's timeout plus a window (the
 * time the batch may keep starting events). A cancel before the timer ran out is someone else's
 * (the Processor stopping, an admin): re-raised, it rolls the batch back unfinished, as in
 * process_one.
 *
 * The gate. The events are claimed at the start; before starting each one the batch asks again
 * (_gate_open: before the first event of each channel, and at least every 10 ms) whether
 * dispatch or the event's channel has been paused, or the channel made inactive, since, and
 * leaves the events it may no longer start queued (skipped): no event starts more than 10 ms
 * after pause() has committed.
 *
 * Its steps are helpers: the claim (_claim_events), the gate (_gate_open), each handler's run
 * (_run_handler, shared with process_one), the finish and the result (_snooze, _batch_results
 * and _complete_events), the settings (_settings_saved and _settings_restore, inlined, shared with
 * process_one).
 */
#variable_conflict use_column
DECLARE
    -- Types schema-qualified, as in process_one: the declarations are resolved on the caller's
    -- search_path, before the pin. keep[1]: the caller's search_path, keep[2]: its
    -- statement_timeout (_settings_saved).
    keep pg_catalog.text[] := pgrelay._settings_saved();
    -- as in process_one: never before the statement's timer started
    timer_start pg_catalog.timestamptz := CASE WHEN pg_catalog.pg_current_xact_id_if_assigned() IS NULL
                                    THEN pg_catalog.now() ELSE pg_catalog.statement_timestamp() END;
    pinned pg_catalog.text := pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    timer pg_catalog.interval := keep[2]::pg_catalog.interval;
    c pg_catalog.record;
    spent pg_catalog.bool := false;   -- the statement's timer ended a handler: start nothing more
    checked pg_catalog.timestamptz;      -- when the gate was last asked
    open_channel pg_catalog.text;        -- ... and the channel it was open for (NULL: closed)
    began pg_catalog.timestamptz;
    h pg_catalog.text[];   -- what became of the handler (_run_handler)
    done_ids pg_catalog.int8[] := '{}';
    results pg_catalog.text[] := '{}';
    errs pg_catalog.text[] := '{}';
    states pg_catalog.text[] := '{}';
    starts pg_catalog.timestamptz[] := '{}';
    ends pg_catalog.timestamptz[] := '{}';
    handlers_ran pg_catalog.bool := false;  -- a handler ran in this batch: the next one is read again
    -- the events finished apart, by the claim (replayed) or at once (snoozed: _snooze)
    apart_ids pg_catalog.int8[] := '{}';
    aparts pgrelay.process_result[] := '{}';
BEGIN
    FOR c IN SELECT * FROM pgrelay._claim_events(process_batch.ids) LOOP
        -- replayed: finished by the claim, nothing runs (its outcome stands as recorded)
        IF c.replayed_log IS NOT NULL THEN
            apart_ids := apart_ids || c.queue_id;
            aparts := aparts || ROW('replayed', c.replayed_log, NULL, NULL, NULL, NULL)::pgrelay.process_result;
            CONTINUE;
        END IF;
        IF c.action_type <> 'sql' THEN
            RAISE EXCEPTION 'event % is a "%" event; process_batch() runs sql actions only', c.queue_id, c.action_type
                USING ERRCODE = 'wrong_object_type',
                      HINT = 'notify events are delivered by the Processor.';
        END IF;
        -- not started (skipped, stays queued): the timer is spent, or could end it before its timeout
        CONTINUE WHEN spent
            OR (timer > interval '0' AND clock_timestamp() - timer_start + c.timeout > timer);
        -- The gate may have closed since the claim (pause(), pause(channel), the channel made
        -- inactive): asked again before an event of another channel, and at least every 10 ms,
        -- so that no event starts later than that after it closed.
        IF c.channel IS DISTINCT FROM open_channel OR clock_timestamp() - checked >= interval '10 ms' THEN
            checked := clock_timestamp();
            open_channel := CASE WHEN pgrelay._gate_open(c.channel) THEN c.channel END;
        END IF;
        CONTINUE WHEN open_channel IS NULL;
        began := clock_timestamp();
        IF c.call IS NULL THEN
            h := ARRAY['error', c.refusal, c.refusal_sqlstate];
        ELSE
            -- checked at the claim, before any handler ran; after one ran, read again
            h := pgrelay._run_handler(c.call, CASE WHEN handlers_ran THEN c.fn END, c.payload, c.channel, c.timeout,
                                      timer_start, timer, true);
            handlers_ran := true;
            spent := h[5] IS NOT NULL;
            -- as in process_one: the session's own search_path is back until the pin, so the
            -- call that pins it names its schema (_settings_restore)
            RESET ALL;
            pinned := pgrelay._settings_restore(keep);
        END IF;
        IF h[1] = 'snooze' THEN
            -- finished now, alone: the row goes back to the queue for later (_snooze)
            apart_ids := apart_ids || c.queue_id;
            aparts := aparts || pgrelay._snooze(c.queue_id, h[2], h[4], began);
            CONTINUE;
        END IF;
        done_ids := done_ids || c.queue_id;
        results := results || h[1];
        errs := errs || h[2];
        states := states || h[3];
        starts := starts || began;
        ends := ends || clock_timestamp();
    END LOOP;
    PERFORM pgrelay._forget_handler_state();

    RETURN QUERY SELECT * FROM pgrelay._batch_results(ids, done_ids, results, errs, states, starts, ends, apart_ids, aparts);
    pinned := set_config('search_path', keep[1], false);
END
$$;
COMMENT ON FUNCTION pgrelay.process_batch(bigint[]) IS
    'Runs several sql events in the caller''s transaction, each handler isolated; one result row per id';
