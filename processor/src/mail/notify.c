/*
 * notify.c - one notify event in one held transaction (docs/interface.md):
 *
 *   BEGIN; _queue_claim; fetch(pk); deliver outside the database under a hard timeout;
 *   _write_log (takes the retry decision); set_status; _queue_mark_done; COMMIT.
 *
 * The claimed row stays locked for the whole delivery, so no other worker or Processor can take
 * it, and a crash anywhere before COMMIT leaves the row unclaimed for a later poll: delivery is
 * at-least-once, never silently lost. A message over its profile's rate limit is deferred
 * (_queue_defer) without spending an attempt.
 */
#include "notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "held.h"
#include "message.h"
#include "ratelimit.h"
#include "secrets.h"
#include "status_doc.h"
#include "utf8.h"

/* One attempt's state, from the claim to the commit. */
struct Held {
	struct PgConn *pg;
	const struct WorkerSettings *ws;
	struct TransportCache *tc;
	struct EventReport *rep;
	char id[24];
	char *payload; /* the notification id, as the queue row has it */
	int attempt;
	char started[40]; /* ISO 8601, for _write_log and set_status */
	struct Message msg;
	bool have_msg;
};

/* The result handed to _write_log: one of its results, the reason, and what set_status gets. */
struct Finish {
	enum AttemptResult result;
	const char *error;    /* NULL when none */
	const char *sqlstate; /* NULL when none */
	char *detail;         /* JSON for pgrelay.log, or NULL */
	long retry_after_s;   /* provider's Retry-After, -1 when none */
	bool set_status;      /* record the attempt in the notifier */
	const struct DeliveryResult *r;
};

/* keep_claim copies what the claim returned; false when out of memory. */
static bool
keep_claim(struct Held *h, PGresult *res)
{
	h->payload = strdup(pgconn_value(res, 0, 0));
	h->attempt = atoi(pgconn_value(res, 0, 1));
	/* every line the worker logs about this event names its notification */
	snprintf(h->rep->notification, sizeof h->rep->notification, "%s", pgconn_value(res, 0, 0));
	return h->payload != NULL;
}

/*
 * claim_and_fetch claims the row and fetches its message in one statement. Returns 1 with *doc
 * (NULL when no such notification), 2 when the row was replayed (its attempt is recorded already:
 * the claim finished it, nothing is fetched or sent), 0 when the claim failed (skipped), -1 when a
 * statement failed
 * (h->pg says why). A fetch that raises (the notifier missing, a privilege) is rolled back to
 * the savepoint, the row claimed again alone, and 1 returned with *doc NULL and err set: a
 * transient failure of the event rather than an aborted transaction.
 */
static int
claim_and_fetch(struct Held *h, char **doc, char *err, size_t errlen)
{
	const char *params[1] = {h->id};
	PGresult *res;
	int claimed;

	*doc = NULL;
	err[0] = '\0';
	res = pgconn_query(h->pg, STMT_CLAIM_FETCH, params);
	if (res == NULL) {
		if (h->pg->lost)
			return -1;
		snprintf(err, errlen, "fetch failed: %.*s", (int) utf8_prefix(h->pg->error, 900), h->pg->error);
		utf8_trim_cut(err);
		if (!pgconn_exec(h->pg, STMT_ROLLBACK_FETCH, NULL))
			return -1;
		res = pgconn_query(h->pg, STMT_CLAIM, params);
		if (res == NULL)
			return -1;
	}
	claimed = PQntuples(res) > 0;
	if (claimed && strcmp(pgconn_value(res, 0, 3) ? pgconn_value(res, 0, 3) : "f", "t") == 0)
		claimed = keep_claim(h, res) ? 2 : -1;
	else if (claimed && !keep_claim(h, res))
		claimed = -1;
	else if (claimed && err[0] == '\0' && pgconn_value(res, 0, 2) != NULL) {
		*doc = strdup(pgconn_value(res, 0, 2));
		if (*doc == NULL)
			claimed = -1;
	}
	pgconn_clear(res);
	return claimed;
}

