/*
 * transport.h - what every delivery transport (SMTP, Microsoft Graph, ...) offers a worker, the
 * table that picks one by the profile's transport name, and what they share: libcurl's global
 * set-up, a worker's cache of sessions, the life cycle of a DeliveryResult.
 *
 * A transport is blocking: each worker thread owns one TransportSession per transport (for
 * connection reuse and token caches) and calls deliver() with the claimed event's message. The
 * transport never logs, never exits and never touches the database: it fills a DeliveryResult,
 * which notify.c classifies and the held transaction (held.c) records: _finish_held (the log row
 * and the finish, in one call), then set_status.
 *
 * Adding a transport: a module that defines a struct Transport (like smtp.c), its extern below,
 * and its row in the table of transport.c.
 */
#ifndef PGRELAY_TRANSPORT_H
#define PGRELAY_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "compiler.h"
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
struct Https;

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
extern const struct Transport graph_transport;

/*
 * transport_find returns the transport a profile names ("smtp", "graph"), or NULL with the reason in err
 * when this Processor has no such transport.
 */
const struct Transport *transport_find(const char *name, char *err, size_t errlen);

/*
 * transport_global_init sets up libcurl (and with it the TLS library) once per process, on the
 * first delivery rather than at startup: a Processor that only runs SQL events stays ~2 MB
 * smaller (docs/design/benchmark-notes.md). Thread-safe; false when the set-up failed.
 * transport_global_cleanup undoes it at exit, if it happened, and forgets the cached OAuth2
 * tokens once no TransportCache is left (a stuck worker's may still use them).
 */
bool transport_global_init(void) MUSTCHECK;
void transport_global_cleanup(void);

/* One worker's sessions, one per transport, kept between deliveries. */
struct TransportCache;

struct TransportCache *transport_cache_new(void);
/* transport_cache_free closes every cached session; NULL is a no-op. */
void transport_cache_free(struct TransportCache *tc);
/*
 * transport_cache_session returns tc's session of t, made on first use. A generation other than
 * the last one seen (a reload) drops every session first, so new settings get new connections.
 * NULL when out of memory.
 */
struct TransportSession *transport_cache_session(struct TransportCache *tc, const struct Transport *t,
												 long generation);

/*
 * transport_cache_http returns tc's HTTP client for webhooks, made on first use, kept (with its
 * connections: keep-alive per worker) and dropped with the sessions, on a reload. NULL when out
 * of memory.
 */
struct Https *transport_cache_http(struct TransportCache *tc, long generation);

void delivery_result_init(struct DeliveryResult *r);
void delivery_result_free(struct DeliveryResult *r);

/*
 * What the transports share: the time budget of one attempt, and how libcurl's errors that are
 * not about the remote server's answer are classified.
 *
 * transport_budget_ms is min(profile.timeout_ms, opt.max_time_ms), ignoring unset (<= 0) values.
 */
long transport_budget_ms(const struct Message *m, const struct DeliveryOptions *opt);
/* transport_curl_cert_error: the peer's certificate (or our CA file) is the problem: configuration. */
bool transport_curl_cert_error(int curl_code);
/* transport_curl_config_error: libcurl refused the request itself; retrying cannot help. */
bool transport_curl_config_error(int curl_code);
/* transport_curl_timeout: the attempt ran out of time. */
bool transport_curl_timeout(int curl_code);

#endif
