/*
 * test_message.c - message_parse(): a valid fetch() document, then one mutation per table row.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "message.h"
#include "unit.h"

static const char base_doc[] =
	"{\"interface_version\": 4, \"notification_id\": 1234567890123, \"status\": \"queued\","
	" \"channel\": \"welcome_mail\", \"message_id\": \"<1234.k3j4h5@example.com>\","
	" \"from\": {\"address\": \"noreply@example.com\", \"name\": \"Example App\"},"
	" \"reply_to\": [{\"address\": \"support@example.com\", \"name\": \"Support\"}],"
	" \"recipients\": ["
	"  {\"id\": 1, \"kind\": \"to\", \"address\": \"ann@example.org\", \"name\": \"Ann\","
	"   \"status\": \"pending\"},"
	"  {\"id\": 2, \"kind\": \"cc\", \"address\": \"bob@example.org\", \"name\": null,"
	"   \"status\": \"sent\"},"
	"  {\"id\": 3, \"kind\": \"bcc\", \"address\": \"audit@example.com\", \"name\": null,"
	"   \"status\": \"retrying\"}],"
	" \"subject\": \"Welcome, Ann\", \"body_text\": \"Hello Ann\", \"body_html\": \"<p>Hi</p>\","
	" \"headers\": [[\"X-Campaign\", \"welcome\"]],"
	" \"attachments\": [{\"filename\": \"a.txt\", \"content_type\": \"text/plain\", \"size\": 5,"
	"   \"content_id\": null, \"content_base64\": \"aGVs\\nbG8=\"}],"
	" \"profile\": {\"name\": \"default\", \"transport\": \"smtp\", \"debug\": true,"
	"  \"connect_timeout_ms\": 5000, \"timeout_ms\": 30000, \"rate_limit_per_minute\": null,"
	"  \"max_message_bytes\": 1000000,"
	"  \"smtp\": {\"host\": \"smtp.example.com\", \"port\": 2525, \"security\": \"tls\","
	"   \"username\": \"relay\", \"password\": \"env:PW\", \"oauth_token\": null,"
	"   \"ca_file\": null, \"helo_name\": \"relay.example.com\"}, \"graph\": null}}";

/* set_path replaces (or with value NULL deletes) the member at a/b/0/c in doc. */
static void
set_path(json_t *doc, const char *path, const char *value)
{
	char buf[256], *save = NULL, *tok, *next;
	json_t *cur = doc;

	snprintf(buf, sizeof(buf), "%s", path);
	tok = strtok_r(buf, "/", &save);
	while ((next = strtok_r(NULL, "/", &save)) != NULL) {
		cur = json_is_array(cur) ? json_array_get(cur, (size_t) atoi(tok)) : json_object_get(cur, tok);
		tok = next;
	}
	if (value == NULL) {
		json_object_del(cur, tok);
		return;
	}
	if (json_is_array(cur))
		json_array_set_new(cur, (size_t) atoi(tok), json_loads(value, JSON_DECODE_ANY, NULL));
	else
		json_object_set_new(cur, tok, json_loads(value, JSON_DECODE_ANY, NULL));
}

/* parse_mutated parses base_doc with one mutation applied. */
static bool
parse_mutated(const char *path, const char *value, struct Message *m, char *err, size_t errlen)
{
	json_t *doc = json_loads(base_doc, 0, NULL);
	char *text;
	bool ok;

	if (path != NULL)
		set_path(doc, path, value);
	text = json_dumps(doc, 0);
	ok = message_parse(text, m, err, errlen);
	free(text);
	json_decref(doc);
	return ok;
}

static void
test_valid_document(void)
{
	struct Message m;
	char err[256];

	CHECK(parse_mutated(NULL, NULL, &m, err, sizeof(err)));
	CHECK(m.notification_id == 1234567890123LL);
	CHECK_STR(m.status, "queued");
	CHECK_STR(m.message_id, "<1234.k3j4h5@example.com>");
	CHECK_STR(m.from.name, "Example App");
	CHECK(m.n_reply_to == 1);
	CHECK(m.n_rcpt == 3);
	CHECK(m.rcpt[2].kind == RCPT_BCC && m.rcpt[2].status == RS_RETRYING);
	CHECK(m.rcpt[1].addr.name == NULL);
	CHECK(message_envelope_count(&m) == 2);
	CHECK(m.n_headers == 1);
	CHECK_STR(m.headers[0].value, "welcome");
	CHECK(m.n_att == 1 && m.att[0].len == 5 && memcmp(m.att[0].data, "hello", 5) == 0);
	CHECK(m.profile.transport == TRANSPORT_SMTP && m.profile.debug);
	CHECK(m.profile.smtp.security == SEC_TLS && m.profile.smtp.port == 2525);
	CHECK_STR(m.profile.smtp.password, "env:PW");
	CHECK(m.profile.timeout_ms == 30000 && m.profile.max_message_bytes == 1000000);
	CHECK(m.profile.rate_limit_per_minute == 0);
	message_free(&m);
	message_free(&m); /* freeing twice is harmless: message_free zeroes */
}

