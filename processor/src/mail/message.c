/*
 * message.c - parse the JSON document of pgrelay_notifier.fetch() into a struct Message.
 *
 * Parsing is also the gate for everything the transports write into SMTP commands and header
 * fields: a CR or LF smuggled into a subject, a display name or an address would let a producer
 * inject headers or SMTP commands, so such a document is refused here (a permanent failure).
 */
#include "message.h"

#include <ctype.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base64.h"
#include "pgrelay.h"
#include "utf8.h"

/*
 * The lengths the notifier's limits promise (docs/notifier.md, Limits). Longer values would make
 * header lines no mail server takes (more than 998 octets, RFC 5322): a document that holds one
 * breaks the contract, and is refused like any other broken document.
 */
#define ADDRESS_MAX 254      /* octets, RFC 5321 */
#define DISPLAY_NAME_MAX 256 /* characters */
#define FIELD_NAME_MAX 76    /* octets */
#define CONTENT_TYPE_MAX 255 /* octets */
#define CONTENT_ID_MAX 250   /* octets */
#define FILE_NAME_MAX 255    /* characters */
#define MESSAGE_ID_MAX 250   /* octets; the notifier makes ids of about 50 */

/* Parse carries the error buffer through the recursive descent. */
struct Parse {
	char *err;
	size_t errlen;
};

static bool parse_fail(struct Parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* parse_fail writes the reason into the caller's buffer and returns false, for `return fail(...)`. */
static bool
parse_fail(struct Parse *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->err, p->errlen, fmt, ap);
	va_end(ap);
	utf8_trim_cut(p->err); /* the reason is stored as text */
	return false;
}

/* chars counts the characters of UTF-8 text (jansson hands out valid UTF-8 only). */
static size_t
chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char) *s & 0xC0) != 0x80;
	return n;
}

/*
 * is_header_safe: no control character, so the text can go into a header line. TAB included: the
 * notifier refuses it everywhere a header is made from, and the header encoders fold at blanks
 * only, so a run of TABs would be folded onto a line of blanks alone.
 */
static bool
is_header_safe(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char) *s;

		if (c < 0x20 || c == 0x7f)
			return false;
	}
	return true;
}

/* is_ascii: no byte above 0x7f (MIME parameters must be ASCII). */
static bool
is_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char) *s >= 0x80)
			return false;
	return true;
}

/* is_printable_ascii: every byte in 0x21..0x7e, except those listed in forbidden. */
static bool
is_printable_ascii(const char *s, const char *forbidden)
{
	if (*s == '\0')
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char) *s;

		if (c <= 0x20 || c >= 0x7f || strchr(forbidden, c) != NULL)
			return false;
	}
	return true;
}

/*
 * is_address_ok: a plausible addr-spec. The notifier validates addresses properly; here we only
 * make sure it cannot break out of "<...>" in RCPT TO or a header (no controls, blanks, < or >).
 * Non-ASCII is allowed: libcurl asks for SMTPUTF8 when the server offers it.
 */
static bool
is_address_ok(const char *s)
{
	const char *at = strrchr(s, '@');

	if (at == NULL || at == s || at[1] == '\0' || strlen(s) > ADDRESS_MAX)
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char) *s;

		if (c <= 0x20 || c == 0x7f || c == '<' || c == '>')
			return false;
	}
	return true;
}

/* is_generated_header: names the Processor writes itself; a duplicate would confuse readers. */
static bool
is_generated_header(const char *name)
{
	static const char *const generated[] = {
		"From", "To", "Cc", "Bcc", "Subject", "Date", "Message-ID", "MIME-Version", "Reply-To",
	};
	size_t i;

	if (strncasecmp(name, "Content-", 8) == 0)
		return true;
	for (i = 0; i < sizeof(generated) / sizeof(generated[0]); i++)
		if (strcasecmp(name, generated[i]) == 0)
			return true;
	return false;
}

