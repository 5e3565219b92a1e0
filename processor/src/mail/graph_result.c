/*
 * graph_result.c - classify one sendMail request (Microsoft Graph's documented statuses and
 * error body, libcurl's error codes) into a DeliveryResult. Branches on the HTTP status and the
 * error code, never on the message text, which is neither stable nor in one language.
 */
#include "graph_result.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* How much of Graph's error code, message and a body that is not JSON an error text keeps. */
#define CODE_MAX 128
#define MESSAGE_MAX 600

bool
graph_error_parse(const char *body, size_t len, struct Buf *code, struct Buf *message, struct Buf *request_id)
{
	json_t *doc = body != NULL && len > 0 ? json_loadb(body, len, 0, NULL) : NULL;
	json_t *err = json_object_get(doc, "error"), *c = json_object_get(err, "code"),
		   *m = json_object_get(err, "message"),
		   *rid = json_object_get(json_object_get(err, "innerError"), "request-id");
	bool ok = json_is_object(err) && json_is_string(c);

	if (ok) {
		(void) utf8_clean_line(code, json_string_value(c), strlen(json_string_value(c)), CODE_MAX);
		if (json_is_string(m))
			(void) utf8_clean_line(message, json_string_value(m), strlen(json_string_value(m)), MESSAGE_MAX);
		if (json_is_string(rid))
			(void) utf8_clean_line(request_id, json_string_value(rid), strlen(json_string_value(rid)), 100);
	}
	json_decref(doc);
	return ok;
}

/* set_text replaces *dst by a copy of text (NULL or "" for none); false when out of memory. */
static bool
set_text(char **dst, const char *text)
{
	free(*dst);
	*dst = NULL;
	if (text == NULL || text[0] == '\0')
		return true;
	*dst = strdup(text);
	return *dst != NULL;
}

/* config_hint says what an operator should look at for the permanent errors that are configuration. */
static const char *
config_hint(long status, const char *code)
{
	if (status == 401)
		return " (configuration: the token was refused twice; check the profile's scope and the app's "
			   "registration)";
	if (status == 403)
		return " (configuration: the app needs the Mail.Send application permission, with admin consent, for "
			   "this mailbox)";
	if (status == 404 && strcmp(code, "ErrorInvalidUser") == 0)
		return " (configuration: the profile's sender mailbox does not exist)";
	if (status >= 300 && status < 400)
		return " (configuration: check the profile's graph_url)";
	return "";
}

/* fill_answered classifies a request that got an HTTP answer. */
static bool
fill_answered(const struct GraphAnswer *a, struct DeliveryResult *r)
{
	struct Buf code = BUF_INIT, msg = BUF_INIT, rid = BUF_INIT, reply = BUF_INIT;
	bool json = graph_error_parse(a->body, a->body_len, &code, &msg, &rid), ok;
	const char *c = code.data ? code.data : "";

	r->reply_code = (int) a->status;
	if (a->status / 100 == 2) {
		r->status = DS_SENT;
		ok = buf_printf(&reply, "%ld Accepted", a->status);
	} else {
		if (!json)
			(void) utf8_clean_line(&msg, a->body ? a->body : "", a->body_len, 200);
		ok = buf_printf(&reply, "%ld%s%s%s%s", a->status, c[0] ? " " : "", c, msg.len ? ": " : "",
						msg.data ? msg.data : "");
		if (a->status == 408 || a->status == 429 || a->status >= 500) {
			r->status = DS_TRANSIENT;
			r->retry_after_s = a->retry_after_s;
			utf8_snprintf(r->error, sizeof r->error,
						  "Microsoft Graph could not take the message now (HTTP %s)%s",
						  reply.data ? reply.data : "",
						  a->retry_after_s >= 0 ? "; it asked to retry later (Retry-After)" : "");
		} else {
			r->status = DS_PERMANENT;
			utf8_snprintf(r->error, sizeof r->error, "Microsoft Graph refused the message (HTTP %s)%s",
						  reply.data ? reply.data : "", config_hint(a->status, c));
		}
	}
	ok = ok && set_text(&r->reply, reply.data) &&
		 set_text(&r->provider_message_id, a->request_id && a->request_id[0] ? a->request_id : rid.data);
	buf_free(&code);
	buf_free(&msg);
	buf_free(&rid);
	buf_free(&reply);
	return ok;
}

/* fill_unanswered classifies a request that got no HTTP answer. */
static void
fill_unanswered(const struct GraphAnswer *a, struct DeliveryResult *r)
{
	const char *why = a->curl_error && a->curl_error[0] ? a->curl_error : "no answer";

	r->status = DS_TRANSIENT;
	if (a->body_sent) {
		/* The request went out whole: Graph may have queued the message. Same Message-ID next time. */
		r->unknown_outcome = true;
		utf8_snprintf(r->error, sizeof r->error,
					  "no answer from Microsoft Graph after the message was sent; it may have been accepted "
					  "(%s; client-request-id %s)",
					  why, a->client_request_id && a->client_request_id[0] ? a->client_request_id : "-");
	} else if (transport_curl_cert_error(a->curl_code)) {
		r->status = DS_PERMANENT;
		utf8_snprintf(
			r->error, sizeof r->error,
			"TLS certificate verification failed (configuration: check profile.graph.graph_url against "
			"the certificate, and profile.graph.ca_file): %s",
			why);
	} else if (transport_curl_config_error(a->curl_code)) {
		r->status = DS_PERMANENT;
		utf8_snprintf(
			r->error, sizeof r->error,
			"the Microsoft Graph request is invalid (configuration: check the profile's graph_url): %s", why);
	} else
		utf8_snprintf(r->error, sizeof r->error, "%s reaching Microsoft Graph: %s",
					  transport_curl_timeout(a->curl_code) ? "timed out" : "failed", why);
}

bool
graph_result_fill(const struct GraphAnswer *a, struct DeliveryResult *r)
{
	r->error[0] = '\0';
	r->unknown_outcome = false;
	r->retry_after_s = -1;
	if (a->status != 0)
		return fill_answered(a, r);
	fill_unanswered(a, r);
	return true;
}