/* Defaults: port follows security, timeouts, content type, graph URLs. */
static void
test_defaults(void)
{
	static const struct {
		const char *security;
		int port;
	} rows[] = {{"\"starttls\"", 587},
				{"\"starttls_optional\"", 587},
				{"\"tls\"", 465},
				{"\"none\"", 25},
				{"null", 587}};
	struct Message m;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *doc = json_loads(base_doc, 0, NULL);
		char *text;

		set_path(doc, "profile/smtp/port", NULL);
		set_path(doc, "profile/smtp/security", rows[i].security);
		set_path(doc, "profile/timeout_ms", NULL);
		set_path(doc, "attachments/0/content_type", NULL);
		text = json_dumps(doc, 0);
		CHECK(message_parse(text, &m, err, sizeof(err)));
		CHECK(m.profile.smtp.port == rows[i].port);
		CHECK(m.profile.timeout_ms == 60000);
		CHECK_STR(m.att[0].content_type, "application/octet-stream");
		message_free(&m);
		free(text);
		json_decref(doc);
	}
	CHECK(parse_mutated("profile/transport", "\"graph\"", &m, err, sizeof(err)) == false);
	{
		json_t *doc = json_loads(base_doc, 0, NULL);
		char *text;

		set_path(doc, "profile/transport", "\"graph\"");
		set_path(doc, "profile/graph",
				 "{\"tenant_id\": \"t\", \"client_id\": \"c\","
				 " \"client_secret\": \"file:graph\", \"sender\": \"s@example.com\"}");
		text = json_dumps(doc, 0);
		CHECK(message_parse(text, &m, err, sizeof(err)));
		CHECK_STR(m.profile.graph.login_url, "https://login.microsoftonline.com");
		CHECK_STR(m.profile.graph.graph_url, "https://graph.microsoft.com");
		CHECK(m.profile.graph.save_to_sent_items);
		message_free(&m);
		free(text);
		json_decref(doc);
	}
}