/*
 * get_str copies the string member key of obj into *out. A missing or null member leaves *out
 * NULL, which is an error only when required. ctx names the object in error messages.
 */
static bool
get_str(struct Parse *p, json_t *obj, const char *ctx, const char *key, bool required, char **out)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (v == NULL || json_is_null(v)) {
		if (required)
			return parse_fail(p, "%s%s is missing", ctx, key);
		return true;
	}
	if (!json_is_string(v))
		return parse_fail(p, "%s%s must be a string", ctx, key);
	*out = strdup(json_string_value(v));
	if (*out == NULL)
		return parse_fail(p, "out of memory");
	return true;
}

/* get_int reads an integer member; a missing or null member gives def. */
static bool
get_int(struct Parse *p, json_t *obj, const char *ctx, const char *key, long long def, long long min,
		long long max, long long *out)
{
	json_t *v = json_object_get(obj, key);

	*out = def;
	if (v == NULL || json_is_null(v))
		return true;
	if (!json_is_integer(v))
		return parse_fail(p, "%s%s must be an integer", ctx, key);
	*out = json_integer_value(v);
	if (*out < min || *out > max)
		return parse_fail(p, "%s%s is out of range (%lld)", ctx, key, *out);
	return true;
}

/* get_bool reads a boolean member; a missing or null member gives def. */
static bool
get_bool(struct Parse *p, json_t *obj, const char *ctx, const char *key, bool def, bool *out)
{
	json_t *v = json_object_get(obj, key);

	*out = def;
	if (v == NULL || json_is_null(v))
		return true;
	if (!json_is_boolean(v))
		return parse_fail(p, "%s%s must be a boolean", ctx, key);
	*out = json_is_true(v);
	return true;
}

/* parse_address reads {"address", "name"} and checks both can be written into headers. */
static bool
parse_address(struct Parse *p, json_t *v, const char *ctx, struct Address *a)
{
	char dot[64];

	if (!json_is_object(v))
		return parse_fail(p, "%s must be an object", ctx);
	snprintf(dot, sizeof(dot), "%s.", ctx);
	if (!get_str(p, v, dot, "address", true, &a->address))
		return false;
	if (!is_address_ok(a->address))
		return parse_fail(p, "%s.address is not a valid address", ctx);
	if (!get_str(p, v, dot, "name", false, &a->name))
		return false;
	if (a->name != NULL && !is_header_safe(a->name))
		return parse_fail(p, "%s.name contains a control character (CR/LF)", ctx);
	if (a->name != NULL && chars(a->name) > DISPLAY_NAME_MAX)
		return parse_fail(p, "%s.name is longer than %d characters", ctx, DISPLAY_NAME_MAX);
	return true;
}

/* parse_enum maps a string member onto one of names[], returning its index in *out. */
static bool
parse_enum(struct Parse *p, json_t *obj, const char *ctx, const char *key, const char *const *names, int n,
		   int def, int *out)
{
	json_t *v = json_object_get(obj, key);
	int i;

	*out = def;
	if (v == NULL || json_is_null(v)) {
		if (def < 0)
			return parse_fail(p, "%s%s is missing", ctx, key);
		return true;
	}
	if (json_is_string(v))
		for (i = 0; i < n; i++)
			if (strcmp(json_string_value(v), names[i]) == 0) {
				*out = i;
				return true;
			}
	return parse_fail(p, "%s%s has an unknown value", ctx, key);
}

