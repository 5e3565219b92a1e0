/*
 * fuzz_webhook.c - libFuzzer target: the endpoint document of pgrelay._webhook_claim() as raw
 * JSON, and the same bytes as a receiver's answer.
 *
 * webhook_endpoint_parse() is the gate in front of the request line and the header lines: what
 * it accepts must hold no byte that could end either (a URL of http(s) only, as allowed; header
 * names that are tokens; values without control characters), and what it refuses must come with
 * a reason that can be stored. Whatever a receiver answers, the verdict and the log detail must be
 * storable too: bounded, valid UTF-8, valid JSON.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "utf8.h"
#include "webhook_endpoint.h"
#include "webhook_result.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* check_endpoint: an accepted endpoint holds nothing that could end the request or a header line. */
static void
check_endpoint(const struct WebhookEndpoint *e)
{
	const char *p;
	int i;

	FUZZ_ASSERT(strncmp(e->url, "https://", 8) == 0 || (e->allow_http && strncmp(e->url, "http://", 7) == 0),
				"a URL that is not http(s) as allowed: %s", e->url);
	for (p = e->url; *p; p++)
		FUZZ_ASSERT((unsigned char) *p > 0x20 && *p != 0x7f, "a URL with a blank or a control byte");
	FUZZ_ASSERT(strcmp(e->method, "POST") == 0 || strcmp(e->method, "PUT") == 0 ||
					strcmp(e->method, "PATCH") == 0,
				"method %s", e->method);
	FUZZ_ASSERT(e->timeout_ms >= 1 && e->timeout_ms <= 86400000, "timeout_ms %ld", e->timeout_ms);
	for (i = 0; i < e->n_headers; i++) {
		FUZZ_ASSERT(e->headers[i].name[0] != '\0' &&
						strcspn(e->headers[i].name, " \t\r\n:") == strlen(e->headers[i].name),
					"header name %s", e->headers[i].name);
		for (p = e->headers[i].value; *p; p++)
			FUZZ_ASSERT(!(((unsigned char) *p < 0x20 && *p != '\t') || *p == 0x7f),
						"a header value with a control byte");
	}
}

/* check_answer: the bytes as an answer of each kind of status; verdict and detail stay storable. */
static void
check_answer(const uint8_t *data, size_t size)
{
	static const long statuses[] = {0, 200, 301, 400, 410, 429, 503};
	char *location = fuzz_utf8_text(data, size, "\r\n");
	size_t i;

	if (location == NULL)
		return;
	/* https.c keeps a Location as valid UTF-8 of at most 511 bytes */
	location[utf8_prefix(location, 511)] = '\0';
	for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		struct WebhookAnswer a = {
			statuses[i] ? 0 : 28, "timeout", statuses[i],  size % 7 ? (long) size : -1, location,
			(const char *) data,  size,      size % 2 == 0};
		struct WebhookVerdict v;
		char *detail;
		json_t *doc;

		webhook_result_classify(&a, &v);
		FUZZ_ASSERT(fuzz_utf8_valid(v.error, strlen(v.error)), "an error that is not valid UTF-8");
		FUZZ_ASSERT(strchr(v.error, '\n') == NULL && strchr(v.error, '\r') == NULL, "an error of two lines");
		FUZZ_ASSERT(v.status == DS_SENT || v.error[0] != '\0', "a failure without a reason");
		detail = webhook_result_detail(&a, &v, "1", 1, 1, false, NULL);
		FUZZ_ASSERT(detail != NULL, "no detail");
		doc = json_loads(detail, 0, NULL);
		FUZZ_ASSERT(doc != NULL, "a detail that is not JSON: %s", detail);
		FUZZ_ASSERT(json_is_null(json_object_get(doc, "response")) ||
						strlen(json_string_value(json_object_get(doc, "response"))) <= WEBHOOK_RESPONSE_MAX,
					"a response longer than %d bytes", WEBHOOK_RESPONSE_MAX);
		json_decref(doc);
		free(detail);
	}
	free(location);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *json = malloc(size + 1), err[512];
	struct WebhookEndpoint e;

	if (json == NULL)
		return 0;
	memcpy(json, data, size);
	json[size] = '\0';
	if (webhook_endpoint_parse(json, &e, err, sizeof err))
		check_endpoint(&e);
	else {
		FUZZ_ASSERT(err[0] != '\0', "a document refused without a reason");
		FUZZ_ASSERT(fuzz_utf8_valid(err, strlen(err)), "the reason is not valid UTF-8: %s", err);
	}
	webhook_endpoint_free(&e);
	check_answer(data, size);
	free(json);
	return 0;
}