/* status_document renders the set_status() document of this attempt; NULL when out of memory. */
static char *
status_document(const struct Held *h, const struct Finish *f, enum Outcome oc, const char *next_attempt_at)
{
	char finished[40];
	struct StatusDoc sd;

	iso8601_now(finished, sizeof finished);
	sd = (struct StatusDoc){h->attempt,
							oc,
							h->have_msg ? profile_transport_name(&h->msg.profile) : NULL,
							h->started,
							finished,
							next_attempt_at,
							h->have_msg && h->msg.profile.debug};
	return status_doc_json(&sd, f->r);
}

/*
 * commit_attempt records the attempt in the notifier (unless status is NULL), finishes the queue
 * row and commits, in one round trip: the first failure stops the rest.
 */
static bool
commit_attempt(struct Held *h, const char *status)
{
	const char *sp[2] = {h->payload, status}, *ip[1] = {h->id};
	struct PgPipeStmt steps[3];
	int n = 0;

	if (status != NULL)
		steps[n++] = (struct PgPipeStmt){STMT_SET_STATUS, sp};
	steps[n++] = (struct PgPipeStmt){STMT_MARK_DONE, ip};
	steps[n++] = (struct PgPipeStmt){STMT_COMMIT, NULL};
	return pgconn_pipeline(h->pg, steps, n);
}

/*
 * finish writes the log row (where the database takes the retry decision), records the attempt
 * in the notifier, finishes the queue row and commits. Returns the event's outcome, or OC_LOST
 * when a statement failed (the caller reports it and rolls back).
 */
static enum Outcome
finish(struct Held *h, const struct Finish *f)
{
	char *status = NULL;
	struct HeldAttempt a = {h->id, f->result, f->error, f->sqlstate, h->started, f->detail, f->retry_after_s};
	enum Outcome oc;
	PGresult *res;
	bool ok, record;

	res = held_write_log(h->pg, &a);
	if (res == NULL)
		return held_lost(h->rep, "write_log");
	oc = outcome_parse(pgconn_value(res, 0, 0));
	record = f->set_status && outcome_status_name(oc) != NULL;
	if (record)
		status = status_document(h, f, oc, pgconn_value(res, 0, 1));
	pgconn_clear(res);
	if (record && status == NULL)
		return held_lost(h->rep, "set_status");
	ok = commit_attempt(h, status);
	free(status);
	if (!ok)
		return held_lost(h->rep, "finish");
	snprintf(h->rep->error, sizeof h->rep->error, "%s", f->error ? f->error : "");
	utf8_trim_cut(h->rep->error);
	return oc;
}

/* finish_simple finishes without a delivery result (nothing was sent). */
static enum Outcome
finish_simple(struct Held *h, enum AttemptResult result, const char *error, bool set_status)
{
	struct DeliveryResult r;
	struct Finish f = {result, error, NULL, NULL, -1, set_status, &r};
	enum Outcome oc;

	delivery_result_init(&r);
	if (error) {
		snprintf(r.error, sizeof r.error, "%s", error);
		utf8_trim_cut(r.error);
	}
	oc = finish(h, &f);
	delivery_result_free(&r);
	return oc;
}

/* defer moves the event past the rate limit's window: no attempt spent, no log row. */
static enum Outcome
defer(struct Held *h, long wait_ms)
{
	char ms[32];
	const char *params[2] = {h->id, ms};

	snprintf(ms, sizeof ms, "%ld", wait_ms);
	if (!pgconn_exec(h->pg, STMT_DEFER, params))
		return held_lost(h->rep, "defer");
	if (!pgconn_exec(h->pg, STMT_COMMIT, NULL))
		return held_lost(h->rep, "commit");
	snprintf(h->rep->profile, sizeof h->rep->profile, "%s", h->msg.profile.name ? h->msg.profile.name : "");
	h->rep->wait_ms = wait_ms;
	return OC_DEFERRED;
}

