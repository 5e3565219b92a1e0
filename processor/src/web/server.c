/*
 * server.c - the web console over libmicrohttpd: one polling thread serves every connection and
 * runs the pages on the console's one database session, so requests never run at once. Each
 * request is checked in this order: the Host it names (loopback consoles answer only to
 * loopback names, against DNS rebinding), who signed in (the HTTP user of the auth file, or the
 * session cookie of the sign-in token), the method, and for an action the Origin and the CSRF
 * token; then the database says what the role may do.
 */
#include "web_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <microhttpd.h>

#include "clock.h"
#include "hostport.h"
#include "log.h"
#include "mhd.h"
#include "web.h"
#include "web_assets.h"
#include "web_addr.h"
#include "web_auth.h"
#include "web_conns.h"
#include "web_csrf.h"
#include "web_db.h"
#include "web_html.h"
#include "web_pages.h"
#include "web_signin.h"

#define MAX_BODY 16384        /* a form of the console is a few hundred bytes */
#define MAX_PEM (1024 * 1024) /* a certificate chain or a key */

static const char csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
						  "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

static struct MHD_Daemon *daemon_;
static bool use_tls, loopback_only, use_auth;
static char *tls_cert_pem, *tls_key_pem;
static char last_message[512];
static char cookie_name[32]; /* pg_relay_PORT: a browser sends a host's cookies to each of its ports */

/* One request between libmicrohttpd's calls: the body of a POST as it arrives. */
struct ReqCtx {
	struct Buf body;
	bool too_big;
};

/* resolve: the address --listen names (the syntax of --metrics) */
static bool
resolve(const char *addr, struct sockaddr_storage *ss, char *err, size_t errlen)
{
	socklen_t len;

	return hostport_resolve(addr, ss, &len, err, errlen);
}

static bool
sockaddr_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *) ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *) ss)->sin6_addr);
	return false;
}

bool
web_server_check(const struct WebServerOptions *o, bool *loopback, char *err, size_t errlen)
{
	struct sockaddr_storage ss;

	if (!resolve(o->listen, &ss, err, errlen))
		return false;
	*loopback = sockaddr_loopback(&ss);
	if ((o->tls_cert == NULL) != (o->tls_key == NULL)) {
		snprintf(err, errlen, "--tls-cert and --tls-key go together");
		return false;
	}
	if (!*loopback && (o->tls_cert == NULL || o->auth_file == NULL)) {
		snprintf(err, errlen,
				 "--listen=%s is not a loopback address: listening there needs --tls-cert, --tls-key and "
				 "--auth-file",
				 o->listen);
		return false;
	}
	if (o->tls_cert != NULL && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		snprintf(err, errlen, "this libmicrohttpd was built without TLS");
		return false;
	}
	return true;
}

