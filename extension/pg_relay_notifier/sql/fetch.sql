-- fetch(): the document of docs/interface.md
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
SELECT name FROM pgrelay_notifier.create_profile('f_smtp', host => 'smtp.example.com', username => 'relay@example.com',
       password => 'env:SMTP_PASSWORD', from_address => 'noreply@example.com', from_name => 'Example App',
       ca_file => '/etc/pg_relay/ca.pem', rate_limit_per_minute => 30, connect_timeout => '2.5 seconds');
SELECT name FROM pgrelay_notifier.create_profile('f_graph', transport => 'graph', tenant_id => 'contoso.com',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 'file:graph_secret',
       sender => 'notifications@contoso.com', save_to_sent_items => false, debug => true);
SELECT name FROM pgrelay_notifier.create_profile('f_tls', host => 'smtp.example.com', security => 'tls',
       username => 'u', oauth_token => 'value:env:not-a-reference', from_address => 'a@example.com');
SELECT name FROM pgrelay_notifier.create_profile('f_none', host => 'localhost', security => 'none', from_address => 'a@example.com');
SELECT channel FROM pgrelay_notifier.create_channel('f_mail', 'f_smtp');
SELECT channel FROM pgrelay_notifier.create_channel('f_graph', 'f_graph');
SELECT channel FROM pgrelay_notifier.create_channel('f_tls', 'f_tls');
SELECT channel FROM pgrelay_notifier.create_channel('f_none', 'f_none');

SELECT pgrelay_notifier.send('f_mail',
       "to" => ARRAY['Ann Example <ann@example.org>'], cc => ARRAY['bob@example.org'], bcc => ARRAY['audit@example.com'],
       subject => 'Welcome, Ann', body_text => 'Hello Ann ...', body_html => '<p>Hello Ann ...</p>',
       reply_to => ARRAY['Support <support@example.com>'],
       headers => '[["X-Campaign", "welcome"], ["List-Unsubscribe", "<mailto:unsub@example.com>"]]',
       attachments => '[{"filename": "terms.pdf", "content_type": "application/pdf", "content_base64": "JVBERi0xLjQK"},
                        {"filename": "logo.png", "content_type": "image/png", "content_base64": "iVBORw0KGgo=",
                         "content_id": "logo@example.com"}]') AS n \gset
SELECT pgrelay_notifier.fetch(:'n', regress_event(:'n')) AS doc \gset
-- the top-level keys and their JSON types
SELECT key, jsonb_typeof(value) AS type FROM jsonb_each(:'doc') ORDER BY key;
-- the id is the notification id; the Message-ID is the one made by send()
SELECT (:'doc'::jsonb ->> 'notification_id')::bigint = :n AS id_ok,
       :'doc'::jsonb ->> 'message_id' = (SELECT message_id FROM pgrelay_notifier.notifications WHERE notification_id = :n)
           AS message_id_ok;
-- the whole document (without the two values that vary by run): recipients in order with their kind,
-- headers as pairs, attachments in base64 with their decoded size, the profile with its secret as a reference
SELECT jsonb_pretty(:'doc'::jsonb - 'notification_id' - 'message_id');
-- the attachments decode to what was sent
SELECT a ->> 'filename' AS filename, decode(a ->> 'content_base64', 'base64') = att.content AS same_bytes
FROM jsonb_array_elements(:'doc'::jsonb -> 'attachments') WITH ORDINALITY x(a, i)
JOIN pgrelay_notifier.attachments att ON att.notification_id = :n AND att.position = x.i;

-- a Graph profile: smtp is null, graph holds the settings and the secret reference
SELECT pgrelay_notifier.send('f_graph', ARRAY['ann@example.org'], 's', 'b') AS g \gset
SELECT jsonb_pretty(pgrelay_notifier.fetch(:'g', regress_event(:'g')) -> 'profile');
SELECT pgrelay_notifier.fetch(:'g', regress_event(:'g')) -> 'from' AS "from";
-- a Graph profile's CA file and scope, as changed after the message was sent: fetch() reads the profile now
SELECT name FROM pgrelay_notifier.alter_profile('f_graph', ca_file => '/etc/pg_relay/proxy-ca.pem',
                                                scope => 'https://graph.microsoft.com/.default');
