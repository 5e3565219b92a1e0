-- send(): validation at call time, storage, Message-ID, queueing in the caller's transaction
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
SELECT name, allowed_from FROM pgrelay_notifier.create_profile('s_main', host => 'smtp.example.com',
       from_address => 'NoReply@Mail.Example.COM', from_name => 'Example App',
       allowed_from => ARRAY['@example.net', 'news@example.com']);
SELECT name FROM pgrelay_notifier.create_profile('s_nofrom', host => 'smtp.example.com');
SELECT name FROM pgrelay_notifier.create_profile('s_graph', transport => 'graph', tenant_id => 'contoso.com',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 'env:GRAPH_SECRET',
       sender => 'notifications@contoso.com');
SELECT channel FROM pgrelay_notifier.create_channel('s_mail', 's_main');
SELECT channel FROM pgrelay_notifier.create_channel('s_nofrom', 's_nofrom');
SELECT channel FROM pgrelay_notifier.create_channel('s_graph', 's_graph');
CREATE FUNCTION regress_sink(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;
GRANT EXECUTE ON FUNCTION regress_sink(text) TO pgrelay_processor;
SELECT channel FROM pgrelay.register('s_sqljobs', 'sql', handler => 'regress_sink(text)');

-- the smallest message: positional arguments, the profile's From
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 'Hello', 'Hello Ann') AS n1 \gset
SELECT notification_id = :n1 AS same_id, channel, profile, status, from_address, from_name, subject, body_text,
       body_html, headers, reply_to, size_bytes, attempts, created_by = session_user AS by_me
FROM pgrelay_notifier.notifications;
-- the Message-ID is <id.random@domain of From>, made once
SELECT message_id ~ ('^<' || :n1 || '\.[0-9a-f]{12}@mail\.example\.com>$') AS message_id_ok
FROM pgrelay_notifier.notifications WHERE notification_id = :n1;
-- the payload of the queued event is the notification id
SELECT channel, action_type, payload = :'n1' AS payload_is_id, run_at <= now() AS due FROM pgrelay.queue;

-- every parameter, by name; run_at reaches the queue
SELECT pgrelay_notifier.send(channel => 's_mail',
       "to" => ARRAY['Ann Example <ann@example.org>', '"Doe, John" <john@example.org>'],
       subject => 'Grüße, Ann', body_text => 'Hello', body_html => '<p>Hello</p>',
       cc => ARRAY['Bob <bob@example.org>'], bcc => ARRAY['audit@example.com'],
       reply_to => ARRAY['Support <support@example.com>', 'help@example.com'],
       from_address => 'Billing <billing@example.net>', from_name => 'Billing Team',
       headers => '[["X-Campaign", "welcome"], ["List-Unsubscribe", "<mailto:unsub@example.com>"], ["X-Campaign", "second"]]',
       run_at => now() + interval '1 hour') AS n2 \gset
SELECT from_address, from_name, reply_to, subject, headers, size_bytes,
       message_id LIKE '%@example.net>' AS id_domain_from_from
FROM pgrelay_notifier.notifications WHERE notification_id = :n2;
SELECT recipient_id, kind, address, name, status FROM pgrelay_notifier.recipients
WHERE notification_id = :n2 ORDER BY recipient_id;
SELECT run_at > now() + interval '59 minutes' AS in_an_hour FROM pgrelay.queue WHERE payload = :'n2';

-- an address given twice (in any list, any case of the domain) is kept once, first occurrence first
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org', 'Ann <ann@EXAMPLE.org>'], 'Dup', 'x',
                             cc => ARRAY['bob@example.org', 'ann@example.org'],
                             bcc => ARRAY['bob@example.org', 'eve@example.org']) AS n3 \gset
SELECT recipient_id, kind, address FROM pgrelay_notifier.recipients WHERE notification_id = :n3 ORDER BY 1;
-- bcc only; headers as an object; html only; no subject
SELECT pgrelay_notifier.send('s_mail', bcc => ARRAY['audit@example.com'], body_html => '<p>x</p>',
                             headers => '{"X-Priority": "1", "Auto-Submitted": "auto-generated"}') AS n4 \gset
SELECT subject, body_text, body_html, headers FROM pgrelay_notifier.notifications WHERE notification_id = :n4;
-- from_name alone keeps the profile's address; a Graph profile sends as its sender by default
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', from_name => 'Night Shift') AS n5 \gset
SELECT from_address, from_name FROM pgrelay_notifier.notifications WHERE notification_id = :n5;
SELECT pgrelay_notifier.send('s_graph', ARRAY['ann@example.org'], 's', 'b') AS n6 \gset
SELECT from_address, from_name, message_id LIKE '%@contoso.com>' AS id_domain FROM pgrelay_notifier.notifications
WHERE notification_id = :n6;
-- a Graph profile takes custom header fields (X-..., any case)
SELECT pgrelay_notifier.send('s_graph', ARRAY['ann@example.org'], 's', 'b',
                             headers => '[["X-Campaign", "w"], ["x-trace", "1"]]') AS n7 \gset
