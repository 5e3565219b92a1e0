/*
 * web_signin.h - signing in to a web console that has no password file: a random token drawn at
 * each start, shown once to whoever started the console (on its standard error, or in a file
 * only its user may read), and exchanged at /sign-in?token=... for a session cookie. Without one
 * or the other, a console on loopback would serve every user of the host.
 */
#ifndef PGRELAY_WEB_SIGNIN_H
#define PGRELAY_WEB_SIGNIN_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* signin_init draws this process's token and session value; false when no random bytes could be had. */
bool signin_init(void) MUSTCHECK;
/* signin_token is the token's 64 hex digits, for the sign-in address shown once. */
const char *signin_token(void);
/* signin_token_ok compares a token (NULL: none) with this process's in constant time. */
bool signin_token_ok(const char *token);
/*
 * signin_session is the session cookie's value, 64 hex digits: random too, not the token, so that
 * the token travels once, at sign-in, and not with every request.
 */
const char *signin_session(void);
/* signin_session_ok compares a cookie's value (NULL: none) with the session's in constant time. */
bool signin_session_ok(const char *value);
/* signin_forget wipes the token and the session value (at stop). */
void signin_forget(void);

/*
 * signin_write_file writes text into path, a file that only this user may read: made with mode
 * 0600, or, when it exists, overwritten only when it is a regular file of this user that nobody
 * else may read, so that a path named by mistake is refused, never truncated. False with err.
 */
bool signin_write_file(const char *path, const char *text, char *err, size_t errlen) MUSTCHECK;

#endif
