/*
 * tick.c - what the main thread asks the database each tick: is there work, may this node
 * dispatch, which events are eligible. One connection ("control"), separate from the workers'.
 */
#include "tick.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "install_state.h"
#include "kind.h"
#include "log.h"
#include "metrics.h"

void
tick_init(struct Ticker *t, const struct Config *c)
{
	memset(t, 0, sizeof *t);
	pgconn_init(&t->pg, "control", c->dbname, config_mode_name(c->mode));
	/* The control connection's statements are all short; never let one hang forever. */
	t->pg.session_timeout_ms = 60000;
	t->pg.one_attempt = c->once;
	/* a Processor that never connected stops at a wrong password or a missing database */
	t->pg.stop_if_lasting = true;
	t->gate = -1;
	t->paused = -1;
	t->seen_generation = -1;
}

void
tick_free(struct Ticker *t)
{
	free(t->bound);
	t->bound = NULL;
	pgconn_destroy(&t->pg);
}

/* A NULL bound (a standby, a probe without one) and a failed copy both start again from none. */
void
tick_keep_bound(struct Ticker *t, const char *next)
{
	free(t->bound);
	t->bound = next ? strdup(next) : NULL;
}

bool
tick_session(struct Ticker *t, const struct Config *c, long *wait_ms)
{
	return pgconn_session(&t->pg, c->reconnect_max_ms, wait_ms);
}

void
tick_lost(struct Ticker *t)
{
	log_warn_c(&t->pg, "reconnecting", LOG_STR("reason", "connection_lost"), LOG_STR("error", t->pg.error));
	pgconn_lost(&t->pg);
	/* the next server may be a promoted standby with its own clock: its floors start again */
	tick_keep_bound(t, NULL);
}

/* one_value runs a one-row query and copies its first column; false on error or no row. */
static bool
one_value(struct Ticker *t, enum StmtId id, char *out, size_t outlen, bool *isnull)
{
	PGresult *res = pgconn_query(&t->pg, id, NULL);
	const char *v;

	if (res == NULL)
		return false;
	if (PQntuples(res) < 1) {
		pgconn_clear(res);
		*isnull = true;
		return true;
	}
	v = pgconn_value(res, 0, 0);
	*isnull = (v == NULL);
	snprintf(out, outlen, "%s", v ? v : "");
	pgconn_clear(res);
	return true;
}

/* update_hint: how the install of st is brought to this Processor's version. */
static const char *
update_hint(const struct InstallState *st)
{
	return st->relay.kind == IK_SCRIPT
			   ? "run pg_relay upgrade -d CONNINFO (with --notifier when it is installed) as the role that "
				 "installed it"
			   : "run ALTER EXTENSION pg_relay UPDATE (and ALTER EXTENSION pg_relay_notifier UPDATE) in that "
				 "database";
}

bool
tick_check_installation(struct Ticker *t, char *err, size_t errlen, char *hint, size_t hintlen)
{
	struct InstallState st;
	char v[256], who[256], why[512];
	bool isnull;

	if (!one_value(t, STMT_WHOAMI, who, sizeof who, &isnull))
		goto sqlerr;
	if (!install_state_read(&t->pg, IR_USER, &st))
		goto sqlerr;
	if (install_state_problem(&st, why, sizeof why, hint, hintlen)) {
		snprintf(err, errlen, "%s (connected as %s)", why, who);
		return false;
	}
	install_state_describe(&st, t->install, sizeof t->install);
	if (!one_value(t, STMT_SCHEMA_OID, t->schema_oid, sizeof t->schema_oid, &isnull))
		goto sqlerr;
	if (install_state_ignored(&st, why, sizeof why, hint, hintlen))
		log_warn("notifier_ignored", LOG_STR("error", why), LOG_STR("hint", hint));
	if (!one_value(t, STMT_PRIVILEGES, v, sizeof v, &isnull)) {
		/* The check names functions of the current version: an older one has not got them. */
		if (!t->pg.lost && strcmp(t->pg.sqlstate, "42883") == 0) {
			snprintf(err, errlen, "pg_relay %s (%s) is older than this Processor (%s)", st.relay.version,
					 install_kind_name(st.relay.kind), t->pg.error);
			snprintf(hint, hintlen, "%s", update_hint(&st));
			return false;
		}
		goto sqlerr;
	}
	if (strcmp(v, "t") != 0) {
		snprintf(err, errlen, "permission denied: %s may not run the pg_relay dispatch functions", who);
		snprintf(hint, hintlen, "GRANT pgrelay_processor TO the Processor's role");
		return false;
	}
	if (!one_value(t, STMT_INTERFACE_VERSION, v, sizeof v, &isnull))
		goto sqlerr;
	if (atoi(v) != PGRELAY_INTERFACE_VERSION) {
		snprintf(err, errlen,
				 "pg_relay interface version %s is not supported (this Processor speaks version %d)", v,
				 PGRELAY_INTERFACE_VERSION);
		if (atoi(v) < PGRELAY_INTERFACE_VERSION)
			snprintf(hint, hintlen, "the SQL side is older than this Processor: %s", update_hint(&st));
		else
			snprintf(hint, hintlen,
					 "the extensions are newer than this Processor: install the matching Processor");
		return false;
	}
	return true;

sqlerr:
	snprintf(err, errlen, "startup check failed: %s", t->pg.error);
	snprintf(hint, hintlen, "%s", t->pg.lost ? "the connection was lost" : "see the server log");
	return false;
}