SELECT headers FROM pgrelay_notifier.notifications WHERE notification_id = :n7;
-- ... and no other: Microsoft Graph would refuse them, so send() does (error)
SELECT pgrelay_notifier.send('s_graph', ARRAY['ann@example.org'], 's', 'b',
                             headers => '[["X-Campaign", "w"], ["List-Unsubscribe", "<mailto:u@contoso.com>"]]');
SELECT pgrelay_notifier.send('s_graph', ARRAY['ann@example.org'], 's', 'b', headers => '{"X-": "v"}');

-- rollback discards the notification and its queued event together
SELECT count(*) AS notifications FROM pgrelay_notifier.notifications \gset
SELECT count(*) AS events FROM pgrelay.queue \gset
BEGIN;
SELECT pgrelay_notifier.send('s_mail', ARRAY['gone@example.org'], 'Gone', 'x') AS gone \gset
SELECT count(*) FROM pgrelay.queue WHERE payload = :'gone';
ROLLBACK;
SELECT count(*) - :notifications AS new_notifications FROM pgrelay_notifier.notifications;
SELECT count(*) - :events AS new_events FROM pgrelay.queue;
SELECT count(*) FROM pgrelay_notifier.recipients WHERE address = 'gone@example.org';
-- so does the rollback of a savepoint, while the rest of the transaction commits
BEGIN;
SAVEPOINT s;
SELECT pgrelay_notifier.send('s_mail', ARRAY['gone@example.org'], 'Gone', 'x') > 0 AS sent;
ROLLBACK TO SAVEPOINT s;
SELECT pgrelay_notifier.send('s_mail', ARRAY['kept@example.org'], 'Kept', 'x') AS kept \gset
COMMIT;
SELECT r.address, q.payload = :'kept' AS queued
FROM pgrelay_notifier.recipients r LEFT JOIN pgrelay.queue q ON q.payload = r.notification_id::text
WHERE r.address IN ('gone@example.org', 'kept@example.org');
SELECT count(*) AS notifications FROM pgrelay_notifier.notifications \gset
SELECT count(*) AS events FROM pgrelay.queue \gset

-- the channel: NULL, unknown, not a notifier channel, inactive, unregistered behind our back (error)
SELECT pgrelay_notifier.send(NULL, ARRAY['ann@example.org'], 's', 'b');
SELECT pgrelay_notifier.send('s_none', ARRAY['ann@example.org'], 's', 'b');
SELECT pgrelay_notifier.send('s_sqljobs', ARRAY['ann@example.org'], 's', 'b');
SELECT channel FROM pgrelay_notifier.alter_channel('s_nofrom', active => false);
SELECT pgrelay_notifier.send('s_nofrom', ARRAY['ann@example.org'], 's', 'b', from_address => 'a@example.com');
SELECT pgrelay.unregister('s_nofrom');
SELECT pgrelay_notifier.send('s_nofrom', ARRAY['ann@example.org'], 's', 'b', from_address => 'a@example.com');
SELECT channel FROM pgrelay_notifier.alter_channel('s_nofrom', active => true);
-- recipients: none, NULL elements, invalid addresses in every list, too many (error)
SELECT pgrelay_notifier.send('s_mail', NULL, 's', 'b');
SELECT pgrelay_notifier.send('s_mail', '{}', 's', 'b', cc => '{}', bcc => '{}');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org', NULL], 's', 'b');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example'], 's', 'b');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', cc => ARRAY['bob@@example.org']);
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', bcc => ARRAY['jöran@example.org']);
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', reply_to => ARRAY['support']);
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', from_address => 'noreply');
SELECT pgrelay_notifier.send('s_mail', ARRAY(SELECT 'user' || i || '@example.org' FROM generate_series(1, 501) i), 's', 'b');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b',
                             reply_to => ARRAY(SELECT 'r' || i || '@example.org' FROM generate_series(1, 21) i));
-- From: none at all, or a display name with control characters (error)
SELECT pgrelay_notifier.send('s_nofrom', ARRAY['ann@example.org'], 's', 'b');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', from_name => E'App\r\nBcc: victim@example.org');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', from_name => repeat('n', 257));
-- subject and bodies (error)
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], E'Hi\r\nBcc: victim@example.org', 'b');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], E'Hi\nthere', 'b');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], E'Hi\u0085there', 'b');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], repeat('s', 999), 'b');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's');
-- headers: shapes, names, values; every injection attempt is refused (error)
SELECT CASE WHEN length(h) > 60 THEN left(h, 40) || '...' ELSE h END AS headers, regress_error(format('SELECT pgrelay_notifier.send(%L, ARRAY[%L], %L, %L, headers => %L)',
                                          's_mail', 'ann@example.org', 's', 'b', h)) AS error
