/* extension/pg_relay_notifier/src/interface.sql: the Processor interface: fetch and set_status (docs/interface.md) */

-- pgrelay_notifier._pk()
CREATE OR REPLACE FUNCTION pgrelay_notifier._pk(pk text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    -- The payload of a notify event as an id: NULL unless it is 1 to 19 digits within bigint.
    SELECT CASE WHEN pk ~ '^[0-9]{1,19}$' AND (pg_catalog.length(pk) < 19 OR pk <= '9223372036854775807')
                THEN pk::bigint END
$$;
COMMENT ON FUNCTION pgrelay_notifier._pk(text) IS 'A notify payload as a notification id, NULL when malformed';

-- pgrelay_notifier._profile_doc()
CREATE OR REPLACE FUNCTION pgrelay_notifier._profile_doc(name text) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
/*
 * PL/pgSQL, not SQL: fetch() calls this once per email, and PostgreSQL plans the body of a SQL
 * function that cannot be inlined again on every call (~0.1 ms here); PL/pgSQL keeps the plan for
 * the session (docs/design/benchmark-notes.md).
 */
DECLARE
    doc jsonb;
BEGIN
    SELECT jsonb_build_object(
        'name', p.name,
        'transport', p.transport,
        'debug', p.debug,
        'connect_timeout_ms', pgrelay_notifier._ms(p.connect_timeout),
        'timeout_ms', pgrelay_notifier._ms(p.timeout),
        'rate_limit_per_minute', p.rate_limit_per_minute,
        'max_message_bytes', p.max_message_bytes,
        'smtp', CASE WHEN p.transport = 'smtp' THEN jsonb_build_object(
                    'host', p.host,
                    'port', COALESCE(p.port, CASE p.security WHEN 'tls' THEN 465 WHEN 'none' THEN 25 ELSE 587 END),
                    'security', p.security,
                    'username', p.username,
                    'password', s.password,
                    'oauth_token', s.oauth_token,
                    'ca_file', p.ca_file,
                    'helo_name', p.helo_name,
                    -- the OAuth2 app whose XOAUTH2 tokens the Processor gets itself
                    'tenant_id', p.tenant_id,
                    'client_id', p.client_id,
                    'client_secret', s.client_secret,
                    'login_url', CASE WHEN p.tenant_id IS NOT NULL
                                      THEN COALESCE(p.login_url, 'https://login.microsoftonline.com') END,
                    'scope', p.scope) END,
        'graph', CASE WHEN p.transport = 'graph' THEN jsonb_build_object(
                    'tenant_id', p.tenant_id,
                    'client_id', p.client_id,
                    'client_secret', s.client_secret,
                    'sender', p.sender,
                    'login_url', p.login_url,
                    'graph_url', p.graph_url,
                    'scope', p.scope,
                    'ca_file', p.ca_file,
                    'save_to_sent_items', p.save_to_sent_items) END)
    INTO doc
    FROM pgrelay_notifier.profiles p
    LEFT JOIN pgrelay_notifier.profile_secrets s ON s.profile = p.name
    WHERE p.name = _profile_doc.name;
    RETURN doc;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._profile_doc(text) IS
    'The "profile" object of the fetch() document, secrets as stored (references stay references)';

-- pgrelay_notifier.fetch()
CREATE OR REPLACE FUNCTION pgrelay_notifier.fetch(pk text, event_id bigint) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: the whole message and its profile as the document of docs/interface.md, for the
 * Processor inside its held transaction. event_id is the event_id of the queue row the Processor
 * claimed: only the event send() or requeue() queued for a notification may deliver it, so an
 * event queued with pgrelay.notify() by anyone else gets nothing (a producer cannot release a
 * message held for later, on an inactive channel, or someone else's). Writes nothing. It locks
 * the notification row (FOR NO KEY UPDATE) until that transaction ends, so cancel() waits for the
 * attempt's outcome instead of racing it, and takes a transaction-level advisory lock on the id
 * that get_status() reads as "sending".
 * Returns: the document; NULL when pk is malformed, no notification has that id, or it was not
 * queued by this event.
 */
DECLARE
    nid bigint := pgrelay_notifier._pk(pk);
    claimed ALIAS FOR $2; -- event_id: "fetch" is a PL/pgSQL keyword and cannot qualify a name
    n pgrelay_notifier.notifications;
BEGIN
    IF nid IS NULL OR claimed IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT * INTO n FROM pgrelay_notifier.notifications x WHERE x.notification_id = nid FOR NO KEY UPDATE;
    IF NOT FOUND OR n.queue_event_id IS DISTINCT FROM claimed THEN
        RETURN NULL;
    END IF;
    PERFORM pg_try_advisory_xact_lock(nid);
    RETURN jsonb_build_object(
        'interface_version', 4,
        'notification_id', n.notification_id,
        'status', n.status,
        'channel', n.channel,
        'message_id', n.message_id,
        'from', jsonb_build_object('address', n.from_address, 'name', n.from_name),
        'reply_to', n.reply_to,
        'recipients', (SELECT COALESCE(jsonb_agg(jsonb_build_object(
                                           'id', r.recipient_id, 'kind', r.kind, 'address', r.address,
                                           'name', r.name, 'status', r.status) ORDER BY r.recipient_id), '[]')
                       FROM pgrelay_notifier.recipients r WHERE r.notification_id = nid),
        'subject', n.subject,
        'body_text', n.body_text,
        'body_html', n.body_html,
        'headers', n.headers,
        'attachments', (SELECT COALESCE(jsonb_agg(jsonb_build_object(
                                            'filename', a.filename, 'content_type', a.content_type,
                                            'size', octet_length(a.content), 'content_id', a.content_id,
                                            'content_base64', translate(encode(a.content, 'base64'), E'\n', ''))
                                        ORDER BY a.position), '[]')
                        FROM pgrelay_notifier.attachments a WHERE a.notification_id = nid),
        'profile', pgrelay_notifier._profile_doc(n.profile));
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.fetch(text, bigint) IS
    'The Processor''s view of one notification (docs/interface.md); NULL for an unknown or malformed id or another event''s';

-- pgrelay_notifier._json_int()
CREATE OR REPLACE FUNCTION pgrelay_notifier._json_int(doc jsonb, key text, lo bigint, hi bigint) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v jsonb := doc -> key;
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v) <> 'number' OR (v #>> '{}') !~ '^-?[0-9]{1,18}$' OR (v #>> '{}')::bigint NOT BETWEEN lo AND hi THEN
        RAISE EXCEPTION 'set_status: % must be an integer between % and %', key, lo, hi
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN (v #>> '{}')::bigint;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._json_int(jsonb, text, bigint, bigint) IS
    'An integer member of a set_status() document (NULL when absent), or a clear error';

-- pgrelay_notifier._json_text()
CREATE OR REPLACE FUNCTION pgrelay_notifier._json_text(doc jsonb, key text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v jsonb := doc -> key;
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v) <> 'string' THEN
        RAISE EXCEPTION 'set_status: % must be a string', key USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN v #>> '{}';
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._json_text(jsonb, text) IS
    'A string member of a set_status() document (NULL when absent), or a clear error';

-- pgrelay_notifier._json_time()
CREATE OR REPLACE FUNCTION pgrelay_notifier._json_time(doc jsonb, key text) RETURNS timestamptz
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v text := pgrelay_notifier._json_text(doc, key);
    t timestamptz;
BEGIN
    BEGIN
        t := v::timestamptz;
    EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR invalid_parameter_value THEN
        RAISE EXCEPTION 'set_status: % is not a timestamp: "%"', key, pgrelay_notifier._show(v)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use ISO 8601 with a time zone, e.g. 2026-11-29T19:20:50.123+00.';
    END;
    -- "infinity" reads as a timestamp, but no attempt starts, ends or is planned then.
    IF NOT isfinite(t) THEN
        RAISE EXCEPTION 'set_status: % must be a finite time, not "%"', key, pgrelay_notifier._show(v)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN t;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._json_time(jsonb, text) IS
    'A timestamp member (ISO 8601 string) of a set_status() document (NULL when absent), or a clear error';

-- pgrelay_notifier._status_recipients()
CREATE OR REPLACE FUNCTION pgrelay_notifier._status_recipients(nid bigint, outcome text, rcpts jsonb)
RETURNS bigint[]
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (set_status): checks the recipient results of a status document against the
 * notification and the outcome, then records them; a recipient once sent stays sent. A final
 * outcome settles the envelope recipients the document does not list: sent means every one was
 * accepted, failed that none will be tried again.
 * Returns: the ids of the recipients the document lists.
 */
DECLARE
    e jsonb;
    rid bigint;
    rstatus text;
    ids bigint[] := '{}';
BEGIN
    IF jsonb_typeof(rcpts) <> 'array' THEN
        RAISE EXCEPTION 'set_status: recipients must be an array' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR e IN SELECT x.value FROM jsonb_array_elements(rcpts) x LOOP
        IF jsonb_typeof(e) <> 'object' THEN
            RAISE EXCEPTION 'set_status: each recipient result must be an object' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        rid := pgrelay_notifier._json_int(e, 'id', 1, 2147483647);
        IF rid IS NULL THEN
            RAISE EXCEPTION 'set_status: a recipient result has no id' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pgrelay_notifier.recipients r
                                      WHERE r.notification_id = nid AND r.recipient_id = rid) THEN
            RAISE EXCEPTION 'set_status: notification % has no recipient %', nid, rid
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF rid = ANY (ids) THEN
            RAISE EXCEPTION 'set_status: recipient % is listed twice', rid USING ERRCODE = 'invalid_parameter_value';
        END IF;
        ids := ids || rid;
        rstatus := pgrelay_notifier._json_text(e, 'status');
        IF rstatus IS NULL OR rstatus NOT IN ('sent', 'failed', 'retrying') THEN
            RAISE EXCEPTION 'set_status: recipient %: invalid status "%"', rid, pgrelay_notifier._show(rstatus)
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Use sent, failed or retrying.';
        END IF;
        IF rstatus = 'retrying' AND outcome <> 'retrying' THEN
            RAISE EXCEPTION 'set_status: recipient %: status retrying needs outcome retrying, not %', rid, outcome
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF outcome = 'sent' AND rstatus <> 'sent' THEN
            RAISE EXCEPTION 'set_status: recipient %: outcome sent needs every listed recipient sent, not %', rid, rstatus
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Use outcome partially_sent when some recipients failed for good.';
        END IF;
        PERFORM pgrelay_notifier._json_int(e, 'code', 0, 999);
        PERFORM pgrelay_notifier._json_text(e, 'reply');
    END LOOP;

    UPDATE pgrelay_notifier.recipients r
    SET status = x.value ->> 'status',
        code = (x.value ->> 'code')::integer,
        reply = x.value ->> 'reply',
        updated_at = now()
    FROM jsonb_array_elements(rcpts) x
    WHERE r.notification_id = nid AND r.recipient_id = (x.value ->> 'id')::integer
      AND r.status <> 'sent';
    IF outcome IN ('sent', 'failed') THEN
        UPDATE pgrelay_notifier.recipients r
        SET status = outcome, updated_at = now()
        WHERE r.notification_id = nid AND r.status IN ('pending', 'retrying') AND NOT r.recipient_id = ANY (ids);
    END IF;
    RETURN ids;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._status_recipients(bigint, text, jsonb) IS
    'Internal: checks and records the recipient results of a set_status() document';

-- pgrelay_notifier._status_trace()
CREATE OR REPLACE FUNCTION pgrelay_notifier._status_trace(n pgrelay_notifier.notifications, attempt_id bigint,
                                                          trace text)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (set_status): keeps an attempt's protocol trace when the notification's profile has
 * debug on. Defence in depth: the Processor redacts credentials, and the profile's literal secrets
 * (and their base64 forms, as AUTH sends them) are masked here once more.
 */
DECLARE
    s pgrelay_notifier.profile_secrets;
    sec text;
BEGIN
    IF trace IS NULL OR NOT COALESCE((SELECT p.debug FROM pgrelay_notifier.profiles p WHERE p.name = n.profile), false) THEN
        RETURN;
    END IF;
    SELECT * INTO s FROM pgrelay_notifier.profile_secrets x WHERE x.profile = n.profile;
    FOREACH sec IN ARRAY ARRAY[s.password, s.oauth_token, s.client_secret] LOOP
        IF sec IS NOT NULL AND sec !~ '^(env|file):' AND length(sec) >= 4 THEN
            sec := regexp_replace(sec, '^value:', '');
            trace := replace(trace, sec, '[redacted]');
            trace := replace(trace, translate(encode(convert_to(sec, 'UTF8'), 'base64'), E'\n', ''), '[redacted]');
        END IF;
    END LOOP;
    INSERT INTO pgrelay_notifier.attempt_traces (attempt_id, trace) VALUES (attempt_id, trace);
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._status_trace(pgrelay_notifier.notifications, bigint, text) IS
    'Internal: stores an attempt''s trace, secrets masked, when the profile has debug on';

-- pgrelay_notifier.set_status()
CREATE OR REPLACE FUNCTION pgrelay_notifier.set_status(pk text, result jsonb) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: records one delivery attempt (the document of docs/interface.md) and moves the
 * notification to the outcome's status: sent, partially_sent, retrying or failed; failed becomes
 * partially_sent when some recipient got the message (now or on an earlier attempt). Listed
 * recipients take their result, except that a recipient once sent stays sent; with outcome sent
 * or failed, envelope recipients left unlisted become sent or failed with it. sent,
 * partially_sent and cancelled are final: recording an attempt on them is an error. The trace is
 * kept only when the profile has debug on, with the profile's literal secrets masked once more.
 * Returns: the notification's new status.
 */
DECLARE
    nid bigint := pgrelay_notifier._pk(pk);
    n pgrelay_notifier.notifications;
    outcome text;
    new_status text;
    ids bigint[];
    att_id bigint;
    v_finished timestamptz;
    v_next timestamptz;
    v_error text;
    v_transport text;
BEGIN
    IF nid IS NULL THEN
        RAISE EXCEPTION 'invalid notification id "%"', pgrelay_notifier._show(pk)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO n FROM pgrelay_notifier.notifications x WHERE x.notification_id = nid FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'notification % does not exist', nid USING ERRCODE = 'no_data_found';
    END IF;
    IF n.status IN ('sent', 'partially_sent', 'cancelled') THEN
        RAISE EXCEPTION 'notification % is %; its status cannot change', nid, n.status
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'sent, partially_sent and cancelled are final.';
    END IF;

    IF result IS NULL OR jsonb_typeof(result) <> 'object' THEN
        RAISE EXCEPTION 'set_status: the result must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    outcome := pgrelay_notifier._json_text(result, 'outcome');
    IF outcome IS NULL THEN
        RAISE EXCEPTION 'set_status: outcome is missing' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF outcome NOT IN ('sent', 'partially_sent', 'retrying', 'failed') THEN
        RAISE EXCEPTION 'set_status: invalid outcome "%"', pgrelay_notifier._show(outcome)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use sent, partially_sent, retrying or failed.';
    END IF;
    v_transport := pgrelay_notifier._json_text(result, 'transport');
    IF v_transport NOT IN ('smtp', 'graph') THEN
        RAISE EXCEPTION 'set_status: invalid transport "%"', pgrelay_notifier._show(v_transport)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_finished := pgrelay_notifier._json_time(result, 'finished_at');
    v_next := pgrelay_notifier._json_time(result, 'next_attempt_at');
    v_error := pgrelay_notifier._json_text(result, 'error');
    IF result ? 'unknown_outcome' AND jsonb_typeof(result -> 'unknown_outcome') NOT IN ('boolean', 'null') THEN
        RAISE EXCEPTION 'set_status: unknown_outcome must be a boolean' USING ERRCODE = 'invalid_parameter_value';
    END IF;

    ids := pgrelay_notifier._status_recipients(nid, outcome, COALESCE(NULLIF(result -> 'recipients', 'null'), '[]'));

    new_status := outcome;
    IF outcome = 'failed' AND EXISTS (SELECT 1 FROM pgrelay_notifier.recipients r
                                      WHERE r.notification_id = nid AND r.status = 'sent') THEN
        new_status := 'partially_sent';
    END IF;
    IF v_error IS NULL AND new_status <> 'sent' THEN
        SELECT format('%s: %s', r.address, COALESCE(r.reply, r.code::text, r.status)) INTO v_error
        FROM pgrelay_notifier.recipients r
        WHERE r.notification_id = nid AND r.recipient_id = ANY (ids) AND r.status IN ('failed', 'retrying')
        ORDER BY r.recipient_id LIMIT 1;
    END IF;

    UPDATE pgrelay_notifier.notifications x
    SET status = new_status,
        attempts = x.attempts + 1,
        last_error = CASE WHEN new_status = 'sent' THEN NULL ELSE v_error END,
        last_attempt_at = COALESCE(v_finished, now()),
        next_attempt_at = CASE WHEN new_status = 'retrying' THEN v_next END,
        sent_at = CASE WHEN new_status IN ('sent', 'partially_sent') THEN COALESCE(v_finished, now()) END,
        finished_at = CASE WHEN new_status IN ('sent', 'partially_sent', 'failed') THEN now() END,
        updated_at = now()
    WHERE x.notification_id = nid;

    att_id := pgrelay._next_id();
    INSERT INTO pgrelay_notifier.attempts (attempt_id, notification_id, attempt, outcome, status, transport,
                                           started_at, finished_at, reply_code, reply, provider_message_id,
                                           error, unknown_outcome, next_attempt_at, recipients)
    VALUES (att_id, nid, COALESCE(pgrelay_notifier._json_int(result, 'attempt', 1, 99999), n.attempts + 1),
            outcome, new_status, v_transport, pgrelay_notifier._json_time(result, 'started_at'), v_finished,
            pgrelay_notifier._json_int(result, 'reply_code', 0, 999),
            pgrelay_notifier._json_text(result, 'reply'),
            pgrelay_notifier._json_text(result, 'provider_message_id'),
            v_error, COALESCE((result ->> 'unknown_outcome')::boolean, false), v_next,
            COALESCE(NULLIF(result -> 'recipients', 'null'), '[]'));
    PERFORM pgrelay_notifier._status_trace(n, att_id, pgrelay_notifier._json_text(result, 'trace'));
    RETURN new_status;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.set_status(text, jsonb) IS
    'Records one delivery attempt reported by the Processor (docs/interface.md); returns the new status';
