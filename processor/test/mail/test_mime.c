/*
 * test_mime.c - the MIME encoders (table-driven) and the structure mime_build() produces.
 *
 * Encoded output is decoded back here (quoted-printable, RFC 2047 words) and compared with the
 * input; the Python SMTP tests parse whole messages back with the `email` package.
 */
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "mime.h"
#include "mime_encode.h"
#include "unit.h"

/* qp_decode reverses mime_qp: soft breaks vanish, =XX becomes the byte, CRLF stays. */
static char *
qp_decode(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;

	while (*s) {
		if (s[0] == '=' && s[1] == '\r' && s[2] == '\n')
			s += 3;
		else if (s[0] == '=') {
			char hex[3] = {s[1], s[2], 0};

			*o++ = (char) strtol(hex, NULL, 16);
			s += 3;
		} else
			*o++ = *s++;
	}
	*o = '\0';
	return out;
}

/* max_line_len returns the longest line of s (CRLF separated) and whether a bare CR/LF exists. */
static size_t
max_line_len(const char *s, bool *bare)
{
	size_t max = 0, cur = 0;

	*bare = false;
	for (; *s; s++) {
		if (s[0] == '\r' && s[1] == '\n') {
			max = cur > max ? cur : max;
			cur = 0;
			s++;
		} else if (*s == '\r' || *s == '\n')
			*bare = true;
		else
			cur++;
	}
	return cur > max ? cur : max;
}

static void
test_base64(void)
{
	static const struct {
		const char *in, *out;
	} rows[] = {{"", ""},
				{"f", "Zg=="},
				{"fo", "Zm8="},
				{"foo", "Zm9v"},
				{"foob", "Zm9vYg=="},
				{"fooba", "Zm9vYmE="},
				{"foobar", "Zm9vYmFy"}};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct Buf b = BUF_INIT;
		unsigned char *dec;
		size_t n;

		CHECK(base64_encode(&b, rows[i].in, strlen(rows[i].in), 76));
		CHECK_STR(b.data ? b.data : "", rows[i].out);
		CHECK(base64_decode(rows[i].out, &dec, &n));
		CHECK(n == strlen(rows[i].in) && memcmp(dec, rows[i].in, n) == 0);
		free(dec);
		buf_free(&b);
	}
	{
		/* MIME line breaks every 76 characters, and decoding skips them */
		unsigned char data[200], *dec;
		struct Buf b = BUF_INIT;
		bool bare;
		size_t n;

		for (n = 0; n < sizeof(data); n++)
			data[n] = (unsigned char) (n * 7);
		CHECK(base64_encode(&b, data, sizeof(data), 76));
		CHECK(max_line_len(b.data, &bare) == 76 && !bare);
		CHECK(base64_decode(b.data, &dec, &n) && n == sizeof(data) && memcmp(dec, data, n) == 0);
		free(dec);
		buf_free(&b);
	}
	{
		static const char *const bad[] = {"Zm9v!", "Zg==Zg==", "Z", "Zm9vY===", "Zm9v\x80"};
		unsigned char *dec;
		size_t n;

		for (n = 0; n < sizeof(bad) / sizeof(bad[0]); n++) {
			size_t len;

			CHECK(!base64_decode(bad[n], &dec, &len));
		}
	}
}

static void
test_qp(void)
{
	static const struct {
		const char *in, *out;
	} rows[] = {
		{"hello", "hello"},
		{"a=b", "a=3Db"},
		{"line1\nline2", "line1\r\nline2"},
		{"line1\r\nline2\rline3", "line1\r\nline2\r\nline3"},
		{"trailing space \nx", "trailing space=20\r\nx"},
		{"tab\t", "tab=09"},
		{"caf\xc3\xa9", "caf=C3=A9"},
		{".dot", ".dot"},
		{"", ""},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct Buf b = BUF_INIT;

		CHECK(mime_qp(&b, rows[i].in, strlen(rows[i].in)));
		CHECK_STR(b.data ? b.data : "", rows[i].out);
		buf_free(&b);
	}
}

