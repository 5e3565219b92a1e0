/*
 * worker.c - one worker's run context and the running of its events: process_one() for a SQL
 * action, process_batch() for several (batch.h), the held transaction (held.c) of notify.c for
 * notify and of webhook.c for webhook. It is the one place that logs what became of a worker's
 * events; held.c sends what finishes them when their own statement could not.
 */
#include "worker.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "clock.h"
#include "held.h"
#include "kind.h"
#include "log.h"
#include "metrics.h"
#include "pgconn.h"
#include "redis_kind.h"
#include "rmq_kind.h"
#include "transport.h"
#include "utf8.h"

struct Worker {
	struct PgConn pg;
	int no;                            /* 1..workers */
	int cap;                           /* its cap on batches after lost connections (batch.h), 0: none */
	bool dropped;                      /* the run under way lost events with its connection */
	struct WorkerLink link;            /* the pool's: the slot's state, stopping, leadership */
	const struct WorkerSettings *ws;   /* the settings taken with the events under way */
	struct TransportCache *transports; /* transport sessions; made by the first notify or webhook event */
	unsigned long leader_session;      /* pg.sessions when pg_relay.is_leader was last published */
	int leader_published;              /* the value published then: 1 on, 0 off */
};

struct Worker *
worker_new(int no, const char *conninfo, const char *mode, struct WorkerLink link)
{
	struct Worker *w = calloc(1, sizeof *w);
	char label[32];

	if (w == NULL)
		return NULL;
	snprintf(label, sizeof label, "worker-%d", no);
	pgconn_init(&w->pg, label, conninfo, mode);
	w->no = no;
	w->link = link;
	return w;
}

void
worker_free(struct Worker *w)
{
	if (w == NULL)
		return;
	pgconn_destroy(&w->pg);
	free(w);
}

bool
worker_is_up(const struct Worker *w)
{
	return pgconn_is_up(&w->pg);
}

int
worker_batch_max(const struct Worker *w, int events_per_commit)
{
	return batch_cap_max(w->cap, events_per_commit);
}

bool
worker_session(struct Worker *w, long reconnect_max_ms, long *wait_ms)
{
	return pgconn_session(&w->pg, reconnect_max_ms, wait_ms);
}

void
worker_cancel(struct Worker *w)
{
	pgconn_cancel(&w->pg);
}

void
worker_close(struct Worker *w)
{
	transport_cache_free(w->transports);
	w->transports = NULL;
	redis_kind_thread_end(); /* worker_close runs on the worker's own thread */
	rmq_kind_thread_end();
	pgconn_close(&w->pg);
}

/*
 * log_replayed reports an event finished without an attempt: its queue row was in the queue again
 * after this node had finished it (a replication engine that applied its INSERT a second time, a
 * restore, a re-sync), and this node's pgrelay.log records its attempt already (log_id, "-" when
 * not known). Nothing ran, nothing was sent: the claim finished the row.
 */
static void
log_replayed(struct Worker *w, const struct Job *j, const char *notification, const char *log_id)
{
	log_warn_c(&w->pg, "event_replayed", LOG_EVENT(j), LOG_STR("channel", j->channel),
			   LOG_OPT_STR("notification", notification), LOG_STR("outcome", "replayed"),
			   LOG_STR("log_id", log_id ? log_id : "-"), LOG_STR("reason", "attempt_recorded_already"));
}

/*
 * statement_failed reports a statement of event j that failed at step, then makes the session
 * usable again: a lost session is logged as "reconnecting" and replaced (at once), anything else
 * is an attempt_failed that left the event unfinished, and the transaction it broke is rolled
 * back. The event is offered again later, unless the error persists: then held_abandon fails it
 * for good, so that no event loops; when its claim skips the event (paused, say, since the
 * attempt began), it is left as it is, and a second line (outcome=skipped) says so.
 */
