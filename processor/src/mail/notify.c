/*
 * notify.c - the notify kind of event (held.c runs its held transaction, docs/interface.md):
 *
 *   BEGIN; _queue_claim; fetch(pk); deliver outside the database under a hard timeout;
 *   _finish_held (the log row, where the retry decision is taken, and the row finished, in one
 *   call); set_status (with what the finish returned) and COMMIT in one round trip.
 *
 * This file reads the claimed row and its message, picks the transport, delivers and classifies,
 * and makes the set_status() document; held.c sends the statements. The claimed row stays locked
 * for the whole delivery, so no other worker or Processor can take it, and a crash anywhere before
 * COMMIT leaves the row unclaimed for a later poll: delivery is at-least-once, never silently
 * lost. A message over its profile's rate limit is deferred (_queue_defer) without spending an
 * attempt.
 */
#include "notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "message.h"
#include "pgconn.h"
#include "ratelimit.h"
#include "secrets.h"
#include "status_doc.h"
#include "transport.h"
#include "utf8.h"

/* A notify event's state, from the claim to the commit. */
struct Mail {
	struct Attempt *a;
	char *payload;          /* the notification id, as the queue row has it */
	bool trusted;           /* the notifier's schema may be used (the claim fetched) */
	char fetch_error[1024]; /* the fetch raised: why ("" when it did not) */
	char *doc;              /* the fetch() document, NULL when none */
	struct Message msg;
	bool have_msg;
	/* What set_status() gets for the attempt (notify_record). */
	bool set_status;         /* record the attempt in the notifier */
	struct DeliveryResult r; /* what the transport said, or why nothing was sent */
	char error[1024];        /* the verdict's error, when it is not r's */
	char *detail;            /* the verdict's log detail */
	char *status;            /* the document, until the commit */
	const char *status_params[2];
};

void *
notify_open(struct Attempt *a)
{
	struct Mail *m = calloc(1, sizeof *m);

	if (m == NULL)
		return NULL;
	m->a = a;
	delivery_result_init(&m->r);
	return m;
}

void
notify_close(void *st)
{
	struct Mail *m = st;

	if (m == NULL)
		return;
	if (m->have_msg)
		message_free(&m->msg);
	delivery_result_free(&m->r);
	free(m->payload);
	free(m->doc);
	free(m->detail);
	free(m->status);
	free(m);
}

