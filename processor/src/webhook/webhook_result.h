/*
 * webhook_result.h - what one webhook request came to: the answer classified (done, retried when,
 * failed for good, the endpoint gone), and the pgrelay.log detail of the attempt (status,
 * latency, the start of the answer's body).
 */
#ifndef PGRELAY_WEBHOOK_RESULT_H
#define PGRELAY_WEBHOOK_RESULT_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "compiler.h"
#include "outcome.h"

/* How much of the answer's body the log detail keeps. */
#define WEBHOOK_RESPONSE_MAX 4096

/* WebhookAnswer is everything the classifier looks at. */
struct WebhookAnswer {
	int curl_code;          /* CURLcode of the request */
	const char *curl_error; /* libcurl's description */
	long status;            /* the final HTTP status, 0 when none came */
	long retry_after_s;     /* Retry-After in seconds, -1 when none */
	const char *location;   /* a redirect's Location ("" when none) */
	const char *body;       /* the answer's body (may be NULL), at most HTTPS_BODY_MAX bytes */
	size_t body_len;
	bool body_sent; /* the whole request body had been handed over */
};

/* WebhookVerdict is what the attempt came to. */
struct WebhookVerdict {
	enum DeliveryStatus status; /* DS_SENT, DS_TRANSIENT or DS_PERMANENT */
	bool gone;                  /* 410: the endpoint wants no more requests (the channel is paused) */
	bool unknown_outcome;       /* no answer after the whole request went out: it may have arrived */
	long retry_after_s;         /* the receiver's Retry-After (429, 503), -1 when none */
	char error[1024];           /* why, when not DS_SENT; never a secret */
};

/*
 * webhook_result_classify fills v from a:
 *
 *   2xx                                  DS_SENT
 *   429, 503 with Retry-After            DS_TRANSIENT at that time
 *   408, 425, 429, 5xx                   DS_TRANSIENT (the channel's backoff)
 *   410                                  DS_PERMANENT, gone
 *   other 4xx, 3xx (never followed)      DS_PERMANENT
 *   no answer, body sent                 DS_TRANSIENT, unknown_outcome
 *   no answer, certificate / URL         DS_PERMANENT (configuration)
 *   no answer otherwise (connect, TLS, timeout before the body was out)   DS_TRANSIENT
 */
void webhook_result_classify(const struct WebhookAnswer *a, struct WebhookVerdict *v);

/*
 * webhook_result_detail renders the pgrelay.log detail of the attempt as compact JSON (malloc'd;
 * NULL when out of memory): transport, webhook_id, timestamp, status, latency_ms, response (the
 * first WEBHOOK_RESPONSE_MAX bytes of the body as valid UTF-8), response_bytes, unknown_outcome,
 * retry_after_s, reused_connection and, when trace is not NULL, the trace.
 */
char *webhook_result_detail(const struct WebhookAnswer *a, const struct WebhookVerdict *v,
							const char *webhook_id, long long timestamp, long latency_ms, bool reused,
							const char *trace) MUSTCHECK;

#endif
