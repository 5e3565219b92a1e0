/*
 * web_conns.h - the web console's connections, so that clients that send their requests slowly
 * cannot keep the others out. libmicrohttpd's own limits refuse the newcomer when they are reached,
 * and its timeout counts idleness, which a client sending a header line every few seconds never
 * reaches: with them, a few slow clients (on loopback every local user is 127.0.0.1, or picks any
 * 127.x address) hold every connection for as long as they like. Here the newcomer is kept and
 * the connection that has waited longest for its request is closed instead: a client that sends
 * its request at once is served, however many slow ones there are.
 */
#ifndef PGRELAY_WEB_CONNS_H
#define PGRELAY_WEB_CONNS_H

#include "web_addr.h"

#define CONNS_MAX 64       /* connections at once (libmicrohttpd refuses more) */
#define CONNS_SOFT 48      /* beyond this many, the one waiting longest for a request is closed */
#define CONNS_PER_CLIENT 8 /* beyond this many of one client, its one waiting longest is closed */

/*
 * conns_started counts a new connection (conn, its socket fd, its client from) and returns how
 * many sockets it wrote into evict: connections to shut down, the one of the same client that has
 * waited longest for a request when the client has more than CONNS_PER_CLIENT, and the one of all
 * that has waited longest when there are more than CONNS_SOFT. A connection waits from its start
 * and again from the end of each request, so an idle keep-alive connection counts as waiting too.
 */
int conns_started(const void *conn, int fd, const struct WebAddr *from, int evict[2]);
/* conns_answered: conn's request is done; it waits for its next from now. */
void conns_answered(const void *conn);
/* conns_closed forgets conn (closed by libmicrohttpd, shut down by conns_started or not). */
void conns_closed(const void *conn);
/* conns_open is how many connections are counted, those shut down but not yet closed included. */
int conns_open(void);

#endif
