/*
 * buf.h - a growable byte buffer, the one string builder of the Processor.
 *
 * A Buf is always NUL-terminated, so buf.data can be handed to C string functions. Growth is
 * checked: on allocation failure the buffer keeps its old contents and the append returns false.
 */
#ifndef PGRELAY_BUF_H
#define PGRELAY_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "compiler.h"

struct Buf {
	char *data; /* NUL-terminated contents, NULL until the first append */
	size_t len; /* bytes used, excluding the NUL */
	size_t cap; /* bytes allocated */
	bool oom;   /* an append failed; later appends are no-ops */
};

#define BUF_INIT          \
	{                     \
		NULL, 0, 0, false \
	}

bool buf_append(struct Buf *b, const void *data, size_t len);
bool buf_puts(struct Buf *b, const char *s);
bool buf_putc(struct Buf *b, char c);
bool buf_printf(struct Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool buf_vprintf(struct Buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void buf_reset(struct Buf *b);
/* buf_steal returns the contents (caller frees; "" when empty) and leaves b empty. */
char *buf_steal(struct Buf *b) MUSTCHECK;
void buf_free(struct Buf *b);
/*
 * buf_redact replaces every occurrence of each non-empty secret in s by "[redacted]": the last
 * pass over a trace or an error text, whatever a server echoed. NULL secrets are skipped.
 */
bool buf_redact(struct Buf *s, const char *const *secrets, int n) MUSTCHECK;

#endif
