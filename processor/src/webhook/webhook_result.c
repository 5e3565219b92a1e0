/*
 * webhook_result.c - classify one webhook request by its HTTP status and libcurl's code (never by
 * the text of the answer, which is the receiver's), and render its pgrelay.log detail.
 */
#include "webhook_result.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "transport.h"
#include "utf8.h"

/* How much of the answer an error message quotes, on one line. */
#define QUOTE_MAX 300

/* retried: the statuses that say "not now" rather than "no". */
static bool
retried(long status)
{
	return status == 408 || status == 425 || status == 429 || status >= 500;
}

/* classify_answered classifies a request that got an HTTP answer. */
static void
classify_answered(const struct WebhookAnswer *a, struct WebhookVerdict *v)
{
	struct Buf quote = BUF_INIT;
	const char *q;

	if (a->status / 100 == 2) {
		v->status = DS_SENT;
		return;
	}
	(void) utf8_clean_line(&quote, a->body ? a->body : "", a->body_len, QUOTE_MAX);
	q = quote.len > 0 ? quote.data : "(no body)";
	if (a->status == 410) {
		v->status = DS_PERMANENT;
		v->gone = true;
		utf8_snprintf(v->error, sizeof v->error,
					  "HTTP 410 Gone: the endpoint no longer accepts webhooks; the channel is paused: %s", q);
	} else if (retried(a->status)) {
		v->status = DS_TRANSIENT;
		if (a->status == 429 || a->status == 503)
			v->retry_after_s = a->retry_after_s;
		utf8_snprintf(v->error, sizeof v->error, "HTTP %ld%s: %s", a->status,
					  v->retry_after_s >= 0 ? " (retried when Retry-After says)" : "", q);
	} else if (a->status / 100 == 3) {
		v->status = DS_PERMANENT;
		const char *loc = a->location && a->location[0] ? a->location : "none";

		/* cut at a character boundary: the error is stored as text, which must be valid UTF-8 */
		utf8_snprintf(
			v->error, sizeof v->error,
			"HTTP %ld: redirects are not followed; register the endpoint's new URL (Location: %.*s)",
			a->status, (int) utf8_prefix(loc, 400), loc);
	} else {
		v->status = DS_PERMANENT;
		utf8_snprintf(v->error, sizeof v->error, "HTTP %ld: %s", a->status, q);
	}
	buf_free(&quote);
}

/* classify_unanswered classifies a request that got no HTTP answer. */
static void
classify_unanswered(const struct WebhookAnswer *a, struct WebhookVerdict *v)
{
	const char *why = a->curl_error && a->curl_error[0] ? a->curl_error : "no answer";

	v->status = DS_TRANSIENT;
	if (a->body_sent) {
		/* The request went out whole: the receiver may have acted on it. Same webhook-id next time. */
		v->unknown_outcome = true;
		utf8_snprintf(v->error, sizeof v->error,
					  "no answer after the request was sent; the endpoint may have received it (%s)", why);
	} else if (transport_curl_cert_error(a->curl_code)) {
		v->status = DS_PERMANENT;
		utf8_snprintf(v->error, sizeof v->error,
					  "TLS certificate verification failed (configuration: the URL's host and the channel's "
					  "ca_file): %s",
					  why);
	} else if (transport_curl_config_error(a->curl_code)) {
		v->status = DS_PERMANENT;
		utf8_snprintf(v->error, sizeof v->error,
					  "the request is invalid (configuration: the channel's URL): %s", why);
	} else
		utf8_snprintf(v->error, sizeof v->error, "%s: %s",
					  transport_curl_timeout(a->curl_code) ? "timed out" : "failed", why);
}

void
webhook_result_classify(const struct WebhookAnswer *a, struct WebhookVerdict *v)
{
	v->status = DS_TRANSIENT;
	v->gone = false;
	v->unknown_outcome = false;
	v->retry_after_s = -1;
	v->error[0] = '\0';
	if (a->status != 0)
		classify_answered(a, v);
	else
		classify_unanswered(a, v);
}

/* text_or_null is a JSON string of s as valid UTF-8, at most max bytes and "..." when cut, or null. */
static json_t *
text_or_null(const char *s, size_t len, size_t max)
{
	struct Buf b = BUF_INIT;
	json_t *j;

	if (s == NULL)
		return json_null();
	if (!utf8_clean(&b, s, len, max) || b.oom) {
		buf_free(&b);
		return NULL;
	}
	j = json_string(b.data ? b.data : "");
	buf_free(&b);
	return j;
}

char *
webhook_result_detail(const struct WebhookAnswer *a, const struct WebhookVerdict *v, const char *webhook_id,
					  long long timestamp, long latency_ms, bool reused, const char *trace)
{
	json_t *doc = json_pack(
		"{s:s, s:s, s:I, s:o, s:I, s:o, s:I, s:b, s:o, s:b}", "transport", "webhook", "webhook_id",
		webhook_id, "timestamp", (json_int_t) timestamp, "status",
		a->status ? json_integer(a->status) : json_null(), "latency_ms", (json_int_t) latency_ms, "response",
		text_or_null(a->status ? a->body : NULL, a->body_len, WEBHOOK_RESPONSE_MAX - 3), "response_bytes",
		(json_int_t) a->body_len, "unknown_outcome", v->unknown_outcome, "retry_after_s",
		v->retry_after_s >= 0 ? json_integer(v->retry_after_s) : json_null(), "reused_connection", reused);
	char *out;

	if (doc != NULL && trace != NULL && json_object_set_new(doc, "trace", json_string(trace)) != 0) {
		json_decref(doc);
		return NULL;
	}
	out = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	return out;
}
