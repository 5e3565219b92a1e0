/*
 * test_graph_result.c - one sendMail answer (or its absence) classified; Graph's error body read.
 */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "graph_result.h"
#include "unit.h"

static const char invalid_recipients[] =
	"{\"error\":{\"code\":\"ErrorInvalidRecipients\",\"message\":\"At least one recipient is not valid.\","
	"\"innerError\":{\"date\":\"2026-11-29T19:20:50\",\"request-id\":\"rid-in-body\",\"client-request-id\":"
	"\"c\"}}}";

struct Row {
	long status;
	int curl_code;
	bool body_sent;
	const char *body;
	long retry_after;
	enum DeliveryStatus want;
	bool unknown;
	long want_retry_after;
	const char *in_error; /* NULL: no error */
	const char *reply;    /* NULL: none */
};

static void
test_classification(void)
{
	static const struct Row rows[] = {
		{202, CURLE_OK, true, "", -1, DS_SENT, false, -1, NULL, "202 Accepted"},
		{429, CURLE_OK, true,
		 "{\"error\":{\"code\":\"ApplicationThrottled\",\"message\":\"MailboxConcurrency limit.\"}}", 2,
		 DS_TRANSIENT, false, 2,
		 "could not take the message now (HTTP 429 ApplicationThrottled: MailboxConcurrency",
		 "429 ApplicationThrottled: MailboxConcurrency limit."},
		{503, CURLE_OK, true, "{\"error\":{\"code\":\"serviceNotAvailable\",\"message\":\"x\"}}", 30,
		 DS_TRANSIENT, false, 30, "asked to retry later", NULL},
		{503, CURLE_OK, true, "", -1, DS_TRANSIENT, false, -1, "(HTTP 503)", "503"},
		{504, CURLE_OK, true, "<html>gateway</html>", 5, DS_TRANSIENT, false, 5,
		 "HTTP 504: <html>gateway</html>", NULL},
		{500, CURLE_OK, true, "{\"error\":{\"code\":\"generalException\",\"message\":\"m\"}}", -1,
		 DS_TRANSIENT, false, -1, "generalException", NULL},
		{502, CURLE_OK, true, "", -1, DS_TRANSIENT, false, -1, "HTTP 502", NULL},
		{408, CURLE_OK, true, "", -1, DS_TRANSIENT, false, -1, "HTTP 408", NULL},
		{400, CURLE_OK, true, invalid_recipients, -1, DS_PERMANENT, false, -1,
		 "refused the message (HTTP 400 ErrorInvalidRecipients: At least one recipient is not valid.)",
		 "400 ErrorInvalidRecipients: At least one recipient is not valid."},
		{403, CURLE_OK, true,
		 "{\"error\":{\"code\":\"ErrorAccessDenied\",\"message\":\"Access is denied.\"}}", -1, DS_PERMANENT,
		 false, -1, "Mail.Send application permission", NULL},
		{404, CURLE_OK, true, "{\"error\":{\"code\":\"ErrorInvalidUser\",\"message\":\"invalid user\"}}", -1,
		 DS_PERMANENT, false, -1, "sender mailbox does not exist", NULL},
		{401, CURLE_OK, true, "{\"error\":{\"code\":\"InvalidAuthenticationToken\",\"message\":\"expired\"}}",
		 -1, DS_PERMANENT, false, -1, "refused twice", NULL},
		{413, CURLE_OK, true, "{\"error\":{\"code\":\"RequestEntityTooLarge\",\"message\":\"too large\"}}",
		 -1, DS_PERMANENT, false, -1, "RequestEntityTooLarge", NULL},
		{301, CURLE_OK, true, "", -1, DS_PERMANENT, false, -1, "graph_url", NULL},
		/* a status line counts even if the connection broke while reading the rest */
		{202, CURLE_RECV_ERROR, true, "", -1, DS_SENT, false, -1, NULL, "202 Accepted"},
		/* no answer at all */
		{0, CURLE_OPERATION_TIMEDOUT, true, NULL, -1, DS_TRANSIENT, true, -1,
		 "no answer from Microsoft Graph after the message was sent; it may have been accepted", NULL},
		{0, CURLE_SEND_FAIL_REWIND, true, NULL, -1, DS_TRANSIENT, true, -1, "client-request-id cid", NULL},
		{0, CURLE_GOT_NOTHING, true, NULL, -1, DS_TRANSIENT, true, -1, "may have been accepted", NULL},
		{0, CURLE_COULDNT_CONNECT, false, NULL, -1, DS_TRANSIENT, false, -1,
		 "failed reaching Microsoft Graph", NULL},
		{0, CURLE_OPERATION_TIMEDOUT, false, NULL, -1, DS_TRANSIENT, false, -1, "timed out reaching", NULL},
		{0, CURLE_PEER_FAILED_VERIFICATION, false, NULL, -1, DS_PERMANENT, false, -1, "certificate", NULL},
		{0, CURLE_UNSUPPORTED_PROTOCOL, false, NULL, -1, DS_PERMANENT, false, -1, "configuration", NULL},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct Row *w = &rows[i];
		struct GraphAnswer a = {w->curl_code, "libcurl says so",
								w->status,    w->retry_after,
								"rid-header", "cid",
								w->body,      w->body ? strlen(w->body) : 0,
								w->body_sent};
		struct DeliveryResult r;

		delivery_result_init(&r);
		CHECK(graph_result_fill(&a, &r));
		if (r.status != w->want || r.unknown_outcome != w->unknown ||
			(w->in_error ? strstr(r.error, w->in_error) == NULL : r.error[0] != '\0'))
			fprintf(stderr, "  row %zu: status %d unknown %d error \"%s\"\n", i, (int) r.status,
					r.unknown_outcome, r.error);
		CHECK(r.status == w->want && r.unknown_outcome == w->unknown);
		CHECK(w->in_error ? strstr(r.error, w->in_error) != NULL : r.error[0] == '\0');
		CHECK(r.retry_after_s == w->want_retry_after);
		CHECK(r.reply_code == w->status);
		if (w->reply != NULL)
			CHECK_STR(r.reply, w->reply);
		CHECK(r.n_rcpt == 0); /* Graph says nothing per recipient */
		if (w->status != 0)
			CHECK_STR(r.provider_message_id, "rid-header");
		delivery_result_free(&r);
	}
}

