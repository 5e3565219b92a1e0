/*
 * web_auth.h - HTTP authentication of the web console from a password file of salted hashes:
 * one line per user, NAME:pbkdf2-sha256:ITERATIONS:SALT:HASH (salt and hash in base64), made by
 * `pg_relay web --hash-password NAME`. The console's own protection only: what a user may see
 * and do is the database's decision for the console's role.
 */
#ifndef PGRELAY_WEB_AUTH_H
#define PGRELAY_WEB_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "web_addr.h"

#define AUTH_DEFAULT_ITERATIONS 600000
#define AUTH_MIN_ITERATIONS 1000
#define AUTH_MAX_ITERATIONS 100000000L
#define AUTH_NAME_MAX 64

/* auth_load reads the password file; false with the reason (file and line) in err. */
bool auth_load(const char *path, char *err, size_t errlen) MUSTCHECK;
void auth_free(void);
/* auth_users is how many users the file has. */
int auth_users(void);

enum AuthResult {
	AUTH_OK,        /* name and password match a line */
	AUTH_BAD,       /* no such user, a wrong password, or no credentials */
	AUTH_THROTTLED, /* too many failures of this client or name lately: not checked (web_throttle.h) */
};

/*
 * auth_check checks the value of an Authorization header (Basic) that client from sent. On
 * AUTH_OK, user (of userlen bytes) is the name. A name and password that matched once are
 * remembered (a keyed digest, for 10 minutes) so that every request does not cost a slow hash,
 * and are let in even while their client or name is throttled.
 */
enum AuthResult auth_check(const char *header, const struct WebAddr *from, char *user, size_t userlen);

/*
 * auth_hash_line writes the password file line for name and password: a random 16-byte salt,
 * iterations rounds of PBKDF2-HMAC-SHA256. False with err for a name that cannot be used.
 */
bool auth_hash_line(const char *name, const char *password, long iterations, struct Buf *out, char *err,
					size_t errlen) MUSTCHECK;

/* auth_name_ok: a user name is 1 to 64 of letters, digits and . _ @ - */
bool auth_name_ok(const char *name);

#endif
