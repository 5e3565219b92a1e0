/*
 * fuzz_check.c - strict checks of the Processor's MIME output, shared by the fuzz targets.
 */
#include "fuzz.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "utf8.h"

void
fuzz_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "\nFUZZ PROPERTY BROKEN at %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

bool
fuzz_utf8_valid(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t k;

		if (s[i] == '\0')
			return false;
		if ((unsigned char) s[i] < 0x80) {
			i++;
			continue;
		}
		k = utf8_len((const unsigned char *) s + i);
		if (k == 0 || i + k > len)
			return false;
		i += k;
	}
	return true;
}

char *
fuzz_utf8_text(const uint8_t *data, size_t len, const char *drop)
{
	char *out = malloc(len + 1);
	size_t i = 0, n = 0;

	if (out == NULL)
		abort();
	while (i < len) {
		size_t k;
		char tmp[5] = {0};

		if (data[i] < 0x80) {
			if (data[i] != 0 && strchr(drop, data[i]) == NULL)
				out[n++] = (char) data[i];
			i++;
			continue;
		}
		/* utf8_len reads a NUL-terminated sequence: copy at most 4 bytes */
		memcpy(tmp, data + i, len - i < 4 ? len - i : 4);
		k = utf8_len((const unsigned char *) tmp);
		if (k == 0) {
			i++;
			continue;
		}
		memcpy(out + n, data + i, k);
		n += k;
		i += k;
	}
	out[n] = '\0';
	return out;
}

/* ---- small strict decoders -------------------------------------------------------------- */

static int
b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* b64_strict appends the decoding of s[0..len) to out; false unless it is canonical base64. */
static bool
b64_strict(const char *s, size_t len, struct Buf *out)
{
	size_t i;

	if (len % 4 != 0)
		return false;
	for (i = 0; i < len; i += 4) {
		int v[4], pad = 0, k;
		unsigned long w = 0;

		for (k = 0; k < 4; k++) {
			if (s[i + k] == '=' && i + 4 == len && k >= 2) {
				v[k] = 0;
				pad++;
			} else if (pad > 0 || (v[k] = b64_value(s[i + k])) < 0)
				return false;
			w = (w << 6) | (unsigned long) v[k];
		}
		if (!buf_putc(out, (char) (w >> 16)) || (pad < 2 && !buf_putc(out, (char) (w >> 8))) ||
			(pad < 1 && !buf_putc(out, (char) w)))
			return false;
	}
	return true;
}

static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* ---- the header section -------------------------------------------------------------------- */

/* header_value returns the unfolded value of the first field name (case-insensitive) after pos. */
static char *
header_value(const char *hdr, size_t hlen, const char *name, size_t *pos)
{
	size_t nlen = strlen(name), i = *pos;
	struct Buf v = BUF_INIT;

	while (i < hlen) {
		const char *line = hdr + i, *eol = strstr(line, "\r\n");
		size_t l = (size_t) (eol - line);

		i += l + 2;
		if (l > nlen && strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
			FUZZ_ASSERT(buf_append(&v, line + nlen + 1, l - nlen - 1), "oom");
			while (i < hlen && (hdr[i] == ' ' || hdr[i] == '\t')) {
				line = hdr + i;
				eol = strstr(line, "\r\n");
				l = (size_t) (eol - line);
				FUZZ_ASSERT(buf_append(&v, line, l), "oom");
				i += l + 2;
			}
			*pos = i;
			return buf_steal(&v);
		}
	}
	*pos = i;
	return NULL;
}

/*
 * is_encoded_word checks one =?UTF-8?B?...?= word of n characters and appends its text to out.
 */
static bool
decode_word(const char *w, size_t n, struct Buf *out)
{
	size_t before = out->len;

	if (n > 75 || n < 12 || strncmp(w, "=?UTF-8?B?", 10) != 0 || strncmp(w + n - 2, "?=", 2) != 0)
		return false;
	if (!b64_strict(w + 10, n - 12, out))
		return false;
	return fuzz_utf8_valid(out->data + before, out->len - before);
}

