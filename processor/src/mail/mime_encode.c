/*
 * mime_encode.c - quoted-printable, RFC 2047 words, header folding, RFC 2231 parameters, dates.
 */
#include "mime_encode.h"

#include <stdio.h>
#include <string.h>

#include "base64.h"

static const char hex_digits[] = "0123456789ABCDEF";

/* The bytes of one RFC 2047 "B" word around its base64: =?UTF-8?B? and ?= */
#define WORD_OVERHEAD 12
/* At most 45 bytes per word: 60 base64 characters, 72 with the overhead (limit 75). */
#define WORD_MAX_BYTES 45

/* qp_put appends one token (a byte or =XX) with a soft break first when the line would pass 76. */
static bool
qp_put(struct Buf *out, size_t *col, const char *tok, size_t n)
{
	/* 75 leaves room for the '=' of a soft line break: lines stay within 76. */
	if (*col + n > 75) {
		if (!buf_append(out, "=\r\n", 3))
			return false;
		*col = 0;
	}
	*col += n;
	return buf_append(out, tok, n);
}

bool
mime_qp(struct Buf *out, const char *text, size_t len)
{
	size_t i, col = 0;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char) text[i];
		bool line_end = i + 1 == len || text[i + 1] == '\n' || text[i + 1] == '\r';
		char tok[3];

		if (c == '\r' || c == '\n') {
			if (c == '\r' && i + 1 < len && text[i + 1] == '\n')
				i++;
			if (!buf_append(out, "\r\n", 2))
				return false;
			col = 0;
			continue;
		}
		/* Blanks are literal except at the end of a line, where transports may strip them. */
		if ((c >= 33 && c <= 126 && c != '=') || ((c == ' ' || c == '\t') && !line_end)) {
			tok[0] = (char) c;
			if (!qp_put(out, &col, tok, 1))
				return false;
			continue;
		}
		tok[0] = '=';
		tok[1] = hex_digits[c >> 4];
		tok[2] = hex_digits[c & 15];
		if (!qp_put(out, &col, tok, 3))
			return false;
	}
	return !out->oom;
}

/* mime_needs_encoding: text must be written as RFC 2047 words (non-ASCII, or "=?" inside). */
static bool
mime_needs_encoding(const char *text)
{
	const char *s;

	for (s = text; *s; s++)
		if ((unsigned char) *s >= 0x80)
			return true;
	/* Plain text that looks like an encoded word would be decoded by readers: encode it. */
	return strstr(text, "=?") != NULL;
}

bool
mime_fold_begin(struct Fold *f, struct Buf *out, const char *name)
{
	f->out = out;
	f->col = strlen(name) + 1;
	return buf_puts(out, name) && buf_putc(out, ':');
}

bool
mime_fold_atom(struct Fold *f, const char *text, size_t len, bool space)
{
	if (space) {
		/* Note that a fold is only useful after something was written on this line. */
		if (f->col + 1 + len > MIME_LINE && f->col > 1) {
			if (!buf_append(f->out, "\r\n", 2))
				return false;
			f->col = 0;
		}
		if (!buf_putc(f->out, ' '))
			return false;
		f->col++;
	}
	f->col += len;
	return buf_append(f->out, text, len);
}

bool
mime_fold_end(struct Fold *f)
{
	f->col = 0;
	return buf_append(f->out, "\r\n", 2);
}

/* utf8_cut returns the largest n <= max that does not end inside a UTF-8 sequence of s[0..len). */
static size_t
utf8_cut(const unsigned char *s, size_t len, size_t max)
{
	size_t n = len < max ? len : max;

	/* s[n] is the first byte of the next word: it must not be a continuation byte (10xxxxxx). */
	while (n > 0 && n < len && (s[n] & 0xC0) == 0x80)
		n--;
	return n > 0 ? n : (len < max ? len : max);
}

/*
 * mime_fold_words appends text as a sequence of =?UTF-8?B?...?= words, each at most 75
 * characters, never splitting a UTF-8 sequence, folding between words.
 */