static void
statement_failed(struct Worker *w, struct Job *j, const char *step, const char *notification)
{
	char reason[1200], sqlstate[6];

	if (w->pg.lost) {
		log_warn_c(&w->pg, "reconnecting", LOG_EVENT(j), LOG_OPT_STR("notification", notification),
				   LOG_STR("reason", "connection_lost"), LOG_STR("step", step),
				   LOG_STR("error", w->pg.error));
		pgconn_lost(&w->pg);
		w->dropped = true;
		atomic_store(w->link.state, W_DOWN);
		return;
	}
	log_error_c(&w->pg, "attempt_failed", LOG_EVENT(j), LOG_STR("channel", j->channel),
				LOG_OPT_STR("notification", notification), LOG_STR("outcome", "not_finished"),
				LOG_STR("step", step), LOG_STR("sqlstate", w->pg.sqlstate), LOG_STR("error", w->pg.error));
	snprintf(sqlstate, sizeof sqlstate, "%s", w->pg.sqlstate);
	snprintf(reason, sizeof reason, "the outcome of the attempt could not be recorded (%s: %s)", step,
			 w->pg.error);
	switch (held_abandon(&w->pg, j->id, reason, sqlstate)) {
	case OC_FAILED:
		j->outcome = OC_FAILED;
		log_error_c(&w->pg, "attempt_failed", LOG_EVENT(j), LOG_STR("channel", j->channel),
					LOG_OPT_STR("notification", notification), LOG_STR("outcome", "failed"),
					LOG_STR("step", step), LOG_STR("sqlstate", sqlstate), LOG_STR("error", reason));
		break;
	case OC_SKIPPED: /* paused, not due, claimed elsewhere or gone since: not ours to fail */
		log_warn_c(&w->pg, "attempt_failed", LOG_EVENT(j), LOG_STR("channel", j->channel),
				   LOG_OPT_STR("notification", notification), LOG_STR("outcome", "skipped"),
				   LOG_STR("step", step), LOG_STR("sqlstate", sqlstate),
				   LOG_STR("error", "not failed: the claim to fail it skipped it"));
		break;
	case OC_REPLAYED:
		j->outcome = OC_REPLAYED;
		log_replayed(w, j, notification, NULL);
		break;
	default: /* left queued: offered again later */
		break;
	}
}

/* What to fix after an attempt failed because of the set-up (kind CE_NONE: it did not). */
struct ConfigFix {
	enum ConfigError kind;
	const char *hint;
};

static const struct ConfigFix no_fix = {CE_NONE, NULL};

/*
 * log_attempt_failed reports an attempt the database recorded as failed (retried or not): its
 * SQLSTATE and, when it runs again, when ("-" for none). An attempt that failed because of the
 * set-up (fix) fails again until someone changes it: the line is at error level and says what
 * to change, from the first attempt on, and the event counts in the metric of such errors.
 */
static void
log_attempt_failed(struct Worker *w, struct Job *j, const char *notification, const char *profile,
				   const char *error, const char *sqlstate, const char *retry_at, struct ConfigFix fix)
{
	j->config_error = fix.kind;
	LOG_AT(fix.kind != CE_NONE ? LL_ERROR : LL_WARN, pgconn_label(&w->pg), "attempt_failed", LOG_EVENT(j),
		   LOG_STR("channel", j->channel), LOG_OPT_STR("notification", notification),
		   LOG_OPT_STR("profile", profile), LOG_STR("outcome", outcome_name(j->outcome)),
		   LOG_STR("sqlstate", sqlstate ? sqlstate : "-"), LOG_STR("retry_at", retry_at ? retry_at : "-"),
		   LOG_STR("error", error), LOG_OPT_STR("config_error", config_error_name(fix.kind)),
		   LOG_OPT_STR("hint", fix.hint));
}

/*
 * sql_fix: an attempt of sql event j failed with an error of the kind error_kind
 * (pgrelay.error_kind()); for a configuration error the database says which one, and what to fix
 * (pgrelay._config_hint), into hint. no_fix for any other kind, or when the question failed (the
 * line then goes without a hint; the event is recorded already).
 */
