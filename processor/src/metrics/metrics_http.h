/*
 * metrics_http.h - the Prometheus endpoint: GET /metrics over HTTP on --metrics=ADDR:PORT, served
 * by libmicrohttpd on a thread of its own (every other request gets 404). It reads what metrics.c
 * keeps and never touches the database or the workers.
 */
#ifndef PGRELAY_METRICS_HTTP_H
#define PGRELAY_METRICS_HTTP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "buf.h"
#include "compiler.h"

/*
 * metrics_addr_split checks "HOST:PORT" and splits it: HOST an IPv4 address, "[IPv6]", a name,
 * or empty (every interface); PORT 0-65535 (0: any free port). Returns false with a reason in err.
 */
bool metrics_addr_split(const char *addr, char *host, size_t hostlen, int *port, char *err, size_t errlen);

/*
 * metrics_addr_resolve turns "HOST:PORT" (as metrics_addr_split reads it) into the socket address
 * to listen on: numeric, or the first address of a name; sslen its length. The console's --listen
 * takes the same syntax. Returns false with a reason in err.
 */
bool metrics_addr_resolve(const char *addr, struct sockaddr_storage *ss, socklen_t *sslen, char *err,
						  size_t errlen) MUSTCHECK;

/*
 * metrics_mhd_message writes one of libmicrohttpd's messages, as its external logger gets it
 * (printf-style), into buf as one line: the line breaks it ends with removed. The console's server
 * logs them the same way.
 */
void metrics_mhd_message(char *buf, size_t len, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/*
 * metrics_mhd_failure says why a daemon did not start, from libmicrohttpd's last message (""
 * for none). Its bind failure names the port it was given, which is always 0 here (the address
 * comes as a sockaddr), so only the reason after the last ": " ("Address already in use") is
 * kept: the caller names the address and port.
 */
const char *metrics_mhd_failure(const char *message);

/*
 * metrics_http_start listens on addr and serves scrapes until metrics_http_stop. Returns false with
 * a reason in err (a bad address, a port in use); bound gets the address it listens on, with the
 * port chosen when addr asked for 0.
 */
bool metrics_http_start(const char *addr, char *bound, size_t boundlen, char *err, size_t errlen) MUSTCHECK;

/* metrics_http_stop closes the listener and ends its thread; a no-op when none runs. */
void metrics_http_stop(void);

#endif