/*
 * check_unstructured: the value of a field written by mime_fold_unstructured decodes back to
 * text: either the text itself, or encoded words only (adjacent words are joined, the blanks
 * between them dropped, RFC 2047 section 6.2).
 */
static void
check_unstructured(const char *name, const char *value, const char *text)
{
	struct Buf dec = BUF_INIT;
	const char *p;

	FUZZ_ASSERT(value[0] == ' ' || value[0] == '\0', "%s: no blank after the colon", name);
	if (value[0] == ' ')
		value++;
	if (strncmp(value, "=?UTF-8?B?", 10) != 0) {
		FUZZ_ASSERT(strcmp(value, text) == 0, "%s: written %s, given %s", name, value, text);
		FUZZ_ASSERT(strstr(value, "=?") == NULL, "%s: plain text that reads as an encoded word", name);
		return;
	}
	for (p = value; *p;) {
		size_t n = strcspn(p, " \t");

		FUZZ_ASSERT(decode_word(p, n, &dec), "%s: bad encoded word %.*s", name, (int) n, p);
		p += n;
		p += strspn(p, " \t");
	}
	FUZZ_ASSERT(dec.data != NULL && strcmp(dec.data, text) == 0, "%s: decodes to %s, given %s", name,
				dec.data ? dec.data : "", text);
	buf_free(&dec);
}

/* check_address_words: encoded words outside <...> and "..." in an address field are valid. */
static void
check_address_words(const char *name, const char *value)
{
	const char *p = value;
	struct Buf dec = BUF_INIT;

	while (*p) {
		if (*p == '<') {
			const char *e = strchr(p, '>');

			FUZZ_ASSERT(e != NULL, "%s: unclosed <", name);
			p = e + 1;
		} else if (*p == '"') {
			for (p++; *p && *p != '"'; p++)
				if (*p == '\\' && p[1])
					p++;
			FUZZ_ASSERT(*p == '"', "%s: unclosed quoted string", name);
			p++;
		} else if (strncmp(p, "=?", 2) == 0) {
			size_t n = strcspn(p, " \t,");

			FUZZ_ASSERT(decode_word(p, n, &dec), "%s: bad encoded word %.*s", name, (int) n, p);
			p += n;
		} else
			p++;
	}
	buf_free(&dec);
}

static bool
message_has_8bit_address(const struct Message *m)
{
	const char *addrs[1024];
	int n = 0, i;

	addrs[n++] = m->from.address;
	for (i = 0; i < m->n_rcpt && n < 1000; i++)
		addrs[n++] = m->rcpt[i].addr.address;
	for (i = 0; i < m->n_reply_to && n < 1020; i++)
		addrs[n++] = m->reply_to[i].address;
	for (i = 0; i < n; i++) {
		const unsigned char *s;

		for (s = (const unsigned char *) addrs[i]; *s; s++)
			if (*s >= 0x80)
				return true;
	}
	return false;
}

