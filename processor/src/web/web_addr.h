/*
 * web_addr.h - a client of the web console as its limits count it: an IPv4 address, or an IPv6
 * /64 (a host is given a whole /64 and may pick any address in it, so counting single IPv6
 * addresses would count nothing).
 */
#ifndef PGRELAY_WEB_ADDR_H
#define PGRELAY_WEB_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* One client: 16 bytes, an IPv4 address as ::ffff:a.b.c.d, an IPv6 address with its last 64 bits 0. */
struct WebAddr {
	unsigned char b[16];
};

/*
 * web_addr_of fills *out with the client sa is (an IPv4 address that arrives mapped into IPv6,
 * ::ffff:a.b.c.d, is the IPv4 client); false for a socket address that is neither IPv4 nor IPv6.
 */
bool web_addr_of(const struct sockaddr *sa, struct WebAddr *out);

/* web_addr_text writes sa's address as text for a log line ("?" when there is none). */
void web_addr_text(const struct sockaddr *sa, char *out, size_t len);

#endif
