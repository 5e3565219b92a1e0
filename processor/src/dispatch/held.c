/*
 * held.c - every statement that finishes a claimed event, in one sequence whatever the event:
 *
 *   [BEGIN; claim;] _finish_held (the log row, the retry decision, the row finished); [the kind's
 *   record;] COMMIT
 *
 * The finish is one call on the row the transaction holds: it locks the row once and returns what
 * the log row says, for the kind's record that needs it (set_status), which goes with COMMIT in
 * one round trip. A webhook's 410 is a parameter of the finish. A notify or webhook event runs it
 * inside its held transaction (held_run), a SQL event whose process_one() could not record its
 * attempt in a transaction of its own (held_abandon, held_record_error).
 */
#include "held.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "statements.h"
#include "utf8.h"

/* Each statement of the transaction (claim, log row, status, finish, commit) may take this long. */
#define HELD_STATEMENT_MS 60000L
/* The transaction may stay idle this much longer than the delivery, for the steps around it. */
#define HELD_IDLE_GRACE_MS 60000L

/* One attempt as _finish_held records it. */
struct LogRow {
	const char *id;
	const char *result;   /* attempt_result_name(), or "error": a handler's error */
	const char *error;    /* NULL when none */
	const char *sqlstate; /* NULL when none */
	const char *started;  /* ISO 8601, or NULL */
	const char *detail;   /* JSON for pgrelay.log, or NULL */
	long retry_after_s;   /* the server's Retry-After, -1 when none */
	long gone_status;     /* a webhook's endpoint answered so (410): marked gone; 0 when not */
};

/* The text of the numbers among the parameters of STMT_FINISH. */
struct LogRowText {
	char retry_after[32];
	char gone_status[24];
};

/* log_row_params fills the parameters of STMT_FINISH, the numbers written in t. */
static void
log_row_params(const struct LogRow *row, const char *params[8], struct LogRowText *t)
{
	params[0] = row->id;
	params[1] = row->result;
	params[2] = row->error;
	params[3] = row->sqlstate;
	params[4] = row->started;
	params[5] = row->detail;
	params[6] = NULL;
	params[7] = NULL;
	if (row->retry_after_s >= 0) {
		snprintf(t->retry_after, sizeof t->retry_after, "%ld", row->retry_after_s);
		params[6] = t->retry_after;
	}
	if (row->gone_status > 0) {
		snprintf(t->gone_status, sizeof t->gone_status, "%ld", row->gone_status);
		params[7] = t->gone_status;
	}
}

/*
 * finish finishes the claimed row in one call (_finish_held: the log row, the retry decision, the
 * row deleted and its retry or failure recorded), then sends the kind's record (record, when not
 * NULL; it gets what the finish returned) and COMMIT in one round trip: the first failure stops
 * the rest. Returns the outcome the log row gave the event, with its error in rep, or OC_LOST with
 * the failed step in rep.
 */
static enum Outcome
finish(struct PgConn *pg, const struct LogRow *row, HeldRecord record, void *arg, struct EventReport *rep)
{
	struct HeldStep step = {STMT_COUNT, NULL, "commit"};
	const char *params[8];
	struct PgPipeStmt steps[2];
	struct LogRowText text;
	enum Outcome oc;
	PGresult *res;
	bool made;
	int n = 0;

	log_row_params(row, params, &text);
	res = pgconn_query(pg, STMT_FINISH, params);
	if (res == NULL)
		return held_lost(rep, "finish");
	oc = outcome_parse(pgconn_value(res, 0, 0));
	snprintf(rep->retry_at, sizeof rep->retry_at, "%s",
			 pgconn_value(res, 0, 1) ? pgconn_value(res, 0, 1) : "");
	made = record == NULL || record(arg, oc, pgconn_value(res, 0, 1), &step);
	pgconn_clear(res);
	if (!made)
		return held_lost(rep, step.lost_as);
	if (step.id != STMT_COUNT)
		steps[n++] = (struct PgPipeStmt){step.id, step.values};
	steps[n++] = (struct PgPipeStmt){STMT_COMMIT, NULL};
	if (!pgconn_pipeline(pg, steps, n))
		return held_lost(rep, step.lost_as);
	snprintf(rep->error, sizeof rep->error, "%s", row->error ? row->error : "");
	utf8_trim_cut(rep->error);
	return oc;
}

