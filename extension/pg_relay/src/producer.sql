/* extension/pg_relay/src/producer.sql: what producers call: notify */

-- pgrelay._enqueue()
CREATE OR REPLACE FUNCTION pgrelay._enqueue(channel text, payload text, run_at timestamptz, id bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal (notify, the table-change trigger; both pin search_path, so this function need not
 * pay for a SET clause of its own): checks and queues one event with the given id in the
 * caller's transaction. Returns the id.
 *
 * The common case is one statement: the INSERT reads the channel and inserts the row only when
 * the channel exists, is active and takes a payload of this size. Only when it inserted nothing
 * do the checks below run, to say why.
 */
DECLARE
    c pgrelay.channels;
BEGIN
    -- infinity would never be due and -infinity would jump every queue: only real times.
    IF _enqueue.run_at IS NOT NULL AND NOT pg_catalog.isfinite(_enqueue.run_at) THEN
        RAISE EXCEPTION 'run_at must be a finite time, not %', _enqueue.run_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF _enqueue.payload IS NOT NULL THEN
        INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, owner_node, node_restricted,
                                   run_at, queued_at)
        SELECT _enqueue.id, _enqueue.id, x.channel, x.action_type, _enqueue.payload, pgrelay._node_id(),
               x.node_restricted, COALESCE(_enqueue.run_at, pg_catalog.now()), pg_catalog.now()
        FROM pgrelay.channels x
        WHERE x.channel = _enqueue.channel AND x.active
          AND pg_catalog.octet_length(_enqueue.payload) <= x.max_payload_bytes;
        IF FOUND THEN
            RETURN _enqueue.id;
        END IF;
    END IF;

    IF _enqueue.channel IS NULL THEN
        RAISE EXCEPTION 'channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF _enqueue.payload IS NULL THEN
        RAISE EXCEPTION 'payload must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass an empty string for an event without a payload.';
    END IF;
    SELECT * INTO c FROM pgrelay.channels x WHERE x.channel = _enqueue.channel;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'channel "%" does not exist', pgrelay._show(_enqueue.channel)
            USING ERRCODE = 'undefined_object',
                  HINT = 'Create it with pgrelay.register().';
    END IF;
    IF NOT c.active THEN
        RAISE EXCEPTION 'channel "%" is not active', _enqueue.channel
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RAISE EXCEPTION 'payload of % bytes is larger than the % bytes channel "%" accepts',
                    pg_catalog.octet_length(_enqueue.payload), c.max_payload_bytes, _enqueue.channel
        USING ERRCODE = 'program_limit_exceeded',
              HINT = 'An admin can raise the limit: pgrelay.register(channel, max_payload_bytes => ...).';
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
 */
BEGIN
    RETURN pgrelay._enqueue(notify.channel, notify.payload, notify.run_at, pgrelay._next_id());
END
$$;
COMMENT ON FUNCTION pgrelay.notify(text, text, timestamptz) IS
    'Queues an event on an active channel in the caller''s transaction; returns its id';
