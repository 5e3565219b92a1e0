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

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "message.h"
#include "ratelimit.h"
#include "secrets.h"
#include "smtp.h"
#include "status_doc.h"
#include "transport.h"
#include "worker.h"

/* The per-worker transport sessions; dropped when the configuration is reloaded. */
struct NotifyCtx {
	struct TransportSession *smtp;
	long generation;
};

/* One attempt's state, from the claim to the commit. */
struct Held {
	struct Worker *w;
	struct Job *j;
	char id[24];
	char *payload;        /* the notification id, as the queue row has it */
	int attempt;
	char started[40];     /* ISO 8601, for _write_log and set_status */
	struct Message msg;
	bool have_msg;
};

/* The result handed to _write_log: one of its results, the reason, and what set_status gets. */
struct Finish {
	const char *result;        /* ok, partial, transient, permanent, cancelled */
	const char *error;         /* NULL when none */
	const char *sqlstate;      /* NULL when none */
	char *detail;              /* JSON for pgrelay.log, or NULL */
	long retry_after_s;        /* provider's Retry-After, -1 when none */
	bool set_status;           /* record the attempt in the notifier */
	const struct DeliveryResult *r;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static bool curl_ready;

static void
curl_init_once(void)
{
	curl_ready = curl_global_init(CURL_GLOBAL_ALL) == CURLE_OK;
}

bool
notify_global_init(void)
{
	pthread_once(&curl_once, curl_init_once);
	return curl_ready;
}

void
notify_global_cleanup(void)
{
	if (curl_ready)
		curl_global_cleanup();
	curl_ready = false;
}

void
notify_ctx_free(struct NotifyCtx *ctx)
{
	if (ctx == NULL)
		return;
	if (ctx->smtp)
		smtp_transport.session_free(ctx->smtp);
	free(ctx);
}

/* session_for returns the worker's SMTP session, fresh after a reload. */
static struct TransportSession *
session_for(struct Worker *w)
{
	if (w->notify != NULL && w->notify->generation != w->settings.generation) {
		notify_ctx_free(w->notify);
		w->notify = NULL;
	}
	if (w->notify == NULL) {
		w->notify = calloc(1, sizeof *w->notify);
		if (w->notify == NULL)
			return NULL;
		w->notify->generation = w->settings.generation;
	}
	if (w->notify->smtp == NULL)
		w->notify->smtp = smtp_transport.session_new();
	return w->notify->smtp;
}

/* abort_held rolls back after a failed statement; the event is offered again later. */
static enum Outcome
abort_held(struct Held *h, const char *step)
{
	char q[1100];

	if (h->w->pg.lost) {
		log_warn("reconnecting", "conn=%s id=%lld reason=connection_lost step=%s error=%s", h->w->pg.label,
				 h->j->id, step, log_quote(q, sizeof q, h->w->pg.error));
		pgconn_close(&h->w->pg);
		return OC_LOST;
	}
	log_error("attempt_failed", "conn=%s id=%lld channel=%s outcome=not_finished step=%s sqlstate=%s error=%s",
			  h->w->pg.label, h->j->id, h->j->channel, step, h->w->pg.sqlstate,
			  log_quote(q, sizeof q, h->w->pg.error));
	if (!pgconn_exec(&h->w->pg, "ROLLBACK", 0, NULL))
		pgconn_close(&h->w->pg);
	return OC_LOST;
}

/* begin_held opens the transaction and lets it stay idle as long as a delivery may take. */
static bool
begin_held(struct Held *h)
{
	char ms[32];
	const char *params[1] = {ms};

	snprintf(ms, sizeof ms, "%ld", h->w->settings.max_delivery_time_ms + 60000);
	return pgconn_set_timeout(&h->w->pg, 60000) && pgconn_exec(&h->w->pg, "BEGIN", 0, NULL) &&
		   pgconn_exec(&h->w->pg, "SELECT pg_catalog.set_config('idle_in_transaction_session_timeout', $1, true)",
					   1, params);
}

/* claim: 1 claimed, 0 skipped, -1 statement failed. */
static int
claim(struct Held *h)
{
	const char *params[1] = {h->id};
	PGresult *res = pgconn_query(&h->w->pg, "SELECT payload, attempt FROM pgrelay._queue_claim($1)", 1, params);

	if (res == NULL)
		return -1;
	if (PQntuples(res) == 0) {
		pgconn_clear(res);
		return 0;
	}
	h->payload = strdup(pgconn_value(res, 0, 0));
	h->attempt = atoi(pgconn_value(res, 0, 1));
	pgconn_clear(res);
	return h->payload ? 1 : -1;
}

/*
 * fetch_message runs fetch(pk) under a savepoint, so that a failing fetch (the notifier missing,
 * a permission) becomes a transient failure of the event instead of aborting the transaction.
 * Returns the document (malloc'd), or NULL with *missing (no such notification) or err set.
 */
static char *
fetch_message(struct Held *h, bool *missing, char *err, size_t errlen)
{
	const char *params[1] = {h->payload};
	PGresult *res;
	char *doc = NULL;

	*missing = false;
	if (!pgconn_exec(&h->w->pg, "SAVEPOINT pgrelay_fetch", 0, NULL))
		return NULL;
	res = pgconn_query(&h->w->pg, "SELECT pgrelay_notifier.fetch($1)::text", 1, params);
	if (res == NULL) {
		snprintf(err, errlen, "fetch failed: %.900s", h->w->pg.error);
		if (!h->w->pg.lost && !pgconn_exec(&h->w->pg, "ROLLBACK TO SAVEPOINT pgrelay_fetch", 0, NULL))
			return NULL;
		return NULL;
	}
	if (pgconn_value(res, 0, 0) == NULL)
		*missing = true;
	else
		doc = strdup(pgconn_value(res, 0, 0));
	pgconn_clear(res);
	return doc;
}

/*
 * finish writes the log row, records the attempt in the notifier, finishes the queue row and
 * commits. Returns the event's outcome, or OC_LOST when a statement failed (rolled back).
 */
static enum Outcome
finish(struct Held *h, const struct Finish *f)
{
	char retry_at[64] = "", finished[40], *status = NULL;
	const char *lp[7], *sp[2];
	struct StatusDoc sd;
	enum Outcome oc;
	PGresult *res;
	const char *next;

	if (f->retry_after_s >= 0)
		snprintf(retry_at, sizeof retry_at, "%ld", f->retry_after_s);
	lp[0] = h->id;
	lp[1] = f->result;
	lp[2] = f->error;
	lp[3] = f->sqlstate;
	lp[4] = h->started;
	lp[5] = f->detail;
	lp[6] = retry_at[0] ? retry_at : NULL;
	res = pgconn_query(&h->w->pg,
					   "SELECT outcome, to_char(next_run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
					   " FROM pgrelay._write_log($1, $2, $3, $4, $5::timestamptz, $6::jsonb,"
					   "  clock_timestamp() + make_interval(secs => $7::float8))",
					   7, lp);
	if (res == NULL)
		return abort_held(h, "write_log");
	oc = outcome_parse(pgconn_value(res, 0, 0));
	next = pgconn_value(res, 0, 1);

	if (f->set_status) {
		iso8601_now(finished, sizeof finished);
		sd = (struct StatusDoc){h->attempt, "sent", "smtp", h->started, finished, next,
								h->have_msg && h->msg.profile.debug};
		if (oc == OC_RETRY || oc == OC_TIMEOUT)
			sd.outcome = "retrying";
		else if (oc == OC_FAILED)
			sd.outcome = "failed";
		else if (oc == OC_PARTIAL)
			sd.outcome = "partially_sent";
		status = status_doc_json(&sd, f->r);
	}
	pgconn_clear(res);
	if (f->set_status) {
		sp[0] = h->payload;
		sp[1] = status;
		if (status == NULL || !pgconn_exec(&h->w->pg, "SELECT pgrelay_notifier.set_status($1, $2::jsonb)", 2, sp)) {
			free(status);
			return abort_held(h, "set_status");
		}
		free(status);
	}
	sp[0] = h->id;
	if (!pgconn_exec(&h->w->pg, "SELECT pgrelay._queue_mark_done($1)", 1, sp))
		return abort_held(h, "mark_done");
	if (!pgconn_exec(&h->w->pg, "COMMIT", 0, NULL))
		return abort_held(h, "commit");
	if (oc == OC_RETRY || oc == OC_TIMEOUT || oc == OC_FAILED) {
		char q[1100];

		log_warn("attempt_failed", "conn=%s id=%lld channel=%s attempt=%d outcome=%s error=%s",
				 h->w->pg.label, h->j->id, h->j->channel, h->attempt, outcome_name(oc),
				 log_quote(q, sizeof q, f->error ? f->error : ""));
	}
	return oc;
}

/* finish_simple finishes without a delivery result (nothing was sent). */
static enum Outcome
finish_simple(struct Held *h, const char *result, const char *error, bool set_status)
{
	struct DeliveryResult r;
	struct Finish f = {result, error, NULL, NULL, -1, set_status, &r};
	enum Outcome oc;

	delivery_result_init(&r);
	if (error)
		snprintf(r.error, sizeof r.error, "%s", error);
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
	if (!pgconn_exec(&h->w->pg,
					 "SELECT pgrelay._queue_defer($1, clock_timestamp() + make_interval(secs => $2::float8 / 1000))",
					 2, params))
		return abort_held(h, "defer");
	if (!pgconn_exec(&h->w->pg, "COMMIT", 0, NULL))
		return abort_held(h, "commit");
	log_debug("deferred", "conn=%s id=%lld profile=%s wait_ms=%ld", h->w->pg.label, h->j->id,
			  h->msg.profile.name, wait_ms);
	return OC_DEFERRED;
}

/* result_name maps the transport's verdict to the result _write_log takes. */
static const char *
result_name(enum DeliveryStatus s)
{
	switch (s) {
	case DS_SENT:
		return "ok";
	case DS_PARTIAL:
		return "partial";
	case DS_TRANSIENT:
		return "transient";
	case DS_PERMANENT:
		break;
	}
	return "permanent";
}

/* deliver sends the parsed message and finishes the event with what the transport said. */
static enum Outcome
deliver(struct Held *h)
{
	struct DeliveryOptions opt = {h->w->settings.max_delivery_time_ms, NULL};
	struct TransportSession *s;
	struct DeliveryResult r;
	struct Finish f;
	enum Outcome oc;
	char err[512];

	if (h->msg.profile.transport != TRANSPORT_SMTP)
		return finish_simple(h, "permanent", "Microsoft Graph delivery is not available in this Processor", true);
	if (!secrets_resolve_profile(&h->msg.profile, h->w->settings.secrets_dir[0] ? h->w->settings.secrets_dir : NULL,
								 err, sizeof err))
		return finish_simple(h, "transient", err, true);
	if (!notify_global_init())
		return finish_simple(h, "transient", "libcurl initialisation failed", true);
	s = session_for(h->w);
	if (s == NULL)
		return finish_simple(h, "transient", "out of memory", true);

	delivery_result_init(&r);
	if (!smtp_transport.deliver(s, &h->msg, &opt, &r)) {
		r.status = DS_TRANSIENT;
		snprintf(r.error, sizeof r.error, "out of memory while delivering");
	}
	f = (struct Finish){result_name(r.status), r.status == DS_SENT ? NULL : r.error, NULL,
						status_log_detail("smtp", &h->msg, &r), r.retry_after_s, true, &r};
	oc = finish(h, &f);
	free(f.detail);
	delivery_result_free(&r);
	return oc;
}

/* decide: the message is known; skip, defer or deliver it. */
static enum Outcome
decide(struct Held *h)
{
	const char *st = h->msg.status;
	long wait;

	if (strcmp(st, "cancelled") == 0)
		return finish_simple(h, "cancelled", NULL, false);
	if (strcmp(st, "sent") == 0 || strcmp(st, "partially_sent") == 0)
		return finish_simple(h, "ok", NULL, false); /* a duplicate event: delivered already */
	if (message_envelope_count(&h->msg) == 0)
		return finish_simple(h, "permanent", "no recipient is left to send to", true);
	wait = ratelimit_acquire(h->msg.profile.name, h->msg.profile.rate_limit_per_minute, now_us() / 1000);
	if (wait > 0)
		return defer(h, wait);
	return deliver(h);
}

/* run_held is the transaction after BEGIN: claim, fetch, parse, then decide. */
static enum Outcome
run_held(struct Held *h)
{
	char err[1024];
	bool missing;
	char *doc;
	int c = claim(h);

	if (c < 0)
		return abort_held(h, "claim");
	if (c == 0) {
		if (!pgconn_exec(&h->w->pg, "ROLLBACK", 0, NULL))
			return abort_held(h, "rollback");
		return OC_SKIPPED;
	}
	iso8601_now(h->started, sizeof h->started);
	doc = fetch_message(h, &missing, err, sizeof err);
	if (doc == NULL && h->w->pg.lost)
		return abort_held(h, "fetch");
	if (doc == NULL && missing)
		return finish_simple(h, "permanent", "the notification does not exist", false);
	if (doc == NULL)
		return finish_simple(h, "transient", err, false);
	h->have_msg = message_parse(doc, &h->msg, err, sizeof err);
	free(doc);
	if (!h->have_msg)
		return finish_simple(h, "permanent", err, true);
	return decide(h);
}

enum Outcome
notify_run(struct Worker *w, struct Job *j)
{
	struct Held h;
	enum Outcome oc;

	memset(&h, 0, sizeof h);
	h.w = w;
	h.j = j;
	snprintf(h.id, sizeof h.id, "%lld", j->id);
	if (!begin_held(&h))
		oc = abort_held(&h, "begin");
	else
		oc = run_held(&h);
	if (h.have_msg)
		message_free(&h.msg);
	free(h.payload);
	return oc;
}
