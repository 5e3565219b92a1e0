/*
 * signin.c - the sign-in token of a console without a password file, its session value, and the
 * file it may be written to (web_signin.h).
 */
#include "web_signin.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECRET_LEN 32

static char token[2 * SECRET_LEN + 1], session[2 * SECRET_LEN + 1];

/* draw writes SECRET_LEN random bytes as hex into out; false without random bytes. */
static bool
draw(char out[2 * SECRET_LEN + 1])
{
	unsigned char bytes[SECRET_LEN];
	int i;

	if (RAND_bytes(bytes, sizeof bytes) != 1)
		return false;
	for (i = 0; i < SECRET_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", bytes[i]);
	OPENSSL_cleanse(bytes, sizeof bytes);
	return true;
}

bool
signin_init(void)
{
	return draw(token) && draw(session);
}

const char *
signin_token(void)
{
	return token;
}

const char *
signin_session(void)
{
	return session;
}

/* same compares a given value with a secret: its length is no secret, its bytes are. */
static bool
same(const char *secret, const char *given)
{
	return secret[0] != '\0' && given != NULL && strlen(given) == 2 * SECRET_LEN &&
		   CRYPTO_memcmp(secret, given, 2 * SECRET_LEN) == 0;
}

bool
signin_token_ok(const char *given)
{
	return same(token, given);
}

bool
signin_session_ok(const char *given)
{
	return same(session, given);
}

void
signin_forget(void)
{
	OPENSSL_cleanse(token, sizeof token);
	OPENSSL_cleanse(session, sizeof session);
}

bool
signin_write_file(const char *path, const char *text, char *err, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	size_t len = strlen(text);
	struct stat st;
	bool ok;

	if (fd < 0) {
		snprintf(err, errlen, "cannot write the token file %s: %s", path, strerror(errno));
		return false;
	}
	/* Nothing is changed before this check: a file of another user, or readable by others, is left as it is. */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0077) != 0 ||
		st.st_nlink != 1) {
		snprintf(
			err, errlen,
			"the token file %s exists and is not a file of this user that only it may read: remove it or "
			"name another",
			path);
		close(fd);
		return false;
	}
	ok = ftruncate(fd, 0) == 0 && write(fd, text, len) == (ssize_t) len;
	if (!ok)
		snprintf(err, errlen, "cannot write the token file %s: %s", path, strerror(errno));
	if (close(fd) != 0 && ok) {
		snprintf(err, errlen, "cannot write the token file %s: %s", path, strerror(errno));
		ok = false;
	}
	return ok;
}
