/*
 * graph_json.c - build sendMail's JSON from a struct Message with jansson.
 *
 * Every text comes from fetch()'s document, parsed by jansson, so it is valid UTF-8; jansson still
 * checks each string it is given, and any failure (a NULL from a constructor) ends the build.
 */
#include "graph_json.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base64.h"

/* Build carries the state of one build: false once anything failed. */
struct Build {
	bool ok;
	bool shown; /* building the trace's version */
};

bool
graph_header_ok(const char *name)
{
	return (name[0] == 'X' || name[0] == 'x') && name[1] == '-' && name[2] != '\0';
}

/* set puts value (taking it) under key; a NULL value or a failed set marks the build failed. */
static void
set(struct Build *b, json_t *obj, const char *key, json_t *value)
{
	if (value == NULL || obj == NULL || json_object_set_new(obj, key, value) != 0)
		b->ok = false;
}

/* append appends value (taking it) to arr, like set. */
static void
append(struct Build *b, json_t *arr, json_t *value)
{
	if (value == NULL || arr == NULL || json_array_append_new(arr, value) != 0)
		b->ok = false;
}

/* recipient is {"emailAddress": {"address": ..., "name": ...}}; the name only when there is one. */
static json_t *
recipient(struct Build *b, const struct Address *a)
{
	json_t *ea = json_object(), *r = json_object();

	set(b, ea, "address", json_string(a->address));
	if (a->name != NULL && a->name[0] != '\0')
		set(b, ea, "name", json_string(a->name));
	set(b, r, "emailAddress", ea);
	return r;
}

/* recipients adds the envelope's recipients of one kind under key, when there are any. */
static void
recipients(struct Build *b, json_t *msg, const struct Message *m, enum RcptKind kind, const char *key)
{
	json_t *arr = NULL;
	int i;

	for (i = 0; i < m->n_rcpt; i++) {
		const struct Recipient *r = &m->rcpt[i];

		if (r->kind != kind || (r->status != RS_PENDING && r->status != RS_RETRYING))
			continue;
		if (arr == NULL)
			arr = json_array();
		append(b, arr, recipient(b, &r->addr));
	}
	if (arr != NULL)
		set(b, msg, key, arr);
}

/* sized is "[N <what>]", what a trace shows instead of content. */
static json_t *
sized(size_t n, const char *what)
{
	char text[64];

	snprintf(text, sizeof(text), "[%zu %s]", n, what);
	return json_string(text);
}

/* body is {"contentType": "HTML" | "Text", "content": ...}: the HTML body when there is one. */
static json_t *
body(struct Build *b, const struct Message *m)
{
	const char *text = m->body_html ? m->body_html : m->body_text;
	json_t *o = json_object();

	set(b, o, "contentType", json_string(m->body_html ? "HTML" : "Text"));
	set(b, o, "content", b->shown ? sized(strlen(text), "bytes of body") : json_string(text));
	return o;
}

/* attachment is a fileAttachment: base64 contentBytes; isInline with contentId for inline parts. */
static json_t *
attachment(struct Build *b, const struct Attachment *a)
{
	json_t *o = json_object();
	struct Buf enc = BUF_INIT;

	set(b, o, "@odata.type", json_string("#microsoft.graph.fileAttachment"));
	set(b, o, "name", json_string(a->filename));
	set(b, o, "contentType", json_string(a->content_type));
	if (b->shown)
		set(b, o, "contentBytes", sized(a->len, "bytes"));
	else if (base64_encode(&enc, a->data, a->len, 0))
		set(b, o, "contentBytes", json_stringn(enc.data ? enc.data : "", enc.len));
	else
		b->ok = false;
	set(b, o, "isInline", json_boolean(a->content_id != NULL));
	if (a->content_id != NULL)
		set(b, o, "contentId", json_string(a->content_id));
	buf_free(&enc);
	return o;
}