static struct ConfigFix
sql_fix(struct Worker *w, const struct Job *j, const char *error_kind, const char *sqlstate, char *hint,
		size_t len)
{
	const char *params[2] = {j->channel, sqlstate};
	struct ConfigFix fix = no_fix;
	PGresult *res;

	if (error_kind == NULL || strcmp(error_kind, "configuration") != 0)
		return fix;
	res = pgconn_query(&w->pg, STMT_CONFIG_HINT, params);
	if (res == NULL) {
		if (w->pg.lost) { /* nothing of the event is lost: the session is replaced before the next */
			pgconn_lost(&w->pg);
			atomic_store(w->link.state, W_DOWN);
		}
		return fix;
	}
	if (PQntuples(res) > 0 && pgconn_value(res, 0, 1) != NULL) {
		fix.kind = config_error_parse(pgconn_value(res, 0, 0));
		snprintf(hint, len, "%s", pgconn_value(res, 0, 1));
		fix.hint = hint;
	}
	pgconn_clear(res);
	return fix;
}

/* log_snoozed: the handler asked to run the event again at retry_at (SQLSTATE PGSNZ). */
static void
log_snoozed(struct Worker *w, const struct Job *j, const char *retry_at)
{
	log_debug_c(&w->pg, "snoozed", LOG_EVENT(j), LOG_STR("channel", j->channel),
				LOG_STR("retry_at", retry_at ? retry_at : "-"));
}

/*
 * record_foreign_cancel: process_one() failed with a cancel (57014) that the Processor did not
 * send, since it is not stopping: the handler raised it (dblink and postgres_fdw pass a remote
 * statement timeout on as 57014) or an admin cancelled the backend. process_one() re-raises any
 * cancel that is not its own timeout, so the transaction rolled back with nothing recorded, and
 * offered again the event would run again and again without ever spending an attempt. The
 * attempt is recorded in a transaction of its own as the handler's error (held_record_error):
 * retried with backoff until max_attempts, like any other. Returns false, with nothing recorded,
 * when that failed.
 */
static bool
record_foreign_cancel(struct Worker *w, struct Job *j)
{
	char error[1024], retry_at[40] = "-";

	snprintf(error, sizeof error, "%.*s", (int) utf8_prefix(w->pg.error, sizeof error - 1), w->pg.error);
	if (!held_record_error(&w->pg, j->id, error, "57014", &j->outcome, retry_at, sizeof retry_at))
		return false;
	log_attempt_failed(w, j, NULL, NULL, error, "57014", retry_at, no_fix);
	return true;
}

/* run_sql runs one SQL event through process_one() under the channel's timeout. */
static void
run_sql(struct Worker *w, struct Job *j)
{
	char idbuf[24];
	const char *params[1] = {idbuf};
	char hint[1024];
	PGresult *res;

	atomic_store(w->link.state, W_SQL);
	snprintf(idbuf, sizeof idbuf, "%lld", j->id);
	/* statement_timeout is how the channel's timeout reaches the handler (see process_one). */
	if (!pgconn_set_timeout(&w->pg, j->timeout_ms)) {
		j->outcome = OC_LOST;
		statement_failed(w, j, "statement_timeout", NULL);
		return;
	}
	res = pgconn_query(&w->pg, STMT_PROCESS_ONE, params);
	if (res == NULL)
		pgconn_distrust_prepared(&w->pg); /* the handler ran, and nothing dropped what it prepared */
	if (res == NULL && !w->pg.lost && !w->link.stopping() && strcmp(w->pg.sqlstate, "57014") == 0 &&
		record_foreign_cancel(w, j))
		return;
	if (res == NULL) {
		j->outcome = OC_LOST;
		statement_failed(w, j, "process_one", NULL);
		return;
	}
	j->outcome = outcome_parse(pgconn_value(res, 0, 0));
	if (outcome_failed(j->outcome))
		log_attempt_failed(
			w, j, NULL, NULL, pgconn_value(res, 0, 1), pgconn_value(res, 0, 2), pgconn_value(res, 0, 3),
			sql_fix(w, j, pgconn_value(res, 0, 5), pgconn_value(res, 0, 2), hint, sizeof hint));
	else if (j->outcome == OC_REPLAYED)
		log_replayed(w, j, NULL, pgconn_value(res, 0, 4));
	else if (j->outcome == OC_SNOOZED)
		log_snoozed(w, j, pgconn_value(res, 0, 3));
	pgconn_clear(res);
}