/* Each row breaks the contract in one place; err must name the problem. */
static void
test_rejections(void)
{
	static const struct {
		const char *path, *value, *want;
	} rows[] = {
		{"interface_version", "1", "interface_version 1"},
		{"notification_id", NULL, "notification_id is missing"},
		{"notification_id", "\"12\"", "notification_id must be an integer"},
		{"status", NULL, "status is missing"},
		{"message_id", "\"1234@example.com\"", "message_id must have the form"},
		{"message_id", "\"<a b@example.com>\"", "message_id must have the form"},
		{"from", NULL, "from must be an object"},
		{"from/address", "\"no-at-sign\"", "from.address is not a valid address"},
		{"from/address", "\"a@b.c>\\r\\nRCPT TO:<x@y.z\"", "from.address is not a valid"},
		{"from/name", "\"Evil\\r\\nBcc: x@y.z\"", "from.name contains a control character"},
		{"reply_to/0/name", "\"A\\nB\"", "reply_to[0].name contains a control"},
		{"recipients", "[]", "recipients is empty"},
		{"recipients", NULL, "recipients is missing"},
		{"recipients/0/kind", "\"from\"", "recipients[0].kind has an unknown value"},
		{"recipients/0/status", "\"lost\"", "recipients[0].status has an unknown value"},
		{"recipients/1/id", NULL, "recipients[1].id is missing"},
		{"recipients/2/address", "\"a@b.c\\n\"", "recipients[2].address is not a valid"},
		{"recipients/0/address", "\"a b@example.org\"", "recipients[0].address is not a valid"},
		{"subject", "\"Hi\\r\\nBcc: evil@example.com\"", "subject contains a control"},
		{"subject", "42", "subject must be a string"},
		{"subject", "\"\\t\\t\\t x\"", "subject contains a control"},
		{"headers/0", "[\"X-A\", \"a\\tb\"]", "headers[0]: the value contains"},
		{"body_text", NULL, NULL}, /* html alone is fine */
		{"headers/0", "[\"X-A\", \"v\\r\\nBcc: x@y.z\"]", "headers[0]: the value contains"},
		{"headers/0", "[\"X A\", \"v\"]", "not a valid header field name"},
		{"headers/0", "[\"X:A\", \"v\"]", "not a valid header field name"},
		{"headers/0", "[\"X-\\u00e9\", \"v\"]", "not a valid header field name"},
		{"headers/0", "[\"\", \"v\"]", "not a valid header field name"},
		{"headers/0", "[\"bcc\", \"x@y.z\"]", "bcc is generated by the Processor"},
		{"headers/0", "[\"Content-Type\", \"text/plain\"]", "is generated by the Processor"},
		{"headers/0", "[\"message-id\", \"<x@y>\"]", "is generated by the Processor"},
		{"headers/0", "[\"MIME-Version\", \"1.0\"]", "is generated by the Processor"},
		{"headers/0", "[\"Reply-To\", \"a@b.c\"]", "is generated by the Processor"},
		{"headers/0", "[\"X-A\"]", "must be a [name, value] pair"},
		{"attachments/0/content_base64", "\"@@@\"", "content_base64 is not valid base64"},
		{"attachments/0/size", "6", "size is 6 but the content has 5 bytes"},
		{"attachments/0/filename", "\"a\\r\\nb\"", "filename is empty or contains"},
		{"attachments/0/content_type", "\"pdf\"", "content_type is not a MIME type"},
		{"attachments/0/content_id", "\"<x@y>\"", "printable ASCII without <, >, quotes"},
		{"profile", NULL, "profile is missing"},
		{"profile/transport", "\"fax\"", "profile.transport has an unknown value"},
		{"profile/smtp", "null", "profile.smtp must be an object"},
		{"profile/smtp/host", NULL, "profile.smtp.host is missing"},
		{"profile/smtp/host", "\"evil/path\"", "profile.smtp.host is not a valid host"},
		{"profile/smtp/port", "70000", "profile.smtp.port is out of range"},
		{"profile/smtp/security", "\"ssl\"", "profile.smtp.security has an unknown value"},
		{"profile/smtp/helo_name", "\"a b\"", "helo_name is not a valid host name"},
		{"profile/smtp/username", "null", "need profile.smtp.username"},
		{"profile/timeout_ms", "0", "profile.timeout_ms is out of range"},
		{"profile/debug", "\"yes\"", "profile.debug must be a boolean"},
	};
	struct Message m;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bool ok = parse_mutated(rows[i].path, rows[i].value, &m, err, sizeof(err));

		if (rows[i].want == NULL) {
			CHECK(ok);
			message_free(&m);
			continue;
		}
		CHECK(!ok);
		if (ok || strstr(err, rows[i].want) == NULL)
			fprintf(stderr, "  row %zu (%s): err \"%s\", want \"%s\"\n", i, rows[i].path, err, rows[i].want);
		CHECK(!ok && strstr(err, rows[i].want) != NULL);
		CHECK(m.rcpt == NULL && m.status == NULL); /* freed on failure */
	}
}

/*
 * Values longer than the notifier's limits break the contract: each would make a header line no
 * mail server takes. At the limit they are fine.
 */
