/*
 * webhook.c - one webhook event in one held transaction (docs/webhooks.md):
 *
 *   BEGIN; _webhook_claim (the row and the channel's endpoint); sign and send the payload outside
 *   the database under the channel's timeout; [_webhook_gone on a 410]; _write_log (takes the
 *   retry decision); _queue_mark_done; COMMIT.
 *
 * As for notify events, the claimed row stays locked for the whole request, so no other worker
 * or Processor can take it, and a crash anywhere before COMMIT leaves it unclaimed for a later
 * poll: at least once. Every attempt sends the event id as webhook-id, so a receiver recognises
 * a duplicate; the timestamp and signature are made afresh for each attempt.
 */
#include "webhook.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "held.h"
#include "https.h"
#include "webhook_endpoint.h"
#include "webhook_result.h"
#include "webhook_sign.h"

/* The connection (TCP and TLS) must be up within this, or the channel's timeout if shorter. */
#define WEBHOOK_CONNECT_MS 10000L
/* A literal header value this long may be a credential: cut from the trace wherever it shows. */
#define WEBHOOK_LITERAL_SECRET_MIN 16
/* The three Standard Webhooks headers come before the channel's own. */
#define WEBHOOK_OWN_HEADERS 3

/* One attempt's state, from the claim to the commit. */
struct Hook {
	struct PgConn *pg;
	const struct WorkerSettings *ws;
	struct TransportCache *tc;
	struct EventReport *rep;
	char id[24];
	char event_id[24]; /* webhook-id: the same on every attempt of the event */
	char *payload;
	size_t payload_len;
	int attempt;
	char started[40]; /* ISO 8601, for _write_log */
	struct WebhookEndpoint ep;
	struct Buf signature; /* webhook-signature, for the request and for redaction */
};

/* The request as sent, and what came back. */
struct Exchange {
	struct HttpsRequest rq;
	struct HttpsResponse rs;
	struct HttpsHeader *headers;
	long long timestamp; /* webhook-timestamp */
	char ts[24];
	long latency_ms;
	struct Buf *trace; /* &trace when the channel has debug on */
	struct Buf trace_buf;
};

/* The result handed to _write_log, and whether the endpoint is gone. */
struct Finish {
	enum AttemptResult result;
	const char *error; /* NULL when none */
	char *detail;      /* JSON for pgrelay.log, or NULL */
	long retry_after_s;
	bool gone;
	long status;
};

/*
 * claim takes the row with its endpoint. Returns 1 with *endpoint (NULL when the channel has
 * none), 2 when the row was replayed (its attempt is recorded already: the claim finished it and
 * nothing is sent), 0 when the claim failed (skipped), -1 when the statement failed or memory ran
 * out.
 */
static int
claim(struct Hook *h, char **endpoint)
{
	const char *params[1] = {h->id};
	PGresult *res = pgconn_query(h->pg, STMT_WEBHOOK_CLAIM, params);
	int claimed;

	*endpoint = NULL;
	if (res == NULL)
		return -1;
	claimed = PQntuples(res) > 0;
	if (claimed) {
		h->payload = strdup(pgconn_value(res, 0, 0));
		h->payload_len = h->payload ? strlen(h->payload) : 0;
		h->attempt = atoi(pgconn_value(res, 0, 1));
		snprintf(h->event_id, sizeof h->event_id, "%s", pgconn_value(res, 0, 2));
		if (pgconn_value(res, 0, 3) != NULL)
			*endpoint = strdup(pgconn_value(res, 0, 3));
		if (h->payload == NULL || (pgconn_value(res, 0, 3) != NULL && *endpoint == NULL))
			claimed = -1;
		else if (strcmp(pgconn_value(res, 0, 4) ? pgconn_value(res, 0, 4) : "f", "t") == 0)
			claimed = 2;
	}
	pgconn_clear(res);
	return claimed;
}

