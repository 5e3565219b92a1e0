-- create_profile(), alter_profile(), drop_profile(): settings, defaults, validation, secrets
\set SHOW_CONTEXT never
SET intervalstyle = postgres;

-- an SMTP profile with the defaults: security starttls, port by security, timeouts, 25 MiB
SELECT name, transport, host, port, security, username, from_address, from_name, connect_timeout,
       timeout, rate_limit_per_minute, max_message_bytes, debug
FROM pgrelay_notifier.create_profile('p_smtp', host => 'smtp.example.com',
                                     username => 'relay@example.com', password => 'env:SMTP_PASSWORD',
                                     from_address => 'noreply@example.com', from_name => 'Example App');
-- the secret is not in the profile row but in profile_secrets, exactly as given
SELECT profile, password, oauth_token, client_secret FROM pgrelay_notifier.profile_secrets;
-- every setting of an SMTP profile, by name
SELECT name, transport, host, port, security, username, ca_file, helo_name, connect_timeout, timeout,
       rate_limit_per_minute, max_message_bytes, debug, description
FROM pgrelay_notifier.create_profile(name => 'p_full', transport => 'smtp', host => '192.0.2.25', port => 2525,
                                     security => 'tls', username => 'u', oauth_token => 'file:smtp_token',
                                     ca_file => '/etc/ssl/certs/relay-ca.pem', helo_name => 'relay.example.com',
                                     connect_timeout => '5 seconds', timeout => '2 minutes',
                                     rate_limit_per_minute => 120, max_message_bytes => 10485760,
                                     debug => true, description => 'all settings');
-- hosts: a name without a dot, IPv4, IPv6 in brackets; helo_name may be an address literal
SELECT host, security FROM pgrelay_notifier.create_profile('p_local', host => 'localhost', security => 'none');
SELECT host, helo_name FROM pgrelay_notifier.create_profile('p_v6', host => '[2001:db8::25]', helo_name => '[IPv6:2001:db8::1]');
-- a Microsoft Graph profile: default URLs and save_to_sent_items, no SMTP settings
SELECT name, transport, host, security, tenant_id, client_id, sender, login_url, graph_url, save_to_sent_items
FROM pgrelay_notifier.create_profile('p_graph', transport => 'graph',
                                     tenant_id => 'contoso.onmicrosoft.com',
                                     client_id => '0f8fad5b-d9cb-469f-a165-70867728950e',
                                     client_secret => 'file:graph_secret', sender => 'notifications@contoso.com');
-- national cloud URLs (a trailing slash is dropped), a tenant GUID and a user id as sender
SELECT login_url, graph_url, save_to_sent_items
FROM pgrelay_notifier.create_profile('p_graph_us', transport => 'graph',
                                     tenant_id => '7c3f1a8e-5b2d-4e6f-9a0b-1c2d3e4f5a6b',
                                     client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 'literal-Secret',
                                     sender => '3f2504e0-4f89-11d3-9a0c-0305e82c3301',
                                     login_url => 'https://login.microsoftonline.us/',
                                     graph_url => 'https://graph.microsoft.us', save_to_sent_items => false);
-- Microsoft 365 over SMTP: an OAuth2 app instead of a password; the Processor gets the XOAUTH2
-- token itself (login_url and scope left NULL: the defaults, filled in by fetch() and the Processor)
SELECT name, host, security, username, tenant_id, client_id, login_url, scope
FROM pgrelay_notifier.create_profile('p_m365_smtp', host => 'smtp.office365.com', username => 'relay@contoso.com',
                                     tenant_id => 'contoso.onmicrosoft.com', client_id => '0f8fad5b-d9cb-469f-a165-70867728950e',
                                     client_secret => 'env:M365_SECRET');
-- ... a national cloud's login URL (a trailing slash is dropped) and Exchange Online's scope there
SELECT login_url, scope
FROM pgrelay_notifier.create_profile('p_m365_us', host => 'smtp.office365.us', username => 'relay@contoso.us',
                                     tenant_id => '7c3f1a8e-5b2d-4e6f-9a0b-1c2d3e4f5a6b', client_id => '0f8fad5b-d9cb-469f-a165-70867728950e',
                                     client_secret => 'file:m365', login_url => 'https://login.microsoftonline.us/',
                                     scope => 'https://outlook.office365.us/.default');
-- a Graph profile may name a CA file (a private CA, a TLS-inspecting proxy) and a scope
SELECT ca_file, scope
FROM pgrelay_notifier.create_profile('p_graph_ca', transport => 'graph', tenant_id => 'contoso.com',
                                     client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 's', sender => 'a@contoso.com',
                                     ca_file => '/etc/pg_relay/proxy-ca.pem', scope => 'https://graph.microsoft.com/.default');
-- secrets: literal values and value: stay literal; references are shown as written
SELECT * FROM pgrelay_notifier.profile_credentials ORDER BY profile;