static void
check_header(const char *hdr, size_t hlen, const struct Message *m)
{
	bool eight = message_has_8bit_address(m);
	size_t i = 0, pos;
	char *v;
	int k;

	FUZZ_ASSERT(hlen > 0 && hdr[0] != ' ' && hdr[0] != '\t', "the header starts with a blank");
	while (i < hlen) {
		const char *line = hdr + i, *eol = strstr(line, "\r\n");
		size_t l = (size_t) (eol - line), j;

		if (line[0] == ' ' || line[0] == '\t') {
			FUZZ_ASSERT(strspn(line, " \t") < l, "a header line holds blanks only");
		} else {
			const char *colon = memchr(line, ':', l);

			FUZZ_ASSERT(colon != NULL && colon > line, "a header line without a field name: %.*s", (int) l,
						line);
			for (j = 0; line + j < colon; j++)
				FUZZ_ASSERT(line[j] > 0x20 && line[j] < 0x7f, "a field name byte 0x%02x",
							(unsigned char) line[j]);
		}
		for (j = 0; j < l; j++)
			FUZZ_ASSERT(eight || (unsigned char) line[j] < 0x80, "an 8-bit header byte in %.*s", (int) l,
						line);
		i += l + 2;
	}
	if (m->subject) {
		pos = 0;
		v = header_value(hdr, hlen, "Subject", &pos);
		FUZZ_ASSERT(v != NULL, "no Subject");
		check_unstructured("Subject", v, m->subject);
		free(v);
	}
	/* custom fields, in order (a name may repeat) */
	pos = 0;
	for (k = 0; k < m->n_headers; k++) {
		size_t p2 = pos;

		v = header_value(hdr, hlen, m->headers[k].name, &p2);
		FUZZ_ASSERT(v != NULL, "header %s is missing", m->headers[k].name);
		check_unstructured(m->headers[k].name, v, m->headers[k].value);
		free(v);
		pos = p2;
	}
	for (k = 0; k < 4; k++) {
		static const char *const names[] = {"From", "To", "Cc", "Reply-To"};

		pos = 0;
		v = header_value(hdr, hlen, names[k], &pos);
		if (v)
			check_address_words(names[k], v);
		free(v);
	}
}

/* ---- the body ------------------------------------------------------------------------------- */

/* qp_decode decodes a quoted-printable part, checking its lines stay within 76 characters. */
static void
qp_decode(const char *s, size_t len, struct Buf *out)
{
	size_t i = 0, col = 0;

	while (i < len) {
		if (s[i] == '\r') {
			FUZZ_ASSERT(i + 1 < len && s[i + 1] == '\n', "bare CR in quoted-printable");
			FUZZ_ASSERT(col == 0 || (s[i - 1] != ' ' && s[i - 1] != '\t'), "a blank ends a QP line");
			FUZZ_ASSERT(buf_append(out, "\r\n", 2), "oom");
			i += 2;
			col = 0;
		} else if (s[i] == '=') {
			if (i + 2 < len && s[i + 1] == '\r' && s[i + 2] == '\n') {
				i += 3;
				col = 0;
				continue;
			}
			FUZZ_ASSERT(i + 2 < len + 0 && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0, "bad =XX");
			FUZZ_ASSERT(buf_putc(out, (char) (hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]))), "oom");
			i += 3;
			col += 3;
		} else {
			FUZZ_ASSERT((s[i] >= 33 && s[i] <= 126) || s[i] == ' ' || s[i] == '\t', "QP byte 0x%02x",
						(unsigned char) s[i]);
			FUZZ_ASSERT(buf_putc(out, s[i]), "oom");
			i++;
			col++;
		}
		FUZZ_ASSERT(col <= 76, "a QP line longer than 76");
	}
}

/* crlf_text is text with every newline (LF, CRLF, CR) written as CRLF, as mime_qp does. */
static void
crlf_text(const char *t, struct Buf *out)
{
	for (; *t; t++) {
		if (*t == '\r' || *t == '\n') {
			if (*t == '\r' && t[1] == '\n')
				t++;
			FUZZ_ASSERT(buf_append(out, "\r\n", 2), "oom");
		} else
			FUZZ_ASSERT(buf_putc(out, *t), "oom");
	}
}

/* check_text_part finds the text/SUBTYPE part and checks that it decodes back to text. */
static void
check_text_part(const char *msg, const char *subtype, const char *text)
{
	char marker[128];
	const char *start, *end;
	struct Buf dec = BUF_INIT, want = BUF_INIT;

	snprintf(marker, sizeof marker,
			 "Content-Type: text/%s; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n",
			 subtype);
	start = strstr(msg, marker);
	FUZZ_ASSERT(start != NULL, "no text/%s part", subtype);
	start += strlen(marker);
	end = strstr(start, "\r\n--=_pgrelay_");
	if (end == NULL)
		end = start + strlen(start);
	qp_decode(start, (size_t) (end - start), &dec);
	crlf_text(text, &want);
	/* a single-part message ends with the CRLF the message needs */
	if (dec.len == want.len + 2 && strncmp(dec.data + want.len, "\r\n", 2) == 0)
		dec.len -= 2;
	FUZZ_ASSERT(dec.len == want.len && (want.len == 0 || memcmp(dec.data, want.data, want.len) == 0),
				"text/%s decodes to something else than its body", subtype);
	buf_free(&dec);
	buf_free(&want);
}

