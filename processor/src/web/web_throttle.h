/*
 * web_throttle.h - how often the web console checks a password that turns out wrong: each check
 * costs a slow hash, and guesses are to be slow. Failed sign-ins are counted per client
 * (web_addr.h) and per user name over THROTTLE_WINDOW seconds, so that one client's failures stop
 * that client only: past THROTTLE_MAX failures a client is not checked any more until its window
 * ends, and a name that failed THROTTLE_MAX times is not checked for a client that has itself
 * failed in its window, while a client without failures may still try it once (its user signs in
 * from elsewhere while the name is guessed at). The counts live in a table of THROTTLE_SLOTS
 * entries: when it is full, the entry whose window began first is reused.
 */
#ifndef PGRELAY_WEB_THROTTLE_H
#define PGRELAY_WEB_THROTTLE_H

#include <stdbool.h>

#include "web_addr.h"

#define THROTTLE_WINDOW 10 /* seconds */
#define THROTTLE_MAX 20    /* failed sign-ins of a client, or of a name, in a window */
#define THROTTLE_SLOTS 256 /* clients and names counted at once */

/*
 * throttle_blocked says whether a sign-in of client from as name (NULL: a name that is not a
 * valid one, counted by client only) is refused unchecked; now is seconds on a monotonic clock.
 */
bool throttle_blocked(const struct WebAddr *from, const char *name, long long now);
/* throttle_failed counts a failed sign-in of from as name (NULL: by client only). */
void throttle_failed(const struct WebAddr *from, const char *name, long long now);
/* throttle_clear forgets every count. */
void throttle_clear(void);

#endif