static bool
mime_fold_words(struct Fold *f, const char *text)
{
	const unsigned char *s = (const unsigned char *) text;
	size_t len = strlen(text);
	struct Buf word = BUF_INIT;
	bool ok = true;

	do {
		/* Fill the current line if a useful word fits, else the word starts a new line. */
		size_t room = MIME_ENCODED_LINE > f->col + 1 + WORD_OVERHEAD
						  ? MIME_ENCODED_LINE - f->col - 1 - WORD_OVERHEAD
						  : 0;
		size_t max = room / 4 * 3, n;

		if (max < 6 || max > WORD_MAX_BYTES)
			max = WORD_MAX_BYTES;
		n = utf8_cut(s, len, max);
		buf_reset(&word);
		ok = buf_puts(&word, "=?UTF-8?B?") && base64_encode(&word, s, n, 0) && buf_puts(&word, "?=") &&
			 mime_fold_atom(f, word.data, word.len, true);
		s += n;
		len -= n;
	} while (ok && len > 0);
	buf_free(&word);
	return ok;
}

/*
 * plain_fits says whether text written as it is (folded at its blanks) keeps every line within
 * RFC 5322's 998 octets. A line holds a token, after whatever shorter ones fitted before it
 * within MIME_LINE (the first line after the field name), and then every blank that follows it:
 * a run of blanks cannot be folded, since a line may not consist of blanks alone.
 */
static bool
plain_fits(const struct Fold *f, const char *text)
{
	const char *p = text;
	size_t start = f->col + 1;

	for (;;) {
		size_t token = strcspn(p, " "), run, end;

		p += token;
		run = strspn(p, " ");
		p += run;
		end = start + token;
		if ((end > MIME_LINE ? end : MIME_LINE) + run > 998)
			return false;
		if (*p == '\0')
			return true;
		start = 1; /* the next token may start a folded line */
	}
}

bool
mime_fold_unstructured(struct Fold *f, const char *text)
{
	const char *p = text;

	/*
	 * What cannot be folded into lines of 998 octets is written as encoded words, which split; so
	 * is text that starts with a blank, which readers drop after the colon but a word keeps.
	 */
	if (mime_needs_encoding(text) || text[0] == ' ' || !plain_fits(f, text))
		return mime_fold_words(f, text);
	/*
	 * Each blank of the text is a place to fold; the text itself is kept byte for byte. The first
	 * token stays on the field's line, however long (plain_fits keeps it within 998 octets): a
	 * value that starts on a continuation line reads with a leading blank in some readers.
	 */
	for (;;) {
		size_t n = strcspn(p, " ");

		if (p == text) {
			if (!buf_putc(f->out, ' ') || !buf_append(f->out, p, n))
				return false;
			f->col += 1 + n;
		} else if (n == 0) {
			/* consecutive blanks: keep them, a line may not consist of blanks alone */
			if (!buf_putc(f->out, ' '))
				return false;
			f->col++;
		} else if (!mime_fold_atom(f, p, n, true))
			return false;
		if (p[n] == '\0')
			return true;
		p += n + 1;
	}
}

/* is_atext_phrase: the name can be written as a sequence of atoms (RFC 5322 3.2.3). */
static bool
is_atext_phrase(const char *s)
{
	static const char specials[] = "()<>[]:;@\\,.\"";

	if (*s == '\0' || *s == ' ' || s[strlen(s) - 1] == ' ')
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char) *s;

		if (c < 0x20 || c >= 0x7f || strchr(specials, c) != NULL || (c == ' ' && s[1] == ' '))
			return false;
	}
	return true;
}

/* quoted appends s as a quoted-string, escaping backslash and double quote. */
static bool
quoted(struct Buf *b, const char *s)
{
	if (!buf_putc(b, '"'))
		return false;
	for (; *s; s++)
		if ((*s == '"' || *s == '\\') ? !buf_putc(b, '\\') || !buf_putc(b, *s) : !buf_putc(b, *s))
			return false;
	return buf_putc(b, '"');
}

