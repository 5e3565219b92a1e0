/*
 * transport.h - what every delivery transport (SMTP, Microsoft Graph, ...) offers a worker.
 *
 * A transport is blocking: each worker thread owns one TransportSession per transport (for
 * connection reuse and token caches) and calls deliver() with the claimed event's message. The
 * transport never logs, never exits and never touches the database: it fills a DeliveryResult,
 * and the worker turns that into set_status / _write_log / _queue_mark_done.
 */
#ifndef PGRELAY_TRANSPORT_H
#define PGRELAY_TRANSPORT_H

#include <stdbool.h>

#include "buf.h"
#include "message.h"

struct RcptResult {
	long long id;           /* Recipient.id */
	enum RcptStatus status; /* RS_SENT, RS_FAILED or RS_RETRYING */
	int code;               /* SMTP reply code to RCPT (or 0) */
	char *reply;            /* reply line(s), malloc'd, or NULL */
};

struct DeliveryResult {
	enum DeliveryStatus status;
	bool unknown_outcome;      /* lost after the body was sent, before the final reply */
	int reply_code;            /* final SMTP code or HTTP status; 0 when none */
	char *reply;               /* final server reply text, malloc'd, or NULL */
	char *provider_message_id; /* e.g. Graph's request-id, or NULL */
	char error[1024];          /* readable reason when not DS_SENT; never holds a secret */
	long retry_after_s;        /* provider's Retry-After in seconds, -1 when none */
	struct RcptResult *rcpt;   /* one per envelope recipient of this attempt */
	int n_rcpt;
	struct Buf trace; /* redacted transcript, filled only when profile.debug */
};

struct DeliveryOptions {
	long max_time_ms;          /* hard cap on one attempt, applied over profile.timeout_ms */
	const char *ehlo_fallback; /* EHLO name when the profile has none (may be NULL) */
};

struct TransportSession;

struct Transport {
	const char *name;
	struct TransportSession *(*session_new)(void);
	void (*session_free)(struct TransportSession *s);
	/*
	 * deliver sends m through m->profile. Returns false only when the result could not even be
	 * described (out of memory); otherwise true with r filled. Secrets in m->profile are already
	 * resolved values.
	 */
	bool (*deliver)(struct TransportSession *s, const struct Message *m, const struct DeliveryOptions *opt,
					struct DeliveryResult *r);
};

extern const struct Transport smtp_transport;

void delivery_result_init(struct DeliveryResult *r);
void delivery_result_free(struct DeliveryResult *r);

#endif