/*
 * begin opens the held transaction: its idle and statement timeouts and the savepoint a failing
 * fetch rolls back to, in one round trip.
 */
static bool
begin(struct PgConn *pg, long max_delivery_ms)
{
	char sql[STMT_SCRIPT_MAX];

	statement_begin_held(sql, sizeof sql, max_delivery_ms + HELD_IDLE_GRACE_MS);
	return pgconn_set_timeout(pg, HELD_STATEMENT_MS) && pgconn_script(pg, sql);
}

enum Outcome
held_run(struct PgConn *pg, const struct WorkerSettings *ws, long long id, struct TransportCache *tc,
		 struct EventReport *rep, HeldRun run)
{
	struct Held h;
	enum Outcome oc;

	memset(&h, 0, sizeof h);
	h.pg = pg;
	h.ws = ws;
	h.tc = tc;
	h.rep = rep;
	snprintf(h.id, sizeof h.id, "%lld", id);
	if (!begin(pg, ws->max_delivery_time_ms))
		oc = held_lost(rep, "begin");
	else
		oc = run(&h);
	return oc;
}

enum Outcome
held_lost(struct EventReport *rep, const char *step)
{
	rep->step = step;
	return OC_LOST;
}

PGresult *
held_claim(struct Held *h, enum StmtId claim, enum StmtId alone, char *err, size_t errlen)
{
	const char *params[1] = {h->id};
	PGresult *res;

	if (err != NULL)
		err[0] = '\0';
	res = pgconn_query(h->pg, claim, params);
	if (res != NULL || h->pg->lost || alone == STMT_COUNT)
		return res;
	snprintf(err, errlen, "fetch failed: %.*s", (int) utf8_prefix(h->pg->error, 900), h->pg->error);
	utf8_trim_cut(err);
	if (!pgconn_exec(h->pg, STMT_ROLLBACK_FETCH, NULL))
		return NULL;
	return pgconn_query(h->pg, alone, params);
}

bool
held_claimed(struct Held *h, enum HeldClaim c, enum Outcome *oc)
{
	switch (c) {
	case HC_CLAIMED:
		iso8601_now(h->started, sizeof h->started);
		return true;
	case HC_SKIPPED:
		*oc = pgconn_exec(h->pg, STMT_ROLLBACK, NULL) ? OC_SKIPPED : held_lost(h->rep, "rollback");
		return false;
	case HC_REPLAYED: /* the claim finished the row; committing it is all there is to do */
		*oc = pgconn_exec(h->pg, STMT_COMMIT, NULL) ? OC_REPLAYED : held_lost(h->rep, "commit");
		return false;
	case HC_FAILED:
		break;
	}
	*oc = held_lost(h->rep, "claim");
	return false;
}

void
held_config_error(struct Held *h, enum ConfigError kind, const char *sqlstate, const char *hint)
{
	h->rep->config_error = kind;
	snprintf(h->rep->sqlstate, sizeof h->rep->sqlstate, "%s", sqlstate);
	h->rep->hint = hint;
}

enum Outcome
held_finish(struct Held *h, const struct HeldResult *r)
{
	const char *sqlstate = h->rep->sqlstate[0] != '\0' ? h->rep->sqlstate : NULL;
	struct LogRow row = {h->id,
						 attempt_result_name(r->result),
						 r->error,
						 sqlstate,
						 h->started,
						 r->detail,
						 r->retry_after_s,
						 r->gone_status};

	return finish(h->pg, &row, r->record, r->arg, h->rep);
}

