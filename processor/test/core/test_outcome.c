/*
 * test_outcome.c - the result vocabulary: names both ways and every mapping, row by row.
 */
#include <stdio.h>
#include <string.h>

#include "outcome.h"
#include "unit.h"

static void
test_outcome_names(void)
{
	static const struct {
		enum Outcome o;
		const char *name;
		const char *status; /* set_status outcome, NULL when none */
	} rows[] = {
		{OC_SKIPPED, "skipped", NULL},
		{OC_OK, "ok", "sent"},
		{OC_PARTIAL, "partial", "partially_sent"},
		{OC_CANCELLED, "cancelled", NULL},
		{OC_RETRY, "retry", "retrying"},
		{OC_TIMEOUT, "timeout", "retrying"},
		{OC_FAILED, "failed", "failed"},
		{OC_DEFERRED, "deferred", NULL},
		{OC_REPLAYED, "replayed", NULL},
		{OC_SNOOZED, "snoozed", NULL},
		{OC_LOST, "lost", NULL},
	};
	size_t i;

	for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		CHECK_STR(outcome_name(rows[i].o), rows[i].name);
		CHECK(outcome_parse(rows[i].name) == rows[i].o);
		CHECK_STR(outcome_status_name(rows[i].o), rows[i].status);
		CHECK(outcome_failed(rows[i].o) ==
			  (rows[i].o == OC_RETRY || rows[i].o == OC_TIMEOUT || rows[i].o == OC_FAILED));
	}
	CHECK(outcome_parse("no such outcome") == OC_LOST);
	CHECK(outcome_parse(NULL) == OC_LOST);
}

static void
test_delivery_to_outcome(void)
{
	static const struct {
		enum DeliveryStatus ds;
		enum AttemptResult ar;
		const char *result;
		enum Outcome oc;
	} rows[] = {
		{DS_SENT, AR_OK, "ok", OC_OK},
		{DS_PARTIAL, AR_PARTIAL, "partial", OC_PARTIAL},
		{DS_TRANSIENT, AR_TRANSIENT, "transient", OC_RETRY},
		{DS_PERMANENT, AR_PERMANENT, "permanent", OC_FAILED},
	};
	size_t i;

	for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		CHECK(delivery_result(rows[i].ds) == rows[i].ar);
		CHECK_STR(attempt_result_name(rows[i].ar), rows[i].result);
		CHECK(attempt_result_outcome(rows[i].ar) == rows[i].oc);
	}
	CHECK_STR(attempt_result_name(AR_CANCELLED), "cancelled");
	CHECK(attempt_result_outcome(AR_CANCELLED) == OC_CANCELLED);
}

static void
test_rcpt_status(void)
{
	static const struct {
		enum RcptStatus st;
		const char *name;
		enum RcptStatus after_retry, after_failed, after_partial;
	} rows[] = {
		{RS_PENDING, "pending", RS_RETRYING, RS_FAILED, RS_FAILED},
		{RS_SENT, "sent", RS_SENT, RS_SENT, RS_SENT},
		{RS_FAILED, "failed", RS_FAILED, RS_FAILED, RS_FAILED},
		{RS_RETRYING, "retrying", RS_RETRYING, RS_FAILED, RS_FAILED},
	};
	enum RcptStatus st;
	size_t i;

	for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		CHECK_STR(rcpt_status_name(rows[i].st), rows[i].name);
		CHECK(rcpt_status_parse(rows[i].name, &st) && st == rows[i].st);
		CHECK(rcpt_status_reported(rows[i].st, OC_RETRY) == rows[i].after_retry);
		CHECK(rcpt_status_reported(rows[i].st, OC_FAILED) == rows[i].after_failed);
		CHECK(rcpt_status_reported(rows[i].st, OC_PARTIAL) == rows[i].after_partial);
	}
	CHECK(!rcpt_status_parse("bounced", &st));
}

static void
test_notification_settled(void)
{
	static const struct {
		const char *status;
		bool settled;
		enum AttemptResult result;
	} rows[] = {
		{"cancelled", true, AR_CANCELLED}, {"sent", true, AR_OK},      {"partially_sent", true, AR_OK},
		{"queued", false, AR_OK},          {"retrying", false, AR_OK}, {"failed", false, AR_OK},
		{"sending", false, AR_OK},
	};
	size_t i;

	for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		enum AttemptResult r = AR_PERMANENT;

		CHECK(notification_settled(rows[i].status, &r) == rows[i].settled);
		CHECK(!rows[i].settled || r == rows[i].result);
	}
}

/* The kinds of configuration error: the names the log lines, the metrics and _config_hint use. */
static void
test_config_error_names(void)
{
	static const struct {
		enum ConfigError e;
		const char *name;
	} rows[] = {
		{CE_MISSING_HANDLER, "missing_handler"},
		{CE_NOT_SECURITY_DEFINER, "not_security_definer"},
		{CE_MISSING_GRANT, "missing_grant"},
		{CE_IN_HANDLER, "in_handler"},
		{CE_SECRET, "secret"},
	};
	size_t i;

	for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		CHECK_STR(config_error_name(rows[i].e), rows[i].name);
		CHECK(config_error_parse(rows[i].name) == rows[i].e);
	}
	CHECK_STR(config_error_name(CE_NONE), "");
	CHECK(config_error_parse("") == CE_NONE);
	CHECK(config_error_parse("no such kind") == CE_NONE);
	CHECK(config_error_parse(NULL) == CE_NONE);
}

int
main(void)
{
	RUN(test_outcome_names);
	RUN(test_delivery_to_outcome);
	RUN(test_rcpt_status);
	RUN(test_notification_settled);
	RUN(test_config_error_names);
	return UNIT_DONE();
}
