/*
 * test_webhook_result.c - what a webhook answer comes to (table-driven), and the log detail: the
 * status, the start of the body as valid UTF-8, bounded; the trace only when given.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "webhook_result.h"

static void
test_classify(void)
{
	static const struct {
		int curl;
		long status, retry_after;
		bool body_sent;
		enum DeliveryStatus want;
		long want_retry_after;
		bool gone, unknown;
		const char *error_starts;
	} rows[] = {
		{0, 200, -1, true, DS_SENT, -1, false, false, ""},
		{0, 204, 30, true, DS_SENT, -1, false, false, ""},
		{0, 500, -1, true, DS_TRANSIENT, -1, false, false, "HTTP 500: "},
		{0, 502, 10, true, DS_TRANSIENT, -1, false, false,
		 "HTTP 502: "}, /* Retry-After only with 429 and 503 */
		{0, 503, 7, true, DS_TRANSIENT, 7, false, false, "HTTP 503 (retried when Retry-After says): "},
		{0, 503, -1, true, DS_TRANSIENT, -1, false, false, "HTTP 503: "},
		{0, 429, 2, true, DS_TRANSIENT, 2, false, false, "HTTP 429 (retried when Retry-After says): "},
		{0, 408, -1, true, DS_TRANSIENT, -1, false, false, "HTTP 408: "},
		{0, 425, -1, true, DS_TRANSIENT, -1, false, false, "HTTP 425: "},
		{0, 400, 5, true, DS_PERMANENT, -1, false, false, "HTTP 400: "},
		{0, 401, -1, true, DS_PERMANENT, -1, false, false, "HTTP 401: "},
		{0, 404, -1, true, DS_PERMANENT, -1, false, false, "HTTP 404: "},
		{0, 410, -1, true, DS_PERMANENT, -1, true, false, "HTTP 410 Gone: "},
		{0, 301, -1, true, DS_PERMANENT, -1, false, false, "HTTP 301: redirects are not followed"},
		{CURLE_OPERATION_TIMEDOUT, 0, -1, true, DS_TRANSIENT, -1, false, true, "no answer after the request"},
		{CURLE_SEND_FAIL_REWIND, 0, -1, true, DS_TRANSIENT, -1, false, true, "no answer after the request"},
		{CURLE_GOT_NOTHING, 0, -1, true, DS_TRANSIENT, -1, false, true, "no answer after the request"},
		{CURLE_OPERATION_TIMEDOUT, 0, -1, false, DS_TRANSIENT, -1, false, false, "timed out: "},
		{CURLE_COULDNT_CONNECT, 0, -1, false, DS_TRANSIENT, -1, false, false, "failed: "},
		{CURLE_PEER_FAILED_VERIFICATION, 0, -1, false, DS_PERMANENT, -1, false, false, "TLS certificate"},
		{CURLE_UNSUPPORTED_PROTOCOL, 0, -1, false, DS_PERMANENT, -1, false, false, "the request is invalid"},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct WebhookAnswer a = {rows[i].curl,
								  "libcurl says",
								  rows[i].status,
								  rows[i].retry_after,
								  "https://new.example/hook",
								  "{\"error\": \"busy\"}",
								  17,
								  rows[i].body_sent};
		struct WebhookVerdict v;

		webhook_result_classify(&a, &v);
		if (v.status != rows[i].want ||
			strncmp(v.error, rows[i].error_starts, strlen(rows[i].error_starts)) != 0)
			fprintf(stderr, "  row %zu: status %d, error \"%s\"\n", i, (int) v.status, v.error);
		CHECK(v.status == rows[i].want);
		CHECK(v.retry_after_s == rows[i].want_retry_after);
		CHECK(v.gone == rows[i].gone);
		CHECK(v.unknown_outcome == rows[i].unknown);
		CHECK(strncmp(v.error, rows[i].error_starts, strlen(rows[i].error_starts)) == 0);
	}
}

