/*
 * webhook_endpoint.c - the endpoint document of a webhook event parsed, checked and its secrets
 * resolved (webhook_endpoint.h).
 */
#include "webhook_endpoint.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "secrets.h"
#include "utf8.h"

#define WEBHOOK_MAX_HEADERS 50

/* dup_string copies the string member key of obj into *out (NULL when absent or null). */
static bool
dup_string(json_t *obj, const char *key, bool required, char **out, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (v == NULL || json_is_null(v)) {
		if (required)
			snprintf(err, errlen, "the webhook endpoint has no %s", key);
		return !required;
	}
	if (!json_is_string(v)) {
		snprintf(err, errlen, "the webhook endpoint's %s is not a string", key);
		return false;
	}
	*out = strdup(json_string_value(v));
	if (*out == NULL)
		snprintf(err, errlen, "out of memory");
	return *out != NULL;
}

/* header_safe: a non-empty text without control characters but HTAB (nothing can end a header line). */
static bool
header_safe(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s; s++)
		if (((unsigned char) *s < 0x20 && *s != '\t') || *s == 0x7f)
			return false;
	return true;
}

/* token: an HTTP field name (RFC 9110 token). */
static bool
token(const char *s)
{
	if (*s == '\0' || strlen(s) > 128)
		return false;
	for (; *s; s++)
		if (strchr("!#$%&'*+-.^_`|~", *s) == NULL &&
			!((*s >= '0' && *s <= '9') || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
			return false;
	return true;
}

/* parse_header reads one [name, value] pair. */
static bool
parse_header(json_t *v, int i, struct WebhookHeader *h, char *err, size_t errlen)
{
	json_t *n = json_array_get(v, 0), *val = json_array_get(v, 1);

	if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_string(n) || !json_is_string(val)) {
		snprintf(err, errlen, "webhook header %d is not a [name, value] pair of strings", i + 1);
		return false;
	}
	if (!token(json_string_value(n)) || !header_safe(json_string_value(val))) {
		snprintf(err, errlen,
				 "webhook header %d has a name that is not a token, or an empty value or one with "
				 "a control character",
				 i + 1);
		return false;
	}
	h->name = strdup(json_string_value(n));
	h->value = strdup(json_string_value(val));
	h->referenced = strncmp(json_string_value(val), "env:", 4) == 0 ||
					strncmp(json_string_value(val), "file:", 5) == 0 ||
					strncmp(json_string_value(val), "value:", 6) == 0;
	if (h->name == NULL || h->value == NULL) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	return true;
}

/* parse_headers reads the "headers" array. */
static bool
parse_headers(json_t *doc, struct WebhookEndpoint *e, char *err, size_t errlen)
{
	json_t *a = json_object_get(doc, "headers");
	size_t i;

	if (a == NULL || json_is_null(a))
		return true;
	if (!json_is_array(a) || json_array_size(a) > WEBHOOK_MAX_HEADERS) {
		snprintf(err, errlen, "the webhook endpoint's headers are not a list of at most %d pairs",
				 WEBHOOK_MAX_HEADERS);
		return false;
	}
	if (json_array_size(a) == 0)
		return true;
	e->headers = calloc(json_array_size(a), sizeof(*e->headers));
	if (e->headers == NULL) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	for (i = 0; i < json_array_size(a); i++) {
		e->n_headers = (int) i + 1; /* so that webhook_endpoint_free frees what this one holds */
		if (!parse_header(json_array_get(a, i), (int) i, &e->headers[i], err, errlen))
			return false;
	}
	return true;
}

/* check_url: http(s) as allowed, nothing that could end the request line. */
static bool
check_url(const struct WebhookEndpoint *e, char *err, size_t errlen)
{
	const char *u = e->url;

	if (strncmp(u, "https://", 8) != 0 && !(e->allow_http && strncmp(u, "http://", 7) == 0)) {
		snprintf(err, errlen, "the webhook URL must start with https://%s",
				 e->allow_http ? " or http://" : "");
		return false;
	}
	for (; *u; u++)
		if ((unsigned char) *u <= 0x20 || *u == 0x7f) {
			snprintf(err, errlen, "the webhook URL holds a space or a control character");
			return false;
		}
	return true;
}

/* parse_fields reads every member of the document. */
static bool
parse_fields(json_t *doc, struct WebhookEndpoint *e, char *err, size_t errlen)
{
	json_t *timeout = json_object_get(doc, "timeout_ms");

	if (!dup_string(doc, "channel", true, &e->channel, err, errlen) ||
		!dup_string(doc, "url", true, &e->url, err, errlen) ||
		!dup_string(doc, "method", true, &e->method, err, errlen) ||
		!dup_string(doc, "ca_file", false, &e->ca_file, err, errlen) ||
		!dup_string(doc, "signing_secret", false, &e->signing_secret, err, errlen))
		return false;
	e->allow_http = json_is_true(json_object_get(doc, "allow_http"));
	e->debug = json_is_true(json_object_get(doc, "debug"));
	if (!json_is_integer(timeout) || json_integer_value(timeout) < 1 ||
		json_integer_value(timeout) > 86400000) {
		snprintf(err, errlen, "the webhook endpoint's timeout_ms is not between 1 and 86400000");
		return false;
	}
	e->timeout_ms = (long) json_integer_value(timeout);
	if (strcmp(e->method, "POST") != 0 && strcmp(e->method, "PUT") != 0 && strcmp(e->method, "PATCH") != 0) {
		snprintf(err, errlen, "the webhook method must be POST, PUT or PATCH");
		return false;
	}
	if (e->ca_file != NULL && e->ca_file[0] != '/') {
		snprintf(err, errlen, "the webhook's ca_file is not an absolute path");
		return false;
	}
	return check_url(e, err, errlen) && parse_headers(doc, e, err, errlen);
}

bool
webhook_endpoint_parse(const char *json, struct WebhookEndpoint *e, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *doc;
	bool ok;

	memset(e, 0, sizeof(*e));
	doc = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(doc)) {
		struct Buf near = BUF_INIT;

		/* jansson's text may quote the bytes it choked on: the reason is stored, so valid UTF-8 */
		if (doc == NULL)
			(void) utf8_clean_line(&near, jerr.text, strlen(jerr.text), 160);
		snprintf(err, errlen, "the webhook endpoint is not a JSON object%s%s", near.data ? ": " : "",
				 near.data ? near.data : "");
		buf_free(&near);
		json_decref(doc);
		return false;
	}
	ok = parse_fields(doc, e, err, errlen);
	json_decref(doc);
	return ok;
}

