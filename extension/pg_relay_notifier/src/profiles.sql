/* extension/pg_relay_notifier/src/profiles.sql: connection profiles: create, alter, drop */

-- pgrelay_notifier._secret_error()
CREATE OR REPLACE FUNCTION pgrelay_notifier._secret_error(secret text) RETURNS text
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
CREATE OR REPLACE FUNCTION pgrelay_notifier._https_url_error(url text) RETURNS text
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

-- pgrelay_notifier._validate_smtp()
CREATE OR REPLACE FUNCTION pgrelay_notifier._validate_smtp(p pgrelay_notifier.profiles,
                                                s pgrelay_notifier.profile_secrets)
RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (_validate_profile): the settings of an SMTP profile: host, security, port, the
 * credentials (a password, a static OAuth2 token, or an OAuth2 app whose tokens the Processor
 * gets itself: never two of them) and how they may travel, the HELO name.
 */
DECLARE
    reason text;
    app_settings integer := (p.tenant_id IS NOT NULL)::integer + (p.client_id IS NOT NULL)::integer
                            + (s.client_secret IS NOT NULL)::integer;
    kinds integer := (s.password IS NOT NULL)::integer + (s.oauth_token IS NOT NULL)::integer
                     + (app_settings > 0)::integer;
BEGIN
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
    IF app_settings BETWEEN 1 AND 2 THEN
        RAISE EXCEPTION 'profile "%": an OAuth2 app needs tenant_id, client_id and client_secret together', p.name
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'With them the Processor gets and refreshes the XOAUTH2 token itself (Microsoft 365).';
    END IF;
    IF kinds > 1 THEN
        RAISE EXCEPTION 'profile "%": give one kind of credentials: a password, an oauth_token, or an OAuth2 app (tenant_id, client_id, client_secret)', p.name
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'With a password the Processor authenticates with PLAIN or LOGIN, with the others with XOAUTH2.';
    END IF;
    IF kinds = 1 AND p.username IS NULL THEN
        RAISE EXCEPTION 'profile "%": % needs a username', p.name,
                        CASE WHEN s.password IS NOT NULL THEN 'password' WHEN s.oauth_token IS NOT NULL THEN 'oauth_token'
                             ELSE 'an OAuth2 app' END
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'The username is the account that authenticates; with an OAuth2 token, the mailbox it sends as.';
    END IF;
    IF p.security = 'none' AND kinds > 0 THEN
        RAISE EXCEPTION 'profile "%": credentials are never sent over an unencrypted connection (security none)', p.name
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use security starttls or tls.';
    END IF;
    IF app_settings = 0 AND (p.login_url IS NOT NULL OR p.scope IS NOT NULL) THEN
        RAISE EXCEPTION 'profile "%": % is a setting of the OAuth2 app, which needs tenant_id, client_id and client_secret',
                        p.name, CASE WHEN p.login_url IS NOT NULL THEN 'login_url' ELSE 'scope' END
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
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._validate_smtp(pgrelay_notifier.profiles, pgrelay_notifier.profile_secrets) IS
    'Internal: checks the settings of an SMTP profile';

-- pgrelay_notifier._validate_graph()
CREATE OR REPLACE FUNCTION pgrelay_notifier._validate_graph(p pgrelay_notifier.profiles,
                                                 s pgrelay_notifier.profile_secrets)
RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (_validate_profile): the settings of a Microsoft Graph profile: the app registration
 * (tenant, client, secret: required here), the sender mailbox, the Graph URL.
 */
DECLARE
    guid CONSTANT text := '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$';
    reason text;
BEGIN
    IF p.tenant_id IS NULL OR p.client_id IS NULL OR s.client_secret IS NULL OR p.sender IS NULL THEN
        RAISE EXCEPTION 'profile "%": a graph profile needs tenant_id, client_id, client_secret and sender', p.name
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF p.sender !~ guid AND pgrelay_notifier.address_error(p.sender) IS NOT NULL THEN
        RAISE EXCEPTION 'profile "%": sender "%" is neither a mailbox address nor a user id: %', p.name,
                        pgrelay_notifier._show(p.sender), pgrelay_notifier.address_error(p.sender)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    reason := pgrelay_notifier._https_url_error(p.graph_url);
    IF reason IS NOT NULL THEN
        RAISE EXCEPTION 'profile "%": graph_url "%" %', p.name, pgrelay_notifier._show(p.graph_url), reason
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._validate_graph(pgrelay_notifier.profiles, pgrelay_notifier.profile_secrets) IS
    'Internal: checks the settings of a Microsoft Graph profile';

