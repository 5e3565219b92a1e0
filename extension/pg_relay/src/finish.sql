/* extension/pg_relay/src/finish.sql: finishing an event: claim, log, mark done, and process_one for sql actions */

-- pgrelay._queue_claim()
CREATE OR REPLACE FUNCTION pgrelay._queue_claim(id bigint)
RETURNS TABLE (queue_id bigint, event_id bigint, channel text, action_type text, payload text,
               attempt integer, max_attempts integer, timeout_ms integer, handler text,
               queued_at timestamptz, run_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Locks the row until the caller's transaction ends and re-validates it. Returns no row (the event
 * is skipped, never failed) when dispatch is paused, or the row is gone, locked by someone else,
 * not yet due, its channel is missing, inactive or paused, the dispatch rule no longer offers it
 * to this node (its ownership or this node's leadership changed since it was fetched), or its
 * channel runs one event at a time and another transaction holds that channel. So an event the
 * gate no longer allows is never started, whatever a Processor fetched before the gate closed.
 */
#variable_conflict use_column
DECLARE
    q pgrelay.queue;
    c pgrelay.channels;
    ctx record;
BEGIN
    IF (SELECT k.paused FROM pgrelay.control k) THEN
        RETURN;
    END IF;
    SELECT * INTO q FROM pgrelay.queue x WHERE x.id = _queue_claim.id FOR UPDATE SKIP LOCKED;
    IF NOT FOUND OR q.run_at > now() THEN
        RETURN;
    END IF;
    SELECT * INTO c FROM pgrelay.channels y WHERE y.channel = q.channel;
    IF NOT FOUND OR NOT c.active OR c.paused THEN
        RETURN;
    END IF;
    -- single mode (no setting, or the Processor's default) offers every row: skip the rule.
    IF COALESCE(current_setting('pg_relay.mode', true), '') NOT IN ('', 'single') THEN
        SELECT * INTO ctx FROM pgrelay._dispatch_context();
        IF NOT pgrelay._dispatch_allowed(q.owner_node, q.node_restricted, ctx.mode, ctx.node, ctx.is_leader) THEN
            RETURN;
        END IF;
    END IF;
    -- One event of the channel in flight across every session of this database: the lock is
    -- transaction-scoped, so it covers process_one() and the Processor's held transaction alike.
    IF c.concurrency_mode = 'channel'
       AND NOT pg_try_advisory_xact_lock(1885827585, hashtext(q.channel)) THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT q.id, q.event_id, q.channel, q.action_type, q.payload, q.attempt,
                        c.max_attempts, (date_part('epoch', c.timeout) * 1000)::integer,
                        c.handler, q.queued_at, q.run_at;
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

-- pgrelay._log_attempt()
CREATE OR REPLACE FUNCTION pgrelay._log_attempt(q pgrelay.queue, result text, error text, sqlstate text,
                                     started_at timestamptz, detail jsonb, retry_at timestamptz)
RETURNS pgrelay.log
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal: writes the one audit row of an attempt on the locked row q and takes the retry
 * decision, once, for everybody: result ok/partial/cancelled finish the event; permanent fails
 * it; transient and timeout retry it until the channel's max_attempts, then fail it; error is a
 * handler's error, classified from its SQLSTATE by the channel's retry_policy. The row's
 * retry_at is the caller's (a provider's Retry-After) or now + the channel's backoff.
 */
DECLARE
    c pgrelay.channels;
    l pgrelay.log;
BEGIN
    IF result IS NULL OR result NOT IN ('ok', 'partial', 'transient', 'timeout', 'permanent', 'cancelled', 'error') THEN
        RAISE EXCEPTION 'invalid result "%"', result
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use ok, partial, transient, timeout, permanent, cancelled or error.';
    END IF;
    -- A retry at infinity would never be due, one at -infinity would jump every queue; a log row
    -- must say when its attempt started.
    IF NOT isfinite(COALESCE(_log_attempt.retry_at, now())) THEN
        RAISE EXCEPTION 'retry_at must be a finite time, not %', _log_attempt.retry_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT isfinite(COALESCE(started_at, now())) THEN
        RAISE EXCEPTION 'started_at must be a finite time, not %', started_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO c FROM pgrelay.channels y WHERE y.channel = q.channel;
    IF result = 'error' THEN
        result := pgrelay._classify_error(sqlstate, c.retry_policy);
    END IF;

    l.outcome := CASE
        WHEN result IN ('ok', 'partial', 'cancelled') THEN result
        WHEN result = 'permanent' THEN 'failed'
        WHEN q.attempt >= COALESCE(c.max_attempts, 1) THEN 'failed'
        WHEN result = 'timeout' THEN 'timeout'
        ELSE 'retry'
    END;
    IF l.outcome IN ('retry', 'timeout') THEN
        l.retry_at := COALESCE(_log_attempt.retry_at,
                               clock_timestamp() + pgrelay._backoff(q.attempt, c.backoff_base, c.backoff_max));
    END IF;
    INSERT INTO pgrelay.log (id, queue_id, event_id, channel, action_type, payload, attempt, outcome,
                             error, sqlstate, detail, node_id, queued_at, started_at, finished_at, retry_at)
    VALUES (pgrelay._next_id(), q.id, q.event_id, q.channel, q.action_type, q.payload, q.attempt,
            l.outcome, error, sqlstate, detail, pgrelay._this_node(), q.queued_at,
            COALESCE(started_at, clock_timestamp()), clock_timestamp(), l.retry_at)
    RETURNING * INTO l;
    RETURN l;
END
$$;
COMMENT ON FUNCTION pgrelay._log_attempt(pgrelay.queue, text, text, text, timestamptz, jsonb, timestamptz) IS
    'Internal: writes the audit row of one attempt and resolves its outcome';

-- pgrelay._settle()
CREATE OR REPLACE FUNCTION pgrelay._settle(q pgrelay.queue, l pgrelay.log) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal: finishes the locked row q as its log row l says: deletes it, and inserts the next
 * attempt (same event_id, attempt + 1, run_at = l.retry_at) for retry/timeout, or records the
 * event in failed_events for failed. Returns the id of the retry row, or NULL.
 */
DECLARE
    v bigint;
BEGIN
    DELETE FROM pgrelay.queue x WHERE x.id = q.id;

    IF l.outcome IN ('retry', 'timeout') THEN
        v := pgrelay._next_id();
        INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, owner_node,
                                   node_restricted, attempt, run_at, queued_at, last_error)
        VALUES (v, q.event_id, q.channel, q.action_type, q.payload, q.owner_node,
                q.node_restricted, q.attempt + 1, l.retry_at, q.queued_at, l.error);
        RETURN v;
    ELSIF l.outcome = 'failed' THEN
        INSERT INTO pgrelay.failed_events AS f (event_id, channel, action_type, payload, attempts,
                                                error, sqlstate, log_id, node_id, queued_at, failed_at)
        VALUES (q.event_id, q.channel, q.action_type, q.payload, q.attempt, l.error, l.sqlstate,
                l.id, l.node_id, q.queued_at, l.finished_at)
        ON CONFLICT (event_id) DO UPDATE
            SET attempts = EXCLUDED.attempts, error = EXCLUDED.error, sqlstate = EXCLUDED.sqlstate,
                log_id = EXCLUDED.log_id, node_id = EXCLUDED.node_id, failed_at = EXCLUDED.failed_at;
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgrelay._settle(pgrelay.queue, pgrelay.log) IS
    'Internal: deletes a finished queue row and queues its retry or records its failure';

