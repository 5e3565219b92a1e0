/*
 * fuzz_header.c - libFuzzer target: the header encoders of mime_encode.c on their own.
 *
 * The first byte picks the encoder (free text, a mailbox, an RFC 2231 parameter) and the length of
 * the field name (so folding starts at every column); the rest is the text, valid UTF-8 without
 * the control characters message_parse() refuses. Every output must pass the line rules of
 * fuzz_check_mime() and decode back to exactly the text it was made of.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "fuzz.h"
#include "mime_encode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What message_parse() lets reach a header: no control character. */
static const char controls[] =
	"\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14"
	"\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f";

static int
hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* lines checks CRLF line ends, 998 octets, no line of blanks only, ASCII; returns the unfolding. */
static char *
lines(const struct Buf *b)
{
	struct Buf u = BUF_INIT;
	size_t i, col = 0, start = 0;

	FUZZ_ASSERT(b->len >= 2 && memcmp(b->data + b->len - 2, "\r\n", 2) == 0, "no CRLF at the end");
	for (i = 0; i < b->len; i++) {
		unsigned char c = (unsigned char) b->data[i];

		if (c == '\r') {
			FUZZ_ASSERT(b->data[i + 1] == '\n', "a bare CR");
			FUZZ_ASSERT(strspn(b->data + start, " \t") < i - start, "a line of blanks only");
			i++;
			col = 0;
			start = i + 1;
			continue;
		}
		FUZZ_ASSERT(c != '\n', "a bare LF");
		FUZZ_ASSERT((c >= 0x20 && c < 0x7f) || c == '\t', "header byte 0x%02x", c);
		FUZZ_ASSERT(++col <= 998, "a header line longer than 998 octets");
		FUZZ_ASSERT(buf_putc(&u, (char) c), "oom");
	}
	return buf_steal(&u);
}

/* words decodes a run of encoded words (RFC 2047, blanks between them dropped) into out. */
static void
words(const char *p, struct Buf *out)
{
	while (*p) {
		size_t n = strcspn(p, " "), k, len;
		char *word = strndup(p, n);
		const char *s;
		unsigned char *raw;
		size_t rlen;

		FUZZ_ASSERT(word != NULL, "oom");
		FUZZ_ASSERT(n <= 75 && n > 12 && strncmp(word, "=?UTF-8?B?", 10) == 0 &&
						strcmp(word + n - 2, "?=") == 0,
					"not an encoded word of at most 75 characters: %s", word);
		word[n - 2] = '\0';
		s = word + 10;
		len = strlen(s);
		FUZZ_ASSERT(len % 4 == 0, "base64 of a bad length: %s", word);
		for (k = 0; k < len; k++)
			FUZZ_ASSERT((s[k] >= 'A' && s[k] <= 'Z') || (s[k] >= 'a' && s[k] <= 'z') ||
							(s[k] >= '0' && s[k] <= '9') || s[k] == '+' || s[k] == '/' ||
							(s[k] == '=' && k >= len - 2),
						"not base64: %s", s);
		FUZZ_ASSERT(base64_decode(s, &raw, &rlen), "undecodable word %s", word);
		FUZZ_ASSERT(fuzz_utf8_valid((const char *) raw, rlen), "a word that is not whole UTF-8 characters");
		FUZZ_ASSERT(buf_append(out, raw, rlen), "oom");
		free(raw);
		free(word);
		p += n;
		p += strspn(p, " ");
	}
}

static void
check_unstructured(const char *name, const char *text)
{
	struct Buf b = BUF_INIT, dec = BUF_INIT;
	struct Fold f;
	char *u, *v;

	FUZZ_ASSERT(mime_fold_begin(&f, &b, name) && mime_fold_unstructured(&f, text) && mime_fold_end(&f),
				"oom");
	u = lines(&b);
	v = u + strlen(name) + 1;
	FUZZ_ASSERT(*v == ' ' || *v == '\0', "no blank after the colon");
	if (*v == ' ')
		v++;
	if (strncmp(v, "=?UTF-8?B?", 10) == 0) {
		words(v, &dec);
		FUZZ_ASSERT(dec.data && strcmp(dec.data, text) == 0, "decodes to '%s', given '%s'", dec.data, text);
	} else {
		FUZZ_ASSERT(strcmp(v, text) == 0, "written '%s', given '%s'", v, text);
		FUZZ_ASSERT(strstr(v, "=?") == NULL, "plain text that reads as an encoded word");
	}
	free(u);
	buf_free(&b);
	buf_free(&dec);
}

