/*
 * https.c - HTTP requests with a body over a kept-alive libcurl easy handle; the response's
 * status, the headers a caller classifies by (request-id, Retry-After, Content-Type, Location)
 * and a bounded body; a redacted trace; Retry-After and %-encoding.
 */
#include "https.h"

#include <ctype.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "utf8.h"

#ifndef PGRELAY_VERSION
#define PGRELAY_VERSION "0"
#endif

struct Https {
	CURL *curl;                    /* NULL until the first request */
	const struct HttpsRequest *rq; /* the request in flight, for the callbacks */
	struct HttpsResponse *rs;      /* ... and its response */
	size_t sent;                   /* body bytes handed to libcurl so far */
	char errbuf[CURL_ERROR_SIZE];
};

struct Https *
https_new(void)
{
	return calloc(1, sizeof(struct Https));
}

void
https_free(struct Https *h)
{
	if (h == NULL)
		return;
	if (h->curl != NULL)
		curl_easy_cleanup(h->curl);
	free(h);
}

void
https_response_init(struct HttpsResponse *rs)
{
	memset(rs, 0, sizeof(*rs));
	rs->retry_after_s = -1;
	rs->body = (struct Buf) BUF_INIT;
}

void
https_response_free(struct HttpsResponse *rs)
{
	if (rs == NULL)
		return;
	buf_free(&rs->body);
	https_response_init(rs);
}

/* The last line of a trace that reached HTTPS_TRACE_MAX. */
#define TRUNCATED "* [trace truncated]\r\n"

void
https_trace_text(struct Buf *trace, const char *prefix, const char *text, size_t len, size_t max)
{
	const char *p = text, *end;
	bool cut = len > max;

	if (trace == NULL)
		return;
	if (cut)
		len = max;
	end = text + len;
	while (p < end || p == text) {
		const char *nl = memchr(p, '\n', (size_t) (end - p));
		size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);

		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (trace->len >= sizeof(TRUNCATED) - 1 &&
			strcmp(trace->data + trace->len - (sizeof(TRUNCATED) - 1), TRUNCATED) == 0)
			return; /* full already */
		if (trace->len + n + 64 >= HTTPS_TRACE_MAX) {
			(void) buf_puts(trace, TRUNCATED);
			return;
		}
		/* A server's bytes are of its choosing: the trace keeps valid UTF-8 only. */
		if (!buf_puts(trace, prefix) || !utf8_clean(trace, p, n, HTTPS_LINE_MAX) || !buf_puts(trace, "\r\n"))
			return;
		if (nl == NULL)
			break;
		p = nl + 1;
	}
	if (cut)
		(void) buf_puts(trace, "* [cut]\r\n");
}