PGresult *
tick_query(struct Ticker *t, enum StmtId id, const char *const *params)
{
	const char *oid[1] = {t->schema_oid};
	struct PgPipeStmt guard = {STMT_SCHEMA_GUARD, oid};

	PGresult *res;
	bool guard_failed;

	t->schema_changed = false;
	if (t->schema_oid[0] == '\0')
		return pgconn_query(&t->pg, id, params);
	res = pgconn_query_guarded(&t->pg, &guard, id, params, &guard_failed);
	/* 22012: the guard's division by zero; any other failure of it is not an answer. */
	t->schema_changed = guard_failed && !t->pg.lost && strcmp(t->pg.sqlstate, "22012") == 0;
	return res;
}

void
tick_note_paused(struct Ticker *t, bool paused)
{
	if (paused && t->paused != 1)
		log_info("paused", LOG_STR("reason", "pgrelay.pause"));
	else if (!paused && t->paused == 1)
		log_info("resumed", LOG_STR("reason", "pgrelay.resume"));
	t->paused = paused ? 1 : 0;
}

/* apply_probe logs the edges of the gate and the pause flag, once each. */
static void
apply_probe(struct Ticker *t, const struct ProbeResult *r)
{
	if (r->dispatch && t->gate != 1) {
		if (t->gate == 0)
			log_info("primary_active", LOG_STR("mode", "single"), LOG_STR("reason", "promoted"));
		t->gate = 1;
	} else if (!r->dispatch && t->gate != 0) {
		log_info("standby_waiting", LOG_STR("mode", "single"), LOG_STR("reason", "in_recovery"));
		t->gate = 0;
	}
	tick_note_paused(t, r->paused);
}

bool
tick_probe(struct Ticker *t, struct ProbeResult *r)
{
	char gen[32];
	const char *params[2] = {gen, t->bound ? t->bound : "{}"};
	PGresult *res;
	const char *v;

	snprintf(gen, sizeof gen, "%lld", t->seen_generation);
	res = tick_query(t, STMT_PROBE, params);
	if (res == NULL)
		return false;
	r->has_work = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	r->reload_requested = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
	r->paused = strcmp(PQgetvalue(res, 0, 2), "t") == 0;
	v = pgconn_value(res, 0, 3);
	r->generation = v ? atoll(v) : 0;
	r->dispatch = strcmp(PQgetvalue(res, 0, 4), "t") == 0;
	r->leader = -1;
	r->schedule_due = strcmp(PQgetvalue(res, 0, 5), "t") == 0;
	tick_keep_bound(t, pgconn_value(res, 0, 6));
	pgconn_clear(res);
	if (t->seen_generation < 0)
		t->seen_generation = r->generation;
	log_debug("probe", LOG_BOOL("has_work", r->has_work), LOG_BOOL("paused", r->paused),
			  LOG_BOOL("dispatch", r->dispatch));
	apply_probe(t, r);
	return true;
}

int
tick_fetch(struct Ticker *t, int limit, struct Job **out)
{
	char lim[16];
	const char *params[2] = {lim, t->bound};
	struct Job *head = NULL, **tail = &head;
	PGresult *res;
	int i, n;

	*out = NULL;
	snprintf(lim, sizeof lim, "%d", limit);
	res = pgconn_query(&t->pg, STMT_QUEUE_FETCH, params);
	if (res == NULL)
		return -1;
	n = PQntuples(res);
	for (i = 0; i < n; i++) {
		struct Job *j = job_new();

		if (j == NULL)
			break; /* the rest stays queued for the next round */
		j->id = atoll(PQgetvalue(res, i, 0));
		snprintf(j->action_type, sizeof j->action_type, "%s", PQgetvalue(res, i, 1));
		snprintf(j->channel, sizeof j->channel, "%s", PQgetvalue(res, i, 2));
		j->timeout_ms = atoi(PQgetvalue(res, i, 3));
		j->attempt = atoi(PQgetvalue(res, i, 4));
		/* sql: the channel's batch setting; a held kind that batches: always (kind.h) */
		j->batch =
			strcmp(PQgetvalue(res, i, 5), "t") == 0 || dest_kind_batches(dest_kind_find(j->action_type));
		j->event_id = atoll(PQgetvalue(res, i, 6));
		*tail = j;
		tail = &j->next;
	}
	pgconn_clear(res);
	*out = head;
	return i;
}

bool
tick_queue_stats(struct Ticker *t)
{
	struct QueueStat *rows;
	PGresult *res = pgconn_query(&t->pg, STMT_QUEUE_STATS, NULL);
	int i, n;

	if (res == NULL) {
		metrics_queue_update(NULL, 0, false);
		return false;
	}
	n = PQntuples(res);
	rows = calloc((size_t) (n > 0 ? n : 1), sizeof *rows);
	if (rows == NULL) {
		pgconn_clear(res);
		metrics_queue_update(NULL, 0, false);
		return true; /* out of memory: the connection is fine */
	}
	for (i = 0; i < n; i++) {
		struct QueueStat *q = &rows[i];

		snprintf(q->channel, sizeof q->channel, "%s", PQgetvalue(res, i, 0));
		snprintf(q->action_type, sizeof q->action_type, "%s", PQgetvalue(res, i, 1));
		q->queued = atoll(PQgetvalue(res, i, 2));
		q->due = atoll(PQgetvalue(res, i, 3));
		q->retrying = atoll(PQgetvalue(res, i, 4));
		q->oldest_due_age = atof(PQgetvalue(res, i, 5));
		q->paused = strcmp(PQgetvalue(res, i, 6), "t") == 0;
		snprintf(q->topic, sizeof q->topic, "%s", PQgetvalue(res, i, 7));
		q->failed = atoll(PQgetvalue(res, i, 8));
		q->failed_1h = atoll(PQgetvalue(res, i, 9));
	}
	pgconn_clear(res);
	metrics_queue_update(rows, n, true);
	free(rows);
	return true;
}
