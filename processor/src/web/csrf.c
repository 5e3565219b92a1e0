/*
 * csrf.c - CSRF tokens: HMAC-SHA256(key of this process, user). A token stays valid while the
 * process runs; a restart invalidates every form that is open in a browser.
 */
#include "web_csrf.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

static unsigned char key[32];

bool
csrf_init(void)
{
	return RAND_bytes(key, sizeof key) == 1;
}

void
csrf_token(const char *user, char out[65])
{
	unsigned char mac[32];
	unsigned int len = sizeof mac;
	const char *u = user ? user : "";
	int i;

	memset(mac, 0, sizeof mac);
	if (HMAC(EVP_sha256(), key, sizeof key, (const unsigned char *) u, strlen(u), mac, &len) == NULL)
		memset(mac, 0, sizeof mac);
	for (i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
}

bool
csrf_check(const char *user, const char *token)
{
	char want[65];

	if (token == NULL || strlen(token) != 64)
		return false;
	csrf_token(user, want);
	return CRYPTO_memcmp(want, token, 64) == 0;
}