/* copy_header stores a header's value (blanks trimmed) in dst as valid UTF-8. */
static void
copy_header(char *dst, size_t dstlen, const char *v, size_t len)
{
	struct Buf b = BUF_INIT;

	while (len > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		len--;
	}
	while (len > 0 && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	dst[0] = '\0';
	if (utf8_clean(&b, v, len, dstlen - 1) && b.data != NULL)
		snprintf(dst, dstlen, "%s", b.data);
	buf_free(&b);
}

/* header_is: the line is "name:" (any case) and *value points after the colon. */
static bool
header_is(const char *line, size_t len, const char *name, const char **value)
{
	size_t n = strlen(name);

	if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
		return false;
	*value = line + n + 1;
	return true;
}

/* status_line parses "HTTP/1.1 202 Accepted" into 202; 0 when the line is not a status line. */
static long
status_line(const char *line, size_t len)
{
	const char *sp;

	if (len < 12 || strncmp(line, "HTTP/", 5) != 0 || (sp = memchr(line, ' ', len)) == NULL ||
		(size_t) (sp - line) + 4 > len || !isdigit((unsigned char) sp[1]) ||
		!isdigit((unsigned char) sp[2]) || !isdigit((unsigned char) sp[3]))
		return 0;
	return (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
}

/*
 * header_cb sees every response header line. A status line starts a new response: an interim
 * one (1xx) is not an answer, and only the final response's headers count.
 */
static size_t
header_cb(char *buf, size_t size, size_t nitems, void *userdata)
{
	struct Https *h = userdata;
	struct HttpsResponse *rs = h->rs;
	size_t len = size * nitems;
	const char *v;
	long st;
	char ra[64];

	if (rs == NULL)
		return len; /* not during one of our requests (see debug_cb) */
	st = status_line(buf, len);
	https_trace_text(h->rq->trace, "< ", buf, len > 0 && buf[len - 1] == '\n' ? len - 1 : len,
					 HTTPS_LINE_MAX);
	if (st != 0) {
		rs->status = st >= 200 ? st : 0;
		rs->retry_after_s = -1;
		rs->request_id[0] = rs->content_type[0] = rs->location[0] = '\0';
		buf_reset(&rs->body);
	} else if (header_is(buf, len, "request-id", &v))
		copy_header(rs->request_id, sizeof(rs->request_id), v, len - (size_t) (v - buf));
	else if (header_is(buf, len, "content-type", &v))
		copy_header(rs->content_type, sizeof(rs->content_type), v, len - (size_t) (v - buf));
	else if (header_is(buf, len, "location", &v))
		copy_header(rs->location, sizeof(rs->location), v, len - (size_t) (v - buf));
	else if (header_is(buf, len, "retry-after", &v)) {
		copy_header(ra, sizeof(ra), v, len - (size_t) (v - buf));
		rs->retry_after_s = https_retry_after(ra, time(NULL));
	}
	return len;
}

/* write_cb keeps the body up to HTTPS_BODY_MAX bytes and reads (and drops) the rest. */
static size_t
write_cb(char *buf, size_t size, size_t nitems, void *userdata)
{
	struct Https *h = userdata;
	size_t len = size * nitems, room;

	if (h->rs == NULL)
		return len;
	room = HTTPS_BODY_MAX - h->rs->body.len;
	if (h->rs->body.len < HTTPS_BODY_MAX)
		(void) buf_append(&h->rs->body, buf, len < room ? len : room);
	return len;
}

/* read_cb hands the request body to libcurl and notes when all of it is out of our hands. */
static size_t
read_cb(char *buf, size_t size, size_t nitems, void *userdata)
{
	struct Https *h = userdata;
	size_t n = h->rq->body_len - h->sent;

	if (n > size * nitems)
		n = size * nitems;
	memcpy(buf, h->rq->body + h->sent, n);
	h->sent += n;
	if (h->sent == h->rq->body_len)
		h->rs->body_sent = true;
	return n;
}

/*
 * seek_cb is asked to rewind the body when libcurl wants to send the request again on a fresh
 * connection (a kept-alive one died before any answer). That is safe only while part of the body
 * is still ours: a server cannot act on a request it did not get whole. Once all of it was
 * handed over, the server may have acted on it; refusing makes the request fail
 * (CURLE_SEND_FAIL_REWIND) instead of silently sending a message twice.
 */
static int
seek_cb(void *userdata, curl_off_t offset, int origin)
{
	struct Https *h = userdata;

	if (offset != 0 || origin != SEEK_SET || h->rs->body_sent)
		return CURL_SEEKFUNC_CANTSEEK;
	h->sent = 0;
	return CURL_SEEKFUNC_OK;
}

/* secret_header: the header line (of n bytes) is Authorization or an extra header marked secret. */
static const char *
secret_header(const struct HttpsRequest *rq, const char *line, size_t n)
{
	const char *v;
	int i;

	if (header_is(line, n, "authorization", &v))
		return "Authorization";
	for (i = 0; i < rq->n_headers; i++)
		if (rq->headers[i].secret && header_is(line, n, rq->headers[i].name, &v))
			return rq->headers[i].name;
	return NULL;
}

/* trace_request_headers traces the request's header block with the credentials hidden. */
static void
trace_request_headers(struct Https *h, const char *data, size_t size)
{
	const char *p = data, *end = data + size;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t) (end - p));
		size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
		const char *name = secret_header(h->rq, p, n);
		char shown[200];

		if (name != NULL) {
			snprintf(shown, sizeof(shown), "%.150s: [redacted]", name);
			https_trace_text(h->rq->trace, "> ", shown, strlen(shown), HTTPS_LINE_MAX);
		} else
			https_trace_text(h->rq->trace, "> ", p, n, HTTPS_LINE_MAX);
		p = nl ? nl + 1 : end;
	}
}

