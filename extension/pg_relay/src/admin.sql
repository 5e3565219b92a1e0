/* extension/pg_relay/src/admin.sql: administration: channels, pause/resume, reload, failed events, retention */

-- pgrelay.request_reload()
CREATE OR REPLACE FUNCTION pgrelay.request_reload() RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    UPDATE pgrelay.control
    SET reload_generation = reload_generation + 1, reload_requested_at = now()
    RETURNING reload_generation
$$;
COMMENT ON FUNCTION pgrelay.request_reload() IS
    'Asks every Processor to reload its configuration and channel settings; returns the new generation';

-- pgrelay.pause()
CREATE OR REPLACE FUNCTION pgrelay.pause(channel text DEFAULT NULL) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Without a channel: stops dispatch on every Processor until resume(). With one: stops that
 * channel's dispatch only, while its producers keep queueing (notify() still accepts events);
 * its queued events wait. Returns whether this call paused it: false when it was paused already
 * (nothing is written then: paused_at stays the time of the first pause).
 */
BEGIN
    IF pause.channel IS NULL THEN
        UPDATE pgrelay.control SET paused = true, paused_at = now() WHERE NOT paused;
        RETURN FOUND;
    END IF;
    UPDATE pgrelay.channels x SET paused = true, updated_at = now() WHERE x.channel = pause.channel AND NOT x.paused;
    IF FOUND THEN
        RETURN true;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pgrelay.channels x WHERE x.channel = pause.channel) THEN
        RAISE EXCEPTION 'channel "%" does not exist', pgrelay._show(pause.channel) USING ERRCODE = 'undefined_object';
    END IF;
    RETURN false;
END
$$;
COMMENT ON FUNCTION pgrelay.pause(text) IS
    'Stops dispatch on every Processor, or of one channel (its producers keep queueing), until resume(); '
    'true when this call paused it, false when it was paused already';

-- pgrelay.resume()
CREATE OR REPLACE FUNCTION pgrelay.resume(channel text DEFAULT NULL) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Without a channel: resumes dispatch after pause() (channels paused one by one stay paused).
 * With one: resumes that channel, and clears the gone mark of its webhook endpoint (a 410
 * paused it). Returns whether this call resumed it: false when it was not paused (nor gone).
 */
DECLARE
    resumed boolean;
BEGIN
    IF resume.channel IS NULL THEN
        UPDATE pgrelay.control SET paused = false, paused_at = NULL WHERE paused;
        RETURN FOUND;
    END IF;
    UPDATE pgrelay.channels x SET paused = false, updated_at = now() WHERE x.channel = resume.channel AND x.paused;
    resumed := FOUND;
    IF NOT resumed AND NOT EXISTS (SELECT 1 FROM pgrelay.channels x WHERE x.channel = resume.channel) THEN
        RAISE EXCEPTION 'channel "%" does not exist', pgrelay._show(resume.channel) USING ERRCODE = 'undefined_object';
    END IF;
    -- a webhook endpoint that answered 410 Gone paused its channel: resuming it says it is back
    UPDATE pgrelay.webhooks w SET gone_at = NULL, gone_status = NULL, gone_reason = NULL
    WHERE w.channel = resume.channel AND w.gone_at IS NOT NULL;
    RETURN resumed OR FOUND;
END
$$;
COMMENT ON FUNCTION pgrelay.resume(text) IS
    'Resumes dispatch after pause(), everywhere or for one channel; true when this call resumed it, false when it '
    'was not paused';

-- pgrelay._register_handler()
CREATE OR REPLACE FUNCTION pgrelay._register_handler(handler regprocedure) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (register): checks that a function may be a channel's handler and returns its
 * canonical signature. It must take one text argument, not be a system function, be SECURITY
 * DEFINER (a handler runs with its owner's rights: whoever owns it cannot gain the Processor's),
 * and be executable both by pgrelay_processor and by the role registering it (so registering a
 * handler never lets anyone have a function run that they could not run themselves).
 */
DECLARE
    p record;
