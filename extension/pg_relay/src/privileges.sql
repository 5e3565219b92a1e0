/* extension/pg_relay/src/privileges.sql: privileges: PUBLIC gets nothing; each role gets what its job needs */

REVOKE ALL ON SCHEMA pgrelay FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA pgrelay FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA pgrelay FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA pgrelay FROM PUBLIC;

GRANT USAGE ON SCHEMA pgrelay TO pgrelay_producer, pgrelay_processor, pgrelay_admin;

GRANT EXECUTE ON FUNCTION pgrelay.notify(text, text, timestamptz, text, text) TO pgrelay_producer;
GRANT EXECUTE ON FUNCTION pgrelay.notify_many(text, text[], timestamptz, text[], text) TO pgrelay_producer;
GRANT EXECUTE ON FUNCTION pgrelay.publish(text, text, text, timestamptz, text, text) TO pgrelay_producer;
GRANT EXECUTE ON FUNCTION pgrelay.publish_many(text, text[], text, timestamptz) TO pgrelay_producer;

GRANT EXECUTE ON FUNCTION
    pgrelay.queue_probe(bigint, jsonb),
    pgrelay.queue_has_work(),
    pgrelay.queue_pending_ids(integer),
    pgrelay._queue_fetch(integer, jsonb),
    pgrelay.process_one(bigint),
    pgrelay.process_batch(bigint[]),
    pgrelay._claim_events(bigint[]),
    pgrelay._gate_open(text),
    pgrelay._settings_saved(),
    pgrelay._settings_restore(text[]),
    pgrelay._forget_handler_state(),
    pgrelay._deferred_triggers(),
    pgrelay._run_handler(text, oid, text, text, interval, timestamptz, interval, boolean),
    pgrelay._batch_results(bigint[], bigint[], text[], text[], text[], timestamptz[], timestamptz[], bigint[],
                           pgrelay.process_result[]),
    pgrelay._complete_events(bigint[], text[], text[], text[], timestamptz[], timestamptz[]),
    pgrelay._queue_claim(bigint),
    pgrelay._claim_event(bigint),
    pgrelay._write_log(bigint, text, text, text, timestamptz, jsonb, timestamptz),
    pgrelay._queue_mark_done(bigint),
    pgrelay._complete(bigint, text, text, text, timestamptz),
    pgrelay._finish_held(bigint, text, text, text, timestamptz, jsonb, timestamptz, integer),
    pgrelay._finish_held_many(bigint[], text[], text[], text[], timestamptz[], jsonb[]),
    pgrelay._snooze(bigint, text, text, timestamptz),
    pgrelay._queue_defer(bigint, timestamptz),
    pgrelay._webhook_claim(bigint),
    pgrelay._webhook_gone(bigint, integer, text),
    pgrelay._destination_claim(bigint),
    pgrelay._destination_claim_many(bigint[]),
    pgrelay.should_dispatch_single(),
    pgrelay.interface_version(),
    pgrelay.installation(),
    pgrelay._this_node(),
    pgrelay.decode_id(bigint),
    pgrelay.error_kind(text),
    -- a configuration error's attempt_failed line: what to fix
    pgrelay._config_hint(text, text, name),
    -- the error of an attempt the channel's timeout ended (process_one, process_batch)
    pgrelay._timeout_error(text, interval),
    -- high availability (docs/ha.md): the tick of multi-node and leader mode and its parts
    pgrelay._ha_tick(bigint, boolean, boolean, boolean, jsonb),
    pgrelay._startup_queue_check(),
    pgrelay._heartbeat_stop(),
    pgrelay.multi_master_watch(interval),
    pgrelay.is_lowest_live_master(interval),
    pgrelay.cluster_nodes(),
    pgrelay._cluster_status(),
    -- monitoring: the Processor's own row of pgrelay.processors
    pgrelay._processor_report(text, integer, text, integer, integer, timestamptz, interval),
    pgrelay._processor_stop(text, integer),
    -- recurring events: the Processor fires the schedules due when its probe says so
    pgrelay._schedule_fire(timestamptz)
TO pgrelay_processor;

