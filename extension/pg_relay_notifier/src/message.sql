/* extension/pg_relay_notifier/src/message.sql: message parts: header fields and attachments */

-- pgrelay_notifier._headers()
CREATE OR REPLACE FUNCTION pgrelay_notifier._headers(headers jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
/*
 * Function: normalises send()'s headers (a JSON object, or an array of [name, value] pairs to
 * keep the order) and validates them: RFC 5322 field names (printable ASCII but colon, at most 76
 * characters), none that the Processor writes itself and none that say who sent the message or
 * what servers did with it (Sender, Return-Path, Resent-*, Received, DKIM and ARC fields ...),
 * string values without control or invisible formatting characters (no header injection), at
 * most 998 octets a value, at most 100 fields.
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
        -- Fields that name who sent the message or what servers did with it: a producer setting
        -- them could impersonate another sender or forge a trace. Sender and Return-Path come
        -- from the profile and the envelope; the others are added by mail servers.
        IF lower(hname) IN ('sender', 'return-path', 'received', 'received-spf', 'delivered-to', 'envelope-to',
                            'dkim-signature', 'domainkey-signature', 'authentication-results')
           OR lower(hname) LIKE 'resent-%' OR lower(hname) LIKE 'arc-%' THEN
            RAISE EXCEPTION 'header field "%" is set by the sending side and mail servers, never by a producer', hname
                USING ERRCODE = 'insufficient_privilege',
                      HINT = 'The sender comes from the profile (from_address, allowed_from).';
        END IF;
        IF jsonb_typeof(e -> 1) <> 'string' THEN
            RAISE EXCEPTION 'header "%": the value must be a JSON string, not %', hname, jsonb_typeof(e -> 1)
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        hvalue := e ->> 1;
        IF pgrelay_notifier._has_control(hvalue) THEN
            RAISE EXCEPTION 'header "%": the value contains a control or invisible formatting character', hname
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'CR, LF, other control characters and invisible formatting characters (such as bidirectional overrides) are not allowed in header fields.';
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
CREATE OR REPLACE FUNCTION pgrelay_notifier._attachments(attachments jsonb)
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
            RAISE EXCEPTION '%: the file name contains a control or invisible formatting character', what
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
