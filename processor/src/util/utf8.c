/*
 * utf8.c - make outside text valid, bounded UTF-8 before it reaches a log line, JSON or the
 * database (which rejects invalid UTF-8 with SQLSTATE 22021, so a hostile byte could otherwise keep
 * an outcome from ever being recorded).
 */
#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* U+FFFD, written in place of every byte that does not start a valid UTF-8 sequence. */
static const char replacement[] = "\xef\xbf\xbd";

size_t
utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/*
 * seq_len is the length of the valid sequence at p within the left bytes there, or 0 when p
 * starts none (a NUL byte, a bad byte, or a sequence the end cuts off). utf8_len reads at most the
 * n bytes its lead byte announces, so it is only called when they are all there.
 */
static size_t
seq_len(const unsigned char *p, size_t left)
{
	size_t n = *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : 2;

	if (*p == '\0')
		return 0;
	if (*p < 0x80)
		return 1;
	return n <= left && utf8_len(p) == n ? n : 0;
}

size_t
utf8_prefix(const char *s, size_t max)
{
	size_t n = strnlen(s, max);

	/* s[n] is the first byte left out: a continuation byte there means n is inside a character */
	if (n == max)
		while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80)
			n--;
	return n;
}

void
utf8_trim_cut(char *s)
{
	size_t n = strlen(s), lead = n, want;

	while (lead > 0 && n - lead < 3 && ((unsigned char) s[lead - 1] & 0xc0) == 0x80)
		lead--;
	if (lead == 0 || (unsigned char) s[lead - 1] < 0xc0)
		return;
	lead--;
	want = (unsigned char) s[lead] >= 0xf0 ? 4 : (unsigned char) s[lead] >= 0xe0 ? 3 : 2;
	if (n - lead < want)
		s[lead] = '\0';
}

void
utf8_snprintf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	utf8_trim_cut(buf);
}

void
utf8_no_controls(char *s)
{
	for (; s != NULL && *s; s++)
		if ((unsigned char) *s < 0x20 || *s == 0x7f)
			*s = '?';
}

bool
utf8_clean(struct Buf *out, const char *s, size_t len, size_t max)
{
	const unsigned char *p = (const unsigned char *) s;
	size_t used = 0, left = s ? len : 0;

	while (left > 0) {
		size_t n = seq_len(p, left);
		const char *piece = n ? (const char *) p : replacement;
		size_t plen = n ? n : 3;

		if (used + plen > max) {
			buf_puts(out, "...");
			break;
		}
		buf_append(out, piece, plen);
		used += plen;
		p += n ? n : 1;
		left -= n ? n : 1;
	}
	return !out->oom;
}

bool
utf8_clean_line(struct Buf *out, const char *s, size_t len, size_t max)
{
	size_t start = out->len, i;

	if (!utf8_clean(out, s, len, max))
		return false;
	for (i = start; i < out->len; i++)
		if (out->data[i] == '\r' || out->data[i] == '\n' || out->data[i] == '\t')
			out->data[i] = ' ';
	return true;
}