/* parse_recipient reads one element of "recipients". */
static bool
parse_recipient(struct Parse *p, json_t *v, int i, struct Recipient *r)
{
	static const char *const kinds[] = {"to", "cc", "bcc"};
	char name[32], ctx[40];
	long long id;
	json_t *st = json_object_get(v, "status");
	int k;

	snprintf(name, sizeof(name), "recipients[%d]", i);
	snprintf(ctx, sizeof(ctx), "%s.", name);
	if (!json_is_object(v))
		return parse_fail(p, "%s must be an object", name);
	if (json_object_get(v, "id") == NULL)
		return parse_fail(p, "%sid is missing", ctx);
	if (!get_int(p, v, ctx, "id", 0, 0, LLONG_MAX, &id) || !parse_enum(p, v, ctx, "kind", kinds, 3, -1, &k))
		return false;
	r->id = id;
	r->kind = (enum RcptKind) k;
	r->status = RS_PENDING;
	if (st != NULL && !json_is_null(st) &&
		!(json_is_string(st) && rcpt_status_parse(json_string_value(st), &r->status)))
		return parse_fail(p, "%sstatus has an unknown value", ctx);
	return parse_address(p, v, name, &r->addr);
}

/* parse_header reads one ["Name", "value"] pair of "headers". */
static bool
parse_header(struct Parse *p, json_t *v, int i, struct Header *h)
{
	json_t *name = json_array_get(v, 0), *value = json_array_get(v, 1);

	if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_string(name) || !json_is_string(value))
		return parse_fail(p, "headers[%d] must be a [name, value] pair of strings", i);
	if (!is_printable_ascii(json_string_value(name), ":"))
		return parse_fail(p, "headers[%d]: \"%.*s\" is not a valid header field name", i,
						  (int) utf8_prefix(json_string_value(name), 64), json_string_value(name));
	if (strlen(json_string_value(name)) > FIELD_NAME_MAX)
		return parse_fail(p, "headers[%d]: the field name is longer than %d characters", i, FIELD_NAME_MAX);
	if (is_generated_header(json_string_value(name)))
		return parse_fail(p, "headers[%d]: %.64s is generated by the Processor and may not be set", i,
						  json_string_value(name));
	if (!is_header_safe(json_string_value(value)))
		return parse_fail(p, "headers[%d]: the value contains a control character (CR/LF)", i);
	h->name = strdup(json_string_value(name));
	h->value = strdup(json_string_value(value));
	if (h->name == NULL || h->value == NULL)
		return parse_fail(p, "out of memory");
	return true;
}

/* parse_attachment reads one element of "attachments" and decodes its bytes. */
static bool
parse_attachment(struct Parse *p, json_t *v, int i, struct Attachment *a)
{
	char ctx[64];
	char *b64 = NULL;
	long long size;
	bool ok;

	snprintf(ctx, sizeof(ctx), "attachments[%d].", i);
	if (!json_is_object(v))
		return parse_fail(p, "attachments[%d] must be an object", i);
	if (!get_str(p, v, ctx, "filename", true, &a->filename) ||
		!get_str(p, v, ctx, "content_type", false, &a->content_type) ||
		!get_str(p, v, ctx, "content_id", false, &a->content_id) ||
		!get_int(p, v, ctx, "size", -1, -1, LLONG_MAX, &size))
		return false;
	if (a->filename[0] == '\0' || !is_header_safe(a->filename))
		return parse_fail(p, "%sfilename is empty or contains a control character", ctx);
	if (chars(a->filename) > FILE_NAME_MAX)
		return parse_fail(p, "%sfilename is longer than %d characters", ctx, FILE_NAME_MAX);
	if (a->content_type == NULL && (a->content_type = strdup("application/octet-stream")) == NULL)
		return parse_fail(p, "out of memory");
	/* a content type may carry parameters ("text/plain; charset=utf-8"), hence blanks are fine */
	if (!is_header_safe(a->content_type) || !is_ascii(a->content_type) ||
		strchr(a->content_type, '/') == NULL || strlen(a->content_type) > CONTENT_TYPE_MAX)
		return parse_fail(p, "%scontent_type is not a MIME type of at most 255 characters", ctx);
	if (a->content_id != NULL &&
		(!is_printable_ascii(a->content_id, "<>\"\\") || strlen(a->content_id) > CONTENT_ID_MAX))
		return parse_fail(
			p, "%scontent_id must be at most 250 characters of printable ASCII without <, >, quotes", ctx);
	if (!get_str(p, v, ctx, "content_base64", true, &b64))
		return false;
	ok = base64_decode(b64, &a->data, &a->len);
	free(b64);
	if (!ok)
		return parse_fail(p, "%scontent_base64 is not valid base64", ctx);
	if (size >= 0 && (size_t) size != a->len)
		return parse_fail(p, "%ssize is %lld but the content has %zu bytes", ctx, size, a->len);
	return true;
}

