/* extension/pg_relay_notifier/src/producer.sql: what producers call: send, get_status, cancel */

-- pgrelay_notifier._is_admin()
CREATE OR REPLACE FUNCTION pgrelay_notifier._is_admin() RETURNS boolean
LANGUAGE sql STABLE AS $$
    -- The session's login role, not current_user: inside a SECURITY DEFINER function current_user
    -- is the owner. Superusers are members of every role.
    SELECT pg_catalog.pg_has_role(session_user, 'pgrelay_admin', 'MEMBER')
$$;
COMMENT ON FUNCTION pgrelay_notifier._is_admin() IS
    'Is the session user a member of pgrelay_admin (and so may see every notification)?';

-- pgrelay_notifier._in_delivery()
CREATE OR REPLACE FUNCTION pgrelay_notifier._in_delivery(notification_id bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    -- fetch() holds an exclusive transaction-level advisory lock on the id while the Processor
    -- delivers; a shared try-lock released at once tells whether one is in flight, without waiting
    -- and without writing (so it works on a standby too).
    IF pg_catalog.pg_try_advisory_lock_shared(notification_id) THEN
        PERFORM pg_catalog.pg_advisory_unlock_shared(notification_id);
        RETURN false;
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._in_delivery(bigint) IS
    'Is a Processor delivering this notification right now (between fetch() and its commit)?';

-- pgrelay_notifier._send_channel()
CREATE OR REPLACE FUNCTION pgrelay_notifier._send_channel(channel text, OUT ch pgrelay_notifier.channels,
                                                          OUT p pgrelay_notifier.profiles)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (send): the notifier channel and its profile, both locked FOR KEY SHARE so that neither
 * can be dropped before the caller commits; a clear error when the channel is not a usable mail
 * channel (unknown, of another action type, unregistered from pg_relay, inactive).
 */
DECLARE
    rc record;
BEGIN
    IF channel IS NULL THEN
        RAISE EXCEPTION 'channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO ch FROM pgrelay_notifier.channels c WHERE c.channel = _send_channel.channel FOR KEY SHARE;
    SELECT * INTO rc FROM pgrelay_notifier._relay_channel(_send_channel.channel);
    IF ch.channel IS NULL THEN
        IF rc.action_type IS NOT NULL THEN
            RAISE EXCEPTION 'channel "%" is not a pg_relay_notifier channel (action type %)', channel, rc.action_type
                USING ERRCODE = 'wrong_object_type',
                      HINT = 'Create mail channels with pgrelay_notifier.create_channel().';
        END IF;
        RAISE EXCEPTION 'channel "%" does not exist', pgrelay_notifier._show(channel)
            USING ERRCODE = 'undefined_object';
    END IF;
    IF rc.action_type IS NULL THEN
        RAISE EXCEPTION 'channel "%" is not registered with pg_relay', channel
            USING ERRCODE = 'undefined_object',
                  HINT = 'An admin can register it again with pgrelay_notifier.alter_channel().';
    END IF;
    IF rc.action_type <> 'notify' THEN
        RAISE EXCEPTION 'channel "%" is not a notify channel (action type %)', channel, rc.action_type
            USING ERRCODE = 'wrong_object_type';
    END IF;
    IF NOT rc.active THEN
        RAISE EXCEPTION 'channel "%" is not active', channel
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    SELECT * INTO p FROM pgrelay_notifier.profiles x WHERE x.name = ch.profile FOR KEY SHARE;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._send_channel(text) IS
    'Internal: the mail channel send() was given and its profile, locked, or a clear error';

-- pgrelay_notifier._send_recipients()
CREATE OR REPLACE FUNCTION pgrelay_notifier._send_recipients("to" text[], cc text[], bcc text[])
RETURNS TABLE (kind text, address text, name text)
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (send): the envelope in the order to, cc, bcc, each address once (first occurrence
 * wins, compared without case), at least one and at most 500. The count is checked on the input
 * before any address is parsed, so a huge list is refused at once instead of after minutes of
 * parsing.
 */
DECLARE
    given integer := COALESCE(cardinality("to"), 0) + COALESCE(cardinality(cc), 0) + COALESCE(cardinality(bcc), 0);
    seen text[] := '{}';
    r record;
BEGIN
    IF given > 500 THEN
        RAISE EXCEPTION 'too many recipients (% given; at most 500 per message)', given
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    FOR r IN SELECT l.kind AS k, m.m_address, m.m_name
             FROM (VALUES (1, 'to', "to"), (2, 'cc', cc), (3, 'bcc', bcc)) l(n, kind, list)
             CROSS JOIN LATERAL pgrelay_notifier._mailboxes(l.list, l.kind) WITH ORDINALITY m
             ORDER BY l.n, m.ordinality LOOP
        CONTINUE WHEN lower(r.m_address) = ANY (seen);
        seen := seen || lower(r.m_address);
        kind := r.k;
        address := r.m_address;
        name := r.m_name;
        RETURN NEXT;
    END LOOP;
    IF cardinality(seen) = 0 THEN
        RAISE EXCEPTION 'a message needs at least one recipient ("to", cc or bcc)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._send_recipients(text[], text[], text[]) IS
    'Internal: send()''s recipients, validated and deduplicated, in envelope order';

-- pgrelay_notifier._from_allowed()
CREATE OR REPLACE FUNCTION pgrelay_notifier._from_allowed(p pgrelay_notifier.profiles, address text)
RETURNS boolean
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    -- A producer may send as the profile's own address, as a Graph profile's sender mailbox, or as
    -- an address the admin listed in allowed_from: exact addresses, or "@domain" for a whole domain.
    SELECT lower(address) = lower(p.from_address)
        OR (p.transport = 'graph' AND lower(address) = lower(p.sender))
        OR EXISTS (SELECT 1 FROM unnest(p.allowed_from) a
                   WHERE lower(a) = lower(address)
                      OR (left(a, 1) = '@' AND lower(address) LIKE '%' || lower(a)))
$$;
COMMENT ON FUNCTION pgrelay_notifier._from_allowed(pgrelay_notifier.profiles, text) IS
    'Internal: may a message on this profile carry this From address?';

-- pgrelay_notifier._send_from()
CREATE OR REPLACE FUNCTION pgrelay_notifier._send_from(p pgrelay_notifier.profiles, from_address text,
                                                       from_name text, OUT address text, OUT name text)
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (send): the From mailbox. Given, it must be one the profile allows (its from_address,
 * a Graph profile's sender, or allowed_from), so that a producer cannot send as anybody the
 * server would accept; else the profile's. The display name is free, but without control or
 * invisible formatting characters.
 */
DECLARE
    f record;
BEGIN
    IF from_address IS NOT NULL THEN
        SELECT * INTO f FROM pgrelay_notifier._mailboxes(ARRAY[from_address], 'from') m;
        IF NOT pgrelay_notifier._from_allowed(p, f.m_address) THEN
            RAISE EXCEPTION 'from_address "%" is not allowed by profile "%"', f.m_address, p.name
                USING ERRCODE = 'insufficient_privilege',
                      HINT = 'An admin can allow it: alter_profile(..., allowed_from => ARRAY[''addr@example.com'', ''@example.com'']).';
        END IF;
        address := f.m_address;
        name := COALESCE(from_name, f.m_name);
    ELSE
        address := COALESCE(p.from_address,
                            CASE WHEN p.transport = 'graph' AND strpos(p.sender, '@') > 0 THEN p.sender END);
        name := COALESCE(from_name, p.from_name);
    END IF;
    IF address IS NULL THEN
        RAISE EXCEPTION 'no From address: give from_address, or set one on profile "%"', p.name
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF name IS NOT NULL AND (pgrelay_notifier._has_control(name) OR length(name) > 256) THEN
        RAISE EXCEPTION 'from_name must be at most 256 characters without control or invisible formatting characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._send_from(pgrelay_notifier.profiles, text, text) IS
    'Internal: the From address and name of a message, as the profile allows them';

-- pgrelay_notifier._send_check()
CREATE OR REPLACE FUNCTION pgrelay_notifier._send_check(p pgrelay_notifier.profiles, subject text,
                                                        body_text text, body_html text, run_at timestamptz)
RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (send): the cheap checks, made before anything is parsed or stored: the subject, a
 * body, bodies alone within the profile's size limit, a finite run_at.
 */
BEGIN
    IF subject IS NOT NULL AND pgrelay_notifier._has_control(subject) THEN
        RAISE EXCEPTION 'subject contains a control or invisible formatting character'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'CR, LF, other control characters and invisible formatting characters (such as bidirectional overrides) are not allowed in header fields.';
    END IF;
    IF length(subject) > 998 THEN
        RAISE EXCEPTION 'subject is longer than 998 characters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF body_text IS NULL AND body_html IS NULL THEN
        RAISE EXCEPTION 'a message needs body_text or body_html (or both)'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF COALESCE(octet_length(body_text), 0) + COALESCE(octet_length(body_html), 0) > p.max_message_bytes THEN
        RAISE EXCEPTION 'the bodies alone are % bytes, more than the % bytes profile "%" allows',
                        COALESCE(octet_length(body_text), 0) + COALESCE(octet_length(body_html), 0),
                        p.max_message_bytes, p.name
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    IF run_at IS NOT NULL AND NOT isfinite(run_at) THEN
        RAISE EXCEPTION 'run_at must be a finite time, not %', run_at USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._send_check(pgrelay_notifier.profiles, text, text, text, timestamptz) IS
    'Internal: send()''s checks that need no parsing: subject, bodies and their size, run_at';

-- pgrelay_notifier.send()
CREATE OR REPLACE FUNCTION pgrelay_notifier.send(
    channel text,
    "to" text[] DEFAULT NULL,
    subject text DEFAULT NULL,
    body_text text DEFAULT NULL,
    body_html text DEFAULT NULL,
    cc text[] DEFAULT NULL,
    bcc text[] DEFAULT NULL,
    reply_to text[] DEFAULT NULL,
    from_address text DEFAULT NULL,
    from_name text DEFAULT NULL,
    headers jsonb DEFAULT NULL,
    attachments jsonb DEFAULT NULL,
    run_at timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: validates a whole message, stores it and queues its id with
 * pgrelay.notify(channel, notification_id::text, run_at) in the caller's transaction: a rollback
 * discards both, and any validation error leaves nothing behind. Recipients are 'addr@example.com'
 * or 'Display Name <addr@example.com>'; a repeated address (in any list) is kept once, first
 * occurrence first. From defaults to the profile's from_address/from_name (a Graph profile's
 * sender); another From must be allowed by the profile. The Message-ID
 * <notification_id.random@from-domain> is made here, once. The id of the queued event is kept
 * with the message: only that event may deliver it. A Microsoft Graph profile takes extra header
 * fields named X-... only.
 * Returns: the notification id.
 */
DECLARE
    c record;
    ch pgrelay_notifier.channels;
    p pgrelay_notifier.profiles;
    f record;
    reply jsonb;
    hdrs jsonb;
    graph_refuses text;
    nid bigint;
    total bigint;
    event bigint;
BEGIN
    SELECT * INTO c FROM pgrelay_notifier._send_channel(send.channel);
    ch := c.ch;
    p := c.p;
    PERFORM pgrelay_notifier._send_check(p, send.subject, send.body_text, send.body_html, send.run_at);
    IF cardinality(send.reply_to) > 20 THEN
        RAISE EXCEPTION 'too many reply_to addresses (%; at most 20)', cardinality(send.reply_to)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    SELECT * INTO f FROM pgrelay_notifier._send_from(p, send.from_address, send.from_name);
    hdrs := pgrelay_notifier._headers(send.headers);
    -- Microsoft Graph takes custom header fields only (X-...): refuse now what delivery would.
    IF p.transport = 'graph' THEN
        SELECT h ->> 0 INTO graph_refuses FROM jsonb_array_elements(hdrs) h
        WHERE lower(left(h ->> 0, 2)) <> 'x-' OR length(h ->> 0) < 3 LIMIT 1;
        IF graph_refuses IS NOT NULL THEN
            RAISE EXCEPTION 'header field "%" cannot be sent through Microsoft Graph (profile "%")', graph_refuses, p.name
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Microsoft Graph takes only custom header fields named X-...; send other fields through a channel with an SMTP profile.';
        END IF;
    END IF;
    SELECT COALESCE(jsonb_agg(jsonb_build_object('address', m.m_address, 'name', m.m_name)), '[]') INTO reply
    FROM pgrelay_notifier._mailboxes(send.reply_to, 'reply_to') m;

    nid := pgrelay._next_id();
    INSERT INTO pgrelay_notifier.notifications
        (notification_id, channel, profile, status, message_id, from_address, from_name, reply_to,
         subject, body_text, body_html, headers, run_at)
    VALUES (nid, ch.channel, p.name, 'queued',
            format('<%s.%s@%s>', nid, left(replace(gen_random_uuid()::text, '-', ''), 12),
                   lower(substr(f.address, length(f.address) - strpos(reverse(f.address), '@') + 2))),
            f.address, f.name, reply, send.subject, send.body_text, send.body_html, hdrs, send.run_at);
    INSERT INTO pgrelay_notifier.recipients (notification_id, recipient_id, kind, address, name)
    SELECT nid, r.n, r.kind, r.address, r.name
    FROM pgrelay_notifier._send_recipients(send."to", send.cc, send.bcc) WITH ORDINALITY r(kind, address, name, n);
    INSERT INTO pgrelay_notifier.attachments (notification_id, position, filename, content_type, content_id, content)
    SELECT nid, a.ord, a.a_filename, a.a_content_type, a.a_content_id, a.a_content
    FROM pgrelay_notifier._attachments(send.attachments) WITH ORDINALITY a(a_filename, a_content_type, a_content_id, a_content, ord);

    total := COALESCE(octet_length(send.body_text), 0) + COALESCE(octet_length(send.body_html), 0)
             + COALESCE((SELECT sum(octet_length(a.content)) FROM pgrelay_notifier.attachments a
                         WHERE a.notification_id = nid), 0);
    IF total > p.max_message_bytes THEN
        RAISE EXCEPTION 'the message is % bytes, more than the % bytes profile "%" allows', total, p.max_message_bytes, p.name
            USING ERRCODE = 'program_limit_exceeded',
                  DETAIL = 'The size counts the bodies and the decoded attachments (max_message_bytes).';
    END IF;
    event := pgrelay.notify(ch.channel, nid::text, send.run_at);
    UPDATE pgrelay_notifier.notifications x SET size_bytes = total, queue_event_id = event
    WHERE x.notification_id = nid;
    RETURN nid;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.send(text, text[], text, text, text, text[], text[], text[], text, text,
                                          jsonb, jsonb, timestamptz) IS
    'Validates and stores an email and queues it on a notify channel in the caller''s transaction; returns the notification id';

-- pgrelay_notifier._visible()
CREATE OR REPLACE FUNCTION pgrelay_notifier._visible(notification_id bigint, lock boolean)
RETURNS pgrelay_notifier.notifications
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Function: the notification, when the session user created it or is an admin; the same error
 * otherwise, so a producer cannot learn that other people's ids exist. With lock, the row is
 * locked FOR NO KEY UPDATE, which waits for a delivery in flight (fetch() holds that lock).
 */
DECLARE
    n pgrelay_notifier.notifications;
BEGIN
    IF lock THEN
        SELECT * INTO n FROM pgrelay_notifier.notifications x
        WHERE x.notification_id = _visible.notification_id FOR NO KEY UPDATE;
    ELSE
        SELECT * INTO n FROM pgrelay_notifier.notifications x
        WHERE x.notification_id = _visible.notification_id;
    END IF;
    IF n.notification_id IS NULL OR NOT (n.created_by = session_user OR pgrelay_notifier._is_admin()) THEN
        RAISE EXCEPTION 'notification % does not exist', COALESCE(_visible.notification_id::text, 'NULL')
            USING ERRCODE = 'no_data_found';
    END IF;
    RETURN n;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._visible(bigint, boolean) IS
    'The notification if the session user may see it (its creator or an admin), else a "does not exist" error';

-- pgrelay_notifier.get_status()
CREATE OR REPLACE FUNCTION pgrelay_notifier.get_status(notification_id bigint,
    OUT status text, OUT attempts integer, OUT last_error text, OUT sent_at timestamptz,
    OUT recipients jsonb, OUT channel text, OUT message_id text, OUT created_at timestamptz,
    OUT last_attempt_at timestamptz, OUT next_attempt_at timestamptz, OUT cancelled_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: the delivery status of one notification, for its creator or an admin. status is
 * sending while a Processor is delivering it, else the stored status. recipients is a JSON array
 * of {id, kind, address, name, status, code, reply} in send() order.
 */
DECLARE
    n pgrelay_notifier.notifications;
BEGIN
    n := pgrelay_notifier._visible(get_status.notification_id, false);
    status := CASE WHEN n.status IN ('queued', 'retrying', 'failed')
                        AND pgrelay_notifier._in_delivery(n.notification_id) THEN 'sending'
                   ELSE n.status END;
    attempts := n.attempts;
    last_error := n.last_error;
    sent_at := n.sent_at;
    channel := n.channel;
    message_id := n.message_id;
    created_at := n.created_at;
    last_attempt_at := n.last_attempt_at;
    next_attempt_at := n.next_attempt_at;
    cancelled_at := n.cancelled_at;
    SELECT COALESCE(jsonb_agg(jsonb_build_object('id', r.recipient_id, 'kind', r.kind, 'address', r.address,
                                                 'name', r.name, 'status', r.status, 'code', r.code,
                                                 'reply', r.reply) ORDER BY r.recipient_id), '[]')
    INTO recipients
    FROM pgrelay_notifier.recipients r WHERE r.notification_id = n.notification_id;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.get_status(bigint) IS
    'Status, attempts, last error, sent time and per-recipient results of a notification (its creator or an admin)';

-- pgrelay_notifier.cancel()
CREATE OR REPLACE FUNCTION pgrelay_notifier.cancel(notification_id bigint) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: cancels a notification that has not been sent: status cancelled, and the Processor
 * finishes its queued event without delivering. Waits for a delivery in flight to end first, so
 * a message is never both sent and cancelled. Cancelling twice is not an error.
 * Returns: 'cancelled'.
 */
DECLARE
    n pgrelay_notifier.notifications;
BEGIN
    n := pgrelay_notifier._visible(cancel.notification_id, true);
    IF n.status = 'cancelled' THEN
        RETURN n.status;
    END IF;
    IF n.status IN ('sent', 'partially_sent') THEN
        RAISE EXCEPTION 'notification % was % already and cannot be cancelled', n.notification_id,
                        replace(n.status, '_', ' ')
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    UPDATE pgrelay_notifier.notifications x
    SET status = 'cancelled', cancelled_at = now(), cancelled_by = session_user, finished_at = now(),
        next_attempt_at = NULL, updated_at = now()
    WHERE x.notification_id = n.notification_id;
    RETURN 'cancelled';
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.cancel(bigint) IS
    'Cancels a notification not sent yet (its creator or an admin); returns cancelled';
