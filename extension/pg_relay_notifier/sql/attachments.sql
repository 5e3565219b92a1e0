-- send() attachments and the message size limit
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
SELECT name FROM pgrelay_notifier.create_profile('a_main', host => 'smtp.example.com', from_address => 'app@example.com');
SELECT name FROM pgrelay_notifier.create_profile('a_small', host => 'smtp.example.com', from_address => 'app@example.com',
                                                 max_message_bytes => 1024);
SELECT channel FROM pgrelay_notifier.create_channel('a_mail', 'a_main');
SELECT channel FROM pgrelay_notifier.create_channel('a_small', 'a_small');

-- base64 (line breaks ignored), text stored as UTF-8, an inline part, an empty file, default types
SELECT pgrelay_notifier.send('a_mail', ARRAY['ann@example.org'], 'Files', 'see attached',
       body_html => '<img src="cid:logo@example.com">',
       attachments => jsonb_build_array(
           jsonb_build_object('filename', 'terms.pdf', 'content_type', 'application/pdf',
                              'content_base64', E'JVBERi0x\nLjQK'),
           jsonb_build_object('filename', 'notes.txt', 'content_text', 'Grüße'),
           jsonb_build_object('filename', 'logo.png', 'content_type', 'image/png',
                              'content_base64', 'iVBORw0KGgo=', 'content_id', 'logo@example.com'),
           jsonb_build_object('filename', 'empty.bin', 'content_base64', ''),
           jsonb_build_object('filename', 'Überblick 2026 (final).csv', 'content_type', 'text/csv; charset="utf-8"',
                              'content_text', 'a,b'),
           jsonb_build_object('filename', 'forwarded.eml', 'content_type', 'message/rfc822',
                              'content_text', 'Subject: x', 'content_id', null))) AS n \gset
SELECT position, filename, content_type, content_id, octet_length(content) AS size, content
FROM pgrelay_notifier.attachments WHERE notification_id = :n ORDER BY position;
-- the size counts the bodies and the decoded attachments
SELECT size_bytes FROM pgrelay_notifier.notifications WHERE notification_id = :n;
-- no attachments: NULL, JSON null or an empty array
SELECT pgrelay_notifier.send('a_mail', ARRAY['ann@example.org'], 's', 'b', attachments => 'null') > 0 AS sent;
SELECT pgrelay_notifier.send('a_mail', ARRAY['ann@example.org'], 's', 'b', attachments => '[]') > 0 AS sent;

SELECT count(*) AS notifications FROM pgrelay_notifier.notifications \gset
SELECT count(*) AS events FROM pgrelay.queue \gset
-- every malformed attachment is refused with a reason (error)
SELECT CASE WHEN length(a) > 70 THEN left(a, 50) || '...' ELSE a END AS attachments,
       regress_error(format('SELECT pgrelay_notifier.send(%L, ARRAY[%L], %L, %L, attachments => %L)',
                            'a_mail', 'ann@example.org', 's', 'b', a)) AS error
FROM (VALUES ('{"filename": "a.txt", "content_text": "x"}'),
             ('["a.txt"]'),
             ('[{"filename": "a.txt", "content_text": "x", "contentType": "text/plain"}]'),
             ('[{"filename": "a.txt", "content_text": 42}]'),
             ('[{"content_text": "x"}]'),
             ('[{"filename": "", "content_text": "x"}]'),
             ('[{"filename": "a.txt\r\nContent-Type: text/html", "content_text": "x"}]'),
             ('[{"filename": "a\"b.txt\n", "content_text": "x"}]'),
             ('[{"filename": "../etc/passwd", "content_text": "x"}]'),
             ('[{"filename": "C:\\temp\\a.txt", "content_text": "x"}]'),
             ('[{"filename": "..", "content_text": "x"}]'),
             ('[{"filename": "' || repeat('f', 256) || '", "content_text": "x"}]'),
             ('[{"filename": "a.txt"}]'),
             ('[{"filename": "a.txt", "content_text": "x", "content_base64": "eA=="}]'),
             ('[{"filename": "a.bin", "content_base64": "not base64!"}]'),
             ('[{"filename": "a.bin", "content_base64": "YWJ"}]'),
             ('[{"filename": "a.bin", "content_base64": "YW=j"}]'),
             ('[{"filename": "a.bin", "content_base64": "YQ==YQ=="}]'),
             ('[{"filename": "a.bin", "content_base64": "YW-_"}]'),
             ('[{"filename": "a.bin", "content_base64": "eA==", "content_type": "pdf"}]'),
             ('[{"filename": "a.bin", "content_base64": "eA==", "content_type": "application/ pdf"}]'),
             ('[{"filename": "a.bin", "content_base64": "eA==", "content_type": "text/plain\r\nX-Injected: 1"}]'),
             ('[{"filename": "a.bin", "content_base64": "eA==", "content_type": "text/plain; charset"}]'),
             ('[{"filename": "a.bin", "content_base64": "eA==", "content_type": "multipart/mixed; boundary=x"}]'),
             ('[{"filename": "a.png", "content_base64": "eA==", "content_id": "<logo@example.com>"}]'),
             ('[{"filename": "a.png", "content_base64": "eA==", "content_id": "logo example"}]'),
             ('[{"filename": "a.png", "content_base64": "eA==", "content_id": "logo\r\nX: y"}]'),
             ('[{"filename": "a.png", "content_base64": "eA==", "content_id": ""}]'),
             ('[{"filename": "a.png", "content_base64": "eA==", "content_id": "logo"}, {"filename": "b.png", "content_base64": "eA==", "content_id": "logo"}]')
     ) t(a);
SELECT pgrelay_notifier.send('a_mail', ARRAY['ann@example.org'], 's', 'b',
       attachments => (SELECT jsonb_agg(jsonb_build_object('filename', 'f' || i, 'content_text', 'x'))
                       FROM generate_series(1, 101) i));

-- the size limit of the profile: bodies plus decoded attachments (1024 bytes here)
SELECT pgrelay_notifier.send('a_small', ARRAY['ann@example.org'], 's', repeat('t', 500), repeat('h', 400),
       attachments => jsonb_build_array(jsonb_build_object('filename', 'a.bin',
                                                           'content_base64', encode(convert_to(repeat('x', 124), 'UTF8'), 'base64')))) > 0 AS at_the_limit;
SELECT pgrelay_notifier.send('a_small', ARRAY['ann@example.org'], 's', repeat('t', 500), repeat('h', 400),
       attachments => jsonb_build_array(jsonb_build_object('filename', 'a.bin',
                                                           'content_base64', encode(convert_to(repeat('x', 125), 'UTF8'), 'base64'))));
-- multi-byte characters count in bytes (error)
SELECT pgrelay_notifier.send('a_small', ARRAY['ann@example.org'], 's', repeat('ü', 513));
-- none of the failures left a notification or an event behind
SELECT count(*) - :notifications - 1 AS new_notifications FROM pgrelay_notifier.notifications;
SELECT count(*) - :events - 1 AS new_events FROM pgrelay.queue;
SELECT count(*) FROM pgrelay_notifier.attachments a
WHERE NOT EXISTS (SELECT 1 FROM pgrelay_notifier.notifications n WHERE n.notification_id = a.notification_id);

DELETE FROM pgrelay.queue;
DELETE FROM pgrelay_notifier.notifications;
SELECT pgrelay_notifier.drop_channel(channel) FROM pgrelay_notifier.channels ORDER BY channel;
SELECT pgrelay_notifier.drop_profile(name) FROM pgrelay_notifier.profiles ORDER BY name;