/* read_pem reads a PEM file whole (it must not be writable by others when it is a key). */
static char *
read_pem(const char *path, bool key, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	struct Buf b = BUF_INIT;
	char chunk[4096];
	size_t n;
	struct stat st;

	if (f == NULL) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	if (key && fstat(fileno(f), &st) == 0 && (st.st_mode & 0077) != 0)
		log_warn("web_tls_key_readable", LOG_STR("file", path),
				 LOG_STR("hint", "the key is readable by other users: chmod 600 it"));
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len <= MAX_PEM)
		buf_append(&b, chunk, n);
	fclose(f);
	if (b.oom || b.len == 0 || b.len > MAX_PEM || strstr(b.data, "-----BEGIN ") == NULL) {
		snprintf(err, errlen, "%s is not a PEM file", path);
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

/* host_is_loopback: the Host header names 127.x, [::1] or localhost (any port). */
static bool
host_is_loopback(const char *host)
{
	char name[256];
	const char *colon;
	size_t n;
	struct in_addr a4;

	if (host == NULL)
		return false;
	if (strncmp(host, "[::1]", 5) == 0)
		return host[5] == '\0' || host[5] == ':';
	colon = strchr(host, ':');
	n = colon ? (size_t) (colon - host) : strlen(host);
	if (n == 0 || n >= sizeof name)
		return false;
	memcpy(name, host, n);
	name[n] = '\0';
	if (strcasecmp(name, "localhost") == 0)
		return true;
	return inet_pton(AF_INET, name, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

/* send_response queues r's page (or a redirect) with the headers every answer carries. */
static enum MHD_Result
send_response(struct MHD_Connection *c, unsigned status, char *body, size_t len, const char *type,
			  const char *location, const char *extra_name, const char *extra_value)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(resp, "Content-Security-Policy", csp);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
	/* same-origin, not no-referrer: with no-referrer a browser sends "Origin: null" on POST */
	MHD_add_response_header(resp, "Referrer-Policy", "same-origin");
	MHD_add_response_header(resp, "Cross-Origin-Opener-Policy", "same-origin");
	MHD_add_response_header(resp, "Cross-Origin-Resource-Policy", "same-origin");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (use_tls)
		MHD_add_response_header(resp, "Strict-Transport-Security", "max-age=31536000");
	if (location != NULL && location[0] != '\0')
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
	if (extra_name != NULL)
		MHD_add_response_header(resp, extra_name, extra_value);
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* plain answers with one line of text (refusals before any page). */
static enum MHD_Result
plain(struct MHD_Connection *c, unsigned status, const char *text, const char *extra_name,
	  const char *extra_value)
{
	char *body = strdup(text);

	if (body == NULL)
		return MHD_NO;
	return send_response(c, status, body, strlen(body), "text/plain; charset=utf-8", NULL, extra_name,
						 extra_value);
}

/* hexval is the value of one hex digit, -1 for another character. */
static int
hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* form_decode decodes one application/x-www-form-urlencoded part in place. */
static void
form_decode(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (*s == '+')
			*w++ = ' ';
		else if (*s == '%' && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
			*w++ = (char) (hexval(s[1]) * 16 + hexval(s[2]));
			s += 2;
		} else
			*w++ = *s;
	}
	*w = '\0';
}

/* parse_form splits the POST body into the request's fields; false when there are too many. */
static bool
parse_form(struct WebReq *r, char *body)
{
	char *part, *save = NULL, *eq;

	for (part = strtok_r(body, "&", &save); part != NULL; part = strtok_r(NULL, "&", &save)) {
		if (r->nform == (int) (sizeof r->form_names / sizeof r->form_names[0]))
			return false;
		eq = strchr(part, '=');
		if (eq != NULL)
			*eq++ = '\0';
		form_decode(part);
		if (eq != NULL)
			form_decode(eq);
		r->form_names[r->nform] = part;
		r->form_values[r->nform] = eq ? eq : part + strlen(part);
		r->nform++;
	}
	return true;
}

const char *
web_arg(struct WebReq *r, const char *name)
{
	const char *v = NULL;
	int i;

	if (strcmp(r->method, "POST") == 0) {
		for (i = 0; i < r->nform; i++)
			if (strcmp(r->form_names[i], name) == 0)
				v = r->form_values[i];
	} else
		v = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
	return v != NULL && v[0] != '\0' ? v : NULL;
}

/* same_origin: an action's Origin header is this server as the browser reached it. */
static bool
same_origin(struct MHD_Connection *c)
{
	const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	char want[512];

	if (origin == NULL || host == NULL)
		return false;
	snprintf(want, sizeof want, "%s://%s", use_tls ? "https" : "http", host);
	return strcmp(origin, want) == 0;
}

/* client_address is the socket address c came from (NULL when libmicrohttpd does not say). */
static const struct sockaddr *
client_address(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

	return info ? info->client_addr : NULL;
}

/* check_password checks the HTTP user of the auth file: true with user set, else false with the refusal queued. */
static bool
check_password(struct MHD_Connection *c, const char *url, char *user, size_t userlen,
			   enum MHD_Result *refusal)
{
	const struct sockaddr *sa = client_address(c);
	struct WebAddr from;
	char addr[INET6_ADDRSTRLEN];

	web_addr_of(sa, &from);
	switch (auth_check(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION), &from,
					   user, userlen)) {
	case AUTH_OK:
		return true;
	case AUTH_THROTTLED:
		web_addr_text(sa, addr, sizeof addr);
		log_warn("web_auth_throttled", LOG_STR("path", url), LOG_STR("address", addr));
		*refusal =
			plain(c, MHD_HTTP_TOO_MANY_REQUESTS, "too many failed sign-ins: try again in a few seconds\n",
				  MHD_HTTP_HEADER_RETRY_AFTER, "10");
		return false;
	default:
		*refusal = plain(c, MHD_HTTP_UNAUTHORIZED, "sign in with a user of the console's auth file\n",
						 MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic realm=\"pg_relay\", charset=\"UTF-8\"");
		return false;
	}
}

/*
 * sign_in answers /sign-in?token=...: with this start's token, the session cookie and a redirect
 * to the overview; else 401. The cookie is HttpOnly (no script reads it) and SameSite=Strict (no
 * other site's page sends it along).
 */
static enum MHD_Result
sign_in(struct MHD_Connection *c, const char *method)
{
	char cookie[160], addr[INET6_ADDRSTRLEN], session[65];
	char *body;

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return plain(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET or HEAD only\n", MHD_HTTP_HEADER_ALLOW,
					 "GET, HEAD");
	web_addr_text(client_address(c), addr, sizeof addr);
	if (!signin_token_ok(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token"))) {
		log_warn("web_refused", LOG_STR("path", "/sign-in"), LOG_STR("why", "token"),
				 LOG_STR("address", addr));
		return plain(
			c, MHD_HTTP_UNAUTHORIZED,
			"this is not the sign-in address of this start of the console: use the one it wrote when it "
			"started (web_sign_in)\n",
			NULL, NULL);
	}
	if (!signin_session_new(session))
		return plain(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "no random bytes for a session\n", NULL, NULL);
	snprintf(cookie, sizeof cookie, "%s=%s; Path=/; HttpOnly; SameSite=Strict%s", cookie_name, session,
			 use_tls ? "; Secure" : "");
	log_info("web_signed_in", LOG_STR("address", addr));
	body = strdup("");
	if (body == NULL)
		return MHD_NO;
	return send_response(c, MHD_HTTP_SEE_OTHER, body, 0, "text/plain; charset=utf-8", "/",
						 MHD_HTTP_HEADER_SET_COOKIE, cookie);
}

/* signed_out writes the page of a sign-out: no style sheet, no link but one, since nothing else is served now. */
static void
signed_out(struct WebReq *r, const char *text, const char *again)
{
	buf_puts(&r->out, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
					  "<title>Signed out \xC2\xB7 pg_relay</title></head>\n<body><h1>Signed out</h1>\n"
					  "<p id=\"signed-out\">");
	html_esc(&r->out, text);
	buf_puts(&r->out, "</p>\n<p>");
	buf_puts(&r->out, again);
	buf_puts(&r->out, "</p>\n</body></html>\n");
}

void
action_sign_out(struct WebReq *r)
{
	if (r->user == NULL) {
		signin_session_end(r->session);
		r->header = MHD_HTTP_HEADER_SET_COOKIE;
		snprintf(r->header_value, sizeof r->header_value,
				 "%s=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict%s", cookie_name,
				 use_tls ? "; Secure" : "");
		log_info("web_signed_out", LOG_STR("session", "cookie"));
		signed_out(r, "This browser's session has ended: its cookie signs nobody in any more.",
				   "To sign in again, open the sign-in address the console wrote when it started.");
		return;
	}
	/*
	 * A browser keeps the password of HTTP Basic until an answer with it is 401. The same form again
	 * (its user typed the password into the browser's prompt) goes back to the overview.
	 */
	if (!signin_nonce_answer(web_arg(r, "n"))) {
		snprintf(r->location, sizeof r->location, "/");
		return;
	}
	r->status = MHD_HTTP_UNAUTHORIZED;
	r->header = MHD_HTTP_HEADER_WWW_AUTHENTICATE;
	snprintf(r->header_value, sizeof r->header_value, "Basic realm=\"pg_relay\", charset=\"UTF-8\"");
	log_info("web_signed_out", LOG_STR("session", "password"), LOG_STR("user", r->user));
	signed_out(r,
			   "Your browser no longer sends your password to this console. If it asks for one now, cancel "
			   "to stay signed out.",
			   "<a href=\"/\">Sign in again</a>");
}

/* serve runs the checks of a complete request, then its page or action. */
static enum MHD_Result
serve(struct MHD_Connection *c, const char *url, const char *method, struct ReqCtx *ctx)
{
	struct WebReq r;
	const struct WebPage *page;
	const struct WebAsset *asset;
	char user[AUTH_NAME_MAX + 1], timing[64];
	const char *session;
	long long t0 = now_us();
	enum MHD_Result ret;
	char *body;
	size_t len;
	bool post = strcmp(method, "POST") == 0;

	if (loopback_only &&
		!host_is_loopback(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST)))
		return plain(c, MHD_HTTP_MISDIRECTED_REQUEST,
					 "this console answers only to a loopback name (127.0.0.1, [::1], localhost)\n", NULL,
					 NULL);
	user[0] = '\0';
	session = use_auth ? NULL : MHD_lookup_connection_value(c, MHD_COOKIE_KIND, cookie_name);
	if (use_auth) {
		if (!check_password(c, url, user, sizeof user, &ret))
			return ret;
	} else if (strcmp(url, "/sign-in") == 0)
		return sign_in(c, method);
	else if (!signin_session_ok(session))
		return plain(
			c, MHD_HTTP_UNAUTHORIZED,
			"not signed in: open the sign-in address the console wrote when it started (its web_sign_in "
			"line on standard error, or the file of --token-file)\n",
			NULL, NULL);
	if (strncmp(url, "/static/", 8) == 0) {
		asset = web_asset(url);
		if (asset == NULL || post)
			return plain(c, MHD_HTTP_NOT_FOUND, "not found\n", NULL, NULL);
		body = strdup(asset->body);
		if (body == NULL)
			return MHD_NO;
		return send_response(c, MHD_HTTP_OK, body, strlen(body), asset->content_type, NULL, NULL, NULL);
	}
	page = web_page_find(url);
	if (page == NULL)
		return plain(c, MHD_HTTP_NOT_FOUND, "not found\n", NULL, NULL);
	if (page->post != post || (!post && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0))
		return plain(c, MHD_HTTP_METHOD_NOT_ALLOWED,
					 page->post ? "this action is a POST from a form of the console\n" : "GET or HEAD only\n",
					 MHD_HTTP_HEADER_ALLOW, page->post ? "POST" : "GET, HEAD");
	memset(&r, 0, sizeof r);
	r.conn = c;
	r.method = method;
	r.path = url;
	r.user = user[0] ? user : NULL;
	r.session = session;
	r.status = MHD_HTTP_OK;
	csrf_token(r.user, r.csrf);
	if (r.user != NULL && !signin_nonce(r.nonce))
		return plain(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "no random bytes for a form\n", NULL, NULL);
	if (post) {
		if (ctx->too_big)
			return plain(c, MHD_HTTP_CONTENT_TOO_LARGE, "the form is too large\n", NULL, NULL);
		if (!same_origin(c)) {
			log_warn("web_refused", LOG_STR("path", url), LOG_STR("why", "origin"),
					 LOG_OPT_STR("user", r.user));
			return plain(c, MHD_HTTP_FORBIDDEN,
						 "refused: an action must come from a page of this console (Origin)\n", NULL, NULL);
		}
		if (!parse_form(&r, ctx->body.data ? ctx->body.data : (char *) "") ||
			!csrf_check(r.user, web_arg(&r, "csrf"))) {
			log_warn("web_refused", LOG_STR("path", url), LOG_STR("why", "csrf"),
					 LOG_OPT_STR("user", r.user));
			return plain(c, MHD_HTTP_FORBIDDEN,
						 "refused: the form's token is missing or stale; reload the page and try again\n",
						 NULL, NULL);
		}
	}
	/* signing out asks nothing of the database: it works while the database is away */
	if (page->render == action_sign_out)
		page->render(&r);
	else if (!web_db_caps(&r.caps))
		html_message_page(&r, MHD_HTTP_SERVICE_UNAVAILABLE, "Database unavailable", web_db_error());
	else
		page->render(&r);
	if (r.out.oom) {
		buf_free(&r.out);
		return plain(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n", NULL, NULL);
	}
	len = r.out.len;
	body = buf_steal(&r.out);
	snprintf(timing, sizeof timing, "page;dur=%.1f", (double) (now_us() - t0) / 1000.0);
	ret =
		send_response(c, r.location[0] ? MHD_HTTP_SEE_OTHER : r.status, body, len, "text/html; charset=utf-8",
					  r.location, r.header ? r.header : "Server-Timing", r.header ? r.header_value : timing);
	log_debug("web_request", LOG_STR("method", method), LOG_STR("path", url),
			  LOG_INT("status", (long long) r.status), LOG_INT("ms", (now_us() - t0) / 1000),
			  LOG_OPT_STR("user", r.user));
	return ret;
}

static enum MHD_Result
answer(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
	   const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	struct ReqCtx *ctx = *req_cls;
	const char *length;

	(void) cls;
	(void) version;
	if (ctx == NULL) {
		ctx = calloc(1, sizeof *ctx);
		if (ctx == NULL)
			return MHD_NO;
		*req_cls = ctx;
		length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (length != NULL && strtoll(length, NULL, 10) > MAX_BODY)
			return plain(c, MHD_HTTP_CONTENT_TOO_LARGE, "the request is too large\n", NULL, NULL);
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		if (ctx->body.len + *upload_data_size > MAX_BODY)
			ctx->too_big = true;
		else
			buf_append(&ctx->body, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	return serve(c, url, method, ctx);
}

static void
completed(void *cls, struct MHD_Connection *c, void **req_cls, enum MHD_RequestTerminationCode toe)
{
	struct ReqCtx *ctx = *req_cls;

	(void) cls;
	(void) toe;
	conns_answered(c);
	if (ctx != NULL) {
		buf_free(&ctx->body);
		free(ctx);
	}
	*req_cls = NULL;
}

/*
 * connection_event counts the connections (web_conns.h) and shuts down the sockets of those it
 * says to close: libmicrohttpd then reads the end of the stream and closes them itself, in this
 * same thread, so that no connection is freed under its feet.
 */
static void
connection_event(void *cls, struct MHD_Connection *c, void **socket_context,
				 enum MHD_ConnectionNotificationCode code)
{
	const union MHD_ConnectionInfo *fd;
	struct WebAddr from;
	int evict[2], n, i;

	(void) cls;
	(void) socket_context;
	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		conns_closed(c);
		return;
	}
	fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (fd == NULL || !web_addr_of(client_address(c), &from))
		return;
	n = conns_started(c, fd->connect_fd, &from, evict);
	for (i = 0; i < n; i++)
		if (shutdown(evict[i], SHUT_RDWR) != 0)
			log_debug("web_http", LOG_STR("message", "shutdown of a waiting connection failed"),
					  LOG_STR("error", strerror(errno)));
	if (n > 0)
		log_debug("web_connections_closed", LOG_INT("closed", n), LOG_INT("open", conns_open()));
}

/* mhd_log turns libmicrohttpd's messages into debug lines, and keeps the last for a failed start. */
static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void) cls;
	mhd_message_line(last_message, sizeof last_message, fmt, ap);
	log_debug("web_http", LOG_STR("message", last_message));
}

/* describe writes the URL a listening socket serves at, and names the session cookie after its port. */
static void
describe(int fd, char *out, size_t outlen)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	char host[INET6_ADDRSTRLEN];
	const char *scheme = use_tls ? "https" : "http";

	snprintf(out, outlen, "?");
	if (getsockname(fd, (struct sockaddr *) &ss, &len) != 0)
		return;
	if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *) &ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
		snprintf(out, outlen, "%s://[%s]:%d/", scheme, host, ntohs(a->sin6_port));
		snprintf(cookie_name, sizeof cookie_name, "pg_relay_%d", ntohs(a->sin6_port));
	} else if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *) &ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
		snprintf(out, outlen, "%s://%s:%d/", scheme, host, ntohs(a->sin_port));
		snprintf(cookie_name, sizeof cookie_name, "pg_relay_%d", ntohs(a->sin_port));
	}
}

