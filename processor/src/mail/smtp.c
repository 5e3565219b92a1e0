/*
 * smtp.c - deliver a message over SMTP with libcurl, one cached connection per session.
 *
 * One deliver() is: build the MIME bytes, (re)use the session's easy handle, set every option
 * afresh, perform, and classify (smtp_result.c) what the dialogue (smtp_dialog.c) recorded. If
 * a reused connection turns out dead before the server accepted DATA, the attempt is repeated
 * once at once on a fresh connection: nothing can have been delivered.
 */
#include "smtp.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "https.h"
#include "mime.h"
#include "oauth.h"
#include "oauth_request.h"
#include "smtp_dialog.h"
#include "smtp_result.h"
#include "utf8.h"

/* Upload is the message being handed to libcurl by read_cb. */
struct Upload {
	const char *data;
	size_t len;
	size_t off;
};

struct TransportSession {
	CURL *curl;               /* NULL until the first delivery, and after a reset */
	char *key;                /* host/port/user/security/... the cached connection is for */
	struct SmtpDialog dialog; /* fed by the callbacks; lives as long as the handle */
	struct Upload up;
	char errbuf[CURL_ERROR_SIZE];
	struct Https *http; /* token requests of a profile's OAuth2 app; NULL until one is needed */
};

/* smtp_session_new makes an empty session: the easy handle is created by the first delivery. */
static struct TransportSession *
smtp_session_new(void)
{
	struct TransportSession *s = calloc(1, sizeof(*s));

	if (s != NULL)
		smtp_dialog_init(&s->dialog, NULL);
	return s;
}

/* drop_handle closes the cached connection (QUIT) and forgets the profile it was for. */
static void
drop_handle(struct TransportSession *s)
{
	s->dialog.trace = NULL; /* the QUIT exchange belongs to no attempt */
	if (s->curl != NULL)
		curl_easy_cleanup(s->curl);
	s->curl = NULL;
	free(s->key);
	s->key = NULL;
}

/* smtp_session_free closes the cached connection and frees s; NULL is a no-op. */
static void
smtp_session_free(struct TransportSession *s)
{
	if (s == NULL)
		return;
	drop_handle(s);
	smtp_dialog_free(&s->dialog);
	https_free(s->http);
	free(s);
}

/* read_cb hands the message to libcurl; the dialogue learns when the body starts and ends. */
static size_t
read_cb(char *buf, size_t size, size_t nitems, void *userdata)
{
	struct TransportSession *s = userdata;
	size_t n = s->up.len - s->up.off;

	if (n > size * nitems)
		n = size * nitems;
	if (s->up.off == 0 && n > 0)
		smtp_dialog_body_begin(&s->dialog, s->up.data, s->up.len);
	memcpy(buf, s->up.data + s->up.off, n);
	s->up.off += n;
	/* Note that libcurl may not call again once it has INFILESIZE bytes: mark the end here. */
	if (s->up.off == s->up.len)
		smtp_dialog_body_end(&s->dialog, s->up.len);
	return n;
}

/* header_cb receives every server reply line (libcurl's pingpong layer passes them here). */
static size_t
header_cb(char *buf, size_t size, size_t nitems, void *userdata)
{
	struct TransportSession *s = userdata;

	smtp_dialog_reply_line(&s->dialog, buf, size * nitems);
	return size * nitems;
}

/* debug_cb sees the commands libcurl sends (HEADER_OUT) and its informational lines. */
static int
debug_cb(CURL *h, curl_infotype type, char *data, size_t size, void *userdata)
{
	struct TransportSession *s = userdata;

	(void) h;
	if (type == CURLINFO_HEADER_OUT)
		smtp_dialog_command(&s->dialog, data, size);
	else if (type == CURLINFO_TEXT)
		smtp_dialog_info(&s->dialog, data, size);
	return 0;
}

/* profile_key names what a cached connection is bound to; a change means a new connection. */
static char *
profile_key(const struct SmtpProfile *p)
{
	struct Buf b = BUF_INIT;

	if (!buf_printf(&b, "%s\n%d\n%d\n%s\n%s\n%s\n%s", p->host, p->port, (int) p->security,
					p->username ? p->username : "", p->ca_file ? p->ca_file : "",
					p->helo_name ? p->helo_name : "",
					p->client_id     ? "app"
					: p->oauth_token ? "oauth"
									 : "password"))
		return NULL;
	return buf_steal(&b);
}

