/*
 * webhook.c - the webhook kind of event (held.c runs its held transaction, docs/webhooks.md):
 *
 *   BEGIN; _webhook_claim (the row and the channel's endpoint); sign and send the payload outside
 *   the database under the channel's timeout; _finish_held (the log row, where the retry decision
 *   is taken, and the row finished; after a 410 the endpoint marked gone, in the same call); COMMIT.
 *
 * This file reads the claimed row and the endpoint, signs, sends and classifies; held.c sends the
 * statements. As for notify events, the claimed row stays locked for the whole request, so no other worker
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
#include "https.h"
#include "pgconn.h"
#include "secrets.h"
#include "transport.h"
#include "webhook_endpoint.h"
#include "webhook_result.h"
#include "webhook_sign.h"

/* The connection (TCP and TLS) must be up within this, or the channel's timeout if shorter. */
#define WEBHOOK_CONNECT_MS 10000L
/* A literal header value this long may be a credential: cut from the trace wherever it shows. */
#define WEBHOOK_LITERAL_SECRET_MIN 16
/*
 * The three Standard Webhooks headers, and pg_relay's two of a publication's delivery
 * (pg-relay-publication-id, pg-relay-event-type), come before the channel's own.
 */
#define WEBHOOK_OWN_HEADERS 5

