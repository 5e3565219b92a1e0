/* extension/pg_relay/src/producer.sql: what producers call: notify */

-- pgrelay._enqueue_refused()
CREATE OR REPLACE FUNCTION pgrelay._enqueue_refused(channel text, payload text, run_at timestamptz)
RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
/*
 * Internal (notify and _enqueue, which pin search_path, call it when their INSERT queued nothing):
 * raises the error that says why the event was refused. Never returns.
 */
DECLARE
    c pgrelay.channels;
BEGIN
    -- infinity would never be due and -infinity would jump every queue: only real times.
    IF _enqueue_refused.run_at IS NOT NULL AND NOT pg_catalog.isfinite(_enqueue_refused.run_at) THEN
        RAISE EXCEPTION 'run_at must be a finite time, not %', _enqueue_refused.run_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF _enqueue_refused.channel IS NULL THEN
        RAISE EXCEPTION 'channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF _enqueue_refused.payload IS NULL THEN
        RAISE EXCEPTION 'payload must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass an empty string for an event without a payload.';
    END IF;
    SELECT * INTO c FROM pgrelay.channels x WHERE x.channel = _enqueue_refused.channel;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'channel "%" does not exist', pgrelay._show(_enqueue_refused.channel)
            USING ERRCODE = 'undefined_object',
                  HINT = 'Create it with pgrelay.register().';
    END IF;
    IF NOT c.active THEN
        RAISE EXCEPTION 'channel "%" is not active', _enqueue_refused.channel
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RAISE EXCEPTION 'payload of % bytes is larger than the % bytes channel "%" accepts',
                    pg_catalog.octet_length(_enqueue_refused.payload), c.max_payload_bytes, _enqueue_refused.channel
        USING ERRCODE = 'program_limit_exceeded',
              HINT = 'An admin can raise the limit: pgrelay.register(channel, max_payload_bytes => ...).';
END
$$;
COMMENT ON FUNCTION pgrelay._enqueue_refused(text, text, timestamptz) IS
    'Internal: the error of an event notify() or _enqueue() could not queue';

-- pgrelay._enqueue()
CREATE OR REPLACE FUNCTION pgrelay._enqueue(channel text, payload text, run_at timestamptz, id bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal (the table-change trigger, which pins search_path and needs the event id before it
 * writes the payload): checks and queues one event with the given id in the caller's
 * transaction. Returns the id. notify() runs the same INSERT itself (see there).
 *
 * One statement: the INSERT reads the channel and inserts the row only when the channel exists,
 * is active and takes a payload of this size, and run_at is a real time. Only when it inserted
 * nothing does _enqueue_refused() say why.
 */
BEGIN
    INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, owner_node, node_restricted,
                               run_at, queued_at)
    SELECT _enqueue.id, _enqueue.id, x.channel, x.action_type, _enqueue.payload, pgrelay._node_id(),
           x.node_restricted, COALESCE(_enqueue.run_at, pg_catalog.now()), pg_catalog.now()
    FROM pgrelay.channels x
    WHERE x.channel = _enqueue.channel AND x.active
      AND pg_catalog.octet_length(_enqueue.payload) <= x.max_payload_bytes
      AND (_enqueue.run_at IS NULL OR pg_catalog.isfinite(_enqueue.run_at));
    IF FOUND THEN
        RETURN _enqueue.id;
    END IF;
    RETURN pgrelay._enqueue_refused(_enqueue.channel, _enqueue.payload, _enqueue.run_at);
END
$$;
COMMENT ON FUNCTION pgrelay._enqueue(text, text, timestamptz, bigint) IS
    'Internal: checks an event and queues it with the given id in the caller''s transaction';

-- pgrelay.notify()
CREATE OR REPLACE FUNCTION pgrelay.notify(channel text, payload text, run_at timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Queues one event in the caller's transaction: a rollback discards it, a commit guarantees it.
 * Returns the queue id, which is also the event id.
 *
 * Every producer runs this once per event, so its common case (no run_at) does in its own body
 * what _next_id() and _enqueue() do, with their statements copied (a change to one is a change to
 * both): each nested PL/pgSQL call, and each expression a statement's plan holds, costs a share
 * of a notify measured in percent (docs/benchmarks.md). The id: one nextval of the clock and one
 * test that sends the rare cases to _id_clock_catch_up(); then the one INSERT, and
 * _enqueue_refused() only when it queued nothing. An event with a run_at goes through _enqueue().
 */
DECLARE
    v bigint := pg_catalog.nextval('pgrelay._id_clock');
BEGIN
    IF v < (pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint
            - 1767225600000) * 4096 - 1048576
       OR v >= 9007199254740992 THEN
        v := pgrelay._id_clock_catch_up(v);
    END IF;
    v := ((v >> 12) << 22) | (pgrelay._node_id()::bigint << 12) | (v & 4095);
    IF notify.run_at IS NOT NULL THEN
        RETURN pgrelay._enqueue(notify.channel, notify.payload, notify.run_at, v);
    END IF;
    INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, owner_node, node_restricted,
                               run_at, queued_at)
    SELECT v, v, x.channel, x.action_type, notify.payload, pgrelay._node_id(),
           x.node_restricted, pg_catalog.now(), pg_catalog.now()
    FROM pgrelay.channels x
    WHERE x.channel = notify.channel AND x.active
      AND pg_catalog.octet_length(notify.payload) <= x.max_payload_bytes;
    IF FOUND THEN
        RETURN v;
    END IF;
    RETURN pgrelay._enqueue_refused(notify.channel, notify.payload, NULL);
END
$$;
COMMENT ON FUNCTION pgrelay.notify(text, text, timestamptz) IS
    'Queues an event on an active channel in the caller''s transaction; returns its id';