static void
test_error_body(void)
{
	struct Buf code = BUF_INIT, msg = BUF_INIT, rid = BUF_INIT;
	/* a hostile server: bytes that are not UTF-8, line breaks, a huge message */
	char *big = malloc(10000), *body = malloc(10100);

	CHECK(graph_error_parse(invalid_recipients, strlen(invalid_recipients), &code, &msg, &rid));
	CHECK_STR(code.data, "ErrorInvalidRecipients");
	CHECK_STR(msg.data, "At least one recipient is not valid.");
	CHECK_STR(rid.data, "rid-in-body");
	buf_reset(&code);
	buf_reset(&msg);
	buf_reset(&rid);
	CHECK(!graph_error_parse("<html></html>", 13, &code, &msg, &rid) && code.len == 0);
	CHECK(!graph_error_parse("{\"error\":\"x\"}", 13, &code, &msg, &rid));
	CHECK(!graph_error_parse(NULL, 0, &code, &msg, &rid));
	memset(big, 'm', 9999);
	big[9999] = '\0';
	snprintf(body, 10100, "{\"error\":{\"code\":\"E\\r\\nvil\",\"message\":\"%s\"}}", big);
	CHECK(graph_error_parse(body, strlen(body), &code, &msg, &rid));
	CHECK_STR(code.data, "E  vil");
	CHECK(msg.len < 700);
	free(big);
	free(body);
	buf_free(&code);
	buf_free(&msg);
	buf_free(&rid);
}

static void
test_provider_id_from_the_body(void)
{
	struct GraphAnswer a = {CURLE_OK, "", 400, -1, "", "cid", invalid_recipients, strlen(invalid_recipients),
							true};
	struct DeliveryResult r;

	delivery_result_init(&r);
	CHECK(graph_result_fill(&a, &r));
	CHECK_STR(r.provider_message_id, "rid-in-body");
	delivery_result_free(&r);
}

static void
test_garbage_stays_valid_utf8(void)
{
	const char body[] = "\xff\xfe not json \x80";
	struct GraphAnswer a = {CURLE_OK, "", 500, -1, "", "", body, sizeof(body) - 1, true};
	struct DeliveryResult r;

	delivery_result_init(&r);
	CHECK(graph_result_fill(&a, &r));
	CHECK(strstr(r.error, "\xef\xbf\xbd\xef\xbf\xbd not json \xef\xbf\xbd") != NULL);
	CHECK(strstr(r.reply, "\xff") == NULL);
	delivery_result_free(&r);
}

int
main(void)
{
	RUN(test_classification);
	RUN(test_error_body);
	RUN(test_provider_id_from_the_body);
	RUN(test_garbage_stays_valid_utf8);
	return UNIT_DONE();
}
