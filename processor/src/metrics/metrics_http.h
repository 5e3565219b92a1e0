/*
 * metrics_http.h - the Prometheus endpoint: GET /metrics over HTTP on --metrics=ADDR:PORT, served
 * by libmicrohttpd on a thread of its own (every other request gets 404). It reads what metrics.c
 * keeps and never touches the database or the workers.
 */
#ifndef PGRELAY_METRICS_HTTP_H
#define PGRELAY_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "compiler.h"

/*
 * metrics_http_start listens on addr and serves scrapes until metrics_http_stop. Returns false with
 * a reason in err (a bad address, a port in use); bound gets the address it listens on, with the
 * port chosen when addr asked for 0.
 */
bool metrics_http_start(const char *addr, char *bound, size_t boundlen, char *err, size_t errlen) MUSTCHECK;

/* metrics_http_stop closes the listener and ends its thread; a no-op when none runs. */
void metrics_http_stop(void);

#endif