/* Long lines get soft breaks at 76 and decode back to the input. */
static void
test_qp_long_lines(void)
{
	static const char *const rows[] = {
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
		"words and spaces                                                                          "
		"                      end",
		"x===================================================================================",
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct Buf b = BUF_INIT;
		char *dec;
		bool bare;

		CHECK(mime_qp(&b, rows[i], strlen(rows[i])));
		CHECK(max_line_len(b.data, &bare) <= 76 && !bare);
		dec = qp_decode(b.data);
		CHECK_STR(dec, rows[i]);
		free(dec);
		buf_free(&b);
	}
}

/* decode_words concatenates the payloads of the =?UTF-8?B?..?= words in a header field. */
static char *
decode_words(const char *field, bool *word_ok)
{
	struct Buf out = BUF_INIT;
	const char *p = field;

	*word_ok = true;
	while ((p = strstr(p, "=?UTF-8?B?")) != NULL) {
		const char *end = strstr(p + 10, "?=");
		char b64[128];
		unsigned char *dec;
		size_t n, wlen = (size_t) (end - p) + 2;

		if (wlen > 75)
			*word_ok = false;
		snprintf(b64, sizeof(b64), "%.*s", (int) (end - p - 10), p + 10);
		if (!base64_decode(b64, &dec, &n))
			abort();
		/* each word must hold whole UTF-8 characters: no leading continuation byte */
		if (n > 0 && (dec[0] & 0xC0) == 0x80)
			*word_ok = false;
		if (!buf_append(&out, dec, n))
			abort();
		free(dec);
		p = end + 2;
	}
	return buf_steal(&out);
}

static void
test_subject_encoding(void)
{
	static const struct {
		const char *subject;
		bool encoded;
	} rows[] = {
		{"Welcome, Ann", false},
		{"Gr\xc3\xbc\xc3\x9f"
		 "e aus K\xc3\xb6ln",
		 true},
		{"looks =?like?= a word", true},
		{"  indented", true},
		{"trailing  ", false},
		{"\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
		 "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
		 "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
		 "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
		 " and \xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
		 "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80",
		 true},
		{"A very long plain subject line that certainly has to be folded somewhere because it "
		 "is longer than seventy-eight characters",
		 false},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct Buf b = BUF_INIT;
		struct Fold f;
		bool bare, words_ok;
		char *dec;

		CHECK(mime_fold_begin(&f, &b, "Subject") && mime_fold_unstructured(&f, rows[i].subject) &&
			  mime_fold_end(&f));
		CHECK(max_line_len(b.data, &bare) <= (rows[i].encoded ? 76 : 78) && !bare);
		CHECK((strstr(b.data, "=?UTF-8?B?") != NULL) == rows[i].encoded);
		if (rows[i].encoded) {
			dec = decode_words(b.data, &words_ok);
			CHECK(words_ok);
			CHECK_STR(dec, rows[i].subject);
			free(dec);
		} else {
			/* unfolding (removing CRLF) gives the text back */
			struct Buf u = BUF_INIT;
			const char *s;

			for (s = b.data + 9; *s; s++)
				if (*s != '\r' && *s != '\n' && !buf_putc(&u, *s))
					abort();
			CHECK_STR(u.data, rows[i].subject);
			buf_free(&u);
		}
		buf_free(&b);
	}
}

/*
 * A run of blanks cannot be folded (a line may not hold blanks alone): text whose runs of blanks
 * would make a line over 998 octets is written as encoded words, which can be split anywhere.
 */
