/*
 * oauth_request.c - the client-credentials token request (RFC 6749 section 4.4) as the Microsoft
 * identity platform takes it, and its answer: {token_type, expires_in, access_token}, or
 * {error, error_description ("AADSTSnnnn: ..."), error_codes, trace_id, ...}.
 */
#include "oauth_request.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "transport.h"
#include "utf8.h"

/* The longest token we take: Microsoft's are a few KB; anything bigger is not a token. */
#define TOKEN_MAX 16384

bool
oauth_request_form(struct Buf *out, const struct OAuthClient *c, bool redact)
{
	return buf_puts(out, "grant_type=client_credentials&client_id=") && https_escape(out, c->client_id) &&
		   buf_puts(out, "&client_secret=") &&
		   (redact ? buf_puts(out, "[redacted]") : https_escape(out, c->client_secret)) &&
		   buf_puts(out, "&scope=") && https_escape(out, c->scope);
}

/* is_token_ok: a bearer token fits in a header line: printable ASCII without blanks. */
static bool
is_token_ok(const char *s)
{
	size_t n = 0;

	for (; *s; s++, n++)
		if ((unsigned char) *s <= 0x20 || (unsigned char) *s >= 0x7f)
			return false;
	return n > 0 && n <= TOKEN_MAX;
}

/* lifetime reads expires_in: a number, or a string of digits as some endpoints send; 0 when neither. */
static long
lifetime(json_t *v)
{
	const char *s;
	long n = 0;

	if (json_is_integer(v))
		return json_integer_value(v) > 0 && json_integer_value(v) <= 864000 ? (long) json_integer_value(v)
																			: 0;
	if (!json_is_string(v))
		return 0;
	for (s = json_string_value(v); *s >= '0' && *s <= '9' && n <= 864000; s++)
		n = n * 10 + (*s - '0');
	return *s == '\0' && n <= 864000 ? n : 0;
}

/* take_token reads a 200 answer; a body that is not a usable token is a transient failure. */
static void
take_token(json_t *doc, struct OAuthGrant *g)
{
	json_t *tok = json_object_get(doc, "access_token"), *type = json_object_get(doc, "token_type");

	g->expires_in_s = lifetime(json_object_get(doc, "expires_in"));
	if (!json_is_object(doc) || !json_is_string(tok) || !is_token_ok(json_string_value(tok)) ||
		g->expires_in_s <= 0 ||
		(type != NULL && !(json_is_string(type) && strcasecmp(json_string_value(type), "Bearer") == 0))) {
		g->status = DS_TRANSIENT;
		snprintf(g->error, sizeof(g->error),
				 "the token endpoint answered 200 without a usable bearer token (access_token, expires_in)");
		return;
	}
	g->access_token = strdup(json_string_value(tok));
	if (g->access_token == NULL) {
		g->status = DS_TRANSIENT;
		snprintf(g->error, sizeof(g->error), "out of memory keeping the OAuth2 token");
	}
}

/* describe_refusal writes the failure of a non-200 answer, with the service's error and description. */
static void
describe_refusal(long status, json_t *doc, const char *body, size_t len, struct OAuthGrant *g)
{
	json_t *err = json_object_get(doc, "error"), *desc = json_object_get(doc, "error_description");
	const char *code = json_is_string(err) ? json_string_value(err) : NULL;
	struct Buf what = BUF_INIT;
	bool transient = status == 408 || status == 429 || status >= 500 ||
					 (code != NULL && strcmp(code, "temporarily_unavailable") == 0);

	g->status = transient ? DS_TRANSIENT : DS_PERMANENT;
	if (code != NULL) {
		(void) utf8_clean_line(&what, code, strlen(code), 128);
		if (json_is_string(desc) && buf_puts(&what, ": "))
			(void) utf8_clean_line(&what, json_string_value(desc), strlen(json_string_value(desc)), 512);
	} else
		(void) utf8_clean_line(&what, body, len, 200);
	if (transient)
		snprintf(g->error, sizeof(g->error), "the token endpoint is unavailable (HTTP %ld%s%s)", status,
				 what.len ? ": " : "", what.data ? what.data : "");
	else
		snprintf(g->error, sizeof(g->error),
				 "the token endpoint refused the request (HTTP %ld%s%s); check the profile's login_url, "
				 "tenant_id, client_id, client_secret and scope (configuration)",
				 status, what.len ? ": " : "", what.data ? what.data : "");
	buf_free(&what);
}

