/*
 * hostport.h - HOST:PORT as --metrics and the console's --listen take it.
 */
#ifndef PGRELAY_HOSTPORT_H
#define PGRELAY_HOSTPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "compiler.h"

/*
 * hostport_split checks "HOST:PORT" and splits it: HOST an IPv4 address, "[IPv6]", a name,
 * or empty (every interface); PORT 0-65535 (0: any free port). Returns false with a reason in err.
 */
bool hostport_split(const char *addr, char *host, size_t hostlen, int *port, char *err, size_t errlen);

/*
 * hostport_resolve turns "HOST:PORT" (as hostport_split reads it) into the socket address
 * to listen on: numeric, or the first address of a name; sslen its length. The console's --listen
 * takes the same syntax. Returns false with a reason in err.
 */
bool hostport_resolve(const char *addr, struct sockaddr_storage *ss, socklen_t *sslen, char *err,
					  size_t errlen) MUSTCHECK;

#endif