enum Outcome
held_defer(struct Held *h, long wait_ms)
{
	char ms[32];
	const char *params[2] = {h->id, ms};

	snprintf(ms, sizeof ms, "%ld", wait_ms);
	if (!pgconn_exec(h->pg, STMT_DEFER, params))
		return held_lost(h->rep, "defer");
	if (!pgconn_exec(h->pg, STMT_COMMIT, NULL))
		return held_lost(h->rep, "commit");
	return OC_DEFERRED;
}

/*
 * error_persists: a statement failed with an error that comes back however often the event is
 * offered again (bad data, a constraint, a bug), as opposed to one that passes by itself: a lost
 * session, a deadlock or serialization failure, a shutdown or a cancel, lack of resources, a lock
 * timeout. An error without a SQLSTATE is the Processor's own (out of memory): it passes.
 */
static bool
error_persists(const char *sqlstate)
{
	static const char *const passing[] = {"08", "40", "53", "55", "57", "58"};
	size_t i;

	if (sqlstate[0] == '\0')
		return false;
	for (i = 0; i < sizeof passing / sizeof passing[0]; i++)
		if (strncmp(sqlstate, passing[i], 2) == 0)
			return false;
	return true;
}

/*
 * fail_unrecordable fails event id for good with reason, in a transaction of its own and one
 * round trip: claimed again, finished with its log row (_finish_held), committed. False (and pg
 * rolled back) when even that failed.
 */
static bool
fail_unrecordable(struct PgConn *pg, const char *id, const char *reason, const char *sqlstate)
{
	struct LogRow row = {id, attempt_result_name(AR_PERMANENT), reason, sqlstate, NULL, NULL, -1, 0};
	const char *params[8], *ids[1] = {id};
	struct PgPipeStmt steps[4] = {
		{STMT_BEGIN, NULL}, {STMT_CLAIM, ids}, {STMT_FINISH, params}, {STMT_COMMIT, NULL}};
	struct LogRowText text;

	log_row_params(&row, params, &text);
	if (pgconn_pipeline(pg, steps, 4))
		return true;
	pgconn_rollback(pg);
	return false;
}

bool
held_abandon(struct PgConn *pg, long long id, const char *reason, const char *sqlstate)
{
	char ids[24];

	pgconn_rollback(pg);
	if (!error_persists(sqlstate))
		return false;
	snprintf(ids, sizeof ids, "%lld", id);
	return fail_unrecordable(pg, ids, reason, sqlstate);
}

/* The record of held_record_error: no statement of its own; it keeps when the event runs again. */
struct RetryAt {
	char *buf;
	size_t len;
};

static bool
keep_retry_at(void *arg, enum Outcome oc, const char *next_attempt_at, struct HeldStep *step)
{
	struct RetryAt *ra = arg;

	(void) oc;
	(void) step;
	if (next_attempt_at != NULL)
		snprintf(ra->buf, ra->len, "%s", next_attempt_at);
	return true;
}

bool
held_record_error(struct PgConn *pg, long long id, const char *error, const char *sqlstate, enum Outcome *oc,
				  char *retry_at, size_t retry_at_len)
{
	char ids[24];
	const char *params[1] = {ids};
	struct RetryAt ra = {retry_at, retry_at_len};
	struct LogRow row = {ids, "error", error, sqlstate, NULL, NULL, -1, 0};
	struct EventReport rep;
	enum Outcome o = OC_LOST;
	PGresult *res;
	bool claimed;

	snprintf(ids, sizeof ids, "%lld", id);
	memset(&rep, 0, sizeof rep);
	pgconn_rollback(pg);
	if (!pgconn_exec(pg, STMT_BEGIN, NULL))
		return false;
	res = pgconn_query(pg, STMT_CLAIM, params);
	claimed = res != NULL && PQntuples(res) > 0;
	pgconn_clear(res);
	if (claimed)
		o = finish(pg, &row, keep_retry_at, &ra, &rep);
	if (o == OC_LOST) {
		pgconn_rollback(pg);
		return false;
	}
	*oc = o;
	return true;
}
