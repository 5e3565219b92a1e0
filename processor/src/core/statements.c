/*
 * statements.c - the table of the SQL the Processor sends (statements.h). The SQL functions it
 * calls are the pg_relay and pg_relay_notifier extensions' (docs/sql-api.md, docs/interface.md).
 */
#include "statements.h"

#include <stdio.h>

static const struct Statement statements[] = {
	[STMT_SESSION_SETUP] = {"pgrelay_session_setup",
							/*
							 * client_connection_check_interval: should the Processor die in the
							 * middle of a long handler, the server notices within a second,
							 * cancels it and rolls back, instead of running it for nobody.
							 * search_path: no schema another role can create objects in may
							 * shadow a function or operator in the Processor's statements.
							 */
							"SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false),"
							" pg_catalog.set_config('pg_relay.mode', $1, false),"
							" pg_catalog.set_config('client_connection_check_interval', '1000', false)",
							1, false},
	[STMT_SET_TIMEOUT] = {"pgrelay_set_timeout",
						  "SELECT pg_catalog.set_config('statement_timeout', $1, false)", 1, false},
	[STMT_WHOAMI] = {"pgrelay_whoami",
					 "SELECT current_user || ' in database ' || pg_catalog.current_database()", 0, false},
	/*
	 * Which install of each extension, and whose its schema is: from the catalog alone, readable by
	 * any role (no name is looked up in the schemas, nothing in them runs), so that nothing in a
	 * schema is used before its owner is known to be trusted (install_state.c decides). One row per
	 * extension, pg_relay first. A schema counts as used when it holds anything: an empty one (made
	 * for the install, or left by a failed one) is no install. The owner "acts as" the session's
	 * role when running its code as that role gives it nothing it has not got: a superuser, the role
	 * itself, a role with its privileges, or one that may grant them to itself (ADMIN OPTION on it;
	 * before PostgreSQL 16, CREATEROLE did that for any role but a superuser). The creators are the
	 * other roles that may create objects in the schema.
	 */
	[STMT_INSTALL_PROBE] =
		{"pgrelay_install_probe",
		 "SELECT (SELECT e.extversion FROM pg_catalog.pg_extension e WHERE e.extname = x.ext),"
		 " n.oid IS NOT NULL,"
		 " EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.relnamespace = n.oid)"
		 " OR EXISTS (SELECT FROM pg_catalog.pg_proc p WHERE p.pronamespace = n.oid),"
		 " EXISTS (SELECT FROM pg_catalog.pg_proc p WHERE p.pronamespace = n.oid"
		 " AND p.proname = 'installation' AND p.pronargs = 0),"
		 " o.rolname, o.rolsuper, o.oid = me.oid,"
		 " o.rolsuper OR o.oid = me.oid OR pg_catalog.pg_has_role(o.oid, me.oid, 'USAGE')"
		 " OR pg_catalog.pg_has_role(o.oid, me.oid, 'MEMBER WITH ADMIN OPTION')"
		 " OR (pg_catalog.current_setting('server_version_num')::integer < 160000"
		 " AND o.rolcreaterole AND NOT me.rolsuper),"
		 " (SELECT pg_catalog.string_agg(DISTINCT CASE WHEN a.grantee = 0::oid THEN 'PUBLIC'"
		 " ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)::text) END, ', ')"
		 " FROM pg_catalog.aclexplode(n.nspacl) a"
		 " WHERE a.privilege_type = 'CREATE' AND a.grantee <> n.nspowner)"
		 " FROM (VALUES (1, 'pg_relay', 'pgrelay'), (2, 'pg_relay_notifier', 'pgrelay_notifier')) x(i, ext, "
		 "nsp)"
		 " CROSS JOIN (SELECT oid, rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) me"
		 " LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = x.nsp"
		 " LEFT JOIN pg_catalog.pg_roles o ON o.oid = n.nspowner"
		 " ORDER BY x.i",
		 0, false},
	[STMT_INSTALL_RELAY] = {"pgrelay_install_relay", "SELECT version FROM pgrelay.installation()", 0, false},
	[STMT_INSTALL_NOTIFIER] = {"pgrelay_install_notifier",
							   "SELECT version FROM pgrelay_notifier.installation()", 0, false},
	[STMT_SCHEMA_OID] = {"pgrelay_schema_oid",
						 "SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'pgrelay'", 0, true},
	/*
	 * A division by zero when schema pgrelay is not (or no longer) the one of oid $1. Only
	 * pg_catalog is named, and the count is not a constant, so the planner cannot raise it early.
	 */
	[STMT_SCHEMA_GUARD] = {"pgrelay_schema_guard",
						   "SELECT 1 / (SELECT count(*)::integer FROM pg_catalog.pg_namespace"
						   " WHERE nspname = 'pgrelay' AND oid = $1::oid)",
						   1, true},
	[STMT_PRIVILEGES] =
		{"pgrelay_privileges",
		 "SELECT pg_catalog.has_schema_privilege('pgrelay', 'USAGE')"
		 " AND pg_catalog.has_function_privilege('pgrelay.queue_probe(bigint, jsonb)', 'EXECUTE')"
		 " AND pg_catalog.has_function_privilege('pgrelay._queue_fetch(integer, jsonb)', 'EXECUTE')"
		 " AND pg_catalog.has_function_privilege('pgrelay.process_one(bigint)', 'EXECUTE')"
		 " AND pg_catalog.has_function_privilege('pgrelay.process_batch(bigint[])', 'EXECUTE')"
		 " AND pg_catalog.has_function_privilege('pgrelay._schedule_fire(timestamptz)', 'EXECUTE')"
		 " AND pg_catalog.has_function_privilege("
		 "'pgrelay._ha_tick(bigint, boolean, boolean, boolean, jsonb)', 'EXECUTE')",
		 0, false},
	[STMT_INTERFACE_VERSION] = {"pgrelay_interface_version", "SELECT pgrelay.interface_version()", 0, false},
	[STMT_PROBE] = {"pgrelay_probe",
					"SELECT p.has_work, p.reload_requested, p.paused, p.reload_generation,"
					" pgrelay.should_dispatch_single(), p.schedule_due, p.next_bound"
					" FROM pgrelay.queue_probe(NULLIF($1, '-1')::bigint, $2::jsonb) p",
					2, true},
	/*
	 * Note that the prepared statement keeps its name of before _queue_fetch(): the server's log
	 * (log_min_duration_statement) shows it, and an operator's filters may look for it.
	 */
	[STMT_QUEUE_FETCH] = {"pgrelay_pending_ids",
						  "SELECT id, action_type, channel, timeout_ms, attempt, batch, event_id"
						  " FROM pgrelay._queue_fetch($1::integer, $2::jsonb)",
						  2, true},
	/* error_kind: a configuration error's attempt_failed line says what to fix (STMT_CONFIG_HINT) */
	[STMT_PROCESS_ONE] =
		{"pgrelay_process_one",
		 "SELECT outcome, error, sqlstate,"
		 " to_char(retry_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), log_id,"
		 " CASE WHEN sqlstate IS NOT NULL THEN pgrelay.error_kind(sqlstate) END"
		 " FROM pgrelay.process_one($1)",
		 1, true},
	[STMT_PROCESS_BATCH] =
		{"pgrelay_process_batch",
		 "SELECT id, outcome, error, sqlstate,"
		 " to_char(retry_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), log_id,"
		 " CASE WHEN sqlstate IS NOT NULL THEN pgrelay.error_kind(sqlstate) END"
		 " FROM pgrelay.process_batch($1::bigint[])",
		 1, true},
	/* the Processor's role is the one that calls the handler */
	[STMT_CONFIG_HINT] = {"pgrelay_config_hint",
						  "SELECT kind, hint FROM pgrelay._config_hint($1, $2, current_user)", 2, false},
	[STMT_NOTIFIER_TRUSTED] = {"pgrelay_notifier_trusted", "SELECT " NOTIFIER_TRUSTED, 0, false},
	[STMT_CLAIM_FETCH] =
		{"pgrelay_claim_fetch",
		 /* a replayed row (finished by the claim) fetches nothing */
		 "SELECT c.payload, c.attempt,"
		 " CASE WHEN NOT c.replayed THEN pgrelay_notifier.fetch(c.payload, c.event_id)::text END,"
		 " c.replayed"
		 " FROM pgrelay._queue_claim($1) c",
		 1, true},
	[STMT_ROLLBACK_FETCH] = {"pgrelay_rollback_fetch", "ROLLBACK TO SAVEPOINT pgrelay_fetch", 0, false},
	[STMT_CLAIM] = {"pgrelay_claim", "SELECT payload, attempt, NULL, replayed FROM pgrelay._queue_claim($1)",
					1, false},
	/* the attempt's log row, the retry decision and the row finished (a 410: the endpoint gone) */
	[STMT_FINISH] =
		{"pgrelay_finish_held",
		 "SELECT outcome, to_char(retry_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
		 " FROM pgrelay._finish_held($1, $2, $3, $4, $5::timestamptz, $6::jsonb,"
		 "  clock_timestamp() + make_interval(secs => $7::float8), $8::integer)",
		 8, true},
	[STMT_SET_STATUS] = {"pgrelay_set_status", "SELECT pgrelay_notifier.set_status($1, $2::jsonb)", 2, false},
	[STMT_DEFER] =
		{"pgrelay_defer",
		 "SELECT pgrelay._queue_defer($1, clock_timestamp() + make_interval(secs => $2::float8 / 1000))", 2,
		 false},
	[STMT_WEBHOOK_CLAIM] =
		{"pgrelay_webhook_claim",
		 "SELECT payload, attempt, event_id, endpoint::text, replayed, publication_id, event_type"
		 " FROM pgrelay._webhook_claim($1)",
		 1, true},
	/* queued_at in UTC, as ISO 8601: it travels with the message */
	[STMT_DESTINATION_CLAIM] =
		{"pgrelay_destination_claim",
		 "SELECT payload, attempt, event_id, channel, action_type, key,"
		 " pg_catalog.to_char(queued_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
		 " settings::text, timeout_ms, replayed, publication_id, event_type"
		 " FROM pgrelay._destination_claim($1)",
		 1, true},
	/* the columns of STMT_DESTINATION_CLAIM, and the event's id last */
	[STMT_DESTINATION_CLAIM_MANY] =
		{"pgrelay_destination_claim_many",
		 "SELECT payload, attempt, event_id, channel, action_type, key,"
		 " pg_catalog.to_char(queued_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
		 " settings::text, timeout_ms, replayed, publication_id, event_type, queue_id"
		 " FROM pgrelay._destination_claim_many($1::bigint[])",
		 1, true},
	[STMT_FINISH_MANY] =
		{"pgrelay_finish_held_many",
		 "SELECT queue_id, outcome, to_char(retry_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
		 " FROM pgrelay._finish_held_many($1::bigint[], $2::text[], $3::text[], $4::text[], "
		 "$5::timestamptz[],"
		 " $6::jsonb[])",
		 6, true},
	[STMT_HA_TICK] =
		{"pgrelay_ha_tick",
		 "SELECT has_work, reload_requested, paused, reload_generation, dispatch, is_leader,"
		 " waiting, adopted, in_recovery, node, why, schedule_due, next_bound"
		 " FROM pgrelay._ha_tick(NULLIF($1, '-1')::bigint, $2::boolean, $3::boolean, $4::boolean,"
		 " $5::jsonb)",
		 5, true},
	[STMT_HA_REHOME] = {"pgrelay_ha_rehome", "SELECT owner_node, rehomed FROM pgrelay._startup_queue_check()",
						0, false},
	[STMT_HA_STOP] = {"pgrelay_ha_stop", "SELECT pgrelay._heartbeat_stop()", 0, false},
	[STMT_SET_LEADER] = {"pgrelay_set_leader",
						 "SELECT pg_catalog.set_config('pg_relay.is_leader', $1, false)", 1, false},
	[STMT_QUEUE_STATS] =
		{"pgrelay_queue_stats",
		 /* at most METRICS_MAX_CHANNELS rows: a scrape's work is bounded */
		 /* and as many subscriptions of topics, with a topic */
		 "(SELECT channel, action_type, queued, due, retrying,"
		 " COALESCE(extract(epoch FROM oldest_due_age), 0)::float8, paused, NULL::text, 0::bigint,"
		 " 0::bigint FROM pgrelay.queue_depth ORDER BY channel LIMIT 1000)"
		 " UNION ALL (SELECT channel, action_type, queued, due, retrying,"
		 " COALESCE(extract(epoch FROM oldest_due_age), 0)::float8, paused, topic, failed, failed_1h"
		 " FROM pgrelay.topic_subscribers ORDER BY topic, channel LIMIT 1000)",
		 0, false},
	/*
	 * How many workers are connected goes in the setting pg_relay.workers_connected, for this
	 * transaction, not as a parameter: the call stays the one of interface version 3, which a
	 * pg_relay 1.3 answers too (it ignores the setting). The function in FROM runs first.
	 */
	[STMT_PROCESSOR_REPORT] =
		{"pgrelay_processor_report",
		 "SELECT pgrelay._processor_report($1, $2::integer, $3, $4::integer, $5::integer,"
		 " $6::timestamptz, make_interval(secs => $7::float8 / 1000))"
		 " FROM pg_catalog.set_config('pg_relay.workers_connected', $8, true)",
		 8, false},
	[STMT_SCHEDULE_FIRE] =
		{"pgrelay_schedule_fire",
		 "SELECT schedule, to_char(occurrence AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
		 " outcome, late, event_id, reason FROM pgrelay._schedule_fire()",
		 0, false},
	[STMT_PROCESSOR_STOP] = {"pgrelay_processor_stop", "SELECT pgrelay._processor_stop($1, $2::integer)", 2,
							 false},
	/* pg_relay status: only the views pgrelay_monitor may read, times as seconds from now. */
	/* the views pg_relay status reads that the role may not (NULL: none), from the catalog */
	[STMT_STATUS_RIGHTS] =
		{"pgrelay_status_rights",
		 "SELECT current_user, pg_catalog.string_agg(v, ', ' ORDER BY n),"
		 /* topics came with pg_relay 1.4: shown where the view is, and readable */
		 " pg_catalog.has_schema_privilege('pgrelay', 'USAGE') AND COALESCE(pg_catalog.has_table_privilege("
		 "pg_catalog.to_regclass('pgrelay.topic_subscribers'), 'SELECT'), false)"
		 " FROM pg_catalog.unnest(ARRAY['pgrelay.dispatch_state', 'pgrelay.processors', "
		 "'pgrelay.cluster_status',"
		 " 'pgrelay.queue_depth', 'pgrelay.channel_stats', 'pgrelay.failed', 'pgrelay.last_errors',"
		 " 'pgrelay.schedules']) WITH ORDINALITY u(v, n)"
		 " WHERE NOT pg_catalog.has_schema_privilege('pgrelay', 'USAGE')"
		 " OR NOT COALESCE(pg_catalog.has_table_privilege(pg_catalog.to_regclass(v), 'SELECT'), false)",
		 0, false},
	[STMT_STATUS_DISPATCH] = {"pgrelay_status_dispatch",
							  "SELECT current_database(), current_user, d.paused,"
							  " COALESCE(extract(epoch FROM now() - d.paused_at)::bigint, -1), d.in_recovery,"
							  " d.node_id, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),"
							  " NULL, pgrelay.interface_version()"
							  " FROM pgrelay.dispatch_state d",
							  0, false},
	/* connected through to_jsonb: pg_relay 1.3's view has no such column (then NULL) */
	[STMT_STATUS_PROCESSORS] = {"pgrelay_status_processors",
								"SELECT host, pid, node_id, version, mode, workers, busy, leader,"
								" extract(epoch FROM now() - started_at)::bigint,"
								" extract(epoch FROM silent_for)::bigint, alive,"
								" (pg_catalog.to_jsonb(p) ->> 'connected')::integer"
								" FROM pgrelay.processors p ORDER BY alive DESC, node_id, host, pid LIMIT 20",
								0, false},
	[STMT_STATUS_CLUSTER] =
		{"pgrelay_status_cluster",
		 "SELECT node_id, node_name, COALESCE(engine, '-'), is_local, link_up, COALESCE(mode, '-'),"
		 " leader, extract(epoch FROM silent_for)::bigint, dead, stopped_at IS NOT NULL"
		 " FROM pgrelay.cluster_status WHERE beat_at IS NOT NULL OR NOT is_local"
		 " ORDER BY node_id LIMIT 16",
		 0, false},
	/*
	 * The channels that need a look first: the most events due or waiting to retry; the totals of
	 * every channel; the last error of each one shown (pgrelay.last_errors, looked up for these
	 * rows only), with its age.
	 */
	[STMT_STATUS_CHANNELS] =
		{"pgrelay_status_channels",
		 "SELECT t.channel, t.action_type, t.active, t.paused, t.queued, t.due, t.oldest, t.done_1h, "
		 "t.failed_1h,"
		 " t.total, t.keyed, t.snoozed, t.retrying, t.all_queued, t.all_due, t.all_retrying,"
		 " (SELECT count(*) FROM pgrelay.failed), e.ago, e.attempt, e.sqlstate, e.error_kind, e.error"
		 " FROM (SELECT d.channel, d.action_type, d.active, d.paused, d.queued, d.due, d.retrying, d.keyed,"
		 " d.snoozed, COALESCE(extract(epoch FROM d.oldest_due_age)::bigint, -1) AS oldest,"
		 " COALESCE(s.done_1h, 0) AS done_1h, COALESCE(s.failed_1h, 0) AS failed_1h, count(*) OVER () AS "
		 "total,"
		 " sum(d.queued) OVER () AS all_queued, sum(d.due) OVER () AS all_due,"
		 " sum(d.retrying) OVER () AS all_retrying"
		 " FROM pgrelay.queue_depth d LEFT JOIN pgrelay.channel_stats s USING (channel)"
		 " ORDER BY d.due + d.retrying DESC, d.oldest_due_age DESC NULLS LAST, s.failed_1h DESC NULLS LAST,"
		 " d.channel LIMIT 15) t"
		 " LEFT JOIN LATERAL (SELECT extract(epoch FROM now() - l.failed_at)::bigint AS ago, l.attempt,"
		 " l.sqlstate, l.error_kind, l.error FROM pgrelay.last_errors l WHERE l.channel = t.channel) e ON "
		 "true"
		 " ORDER BY t.due + t.retrying DESC, t.oldest DESC, t.failed_1h DESC, t.channel",
		 0, false},
	/*
	 * The schedules that need a look first: a failed last run, then due ones (due for long: no
	 * Processor fires), then the next to run; the time zone only when it is not UTC.
	 */
	[STMT_STATUS_SCHEDULES] =
		{"pgrelay_status_schedules",
		 "SELECT name, COALESCE(channel, 'topic ' || topic),"
		 " CASE WHEN upper(timezone) = 'UTC' THEN cron ELSE cron || ' ' || timezone END, active,"
		 " COALESCE(due, false), extract(epoch FROM next_run_at - now())::bigint,"
		 " extract(epoch FROM now() - last_run_at)::bigint, last_outcome, last_reason, count(*) OVER (),"
		 " count(*) FILTER (WHERE last_outcome = 'failed') OVER ()"
		 " FROM pgrelay.schedules"
		 " ORDER BY last_outcome IS NOT DISTINCT FROM 'failed' DESC, COALESCE(due, false) DESC, active DESC,"
		 " next_run_at NULLS LAST, name LIMIT 10",
		 0, false},
	/*
	 * The subscriptions that need a look first: failures, then the most deliveries due or
	 * retrying; the number of subscriptions and of topics that have one.
	 */
	[STMT_STATUS_TOPICS] =
		{"pgrelay_status_topics",
		 "SELECT topic, channel, action_type, queued, due, retrying,"
		 " COALESCE(extract(epoch FROM oldest_due_age)::bigint, -1), failed, failed_1h, active, paused,"
		 " count(*) OVER (), (SELECT count(DISTINCT t.topic) FROM pgrelay.topic_subscribers t),"
		 " sum(failed) OVER ()"
		 " FROM pgrelay.topic_subscribers"
		 " ORDER BY failed + failed_1h DESC, due + retrying DESC, oldest_due_age DESC NULLS LAST, topic, "
		 "channel"
		 " LIMIT 20",
		 0, false},
	[STMT_BEGIN] = {"pgrelay_begin", "BEGIN", 0, false},
	[STMT_COMMIT] = {"pgrelay_commit", "COMMIT", 0, false},
	[STMT_ROLLBACK] = {"pgrelay_rollback", "ROLLBACK", 0, false},
};

_Static_assert(sizeof statements / sizeof statements[0] == STMT_COUNT, "one row per enum StmtId");

const struct Statement *
statement(enum StmtId id)
{
	return &statements[id];
}

void
statement_begin_held(char *buf, size_t len, long idle_ms)
{
	snprintf(buf, len, "BEGIN; SET LOCAL idle_in_transaction_session_timeout = %ld; SAVEPOINT pgrelay_fetch",
			 idle_ms);
}