static void
test_long_runs_of_blanks(void)
{
	static const struct {
		const char *name;
		size_t before, blanks, after;
		bool encoded;
	} rows[] = {
		{"Subject", 1, 995, 1, true},   /* "a", 995 blanks, "b": 1,005 octets on one line */
		{"Subject", 1, 900, 1, false},  /* fits */
		{"X-Note", 60, 930, 1, true},   /* the blanks follow a token on the first line */
		{"X-Note", 5, 600, 600, false}, /* the long token starts a folded line of its own */
		{"X-Note", 0, 997, 0, true},    /* blanks only */
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct Buf b = BUF_INIT, text = BUF_INIT;
		struct Fold f;
		bool bare, words_ok;
		size_t k;

		for (k = 0; k < rows[i].before; k++)
			CHECK(buf_putc(&text, 'a'));
		for (k = 0; k < rows[i].blanks; k++)
			CHECK(buf_putc(&text, ' '));
		for (k = 0; k < rows[i].after; k++)
			CHECK(buf_putc(&text, 'b'));
		CHECK(mime_fold_begin(&f, &b, rows[i].name) && mime_fold_unstructured(&f, text.data) &&
			  mime_fold_end(&f));
		CHECK(max_line_len(b.data, &bare) <= 998 && !bare);
		CHECK((strstr(b.data, "=?UTF-8?B?") != NULL) == rows[i].encoded);
		if (rows[i].encoded) {
			char *dec = decode_words(b.data, &words_ok);

			CHECK(words_ok);
			CHECK_STR(dec, text.data);
			free(dec);
		}
		buf_free(&b);
		buf_free(&text);
	}
}

/* However long its first word, a plain value starts on the line of its field name. */
static void
test_value_starts_on_the_field_line(void)
{
	struct Buf b = BUF_INIT, text = BUF_INIT;
	struct Fold f;
	bool bare;
	int k;

	for (k = 0; k < 120; k++)
		CHECK(buf_putc(&text, 'x'));
	CHECK(buf_puts(&text, " and more"));
	CHECK(mime_fold_begin(&f, &b, "Subject") && mime_fold_unstructured(&f, text.data) && mime_fold_end(&f));
	CHECK(strncmp(b.data, "Subject: xxx", 12) == 0 && max_line_len(b.data, &bare) == 9 + 120 && !bare);
	buf_free(&b);
	buf_free(&text);
}

static void
test_mailbox(void)
{
	static const struct {
		const char *name, *addr, *want;
	} rows[] = {
		{NULL, "a@example.org", "To: <a@example.org>\r\n"},
		{"", "a@example.org", "To: <a@example.org>\r\n"},
		{"Ann Example", "a@example.org", "To: Ann Example <a@example.org>\r\n"},
		{"Example, Ann", "a@example.org", "To: \"Example, Ann\" <a@example.org>\r\n"},
		{"Ann \"Q\" O\\Brien", "a@x.org", "To: \"Ann \\\"Q\\\" O\\\\Brien\" <a@x.org>\r\n"},
		{"J. Doe", "j@x.org", "To: \"J. Doe\" <j@x.org>\r\n"},
		{"J\xc3\xb6rg", "j@x.org", "To: =?UTF-8?B?SsO2cmc=?= <j@x.org>\r\n"},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct Buf b = BUF_INIT;
		struct Fold f;

		CHECK(mime_fold_begin(&f, &b, "To") && mime_fold_mailbox(&f, rows[i].name, rows[i].addr) &&
			  mime_fold_end(&f));
		CHECK_STR(b.data, rows[i].want);
		buf_free(&b);
	}
}

static void
test_params(void)
{
	static const struct {
		const char *value, *want;
	} rows[] = {
		{"terms.pdf", "X: a;\r\n filename=\"terms.pdf\"\r\n"},
		{"say \"hi\".txt", "X: a;\r\n filename=\"say \\\"hi\\\".txt\"\r\n"},
		{"\xe2\x82\xac.pdf", "X: a;\r\n filename*=UTF-8''%E2%82%AC.pdf\r\n"},
		{"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		 ".txt",
		 "X: a;\r\n filename*0*=UTF-8''%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3"
		 "%A9;\r\n filename*1*=%C3%A9.txt\r\n"},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct Buf b = BUF_INIT;
		struct Fold f;

		CHECK(mime_fold_begin(&f, &b, "X") && mime_fold_atom(&f, "a", 1, true) &&
			  mime_param(&f, "filename", rows[i].value) && mime_fold_end(&f));
		CHECK_STR(b.data, rows[i].want);
		buf_free(&b);
	}
}

