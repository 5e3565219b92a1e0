-- Helpers shared by the notifier's tests that follow (they run in this order, in one database).
-- regress_event(pk): the one event fetch() serves a notification to, the event send() or
-- requeue() queued for it (read as the test's superuser, whoever calls it).
CREATE FUNCTION regress_event(pk text) RETURNS bigint LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog AS $$
    SELECT queue_event_id FROM pgrelay_notifier.notifications WHERE notification_id = pk::bigint
$$;