static void held_report(struct Worker *w, struct Job *j, const struct EventReport *rep);

/*
 * run_held runs one notify or webhook event's held transaction (held.c, with the steps of its kind
 * k) and reports what it came to; a webhook endpoint that answered 410 Gone paused its channel,
 * and says so at warn level.
 */
static void
run_held(struct Worker *w, struct Job *j, const struct DestKind *k)
{
	struct EventReport rep = {0};
	const char *notification = rep.notification; /* "": none (a webhook's, or not read yet) */

	if (w->transports == NULL)
		w->transports = transport_cache_new(); /* NULL: the kind reports out of memory */
	j->outcome = held_run(&w->pg, w->ws, j->id, w->transports, &rep, k);
	if (j->outcome == OC_LOST && rep.step != NULL) /* else finished, with an outcome we do not know */
		statement_failed(w, j, rep.step, notification);
	else
		held_report(w, j, &rep);
}

/*
 * held_report reports what a finished held attempt came to (held_run, held_run_many); a webhook
 * endpoint that answered 410 Gone paused its channel, and says so at warn level.
 */
static void
held_report(struct Worker *w, struct Job *j, const struct EventReport *rep)
{
	const char *notification = rep->notification; /* "": none */

	if (j->outcome == OC_LOST && rep->step != NULL) /* left unfinished in a batch: offered again */
		log_error_c(&w->pg, "attempt_failed", LOG_EVENT(j), LOG_STR("channel", j->channel),
					LOG_STR("outcome", "not_finished"), LOG_STR("step", rep->step));
	else if (j->outcome == OC_DEFERRED)
		log_debug_c(&w->pg, "deferred", LOG_EVENT(j), LOG_OPT_STR("notification", notification),
					LOG_STR("profile", rep->profile), LOG_MS("wait_ms", rep->wait_ms));
	else if (outcome_failed(j->outcome))
		log_attempt_failed(w, j, notification, rep->profile, rep->error,
						   rep->sqlstate[0] ? rep->sqlstate : NULL, rep->retry_at[0] ? rep->retry_at : NULL,
						   (struct ConfigFix){rep->config_error, rep->hint});
	else if (j->outcome == OC_REPLAYED)
		log_replayed(w, j, notification, NULL);
	if (rep->gone && j->outcome != OC_LOST)
		log_warn_c(&w->pg, "webhook_gone", LOG_EVENT(j), LOG_STR("channel", j->channel),
				   LOG_STR("endpoint", rep->endpoint), LOG_INT("status", rep->http_status),
				   LOG_STR("action", "channel_paused"));
}

/*
 * unknown_action_first_time: an action type this Processor cannot run is reported once per
 * process at warn level (its rows come back every tick), then only at debug level.
 */
static bool
unknown_action_first_time(const char *action_type)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static char seen[16][32];
	static int nseen;
	bool first = true;
	int i;

	pthread_mutex_lock(&mu);
	for (i = 0; i < nseen; i++)
		if (strcmp(seen[i], action_type) == 0)
			first = false;
	if (first && nseen < 16)
		snprintf(seen[nseen++], sizeof seen[0], "%s", action_type);
	pthread_mutex_unlock(&mu);
	return first;
}

/*
 * publish_leader: in leader mode the worker's session carries this node's leadership as the
 * setting pg_relay.is_leader, which _queue_claim() checks. It is published between events, never
 * during one (process_one() puts the value it began with back after each handler), on the first
 * event of each new session and after every change; the value is read now, not when the event
 * was fetched, so an event fetched as leader is claimed as what this node is at claim time; and on
 * a session opened after the last decision it is off until the next one (pool_leader).
 */