static void
test_date(void)
{
	static const struct {
		time_t t;
		const char *want;
	} rows[] = {{0, "Thu, 1 Jan 1970 00:00:00 +0000"}, {1796012993, "Mon, 30 Nov 2026 04:29:53 +0000"}};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct Buf b = BUF_INIT;

		CHECK(mime_date(&b, rows[i].t));
		CHECK_STR(b.data, rows[i].want);
		buf_free(&b);
	}
}

/* Fixtures for mime_build. */
static struct Recipient rcpts[] = {
	{1, RCPT_TO, {"ann@example.org", "Ann \xc3\x84xample"}, RS_PENDING},
	{2, RCPT_CC, {"bob@example.org", NULL}, RS_SENT},
	{3, RCPT_BCC, {"secret-audit@example.com", NULL}, RS_PENDING},
};
static struct Header hdrs[] = {{"X-Campaign", "welcome"}};
static unsigned char png[] = {0x89, 'P', 'N', 'G', 0, 1, 2, 3};
static struct Attachment atts[] = {
	{"logo.png", "image/png", "logo@example.com", png, sizeof(png)},
	{"R\xc3\xa9sum\xc3\xa9.pdf", "application/pdf", NULL, png, sizeof(png)},
};

static void
fixture(struct Message *m, const char *text, const char *html, int n_att)
{
	memset(m, 0, sizeof(*m));
	m->message_id = "<42.abc@example.com>";
	m->from.address = "noreply@example.com";
	m->from.name = "Example App";
	m->rcpt = rcpts;
	m->n_rcpt = 3;
	m->subject = "Gr\xc3\xbc\xc3\x9f"
				 "e";
	m->body_text = (char *) text;
	m->body_html = (char *) html;
	m->headers = hdrs;
	m->n_headers = 1;
	m->att = atts;
	m->n_att = n_att;
}

/* order_of returns the positions of needles in hay, -1 for a missing one. */
static bool
in_order(const char *hay, const char *const *needles, size_t n)
{
	const char *p = hay;
	size_t i;

	for (i = 0; i < n; i++) {
		p = strstr(p, needles[i]);
		if (p == NULL) {
			fprintf(stderr, "  missing or out of order: %s\n", needles[i]);
			return false;
		}
		p += strlen(needles[i]);
	}
	return true;
}

