/*
 * held.c - every statement that finishes a claimed event, in one sequence whatever the event:
 *
 *   [BEGIN; claim;] _finish_held (the log row, the retry decision, the row finished); [the kind's
 *   record;] COMMIT
 *
 * A notify or webhook event runs it inside its held transaction (held_run): claim, read (the
 * kind's), deliver (the kind's: it classifies what came of it), finish, then the kind's record
 * (set_status) with the COMMIT in one round trip. The kind's steps are its entry in the table of
 * kinds (kind.h); they send no statement and call nothing here. The finish is one call on the row
 * the transaction holds: it locks the row once and returns what the log row says, for the record;
 * a webhook's 410 is a parameter of it. A SQL event whose process_one() could not record its
 * attempt is finished in a transaction of its own (held_abandon, held_record_error).
 */
#include "held.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
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

/* lost names the step that failed in the report and returns OC_LOST (see held_run). */
static enum Outcome
lost(struct EventReport *rep, const char *step)
{
	rep->step = step;
	return OC_LOST;
}

/*
 * finish finishes the claimed row in one call (_finish_held: the log row, the retry decision, the
 * row deleted and its retry or failure recorded), then sends the record of kind k (when it has
 * one; NULL for none: it gets what the finish returned) and COMMIT in one round trip: the first
 * failure stops the rest. Returns the outcome the log row gave the event, with its error in rep,
 * or OC_LOST with the failed step in rep.
 */