static void
check_boundaries(const char *msg)
{
	const char *p = msg;

	/* the parameter of a multipart Content-Type (a display name may say boundary=" too) */
	while ((p = strstr(p, ";\r\n boundary=\"")) != NULL) {
		char b[128], open[140], close[140];
		const char *e;
		size_t n;

		p += 14;
		e = strchr(p, '"');
		FUZZ_ASSERT(e != NULL && (size_t) (e - p) < 100, "a boundary without its quote");
		n = (size_t) (e - p);
		memcpy(b, p, n);
		b[n] = '\0';
		snprintf(open, sizeof open, "\r\n--%s\r\n", b);
		snprintf(close, sizeof close, "\r\n--%s--\r\n", b);
		FUZZ_ASSERT(strstr(msg, open + 2) != NULL, "boundary %s never opens a part", b);
		FUZZ_ASSERT(strstr(msg, close) != NULL, "boundary %s is never closed", b);
		FUZZ_ASSERT(strstr(strstr(msg, close) + 1, close) == NULL, "boundary %s is closed twice", b);
	}
}

void
fuzz_check_mime(const struct Buf *msg, const struct Message *m)
{
	const char *d = msg->data, *hend;
	size_t i, col = 0;

	FUZZ_ASSERT(d != NULL && msg->len > 4, "empty message");
	FUZZ_ASSERT(strlen(d) == msg->len, "a NUL byte in the message");
	for (i = 0; i < msg->len; i++) {
		if (d[i] == '\r') {
			FUZZ_ASSERT(i + 1 < msg->len && d[i + 1] == '\n', "a bare CR at %zu", i);
			continue;
		}
		if (d[i] == '\n') {
			FUZZ_ASSERT(i > 0 && d[i - 1] == '\r', "a bare LF at %zu", i);
			col = 0;
			continue;
		}
		col++;
		FUZZ_ASSERT(col <= 998, "a line longer than 998 octets at %zu", i);
	}
	FUZZ_ASSERT(msg->len >= 2 && d[msg->len - 2] == '\r' && d[msg->len - 1] == '\n', "no CRLF at the end");
	hend = strstr(d, "\r\n\r\n");
	FUZZ_ASSERT(hend != NULL, "no end of the header");
	{
		char *hdr = strndup(d, (size_t) (hend - d) + 2);

		FUZZ_ASSERT(hdr != NULL, "oom");
		check_header(hdr, strlen(hdr), m);
		free(hdr);
	}
	check_boundaries(d);
	if (m->body_text)
		check_text_part(d, "plain", m->body_text);
	if (m->body_html)
		check_text_part(d, "html", m->body_html);
}

void
fuzz_dump(const char *target, const uint8_t *data, size_t len, const struct Buf *out, const char *expect_json)
{
	const char *dir = getenv("FUZZ_DUMP_DIR");
	char path[4096];
	unsigned long h = 5381;
	FILE *f;
	size_t i;

	if (dir == NULL || out->data == NULL)
		return;
	for (i = 0; i < len; i++)
		h = h * 33 + data[i];
	snprintf(path, sizeof path, "%s/%s-%016lx.eml", dir, target, h);
	if ((f = fopen(path, "wb")) != NULL) {
		fwrite(out->data, 1, out->len, f);
		fclose(f);
	}
	snprintf(path, sizeof path, "%s/%s-%016lx.json", dir, target, h);
	if (expect_json && (f = fopen(path, "wb")) != NULL) {
		fputs(expect_json, f);
		fclose(f);
	}
}