-- pgrelay_notifier._validate_common()
CREATE OR REPLACE FUNCTION pgrelay_notifier._validate_common(p pgrelay_notifier.profiles,
                                                  s pgrelay_notifier.profile_secrets)
RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (_validate_profile): what both transports share: secret references, the OAuth2 app
 * (tenant, client, login URL, scope), the CA file, the From address and the addresses producers
 * may send as, timeouts, limits.
 */
DECLARE
    guid CONSTANT text := '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$';
    reason text;
    k text;
BEGIN
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

    IF p.tenant_id IS NOT NULL AND p.tenant_id !~ guid AND pgrelay_notifier._domain_error(p.tenant_id, true) IS NOT NULL THEN
        RAISE EXCEPTION 'profile "%": tenant_id "%" is neither a GUID nor a domain name', p.name,
                        pgrelay_notifier._show(p.tenant_id)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p.client_id IS NOT NULL AND p.client_id !~ guid THEN
        RAISE EXCEPTION 'profile "%": client_id "%" is not a GUID (the application id of the app registration)',
                        p.name, pgrelay_notifier._show(p.client_id)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    reason := pgrelay_notifier._https_url_error(p.login_url);
    IF reason IS NOT NULL THEN
        RAISE EXCEPTION 'profile "%": login_url "%" %', p.name, pgrelay_notifier._show(p.login_url), reason
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p.ca_file IS NOT NULL AND (p.ca_file !~ '^/' OR pgrelay_notifier._has_control(p.ca_file)
                                  OR length(p.ca_file) > 1024) THEN
        RAISE EXCEPTION 'profile "%": ca_file must be an absolute path on the Processor''s machine', p.name
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

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
    IF p.connect_timeout IS NULL OR NOT pgrelay_notifier._duration_ok(p.connect_timeout, '1 millisecond', '10 minutes') THEN
        RAISE EXCEPTION 'profile "%": connect_timeout must be between 1 millisecond and 10 minutes, not %',
                        p.name, COALESCE(p.connect_timeout::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p.timeout IS NULL OR NOT pgrelay_notifier._duration_ok(p.timeout, '1 millisecond', '24 hours') THEN
        RAISE EXCEPTION 'profile "%": timeout must be between 1 millisecond and 24 hours, not %',
                        p.name, COALESCE(p.timeout::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p.connect_timeout > p.timeout OR pgrelay_notifier._ms(p.connect_timeout) > pgrelay_notifier._ms(p.timeout) THEN
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
    IF cardinality(p.allowed_from) > 100 THEN
        RAISE EXCEPTION 'profile "%": allowed_from has % entries; at most 100', p.name, cardinality(p.allowed_from)
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'Allow a whole domain with one "@example.com" entry.';
    END IF;
    FOREACH k IN ARRAY COALESCE(p.allowed_from, '{}') LOOP
        reason := CASE WHEN k IS NULL THEN 'is NULL'
                       WHEN left(k, 1) = '@' THEN pgrelay_notifier._domain_error(substr(k, 2), true)
                       ELSE pgrelay_notifier.address_error(k) END;
        IF reason IS NOT NULL THEN
            RAISE EXCEPTION 'profile "%": allowed_from entry "%" is neither an address nor @domain: %', p.name,
                            pgrelay_notifier._show(k), reason
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END LOOP;
    -- RFC 6749: scope tokens of printable ASCII but " and \, separated by single spaces.
    IF p.scope IS NOT NULL AND (p.scope !~ '^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$'
                                OR length(p.scope) > 1024) THEN
        RAISE EXCEPTION 'profile "%": scope "%" is not an OAuth2 scope (tokens of printable ASCII separated by single spaces)',
                        p.name, pgrelay_notifier._show(p.scope)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._validate_common(pgrelay_notifier.profiles, pgrelay_notifier.profile_secrets) IS
    'Internal: checks the settings every profile has';

-- pgrelay_notifier._validate_profile()
CREATE OR REPLACE FUNCTION pgrelay_notifier._validate_profile(p pgrelay_notifier.profiles,
                                                   s pgrelay_notifier.profile_secrets)
RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: checks a complete profile row and its secrets, as create_profile() and
 * alter_profile() are about to store them. Every rule lives here, so both functions agree.
 * Returns: nothing; raises invalid_parameter_value with the reason.
 */
DECLARE
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

    -- Settings of the other transport are a mistake, not something to ignore. The OAuth2 app
    -- (tenant_id, client_id, client_secret, login_url, scope) and ca_file belong to both.
    IF p.transport = 'smtp' THEN
        k := CASE WHEN p.sender IS NOT NULL THEN 'sender'
                  WHEN p.graph_url IS NOT NULL THEN 'graph_url'
                  WHEN p.save_to_sent_items IS NOT NULL THEN 'save_to_sent_items' END;
    ELSE
        k := CASE WHEN p.host IS NOT NULL THEN 'host'
                  WHEN p.port IS NOT NULL THEN 'port'
                  WHEN p.security IS NOT NULL THEN 'security'
                  WHEN p.username IS NOT NULL THEN 'username'
                  WHEN s.password IS NOT NULL THEN 'password'
                  WHEN s.oauth_token IS NOT NULL THEN 'oauth_token'
                  WHEN p.helo_name IS NOT NULL THEN 'helo_name' END;
    END IF;
    IF k IS NOT NULL THEN
        RAISE EXCEPTION 'profile "%": % is not a setting of transport %', p.name, k, p.transport
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    IF p.transport = 'smtp' THEN
        PERFORM pgrelay_notifier._validate_smtp(p, s);
    ELSE
        PERFORM pgrelay_notifier._validate_graph(p, s);
    END IF;
    PERFORM pgrelay_notifier._validate_common(p, s);
END
$$;
COMMENT ON FUNCTION pgrelay_notifier._validate_profile(pgrelay_notifier.profiles, pgrelay_notifier.profile_secrets) IS
    'Checks a whole profile and its secrets before create_profile()/alter_profile() store them';

-- pgrelay_notifier._profile_defaults()
CREATE OR REPLACE FUNCTION pgrelay_notifier._profile_defaults(p pgrelay_notifier.profiles)
RETURNS pgrelay_notifier.profiles
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    -- The defaults that depend on the transport; the port stays NULL (= the security's default).
    IF p.transport = 'smtp' THEN
        p.security := COALESCE(p.security, 'starttls');
        -- the OAuth2 app's login_url stays NULL unless given: fetch() fills in the default
        p.login_url := rtrim(p.login_url, '/');
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
CREATE OR REPLACE FUNCTION pgrelay_notifier.create_profile(
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
    description text DEFAULT NULL,
    allowed_from text[] DEFAULT NULL,
    scope text DEFAULT NULL)
RETURNS pgrelay_notifier.profiles
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Function: creates a profile (use named arguments). Unset settings take their defaults: security
 * starttls, port by security (587, 465 for tls, 25 for none), the Microsoft login and Graph URLs,
 * save_to_sent_items true, timeouts 10 s / 60 s, max_message_bytes 25 MiB, no rate limit, debug
 * off. An SMTP profile authenticates with a password, a static oauth_token, or an OAuth2 app
 * (tenant_id, client_id, client_secret) whose tokens the Processor gets itself. Secrets go to
 * profile_secrets.
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
    p.allowed_from := create_profile.allowed_from;
    p.scope := create_profile.scope;
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
                                                    interval, interval, integer, bigint, boolean, text, text[],
                                                    text) IS
    'Creates an SMTP or Microsoft Graph profile (named arguments); returns it without its secrets';

-- pgrelay_notifier.alter_profile()
CREATE OR REPLACE FUNCTION pgrelay_notifier.alter_profile(
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
    reset text[] DEFAULT NULL,
    allowed_from text[] DEFAULT NULL,
    scope text DEFAULT NULL)
RETURNS pgrelay_notifier.profiles
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
-- The settings travel through jsonb; intervals must read back as they were written.
SET intervalstyle = postgres AS $$
/*
 * Function: changes a profile. An argument left NULL keeps the current value; reset lists settings
 * to put back to their default (or to unset: username, password, rate_limit_per_minute, ...).
 * The transport cannot change (drop and re-create the profile). Messages still queued are
 * delivered with the new settings.
 * Returns: the stored profile row.
 */
DECLARE
    secret_keys CONSTANT text[] := ARRAY['password', 'oauth_token', 'client_secret'];
    -- required settings (an SMTP profile's OAuth2 app may be removed), and what is not a setting at all
    no_default text[];
    not_settings CONSTANT text[] := ARRAY['name', 'transport', 'created_by', 'created_at', 'updated_at'];
    given jsonb := jsonb_strip_nulls(jsonb_build_object(
        'host', host, 'port', port, 'security', security, 'username', username, 'password', password,
        'oauth_token', oauth_token, 'ca_file', ca_file, 'helo_name', helo_name, 'tenant_id', tenant_id,
        'client_id', client_id, 'client_secret', client_secret, 'sender', sender, 'login_url', login_url,
        'graph_url', graph_url, 'save_to_sent_items', save_to_sent_items, 'from_address', from_address,
        'from_name', from_name, 'connect_timeout', connect_timeout, 'timeout', timeout,
        'rate_limit_per_minute', rate_limit_per_minute, 'max_message_bytes', max_message_bytes,
        'debug', debug, 'description', description, 'allowed_from', allowed_from, 'scope', scope));
    changes jsonb;
    p pgrelay_notifier.profiles;
    s pgrelay_notifier.profile_secrets;
    k text;
BEGIN
    SELECT * INTO p FROM pgrelay_notifier.profiles x WHERE x.name = alter_profile.name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'profile "%" does not exist', pgrelay_notifier._show(alter_profile.name)
            USING ERRCODE = 'undefined_object';
    END IF;
    SELECT * INTO s FROM pgrelay_notifier.profile_secrets x WHERE x.profile = p.name;
    s.profile := p.name;
    no_default := CASE p.transport WHEN 'smtp' THEN ARRAY['host']
                                   ELSE ARRAY['tenant_id', 'client_id', 'client_secret', 'sender'] END;

    changes := given;
    FOREACH k IN ARRAY COALESCE(alter_profile.reset, '{}') LOOP
        IF k IS NULL THEN
            RAISE EXCEPTION 'profile "%": reset must not hold NULL', p.name
                USING ERRCODE = 'null_value_not_allowed',
                      HINT = 'List the names of the settings to reset, such as ''{rate_limit_per_minute}''.';
        END IF;
        IF given ? k THEN
            RAISE EXCEPTION 'profile "%": % is both given and reset', p.name, k
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF k = ANY (no_default) OR k = ANY (not_settings) THEN
            RAISE EXCEPTION 'profile "%": % cannot be reset', p.name, k
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'It has no default: give a new value instead.';
        END IF;
        IF NOT (to_jsonb(p) ? k OR k = ANY (secret_keys)) THEN
            RAISE EXCEPTION 'profile "%": unknown setting "%" in reset', p.name, pgrelay_notifier._show(k)
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        changes := changes || jsonb_build_object(k, NULL);
    END LOOP;
    -- Unmatched keys keep the row's values: only what was given or reset changes.
    p := jsonb_populate_record(p, changes - secret_keys);
    s := jsonb_populate_record(s, changes - ARRAY(SELECT jsonb_object_keys(changes - secret_keys)));
    p.updated_at := now();

    p := pgrelay_notifier._profile_defaults(p);
    PERFORM pgrelay_notifier._validate_profile(p, s);
    UPDATE pgrelay_notifier.profiles x SET (host, port, security, username, ca_file, helo_name, tenant_id,
                                            client_id, sender, login_url, graph_url, save_to_sent_items,
                                            from_address, from_name, connect_timeout, timeout,
                                            rate_limit_per_minute, max_message_bytes, debug, description,
                                            updated_at, allowed_from, scope)
        = (p.host, p.port, p.security, p.username, p.ca_file, p.helo_name, p.tenant_id, p.client_id,
           p.sender, p.login_url, p.graph_url, p.save_to_sent_items, p.from_address, p.from_name,
           p.connect_timeout, p.timeout, p.rate_limit_per_minute, p.max_message_bytes, p.debug,
           p.description, p.updated_at, p.allowed_from, p.scope)
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
                                                   interval, integer, bigint, boolean, text, text[], text[],
                                                   text) IS
    'Changes a profile: NULL keeps a setting, reset => ''{setting,...}'' restores defaults; returns it without secrets';

-- pgrelay_notifier.drop_profile()
CREATE OR REPLACE FUNCTION pgrelay_notifier.drop_profile(name text) RETURNS void
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