bool
https_info_kept(const char *line, size_t len)
{
	static const char *const keep[] = {
		"Connected to",
		"Re-using existing connection",
		"SSL connection using",
		"SSL certificate problem",
		"Operation timed out",
		"Connection died",
		"Closing connection",
		"Connection #",
		"SSL: no alternative certificate subject name",
	};
	size_t i;

	for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (len >= strlen(keep[i]) && strncmp(line, keep[i], strlen(keep[i])) == 0)
			return true;
	return false;
}

/* debug_cb traces what libcurl sends and says; only installed when the request is traced. */
static int
debug_cb(CURL *c, curl_infotype type, char *data, size_t size, void *userdata)
{
	struct Https *h = userdata;
	char text[64];

	(void) c;
	/*
	 * Note that the handle keeps its callbacks between requests; should libcurl report anything
	 * outside one of our requests (closing a connection), there is no request to trace it for.
	 */
	if (h->rq == NULL)
		return 0;
	if (type == CURLINFO_HEADER_OUT) {
		trace_request_headers(h, data, size);
		if (h->rq->trace_body != NULL)
			https_trace_text(h->rq->trace, "> ", h->rq->trace_body, strlen(h->rq->trace_body), 16384);
		else {
			snprintf(text, sizeof(text), "[body %zu bytes]", h->rq->body_len);
			https_trace_text(h->rq->trace, "> ", text, strlen(text), HTTPS_LINE_MAX);
		}
	} else if (type == CURLINFO_TEXT && https_info_kept(data, size)) {
		https_trace_text(h->rq->trace, "* ", data, size > 0 && data[size - 1] == '\n' ? size - 1 : size,
						 HTTPS_LINE_MAX);
	}
	return 0;
}