/*
 * parse_array allocates *items (n elements of size sz, zeroed) for the array member key and
 * calls each() on every element. A missing or null member is an empty list unless required.
 */
static bool
parse_array(struct Parse *p, json_t *doc, const char *key, bool required, size_t sz, void **items, int *n,
			bool (*each)(struct Parse *, json_t *, int, void *))
{
	json_t *arr = json_object_get(doc, key);
	size_t i;

	*items = NULL;
	*n = 0;
	if (arr == NULL || json_is_null(arr)) {
		if (required)
			return parse_fail(p, "%s is missing", key);
		return true;
	}
	if (!json_is_array(arr))
		return parse_fail(p, "%s must be an array", key);
	if (json_array_size(arr) > 100000)
		return parse_fail(p, "%s has too many elements", key);
	if (json_array_size(arr) == 0)
		return !required || parse_fail(p, "%s is empty", key);
	*items = calloc(json_array_size(arr), sz);
	if (*items == NULL)
		return parse_fail(p, "out of memory");
	for (i = 0; i < json_array_size(arr); i++) {
		(*n)++; /* counted before parsing so message_free releases a half-filled element */
		if (!each(p, json_array_get(arr, i), (int) i, (char *) *items + i * sz))
			return false;
	}
	return true;
}

/* The element callbacks of parse_array, adapting the typed parsers above. */
static bool
each_rcpt(struct Parse *p, json_t *v, int i, void *item)
{
	return parse_recipient(p, v, i, item);
}

static bool
each_header(struct Parse *p, json_t *v, int i, void *item)
{
	return parse_header(p, v, i, item);
}

static bool
each_attachment(struct Parse *p, json_t *v, int i, void *item)
{
	return parse_attachment(p, v, i, item);
}

static bool
each_reply_to(struct Parse *p, json_t *v, int i, void *item)
{
	char ctx[32];

	snprintf(ctx, sizeof(ctx), "reply_to[%d]", i);
	return parse_address(p, v, ctx, item);
}

/* is_host_ok: a host name or IP literal that cannot break out of the smtp:// URL. */
static bool
is_host_ok(const char *s)
{
	return is_printable_ascii(s, "/?#@\\\"'<>%");
}

/*
 * is_https_base_ok: an https:// base URL that a path can be appended to: printable ASCII, no
 * blanks, no query or fragment. libcurl refuses any other scheme anyway (https only); this makes
 * the reason readable.
 */
static bool
is_https_base_ok(const char *s)
{
	return strncmp(s, "https://", 8) == 0 && s[8] != '\0' && is_printable_ascii(s, "?#\\\"<>");
}

/* is_scope_ok: OAuth2 scope tokens (printable ASCII) separated by single spaces. */
static bool
is_scope_ok(const char *s)
{
	const char *p;

	if (*s == '\0' || *s == ' ')
		return false;
	for (p = s; *p; p++) {
		unsigned char c = (unsigned char) *p;

		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || (c == ' ' && (p[1] == ' ' || p[1] == '\0')))
			return false;
	}
	return true;
}

/* is_tenant_ok: a directory GUID or a domain name: it becomes a path segment of the token URL. */
static bool
is_tenant_ok(const char *s)
{
	if (*s == '\0' || *s == '.')
		return false;
	for (; *s; s++)
		if (!(isalnum((unsigned char) *s) || *s == '-' || *s == '.'))
			return false;
	return true;
}

