/*
 * base64.h - RFC 4648 base64, the one codec shared by message parsing (attachments arrive as
 * base64 in fetch()), MIME building and the SASL-aware trace redaction.
 */
#ifndef PGRELAY_BASE64_H
#define PGRELAY_BASE64_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "compiler.h"

/*
 * base64_encode appends the encoding of data to out. line_len > 0 breaks the output into lines of
 * at most line_len characters separated by CRLF (MIME bodies use 76); 0 means one line.
 * Returns false on allocation failure.
 */
bool base64_encode(struct Buf *out, const void *data, size_t len, size_t line_len) MUSTCHECK;

/*
 * base64_decode decodes text (whitespace such as PostgreSQL's 76-column line breaks is skipped;
 * padding is optional) into a malloc'd buffer stored in *out with its length in *outlen.
 * Returns false on a character outside the alphabet, misplaced padding or allocation failure.
 */
bool base64_decode(const char *text, unsigned char **out, size_t *outlen) MUSTCHECK;

#endif