/* build_url: smtp[s]://host:port/<helo>; IPv6 literals get brackets, the EHLO name is escaped. */
static char *
build_url(CURL *c, const struct SmtpProfile *p, const char *ehlo_fallback)
{
	const char *helo = p->helo_name ? p->helo_name : ehlo_fallback;
	bool v6 = strchr(p->host, ':') != NULL && p->host[0] != '[';
	char *esc = curl_easy_escape(c, helo ? helo : "", 0);
	struct Buf b = BUF_INIT;
	bool ok;

	if (esc == NULL)
		return NULL;
	ok = buf_printf(&b, "%s://%s%s%s:%d/%s", p->security == SEC_TLS ? "smtps" : "smtp", v6 ? "[" : "",
					p->host, v6 ? "]" : "", p->port, esc);
	curl_free(esc);
	if (!ok) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

/* SETOPT sets one option unless an earlier one failed; every libcurl return is checked. */
#define SETOPT(rc, c, opt, val) ((rc) == CURLE_OK ? ((rc) = curl_easy_setopt((c), (opt), (val))) : (rc))

/* Attempt is one perform: its inputs and the libcurl code it ended with. */
struct Attempt {
	const struct Message *m;
	const struct DeliveryOptions *opt;
	struct curl_slist *rcpts; /* "<addr>" per envelope recipient */
	const struct Buf *msg;    /* the MIME bytes */
	long time_ms;             /* budget for this perform */
	const char *bearer;       /* the OAuth2 app's token for XOAUTH2, or NULL */
	CURLcode rc;
	bool reused; /* ran on a cached connection */
};

/* set_security selects TLS: implicit (smtps URL), STARTTLS required/optional, or none. */
static CURLcode
set_security(CURL *c, const struct SmtpProfile *p)
{
	CURLcode rc = CURLE_OK;
	long use_ssl = p->security == SEC_STARTTLS            ? CURLUSESSL_ALL
				   : p->security == SEC_STARTTLS_OPTIONAL ? CURLUSESSL_TRY
				   : p->security == SEC_TLS               ? CURLUSESSL_ALL
														  : CURLUSESSL_NONE;

	SETOPT(rc, c, CURLOPT_USE_SSL, use_ssl);
	/* Verification is never switched off: a bad certificate is a configuration error. */
	SETOPT(rc, c, CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(rc, c, CURLOPT_SSL_VERIFYHOST, 2L);
	if (p->ca_file != NULL)
		SETOPT(rc, c, CURLOPT_CAINFO, p->ca_file);
	return rc;
}

/*
 * set_auth selects AUTH: XOAUTH2/OAUTHBEARER with a token (the app's, else the profile's static
 * one), else PLAIN/LOGIN with a password.
 */
static CURLcode
set_auth(CURL *c, const struct SmtpProfile *p, const char *bearer)
{
	CURLcode rc = CURLE_OK;

	if (p->username == NULL)
		return rc;
	SETOPT(rc, c, CURLOPT_USERNAME, p->username);
	if (bearer != NULL)
		SETOPT(rc, c, CURLOPT_XOAUTH2_BEARER, bearer);
	else if (p->oauth_token != NULL)
		SETOPT(rc, c, CURLOPT_XOAUTH2_BEARER, p->oauth_token);
	else if (p->password != NULL)
		SETOPT(rc, c, CURLOPT_PASSWORD, p->password);
	return rc;
}

/* set_options configures the handle for one attempt (after curl_easy_reset). */
static CURLcode
set_options(struct TransportSession *s, struct Attempt *a, const char *url)
{
	const struct Profile *pr = &a->m->profile;
	CURL *c = s->curl;
	CURLcode rc = CURLE_OK;
	long connect_ms = pr->connect_timeout_ms < a->time_ms ? pr->connect_timeout_ms : a->time_ms;

	SETOPT(rc, c, CURLOPT_ERRORBUFFER, s->errbuf);
	SETOPT(rc, c, CURLOPT_URL, url);
	SETOPT(rc, c, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
	SETOPT(rc, c, CURLOPT_NOSIGNAL, 1L);
	SETOPT(rc, c, CURLOPT_MAXAGE_CONN, SMTP_MAX_IDLE_S);
	SETOPT(rc, c, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	SETOPT(rc, c, CURLOPT_TIMEOUT_MS, a->time_ms);
	/* also bounds the QUIT exchange when the handle is cleaned up */
	SETOPT(rc, c, CURLOPT_SERVER_RESPONSE_TIMEOUT, (a->time_ms + 999) / 1000);
	if (rc == CURLE_OK)
		rc = set_security(c, &pr->smtp);
	if (rc == CURLE_OK)
		rc = set_auth(c, &pr->smtp, a->bearer);
	SETOPT(rc, c, CURLOPT_MAIL_RCPT, a->rcpts);
	SETOPT(rc, c, CURLOPT_MAIL_RCPT_ALLLOWFAILS, 1L);
	SETOPT(rc, c, CURLOPT_UPLOAD, 1L);
	SETOPT(rc, c, CURLOPT_READFUNCTION, read_cb);
	SETOPT(rc, c, CURLOPT_READDATA, s);
	SETOPT(rc, c, CURLOPT_INFILESIZE_LARGE, (curl_off_t) a->msg->len);
	SETOPT(rc, c, CURLOPT_HEADERFUNCTION, header_cb);
	SETOPT(rc, c, CURLOPT_HEADERDATA, s);
	/* the debug callback is how commands are seen, so it is on even without profile.debug */
	SETOPT(rc, c, CURLOPT_DEBUGFUNCTION, debug_cb);
	SETOPT(rc, c, CURLOPT_DEBUGDATA, s);
	SETOPT(rc, c, CURLOPT_VERBOSE, 1L);
	return rc;
}

/* set_mail_from sets MAIL FROM:<address>. */
static CURLcode
set_mail_from(CURL *c, const char *address)
{
	struct Buf b = BUF_INIT;
	CURLcode rc;

	if (!buf_printf(&b, "<%s>", address)) {
		buf_free(&b);
		return CURLE_OUT_OF_MEMORY;
	}
	rc = curl_easy_setopt(c, CURLOPT_MAIL_FROM, b.data); /* libcurl copies the string */
	buf_free(&b);
	return rc;
}

/* perform_once runs one SMTP transaction on the session's handle (a new one if needed). */
static void
perform_once(struct TransportSession *s, struct Attempt *a)
{
	long connects = 0;
	char *url;

	s->errbuf[0] = '\0';
	smtp_dialog_reset(&s->dialog);
	s->up = (struct Upload){a->msg->data, a->msg->len, 0};
	if (s->curl == NULL && (s->curl = curl_easy_init()) == NULL) {
		a->rc = CURLE_FAILED_INIT;
		return;
	}
	curl_easy_reset(s->curl); /* options go; the cached connection stays */
	url = build_url(s->curl, &a->m->profile.smtp, a->opt->ehlo_fallback);
	a->rc = url ? set_options(s, a, url) : CURLE_OUT_OF_MEMORY;
	if (a->rc == CURLE_OK)
		a->rc = set_mail_from(s->curl, a->m->from.address);
	if (a->rc == CURLE_OK)
		a->rc = curl_easy_perform(s->curl);
	free(url);
	/* No new connection means the cached one carried this transaction. */
	a->reused = curl_easy_getinfo(s->curl, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK && connects == 0 &&
				a->rc != CURLE_OUT_OF_MEMORY;
	s->up = (struct Upload){NULL, 0, 0};
	/*
	 * The recipient list is freed after deliver(): the handle must not point at it while it
	 * waits in the session. Everything else it points at lives in the session.
	 */
	if (curl_easy_setopt(s->curl, CURLOPT_MAIL_RCPT, NULL) != CURLE_OK)
		drop_handle(s);
}

/* envelope lists the recipients to RCPT: status pending or retrying, in message order. */
static bool
envelope(const struct Message *m, const struct Recipient ***env, int *n, struct curl_slist **sl)
{
	int i;

	*n = 0;
	*sl = NULL;
	*env = calloc((size_t) m->n_rcpt + 1, sizeof(**env));
	if (*env == NULL)
		return false;
	for (i = 0; i < m->n_rcpt; i++) {
		const struct Recipient *r = &m->rcpt[i];
		struct curl_slist *next;
		char buf[1024];

		if (r->status != RS_PENDING && r->status != RS_RETRYING)
			continue;
		snprintf(buf, sizeof(buf), "<%s>", r->addr.address);
		if ((next = curl_slist_append(*sl, buf)) == NULL)
			return false;
		*sl = next;
		(*env)[(*n)++] = r;
	}
	return true;
}

/* prepare_session drops the handle when the profile's connection identity changed. */
static bool
prepare_session(struct TransportSession *s, const struct Message *m)
{
	char *key = profile_key(&m->profile.smtp);

	if (key == NULL)
		return false;
	if (s->key == NULL || strcmp(s->key, key) != 0) {
		drop_handle(s);
		s->key = key;
	} else
		free(key);
	return true;
}

/* transact performs, and repeats once on a fresh connection when a reused one was dead. */
static void
transact(struct TransportSession *s, struct Attempt *a, struct SmtpAttempt *sa)
{
	struct Buf *trace = s->dialog.trace;
	long long start = now_us();
	long left;

	perform_once(s, a);
	sa->curl_code = (int) a->rc;
	if (!smtp_result_retry_fresh(sa, a->reused))
		return;
	left = a->time_ms - (long) ((now_us() - start) / 1000);
	if (left < 100)
		return;
	smtp_dialog_note(&s->dialog, "the reused connection failed before DATA; retrying once on "
								 "a new connection");
	drop_handle(s);
	if (!prepare_session(s, a->m))
		return;
	s->dialog.trace = trace;
	a->time_ms = left;
	perform_once(s, a);
	sa->curl_code = (int) a->rc;
}

/* build_message makes the MIME bytes and enforces profile.max_message_bytes. */
static bool
build_message(const struct Message *m, struct Buf *msg, struct DeliveryResult *r)
{
	struct MimeOptions mo = {time(NULL), mime_boundary_seed()};

	if (!mime_build(m, &mo, msg, r->error, sizeof(r->error)))
		return false;
	if (m->profile.max_message_bytes > 0 && msg->len > (size_t) m->profile.max_message_bytes) {
		r->status = DS_PERMANENT;
		snprintf(r->error, sizeof(r->error),
				 "the message has %zu bytes, more than the profile's "
				 "max_message_bytes (%ld)",
				 msg->len, m->profile.max_message_bytes);
	}
	return true;
}

/* fail_all describes a failure before any SMTP exchange: every envelope recipient the same. */
static bool
fail_all(struct DeliveryResult *r, const struct Recipient *const *env, int n)
{
	int i;

	r->rcpt = calloc((size_t) (n > 0 ? n : 1), sizeof(*r->rcpt));
	if (r->rcpt == NULL)
		return false;
	r->n_rcpt = n;
	for (i = 0; i < n; i++) {
		r->rcpt[i].id = env[i]->id;
		r->rcpt[i].status = r->status == DS_PERMANENT ? RS_FAILED : RS_RETRYING;
	}
	return true;
}

/*
 * scrub_error cuts the secrets out of r->error. libcurl's error text never holds one, but the
 * reason quotes server replies, and a server may echo what it was sent.
 */
static bool
scrub_error(struct DeliveryResult *r, const struct SmtpDialog *d)
{
	struct Buf e = BUF_INIT;
	bool ok = buf_puts(&e, r->error) && buf_redact(&e, d->secrets, SMTP_DIALOG_SECRETS);

	if (ok) {
		snprintf(r->error, sizeof(r->error), "%s", e.data);
		utf8_trim_cut(r->error);
	}
	buf_free(&e);
	return ok;
}

/* app_client is the profile's OAuth2 app (tenant_id, client_id, client_secret). */
static struct OAuthClient
app_client(const struct SmtpProfile *p)
{
	return (struct OAuthClient){p->login_url, p->tenant_id, p->client_id, p->client_secret, p->scope};
}

/*
 * app_token takes the app's token from the shared cache (fetching one over the session's HTTPS
 * client when needed) into t and a->bearer, and takes the time it took from a's budget. The
 * profile's ca_file is used for the token endpoint too: a private CA or a TLS-inspecting proxy
 * is usually in the way of both. False with r->error set when there is no token: nothing is sent.
 */
static bool
app_token(struct TransportSession *s, struct Attempt *a, struct OAuthToken *t, struct DeliveryResult *r)
{
	const struct Profile *p = &a->m->profile;
	struct OAuthClient c = app_client(&p->smtp);
	long long start = now_us();
	struct OAuthRequest orq = {NULL, p->smtp.ca_file, p->connect_timeout_ms,
							   start + (long long) a->time_ms * 1000, p->debug ? &r->trace : NULL};
	struct OAuthGrant g;

	memset(&g, 0, sizeof(g));
	if (s->http == NULL && (s->http = https_new()) == NULL) {
		r->status = DS_TRANSIENT;
		snprintf(r->error, sizeof(r->error), "out of memory");
		return false;
	}
	orq.http = s->http;
	if (!oauth_token(&c, oauth_request_fetch, &orq, start, orq.deadline_us, t, &g)) {
		r->status = g.status;
		r->retry_after_s = g.retry_after_s;
		r->reply_code = g.http_status;
		snprintf(r->error, sizeof(r->error), "no OAuth2 token for SMTP AUTH XOAUTH2: %s", g.error);
		oauth_grant_free(&g);
		return false;
	}
	smtp_dialog_add_secret(&s->dialog, t->value);
	a->bearer = t->value;
	a->time_ms -= (long) ((now_us() - start) / 1000);
	if (a->time_ms < 1)
		a->time_ms = 1;
	return true;
}

/*
 * transact_with_app authenticates with the app's token. A token from the cache that the server
 * refuses (5xx to AUTH: revoked, or expired early) is dropped from the cache and the attempt made
 * once more with a new one; a token fetched for this attempt and refused is a configuration
 * problem, not retried. False only when out of memory; r->error is set when no token was had.
 */
static bool
transact_with_app(struct TransportSession *s, struct Attempt *a, struct SmtpAttempt *sa,
				  struct OAuthToken *tokens, struct DeliveryResult *r)
{
	struct OAuthClient c = app_client(&a->m->profile.smtp);
	long long end = now_us() + (long long) a->time_ms * 1000;

	if (!app_token(s, a, &tokens[0], r))
		return true;
	transact(s, a, sa);
	if (a->rc != CURLE_LOGIN_DENIED || s->dialog.auth.code / 100 != 5 || tokens[0].fetched)
		return true;
	oauth_invalidate(&c, tokens[0].serial);
	a->time_ms = (long) ((end - now_us()) / 1000);
	if (a->time_ms < 100)
		return true; /* the budget is spent: the refusal stands, the token is gone for the next attempt */
	smtp_dialog_note(&s->dialog, "the server refused the cached token; fetching a new one, trying once more");
	if (!app_token(s, a, &tokens[1], r))
		return true;
	transact(s, a, sa);
	return true;
}

/*
 * smtp_deliver is smtp_transport.deliver: one attempt (plus at most one immediate repeat on a
 * fresh connection) to hand m to the profile's server. Returns false only when r could not be
 * filled for lack of memory.
 */
static bool
smtp_deliver(struct TransportSession *s, const struct Message *m, const struct DeliveryOptions *opt,
			 struct DeliveryResult *r)
{
	const struct Recipient **env = NULL;
	struct Attempt a = {m, opt, NULL, NULL, transport_budget_ms(m, opt), NULL, CURLE_OK, false};
	struct OAuthToken tokens[2] = {{NULL, 0, false}, {NULL, 0, false}};
	struct SmtpAttempt sa = {0, s->errbuf, &s->dialog, NULL, 0, m->profile.smtp.security};
	struct Buf msg = BUF_INIT;
	bool ok = false;

	r->error[0] = '\0';
	if (!envelope(m, &env, &sa.n_env, &a.rcpts) || !build_message(m, &msg, r))
		goto out;
	if (m->profile.transport != TRANSPORT_SMTP)
		snprintf(r->error, sizeof(r->error), "profile %s is not an smtp profile",
				 m->profile.name ? m->profile.name : "(unnamed)");
	sa.env = env;
	a.msg = &msg;
	if (sa.n_env == 0 || r->error[0] != '\0') {
		r->status = DS_PERMANENT;
		if (sa.n_env == 0)
			snprintf(r->error, sizeof(r->error), "no recipient is pending or retrying");
		ok = fail_all(r, env, sa.n_env);
		goto out;
	}
	if (!prepare_session(s, m))
		goto out;
	s->dialog.trace = m->profile.debug ? &r->trace : NULL;
	smtp_dialog_add_secret(&s->dialog, m->profile.smtp.password);
	smtp_dialog_add_secret(&s->dialog, m->profile.smtp.oauth_token);
	smtp_dialog_add_secret(&s->dialog, m->profile.smtp.client_secret);
	if (m->profile.smtp.client_id != NULL)
		ok = transact_with_app(s, &a, &sa, tokens, r);
	else {
		transact(s, &a, &sa);
		ok = true;
	}
	ok = ok && (r->error[0] != '\0' ? fail_all(r, env, sa.n_env) : smtp_result_fill(&sa, r)) &&
		 scrub_error(r, &s->dialog);
out:
	if (!ok && r->error[0] == '\0')
		snprintf(r->error, sizeof(r->error), "out of memory");
	s->dialog.trace = NULL;
	memset(s->dialog.secrets, 0, sizeof(s->dialog.secrets));
	oauth_token_free(&tokens[0]);
	oauth_token_free(&tokens[1]);
	curl_slist_free_all(a.rcpts);
	free(env);
	buf_free(&msg);
	return ok;
}

const struct Transport smtp_transport = {
	"smtp",
	smtp_session_new,
	smtp_session_free,
	smtp_deliver,
};