-- errors: names, duplicates, transports (error)
SELECT pgrelay_notifier.create_profile(NULL, host => 'smtp.example.com');
SELECT pgrelay_notifier.create_profile('bad name', host => 'smtp.example.com');
SELECT pgrelay_notifier.create_profile('.hidden', host => 'smtp.example.com');
SELECT pgrelay_notifier.create_profile('p_smtp', host => 'smtp.example.com');
SELECT pgrelay_notifier.create_profile('p_x', transport => 'sendmail', host => 'smtp.example.com');
SELECT pgrelay_notifier.create_profile('p_x');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', sender => 'a@contoso.com');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', graph_url => 'https://graph.microsoft.com');
SELECT pgrelay_notifier.create_profile('p_x', transport => 'graph', host => 'smtp.example.com');
SELECT pgrelay_notifier.create_profile('p_x', transport => 'graph', tenant_id => 'contoso.com');
-- errors: SMTP host, port, security, credentials, paths (error)
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp_example.com');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com.');
SELECT pgrelay_notifier.create_profile('p_x', host => '-smtp.example.com');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com:25');
SELECT pgrelay_notifier.create_profile('p_x', host => E'smtp.example.com\r\nRCPT TO:<x@example.com>');
SELECT pgrelay_notifier.create_profile('p_x', host => '2001:db8::25');
SELECT pgrelay_notifier.create_profile('p_x', host => '[2001:db8::zz]');
SELECT pgrelay_notifier.create_profile('p_x', host => '300.1.2.3');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', port => 0);
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', port => 65536);
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', security => 'ssl');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', password => 'pw');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', password => 'pw', oauth_token => 't');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', security => 'none', username => 'u', password => 'pw');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => E'u\nx');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', ca_file => 'certs/ca.pem');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', helo_name => 'relay host');
-- errors: SMTP credentials are one kind only; the app's three settings go together, need a
-- username (the mailbox) and TLS; login_url and scope belong to the app (error)
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', password => 'pw',
       tenant_id => 'contoso.com', client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 's');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', oauth_token => 't',
       tenant_id => 'contoso.com', client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 's');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', tenant_id => 'contoso.com',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', client_secret => 's');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', tenant_id => 'contoso.com',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 's');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', security => 'none', username => 'u',
       tenant_id => 'contoso.com', client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 's');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', password => 'pw',
       login_url => 'https://login.microsoftonline.us');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', password => 'pw',
       scope => 'https://outlook.office365.com/.default');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', tenant_id => 'not a tenant',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 's');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', tenant_id => 'contoso.com',
       client_id => 'my-app', client_secret => 's');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', tenant_id => 'contoso.com',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 's', login_url => 'http://login.microsoftonline.com');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', tenant_id => 'contoso.com',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 'env:', scope => 'https://outlook.office365.com/.default');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', tenant_id => 'contoso.com',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 's', scope => 'two  blanks');
-- errors: secret references (error)
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', password => '');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', password => 'env:');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', password => 'env:1PASSWORD');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', password => 'env:SMTP-PASSWORD');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', password => 'file:');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', password => 'file:../etc/shadow');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', password => 'file:sub/pw');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', password => 'file:.pw');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', username => 'u', oauth_token => 'value:');
-- errors: Graph settings (error)
SELECT pgrelay_notifier.create_profile('p_x', transport => 'graph', tenant_id => 'not a tenant',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 's', sender => 'a@contoso.com');
SELECT pgrelay_notifier.create_profile('p_x', transport => 'graph', tenant_id => 'contoso.com',
       client_id => 'my-app', client_secret => 's', sender => 'a@contoso.com');
SELECT pgrelay_notifier.create_profile('p_x', transport => 'graph', tenant_id => 'contoso.com',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 's', sender => 'contoso');
SELECT pgrelay_notifier.create_profile('p_x', transport => 'graph', tenant_id => 'contoso.com',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 's', sender => 'a@contoso.com',
       login_url => 'http://login.microsoftonline.com');
SELECT pgrelay_notifier.create_profile('p_x', transport => 'graph', tenant_id => 'contoso.com',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 's', sender => 'a@contoso.com',
       graph_url => 'https://graph.microsoft.com/v1.0?x=1');
SELECT pgrelay_notifier.create_profile('p_x', transport => 'graph', tenant_id => 'contoso.com',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 'env:', sender => 'a@contoso.com');
SELECT pgrelay_notifier.create_profile('p_x', transport => 'graph', tenant_id => 'contoso.com',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 's', sender => 'a@contoso.com',
       ca_file => 'ca.pem');
-- errors: settings of both transports (error)
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', from_address => 'App <app@example.com>');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', from_name => E'App\r\nBcc: x@example.com');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', connect_timeout => '0');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', timeout => '25 hours');
-- bounded in seconds too, as the Processor reads them: '1 year -359 days' compares as 1 day (error)
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', timeout => '1 year -359 days');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', connect_timeout => '1 year -360 days 5 minutes');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', connect_timeout => '2 minutes', timeout => '1 minute');
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', rate_limit_per_minute => 0);
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', max_message_bytes => 100);
SELECT pgrelay_notifier.create_profile('p_x', host => 'smtp.example.com', max_message_bytes => 1073741824);
-- a failed create leaves nothing behind
SELECT count(*) FROM pgrelay_notifier.profiles WHERE name = 'p_x';

