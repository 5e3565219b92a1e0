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

/* signin_init draws this process's token (and forgets every session); false without random bytes. */
bool signin_init(void) MUSTCHECK;
/* signin_token is the token's 64 hex digits, for the sign-in address shown once. */
const char *signin_token(void);
/* signin_token_ok compares a token (NULL: none) with this process's in constant time. */
bool signin_token_ok(const char *token);
/*
 * signin_session_new opens a session for one sign-in: out gets the session cookie's value, 64 hex
 * digits, random too, not the token, so that the token travels once, at sign-in, and not with every
 * request. Each sign-in has its own, so that signing out ends that browser's only. At most 64 are
 * open: the 65th takes the place of the one used longest ago. False without random bytes.
 */
bool signin_session_new(char out[65]) MUSTCHECK;
/* signin_session_ok: is a cookie's value (NULL: none) an open session? Constant time per session. */
bool signin_session_ok(const char *value);
/* signin_session_end closes a session (sign-out): its cookie signs nobody in any more. False: none open. */
bool signin_session_end(const char *value);
/* signin_forget wipes the token and every session (at stop). */
void signin_forget(void);

/*
 * A sign-out form of HTTP Basic carries a nonce (signin_nonce, 64 hex digits). The browser forgets
 * its password only when its sign-out is answered 401; one whose user then types the password again
 * sends the same form again, and must get in rather than be asked once more: signin_nonce_answer is
 * true the first time it sees a nonce (answer 401), false when it has seen it among the last 32.
 */
bool signin_nonce(char out[65]) MUSTCHECK;
bool signin_nonce_answer(const char *nonce);

/*
 * signin_write_file writes text into path, a file that only this user may read: made with mode
 * 0600, or, when it exists, overwritten only when it is a regular file of this user that nobody
 * else may read, so that a path named by mistake is refused, never truncated. False with err.
 */
bool signin_write_file(const char *path, const char *text, char *err, size_t errlen) MUSTCHECK;

#endif