static bool
publish_leader(struct Worker *w)
{
	int leader = w->link.leader(w->pg.opened_us);
	const char *value[1];

	if (leader < 0 || (w->pg.sessions == w->leader_session && leader == w->leader_published))
		return true;
	value[0] = leader ? "on" : "off";
	if (!pgconn_exec(&w->pg, STMT_SET_LEADER, value))
		return false;
	w->leader_session = w->pg.sessions;
	w->leader_published = leader;
	return true;
}

/*
 * leader_failed: publishing this node's leadership failed, so nothing of event j was started: it
 * stays queued whatever the error (never failed for it).
 */
static void
leader_failed(struct Worker *w, struct Job *j)
{
	j->outcome = OC_LOST;
	if (w->pg.lost)
		statement_failed(w, j, "is_leader", NULL);
	else
		log_error_c(&w->pg, "attempt_failed", LOG_EVENT(j), LOG_STR("channel", j->channel),
					LOG_STR("outcome", "not_finished"), LOG_STR("step", "is_leader"),
					LOG_STR("sqlstate", w->pg.sqlstate), LOG_STR("error", w->pg.error));
}

/*
 * event_done: the trace line of each event of a run (one event, or a batch of n in one transaction,
 * whose duration_us is the whole batch's).
 */
static void
event_done(struct Worker *w, struct Job *jobs, int n, long long t0)
{
	long long us = now_us() - t0;
	struct Job *j;

	for (j = jobs; j; j = j->next) {
		/* an event of a batch counts its share of the batch's transaction (the metrics' histogram) */
		j->duration_us = us / n;
		log_trace_c(&w->pg, "event_done", LOG_EVENT(j), LOG_STR("channel", j->channel),
					LOG_STR("outcome", outcome_name(j->outcome)), LOG_INT("duration_us", us),
					LOG_INT("events", n));
	}
}

/* run_job dispatches on the action type; an action this Processor does not know is skipped. */
static void
run_job(struct Worker *w, struct Job *j)
{
	const struct DestKind *k = dest_kind_find(j->action_type);
	long long t0 = now_us();

	if (!publish_leader(w))
		leader_failed(w, j);
	else if (k != NULL && k->held) {
		atomic_store(w->link.state, k->state);
		run_held(w, j, k);
	} else if (k != NULL)
		run_sql(w, j);
	else {
		/* Its rows come back every tick: warn once per process, then only at debug level. */
		LOG_AT(unknown_action_first_time(j->action_type) ? LL_WARN : LL_DEBUG, pgconn_label(&w->pg),
			   "attempt_failed", LOG_EVENT(j), LOG_STR("channel", j->channel), LOG_STR("outcome", "skipped"),
			   LOG_STRF("error", "unknown action type %s", j->action_type));
		j->outcome = OC_SKIPPED;
	}
	event_done(w, j, 1, t0);
}

/*
 * batch_lost: the batch statement failed and its transaction rolled back, so none of its events
 * was finished; they are offered again later. One line for the batch: a lost session
 * ("reconnecting", then replaced at once) or a cancel while stopping.
 */
static void
batch_lost(struct Worker *w, struct Job *jobs, int n, const char *step)
{
	struct Job *j;

	for (j = jobs; j; j = j->next)
		j->outcome = OC_LOST;
	if (w->pg.lost) {
		log_warn_c(&w->pg, "reconnecting", LOG_EVENT(jobs), LOG_INT("events", n),
				   LOG_STR("reason", "connection_lost"), LOG_STR("step", step),
				   LOG_STR("error", w->pg.error));
		pgconn_lost(&w->pg);
		w->dropped = true;
		atomic_store(w->link.state, W_DOWN);
		return;
	}
	log_error_c(&w->pg, "attempt_failed", LOG_EVENT(jobs), LOG_STR("channel", jobs->channel),
				LOG_INT("events", n), LOG_STR("outcome", "not_finished"), LOG_STR("step", step),
				LOG_STR("sqlstate", w->pg.sqlstate), LOG_STR("error", w->pg.error));
	pgconn_rollback(&w->pg);
}