BEGIN
    SELECT x.oid, x.prokind, x.pronargs, x.proargtypes, x.prosecdef, n.nspname, x.proname INTO p
    FROM pg_proc x JOIN pg_namespace n ON n.oid = x.pronamespace
    WHERE x.oid = handler;
    IF NOT FOUND THEN
        -- '-' (no function) or the oid of one dropped since it was looked up
        RAISE EXCEPTION 'handler % does not exist', handler USING ERRCODE = 'undefined_function';
    END IF;
    IF p.prokind <> 'f' OR p.pronargs <> 1 OR p.proargtypes[0] <> 'text'::regtype THEN
        RAISE EXCEPTION 'handler % must be a function taking one text argument', handler
            USING ERRCODE = 'invalid_function_definition';
    END IF;
    IF p.nspname IN ('pg_catalog', 'information_schema') THEN
        RAISE EXCEPTION 'handler % is a system function', handler
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Write a handler function of your own that calls it.';
    END IF;
    IF NOT p.prosecdef THEN
        RAISE EXCEPTION 'handler % must be SECURITY DEFINER', handler
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'A handler runs with its owner''s rights, never with the Processor''s.',
                  HINT = format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = ...', handler);
    END IF;
    IF NOT has_function_privilege('pgrelay_processor', p.oid, 'EXECUTE') THEN
        RAISE EXCEPTION 'handler % is not executable by role pgrelay_processor', handler
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'GRANT EXECUTE ON FUNCTION ... TO pgrelay_processor.';
    END IF;
    IF NOT has_function_privilege(session_user, p.oid, 'EXECUTE') THEN
        RAISE EXCEPTION 'handler % is not executable by %, who registers it', handler, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN format('%I.%I(text)', p.nspname, p.proname);
END
$$;
COMMENT ON FUNCTION pgrelay._register_handler(regprocedure) IS
    'Internal: checks a function as a channel handler and returns its canonical signature';

-- pgrelay._check_channel()
CREATE OR REPLACE FUNCTION pgrelay._check_channel(ch pgrelay.channels) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (register): every setting of a channel in range, with an error that names it. The
 * table's CHECK constraints say the same; this says it in words the admin can act on.
 */
BEGIN
    IF ch.concurrency_mode NOT IN ('parallel', 'channel') THEN
        RAISE EXCEPTION 'invalid concurrency_mode "%"', pgrelay._show(ch.concurrency_mode)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use parallel (the default) or channel (one event of the channel at a time).';
    END IF;
    IF ch.retry_policy NOT IN ('all', 'strict') THEN
        RAISE EXCEPTION 'invalid retry_policy "%"', pgrelay._show(ch.retry_policy)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use all (the default: every error is retried) or strict (only errors that can pass by themselves).';
    END IF;
    IF ch.max_attempts < 1 OR ch.max_attempts > 1000 THEN
        RAISE EXCEPTION 'max_attempts must be between 1 and 1000, not %', ch.max_attempts
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF ch.max_payload_bytes < 1 OR ch.max_payload_bytes > 104857600 THEN
        RAISE EXCEPTION 'max_payload_bytes must be between 1 and 104857600 (100 MB), not %', ch.max_payload_bytes
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Durations by both measures (_duration_ok): the Processor reads them in milliseconds.
    IF NOT pgrelay._duration_ok(ch.timeout, '1 millisecond', '24 hours') THEN
        RAISE EXCEPTION 'timeout must be between 1 millisecond and 24 hours, not %', ch.timeout
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pgrelay._duration_ok(ch.backoff_base, '1 millisecond', '1 day') THEN
        RAISE EXCEPTION 'backoff_base must be between 1 millisecond and 1 day, not %', ch.backoff_base
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF ch.backoff_max < ch.backoff_base OR extract(epoch FROM ch.backoff_max) < extract(epoch FROM ch.backoff_base) THEN
        RAISE EXCEPTION 'backoff_max (%) must not be less than backoff_base (%)', ch.backoff_max, ch.backoff_base
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pgrelay._duration_ok(ch.backoff_max, '0', '30 days') THEN
        RAISE EXCEPTION 'backoff_max must be at most 30 days, not %', ch.backoff_max
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay._check_channel(pgrelay.channels) IS
    'Internal: raises a clear error for the first setting of a channel that is out of range';

-- pgrelay._channel_new()
CREATE OR REPLACE FUNCTION pgrelay._channel_new(channel text) RETURNS pgrelay.channels
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (register): a new channel as register() starts it, before its arguments are applied:
 * every setting at its default, registered now by the session's user. action_type, handler and
 * description are left NULL for register() to fill in.
 */
DECLARE
    ch pgrelay.channels;