/* default_str sets *field to a copy of def when it is NULL. */
static bool
default_str(struct Parse *p, char **field, const char *def)
{
	if (*field == NULL && (*field = strdup(def)) == NULL)
		return parse_fail(p, "out of memory");
	return true;
}

/* parse_base_url checks an https:// base URL (ctx names it) and drops trailing slashes. */
static bool
parse_base_url(struct Parse *p, char *url, const char *ctx)
{
	size_t n = strlen(url);

	if (!is_https_base_ok(url))
		return parse_fail(p, "%s must be an https:// URL without query or fragment", ctx);
	while (n > 8 && url[n - 1] == '/')
		url[--n] = '\0';
	return true;
}

/* parse_oauth_app checks the tenant, the client id and the scope of an OAuth2 app (ctx: "profile.x."). */
static bool
parse_oauth_app(struct Parse *p, const char *ctx, const char *tenant, const char *client, const char *scope)
{
	if (!is_tenant_ok(tenant))
		return parse_fail(p, "%stenant_id is neither a GUID nor a domain name", ctx);
	if (!is_printable_ascii(client, "\"\\"))
		return parse_fail(p, "%sclient_id is not printable ASCII", ctx);
	if (!is_scope_ok(scope))
		return parse_fail(p, "%sscope is not an OAuth2 scope", ctx);
	return true;
}

/*
 * parse_smtp_oauth reads the OAuth2 app of an SMTP profile: tenant_id, client_id and
 * client_secret together or not at all, and then neither password nor oauth_token.
 */
static bool
parse_smtp_oauth(struct Parse *p, json_t *v, struct SmtpProfile *s)
{
	const char *ctx = "profile.smtp.";
	int n;

	if (!get_str(p, v, ctx, "tenant_id", false, &s->tenant_id) ||
		!get_str(p, v, ctx, "client_id", false, &s->client_id) ||
		!get_str(p, v, ctx, "client_secret", false, &s->client_secret) ||
		!get_str(p, v, ctx, "login_url", false, &s->login_url) ||
		!get_str(p, v, ctx, "scope", false, &s->scope))
		return false;
	n = (s->tenant_id != NULL) + (s->client_id != NULL) + (s->client_secret != NULL);
	if (n == 0)
		return true;
	if (n != 3)
		return parse_fail(p, "profile.smtp.tenant_id, client_id and client_secret go together");
	if (s->password != NULL || s->oauth_token != NULL)
		return parse_fail(p, "profile.smtp: an OAuth2 app (client_id) excludes password and oauth_token");
	return default_str(p, &s->login_url, DEFAULT_LOGIN_URL) && default_str(p, &s->scope, SMTP_OAUTH_SCOPE) &&
		   parse_base_url(p, s->login_url, "profile.smtp.login_url") &&
		   parse_oauth_app(p, ctx, s->tenant_id, s->client_id, s->scope);
}