-- pgrelay._write_log()
CREATE OR REPLACE FUNCTION pgrelay._write_log(queue_id bigint, result text, error text DEFAULT NULL,
                                   sqlstate text DEFAULT NULL, started_at timestamptz DEFAULT NULL,
                                   detail jsonb DEFAULT NULL, retry_at timestamptz DEFAULT NULL,
                                   OUT log_id bigint, OUT outcome text, OUT next_run_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Step 2 of 3 (claim, log, mark done) of the Processor's held transaction: writes the audit row of
 * this attempt on a claimed row and returns the resolved outcome and, for a retry, when. A second
 * log row for the same attempt is refused.
 */
DECLARE
    q pgrelay.queue;
    l pgrelay.log;
BEGIN
    IF result IS NULL OR result NOT IN ('ok', 'partial', 'transient', 'timeout', 'permanent', 'cancelled', 'error') THEN
        RAISE EXCEPTION 'invalid result "%"', result
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use ok, partial, transient, timeout, permanent, cancelled or error.';
    END IF;
    q := pgrelay._lock_claimed(queue_id);
    IF EXISTS (SELECT 1 FROM pgrelay.log x WHERE x.event_id = q.event_id AND x.queue_id = q.id) THEN
        RAISE EXCEPTION 'the log row of queue row % is written already', q.id
            USING ERRCODE = 'unique_violation';
    END IF;
    l := pgrelay._log_attempt(q, result, error, sqlstate, started_at, detail, retry_at);
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
 * Step 3 of 3: finishes a claimed row as its log row says (see _settle). Returns the id of the
 * retry row, or NULL. A row without its log row is refused.
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
    RETURN pgrelay._settle(q, l);
END
$$;
COMMENT ON FUNCTION pgrelay._queue_mark_done(bigint) IS
    'Finishes a claimed queue row according to its log row; returns the retry row id or NULL';

-- pgrelay._complete()
CREATE OR REPLACE FUNCTION pgrelay._complete(queue_id bigint, result text, error text DEFAULT NULL,
                                  sqlstate text DEFAULT NULL, started_at timestamptz DEFAULT NULL,
                                  OUT log_id bigint, OUT outcome text, OUT retry_id bigint,
                                  OUT retry_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Steps 2 and 3 at once, for a caller that claimed the row in this same statement
 * (process_one): the row is locked and read once, and nothing has to be looked up again.
 */
DECLARE
    q pgrelay.queue;
    l pgrelay.log;
BEGIN
    q := pgrelay._lock_claimed(queue_id);
    l := pgrelay._log_attempt(q, result, error, sqlstate, started_at, NULL, NULL);
    log_id := l.id;
    outcome := l.outcome;
    retry_id := pgrelay._settle(q, l);
    retry_at := l.retry_at;
END
$$;
COMMENT ON FUNCTION pgrelay._complete(bigint, text, text, text, timestamptz) IS
    'Writes the log row of an attempt and finishes the claimed queue row, in one call';

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
    UPDATE pgrelay.queue x SET run_at = _queue_defer.run_at WHERE x.id = queue_id;
END
$$;
COMMENT ON FUNCTION pgrelay._queue_defer(bigint, timestamptz) IS
    'Postpones a claimed queue row without spending an attempt (rate limits)';

-- pgrelay.process_one()
CREATE OR REPLACE FUNCTION pgrelay.process_one(id bigint, OUT outcome text, OUT log_id bigint,
                                    OUT retry_id bigint, OUT error text, OUT sqlstate text,
                                    OUT retry_at timestamptz)
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Claims the row, runs the channel's handler with the payload inside a subtransaction (so a
 * failing handler cannot take the bookkeeping with it), writes the log row and finishes the row.
 * outcome is skipped when the claim fails, else the log row's outcome; a failed attempt also
 * returns its error and SQLSTATE, and retry_at when it will run again.
 *
 * The channel timeout reaches the handler through statement_timeout: the Processor sets it to the
 * channel's timeout before this statement, the cancel lands inside the handler, is caught here and
 * logged as a timeout; the connection stays usable. Any other cancel ends the statement with the
 * event unfinished (no attempt spent).
 *
 * Security. The handler is SECURITY DEFINER (checked by _handler_sql on every call), so it runs
 * with its owner's rights; this function is SECURITY INVOKER so that it adds none of its own. It
 * runs with search_path pinned to pg_catalog, pg_temp, and so does the handler unless it sets its
 * own. Nothing the handler does to the session survives it: RESET ALL afterwards, then the
 * settings this call began with are put back (search_path, statement_timeout, the pg_relay.*
 * settings, client_connection_check_interval and the date and time formats). The pin is set
 * here rather than with a SET clause because a SET clause would hide the caller's search_path;
 * until it is set, only the pg_catalog-qualified calls and types of the DECLARE section are
 * looked up.
 */
DECLARE
    -- Every type here is schema-qualified: PL/pgSQL resolves the declarations when it compiles the
    -- function, on the caller's search_path, before the pin below. A type of that name in a schema
    -- listed before pg_catalog (a domain public.text whose CHECK calls its owner's code, say)
    -- would otherwise run as the caller for each value assigned.
    keep_path pg_catalog.text := pg_catalog.current_setting('search_path');
    keep_timeout pg_catalog.text := pg_catalog.current_setting('statement_timeout');
    keep_mode pg_catalog.text := pg_catalog.current_setting('pg_relay.mode', true);
    keep_leader pg_catalog.text := pg_catalog.current_setting('pg_relay.is_leader', true);
    keep_check pg_catalog.text := pg_catalog.current_setting('client_connection_check_interval');
    keep_tz pg_catalog.text := pg_catalog.current_setting('TimeZone');
    keep_datestyle pg_catalog.text := pg_catalog.current_setting('DateStyle');
    keep_intervalstyle pg_catalog.text := pg_catalog.current_setting('IntervalStyle');
    pinned pg_catalog.text := pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    c pg_catalog.record;
    started pg_catalog.timestamptz;
    result pg_catalog.text := 'ok';
    state pg_catalog.text; -- sqlstate cannot be set inside the handler: there it names the error's SQLSTATE
    l pg_catalog.record;
BEGIN
    SELECT * INTO c FROM pgrelay._queue_claim(process_one.id);
    IF NOT FOUND THEN
        outcome := 'skipped';
        PERFORM set_config('search_path', keep_path, true);
        RETURN;
    END IF;
    IF c.action_type <> 'sql' THEN
        RAISE EXCEPTION 'event % is a "%" event; process_one() runs sql actions only', c.queue_id, c.action_type
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'notify events are delivered by the Processor.';
    END IF;

    started := clock_timestamp();
    BEGIN
        EXECUTE format('SELECT %s($1)', pgrelay._handler_sql(c.handler)) USING c.payload;
    EXCEPTION WHEN query_canceled THEN
        -- The channel's timeout is statement_timeout; a cancel before it ran out is someone else's
        -- (the Processor stopping after its shutdown timeout, an admin's pg_cancel_backend), not
        -- the handler's failure: re-raised, it rolls the event back unfinished, and it is offered
        -- again later without spending an attempt. Note that the timer starts with the
        -- statement's transaction (the Bind of the Processor's prepared statement, whose planning
        -- comes before statement_timestamp(), the Execute): measured from statement_timestamp(),
        -- a real timeout looked a little short of statement_timeout and was re-raised.
        IF keep_timeout::interval = interval '0'
           OR clock_timestamp() - now() < keep_timeout::interval THEN
            RAISE;
        END IF;
        GET STACKED DIAGNOSTICS error = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
        result := 'error';
    WHEN OTHERS OR assert_failure THEN
        GET STACKED DIAGNOSTICS error = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
        result := 'error';
    END;
    sqlstate := state;
    RESET ALL;
    PERFORM set_config('search_path', 'pg_catalog, pg_temp', true),
            set_config('statement_timeout', keep_timeout, false),
            set_config('pg_relay.mode', COALESCE(keep_mode, ''), false),
            set_config('pg_relay.is_leader', COALESCE(keep_leader, ''), false),
            set_config('client_connection_check_interval', keep_check, false),
            set_config('TimeZone', keep_tz, false),
            set_config('DateStyle', keep_datestyle, false),
            set_config('IntervalStyle', keep_intervalstyle, false);

    SELECT * INTO l FROM pgrelay._complete(c.queue_id, result, error, sqlstate, started);
    outcome := l.outcome;
    log_id := l.log_id;
    retry_id := l.retry_id;
    retry_at := l.retry_at;
    PERFORM set_config('search_path', keep_path, false);
END
$$;
COMMENT ON FUNCTION pgrelay.process_one(bigint) IS
    'Runs one sql event end to end; returns skipped, ok, retry, timeout or failed';