/* random_guid writes a random (version 4) GUID, or "" when the kernel has no random bytes for us. */
static void
random_guid(char *out, size_t len)
{
	unsigned char b[16];

	out[0] = '\0';
	if (getrandom(b, sizeof(b), GRND_NONBLOCK) != (ssize_t) sizeof(b))
		return;
	b[6] = (unsigned char) ((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char) ((b[8] & 0x3f) | 0x80);
	snprintf(out, len, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
			 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* free_headers wipes the header lines (one holds the bearer token) and frees them. */
static void
free_headers(struct curl_slist *list)
{
	struct curl_slist *l;

	for (l = list; l != NULL; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(list);
}

/* add_header appends "name: value" to *list; false when out of memory (the list stays valid). */
static bool
add_header(struct curl_slist **list, const char *name, const char *value)
{
	struct Buf b = BUF_INIT;
	struct curl_slist *next = NULL;

	if (buf_printf(&b, "%s: %s", name, value))
		next = curl_slist_append(*list, b.data);
	buf_free(&b);
	if (next == NULL)
		return false;
	*list = next;
	return true;
}

/* given_header: rq's extra headers name this one (any case). */
static bool
given_header(const struct HttpsRequest *rq, const char *name)
{
	int i;

	for (i = 0; i < rq->n_headers; i++)
		if (strcasecmp(rq->headers[i].name, name) == 0)
			return true;
	return false;
}

/*
 * request_headers lists the request's headers. "Expect:" (empty) stops libcurl from sending
 * "Expect: 100-continue" with a large body and waiting for an interim answer before the body.
 */
static struct curl_slist *
request_headers(const struct HttpsRequest *rq, const char *client_request_id)
{
	struct curl_slist *list = NULL, *next;
	struct Buf auth = BUF_INIT;
	bool ok = given_header(rq, "Content-Type") || add_header(&list, "Content-Type", rq->content_type);
	int i;

	if (ok && !rq->only_given_headers)
		ok = add_header(&list, "Accept", "application/json");
	if (ok && client_request_id[0] != '\0')
		ok = add_header(&list, "client-request-id", client_request_id);
	for (i = 0; ok && i < rq->n_headers; i++)
		ok = add_header(&list, rq->headers[i].name, rq->headers[i].value);
	if (ok && rq->bearer != NULL) {
		ok = buf_printf(&auth, "Bearer %s", rq->bearer) && add_header(&list, "Authorization", auth.data);
		if (auth.data != NULL)
			explicit_bzero(auth.data, auth.len);
		buf_free(&auth);
	}
	if (ok && (next = curl_slist_append(list, "Expect:")) != NULL)
		return next;
	free_headers(list);
	return NULL;
}

/* SETOPT sets one option unless an earlier one failed; every libcurl return is checked. */
#define SETOPT(rc, c, opt, val) ((rc) == CURLE_OK ? ((rc) = curl_easy_setopt((c), (opt), (val))) : (rc))

/* set_options configures the handle for one request (after curl_easy_reset). */
static CURLcode
set_options(struct Https *h, const struct HttpsRequest *rq, struct curl_slist *headers)
{
	CURL *c = h->curl;
	CURLcode rc = CURLE_OK;
	long connect_ms = rq->connect_timeout_ms < rq->timeout_ms ? rq->connect_timeout_ms : rq->timeout_ms;

	SETOPT(rc, c, CURLOPT_ERRORBUFFER, h->errbuf);
	SETOPT(rc, c, CURLOPT_URL, rq->url);
	/* https only: a token or a message never crosses the network in clear (unless an admin said so) */
	SETOPT(rc, c, CURLOPT_PROTOCOLS_STR, rq->allow_http ? "http,https" : "https");
	SETOPT(rc, c, CURLOPT_NOSIGNAL, 1L);
	/*
	 * HTTP/1.1: one request at a time per worker needs no multiplexing, and it is what the tests'
	 * fake speaks, so production and tests take the same code path.
	 */
	SETOPT(rc, c, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_1_1);
	SETOPT(rc, c, CURLOPT_MAXAGE_CONN, HTTPS_MAX_IDLE_S);
	SETOPT(rc, c, CURLOPT_CONNECTTIMEOUT_MS, connect_ms > 0 ? connect_ms : 1L);
	SETOPT(rc, c, CURLOPT_TIMEOUT_MS, rq->timeout_ms > 0 ? rq->timeout_ms : 1L);
	/* Verification is never switched off: a bad certificate is a configuration error. */
	SETOPT(rc, c, CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(rc, c, CURLOPT_SSL_VERIFYHOST, 2L);
	if (rq->ca_file != NULL)
		SETOPT(rc, c, CURLOPT_CAINFO, rq->ca_file);
	SETOPT(rc, c, CURLOPT_USERAGENT, "pg_relay/" PGRELAY_VERSION);
	SETOPT(rc, c, CURLOPT_HTTPHEADER, headers);
	SETOPT(rc, c, CURLOPT_POST, 1L);
	/* PUT and PATCH: the same request with another verb, the body still read by read_cb */
	if (rq->method != NULL && strcmp(rq->method, "POST") != 0)
		SETOPT(rc, c, CURLOPT_CUSTOMREQUEST, rq->method);
	SETOPT(rc, c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) rq->body_len);
	SETOPT(rc, c, CURLOPT_READFUNCTION, read_cb);
	SETOPT(rc, c, CURLOPT_READDATA, h);
	SETOPT(rc, c, CURLOPT_SEEKFUNCTION, seek_cb);
	SETOPT(rc, c, CURLOPT_SEEKDATA, h);
	SETOPT(rc, c, CURLOPT_HEADERFUNCTION, header_cb);
	SETOPT(rc, c, CURLOPT_HEADERDATA, h);
	SETOPT(rc, c, CURLOPT_WRITEFUNCTION, write_cb);
	SETOPT(rc, c, CURLOPT_WRITEDATA, h);
	if (rq->trace != NULL) {
		SETOPT(rc, c, CURLOPT_DEBUGFUNCTION, debug_cb);
		SETOPT(rc, c, CURLOPT_DEBUGDATA, h);
		SETOPT(rc, c, CURLOPT_VERBOSE, 1L);
	}
	return rc;
}

/* finish_response records how the request ended; the handle keeps its connection, not our pointers. */
static void
finish_response(struct Https *h, struct HttpsResponse *rs, CURLcode rc)
{
	long connects = 0;

	const char *why = h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc);

	rs->curl_code = (int) rc;
	/* seek_cb refused a second sending: what happened is that the connection died unanswered */
	if (rc == CURLE_SEND_FAIL_REWIND)
		why = "the connection was closed without an answer";
	if (rc != CURLE_OK)
		copy_header(rs->error, sizeof(rs->error), why, strlen(why));
	rs->reused = curl_easy_getinfo(h->curl, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK && connects == 0 &&
				 rc != CURLE_OUT_OF_MEMORY && rc != CURLE_FAILED_INIT;
	/* The header list is freed by the caller: the handle must not point at it while it waits. */
	if (curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL) != CURLE_OK) {
		curl_easy_cleanup(h->curl);
		h->curl = NULL;
	}
	h->rq = NULL;
	h->rs = NULL;
}

bool
https_send(struct Https *h, const struct HttpsRequest *rq, struct HttpsResponse *rs)
{
	struct curl_slist *headers;
	CURLcode rc;

	if (!rq->only_given_headers)
		random_guid(rs->client_request_id, sizeof(rs->client_request_id));
	headers = request_headers(rq, rs->client_request_id);
	if (headers == NULL)
		return false;
	if (h->curl == NULL && (h->curl = curl_easy_init()) == NULL) {
		free_headers(headers);
		rs->curl_code = (int) CURLE_FAILED_INIT;
		snprintf(rs->error, sizeof(rs->error), "libcurl could not make a handle");
		return true;
	}
	if (rq->trace != NULL) {
		struct Buf line = BUF_INIT;

		/* the whole URL: the request line has its path only (a URL is no secret: admins read it where it is set) */
		if (buf_printf(&line, "%s %s", rq->method ? rq->method : "POST", rq->url))
			https_trace_text(rq->trace, "* ", line.data, line.len, HTTPS_LINE_MAX);
		buf_free(&line);
	}
	curl_easy_reset(h->curl); /* options go; the cached connection stays */
	h->errbuf[0] = '\0';
	h->rq = rq;
	h->rs = rs;
	h->sent = 0;
	rc = set_options(h, rq, headers);
	if (rc == CURLE_OK)
		rc = curl_easy_perform(h->curl);
	finish_response(h, rs, rc);
	free_headers(headers);
	return !rs->body.oom;
}

/* month_of maps "Jan".."Dec" to 0..11, -1 otherwise. */
static int
month_of(const char *m)
{
	static const char names[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	const char *p;

	if (strlen(m) != 3 || (p = strstr(names, m)) == NULL || (p - names) % 3 != 0)
		return -1;
	return (int) ((p - names) / 3);
}

/* http_date parses an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"); -1 when it is not one. */
static time_t
http_date(const char *v)
{
	char wday[4], mon[4];
	struct tm tm;
	int end = 0;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(v, "%3[A-Za-z], %2d %3[A-Za-z] %4d %2d:%2d:%2d GMT%n", wday, &tm.tm_mday, mon, &tm.tm_year,
			   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &end) != 7 ||
		end == 0 || v[end] != '\0' || (tm.tm_mon = month_of(mon)) < 0 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
		tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return -1;
	tm.tm_year -= 1900;
	return timegm(&tm);
}

long
https_retry_after(const char *value, time_t now)
{
	const char *p = value;
	long s = 0;
	time_t t;

	if (value == NULL || *value == '\0')
		return -1;
	if (isdigit((unsigned char) *p)) {
		for (; isdigit((unsigned char) *p); p++)
			s = s >= HTTPS_RETRY_AFTER_MAX ? HTTPS_RETRY_AFTER_MAX : s * 10 + (*p - '0');
		return *p == '\0' ? (s > HTTPS_RETRY_AFTER_MAX ? HTTPS_RETRY_AFTER_MAX : s) : -1;
	}
	if ((t = http_date(value)) < 0)
		return -1;
	if (t <= now)
		return 0;
	return t - now > HTTPS_RETRY_AFTER_MAX ? HTTPS_RETRY_AFTER_MAX : (long) (t - now);
}

bool
https_escape(struct Buf *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char) *s;

		/* RFC 3986 unreserved characters, ASCII whatever the locale */
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
			c == '.' || c == '_' || c == '~') {
			if (!buf_putc(out, (char) c))
				return false;
		} else if (!buf_putc(out, '%') || !buf_putc(out, hex[c >> 4]) || !buf_putc(out, hex[c & 15]))
			return false;
	}
	return true;
}