BEGIN
    ch.channel := _channel_new.channel;
    ch.active := true;
    ch.concurrency_mode := 'parallel';
    ch.node_restricted := false;
    ch.max_attempts := 5;
    ch.timeout := '30 seconds';
    ch.backoff_base := '10 seconds';
    ch.backoff_max := '1 hour';
    ch.max_payload_bytes := 1048576;
    ch.retry_policy := 'all';
    ch.paused := false;
    ch.batch := false;
    ch.shared_keys := false;
    ch.registered_by := session_user;
    ch.registered_at := now();
    RETURN ch;
END
$$;
COMMENT ON FUNCTION pgrelay._channel_new(text) IS
    'Internal: a new channel with every setting at its default, as register() starts it';

-- pgrelay._check_action_type()
CREATE OR REPLACE FUNCTION pgrelay._check_action_type(prev pgrelay.channels, ch pgrelay.channels) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (register): may the channel ch (as register() will write it; prev: as it is, NULL for
 * a new channel) have its action type? The type must exist; it cannot change while events of the
 * channel are queued (they were made for the old one); and a webhook channel's endpoint must be
 * written first (by register_webhook()).
 */
DECLARE
    queued bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pgrelay.action_types a WHERE a.action_type = ch.action_type) THEN
        RAISE EXCEPTION 'action type "%" does not exist', pgrelay._show(ch.action_type)
            USING ERRCODE = 'undefined_object',
                  HINT = 'See pgrelay.action_types.';
    END IF;
    IF prev.channel IS NOT NULL AND prev.action_type <> ch.action_type THEN
        SELECT count(*) INTO queued FROM pgrelay.queue q WHERE q.channel = ch.channel;
        IF queued > 0 THEN
            RAISE EXCEPTION 'channel "%" still has % queued event(s); its action type cannot change', ch.channel, queued
                USING ERRCODE = 'object_in_use';
        END IF;
    END IF;
    IF ch.action_type = 'webhook' AND NOT EXISTS (SELECT 1 FROM pgrelay.webhooks w WHERE w.channel = ch.channel) THEN
        RAISE EXCEPTION 'channel "%": a webhook channel needs an endpoint', ch.channel
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Register it with pgrelay.register_webhook(channel, url => ...).';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay._check_action_type(pgrelay.channels, pgrelay.channels) IS
    'Internal: raises a clear error when a channel may not have the action type register() is giving it';

-- pgrelay._register()
CREATE OR REPLACE FUNCTION pgrelay._register(channel text, action_type text DEFAULT NULL,
                                 handler regprocedure DEFAULT NULL,
                                 concurrency_mode text DEFAULT NULL,
                                 node_restricted boolean DEFAULT NULL,
                                 max_attempts integer DEFAULT NULL,
                                 timeout interval DEFAULT NULL,
                                 backoff_base interval DEFAULT NULL,
                                 backoff_max interval DEFAULT NULL,
                                 active boolean DEFAULT NULL,
                                 description text DEFAULT NULL,
                                 max_payload_bytes integer DEFAULT NULL,
                                 retry_policy text DEFAULT NULL,
                                 batch boolean DEFAULT NULL,
                                 shared_keys boolean DEFAULT NULL,
                                 settings jsonb DEFAULT NULL)
RETURNS pgrelay.channels
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * register() once the handler is looked up (as the caller): creates a channel, or updates one: an
 * argument left NULL keeps the current value (or takes the default for a new channel); a
 * destination's settings are written by _destination_save. Everything is validated here so that
 * the Processor never meets a channel it cannot run. Asks the Processors to reload.
 */
DECLARE
    prev pgrelay.channels;
    ch pgrelay.channels;
