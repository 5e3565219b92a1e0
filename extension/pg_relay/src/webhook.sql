/* extension/pg_relay/src/webhook.sql: webhooks: an admin registers a channel's HTTP endpoint; the Processor claims and finishes its events */

-- pgrelay._secret_error()
CREATE OR REPLACE FUNCTION pgrelay._secret_error(secret text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    -- The secret reference syntax the Processor resolves (docs/webhooks.md): a literal value,
    -- env:NAME, file:NAME (inside its --secrets-dir) or value:TEXT. NULL when the text is one;
    -- the reason never repeats a literal value.
    SELECT CASE
        WHEN secret IS NULL THEN NULL
        WHEN secret = '' THEN 'is empty'
        WHEN secret LIKE 'env:%' AND substr(secret, 5) !~ '^[A-Za-z_][A-Za-z0-9_]*$' THEN
            format('"%s" is not a valid env: reference (the variable name is [A-Za-z_][A-Za-z0-9_]*)',
                   pgrelay._show(secret))
        WHEN secret LIKE 'file:%' AND (substr(secret, 6) = '' OR strpos(substr(secret, 6), '/') > 0
                                       OR substr(secret, 6, 1) = '.' OR secret ~ '[[:cntrl:]]') THEN
            format('"%s" is not a valid file: reference (a file name in the Processor''s secrets directory: '
                   'not empty, no /, not starting with a dot)', pgrelay._show(secret))
        WHEN secret = 'value:' THEN 'is an empty value: reference'
        ELSE NULL
    END
$$;
COMMENT ON FUNCTION pgrelay._secret_error(text) IS
    'NULL when a text is a literal secret or a well-formed env:/file:/value: reference, else the reason';

-- pgrelay._secret_shown()
CREATE OR REPLACE FUNCTION pgrelay._secret_shown(secret text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    -- How a secret is given, for admins: a reference names where the value lives (not a secret
    -- itself); a literal value (value:TEXT included) is never shown.
    SELECT CASE
        WHEN secret IS NULL THEN NULL
        WHEN secret LIKE 'env:%' OR secret LIKE 'file:%' THEN secret
        ELSE 'literal'
    END
$$;
COMMENT ON FUNCTION pgrelay._secret_shown(text) IS
    'How a secret is given (env:NAME, file:NAME or literal), never its literal value';

-- pgrelay._signing_secret_error()
CREATE OR REPLACE FUNCTION pgrelay._signing_secret_error(secret text) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (register_webhook): NULL when a signing secret can sign, else the reason. One form
 * only, the one Standard Webhooks defines and its libraries take: whsec_ followed by the base64
 * of the key, 24 to 64 random bytes (any key K is whsec_ || encode(K, 'base64')). A reference
 * (env:, file:) is checked by the Processor when it resolves it; the reason never shows a value.
 */
DECLARE
    v text := CASE WHEN secret LIKE 'value:%' THEN substr(secret, 7) ELSE secret END;
    key bytea;
BEGIN
    IF pgrelay._secret_error(secret) IS NOT NULL THEN
        RETURN pgrelay._secret_error(secret);
    END IF;
    IF secret LIKE 'env:%' OR secret LIKE 'file:%' THEN
        RETURN NULL;
    END IF;
    IF v NOT LIKE 'whsec\_%' THEN
        RETURN 'must be whsec_ followed by the base64 of 24 to 64 random bytes';
    END IF;
    BEGIN
        key := decode(substr(v, 7), 'base64');
    EXCEPTION WHEN invalid_parameter_value THEN
        RETURN 'starts with whsec_ but the rest is not base64';
    END;
    IF length(key) NOT BETWEEN 24 AND 64 THEN
        RETURN format('is a key of %s bytes; a key has 24 to 64 random bytes', length(key));
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgrelay._signing_secret_error(text) IS
    'NULL when a webhook signing secret (whsec_ and base64, or a reference) is usable, else the reason';

-- pgrelay._webhook_url_error()
CREATE OR REPLACE FUNCTION pgrelay._webhook_url_error(url text, allow_http boolean) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    -- NULL when url is an endpoint pg_relay sends to: https:// (http:// only when the admin says
    -- so), a host, an optional port and path and query; no credentials in it (they go in a
    -- header, as a secret reference) and no fragment (never sent).
    SELECT CASE
        WHEN url IS NULL THEN 'is missing'
        WHEN length(url) > 2048 THEN 'is longer than 2048 characters'
        WHEN url ~ '[[:cntrl:][:space:]]' THEN 'contains a space or a control character'
        WHEN url ~ '^http://' AND NOT COALESCE(allow_http, false) THEN
            'is http://: webhooks are sent over https:// unless the channel has allow_http => true'
        WHEN url !~ '^https?://' THEN 'must start with https:// (in lower case)'
        WHEN url ~ '^[A-Za-z]+://[^/?#]*@' THEN
            'must not hold credentials (user:password@): put them in a header, as a secret reference'
        WHEN strpos(url, '#') > 0 THEN 'must not have a fragment (#...)'
        WHEN url !~ '^[A-Za-z]+://([A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?(/[A-Za-z0-9._~%!$&''()*+,;=:@/-]*)?(\?[A-Za-z0-9._~%!$&''()*+,;=:@/?-]*)?$'
            THEN 'is not a valid URL (scheme, host, optional port, path and query)'
        WHEN substring(url from '^[A-Za-z]+://[^/?]*:([0-9]+)')::integer NOT BETWEEN 1 AND 65535
            THEN 'has a port outside 1-65535'
        ELSE NULL
    END
$$;
COMMENT ON FUNCTION pgrelay._webhook_url_error(text, boolean) IS
    'NULL when a text is a webhook endpoint URL (https://, or http:// when allowed), else the reason';

-- pgrelay._webhook_headers_error()
CREATE OR REPLACE FUNCTION pgrelay._webhook_headers_error(headers jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (register_webhook): NULL when headers is a JSON object of request headers the
 * Processor may add, else the reason. A name is an HTTP token that pg_relay or the HTTP framing
 * does not own; a value is a non-empty string without control characters (no CR or LF: no header
 * injection), given as a literal or a secret reference.
 */
DECLARE
    reserved CONSTANT text[] := ARRAY['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive',
                                      'upgrade', 'te', 'trailer', 'expect', 'webhook-id', 'webhook-timestamp',
                                      'webhook-signature', 'pg-relay-publication-id', 'pg-relay-event-type'];
    e record;
    seen text[] := '{}';
BEGIN
    IF headers IS NULL THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(headers) <> 'object' THEN
        RETURN 'headers must be a JSON object of header names and values, like {"Authorization": "env:HOOK_TOKEN"}';
    END IF;
    IF (SELECT count(*) FROM jsonb_object_keys(headers)) > 50 THEN
        RETURN 'headers has more than 50 headers';
    END IF;
    FOR e IN SELECT key, value FROM jsonb_each(headers) LOOP
        IF e.key !~ '^[-!#$%&''*+.^_`|~0-9A-Za-z]{1,128}$' THEN
            RETURN format('header name "%s" is not a token (1 to 128 letters, digits and !#$%%&''*+-.^_`|~)',
                          pgrelay._show(e.key));
        END IF;
        IF lower(e.key) = ANY (reserved) OR lower(e.key) LIKE 'proxy-%' THEN
            RETURN format('header "%s" is set by pg_relay or the HTTP connection, not by a channel', e.key);
        END IF;
        IF lower(e.key) = ANY (seen) THEN
            RETURN format('header "%s" is given twice (names are case-insensitive)', e.key);
        END IF;
        seen := seen || lower(e.key);
        IF jsonb_typeof(e.value) <> 'string' THEN
            RETURN format('header "%s" must have a string value', e.key);
        END IF;
        IF e.value #>> '{}' = '' THEN
            RETURN format('header "%s" has an empty value', e.key);
        END IF;
        IF e.value #>> '{}' ~ '[\x01-\x08\x0a-\x1f\x7f]' THEN
            RETURN format('header "%s" has a control character (CR, LF, ...) in its value', e.key);
        END IF;
        IF octet_length(e.value #>> '{}') > 8192 THEN
            RETURN format('header "%s" has a value longer than 8192 bytes', e.key);
        END IF;
        IF pgrelay._secret_error(e.value #>> '{}') IS NOT NULL THEN
            RETURN format('header "%s": %s', e.key, pgrelay._secret_error(e.value #>> '{}'));
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgrelay._webhook_headers_error(jsonb) IS
    'NULL when a JSON object holds request headers a webhook channel may send, else the reason';

-- pgrelay._check_webhook()
CREATE OR REPLACE FUNCTION pgrelay._check_webhook(w pgrelay.webhooks, signing_secret text, method text, headers jsonb)
RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (register_webhook): raises a clear error for the first setting of an endpoint that is
 * not valid, in this order: its url, method, headers, signing secret, ca_file. w is the endpoint
 * as it will be written (its headers not yet), signing_secret the secret it will have; method
 * and headers are the arguments as given (NULL when not), so that a message shows what the admin
 * wrote and headers are checked only when given.
 */
DECLARE
    shown CONSTANT text := pgrelay._show(w.channel);
    reason text;
BEGIN
    reason := pgrelay._webhook_url_error(w.url, w.allow_http);
    IF reason IS NOT NULL THEN
        RAISE EXCEPTION 'webhook "%": url %', shown,
                        CASE WHEN w.url IS NULL THEN '' ELSE '"' || pgrelay._show(w.url) || '" ' END || reason
            USING ERRCODE = CASE WHEN w.url IS NULL THEN 'null_value_not_allowed' ELSE 'invalid_parameter_value' END;
    END IF;
    IF w.method NOT IN ('POST', 'PUT', 'PATCH') THEN
        RAISE EXCEPTION 'webhook "%": invalid method "%"', shown, pgrelay._show(_check_webhook.method)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'A webhook sends the payload as the request body: POST (the default), PUT or PATCH.';
    END IF;
    reason := pgrelay._webhook_headers_error(_check_webhook.headers);
    IF reason IS NOT NULL THEN
        RAISE EXCEPTION 'webhook "%": %', shown, reason
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'headers => ''{"Name": "value"}''; a value is a literal or a secret reference: env:NAME, file:NAME, value:TEXT.';
    END IF;
    reason := pgrelay._signing_secret_error(_check_webhook.signing_secret);
    IF reason IS NOT NULL THEN
        RAISE EXCEPTION 'webhook "%": signing_secret %', shown, reason
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Make one with "whsec_$(openssl rand -base64 32)", or SELECT ''whsec_'' || encode(gen_random_bytes(32), ''base64'') (pgcrypto).';
    END IF;
    IF w.ca_file IS NOT NULL AND (w.ca_file !~ '^/' OR w.ca_file ~ '[[:cntrl:]]' OR length(w.ca_file) > 1024) THEN
        RAISE EXCEPTION 'webhook "%": ca_file must be an absolute path on the Processor''s machine', shown
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay._check_webhook(pgrelay.webhooks, text, text, jsonb) IS
    'Internal: raises a clear error for the first setting of a webhook endpoint that is not valid';

-- pgrelay.register_webhook()
CREATE OR REPLACE FUNCTION pgrelay.register_webhook(channel text, url text DEFAULT NULL,
                                                    method text DEFAULT NULL,
                                                    headers jsonb DEFAULT NULL,
                                                    signing_secret text DEFAULT NULL,
                                                    ca_file text DEFAULT NULL,
                                                    allow_http boolean DEFAULT NULL,
                                                    debug boolean DEFAULT NULL,
                                                    timeout interval DEFAULT NULL,
                                                    max_attempts integer DEFAULT NULL,
                                                    backoff_base interval DEFAULT NULL,
                                                    backoff_max interval DEFAULT NULL,
                                                    concurrency_mode text DEFAULT NULL,
                                                    node_restricted boolean DEFAULT NULL,
                                                    active boolean DEFAULT NULL,
                                                    description text DEFAULT NULL,
                                                    max_payload_bytes integer DEFAULT NULL,
                                                    reset text[] DEFAULT NULL)
RETURNS pgrelay.webhooks
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Creates a webhook channel, or changes one (named arguments; NULL keeps a value, reset lists the
 * endpoint settings to put back to their defaults: method, headers, signing_secret, ca_file,
 * allow_http, debug). The endpoint is fixed here, by an admin: a payload never chooses where a
 * request goes. The channel's own settings (timeout, retries, ...) go on to pgrelay.register().
 * Returns the endpoint row (header values and the secret shown only as how they are given).
 */
DECLARE
    resettable CONSTANT text[] := ARRAY['method', 'headers', 'signing_secret', 'ca_file', 'allow_http', 'debug'];
    given CONSTANT jsonb := jsonb_strip_nulls(jsonb_build_object(
        'method', method, 'headers', headers, 'signing_secret', signing_secret, 'ca_file', ca_file,
        'allow_http', allow_http, 'debug', debug));
    shown CONSTANT text := pgrelay._show(register_webhook.channel); -- for messages; register() checks the name
    c pgrelay.channels;
    w pgrelay.webhooks;
    s pgrelay.webhook_secrets;
    k text;
BEGIN
    IF register_webhook.channel IS NULL THEN
        RAISE EXCEPTION 'channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO c FROM pgrelay.channels x WHERE x.channel = register_webhook.channel FOR UPDATE;
    IF FOUND AND c.action_type <> 'webhook' THEN
        RAISE EXCEPTION 'channel "%" exists already with action type %', shown, c.action_type
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Pick another name, or unregister that channel first.';
    END IF;
    SELECT * INTO w FROM pgrelay.webhooks x WHERE x.channel = register_webhook.channel FOR UPDATE;
    IF NOT FOUND THEN
        w.channel := register_webhook.channel;
        w.method := 'POST';
        w.allow_http := false;
        w.debug := false;
        w.headers := '{}';
        s.channel := register_webhook.channel;
        s.headers := '[]';
    ELSE
        SELECT * INTO s FROM pgrelay.webhook_secrets x WHERE x.channel = register_webhook.channel;
        s.channel := register_webhook.channel;
    END IF;

    FOREACH k IN ARRAY COALESCE(register_webhook.reset, '{}') LOOP
        IF k IS NULL OR NOT k = ANY (resettable) THEN
            RAISE EXCEPTION 'webhook "%": "%" cannot be reset', shown, pgrelay._show(k)
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'reset takes method, headers, signing_secret, ca_file, allow_http and debug.';
        END IF;
        IF given ? k THEN
            RAISE EXCEPTION 'webhook "%": % is both given and reset', shown, k
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        CASE k
            WHEN 'method' THEN w.method := 'POST';
            WHEN 'headers' THEN s.headers := '[]'; w.headers := '{}';
            WHEN 'signing_secret' THEN s.signing_secret := NULL;
            WHEN 'ca_file' THEN w.ca_file := NULL;
            WHEN 'allow_http' THEN w.allow_http := false;
            WHEN 'debug' THEN w.debug := false;
        END CASE;
    END LOOP;

    w.url := COALESCE(register_webhook.url, w.url);
    w.method := upper(COALESCE(register_webhook.method, w.method));
    w.allow_http := COALESCE(register_webhook.allow_http, w.allow_http);
    w.ca_file := COALESCE(register_webhook.ca_file, w.ca_file);
    w.debug := COALESCE(register_webhook.debug, w.debug);
    s.signing_secret := COALESCE(register_webhook.signing_secret, s.signing_secret);
    PERFORM pgrelay._check_webhook(w, s.signing_secret, register_webhook.method, register_webhook.headers);
    IF register_webhook.headers IS NOT NULL THEN
        s.headers := (SELECT COALESCE(jsonb_agg(jsonb_build_array(e.key, e.value) ORDER BY e.key), '[]')
                      FROM jsonb_each(register_webhook.headers) e);
        w.headers := (SELECT COALESCE(jsonb_object_agg(e.key, pgrelay._secret_shown(e.value #>> '{}')), '{}')
                      FROM jsonb_each(register_webhook.headers) e);
    END IF;
    w.signing := pgrelay._secret_shown(s.signing_secret);
    w.updated_at := now();

    -- The endpoint first: register() refuses a webhook channel without one. Its foreign key is
    -- checked at the commit, unless something earlier in the transaction made every constraint
    -- immediate (process_one() does, once a handler returned): deferred again for this statement.
    SET CONSTRAINTS pgrelay.webhooks_channel_fkey DEFERRED;
    INSERT INTO pgrelay.webhooks AS x SELECT w.*
    ON CONFLICT ON CONSTRAINT webhooks_pkey DO UPDATE
        SET url = EXCLUDED.url, method = EXCLUDED.method, allow_http = EXCLUDED.allow_http,
            ca_file = EXCLUDED.ca_file, debug = EXCLUDED.debug, headers = EXCLUDED.headers,
            signing = EXCLUDED.signing, updated_at = EXCLUDED.updated_at;
    INSERT INTO pgrelay.webhook_secrets AS x SELECT s.*
    ON CONFLICT ON CONSTRAINT webhook_secrets_pkey DO UPDATE
        SET headers = EXCLUDED.headers, signing_secret = EXCLUDED.signing_secret;
    PERFORM pgrelay.register(register_webhook.channel, 'webhook', concurrency_mode => register_webhook.concurrency_mode,
                             node_restricted => register_webhook.node_restricted,
                             max_attempts => register_webhook.max_attempts, timeout => register_webhook.timeout,
                             backoff_base => register_webhook.backoff_base, backoff_max => register_webhook.backoff_max,
                             active => register_webhook.active, description => register_webhook.description,
                             max_payload_bytes => register_webhook.max_payload_bytes);
    SELECT * INTO w FROM pgrelay.webhooks x WHERE x.channel = register_webhook.channel;
    RETURN w;
END
$$;
COMMENT ON FUNCTION pgrelay.register_webhook(text, text, text, jsonb, text, text, boolean, boolean, interval, integer,
                                             interval, interval, text, boolean, boolean, text, integer, text[]) IS
    'Creates or changes a webhook channel and its HTTP endpoint (named arguments; NULL keeps a value, reset restores defaults)';

-- pgrelay._webhook_claim()
CREATE OR REPLACE FUNCTION pgrelay._webhook_claim(id bigint)
RETURNS TABLE (payload text, attempt integer, event_id bigint, endpoint jsonb, replayed boolean,
               publication_id bigint, event_type text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * The first step of the Processor's held transaction for a webhook event: claims the row
 * (_queue_claim: no row means skipped) and returns its payload, attempt and event id with the
 * channel's endpoint: URL, method, headers and signing secret as given (references are resolved
 * by the Processor), CA file, the channel's timeout. endpoint is NULL when the channel has none.
 * replayed: the row's attempt was recorded already and the claim finished it (_claim_event);
 * endpoint is NULL then, and nothing is sent. publication_id and event_type: the publication
 * (publish()) the event delivers and its event type, NULL for an event of notify(); read from the
 * queue row the claim locked (the last two columns: a Processor 1.3 names the ones it reads).
 */
#variable_conflict use_column
DECLARE
    c record;
    pub bigint;
    etype text;
BEGIN
    SELECT * INTO c FROM pgrelay._queue_claim(_webhook_claim.id);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF c.action_type <> 'webhook' THEN
        RAISE EXCEPTION 'an event of channel "%" is a "%" event, not a webhook', c.channel, c.action_type
            USING ERRCODE = 'wrong_object_type';
    END IF;
    IF c.replayed THEN
        RETURN QUERY SELECT c.payload, c.attempt, c.event_id, NULL::jsonb, true, NULL::bigint, NULL::text;
        RETURN;
    END IF;
    SELECT q.publication_id, q.event_type INTO pub, etype FROM pgrelay.queue q WHERE q.id = c.queue_id;
    RETURN QUERY
    SELECT c.payload, c.attempt, c.event_id,
           (SELECT jsonb_build_object('channel', w.channel, 'url', w.url, 'method', w.method,
                                      'allow_http', w.allow_http, 'ca_file', w.ca_file, 'debug', w.debug,
                                      'headers', COALESCE(s.headers, '[]'), 'signing_secret', s.signing_secret,
                                      'timeout_ms', c.timeout_ms)
            FROM pgrelay.webhooks w LEFT JOIN pgrelay.webhook_secrets s ON s.channel = w.channel
            WHERE w.channel = c.channel),
           false, pub, etype;
END
$$;
COMMENT ON FUNCTION pgrelay._webhook_claim(bigint) IS
    'Claims a webhook event for this transaction and returns its payload with the channel''s endpoint; no row means skipped';

-- pgrelay._webhook_mark_gone()
CREATE OR REPLACE FUNCTION pgrelay._webhook_mark_gone(channel text, status integer, reason text) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal (_finish_held, _webhook_gone; executable by nobody else): the endpoint of the channel
 * answered 410 Gone: it wants no more requests. The channel is paused (its producers keep
 * queueing: making it inactive would make their transactions fail for a remote server's answer)
 * and the endpoint marked gone, for an admin to fix (register_webhook) and resume(channel), or to
 * unregister.
 */
BEGIN
    UPDATE pgrelay.webhooks w
    SET gone_at = now(), gone_status = _webhook_mark_gone.status, gone_reason = left(_webhook_mark_gone.reason, 1000)
    WHERE w.channel = _webhook_mark_gone.channel;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'channel "%" has no webhook endpoint', _webhook_mark_gone.channel
            USING ERRCODE = 'undefined_object';
    END IF;
    UPDATE pgrelay.channels x SET paused = true, updated_at = now() WHERE x.channel = _webhook_mark_gone.channel;
END
$$;
COMMENT ON FUNCTION pgrelay._webhook_mark_gone(text, integer, text) IS
    'Internal: marks the webhook endpoint of a channel gone (410) and pauses the channel';

-- pgrelay._webhook_gone()
CREATE OR REPLACE FUNCTION pgrelay._webhook_gone(queue_id bigint, status integer, reason text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * The endpoint of the claimed event's channel answered 410 Gone (_webhook_mark_gone), before
 * _write_log: the held transaction of a Processor of pg_relay 1.3 (the Processor of 1.4 passes
 * the status to _finish_held). The row stays locked by this transaction, as by _write_log().
 */
DECLARE
    q pgrelay.queue := pgrelay._lock_claimed(queue_id);
BEGIN
    PERFORM pgrelay._webhook_mark_gone(q.channel, status, reason);
END
$$;
COMMENT ON FUNCTION pgrelay._webhook_gone(bigint, integer, text) IS
    'Marks the endpoint of a claimed webhook event''s channel gone (410) and pauses the channel';
