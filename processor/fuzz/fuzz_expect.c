/*
 * fuzz_expect.c - what a parsed message must read as, as JSON, for check_mime.py to compare with
 * what Python's email package (strict policy) reads in the MIME bytes.
 */
#include <jansson.h>
#include <stdlib.h>

#include "message.h"

char *fuzz_expect_json(const struct Message *m);

static json_t *
mailbox(const struct Address *a)
{
	return json_pack("{s:s, s:s?}", "address", a->address, "name", a->name && a->name[0] ? a->name : NULL);
}

char *
fuzz_expect_json(const struct Message *m)
{
	json_t *doc = json_object(), *to = json_array(), *cc = json_array(), *rt = json_array(),
		   *h = json_array(), *att = json_array();
	char *text;
	int i;

	for (i = 0; i < m->n_rcpt; i++)
		if (m->rcpt[i].kind != RCPT_BCC)
			json_array_append_new(m->rcpt[i].kind == RCPT_TO ? to : cc, mailbox(&m->rcpt[i].addr));
	for (i = 0; i < m->n_reply_to; i++)
		json_array_append_new(rt, mailbox(&m->reply_to[i]));
	for (i = 0; i < m->n_headers; i++)
		json_array_append_new(h, json_pack("[s, s]", m->headers[i].name, m->headers[i].value));
	for (i = 0; i < m->n_att; i++)
		json_array_append_new(att, json_pack("{s:s, s:I, s:s?}", "filename", m->att[i].filename, "size",
											 (json_int_t) m->att[i].len, "content_id", m->att[i].content_id));
	json_object_set_new(doc, "from", mailbox(&m->from));
	json_object_set_new(doc, "to", to);
	json_object_set_new(doc, "cc", cc);
	json_object_set_new(doc, "reply_to", rt);
	json_object_set_new(doc, "headers", h);
	json_object_set_new(doc, "attachments", att);
	json_object_set_new(doc, "subject", m->subject ? json_string(m->subject) : json_null());
	json_object_set_new(doc, "body_text", m->body_text ? json_string(m->body_text) : json_null());
	json_object_set_new(doc, "body_html", m->body_html ? json_string(m->body_html) : json_null());
	json_object_set_new(doc, "message_id", json_string(m->message_id));
	text = json_dumps(doc, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(doc);
	return text;
}
