/*
 * webhook_sign.h - the Standard Webhooks signature of a request: webhook-signature is "v1,"
 * followed by the base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}" under the
 * channel's signing key. The HMAC is OpenSSL's (libcrypto), never our own.
 */
#ifndef PGRELAY_WEBHOOK_SIGN_H
#define PGRELAY_WEBHOOK_SIGN_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "compiler.h"

/* Standard Webhooks keys have 24 to 64 random bytes. */
#define WEBHOOK_KEY_MIN 24
#define WEBHOOK_KEY_MAX 64

/*
 * webhook_sign_key turns a resolved signing secret, "whsec_" followed by the base64 of the key as
 * Standard Webhooks serialises it, into the HMAC key (malloc'd in *key; the caller wipes and frees
 * it). Returns false with the reason in err, which never holds the secret.
 */
bool webhook_sign_key(const char *secret, unsigned char **key, size_t *keylen, char *err,
					  size_t errlen) MUSTCHECK;

/*
 * webhook_sign appends "v1," and the base64 HMAC-SHA256 of id "." timestamp "." body under key to
 * out. Returns false with the reason in err when libcrypto or memory fails.
 */
bool webhook_sign(const unsigned char *key, size_t keylen, const char *id, long long timestamp,
				  const char *body, size_t body_len, struct Buf *out, char *err, size_t errlen) MUSTCHECK;

#endif
