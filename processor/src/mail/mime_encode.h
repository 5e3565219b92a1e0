/*
 * mime_encode.h - the encoders a MIME message needs: quoted-printable bodies, RFC 2047 encoded
 * words, folded header fields, RFC 2231 parameters and the RFC 5322 date.
 *
 * All output uses CRLF line endings. Header writers track the current column in a struct Fold so
 * that lines stay within 78 characters where the content allows (76 for encoded words).
 */
#ifndef PGRELAY_MIME_ENCODE_H
#define PGRELAY_MIME_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "buf.h"
#include "compiler.h"

/* Fold is the state of one header field being written. */
struct Fold {
	struct Buf *out;
	size_t col; /* characters on the current line so far */
};

/* The soft limit for folded header lines and for lines holding encoded words (RFC 2047). */
#define MIME_LINE 78
#define MIME_ENCODED_LINE 76

/* mime_qp appends text as quoted-printable: any newline (LF, CRLF, CR) becomes CRLF. */
bool mime_qp(struct Buf *out, const char *text, size_t len) MUSTCHECK;

/*
 * mime_fold_begin starts header field name (writes "Name:"); mime_fold_end writes the CRLF.
 * mime_fold_atom appends an unbreakable piece, preceded by one blank when space is true; it
 * folds before the blank when the piece would pass MIME_LINE.
 */
bool mime_fold_begin(struct Fold *f, struct Buf *out, const char *name) MUSTCHECK;
bool mime_fold_atom(struct Fold *f, const char *text, size_t len, bool space) MUSTCHECK;
bool mime_fold_end(struct Fold *f) MUSTCHECK;

/*
 * mime_fold_unstructured appends free text (a subject, a custom header value): as is, folded at
 * its blanks, when it is short ASCII; as encoded words otherwise.
 */
bool mime_fold_unstructured(struct Fold *f, const char *text) MUSTCHECK;

/*
 * mime_fold_mailbox appends `name <address>` (or just the address): the display name as atoms,
 * a quoted-string when it has specials, or encoded words when it is not ASCII.
 */
bool mime_fold_mailbox(struct Fold *f, const char *name, const char *address) MUSTCHECK;

/*
 * mime_param appends `;` and the parameter attr=value on a new folded line: a quoted-string
 * for ASCII, RFC 2231 `attr*=UTF-8''%XX..` (split into attr*0*, attr*1*, ... when long) otherwise.
 */
bool mime_param(struct Fold *f, const char *attr, const char *value) MUSTCHECK;

/* mime_date appends t as an RFC 5322 date in UTC, locale-independent: "Sun, 29 Nov 2026 ...". */
bool mime_date(struct Buf *out, time_t t) MUSTCHECK;

#endif