static void
check_mailbox(const char *name, const char *address)
{
	struct Buf b = BUF_INIT, dec = BUF_INIT, want = BUF_INIT;
	struct Fold f;
	char *u, *v, *lt;

	FUZZ_ASSERT(mime_fold_begin(&f, &b, "From") && mime_fold_mailbox(&f, name, address) && mime_fold_end(&f),
				"oom");
	u = lines(&b);
	v = u + 5;
	FUZZ_ASSERT(buf_printf(&want, "<%s>", address), "oom");
	FUZZ_ASSERT(strlen(v) >= want.len + 1 && strcmp(v + strlen(v) - want.len, want.data) == 0,
				"address lost: %s", v);
	lt = v + strlen(v) - want.len;
	*lt = '\0';
	v++; /* the blank after the colon */
	if (name == NULL || name[0] == '\0') {
		FUZZ_ASSERT(*v == '\0', "a display name out of nothing: %s", v);
	} else {
		FUZZ_ASSERT(lt > v && lt[-1] == ' ', "no blank before <");
		lt[-1] = '\0';
		if (strncmp(v, "=?UTF-8?B?", 10) == 0) {
			words(v, &dec);
		} else if (v[0] == '"') {
			char *p;

			for (p = v + 1; *p && *p != '"'; p++) {
				if (*p == '\\')
					p++;
				FUZZ_ASSERT(*p, "a quoted string ends in a backslash");
				FUZZ_ASSERT(buf_putc(&dec, *p), "oom");
			}
			FUZZ_ASSERT(p[0] == '"' && p[1] == '\0', "text after the quoted string: %s", p);
		} else {
			FUZZ_ASSERT(strpbrk(v, "()<>[]:;@\\,.\"") == NULL, "specials in a phrase: %s", v);
			FUZZ_ASSERT(buf_puts(&dec, v), "oom");
		}
		FUZZ_ASSERT(dec.data && strcmp(dec.data, name) == 0, "name decodes to '%s', given '%s'", dec.data,
					name);
	}
	free(u);
	buf_free(&b);
	buf_free(&dec);
	buf_free(&want);
}

static void
check_param(const char *value)
{
	struct Buf b = BUF_INIT, dec = BUF_INIT;
	struct Fold f;
	char *u, *p;
	int idx = 0;

	FUZZ_ASSERT(mime_fold_begin(&f, &b, "Content-Disposition") &&
					mime_fold_atom(&f, "attachment", 10, true) && mime_param(&f, "filename", value) &&
					mime_fold_end(&f),
				"oom");
	u = lines(&b);
	p = strstr(u, "attachment;");
	FUZZ_ASSERT(p != NULL, "no ; after the value");
	p += strlen("attachment;");
	while (*p) {
		char head[32];

		FUZZ_ASSERT(*p == ' ', "a parameter without its blank");
		p++;
		if (strncmp(p, "filename=\"", 10) == 0) {
			for (p += 10; *p && *p != '"'; p++) {
				if (*p == '\\')
					p++;
				FUZZ_ASSERT(buf_putc(&dec, *p), "oom");
			}
			FUZZ_ASSERT(*p == '"' && p[1] == '\0', "text after the quoted filename");
			break;
		}
		if (idx == 0 && strncmp(p, "filename*=UTF-8''", 17) == 0)
			p += 17;
		else {
			snprintf(head, sizeof head, "filename*%d*=%s", idx, idx == 0 ? "UTF-8''" : "");
			FUZZ_ASSERT(strncmp(p, head, strlen(head)) == 0, "piece %d is not %s: %s", idx, head, p);
			p += strlen(head);
		}
		for (; *p && *p != ';' && *p != ' '; p++) {
			if (*p == '%') {
				FUZZ_ASSERT(hexval(p[1]) >= 0 && hexval(p[2]) >= 0, "a broken %%XX");
				FUZZ_ASSERT(buf_putc(&dec, (char) (hexval(p[1]) * 16 + hexval(p[2]))), "oom");
				p += 2;
			} else {
				FUZZ_ASSERT(strchr("!#$&+-.^_`|~", *p) || (*p >= 'A' && *p <= 'Z') ||
								(*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'),
							"0x%02x unencoded in an extended value", (unsigned char) *p);
				FUZZ_ASSERT(buf_putc(&dec, *p), "oom");
			}
		}
		if (*p == ';')
			p++;
		idx++;
	}
	FUZZ_ASSERT(strcmp(dec.data ? dec.data : "", value) == 0, "filename decodes to '%s', given '%s'",
				dec.data, value);
	free(u);
	buf_free(&b);
	buf_free(&dec);
}

/* cut_chars ends s after max characters: message_parse() holds names to the notifier's limits. */
static void
cut_chars(char *s, size_t max)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char) *s & 0xC0) != 0x80 && n++ == max) {
			*s = '\0';
			return;
		}
}

/* fuzz_ascii: message_parse() lets non-ASCII addresses through for SMTPUTF8; they are written raw. */
static bool
fuzz_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char) *s >= 0x80)
			return false;
	return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[80] = "X-";
	char *text, *second;
	size_t cut;
	int pad;

	if (size < 1)
		return 0;
	pad = data[0] >> 2 & 63;
	memset(name + 2, 'a', (size_t) pad);
	name[2 + pad] = '\0';
	text = fuzz_utf8_text(data + 1, size - 1, controls);
	switch (data[0] & 3) {
	case 0:
	case 3:
		check_unstructured(name, text);
		break;
	case 1:
		/* display name, then the address after the first '\t' (an address holds no blank) */
		cut = strcspn(text, "\t");
		second = text[cut] ? text + cut + 1 : (char *) "ann@example.org";
		text[cut] = '\0';
		cut_chars(text, 256); /* a display name */
		if (strpbrk(second, " \t<>") == NULL && strchr(second, '@') != NULL && fuzz_ascii(second))
			check_mailbox(text, second);
		break;
	case 2:
		/* a file name of at most 255 characters reaches mime_param() as it is */
		cut_chars(text, 255);
		check_param(text);
		break;
	}
	free(text);
	return 0;
}
