-- ---------------------------------------------------------------------------------------------
-- Destinations: a channel whose events go to a broker (Redis Streams, Kafka, RabbitMQ) keeps where and how in one
-- row of pgrelay.destinations, written by register(channel, kind, settings => ...), checked there
-- so that the Processor never meets settings it cannot use. Secrets are references (env:NAME,
-- file:NAME) the Processor resolves for that channel only, never values.
-- ---------------------------------------------------------------------------------------------

-- pgrelay._destination_kinds()
CREATE OR REPLACE FUNCTION pgrelay._destination_kinds() RETURNS text[]
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT ARRAY['redis', 'kafka', 'rabbitmq']
$$;
COMMENT ON FUNCTION pgrelay._destination_kinds() IS
    'Internal: the action types whose channels keep their settings in pgrelay.destinations';

-- pgrelay._destination_doc()
CREATE OR REPLACE FUNCTION pgrelay._destination_doc(kind text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    -- the page a user fixing a setting of kind reads: each kind's settings are on its own page
    SELECT CASE kind WHEN 'kafka' THEN 'docs/kafka.md' WHEN 'rabbitmq' THEN 'docs/rabbitmq.md'
                     ELSE 'docs/destinations.md' END
$$;
COMMENT ON FUNCTION pgrelay._destination_doc(text) IS
    'Internal: the documentation page of the settings of a destination kind, named in hints';

-- pgrelay._setting_error()
CREATE OR REPLACE FUNCTION pgrelay._setting_error(channel text, kind text, key text, must text, given jsonb)
RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'channel "%": % setting "%" must be %, not %', channel, kind, key, must,
                    left(pgrelay._show(given::text), 200)
        USING ERRCODE = 'invalid_parameter_value',
              HINT = format('See the %s settings in %s.', kind, pgrelay._destination_doc(kind));
END
$$;
COMMENT ON FUNCTION pgrelay._setting_error(text, text, text, text, jsonb) IS
    'Internal: raises the error of one destination setting that is not what it must be';

-- pgrelay._setting_text()
CREATE OR REPLACE FUNCTION pgrelay._setting_text(channel text, kind text, s jsonb, key text, dflt text,
                                                 max_len integer DEFAULT 1024)
RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal: the text setting key of s (dflt when absent or null): one line of 1 to max_len
 * bytes. A required setting has no default: absent, it is an error.
 */
DECLARE
    v jsonb := s -> key;
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        IF dflt IS NULL THEN
            RAISE EXCEPTION 'channel "%": % setting "%" is required', channel, kind, key
                USING ERRCODE = 'null_value_not_allowed',
                      HINT = format('See the %s settings in %s.', kind, pgrelay._destination_doc(kind));
        END IF;
        RETURN dflt;
    END IF;
    IF jsonb_typeof(v) <> 'string' OR v #>> '{}' = '' OR octet_length(v #>> '{}') > max_len
       OR pgrelay._has_control(v #>> '{}') THEN
        PERFORM pgrelay._setting_error(channel, kind, key,
                                       format('a string of 1 to %s bytes without control characters', max_len), v);
    END IF;
    RETURN v #>> '{}';
END
$$;
COMMENT ON FUNCTION pgrelay._setting_text(text, text, jsonb, text, text, integer) IS
    'Internal: a text setting of a destination, checked, or its default';

-- pgrelay._setting_int()
CREATE OR REPLACE FUNCTION pgrelay._setting_int(channel text, kind text, s jsonb, key text, dflt bigint,
                                                lo bigint, hi bigint)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v jsonb := s -> key;
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        RETURN dflt;
    END IF;
    IF jsonb_typeof(v) <> 'number' OR (v #>> '{}') !~ '^[0-9]{1,18}$'
       OR (v #>> '{}')::bigint NOT BETWEEN lo AND hi THEN
        PERFORM pgrelay._setting_error(channel, kind, key, format('a whole number from %s to %s', lo, hi), v);
    END IF;
    RETURN (v #>> '{}')::bigint;
END
$$;
COMMENT ON FUNCTION pgrelay._setting_int(text, text, jsonb, text, bigint, bigint, bigint) IS
    'Internal: a whole-number setting of a destination, checked against its bounds, or its default';

-- pgrelay._setting_bool()
CREATE OR REPLACE FUNCTION pgrelay._setting_bool(channel text, kind text, s jsonb, key text, dflt boolean)
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v jsonb := s -> key;
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        RETURN dflt;
    END IF;
    IF jsonb_typeof(v) <> 'boolean' THEN
        PERFORM pgrelay._setting_error(channel, kind, key, 'true or false', v);
    END IF;
    RETURN (v #>> '{}')::boolean;
END
$$;
COMMENT ON FUNCTION pgrelay._setting_bool(text, text, jsonb, text, boolean) IS
    'Internal: a boolean setting of a destination, or its default';

-- pgrelay._setting_secret()
CREATE OR REPLACE FUNCTION pgrelay._setting_secret(channel text, kind text, s jsonb, key text) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal: a secret setting of a destination: NULL, or a reference the Processor resolves for
 * this channel (env:NAME, file:NAME). Never a value: the settings are readable by the admins.
 */
DECLARE
    v jsonb := s -> key;
    why text;
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v) <> 'string' OR NOT ((v #>> '{}') LIKE 'env:%' OR (v #>> '{}') LIKE 'file:%') THEN
        -- never repeats the text: it may be the secret itself
        RAISE EXCEPTION 'channel "%": % setting "%" must be a secret reference (env:NAME or file:NAME), not a value',
                        channel, kind, key
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Put the secret in a file of the channel''s directory of --secrets-dir, or in a variable '
                         'bound to the channel by --secret-env, and name it here.';
    END IF;
    why := pgrelay._secret_error(v #>> '{}');
    IF why IS NOT NULL THEN
        RAISE EXCEPTION 'channel "%": % setting "%": %', channel, kind, key, why
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN v #>> '{}';
END
$$;
COMMENT ON FUNCTION pgrelay._setting_secret(text, text, jsonb, text) IS
    'Internal: a secret setting of a destination, which must be an env: or file: reference';

-- pgrelay._redis_settings()
CREATE OR REPLACE FUNCTION pgrelay._redis_settings(channel text, s jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal: the settings of a redis channel, checked, with their defaults (docs/destinations.md):
 * where the server is (host, port), TLS (tls, ca_file), AUTH (user, password: a reference), the
 * stream's key (stream, default the channel's name), its trimming (maxlen, 0: none) and how long
 * an appended event's id is remembered against a second append (dedup_seconds).
 */
DECLARE
    r jsonb;
BEGIN
    r := jsonb_build_object(
        'host', pgrelay._setting_text(channel, 'redis', s, 'host', NULL, 253),
        'port', pgrelay._setting_int(channel, 'redis', s, 'port', 6379, 1, 65535),
        'tls', pgrelay._setting_bool(channel, 'redis', s, 'tls', false),
        'ca_file', pgrelay._setting_text(channel, 'redis', s, 'ca_file', '', 1024),
        'user', pgrelay._setting_text(channel, 'redis', s, 'user', '', 256),
        'password', pgrelay._setting_secret(channel, 'redis', s, 'password'),
        'stream', pgrelay._setting_text(channel, 'redis', s, 'stream', channel, 512),
        'maxlen', pgrelay._setting_int(channel, 'redis', s, 'maxlen', 0, 0, 2147483647),
        'dedup_seconds', pgrelay._setting_int(channel, 'redis', s, 'dedup_seconds', 86400, 1, 2592000));
    IF r ->> 'ca_file' <> '' AND NOT (r ->> 'tls')::boolean THEN
        RAISE EXCEPTION 'channel "%": redis setting "ca_file" needs "tls": true', channel
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF r ->> 'ca_file' <> '' AND left(r ->> 'ca_file', 1) <> '/' THEN
        PERFORM pgrelay._setting_error(channel, 'redis', 'ca_file', 'an absolute path', s -> 'ca_file');
    END IF;
    IF r ->> 'user' <> '' AND r ->> 'password' IS NULL THEN
        RAISE EXCEPTION 'channel "%": redis setting "user" needs a "password"', channel
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- '' stood for "none" above (a required text has no default): stored as absent
    RETURN jsonb_strip_nulls(r - CASE WHEN r ->> 'ca_file' = '' THEN 'ca_file' ELSE '' END
                               - CASE WHEN r ->> 'user' = '' THEN 'user' ELSE '' END);
END
$$;
COMMENT ON FUNCTION pgrelay._redis_settings(text, jsonb) IS
    'Internal: the settings of a redis channel, checked, with their defaults';

-- pgrelay._kafka_settings()
CREATE OR REPLACE FUNCTION pgrelay._kafka_settings(channel text, s jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal: the settings of a kafka channel, checked, with their defaults (docs/kafka.md): the
 * bootstrap brokers (host:port, ...), the topic (default the channel's name), what the message's
 * key is (key: event, the event's key; field, the member key_field of a JSON object payload;
 * none), TLS (tls, ca_file, tls_verify), SASL (sasl_mechanism, user, password: a reference) and
 * how long a message may take to be acknowledged (timeout_ms; absent: the channel's timeout).
 */
DECLARE
    r jsonb;
BEGIN
    r := jsonb_build_object(
        'brokers', pgrelay._setting_text(channel, 'kafka', s, 'brokers', NULL, 1024),
        'topic', pgrelay._setting_text(channel, 'kafka', s, 'topic', channel, 249),
        'key', pgrelay._setting_text(channel, 'kafka', s, 'key', 'event', 16),
        'key_field', pgrelay._setting_text(channel, 'kafka', s, 'key_field', '', 256),
        'tls', pgrelay._setting_bool(channel, 'kafka', s, 'tls', false),
        'ca_file', pgrelay._setting_text(channel, 'kafka', s, 'ca_file', '', 1024),
        'tls_verify', pgrelay._setting_bool(channel, 'kafka', s, 'tls_verify', true),
        'sasl_mechanism', pgrelay._setting_text(channel, 'kafka', s, 'sasl_mechanism', '', 16),
        'user', pgrelay._setting_text(channel, 'kafka', s, 'user', '', 256),
        'password', pgrelay._setting_secret(channel, 'kafka', s, 'password'),
        'timeout_ms', pgrelay._setting_int(channel, 'kafka', s, 'timeout_ms', NULL, 1000, 300000));
    IF r ->> 'brokers' !~ '^[A-Za-z0-9._\[\]:-]+:[0-9]{1,5}(,[A-Za-z0-9._\[\]:-]+:[0-9]{1,5})*$' THEN
        PERFORM pgrelay._setting_error(channel, 'kafka', 'brokers', 'a list of host:port, comma-separated',
                                       s -> 'brokers');
    END IF;
    IF r ->> 'topic' !~ '^[A-Za-z0-9._-]+$' OR r ->> 'topic' IN ('.', '..') THEN
        PERFORM pgrelay._setting_error(channel, 'kafka', 'topic',
                                       'a Kafka topic name (letters, digits, ".", "_", "-")',
                                       COALESCE(s -> 'topic', to_jsonb(r ->> 'topic')));
    END IF;
    IF NOT r ->> 'key' IN ('event', 'field', 'none') THEN
        PERFORM pgrelay._setting_error(channel, 'kafka', 'key', '"event", "field" or "none"', s -> 'key');
    END IF;
    IF (r ->> 'key' = 'field') <> (r ->> 'key_field' <> '') THEN
        RAISE EXCEPTION 'channel "%": kafka setting "key_field" goes with "key": "field", and only with it', channel
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Name the payload''s member whose value is the message key: {"key": "field", "key_field": "customer"}.';
    END IF;
    IF (r ->> 'ca_file' <> '' OR NOT (r ->> 'tls_verify')::boolean) AND NOT (r ->> 'tls')::boolean THEN
        RAISE EXCEPTION 'channel "%": kafka settings "ca_file" and "tls_verify" need "tls": true', channel
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF r ->> 'ca_file' <> '' AND left(r ->> 'ca_file', 1) <> '/' THEN
        PERFORM pgrelay._setting_error(channel, 'kafka', 'ca_file', 'an absolute path', s -> 'ca_file');
    END IF;
    IF NOT r ->> 'sasl_mechanism' IN ('', 'PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512') THEN
        PERFORM pgrelay._setting_error(channel, 'kafka', 'sasl_mechanism',
                                       '"PLAIN", "SCRAM-SHA-256" or "SCRAM-SHA-512"', s -> 'sasl_mechanism');
    END IF;
    IF (r ->> 'sasl_mechanism' <> '') <> (r ->> 'user' <> '' AND r ->> 'password' IS NOT NULL)
       OR (r ->> 'sasl_mechanism' = '' AND (r ->> 'user' <> '' OR r ->> 'password' IS NOT NULL)) THEN
        RAISE EXCEPTION 'channel "%": kafka settings "sasl_mechanism", "user" and "password" go together', channel
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = '{"sasl_mechanism": "SCRAM-SHA-512", "user": "relay", "password": "env:KAFKA_PW"}';
    END IF;
    -- '' stood for "none" above (a required text has no default): stored as absent
    RETURN jsonb_strip_nulls(r - CASE WHEN r ->> 'key_field' = '' THEN 'key_field' ELSE '' END
                               - CASE WHEN r ->> 'ca_file' = '' THEN 'ca_file' ELSE '' END
                               - CASE WHEN r ->> 'sasl_mechanism' = '' THEN 'sasl_mechanism' ELSE '' END
                               - CASE WHEN r ->> 'user' = '' THEN 'user' ELSE '' END);
END
$$;
COMMENT ON FUNCTION pgrelay._kafka_settings(text, jsonb) IS
    'Internal: the settings of a kafka channel, checked, with their defaults';
-- pgrelay._rabbitmq_settings()
CREATE OR REPLACE FUNCTION pgrelay._rabbitmq_settings(channel text, s jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal: the settings of a rabbitmq channel, checked, with their defaults (docs/rabbitmq.md):
 * the broker (host, port, vhost), TLS (tls, ca_file, tls_verify), the login (user, password: a
 * reference), where a message goes (exchange, "" the default exchange; routing_key, fixed or
 * taken per event from its key or a payload field: routing_key_from, routing_key_field) and
 * whether an unroutable message fails (mandatory).
 */
DECLARE
    r jsonb;
    ex jsonb := s -> 'exchange';
BEGIN
    r := jsonb_build_object(
        'host', pgrelay._setting_text(channel, 'rabbitmq', s, 'host', NULL, 253),
        'port', pgrelay._setting_int(channel, 'rabbitmq', s, 'port', 5672, 1, 65535),
        'vhost', pgrelay._setting_text(channel, 'rabbitmq', s, 'vhost', '/', 255),
        'tls', pgrelay._setting_bool(channel, 'rabbitmq', s, 'tls', false),
        'ca_file', pgrelay._setting_text(channel, 'rabbitmq', s, 'ca_file', '', 1024),
        'tls_verify', pgrelay._setting_bool(channel, 'rabbitmq', s, 'tls_verify', true),
        'user', pgrelay._setting_text(channel, 'rabbitmq', s, 'user', 'guest', 255),
        'password', pgrelay._setting_secret(channel, 'rabbitmq', s, 'password'),
        -- "" is the default exchange (routes to the queue the routing key names)
        'exchange', CASE WHEN ex = '""' THEN ''
                         ELSE pgrelay._setting_text(channel, 'rabbitmq', s, 'exchange', '', 255) END,
        'routing_key', pgrelay._setting_text(channel, 'rabbitmq', s, 'routing_key', channel, 255),
        'routing_key_from', pgrelay._setting_text(channel, 'rabbitmq', s, 'routing_key_from', 'fixed', 16),
        'routing_key_field', pgrelay._setting_text(channel, 'rabbitmq', s, 'routing_key_field', '', 255),
        'mandatory', pgrelay._setting_bool(channel, 'rabbitmq', s, 'mandatory', true));
    IF NOT r ->> 'routing_key_from' IN ('fixed', 'key', 'field') THEN
        PERFORM pgrelay._setting_error(channel, 'rabbitmq', 'routing_key_from', '"fixed", "key" or "field"',
                                       s -> 'routing_key_from');
    END IF;
    IF (r ->> 'routing_key_from' = 'field') <> (r ->> 'routing_key_field' <> '') THEN
        RAISE EXCEPTION 'channel "%": rabbitmq setting "routing_key_field" goes with "routing_key_from": "field", '
                        'and only with it', channel
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF r ->> 'ca_file' <> '' AND NOT (r ->> 'tls')::boolean THEN
        RAISE EXCEPTION 'channel "%": rabbitmq setting "ca_file" needs "tls": true', channel
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF r ->> 'ca_file' <> '' AND left(r ->> 'ca_file', 1) <> '/' THEN
        PERFORM pgrelay._setting_error(channel, 'rabbitmq', 'ca_file', 'an absolute path', s -> 'ca_file');
    END IF;
    IF r ->> 'user' <> 'guest' AND r ->> 'password' IS NULL THEN
        RAISE EXCEPTION 'channel "%": rabbitmq setting "user" needs a "password"', channel
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN jsonb_strip_nulls(r - CASE WHEN r ->> 'ca_file' = '' THEN 'ca_file' ELSE '' END
                               - CASE WHEN r ->> 'routing_key_field' = '' THEN 'routing_key_field' ELSE '' END);
END
$$;
COMMENT ON FUNCTION pgrelay._rabbitmq_settings(text, jsonb) IS
    'Internal: the settings of a rabbitmq channel, checked, with their defaults';

-- pgrelay._destination_keys()
CREATE OR REPLACE FUNCTION pgrelay._destination_keys(channel text, kind text, s jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal: s, settings of a destination channel of kind as given, is a JSON object of the kind's
 * keys only (a null too must name a known key).
 */
DECLARE
    known text[];
    k text;
BEGIN
    IF jsonb_typeof(s) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'channel "%": the settings must be a JSON object', channel
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    known := CASE kind
        WHEN 'redis' THEN ARRAY['host', 'port', 'tls', 'ca_file', 'user', 'password', 'stream', 'maxlen',
                                'dedup_seconds']
        WHEN 'kafka' THEN ARRAY['brokers', 'topic', 'key', 'key_field', 'tls', 'ca_file', 'tls_verify',
                                'sasl_mechanism', 'user', 'password', 'timeout_ms']
        WHEN 'rabbitmq' THEN ARRAY['host', 'port', 'vhost', 'tls', 'ca_file', 'tls_verify', 'user', 'password',
                                   'exchange', 'routing_key', 'routing_key_from', 'routing_key_field', 'mandatory']
    END;
    FOR k IN SELECT jsonb_object_keys(s) ORDER BY 1 LOOP
        IF NOT k = ANY (known) THEN
            RAISE EXCEPTION 'channel "%": unknown % setting "%"', channel, kind, left(pgrelay._show(k), 100)
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = format('The %s settings are: %s.', kind, array_to_string(known, ', '));
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION pgrelay._destination_keys(text, text, jsonb) IS
    'Internal: raises a clear error unless settings are a JSON object of the keys of their kind';

-- pgrelay._destination_settings()
CREATE OR REPLACE FUNCTION pgrelay._destination_settings(channel text, kind text, s jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal: the settings of a destination channel of kind, checked (unknown keys refused, each
 * known one by its kind's function), with their defaults.
 */
BEGIN
    PERFORM pgrelay._destination_keys(channel, kind, s);
    RETURN CASE kind
        WHEN 'redis' THEN pgrelay._redis_settings(channel, s)
        WHEN 'kafka' THEN pgrelay._kafka_settings(channel, s)
        WHEN 'rabbitmq' THEN pgrelay._rabbitmq_settings(channel, s)
    END;
END
$$;
COMMENT ON FUNCTION pgrelay._destination_settings(text, text, jsonb) IS
    'Internal: the settings of a destination channel, checked, with their defaults';

-- pgrelay._destination_save()
CREATE OR REPLACE FUNCTION pgrelay._destination_save(prev pgrelay.channels, ch pgrelay.channels, settings jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (register, as its owner): writes the destination row of channel ch (prev: as it was,
 * NULL for a new one) from settings: given keys replace the current ones (a null removes one),
 * the rest stay. A channel of another kind takes no settings, and loses its row when it stops
 * being a destination.
 */
DECLARE
    cur jsonb;
BEGIN
    IF NOT ch.action_type = ANY (pgrelay._destination_kinds()) THEN
        IF settings IS NOT NULL THEN
            RAISE EXCEPTION 'channel "%": % channels take no settings', ch.channel, ch.action_type
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        DELETE FROM pgrelay.destinations d WHERE d.channel = ch.channel;
        RETURN;
    END IF;
    IF prev.action_type IS NOT DISTINCT FROM ch.action_type THEN
        SELECT d.settings INTO cur FROM pgrelay.destinations d WHERE d.channel = ch.channel;
    END IF;
    IF settings IS NULL AND cur IS NOT NULL THEN
        RETURN;
    ELSIF settings IS NULL THEN
        RAISE EXCEPTION 'channel "%": a % channel needs its settings', ch.channel, ch.action_type
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = format('pgrelay.register(%L, %L, settings => ''{"%s": ...}''); see %s.',
                                ch.channel, ch.action_type,
                                CASE ch.action_type WHEN 'kafka' THEN 'brokers' ELSE 'host' END,
                                pgrelay._destination_doc(ch.action_type));
    END IF;
    -- the keys as given, a null's too, before the merge drops the nulls
    PERFORM pgrelay._destination_keys(ch.channel, ch.action_type, settings);
    settings := jsonb_strip_nulls(COALESCE(cur, '{}') || settings);
    INSERT INTO pgrelay.destinations AS d (channel, settings)
    VALUES (ch.channel, pgrelay._destination_settings(ch.channel, ch.action_type, settings))
    ON CONFLICT (channel) DO UPDATE SET settings = excluded.settings, updated_at = now();
END
$$;
COMMENT ON FUNCTION pgrelay._destination_save(pgrelay.channels, pgrelay.channels, jsonb) IS
    'Internal: writes (or removes) the destination row of a channel register() writes';

-- pgrelay._not_a_destination()
CREATE OR REPLACE FUNCTION pgrelay._not_a_destination(channel text, action_type text) RETURNS text
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (_destination_claim, _destination_claim_many): raises the error of a claimed event
 * that is not one of a destination channel. Called for such a row only (volatile: never run
 * ahead by the planner in the claim's statement); returns nothing.
 */
BEGIN
    RAISE EXCEPTION 'an event of channel "%" is a "%" event, not one of a destination', channel, action_type
        USING ERRCODE = 'wrong_object_type';
END
$$;
COMMENT ON FUNCTION pgrelay._not_a_destination(text, text) IS
    'Internal: raises the error of a claimed event that is not one of a destination channel';

-- pgrelay._destination_claim_many()
CREATE OR REPLACE FUNCTION pgrelay._destination_claim_many(ids bigint[])
RETURNS TABLE (payload text, attempt integer, event_id bigint, channel text, action_type text, key text,
               queued_at timestamptz, settings jsonb, timeout_ms integer, replayed boolean,
               publication_id bigint, event_type text, queue_id bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
-- As _claim_rows: generic plans (a custom plan takes longer to make than to run), no sequential
-- scans (the plan is kept for the session), no jit.
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $$
/*
 * The first step of the Processor's held transaction for destination events (a broker's kind
 * delivers a batch of them together, then _finish_held_many finishes them together; one event
 * alone: _destination_claim): claims the rows that can be claimed now (_claim_rows, the checks of
 * _claim_event for all the events at once), locked until the caller's transaction ends, and
 * returns them in the order of ids (an id listed twice: its first place), each with its queue_id,
 * what its message carries and its channel's settings (secret references as given: the Processor
 * resolves them) and timeout. An event that could not be claimed (skipped) has no row and stays
 * as it is. replayed: the row's attempt was recorded already and the claim finished it (deleted
 * it); nothing is sent, and settings, key, publication_id and event_type are NULL. settings is
 * NULL too for a channel that has none. A claimed event of a channel that is not a destination is
 * an error.
 */
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT x.payload, x.attempt, x.event_id, x.channel,
           CASE WHEN x.action_type = ANY (pgrelay._destination_kinds()) THEN x.action_type
                ELSE pgrelay._not_a_destination(x.channel, x.action_type) END,
           CASE WHEN x.replayed_log IS NULL THEN x.key END, x.queued_at,
           CASE WHEN x.replayed_log IS NULL THEN d.settings END,
           (pg_catalog.date_part('epoch', x.timeout) * 1000)::integer, x.replayed_log IS NOT NULL,
           CASE WHEN x.replayed_log IS NULL THEN x.publication_id END,
           CASE WHEN x.replayed_log IS NULL THEN x.event_type END, x.queue_id
    FROM pgrelay._claim_rows(_destination_claim_many.ids) x
    -- a plain join: every claimed row is returned (_claim_rows took its channel's lock already)
    LEFT JOIN pgrelay.destinations d ON d.channel = x.channel
    ORDER BY x.ord;
END
$$;
COMMENT ON FUNCTION pgrelay._destination_claim_many(bigint[]) IS
    'Claims destination events for this transaction, in order, with their channels'' settings; a missing row means skipped';

-- pgrelay._destination_claim()
CREATE OR REPLACE FUNCTION pgrelay._destination_claim(id bigint)
RETURNS TABLE (payload text, attempt integer, event_id bigint, channel text, action_type text, key text,
               queued_at timestamptz, settings jsonb, timeout_ms integer, replayed boolean,
               publication_id bigint, event_type text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * The first step of the Processor's held transaction for one destination event: claims the row
 * (_claim_event, the checks of every claim: no row means skipped) and returns what its message
 * carries with the channel's settings (secret references as given: the Processor resolves them)
 * and timeout. settings is NULL when the channel has none. replayed: the row's attempt was
 * recorded already and the claim finished it; nothing is sent. key, publication_id and
 * event_type come from the queue row the claim locked (NULL for a notify() without a key; NULL
 * all three, and settings, when replayed). A batch of them is _destination_claim_many, one
 * statement; one event alone costs less this way (a single row needs no set-based plan).
 */
#variable_conflict use_column
DECLARE
    c pgrelay._claim;
BEGIN
    c := pgrelay._claim_event(_destination_claim.id);
    IF c.queue_id IS NULL THEN
        RETURN;
    END IF;
    IF NOT c.action_type = ANY (pgrelay._destination_kinds()) THEN
        PERFORM pgrelay._not_a_destination(c.channel, c.action_type);
    END IF;
    -- a replayed row is deleted already: no queue row, NULL key, publication_id and event_type
    RETURN QUERY
    SELECT c.payload, c.attempt, c.event_id, c.channel, c.action_type, x.key, c.queued_at,
           CASE WHEN c.replayed_log IS NULL
                THEN (SELECT d.settings FROM pgrelay.destinations d WHERE d.channel = c.channel) END,
           c.timeout_ms, c.replayed_log IS NOT NULL, x.publication_id, x.event_type
    FROM (SELECT) o
    LEFT JOIN pgrelay.queue x ON x.id = c.queue_id;
END
$$;
COMMENT ON FUNCTION pgrelay._destination_claim(bigint) IS
    'Claims a destination event for this transaction and returns it with its channel''s settings; no row means skipped';