/*
 * finish records the attempt: the endpoint marked gone when it said so, the log row (where the
 * retry decision is taken), the row finished, COMMIT. Returns the event's outcome, or OC_LOST
 * when a statement failed.
 */
static enum Outcome
finish(struct Hook *h, const struct Finish *f)
{
	char status[16];
	struct HeldAttempt a = {h->id, f->result, f->error, NULL, h->started, f->detail, f->retry_after_s};
	const char *gp[3] = {h->id, status, f->error}, *ip[1] = {h->id};
	struct PgPipeStmt steps[3];
	enum Outcome oc;
	PGresult *res;
	int n = 0;

	snprintf(status, sizeof status, "%ld", f->status);
	res = held_write_log(h->pg, &a);
	if (res == NULL)
		return held_lost(h->rep, "write_log");
	oc = outcome_parse(pgconn_value(res, 0, 0));
	pgconn_clear(res);
	if (f->gone)
		steps[n++] = (struct PgPipeStmt){STMT_WEBHOOK_GONE, gp};
	steps[n++] = (struct PgPipeStmt){STMT_MARK_DONE, ip};
	steps[n++] = (struct PgPipeStmt){STMT_COMMIT, NULL};
	if (!pgconn_pipeline(h->pg, steps, n))
		return held_lost(h->rep, f->gone ? "webhook_gone" : "finish");
	snprintf(h->rep->error, sizeof h->rep->error, "%s", f->error ? f->error : "");
	h->rep->gone = f->gone;
	h->rep->http_status = f->status;
	return oc;
}

/* finish_simple finishes an attempt that sent nothing. */
static enum Outcome
finish_simple(struct Hook *h, enum AttemptResult result, const char *error)
{
	struct Finish f = {result, error, NULL, -1, false, 0};

	return finish(h, &f);
}

/* content_type: application/json when the payload is JSON (any JSON value), else plain text. */
static const char *
content_type(const struct Hook *h)
{
	json_t *doc = json_loadb(h->payload, h->payload_len, JSON_DECODE_ANY, NULL);
	bool json = doc != NULL;

	json_decref(doc);
	return json ? "application/json" : "text/plain; charset=utf-8";
}

/* sign makes webhook-signature for this attempt's timestamp; false with err set on failure. */
static bool
sign(struct Hook *h, long long timestamp, char *err, size_t errlen)
{
	unsigned char *key;
	size_t keylen;
	bool ok;

	buf_reset(&h->signature);
	if (h->ep.signing_secret == NULL)
		return true;
	if (!webhook_sign_key(h->ep.signing_secret, &key, &keylen, err, errlen))
		return false;
	ok = webhook_sign(key, keylen, h->event_id, timestamp, h->payload, h->payload_len, &h->signature, err,
					  errlen);
	explicit_bzero(key, keylen);
	free(key);
	return ok;
}

/* build_headers lists webhook-id, webhook-timestamp, webhook-signature and the channel's headers. */
static bool
build_headers(struct Hook *h, struct Exchange *x)
{
	int n = 0, i;

	x->headers = calloc((size_t) (WEBHOOK_OWN_HEADERS + h->ep.n_headers), sizeof(*x->headers));
	if (x->headers == NULL)
		return false;
	x->headers[n++] = (struct HttpsHeader){"webhook-id", h->event_id, false};
	x->headers[n++] = (struct HttpsHeader){"webhook-timestamp", x->ts, false};
	if (h->signature.len > 0)
		x->headers[n++] = (struct HttpsHeader){"webhook-signature", h->signature.data, true};
	/* Any channel header may hold a credential, and admins never see a literal value: traced redacted. */
	for (i = 0; i < h->ep.n_headers; i++)
		x->headers[n++] = (struct HttpsHeader){h->ep.headers[i].name, h->ep.headers[i].value, true};
	x->rq.headers = x->headers;
	x->rq.n_headers = n;
	return true;
}

