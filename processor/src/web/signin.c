/*
 * signin.c - the sign-in token of a console without a password file, the sessions it opens (one
 * per sign-in, so that signing out ends one browser's), the file it may be written to, and the
 * sign-out forms already answered (web_signin.h).
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
#define SESSIONS 64
#define NONCES 32

static char token[2 * SECRET_LEN + 1];
/* The open sessions ("" for a free slot), and when each was last used (a count of uses). */
static char sessions[SESSIONS][2 * SECRET_LEN + 1];
static unsigned long long session_used[SESSIONS], uses;
/* The sign-out forms answered last, newest at nonce_next - 1. */
static char nonces[NONCES][2 * SECRET_LEN + 1];
static int nonce_next;

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
	signin_forget();
	return draw(token);
}

const char *
signin_token(void)
{
	return token;
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
signin_session_new(char out[2 * SECRET_LEN + 1])
{
	int i, slot = 0;

	/* a free slot, or the one used longest ago: its browser signs in again */
	for (i = 0; i < SESSIONS; i++) {
		if (sessions[i][0] == '\0') {
			slot = i;
			break;
		}
		if (session_used[i] < session_used[slot])
			slot = i;
	}
	if (!draw(sessions[slot]))
		return false;
	session_used[slot] = ++uses;
	memcpy(out, sessions[slot], 2 * SECRET_LEN + 1);
	return true;
}

/* session_find is the slot of an open session, -1 for none; every slot is compared, in constant time. */
static int
session_find(const char *given)
{
	int i, found = -1;

	for (i = 0; i < SESSIONS; i++)
		if (same(sessions[i], given))
			found = i;
	return found;
}

bool
signin_session_ok(const char *given)
{
	int i = session_find(given);

	if (i < 0)
		return false;
	session_used[i] = ++uses;
	return true;
}

bool
signin_session_end(const char *given)
{
	int i = session_find(given);

	if (i < 0)
		return false;
	OPENSSL_cleanse(sessions[i], sizeof sessions[i]);
	session_used[i] = 0;
	return true;
}

void
signin_forget(void)
{
	OPENSSL_cleanse(token, sizeof token);
	OPENSSL_cleanse(sessions, sizeof sessions);
	memset(session_used, 0, sizeof session_used);
	memset(nonces, 0, sizeof nonces);
}

bool
signin_nonce(char out[2 * SECRET_LEN + 1])
{
	return draw(out);
}

bool
signin_nonce_answer(const char *nonce)
{
	int i;

	if (nonce == NULL || strlen(nonce) != 2 * SECRET_LEN)
		return false;
	for (i = 0; i < NONCES; i++)
		if (strcmp(nonces[i], nonce) == 0)
			return false;
	snprintf(nonces[nonce_next], sizeof nonces[nonce_next], "%s", nonce);
	nonce_next = (nonce_next + 1) % NONCES;
	return true;
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
