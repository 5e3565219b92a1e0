/*
 * hostport.c - HOST:PORT as --metrics and the console's --listen take it.
 */
#include "hostport.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool
hostport_split(const char *addr, char *host, size_t hostlen, int *port, char *err, size_t errlen)
{
	const char *colon, *h = addr, *hend;
	char *end;
	long p;

	if (addr[0] == '[') {
		hend = strchr(addr, ']');
		if (hend == NULL || hend[1] != ':') {
			snprintf(err, errlen, "expected [IPv6 address]:PORT");
			return false;
		}
		h = addr + 1;
		colon = hend + 1;
	} else {
		colon = strrchr(addr, ':');
		if (colon == NULL || memchr(addr, ':', (size_t) (colon - addr)) != NULL) {
			snprintf(err, errlen, "expected HOST:PORT (an IPv6 address goes in brackets: [::1]:9187)");
			return false;
		}
		hend = colon;
	}
	if ((size_t) (hend - h) >= hostlen) {
		snprintf(err, errlen, "the host name is too long");
		return false;
	}
	p = strtol(colon + 1, &end, 10);
	if (colon[1] < '0' || colon[1] > '9' || *end != '\0' || p < 0 || p > 65535) {
		snprintf(err, errlen, "the port must be a number from 0 to 65535");
		return false;
	}
	memcpy(host, h, (size_t) (hend - h));
	host[hend - h] = '\0';
	*port = (int) p;
	return true;
}

bool
hostport_resolve(const char *addr, struct sockaddr_storage *ss, socklen_t *sslen, char *err, size_t errlen)
{
	struct addrinfo hints, *res = NULL;
	char host[256], port[8];
	int p, rc;

	if (!hostport_split(addr, host, sizeof host, &p, err, errlen))
		return false;
	snprintf(port, sizeof port, "%d", p);
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (rc != 0 || res == NULL) {
		snprintf(err, errlen, "cannot resolve \"%s\": %s", host, gai_strerror(rc));
		return false;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sslen = res->ai_addrlen;
	freeaddrinfo(res);
	return true;
}
