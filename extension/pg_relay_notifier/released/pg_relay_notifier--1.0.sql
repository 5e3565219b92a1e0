/* extension/pg_relay_notifier/pg_relay_notifier--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_relay_notifier" to load this file. \quit

/*
 * pg_relay_notifier 1.0: email notifications queued through pg_relay (schema pgrelay_notifier).
 *
 * Admins describe how mail leaves (profiles: SMTP or Microsoft Graph) and which pg_relay channel
 * uses which profile (create_channel, which registers a notify channel with pgrelay.register).
 * Producers call send(): it validates the whole message, stores it here and queues its id with
 * pgrelay.notify() in the caller's transaction. The Processor reads the message with fetch() and
 * records each attempt with set_status(), inside its held transaction (docs/interface.md).
 * docs/notifier.md documents every object below.
 *
 * Boundaries: this extension calls pgrelay.notify, pgrelay.register, pgrelay.unregister and
 * pgrelay._next_id, and reads pgrelay.channels to give clear errors; it never reads or writes the
 * event tables of pg_relay.
 *
 * Security model: every function that touches a table is SECURITY DEFINER with a pinned
 * search_path, so the three pg_relay roles need no table privileges. Secrets live in their own
 * table that nobody but the extension owner can read; only fetch() hands them out, to the
 * Processor's role, still as references (env:NAME, file:NAME) when given that way.
 */

--------------------------------------------------------------------------------
-- Tables
--------------------------------------------------------------------------------

CREATE TABLE pgrelay_notifier.profiles (
    name                  text PRIMARY KEY,
    transport             text NOT NULL CHECK (transport IN ('smtp', 'graph')),
    -- transport smtp
    host                  text,
    port                  integer CHECK (port BETWEEN 1 AND 65535),
    security              text CHECK (security IN ('starttls', 'starttls_optional', 'tls', 'none')),
    username              text,
    ca_file               text,
    helo_name             text,
    -- transport graph
    tenant_id             text,
    client_id             text,
    sender                text,
    login_url             text,
    graph_url             text,
    save_to_sent_items    boolean,
    -- both
    from_address          text,
    from_name             text,
    connect_timeout       interval NOT NULL DEFAULT '10 seconds',
    timeout               interval NOT NULL DEFAULT '60 seconds',
    rate_limit_per_minute integer CHECK (rate_limit_per_minute > 0),
    max_message_bytes     bigint NOT NULL DEFAULT 26214400 CHECK (max_message_bytes > 0),
    debug                 boolean NOT NULL DEFAULT false,
    description           text,
    created_by            name NOT NULL DEFAULT session_user,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    CHECK ((transport = 'smtp') = (host IS NOT NULL AND security IS NOT NULL)),
    CHECK ((transport = 'graph') = (tenant_id IS NOT NULL AND client_id IS NOT NULL AND sender IS NOT NULL))
);
COMMENT ON TABLE pgrelay_notifier.profiles IS
    'How mail leaves: one SMTP server or Microsoft Graph mailbox per profile (secrets are in profile_secrets)';
COMMENT ON COLUMN pgrelay_notifier.profiles.port IS
    'NULL: the default of the security mode (587 starttls, 465 tls, 25 none)';

CREATE TABLE pgrelay_notifier.profile_secrets (
    profile       text PRIMARY KEY
                  REFERENCES pgrelay_notifier.profiles (name) ON UPDATE CASCADE ON DELETE CASCADE,
    password      text,
    oauth_token   text,
    client_secret text
);
COMMENT ON TABLE pgrelay_notifier.profile_secrets IS
    'Profile secrets: a literal value or a reference (env:NAME, file:NAME, value:TEXT) that only the '
    'Processor resolves. No role but the extension owner has any privilege on this table.';

CREATE TABLE pgrelay_notifier.channels (
    channel    text PRIMARY KEY,
    profile    text NOT NULL
               REFERENCES pgrelay_notifier.profiles (name) ON UPDATE CASCADE ON DELETE RESTRICT,
    created_by name NOT NULL DEFAULT session_user,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrelay_notifier.channels IS
    'The notify channels of this extension and the profile each one sends with';
CREATE INDEX channels_profile_idx ON pgrelay_notifier.channels (profile);

CREATE TABLE pgrelay_notifier.notifications (
    notification_id bigint PRIMARY KEY DEFAULT pgrelay._next_id(),
    channel         text NOT NULL,
    profile         text NOT NULL,
    status          text NOT NULL DEFAULT 'queued'
                    CHECK (status IN ('queued', 'sending', 'sent', 'partially_sent', 'retrying',
                                      'failed', 'cancelled')),
    message_id      text NOT NULL,
    from_address    text NOT NULL,
    from_name       text,
    reply_to        jsonb NOT NULL DEFAULT '[]',
    subject         text,
    body_text       text,
    body_html       text,
    headers         jsonb NOT NULL DEFAULT '[]',
    size_bytes      bigint NOT NULL DEFAULT 0,
    run_at          timestamptz,
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text,
    last_attempt_at timestamptz,
    next_attempt_at timestamptz,
    sent_at         timestamptz,
    cancelled_at    timestamptz,
    cancelled_by    name,
    finished_at     timestamptz,
    created_by      name NOT NULL DEFAULT session_user,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (body_text IS NOT NULL OR body_html IS NOT NULL)
);
COMMENT ON TABLE pgrelay_notifier.notifications IS
    'One row per send(); status queued, retrying, sent, partially_sent, failed or cancelled '
    '(sending is reported by get_status while a delivery holds the notification, never stored)';
COMMENT ON COLUMN pgrelay_notifier.notifications.channel IS
    'The channel at send() time (no foreign key: history outlives a dropped channel)';
COMMENT ON COLUMN pgrelay_notifier.notifications.profile IS
    'The profile the message was composed for (the channel''s profile at send() time)';
COMMENT ON COLUMN pgrelay_notifier.notifications.finished_at IS
    'When the notification reached sent, partially_sent, failed or cancelled (purge() uses it)';
CREATE INDEX notifications_finished_idx ON pgrelay_notifier.notifications (finished_at)
    WHERE finished_at IS NOT NULL;
CREATE INDEX notifications_open_idx ON pgrelay_notifier.notifications (channel)
    WHERE status IN ('queued', 'retrying');
CREATE INDEX notifications_profile_idx ON pgrelay_notifier.notifications (profile, status);
CREATE INDEX notifications_attempt_idx ON pgrelay_notifier.notifications (last_attempt_at)
    WHERE status IN ('failed', 'partially_sent', 'retrying');

CREATE TABLE pgrelay_notifier.recipients (
    notification_id bigint NOT NULL
                    REFERENCES pgrelay_notifier.notifications ON DELETE CASCADE,
    recipient_id    integer NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('to', 'cc', 'bcc')),
    address         text NOT NULL,
    name            text,
    status          text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'sent', 'failed', 'retrying')),
    code            integer,
    reply           text,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (notification_id, recipient_id)
);
COMMENT ON TABLE pgrelay_notifier.recipients IS
    'Recipients of a notification in the order given to send() (recipient_id 1, 2, ...), with the '
    'latest delivery result of each';

CREATE TABLE pgrelay_notifier.attachments (
    notification_id bigint NOT NULL
                    REFERENCES pgrelay_notifier.notifications ON DELETE CASCADE,
    position        integer NOT NULL,
    filename        text NOT NULL,
    content_type    text NOT NULL,
    content_id      text,
    content         bytea NOT NULL,
    PRIMARY KEY (notification_id, position)
);
COMMENT ON TABLE pgrelay_notifier.attachments IS
    'Attachments (content_id NULL) and inline parts (content_id set, referenced as cid:content_id)';

