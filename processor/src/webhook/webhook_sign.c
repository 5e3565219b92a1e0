/*
 * webhook_sign.c - the signing key of a webhook channel and the Standard Webhooks signature, with
 * libcrypto's HMAC (EVP_MAC). The body is fed to the MAC as it is, never copied: a payload may
 * hold up to 100 MB.
 */
#include "webhook_sign.h"

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"

#define WHSEC "whsec_"

bool
webhook_sign_key(const char *secret, unsigned char **key, size_t *keylen, char *err, size_t errlen)
{
	*key = NULL;
	*keylen = 0;
	if (strncmp(secret, WHSEC, strlen(WHSEC)) != 0) {
		snprintf(err, errlen,
				 "the signing secret must be whsec_ followed by the base64 of %d to %d random bytes",
				 WEBHOOK_KEY_MIN, WEBHOOK_KEY_MAX);
		return false;
	}
	if (!base64_decode(secret + strlen(WHSEC), key, keylen)) {
		snprintf(err, errlen, "the signing secret starts with whsec_ but the rest is not base64");
		return false;
	}
	if (*keylen >= WEBHOOK_KEY_MIN && *keylen <= WEBHOOK_KEY_MAX)
		return true;
	snprintf(err, errlen, "the signing secret is a key of %zu bytes; a key has %d to %d random bytes",
			 *keylen, WEBHOOK_KEY_MIN, WEBHOOK_KEY_MAX);
	explicit_bzero(*key, *keylen);
	free(*key);
	*key = NULL;
	return false;
}

/* crypto_error describes libcrypto's last error for step. */
static bool
crypto_error(const char *step, char *err, size_t errlen)
{
	char why[256];

	ERR_error_string_n(ERR_get_error(), why, sizeof(why));
	ERR_clear_error();
	snprintf(err, errlen, "HMAC-SHA256 failed (%s): %s", step, why);
	return false;
}

/* hmac_sha256 computes the MAC of the signed content into mac; false with err set on failure. */
static bool
hmac_sha256(const unsigned char *key, size_t keylen, const char *head, size_t head_len, const char *body,
			size_t body_len, unsigned char *mac, size_t *mac_len, char *err, size_t errlen)
{
	OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *) "SHA256", 0),
						   OSSL_PARAM_construct_end()};
	EVP_MAC *mac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *ctx = mac_alg ? EVP_MAC_CTX_new(mac_alg) : NULL;
	bool ok;

	if (ctx == NULL)
		ok = crypto_error("fetch", err, errlen);
	else if (EVP_MAC_init(ctx, key, keylen, params) != 1)
		ok = crypto_error("init", err, errlen);
	else if (EVP_MAC_update(ctx, (const unsigned char *) head, head_len) != 1 ||
			 (body_len > 0 && EVP_MAC_update(ctx, (const unsigned char *) body, body_len) != 1))
		ok = crypto_error("update", err, errlen);
	else if (EVP_MAC_final(ctx, mac, mac_len, EVP_MAX_MD_SIZE) != 1)
		ok = crypto_error("final", err, errlen);
	else
		ok = true;
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac_alg);
	return ok;
}

bool
webhook_sign(const unsigned char *key, size_t keylen, const char *id, long long timestamp, const char *body,
			 size_t body_len, struct Buf *out, char *err, size_t errlen)
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	size_t mac_len = 0;
	struct Buf head = BUF_INIT;
	bool ok;

	/* Note that id and timestamp hold no '.': the signed content splits one way only. */
	if (!buf_printf(&head, "%s.%lld.", id, timestamp)) {
		snprintf(err, errlen, "out of memory");
		buf_free(&head);
		return false;
	}
	ok = hmac_sha256(key, keylen, head.data, head.len, body, body_len, mac, &mac_len, err, errlen);
	buf_free(&head);
	if (ok && !(buf_puts(out, "v1,") && base64_encode(out, mac, mac_len, 0))) {
		snprintf(err, errlen, "out of memory");
		ok = false;
	}
	explicit_bzero(mac, sizeof(mac));
	return ok;
}
