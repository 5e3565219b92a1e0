/* extension/pg_relay/src/helpers.sql: small pure helpers: backoff, error classes, the dispatch rule */

-- pgrelay.interface_version()
CREATE OR REPLACE FUNCTION pgrelay.interface_version() RETURNS integer
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$ SELECT 4 $$;
COMMENT ON FUNCTION pgrelay.interface_version() IS
    'Version of the Processor/notifier interface this extension implements (docs/interface.md)';

-- pgrelay._show()
CREATE OR REPLACE FUNCTION pgrelay._show(s text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    -- What a caller gave, made safe to quote in an error message: line breaks and other control
    -- characters, and the invisible formatting characters that make text read otherwise than it
    -- is (bidirectional overrides, zero-width spaces, the byte order mark, tag characters),
    -- become ?, so that a message stays one line and shows what it names; at most 100 characters.
    SELECT CASE WHEN s IS NULL THEN 'NULL'
                ELSE pg_catalog.regexp_replace(
                         CASE WHEN pg_catalog.length(s) > 100 THEN pg_catalog.left(s, 97) || '...' ELSE s END,
                         '[\x01-\x1f\x7f-\x9f\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]',
                         '?', 'g')
           END
$$;
COMMENT ON FUNCTION pgrelay._show(text) IS
    'Text a caller gave, for an error message: control and invisible formatting characters as ?, at most 100 characters';

-- pgrelay._duration_ok()
CREATE OR REPLACE FUNCTION pgrelay._duration_ok(d interval, lo interval, hi interval) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    -- Internal: is d a duration from lo to hi by both measures a duration is used with: as
    -- PostgreSQL compares intervals (a month is 30 days, a year 360) and in seconds (extract
    -- epoch, which timers and backoffs read: a year is 365.25 days). An interval whose parts
    -- have opposite signs weighs differently by each: '1 year -359 days' is 1 day compared and
    -- 6.25 days in seconds, '10000 years -3599999 days' 1 day and 143 years. A duration added to
    -- a time is bounded by the time it makes, where it is added (_snooze_delay, purge_log).
    -- Inlined into its callers (no SET clause), so every operator is qualified.
    SELECT d OPERATOR(pg_catalog.>=) lo AND d OPERATOR(pg_catalog.<=) hi
       AND pg_catalog.extract('epoch', d) OPERATOR(pg_catalog.>=) pg_catalog.extract('epoch', lo)
       AND pg_catalog.extract('epoch', d) OPERATOR(pg_catalog.<=) pg_catalog.extract('epoch', hi)
$$;
COMMENT ON FUNCTION pgrelay._duration_ok(interval, interval, interval) IS
    'Internal: is the interval from lo to hi both as intervals compare and in seconds?';

-- pgrelay._has_control()
CREATE OR REPLACE FUNCTION pgrelay._has_control(s text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    -- Internal: does the text hold a character _show() makes ?: a control character, a line
    -- separator or an invisible formatting character. The check of a name or key that must read as
    -- it is, whatever its length (_show also cuts at 100 characters, so "_show(s) <> s" is no such
    -- check). Inlined into its callers (no SET clause), so the operator is qualified.
    SELECT s OPERATOR(pg_catalog.~) '[\x01-\x1f\x7f-\x9f\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]'
$$;
COMMENT ON FUNCTION pgrelay._has_control(text) IS
    'Internal: does the text hold a control, line-separating or invisible formatting character?';

-- pgrelay._notification_id_form()
CREATE OR REPLACE FUNCTION pgrelay._notification_id_form() RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    -- Internal: the form of an email event's payload (action type notify), the id of its
    -- pgrelay_notifier notification, as one regular expression: 1 to 18 digits, or 19 up to
    -- 9223372036854775807 (bigint's largest), written digit by digit. Only the form: pg_relay reads
    -- none of the notifier's tables. One expression, so that notify()'s INSERT, which tests it on
    -- every call, grows by one operator (its executor state is built at every call): the CASE of
    -- _notification_id() cost it a microsecond. Inlined into its callers and folded to a constant.
    SELECT '^([0-9]{1,18}|[0-8][0-9]{18}|9[0-1][0-9]{17}|92[0-1][0-9]{16}|922[0-2][0-9]{15}|9223[0-2][0-9]{14}|92233[0-6][0-9]{13}|922337[0-1][0-9]{12}|92233720[0-2][0-9]{10}|922337203[0-5][0-9]{9}|9223372036[0-7][0-9]{8}|92233720368[0-4][0-9]{7}|922337203685[0-3][0-9]{6}|9223372036854[0-6][0-9]{5}|92233720368547[0-6][0-9]{4}|922337203685477[0-4][0-9]{3}|9223372036854775[0-7][0-9]{2}|922337203685477580[0-6]|9223372036854775807)$'::pg_catalog.text
$$;
COMMENT ON FUNCTION pgrelay._notification_id_form() IS
    'Internal: the regular expression of a notification id (1 to 19 digits within bigint)';

-- pgrelay._notification_id()
CREATE OR REPLACE FUNCTION pgrelay._notification_id(payload text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    -- Internal (notify_many, cancel, schedule): an email event's payload as the id of its
    -- notification, NULL when it is not of that form (_notification_id_form). Inlined into its
    -- callers (no SET clause), so every operator is qualified.
    SELECT CASE WHEN payload OPERATOR(pg_catalog.~) pgrelay._notification_id_form()
                THEN payload::pg_catalog.int8 END
$$;
COMMENT ON FUNCTION pgrelay._notification_id(text) IS
    'Internal: an email event''s payload as a notification id (1 to 19 digits within bigint), NULL otherwise';

-- pgrelay._check_name()
CREATE OR REPLACE FUNCTION pgrelay._check_name(kind text, param text, name text) RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (register, schedule): the name of a channel or a schedule (kind), given as the
 * parameter param, is not NULL and has 1 to 128 letters, digits or the characters _ . : / -, so
 * that it reads the same in a URL of the console, a metric label and a log line.
 */
BEGIN
    IF name IS NULL THEN
        RAISE EXCEPTION '% must not be NULL', param USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF name !~ '^[[:alnum:]_.:/-]{1,128}$' THEN
        RAISE EXCEPTION 'invalid % name "%"', kind, pgrelay._show(name)
            USING ERRCODE = 'invalid_name',
                  DETAIL = format('A %s name has 1 to 128 letters, digits or the characters _ . : / -', kind);
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay._check_name(text, text, text) IS
    'Internal: a channel''s or a schedule''s name is given and well formed (error otherwise)';

-- pgrelay._backoff()
CREATE OR REPLACE FUNCTION pgrelay._backoff(attempt integer, base interval, cap interval,
                                 jitter double precision DEFAULT pg_catalog.random())
RETURNS interval
LANGUAGE sql IMMUTABLE AS $$
    -- Exponential from base (attempt 1 waits base), capped, with "equal jitter": a uniform
    -- value between half the delay and the whole delay, so retries of a burst spread out.
    SELECT pg_catalog.make_interval(secs => (d * (0.5 + 0.5 * GREATEST(LEAST(jitter, 1), 0)))::double precision)
    FROM (SELECT LEAST(pg_catalog.date_part('epoch', cap),
                       pg_catalog.date_part('epoch', base)
                       * pg_catalog.power(2::double precision, LEAST(GREATEST(attempt, 1) - 1, 60))) AS d) s
$$;
COMMENT ON FUNCTION pgrelay._backoff(integer, interval, interval, double precision) IS
    'Delay before the retry of a failed attempt: min(cap, base * 2^(attempt-1)), scaled by 0.5 + jitter/2';

-- pgrelay._classify_error()
CREATE OR REPLACE FUNCTION pgrelay._classify_error(sqlstate text, retry_policy text DEFAULT 'all')
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    -- What a handler's error means for its event: timeout (the channel's timeout cancelled it),
    -- transient (retry after the backoff) or permanent (fail at once). SQLSTATE PGSTP is a
    -- handler's way to say "never retry"; PGRTY always asks for a retry. Under the channel's
    -- retry_policy 'all' (the default) every other error is retried until max_attempts, as in
    -- every job queue: the handler may be fixed and redeployed meanwhile. Under 'strict' only
    -- errors that can pass by themselves are retried: serialization failures and deadlocks,
    -- lost connections, lack of resources, lock timeouts, a server shutting down.
    -- Internal and inlined into its callers (no SET clause), so every operator is qualified.
    SELECT CASE
        WHEN sqlstate OPERATOR(pg_catalog.=) 'PGSTP' THEN 'permanent'
        WHEN sqlstate OPERATOR(pg_catalog.=) '57014' THEN 'timeout'
        WHEN sqlstate OPERATOR(pg_catalog.=) 'PGRTY'
          OR NOT COALESCE(retry_policy OPERATOR(pg_catalog.=) 'strict', false) THEN 'transient'
        WHEN pg_catalog.left(sqlstate, 2) OPERATOR(pg_catalog.=) ANY ('{40,08,53}'::text[])
          OR sqlstate OPERATOR(pg_catalog.=) ANY ('{55P03,57P03,58000,58030}'::text[]) THEN 'transient'
        ELSE 'permanent'
    END
$$;
COMMENT ON FUNCTION pgrelay._classify_error(text, text) IS
    'timeout, transient (retry) or permanent: what a handler''s SQLSTATE means under a retry policy (all or strict)';

-- pgrelay.error_kind()
CREATE OR REPLACE FUNCTION pgrelay.error_kind(sqlstate text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    -- For people reading pgrelay.failed and the log: whether retrying an error can help by
    -- itself (transient), needs someone to change the set-up (configuration: a missing function
    -- or table, a privilege, a feature; F0000 is the Processor's for a secret it could not read),
    -- needs the data or the handler fixed (data, handler), or was the handler's decision (stop,
    -- retry) or the channel's timeout.
    SELECT CASE
        WHEN sqlstate IS NULL THEN NULL
        WHEN sqlstate = 'PGSTP' THEN 'stop'
        WHEN sqlstate = 'PGRTY' THEN 'retry'
        WHEN sqlstate = '57014' THEN 'timeout'
        WHEN left(sqlstate, 2) IN ('40', '08', '53', '58')
          OR sqlstate IN ('55P03', '57P01', '57P02', '57P03') THEN 'transient'
        WHEN left(sqlstate, 2) IN ('42', '28', '3D', '3F', '0A', '2F', '38', '39', 'F0') THEN 'configuration'
        WHEN left(sqlstate, 2) IN ('22', '23') THEN 'data'
        ELSE 'handler'
    END
$$;
COMMENT ON FUNCTION pgrelay.error_kind(text) IS
    'What kind of error a SQLSTATE is: transient, configuration, data, handler, timeout, stop or retry';

-- pgrelay._timeout_error()
CREATE OR REPLACE FUNCTION pgrelay._timeout_error(channel text, timeout interval) RETURNS text
LANGUAGE sql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
    -- The error of an attempt the channel's timeout cancelled (process_one, process_batch), in
    -- the channel's words rather than the server's ("canceling statement due to statement
    -- timeout": the timeout reaches the handler as statement_timeout): which timeout, and the call
    -- that raises it, to twice as long (at most the 24 hours a timeout may be).
    SELECT format('the handler ran longer than the channel''s timeout of %s s: make it faster, or raise the '
                  'timeout: SELECT pgrelay.register(%L, timeout => ''%s seconds'')',
                  trim_scale(extract(epoch FROM timeout)), channel,
                  trim_scale(LEAST(2 * extract(epoch FROM timeout), 86400)))
$$;
COMMENT ON FUNCTION pgrelay._timeout_error(text, interval) IS
    'The error of an attempt the channel''s timeout ended: the timeout, and how to raise it';

-- pgrelay._config_hint()
CREATE OR REPLACE FUNCTION pgrelay._config_hint(channel text, sqlstate text, role name,
                                                OUT kind text, OUT hint text)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * What to fix after an attempt of a sql event failed with a configuration error (error_kind()
 * says configuration): its kind and a hint, for the Processor's log line and its metric. role is
 * the one the handler was called as (the Processor's). The kinds:
 *   missing_handler       the handler, or its schema, does not exist (dropped since register())
 *   not_security_definer  the handler is no longer SECURITY DEFINER
 *   missing_grant         role may not use the handler's schema or execute the handler
 *   in_handler            the handler itself met the error, as its owner: a missing table or
 *                         function, a privilege its owner lacks, a search_path it does not set
 * Read from the catalog, not from the error's text (which is in the server's language). NULLs
 * when the error is of another kind, or the channel has no handler (any more).
 */
DECLARE
    h text;
    ident text[];
    nsp oid;
    fn oid;
    definer boolean;
    owner text;
BEGIN
    IF _config_hint.role IS NULL THEN
        RAISE EXCEPTION 'role must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pgrelay.error_kind(_config_hint.sqlstate) IS DISTINCT FROM 'configuration' THEN
        RETURN;
    END IF;
    SELECT c.handler INTO h FROM pgrelay.channels c WHERE c.channel = _config_hint.channel;
    IF h IS NULL THEN
        RETURN;
    END IF;
    -- register() stores format('%I.%I(text)', schema, name)
    ident := parse_ident(left(h, -6));
    nsp := to_regnamespace(quote_ident(ident[1]));
    SELECT p.oid, p.prosecdef, quote_ident(pg_get_userbyid(p.proowner)) INTO fn, definer, owner
    FROM pg_proc p
    WHERE p.proname = ident[2]::name AND p.pronamespace = nsp AND p.proargtypes = '25'::oidvector;
    IF fn IS NULL THEN
        kind := 'missing_handler';
        hint := CASE WHEN nsp IS NULL
                     THEN format('schema %I of handler %s does not exist: create it and the function', ident[1], h)
                     ELSE format('handler %s does not exist: create it (SECURITY DEFINER, one text argument)', h)
                END
                || format(', or give the channel another handler: SELECT pgrelay.register(%L, handler => '
                          '''schema.function(text)'')', _config_hint.channel);
    ELSIF NOT definer THEN
        kind := 'not_security_definer';
        hint := format('ALTER FUNCTION %s SECURITY DEFINER (as its owner %s, or a superuser): a handler runs '
                       'with its owner''s rights', h, owner);
    ELSIF NOT has_schema_privilege(_config_hint.role, nsp, 'USAGE') THEN
        kind := 'missing_grant';
        hint := format('GRANT USAGE ON SCHEMA %I TO pgrelay_processor', ident[1]);
    ELSIF NOT has_function_privilege(_config_hint.role, fn, 'EXECUTE') THEN
        kind := 'missing_grant';
        hint := format('GRANT EXECUTE ON FUNCTION %s TO pgrelay_processor', h);
    ELSE
        kind := 'in_handler';
        hint := format('the handler %s runs as its owner %s, with search_path pg_catalog, pg_temp unless it sets '
                       'its own: create what the error names, qualify its names or give the function '
                       'SET search_path, or grant %s the privilege it lacks', h, owner, owner);
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay._config_hint(text, text, name) IS
    'The kind of configuration error a sql event''s attempt met, and a hint that says what to fix';

-- pgrelay._dispatch_context()
CREATE OR REPLACE FUNCTION pgrelay._dispatch_context(OUT mode text, OUT node integer, OUT is_leader boolean)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    mode := COALESCE(NULLIF(pg_catalog.current_setting('pg_relay.mode', true), ''), 'single');
    IF mode NOT IN ('single', 'multi-node', 'leader') THEN
        RAISE EXCEPTION 'invalid pg_relay.mode "%"', pgrelay._show(mode)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use single, multi-node or leader.';
    END IF;
    node := pgrelay._node_id();
    is_leader := COALESCE(NULLIF(pg_catalog.current_setting('pg_relay.is_leader', true), ''), 'off')::boolean;
END
$$;
COMMENT ON FUNCTION pgrelay._dispatch_context() IS
    'The session''s dispatch mode, node id and leadership (settings pg_relay.mode, pg_relay.node_id, pg_relay.is_leader)';

-- pgrelay._dispatch_allowed()
CREATE OR REPLACE FUNCTION pgrelay._dispatch_allowed(owner_node integer, node_restricted boolean,
                                          mode text, node integer, is_leader boolean)
RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE mode
        WHEN 'single' THEN true
        WHEN 'multi-node' THEN owner_node = node
        WHEN 'leader' THEN CASE WHEN node_restricted THEN owner_node = node ELSE is_leader END
        ELSE false
    END
$$;
COMMENT ON FUNCTION pgrelay._dispatch_allowed(integer, boolean, text, integer, boolean) IS
    'The dispatch rule (docs/ha.md): may this node offer a row with this owner and restriction?';

-- pgrelay._dispatch_scope()
CREATE OR REPLACE FUNCTION pgrelay._dispatch_scope(mode text, is_leader boolean,
                                        OUT free_any boolean, OUT restricted_any boolean,
                                        OUT own_free boolean, OUT own_restricted boolean)
LANGUAGE sql IMMUTABLE AS $$
    -- The dispatch rule of _dispatch_allowed as the parts of the queue the probe and the fetch
    -- read, each from its own index: unrestricted rows of any owner, restricted rows of any
    -- owner, this node's own unrestricted rows, this node's own restricted rows.
    SELECT mode = 'single' OR (mode = 'leader' AND is_leader),
           mode = 'single',
           mode = 'multi-node',
           mode IN ('multi-node', 'leader')
$$;
COMMENT ON FUNCTION pgrelay._dispatch_scope(text, boolean) IS
    'The dispatch rule as index-backed parts of the queue: unrestricted or restricted rows of anyone, own unrestricted or restricted rows';

-- pgrelay.should_dispatch_single()
CREATE OR REPLACE FUNCTION pgrelay.should_dispatch_single() RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$ SELECT NOT pg_catalog.pg_is_in_recovery() $$;
COMMENT ON FUNCTION pgrelay.should_dispatch_single() IS
    'Mode gate of --mode=single: true on a writable primary, false on a standby';