FROM (VALUES ('"X-A: b"'),
             ('[["X-A"]]'),
             ('[["X-A", "b", "c"]]'),
             ('[{"name": "X-A", "value": "b"}]'),
             ('{"X-A": 1}'),
             ('{"X-A": null}'),
             ('{"": "b"}'),
             ('{"X A": "b"}'),
             ('{"X-A:": "b"}'),
             ('{"X-Ä": "b"}'),
             ('{"X-A\r\nBcc: victim@example.org\r\nX-B": "b"}'),
             ('{"X-A": "b\r\nBcc: victim@example.org"}'),
             ('{"X-A": "b\nBcc: victim@example.org"}'),
             ('{"X-A": "b\rBcc: victim@example.org"}'),
             ('{"X-A": "b\u0000"}'),
             ('{"X-A": "b\u2028Bcc: victim@example.org"}'),
             ('{"X-A": "tab\there"}'),
             ('{"Bcc": "victim@example.org"}'),
             ('{"bcc": "victim@example.org"}'),
             ('{"From": "ceo@example.com"}'),
             ('{"To": "x@example.org"}'),
             ('{"CC": "x@example.org"}'),
             ('{"Subject": "other"}'),
             ('{"Date": "Mon, 1 Jan 2030 00:00:00 +0000"}'),
             ('{"Message-Id": "<x@example.org>"}'),
             ('{"MIME-Version": "1.0"}'),
             ('{"Content-Type": "text/html"}'),
             ('{"content-transfer-encoding": "8bit"}'),
             ('{"Reply-To": "x@example.org"}'),
             ('{"Sender": "ceo@example.com"}'),
             ('{"Return-Path": "<bounce@evil.example>"}'),
             ('{"Resent-From": "ceo@example.com"}'),
             ('{"Received": "from evil.example"}'),
             ('{"DKIM-Signature": "v=1; d=example.com"}'),
             ('{"ARC-Seal": "i=1"}'),
             ('{"Authentication-Results": "mx.example.com; dkim=pass"}'),
             ('{"X-Long-Name-' || repeat('n', 70) || '": "b"}'),
             ('{"X-A": "' || repeat('v', 999) || '"}')) t(h);
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b',
       headers => (SELECT jsonb_object_agg('X-H' || i, 'v') FROM generate_series(1, 101) i));
-- From: the profile's address, an address or domain in its allowed_from; anything else (error)
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', from_address => 'news@example.com') > 0 AS listed_address;
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', from_address => 'Any <any@example.net>') > 0 AS listed_domain;
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', from_address => 'noreply@mail.example.com') > 0 AS own_address;
SELECT :notifications + 3 AS notifications \gset
SELECT :events + 3 AS events \gset
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', from_address => 'ceo@example.com');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', from_address => 'x@sub.example.net');
-- invisible characters that make text read otherwise than it is (error): a right-to-left override
-- in a subject, a display name, a file name; a zero-width space; a tag character
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 'Invoice ' || U&'\202E' || 'fdp.exe', 'b');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 'Pay' || U&'\200B' || 'Pal', 'b');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 'x' || U&'\+0E0041', 'b');
SELECT pgrelay_notifier.send('s_mail', ARRAY['Bank' || U&'\2066' || ' <ann@example.org>'], 's', 'b');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', from_name => 'CEO' || U&'\202D');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', attachments =>
       jsonb_build_array(jsonb_build_object('filename', 'invoice' || U&'\202E' || 'fdp.exe', 'content_text', 'x')));
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', headers =>
       jsonb_build_object('X-Note', 'a' || U&'\2067' || 'b'));
-- the joiners Persian, Indic scripts and emoji need are not among them
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], U&'\0645\06CC\200C\062E\0648\0627\0647\0645 \D83D\DC68\200D\D83D\DC69', 'b') > 0 AS joiners_ok;
SELECT :notifications + 1 AS notifications \gset
SELECT :events + 1 AS events \gset
-- a run_at that is never due, or always first (error)
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', run_at => 'infinity');
SELECT pgrelay_notifier.send('s_mail', ARRAY['ann@example.org'], 's', 'b', run_at => '-infinity');
-- a huge recipient list is refused before any address is parsed (error)
SELECT pgrelay_notifier.send('s_mail', ARRAY(SELECT 'u' || i || '@example.org' FROM generate_series(1, 100000) i), 's', 'b');
-- none of the failures left a notification or an event behind
SELECT count(*) - :notifications AS new_notifications FROM pgrelay_notifier.notifications;
SELECT count(*) - :events AS new_events FROM pgrelay.queue;

DELETE FROM pgrelay.queue;
DELETE FROM pgrelay_notifier.notifications;
SELECT pgrelay_notifier.drop_channel(channel) FROM pgrelay_notifier.channels ORDER BY channel;
SELECT pgrelay_notifier.drop_profile(name) FROM pgrelay_notifier.profiles ORDER BY name;
SELECT pgrelay.unregister('s_sqljobs');
DROP FUNCTION regress_sink(text);
