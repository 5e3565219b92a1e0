/*
 * auth.c - the web console's password file and HTTP Basic authentication, with PBKDF2-HMAC-SHA256
 * from libcrypto. Salts are per user and the iteration count is in each line, so an operator can
 * raise it later line by line.
 */
#include "web_auth.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base64.h"
#include "clock.h"
#include "config.h"
#include "web_throttle.h"

#define SALT_LEN 16
#define HASH_LEN 32
#define MAX_USERS 256
#define CACHE_SLOTS 32
#define CACHE_SECONDS 600

struct User {
	char name[AUTH_NAME_MAX + 1];
	long iterations;
	unsigned char salt[SALT_LEN];
	unsigned char hash[HASH_LEN];
};

static struct User *users;
static int nusers;
/* A key of this process: the remembered digests are of no use outside it. */
static unsigned char cache_key[32];
static bool have_key;
static struct {
	unsigned char digest[32]; /* HMAC(cache_key, name ":" password) */
	time_t until;
	int user;
} cache[CACHE_SLOTS];

bool
auth_name_ok(const char *name)
{
	size_t n = strlen(name), i;

	if (n == 0 || n > AUTH_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
			  ch == '_' || ch == '@' || ch == '-'))
			return false;
	}
	return true;
}

/* decode_exact decodes base64 text that must hold exactly len bytes. */
static bool
decode_exact(const char *text, unsigned char *out, size_t len)
{
	unsigned char *bytes = NULL;
	size_t n = 0;
	bool ok;

	if (!base64_decode(text, &bytes, &n))
		return false;
	ok = n == len;
	if (ok)
		memcpy(out, bytes, len);
	free(bytes);
	return ok;
}

/* parse_line reads NAME:pbkdf2-sha256:ITERATIONS:SALT:HASH into u; false with why. */
static bool
parse_line(char *line, struct User *u, const char **why)
{
	char *field[5], *p = line;
	int i;

	for (i = 0; i < 5; i++) {
		field[i] = p;
		p = strchr(p, ':');
		if (i < 4) {
			if (p == NULL) {
				*why = "expected NAME:pbkdf2-sha256:ITERATIONS:SALT:HASH (pg_relay web --hash-password NAME)";
				return false;
			}
			*p++ = '\0';
		} else if (p != NULL) {
			*why = "too many fields (expected NAME:pbkdf2-sha256:ITERATIONS:SALT:HASH)";
			return false;
		}
	}
	if (!auth_name_ok(field[0])) {
		*why = "the user name must be 1 to 64 letters, digits or . _ @ -";
		return false;
	}
	if (strcmp(field[1], "pbkdf2-sha256") != 0) {
		*why = "unknown hash scheme (only pbkdf2-sha256)";
		return false;
	}
	if (!config_parse_int(field[2], AUTH_MIN_ITERATIONS, AUTH_MAX_ITERATIONS, &u->iterations)) {
		*why = "the iteration count must be a number from 1000 to 100000000";
		return false;
	}
	if (!decode_exact(field[3], u->salt, SALT_LEN) || !decode_exact(field[4], u->hash, HASH_LEN)) {
		*why = "the salt must be 16 and the hash 32 bytes of base64";
		return false;
	}
	snprintf(u->name, sizeof u->name, "%s", field[0]);
	return true;
}

bool
auth_load(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int lineno = 0, i;
	const char *why;

	auth_free();
	if (f == NULL) {
		snprintf(err, errlen, "cannot read the auth file %s: %s", path, strerror(errno));
		return false;
	}
	users = calloc(MAX_USERS, sizeof *users);
	if (users == NULL) {
		fclose(f);
		snprintf(err, errlen, "out of memory");
		return false;
	}
	while (fgets(line, sizeof line, f) != NULL) {
		size_t n = strlen(line);

		lineno++;
		if (n > 0 && line[n - 1] != '\n' && !feof(f)) {
			snprintf(err, errlen, "%s:%d: line too long", path, lineno);
			goto failed;
		}
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' '))
			line[--n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		if (nusers == MAX_USERS) {
			snprintf(err, errlen, "%s:%d: more than %d users", path, lineno, MAX_USERS);
			goto failed;
		}
		if (!parse_line(line, &users[nusers], &why)) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
			goto failed;
		}
		for (i = 0; i < nusers; i++)
			if (strcmp(users[i].name, users[nusers].name) == 0) {
				snprintf(err, errlen, "%s:%d: user %s is in the file twice", path, lineno, users[i].name);
				goto failed;
			}
		nusers++;
	}
	fclose(f);
	if (nusers == 0) {
		snprintf(err, errlen, "the auth file %s has no user (pg_relay web --hash-password NAME)", path);
		auth_free();
		return false;
	}
	if (!have_key) {
		if (RAND_bytes(cache_key, sizeof cache_key) != 1) {
			snprintf(err, errlen, "no random bytes for the credentials cache");
			auth_free();
			return false;
		}
		have_key = true;
	}
	return true;
failed:
	fclose(f);
	auth_free();
	return false;
}

void
auth_free(void)
{
	if (users != NULL)
		OPENSSL_cleanse(users, MAX_USERS * sizeof *users);
	free(users);
	users = NULL;
	nusers = 0;
	OPENSSL_cleanse(cache, sizeof cache);
	throttle_clear();
}

int
auth_users(void)
{
	return nusers;
}