bool
webhook_endpoint_resolve(struct WebhookEndpoint *e, const char *secrets_dir, const char *env_bindings,
						 char *err, size_t errlen)
{
	struct SecretOwner o = {SO_WEBHOOK, e->channel, secrets_dir, env_bindings};
	char label[200];
	int i;

	for (i = 0; i < e->n_headers; i++) {
		snprintf(label, sizeof(label), "header %s", e->headers[i].name);
		if (!secrets_resolve_field(&e->headers[i].value, label, &o, err, errlen))
			return false;
		/* a value from a file or the environment goes into a header line: the same rule applies */
		if (!header_safe(e->headers[i].value)) {
			snprintf(err, errlen, "header %s: the resolved value is empty or has a control character",
					 e->headers[i].name);
			return false;
		}
	}
	return secrets_resolve_field(&e->signing_secret, "signing_secret", &o, err, errlen);
}

/* wipe clears and frees a string that may hold a secret. */
static void
wipe(char *s)
{
	if (s != NULL)
		explicit_bzero(s, strlen(s));
	free(s);
}

void
webhook_endpoint_free(struct WebhookEndpoint *e)
{
	int i;

	if (e == NULL)
		return;
	for (i = 0; i < e->n_headers; i++) {
		free(e->headers[i].name);
		wipe(e->headers[i].value);
	}
	free(e->headers);
	wipe(e->signing_secret);
	free(e->channel);
	free(e->url);
	free(e->method);
	free(e->ca_file);
	memset(e, 0, sizeof(*e));
}