/* extras adds reply-to, from, the Message-ID, header fields and attachments. */
static void
extras(struct Build *b, json_t *msg, const struct Message *m)
{
	json_t *arr;
	int i;

	if (m->n_reply_to > 0) {
		arr = json_array();
		for (i = 0; i < m->n_reply_to; i++)
			append(b, arr, recipient(b, &m->reply_to[i]));
		set(b, msg, "replyTo", arr);
	}
	/* the mailbox sends as itself unless From names another address (that needs SendAs rights) */
	if (strcasecmp(m->from.address, m->profile.graph.sender) != 0)
		set(b, msg, "from", recipient(b, &m->from));
	set(b, msg, "internetMessageId", json_string(m->message_id));
	if (m->n_headers > 0) {
		arr = json_array();
		for (i = 0; i < m->n_headers; i++)
			append(b, arr, json_pack("{s:s, s:s}", "name", m->headers[i].name, "value", m->headers[i].value));
		set(b, msg, "internetMessageHeaders", arr);
	}
	if (m->n_att > 0) {
		arr = json_array();
		for (i = 0; i < m->n_att; i++)
			append(b, arr, attachment(b, &m->att[i]));
		set(b, msg, "attachments", arr);
	}
}

/* render builds the whole request body, or its trace version; NULL when anything failed. */
static char *
render(const struct Message *m, bool shown)
{
	struct Build b = {true, shown};
	json_t *doc = json_object(), *msg = json_object();
	char *text = NULL;

	if (m->subject != NULL)
		set(&b, msg, "subject", json_string(m->subject));
	set(&b, msg, "body", body(&b, m));
	recipients(&b, msg, m, RCPT_TO, "toRecipients");
	recipients(&b, msg, m, RCPT_CC, "ccRecipients");
	recipients(&b, msg, m, RCPT_BCC, "bccRecipients");
	extras(&b, msg, m);
	set(&b, doc, "message", msg);
	set(&b, doc, "saveToSentItems", json_boolean(m->profile.graph.save_to_sent_items));
	if (b.ok)
		text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(doc);
	return text;
}

/* least_size is a lower bound of the request body's size, to refuse a huge message before building it. */
static size_t
least_size(const struct Message *m)
{
	size_t n = (m->body_html ? strlen(m->body_html) : m->body_text ? strlen(m->body_text) : 0);
	int i;

	for (i = 0; i < m->n_att; i++)
		n += (m->att[i].len + 2) / 3 * 4;
	return n;
}

/* check_message says why m cannot go through Graph, or returns true. */
static bool
check_message(const struct Message *m, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < m->n_headers; i++)
		if (!graph_header_ok(m->headers[i].name)) {
			snprintf(err, errlen,
					 "header field \"%.76s\" cannot be sent through Microsoft Graph, which takes only "
					 "header fields named X-...; send the message through an SMTP profile, or without it",
					 m->headers[i].name);
			return false;
		}
	if (message_envelope_count(m) == 0) {
		snprintf(err, errlen, "no recipient is pending or retrying");
		return false;
	}
	if (least_size(m) > (size_t) GRAPH_MAX_REQUEST_BYTES) {
		snprintf(err, errlen,
				 "the message needs more than the %ld bytes Microsoft Graph takes in one request "
				 "(attachments count a third more in base64); send large files as links, or use an SMTP "
				 "profile",
				 GRAPH_MAX_REQUEST_BYTES);
		return false;
	}
	return true;
}

bool
graph_json_build(const struct Message *m, struct GraphBody *b, bool *oom, char *err, size_t errlen)
{
	memset(b, 0, sizeof(*b));
	*oom = false;
	if (!check_message(m, err, errlen))
		return false;
	b->json = render(m, false);
	b->shown = b->json ? render(m, true) : NULL;
	if (b->json == NULL || b->shown == NULL) {
		*oom = true;
		snprintf(err, errlen, "out of memory building the Microsoft Graph request");
		graph_body_free(b);
		return false;
	}
	b->len = strlen(b->json);
	if (b->len > (size_t) GRAPH_MAX_REQUEST_BYTES) {
		snprintf(err, errlen,
				 "the message is %zu bytes as a Microsoft Graph request, more than the %ld bytes Graph "
				 "takes in one request; send large files as links, or use an SMTP profile",
				 b->len, GRAPH_MAX_REQUEST_BYTES);
		graph_body_free(b);
		return false;
	}
	return true;
}

void
graph_body_free(struct GraphBody *b)
{
	if (b == NULL)
		return;
	free(b->json);
	free(b->shown);
	memset(b, 0, sizeof(*b));
}
