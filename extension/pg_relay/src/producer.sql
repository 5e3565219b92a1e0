/* extension/pg_relay/src/producer.sql: what producers call: notify */

-- pgrelay.notify()
CREATE OR REPLACE FUNCTION pgrelay.notify(channel text, payload text, run_at timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Queues one event in the caller's transaction: a rollback discards it, a commit guarantees it.
 * Returns the queue id, which is also the event id.
 */
DECLARE
    c pgrelay.channels;
    v bigint;
BEGIN
    IF notify.channel IS NULL THEN
        RAISE EXCEPTION 'channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF notify.payload IS NULL THEN
        RAISE EXCEPTION 'payload must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass an empty string for an event without a payload.';
    END IF;
    SELECT * INTO c FROM pgrelay.channels x WHERE x.channel = notify.channel;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'channel "%" does not exist', pgrelay._show(notify.channel)
            USING ERRCODE = 'undefined_object',
                  HINT = 'Create it with pgrelay.register().';
    END IF;
    IF NOT c.active THEN
        RAISE EXCEPTION 'channel "%" is not active', notify.channel
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF octet_length(notify.payload) > c.max_payload_bytes THEN
        RAISE EXCEPTION 'payload of % bytes is larger than the % bytes channel "%" accepts',
                        octet_length(notify.payload), c.max_payload_bytes, notify.channel
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'An admin can raise the limit: pgrelay.register(channel, max_payload_bytes => ...).';
    END IF;
    -- infinity would never be due and -infinity would jump every queue: only real times.
    IF notify.run_at IS NOT NULL AND NOT isfinite(notify.run_at) THEN
        RAISE EXCEPTION 'run_at must be a finite time, not %', notify.run_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v := pgrelay._next_id();
    INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, node_restricted,
                               run_at, queued_at)
    VALUES (v, v, c.channel, c.action_type, notify.payload, c.node_restricted,
            COALESCE(notify.run_at, now()), now());
    RETURN v;
END
$$;
COMMENT ON FUNCTION pgrelay.notify(text, text, timestamptz) IS
    'Queues an event on an active channel in the caller''s transaction; returns its id';