/*
 * batch_results gives each event of the batch its row of process_batch()'s result (one row per
 * id, in the order of the ids) and reports its failed attempts. An event without its row (which
 * process_batch() never does) is left as lost: offered again.
 */
static void
batch_results(struct Worker *w, struct Job *jobs, PGresult *res)
{
	int i = 0, rows = PQntuples(res);
	char hint[1024];
	struct Job *j;

	for (j = jobs; j; j = j->next, i++) {
		const char *id = i < rows ? pgconn_value(res, i, 0) : NULL;

		if (id == NULL || atoll(id) != j->id) {
			j->outcome = OC_LOST;
			continue;
		}
		j->outcome = outcome_parse(pgconn_value(res, i, 1));
		if (outcome_failed(j->outcome))
			log_attempt_failed(
				w, j, NULL, NULL, pgconn_value(res, i, 2), pgconn_value(res, i, 3), pgconn_value(res, i, 4),
				sql_fix(w, j, pgconn_value(res, i, 6), pgconn_value(res, i, 3), hint, sizeof hint));
		else if (j->outcome == OC_REPLAYED)
			log_replayed(w, j, NULL, pgconn_value(res, i, 5));
		else if (j->outcome == OC_SNOOZED)
			log_snoozed(w, j, pgconn_value(res, i, 4));
	}
}

/*
 * run_batch_statement runs the sql events of jobs in one transaction, process_batch(), under the
 * statement timeout of batch_timeout_ms. Returns false, with nothing finished, when the statement
 * failed in a way that running the events one per transaction may get past.
 */
static bool
run_batch_statement(struct Worker *w, struct Job *jobs, int n)
{
	struct Buf ids = BUF_INIT;
	const char *params[1];
	PGresult *res = NULL;

	atomic_store(w->link.state, W_SQL);
	if (batch_ids(jobs, &ids) && pgconn_set_timeout(&w->pg, batch_timeout_ms(jobs->timeout_ms))) {
		params[0] = ids.data;
		res = pgconn_query(&w->pg, STMT_PROCESS_BATCH, params);
	}
	buf_free(&ids);
	if (res != NULL) {
		batch_results(w, jobs, res);
		pgconn_clear(res);
		return true;
	}
	pgconn_distrust_prepared(&w->pg); /* handlers ran, and nothing dropped what they prepared */
	if (w->pg.lost || w->link.stopping()) {
		batch_lost(w, jobs, n, "process_batch");
		return true;
	}
	/*
	 * Anything else (a timeout that could not be told from another cancel, a cancel outside a
	 * handler, a failure to record an outcome, out of memory here) rolled the whole batch back:
	 * each event then gets a transaction of its own, where its timeout is exact and a failure is
	 * its own.
	 */
	log_debug_c(&w->pg, "batch_split", LOG_EVENT(jobs), LOG_INT("events", n),
				LOG_STR("sqlstate", w->pg.sqlstate), LOG_STR("error", w->pg.error));
	pgconn_rollback(&w->pg);
	return false;
}

/*
 * run_held_many runs several events of one channel of a kind that batches in one held
 * transaction (held_run_many) and reports each. Returns false, with nothing finished and the
 * transaction rolled back, when a statement failed in a way that running the events one per
 * transaction may get past; a lost session or a stop is the batch's outcome (offered again).
 */
static bool
run_held_many(struct Worker *w, struct Job *jobs, int n, const struct DestKind *k)
{
	long long *ids = calloc((size_t) n, sizeof *ids);
	struct EventReport *reps = calloc((size_t) n, sizeof *reps);
	enum Outcome *ocs = calloc((size_t) n, sizeof *ocs);
	const char *step = "claim";
	struct Job *j;
	int i = 0;

	if (w->transports == NULL)
		w->transports = transport_cache_new();
	if (ids != NULL && reps != NULL && ocs != NULL) {
		for (j = jobs; j; j = j->next)
			ids[i++] = j->id;
		atomic_store(w->link.state, k->state);
		if (held_run_many(&w->pg, w->ws, ids, n, w->transports, reps, ocs, k, &step) == OC_OK)
			for (i = 0, j = jobs; j; j = j->next, i++) {
				j->outcome = ocs[i];
				held_report(w, j, &reps[i]);
			}
	}
	free(ids);
	free(reps);
	free(ocs);
	if (step == NULL)
		return true;
	if (w->pg.lost || w->link.stopping()) {
		batch_lost(w, jobs, n, step);
		return true;
	}
	log_debug_c(&w->pg, "batch_split", LOG_EVENT(jobs), LOG_INT("events", n), LOG_STR("step", step),
				LOG_STR("sqlstate", w->pg.sqlstate), LOG_STR("error", w->pg.error));
	pgconn_rollback(&w->pg);
	return false;
}

