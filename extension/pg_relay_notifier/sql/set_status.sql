-- set_status(): recording attempts, the status machine, traces
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
SELECT name FROM pgrelay_notifier.create_profile('t_debug', host => 'smtp.example.com', username => 'relay',
       password => 'S3cret-pw!', from_address => 'app@example.com', debug => true);
SELECT name FROM pgrelay_notifier.create_profile('t_quiet', host => 'smtp.example.com', from_address => 'app@example.com');
SELECT channel FROM pgrelay_notifier.create_channel('t_debug', 't_debug');
SELECT channel FROM pgrelay_notifier.create_channel('t_quiet', 't_quiet');
CREATE FUNCTION regress_send(channel text) RETURNS bigint LANGUAGE sql AS $$
    SELECT pgrelay_notifier.send(channel, ARRAY['ann@example.org', 'bob@example.org'], 'Hi', 'Hello',
                                 bcc => ARRAY['audit@example.com'])
$$;
CREATE FUNCTION regress_recipients(n bigint) RETURNS TABLE (id integer, status text, code integer, reply text)
LANGUAGE sql AS $$
    SELECT recipient_id, status, code, reply FROM pgrelay_notifier.recipients WHERE notification_id = n ORDER BY 1
$$;

-- queued -> retrying: some recipients got a 4xx; a recipient not listed keeps its status
SELECT regress_send('t_debug') AS n1 \gset
SELECT pgrelay_notifier.set_status(:'n1', '{
    "attempt": 1, "outcome": "retrying", "transport": "smtp",
    "started_at": "2026-11-29T19:20:50.123+00", "finished_at": "2026-11-29T19:20:51.456+00",
    "reply_code": 250, "reply": "250 2.0.0 Ok: queued as 4Fq2x1", "provider_message_id": null,
    "error": null, "unknown_outcome": false, "next_attempt_at": "2026-11-29T19:25:00+00",
    "recipients": [{"id": 1, "status": "sent", "code": 250, "reply": "250 2.1.5 Ok"},
                   {"id": 2, "status": "retrying", "code": 451, "reply": "451 4.7.1 Greylisted"}],
    "trace": "C: AUTH LOGIN\r\nS: 334 VXNlcm5hbWU6\r\nC: cmVsYXk=\r\nS: 334 UGFzc3dvcmQ6\r\nC: UzNjcmV0LXB3IQ==\r\nC: X-Debug S3cret-pw!\r\n"}');
SELECT status, attempts, last_error, last_attempt_at, next_attempt_at, sent_at, finished_at
FROM pgrelay_notifier.notifications WHERE notification_id = :n1;
SELECT * FROM regress_recipients(:n1);
-- the Processor's next fetch() puts only recipients 2 and 3 in the envelope
SELECT r ->> 'id' AS id, r ->> 'status' AS status FROM jsonb_array_elements(pgrelay_notifier.fetch(:'n1', regress_event(:'n1')) -> 'recipients') r;
-- retrying -> sent: the rest accepted
SELECT pgrelay_notifier.set_status(:'n1', '{"attempt": 2, "outcome": "sent", "transport": "smtp",
    "finished_at": "2026-11-29T19:25:03+00", "reply_code": 250, "reply": "250 2.0.0 Ok: queued as 5Gr3y2",
    "recipients": [{"id": 2, "status": "sent", "code": 250}, {"id": 3, "status": "sent", "code": 250}],
    "trace": "S: 250 ok"}');
SELECT status, attempts, last_error, next_attempt_at, sent_at, finished_at IS NOT NULL AS finished
FROM pgrelay_notifier.notifications WHERE notification_id = :n1;
SELECT * FROM regress_recipients(:n1);
-- one attempt row per call, as reported
SELECT attempt, outcome, status, transport, started_at, finished_at, reply_code, reply, error, unknown_outcome,
       next_attempt_at, jsonb_array_length(recipients) AS recipients
FROM pgrelay_notifier.attempts WHERE notification_id = :n1 ORDER BY attempt;
-- traces are kept for a debug profile, with the profile's literal secret masked (plain and base64)
SELECT a.attempt, t.trace FROM pgrelay_notifier.attempt_traces t JOIN pgrelay_notifier.attempts a USING (attempt_id)
WHERE a.notification_id = :n1 ORDER BY a.attempt;
-- sent is final (error)
SELECT regress_error(format('SELECT pgrelay_notifier.set_status(%L, %L)', :'n1', '{"outcome": "sent"}'));
SELECT regress_error(format('SELECT pgrelay_notifier.set_status(%L, %L)', :'n1', '{"outcome": "failed"}'));