BEGIN
    PERFORM pgrelay._check_name('channel', 'channel', _register.channel);

    SELECT * INTO prev FROM pgrelay.channels x WHERE x.channel = _register.channel FOR UPDATE;
    IF NOT FOUND THEN
        IF _register.action_type IS NULL THEN
            RAISE EXCEPTION 'channel "%" does not exist; give its action_type to create it', _register.channel
                USING ERRCODE = 'null_value_not_allowed';
        END IF;
        prev := NULL;
        ch := pgrelay._channel_new(_register.channel);
    ELSE
        ch := prev;
    END IF;

    ch.action_type := COALESCE(_register.action_type, ch.action_type);
    PERFORM pgrelay._check_action_type(prev, ch);
    IF _register.handler IS NOT NULL THEN
        ch.handler := pgrelay._register_handler(_register.handler);
    END IF;
    IF ch.action_type = 'sql' AND ch.handler IS NULL THEN
        RAISE EXCEPTION 'channel "%": a sql channel needs a handler function taking one text argument', _register.channel
            USING ERRCODE = 'null_value_not_allowed';
    ELSIF ch.action_type <> 'sql' THEN
        IF _register.handler IS NOT NULL THEN
            RAISE EXCEPTION 'channel "%": % channels take no handler', _register.channel, ch.action_type
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        ch.handler := NULL;
    END IF;

    ch.concurrency_mode := COALESCE(_register.concurrency_mode, ch.concurrency_mode);
    ch.node_restricted := COALESCE(_register.node_restricted, ch.node_restricted);
    ch.max_attempts := COALESCE(_register.max_attempts, ch.max_attempts);
    ch.timeout := COALESCE(_register.timeout, ch.timeout);
    ch.backoff_base := COALESCE(_register.backoff_base, ch.backoff_base);
    ch.backoff_max := COALESCE(_register.backoff_max, ch.backoff_max);
    ch.max_payload_bytes := COALESCE(_register.max_payload_bytes, ch.max_payload_bytes);
    ch.retry_policy := COALESCE(_register.retry_policy, ch.retry_policy);
    -- Batching is for sql actions only, and on unless asked otherwise (a new channel, or one that
    -- becomes a sql channel); a notify event is always its own held transaction.
    IF ch.action_type = 'sql' THEN
        ch.batch := COALESCE(_register.batch,
                             CASE WHEN prev.channel IS NULL OR prev.action_type <> 'sql' THEN true ELSE ch.batch END);
    ELSIF _register.batch THEN
        RAISE EXCEPTION 'channel "%": % channels finish one event per transaction; batch applies to sql channels',
                        _register.channel, ch.action_type
            USING ERRCODE = 'invalid_parameter_value';
    ELSE
        ch.batch := false;
    END IF;
    ch.active := COALESCE(_register.active, ch.active);
    ch.shared_keys := COALESCE(_register.shared_keys, ch.shared_keys);
    ch.description := COALESCE(_register.description, ch.description);
    ch.updated_at := now();
    PERFORM pgrelay._check_channel(ch);

    IF prev.action_type = 'webhook' AND ch.action_type <> 'webhook' THEN
        DELETE FROM pgrelay.webhooks w WHERE w.channel = _register.channel;
    END IF;
    PERFORM pgrelay._destination_save(prev, ch, _register.settings);
    IF prev.channel IS NULL THEN
        INSERT INTO pgrelay.channels SELECT ch.*;
    ELSE
        UPDATE pgrelay.channels x
        SET action_type = ch.action_type, handler = ch.handler, active = ch.active,
            concurrency_mode = ch.concurrency_mode, node_restricted = ch.node_restricted,
            max_attempts = ch.max_attempts, timeout = ch.timeout,
            backoff_base = ch.backoff_base, backoff_max = ch.backoff_max,
            description = ch.description, updated_at = ch.updated_at,
            max_payload_bytes = ch.max_payload_bytes, retry_policy = ch.retry_policy, batch = ch.batch,
            shared_keys = ch.shared_keys
        WHERE x.channel = _register.channel;
    END IF;
    PERFORM pgrelay.request_reload();
    RETURN ch;
END
$$;
COMMENT ON FUNCTION pgrelay._register(text, text, regprocedure, text, boolean, integer, interval, interval,
                                      interval, boolean, text, integer, text, boolean, boolean, jsonb) IS
    'register() with its handler looked up: creates or updates a channel and asks the Processors to reload';

-- pgrelay.register()
CREATE OR REPLACE FUNCTION pgrelay.register(channel text, action_type text DEFAULT NULL,
                                 handler text DEFAULT NULL,
                                 concurrency_mode text DEFAULT NULL,
                                 node_restricted boolean DEFAULT NULL,
                                 max_attempts integer DEFAULT NULL,
                                 timeout interval DEFAULT NULL,
                                 backoff_base interval DEFAULT NULL,
                                 backoff_max interval DEFAULT NULL,
                                 active boolean DEFAULT NULL,
                                 description text DEFAULT NULL,
                                 max_payload_bytes integer DEFAULT NULL,
                                 retry_policy text DEFAULT NULL,
                                 batch boolean DEFAULT NULL,
                                 shared_keys boolean DEFAULT NULL,
                                 settings jsonb DEFAULT NULL)
