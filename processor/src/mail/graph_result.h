/*
 * graph_result.h - turn what one sendMail request produced (libcurl's code, the HTTP status, the
 * headers, Graph's error body) into a DeliveryResult: sent, transient (with Retry-After),
 * permanent, or unknown.
 */
#ifndef PGRELAY_GRAPH_RESULT_H
#define PGRELAY_GRAPH_RESULT_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "compiler.h"
#include "transport.h"

/* GraphAnswer is everything the classifier looks at. */
struct GraphAnswer {
	int curl_code;                 /* CURLcode of the request */
	const char *curl_error;        /* libcurl's description */
	long status;                   /* the final HTTP status, 0 when none came */
	long retry_after_s;            /* Retry-After in seconds, -1 when none */
	const char *request_id;        /* Graph's request-id header ("" when none) */
	const char *client_request_id; /* the id we sent, for the unknown case */
	const char *body;              /* the answer's body (may be NULL) */
	size_t body_len;
	bool body_sent; /* the whole request body had been handed over */
};

/*
 * graph_result_fill classifies the answer into r (status, unknown_outcome, reply_code, reply,
 * provider_message_id, retry_after_s, error). Graph has no per-recipient results, so r->rcpt
 * stays empty. Returns false only when out of memory.
 *
 *   202 (any 2xx)                 DS_SENT; request-id kept as provider_message_id
 *   408, 429, 5xx                 DS_TRANSIENT, Retry-After honoured when given
 *   401 (after one refresh)       DS_PERMANENT (configuration)
 *   other 3xx/4xx                 DS_PERMANENT with Graph's error.code and message
 *   no answer, body sent          DS_TRANSIENT, unknown_outcome: it may have been accepted
 *   no answer, certificate / URL  DS_PERMANENT (configuration)
 *   no answer otherwise           DS_TRANSIENT
 */
bool graph_result_fill(const struct GraphAnswer *a, struct DeliveryResult *r) MUSTCHECK;

/*
 * graph_error_parse reads Graph's error body {"error": {"code", "message", "innerError":
 * {"request-id"}}} into code, message and request_id, each valid UTF-8 on one line and bounded.
 * Returns false when the body is not such a document (then nothing is appended).
 */
bool graph_error_parse(const char *body, size_t len, struct Buf *code, struct Buf *message,
					   struct Buf *request_id);

#endif