static void
test_lengths(void)
{
	static const struct {
		const char *path, *prefix, *unit, *suffix;
		int limit;
		const char *want;
	} rows[] = {
		{"from/address", "", "a", "@example.org", 254 - 12, "from.address is not a valid address"},
		{"recipients/0/address", "", "b", "@example.org", 254 - 12, "recipients[0].address is not a valid"},
		{"from/name", "", "\u00e9", "", 256, "from.name is longer than 256 characters"},
		{"reply_to/0/name", "", "n", "", 256, "reply_to[0].name is longer than 256"},
		{"headers/0/0", "X-", "h", "", 76 - 2, "the field name is longer than 76"},
		{"attachments/0/filename", "", "\u00fc", "", 255, "filename is longer than 255 characters"},
		{"attachments/0/content_type", "text/", "p", "", 255 - 5, "content_type is not a MIME type"},
		{"attachments/0/content_id", "", "c", "@x", 250 - 2, "content_id must be at most 250"},
		{"message_id", "<", "m", "@x>", 250 - 4, "message_id must have the form <local@domain>, at most"},
	};
	struct Message m;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int extra;

		for (extra = 0; extra <= 1; extra++) {
			struct Buf v = BUF_INIT;
			bool ok;
			int k;

			CHECK(buf_printf(&v, "\"%s", rows[i].prefix));
			for (k = 0; k < rows[i].limit + extra; k++)
				CHECK(buf_puts(&v, rows[i].unit));
			CHECK(buf_printf(&v, "%s\"", rows[i].suffix));
			ok = parse_mutated(rows[i].path, v.data, &m, err, sizeof(err));
			if (extra == 0) {
				if (!ok)
					fprintf(stderr, "  row %zu at the limit: %s\n", i, err);
				CHECK(ok);
				if (ok)
					message_free(&m);
			} else {
				if (ok || strstr(err, rows[i].want) == NULL)
					fprintf(stderr, "  row %zu over the limit: err \"%s\", want \"%s\"\n", i, ok ? "" : err,
							rows[i].want);
				CHECK(!ok && strstr(err, rows[i].want) != NULL);
			}
			buf_free(&v);
		}
	}
}

/* parse_with parses base_doc with up to four mutations (path, value pairs; NULL ends them). */
static bool
parse_with(struct Message *m, char *err, size_t errlen, const char *const *pv)
{
	json_t *doc = json_loads(base_doc, 0, NULL);
	char *text;
	bool ok;

	for (; pv[0] != NULL; pv += 2)
		set_path(doc, pv[0], pv[1]);
	text = json_dumps(doc, 0);
	ok = message_parse(text, m, err, errlen);
	free(text);
	json_decref(doc);
	return ok;
}

#define GRAPH_APP                                                                                            \
	"{\"tenant_id\": \"contoso.onmicrosoft.com\", \"client_id\": \"6731de76-14a6-49ae-97bc-6eba6914391e\", " \
	"\"client_secret\": \"env:S\", \"sender\": \"relay@contoso.com\""

/* A Graph profile: the scope follows the Graph URL of its cloud unless given; ca_file is read. */
static void
test_graph_profile(void)
{
	static const struct {
		const char *graph, *want_scope, *want_error;
	} rows[] = {
		{GRAPH_APP "}", "https://graph.microsoft.com/.default", NULL},
		{GRAPH_APP ", \"graph_url\": \"https://graph.microsoft.us/\", \"login_url\": "
				   "\"https://login.microsoftonline.us\"}",
		 "https://graph.microsoft.us/.default", NULL},
		{GRAPH_APP
		 ", \"scope\": \"https://graph.microsoft.com/.default\", \"graph_url\": \"https://127.0.0.1:8443\"}",
		 "https://graph.microsoft.com/.default", NULL},
		{GRAPH_APP ", \"login_url\": \"http://login.microsoftonline.com\"}", NULL,
		 "login_url must be an https://"},
		{GRAPH_APP ", \"graph_url\": \"https://graph.microsoft.com/?x=1\"}", NULL,
		 "graph_url must be an https://"},
		{GRAPH_APP ", \"scope\": \"a  b\"}", NULL, "scope is not an OAuth2 scope"},
		{"{\"tenant_id\": \"../x\", \"client_id\": \"c\", \"client_secret\": \"s\", \"sender\": \"a@b.c\"}",
		 NULL, "tenant_id is neither a GUID nor a domain"},
		{"{\"tenant_id\": \"t\", \"client_id\": \"c\", \"client_secret\": \"s\", \"sender\": \"a\\nb\"}",
		 NULL, "sender is empty or contains a control"},
		{"{\"tenant_id\": \"t\", \"client_id\": \"c\", \"sender\": \"a@b.c\"}", NULL,
		 "client_secret is missing"},
	};
	struct Message m;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *pv[] = {"profile/transport", "\"graph\"", "profile/graph", rows[i].graph, NULL};
		bool ok = parse_with(&m, err, sizeof(err), pv);

		if (rows[i].want_error != NULL) {
			CHECK(!ok && strstr(err, rows[i].want_error) != NULL);
			if (ok || strstr(err, rows[i].want_error) == NULL)
				fprintf(stderr, "  row %zu: err \"%s\"\n", i, err);
			continue;
		}
		CHECK(ok);
		if (!ok) {
			fprintf(stderr, "  row %zu: err \"%s\"\n", i, err);
			continue;
		}
		CHECK_STR(m.profile.graph.scope, rows[i].want_scope);
		CHECK(m.profile.graph.ca_file == NULL);
		message_free(&m);
	}
	{
		const char *pv[] = {
			"profile/transport", "\"graph\"", "profile/graph",
			GRAPH_APP ", \"ca_file\": \"/etc/pg_relay/ca.pem\", \"graph_url\": \"https://g.example//\"}",
			NULL};

		CHECK(parse_with(&m, err, sizeof(err), pv));
		CHECK_STR(m.profile.graph.ca_file, "/etc/pg_relay/ca.pem");
		CHECK_STR(m.profile.graph.graph_url, "https://g.example");
		CHECK_STR(m.profile.graph.scope, "https://g.example/.default");
		message_free(&m);
	}
}

