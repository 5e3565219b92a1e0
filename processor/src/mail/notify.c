/*
 * notify.c - one notify event in its held transaction (held.c, docs/interface.md):
 *
 *   BEGIN; _queue_claim; fetch(pk); deliver outside the database under a hard timeout;
 *   _finish_held (the log row, where the retry decision is taken, and the row finished, in one
 *   call); set_status (with what the finish returned) and COMMIT in one round trip.
 *
 * This file reads the claimed row and its message, picks the transport, delivers and classifies;
 * held.c sends the statements. The claimed row stays locked for the whole delivery, so no other
 * worker or Processor can take it, and a crash anywhere before COMMIT leaves the row unclaimed for
 * a later poll: delivery is at-least-once, never silently lost. A message over its profile's rate
 * limit is deferred (_queue_defer) without spending an attempt.
 */
#include "notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "message.h"
#include "ratelimit.h"
#include "secrets.h"
#include "status_doc.h"
#include "transport.h"
#include "utf8.h"

/* A notify event's state, from the claim to the commit. */
struct Mail {
	struct Held *h;
	char *payload; /* the notification id, as the queue row has it */
	struct Message msg;
	bool have_msg;
	/* What set_status() gets for the attempt being finished (record_status). */
	bool set_status;                /* record the attempt in the notifier */
	const struct DeliveryResult *r; /* what the transport said */
	char *status;                   /* the document, while the finish runs */
	const char *status_params[2];
};

/*
 * read_claim reads the claim's row: payload, attempt, the fetch() document (*doc, NULL when no
 * such notification or the fetch failed), replayed. Clears res.
 */
static enum HeldClaim
read_claim(struct Mail *m, PGresult *res, bool fetched, char **doc)
{
	enum HeldClaim c = HC_SKIPPED;

	*doc = NULL;
	if (res == NULL)
		return HC_FAILED;
	if (PQntuples(res) > 0) {
		c = strcmp(pgconn_value(res, 0, 3) ? pgconn_value(res, 0, 3) : "f", "t") == 0 ? HC_REPLAYED
																					  : HC_CLAIMED;
		m->payload = strdup(pgconn_value(res, 0, 0));
		m->h->attempt = atoi(pgconn_value(res, 0, 1));
		/* every line the worker logs about this event names its notification */
		snprintf(m->h->rep->notification, sizeof m->h->rep->notification, "%s", pgconn_value(res, 0, 0));
		if (m->payload == NULL)
			c = HC_FAILED;
		else if (c == HC_CLAIMED && fetched && pgconn_value(res, 0, 2) != NULL &&
				 (*doc = strdup(pgconn_value(res, 0, 2))) == NULL)
			c = HC_FAILED;
	}
	pgconn_clear(res);
	return c;
}

/* status_document renders the set_status() document of this attempt; NULL when out of memory. */
static char *
status_document(const struct Mail *m, enum Outcome oc, const char *next_attempt_at)
{
	char finished[40];
	struct StatusDoc sd;

	iso8601_now(finished, sizeof finished);
	sd = (struct StatusDoc){m->h->attempt,
							oc,
							m->have_msg ? profile_transport_name(&m->msg.profile) : NULL,
							m->h->started,
							finished,
							next_attempt_at,
							m->have_msg && m->msg.profile.debug};
	return status_doc_json(&sd, m->r);
}

/*
 * record_status is the notify event's record (HeldRecord): the attempt, in the notifier, when it
 * is to be recorded there and the outcome is one set_status() takes.
 */
static bool
record_status(void *arg, enum Outcome oc, const char *next_attempt_at, struct HeldStep *step)
{
	struct Mail *m = arg;

	if (!m->set_status || outcome_status_name(oc) == NULL)
		return true;
	m->status = status_document(m, oc, next_attempt_at);
	if (m->status == NULL) {
		step->lost_as = "set_status";
		return false;
	}
	m->status_params[0] = m->payload;
	m->status_params[1] = m->status;
	*step = (struct HeldStep){STMT_SET_STATUS, m->status_params, "set_status"};
	return true;
}

/*
 * finish finishes the event with what the attempt came to (held_finish), recorded in the notifier
 * too when set_status, with the transport's result r. Returns the event's outcome, or OC_LOST.
 */
static enum Outcome
finish(struct Mail *m, struct HeldResult hr, bool set_status, const struct DeliveryResult *r)
{
	enum Outcome oc;

	m->set_status = set_status;
	m->r = r;
	hr.record = record_status;
	hr.arg = m;
	oc = held_finish(m->h, &hr);
	free(m->status);
	m->status = NULL;
	return oc;
}

/* finish_simple finishes without a delivery result (nothing was sent). */
static enum Outcome
finish_simple(struct Mail *m, enum AttemptResult result, const char *error, bool set_status)
{
	struct DeliveryResult r;
	enum Outcome oc;

	delivery_result_init(&r);
	if (error) {
		snprintf(r.error, sizeof r.error, "%s", error);
		utf8_trim_cut(r.error);
	}
	oc = finish(m, (struct HeldResult){result, error, NULL, -1, 0, NULL, NULL}, set_status, &r);
	delivery_result_free(&r);
	return oc;
}

