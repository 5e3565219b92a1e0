/*
 * test_graph_json.c - sendMail's JSON built from a parsed fetch() document, field by field; what
 * Graph cannot take (a header field not named X-..., more than 4 MB) fails before any request.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "graph_json.h"
#include "unit.h"

static const char doc_head[] =
	"{\"interface_version\": 4, \"notification_id\": 77, \"status\": \"queued\", \"channel\": \"c\","
	" \"message_id\": \"<77.abc@contoso.com>\","
	" \"from\": {\"address\": \"relay@contoso.com\", \"name\": \"Contoso\"},"
	" \"reply_to\": [{\"address\": \"support@contoso.com\", \"name\": \"Support\"}, {\"address\": "
	"\"x@contoso.com\"}],"
	" \"recipients\": ["
	"  {\"id\": 1, \"kind\": \"to\", \"address\": \"ann@example.org\", \"name\": \"Ann \\u00c9xample\", "
	"\"status\": "
	"\"pending\"},"
	"  {\"id\": 2, \"kind\": \"to\", \"address\": \"sent@example.org\", \"name\": null, \"status\": "
	"\"sent\"},"
	"  {\"id\": 3, \"kind\": \"cc\", \"address\": \"bob@example.org\", \"name\": null, \"status\": "
	"\"retrying\"},"
	"  {\"id\": 4, \"kind\": \"bcc\", \"address\": \"audit@example.com\", \"name\": null, \"status\": "
	"\"pending\"},"
	"  {\"id\": 5, \"kind\": \"cc\", \"address\": \"gone@example.org\", \"name\": null, \"status\": "
	"\"failed\"}],"
	" \"subject\": \"Gr\\u00fc\\u00dfe\", \"body_text\": \"plain\", ";

static const char doc_tail[] =
	" \"attachments\": ["
	"  {\"filename\": \"r\\u00e9sum\\u00e9.pdf\", \"content_type\": \"application/pdf\", \"size\": 5, "
	"\"content_id\": "
	"null, \"content_base64\": \"aGVsbG8=\"},"
	"  {\"filename\": \"logo.png\", \"content_type\": \"image/png\", \"size\": 3, \"content_id\": "
	"\"logo@contoso.com\", "
	"\"content_base64\": \"AAEC\"}],"
	" \"profile\": {\"name\": \"m365\", \"transport\": \"graph\", \"graph\": {\"tenant_id\": \"contoso.com\","
	"  \"client_id\": \"c\", \"client_secret\": \"s\", \"sender\": \"%s\", \"save_to_sent_items\": %s}}}";

/* parse_doc parses the document with the given HTML body (a JSON value), headers and sender. */
static bool
parse_doc(struct Message *m, const char *html, const char *headers, const char *sender, const char *save)
{
	char tail[2048], err[256];
	struct Buf b = BUF_INIT;
	bool ok;

	snprintf(tail, sizeof(tail), doc_tail, sender, save);
	ok = buf_printf(&b, "%s\"body_html\": %s, \"headers\": %s,%s", doc_head, html, headers, tail) &&
		 message_parse(b.data, m, err, sizeof(err));
	if (!ok)
		fprintf(stderr, "  parse: %s\n", err);
	buf_free(&b);
	return ok;
}

/* address_of is recipient i of array key in msg: "address|name". */
static const char *
address_of(json_t *msg, const char *key, size_t i)
{
	static char out[256];
	json_t *ea = json_object_get(json_array_get(json_object_get(msg, key), i), "emailAddress");
	json_t *name = json_object_get(ea, "name");

	snprintf(out, sizeof(out), "%s|%s", json_string_value(json_object_get(ea, "address")),
			 name ? json_string_value(name) : "-");
	return out;
}