bool
mime_fold_mailbox(struct Fold *f, const char *name, const char *address)
{
	struct Buf tmp = BUF_INIT;
	bool ok;

	if (name != NULL && name[0] != '\0') {
		if (mime_needs_encoding(name))
			ok = mime_fold_words(f, name);
		else if (is_atext_phrase(name))
			ok = mime_fold_atom(f, name, strlen(name), true);
		else
			ok = quoted(&tmp, name) && mime_fold_atom(f, tmp.data, tmp.len, true);
		buf_reset(&tmp);
		ok = ok && buf_printf(&tmp, "<%s>", address) && mime_fold_atom(f, tmp.data, tmp.len, true);
	} else
		ok = buf_printf(&tmp, "<%s>", address) && mime_fold_atom(f, tmp.data, tmp.len, true);
	buf_free(&tmp);
	return ok;
}

/* is_attr_char: may appear unencoded in an RFC 2231 extended value. */
static bool
is_attr_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		   (c != 0 && strchr("!#$&+-.^_`|~", c) != NULL);
}

/* param_line puts one parameter piece on a line of its own (" piece"). */
static bool
param_line(struct Fold *f, const struct Buf *piece)
{
	if (!buf_append(f->out, "\r\n", 2))
		return false;
	f->col = 0;
	return mime_fold_atom(f, piece->data, piece->len, true);
}

/* pct_encode appends value with every byte but attr-char written as %XX (RFC 2231). */
static bool
pct_encode(struct Buf *enc, const char *value)
{
	const unsigned char *s;

	for (s = (const unsigned char *) value; *s; s++)
		if (!(is_attr_char(*s) ? buf_putc(enc, (char) *s)
							   : buf_printf(enc, "%%%c%c", hex_digits[*s >> 4], hex_digits[*s & 15])))
			return false;
	return true;
}

/*
 * param_2231 appends attr as an RFC 2231 extended value. Long values are split into numbered
 * pieces of at most 60 characters (attr*0*=UTF-8''..; attr*1*=..), never inside a %XX triplet.
 */
static bool
param_2231(struct Fold *f, const char *attr, const char *value)
{
	struct Buf enc = BUF_INIT, piece = BUF_INIT;
	size_t off = 0;
	int idx = 0;
	bool ok = pct_encode(&enc, value);

	while (ok && off < enc.len) {
		size_t n = enc.len - off > 60 ? 60 : enc.len - off;
		bool single = off == 0 && n == enc.len, last;

		if (off + n < enc.len && enc.data[off + n - 1] == '%')
			n -= 1;
		else if (off + n < enc.len && enc.data[off + n - 2] == '%')
			n -= 2;
		last = off + n == enc.len;
		buf_reset(&piece);
		if (single)
			ok = buf_printf(&piece, "%s*=UTF-8''", attr);
		else
			ok = buf_printf(&piece, "%s*%d*=%s", attr, idx, idx == 0 ? "UTF-8''" : "");
		ok = ok && buf_append(&piece, enc.data + off, n) && (last || buf_putc(&piece, ';')) &&
			 param_line(f, &piece);
		off += n;
		idx++;
	}
	buf_free(&enc);
	buf_free(&piece);
	return ok;
}

bool
mime_param(struct Fold *f, const char *attr, const char *value)
{
	struct Buf piece = BUF_INIT;
	bool ok;

	if (!buf_putc(f->out, ';'))
		return false;
	f->col++;
	if (mime_needs_encoding(value))
		return param_2231(f, attr, value);
	ok = buf_printf(&piece, "%s=", attr) && quoted(&piece, value) && param_line(f, &piece);
	buf_free(&piece);
	return ok;
}

bool
mime_date(struct Buf *out, time_t t)
{
	static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
	static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
										 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL)
		return false;
	return buf_printf(out, "%s, %d %s %04d %02d:%02d:%02d +0000", days[tm.tm_wday], tm.tm_mday,
					  months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}
