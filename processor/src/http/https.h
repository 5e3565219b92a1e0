/*
 * https.h - HTTP requests with a body (POST by default; PUT, PATCH) over one libcurl easy handle,
 * kept by a transport session: the connection and its TLS session stay open between requests
 * (HTTP/1.1 keep-alive), so a worker makes one handshake per server, not one per message. Used
 * for Microsoft's token endpoint, for Graph and for webhooks; https:// only unless a request says
 * otherwise (a webhook whose admin allowed http://). Pure helpers (Retry-After, %-encoding, trace
 * lines) are unit-tested.
 *
 * Like the transports, this module never logs and never exits. The caller must have called
 * transport_global_init() and must ignore SIGPIPE (handles use CURLOPT_NOSIGNAL).
 */
#ifndef PGRELAY_HTTPS_H
#define PGRELAY_HTTPS_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "buf.h"
#include "compiler.h"

/* A response body is kept up to this many bytes (error bodies and token answers are small). */
#define HTTPS_BODY_MAX (64 * 1024)
/* A trace holds at most this much; its lines at most HTTPS_LINE_MAX bytes each. */
#define HTTPS_TRACE_MAX (256 * 1024)
#define HTTPS_LINE_MAX 2048
/* A provider's Retry-After is honoured up to a day; a longer one is cut to that. */
#define HTTPS_RETRY_AFTER_MAX 86400L
/* Idle connections older than this are not reused (servers close idle ones after a few minutes). */
#define HTTPS_MAX_IDLE_S 60L

struct Https;

/* One extra request header. */
struct HttpsHeader {
	const char *name;
	const char *value;
	bool secret; /* the trace shows "[redacted]" instead of the value */
};

struct HttpsRequest {
	const char *url;          /* https:// only (unless allow_http): libcurl refuses any other scheme */
	const char *content_type; /* of the body */
	const char *body;
	size_t body_len;
	const char *bearer;  /* sent as "Authorization: Bearer ...", or NULL */
	const char *ca_file; /* NULL: the system's CA store */
	long connect_timeout_ms;
	long timeout_ms;        /* the whole request */
	const char *trace_body; /* what the trace shows of the body (redacted by the caller); NULL: its size */
	struct Buf *trace;      /* where the exchange is traced, or NULL */
	/* Webhooks; zero for Microsoft's services: */
	const char *method;                /* POST (NULL), PUT or PATCH */
	const struct HttpsHeader *headers; /* extra headers; one named Content-Type replaces content_type */
	int n_headers;
	bool allow_http;         /* http:// too (an admin's explicit choice) */
	bool only_given_headers; /* no Accept: application/json and no client-request-id (Graph's own) */
};

struct HttpsResponse {
	int curl_code;              /* CURLcode of the request; 0 when libcurl completed it */
	char error[256];            /* libcurl's description when curl_code is not 0 */
	long status;                /* the final HTTP status; 0 when none came (1xx are not final) */
	long retry_after_s;         /* the final answer's Retry-After in seconds; -1 when none */
	char request_id[128];       /* its request-id header (Graph), valid UTF-8; "" when none */
	char content_type[128];     /* its Content-Type; "" when none */
	char client_request_id[40]; /* the id we sent as client-request-id (a random GUID), or "" */
	char location[512];         /* a redirect's Location, valid UTF-8; "" when none (never followed) */
	struct Buf body;            /* its body, raw bytes, at most HTTPS_BODY_MAX */
	bool body_sent;             /* every byte of the request body was handed to libcurl */
	bool reused;                /* the request went over a connection kept from an earlier one */
};

/* https_new makes a client without a connection; the first request opens one. NULL when out of memory. */
struct Https *https_new(void);
/* https_free closes the connection; NULL is a no-op. */
void https_free(struct Https *h);

/*
 * https_send sends one request (rq->method, POST by default) and fills rs (https_response_init'ed
 * by the caller). Returns false only when out of memory; every other failure is described in rs.
 * Note that a request whose body was entirely handed over is never re-sent by libcurl on a fresh
 * connection (it would do so when a kept-alive connection dies without an answer): the server may
 * have acted on it, so the caller must learn that the outcome is unknown. Redirects are never
 * followed.
 */
bool https_send(struct Https *h, const struct HttpsRequest *rq, struct HttpsResponse *rs) MUSTCHECK;

void https_response_init(struct HttpsResponse *rs);
void https_response_free(struct HttpsResponse *rs);

/*
 * https_retry_after parses a Retry-After value (RFC 9110: delay-seconds or an HTTP-date, which is
 * counted from now) into seconds, at most HTTPS_RETRY_AFTER_MAX; -1 when it is neither.
 */
long https_retry_after(const char *value, time_t now);

/* https_escape appends s %-encoded: every byte but A-Z a-z 0-9 - . _ ~ (a path segment, a form value). */
bool https_escape(struct Buf *out, const char *s) MUSTCHECK;

/*
 * https_trace_text appends text to the trace, one "<prefix>line\r\n" per line, as valid UTF-8;
 * lines are cut at HTTPS_LINE_MAX bytes, the text at max bytes, the trace at HTTPS_TRACE_MAX.
 * trace NULL is a no-op.
 */
void https_trace_text(struct Buf *trace, const char *prefix, const char *text, size_t len, size_t max);

/*
 * https_info_kept: is this informational line of libcurl's (CURLINFO_TEXT) one a trace keeps? A
 * connection made, reused or closed, the TLS session and its certificate, a timeout: what tells
 * a reader where an attempt went; the rest is libcurl's chatter. The SMTP dialogue's trace keeps
 * the same lines.
 */
bool https_info_kept(const char *line, size_t len);

#endif