static void
test_message_fields(void)
{
	struct Message m;
	struct GraphBody b;
	json_t *doc, *msg, *att;
	char err[256];
	bool oom;

	CHECK(parse_doc(&m, "\"<p>hi</p>\"", "[[\"X-Campaign\", \"w\"], [\"x-Trace\", \"1\"]]",
					"relay@contoso.com", "false"));
	CHECK(graph_json_build(&m, &b, &oom, err, sizeof(err)));
	doc = json_loads(b.json, JSON_REJECT_DUPLICATES, NULL);
	CHECK(doc != NULL && b.len == strlen(b.json));
	msg = json_object_get(doc, "message");
	CHECK(json_object_size(doc) == 2 && json_is_false(json_object_get(doc, "saveToSentItems")));
	CHECK_STR(json_string_value(json_object_get(msg, "subject")), "Gr\xc3\xbc\xc3\x9f"
																  "e");
	/* the HTML body when there is one */
	CHECK_STR(json_string_value(json_object_get(json_object_get(msg, "body"), "contentType")), "HTML");
	CHECK_STR(json_string_value(json_object_get(json_object_get(msg, "body"), "content")), "<p>hi</p>");
	/* the envelope only: pending and retrying, with display names */
	CHECK(json_array_size(json_object_get(msg, "toRecipients")) == 1);
	CHECK_STR(address_of(msg, "toRecipients", 0), "ann@example.org|Ann \xc3\x89xample");
	CHECK(json_array_size(json_object_get(msg, "ccRecipients")) == 1);
	CHECK_STR(address_of(msg, "ccRecipients", 0), "bob@example.org|-");
	CHECK_STR(address_of(msg, "bccRecipients", 0), "audit@example.com|-");
	CHECK_STR(address_of(msg, "replyTo", 0), "support@contoso.com|Support");
	CHECK_STR(address_of(msg, "replyTo", 1), "x@contoso.com|-");
	/* the sender sends as itself: no from */
	CHECK(json_object_get(msg, "from") == NULL);
	CHECK_STR(json_string_value(json_object_get(msg, "internetMessageId")), "<77.abc@contoso.com>");
	CHECK_STR(json_string_value(
				  json_object_get(json_array_get(json_object_get(msg, "internetMessageHeaders"), 1), "name")),
			  "x-Trace");
	/* a file attachment, and an inline one */
	att = json_array_get(json_object_get(msg, "attachments"), 0);
	CHECK_STR(json_string_value(json_object_get(att, "@odata.type")), "#microsoft.graph.fileAttachment");
	CHECK_STR(json_string_value(json_object_get(att, "name")), "r\xc3\xa9sum\xc3\xa9.pdf");
	CHECK_STR(json_string_value(json_object_get(att, "contentType")), "application/pdf");
	CHECK_STR(json_string_value(json_object_get(att, "contentBytes")), "aGVsbG8=");
	CHECK(json_is_false(json_object_get(att, "isInline")) && json_object_get(att, "contentId") == NULL);
	att = json_array_get(json_object_get(msg, "attachments"), 1);
	CHECK(json_is_true(json_object_get(att, "isInline")));
	CHECK_STR(json_string_value(json_object_get(att, "contentId")), "logo@contoso.com");
	CHECK_STR(json_string_value(json_object_get(att, "contentBytes")), "AAEC");
	json_decref(doc);
	/* the trace's version shows sizes instead of the body and the bytes */
	CHECK(strstr(b.shown, "\"contentBytes\":\"[5 bytes]\"") != NULL);
	CHECK(strstr(b.shown, "\"content\":\"[9 bytes of body]\"") != NULL);
	CHECK(strstr(b.shown, "aGVsbG8") == NULL && strstr(b.shown, "<p>hi</p>") == NULL);
	graph_body_free(&b);
	message_free(&m);
}

