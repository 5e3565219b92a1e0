/*
 * throttle.c - failed sign-ins per client and per user name over a window, in a table of fixed
 * size (web_throttle.h).
 */
#include "web_throttle.h"

#include <string.h>

#include "web_auth.h"

enum EntryKind {
	E_FREE,   /* an unused slot */
	E_CLIENT, /* a client's failures: key is its struct WebAddr */
	E_NAME,   /* a user name's failures: key is the name */
};

struct Entry {
	enum EntryKind kind;
	unsigned char key[AUTH_NAME_MAX + 1]; /* the client's bytes or the name, zero-padded */
	long long start;                      /* when its window began */
	int failures;                         /* failed sign-ins since */
};

static struct Entry entries[THROTTLE_SLOTS];

/* key_of writes the key of a client (name NULL) or of a name. */
static void
key_of(const struct WebAddr *from, const char *name, unsigned char key[AUTH_NAME_MAX + 1])
{
	memset(key, 0, AUTH_NAME_MAX + 1);
	if (name != NULL)
		memcpy(key, name, strnlen(name, AUTH_NAME_MAX));
	else
		memcpy(key, from->b, sizeof from->b);
}

static bool
running(const struct Entry *e, long long now)
{
	return e->kind != E_FREE && now - e->start < THROTTLE_WINDOW;
}

/* lookup is the entry of (kind, key) in a running window; with create, a new one if there is none. */
static struct Entry *
lookup(enum EntryKind kind, const unsigned char *key, long long now, bool create)
{
	struct Entry *reuse = NULL;
	int i;

	for (i = 0; i < THROTTLE_SLOTS; i++) {
		struct Entry *e = &entries[i];

		if (running(e, now) && e->kind == kind && memcmp(e->key, key, AUTH_NAME_MAX + 1) == 0)
			return e;
		/* a free or ended slot first, else the one whose window began first */
		if (reuse == NULL || (running(reuse, now) && (!running(e, now) || e->start < reuse->start)))
			reuse = e;
	}
	if (!create)
		return NULL;
	reuse->kind = kind;
	memcpy(reuse->key, key, AUTH_NAME_MAX + 1);
	reuse->start = now;
	reuse->failures = 0;
	return reuse;
}

static int
failures(enum EntryKind kind, const struct WebAddr *from, const char *name, long long now)
{
	unsigned char key[AUTH_NAME_MAX + 1];
	const struct Entry *e;

	key_of(from, kind == E_NAME ? name : NULL, key);
	e = lookup(kind, key, now, false);
	return e ? e->failures : 0;
}

bool
throttle_blocked(const struct WebAddr *from, const char *name, long long now)
{
	int client = failures(E_CLIENT, from, NULL, now);

	if (client >= THROTTLE_MAX)
		return true;
	return name != NULL && client > 0 && failures(E_NAME, from, name, now) >= THROTTLE_MAX;
}

void
throttle_failed(const struct WebAddr *from, const char *name, long long now)
{
	unsigned char key[AUTH_NAME_MAX + 1];

	key_of(from, NULL, key);
	lookup(E_CLIENT, key, now, true)->failures++;
	if (name != NULL) {
		key_of(from, name, key);
		lookup(E_NAME, key, now, true)->failures++;
	}
}

void
throttle_clear(void)
{
	memset(entries, 0, sizeof entries);
}