static enum Outcome
finish(struct PgConn *pg, const struct LogRow *row, const struct DestKind *k, void *st,
	   struct EventReport *rep)
{
	struct RecordStmt step = {STMT_COUNT, NULL, "commit"};
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
		return lost(rep, "finish");
	oc = outcome_parse(pgconn_value(res, 0, 0));
	snprintf(rep->retry_at, sizeof rep->retry_at, "%s",
			 pgconn_value(res, 0, 1) ? pgconn_value(res, 0, 1) : "");
	made = k == NULL || k->record == NULL || k->record(st, oc, pgconn_value(res, 0, 1), &step);
	pgconn_clear(res);
	if (!made)
		return lost(rep, step.lost_as);
	if (step.id != STMT_COUNT)
		steps[n++] = (struct PgPipeStmt){step.id, step.values};
	steps[n++] = (struct PgPipeStmt){STMT_COMMIT, NULL};
	if (!pgconn_pipeline(pg, steps, n))
		return lost(rep, step.lost_as);
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

/* One event in its held transaction. */
struct Held {
	struct PgConn *pg;
	const struct DestKind *k;
	void *st; /* the kind's state */
	struct Attempt a;
};

/*
 * claim runs the kind's claim, whose one row is the event and what comes with it (no row when the
 * claim failed: gone, locked, not due), and lets the kind read it. When the kind asks first whether
 * its claim may fetch, and it may not, the row is claimed alone. A claim that fetches and raises
 * is rolled back to the savepoint begin() made and the row claimed again alone: the fetch's error
 * is then the kind's to record as a transient failure rather than an aborted transaction.
 */
static enum HeldClaim
claim(struct Held *h)
{
	const struct DestKind *k = h->k;
	const char *params[1] = {h->a.id};
	char err[1024] = "";
	PGresult *res;
	bool trusted = true;

	if (k->trusted != STMT_COUNT) {
		res = pgconn_query(h->pg, k->trusted, NULL);
		if (res == NULL)
			return HC_FAILED;
		trusted = PQntuples(res) > 0 && strcmp(pgconn_value(res, 0, 0), "t") == 0;
		pgconn_clear(res);
	}
	res = pgconn_query(h->pg, trusted ? k->claim : k->alone, params);
	if (res == NULL && !h->pg->lost && trusted && k->alone != STMT_COUNT) {
		snprintf(err, sizeof err, "fetch failed: %.*s", (int) utf8_prefix(h->pg->error, 900), h->pg->error);
		utf8_trim_cut(err);
		if (pgconn_exec(h->pg, STMT_ROLLBACK_FETCH, NULL))
			res = pgconn_query(h->pg, k->alone, params);
	}
	return k->read(h->st, res, trusted, err);
}

/*
 * claimed acts on the claim: a skipped event is rolled back (OC_SKIPPED), a replayed one committed
 * (OC_REPLAYED), a failed claim is OC_LOST. Returns true when the event is claimed and its attempt
 * starts now; otherwise false with the event's outcome in *oc.
 */
static bool
claimed(struct Held *h, enum HeldClaim c, enum Outcome *oc)
{
	switch (c) {
	case HC_CLAIMED:
		iso8601_now(h->a.started, sizeof h->a.started);
		return true;
	case HC_SKIPPED:
		*oc = pgconn_exec(h->pg, STMT_ROLLBACK, NULL) ? OC_SKIPPED : lost(h->a.rep, "rollback");
		return false;
	case HC_REPLAYED: /* the claim finished the row; committing it is all there is to do */
		*oc = pgconn_exec(h->pg, STMT_COMMIT, NULL) ? OC_REPLAYED : lost(h->a.rep, "commit");
		return false;
	case HC_FAILED:
		break;
	}
	*oc = lost(h->a.rep, "claim");
	return false;
}

/*
 * defer moves the claimed event past a rate limit's window, wait_ms, and commits: no attempt
 * spent, no log row. Returns OC_DEFERRED, or OC_LOST.
 */
static enum Outcome
defer(struct Held *h, long wait_ms)
{
	char ms[32];
	const char *params[2] = {h->a.id, ms};

	snprintf(ms, sizeof ms, "%ld", wait_ms);
	if (!pgconn_exec(h->pg, STMT_DEFER, params))
		return lost(h->a.rep, "defer");
	if (!pgconn_exec(h->pg, STMT_COMMIT, NULL))
		return lost(h->a.rep, "commit");
	return OC_DEFERRED;
}

/* sequence: claim, read, deliver, then defer or finish (with the kind's record) and commit. */
static enum Outcome
sequence(struct Held *h)
{
	struct EventReport *rep = h->a.rep;
	struct Verdict v = {NULL, 0, AR_TRANSIENT, NULL, NULL, -1, 0};
	struct LogRow row;
	enum Outcome oc;

	if (!claimed(h, claim(h), &oc))
		return oc;
	h->k->deliver(h->st, &v);
	if (v.lost != NULL)
		return lost(rep, v.lost);
	if (v.defer_ms > 0)
		return defer(h, v.defer_ms);
	row = (struct LogRow){h->a.id,         attempt_result_name(v.result),
						  v.error,         rep->sqlstate[0] != '\0' ? rep->sqlstate : NULL,
						  h->a.started,    v.detail,
						  v.retry_after_s, v.gone_status};
	return finish(h->pg, &row, h->k, h->st, rep);
}

enum Outcome
held_run(struct PgConn *pg, const struct WorkerSettings *ws, long long id, struct TransportCache *tc,
		 struct EventReport *rep, const struct DestKind *k)
{
	struct Held h;
	enum Outcome oc;