-- queued -> failed (permanent); failed is not final: pgrelay.retry_failed() may queue the event again
SELECT regress_send('t_quiet') AS n2 \gset
SELECT pgrelay_notifier.set_status(:'n2', '{"outcome": "failed", "reply_code": 554, "reply": "554 5.7.1 Relay denied",
    "error": "554 5.7.1 Relay denied", "trace": "not stored: debug is off",
    "recipients": [{"id": 1, "status": "failed"}, {"id": 2, "status": "failed"}, {"id": 3, "status": "failed"}]}');
SELECT status, attempts, last_error, sent_at IS NULL AS not_sent, finished_at IS NOT NULL AS finished
FROM pgrelay_notifier.notifications WHERE notification_id = :n2;
SELECT count(*) AS traces FROM pgrelay_notifier.attempt_traces t JOIN pgrelay_notifier.attempts a USING (attempt_id)
WHERE a.notification_id = :n2;
SELECT pgrelay_notifier.set_status(:'n2', '{"outcome": "sent", "attempt": 1,
    "recipients": [{"id": 1, "status": "sent"}, {"id": 2, "status": "sent"}, {"id": 3, "status": "sent"}]}');
SELECT attempts, last_error FROM pgrelay_notifier.notifications WHERE notification_id = :n2;

-- queued -> partially_sent: final; an error message is made from the first failed recipient
SELECT regress_send('t_quiet') AS n3 \gset
SELECT pgrelay_notifier.set_status(:'n3', '{"outcome": "partially_sent", "reply_code": 250,
    "recipients": [{"id": 1, "status": "sent", "code": 250},
                   {"id": 2, "status": "failed", "code": 550, "reply": "550 5.1.1 <bob@example.org>: user unknown"},
                   {"id": 3, "status": "sent", "code": 250}]}');
SELECT status, last_error, sent_at IS NOT NULL AS sent FROM pgrelay_notifier.notifications WHERE notification_id = :n3;
SELECT regress_error(format('SELECT pgrelay_notifier.set_status(%L, %L)', :'n3', '{"outcome": "retrying"}'));

-- failed after an earlier attempt reached some recipients becomes partially_sent; sent recipients stay sent
SELECT regress_send('t_quiet') AS n4 \gset
SELECT pgrelay_notifier.set_status(:'n4', '{"outcome": "retrying", "error": "451 try again later",
    "recipients": [{"id": 1, "status": "sent"}, {"id": 2, "status": "retrying"}, {"id": 3, "status": "retrying"}]}');
SELECT pgrelay_notifier.set_status(:'n4', '{"outcome": "failed", "error": "attempts exhausted: 451 try again later",
    "recipients": [{"id": 1, "status": "failed"}, {"id": 2, "status": "failed"}, {"id": 3, "status": "failed"}]}');
SELECT status, attempts, last_error, next_attempt_at FROM pgrelay_notifier.notifications WHERE notification_id = :n4;
SELECT id, status FROM regress_recipients(:n4);

-- an unknown outcome (connection lost after the data) is recorded with the provider's id
SELECT regress_send('t_quiet') AS n5 \gset
SELECT pgrelay_notifier.set_status(:'n5', '{"outcome": "retrying", "transport": "graph", "unknown_outcome": true,
    "provider_message_id": "AAMkAGI2TG93AAA=", "error": "connection lost after DATA",
    "next_attempt_at": "2026-11-29T19:30:00Z"}');
SELECT outcome, transport, unknown_outcome, provider_message_id, error, next_attempt_at
FROM pgrelay_notifier.attempts WHERE notification_id = :n5;
-- cancelled is final (error)
SELECT pgrelay_notifier.cancel(:n5);
SELECT regress_error(format('SELECT pgrelay_notifier.set_status(%L, %L)', :'n5', '{"outcome": "sent"}'));

