/*
 * test_status_doc.c - the set_status document and the log detail of an attempt.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status_doc.h"
#include "unit.h"

static void
add_rcpt(struct DeliveryResult *r, long long id, enum RcptStatus st, int code, const char *reply)
{
	r->rcpt = realloc(r->rcpt, (size_t) (r->n_rcpt + 1) * sizeof *r->rcpt);
	r->rcpt[r->n_rcpt].id = id;
	r->rcpt[r->n_rcpt].status = st;
	r->rcpt[r->n_rcpt].code = code;
	r->rcpt[r->n_rcpt].reply = reply ? strdup(reply) : NULL;
	r->n_rcpt++;
}

static json_t *
render(enum Outcome outcome, const char *next, bool trace, const struct DeliveryResult *r)
{
	struct StatusDoc sd = {2,    outcome, "smtp", "2026-11-29T19:20:50.123Z", "2026-11-29T19:20:51.000Z",
						   next, trace};
	char *text = status_doc_json(&sd, r);
	json_t *doc = json_loads(text, 0, NULL);

	free(text);
	return doc;
}

static void
test_retrying_keeps_retrying_recipients(void)
{
	struct DeliveryResult r;
	json_t *doc;

	delivery_result_init(&r);
	r.status = DS_TRANSIENT;
	snprintf(r.error, sizeof r.error, "451 greylisted");
	add_rcpt(&r, 1, RS_SENT, 250, "250 ok");
	add_rcpt(&r, 2, RS_RETRYING, 451, "451 try later");
	doc = render(OC_RETRY, "2026-11-29T19:30:00.000Z", false, &r);
	CHECK_STR(json_string_value(json_object_get(doc, "outcome")), "retrying");
	CHECK(json_integer_value(json_object_get(doc, "attempt")) == 2);
	CHECK_STR(json_string_value(json_object_get(doc, "next_attempt_at")), "2026-11-29T19:30:00.000Z");
	CHECK_STR(json_string_value(json_object_get(doc, "error")), "451 greylisted");
	CHECK_STR(
		json_string_value(json_object_get(json_array_get(json_object_get(doc, "recipients"), 1), "status")),
		"retrying");
	CHECK(json_object_get(doc, "trace") == NULL);
	CHECK(json_is_false(json_object_get(doc, "unknown_outcome")));
	json_decref(doc);
	delivery_result_free(&r);
}

static void
test_final_outcome_fails_retrying_recipients(void)
{
	struct DeliveryResult r;
	json_t *doc;

	delivery_result_init(&r);
	add_rcpt(&r, 7, RS_RETRYING, 450, NULL);
	doc = render(OC_FAILED, NULL, true, &r);
	CHECK_STR(
		json_string_value(json_object_get(json_array_get(json_object_get(doc, "recipients"), 0), "status")),
		"failed");
	CHECK(json_is_null(json_object_get(doc, "next_attempt_at")));
	CHECK(json_is_null(json_object_get(json_array_get(json_object_get(doc, "recipients"), 0), "reply")));
	CHECK_STR(json_string_value(json_object_get(doc, "trace")), "");
	json_decref(doc);
	delivery_result_free(&r);
}

static void
test_sent_has_no_error(void)
{
	struct DeliveryResult r;
	json_t *doc;

	delivery_result_init(&r);
	r.status = DS_SENT;
	r.reply_code = 250;
	r.reply = strdup("250 2.0.0 queued");
	snprintf(r.error, sizeof r.error, "left over");
	doc = render(OC_OK, NULL, false, &r);
	CHECK(json_is_null(json_object_get(doc, "error")));
	CHECK(json_integer_value(json_object_get(doc, "reply_code")) == 250);
	CHECK_STR(json_string_value(json_object_get(doc, "transport")), "smtp");
	json_decref(doc);
	delivery_result_free(&r);
}

static void
test_log_detail(void)
{
	struct DeliveryResult r;
	char *text;
	json_t *doc;

	delivery_result_init(&r);
	r.unknown_outcome = true;
	add_rcpt(&r, 1, RS_SENT, 250, NULL);
	add_rcpt(&r, 2, RS_FAILED, 550, NULL);
	add_rcpt(&r, 3, RS_RETRYING, 451, NULL);
	text = status_doc_log_detail("smtp", NULL, &r);
	doc = json_loads(text, 0, NULL);
	CHECK(json_is_true(json_object_get(doc, "unknown_outcome")));
	CHECK(json_is_null(json_object_get(doc, "reply_code")));
	CHECK(json_integer_value(json_object_get(json_object_get(doc, "recipients"), "failed")) == 1);
	CHECK(json_integer_value(json_object_get(json_object_get(doc, "recipients"), "retrying")) == 1);
	json_decref(doc);
	free(text);
	delivery_result_free(&r);
}

int
main(void)
{
	RUN(test_retrying_keeps_retrying_recipients);
	RUN(test_final_outcome_fails_retrying_recipients);
	RUN(test_sent_has_no_error);
	RUN(test_log_detail);
	return UNIT_DONE();
}
