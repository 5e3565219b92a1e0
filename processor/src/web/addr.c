/*
 * addr.c - the client a socket address counts as, for the web console's per-client limits.
 */
#include "web_addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

bool
web_addr_of(const struct sockaddr *sa, struct WebAddr *out)
{
	memset(out, 0, sizeof *out);
	if (sa == NULL)
		return false;
	if (sa->sa_family == AF_INET) {
		out->b[10] = out->b[11] = 0xff;
		memcpy(out->b + 12, &((const struct sockaddr_in *) sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *) sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a))
			memcpy(out->b, a, 16);
		else
			memcpy(out->b, a, 8);
		return true;
	}
	return false;
}

void
web_addr_text(const struct sockaddr *sa, char *out, size_t len)
{
	const void *a = NULL;

	snprintf(out, len, "?");
	if (sa != NULL && sa->sa_family == AF_INET)
		a = &((const struct sockaddr_in *) sa)->sin_addr;
	else if (sa != NULL && sa->sa_family == AF_INET6)
		a = &((const struct sockaddr_in6 *) sa)->sin6_addr;
	if (a != NULL && inet_ntop(sa->sa_family, a, out, (socklen_t) len) == NULL)
		snprintf(out, len, "?");
}