-- malformed ids and documents are refused with a reason, and change nothing (error)
SELECT regress_send('t_quiet') AS n6 \gset
SELECT pgrelay_notifier.set_status('abc', '{"outcome": "sent"}');
SELECT pgrelay_notifier.set_status('1', '{"outcome": "sent"}');
SELECT pgrelay_notifier.set_status(NULL, '{"outcome": "sent"}');
SELECT d AS result, regress_error(format('SELECT pgrelay_notifier.set_status(%L, %L)', :'n6', d)) AS error
FROM (VALUES (NULL),
             ('[]'),
             ('{}'),
             ('{"outcome": "ok"}'),
             ('{"outcome": "cancelled"}'),
             ('{"outcome": 1}'),
             ('{"outcome": "sent", "attempt": 0}'),
             ('{"outcome": "sent", "attempt": "2"}'),
             ('{"outcome": "sent", "attempt": 1.5}'),
             ('{"outcome": "sent", "transport": "smtps"}'),
             ('{"outcome": "sent", "started_at": "yesterday-ish"}'),
             ('{"outcome": "sent", "finished_at": 1764444051}'),
             ('{"outcome": "retrying", "next_attempt_at": "2026-02-30T00:00:00Z"}'),
             ('{"outcome": "retrying", "next_attempt_at": "infinity"}'),
             ('{"outcome": "sent", "finished_at": "-infinity"}'),
             ('{"outcome": "sent", "reply_code": 1000}'),
             ('{"outcome": "sent", "unknown_outcome": "no"}'),
             ('{"outcome": "sent", "recipients": {"id": 1}}'),
             ('{"outcome": "sent", "recipients": [1]}'),
             ('{"outcome": "sent", "recipients": [{"status": "sent"}]}'),
             ('{"outcome": "sent", "recipients": [{"id": 9, "status": "sent"}]}'),
             ('{"outcome": "sent", "recipients": [{"id": 1, "status": "sent"}, {"id": 1, "status": "sent"}]}'),
             ('{"outcome": "sent", "recipients": [{"id": 1, "status": "pending"}]}'),
             ('{"outcome": "sent", "recipients": [{"id": 1}]}'),
             ('{"outcome": "sent", "recipients": [{"id": 1, "status": "failed"}]}'),
             ('{"outcome": "failed", "recipients": [{"id": 1, "status": "retrying"}]}'),
             ('{"outcome": "sent", "recipients": [{"id": 1, "status": "sent", "code": "250"}]}'),
             ('{"outcome": "sent", "recipients": [{"id": 1, "status": "sent", "reply": 250}]}')) t(d);
SELECT status, attempts FROM pgrelay_notifier.notifications WHERE notification_id = :n6;
SELECT count(*) FROM pgrelay_notifier.attempts WHERE notification_id = :n6;
-- unknown keys are ignored (the Processor may add some)
SELECT pgrelay_notifier.set_status(:'n6', '{"outcome": "sent", "duration_ms": 812, "server": "mx1"}');
-- without an error text, last_error names the first recipient that failed, with its reply or code
SELECT regress_send('t_quiet') AS n7 \gset
SELECT pgrelay_notifier.set_status(:'n7', '{"outcome": "retrying",
    "recipients": [{"id": 1, "status": "sent", "code": 250}, {"id": 2, "status": "retrying", "code": 451}]}');
SELECT last_error FROM pgrelay_notifier.notifications WHERE notification_id = :n7;
-- a final outcome settles the envelope recipients it does not list (Graph reports no per-recipient
-- results; a connection refused fails them all); retrying leaves them as they are
SELECT regress_send('t_quiet') AS n8 \gset
SELECT regress_send('t_quiet') AS n9 \gset
SELECT pgrelay_notifier.set_status(:'n8', '{"outcome": "retrying", "recipients": [{"id": 1, "status": "retrying"}]}');
SELECT id, status FROM regress_recipients(:n8);
SELECT pgrelay_notifier.set_status(:'n8', '{"outcome": "sent", "transport": "graph"}');
SELECT id, status FROM regress_recipients(:n8);
SELECT pgrelay_notifier.set_status(:'n9', '{"outcome": "failed", "error": "connection refused"}');
SELECT id, status FROM regress_recipients(:n9);

DELETE FROM pgrelay.queue;
DELETE FROM pgrelay_notifier.notifications;
SELECT pgrelay_notifier.drop_channel(channel) FROM pgrelay_notifier.channels ORDER BY channel;
SELECT pgrelay_notifier.drop_profile(name) FROM pgrelay_notifier.profiles ORDER BY name;
DROP FUNCTION regress_send(text);
DROP FUNCTION regress_recipients(bigint);
