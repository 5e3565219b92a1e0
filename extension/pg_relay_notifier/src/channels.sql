/* extension/pg_relay_notifier/src/channels.sql: notify channels (registered with pgrelay.register) */

-- pgrelay_notifier._register()
CREATE OR REPLACE FUNCTION pgrelay_notifier._register(channel text, concurrency_mode text, max_attempts integer,
                                           timeout interval, backoff_base interval, backoff_max interval,
                                           active boolean, description text, node_restricted boolean,
                                           options jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE SET intervalstyle = postgres AS $$
/*
 * Function: calls pgrelay.register(channel => ..., action_type => 'notify', ...) with named
 * arguments only: the explicit ones that are not NULL, then every key of options as one more named
 * argument (its JSON value as text), so a parameter that a later pg_relay adds to register() works
 * here unchanged. Names are quoted with %I and values with %L, so nothing can inject SQL.
 * node_restricted is never passed: it pins a channel's events to one node, which helps node-local
 * work (a materialised view refresh) and never email, whose result is the same from any node.
 */
DECLARE
    args text[];
    known text[];
    k text;
    v jsonb;
BEGIN
    IF options IS NOT NULL AND jsonb_typeof(options) NOT IN ('object', 'null') THEN
        RAISE EXCEPTION 'options must be a JSON object of pgrelay.register() arguments'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF COALESCE(node_restricted, false)
       OR (jsonb_typeof(options) = 'object' AND options -> 'node_restricted' IS NOT NULL
           AND options -> 'node_restricted' NOT IN ('false', 'null')) THEN
        RAISE EXCEPTION 'notify channels cannot be node_restricted'
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'node_restricted pins a channel''s events to the node that queued them, for work with '
                           'node-local effects such as a materialised view refresh. Sending an email has the '
                           'same result from any node, so it would only reduce dispatch parallelism.';
    END IF;
    args := ARRAY[format('channel => %L', channel), 'action_type => ''notify'''];
    IF concurrency_mode IS NOT NULL THEN args := args || format('concurrency_mode => %L', concurrency_mode); END IF;
    IF max_attempts IS NOT NULL THEN args := args || format('max_attempts => %L', max_attempts); END IF;
    IF timeout IS NOT NULL THEN args := args || format('timeout => %L', timeout); END IF;
    IF backoff_base IS NOT NULL THEN args := args || format('backoff_base => %L', backoff_base); END IF;
    IF backoff_max IS NOT NULL THEN args := args || format('backoff_max => %L', backoff_max); END IF;
    IF active IS NOT NULL THEN args := args || format('active => %L', active); END IF;
    IF description IS NOT NULL THEN args := args || format('description => %L', description); END IF;

    IF jsonb_typeof(options) = 'object' THEN
        SELECT array_agg(DISTINCT a.n) INTO known
        FROM pg_proc r, unnest(r.proargnames) a(n)
        WHERE r.pronamespace = 'pgrelay'::regnamespace AND r.proname = 'register';
        FOR k, v IN SELECT o.key, o.value FROM jsonb_each(options) o ORDER BY o.key LOOP
            IF k IN ('channel', 'action_type', 'handler') THEN
                RAISE EXCEPTION 'option "%" cannot be set for a notify channel', k
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF k = 'node_restricted' THEN
                CONTINUE;    -- false: the default, never passed on
            END IF;
            IF NOT k = ANY (known) THEN
                RAISE EXCEPTION 'unknown channel option "%"', pgrelay_notifier._show(k)
                    USING ERRCODE = 'invalid_parameter_value',
                          DETAIL = 'options holds further named arguments of pgrelay.register().';
            END IF;
            IF EXISTS (SELECT 1 FROM unnest(args) x WHERE split_part(x, ' => ', 1) = k) THEN
                RAISE EXCEPTION 'channel option "%" is given twice (as an argument and in options)', k
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF jsonb_typeof(v) = 'null' THEN
                CONTINUE;
            END IF;
            args := args || format('%I => %L', k, CASE WHEN jsonb_typeof(v) IN ('object', 'array') THEN v::text
                                                       ELSE v #>> '{}' END);
        END LOOP;
    END IF;
    EXECUTE format('SELECT 1 FROM pgrelay.register(%s)', array_to_string(args, ', '));
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._register(text, text, integer, interval, interval, interval, boolean,
                                               text, boolean, jsonb) IS
    'Registers or updates a notify channel with pgrelay.register(), named arguments only, options passed through';

-- pgrelay_notifier._relay_channel()
CREATE OR REPLACE FUNCTION pgrelay_notifier._relay_channel(channel text, OUT action_type text, OUT active boolean)
LANGUAGE sql STABLE AS $$
    -- Read-only look at pg_relay's channel, for clear errors before anything is stored.
    SELECT c.action_type, c.active FROM pgrelay.channels c WHERE c.channel = _relay_channel.channel
$$;
COMMENT ON FUNCTION pgrelay_notifier._relay_channel(text) IS
    'The action type and active flag of a pg_relay channel (NULLs when it does not exist)';

-- pgrelay_notifier.create_channel()
CREATE OR REPLACE FUNCTION pgrelay_notifier.create_channel(
    channel text,
    profile text,
    concurrency_mode text DEFAULT NULL,
    max_attempts integer DEFAULT NULL,
    timeout interval DEFAULT NULL,
    backoff_base interval DEFAULT NULL,
    backoff_max interval DEFAULT NULL,
    active boolean DEFAULT NULL,
    description text DEFAULT NULL,
    node_restricted boolean DEFAULT NULL,
    options jsonb DEFAULT NULL)
RETURNS pgrelay_notifier.channels
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: creates a notify channel that sends with profile: registers it with pg_relay
 * (pgrelay.register, named arguments, action_type 'notify'; the other arguments and the keys of
 * options are passed through unchanged) and records the channel -> profile mapping.
 * Returns: the mapping row.
 */
DECLARE
    rc record;
    ch pgrelay_notifier.channels;
BEGIN
    IF create_channel.channel IS NULL OR create_channel.profile IS NULL THEN
        RAISE EXCEPTION 'channel and profile must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM 1 FROM pgrelay_notifier.profiles p WHERE p.name = create_channel.profile FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'profile "%" does not exist', pgrelay_notifier._show(create_channel.profile)
            USING ERRCODE = 'undefined_object';
    END IF;
    IF EXISTS (SELECT 1 FROM pgrelay_notifier.channels c WHERE c.channel = create_channel.channel) THEN
        RAISE EXCEPTION 'channel "%" exists already', create_channel.channel
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Change it with pgrelay_notifier.alter_channel().';
    END IF;
    SELECT * INTO rc FROM pgrelay_notifier._relay_channel(create_channel.channel);
    IF rc.action_type IS NOT NULL THEN
        RAISE EXCEPTION 'pg_relay channel "%" exists already (action type %)', create_channel.channel, rc.action_type
            USING ERRCODE = 'duplicate_object',
                  DETAIL = 'A notifier channel is created together with its pg_relay channel.';
    END IF;
    PERFORM pgrelay_notifier._register(create_channel.channel, create_channel.concurrency_mode,
                                       create_channel.max_attempts, create_channel.timeout,
                                       create_channel.backoff_base, create_channel.backoff_max,
                                       create_channel.active, create_channel.description,
                                       create_channel.node_restricted, create_channel.options);
    INSERT INTO pgrelay_notifier.channels AS c (channel, profile)
    VALUES (create_channel.channel, create_channel.profile)
    RETURNING * INTO ch;
    RETURN ch;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.create_channel(text, text, text, integer, interval, interval, interval,
                                                    boolean, text, boolean, jsonb) IS
    'Creates a notify channel with pgrelay.register() (named arguments, options passed through) that sends with a profile';

-- pgrelay_notifier.alter_channel()
CREATE OR REPLACE FUNCTION pgrelay_notifier.alter_channel(
    channel text,
    profile text DEFAULT NULL,
    concurrency_mode text DEFAULT NULL,
    max_attempts integer DEFAULT NULL,
    timeout interval DEFAULT NULL,
    backoff_base interval DEFAULT NULL,
    backoff_max interval DEFAULT NULL,
    active boolean DEFAULT NULL,
    description text DEFAULT NULL,
    node_restricted boolean DEFAULT NULL,
    options jsonb DEFAULT NULL)
RETURNS pgrelay_notifier.channels
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: changes a notify channel: its profile (for messages sent from now on; queued ones keep
 * the profile they were composed for) and its pg_relay settings, passed to pgrelay.register() as
 * in create_channel(); NULL keeps a value. Always re-registers the channel with action_type
 * 'notify', so it also repairs a channel that was unregistered behind the notifier's back.
 * Returns: the mapping row.
 */
DECLARE
    ch pgrelay_notifier.channels;
    rc record;
BEGIN
    SELECT * INTO ch FROM pgrelay_notifier.channels c WHERE c.channel = alter_channel.channel FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'channel "%" is not a pg_relay_notifier channel', pgrelay_notifier._show(alter_channel.channel)
            USING ERRCODE = 'undefined_object';
    END IF;
    IF alter_channel.profile IS NOT NULL THEN
        PERFORM 1 FROM pgrelay_notifier.profiles p WHERE p.name = alter_channel.profile FOR KEY SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'profile "%" does not exist', pgrelay_notifier._show(alter_channel.profile)
                USING ERRCODE = 'undefined_object';
        END IF;
    END IF;
    SELECT * INTO rc FROM pgrelay_notifier._relay_channel(alter_channel.channel);
    IF rc.action_type IS NOT NULL AND rc.action_type <> 'notify' THEN
        RAISE EXCEPTION 'pg_relay channel "%" has action type %, not notify', alter_channel.channel, rc.action_type
            USING ERRCODE = 'wrong_object_type';
    END IF;
    PERFORM pgrelay_notifier._register(alter_channel.channel, alter_channel.concurrency_mode,
                                       alter_channel.max_attempts, alter_channel.timeout,
                                       alter_channel.backoff_base, alter_channel.backoff_max,
                                       alter_channel.active, alter_channel.description,
                                       alter_channel.node_restricted, alter_channel.options);
    UPDATE pgrelay_notifier.channels c
    SET profile = COALESCE(alter_channel.profile, c.profile), updated_at = now()
    WHERE c.channel = alter_channel.channel
    RETURNING * INTO ch;
    RETURN ch;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.alter_channel(text, text, text, integer, interval, interval, interval,
                                                   boolean, text, boolean, jsonb) IS
    'Changes a notify channel''s profile and pg_relay settings (NULL keeps a value)';

-- pgrelay_notifier.drop_channel()
CREATE OR REPLACE FUNCTION pgrelay_notifier.drop_channel(channel text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: drops a notify channel: refused while notifications of the channel are queued or
 * retrying; unregisters the pg_relay channel (pgrelay.unregister, which refuses while events of it
 * are still queued) and removes the mapping. Sent and failed notifications stay for get_status().
 */
DECLARE
    open_count bigint;
BEGIN
    PERFORM 1 FROM pgrelay_notifier.channels c WHERE c.channel = drop_channel.channel FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'channel "%" is not a pg_relay_notifier channel', pgrelay_notifier._show(drop_channel.channel)
            USING ERRCODE = 'undefined_object';
    END IF;
    SELECT count(*) INTO open_count FROM pgrelay_notifier.notifications n
    WHERE n.channel = drop_channel.channel AND n.status IN ('queued', 'retrying');
    IF open_count > 0 THEN
        RAISE EXCEPTION 'channel "%" still has % notification(s) waiting for delivery', drop_channel.channel, open_count
            USING ERRCODE = 'object_in_use',
                  HINT = 'Deactivate it with alter_channel(channel, active => false), then cancel them or let them finish.';
    END IF;
    IF (pgrelay_notifier._relay_channel(drop_channel.channel)).action_type IS NOT NULL THEN
        PERFORM pgrelay.unregister(drop_channel.channel);
    END IF;
    DELETE FROM pgrelay_notifier.channels c WHERE c.channel = drop_channel.channel;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.drop_channel(text) IS
    'Unregisters a notify channel and forgets its profile; refused while it has undelivered notifications';