/*
 * run_batch runs several sql events (batch.h), or several events of one channel of a held kind
 * that batches: in one transaction, or one by one when that fails.
 */
static void
run_batch(struct Worker *w, struct Job *jobs)
{
	const struct DestKind *k = dest_kind_find(jobs->action_type);
	long long t0 = now_us();
	int n = job_count(jobs);
	struct Job *j;

	if (!publish_leader(w)) {
		for (j = jobs; j; j = j->next)
			leader_failed(w, j);
	} else if (dest_kind_batches(k)) {
		if (!run_held_many(w, jobs, n, k))
			for (j = jobs; j; j = j->next)
				run_held(w, j, k);
	} else if (!run_batch_statement(w, jobs, n)) {
		for (j = jobs; j; j = j->next)
			run_sql(w, j);
	}
	event_done(w, jobs, n, t0);
}

/*
 * fresh_session: a connection that idled while the server restarted is dead, but libpq only finds
 * out on its next statement, which would then fail and leave the event for a later round. The
 * server has said so already (it sends a termination message, then closes), so look before the
 * event runs and reconnect at once when the session is gone: no round trip when it is fine.
 */
static void
fresh_session(struct Worker *w)
{
	long wait_ms;

	if (pgconn_alive(&w->pg))
		return;
	log_warn_c(&w->pg, "reconnecting", LOG_STR("reason", "stale_connection"), LOG_STR("error", w->pg.error));
	pgconn_lost(&w->pg);
	if (!pgconn_session(&w->pg, w->ws->reconnect_max_ms, &wait_ms))
		atomic_store(w->link.state, W_DOWN); /* the event then fails as lost and is offered again */
}

/*
 * adapt_cap: a run whose events were lost with the connection halves the worker's cap on its
 * batches, and a run of the cap's size that kept it raises the cap by one (batch.h). A change of
 * the batch size is logged (batch_size: down, and back to --events-per-commit, at info; each step
 * up in between at debug) and shown by the metric pgrelay_events_per_commit.
 */
static void
adapt_cap(struct Worker *w, const struct Job *jobs, int max)
{
	int was, cap, size;

	if (w->cap == 0 && !w->dropped)
		return; /* the connection holds and nothing is capped: batches stay as they are */
	was = batch_cap_max(w->cap, max);
	cap = w->dropped ? batch_cap_lost(w->cap, max) : batch_cap_done(w->cap, max, job_count(jobs));
	size = batch_cap_max(cap, max);
	if (cap != w->cap)
		metrics_batch_cap(w->no, cap);
	w->cap = cap;
	if (size == was)
		return;
	if (w->dropped)
		log_info_c(&w->pg, "batch_size", LOG_INT("events_per_commit", size),
				   LOG_STR("reason", "connection_lost"));
	else
		LOG_AT(cap == 0 ? LL_INFO : LL_DEBUG, pgconn_label(&w->pg), "batch_size",
			   LOG_INT("events_per_commit", size), LOG_STR("reason", cap == 0 ? "recovered" : "committed"));
}

void
worker_run(struct Worker *w, struct Job *jobs, const struct WorkerSettings *ws)
{
	w->ws = ws;
	w->dropped = false;
	fresh_session(w);
	if (jobs->next == NULL)
		run_job(w, jobs);
	else
		run_batch(w, jobs);
	adapt_cap(w, jobs, ws->events_per_commit);
	w->ws = NULL;
}