/* SMTP with an OAuth2 app: all three of tenant, client, secret; then no password or static token. */
static void
test_smtp_oauth(void)
{
	static const struct {
		const char *tenant, *client, *secret, *password, *username, *want_error;
	} rows[] = {
		{"\"t.example\"", "\"c\"", "\"env:S\"", "null", "\"relay@t.example\"", NULL},
		{"\"t.example\"", "\"c\"", "null", "null", "\"relay@t.example\"",
		 "tenant_id, client_id and client_secret go together"},
		{"null", "\"c\"", "\"s\"", "null", "\"relay@t.example\"", "go together"},
		{"\"t.example\"", "\"c\"", "\"s\"", "\"pw\"", "\"relay@t.example\"",
		 "excludes password and oauth_token"},
		{"\"t.example\"", "\"c\"", "\"s\"", "null", "null", "need profile.smtp.username"},
		{"\"t/x\"", "\"c\"", "\"s\"", "null", "\"relay@t.example\"", "tenant_id is neither"},
	};
	struct Message m;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *pv[] = {"profile/smtp/tenant_id",
							rows[i].tenant,
							"profile/smtp/client_id",
							rows[i].client,
							"profile/smtp/client_secret",
							rows[i].secret,
							"profile/smtp/password",
							rows[i].password,
							"profile/smtp/username",
							rows[i].username,
							NULL};
		bool ok = parse_with(&m, err, sizeof(err), pv);

		if (rows[i].want_error != NULL) {
			CHECK(!ok && strstr(err, rows[i].want_error) != NULL);
			if (ok || strstr(err, rows[i].want_error) == NULL)
				fprintf(stderr, "  row %zu: err \"%s\"\n", i, err);
			continue;
		}
		CHECK(ok);
		if (!ok)
			continue;
		CHECK_STR(m.profile.smtp.login_url, "https://login.microsoftonline.com");
		CHECK_STR(m.profile.smtp.scope, "https://outlook.office365.com/.default");
		CHECK_STR(m.profile.smtp.client_secret, "env:S");
		message_free(&m);
	}
	/* without an app, login_url and scope are not used */
	{
		const char *pv[] = {NULL};

		CHECK(parse_with(&m, err, sizeof(err), pv));
		CHECK(m.profile.smtp.client_id == NULL && m.profile.smtp.login_url == NULL);
		message_free(&m);
	}
}

static void
test_not_json(void)
{
	static const char *const rows[] = {"", "nul", "[1,2]", "{\"a\":1,\"a\":2}", "\"x\""};
	struct Message m;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECK(!message_parse(rows[i], &m, err, sizeof(err)) && err[0] != '\0');
	/* the bytes jansson quotes near the error come out as valid UTF-8 */
	CHECK(!message_parse("{\"a\": \"x\\\xff\xfe\"}", &m, err, sizeof(err)));
	CHECK(strstr(err, "invalid JSON at line 1") != NULL && strchr(err, '\xff') == NULL &&
		  strchr(err, '\xfe') == NULL);
	/* both bodies null */
	{
		json_t *doc = json_loads(base_doc, 0, NULL);
		char *text;

		set_path(doc, "body_text", "null");
		set_path(doc, "body_html", NULL);
		text = json_dumps(doc, 0);
		CHECK(!message_parse(text, &m, err, sizeof(err)));
		CHECK(strstr(err, "body_text and body_html are both missing") != NULL);
		free(text);
		json_decref(doc);
	}
}

int
main(void)
{
	RUN(test_valid_document);
	RUN(test_defaults);
	RUN(test_rejections);
	RUN(test_lengths);
	RUN(test_graph_profile);
	RUN(test_smtp_oauth);
	RUN(test_not_json);
	return UNIT_DONE();
}