/* defer moves the event past the rate limit's window: no attempt spent, no log row. */
static enum Outcome
defer(struct Mail *m, long wait_ms)
{
	struct EventReport *rep = m->h->rep;
	enum Outcome oc = held_defer(m->h, wait_ms);

	if (oc == OC_LOST)
		return oc;
	rep->wait_ms = wait_ms;
	return oc;
}

/* deliver sends the parsed message and finishes the event with what the transport said. */
static enum Outcome
deliver(struct Mail *m)
{
	const struct WorkerSettings *ws = m->h->ws;
	struct DeliveryOptions opt = {ws->max_delivery_time_ms, NULL};
	const struct Transport *t;
	struct TransportSession *s;
	struct DeliveryResult r;
	enum Outcome oc;
	char err[512], *detail;

	t = transport_find(profile_transport_name(&m->msg.profile), err, sizeof err);
	if (t == NULL)
		return finish_simple(m, AR_PERMANENT, err, true);
	if (!profile_resolve_secrets(&m->msg.profile, ws->secrets_dir, ws->secret_env, err, sizeof err)) {
		held_config_error(m->h, CE_SECRET, SECRETS_SQLSTATE, secrets_hint(err));
		return finish_simple(m, AR_TRANSIENT, err, true);
	}
	if (!transport_global_init())
		return finish_simple(m, AR_TRANSIENT, "libcurl initialisation failed", true);
	s = m->h->tc ? transport_cache_session(m->h->tc, t, ws->generation) : NULL;
	if (s == NULL)
		return finish_simple(m, AR_TRANSIENT, "out of memory", true);

	delivery_result_init(&r);
	if (!t->deliver(s, &m->msg, &opt, &r)) {
		r.status = DS_TRANSIENT;
		snprintf(r.error, sizeof r.error, "out of memory while delivering");
	}
	detail = status_doc_log_detail(t->name, &m->msg, &r);
	oc = finish(m,
				(struct HeldResult){delivery_result(r.status), r.status == DS_SENT ? NULL : r.error, detail,
									r.retry_after_s, 0, NULL, NULL},
				true, &r);
	free(detail);
	delivery_result_free(&r);
	return oc;
}

/* decide: the message is known; skip, defer or deliver it. */
static enum Outcome
decide(struct Mail *m)
{
	enum AttemptResult settled;
	long wait;

	if (notification_settled(m->msg.status, &settled))
		return finish_simple(m, settled, NULL, false); /* nothing to deliver, nothing to record */
	if (message_envelope_count(&m->msg) == 0)
		return finish_simple(m, AR_PERMANENT, "no recipient is left to send to", true);
	wait = ratelimit_acquire(m->msg.profile.name, m->msg.profile.rate_limit_per_minute, now_us() / 1000);
	if (wait > 0)
		return defer(m, wait);
	return deliver(m);
}

/* notifier_trusted: may the notifier's schema be used (statements.h, NOTIFIER_TRUSTED)? -1: failed. */
static int
notifier_trusted(struct Held *h)
{
	PGresult *res = pgconn_query(h->pg, STMT_NOTIFIER_TRUSTED, NULL);
	int ok;

	if (res == NULL)
		return -1;
	ok = PQntuples(res) > 0 && strcmp(pgconn_value(res, 0, 0), "t") == 0;
	pgconn_clear(res);
	return ok;
}

/*
 * run_mail claims and fetches in one statement, parses the message, then decides. Only when the
 * notifier's schema may be used: otherwise the row is claimed alone and the attempt fails with
 * the reason, and nothing in that schema is named.
 */
static enum Outcome
run_mail(struct Mail *m)
{
	char err[1024], *doc;
	enum Outcome oc;
	int trusted = notifier_trusted(m->h);
	PGresult *res;

	if (trusted < 0)
		return held_lost(m->h->rep, "claim");
	res = trusted ? held_claim(m->h, STMT_CLAIM_FETCH, STMT_CLAIM, err, sizeof err)
				  : held_claim(m->h, STMT_CLAIM, STMT_COUNT, NULL, 0);
	if (!held_claimed(m->h, read_claim(m, res, trusted && err[0] == '\0', &doc), &oc))
		return oc;
	if (!trusted)
		return finish_simple(m, AR_TRANSIENT,
							 "pg_relay_notifier is not installed: schema pgrelay_notifier is missing, or "
							 "belongs to a role other than pg_relay's owner, or others may create in it",
							 false);
	if (err[0] != '\0')
		return finish_simple(m, AR_TRANSIENT, err, false);
	if (doc == NULL)
		return finish_simple(m, AR_PERMANENT, "the notification does not exist", false);
	m->have_msg = message_parse(doc, &m->msg, err, sizeof err);
	free(doc);
	if (!m->have_msg)
		return finish_simple(m, AR_PERMANENT, err, true);
	/* every line the worker logs about the attempt names the profile it was sent with */
	snprintf(m->h->rep->profile, sizeof m->h->rep->profile, "%s",
			 m->msg.profile.name ? m->msg.profile.name : "");
	return decide(m);
}

enum Outcome
notify_run(struct Held *h)
{
	struct Mail m;
	enum Outcome oc;

	memset(&m, 0, sizeof m);
	m.h = h;
	oc = run_mail(&m);
	if (m.have_msg)
		message_free(&m.msg);
	free(m.payload);
	return oc;
}