RETURNS pgrelay.channels
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Creates a channel, or updates one (_register, as pg_relay's owner: an argument left NULL keeps
 * the current value). The one step taken here, as the caller: the handler, given as text, is
 * looked up as a cast in the caller's own statement would look it up (on the caller's search_path,
 * with the caller's rights: a name without a schema works, and so does a schema pg_relay's owner
 * may not use). Text rather than a regprocedure argument, so that a handler given without its
 * argument types ('app.fn') gets an error that says how to write it, not the cast's "expected a
 * left parenthesis". SECURITY INVOKER without a SET clause on purpose, so it names the schema of
 * everything else it uses.
 */
DECLARE
    fn pg_catalog.regprocedure;
    why pg_catalog.text;
BEGIN
    IF register.handler IS NOT NULL THEN
        BEGIN
            fn := register.handler::pg_catalog.regprocedure;
        EXCEPTION WHEN invalid_text_representation OR invalid_name THEN
            GET STACKED DIAGNOSTICS why = MESSAGE_TEXT;
            RAISE EXCEPTION 'handler must name a function with its argument types, such as ''app.order_placed(text)'''
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = pg_catalog.format('The function name was read as a signature: %s.', why),
                      HINT = 'A handler takes one text argument: handler => ''schema.function(text)''.';
        END;
    END IF;
    RETURN pgrelay._register(register.channel, register.action_type, fn, register.concurrency_mode,
                             register.node_restricted, register.max_attempts, register.timeout,
                             register.backoff_base, register.backoff_max, register.active,
                             register.description, register.max_payload_bytes, register.retry_policy,
                             register.batch, register.shared_keys, register.settings);
END
$$;
COMMENT ON FUNCTION pgrelay.register(text, text, text, text, boolean, integer, interval, interval,
                                     interval, boolean, text, integer, text, boolean, boolean, jsonb) IS
    'Creates or updates a channel (named arguments; NULL keeps the current value; handler => ''schema.function(text)''; a destination''s settings => jsonb) and asks the Processors to reload';