SELECT g ->> 'ca_file' AS ca_file, g ->> 'scope' AS scope
FROM (SELECT pgrelay_notifier.fetch(:'g', regress_event(:'g')) -> 'profile' -> 'graph' AS g) d;
-- an SMTP profile with an OAuth2 app: the app's settings, the default login URL, the secret as a reference
SELECT name FROM pgrelay_notifier.create_profile('f_m365', host => 'smtp.office365.com', username => 'relay@contoso.com',
       tenant_id => 'contoso.com', client_id => '0f8fad5b-d9cb-469f-a165-70867728950e',
       client_secret => 'env:M365_SECRET', from_address => 'relay@contoso.com');
SELECT channel FROM pgrelay_notifier.create_channel('f_m365', 'f_m365');
SELECT pgrelay_notifier.send('f_m365', ARRAY['ann@example.org'], 's', 'b') AS o \gset
SELECT jsonb_pretty(pgrelay_notifier.fetch(:'o', regress_event(:'o')) -> 'profile' -> 'smtp');
-- the port follows the security mode when not set; a value: secret is passed as written
SELECT pgrelay_notifier.send('f_tls', ARRAY['ann@example.org'], 's', 'b') AS t \gset
SELECT pgrelay_notifier.send('f_none', ARRAY['ann@example.org'], 's', 'b') AS x \gset
SELECT s ->> 'security' AS security, s -> 'port' AS port, s -> 'oauth_token' AS oauth_token
FROM (VALUES (pgrelay_notifier.fetch(:'t', regress_event(:'t')) -> 'profile' -> 'smtp'), (pgrelay_notifier.fetch(:'x', regress_event(:'x')) -> 'profile' -> 'smtp')) v(s);
-- optional parts are null or empty arrays
SELECT d -> 'body_html' AS body_html, d -> 'reply_to' AS reply_to, d -> 'headers' AS headers,
       d -> 'attachments' AS attachments, d -> 'from' AS "from"
FROM pgrelay_notifier.fetch(:'t', regress_event(:'t')) d;

-- fetch writes nothing: the status stays queued, no attempt is counted
SELECT status, attempts, updated_at = created_at AS untouched FROM pgrelay_notifier.notifications WHERE notification_id = :n;
-- a cancelled notification is returned with status cancelled, for the Processor to skip
SELECT pgrelay_notifier.cancel(:x);
SELECT pgrelay_notifier.fetch(:'x', regress_event(:'x')) ->> 'status' AS status;

-- NULL for an unknown id or a malformed payload
SELECT pk, pgrelay_notifier.fetch(pk, 1) IS NULL AS is_null
FROM (VALUES (NULL), (''), ('abc'), ('-1'), ('1.0'), (' 1'), ('1 '), ('0'), ('12345'), ('0x10'),
             ('9223372036854775807'), ('9223372036854775808'), ('99999999999999999999')) t(pk);

-- Only the event send() queued delivers a notification: an event queued for it with
-- pgrelay.notify() by anybody else gets NULL (it cannot release a message held for later, or on
-- an inactive channel); requeue() moves delivery to its new event, and the old one gets NULL.
SELECT pgrelay_notifier.send('f_mail', ARRAY['ann@example.org'], 'later', 'b',
                             run_at => now() + interval '1 day') AS h \gset
SELECT pgrelay.notify('f_mail', :'h') AS forged \gset
SELECT pgrelay_notifier.fetch(:'h', :forged) IS NULL AS forged_gets_nothing,
       pgrelay_notifier.fetch(:'h', NULL) IS NULL AS no_event_gets_nothing,
       pgrelay_notifier.fetch(:'h', regress_event(:'h')) ->> 'subject' AS own_event_gets_it;
SELECT regress_event(:'h') AS first_event \gset
UPDATE pgrelay_notifier.notifications SET status = 'failed' WHERE notification_id = :h;
SELECT pgrelay_notifier.requeue(:h);
SELECT regress_event(:'h') <> :first_event AS new_event,
       pgrelay_notifier.fetch(:'h', :first_event) IS NULL AS old_event_gets_nothing,
       pgrelay_notifier.fetch(:'h', regress_event(:'h')) ->> 'status' AS new_event_gets_it;

DELETE FROM pgrelay.queue;
DELETE FROM pgrelay_notifier.notifications;
SELECT pgrelay_notifier.drop_channel(channel) FROM pgrelay_notifier.channels ORDER BY channel;
SELECT pgrelay_notifier.drop_profile(name) FROM pgrelay_notifier.profiles ORDER BY name;