static void
test_build_structures(void)
{
	static const char *const text_only[] = {"Content-Type: text/plain; charset=utf-8",
											"quoted-printable\r\n\r\nHello"};
	static const char *const html_only[] = {"Content-Type: text/html; charset=utf-8", "<p>Hi"};
	static const char *const alternative[] = {"Content-Type: multipart/alternative;",
											  "--=_pgrelay_00000000deadbeef_1\r\n",
											  "text/plain",
											  "Hello",
											  "--=_pgrelay_00000000deadbeef_1\r\n",
											  "text/html",
											  "<p>Hi",
											  "--=_pgrelay_00000000deadbeef_1--\r\n"};
	static const char *const everything[] = {
		"Content-Type: multipart/mixed;",
		"boundary=\"=_pgrelay_00000000deadbeef_1\"",
		"--=_pgrelay_00000000deadbeef_1\r\n",
		"Content-Type: multipart/alternative;",
		"--=_pgrelay_00000000deadbeef_2\r\n",
		"text/plain",
		"--=_pgrelay_00000000deadbeef_2\r\n",
		"multipart/related; type=\"text/html\"",
		"--=_pgrelay_00000000deadbeef_3\r\n",
		"text/html",
		"<p>Hi",
		"--=_pgrelay_00000000deadbeef_3\r\n",
		"Content-Type: image/png;\r\n name=\"logo.png\"",
		"Content-Disposition: inline;\r\n filename=\"logo.png\"",
		"Content-ID: <logo@example.com>",
		"base64\r\n\r\niVBORwABAgM=",
		"--=_pgrelay_00000000deadbeef_3--\r\n",
		"--=_pgrelay_00000000deadbeef_2--\r\n",
		"--=_pgrelay_00000000deadbeef_1\r\n",
		"Content-Type: application/pdf;\r\n name*=UTF-8''R%C3%A9sum%C3%A9.pdf",
		"Content-Disposition: attachment;\r\n filename*=UTF-8''R%C3%A9sum%C3%A9.pdf",
		"--=_pgrelay_00000000deadbeef_1--\r\n"};
	static const char *const text_with_inline[] = {"multipart/mixed", "text/plain",
												   "Content-Disposition: inline", "Content-ID: <logo"};
	static const struct {
		const char *text, *html;
		int n_att;
		const char *const *want;
		size_t n_want;
	} rows[] = {
		{"Hello", NULL, 0, text_only, 2},          {NULL, "<p>Hi</p>", 0, html_only, 2},
		{"Hello", "<p>Hi</p>", 0, alternative, 8}, {"Hello", "<p>Hi</p>", 2, everything, 22},
		{"Hello", NULL, 1, text_with_inline, 4},
	};
	struct MimeOptions o = {1796012993, 0xdeadbeefULL};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct Message m;
		struct Buf b = BUF_INIT;
		char err[128];
		bool bare;
		const char *body;

		fixture(&m, rows[i].text, rows[i].html, rows[i].n_att);
		CHECK(mime_build(&m, &o, &b, err, sizeof(err)));
		body = strstr(b.data, "\r\n\r\n");
		CHECK(max_line_len(b.data, &bare) <= 78 && !bare);
		CHECK(in_order(b.data, rows[i].want, rows[i].n_want));
		/* the top header: never Bcc, always the generated fields in order */
		{
			static const char *const top[] = {"Date: Mon, 30 Nov 2026 04:29:53 +0000\r\n",
											  "From: Example App <noreply@example.com>\r\n",
											  "To: =?UTF-8?B?QW5uIMOEeGFtcGxl?= <ann@example.org>\r\n",
											  "Cc: <bob@example.org>\r\n",
											  "Subject: =?UTF-8?B?R3LDvMOfZQ==?=\r\n",
											  "Message-ID: <42.abc@example.com>\r\n",
											  "MIME-Version: 1.0\r\n",
											  "X-Campaign: welcome\r\n",
											  "Content-Type: "};

			CHECK(in_order(b.data, top, 9));
		}
		CHECK(strstr(b.data, "secret-audit") == NULL);
		CHECK(strstr(b.data, "Bcc") == NULL);
		CHECK(body != NULL && strstr(b.data, "Content-Type: ") < body);
		buf_free(&b);
	}
}

/* Only Bcc recipients: To: gets the undisclosed-recipients group; same input, same bytes. */
static void
test_build_bcc_only_and_pure(void)
{
	struct Recipient only_bcc[] = {{9, RCPT_BCC, {"x@example.org", NULL}, RS_PENDING}};
	struct MimeOptions o = {0, 1};
	struct Buf a = BUF_INIT, b = BUF_INIT;
	struct Message m;
	char err[128];

	fixture(&m, "t", NULL, 0);
	m.rcpt = only_bcc;
	m.n_rcpt = 1;
	m.subject = NULL;
	CHECK(mime_build(&m, &o, &a, err, sizeof(err)) && mime_build(&m, &o, &b, err, sizeof(err)));
	CHECK(strstr(a.data, "To: undisclosed-recipients:;\r\n") != NULL);
	CHECK(strstr(a.data, "Subject:") == NULL);
	CHECK(strstr(a.data, "x@example.org") == NULL);
	CHECK_STR(a.data, b.data);
	buf_free(&a);
	buf_free(&b);
	CHECK(mime_boundary_seed() != mime_boundary_seed());
}

int
main(void)
{
	RUN(test_base64);
	RUN(test_qp);
	RUN(test_qp_long_lines);
	RUN(test_subject_encoding);
	RUN(test_long_runs_of_blanks);
	RUN(test_value_starts_on_the_field_line);
	RUN(test_mailbox);
	RUN(test_params);
	RUN(test_date);
	RUN(test_build_structures);
	RUN(test_build_bcc_only_and_pure);
	return UNIT_DONE();
}
