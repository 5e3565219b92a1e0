/*
 * conns.c - the web console's connections and which to close when there are too many
 * (web_conns.h). Only libmicrohttpd's one thread calls these, from its callbacks.
 */
#include "web_conns.h"

#include <stdbool.h>
#include <string.h>

struct Conn {
	const void *conn;         /* libmicrohttpd's connection; NULL: a free slot */
	int fd;                   /* its socket */
	struct WebAddr from;      /* its client */
	unsigned long long since; /* when it began to wait for a request, as an order (seq) */
	bool closing;             /* shut down here, not yet closed by libmicrohttpd */
};

static struct Conn conns[CONNS_MAX];
static unsigned long long seq;

/* find is conn's slot, or a free one for NULL. */
static struct Conn *
find(const void *conn)
{
	int i;

	for (i = 0; i < CONNS_MAX; i++)
		if (conns[i].conn == conn)
			return &conns[i];
	return NULL;
}

/* count is how many open connections (not shut down) there are of from, or of all (from NULL). */
static int
count(const struct WebAddr *from)
{
	int i, n = 0;

	for (i = 0; i < CONNS_MAX; i++)
		if (conns[i].conn != NULL && !conns[i].closing &&
			(from == NULL || memcmp(&conns[i].from, from, sizeof *from) == 0))
			n++;
	return n;
}

/* evict_oldest marks the connection of from (of all: NULL) that waited longest; its socket, or -1. */
static int
evict_oldest(const struct WebAddr *from)
{
	struct Conn *oldest = NULL;
	int i;

	for (i = 0; i < CONNS_MAX; i++) {
		struct Conn *c = &conns[i];

		if (c->conn == NULL || c->closing || (from != NULL && memcmp(&c->from, from, sizeof *from) != 0))
			continue;
		if (oldest == NULL || c->since < oldest->since)
			oldest = c;
	}
	if (oldest == NULL)
		return -1;
	oldest->closing = true;
	return oldest->fd;
}

int
conns_started(const void *conn, int fd, const struct WebAddr *from, int evict[2])
{
	struct Conn *slot = find(NULL);
	int n = 0;

	/* Never more than CONNS_MAX: libmicrohttpd refuses beyond. Untracked, it is never closed here. */
	if (slot == NULL)
		return 0;
	slot->conn = conn;
	slot->fd = fd;
	slot->from = *from;
	slot->since = ++seq;
	slot->closing = false;
	/* Note that the new connection waited least of all, so it is never the one chosen. */
	if (count(from) > CONNS_PER_CLIENT && (evict[n] = evict_oldest(from)) >= 0)
		n++;
	if (count(NULL) > CONNS_SOFT && (evict[n] = evict_oldest(NULL)) >= 0)
		n++;
	return n;
}

void
conns_answered(const void *conn)
{
	struct Conn *c = conn ? find(conn) : NULL;

	if (c != NULL)
		c->since = ++seq;
}

void
conns_closed(const void *conn)
{
	struct Conn *c = conn ? find(conn) : NULL;

	if (c != NULL)
		memset(c, 0, sizeof *c);
}

int
conns_open(void)
{
	int i, n = 0;

	for (i = 0; i < CONNS_MAX; i++)
		if (conns[i].conn != NULL)
			n++;
	return n;
}