/* prepare fills the request of this attempt: signed now, with the channel's timeout. */
static bool
prepare(struct Hook *h, struct Exchange *x, char *err, size_t errlen)
{
	long timeout = h->ep.timeout_ms;

	if (h->ws->max_delivery_time_ms > 0 && h->ws->max_delivery_time_ms < timeout)
		timeout = h->ws->max_delivery_time_ms;
	x->timestamp = (long long) time(NULL);
	snprintf(x->ts, sizeof x->ts, "%lld", x->timestamp);
	if (!sign(h, x->timestamp, err, errlen))
		return false;
	x->trace = h->ep.debug ? &x->trace_buf : NULL;
	x->rq = (struct HttpsRequest){.url = h->ep.url,
								  .content_type = content_type(h),
								  .body = h->payload,
								  .body_len = h->payload_len,
								  .ca_file = h->ep.ca_file,
								  .connect_timeout_ms =
									  timeout < WEBHOOK_CONNECT_MS ? timeout : WEBHOOK_CONNECT_MS,
								  .timeout_ms = timeout,
								  .trace = x->trace,
								  .method = h->ep.method,
								  .allow_http = h->ep.allow_http,
								  .only_given_headers = true};
	if (!build_headers(h, x)) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	return true;
}

/*
 * redact cuts the secrets out of a text the receiver had a hand in (its answer, the trace, whose
 * header lines are redacted as they are traced), whatever it echoed: the signing secret, the
 * signature, header values given as secret references, and literal values long enough to be a
 * credential. Note that a short literal ("v2", "acme") is left: cutting it everywhere would garble
 * the text for nothing.
 */
static bool
redact(struct Hook *h, struct Buf *trace)
{
	const char **secrets = calloc((size_t) (h->ep.n_headers + 2), sizeof(*secrets));
	int i, n = 0;
	bool ok;

	if (secrets == NULL)
		return false;
	secrets[n++] = h->ep.signing_secret;
	secrets[n++] = h->signature.data;
	for (i = 0; i < h->ep.n_headers; i++)
		if (h->ep.headers[i].referenced || strlen(h->ep.headers[i].value) >= WEBHOOK_LITERAL_SECRET_MIN)
			secrets[n++] = h->ep.headers[i].value;
	ok = buf_redact(trace, secrets, n);
	free(secrets);
	return ok;
}

/* record classifies the answer and finishes the event with it. */
static enum Outcome
record(struct Hook *h, struct Exchange *x)
{
	struct WebhookAnswer a;
	struct WebhookVerdict v;
	struct Finish f;
	enum Outcome oc;

	/* the answer goes into the error, the log detail and the trace: no secret it echoed does */
	if (!redact(h, &x->rs.body))
		return held_lost(h->rep, "out of memory");
	a = (struct WebhookAnswer){x->rs.curl_code, x->rs.error,     x->rs.status,   x->rs.retry_after_s,
							   x->rs.location,  x->rs.body.data, x->rs.body.len, x->rs.body_sent};
	webhook_result_classify(&a, &v);
	if (x->trace != NULL && x->rs.body.len > 0)
		https_trace_text(x->trace, "< ", x->rs.body.data, x->rs.body.len, 16384);
	if (x->trace != NULL && !redact(h, x->trace))
		return held_lost(h->rep, "out of memory");
	f = (struct Finish){delivery_result(v.status),
						v.status == DS_SENT ? NULL : v.error,
						webhook_result_detail(&a, &v, h->event_id, x->timestamp, x->latency_ms, x->rs.reused,
											  x->trace ? (x->trace->data ? x->trace->data : "") : NULL),
						v.retry_after_s,
						v.gone,
						x->rs.status};
	if (f.detail == NULL)
		oc = held_lost(h->rep, "out of memory");
	else
		oc = finish(h, &f);
	free(f.detail);
	return oc;
}