-- alter_profile: NULL keeps a setting; a new security moves the default port
SELECT host, port, security, username, rate_limit_per_minute, debug
FROM pgrelay_notifier.alter_profile('p_smtp', security => 'tls', rate_limit_per_minute => 60, debug => true);
SELECT profile->'smtp'->>'port' AS port FROM (SELECT pgrelay_notifier._profile_doc('p_smtp') AS profile) d;
SELECT password FROM pgrelay_notifier.profile_secrets WHERE profile = 'p_smtp';
-- secrets change by name; reset puts settings back to their defaults
SELECT security, rate_limit_per_minute, debug
FROM pgrelay_notifier.alter_profile('p_smtp', password => 'file:smtp_password',
                                    reset => '{security,rate_limit_per_minute,debug}');
SELECT password FROM pgrelay_notifier.profile_secrets WHERE profile = 'p_smtp';
SELECT username, connect_timeout, timeout, max_message_bytes
FROM pgrelay_notifier.alter_profile('p_full', reset => '{oauth_token,username,connect_timeout,timeout,max_message_bytes}');
SELECT oauth_token FROM pgrelay_notifier.profile_secrets WHERE profile = 'p_full';
SELECT login_url, save_to_sent_items FROM pgrelay_notifier.alter_profile('p_graph_us', reset => '{login_url,save_to_sent_items}');
SELECT sender FROM pgrelay_notifier.alter_profile('p_graph', sender => 'alerts@contoso.com', client_secret => 'env:GRAPH_SECRET');
SELECT client_secret FROM pgrelay_notifier.profile_secrets WHERE profile = 'p_graph';
-- an SMTP profile moves from its password to an OAuth2 app, and back: the app can be reset
SELECT username, tenant_id, client_id, login_url
FROM pgrelay_notifier.alter_profile('p_smtp', tenant_id => 'contoso.com', client_id => '0f8fad5b-d9cb-469f-a165-70867728950e',
                                    client_secret => 'env:APP_SECRET', reset => '{password}');
SELECT password, client_secret FROM pgrelay_notifier.profile_secrets WHERE profile = 'p_smtp';
SELECT profile->'smtp'->>'login_url' AS login_url, profile->'smtp'->>'scope' AS scope
FROM (SELECT pgrelay_notifier._profile_doc('p_smtp') AS profile) d;
SELECT tenant_id, client_id
FROM pgrelay_notifier.alter_profile('p_smtp', password => 'file:smtp_password',
                                    reset => '{tenant_id,client_id,client_secret}');
SELECT password, client_secret FROM pgrelay_notifier.profile_secrets WHERE profile = 'p_smtp';
-- a password next to the app, or half an app left behind (error)
SELECT pgrelay_notifier.alter_profile('p_m365_smtp', password => 'pw');
SELECT pgrelay_notifier.alter_profile('p_m365_smtp', reset => '{client_secret}');
-- alter errors: unknown profile, other transport, reset of required settings, both given and reset (error)
SELECT pgrelay_notifier.alter_profile('p_none', debug => true);
SELECT pgrelay_notifier.alter_profile('p_graph', host => 'smtp.example.com');
SELECT pgrelay_notifier.alter_profile('p_smtp', sender => 'a@example.com');
SELECT pgrelay_notifier.alter_profile('p_smtp', reset => '{host}');
SELECT pgrelay_notifier.alter_profile('p_graph', reset => '{client_secret}');
SELECT pgrelay_notifier.alter_profile('p_smtp', reset => '{transport}');
SELECT pgrelay_notifier.alter_profile('p_smtp', reset => '{colour}');
SELECT pgrelay_notifier.alter_profile('p_smtp', reset => '{port,NULL}');
SELECT pgrelay_notifier.alter_profile('p_smtp', debug => true, reset => '{debug}');
SELECT pgrelay_notifier.alter_profile('p_smtp', reset => '{username}');
SELECT pgrelay_notifier.alter_profile('p_local', username => 'u', password => 'pw');
SELECT pgrelay_notifier.alter_profile('p_smtp', port => -1);
-- a failed alter changes nothing
SELECT host, port, security, username FROM pgrelay_notifier.profiles WHERE name = 'p_smtp';

-- drop_profile: the secrets go too
SELECT pgrelay_notifier.drop_profile('p_full');
SELECT count(*) FROM pgrelay_notifier.profile_secrets WHERE profile = 'p_full';
-- an unknown profile (error)
SELECT pgrelay_notifier.drop_profile('p_full');
-- a profile used by a channel (error)
SELECT channel FROM pgrelay_notifier.create_channel('pr_mail', 'p_smtp');
SELECT pgrelay_notifier.drop_profile('p_smtp');
SELECT pgrelay_notifier.drop_channel('pr_mail');

SELECT pgrelay_notifier.drop_profile(name) FROM pgrelay_notifier.profiles ORDER BY name;
SELECT count(*) FROM pgrelay_notifier.profile_secrets;
