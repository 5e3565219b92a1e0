/*
 * web_csrf.h - the token every form of the web console carries: an HMAC of the signed-in user
 * under a key of this process, so that another site can neither read nor make one.
 */
#ifndef PGRELAY_WEB_CSRF_H
#define PGRELAY_WEB_CSRF_H

#include <stdbool.h>

#include "buf.h"

/* csrf_init draws this process's key; false when no random bytes could be had. */
bool csrf_init(void) MUSTCHECK;
/* csrf_token writes the 64 hex digits of user's token (user NULL: without authentication). */
void csrf_token(const char *user, char out[65]);
/* csrf_check compares a form's token with user's in constant time. */
bool csrf_check(const char *user, const char *token);

#endif