GRANT EXECUTE ON FUNCTION
    pgrelay.register(text, text, text, text, boolean, integer, interval, interval, interval, boolean, text,
                     integer, text, boolean, boolean, jsonb),
    -- register() looks the handler up as the caller (SECURITY INVOKER), then this writes the channel
    pgrelay._register(text, text, regprocedure, text, boolean, integer, interval, interval, interval, boolean, text,
                      integer, text, boolean, boolean, jsonb),
    pgrelay.unregister(text),
    pgrelay.pause(text),
    pgrelay.resume(text),
    pgrelay.request_reload(),
    pgrelay.retry_failed(bigint),
    pgrelay.retry_failed(text, timestamptz, timestamptz, text, boolean),
    pgrelay.discard_failed(bigint),
    pgrelay.discard_failed(text, timestamptz, timestamptz, text, boolean),
    pgrelay.cancel(bigint),
    pgrelay.cancel(text, text, timestamptz, timestamptz, boolean),
    pgrelay.purge_log(interval),
    pgrelay.watch_table(regclass, text, text[], text[], text, text),
    pgrelay.unwatch_table(regclass, text, text),
    pgrelay.register_webhook(text, text, text, jsonb, text, text, boolean, boolean, interval, integer, interval,
                             interval, text, boolean, boolean, text, integer, text[]),
    pgrelay.queue_probe(bigint, jsonb),
    pgrelay.queue_has_work(),
    pgrelay.interface_version(),
    pgrelay.installation(),
    pgrelay._this_node(),
    pgrelay.decode_id(bigint),
    pgrelay.error_kind(text),
    -- high availability: the node map, the replication set-up, what each node sees
    pgrelay.set_node(integer, text, text),
    pgrelay.remove_node(integer),
    pgrelay.replication_tables(),
    pgrelay.replication_setup(text),
    pgrelay.cluster_nodes(),
    pgrelay._cluster_status(),
    -- recurring events
    pgrelay.schedule(text, text, text, text, text, text, boolean, text, text),
    pgrelay.unschedule(text),
    pgrelay.cron_next_runs(text, text, timestamptz, integer)
TO pgrelay_admin;

GRANT SELECT ON pgrelay.channels, pgrelay.action_types, pgrelay.queue, pgrelay.log,
                pgrelay.failed_events, pgrelay.control, pgrelay.queue_depth, pgrelay.failed,
                pgrelay.channel_stats, pgrelay.nodes, pgrelay.heartbeats, pgrelay.peer_observations,
                pgrelay.cluster_status, pgrelay.webhooks, pgrelay.webhook_status, pgrelay.processor_reports,
                pgrelay.processors, pgrelay.dispatch_state, pgrelay.watches, pgrelay.watched_tables,
                pgrelay.schedule_entries, pgrelay.schedule_runs, pgrelay.schedules, pgrelay.last_errors,
                pgrelay.backlog_samples, pgrelay.backlog, pgrelay.destinations
TO pgrelay_admin;
GRANT UPDATE (run_order, description) ON pgrelay.action_types TO pgrelay_admin;
GRANT SELECT ON pgrelay.queue_depth, pgrelay.failed, pgrelay.cluster_status, pgrelay.processors,
                pgrelay.dispatch_state
TO pgrelay_processor;

-- The monitor role reads the views, and nothing else: no table, no function that changes anything.
GRANT USAGE ON SCHEMA pgrelay TO pgrelay_monitor;
GRANT SELECT ON pgrelay.queue_depth, pgrelay.failed, pgrelay.channel_stats, pgrelay.cluster_status,
                pgrelay.webhook_status, pgrelay.processors, pgrelay.dispatch_state, pgrelay.watched_tables,
                pgrelay.schedules, pgrelay.last_errors, pgrelay.backlog