-- pgrelay.unregister()
CREATE OR REPLACE FUNCTION pgrelay.unregister(channel text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    queued bigint;
BEGIN
    -- SHARE mode waits for transactions that are queueing events right now, so no event can
    -- commit into a channel that no longer exists.
    LOCK TABLE pgrelay.queue IN SHARE MODE;
    IF NOT EXISTS (SELECT 1 FROM pgrelay.channels x WHERE x.channel = unregister.channel) THEN
        RAISE EXCEPTION 'channel "%" does not exist', pgrelay._show(unregister.channel)
            USING ERRCODE = 'undefined_object';
    END IF;
    IF EXISTS (SELECT 1 FROM pgrelay.watches w WHERE w.channel = unregister.channel
                                                 AND EXISTS (SELECT 1 FROM pg_class k WHERE k.oid = w.relid)) THEN
        RAISE EXCEPTION 'channel "%" is watched by table %', unregister.channel,
                        (SELECT string_agg(w.relid::text, ', ' ORDER BY w.relid::text) FROM pgrelay.watches w
                         WHERE w.channel = unregister.channel AND EXISTS (SELECT 1 FROM pg_class k WHERE k.oid = w.relid))
            USING ERRCODE = 'object_in_use',
                  HINT = 'Stop watching it first: SELECT pgrelay.unwatch_table(table, channel).';
    END IF;
    DELETE FROM pgrelay.watches w WHERE w.channel = unregister.channel;  -- of tables that were dropped
    IF EXISTS (SELECT 1 FROM pgrelay.schedule_entries s WHERE s.channel = unregister.channel) THEN
        RAISE EXCEPTION 'channel "%" has schedule %', unregister.channel,
                        (SELECT string_agg(pg_catalog.quote_literal(s.name), ', ' ORDER BY s.name)
                         FROM pgrelay.schedule_entries s WHERE s.channel = unregister.channel)
            USING ERRCODE = 'object_in_use',
                  HINT = 'Remove it first: SELECT pgrelay.unschedule(name).';
    END IF;
    SELECT count(*) INTO queued FROM pgrelay.queue q WHERE q.channel = unregister.channel;
    IF queued > 0 THEN
        RAISE EXCEPTION 'channel "%" still has % queued event(s)', unregister.channel, queued
            USING ERRCODE = 'object_in_use',
                  HINT = 'Deactivate it with pgrelay.register(channel, active => false) and let the queue drain.';
    END IF;
    DELETE FROM pgrelay.channels x WHERE x.channel = unregister.channel;
    PERFORM pgrelay.request_reload();
END
$$;
COMMENT ON FUNCTION pgrelay.unregister(text) IS 'Drops a channel that has no queued events';

-- pgrelay.retry_failed()
CREATE OR REPLACE FUNCTION pgrelay.retry_failed(event_id bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Puts a failed event back in the queue as attempt 1 (a fresh max_attempts budget), keeping its
 * event_id so its history stays linked in pgrelay.log. Returns the new queue id.
 */
DECLARE
    f pgrelay.failed_events;
    c pgrelay.channels;
    v bigint;
BEGIN
    IF retry_failed.event_id IS NULL THEN
        RAISE EXCEPTION 'event_id must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    DELETE FROM pgrelay.failed_events x WHERE x.event_id = retry_failed.event_id RETURNING * INTO f;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'event % is not in pgrelay.failed', retry_failed.event_id
            USING ERRCODE = 'no_data_found';
    END IF;
    SELECT * INTO c FROM pgrelay.channels x WHERE x.channel = f.channel;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'channel "%" of event % does not exist any more', f.channel, f.event_id
            USING ERRCODE = 'undefined_object';
    END IF;
    v := pgrelay._next_id();
    INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, node_restricted,
                               attempt, run_at, queued_at, publication_id, event_type)
    SELECT v, f.event_id, f.channel, c.action_type, f.payload, c.node_restricted, 1, pgrelay._run_at(NULL), now(),
           l.publication_id, l.event_type
    FROM (SELECT) one LEFT JOIN pgrelay.log l ON l.id = f.log_id;
    RETURN v;
END
$$;
COMMENT ON FUNCTION pgrelay.retry_failed(bigint) IS
    'Re-queues a failed event (see pgrelay.failed) with a fresh attempt budget; returns the queue id';

-- pgrelay.discard_failed()
CREATE OR REPLACE FUNCTION pgrelay.discard_failed(event_id bigint) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF discard_failed.event_id IS NULL THEN
        RAISE EXCEPTION 'event_id must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    DELETE FROM pgrelay.failed_events x WHERE x.event_id = discard_failed.event_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'event % is not in pgrelay.failed', discard_failed.event_id
            USING ERRCODE = 'no_data_found';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay.discard_failed(bigint) IS
    'Forgets a failed event (its log rows stay)';

-- pgrelay._failed_scope()
CREATE OR REPLACE FUNCTION pgrelay._failed_scope(fn text, channel text, all_channels boolean) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (retry_failed, discard_failed by filter): a set-based call names one channel, or says
 * all_channels => true; nothing else. A NULL channel is an error, not "every channel": an id or a
 * name that a script got wrong must never turn into all of them. A channel that neither exists nor
 * has failed events is an error too (often an event id passed as a string: '123').
 */
BEGIN
    IF all_channels IS NULL THEN
        RAISE EXCEPTION 'all_channels must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF all_channels THEN
        IF channel IS NOT NULL THEN
            RAISE EXCEPTION '%(): give a channel or all_channels => true, not both', fn
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        RETURN;
    END IF;
    IF channel IS NULL THEN
        RAISE EXCEPTION '%(): channel must not be NULL', fn
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = format('%s(<event id>) acts on one event; %s(NULL, all_channels => true) on every channel.', fn, fn);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pgrelay.channels c WHERE c.channel = _failed_scope.channel)
       AND NOT EXISTS (SELECT 1 FROM pgrelay.failed_events f WHERE f.channel = _failed_scope.channel) THEN
        RAISE EXCEPTION 'channel "%" does not exist', pgrelay._show(channel)
            USING ERRCODE = 'undefined_object',
                  HINT = CASE WHEN channel ~ '^\s*[0-9]+\s*$'
                              THEN format('To act on the failed event %s, pass its id as a number: %s(%s).',
                                          btrim(channel), fn, btrim(channel))
                              ELSE 'pgrelay.failed lists the failed events and their channels.' END;
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay._failed_scope(text, text, boolean) IS
    'Internal: checks the channel / all_channels arguments of the set-based retry_failed and discard_failed';

