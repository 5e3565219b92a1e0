/*
 * utf8.h - text from outside (a mail server's replies, an HTTP body) made safe to store, log and
 * put in JSON: valid UTF-8, bounded in size.
 */
#ifndef PGRELAY_UTF8_H
#define PGRELAY_UTF8_H

#include <stddef.h>

#include "buf.h"

/*
 * utf8_len is the length of the valid UTF-8 sequence at s (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0 when s does not start one.
 */
size_t utf8_len(const unsigned char *s);

/*
 * utf8_clean appends the len bytes at s to out as valid UTF-8: every byte that does not start a
 * valid sequence becomes U+FFFD, and NUL bytes become U+FFFD too (a C string or a PostgreSQL text
 * value cannot hold one). At most max bytes are appended; text cut short ends in "...". Returns
 * false when out of memory.
 */
bool utf8_clean(struct Buf *out, const char *s, size_t len, size_t max);

/*
 * utf8_prefix is the length of the longest prefix of s of at most max bytes that does not end
 * inside a character: "%.*s" with it never cuts one in two, as "%.200s" may.
 */
size_t utf8_prefix(const char *s, size_t max);

/*
 * utf8_trim_cut drops an incomplete sequence from the end of s, where a copy into a fixed buffer
 * (snprintf) cut the last character in two. Text that is stored as PostgreSQL text or put in JSON
 * must be valid UTF-8 to the last byte: the database refuses the whole value otherwise (22021)
 * and jansson makes no string of it.
 */
void utf8_trim_cut(char *s);

/*
 * utf8_snprintf is snprintf followed by utf8_trim_cut: a readable reason that quotes a server's
 * text, cut to fit its buffer but never inside a character (the delivery results' error texts).
 */
void utf8_snprintf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * utf8_clean_line is utf8_clean that also turns CR, LF and TAB into blanks: a server's text made
 * into one line of an error message.
 */
bool utf8_clean_line(struct Buf *out, const char *s, size_t len, size_t max);

/*
 * utf8_no_controls turns every control character of s (C0 and DEL) into "?", in place: text from
 * the server (an error, a role's name) printed on an operator's terminal must not move its cursor,
 * clear its screen or draw a line of its own.
 */
void utf8_no_controls(char *s);

#endif