enum HeldClaim
notify_read(void *st, PGresult *res, bool trusted, const char *fetch_error)
{
	struct Mail *m = st;
	enum HeldClaim c = HC_SKIPPED;
	bool fetched = trusted && fetch_error[0] == '\0';

	m->trusted = trusted;
	snprintf(m->fetch_error, sizeof m->fetch_error, "%s", fetch_error);
	if (res == NULL)
		return HC_FAILED;
	if (PQntuples(res) > 0) {
		c = strcmp(pgconn_value(res, 0, 3) ? pgconn_value(res, 0, 3) : "f", "t") == 0 ? HC_REPLAYED
																					  : HC_CLAIMED;
		m->payload = strdup(pgconn_value(res, 0, 0));
		m->a->attempt = atoi(pgconn_value(res, 0, 1));
		/* every line the worker logs about this event names its notification */
		snprintf(m->a->rep->notification, sizeof m->a->rep->notification, "%s", pgconn_value(res, 0, 0));
		if (m->payload == NULL)
			c = HC_FAILED;
		else if (c == HC_CLAIMED && fetched && pgconn_value(res, 0, 2) != NULL &&
				 (m->doc = strdup(pgconn_value(res, 0, 2))) == NULL)
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
	sd = (struct StatusDoc){m->a->attempt,
							oc,
							m->have_msg ? profile_transport_name(&m->msg.profile) : NULL,
							m->a->started,
							finished,
							next_attempt_at,
							m->have_msg && m->msg.profile.debug};
	return status_doc_json(&sd, &m->r);
}

bool
notify_record(void *st, enum Outcome oc, const char *next_attempt_at, struct RecordStmt *s)
{
	struct Mail *m = st;

	if (!m->set_status || outcome_status_name(oc) == NULL)
		return true;
	m->status = status_document(m, oc, next_attempt_at);
	if (m->status == NULL) {
		s->lost_as = "set_status";
		return false;
	}
	m->status_params[0] = m->payload;
	m->status_params[1] = m->status;
	*s = (struct RecordStmt){STMT_SET_STATUS, m->status_params, "set_status"};
	return true;
}

/*
 * nothing_sent is the verdict of an attempt that sent nothing: result, with error (NULL: none),
 * recorded in the notifier too when set_status.
 */
static void
nothing_sent(struct Mail *m, struct Verdict *v, enum AttemptResult result, const char *error, bool set_status)
{
	if (error != NULL) {
		if (error != m->error)
			snprintf(m->error, sizeof m->error, "%s", error);
		snprintf(m->r.error, sizeof m->r.error, "%s", m->error);
		utf8_trim_cut(m->r.error);
	}
	m->set_status = set_status;
	v->result = result;
	v->error = error != NULL ? m->error : NULL;
}

/* send_message delivers the parsed message and says what the transport said. */
static void
send_message(struct Mail *m, struct Verdict *v)
{
	const struct WorkerSettings *ws = m->a->ws;
	struct DeliveryOptions opt = {ws->max_delivery_time_ms, NULL};
	const struct Transport *t;
	struct TransportSession *s;

	t = transport_find(profile_transport_name(&m->msg.profile), m->error, sizeof m->error);
	if (t == NULL) {
		nothing_sent(m, v, AR_PERMANENT, m->error, true);
		return;
	}
	if (!profile_resolve_secrets(&m->msg.profile, ws->secrets_dir, ws->secret_env, m->error,
								 sizeof m->error)) {
		attempt_config_error(m->a->rep, CE_SECRET, SECRETS_SQLSTATE, secrets_hint(m->error));
		nothing_sent(m, v, AR_TRANSIENT, m->error, true);
		return;
	}
	if (!transport_global_init()) {
		nothing_sent(m, v, AR_TRANSIENT, "libcurl initialisation failed", true);
		return;
	}
	s = m->a->tc ? transport_cache_session(m->a->tc, t, ws->generation) : NULL;
	if (s == NULL) {
		nothing_sent(m, v, AR_TRANSIENT, "out of memory", true);
		return;
	}

	if (!t->deliver(s, &m->msg, &opt, &m->r)) {
		m->r.status = DS_TRANSIENT;
		snprintf(m->r.error, sizeof m->r.error, "out of memory while delivering");
	}
	m->detail = status_doc_log_detail(t->name, &m->msg, &m->r);
	m->set_status = true;
	*v = (struct Verdict){NULL,
						  0,
						  delivery_result(m->r.status),
						  m->r.status == DS_SENT ? NULL : m->r.error,
						  m->detail,
						  m->r.retry_after_s,
						  0};
}

/* decide: the message is known; skip, defer or deliver it. */
static void
decide(struct Mail *m, struct Verdict *v)
{
	enum AttemptResult settled;
	long wait;

	if (notification_settled(m->msg.status, &settled)) {
		nothing_sent(m, v, settled, NULL, false); /* nothing to deliver, nothing to record */
		return;
	}
	if (message_envelope_count(&m->msg) == 0) {
		nothing_sent(m, v, AR_PERMANENT, "no recipient is left to send to", true);
		return;
	}
	wait = ratelimit_acquire(m->msg.profile.name, m->msg.profile.rate_limit_per_minute, now_us() / 1000);
	if (wait > 0) {
		v->defer_ms = wait;
		m->a->rep->wait_ms = wait;
		return;
	}
	send_message(m, v);
}

/*
 * notify_deliver: only when the notifier's schema may be used did the claim fetch; otherwise the
 * attempt fails with the reason. Then the message is parsed, and skipped, deferred or sent.
 */
void
notify_deliver(void *st, struct Verdict *v)
{
	struct Mail *m = st;

	if (!m->trusted) {
		nothing_sent(m, v, AR_TRANSIENT,
					 "pg_relay_notifier is not installed: schema pgrelay_notifier is missing, or "
					 "belongs to a role other than pg_relay's owner, or others may create in it",
					 false);
		return;
	}
	if (m->fetch_error[0] != '\0') {
		nothing_sent(m, v, AR_TRANSIENT, m->fetch_error, false);
		return;
	}
	if (m->doc == NULL) {
		nothing_sent(m, v, AR_PERMANENT, "the notification does not exist", false);
		return;
	}
	m->have_msg = message_parse(m->doc, &m->msg, m->error, sizeof m->error);
	if (!m->have_msg) {
		nothing_sent(m, v, AR_PERMANENT, m->error, true);
		return;
	}
	/* every line the worker logs about the attempt names the profile it was sent with */
	snprintf(m->a->rep->profile, sizeof m->a->rep->profile, "%s",
			 m->msg.profile.name ? m->msg.profile.name : "");
	decide(m, v);
}
