-- demo/results.sql - what the Processor did (run by demo/run as postgres).

\echo
\echo 'pgrelay.log: the audit trail, one row per attempt'
\echo '(a webhook''s payload is the change of shop.orders; detail holds the answer''s status and latency)'
SELECT channel, action_type,
       CASE action_type WHEN 'webhook'
            THEN format('%s of order %s', payload::jsonb ->> 'operation', payload::jsonb #>> '{new,order_id}')
            ELSE payload END AS payload,
       attempt, outcome, coalesce(error, '') AS error, coalesce(sqlstate, '') AS sqlstate,
       coalesce(detail ->> 'status', '') AS http_status
FROM pgrelay.log
ORDER BY action_type DESC, payload;

\echo
\echo 'pgrelay.queue: pending work (a finished event leaves the queue)'
SELECT count(*) AS pending_events FROM pgrelay.queue;

\echo
\echo 'pgrelay.failed: events that failed for good (re-queue with pgrelay.retry_failed(event_id))'
SELECT channel, payload, attempts, error FROM pgrelay.failed;

\echo
\echo 'shop.orders and shop.order_audit: what the handler order_placed did'
SELECT order_id, customer, total, status FROM shop.orders ORDER BY order_id;
SELECT order_id, note, handled_by FROM shop.order_audit ORDER BY audit_id;

\echo
\echo 'pgrelay_notifier.get_status(): each email and each of its recipients'
SELECT s.status, s.attempts, n.subject,
       r.kind || ' ' || r.address AS recipient, r.status AS recipient_status,
       coalesce(r.reply, '') AS server_reply
FROM pgrelay_notifier.notifications n
CROSS JOIN LATERAL pgrelay_notifier.get_status(n.notification_id) s
CROSS JOIN LATERAL jsonb_to_recordset(s.recipients)
        AS r(id integer, kind text, address text, status text, code integer, reply text)
ORDER BY n.notification_id, r.id;

\echo
\echo 'pgrelay_notifier.attempts: each delivery attempt (provider_message_id: Microsoft Graph''s request-id)'
SELECT n.subject, a.transport, a.outcome, a.reply_code, a.reply, coalesce(a.provider_message_id, '') AS provider_message_id
FROM pgrelay_notifier.attempts a
JOIN pgrelay_notifier.notifications n USING (notification_id)
ORDER BY a.notification_id, a.attempt;
