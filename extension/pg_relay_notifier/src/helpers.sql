/* extension/pg_relay_notifier/src/helpers.sql: small pure helpers */

-- pgrelay_notifier._has_control()
CREATE OR REPLACE FUNCTION pgrelay_notifier._has_control(s text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$
    -- C0 controls (CR, LF, TAB, ...), DEL, C1 controls (NEL, ...), the Unicode line and paragraph
    -- separators, and the invisible formatting characters that change how text reads without
    -- showing: bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069: an
    -- "invoice<RLO>fdp.exe" reads as "invoiceexe.pdf"), directional marks, zero-width space, word
    -- joiners, the byte order mark, interlinear annotations and tag characters. None of them may
    -- reach a header field, a display name or a file name. The zero-width joiner and non-joiner
    -- (U+200C, U+200D) stay allowed: Persian and Indic text and emoji sequences need them.
    SELECT s ~ '[\x01-\x1f\x7f-\x9f\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]'
$$;
COMMENT ON FUNCTION pgrelay_notifier._has_control(text) IS
    'Does the text contain a control character (C0, DEL, C1), a line/paragraph separator or an invisible formatting character (bidi override, zero-width space, ...)?';

-- pgrelay_notifier._show()
CREATE OR REPLACE FUNCTION pgrelay_notifier._show(s text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    -- Error messages quote user input; control characters become ? so a message stays one line.
    SELECT CASE WHEN s IS NULL THEN 'NULL'
                WHEN pg_catalog.length(s) > 100
                THEN pg_catalog.left(pg_catalog.regexp_replace(s, '[\x01-\x1f\x7f-\x9f\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]', '?', 'g'), 97) || '...'
                ELSE pg_catalog.regexp_replace(s, '[\x01-\x1f\x7f-\x9f\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]', '?', 'g')
           END
$$;
COMMENT ON FUNCTION pgrelay_notifier._show(text) IS
    'User input made safe for an error message: control and invisible formatting characters as ?, at most 100 characters';

-- pgrelay_notifier._duration_ok()
CREATE OR REPLACE FUNCTION pgrelay_notifier._duration_ok(d interval, lo interval, hi interval) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    -- Is d a duration from lo to hi both as intervals compare (a month is 30 days, a year 360)
    -- and in seconds, which the Processor reads (_ms: a year is 365.25 days)? An interval of parts
    -- of opposite signs weighs differently by each: '1 year -359 days' is 1 day compared and 6.25
    -- days in seconds. pg_relay's _duration_ok() is the same. Inlined: operators qualified.
    SELECT d OPERATOR(pg_catalog.>=) lo AND d OPERATOR(pg_catalog.<=) hi
       AND pg_catalog.extract('epoch', d) OPERATOR(pg_catalog.>=) pg_catalog.extract('epoch', lo)
       AND pg_catalog.extract('epoch', d) OPERATOR(pg_catalog.<=) pg_catalog.extract('epoch', hi)
$$;
COMMENT ON FUNCTION pgrelay_notifier._duration_ok(interval, interval, interval) IS
    'Is the interval from lo to hi both as intervals compare and in seconds?';

-- pgrelay_notifier._ms()
CREATE OR REPLACE FUNCTION pgrelay_notifier._ms(i interval) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT pg_catalog.round(pg_catalog.date_part('epoch', i) * 1000)::bigint
$$;
COMMENT ON FUNCTION pgrelay_notifier._ms(interval) IS 'An interval in whole milliseconds';

-- pgrelay_notifier._is_ipv6()
CREATE OR REPLACE FUNCTION pgrelay_notifier._is_ipv6(s text) RETURNS boolean
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
CREATE OR REPLACE FUNCTION pgrelay_notifier._is_ipv4(s text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT s ~ '^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$'
$$;
COMMENT ON FUNCTION pgrelay_notifier._is_ipv4(text) IS 'Is the text a dotted-quad IPv4 address (no leading zeros)?';

-- pgrelay_notifier._domain_error()
CREATE OR REPLACE FUNCTION pgrelay_notifier._domain_error(d text, fqdn boolean) RETURNS text
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
CREATE OR REPLACE FUNCTION pgrelay_notifier._literal_error(d text) RETURNS text
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