/*
 * listen_failure says where the console tried to listen (the address and port, and what --listen
 * said when it named a host) and why it could not, with what to change for the usual reasons.
 */
static void
listen_failure(const struct sockaddr_storage *ss, const char *listen, char *err, size_t errlen)
{
	const char *why = mhd_failure(last_message), *hint = "";
	char host[INET6_ADDRSTRLEN] = "?", at[INET6_ADDRSTRLEN + 16];
	int port = 0;

	if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) ss)->sin6_addr, host, sizeof host);
		port = ntohs(((const struct sockaddr_in6 *) ss)->sin6_port);
		snprintf(at, sizeof at, "[%s]:%d", host, port);
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *) ss)->sin_addr, host, sizeof host);
		port = ntohs(((const struct sockaddr_in *) ss)->sin_port);
		snprintf(at, sizeof at, "%s:%d", host, port);
	}
	if (strstr(why, "in use") != NULL)
		hint =
			" (another program, or another console, listens there: stop it, or give --listen another port; "
			"port 0 takes any free one)";
	else if (strstr(why, "assign requested address") != NULL)
		hint = " (the address is not one of this host's: give --listen one of its addresses)";
	else if (strstr(why, "ermission denied") != NULL)
		hint = " (a port below 1024 needs privileges: give --listen a higher port)";
	snprintf(err, errlen, "cannot listen on address %s port %d%s%s%s: %s%s", host, port,
			 strcmp(at, listen) != 0 ? " (--listen=" : "", strcmp(at, listen) != 0 ? listen : "",
			 strcmp(at, listen) != 0 ? ")" : "", why, hint);
}