/* A webhook event's state, from the claim to the commit. */
struct Hook {
	struct Attempt *a;
	char event_id[24];       /* webhook-id: the same on every attempt of the event */
	char publication_id[24]; /* pg-relay-publication-id; "" for an event of notify() */
	char *event_type;        /* pg-relay-event-type; NULL without one */
	char *payload;
	size_t payload_len;
	char *endpoint; /* the endpoint document of the claim, NULL when the channel has none */
	struct WebhookEndpoint ep;
	struct Buf signature;     /* webhook-signature, for the request and for redaction */
	char error[1024];         /* the verdict's error, when it is not the answer's */
	struct WebhookVerdict wv; /* the answer classified */
	char *detail;             /* the verdict's log detail */
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

void *
webhook_open(struct Attempt *a)
{
	struct Hook *k = calloc(1, sizeof *k);

	if (k == NULL)
		return NULL;
	k->a = a;
	k->signature = (struct Buf) BUF_INIT;
	return k;
}

void
webhook_close(void *st)
{
	struct Hook *k = st;

	if (k == NULL)
		return;
	webhook_endpoint_free(&k->ep);
	if (k->signature.data != NULL)
		explicit_bzero(k->signature.data, k->signature.len);
	buf_free(&k->signature);
	free(k->payload);
	free(k->event_type);
	free(k->endpoint);
	free(k->detail);
	free(k);
}

enum HeldClaim
webhook_read(void *st, PGresult *res, bool trusted, const char *fetch_error)
{
	struct Hook *k = st;
	enum HeldClaim c = HC_SKIPPED;

	(void) trusted; /* the claim names nothing of another schema, and fetches nothing */
	(void) fetch_error;
	if (res == NULL)
		return HC_FAILED;
	if (PQntuples(res) > 0) {
		c = HC_CLAIMED;
		k->payload = strdup(pgconn_value(res, 0, 0));
		k->payload_len = k->payload ? strlen(k->payload) : 0;
		k->a->attempt = atoi(pgconn_value(res, 0, 1));
		snprintf(k->event_id, sizeof k->event_id, "%s", pgconn_value(res, 0, 2));
		if (pgconn_value(res, 0, 3) != NULL)
			k->endpoint = strdup(pgconn_value(res, 0, 3));
		snprintf(k->publication_id, sizeof k->publication_id, "%s",
				 pgconn_value(res, 0, 5) ? pgconn_value(res, 0, 5) : "");
		if (pgconn_value(res, 0, 6) != NULL)
			k->event_type = strdup(pgconn_value(res, 0, 6));
		if (k->payload == NULL || (pgconn_value(res, 0, 3) != NULL && k->endpoint == NULL) ||
			(pgconn_value(res, 0, 6) != NULL && k->event_type == NULL))
			c = HC_FAILED;
		else if (strcmp(pgconn_value(res, 0, 4) ? pgconn_value(res, 0, 4) : "f", "t") == 0)
			c = HC_REPLAYED;
	}
	pgconn_clear(res);
	return c;
}

/* nothing_sent is the verdict of an attempt that sent nothing: result, with error. */
static void
nothing_sent(struct Hook *k, struct Verdict *v, enum AttemptResult result, const char *error)
{
	if (error != k->error)
		snprintf(k->error, sizeof k->error, "%s", error);
	v->result = result;
	v->error = k->error;
}

/* content_type: application/json when the payload is JSON (any JSON value), else plain text. */
static const char *
content_type(const struct Hook *k)
{
	json_t *doc = json_loadb(k->payload, k->payload_len, JSON_DECODE_ANY, NULL);
	bool json = doc != NULL;

	json_decref(doc);
	return json ? "application/json" : "text/plain; charset=utf-8";
}

/* sign makes webhook-signature for this attempt's timestamp; false with err set on failure. */
static bool
sign(struct Hook *k, long long timestamp, char *err, size_t errlen)
{
	unsigned char *key;
	size_t keylen;
	bool ok;

	buf_reset(&k->signature);
	if (k->ep.signing_secret == NULL)
		return true;
	if (!webhook_sign_key(k->ep.signing_secret, &key, &keylen, err, errlen))
		return false;
	ok = webhook_sign(key, keylen, k->event_id, timestamp, k->payload, k->payload_len, &k->signature, err,
					  errlen);
	explicit_bzero(key, keylen);
	free(key);
	return ok;
}

/*
 * build_headers lists webhook-id, webhook-timestamp, webhook-signature, the publication's id and
 * event type when the event delivers one, and the channel's headers.
 */
static bool
build_headers(struct Hook *k, struct Exchange *x)
{
	int n = 0, i;

	x->headers = calloc((size_t) (WEBHOOK_OWN_HEADERS + k->ep.n_headers), sizeof(*x->headers));
	if (x->headers == NULL)
		return false;
	x->headers[n++] = (struct HttpsHeader){"webhook-id", k->event_id, false};
	x->headers[n++] = (struct HttpsHeader){"webhook-timestamp", x->ts, false};
	if (k->signature.len > 0)
		x->headers[n++] = (struct HttpsHeader){"webhook-signature", k->signature.data, true};
	if (k->publication_id[0] != '\0')
		x->headers[n++] = (struct HttpsHeader){"pg-relay-publication-id", k->publication_id, false};
	if (k->event_type != NULL)
		x->headers[n++] = (struct HttpsHeader){"pg-relay-event-type", k->event_type, false};
	/* Any channel header may hold a credential, and admins never see a literal value: traced redacted. */
	for (i = 0; i < k->ep.n_headers; i++)
		x->headers[n++] = (struct HttpsHeader){k->ep.headers[i].name, k->ep.headers[i].value, true};
	x->rq.headers = x->headers;
	x->rq.n_headers = n;
	return true;
}

/* prepare fills the request of this attempt: signed now, with the channel's timeout. */
static bool
prepare(struct Hook *k, struct Exchange *x, char *err, size_t errlen)
{
	long timeout = k->ep.timeout_ms;

	if (k->a->ws->max_delivery_time_ms > 0 && k->a->ws->max_delivery_time_ms < timeout)
		timeout = k->a->ws->max_delivery_time_ms;
	x->timestamp = (long long) time(NULL);
	snprintf(x->ts, sizeof x->ts, "%lld", x->timestamp);
	if (!sign(k, x->timestamp, err, errlen))
		return false;
	x->trace = k->ep.debug ? &x->trace_buf : NULL;
	x->rq = (struct HttpsRequest){.url = k->ep.url,
								  .content_type = content_type(k),
								  .body = k->payload,
								  .body_len = k->payload_len,
								  .ca_file = k->ep.ca_file,
								  .connect_timeout_ms =
									  timeout < WEBHOOK_CONNECT_MS ? timeout : WEBHOOK_CONNECT_MS,
								  .timeout_ms = timeout,
								  .trace = x->trace,
								  .method = k->ep.method,
								  .allow_http = k->ep.allow_http,
								  .only_given_headers = true};
	if (!build_headers(k, x)) {
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
redact(struct Hook *k, struct Buf *trace)
{
	const char **secrets = calloc((size_t) (k->ep.n_headers + 2), sizeof(*secrets));
	int i, n = 0;
	bool ok;

	if (secrets == NULL)
		return false;
	secrets[n++] = k->ep.signing_secret;
	secrets[n++] = k->signature.data;
	for (i = 0; i < k->ep.n_headers; i++)
		if (k->ep.headers[i].referenced || strlen(k->ep.headers[i].value) >= WEBHOOK_LITERAL_SECRET_MIN)
			secrets[n++] = k->ep.headers[i].value;
	ok = buf_redact(trace, secrets, n);
	free(secrets);
	return ok;
}

/* classify classifies the answer: the verdict, with the attempt's log detail. */
static void
classify(struct Hook *k, struct Exchange *x, struct Verdict *v)
{
	struct WebhookAnswer a;
	struct WebhookVerdict *wv = &k->wv;

	/* the answer goes into the error, the log detail and the trace: no secret it echoed does */
	if (!redact(k, &x->rs.body)) {
		v->lost = "out of memory";
		return;
	}
	a = (struct WebhookAnswer){x->rs.curl_code, x->rs.error,     x->rs.status,   x->rs.retry_after_s,
							   x->rs.location,  x->rs.body.data, x->rs.body.len, x->rs.body_sent};
	webhook_result_classify(&a, wv);
	if (x->trace != NULL && x->rs.body.len > 0)
		https_trace_text(x->trace, "< ", x->rs.body.data, x->rs.body.len, 16384);
	if (x->trace != NULL && !redact(k, x->trace)) {
		v->lost = "out of memory";
		return;
	}
	k->detail = webhook_result_detail(&a, wv, k->event_id, x->timestamp, x->latency_ms, x->rs.reused,
									  x->trace ? (x->trace->data ? x->trace->data : "") : NULL);
	if (k->detail == NULL) {
		v->lost = "out of memory";
		return;
	}
	k->a->rep->http_status = x->rs.status;
	k->a->rep->gone = wv->gone;
	*v = (struct Verdict){NULL,
						  0,
						  delivery_result(wv->status),
						  wv->status == DS_SENT ? NULL : wv->error,
						  k->detail,
						  wv->retry_after_s,
						  wv->gone ? x->rs.status : 0};
}

/* send_request signs and sends the payload, then classifies what came back. */
static void
send_request(struct Hook *k, struct Verdict *v)
{
	struct Exchange x;
	struct Https *http;
	long long t0;

	memset(&x, 0, sizeof x);
	x.trace_buf = (struct Buf) BUF_INIT;
	https_response_init(&x.rs);
	if (!transport_global_init())
		nothing_sent(k, v, AR_TRANSIENT, "libcurl initialisation failed");
	else if ((http = k->a->tc ? transport_cache_http(k->a->tc, k->a->ws->generation) : NULL) == NULL)
		nothing_sent(k, v, AR_TRANSIENT, "out of memory");
	else if (!prepare(k, &x, k->error, sizeof k->error))
		nothing_sent(k, v, AR_TRANSIENT, k->error);
	else {
		t0 = now_us();
		if (!https_send(http, &x.rq, &x.rs))
			nothing_sent(k, v, AR_TRANSIENT, "out of memory while sending");
		else {
			x.latency_ms = (long) ((now_us() - t0) / 1000);
			classify(k, &x, v);
		}
	}
	free(x.headers);
	buf_free(&x.trace_buf);
	https_response_free(&x.rs);
}

/* note_endpoint keeps the endpoint's scheme://host[:port] for the log lines about it. */
static void
note_endpoint(struct Hook *k)
{
	const char *p = strstr(k->ep.url, "://");
	size_t n = p ? strcspn(p + 3, "/?#") + (size_t) (p + 3 - k->ep.url) : 0;

	snprintf(k->a->rep->endpoint, sizeof k->a->rep->endpoint, "%.*s", (int) n, k->ep.url);
}

/* webhook_deliver reads the endpoint, resolves its secrets, sends. */
void
webhook_deliver(void *st, struct Verdict *v)
{
	struct Hook *k = st;

	if (k->endpoint == NULL) {
		nothing_sent(k, v, AR_PERMANENT, "the channel has no webhook endpoint");
		return;
	}
	if (!webhook_endpoint_parse(k->endpoint, &k->ep, k->error, sizeof k->error)) {
		nothing_sent(k, v, AR_PERMANENT, k->error);
		return;
	}
	note_endpoint(k);
	if (!webhook_endpoint_resolve(&k->ep, k->a->ws->secrets_dir, k->a->ws->secret_env, k->error,
								  sizeof k->error)) {
		attempt_config_error(k->a->rep, CE_SECRET, SECRETS_SQLSTATE, secrets_hint(k->error));
		nothing_sent(k, v, AR_TRANSIENT, k->error);
		return;
	}
	send_request(k, v);
}
