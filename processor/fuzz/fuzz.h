/*
 * fuzz.h - what the libFuzzer targets share: failing loudly, strict checks of the MIME bytes the
 * Processor hands to SMTP, and dumping outputs for the Python strict parser (FUZZ_DUMP_DIR).
 */
#ifndef PGRELAY_FUZZ_H
#define PGRELAY_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "message.h"

/* FUZZ_ASSERT reports a broken property and aborts, so libFuzzer keeps the input as a crash. */
#define FUZZ_ASSERT(cond, ...)                          \
	do {                                                \
		if (!(cond))                                    \
			fuzz_fail(__FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

void fuzz_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

/* fuzz_utf8_valid: s[0..len) is valid UTF-8 (RFC 3629) without NUL bytes. */
bool fuzz_utf8_valid(const char *s, size_t len);

/*
 * fuzz_utf8_text copies len fuzz bytes into a fresh NUL-terminated string that is valid UTF-8:
 * invalid sequences and the bytes in drop (a NUL-terminated list of ASCII bytes) are skipped.
 * The caller frees it.
 */
char *fuzz_utf8_text(const uint8_t *data, size_t len, const char *drop);

/*
 * fuzz_check_mime checks the whole message mime_build made of m, as strictly as a picky SMTP
 * server and MIME reader would: CRLF line ends only, no line over 998 octets, a well-formed
 * header section (field names, continuation lines that hold more than blanks, ASCII unless an
 * address is not), encoded words that are valid and at most 75 characters, the Subject and every
 * custom field decoding back to exactly the text they were made of, MIME boundaries opened and
 * closed, quoted-printable and base64 lines within 76 characters, and the text bodies decoding
 * back to the bodies given.
 */
void fuzz_check_mime(const struct Buf *msg, const struct Message *m);

/*
 * fuzz_dump writes the output of one input into $FUZZ_DUMP_DIR (when set) as NAME.eml and the
 * expectations as NAME.json, for fuzz/check_mime.py; a no-op while fuzzing.
 */
void fuzz_dump(const char *target, const uint8_t *data, size_t len, const struct Buf *out,
			   const char *expect_json);

#endif
