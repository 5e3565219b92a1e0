/*
 * base64.c - RFC 4648 base64 encoding (with optional MIME line breaks) and lenient decoding.
 */
#include "base64.h"

#include <stdlib.h>
#include <string.h>

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* b64_value maps a character to its 6-bit value, or -1 when it is not in the alphabet. */
static int
b64_value(unsigned char c)
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

bool
base64_encode(struct Buf *out, const void *data, size_t len, size_t line_len)
{
	const unsigned char *p = data;
	size_t i, col = 0;
	char q[4];

	for (i = 0; i < len; i += 3) {
		unsigned long v = (unsigned long) p[i] << 16;
		size_t n = len - i < 3 ? len - i : 3;

		if (n > 1)
			v |= (unsigned long) p[i + 1] << 8;
		if (n > 2)
			v |= p[i + 2];
		q[0] = b64_alphabet[(v >> 18) & 63];
		q[1] = b64_alphabet[(v >> 12) & 63];
		q[2] = n > 1 ? b64_alphabet[(v >> 6) & 63] : '=';
		q[3] = n > 2 ? b64_alphabet[v & 63] : '=';
		/* Note that line_len is a multiple of 4 in practice, so a quantum never straddles lines. */
		if (line_len > 0 && col + 4 > line_len) {
			if (!buf_append(out, "\r\n", 2))
				return false;
			col = 0;
		}
		if (!buf_append(out, q, 4))
			return false;
		col += 4;
	}
	return !out->oom;
}

bool
base64_decode(const char *text, unsigned char **out, size_t *outlen)
{
	size_t cap = strlen(text) / 4 * 3 + 3, n = 0;
	unsigned char *res = malloc(cap);
	unsigned long acc = 0;
	int bits = 0, pad = 0;
	const unsigned char *s;

	if (res == NULL)
		return false;
	for (s = (const unsigned char *) text; *s; s++) {
		int v;

		if (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
			continue;
		if (*s == '=') {
			pad++;
			continue;
		}
		v = b64_value(*s);
		if (v < 0 || pad > 0) /* foreign character, or data after padding */
			goto fail;
		acc = (acc << 6) | (unsigned long) v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			res[n++] = (unsigned char) ((acc >> bits) & 0xff);
		}
	}
	/* 6 leftover bits cannot encode a byte; more than two '=' is never valid. */
	if (bits >= 6 || pad > 2)
		goto fail;
	*out = res;
	*outlen = n;
	return true;
fail:
	free(res);
	return false;
}