	memset(&h, 0, sizeof h);
	h.pg = pg;
	h.k = k;
	h.a.ws = ws;
	h.a.tc = tc;
	h.a.rep = rep;
	snprintf(h.a.id, sizeof h.a.id, "%lld", id);
	if (!begin(pg, ws->max_delivery_time_ms))
		return lost(rep, "begin");
	h.st = k->open(&h.a);
	if (h.st == NULL)
		return lost(rep, "claim"); /* out of memory before the claim */
	oc = sequence(&h);
	k->close(h.st);
	return oc;
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
 * reclaim begins a transaction of its own on pg and claims event id again in it, as held_run's
 * claim does (a paused channel, a row not due, claimed by another session or gone is skipped):
 * OC_OK when this transaction holds the row, for the caller to finish. Otherwise the transaction
 * is over and the row left as the claim found it: OC_SKIPPED (rolled back), OC_REPLAYED (the
 * claim finished a replayed row: committed), OC_LOST when a statement failed (rolled back).
 */
static enum Outcome
reclaim(struct PgConn *pg, const char *id)
{
	const char *params[1] = {id};
	enum Outcome oc = OC_LOST;
	PGresult *res;

	if (!pgconn_exec(pg, STMT_BEGIN, NULL)) {
		pgconn_rollback(pg);
		return OC_LOST;
	}
	res = pgconn_query(pg, STMT_CLAIM, params);
	if (res != NULL && PQntuples(res) == 0)
		oc = OC_SKIPPED;
	else if (res != NULL)
		oc = strcmp(pgconn_value(res, 0, 3), "t") == 0 ? OC_REPLAYED : OC_OK;
	pgconn_clear(res);
	if (oc == OC_OK || (oc == OC_REPLAYED && pgconn_exec(pg, STMT_COMMIT, NULL)))
		return oc;
	pgconn_rollback(pg);
	return oc == OC_SKIPPED ? OC_SKIPPED : OC_LOST;
}

/*
 * fail_unrecordable fails event id for good with reason, in a transaction of its own: claimed
 * again (reclaim), then finished with its log row (_finish_held) and committed in one round trip.
 * Returns OC_FAILED; or what reclaim returned when it did not claim the row (nothing failed); or
 * OC_LOST (pg rolled back) when the finish failed.
 */
static enum Outcome
fail_unrecordable(struct PgConn *pg, const char *id, const char *reason, const char *sqlstate)
{
	struct LogRow row = {id, attempt_result_name(AR_PERMANENT), reason, sqlstate, NULL, NULL, -1, 0};
	const char *params[8];
	struct PgPipeStmt steps[2] = {{STMT_FINISH, params}, {STMT_COMMIT, NULL}};
	struct LogRowText text;
	enum Outcome oc = reclaim(pg, id);

	if (oc != OC_OK)
		return oc;
	log_row_params(&row, params, &text);
	if (pgconn_pipeline(pg, steps, 2))
		return OC_FAILED;
	pgconn_rollback(pg);
	return OC_LOST;
}

enum Outcome
held_abandon(struct PgConn *pg, long long id, const char *reason, const char *sqlstate)
{
	char ids[24];

	pgconn_rollback(pg);
	if (!error_persists(sqlstate))
		return OC_LOST;
	snprintf(ids, sizeof ids, "%lld", id);
	return fail_unrecordable(pg, ids, reason, sqlstate);
}

bool
held_record_error(struct PgConn *pg, long long id, const char *error, const char *sqlstate, enum Outcome *oc,
				  char *retry_at, size_t retry_at_len)
{
	char ids[24];
	struct LogRow row = {ids, "error", error, sqlstate, NULL, NULL, -1, 0};
	struct EventReport rep;
	enum Outcome o;

	snprintf(ids, sizeof ids, "%lld", id);
	memset(&rep, 0, sizeof rep);
	pgconn_rollback(pg);
	if (reclaim(pg, ids) != OC_OK)
		return false;
	o = finish(pg, &row, NULL, NULL, &rep);
	if (o == OC_LOST) {
		pgconn_rollback(pg);
		return false;
	}
	*oc = o;
	if (rep.retry_at[0] != '\0')
		snprintf(retry_at, retry_at_len, "%s", rep.retry_at);
	return true;
}

/*
 * The batched held run of a broker's kind (held_run_many, kind.h's contract):
 *
 *   BEGIN; claim_many (the events, one statement); the kind delivers them all; _finish_held_many
 *   (every log row, retry and failure, one statement); COMMIT
 */
struct HeldMany {
	struct PgConn *pg;
	const struct DestKind *k;
	int n;
	struct Attempt *a; /* one per event, in the order of the ids */
	void **st;         /* the kind's state of each */
	struct Verdict *v; /* what each delivered attempt came to */
	enum Outcome *ocs; /* each event's outcome; OC_OK: claimed, its attempt under way */
};

/* array_add appends v to the array literal in b (its opening brace put) as an element, NULL for none. */
static void
array_add(struct Buf *b, const char *v)
{
	if (b->len > 1)
		buf_putc(b, ',');
	if (v == NULL) {
		buf_puts(b, "NULL");
		return;
	}
	buf_putc(b, '"');
	for (; *v != '\0'; v++) {
		if (*v == '"' || *v == '\\')
			buf_putc(b, '\\');
		buf_putc(b, *v);
	}
	buf_putc(b, '"');
}

/* index_of is the place of event id among m's, -1 when none. */
static int
index_of(const struct HeldMany *m, const char *id)
{
	int i;

	for (i = 0; id != NULL && i < m->n; i++)
		if (strcmp(m->a[i].id, id) == 0)
			return i;
	return -1;
}

/*
 * claim_all claims m's events in one statement (the kind's claim_many) and lets the kind read
 * each row: claimed ones get OC_OK and their start, replayed ones OC_REPLAYED (the claim finished
 * them); the rest stay OC_SKIPPED. False when the statement failed or a row could not be read.
 */
static bool
claim_all(struct HeldMany *m)
{
	struct Buf ids = BUF_INIT;
	const char *params[1];
	PGresult *res = NULL;
	int i, row, col;
	bool ok = true;

	buf_putc(&ids, '{');
	for (i = 0; i < m->n; i++)
		buf_printf(&ids, "%s%s", i ? "," : "", m->a[i].id);
	buf_putc(&ids, '}');
	params[0] = ids.data;
	if (!ids.oom)
		res = pgconn_query(m->pg, m->k->claim_many, params);
	buf_free(&ids);
	if (res == NULL)
		return false;
	col = PQfnumber(res, "queue_id");
	for (row = 0; ok && row < PQntuples(res); row++) {
		enum HeldClaim c;

		i = index_of(m, pgconn_value(res, row, col));
		if (i < 0)
			continue;
		c = m->k->read_row(m->st[i], res, row);
		ok = c != HC_FAILED;
		m->ocs[i] = c == HC_REPLAYED ? OC_REPLAYED : c == HC_CLAIMED ? OC_OK : OC_SKIPPED;
		if (c == HC_CLAIMED)
			iso8601_now(m->a[i].started, sizeof m->a[i].started);
	}
	pgconn_clear(res);
	return ok;
}

/*
 * deliver_all hands the claimed events to the kind, together, each verdict prepared as a
 * transient failure. False when out of memory (nothing delivered).
 */
static bool
deliver_all(struct HeldMany *m)
{
	void **sts = calloc((size_t) m->n, sizeof *sts);
	int i, c = 0;

	if (sts == NULL)
		return false;
	for (i = 0; i < m->n; i++) {
		m->v[i] = (struct Verdict){NULL, 0, AR_TRANSIENT, NULL, NULL, -1, 0};
		if (m->ocs[i] == OC_OK)
			sts[c++] = m->st[i];
	}
	if (c > 0) {
		struct Verdict *vs = calloc((size_t) c, sizeof *vs);
		int j = 0;

		if (vs == NULL) {
			free(sts);
			return false;
		}
		for (i = 0; i < c; i++)
			vs[i] = m->v[0];
		m->k->deliver_many(sts, c, vs);
		for (i = 0; i < m->n; i++)
			if (m->ocs[i] == OC_OK)
				m->v[i] = vs[j++];
		free(vs);
	}
	free(sts);
	return true;
}

/* The parameters of _finish_held_many, as array literals. */
struct FinishArrays {
	struct Buf ids, results, errors, sqlstates, started, details;
};

/*
 * finish_arrays puts each delivered attempt into f; one the kind could not try (lost) is left
 * unfinished, OC_LOST with the step in its report. Returns how many are finished.
 */
static int
finish_arrays(struct HeldMany *m, struct FinishArrays *f)
{
	struct Buf *all[6] = {&f->ids, &f->results, &f->errors, &f->sqlstates, &f->started, &f->details};
	int i, c = 0;

	for (i = 0; i < 6; i++)
		buf_putc(all[i], '{');
	for (i = 0; i < m->n; i++) {
		struct EventReport *rep = m->a[i].rep;

		if (m->ocs[i] != OC_OK)
			continue;
		if (m->v[i].lost != NULL) {
			m->ocs[i] = lost(rep, m->v[i].lost);
			continue;
		}
		array_add(&f->ids, m->a[i].id);
		array_add(&f->results, attempt_result_name(m->v[i].result));
		array_add(&f->errors, m->v[i].error);
		array_add(&f->sqlstates, rep->sqlstate[0] != '\0' ? rep->sqlstate : NULL);
		array_add(&f->started, m->a[i].started);
		array_add(&f->details, m->v[i].detail);
		c++;
	}
	for (i = 0; i < 6; i++)
		buf_putc(all[i], '}');
	return c;
}

/*
 * finish_all finishes every delivered attempt in one statement (_finish_held_many): each event
 * gets the outcome its log row says, its error and when it runs again in its report. False when
 * the statement failed.
 */
static bool
finish_all(struct HeldMany *m)
{
	struct FinishArrays f = {BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT};
	const char *params[6];
	PGresult *res = NULL;
	int row, c = finish_arrays(m, &f);

	params[0] = f.ids.data;
	params[1] = f.results.data;
	params[2] = f.errors.data;
	params[3] = f.sqlstates.data;
	params[4] = f.started.data;
	params[5] = f.details.data;
	if (c > 0 &&
		!(f.ids.oom || f.results.oom || f.errors.oom || f.sqlstates.oom || f.started.oom || f.details.oom))
		res = pgconn_query(m->pg, STMT_FINISH_MANY, params);
	buf_free(&f.ids);
	buf_free(&f.results);
	buf_free(&f.errors);
	buf_free(&f.sqlstates);
	buf_free(&f.started);
	buf_free(&f.details);
	if (c == 0)
		return true;
	for (row = 0; res != NULL && row < PQntuples(res); row++) {
		int i = index_of(m, pgconn_value(res, row, 0));
		struct EventReport *rep;

		if (i < 0)
			continue;
		rep = m->a[i].rep;
		m->ocs[i] = outcome_parse(pgconn_value(res, row, 1));
		snprintf(rep->retry_at, sizeof rep->retry_at, "%s",
				 pgconn_value(res, row, 2) ? pgconn_value(res, row, 2) : "");
		snprintf(rep->error, sizeof rep->error, "%s", m->v[i].error ? m->v[i].error : "");
		utf8_trim_cut(rep->error);
	}
	pgconn_clear(res);
	return res != NULL;
}

/* sequence_many: claim, deliver, finish, commit; false, with the step that failed, when one did. */
static bool
sequence_many(struct HeldMany *m, const char **step)
{
	if (!claim_all(m))
		*step = "claim";
	else if (!deliver_all(m))
		*step = "deliver";
	else if (!finish_all(m))
		*step = "finish";
	else if (!pgconn_exec(m->pg, STMT_COMMIT, NULL))
		*step = "commit";
	return *step == NULL;
}

enum Outcome
held_run_many(struct PgConn *pg, const struct WorkerSettings *ws, const long long *ids, int n,
			  struct TransportCache *tc, struct EventReport *reps, enum Outcome *ocs,
			  const struct DestKind *k, const char **step)
{
	struct HeldMany m = {pg,
						 k,
						 n,
						 calloc((size_t) n, sizeof *m.a),
						 calloc((size_t) n, sizeof *m.st),
						 calloc((size_t) n, sizeof *m.v),
						 ocs};
	bool ok = m.a != NULL && m.st != NULL && m.v != NULL;
	int i;

	*step = NULL;
	for (i = 0; i < n; i++) {
		ocs[i] = OC_SKIPPED;
		if (!ok)
			continue;
		m.a[i] = (struct Attempt){ws, tc, &reps[i], "", 0, ""};
		snprintf(m.a[i].id, sizeof m.a[i].id, "%lld", ids[i]);
		m.st[i] = k->open(&m.a[i]);
		ok = m.st[i] != NULL;
	}
	if (!ok)
		*step = "claim"; /* out of memory before the claim */
	else if (!begin(pg, ws->max_delivery_time_ms))
		*step = "begin";
	else
		sequence_many(&m, step);
	for (i = 0; m.st != NULL && i < n; i++)
		if (m.st[i] != NULL)
			k->close(m.st[i]);
	free(m.a);
	free(m.st);
	free(m.v);
	return *step == NULL ? OC_OK : OC_LOST;
}