/* parse_smtp reads profile.smtp; the port default follows the security mode. */
static bool
parse_smtp(struct Parse *p, json_t *v, struct SmtpProfile *s)
{
	static const char *const sec[] = {"starttls", "starttls_optional", "tls", "none"};
	static const int default_port[] = {587, 587, 465, 25};
	const char *ctx = "profile.smtp.";
	long long port;
	int k;

	if (!json_is_object(v))
		return parse_fail(p, "profile.smtp must be an object for transport smtp");
	if (!get_str(p, v, ctx, "host", true, &s->host) ||
		!parse_enum(p, v, ctx, "security", sec, 4, SEC_STARTTLS, &k) ||
		!get_int(p, v, ctx, "port", default_port[k], 1, 65535, &port) ||
		!get_str(p, v, ctx, "username", false, &s->username) ||
		!get_str(p, v, ctx, "password", false, &s->password) ||
		!get_str(p, v, ctx, "oauth_token", false, &s->oauth_token) ||
		!get_str(p, v, ctx, "ca_file", false, &s->ca_file) ||
		!get_str(p, v, ctx, "helo_name", false, &s->helo_name))
		return false;
	s->security = (enum SmtpSecurity) k;
	s->port = (int) port;
	if (!is_host_ok(s->host))
		return parse_fail(p, "profile.smtp.host is not a valid host name");
	if (s->helo_name != NULL && !is_printable_ascii(s->helo_name, "/?#@\\\"'<>%"))
		return parse_fail(p, "profile.smtp.helo_name is not a valid host name");
	if (s->username != NULL && !is_header_safe(s->username))
		return parse_fail(p, "profile.smtp.username contains a control character");
	if (!parse_smtp_oauth(p, v, s))
		return false;
	/* libcurl only authenticates with a user name: without one the secret would be ignored */
	if (s->username == NULL && (s->password != NULL || s->oauth_token != NULL || s->client_id != NULL))
		return parse_fail(p, "profile.smtp.password/oauth_token/client_id need profile.smtp.username");
	return true;
}

/* parse_graph reads profile.graph, filling the documented defaults. */
static bool
parse_graph(struct Parse *p, json_t *v, struct GraphProfile *g)
{
	const char *ctx = "profile.graph.";

	if (!json_is_object(v))
		return parse_fail(p, "profile.graph must be an object for transport graph");
	if (!get_str(p, v, ctx, "tenant_id", true, &g->tenant_id) ||
		!get_str(p, v, ctx, "client_id", true, &g->client_id) ||
		!get_str(p, v, ctx, "client_secret", true, &g->client_secret) ||
		!get_str(p, v, ctx, "sender", true, &g->sender) ||
		!get_str(p, v, ctx, "login_url", false, &g->login_url) ||
		!get_str(p, v, ctx, "graph_url", false, &g->graph_url) ||
		!get_str(p, v, ctx, "scope", false, &g->scope) ||
		!get_str(p, v, ctx, "ca_file", false, &g->ca_file) ||
		!get_bool(p, v, ctx, "save_to_sent_items", true, &g->save_to_sent_items))
		return false;
	if (!default_str(p, &g->login_url, DEFAULT_LOGIN_URL) ||
		!default_str(p, &g->graph_url, DEFAULT_GRAPH_URL) ||
		!parse_base_url(p, g->login_url, "profile.graph.login_url") ||
		!parse_base_url(p, g->graph_url, "profile.graph.graph_url"))
		return false;
	/* One resource per token: Graph's, named after the Graph URL of the profile's cloud. */
	if (g->scope == NULL) {
		struct Buf b = BUF_INIT;

		if (!buf_printf(&b, "%s/.default", g->graph_url))
			return parse_fail(p, "out of memory");
		g->scope = buf_steal(&b);
		if (g->scope == NULL)
			return parse_fail(p, "out of memory");
	}
	if (!parse_oauth_app(p, ctx, g->tenant_id, g->client_id, g->scope))
		return false;
	/* the sender is %-encoded into the URL's path, so any text is safe there; a control is a mistake */
	if (g->sender[0] == '\0' || !is_header_safe(g->sender))
		return parse_fail(p, "profile.graph.sender is empty or contains a control character");
	return true;
}

/* The names of enum TransportKind, as profile.transport spells them. */
static const char *const transport_names[] = {"smtp", "graph"};

const char *
profile_transport_name(const struct Profile *p)
{
	return transport_names[p->transport];
}