/* send_request signs and sends the payload, then records what came back. */
static enum Outcome
send_request(struct Hook *h)
{
	struct Exchange x;
	struct Https *http;
	enum Outcome oc;
	long long t0;
	char err[512];

	memset(&x, 0, sizeof x);
	x.trace_buf = (struct Buf) BUF_INIT;
	https_response_init(&x.rs);
	if (!transport_global_init())
		return finish_simple(h, AR_TRANSIENT, "libcurl initialisation failed");
	http = h->tc ? transport_cache_http(h->tc, h->ws->generation) : NULL;
	if (http == NULL)
		return finish_simple(h, AR_TRANSIENT, "out of memory");
	if (!prepare(h, &x, err, sizeof err))
		oc = finish_simple(h, AR_TRANSIENT, err);
	else {
		t0 = now_us();
		if (!https_send(http, &x.rq, &x.rs))
			oc = finish_simple(h, AR_TRANSIENT, "out of memory while sending");
		else {
			x.latency_ms = (long) ((now_us() - t0) / 1000);
			oc = record(h, &x);
		}
	}
	free(x.headers);
	buf_free(&x.trace_buf);
	https_response_free(&x.rs);
	return oc;
}

/* note_endpoint keeps the endpoint's scheme://host[:port] for the log lines about it. */
static void
note_endpoint(struct Hook *h)
{
	const char *p = strstr(h->ep.url, "://");
	size_t n = p ? strcspn(p + 3, "/?#") + (size_t) (p + 3 - h->ep.url) : 0;

	snprintf(h->rep->endpoint, sizeof h->rep->endpoint, "%.*s", (int) n, h->ep.url);
}

/* run_hook is the transaction after BEGIN: claim, read the endpoint, resolve its secrets, send. */
static enum Outcome
run_hook(struct Hook *h)
{
	char err[1024], *endpoint;
	bool have_ep;
	int c = claim(h, &endpoint);

	if (c < 0)
		return held_lost(h->rep, "claim");
	if (c == 0)
		return pgconn_exec(h->pg, STMT_ROLLBACK, NULL) ? OC_SKIPPED : held_lost(h->rep, "rollback");
	if (c == 2) /* replayed: the claim finished the row; committing it is all there is to do */
		return pgconn_exec(h->pg, STMT_COMMIT, NULL) ? OC_REPLAYED : held_lost(h->rep, "commit");
	iso8601_now(h->started, sizeof h->started);
	if (endpoint == NULL)
		return finish_simple(h, AR_PERMANENT, "the channel has no webhook endpoint");
	have_ep = webhook_endpoint_parse(endpoint, &h->ep, err, sizeof err);
	free(endpoint);
	if (!have_ep)
		return finish_simple(h, AR_PERMANENT, err);
	note_endpoint(h);
	if (!webhook_endpoint_resolve(&h->ep, h->ws->secrets_dir, h->ws->secret_env, err, sizeof err))
		return finish_simple(h, AR_TRANSIENT, err);
	return send_request(h);
}

enum Outcome
webhook_run(struct PgConn *pg, const struct WorkerSettings *ws, const struct Job *j,
			struct TransportCache *tc, struct EventReport *rep)
{
	struct Hook h;
	enum Outcome oc;

	memset(&h, 0, sizeof h);
	h.pg = pg;
	h.ws = ws;
	h.tc = tc;
	h.rep = rep;
	h.signature = (struct Buf) BUF_INIT;
	snprintf(h.id, sizeof h.id, "%lld", j->id);
	if (!held_begin(h.pg, h.ws->max_delivery_time_ms))
		oc = held_lost(h.rep, "begin");
	else
		oc = run_hook(&h);
	rep->attempt = h.attempt;
	webhook_endpoint_free(&h.ep);
	if (h.signature.data != NULL)
		explicit_bzero(h.signature.data, h.signature.len);
	buf_free(&h.signature);
	free(h.payload);
	return oc;
}