CREATE TABLE pgrelay_notifier.attempts (
    attempt_id          bigint PRIMARY KEY DEFAULT pgrelay._next_id(),
    notification_id     bigint NOT NULL
                        REFERENCES pgrelay_notifier.notifications ON DELETE CASCADE,
    attempt             integer NOT NULL,
    outcome             text NOT NULL CHECK (outcome IN ('sent', 'partially_sent', 'retrying', 'failed')),
    status              text NOT NULL,
    transport           text,
    started_at          timestamptz,
    finished_at         timestamptz,
    reply_code          integer,
    reply               text,
    provider_message_id text,
    error               text,
    unknown_outcome     boolean NOT NULL DEFAULT false,
    next_attempt_at     timestamptz,
    recipients          jsonb NOT NULL DEFAULT '[]',
    recorded_at         timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrelay_notifier.attempts IS
    'One row per delivery attempt, as reported by the Processor through set_status(); status is '
    'the notification''s status after the attempt';
CREATE INDEX attempts_notification_idx ON pgrelay_notifier.attempts (notification_id);

CREATE TABLE pgrelay_notifier.attempt_traces (
    attempt_id  bigint PRIMARY KEY REFERENCES pgrelay_notifier.attempts ON DELETE CASCADE,
    trace       text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrelay_notifier.attempt_traces IS
    'Redacted protocol transcripts, stored only for profiles with debug on';
CREATE INDEX attempt_traces_recorded_idx ON pgrelay_notifier.attempt_traces (recorded_at);

-- pg_dump keeps user data of extension tables only when told to.
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.profiles', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.profile_secrets', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.channels', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.notifications', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.recipients', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.attachments', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.attempts', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.attempt_traces', '');

--------------------------------------------------------------------------------
-- Small pure helpers
--------------------------------------------------------------------------------

-- pgrelay_notifier._has_control()
CREATE FUNCTION pgrelay_notifier._has_control(s text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$
    -- C0 controls (CR, LF, TAB, ...), DEL, C1 controls (NEL, ...) and the Unicode line and
    -- paragraph separators: none of them may reach a header field.
    SELECT s ~ '[\x01-\x1f\x7f-\x9f\u2028\u2029]'
$$;
COMMENT ON FUNCTION pgrelay_notifier._has_control(text) IS
    'Does the text contain a control character (C0, DEL, C1) or a Unicode line/paragraph separator?';

-- pgrelay_notifier._show()
CREATE FUNCTION pgrelay_notifier._show(s text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    -- Error messages quote user input; control characters become ? so a message stays one line.
    SELECT CASE WHEN s IS NULL THEN 'NULL'
                WHEN pg_catalog.length(s) > 100
                THEN pg_catalog.left(pg_catalog.regexp_replace(s, '[\x01-\x1f\x7f-\x9f\u2028\u2029]', '?', 'g'), 97) || '...'
                ELSE pg_catalog.regexp_replace(s, '[\x01-\x1f\x7f-\x9f\u2028\u2029]', '?', 'g')
           END
$$;
COMMENT ON FUNCTION pgrelay_notifier._show(text) IS
    'User input made safe for an error message: control characters as ?, at most 100 characters';

-- pgrelay_notifier._ms()
CREATE FUNCTION pgrelay_notifier._ms(i interval) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT pg_catalog.round(pg_catalog.date_part('epoch', i) * 1000)::bigint
$$;
COMMENT ON FUNCTION pgrelay_notifier._ms(interval) IS 'An interval in whole milliseconds';

-- pgrelay_notifier._is_ipv6()
CREATE FUNCTION pgrelay_notifier._is_ipv6(s text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
    IF s !~ '^[0-9A-Fa-f:.]+$' OR pg_catalog.strpos(s, ':') = 0 THEN
        RETURN false;
    END IF;
    RETURN pg_catalog.family(s::inet) = 6;
EXCEPTION WHEN invalid_text_representation THEN
    RETURN false;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._is_ipv6(text) IS 'Is the text an IPv6 address (no prefix length, no zone)?';

-- pgrelay_notifier._is_ipv4()
CREATE FUNCTION pgrelay_notifier._is_ipv4(s text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT s ~ '^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$'
$$;
COMMENT ON FUNCTION pgrelay_notifier._is_ipv4(text) IS 'Is the text a dotted-quad IPv4 address (no leading zeros)?';

-- pgrelay_notifier._domain_error()
CREATE FUNCTION pgrelay_notifier._domain_error(d text, fqdn boolean) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
/*
 * Function: checks a host or domain name: LDH labels (letters, digits, inner hyphens) of 1 to 63
 * characters, 253 characters in all, no trailing dot. With fqdn, the name needs a dot and a
 * top-level label that is not all digits (an IP address must be written as a literal).
 * Returns: NULL when the name is fine, else the reason.
 */
DECLARE
    labels text[];
    l text;
BEGIN
    IF d IS NULL OR d = '' THEN
        RETURN 'the domain is empty';
    END IF;
    IF d ~ '[^\x01-\x7f]' THEN
        RETURN 'the domain contains non-ASCII characters (write an internationalised domain in its '
               'ASCII form, xn--...)';
    END IF;
    IF pg_catalog.octet_length(d) > 253 THEN
        RETURN 'the domain is longer than 253 characters';
    END IF;
    labels := pg_catalog.string_to_array(d, '.');
    FOREACH l IN ARRAY labels LOOP
        IF l = '' THEN
            RETURN 'the domain has an empty label (a leading, trailing or doubled dot)';
        END IF;
        IF pg_catalog.length(l) > 63 THEN
            RETURN 'a domain label is longer than 63 characters';
        END IF;
        IF l !~ '^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$' THEN
            RETURN pg_catalog.format('the domain label "%s" may only hold letters, digits and inner hyphens',
                                     pgrelay_notifier._show(l));
        END IF;
    END LOOP;
    IF fqdn AND pg_catalog.array_length(labels, 1) < 2 THEN
        RETURN 'the domain is not fully qualified (it has no dot)';
    END IF;
    IF fqdn AND labels[pg_catalog.array_length(labels, 1)] ~ '^[0-9]+$' THEN
        RETURN 'the top-level domain is all digits (write an IP address as a literal, [192.0.2.1])';
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._domain_error(text, boolean) IS
    'NULL when the text is a valid host/domain name (fully qualified if asked), else the reason';

-- pgrelay_notifier._literal_error()
CREATE FUNCTION pgrelay_notifier._literal_error(d text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
    -- RFC 5321 address literals: [IPv4] or [IPv6:address]; general literals (tag:content) are refused.
    SELECT CASE
        WHEN d ~ '^\[IPv6:.*\]$' THEN
            CASE WHEN pgrelay_notifier._is_ipv6(pg_catalog.substr(d, 7, pg_catalog.length(d) - 7)) THEN NULL
                 ELSE 'the IPv6 address literal is malformed' END
        WHEN d ~ '^\[[0-9.]*\]$' THEN
            CASE WHEN pgrelay_notifier._is_ipv4(pg_catalog.substr(d, 2, pg_catalog.length(d) - 2)) THEN NULL
                 ELSE 'the IPv4 address literal is malformed' END
        ELSE 'the address literal is malformed (use [192.0.2.1] or [IPv6:2001:db8::1])'
    END
$$;
COMMENT ON FUNCTION pgrelay_notifier._literal_error(text) IS
    'NULL when the text is an RFC 5321 address literal ([IPv4] or [IPv6:...]), else the reason';

--------------------------------------------------------------------------------
-- Addresses
--------------------------------------------------------------------------------

-- pgrelay_notifier.address_error()
CREATE FUNCTION pgrelay_notifier.address_error(address text) RETURNS text
LANGUAGE plpgsql IMMUTABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: checks an addr-spec as SMTP (RFC 5321) carries it in MAIL FROM / RCPT TO.
 *   local part: a dot-atom (atext runs joined by single dots) or a quoted string (printable ASCII,
 *               backslash pairs), 1 to 64 octets;
 *   domain:     LDH labels of at most 63 octets, 253 in all, with a dot and a non-numeric
 *               top-level label; or an address literal [IPv4] / [IPv6:...];
 *   in all:     at most 254 octets; ASCII only (no SMTPUTF8: internationalised local parts are
 *               refused, internationalised domains must be written as xn-- A-labels).
 * Returns: NULL when the address is valid, else a short reason.
 * SECURITY DEFINER only so that callers need no grant on the internal helpers; it reads no table.
 */
DECLARE
    at integer;
    lp text;
    dom text;
BEGIN
    IF address IS NULL THEN
        RETURN 'the address is NULL';
    END IF;
    IF address = '' THEN
        RETURN 'the address is empty';
    END IF;
    IF pgrelay_notifier._has_control(address) THEN
        RETURN 'the address contains a control character';
    END IF;
    IF address ~ '[^\x01-\x7f]' THEN
        RETURN 'the address contains non-ASCII characters (internationalised addresses need SMTPUTF8, '
               'which is not supported; write a domain as xn--...)';
    END IF;
    IF octet_length(address) > 254 THEN
        RETURN 'the address is longer than 254 characters';
    END IF;
    IF strpos(address, '@') = 0 THEN
        RETURN 'the address has no @';
    END IF;
    -- The domain never contains @, so the last @ separates it even from a quoted local part.
    at := length(address) - strpos(reverse(address), '@') + 1;
    lp := substr(address, 1, at - 1);
    dom := substr(address, at + 1);
    IF lp = '' OR lp = '""' THEN
        RETURN 'the local part (before @) is empty';
    END IF;
    IF dom = '' THEN
        RETURN 'the domain (after @) is empty';
    END IF;
    IF octet_length(lp) > 64 THEN
        RETURN 'the local part is longer than 64 characters';
    END IF;
    IF left(lp, 1) = '"' THEN
        IF lp !~ '^"([\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"$' THEN
            RETURN 'the quoted local part is malformed';
        END IF;
    ELSIF lp !~ '^[A-Za-z0-9!#$%&''*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&''*+/=?^_`{|}~-]+)*$' THEN
        IF lp ~ '^\.|\.$|\.\.' THEN
            RETURN 'the local part has a leading, trailing or doubled dot';
        END IF;
        RETURN 'the local part contains a character that is only allowed inside quotes';
    END IF;
    IF left(dom, 1) = '[' THEN
        RETURN pgrelay_notifier._literal_error(dom);
    END IF;
    RETURN pgrelay_notifier._domain_error(dom, true);
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.address_error(text) IS
    'NULL when the text is a valid email address (RFC 5321 addr-spec, ASCII only), else the reason';

-- pgrelay_notifier._parse_mailbox()
CREATE FUNCTION pgrelay_notifier._parse_mailbox(mailbox text, OUT address text, OUT name text,
                                                OUT error text)
LANGUAGE plpgsql IMMUTABLE AS $$
/*
 * Function: splits 'addr@example.com', 'Display Name <addr@example.com>' or
 * '"Name, with specials" <addr@example.com>' (backslash escapes inside the quotes) and checks both
 * parts. A display name may be UTF-8 (the Processor encodes it); it may not hold control
 * characters, and an unquoted one may not hold " < or >.
 * Returns: address and name (NULL when none), or error with the reason.
 */
DECLARE
    s text;
    m text[];
    pos integer;
BEGIN
    IF mailbox IS NULL THEN
        error := 'the address is NULL';
        RETURN;
    END IF;
    IF pgrelay_notifier._has_control(mailbox) THEN
        error := 'the address contains a control character';
        RETURN;
    END IF;
    s := pg_catalog.btrim(mailbox);
    IF s ~ '>$' AND pg_catalog.strpos(s, '<') > 0 THEN
        IF s ~ '^"' THEN
            m := pg_catalog.regexp_match(s, '^"((?:[^"\\]|\\.)*)"\s*<(.*)>$');
            IF m IS NULL THEN
                error := 'the quoted display name is malformed';
                RETURN;
            END IF;
            name := pg_catalog.regexp_replace(m[1], '\\(.)', '\1', 'g');
            address := m[2];
        ELSE
            pos := pg_catalog.strpos(s, '<');
            name := pg_catalog.left(s, pos - 1);
            address := pg_catalog.substr(s, pos + 1, pg_catalog.length(s) - pos - 1);
            IF name ~ '["<>]' THEN
                error := 'a display name with " < or > must be quoted ("..."), with \" for a quote inside';
                RETURN;
            END IF;
        END IF;
        name := NULLIF(pg_catalog.btrim(name), '');
        address := pg_catalog.btrim(address);
        IF pg_catalog.length(name) > 256 THEN
            error := 'the display name is longer than 256 characters';
            RETURN;
        END IF;
    ELSE
        address := s;
    END IF;
    error := pgrelay_notifier.address_error(address);
    IF error IS NOT NULL THEN
        address := NULL;
        name := NULL;
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._parse_mailbox(text) IS
    'Splits "Name <addr>" into address and display name and validates both; error is the reason when invalid';

-- pgrelay_notifier.parse_mailbox()
CREATE FUNCTION pgrelay_notifier.parse_mailbox(mailbox text, OUT address text, OUT name text)
LANGUAGE plpgsql IMMUTABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
-- SECURITY DEFINER only so that callers need no grant on the internal helpers; it reads no table.
DECLARE
    r record;
BEGIN
    r := pgrelay_notifier._parse_mailbox(mailbox);
    IF r.error IS NOT NULL THEN
        RAISE EXCEPTION 'invalid address "%": %', pgrelay_notifier._show(mailbox), r.error
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    address := r.address;
    name := r.name;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.parse_mailbox(text) IS
    'Splits and validates "Display Name <addr@example.com>" (or a bare address); raises an error when invalid';

-- pgrelay_notifier._mailboxes()
CREATE FUNCTION pgrelay_notifier._mailboxes(list text[], what text)
RETURNS TABLE (m_address text, m_name text)
LANGUAGE plpgsql IMMUTABLE AS $$
/*
 * Function: parses every element of a send() address list; what names the list in errors.
 * Returns: one row per element, in order.
 */
DECLARE
    e text;
    i integer := 0;
    r record;
BEGIN
    IF list IS NULL THEN
        RETURN;
    END IF;
    FOREACH e IN ARRAY list LOOP
        i := i + 1;
        IF e IS NULL THEN
            RAISE EXCEPTION '% address % is NULL', what, i USING ERRCODE = 'null_value_not_allowed';
        END IF;
        r := pgrelay_notifier._parse_mailbox(e);
        IF r.error IS NOT NULL THEN
            RAISE EXCEPTION 'invalid % address "%": %', what, pgrelay_notifier._show(e), r.error
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        m_address := r.address;
        m_name := r.name;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._mailboxes(text[], text) IS
    'Parses a list of mailboxes for send(); raises a clear error naming the list for the first bad one';

--------------------------------------------------------------------------------
-- Message parts: header fields and attachments
--------------------------------------------------------------------------------

-- pgrelay_notifier._headers()
CREATE FUNCTION pgrelay_notifier._headers(headers jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
/*
 * Function: normalises send()'s headers (a JSON object, or an array of [name, value] pairs to
 * keep the order) and validates them: RFC 5322 field names (printable ASCII but colon, at most 76
 * characters), none that the Processor writes itself, string values without control characters
 * (no header injection), at most 998 octets a value, at most 100 fields.
 * Returns: the array of [name, value] pairs.
 */
DECLARE
    pairs jsonb;
    e jsonb;
    i integer := 0;
    hname text;
    hvalue text;
BEGIN
    IF headers IS NULL OR jsonb_typeof(headers) = 'null' THEN
        RETURN '[]';
    END IF;
    IF jsonb_typeof(headers) = 'object' THEN
        SELECT COALESCE(jsonb_agg(jsonb_build_array(h.key, h.value)), '[]') INTO pairs
        FROM jsonb_each(headers) h;
    ELSIF jsonb_typeof(headers) = 'array' THEN
        pairs := headers;
    ELSE
        RAISE EXCEPTION 'headers must be a JSON object or an array of [name, value] pairs'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jsonb_array_length(pairs) > 100 THEN
        RAISE EXCEPTION 'too many header fields (%; at most 100)', jsonb_array_length(pairs)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    FOR e IN SELECT x.value FROM jsonb_array_elements(pairs) x LOOP
        i := i + 1;
        IF jsonb_typeof(e) <> 'array' OR jsonb_array_length(e) <> 2 OR jsonb_typeof(e -> 0) <> 'string' THEN
            RAISE EXCEPTION 'headers[%] must be a [name, value] pair of strings', i
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        hname := e ->> 0;
        IF hname !~ '^[!-9;-~]+$' THEN
            RAISE EXCEPTION 'invalid header field name "%"', pgrelay_notifier._show(hname)
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'A field name is printable ASCII without blanks or colons (RFC 5322); '
                               'CR and LF are never allowed.';
        END IF;
        IF length(hname) > 76 THEN
            RAISE EXCEPTION 'header field name "%" is longer than 76 characters', pgrelay_notifier._show(hname)
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF lower(hname) IN ('from', 'to', 'cc', 'bcc', 'subject', 'date', 'message-id', 'mime-version', 'reply-to')
           OR lower(hname) LIKE 'content-%' THEN
            RAISE EXCEPTION 'header field "%" is written by the Processor and cannot be set', hname
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Use the parameters of send() (from_address, reply_to, subject, attachments ...).';
        END IF;
        IF jsonb_typeof(e -> 1) <> 'string' THEN
            RAISE EXCEPTION 'header "%": the value must be a JSON string, not %', hname, jsonb_typeof(e -> 1)
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        hvalue := e ->> 1;
        IF pgrelay_notifier._has_control(hvalue) THEN
            RAISE EXCEPTION 'header "%": the value contains a control character', hname
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'CR, LF and other control characters are not allowed in header fields.';
        END IF;
        IF octet_length(hvalue) > 998 THEN
            RAISE EXCEPTION 'header "%": the value is longer than 998 octets', hname
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END LOOP;
    RETURN (SELECT COALESCE(jsonb_agg(jsonb_build_array(x.value ->> 0, x.value ->> 1) ORDER BY x.n), '[]')
            FROM jsonb_array_elements(pairs) WITH ORDINALITY x(value, n));
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._headers(jsonb) IS
    'Validates send()''s extra header fields and returns them as [name, value] pairs';

-- pgrelay_notifier._attachments()
CREATE FUNCTION pgrelay_notifier._attachments(attachments jsonb)
RETURNS TABLE (a_filename text, a_content_type text, a_content_id text, a_content bytea)
LANGUAGE plpgsql IMMUTABLE AS $$
/*
 * Function: validates send()'s attachments, a JSON array of objects with the keys filename,
 * content_type (optional), content_id (optional; makes an inline part), and exactly one of
 * content_base64 (standard base64, blanks and line breaks ignored) or content_text (stored as
 * UTF-8). At most 100 elements.
 * Returns: one row per attachment, in order, with the decoded content.
 */
DECLARE
    e jsonb;
    i integer := 0;
    k text;
    b64 text;
    ids text[] := '{}';
    what text;
BEGIN
    IF attachments IS NULL OR jsonb_typeof(attachments) = 'null' THEN
        RETURN;
    END IF;
    IF jsonb_typeof(attachments) <> 'array' THEN
        RAISE EXCEPTION 'attachments must be a JSON array of objects'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jsonb_array_length(attachments) > 100 THEN
        RAISE EXCEPTION 'too many attachments (%; at most 100)', jsonb_array_length(attachments)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    FOR e IN SELECT x.value FROM jsonb_array_elements(attachments) x LOOP
        i := i + 1;
        what := format('attachment %s', i);
        IF jsonb_typeof(e) <> 'object' THEN
            RAISE EXCEPTION '% must be a JSON object', what USING ERRCODE = 'invalid_parameter_value';
        END IF;
        FOR k IN SELECT jsonb_object_keys(e) LOOP
            IF k NOT IN ('filename', 'content_type', 'content_id', 'content_base64', 'content_text') THEN
                RAISE EXCEPTION '%: unknown key "%"', what, pgrelay_notifier._show(k)
                    USING ERRCODE = 'invalid_parameter_value',
                          HINT = 'The keys are filename, content_type, content_id, content_base64 and content_text.';
            END IF;
            IF jsonb_typeof(e -> k) NOT IN ('string', 'null') THEN
                RAISE EXCEPTION '%: % must be a JSON string', what, k USING ERRCODE = 'invalid_parameter_value';
            END IF;
        END LOOP;

        a_filename := e ->> 'filename';
        IF a_filename IS NULL OR a_filename = '' THEN
            RAISE EXCEPTION '%: filename is missing or empty', what USING ERRCODE = 'invalid_parameter_value';
        END IF;
        what := format('attachment %s ("%s")', i, pgrelay_notifier._show(a_filename));
        IF pgrelay_notifier._has_control(a_filename) THEN
            RAISE EXCEPTION '%: the file name contains a control character', what
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF a_filename ~ '[/\\]' OR a_filename IN ('.', '..') OR length(a_filename) > 255 THEN
            RAISE EXCEPTION '%: a file name is a plain name of at most 255 characters, without / or \', what
                USING ERRCODE = 'invalid_parameter_value';
        END IF;

        IF (e ->> 'content_base64') IS NOT NULL AND (e ->> 'content_text') IS NOT NULL
           OR (e ->> 'content_base64') IS NULL AND (e ->> 'content_text') IS NULL THEN
            RAISE EXCEPTION '%: give exactly one of content_base64 and content_text', what
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF (e ->> 'content_text') IS NOT NULL THEN
            a_content := convert_to(e ->> 'content_text', 'UTF8');
        ELSE
            b64 := regexp_replace(e ->> 'content_base64', '[ \t\r\n]', '', 'g');
            IF b64 !~ '^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$' THEN
                RAISE EXCEPTION '%: content_base64 is not valid base64', what
                    USING ERRCODE = 'invalid_parameter_value',
                          DETAIL = 'Standard base64 (A-Z a-z 0-9 + /) with = padding; line breaks are ignored.';
            END IF;
            a_content := decode(b64, 'base64');
        END IF;

        a_content_type := COALESCE(e ->> 'content_type',
                                   CASE WHEN (e ->> 'content_text') IS NOT NULL
                                        THEN 'text/plain; charset=utf-8' ELSE 'application/octet-stream' END);
        IF a_content_type !~ ('^[!#$%&''*+.^_`{|}~0-9A-Za-z-]+/[!#$%&''*+.^_`{|}~0-9A-Za-z-]+'
                              '( *; *[!#$%&''*+.^_`{|}~0-9A-Za-z-]+=([!#$%&''*+.^_`{|}~0-9A-Za-z-]+|"[\x20\x21\x23-\x5b\x5d-\x7e]*"))*$')
           OR length(a_content_type) > 255 THEN
            RAISE EXCEPTION '%: invalid content type "%"', what, pgrelay_notifier._show(a_content_type)
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'A content type is type/subtype (RFC 2045 tokens), optionally followed by '
                               '; name=value parameters.';
        END IF;
        IF lower(a_content_type) LIKE 'multipart/%' THEN
            RAISE EXCEPTION '%: an attachment cannot be multipart/*', what
                USING ERRCODE = 'invalid_parameter_value';
        END IF;

        a_content_id := e ->> 'content_id';
        IF a_content_id IS NOT NULL THEN
            IF a_content_id ~ '^<.*>$' THEN
                RAISE EXCEPTION '%: give content_id without < >', what
                    USING ERRCODE = 'invalid_parameter_value',
                          HINT = 'The HTML body refers to it as cid:the-id.';
            END IF;
            IF a_content_id !~ '^[A-Za-z0-9!#$%&''*+/=?^_`{|}~.@-]{1,250}$' THEN
                RAISE EXCEPTION '%: invalid content_id "%"', what, pgrelay_notifier._show(a_content_id)
                    USING ERRCODE = 'invalid_parameter_value',
                          DETAIL = 'A content id is 1 to 250 printable ASCII characters without blanks, '
                                   'quotes, brackets or the characters ( ) , : ; \.';
            END IF;
            IF a_content_id = ANY (ids) THEN
                RAISE EXCEPTION '%: content_id "%" is used twice', what, a_content_id
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            ids := ids || a_content_id;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._attachments(jsonb) IS
    'Validates and decodes send()''s attachments; one row per attachment';

--------------------------------------------------------------------------------
-- Profiles
--------------------------------------------------------------------------------

-- pgrelay_notifier._secret_error()
CREATE FUNCTION pgrelay_notifier._secret_error(secret text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    -- The reference syntax of docs/interface.md. The reason never repeats a literal value.
    SELECT CASE
        WHEN secret IS NULL THEN NULL
        WHEN secret = '' THEN 'is empty (pass NULL for none)'
        WHEN secret LIKE 'env:%' AND pg_catalog.substr(secret, 5) !~ '^[A-Za-z_][A-Za-z0-9_]*$' THEN
            pg_catalog.format('"%s" is not a valid env: reference (the variable name is [A-Za-z_][A-Za-z0-9_]*)',
                              pgrelay_notifier._show(secret))
        WHEN secret LIKE 'file:%' AND (pg_catalog.substr(secret, 6) = ''
                                       OR pg_catalog.strpos(pg_catalog.substr(secret, 6), '/') > 0
                                       OR pg_catalog.substr(secret, 6, 1) = '.'
                                       OR pgrelay_notifier._has_control(pg_catalog.substr(secret, 6))) THEN
            pg_catalog.format('"%s" is not a valid file: reference (a file name in the Processor''s secrets '
                              'directory: not empty, no /, not starting with a dot)', pgrelay_notifier._show(secret))
        WHEN secret = 'value:' THEN 'is an empty value: reference'
        ELSE NULL
    END
$$;
COMMENT ON FUNCTION pgrelay_notifier._secret_error(text) IS
    'NULL when a secret is a literal or a well-formed env:/file:/value: reference, else the reason';

-- pgrelay_notifier._https_url_error()
CREATE FUNCTION pgrelay_notifier._https_url_error(url text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN url !~ '^https://' THEN 'must start with https://'
        WHEN url !~ '^https://([A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?(/[A-Za-z0-9._~%!$&''()*+,;=:@/-]*)?$'
            THEN 'is not a valid https URL (scheme, host, optional port and path; no query or fragment)'
        ELSE NULL
    END
$$;
COMMENT ON FUNCTION pgrelay_notifier._https_url_error(text) IS
    'NULL when the text is an https:// base URL without query or fragment, else the reason';

-- pgrelay_notifier._validate_profile()
CREATE FUNCTION pgrelay_notifier._validate_profile(p pgrelay_notifier.profiles,
                                                   s pgrelay_notifier.profile_secrets)
RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
/*
 * Function: checks a complete profile row and its secrets, as create_profile() and
 * alter_profile() are about to store them. Every rule lives here, so both functions agree.
 * Returns: nothing; raises invalid_parameter_value with the reason.
 */
DECLARE
    guid CONSTANT text := '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$';
    reason text;
    k text;
BEGIN
    IF p.name IS NULL THEN
        RAISE EXCEPTION 'profile name must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF p.name !~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}$' THEN
        RAISE EXCEPTION 'invalid profile name "%"', pgrelay_notifier._show(p.name)
            USING ERRCODE = 'invalid_name',
                  DETAIL = 'A profile name has 1 to 63 letters, digits or the characters _ . - and does not start with . or -.';
    END IF;
    IF p.transport IS NULL OR p.transport NOT IN ('smtp', 'graph') THEN
        RAISE EXCEPTION 'invalid transport "%"', pgrelay_notifier._show(p.transport)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use smtp or graph.';
    END IF;

    -- Settings of the other transport are a mistake, not something to ignore.
    IF p.transport = 'smtp' THEN
        k := CASE WHEN p.tenant_id IS NOT NULL THEN 'tenant_id'
                  WHEN p.client_id IS NOT NULL THEN 'client_id'
                  WHEN s.client_secret IS NOT NULL THEN 'client_secret'
                  WHEN p.sender IS NOT NULL THEN 'sender'
                  WHEN p.login_url IS NOT NULL THEN 'login_url'
                  WHEN p.graph_url IS NOT NULL THEN 'graph_url'
                  WHEN p.save_to_sent_items IS NOT NULL THEN 'save_to_sent_items' END;
    ELSE
        k := CASE WHEN p.host IS NOT NULL THEN 'host'
                  WHEN p.port IS NOT NULL THEN 'port'
                  WHEN p.security IS NOT NULL THEN 'security'
                  WHEN p.username IS NOT NULL THEN 'username'
                  WHEN s.password IS NOT NULL THEN 'password'
                  WHEN s.oauth_token IS NOT NULL THEN 'oauth_token'
                  WHEN p.ca_file IS NOT NULL THEN 'ca_file'
                  WHEN p.helo_name IS NOT NULL THEN 'helo_name' END;
    END IF;
    IF k IS NOT NULL THEN
        RAISE EXCEPTION 'profile "%": % is not a setting of transport %', p.name, k, p.transport
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    IF p.transport = 'smtp' THEN
        IF p.host IS NULL THEN
            RAISE EXCEPTION 'profile "%": an smtp profile needs a host', p.name
                USING ERRCODE = 'null_value_not_allowed';
        END IF;
        IF p.host ~ '^\[.*\]$' THEN
            reason := CASE WHEN pgrelay_notifier._is_ipv6(substr(p.host, 2, length(p.host) - 2)) THEN NULL
                           ELSE 'the IPv6 address is malformed' END;
        ELSIF pgrelay_notifier._is_ipv6(p.host) THEN
            reason := 'write an IPv6 address in brackets, [' || p.host || ']';
        ELSIF pgrelay_notifier._is_ipv4(p.host) THEN
            reason := NULL;
        ELSIF p.host ~ ':[0-9]*$' THEN
            reason := 'give the port separately (port => N)';
        ELSE
            reason := pgrelay_notifier._domain_error(p.host, false);
            IF reason IS NULL AND p.host ~ '(^|\.)[0-9]+$' THEN
                reason := 'neither a host name nor an IPv4 address';
            END IF;
        END IF;
        IF reason IS NOT NULL THEN
            RAISE EXCEPTION 'profile "%": invalid host "%": %', p.name, pgrelay_notifier._show(p.host), reason
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF p.security NOT IN ('starttls', 'starttls_optional', 'tls', 'none') THEN
            RAISE EXCEPTION 'profile "%": invalid security "%"', p.name, pgrelay_notifier._show(p.security)
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Use starttls (the default: STARTTLS required), starttls_optional, tls (implicit TLS, port 465) or none.';
        END IF;
        IF p.port IS NOT NULL AND (p.port < 1 OR p.port > 65535) THEN
            RAISE EXCEPTION 'profile "%": port must be between 1 and 65535, not %', p.name, p.port
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF p.username IS NOT NULL AND (p.username = '' OR pgrelay_notifier._has_control(p.username)
                                       OR length(p.username) > 256) THEN
            RAISE EXCEPTION 'profile "%": username must be 1 to 256 characters without control characters', p.name
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF (s.password IS NOT NULL OR s.oauth_token IS NOT NULL) AND p.username IS NULL THEN
            RAISE EXCEPTION 'profile "%": % needs a username', p.name,
                            CASE WHEN s.password IS NOT NULL THEN 'password' ELSE 'oauth_token' END
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF s.password IS NOT NULL AND s.oauth_token IS NOT NULL THEN
            RAISE EXCEPTION 'profile "%": give either password or oauth_token, not both', p.name
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'With oauth_token the Processor authenticates with XOAUTH2, with password with PLAIN or LOGIN.';
        END IF;
        IF p.security = 'none' AND (s.password IS NOT NULL OR s.oauth_token IS NOT NULL) THEN
            RAISE EXCEPTION 'profile "%": credentials are never sent over an unencrypted connection (security none)', p.name
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Use security starttls or tls.';
        END IF;
        IF p.ca_file IS NOT NULL AND (p.ca_file !~ '^/' OR pgrelay_notifier._has_control(p.ca_file)
                                      OR length(p.ca_file) > 1024) THEN
            RAISE EXCEPTION 'profile "%": ca_file must be an absolute path on the Processor''s machine', p.name
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF p.helo_name IS NOT NULL THEN
            reason := CASE WHEN left(p.helo_name, 1) = '[' THEN pgrelay_notifier._literal_error(p.helo_name)
                           ELSE pgrelay_notifier._domain_error(p.helo_name, false) END;
            IF reason IS NOT NULL THEN
                RAISE EXCEPTION 'profile "%": helo_name "%" is not a host name or address literal: %',
                                p.name, pgrelay_notifier._show(p.helo_name), reason
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
        END IF;
    ELSE
        IF p.tenant_id IS NULL OR p.client_id IS NULL OR s.client_secret IS NULL OR p.sender IS NULL THEN
            RAISE EXCEPTION 'profile "%": a graph profile needs tenant_id, client_id, client_secret and sender', p.name
                USING ERRCODE = 'null_value_not_allowed';
        END IF;
        IF p.tenant_id !~ guid AND pgrelay_notifier._domain_error(p.tenant_id, true) IS NOT NULL THEN
            RAISE EXCEPTION 'profile "%": tenant_id "%" is neither a GUID nor a domain name', p.name,
                            pgrelay_notifier._show(p.tenant_id)
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF p.client_id !~ guid THEN
            RAISE EXCEPTION 'profile "%": client_id "%" is not a GUID (the application id of the app registration)',
                            p.name, pgrelay_notifier._show(p.client_id)
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF p.sender !~ guid AND pgrelay_notifier.address_error(p.sender) IS NOT NULL THEN
            RAISE EXCEPTION 'profile "%": sender "%" is neither a mailbox address nor a user id: %', p.name,
                            pgrelay_notifier._show(p.sender), pgrelay_notifier.address_error(p.sender)
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        reason := pgrelay_notifier._https_url_error(p.login_url);
        IF reason IS NOT NULL THEN
            RAISE EXCEPTION 'profile "%": login_url "%" %', p.name, pgrelay_notifier._show(p.login_url), reason
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        reason := pgrelay_notifier._https_url_error(p.graph_url);
        IF reason IS NOT NULL THEN
            RAISE EXCEPTION 'profile "%": graph_url "%" %', p.name, pgrelay_notifier._show(p.graph_url), reason
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    FOREACH k IN ARRAY ARRAY['password', 'oauth_token', 'client_secret'] LOOP
        reason := pgrelay_notifier._secret_error(CASE k WHEN 'password' THEN s.password
                                                        WHEN 'oauth_token' THEN s.oauth_token
                                                        ELSE s.client_secret END);
        IF reason IS NOT NULL THEN
            RAISE EXCEPTION 'profile "%": % %', p.name, k, reason
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'A secret is a literal value, env:NAME, file:NAME or value:TEXT.';
        END IF;
    END LOOP;

    IF p.from_address IS NOT NULL AND pgrelay_notifier.address_error(p.from_address) IS NOT NULL THEN
        RAISE EXCEPTION 'profile "%": invalid from_address "%": %', p.name, pgrelay_notifier._show(p.from_address),
                        pgrelay_notifier.address_error(p.from_address)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Give the display name as from_name.';
    END IF;
    IF p.from_name IS NOT NULL AND (pgrelay_notifier._has_control(p.from_name) OR length(p.from_name) > 256) THEN
        RAISE EXCEPTION 'profile "%": from_name must be at most 256 characters without control characters', p.name
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p.connect_timeout IS NULL OR p.connect_timeout < '1 millisecond' OR p.connect_timeout > '10 minutes' THEN
        RAISE EXCEPTION 'profile "%": connect_timeout must be between 1 millisecond and 10 minutes, not %',
                        p.name, COALESCE(p.connect_timeout::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p.timeout IS NULL OR p.timeout < '1 millisecond' OR p.timeout > '24 hours' THEN
        RAISE EXCEPTION 'profile "%": timeout must be between 1 millisecond and 24 hours, not %',
                        p.name, COALESCE(p.timeout::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p.connect_timeout > p.timeout THEN
        RAISE EXCEPTION 'profile "%": connect_timeout (%) must not exceed timeout (%)', p.name,
                        p.connect_timeout, p.timeout
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p.rate_limit_per_minute IS NOT NULL AND (p.rate_limit_per_minute < 1 OR p.rate_limit_per_minute > 1000000) THEN
        RAISE EXCEPTION 'profile "%": rate_limit_per_minute must be between 1 and 1000000, not %', p.name,
                        p.rate_limit_per_minute
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Reset it (reset => ''{rate_limit_per_minute}'') for no limit.';
    END IF;
    IF p.max_message_bytes IS NULL OR p.max_message_bytes < 1024 OR p.max_message_bytes > 104857600 THEN
        RAISE EXCEPTION 'profile "%": max_message_bytes must be between 1024 and 104857600 (100 MiB), not %',
                        p.name, COALESCE(p.max_message_bytes::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'fetch() hands the whole message to the Processor as one jsonb document.';
    END IF;
    IF p.debug IS NULL THEN
        RAISE EXCEPTION 'profile "%": debug must not be NULL', p.name USING ERRCODE = 'null_value_not_allowed';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._validate_profile(pgrelay_notifier.profiles, pgrelay_notifier.profile_secrets) IS
    'Checks a whole profile and its secrets before create_profile()/alter_profile() store them';

-- pgrelay_notifier._profile_defaults()
CREATE FUNCTION pgrelay_notifier._profile_defaults(p pgrelay_notifier.profiles)
RETURNS pgrelay_notifier.profiles
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    -- The defaults that depend on the transport; the port stays NULL (= the security's default).
    IF p.transport = 'smtp' THEN
        p.security := COALESCE(p.security, 'starttls');
    ELSIF p.transport = 'graph' THEN
        p.login_url := rtrim(COALESCE(p.login_url, 'https://login.microsoftonline.com'), '/');
        p.graph_url := rtrim(COALESCE(p.graph_url, 'https://graph.microsoft.com'), '/');
        p.save_to_sent_items := COALESCE(p.save_to_sent_items, true);
    END IF;
    p.connect_timeout := COALESCE(p.connect_timeout, '10 seconds');
    p.timeout := COALESCE(p.timeout, '60 seconds');
    p.max_message_bytes := COALESCE(p.max_message_bytes, 26214400);
    p.debug := COALESCE(p.debug, false);
    RETURN p;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._profile_defaults(pgrelay_notifier.profiles) IS
    'Fills the unset settings of a profile with their defaults';

-- pgrelay_notifier.create_profile()
CREATE FUNCTION pgrelay_notifier.create_profile(
    name text,
    transport text DEFAULT 'smtp',
    host text DEFAULT NULL,
    port integer DEFAULT NULL,
    security text DEFAULT NULL,
    username text DEFAULT NULL,
    password text DEFAULT NULL,
    oauth_token text DEFAULT NULL,
    ca_file text DEFAULT NULL,
    helo_name text DEFAULT NULL,
    tenant_id text DEFAULT NULL,
    client_id text DEFAULT NULL,
    client_secret text DEFAULT NULL,
    sender text DEFAULT NULL,
    login_url text DEFAULT NULL,
    graph_url text DEFAULT NULL,
    save_to_sent_items boolean DEFAULT NULL,
    from_address text DEFAULT NULL,
    from_name text DEFAULT NULL,
    connect_timeout interval DEFAULT NULL,
    timeout interval DEFAULT NULL,
    rate_limit_per_minute integer DEFAULT NULL,
    max_message_bytes bigint DEFAULT NULL,
    debug boolean DEFAULT NULL,
    description text DEFAULT NULL)
RETURNS pgrelay_notifier.profiles
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: creates a profile (use named arguments). Unset settings take their defaults: security
 * starttls, port by security (587, 465 for tls, 25 for none), the Microsoft login and Graph URLs,
 * save_to_sent_items true, timeouts 10 s / 60 s, max_message_bytes 25 MiB, no rate limit, debug
 * off. Secrets go to profile_secrets.
 * Returns: the stored profile row (secrets are not part of it).
 */
DECLARE
    p pgrelay_notifier.profiles;
    s pgrelay_notifier.profile_secrets;
BEGIN
    p.name := create_profile.name;
    p.transport := create_profile.transport;
    p.host := create_profile.host;
    p.port := create_profile.port;
    p.security := create_profile.security;
    p.username := create_profile.username;
    p.ca_file := create_profile.ca_file;
    p.helo_name := create_profile.helo_name;
    p.tenant_id := create_profile.tenant_id;
    p.client_id := create_profile.client_id;
    p.sender := create_profile.sender;
    p.login_url := create_profile.login_url;
    p.graph_url := create_profile.graph_url;
    p.save_to_sent_items := create_profile.save_to_sent_items;
    p.from_address := create_profile.from_address;
    p.from_name := create_profile.from_name;
    p.connect_timeout := create_profile.connect_timeout;
    p.timeout := create_profile.timeout;
    p.rate_limit_per_minute := create_profile.rate_limit_per_minute;
    p.max_message_bytes := create_profile.max_message_bytes;
    p.debug := create_profile.debug;
    p.description := create_profile.description;
    p.created_by := session_user;
    p.created_at := now();
    p.updated_at := now();
    s.profile := create_profile.name;
    s.password := create_profile.password;
    s.oauth_token := create_profile.oauth_token;
    s.client_secret := create_profile.client_secret;

    p := pgrelay_notifier._profile_defaults(p);
    PERFORM pgrelay_notifier._validate_profile(p, s);
    IF EXISTS (SELECT 1 FROM pgrelay_notifier.profiles x WHERE x.name = p.name) THEN
        RAISE EXCEPTION 'profile "%" exists already', p.name
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Change it with pgrelay_notifier.alter_profile().';
    END IF;
    INSERT INTO pgrelay_notifier.profiles SELECT p.*;
    INSERT INTO pgrelay_notifier.profile_secrets SELECT s.*;
    RETURN p;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.create_profile(text, text, text, integer, text, text, text, text, text, text,
                                                    text, text, text, text, text, text, boolean, text, text,
                                                    interval, interval, integer, bigint, boolean, text) IS
    'Creates an SMTP or Microsoft Graph profile (named arguments); returns it without its secrets';

-- pgrelay_notifier.alter_profile()
CREATE FUNCTION pgrelay_notifier.alter_profile(
    name text,
    host text DEFAULT NULL,
    port integer DEFAULT NULL,
    security text DEFAULT NULL,
    username text DEFAULT NULL,
    password text DEFAULT NULL,
    oauth_token text DEFAULT NULL,
    ca_file text DEFAULT NULL,
    helo_name text DEFAULT NULL,
    tenant_id text DEFAULT NULL,
    client_id text DEFAULT NULL,
    client_secret text DEFAULT NULL,
    sender text DEFAULT NULL,
    login_url text DEFAULT NULL,
    graph_url text DEFAULT NULL,
    save_to_sent_items boolean DEFAULT NULL,
    from_address text DEFAULT NULL,
    from_name text DEFAULT NULL,
    connect_timeout interval DEFAULT NULL,
    timeout interval DEFAULT NULL,
    rate_limit_per_minute integer DEFAULT NULL,
    max_message_bytes bigint DEFAULT NULL,
    debug boolean DEFAULT NULL,
    description text DEFAULT NULL,
    reset text[] DEFAULT NULL)
RETURNS pgrelay_notifier.profiles
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: changes a profile. An argument left NULL keeps the current value; reset lists settings
 * to put back to their default (or to unset: username, password, rate_limit_per_minute, ...).
 * The transport cannot change (drop and re-create the profile). Messages still queued are
 * delivered with the new settings.
 * Returns: the stored profile row.
 */
DECLARE
    p pgrelay_notifier.profiles;
    s pgrelay_notifier.profile_secrets;
    given text[];
    k text;
BEGIN
    SELECT * INTO p FROM pgrelay_notifier.profiles x WHERE x.name = alter_profile.name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'profile "%" does not exist', pgrelay_notifier._show(alter_profile.name)
            USING ERRCODE = 'undefined_object';
    END IF;
    SELECT * INTO s FROM pgrelay_notifier.profile_secrets x WHERE x.profile = p.name;
    s.profile := p.name;

    given := array_remove(ARRAY[
        CASE WHEN alter_profile.host IS NOT NULL THEN 'host' END,
        CASE WHEN alter_profile.port IS NOT NULL THEN 'port' END,
        CASE WHEN alter_profile.security IS NOT NULL THEN 'security' END,
        CASE WHEN alter_profile.username IS NOT NULL THEN 'username' END,
        CASE WHEN alter_profile.password IS NOT NULL THEN 'password' END,
        CASE WHEN alter_profile.oauth_token IS NOT NULL THEN 'oauth_token' END,
        CASE WHEN alter_profile.ca_file IS NOT NULL THEN 'ca_file' END,
        CASE WHEN alter_profile.helo_name IS NOT NULL THEN 'helo_name' END,
        CASE WHEN alter_profile.tenant_id IS NOT NULL THEN 'tenant_id' END,
        CASE WHEN alter_profile.client_id IS NOT NULL THEN 'client_id' END,
        CASE WHEN alter_profile.client_secret IS NOT NULL THEN 'client_secret' END,
        CASE WHEN alter_profile.sender IS NOT NULL THEN 'sender' END,
        CASE WHEN alter_profile.login_url IS NOT NULL THEN 'login_url' END,
        CASE WHEN alter_profile.graph_url IS NOT NULL THEN 'graph_url' END,
        CASE WHEN alter_profile.save_to_sent_items IS NOT NULL THEN 'save_to_sent_items' END,
        CASE WHEN alter_profile.from_address IS NOT NULL THEN 'from_address' END,
        CASE WHEN alter_profile.from_name IS NOT NULL THEN 'from_name' END,
        CASE WHEN alter_profile.connect_timeout IS NOT NULL THEN 'connect_timeout' END,
        CASE WHEN alter_profile.timeout IS NOT NULL THEN 'timeout' END,
        CASE WHEN alter_profile.rate_limit_per_minute IS NOT NULL THEN 'rate_limit_per_minute' END,
        CASE WHEN alter_profile.max_message_bytes IS NOT NULL THEN 'max_message_bytes' END,
        CASE WHEN alter_profile.debug IS NOT NULL THEN 'debug' END,
        CASE WHEN alter_profile.description IS NOT NULL THEN 'description' END], NULL);

    FOREACH k IN ARRAY COALESCE(alter_profile.reset, '{}') LOOP
        IF k = ANY (given) THEN
            RAISE EXCEPTION 'profile "%": % is both given and reset', p.name, k
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        CASE k
            WHEN 'port' THEN p.port := NULL;
            WHEN 'security' THEN p.security := NULL;
            WHEN 'username' THEN p.username := NULL;
            WHEN 'password' THEN s.password := NULL;
            WHEN 'oauth_token' THEN s.oauth_token := NULL;
            WHEN 'ca_file' THEN p.ca_file := NULL;
            WHEN 'helo_name' THEN p.helo_name := NULL;
            WHEN 'login_url' THEN p.login_url := NULL;
            WHEN 'graph_url' THEN p.graph_url := NULL;
            WHEN 'save_to_sent_items' THEN p.save_to_sent_items := NULL;
            WHEN 'from_address' THEN p.from_address := NULL;
            WHEN 'from_name' THEN p.from_name := NULL;
            WHEN 'connect_timeout' THEN p.connect_timeout := NULL;
            WHEN 'timeout' THEN p.timeout := NULL;
            WHEN 'rate_limit_per_minute' THEN p.rate_limit_per_minute := NULL;
            WHEN 'max_message_bytes' THEN p.max_message_bytes := NULL;
            WHEN 'debug' THEN p.debug := NULL;
            WHEN 'description' THEN p.description := NULL;
            ELSE
                IF k IN ('name', 'transport', 'host', 'tenant_id', 'client_id', 'client_secret', 'sender') THEN
                    RAISE EXCEPTION 'profile "%": % cannot be reset', p.name, k
                        USING ERRCODE = 'invalid_parameter_value',
                              DETAIL = 'It has no default: give a new value instead.';
                END IF;
                RAISE EXCEPTION 'profile "%": unknown setting "%" in reset', p.name, pgrelay_notifier._show(k)
                    USING ERRCODE = 'invalid_parameter_value';
        END CASE;
    END LOOP;

    p.host := COALESCE(alter_profile.host, p.host);
    p.port := COALESCE(alter_profile.port, p.port);
    p.security := COALESCE(alter_profile.security, p.security);
    p.username := COALESCE(alter_profile.username, p.username);
    p.ca_file := COALESCE(alter_profile.ca_file, p.ca_file);
    p.helo_name := COALESCE(alter_profile.helo_name, p.helo_name);
    p.tenant_id := COALESCE(alter_profile.tenant_id, p.tenant_id);
    p.client_id := COALESCE(alter_profile.client_id, p.client_id);
    p.sender := COALESCE(alter_profile.sender, p.sender);
    p.login_url := COALESCE(alter_profile.login_url, p.login_url);
    p.graph_url := COALESCE(alter_profile.graph_url, p.graph_url);
    p.save_to_sent_items := COALESCE(alter_profile.save_to_sent_items, p.save_to_sent_items);
    p.from_address := COALESCE(alter_profile.from_address, p.from_address);
    p.from_name := COALESCE(alter_profile.from_name, p.from_name);
    p.connect_timeout := COALESCE(alter_profile.connect_timeout, p.connect_timeout);
    p.timeout := COALESCE(alter_profile.timeout, p.timeout);
    p.rate_limit_per_minute := COALESCE(alter_profile.rate_limit_per_minute, p.rate_limit_per_minute);
    p.max_message_bytes := COALESCE(alter_profile.max_message_bytes, p.max_message_bytes);
    p.debug := COALESCE(alter_profile.debug, p.debug);
    p.description := COALESCE(alter_profile.description, p.description);
    s.password := COALESCE(alter_profile.password, s.password);
    s.oauth_token := COALESCE(alter_profile.oauth_token, s.oauth_token);
    s.client_secret := COALESCE(alter_profile.client_secret, s.client_secret);
    p.updated_at := now();

    p := pgrelay_notifier._profile_defaults(p);
    PERFORM pgrelay_notifier._validate_profile(p, s);
    UPDATE pgrelay_notifier.profiles x
    SET host = p.host, port = p.port, security = p.security, username = p.username,
        ca_file = p.ca_file, helo_name = p.helo_name, tenant_id = p.tenant_id,
        client_id = p.client_id, sender = p.sender, login_url = p.login_url,
        graph_url = p.graph_url, save_to_sent_items = p.save_to_sent_items,
        from_address = p.from_address, from_name = p.from_name,
        connect_timeout = p.connect_timeout, timeout = p.timeout,
        rate_limit_per_minute = p.rate_limit_per_minute, max_message_bytes = p.max_message_bytes,
        debug = p.debug, description = p.description, updated_at = p.updated_at
    WHERE x.name = p.name;
    INSERT INTO pgrelay_notifier.profile_secrets AS x (profile, password, oauth_token, client_secret)
    VALUES (s.profile, s.password, s.oauth_token, s.client_secret)
    ON CONFLICT (profile) DO UPDATE
        SET password = EXCLUDED.password, oauth_token = EXCLUDED.oauth_token,
            client_secret = EXCLUDED.client_secret;
    RETURN p;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.alter_profile(text, text, integer, text, text, text, text, text, text, text,
                                                   text, text, text, text, text, boolean, text, text, interval,
                                                   interval, integer, bigint, boolean, text, text[]) IS
    'Changes a profile: NULL keeps a setting, reset => ''{setting,...}'' restores defaults; returns it without secrets';

-- pgrelay_notifier.drop_profile()
CREATE FUNCTION pgrelay_notifier.drop_profile(name text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: drops a profile and its secrets. Refused while a channel uses it or a notification
 * composed for it is still queued or retrying. The row lock taken first makes a concurrent send()
 * on the profile wait, and then fail cleanly.
 */
DECLARE
    chans text;
    open_count bigint;
BEGIN
    PERFORM 1 FROM pgrelay_notifier.profiles x WHERE x.name = drop_profile.name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'profile "%" does not exist', pgrelay_notifier._show(drop_profile.name)
            USING ERRCODE = 'undefined_object';
    END IF;
    SELECT string_agg(c.channel, ', ' ORDER BY c.channel) INTO chans
    FROM pgrelay_notifier.channels c WHERE c.profile = drop_profile.name;
    IF chans IS NOT NULL THEN
        RAISE EXCEPTION 'profile "%" is used by channel(s) %', drop_profile.name, chans
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = 'Drop the channels or move them to another profile with alter_channel() first.';
    END IF;
    SELECT count(*) INTO open_count FROM pgrelay_notifier.notifications n
    WHERE n.profile = drop_profile.name AND n.status IN ('queued', 'retrying');
    IF open_count > 0 THEN
        RAISE EXCEPTION 'profile "%" still has % notification(s) waiting for delivery', drop_profile.name, open_count
            USING ERRCODE = 'object_in_use',
                  HINT = 'Let them finish, or cancel them.';
    END IF;
    DELETE FROM pgrelay_notifier.profiles x WHERE x.name = drop_profile.name;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.drop_profile(text) IS
    'Drops a profile and its secrets; refused while channels or undelivered notifications use it';

--------------------------------------------------------------------------------
-- Channels
--------------------------------------------------------------------------------

-- pgrelay_notifier._register()
CREATE FUNCTION pgrelay_notifier._register(channel text, concurrency_mode text, max_attempts integer,
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
CREATE FUNCTION pgrelay_notifier._relay_channel(channel text, OUT action_type text, OUT active boolean)
LANGUAGE sql STABLE AS $$
    -- Read-only look at pg_relay's channel, for clear errors before anything is stored.
    SELECT c.action_type, c.active FROM pgrelay.channels c WHERE c.channel = _relay_channel.channel
$$;
COMMENT ON FUNCTION pgrelay_notifier._relay_channel(text) IS
    'The action type and active flag of a pg_relay channel (NULLs when it does not exist)';

-- pgrelay_notifier.create_channel()
CREATE FUNCTION pgrelay_notifier.create_channel(
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
CREATE FUNCTION pgrelay_notifier.alter_channel(
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
CREATE FUNCTION pgrelay_notifier.drop_channel(channel text) RETURNS void
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

--------------------------------------------------------------------------------
-- Producers: send, get_status, cancel
--------------------------------------------------------------------------------

-- pgrelay_notifier._is_admin()
CREATE FUNCTION pgrelay_notifier._is_admin() RETURNS boolean
LANGUAGE sql STABLE AS $$
    -- The session's login role, not current_user: inside a SECURITY DEFINER function current_user
    -- is the owner. Superusers are members of every role.
    SELECT pg_catalog.pg_has_role(session_user, 'pgrelay_admin', 'MEMBER')
$$;
COMMENT ON FUNCTION pgrelay_notifier._is_admin() IS
    'Is the session user a member of pgrelay_admin (and so may see every notification)?';

-- pgrelay_notifier._in_delivery()
CREATE FUNCTION pgrelay_notifier._in_delivery(notification_id bigint) RETURNS boolean
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

-- pgrelay_notifier.send()
CREATE FUNCTION pgrelay_notifier.send(
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
 * sender). The Message-ID <notification_id.random@from-domain> is made here, once.
 * Returns: the notification id.
 */
DECLARE
    ch pgrelay_notifier.channels;
    p pgrelay_notifier.profiles;
    rc record;
    nid bigint;
    r record;
    kinds text[] := '{}';
    addrs text[] := '{}';
    names text[] := '{}';
    seen text[] := '{}';
    reply jsonb := '[]';
    f record;
    f_address text;
    f_name text;
    hdrs jsonb;
    total bigint;
    n integer;
BEGIN
    IF send.channel IS NULL THEN
        RAISE EXCEPTION 'channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO ch FROM pgrelay_notifier.channels c WHERE c.channel = send.channel FOR KEY SHARE;
    SELECT * INTO rc FROM pgrelay_notifier._relay_channel(send.channel);
    IF ch.channel IS NULL THEN
        IF rc.action_type IS NOT NULL THEN
            RAISE EXCEPTION 'channel "%" is not a pg_relay_notifier channel (action type %)', send.channel, rc.action_type
                USING ERRCODE = 'wrong_object_type',
                      HINT = 'Create mail channels with pgrelay_notifier.create_channel().';
        END IF;
        RAISE EXCEPTION 'channel "%" does not exist', pgrelay_notifier._show(send.channel)
            USING ERRCODE = 'undefined_object';
    END IF;
    IF rc.action_type IS NULL THEN
        RAISE EXCEPTION 'channel "%" is not registered with pg_relay', send.channel
            USING ERRCODE = 'undefined_object',
                  HINT = 'An admin can register it again with pgrelay_notifier.alter_channel().';
    END IF;
    IF rc.action_type <> 'notify' THEN
        RAISE EXCEPTION 'channel "%" is not a notify channel (action type %)', send.channel, rc.action_type
            USING ERRCODE = 'wrong_object_type';
    END IF;
    IF NOT rc.active THEN
        RAISE EXCEPTION 'channel "%" is not active', send.channel
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    SELECT * INTO p FROM pgrelay_notifier.profiles x WHERE x.name = ch.profile FOR KEY SHARE;

    -- Recipients, in the order to, cc, bcc; each address once.
    FOR r IN SELECT l.kind, m.m_address, m.m_name
             FROM (VALUES (1, 'to', send."to"), (2, 'cc', send.cc), (3, 'bcc', send.bcc)) l(k, kind, list)
             CROSS JOIN LATERAL pgrelay_notifier._mailboxes(l.list, l.kind) WITH ORDINALITY m
             ORDER BY l.k, m.ordinality LOOP
        IF lower(r.m_address) = ANY (seen) THEN
            CONTINUE;
        END IF;
        seen := seen || lower(r.m_address);
        kinds := kinds || r.kind;
        addrs := addrs || r.m_address;
        names := names || r.m_name;
    END LOOP;
    n := COALESCE(array_length(addrs, 1), 0);
    IF n = 0 THEN
        RAISE EXCEPTION 'a message needs at least one recipient ("to", cc or bcc)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF n > 500 THEN
        RAISE EXCEPTION 'too many recipients (%; at most 500 per message)', n
            USING ERRCODE = 'program_limit_exceeded';
    END IF;

    SELECT COALESCE(jsonb_agg(jsonb_build_object('address', m.m_address, 'name', m.m_name)), '[]') INTO reply
    FROM pgrelay_notifier._mailboxes(send.reply_to, 'reply_to') m;
    IF jsonb_array_length(reply) > 20 THEN
        RAISE EXCEPTION 'too many reply_to addresses (%; at most 20)', jsonb_array_length(reply)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;

    -- From: given, else the profile's.
    IF send.from_address IS NOT NULL THEN
        SELECT * INTO f FROM pgrelay_notifier._mailboxes(ARRAY[send.from_address], 'from') m;
        f_address := f.m_address;
        f_name := COALESCE(send.from_name, f.m_name);
    ELSE
        f_address := COALESCE(p.from_address,
                              CASE WHEN p.transport = 'graph' AND strpos(p.sender, '@') > 0 THEN p.sender END);
        f_name := COALESCE(send.from_name, p.from_name);
    END IF;
    IF f_address IS NULL THEN
        RAISE EXCEPTION 'no From address: give from_address, or set one on profile "%"', p.name
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF f_name IS NOT NULL AND (pgrelay_notifier._has_control(f_name) OR length(f_name) > 256) THEN
        RAISE EXCEPTION 'from_name must be at most 256 characters without control characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    IF send.subject IS NOT NULL AND pgrelay_notifier._has_control(send.subject) THEN
        RAISE EXCEPTION 'subject contains a control character'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'CR, LF and other control characters are not allowed in header fields.';
    END IF;
    IF length(send.subject) > 998 THEN
        RAISE EXCEPTION 'subject is longer than 998 characters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF send.body_text IS NULL AND send.body_html IS NULL THEN
        RAISE EXCEPTION 'a message needs body_text or body_html (or both)'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    hdrs := pgrelay_notifier._headers(send.headers);

    nid := pgrelay._next_id();
    INSERT INTO pgrelay_notifier.notifications
        (notification_id, channel, profile, status, message_id, from_address, from_name, reply_to,
         subject, body_text, body_html, headers, run_at)
    VALUES (nid, ch.channel, p.name, 'queued',
            format('<%s.%s@%s>', nid, left(replace(gen_random_uuid()::text, '-', ''), 12),
                   lower(substr(f_address, length(f_address) - strpos(reverse(f_address), '@') + 2))),
            f_address, f_name, reply, send.subject, send.body_text, send.body_html, hdrs, send.run_at);
    INSERT INTO pgrelay_notifier.recipients (notification_id, recipient_id, kind, address, name)
    SELECT nid, i, kinds[i], addrs[i], names[i] FROM generate_series(1, n) i;
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
    UPDATE pgrelay_notifier.notifications x SET size_bytes = total WHERE x.notification_id = nid;

    PERFORM pgrelay.notify(ch.channel, nid::text, send.run_at);
    RETURN nid;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.send(text, text[], text, text, text, text[], text[], text[], text, text,
                                          jsonb, jsonb, timestamptz) IS
    'Validates and stores an email and queues it on a notify channel in the caller''s transaction; returns the notification id';

-- pgrelay_notifier._visible()
CREATE FUNCTION pgrelay_notifier._visible(notification_id bigint, lock boolean)
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
CREATE FUNCTION pgrelay_notifier.get_status(notification_id bigint,
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
CREATE FUNCTION pgrelay_notifier.cancel(notification_id bigint) RETURNS text
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

--------------------------------------------------------------------------------
-- The Processor's interface: fetch and set_status (docs/interface.md)
--------------------------------------------------------------------------------

-- pgrelay_notifier._pk()
CREATE FUNCTION pgrelay_notifier._pk(pk text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    -- The payload of a notify event as an id: NULL unless it is 1 to 19 digits within bigint.
    SELECT CASE WHEN pk ~ '^[0-9]{1,19}$' AND (pg_catalog.length(pk) < 19 OR pk <= '9223372036854775807')
                THEN pk::bigint END
$$;
COMMENT ON FUNCTION pgrelay_notifier._pk(text) IS 'A notify payload as a notification id, NULL when malformed';

-- pgrelay_notifier._profile_doc()
CREATE FUNCTION pgrelay_notifier._profile_doc(name text) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
/*
 * PL/pgSQL, not SQL: fetch() calls this once per email, and PostgreSQL plans the body of a SQL
 * function that cannot be inlined again on every call (~0.1 ms here); PL/pgSQL keeps the plan for
 * the session (docs/benchmarks.md).
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
                    'helo_name', p.helo_name) END,
        'graph', CASE WHEN p.transport = 'graph' THEN jsonb_build_object(
                    'tenant_id', p.tenant_id,
                    'client_id', p.client_id,
                    'client_secret', s.client_secret,
                    'sender', p.sender,
                    'login_url', p.login_url,
                    'graph_url', p.graph_url,
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
CREATE FUNCTION pgrelay_notifier.fetch(pk text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: the whole message and its profile as the document of docs/interface.md, for the
 * Processor inside its held transaction. Writes nothing. It locks the notification row (FOR NO
 * KEY UPDATE) until that transaction ends, so cancel() waits for the attempt's outcome instead
 * of racing it, and takes a transaction-level advisory lock on the id that get_status() reads as
 * "sending".
 * Returns: the document; NULL when pk is malformed or no notification has that id.
 */
DECLARE
    nid bigint := pgrelay_notifier._pk(pk);
    n pgrelay_notifier.notifications;
BEGIN
    IF nid IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT * INTO n FROM pgrelay_notifier.notifications x WHERE x.notification_id = nid FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    PERFORM pg_try_advisory_xact_lock(nid);
    RETURN jsonb_build_object(
        'interface_version', 1,
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
COMMENT ON FUNCTION pgrelay_notifier.fetch(text) IS
    'The Processor''s view of one notification (docs/interface.md); NULL for an unknown or malformed id';

-- pgrelay_notifier._json_int()
CREATE FUNCTION pgrelay_notifier._json_int(doc jsonb, key text, lo bigint, hi bigint) RETURNS bigint
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
CREATE FUNCTION pgrelay_notifier._json_text(doc jsonb, key text) RETURNS text
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
CREATE FUNCTION pgrelay_notifier._json_time(doc jsonb, key text) RETURNS timestamptz
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v text := pgrelay_notifier._json_text(doc, key);
BEGIN
    RETURN v::timestamptz;
EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR invalid_parameter_value THEN
    RAISE EXCEPTION 'set_status: % is not a timestamp: "%"', key, pgrelay_notifier._show(v)
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'Use ISO 8601 with a time zone, e.g. 2026-11-29T19:20:50.123+00.';
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._json_time(jsonb, text) IS
    'A timestamp member (ISO 8601 string) of a set_status() document (NULL when absent), or a clear error';

-- pgrelay_notifier.set_status()
CREATE FUNCTION pgrelay_notifier.set_status(pk text, result jsonb) RETURNS text
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
    p pgrelay_notifier.profiles;
    s pgrelay_notifier.profile_secrets;
    outcome text;
    new_status text;
    rcpts jsonb;
    e jsonb;
    rid bigint;
    rstatus text;
    ids bigint[] := '{}';
    att_id bigint;
    v_attempt integer;
    v_started timestamptz;
    v_finished timestamptz;
    v_next timestamptz;
    v_error text;
    v_transport text;
    v_trace text;
    v_unknown boolean;
    sec text;
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
    v_attempt := COALESCE(pgrelay_notifier._json_int(result, 'attempt', 1, 99999), n.attempts + 1);
    v_started := pgrelay_notifier._json_time(result, 'started_at');
    v_finished := pgrelay_notifier._json_time(result, 'finished_at');
    v_next := pgrelay_notifier._json_time(result, 'next_attempt_at');
    v_error := pgrelay_notifier._json_text(result, 'error');
    v_trace := pgrelay_notifier._json_text(result, 'trace');
    IF result ? 'unknown_outcome' AND jsonb_typeof(result -> 'unknown_outcome') NOT IN ('boolean', 'null') THEN
        RAISE EXCEPTION 'set_status: unknown_outcome must be a boolean' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_unknown := COALESCE((result ->> 'unknown_outcome')::boolean, false);

    rcpts := COALESCE(result -> 'recipients', '[]');
    IF jsonb_typeof(rcpts) = 'null' THEN
        rcpts := '[]';
    END IF;
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

    -- A final outcome settles the envelope recipients the document does not list: outcome sent
    -- means every one was accepted, outcome failed that none will be tried again.
    IF outcome IN ('sent', 'failed') THEN
        UPDATE pgrelay_notifier.recipients r
        SET status = outcome, updated_at = now()
        WHERE r.notification_id = nid AND r.status IN ('pending', 'retrying') AND NOT r.recipient_id = ANY (ids);
    END IF;

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
    VALUES (att_id, nid, v_attempt, outcome, new_status, v_transport, v_started, v_finished,
            pgrelay_notifier._json_int(result, 'reply_code', 0, 999),
            pgrelay_notifier._json_text(result, 'reply'),
            pgrelay_notifier._json_text(result, 'provider_message_id'),
            v_error, v_unknown, v_next, rcpts);

    SELECT * INTO p FROM pgrelay_notifier.profiles x WHERE x.name = n.profile;
    IF v_trace IS NOT NULL AND COALESCE(p.debug, false) THEN
        -- Defence in depth: the Processor redacts credentials; mask literal secrets once more.
        SELECT * INTO s FROM pgrelay_notifier.profile_secrets x WHERE x.profile = n.profile;
        FOREACH sec IN ARRAY ARRAY[s.password, s.oauth_token, s.client_secret] LOOP
            IF sec IS NOT NULL AND sec !~ '^(env|file):' AND length(sec) >= 4 THEN
                sec := regexp_replace(sec, '^value:', '');
                v_trace := replace(v_trace, sec, '[redacted]');
                v_trace := replace(v_trace, translate(encode(convert_to(sec, 'UTF8'), 'base64'), E'\n', ''), '[redacted]');
            END IF;
        END LOOP;
        INSERT INTO pgrelay_notifier.attempt_traces (attempt_id, trace) VALUES (att_id, v_trace);
    END IF;
    RETURN new_status;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.set_status(text, jsonb) IS
    'Records one delivery attempt reported by the Processor (docs/interface.md); returns the new status';

--------------------------------------------------------------------------------
-- Administration: requeue, purge, views
--------------------------------------------------------------------------------

-- pgrelay_notifier.requeue()
CREATE FUNCTION pgrelay_notifier.requeue(notification_id bigint, run_at timestamptz DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: gives a failed or partially sent notification another round: recipients that failed
 * or were retrying become pending again (those sent stay sent and are not mailed twice), the
 * status becomes queued, and a new event is queued on its channel. Use it instead of
 * pgrelay.retry_failed() for notify events, which would re-deliver with the recipients' failed
 * statuses unchanged.
 * Returns: 'queued'.
 */
DECLARE
    n pgrelay_notifier.notifications;
BEGIN
    n := pgrelay_notifier._visible(requeue.notification_id, true);
    IF n.status NOT IN ('failed', 'partially_sent') THEN
        RAISE EXCEPTION 'notification % is %; only failed or partially sent notifications can be requeued',
                        n.notification_id, n.status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pgrelay_notifier.channels c WHERE c.channel = n.channel) THEN
        RAISE EXCEPTION 'channel "%" of notification % does not exist any more', n.channel, n.notification_id
            USING ERRCODE = 'undefined_object';
    END IF;
    UPDATE pgrelay_notifier.recipients r SET status = 'pending', code = NULL, reply = NULL, updated_at = now()
    WHERE r.notification_id = n.notification_id AND r.status IN ('failed', 'retrying');
    UPDATE pgrelay_notifier.notifications x
    SET status = 'queued', finished_at = NULL, sent_at = NULL, next_attempt_at = NULL,
        run_at = requeue.run_at, updated_at = now()
    WHERE x.notification_id = n.notification_id;
    PERFORM pgrelay.notify(n.channel, n.notification_id::text, requeue.run_at);
    RETURN 'queued';
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.requeue(bigint, timestamptz) IS
    'Queues a failed or partially sent notification again for its unsent recipients; returns queued';

-- pgrelay_notifier.purge()
CREATE FUNCTION pgrelay_notifier.purge(older_than interval,
                                       OUT notifications bigint, OUT attempts bigint, OUT traces bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: retention. Deletes the notifications that finished (sent, partially sent, failed or
 * cancelled) more than older_than ago, with their recipients, attachments, attempts and traces,
 * and the traces older than that of notifications still in progress.
 * Returns: how many notifications, attempts and traces were deleted.
 */
DECLARE
    cutoff timestamptz;
BEGIN
    IF older_than IS NULL OR older_than < '0' THEN
        RAISE EXCEPTION 'older_than must be a positive interval, not %', COALESCE(older_than::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    cutoff := now() - older_than;
    WITH old AS (
        SELECT x.notification_id FROM pgrelay_notifier.notifications x
        WHERE x.finished_at < cutoff AND x.status IN ('sent', 'partially_sent', 'failed', 'cancelled')
    )
    SELECT count(*),
           (SELECT count(*) FROM pgrelay_notifier.attempts a WHERE a.notification_id IN (SELECT * FROM old)),
           (SELECT count(*) FROM pgrelay_notifier.attempt_traces t
            JOIN pgrelay_notifier.attempts a USING (attempt_id)
            WHERE a.notification_id IN (SELECT * FROM old) OR t.recorded_at < cutoff)
    INTO notifications, attempts, traces
    FROM old;
    DELETE FROM pgrelay_notifier.attempt_traces t WHERE t.recorded_at < cutoff;
    DELETE FROM pgrelay_notifier.notifications x
    WHERE x.finished_at < cutoff AND x.status IN ('sent', 'partially_sent', 'failed', 'cancelled');
END
$$;
COMMENT ON FUNCTION pgrelay_notifier.purge(interval) IS
    'Deletes notifications finished more than older_than ago (with attempts and traces) and older traces';

CREATE VIEW pgrelay_notifier.recent_failures WITH (security_barrier) AS
SELECT n.notification_id, n.channel, n.profile, n.status, n.attempts, n.last_error, n.last_attempt_at,
       n.next_attempt_at, n.created_at, n.created_by,
       (SELECT count(*) FROM pgrelay_notifier.recipients r
        WHERE r.notification_id = n.notification_id AND r.status = 'failed') AS failed_recipients,
       (SELECT count(*) FROM pgrelay_notifier.recipients r
        WHERE r.notification_id = n.notification_id) AS recipients
FROM pgrelay_notifier.notifications n
WHERE n.status IN ('failed', 'partially_sent', 'retrying')
  AND n.last_attempt_at > now() - interval '7 days'
  AND (n.created_by = session_user OR pg_catalog.pg_has_role(session_user, 'pgrelay_admin', 'MEMBER'))
ORDER BY n.last_attempt_at DESC;
COMMENT ON VIEW pgrelay_notifier.recent_failures IS
    'Notifications whose last attempt in the past 7 days failed (failed, partially_sent, or retrying after '
    'a transient failure), newest first; producers see their own, admins all';

CREATE VIEW pgrelay_notifier.profile_summary AS
SELECT p.name AS profile, p.transport, p.debug,
       (SELECT count(*) FROM pgrelay_notifier.channels c WHERE c.profile = p.name) AS channels,
       count(n.notification_id) FILTER (WHERE n.status = 'queued') AS queued,
       count(n.notification_id) FILTER (WHERE n.status = 'retrying') AS retrying,
       count(n.notification_id) FILTER (WHERE n.status = 'sent') AS sent,
       count(n.notification_id) FILTER (WHERE n.status = 'partially_sent') AS partially_sent,
       count(n.notification_id) FILTER (WHERE n.status = 'failed') AS failed,
       count(n.notification_id) FILTER (WHERE n.status = 'cancelled') AS cancelled,
       max(n.sent_at) AS last_sent_at,
       max(n.last_attempt_at) FILTER (WHERE n.status IN ('failed', 'partially_sent', 'retrying')) AS last_failure_at
FROM pgrelay_notifier.profiles p
LEFT JOIN pgrelay_notifier.notifications n ON n.profile = p.name
GROUP BY p.name, p.transport, p.debug;
COMMENT ON VIEW pgrelay_notifier.profile_summary IS
    'Per profile: channels and notifications by status (since the last purge), last success and failure';

CREATE VIEW pgrelay_notifier.profile_credentials AS
SELECT p.name AS profile,
       CASE WHEN s.password IS NULL THEN NULL
            WHEN s.password ~ '^(env|file):' THEN s.password ELSE '(literal)' END AS password,
       CASE WHEN s.oauth_token IS NULL THEN NULL
            WHEN s.oauth_token ~ '^(env|file):' THEN s.oauth_token ELSE '(literal)' END AS oauth_token,
       CASE WHEN s.client_secret IS NULL THEN NULL
            WHEN s.client_secret ~ '^(env|file):' THEN s.client_secret ELSE '(literal)' END AS client_secret
FROM pgrelay_notifier.profiles p
LEFT JOIN pgrelay_notifier.profile_secrets s ON s.profile = p.name;
COMMENT ON VIEW pgrelay_notifier.profile_credentials IS
    'Which secrets each profile has: env:/file: references as written, literal values only as (literal)';

--------------------------------------------------------------------------------
-- Privileges: PUBLIC gets nothing; each role gets what its job needs
--------------------------------------------------------------------------------
REVOKE ALL ON SCHEMA pgrelay_notifier FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA pgrelay_notifier FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA pgrelay_notifier FROM PUBLIC;

GRANT USAGE ON SCHEMA pgrelay_notifier TO pgrelay_producer, pgrelay_processor, pgrelay_admin;

GRANT EXECUTE ON FUNCTION
    pgrelay_notifier.send(text, text[], text, text, text, text[], text[], text[], text, text, jsonb, jsonb, timestamptz),
    pgrelay_notifier.get_status(bigint),
    pgrelay_notifier.cancel(bigint),
    pgrelay_notifier.address_error(text),
    pgrelay_notifier.parse_mailbox(text)
TO pgrelay_producer;
GRANT SELECT ON pgrelay_notifier.recent_failures TO pgrelay_producer;

GRANT EXECUTE ON FUNCTION
    pgrelay_notifier.fetch(text),
    pgrelay_notifier.set_status(text, jsonb)
TO pgrelay_processor;

GRANT EXECUTE ON FUNCTION
    pgrelay_notifier.create_profile(text, text, text, integer, text, text, text, text, text, text, text, text, text,
                                    text, text, text, boolean, text, text, interval, interval, integer, bigint,
                                    boolean, text),
    pgrelay_notifier.alter_profile(text, text, integer, text, text, text, text, text, text, text, text, text, text,
                                   text, text, boolean, text, text, interval, interval, integer, bigint, boolean,
                                   text, text[]),
    pgrelay_notifier.drop_profile(text),
    pgrelay_notifier.create_channel(text, text, text, integer, interval, interval, interval, boolean, text,
                                    boolean, jsonb),
    pgrelay_notifier.alter_channel(text, text, text, integer, interval, interval, interval, boolean, text,
                                   boolean, jsonb),
    pgrelay_notifier.drop_channel(text),
    pgrelay_notifier.get_status(bigint),
    pgrelay_notifier.cancel(bigint),
    pgrelay_notifier.requeue(bigint, timestamptz),
    pgrelay_notifier.purge(interval),
    pgrelay_notifier.address_error(text),
    pgrelay_notifier.parse_mailbox(text)
TO pgrelay_admin;
GRANT SELECT ON pgrelay_notifier.profiles, pgrelay_notifier.channels, pgrelay_notifier.notifications,
                pgrelay_notifier.recipients, pgrelay_notifier.attachments, pgrelay_notifier.attempts,
                pgrelay_notifier.attempt_traces, pgrelay_notifier.recent_failures,
                pgrelay_notifier.profile_summary, pgrelay_notifier.profile_credentials
TO pgrelay_admin;