/* parse_profile reads "profile" and exactly the sub-object its transport names. */
static bool
parse_profile(struct Parse *p, json_t *v, struct Profile *pr)
{
	const char *ctx = "profile.";
	long long cto, to, rate, maxb;
	int t;

	if (!json_is_object(v))
		return parse_fail(p, "profile is missing or not an object");
	if (!get_str(p, v, ctx, "name", false, &pr->name) ||
		!parse_enum(p, v, ctx, "transport", transport_names, 2, -1, &t) ||
		!get_bool(p, v, ctx, "debug", false, &pr->debug) ||
		!get_int(p, v, ctx, "connect_timeout_ms", 10000, 1, 86400000, &cto) ||
		!get_int(p, v, ctx, "timeout_ms", 60000, 1, 86400000, &to) ||
		!get_int(p, v, ctx, "rate_limit_per_minute", 0, 0, 1000000000, &rate) ||
		!get_int(p, v, ctx, "max_message_bytes", 0, 0, LONG_MAX, &maxb))
		return false;
	pr->transport = (enum TransportKind) t;
	pr->connect_timeout_ms = (long) cto;
	pr->timeout_ms = (long) to;
	pr->rate_limit_per_minute = (int) rate;
	pr->max_message_bytes = (long) maxb;
	if (pr->transport == TRANSPORT_SMTP)
		return parse_smtp(p, json_object_get(v, "smtp"), &pr->smtp);
	return parse_graph(p, json_object_get(v, "graph"), &pr->graph);
}

/* parse_texts reads subject and the bodies; at least one body must be present. */
static bool
parse_texts(struct Parse *p, json_t *doc, struct Message *m)
{
	if (!get_str(p, doc, "", "subject", false, &m->subject) ||
		!get_str(p, doc, "", "body_text", false, &m->body_text) ||
		!get_str(p, doc, "", "body_html", false, &m->body_html))
		return false;
	if (m->subject != NULL && !is_header_safe(m->subject))
		return parse_fail(p, "subject contains a control character (CR/LF)");
	if (m->body_text == NULL && m->body_html == NULL)
		return parse_fail(p, "body_text and body_html are both missing");
	return true;
}

/* parse_document fills m from the top-level object; m is freed by the caller on failure. */
static bool
parse_document(struct Parse *p, json_t *doc, struct Message *m)
{
	long long iv;

	if (!json_is_object(doc))
		return parse_fail(p, "the document is not a JSON object");
	if (!get_int(p, doc, "", "interface_version", 1, 0, INT_MAX, &iv))
		return false;
	if (iv != PGRELAY_INTERFACE_VERSION)
		return parse_fail(p, "interface_version %lld is not supported (expected %d)", iv,
						  PGRELAY_INTERFACE_VERSION);
	if (json_object_get(doc, "notification_id") == NULL)
		return parse_fail(p, "notification_id is missing");
	if (!get_int(p, doc, "", "notification_id", 0, 0, LLONG_MAX, &m->notification_id) ||
		!get_str(p, doc, "", "status", true, &m->status) ||
		!get_str(p, doc, "", "channel", false, &m->channel) ||
		!get_str(p, doc, "", "message_id", true, &m->message_id))
		return false;
	if (strlen(m->message_id) < 3 || strlen(m->message_id) > MESSAGE_ID_MAX || m->message_id[0] != '<' ||
		m->message_id[strlen(m->message_id) - 1] != '>' || !is_printable_ascii(m->message_id, ""))
		return parse_fail(p, "message_id must have the form <local@domain>, at most 250 characters");
	if (!parse_address(p, json_object_get(doc, "from"), "from", &m->from) ||
		!parse_array(p, doc, "reply_to", false, sizeof(struct Address), (void **) &m->reply_to,
					 &m->n_reply_to, each_reply_to) ||
		!parse_array(p, doc, "recipients", true, sizeof(struct Recipient), (void **) &m->rcpt, &m->n_rcpt,
					 each_rcpt) ||
		!parse_texts(p, doc, m) ||
		!parse_array(p, doc, "headers", false, sizeof(struct Header), (void **) &m->headers, &m->n_headers,
					 each_header) ||
		!parse_array(p, doc, "attachments", false, sizeof(struct Attachment), (void **) &m->att, &m->n_att,
					 each_attachment))
		return false;
	return parse_profile(p, json_object_get(doc, "profile"), &m->profile);
}