void
oauth_request_answer(long status, long retry_after_s, const char *body, size_t len, struct OAuthGrant *g)
{
	json_t *doc = len > 0 ? json_loadb(body, len, 0, NULL) : NULL;

	g->http_status = (int) status;
	g->retry_after_s = retry_after_s;
	if (status == 200)
		take_token(doc, g);
	else
		describe_refusal(status, doc, body, len, g);
	json_decref(doc);
}

char *
oauth_request_trace_answer(const char *body, size_t len)
{
	static const char *const hidden[] = {"access_token", "refresh_token", "id_token"};
	json_t *doc = json_loadb(body, len, 0, NULL);
	struct Buf b = BUF_INIT;
	char *text = NULL;
	size_t i;

	if (json_is_object(doc)) {
		for (i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
			if (json_object_get(doc, hidden[i]) != NULL)
				json_object_set_new(doc, hidden[i], json_string("[redacted]"));
		text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	} else if (buf_printf(&b, "[body %zu bytes, not JSON]", len))
		text = buf_steal(&b);
	buf_free(&b);
	json_decref(doc);
	return text;
}

/* describe_no_answer writes why no answer came: configuration (certificate, URL) or transient. */
static void
describe_no_answer(const struct HttpsResponse *rs, struct OAuthGrant *g)
{
	if (transport_curl_cert_error(rs->curl_code) || transport_curl_config_error(rs->curl_code)) {
		g->status = DS_PERMANENT;
		snprintf(g->error, sizeof(g->error),
				 "the token request failed: %s (configuration: check the profile's login_url and ca_file)",
				 rs->error);
	} else {
		g->status = DS_TRANSIENT;
		snprintf(g->error, sizeof(g->error), "the token request %s: %s",
				 transport_curl_timeout(rs->curl_code) ? "timed out" : "failed", rs->error);
	}
}

/* token_url is {login_url}/{tenant}/oauth2/v2.0/token; false when out of memory. */
static bool
token_url(struct Buf *url, const struct OAuthClient *c)
{
	return buf_printf(url, "%s/", c->login_url) && https_escape(url, c->tenant_id) &&
		   buf_puts(url, "/oauth2/v2.0/token");
}

/* trace_answer adds the answer's body to the trace: a token's is shown with the token hidden. */
static void
trace_answer(struct Buf *trace, const struct HttpsResponse *rs)
{
	char *shown;

	if (trace == NULL || rs->body.len == 0)
		return;
	shown = rs->status == 200 ? oauth_request_trace_answer(rs->body.data, rs->body.len) : NULL;
	if (shown != NULL)
		https_trace_text(trace, "< ", shown, strlen(shown), 16384);
	else if (rs->status != 200)
		https_trace_text(trace, "< ", rs->body.data, rs->body.len, 16384);
	free(shown);
}

void
oauth_request_fetch(void *ctx, const struct OAuthClient *c, struct OAuthGrant *g)
{
	struct OAuthRequest *orq = ctx;
	struct Buf url = BUF_INIT, form = BUF_INIT, shown = BUF_INIT;
	struct HttpsResponse rs;
	long left = (long) ((orq->deadline_us - now_us()) / 1000);

	https_response_init(&rs);
	g->status = DS_TRANSIENT;
	if (left < 1)
		snprintf(g->error, sizeof(g->error), "no time was left for the OAuth2 token request");
	else if (!token_url(&url, c) || !oauth_request_form(&form, c, false) ||
			 !oauth_request_form(&shown, c, true))
		snprintf(g->error, sizeof(g->error), "out of memory building the OAuth2 token request");
	else {
		struct HttpsRequest rq = {.url = url.data,
								  .content_type = "application/x-www-form-urlencoded",
								  .body = form.data,
								  .body_len = form.len,
								  .ca_file = orq->ca_file,
								  .connect_timeout_ms = orq->connect_timeout_ms,
								  .timeout_ms = left,
								  .trace_body = shown.data,
								  .trace = orq->trace};

		if (!https_send(orq->http, &rq, &rs))
			snprintf(g->error, sizeof(g->error), "out of memory during the OAuth2 token request");
		else if (rs.status == 0)
			describe_no_answer(&rs, g);
		else {
			trace_answer(orq->trace, &rs);
			oauth_request_answer(rs.status, rs.retry_after_s, rs.body.data, rs.body.len, g);
		}
	}
	if (form.data != NULL)
		explicit_bzero(form.data, form.len);
	if (rs.body.data != NULL)
		explicit_bzero(rs.body.data, rs.body.len);
	buf_free(&form);
	buf_free(&shown);
	buf_free(&url);
	https_response_free(&rs);
}
