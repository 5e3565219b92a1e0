/*
 * mime.h - build the RFC 5322 / MIME bytes of one struct Message, ready for SMTP DATA.
 */
#ifndef PGRELAY_MIME_H
#define PGRELAY_MIME_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "buf.h"
#include "compiler.h"
#include "message.h"

struct MimeOptions {
	time_t date;                      /* the Date: header */
	unsigned long long boundary_seed; /* random per message; makes boundaries unique */
};

/*
 * mime_build appends the whole message (header, blank line, body; CRLF line endings) to out.
 * A pure function of m and o: the same inputs give the same bytes. Returns false with a reason
 * in err on allocation failure only; m is expected to have passed message_parse().
 */
bool mime_build(const struct Message *m, const struct MimeOptions *o, struct Buf *out, char *err,
				size_t errlen) MUSTCHECK;

/* mime_boundary_seed returns a fresh random seed for MimeOptions.boundary_seed. */
unsigned long long mime_boundary_seed(void);

#endif