/* the error quotes the answer on one line, as valid UTF-8, bounded; a redirect names its Location */
static void
test_error_text(void)
{
	struct WebhookAnswer a = {0, "", 500, -1, "", "line one\r\nline \xff two", 20, true};
	struct WebhookVerdict v;
	char *big = malloc(100000);

	webhook_result_classify(&a, &v);
	CHECK_STR(v.error, "HTTP 500: line one  line \xef\xbf\xbd two");
	a.status = 308;
	a.location = "https://new.example/hook";
	webhook_result_classify(&a, &v);
	CHECK(strstr(v.error, "(Location: https://new.example/hook)") != NULL);
	/* a long Location is cut between characters, never inside one (the error is stored as text) */
	{
		char loc[512];

		memset(loc, 'x', 399);
		strcpy(loc + 399, "\xc3\xa9\xc3\xa9");
		a.location = loc;
		webhook_result_classify(&a, &v);
		CHECK(strstr(v.error, "\xc3)") == NULL);
		CHECK(strstr(v.error, "xxx)") != NULL);
	}
	memset(big, 'x', 100000);
	a = (struct WebhookAnswer){0, "", 400, -1, "", big, 100000, true};
	webhook_result_classify(&a, &v);
	CHECK(strlen(v.error) < 400);
	a.body = NULL;
	a.body_len = 0;
	webhook_result_classify(&a, &v);
	CHECK_STR(v.error, "HTTP 400: (no body)");
	free(big);
}

/* detail: the start of the body (valid UTF-8, at most WEBHOOK_RESPONSE_MAX bytes), no trace unless given */
static void
test_detail(void)
{
	char *body = malloc(10000), *d;
	struct WebhookAnswer a = {0, "", 200, -1, "", body, 10000, true};
	struct WebhookVerdict v;
	json_t *doc;

	memset(body, 'y', 10000);
	body[0] = '\xff';
	webhook_result_classify(&a, &v);
	d = webhook_result_detail(&a, &v, "121028802351464448", 1796081115, 12, true, NULL);
	doc = json_loads(d, 0, NULL);
	CHECK(doc != NULL);
	CHECK_STR(json_string_value(json_object_get(doc, "transport")), "webhook");
	CHECK_STR(json_string_value(json_object_get(doc, "webhook_id")), "121028802351464448");
	CHECK(json_integer_value(json_object_get(doc, "status")) == 200);
	CHECK(json_integer_value(json_object_get(doc, "latency_ms")) == 12);
	CHECK(json_integer_value(json_object_get(doc, "response_bytes")) == 10000);
	CHECK(strlen(json_string_value(json_object_get(doc, "response"))) <= WEBHOOK_RESPONSE_MAX);
	CHECK(strncmp(json_string_value(json_object_get(doc, "response")), "\xef\xbf\xbdyyy", 6) == 0);
	CHECK(json_is_true(json_object_get(doc, "reused_connection")));
	CHECK(json_is_null(json_object_get(doc, "retry_after_s")));
	CHECK(json_object_get(doc, "trace") == NULL);
	json_decref(doc);
	free(d);

	/* no answer: status and response are null; the trace when given */
	a = (struct WebhookAnswer){CURLE_OPERATION_TIMEDOUT, "timeout", 0, -1, "", NULL, 0, true};
	webhook_result_classify(&a, &v);
	d = webhook_result_detail(&a, &v, "1", 1, 5000, false, "* POST https://x/\r\n");
	doc = json_loads(d, 0, NULL);
	CHECK(json_is_null(json_object_get(doc, "status")));
	CHECK(json_is_null(json_object_get(doc, "response")));
	CHECK(json_is_true(json_object_get(doc, "unknown_outcome")));
	CHECK_STR(json_string_value(json_object_get(doc, "trace")), "* POST https://x/\r\n");
	json_decref(doc);
	free(d);
	free(body);
}

int
main(void)
{
	RUN(test_classify);
	RUN(test_error_text);
	RUN(test_detail);
	return UNIT_DONE();
}
