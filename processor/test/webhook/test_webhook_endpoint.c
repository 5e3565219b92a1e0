/*
 * test_webhook_endpoint.c - the endpoint document of _webhook_claim(): what is taken, what is
 * refused (whatever the database holds, nothing that could end a request or header line gets
 * through), and secrets resolved without showing up in errors.
 */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "utf8.h"
#include "webhook_endpoint.h"

/* utf8_valid: s is valid UTF-8 to its last byte. */
static bool
utf8_valid(const char *s)
{
	while (*s) {
		size_t n = utf8_len((const unsigned char *) s);

		if (n == 0)
			return false;
		s += n;
	}
	return true;
}

#define DOC(extra)                                                                                          \
	"{\"channel\": \"hook\", \"url\": \"https://127.0.0.1:8443/hooks?a=1\", \"method\": \"POST\", "         \
	"\"allow_http\": false, \"ca_file\": null, \"debug\": false, \"signing_secret\": \"env:HOOK_SECRET\", " \
	"\"timeout_ms\": 30000" extra "}"

/* The variables the channel "hook" of DOC may name (--secret-env). */
#define BINDINGS "TOKEN=webhook/hook, HOOK_SECRET=webhook/hook, NOT_SET_ANYWHERE=webhook/hook"

static void
test_parse(void)
{
	struct WebhookEndpoint e;
	char err[256] = "";

	CHECK(webhook_endpoint_parse(
		DOC(", \"headers\": [[\"Authorization\", \"env:TOKEN\"], [\"X-Source\", \"db\"]]"), &e, err,
		sizeof(err)));
	CHECK_STR(err, "");
	CHECK_STR(e.channel, "hook");
	CHECK_STR(e.url, "https://127.0.0.1:8443/hooks?a=1");
	CHECK_STR(e.method, "POST");
	CHECK(e.timeout_ms == 30000);
	CHECK(e.n_headers == 2);
	CHECK_STR(e.headers[0].name, "Authorization");
	CHECK(e.headers[0].referenced);
	CHECK(!e.headers[1].referenced);
	CHECK_STR(e.signing_secret, "env:HOOK_SECRET");
	webhook_endpoint_free(&e);
	CHECK(e.url == NULL);
	webhook_endpoint_free(NULL);
}

static void
test_refused(void)
{
	static const struct {
		const char *doc, *error;
	} rows[] = {
		{"[]", "the webhook endpoint is not a JSON object"},
		/* jansson quotes the bytes it choked on: the reason keeps valid UTF-8 only */
		{"{\"e\\r\xee\x8f\x8f[]", "the webhook endpoint is not a JSON object: "},
		{"{\"channel\": \"hook\"}", "the webhook endpoint has no url"},
		{"{\"channel\": \"h\", \"url\": \"ftp://x/\", \"method\": \"POST\", \"timeout_ms\": 1}",
		 "the webhook URL must start with https://"},
		{"{\"channel\": \"h\", \"url\": \"http://x/\", \"method\": \"POST\", \"timeout_ms\": 1}",
		 "the webhook URL must start with https://"},
		{"{\"channel\": \"h\", \"url\": \"https://x/\\r\\nX: y\", \"method\": \"POST\", \"timeout_ms\": 1}",
		 "the webhook URL holds a space or a control character"},
		{"{\"channel\": \"h\", \"url\": \"https://x/\", \"method\": \"GET\", \"timeout_ms\": 1}",
		 "the webhook method must be POST, PUT or PATCH"},
		{"{\"channel\": \"h\", \"url\": \"https://x/\", \"method\": \"POST\", \"timeout_ms\": 0}",
		 "the webhook endpoint's timeout_ms is not between 1 and 86400000"},
		{DOC(", \"headers\": [[\"X-A\", \"a\\r\\nInjected: yes\"]]"),
		 "webhook header 1 has a name that is not a token, or an empty value or one with a control "
		 "character"},
		{DOC(", \"headers\": [[\"Bad Name\", \"a\"]]"), "webhook header 1 has a name that is not a token, or "
														"an empty value or one with a control character"},
		{DOC(", \"headers\": [[\"X-A\"]]"), "webhook header 1 is not a [name, value] pair of strings"},
		{DOC(", \"headers\": {\"X-A\": \"a\"}"),
		 "the webhook endpoint's headers are not a list of at most 50 pairs"},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct WebhookEndpoint e;
		char err[256] = "";

		CHECK(!webhook_endpoint_parse(rows[i].doc, &e, err, sizeof(err)));
		if (strncmp(err, rows[i].error, strlen(rows[i].error)) != 0)
			fprintf(stderr, "  row %zu: \"%s\"\n", i, err);
		CHECK(strncmp(err, rows[i].error, strlen(rows[i].error)) == 0);
		CHECK(utf8_valid(err));
		webhook_endpoint_free(&e);
	}
}

static void
test_resolve(void)
{
	struct WebhookEndpoint e;
	char err[256] = "";

	setenv("TOKEN", "Bearer t0ken", 1);
	setenv("HOOK_SECRET", "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=", 1);
	CHECK(webhook_endpoint_parse(
		DOC(", \"headers\": [[\"Authorization\", \"env:TOKEN\"], [\"X-Env\", \"value:env:x\"]]"), &e, err,
		sizeof(err)));
	CHECK(webhook_endpoint_resolve(&e, NULL, BINDINGS, err, sizeof(err)));
	CHECK_STR(e.headers[0].value, "Bearer t0ken");
	CHECK_STR(e.headers[1].value, "env:x");
	CHECK_STR(e.signing_secret, "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=");
	webhook_endpoint_free(&e);

	/* a missing variable: the error names the header and the reference, never a value */
	CHECK(webhook_endpoint_parse(DOC(", \"headers\": [[\"Authorization\", \"env:NOT_SET_ANYWHERE\"]]"), &e,
								 err, sizeof(err)));
	CHECK(!webhook_endpoint_resolve(&e, NULL, BINDINGS, err, sizeof(err)));
	CHECK_STR(err, "header Authorization: secret env:NOT_SET_ANYWHERE: the environment variable is not set");
	webhook_endpoint_free(&e);

	/* a value read from the environment that would end the header line */
	setenv("TOKEN", "abc\r\nInjected: yes", 1);
	CHECK(webhook_endpoint_parse(DOC(", \"headers\": [[\"Authorization\", \"env:TOKEN\"]]"), &e, err,
								 sizeof(err)));
	CHECK(!webhook_endpoint_resolve(&e, NULL, BINDINGS, err, sizeof(err)));
	CHECK_STR(err, "header Authorization: the resolved value is empty or has a control character");
	CHECK(strstr(err, "abc") == NULL);
	webhook_endpoint_free(&e);

	/* the variables are bound to this channel only: another channel's endpoint cannot name them */
	setenv("TOKEN", "Bearer t0ken", 1);
	CHECK(webhook_endpoint_parse(DOC(", \"headers\": [[\"Authorization\", \"env:TOKEN\"]]"), &e, err,
								 sizeof(err)));
	CHECK(!webhook_endpoint_resolve(&e, NULL, "TOKEN=webhook/another", err, sizeof(err)));
	CHECK_STR(err, "header Authorization: secret env:TOKEN is not bound to webhook/hook (the Processor's "
				   "secret-env setting lists which variables each profile and channel may use)");
	webhook_endpoint_free(&e);
}

int
main(void)
{
	RUN(test_parse);
	RUN(test_refused);
	RUN(test_resolve);
	return UNIT_DONE();
}
