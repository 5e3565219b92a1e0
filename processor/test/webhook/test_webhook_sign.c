/*
 * test_webhook_sign.c - the Standard Webhooks signature: the specification's published vector,
 * vectors computed with Python's hmac, and the keys that are refused.
 */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "webhook_sign.h"

/* sign_with signs with a whsec_ secret; returns the header value (static) or the error. */
static const char *
sign_with(const char *secret, const char *id, long long ts, const char *body)
{
	static char out[320];
	unsigned char *key;
	size_t keylen;
	struct Buf b = BUF_INIT;
	char err[256];

	if (!webhook_sign_key(secret, &key, &keylen, err, sizeof(err))) {
		snprintf(out, sizeof(out), "error: %s", err);
		return out;
	}
	if (webhook_sign(key, keylen, id, ts, body, strlen(body), &b, err, sizeof(err)))
		snprintf(out, sizeof(out), "%s", b.data);
	else
		snprintf(out, sizeof(out), "error: %s", err);
	free(key);
	buf_free(&b);
	return out;
}

static void
test_vectors(void)
{
	static const struct {
		const char *secret, *id;
		long long ts;
		const char *body, *want;
	} rows[] = {
		/* the vector the Standard Webhooks libraries test against */
		{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
		 "{\"test\": 2432232314}", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
		/* computed with Python's hmac: an empty body, a UTF-8 body (bytes as they are) */
		{"whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=", "121028802351464448", 1796081115, "",
		 "v1,dnx+5RbZhVUUdOmgHcxAAMmIyeY+cXx/qg3nJCOXh6g="},
		{"whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=", "121028802351464448", 1796081115,
		 "{\"caf\xc3\xa9\": \"\xc3\xa9\"}", "v1,4ULGhiL40wjX62L+TmqGAjulUJuYfMG6PVtfNJ5CVIU="},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECK_STR(sign_with(rows[i].secret, rows[i].id, rows[i].ts, rows[i].body), rows[i].want);
}

static void
test_keys(void)
{
	static const struct {
		const char *secret;
		const char *error; /* NULL: accepted */
	} rows[] = {
		{"whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",
		 NULL},
		{"whsec_AAAAAAAAAAAAAAAAAAAAAA==",
		 "the signing secret is a key of 16 bytes; a key has 24 to 64 random bytes"},
		{"whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
		 "the signing secret is a key of 65 bytes; a key has 24 to 64 random bytes"},
		{"whsec_!not-base64!", "the signing secret starts with whsec_ but the rest is not base64"},
		{"whsec_", "the signing secret is a key of 0 bytes; a key has 24 to 64 random bytes"},
		{"a-long-raw-secret-that-is-no-key",
		 "the signing secret must be whsec_ followed by the base64 of 24 to 64 "
		 "random bytes"},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		unsigned char *key = NULL;
		size_t keylen = 0;
		char err[256] = "";
		bool ok = webhook_sign_key(rows[i].secret, &key, &keylen, err, sizeof(err));

		CHECK(ok == (rows[i].error == NULL));
		CHECK(ok == (key != NULL));
		if (rows[i].error != NULL) {
			CHECK_STR(err, rows[i].error);
			/* an error never repeats the secret */
			CHECK(strstr(err, rows[i].secret) == NULL);
		}
		free(key);
	}
}

int
main(void)
{
	RUN(test_vectors);
	RUN(test_keys);
	return UNIT_DONE();
}