static void
test_text_body_from_and_saving(void)
{
	struct Message m;
	struct GraphBody b;
	json_t *doc, *msg;
	char err[256];
	bool oom;

	/* no HTML: the text body; From differs from the sender (a user id here): from is set */
	CHECK(parse_doc(&m, "null", "[]", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "true"));
	CHECK(graph_json_build(&m, &b, &oom, err, sizeof(err)));
	doc = json_loads(b.json, 0, NULL);
	msg = json_object_get(doc, "message");
	CHECK_STR(json_string_value(json_object_get(json_object_get(msg, "body"), "contentType")), "Text");
	CHECK_STR(json_string_value(json_object_get(json_object_get(msg, "body"), "content")), "plain");
	CHECK_STR(json_string_value(
				  json_object_get(json_object_get(json_object_get(msg, "from"), "emailAddress"), "address")),
			  "relay@contoso.com");
	CHECK(json_object_get(msg, "internetMessageHeaders") == NULL);
	CHECK(json_is_true(json_object_get(doc, "saveToSentItems")));
	json_decref(doc);
	graph_body_free(&b);
	message_free(&m);
	/* the sender's address in another case is still the sender */
	CHECK(parse_doc(&m, "null", "[]", "Relay@Contoso.com", "true"));
	CHECK(graph_json_build(&m, &b, &oom, err, sizeof(err)));
	CHECK(strstr(b.json, "\"from\"") == NULL);
	graph_body_free(&b);
	message_free(&m);
}

static void
test_header_policy(void)
{
	static const struct {
		const char *name;
		bool ok;
	} rows[] = {{"X-Campaign", true}, {"x-a", true}, {"X-", false},          {"List-Unsubscribe", false},
				{"Keywords", false},  {"Xa", false}, {"In-Reply-To", false}, {"X", false}};
	struct Message m;
	struct GraphBody b;
	char err[256];
	bool oom;
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECK(graph_header_ok(rows[i].name) == rows[i].ok);
	CHECK(parse_doc(&m, "null", "[[\"X-Ok\", \"1\"], [\"List-Unsubscribe\", \"<mailto:u@contoso.com>\"]]",
					"relay@contoso.com", "true"));
	CHECK(!graph_json_build(&m, &b, &oom, err, sizeof(err)) && !oom);
	CHECK(strstr(err, "header field \"List-Unsubscribe\" cannot be sent through Microsoft Graph") != NULL);
	CHECK(b.json == NULL);
	message_free(&m);
}

/* big_attachment replaces attachment 0 of m by n bytes. */
static void
big_attachment(struct Message *m, size_t n)
{
	free(m->att[0].data);
	m->att[0].data = calloc(1, n);
	m->att[0].len = n;
}

static void
test_size_limit(void)
{
	struct Message m;
	struct GraphBody b;
	char err[256];
	bool oom;

	CHECK(parse_doc(&m, "null", "[]", "relay@contoso.com", "true"));
	/* 3 MB of file: 4 MB of base64 and a little JSON: over */
	big_attachment(&m, 3 * 1024 * 1024);
	CHECK(!graph_json_build(&m, &b, &oom, err, sizeof(err)) && !oom);
	CHECK(strstr(err, "more than the 4194304 bytes Microsoft Graph takes in one request") != NULL);
	/* a little less fits */
	big_attachment(&m, 3 * 1024 * 1024 - 4096);
	CHECK(graph_json_build(&m, &b, &oom, err, sizeof(err)));
	CHECK(b.len <= GRAPH_MAX_REQUEST_BYTES && b.len > 4 * 1024 * 1024 - 8192);
	graph_body_free(&b);
	/* far over: refused before anything is encoded */
	big_attachment(&m, 50 * 1024 * 1024);
	CHECK(!graph_json_build(&m, &b, &oom, err, sizeof(err)) && b.json == NULL);
	message_free(&m);
}

static void
test_no_recipient_left(void)
{
	struct Message m;
	struct GraphBody b;
	char err[256];
	bool oom;
	int i;

	CHECK(parse_doc(&m, "null", "[]", "relay@contoso.com", "true"));
	for (i = 0; i < m.n_rcpt; i++)
		m.rcpt[i].status = RS_SENT;
	CHECK(!graph_json_build(&m, &b, &oom, err, sizeof(err)));
	CHECK(strstr(err, "no recipient") != NULL);
	message_free(&m);
}

int
main(void)
{
	RUN(test_message_fields);
	RUN(test_text_body_from_and_saving);
	RUN(test_header_policy);
	RUN(test_size_limit);
	RUN(test_no_recipient_left);
	return UNIT_DONE();
}