/* deliver sends the parsed message and finishes the event with what the transport said. */
static enum Outcome
deliver(struct Held *h)
{
	struct DeliveryOptions opt = {h->ws->max_delivery_time_ms, NULL};
	const struct Transport *t;
	struct TransportSession *s;
	struct DeliveryResult r;
	struct Finish f;
	enum Outcome oc;
	char err[512];

	t = transport_find(profile_transport_name(&h->msg.profile), err, sizeof err);
	if (t == NULL)
		return finish_simple(h, AR_PERMANENT, err, true);
	if (!secrets_resolve_profile(&h->msg.profile, h->ws->secrets_dir, h->ws->secret_env, err, sizeof err))
		return finish_simple(h, AR_TRANSIENT, err, true);
	if (!transport_global_init())
		return finish_simple(h, AR_TRANSIENT, "libcurl initialisation failed", true);
	s = h->tc ? transport_cache_session(h->tc, t, h->ws->generation) : NULL;
	if (s == NULL)
		return finish_simple(h, AR_TRANSIENT, "out of memory", true);

	delivery_result_init(&r);
	if (!t->deliver(s, &h->msg, &opt, &r)) {
		r.status = DS_TRANSIENT;
		snprintf(r.error, sizeof r.error, "out of memory while delivering");
	}
	f = (struct Finish){delivery_result(r.status),
						r.status == DS_SENT ? NULL : r.error,
						NULL,
						status_doc_log_detail(t->name, &h->msg, &r),
						r.retry_after_s,
						true,
						&r};
	oc = finish(h, &f);
	free(f.detail);
	delivery_result_free(&r);
	return oc;
}

/* decide: the message is known; skip, defer or deliver it. */
static enum Outcome
decide(struct Held *h)
{
	enum AttemptResult settled;
	long wait;

	if (notification_settled(h->msg.status, &settled))
		return finish_simple(h, settled, NULL, false); /* nothing to deliver, nothing to record */
	if (message_envelope_count(&h->msg) == 0)
		return finish_simple(h, AR_PERMANENT, "no recipient is left to send to", true);
	wait = ratelimit_acquire(h->msg.profile.name, h->msg.profile.rate_limit_per_minute, now_us() / 1000);
	if (wait > 0)
		return defer(h, wait);
	return deliver(h);
}

/* run_held is the transaction after BEGIN: claim and fetch, parse, then decide. */
static enum Outcome
run_held(struct Held *h)
{
	char err[1024];
	char *doc;
	int c = claim_and_fetch(h, &doc, err, sizeof err);

	if (c < 0)
		return held_lost(h->rep, "claim");
	if (c == 0) {
		if (!pgconn_exec(h->pg, STMT_ROLLBACK, NULL))
			return held_lost(h->rep, "rollback");
		return OC_SKIPPED;
	}
	if (c == 2) /* replayed: the claim finished the row; committing it is all there is to do */
		return pgconn_exec(h->pg, STMT_COMMIT, NULL) ? OC_REPLAYED : held_lost(h->rep, "commit");
	iso8601_now(h->started, sizeof h->started);
	if (err[0] != '\0')
		return finish_simple(h, AR_TRANSIENT, err, false);
	if (doc == NULL)
		return finish_simple(h, AR_PERMANENT, "the notification does not exist", false);
	h->have_msg = message_parse(doc, &h->msg, err, sizeof err);
	free(doc);
	if (!h->have_msg)
		return finish_simple(h, AR_PERMANENT, err, true);
	return decide(h);
}

enum Outcome
notify_run(struct PgConn *pg, const struct WorkerSettings *ws, const struct Job *j, struct TransportCache *tc,
		   struct EventReport *rep)
{
	struct Held h;
	enum Outcome oc;

	memset(&h, 0, sizeof h);
	h.pg = pg;
	h.ws = ws;
	h.tc = tc;
	h.rep = rep;
	snprintf(h.id, sizeof h.id, "%lld", j->id);
	if (!held_begin(h.pg, h.ws->max_delivery_time_ms))
		oc = held_lost(h.rep, "begin");
	else
		oc = run_held(&h);
	rep->attempt = h.attempt;
	if (h.have_msg)
		message_free(&h.msg);
	free(h.payload);
	return oc;
}
