/* extension/pg_relay_notifier/src/addresses.sql: mailbox and address validation */

-- pgrelay_notifier.address_error()
CREATE OR REPLACE FUNCTION pgrelay_notifier.address_error(address text) RETURNS text
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
        RETURN 'the address contains a control or invisible formatting character';
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
CREATE OR REPLACE FUNCTION pgrelay_notifier._parse_mailbox(mailbox text, OUT address text, OUT name text,
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
        error := 'the address contains a control or invisible formatting character';
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
CREATE OR REPLACE FUNCTION pgrelay_notifier.parse_mailbox(mailbox text, OUT address text, OUT name text)
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
CREATE OR REPLACE FUNCTION pgrelay_notifier._mailboxes(list text[], what text)
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
