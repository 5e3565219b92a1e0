/*
 * buf.c - growable NUL-terminated byte buffer.
 */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* buf_reserve makes room for extra more bytes plus the NUL. */
static bool
buf_reserve(struct Buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (b->oom)
		return false;
	if (extra > ((size_t) -1) / 2 - b->len) {
		b->oom = true;
		return false;
	}
	need = b->len + extra + 1;
	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	p = realloc(b->data, cap);
	if (p == NULL) {
		b->oom = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

bool
buf_append(struct Buf *b, const void *data, size_t len)
{
	if (!buf_reserve(b, len))
		return false;
	if (len > 0)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return true;
}

bool
buf_puts(struct Buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

bool
buf_putc(struct Buf *b, char c)
{
	return buf_append(b, &c, 1);
}

bool
buf_vprintf(struct Buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0 || !buf_reserve(b, (size_t) n))
		return false;
	vsnprintf(b->data + b->len, (size_t) n + 1, fmt, ap);
	b->len += (size_t) n;
	return true;
}

bool
buf_printf(struct Buf *b, const char *fmt, ...)
{
	va_list ap;
	bool ok;

	va_start(ap, fmt);
	ok = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return ok;
}

void
buf_reset(struct Buf *b)
{
	b->len = 0;
	b->oom = false;
	if (b->data)
		b->data[0] = '\0';
}

char *
buf_steal(struct Buf *b)
{
	char *p = b->data;

	if (p == NULL)
		p = strdup("");
	b->data = NULL;
	b->len = b->cap = 0;
	b->oom = false;
	return p;
}

void
buf_free(struct Buf *b)
{
	if (b == NULL)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->oom = false;
}

bool
buf_redact(struct Buf *s, const char *const *secrets, int n)
{
	struct Buf out = BUF_INIT;
	int i;

	for (i = 0; i < n; i++) {
		const char *sec = secrets[i], *p, *hit;

		if (sec == NULL || sec[0] == '\0' || s->data == NULL || strstr(s->data, sec) == NULL)
			continue;
		buf_reset(&out);
		for (p = s->data; (hit = strstr(p, sec)) != NULL; p = hit + strlen(sec))
			if (!buf_append(&out, p, (size_t) (hit - p)) || !buf_puts(&out, "[redacted]"))
				break;
		if (!buf_puts(&out, p)) {
			buf_free(&out);
			return false;
		}
		buf_reset(s);
		if (!buf_append(s, out.data, out.len)) {
			buf_free(&out);
			return false;
		}
	}
	buf_free(&out);
	return true;
}