bool
message_parse(const char *json, struct Message *m, char *err, size_t errlen)
{
	struct Parse p = {err, errlen};
	json_error_t jerr;
	json_t *doc;
	bool ok;

	memset(m, 0, sizeof(*m));
	if (errlen > 0)
		err[0] = '\0';
	doc = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
	if (doc == NULL) {
		/* jansson quotes the bytes near the error as they are: the reason is stored as text */
		struct Buf near = BUF_INIT;

		ok = utf8_clean(&near, jerr.text, strlen(jerr.text), 160);
		parse_fail(&p, "invalid JSON at line %d: %s", jerr.line, ok && near.data ? near.data : "");
		buf_free(&near);
		return false;
	}
	ok = parse_document(&p, doc, m);
	json_decref(doc);
	if (!ok)
		message_free(m);
	return ok;
}

/* free_secret wipes a secret before releasing it, so it does not linger in freed heap memory. */
static void
free_secret(char *s)
{
	if (s != NULL)
		explicit_bzero(s, strlen(s));
	free(s);
}

static void
free_address(struct Address *a)
{
	free(a->address);
	free(a->name);
}

static void
free_profile(struct Profile *p)
{
	free(p->name);
	free(p->smtp.host);
	free(p->smtp.username);
	free_secret(p->smtp.password);
	free_secret(p->smtp.oauth_token);
	free(p->smtp.ca_file);
	free(p->smtp.helo_name);
	free(p->smtp.tenant_id);
	free(p->smtp.client_id);
	free_secret(p->smtp.client_secret);
	free(p->smtp.login_url);
	free(p->smtp.scope);
	free(p->graph.tenant_id);
	free(p->graph.client_id);
	free_secret(p->graph.client_secret);
	free(p->graph.sender);
	free(p->graph.login_url);
	free(p->graph.graph_url);
	free(p->graph.scope);
	free(p->graph.ca_file);
}

void
message_free(struct Message *m)
{
	int i;

	if (m == NULL)
		return;
	free(m->status);
	free(m->channel);
	free(m->message_id);
	free_address(&m->from);
	for (i = 0; i < m->n_reply_to; i++)
		free_address(&m->reply_to[i]);
	free(m->reply_to);
	for (i = 0; i < m->n_rcpt; i++)
		free_address(&m->rcpt[i].addr);
	free(m->rcpt);
	free(m->subject);
	free(m->body_text);
	free(m->body_html);
	for (i = 0; i < m->n_headers; i++) {
		free(m->headers[i].name);
		free(m->headers[i].value);
	}
	free(m->headers);
	for (i = 0; i < m->n_att; i++) {
		free(m->att[i].filename);
		free(m->att[i].content_type);
		free(m->att[i].content_id);
		free(m->att[i].data);
	}
	free(m->att);
	free_profile(&m->profile);
	memset(m, 0, sizeof(*m));
}

int
message_envelope_count(const struct Message *m)
{
	int i, n = 0;

	for (i = 0; i < m->n_rcpt; i++)
		if (m->rcpt[i].status == RS_PENDING || m->rcpt[i].status == RS_RETRYING)
			n++;
	return n;
}

bool
profile_resolve_secrets(struct Profile *p, const char *secrets_dir, const char *env_bindings, char *err,
						size_t errlen)
{
	struct SecretOwner o = {SO_PROFILE, p->name, secrets_dir, env_bindings};

	return secrets_resolve_field(&p->smtp.password, "profile.smtp.password", &o, err, errlen) &&
		   secrets_resolve_field(&p->smtp.oauth_token, "profile.smtp.oauth_token", &o, err, errlen) &&
		   secrets_resolve_field(&p->smtp.client_secret, "profile.smtp.client_secret", &o, err, errlen) &&
		   secrets_resolve_field(&p->graph.client_secret, "profile.graph.client_secret", &o, err, errlen);
}