-- pgrelay._failed_matching()
CREATE OR REPLACE FUNCTION pgrelay._failed_matching(channel text, failed_after timestamptz,
                                                    failed_before timestamptz, error_like text)
RETURNS SETOF bigint
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    -- Internal (retry_failed, discard_failed by filter): the failed events a filter selects;
    -- channel NULL means every channel (the callers have checked that all_channels says so).
    SELECT f.event_id FROM pgrelay.failed_events f
    WHERE (_failed_matching.channel IS NULL OR f.channel = _failed_matching.channel)
      AND (failed_after IS NULL OR f.failed_at >= failed_after)
      AND (failed_before IS NULL OR f.failed_at < failed_before)
      AND (error_like IS NULL OR f.error LIKE error_like)
    ORDER BY f.event_id
$$;
COMMENT ON FUNCTION pgrelay._failed_matching(text, timestamptz, timestamptz, text) IS
    'Internal: the event ids of pgrelay.failed that match a channel, a time range and an error pattern';

-- pgrelay.retry_failed() by filter
CREATE OR REPLACE FUNCTION pgrelay.retry_failed(channel text, failed_after timestamptz DEFAULT NULL,
                                                failed_before timestamptz DEFAULT NULL,
                                                error_like text DEFAULT NULL,
                                                all_channels boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Re-queues every failed event of a channel (of every channel only with all_channels => true)
 * that failed in [failed_after, failed_before) and whose error matches error_like (LIKE), each as
 * retry_failed(id) would. Returns how many. Events whose channel is gone are left in
 * pgrelay.failed.
 */
DECLARE
    e bigint;
    n bigint := 0;
BEGIN
    PERFORM pgrelay._failed_scope('retry_failed', retry_failed.channel, retry_failed.all_channels);
    FOR e IN SELECT m FROM pgrelay._failed_matching(retry_failed.channel, failed_after, failed_before, error_like) m
             WHERE EXISTS (SELECT 1 FROM pgrelay.failed_events f JOIN pgrelay.channels c ON c.channel = f.channel
                           WHERE f.event_id = m) LOOP
        PERFORM pgrelay.retry_failed(e);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;
COMMENT ON FUNCTION pgrelay.retry_failed(text, timestamptz, timestamptz, text, boolean) IS
    'Re-queues the failed events of a channel (every channel: all_channels => true) in a time range whose error matches a LIKE pattern; returns how many';

-- pgrelay.discard_failed() by filter
CREATE OR REPLACE FUNCTION pgrelay.discard_failed(channel text, failed_after timestamptz DEFAULT NULL,
                                                  failed_before timestamptz DEFAULT NULL,
                                                  error_like text DEFAULT NULL,
                                                  all_channels boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/* Forgets every failed event the filter selects (as retry_failed by filter); returns how many. */
DECLARE
    n bigint;
BEGIN
    PERFORM pgrelay._failed_scope('discard_failed', discard_failed.channel, discard_failed.all_channels);
    DELETE FROM pgrelay.failed_events f
    WHERE f.event_id IN (SELECT m FROM pgrelay._failed_matching(discard_failed.channel, failed_after,
                                                                 failed_before, error_like) m);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION pgrelay.discard_failed(text, timestamptz, timestamptz, text, boolean) IS
    'Forgets the failed events of a channel (every channel: all_channels => true) in a time range whose error matches a LIKE pattern; returns how many';

-- pgrelay.purge_log()
CREATE OR REPLACE FUNCTION pgrelay.purge_log(older_than interval) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    n bigint;
    cutoff timestamptz;
BEGIN
    -- 0 would delete the whole log; more than 1000 years would not even make a timestamp. The
    -- bound is on the time it makes, the cut-off: an interval of parts of opposite signs
    -- ('2 months -59 days') compares as positive and may still be no time at all before now.
    BEGIN
        cutoff := now() - older_than;
    EXCEPTION WHEN datetime_field_overflow THEN
        cutoff := NULL;
    END;
    IF cutoff IS NULL OR cutoff >= now() OR cutoff < now() - interval '1000 years' THEN
        RAISE EXCEPTION 'older_than must be a positive interval of at most 1000 years, not %',
                        COALESCE(older_than::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Log ids start with their creation time, so the primary key is the retention index.
    DELETE FROM pgrelay.log l WHERE l.id < pgrelay._id_floor(cutoff);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION pgrelay.purge_log(interval) IS
    'Deletes log rows written more than older_than ago; returns how many';