bool
web_server_start(const struct WebServerOptions *o, char *url, size_t urllen, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	sigset_t all, old;
	const union MHD_DaemonInfo *info;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG;
	bool loopback;

	if (!web_server_check(o, &loopback, err, errlen) || !resolve(o->listen, &ss, err, errlen))
		return false;
	last_message[0] = '\0';
	loopback_only = loopback;
	snprintf(cookie_name, sizeof cookie_name, "pg_relay");
	use_auth = o->auth_file != NULL;
	use_tls = o->tls_cert != NULL;
	if (use_auth && !auth_load(o->auth_file, err, errlen))
		return false;
	if (!csrf_init() || (!use_auth && !signin_init())) {
		snprintf(err, errlen, "no random bytes for the CSRF key or the sign-in token");
		return false;
	}
	if (use_tls) {
		tls_cert_pem = read_pem(o->tls_cert, false, err, errlen);
		tls_key_pem = tls_cert_pem ? read_pem(o->tls_key, true, err, errlen) : NULL;
		if (tls_key_pem == NULL)
			return false;
		flags |= MHD_USE_TLS;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* Its thread inherits this thread's signal mask: only the main thread takes signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (use_tls)
		daemon_ = MHD_start_daemon(
			flags, 0, NULL, NULL, answer, NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
			MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &ss, MHD_OPTION_CONNECTION_LIMIT, (unsigned) CONNS_MAX,
			MHD_OPTION_NOTIFY_CONNECTION, connection_event, NULL, MHD_OPTION_CONNECTION_TIMEOUT, 30U,
			MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) 65536, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
			MHD_OPTION_HTTPS_MEM_CERT, tls_cert_pem, MHD_OPTION_HTTPS_MEM_KEY, tls_key_pem,
			MHD_OPTION_HTTPS_PRIORITIES, "NORMAL:-VERS-SSL3.0:-VERS-TLS1.0:-VERS-TLS1.1", MHD_OPTION_END);
	else
		daemon_ =
			MHD_start_daemon(flags, 0, NULL, NULL, answer, NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
							 MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &ss, MHD_OPTION_CONNECTION_LIMIT,
							 (unsigned) CONNS_MAX, MHD_OPTION_NOTIFY_CONNECTION, connection_event, NULL,
							 MHD_OPTION_CONNECTION_TIMEOUT, 30U, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
							 (size_t) 65536, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (daemon_ == NULL) {
		listen_failure(&ss, o->listen, err, errlen);
		return false;
	}
	info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_LISTEN_FD);
	if (info != NULL)
		describe(info->listen_fd, url, urllen);
	else
		snprintf(url, urllen, "%s://%s/", use_tls ? "https" : "http", o->listen);
	return true;
}

void
web_server_stop(void)
{
	if (daemon_ != NULL)
		MHD_stop_daemon(daemon_);
	daemon_ = NULL;
	auth_free();
	signin_forget();
	free(tls_cert_pem);
	if (tls_key_pem != NULL) {
		memset(tls_key_pem, 0, strlen(tls_key_pem));
		free(tls_key_pem);
	}
	tls_cert_pem = tls_key_pem = NULL;
}
