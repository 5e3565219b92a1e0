/*
 * status_doc.c - JSON documents about one delivery attempt, built with jansson.
 */
#include "status_doc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* str_or_null: a JSON string, or null for NULL and "". */
static json_t *
str_or_null(const char *s)
{
	return s && s[0] ? json_string(s) : json_null();
}

/* dump renders and frees doc. */
static char *
dump(json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	json_decref(doc);
	return text;
}

char *
status_doc_json(const struct StatusDoc *sd, const struct DeliveryResult *r)
{
	json_t *doc = json_object(), *rcpts = json_array();
	int i;

	if (doc == NULL || rcpts == NULL) {
		json_decref(rcpts);
		return dump(doc);
	}
	for (i = 0; i < r->n_rcpt; i++)
		json_array_append_new(
			rcpts, json_pack("{s:I, s:s, s:i, s:o}", "id", (json_int_t) r->rcpt[i].id, "status",
							 rcpt_status_name(rcpt_status_reported(r->rcpt[i].status, sd->outcome)), "code",
							 r->rcpt[i].code, "reply", str_or_null(r->rcpt[i].reply)));
	json_object_set_new(doc, "attempt", json_integer(sd->attempt));
	json_object_set_new(doc, "outcome", json_string(outcome_status_name(sd->outcome)));
	json_object_set_new(doc, "transport", str_or_null(sd->transport));
	json_object_set_new(doc, "started_at", json_string(sd->started_at));
	json_object_set_new(doc, "finished_at", json_string(sd->finished_at));
	json_object_set_new(doc, "reply_code", r->reply_code ? json_integer(r->reply_code) : json_null());
	json_object_set_new(doc, "reply", str_or_null(r->reply));
	json_object_set_new(doc, "provider_message_id", str_or_null(r->provider_message_id));
	json_object_set_new(doc, "error", sd->outcome == OC_OK ? json_null() : str_or_null(r->error));
	json_object_set_new(doc, "unknown_outcome", json_boolean(r->unknown_outcome));
	json_object_set_new(doc, "next_attempt_at", str_or_null(sd->next_attempt_at));
	json_object_set_new(doc, "recipients", rcpts);
	if (sd->with_trace)
		json_object_set_new(doc, "trace", json_string(r->trace.data ? r->trace.data : ""));
	return dump(doc);
}

char *
status_doc_log_detail(const char *transport, const struct Message *m, const struct DeliveryResult *r)
{
	int i, sent = 0, failed = 0, retrying = 0;

	for (i = 0; i < r->n_rcpt; i++) {
		if (r->rcpt[i].status == RS_SENT)
			sent++;
		else if (r->rcpt[i].status == RS_FAILED)
			failed++;
		else
			retrying++;
	}
	return dump(json_pack("{s:s, s:o, s:o, s:o, s:b, s:{s:i, s:i, s:i}}", "transport", transport,
						  "message_id", str_or_null(m ? m->message_id : NULL), "reply_code",
						  r->reply_code ? json_integer(r->reply_code) : json_null(), "reply",
						  str_or_null(r->reply), "unknown_outcome", r->unknown_outcome, "recipients", "sent",
						  sent, "failed", failed, "retrying", retrying));
}