static bool
pbkdf2(const char *password, const unsigned char *salt, long iterations, unsigned char *out)
{
	return PKCS5_PBKDF2_HMAC(password, (int) strlen(password), salt, SALT_LEN, (int) iterations, EVP_sha256(),
							 HASH_LEN, out) == 1;
}

/* split_basic decodes "Basic base64(name:password)"; the caller frees *decoded. */
static bool
split_basic(const char *header, unsigned char **decoded, size_t *dlen, char **name, char **password)
{
	size_t n = 0;
	char *colon;
	unsigned char *grown;

	if (header == NULL || strncasecmp(header, "Basic ", 6) != 0)
		return false;
	header += 6;
	while (*header == ' ')
		header++;
	if (strlen(header) > 1024 || !base64_decode(header, decoded, &n))
		return false;
	*dlen = n;
	grown = realloc(*decoded, n + 1);
	if (grown == NULL)
		return false;
	*decoded = grown;
	(*decoded)[n] = '\0';
	if (memchr(*decoded, '\0', n) != NULL)
		return false;
	colon = strchr((char *) *decoded, ':');
	if (colon == NULL)
		return false;
	*colon = '\0';
	*name = (char *) *decoded;
	*password = colon + 1;
	return true;
}

static void
digest_of(const char *name, const char *password, unsigned char *out)
{
	unsigned int len = 32;
	char both[AUTH_NAME_MAX + 1100];
	int n = snprintf(both, sizeof both, "%s:%s", name, password);

	memset(out, 0, 32);
	if (n > 0 && (size_t) n < sizeof both)
		HMAC(EVP_sha256(), cache_key, sizeof cache_key, (const unsigned char *) both, (size_t) n, out, &len);
	OPENSSL_cleanse(both, sizeof both);
}

enum AuthResult
auth_check(const char *header, const struct WebAddr *from, char *user, size_t userlen)
{
	unsigned char *decoded = NULL, digest[32], hash[HASH_LEN];
	size_t dlen = 0;
	char *name, *password;
	time_t now = time(NULL);
	long long mono = now_us() / 1000000;
	const char *counted;
	int i, found = -1, slot = 0;
	enum AuthResult result = AUTH_BAD;

	if (!split_basic(header, &decoded, &dlen, &name, &password))
		goto out;
	digest_of(name, password, digest);
	for (i = 0; i < CACHE_SLOTS; i++) {
		if (cache[i].until > now && CRYPTO_memcmp(cache[i].digest, digest, 32) == 0) {
			snprintf(user, userlen, "%s", users[cache[i].user].name);
			result = AUTH_OK;
			goto out;
		}
		if (cache[i].until < cache[slot].until)
			slot = i;
	}
	/* Each failed check costs a slow hash: a client's flood of them stops being checked for a while. */
	counted = auth_name_ok(name) ? name : NULL;
	if (throttle_blocked(from, counted, mono)) {
		result = AUTH_THROTTLED;
		goto out;
	}
	for (i = 0; i < nusers; i++)
		if (strcmp(users[i].name, name) == 0)
			found = i;
	/* An unknown name costs the same hash as a known one: no telling names apart by time. */
	if (!pbkdf2(password, found >= 0 ? users[found].salt : users[0].salt,
				found >= 0 ? users[found].iterations : users[0].iterations, hash) ||
		found < 0 || CRYPTO_memcmp(hash, users[found].hash, HASH_LEN) != 0) {
		throttle_failed(from, counted, mono);
		goto out;
	}
	memcpy(cache[slot].digest, digest, 32);
	cache[slot].until = now + CACHE_SECONDS;
	cache[slot].user = found;
	snprintf(user, userlen, "%s", users[found].name);
	result = AUTH_OK;
out:
	OPENSSL_cleanse(hash, sizeof hash);
	if (decoded != NULL) {
		OPENSSL_cleanse(decoded, dlen);
		free(decoded);
	}
	return result;
}

bool
auth_hash_line(const char *name, const char *password, long iterations, struct Buf *out, char *err,
			   size_t errlen)
{
	unsigned char salt[SALT_LEN], hash[HASH_LEN];
	bool ok;

	if (!auth_name_ok(name)) {
		snprintf(err, errlen, "the user name must be 1 to 64 letters, digits or . _ @ -, not \"%s\"", name);
		return false;
	}
	if (password[0] == '\0') {
		snprintf(err, errlen, "the password is empty");
		return false;
	}
	if (iterations < AUTH_MIN_ITERATIONS || iterations > AUTH_MAX_ITERATIONS) {
		snprintf(err, errlen, "--iterations must be from %d to %ld", AUTH_MIN_ITERATIONS,
				 AUTH_MAX_ITERATIONS);
		return false;
	}
	if (RAND_bytes(salt, SALT_LEN) != 1 || !pbkdf2(password, salt, iterations, hash)) {
		snprintf(err, errlen, "libcrypto could not make the hash");
		return false;
	}
	buf_printf(out, "%s:pbkdf2-sha256:%ld:", name, iterations);
	ok = base64_encode(out, salt, SALT_LEN, 0) && buf_putc(out, ':') &&
		 base64_encode(out, hash, HASH_LEN, 0) && buf_putc(out, '\n');
	OPENSSL_cleanse(hash, sizeof hash);
	if (!ok || out->oom) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	return true;
}