TO pgrelay_monitor;
-- (a view runs its functions with the reader's EXECUTE right: cluster_status needs _cluster_status,
-- dispatch_state _this_node; pg_relay status shows the interface version beside the extension's)
GRANT EXECUTE ON FUNCTION pgrelay.error_kind(text), pgrelay.decode_id(bigint), pgrelay._cluster_status(),
                          pgrelay._this_node(), pgrelay.interface_version(), pgrelay.installation(),
                          pgrelay._watch_readable(pgrelay.watches)
TO pgrelay_monitor;
GRANT EXECUTE ON FUNCTION pgrelay._watch_readable(pgrelay.watches) TO pgrelay_admin;
-- PostgreSQL requires EXECUTE on a trigger's function of whoever adds a partition to a watched
-- partitioned table (the trigger is cloned onto it). The function queues nothing for a trigger
-- that no row of pgrelay.watches describes, so the grant lets nobody queue events.
GRANT EXECUTE ON FUNCTION pgrelay._watch_trigger() TO PUBLIC;

-- Topics (publish()): admins make topics and subscriptions and read them; the monitor sees the
-- subscribers without payloads.
GRANT EXECUTE ON FUNCTION
    pgrelay.create_topic(text, text),
    pgrelay.drop_topic(text),
    pgrelay.subscribe(text, text, text[]),
    pgrelay.unsubscribe(text, text)
TO pgrelay_admin;
GRANT SELECT ON pgrelay.topics, pgrelay.subscriptions TO pgrelay_admin;
-- the Processor's metrics report each subscription's deliveries (no payload)
GRANT SELECT ON pgrelay.topic_subscribers TO pgrelay_admin, pgrelay_monitor, pgrelay_processor;
-- the deliveries of one publication, without payloads (the console's event page)
GRANT EXECUTE ON FUNCTION pgrelay.publication_status(bigint) TO pgrelay_admin, pgrelay_monitor;

-- The web console (docs/console.md): admin and monitor read the attempts without their payloads,
-- and how many finished per minute.
GRANT EXECUTE ON FUNCTION pgrelay.throughput(timestamptz, timestamptz, interval) TO pgrelay_admin, pgrelay_monitor;
GRANT SELECT ON pgrelay.attempts TO pgrelay_admin, pgrelay_monitor;

-- _deferred_triggers() runs as a role with no right at all (finish.sql says why): pgrelay_nobody
-- owns it. Giving a function to a role needs the right to act as it: the installer grants itself
-- pgrelay_nobody when it may not yet (a superuser needs nothing; a role with CREATEROLE, or with
-- ADMIN OPTION on it, may), which gives it nothing, as the role holds nothing. The new owner must
-- also have CREATE on the schema at that moment: granted for the ALTER and taken back in the same
-- transaction, so that no other role may create in pgrelay after it (the guard checks that at every
-- update). Without USAGE on the schema, pgrelay_nobody cannot even name its function, so a trigger
-- that runs as it cannot alter it.
DO $$
BEGIN
    IF (SELECT p.proowner FROM pg_catalog.pg_proc p
        WHERE p.oid = 'pgrelay._deferred_triggers()'::pg_catalog.regprocedure) = 'pgrelay_nobody'::pg_catalog.regrole THEN
        RETURN;
    END IF;
    -- From PostgreSQL 16 on, acting as a role is the SET option of a membership: a role with
    -- CREATEROLE that made pgrelay_nobody is a member with ADMIN OPTION, and without SET
    IF NOT pg_catalog.pg_has_role('pgrelay_nobody',
                                  CASE WHEN pg_catalog.current_setting('server_version_num')::int >= 160000
                                       THEN 'SET' ELSE 'MEMBER' END) THEN
        BEGIN
            EXECUTE pg_catalog.format('GRANT pgrelay_nobody TO %I', current_user);
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION '% may not give a function of pg_relay to pgrelay_nobody', current_user
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = 'pgrelay_nobody, which holds no right, owns the function that fires a handler''s deferred triggers.',
                      HINT = pg_catalog.format('Have a superuser run: GRANT pgrelay_nobody TO %I; then install again.',
                                               current_user);
        END;
    END IF;
    GRANT CREATE ON SCHEMA pgrelay TO pgrelay_nobody;
    ALTER FUNCTION pgrelay._deferred_triggers() OWNER TO pgrelay_nobody;
    REVOKE CREATE ON SCHEMA pgrelay FROM pgrelay_nobody;
END
$$;
